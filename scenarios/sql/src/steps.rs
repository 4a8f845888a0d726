//! The one way a statement's steps run: a [`Cursor`] over them that fills each step's
//! parameters (by name from leasesim, or from a column an earlier step returned), wraps it in
//! its transaction, carries its columns on to the next step and reads its answer.
//!
//! Every caller drives this cursor: a synchronous run on the run's control connection
//! ([`run`]), and the coordinator's stepper and `sql explore` on a worker's own session
//! ([`send`], which also sees a step wait on a lock another session holds). What a step did is
//! a [`Stepped`]; what the server refused is a value too: a transaction the server aborted
//! (deadlock, serialization failure) ends the operation as a refusal, and anything else is an
//! error whose message names the statement and its line, for the run to end as a store error.
//! This module never panics on what the server or the file says.

use crate::db::{filled, line_at, Answer, Conn, StepError, StepResult, Value, Wire};
use crate::file::{Control, Statement};
use crate::time::format_us;
use leasesim_protocol::StoreFailure;
use std::time::Duration;

/// What one step did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Stepped {
    /// It ran; more steps follow.
    Ran,
    /// It ran and was the last: the statement's answer is [`Cursor::answer`].
    Done,
    /// It waited on a lock the session of that index holds: it was cancelled and undone, and
    /// is to be sent again once a step elsewhere ends.
    Blocked(usize),
    /// The server ended its transaction (or leasesim did, breaking a cycle of waits): the
    /// operation ends refused, as the reference coordinator refuses an aborted one.
    Aborted(StoreFailure),
    /// No step was sent: an earlier step found no row a later one needs, so the operation
    /// ends with no row; its open transaction was committed, or the commit was aborted.
    Stopped(Option<StoreFailure>),
}

/// How a statement ended, run whole.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Ended {
    /// Its answering step's rows (none when it stopped early).
    Done(Answer),
    /// The server aborted its transaction at step `step` (0-based).
    Aborted {
        /// The step that was aborted.
        step: usize,
        /// How.
        failure: StoreFailure,
    },
}

/// The name of a savepoint every step inside a transaction on a session starts with, so that
/// a step that must wait for a lock is cancelled and undone alone.
const SAVEPOINT: &str = "leasesim_step";

/// One operation's progress through a statement's steps.
#[derive(Clone, Debug, Default)]
pub struct Cursor {
    next: usize,
    carried: Vec<(String, Option<String>)>,
    answer: Answer,
    in_tx: bool,
    /// On a worker's session: a step inside a transaction starts with a savepoint, and a
    /// cancel leasesim sent (to a step waiting on a lock) is expected.
    on_session: bool,
    /// The SQL of the step last sent and where the step's own text starts in it (characters),
    /// for the line of a server error.
    sent: Option<(String, usize)>,
}

impl Cursor {
    /// A cursor at the first step; `on_session` when it runs on a worker's session, where a
    /// step may wait on a lock.
    pub fn new(on_session: bool) -> Cursor {
        Cursor {
            on_session,
            ..Cursor::default()
        }
    }

    /// The index of the next step.
    pub fn step(&self) -> usize {
        self.next
    }

    /// Whether the connection is inside the statement's explicit transaction.
    pub fn in_transaction(&self) -> bool {
        self.in_tx
    }

    /// The answering step's answer so far.
    pub fn answer(&self) -> &Answer {
        &self.answer
    }

    /// Takes the answering step's answer.
    pub fn take_answer(&mut self) -> Answer {
        std::mem::take(&mut self.answer)
    }

    /// The SQL of the next step of `st` at database time `now_us` and which of its statements
    /// answers, or `None` when an earlier step found no row the step needs (then
    /// [`Cursor::stop`]). Parameters come by name from `values`, then from the columns earlier
    /// steps returned.
    pub fn next_sql(
        &mut self,
        st: &Statement,
        values: &[(String, Value)],
        now_us: i64,
    ) -> Result<Option<(String, usize)>, String> {
        let step = st.each_step().get(self.next).ok_or_else(|| {
            format!(
                "line {}: `{}` has no step {}",
                st.first_line(),
                st.name,
                self.next + 1
            )
        })?;
        let now = format_us(now_us);
        let (sql, which, offset) = match step.control() {
            Control::Begin => (
                format!(
                    "{}\n;\nSET LOCAL leasesim.now = '{now}'",
                    step.text.trim().trim_end_matches(';')
                ),
                0,
                None,
            ),
            Control::Commit | Control::Rollback => {
                (step.text.trim().trim_end_matches(';').to_string(), 0, None)
            }
            Control::Data => {
                let Some(values) = self.fill(st, step, values)? else {
                    return Ok(None);
                };
                let text = filled(step, &values);
                let (prefix, suffix, which) = if !self.in_tx {
                    (
                        format!("BEGIN;\nSET LOCAL leasesim.now = '{now}';\n"),
                        "\n;\nCOMMIT",
                        2,
                    )
                } else if self.on_session {
                    (format!("SAVEPOINT {SAVEPOINT};\n"), "", 1)
                } else {
                    (String::new(), "", 0)
                };
                let offset = prefix.chars().count();
                (format!("{prefix}{text}{suffix}"), which, Some(offset))
            }
        };
        self.sent = offset.map(|o| (sql.clone(), o));
        Ok(Some((sql, which)))
    }

