//! The `leasesim` command line (DESIGN.md's contract): `list`, `run`, `sweep`.
//! Exit codes: 0 every invariant held, 1 a violation (or a runaway run), 2 bad input or usage,
//! always with a one-line error and never a panic.

use crate::advise;
use crate::engines::{self, Engine};
use crate::examples;
use crate::hazard::Hazard;
use crate::journal;
use crate::matrix;
use crate::plan::FAULT_KINDS;
use crate::plot;
use crate::replay::Replay;
use crate::run::{run_setup, RunResult, Verdict};
use crate::scenarios::{self, ScenarioDef};
use crate::setup::Setup;
use crate::shrink;
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
        /// Writes a replay file of this run.
        #[arg(long)]
        save: Option<PathBuf>,
        /// Writes the journal (JSON lines, P18) to this file.
        #[arg(long)]
        journal: Option<PathBuf>,
        /// Writes the run as a self-contained HTML timeline.
        #[arg(long)]
        html: Option<PathBuf>,
        /// Writes the run as Markdown with a Mermaid sequence diagram.
        #[arg(long)]
        markdown: Option<PathBuf>,
        /// Runs the seed twice and compares the traces (on madsim: madsim's own check too).
        #[arg(long)]
        check_determinism: bool,
        /// The engine: `sim` (the simulator), `madsim` (the async shell on madsim, in the madsim
        /// build) or `tokio` (the async shell on real tokio, in the normal build).
        #[arg(long, default_value = "sim")]
        engine: String,
        /// Output format.
        #[arg(long, value_enum, default_value_t = Format::Text)]
        format: Format,
    },
    /// Re-runs a saved replay file exactly.
    Replay {
        /// The replay file.
        file: PathBuf,
        /// Writes the run as a self-contained HTML timeline.
        #[arg(long)]
        html: Option<PathBuf>,
        /// Writes the run as Markdown with a Mermaid sequence diagram.
        #[arg(long)]
        markdown: Option<PathBuf>,
        /// Writes the whole trace as JSON to this file.
        #[arg(long)]
        trace: Option<PathBuf>,
        /// Runs it twice and compares the traces.
        #[arg(long)]
        check_determinism: bool,
        /// Output format.
        #[arg(long, value_enum, default_value_t = Format::Text)]
        format: Format,
    },
    /// Minimises a failing replay while the same invariant still fails.
    Shrink {
        /// The replay file.
        file: PathBuf,
        /// Where the shrunk replay goes (default: next to it, `.shrunk.json`).
        #[arg(long)]
        out: Option<PathBuf>,
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
        /// Runs every seed twice and compares the traces.
        #[arg(long)]
        check_determinism: bool,
        /// Output format.
        #[arg(long, value_enum, default_value_t = Format::Text)]
        format: Format,
    },
    /// Renders a saved run (a replay file, or a trace file written by `run --trace`) for review.
    Report {
        /// The replay or trace file.
        file: PathBuf,
        /// Writes a self-contained HTML timeline.
        #[arg(long)]
        html: Option<PathBuf>,
        /// Writes Markdown with a Mermaid sequence diagram.
        #[arg(long)]
        markdown: Option<PathBuf>,
    },
    /// Runs the same scenario on the simulator and on the async-shell engine (madsim in the
    /// madsim build, real tokio otherwise), each in its own process, and prints seeds/s,
    /// events/s, peak memory and their ratio; `--scaling` prints the simulator's scaling table.
    Bench {
        /// Scenario (see `list`).
        #[arg(long, default_value = "w1-w2")]
        scenario: String,
        /// Protocol variant (see `list`).
        #[arg(long, default_value = "reference")]
        variant: String,
        /// Seeds for the simulator.
        #[arg(long, default_value_t = 100_000)]
        seeds: u64,
        /// Seeds for the async-shell engine.
        #[arg(long, default_value_t = 2_000)]
        shell_seeds: u64,
        /// Threads per engine (default: every core).
        #[arg(long)]
        jobs: Option<usize>,
        /// Prints the simulator's scaling table (workers x jobs, 1 x 1 to 100 x 10,000) instead.
        #[arg(long)]
        scaling: bool,
        /// Internal: measure one engine (or `scaling:W:J:SEEDS`) in this process.
        #[arg(long, hide = true)]
        child: Option<String>,
        /// Output format.
        #[arg(long, value_enum, default_value_t = Format::Text)]
        format: Format,
    },
    /// Runs the scenarios the async shell expresses on the simulator and on the async-shell
    /// engine, and reports where the two engines disagree (with both seeds).
    Agree {
        /// Scenario names (default: w1-w2, gc-pause-after-check, late-tool-answer,
        /// restart-same-name, heartbeat-ack-lost).
        scenarios: Vec<String>,
        /// `N` for seeds 0..N, or `A..B`.
        #[arg(long, default_value = "20", value_parser = parse_seeds)]
        seeds: SeedRange,
        /// Variants, comma-separated (default: reference, unconditional-commit,
        /// receiver-ignores-fence, no-jeopardy).
        #[arg(long)]
        variants: Option<String>,
        /// Output format.
        #[arg(long, value_enum, default_value_t = Format::Text)]
        format: Format,
    },
    /// Regenerates the example reports committed under `reports/`.
    Examples {
        /// Where they go.
        #[arg(long, default_value = "reports")]
        out: PathBuf,
        /// Worker threads for the matrix (default: every core).
        #[arg(long)]
        jobs: Option<usize>,
    },
    /// Checks a lease timing against P6 (L > R*H + J with drift) and says what is safe.
    Advise {
        /// Lease length L, with a unit (`90s`, `1500ms`).
        #[arg(long, value_parser = advise::parse_duration)]
        lease: u64,
        /// Heartbeat period H.
        #[arg(long, value_parser = advise::parse_duration)]
        heartbeat: u64,
        /// Jitter reserve J: worst renewal latency.
        #[arg(long, value_parser = advise::parse_duration)]
        jitter: u64,
        /// R: heartbeats per lease window.
        #[arg(long)]
        misses: u32,
        /// Clock rate error bound rho, in ppm.
        #[arg(long, default_value_t = 0)]
        drift_ppm: u32,
        /// Stop margin G: the time the holder needs to stop producing effects.
        #[arg(long, value_parser = advise::parse_duration, default_value = "0s")]
        stop_margin: u64,
        /// Writes the safe region of L against H, with the chosen point, as SVG.
        #[arg(long)]
        plot: Option<PathBuf>,
        /// With --plot: measure needless takeovers and jeopardy per grid cell by short sweeps.
        #[arg(long)]
        simulate: bool,
        /// Output format.
        #[arg(long, value_enum, default_value_t = Format::Text)]
        format: Format,
    },
    /// Every variant against every scenario: which is caught, by what, after how many seeds.
    Matrix {
        /// Seeds per scenario at most (a variant stops at its first failing seed).
        #[arg(long, default_value_t = matrix::DEFAULT_SEEDS)]
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
            save,
            journal,
            html,
            markdown,
            check_determinism,
            engine,
            format,
        } => engine_arg(&engine).and_then(|engine| {
            run_cmd(
                out,
                &name,
                seed,
                &v,
                &RunOpts {
                    trace: trace.as_deref(),
                    journal: journal.as_deref(),
                    html: html.as_deref(),
                    markdown: markdown.as_deref(),
                    save: save.as_deref(),
                    check_determinism,
                    allow_unsafe_timing,
                    engine,
                    format,
                },
            )
        }),
        Command::Replay {
            file,
            html,
            markdown,
            trace,
            check_determinism,
            format,
        } => replay_cmd(
            out,
            &file,
            &RunOpts {
                trace: trace.as_deref(),
                journal: None,
                html: html.as_deref(),
                markdown: markdown.as_deref(),
                save: None,
                check_determinism,
                allow_unsafe_timing: false,
                engine: Engine::Sim,
                format,
            },
        ),
        Command::Shrink {
            file,
            out: dest,
            format,
        } => shrink_cmd(out, &file, dest.as_deref(), format),
        Command::Sweep {
            scenarios: names,
            seeds,
            variant: v,
            jobs,
            failures_dir,
            allow_unsafe_timing,
            check_determinism,
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
            check_determinism,
            format,
        ),
        Command::Matrix {
            seeds,
            jobs,
            out: dir,
            format,
        } => matrix_cmd(out, seeds, jobs, &dir, format),
        Command::Advise {
            lease,
            heartbeat,
            jitter,
            misses,
            drift_ppm,
            stop_margin,
            plot,
            simulate,
            format,
        } => advise_cmd(
            out,
            &advise::AdviseInput {
                lease_ns: lease,
                heartbeat_ns: heartbeat,
                jitter_ns: jitter,
                misses,
                drift_ppm,
                stop_margin_ns: stop_margin,
            },
            plot.as_deref(),
            simulate,
            format,
        ),
        Command::Report {
            file,
            html,
            markdown,
        } => report_cmd(out, &file, html.as_deref(), markdown.as_deref()),
        Command::Bench {
            scenario,
            variant: v,
            seeds,
            shell_seeds,
            jobs,
            scaling,
            child,
            format,
        } => bench_cmd(
            out,
            &BenchArgs {
                scenario,
                variant: v,
                seeds,
                shell_seeds,
                jobs,
                scaling,
                child,
                format,
            },
        ),
        Command::Agree {
            scenarios: names,
            seeds,
            variants,
            format,
        } => agree_cmd(out, &names, seeds, variants.as_deref(), format),
        Command::Examples { out: dir, jobs } => {
            let threads = match threads(jobs) {
                Ok(t) => t,
                Err(UsageError(msg)) => {
                    let _ = writeln!(err, "error: {msg}");
                    return 2;
                }
            };
            match examples::write_examples(&dir, threads) {
                Ok(files) => {
                    for f in files {
                        let _ = writeln!(out, "wrote {}", f.display());
                    }
                    let _ = writeln!(out, "wrote {}", dir.join("counterexamples").display());
                    Ok(0)
                }
                Err(e) => Err(UsageError(e)),
            }
        }
    };
    match result {
        Ok(code) => code,
        Err(UsageError(msg)) => {
            let _ = writeln!(err, "error: {msg}");
            2
        }
    }
}

