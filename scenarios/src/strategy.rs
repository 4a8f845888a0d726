//! proptest strategies over leasesim's setups (feature `proptest`): configurations and fault
//! plans built directly from proptest values, with the structure of the swarm, so a failing
//! case is shrunk by proptest itself (fewer faults, jobs, workers and steps, shorter faults,
//! earlier starts, smaller numbers). A user's property over their own machines:
//!
//! ```
//! use leasesim::strategy::setups;
//! use leasesim::{run, Machines, Verdict};
//! use proptest::prelude::*;
//!
//! proptest! {
//!     #![proptest_config(ProptestConfig { cases: 16, ..ProptestConfig::default() })]
//!     // In a test file, `#[test]` goes here.
//!     fn my_machines_hold(setup in setups(), seed in any::<u64>()) {
//!         let r = run(&setup, seed, &Machines::reference());
//!         prop_assert_eq!(r.verdict(), Verdict::Held, "{:?}", r.findings);
//!     }
//! }
//! my_machines_hold();
//! ```
//!
//! Every setup is safe by P6 (R = 2), has 1-4 workers, 1-6 jobs, 1-2 classes, 1-2 receivers
//! (with and without fences), 0-6 faults of every kind with a heal phase after them, and a
//! liveness bound derived from its timing.

use crate::plan::{Fault, FaultKind, MsgAction, MsgPattern, Trigger};
use crate::scenarios::story::{DRIFT_BOUND_PPM, OPS, RENEWAL_CAP_NS};
use crate::setup::{ClockSpec, ReceiverSetup, Setup, TimingPolicy, WorkerSetup};
use crate::world::ToolSetup;
use leasesim_protocol::*;
use leasesim_sim::{Limits, NetConfig, NodeId};
use proptest::collection::vec;
use proptest::prelude::*;
use proptest::sample::{select, Index};

/// Heartbeats per lease window (R) of the P6 policy every generated setup is validated against.
const R: u32 = 2;
/// Upper bounds of the per-worker periods; the liveness bound is derived from them.
const POLL_MAX_MS: u64 = 3_000;
const COMMIT_RETRY_MAX_MS: u64 = 2_000;
const START_DELAY_MAX_MS: u64 = 2_000;
const COMMIT_ATTEMPTS_MAX: u32 = 20;

/// Message kinds a message fault may target (as in the swarm).
const KINDS: [MsgKind; 10] = [
    MsgKind::Claim,
    MsgKind::ClaimGranted,
    MsgKind::Heartbeat,
    MsgKind::HeartbeatOk,
    MsgKind::Commit,
    MsgKind::CommitAccepted,
    MsgKind::Effect,
    MsgKind::EffectAck,
    MsgKind::ToolRequest,
    MsgKind::ToolResponse,
];

// ---------------------------------------------------------------------------------------------
// Generated values. Node, job and receiver choices are `Index`es resolved against the sizes the
// same case chose, so no strategy depends on another (no flat_map) and each shrinks on its own.
// Durations that scale with the leases are per-mille fractions, so they shrink towards short.

#[derive(Clone, Debug)]
enum StepGen {
    Tool,
    Effect { op: u8, receiver: Index },
}

#[derive(Clone, Debug)]
struct ClassGen {
    lease_ms: u64,
    max_attempts: u32,
    steps: Vec<StepGen>,
}

#[derive(Clone, Debug)]
struct WorkerGen {
    /// H as per mille of the shortest lease: 200 (L/5) to 285 (just under L/3.5).
    heartbeat_permille: u64,
    stop_margin_ms: u64,
    poll_ms: u64,
    commit_retry_ms: u64,
    start_delay_ms: u64,
    offset_ms: u64,
    drift_ppm: i32,
}

#[derive(Clone, Debug)]
struct ReceiverGen {
    supports_fence: bool,
    offset_ms: u64,
    drift_ppm: i32,
}

#[derive(Clone, Debug)]
struct JobGen {
    class: Index,
    payload_hash: u64,
    /// What the payload asks for as its lease, per mille of its class's lease (V13 obeys it).
    asked_permille: u64,
}

