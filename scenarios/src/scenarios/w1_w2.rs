//! The W1/W2 test of the first article (SPEC, last section).
//!
//! W1 claims the job, applies `create_case`, runs a short lookup, sends `update_case` and starts
//! the long external request. At that moment it loses the coordinator, and only the coordinator.
//! Its lease expires; W2 claims the job with a higher token, and its first effect (a repeated
//! `create_case` key) raises the receiver's fence mark. Only then does the network deliver W1's
//! `update_case`: the key cannot stop it (W2 has not sent that key yet), only the fence can.
//! W2 completes. The tool's success reaches W1 late; W1 gets its network back and asks for its
//! conditional commit. Pass: W1 cannot extend, cannot commit, creates no second effect, and its
//! rejected result is journaled.

use super::story::RENEWAL_CAP_NS;
use crate::plan::{Fault, MsgAction, MsgPattern, Trigger};
use crate::setup::{ClockSpec, ReceiverSetup, Setup, TimingPolicy, WorkerSetup};
use crate::world::{ToolSetup, ToolStep};
use leasesim_protocol::{
    ClassId, ClassSpec, JobSpec, MsgKind, OpId, Plan, Step, Token, ToolAnswer, Variant,
    WorkerConfig, WorkerName, MILLI_NS, SECOND_NS,
};
use leasesim_sim::{Limits, NetConfig, Prng, Stream};

/// `create_case`.
pub const CREATE_CASE: OpId = OpId(1);
/// `update_case`.
pub const UPDATE_CASE: OpId = OpId(2);
/// The short lookup's plan step.
pub const LOOKUP_STEP: u8 = 1;
/// The long external request's plan step.
pub const FETCH_STEP: u8 = 3;

