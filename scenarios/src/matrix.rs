//! The mutation matrix: every variant (and the reference) against every scenario. For a design
//! reviewer it answers, variant by variant: is this bug caught, by which scenario and which
//! invariants, after how many seeds, and with which command can I see it. The result is the
//! reports' plain data ([`Matrix`]); the reports render it as Markdown and HTML.

pub use leasesim_reports::matrix::{html, markdown, Cell, Matrix, Row};

use crate::pool;
use crate::run::Verdict;
use crate::scenarios::{self, ScenarioDef};
use crate::sweep::{self, SeedRange, SweepConfig};
use leasesim_protocol::{Invariant, Variant};
use std::collections::BTreeSet;
use std::sync::atomic::AtomicBool;

/// Seeds per scenario the matrix runs by default.
pub const DEFAULT_SEEDS: u64 = 200;

/// The command that reproduces a variant's failure (V12's includes the validation bypass).
pub fn reproduce(scenario: &str, seed: u64, v: Variant) -> String {
    crate::run::reproduce_command(scenario, seed, v)
}

/// One (variant, scenario) pair: the library's sweep on one thread, in seed order, stopping at
/// the first seed that violates an invariant (the reference runs every seed).
fn cell(def: &'static ScenarioDef, v: Variant, seeds: u64) -> Cell {
    let config = SweepConfig {
        threads: 1,
        // The matrix runs V12 past validation on purpose and says that validation refuses it.
        allow_unsafe_timing: true,
        stop_at_first_violation: v != Variant::Reference,
        ..SweepConfig::new(
            vec![def],
            SeedRange {
                start: 0,
                end: seeds,
            },
            v,
        )
    };
    let report = sweep::sweep(&config, &AtomicBool::new(false), &sweep::Quiet);
    let o = &report.scenarios[0];
    // A runaway run is a failure of its own, but a variant counts as caught only when a
    // checker names the invariant it broke.
    let first = o.failures.iter().find(|f| f.verdict == Verdict::Violated);
    let labels: BTreeSet<String> = first
        .map(|f| f.invariants.as_slice())
        .unwrap_or_default()
        .iter()
        .filter_map(|name| Invariant::ALL.iter().find(|i| i.name() == *name))
        .map(|i| i.label())
        .collect();
    Cell {
        scenario: def.name,
        seeds_run: o.runs,
        first_failing_seed: first.map(|f| f.seed),
        failing: o.failing - o.unfinished,
        unfinished: o.unfinished,
        invariants: labels.into_iter().collect(),
        refused_by_validation: (def.build)(0, v).validate_timing().is_err(),
    }
}

/// Runs the matrix on `threads` threads with `seeds` seeds per scenario at most.
pub fn run(seeds: u64, threads: usize) -> Matrix {
    let pairs: Vec<(usize, usize)> = (0..Variant::ALL.len())
        .flat_map(|v| (0..scenarios::ALL.len()).map(move |s| (v, s)))
        .collect();
    let never = AtomicBool::new(false);
    let work = pool::Chunks::new(pairs.len() as u64, 1, &never);
    let mut done: Vec<(u64, Cell)> = pool::run(threads, |_| {
        let mut mine = Vec::new();
        while let Some((i, _)) = work.take() {
            let (v, sc) = pairs[i as usize];
            mine.push((i, cell(&scenarios::ALL[sc], Variant::ALL[v], seeds)));
        }
        mine
    })
    .into_iter()
    .flatten()
    .collect();
    done.sort_by_key(|(i, _)| *i);
    assert_eq!(done.len(), pairs.len(), "every pair ran");
    let cells: Vec<Cell> = done.into_iter().map(|(_, c)| c).collect();
    let rows: Vec<Row> = Variant::ALL
        .iter()
        .enumerate()
        .map(|(v, variant)| {
            let row_cells: Vec<Cell> =
                cells[v * scenarios::ALL.len()..(v + 1) * scenarios::ALL.len()].to_vec();
            let caught_cells: Vec<&Cell> = row_cells
                .iter()
                .filter(|c| c.first_failing_seed.is_some())
                .collect();
            let best = caught_cells
                .iter()
                .min_by_key(|c| (c.first_failing_seed, c.scenario))
                .copied();
            let invariants: BTreeSet<String> = caught_cells
                .iter()
                .flat_map(|c| c.invariants.iter().cloned())
                .collect();
            Row {
                variant: variant.name(),
                spec: variant.spec_id(),
                summary: variant.summary(),
                caught: best.is_some(),
                invariants: invariants.into_iter().collect(),
                caught_by: caught_cells.iter().map(|c| c.scenario).collect(),
                best_scenario: best.map(|c| c.scenario),
                first_failing_seed: best.and_then(|c| c.first_failing_seed),
                seeds_to_detection: best.and_then(|c| c.first_failing_seed).map(|s| s + 1),
                reproduce: best.and_then(|c| {
                    c.first_failing_seed
                        .map(|seed| reproduce(c.scenario, seed, *variant))
                }),
                cells: row_cells,
            }
        })
        .collect();
    let reference_clean = !rows[0].caught && rows[0].cells.iter().all(|c| c.unfinished == 0);
    let all_caught = rows.iter().skip(1).all(|r| r.caught);
    let mut detections: Vec<u64> = rows
        .iter()
        .skip(1)
        .filter_map(|r| r.seeds_to_detection)
        .collect();
    detections.sort();
    let median_seeds_to_detection =
        (!detections.is_empty()).then(|| detections[detections.len() / 2]);
    Matrix {
        seeds,
        rows,
        reference_clean,
        all_caught,
        median_seeds_to_detection,
    }
}
