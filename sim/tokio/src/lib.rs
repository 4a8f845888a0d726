//! tokio's API on leasesim's simulator, each node on its own clock.
//!
//! A lease client written as ordinary async Rust (a heartbeat task spawned beside the tool
//! call, `sleep`, `timeout`, `interval`, `select!` between the tool's answer and a lost-lease
//! signal, channels between tasks) builds against real tokio in production and against this
//! crate in tests, by renaming the dependency (see the guide's chapter "Your async worker").
//! Under test, every node runs its tasks on an [`Executor`] of its own, driven by the
//! simulator through the node's inputs, each of which carries the node's local time:
//!
//! - [`time::Instant::now`] is the node's local clock, with the offset, drift, steps and
//!   pauses the fault plan gave it; [`time::sleep`], [`time::timeout`] and [`time::interval`]
//!   fire when that clock reaches their deadline. A paused node runs nothing while true time
//!   goes on; its timers are late when it resumes, as a GC pause makes them.
//! - [`spawn`] adds a task to the node; a crash drops every task and timer of it
//!   ([`Executor::clear`]).
//! - [`sync`] is tokio's own channels, locks and [`sync::Notify`]: they need no runtime.
//! - [`select!`] polls its branches in the order they are written, as tokio's does with
//!   `biased;` (tokio's random start is drawn from the operating system; here the order is the
//!   program's, so that a run repeats).
//!
//! What is not simulated: the standard library's clocks (its `Instant` and `SystemTime`),
//! threads, real sockets and blocking calls. A task that reads the machine's clock or sleeps a
//! thread gets the real machine's time, and its run is no longer a function of its seed.
//!
//! Architecture invariant: the executor reads no clock and draws no random number; the order in
//! which it polls tasks is the order they were woken, so the same inputs give the same polls.

mod executor;
pub mod task;
pub mod time;

pub use executor::{Executor, Runaway, POLLS_PER_INPUT_MAX};
pub use task::spawn;

/// tokio's channels, locks and notifications, which need no runtime.
pub mod sync {
    pub use real_tokio::sync::*;
}

/// Waits on several branches at once and runs the first that completes, as `tokio::select!`
/// does; branches are polled in the order they are written (tokio's `biased;`), so that the
/// same inputs take the same branch.
#[macro_export]
macro_rules! select {
    (biased; $($t:tt)*) => {
        $crate::__private::tokio::select! { biased; $($t)* }
    };
    ($($t:tt)*) => {
        $crate::__private::tokio::select! { biased; $($t)* }
    };
}

/// Runs several futures at once on the calling task, as `tokio::join!` does.
#[macro_export]
macro_rules! join {
    ($($t:tt)*) => {
        $crate::__private::tokio::join! { $($t)* }
    };
}

/// What the macros expand to; not an API.
#[doc(hidden)]
pub mod __private {
    pub use real_tokio as tokio;
}
