//! What a sweep, a matrix or a merge of their shards found, as documents: the text a terminal
//! shows, one JSON result (`--json`, what [`merge`] reads back), JUnit (`--junit`) and a CI job
//! summary in Markdown (`--summary`). The command line parses, calls these and prints; a
//! program of the user's own gets the same documents from the same functions. The audit of a
//! recorded journal ([`audit`]) is one more such document.
//!
//! Hazard coverage is judged by one rule ([`leasesim::sweep::SweepReport::coverage`]): over a
//! whole sweep that ran every seed, and for a shard of several only once the shards are merged.

pub mod audit;
pub mod explore;
pub mod files;
pub mod junit;
pub mod matrix;
pub mod merge;
pub mod summary;
pub mod sweep;

use leasesim::{Machines, ScenarioDef};

/// Bad input (a result file that is not one, shards of different sweeps, an output that cannot
/// be written): one line for the user; the command line exits 2.
#[derive(Debug)]
pub struct BadInput(pub String);

impl From<String> for BadInput {
    fn from(s: String) -> BadInput {
        BadInput(s)
    }
}

pub use leasesim::Format;

fn io<T>(r: std::io::Result<T>) -> Result<T, BadInput> {
    r.map_err(|e| BadInput(format!("cannot write output: {e}")))
}

fn scenario_list(
    catalogue: &[ScenarioDef],
    names: &[String],
) -> Result<Vec<ScenarioDef>, BadInput> {
    Ok(leasesim::scenarios::named_list(catalogue, names)?)
}

fn machines(catalogue: &[Machines], name: &str) -> Result<Machines, BadInput> {
    Ok(leasesim::machines::named(catalogue, name)?)
}
