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

/// One connection and the schema it owns.
pub struct Conn {
    client: Client,
    schema: String,
    /// `TRUNCATE ...; ALTER SEQUENCE ...` for a clean start, or empty.
    reset: String,
}

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
            "SET client_min_messages = warning;
             SET TimeZone = 'UTC';
             SET DateStyle = 'ISO, YMD';
             SET IntervalStyle = 'postgres';
             SET synchronous_commit = off;
             SET leasesim.now = '{base}';
             CREATE SCHEMA {schema};
             SET search_path = {schema}, pg_catalog;
             CREATE FUNCTION {schema}.now() RETURNS timestamptz LANGUAGE sql STABLE
               AS $$ SELECT current_setting('leasesim.now')::timestamptz $$;",
            base = format_us(0)
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
        let mut answer = Answer::default();
        let mut done = 0;
        for m in messages {
            match m {
                SimpleQueryMessage::CommandComplete(n) => {
                    if done == 2 {
                        answer.count = n;
                    }
                    done += 1;
                }
                SimpleQueryMessage::RowDescription(cols) if done == 2 => {
                    answer.columns = cols.iter().map(|c| c.name().to_string()).collect();
                }
                SimpleQueryMessage::Row(r) if done == 2 => {
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
        Ok(answer)
    }

    /// Whether the connection still works.
    fn is_usable(&self) -> bool {
        !self.client.is_closed()
    }
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
