//! The `leasesim` command line (DESIGN.md's contract): `list`, `run`, `sweep`.
//! Exit codes: 0 every invariant held, 1 a violation (or a runaway run), 2 bad input or usage,
//! always with a one-line error and never a panic.

use crate::hazard::Hazard;
use crate::matrix;
use crate::plan::FAULT_KINDS;
use crate::run::{run_setup, RunResult, Verdict};
use crate::scenarios::{self, ScenarioDef};
use clap::{Parser, Subcommand, ValueEnum};
use leasesim_protocol::{Invariant, Variant};
use leasesim_reports::{self as reports, Names};
use serde_json::json;
use std::collections::BTreeMap;
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

/// Where failing sweeps save what they found.
pub const FAILURES_DIR: &str = "leasesim-failures";
/// Failures printed per scenario; the rest are counted and saved.
const PRINT_FAILURES_MAX: usize = 20;
/// Sweeps at least this long per scenario must reach every hazard the scenario declares.
pub const COVERAGE_MIN_SEEDS: u64 = 100;

#[derive(Parser, Debug)]
#[command(
    name = "leasesim",
    version,
    about = "Deterministic simulation testbed for lease, heartbeat and fencing protocols"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
enum Format {
    Text,
    Json,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Lists scenarios, variants and invariants, one line each.
    List {
        /// Output format.
        #[arg(long, value_enum, default_value_t = Format::Text)]
        format: Format,
    },
    /// Runs one seed of one scenario; prints the timeline and the verdict.
    Run {
        /// Scenario name (see `list`).
        scenario: String,
        /// The seed.
        #[arg(long)]
        seed: u64,
        /// Protocol variant (see `list`).
        #[arg(long, default_value = "reference")]
        variant: String,
        /// Writes the whole trace as JSON to this file.
        #[arg(long)]
        trace: Option<PathBuf>,
        /// Runs a configuration that breaks the P6 timing rule instead of refusing it.
        #[arg(long)]
        allow_unsafe_timing: bool,
        /// Output format.
        #[arg(long, value_enum, default_value_t = Format::Text)]
        format: Format,
    },
    /// Runs many seeds of some scenarios (all when none is named) on all cores.
    Sweep {
        /// Scenario names (see `list`); all when none is given.
        scenarios: Vec<String>,
        /// `N` for seeds 0..N, or `A..B` for seeds A up to but not including B.
        #[arg(long, default_value = "1000", value_parser = parse_seeds)]
        seeds: SeedRange,
        /// Protocol variant (see `list`).
        #[arg(long, default_value = "reference")]
        variant: String,
        /// Worker threads (default: every core).
        #[arg(long)]
        jobs: Option<usize>,
        /// Where failing seeds are saved.
        #[arg(long, default_value = FAILURES_DIR)]
        failures_dir: PathBuf,
        /// Runs configurations that break the P6 timing rule instead of refusing them.
        #[arg(long)]
        allow_unsafe_timing: bool,
        /// Output format.
        #[arg(long, value_enum, default_value_t = Format::Text)]
        format: Format,
    },
    /// Every variant against every scenario: which is caught, by what, after how many seeds.
    Matrix {
        /// Seeds per scenario at most (a variant stops at its first failing seed).
        #[arg(long, default_value_t = 1000)]
        seeds: u64,
        /// Worker threads (default: every core).
        #[arg(long)]
        jobs: Option<usize>,
        /// Where the Markdown table is written.
        #[arg(long, default_value = "reports")]
        out: PathBuf,
        /// Output format.
        #[arg(long, value_enum, default_value_t = Format::Text)]
        format: Format,
    },
}

/// A half-open range of seeds.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct SeedRange {
    /// First seed.
    pub start: u64,
    /// One past the last seed.
    pub end: u64,
}

impl SeedRange {
    fn len(self) -> u64 {
        self.end - self.start
    }
}

