//! Connections to PostgreSQL, each with a schema of its own where the file's `schema` statement
//! made the tables and where `now()` reads the simulated clock.
//!
//! A run borrows one connection from the [`Pool`] for its whole length (so parallel runs never
//! share tables), starts from a clean state (every table of its schema truncated, identities and
//! sequences restarted) and gives the connection back when it ends. Each coordinator input is one
//! transaction sent as one simple query: `BEGIN`, the simulated time, the statement with its
//! parameters written in as literals, `COMMIT`, in a single round trip.

use crate::file::{Piece, SqlFile, Statement};
use crate::time::format_us;
use postgres::{Client, NoTls, SimpleQueryMessage};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

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
                out.push('\'');
                for c in s.chars() {
                    if c == '\'' {
                        out.push('\'');
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

/// How a step sent to a [`Session`] ended.
pub type StepResult = Result<Answer, StepError>;

/// A statement the server refused: its SQLSTATE and message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StepError {
    /// The SQLSTATE (`40P01` deadlock, `40001` serialization failure, `57014` cancelled).
    pub code: String,
    /// The server's message.
    pub message: String,
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
    /// It is inside an explicit transaction.
    pub in_transaction: bool,
}

impl Session {
    fn open(url: &str, schema: &str, isolation: Isolation) -> Result<Session, String> {
        let mut client = Client::connect(url, NoTls)
            .map_err(|e| format!("cannot connect to PostgreSQL at `{url}`: {e}"))?;
        let setup = format!(
            "{}
             SET search_path = {schema}, pg_catalog;
             SET SESSION CHARACTERISTICS AS TRANSACTION ISOLATION LEVEL {};",
            SESSION_SETTINGS.replace("{base}", &format_us(0)),
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
                        .map_err(|e| StepError {
                            code: e.code().map_or_else(String::new, |c| c.code().to_string()),
                            message: describe(&e, &sql, 0, None),
                        });
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
            in_transaction: false,
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
                Some(Err(StepError {
                    code: String::new(),
                    message: "the connection's thread ended".into(),
                }))
            }
        }
    }

    /// Sends `sql` and waits for its answer (for a statement that takes no lock: `ROLLBACK`).
    pub fn run(&mut self, sql: &str) -> StepResult {
        self.send(sql.to_string(), 0);
        loop {
            if let Some(r) = self.answer(std::time::Duration::from_secs(60)) {
                return r;
            }
        }
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
    url: String,
    isolation: Isolation,
    sessions: Vec<Session>,
}

/// What every connection of a run sets first: messages, time zone and formats as leasesim
/// reads them, commits that do not wait for the disk (durability across a crash of the server
/// is not what a run tests), and the simulated clock at its start (`{base}`).
const SESSION_SETTINGS: &str = "SET client_min_messages = warning;
             SET TimeZone = 'UTC';
             SET DateStyle = 'ISO, YMD';
             SET IntervalStyle = 'postgres';
             SET synchronous_commit = off;
             SET leasesim.now = '{base}';";

/// How many schemas this process made (for unique names).
static SCHEMAS: AtomicU64 = AtomicU64::new(0);

/// The error text of a failed query: the server's message, with the statement's line when the
/// server names a position inside it.
fn describe(e: &postgres::Error, batch: &str, offset: usize, st: Option<&Statement>) -> String {
    let Some(db) = e.as_db_error() else {
        return e.to_string();
    };
    let mut s = format!("{}: {}", db.severity(), db.message());
    if let Some(detail) = db.detail() {
        s.push_str(&format!(" ({detail})"));
    }
    if let (Some(st), Some(postgres::error::ErrorPosition::Original(pos))) = (st, db.position()) {
        let pos = *pos as usize;
        let chars: Vec<char> = batch.chars().collect();
        if pos > offset && pos <= chars.len() {
            let newlines = chars[offset..pos - 1]
                .iter()
                .filter(|&&c| c == '\n')
                .count();
            s = format!("line {}: {s}", st.line + 1 + newlines);
        }
    }
    s
}

impl Conn {
    /// Connects to `url`, makes a fresh schema, puts it and the simulated `now()` first on the
    /// search path, and runs the file's `schema` statement in it.
    pub fn open(url: &str, file: &SqlFile, prefix: &str) -> Result<Conn, String> {
        let mut client = Client::connect(url, NoTls)
            .map_err(|e| format!("cannot connect to PostgreSQL at `{url}`: {e}"))?;
        let schema = format!(
            "{prefix}_{}_{}",
            std::process::id(),
            SCHEMAS.fetch_add(1, Ordering::Relaxed)
        );
        // `now()` in the run's schema comes before pg_catalog's; it reads the setting each
        // transaction sets. Durable work need not survive a crash of the server: a throwaway
        // server runs without fsync, and a user's server is asked not to wait for its disk.
        let setup = format!(
            "{settings}
             CREATE SCHEMA {schema};
             SET search_path = {schema}, pg_catalog;
             CREATE FUNCTION {schema}.now() RETURNS timestamptz LANGUAGE sql STABLE
               AS $$ SELECT current_setting('leasesim.now')::timestamptz $$;",
            settings = SESSION_SETTINGS.replace("{base}", &format_us(0))
        );
        client.batch_execute(&setup).map_err(|e| {
            format!(
                "cannot prepare a schema on `{url}`: {}",
                describe(&e, "", 0, None)
            )
        })?;
        let mut conn = Conn {
            client,
            schema,
            reset: String::new(),
            url: url.to_string(),
            isolation: Isolation::default(),
            sessions: Vec::new(),
        };
        let st = file
            .get("schema")
            .ok_or_else(|| format!("{}: statement `schema` is missing", file.name))?;
        let text = format!("BEGIN;\n{}\n;\nCOMMIT", st.text);
        if let Err(e) = conn.client.batch_execute(&text) {
            let _ = conn.client.batch_execute("ROLLBACK");
            return Err(format!(
                "{}: `schema` failed: {}",
                file.name,
                describe(&e, &text, "BEGIN;\n".len(), Some(st))
            ));
        }
        conn.reset = conn.reset_statement()?;
        Ok(conn)
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
                Err(format!(
                    "`enqueue` failed: {}",
                    describe(&e, &batch, 0, None)
                ))
            }
        }
    }

    /// Runs `st` with `values` (one per parameter, in `st.params` order) as one transaction at
    /// database time `now_us`.
    pub fn run(&mut self, st: &Statement, values: &[Value], now_us: i64) -> Result<Answer, String> {
        let mut batch = format!(
            "BEGIN;\nSET LOCAL leasesim.now = '{}';\n",
            format_us(now_us)
        );
        let offset = batch.chars().count();
        fill(st, values, &mut batch);
        batch.push_str("\n;\nCOMMIT");
        let messages = match self.client.simple_query(&batch) {
            Ok(m) => m,
            Err(e) => {
                let _ = self.client.batch_execute("ROLLBACK");
                return Err(format!(
                    "`{}` failed: {}",
                    st.name,
                    describe(&e, &batch, offset, Some(st))
                ));
            }
        };
        Ok(answer_of(messages, 2))
    }

    /// Runs every step of `st` on this connection, one after the other, at database time
    /// `now_us`: parameters by name from `values`, or from the columns an earlier step returned;
    /// the answering step's answer (none when an earlier step found no row a later one needs).
    pub fn run_steps(
        &mut self,
        st: &Statement,
        values: &[(String, Value)],
        now_us: i64,
    ) -> Result<Answer, String> {
        let mut carried: Vec<(String, Option<String>)> = Vec::new();
        let mut answer = Answer::default();
        let mut in_tx = false;
        let answering = st.answering();
        for step in st.each_step() {
            let sql = match step.control() {
                crate::file::Control::Begin => {
                    in_tx = true;
                    format!(
                        "{}\n;\nSET LOCAL leasesim.now = '{}'",
                        step.text.trim().trim_end_matches(';'),
                        format_us(now_us)
                    )
                }
                crate::file::Control::Commit | crate::file::Control::Rollback => {
                    in_tx = false;
                    step.text.trim().trim_end_matches(';').to_string()
                }
                crate::file::Control::Data => {
                    let mut filled_values = Vec::new();
                    for (p, line) in &step.params {
                        match values.iter().find(|(n, _)| n == p) {
                            Some((_, v)) => filled_values.push(v.clone()),
                            None => match carried.iter().find(|(n, _)| n == p) {
                                Some((_, Some(v))) => filled_values.push(Value::Text(v.clone())),
                                Some((_, None)) => {
                                    if in_tx {
                                        let _ = self.client.batch_execute("COMMIT");
                                    }
                                    return Ok(Answer::default());
                                }
                                None => {
                                    return Err(format!(
                                        "line {line}: `{}` uses `:{p}`, which neither leasesim nor an earlier statement gives",
                                        st.name
                                    ))
                                }
                            },
                        }
                    }
                    let text = filled(step, &filled_values);
                    if in_tx {
                        text
                    } else {
                        format!(
                            "BEGIN;\nSET LOCAL leasesim.now = '{}';\n{text}\n;\nCOMMIT",
                            format_us(now_us)
                        )
                    }
                }
            };
            let which = usize::from(step.control() == crate::file::Control::Data && !in_tx) * 2;
            let messages = self.client.simple_query(&sql).map_err(|e| {
                let _ = self.client.batch_execute("ROLLBACK");
                format!(
                    "`{}` failed: {}",
                    st.name,
                    describe(&e, &sql, 0, Some(step))
                )
            })?;
            if step.control() == crate::file::Control::Data {
                let a = answer_of(messages, which);
                for (i, c) in a.columns.iter().enumerate() {
                    let v = a.rows.first().and_then(|r| r.get(i).cloned().flatten());
                    match carried.iter_mut().find(|(n, _)| n == c) {
                        Some(slot) => slot.1 = v,
                        None => carried.push((c.clone(), v)),
                    }
                }
                if std::ptr::eq(step, answering) {
                    answer = a;
                }
            }
        }
        if in_tx {
            let _ = self.client.batch_execute("ROLLBACK");
            return Err(format!(
                "`{}` ends with its transaction open: end it with `commit;`",
                st.name
            ));
        }
        Ok(answer)
    }

    /// Whether the connection still works.
    fn is_usable(&self) -> bool {
        !self.client.is_closed()
    }

    /// The `i`-th session on this connection's schema (opened on first use, kept for the
    /// next run).
    pub fn session(&mut self, i: usize) -> Result<&mut Session, String> {
        while self.sessions.len() <= i {
            let s = Session::open(&self.url, &self.schema, self.isolation)?;
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
            // Always: a cancelled statement of an autocommit batch leaves its failed
            // transaction open without the flag saying so.
            let s = &mut self.sessions[i];
            let _ = s.run("ROLLBACK");
            s.in_transaction = false;
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

/// Connections to one server for one SQL file: one per run at a time, made on demand and kept
/// for the next run; their schemas are dropped when the pool is dropped.
pub struct Pool {
    url: String,
    file: Arc<SqlFile>,
    prefix: String,
    idle: Mutex<Vec<Conn>>,
    /// Drop the schemas at the end (not worth it on a throwaway server).
    tidy: bool,
}

impl Pool {
    /// A pool for `file` on the server at `url`; `tidy` drops its schemas when it is dropped.
    pub fn new(url: &str, file: Arc<SqlFile>, tidy: bool) -> Pool {
        Pool {
            url: url.to_string(),
            file,
            prefix: "leasesim".into(),
            idle: Mutex::new(Vec::new()),
            tidy,
        }
    }

    /// A connection of its own: an idle one, or a new one.
    pub fn take(&self) -> Result<Conn, String> {
        if let Some(c) = self.idle.lock().unwrap_or_else(|p| p.into_inner()).pop() {
            return Ok(c);
        }
        Conn::open(&self.url, &self.file, &self.prefix)
    }

    /// Gives a connection back (a broken one is dropped).
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
}

impl Drop for Pool {
    fn drop(&mut self) {
        if !self.tidy {
            return;
        }
        let idle = std::mem::take(&mut *self.idle.lock().unwrap_or_else(|p| p.into_inner()));
        for mut c in idle {
            let _ = c
                .client
                .batch_execute(&format!("DROP SCHEMA IF EXISTS {} CASCADE", c.schema));
        }
    }
}
