//! A run kept alive by a message the plan holds and never releases is UNFINISHED with its
//! reason, and a sweep counts it as failing, saying why.

use leasesim::scenarios::find;
use leasesim::{
    run, sweep, FaultKind, MsgAction, MsgPattern, Quiet, ScenarioDef, SeedRange, Setup,
    SweepConfig, Trigger, Variant, Verdict,
};
use leasesim_example::{machines, Bug};
use leasesim_protocol::MsgKind;
use std::sync::atomic::AtomicBool;

/// w1-w2 with one fault: the first commit's acceptance is held until an operator acts, which
/// in this story no operator ever does (the worker's resent commit is answered).
fn held_forever(seed: u64, variant: Variant) -> Setup {
    let mut s = find("w1-w2").expect("w1-w2").build(seed, variant);
    s.faults = vec![leasesim::Fault::new(
        Trigger::at(0),
        FaultKind::Message {
            pattern: MsgPattern {
                kind: Some(MsgKind::CommitAccepted),
                ..MsgPattern::default()
            },
            count: 1,
            action: MsgAction::Hold {
                release: Trigger::sent(MsgPattern {
                    kind: Some(MsgKind::Operator),
                    ..MsgPattern::default()
                }),
            },
        },
    )];
    // No heal phase to release it either.
    s.heal_at_ns = None;
    s
}

fn held_forever_def() -> ScenarioDef {
    ScenarioDef::new(
        "held-forever",
        "a commit's acceptance held until an operator acts; none does",
        held_forever,
    )
}

#[test]
fn a_hold_never_released_is_unfinished_with_its_reason_everywhere() {
    let m = machines::my_worker(Bug::None);
    let setup = held_forever(0, m.setup_variant());
    let r = run(&setup, 0, &m);
    assert!(
        matches!(r.verdict(), Verdict::Unfinished { .. }),
        "{:?}",
        r.verdict()
    );
    let why = r.unfinished.as_deref().expect("a reason");
    assert!(
        why.contains("1 message(s) the plan held were never released"),
        "{why}"
    );
    assert!(
        why.contains("\"kind\":\"operator\""),
        "the hold is named: {why}"
    );
    // A sweep counts it failing, and its first line says why.
    let config = SweepConfig::new(vec![held_forever_def()], SeedRange { start: 0, end: 3 }, m);
    let report = sweep(&config, &AtomicBool::new(false), &Quiet);
    let o = &report.scenarios[0];
    assert_eq!((o.failing, o.unfinished), (3, 3));
    assert!(
        o.failures[0].first.contains("never released"),
        "{}",
        o.failures[0].first
    );
}
