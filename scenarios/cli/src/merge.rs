//! `merge`: the results of a sweep's shards (`sweep --json`) as one result, rendered the way a
//! sweep's own is (text, JSON, JUnit, Markdown). It checks that the files are results of one
//! sweep (the same leasesim version, machines, scenarios, seeds and checks, each shard's share
//! the one its K/N names) and says what keeps them from being the whole sweep: a shard missing,
//! given twice, or interrupted. Counts and hazard counts add up; a hazard reached in any shard
//! counts; the failure lists join and keep, per scenario, the lowest [`FAILURES_KEPT`] seeds,
//! the same ones the unsharded sweep keeps. The shards of a matrix merge into the whole matrix
//! in the same way: one version, seeds and catalogue, every cell from exactly one shard.

use super::args::OutDir;
use super::matrix::{MATRIX_FORMAT, MATRIX_VERSION};
use super::sweep::{Merged, ReportFiles, Results, Saved, RESULT_FORMAT, RESULT_VERSION};
use super::{io, machines, scenario_list, Format, UsageError, COVERAGE_MIN_SEEDS};
use leasesim::hazard::Hazard;
use leasesim::matrix::{self, Cell};
use leasesim::run::Verdict;
use leasesim::scenarios;
use leasesim::sweep::{
    describe_ranges, BudgetOutcome, Failure, ScenarioOutcome, SeedRange, Shard, SweepConfig,
    SweepReport, FAILURES_KEPT,
};
use leasesim::{Invariant, Machines};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::io::Write;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Result files larger than this are refused unread (a shard's result is a few megabytes at
/// most: 1,000 failures per scenario).
const FILE_MAX: u64 = 256 << 20;
/// Determinism differences kept per scenario, as the sweep keeps them.
const NONDETERMINISTIC_KEPT: usize = 100;

/// One shard's file, read.
struct ShardFile {
    name: String,
    doc: Value,
    shard: Option<Shard>,
}

fn bad(file: &str, why: impl std::fmt::Display) -> UsageError {
    UsageError(format!("{file}: {why}"))
}

/// What a result file holds.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Kind {
    Sweep,
    Matrix,
}

fn read(path: &Path) -> Result<(ShardFile, Kind), UsageError> {
    let name = path.display().to_string();
    let meta = std::fs::metadata(path).map_err(|e| bad(&name, e))?;
    if !meta.is_file() {
        return Err(bad(&name, "not a regular file"));
    }
    if meta.len() > FILE_MAX {
        return Err(bad(&name, format!("larger than {} MB", FILE_MAX >> 20)));
    }
    let text = std::fs::read_to_string(path).map_err(|e| bad(&name, e))?;
    let doc: Value = serde_json::from_str(&text).map_err(|e| {
        bad(
            &name,
            format!("not JSON ({e}); write a shard's result with sweep --json FILE"),
        )
    })?;
    let (kind, version) = if doc["format"] == RESULT_FORMAT {
        (Kind::Sweep, RESULT_VERSION)
    } else if doc["format"] == MATRIX_FORMAT {
        (Kind::Matrix, MATRIX_VERSION)
    } else {
        return Err(bad(
            &name,
            format!("not a leasesim sweep or matrix result (no \"format\": \"{RESULT_FORMAT}\" or \"{MATRIX_FORMAT}\"); write one with sweep --json FILE"),
        ));
    };
    if doc["format_version"] != version {
        return Err(bad(
            &name,
            format!(
                "a result of format version {}, this leasesim reads {version}",
                doc["format_version"]
            ),
        ));
    }
    let shard = match &doc["shard"] {
        Value::Null => None,
        s => Some(
            Shard::new(num(&name, &s["index"])?, num(&name, &s["count"])?)
                .map_err(|e| bad(&name, e))?,
        ),
    };
    Ok((ShardFile { name, doc, shard }, kind))
}

fn num(file: &str, v: &Value) -> Result<u64, UsageError> {
    v.as_u64()
        .ok_or_else(|| bad(file, format!("expected a whole number, found {v}")))
}

