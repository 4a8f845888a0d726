//! `leasesim explore`: every fault plan of up to K faults anchored to the protocol events of a
//! scenario's fault-free run, with the seed held fixed (the library's `leasesim::explore`), for
//! a design review: the space's size, what ran and what was pruned, the distinct behaviours, each
//! violated invariant with its first plan shrunk, saved as a replay and an HTML timeline, the
//! hazards reached, and the sentence a reviewer can quote. It never claims "exhaustive" for a
//! space a shard, a budget or Ctrl-C cut.

use super::args::whole;
use super::args::OutDir;
use super::{io, Format, UsageError};
use super::{pick_with, sql, FAILURES_DIR};
use leasesim::explore::{self, ExploreConfig, Kind, Progress};
use leasesim::interrupt::Graceful;
use leasesim::sweep::Shard;
use leasesim::Machines;
use leasesim::ScenarioDef;
use leasesim_results::explore::{json, save, text};
use std::io::{IsTerminal, Write};
use std::path::PathBuf;

/// What `explore` was asked.
pub(super) struct ExploreArgs {
    pub scenario: String,
    pub seed: u64,
    pub faults: usize,
    pub kinds: Option<String>,
    pub machines: Machines,
    pub jobs: Option<usize>,
    pub shard: Option<Shard>,
    pub budget: Option<u64>,
    pub first: bool,
    pub failures_dir: PathBuf,
    pub allow_unsafe_timing: bool,
    pub format: Format,
}

/// The progress bar, on a terminal only.
struct Bar(Option<indicatif::ProgressBar>);

impl Bar {
    /// A bar on a terminal for text output; none otherwise.
    fn for_format(format: Format) -> Bar {
        Bar(
            (format == Format::Text && std::io::stderr().is_terminal()).then(|| {
                let bar = indicatif::ProgressBar::new(0);
                if let Ok(style) = indicatif::ProgressStyle::with_template(
                    "{spinner} [{elapsed_precise}] {wide_bar} {pos}/{len} plans ({per_sec}, eta {eta})",
                ) {
                    bar.set_style(style);
                }
                bar
            }),
        )
    }
}

impl Progress for Bar {
    fn advanced(&self, done: u64, total: u64) {
        if let Some(bar) = &self.0 {
            bar.set_length(total);
            bar.set_position(done);
        }
    }
}

/// The fault kinds asked for, once the number of faults and the budget are known to be in
/// range.
fn kinds_checked(a: &ExploreArgs) -> Result<Vec<Kind>, UsageError> {
    let kinds = match &a.kinds {
        Some(k) => Kind::parse_list(k)?,
        None => Kind::ALL.to_vec(),
    };
    if a.faults == 0 || a.faults > explore::FAULTS_MAX {
        return Err(UsageError(format!(
            "--faults {} is out of range: 1 to {} (the space grows as N^K, N being thousands of candidate faults)",
            a.faults,
            explore::FAULTS_MAX
        )));
    }
    if a.budget == Some(0) {
        return Err(UsageError(
            "--budget 0 runs nothing: give at least 1 plan".into(),
        ));
    }
    Ok(kinds)
}

