//! `--coordinator sql:FILE` (or `--sql FILE`) on `run`, `sweep`, `matrix`, `replay` and
//! `shrink`, `--database-url` (or `LEASESIM_DATABASE_URL`), and `sql check`: a queue's SQL file
//! as the coordinator, on a server of the user's or on a throwaway PostgreSQL that leasesim
//! starts, and stops and removes when it exits (also on Ctrl-C and on a failure).

use super::{io, UsageError};
use leasesim::interrupt;
use leasesim::Machines;
use leasesim_sql::{Database, Isolation, SqlQueue, PART_PREFIX};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The environment variable that names a server when `--database-url` does not.
pub const DATABASE_URL_ENV: &str = "LEASESIM_DATABASE_URL";

/// The options that put a SQL file in the coordinator's place.
#[derive(clap::Args, Debug, Default, Clone)]
pub(super) struct SqlArgs {
    /// Runs the coordinator as SQL: `sql:FILE`, a queue's named statements on PostgreSQL (see
    /// docs/sql-queue.md); `matrix` takes it several times.
    #[arg(long, value_name = "sql:FILE")]
    coordinator: Vec<String>,
    /// The same as `--coordinator sql:FILE`.
    #[arg(long, value_name = "FILE")]
    sql: Vec<PathBuf>,
    /// The PostgreSQL server to run the SQL on (default: $LEASESIM_DATABASE_URL, else a
    /// throwaway server of this machine's PostgreSQL, removed on exit).
    #[arg(long, value_name = "URL")]
    database_url: Option<String>,
    /// The transaction isolation level of the SQL coordinator's connections:
    /// read-committed (PostgreSQL's default), repeatable-read or serializable.
    #[arg(long, value_name = "LEVEL", value_parser = Isolation::parse)]
    isolation: Option<Isolation>,
    /// The server cancels a SQL statement that runs longer than this, and the run ends with a
    /// machine error naming the statement (default 60s).
    #[arg(long, value_name = "DURATION", allow_hyphen_values = true, value_parser = leasesim::advise::parse_duration)]
    statement_timeout: Option<u64>,
    /// Runs the SQL on a server of yours as a role that can reach beyond its database (a
    /// superuser, or one that may run the server's programs, read or write its files, or
    /// create roles); such a role is refused otherwise.
    #[arg(long)]
    allow_privileged_role: bool,
    /// Runs every worker node as a process of yours: `exec:COMMAND`, speaking leasesim's
    /// process protocol over JSON lines (see docs/process-protocol.md).
    #[arg(long, value_name = "exec:COMMAND")]
    worker: Option<String>,
    /// Runs every receiver node as a process of yours: `exec:COMMAND`.
    #[arg(long, value_name = "exec:COMMAND")]
    receiver: Option<String>,
    /// How long a process may take to answer one input before the run ends as a machine
    /// error naming it (default 10s).
    #[arg(long, value_name = "DURATION", allow_hyphen_values = true, value_parser = leasesim::advise::parse_duration)]
    exec_timeout: Option<u64>,
}

impl SqlArgs {
    /// Whether a SQL file was named.
    pub(super) fn any(&self) -> bool {
        self.coordinator.iter().any(|c| !is_exec(c)) || !self.sql.is_empty()
    }

    /// Whether a process was named for some role.
    pub(super) fn any_exec(&self) -> bool {
        self.worker.is_some()
            || self.receiver.is_some()
            || self.coordinator.iter().any(|c| is_exec(c))
    }