fn report_cmd(
    out: &mut dyn Write,
    file: &Path,
    html: Option<&Path>,
    markdown: Option<&Path>,
) -> Result<i32, UsageError> {
    if html.is_none() && markdown.is_none() {
        return Err(UsageError(
            "report needs --html <file> or --markdown <file>".into(),
        ));
    }
    // Both a replay file and a trace file hold the setup and the seed: the run is rebuilt from
    // them, and a trace file's hash tells whether the code still produces the same run.
    let bytes = std::fs::read(file)
        .map_err(|e| UsageError(format!("cannot read {}: {e}", file.display())))?;
    let (setup, seed, recorded_hash) = match Replay::parse(&bytes) {
        Ok(r) => (r.setup, r.seed, Some(r.expect.trace_hash)),
        Err(replay_err) => {
            let v: serde_json::Value = serde_json::from_slice(&bytes).map_err(|_| {
                UsageError(format!(
                    "{}: neither a replay nor a trace file ({replay_err})",
                    file.display()
                ))
            })?;
            if v.get("format").and_then(|f| f.as_str()) != Some("leasesim-trace") {
                return Err(UsageError(format!("{}: {replay_err}", file.display())));
            }
            let setup: Setup = serde_json::from_value(v["setup"].clone()).map_err(|e| {
                UsageError(format!("{}: malformed trace file: {e}", file.display()))
            })?;
            setup.check().map_err(|e| {
                UsageError(format!("{}: inconsistent trace file: {e}", file.display()))
            })?;
            let seed = v["seed"].as_u64().ok_or_else(|| {
                UsageError(format!("{}: malformed trace file: no seed", file.display()))
            })?;
            (setup, seed, v["trace_hash"].as_str().map(str::to_string))
        }
    };
    let r = run_setup(&setup, seed);
    let pristine =
        scenarios::find(&setup.scenario).is_some_and(|d| (d.build)(seed, setup.variant) == setup);
    let reproduce = if pristine {
        reproduce_command(&setup.scenario, seed, setup.variant)
    } else if Replay::parse(&bytes).is_ok() {
        format!("cargo run --release -- replay {}", file.display())
    } else {
        format!(
            "cargo run --release -- report {} --html <file>",
            file.display()
        )
    };
    let (h, md) = examples::render(&r, &examples::title(&setup, seed), &reproduce);
    for (path, text) in [(html, h), (markdown, md)] {
        if let Some(path) = path {
            std::fs::write(path, text)
                .map_err(|e| UsageError(format!("cannot write {}: {e}", path.display())))?;
            io(writeln!(out, "wrote {}", path.display()))?;
        }
    }
    let hash = format!("{:016x}", r.trace_hash());
    if recorded_hash.is_some_and(|h| h != hash) {
        io(writeln!(out, "note: the run differs from the recorded one (the code changed since); the report shows today's run"))?;
    }
    Ok(r.verdict().exit_code())
}

