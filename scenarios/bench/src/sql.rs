//! `bench --coordinator sql:FILE`: a scenario with the SQL coordinator on PostgreSQL beside the
//! in-memory reference coordinator, each measured in a process of its own: seeds/s, the SQL
//! statements/s, leasesim's peak memory and the server's.

use crate::{io, Error, Format};
use leasesim::run::{run, Verdict};
use leasesim::{pool, Machines};
use leasesim_protocol::{Event, StoreEvent};
use leasesim_sim::EventKind;
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// One coordinator's figures on one scenario.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SqlFigures {
    /// `in-memory` or the SQL part's name.
    pub coordinator: String,
    /// Scenario.
    pub scenario: String,
    /// Seeds run (0..seeds).
    pub seeds: u64,
    /// Threads (one database connection each for SQL).
    pub jobs: usize,
    /// Wall-clock seconds.
    pub seconds: f64,
    /// Seeds per second.
    pub seeds_per_s: f64,
    /// Statements run on the database (0 in memory).
    pub statements: u64,
    /// Statements per second.
    pub statements_per_s: f64,
    /// Seeds whose verdict was not `held`.
    pub not_held: u64,
    /// Peak resident memory of the measuring leasesim process, KiB.
    pub peak_rss_kib: Option<u64>,
    /// Peak resident memory of the throwaway server's processes, summed, KiB (shared memory
    /// counted in each process that touched it); `None` on a server of the user's.
    pub server_peak_rss_kib: Option<u64>,
}

/// Runs seeds `0..seeds` of `scenario` on `machines` with `jobs` threads and measures.
#[allow(clippy::disallowed_methods)] // benchmark timing, outside the simulated world
fn measure(
    coordinator: &str,
    def: &leasesim::ScenarioDef,
    machines: &Machines,
    seeds: u64,
    jobs: usize,
) -> Result<SqlFigures, String> {
    let scenario: &str = &def.name;
    let never = AtomicBool::new(false);
    let work = pool::Chunks::new(seeds, 1, &never);
    let statements = AtomicU64::new(0);
    let not_held = AtomicU64::new(0);
    let started = std::time::Instant::now();
    let refused: Vec<String> = pool::run(jobs, |_| {
        while let Some((seed, _)) = work.take() {
            let setup = def.build(seed, machines.setup_variant());
            if let Err(why) = machines.expressible(&setup) {
                never.store(true, Ordering::Relaxed);
                return Some(format!("{scenario} seed {seed} is not expressible: {why}"));
            }
            let r = run(&setup, seed, machines);
            let n = r
                .trace
                .iter()
                .filter(|e| {
                    matches!(
                        e.kind,
                        EventKind::Note {
                            note: Event::Store(StoreEvent::Ran { .. })
                        }
                    )
                })
                .count() as u64;
            statements.fetch_add(n, Ordering::Relaxed);
            not_held.fetch_add(u64::from(r.verdict() != Verdict::Held), Ordering::Relaxed);
        }
        None
    })
    .into_iter()
    .flatten()
    .collect();
    let seconds = started.elapsed().as_secs_f64();
    if let Some(why) = refused.into_iter().next() {
        return Err(why);
    }
    let statements = statements.into_inner();
    Ok(SqlFigures {
        coordinator: coordinator.to_string(),
        scenario: scenario.to_string(),
        seeds,
        jobs,
        seconds,
        seeds_per_s: seeds as f64 / seconds.max(1e-9),
        statements,
        statements_per_s: statements as f64 / seconds.max(1e-9),
        not_held: not_held.into_inner(),
        peak_rss_kib: crate::scaling::peak_rss_kib(),
        server_peak_rss_kib: None,
    })
}

/// The summed peak memory of the processes running from `dir` (a throwaway server's).
fn server_peak_kib(dir: &Path) -> Option<u64> {
    let needle = dir.to_string_lossy().into_owned();
    let mut total = 0;
    let mut found = false;
    for entry in std::fs::read_dir("/proc").ok()?.flatten() {
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        if !String::from_utf8_lossy(&cmdline).contains(&needle) {
            continue;
        }
        // The postmaster names the directory; its backends are its children.
        let pid = entry.file_name().to_string_lossy().into_owned();
        for p in std::iter::once(pid.clone()).chain(children(&pid)) {
            if let Some(kib) = std::fs::read_to_string(format!("/proc/{p}/status"))
                .ok()
                .and_then(|s| crate::scaling::parse_vm_hwm(&s))
            {
                total += kib;
                found = true;
            }
        }
    }
    found.then_some(total)
}

