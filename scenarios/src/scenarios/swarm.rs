//! Swarm testing (TigerBeetle's VOPR): the seed picks the whole configuration — 1-8 workers,
//! 1-50 jobs, job classes with their own lease lengths and plans, heartbeat periods inside the
//! valid bound of P6, receivers with and without fence support — and a random fault plan drawn
//! from the whole catalogue (F1-F8) with seed-chosen intensity.
//!
//! Each run has a **safety phase** under faults and then a **heal phase**: faults stop, nodes
//! come back, held messages fly, clocks return within their bound, the network stops losing
//! messages. After healing every job must end within a bound derived from its class's lease,
//! the stage deadline, the commit retries and the attempt limit (I7).

use super::story::{ms, DRIFT_BOUND_PPM, OPS, RENEWAL_CAP_NS};
use super::Stock;
use crate::plan::{Fault, FaultKind, MsgAction, MsgPattern, Trigger};
use crate::setup::{copy_plans, ClockSpec, ReceiverSetup, Setup, Spare, TimingPolicy, WorkerSetup};
use crate::world::ToolSetup;
use leasesim_checkers::Hazard;
use leasesim_protocol::{
    coordinator::HUMAN_LEASE_NS, ClassId, ClassSpec, JobId, JobSpec, MsgKind, Nanos, OpId,
    OperatorAction, Plan, Step, ToolFaultKind, Variant, WorkerConfig, WorkerName, MILLI_NS,
    SECOND_NS,
};
use leasesim_sim::{Limits, NetConfig, NodeId, Prng, Stream};

/// The `swarm` scenario.
pub const DEF: Stock = Stock {
    name: "swarm",
    story: "the seed picks everything: 1-8 workers, 1-50 jobs, classes, receivers with and \
            without fences, and a random plan of every fault kind; then the faults heal and \
            every job must end",
    hazards: &[
        Hazard::Takeover,
        Hazard::StaleCommitRejected,
        Hazard::HeartbeatRefused,
        Hazard::JeopardyEntered,
        Hazard::Crash,
        Hazard::ToolFault,
        Hazard::OperatorAction,
        Hazard::MessageLost,
        Hazard::MessageDuplicated,
        Hazard::DuplicateKeyAnswered,
    ],
    unjudged: &[],
    build,
};

/// Message kinds a message fault may target.
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

