//! `sweep`: many seeds on every core through the library's [`leasesim::sweep::sweep`], with a
//! progress bar on a terminal, the failing seeds streamed to a list file as they are found, a
//! replay file for each printed failure, the first failure shrunk, and the hazard coverage table.
//! Ctrl-C stops it between two runs: what it found so far is printed and saved.

use super::args::whole;
use super::args::OutDir;
use super::{io, refuse_unsafe_timing, scenario_list, Format, SeedsArg, UsageError};
use super::{pick_with, sql, FAILURES_DIR};
use leasesim::files;
use leasesim::interrupt::{self, Graceful, Registered};
use leasesim::pool;
use leasesim::run::reproduce_command_for;
use leasesim::scenarios::ScenarioDef;
use leasesim::sweep::{self, Failure, SeedRange, Shard, SweepConfig};
use leasesim::Machines;
use leasesim_reports::matrix::file_stem;
use leasesim_results::files::ReportFiles;
use leasesim_results::sweep::{describe_groups, groups, save_failures, Outcome, Results};
use std::collections::BTreeMap;
use std::io::{IsTerminal, Write};
use std::ops::Range;
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::Duration;

/// How far `--seeds A..` and `--seeds random` reach under a time budget: 2^40 seeds, more than
/// any budget runs, little enough that scenarios x seeds stays countable.
const OPEN_SEEDS: u64 = 1 << 40;
/// Seeds of `--seeds random` without a time budget.
const RANDOM_SEEDS: u64 = 1_000;

pub(super) struct SweepArgs {
    pub names: Vec<String>,
    pub seeds: SeedsArg,
    pub shard: Option<Shard>,
    pub budget: Option<Duration>,
    pub reports: ReportFiles,
    pub machines: Machines,
    pub jobs: Option<usize>,
    pub failures_dir: PathBuf,
    pub allow_unsafe_timing: bool,
    pub check_determinism: bool,
    pub allow_skipped: Vec<String>,
    pub format: Format,
}

/// The failure list, written as chunks finish, in seed order: a chunk that finishes ahead of an
/// earlier one waits in `pending` (a few chunks at most, one per thread that ran ahead). It
/// grows in a `.partial-` file beside its name and is renamed onto it by [`ListFile::finish`],
/// or by the cleanup a signal that ends the process at once runs: what was found is never lost.
struct ListFile {
    path: PathBuf,
    file: Option<(files::Partial, Registered)>,
    next: u64,
    pending: BTreeMap<u64, String>,
    error: Option<String>,
    lines: u64,
}

impl ListFile {
    /// A list at `path`, not created until the first failure.
    fn new(path: PathBuf) -> ListFile {
        ListFile {
            path,
            file: None,
            next: 0,
            pending: BTreeMap::new(),
            error: None,
            lines: 0,
        }
    }

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
            match files::Partial::create(&self.path) {
                Ok(f) => {
                    let list = f.handle();
                    let on_signal = interrupt::while_alive(move || {
                        let _ = list.publish();
                    });
                    self.file = Some((f, on_signal));
                }
                Err(e) => {
                    self.error = Some(format!("cannot write {}: {e}", self.path.display()));
                    return;
                }
            }
        }
        if let Some((f, _)) = &mut self.file {
            if let Err(e) = f.write_all(text.as_bytes()) {
                self.error = Some(format!("cannot write {}: {e}", self.path.display()));
            }
            self.lines += text.lines().count() as u64 / 2;
        }
    }

    fn flush(&mut self) {
        if let Some((f, _)) = &mut self.file {
            if let Err(e) = f.flush() {
                self.error = Some(format!("cannot write {}: {e}", self.path.display()));
            }
        }
    }

    /// Gives the list its name, with everything written to it; a list that could not be
    /// written whole is removed (dropped unfinished), its error already said.
    fn finish(&mut self) {
        if let Some((f, on_signal)) = self.file.take() {
            if self.error.is_some() {
                drop(f);
            } else if let Err(e) = f.finish() {
                self.error = Some(format!("cannot write {}: {e}", self.path.display()));
            }
            drop(on_signal);
        }
    }
}