fn parse_seeds(s: &str) -> Result<SeedRange, String> {
    let num = |t: &str| {
        t.trim()
            .parse::<u64>()
            .map_err(|_| format!("'{t}' is not a seed (an unsigned 64-bit integer)"))
    };
    let range = match s.split_once("..") {
        Some((a, b)) => SeedRange {
            start: num(a)?,
            end: num(b)?,
        },
        None => SeedRange {
            start: 0,
            end: num(s)?,
        },
    };
    if range.end <= range.start {
        return Err(format!("'{s}' is an empty range of seeds"));
    }
    Ok(range)
}

/// A user error: printed as one line, exit code 2.
struct UsageError(String);

fn scenario(name: &str) -> Result<&'static ScenarioDef, UsageError> {
    scenarios::find(name).ok_or_else(|| {
        let known: Vec<&str> = scenarios::ALL.iter().map(|s| s.name).collect();
        UsageError(format!(
            "unknown scenario '{name}' (known: {})",
            known.join(", ")
        ))
    })
}

fn variant(name: &str) -> Result<Variant, UsageError> {
    Variant::from_name(name).ok_or_else(|| {
        let known: Vec<&str> = Variant::ALL.iter().map(|v| v.name()).collect();
        UsageError(format!(
            "unknown variant '{name}' (known: {})",
            known.join(", ")
        ))
    })
}

/// Runs the command line with `args` (including the program name), writing to `out` and
/// `err`; returns the exit code.
pub fn main_with(args: Vec<String>, out: &mut dyn Write, err: &mut dyn Write) -> i32 {
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(e) => {
            use clap::error::ErrorKind;
            return match e.kind() {
                ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => {
                    let _ = write!(out, "{}", e.render());
                    0
                }
                ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
                    let _ = writeln!(
                        err,
                        "error: a command is required: list, run or sweep (see leasesim --help)"
                    );
                    2
                }
                _ => {
                    let text = e.render().to_string();
                    let first = text.lines().next().unwrap_or("error: bad usage");
                    let _ = writeln!(err, "{first} (see leasesim --help)");
                    2
                }
            };
        }
    };
    let result = match cli.command {
        Command::List { format } => list(out, format),
        Command::Run {
            scenario: name,
            seed,
            variant: v,
            trace,
            allow_unsafe_timing,
            format,
        } => run_cmd(
            out,
            &name,
            seed,
            &v,
            trace.as_deref(),
            allow_unsafe_timing,
            format,
        ),
        Command::Sweep {
            scenarios: names,
            seeds,
            variant: v,
            jobs,
            failures_dir,
            allow_unsafe_timing,
            format,
        } => sweep_cmd(
            out,
            err,
            &names,
            seeds,
            &v,
            jobs,
            &failures_dir,
            allow_unsafe_timing,
            format,
        ),
        Command::Matrix {
            seeds,
            jobs,
            out: dir,
            format,
        } => matrix_cmd(out, seeds, jobs, &dir, format),
    };
    match result {
        Ok(code) => code,
        Err(UsageError(msg)) => {
            let _ = writeln!(err, "error: {msg}");
            2
        }
    }
}

fn threads(jobs: Option<usize>) -> Result<usize, UsageError> {
    match jobs {
        Some(0) => Err(UsageError("--jobs must be at least 1".into())),
        Some(n) => Ok(n),
        None => Ok(std::thread::available_parallelism().map_or(1, |n| n.get())),
    }
}

