//! Identifiers, messages and journal events shared by every protocol machine.
//!
//! Everything here is plain `Copy` data so that the simulator can record it in a trace without
//! allocation, and so that a trace can be serialized, hashed and compared byte for byte.

pub use leasesim_store::{Connection, StoreEvent, StoreFailure, StoreStatement};
use serde::{Deserialize, Serialize};
use std::fmt;

/// A node-local time reading in nanoseconds. The protocol never reads a clock: every input
/// carries the `now` of the node that handles it (sans-IO).
pub type Nanos = u64;

/// One second in nanoseconds, for readable constants.
pub const SECOND_NS: Nanos = 1_000_000_000;
/// One millisecond in nanoseconds.
pub const MILLI_NS: Nanos = 1_000_000;

macro_rules! id_type {
    ($(#[$doc:meta])* $name:ident($inner:ty), $prefix:literal) => {
        $(#[$doc])*
        #[derive(
            Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, Default,
        )]
        #[serde(transparent)]
        pub struct $name(pub $inner);

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, concat!($prefix, "{}"), self.0)
            }
        }
    };
}

id_type!(
    /// A job in the coordinator's table (P1 `id`).
    JobId(u32),
    "job"
);
id_type!(
    /// A worker's logical name (P1 `owner`). A restarted worker may come back under the same
    /// name, which is why ownership is never judged by the name alone (P9, V9).
    WorkerName(u32),
    "W"
);
id_type!(
    /// A fencing token: strictly increasing per job, one per grant (P3, P9). It is also the
    /// lease's epoch (P2, P15).
    Token(u64),
    ""
);
id_type!(
    /// An entity at an effect receiver (a case, an invoice). Fences are tracked per entity (P9).
    EntityId(u32),
    "entity"
);
id_type!(
    /// A job class: it sets the lease length on the coordinator (P7) and the work plan.
    ClassId(u8),
    "class"
);
id_type!(
    /// An operation meaning inside a job (`create_case`, `update_case`); part of the stable
    /// idempotency key (P10).
    OpId(u8),
    "op"
);

/// A stable idempotency key per operation meaning (P10): `tool-job:{job}:{op}`. `salt` is 0 for
/// a stable key; a known-bad variant that makes a fresh key per attempt sets it.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct IdemKey {
    /// The job the operation belongs to.
    pub job: JobId,
    /// The operation's meaning.
    pub op: OpId,
    /// 0 for a stable key.
    pub salt: u32,
}

impl fmt::Display for IdemKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "tool-job:{}:{}", self.job.0, self.op.0)?;
        if self.salt != 0 {
            write!(f, ":{}", self.salt)?;
        }
        Ok(())
    }
}

/// What a receiver knows about a key (a status query's answer).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EffectStatus {
    /// It took effect.
    Applied,
    /// It did not.
    NotApplied,
    /// The receiver cannot tell (no status interface, or a partial effect): reconciliation
    /// needs a human.
    Unknown,
}

/// What a worker reports at its final, conditional commit (P8, P11).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Outcome {
    /// The work succeeded; `result` is a hash of the result (never the result text, P18).
    Success {
        /// Hash of the result.
        result: u64,
    },
    /// The work failed.
    Failure {
        /// Why.
        error: ErrorCode,
        /// Whether another attempt may succeed (P11: validation errors are never retried).
        retryable: bool,
    },
}

/// Error codes a worker can report.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ErrorCode {
    /// The tool did not answer within the client timeout (P12 c: outcome unknown).
    ToolTimeout,
    /// The tool answered with a failure.
    ToolFailed,
    /// The stage ran past its deadline (P14), however alive the heartbeat was.
    StageDeadline,
    /// The job reached its class's cap on total lease time from the first claim (P7).
    RenewalCap,
    /// The tool refused the input: a validation error, never retried (P11).
    Validation,
    /// A receiver's policy refused a concrete effect of a valid holder (P16).
    Unauthorized,
    /// A partial effect could not be reconciled: a human must look (P17).
    NeedsHumanReview,
}

