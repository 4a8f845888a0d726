//! A run's whole input as plain data: the configuration of every node, the network, the limits
//! and the explicit fault plan. A run is a pure function of this and the seed. Files hold it in
//! types of their own (`replay`), so nothing here is a file format.

use crate::plan::{Fault, FaultKind};
use leasesim_protocol::{
    timing, ClassSpec, JobId, JobSpec, Nanos, OperatorAction, Plan, ToolAnswer, ToolFaultKind,
    Variant, WorkerConfig,
};

fn fmt_s(ns: Nanos) -> String {
    leasesim_sim::time::secs_rounded(ns.into(), leasesim_sim::time::Round::Nearest)
}
pub use leasesim_checkers::{NodeInfo, Role};
use leasesim_sim::{Clock, Limits, NetConfig, NodeId};

/// A clock's initial setting.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct ClockSpec {
    /// Reading at true time 0.
    pub offset_ns: u64,
    /// Rate error.
    pub drift_ppm: i32,
}

impl ClockSpec {
    /// The simulator clock.
    pub fn clock(self) -> Clock {
        Clock::new(self.offset_ns, self.drift_ppm)
    }
}

/// A worker's configuration and clock.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WorkerSetup {
    /// Protocol configuration.
    pub config: WorkerConfig,
    /// Its clock.
    pub clock: ClockSpec,
}

/// A receiver's configuration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReceiverSetup {
    /// Whether it checks fences.
    pub supports_fence: bool,
    /// Whether it answers status queries (P12 c); one that cannot answers "unknown".
    pub supports_status: bool,
    /// Operations its policy refuses now (P16 commit-time authorization).
    pub refused_ops: Vec<leasesim_protocol::OpId>,
    /// Its clock.
    pub clock: ClockSpec,
}

/// Everything a run needs besides the seed. A sweep hands each setup's storage to the next
/// setup its thread builds; a setup simply dropped frees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Setup {
    /// Scenario name.
    pub scenario: String,
    /// The protocol variant.
    pub variant: Variant,
    /// Job classes (lease lengths live here, P7).
    pub classes: Vec<ClassSpec>,
    /// The plan of each class, as workers run it.
    pub plans: Vec<Plan>,
    /// The jobs.
    pub jobs: Vec<JobSpec>,
    /// Display names of operations, indexed by op id (`create_case`, ...); shared, since most
    /// setups name the same operations.
    pub op_names: std::sync::Arc<[String]>,
    /// The coordinator's clock (offset only: the arbiter is never stepped).
    pub coordinator_clock: ClockSpec,
    /// The workers.
    pub workers: Vec<WorkerSetup>,
    /// The receivers.
    pub receivers: Vec<ReceiverSetup>,
    /// The tool.
    pub tool: ToolSetup,
    /// The tool's clock.
    pub tool_clock: ClockSpec,
    /// The network.
    pub net: NetConfig,
    /// Limits.
    pub limits: Limits,
    /// The explicit fault plan.
    pub faults: Vec<Fault>,
    /// When the heal phase begins: every fault stops, clocks come back within their bound.
    pub heal_at_ns: Option<u64>,
    /// I7: every job must be terminal this long after the heal phase began (or after true
    /// time 0 when there is no heal phase).
    pub liveness_bound_ns: Option<u64>,
    /// The P6 policy the configuration is validated against.
    pub timing: TimingPolicy,
}

/// What the timing of a configuration must survive (P6): `R` heartbeats per window and a jitter
/// reserve `J`, with every worker's drift bound.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct TimingPolicy {
    /// R: heartbeats per lease window (R - 1 misses tolerated).
    pub heartbeats_per_window: u32,
    /// J: worst renewal latency (scheduling, round trip, coordinator work).
    pub jitter_ns: Nanos,
}

/// Bounds on what a setup may ask for: every input is bounded.
pub const WORKERS_MAX: usize = 64;
/// Most jobs in a setup.
pub const JOBS_MAX: usize = 10_000;
/// Most faults in a plan.
pub const FAULTS_MAX: usize = 1_000;
/// Most events a run may be given. The trace keeps every event (about 112 bytes each), so this
/// bounds a run's memory to about half a gigabyte and its time to a few seconds, whatever a
/// replay file asks for; the largest built-in runs (the swarm, the 100 x 10,000 scaling row) need
/// at most 3,000,000.
pub const EVENT_BUDGET_MAX: u64 = 4_000_000;
/// Most events queued at once a run may allow (the 100 x 10,000 scaling row needs about
/// 1,000,000).
pub const QUEUE_MAX: usize = 2_000_000;

