//! The mutation matrix: every variant (and the reference) against every scenario. For a design
//! reviewer it answers, variant by variant: is this bug caught, by which scenario and which
//! invariants, after how many seeds, and with which command can I see it. The result is the
//! reports' plain data ([`Matrix`]); the reports render it as Markdown and HTML.
//!
//! Its space is every (machines, scenario) pair, a cell, numbered machines-major. A [`Shard`]
//! runs a contiguous slice of the cells cut by expected cost (the scenario's [`seed_cost`]
//! times the seeds, as if every cell ran every seed, which a cell of machines expected to hold
//! does and most cells of a known-bad variant do); [`assemble`] makes the matrix of the cells
//! of every shard, in order.

pub use leasesim_reports::matrix::{html, html_with_pages, markdown, Cell, Matrix, Row};

use crate::machines::Machines;
use crate::pool;
use crate::run::{reproduce_command_for, Verdict};
use crate::scenarios::{self, ScenarioDef};
use crate::sweep::{self, seed_cost, SeedRange, Shard, SweepConfig};
use leasesim_protocol::{Invariant, Variant};
use std::collections::BTreeSet;
use std::sync::atomic::AtomicBool;

/// Seeds per scenario the matrix runs by default.
pub const DEFAULT_SEEDS: u64 = 200;