/// What the command line watches while the library sweeps: the progress bar and the list file.
struct Watch<'a> {
    defs: &'a [ScenarioDef],
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
            let name = &self.defs[f.scenario].name;
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

/// A seed base from the system's randomness, below 10^12 so that it reads well and any range
/// from it fits: outside the simulated world, which never draws from the system.
fn random_base() -> Result<u64, UsageError> {
    use std::io::Read;
    let mut bytes = [0u8; 8];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut bytes))
        .map_err(|e| UsageError(format!("--seeds random: cannot read /dev/urandom: {e}")))?;
    Ok(u64::from_le_bytes(bytes) % 1_000_000_000_000)
}

/// The seed range `--seeds` names, with the base drawn for `random`.
fn resolve_seeds(a: &SweepArgs) -> Result<(SeedRange, Option<u64>), UsageError> {
    let open = |start: u64| SeedRange {
        start,
        end: start.saturating_add(OPEN_SEEDS),
    };
    match a.seeds {
        SeedsArg::Range(r) => Ok((r, None)),
        SeedsArg::From(start) => {
            if a.budget.is_none() {
                return Err(UsageError(format!(
                    "--seeds {start}.. has no end: give a time budget with --for, or an end ({start}..B)"
                )));
            }
            let r = open(start);
            if r.is_empty() {
                return Err(UsageError(format!("--seeds {start}.. holds no seed")));
            }
            Ok((r, None))
        }
        SeedsArg::Random => {
            let base = random_base()?;
            let r = if a.budget.is_some() {
                open(base)
            } else {
                SeedRange {
                    start: base,
                    end: base + RANDOM_SEEDS,
                }
            };
            Ok((r, Some(base)))
        }
    }
}

pub(super) fn sweep_cmd(
    out: &mut dyn Write,
    err: &mut dyn Write,
    a: &SweepArgs,
    scen: &[ScenarioDef],
) -> Result<i32, UsageError> {
    let p = Prepared::new(a, scen)?;
    // What is about to run, said first: a run that dies still told how to repeat it.
    p.announce(if a.format == Format::Text { out } else { err })?;
    let (results, mut errors) = p.run(a, scen);
    if a.format == Format::Json {
        io(writeln!(out, "{:#}", results.json()))?;
    } else {
        results.text(out)?;
    }
    errors.extend(a.reports.write(&results));
    for e in &errors {
        let _ = writeln!(err, "error: {e}");
    }
    let _ = err.flush();
    Ok(match results.outcome() {
        Outcome::Interrupted => leasesim::interrupt::exit_code(),
        Outcome::Held if !errors.is_empty() => 2,
        o => o.exit_code(),
    })
}

/// A sweep whose arguments were checked and whose failures directory is ready: everything
/// before the first seed runs.
struct Prepared {
    defs: Vec<ScenarioDef>,
    config: SweepConfig,
    shard_source: Option<String>,
    /// The seed base drawn at random, for `--seeds random`.
    random: Option<u64>,
    seeds: SeedRange,
    /// The runs of this shard.
    total: u64,
    /// Each scenario's seeds in this shard.
    share: Vec<Range<u64>>,
    dir: OutDir,
}

impl Prepared {
    /// Checks the arguments and prepares the failures directory; refuses bad input before
    /// anything is written.
    fn new(a: &SweepArgs, scen: &[ScenarioDef]) -> Result<Prepared, UsageError> {
        let defs = scenario_list(scen, &a.names)?;
        let m = &a.machines;
        if a.budget == Some(Duration::ZERO) {
            return Err(UsageError(
                "--for 0s runs nothing: give a budget longer than 0".into(),
            ));
        }
        let (shard, shard_source) = super::shard_from(a.shard)?;
        if a.seeds == SeedsArg::Random && shard.is_some_and(|s| s.count > 1) {
            return Err(UsageError(
                "--seeds random would draw a different base in every shard; give the shards one base, e.g. --seeds $CI_PIPELINE_ID.. --for 10m".into(),
            ));
        }
        let (seeds, random) = resolve_seeds(a)?;
        refuse_unsafe_timing(&defs, seeds.start, m, a.allow_unsafe_timing)?;
        let mut config = SweepConfig {
            check_determinism: a.check_determinism,
            allow_unsafe_timing: a.allow_unsafe_timing,
            shard,
            budget: a.budget,
            allow_skipped: a.allow_skipped.clone(),
            ..SweepConfig::new(defs.clone(), seeds, m.clone())
        };
        let items = config.items()?;
        let total = items.end - items.start;
        config.threads = pool::threads(a.jobs, total.div_ceil(sweep::CHUNK))?;
        a.reports.check(&[])?;
        // Where failures go is checked before any seed runs: a sweep must never find failures
        // it cannot save.
        let dir = OutDir::prepare("--failures-dir", &a.failures_dir)?;
        let share = config.share()?;
        Ok(Prepared {
            defs,
            config,
            shard_source,
            random,
            seeds,
            total,
            share,
            dir,
        })
    }

