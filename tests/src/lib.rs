//! Shared helpers for leasesim's integration tests: run a scenario by name and read facts off
//! its trace. The tests themselves live in `tests/`.

use leasesim_protocol::{Event, Msg, Variant};
use leasesim_scenarios::run::{run_setup, RunResult};
use leasesim_scenarios::scenarios;
use leasesim_sim::{EventKind, TraceEvent};

/// Runs one seed of a named scenario.
pub fn run(scenario: &str, seed: u64, variant: Variant) -> RunResult {
    let def = scenarios::find(scenario).expect("a known scenario");
    run_setup(&(def.build)(seed, variant), seed)
}

/// Every journal note of a node, in order, with the true time.
pub fn notes<'a>(r: &'a RunResult, node: &str) -> Vec<(u64, &'a Event)> {
    let id = node_id(r, node);
    r.trace
        .iter()
        .filter(|e| e.node == id)
        .filter_map(|e| match &e.kind {
            EventKind::Note { note } => Some((e.t, note)),
            _ => None,
        })
        .collect()
}

/// Every message a node sent, with the trace event.
pub fn sends<'a>(r: &'a RunResult, node: &str) -> Vec<&'a TraceEvent<Msg, Event>> {
    let id = node_id(r, node);
    r.trace
        .iter()
        .filter(|e| e.node == id && matches!(e.kind, EventKind::Send { .. }))
        .collect()
}

/// A node's id by display name.
pub fn node_id(r: &RunResult, node: &str) -> u32 {
    r.nodes
        .iter()
        .position(|n| n.name == node)
        .unwrap_or_else(|| panic!("no node named {node}")) as u32
}

/// Runs the command line in-process; returns (exit code, stdout, stderr).
pub fn cli(args: &[&str]) -> (i32, String, String) {
    let mut out = Vec::new();
    let mut err = Vec::new();
    let mut argv = vec!["leasesim".to_string()];
    argv.extend(args.iter().map(|s| s.to_string()));
    let code = leasesim_scenarios::cli::main_with(argv, &mut out, &mut err);
    (
        code,
        String::from_utf8(out).expect("utf-8 output"),
        String::from_utf8(err).expect("utf-8 errors"),
    )
}
