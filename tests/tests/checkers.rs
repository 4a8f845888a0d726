//! Every checker rejects a hand-made history that breaks its invariant, and accepts a clean one.
//! (The known-bad variants prove the same checkers on real runs: see `w1_w2.rs`.) Decisions that
//! crossed the network are judged from their messages when their node journaled nothing, once
//! when it did both; a holder's stated deadline is judged where it is stated.

use leasesim::checkers::{check, Judgement, World};
use leasesim::setup::{NodeInfo, Role};
use leasesim_protocol::{
    EffectOutcome, EntityId, Event, GrantReason, IdemKey, Invariant, JobId, JobState, Msg, OpId,
    Outcome, Token, WorkerName,
};
use leasesim_sim::{Clock, Command, End, EventKind, TraceEvent, WORLD};

const COORD: u32 = 0;
const W1: u32 = 1;
const W2: u32 = 2;
const RECV: u32 = 3;

fn nodes() -> Vec<NodeInfo> {
    let w = |n: u32| NodeInfo {
        name: format!("W{n}"),
        role: Role::Worker {
            name: WorkerName(n),
            drift_ppm_max: 500,
        },
    };
    vec![
        NodeInfo {
            name: "coord".into(),
            role: Role::Coordinator,
        },
        w(1),
        w(2),
        NodeInfo {
            name: "recv".into(),
            role: Role::Receiver {
                index: 0,
                supports_fence: true,
            },
        },
    ]
}

/// A note by `node` at true time `t`; every clock reads true time.
fn at(t: u64, node: u32, note: Event) -> TraceEvent<Msg, Event> {
    TraceEvent {
        t,
        node,
        local: t,
        kind: EventKind::Note { note },
    }
}

fn grant(t: u64, holder: u32, token: u64, until: u64) -> TraceEvent<Msg, Event> {
    at(
        t,
        COORD,
        Event::LeaseGranted {
            job: JobId(0),
            holder: WorkerName(holder),
            token: Token(token),
            attempt: token as u32,
            lease_until: until,
            took_over: (token > 1).then_some(Token(token - 1)),
            reason: if token > 1 {
                GrantReason::Expired
            } else {
                GrantReason::Claim
            },
        },
    )
}

fn key(op: u8) -> IdemKey {
    IdemKey {
        job: JobId(0),
        op: OpId(op),
        salt: 0,
    }
}

fn effect(t: u64, node: u32, token: u64, in_jeopardy: bool) -> TraceEvent<Msg, Event> {
    at(
        t,
        node,
        Event::EffectStarted {
            job: JobId(0),
            token: Token(token),
            receiver: 0,
            entity: EntityId(0),
            key: key(1),
            in_jeopardy,
        },
    )
}

/// The judgement of a hand-made trace, every node's clock as given (true time when empty).
fn judged(trace: &[TraceEvent<Msg, Event>], clocks: &[Clock]) -> Judgement {
    let nodes = nodes();
    let world = World {
        nodes: &nodes,
        coordinator_clock: Clock::new(0, 0),
        clocks,
        op_names: &[],
        jobs: 1,
        latency_max_ns: 10,
        liveness_deadline_ns: None,
        end: End::Done,
        end_ns: trace.last().map_or(0, |e| e.t),
        messages: true,
    };
    check(&world, trace, &mut leasesim_checkers::Scratch::default())
}

fn findings(trace: Vec<TraceEvent<Msg, Event>>) -> Vec<Invariant> {
    judged(&trace, &[Clock::new(0, 0); 4])
        .findings
        .into_iter()
        .map(|f| f.invariant)
        .collect()
}

#[test]
fn a_clean_takeover_history_has_no_finding() {
    let trace = vec![
        grant(0, W1, 1, 100),
        effect(10, W1, 1, false),
        grant(101, W2, 2, 200),
        effect(110, W2, 2, false),
        at(
            120,
            COORD,
            Event::ResultAccepted {
                job: JobId(0),
                worker: WorkerName(2),
                token: Token(2),
                state: JobState::Succeeded,
            },
        ),
    ];
    assert_eq!(findings(trace), vec![]);
}

