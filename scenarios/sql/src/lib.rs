//! A lease store as SQL on a real PostgreSQL, judged by leasesim under simulated time.
//!
//! A queue's SQL file names its statements in the `-- name: <statement>` convention of
//! yesql, aiosql and sqlc (`schema`, `enqueue`, `claim`, `heartbeat`, `commit`, `fail`, and
//! optionally `revoke`, `takeover`, `cancel`, `checkpoint`, `status`: see [`contract`]). An
//! [`SqlQueue`] runs them as the coordinator of every scenario: one transaction per coordinator
//! input, the database's `now()` reading the simulated clock, one schema per connection and a
//! clean state per run. Everything else (workers, receivers, faults, checkers, replays,
//! shrinking, reports) is leasesim's as usual.
//!
//! ```no_run
//! use leasesim::{scenarios, Builder};
//! use leasesim_sql::{Database, SqlQueue};
//!
//! // A throwaway server of the machine's own PostgreSQL (or `Database::at(url)`).
//! let db = Database::throwaway().unwrap();
//! let queue = SqlQueue::open_path("my-queue.sql".as_ref(), &db).unwrap();
//! let report = Builder::new()
//!     .machines(queue.machines())
//!     .scenarios([scenarios::find("w1-w2").unwrap().clone()])
//!     .seeds(0..100)
//!     .sweep()
//!     .unwrap();
//! assert_eq!(report.failing(), 0);
//! ```

pub mod contract;
pub mod coordinator;
pub mod db;
pub mod explore;
pub mod file;
pub mod lex;
pub mod server;
pub mod steps;
pub mod time;

use crate::coordinator::SqlCoordinator;
use crate::db::{Access, Made, Pool, Value, STATEMENT_TIMEOUT_DEFAULT};
use crate::file::SqlFile;
use crate::server::Server;
use crate::time::parse_us;
use leasesim::machines::Machines;
use leasesim::{FaultKind, Setup};
use leasesim_protocol::{Nanos, OperatorAction, Step};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

pub use crate::db::Isolation;
pub use crate::file::Problem;

/// The prefix of a SQL coordinator's part name (`sql:seed-postgres.sql@1a2b3c4d5e6f7a8b`).
pub const PART_PREFIX: &str = "sql:";

/// Largest SQL file read (a queue's statements are a few kilobytes).
pub const FILE_MAX_BYTES: u64 = 1 << 20;

/// Where the database is: a server of the user's, or a throwaway one leasesim started (stopped
/// and removed when the last handle is dropped, or by [`Database::stop`]), and what its
/// connections may do there.
#[derive(Clone)]
pub struct Database {
    access: Access,
    server: Option<Arc<Mutex<Server>>>,
    /// The schemas made on a server of the user's, dropped on every way out.
    made: Arc<Made>,
}

impl Database {
    /// A server of the user's, by connection string (`postgres://user@host/db` or
    /// `host=/run/postgresql user=me dbname=test`). Its role must not reach beyond the
    /// database (see [`Database::allowing_privileged_role`]).
    pub fn at(url: &str) -> Database {
        Database {
            access: Access {
                url: url.to_string(),
                statement_timeout: STATEMENT_TIMEOUT_DEFAULT,
                allow_privileged: false,
                own_role: false,
            },
            server: None,
            made: Arc::default(),
        }
    }

    /// A throwaway server from the operating system's PostgreSQL, private to this process (a
    /// fresh folder of mode 0700, a Unix socket only, a password of its own); the SQL runs as
    /// a role without privileges.
    pub fn throwaway() -> Result<Database, String> {
        let server = Server::start()?;
        Ok(Database {
            access: Access {
                url: server.url(),
                statement_timeout: STATEMENT_TIMEOUT_DEFAULT,
                allow_privileged: false,
                own_role: true,
            },
            server: Some(Arc::new(Mutex::new(server))),
            made: Arc::default(),
        })
    }

    /// The server cancels a statement that runs longer than `timeout` (default
    /// [`STATEMENT_TIMEOUT_DEFAULT`]), and the run ends with a machine error naming it.
    pub fn with_statement_timeout(mut self, timeout: Duration) -> Database {
        self.access.statement_timeout = timeout;
        self
    }