pub(super) fn explore_cmd(
    out: &mut dyn Write,
    err: &mut dyn Write,
    a: &ExploreArgs,
    scen: &[leasesim::ScenarioDef],
) -> Result<i32, UsageError> {
    let def = super::scenario(scen, &a.scenario)?;
    let kinds = kinds_checked(a)?;
    let (shard, shard_source) = super::shard_from(a.shard)?;
    let config = ExploreConfig {
        kinds,
        threads: a.jobs,
        shard,
        budget: a.budget,
        stop_at_first_violation: a.first,
        allow_unsafe_timing: a.allow_unsafe_timing,
        ..ExploreConfig::new(def.clone(), a.seed, a.machines.clone(), a.faults)
    };
    // Bad input is refused before anything is written.
    leasesim::pool::threads(a.jobs, 1)?;
    let dir = OutDir::prepare("--failures-dir", &a.failures_dir)?;
    let graceful = Graceful::enter();
    let progress = Bar::for_format(a.format);
    let result = explore::explore(&config, graceful.stop(), &progress);
    if let Some(bar) = &progress.0 {
        bar.finish_and_clear();
    }
    let x = match result {
        Ok(x) => x,
        Err(e) => {
            dir.remove_if_unused();
            return Err(UsageError(e));
        }
    };
    if let (Some(s), Some(source)) = (shard, &shard_source) {
        io(writeln!(
            err,
            "shard {s} (from {source}): plans {}..{} of {}",
            x.share.start,
            x.share.end,
            x.space.total()
        ))?;
    }
    let saved = save(&dir, &x, &a.machines, &def.name);
    if saved.is_empty() {
        dir.remove_if_unused();
    }
    match a.format {
        Format::Text => io(text(out, &x, &saved, &a.machines))?,
        Format::Json => io(writeln!(
            out,
            "{}",
            serde_json::to_string_pretty(&json(&x, &saved)).unwrap_or_default()
        ))?,
    }
    if x.interrupted {
        return Ok(leasesim::interrupt::exit_code());
    }
    Ok(if x.held() { 0 } else { 1 })
}

/// `leasesim explore`'s arguments.
#[derive(clap::Args, Debug)]
pub(crate) struct ExploreCli {
    /// Scenario name (see `list`).
    pub scenario: String,
    /// K: most faults per plan (1 or 2).
    #[arg(long, allow_hyphen_values = true, value_parser = whole::<usize>)]
    pub faults: usize,
    /// The fault kinds placed, comma-separated (`pause,message`; default: all).
    #[arg(long)]
    pub kinds: Option<String>,
    /// The seed, held fixed for every plan.
    #[arg(long, default_value_t = 0, allow_hyphen_values = true, value_parser = whole::<u64>)]
    pub seed: u64,
    /// The machines to run: a variant of the reference, or a user's machines (see `list`);
    /// the program's first by default.
    #[arg(long, visible_alias = "machines")]
    pub variant: Option<String>,
    /// Worker threads (default: every core).
    #[arg(long, allow_hyphen_values = true, value_parser = whole::<usize>)]
    pub jobs: Option<usize>,
    /// Runs shard K of N of the numbered plans (or the shard the environment names, as for
    /// `sweep`).
    #[arg(long, allow_hyphen_values = true, value_parser = Shard::parse)]
    pub shard: Option<Shard>,
    /// Runs only the first N plans of the space (the output says which fraction ran).
    #[arg(long, allow_hyphen_values = true, value_parser = whole::<u64>)]
    pub budget: Option<u64>,
    /// Stops at the first violating plan (every plan numbered before it still runs, so the
    /// plans needed to find it are exact).
    #[arg(long)]
    pub first: bool,
    /// Where each violated invariant's shrunk plan is saved (replay and HTML timeline).
    #[arg(long, default_value = FAILURES_DIR)]
    pub failures_dir: PathBuf,
    /// Runs a configuration that breaks the P6 timing rule instead of refusing it.
    #[arg(long)]
    pub allow_unsafe_timing: bool,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
    #[command(flatten)]
    pub sql: sql::SqlArgs,
}

/// `leasesim explore`, from its arguments.
pub(super) fn explore_cli(
    out: &mut dyn Write,
    err: &mut dyn Write,
    a: ExploreCli,
    cat: &[Machines],
    scen: &[ScenarioDef],
) -> Result<i32, UsageError> {
    let machines = pick_with(cat, a.variant.as_deref(), &a.sql, "explore")?;
    let jobs = sql::default_jobs(a.jobs, std::slice::from_ref(&machines));
    explore_cmd(
        out,
        err,
        &ExploreArgs {
            scenario: a.scenario,
            seed: a.seed,
            faults: a.faults,
            kinds: a.kinds,
            machines,
            jobs,
            shard: a.shard,
            budget: a.budget,
            first: a.first,
            failures_dir: a.failures_dir,
            allow_unsafe_timing: a.allow_unsafe_timing,
            format: a.format,
        },
        scen,
    )
}