/// An operator's action on a job (F8, P15). It goes through the coordinator like every other
/// change of ownership: a new epoch and a recorded reason.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "action", rename_all = "snake_case")]
pub enum OperatorAction {
    /// End the current lease; the job goes back to the queue.
    Revoke,
    /// End the current lease and grant a new one to `to`, who picks it up on its next claim.
    Takeover {
        /// The worker that gets the job.
        to: WorkerName,
    },
    /// End the current lease and cancel the job (terminal).
    Cancel,
    /// Hand the job to a human (P15): a new epoch held by the human, the evidence kept.
    HandToHuman,
    /// The human who holds the job finishes it.
    HumanResolves,
}

/// The logical name of the human an operator hands a job to (P15).
pub const HUMAN: WorkerName = WorkerName(0);

/// Why a lease was granted (P15): every takeover records its reason.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GrantReason {
    /// A claim of a queued job.
    Claim,
    /// A claim of a running job whose lease expired by the coordinator's clock.
    Expired,
    /// An operator's takeover.
    Operator,
}

/// What went wrong at the tool on one call (F7).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolFaultKind {
    /// It never answers.
    Hang,
    /// It answers, but much later.
    Late,
    /// It fails in a way a retry may fix.
    Transient,
    /// It fails for good.
    Permanent,
    /// It performs the work but its answer is lost.
    AnswerLost,
}

/// The tool's answer to one request.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ToolAnswer {
    /// The call succeeded with this result hash.
    Success {
        /// Hash of the answer.
        result: u64,
    },
    /// The call failed.
    Failure {
        /// Whether retrying may help (a validation error never is).
        transient: bool,
    },
    /// Answer to a status query: the call is still running.
    Running,
    /// Answer to a status query: the tool has no record of the call.
    NoRecord,
}

/// How an effect receiver answered one effect (P9, P10).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum EffectOutcome {
    /// The effect took place.
    Applied,
    /// The key was seen before: the first result is returned and nothing is applied.
    Duplicate {
        /// The fence the key was first applied under.
        first_fence: Token,
    },
    /// The fence is lower than the highest one this receiver admitted for the entity.
    StaleFence {
        /// The receiver's highest admitted fence for the entity.
        mark: Token,
    },
    /// Commit-time authorization (P16): the receiver's policy refuses this concrete effect now,
    /// whoever holds the lease.
    Unauthorized,
}