    /// A data step's parameter values, in its order; `None` when one is a column an earlier
    /// step returned null or no row for.
    fn fill(
        &self,
        st: &Statement,
        step: &Statement,
        values: &[(String, Value)],
    ) -> Result<Option<Vec<Value>>, String> {
        let mut out = Vec::with_capacity(step.params.len());
        for (p, line) in &step.params {
            if let Some((_, v)) = values.iter().find(|(n, _)| n == p) {
                out.push(v.clone());
                continue;
            }
            match self.carried.iter().find(|(n, _)| n == p) {
                Some((_, Some(v))) => out.push(Value::Text(v.clone())),
                Some((_, None)) => return Ok(None),
                None if st.steps.is_empty() => {
                    return Err(format!(
                        "line {line}: `{}` uses `:{p}`, which leasesim does not pass there",
                        st.name
                    ))
                }
                None => {
                    return Err(format!(
                        "line {line}: `{}` uses `:{p}`, which neither leasesim nor an earlier statement gives",
                        st.name
                    ))
                }
            }
        }
        Ok(Some(out))
    }

    /// The answer of the step last sent, `elapsed` after it was sent: the cursor moves on, or
    /// the operation ends. A failed step's transaction is rolled back on `wire`.
    pub fn answered(
        &mut self,
        st: &Statement,
        r: StepResult,
        elapsed: Duration,
        wire: &mut dyn Wire,
    ) -> Result<Stepped, String> {
        let steps = st.each_step();
        let step = steps
            .get(self.next)
            .ok_or_else(|| format!("`{}` has no step {}", st.name, self.next + 1))?;
        let e = match r {
            Ok(answer) => return self.ran(st, step, answer, wire),
            Err(e) => e,
        };
        let _ = wire.exchange("ROLLBACK", 0);
        self.in_tx = false;
        let said = self.said(step, &e);
        let timeout = wire.timeout();
        match e.code.as_str() {
            // After the statement timeout: the server cancelled a statement that would not end.
            "57014" if elapsed >= timeout => Err(format!(
                "`{}` ran longer than the statement timeout ({}) and the server cancelled it ({said}); raise the timeout with --statement-timeout if the statement is slow on purpose",
                st.name,
                leasesim_sim::time::dur(timeout.as_nanos().min(u128::from(u64::MAX)) as u64)
            )),
            "40P01" => Ok(Stepped::Aborted(StoreFailure::Deadlock)),
            // Sooner, on a session: leasesim's own cancel of a waiting step, which reached it
            // after it went on; it is aborted as a deadlock's victim would be.
            "57014" if self.on_session => Ok(Stepped::Aborted(StoreFailure::Deadlock)),
            "40001" => Ok(Stepped::Aborted(StoreFailure::Serialization)),
            _ => Err(format!("`{}` failed: {said}", st.name)),
        }
    }

    /// A step that ran: its columns carried on, its rows kept if it answers.
    fn ran(
        &mut self,
        st: &Statement,
        step: &Statement,
        answer: Answer,
        wire: &mut dyn Wire,
    ) -> Result<Stepped, String> {
        match step.control() {
            Control::Begin => self.in_tx = true,
            Control::Commit | Control::Rollback => self.in_tx = false,
            Control::Data => {
                for (i, c) in answer.columns.iter().enumerate() {
                    let v = answer
                        .rows
                        .first()
                        .and_then(|r| r.get(i).cloned().flatten());
                    match self.carried.iter_mut().find(|(n, _)| n == c) {
                        Some(slot) => slot.1 = v,
                        None => self.carried.push((c.clone(), v)),
                    }
                }
                if std::ptr::eq(step, st.answering()) {
                    self.answer = answer;
                }
            }
        }
        self.next += 1;
        if self.next < st.each_step().len() {
            return Ok(Stepped::Ran);
        }
        if self.in_tx {
            let _ = wire.exchange("ROLLBACK", 0);
            self.in_tx = false;
            return Err(format!(
                "`{}` ends with its transaction open: end it with `commit;`",
                st.name
            ));
        }
        Ok(Stepped::Done)
    }