fn text<'a>(file: &str, v: &'a Value) -> Result<&'a str, UsageError> {
    v.as_str()
        .ok_or_else(|| bad(file, format!("expected text, found {v}")))
}

fn list<'a>(file: &str, v: &'a Value) -> Result<&'a Vec<Value>, UsageError> {
    v.as_array()
        .ok_or_else(|| bad(file, format!("expected a list, found {v}")))
}

fn range(file: &str, v: &Value) -> Result<Range<u64>, UsageError> {
    let r = num(file, &v["start"])?..num(file, &v["end"])?;
    if r.end < r.start {
        return Err(bad(file, format!("{}..{} is not a range", r.start, r.end)));
    }
    Ok(r)
}

fn seconds(v: &Value) -> Duration {
    Duration::from_secs_f64(v.as_f64().unwrap_or(0.0).clamp(0.0, 1e12))
}

/// What must be the same in every shard of one sweep, by the name `merge` reports.
fn identity(doc: &Value) -> Vec<(&'static str, Value)> {
    let names: Vec<Value> = doc["scenarios"]
        .as_array()
        .map(|s| s.iter().map(|s| s["name"].clone()).collect())
        .unwrap_or_default();
    vec![
        ("leasesim version", doc["leasesim_version"].clone()),
        ("variant", doc["variant"].clone()),
        ("scenarios", Value::Array(names)),
        ("seeds", doc["seeds"].clone()),
        ("check_determinism", doc["check_determinism"].clone()),
        ("allow_unsafe_timing", doc["allow_unsafe_timing"].clone()),
        ("shard count", doc["shard"]["count"].clone()),
    ]
}

/// Joins sorted, disjoint ranges, merging those that touch.
fn union(mut ranges: Vec<Range<u64>>) -> Vec<Range<u64>> {
    ranges.sort_by_key(|r| r.start);
    let mut out: Vec<Range<u64>> = Vec::new();
    for r in ranges.into_iter().filter(|r| !r.is_empty()) {
        match out.last_mut() {
            Some(last) if last.end >= r.start => last.end = last.end.max(r.end),
            _ => out.push(r),
        }
    }
    out
}

