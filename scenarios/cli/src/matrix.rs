//! `matrix` and `examples`: every variant against every scenario, and the example reports. A
//! matrix may run one shard of its cells (`--shard K/N` or the CI variables, as `sweep`); a
//! shard writes its cells as JSON and no table, and `merge` makes the matrix of its shards.

use super::args::whole;
use super::args::OutDir;
use super::sql;
use super::{io, Format, UsageError};
use leasesim::examples;
use leasesim::matrix::{self, Cell};
use leasesim::pool;
use leasesim::scenarios::{self, ScenarioDef};
use leasesim::sweep::Shard;
use leasesim::Machines;
use leasesim_protocol::Variant;
use leasesim_results::files::ReportFiles;
use leasesim_results::matrix::{finish_whole, result_json, write_reports, WholeOutputs};
use std::io::Write;
use std::ops::Range;
use std::path::{Path, PathBuf};

pub(super) struct MatrixArgs {
    pub seeds: u64,
    pub jobs: Option<usize>,
    pub dir: PathBuf,
    pub shard: Option<Shard>,
    pub reports: ReportFiles,
    pub format: Format,
    /// What the rows are and the command that regenerates them, for a matrix of SQL files.
    pub subject: Option<(String, String)>,
    /// `--page-limit`, in kilobytes.
    pub page_limit: Option<u64>,
}

pub(super) fn matrix_cmd(
    out: &mut dyn Write,
    a: &MatrixArgs,
    cat: &[Machines],
    scen: &[leasesim::ScenarioDef],
) -> Result<i32, UsageError> {
    if a.seeds == 0 {
        return Err(UsageError("--seeds must be at least 1".into()));
    }
    let (shard, source) = super::shard_from(a.shard)?;
    let held = matrix::shard_cells(cat, scen, shard);
    let partial = held.end - held.start < (cat.len() * scen.len()) as u64;
    if partial && (a.reports.junit.is_some() || a.reports.summary.is_some()) {
        return Err(UsageError(
            "--junit and --summary need the whole matrix (a variant is caught in any scenario): give them to `leasesim merge` of the shards' --json results".into(),
        ));
    }
    let threads = pool::threads(a.jobs, (held.end - held.start).max(1))?;
    a.reports.check(&[])?;
    let shard = shard.zip(source.as_deref());
    let run = MatrixRun {
        a,
        cat,
        scen,
        threads,
        shard,
    };
    if partial {
        return run.shard_only(out, &held);
    }
    // The folder is made ready before the matrix runs, so its tables always have a home.
    let dir = OutDir::prepare("--out", &a.dir)?;
    if a.format == Format::Text {
        run.announce(out, &held)?;
    }
    #[allow(clippy::disallowed_methods)] // the matrix's own duration, never the simulated world
    let started = std::time::Instant::now();
    let cells = matrix::cells(cat, scen, a.seeds, threads, None);
    let elapsed = started.elapsed().as_secs_f64();
    let mut m = matrix::assemble(cat, scen, a.seeds, cells.clone()).map_err(UsageError)?;
    if let Some((subject, command)) = &a.subject {
        m.subject = subject.clone();
        m.command = command.clone();
    }
    let doc = result_json(cat, a.seeds, shard, &cells, Some(&m), elapsed, scen);
    let to = WholeOutputs {
        dir: Some(&dir.path),
        reports: &a.reports,
        format: a.format.lib(),
        footer: format!(
            "matrix written to {} ({elapsed:.1}s on {threads} thread(s))",
            dir.path.join("matrix.md").display()
        ),
        page_limit: a.page_limit.map(|kb| kb.saturating_mul(1_000)),
    };
    Ok(finish_whole(out, &m, doc, &to, cat, scen)?)
}

/// A matrix about to run: its arguments, machines, scenarios, threads and shard.
struct MatrixRun<'a> {
    a: &'a MatrixArgs,
    cat: &'a [Machines],
    scen: &'a [ScenarioDef],
    threads: usize,
    /// The shard and where it came from.
    shard: Option<(Shard, &'a str)>,
}

impl MatrixRun<'_> {
    /// A cell's name: `machines x scenario`.
    fn name(&self, i: u64) -> String {
        let n = self.scen.len() as u64;
        format!(
            "{} x {}",
            self.cat[(i / n) as usize].name(),
            self.scen[(i % n) as usize].name
        )
    }

    /// Which cells a shard holds, before they run.
    fn announce(&self, out: &mut dyn Write, held: &Range<u64>) -> Result<(), UsageError> {
        if let Some((s, src)) = self.shard {
            io(writeln!(
                out,
                "shard {s} (from {src}): cells {}..{} of {} ({} to {})",
                held.start,
                held.end,
                self.cat.len() as u64 * self.scen.len() as u64,
                if held.is_empty() {
                    "none".into()
                } else {
                    self.name(held.start)
                },
                if held.is_empty() {
                    "none".into()
                } else {
                    self.name(held.end - 1)
                },
            ))?;
        }
        Ok(())
    }

    /// A shard: its cells, no table (a row's verdict needs every scenario); fails when
    /// machines expected to hold broke in one of them.
    fn shard_only(&self, out: &mut dyn Write, held: &Range<u64>) -> Result<i32, UsageError> {
        let (a, cat, scen, threads) = (self.a, self.cat, self.scen, self.threads);
        let n = scen.len() as u64;
        if a.format == Format::Text {
            self.announce(out, held)?;
        }
        #[allow(clippy::disallowed_methods)] // the matrix's own duration, never the simulated world
        let started = std::time::Instant::now();
        let cells = matrix::cells(cat, scen, a.seeds, threads, self.shard.map(|(s, _)| s));
        let elapsed = started.elapsed().as_secs_f64();
        let doc = result_json(cat, a.seeds, self.shard, &cells, None, elapsed, scen);
        write_reports(&a.reports, &doc, None)?;
        let mut held_failed = false;
        if a.format == Format::Json {
            io(writeln!(out, "{doc:#}"))?;
        }
        for (i, c) in &cells {
            let m = &cat[(*i / n) as usize];
            let failed = c.first_failing_seed.is_some() || c.unfinished > 0;
            held_failed |= failed && !m.is_known_bad();
            if a.format == Format::Text {
                io(writeln!(
                    out,
                    "{:<28} {:<28} {}",
                    m.name(),
                    c.scenario,
                    describe(c)
                ))?;
            }
        }
        if a.format == Format::Text {
            io(writeln!(
                out,
                "matrix shard: {} cell(s) in {elapsed:.1}s on {threads} thread(s); the verdict and the tables come from `leasesim merge` of every shard's --json result",
                cells.len()
            ))?;
        }
        Ok(i32::from(held_failed))
    }
}

