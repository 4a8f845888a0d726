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
use crate::world::{ToolSetup, ToolStep};
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

/// The longest claim poll a worker draws, milliseconds.
const POLL_MAX_MS: u64 = 3_000;
/// The longest commit retry period a worker draws, milliseconds.
const COMMIT_RETRY_MAX_MS: u64 = 2_000;
/// Commit attempts per stage, every worker.
const COMMIT_ATTEMPTS_MAX: u32 = 20;

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
        tool_steps,
        mut faults,
    } = crate::workspace::spare();
    let mut r = Prng::new(seed, Stream::Config);
    let workers_n = r.range(1, 8) as usize;
    let jobs_n = r.range(1, 50) as usize;
    let classes_n = r.range(1, 3) as usize;
    let receivers_n = r.range(1, 3) as usize;
    draw_classes(&mut r, classes_n, receivers_n, &mut classes, &mut plans);
    let lease_min = classes.iter().map(|c| c.lease_ns).min().expect("a class");
    let stage_deadline_ns = draw_workers(&mut r, workers_n, lease_min, &mut workers);
    draw_receivers(&mut r, receivers_n, &mut receivers);
    let (net, stormy) = draw_net(&mut r);
    let safety_ns = ms(&mut r, 10_000, 120_000);
    let live = Liveness::of(&classes, stage_deadline_ns, jobs_n, workers_n);
    // Drawn in the order the fields of the setup always were.
    draw_jobs(&mut r, jobs_n, classes_n, &mut jobs);
    let (coordinator_clock, tool, tool_clock) = draw_tool_and_clocks(&mut r, tool_steps);
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
            horizon_ns: safety_ns + live.bound_ns + 60 * SECOND_NS,
            queue_max: 100_000,
        },
        faults,
        heal_at_ns: Some(safety_ns),
        liveness_bound_ns: Some(live.bound_ns),
        timing: TimingPolicy {
            heartbeats_per_window: 2,
            jitter_ns: lease_min / 10,
        },
    };
    draw_story(&mut r, &mut setup, stormy, safety_ns, &live);
    setup
}

