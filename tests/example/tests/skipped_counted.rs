//! A worker whose clock runs far beyond its configured drift bound voids the judgement of its
//! beliefs: the sweep counts every skip by judgement and cause, `check()` refuses a sweep in
//! which a judgement was skipped in every run (unless the test allows it by name), and what the
//! clock made the holder do shows as a hazard.

use leasesim::scenarios::find;
use leasesim::{sweep, Hazard, Quiet, ScenarioDef, SeedRange, SweepConfig};
use leasesim_example::{machines, Bug};
use std::sync::atomic::AtomicBool;

/// w1-w2 with every worker's clock 20% slow, where the protocol assumes 0.1% at most: a
/// deadline it reads off that clock ends later in true time than the coordinator's grant.
fn slow_clocks() -> ScenarioDef {
    find("w1-w2")
        .expect("w1-w2")
        .with_setup("slow-clocks", |s, _seed, _variant| {
            for w in &mut s.workers {
                w.clock.drift_ppm = -200_000;
            }
        })
}

fn config() -> SweepConfig {
    SweepConfig::new(
        vec![slow_clocks()],
        SeedRange { start: 0, end: 40 },
        machines::my_worker(Bug::None),
    )
}

#[test]
fn every_skip_is_counted_and_a_judgement_never_made_fails_the_check() {
    let config = config();
    let report = sweep(&config, &AtomicBool::new(false), &Quiet);
    let o = &report.scenarios[0];
    assert_eq!(o.failing, 0, "{:?}", o.failures.first());
    // Counted by judgement and by cause, once per run however many workers it was skipped for.
    assert_eq!(
        o.skipped_runs.get("belief-within-grant"),
        Some(&40),
        "{o:?}"
    );
    let kind = o
        .skipped
        .keys()
        .find(|k| k.judgement == "belief-within-grant")
        .expect("a kind");
    assert_eq!(kind.spec, "I5");
    assert_eq!(
        kind.cause, "its clock was configured beyond its drift bound",
        "{kind:?}"
    );
    // What the slow clock made of the holder's deadlines shows, though it is not judged.
    assert!(
        o.hazards
            .get(&Hazard::OutOfBoundDeadline)
            .copied()
            .unwrap_or(0)
            > 0,
        "{:?}",
        o.hazards
    );
    // A sweep that never judged a judgement proves nothing about it.
    let message = config
        .try_check()
        .expect_err("belief-within-grant never judged");
    assert!(
        message.contains("skipped in every run")
            && message.contains(
                "slow-clocks belief-within-grant (its clock was configured beyond its drift bound)"
            ),
        "{message}"
    );
    // Allowed by name (the judgement's, its invariant's or its id), the sweep passes.
    for names in [
        ["belief-within-grant", "needless-takeover"],
        ["quiescent-holder", "liveness"],
        ["I5", "I7"],
    ] {
        let allowed = SweepConfig {
            allow_skipped: names.iter().map(|n| n.to_string()).collect(),
            ..config.clone()
        };
        let report = allowed
            .try_check()
            .unwrap_or_else(|m| panic!("{names:?}: {m}"));
        assert_eq!(report.scenarios[0].skipped_runs["belief-within-grant"], 40);
    }
    // Allowing one judgement leaves the other refused.
    let one = SweepConfig {
        allow_skipped: vec!["belief-within-grant".into()],
        ..config.clone()
    };
    let message = one.try_check().expect_err("needless-takeover never judged");
    assert!(
        message.contains("slow-clocks needless-takeover")
            && !message.contains("slow-clocks belief"),
        "{message}"
    );
}
