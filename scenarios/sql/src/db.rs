//! Connections to PostgreSQL, each with a schema of its own where the file's `schema` statement
//! made the tables and where `now()` reads the simulated clock.
//!
//! A run borrows one connection from the [`Pool`] for its whole length (so parallel runs never
//! share tables), starts from a clean state (every table of its schema truncated, identities and
//! sequences restarted) and gives the connection back when it ends. Each coordinator input is one
//! transaction sent as one simple query: `BEGIN`, the simulated time, the statement with its
//! parameters written in as literals, `COMMIT`, in a single round trip.
//!
//! A value is written as an escape string (`E'...'`, backslashes and quotes doubled), which
//! PostgreSQL reads the same whatever `standard_conforming_strings` says; every connection pins
//! that setting on too, and a server-side `statement_timeout`, so a statement that never ends
//! is cancelled by the server and reported naming it. On a server of the user's, a role that
//! could reach beyond the database (a superuser, or one that may run the server's programs or
//! read and write its files) is refused unless the user asked for it, and a `schema` statement
//! that made anything outside the connection's own schema is refused; a connection whose
//! setup failed drops the schema it made.

use crate::file::{Piece, SqlFile, Statement};
use crate::time::format_us;
use postgres::{Client, NoTls, SimpleQueryMessage};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A value passed for a parameter, written into the statement as a SQL literal.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Value {
    /// A string literal (`'...'`, quotes doubled): PostgreSQL gives it the type the context
    /// wants (text, uuid, jsonb, timestamptz).
    Text(String),
    /// An integer literal.
    Int(i64),
    /// `true` or `false`.
    Bool(bool),
}

impl Value {
    fn write(&self, out: &mut String) {
        match self {
            Value::Text(s) => {
                // An escape string means the same under either `standard_conforming_strings`.
                out.push_str("E'");
                for c in s.chars() {
                    if c == '\'' || c == '\\' {
                        out.push(c);
                    }
                    out.push(c);
                }
                out.push('\'');
            }
            Value::Int(i) => out.push_str(&i.to_string()),
            Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        }
    }
}

/// What a statement gave: its rows (columns by name, values as PostgreSQL prints them) and
/// its row count.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Answer {
    /// Column names.
    pub columns: Vec<String>,
    /// Rows of values (`None` for SQL null).
    pub rows: Vec<Vec<Option<String>>>,
    /// The row count PostgreSQL reported (rows changed, or returned).
    pub count: u64,
}

impl Answer {
    /// The value of `column` in row `row`.
    pub fn get(&self, row: usize, column: &str) -> Option<&str> {
        let i = self.columns.iter().position(|c| c == column)?;
        self.rows.get(row)?.get(i)?.as_deref()
    }
}

/// The transaction isolation level every connection of a run uses.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash)]
pub enum Isolation {
    /// PostgreSQL's default.
    #[default]
    ReadCommitted,
    /// Snapshot isolation.
    RepeatableRead,
    /// Serializable snapshot isolation.
    Serializable,
}

impl Isolation {
    /// Every level, weakest first.
    pub const ALL: [Isolation; 3] = [
        Isolation::ReadCommitted,
        Isolation::RepeatableRead,
        Isolation::Serializable,
    ];

    /// Its name on the command line (`read-committed`, ...).
    pub fn name(self) -> &'static str {
        match self {
            Isolation::ReadCommitted => "read-committed",
            Isolation::RepeatableRead => "repeatable-read",
            Isolation::Serializable => "serializable",
        }
    }

    /// The level a command-line name means.
    pub fn parse(s: &str) -> Result<Isolation, String> {
        Isolation::ALL
            .into_iter()
            .find(|i| i.name() == s)
            .ok_or_else(|| {
                format!("unknown isolation level {s:?} (read-committed, repeatable-read or serializable)")
            })
    }

    fn sql(self) -> &'static str {
        match self {
            Isolation::ReadCommitted => "READ COMMITTED",
            Isolation::RepeatableRead => "REPEATABLE READ",
            Isolation::Serializable => "SERIALIZABLE",
        }
    }
}

/// A connection a step's SQL is sent on and answered from: a worker's [`Session`], or the
/// run's control connection ([`Conn`]).
pub trait Wire {
    /// Sends `sql`, whose `which`-th statement (0-based) answers, and waits for the answer.
    fn exchange(&mut self, sql: &str, which: usize) -> StepResult;
    /// The server's statement timeout on this connection.
    fn timeout(&self) -> Duration;
}

