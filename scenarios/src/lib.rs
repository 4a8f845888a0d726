//! Scenarios, fault plans and invariant checkers, and the adapter that runs the protocol
//! machines on the simulator. The `leasesim` command-line tool is built from this crate.
//!
//! Architecture invariant: the checkers judge traces only; the adapter reaches the machines
//! through small traits; scenarios are data (a [`setup::Setup`]) built from a seed.

pub mod advise;
pub mod bench;
pub mod cli;
pub mod engines;
pub mod examples;
pub mod hazard;
pub mod journal;
pub mod matrix;
pub mod oracle;
pub mod plan;
pub mod plot;
pub mod pool;
pub mod replay;
pub mod run;
pub mod scaling;
pub mod scenarios;
pub mod setup;
pub mod shell;
pub mod shrink;
pub mod sweep;
pub mod world;