#[test]
fn stale_commit_is_rejected_i1() {
    let trace = vec![
        grant(0, W1, 1, 100),
        grant(101, W2, 2, 200),
        at(
            150,
            COORD,
            Event::ResultAccepted {
                job: JobId(0),
                worker: WorkerName(1),
                token: Token(1),
                state: JobState::Succeeded,
            },
        ),
    ];
    assert_eq!(findings(trace), vec![Invariant::NoStaleCommit]);
}

#[test]
fn a_second_accepted_result_is_rejected_i1() {
    let accept = |t| {
        at(
            t,
            COORD,
            Event::ResultAccepted {
                job: JobId(0),
                worker: WorkerName(1),
                token: Token(1),
                state: JobState::Succeeded,
            },
        )
    };
    assert_eq!(
        findings(vec![grant(0, W1, 1, 100), accept(10), accept(20)]),
        vec![Invariant::NoStaleCommit]
    );
}

#[test]
fn double_effect_and_lower_fence_are_rejected_i2() {
    let applied = |t, op, fence| {
        at(
            t,
            RECV,
            Event::EffectApplied {
                entity: EntityId(0),
                key: key(op),
                fence: Token(fence),
            },
        )
    };
    assert_eq!(
        findings(vec![
            grant(0, W1, 1, 100),
            applied(1, 1, 1),
            applied(2, 1, 1)
        ]),
        vec![Invariant::NoDoubleEffect]
    );
    assert_eq!(
        findings(vec![
            grant(0, W1, 1, 100),
            grant(101, W2, 2, 200),
            applied(102, 1, 2),
            applied(103, 2, 1)
        ]),
        vec![Invariant::NoDoubleEffect]
    );
    // I6: an applied effect under a fence no lease ever carried.
    assert_eq!(
        findings(vec![grant(0, W1, 1, 100), applied(1, 1, 7)]),
        vec![Invariant::NothingLost]
    );
}

#[test]
fn overlapping_grants_and_non_increasing_tokens_are_rejected_i3() {
    assert_eq!(
        findings(vec![grant(0, W1, 1, 100), grant(50, W2, 2, 150)]),
        vec![Invariant::SingleValidLease]
    );
    assert_eq!(
        findings(vec![grant(0, W1, 2, 100), grant(101, W2, 2, 200)]),
        vec![Invariant::SingleValidLease]
    );
}

#[test]
fn extension_for_a_stale_holder_is_rejected_i4() {
    let renew = |t, w: u32, token| {
        at(
            t,
            COORD,
            Event::LeaseRenewed {
                job: JobId(0),
                worker: WorkerName(w),
                token: Token(token),
                lease_until: t + 100,
            },
        )
    };
    assert_eq!(
        findings(vec![grant(0, W1, 1, 100), renew(50, 1, 1)]),
        vec![]
    );
    assert_eq!(
        findings(vec![grant(0, W1, 1, 100), renew(50, 2, 1)]),
        vec![Invariant::NoStaleExtension]
    );
    assert_eq!(
        findings(vec![grant(0, W1, 1, 100), renew(150, 1, 1)]),
        vec![Invariant::NoStaleExtension]
    );
    assert_eq!(
        findings(vec![
            grant(0, W1, 1, 100),
            grant(101, W2, 2, 200),
            renew(150, 1, 1)
        ]),
        vec![Invariant::NoStaleExtension]
    );
}

#[test]
fn effects_in_jeopardy_after_loss_or_outside_the_grant_are_rejected_i5() {
    assert_eq!(
        findings(vec![grant(0, W1, 1, 100), effect(10, W1, 1, true)]),
        vec![Invariant::QuiescentHolder]
    );
    assert_eq!(
        findings(vec![
            grant(0, W1, 1, 100),
            at(
                20,
                W1,
                Event::HeartbeatLost {
                    job: JobId(0),
                    token: Token(1)
                }
            ),
            effect(30, W1, 1, false),
        ]),
        vec![Invariant::QuiescentHolder]
    );
    // The holder believes it is fine, but the coordinator's lease expired at 100.
    assert_eq!(
        findings(vec![grant(0, W1, 1, 100), effect(120, W1, 1, false)]),
        vec![Invariant::QuiescentHolder]
    );
    // A higher token was granted before the holder acted.
    assert_eq!(
        findings(vec![
            grant(0, W1, 1, 100),
            grant(101, W2, 2, 200),
            effect(105, W1, 1, false)
        ]),
        vec![Invariant::QuiescentHolder]
    );
    // Success claimed without an accepted result.
    assert_eq!(
        findings(vec![
            grant(0, W1, 1, 100),
            at(
                50,
                W1,
                Event::SuccessClaimed {
                    job: JobId(0),
                    token: Token(1)
                }
            ),
        ]),
        vec![Invariant::QuiescentHolder]
    );
}