fn advise_cmd(
    out: &mut dyn Write,
    input: &advise::AdviseInput,
    plot_path: Option<&Path>,
    simulate: bool,
    format: Format,
) -> Result<i32, UsageError> {
    let advice = advise::advise(input).map_err(UsageError)?;
    if simulate && plot_path.is_none() {
        return Err(UsageError(
            "--simulate draws on a plot: give --plot <file.svg>".into(),
        ));
    }
    if let Some(path) = plot_path {
        let p = plot::PlotInput { advise: *input };
        let cells = simulate.then(|| plot::simulate(&p, 6, 20));
        std::fs::write(path, plot::svg(&p, cells.as_deref()))
            .map_err(|e| UsageError(format!("cannot write {}: {e}", path.display())))?;
    }
    if format == Format::Json {
        io(writeln!(out, "{:#}", advice.to_json()))?;
    } else {
        io(write!(out, "{}", advice.render()))?;
    }
    Ok(if advice.safe() { 0 } else { 1 })
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
    let html_path = dir.join("matrix.html");
    std::fs::write(&html_path, examples::matrix_html(&m))
        .map_err(|e| UsageError(format!("cannot write {}: {e}", html_path.display())))?;
    examples::write_counterexamples(&m, dir).map_err(UsageError)?;
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

/// Options shared by `run` and `replay`.
struct RunOpts<'a> {
    trace: Option<&'a Path>,
    journal: Option<&'a Path>,
    html: Option<&'a Path>,
    markdown: Option<&'a Path>,
    save: Option<&'a Path>,
    check_determinism: bool,
    allow_unsafe_timing: bool,
    engine: Engine,
    format: Format,
}

fn engine_arg(name: &str) -> Result<Engine, UsageError> {
    let engine = Engine::parse(name).ok_or_else(|| {
        UsageError(format!(
            "unknown engine {name:?}: expected sim, madsim or tokio"
        ))
    })?;
    engine.available().map_err(UsageError)?;
    Ok(engine)
}

#[allow(clippy::too_many_arguments)]
fn run_cmd(
    out: &mut dyn Write,
    name: &str,
    seed: u64,
    variant_name: &str,
    opts: &RunOpts<'_>,
) -> Result<i32, UsageError> {
    let def = scenario(name)?;
    let v = variant(variant_name)?;
    let setup = (def.build)(seed, v);
    if !opts.allow_unsafe_timing {
        setup
            .validate_timing()
            .map_err(|e| UsageError(format!("{e}; pass --allow-unsafe-timing to run it anyway")))?;
    }
    let header = format!(
        "leasesim run {name} --seed {seed} --variant {} ({})",
        v.name(),
        v.summary()
    );
    let (code, _) = present(
        out,
        &header,
        &setup,
        seed,
        &reproduce_command(name, seed, v),
        opts,
    )?;
    Ok(code)
}

