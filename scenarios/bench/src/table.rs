//! `bench`: the simulator beside the async-shell engine for speed, and the scaling table.

use crate::io;
use crate::{refuse_unsafe_timing, scenario, Error, Format};
use leasesim::pool;
use leasesim::Machines;
use leasesim_shell::engines::Engine;
use serde_json::json;
use std::io::Write;

/// What `bench` measures.
pub struct BenchArgs {
    /// The scenario, by name.
    pub scenario: String,
    /// The machines.
    pub machines: Machines,
    /// Seeds on the simulator.
    pub seeds: u64,
    /// Seeds on the async-shell engine.
    pub shell_seeds: u64,
    /// Threads per engine (every core when `None`).
    pub jobs: Option<usize>,
    /// Runs configurations that break P6 instead of refusing them.
    pub allow_unsafe_timing: bool,
    /// The scaling table instead of the engines.
    pub scaling: bool,
    /// In a measuring process: what this process measures (`--child`).
    pub child: Option<String>,
    /// How the table is printed.
    pub format: Format,
    /// The options that select machines of the user's own (`--worker exec:COMMAND`), handed
    /// to the measuring processes instead of `--variant`; empty for a named set.
    pub machine_args: Vec<String>,
}

/// The engines side by side (or the scaling table), each measured in a child process of this
/// program; returns the exit code (1 when a measured run did not hold).
pub fn bench_cmd(
    out: &mut dyn Write,
    a: &BenchArgs,
    scen: &[leasesim::ScenarioDef],
) -> Result<i32, Error> {
    let v = &a.machines;
    let def = scenario(scen, &a.scenario)?;
    if a.seeds == 0 || a.shell_seeds == 0 {
        return Err(Error(
            "--seeds and --shell-seeds must be at least 1: a benchmark of no seeds measures nothing"
                .into(),
        ));
    }
    refuse_unsafe_timing(std::slice::from_ref(&def), 0, v, a.allow_unsafe_timing)?;
    let threads = pool::threads(a.jobs, a.seeds.max(a.shell_seeds))?;
    if let Some(child) = &a.child {
        return measure_here(out, a, &def, v, threads, child);
    }
    if a.scaling {
        return scaling_table(out, a, threads);
    }
    engines_table(out, a, v, threads)
}

/// The arguments of a measuring process: this benchmark, measuring `what` only.
fn child_args(a: &BenchArgs, threads: usize, what: &str) -> Vec<String> {
    let machines = match a.machine_args.is_empty() {
        true => vec!["--variant".into(), a.machines.name().to_string()],
        false => a.machine_args.clone(),
    };
    let mut args = vec!["bench".to_string(), "--scenario".into(), a.scenario.clone()];
    args.extend(machines);
    args.extend([
        "--seeds".into(),
        a.seeds.to_string(),
        "--shell-seeds".into(),
        a.shell_seeds.to_string(),
        "--jobs".into(),
        threads.to_string(),
        "--allow-unsafe-timing".into(),
        "--child".into(),
        what.to_string(),
    ]);
    args
}

/// A measuring process: one engine (or one scaling row), figures as one JSON document.
fn measure_here(
    out: &mut dyn Write,
    a: &BenchArgs,
    def: &leasesim::ScenarioDef,
    v: &Machines,
    threads: usize,
    child: &str,
) -> Result<i32, Error> {
    let doc = if let Some(row) = child.strip_prefix("scaling:") {
        let n: Vec<Option<u64>> = row.split(':').map(|x| x.parse().ok()).collect();
        let [Some(w @ 1..=1_000), Some(j @ 1..=100_000), Some(s @ 1..=1_000_000)] = n[..] else {
            return Err(Error(format!(
                "bad --child {child:?}: expected scaling:WORKERS:JOBS:SEEDS with 1-1000 workers, 1-100000 jobs, 1-1000000 seeds"
            )));
        };
        let r = crate::scaling::measure(w as usize, j as usize, s);
        json!({"row": r, "peak_rss_kib": crate::scaling::peak_rss_kib()})
    } else {
        let engine = Engine::named(child)?;
        let seeds = if engine == Engine::Sim {
            a.seeds
        } else {
            a.shell_seeds
        };
        let f = crate::engines::measure(engine, def, v, seeds, threads).map_err(Error)?;
        json!(f)
    };
    io(writeln!(out, "{doc}"))?;
    Ok(0)
}