#[derive(Clone, Debug)]
struct NetGen {
    latency_min_us: u64,
    spread_ms: u64,
    drop_ppm: u32,
    dup_ppm: u32,
}

#[derive(Clone, Debug)]
struct CommonGen {
    tool_timeout_ms: u64,
    stage_deadline_ms: u64,
    /// The tool's longest call, per mille of one and a half of the longest lease.
    tool_max_permille: u64,
    coordinator_offset_ms: u64,
    tool_offset_ms: u64,
    tool_drift_ppm: i32,
    safety_ms: u64,
    /// The last worker runs under W1's name too (a second process under one name).
    shared_name: bool,
}

#[derive(Clone, Debug)]
enum ActionGen {
    Drop,
    Delay { permille: u64 },
    Duplicate { permille: u64 },
    Hold { permille: u64 },
}

#[derive(Clone, Debug)]
enum OperatorGen {
    Revoke,
    Cancel,
    Takeover { to: Index },
}

/// One fault; `len` fields are per mille of the span the swarm uses (`2 * lease_max`).
#[derive(Clone, Debug)]
enum FaultGen {
    Partition {
        worker: Index,
        /// `None`: the coordinator; otherwise a receiver.
        receiver: Option<Index>,
        one_way: bool,
        len: u64,
    },
    Isolate {
        /// `None`: the coordinator (an outage); otherwise a worker.
        worker: Option<Index>,
        len: u64,
    },
    Pause {
        worker: Index,
        frozen: bool,
        len: u64,
    },
    Message {
        kind: MsgKind,
        count: u32,
        action: ActionGen,
        len: u64,
    },
    WallStep {
        /// Any node but the operator.
        node: Index,
        delta_s: i64,
    },
    MonotonicJump {
        worker: Index,
        delta_ms: i64,
    },
    Drift {
        worker: Index,
        drift_ppm: i32,
    },
    Crash {
        worker: Index,
        /// `None`: it restarts at the heal phase.
        restart: Option<u64>,
    },
    Slow {
        worker: Option<Index>,
        extra_ms: u64,
        len: u64,
    },
    Tool {
        worker: Option<Index>,
        step: Option<u8>,
        nth: u32,
        kind: ToolFaultKind,
        late: u64,
    },
    Operator {
        job: Index,
        action: OperatorGen,
    },
}

#[derive(Clone, Debug)]
struct PlannedFault {
    /// Start: the square of this per mille of the safety phase (always inside it).
    start_permille: u64,
    fault: FaultGen,
}

// ---------------------------------------------------------------------------------------------
// Strategies.

fn step_gen() -> impl Strategy<Value = StepGen> {
    prop_oneof![
        Just(StepGen::Tool),
        (1..OPS.len() as u8, any::<Index>())
            .prop_map(|(op, receiver)| StepGen::Effect { op, receiver }),
    ]
}

prop_compose! {
    fn class_gen()(
        lease_ms in 5_000u64..=40_000,
        max_attempts in 1u32..=4,
        steps in vec(step_gen(), 1..=4),
    ) -> ClassGen {
        ClassGen { lease_ms, max_attempts, steps }
    }
}

prop_compose! {
    fn worker_gen()(
        heartbeat_permille in 200u64..=285,
        stop_margin_ms in 100u64..=1_000,
        poll_ms in 200u64..=POLL_MAX_MS,
        commit_retry_ms in 200u64..=COMMIT_RETRY_MAX_MS,
        start_delay_ms in 0u64..=START_DELAY_MAX_MS,
        offset_ms in 0u64..=10_000,
        drift_ppm in -(DRIFT_BOUND_PPM as i32)..=DRIFT_BOUND_PPM as i32,
    ) -> WorkerGen {
        WorkerGen {
            heartbeat_permille,
            stop_margin_ms,
            poll_ms,
            commit_retry_ms,
            start_delay_ms,
            offset_ms,
            drift_ppm,
        }
    }
}