    /// The same options as command-line arguments (for a measuring child process).
    pub(super) fn to_args(&self) -> Vec<String> {
        let mut args = Vec::new();
        for c in &self.coordinator {
            args.extend(["--coordinator".to_string(), c.clone()]);
        }
        for f in &self.sql {
            args.extend(["--sql".to_string(), f.display().to_string()]);
        }
        if let Some(url) = &self.database_url {
            args.extend(["--database-url".to_string(), url.clone()]);
        }
        if let Some(level) = self.isolation {
            args.extend(["--isolation".to_string(), level.name().to_string()]);
        }
        if let Some(ns) = self.statement_timeout {
            args.extend(["--statement-timeout".to_string(), format!("{ns}ns")]);
        }
        if self.allow_privileged_role {
            args.push("--allow-privileged-role".to_string());
        }
        for (flag, v) in [("--worker", &self.worker), ("--receiver", &self.receiver)] {
            if let Some(v) = v {
                args.extend([flag.to_string(), v.clone()]);
            }
        }
        if let Some(ns) = self.exec_timeout {
            args.extend(["--exec-timeout".to_string(), format!("{ns}ns")]);
        }
        args
    }

    /// The SQL files named, in order.
    pub(super) fn files(&self) -> Result<Vec<PathBuf>, UsageError> {
        let mut files = Vec::new();
        for c in self.coordinator.iter().filter(|c| !is_exec(c)) {
            match c.strip_prefix(PART_PREFIX) {
                Some(path) if !path.is_empty() => files.push(PathBuf::from(path)),
                _ => {
                    return Err(UsageError(format!(
                        "--coordinator {c:?}: expected sql:FILE (a queue's SQL file) or exec:COMMAND (a process)"
                    )))
                }
            }
        }
        files.extend(self.sql.iter().cloned());
        Ok(files)
    }
}

/// Connects to the server the options name, or starts a throwaway one (stopped when its last
/// handle drops, or by the signal handler's cleanup).
fn database(args: &SqlArgs) -> Result<Database, UsageError> {
    let timeout =
        match args.statement_timeout {
            Some(0) => return Err(UsageError(
                "--statement-timeout 0s would let a statement run forever; give a duration above 0"
                    .into(),
            )),
            Some(ns) => std::time::Duration::from_nanos(ns),
            None => leasesim_sql::db::STATEMENT_TIMEOUT_DEFAULT,
        };
    let db = throwaway_or(args)?.with_statement_timeout(timeout);
    Ok(match args.allow_privileged_role {
        true => db.allowing_privileged_role(),
        false => db,
    })
}

/// The server the options name, or a throwaway one; either way, a signal's cleanup stops it
/// (a user's: drops the schemas made on it).
fn throwaway_or(args: &SqlArgs) -> Result<Database, UsageError> {
    let url = args.database_url.clone().or_else(|| {
        std::env::var(DATABASE_URL_ENV)
            .ok()
            .filter(|u| !u.is_empty())
    });
    if let Some(url) = url {
        let db = Database::at(&url);
        interrupt::on_exit(db.stopper());
        return Ok(db);
    }
    // A signal while the server starts must not leave it behind: the start runs in a graceful
    // section, so the signal only sets the stop flag; once the server's cleanup is registered,
    // a signal that came meanwhile ends the process (and the cleanup removes the server),
    // unless the command is in a graceful section of its own (a shrink, which then saves what
    // it has): it sees the flag when it starts.
    let graceful = interrupt::Graceful::enter();
    let db = Database::throwaway().map_err(UsageError);
    if let Ok(db) = &db {
        interrupt::on_exit(db.stopper());
    }
    if graceful.stopped() && !graceful.nested() {
        drop(db);
        eprintln!("stopped by a signal while the PostgreSQL server started; nothing was run");
        interrupt::exit_now();
    }
    db
}

/// Whether a role's option names a process (`exec:COMMAND`).
fn is_exec(v: &str) -> bool {
    v.starts_with(leasesim_exec::PART_PREFIX)
}

/// The process an option names, checked.
fn exec_of(flag: &str, v: &str, timeout: Option<u64>) -> Result<leasesim_exec::Exec, UsageError> {
    let Some(cmd) = v.strip_prefix(leasesim_exec::PART_PREFIX) else {
        return Err(UsageError(format!(
            "{flag} {v:?}: expected exec:COMMAND (a process speaking leasesim's process protocol)"
        )));
    };
    let exec = leasesim_exec::Exec::new(cmd).map_err(UsageError)?;
    Ok(match timeout {
        Some(0) => {
            return Err(UsageError(
                "--exec-timeout 0s would fail every input; give a duration above 0".into(),
            ))
        }
        Some(ns) => exec.with_timeout(std::time::Duration::from_nanos(ns)),
        None => exec,
    })
}

