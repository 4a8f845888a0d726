//! The mutation matrix: every variant (and the reference) against every scenario. For a design
//! reviewer it answers, variant by variant: is this bug caught, by which scenario and which
//! invariants, after how many seeds, and with which command can I see it. The result is the
//! reports' plain data ([`Matrix`]); the reports render it as Markdown and HTML.

pub use leasesim_reports::matrix::{html, markdown, Cell, Matrix, Row};

use crate::machines::Machines;
use crate::pool;
use crate::run::{reproduce_command_for, Verdict};
use crate::scenarios::{self, ScenarioDef};
use crate::sweep::{self, SeedRange, SweepConfig};
use leasesim_protocol::{Invariant, Variant};
use std::collections::BTreeSet;
use std::sync::atomic::AtomicBool;

/// Seeds per scenario the matrix runs by default.
pub const DEFAULT_SEEDS: u64 = 200;

/// One (machines, scenario) pair: the library's sweep on one thread, in seed order, stopping at
/// the first seed that violates an invariant (machines expected to hold run every seed).
fn cell(def: &'static ScenarioDef, machines: &Machines, seeds: u64) -> Cell {
    let config = SweepConfig {
        threads: 1,
        // The matrix runs V12 past validation on purpose and says that validation refuses it.
        allow_unsafe_timing: true,
        stop_at_first_violation: machines.is_known_bad(),
        ..SweepConfig::new(
            vec![def],
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
        scenario: def.name,
        seeds_run: o.runs,
        first_failing_seed: first.map(|f| f.seed),
        failing: o.failing - o.unfinished,
        unfinished: o.unfinished,
        invariants: labels.into_iter().collect(),
        refused_by_validation: (def.build)(0, machines.setup_variant())
            .validate_timing()
            .is_err(),
        not_expressible: o.not_expressible,
    }
}

/// The matrix of leasesim's own machines (the reference and every known-bad variant) on
/// `threads` threads with `seeds` seeds per scenario at most.
pub fn run(seeds: u64, threads: usize) -> Matrix {
    compare(&Machines::stock(), seeds, threads)
}

/// Every set of machines of `catalogue` against every scenario, on `threads` threads with at
/// most `seeds` seeds per scenario: machines expected to hold must hold everywhere; known-bad
/// ones must be caught somewhere, by a named invariant.
pub fn compare(catalogue: &[Machines], seeds: u64, threads: usize) -> Matrix {
    let n = scenarios::ALL.len();
    let never = AtomicBool::new(false);
    let work = pool::Chunks::new((catalogue.len() * n) as u64, 1, &never);
    let mut done: Vec<(u64, Cell)> = pool::run(threads, |_| {
        let mut mine = Vec::new();
        while let Some((i, _)) = work.take() {
            let (m, sc) = (i as usize / n, i as usize % n);
            mine.push((i, cell(&scenarios::ALL[sc], &catalogue[m], seeds)));
        }
        mine
    })
    .into_iter()
    .flatten()
    .collect();
    done.sort_by_key(|(i, _)| *i);
    assert_eq!(done.len(), catalogue.len() * n, "every pair ran");
    let mut cells = done.into_iter().map(|(_, c)| c);
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
    Matrix {
        subject: if stock {
            "Every known-bad variant of the SPEC (V1-V14)".into()
        } else {
            "Every set of machines of the catalogue".into()
        },
        command: format!("cargo run --release -- matrix --seeds {seeds}"),
        seeds,
        rows,
        reference_clean,
        all_caught,
        median_seeds_to_detection,
    }
}

/// One row: where these machines were caught, first, and how to see it.
fn row(m: &Machines, row_cells: Vec<Cell>) -> Row {
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
        caught_by: caught_cells.iter().map(|c| c.scenario).collect(),
        best_scenario: best.map(|c| c.scenario),
        first_failing_seed: best.and_then(|c| c.first_failing_seed),
        seeds_to_detection: best.and_then(|c| c.first_failing_seed).map(|s| s + 1),
        reproduce: best.and_then(|c| {
            c.first_failing_seed
                .map(|seed| reproduce_command_for(m, c.scenario, seed))
        }),
        cells: row_cells,
    }
}
