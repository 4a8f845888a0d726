//! `sweep`: many seeds on every core through the library's [`leasesim::sweep::sweep`], with a
//! progress bar on a terminal, the failing seeds streamed to a list file as they are found, a
//! replay file for each printed failure, the first failure shrunk, and the hazard coverage table.
//! Ctrl-C stops it between two runs: what it found so far is printed and saved.

use super::args::OutDir;
use super::interrupt::Graceful;
use super::run::{rerun_command, shrunk_path};
use super::{io, refuse_unsafe_timing, scenario_list, Format, UsageError, COVERAGE_MIN_SEEDS};
use leasesim::hazard::Hazard;
use leasesim::pool;
use leasesim::replay::Replay;
use leasesim::run::{reproduce_command_for, run};
use leasesim::scenarios::ScenarioDef;
use leasesim::shrink;
use leasesim::sweep::{self, describe_ranges, Failure, SeedRange, SweepConfig, SweepReport};
use leasesim::Machines;
use leasesim_reports::matrix::file_stem;
use serde_json::json;
use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufWriter, IsTerminal, Write};
use std::path::PathBuf;
use std::sync::Mutex;

/// Failures printed per scenario; the rest are counted and listed in the file.
const PRINT_FAILURES_MAX: usize = 20;
/// Replay files one sweep writes at most (for the first printed failures).
pub const REPLAYS_PER_SWEEP: usize = 100;

pub(super) struct SweepArgs {
    pub names: Vec<String>,
    pub seeds: SeedRange,
    pub machines: Machines,
    pub jobs: Option<usize>,
    pub failures_dir: PathBuf,
    pub allow_unsafe_timing: bool,
    pub check_determinism: bool,
    pub format: Format,
}

/// The failure list, written as chunks finish, in seed order: a chunk that finishes ahead of an
/// earlier one waits in `pending` (a few chunks at most, one per thread that ran ahead).
struct ListFile {
    path: PathBuf,
    file: Option<BufWriter<File>>,
    next: u64,
    pending: BTreeMap<u64, String>,
    error: Option<String>,
    lines: u64,
}

impl ListFile {
    fn write_ready(&mut self) {
        let mut wrote = false;
        while let Some(text) = self.pending.remove(&self.next) {
            self.next += 1;
            self.append(&text);
            wrote |= !text.is_empty();
        }
        if wrote {
            self.flush();
        }
    }

    /// Everything still pending, in order (a stopped sweep's chunks never all finish).
    fn write_rest(&mut self) {
        for text in std::mem::take(&mut self.pending).into_values() {
            self.append(&text);
        }
        self.flush();
    }

    fn append(&mut self, text: &str) {
        if text.is_empty() || self.error.is_some() {
            return;
        }
        if self.file.is_none() {
            match File::create(&self.path) {
                Ok(f) => self.file = Some(BufWriter::new(f)),
                Err(e) => {
                    self.error = Some(format!("cannot write {}: {e}", self.path.display()));
                    return;
                }
            }
        }
        if let Some(f) = &mut self.file {
            if let Err(e) = f.write_all(text.as_bytes()) {
                self.error = Some(format!("cannot write {}: {e}", self.path.display()));
            }
            self.lines += text.lines().count() as u64 / 2;
        }
    }

    fn flush(&mut self) {
        if let Some(f) = &mut self.file {
            if let Err(e) = f.flush() {
                self.error = Some(format!("cannot write {}: {e}", self.path.display()));
            }
        }
    }
}

/// What the command line watches while the library sweeps: the progress bar and the list file.
struct Watch<'a> {
    defs: &'a [&'static ScenarioDef],
    machines: &'a Machines,
    bar: Option<indicatif::ProgressBar>,
    list: Mutex<ListFile>,
}

impl sweep::Observer for Watch<'_> {
    fn chunk_done(&self, chunk: u64, runs: u64, failures: &[Failure]) {
        if let Some(bar) = &self.bar {
            bar.inc(runs);
        }
        let mut text = String::new();
        for f in failures {
            let name = self.defs[f.scenario].name;
            text.push_str(&format!(
                "{name} seed {} variant {}: {}\n  {}\n",
                f.seed,
                self.machines.name(),
                f.first,
                reproduce_command_for(self.machines, name, f.seed)
            ));
        }
        let mut list = self.list.lock().unwrap_or_else(|p| p.into_inner());
        list.pending.insert(chunk, text);
        list.write_ready();
    }
}

/// What a sweep saved of its failures.
struct Saved {
    replays: usize,
    shrunk: Option<(PathBuf, f64, usize, usize, String)>,
    errors: Vec<String>,
}

