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
//! ([`machines`]). Here the "user's" worker is the reference one, to keep the example short:
//!
//! ```
//! use leasesim::{run, scenarios, Machines, Verdict};
//! use leasesim_protocol::{Variant, Worker, WorkerMachine};
//!
//! let mine = Machines::reference().with_worker("my-worker", |spec| {
//!     Box::new(Worker::new(spec.config.clone(), Variant::Reference.switches()))
//!         as Box<dyn WorkerMachine>
//! });
//! let setup = (scenarios::find("w1-w2").unwrap().build)(7, mine.setup_variant());
//! let result = run(&setup, 7, &mine);
//! assert_eq!(result.verdict(), Verdict::Held, "{:?}", result.findings);
//! ```
//!
//! **3. Sweep it in `cargo test`.** [`SweepConfig::check`] runs many seeds of many scenarios
//! on every core, with hazard coverage; a failure saves the run under
//! `target/leasesim-failures/`, shrinks it, and prints the one command that reruns exactly it
//! (`LEASESIM_REPLAY=<file>`, or `LEASESIM_SEED=<scenario>:<seed>`; see [`check`]):
//!
//! ```
//! use leasesim::{scenarios, Machines, SeedRange, SweepConfig};
//!
//! let report = SweepConfig::new(
//!     scenarios::ALL.iter().filter(|s| s.name != "swarm").collect(),
//!     SeedRange { start: 0, end: 3 },
//!     Machines::reference(),
//! )
//! .check();
//! assert_eq!(report.failing(), 0);
//! ```
//!
//! **4. Property-test it** over generated setups and fault plans with proptest
//! (`leasesim::strategy`, feature `proptest`), shrunk by proptest itself.
//!
//! **5. Keep and read counterexamples.** [`Replay`] files record the setup, the seed and your
//! machines' names; [`shrink::shrink_on`] minimises a failing one; [`report`] renders a run as
//! a text timeline, an HTML page or Markdown for a design review.
//!
//! **6. Give yourself the command line.** `leasesim_cli::main_with(vec![my_machines])` in a
//! `src/bin/` of your crate gives you every `leasesim` command (`run`, `sweep`, `replay`,
//! `shrink`, `report`, `matrix` comparing your implementations...) for your machines.
//!
//! # Map
//!
//! A run's whole input as data ([`setup::Setup`]), the fault catalogue and the director that
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
pub mod check;
pub mod explore;
pub mod files;
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
