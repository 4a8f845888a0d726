//! My machines as leasesim takes them: one factory per role, each building my machine from the
//! node's configuration. Everything leasesim does (runs, sweeps, replays, shrinking, the
//! matrix, the command line) then works on them.

use crate::{Bug, Coordinator, Payments, Worker};
use leasesim::Machines;
use leasesim_protocol::{CoordinatorMachine, ReceiverMachine, WorkerMachine};

/// My worker, with `bug` or none, among leasesim's reference coordinator and receivers.
pub fn my_worker(bug: Bug) -> Machines {
    let m = Machines::reference().with_worker(name("payments-worker", bug), move |spec| {
        Box::new(Worker::new(spec.config.clone(), bug)) as Box<dyn WorkerMachine>
    });
    mark(m, bug)
}

/// My worker, my coordinator (an in-memory lease table) and my payments service together.
pub fn all_mine(bug: Bug) -> Machines {
    let m = Machines::reference()
        .with_coordinator("in-memory-lease-table", |spec| {
            Box::new(Coordinator::new(spec.classes.to_vec(), spec.jobs))
                as Box<dyn CoordinatorMachine>
        })
        .with_receiver("payments-service", |spec| {
            Box::new(
                Payments::new(spec.supports_fence, spec.supports_status)
                    .declining(spec.refused_ops.to_vec()),
            ) as Box<dyn ReceiverMachine>
        })
        .with_worker(name("payments-worker", bug), move |spec| {
            Box::new(Worker::new(spec.config.clone(), bug)) as Box<dyn WorkerMachine>
        })
        .named(name("all-mine", bug));
    mark(m, bug)
}

/// Everything my command line (`payments-leasesim`) knows, the fixed worker first.
pub fn catalogue() -> Vec<Machines> {
    vec![
        my_worker(Bug::None),
        my_worker(Bug::DeadlineFromReplyArrival),
        all_mine(Bug::None),
        all_mine(Bug::DeadlineFromReplyArrival),
    ]
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
        Bug::DeadlineFromReplyArrival | Bug::PaysInJeopardy => m.known_bad(),
    }
}
