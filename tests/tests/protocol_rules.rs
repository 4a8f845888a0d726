//! The rules of both articles beyond the W1/W2 core, each exercised by its scenario and checked
//! here on the journal: retries (P11, P12 c), handoff to a human (P15), admission and
//! commit-time authorization (P16), stages and checkpoints (P17), the renewal cap (P7).

use leasesim::run::Verdict;
use leasesim_protocol::{
    EffectStatus, ErrorCode, Event, GrantReason, JobId, JobState, OpId, OperatorAction, Variant,
    HUMAN,
};
use leasesim_tests::{notes, run};

const SEEDS: u64 = 60;

fn all_notes(r: &leasesim::run::RunResult) -> Vec<(u64, Event)> {
    r.trace
        .iter()
        .filter_map(|e| match e.kind {
            leasesim_sim::EventKind::Note { note } => Some((e.t, note)),
            _ => None,
        })
        .collect()
}

#[test]
fn retries_tell_validation_transient_and_unknown_outcomes_apart_p11() {
    let (mut retried, mut validated, mut queried) = (0, 0, 0);
    for seed in 0..SEEDS {
        let r = run("retries", seed, Variant::Reference);
        assert_eq!(r.verdict(), Verdict::Held, "seed {seed}: {:?}", r.findings);
        let ev = all_notes(&r);
        for (t, e) in &ev {
            match *e {
                // A validation error is never retried: the job fails on that attempt.
                Event::JobFailed {
                    job,
                    error: ErrorCode::Validation,
                    attempt,
                } => {
                    validated += 1;
                    let later_grants = ev.iter().filter(|(u, x)| {
                        *u > *t && matches!(x, Event::LeaseGranted { job: j, .. } if *j == job)
                    });
                    assert_eq!(
                        later_grants.count(),
                        0,
                        "seed {seed}: {job} retried after validation"
                    );
                    assert_eq!(attempt, 1);
                }
                // A transient failure waits out its backoff before the next claim.
                Event::RetryScheduled {
                    job, not_before, ..
                } => {
                    retried += 1;
                    let next = ev.iter().find_map(|(u, x)| match x {
                        Event::LeaseGranted { job: j, .. } if *j == job && *u > *t => Some(*u),
                        _ => None,
                    });
                    let next = next.unwrap_or_else(|| panic!("seed {seed}: {job} retried"));
                    // not_before is on the coordinator's clock; its offset is below 1 s.
                    assert!(
                        next + 1_000_000_000 >= not_before,
                        "seed {seed}: retry before its backoff"
                    );
                }
                Event::ToolStatusQueried { .. } => queried += 1,
                _ => {}
            }
        }
    }
    assert!(
        retried >= SEEDS && validated >= SEEDS && queried >= SEEDS,
        "{retried} {validated} {queried}"
    );
}

#[test]
fn a_job_handed_to_a_human_gets_a_new_epoch_and_the_old_holder_goes_quiet_p15() {
    for seed in 0..SEEDS {
        let r = run("human-handoff", seed, Variant::Reference);
        assert_eq!(r.verdict(), Verdict::Held, "seed {seed}: {:?}", r.findings);
        let coord = notes(&r, "coord");
        let revoked = coord.iter().position(|(_, e)| {
            matches!(
                e,
                Event::LeaseRevoked {
                    action: OperatorAction::HandToHuman,
                    ..
                }
            )
        });
        let revoked = revoked.unwrap_or_else(|| panic!("seed {seed}: no handoff"));
        assert!(matches!(
            coord[revoked + 1].1,
            Event::LeaseGranted { holder, reason: GrantReason::Operator, took_over: Some(_), .. } if *holder == HUMAN
        ));
        assert!(coord.iter().any(|(_, e)| matches!(
            e,
            Event::ResultAccepted { worker, state: JobState::Succeeded, .. } if *worker == HUMAN
        )));
        assert!(notes(&r, "W1")
            .iter()
            .any(|(_, e)| matches!(e, Event::HeartbeatLost { .. })));
    }
}