/// Node layout: coordinator, workers, receivers, tool.
impl Setup {
    /// Structural checks, so that a setup read from a file can never make the simulator panic:
    /// every reference points at something that exists, every range is non-empty, every size
    /// is bounded. The error names the first problem.
    pub fn check(&self) -> Result<(), String> {
        self.check_sizes()?;
        for (i, c) in self.classes.iter().enumerate() {
            if c.lease_ns == 0 || c.max_attempts == 0 {
                return Err(format!("class{i} needs a lease and at least one attempt"));
            }
        }
        for (i, j) in self.jobs.iter().enumerate() {
            if j.class.0 as usize >= self.classes.len() {
                return Err(format!("job{i} names unknown {}", j.class));
            }
        }
        self.check_plans(&self.plans, "the setup")?;
        self.check_workers_and_clocks()?;
        self.check_ranges()?;
        self.check_ops()?;
        self.check_faults()
    }

    /// Every collection holds at least one and at most its bound (faults may be none).
    fn check_sizes(&self) -> Result<(), String> {
        if self.workers.is_empty() || self.workers.len() > WORKERS_MAX {
            return Err(format!(
                "{} workers (1 to {WORKERS_MAX})",
                self.workers.len()
            ));
        }
        if self.receivers.is_empty() || self.receivers.len() > 255 {
            return Err(format!("{} receivers (1 to 255)", self.receivers.len()));
        }
        if self.classes.is_empty()
            || self.classes.len() > 255
            || self.plans.len() != self.classes.len()
        {
            return Err(format!(
                "{} classes with {} plans (1 to 255 classes, one plan each)",
                self.classes.len(),
                self.plans.len()
            ));
        }
        if self.jobs.is_empty() || self.jobs.len() > JOBS_MAX {
            return Err(format!("{} jobs (1 to {JOBS_MAX})", self.jobs.len()));
        }
        if self.faults.len() > FAULTS_MAX {
            return Err(format!(
                "{} faults (at most {FAULTS_MAX})",
                self.faults.len()
            ));
        }
        Ok(())
    }

    /// `who`'s plans: one per class, bounded, each effect sent to a receiver and an op that
    /// exist.
    fn check_plans(&self, plans: &[Plan], who: &str) -> Result<(), String> {
        let receivers = self.receivers.len();
        if plans.len() < self.classes.len() {
            return Err(format!("{who} has no plan for some class"));
        }
        for p in plans {
            if p.steps.len() > 250 {
                return Err(format!(
                    "{who} has a plan of {} steps (at most 250)",
                    p.steps.len()
                ));
            }
            for step in &p.steps {
                if let leasesim_protocol::Step::Effect { receiver, op } = step {
                    if *receiver as usize >= receivers {
                        return Err(format!(
                            "{who} sends an effect to unknown receiver {receiver}"
                        ));
                    }
                    if op.0 as usize >= self.op_names.len() {
                        return Err(format!(
                            "{who} has an effect of op {}, but op_names has {} entries",
                            op.0,
                            self.op_names.len()
                        ));
                    }
                }
            }
        }
        Ok(())
    }

    /// Each worker's plans and periods, and every clock's drift below 50%.
    fn check_workers_and_clocks(&self) -> Result<(), String> {
        let clock_ok = |c: &ClockSpec| c.drift_ppm.unsigned_abs() < 500_000;
        for (i, w) in self.workers.iter().enumerate() {
            let c = &w.config;
            let who = self.worker_display(i);
            self.check_plans(&c.plans, &who)?;
            if c.heartbeat_ns == 0 || c.claim_poll_ns == 0 || c.commit_retry_ns == 0 {
                return Err(format!(
                    "{who} needs non-zero heartbeat, poll and retry periods"
                ));
            }
            if c.drift_ppm_max >= 500_000 || !clock_ok(&w.clock) {
                return Err(format!(
                    "{who}'s clock drift or drift bound is not below 50%"
                ));
            }
        }
        let clocks = [self.coordinator_clock, self.tool_clock]
            .into_iter()
            .chain(self.receivers.iter().map(|r| r.clock));
        for c in clocks {
            if !clock_ok(&c) {
                return Err("a clock drifts by 50% or more".into());
            }
        }
        Ok(())
    }