fn matrix_cmd(
    out: &mut dyn Write,
    seeds: u64,
    jobs: Option<usize>,
    dir: &Path,
    format: Format,
) -> Result<i32, UsageError> {
    if seeds == 0 {
        return Err(UsageError("--seeds must be at least 1".into()));
    }
    let threads = threads(jobs)?;
    #[allow(clippy::disallowed_methods)] // the matrix's own duration, never the simulated world
    let started = std::time::Instant::now();
    let m = matrix::run(seeds, threads);
    let elapsed = started.elapsed().as_secs_f64();
    let md = matrix::markdown(&m);
    std::fs::create_dir_all(dir)
        .map_err(|e| UsageError(format!("cannot create {}: {e}", dir.display())))?;
    let path = dir.join("matrix.md");
    std::fs::write(&path, &md)
        .map_err(|e| UsageError(format!("cannot write {}: {e}", path.display())))?;
    if format == Format::Json {
        let mut doc = serde_json::to_value(&m)
            .map_err(|e| UsageError(format!("cannot encode the matrix: {e}")))?;
        doc["elapsed_s"] = json!(elapsed);
        doc["markdown"] = json!(path.display().to_string());
        io(writeln!(out, "{doc:#}"))?;
    } else {
        io(out.write_all(md.as_bytes()))?;
        io(writeln!(
            out,
            "\nmatrix written to {} ({elapsed:.1}s on {threads} thread(s))",
            path.display()
        ))?;
    }
    Ok(if m.reference_clean && m.all_caught {
        0
    } else {
        1
    })
}

fn io<T>(r: std::io::Result<T>) -> Result<T, UsageError> {
    r.map_err(|e| UsageError(format!("cannot write output: {e}")))
}

fn list(out: &mut dyn Write, format: Format) -> Result<i32, UsageError> {
    if format == Format::Json {
        let v = json!({
            "scenarios": scenarios::ALL.iter().map(|s| json!({"name": s.name, "story": s.story})).collect::<Vec<_>>(),
            "variants": Variant::ALL.iter().map(|v| json!({"name": v.name(), "spec": v.spec_id(), "summary": v.summary()})).collect::<Vec<_>>(),
            "invariants": Invariant::ALL.iter().map(|i| json!({"name": i.name(), "spec": i.spec_id(), "summary": i.summary()})).collect::<Vec<_>>(),
            "faults": FAULT_KINDS.iter().map(|(n, id, summary)| json!({"name": n, "spec": id, "summary": summary})).collect::<Vec<_>>(),
            "hazards": Hazard::ALL.iter().map(|h| json!({"name": h.name(), "summary": h.summary()})).collect::<Vec<_>>(),
        });
        io(writeln!(out, "{v:#}"))?;
        return Ok(0);
    }
    io(writeln!(out, "scenarios:"))?;
    for s in scenarios::ALL {
        io(writeln!(out, "  {:<26} {}", s.name, s.story))?;
        let declared: Vec<&str> = s.hazards.iter().map(|h| h.name()).collect();
        io(writeln!(
            out,
            "  {:<26}   reaches: {}",
            "",
            declared.join(", ")
        ))?;
    }
    io(writeln!(out, "variants:"))?;
    for v in Variant::ALL {
        io(writeln!(
            out,
            "  {:<26} {:<3} {}",
            v.name(),
            v.spec_id(),
            v.summary()
        ))?;
    }
    io(writeln!(out, "faults:"))?;
    for (name, id, summary) in FAULT_KINDS {
        io(writeln!(out, "  {name:<26} {id:<5} {summary}"))?;
    }
    io(writeln!(
        out,
        "hazards (counted per run; each scenario declares the ones it must reach):"
    ))?;
    for h in Hazard::ALL {
        io(writeln!(out, "  {:<26} {}", h.name(), h.summary()))?;
    }
    io(writeln!(out, "invariants:"))?;
    for i in Invariant::ALL {
        io(writeln!(
            out,
            "  {:<26} {:<3} {}",
            i.name(),
            i.spec_id(),
            i.summary()
        ))?;
    }
    Ok(0)
}

/// The command that reproduces one seed.
pub fn reproduce_command(scenario: &str, seed: u64, variant: Variant) -> String {
    let mut s = format!("cargo run --release -- run {scenario} --seed {seed}");
    if variant != Variant::Reference {
        s.push_str(&format!(" --variant {}", variant.name()));
    }
    if variant.switches().unsafe_timing {
        s.push_str(" --allow-unsafe-timing");
    }
    s
}

