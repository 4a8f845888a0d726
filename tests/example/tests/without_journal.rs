//! A correct worker that journals nothing passes a sweep's coverage check: the hazards its
//! messages show are counted from them, and those only a journal shows are not expected of
//! machines that declare they keep none.

use leasesim::scenarios::ALL;
use leasesim::{Machines, SeedRange, SweepConfig};
use leasesim_example::{Bug, Worker};

mod common;

fn unjournaled() -> Machines {
    Machines::new("payments-worker-unjournaled").with_worker(
        "payments-worker-unjournaled",
        |spec| {
            let worker = Worker::new(spec.config.clone(), Bug::None);
            common::Hiding {
                worker,
                hidden: |_| true,
            }
        },
    )
}

fn sweep(m: Machines) -> SweepConfig {
    SweepConfig::new(ALL.iter().collect(), SeedRange { start: 0, end: 100 }, m)
}

#[test]
fn a_worker_without_a_journal_reaches_its_hazards_by_its_messages() {
    // Undeclared: what is missing is only what a journal shows, and the message says so.
    let message = sweep(unjournaled())
        .try_check()
        .expect_err("journal-only hazards are missing");
    let listed = message.split("proves little: ").nth(1).unwrap_or_default();
    let listed = listed.split("; machines that").next().unwrap_or_default();
    for h in listed.split(", ") {
        assert!(
            h.ends_with("(only a journal shows it)"),
            "a hazard the messages show is missing: {h}\n{message}"
        );
    }
    assert!(message.contains("Machines::without_journal()"), "{message}");
    // Declared: the sweep holds and reaches everything else its scenarios declare.
    let report = sweep(unjournaled().without_journal())
        .try_check()
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(report.failing(), 0);
}