/// How many processes measure each row of the scaling table: the row shown is the median one.
const SCALING_PROCESSES: usize = 5;

/// One row of the scaling table: the median of its processes (by ns/event), the range of
/// ns/event over them, the median of their first runs' ns/event, and the median row's peak
/// memory.
struct ScaledRow {
    row: crate::scaling::ScaleRow,
    ns_range: (f64, f64),
    first_ns: f64,
    peak_kib: Option<u64>,
}

/// The median of some figures (the upper one of an even count).
fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(0.0)
}

/// The simulator's scaling table, each row measured in processes of its own.
fn scaling_table(out: &mut dyn Write, a: &BenchArgs, threads: usize) -> Result<i32, Error> {
    let rows = scaling_rows(a, threads)?;
    let code = i32::from(!rows.iter().all(|r| r.row.held));
    if a.format == Format::Json {
        let v: Vec<_> = rows
            .iter()
            .map(|r| {
                json!({
                    "row": r.row,
                    "processes": SCALING_PROCESSES,
                    "ns_per_event_range": [r.ns_range.0, r.ns_range.1],
                    "first_ns_per_event_median": r.first_ns,
                    "peak_rss_kib": r.peak_kib,
                })
            })
            .collect();
        io(writeln!(out, "{:#}", json!(v)))?;
        return Ok(code);
    }
    scaling_text(out, &rows)?;
    Ok(code)
}

/// Every row of the scaling grid, each the median of its processes (row after row, then again).
fn scaling_rows(a: &BenchArgs, threads: usize) -> Result<Vec<ScaledRow>, Error> {
    let grid = crate::scaling::DEFAULT_GRID;
    let mut measured: Vec<Vec<_>> = grid.iter().map(|_| Vec::new()).collect();
    // Row after row, then again: a drift of the machine's speed falls on every row alike.
    for _ in 0..SCALING_PROCESSES {
        for (&(w, j), runs) in grid.iter().zip(&mut measured) {
            let seeds = crate::scaling::default_seeds(w, j);
            let doc: serde_json::Value = crate::engines::in_child(&child_args(
                a,
                threads,
                &format!("scaling:{w}:{j}:{seeds}"),
            ))
            .map_err(Error)?;
            let row: crate::scaling::ScaleRow = serde_json::from_value(doc["row"].clone())
                .map_err(|e| Error(format!("the measuring process printed no row: {e}")))?;
            runs.push((row, doc["peak_rss_kib"].as_u64()));
        }
    }
    let mut rows: Vec<ScaledRow> = Vec::new();
    for mut runs in measured {
        let first_ns = median(runs.iter().map(|(r, _)| r.first_ns_per_event).collect());
        runs.sort_by(|x, y| x.0.ns_per_event.total_cmp(&y.0.ns_per_event));
        let ns_range = (runs[0].0.ns_per_event, runs[runs.len() - 1].0.ns_per_event);
        let held = runs.iter().all(|(r, _)| r.held);
        let (mut row, peak_kib) = runs.swap_remove(runs.len() / 2);
        row.held = held;
        rows.push(ScaledRow {
            row,
            ns_range,
            first_ns,
            peak_kib,
        });
    }
    Ok(rows)
}