prop_compose! {
    fn receiver_gen()(
        supports_fence in prop::bool::weighted(0.75),
        offset_ms in 0u64..=10_000,
        drift_ppm in -200i32..=200,
    ) -> ReceiverGen {
        ReceiverGen { supports_fence, offset_ms, drift_ppm }
    }
}

prop_compose! {
    fn job_gen()(
        class in any::<Index>(),
        payload_hash in any::<u64>(),
        asked_permille in 50u64..=250,
    ) -> JobGen {
        JobGen { class, payload_hash, asked_permille }
    }
}

fn net_gen() -> impl Strategy<Value = NetGen> {
    // Half the networks are calm (no loss, no duplication), as in the swarm; the rest lose up
    // to 2% and duplicate up to 1% of the messages (until the heal phase).
    let storm = prop_oneof![Just((0u32, 0u32)), (0u32..=20_000, 0u32..=10_000)];
    (200u64..=2_000, 0u64..=20, storm).prop_map(
        |(latency_min_us, spread_ms, (drop_ppm, dup_ppm))| NetGen {
            latency_min_us,
            spread_ms,
            drop_ppm,
            dup_ppm,
        },
    )
}

prop_compose! {
    fn common_gen()(
        tool_timeout_ms in 5_000u64..=60_000,
        stage_deadline_ms in 10_000u64..=120_000,
        tool_max_permille in 0u64..=1_000,
        coordinator_offset_ms in 0u64..=1_000,
        tool_offset_ms in 0u64..=10_000,
        tool_drift_ppm in -200i32..=200,
        safety_ms in 5_000u64..=30_000,
        shared_name in prop::bool::weighted(1.0 / 6.0),
    ) -> CommonGen {
        CommonGen {
            tool_timeout_ms,
            stage_deadline_ms,
            tool_max_permille,
            coordinator_offset_ms,
            tool_offset_ms,
            tool_drift_ppm,
            safety_ms,
            shared_name,
        }
    }
}

fn action_gen() -> impl Strategy<Value = ActionGen> {
    prop_oneof![
        Just(ActionGen::Drop),
        (0u64..=1_000).prop_map(|permille| ActionGen::Delay { permille }),
        (0u64..=1_000).prop_map(|permille| ActionGen::Duplicate { permille }),
        (0u64..=1_000).prop_map(|permille| ActionGen::Hold { permille }),
    ]
}

fn tool_kind() -> impl Strategy<Value = ToolFaultKind> {
    select(vec![
        ToolFaultKind::Hang,
        ToolFaultKind::Late,
        ToolFaultKind::Transient,
        ToolFaultKind::Permanent,
        ToolFaultKind::AnswerLost,
    ])
}

