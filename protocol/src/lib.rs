//! The lease protocol as sans-IO state machines (SPEC P1-P18): a coordinator with the job table
//! and lease records, workers, effect receivers and a tool.
//!
//! Every input carries the handling node's local `now`; every output is plain data drained with
//! `poll_output` (send a message, write a journal event) and the next wake-up is read with
//! `poll_timeout`. Architecture invariant: this crate reads no clock, draws no random number,
//! spawns no thread, does no I/O and depends on no other crate of the workspace but
//! `leasesim-sorted`, its internal sorted-vector map and set, and `leasesim-store`, the events
//! a lease store reports of its own work (carried as `Event::Store`); both depend on nothing.

pub mod coordinator;
pub mod invariant;
pub mod machine;
mod outbox;
pub mod receiver;
pub mod timing;
pub mod tool;
pub mod types;
pub mod variant;
pub mod worker;

pub use coordinator::{ClassSpec, Coordinator, JobRow, JobSpec, LeaseRecord};
pub use invariant::{Finding, Invariant};
pub use machine::{CoordinatorMachine, ReceiverMachine, WorkerMachine};
pub use receiver::Receiver;
pub use tool::{Tool, ToolCall};
pub use types::*;
pub use variant::{Switches, Variant};
pub use worker::{Plan, Step, Worker, WorkerConfig};