/// The scaling table in words: a row per size, then the largest against the smallest.
fn scaling_text(out: &mut dyn Write, rows: &[ScaledRow]) -> Result<(), Error> {
    io(writeln!(out, "simulator scaling (reference protocol, no faults; each row the median of {SCALING_PROCESSES} processes of its own, one thread):"))?;
    io(writeln!(
        out,
        "{:>8} {:>7} {:>6} {:>9} {:>10} {:>12} {:>9} {:>10} {:>9} {:>10} {:>10}  verdicts",
        "workers",
        "jobs",
        "seeds",
        "seconds",
        "events",
        "events/s",
        "ns/event",
        "range",
        "ms/seed",
        "first run",
        "peak RSS"
    ))?;
    for ScaledRow {
        row: r,
        ns_range: (lo, hi),
        first_ns,
        peak_kib,
    } in rows
    {
        io(writeln!(
            out,
            "{:>8} {:>7} {:>6} {:>9.3} {:>10} {:>12.0} {:>9.0} {:>10} {:>9.3} {:>10.0} {:>10}  {}",
            r.workers,
            r.jobs,
            r.seeds,
            r.seconds,
            r.events,
            r.events_per_s,
            r.ns_per_event,
            format!("{lo:.0}-{hi:.0}"),
            r.seconds * 1000.0 / r.seeds.max(1) as f64,
            first_ns,
            crate::engines::mib(*peak_kib),
            if r.held { "all held" } else { "NOT ALL HELD" }
        ))?;
    }
    io(writeln!(
        out,
        "ns/event: seeds 1 to N, after a first run (seed 0) in the same process; first run: that run's ns/event, every table grown from nothing"
    ))?;
    let by_size = |w: usize, j: usize| rows.iter().find(|r| (r.row.workers, r.row.jobs) == (w, j));
    if let (Some(small), Some(large)) = (by_size(1, 10), by_size(100, 10_000)) {
        let per = |x: f64, y: f64| crate::engines::ratio(x, y).unwrap_or(0.0);
        io(writeln!(
            out,
            "100 x 10,000 against 1 x 10, ns/event: {:.2}x; the 100 x 10,000 first run against the 1 x 10 row: {:.2}x",
            per(large.row.ns_per_event, small.row.ns_per_event),
            per(large.first_ns, small.row.ns_per_event)
        ))?;
    }
    Ok(())
}

/// The simulator beside the async-shell engine, each measured in a process of its own.
// Long: two measuring processes, then one table whose header and rows share their column widths.
fn engines_table(
    out: &mut dyn Write,
    a: &BenchArgs,
    v: &Machines,
    threads: usize,
) -> Result<i32, Error> {
    let common = |what: &str| child_args(a, threads, what);
    let other = Engine::shell();
    let sim: crate::engines::EngineFigures =
        crate::engines::in_child(&common("sim")).map_err(Error)?;
    let shell: crate::engines::EngineFigures =
        crate::engines::in_child(&common(other.name())).map_err(Error)?;
    let seeds_ratio = crate::engines::ratio(sim.seeds_per_s, shell.seeds_per_s);
    let events_ratio = crate::engines::ratio(sim.events_per_s, shell.events_per_s);
    let code = if sim.not_held == 0 && shell.not_held == 0 || v.is_known_bad() {
        0
    } else {
        1
    };
    if a.format == Format::Json {
        let doc = json!({
            "sim": sim,
            "other": shell,
            "seeds_per_s_ratio": seeds_ratio,
            "events_per_s_ratio": events_ratio,
        });
        io(writeln!(out, "{doc:#}"))?;
        return Ok(code);
    }
    io(writeln!(
        out,
        "{} --variant {}, {} thread(s) per engine, each engine in its own process:",
        a.scenario,
        v.name(),
        threads
    ))?;
    io(writeln!(
        out,
        "{:>8} {:>8} {:>9} {:>11} {:>12} {:>10} {:>9}",
        "engine", "seeds", "seconds", "seeds/s", "events/s", "peak RSS", "not held"
    ))?;
    for f in [&sim, &shell] {
        io(writeln!(
            out,
            "{:>8} {:>8} {:>9.2} {:>11.0} {:>12.0} {:>10} {:>9}",
            f.engine,
            f.seeds,
            f.seconds,
            f.seeds_per_s,
            f.events_per_s,
            crate::engines::mib(f.peak_rss_kib),
            f.not_held
        ))?;
    }
    let x = |r: Option<f64>| r.map_or_else(|| "n/a".into(), |r| format!("{r:.1}x"));
    io(writeln!(
        out,
        "ratio sim/{}: {} seeds/s, {} events/s",
        other.name(),
        x(seeds_ratio),
        x(events_ratio)
    ))?;
    if other != Engine::Madsim {
        io(writeln!(
            out,
            "madsim: this is the normal build; `{} bench` runs the simulator beside madsim",
            leasesim_shell::engines::MADSIM_CARGO
        ))?;
    }
    Ok(code)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_takes_the_middle_figure_in_order() {
        assert_eq!(median(vec![5.0, 1.0, 3.0, 9.0, 2.0]), 3.0);
        assert_eq!(median(vec![4.0, 1.0]), 4.0);
        assert_eq!(median(vec![7.0]), 7.0);
        assert_eq!(median(Vec::new()), 0.0);
    }
}