pub(super) fn sweep_cmd(
    out: &mut dyn Write,
    err: &mut dyn Write,
    a: &SweepArgs,
) -> Result<i32, UsageError> {
    let defs = scenario_list(&a.names)?;
    let m = &a.machines;
    refuse_unsafe_timing(&defs, a.seeds.start, m, a.allow_unsafe_timing)?;
    let mut config = SweepConfig {
        check_determinism: a.check_determinism,
        allow_unsafe_timing: a.allow_unsafe_timing,
        ..SweepConfig::new(defs.clone(), a.seeds, m.clone())
    };
    let total = config.total()?;
    config.threads = pool::threads(a.jobs, total.div_ceil(sweep::CHUNK))?;
    // Where failures go is checked before any seed runs: a sweep must never find failures it
    // cannot save.
    let dir = OutDir::prepare("--failures-dir", &a.failures_dir)?;
    let bar = (a.format == Format::Text && std::io::stderr().is_terminal()).then(|| {
        let bar = indicatif::ProgressBar::new(total);
        if let Ok(style) = indicatif::ProgressStyle::with_template(
            "{spinner} [{elapsed_precise}] {wide_bar} {pos}/{len} seeds ({per_sec}, eta {eta})",
        ) {
            bar.set_style(style);
        }
        bar
    });
    let watch = Watch {
        defs: &defs,
        machines: m,
        bar,
        list: Mutex::new(ListFile {
            path: dir.path.join(format!("sweep-{}.txt", file_stem(m.name()))),
            file: None,
            next: 0,
            pending: BTreeMap::new(),
            error: None,
            lines: 0,
        }),
    };
    let graceful = Graceful::enter();
    #[allow(clippy::disallowed_methods)] // the sweep's own throughput, never the simulated world
    let started = std::time::Instant::now();
    let report = sweep::sweep(&config, graceful.stop(), &watch);
    let elapsed = started.elapsed().as_secs_f64().max(1e-9);
    if let Some(bar) = &watch.bar {
        bar.finish_and_clear();
    }
    let mut list = watch.list.into_inner().unwrap_or_else(|p| p.into_inner());
    list.write_rest();
    let saved = save_failures(&dir, &defs, m, &report, !report.interrupted);
    let mut errors: Vec<String> = list.error.iter().cloned().collect();
    errors.extend(saved.errors.iter().cloned());
    let listed = (list.lines > 0 && list.error.is_none()).then_some(&list.path);
    if list.lines == 0 && saved.replays == 0 {
        dir.remove_if_unused();
    }
    let unreached = report.unreached(&config, COVERAGE_MIN_SEEDS);
    let summary = Summary {
        defs: &defs,
        machines: m,
        seeds: a.seeds,
        report: &report,
        unreached: &unreached,
        elapsed,
        listed,
        saved: &saved,
        check_determinism: a.check_determinism,
    };
    if a.format == Format::Json {
        io(writeln!(out, "{:#}", summary.json()))?;
    } else {
        summary.text(out)?;
    }
    for e in &errors {
        let _ = writeln!(err, "error: {e}");
    }
    let _ = err.flush();
    Ok(if report.interrupted {
        super::interrupt::exit_code()
    } else if report.failing() > 0 || !unreached.is_empty() || report.nondeterministic() > 0 {
        1
    } else if !errors.is_empty() {
        2
    } else {
        0
    })
}

/// The printed failures, in printed order: the first [`PRINT_FAILURES_MAX`] of each scenario.
fn printed(report: &SweepReport) -> impl Iterator<Item = &Failure> {
    report
        .scenarios
        .iter()
        .flat_map(|s| s.failures.iter().take(PRINT_FAILURES_MAX))
}

