//! A run for people: its timeline as text, as a self-contained HTML page, as Markdown with a
//! Mermaid sequence diagram. The renderers are the reports crate's; this module feeds them a run
//! of any machines.
//!
//! ```
//! use leasesim::{report, run, scenarios, Machines};
//!
//! let setup = scenarios::find("w1-w2").unwrap().build(1, leasesim::Variant::Reference);
//! let r = run(&setup, 1, &Machines::reference());
//! let (html, markdown) = report::render(&r, &report::title(&setup, 1), "w1-w2 seed 1");
//! assert!(html.starts_with("<!DOCTYPE html>") && markdown.contains("sequenceDiagram"));
//! assert!(report::timeline(&r).contains("lease_granted"));
//! ```

use crate::run::RunResult;
use crate::setup::{Role, Setup};
use leasesim_reports::{html, mermaid, Names, NodeKind, NodeView, RunView};

/// The node views of a run.
pub fn node_views(r: &RunResult) -> Vec<NodeView> {
    node_views_of(&r.nodes)
}

/// The node views of these nodes (a run's, or a recorded journal's).
pub fn node_views_of(nodes: &[leasesim_checkers::NodeInfo]) -> Vec<NodeView> {
    nodes
        .iter()
        .map(|n| NodeView {
            name: n.name.clone(),
            kind: match n.role {
                Role::Coordinator => NodeKind::Coordinator,
                Role::Worker { .. } => NodeKind::Worker,
                Role::Receiver { .. } => NodeKind::Receiver,
                Role::Tool => NodeKind::Tool,
                Role::Operator => NodeKind::Operator,
            },
        })
        .collect()
}

/// A run rendered as (HTML, Markdown).
pub fn render(r: &RunResult, title: &str, subtitle: &str) -> (String, String) {
    let nodes = node_views(r);
    let view = RunView {
        title: title.to_string(),
        subtitle: subtitle.to_string(),
        verdict: r.verdict().word(),
        nodes: &nodes,
        ops: &r.op_names,
        trace: &r.trace,
        findings: &r.findings,
        sources: &r.sources,
    };
    (html::render(&view), mermaid::render(&view))
}

/// A title for a run of a setup.
pub fn title(setup: &Setup, seed: u64) -> String {
    format!("{} seed {seed} ({})", setup.scenario, setup.variant.name())
}

/// The plain-text timeline `leasesim run` prints: one line per event, with true time, the node,
/// its local clock and what happened.
pub fn timeline(r: &RunResult) -> String {
    let nodes: Vec<String> = r.nodes.iter().map(|n| n.name.clone()).collect();
    leasesim_reports::timeline(
        &Names {
            nodes: &nodes,
            ops: &r.op_names,
        },
        &r.trace,
    )
}