fn sent(t: u64, node: u32, to: u32, msg: Msg) -> TraceEvent<Msg, Event> {
    TraceEvent {
        t,
        node,
        local: t,
        kind: EventKind::Send {
            id: t,
            to,
            msg,
            fate: leasesim_sim::Fate::Deliver { delay_ns: 1 },
        },
    }
}

fn delivered(t: u64, node: u32, from: u32, msg: Msg) -> TraceEvent<Msg, Event> {
    TraceEvent {
        t,
        node,
        local: t,
        kind: EventKind::Deliver { id: t, from, msg },
    }
}

fn claimed(t: u64, node: u32, token: u64) -> TraceEvent<Msg, Event> {
    at(
        t,
        node,
        Event::JobClaimed {
            job: JobId(0),
            token: Token(token),
            deadline: t + 90,
        },
    )
}

#[test]
fn unjournaled_refusals_and_untraceable_effects_are_rejected_i6() {
    let rejected = Msg::CommitRejected {
        req: 1,
        job: JobId(0),
        token: Token(1),
    };
    // The coordinator refuses a commit without journaling it.
    assert_eq!(
        findings(vec![grant(0, W1, 1, 100), sent(150, COORD, W1, rejected)]),
        vec![Invariant::NothingLost]
    );
    // The same refusal, journaled: fine.
    assert_eq!(
        findings(vec![
            grant(0, W1, 1, 100),
            at(
                150,
                COORD,
                Event::ResultRejected {
                    job: JobId(0),
                    worker: WorkerName(1),
                    token: Token(1),
                    reason: leasesim_protocol::RefusalReason::Expired,
                    result_hash: 0
                }
            ),
            sent(150, COORD, W1, rejected),
        ]),
        vec![]
    );
    // A worker told its lease is lost journals nothing.
    let refused = Msg::HeartbeatRejected {
        req: 1,
        job: JobId(0),
        token: Token(1),
    };
    assert_eq!(
        findings(vec![
            grant(0, W1, 1, 100),
            claimed(1, W1, 1),
            delivered(150, W1, COORD, refused),
        ]),
        vec![Invariant::NothingLost]
    );
    assert_eq!(
        findings(vec![
            grant(0, W1, 1, 100),
            claimed(1, W1, 1),
            delivered(150, W1, COORD, refused),
            at(
                150,
                W1,
                Event::HeartbeatLost {
                    job: JobId(0),
                    token: Token(1)
                }
            ),
        ]),
        vec![]
    );
}

#[test]
fn a_healthy_holder_taken_over_and_an_unfinished_job_are_rejected_i7() {
    // W1 runs token 1 and nothing disturbs it, yet its lease expires and W2 takes over.
    assert_eq!(
        findings(vec![
            grant(0, W1, 1, 100),
            claimed(1, W1, 1),
            grant(101, W2, 2, 200)
        ]),
        vec![Invariant::Liveness]
    );
    // The same takeover after W1's link to the coordinator was cut is a needed one.
    let cut = TraceEvent {
        t: 50,
        node: leasesim_sim::WORLD,
        local: 0,
        kind: EventKind::Fault {
            command: leasesim_sim::Command::Cut {
                from: W1,
                to: COORD,
            },
        },
    };
    assert_eq!(
        findings(vec![
            grant(0, W1, 1, 100),
            claimed(1, W1, 1),
            cut,
            grant(101, W2, 2, 200)
        ]),
        vec![]
    );
    // A job still open past its liveness bound.
    let nodes = nodes();
    let trace = vec![grant(0, W1, 1, 100)];
    let world = World {
        nodes: &nodes,
        coordinator_clock: Clock::new(0, 0),
        clocks: &[Clock::new(0, 0); 4],
        op_names: &[],
        jobs: 1,
        latency_max_ns: 10,
        liveness_deadline_ns: Some(500),
        end: End::Horizon,
        end_ns: 1_000,
        messages: true,
    };
    let found: Vec<Invariant> = check(&world, &trace, &mut leasesim_checkers::Scratch::default())
        .findings
        .into_iter()
        .map(|f| f.invariant)
        .collect();
    assert_eq!(found, vec![Invariant::Liveness]);
}