fn replay_cmd(out: &mut dyn Write, file: &Path, opts: &RunOpts<'_>) -> Result<i32, UsageError> {
    let replay = Replay::load(file).map_err(UsageError)?;
    let header = format!(
        "leasesim replay {}: {} seed {} variant {} (recorded by leasesim {})",
        file.display(),
        replay.scenario,
        replay.seed,
        replay.variant.name(),
        replay.leasesim
    );
    let opts = RunOpts {
        allow_unsafe_timing: replay.allow_unsafe_timing,
        ..*opts
    };
    let (code, r) = present(
        out,
        &header,
        &replay.setup,
        replay.seed,
        &replay_reproduce(&replay, file),
        &opts,
    )?;
    let hash = format!("{:016x}", r.trace_hash());
    if opts.format == Format::Text {
        if hash == replay.expect.trace_hash && r.verdict() == replay.expect.verdict {
            io(writeln!(
                out,
                "replay: identical to the recorded run (trace hash {hash})"
            ))?;
        } else {
            io(writeln!(
                out,
                "replay: DIFFERS from the recorded run (recorded: {} with trace hash {}; now: {} with trace hash {hash}); the code changed since it was recorded",
                verdict_word(&replay.expect.verdict),
                replay.expect.trace_hash,
                verdict_word(&r.verdict()),
            ))?;
        }
    }
    Ok(code)
}

/// The command that reproduces a replay: the plain `run` when the replay is exactly what the
/// scenario builds for that seed, `replay <file>` otherwise (a shrunk plan, an edited one).
fn replay_reproduce(replay: &Replay, file: &Path) -> String {
    let pristine = scenarios::find(&replay.scenario)
        .is_some_and(|d| (d.build)(replay.seed, replay.variant) == replay.setup);
    if pristine {
        reproduce_command(&replay.scenario, replay.seed, replay.variant)
    } else {
        format!("cargo run --release -- replay {}", file.display())
    }
}

