//! The `leasesim` command line: it parses, calls the library and prints, one module per
//! command family. The only crate with clap and indicatif.
//! Exit codes: 0 every invariant held, 1 a violation (or a runaway run), 2 bad input or usage,
//! always with a one-line error and never a panic; 130 (or 128 + the signal) when a sweep was
//! interrupted, after it printed and saved what it had found.

mod args;
mod audit;
mod bench;
mod explore;
mod list;
mod matrix;
mod run;
mod sql;
mod sweep;

use args::{whole, Outputs};
use clap::{CommandFactory, Parser, Subcommand, ValueEnum};
use leasesim::interrupt;
use leasesim::scenarios::{self, ScenarioDef};
use leasesim::sweep::{SeedRange, Shard};
use leasesim::Machines;
use std::io::Write;
use std::path::PathBuf;

/// Where failing sweeps save what they found.
pub const FAILURES_DIR: &str = "leasesim-failures";

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

/// How `run` and `replay` show a run.
#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
enum RunFormat {
    /// The timeline with true and local times, the verdict, the metrics.
    Text,
    /// One JSON document: verdict, findings, hazards, metrics, trace hash.
    Json,
    /// The journal's protocol events in order without their times, the verdict and the
    /// hazards: what a reviewer diffs.
    Story,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Judges a recorded journal (JSON lines, the format `run --journal` writes; one file per
    /// node or one for all) with the checkers: what each node's own records and clock can
    /// prove. A folder reads its `*.jsonl` files.
    Audit {
        /// Journal files or folders.
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// The most any node's clock may differ from the coordinator's at one instant
        /// (`500ms`): judgements across nodes (I5) are made within it, else skipped.
        #[arg(long, allow_hyphen_values = true, value_parser = leasesim::advise::parse_duration)]
        clock_uncertainty: Option<u64>,
        /// Draws the recorded journal as a self-contained HTML timeline.
        #[arg(long)]
        html: Option<PathBuf>,
        /// Output format.
        #[arg(long, value_enum, default_value_t = Format::Text)]
        format: Format,
    },
    /// Lists scenarios, variants, faults, hazards and invariants, one line each.
    List {
        /// Output format.
        #[arg(long, value_enum, default_value_t = Format::Text)]
        format: Format,
    },
    /// Runs one seed of one scenario; prints the timeline and the verdict.
    Run(run::RunCli),
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
        #[arg(long, value_enum, default_value_t = RunFormat::Text)]
        format: RunFormat,
        #[command(flatten)]
        sql: sql::SqlArgs,
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
        #[command(flatten)]
        sql: sql::SqlArgs,
    },
    /// Runs many seeds of some scenarios (all when none is named) on all cores.
    Sweep(sweep::SweepCli),
    /// Merges the results of a sweep's shards (`sweep --json`) into one verdict, one hazard
    /// coverage table and one failure list, and checks that together they are the sweep.
    Merge {
        /// The shards' JSON results.
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// Writes the merged result as JUnit XML.
        #[arg(long)]
        junit: Option<PathBuf>,
        /// Appends a Markdown summary of the merged result to this file.
        #[arg(long)]
        summary: Option<PathBuf>,
        /// Writes the merged result as JSON to this file.
        #[arg(long)]
        json: Option<PathBuf>,
        /// For the shards of a matrix: where the whole matrix's Markdown and HTML tables and
        /// counterexamples are written (none are written without it).
        #[arg(long)]
        out: Option<PathBuf>,
        /// Output format.
        #[arg(long, value_enum, default_value_t = Format::Text)]
        format: Format,
        /// The SQL files the shards ran (`--coordinator sql:FILE`, as they were given).
        #[command(flatten)]
        sql: sql::SqlArgs,
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
        #[command(flatten)]
        sql: sql::SqlArgs,
    },
    /// Runs the same scenario on the simulator and on the async-shell engine (madsim in the
    /// madsim build, real tokio otherwise), each in its own process, and prints seeds/s,
    /// events/s, peak memory and their ratio; `--scaling` prints the simulator's scaling table.
    Bench(bench::BenchCli),
    /// Runs the scenarios the async shell expresses on the simulator and on the async-shell
    /// engine, and reports where the two engines disagree (with both seeds).
    Agree {
        /// Scenario names (default: w1-w2, gc-pause-after-check, late-tool-answer,
        /// restart-same-name, heartbeat-ack-lost).
        scenarios: Vec<String>,
        /// `N` for seeds 0..N, or `A..B`.
        #[arg(long, default_value = "20", allow_hyphen_values = true, value_parser = SeedRange::parse)]
        seeds: SeedRange,
        /// The machines to compare, as every command names them: `--variant NAME`, repeated or
        /// comma-separated (`--variants` is the same). Default: reference, unconditional-commit,
        /// receiver-ignores-fence, no-jeopardy (a user's program: all its machine sets).
        #[arg(
            long = "variant",
            visible_alias = "variants",
            value_name = "NAME",
            value_delimiter = ','
        )]
        variants: Vec<String>,
        /// Runs configurations that break the P6 timing rule instead of refusing them.
        #[arg(long)]
        allow_unsafe_timing: bool,
        /// Output format.
        #[arg(long, value_enum, default_value_t = Format::Text)]
        format: Format,
    },
    /// Writes the example reports (`--out reports --page-limit 300` regenerates the ones
    /// committed under `reports/`).
    Examples {
        /// Where they go.
        #[arg(long)]
        out: PathBuf,
        /// Leaves out a counterexample's timeline page larger than this many kilobytes (1,000
        /// bytes), the matrix linking its replay instead.
        #[arg(long, value_name = "KB", allow_hyphen_values = true, value_parser = whole::<u64>)]
        page_limit: Option<u64>,
        /// Worker threads for the matrix (default: every core).
        #[arg(long, allow_hyphen_values = true, value_parser = whole::<usize>)]
        jobs: Option<usize>,
    },
    /// Checks a lease timing against P6 (L > R*H + J with drift) and says what is safe.
    Advise {
        /// Lease length L, with a unit (`90s`, `1500ms`).
        #[arg(long, allow_hyphen_values = true, value_parser = leasesim::advise::parse_duration)]
        lease: u64,
        /// Heartbeat period H.
        #[arg(long, allow_hyphen_values = true, value_parser = leasesim::advise::parse_duration)]
        heartbeat: u64,
        /// Jitter reserve J: worst renewal latency.
        #[arg(long, allow_hyphen_values = true, value_parser = leasesim::advise::parse_duration)]
        jitter: u64,
        /// R: heartbeats per lease window.
        #[arg(long, allow_hyphen_values = true, value_parser = whole::<u32>)]
        misses: u32,
        /// Clock rate error bound rho, in ppm.
        #[arg(long, default_value_t = 0, allow_hyphen_values = true, value_parser = whole::<u32>)]
        drift_ppm: u32,
        /// Stop margin G: the time the holder needs to stop producing effects.
        #[arg(long, allow_hyphen_values = true, value_parser = leasesim::advise::parse_duration, default_value = "0s")]
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
    Matrix(matrix::MatrixCli),
    /// Every fault plan of up to K faults placed at the protocol events of a scenario's
    /// fault-free run, with the seed held fixed: what no placement of K faults breaks.
    Explore(explore::ExploreCli),
    /// A queue's SQL file: `sql check FILE...` holds it to the statement contract.
    Sql {
        #[command(subcommand)]
        command: SqlCommand,
    },
}