/// Every message of the protocol. `req` numbers a worker's requests so it can match replies
/// and know the send time of the request an answer belongs to.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "type")]
pub enum Msg {
    /// Worker asks for a job (P3).
    Claim {
        /// Request number.
        req: u64,
        /// The claiming worker's logical name.
        worker: WorkerName,
        /// The worker's wall clock when it sent the request (informational; only a known-bad
        /// variant judges expiry by it, V5).
        client_now: Nanos,
    },
    /// Coordinator granted a lease.
    ClaimGranted {
        /// Request number.
        req: u64,
        /// The job.
        job: JobId,
        /// The new fencing token.
        token: Token,
        /// The lease length the coordinator applied (from the job's class, P7).
        lease_ns: Nanos,
        /// The job's class (tells the worker its work plan).
        class: ClassId,
        /// The last persisted checkpoint: the plan step after which work resumes (P17).
        checkpoint: Option<u8>,
    },
    /// No job can be claimed now.
    ClaimEmpty {
        /// Request number.
        req: u64,
    },
    /// Conditional lease extension (P4).
    Heartbeat {
        /// Request number.
        req: u64,
        /// The job.
        job: JobId,
        /// The holder.
        worker: WorkerName,
        /// The holder's token.
        token: Token,
        /// The worker's wall clock when it sent the request (see [`Msg::Claim`]).
        client_now: Nanos,
        /// The holder's certainty as it reports it (P2): whether it is in jeopardy.
        in_jeopardy: bool,
        /// Effects the holder has attempted under this lease so far (P2).
        effects_attempted: u16,
    },
    /// The lease was extended by `lease_ns` from the coordinator's now.
    HeartbeatOk {
        /// Request number.
        req: u64,
        /// The job.
        job: JobId,
        /// The token.
        token: Token,
        /// The lease length applied.
        lease_ns: Nanos,
    },
    /// "No row": the lease is lost (P4, P12 a).
    HeartbeatRejected {
        /// Request number.
        req: u64,
        /// The job.
        job: JobId,
        /// The token that was refused.
        token: Token,
    },
    /// Conditional final commit (P8).
    Commit {
        /// Request number.
        req: u64,
        /// The job.
        job: JobId,
        /// The holder.
        worker: WorkerName,
        /// The holder's token.
        token: Token,
        /// What the worker reports.
        outcome: Outcome,
        /// The worker's wall clock when it sent the request (see [`Msg::Claim`]).
        client_now: Nanos,
    },
    /// The commit was applied.
    CommitAccepted {
        /// Request number.
        req: u64,
        /// The job.
        job: JobId,
        /// The token.
        token: Token,
    },
    /// The commit was refused and journaled, never applied (P8).
    CommitRejected {
        /// Request number.
        req: u64,
        /// The job.
        job: JobId,
        /// The token.
        token: Token,
    },
    /// A call to an external tool.
    ToolRequest {
        /// Request number (also the external request id).
        req: u64,
        /// The job.
        job: JobId,
        /// The caller's token.
        token: Token,
        /// Which step of the job's plan.
        step: u8,
    },
    /// The tool's answer, possibly late (F3, F7); also its answer to a status query.
    ToolResponse {
        /// Request number it answers.
        req: u64,
        /// The job.
        job: JobId,
        /// The step.
        step: u8,
        /// The answer.
        answer: ToolAnswer,
    },
    /// A side effect carrying the fence and a stable idempotency key (P9, P10).
    Effect {
        /// Request number.
        req: u64,
        /// The job.
        job: JobId,
        /// The entity the effect changes.
        entity: EntityId,
        /// The idempotency key.
        key: IdemKey,
        /// The fencing token (X-Execution-Fence).
        fence: Token,
    },
    /// The holder persists a stage's result (P17): conditional, like a commit.
    Checkpoint {
        /// Request number.
        req: u64,
        /// The job.
        job: JobId,
        /// The holder.
        worker: WorkerName,
        /// The holder's token.
        token: Token,
        /// The plan step that ends the stage.
        step: u8,
    },
    /// The coordinator's answer to a checkpoint.
    CheckpointAck {
        /// Request number.
        req: u64,
        /// The job.
        job: JobId,
        /// The token.
        token: Token,
        /// Whether it was persisted (refused for a holder that lost its lease).
        saved: bool,
    },
    /// A status query to a receiver: did this key take effect? (P12 c, P17 reconciliation)
    EffectStatus {
        /// Request number.
        req: u64,
        /// The job.
        job: JobId,
        /// The key.
        key: IdemKey,
        /// The asker's fence: a successor's first contact already fences off its predecessor
        /// (P9), even when that contact is a question.
        fence: Token,
    },
    /// The receiver's answer to a status query.
    EffectStatusReply {
        /// Request number.
        req: u64,
        /// The job.
        job: JobId,
        /// The key.
        key: IdemKey,
        /// What the receiver knows.
        status: EffectStatus,
    },
    /// A status query to the tool about an earlier request whose answer never came (P12 c).
    ToolStatus {
        /// Request number of the query.
        req: u64,
        /// The job.
        job: JobId,
        /// The earlier request asked about.
        request: u64,
        /// Its plan step.
        step: u8,
    },
    /// An operator's action (F8), sent to the coordinator.
    Operator {
        /// Request number.
        req: u64,
        /// The job.
        job: JobId,
        /// What to do.
        action: OperatorAction,
    },
    /// The coordinator's answer to an operator.
    OperatorDone {
        /// Request number.
        req: u64,
        /// The job.
        job: JobId,
        /// Whether the action applied (a finished job cannot be revoked).
        applied: bool,
    },
    /// The receiver's answer to an effect.
    EffectAck {
        /// Request number it answers.
        req: u64,
        /// The job.
        job: JobId,
        /// The key.
        key: IdemKey,
        /// What happened.
        outcome: EffectOutcome,
    },
}