fn build(seed: u64, variant: Variant) -> Setup {
    // The storage of the setup this thread recycled last, if any: every vector below is cleared
    // or overwritten in full, so the setup is the same as one built from new ones.
    let Spare {
        mut scenario,
        mut classes,
        mut plans,
        mut jobs,
        mut workers,
        mut receivers,
        mut tool_steps,
        mut faults,
    } = Spare::take();
    let mut r = Prng::new(seed, Stream::Config);
    let workers_n = r.range(1, 8) as usize;
    let jobs_n = r.range(1, 50) as usize;
    let classes_n = r.range(1, 3) as usize;
    let receivers_n = r.range(1, 3) as usize;

    // Classes: lease lengths on the coordinator (P7), attempt limits, plans.
    classes.clear();
    plans.truncate(classes_n);
    for c in 0..classes_n {
        classes.push(ClassSpec {
            lease_ns: ms(&mut r, 2_000, 30_000),
            max_attempts: r.range(1, 4) as u32,
            renewal_cap_ns: RENEWAL_CAP_NS,
            capacity: None,
            retry_backoff_ns: SECOND_NS,
        });
        let steps = (0..r.range(1, 4)).map(|_| {
            if r.chance(1, 2) {
                Step::Tool
            } else {
                Step::Effect {
                    op: OpId(r.range(1, OPS.len() as u64 - 1) as u8),
                    receiver: r.index(receivers_n) as u8,
                }
            }
        });
        match plans.get_mut(c) {
            Some(Plan { steps: kept }) => {
                kept.clear();
                kept.extend(steps);
            }
            None => plans.push(Plan {
                steps: steps.collect(),
            }),
        }
    }
    let lease_min = classes.iter().map(|c| c.lease_ns).min().expect("a class");
    let lease_max = classes.iter().map(|c| c.lease_ns).max().expect("a class");
    // One heartbeat period per worker, valid (P6) for the shortest lease: L > R*H + J with
    // drift, R = 2 and J = L/4.
    // Every drawn configuration is validated against P6 by the sweep that runs it, in release
    // builds too (a refused one is a failure with its seed), so nothing is asserted here.
    let heartbeat_ns = lease_min * r.range(15, 30) / 100;
    let tool_timeout_ns = ms(&mut r, 5_000, 60_000);
    let stage_deadline_ns = ms(&mut r, 10_000, 120_000);
    let commit_retry_max = 2_000;
    let commit_attempts_max = 20;
    let poll_max = 3_000;
    workers.truncate(workers_n);
    for i in 0..workers_n {
        // The plans are the classes' own, copied once they are final (below).
        let kept_plans = match workers.get_mut(i) {
            Some(w) => std::mem::take(&mut w.config.plans),
            None => Vec::new(),
        };
        let w = WorkerSetup {
            config: WorkerConfig {
                name: WorkerName(i as u32 + 1),
                heartbeat_ns,
                drift_ppm_max: DRIFT_BOUND_PPM,
                stop_margin_ns: ms(&mut r, 100, 1_000).min(lease_min / 4),
                tool_timeout_ns,
                stage_deadline_ns,
                claim_poll_ns: ms(&mut r, 200, poll_max),
                commit_retry_ns: ms(&mut r, 200, commit_retry_max),
                commit_attempts_max,
                start_delay_ns: ms(&mut r, 0, 2_000),
                plans: kept_plans,
            },
            clock: ClockSpec {
                offset_ns: r.range(0, 10 * SECOND_NS),
                drift_ppm: r.range_i64(-(DRIFT_BOUND_PPM as i64), DRIFT_BOUND_PPM as i64) as i32,
            },
        };
        match workers.get_mut(i) {
            Some(kept) => *kept = w,
            None => workers.push(w),
        }
    }
    // Sometimes a second process runs under an existing name (a restart whose predecessor is
    // still alive somewhere).
    if workers_n >= 2 && r.chance(1, 6) {
        let last = workers.len() - 1;
        workers[last].config.name = WorkerName(1);
    }
    receivers.clear();
    receivers.extend((0..receivers_n).map(|_| ReceiverSetup {
        supports_fence: r.chance(3, 4),
        supports_status: true,
        refused_ops: Vec::new(),
        clock: ClockSpec {
            offset_ns: r.range(0, 10 * SECOND_NS),
            drift_ppm: r.range_i64(-200, 200) as i32,
        },
    }));
    let latency_min_ns = r.range(200_000, 2 * MILLI_NS);
    let stormy = r.chance(1, 2);
    let net = NetConfig {
        latency_min_ns,
        latency_max_ns: latency_min_ns + ms(&mut r, 0, 20),
        drop_ppm: if stormy { r.range(0, 20_000) as u32 } else { 0 },
        dup_ppm: if stormy { r.range(0, 10_000) as u32 } else { 0 },
    };
    let safety_ns = ms(&mut r, 10_000, 120_000);
    // Per job after healing: wait out a lease, then each attempt polls, works up to the stage
    // deadline and asks for its commit with bounded retries; jobs share the workers.
    let attempt_ns = poll_max * MILLI_NS
        + stage_deadline_ns
        + commit_retry_max * MILLI_NS * commit_attempts_max as u64
        + lease_max;
    let attempts_max = classes
        .iter()
        .map(|c| c.max_attempts as u64)
        .max()
        .expect("a class");
    let rounds = (jobs_n as u64).div_ceil(workers_n as u64) + 1;
    let liveness_bound_ns = lease_max + rounds * attempts_max * attempt_ns;

    // Drawn in the order the fields of the setup always were.
    jobs.clear();
    jobs.extend((0..jobs_n).map(|i| {
        let class = r.index(classes_n);
        JobSpec {
            class: ClassId(class as u8),
            payload_hash: r.next_u64() ^ i as u64,
            payload_lease_ns: None,
        }
    }));
    let coordinator_clock = ClockSpec {
        offset_ns: r.range(0, SECOND_NS),
        drift_ppm: 0,
    };
    tool_steps.clear();
    let tool = ToolSetup {
        steps: tool_steps,
        default_min_ns: 10 * MILLI_NS,
        default_max_ns: ms(&mut r, 100, 3_000),
    };
    let tool_clock = ClockSpec {
        offset_ns: r.range(0, 10 * SECOND_NS),
        drift_ppm: r.range_i64(-200, 200) as i32,
    };
    scenario.clear();
    scenario.push_str("swarm");
    faults.clear();
    let mut setup = Setup {
        scenario,
        variant,
        jobs,
        classes,
        plans,
        op_names: crate::scenarios::story::op_names(),
        coordinator_clock,
        workers,
        receivers,
        tool,
        tool_clock,
        net,
        limits: Limits {
            event_budget: 3_000_000,
            horizon_ns: safety_ns + liveness_bound_ns + 60 * SECOND_NS,
            queue_max: 100_000,
        },
        faults,
        heal_at_ns: Some(safety_ns),
        liveness_bound_ns: Some(liveness_bound_ns),
        timing: TimingPolicy {
            heartbeats_per_window: 2,
            jitter_ns: lease_min / 10,
        },
    };
    // What each payload asks for as its lease (ignored by the reference, P7; V13 obeys).
    for j in 0..setup.jobs.len() {
        let lease = setup.classes[setup.jobs[j].class.0 as usize].lease_ns;
        setup.jobs[j].payload_lease_ns = Some(r.range(lease / 20, lease / 4));
    }
    let faults_n = if stormy {
        r.range(3, 12)
    } else {
        r.range(0, 3)
    };
    for _ in 0..faults_n {
        let f = fault(&mut r, &setup, safety_ns, lease_max);
        setup.faults.push(f);
    }
    // The rules of the second article, drawn last so the draws above keep their values:
    // stages (P17), admission (P16), receivers that cannot answer status queries or whose policy
    // refuses an operation, and a handoff to a human who resolves the job (P15).
    for c in 0..setup.plans.len() {
        if r.chance(1, 3) && !setup.plans[c].steps.is_empty() {
            let at = r.index(setup.plans[c].steps.len());
            setup.plans[c].steps.insert(at, Step::Checkpoint);
        }
        if r.chance(1, 4) {
            setup.classes[c].capacity = Some(r.range(1, 3) as u32);
        }
    }
    for w in &mut setup.workers {
        copy_plans(&mut w.config.plans, &setup.plans);
    }
    for rcv in &mut setup.receivers {
        rcv.supports_status = !r.chance(1, 6);
        if r.chance(1, 8) {
            rcv.refused_ops = vec![OpId(r.range(1, OPS.len() as u64 - 1) as u8)];
        }
    }
    let mut bound = setup.liveness_bound_ns.unwrap_or(0);
    // Admission serialises a class: its jobs take their turns.
    for (c, class) in setup.classes.iter().enumerate() {
        if let Some(capacity) = class.capacity {
            let jobs = setup
                .jobs
                .iter()
                .filter(|j| j.class.0 as usize == c)
                .count() as u64;
            bound += jobs.div_ceil(capacity as u64) * attempts_max * attempt_ns;
        }
    }
    if r.chance(1, 6) {
        let job = JobId(r.index(setup.jobs.len()) as u32);
        let at = r.range(0, safety_ns / 2);
        let review = r.range(SECOND_NS, safety_ns / 2);
        let operator = |action| FaultKind::Operator { job, action };
        setup.faults.push(Fault::new(
            Trigger::at(at),
            operator(OperatorAction::HandToHuman),
        ));
        setup.faults.push(Fault::new(
            Trigger::at(at + review),
            operator(OperatorAction::HumanResolves),
        ));
        // A human whose resolution is lost holds the job until their lease runs out.
        bound += HUMAN_LEASE_NS;
    }
    setup.liveness_bound_ns = Some(bound);
    setup.limits.horizon_ns = safety_ns + bound + 60 * SECOND_NS;
    setup
}

