//! `merge`: the results of a sweep's shards (`sweep --json`) as one result, rendered the way a
//! sweep's own is (text, JSON, JUnit, Markdown). Each file is read into typed fields (`doc`)
//! and checked against itself (`check`) before anything of it is merged; then the files are
//! checked to be results of one sweep (the same leasesim version, machines, scenarios, seeds and
//! checks) and `merge` says what keeps them from being the whole sweep: a shard missing, given
//! twice, or interrupted. Counts and hazard counts add up, refused past 2^64 - 1; a hazard
//! reached in any shard counts; the failure lists join and keep, per scenario, the lowest
//! [`FAILURES_KEPT`] seeds, the same ones the unsharded sweep keeps. The shards of a matrix
//! merge into the whole matrix in the same way: one version, seeds and catalogue, every cell
//! from exactly one shard.

mod check;
mod doc;

use crate::files::ReportFiles;
use crate::sweep::{Merged, Results, Saved};
use crate::{io, BadInput, Format};
use check::{MatrixShard, SweepShard};
use doc::{bad, CellDoc, Doc, FailureDoc, MatrixDoc, ScenarioDoc, Seconds, Span, SweepDoc};
use leasesim::files::OutDir;
use leasesim::hazard::Hazard;
use leasesim::matrix::{self, Cell};
use leasesim::sweep::{
    describe_ranges, BudgetOutcome, Failure, ScenarioOutcome, SeedRange, Shard, SweepConfig,
    SweepReport, FAILURES_KEPT, REASONS_KEPT,
};
use leasesim::{Invariant, Machines};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::io::Write;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Determinism differences kept per scenario, as the sweep keeps them.
const NONDETERMINISTIC_KEPT: usize = 100;

fn seconds(s: Seconds) -> Duration {
    Duration::from_secs_f64(s.0.clamp(0.0, 1e12))
}

/// `total + more`, refused past 2^64 - 1: a count that wrapped would merge into a wrong verdict.
fn add(file: &str, field: &str, total: u64, more: u64) -> Result<u64, BadInput> {
    total.checked_add(more).ok_or_else(|| {
        bad(
            file,
            format!(
                "{field}: its {more} and the {total} of the files before it add up past 2^64 - 1"
            ),
        )
    })
}