impl Msg {
    /// The request id it carries: a request's own, or, on a reply, the request's it answers.
    pub fn req(&self) -> u64 {
        match *self {
            Msg::Claim { req, .. }
            | Msg::ClaimGranted { req, .. }
            | Msg::ClaimEmpty { req }
            | Msg::Heartbeat { req, .. }
            | Msg::HeartbeatOk { req, .. }
            | Msg::HeartbeatRejected { req, .. }
            | Msg::Commit { req, .. }
            | Msg::CommitAccepted { req, .. }
            | Msg::CommitRejected { req, .. }
            | Msg::ToolRequest { req, .. }
            | Msg::ToolResponse { req, .. }
            | Msg::Effect { req, .. }
            | Msg::EffectAck { req, .. }
            | Msg::Operator { req, .. }
            | Msg::OperatorDone { req, .. }
            | Msg::Checkpoint { req, .. }
            | Msg::CheckpointAck { req, .. }
            | Msg::EffectStatus { req, .. }
            | Msg::EffectStatusReply { req, .. }
            | Msg::ToolStatus { req, .. } => req,
        }
    }

    /// A short name of the message kind, for timelines and fault patterns.
    pub fn kind(&self) -> MsgKind {
        match self {
            Msg::Claim { .. } => MsgKind::Claim,
            Msg::ClaimGranted { .. } => MsgKind::ClaimGranted,
            Msg::ClaimEmpty { .. } => MsgKind::ClaimEmpty,
            Msg::Heartbeat { .. } => MsgKind::Heartbeat,
            Msg::HeartbeatOk { .. } => MsgKind::HeartbeatOk,
            Msg::HeartbeatRejected { .. } => MsgKind::HeartbeatRejected,
            Msg::Commit { .. } => MsgKind::Commit,
            Msg::CommitAccepted { .. } => MsgKind::CommitAccepted,
            Msg::CommitRejected { .. } => MsgKind::CommitRejected,
            Msg::ToolRequest { .. } => MsgKind::ToolRequest,
            Msg::ToolResponse { .. } => MsgKind::ToolResponse,
            Msg::Effect { .. } => MsgKind::Effect,
            Msg::EffectAck { .. } => MsgKind::EffectAck,
            Msg::Operator { .. } => MsgKind::Operator,
            Msg::OperatorDone { .. } => MsgKind::OperatorDone,
            Msg::Checkpoint { .. } => MsgKind::Checkpoint,
            Msg::CheckpointAck { .. } => MsgKind::CheckpointAck,
            Msg::EffectStatus { .. } => MsgKind::EffectStatus,
            Msg::EffectStatusReply { .. } => MsgKind::EffectStatusReply,
            Msg::ToolStatus { .. } => MsgKind::ToolStatus,
        }
    }

    /// The fencing token the message carries, if any.
    pub fn token(&self) -> Option<Token> {
        match *self {
            Msg::ClaimGranted { token, .. }
            | Msg::Heartbeat { token, .. }
            | Msg::HeartbeatOk { token, .. }
            | Msg::HeartbeatRejected { token, .. }
            | Msg::Commit { token, .. }
            | Msg::CommitAccepted { token, .. }
            | Msg::CommitRejected { token, .. }
            | Msg::Checkpoint { token, .. }
            | Msg::CheckpointAck { token, .. }
            | Msg::ToolRequest { token, .. } => Some(token),
            Msg::Effect { fence, .. } | Msg::EffectStatus { fence, .. } => Some(fence),
            _ => None,
        }
    }

    /// The job the message is about, if any.
    pub fn job(&self) -> Option<JobId> {
        match *self {
            Msg::Claim { .. } | Msg::ClaimEmpty { .. } => None,
            Msg::ClaimGranted { job, .. }
            | Msg::Heartbeat { job, .. }
            | Msg::HeartbeatOk { job, .. }
            | Msg::HeartbeatRejected { job, .. }
            | Msg::Commit { job, .. }
            | Msg::CommitAccepted { job, .. }
            | Msg::CommitRejected { job, .. }
            | Msg::ToolRequest { job, .. }
            | Msg::ToolResponse { job, .. }
            | Msg::Effect { job, .. }
            | Msg::EffectAck { job, .. }
            | Msg::Operator { job, .. }
            | Msg::OperatorDone { job, .. }
            | Msg::Checkpoint { job, .. }
            | Msg::CheckpointAck { job, .. }
            | Msg::EffectStatus { job, .. }
            | Msg::EffectStatusReply { job, .. }
            | Msg::ToolStatus { job, .. } => Some(job),
        }
    }
}

