//! leasesim: a deterministic simulation testbed for lease, heartbeat and fencing protocols.
//!
//! This crate is the library users depend on. It runs a lease protocol — leasesim's reference,
//! one of its known-bad variants, or **your own coordinator, worker or effect receiver** — on a
//! simulated world with seeded faults (partitions, pauses, late and lost messages, clock skew,
//! crashes, coordinator outages, operator takeovers), and judges each run against the
//! invariants I1-I8: no stale commit, no double side effect, one valid lease, no stale
//! extension, a quiescent holder, nothing lost, liveness, recorded takeovers. A run is a pure
//! function of (seed, setup, machines): the same input gives the same trace, byte for byte.
//!
//! # Test your own implementation
//!
//! **1. Write the machine.** Implement the trait of its role from `leasesim_protocol`
//! (`WorkerMachine`, `CoordinatorMachine`, `ReceiverMachine`). Their module documentation is the
//! contract: call order, timers, addresses, what each role must journal and why, what is judged
//! from the network alone. The machine reads no clock, draws no random number, does no I/O.
//!
//! **2. Plug it in** as a factory that builds it from the node's configuration
//! ([`machines`]), in a named set, and give the set to the [`Builder`] with the scenarios and
//! the seeds. The factory returns the machine itself (no box, no cast); only the part it names
//! changes. Here the "user's" worker is the reference one, to keep the example short:
//!
//! ```
//! use leasesim::{Builder, Machines, Verdict};
//! use leasesim_protocol::{Variant, Worker};
//!
//! let mine = Machines::new("mine").with_worker("my-worker", |spec| {
//!     Worker::new(spec.config.clone(), Variant::Reference.switches())
//! });
//! let testbed = Builder::new().machines(mine).seeds(0..3).without("swarm");
//! // One seed of one scenario: the seed is given once, the variant comes from the machines.
//! let result = testbed.run("w1-w2", 7).unwrap();
//! assert_eq!(result.verdict(), Verdict::Held, "{:?}", result.findings);
//! ```
//!
//! **3. Sweep it in `cargo test`.** [`Builder::check`] runs every seed of every scenario on
//! every core, with hazard coverage; a failure saves the run under `target/leasesim-failures/`,
//! shrinks it, and prints the one command that reruns exactly it (`LEASESIM_REPLAY=<file>`, or
//! `LEASESIM_SEED=<scenario>:<seed>`; see [`check`]):
//!
//! ```
//! use leasesim::{Builder, Machines};
//!
//! let report = Builder::new()
//!     .machines(Machines::reference())
//!     .without("swarm")
//!     .seeds(0..3)
//!     .check();
//! assert_eq!(report.failing(), 0);
//! ```
//!
//! **4. Add scenarios of your own**: a closure, a [`scenarios::story::Story`], or a stock
//! scenario with a changed setup ([`ScenarioDef::with_setup`]); `.scenario(def)` adds it
//! beside the stock ones, and every action (and the command line) runs it like them. The
//! explorer ([`Builder::explore`]) places up to two faults at a run's protocol events; the
//! matrix ([`Builder::matrix`]) compares every machine set on every scenario.
//!
//! **5. Property-test it** over generated setups and fault plans with proptest
//! (`leasesim::strategy`, feature `proptest`), shrunk by proptest itself.
//!
//! **6. Keep and read counterexamples.** [`Replay`] files record the setup, the seed, the
//! scenario's name and your machines' names; [`shrink::shrink_on`] minimises a failing one;
//! [`report`] renders a run as a text timeline, an HTML page or Markdown for a design review.
//!
//! **7. Give yourself the command line.** `leasesim_cli::main_with(builder)` in a `src/bin/` of
//! your crate gives you every `leasesim` command (`run`, `sweep`, `replay`, `shrink`, `report`,
//! `matrix` comparing your implementations...) for your machines and scenarios.
//!
//! Beneath the builder, for finer control: [`run()`] (one setup, one seed, one machine set),
//! [`SweepConfig`] ([`Builder::sweep_config`] makes one to adjust), [`explore::ExploreConfig`]
//! and [`matrix::compare`].
//!
//! # Map
//!
//! The entry point ([`builder`]), a run's whole input as data ([`setup::Setup`]), the fault catalogue and the director that
//! carries a plan out ([`plan`]), the adapter from machines to simulator nodes ([`world`]),
//! machines as values ([`machines`]), one run judged by the checkers ([`run()`]), many runs on
//! every core ([`sweep()`]), sweeps as tests ([`check`]), every plan of up to two faults placed
//! at a run's protocol events ([`explore`]), replay files ([`replay`]), shrinking
//! ([`shrink`]), renderings ([`report`]), the matrix of implementations ([`matrix`]), the
//! catalogue of named scenarios ([`scenarios`]) and the writing of every file it leaves, whole
//! and through no link ([`files`]).
//!
//! Architecture invariant: no command-line, terminal, async-runtime or logging-subscriber
//! dependency (clap, indicatif, tokio, madsim, tracing-subscriber): those live in the `cli` and
//! `shell` crates beside it. The checkers judge traces only; the adapter reaches the machines
//! through the protocol crate's traits; scenarios are data built from a seed.

pub mod advise;
pub mod builder;
pub mod check;
pub mod examples;
pub mod explore;
pub mod files;
pub mod interrupt;
pub mod journal;
pub mod machines;
pub mod matrix;
pub mod plan;
pub mod pool;
pub mod replay;
pub mod report;
pub mod run;
pub mod scenarios;
pub mod setup;
pub mod shrink;
pub mod story;
#[cfg(feature = "proptest")]
pub mod strategy;
pub mod sweep;
pub mod verdict;
pub mod workspace;
pub mod world;

pub use leasesim_checkers as checkers;
pub use leasesim_checkers::hazard;

// The surface most users need, at the top.
pub use builder::Builder;
pub use leasesim_checkers::{Hazard, Hazards};
pub use leasesim_protocol::{Finding, Invariant, Variant};
pub use machines::Machines;
pub use plan::{Fault, FaultKind, MsgAction, MsgPattern, Trigger};
pub use replay::Replay;
pub use run::{reproduce_command, run, run_setup, RunResult, Verdict};
pub use scenarios::ScenarioDef;
pub use setup::Setup;
pub use sweep::{sweep, Failure, Observer, Quiet, SeedRange, SweepConfig, SweepReport};

/// How a command prints what it found: for a terminal, or as one JSON document.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Format {
    /// For a terminal.
    Text,
    /// One JSON document.
    Json,
}
