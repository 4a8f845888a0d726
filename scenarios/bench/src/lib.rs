//! leasesim measured, as `leasesim bench` and `leasesim agree` print it: the simulator beside
//! the async-shell engine (seeds and events per second, peak memory; and where their verdicts
//! differ), the simulator's scaling table, instructions per seed counted under
//! `valgrind --tool=callgrind` and split by the part of leasesim they were compiled from, and a
//! SQL coordinator beside the in-memory reference. Each figure is measured in a child process of
//! the calling program (`<program> bench --child ...`), so one measurement's memory and threads
//! never touch another's; the command line only parses and calls these functions.

mod agree;
mod callgrind;
mod engines;
mod instructions;
mod scaling;
mod sql;
mod table;

pub use agree::{agree_cmd, AgreeArgs};
pub use engines::EngineFigures;
pub use instructions::{instructions, InstructionArgs};
pub use sql::{measure_here as sql_measure_here, table as sql_table, OpenSql};
pub use table::{bench_cmd, BenchArgs};

use leasesim::{Machines, ScenarioDef};

/// A benchmark that cannot run as asked: one line for the user (the command line exits 2).
#[derive(Debug)]
pub struct Error(pub String);

impl From<String> for Error {
    fn from(s: String) -> Error {
        Error(s)
    }
}

pub use leasesim::Format;

fn io<T>(r: std::io::Result<T>) -> Result<T, Error> {
    r.map_err(|e| Error(format!("cannot write output: {e}")))
}

fn scenario(catalogue: &[ScenarioDef], name: &str) -> Result<ScenarioDef, Error> {
    Ok(leasesim::scenarios::named(catalogue, name)?)
}

fn scenario_list(catalogue: &[ScenarioDef], names: &[String]) -> Result<Vec<ScenarioDef>, Error> {
    Ok(leasesim::scenarios::named_list(catalogue, names)?)
}

fn machines(catalogue: &[Machines], name: &str) -> Result<Machines, Error> {
    Ok(leasesim::machines::named(catalogue, name)?)
}

fn refuse_unsafe_timing(
    defs: &[ScenarioDef],
    seed: u64,
    m: &Machines,
    allow: bool,
) -> Result<(), Error> {
    Ok(leasesim::scenarios::refuse_unsafe_timing(
        defs, seed, m, allow,
    )?)
}