/// An argument as the shell reads it back: quoted when it has to be.
fn quoted(arg: &str) -> String {
    if !arg.is_empty()
        && arg
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./:@=,+".contains(c))
    {
        arg.to_string()
    } else {
        format!("'{}'", arg.replace('\'', r"'\''"))
    }
}

/// The processes the options name put in their roles of `base` (each SQL file's machines, or
/// leasesim's reference), named after what they replace.
fn with_processes(args: &SqlArgs, base: Vec<Machines>) -> Result<Vec<Machines>, UsageError> {
    use leasesim_exec::ExecMachines;
    let coordinator: Vec<&String> = args.coordinator.iter().filter(|c| is_exec(c)).collect();
    if coordinator.len() > 1 || (!coordinator.is_empty() && !base.is_empty()) {
        return Err(UsageError(
            "one coordinator at a time: a process (exec:COMMAND) or SQL files (sql:FILE)".into(),
        ));
    }
    let t = args.exec_timeout;
    let roles = [
        ("--coordinator", coordinator.first().map(|c| c.as_str())),
        ("--worker", args.worker.as_deref()),
        ("--receiver", args.receiver.as_deref()),
    ];
    let mut execs = Vec::new();
    for (flag, v) in roles {
        if let Some(v) = v {
            execs.push((flag, v, exec_of(flag, v, t)?));
        }
    }
    if execs.is_empty() {
        if t.is_some() {
            return Err(UsageError(
                "--exec-timeout is for a process: name it with --worker, --receiver or --coordinator exec:COMMAND".into(),
            ));
        }
        return Ok(base);
    }
    let plain = base.is_empty();
    let base = match plain {
        true => vec![Machines::reference()],
        false => base,
    };
    let mut out = Vec::new();
    for m in base {
        let mut name: Vec<String> = match plain {
            true => Vec::new(),
            false => vec![m.name().to_string()],
        };
        let mut line: Vec<String> = m.command_line().map(str::to_string).into_iter().collect();
        let mut m = m;
        for (flag, v, exec) in &execs {
            m = match *flag {
                "--coordinator" => m.with_exec_coordinator(exec),
                "--worker" => m.with_exec_worker(exec),
                _ => m.with_exec_receiver(exec),
            };
            name.push(exec.part_name());
            line.push(format!("{flag} {}", quoted(v)));
        }
        if let Some(t) = t {
            line.push(format!("--exec-timeout {t}ns"));
        }
        out.push(
            m.named(&name.join(" + "))
                .with_command_line(&line.join(" ")),
        );
    }
    Ok(out)
}

/// Opens every SQL file the options name on one server (none when no file was named); the
/// server lives as long as any of the machines. Each file is checked against the
/// contract and its lease measured first; any problem is a one-line error (exit 2).
pub(super) fn machines(args: &SqlArgs) -> Result<Vec<Machines>, UsageError> {
    Ok(open(args)?.0)
}

/// [`open_sql`] with the processes the options name put in their roles.
pub(super) fn open(args: &SqlArgs) -> Result<(Vec<Machines>, Option<Database>), UsageError> {
    let (sql, db) = open_sql(args)?;
    Ok((with_processes(args, sql)?, db))
}