#[derive(Subcommand, Debug)]
enum SqlCommand {
    /// Checks SQL files against the statement contract: a missing statement, a parameter
    /// leasesim does not pass, a returned column it does not read, a reading of the real
    /// clock; each with its line (exit 2 when there is any).
    Check {
        /// The SQL files.
        files: Vec<PathBuf>,
    },
    /// Tries every interleaving of a few workers' concurrent claims (each on its own
    /// connection) and says what they can end in: two workers granted the same job break
    /// single-valid-lease (I3), exit 1.
    Explore {
        /// Workers claiming at once (2 or 3).
        #[arg(long, default_value_t = 2, allow_hyphen_values = true, value_parser = whole::<usize>)]
        workers: usize,
        /// Jobs queued (1 or 2).
        #[arg(long, default_value_t = 1, allow_hyphen_values = true, value_parser = whole::<usize>)]
        jobs: usize,
        /// The SQL file: `--coordinator sql:FILE` (and `--isolation`, `--database-url`).
        #[command(flatten)]
        sql: sql::SqlArgs,
    },
}

/// What `sweep --seeds` asks for.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum SeedsArg {
    /// `N` or `A..B`.
    Range(SeedRange),
    /// `A..`: from A on, as far as a time budget goes.
    From(u64),
    /// `random`: a base drawn from the system.
    Random,
}

