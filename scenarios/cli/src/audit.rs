//! `leasesim audit FILE...`: a recorded journal judged by the checkers
//! ([`leasesim_checkers::audit`]), its findings printed as a simulated run prints them, each
//! with the lines that prove it; what could not be judged, and each problem with the lines,
//! after them. Exit 0 when nothing was found, 1 on a finding, 2 when nothing could be read,
//! when a value in it cannot be true (one line naming the file and line), or when nothing was
//! found but some of it was left unread (no verdict can be given then).
//!
//! The files are read one at a time, each dropped before the next is read: what is held
//! between them is what the judgement needs ([`format::Reader`]), so the memory a large
//! journal takes follows its largest file and its judged records, not the sum of its bytes.

use crate::args::check_outputs;
use crate::{io, Format, UsageError};
use leasesim::replay::{read_bounded, MAX_BYTES};
use leasesim_checkers::audit::format::{self, Journal, Keep, Place};
use leasesim_checkers::audit::{self as judge, Audit, Options};
use leasesim_checkers::{fmt_ns, Role};
use leasesim_protocol::{Event, Finding, Msg};
use leasesim_reports::{html, Names, NodeView, RunView};
use leasesim_sim::{EventKind, NodeId, TraceEvent};
use serde_json::json;
use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::path::{Path, PathBuf};

/// Most files a folder may give.
const FILES_MAX: usize = 4096;

