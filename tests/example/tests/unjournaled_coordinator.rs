//! My coordinator with its journal switched off is judged by what it sends. The one thing its
//! silence breaks is what I6 asks of a journal (a refusal it answered must be journaled); no
//! other finding comes from the silence: an effect under a fence its grant message carried is
//! traceable to that lease, and a success its acceptance message answered was accepted.

use leasesim::scenarios::ALL;
use leasesim::{run, Invariant, Machines};
use leasesim_example::Coordinator;
use leasesim_protocol::{CoordinatorMachine, Msg, Nanos, Output};

/// My coordinator with its journal switched off: only its answers reach leasesim.
struct Unjournaled(Coordinator);

impl CoordinatorMachine for Unjournaled {
    fn handle_message(&mut self, now: Nanos, from: u32, msg: Msg) {
        self.0.handle_message(now, from, msg)
    }
    fn poll_output(&mut self) -> Option<Output> {
        loop {
            match self.0.poll_output()? {
                Output::Journal(_) => continue,
                other => return Some(other),
            }
        }
    }
    fn all_terminal(&self) -> bool {
        self.0.all_terminal()
    }
    fn poll_timeout(&self) -> Option<Nanos> {
        self.0.poll_timeout()
    }
    fn handle_timeout(&mut self, now: Nanos) {
        self.0.handle_timeout(now)
    }
}

#[test]
fn a_coordinator_without_a_journal_is_judged_by_what_it_sends() {
    let m = Machines::new("in-memory-lease-table-unjournaled")
        .with_coordinator("in-memory-lease-table-unjournaled", |spec| {
            Unjournaled(Coordinator::new(spec.classes.to_vec(), spec.jobs))
        });
    let mut runs = 0;
    let mut unjournaled_refusals = 0;
    for s in ALL {
        for seed in 0..40 {
            let setup = s.build(seed, m.setup_variant());
            let r = run(&setup, seed, &m);
            for f in &r.findings {
                let asked_of_a_journal = f.invariant == Invariant::NothingLost
                    && f.message.contains("without journaling it");
                assert!(asked_of_a_journal, "{} seed {seed}: {f:?}", s.name);
                unjournaled_refusals += 1;
            }
            runs += 1;
        }
    }
    println!("{runs} runs; {unjournaled_refusals} refusals not journaled (I6)");
    assert!(unjournaled_refusals > 0, "I6 still asks for the journal");
}
