//! My coordinator and payments service driven by hand, one rule at a time.

use leasesim_example::{Coordinator, Payments};
use leasesim_protocol::{
    ClassId, ClassSpec, CoordinatorMachine, EffectOutcome, EffectStatus, EntityId, Event,
    GrantReason, IdemKey, JobId, JobSpec, JobState, Msg, Nanos, OpId, OperatorAction, Outcome,
    Output, ReceiverMachine, RefusalReason, Token, WorkerName, SECOND_NS,
};

const L: Nanos = 30 * SECOND_NS;

fn coordinator(jobs: usize) -> Coordinator {
    let class = ClassSpec {
        lease_ns: L,
        max_attempts: 2,
        renewal_cap_ns: 10 * L,
        capacity: None,
        retry_backoff_ns: SECOND_NS,
    };
    let job = JobSpec {
        class: ClassId(0),
        payload_hash: 1,
        payload_lease_ns: None,
    };
    Coordinator::new(vec![class], &vec![job; jobs])
}

/// Sends `msg` from host address `from` at `now`; returns the reply and the journal.
fn ask(c: &mut impl CoordinatorMachine, now: Nanos, from: u32, msg: Msg) -> (Msg, Vec<Event>) {
    c.handle_message(now, from, msg);
    let mut reply = None;
    let mut notes = Vec::new();
    while let Some(o) = c.poll_output() {
        match o {
            Output::Send { msg, .. } => reply = Some(msg),
            Output::Journal(e) => notes.push(e),
        }
    }
    (reply.expect("every request is answered"), notes)
}

fn claim(req: u64, w: u32) -> Msg {
    Msg::Claim {
        req,
        worker: WorkerName(w),
        client_now: 0,
    }
}

fn heartbeat(w: u32, token: u64) -> Msg {
    Msg::Heartbeat {
        req: 9,
        job: JobId(0),
        worker: WorkerName(w),
        token: Token(token),
        client_now: 0,
        in_jeopardy: false,
        effects_attempted: 0,
    }
}

fn commit(w: u32, token: u64, outcome: Outcome) -> Msg {
    Msg::Commit {
        req: 10,
        job: JobId(0),
        worker: WorkerName(w),
        token: Token(token),
        outcome,
        client_now: 0,
    }
}

const DONE: Outcome = Outcome::Success { result: 42 };

#[test]
fn one_claim_one_job_and_takeover_only_after_expiry() {
    let mut c = coordinator(1);
    let (r, _) = ask(&mut c, 0, 1, claim(1, 1));
    assert!(matches!(
        r,
        Msg::ClaimGranted {
            token: Token(1),
            ..
        }
    ));
    // The same claim again (a duplicate on the wire): the same grant, nothing new.
    let (again, notes) = ask(&mut c, 1, 1, claim(1, 1));
    assert_eq!(again, r);
    assert!(notes.is_empty());
    // Another worker gets nothing while the lease holds, not even at its last instant.
    assert!(matches!(
        ask(&mut c, L, 2, claim(1, 2)).0,
        Msg::ClaimEmpty { .. }
    ));
    let (r, notes) = ask(&mut c, L + 1, 2, claim(2, 2));
    assert!(matches!(
        r,
        Msg::ClaimGranted {
            token: Token(2),
            ..
        }
    ));
    assert!(matches!(
        notes[..],
        [Event::LeaseGranted {
            took_over: Some(Token(1)),
            reason: GrantReason::Expired,
            ..
        }]
    ));
}

#[test]
fn heartbeats_and_commits_are_conditional_and_refusals_are_journaled() {
    let mut c = coordinator(1);
    ask(&mut c, 0, 1, claim(1, 1));
    assert!(matches!(
        ask(&mut c, 10, 1, heartbeat(1, 1)).0,
        Msg::HeartbeatOk { .. }
    ));
    for (w, token, reason) in [
        (2, 1, RefusalReason::NotOwner),
        (1, 7, RefusalReason::StaleToken),
    ] {
        let (r, notes) = ask(&mut c, 20, w, heartbeat(w, token));
        assert!(matches!(r, Msg::HeartbeatRejected { .. }));
        assert!(
            matches!(notes[..], [Event::HeartbeatRefused { reason: got, .. }] if got == reason)
        );
    }
    // Past the lease: the result is refused, kept in the journal, never applied.
    let (r, notes) = ask(&mut c, 10 + L, 1, commit(1, 1, DONE));
    assert!(matches!(r, Msg::CommitRejected { .. }));
    assert!(matches!(
        notes[..],
        [Event::ResultRejected {
            reason: RefusalReason::Expired,
            result_hash: 42,
            ..
        }]
    ));
    assert_eq!(c.status(JobId(0)).map(|s| s.1), Some(None));
}

#[test]
fn a_repeated_commit_gets_its_first_answer() {
    let mut c = coordinator(1);
    ask(&mut c, 0, 1, claim(1, 1));
    let (r, notes) = ask(&mut c, 5, 1, commit(1, 1, DONE));
    assert!(matches!(r, Msg::CommitAccepted { .. }));
    assert_eq!(notes.len(), 1);
    let (r, notes) = ask(&mut c, 6, 1, commit(1, 1, DONE));
    assert!(matches!(r, Msg::CommitAccepted { .. }));
    assert!(notes.is_empty(), "decided once: {notes:?}");
}