/// One random fault of any kind, starting inside the safety phase. The draws are made in the
/// order they always were (a seed keeps its meaning), which is why some fields are drawn into
/// locals before the fault is built.
fn fault(r: &mut Prng, s: &Setup, safety_ns: Nanos, lease_max: Nanos) -> Fault {
    let workers = s.workers.len();
    let worker = |r: &mut Prng| s.worker_node(r.index(workers));
    let coordinator = Setup::COORDINATOR;
    let start_ns = r.range(0, safety_ns);
    let start = Trigger::at(start_ns);
    let until = |r: &mut Prng, hi: Nanos| Trigger::at(start_ns + r.range(100 * MILLI_NS, hi));
    match r.range(0, 11) {
        0 => {
            // F1: a link between a worker and the coordinator or a receiver.
            let a = worker(r);
            let b = if r.chance(3, 4) {
                coordinator
            } else {
                s.receiver_node(r.index(s.receivers.len()))
            };
            let one_way = r.chance(1, 3);
            let end = until(r, 2 * lease_max);
            Fault::new(start, FaultKind::Partition { a, b, one_way }).until(end)
        }
        1 => {
            let node = if r.chance(1, 2) {
                coordinator
            } else {
                worker(r)
            };
            let end = until(r, 2 * lease_max);
            Fault::new(start, FaultKind::Isolate { node }).until(end)
        }
        2 => Fault::new(
            start,
            FaultKind::Pause {
                node: worker(r),
                frozen: r.chance(1, 4),
                duration_ns: r.range(100 * MILLI_NS, 2 * lease_max),
                hold_anchor: false,
            },
        ),
        3 => {
            // F2 anchored: paused right after checking the lease, before the effect leaves.
            let node = worker(r);
            let effect_sent = Trigger::sent(MsgPattern {
                from: Some(node),
                kind: Some(MsgKind::Effect),
                ..MsgPattern::default()
            });
            Fault::new(
                effect_sent,
                FaultKind::Pause {
                    node,
                    frozen: false,
                    duration_ns: r.range(100 * MILLI_NS, 2 * lease_max),
                    hold_anchor: true,
                },
            )
        }
        4 | 5 => {
            let kind = KINDS[r.index(KINDS.len())];
            let action = match r.range(0, 3) {
                0 => MsgAction::Drop,
                1 => MsgAction::Delay {
                    extra_ns: r.range(10 * MILLI_NS, lease_max),
                },
                2 => MsgAction::Duplicate {
                    gap_ns: r.range(0, lease_max / 2),
                },
                _ => MsgAction::Hold {
                    release: Trigger::at(start_ns + r.range(10 * MILLI_NS, 2 * lease_max)),
                },
            };
            let end = until(r, 2 * lease_max);
            let pattern = MsgPattern {
                kind: Some(kind),
                ..MsgPattern::default()
            };
            let count = r.range(1, 5) as u32;
            Fault::new(
                start,
                FaultKind::Message {
                    pattern,
                    count,
                    action,
                },
            )
            .until(end)
        }
        6 => {
            let step = if r.chance(1, 4) {
                // A suspend: the monotonic clock jumps forward.
                FaultKind::ClockStep {
                    node: worker(r),
                    delta_ns: r.range_i64(0, 10_000) * MILLI_NS as i64,
                    wall: false,
                }
            } else {
                let nodes = s.operator_node();
                FaultKind::ClockStep {
                    node: r.range(0, nodes as u64 - 1) as NodeId,
                    delta_ns: r.range_i64(-7_200, 7_200) * SECOND_NS as i64,
                    wall: true,
                }
            };
            Fault::new(start, step)
        }
        7 => Fault::new(
            start,
            FaultKind::Drift {
                node: worker(r),
                // Mostly within the bound; sometimes beyond it (then a hazard, not a violation).
                drift_ppm: if r.chance(1, 5) {
                    r.range_i64(-20_000, 20_000) as i32
                } else {
                    r.range_i64(-(DRIFT_BOUND_PPM as i64), DRIFT_BOUND_PPM as i64) as i32
                },
            },
        ),
        8 => Fault::new(
            start,
            FaultKind::Crash {
                node: worker(r),
                restart_after_ns: if r.chance(3, 4) {
                    Some(r.range(100 * MILLI_NS, 2 * lease_max))
                } else {
                    None
                },
            },
        ),
        9 => {
            let node = if r.chance(1, 2) {
                coordinator
            } else {
                worker(r)
            };
            let extra_ns = r.range(MILLI_NS, 2 * SECOND_NS);
            let end = until(r, 2 * lease_max);
            Fault::new(start, FaultKind::Slow { node, extra_ns }).until(end)
        }
        10 => Fault::untriggered(FaultKind::Tool {
            worker: if r.chance(1, 2) {
                Some(worker(r))
            } else {
                None
            },
            step: None,
            nth: r.range(0, 3) as u32,
            kind: match r.range(0, 4) {
                0 => ToolFaultKind::Hang,
                1 => ToolFaultKind::Late,
                2 => ToolFaultKind::Transient,
                3 => ToolFaultKind::Permanent,
                _ => ToolFaultKind::AnswerLost,
            },
            late_ns: r.range(SECOND_NS, 2 * lease_max),
        }),
        _ => Fault::new(
            start,
            FaultKind::Operator {
                job: JobId(r.index(s.jobs.len()) as u32),
                action: match r.range(0, 2) {
                    0 => OperatorAction::Revoke,
                    1 => OperatorAction::Cancel,
                    _ => OperatorAction::Takeover {
                        to: s.workers[r.index(workers)].config.name,
                    },
                },
            },
        ),
    }
}
