//! A coordinator that takes a live lease back by itself, and journals it as an operator's
//! revocation, is caught as that (I8), not only later by what it does to the job.

use leasesim::scenarios::ALL;
use leasesim::{run, Invariant, Machines};
use leasesim_example::Coordinator;
use leasesim_protocol::{CoordinatorMachine, Msg, Nanos, OperatorAction, Output};

/// My coordinator with a "rebalancer" of its own: at a holder's second heartbeat it revokes
/// the lease as an operator would, though no operator asked, and hides the operator's answer.
struct Rebalancing {
    inner: Coordinator,
    heartbeats: u32,
}

impl CoordinatorMachine for Rebalancing {
    fn handle_message(&mut self, now: Nanos, from: u32, msg: Msg) {
        self.inner.handle_message(now, from, msg);
        if let Msg::Heartbeat { job, .. } = msg {
            self.heartbeats += 1;
            if self.heartbeats == 2 {
                let revoke = Msg::Operator {
                    req: 0,
                    job,
                    action: OperatorAction::Revoke,
                };
                self.inner.handle_message(now, from, revoke);
            }
        }
    }
    fn poll_output(&mut self) -> Option<Output> {
        loop {
            match self.inner.poll_output()? {
                Output::Send {
                    msg: Msg::OperatorDone { .. },
                    ..
                } => continue,
                other => return Some(other),
            }
        }
    }
    fn all_terminal(&self) -> bool {
        self.inner.all_terminal()
    }
    fn poll_timeout(&self) -> Option<Nanos> {
        self.inner.poll_timeout()
    }
    fn handle_timeout(&mut self, now: Nanos) {
        self.inner.handle_timeout(now)
    }
}

fn coordinator(rebalancing: bool) -> Machines {
    Machines::new("in-memory-lease-table").with_coordinator("in-memory-lease-table", move |spec| {
        let inner = Coordinator::new(spec.classes.to_vec(), spec.jobs);
        if rebalancing {
            Box::new(Rebalancing {
                inner,
                heartbeats: 0,
            }) as Box<dyn CoordinatorMachine>
        } else {
            Box::new(inner) as Box<dyn CoordinatorMachine>
        }
    })
}

#[test]
fn a_lease_taken_back_without_an_operator_is_a_takeover_without_a_reason() {
    let (bad, good) = (coordinator(true), coordinator(false));
    let mut caught = 0;
    for s in ALL {
        for seed in 0..10 {
            let setup = s.build(seed, bad.setup_variant());
            let r = run(&setup, seed, &bad);
            let i8 = r
                .findings
                .iter()
                .find(|f| f.invariant == Invariant::RecordedTakeover);
            if let Some(f) = i8 {
                assert!(f.message.contains("no operator asked"), "{}", f.message);
                caught += 1;
            }
            // My coordinator without the rebalancer holds on the same seed, operators and all.
            let setup = s.build(seed, good.setup_variant());
            let r = run(&setup, seed, &good);
            assert!(
                r.findings.is_empty(),
                "{} seed {seed}: {:?}",
                s.name,
                r.findings
            );
        }
    }
    assert!(caught > 0, "no seed named the takeover");
    println!("{caught} runs named the takeover without a reason");
}
