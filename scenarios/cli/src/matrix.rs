//! `matrix` and `examples`: every variant against every scenario, and the example reports.

use super::args::OutDir;
use super::{io, Format, UsageError};
use crate::examples;
use leasesim::matrix;
use leasesim::pool;
use leasesim::Machines;
use leasesim_protocol::Variant;
use serde_json::json;
use std::io::Write;
use std::path::Path;

pub(super) fn matrix_cmd(
    out: &mut dyn Write,
    seeds: u64,
    jobs: Option<usize>,
    dir: &Path,
    format: Format,
    cat: &[Machines],
    subject: Option<(String, String)>,
) -> Result<i32, UsageError> {
    if seeds == 0 {
        return Err(UsageError("--seeds must be at least 1".into()));
    }
    let pairs = (cat.len() * leasesim::scenarios::ALL.len()) as u64;
    let threads = pool::threads(jobs, pairs)?;
    // The folder is made ready before the matrix runs, so its tables always have a home.
    let dir = OutDir::prepare("--out", dir)?;
    let dir = dir.path.as_path();
    #[allow(clippy::disallowed_methods)] // the matrix's own duration, never the simulated world
    let started = std::time::Instant::now();
    let mut m = matrix::compare(cat, seeds, threads);
    if let Some((subject, command)) = subject {
        m.subject = subject;
        m.command = command;
    }
    let elapsed = started.elapsed().as_secs_f64();
    let md = matrix::markdown(&m);
    let path = dir.join("matrix.md");
    std::fs::write(&path, &md)
        .map_err(|e| UsageError(format!("cannot write {}: {e}", path.display())))?;
    let html_path = dir.join("matrix.html");
    std::fs::write(&html_path, matrix::html(&m))
        .map_err(|e| UsageError(format!("cannot write {}: {e}", html_path.display())))?;
    examples::write_counterexamples(&m, dir, cat).map_err(UsageError)?;
    if format == Format::Json {
        let mut doc = serde_json::to_value(&m)
            .map_err(|e| UsageError(format!("cannot encode the matrix: {e}")))?;
        doc["elapsed_s"] = json!(elapsed);
        doc["markdown"] = json!(path.display().to_string());
        io(writeln!(out, "{doc:#}"))?;
    } else {
        io(out.write_all(md.as_bytes()))?;
        io(writeln!(
            out,
            "\nmatrix written to {} ({elapsed:.1}s on {threads} thread(s))",
            path.display()
        ))?;
    }
    Ok(if m.reference_clean && m.all_caught {
        0
    } else {
        1
    })
}

pub(super) fn examples_cmd(
    out: &mut dyn Write,
    dir: &Path,
    jobs: Option<usize>,
) -> Result<i32, UsageError> {
    let pairs = (Variant::ALL.len() * leasesim::scenarios::ALL.len()) as u64;
    let threads = pool::threads(jobs, pairs)?;
    let dir = OutDir::prepare("--out", dir)?;
    let files = examples::write_examples(&dir.path, threads).map_err(UsageError)?;
    for f in files {
        io(writeln!(out, "wrote {}", f.display()))?;
    }
    io(writeln!(
        out,
        "wrote {}",
        dir.path.join("counterexamples").display()
    ))?;
    Ok(0)
}