    /// An earlier step found no row the next one needs: the operation ends with no row, and
    /// its open transaction is committed, as a client that found nothing would.
    pub fn stop(&mut self, st: &Statement, wire: &mut dyn Wire) -> Result<Stepped, String> {
        self.answer = Answer::default();
        if !std::mem::take(&mut self.in_tx) {
            return Ok(Stepped::Stopped(None));
        }
        let Err(e) = wire.exchange("COMMIT", 0) else {
            return Ok(Stepped::Stopped(None));
        };
        let _ = wire.exchange("ROLLBACK", 0);
        match e.code.as_str() {
            "40P01" => Ok(Stepped::Stopped(Some(StoreFailure::Deadlock))),
            "40001" => Ok(Stepped::Stopped(Some(StoreFailure::Serialization))),
            _ => Err(format!(
                "`{}` failed: line {}: {} (at the commit after step {} found no row)",
                st.name,
                st.first_line(),
                e.message,
                self.next
            )),
        }
    }

    /// Ends the operation as a deadlock's victim: leasesim found its step closing a cycle of
    /// waits, and ends its transaction as the server's own detector would.
    pub fn abort(&mut self, st: &Statement, wire: &mut dyn Wire) -> Result<Stepped, String> {
        if std::mem::take(&mut self.in_tx) {
            if let Err(e) = wire.exchange("ROLLBACK", 0) {
                return Err(format!(
                    "`{}`: a rollback after a deadlock failed: {}",
                    st.name, e.message
                ));
            }
        }
        Ok(Stepped::Aborted(StoreFailure::Deadlock))
    }

    /// The server's message with the line it points at (or the step's first line).
    fn said(&self, step: &Statement, e: &StepError) -> String {
        let line = match (&self.sent, e.position) {
            (Some((sql, offset)), Some(pos)) => line_at(sql, *offset, pos, step),
            _ => None,
        };
        format!(
            "line {}: {}",
            line.unwrap_or_else(|| step.first_line()),
            e.message
        )
    }
}

/// Runs every step of `st` one after the other on `wire` (the run's control connection) at
/// database time `now_us`, parameters by name from `values` or from the columns an earlier
/// step returned.
pub fn run(
    wire: &mut dyn Wire,
    st: &Statement,
    values: &[(String, Value)],
    now_us: i64,
) -> Result<Ended, String> {
    let mut cursor = Cursor::new(false);
    for _ in 0..st.each_step().len() {
        let stepped = match cursor.next_sql(st, values, now_us)? {
            None => cursor.stop(st, wire)?,
            Some((sql, which)) => {
                #[allow(clippy::disallowed_methods)] // a bound on a real database's time
                let sent = std::time::Instant::now();
                let r = wire.exchange(&sql, which);
                cursor.answered(st, r, sent.elapsed(), wire)?
            }
        };
        match stepped {
            Stepped::Ran => {}
            Stepped::Done => return Ok(Ended::Done(cursor.take_answer())),
            Stepped::Stopped(None) => return Ok(Ended::Done(Answer::default())),
            Stepped::Aborted(failure) | Stepped::Stopped(Some(failure)) => {
                return Ok(Ended::Aborted {
                    step: cursor.step(),
                    failure,
                })
            }
            Stepped::Blocked(_) => {
                return Err(format!(
                    "`{}` waited on a lock on the control connection",
                    st.name
                ))
            }
        }
    }
    Err(format!("`{}` did not end after its last step", st.name))
}

/// A statement run whole on the run's control connection, for callers that want its rows or
/// a message (opening a file, tests).
impl Conn {
    /// Runs `st` with `values` (one per parameter, in `st.params` order) as one transaction at
    /// database time `now_us`.
    pub fn run(&mut self, st: &Statement, values: &[Value], now_us: i64) -> Result<Answer, String> {
        let named: Vec<(String, Value)> = st
            .params
            .iter()
            .map(|(p, _)| p.clone())
            .zip(values.iter().cloned())
            .collect();
        self.run_steps(st, &named, now_us)
    }

    /// Runs every step of `st` on this connection, one after the other, at database time
    /// `now_us`: parameters by name from `values`, or from the columns an earlier step returned;
    /// the answering step's answer (none when an earlier step found no row a later one needs).
    /// A transaction the server aborted is an error here too.
    pub fn run_steps(
        &mut self,
        st: &Statement,
        values: &[(String, Value)],
        now_us: i64,
    ) -> Result<Answer, String> {
        match run(self, st, values, now_us)? {
            Ended::Done(answer) => Ok(answer),
            Ended::Aborted { step, failure } => Err(format!(
                "`{}`: the server aborted its transaction at step {} ({})",
                st.name,
                step + 1,
                failure.describe()
            )),
        }
    }
}

