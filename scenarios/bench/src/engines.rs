//! The benchmark (issue 8): the same scenario on the simulator and on the async-shell engine,
//! each measured in a process of its own (so that its peak memory is its own), and the
//! simulator's scaling table. Figures are printed, never asserted: timing belongs to
//! benchmarks, not to tests.

use crate::scaling;
use leasesim::pool;
use leasesim::run::Verdict;
use leasesim::sweep::{self, SeedRange, SweepConfig};
use leasesim::Machines;
use leasesim_shell::engines::{self, Engine};
use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicBool, Ordering};

/// One engine's figures on one scenario.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EngineFigures {
    /// Engine name.
    pub engine: String,
    /// Scenario.
    pub scenario: String,
    /// Variant.
    pub variant: String,
    /// Seeds run (0..seeds).
    pub seeds: u64,
    /// Threads.
    pub jobs: usize,
    /// Wall-clock seconds.
    pub seconds: f64,
    /// Trace events recorded over all seeds.
    pub events: u64,
    /// Seeds per second.
    pub seeds_per_s: f64,
    /// Trace events per second.
    pub events_per_s: f64,
    /// Seeds whose verdict was not `held`.
    pub not_held: u64,
    /// Peak resident memory of the measuring process, KiB.
    pub peak_rss_kib: Option<u64>,
}

/// The simulator measured through the library's sweep, the code path of the product.
#[allow(clippy::disallowed_methods)] // benchmark timing, outside the simulated world
fn measure_sim(
    def: &leasesim::ScenarioDef,
    machines: &Machines,
    seeds: u64,
    jobs: usize,
) -> EngineFigures {
    let engine = Engine::Sim;
    let config = SweepConfig {
        threads: jobs,
        // The command validated the timing before it started this process.
        allow_unsafe_timing: true,
        ..SweepConfig::new(
            vec![def.clone()],
            SeedRange {
                start: 0,
                end: seeds,
            },
            machines.clone(),
        )
    };
    let started = std::time::Instant::now();
    let report = sweep::sweep(&config, &AtomicBool::new(false), &sweep::Quiet);
    let seconds = started.elapsed().as_secs_f64();
    figures(
        engine,
        &def.name,
        machines,
        (seeds, report.threads, seconds),
        report.trace_events,
        report.failing(),
    )
}

/// Runs seeds `0..seeds` of `scenario` on `engine` with `jobs` threads and measures.
#[allow(clippy::disallowed_methods)] // benchmark timing, outside the simulated world
pub fn measure(
    engine: Engine,
    def: &leasesim::ScenarioDef,
    machines: &Machines,
    seeds: u64,
    jobs: usize,
) -> Result<EngineFigures, String> {
    let variant = machines.setup_variant();
    engine.supports(&def.build(0, variant))?;
    if engine == Engine::Sim {
        return Ok(measure_sim(def, machines, seeds, jobs));
    }
    let failed = AtomicBool::new(false);
    let work = pool::Chunks::new(seeds, 1, &failed);
    let started = std::time::Instant::now();
    let per_thread: Vec<Result<(u64, u64), String>> = pool::run(jobs, |_| {
        let (mut events, mut not_held) = (0u64, 0u64);
        while let Some((seed, _)) = work.take() {
            match engines::run(engine, &def.build(seed, variant), seed, machines) {
                Ok(run) => {
                    events += run.result.trace.len() as u64;
                    not_held += u64::from(run.result.verdict() != Verdict::Held);
                }
                Err(e) => {
                    // One engine error ends the measurement: the other threads stop too.
                    failed.store(true, Ordering::Relaxed);
                    return Err(e);
                }
            }
        }
        Ok((events, not_held))
    });
    let seconds = started.elapsed().as_secs_f64();
    let (mut events, mut not_held) = (0, 0);
    for t in per_thread {
        let (e, n) = t?;
        events += e;
        not_held += n;
    }
    Ok(figures(
        engine,
        &def.name,
        machines,
        (seeds, jobs.max(1), seconds),
        events,
        not_held,
    ))
}

/// The figures of a measurement: `(seeds, threads, seconds)`, trace events, seeds not held.
fn figures(
    engine: Engine,
    scenario: &str,
    machines: &Machines,
    (seeds, jobs, seconds): (u64, usize, f64),
    events: u64,
    not_held: u64,
) -> EngineFigures {
    let per_s = |n: f64| if seconds > 0.0 { n / seconds } else { 0.0 };
    EngineFigures {
        engine: engine.name().into(),
        scenario: scenario.into(),
        variant: machines.name().into(),
        seeds,
        jobs,
        seconds,
        events,
        seeds_per_s: per_s(seeds as f64),
        events_per_s: per_s(events as f64),
        not_held,
        peak_rss_kib: scaling::peak_rss_kib(),
    }
}

/// Runs this program again with `args` and reads the one JSON document it prints.
pub fn in_child<T: for<'de> Deserialize<'de>>(args: &[String]) -> Result<T, String> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot find this program: {e}"))?;
    let child = std::process::Command::new(&exe)
        .args(args)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot start a measuring process: {e}"))?;
    // A signal that ends this process ends the child too, through its own cleanups (a
    // throwaway server of its own), and waits for it.
    let pid = child.id();
    let _ended_with_us = leasesim::interrupt::while_alive(move || end_child(pid));
    let out = child
        .wait_with_output()
        .map_err(|e| format!("the measuring process: {e}"))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        return Err(format!(
            "the measuring process failed: {}",
            err.lines().next().unwrap_or("no message")
        ));
    }
    serde_json::from_slice(&out.stdout)
        .map_err(|e| format!("the measuring process printed no figures: {e}"))
}

/// Asks process `pid` to end (SIGTERM, which it handles by running its cleanups) and waits
/// until it has, at most a minute.
fn end_child(pid: u32) {
    let _ = std::process::Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .stderr(std::process::Stdio::null())
        .status();
    for _ in 0..1200 {
        // Gone, or a zombie the waiting thread has yet to reap: either way it has exited.
        match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            Ok(stat)
                if !stat
                    .rsplit(')')
                    .next()
                    .unwrap_or("")
                    .trim_start()
                    .starts_with('Z') =>
            {
                std::thread::sleep(std::time::Duration::from_millis(50))
            }
            _ => return,
        }
    }
}

/// `a` as a multiple of `b`.
pub fn ratio(a: f64, b: f64) -> Option<f64> {
    (b > 0.0).then(|| a / b)
}

/// Human-readable KiB.
pub fn mib(kib: Option<u64>) -> String {
    kib.map_or_else(|| "n/a".into(), |k| format!("{:.1} MiB", k as f64 / 1024.0))
}