/// How a step sent to a [`Session`] ended.
pub type StepResult = Result<Answer, StepError>;

/// A statement the server refused: its SQLSTATE and message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StepError {
    /// The SQLSTATE (`40P01` deadlock, `40001` serialization failure, `57014` cancelled).
    pub code: String,
    /// The server's message.
    pub message: String,
    /// Where in the SQL sent the server found the error (1-based, in characters), if it said.
    pub position: Option<usize>,
}

impl StepError {
    /// The error of a failed query, its message without a line (the caller knows the text).
    fn of(e: &postgres::Error) -> StepError {
        let position = match e.as_db_error().and_then(|db| db.position()) {
            Some(postgres::error::ErrorPosition::Original(pos)) => Some(*pos as usize),
            _ => None,
        };
        StepError {
            code: e.code().map_or_else(String::new, |c| c.code().to_string()),
            message: describe(e, "", 0, None),
            position,
        }
    }

    /// An error of leasesim's own reading of a connection (no SQLSTATE).
    fn local(message: String) -> StepError {
        StepError {
            code: String::new(),
            message,
            position: None,
        }
    }
}

/// A worker's own connection to the run's schema. Its statements run on a thread of their own,
/// so a statement that waits on a lock another connection holds can be seen waiting while the
/// run goes on.
pub struct Session {
    pid: i32,
    to: Option<std::sync::mpsc::Sender<(String, usize)>>,
    from: std::sync::mpsc::Receiver<StepResult>,
    thread: Option<std::thread::JoinHandle<()>>,
    /// A statement was sent and its answer not yet taken.
    pub busy: bool,
    /// The server's statement timeout on this connection.
    timeout: Duration,
}

/// How much longer than the statement timeout leasesim waits for an answer before it gives
/// up on the server (one that stopped answering at all).
pub const ANSWER_GRACE: Duration = Duration::from_secs(30);

impl Session {
    fn open(access: &Access, schema: &str, isolation: Isolation) -> Result<Session, String> {
        let mut client = connect(access)?;
        let setup = format!(
            "{}
             SET search_path = {schema}, pg_catalog;
             SET SESSION CHARACTERISTICS AS TRANSACTION ISOLATION LEVEL {};",
            settings(access),
            isolation.sql()
        );
        client
            .batch_execute(&setup)
            .map_err(|e| format!("cannot prepare a connection: {}", describe(&e, "", 0, None)))?;
        // leasesim finds deadlocks among a run's connections itself, at once and always the
        // same way; the server's own detector would pick its victim by wall-clock timing. A
        // server that does not let us move it keeps it (it waits a second, by then leasesim
        // has decided).
        let _ = client.batch_execute("SET deadlock_timeout = '1h'");
        let pid = client
            .simple_query("SELECT pg_backend_pid()")
            .ok()
            .and_then(|m| {
                m.into_iter().find_map(|m| match m {
                    SimpleQueryMessage::Row(r) => r.get(0).and_then(|v| v.parse().ok()),
                    _ => None,
                })
            })
            .ok_or("cannot read a connection's process id")?;
        let (to, inbox) = std::sync::mpsc::channel::<(String, usize)>();
        let (outbox, from) = std::sync::mpsc::channel();
        let thread = std::thread::Builder::new()
            .name("leasesim-sql-session".into())
            .spawn(move || {
                for (sql, which) in inbox {
                    let r = client
                        .simple_query(&sql)
                        .map(|m| answer_of(m, which))
                        .map_err(|e| StepError::of(&e));
                    if outbox.send(r).is_err() {
                        break;
                    }
                }
            })
            .map_err(|e| format!("cannot start a connection's thread: {e}"))?;
        Ok(Session {
            pid,
            to: Some(to),
            from,
            thread: Some(thread),
            busy: false,
            timeout: access.statement_timeout,
        })
    }

    /// Its server process id.
    pub fn pid(&self) -> i32 {
        self.pid
    }

    /// Sends `sql`, whose `which`-th statement (0-based) answers; the answer comes from
    /// [`Session::answer`].
    pub fn send(&mut self, sql: String, which: usize) {
        self.busy = true;
        if let Some(to) = &self.to {
            let _ = to.send((sql, which));
        }
    }

