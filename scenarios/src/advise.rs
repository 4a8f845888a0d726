//! The advisor's simulated plane: short runs of a small jittery scenario on a grid of lease
//! lengths and heartbeat periods, measuring needless takeovers (I7) and jeopardy (P13) per cell,
//! for the plot drawn by the reports (`leasesim_reports::advisor::plot`). The advisor's formulas
//! and renderings live in the reports crate and are re-exported here.
//!
//! Each cell runs a small fault-free but jittery scenario (two workers, one long job held by
//! steady heartbeats, every message's flight time drawn between a tenth of a millisecond and that
//! plus J/2, so a renewal's round trip takes up to J, the SPEC's "worst renewal latency") with the
//! cell's L and H, on purpose *without* the P6 check (unsafe cells are the point). The scenario
//! injects no loss, so it exercises the jitter reserve and the drift factor, not the R - 1
//! tolerated misses: a cell between `H + J` and `R*H + J` is expected to measure no takeover
//! although the formula (rightly, for a lossy network) calls it unsafe.

pub use leasesim_reports::advisor::plot::{
    svg, Axes, PlotInput, SimulatedCell, GRID_MAX, SIMULATED_DURATION_MAX_NS,
};
pub use leasesim_reports::advisor::*;

use crate::run::run_setup;
use crate::scenarios::story::Story;
use crate::setup::{Setup, TimingPolicy};
use leasesim_checkers::Hazard;
use leasesim_protocol::{Invariant, Step, Variant, MILLI_NS};
use leasesim_sim::Limits;

/// The small scenario of one cell: two workers, one job whose only step is a tool call that
/// outlasts the run, so the holder just heartbeats; every message flies for 0.1 ms plus up to
/// J/2 (a round trip, the renewal latency, up to J); the workers' clocks drift within rho; the
/// second worker starts once the first holds the job and polls for work all the time.
fn cell_setup(i: &AdviseInput, lease_ns: u64, heartbeat_ns: u64, seed: u64) -> Setup {
    let mut s = Story::new(
        "advisor-plot-cell",
        seed,
        Variant::Reference,
        &[1, 2],
        vec![Step::Tool],
        1,
    );
    let latency_min_ns = MILLI_NS / 10;
    let latency_max_ns = latency_min_ns.saturating_add(i.jitter_ns / 2);
    let span = lease_ns.max(heartbeat_ns);
    // A few leases (or heartbeat periods, when those are longer).
    let horizon_ns = span
        .saturating_mul(6)
        .saturating_add(latency_max_ns.saturating_mul(4))
        .min(u64::MAX / 8);
    let far = horizon_ns.saturating_mul(2);
    // Poll often enough to catch a short expiry, but not so often that a claim's grant comes
    // back after the worker stopped tracking its request (it remembers the last 8 in flight).
    let poll_ns = (span / 50).max(latency_max_ns / 3).max(1_000);
    let rho = i.drift_ppm.min(999_999) as i64;
    s.tool_step(0, far, far);
    for (k, w) in s.setup.workers.iter_mut().enumerate() {
        let c = &mut w.config;
        c.heartbeat_ns = heartbeat_ns;
        c.drift_ppm_max = i.drift_ppm;
        c.stop_margin_ns = i.stop_margin_ns;
        c.tool_timeout_ns = far;
        c.stage_deadline_ns = far;
        c.claim_poll_ns = poll_ns;
        c.commit_retry_ns = poll_ns;
        // The second worker arrives once the first one holds the job.
        c.start_delay_ns = if k == 0 {
            0
        } else {
            latency_max_ns.saturating_mul(2).saturating_add(MILLI_NS)
        };
    }
    for k in 0..s.setup.workers.len() {
        let drift = s.r.range_i64(-rho, rho) as i32;
        s.setup.workers[k].clock.drift_ppm = drift;
    }
    let class = &mut s.setup.classes[0];
    class.lease_ns = lease_ns;
    class.max_attempts = 1_000;
    class.renewal_cap_ns = far;
    s.setup.net.latency_min_ns = latency_min_ns;
    s.setup.net.latency_max_ns = latency_max_ns;
    s.setup.limits = Limits {
        // Ordinary cells take a few thousand events; the budget bounds degenerate ones.
        event_budget: 50_000,
        horizon_ns,
        queue_max: 10_000,
    };
    s.setup.liveness_bound_ns = None;
    s.setup.timing = TimingPolicy {
        heartbeats_per_window: i.misses,
        jitter_ns: i.jitter_ns,
    };
    s.finish()
}

/// Runs one cell for `seeds` seeds: (needless takeovers, jeopardy) counts.
fn run_cell(i: &AdviseInput, lease_ns: u64, heartbeat_ns: u64, seeds: u32) -> (u32, u32) {
    let (mut takeovers, mut jeopardy) = (0, 0);
    for seed in 0..seeds as u64 {
        let setup = cell_setup(i, lease_ns, heartbeat_ns, seed);
        let r = run_setup(&setup, seed);
        let needless = r
            .findings
            .iter()
            .any(|f| f.invariant == Invariant::Liveness && f.message.contains(": healthy holder"));
        takeovers += needless as u32;
        jeopardy += r.hazards.reached(Hazard::JeopardyEntered) as u32;
    }
    (takeovers, jeopardy)
}

/// Runs short simulations on a `grid` x `grid` grid of cells tiling the plot's axes (see
/// [`svg`]) around the chosen point: for each (L, H) cell, `seeds` runs (seeds `0..seeds`) of a
/// small fault-free but jittery scenario with that lease and heartbeat period, bypassing the P6
/// check, and measures the fraction of runs with a needless takeover (I7 "healthy holder") and
/// with jeopardy. Cells come in ascending L, then ascending H. Deterministic: the same input
/// gives the same cells. Empty when the input is invalid for the advisor, when `grid` or `seeds`
/// is 0, or when an axis, J or G is longer than [`SIMULATED_DURATION_MAX_NS`]; `grid` is capped
/// at [`GRID_MAX`].
pub fn simulate(input: &PlotInput, grid: usize, seeds: u32) -> Vec<SimulatedCell> {
    let i = input.advise;
    if advise(&i).is_err() || grid == 0 || seeds == 0 {
        return Vec::new();
    }
    let axes = Axes::new(&i);
    let longest = [axes.h_max, axes.l_max, i.jitter_ns, i.stop_margin_ns];
    if longest.iter().any(|&d| d > SIMULATED_DURATION_MAX_NS) {
        return Vec::new();
    }
    let cells = axes.grid(grid.min(GRID_MAX));
    let counts: Vec<(u32, u32)> = cells
        .iter()
        .map(|&(l, h)| run_cell(&i, l, h, seeds))
        .collect();
    cells
        .iter()
        .zip(counts)
        .map(|(&(lease_ns, heartbeat_ns), (t, j))| SimulatedCell {
            lease_ns,
            heartbeat_ns,
            runs: seeds,
            needless_takeover_rate: t as f64 / seeds as f64,
            jeopardy_rate: j as f64 / seeds as f64,
        })
        .collect()
}