#[test]
fn takeovers_without_reason_or_higher_epoch_are_rejected_i8() {
    let silent_takeover = at(
        101,
        COORD,
        Event::LeaseGranted {
            job: JobId(0),
            holder: WorkerName(2),
            token: Token(2),
            attempt: 2,
            lease_until: 200,
            took_over: None,
            reason: GrantReason::Claim,
        },
    );
    assert_eq!(
        findings(vec![grant(0, W1, 1, 100), silent_takeover]),
        vec![Invariant::RecordedTakeover]
    );
    let revoke_same_epoch = at(
        50,
        COORD,
        Event::LeaseRevoked {
            job: JobId(0),
            holder: Some(WorkerName(1)),
            token: Token(1),
            epoch: Token(1),
            action: leasesim_protocol::OperatorAction::Revoke,
        },
    );
    // Twice: no higher epoch, and no operator asked while the lease was live.
    assert_eq!(
        findings(vec![grant(0, W1, 1, 100), revoke_same_epoch]),
        vec![Invariant::RecordedTakeover, Invariant::RecordedTakeover]
    );
    let revoke = |t: u64| {
        at(
            t,
            COORD,
            Event::LeaseRevoked {
                job: JobId(0),
                holder: Some(WorkerName(1)),
                token: Token(1),
                epoch: Token(2),
                action: leasesim_protocol::OperatorAction::Revoke,
            },
        )
    };
    // Taken back by the coordinator alone while live: no reason; once expired by its clock, one.
    assert_eq!(
        findings(vec![grant(0, W1, 1, 100), revoke(50)]),
        vec![Invariant::RecordedTakeover]
    );
    assert_eq!(findings(vec![grant(0, W1, 1, 100), revoke(150)]), vec![]);
}

// ---- judged from what crossed the network ----

fn effect_msg(fence: u64) -> Msg {
    Msg::Effect {
        req: 7,
        job: JobId(0),
        entity: EntityId(0),
        key: key(1),
        fence: Token(fence),
    }
}

#[test]
fn an_effect_sent_without_a_journal_note_is_judged_from_the_message_i5() {
    // Within its grant: fine.
    assert_eq!(
        findings(vec![
            grant(0, W1, 1, 100),
            sent(50, W1, RECV, effect_msg(1))
        ]),
        vec![]
    );
    // After the grant expired, journaling nothing.
    assert_eq!(
        findings(vec![
            grant(0, W1, 1, 100),
            sent(120, W1, RECV, effect_msg(1))
        ]),
        vec![Invariant::QuiescentHolder]
    );
    // After a higher token was granted, journaling nothing.
    assert_eq!(
        findings(vec![
            grant(0, W1, 1, 100),
            grant(101, W2, 2, 200),
            sent(105, W1, RECV, effect_msg(1)),
        ]),
        vec![Invariant::QuiescentHolder]
    );
    // Told its lease was lost (a refusal delivered to it), it still sends, within the time the
    // coordinator would have allowed.
    let refused = Msg::HeartbeatRejected {
        req: 3,
        job: JobId(0),
        token: Token(1),
    };
    assert_eq!(
        findings(vec![
            grant(0, W1, 1, 100),
            delivered(40, W1, COORD, refused),
            sent(50, W1, RECV, effect_msg(1)),
        ]),
        vec![Invariant::QuiescentHolder]
    );
    // Its journal says it is in jeopardy; it sends anyway without a note of the effect.
    let jeopardy = at(
        30,
        W1,
        Event::JeopardyEntered {
            job: JobId(0),
            token: Token(1),
            last_confirmed: 0,
            request: None,
        },
    );
    assert_eq!(
        findings(vec![
            grant(0, W1, 1, 100),
            claimed(1, W1, 1),
            jeopardy,
            sent(50, W1, RECV, effect_msg(1)),
        ]),
        vec![Invariant::QuiescentHolder]
    );
}

