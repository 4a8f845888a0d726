//! A builder shared by the named scenarios: the seed draws the usual timings (lease, heartbeat,
//! margins, poll and retry periods, clocks, latencies) inside ranges that satisfy P6, and the
//! scenario adds its workers, plan and faults on top.

use crate::plan::{Fault, MsgPattern};
use crate::setup::{copy_plans, ClockSpec, ReceiverSetup, Setup, Spare, TimingPolicy, WorkerSetup};
use crate::world::{ToolSetup, ToolStep};
use leasesim_protocol::{
    ClassId, ClassSpec, JobSpec, MsgKind, Nanos, Plan, Step, ToolAnswer, Variant, WorkerConfig,
    WorkerName, MILLI_NS, SECOND_NS,
};
use leasesim_sim::{Limits, NetConfig, NodeId, Prng, Stream};

/// `create_case`, `update_case`, and so on: op ids of the named scenarios.
pub const OPS: [&str; 5] = ["job", "create_case", "update_case", "write", "notify"];

/// [`OPS`] as a setup holds them: built once and shared by every setup that names them.
pub fn op_names() -> std::sync::Arc<[String]> {
    static NAMES: std::sync::OnceLock<std::sync::Arc<[String]>> = std::sync::OnceLock::new();
    NAMES
        .get_or_init(|| OPS.iter().map(|s| s.to_string()).collect())
        .clone()
}

/// The drift bound every worker assumes (rho), in ppm: NTP slews at most 500 ppm.
pub const DRIFT_BOUND_PPM: u32 = 500;

/// The cap on total lease time from a job's first claim (P7), unless a scenario sets its own.
pub const RENEWAL_CAP_NS: Nanos = 1_800 * SECOND_NS;

/// A scenario under construction.
pub struct Story {
    /// The setup so far.
    pub setup: Setup,
    /// The scenario's configuration stream: every seed-varied choice is drawn from it.
    pub r: Prng,
}

impl Story {
    /// A story with `workers` logical names (1-based names, in node order), one job class
    /// running `steps`, `jobs` jobs, one fencing receiver, and seed-drawn timings.
    pub fn new(
        name: &str,
        seed: u64,
        variant: Variant,
        workers: &[u32],
        steps: impl AsRef<[Step]>,
        jobs: usize,
    ) -> Story {
        Story::build(name, seed, variant, workers, steps.as_ref(), jobs)
    }

    // Long: the setup built in place from recycled storage, its draws in the order that gives each seed its meaning.
    fn build(
        name: &str,
        seed: u64,
        variant: Variant,
        names: &[u32],
        steps: &[Step],
        jobs_n: usize,
    ) -> Story {
        // The storage of the setup this thread recycled last, if any: every vector below is
        // cleared or overwritten in full, so the setup is the same as one built from new ones.
        let Spare {
            mut scenario,
            mut classes,
            mut plans,
            mut jobs,
            mut workers,
            mut receivers,
            mut tool_steps,
            mut faults,
        } = crate::workspace::spare();
        let mut r = Prng::new(seed, Stream::Config);
        let lease_ns = ms(&mut r, 20_000, 40_000);
        // H between L/5 and L/3 keeps L > R*H + J with R = 2 and a jitter reserve of L/3 (P6).
        let heartbeat_ns = lease_ns * r.range(20, 33) / 100;
        plans.truncate(1);
        match plans.first_mut() {
            Some(Plan { steps: kept }) => {
                kept.clear();
                kept.extend_from_slice(steps);
            }
            None => plans.push(Plan {
                steps: steps.to_vec(),
            }),
        }
        draw_workers(&mut r, names, heartbeat_ns, &plans, &mut workers);
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
        scenario.clear();
        scenario.push_str(name);
        classes.clear();
        classes.push(ClassSpec {
            lease_ns,
            max_attempts: 3,
            renewal_cap_ns: RENEWAL_CAP_NS,
            capacity: None,
            retry_backoff_ns: SECOND_NS,
        });
        jobs.clear();
        // What a model put in each payload as its lease length: the reference ignores it (P7),
        // the known-bad variant V13 obeys it. Drawn last so the draws above keep their values.
        jobs.extend((0..jobs_n).map(|i| JobSpec {
            class: ClassId(0),
            payload_hash: 0x8f1b_7c3d ^ i as u64,
            payload_lease_ns: Some(r.range(lease_ns / 20, lease_ns / 4)),
        }));
        receivers.clear();
        receivers.push(ReceiverSetup {
            supports_fence: true,
            supports_status: true,
            refused_ops: Vec::new(),
            clock: receiver_clock,
        });
        tool_steps.clear();
        faults.clear();
        // Built in place: a story is returned without moving its setup once more.
        Story {
            setup: Setup {
                scenario,
                variant,
                classes,
                plans,
                jobs,
                op_names: op_names(),
                coordinator_clock,
                workers,
                receivers,
                tool: ToolSetup {
                    steps: tool_steps,
                    default_min_ns: 100 * MILLI_NS,
                    default_max_ns: 2 * SECOND_NS,
                },
                tool_clock,
                net,
                limits: Limits {
                    event_budget: 200_000,
                    horizon_ns: 3_600 * SECOND_NS,
                    queue_max: 10_000,
                },
                faults,
                heal_at_ns: None,
                liveness_bound_ns: Some(1_800 * SECOND_NS),
                timing: TimingPolicy {
                    heartbeats_per_window: 2,
                    jitter_ns: 2 * SECOND_NS,
                },
            },
            r,
        }
    }

    /// A duration drawn uniformly in `lo_ms..=hi_ms` milliseconds.
    pub fn ms(&mut self, lo_ms: u64, hi_ms: u64) -> Nanos {
        ms(&mut self.r, lo_ms, hi_ms)
    }