/// One fault of any kind of the catalogue; message faults twice as often as the rest (as in the
/// swarm, where they take two of its twelve draws).
// Long: one strategy per fault kind, then their weighted choice; split, each would be a one-expression function.
fn fault_gen() -> impl Strategy<Value = FaultGen> {
    let len = || 0u64..=1_000;
    let partition = (
        any::<Index>(),
        prop::option::weighted(0.25, any::<Index>()),
        prop::bool::weighted(1.0 / 3.0),
        len(),
    )
        .prop_map(|(worker, receiver, one_way, len)| FaultGen::Partition {
            worker,
            receiver,
            one_way,
            len,
        });
    let isolate = (prop::option::of(any::<Index>()), len())
        .prop_map(|(worker, len)| FaultGen::Isolate { worker, len });
    let pause =
        (any::<Index>(), any::<bool>(), len()).prop_map(|(worker, frozen, len)| FaultGen::Pause {
            worker,
            frozen,
            len,
        });
    let message = (select(KINDS.to_vec()), 1u32..=4, action_gen(), len()).prop_map(
        |(kind, count, action, len)| FaultGen::Message {
            kind,
            count,
            action,
            len,
        },
    );
    let wall_step = (any::<Index>(), -7_200i64..=7_200)
        .prop_map(|(node, delta_s)| FaultGen::WallStep { node, delta_s });
    // A suspend or migration: the monotonic clock jumps forward up to 10 s.
    let monotonic_jump = (any::<Index>(), 0i64..=10_000)
        .prop_map(|(worker, delta_ms)| FaultGen::MonotonicJump { worker, delta_ms });
    // Mostly within the drift bound; sometimes far beyond it (a hazard, not a violation).
    let drift = (
        any::<Index>(),
        prop_oneof![
            1 => -(DRIFT_BOUND_PPM as i32)..=DRIFT_BOUND_PPM as i32,
            1 => -20_000i32..=20_000,
        ],
    )
        .prop_map(|(worker, drift_ppm)| FaultGen::Drift { worker, drift_ppm });
    let crash = (any::<Index>(), prop::option::weighted(0.75, 0u64..=1_000))
        .prop_map(|(worker, restart)| FaultGen::Crash { worker, restart });
    let slow = (prop::option::of(any::<Index>()), 1u64..=2_000, len()).prop_map(
        |(worker, extra_ms, len)| FaultGen::Slow {
            worker,
            extra_ms,
            len,
        },
    );
    let tool = (
        prop::option::of(any::<Index>()),
        prop::option::weighted(0.25, 0u8..4),
        0u32..=2,
        tool_kind(),
        len(),
    )
        .prop_map(|(worker, step, nth, kind, late)| FaultGen::Tool {
            worker,
            step,
            nth,
            kind,
            late,
        });
    let operator = (
        any::<Index>(),
        prop_oneof![
            Just(OperatorGen::Revoke),
            Just(OperatorGen::Cancel),
            any::<Index>().prop_map(|to| OperatorGen::Takeover { to }),
        ],
    )
        .prop_map(|(job, action)| FaultGen::Operator { job, action });
    prop_oneof![
        1 => partition,
        1 => isolate,
        1 => pause,
        2 => message,
        1 => wall_step,
        1 => monotonic_jump,
        1 => drift,
        1 => crash,
        1 => slow,
        1 => tool,
        1 => operator,
    ]
}

prop_compose! {
    fn planned_fault()(start_permille in 0u64..1_000, fault in fault_gen()) -> PlannedFault {
        PlannedFault { start_permille, fault }
    }
}

/// A whole setup: 1-4 workers, 1-6 jobs, 1-2 classes, 1-2 receivers, 0-6 faults.
pub fn setups() -> impl Strategy<Value = Setup> {
    (
        vec(class_gen(), 1..=2),
        vec(worker_gen(), 1..=4),
        vec(receiver_gen(), 1..=2),
        vec(job_gen(), 1..=6),
        net_gen(),
        common_gen(),
        vec(planned_fault(), 0..=6),
    )
        .prop_map(|(classes, workers, receivers, jobs, net, common, faults)| {
            build(
                &classes, &workers, &receivers, &jobs, &net, &common, &faults,
            )
        })
}

// ---------------------------------------------------------------------------------------------
// From generated values to a Setup.

fn ms(v: u64) -> Nanos {
    v * MILLI_NS
}

/// `lo + (hi - lo) * permille / 1000`.
fn scaled(lo: Nanos, hi: Nanos, permille: u64) -> Nanos {
    lo + (hi.saturating_sub(lo) as u128 * permille as u128 / 1_000) as Nanos
}