#[test]
fn an_effect_both_journaled_and_sent_is_judged_once() {
    // The reference journals and sends in the same handler: one decision, one finding.
    let found = findings(vec![
        grant(0, W1, 1, 100),
        effect(120, W1, 1, false),
        sent(120, W1, RECV, effect_msg(1)),
    ]);
    assert_eq!(found, vec![Invariant::QuiescentHolder]);
    // A note in another handler does not stand for the message.
    let found = findings(vec![
        grant(0, W1, 1, 100),
        effect(110, W1, 1, false),
        sent(120, W1, RECV, effect_msg(1)),
    ]);
    assert_eq!(
        found,
        vec![Invariant::QuiescentHolder, Invariant::QuiescentHolder]
    );
}

fn granted_msg(token: u64, lease_ns: u64) -> Msg {
    Msg::ClaimGranted {
        req: 1,
        job: JobId(0),
        token: Token(token),
        lease_ns,
        class: leasesim_protocol::ClassId(0),
        checkpoint: None,
    }
}

#[test]
fn coordinator_answers_without_journal_notes_are_judged_from_the_messages_i1_i3_i4() {
    // I3: a second grant while the first, told only by its message, is still valid.
    assert_eq!(
        findings(vec![
            sent(0, COORD, W1, granted_msg(1, 100)),
            sent(50, COORD, W2, granted_msg(2, 100)),
        ]),
        vec![Invariant::SingleValidLease]
    );
    // The same grant again to the same worker answers its repeated claim: no new decision.
    assert_eq!(
        findings(vec![
            sent(0, COORD, W1, granted_msg(1, 100)),
            sent(50, COORD, W1, granted_msg(1, 100)),
            sent(101, COORD, W2, granted_msg(2, 100)),
        ]),
        vec![]
    );
    // Journaled and sent in one handler: judged once.
    assert_eq!(
        findings(vec![
            grant(0, W1, 1, 100),
            grant(50, W2, 2, 150),
            sent(50, COORD, W2, granted_msg(2, 100)),
        ]),
        vec![Invariant::SingleValidLease]
    );
    // I4: a renewal answered after the lease expired.
    let renewed = Msg::HeartbeatOk {
        req: 2,
        job: JobId(0),
        token: Token(1),
        lease_ns: 100,
    };
    assert_eq!(
        findings(vec![
            sent(0, COORD, W1, granted_msg(1, 100)),
            sent(50, COORD, W1, renewed),
        ]),
        vec![]
    );
    assert_eq!(
        findings(vec![
            sent(0, COORD, W1, granted_msg(1, 100)),
            sent(150, COORD, W1, renewed),
        ]),
        vec![Invariant::NoStaleExtension]
    );
    // I1: a commit of a superseded token accepted, only on the wire.
    let commit = Msg::Commit {
        req: 9,
        job: JobId(0),
        worker: WorkerName(1),
        token: Token(1),
        outcome: Outcome::Success { result: 5 },
        client_now: 150,
    };
    let accepted = Msg::CommitAccepted {
        req: 9,
        job: JobId(0),
        token: Token(1),
    };
    let stale_accept = vec![
        grant(0, W1, 1, 100),
        grant(101, W2, 2, 200),
        delivered(150, COORD, W1, commit),
        sent(150, COORD, W1, accepted),
    ];
    assert_eq!(
        findings(stale_accept.clone()),
        vec![Invariant::NoStaleCommit]
    );
    // Answered again to the same repeated commit: still one decision.
    let mut again = stale_accept;
    again.push(delivered(160, COORD, W1, commit));
    again.push(sent(160, COORD, W1, accepted));
    assert_eq!(findings(again), vec![Invariant::NoStaleCommit]);
    // The current holder's commit, accepted only on the wire: fine.
    let current = |t, token: u64| {
        vec![
            delivered(
                t,
                COORD,
                W2,
                Msg::Commit {
                    req: t,
                    job: JobId(0),
                    worker: WorkerName(2),
                    token: Token(token),
                    outcome: Outcome::Success { result: 5 },
                    client_now: t,
                },
            ),
            sent(
                t,
                COORD,
                W2,
                Msg::CommitAccepted {
                    req: t,
                    job: JobId(0),
                    token: Token(token),
                },
            ),
        ]
    };
    let mut trace = vec![grant(0, W1, 1, 100), grant(101, W2, 2, 200)];
    trace.extend(current(150, 2));
    assert_eq!(findings(trace.clone()), vec![]);
}