#[test]
fn admission_authorization_and_lease_refusals_are_told_apart_p16() {
    for seed in 0..SEEDS {
        let r = run("admission-and-authorization", seed, Variant::Reference);
        assert_eq!(r.verdict(), Verdict::Held, "seed {seed}: {:?}", r.findings);
        let ev = all_notes(&r);
        let has = |f: &dyn Fn(&Event) -> bool| ev.iter().any(|(_, e)| f(e));
        assert!(has(&|e| matches!(
            e,
            Event::AdmissionDeferred { capacity: 1, .. }
        )));
        assert!(has(&|e| matches!(e, Event::HeartbeatRefused { .. })));
        assert!(has(
            &|e| matches!(e, Event::EffectUnauthorized { key, .. } if key.op == OpId(4))
        ));
        // The refused job fails for that reason, once.
        assert!(has(&|e| matches!(
            e,
            Event::JobFailed {
                job: JobId(3),
                error: ErrorCode::Unauthorized,
                ..
            }
        )));
        // Admission holds: never two class-0 jobs (0, 1, 2) running at once.
        let mut running = std::collections::BTreeSet::new();
        for (_, e) in &ev {
            match *e {
                Event::LeaseGranted { job, .. } if job.0 < 3 => {
                    running.insert(job);
                    assert!(
                        running.len() <= 1,
                        "seed {seed}: admission let {running:?} run"
                    );
                }
                Event::ResultAccepted { job, state, .. }
                    if job.0 < 3 && state != JobState::Running =>
                {
                    running.remove(&job);
                }
                _ => {}
            }
        }
    }
}

#[test]
fn a_successor_resumes_from_the_checkpoint_and_reconciles_before_going_on_p17() {
    let (mut reconciled, mut reviewed) = (0, 0);
    for seed in 0..SEEDS {
        let r = run("stages-and-checkpoints", seed, Variant::Reference);
        assert_eq!(r.verdict(), Verdict::Held, "seed {seed}: {:?}", r.findings);
        let w2 = notes(&r, "W2");
        let asked = w2.iter().find_map(|(_, e)| match e {
            Event::EffectReconciled { key, status, .. } if key.op == OpId(2) => Some(*status),
            _ => None,
        });
        match asked {
            Some(EffectStatus::Applied) => {
                reconciled += 1;
                // It skipped the effect its predecessor did, and went on to finish.
                assert!(!w2.iter().any(
                    |(_, e)| matches!(e, Event::EffectStarted { key, .. } if key.op == OpId(2))
                ));
                assert!(w2
                    .iter()
                    .any(|(_, e)| matches!(e, Event::SuccessClaimed { .. })));
            }
            Some(EffectStatus::Unknown) => {
                reviewed += 1;
                assert!(w2
                    .iter()
                    .any(|(_, e)| matches!(e, Event::HumanReviewRequested { .. })));
                assert!(notes(&r, "coord").iter().any(|(_, e)| matches!(
                    e,
                    Event::JobFailed {
                        error: ErrorCode::NeedsHumanReview,
                        ..
                    }
                )));
            }
            _ => {}
        }
        assert!(notes(&r, "coord")
            .iter()
            .any(|(_, e)| matches!(e, Event::CheckpointSaved { .. })));
    }
    assert!(reconciled > 0 && reviewed > 0, "{reconciled} {reviewed}");
}

#[test]
fn the_renewal_cap_fails_an_endless_job_with_its_own_reason_p7() {
    for seed in 0..10 {
        let r = run("renewal-cap", seed, Variant::Reference);
        assert_eq!(r.verdict(), Verdict::Held);
        assert!(notes(&r, "coord")
            .iter()
            .any(|(_, e)| matches!(e, Event::RenewalCapReached { .. })));
        let capped = run("renewal-cap", seed, Variant::UncappedRenewal);
        assert_eq!(
            capped.verdict(),
            Verdict::Violated,
            "V14 never ends within its bound"
        );
    }
}