/// The child processes of `pid`.
fn children(pid: &str) -> Vec<String> {
    std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children"))
        .map(|s| s.split_whitespace().map(str::to_string).collect())
        .unwrap_or_default()
}

/// A SQL coordinator opened for a measuring process: its machines, the data folder of the
/// server when leasesim started one (for the server's memory), and what keeps that server
/// alive until the measurement ends.
pub struct OpenSql {
    /// The machines with the SQL coordinator.
    pub machines: Machines,
    /// The server's data folder, when leasesim started the server.
    pub server_dir: Option<std::path::PathBuf>,
    /// Dropped when the measurement ends.
    pub keep: Box<dyn std::any::Any>,
}

/// The measuring process: `in-memory` (the reference coordinator) or `sql` (what `open` opens).
pub fn measure_here(
    out: &mut dyn Write,
    what: &str,
    scenario: &leasesim::ScenarioDef,
    seeds: u64,
    threads: usize,
    open: &dyn Fn() -> Result<OpenSql, Error>,
) -> Result<i32, Error> {
    let figures = match what {
        "in-memory" => measure(
            "in-memory",
            scenario,
            &Machines::reference(),
            seeds,
            threads,
        ),
        "sql" => {
            let sql = open()?;
            let m = &sql.machines;
            let mut f = measure(&m.parts().coordinator, scenario, m, seeds, threads);
            if let (Ok(f), Some(dir)) = (&mut f, &sql.server_dir) {
                f.server_peak_rss_kib = server_peak_kib(dir);
            }
            drop(sql.keep);
            f
        }
        other => {
            return Err(Error(format!(
                "bad --child {other:?}: expected in-memory or sql"
            )))
        }
    }
    .map_err(Error)?;
    io(writeln!(out, "{}", json!(figures)))?;
    Ok(0)
}

/// The table: the in-memory reference coordinator beside the SQL one, same scenario and seeds,
/// each in its own process (`sql_args`: the options that name the SQL coordinator, given to
/// the measuring processes as they are).
// Long: two measuring processes, then one table whose header and rows share their column widths.
pub fn table(
    out: &mut dyn Write,
    scenario: &str,
    seeds: u64,
    threads: usize,
    sql_args: &[String],
    format: Format,
) -> Result<i32, Error> {
    let child = |what: &str| {
        let mut a = vec![
            "bench".to_string(),
            "--scenario".into(),
            scenario.to_string(),
            "--seeds".into(),
            seeds.to_string(),
            "--jobs".into(),
            threads.to_string(),
            "--child".into(),
            what.to_string(),
        ];
        a.extend(sql_args.iter().cloned());
        crate::engines::in_child::<SqlFigures>(&a).map_err(Error)
    };
    let memory = child("in-memory")?;
    let sql = child("sql")?;
    let code = i32::from(memory.not_held > 0 || sql.not_held > 0);
    let ratio = crate::engines::ratio(memory.seeds_per_s, sql.seeds_per_s);
    if format == Format::Json {
        io(writeln!(
            out,
            "{:#}",
            json!({"in_memory": memory, "sql": sql, "seeds_per_s_ratio": ratio})
        ))?;
        return Ok(code);
    }
    io(writeln!(
        out,
        "{scenario}, {seeds} seeds, {threads} thread(s) (one connection each), each coordinator in its own process:"
    ))?;
    io(writeln!(
        out,
        "{:<40} {:>9} {:>9} {:>12} {:>13} {:>10} {:>11} {:>9}",
        "coordinator",
        "seconds",
        "seeds/s",
        "statements",
        "statements/s",
        "peak RSS",
        "server RSS",
        "not held"
    ))?;
    for f in [&memory, &sql] {
        io(writeln!(
            out,
            "{:<40} {:>9.2} {:>9.0} {:>12} {:>13.0} {:>10} {:>11} {:>9}",
            f.coordinator,
            f.seconds,
            f.seeds_per_s,
            f.statements,
            f.statements_per_s,
            crate::engines::mib(f.peak_rss_kib),
            crate::engines::mib(f.server_peak_rss_kib),
            f.not_held
        ))?;
    }
    io(writeln!(
        out,
        "ratio in-memory/SQL: {} seeds/s (server RSS: the throwaway server's processes summed, shared memory counted in each)",
        ratio.map_or_else(|| "n/a".into(), |r| format!("{r:.1}x"))
    ))?;
    Ok(code)
}