/// The kind of a message, without its fields.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MsgKind {
    /// [`Msg::Claim`]
    Claim,
    /// [`Msg::ClaimGranted`]
    ClaimGranted,
    /// [`Msg::ClaimEmpty`]
    ClaimEmpty,
    /// [`Msg::Heartbeat`]
    Heartbeat,
    /// [`Msg::HeartbeatOk`]
    HeartbeatOk,
    /// [`Msg::HeartbeatRejected`]
    HeartbeatRejected,
    /// [`Msg::Commit`]
    Commit,
    /// [`Msg::CommitAccepted`]
    CommitAccepted,
    /// [`Msg::CommitRejected`]
    CommitRejected,
    /// [`Msg::ToolRequest`]
    ToolRequest,
    /// [`Msg::ToolResponse`]
    ToolResponse,
    /// [`Msg::Effect`]
    Effect,
    /// [`Msg::EffectAck`]
    EffectAck,
    /// [`Msg::Operator`]
    Operator,
    /// [`Msg::OperatorDone`]
    OperatorDone,
    /// [`Msg::Checkpoint`]
    Checkpoint,
    /// [`Msg::CheckpointAck`]
    CheckpointAck,
    /// [`Msg::EffectStatus`]
    EffectStatus,
    /// [`Msg::EffectStatusReply`]
    EffectStatusReply,
    /// [`Msg::ToolStatus`]
    ToolStatus,
}

/// Why the coordinator refused a heartbeat or a commit: the failed condition of P4 / P8.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RefusalReason {
    /// The job is not `running` (it finished, failed or was cancelled).
    NotRunning,
    /// Another worker owns the job.
    NotOwner,
    /// The owner's name matches but the token does not (a newer grant exists).
    StaleToken,
    /// The lease expired by the coordinator's clock.
    Expired,
    /// The job reached its cap on total renewal from the first claim (P7).
    RenewalCap,
    /// The lease store aborted the transaction that would have decided (a deadlock or a
    /// serialization failure): nothing changed.
    Aborted,
}

/// Terminal and non-terminal job states (P1).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum JobState {
    /// Waiting for a worker; no lease.
    Queued,
    /// A worker holds or held a lease; `running` with an expired lease is normal and brief.
    Running,
    /// Accepted result.
    Succeeded,
    /// Terminal failure.
    Failed,
    /// Cancelled by an operator.
    Cancelled,
}

impl JobState {
    /// Whether no further work will happen on the job.
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            JobState::Succeeded | JobState::Failed | JobState::Cancelled
        )
    }
}