/// What must be the same in every shard of one sweep, by the name `merge` reports.
fn identity(doc: &SweepDoc) -> [(&'static str, Value); 8] {
    let names: Vec<&str> = doc.scenarios.0.iter().map(|s| s.name.as_str()).collect();
    [
        ("leasesim version", json!(doc.leasesim_version)),
        ("variant", json!(doc.variant)),
        ("scenarios", json!(names)),
        (
            "seeds",
            json!({"start": doc.seeds.0.start, "end": doc.seeds.0.end}),
        ),
        ("check_determinism", json!(doc.check_determinism)),
        ("allow_unsafe_timing", json!(doc.allow_unsafe_timing)),
        ("allow_skipped", json!(doc.allow_skipped.0)),
        ("shard count", json!(doc.shard.map(|s| s.0.count))),
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

/// The files of one merge, each read and checked on its own: a sweep's shards or a matrix's.
enum Files {
    Sweep(Vec<SweepShard>),
    Matrix(Vec<MatrixShard>),
}

/// Reads and checks every file; a sweep's result among a matrix's (or the other way) is
/// refused.
fn read_all(
    paths: &[PathBuf],
    cat: &[Machines],
    scen: &[leasesim::ScenarioDef],
) -> Result<Files, BadInput> {
    let (mut sweeps, mut matrices) = (Vec::new(), Vec::new());
    for p in paths {
        let (name, doc) = doc::read(p)?;
        let is_matrix = matches!(doc, Doc::Matrix(_));
        let any = !sweeps.is_empty() || !matrices.is_empty();
        if any && is_matrix == matrices.is_empty() {
            let kind = |matrix: bool| if matrix { "matrix" } else { "sweep" };
            return Err(bad(
                &name,
                format!(
                    "a {} result among {} results; merge the shards of one sweep or of one matrix",
                    kind(is_matrix),
                    kind(!is_matrix)
                ),
            ));
        }
        match doc {
            Doc::Sweep(d) => sweeps.push(check::sweep(name, d, cat, scen)?),
            Doc::Matrix(d) => matrices.push(check::matrix(name, d, cat, scen)?),
        }
    }
    if !matrices.is_empty() {
        Ok(Files::Matrix(matrices))
    } else if !sweeps.is_empty() {
        Ok(Files::Sweep(sweeps))
    } else {
        Err(BadInput(
            "merge needs the result files of a sweep's shards".into(),
        ))
    }
}

/// `leasesim merge`: reads and checks every file, merges them into the whole sweep (or
/// matrix), and writes and prints it as the sweep (or matrix) itself would; returns the exit
/// code.
pub fn merge_cmd(
    out: &mut dyn Write,
    paths: &[PathBuf],
    reports: &ReportFiles,
    dir: Option<&Path>,
    format: Format,
    cat: &[Machines],
    scen: &[leasesim::ScenarioDef],
) -> Result<i32, BadInput> {
    let inputs: Vec<&Path> = paths.iter().map(PathBuf::as_path).collect();
    reports.check(&inputs)?;
    match read_all(paths, cat, scen)? {
        Files::Matrix(files) => merge_matrix(out, files, reports, dir, format, scen),
        Files::Sweep(_) if dir.is_some() => Err(BadInput(
            "--out is for the shards of a matrix; a sweep's merge writes --json, --junit and --summary".into(),
        )),
        Files::Sweep(files) => merge_sweep(out, files, reports, format, scen),
    }
}

/// Every file a shard of the first one's sweep.
fn same_sweep(files: &[SweepShard]) -> Result<(), BadInput> {
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
    Ok(())
}

fn merge_sweep(
    out: &mut dyn Write,
    files: Vec<SweepShard>,
    reports: &ReportFiles,
    format: Format,
    scen: &[leasesim::ScenarioDef],
) -> Result<i32, BadInput> {
    same_sweep(&files)?;
    let first = &files[0];
    let doc = &first.doc;
    let seeds = SeedRange {
        start: doc.seeds.0.start,
        end: doc.seeds.0.end,
    };
    let base = SweepConfig {
        check_determinism: doc.check_determinism,
        allow_unsafe_timing: doc.allow_unsafe_timing,
        allow_skipped: doc.allow_skipped.0.clone(),
        ..SweepConfig::new(first.defs.clone(), seeds, first.machines.clone())
    };
    let count = first.shard().map_or(1, |s| s.count);
    let random = doc.seeds_random_base;
    let mut sum = Sum::new(base.scenarios.len());
    for f in files {
        sum.file(f, count)?;
    }
    let results = sum.results(base, count, random, scen);
    if format == Format::Json {
        io(writeln!(out, "{:#}", results.json()))?;
    } else {
        results.text(out)?;
    }
    let errors = reports.write(&results);
    if let Some(e) = errors.first() {
        return Err(BadInput(e.clone()));
    }
    Ok(results.outcome().exit_code())
}

/// What the shards of a sweep add up to, folded in one file at a time.
struct Sum {
    problems: Vec<String>,
    /// The file each shard came from, by its index.
    taken: BTreeMap<u64, String>,
    files: Vec<(String, Option<Shard>, u64)>,
    scenarios: Vec<ScenarioOutcome>,
    /// Per scenario, the lowest failing seeds so far.
    kept: Vec<BTreeMap<u64, Failure>>,
    /// The replay file each kept failure's shard saved, by (scenario, seed).
    replays: BTreeMap<(usize, u64), String>,
    runs: u64,
    events: u64,
    threads: usize,
    elapsed: f64,
    elapsed_sum: f64,
    budget: Option<BudgetOutcome>,
}

impl Sum {
    fn new(n: usize) -> Sum {
        Sum {
            problems: Vec::new(),
            taken: BTreeMap::new(),
            files: Vec::new(),
            scenarios: vec![ScenarioOutcome::default(); n],
            kept: vec![BTreeMap::new(); n],
            replays: BTreeMap::new(),
            runs: 0,
            events: 0,
            threads: 1,
            elapsed: 0.0,
            elapsed_sum: 0.0,
            budget: None,
        }
    }

    /// Adds one shard's file (a shard given twice is named and left out).
    fn file(&mut self, f: SweepShard, count: u64) -> Result<(), BadInput> {
        let shard = f.shard();
        let index = shard.map_or(1, |s| s.index);
        if let Some(other) = self.taken.get(&index) {
            self.problems.push(format!(
                "shard {index}/{count} is given twice ({other} and {}); {} is left out",
                f.name, f.name
            ));
            return Ok(());
        }
        self.taken.insert(index, f.name.clone());
        let share_runs: u64 = f.share.iter().map(|r| r.end - r.start).sum();
        let (name, doc) = (f.name, *f.doc);
        let mut file_runs = 0;
        for (j, s) in doc.scenarios.0.into_iter().enumerate() {
            file_runs = add(&name, "runs", file_runs, s.runs)?;
            self.scenario(&name, j, s)?;
        }
        self.runs = add(&name, "runs", self.runs, file_runs)?;
        self.events = add(&name, "events", self.events, doc.events)?;
        // At most THREADS_MAX: the check refused more.
        self.threads = self.threads.max(doc.threads as usize);
        self.elapsed = self.elapsed.max(doc.elapsed_s.0);
        self.elapsed_sum += doc.elapsed_s.0;
        if doc.interrupted {
            self.problems.push(format!(
                "shard {index}/{count} ({name}) was interrupted after {file_runs} of its {share_runs} runs"
            ));
        }
        if let Some(b) = &doc.budget {
            let this = BudgetOutcome {
                budget: seconds(b.budget_s),
                spent: b.spent,
                overrun: seconds(b.overrun_s),
                slowest_seed: seconds(b.slowest_seed_s),
            };
            self.budget = Some(match self.budget {
                None => this,
                Some(was) => BudgetOutcome {
                    budget: was.budget.max(this.budget),
                    spent: was.spent || this.spent,
                    overrun: was.overrun.max(this.overrun),
                    slowest_seed: was.slowest_seed.max(this.slowest_seed),
                },
            });
        }
        self.files.push((name, shard, file_runs));
        Ok(())
    }

    /// Adds one scenario of one file.
    fn scenario(&mut self, file: &str, j: usize, s: ScenarioDoc) -> Result<(), BadInput> {
        let field = |name: &str| format!("scenarios[{j}].{name}");
        let o = &mut self.scenarios[j];
        o.ran.extend(s.ran.0.into_iter().map(|Span(r)| r));
        o.runs = add(file, &field("runs"), o.runs, s.runs)?;
        o.failing = add(file, &field("failing"), o.failing, s.failing)?;
        o.unfinished = add(file, &field("unfinished"), o.unfinished, s.unfinished)?;
        o.nondeterministic = add(
            file,
            &field("nondeterministic"),
            o.nondeterministic,
            s.nondeterministic,
        )?;
        // Seeds a SQL file could not express stay skipped in the merge, never passed.
        o.not_expressible = add(
            file,
            &field("not_expressible"),
            o.not_expressible,
            s.not_expressible,
        )?;
        for (why, k) in s.not_expressible_reasons.0 {
            // As the sweep keeps them: past REASONS_KEPT reasons, a new one counts under the last.
            let reasons = &mut o.not_expressible_reasons;
            let full = reasons.len() >= REASONS_KEPT;
            let key = match reasons.keys().next_back() {
                Some(last) if full && !reasons.contains_key(&why) => last.clone(),
                _ => why,
            };
            let entry = reasons.entry(key).or_default();
            *entry = add(file, &field("not_expressible_reasons"), *entry, k)?;
        }
        o.busy += seconds(s.busy_s);
        o.slowest_seed = o.slowest_seed.max(seconds(s.slowest_seed_s));
        o.nondeterministic_seeds.extend(
            s.nondeterministic_seeds
                .0
                .into_iter()
                .map(|d| (d.seed, d.difference)),
        );
        for (name, k) in s.hazards.0 {
            // Every name is one of Hazard::ALL: the check refused any other.
            if let Some(h) = Hazard::ALL.iter().find(|h| h.name() == name) {
                let count = o.hazards.entry(*h).or_default();
                *count = add(file, &field(&format!("hazards.{name}")), *count, k)?;
            }
        }
        for x in s.skipped.0 {
            let kind = leasesim::sweep::SkipKind {
                judgement: x.judgement,
                invariant: x.invariant,
                spec: x.spec,
                cause: x.cause,
            };
            let name = format!("skipped.{}", kind.label());
            let count = o.skipped.entry(kind).or_default();
            *count = add(file, &field(&name), *count, x.runs)?;
        }
        for (judgement, k) in s.skipped_runs.0 {
            let name = format!("skipped_runs.{judgement}");
            let count = o.skipped_runs.entry(judgement).or_default();
            *count = add(file, &field(&name), *count, k)?;
        }
        self.keep_failures(j, s.failures.0);
        Ok(())
    }

    /// Keeps scenario `j`'s lowest failing seeds over every file, with their replay files.
    fn keep_failures(&mut self, j: usize, failures: Vec<FailureDoc>) {
        let kept = &mut self.kept[j];
        for x in failures {
            let invariants = Invariant::ALL
                .iter()
                .map(|i| i.name())
                .filter(|i| x.invariants.0.iter().any(|n| n == i))
                .collect::<Vec<_>>();
            if let Some(p) = x.replay {
                self.replays.insert((j, x.seed), p);
            }
            kept.insert(
                x.seed,
                Failure {
                    scenario: j,
                    seed: x.seed,
                    verdict: x.verdict,
                    first: x.first,
                    invariants,
                    faults: x.faults,
                    events: x.events,
                },
            );
            if kept.len() > FAILURES_KEPT {
                if let Some((seed, _)) = kept.pop_last() {
                    self.replays.remove(&(j, seed));
                }
            }
        }
    }

    /// Says which of the `count` shards no file gave.
    fn name_missing_shards(&mut self, count: u64, seeds: &SeedRange) {
        let missing: Vec<String> = (1..=count)
            .filter(|k| !self.taken.contains_key(k))
            .map(|k| format!("{k}/{count}"))
            .collect();
        if !missing.is_empty() {
            self.problems.push(format!(
                "shard(s) {} missing: the merged result does not cover seeds {}..{} of every scenario",
                missing.join(", "),
                seeds.start,
                seeds.end
            ));
        }
    }

    /// The merged result, with what keeps it from being the whole sweep.
    fn results(
        mut self,
        base: SweepConfig,
        count: u64,
        random: Option<u64>,
        scen: &[leasesim::ScenarioDef],
    ) -> Results {
        let seeds = base.seeds;
        self.name_missing_shards(count, &seeds);
        for (o, k) in self.scenarios.iter_mut().zip(self.kept) {
            o.failures = k.into_values().collect();
            o.ran = union(std::mem::take(&mut o.ran));
            o.nondeterministic_seeds.sort_by_key(|(s, _)| *s);
            o.nondeterministic_seeds.truncate(NONDETERMINISTIC_KEPT);
        }
        // Every shard there, none twice, none interrupted: then every seed of every scenario ran
        // once, unless a time budget ended a shard early, on purpose (what ran is then named).
        let budget_spent = self.budget.is_some_and(|b| b.spent);
        if self.problems.is_empty() && !budget_spent {
            for (d, o) in base.scenarios.iter().zip(&self.scenarios) {
                let whole = seeds.start..seeds.end;
                if o.ran != [whole.clone()] && !whole.is_empty() {
                    self.problems.push(format!(
                        "{} ran seeds {} in these shards, not {}..{}",
                        d.name,
                        describe_ranges(&o.ran),
                        seeds.start,
                        seeds.end
                    ));
                }
            }
        }
        let n = base.scenarios.len();
        let report = SweepReport {
            scenarios: self.scenarios,
            runs: self.runs,
            events: self.events,
            trace_events: 0,
            threads: self.threads,
            interrupted: false,
            budget: self.budget,
        };
        // The shards together are the whole sweep only when nothing is missing or repeated.
        let unreached = report.coverage(&base).filter(|_| self.problems.is_empty());
        let coverage_judged = unreached.is_some();
        let unreached = unreached.unwrap_or_default();
        Results {
            program_scenarios: (scen.len(), leasesim::scenarios::is_stock_list(scen)),
            defs: base.scenarios.clone(),
            config: base,
            report,
            shard_source: None,
            random,
            share: vec![seeds.start..seeds.end; n],
            coverage_judged,
            unreached,
            elapsed: self.elapsed.max(1e-9),
            listed: None,
            saved: Saved {
                paths: self.replays,
                ..Saved::default()
            },
            merged: Some(Merged {
                files: self.files,
                problems: self.problems,
                elapsed_sum: self.elapsed_sum,
            }),
        }
    }
}

/// What must be the same in every shard of one matrix, by the name `merge` reports.
fn matrix_identity(doc: &MatrixDoc) -> [(&'static str, Value); 4] {
    let catalogue: Vec<Value> = doc
        .catalogue
        .iter()
        .map(|m| json!({"name": m.name, "known_bad": m.known_bad}))
        .collect();
    [
        ("leasesim version", json!(doc.leasesim_version)),
        ("seeds", json!(doc.seeds)),
        ("catalogue", Value::Array(catalogue)),
        ("shard count", json!(doc.shard.map(|s| s.0.count))),
    ]
}

/// One cell of a matrix result, checked: its scenario is its column's.
fn matrix_cell(c: CellDoc, scen: &[leasesim::ScenarioDef]) -> (u64, Cell) {
    let n = scen.len() as u64;
    (
        c.index,
        Cell {
            scenario: scen[(c.index % n) as usize].name.to_string(),
            seeds_run: c.seeds_run,
            first_failing_seed: c.first_failing_seed,
            failing: c.failing,
            unfinished: c.unfinished,
            invariants: c.invariants.0,
            refused_by_validation: c.refused_by_validation,
            not_expressible: c.not_expressible,
            skipped: c.skipped.0,
        },
    )
}

/// The shards of a matrix as the whole matrix: every cell from exactly one shard, then the
/// tables, JUnit and summary of the whole; a shard missing or given twice is INCOMPLETE and no
/// table is made.
fn merge_matrix(
    out: &mut dyn Write,
    files: Vec<MatrixShard>,
    reports: &ReportFiles,
    dir: Option<&Path>,
    format: Format,
    scen: &[leasesim::ScenarioDef],
) -> Result<i32, BadInput> {
    same_matrix(&files)?;
    let first = &files[0];
    let seeds = first.doc.seeds;
    // The matrix's own machines, in its order, from this program's catalogue.
    let machines = first.machines.clone();
    let given = files.len();
    let Gathered {
        problems,
        cells,
        merged_files,
        elapsed,
    } = gather(files, scen);
    let whole = if problems.is_empty() {
        Some(matrix::assemble(&machines, scen, seeds, cells.clone()).map_err(BadInput)?)
    } else {
        None
    };
    let mut doc = crate::matrix::result_json(
        &machines,
        seeds,
        None,
        &cells,
        whole.as_ref(),
        elapsed,
        scen,
    );
    doc["merged"] = json!({"files": merged_files, "problems": problems});
    let Some(m) = whole else {
        // No table from part of a matrix: say what is missing.
        if let Some(path) = &reports.json {
            leasesim::files::write(path, format!("{doc:#}\n"))
                .map_err(|e| BadInput(format!("cannot write {}: {e}", path.display())))?;
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
                machines.len() * scen.len(),
                given
            ))?;
        }
        return Ok(1);
    };
    let dir = dir.map(|d| OutDir::prepare("--out", d)).transpose()?;
    let to = crate::matrix::WholeOutputs {
        dir: dir.as_ref().map(|d| d.path.as_path()),
        reports,
        format,
        footer: merged_footer(given, dir.as_ref(), &m),
        page_limit: None,
    };
    crate::matrix::finish_whole(out, &m, doc, &to, &machines, scen)
}

/// The merged matrix's last line: how many shards, where it was written, its verdict.
fn merged_footer(given: usize, dir: Option<&OutDir>, m: &matrix::Matrix) -> String {
    format!(
        "matrix merged from {} shard result(s){}; verdict {}",
        given,
        dir.map_or(String::new(), |d| format!(
            ", written to {}",
            d.path.join("matrix.md").display()
        )),
        if m.reference_clean && m.all_caught {
            "HELD"
        } else {
            "FAILED"
        }
    )
}

/// Refuses files that are not shards of the first one's matrix.
fn same_matrix(files: &[MatrixShard]) -> Result<(), BadInput> {
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
    Ok(())
}

/// The cells of a matrix's shards, each shard taken once.
struct Gathered {
    /// A shard given twice or missing.
    problems: Vec<String>,
    /// Every cell, by its index in the whole matrix.
    cells: Vec<(u64, Cell)>,
    /// Each file merged: its name, shard and number of cells.
    merged_files: Vec<serde_json::Value>,
    /// The longest shard's time.
    elapsed: f64,
}

/// Takes the cells of each shard once, in the files' order, and names the shards missing.
fn gather(files: Vec<MatrixShard>, scen: &[leasesim::ScenarioDef]) -> Gathered {
    let count = files[0].shard().map_or(1, |s| s.count);
    let mut problems = Vec::new();
    let mut taken: BTreeMap<u64, String> = BTreeMap::new();
    let mut cells: Vec<(u64, Cell)> = Vec::new();
    let mut merged_files = Vec::new();
    let mut elapsed = 0f64;
    for f in files {
        let shard = f.shard();
        let index = shard.map_or(1, |s| s.index);
        if let Some(other) = taken.get(&index) {
            problems.push(format!(
                "shard {index}/{count} is given twice ({other} and {}); {} is left out",
                f.name, f.name
            ));
            continue;
        }
        taken.insert(index, f.name.clone());
        let doc = *f.doc;
        let mine: Vec<(u64, Cell)> = doc
            .cells
            .0
            .into_iter()
            .map(|c| matrix_cell(c, scen))
            .collect();
        elapsed = elapsed.max(doc.elapsed_s.0);
        merged_files.push(json!({
            "file": f.name,
            "shard": shard.map(|s| s.to_string()),
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
    Gathered {
        problems,
        cells,
        merged_files,
        elapsed,
    }
}