    /// Uses a role that can reach beyond its database anyway: a superuser, or a role that may
    /// run the server's programs, read or write its files, or create roles. A SQL file run as
    /// such a role can do whatever the server's account can.
    pub fn allowing_privileged_role(mut self) -> Database {
        self.access.allow_privileged = true;
        self
    }

    /// The connection string. It may hold a password (a throwaway server's always does): show
    /// [`db::shown_url`] of it instead.
    pub fn url(&self) -> &str {
        &self.access.url
    }

    /// How connections reach the server and what they may do.
    pub fn access(&self) -> &Access {
        &self.access
    }

    /// Whether leasesim started this server itself.
    pub fn is_throwaway(&self) -> bool {
        self.server.is_some()
    }

    /// Stops a throwaway server now and removes its folder, or drops every schema made on a
    /// server of the user's: for exits that skip destructors (a signal).
    pub fn stop(&self) {
        (self.stopper())();
    }

    /// Something that does what [`Database::stop`] does, without keeping the server alive: a
    /// signal handler's cleanup.
    pub fn stopper(&self) -> impl FnOnce() + Send + 'static {
        let weak = self.server.as_ref().map(Arc::downgrade);
        let made = self.made.clone();
        let access = self.access.clone();
        move || match weak {
            Some(w) => {
                if let Some(s) = w.upgrade() {
                    s.lock().unwrap_or_else(|p| p.into_inner()).stop();
                }
            }
            None => made.drop_all(&access),
        }
    }

    /// The connection string of a throwaway server's superuser to its runs' database (`None`
    /// on a server of the user's): for looking inside the server by hand or from a test. Never
    /// run a queue's SQL with it.
    pub fn superuser_url(&self) -> Option<String> {
        self.server.as_ref().map(|s| {
            s.lock()
                .unwrap_or_else(|p| p.into_inner())
                .superuser_url(server::RUN_DATABASE)
        })
    }

    /// The throwaway server's folder, if any.
    pub fn dir(&self) -> Option<std::path::PathBuf> {
        self.server.as_ref().map(|s| {
            s.lock()
                .unwrap_or_else(|p| p.into_inner())
                .dir()
                .to_path_buf()
        })
    }
}

/// Which optional statements a file gives.
#[derive(Copy, Clone, Debug, Default)]
struct Optional {
    revoke: bool,
    takeover: bool,
    cancel: bool,
    checkpoint: bool,
}

/// A queue's SQL file, checked against the contract, connected to a database, its lease length
/// measured: it builds [`Machines`] whose coordinator runs the file.
pub struct SqlQueue {
    file: Arc<SqlFile>,
    pool: Pool,
    /// The lease length the SQL grants, in nanoseconds of the database's clock.
    lease_ns: Nanos,
    optional: Optional,
    isolation: Isolation,
    /// Keeps the server up while the queue lives.
    _db: Database,
}

impl SqlQueue {
    /// Reads and opens a SQL file (see [`SqlQueue::open`]).
    pub fn open_path(path: &Path, db: &Database) -> Result<Arc<SqlQueue>, String> {
        SqlQueue::open_path_with(path, db, Isolation::default())
    }

    /// [`SqlQueue::open_path`] at an isolation level.
    pub fn open_path_with(
        path: &Path,
        db: &Database,
        isolation: Isolation,
    ) -> Result<Arc<SqlQueue>, String> {
        let text = read(path)?;
        let name = path.file_name().map_or_else(
            || path.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        );
        let file = parse_checked(&name, &text)?;
        SqlQueue::open_with(file, db, isolation)
    }

    /// Checks `file` against the contract, connects, runs its `schema` and measures its lease:
    /// one job is enqueued and claimed at time 0, and the claim's `lease_until` is the length.
    /// Every error names what is wrong, with the line where there is one.
    pub fn open(file: SqlFile, db: &Database) -> Result<Arc<SqlQueue>, String> {
        SqlQueue::open_with(file, db, Isolation::default())
    }

    /// [`SqlQueue::open`] with every connection of a run at `isolation`.
    pub fn open_with(
        file: SqlFile,
        db: &Database,
        isolation: Isolation,
    ) -> Result<Arc<SqlQueue>, String> {
        let problems = contract::check(&file);
        if let Some(p) = problems.first() {
            return Err(format!("{}: {p}", file.name));
        }
        let file = Arc::new(file);
        let made = (!db.is_throwaway()).then(|| db.made.clone());
        let pool = Pool::new(db.access().clone(), file.clone(), made);
        let lease_ns = probe(&pool)?;
        let has = |n: &str| file.get(n).is_some();
        let optional = Optional {
            revoke: has("revoke"),
            takeover: has("takeover"),
            cancel: has("cancel"),
            checkpoint: has("checkpoint"),
        };
        Ok(Arc::new(SqlQueue {
            file,
            pool,
            lease_ns,
            optional,
            isolation,
            _db: db.clone(),
        }))
    }

