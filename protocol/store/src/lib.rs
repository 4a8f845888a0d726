//! What a lease store reports of its own work, beside the protocol's journal: which statement
//! of its contract decided and how many rows it touched, each step it ran on a connection, a
//! wait on a lock another connection held, a transaction the store aborted. A SQL coordinator
//! journals these; any store that runs its contract in steps can.
//!
//! The protocol's machines never read these events and the invariants are never judged from
//! them: they are what the timeline draws as transactions, what a journal line names as its
//! statement, and what the store's own hazards (a lock wait, an abort) are counted from. The
//! protocol's `Event` carries one as `Event::Store`, under the journal names below.
//!
//! Architecture invariant: like the protocol crate, this one reads no clock, does no I/O and
//! depends on no crate of the workspace.

use serde::{Deserialize, Serialize};
use std::fmt;

/// Simulated nanoseconds, as the protocol counts them.
pub type Nanos = u64;

/// One report of a store's work. The order of the variants is part of the stable trace hash.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum StoreEvent {
    /// A statement decided (journaled before the decision it made): which statement, and how
    /// many rows it returned or changed.
    #[serde(rename = "statement_ran")]
    Ran {
        /// The statement of the store's contract.
        statement: StoreStatement,
        /// Its row count (`0` from `heartbeat` is a refusal).
        rows: u32,
    },
    /// A step of a statement waited on a lock another connection held, for `waited` simulated
    /// nanoseconds (journaled when it went on).
    #[serde(rename = "statement_waited")]
    Waited {
        /// The statement of the store's contract.
        statement: StoreStatement,
        /// Its step (0-based) among the statement's steps.
        step: u8,
        /// How long it waited.
        waited: Nanos,
    },
    /// The store aborted a statement's transaction: the decision it would have made is a
    /// refusal, and nothing changed.
    #[serde(rename = "statement_failed")]
    Failed {
        /// The statement of the store's contract.
        statement: StoreStatement,
        /// Its step (0-based) among the statement's steps.
        step: u8,
        /// Why.
        failure: StoreFailure,
    },
    /// One step of a statement ran on a connection: sent at `issued`, done at the event's
    /// time, so a timeline draws each transaction as a bar on its connection's row.
    #[serde(rename = "step_ran")]
    Step {
        /// The statement of the store's contract.
        statement: StoreStatement,
        /// This step (0-based).
        step: u8,
        /// How many steps the statement has.
        steps: u8,
        /// Whose connection ran it.
        connection: Connection,
        /// When it was sent, on the coordinator's clock.
        issued: Nanos,
    },
}

impl StoreEvent {
    /// The journal name of the event (`statement_ran`, `step_ran`, ...).
    pub fn name(&self) -> &'static str {
        match self {
            StoreEvent::Ran { .. } => "statement_ran",
            StoreEvent::Waited { .. } => "statement_waited",
            StoreEvent::Failed { .. } => "statement_failed",
            StoreEvent::Step { .. } => "step_ran",
        }
    }

    /// The statement it is about.
    pub fn statement(&self) -> StoreStatement {
        match *self {
            StoreEvent::Ran { statement, .. }
            | StoreEvent::Waited { statement, .. }
            | StoreEvent::Failed { statement, .. }
            | StoreEvent::Step { statement, .. } => statement,
        }
    }
}

/// Whose connection to the store ran a step.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Connection {
    /// The connection serving the worker of this number (the protocol's `W<n>`).
    Worker(u32),
    /// The operator's connection (admission, takeover, revoke, cancel).
    Operator,
}

impl fmt::Display for Connection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Connection::Worker(n) => write!(f, "W{n}"),
            Connection::Operator => f.write_str("operator"),
        }
    }
}

/// Why a lease store aborted a transaction.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StoreFailure {
    /// Two transactions waited for each other (SQLSTATE 40P01); this one was chosen to end.
    Deadlock,
    /// The isolation level could not order it with a concurrent one (SQLSTATE 40001).
    Serialization,
}

impl StoreFailure {
    /// In words.
    pub fn describe(self) -> &'static str {
        match self {
            StoreFailure::Deadlock => "deadlock",
            StoreFailure::Serialization => "serialization failure",
        }
    }
}
/// The named statements of a lease store's contract (a SQL file's `-- name:` statements).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StoreStatement {
    /// Adds a job.
    Enqueue,
    /// Grants a job to a worker.
    Claim,
    /// Renews a holder's lease.
    Heartbeat,
    /// Accepts a holder's success.
    Commit,
    /// Accepts a holder's failure.
    Fail,
    /// An operator revokes a lease.
    Revoke,
    /// An operator hands a job to another worker.
    Takeover,
    /// An operator cancels a job.
    Cancel,
    /// Persists a stage.
    Checkpoint,
    /// Reads a job's row.
    Status,
}

impl StoreStatement {
    /// Its name in the file (`claim`, `heartbeat`, ...).
    pub fn name(self) -> &'static str {
        match self {
            StoreStatement::Enqueue => "enqueue",
            StoreStatement::Claim => "claim",
            StoreStatement::Heartbeat => "heartbeat",
            StoreStatement::Commit => "commit",
            StoreStatement::Fail => "fail",
            StoreStatement::Revoke => "revoke",
            StoreStatement::Takeover => "takeover",
            StoreStatement::Cancel => "cancel",
            StoreStatement::Checkpoint => "checkpoint",
            StoreStatement::Status => "status",
        }
    }
}
