//! A run's technical journal and metrics (P8, P13, P18): the format of
//! [`leasesim_checkers::journal`] (docs/journal-format.md), written from a [`RunResult`].

use crate::run::RunResult;
use leasesim_checkers::journal::{self as format, Recorded};
pub use leasesim_checkers::journal::{node_file_name, snake};
pub use leasesim_checkers::metrics::{Metrics, ToolMetrics};
use std::io::Write;
use std::path::{Path, PathBuf};

impl RunResult {
    /// What the journal is written from: the nodes, the operations' names, the trace.
    pub fn recorded(&self) -> Recorded<'_> {
        Recorded {
            nodes: &self.nodes,
            ops: &self.op_names,
            trace: &self.trace,
        }
    }
}

/// The run's journal, every node's events in trace order after the format's header.
pub fn write_journal(result: &RunResult, out: &mut dyn Write) -> Result<(), String> {
    format::write_journal(&result.recorded(), out)
}

/// [`write_journal`], with each job's payload hash (by job id, as in the setup's `jobs`)
/// stamped on its `lease_granted` and `job_claimed` lines.
pub fn write_journal_with_payload_hashes(
    result: &RunResult,
    payload_hashes: &[u64],
    out: &mut dyn Write,
) -> Result<(), String> {
    format::write_journal_with_payload_hashes(&result.recorded(), payload_hashes, out)
}

/// The run's journal as one file per node, (node, contents) in node order.
pub fn journal_per_node(
    result: &RunResult,
    payload_hashes: &[u64],
) -> Result<Vec<(String, Vec<u8>)>, String> {
    format::journal_per_node(&result.recorded(), payload_hashes)
}

/// Writes [`journal_per_node`] into `dir` (created if missing), each file whole
/// ([`crate::files::write`]), named by [`node_file_name`].
pub fn write_journal_dir(
    result: &RunResult,
    payload_hashes: &[u64],
    dir: &Path,
) -> Result<Vec<PathBuf>, String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let mut paths = Vec::new();
    for (node, bytes) in journal_per_node(result, payload_hashes)? {
        let path = dir.join(node_file_name(&node));
        crate::files::write(&path, bytes)
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        paths.push(path);
    }
    Ok(paths)
}

/// The run's metrics: renewal health on the coordinator's clock, expired leases, failed
/// renewals, re-claimed jobs, jeopardy, rejected results, and tool calls per job class and tool
/// provider.
pub fn metrics(result: &RunResult) -> Metrics {
    leasesim_checkers::metrics::metrics(&result.nodes, &result.trace)
}