/// How long a poll for a step's answer waits before it looks whether the step waits on a lock.
const POLL: Duration = Duration::from_millis(2);

/// Sends the next step of `cursor` on session `session` of `conn` and follows it until it
/// finishes or waits on a lock. A step never stays waiting inside the server, where several
/// released at once would race by the machine's timing: it is cancelled and undone (to its
/// savepoint inside a transaction), and reported [`Stepped::Blocked`] by the session whose
/// lock it needs. A lock held outside the run's sessions (a server of the user's) is waited
/// for in place, up to the statement timeout and a grace.
pub fn send(
    conn: &mut Conn,
    session: usize,
    cursor: &mut Cursor,
    st: &Statement,
    values: &[(String, Value)],
    now_us: i64,
) -> Result<Stepped, String> {
    let named = |e: String| format!("`{}`: {e}", st.name);
    let Some((sql, which)) = cursor.next_sql(st, values, now_us)? else {
        let s = conn.session(session).map_err(named)?;
        return cursor.stop(st, s);
    };
    #[allow(clippy::disallowed_methods)] // a bound on a real database's time
    let sent = std::time::Instant::now();
    conn.session(session).map_err(named)?.send(sql, which);
    loop {
        let s = conn.session(session).map_err(named)?;
        if let Some(r) = s.answer(POLL) {
            return cursor.answered(st, r, sent.elapsed(), s);
        }
        let (pid, limit) = (s.pid(), s.limit());
        let blockers = conn.blocked_by(pid).map_err(named)?;
        if !blockers.is_empty() {
            break;
        }
        // The server's statement timeout ends a statement long before this; past it, the
        // server itself stopped answering.
        if sent.elapsed() > limit {
            return Err(format!(
                "a statement of `{}` ran {} s neither finishing nor waiting on a lock, and the server did not cancel it",
                st.name,
                limit.as_secs()
            ));
        }
    }
    waited(conn, session, cursor, st, sent)
}

/// The step `session` sent (at `sent`) waits on a lock: it is cancelled and undone, and
/// blocked by the session that holds the lock; a lock held outside the run is waited for in
/// place.
fn waited(
    conn: &mut Conn,
    session: usize,
    cursor: &mut Cursor,
    st: &Statement,
    sent: std::time::Instant,
) -> Result<Stepped, String> {
    let named = |e: String| format!("`{}`: {e}", st.name);
    let pids: Vec<i32> = conn
        .sessions()
        .iter()
        .map(crate::db::Session::pid)
        .collect();
    let pid = pids
        .get(session)
        .copied()
        .ok_or_else(|| named("no session".into()))?;
    let by = conn
        .blocked_by(pid)
        .map_err(named)?
        .iter()
        .find_map(|b| pids.iter().position(|p| p == b));
    let s = conn.session(session).map_err(named)?;
    let limit = s.limit();
    let Some(by) = by else {
        // Held by a session outside this run (or released meanwhile): wait in place.
        return match s.answer(limit) {
            Some(r) => cursor.answered(st, r, sent.elapsed(), s),
            None => Err(format!(
                "a statement of `{}` waited {} s on a lock held outside this run",
                st.name,
                limit.as_secs()
            )),
        };
    };
    conn.cancel(pid).map_err(named)?;
    let s = conn.session(session).map_err(named)?;
    let Some(r) = s.answer(limit) else {
        return Err(format!(
            "a cancelled statement of `{}` gave no answer within {} s",
            st.name,
            limit.as_secs()
        ));
    };
    if r.is_ok() {
        // It finished before the cancel reached it.
        return cursor.answered(st, r, sent.elapsed(), s);
    }
    let undo = if cursor.in_tx {
        format!("ROLLBACK TO SAVEPOINT {SAVEPOINT}")
    } else {
        "ROLLBACK".to_string()
    };
    if let Err(e) = s.exchange(&undo, 0) {
        return Err(format!(
            "`{}`: cannot undo a waiting statement: {}",
            st.name, e.message
        ));
    }
    Ok(Stepped::Blocked(by))
}

/// Whether operation `from`, now blocked by `by`, closes a cycle of waits: following each
/// blocked operation to the one it waits for (`blocked_on`) leads back to `from` within `n`
/// steps (the number of sessions).
pub fn closes_cycle(
    from: usize,
    by: usize,
    n: usize,
    blocked_on: impl Fn(usize) -> Option<usize>,
) -> bool {
    let mut at = by;
    for _ in 0..=n {
        if at == from {
            return true;
        }
        match blocked_on(at) {
            Some(next) => at = next,
            None => return false,
        }
    }
    false
}
