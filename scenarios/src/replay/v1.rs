//! Version 1 of the replay file: the JSON shape every replay and trace file written so far has,
//! as types of its own. The run's types (`Setup`, `Fault`, the protocol's configuration) are
//! converted to and from these field by field, so renaming or reshaping an internal type cannot
//! change what a file says: the conversion stops compiling instead, and the change is decided
//! here. Nothing outside the replay module reads or writes these types.
//!
//! The types keep the names and serde attributes the run's types had when version 1 was
//! written (serde's error messages name them), and with them the defaults that let older files
//! leave a field out. Change nothing here but to fix a bug in reading; a new shape is a new
//! version beside this one.

use crate::verdict as run;
use crate::{plan, setup, world};
use leasesim_protocol as protocol;
use leasesim_sim as sim;
use serde::{Deserialize, Serialize};

/// A replay file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct Replay {
    pub format: String,
    pub version: u32,
    /// The leasesim version that wrote it.
    pub leasesim: String,
    /// The setup's scenario again, for a reader of the file; reading refuses a file where the
    /// two differ.
    pub scenario: String,
    /// The setup's variant again, checked the same way.
    pub variant: Variant,
    pub seed: u64,
    #[serde(default)]
    pub allow_unsafe_timing: bool,
    pub setup: Setup,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expect: Option<Expect>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// Added within version 1 (files of leasesim's own machines never hold it): the user's
    /// machines the run was recorded with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machines: Option<RecordedMachines>,
}

/// The user's machines a replay was recorded with, and how to rerun it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RecordedMachines {
    pub name: String,
    pub coordinator: String,
    pub worker: String,
    pub receiver: String,
    pub rerun: String,
}

/// What the recorded run saw.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Expect {
    pub verdict: Verdict,
    pub invariants: Vec<String>,
    pub trace_hash: String,
    pub events: u64,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "verdict", rename_all = "snake_case")]
pub(crate) enum Verdict {
    Held,
    Violated,
    Unfinished {
        end: End,
    },
    /// Added within version 1 (older files never hold it): a configuration refused before it
    /// ran.
    Invalid {
        reason: String,
    },
}