impl SeedsArg {
    fn parse(s: &str) -> Result<SeedsArg, String> {
        let t = s.trim();
        if t == "random" {
            return Ok(SeedsArg::Random);
        }
        if let Some(a) = t.strip_suffix("..") {
            if !a.contains("..") {
                return SeedRange::parse(&format!("{a}..{}", u64::MAX))
                    .map(|r| SeedsArg::From(r.start));
            }
        }
        SeedRange::parse(s).map(SeedsArg::Range)
    }
}

/// The shard `--shard` names, else the one the environment names ([`Shard::from_env`]), with
/// what named it (`--shard`, or the variables and their values); `None` for the whole.
fn shard_from(flag: Option<Shard>) -> Result<(Option<Shard>, Option<String>), UsageError> {
    if let Some(s) = flag {
        return Ok((Some(s), Some("--shard".to_string())));
    }
    Ok(match Shard::from_env().map_err(UsageError)? {
        Some((s, source)) => (Some(s), Some(source)),
        None => (None, None),
    })
}

/// A user error: printed as one line, exit code 2.
struct UsageError(String);

impl From<String> for UsageError {
    fn from(s: String) -> UsageError {
        UsageError(s)
    }
}

impl From<leasesim_bench::Error> for UsageError {
    fn from(leasesim_bench::Error(s): leasesim_bench::Error) -> UsageError {
        UsageError(s)
    }
}

impl From<leasesim_results::BadInput> for UsageError {
    fn from(leasesim_results::BadInput(s): leasesim_results::BadInput) -> UsageError {
        UsageError(s)
    }
}

impl Format {
    /// The library's name for it.
    fn lib(self) -> leasesim::Format {
        match self {
            Format::Text => leasesim::Format::Text,
            Format::Json => leasesim::Format::Json,
        }
    }
}

/// A write to the output stream. A closed pipe is not an error here: `main` makes the stream
/// swallow it, so a command piped into `head` ends with its own exit code.
fn io<T>(r: std::io::Result<T>) -> Result<T, UsageError> {
    r.map_err(|e| UsageError(format!("cannot write output: {e}")))
}

fn scenario(catalogue: &[ScenarioDef], name: &str) -> Result<ScenarioDef, UsageError> {
    Ok(scenarios::named(catalogue, name)?)
}

/// The named scenarios, each once (all of the program's when none is named).
fn scenario_list(
    catalogue: &[ScenarioDef],
    names: &[String],
) -> Result<Vec<ScenarioDef>, UsageError> {
    Ok(scenarios::named_list(catalogue, names)?)
}