#[test]
fn a_transient_failure_is_retried_after_a_backoff_then_fails_for_good() {
    let mut c = coordinator(1);
    let failed = Outcome::Failure {
        error: leasesim_protocol::ErrorCode::ToolFailed,
        retryable: true,
    };
    ask(&mut c, 0, 1, claim(1, 1));
    let (_, notes) = ask(&mut c, 5, 1, commit(1, 1, failed));
    assert!(matches!(
        notes[..],
        [Event::ResultAccepted { state: JobState::Queued, .. }, Event::RetryScheduled { not_before, .. }]
            if not_before == 5 + SECOND_NS
    ));
    assert!(matches!(
        ask(&mut c, 6, 1, claim(2, 1)).0,
        Msg::ClaimEmpty { .. }
    ));
    ask(&mut c, 5 + SECOND_NS, 1, claim(3, 1));
    ask(&mut c, 2 * SECOND_NS, 1, commit(1, 2, failed));
    assert_eq!(c.status(JobId(0)).map(|s| s.0), Some(JobState::Failed));
    assert!(c.all_terminal());
}

#[test]
fn an_operator_takeover_is_a_new_epoch_picked_up_at_the_next_claim() {
    let mut c = coordinator(1);
    ask(&mut c, 0, 1, claim(1, 1));
    let (r, notes) = ask(
        &mut c,
        10,
        99,
        Msg::Operator {
            req: 1,
            job: JobId(0),
            action: OperatorAction::Takeover { to: WorkerName(2) },
        },
    );
    assert!(matches!(r, Msg::OperatorDone { applied: true, .. }));
    assert!(matches!(
        notes[..],
        [
            Event::LeaseRevoked {
                token: Token(1),
                epoch: Token(2),
                ..
            },
            Event::LeaseGranted {
                token: Token(2),
                reason: GrantReason::Operator,
                ..
            }
        ]
    ));
    assert!(matches!(
        ask(&mut c, 20, 1, heartbeat(1, 1)).0,
        Msg::HeartbeatRejected { .. }
    ));
    let (r, notes) = ask(&mut c, 30, 2, claim(1, 2));
    assert!(matches!(
        r,
        Msg::ClaimGranted {
            token: Token(2),
            ..
        }
    ));
    assert!(
        matches!(notes[..], [Event::LeaseRenewed { lease_until, .. }] if lease_until == 30 + L)
    );
}

fn key(op: u8) -> IdemKey {
    IdemKey {
        job: JobId(3),
        op: OpId(op),
        salt: 0,
    }
}

fn capture(p: &mut Payments, op: u8, fence: u64) -> EffectOutcome {
    p.handle_message(
        0,
        7,
        Msg::Effect {
            req: 1,
            job: JobId(3),
            entity: EntityId(3),
            key: key(op),
            fence: Token(fence),
        },
    );
    std::iter::from_fn(|| p.poll_output())
        .find_map(|o| match o {
            Output::Send {
                msg: Msg::EffectAck { outcome, .. },
                ..
            } => Some(outcome),
            _ => None,
        })
        .expect("an answer")
}

fn status(p: &mut Payments, op: u8, fence: u64) -> EffectStatus {
    p.handle_message(
        0,
        7,
        Msg::EffectStatus {
            req: 2,
            job: JobId(3),
            key: key(op),
            fence: Token(fence),
        },
    );
    std::iter::from_fn(|| p.poll_output())
        .find_map(|o| match o {
            Output::Send {
                msg: Msg::EffectStatusReply { status, .. },
                ..
            } => Some(status),
            _ => None,
        })
        .expect("an answer")
}

#[test]
fn payments_capture_once_per_key_and_fence_off_an_old_holder() {
    let mut p = Payments::new(true, true);
    assert_eq!(capture(&mut p, 1, 1), EffectOutcome::Applied);
    assert_eq!(
        capture(&mut p, 1, 1),
        EffectOutcome::Duplicate {
            first_fence: Token(1)
        }
    );
    // The new holder's first contact is a question, and it already shuts token 1 out.
    assert_eq!(status(&mut p, 2, 2), EffectStatus::NotApplied);
    assert_eq!(
        capture(&mut p, 2, 1),
        EffectOutcome::StaleFence { mark: Token(2) }
    );
    assert_eq!(capture(&mut p, 2, 2), EffectOutcome::Applied);
    assert_eq!(p.captured(), 2);
}

#[test]
fn a_provider_without_fences_or_status_relies_on_keys() {
    let mut p = Payments::new(false, false).declining(vec![OpId(4)]);
    assert_eq!(capture(&mut p, 2, 2), EffectOutcome::Applied);
    assert_eq!(capture(&mut p, 1, 1), EffectOutcome::Applied);
    assert!(matches!(
        capture(&mut p, 2, 1),
        EffectOutcome::Duplicate { .. }
    ));
    assert_eq!(status(&mut p, 2, 3), EffectStatus::Unknown);
    assert_eq!(capture(&mut p, 4, 3), EffectOutcome::Unauthorized);
}