#[test]
fn receiver_answers_without_journal_notes_are_judged_from_the_messages_i2() {
    let ack = |req: u64, op: u8| Msg::EffectAck {
        req,
        job: JobId(0),
        key: key(op),
        outcome: EffectOutcome::Applied,
    };
    let effect_to = |req: u64, op: u8, fence: u64| Msg::Effect {
        req,
        job: JobId(0),
        entity: EntityId(0),
        key: key(op),
        fence: Token(fence),
    };
    // One key applied twice, told only by the receiver's answers.
    assert_eq!(
        findings(vec![
            grant(0, W1, 1, 100),
            delivered(10, RECV, W1, effect_to(1, 1, 1)),
            sent(10, RECV, W1, ack(1, 1)),
            delivered(20, RECV, W1, effect_to(2, 1, 1)),
            sent(20, RECV, W1, ack(2, 1)),
        ]),
        vec![Invariant::NoDoubleEffect]
    );
    // A fencing receiver applies a lower fence after a higher one.
    assert_eq!(
        findings(vec![
            grant(0, W1, 1, 100),
            grant(101, W2, 2, 200),
            delivered(110, RECV, W2, effect_to(1, 1, 2)),
            sent(110, RECV, W2, ack(1, 1)),
            delivered(120, RECV, W1, effect_to(2, 2, 1)),
            sent(120, RECV, W1, ack(2, 2)),
        ]),
        vec![Invariant::NoDoubleEffect]
    );
    // Journaled and answered in one handler: judged once.
    let applied = |t, op: u8| {
        at(
            t,
            RECV,
            Event::EffectApplied {
                entity: EntityId(0),
                key: key(op),
                fence: Token(1),
            },
        )
    };
    assert_eq!(
        findings(vec![
            grant(0, W1, 1, 100),
            delivered(10, RECV, W1, effect_to(1, 1, 1)),
            applied(10, 1),
            sent(10, RECV, W1, ack(1, 1)),
            delivered(20, RECV, W1, effect_to(2, 1, 1)),
            applied(20, 1),
            sent(20, RECV, W1, ack(2, 1)),
        ]),
        vec![Invariant::NoDoubleEffect]
    );
}

// ---- belief within grant, judged where it is stated ----

/// W1's claim of token 1 at true time `t`, reading `local`, stating `deadline` on its clock.
fn stated(t: u64, local: u64, deadline: u64) -> TraceEvent<Msg, Event> {
    TraceEvent {
        t,
        node: W1,
        local,
        kind: EventKind::Note {
            note: Event::JobClaimed {
                job: JobId(0),
                token: Token(1),
                deadline,
            },
        },
    }
}

#[test]
fn a_stated_deadline_past_the_grant_is_flagged_even_when_the_holder_never_acts_i5() {
    let true_time = [Clock::new(0, 0); 4];
    let invariants = |j: Judgement| {
        j.findings
            .into_iter()
            .map(|f| f.invariant)
            .collect::<Vec<_>>()
    };
    // Grant until 100; W1 believes until 90, or until 150.
    let within = [grant(0, W1, 1, 100), stated(10, 10, 90)];
    assert_eq!(invariants(judged(&within, &true_time)), vec![]);
    let past = [grant(0, W1, 1, 100), stated(10, 10, 150)];
    let j = judged(&past, &true_time);
    assert_eq!(j.findings.len(), 1, "{:?}", j.findings);
    assert_eq!(j.findings[0].invariant, Invariant::QuiescentHolder);
    assert!(j.findings[0]
        .message
        .contains("past the coordinator's grant"));
    // A deadline its clock already reads is no belief: the holder is in jeopardy at once.
    let late = [grant(0, W1, 1, 100), stated(120, 120, 110)];
    assert_eq!(invariants(judged(&late, &true_time)), vec![]);
    // The same local deadline means different true times on different clocks: mapped through
    // the holder's own clock (500 ppm is its bound, so both are judged). Grant until 100 ms; W1
    // claims at 0 and states 100.04 ms on its clock.
    const MS: u64 = 1_000_000;
    let trace = [grant(0, W1, 1, 100 * MS), stated(0, 0, 100 * MS + 40_000)];
    let with_w1 = |drift_ppm| {
        let mut clocks = [Clock::new(0, 0); 4];
        clocks[W1 as usize] = Clock::new(0, drift_ppm);
        clocks
    };
    // Fast: it reads 100.04 ms at about 99.99 ms of true time, inside the grant.
    assert_eq!(invariants(judged(&trace, &with_w1(500))), vec![]);
    // Slow: at about 100.09 ms, past it.
    assert_eq!(
        invariants(judged(&trace, &with_w1(-500))),
        vec![Invariant::QuiescentHolder]
    );
}

