//! Async machines: a worker, a coordinator or an effect receiver written as ordinary async Rust
//! against tokio's API, run by leasesim as a machine on its simulator (servers: [`ServerIo`]).
//!
//! The worker's code is an async start function given a [`WorkerIo`], its node's way to the
//! world: requests to the coordinator, the tool and the receivers (each a protocol message that
//! the fault plan can drop, delay, duplicate or hold, and that the checkers judge), its journal,
//! and whether it holds a job. It spawns tasks, sleeps, times out and selects with
//! `leasesim_tokio` (the `tokio` of its tests): every task of a node runs on that node's own
//! clock, with its offset, drift, steps and pauses, and a crash drops them all; a restart runs
//! the start function again, with what the node wrote to its durable store
//! ([`WorkerIo::durable_put`], its local disk) kept.
//!
//! ```
//! use leasesim::Machines;
//! use leasesim_async::{AsyncMachines, WorkerIo};
//!
//! async fn idle(io: WorkerIo) {
//!     // A worker that asks for work once and never takes any.
//!     let _ = leasesim_tokio::time::timeout(
//!         leasesim_tokio::time::Duration::from_secs(1),
//!         io.claim(),
//!     )
//!     .await;
//! }
//!
//! let m = Machines::new("idle").with_async_worker("idle", idle);
//! assert_eq!(m.parts().worker, "idle");
//! ```
//!
//! How it runs: [`AsyncWorker`] is a sans-IO [`WorkerMachine`](leasesim_protocol::WorkerMachine) whose inputs drive a
//! [`leasesim_tokio::Executor`]: each input sets the node's clock, wakes the timers due by then,
//! delivers the message (to the request that waits for it) and polls the woken tasks until
//! none is left; the earliest armed timer is the machine's next wake-up. Since nothing runs
//! between inputs, the run stays a function of its seed.

mod server;
mod worker;

pub use server::{
    AsyncCoordinator, AsyncReceiver, CoordinatorSetup, ReceiverSetup, ServerIo, INBOX_MAX,
};
pub use worker::{
    AsyncWorker, ClaimReply, Grant, WorkerIo, DURABLE_BYTES_MAX, DURABLE_ENTRIES_MAX,
    REPLIES_KEPT_MAX,
};

use leasesim::Machines;
use std::future::Future;
use std::sync::Arc;

/// [`Machines`] that take async machines.
pub trait AsyncMachines {
    /// The same machines with this async worker, whose implementation is called `part`:
    /// `start` is its start function, run at every start and restart of each worker node.
    fn with_async_worker<F, Fut>(self, part: &str, start: F) -> Machines
    where
        F: Fn(WorkerIo) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static;

    /// The same machines with this async coordinator: `start` runs once per run, its tasks
    /// read the requests from [`ServerIo::recv`] and say when every job is terminal.
    fn with_async_coordinator<F, Fut>(self, part: &str, start: F) -> Machines
    where
        F: Fn(ServerIo, Arc<CoordinatorSetup>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static;

    /// The same machines with this async effect receiver: `start` runs once per run and
    /// receiver node.
    fn with_async_receiver<F, Fut>(self, part: &str, start: F) -> Machines
    where
        F: Fn(ServerIo, Arc<ReceiverSetup>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static;
}

impl AsyncMachines for Machines {
    fn with_async_worker<F, Fut>(self, part: &str, start: F) -> Machines
    where
        F: Fn(WorkerIo) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let start = worker::Start::new(start);
        self.with_worker(part, move |spec| {
            AsyncWorker::with_start(spec.config.clone(), start.clone())
        })
    }

    fn with_async_coordinator<F, Fut>(self, part: &str, start: F) -> Machines
    where
        F: Fn(ServerIo, Arc<CoordinatorSetup>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let start = server::start_server(start);
        self.with_coordinator(part, move |spec| {
            let setup = CoordinatorSetup {
                classes: spec.classes.to_vec(),
                jobs: spec.jobs.to_vec(),
                seed: spec.seed,
            };
            AsyncCoordinator::new(&start, setup)
        })
    }

    fn with_async_receiver<F, Fut>(self, part: &str, start: F) -> Machines
    where
        F: Fn(ServerIo, Arc<ReceiverSetup>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let start = server::start_server(start);
        self.with_receiver(part, move |spec| {
            let setup = ReceiverSetup {
                index: spec.index,
                supports_fence: spec.supports_fence,
                supports_status: spec.supports_status,
                refused_ops: spec.refused_ops.to_vec(),
            };
            AsyncReceiver::new(&start, setup)
        })
    }
}