fn build(
    classes_g: &[ClassGen],
    workers_g: &[WorkerGen],
    receivers_g: &[ReceiverGen],
    jobs_g: &[JobGen],
    net_g: &NetGen,
    c: &CommonGen,
    faults_g: &[PlannedFault],
) -> Setup {
    let receivers_n = receivers_g.len();
    let classes = classes(classes_g);
    let plans = plans(classes_g, receivers_n);
    let lease_min = classes.iter().map(|c| c.lease_ns).min().expect("a class");
    let lease_max = classes.iter().map(|c| c.lease_ns).max().expect("a class");
    let workers = workers(workers_g, c, lease_min, &plans);
    let safety_ns = ms(c.safety_ms);
    let liveness_bound_ns = liveness_bound(&classes, ms(c.stage_deadline_ms), jobs_g, &workers);
    let jobs = jobs(jobs_g, &classes);
    let mut setup = Setup {
        scenario: "property".into(),
        variant: Variant::Reference,
        classes,
        plans,
        jobs,
        op_names: crate::scenarios::story::op_names(),
        coordinator_clock: ClockSpec {
            offset_ns: ms(c.coordinator_offset_ms),
            drift_ppm: 0,
        },
        workers,
        receivers: receivers(receivers_g),
        tool: ToolSetup {
            steps: Vec::new(),
            default_min_ns: 10 * MILLI_NS,
            // Unlike the swarm (100 ms-3 s), a call may last up to one and a half of the longest
            // lease: with at most 6 jobs the work must outlast a lease now and then, or a fault
            // rarely finds a holder to disturb.
            default_max_ns: scaled(100 * MILLI_NS, lease_max * 3 / 2, c.tool_max_permille),
        },
        tool_clock: ClockSpec {
            offset_ns: ms(c.tool_offset_ms),
            drift_ppm: c.tool_drift_ppm,
        },
        net: net(net_g),
        limits: Limits {
            event_budget: 1_000_000,
            horizon_ns: safety_ns + liveness_bound_ns + 60 * SECOND_NS,
            queue_max: 100_000,
        },
        faults: Vec::new(),
        heal_at_ns: Some(safety_ns),
        liveness_bound_ns: Some(liveness_bound_ns),
        timing: TimingPolicy {
            heartbeats_per_window: R,
            jitter_ns: lease_min / 10,
        },
    };
    let faults = faults_g
        .iter()
        .map(|f| fault(&setup, safety_ns, lease_max, f))
        .collect();
    setup.faults = faults;
    setup
}

fn classes(classes_g: &[ClassGen]) -> Vec<ClassSpec> {
    classes_g
        .iter()
        .map(|g| ClassSpec {
            lease_ns: ms(g.lease_ms),
            max_attempts: g.max_attempts,
            renewal_cap_ns: RENEWAL_CAP_NS,
            // No admission limit and the swarm's retry backoff (1 s, doubled per attempt).
            capacity: None,
            retry_backoff_ns: SECOND_NS,
        })
        .collect()
}

/// Each class's plan, its effects sent to receivers among `receivers_n`.
fn plans(classes_g: &[ClassGen], receivers_n: usize) -> Vec<Plan> {
    classes_g
        .iter()
        .map(|g| Plan {
            steps: g
                .steps
                .iter()
                .map(|s| match s {
                    StepGen::Tool => Step::Tool,
                    StepGen::Effect { op, receiver } => Step::Effect {
                        op: OpId(*op),
                        receiver: receiver.index(receivers_n) as u8,
                    },
                })
                .collect(),
        })
        .collect()
}

/// The workers, each with a copy of the plans; the last may share the first one's name.
fn workers(
    workers_g: &[WorkerGen],
    c: &CommonGen,
    lease_min: Nanos,
    plans: &[Plan],
) -> Vec<WorkerSetup> {
    let stage_deadline_ns = ms(c.stage_deadline_ms);
    let mut workers: Vec<WorkerSetup> = workers_g
        .iter()
        .enumerate()
        .map(|(i, g)| WorkerSetup {
            config: WorkerConfig {
                name: WorkerName(i as u32 + 1),
                // H between L_min/5 and L_min/3.5: with R = 2 and J = L_min/10 the lease is
                // longer than (1+rho)/(1-rho)*R*H + J (P6), checked by the property.
                heartbeat_ns: lease_min * g.heartbeat_permille / 1_000,
                drift_ppm_max: DRIFT_BOUND_PPM,
                stop_margin_ns: ms(g.stop_margin_ms).min(lease_min / 4),
                tool_timeout_ns: ms(c.tool_timeout_ms),
                stage_deadline_ns,
                claim_poll_ns: ms(g.poll_ms),
                commit_retry_ns: ms(g.commit_retry_ms),
                commit_attempts_max: COMMIT_ATTEMPTS_MAX,
                start_delay_ns: ms(g.start_delay_ms),
                plans: plans.to_vec(),
            },
            clock: ClockSpec {
                offset_ns: ms(g.offset_ms),
                drift_ppm: g.drift_ppm,
            },
        })
        .collect();
    if workers.len() >= 2 && c.shared_name {
        let last = workers.len() - 1;
        workers[last].config.name = WorkerName(1);
    }
    workers
}

