//! `leasesim audit FILE...`: a recorded journal judged by the checkers
//! ([`leasesim_results::audit`]), its findings printed as a simulated run prints them, each
//! with the lines that prove it; what could not be judged, and each problem with the lines,
//! after them. Exit 0 when nothing was found, 1 on a finding, 2 when nothing could be read,
//! when a value in it cannot be true (one line naming the file and line), or when nothing was
//! found but some of it was left unread (no verdict can be given then).

use crate::args::check_outputs;
use crate::{io, Format, UsageError};
use leasesim_checkers::audit::Audit;
use leasesim_checkers::journal::Journal;
use leasesim_results::audit::{self as audited, cited, line, role, sentence, Audited, Verdict};
use std::io::Write;
use std::path::{Path, PathBuf};

/// Reads, judges and reports.
pub(super) fn audit_cmd(
    out: &mut dyn Write,
    paths: &[PathBuf],
    clock_uncertainty_ns: Option<u64>,
    html_path: Option<&Path>,
    format: Format,
) -> Result<i32, UsageError> {
    if let Some(h) = html_path {
        let files = audited::inputs(paths)?;
        let ins: Vec<&Path> = files.iter().map(PathBuf::as_path).collect();
        check_outputs(&[("--html", h)], &ins)?;
    }
    // The timeline draws every record; a verdict alone needs only the judged ones.
    let Audited {
        journal,
        audit: a,
        failed,
        verdict,
    } = audited::audit(paths, clock_uncertainty_ns, html_path.is_some())?;
    match format {
        Format::Text => text(out, &journal, &a, &failed, verdict)?,
        Format::Json => {
            let doc = audited::to_json(&journal, &a, &failed, verdict);
            io(writeln!(
                out,
                "{}",
                serde_json::to_string_pretty(&doc).unwrap_or_default()
            ))?;
        }
    }
    if let Some(h) = html_path {
        leasesim::files::write(h, audited::page(&journal, &a, verdict))
            .map_err(|e| UsageError(format!("cannot write {}: {e}", h.display())))?;
    }
    Ok(verdict.exit_code())
}

/// Every problem met reading the journal: files that failed, lines not read, lines that did
/// not parse.
fn problems(out: &mut dyn Write, j: &Journal, failed: &[String]) -> Result<(), UsageError> {
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
    Ok(())
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
    problems(out, j, failed)?;
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