/// Mirrors a field-less enum of the run's types: the file's enum, and conversions both ways
/// that name every variant, so a variant added on either side does not compile until this
/// format says what it is.
macro_rules! unit_enum {
    ($(#[$meta:meta])* $name:ident <=> $module:ident::$internal:ident { $($variant:ident),* $(,)? }) => {
        #[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
        $(#[$meta])*
        pub(crate) enum $name {
            $($variant,)*
        }

        impl From<$module::$internal> for $name {
            fn from(x: $module::$internal) -> Self {
                match x {
                    $($module::$internal::$variant => $name::$variant,)*
                }
            }
        }

        impl From<$name> for $module::$internal {
            fn from(x: $name) -> Self {
                match x {
                    $($name::$variant => $module::$internal::$variant,)*
                }
            }
        }
    };
}

unit_enum! {
    #[serde(rename_all = "snake_case")]
    End <=> sim::End { Done, Idle, Horizon, EventBudget, QueueBound, TimeReversed, ProcessFault }
}

unit_enum! {
    #[serde(rename_all = "kebab-case")]
    Variant <=> protocol::Variant {
        Reference,
        HeartbeatIgnoresOwner,
        UnconditionalCommit,
        ReceiverIgnoresFence,
        FreshKeyPerAttempt,
        WorkerClockExpiry,
        NoJeopardy,
        RenewAtLastSecond,
        HeartbeatOnToolThread,
        OwnerNameOnly,
        NonAtomicClaim,
        TakeoverByStatusAge,
        UnsafeTiming,
        PayloadLeaseLength,
        UncappedRenewal,
    }
}

unit_enum! {
    #[serde(rename_all = "snake_case")]
    MsgKind <=> protocol::MsgKind {
        Claim,
        ClaimGranted,
        ClaimEmpty,
        Heartbeat,
        HeartbeatOk,
        HeartbeatRejected,
        Commit,
        CommitAccepted,
        CommitRejected,
        ToolRequest,
        ToolResponse,
        Effect,
        EffectAck,
        Operator,
        OperatorDone,
        Checkpoint,
        CheckpointAck,
        EffectStatus,
        EffectStatusReply,
        ToolStatus,
    }
}

unit_enum! {
    #[serde(rename_all = "snake_case")]
    ToolFaultKind <=> protocol::ToolFaultKind { Hang, Late, Transient, Permanent, AnswerLost }
}

/// A run's whole input.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Setup {
    pub scenario: String,
    pub variant: Variant,
    pub classes: Vec<ClassSpec>,
    pub plans: Vec<Plan>,
    pub jobs: Vec<JobSpec>,
    pub op_names: Vec<String>,
    pub coordinator_clock: ClockSpec,
    pub workers: Vec<WorkerSetup>,
    pub receivers: Vec<ReceiverSetup>,
    pub tool: ToolSetup,
    pub tool_clock: ClockSpec,
    pub net: NetConfig,
    pub limits: Limits,
    pub faults: Vec<Fault>,
    #[serde(default)]
    pub heal_at_ns: Option<u64>,
    #[serde(default)]
    pub liveness_bound_ns: Option<u64>,
    pub timing: TimingPolicy,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct ClassSpec {
    pub lease_ns: u64,
    pub max_attempts: u32,
    pub renewal_cap_ns: u64,
    #[serde(default)]
    pub capacity: Option<u32>,
    #[serde(default)]
    pub retry_backoff_ns: u64,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Plan {
    pub steps: Vec<Step>,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "step", rename_all = "snake_case")]
pub(crate) enum Step {
    Effect { op: u8, receiver: u8 },
    Tool,
    Checkpoint,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct JobSpec {
    pub class: u8,
    pub payload_hash: u64,
    #[serde(default)]
    pub payload_lease_ns: Option<u64>,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct ClockSpec {
    pub offset_ns: u64,
    pub drift_ppm: i32,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct WorkerSetup {
    pub config: WorkerConfig,
    pub clock: ClockSpec,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct WorkerConfig {
    pub name: u32,
    pub heartbeat_ns: u64,
    pub drift_ppm_max: u32,
    pub stop_margin_ns: u64,
    pub tool_timeout_ns: u64,
    pub stage_deadline_ns: u64,
    pub claim_poll_ns: u64,
    pub commit_retry_ns: u64,
    pub commit_attempts_max: u32,
    pub start_delay_ns: u64,
    pub plans: Vec<Plan>,
}

fn yes() -> bool {
    true
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct ReceiverSetup {
    pub supports_fence: bool,
    #[serde(default = "yes")]
    pub supports_status: bool,
    #[serde(default)]
    pub refused_ops: Vec<u8>,
    pub clock: ClockSpec,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct ToolSetup {
    pub steps: Vec<ToolStep>,
    pub default_min_ns: u64,
    pub default_max_ns: u64,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct ToolStep {
    pub step: u8,
    pub min_ns: u64,
    pub max_ns: u64,
    pub answer: ToolAnswer,
}

/// Externally tagged, with the variants' own names (`{"Success": {"result": 7}}`).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) enum ToolAnswer {
    Success { result: u64 },
    Failure { transient: bool },
    Running,
    NoRecord,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct NetConfig {
    pub latency_min_ns: u64,
    pub latency_max_ns: u64,
    pub drop_ppm: u32,
    pub dup_ppm: u32,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Limits {
    pub event_budget: u64,
    pub horizon_ns: u64,
    pub queue_max: usize,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct TimingPolicy {
    pub heartbeats_per_window: u32,
    pub jitter_ns: u64,
}

#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct MsgPattern {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<MsgKind>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub op: Option<u8>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<u8>,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "on", rename_all = "snake_case")]
pub(crate) enum Trigger {
    At { t_ns: u64 },
    Sent { pattern: MsgPattern, delay_ns: u64 },
    Delivered { pattern: MsgPattern, delay_ns: u64 },
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "do", rename_all = "snake_case")]
pub(crate) enum MsgAction {
    Drop,
    Delay { extra_ns: u64 },
    Duplicate { gap_ns: u64 },
    Hold { release: Trigger },
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "action", rename_all = "snake_case")]
pub(crate) enum OperatorAction {
    Revoke,
    Takeover { to: u32 },
    Cancel,
    HandToHuman,
    HumanResolves,
}

/// One fault, each kind with its own timing fields (`end` is written as `null` when absent).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "fault", rename_all = "snake_case")]
pub(crate) enum Fault {
    Partition {
        a: u32,
        b: u32,
        one_way: bool,
        start: Trigger,
        end: Option<Trigger>,
    },
    Isolate {
        node: u32,
        start: Trigger,
        end: Option<Trigger>,
    },
    Pause {
        node: u32,
        frozen: bool,
        start: Trigger,
        duration_ns: u64,
        hold_anchor: bool,
    },
    Message {
        pattern: MsgPattern,
        start: Trigger,
        end: Option<Trigger>,
        count: u32,
        action: MsgAction,
    },
    ClockStep {
        node: u32,
        delta_ns: i64,
        wall: bool,
        start: Trigger,
    },
    Drift {
        node: u32,
        drift_ppm: i32,
        start: Trigger,
    },
    Crash {
        node: u32,
        start: Trigger,
        restart_after_ns: Option<u64>,
    },
    Slow {
        node: u32,
        extra_ns: u64,
        start: Trigger,
        end: Option<Trigger>,
    },
    Tool {
        worker: Option<u32>,
        step: Option<u8>,
        nth: u32,
        kind: ToolFaultKind,
        late_ns: u64,
    },
    Operator {
        job: u32,
        action: OperatorAction,
        start: Trigger,
    },
}

// ---- from the run's types to the file's ----------------------------------------------------

impl From<&run::Verdict> for Verdict {
    fn from(v: &run::Verdict) -> Self {
        match v {
            run::Verdict::Held => Verdict::Held,
            run::Verdict::Violated => Verdict::Violated,
            run::Verdict::Unfinished { end } => Verdict::Unfinished { end: (*end).into() },
            run::Verdict::Invalid { reason } => Verdict::Invalid {
                reason: reason.clone(),
            },
        }
    }
}

impl TryFrom<&setup::Setup> for Setup {
    type Error = String;

    /// Fails only for a fault plan this version cannot state (see [`Fault`]'s conversion).
    fn try_from(s: &setup::Setup) -> Result<Self, String> {
        let faults = s
            .faults
            .iter()
            .enumerate()
            .map(|(i, f)| Fault::try_from(f).map_err(|e| format!("fault {i}: {e}")))
            .collect::<Result<_, _>>()?;
        Ok(Setup {
            scenario: s.scenario.clone(),
            variant: s.variant.into(),
            classes: s.classes.iter().map(Into::into).collect(),
            plans: s.plans.iter().map(Into::into).collect(),
            jobs: s.jobs.iter().map(Into::into).collect(),
            op_names: s.op_names.to_vec(),
            coordinator_clock: s.coordinator_clock.into(),
            workers: s.workers.iter().map(Into::into).collect(),
            receivers: s.receivers.iter().map(Into::into).collect(),
            tool: (&s.tool).into(),
            tool_clock: s.tool_clock.into(),
            net: s.net.into(),
            limits: s.limits.into(),
            faults,
            heal_at_ns: s.heal_at_ns,
            liveness_bound_ns: s.liveness_bound_ns,
            timing: s.timing.into(),
        })
    }
}

impl From<&protocol::ClassSpec> for ClassSpec {
    fn from(c: &protocol::ClassSpec) -> Self {
        ClassSpec {
            lease_ns: c.lease_ns,
            max_attempts: c.max_attempts,
            renewal_cap_ns: c.renewal_cap_ns,
            capacity: c.capacity,
            retry_backoff_ns: c.retry_backoff_ns,
        }
    }
}

impl From<&protocol::Plan> for Plan {
    fn from(p: &protocol::Plan) -> Self {
        Plan {
            steps: p.steps.iter().map(|s| (*s).into()).collect(),
        }
    }
}

impl From<protocol::Step> for Step {
    fn from(s: protocol::Step) -> Self {
        match s {
            protocol::Step::Effect { op, receiver } => Step::Effect { op: op.0, receiver },
            protocol::Step::Tool => Step::Tool,
            protocol::Step::Checkpoint => Step::Checkpoint,
        }
    }
}

impl From<&protocol::JobSpec> for JobSpec {
    fn from(j: &protocol::JobSpec) -> Self {
        JobSpec {
            class: j.class.0,
            payload_hash: j.payload_hash,
            payload_lease_ns: j.payload_lease_ns,
        }
    }
}

impl From<setup::ClockSpec> for ClockSpec {
    fn from(c: setup::ClockSpec) -> Self {
        ClockSpec {
            offset_ns: c.offset_ns,
            drift_ppm: c.drift_ppm,
        }
    }
}

impl From<&setup::WorkerSetup> for WorkerSetup {
    fn from(w: &setup::WorkerSetup) -> Self {
        let c = &w.config;
        WorkerSetup {
            config: WorkerConfig {
                name: c.name.0,
                heartbeat_ns: c.heartbeat_ns,
                drift_ppm_max: c.drift_ppm_max,
                stop_margin_ns: c.stop_margin_ns,
                tool_timeout_ns: c.tool_timeout_ns,
                stage_deadline_ns: c.stage_deadline_ns,
                claim_poll_ns: c.claim_poll_ns,
                commit_retry_ns: c.commit_retry_ns,
                commit_attempts_max: c.commit_attempts_max,
                start_delay_ns: c.start_delay_ns,
                plans: c.plans.iter().map(Into::into).collect(),
            },
            clock: w.clock.into(),
        }
    }
}

impl From<&setup::ReceiverSetup> for ReceiverSetup {
    fn from(r: &setup::ReceiverSetup) -> Self {
        ReceiverSetup {
            supports_fence: r.supports_fence,
            supports_status: r.supports_status,
            refused_ops: r.refused_ops.iter().map(|op| op.0).collect(),
            clock: r.clock.into(),
        }
    }
}

impl From<&world::ToolSetup> for ToolSetup {
    fn from(t: &world::ToolSetup) -> Self {
        ToolSetup {
            steps: t
                .steps
                .iter()
                .map(|s| ToolStep {
                    step: s.step,
                    min_ns: s.min_ns,
                    max_ns: s.max_ns,
                    answer: s.answer.into(),
                })
                .collect(),
            default_min_ns: t.default_min_ns,
            default_max_ns: t.default_max_ns,
        }
    }
}

impl From<protocol::ToolAnswer> for ToolAnswer {
    fn from(a: protocol::ToolAnswer) -> Self {
        match a {
            protocol::ToolAnswer::Success { result } => ToolAnswer::Success { result },
            protocol::ToolAnswer::Failure { transient } => ToolAnswer::Failure { transient },
            protocol::ToolAnswer::Running => ToolAnswer::Running,
            protocol::ToolAnswer::NoRecord => ToolAnswer::NoRecord,
        }
    }
}

impl From<sim::NetConfig> for NetConfig {
    fn from(n: sim::NetConfig) -> Self {
        NetConfig {
            latency_min_ns: n.latency_min_ns,
            latency_max_ns: n.latency_max_ns,
            drop_ppm: n.drop_ppm,
            dup_ppm: n.dup_ppm,
        }
    }
}

impl From<sim::Limits> for Limits {
    fn from(l: sim::Limits) -> Self {
        Limits {
            event_budget: l.event_budget,
            horizon_ns: l.horizon_ns,
            queue_max: l.queue_max,
        }
    }
}

impl From<setup::TimingPolicy> for TimingPolicy {
    fn from(t: setup::TimingPolicy) -> Self {
        TimingPolicy {
            heartbeats_per_window: t.heartbeats_per_window,
            jitter_ns: t.jitter_ns,
        }
    }
}

impl From<plan::MsgPattern> for MsgPattern {
    fn from(p: plan::MsgPattern) -> Self {
        MsgPattern {
            from: p.from,
            to: p.to,
            kind: p.kind.map(Into::into),
            token: p.token.map(|t| t.0),
            op: p.op.map(|op| op.0),
            step: p.step,
        }
    }
}

impl From<plan::Trigger> for Trigger {
    fn from(t: plan::Trigger) -> Self {
        match t {
            plan::Trigger::At { t_ns } => Trigger::At { t_ns },
            plan::Trigger::Sent { pattern, delay_ns } => Trigger::Sent {
                pattern: pattern.into(),
                delay_ns,
            },
            plan::Trigger::Delivered { pattern, delay_ns } => Trigger::Delivered {
                pattern: pattern.into(),
                delay_ns,
            },
        }
    }
}

impl From<plan::MsgAction> for MsgAction {
    fn from(a: plan::MsgAction) -> Self {
        match a {
            plan::MsgAction::Drop => MsgAction::Drop,
            plan::MsgAction::Delay { extra_ns } => MsgAction::Delay { extra_ns },
            plan::MsgAction::Duplicate { gap_ns } => MsgAction::Duplicate { gap_ns },
            plan::MsgAction::Hold { release } => MsgAction::Hold {
                release: release.into(),
            },
        }
    }
}

impl From<protocol::OperatorAction> for OperatorAction {
    fn from(a: protocol::OperatorAction) -> Self {
        match a {
            protocol::OperatorAction::Revoke => OperatorAction::Revoke,
            protocol::OperatorAction::Takeover { to } => OperatorAction::Takeover { to: to.0 },
            protocol::OperatorAction::Cancel => OperatorAction::Cancel,
            protocol::OperatorAction::HandToHuman => OperatorAction::HandToHuman,
            protocol::OperatorAction::HumanResolves => OperatorAction::HumanResolves,
        }
    }
}

impl TryFrom<&plan::Fault> for Fault {
    type Error = String;

    /// Fails for a fault this version cannot state: a start missing or given where the kind
    /// has none, an end on a kind that has none (`Setup::check` refuses the same).
    // Long: one arm per fault kind of the file, each a field-by-field copy; split, each would be one expression.
    fn try_from(f: &plan::Fault) -> Result<Self, String> {
        use plan::FaultKind as K;
        if f.start.is_some() && matches!(f.kind, K::Tool { .. }) {
            return Err("a tool fault with a start trigger cannot be written".into());
        }
        if f.end.is_some() && !f.kind.ends_by_trigger() {
            return Err(
                "a fault with an end trigger its kind has no use for cannot be written".into(),
            );
        }
        let start = || {
            f.start
                .map(Trigger::from)
                .ok_or_else(|| "a fault without a start trigger cannot be written".to_string())
        };
        let end = f.end.map(Trigger::from);
        Ok(match f.kind {
            K::Partition { a, b, one_way } => Fault::Partition {
                a,
                b,
                one_way,
                start: start()?,
                end,
            },
            K::Isolate { node } => Fault::Isolate {
                node,
                start: start()?,
                end,
            },
            K::Pause {
                node,
                frozen,
                duration_ns,
                hold_anchor,
            } => Fault::Pause {
                node,
                frozen,
                start: start()?,
                duration_ns,
                hold_anchor,
            },
            K::Message {
                pattern,
                count,
                action,
            } => Fault::Message {
                pattern: pattern.into(),
                start: start()?,
                end,
                count,
                action: action.into(),
            },
            K::ClockStep {
                node,
                delta_ns,
                wall,
            } => Fault::ClockStep {
                node,
                delta_ns,
                wall,
                start: start()?,
            },
            K::Drift { node, drift_ppm } => Fault::Drift {
                node,
                drift_ppm,
                start: start()?,
            },
            K::Crash {
                node,
                restart_after_ns,
            } => Fault::Crash {
                node,
                start: start()?,
                restart_after_ns,
            },
            K::Slow { node, extra_ns } => Fault::Slow {
                node,
                extra_ns,
                start: start()?,
                end,
            },
            K::Tool {
                worker,
                step,
                nth,
                kind,
                late_ns,
            } => Fault::Tool {
                worker,
                step,
                nth,
                kind: kind.into(),
                late_ns,
            },
            K::Operator { job, action } => Fault::Operator {
                job: job.0,
                action: action.into(),
                start: start()?,
            },
        })
    }
}

// ---- from the file's types to the run's ----------------------------------------------------

impl From<Verdict> for run::Verdict {
    fn from(v: Verdict) -> Self {
        match v {
            Verdict::Held => run::Verdict::Held,
            Verdict::Violated => run::Verdict::Violated,
            Verdict::Unfinished { end } => run::Verdict::Unfinished { end: end.into() },
            Verdict::Invalid { reason } => run::Verdict::Invalid { reason },
        }
    }
}

impl From<Setup> for setup::Setup {
    fn from(s: Setup) -> Self {
        setup::Setup {
            scenario: s.scenario,
            variant: s.variant.into(),
            classes: s.classes.into_iter().map(Into::into).collect(),
            plans: s.plans.into_iter().map(Into::into).collect(),
            jobs: s.jobs.into_iter().map(Into::into).collect(),
            op_names: s.op_names.into(),
            coordinator_clock: s.coordinator_clock.into(),
            workers: s.workers.into_iter().map(Into::into).collect(),
            receivers: s.receivers.into_iter().map(Into::into).collect(),
            tool: s.tool.into(),
            tool_clock: s.tool_clock.into(),
            net: s.net.into(),
            limits: s.limits.into(),
            faults: s.faults.into_iter().map(Into::into).collect(),
            heal_at_ns: s.heal_at_ns,
            liveness_bound_ns: s.liveness_bound_ns,
            timing: s.timing.into(),
        }
    }
}

impl From<ClassSpec> for protocol::ClassSpec {
    fn from(c: ClassSpec) -> Self {
        protocol::ClassSpec {
            lease_ns: c.lease_ns,
            max_attempts: c.max_attempts,
            renewal_cap_ns: c.renewal_cap_ns,
            capacity: c.capacity,
            retry_backoff_ns: c.retry_backoff_ns,
        }
    }
}

impl From<Plan> for protocol::Plan {
    fn from(p: Plan) -> Self {
        protocol::Plan {
            steps: p.steps.into_iter().map(Into::into).collect(),
        }
    }
}

impl From<Step> for protocol::Step {
    fn from(s: Step) -> Self {
        match s {
            Step::Effect { op, receiver } => protocol::Step::Effect {
                op: protocol::OpId(op),
                receiver,
            },
            Step::Tool => protocol::Step::Tool,
            Step::Checkpoint => protocol::Step::Checkpoint,
        }
    }
}

impl From<JobSpec> for protocol::JobSpec {
    fn from(j: JobSpec) -> Self {
        protocol::JobSpec {
            class: protocol::ClassId(j.class),
            payload_hash: j.payload_hash,
            payload_lease_ns: j.payload_lease_ns,
        }
    }
}

impl From<ClockSpec> for setup::ClockSpec {
    fn from(c: ClockSpec) -> Self {
        setup::ClockSpec {
            offset_ns: c.offset_ns,
            drift_ppm: c.drift_ppm,
        }
    }
}

impl From<WorkerSetup> for setup::WorkerSetup {
    fn from(w: WorkerSetup) -> Self {
        let c = w.config;
        setup::WorkerSetup {
            config: protocol::WorkerConfig {
                name: protocol::WorkerName(c.name),
                heartbeat_ns: c.heartbeat_ns,
                drift_ppm_max: c.drift_ppm_max,
                stop_margin_ns: c.stop_margin_ns,
                tool_timeout_ns: c.tool_timeout_ns,
                stage_deadline_ns: c.stage_deadline_ns,
                claim_poll_ns: c.claim_poll_ns,
                commit_retry_ns: c.commit_retry_ns,
                commit_attempts_max: c.commit_attempts_max,
                start_delay_ns: c.start_delay_ns,
                plans: c.plans.into_iter().map(Into::into).collect(),
            },
            clock: w.clock.into(),
        }
    }
}

impl From<ReceiverSetup> for setup::ReceiverSetup {
    fn from(r: ReceiverSetup) -> Self {
        setup::ReceiverSetup {
            supports_fence: r.supports_fence,
            supports_status: r.supports_status,
            refused_ops: r.refused_ops.into_iter().map(protocol::OpId).collect(),
            clock: r.clock.into(),
        }
    }
}

impl From<ToolSetup> for world::ToolSetup {
    fn from(t: ToolSetup) -> Self {
        world::ToolSetup {
            steps: t
                .steps
                .into_iter()
                .map(|s| world::ToolStep {
                    step: s.step,
                    min_ns: s.min_ns,
                    max_ns: s.max_ns,
                    answer: s.answer.into(),
                })
                .collect(),
            default_min_ns: t.default_min_ns,
            default_max_ns: t.default_max_ns,
        }
    }
}

impl From<ToolAnswer> for protocol::ToolAnswer {
    fn from(a: ToolAnswer) -> Self {
        match a {
            ToolAnswer::Success { result } => protocol::ToolAnswer::Success { result },
            ToolAnswer::Failure { transient } => protocol::ToolAnswer::Failure { transient },
            ToolAnswer::Running => protocol::ToolAnswer::Running,
            ToolAnswer::NoRecord => protocol::ToolAnswer::NoRecord,
        }
    }
}

impl From<NetConfig> for sim::NetConfig {
    fn from(n: NetConfig) -> Self {
        sim::NetConfig {
            latency_min_ns: n.latency_min_ns,
            latency_max_ns: n.latency_max_ns,
            drop_ppm: n.drop_ppm,
            dup_ppm: n.dup_ppm,
        }
    }
}

impl From<Limits> for sim::Limits {
    fn from(l: Limits) -> Self {
        sim::Limits {
            event_budget: l.event_budget,
            horizon_ns: l.horizon_ns,
            queue_max: l.queue_max,
        }
    }
}

impl From<TimingPolicy> for setup::TimingPolicy {
    fn from(t: TimingPolicy) -> Self {
        setup::TimingPolicy {
            heartbeats_per_window: t.heartbeats_per_window,
            jitter_ns: t.jitter_ns,
        }
    }
}

impl From<MsgPattern> for plan::MsgPattern {
    fn from(p: MsgPattern) -> Self {
        plan::MsgPattern {
            from: p.from,
            to: p.to,
            kind: p.kind.map(Into::into),
            token: p.token.map(protocol::Token),
            op: p.op.map(protocol::OpId),
            step: p.step,
        }
    }
}

impl From<Trigger> for plan::Trigger {
    fn from(t: Trigger) -> Self {
        match t {
            Trigger::At { t_ns } => plan::Trigger::At { t_ns },
            Trigger::Sent { pattern, delay_ns } => plan::Trigger::Sent {
                pattern: pattern.into(),
                delay_ns,
            },
            Trigger::Delivered { pattern, delay_ns } => plan::Trigger::Delivered {
                pattern: pattern.into(),
                delay_ns,
            },
        }
    }
}

impl From<MsgAction> for plan::MsgAction {
    fn from(a: MsgAction) -> Self {
        match a {
            MsgAction::Drop => plan::MsgAction::Drop,
            MsgAction::Delay { extra_ns } => plan::MsgAction::Delay { extra_ns },
            MsgAction::Duplicate { gap_ns } => plan::MsgAction::Duplicate { gap_ns },
            MsgAction::Hold { release } => plan::MsgAction::Hold {
                release: release.into(),
            },
        }
    }
}

impl From<OperatorAction> for protocol::OperatorAction {
    fn from(a: OperatorAction) -> Self {
        match a {
            OperatorAction::Revoke => protocol::OperatorAction::Revoke,
            OperatorAction::Takeover { to } => protocol::OperatorAction::Takeover {
                to: protocol::WorkerName(to),
            },
            OperatorAction::Cancel => protocol::OperatorAction::Cancel,
            OperatorAction::HandToHuman => protocol::OperatorAction::HandToHuman,
            OperatorAction::HumanResolves => protocol::OperatorAction::HumanResolves,
        }
    }
}

impl From<Fault> for plan::Fault {
    // Long: one arm per fault kind of the file, each a field-by-field copy; split, each would be one expression.
    fn from(f: Fault) -> Self {
        use plan::FaultKind as K;
        let timed = |start: Trigger, end: Option<Trigger>, kind| plan::Fault {
            start: Some(start.into()),
            end: end.map(Into::into),
            kind,
        };
        match f {
            Fault::Partition {
                a,
                b,
                one_way,
                start,
                end,
            } => timed(start, end, K::Partition { a, b, one_way }),
            Fault::Isolate { node, start, end } => timed(start, end, K::Isolate { node }),
            Fault::Pause {
                node,
                frozen,
                start,
                duration_ns,
                hold_anchor,
            } => timed(
                start,
                None,
                K::Pause {
                    node,
                    frozen,
                    duration_ns,
                    hold_anchor,
                },
            ),
            Fault::Message {
                pattern,
                start,
                end,
                count,
                action,
            } => timed(
                start,
                end,
                K::Message {
                    pattern: pattern.into(),
                    count,
                    action: action.into(),
                },
            ),
            Fault::ClockStep {
                node,
                delta_ns,
                wall,
                start,
            } => timed(
                start,
                None,
                K::ClockStep {
                    node,
                    delta_ns,
                    wall,
                },
            ),
            Fault::Drift {
                node,
                drift_ppm,
                start,
            } => timed(start, None, K::Drift { node, drift_ppm }),
            Fault::Crash {
                node,
                start,
                restart_after_ns,
            } => timed(
                start,
                None,
                K::Crash {
                    node,
                    restart_after_ns,
                },
            ),
            Fault::Slow {
                node,
                extra_ns,
                start,
                end,
            } => timed(start, end, K::Slow { node, extra_ns }),
            Fault::Tool {
                worker,
                step,
                nth,
                kind,
                late_ns,
            } => plan::Fault::untriggered(K::Tool {
                worker,
                step,
                nth,
                kind: kind.into(),
                late_ns,
            }),
            Fault::Operator { job, action, start } => timed(
                start,
                None,
                K::Operator {
                    job: protocol::JobId(job),
                    action: action.into(),
                },
            ),
        }
    }
}

/// One fault as files hold it, on one line with its fields in the file's order (its debug form
/// if no file could hold it).
pub fn fault_line(fault: &plan::Fault) -> String {
    Fault::try_from(fault)
        .ok()
        .and_then(|f| serde_json::to_string(&f).ok())
        .unwrap_or_else(|| format!("{fault:?}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name<T: Serialize>(x: T) -> String {
        serde_json::to_value(x)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default()
    }

    #[test]
    fn variants_are_written_under_their_command_line_names() {
        for &v in protocol::Variant::ALL {
            assert_eq!(name(Variant::from(v)), v.name());
        }
    }

    #[test]
    fn message_kinds_and_tool_faults_keep_their_names() {
        use protocol::MsgKind as K;
        let kinds = [
            (K::Claim, "claim"),
            (K::ClaimGranted, "claim_granted"),
            (K::ClaimEmpty, "claim_empty"),
            (K::Heartbeat, "heartbeat"),
            (K::HeartbeatOk, "heartbeat_ok"),
            (K::HeartbeatRejected, "heartbeat_rejected"),
            (K::Commit, "commit"),
            (K::CommitAccepted, "commit_accepted"),
            (K::CommitRejected, "commit_rejected"),
            (K::ToolRequest, "tool_request"),
            (K::ToolResponse, "tool_response"),
            (K::Effect, "effect"),
            (K::EffectAck, "effect_ack"),
            (K::Operator, "operator"),
            (K::OperatorDone, "operator_done"),
            (K::Checkpoint, "checkpoint"),
            (K::CheckpointAck, "checkpoint_ack"),
            (K::EffectStatus, "effect_status"),
            (K::EffectStatusReply, "effect_status_reply"),
            (K::ToolStatus, "tool_status"),
        ];
        for (k, want) in kinds {
            assert_eq!(name(MsgKind::from(k)), want);
            assert_eq!(protocol::MsgKind::from(MsgKind::from(k)), k);
        }
        use protocol::ToolFaultKind as T;
        for (k, want) in [
            (T::Hang, "hang"),
            (T::Late, "late"),
            (T::Transient, "transient"),
            (T::Permanent, "permanent"),
            (T::AnswerLost, "answer_lost"),
        ] {
            assert_eq!(name(ToolFaultKind::from(k)), want);
        }
        use sim::End as E;
        for (e, want) in [
            (E::Done, "done"),
            (E::Idle, "idle"),
            (E::Horizon, "horizon"),
            (E::EventBudget, "event_budget"),
            (E::QueueBound, "queue_bound"),
        ] {
            assert_eq!(name(End::from(e)), want);
        }
    }
}