pub(super) fn merge_cmd(
    out: &mut dyn Write,
    paths: &[PathBuf],
    reports: &ReportFiles,
    dir: Option<&Path>,
    format: Format,
    cat: &[Machines],
) -> Result<i32, UsageError> {
    let inputs: Vec<&Path> = paths.iter().map(PathBuf::as_path).collect();
    reports.check(&inputs)?;
    let mut files = Vec::with_capacity(paths.len());
    let mut kind = None;
    for p in paths {
        let (f, k) = read(p)?;
        match kind {
            None => kind = Some(k),
            Some(was) if was != k => {
                return Err(bad(
                    &f.name,
                    format!(
                    "a {} result among {} results; merge the shards of one sweep or of one matrix",
                    if k == Kind::Matrix { "matrix" } else { "sweep" },
                    if was == Kind::Matrix {
                        "matrix"
                    } else {
                        "sweep"
                    },
                ),
                ))
            }
            Some(_) => {}
        }
        files.push(f);
    }
    if kind == Some(Kind::Matrix) {
        return merge_matrix(out, &files, reports, dir, format, cat);
    }
    if dir.is_some() {
        return Err(UsageError(
            "--out is for the shards of a matrix; a sweep's merge writes --json, --junit and --summary".into(),
        ));
    }
    let first = &files[0];
    let want = identity(&first.doc);
    for f in &files[1..] {
        for ((what, a), (_, b)) in want.iter().zip(identity(&f.doc)) {
            if *a != b {
                return Err(bad(
                    &f.name,
                    format!(
                        "not a shard of the same sweep as {}: its {what} is {b}, there {a}; merge the shards of one sweep, run by one leasesim",
                        first.name
                    ),
                ));
            }
        }
    }
    let doc = &first.doc;
    let names: Vec<String> = list(&first.name, &doc["scenarios"])?
        .iter()
        .map(|s| text(&first.name, &s["name"]).map(str::to_string))
        .collect::<Result<_, _>>()?;
    let defs = scenario_list(&names).map_err(|UsageError(e)| bad(&first.name, e))?;
    let m = machines(cat, text(&first.name, &doc["variant"])?).map_err(|UsageError(e)| {
        bad(
            &first.name,
            format!("{e}; merge with the program that ran the shards"),
        )
    })?;
    let seeds = range(&first.name, &doc["seeds"])?;
    if seeds.is_empty() {
        return Err(bad(&first.name, "a sweep of no seeds"));
    }
    let seeds = SeedRange {
        start: seeds.start,
        end: seeds.end,
    };
    let base = SweepConfig {
        check_determinism: doc["check_determinism"] == true,
        allow_unsafe_timing: doc["allow_unsafe_timing"] == true,
        ..SweepConfig::new(defs.clone(), seeds, m)
    };
    let count = first.shard.map_or(1, |s| s.count);
    let n = defs.len();

    let mut problems = Vec::new();
    let mut taken: BTreeMap<u64, &str> = BTreeMap::new();
    let mut merged_files = Vec::new();
    let mut scenarios = vec![ScenarioOutcome::default(); n];
    let mut kept: Vec<BTreeMap<u64, Failure>> = vec![BTreeMap::new(); n];
    let mut paths_saved: BTreeMap<(usize, u64), String> = BTreeMap::new();
    let (mut runs, mut events, mut threads) = (0u64, 0u64, 1usize);
    let (mut elapsed, mut elapsed_sum) = (0f64, 0f64);
    let mut budget: Option<BudgetOutcome> = None;
    for f in &files {
        let index = f.shard.map_or(1, |s| s.index);
        if let Some(other) = taken.get(&index) {
            problems.push(format!(
                "shard {index}/{count} is given twice ({other} and {}); {} is left out",
                f.name, f.name
            ));
            continue;
        }
        taken.insert(index, &f.name);
        let config = SweepConfig {
            shard: f.shard,
            ..base.clone()
        };
        let share = config.share()?;
        let d = &f.doc;
        let sc = list(&f.name, &d["scenarios"])?;
        if sc.len() != n {
            return Err(bad(&f.name, "its scenario list is not the sweep's"));
        }
        let mut file_runs = 0;
        for (j, s) in sc.iter().enumerate() {
            let named = range(&f.name, &s["share"])?;
            if named != share[j] {
                return Err(bad(
                    &f.name,
                    format!(
                        "its share of {} is seeds {}..{}, but shard {index}/{count} of this sweep holds {}..{}",
                        defs[j].name, named.start, named.end, share[j].start, share[j].end
                    ),
                ));
            }
            let o = &mut scenarios[j];
            let mut seeds_ran = 0;
            for r in list(&f.name, &s["ran"])? {
                let r = range(&f.name, r)?;
                if r.start < share[j].start || r.end > share[j].end {
                    return Err(bad(
                        &f.name,
                        format!(
                            "it ran seeds {}..{} of {}, outside its share",
                            r.start, r.end, defs[j].name
                        ),
                    ));
                }
                seeds_ran += r.end - r.start;
                o.ran.push(r);
            }
            let r = num(&f.name, &s["runs"])?;
            if r != seeds_ran {
                return Err(bad(
                    &f.name,
                    format!(
                        "it counts {r} runs of {} but names {seeds_ran} seeds that ran",
                        defs[j].name
                    ),
                ));
            }
            o.runs += r;
            file_runs += r;
            o.failing += num(&f.name, &s["failing"])?;
            o.unfinished += num(&f.name, &s["unfinished"])?;
            o.nondeterministic += num(&f.name, &s["nondeterministic"])?;
            // Seeds a SQL file could not express stay skipped in the merge, never passed.
            o.not_expressible += s["not_expressible"].as_u64().unwrap_or(0);
            if let Some(reasons) = s["not_expressible_reasons"].as_object() {
                for (why, k) in reasons {
                    let full = o.not_expressible_reasons.len() >= leasesim::sweep::REASONS_KEPT;
                    if !full || o.not_expressible_reasons.contains_key(why) {
                        *o.not_expressible_reasons.entry(why.clone()).or_default() +=
                            num(&f.name, k)?;
                    }
                }
            }
            o.busy += seconds(&s["busy_s"]);
            o.slowest_seed = o.slowest_seed.max(seconds(&s["slowest_seed_s"]));
            for x in list(&f.name, &s["nondeterministic_seeds"])? {
                o.nondeterministic_seeds.push((
                    num(&f.name, &x["seed"])?,
                    text(&f.name, &x["difference"])?.to_string(),
                ));
            }
            let hazards = s["hazards"]
                .as_object()
                .ok_or_else(|| bad(&f.name, "hazards are not a table"))?;
            for (name, k) in hazards {
                let h = Hazard::ALL
                    .iter()
                    .find(|h| h.name() == name)
                    .ok_or_else(|| bad(&f.name, format!("unknown hazard '{name}'")))?;
                *o.hazards.entry(*h).or_default() += num(&f.name, k)?;
            }
            for x in list(&f.name, &s["failures"])? {
                let seed = num(&f.name, &x["seed"])?;
                let verdict: Verdict = serde_json::from_value(x["verdict"].clone())
                    .map_err(|e| bad(&f.name, format!("a failure's verdict: {e}")))?;
                let invariants = list(&f.name, &x["invariants"])?
                    .iter()
                    .map(|i| {
                        let name = text(&f.name, i)?;
                        Invariant::ALL
                            .iter()
                            .find(|x| x.name() == name)
                            .map(|x| x.name())
                            .ok_or_else(|| bad(&f.name, format!("unknown invariant '{name}'")))
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                if let Some(p) = x["replay"].as_str() {
                    paths_saved.insert((j, seed), p.to_string());
                }
                kept[j].insert(
                    seed,
                    Failure {
                        scenario: j,
                        seed,
                        verdict,
                        first: text(&f.name, &x["first"])?.to_string(),
                        invariants,
                    },
                );
                if kept[j].len() > FAILURES_KEPT {
                    kept[j].pop_last();
                }
            }
        }
        runs += file_runs;
        events += num(&f.name, &d["events"])?;
        threads = threads.max(num(&f.name, &d["threads"])? as usize);
        let secs = d["elapsed_s"].as_f64().unwrap_or(0.0);
        elapsed = elapsed.max(secs);
        elapsed_sum += secs;
        if d["interrupted"] == true {
            problems.push(format!(
                "shard {index}/{count} ({}) was interrupted after {file_runs} of its {} runs",
                f.name,
                share.iter().map(|r| r.end - r.start).sum::<u64>()
            ));
        }
        if let Value::Object(b) = &d["budget"] {
            let this = BudgetOutcome {
                budget: seconds(&b["budget_s"]),
                spent: b["spent"] == true,
                overrun: seconds(&b["overrun_s"]),
                slowest_seed: seconds(&b["slowest_seed_s"]),
            };
            budget = Some(match budget {
                None => this,
                Some(was) => BudgetOutcome {
                    budget: was.budget.max(this.budget),
                    spent: was.spent || this.spent,
                    overrun: was.overrun.max(this.overrun),
                    slowest_seed: was.slowest_seed.max(this.slowest_seed),
                },
            });
        }
        merged_files.push((f.name.clone(), f.shard, file_runs));
    }
    let missing: Vec<String> = (1..=count)
        .filter(|k| !taken.contains_key(k))
        .map(|k| format!("{k}/{count}"))
        .collect();
    if !missing.is_empty() {
        problems.push(format!(
            "shard(s) {} missing: the merged result does not cover seeds {}..{} of every scenario",
            missing.join(", "),
            seeds.start,
            seeds.end
        ));
    }
    for (o, k) in scenarios.iter_mut().zip(kept) {
        o.failures = k.into_values().collect();
        o.ran = union(std::mem::take(&mut o.ran));
        o.nondeterministic_seeds.sort_by_key(|(s, _)| *s);
        o.nondeterministic_seeds.truncate(NONDETERMINISTIC_KEPT);
    }
    // Every shard there, none twice, none interrupted: then every seed of every scenario ran
    // once, unless a time budget ended a shard early, on purpose (what ran is then named).
    let budget_spent = budget.is_some_and(|b| b.spent);
    if problems.is_empty() && !budget_spent {
        for (d, o) in defs.iter().zip(&scenarios) {
            let whole = seeds.start..seeds.end;
            if o.ran != [whole.clone()] && !whole.is_empty() {
                problems.push(format!(
                    "{} ran seeds {} in these shards, not {}..{}",
                    d.name,
                    describe_ranges(&o.ran),
                    seeds.start,
                    seeds.end
                ));
            }
        }
    }
    let report = SweepReport {
        scenarios,
        runs,
        events,
        trace_events: 0,
        threads,
        interrupted: false,
        budget,
    };
    let coverage_judged = problems.is_empty();
    let unreached = if coverage_judged {
        report.unreached(&base, COVERAGE_MIN_SEEDS)
    } else {
        Vec::new()
    };
    let share = vec![seeds.start..seeds.end; n];
    let results = Results {
        defs,
        config: base,
        report,
        shard_source: None,
        random: doc["seeds_random_base"].as_u64(),
        share,
        coverage_judged,
        unreached,
        elapsed: elapsed.max(1e-9),
        listed: None,
        saved: Saved {
            paths: paths_saved,
            ..Saved::default()
        },
        merged: Some(Merged {
            files: merged_files,
            problems,
            elapsed_sum,
        }),
    };
    if format == Format::Json {
        io(writeln!(out, "{:#}", results.json()))?;
    } else {
        results.text(out)?;
    }
    let errors = reports.write(&results);
    if let Some(e) = errors.first() {
        return Err(UsageError(e.clone()));
    }
    Ok(results.outcome().exit_code())
}

/// What must be the same in every shard of one matrix, by the name `merge` reports.
fn matrix_identity(doc: &Value) -> Vec<(&'static str, Value)> {
    vec![
        ("leasesim version", doc["leasesim_version"].clone()),
        ("seeds", doc["seeds"].clone()),
        ("catalogue", doc["catalogue"].clone()),
        ("shard count", doc["shard"]["count"].clone()),
    ]
}

/// One cell of a matrix result.
fn matrix_cell(file: &str, v: &Value) -> Result<(u64, Cell), UsageError> {
    let name = text(file, &v["scenario"])?;
    let def = scenarios::find(name)
        .ok_or_else(|| bad(file, format!("unknown scenario '{name}' in a cell")))?;
    let invariants = list(file, &v["invariants"])?
        .iter()
        .map(|i| text(file, i).map(str::to_string))
        .collect::<Result<Vec<_>, _>>()?;
    let first_failing_seed = match &v["first_failing_seed"] {
        Value::Null => None,
        s => Some(num(file, s)?),
    };
    Ok((
        num(file, &v["index"])?,
        Cell {
            scenario: def.name,
            seeds_run: num(file, &v["seeds_run"])?,
            first_failing_seed,
            failing: num(file, &v["failing"])?,
            unfinished: num(file, &v["unfinished"])?,
            invariants,
            refused_by_validation: v["refused_by_validation"] == true,
            not_expressible: v["not_expressible"].as_u64().unwrap_or(0),
        },
    ))
}

/// The shards of a matrix as the whole matrix: every cell from exactly one shard, then the
/// tables, JUnit and summary of the whole; a shard missing or given twice is INCOMPLETE and no
/// table is made.
fn merge_matrix(
    out: &mut dyn Write,
    files: &[ShardFile],
    reports: &ReportFiles,
    dir: Option<&Path>,
    format: Format,
    cat: &[Machines],
) -> Result<i32, UsageError> {
    let first = &files[0];
    let want = matrix_identity(&first.doc);
    for f in &files[1..] {
        for ((what, a), (_, b)) in want.iter().zip(matrix_identity(&f.doc)) {
            if *a != b {
                return Err(bad(
                    &f.name,
                    format!(
                        "not a shard of the same matrix as {}: its {what} is {b}, there {a}; merge the shards of one matrix, run by one leasesim",
                        first.name
                    ),
                ));
            }
        }
    }
    let seeds = num(&first.name, &first.doc["seeds"])?;
    // The matrix's own machines, in its order, from this program's catalogue.
    let machines: Vec<Machines> = list(&first.name, &first.doc["catalogue"])?
        .iter()
        .map(|m| {
            let name = text(&first.name, &m["name"])?;
            machines(cat, name).map_err(|UsageError(e)| {
                bad(
                    &first.name,
                    format!("{e}; merge with the program that ran the shards"),
                )
            })
        })
        .collect::<Result<_, _>>()?;
    if machines.is_empty() || seeds == 0 {
        return Err(bad(
            &first.name,
            "a matrix of no machines or no seeds; write one with matrix --json FILE",
        ));
    }
    let count = first.shard.map_or(1, |s| s.count);
    let mut problems = Vec::new();
    let mut taken: BTreeMap<u64, &str> = BTreeMap::new();
    let mut cells: Vec<(u64, Cell)> = Vec::new();
    let mut merged_files = Vec::new();
    let mut elapsed = 0f64;
    for f in files {
        let index = f.shard.map_or(1, |s| s.index);
        if let Some(other) = taken.get(&index) {
            problems.push(format!(
                "shard {index}/{count} is given twice ({other} and {}); {} is left out",
                f.name, f.name
            ));
            continue;
        }
        taken.insert(index, &f.name);
        let held = matrix::shard_cells(&machines, f.shard);
        let mine: Vec<(u64, Cell)> = list(&f.name, &f.doc["cells"])?
            .iter()
            .map(|c| matrix_cell(&f.name, c))
            .collect::<Result<_, _>>()?;
        let numbers: Vec<u64> = mine.iter().map(|(i, _)| *i).collect();
        if numbers != held.clone().collect::<Vec<u64>>() {
            return Err(bad(
                &f.name,
                format!(
                    "its cells are not the cells {}..{} that shard {index}/{count} of this matrix holds",
                    held.start, held.end
                ),
            ));
        }
        elapsed = elapsed.max(f.doc["elapsed_s"].as_f64().unwrap_or(0.0));
        merged_files.push(json!({
            "file": f.name,
            "shard": f.shard.map(|s| s.to_string()),
            "cells": mine.len(),
        }));
        cells.extend(mine);
    }
    let missing: Vec<String> = (1..=count)
        .filter(|k| !taken.contains_key(k))
        .map(|k| format!("{k}/{count}"))
        .collect();
    if !missing.is_empty() {
        problems.push(format!(
            "shard(s) {} missing: the merged matrix lacks their cells",
            missing.join(", ")
        ));
    }
    let whole = if problems.is_empty() {
        Some(matrix::assemble(&machines, seeds, cells.clone()).map_err(UsageError)?)
    } else {
        None
    };
    let mut doc =
        super::matrix::result_json(&machines, seeds, None, &cells, whole.as_ref(), elapsed);
    doc["merged"] = json!({"files": merged_files, "problems": problems});
    let Some(m) = whole else {
        // No table from part of a matrix: say what is missing.
        if let Some(path) = &reports.json {
            leasesim::files::write(path, format!("{doc:#}\n"))
                .map_err(|e| UsageError(format!("cannot write {}: {e}", path.display())))?;
        }
        if format == Format::Json {
            io(writeln!(out, "{doc:#}"))?;
        } else {
            for p in &problems {
                io(writeln!(out, "INCOMPLETE: {p}"))?;
            }
            io(writeln!(
                out,
                "matrix: {} of {} cells merged from {} file(s); verdict INCOMPLETE",
                cells.len(),
                machines.len() * scenarios::ALL.len(),
                files.len()
            ))?;
        }
        return Ok(1);
    };
    let dir = dir.map(|d| OutDir::prepare("--out", d)).transpose()?;
    let to = super::matrix::WholeOutputs {
        dir: dir.as_ref().map(|d| d.path.as_path()),
        reports,
        format,
        footer: format!(
            "matrix merged from {} shard result(s){}; verdict {}",
            files.len(),
            dir.as_ref().map_or(String::new(), |d| format!(
                ", written to {}",
                d.path.join("matrix.md").display()
            )),
            if m.reference_clean && m.all_caught {
                "HELD"
            } else {
                "FAILED"
            }
        ),
    };
    super::matrix::finish_whole(out, &m, doc, &to, &machines)
}