    /// The network's, the tool's and the limits' ranges, and the timing policy's R.
    fn check_ranges(&self) -> Result<(), String> {
        let n = &self.net;
        if n.latency_min_ns > n.latency_max_ns || n.drop_ppm > 1_000_000 || n.dup_ppm > 1_000_000 {
            return Err("the network's latency range is empty or a probability is above 1".into());
        }
        for t in &self.tool.steps {
            if t.min_ns > t.max_ns {
                return Err(format!(
                    "the tool's duration range at step {} is empty",
                    t.step
                ));
            }
        }
        if self.tool.default_min_ns > self.tool.default_max_ns {
            return Err("the tool's default duration range is empty".into());
        }
        let l = &self.limits;
        if l.event_budget == 0
            || l.event_budget > EVENT_BUDGET_MAX
            || l.queue_max == 0
            || l.queue_max > QUEUE_MAX
            || l.horizon_ns == 0
        {
            return Err(format!(
                "limits out of range (event budget 1 to {EVENT_BUDGET_MAX}, queue bound 1 to {QUEUE_MAX}, horizon above 0)"
            ));
        }
        if self.timing.heartbeats_per_window == 0 {
            return Err(
                "timing.heartbeats_per_window is 0: R counts heartbeats per lease window and is at least 1"
                    .into(),
            );
        }
        Ok(())
    }

    /// Every op a receiver refuses or a fault matches is one `op_names` names.
    fn check_ops(&self) -> Result<(), String> {
        let ops = self.op_names.len();
        let op_ok = |op: leasesim_protocol::OpId| (op.0 as usize) < ops;
        for (i, r) in self.receivers.iter().enumerate() {
            if let Some(op) = r.refused_ops.iter().find(|op| !op_ok(**op)) {
                return Err(format!(
                    "receiver {i} refuses op {}, but op_names has {ops} entries",
                    op.0
                ));
            }
        }
        for (i, f) in self.faults.iter().enumerate() {
            if let Some(op) = f
                .patterns()
                .iter()
                .find_map(|p| p.op.filter(|op| !op_ok(*op)))
            {
                return Err(format!(
                    "fault {i} matches op {}, but op_names has {ops} entries",
                    op.0
                ));
            }
        }
        Ok(())
    }