    /// The isolation level of its runs' connections.
    pub fn isolation(&self) -> Isolation {
        self.isolation
    }

    /// Whether an operation has several statements: operations then run step by step, each
    /// worker's on a connection of its own, so other workers' statements run between them.
    pub fn stepped(&self) -> bool {
        // `schema` runs once per connection, whole: its statements are not an input's.
        self.file
            .statements
            .iter()
            .any(|s| s.name != "schema" && !s.steps.is_empty())
    }

    /// The file.
    pub fn file(&self) -> &SqlFile {
        &self.file
    }

    /// The lease length the SQL grants (its `claim`'s `lease_until` minus `now()`).
    pub fn lease_ns(&self) -> Nanos {
        self.lease_ns
    }

    /// The name its coordinator goes by in reports and replay files:
    /// `sql:<file name>@<content hash>`.
    pub fn part_name(&self) -> String {
        let level = match self.isolation {
            Isolation::ReadCommitted => String::new(),
            other => format!("+{}", other.name()),
        };
        format!(
            "{PART_PREFIX}{}@{:016x}{level}",
            self.file.name, self.file.hash
        )
    }

    /// leasesim's reference workers and receivers around this file's coordinator, judged on
    /// the reference's scenarios; a setup the file cannot express is refused by
    /// [`Machines::expressible`] with the reason.
    pub fn machines(self: &Arc<SqlQueue>) -> Machines {
        let q = self.clone();
        let scope = self.clone();
        let texts = self
            .file
            .statements
            .iter()
            .map(|s| (s.name.clone(), s.text.trim().to_string()))
            .collect();
        let machines = Machines::new(&self.part_name())
            .with_coordinator(&self.part_name(), move |spec| {
                SqlCoordinator::new(q.clone(), spec.classes, spec.jobs, spec.seed)
            })
            .with_scope(move |setup| scope.expressible(setup))
            .with_sources(texts);
        match &self.file.known_bad {
            Some(bug) => machines.known_bad_as(bug),
            None => machines,
        }
    }

    /// Whether this file can express `setup`, or why not. The SQL grants one lease length, so
    /// every class must have one length (the database's clock then runs at the ratio of the
    /// two); admission limits (P16), a renewal cap that ends a job (P7) and hand-offs to a
    /// human (P15) have no statement; checkpoints and operator actions need theirs.
    pub fn expressible(&self, setup: &Setup) -> Result<(), String> {
        // Reasons carry no figures, so a sweep counts each kind of reason once.
        let lease = setup.classes[0].lease_ns;
        if setup.classes.iter().any(|c| c.lease_ns != lease) {
            return Err("its job classes have different lease lengths; the SQL grants one".into());
        }
        if setup.classes.iter().any(|c| c.capacity.is_some()) {
            return Err(
                "a job class admits a bounded number of jobs at a time (P16); the contract has no admission"
                    .into(),
            );
        }
        let capped = setup.workers.iter().any(|w| {
            setup
                .classes
                .iter()
                .any(|c| w.config.stage_deadline_ns > c.renewal_cap_ns)
        });
        if capped {
            return Err(
                "the renewal cap (P7) ends an attempt before its stage deadline; the contract's heartbeat has no cap"
                    .into(),
            );
        }
        let checkpoints = setup
            .plans
            .iter()
            .chain(setup.workers.iter().flat_map(|w| w.config.plans.iter()))
            .any(|p| p.steps.contains(&Step::Checkpoint));
        if checkpoints && !self.optional.checkpoint {
            return Err(
                "its plans persist stages (P17); the file has no `checkpoint` statement".into(),
            );
        }
        for f in &setup.faults {
            if let FaultKind::Operator { action, .. } = f.kind {
                let (needs, has) = match action {
                    OperatorAction::Revoke => ("revoke", self.optional.revoke),
                    OperatorAction::Cancel => ("cancel", self.optional.cancel),
                    OperatorAction::Takeover { .. } => ("takeover", self.optional.takeover),
                    OperatorAction::HandToHuman | OperatorAction::HumanResolves => {
                        return Err(
                            "an operator hands a job to a human (P15); the contract has no human holder".into(),
                        )
                    }
                };
                if !has {
                    return Err(format!(
                        "an operator acts with `{needs}`; the file has no `{needs}` statement"
                    ));
                }
            }
        }
        Ok(())
    }
}

