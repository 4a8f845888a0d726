//! A recorded journal judged by the checkers ([`leasesim_checkers::audit`]), as `leasesim audit`
//! gives it: the files read one at a time, each dropped before the next is read (what is held
//! between them is what the judgement needs, [`journal::Reader`]), the verdict, the JSON
//! document and the timeline page. The command line prints the text.

use crate::BadInput;
use leasesim::replay::{read_bounded, MAX_BYTES};
use leasesim_checkers::audit::{self as judge, Audit, Options};
use leasesim_checkers::journal::{self, Journal, Keep, Place};
use leasesim_checkers::{fmt_ns, Role};
use leasesim_protocol::{Event, Finding, Msg};
use leasesim_reports::{html, Names, NodeView, RunView};
use leasesim_sim::{EventKind, NodeId, TraceEvent};
use serde_json::json;
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

/// A journal read and judged.
pub struct Audited {
    /// What was read.
    pub journal: Journal,
    /// What the checkers found in it.
    pub audit: Audit,
    /// Files that could not be read, with why.
    pub failed: Vec<String>,
    /// The conclusion.
    pub verdict: Verdict,
}

/// Reads the files (each folder's `*.jsonl` in name order) and judges them. `every`: keep every
/// record (for a timeline), not only the judged ones. Bad input: nothing readable, or a value
/// that cannot be true (one line naming the file and line).
pub fn audit(
    paths: &[PathBuf],
    clock_uncertainty_ns: Option<u64>,
    every: bool,
) -> Result<Audited, BadInput> {
    let files = inputs(paths)?;
    let keep = if every { Keep::Every } else { Keep::Judged };
    let mut reader = journal::Reader::new(keep);
    let mut failed = Vec::new();
    for f in &files {
        match read_bounded(f, MAX_BYTES, "journal file") {
            Ok(bytes) => reader.file(&f.display().to_string(), &bytes),
            Err(e) => failed.push(e),
        }
        if reader.refused() {
            break;
        }
    }
    let journal = reader.finish();
    if let Some(p) = &journal.refused {
        return Err(BadInput(format!(
            "{}: {}; the journal is refused, as no judgement can rest on it",
            journal.place(p.at),
            p.what
        )));
    }
    if journal.files.is_empty() {
        return Err(BadInput(failed.join("; ")));
    }
    if journal.records.is_empty() && journal.lines_read == 0 {
        let mut why: Vec<String> = failed;
        why.extend(journal.unread.iter().cloned());
        why.extend(
            journal
                .problems
                .iter()
                .take(3)
                .map(|p| format!("{}: {}", journal.place(p.at), p.what)),
        );
        return Err(BadInput(format!(
            "nothing could be read as a journal: {}",
            if why.is_empty() {
                "no event lines".to_string()
            } else {
                why.join("; ")
            }
        )));
    }
    let audit = judge::audit(
        &journal,
        &Options {
            clock_uncertainty_ns,
        },
    );
    let verdict = Verdict::of(&journal, &audit, &failed);
    Ok(Audited {
        journal,
        audit,
        failed,
        verdict,
    })
}

/// Most files a folder may give.
const FILES_MAX: usize = 4096;

/// The files to read: each file as given, each folder's `*.jsonl` files in name order.
pub fn inputs(paths: &[PathBuf]) -> Result<Vec<PathBuf>, BadInput> {
    let mut out = Vec::new();
    for p in paths {
        if p.is_dir() {
            let mut found: Vec<PathBuf> = std::fs::read_dir(p)
                .map_err(|e| BadInput(format!("cannot read {}: {e}", p.display())))?
                .flatten()
                .map(|e| e.path())
                .filter(|f| f.extension().is_some_and(|x| x == "jsonl"))
                .take(FILES_MAX + 1)
                .collect();
            if found.len() > FILES_MAX {
                return Err(BadInput(format!(
                    "{} holds more than {FILES_MAX} journal files (*.jsonl): audit fewer at once",
                    p.display()
                )));
            }
            found.sort();
            if found.is_empty() {
                return Err(BadInput(format!(
                    "{} holds no journal file (*.jsonl)",
                    p.display()
                )));
            }
            out.extend(found);
        } else {
            out.push(p.clone());
        }
    }
    Ok(out)
}

/// What the audit concludes.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Nothing found, and every line with something to judge was read.
    Held,
    /// A finding: a violation, whatever else was left unread.
    Violated,
    /// Nothing found in what was read, but a file or lines with something to judge were not
    /// read (too large, of another version, past a limit): no verdict.
    Incomplete,
}

impl Verdict {
    fn of(j: &Journal, a: &Audit, failed: &[String]) -> Verdict {
        if !a.findings.is_empty() {
            Verdict::Violated
        } else if j.left_unread || !failed.is_empty() {
            Verdict::Incomplete
        } else {
            Verdict::Held
        }
    }

    /// The verdict's word: `HELD`, `VIOLATED`, `INCOMPLETE`.
    pub fn word(self) -> &'static str {
        match self {
            Verdict::Held => "HELD",
            Verdict::Violated => "VIOLATED",
            Verdict::Incomplete => "INCOMPLETE",
        }
    }

    /// The command line's exit code: 0, 1, 2.
    pub fn exit_code(self) -> i32 {
        match self {
            Verdict::Held => 0,
            Verdict::Violated => 1,
            Verdict::Incomplete => 2,
        }
    }
}

