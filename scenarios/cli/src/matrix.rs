//! `matrix` and `examples`: every variant against every scenario, and the example reports. A
//! matrix may run one shard of its cells (`--shard K/N` or the CI variables, as `sweep`); a
//! shard writes its cells as JSON and no table, and `merge` makes the matrix of its shards.

use super::args::OutDir;
use super::sweep::ReportFiles;
use super::{io, Format, UsageError};
use crate::examples;
use leasesim::matrix::{self, Cell, Matrix};
use leasesim::pool;
use leasesim::sweep::Shard;
use leasesim::Machines;
use leasesim_protocol::Variant;
use serde_json::{json, Value};
use std::io::Write;
use std::path::{Path, PathBuf};

/// The name a matrix result carries, so `merge` tells it from a sweep's.
pub(super) const MATRIX_FORMAT: &str = "leasesim-matrix";
/// The version of the matrix result's layout.
pub(super) const MATRIX_VERSION: u64 = 1;

pub(super) struct MatrixArgs {
    pub seeds: u64,
    pub jobs: Option<usize>,
    pub dir: PathBuf,
    pub shard: Option<Shard>,
    pub reports: ReportFiles,
    pub format: Format,
    /// What the rows are and the command that regenerates them, for a matrix of SQL files.
    pub subject: Option<(String, String)>,
}

/// A matrix result as JSON: what ran (every cell, numbered as [`matrix::shard_cells`] numbers
/// them) and, when every cell ran, the matrix itself (its rows and verdicts).
pub(super) fn result_json(
    cat: &[Machines],
    seeds: u64,
    shard: Option<(Shard, &str)>,
    cells: &[(u64, Cell)],
    whole: Option<&Matrix>,
    elapsed: f64,
    scen: &[leasesim::ScenarioDef],
) -> Value {
    let n = scen.len() as u64;
    let mut doc = match whole.map(serde_json::to_value) {
        Some(Ok(Value::Object(m))) => Value::Object(m),
        _ => json!({}),
    };
    doc["format"] = json!(MATRIX_FORMAT);
    doc["format_version"] = json!(MATRIX_VERSION);
    doc["leasesim_version"] = json!(env!("CARGO_PKG_VERSION"));
    doc["seeds"] = json!(seeds);
    doc["catalogue"] = cat
        .iter()
        .map(|m| json!({"name": m.name(), "known_bad": m.is_known_bad()}))
        .collect();
    doc["shard"] = shard.map_or(
        Value::Null,
        |(s, source)| json!({"index": s.index, "count": s.count, "source": source}),
    );
    doc["cells"] = cells
        .iter()
        .map(|(i, c)| {
            let mut v = serde_json::to_value(c).unwrap_or(Value::Null);
            v["index"] = json!(i);
            v["variant"] = json!(cat[(*i / n) as usize].name());
            v
        })
        .collect();
    doc["elapsed_s"] = json!(elapsed);
    doc
}

/// Where a whole matrix goes.
pub(super) struct WholeOutputs<'a> {
    /// The folder of the tables and counterexamples, if any.
    pub dir: Option<&'a Path>,
    pub reports: &'a ReportFiles,
    pub format: Format,
    /// The text output's last line.
    pub footer: String,
}

/// The whole matrix's outputs: the tables (and counterexamples) in their folder when there is
/// one, the report files, the output; returns the exit code.
pub(super) fn finish_whole(
    out: &mut dyn Write,
    m: &Matrix,
    mut doc: Value,
    to: &WholeOutputs<'_>,
    cat: &[Machines],
    scen: &[leasesim::ScenarioDef],
) -> Result<i32, UsageError> {
    let md = matrix::markdown(m);
    if let Some(dir) = to.dir {
        let path = dir.join("matrix.md");
        leasesim::files::write(&path, &md)
            .map_err(|e| UsageError(format!("cannot write {}: {e}", path.display())))?;
        let html_path = dir.join("matrix.html");
        leasesim::files::write(&html_path, matrix::html(m))
            .map_err(|e| UsageError(format!("cannot write {}: {e}", html_path.display())))?;
        examples::write_counterexamples(m, dir, cat, scen).map_err(UsageError)?;
        doc["markdown"] = json!(path.display().to_string());
    }
    write_reports(to.reports, &doc, Some((m, cat)))?;
    if to.format == Format::Json {
        io(writeln!(out, "{doc:#}"))?;
    } else {
        io(out.write_all(md.as_bytes()))?;
        io(writeln!(out, "\n{}", to.footer))?;
    }
    Ok(if m.reference_clean && m.all_caught {
        0
    } else {
        1
    })
}

/// `--json`, `--junit`, `--summary` of a matrix (JUnit and the summary only for a whole one).
fn write_reports(
    reports: &ReportFiles,
    doc: &Value,
    whole: Option<(&Matrix, &[Machines])>,
) -> Result<(), UsageError> {
    let put = |path: &Option<PathBuf>, text: String, append: bool| -> Result<(), UsageError> {
        let Some(path) = path else { return Ok(()) };
        let written = if append {
            leasesim::files::append(path, text)
        } else {
            leasesim::files::write(path, text)
        };
        written.map_err(|e| UsageError(format!("cannot write {}: {e}", path.display())))
    };
    put(&reports.json, format!("{doc:#}\n"), false)?;
    if let Some((m, cat)) = whole {
        put(&reports.junit, super::junit::matrix_junit(m, cat), false)?;
        put(&reports.summary, format!("{}\n", matrix::markdown(m)), true)?;
    }
    Ok(())
}