    /// The seeds drawn at random and this shard's part, before any seed runs.
    fn announce(&self, announce: &mut dyn Write) -> Result<(), UsageError> {
        let seeds = &self.seeds;
        if let Some(base) = self.random {
            io(writeln!(
                announce,
                "seeds drawn at random: base {base}; this run is --seeds {}..{}",
                seeds.start, seeds.end
            ))?;
        }
        if let (Some(s), Some(source)) = (self.config.shard, &self.shard_source) {
            io(writeln!(
                announce,
                "shard {s} (from {source}): {} of the {} runs, seeds {}",
                self.total,
                self.config.total()?,
                describe_groups(
                    &groups(&self.defs, self.share.iter().map(std::slice::from_ref)),
                    self.defs.len()
                )
            ))?;
        }
        Ok(())
    }

    /// Runs the sweep with a progress bar, lists and saves its failures as they come, and
    /// judges its coverage; returns the results and what could not be written.
    fn run(self, a: &SweepArgs, scen: &[ScenarioDef]) -> (Results, Vec<String>) {
        let Prepared {
            defs,
            config,
            shard_source,
            random,
            seeds: _,
            total,
            share,
            dir,
        } = self;
        let m = &a.machines;
        let watch = Watch {
            defs: &defs,
            machines: m,
            bar: progress_bar(a.format, total),
            list: Mutex::new(ListFile::new(
                dir.path.join(format!("sweep-{}.txt", file_stem(m.name()))),
            )),
        };
        let graceful = Graceful::enter();
        #[allow(clippy::disallowed_methods)]
        // the sweep's own throughput, never the simulated world
        let started = std::time::Instant::now();
        let report = sweep::sweep(&config, graceful.stop(), &watch);
        let elapsed = started.elapsed().as_secs_f64().max(1e-9);
        if let Some(bar) = &watch.bar {
            bar.finish_and_clear();
        }
        let mut list = watch.list.into_inner().unwrap_or_else(|p| p.into_inner());
        list.write_rest();
        list.finish();
        let saved = save_failures(
            &dir,
            &defs,
            m,
            &report,
            !report.interrupted,
            graceful.stop(),
        );
        let mut errors: Vec<String> = list.error.iter().cloned().collect();
        errors.extend(saved.errors.iter().cloned());
        let listed = (list.lines > 0 && list.error.is_none()).then(|| list.path.clone());
        if list.lines == 0 && saved.replays == 0 {
            dir.remove_if_unused();
        }
        let unreached = report.coverage(&config);
        let coverage_judged = unreached.is_some();
        let unreached = unreached.unwrap_or_default();
        let results = Results {
            program_scenarios: (scen.len(), leasesim::scenarios::is_stock_list(scen)),
            defs,
            config,
            report,
            shard_source,
            random,
            share,
            coverage_judged,
            unreached,
            elapsed,
            listed,
            saved,
            merged: None,
        };
        (results, errors)
    }
}

/// A progress bar of `total` seeds on a terminal, for text output; none otherwise.
fn progress_bar(format: Format, total: u64) -> Option<indicatif::ProgressBar> {
    (format == Format::Text && std::io::stderr().is_terminal()).then(|| {
        let bar = indicatif::ProgressBar::new(total);
        if let Ok(style) = indicatif::ProgressStyle::with_template(
            "{spinner} [{elapsed_precise}] {wide_bar} {pos}/{len} seeds ({per_sec}, eta {eta})",
        ) {
            bar.set_style(style);
        }
        bar
    })
}