/// The machines a command runs: the SQL file `--coordinator sql:FILE` names, or the machines
/// `--variant` names, or the program's first.
fn pick_with(
    catalogue: &[Machines],
    name: Option<&str>,
    sql: &sql::SqlArgs,
    command: &str,
) -> Result<Machines, UsageError> {
    match sql::one(sql, command)? {
        Some(m) => match name {
            Some(v) => Err(UsageError(format!(
                "--variant {v} and machines of your own (sql:FILE, exec:COMMAND): they take the place of the reference's; give one of them"
            ))),
            None => Ok(m),
        },
        None => pick(catalogue, name),
    }
}

/// The program's catalogue with the SQL files named in front (replay and shrink find the
/// machines a file was recorded with there).
fn with_sql(catalogue: &[Machines], sql: &sql::SqlArgs) -> Result<Vec<Machines>, UsageError> {
    let mut all = sql::machines(sql)?;
    all.extend(catalogue.iter().cloned());
    Ok(all)
}

/// The machines `--variant` names, or the program's first.
fn pick(catalogue: &[Machines], name: Option<&str>) -> Result<Machines, UsageError> {
    match name {
        Some(name) => machines(catalogue, name),
        None => catalogue
            .first()
            .cloned()
            .ok_or_else(|| UsageError("this program was built with no machines".into())),
    }
}

/// The machines `--variant` names, from the program's catalogue.
fn machines(catalogue: &[Machines], name: &str) -> Result<Machines, UsageError> {
    Ok(leasesim::machines::named(catalogue, name)?)
}

/// Refuses a variant whose configuration breaks P6 unless the bypass was given.
fn refuse_unsafe_timing(
    defs: &[ScenarioDef],
    seed: u64,
    m: &Machines,
    allow: bool,
) -> Result<(), UsageError> {
    Ok(scenarios::refuse_unsafe_timing(defs, seed, m, allow)?)
}

/// clap's message in one line: its first paragraph (the error and, for a missing argument,
/// the arguments it names), joined.
fn one_line(e: &clap::Error) -> String {
    let text = e.render().to_string();
    let first: Vec<&str> = text
        .lines()
        .take_while(|l| !l.trim().is_empty())
        .map(str::trim)
        .collect();
    if first.is_empty() {
        "error: bad usage".to_string()
    } else {
        first.join(" ")
    }
}

/// An output stream that ends quietly when its reader has gone (`leasesim run ... | head -1`):
/// the rest of the output is dropped, and the command still ends with its own exit code.
struct QuietPipe<W: Write> {
    inner: W,
    closed: bool,
}

impl<W: Write> QuietPipe<W> {
    fn absorb(&mut self, r: std::io::Result<()>) -> std::io::Result<()> {
        match r {
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {
                self.closed = true;
                Ok(())
            }
            r => r,
        }
    }
}

impl<W: Write> Write for QuietPipe<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if !self.closed {
            let r = self.inner.write_all(buf);
            self.absorb(r)?;
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        if self.closed {
            return Ok(());
        }
        let r = self.inner.flush();
        self.absorb(r)
    }
}

/// The whole `leasesim` command line for a program's machines and scenarios: what the
/// `leasesim` binary runs with `Machines::stock()` and the stock scenarios, and what a user's
/// own binary runs with theirs, in three lines:
///
/// ```no_run
/// fn main() -> std::process::ExitCode {
///     leasesim_cli::main_with(leasesim::Builder::new().machines(leasesim::Machines::reference()))
/// }
/// ```
///
/// Every command is there (`run`, `sweep`, `replay`, `shrink`, `report`, `matrix`, `agree`...),
/// `--variant` choosing among the builder's machine sets by name (the first is the default),
/// scenarios among its scenarios (a user's own included), and replay files recording the
/// machines and the scenario they were made with: a program that lacks either refuses the file. It reads the process's arguments, answers
/// signals (Ctrl-C stops a sweep and keeps what it found), and never locks the output streams
/// for the run (the progress bar draws on standard error from the sweep's threads).
pub fn main_with(program: leasesim::Builder) -> std::process::ExitCode {
    interrupt::install();
    if let Some(command) = program.start_command() {
        leasesim::run::set_program_prefix(command);
    }
    let mut out = QuietPipe {
        inner: std::io::stdout(),
        closed: false,
    };
    let mut err = QuietPipe {
        inner: std::io::stderr(),
        closed: false,
    };
    let code = run_cli(std::env::args().collect(), &mut out, &mut err, &program);
    let _ = out.flush();
    // A command that a signal stopped ends with 128 + the signal, whatever it returned (a
    // statement cut short by the server's stop is not the user's error).
    let code = if interrupt::signalled() {
        interrupt::exit_code()
    } else {
        code
    };
    interrupt::exit(code)
}