/// The SQL files' machines, and the database they run on (`None` when no file was named).
fn open_sql(args: &SqlArgs) -> Result<(Vec<Machines>, Option<Database>), UsageError> {
    let files = args.files()?;
    if files.is_empty() {
        if args.database_url.is_some()
            || args.isolation.is_some()
            || args.statement_timeout.is_some()
            || args.allow_privileged_role
        {
            return Err(UsageError(
                "--database-url, --isolation, --statement-timeout and --allow-privileged-role are for a SQL coordinator; name its file with --coordinator sql:FILE".into(),
            ));
        }
        return Ok((Vec::new(), None));
    }
    // Every file is read and checked before a server starts.
    for f in &files {
        let problems = leasesim_sql::check_path(f).map_err(UsageError)?;
        if let Some(p) = problems.first() {
            return Err(UsageError(format!(
                "{}: {p} (`leasesim sql check {}` lists every problem)",
                f.display(),
                f.display()
            )));
        }
    }
    let db = database(args)?;
    let mut machines = Vec::new();
    let isolation = args.isolation.unwrap_or_default();
    let level = match isolation {
        Isolation::ReadCommitted => String::new(),
        other => format!(" --isolation {}", other.name()),
    };
    for f in &files {
        let queue: Arc<SqlQueue> =
            SqlQueue::open_path_with(f, &db, isolation).map_err(UsageError)?;
        machines.push(queue.machines().with_command_line(&format!(
            "--coordinator {}{level}",
            quoted(&format!("{PART_PREFIX}{}", f.display()))
        )));
    }
    let mut names: Vec<&str> = machines.iter().map(Machines::name).collect();
    names.sort_unstable();
    if names.windows(2).any(|w| w[0] == w[1]) {
        return Err(UsageError("the same SQL file is named twice".into()));
    }
    Ok((machines, Some(db)))
}

/// The one SQL machines a single-run command takes, or `None`.
pub(super) fn one(args: &SqlArgs, command: &str) -> Result<Option<Machines>, UsageError> {
    let mut sql = machines(args)?;
    match sql.len() {
        0 => Ok(None),
        1 => Ok(sql.pop()),
        n => Err(UsageError(format!(
            "{command} takes one SQL coordinator; {n} were named"
        ))),
    }
}

/// The error for a replay recorded on a process of the user's, given without it or with
/// another (a file the command names changed); `None` when no part was a process.
pub(super) fn replay_needs_exec(
    file: &Path,
    recorded: &leasesim::replay::RecordedMachines,
    given: Option<&Machines>,
) -> Option<UsageError> {
    let parts = [
        (
            "--coordinator",
            &recorded.coordinator,
            given.map(|m| &m.parts().coordinator),
        ),
        (
            "--worker",
            &recorded.worker,
            given.map(|m| &m.parts().worker),
        ),
        (
            "--receiver",
            &recorded.receiver,
            given.map(|m| &m.parts().receiver),
        ),
    ];
    for (flag, was, now) in parts {
        let Some(body) = was.strip_prefix(leasesim_exec::PART_PREFIX) else {
            continue;
        };
        if now == Some(was) {
            // This part was given as recorded; another is what is missing.
            continue;
        }
        let cmd = body.rsplit_once('@').map_or(body, |(c, _)| c);
        return Some(UsageError(match now {
            Some(now) if now.starts_with(leasesim_exec::PART_PREFIX) => format!(
                "{}: it was recorded with {flag} {was}, and {flag} gives {now}: not the same command, or a file it names changed since",
                file.display()
            ),
            _ => format!(
                "{}: it was recorded with a process, {flag} {was}; give it: {flag} {}",
                file.display(),
                quoted(&format!("{}{cmd}", leasesim_exec::PART_PREFIX))
            ),
        }));
    }
    None
}

/// `sql check FILE...`: every problem of every file against the statement contract, as
/// `FILE:LINE: message`; exit 2 when there is any.
pub(super) fn check_cmd(out: &mut dyn Write, files: &[PathBuf]) -> Result<i32, UsageError> {
    if files.is_empty() {
        return Err(UsageError("sql check needs at least one SQL file".into()));
    }
    let mut bad = 0;
    for f in files {
        let problems = leasesim_sql::check_path(f).map_err(UsageError)?;
        if problems.is_empty() {
            io(writeln!(
                out,
                "{}: keeps the statement contract",
                f.display()
            ))?;
        }
        for p in &problems {
            bad += 1;
            // A problem of the whole file (a missing statement) has no line.
            match p.line {
                0 => io(writeln!(out, "{}: {}", f.display(), p.message))?,
                line => io(writeln!(out, "{}:{line}: {}", f.display(), p.message))?,
            }
        }
    }
    if bad > 0 {
        return Err(UsageError(format!(
            "{bad} problem(s) against the statement contract (see docs/sql-queue.md)"
        )));
    }
    Ok(0)
}