/// Classes: lease lengths on the coordinator (P7), attempt limits, plans.
fn draw_classes(
    r: &mut Prng,
    classes_n: usize,
    receivers_n: usize,
    classes: &mut Vec<ClassSpec>,
    plans: &mut Vec<Plan>,
) {
    classes.clear();
    plans.truncate(classes_n);
    for c in 0..classes_n {
        classes.push(ClassSpec {
            lease_ns: ms(r, 2_000, 30_000),
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
}

/// The workers, sharing one heartbeat period, tool timeout and stage deadline (returned); each
/// with its own margins, polls, start and clock.
fn draw_workers(
    r: &mut Prng,
    workers_n: usize,
    lease_min: Nanos,
    workers: &mut Vec<WorkerSetup>,
) -> Nanos {
    // One heartbeat period per worker, valid (P6) for the shortest lease: L > R*H + J with
    // drift, R = 2 and J = L/4.
    // Every drawn configuration is validated against P6 by the sweep that runs it, in release
    // builds too (a refused one is a failure with its seed), so nothing is asserted here.
    let heartbeat_ns = lease_min * r.range(15, 30) / 100;
    let tool_timeout_ns = ms(r, 5_000, 60_000);
    let stage_deadline_ns = ms(r, 10_000, 120_000);
    workers.truncate(workers_n);
    for i in 0..workers_n {
        // The plans are the classes' own, copied once they are final (in `draw_rules`).
        let kept_plans = match workers.get_mut(i) {
            Some(w) => std::mem::take(&mut w.config.plans),
            None => Vec::new(),
        };
        let w = WorkerSetup {
            config: WorkerConfig {
                name: WorkerName(i as u32 + 1),
                heartbeat_ns,
                drift_ppm_max: DRIFT_BOUND_PPM,
                stop_margin_ns: ms(r, 100, 1_000).min(lease_min / 4),
                tool_timeout_ns,
                stage_deadline_ns,
                claim_poll_ns: ms(r, 200, POLL_MAX_MS),
                commit_retry_ns: ms(r, 200, COMMIT_RETRY_MAX_MS),
                commit_attempts_max: COMMIT_ATTEMPTS_MAX,
                start_delay_ns: ms(r, 0, 2_000),
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
    stage_deadline_ns
}

/// The receivers, most with fence support, each with its own clock.
fn draw_receivers(r: &mut Prng, receivers_n: usize, receivers: &mut Vec<ReceiverSetup>) {
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
}

/// The network, and whether it is stormy (it then loses and duplicates messages, and more
/// faults are drawn).
fn draw_net(r: &mut Prng) -> (NetConfig, bool) {
    let latency_min_ns = r.range(200_000, 2 * MILLI_NS);
    let stormy = r.chance(1, 2);
    let net = NetConfig {
        latency_min_ns,
        latency_max_ns: latency_min_ns + ms(r, 0, 20),
        drop_ppm: if stormy { r.range(0, 20_000) as u32 } else { 0 },
        dup_ppm: if stormy { r.range(0, 10_000) as u32 } else { 0 },
    };
    (net, stormy)
}

/// The jobs, each of a random class.
fn draw_jobs(r: &mut Prng, jobs_n: usize, classes_n: usize, jobs: &mut Vec<JobSpec>) {
    jobs.clear();
    jobs.extend((0..jobs_n).map(|i| {
        let class = r.index(classes_n);
        JobSpec {
            class: ClassId(class as u8),
            payload_hash: r.next_u64() ^ i as u64,
            payload_lease_ns: None,
        }
    }));
}

/// The coordinator's clock, the tool's call durations and the tool's clock, in that order.
fn draw_tool_and_clocks(
    r: &mut Prng,
    mut tool_steps: Vec<ToolStep>,
) -> (ClockSpec, ToolSetup, ClockSpec) {
    let coordinator_clock = ClockSpec {
        offset_ns: r.range(0, SECOND_NS),
        drift_ppm: 0,
    };
    tool_steps.clear();
    let tool = ToolSetup {
        steps: tool_steps,
        default_min_ns: 10 * MILLI_NS,
        default_max_ns: ms(r, 100, 3_000),
    };
    let tool_clock = ClockSpec {
        offset_ns: r.range(0, 10 * SECOND_NS),
        drift_ppm: r.range_i64(-200, 200) as i32,
    };
    (coordinator_clock, tool, tool_clock)
}

/// How long the jobs may take to end after healing.
struct Liveness {
    /// One attempt: it polls, works up to the stage deadline and asks for its commit with
    /// bounded retries, after waiting out a lease.
    attempt_ns: Nanos,
    /// The most attempts any class allows.
    attempts_max: u64,
    /// Every job's attempts, the jobs sharing the workers, before the rules add to it.
    bound_ns: Nanos,
}

impl Liveness {
    fn of(
        classes: &[ClassSpec],
        stage_deadline_ns: Nanos,
        jobs_n: usize,
        workers_n: usize,
    ) -> Liveness {
        let lease_max = classes.iter().map(|c| c.lease_ns).max().expect("a class");
        // Per job after healing: wait out a lease, then each attempt polls, works up to the
        // stage deadline and asks for its commit with bounded retries; jobs share the workers.
        let attempt_ns = POLL_MAX_MS * MILLI_NS
            + stage_deadline_ns
            + COMMIT_RETRY_MAX_MS * MILLI_NS * COMMIT_ATTEMPTS_MAX as u64
            + lease_max;
        let attempts_max = classes
            .iter()
            .map(|c| c.max_attempts as u64)
            .max()
            .expect("a class");
        let rounds = (jobs_n as u64).div_ceil(workers_n as u64) + 1;
        Liveness {
            attempt_ns,
            attempts_max,
            bound_ns: lease_max + rounds * attempts_max * attempt_ns,
        }
    }
}

/// What happens to the configured setup: the payloads' leases, the faults, then the rules of
/// the second article; the liveness bound and the horizon grow by what the rules add.
fn draw_story(r: &mut Prng, setup: &mut Setup, stormy: bool, safety_ns: Nanos, live: &Liveness) {
    let lease_max = setup
        .classes
        .iter()
        .map(|c| c.lease_ns)
        .max()
        .expect("a class");
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
        let f = fault(r, setup, safety_ns, lease_max);
        setup.faults.push(f);
    }
    draw_rules(r, setup);
    let mut bound = setup.liveness_bound_ns.unwrap_or(0);
    // Admission serialises a class: its jobs take their turns.
    for (c, class) in setup.classes.iter().enumerate() {
        if let Some(capacity) = class.capacity {
            let jobs = setup
                .jobs
                .iter()
                .filter(|j| j.class.0 as usize == c)
                .count() as u64;
            bound += jobs.div_ceil(capacity as u64) * live.attempts_max * live.attempt_ns;
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
}

/// The rules of the second article, drawn after the faults so the draws before keep their
/// values: stages (P17), admission (P16), receivers that cannot answer status queries or whose
/// policy refuses an operation. The workers' plans are copied from the classes' final ones.
fn draw_rules(r: &mut Prng, setup: &mut Setup) {
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
}

/// One random fault of any kind, starting inside the safety phase. The draws are made in the
/// order they always were (a seed keeps its meaning), which is why some fields are drawn into
/// locals before the fault is built.
fn fault(r: &mut Prng, s: &Setup, safety_ns: Nanos, lease_max: Nanos) -> Fault {
    let start_ns = r.range(0, safety_ns);
    let d = FaultDraw {
        s,
        start_ns,
        lease_max,
    };
    match r.range(0, 11) {
        0 => d.partition(r),
        1 => d.isolate(r),
        2 => d.pause(r),
        3 => d.pause_before_effect(r),
        4 | 5 => d.message(r),
        6 => d.clock_step(r),
        7 => d.drift(r),
        8 => d.crash(r),
        9 => d.slow(r),
        10 => d.tool(r),
        _ => d.operator(r),
    }
}

/// What every kind of random fault is drawn against: the setup, its start, the longest lease.
struct FaultDraw<'a> {
    s: &'a Setup,
    start_ns: Nanos,
    lease_max: Nanos,
}

impl FaultDraw<'_> {
    fn start(&self) -> Trigger {
        Trigger::at(self.start_ns)
    }

    fn worker(&self, r: &mut Prng) -> NodeId {
        self.s.worker_node(r.index(self.s.workers.len()))
    }

    /// The coordinator or a worker, even odds.
    fn coordinator_or_worker(&self, r: &mut Prng) -> NodeId {
        if r.chance(1, 2) {
            Setup::COORDINATOR
        } else {
            self.worker(r)
        }
    }

    /// Its end, at least 100 ms after its start and before `hi` after it.
    fn until(&self, r: &mut Prng, hi: Nanos) -> Trigger {
        Trigger::at(self.start_ns + r.range(100 * MILLI_NS, hi))
    }

    /// F1: a link between a worker and the coordinator or a receiver.
    fn partition(&self, r: &mut Prng) -> Fault {
        let a = self.worker(r);
        let b = if r.chance(3, 4) {
            Setup::COORDINATOR
        } else {
            self.s.receiver_node(r.index(self.s.receivers.len()))
        };
        let one_way = r.chance(1, 3);
        let end = self.until(r, 2 * self.lease_max);
        Fault::new(self.start(), FaultKind::Partition { a, b, one_way }).until(end)
    }

    fn isolate(&self, r: &mut Prng) -> Fault {
        let node = self.coordinator_or_worker(r);
        let end = self.until(r, 2 * self.lease_max);
        Fault::new(self.start(), FaultKind::Isolate { node }).until(end)
    }

    fn pause(&self, r: &mut Prng) -> Fault {
        Fault::new(
            self.start(),
            FaultKind::Pause {
                node: self.worker(r),
                frozen: r.chance(1, 4),
                duration_ns: r.range(100 * MILLI_NS, 2 * self.lease_max),
                hold_anchor: false,
            },
        )
    }

    /// F2 anchored: paused right after checking the lease, before the effect leaves.
    fn pause_before_effect(&self, r: &mut Prng) -> Fault {
        let node = self.worker(r);
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
                duration_ns: r.range(100 * MILLI_NS, 2 * self.lease_max),
                hold_anchor: true,
            },
        )
    }

    fn message(&self, r: &mut Prng) -> Fault {
        let lease_max = self.lease_max;
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
                release: Trigger::at(self.start_ns + r.range(10 * MILLI_NS, 2 * lease_max)),
            },
        };
        let end = self.until(r, 2 * lease_max);
        let pattern = MsgPattern {
            kind: Some(kind),
            ..MsgPattern::default()
        };
        let count = r.range(1, 5) as u32;
        Fault::new(
            self.start(),
            FaultKind::Message {
                pattern,
                count,
                action,
            },
        )
        .until(end)
    }

    fn clock_step(&self, r: &mut Prng) -> Fault {
        let step = if r.chance(1, 4) {
            // A suspend: the monotonic clock jumps forward.
            FaultKind::ClockStep {
                node: self.worker(r),
                delta_ns: r.range_i64(0, 10_000) * MILLI_NS as i64,
                wall: false,
            }
        } else {
            let nodes = self.s.operator_node();
            FaultKind::ClockStep {
                node: r.range(0, nodes as u64 - 1) as NodeId,
                delta_ns: r.range_i64(-7_200, 7_200) * SECOND_NS as i64,
                wall: true,
            }
        };
        Fault::new(self.start(), step)
    }

    fn drift(&self, r: &mut Prng) -> Fault {
        Fault::new(
            self.start(),
            FaultKind::Drift {
                node: self.worker(r),
                // Mostly within the bound; sometimes beyond it (then a hazard, not a violation).
                drift_ppm: if r.chance(1, 5) {
                    r.range_i64(-20_000, 20_000) as i32
                } else {
                    r.range_i64(-(DRIFT_BOUND_PPM as i64), DRIFT_BOUND_PPM as i64) as i32
                },
            },
        )
    }

    fn crash(&self, r: &mut Prng) -> Fault {
        Fault::new(
            self.start(),
            FaultKind::Crash {
                node: self.worker(r),
                restart_after_ns: if r.chance(3, 4) {
                    Some(r.range(100 * MILLI_NS, 2 * self.lease_max))
                } else {
                    None
                },
            },
        )
    }

    fn slow(&self, r: &mut Prng) -> Fault {
        let node = self.coordinator_or_worker(r);
        let extra_ns = r.range(MILLI_NS, 2 * SECOND_NS);
        let end = self.until(r, 2 * self.lease_max);
        Fault::new(self.start(), FaultKind::Slow { node, extra_ns }).until(end)
    }

    fn tool(&self, r: &mut Prng) -> Fault {
        Fault::untriggered(FaultKind::Tool {
            worker: if r.chance(1, 2) {
                Some(self.worker(r))
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
            late_ns: r.range(SECOND_NS, 2 * self.lease_max),
        })
    }

    fn operator(&self, r: &mut Prng) -> Fault {
        Fault::new(
            self.start(),
            FaultKind::Operator {
                job: JobId(r.index(self.s.jobs.len()) as u32),
                action: match r.range(0, 2) {
                    0 => OperatorAction::Revoke,
                    1 => OperatorAction::Cancel,
                    _ => OperatorAction::Takeover {
                        to: self.s.workers[r.index(self.s.workers.len())].config.name,
                    },
                },
            },
        )
    }
}
