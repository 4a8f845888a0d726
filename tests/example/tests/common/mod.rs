//! My worker with some of its journal lines held back, for tests that compare a worker's
//! judgement with and without what it journals.

use leasesim_example::Worker;
use leasesim_protocol::{Event, Msg, Nanos, Output, WorkerMachine};

/// My worker; the journal lines `hidden` picks never reach leasesim.
pub struct Hiding {
    pub worker: Worker,
    pub hidden: fn(&Event) -> bool,
}

impl WorkerMachine for Hiding {
    fn start(&mut self, now: Nanos) {
        self.worker.start(now)
    }
    fn crash(&mut self) {
        self.worker.crash()
    }
    fn handle_message(&mut self, now: Nanos, msg: Msg) {
        self.worker.handle_message(now, msg)
    }
    fn handle_timeout(&mut self, now: Nanos) {
        self.worker.handle_timeout(now)
    }
    fn poll_output(&mut self) -> Option<Output> {
        loop {
            match self.worker.poll_output()? {
                Output::Journal(e) if (self.hidden)(&e) => continue,
                other => return Some(other),
            }
        }
    }
    fn poll_timeout(&self) -> Option<Nanos> {
        self.worker.poll_timeout()
    }
    fn is_busy(&self) -> bool {
        self.worker.holding().is_some()
    }
}