    /// Every fault names nodes and jobs that exist, has a start trigger unless it is a tool
    /// fault, an end trigger only if it ends by one, and a drift below 50%.
    fn check_faults(&self) -> Result<(), String> {
        let nodes = self.operator_node() + 1;
        for (i, f) in self.faults.iter().enumerate() {
            let mut bad = None;
            f.for_each_node(|node| {
                if node >= nodes {
                    bad = Some(node);
                }
            });
            if let Some(node) = bad {
                return Err(format!("fault {i} names node {node}; there are {nodes}"));
            }
            let tool = matches!(f.kind, FaultKind::Tool { .. });
            if f.start.is_some() == tool {
                return Err(format!(
                    "fault {i} {} a start trigger; every fault has one but a tool fault",
                    if tool { "has" } else { "lacks" }
                ));
            }
            if f.end.is_some() && !f.kind.ends_by_trigger() {
                return Err(format!(
                    "fault {i} has an end trigger, but only a partition, an isolation, slowness or a message fault ends by one"
                ));
            }
            match f.kind {
                FaultKind::Drift { drift_ppm, .. } if drift_ppm.unsigned_abs() >= 500_000 => {
                    return Err(format!("fault {i} sets a drift of 50% or more"));
                }
                FaultKind::Operator { job, .. } if job.0 as usize >= self.jobs.len() => {
                    return Err(format!("fault {i} names unknown {job}"));
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// P6: every worker's heartbeat period must leave every class's lease longer than
    /// `(1 + rho)/(1 - rho) * R*H + J`, and its stop margin must leave it a window to act in
    /// (`L*(1-rho)/(1+rho) > G`): [`timing::check`], the one check `advise` applies too. The
    /// error names the formula and the numbers. A known-bad variant that breaks it on purpose
    /// (V12) is refused here too.
    pub fn validate_timing(&self) -> Result<(), String> {
        let switches = self.variant.switches();
        let lease_min = self.classes.iter().map(|c| c.lease_ns).min();
        // A worker timed like the one before it passes as that one did.
        let mut passed = None;
        for (i, w) in self.workers.iter().enumerate() {
            let h = match (switches.unsafe_timing, lease_min) {
                (true, Some(l)) => l,
                _ => w.config.heartbeat_ns,
            };
            let key = (h, w.config.drift_ppm_max, w.config.stop_margin_ns);
            if passed == Some(key) {
                continue;
            }
            for (c, class) in self.classes.iter().enumerate() {
                let t = timing::Timing {
                    lease_ns: class.lease_ns,
                    heartbeat_ns: h,
                    misses: self.timing.heartbeats_per_window,
                    jitter_ns: self.timing.jitter_ns,
                    drift_ppm: w.config.drift_ppm_max,
                    stop_margin_ns: w.config.stop_margin_ns,
                };
                if let Err(why) = timing::check(&t) {
                    return Err(self.refusal(c, i, &t, why));
                }
            }
            passed = Some(key);
        }
        Ok(())
    }

    /// Why class `c`'s lease is unsafe for worker `i` with timing `t`, in one line.
    fn refusal(&self, c: usize, i: usize, t: &timing::Timing, why: timing::Unsafe) -> String {
        let (r, rho) = (t.misses, t.drift_ppm);
        match why {
            timing::Unsafe::LeaseTooShort { bound_ns } => format!(
                "configuration refused (P6): class{c} lease L={} is not longer than (1+rho)/(1-rho)*R*H + J = {} for worker {} (H={}, R={r}, J={}, rho={rho} ppm); the largest safe heartbeat period is {}",
                fmt_s(t.lease_ns),
                u64::try_from(bound_ns).map_or_else(|_| "more than 2^64 ns".to_string(), fmt_s),
                self.worker_display(i),
                fmt_s(t.heartbeat_ns),
                fmt_s(t.jitter_ns),
                fmt_s(timing::max_safe_heartbeat(t.lease_ns, r, t.jitter_ns, rho)),
            ),
            timing::Unsafe::NoWindow { window_ns } => format!(
                "configuration refused (P6): worker {}'s stop margin G={} is not shorter than class{c}'s lease corrected for drift, L*(1-rho)/(1+rho) = {} (L={}, rho={rho} ppm): the holder may never act",
                self.worker_display(i),
                fmt_s(t.stop_margin_ns),
                fmt_s(window_ns),
                fmt_s(t.lease_ns),
            ),
        }
    }

    /// The coordinator's node id.
    pub const COORDINATOR: NodeId = 0;

    /// A worker's node id by index.
    pub fn worker_node(&self, index: usize) -> NodeId {
        assert!(index < self.workers.len());
        1 + index as NodeId
    }

    /// A receiver's node id by index.
    pub fn receiver_node(&self, index: usize) -> NodeId {
        assert!(index < self.receivers.len());
        1 + (self.workers.len() + index) as NodeId
    }

    /// The tool's node id.
    pub fn tool_node(&self) -> NodeId {
        1 + (self.workers.len() + self.receivers.len()) as NodeId
    }

    /// The operator's node id (the last node).
    pub fn operator_node(&self) -> NodeId {
        self.tool_node() + 1
    }

    /// The display name of worker `index`: its logical name, primed when an earlier worker
    /// process carries the same name (a restart under the same name).
    pub fn worker_display(&self, index: usize) -> String {
        let name = self.workers[index].config.name;
        let earlier = self.workers[..index]
            .iter()
            .filter(|w| w.config.name == name)
            .count();
        // `W` and the number, as `WorkerName` displays itself (a test holds them together),
        // without the formatting machinery: a run of a new layout names every worker.
        let mut display = String::with_capacity(11 + earlier);
        display.push('W');
        push_decimal(&mut display, name.0);
        display.extend(std::iter::repeat_n('\'', earlier));
        display
    }

    /// Whether `infos` are this setup's [`Setup::node_infos`]: the same roles in the same
    /// places (a node's name follows from its role and place), checked without building them.
    pub fn has_node_infos(&self, infos: &[NodeInfo]) -> bool {
        let (w, r) = (self.workers.len(), self.receivers.len());
        infos.len() == w + r + 3
            && infos[0].role == Role::Coordinator
            && self.workers.iter().zip(&infos[1..]).all(|(s, n)| {
                n.role
                    == Role::Worker {
                        name: s.config.name,
                        drift_ppm_max: s.config.drift_ppm_max,
                    }
            })
            && self
                .receivers
                .iter()
                .zip(&infos[1 + w..])
                .enumerate()
                .all(|(i, (s, n))| {
                    n.role
                        == Role::Receiver {
                            index: i as u8,
                            supports_fence: s.supports_fence,
                        }
                })
            && infos[1 + w + r].role == Role::Tool
            && infos[2 + w + r].role == Role::Operator
    }

    /// Names and roles of every node, by id.
    pub fn node_infos(&self) -> Vec<NodeInfo> {
        let mut v = Vec::with_capacity(self.workers.len() + self.receivers.len() + 3);
        v.push(NodeInfo {
            name: "coord".into(),
            role: Role::Coordinator,
        });
        for (i, w) in self.workers.iter().enumerate() {
            v.push(NodeInfo {
                name: self.worker_display(i),
                role: Role::Worker {
                    name: w.config.name,
                    drift_ppm_max: w.config.drift_ppm_max,
                },
            });
        }
        for (i, r) in self.receivers.iter().enumerate() {
            v.push(NodeInfo {
                name: if self.receivers.len() == 1 {
                    "recv".into()
                } else {
                    let mut name = String::with_capacity(7);
                    name.push_str("recv");
                    push_decimal(&mut name, i as u32 + 1);
                    name
                },
                role: Role::Receiver {
                    index: i as u8,
                    supports_fence: r.supports_fence,
                },
            });
        }
        v.push(NodeInfo {
            name: "tool".into(),
            role: Role::Tool,
        });
        v.push(NodeInfo {
            name: "oper".into(),
            role: Role::Operator,
        });
        v
    }
}

/// Appends `n` in decimal, as `{}` formats it.
fn push_decimal(s: &mut String, mut n: u32) {
    let mut digits = [0u8; 10];
    let mut i = digits.len();
    loop {
        i -= 1;
        digits[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    s.extend(digits[i..].iter().map(|&d| d as char));
}

/// Most elements a kept vector of a recycled setup may hold (see [`Spare`]): a sweep's setups
/// are small, and a thread that once built a large one does not keep its storage.
const SPARE_MAX: usize = 256;
/// Most plans of a kept worker or of a kept setup's own list (each plan's steps are bounded
/// by [`SPARE_MAX`]).
const SPARE_PLANS_MAX: usize = 8;

/// The storage of a setup a thread recycled, kept for the next setup it builds: a sweep
/// builds and recycles one setup per seed, and the next one reuses these vectors (and each kept
/// worker's plans) instead of allocating its own. What they hold is stale: a builder that takes
/// them clears each one or overwrites every element it keeps ([`copy_plans`]), so the setup it
/// builds is the same as one built from new vectors (a test holds every named scenario to it).
#[derive(Default)]
pub(crate) struct Spare {
    pub scenario: String,
    pub classes: Vec<ClassSpec>,
    pub plans: Vec<Plan>,
    pub jobs: Vec<JobSpec>,
    pub workers: Vec<WorkerSetup>,
    pub receivers: Vec<ReceiverSetup>,
    pub tool_steps: Vec<ToolStep>,
    pub faults: Vec<Fault>,
}

/// `v`'s storage when it is small enough to keep, else an empty vector (`v` is then freed
/// with its setup).
fn keep<T>(v: &mut Vec<T>) -> Vec<T> {
    if v.capacity() <= SPARE_MAX {
        std::mem::take(v)
    } else {
        Vec::new()
    }
}

impl Setup {
    /// This setup's vectors (its workers' plans too), for the next setup a thread's stories or
    /// the swarm build (the workspace keeps it), instead of freeing them: a sweep
    /// builds and drops one setup per seed. A vector of more than 256 elements is freed. The
    /// setup built next is the same as one built in new storage (a test holds every named
    /// scenario to it).
    pub(crate) fn into_spare(mut self) -> Spare {
        let mut workers = keep(&mut self.workers);
        for w in &mut workers {
            let plans = &w.config.plans;
            if plans.capacity() > SPARE_PLANS_MAX
                || plans.iter().any(|p| p.steps.capacity() > SPARE_MAX)
            {
                w.config.plans = Vec::new();
            }
        }
        let mut plans = keep(&mut self.plans);
        if plans.capacity() > SPARE_PLANS_MAX
            || plans.iter().any(|p| p.steps.capacity() > SPARE_MAX)
        {
            plans = Vec::new();
        }
        let scenario = if self.scenario.capacity() <= SPARE_MAX {
            std::mem::take(&mut self.scenario)
        } else {
            String::new()
        };
        Spare {
            scenario,
            classes: keep(&mut self.classes),
            plans,
            jobs: keep(&mut self.jobs),
            workers,
            receivers: keep(&mut self.receivers),
            tool_steps: keep(&mut self.tool.steps),
            faults: keep(&mut self.faults),
        }
    }
}

/// Makes `into` a copy of `plans`, reusing the storage of the (stale) plans it holds.
pub(crate) fn copy_plans(into: &mut Vec<Plan>, plans: &[Plan]) {
    into.truncate(plans.len());
    for (kept, plan) in into.iter_mut().zip(plans) {
        // Every field, so that a field added to `Plan` cannot be left stale here.
        let Plan { steps } = kept;
        steps.clone_from(&plan.steps);
    }
    let n = into.len();
    into.extend_from_slice(&plans[n..]);
}

impl Setup {
    /// The plan's tool faults (F7), as the tool applies them.
    pub fn tool_faults(&self) -> impl Iterator<Item = ToolFaultRule> + '_ {
        self.faults.iter().filter_map(|f| match f.kind {
            FaultKind::Tool {
                worker,
                step,
                nth,
                kind,
                late_ns,
            } => Some(ToolFaultRule {
                worker,
                step,
                nth,
                kind,
                late_ns,
            }),
            _ => None,
        })
    }

    /// The operator's actions by fault index; a plan without any leaves the list empty, which
    /// the operator reads the same way (no action at any index).
    pub fn operator_actions(&self) -> Vec<Option<(JobId, OperatorAction)>> {
        let operator = |f: &Fault| match f.kind {
            FaultKind::Operator { job, action } => Some((job, action)),
            _ => None,
        };
        if self.faults.iter().any(|f| operator(f).is_some()) {
            self.faults.iter().map(operator).collect()
        } else {
            Vec::new()
        }
    }
}

/// How the tool behaves at one step of a plan: its duration range and its answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ToolStep {
    /// The plan step this applies to.
    pub step: u8,
    /// Shortest duration.
    pub min_ns: Nanos,
    /// Longest duration.
    pub max_ns: Nanos,
    /// What the tool answers.
    pub answer: ToolAnswer,
}

/// The tool's behaviour for a run; durations are drawn from the run's tool stream.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ToolSetup {
    /// Per-step behaviour; a step not listed answers success after `default`.
    pub steps: Vec<ToolStep>,
    /// Duration range for unlisted steps.
    pub default_min_ns: Nanos,
    /// Duration range for unlisted steps.
    pub default_max_ns: Nanos,
}

/// A tool fault as the tool applies it (from the plan's `Fault::Tool`).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct ToolFaultRule {
    /// Caller node (any, if `None`).
    pub worker: Option<NodeId>,
    /// Plan step (any, if `None`).
    pub step: Option<u8>,
    /// Which matching call, 1-based (0: every one).
    pub nth: u32,
    /// What goes wrong.
    pub kind: ToolFaultKind,
    /// Extra duration for `Late`.
    pub late_ns: Nanos,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Node names are what formatting their parts gives.
    #[test]
    fn node_names_are_their_formatted_parts() {
        let w1_w2 = crate::scenarios::find("w1-w2").unwrap();
        let mut setup = w1_w2.build(1, Variant::Reference);
        let numbers = (0..1_100).chain([65_535, 1 << 20, u32::MAX - 1, u32::MAX]);
        for n in numbers {
            let mut s = String::new();
            push_decimal(&mut s, n);
            assert_eq!(s, n.to_string());
            setup.workers[0].config.name = leasesim_protocol::WorkerName(n);
            setup.workers[1].config.name = leasesim_protocol::WorkerName(n);
            let name = setup.workers[0].config.name;
            assert_eq!(setup.worker_display(0), format!("{name}"));
            assert_eq!(setup.worker_display(1), format!("{name}'"));
        }
        let r = setup.receivers[0].clone();
        setup.receivers.extend([r.clone(), r]);
        let names: Vec<String> = setup.node_infos().into_iter().map(|n| n.name).collect();
        assert_eq!(names[3..6], ["recv1", "recv2", "recv3"]);
    }
}
