//! My machines as leasesim takes them: one factory per role, each building my machine from the
//! node's configuration. Everything leasesim does (runs, sweeps, replays, shrinking, the
//! matrix, the command line) then works on them.

use crate::{Bug, Coordinator, Payments, Worker};
use leasesim::{Builder, Machines, ScenarioDef};

/// My worker, with `bug` or none, among leasesim's reference coordinator and receivers.
pub fn my_worker(bug: Bug) -> Machines {
    let m = Machines::new(name("payments-worker", bug))
        .with_worker(name("payments-worker", bug), move |spec| {
            Worker::new(spec.config.clone(), bug)
        });
    mark(m, bug)
}

/// My worker, my coordinator (an in-memory lease table) and my payments service together.
pub fn all_mine(bug: Bug) -> Machines {
    let m = Machines::new(name("all-mine", bug))
        .with_coordinator("in-memory-lease-table", |spec| {
            Coordinator::new(spec.classes.to_vec(), spec.jobs)
        })
        .with_receiver("payments-service", |spec| {
            Payments::new(spec.supports_fence, spec.supports_status)
                .declining(spec.refused_ops.to_vec())
        })
        .with_worker(name("payments-worker", bug), move |spec| {
            Worker::new(spec.config.clone(), bug)
        });
    mark(m, bug)
}

/// Everything my command line (`payments-leasesim`) knows: my machine sets, the fixed worker
/// first, on leasesim's scenarios and one of my own.
pub fn program() -> Builder {
    Builder::new()
        .machines(my_worker(Bug::None))
        .machines(my_worker(Bug::DeadlineFromReplyArrival))
        .machines(all_mine(Bug::None))
        .machines(all_mine(Bug::DeadlineFromReplyArrival))
        .scenario(fast_clocks())
}

/// My own scenario: w1-w2 on the hosts my workers run on, whose clocks run 400 ppm fast (NTP
/// keeps them within the 500 ppm the protocol assumes).
pub fn fast_clocks() -> ScenarioDef {
    leasesim::scenarios::find("w1-w2")
        .expect("a stock scenario")
        .with_setup("w1-w2-fast-clocks", |setup, _seed, _variant| {
            for w in &mut setup.workers {
                w.clock.drift_ppm = 400;
            }
        })
        .with_story("w1-w2 on hosts whose clocks run 400 ppm fast, within the assumed drift bound")
}

fn name(base: &str, bug: Bug) -> &'static str {
    match (base, bug) {
        ("payments-worker", Bug::None) => "payments-worker",
        ("payments-worker", Bug::DeadlineFromReplyArrival) => "payments-worker-late-reply-bug",
        ("payments-worker", Bug::PaysInJeopardy) => "payments-worker-pays-in-jeopardy",
        ("all-mine", Bug::PaysInJeopardy) => "all-mine-pays-in-jeopardy",
        ("all-mine", Bug::None) => "all-mine",
        (_, _) => "all-mine-late-reply-bug",
    }
}

/// A set with the bug on is known to be bad: the matrix expects it caught.
fn mark(m: Machines, bug: Bug) -> Machines {
    match bug {
        Bug::None => m,
        Bug::DeadlineFromReplyArrival => {
            m.known_bad_as("a deadline measured from the reply's arrival, not its request's send")
        }
        Bug::PaysInJeopardy => m.known_bad_as("a stop callback that runs late: pays in jeopardy"),
    }
}