/// The journal: what each machine reports it did, with the ids an investigator needs (P13, P18).
/// These are the events the invariant checkers read; they never carry payload text.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum Event {
    // ---- coordinator ----
    /// A lease was granted (P3). `lease_until` is on the coordinator's clock.
    LeaseGranted {
        /// The job.
        job: JobId,
        /// The new holder.
        holder: WorkerName,
        /// The new token (epoch).
        token: Token,
        /// Attempt number after the claim.
        attempt: u32,
        /// Expiry on the coordinator's clock.
        lease_until: Nanos,
        /// The token of the lease this grant takes over, if any.
        took_over: Option<Token>,
        /// Why it was granted (P15).
        reason: GrantReason,
    },
    /// A stage's result was persisted (P17); the next stage gets a fresh lease and cap.
    CheckpointSaved {
        /// The job.
        job: JobId,
        /// The holder.
        worker: WorkerName,
        /// The holder's token.
        token: Token,
        /// The plan step that ends the stage.
        step: u8,
        /// The fresh lease's expiry on the coordinator's clock.
        lease_until: Nanos,
    },
    /// Admission (P16): a queued job could not start because its class is at capacity.
    AdmissionDeferred {
        /// The job.
        job: JobId,
        /// Jobs of its class running now.
        running: u32,
        /// The class's capacity.
        capacity: u32,
    },
    /// A failed attempt was re-queued after a backoff (P11).
    RetryScheduled {
        /// The job.
        job: JobId,
        /// Attempts so far.
        attempt: u32,
        /// The earliest coordinator time of the next claim.
        not_before: Nanos,
    },
    /// A job ended for good with a failure (P11): why.
    JobFailed {
        /// The job.
        job: JobId,
        /// The error.
        error: ErrorCode,
        /// Attempts made.
        attempt: u32,
    },
    /// A job reached its class's cap on total lease time from its first claim (P7): it is
    /// failed, for this reason, and its lease ends.
    RenewalCapReached {
        /// The job.
        job: JobId,
        /// The token whose renewal was refused.
        token: Token,
        /// When the job was first claimed, on the coordinator's clock.
        first_claimed_at: Nanos,
    },
    /// An operator ended a lease (F8, P15): a new epoch, a recorded reason and actor.
    LeaseRevoked {
        /// The job.
        job: JobId,
        /// The holder whose lease ended, if any.
        holder: Option<WorkerName>,
        /// The token that ended.
        token: Token,
        /// The new epoch (higher): the old holder's token is now stale everywhere.
        epoch: Token,
        /// The action.
        action: OperatorAction,
    },
    /// A lease was extended (P4). Carries the request as sent so the checker can judge it.
    LeaseRenewed {
        /// The job.
        job: JobId,
        /// Who asked.
        worker: WorkerName,
        /// The token in the request.
        token: Token,
        /// The new expiry on the coordinator's clock.
        lease_until: Nanos,
    },
    /// A heartbeat was refused: "no row" (P4).
    HeartbeatRefused {
        /// The job.
        job: JobId,
        /// Who asked.
        worker: WorkerName,
        /// The token in the request.
        token: Token,
        /// The failed condition.
        reason: RefusalReason,
    },
    /// A result was accepted (P8).
    ResultAccepted {
        /// The job.
        job: JobId,
        /// Who committed.
        worker: WorkerName,
        /// The token in the commit.
        token: Token,
        /// The job's state after the commit.
        state: JobState,
    },
    /// A result was refused and kept in the technical journal only (P8).
    ResultRejected {
        /// The job.
        job: JobId,
        /// Who committed.
        worker: WorkerName,
        /// The token in the commit.
        token: Token,
        /// The failed condition.
        reason: RefusalReason,
        /// Hash of the refused result (never its text).
        result_hash: u64,
    },
    // ---- worker ----
    /// The worker received a grant.
    JobClaimed {
        /// The job.
        job: JobId,
        /// The token.
        token: Token,
        /// The worker's conservative local deadline.
        deadline: Nanos,
    },
    /// A renewal was acknowledged; the deadline moved.
    HeartbeatOk {
        /// The job.
        job: JobId,
        /// The token.
        token: Token,
        /// The new conservative local deadline.
        deadline: Nanos,
    },
    /// The coordinator said "no row": the lease is lost (P12 a).
    HeartbeatLost {
        /// The job.
        job: JobId,
        /// The token.
        token: Token,
    },
    /// The worker could not confirm its lease before its conservative deadline (P13).
    JeopardyEntered {
        /// The job.
        job: JobId,
        /// The token.
        token: Token,
        /// The local send time of the last acknowledged renewal.
        last_confirmed: Nanos,
        /// The external request in flight, if any.
        request: Option<u64>,
    },
    /// A renewal arrived in time and the worker left jeopardy.
    JeopardyExited {
        /// The job.
        job: JobId,
        /// The token.
        token: Token,
    },
    /// The worker started an external tool call.
    ToolRequestStarted {
        /// The job.
        job: JobId,
        /// The token.
        token: Token,
        /// The external request id.
        request: u64,
        /// The step.
        step: u8,
    },
    /// The tool answered.
    ToolAnswered {
        /// The job.
        job: JobId,
        /// The token of the attempt that asked.
        token: Token,
        /// The external request id.
        request: u64,
        /// Whether it succeeded.
        success: bool,
    },
    /// The stage deadline passed (P14): the attempt stops with a failure, heartbeat or not.
    StageDeadlineExceeded {
        /// The job.
        job: JobId,
        /// The token.
        token: Token,
    },
    /// A tool fault happened on a call (F7), as the tool saw it.
    ToolFaulted {
        /// The job.
        job: JobId,
        /// The external request id.
        request: u64,
        /// What went wrong.
        fault: ToolFaultKind,
    },
    /// An operator acted (F8).
    OperatorActed {
        /// The job.
        job: JobId,
        /// What it did.
        action: OperatorAction,
    },
    /// The tool did not answer within the client timeout (P12 c).
    ToolTimedOut {
        /// The job.
        job: JobId,
        /// The token.
        token: Token,
        /// The external request id.
        request: u64,
    },
    /// The worker started a side effect. `in_jeopardy` and `lost` are the worker's own belief
    /// at that moment; the checker judges them against the coordinator (I5).
    EffectStarted {
        /// The job.
        job: JobId,
        /// The token (the fence).
        token: Token,
        /// Which receiver (index).
        receiver: u8,
        /// The entity.
        entity: EntityId,
        /// The key.
        key: IdemKey,
        /// Whether the worker believed itself in jeopardy.
        in_jeopardy: bool,
    },
    /// A successor checked an effect of its predecessor before going on (P17).
    EffectReconciled {
        /// The job.
        job: JobId,
        /// The token of the attempt that checked.
        token: Token,
        /// The key.
        key: IdemKey,
        /// What the receiver said.
        status: EffectStatus,
    },
    /// The worker asked the tool about a call whose answer never came (P12 c).
    ToolStatusQueried {
        /// The job.
        job: JobId,
        /// The token.
        token: Token,
        /// The call asked about.
        request: u64,
    },
    /// A partial effect cannot be reconciled; the job goes to a human (P17).
    HumanReviewRequested {
        /// The job.
        job: JobId,
        /// The token.
        token: Token,
        /// The effect in doubt.
        key: IdemKey,
    },
    /// The receiver answered an effect.
    EffectAnswered {
        /// The job.
        job: JobId,
        /// The token.
        token: Token,
        /// The key.
        key: IdemKey,
        /// The answer.
        outcome: EffectOutcome,
    },
    /// The worker asked for its conditional commit.
    CommitSent {
        /// The job.
        job: JobId,
        /// The token.
        token: Token,
        /// What it reported.
        outcome: Outcome,
        /// Whether it believed itself in jeopardy (a conditional commit is still allowed: the
        /// coordinator arbitrates it).
        in_jeopardy: bool,
    },
    /// The worker learned its result was accepted; only now may it claim success (P13).
    SuccessClaimed {
        /// The job.
        job: JobId,
        /// The token.
        token: Token,
    },
    /// The worker learned its reported failure was accepted (the job is re-queued or failed).
    FailureAcknowledged {
        /// The job.
        job: JobId,
        /// The token.
        token: Token,
    },
    /// The worker learned its result was rejected; it keeps it for investigation only.
    CommitRefused {
        /// The job.
        job: JobId,
        /// The token.
        token: Token,
    },
    /// The worker gave up asking for its commit (bounded retries); outcome unknown.
    CommitAbandoned {
        /// The job.
        job: JobId,
        /// The token.
        token: Token,
    },
    // ---- receiver ----
    /// An effect took place at the receiver.
    EffectApplied {
        /// The entity.
        entity: EntityId,
        /// The key.
        key: IdemKey,
        /// The fence it carried.
        fence: Token,
    },
    /// A repeated key: the first result was returned, nothing applied (P10).
    EffectDuplicate {
        /// The entity.
        entity: EntityId,
        /// The key.
        key: IdemKey,
        /// The fence it carried.
        fence: Token,
    },
    /// Commit-time authorization refused a concrete effect (P16).
    EffectUnauthorized {
        /// The entity.
        entity: EntityId,
        /// The key.
        key: IdemKey,
        /// The fence it carried (a valid holder's).
        fence: Token,
    },
    /// A lower fence was refused (P9).
    EffectFenced {
        /// The entity.
        entity: EntityId,
        /// The key.
        key: IdemKey,
        /// The fence it carried.
        fence: Token,
        /// The highest fence admitted for the entity.
        mark: Token,
    },
    /// A lease store's own report of its work (a statement ran, waited, failed, or ran one
    /// step on a connection): see [`leasesim_store`]. Never read by the protocol's machines
    /// nor judged by an invariant. Last of the variants, so the stable hash of every trace
    /// without one stays as it was; written in a journal under the store event's own name.
    #[serde(untagged)]
    Store(StoreEvent),
}