/// Whether a command line (including the program name) parses, without running it: the
/// commands written in CI files are checked against the real flags this way.
pub fn check_args(args: Vec<String>) -> Result<(), String> {
    Cli::try_parse_from(args)
        .map(|_| ())
        .map_err(|e| one_line(&e))
}

/// Every option of every command whose value is a number, a duration, a seed range or a shard,
/// as (the command's words, the option): what takes a negative value to say it is negative,
/// so a test hands each one `-1`.
pub fn number_options() -> Vec<(Vec<String>, String)> {
    use std::any::TypeId;
    let numbers = [
        TypeId::of::<u64>(),
        TypeId::of::<u32>(),
        TypeId::of::<usize>(),
        TypeId::of::<SeedsArg>(),
        TypeId::of::<SeedRange>(),
        TypeId::of::<Shard>(),
    ];
    let mut out = Vec::new();
    // Commands nest one level (`sql check`): a bounded walk of the tree.
    let mut todo: Vec<(Vec<String>, clap::Command)> = vec![(Vec::new(), Cli::command())];
    while let Some((path, cmd)) = todo.pop() {
        for arg in cmd.get_arguments() {
            let typed = arg.get_value_parser().type_id();
            if let (Some(long), true) = (arg.get_long(), numbers.iter().any(|t| typed == *t)) {
                out.push((path.clone(), format!("--{long}")));
            }
        }
        for sub in cmd.get_subcommands() {
            let mut p = path.clone();
            p.push(sub.get_name().to_string());
            todo.push((p, sub.clone()));
        }
    }
    out.sort();
    out
}

/// Runs the command line with `args` (including the program name) for `program`'s machines and
/// scenarios, writing to `out` and `err`; returns the exit code. Tests drive the CLI in-process
/// through it.
pub fn run_cli(
    args: Vec<String>,
    out: &mut dyn Write,
    err: &mut dyn Write,
    program: &leasesim::Builder,
) -> i32 {
    if let Err(e) = program.validate() {
        let _ = writeln!(err, "error: this program's builder is inconsistent: {e}");
        return 2;
    }
    // Headers and hints name the program that runs (a user's binary is not `leasesim`).
    let program_name = args
        .first()
        .and_then(|a| std::path::Path::new(a).file_stem())
        .map_or_else(
            || "leasesim".to_string(),
            |n| n.to_string_lossy().into_owned(),
        );
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
                    let commands: Vec<String> = Cli::command()
                        .get_subcommands()
                        .filter(|c| !c.is_hide_set())
                        .map(|c| c.get_name().to_string())
                        .collect();
                    let _ = writeln!(
                        err,
                        "error: a command is required: {} (see {program_name} --help)",
                        commands.join(", ")
                    );
                    2
                }
                _ => {
                    let _ = writeln!(err, "{} (see {program_name} --help)", one_line(&e));
                    2
                }
            };
        }
    };
    let catalogue = program.machine_sets();
    match dispatch(
        cli.command,
        out,
        err,
        &catalogue,
        program.scenario_defs(),
        &program_name,
        program.allowed_skips(),
    ) {
        Ok(code) => code,
        Err(UsageError(msg)) => {
            let _ = writeln!(err, "error: {msg}");
            2
        }
    }
}

