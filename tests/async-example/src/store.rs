//! What the worker needs from the world, as its own trait: in production a client of the
//! team's lease store, tool service and payment receivers; under test, leasesim's network.

use std::future::Future;
use tokio::time::Instant;

/// A lease on a job.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Lease {
    /// The job.
    pub job: u32,
    /// The fencing token of this lease: every effect and the commit carry it.
    pub token: u64,
    /// How long the store grants it for, in nanoseconds (measured from when the request went out).
    pub lease_ns: u64,
    /// What the job asks for, in order.
    pub actions: Vec<Action>,
    /// Actions already done by an earlier holder (a saved stage), skipped.
    pub done: usize,
}

/// One action of a job.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Action {
    /// Call the tool for this step.
    CallTool {
        /// The step's place in the job.
        step: u8,
    },
    /// An effect on the job's entity at a receiver, under a stable key for the operation.
    Effect {
        /// The operation (its idempotency key is the job's and this).
        op: u32,
        /// Which receiver.
        receiver: u8,
    },
    /// Save progress (the end of a stage) under the lease.
    Save {
        /// The step's place in the job.
        step: u8,
    },
}

/// The tool's answer.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum ToolResult {
    /// It worked; a hash of the result.
    Ok(u64),
    /// It failed; whether trying again may help.
    Failed {
        /// Whether trying again may help.
        transient: bool,
    },
}

/// A receiver's answer to an effect.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum EffectResult {
    /// Applied, or already applied under this key.
    Done,
    /// Refused: a newer holder's token has been seen (the lease is gone).
    Fenced,
    /// Refused by the receiver's policy.
    Refused,
}

/// How the job ended, as the worker reports it.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Report {
    /// Done; a hash of the result.
    Success(u64),
    /// Failed; whether another attempt may succeed; whether it was the stage deadline.
    Failure {
        /// Whether another attempt may succeed.
        retryable: bool,
        /// Whether the stage deadline ended the work.
        deadline: bool,
        /// Whether a tool call went unanswered.
        tool_timeout: bool,
    },
}

/// The worker's timing, on its own clock.
#[derive(Clone, Debug)]
pub struct Settings {
    /// Renewal period.
    pub heartbeat_ns: u64,
    /// The clock rate error the worker allows for, in parts per million.
    pub drift_ppm: u32,
    /// The time it needs to stop acting.
    pub stop_margin_ns: u64,
    /// Bound on one tool call or effect.
    pub call_timeout_ns: u64,
    /// Bound on one job's work.
    pub stage_deadline_ns: u64,
    /// Pause between claims while there is no work.
    pub claim_poll_ns: u64,
    /// Wait for a commit's answer before asking again.
    pub commit_retry_ns: u64,
    /// Commit requests before giving up.
    pub commit_attempts: u32,
    /// Delay before the first claim.
    pub start_delay_ns: u64,
}

/// The worker's way to its lease store, tool and receivers. Every method's future is `Send`,
/// so that the heartbeat can run on a task of its own.
pub trait LeaseStore: Clone + Send + Sync + 'static {
    /// Asks for a job: a lease, or `None` when there is no work.
    fn claim(&self) -> impl Future<Output = Option<Lease>> + Send;
    /// Renews: the new lease length, or `None` when the store says the lease is gone.
    fn renew(
        &self,
        job: u32,
        token: u64,
        in_jeopardy: bool,
    ) -> impl Future<Output = Option<u64>> + Send;
    /// Reports the outcome under the lease: whether the store accepted it.
    fn commit(&self, job: u32, token: u64, report: Report) -> impl Future<Output = bool> + Send;
    /// Saves progress under the lease: whether it was saved.
    fn save(&self, job: u32, token: u64, step: u8) -> impl Future<Output = bool> + Send;
    /// Calls the tool.
    fn call_tool(&self, job: u32, token: u64, step: u8) -> impl Future<Output = ToolResult> + Send;
    /// Applies an effect with its idempotency key and fencing token.
    fn effect(
        &self,
        receiver: u8,
        job: u32,
        op: u32,
        token: u64,
    ) -> impl Future<Output = EffectResult> + Send;
    /// Notes what the worker believes (its deadline, jeopardy, a lost lease) for the record.
    fn note(&self, what: Note);
}

/// What the worker notes about its own beliefs.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Note {
    /// It took a lease and may act until `deadline` on its clock.
    Claimed {
        /// The job.
        job: u32,
        /// The lease's token.
        token: u64,
        /// The last instant it may act, on its clock.
        deadline: Instant,
    },
    /// A renewal moved its deadline.
    Renewed {
        /// The job.
        job: u32,
        /// The lease's token.
        token: u64,
        /// The last instant it may act, on its clock.
        deadline: Instant,
    },
    /// The store said the lease is gone.
    Lost {
        /// The job.
        job: u32,
        /// The lease's token.
        token: u64,
    },
    /// Its deadline passed with no renewal confirmed: it starts nothing until one is.
    JeopardyEntered {
        /// The job.
        job: u32,
        /// The lease's token.
        token: u64,
        /// When the last confirmed renewal (or the claim) was sent, on its clock.
        last_confirmed: Instant,
    },
    /// A renewal confirmed the lease again.
    JeopardyExited {
        /// The job.
        job: u32,
        /// The lease's token.
        token: u64,
    },
    /// It is about to send an effect.
    Acting {
        /// The job.
        job: u32,
        /// The lease's token (the effect's fence).
        token: u64,
        /// Which receiver.
        receiver: u8,
        /// The operation.
        op: u32,
    },
    /// It is about to send its report.
    Reporting {
        /// The job.
        job: u32,
        /// The lease's token.
        token: u64,
        /// The report.
        report: Report,
        /// Whether it sends it past its deadline (the store decides; it claims nothing).
        in_jeopardy: bool,
    },
    /// Its report was accepted.
    Accepted {
        /// The job.
        job: u32,
        /// The lease's token.
        token: u64,
        /// Whether it reported a success.
        success: bool,
    },
    /// Its report was refused.
    Refused {
        /// The job.
        job: u32,
        /// The lease's token.
        token: u64,
    },
    /// It stopped asking for its report's answer (no answer came in time, or its lease ran
    /// out meanwhile): whatever answers come later find it gone.
    Abandoned {
        /// The job.
        job: u32,
        /// The lease's token.
        token: u64,
    },
    /// It is done with the job, whatever became of it, and holds nothing.
    Idle,
}