fn verdict_word(v: &Verdict) -> String {
    match v {
        Verdict::Held => "HELD".into(),
        Verdict::Violated => "VIOLATED".into(),
        Verdict::Unfinished { end } => format!("UNFINISHED ({end:?} limit reached)"),
    }
}

fn findings_json(r: &RunResult) -> serde_json::Value {
    r.findings
        .iter()
        .map(|f| {
            json!({
                "invariant": f.invariant.name(),
                "spec": f.invariant.spec_id(),
                "t_ns": f.t_ns,
                "node": r.nodes.get(f.node as usize).map(|n| n.name.as_str()).unwrap_or("world"),
                "message": f.message,
            })
        })
        .collect()
}

fn run_cmd(
    out: &mut dyn Write,
    name: &str,
    seed: u64,
    variant_name: &str,
    trace_path: Option<&Path>,
    allow_unsafe_timing: bool,
    format: Format,
) -> Result<i32, UsageError> {
    let def = scenario(name)?;
    let v = variant(variant_name)?;
    let setup = (def.build)(seed, v);
    if !allow_unsafe_timing {
        setup
            .validate_timing()
            .map_err(|e| UsageError(format!("{e}; pass --allow-unsafe-timing to run it anyway")))?;
    }
    let r = run_setup(&setup, seed);
    let verdict = r.verdict();
    if let Some(path) = trace_path {
        let doc = json!({
            "format": "leasesim-trace",
            "version": 1,
            "leasesim": env!("CARGO_PKG_VERSION"),
            "scenario": name,
            "variant": v.name(),
            "seed": seed,
            "setup": setup,
            "nodes": r.nodes,
            "verdict": verdict,
            "findings": findings_json(&r),
            "trace_hash": format!("{:016x}", r.trace_hash()),
            "events": r.trace,
        });
        write_json(path, &doc)?;
    }
    let node_names: Vec<String> = r.nodes.iter().map(|n| n.name.clone()).collect();
    let names = Names {
        nodes: &node_names,
        ops: &r.op_names,
    };
    if format == Format::Json {
        let doc = json!({
            "scenario": name,
            "variant": v.name(),
            "seed": seed,
            "verdict": verdict,
            "end": r.end,
            "end_ns": r.end_ns,
            "events": r.events,
            "trace_hash": format!("{:016x}", r.trace_hash()),
            "findings": findings_json(&r),
            "hazards": r.hazards.0.iter().map(|(h, n)| (h.name().to_string(), json!(n))).collect::<serde_json::Map<_, _>>(),
            "reproduce": reproduce_command(name, seed, v),
        });
        io(writeln!(out, "{doc:#}"))?;
        return Ok(verdict.exit_code());
    }
    io(writeln!(
        out,
        "leasesim run {name} --seed {seed} --variant {} ({})",
        v.name(),
        v.summary()
    ))?;
    io(out.write_all(reports::timeline(&names, &r.trace).as_bytes()))?;
    io(writeln!(out))?;
    io(writeln!(
        out,
        "verdict: {} ({} invariants checked over {} events; the run ended ({:?}) at {})",
        verdict_word(&verdict),
        Invariant::ALL.len(),
        r.events,
        r.end,
        reports::secs(r.end_ns)
    ))?;
    for f in &r.findings {
        io(writeln!(out, "  {}", reports::finding(&names, f)))?;
    }
    let reached: Vec<String> = r
        .hazards
        .0
        .iter()
        .map(|(h, n)| format!("{} {n}", h.name()))
        .collect();
    io(writeln!(
        out,
        "hazards reached: {}",
        if reached.is_empty() {
            "none".to_string()
        } else {
            reached.join(", ")
        }
    ))?;
    io(writeln!(out, "trace hash: {:016x}", r.trace_hash()))?;
    if verdict != Verdict::Held {
        io(writeln!(
            out,
            "reproduce: {}",
            reproduce_command(name, seed, v)
        ))?;
    }
    Ok(verdict.exit_code())
}