/// Runs one parsed command.
// Long: one arm per subcommand, each only unpacking its arguments for the command's function.
fn dispatch(
    command: Command,
    out: &mut dyn Write,
    err: &mut dyn Write,
    cat: &[Machines],
    scen: &[ScenarioDef],
    program: &str,
    program_skips: &[String],
) -> Result<i32, UsageError> {
    match command {
        Command::List { format } => list::list(out, format, cat, scen),
        Command::Audit {
            files,
            clock_uncertainty,
            html,
            format,
        } => audit::audit_cmd(out, &files, clock_uncertainty, html.as_deref(), format),
        Command::Run(a) => run::run_cli(out, a, cat, scen, program),
        Command::Replay {
            file,
            html,
            markdown,
            trace,
            check_determinism,
            format,
            sql,
        } => run::replay_cmd(
            out,
            &file,
            &with_sql(cat, &sql)?,
            scen,
            &run::RunOpts {
                outputs: Outputs {
                    trace,
                    html,
                    markdown,
                    ..Outputs::default()
                },
                journal_dir: None,
                check_determinism,
                allow_unsafe_timing: false,
                engine: leasesim_shell::engines::Engine::Sim,
                format,
                program: program.to_string(),
            },
        ),
        Command::Shrink {
            file,
            out: dest,
            format,
            sql,
        } => {
            // A Ctrl-C ends the shrinking after the candidate run under way, and the smallest
            // failing plan found so far is saved and shown, from the first moment: the section
            // starts before a `--coordinator sql:` server does.
            let graceful = leasesim::interrupt::Graceful::enter();
            let cat = with_sql(cat, &sql)?;
            run::shrink_cmd(out, &file, dest, format, &cat, scen, &graceful)
        }
        Command::Report {
            file,
            html,
            markdown,
            sql,
        } => run::report_cmd(out, &file, html, markdown, &with_sql(cat, &sql)?, scen),
        Command::Sweep(a) => sweep::sweep_cli(out, err, a, cat, scen, program_skips),
        Command::Merge {
            files,
            junit,
            summary,
            json,
            out: dir,
            format,
            sql,
        } => Ok(leasesim_results::merge::merge_cmd(
            out,
            &files,
            &leasesim_results::files::ReportFiles {
                junit,
                summary,
                json,
            },
            dir.as_deref(),
            format.lib(),
            &with_sql(cat, &sql)?,
            scen,
        )?),
        Command::Matrix(a) => matrix::matrix_cli(out, a, cat, scen),
        Command::Explore(a) => explore::explore_cli(out, err, a, cat, scen),
        Command::Sql {
            command: SqlCommand::Check { files },
        } => sql::check_cmd(out, &files),
        Command::Sql {
            command: SqlCommand::Explore { workers, jobs, sql },
        } => sql::explore_cmd(out, &sql, workers, jobs),
        Command::Examples {
            out: dir,
            page_limit,
            jobs,
        } => matrix::examples_cmd(out, &dir, page_limit, jobs),
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
        } => list::advise_cmd(
            out,
            &leasesim::advise::AdviseInput {
                lease_ns: lease,
                heartbeat_ns: heartbeat,
                jitter_ns: jitter,
                misses,
                drift_ppm,
                stop_margin_ns: stop_margin,
            },
            plot,
            simulate,
            format,
        ),
        Command::Bench(a) => bench::bench(out, a, cat, scen),
        Command::Agree {
            scenarios: names,
            seeds,
            variants,
            allow_unsafe_timing,
            format,
        } => Ok(leasesim_bench::agree_cmd(
            out,
            &leasesim_bench::AgreeArgs {
                names,
                seeds,
                variants,
                allow_unsafe_timing,
                format: format.lib(),
            },
            cat,
            scen,
        )?),
    }
}