/// Saves a replay file for each printed failure (at most [`REPLAYS_PER_SWEEP`], the first
/// ones) and, unless told not to, the first failure shrunk. Files of other sweeps in the folder
/// are left alone. Problems are collected, never fatal: the failing seeds are printed anyway.
fn save_failures(
    dir: &OutDir,
    defs: &[&'static ScenarioDef],
    m: &Machines,
    report: &SweepReport,
    shrink_first: bool,
) -> Saved {
    let mut saved = Saved {
        replays: 0,
        shrunk: None,
        errors: Vec::new(),
    };
    let mut first: Option<(PathBuf, Replay)> = None;
    for f in printed(report).take(REPLAYS_PER_SWEEP) {
        let d = defs[f.scenario];
        let setup = (d.build)(f.seed, m.setup_variant());
        let r = run(&setup, f.seed, m);
        let path = dir.path.join(format!(
            "{}-{}-seed{}.json",
            d.name,
            file_stem(m.name()),
            f.seed
        ));
        let replay = Replay::record_on(&setup, f.seed, true, &r, m, &rerun_command(m, &path));
        match replay.save(&path) {
            Ok(()) => {
                saved.replays += 1;
                if first.is_none() {
                    first = Some((path, replay));
                }
            }
            Err(e) => {
                saved.errors.push(e);
                break;
            }
        }
    }
    // The first failure, shrunk, so the report starts from a handful of faults.
    if let (Some((path, replay)), true) = (first, shrink_first) {
        #[allow(clippy::disallowed_methods)] // the shrinker's own duration
        let started = std::time::Instant::now();
        if let Ok(mut s) = shrink::shrink_on(&replay, m) {
            let elapsed = started.elapsed().as_secs_f64();
            let dest = shrunk_path(&path);
            if let Some(rec) = &mut s.replay.machines {
                rec.rerun = rerun_command(m, &dest);
            }
            match s.replay.save(&dest) {
                Ok(()) => {
                    saved.shrunk = Some((
                        dest,
                        elapsed,
                        s.faults_before,
                        s.replay.setup.faults.len(),
                        s.invariant.label(),
                    ))
                }
                Err(e) => saved.errors.push(e),
            }
        }
    }
    saved
}

/// Why seeds were not expressible, most frequent first.
fn reasons(o: &leasesim::sweep::ScenarioOutcome) -> String {
    let mut rs: Vec<(&String, &u64)> = o.not_expressible_reasons.iter().collect();
    rs.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    rs.iter()
        .map(|(r, n)| {
            if **n == o.not_expressible {
                (*r).clone()
            } else {
                format!("{r} ({n})")
            }
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// Everything the summary shows.
struct Summary<'a> {
    defs: &'a [&'static ScenarioDef],
    machines: &'a Machines,
    seeds: SeedRange,
    report: &'a SweepReport,
    unreached: &'a [(usize, Hazard)],
    elapsed: f64,
    listed: Option<&'a PathBuf>,
    saved: &'a Saved,
    check_determinism: bool,
}

impl Summary<'_> {
    fn json(&self) -> serde_json::Value {
        let r = self.report;
        let m = self.machines;
        json!({
            "variant": m.name(),
            "seeds": {"start": self.seeds.start, "end": self.seeds.end},
            "interrupted": r.interrupted,
            "scenarios": self.defs.iter().enumerate().map(|(i, d)| {
                let o = &r.scenarios[i];
                json!({
                    "name": d.name,
                    "runs": o.runs,
                    "ran": o.ran.iter().map(|s| json!({"start": s.start, "end": s.end})).collect::<Vec<_>>(),
                    "failing": o.failing,
                    "not_expressible": o.not_expressible,
                    "not_expressible_reasons": o.not_expressible_reasons,
                    "hazards": o.hazards.iter().map(|(h, n)| (h.name().to_string(), json!(n))).collect::<serde_json::Map<_, _>>(),
                    "declared_hazards": d.hazards.iter().map(|h| h.name()).collect::<Vec<_>>(),
                    "unreached_hazards": self.unreached.iter().filter(|(s, _)| *s == i).map(|(_, h)| h.name()).collect::<Vec<_>>(),
                    "failures": o.failures.iter().map(|f| json!({
                        "seed": f.seed,
                        "verdict": f.verdict,
                        "invariants": f.invariants,
                        "first": f.first,
                        "reproduce": reproduce_command_for(m, d.name, f.seed),
                    })).collect::<Vec<_>>(),
                })
            }).collect::<Vec<_>>(),
            "runs": r.runs,
            "failing": r.failing(),
            "not_expressible": r.not_expressible(),
            "unreached_hazards": self.unreached.len(),
            "events": r.events,
            "elapsed_s": self.elapsed,
            "seeds_per_s": r.runs as f64 / self.elapsed,
            "events_per_s": r.events as f64 / self.elapsed,
            "threads": r.threads,
            "failure_list": self.listed.map(|p| p.display().to_string()),
            "replays_saved": self.saved.replays,
            "shrunk": self.saved.shrunk.as_ref().map(|(path, secs, before, after, inv)| json!({
                "replay": path.display().to_string(),
                "elapsed_s": secs,
                "faults_before": before,
                "faults_after": after,
                "invariant": inv,
            })),
            "determinism_checked": self.check_determinism,
            "nondeterministic": r.nondeterministic(),
        })
    }

    fn text(&self, out: &mut dyn Write) -> Result<(), UsageError> {
        let r = self.report;
        let m = self.machines;
        for (i, d) in self.defs.iter().enumerate() {
            let o = &r.scenarios[i];
            let verdict = if o.runs > 0 && o.not_expressible == o.runs {
                "NOT EXPRESSIBLE".to_string()
            } else if o.failing == 0 {
                "held".to_string()
            } else {
                format!("{} FAILING", o.failing)
            };
            let skipped = match o.not_expressible {
                0 => String::new(),
                n if n == o.runs => format!(": {}", reasons(o)),
                n => format!(" ({n} not expressible: {})", reasons(o)),
            };
            io(writeln!(
                out,
                "{:<26} {} seeds  {verdict}{skipped}",
                d.name, o.runs,
            ))?;
            for f in o.failures.iter().take(PRINT_FAILURES_MAX) {
                io(writeln!(out, "  seed {}: {}", f.seed, f.first))?;
                io(writeln!(
                    out,
                    "    reproduce: {}",
                    reproduce_command_for(m, d.name, f.seed)
                ))?;
            }
            let more = o.failing.saturating_sub(PRINT_FAILURES_MAX as u64);
            if more > 0 {
                io(writeln!(out, "  ... and {more} more failing seeds"))?;
            }
        }
        self.coverage(out)?;
        if let Some(path) = self.listed {
            io(writeln!(
                out,
                "failing seeds listed in {}, with {} replay file(s) beside it",
                path.display(),
                self.saved.replays
            ))?;
        }
        if let Some((path, secs, before, after, inv)) = &self.saved.shrunk {
            io(writeln!(
                out,
                "first failure shrunk in {secs:.3}s: {before} fault(s) -> {after}, {inv} still fails; see it with: {}",
                rerun_command(self.machines, path)
            ))?;
        }
        for (i, o) in r.scenarios.iter().enumerate() {
            for (seed, e) in &o.nondeterministic_seeds {
                io(writeln!(
                    out,
                    "NOT DETERMINISTIC: {} seed {seed}: {e}",
                    self.defs[i].name
                ))?;
            }
        }
        if self.check_determinism {
            io(writeln!(
                out,
                "determinism: every seed ran twice; {} differed",
                r.nondeterministic()
            ))?;
        }
        let rate = |n: u64| n as f64 / self.elapsed;
        if r.interrupted {
            let ran: Vec<String> = self
                .defs
                .iter()
                .zip(&r.scenarios)
                .filter(|(_, o)| o.runs > 0)
                .map(|(d, o)| format!("{} {}", d.name, describe_ranges(&o.ran)))
                .collect();
            io(writeln!(
                out,
                "sweep: INTERRUPTED after {} of {} runs (seeds run: {}); {} failing found so far, saved above; hazard coverage is not judged",
                r.runs,
                self.seeds.len() * self.defs.len() as u64,
                if ran.is_empty() { "none".to_string() } else { ran.join("; ") },
                r.failing()
            ))?;
        }
        let skipped = match r.not_expressible() {
            0 => String::new(),
            n => format!(
                ", {n} not expressible by {} (skipped, never passed)",
                m.name()
            ),
        };
        io(writeln!(
            out,
            "sweep: {} runs ({} scenario(s) x {} seeds, variant {}) on {} thread(s) in {:.2}s: {:.0} seeds/s, {:.0} events/s; {} failing{skipped}",
            r.runs,
            self.defs.len(),
            self.seeds.len(),
            m.name(),
            r.threads,
            self.elapsed,
            rate(r.runs),
            rate(r.events),
            r.failing()
        ))
    }

    fn coverage(&self, out: &mut dyn Write) -> Result<(), UsageError> {
        io(writeln!(
            out,
            "hazard coverage (seeds that reached each hazard; * declared by the scenario):"
        ))?;
        for (i, d) in self.defs.iter().enumerate() {
            let hazards = &self.report.scenarios[i].hazards;
            let mut cells: Vec<String> = hazards
                .iter()
                .map(|(h, n)| {
                    format!(
                        "{}{} {n}",
                        h.name(),
                        if d.hazards.contains(h) { "*" } else { "" }
                    )
                })
                .collect();
            let o = &self.report.scenarios[i];
            if o.runs > 0 && o.not_expressible == o.runs {
                cells = vec!["not expressible".to_string()];
            } else {
                for h in d.hazards.iter().filter(|h| !hazards.contains_key(h)) {
                    cells.push(format!("{}* NEVER", h.name()));
                }
            }
            io(writeln!(
                out,
                "  {:<26} {}",
                d.name,
                if cells.is_empty() {
                    "none".to_string()
                } else {
                    cells.join(", ")
                }
            ))?;
        }
        for (i, h) in self.unreached {
            io(writeln!(
                out,
                "FAIL: {} never reached its declared hazard {} ({}) in {} seeds",
                self.defs[*i].name,
                h.name(),
                h.summary(),
                self.report.scenarios[*i].runs
            ))?;
        }
        Ok(())
    }
}
