//! What my worker journals can add a finding, never take one away: the same worker with its
//! effects' journal lines removed is never judged more harshly than with them.

use leasesim::scenarios::ALL;
use leasesim::{run, Invariant, Machines, ScenarioDef};
use leasesim_example::{machines, Bug, Worker};
use leasesim_protocol::{Event, Msg, Nanos, Output, WorkerMachine};

/// My worker, but its `EffectStarted` journal lines never reach leasesim.
struct Silent(Worker);

impl WorkerMachine for Silent {
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
        loop {
            match self.0.poll_output()? {
                Output::Journal(Event::EffectStarted { .. }) => continue,
                other => return Some(other),
            }
        }
    }
    fn poll_timeout(&self) -> Option<Nanos> {
        self.0.poll_timeout()
    }
    fn is_busy(&self) -> bool {
        self.0.holding().is_some()
    }
}

fn silent(bug: Bug) -> Machines {
    Machines::reference().with_worker("payments-worker-silent", move |spec| {
        Box::new(Silent(Worker::new(spec.config.clone(), bug))) as Box<dyn WorkerMachine>
    })
}

fn breaks_i5(m: &Machines, scenario: &ScenarioDef, seed: u64) -> Option<String> {
    let setup = (scenario.build)(seed, m.setup_variant());
    let r = run(&setup, seed, m);
    r.findings
        .iter()
        .find(|f| f.invariant == Invariant::QuiescentHolder)
        .map(|f| f.message.clone())
}

#[test]
fn a_worker_that_journals_is_never_judged_less_than_one_that_does_not() {
    let bug = Bug::PaysInJeopardy;
    let (journaled, quiet) = (machines::my_worker(bug), silent(bug));
    let mut both = 0;
    let mut in_jeopardy = 0;
    for scenario in ALL {
        for seed in 0..60 {
            let without = breaks_i5(&quiet, scenario, seed);
            let with = breaks_i5(&journaled, scenario, seed);
            if let Some(without) = &without {
                let with = with.as_deref().unwrap_or_else(|| {
                    panic!(
                        "{} seed {seed}: caught without the journal lines ({without}), passed with them",
                        scenario.name
                    )
                });
                both += 1;
                in_jeopardy += usize::from(with.contains("in jeopardy"));
            }
        }
    }
    println!("{both} runs broke I5 without the journal lines; {in_jeopardy} named the jeopardy");
    assert!(both > 0, "the bug is caught somewhere");
    assert!(in_jeopardy > 0, "as paying in jeopardy");
}
