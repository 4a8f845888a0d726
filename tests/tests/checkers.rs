//! Every checker rejects a hand-made history that breaks its invariant, and accepts a clean one.
//! (The known-bad variants prove the same checkers on real runs: see `w1_w2.rs`.)

use leasesim_protocol::{
    EntityId, Event, GrantReason, IdemKey, Invariant, JobId, JobState, Msg, OpId, Token, WorkerName,
};
use leasesim_scenarios::oracle::{check, World};
use leasesim_scenarios::setup::{NodeInfo, Role};
use leasesim_sim::{Clock, End, EventKind, TraceEvent};

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

fn findings(trace: Vec<TraceEvent<Msg, Event>>) -> Vec<Invariant> {
    let nodes = nodes();
    let world = World {
        nodes: &nodes,
        coordinator_clock: Clock::new(0, 0),
        op_names: &[],
        jobs: 1,
        latency_max_ns: 10,
        liveness_deadline_ns: None,
        end: End::Done,
        end_ns: trace.last().map_or(0, |e| e.t),
    };
    check(&world, &trace)
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