fn write_json(path: &Path, doc: &serde_json::Value) -> Result<(), UsageError> {
    let text = serde_json::to_string_pretty(doc)
        .map_err(|e| UsageError(format!("cannot encode {}: {e}", path.display())))?;
    std::fs::write(path, text + "\n")
        .map_err(|e| UsageError(format!("cannot write {}: {e}", path.display())))
}

/// One failing seed of a sweep.
#[derive(Clone, Debug)]
struct Failure {
    scenario: usize,
    seed: u64,
    verdict: Verdict,
    first: String,
    invariants: Vec<&'static str>,
}

#[allow(clippy::too_many_arguments)]
fn sweep_cmd(
    out: &mut dyn Write,
    err: &mut dyn Write,
    names: &[String],
    seeds: SeedRange,
    variant_name: &str,
    jobs: Option<usize>,
    failures_dir: &Path,
    allow_unsafe_timing: bool,
    format: Format,
) -> Result<i32, UsageError> {
    let defs: Vec<&'static ScenarioDef> = if names.is_empty() {
        scenarios::ALL.iter().collect()
    } else {
        names
            .iter()
            .map(|n| scenario(n))
            .collect::<Result<_, _>>()?
    };
    let v = variant(variant_name)?;
    let threads = threads(jobs)?;
    if !allow_unsafe_timing {
        // Every scenario's timing is checked on the first seed; the ranges hold for all.
        for d in &defs {
            (d.build)(seeds.start, v).validate_timing().map_err(|e| {
                UsageError(format!(
                    "{}: {e}; pass --allow-unsafe-timing to run it anyway",
                    d.name
                ))
            })?;
        }
    }
    let per = seeds.len();
    let total = per
        .checked_mul(defs.len() as u64)
        .ok_or_else(|| UsageError("too many seeds".into()))?;
    let progress = (format == Format::Text && std::io::stderr().is_terminal()).then(|| {
        let bar = indicatif::ProgressBar::new(total);
        bar.set_style(
            indicatif::ProgressStyle::with_template(
                "{spinner} [{elapsed_precise}] {wide_bar} {pos}/{len} seeds ({per_sec}, eta {eta})",
            )
            .expect("a valid template"),
        );
        bar
    });
    let next = AtomicU64::new(0);
    let events = AtomicU64::new(0);
    let failures: Mutex<Vec<Failure>> = Mutex::new(Vec::new());
    // Per scenario: how many seeds reached each hazard.
    let coverage: Mutex<Vec<BTreeMap<Hazard, u64>>> = Mutex::new(vec![BTreeMap::new(); defs.len()]);
    // Chunks keep the shared counter cool; each run is independent of every other.
    const CHUNK: u64 = 64;
    #[allow(clippy::disallowed_methods)] // the sweep's own throughput, never the simulated world
    let started = std::time::Instant::now();
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                let mut local_events = 0u64;
                let mut local_failures = Vec::new();
                let mut local_coverage: Vec<BTreeMap<Hazard, u64>> =
                    vec![BTreeMap::new(); defs.len()];
                loop {
                    let begin = next.fetch_add(CHUNK, Ordering::Relaxed);
                    if begin >= total {
                        break;
                    }
                    let stop = (begin + CHUNK).min(total);
                    for i in begin..stop {
                        let (sc, seed) = ((i / per) as usize, seeds.start + i % per);
                        let setup = (defs[sc].build)(seed, v);
                        let r = run_setup(&setup, seed);
                        local_events += r.events;
                        for (h, _) in r.hazards.0.iter() {
                            *local_coverage[sc].entry(*h).or_default() += 1;
                        }
                        let verdict = r.verdict();
                        if verdict != Verdict::Held {
                            let node_names: Vec<String> =
                                r.nodes.iter().map(|n| n.name.clone()).collect();
                            let names = Names {
                                nodes: &node_names,
                                ops: &r.op_names,
                            };
                            let mut invariants: Vec<&'static str> =
                                r.findings.iter().map(|f| f.invariant.name()).collect();
                            invariants.sort();
                            invariants.dedup();
                            local_failures.push(Failure {
                                scenario: sc,
                                seed,
                                first: r
                                    .findings
                                    .first()
                                    .map(|f| reports::finding(&names, f))
                                    .unwrap_or_else(|| verdict_word(&verdict)),
                                verdict,
                                invariants,
                            });
                        }
                    }
                    if let Some(bar) = &progress {
                        bar.inc(stop - begin);
                    }
                }
                events.fetch_add(local_events, Ordering::Relaxed);
                let mut cov = coverage
                    .lock()
                    .expect("no thread panics while holding the lock");
                for (total, local) in cov.iter_mut().zip(local_coverage) {
                    for (h, n) in local {
                        *total.entry(h).or_default() += n;
                    }
                }
                drop(cov);
                failures
                    .lock()
                    .expect("no thread panics while holding the lock")
                    .extend(local_failures);
            });
        }
    });
    let elapsed = started.elapsed().as_secs_f64().max(1e-9);
    if let Some(bar) = &progress {
        bar.finish_and_clear();
    }
    let mut failures = failures.into_inner().expect("threads are done");
    failures.sort_by_key(|f| (f.scenario, f.seed));
    let events = events.load(Ordering::Relaxed);
    let coverage = coverage.into_inner().expect("threads are done");
    // A declared hazard never reached in a sweep of 100 seeds or more means the scenario no
    // longer tells its story: it passes because nothing happened.
    let mut unreached: Vec<(usize, Hazard)> = Vec::new();
    if per >= COVERAGE_MIN_SEEDS {
        for (i, d) in defs.iter().enumerate() {
            for h in d.hazards {
                if !coverage[i].contains_key(h) {
                    unreached.push((i, *h));
                }
            }
        }
    }
    let saved = if failures.is_empty() {
        None
    } else {
        Some(save_failures(failures_dir, &defs, v, &failures)?)
    };
    let seeds_per_s = total as f64 / elapsed;
    let events_per_s = events as f64 / elapsed;
    if format == Format::Json {
        let doc = json!({
            "variant": v.name(),
            "seeds": {"start": seeds.start, "end": seeds.end},
            "scenarios": defs.iter().enumerate().map(|(i, d)| {
                let fs: Vec<&Failure> = failures.iter().filter(|f| f.scenario == i).collect();
                json!({
                    "name": d.name,
                    "runs": per,
                    "failing": fs.len(),
                    "hazards": coverage[i].iter().map(|(h, n)| (h.name().to_string(), json!(n))).collect::<serde_json::Map<_, _>>(),
                    "declared_hazards": d.hazards.iter().map(|h| h.name()).collect::<Vec<_>>(),
                    "unreached_hazards": unreached.iter().filter(|(s, _)| *s == i).map(|(_, h)| h.name()).collect::<Vec<_>>(),
                    "failures": fs.iter().take(1000).map(|f| json!({
                        "seed": f.seed,
                        "verdict": f.verdict,
                        "invariants": f.invariants,
                        "first": f.first,
                        "reproduce": reproduce_command(d.name, f.seed, v),
                    })).collect::<Vec<_>>(),
                })
            }).collect::<Vec<_>>(),
            "runs": total,
            "failing": failures.len(),
            "unreached_hazards": unreached.len(),
            "events": events,
            "elapsed_s": elapsed,
            "seeds_per_s": seeds_per_s,
            "events_per_s": events_per_s,
            "threads": threads,
            "saved": saved.as_ref().map(|p| p.display().to_string()),
        });
        io(writeln!(out, "{doc:#}"))?;
    } else {
        for (i, d) in defs.iter().enumerate() {
            let fs: Vec<&Failure> = failures.iter().filter(|f| f.scenario == i).collect();
            io(writeln!(
                out,
                "{:<26} {} seeds  {}",
                d.name,
                per,
                if fs.is_empty() {
                    "held".to_string()
                } else {
                    format!("{} FAILING", fs.len())
                }
            ))?;
            for f in fs.iter().take(PRINT_FAILURES_MAX) {
                io(writeln!(out, "  seed {}: {}", f.seed, f.first))?;
                io(writeln!(
                    out,
                    "    reproduce: {}",
                    reproduce_command(d.name, f.seed, v)
                ))?;
            }
            if fs.len() > PRINT_FAILURES_MAX {
                io(writeln!(
                    out,
                    "  ... and {} more failing seeds",
                    fs.len() - PRINT_FAILURES_MAX
                ))?;
            }
        }
        io(writeln!(
            out,
            "hazard coverage (seeds that reached each hazard; * declared by the scenario):"
        ))?;
        for (i, d) in defs.iter().enumerate() {
            let mut cells: Vec<String> = coverage[i]
                .iter()
                .map(|(h, n)| {
                    format!(
                        "{}{} {n}",
                        h.name(),
                        if d.hazards.contains(h) { "*" } else { "" }
                    )
                })
                .collect();
            for h in d.hazards.iter().filter(|h| !coverage[i].contains_key(h)) {
                cells.push(format!("{}* NEVER", h.name()));
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
        for (i, h) in &unreached {
            io(writeln!(
                out,
                "FAIL: {} never reached its declared hazard {} ({}) in {per} seeds",
                defs[*i].name,
                h.name(),
                h.summary()
            ))?;
        }
        if let Some(dir) = &saved {
            io(writeln!(
                out,
                "failing seeds saved under {} (the first failure's trace included)",
                dir.display()
            ))?;
        }
        io(writeln!(
            out,
            "sweep: {total} runs ({} scenario(s) x {per} seeds, variant {}) on {threads} thread(s) in {elapsed:.2}s: {seeds_per_s:.0} seeds/s, {events_per_s:.0} events/s; {} failing",
            defs.len(),
            v.name(),
            failures.len()
        ))?;
    }
    let _ = err.flush();
    Ok(if failures.is_empty() && unreached.is_empty() {
        0
    } else {
        1
    })
}

/// Saves every failing seed (a list) and the first failure's full trace; returns the folder.
fn save_failures(
    dir: &Path,
    defs: &[&'static ScenarioDef],
    v: Variant,
    failures: &[Failure],
) -> Result<PathBuf, UsageError> {
    let dir = dir.to_path_buf();
    std::fs::create_dir_all(&dir)
        .map_err(|e| UsageError(format!("cannot create {}: {e}", dir.display())))?;
    let mut list = String::new();
    for f in failures {
        let d = defs[f.scenario];
        list.push_str(&format!(
            "{} seed {} variant {}: {}\n  {}\n",
            d.name,
            f.seed,
            v.name(),
            f.first,
            reproduce_command(d.name, f.seed, v)
        ));
    }
    let list_path = dir.join(format!("sweep-{}.txt", v.name()));
    std::fs::write(&list_path, list)
        .map_err(|e| UsageError(format!("cannot write {}: {e}", list_path.display())))?;
    let first = &failures[0];
    let d = defs[first.scenario];
    let path = dir.join(format!("{}-{}-seed{}.json", d.name, v.name(), first.seed));
    let mut sink = Vec::new();
    let code = run_cmd(
        &mut sink,
        d.name,
        first.seed,
        v.name(),
        Some(&path),
        true,
        Format::Json,
    )?;
    debug_assert_eq!(
        code, 1,
        "a saved failure fails again: runs are deterministic"
    );
    Ok(dir)
}