/// Builds a W1/W2 story; the seed varies timings, latencies and clocks inside ranges that keep
/// the story.
pub fn build(seed: u64, variant: Variant) -> Setup {
    let mut r = Prng::new(seed, Stream::Config);
    let ms = |r: &mut Prng, lo: u64, hi: u64| r.range(lo * MILLI_NS, hi * MILLI_NS);
    let lease_ns = ms(&mut r, 20_000, 40_000);
    // H between L/5 and L/3 keeps L > R*H + J with R = 2 and a jitter reserve of L/3 (P6).
    let heartbeat_ns = lease_ns * r.range(20, 33) / 100;
    let worker = |r: &mut Prng, name: u32, start_lo: u64, start_hi: u64| WorkerSetup {
        config: WorkerConfig {
            name: WorkerName(name),
            heartbeat_ns,
            drift_ppm_max: 500,
            stop_margin_ns: ms(r, 500, 2_000),
            tool_timeout_ns: 120 * SECOND_NS,
            stage_deadline_ns: 300 * SECOND_NS,
            claim_poll_ns: ms(r, 500, 2_000),
            commit_retry_ns: ms(r, 500, 2_000),
            commit_attempts_max: 60,
            start_delay_ns: ms(r, start_lo, start_hi),
            plans: vec![Plan {
                steps: vec![
                    Step::Effect {
                        op: CREATE_CASE,
                        receiver: 0,
                    },
                    Step::Tool,
                    Step::Effect {
                        op: UPDATE_CASE,
                        receiver: 0,
                    },
                    Step::Tool,
                ],
            }],
        },
        clock: ClockSpec {
            offset_ns: r.range(0, 5 * SECOND_NS),
            drift_ppm: r.range_i64(-200, 200) as i32,
        },
    };
    let w1 = worker(&mut r, 1, 0, 100);
    // W2 starts polling some time before W1's lease runs out, so the takeover comes from a
    // worker that was waiting, not from one that happened to arrive late.
    let lease_ms = lease_ns / MILLI_NS;
    let w2 = worker(&mut r, 2, lease_ms * 7 / 10, lease_ms * 95 / 100);
    let latency_min_ns = r.range(500_000, 2 * MILLI_NS);
    let net = NetConfig {
        latency_min_ns,
        latency_max_ns: latency_min_ns + ms(&mut r, 1, 20),
        drop_ppm: 0,
        dup_ppm: 0,
    };
    let coordinator_clock = ClockSpec {
        offset_ns: r.range(0, SECOND_NS),
        drift_ppm: 0,
    };
    let receiver_clock = ClockSpec {
        offset_ns: r.range(0, 5 * SECOND_NS),
        drift_ppm: r.range_i64(-200, 200) as i32,
    };
    let tool_clock = ClockSpec {
        offset_ns: r.range(0, 5 * SECOND_NS),
        drift_ppm: r.range_i64(-200, 200) as i32,
    };
    let heal_after_ns = ms(&mut r, 100, 3_000);
    // W1's late `update_case` must land after W2's `create_case` and before W2's own
    // `update_case`, which waits for a lookup of at least 100 ms: a release within 10 ms of
    // W2's first effect keeps that order for every latency drawn above.
    let fence_release_ns = ms(&mut r, 0, 10);
    let answer_release_ns = ms(&mut r, 10, 1_000);

    let mut setup = Setup {
        scenario: "w1-w2".into(),
        variant,
        classes: vec![ClassSpec {
            lease_ns,
            max_attempts: 3,
            renewal_cap_ns: RENEWAL_CAP_NS,
            capacity: None,
            retry_backoff_ns: SECOND_NS,
        }],
        plans: w1.config.plans.clone(),
        jobs: vec![JobSpec {
            class: ClassId(0),
            payload_hash: 0x8f1b_7c3d,
            payload_lease_ns: None,
        }],
        op_names: vec!["job".into(), "create_case".into(), "update_case".into()],
        coordinator_clock,
        workers: vec![w1, w2],
        receivers: vec![ReceiverSetup {
            supports_fence: true,
            supports_status: true,
            refused_ops: Vec::new(),
            clock: receiver_clock,
        }],
        tool: ToolSetup {
            steps: vec![
                ToolStep {
                    step: LOOKUP_STEP,
                    min_ns: 100 * MILLI_NS,
                    max_ns: 300 * MILLI_NS,
                    answer: ToolAnswer::Success { result: 0x100c },
                },
                ToolStep {
                    step: FETCH_STEP,
                    min_ns: 100 * MILLI_NS,
                    max_ns: 2 * SECOND_NS,
                    answer: ToolAnswer::Success { result: 0xfe7c },
                },
            ],
            default_min_ns: 100 * MILLI_NS,
            default_max_ns: SECOND_NS,
        },
        tool_clock,
        net,
        limits: Limits {
            event_budget: 100_000,
            horizon_ns: 3_600 * SECOND_NS,
            queue_max: 10_000,
        },
        faults: Vec::new(),
        heal_at_ns: None,
        liveness_bound_ns: Some(1_800 * SECOND_NS),
        timing: TimingPolicy {
            heartbeats_per_window: 2,
            jitter_ns: 2 * SECOND_NS,
        },
    };
    // What the payload asks for as a lease length (ignored by the reference, P7; V13 obeys).
    setup.jobs[0].payload_lease_ns = Some(r.range(lease_ns / 20, lease_ns / 4));
    let (w1_node, w2_node) = (setup.worker_node(0), setup.worker_node(1));
    let (recv, tool) = (setup.receiver_node(0), setup.tool_node());
    let coord = Setup::COORDINATOR;
    setup.faults = vec![
        // W1 loses the coordinator, and only it, as it starts the long external request.
        Fault::Partition {
            a: w1_node,
            b: coord,
            one_way: false,
            start: Trigger::Sent {
                pattern: MsgPattern {
                    from: Some(w1_node),
                    kind: Some(MsgKind::ToolRequest),
                    step: Some(FETCH_STEP),
                    ..MsgPattern::default()
                },
                delay_ns: 0,
            },
            // W1 gets its network back only with the late success in hand.
            end: Some(Trigger::Delivered {
                pattern: MsgPattern {
                    to: Some(w1_node),
                    kind: Some(MsgKind::ToolResponse),
                    step: Some(FETCH_STEP),
                    ..MsgPattern::default()
                },
                delay_ns: heal_after_ns,
            }),
        },
        // W1's `update_case` reaches the receiver only after W2's first effect did.
        Fault::Message {
            pattern: MsgPattern {
                from: Some(w1_node),
                to: Some(recv),
                kind: Some(MsgKind::Effect),
                op: Some(UPDATE_CASE),
                ..MsgPattern::default()
            },
            start: Trigger::At { t_ns: 0 },
            end: None,
            count: 1,
            action: MsgAction::Hold {
                release: Trigger::Delivered {
                    pattern: MsgPattern {
                        to: Some(recv),
                        kind: Some(MsgKind::Effect),
                        token: Some(Token(2)),
                        ..MsgPattern::default()
                    },
                    delay_ns: fence_release_ns,
                },
            },
        },
        // The tool's success reaches W1 only after W2 has completed.
        Fault::Message {
            pattern: MsgPattern {
                from: Some(tool),
                to: Some(w1_node),
                kind: Some(MsgKind::ToolResponse),
                step: Some(FETCH_STEP),
                ..MsgPattern::default()
            },
            start: Trigger::At { t_ns: 0 },
            end: None,
            count: 1,
            action: MsgAction::Hold {
                release: Trigger::Sent {
                    pattern: MsgPattern {
                        from: Some(coord),
                        to: Some(w2_node),
                        kind: Some(MsgKind::CommitAccepted),
                        ..MsgPattern::default()
                    },
                    delay_ns: answer_release_ns,
                },
            },
        },
    ];
    setup
}