/// One (machines, scenario) pair: the library's sweep on one thread, in seed order, stopping at
/// the first seed that violates an invariant (machines expected to hold run every seed).
fn cell(def: &ScenarioDef, machines: &Machines, seeds: u64) -> Cell {
    let config = SweepConfig {
        threads: 1,
        // The matrix runs V12 past validation on purpose and says that validation refuses it.
        allow_unsafe_timing: true,
        stop_at_first_violation: machines.is_known_bad(),
        ..SweepConfig::new(
            vec![def.clone()],
            SeedRange {
                start: 0,
                end: seeds,
            },
            machines.clone(),
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
        scenario: def.name.to_string(),
        seeds_run: o.runs,
        first_failing_seed: first.map(|f| f.seed),
        failing: o.failing - o.unfinished,
        unfinished: o.unfinished,
        invariants: labels.into_iter().collect(),
        refused_by_validation: def
            .build(0, machines.setup_variant())
            .validate_timing()
            .is_err(),
        not_expressible: o.not_expressible,
        skipped: o.skipped.iter().map(|(k, n)| (k.label(), *n)).collect(),
    }
}

/// The matrix of leasesim's own machines (the reference and every known-bad variant) on
/// `threads` threads with `seeds` seeds per scenario at most.
pub fn run(seeds: u64, threads: usize) -> Matrix {
    compare(&Machines::stock(), scenarios::ALL, seeds, threads)
}

/// Every set of machines of `catalogue` against every scenario of `scenarios` (leasesim's own
/// are [`scenarios::ALL`]), on `threads` threads with at most `seeds` seeds per scenario:
/// machines expected to hold must hold everywhere; known-bad ones must be caught somewhere, by
/// a named invariant.
pub fn compare(
    catalogue: &[Machines],
    scenarios: &[ScenarioDef],
    seeds: u64,
    threads: usize,
) -> Matrix {
    let all = cells(catalogue, scenarios, seeds, threads, None);
    match assemble(catalogue, scenarios, seeds, all) {
        Ok(m) => m,
        Err(e) => unreachable!("every cell ran: {e}"),
    }
}

/// The cells of `catalogue`'s matrix that `shard` holds (all of them when `None`), numbered
/// machines-major: cell `i` is machines `i / n` against scenario `i % n` of the `n` in
/// `scenarios`.
pub fn shard_cells(
    catalogue: &[Machines],
    scenarios: &[ScenarioDef],
    shard: Option<Shard>,
) -> std::ops::Range<u64> {
    let n = scenarios.len() as u64;
    match shard {
        None => 0..catalogue.len() as u64 * n,
        Some(s) => {
            let costs: Vec<u64> = scenarios.iter().map(seed_cost).collect();
            s.slice(&costs, catalogue.len() as u64)
        }
    }
}

/// Runs the cells `shard` holds ([`shard_cells`]), on `threads` threads with at most `seeds`
/// seeds each; returns them in cell order, each with its number.
pub fn cells(
    catalogue: &[Machines],
    scenarios: &[ScenarioDef],
    seeds: u64,
    threads: usize,
    shard: Option<Shard>,
) -> Vec<(u64, Cell)> {
    let n = scenarios.len() as u64;
    let held = shard_cells(catalogue, scenarios, shard);
    let never = AtomicBool::new(false);
    let work = pool::Chunks::new(held.end - held.start, 1, &never);
    let mut done: Vec<(u64, Cell)> = pool::run(threads, |_| {
        let mut mine = Vec::new();
        while let Some((k, _)) = work.take() {
            let i = held.start + k;
            let (m, sc) = ((i / n) as usize, (i % n) as usize);
            mine.push((i, cell(&scenarios[sc], &catalogue[m], seeds)));
        }
        mine
    })
    .into_iter()
    .flatten()
    .collect();
    done.sort_by_key(|(i, _)| *i);
    done
}

/// The matrix of `catalogue` from every one of its cells, numbered as [`shard_cells`] numbers
/// them (the cells of its shards together); an error names a cell missing or given twice.
pub fn assemble(
    catalogue: &[Machines],
    scenarios: &[ScenarioDef],
    seeds: u64,
    mut all: Vec<(u64, Cell)>,
) -> Result<Matrix, String> {
    let n = scenarios.len();
    all.sort_by_key(|(i, _)| *i);
    check_numbering(catalogue, scenarios, &all)?;
    let mut cells = all.into_iter().map(|(_, c)| c);
    let rows: Vec<Row> = catalogue
        .iter()
        .map(|m| row(m, cells.by_ref().take(n).collect()))
        .collect();
    type Pairs<'a> = Vec<(&'a Machines, &'a Row)>;
    let (good, bad): (Pairs<'_>, Pairs<'_>) = catalogue
        .iter()
        .zip(&rows)
        .partition(|(m, _)| !m.is_known_bad());
    let reference_clean = good
        .iter()
        .all(|(_, r)| !r.caught && r.cells.iter().all(|c| c.unfinished == 0));
    let all_caught = bad.iter().all(|(_, r)| r.caught);
    let mut detections: Vec<u64> = bad
        .iter()
        .filter_map(|(_, r)| r.seeds_to_detection)
        .collect();
    detections.sort();
    let median_seeds_to_detection =
        (!detections.is_empty()).then(|| detections[detections.len() / 2]);
    let stock = catalogue.iter().all(Machines::is_stock);
    // leasesim's own binary has every stock machine set and scenario; a program with any of
    // its own regenerates the matrix itself.
    let program = crate::run::command_prefix(stock && crate::scenarios::is_stock_list(scenarios));
    Ok(Matrix {
        subject: if stock && catalogue.len() == Variant::ALL.len() {
            "Every known-bad variant of the SPEC (V1-V14)".into()
        } else {
            "Every set of machines of the catalogue".into()
        },
        command: format!("{program} matrix --seeds {seeds}"),
        seeds,
        rows,
        reference_clean,
        all_caught,
        median_seeds_to_detection,
    })
}

/// Sorted cells are numbered 0, 1, 2... each once, each holding the scenario its number names.
fn check_numbering(
    catalogue: &[Machines],
    scenarios: &[ScenarioDef],
    all: &[(u64, Cell)],
) -> Result<(), String> {
    let n = scenarios.len();
    let name = |i: u64| {
        format!(
            "{} x {}",
            catalogue[i as usize / n].name(),
            scenarios[i as usize % n].name
        )
    };
    let total = (catalogue.len() * n) as u64;
    // Sorted: a number below the one expected is a repeat, one above it leaves a gap.
    let mut expect = 0u64;
    for (i, c) in all {
        if *i >= total {
            return Err(format!("cell {i} is not one of the {total} cells"));
        }
        if *i < expect {
            return Err(format!("cell {} is given twice", name(*i)));
        }
        if *i > expect {
            return Err(format!("cell {} is missing", name(expect)));
        }
        if c.scenario != scenarios[*i as usize % n].name {
            return Err(format!("cell {} holds scenario {}", name(*i), c.scenario));
        }
        expect += 1;
    }
    if expect < total {
        return Err(format!("cell {} is missing", name(expect)));
    }
    Ok(())
}

/// One row: where these machines were caught, first, and how to see it.
fn row(m: &Machines, row_cells: Vec<Cell>) -> Row {
    let caught_cells: Vec<&Cell> = row_cells
        .iter()
        .filter(|c| c.first_failing_seed.is_some())
        .collect();
    let best = caught_cells
        .iter()
        .min_by_key(|c| (c.first_failing_seed, c.scenario.as_str()))
        .copied();
    let invariants: BTreeSet<String> = caught_cells
        .iter()
        .flat_map(|c| c.invariants.iter().cloned())
        .collect();
    let stock = Variant::from_name(m.name()).filter(|_| m.is_stock());
    let p = m.parts();
    let parts = format!(
        "coordinator {}, worker {}, receiver {}",
        p.coordinator, p.worker, p.receiver
    );
    let (spec, summary) = match (stock, m.bug()) {
        (Some(v), _) => (v.spec_id().to_string(), v.summary().to_string()),
        (None, Some(bug)) => {
            // "V2: the naive final update" names its SPEC id; any other text is a summary.
            let id = bug.split(':').next().unwrap_or("").trim();
            let is_id =
                id.len() > 1 && id.starts_with('V') && id[1..].bytes().all(|b| b.is_ascii_digit());
            (
                if is_id { id.to_string() } else { "-".into() },
                format!("{bug} ({parts})"),
            )
        }
        (None, None) => ("-".into(), parts),
    };
    Row {
        variant: m.name().to_string(),
        spec,
        summary,
        expected_to_hold: !m.is_known_bad(),
        caught: best.is_some(),
        invariants: invariants.into_iter().collect(),
        caught_by: caught_cells.iter().map(|c| c.scenario.clone()).collect(),
        best_scenario: best.map(|c| c.scenario.clone()),
        first_failing_seed: best.and_then(|c| c.first_failing_seed),
        seeds_to_detection: best.and_then(|c| c.first_failing_seed).map(|s| s + 1),
        reproduce: best.and_then(|c| {
            c.first_failing_seed
                .map(|seed| reproduce_command_for(m, &c.scenario, seed))
        }),
        cells: row_cells,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_of_the_matrix_are_its_cells_cut_once_and_assembled_only_whole() {
        let cat = Machines::stock();
        let total = (cat.len() * scenarios::ALL.len()) as u64;
        for count in [1, 2, 3, 7, 300, 301] {
            let mut next = 0;
            for index in 1..=count {
                let r = shard_cells(
                    &cat,
                    scenarios::ALL,
                    Some(Shard::new(index, count).unwrap()),
                );
                assert_eq!(r.start, next, "{index}/{count}");
                next = r.end;
            }
            assert_eq!(next, total, "{count} shards cover every cell");
        }
        // Two rows of cells, one seed each: whole, a cell missing, a cell twice.
        let two = &cat[..2];
        let cells = cells(two, scenarios::ALL, 1, 1, None);
        assert_eq!(cells.len(), 2 * scenarios::ALL.len());
        assert!(assemble(two, scenarios::ALL, 1, cells.clone()).is_ok());
        let mut short = cells.clone();
        short.remove(5);
        let missing = assemble(two, scenarios::ALL, 1, short).unwrap_err();
        assert!(missing.contains("is missing"), "{missing}");
        let mut twice = cells.clone();
        twice.push(cells[3].clone());
        let repeated = assemble(two, scenarios::ALL, 1, twice).unwrap_err();
        assert!(repeated.contains("given twice"), "{repeated}");
    }
}