pub(super) fn matrix_cmd(
    out: &mut dyn Write,
    a: &MatrixArgs,
    cat: &[Machines],
    scen: &[leasesim::ScenarioDef],
) -> Result<i32, UsageError> {
    if a.seeds == 0 {
        return Err(UsageError("--seeds must be at least 1".into()));
    }
    let (shard, source) = super::shard_from(a.shard)?;
    let held = matrix::shard_cells(cat, scen, shard);
    let partial = held.end - held.start < (cat.len() * scen.len()) as u64;
    if partial && (a.reports.junit.is_some() || a.reports.summary.is_some()) {
        return Err(UsageError(
            "--junit and --summary need the whole matrix (a variant is caught in any scenario): give them to `leasesim merge` of the shards' --json results".into(),
        ));
    }
    let threads = pool::threads(a.jobs, (held.end - held.start).max(1))?;
    a.reports.check(&[])?;
    let shard = shard.zip(source.as_deref());
    let n = scen.len() as u64;
    let name = |i: u64| {
        format!(
            "{} x {}",
            cat[(i / n) as usize].name(),
            scen[(i % n) as usize].name
        )
    };
    let announce = |out: &mut dyn Write| -> Result<(), UsageError> {
        if let Some((s, src)) = shard {
            io(writeln!(
                out,
                "shard {s} (from {src}): cells {}..{} of {} ({} to {})",
                held.start,
                held.end,
                cat.len() as u64 * n,
                if held.is_empty() {
                    "none".into()
                } else {
                    name(held.start)
                },
                if held.is_empty() {
                    "none".into()
                } else {
                    name(held.end - 1)
                },
            ))?;
        }
        Ok(())
    };
    if partial {
        // A shard: its cells, no table (a row's verdict needs every scenario).
        if a.format == Format::Text {
            announce(out)?;
        }
        #[allow(clippy::disallowed_methods)] // the matrix's own duration, never the simulated world
        let started = std::time::Instant::now();
        let cells = matrix::cells(cat, scen, a.seeds, threads, shard.map(|(s, _)| s));
        let elapsed = started.elapsed().as_secs_f64();
        let doc = result_json(cat, a.seeds, shard, &cells, None, elapsed, scen);
        write_reports(&a.reports, &doc, None)?;
        let mut held_failed = false;
        if a.format == Format::Json {
            io(writeln!(out, "{doc:#}"))?;
        }
        for (i, c) in &cells {
            let m = &cat[(*i / n) as usize];
            let failed = c.first_failing_seed.is_some() || c.unfinished > 0;
            held_failed |= failed && !m.is_known_bad();
            if a.format == Format::Text {
                io(writeln!(
                    out,
                    "{:<28} {:<28} {}",
                    m.name(),
                    c.scenario,
                    describe(c)
                ))?;
            }
        }
        if a.format == Format::Text {
            io(writeln!(
                out,
                "matrix shard: {} cell(s) in {elapsed:.1}s on {threads} thread(s); the verdict and the tables come from `leasesim merge` of every shard's --json result",
                cells.len()
            ))?;
        }
        return Ok(i32::from(held_failed));
    }
    // The folder is made ready before the matrix runs, so its tables always have a home.
    let dir = OutDir::prepare("--out", &a.dir)?;
    if a.format == Format::Text {
        announce(out)?;
    }
    #[allow(clippy::disallowed_methods)] // the matrix's own duration, never the simulated world
    let started = std::time::Instant::now();
    let cells = matrix::cells(cat, scen, a.seeds, threads, None);
    let elapsed = started.elapsed().as_secs_f64();
    let mut m = matrix::assemble(cat, scen, a.seeds, cells.clone()).map_err(UsageError)?;
    if let Some((subject, command)) = &a.subject {
        m.subject = subject.clone();
        m.command = command.clone();
    }
    let doc = result_json(cat, a.seeds, shard, &cells, Some(&m), elapsed, scen);
    let to = WholeOutputs {
        dir: Some(&dir.path),
        reports: &a.reports,
        format: a.format,
        footer: format!(
            "matrix written to {} ({elapsed:.1}s on {threads} thread(s))",
            dir.path.join("matrix.md").display()
        ),
    };
    finish_whole(out, &m, doc, &to, cat, scen)
}

/// A cell in a few words: `caught at seed 3: no-stale-commit (I1)`, `held over 200 seeds`.
fn describe(c: &Cell) -> String {
    match c.first_failing_seed {
        Some(seed) => format!("failed at seed {seed}: {}", c.invariants.join(", ")),
        None if c.unfinished > 0 => format!("{} run(s) unfinished", c.unfinished),
        None => format!("held over {} seeds", c.seeds_run),
    }
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