    /// The class's lease length L.
    pub fn lease_ns(&self) -> Nanos {
        self.setup.classes[0].lease_ns
    }

    /// The workers' heartbeat period H.
    pub fn heartbeat_ns(&self) -> Nanos {
        self.setup.workers[0].config.heartbeat_ns
    }

    /// Worker `i`'s node (0-based, in the order given to [`Story::new`]).
    pub fn worker(&self, i: usize) -> NodeId {
        self.setup.worker_node(i)
    }

    /// The coordinator's node.
    pub fn coordinator(&self) -> NodeId {
        Setup::COORDINATOR
    }

    /// Receiver `i`'s node.
    pub fn receiver(&self, i: usize) -> NodeId {
        self.setup.receiver_node(i)
    }

    /// The tool's node.
    pub fn tool(&self) -> NodeId {
        self.setup.tool_node()
    }

    /// Worker `i` starts polling `lo_ms..=hi_ms` after true time 0.
    pub fn start_worker(&mut self, i: usize, lo_ms: u64, hi_ms: u64) {
        let d = self.ms(lo_ms, hi_ms);
        self.setup.workers[i].config.start_delay_ns = d;
    }

    /// Sets the tool's duration range at plan step `step`, answering success.
    pub fn tool_step(&mut self, step: u8, min_ns: Nanos, max_ns: Nanos) {
        self.setup.tool.steps.retain(|s| s.step != step);
        self.setup.tool.steps.push(ToolStep {
            step,
            min_ns,
            max_ns,
            answer: ToolAnswer::Success {
                result: 0x700 + step as u64,
            },
        });
    }

    /// Adds a fault.
    pub fn fault(&mut self, f: Fault) {
        self.setup.faults.push(f);
    }

    /// Messages from `from` to `to` of kind `kind`.
    pub fn msgs(&self, from: Option<NodeId>, to: Option<NodeId>, kind: MsgKind) -> MsgPattern {
        MsgPattern {
            from,
            to,
            kind: Some(kind),
            ..MsgPattern::default()
        }
    }

    /// The finished setup.
    pub fn finish(self) -> Setup {
        self.setup
    }
}

/// The story's workers under their logical `names`, each with the plans and its own seed-drawn
/// margins, periods and clock.
fn draw_workers(
    r: &mut Prng,
    names: &[u32],
    heartbeat_ns: Nanos,
    plans: &[Plan],
    workers: &mut Vec<WorkerSetup>,
) {
    workers.truncate(names.len());
    for (i, &n) in names.iter().enumerate() {
        let mut worker_plans = match workers.get_mut(i) {
            Some(w) => std::mem::take(&mut w.config.plans),
            None => Vec::new(),
        };
        copy_plans(&mut worker_plans, plans);
        let w = WorkerSetup {
            config: WorkerConfig {
                name: WorkerName(n),
                heartbeat_ns,
                drift_ppm_max: DRIFT_BOUND_PPM,
                stop_margin_ns: ms(r, 500, 2_000),
                tool_timeout_ns: 120 * SECOND_NS,
                stage_deadline_ns: 300 * SECOND_NS,
                claim_poll_ns: ms(r, 500, 2_000),
                commit_retry_ns: ms(r, 500, 2_000),
                commit_attempts_max: 60,
                start_delay_ns: 0,
                plans: worker_plans,
            },
            clock: ClockSpec {
                offset_ns: r.range(0, 5 * SECOND_NS),
                drift_ppm: r.range_i64(-200, 200) as i32,
            },
        };
        match workers.get_mut(i) {
            Some(kept) => *kept = w,
            None => workers.push(w),
        }
    }
}

/// A duration drawn uniformly in `lo_ms..=hi_ms` milliseconds.
pub fn ms(r: &mut Prng, lo_ms: u64, hi_ms: u64) -> Nanos {
    r.range(lo_ms * MILLI_NS, hi_ms * MILLI_NS)
}

#[cfg(test)]
mod tests {
    use crate::scenarios::ALL;
    use crate::workspace;
    use leasesim_protocol::Variant;

    /// A setup built in the storage another setup left (any scenario, any seed) is the same as
    /// one built in new storage.
    #[test]
    fn a_setup_built_in_kept_storage_is_the_same_as_a_new_one() {
        for (k, def) in ALL.iter().enumerate() {
            for (p, prev) in ALL.iter().enumerate() {
                let seed = (k * ALL.len() + p) as u64;
                let variant = Variant::ALL[seed as usize % Variant::ALL.len()];
                drop(workspace::spare());
                let new = def.build(seed, variant);
                workspace::recycle_setup(prev.build(seed ^ 0x5a5a, Variant::Reference));
                let reused = def.build(seed, variant);
                assert_eq!(new, reused, "{} after {}, seed {seed}", def.name, prev.name);
                assert_eq!(format!("{new:?}"), format!("{reused:?}"));
            }
        }
    }

    /// The storage is kept indeed: the next story's vectors are the last one's.
    #[test]
    fn a_recycled_setup_leaves_its_storage_to_the_next_story() {
        drop(workspace::spare());
        let w1_w2 = crate::scenarios::find("w1-w2").unwrap();
        let first = w1_w2.build(1, Variant::Reference);
        let places = (
            first.workers.as_ptr(),
            first.workers[1].config.plans.as_ptr(),
        );
        workspace::recycle_setup(first);
        let next = w1_w2.build(2, Variant::Reference);
        assert_eq!(
            places,
            (next.workers.as_ptr(), next.workers[1].config.plans.as_ptr())
        );
        assert_eq!(next, w1_w2.build(2, Variant::Reference));
    }
}