/// The files to read: each file as given, each folder's `*.jsonl` files in name order.
fn inputs(paths: &[PathBuf]) -> Result<Vec<PathBuf>, UsageError> {
    let mut out = Vec::new();
    for p in paths {
        if p.is_dir() {
            let mut found: Vec<PathBuf> = std::fs::read_dir(p)
                .map_err(|e| UsageError(format!("cannot read {}: {e}", p.display())))?
                .flatten()
                .map(|e| e.path())
                .filter(|f| f.extension().is_some_and(|x| x == "jsonl"))
                .take(FILES_MAX + 1)
                .collect();
            if found.len() > FILES_MAX {
                return Err(UsageError(format!(
                    "{} holds more than {FILES_MAX} journal files (*.jsonl): audit fewer at once",
                    p.display()
                )));
            }
            found.sort();
            if found.is_empty() {
                return Err(UsageError(format!(
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

/// Reads, judges and reports.
pub(super) fn audit_cmd(
    out: &mut dyn Write,
    paths: &[PathBuf],
    clock_uncertainty_ns: Option<u64>,
    html_path: Option<&Path>,
    format: Format,
) -> Result<i32, UsageError> {
    let files = inputs(paths)?;
    if let Some(h) = html_path {
        let ins: Vec<&Path> = files.iter().map(PathBuf::as_path).collect();
        check_outputs(&[("--html", h)], &ins)?;
    }
    // The timeline draws every record; a verdict alone needs only the judged ones.
    let keep = if html_path.is_some() {
        Keep::Every
    } else {
        Keep::Judged
    };
    let mut reader = format::Reader::new(keep);
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
        return Err(UsageError(format!(
            "{}: {}; the journal is refused, as no judgement can rest on it",
            journal.place(p.at),
            p.what
        )));
    }
    if journal.files.is_empty() {
        return Err(UsageError(failed.join("; ")));
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
        return Err(UsageError(format!(
            "nothing could be read as a journal: {}",
            if why.is_empty() {
                "no event lines".to_string()
            } else {
                why.join("; ")
            }
        )));
    }
    let a = judge::audit(
        &journal,
        &Options {
            clock_uncertainty_ns,
        },
    );
    let verdict = Verdict::of(&journal, &a, &failed);
    match format {
        Format::Text => text(out, &journal, &a, &failed, verdict)?,
        Format::Json => {
            let doc = to_json(&journal, &a, &failed, verdict);
            io(writeln!(
                out,
                "{}",
                serde_json::to_string_pretty(&doc).unwrap_or_default()
            ))?;
        }
    }
    if let Some(h) = html_path {
        leasesim::files::write(h, page(&journal, &a, verdict))
            .map_err(|e| UsageError(format!("cannot write {}: {e}", h.display())))?;
    }
    Ok(verdict.exit_code())
}

/// What the audit concludes.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Verdict {
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

    fn word(self) -> &'static str {
        match self {
            Verdict::Held => "HELD",
            Verdict::Violated => "VIOLATED",
            Verdict::Incomplete => "INCOMPLETE",
        }
    }

    fn exit_code(self) -> i32 {
        match self {
            Verdict::Held => 0,
            Verdict::Violated => 1,
            Verdict::Incomplete => 2,
        }
    }
}

/// The event of each line a finding cites, by place, for `file:line (event)`.
fn cited(j: &Journal, a: &Audit) -> BTreeMap<Place, &'static str> {
    let wanted: BTreeSet<Place> = a.findings.iter().flat_map(|f| f.lines.clone()).collect();
    j.records
        .iter()
        .filter(|r| wanted.contains(&r.at))
        .map(|r| (r.at, r.event.name()))
        .collect()
}

/// `file:line (event)`.
fn line(j: &Journal, events: &BTreeMap<Place, &'static str>, at: Place) -> String {
    match events.get(&at) {
        Some(e) => format!("{} ({e})", j.place(at)),
        None => j.place(at),
    }
}

fn role(j: &Journal, n: usize) -> String {
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
fn sentence(j: &Journal, f: &judge::AuditFinding) -> String {
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

fn text(
    out: &mut dyn Write,
    j: &Journal,
    a: &Audit,
    failed: &[String],
    verdict: Verdict,
) -> Result<(), UsageError> {
    io(writeln!(
        out,
        "audit of {} file(s): {}",
        j.files.len(),
        j.files.join(", ")
    ))?;
    let nodes: Vec<String> = (0..j.nodes.len())
        .map(|n| format!("{} ({})", j.nodes[n].name, role(j, n)))
        .collect();
    io(writeln!(out, "nodes: {}", nodes.join(", ")))?;
    if !j.aliases.is_empty() {
        io(writeln!(out, "names: {}", j.aliases.join(", ")))?;
    }
    io(writeln!(
        out,
        "read: {} event lines, {} problem(s)",
        j.lines_read,
        j.problems.len() + j.problems_more + j.unread.len() + failed.len()
    ))?;
    let events = cited(j, a);
    for f in &a.findings {
        io(writeln!(out, "  {}", sentence(j, f)))?;
        let lines: Vec<String> = f.lines.iter().map(|&at| line(j, &events, at)).collect();
        io(writeln!(out, "    lines: {}", lines.join(", ")))?;
    }
    for s in &a.judged {
        io(writeln!(out, "judged: {s}"))?;
    }
    for s in &a.skipped {
        io(writeln!(out, "skipped: {s}"))?;
    }
    for e in failed {
        io(writeln!(out, "problem: {e}"))?;
    }
    for u in &j.unread {
        io(writeln!(out, "problem: {u}"))?;
    }
    for p in &j.problems {
        io(writeln!(out, "problem: {}: {}", j.place(p.at), p.what))?;
    }
    if j.problems_more > 0 {
        io(writeln!(out, "problem: {} more not shown", j.problems_more))?;
    }
    let reached: Vec<String> = a
        .hazards
        .iter()
        .map(|(h, n)| format!("{} {n}", h.name()))
        .collect();
    if !reached.is_empty() {
        io(writeln!(out, "hazards reached: {}", reached.join(", ")))?;
    }
    io(writeln!(
        out,
        "verdict: {}",
        match verdict {
            Verdict::Held =>
                "HELD (nothing found in what the journal lets be judged; see skipped)".to_string(),
            Verdict::Violated => format!("VIOLATED ({} finding(s))", a.findings.len()),
            Verdict::Incomplete =>
                "INCOMPLETE (nothing found in what was read, but some of the journal was not read: see problem)".to_string(),
        }
    ))?;
    Ok(())
}

fn to_json(j: &Journal, a: &Audit, failed: &[String], verdict: Verdict) -> serde_json::Value {
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
        "journal_version": format::VERSION,
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
fn page(j: &Journal, a: &Audit, verdict: Verdict) -> String {
    let nodes: Vec<NodeView> = leasesim::report::node_views_of(&j.nodes);
    let mut order: Vec<&format::Record> = j.records.iter().collect();
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
        statements: &[],
    };
    html::render(&view)
}