    /// The answer, if it comes within `wait`.
    pub fn answer(&mut self, wait: std::time::Duration) -> Option<StepResult> {
        match self.from.recv_timeout(wait) {
            Ok(r) => {
                self.busy = false;
                Some(r)
            }
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => None,
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                self.busy = false;
                Some(Err(StepError::local(
                    "the connection's thread ended".into(),
                )))
            }
        }
    }

    /// Sends `sql` and waits for its answer (for a statement that takes no lock: `ROLLBACK`),
    /// at most the statement timeout and a grace.
    pub fn run(&mut self, sql: &str) -> StepResult {
        self.exchange(sql, 0)
    }

    /// The server's statement timeout on this connection.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// The longest an answer may take before the server counts as gone: the statement timeout
    /// and a grace.
    pub fn limit(&self) -> Duration {
        self.timeout + ANSWER_GRACE
    }
}

impl Wire for Session {
    fn exchange(&mut self, sql: &str, which: usize) -> StepResult {
        self.send(sql.to_string(), which);
        let limit = self.limit();
        self.answer(limit).unwrap_or_else(|| {
            Err(StepError::local(format!(
                "the server gave no answer within {} s",
                limit.as_secs()
            )))
        })
    }

    fn timeout(&self) -> Duration {
        self.timeout
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        // Closing the channel ends the thread, which closes the connection.
        self.to.take();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// One connection and the schema it owns, and the connections of its run's workers.
pub struct Conn {
    client: Client,
    schema: String,
    /// `TRUNCATE ...; ALTER SEQUENCE ...` for a clean start, or empty.
    reset: String,
    access: Access,
    isolation: Isolation,
    sessions: Vec<Session>,
}

/// How a run's connections reach the server and what they may do there.
#[derive(Clone, Debug)]
pub struct Access {
    /// The connection string. It may hold a password: messages show [`shown_url`] instead.
    pub url: String,
    /// The server cancels a statement that runs longer than this.
    pub statement_timeout: Duration,
    /// A privileged role (see [`Conn::open`]) is used anyway: the user asked for it.
    pub allow_privileged: bool,
    /// The role is leasesim's own, made without privileges on a throwaway server.
    pub own_role: bool,
}

/// The statement timeout when none is given: far beyond any statement of a queue (they take
/// milliseconds), short enough that a statement that never ends is reported within a minute.
pub const STATEMENT_TIMEOUT_DEFAULT: Duration = Duration::from_secs(60);

/// What every connection of a run sets first: messages, time zone and formats as leasesim
/// reads them, string literals read as the standard says (the values leasesim writes are
/// escape strings, which mean the same either way), the server-side statement timeout, commits
/// that do not wait for the disk (durability across a crash of the server is not what a run
/// tests), and the simulated clock at its start.
fn settings(access: &Access) -> String {
    format!(
        "SET client_min_messages = warning;
         SET TimeZone = 'UTC';
         SET DateStyle = 'ISO, YMD';
         SET IntervalStyle = 'postgres';
         SET standard_conforming_strings = on;
         SET statement_timeout = {timeout_ms};
         SET synchronous_commit = off;
         SET leasesim.now = '{base}';",
        timeout_ms = access
            .statement_timeout
            .as_millis()
            .clamp(1, i32::MAX as u128),
        base = format_us(0)
    )
}

/// A connection string with its password hidden, for messages: `password=...` of the
/// `key=value` form (quoted or not), and the password of a `postgres://user:password@host` or
/// `?password=` URI.
pub fn shown_url(url: &str) -> String {
    if let Some(scheme) = ["postgres://", "postgresql://"]
        .into_iter()
        .find(|p| url.starts_with(p))
    {
        let rest = &url[scheme.len()..];
        let (authority, tail) = rest.split_at(rest.find(['/', '?']).unwrap_or(rest.len()));
        let authority = match authority.rsplit_once('@') {
            Some((user, host)) => match user.split_once(':') {
                Some((name, _)) => format!("{name}:***@{host}"),
                None => authority.to_string(),
            },
            None => authority.to_string(),
        };
        let tail = tail
            .split('&')
            .map(|part| match part.find("password=") {
                Some(i) if i == 0 || part[..i].ends_with('?') => {
                    format!("{}password=***", &part[..i])
                }
                _ => part.to_string(),
            })
            .collect::<Vec<_>>()
            .join("&");
        return format!("{scheme}{authority}{tail}");
    }
    let mut out = String::with_capacity(url.len());
    let mut rest = url;
    while let Some(i) = rest.find("password") {
        let before_ok = rest[..i]
            .chars()
            .next_back()
            .is_none_or(char::is_whitespace);
        out.push_str(&rest[..i + "password".len()]);
        rest = &rest[i + "password".len()..];
        let after = rest.trim_start();
        if !before_ok || !after.starts_with('=') {
            continue;
        }
        let value = after[1..].trim_start();
        let end = if let Some(quoted) = value.strip_prefix('\'') {
            let mut escaped = false;
            quoted
                .char_indices()
                .find(|&(_, c)| {
                    let closes = c == '\'' && !escaped;
                    escaped = c == '\\' && !escaped;
                    closes
                })
                .map_or(value.len(), |(j, _)| j + 2)
        } else {
            value.find(char::is_whitespace).unwrap_or(value.len())
        };
        out.push_str("=***");
        rest = &value[end..];
    }
    out.push_str(rest);
    out
}

/// Connects to the server `access` names.
fn connect(access: &Access) -> Result<Client, String> {
    Client::connect(&access.url, NoTls).map_err(|e| {
        format!(
            "cannot connect to PostgreSQL at `{}`: {e}",
            shown_url(&access.url)
        )
    })
}

/// How many schemas this process made (for unique names).
static SCHEMAS: AtomicU64 = AtomicU64::new(0);

/// The error text of a failed query: the server's message, with the statement's line when the
/// server names a position inside it.
pub(crate) fn describe(
    e: &postgres::Error,
    batch: &str,
    offset: usize,
    st: Option<&Statement>,
) -> String {
    let Some(db) = e.as_db_error() else {
        return e.to_string();
    };
    let mut s = format!("{}: {}", db.severity(), db.message());
    if let Some(detail) = db.detail() {
        s.push_str(&format!(" ({detail})"));
    }
    let refused = db
        .message()
        .strip_prefix("permission denied for function ")
        .is_some_and(|f| {
            crate::file::CLOCK_FUNCTIONS
                .iter()
                .chain(crate::file::RANDOM_FUNCTIONS)
                .chain(&["now"])
                .any(|n| *n == f && *n != "pg_backend_pid")
        });
    if refused {
        s.push_str(
            " (the throwaway server keeps the real clock and randomness from the SQL it runs: \
             a run must depend on the simulated clock only; use now())",
        );
    }
    if let (Some(st), Some(postgres::error::ErrorPosition::Original(pos))) = (st, db.position()) {
        if let Some(line) = line_at(batch, offset, *pos as usize, st) {
            s = format!("line {line}: {s}");
        }
    }
    s
}

/// The line of `st` that position `pos` (1-based, in characters) of `batch` falls on, where
/// `st`'s text starts at character `offset`; `None` when `pos` is outside it.
pub(crate) fn line_at(batch: &str, offset: usize, pos: usize, st: &Statement) -> Option<usize> {
    let chars: Vec<char> = batch.chars().collect();
    (pos > offset && pos <= chars.len()).then(|| {
        let newlines = chars[offset..pos - 1]
            .iter()
            .filter(|&&c| c == '\n')
            .count();
        st.line + 1 + newlines
    })
}

/// Refuses a role that can reach beyond the database: a superuser, a member of the roles that
/// run the server's programs or read and write its files, or (before PostgreSQL 16, where
/// such a role may grant itself those) one that may create roles.
fn refuse_privileged(client: &mut Client) -> Result<(), String> {
    let q = "SELECT current_user::text,
                    rolsuper,
                    pg_has_role('pg_execute_server_program', 'USAGE'),
                    pg_has_role('pg_read_server_files', 'USAGE'),
                    pg_has_role('pg_write_server_files', 'USAGE'),
                    rolcreaterole AND current_setting('server_version_num')::int < 160000
             FROM pg_roles WHERE rolname = current_user";
    let rows = client
        .simple_query(q)
        .map_err(|e| format!("cannot read the role's rights: {e}"))?;
    let Some(row) = rows.into_iter().find_map(|m| match m {
        SimpleQueryMessage::Row(r) => Some(r),
        _ => None,
    }) else {
        return Err("cannot read the role's rights: no row for current_user".into());
    };
    let yes = |i: usize| row.get(i) == Some("t");
    let role = row.get(0).unwrap_or("?");
    let what = if yes(1) {
        "is a superuser"
    } else if yes(2) {
        "may run programs as the server's account (pg_execute_server_program)"
    } else if yes(3) || yes(4) {
        "may read or write the server's files (pg_read_server_files, pg_write_server_files)"
    } else if yes(5) {
        "may create roles, and so grant itself any right short of superuser"
    } else {
        return Ok(());
    };
    Err(format!(
        "the role `{role}` {what}: a SQL file run as it could reach beyond its schema; connect as a role that may only create schemas in one database (see docs/sql-queue.md, \"Which role to give leasesim\"), or pass --allow-privileged-role"
    ))
}

/// What the connection's role owns outside leasesim's schemas (relations and functions, by
/// qualified name, spelled the same whatever the search path), to see what a `schema`
/// statement made elsewhere.
fn outside(client: &mut Client, prefix: &str) -> Result<Vec<String>, String> {
    // Every leasesim schema, of this process or of another on the same server.
    let ours = format!("{prefix}\\_%");
    let q = format!(
        "SELECT quote_ident(n.nspname) || '.' || quote_ident(c.relname)
           FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
           WHERE c.relowner = (SELECT oid FROM pg_roles WHERE rolname = current_user)
             AND n.nspname NOT LIKE '{ours}' AND n.nspname <> 'pg_toast'
         UNION ALL
         SELECT quote_ident(n.nspname) || '.' || quote_ident(p.proname)
                || '(' || oidvectortypes(p.proargtypes) || ')'
           FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
           WHERE p.proowner = (SELECT oid FROM pg_roles WHERE rolname = current_user)
             AND n.nspname NOT LIKE '{ours}'
         ORDER BY 1"
    );
    let rows = client
        .simple_query(&q)
        .map_err(|e| format!("cannot list the role's objects: {e}"))?;
    Ok(rows
        .into_iter()
        .filter_map(|m| match m {
            SimpleQueryMessage::Row(r) => r.get(0).map(str::to_string),
            _ => None,
        })
        .collect())
}

impl Conn {
    /// Connects, refuses a privileged role (unless the user allowed it), makes a fresh schema,
    /// puts it and the simulated `now()` first on the search path, and runs the file's
    /// `schema` statement in it. A `schema` statement that made anything outside that schema
    /// is refused. On any failure the schema is dropped again.
    pub fn open(access: &Access, file: &SqlFile, prefix: &str) -> Result<Conn, String> {
        let mut client = connect(access)?;
        let shown = shown_url(&access.url);
        client.batch_execute(&settings(access)).map_err(|e| {
            format!(
                "cannot prepare a connection to `{shown}`: {}",
                describe(&e, "", 0, None)
            )
        })?;
        if !(access.own_role || access.allow_privileged) {
            refuse_privileged(&mut client)?;
        }
        let schema = format!(
            "{prefix}_{}_{}",
            std::process::id(),
            SCHEMAS.fetch_add(1, Ordering::Relaxed)
        );
        let outside_before = outside(&mut client, prefix)?;
        // `now()` in the run's schema comes before pg_catalog's; it reads the setting each
        // transaction sets.
        let setup = format!(
            "CREATE SCHEMA {schema};
             SET search_path = {schema}, pg_catalog;
             CREATE FUNCTION {schema}.now() RETURNS timestamptz LANGUAGE sql STABLE
               AS $$ SELECT current_setting('leasesim.now')::timestamptz $$;"
        );
        if let Err(e) = client.batch_execute(&setup) {
            let _ = client.batch_execute(&format!("DROP SCHEMA IF EXISTS {schema} CASCADE"));
            return Err(format!(
                "cannot prepare a schema on `{shown}`: {}",
                describe(&e, "", 0, None)
            ));
        }
        let mut conn = Conn {
            client,
            schema,
            reset: String::new(),
            access: access.clone(),
            isolation: Isolation::default(),
            sessions: Vec::new(),
        };
        match conn.run_schema(file, prefix, &outside_before) {
            Ok(()) => Ok(conn),
            Err(e) => {
                conn.abandon();
                Err(e)
            }
        }
    }

    /// Runs the file's `schema` statement in a transaction, checks that it made nothing
    /// outside the connection's schema, and prepares the reset.
    fn run_schema(
        &mut self,
        file: &SqlFile,
        prefix: &str,
        outside_before: &[String],
    ) -> Result<(), String> {
        let st = file.get("schema").ok_or("statement `schema` is missing")?;
        let text = format!("BEGIN;\n{}\n;\nCOMMIT", st.text);
        if let Err(e) = self.client.batch_execute(&text) {
            let _ = self.client.batch_execute("ROLLBACK");
            return Err(format!(
                "`schema` failed: {}",
                describe(&e, &text, "BEGIN;\n".len(), Some(st))
            ));
        }
        // The search path again: a `schema` statement may have changed it.
        self.client
            .batch_execute(&format!("SET search_path = {}, pg_catalog", self.schema))
            .map_err(|e| format!("cannot set the search path: {e}"))?;
        let made: Vec<String> = outside(&mut self.client, prefix)?
            .into_iter()
            .filter(|o| !outside_before.contains(o))
            .collect();
        if !made.is_empty() {
            return Err(format!(
                "line {}: `schema` made {} outside the schema leasesim gave it ({}); a file's tables must stay in its own schema: leave the search path as leasesim sets it and name no other schema",
                st.line,
                made.join(", "),
                self.schema
            ));
        }
        self.reset = self.reset_statement()?;
        Ok(())
    }

    /// Rolls back whatever is open and drops the connection's schema, on a failed setup.
    fn abandon(&mut self) {
        let _ = self.client.batch_execute("ROLLBACK");
        let _ = self
            .client
            .batch_execute(&format!("DROP SCHEMA IF EXISTS {} CASCADE", self.schema));
    }

    /// `TRUNCATE` of every table the schema statement made, and a restart of every sequence.
    fn reset_statement(&mut self) -> Result<String, String> {
        let q = format!(
            "SELECT 't', quote_ident(tablename) FROM pg_tables WHERE schemaname = '{s}'
             UNION ALL
             SELECT 's', quote_ident(sequencename) FROM pg_sequences WHERE schemaname = '{s}'
             ORDER BY 1, 2",
            s = self.schema
        );
        let rows = self
            .client
            .simple_query(&q)
            .map_err(|e| format!("cannot list the schema's tables: {e}"))?;
        let (mut tables, mut sequences) = (Vec::new(), Vec::new());
        for m in rows {
            if let SimpleQueryMessage::Row(r) = m {
                let name = r.get(1).unwrap_or_default().to_string();
                match r.get(0) {
                    Some("t") => tables.push(name),
                    _ => sequences.push(name),
                }
            }
        }
        if tables.is_empty() {
            return Err("the `schema` statement made no table".into());
        }
        let mut s = format!("TRUNCATE {} RESTART IDENTITY;\n", tables.join(", "));
        for q in sequences {
            s.push_str(&format!("ALTER SEQUENCE {q} RESTART;\n"));
        }
        Ok(s)
    }

    /// Starts a run: a clean state, then `enqueue` once per job, in one transaction at
    /// simulated time 0.
    pub fn start_run(&mut self, enqueue: &Statement, jobs: &[Vec<Value>]) -> Result<(), String> {
        let mut batch = format!(
            "BEGIN;\nSET LOCAL leasesim.now = '{}';\n{}",
            format_us(0),
            self.reset
        );
        for values in jobs {
            fill(enqueue, values, &mut batch);
            batch.push_str("\n;\n");
        }
        batch.push_str("COMMIT");
        match self.client.batch_execute(&batch) {
            Ok(()) => Ok(()),
            Err(e) => {
                let _ = self.client.batch_execute("ROLLBACK");
                Err(self.failed("enqueue", &e, &batch, 0, enqueue))
            }
        }
    }

    /// The error of statement `name`: the server's message with the line, and for a statement
    /// the server cancelled (SQLSTATE 57014: only its statement timeout cancels this
    /// connection's statements) what the timeout was and how to raise it.
    fn failed(
        &self,
        name: &str,
        e: &postgres::Error,
        batch: &str,
        offset: usize,
        st: &Statement,
    ) -> String {
        let said = describe(e, batch, offset, Some(st));
        match e.code() {
            Some(c) if c.code() == "57014" => format!(
                "`{name}` ran longer than the statement timeout ({}) and the server cancelled it ({said}); raise the timeout with --statement-timeout if the statement is slow on purpose",
                leasesim_sim::time::dur(self.access.statement_timeout.as_nanos() as u64)
            ),
            _ => format!("`{name}` failed: {said}"),
        }
    }

    /// Whether the connection still works.
    fn is_usable(&self) -> bool {
        !self.client.is_closed()
    }

    /// The `i`-th session on this connection's schema (opened on first use, kept for the
    /// next run).
    pub fn session(&mut self, i: usize) -> Result<&mut Session, String> {
        while self.sessions.len() <= i {
            let s = Session::open(&self.access, &self.schema, self.isolation)?;
            self.sessions.push(s);
        }
        Ok(&mut self.sessions[i])
    }

    /// The sessions opened so far.
    pub fn sessions(&mut self) -> &mut [Session] {
        &mut self.sessions
    }

    /// The server processes that block process `pid` (none: it is not waiting on a lock).
    pub fn blocked_by(&mut self, pid: i32) -> Result<Vec<i32>, String> {
        let rows = self
            .client
            .simple_query(&format!("SELECT pg_blocking_pids({pid})::text"))
            .map_err(|e| format!("cannot read who blocks a connection: {e}"))?;
        let text = rows
            .into_iter()
            .find_map(|m| match m {
                SimpleQueryMessage::Row(r) => r.get(0).map(str::to_string),
                _ => None,
            })
            .unwrap_or_default();
        Ok(text
            .trim_matches(|c| c == '{' || c == '}')
            .split(',')
            .filter_map(|p| p.trim().parse().ok())
            .collect())
    }

    /// Cancels the statement process `pid` runs.
    pub fn cancel(&mut self, pid: i32) -> Result<(), String> {
        self.client
            .simple_query(&format!("SELECT pg_cancel_backend({pid})"))
            .map(|_| ())
            .map_err(|e| format!("cannot cancel a statement: {e}"))
    }

    /// Ends whatever a run left in its sessions: a statement still waiting is cancelled and an
    /// open transaction rolled back, so the next run starts clean.
    pub fn quiesce(&mut self) {
        for i in 0..self.sessions.len() {
            if self.sessions[i].busy {
                let pid = self.sessions[i].pid;
                loop {
                    if self.sessions[i]
                        .answer(std::time::Duration::from_millis(5))
                        .is_some()
                    {
                        break;
                    }
                    let _ = self.cancel(pid);
                }
            }
            // Always: a run may end inside a transaction, or a cancelled statement of an
            // autocommit batch may leave its failed transaction open.
            let _ = self.sessions[i].run("ROLLBACK");
        }
    }

    /// Sets the isolation level of the sessions opened from now on.
    pub fn set_isolation(&mut self, isolation: Isolation) {
        if isolation != self.isolation {
            self.sessions.clear();
            self.isolation = isolation;
        }
    }
}

impl Wire for Conn {
    fn exchange(&mut self, sql: &str, which: usize) -> StepResult {
        self.client
            .simple_query(sql)
            .map(|m| answer_of(m, which))
            .map_err(|e| StepError::of(&e))
    }

    fn timeout(&self) -> Duration {
        self.access.statement_timeout
    }
}

/// The answer of the `which`-th statement (0-based) of a simple query's messages.
fn answer_of(messages: Vec<SimpleQueryMessage>, which: usize) -> Answer {
    let mut answer = Answer::default();
    let mut done = 0;
    for m in messages {
        match m {
            SimpleQueryMessage::CommandComplete(n) => {
                if done == which {
                    answer.count = n;
                }
                done += 1;
            }
            SimpleQueryMessage::RowDescription(cols) if done == which => {
                answer.columns = cols.iter().map(|c| c.name().to_string()).collect();
            }
            SimpleQueryMessage::Row(r) if done == which => {
                if answer.columns.is_empty() {
                    answer.columns = r.columns().iter().map(|c| c.name().to_string()).collect();
                }
                answer
                    .rows
                    .push((0..r.len()).map(|i| r.get(i).map(str::to_string)).collect());
            }
            _ => {}
        }
    }
    answer
}

/// `st` with its parameters filled in (one value per parameter, in `st.params` order).
pub fn filled(st: &Statement, values: &[Value]) -> String {
    let mut s = String::new();
    fill(st, values, &mut s);
    s
}

/// Writes `st` with its parameters filled in.
fn fill(st: &Statement, values: &[Value], out: &mut String) {
    for piece in &st.pieces {
        match piece {
            Piece::Text(t) => out.push_str(t),
            Piece::Param(i) => values[*i].write(out),
        }
    }
    // A trailing `;` is the batch's to write.
    while out.ends_with(|c: char| c == ';' || c.is_whitespace()) {
        out.pop();
    }
}

/// The schemas this process made on a server of the user's and has not dropped yet, so that
/// every way out drops them: a pool that is dropped, a connection that broke, a signal (see
/// `Database::stopper`).
#[derive(Debug, Default)]
pub struct Made {
    schemas: Mutex<Vec<String>>,
}

impl Made {
    fn add(&self, schema: &str) {
        self.lock().push(schema.to_string());
    }

    fn forget(&self, schema: &str) {
        self.lock().retain(|s| s != schema);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<String>> {
        self.schemas.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Drops every schema still listed (on a signal: nothing else will).
    pub fn drop_all(&self, access: &Access) {
        let schemas = std::mem::take(&mut *self.lock());
        drop_schemas(access, &schemas);
    }
}

/// Drops `schemas` through a connection of its own; a lock another connection holds is waited
/// for a few seconds at most.
fn drop_schemas(access: &Access, schemas: &[String]) {
    if schemas.is_empty() {
        return;
    }
    let Ok(mut client) = connect(access) else {
        return;
    };
    let _ = client.batch_execute("SET lock_timeout = '5s'; SET statement_timeout = '20s'");
    for s in schemas {
        let _ = client.batch_execute(&format!("DROP SCHEMA IF EXISTS {s} CASCADE"));
    }
}

/// Connections to one server for one SQL file: one per run at a time, made on demand and kept
/// for the next run; on a server of the user's, every schema they made is dropped when the pool
/// is dropped.
pub struct Pool {
    access: Access,
    file: Arc<SqlFile>,
    prefix: String,
    idle: Mutex<Vec<Conn>>,
    /// Where the schemas of every pool of the server are listed; `None` on a throwaway
    /// server, which goes whole.
    made: Option<Arc<Made>>,
    /// This pool's schemas.
    mine: Mutex<Vec<String>>,
}

impl Pool {
    /// A pool for `file` on the server `access` names; with `made`, its schemas are listed
    /// there and dropped when it is dropped.
    pub fn new(access: Access, file: Arc<SqlFile>, made: Option<Arc<Made>>) -> Pool {
        Pool {
            access,
            file,
            prefix: "leasesim".into(),
            idle: Mutex::new(Vec::new()),
            made,
            mine: Mutex::new(Vec::new()),
        }
    }

    /// A connection of its own: an idle one, or a new one.
    pub fn take(&self) -> Result<Conn, String> {
        if let Some(c) = self.idle.lock().unwrap_or_else(|p| p.into_inner()).pop() {
            return Ok(c);
        }
        let conn = Conn::open(&self.access, &self.file, &self.prefix)?;
        if let Some(made) = &self.made {
            made.add(&conn.schema);
            self.mine
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push(conn.schema.clone());
        }
        Ok(conn)
    }

    /// Gives a connection back (a broken one is dropped; its schema stays listed, and is
    /// dropped with the others).
    pub fn give(&self, conn: Conn) {
        if conn.is_usable() {
            self.idle
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push(conn);
        }
    }

    /// The SQL file.
    pub fn file(&self) -> &Arc<SqlFile> {
        &self.file
    }

    /// How its connections reach the server.
    pub fn access(&self) -> &Access {
        &self.access
    }
}

impl Drop for Pool {
    fn drop(&mut self) {
        let Some(made) = &self.made else {
            return;
        };
        let mut mine = std::mem::take(&mut *self.mine.lock().unwrap_or_else(|p| p.into_inner()));
        let idle = std::mem::take(&mut *self.idle.lock().unwrap_or_else(|p| p.into_inner()));
        for mut c in idle {
            let dropped = c
                .client
                .batch_execute(&format!("DROP SCHEMA IF EXISTS {} CASCADE", c.schema));
            if dropped.is_ok() {
                mine.retain(|s| *s != c.schema);
                made.forget(&c.schema);
            }
        }
        // Those of connections that broke.
        drop_schemas(&self.access, &mine);
        for s in &mine {
            made.forget(s);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shown_connection_string_hides_its_password_in_every_form() {
        for (url, shown) in [
            (
                "host=/tmp/x user=leasesim_run password=abc123 dbname=leasesim",
                "host=/tmp/x user=leasesim_run password=*** dbname=leasesim",
            ),
            (
                "host=h password = 'a b\\' c' dbname=d",
                "host=h password=*** dbname=d",
            ),
            ("user=me password=secret", "user=me password=***"),
            (
                "postgres://me:secret@db.example:5432/test?sslmode=disable",
                "postgres://me:***@db.example:5432/test?sslmode=disable",
            ),
            (
                "postgresql://db/test?user=me&password=secret",
                "postgresql://db/test?user=me&password=***",
            ),
            ("host=h passwordless=1", "host=h passwordless=1"),
            ("postgres://me@db/test", "postgres://me@db/test"),
        ] {
            assert_eq!(shown_url(url), shown, "{url}");
        }
    }

    #[test]
    fn a_value_is_an_escape_string_that_reads_the_same_either_way() {
        let mut out = String::new();
        Value::Text(r"it's a \ and \'".into()).write(&mut out);
        assert_eq!(out, r"E'it''s a \\ and \\'''");
        let mut out = String::new();
        Value::Int(-3).write(&mut out);
        assert_eq!(out, "-3");
    }
}
