//! A matrix result: the JSON document of what ran (every cell, or one shard's), and the whole
//! matrix's outputs (its tables, counterexamples, report files).

use crate::files::ReportFiles;
use crate::{io, BadInput, Format};
use leasesim::examples;
use leasesim::matrix::{self, Cell, Matrix};
use leasesim::sweep::Shard;
use leasesim::Machines;
use serde_json::{json, Value};
use std::io::Write;
use std::path::{Path, PathBuf};

/// The name a matrix result carries, so `merge` tells it from a sweep's.
pub const MATRIX_FORMAT: &str = "leasesim-matrix";
/// The version of the matrix result's layout.
pub const MATRIX_VERSION: u64 = 1;

/// A matrix result as JSON: what ran (every cell, numbered as [`matrix::shard_cells`] numbers
/// them) and, when every cell ran, the matrix itself (its rows and verdicts).
pub fn result_json(
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
pub struct WholeOutputs<'a> {
    /// The folder of the tables and counterexamples, if any.
    pub dir: Option<&'a Path>,
    /// `--json`, `--junit`, `--summary`.
    pub reports: &'a ReportFiles,
    /// How the output is printed.
    pub format: Format,
    /// The text output's last line.
    pub footer: String,
    /// `--page-limit`: the largest counterexample timeline written, in bytes.
    pub page_limit: Option<u64>,
}

/// The whole matrix's outputs: the tables (and counterexamples) in their folder when there is
/// one, the report files, the output; returns the exit code.
pub fn finish_whole(
    out: &mut dyn Write,
    m: &Matrix,
    mut doc: Value,
    to: &WholeOutputs<'_>,
    cat: &[Machines],
    scen: &[leasesim::ScenarioDef],
) -> Result<i32, BadInput> {
    let md = matrix::markdown(m);
    if let Some(dir) = to.dir {
        let path = dir.join("matrix.md");
        leasesim::files::write(&path, &md)
            .map_err(|e| BadInput(format!("cannot write {}: {e}", path.display())))?;
        let pages =
            examples::write_counterexamples(m, dir, cat, scen, to.page_limit).map_err(BadInput)?;
        let html_path = dir.join("matrix.html");
        let html = matrix::html_with_pages(m, &|stem| pages.iter().any(|p| p == stem));
        leasesim::files::write(&html_path, html)
            .map_err(|e| BadInput(format!("cannot write {}: {e}", html_path.display())))?;
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
pub fn write_reports(
    reports: &ReportFiles,
    doc: &Value,
    whole: Option<(&Matrix, &[Machines])>,
) -> Result<(), BadInput> {
    let put = |path: &Option<PathBuf>, text: String, append: bool| -> Result<(), BadInput> {
        let Some(path) = path else { return Ok(()) };
        let written = if append {
            leasesim::files::append(path, text)
        } else {
            leasesim::files::write(path, text)
        };
        written.map_err(|e| BadInput(format!("cannot write {}: {e}", path.display())))
    };
    put(&reports.json, format!("{doc:#}\n"), false)?;
    if let Some((m, cat)) = whole {
        put(&reports.junit, crate::junit::matrix_junit(m, cat), false)?;
        put(&reports.summary, format!("{}\n", matrix::markdown(m)), true)?;
    }
    Ok(())
}
