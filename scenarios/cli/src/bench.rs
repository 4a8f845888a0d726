//! `bench` and its SQL, instruction-count and scaling forms: the arguments, checked, handed to
//! the benchmarks' crate ([`leasesim_bench`]), which measures and prints.

use super::{pick, scenario, sql, whole, Format, UsageError};
use leasesim::{Machines, ScenarioDef};
use std::io::Write;

/// `leasesim bench`'s arguments.
#[derive(clap::Args, Debug)]
pub(super) struct BenchCli {
    /// Scenario (see `list`).
    #[arg(long, default_value = "w1-w2")]
    pub scenario: String,
    /// The machines to run: a variant of the reference, or a user's machines (see `list`);
    /// the program's first by default.
    #[arg(long, visible_alias = "machines")]
    pub variant: Option<String>,
    /// Seeds for the simulator.
    #[arg(long, default_value_t = 100_000, allow_hyphen_values = true, value_parser = whole::<u64>)]
    pub seeds: u64,
    /// Seeds for the async-shell engine.
    #[arg(long, default_value_t = 2_000, allow_hyphen_values = true, value_parser = whole::<u64>)]
    pub shell_seeds: u64,
    /// Threads per engine (default: every core).
    #[arg(long, allow_hyphen_values = true, value_parser = whole::<usize>)]
    pub jobs: Option<usize>,
    /// Runs a configuration that breaks the P6 timing rule instead of refusing it.
    #[arg(long)]
    pub allow_unsafe_timing: bool,
    /// Prints the simulator's scaling table (workers x jobs, 1 x 1 to 100 x 10,000) instead:
    /// each row the median of five processes, measured in turns with the other rows.
    #[arg(long)]
    pub scaling: bool,
    /// Counts instructions instead of seconds: sweeps N and 3N seeds of the scenario on one
    /// thread under `valgrind --tool=callgrind` and prints the difference per seed and per
    /// event (N from --instruction-seeds), and how a seed's instructions split between the
    /// parts of leasesim whose sources they were compiled from.
    #[arg(long, conflicts_with = "scaling")]
    pub instructions: bool,
    /// N for --instructions.
    #[arg(long, default_value_t = 500, requires = "instructions", allow_hyphen_values = true, value_parser = whole::<u64>)]
    pub instruction_seeds: u64,
    /// Internal: measure one engine (or `scaling:W:J:SEEDS`) in this process.
    #[arg(long, hide = true)]
    pub child: Option<String>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
    /// With a SQL file (`--coordinator sql:FILE`): the scenario with that SQL coordinator
    /// on PostgreSQL beside the in-memory reference coordinator (seeds/s, statements/s,
    /// peak memory), instead of the engines.
    #[command(flatten)]
    pub sql: sql::SqlArgs,
}

/// Runs `bench` in the form its flags ask for.
pub(super) fn bench(
    out: &mut dyn Write,
    a: BenchCli,
    cat: &[Machines],
    scen: &[ScenarioDef],
) -> Result<i32, UsageError> {
    if a.sql.any() {
        sql_bench(out, a, scen)
    } else if a.instructions {
        instructions(out, a, cat, scen)
    } else {
        Ok(leasesim_bench::bench_cmd(
            out,
            &leasesim_bench::BenchArgs {
                scenario: a.scenario,
                machines: super::pick_with(cat, a.variant.as_deref(), &a.sql, "bench")?,
                machine_args: match a.sql.any_exec() {
                    true => a.sql.to_args(),
                    false => Vec::new(),
                },
                seeds: a.seeds,
                shell_seeds: a.shell_seeds,
                jobs: a.jobs,
                allow_unsafe_timing: a.allow_unsafe_timing,
                scaling: a.scaling,
                child: a.child,
                format: a.format.lib(),
            },
            scen,
        )?)
    }
}

/// `bench --coordinator sql:FILE`: the SQL coordinator beside the in-memory reference, each
/// measured in a child process of this program, which finds the scenario by name among its own.
fn sql_bench(out: &mut dyn Write, a: BenchCli, scen: &[ScenarioDef]) -> Result<i32, UsageError> {
    if a.variant.is_some() || a.scaling || a.instructions {
        return Err(UsageError(
            "bench with a SQL coordinator compares it with the in-memory reference: --variant, --scaling and --instructions do not apply".into(),
        ));
    }
    let def = scenario(scen, &a.scenario)?;
    if a.seeds == 0 {
        return Err(UsageError("--seeds must be at least 1".into()));
    }
    // The SQL runs wait on the server: more connections than cores keep both busy.
    let jobs = a.jobs.or_else(|| Some(2 * leasesim::pool::cores()));
    let threads = leasesim::pool::threads(jobs, a.seeds)?;
    let Some(what) = &a.child else {
        return Ok(leasesim_bench::sql_table(
            out,
            &def.name,
            a.seeds,
            threads,
            &a.sql.to_args(),
            a.format.lib(),
        )?);
    };
    let sql_args = &a.sql;
    let open = move || {
        let (mut machines, db) = sql::open(sql_args).map_err(|UsageError(e)| e)?;
        let machines = machines
            .pop()
            .ok_or_else(|| "bench takes one SQL coordinator: --coordinator sql:FILE".to_string())?;
        let server_dir = db.as_ref().and_then(|d| d.dir());
        let keep: Box<dyn std::any::Any> = Box::new(db);
        Ok(leasesim_bench::OpenSql {
            machines,
            server_dir,
            keep,
        })
    };
    let open = move || open().map_err(leasesim_bench::Error);
    Ok(leasesim_bench::sql_measure_here(
        out, what, &def, a.seeds, threads, &open,
    )?)
}

/// `bench --instructions`: counted under valgrind in child processes of this program, which
/// find the scenario by name among its own.
fn instructions(
    out: &mut dyn Write,
    a: BenchCli,
    cat: &[Machines],
    scen: &[ScenarioDef],
) -> Result<i32, UsageError> {
    let def = scenario(scen, &a.scenario)?;
    let machines = pick(cat, a.variant.as_deref())?;
    super::refuse_unsafe_timing(
        std::slice::from_ref(&def),
        0,
        &machines,
        a.allow_unsafe_timing,
    )?;
    Ok(leasesim_bench::instructions(
        out,
        &leasesim_bench::InstructionArgs {
            scenario: &def.name,
            machines: machines.name(),
            allow_unsafe_timing: a.allow_unsafe_timing,
            seeds: a.instruction_seeds,
            format: a.format.lib(),
        },
    )?)
}