#[test]
fn a_clock_out_of_its_bound_skips_the_belief_judgements_however_it_was_set() {
    let past = |t: u64| stated(t, t, t + 200);
    let skipped = |j: &Judgement| j.skipped.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    // Configured beyond its 500 ppm bound: not judged from the start, and said so.
    let mut clocks = [Clock::new(0, 0); 4];
    clocks[W1 as usize] = Clock::new(0, 2_000);
    let j = judged(&[grant(0, W1, 1, 100), past(10)], &clocks);
    assert_eq!(j.findings, vec![]);
    assert_eq!(
        skipped(&j),
        vec![
            "belief-within-grant (I5) not judged for W1 from 0.000s: its clock left its 500 ppm drift bound (configured at 2000 ppm)",
            "needless-takeover (I7) not judged for W1 from 0.000s: its clock left its 500 ppm drift bound (configured at 2000 ppm)",
        ]
    );
    // Set beyond it by a drift fault: judged before, not after, and said so.
    let drift = TraceEvent {
        t: 20,
        node: W1,
        local: 20,
        kind: EventKind::Fault {
            command: Command::SetDrift {
                node: W1,
                drift_ppm: 2_000,
            },
        },
    };
    let true_time = [Clock::new(0, 0); 4];
    let j = judged(&[grant(0, W1, 1, 100), drift.clone(), past(30)], &true_time);
    assert_eq!(j.findings, vec![]);
    assert_eq!(j.skipped.len(), 2);
    assert!(skipped(&j)[0].starts_with(
        "belief-within-grant (I5) not judged for W1 from 0.000s: its clock left its 500 ppm drift bound (its rate was set to 2000 ppm)"
    ));
    let j = judged(&[grant(0, W1, 1, 100), past(10), drift], &true_time);
    assert_eq!(
        j.findings.iter().map(|f| f.invariant).collect::<Vec<_>>(),
        vec![Invariant::QuiescentHolder]
    );
    // A frozen pause and a monotonic step leave the bound too; a wall-clock step does not.
    for (command, left) in [
        (
            Command::Pause {
                node: W1,
                frozen: true,
            },
            true,
        ),
        (
            Command::ClockStep {
                node: W1,
                delta_ns: 5,
            },
            true,
        ),
        (
            Command::WallStep {
                node: W1,
                delta_ns: 5,
            },
            false,
        ),
    ] {
        let fault = TraceEvent {
            t: 5,
            node: W1,
            local: 5,
            kind: EventKind::Fault { command },
        };
        let j = judged(&[grant(0, W1, 1, 100), fault], &true_time);
        assert_eq!(!j.skipped.is_empty(), left, "{command:?}: {:?}", j.skipped);
    }
    // A clock the checkers were not told: its statements are not judged, and that is said.
    let j = judged(&[grant(0, W1, 1, 100), past(10)], &[]);
    assert_eq!(j.findings, vec![]);
    assert_eq!(j.skipped.len(), 1);
    assert!(skipped(&j)[0].contains("its clock is not known"));
    // A cut from the world (not a clock fault) skips nothing.
    let cut = TraceEvent {
        t: 5,
        node: WORLD,
        local: 0,
        kind: EventKind::Fault {
            command: Command::Cut {
                from: W1,
                to: COORD,
            },
        },
    };
    assert!(judged(&[grant(0, W1, 1, 100), cut], &true_time)
        .skipped
        .is_empty());
}