impl Event {
    /// The journal name of the event (`job_claimed`, `heartbeat_lost`, ...).
    pub fn name(&self) -> &'static str {
        match self {
            Event::LeaseGranted { .. } => "lease_granted",
            Event::LeaseRenewed { .. } => "lease_renewed",
            Event::LeaseRevoked { .. } => "lease_revoked",
            Event::RenewalCapReached { .. } => "renewal_cap_reached",
            Event::CheckpointSaved { .. } => "checkpoint_saved",
            Event::AdmissionDeferred { .. } => "admission_deferred",
            Event::RetryScheduled { .. } => "retry_scheduled",
            Event::JobFailed { .. } => "job_failed",
            Event::EffectReconciled { .. } => "effect_reconciled",
            Event::ToolStatusQueried { .. } => "tool_status_queried",
            Event::HumanReviewRequested { .. } => "human_review_requested",
            Event::EffectUnauthorized { .. } => "effect_unauthorized",
            Event::StageDeadlineExceeded { .. } => "stage_deadline_exceeded",
            Event::ToolFaulted { .. } => "tool_faulted",
            Event::OperatorActed { .. } => "operator_acted",
            Event::HeartbeatRefused { .. } => "heartbeat_refused",
            Event::ResultAccepted { .. } => "result_accepted",
            Event::ResultRejected { .. } => "result_rejected",
            Event::Store(e) => e.name(),
            Event::JobClaimed { .. } => "job_claimed",
            Event::HeartbeatOk { .. } => "heartbeat_ok",
            Event::HeartbeatLost { .. } => "heartbeat_lost",
            Event::JeopardyEntered { .. } => "jeopardy_entered",
            Event::JeopardyExited { .. } => "jeopardy_exited",
            Event::ToolRequestStarted { .. } => "tool_request_started",
            Event::ToolAnswered { .. } => "tool_answered",
            Event::ToolTimedOut { .. } => "tool_timed_out",
            Event::EffectStarted { .. } => "effect_started",
            Event::EffectAnswered { .. } => "effect_answered",
            Event::CommitSent { .. } => "commit_sent",
            Event::SuccessClaimed { .. } => "success_claimed",
            Event::FailureAcknowledged { .. } => "failure_acknowledged",
            Event::CommitRefused { .. } => "commit_refused",
            Event::CommitAbandoned { .. } => "commit_abandoned",
            Event::EffectApplied { .. } => "effect_applied",
            Event::EffectDuplicate { .. } => "effect_duplicate",
            Event::EffectFenced { .. } => "effect_fenced",
        }
    }
}

/// Where a machine sends a message; the adapter maps these to simulator nodes.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Peer {
    /// The coordinator.
    Coordinator,
    /// The tool service.
    Tool,
    /// An effect receiver, by index.
    Receiver(u8),
    /// The host address a request came from (replies go back to the sender, whatever its
    /// logical name: two processes may share one name after a restart).
    Addr(u32),
}

/// What a machine asks its host to do. Drained with `poll_output` until empty (sans-IO).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Output {
    /// Send a message.
    Send {
        /// Destination.
        to: Peer,
        /// The message.
        msg: Msg,
    },
    /// Record a journal event.
    Journal(Event),
}
