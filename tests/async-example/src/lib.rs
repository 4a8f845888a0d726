//! # An async lease worker, as it is, on leasesim
//!
//! This package is a lease worker written the way an agent platform's team writes one: async
//! Rust on tokio. For each job it spawns a heartbeat task beside the work, waits for each tool
//! call in a `select!` against the lease-lost signal, bounds every request with a `timeout`,
//! sends every effect with its idempotency key and fencing token, and stops acting when it can
//! no longer be sure of its lease (jeopardy). It reaches its lease store, its tool and its
//! effect receivers through a trait of its own, [`store::LeaseStore`].
//!
//! ## The same source, two builds
//!
//! In production (the default feature) `tokio` is real tokio. In the tests
//! (`--no-default-features --features sim`) the crate root renames `leasesim_tokio` to
//! `tokio`, so [`worker`] compiles unchanged against leasesim's simulator, each node on its
//! own clock, and `sim` implements the store trait over leasesim's simulated network
//! (`leasesim_async::WorkerIo`). Nothing else changes.
//!
//! ## Two bugs, behind a switch
//!
//! [`worker::Bug::RenewOnToolTask`] renews the lease on the tool call's own task, between
//! steps: a long tool call starves the renewals (SPEC V8, in async form).
//! [`worker::Bug::DeadlineWithoutDrift`] computes its deadline from `Instant` as
//! `sent + lease - margin`, trusting its own clock's rate: only a clock that drifts shows it.
//! Both are caught by the default sweep (`tests/sweep.rs`), with the seed and the command that
//! reruns it.

#[cfg(feature = "sim")]
extern crate leasesim_tokio as tokio;

#[cfg(feature = "sim")]
pub mod sim;
pub mod store;
pub mod worker;