/// `leasesim sweep`'s arguments.
#[derive(clap::Args, Debug)]
pub(crate) struct SweepCli {
    /// Scenario names (see `list`); all when none is given.
    pub scenarios: Vec<String>,
    /// `N` for seeds 0..N, `A..B` for seeds A up to but not including B, `A..` for seeds
    /// from A on (with --for), or `random` for a base drawn from the system, printed so
    /// the run can be repeated.
    #[arg(long, default_value = "1000", allow_hyphen_values = true, value_parser = SeedsArg::parse)]
    pub seeds: SeedsArg,
    /// Runs shard K of N of the sweep (without it: LEASESIM_SHARD=K/N, GitLab's
    /// CI_NODE_INDEX/CI_NODE_TOTAL, or Kubernetes' JOB_COMPLETION_INDEX with
    /// LEASESIM_SHARD_TOTAL, when set).
    #[arg(long, allow_hyphen_values = true, value_parser = Shard::parse)]
    pub shard: Option<Shard>,
    /// A time budget (`10m`, `90s`): no seed starts once it is spent, and the report names
    /// the seeds that ran.
    #[arg(long = "for", value_name = "DURATION", allow_hyphen_values = true, value_parser = leasesim::advise::parse_duration)]
    pub budget: Option<u64>,
    /// Writes the result as JUnit XML: one testcase per scenario.
    #[arg(long)]
    pub junit: Option<PathBuf>,
    /// Appends a Markdown summary (verdict, failures, hazard coverage) to this file, as
    /// `$GITHUB_STEP_SUMMARY` expects.
    #[arg(long)]
    pub summary: Option<PathBuf>,
    /// Writes the result as JSON (what `merge` reads) to this file, whatever `--format`.
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// The machines to run: a variant of the reference, or a user's machines (see `list`);
    /// the program's first by default.
    #[arg(long, visible_alias = "machines")]
    pub variant: Option<String>,
    /// Worker threads (default: every core).
    #[arg(long, allow_hyphen_values = true, value_parser = whole::<usize>)]
    pub jobs: Option<usize>,
    /// Where failing seeds are saved.
    #[arg(long, default_value = FAILURES_DIR)]
    pub failures_dir: PathBuf,
    /// Runs configurations that break the P6 timing rule instead of refusing them.
    #[arg(long)]
    pub allow_unsafe_timing: bool,
    /// Runs every seed twice and compares the traces.
    #[arg(long)]
    pub check_determinism: bool,
    /// Lets this judgement (by its name, its invariant's or its id: `belief-within-grant`,
    /// `quiescent-holder`, `I5`) be skipped in every run of a scenario; without it such a
    /// sweep fails, since it proves nothing about that judgement. Repeatable.
    #[arg(long, value_name = "NAME")]
    pub allow_skipped: Vec<String>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
    #[command(flatten)]
    pub sql: sql::SqlArgs,
}

/// `leasesim sweep`, from its arguments.
pub(super) fn sweep_cli(
    out: &mut dyn Write,
    err: &mut dyn Write,
    a: SweepCli,
    cat: &[Machines],
    scen: &[ScenarioDef],
    program_skips: &[String],
) -> Result<i32, UsageError> {
    let SweepCli {
        scenarios: names,
        seeds,
        shard,
        budget,
        junit,
        summary,
        json,
        variant: v,
        jobs,
        failures_dir,
        allow_unsafe_timing,
        check_determinism,
        allow_skipped,
        format,
        sql,
    } = a;
    let machines = pick_with(cat, v.as_deref(), &sql, "sweep")?;
    let jobs = sql::default_jobs(jobs, std::slice::from_ref(&machines));
    sweep_cmd(
        out,
        err,
        &SweepArgs {
            names,
            seeds,
            shard,
            budget: budget.map(std::time::Duration::from_nanos),
            reports: leasesim_results::files::ReportFiles {
                junit,
                summary,
                json,
            },
            machines,
            jobs,
            failures_dir,
            allow_unsafe_timing,
            check_determinism,
            // The program's own allowances (`Builder::allow_skipped`), then the flag's.
            allow_skipped: program_skips.iter().cloned().chain(allow_skipped).collect(),
            format,
        },
        scen,
    )
}
