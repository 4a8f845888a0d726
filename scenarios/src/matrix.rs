//! The mutation matrix: every variant (and the reference) against every scenario. For a design
//! reviewer it answers, variant by variant: is this bug caught, by which scenario and which
//! invariants, after how many seeds, and with which command can I see it.

use crate::pool;
use crate::run::Verdict;
use crate::scenarios::{self, ScenarioDef};
use crate::sweep::{self, SeedRange, SweepConfig};
use leasesim_protocol::{Invariant, Variant};
use serde::Serialize;
use std::collections::BTreeSet;
use std::sync::atomic::AtomicBool;

/// Seeds per scenario the matrix runs by default.
pub const DEFAULT_SEEDS: u64 = 200;

/// One (variant, scenario) pair.
#[derive(Clone, Debug, Serialize)]
pub struct Cell {
    /// Scenario name.
    pub scenario: &'static str,
    /// Seeds run (a variant stops at its first failing seed).
    pub seeds_run: u64,
    /// The first failing seed, if any.
    pub first_failing_seed: Option<u64>,
    /// Seeds that broke an invariant among those run (the reference runs them all).
    pub failing: u64,
    /// Runs that hit a limit without a finding (runaways).
    pub unfinished: u64,
    /// Invariants the first failure broke (or `unfinished` for a runaway run).
    pub invariants: Vec<String>,
    /// Whether validation refused the configuration before it was run with the bypass.
    pub refused_by_validation: bool,
}

/// One variant's row.
#[derive(Clone, Debug, Serialize)]
pub struct Row {
    /// Variant name.
    pub variant: &'static str,
    /// SPEC id.
    pub spec: &'static str,
    /// The bug.
    pub summary: &'static str,
    /// Whether some scenario caught it (for the reference: whether it failed anywhere).
    pub caught: bool,
    /// Invariants that caught it, over all scenarios.
    pub invariants: Vec<String>,
    /// Scenarios that caught it.
    pub caught_by: Vec<&'static str>,
    /// The scenario that needed the fewest seeds.
    pub best_scenario: Option<&'static str>,
    /// Its first failing seed.
    pub first_failing_seed: Option<u64>,
    /// Seeds run until detection in that scenario: the first failing seed + 1 (seeds start at 0).
    pub seeds_to_detection: Option<u64>,
    /// The command that reproduces it.
    pub reproduce: Option<String>,
    /// Every cell of the row.
    pub cells: Vec<Cell>,
}

/// The whole matrix.
#[derive(Clone, Debug, Serialize)]
pub struct Matrix {
    /// Seeds per scenario budget.
    pub seeds: u64,
    /// One row per variant, the reference first.
    pub rows: Vec<Row>,
    /// Whether the reference held everywhere.
    pub reference_clean: bool,
    /// Whether every known-bad variant was caught.
    pub all_caught: bool,
    /// Median seeds to detection over the caught variants.
    pub median_seeds_to_detection: Option<u64>,
}

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

/// The matrix as Markdown: a summary table, then the full variant-by-scenario grid.
pub fn markdown(m: &Matrix) -> String {
    let mut s = String::new();
    s.push_str("# leasesim variant matrix\n\n");
    s.push_str(&format!(
        "Every known-bad variant of the SPEC (V1-V14) against every scenario, at most {} seeds per scenario; a variant stops at its first failing seed. Regenerate with `cargo run --release -- matrix --seeds {}`.\n\n",
        m.seeds, m.seeds
    ));
    s.push_str("The same table as HTML, each caught variant linked to the timeline of its shrunk counterexample: [`matrix.html`](matrix.html).\n\n");
    s.push_str(&format!(
        "Reference: {}. Variants caught: {} of {}. Median seeds to detection: {}.\n\n",
        if m.reference_clean {
            "clean (every invariant held on every seed of every scenario)".to_string()
        } else {
            "FAILED".to_string()
        },
        m.rows.iter().skip(1).filter(|r| r.caught).count(),
        m.rows.len() - 1,
        m.median_seeds_to_detection
            .map_or("-".to_string(), |n| n.to_string())
    ));
    s.push_str("| variant | SPEC | caught | by invariants | first caught in | seeds to detection | reproduce |\n");
    s.push_str("|---|---|---|---|---|---|---|\n");
    for r in &m.rows {
        let caught = if r.variant == "reference" {
            if r.caught {
                "FAILED"
            } else {
                "clean"
            }
        } else if r.caught {
            "yes"
        } else {
            "NO"
        };
        s.push_str(&format!(
            "| `{}` | {} | {} | {} | {} | {} | {} |\n",
            r.variant,
            r.spec,
            caught,
            if r.invariants.is_empty() {
                "-".to_string()
            } else {
                r.invariants.join(", ")
            },
            r.best_scenario.map_or("-".to_string(), |sc| format!(
                "`{sc}` seed {}",
                r.first_failing_seed.unwrap_or(0)
            )),
            r.seeds_to_detection
                .map_or("-".to_string(), |n| n.to_string()),
            r.reproduce
                .as_ref()
                .map_or("-".to_string(), |c| format!("`{c}`")),
        ));
    }
    s.push_str("\n## By scenario\n\nEach cell: the seeds run until the first failure (`held` when none failed in the budget).\n\n");
    s.push_str("| variant |");
    for def in scenarios::ALL {
        s.push_str(&format!(" {} |", def.name));
    }
    s.push('\n');
    s.push_str("|---|");
    for _ in scenarios::ALL {
        s.push_str("---|");
    }
    s.push('\n');
    for r in &m.rows {
        s.push_str(&format!("| `{}` |", r.variant));
        for c in &r.cells {
            match c.first_failing_seed {
                Some(seed) => s.push_str(&format!(" {} |", seed + 1)),
                None => s.push_str(" held |"),
            }
        }
        s.push('\n');
    }
    s.push_str("\nHow to read it: a number is the seeds it took to catch the variant in that scenario (seed numbers start at 0, so 1 means seed 0 failed). `held` means every seed in the budget held: the scenario does not exercise that bug, which is expected for most pairs. A variant is caught when any scenario catches it; the reference row must read `held` everywhere. `unsafe-timing` (V12) is first refused by configuration validation; the matrix runs it with the validation bypassed to show the simulation catches it too.\n");
    s
}