/// The event of each line a finding cites, by place, for `file:line (event)`.
pub fn cited(j: &Journal, a: &Audit) -> BTreeMap<Place, &'static str> {
    let wanted: BTreeSet<Place> = a.findings.iter().flat_map(|f| f.lines.clone()).collect();
    j.records
        .iter()
        .filter(|r| wanted.contains(&r.at))
        .map(|r| (r.at, r.event.name()))
        .collect()
}

/// `file:line (event)`.
pub fn line(j: &Journal, events: &BTreeMap<Place, &'static str>, at: Place) -> String {
    match events.get(&at) {
        Some(e) => format!("{} ({e})", j.place(at)),
        None => j.place(at),
    }
}

/// A node's role in words (`worker W1, inferred`).
pub fn role(j: &Journal, n: usize) -> String {
    let how = if j.declared[n] { "" } else { ", inferred" };
    match j.nodes[n].role {
        Role::Coordinator => format!("coordinator{how}"),
        Role::Worker { name, .. } => format!("worker {name}{how}"),
        Role::Receiver {
            index,
            supports_fence,
        } => format!(
            "receiver {index}, {}{how}",
            if supports_fence {
                "checks fences"
            } else {
                "fences not known to be checked"
            }
        ),
        Role::Tool => format!("tool{how}"),
        Role::Operator => format!("operator{how}"),
    }
}

/// The sentence `run` prints for a finding: `no-stale-commit (I1) at 35.889s on coord: ...`,
/// the time being the node's own clock's reading.
pub fn sentence(j: &Journal, f: &judge::AuditFinding) -> String {
    let names: Vec<String> = j.nodes.iter().map(|n| n.name.clone()).collect();
    let n = Names {
        nodes: &names,
        ops: &j.ops,
    };
    let mut s = leasesim_reports::finding(&n, &f.finding);
    if let Some(w) = &f.within {
        s.push_str(&format!(" ({w})"));
    }
    s
}

/// The JSON document of an audit (`leasesim audit --format json`).
pub fn to_json(j: &Journal, a: &Audit, failed: &[String], verdict: Verdict) -> serde_json::Value {
    let mut problems: Vec<serde_json::Value> = failed
        .iter()
        .chain(&j.unread)
        .map(|e| json!({"what": e}))
        .collect();
    problems.extend(
        j.problems
            .iter()
            .map(|p| json!({"file": j.files.get(p.at.file), "line": p.at.line, "what": p.what})),
    );
    json!({
        "journal_version": journal::VERSION,
        "files": j.files,
        "nodes": (0..j.nodes.len()).map(|n| json!({"node": j.nodes[n].name, "role": role(j, n)})).collect::<Vec<_>>(),
        "lines_read": j.lines_read,
        "verdict": verdict.word(),
        "findings": a.findings.iter().map(|f| json!({
            "invariant": f.finding.invariant.name(),
            "spec": f.finding.invariant.spec_id(),
            "node": j.nodes.get(f.finding.node as usize).map(|n| n.name.as_str()),
            "t_local_ns": f.finding.t_ns,
            "t_local": fmt_ns(f.finding.t_ns),
            "message": f.finding.message,
            "within": f.within,
            "lines": f.lines.iter().map(|&at| json!({"file": j.files.get(at.file), "line": at.line})).collect::<Vec<_>>(),
        })).collect::<Vec<_>>(),
        "judged": a.judged,
        "skipped": a.skipped,
        "problems": problems,
        "problems_not_shown": j.problems_more,
        "hazards": a.hazards.iter().map(|(h, n)| json!({"hazard": h.name(), "count": n})).collect::<Vec<_>>(),
    })
}

/// The recorded journal on the timeline of a simulated run: every node's records on its own
/// clock's readings (there is no true time to draw), the findings marked.
pub fn page(j: &Journal, a: &Audit, verdict: Verdict) -> String {
    let nodes: Vec<NodeView> = leasesim::report::node_views_of(&j.nodes);
    let mut order: Vec<&journal::Record> = j.records.iter().collect();
    order.sort_by_key(|r| (r.local_ns, r.node, r.at));
    // The page's axis starts at the earliest reading (a real clock reads decades since 1970).
    let start = order.first().map_or(0, |r| r.local_ns);
    let trace: Vec<TraceEvent<Msg, Event>> = order
        .iter()
        .map(|r| TraceEvent {
            t: r.local_ns - start,
            node: r.node as NodeId,
            local: r.local_ns - start,
            kind: EventKind::Note { note: r.event },
        })
        .collect();
    let findings: Vec<_> = a
        .findings
        .iter()
        .map(|f| Finding {
            t_ns: f.finding.t_ns.saturating_sub(start),
            ..f.finding.clone()
        })
        .collect();
    let view = RunView {
        title: format!("audit of {}", j.files.join(", ")),
        subtitle:
            "a recorded journal: each node's lines at its own clock's readings (no true time)"
                .to_string(),
        verdict: verdict.word().to_string(),
        nodes: &nodes,
        ops: &j.ops,
        trace: &trace,
        findings: &findings,
        sources: &[],
    };
    html::render(&view)
}