/// A cell in a few words: `caught at seed 3: no-stale-commit (I1)`, `held over 200 seeds`.
fn describe(c: &Cell) -> String {
    match c.first_failing_seed {
        Some(seed) => format!("failed at seed {seed}: {}", c.invariants.join(", ")),
        None if c.unfinished > 0 => format!("{} run(s) unfinished", c.unfinished),
        None => format!("held over {} seeds", c.seeds_run),
    }
}

pub(super) fn examples_cmd(
    out: &mut dyn Write,
    dir: &Path,
    page_limit_kb: Option<u64>,
    jobs: Option<usize>,
) -> Result<i32, UsageError> {
    let pairs = (Variant::ALL.len() * leasesim::scenarios::ALL.len()) as u64;
    let threads = pool::threads(jobs, pairs)?;
    let dir = OutDir::prepare("--out", dir)?;
    let limit = page_limit_kb.map(|kb| kb.saturating_mul(1_000));
    let files = examples::write_examples(&dir.path, threads, limit).map_err(UsageError)?;
    for f in files {
        io(writeln!(out, "wrote {}", f.display()))?;
    }
    io(writeln!(
        out,
        "wrote {}",
        dir.path.join("counterexamples").display()
    ))?;
    Ok(0)
}

/// `leasesim matrix`'s arguments.
#[derive(clap::Args, Debug)]
pub(crate) struct MatrixCli {
    /// Seeds per scenario at most (a variant stops at its first failing seed).
    #[arg(long, default_value_t = leasesim::matrix::DEFAULT_SEEDS, allow_hyphen_values = true, value_parser = whole::<u64>)]
    pub seeds: u64,
    /// Worker threads (default: every core).
    #[arg(long, allow_hyphen_values = true, value_parser = whole::<usize>)]
    pub jobs: Option<usize>,
    /// Where the Markdown table is written (default: `reports`, with SQL files
    /// `reports/sql`).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Runs shard K of N of the matrix's cells (variant x scenario); without it, the shard
    /// the environment names as for `sweep`. A shard writes no table: `merge` its --json
    /// results.
    #[arg(long, allow_hyphen_values = true, value_parser = Shard::parse)]
    pub shard: Option<Shard>,
    /// Writes the result as JSON (what `merge` reads) to this file, whatever `--format`.
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Writes the matrix as JUnit XML: one testcase per variant x scenario.
    #[arg(long)]
    pub junit: Option<PathBuf>,
    /// Appends the matrix as Markdown to this file, as `$GITHUB_STEP_SUMMARY` expects.
    #[arg(long)]
    pub summary: Option<PathBuf>,
    /// Leaves out a counterexample's timeline page larger than this many kilobytes (1,000
    /// bytes), linking its replay instead: for reports kept in a repository.
    #[arg(long, value_name = "KB", allow_hyphen_values = true, value_parser = whole::<u64>)]
    pub page_limit: Option<u64>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
    /// With SQL files (`--coordinator sql:FILE`, repeated): the matrix of those files
    /// instead of leasesim's own machines; a file marked `-- leasesim: known-bad` must be
    /// caught, every other must hold.
    #[command(flatten)]
    pub sql: sql::SqlArgs,
}

/// `leasesim matrix`, from its arguments.
pub(super) fn matrix_cli(
    out: &mut dyn Write,
    a: MatrixCli,
    cat: &[Machines],
    scen: &[ScenarioDef],
) -> Result<i32, UsageError> {
    let MatrixCli {
        seeds,
        jobs,
        out: dir,
        shard,
        json,
        junit,
        summary,
        page_limit,
        format,
        sql,
    } = a;
    let files = sql::machines(&sql)?;
    let (cat, dir, subject) = if files.is_empty() {
        (cat, dir.unwrap_or_else(|| "reports".into()), None)
    } else {
        let args: Vec<&str> = files.iter().filter_map(Machines::command_line).collect();
        let subject = (
            "Every SQL file named (`--coordinator sql:FILE`)".to_string(),
            format!(
                "{} matrix --seeds {seeds}{} {}",
                leasesim::run::command_prefix(scenarios::is_stock_list(scen)),
                page_limit.map_or(String::new(), |kb| format!(" --page-limit {kb}")),
                args.join(" ")
            ),
        );
        (
            &files[..],
            dir.unwrap_or_else(|| PathBuf::from("reports").join("sql")),
            Some(subject),
        )
    };
    let jobs = sql::default_jobs(jobs, cat);
    matrix_cmd(
        out,
        &MatrixArgs {
            seeds,
            jobs,
            dir,
            shard,
            reports: leasesim_results::files::ReportFiles {
                junit,
                summary,
                json,
            },
            format,
            subject,
            page_limit,
        },
        cat,
        scen,
    )
}
