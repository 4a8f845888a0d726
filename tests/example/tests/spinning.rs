//! A worker that keeps asking to be woken in the past spins without time passing: the run
//! ends with a machine error naming it and its implementation, not at the event budget with a
//! liveness finding that names nobody.

use leasesim::scenarios::find;
use leasesim::{run, Machines};
use leasesim_example::{Bug, Worker};
use leasesim_protocol::{Msg, Nanos, Output, WorkerMachine};

/// My worker with a timer bug: once it holds a job, its next wake-up is always time 0.
struct Spinning(Worker);

impl WorkerMachine for Spinning {
    fn start(&mut self, now: Nanos) {
        self.0.start(now)
    }
    fn crash(&mut self) {
        self.0.crash()
    }
    fn handle_message(&mut self, now: Nanos, msg: Msg) {
        self.0.handle_message(now, msg)
    }
    fn handle_timeout(&mut self, now: Nanos) {
        self.0.handle_timeout(now)
    }
    fn poll_output(&mut self) -> Option<Output> {
        self.0.poll_output()
    }
    fn poll_timeout(&self) -> Option<Nanos> {
        match self.0.holding() {
            Some(_) => Some(0),
            None => self.0.poll_timeout(),
        }
    }
    fn is_busy(&self) -> bool {
        self.0.holding().is_some()
    }
}

#[test]
fn a_worker_woken_in_the_past_forever_is_a_machine_error_that_names_it() {
    let m = Machines::new("spinning-worker").with_worker("spinning-worker", |spec| {
        Spinning(Worker::new(spec.config.clone(), Bug::None))
    });
    let s = find("w1-w2").expect("w1-w2");
    let setup = s.build(1, m.setup_variant());
    let r = run(&setup, 1, &m);
    let fault = r.machine_fault.as_deref().unwrap_or_else(|| {
        panic!(
            "no machine error: ended {:?} after {} events, findings {:?}",
            r.end, r.events, r.findings
        )
    });
    assert!(fault.contains("spinning-worker"), "{fault}");
    assert!(fault.contains("at one instant"), "{fault}");
    assert!(r.findings.is_empty(), "{:?}", r.findings);
}