/// Runs a setup and prints it as `run` does: the timeline, the verdict, the findings, the
/// hazards and the trace hash. Returns the exit code and the result.
fn present(
    out: &mut dyn Write,
    header: &str,
    setup: &Setup,
    seed: u64,
    reproduce: &str,
    opts: &RunOpts<'_>,
) -> Result<(i32, RunResult), UsageError> {
    let mut determinism: Option<Result<(), String>> = None;
    let mut shell_note = None;
    let mut engine_problems: Vec<String> = Vec::new();
    let mut shell_stats = None;
    if opts.engine != Engine::Sim && opts.save.is_some() {
        return Err(UsageError(format!(
            "--save records a simulator run (replay re-runs on the simulator); run without --engine {} to save one",
            opts.engine.name()
        )));
    }
    let r = if opts.engine == Engine::Sim {
        let r = run_setup(setup, seed);
        if opts.check_determinism {
            determinism = Some(check_same(&r, &run_setup(setup, seed)));
        }
        r
    } else {
        opts.engine.supports(setup).map_err(UsageError)?;
        let run = if opts.check_determinism {
            match engines::check_determinism(opts.engine, setup, seed) {
                Ok(run) => {
                    determinism = Some(Ok(()));
                    run
                }
                Err(e) => {
                    determinism = Some(Err(e));
                    engines::run(opts.engine, setup, seed).map_err(UsageError)?
                }
            }
        } else {
            engines::run(opts.engine, setup, seed).map_err(UsageError)?
        };
        engine_problems = run.problems.clone();
        shell_stats = run.stats;
        shell_note = run.stats.map(|s| {
            format!(
                "engine: {} (async shell: {} tool calls, {} answered, {} cancelled by lease loss, {} by client timeout, {} otherwise; {} heartbeat-task wakes)",
                opts.engine.name(),
                s.tool_calls,
                s.tool_answered,
                s.cancelled_lease_lost,
                s.cancelled_timed_out,
                s.cancelled_other,
                s.heartbeat_task_wakes
            )
        });
        run.result
    };
    let verdict = r.verdict();
    if let Some(path) = opts.trace {
        let doc = json!({
            "format": "leasesim-trace",
            "version": 1,
            "leasesim": env!("CARGO_PKG_VERSION"),
            "scenario": setup.scenario,
            "variant": setup.variant.name(),
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
    if let Some(path) = opts.journal {
        let mut file = std::fs::File::create(path)
            .map_err(|e| UsageError(format!("cannot write {}: {e}", path.display())))?;
        let hashes: Vec<u64> = setup.jobs.iter().map(|j| j.payload_hash).collect();
        journal::write_journal_with_payload_hashes(&r, &hashes, &mut file)
            .map_err(|e| UsageError(format!("cannot write {}: {e}", path.display())))?;
    }
    if opts.html.is_some() || opts.markdown.is_some() {
        let (html, md) = examples::render(&r, &examples::title(setup, seed), reproduce);
        for (path, text) in [(opts.html, html), (opts.markdown, md)] {
            if let Some(path) = path {
                std::fs::write(path, text)
                    .map_err(|e| UsageError(format!("cannot write {}: {e}", path.display())))?;
            }
        }
    }
    let metrics = journal::metrics(&r);
    if let Some(path) = opts.save {
        Replay::record(setup, seed, opts.allow_unsafe_timing, &r)
            .save(path)
            .map_err(UsageError)?;
    }
    let node_names: Vec<String> = r.nodes.iter().map(|n| n.name.clone()).collect();
    let names = Names {
        nodes: &node_names,
        ops: &r.op_names,
    };
    let deterministic = !matches!(determinism, Some(Err(_)));
    let code = if deterministic && engine_problems.is_empty() {
        verdict.exit_code()
    } else {
        1
    };
    if opts.format == Format::Json {
        let doc = json!({
            "scenario": setup.scenario,
            "variant": setup.variant.name(),
            "seed": seed,
            "verdict": verdict,
            "end": r.end,
            "end_ns": r.end_ns,
            "events": r.events,
            "trace_hash": format!("{:016x}", r.trace_hash()),
            "findings": findings_json(&r),
            "hazards": r.hazards.0.iter().map(|(h, n)| (h.name().to_string(), json!(n))).collect::<serde_json::Map<_, _>>(),
            "metrics": metrics.to_json(),
            "deterministic": determinism.as_ref().map(|d| d.is_ok()),
            "determinism_error": determinism.as_ref().and_then(|d| d.as_ref().err()),
            "engine_problems": engine_problems,
            "reproduce": reproduce,
            "engine": opts.engine.name(),
            "shell": shell_stats,
        });
        io(writeln!(out, "{doc:#}"))?;
        return Ok((code, r));
    }
    io(writeln!(out, "{header}"))?;
    if let Some(note) = &shell_note {
        io(writeln!(out, "{note}"))?;
    }
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
    io(writeln!(out, "{metrics}"))?;
    io(writeln!(out, "trace hash: {:016x}", r.trace_hash()))?;
    if verdict != Verdict::Held {
        io(writeln!(out, "reproduce: {reproduce}"))?;
    }
    if !engine_problems.is_empty() {
        io(writeln!(
            out,
            "engine: the {} engine did not do what its trace says: {}",
            opts.engine.name(),
            engine_problems.join("; ")
        ))?;
    }
    match determinism {
        Some(Ok(())) => io(writeln!(out, "determinism: ran twice, identical traces"))?,
        Some(Err(e)) => io(writeln!(out, "determinism: NOT DETERMINISTIC: {e}"))?,
        None => {}
    }
    Ok((code, r))
}

/// Determinism self-check: two runs of the same input must give the same trace; if not, the
/// first diverging event is named.
pub fn check_same(a: &RunResult, b: &RunResult) -> Result<(), String> {
    if a.trace_hash() == b.trace_hash() && a.trace.len() == b.trace.len() {
        return Ok(());
    }
    let node_names: Vec<String> = a.nodes.iter().map(|n| n.name.clone()).collect();
    let names = Names {
        nodes: &node_names,
        ops: &a.op_names,
    };
    let i = a
        .trace
        .iter()
        .zip(&b.trace)
        .position(|(x, y)| x != y)
        .unwrap_or(a.trace.len().min(b.trace.len()));
    let show = |t: &[leasesim_sim::TraceEvent<_, _>]| {
        t.get(i).map_or("(the trace ended)".to_string(), |e| {
            reports::line(&names, e).trim().to_string()
        })
    };
    Err(format!(
        "traces diverge at event {i}: first run `{}`, second run `{}`",
        show(&a.trace),
        show(&b.trace)
    ))
}

fn shrink_cmd(
    out: &mut dyn Write,
    file: &Path,
    dest: Option<&Path>,
    format: Format,
) -> Result<i32, UsageError> {
    let replay = Replay::load(file).map_err(UsageError)?;
    #[allow(clippy::disallowed_methods)] // the shrinker's own duration, never the simulated world
    let started = std::time::Instant::now();
    let shrunk =
        shrink::shrink(&replay).map_err(|e| UsageError(format!("{}: {e}", file.display())))?;
    let elapsed = started.elapsed().as_secs_f64();
    let dest = dest
        .map(Path::to_path_buf)
        .unwrap_or_else(|| shrunk_path(file));
    shrunk.replay.save(&dest).map_err(UsageError)?;
    let code = shrunk.replay.expect.verdict.exit_code();
    if format == Format::Json {
        let doc = json!({
            "invariant": shrunk.invariant.name(),
            "spec": shrunk.invariant.spec_id(),
            "faults_before": shrunk.faults_before,
            "faults_after": shrunk.replay.setup.faults.len(),
            "workers": shrunk.replay.setup.workers.len(),
            "jobs": shrunk.replay.setup.jobs.len(),
            "faults": shrunk.replay.setup.faults,
            "runs": shrunk.runs,
            "elapsed_s": elapsed,
            "shrunk": dest.display().to_string(),
            "verdict": shrunk.replay.expect.verdict,
        });
        io(writeln!(out, "{doc:#}"))?;
        return Ok(code);
    }
    io(writeln!(
        out,
        "shrunk {} ({} seed {} variant {}) in {elapsed:.3}s over {} runs: {} fault(s) -> {}, {} worker(s), {} job(s); {} still fails",
        file.display(),
        replay.scenario,
        replay.seed,
        replay.variant.name(),
        shrunk.runs,
        shrunk.faults_before,
        shrunk.replay.setup.faults.len(),
        shrunk.replay.setup.workers.len(),
        shrunk.replay.setup.jobs.len(),
        shrunk.invariant.label(),
    ))?;
    io(writeln!(out, "minimal plan:"))?;
    if shrunk.replay.setup.faults.is_empty() {
        io(writeln!(out, "  (no fault: the variant fails on its own)"))?;
    }
    for f in &shrunk.replay.setup.faults {
        io(writeln!(out, "  {}", shrink::describe(f)))?;
    }
    io(writeln!(
        out,
        "written to {}; see it with: cargo run --release -- replay {}",
        dest.display(),
        dest.display()
    ))?;
    Ok(code)
}

/// `x.json` -> `x.shrunk.json`.
fn shrunk_path(file: &Path) -> PathBuf {
    let stem = file
        .file_name()
        .map(|n| n.to_string_lossy().trim_end_matches(".json").to_string())
        .unwrap_or_else(|| "replay".into());
    file.with_file_name(format!("{stem}.shrunk.json"))
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
    check_determinism: bool,
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
    let nondet: Mutex<Vec<(usize, u64, String)>> = Mutex::new(Vec::new());
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
                let mut local_nondet: Vec<(usize, u64, String)> = Vec::new();
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
                        if check_determinism {
                            if let Err(e) = check_same(&r, &run_setup(&setup, seed)) {
                                local_nondet.push((sc, seed, e));
                            }
                        }
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
                nondet
                    .lock()
                    .expect("no thread panics while holding the lock")
                    .extend(local_nondet);
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
    let mut nondeterministic = nondet.into_inner().expect("threads are done");
    nondeterministic.sort_by_key(|(sc, seed, _)| (*sc, *seed));
    let coverage = coverage.into_inner().expect("threads are done");
    // A declared hazard never reached in a sweep of 100 seeds or more means the scenario no
    // longer tells its story: it passes because nothing happened.
    let mut unreached: Vec<(usize, Hazard)> = Vec::new();
    // Only the reference promises its stories: a variant changes what happens.
    if per >= COVERAGE_MIN_SEEDS && v == Variant::Reference {
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
            "saved": saved.as_ref().map(|p| p.dir.display().to_string()),
            "replays_saved": saved.as_ref().map_or(0, |p| p.replays),
            "shrunk": saved.as_ref().and_then(|p| p.shrunk.as_ref()).map(|(path, secs, before, after, inv)| json!({
                "replay": path.display().to_string(),
                "elapsed_s": secs,
                "faults_before": before,
                "faults_after": after,
                "invariant": inv,
            })),
            "determinism_checked": check_determinism,
            "nondeterministic": nondeterministic.len(),
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
        if let Some(saved) = &saved {
            io(writeln!(
                out,
                "failing seeds listed in {}, with {} replay file(s)",
                saved.dir.join(format!("sweep-{}.txt", v.name())).display(),
                saved.replays
            ))?;
            if let Some((path, secs, before, after, inv)) = &saved.shrunk {
                io(writeln!(
                    out,
                    "first failure shrunk in {secs:.3}s: {before} fault(s) -> {after}, {inv} still fails; see it with: cargo run --release -- replay {}",
                    path.display()
                ))?;
            }
        }
        for (sc, seed, e) in &nondeterministic {
            io(writeln!(
                out,
                "NOT DETERMINISTIC: {} seed {seed}: {e}",
                defs[*sc].name
            ))?;
        }
        if check_determinism {
            io(writeln!(
                out,
                "determinism: every seed ran twice; {} differed",
                nondeterministic.len()
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
    Ok(
        if failures.is_empty() && unreached.is_empty() && nondeterministic.is_empty() {
            0
        } else {
            1
        },
    )
}

/// Saves every failing seed (a list) and the first failure's full trace; returns the folder.
/// What a sweep saved of its failures.
struct Saved {
    dir: PathBuf,
    replays: usize,
    shrunk: Option<(PathBuf, f64, usize, usize, String)>,
}

/// Replay files kept in a failures folder; older ones are removed (newest kept).
pub const REPLAYS_KEPT: usize = 100;

/// Saves every failing seed (a list with commands), a replay file for each failure the sweep
/// printed, and the first failure shrunk. The folder keeps the newest [`REPLAYS_KEPT`] replays.
fn save_failures(
    dir: &Path,
    defs: &[&'static ScenarioDef],
    v: Variant,
    failures: &[Failure],
) -> Result<Saved, UsageError> {
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
    let mut replays = 0;
    let mut first_replay: Option<(PathBuf, Replay)> = None;
    for (i, d) in defs.iter().enumerate() {
        for f in failures
            .iter()
            .filter(|f| f.scenario == i)
            .take(PRINT_FAILURES_MAX)
        {
            let setup = (d.build)(f.seed, v);
            let r = run_setup(&setup, f.seed);
            let replay = Replay::record(&setup, f.seed, true, &r);
            let path = dir.join(format!("{}-{}-seed{}.json", d.name, v.name(), f.seed));
            replay.save(&path).map_err(UsageError)?;
            replays += 1;
            if first_replay.is_none() {
                first_replay = Some((path, replay));
            }
        }
    }
    prune_replays(&dir);
    // The first failure, shrunk, so the report starts from a handful of faults.
    let mut shrunk = None;
    if let Some((path, replay)) = first_replay {
        #[allow(clippy::disallowed_methods)]
        // the shrinker's own duration, never the simulated world
        let started = std::time::Instant::now();
        if let Ok(s) = shrink::shrink(&replay) {
            let elapsed = started.elapsed().as_secs_f64();
            let dest = shrunk_path(&path);
            s.replay.save(&dest).map_err(UsageError)?;
            shrunk = Some((
                dest,
                elapsed,
                s.faults_before,
                s.replay.setup.faults.len(),
                s.invariant.label(),
            ));
        }
    }
    Ok(Saved {
        dir,
        replays,
        shrunk,
    })
}

/// Keeps the newest [`REPLAYS_KEPT`] replay files of a failures folder.
fn prune_replays(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut files: Vec<(std::time::SystemTime, PathBuf)> = entries
        .flatten()
        .filter(|e| e.path().extension().is_some_and(|x| x == "json"))
        .filter_map(|e| Some((e.metadata().ok()?.modified().ok()?, e.path())))
        .collect();
    if files.len() <= REPLAYS_KEPT {
        return;
    }
    files.sort();
    for (_, path) in &files[..files.len() - REPLAYS_KEPT] {
        let _ = std::fs::remove_file(path);
    }
}

struct BenchArgs {
    scenario: String,
    variant: String,
    seeds: u64,
    shell_seeds: u64,
    jobs: Option<usize>,
    scaling: bool,
    child: Option<String>,
    format: Format,
}

fn bench_cmd(out: &mut dyn Write, a: &BenchArgs) -> Result<i32, UsageError> {
    let v = variant(&a.variant)?;
    scenario(&a.scenario)?;
    let threads = threads(a.jobs)?;
    if let Some(child) = &a.child {
        // A measuring process: one engine (or one scaling row), figures as one JSON document.
        let doc = if let Some(row) = child.strip_prefix("scaling:") {
            let n: Vec<Option<u64>> = row.split(':').map(|x| x.parse().ok()).collect();
            let [Some(w @ 1..=1_000), Some(j @ 1..=100_000), Some(s @ 1..=1_000_000)] = n[..]
            else {
                return Err(UsageError(format!(
                    "bad --child {child:?}: expected scaling:WORKERS:JOBS:SEEDS with 1-1000 workers, 1-100000 jobs, 1-1000000 seeds"
                )));
            };
            let r = crate::scaling::measure(w as usize, j as usize, s);
            json!({"row": r, "peak_rss_kib": crate::scaling::peak_rss_kib()})
        } else {
            let engine = engine_arg(child)?;
            let seeds = if engine == Engine::Sim {
                a.seeds
            } else {
                a.shell_seeds
            };
            let f = crate::bench::measure(engine, &a.scenario, v, seeds, threads)
                .map_err(UsageError)?;
            json!(f)
        };
        io(writeln!(out, "{doc}"))?;
        return Ok(0);
    }
    let common = |engine: &str| {
        vec![
            "bench".to_string(),
            "--scenario".into(),
            a.scenario.clone(),
            "--variant".into(),
            a.variant.clone(),
            "--seeds".into(),
            a.seeds.to_string(),
            "--shell-seeds".into(),
            a.shell_seeds.to_string(),
            "--jobs".into(),
            threads.to_string(),
            "--child".into(),
            engine.to_string(),
        ]
    };
    if a.scaling {
        let mut rows = Vec::new();
        for &(w, j) in crate::scaling::DEFAULT_GRID {
            let seeds = crate::scaling::default_seeds(w, j);
            let doc: serde_json::Value =
                crate::bench::in_child(&common(&format!("scaling:{w}:{j}:{seeds}")))
                    .map_err(UsageError)?;
            let row: crate::scaling::ScaleRow = serde_json::from_value(doc["row"].clone())
                .map_err(|e| UsageError(format!("the measuring process printed no row: {e}")))?;
            rows.push((row, doc["peak_rss_kib"].as_u64()));
        }
        if a.format == Format::Json {
            let v: Vec<_> = rows
                .iter()
                .map(|(r, p)| json!({"row": r, "peak_rss_kib": p}))
                .collect();
            io(writeln!(out, "{:#}", json!(v)))?;
            return Ok(0);
        }
        io(writeln!(out, "simulator scaling (reference protocol, no faults; each row in its own process, one thread):"))?;
        io(writeln!(
            out,
            "{:>8} {:>7} {:>6} {:>9} {:>10} {:>12} {:>11} {:>9} {:>10}  verdicts",
            "workers",
            "jobs",
            "seeds",
            "seconds",
            "events",
            "events/s",
            "ns/event",
            "ms/seed",
            "peak RSS"
        ))?;
        for (r, peak) in &rows {
            io(writeln!(
                out,
                "{:>8} {:>7} {:>6} {:>9.3} {:>10} {:>12.0} {:>11.0} {:>9.3} {:>10}  {}",
                r.workers,
                r.jobs,
                r.seeds,
                r.seconds,
                r.events,
                r.events_per_s,
                r.ns_per_event,
                r.seconds * 1000.0 / r.seeds.max(1) as f64,
                crate::bench::mib(*peak),
                if r.held { "all held" } else { "NOT ALL HELD" }
            ))?;
        }
        return Ok(if rows.iter().all(|(r, _)| r.held) {
            0
        } else {
            1
        });
    }
    let other = Engine::shell();
    let sim: crate::bench::EngineFigures =
        crate::bench::in_child(&common("sim")).map_err(UsageError)?;
    let shell: crate::bench::EngineFigures =
        crate::bench::in_child(&common(other.name())).map_err(UsageError)?;
    let seeds_ratio = crate::bench::ratio(sim.seeds_per_s, shell.seeds_per_s);
    let events_ratio = crate::bench::ratio(sim.events_per_s, shell.events_per_s);
    let code = if sim.not_held == 0 && shell.not_held == 0 || v != Variant::Reference {
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
            crate::bench::mib(f.peak_rss_kib),
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
            crate::engines::MADSIM_CARGO
        ))?;
    }
    Ok(code)
}

fn agree_cmd(
    out: &mut dyn Write,
    names: &[String],
    seeds: SeedRange,
    variants: Option<&str>,
    format: Format,
) -> Result<i32, UsageError> {
    let other = Engine::shell();
    let names: Vec<String> = if names.is_empty() {
        engines::AGREE_SCENARIOS
            .iter()
            .map(|s| s.to_string())
            .collect()
    } else {
        names.to_vec()
    };
    for n in &names {
        scenario(n)?;
    }
    let vs: Vec<Variant> = match variants {
        Some(list) => list
            .split(',')
            .map(|s| variant(s.trim()))
            .collect::<Result<_, _>>()?,
        None => engines::AGREE_VARIANTS
            .iter()
            .map(|s| variant(s))
            .collect::<Result<_, _>>()?,
    };
    let range = seeds.start..seeds.end;
    let mut rows = Vec::new();
    let mut skipped = Vec::new();
    for n in &names {
        let def = scenario(n)?;
        let unsupported = range
            .clone()
            .find_map(|seed| other.supports(&(def.build)(seed, Variant::Reference)).err());
        if let (Some(why), true) = (
            &unsupported,
            range.clone().all(|seed| {
                other
                    .supports(&(def.build)(seed, Variant::Reference))
                    .is_err()
            }),
        ) {
            skipped.push(why.clone());
            continue;
        }
        for &v in &vs {
            rows.push(engines::agree(other, n, v, range.clone()).map_err(UsageError)?);
        }
    }
    let disagreements = rows.iter().filter(|r| r.disagreement.is_some()).count();
    if format == Format::Json {
        io(writeln!(
            out,
            "{:#}",
            json!({"engine": other.name(), "rows": rows, "skipped": skipped, "disagreements": disagreements})
        ))?;
        return Ok(i32::from(disagreements > 0));
    }
    io(writeln!(
        out,
        "sim vs {} over seeds {}..{}:",
        other.name(),
        range.start,
        range.end
    ))?;
    let cell = |o: &engines::Outcome| {
        if o.caught() {
            let runaway = if o.unfinished > 0 {
                format!(" +{} unfinished", o.unfinished)
            } else {
                String::new()
            };
            format!(
                "caught {}/{}{runaway} (first seed {}) {}",
                o.violated,
                o.seeds,
                o.first_violation.unwrap_or(0),
                o.invariants.join(",")
            )
        } else if o.unfinished > 0 {
            format!("UNFINISHED {}/{}", o.unfinished, o.seeds)
        } else {
            format!("held {}/{}", o.seeds, o.seeds)
        }
    };
    for r in &rows {
        io(writeln!(
            out,
            "  {:<22} {:<24} sim: {:<48} {}: {:<48} same verdict on {}/{} seeds{}",
            r.scenario,
            r.variant,
            cell(&r.sim),
            other.name(),
            cell(&r.other),
            r.same_verdict_seeds,
            r.sim.seeds,
            if r.disagreement.is_some() {
                "  DISAGREE"
            } else {
                ""
            }
        ))?;
    }
    for r in &rows {
        if let Some(d) = &r.disagreement {
            io(writeln!(
                out,
                "disagreement: {} {}: {d}",
                r.scenario, r.variant
            ))?;
        }
    }
    for s in &skipped {
        io(writeln!(out, "skipped: {s}"))?;
    }
    let left_out: u64 = rows.iter().map(|r| r.sim.skipped).sum();
    if left_out > 0 {
        io(writeln!(
            out,
            "left out: {left_out} (scenario, variant, seed) runs whose plan the {} engine cannot express",
            other.name()
        ))?;
    }
    io(writeln!(
        out,
        "{} comparisons, {} disagreements",
        rows.len(),
        disagreements
    ))?;
    Ok(i32::from(disagreements > 0))
}