/// Reads a SQL file, bounded.
fn read(path: &Path) -> Result<String, String> {
    let meta =
        std::fs::metadata(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    if !meta.is_file() {
        return Err(format!("{} is not a regular file", path.display()));
    }
    if meta.len() > FILE_MAX_BYTES {
        return Err(format!(
            "{} is {} bytes; a SQL file may hold at most {FILE_MAX_BYTES}",
            path.display(),
            meta.len()
        ));
    }
    std::fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))
}

/// Parses `text` and holds it to the contract; the first problem is the error.
fn parse_checked(name: &str, text: &str) -> Result<SqlFile, String> {
    let file = SqlFile::parse(name, text).map_err(|p| format!("{name}: {}", p[0]))?;
    if let Some(p) = contract::check(&file).first() {
        return Err(format!("{name}: {p}"));
    }
    Ok(file)
}

/// Every problem of a SQL file against the contract, in line order (empty: it keeps it).
pub fn check_path(path: &Path) -> Result<Vec<Problem>, String> {
    let text = read(path)?;
    let name = path.display().to_string();
    Ok(match SqlFile::parse(&name, &text) {
        Ok(file) => contract::check(&file),
        Err(problems) => problems,
    })
}

/// Measures the lease the file grants: a clean state, one job, one claim at time 0.
fn probe(pool: &Pool) -> Result<Nanos, String> {
    let file = pool.file().clone();
    let name = &file.name;
    let mut conn = pool.take().map_err(|e| format!("{name}: {e}"))?;
    let enqueue = file.get("enqueue").expect("checked");
    let values: Vec<Value> = enqueue
        .params
        .iter()
        .map(|(p, _)| match p.as_str() {
            "job_id" => Value::Text(coordinator::job_uuid(leasesim_protocol::JobId(0))),
            "idempotency_key" => Value::Text("tool-job:0".into()),
            _ => Value::Text("{\"class\": 0, \"hash\": \"0000000000000000\"}".into()),
        })
        .collect();
    let result = (|| {
        conn.start_run(enqueue, &[values])?;
        let claim = file.get("claim").expect("checked");
        let values = vec![
            ("worker_id".to_string(), Value::Text("W1".into())),
            ("client_now".to_string(), Value::Text(time::format_us(0))),
        ];
        let a = conn.run_steps(claim, &values, 0)?;
        if a.rows.len() != 1 {
            return Err(format!(
                "line {}: `claim` granted {} rows on a table holding one queued job at time 0; it must grant that job",
                claim.line,
                a.rows.len()
            ));
        }
        let until = a.get(0, "lease_until").ok_or_else(|| {
            format!(
                "line {}: `claim` returned no lease_until (columns {:?})",
                claim.line, a.columns
            )
        })?;
        let us = parse_us(until).map_err(|e| format!("line {}: `claim`: {e}", claim.line))?;
        if us <= 0 {
            return Err(format!(
                "line {}: `claim` granted a lease ending at {until}, not after now() ({})",
                claim.line,
                time::format_us(0)
            ));
        }
        let id = a.get(0, "id").unwrap_or_default();
        if coordinator::job_of(id) != Some(leasesim_protocol::JobId(0)) {
            return Err(format!(
                "line {}: `claim` returned id `{id}`; enqueue gave the job the id {}",
                claim.line,
                coordinator::job_uuid(leasesim_protocol::JobId(0))
            ));
        }
        if a.get(0, "fencing_token")
            .and_then(|t| t.parse::<u64>().ok())
            .is_none()
        {
            return Err(format!(
                "line {}: `claim` returned fencing_token {:?}, not a non-negative integer",
                claim.line,
                a.get(0, "fencing_token")
            ));
        }
        Ok((us as u64) * 1_000)
    })();
    pool.give(conn);
    result.map_err(|e| format!("{name}: {e}"))
}
