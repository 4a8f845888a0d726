//! leasesim: a deterministic simulation testbed for lease, heartbeat and fencing protocols.
//!
//! This crate is the library users depend on: a run's whole input as data ([`setup::Setup`]),
//! the fault catalogue and the director that carries a plan out ([`plan`]), the adapter from
//! protocol machines to simulator nodes ([`world`]), one run judged by the checkers ([`run`]),
//! many runs on every core ([`sweep()`]), replay files ([`replay`]), shrinking ([`shrink`]), the
//! variant matrix ([`matrix`]) and the catalogue of named scenarios ([`scenarios`]).
//!
//! Architecture invariant: no command-line, terminal, async-runtime or logging-subscriber
//! dependency (clap, indicatif, tokio, madsim, tracing-subscriber): those live in the `cli` and
//! `shell` crates beside it. The checkers judge traces only; the adapter reaches the machines
//! through small traits; scenarios are data built from a seed.

pub mod advise;
pub mod check;
pub mod machines;
pub mod matrix;
pub mod plan;
pub mod pool;
pub mod replay;
pub mod run;
pub mod scenarios;
pub mod setup;
pub mod shrink;
#[cfg(feature = "proptest")]
pub mod strategy;
pub mod sweep;
pub mod world;

pub use leasesim_checkers as checkers;
pub use leasesim_checkers::hazard;

// The surface most users need, at the top.
pub use leasesim_checkers::{Hazard, Hazards};
pub use leasesim_protocol::{Finding, Invariant, Variant};
pub use machines::Machines;
pub use plan::{Fault, FaultKind, MsgAction, MsgPattern, Trigger};
pub use replay::Replay;
pub use run::{reproduce_command, run, run_setup, RunResult, Verdict};
pub use scenarios::ScenarioDef;
pub use setup::Setup;
pub use sweep::{sweep, Failure, Observer, Quiet, SeedRange, SweepConfig, SweepReport};