fn receivers(receivers_g: &[ReceiverGen]) -> Vec<ReceiverSetup> {
    receivers_g
        .iter()
        .map(|g| ReceiverSetup {
            supports_fence: g.supports_fence,
            // As in the swarm: every receiver answers status queries and refuses no operation.
            supports_status: true,
            refused_ops: Vec::new(),
            clock: ClockSpec {
                offset_ns: ms(g.offset_ms),
                drift_ppm: g.drift_ppm,
            },
        })
        .collect()
}

fn net(net_g: &NetGen) -> NetConfig {
    let latency_min_ns = net_g.latency_min_us * 1_000;
    NetConfig {
        latency_min_ns,
        latency_max_ns: latency_min_ns + ms(net_g.spread_ms),
        drop_ppm: net_g.drop_ppm,
        dup_ppm: net_g.dup_ppm,
    }
}

/// The swarm's liveness bound (I7), from the upper bounds of the drawn periods: after the
/// heal, wait out a lease; then each attempt polls, works up to the stage deadline and asks
/// for its commit with bounded retries, plus one more lease; jobs share the workers
/// (ceil(jobs / workers) rounds and a spare), each up to the attempt limit. Two terms more
/// than the swarm: each attempt may first wait out the longest retry backoff (1 s doubled
/// per attempt, P11), and a worker that crashed without a restart time comes back at the
/// heal and waits out its start delay before its first claim.
fn liveness_bound(
    classes: &[ClassSpec],
    stage_deadline_ns: Nanos,
    jobs_g: &[JobGen],
    workers: &[WorkerSetup],
) -> Nanos {
    let lease_max = classes.iter().map(|c| c.lease_ns).max().expect("a class");
    let attempts_max = classes
        .iter()
        .map(|c| c.max_attempts as u64)
        .max()
        .expect("a class");
    let backoff_max_ns = SECOND_NS << (attempts_max - 1);
    let attempt_ns = ms(POLL_MAX_MS)
        + backoff_max_ns
        + stage_deadline_ns
        + ms(COMMIT_RETRY_MAX_MS) * COMMIT_ATTEMPTS_MAX as u64
        + lease_max;
    let rounds = (jobs_g.len() as u64).div_ceil(workers.len() as u64) + 1;
    lease_max + ms(START_DELAY_MAX_MS) + rounds * attempts_max * attempt_ns
}

/// The jobs, each of its class and asking for a share of its class's lease.
fn jobs(jobs_g: &[JobGen], classes: &[ClassSpec]) -> Vec<JobSpec> {
    jobs_g
        .iter()
        .enumerate()
        .map(|(i, g)| {
            let class = g.class.index(classes.len());
            let lease = classes[class].lease_ns;
            JobSpec {
                class: ClassId(class as u8),
                payload_hash: g.payload_hash ^ i as u64,
                payload_lease_ns: Some(lease * g.asked_permille / 1_000),
            }
        })
        .collect()
}

