//! The W1/W2 test of the first article (SPEC, last section), on thousands of seeds.

use leasesim::run::{RunResult, Verdict};
use leasesim_protocol::{
    EffectOutcome, Event, Invariant, JobState, Msg, MsgKind, RefusalReason, Token, Variant,
};
use leasesim_sim::{DropCause, EventKind, Fate};
use leasesim_tests::{notes, run, sends};
use std::collections::BTreeMap;

/// Everything the SPEC's pass condition names, checked on one reference run.
fn assert_story(r: &RunResult) {
    let seed = r.seed;
    assert_eq!(r.verdict(), Verdict::Held, "seed {seed}: {:?}", r.findings);
    // W1's heartbeats go unanswered or are refused; none extends its lease.
    let w1_heartbeats: Vec<_> = sends(r, "W1")
        .into_iter()
        .filter_map(|e| match e.kind {
            EventKind::Send {
                msg: Msg::Heartbeat { .. },
                fate,
                ..
            } => Some(fate),
            _ => None,
        })
        .collect();
    assert!(
        !w1_heartbeats.is_empty(),
        "seed {seed}: W1 heartbeats while cut off"
    );
    assert!(
        w1_heartbeats.iter().all(|f| matches!(
            f,
            Fate::Drop {
                cause: DropCause::Partition
            }
        )),
        "seed {seed}: every W1 heartbeat is lost to the cut"
    );
    let coord = notes(r, "coord");
    assert!(
        !coord.iter().any(|(_, e)| matches!(
            e,
            Event::LeaseRenewed {
                token: Token(1),
                ..
            }
        )),
        "seed {seed}: W1's lease is never extended"
    );
    // W2 takes over with a higher token and completes.
    assert!(coord.iter().any(|(_, e)| matches!(
        e,
        Event::LeaseGranted {
            token: Token(2),
            took_over: Some(Token(1)),
            ..
        }
    )));
    assert!(coord.iter().any(|(_, e)| matches!(
        e,
        Event::ResultAccepted {
            token: Token(2),
            state: JobState::Succeeded,
            ..
        }
    )));
    // W1's late commit is rejected and journaled.
    let w2_done = coord
        .iter()
        .find(|(_, e)| {
            matches!(
                e,
                Event::ResultAccepted {
                    token: Token(2),
                    ..
                }
            )
        })
        .map(|(t, _)| *t)
        .expect("W2 completed");
    let rejected = coord.iter().find(|(_, e)| {
        matches!(
            e,
            Event::ResultRejected {
                token: Token(1),
                ..
            }
        )
    });
    let (t_rejected, rejected) =
        rejected.unwrap_or_else(|| panic!("seed {seed}: W1's commit is journaled"));
    assert!(
        *t_rejected > w2_done,
        "seed {seed}: W1 asks only after W2 completed"
    );
    assert!(matches!(
        rejected,
        Event::ResultRejected {
            reason: RefusalReason::NotRunning,
            ..
        }
    ));
    assert!(notes(r, "W1").iter().any(|(_, e)| matches!(
        e,
        Event::CommitRefused {
            token: Token(1),
            ..
        }
    )));
    assert!(!notes(r, "W1")
        .iter()
        .any(|(_, e)| matches!(e, Event::SuccessClaimed { .. })));
    // W1 was in jeopardy by then, and knew it.
    assert!(notes(r, "W1")
        .iter()
        .any(|(_, e)| matches!(e, Event::JeopardyEntered { .. })));
    // The receiver: W1's late second effect is refused for its stale fence, after W2's first
    // effect raised the mark; each key applied exactly once.
    let recv = notes(r, "recv");
    let fenced = recv
        .iter()
        .position(|(_, e)| {
            matches!(
                e,
                Event::EffectFenced {
                    fence: Token(1),
                    mark: Token(2),
                    ..
                }
            )
        })
        .unwrap_or_else(|| panic!("seed {seed}: W1's late update_case is fenced"));
    let w2_first = recv
        .iter()
        .position(|(_, e)| {
            matches!(
                e,
                Event::EffectDuplicate {
                    fence: Token(2),
                    ..
                }
            )
        })
        .expect("W2's create_case is a repeated key");
    assert!(w2_first < fenced);
    let mut applied: BTreeMap<_, u32> = BTreeMap::new();
    for (_, e) in &recv {
        if let Event::EffectApplied { key, .. } = e {
            *applied.entry(*key).or_default() += 1;
        }
    }
    assert_eq!(applied.len(), 2, "seed {seed}: both keys take effect");
    assert!(applied.values().all(|n| *n == 1), "seed {seed}: once each");
    // The tool's success reached W1 only after the lease had passed to W2.
    let w1_answer = r
        .trace
        .iter()
        .find(|e| {
            e.node == leasesim_tests::node_id(r, "W1")
                && matches!(&e.kind, EventKind::Deliver { msg, .. } if msg.kind() == MsgKind::ToolResponse && matches!(msg, Msg::ToolResponse { step: 3, .. }))
        })
        .expect("W1 gets its late answer");
    assert!(w1_answer.t > w2_done);
}

#[test]
fn reference_holds_the_story_on_10000_seeds_and_every_run_is_deterministic() {
    for seed in 0..10_000 {
        let r = run("w1-w2", seed, Variant::Reference);
        assert_story(&r);
        let again = run("w1-w2", seed, Variant::Reference);
        assert_eq!(
            r.trace_hash(),
            again.trace_hash(),
            "seed {seed} gave two different traces"
        );
    }
}

fn caught_by(variant: Variant, invariant: Invariant) {
    for seed in 0..500 {
        let r = run("w1-w2", seed, variant);
        assert_eq!(r.verdict(), Verdict::Violated, "seed {seed} must fail");
        assert!(
            r.findings.iter().any(|f| f.invariant == invariant),
            "seed {seed}: {} must break {}, found {:?}",
            variant.name(),
            invariant.label(),
            r.findings
        );
    }
}

#[test]
fn unconditional_commit_is_caught_as_a_stale_commit_v2() {
    caught_by(Variant::UnconditionalCommit, Invariant::NoStaleCommit);
}

#[test]
fn receiver_ignoring_fences_is_caught_as_a_double_effect_v3() {
    caught_by(Variant::ReceiverIgnoresFence, Invariant::NoDoubleEffect);
    // And the late effect really was applied below the mark.
    let r = run("w1-w2", 1, Variant::ReceiverIgnoresFence);
    assert!(notes(&r, "W1").iter().any(|(_, e)| matches!(
        e,
        Event::EffectAnswered {
            token: Token(1),
            outcome: EffectOutcome::Applied,
            ..
        }
    )));
}