/// Whether a replay's recorded coordinator is a SQL file, and which (`sql:NAME@HASH`).
pub(super) fn recorded_sql(coordinator: &str) -> Option<&str> {
    coordinator.strip_prefix(PART_PREFIX)
}

/// The error for a replay of a SQL coordinator given without (or with another) SQL file.
pub(super) fn replay_needs(file: &Path, recorded: &str, given: Option<&Machines>) -> UsageError {
    let name = recorded.split('@').next().unwrap_or(recorded);
    match given {
        None => UsageError(format!(
            "{}: it was recorded on the SQL coordinator {PART_PREFIX}{recorded}; give the file: --coordinator {PART_PREFIX}<path to {name}>",
            file.display()
        )),
        Some(m) => UsageError(format!(
            "{}: it was recorded on {PART_PREFIX}{recorded}, and --coordinator gives {}: not the same file (its name or content hash differs)",
            file.display(),
            m.parts().coordinator
        )),
    }
}

/// The threads a command runs SQL machines on when `--jobs` is not given: twice the cores,
/// because a run waits on the server half the time (measured: 2 threads 270 w1-w2 seeds/s, 4
/// threads 340, on 2 cores); leasesim's own machines keep one thread per core.
pub(super) fn default_jobs(jobs: Option<usize>, machines: &[Machines]) -> Option<usize> {
    let sql = machines
        .iter()
        .any(|m| recorded_sql(&m.parts().coordinator).is_some());
    match jobs {
        None if sql => Some(2 * leasesim::pool::cores()),
        jobs => jobs,
    }
}

/// `sql explore`: every interleaving of `workers` concurrent claims on `jobs` jobs.
pub(super) fn explore_cmd(
    out: &mut dyn Write,
    args: &SqlArgs,
    workers: usize,
    jobs: usize,
) -> Result<i32, UsageError> {
    if !(2..=3).contains(&workers) || !(1..=2).contains(&jobs) {
        return Err(UsageError(
            "sql explore takes --workers 2 or 3 and --jobs 1 or 2 (the interleavings grow as a factorial)".into(),
        ));
    }
    let files = args.files()?;
    if files.len() != 1 {
        return Err(UsageError(
            "sql explore takes one SQL file: --coordinator sql:FILE".into(),
        ));
    }
    for f in &files {
        let problems = leasesim_sql::check_path(f).map_err(UsageError)?;
        if let Some(p) = problems.first() {
            return Err(UsageError(format!("{}: {p}", f.display())));
        }
    }
    let db = database(args)?;
    let isolation = args.isolation.unwrap_or_default();
    let queue = SqlQueue::open_path_with(&files[0], &db, isolation).map_err(UsageError)?;
    let e = leasesim_sql::explore::explore(&queue, workers, jobs).map_err(UsageError)?;
    io(writeln!(
        out,
        "`claim` of {} at {}: {} workers at once, {} job(s), {} statement(s) each",
        queue.file().name,
        isolation.name(),
        e.workers,
        e.jobs,
        e.steps
    ))?;
    io(writeln!(
        out,
        "{} interleavings tried (every one), {} distinct schedules as they ran, {} distinct outcome(s):",
        e.tried,
        e.schedules,
        e.outcomes.len()
    ))?;
    for (outcome, n) in &e.outcomes {
        io(writeln!(out, "  {n:>6}  {outcome}"))?;
    }
    let bad = e.violating;
    match e.violations.first() {
        None => {
            io(writeln!(
                out,
                "held: no interleaving grants one job to two workers"
            ))?;
            Ok(0)
        }
        Some((order, outcome)) => {
            io(writeln!(
                out,
                "VIOLATED single-valid-lease (I3): {bad} interleaving(s) grant one job to two workers, e.g. {order}: {outcome}"
            ))?;
            Ok(1)
        }
    }
}