/// Resolves one generated fault against the setup's node layout (coordinator 0, workers,
/// receivers, tool, operator).
// Long: one arm per fault kind, each resolving its indexes in a few lines; split, each would be a one-expression function.
fn fault(s: &Setup, safety_ns: Nanos, lease_max: Nanos, g: &PlannedFault) -> Fault {
    let worker = |i: &Index| s.worker_node(i.index(s.workers.len()));
    let coordinator = Setup::COORDINATOR;
    // Skewed towards the start of the safety phase (the square of a uniform fraction), where
    // the few jobs are still running; still anywhere inside it.
    let start_ns = safety_ns * g.start_permille * g.start_permille / 1_000_000;
    let start = Trigger::at(start_ns);
    // How long a lasting fault lasts: 100 ms up to two of the longest leases (as the swarm).
    let span = |permille: u64| scaled(100 * MILLI_NS, 2 * lease_max, permille);
    let at_start = |kind| Fault::new(start, kind);
    let lasting = |kind, len: &u64| at_start(kind).until(Trigger::at(start_ns + span(*len)));
    match &g.fault {
        FaultGen::Partition {
            worker: w,
            receiver,
            one_way,
            len,
        } => {
            let b = match receiver {
                None => coordinator,
                Some(r) => s.receiver_node(r.index(s.receivers.len())),
            };
            let kind = FaultKind::Partition {
                a: worker(w),
                b,
                one_way: *one_way,
            };
            lasting(kind, len)
        }
        FaultGen::Isolate { worker: w, len } => {
            let node = w.as_ref().map_or(coordinator, worker);
            lasting(FaultKind::Isolate { node }, len)
        }
        FaultGen::Pause {
            worker: w,
            frozen,
            len,
        } => at_start(FaultKind::Pause {
            node: worker(w),
            frozen: *frozen,
            duration_ns: span(*len),
            hold_anchor: false,
        }),
        FaultGen::Message {
            kind,
            count,
            action,
            len,
        } => {
            let action = msg_action(action, start_ns, lease_max);
            let pattern = MsgPattern {
                kind: Some(*kind),
                ..MsgPattern::default()
            };
            let kind = FaultKind::Message {
                pattern,
                count: *count,
                action,
            };
            lasting(kind, len)
        }
        FaultGen::WallStep { node, delta_s } => at_start(FaultKind::ClockStep {
            // Any node but the operator: coordinator, workers, receivers, tool.
            node: node.index(s.operator_node() as usize) as NodeId,
            delta_ns: delta_s * SECOND_NS as i64,
            wall: true,
        }),
        FaultGen::MonotonicJump {
            worker: w,
            delta_ms,
        } => at_start(FaultKind::ClockStep {
            node: worker(w),
            delta_ns: delta_ms * MILLI_NS as i64,
            wall: false,
        }),
        FaultGen::Drift {
            worker: w,
            drift_ppm,
        } => at_start(FaultKind::Drift {
            node: worker(w),
            drift_ppm: *drift_ppm,
        }),
        FaultGen::Crash { worker: w, restart } => at_start(FaultKind::Crash {
            node: worker(w),
            restart_after_ns: restart.map(span),
        }),
        FaultGen::Slow {
            worker: w,
            extra_ms,
            len,
        } => {
            let kind = FaultKind::Slow {
                node: w.as_ref().map_or(coordinator, worker),
                extra_ns: ms(*extra_ms),
            };
            lasting(kind, len)
        }
        FaultGen::Tool {
            worker: w,
            step,
            nth,
            kind,
            late,
        } => Fault::untriggered(FaultKind::Tool {
            worker: w.as_ref().map(worker),
            step: *step,
            nth: *nth,
            kind: *kind,
            late_ns: scaled(SECOND_NS, 2 * lease_max, *late),
        }),
        FaultGen::Operator { job, action } => at_start(FaultKind::Operator {
            job: JobId(job.index(s.jobs.len()) as u32),
            action: match action {
                OperatorGen::Revoke => OperatorAction::Revoke,
                OperatorGen::Cancel => OperatorAction::Cancel,
                OperatorGen::Takeover { to } => OperatorAction::Takeover {
                    to: s.workers[to.index(s.workers.len())].config.name,
                },
            },
        }),
    }
}

/// What a message fault does to the message, its times scaled to the longest lease.
fn msg_action(action: &ActionGen, start_ns: Nanos, lease_max: Nanos) -> MsgAction {
    match action {
        ActionGen::Drop => MsgAction::Drop,
        ActionGen::Delay { permille } => MsgAction::Delay {
            extra_ns: scaled(10 * MILLI_NS, lease_max, *permille),
        },
        ActionGen::Duplicate { permille } => MsgAction::Duplicate {
            gap_ns: scaled(0, lease_max / 2, *permille),
        },
        ActionGen::Hold { permille } => MsgAction::Hold {
            release: Trigger::at(start_ns + scaled(10 * MILLI_NS, 2 * lease_max, *permille)),
        },
    }
}
