//! The SQL coordinator: the coordinator machine whose every decision is a named statement of a
//! queue's SQL file, run as one transaction on PostgreSQL at the simulated time.
//!
//! The database decides; this adapter only maps. A request becomes the statement's parameters
//! (`W1` for worker 1, job 3 as the uuid `00000000-0000-4000-8000-000000000003`, the time as
//! the database's `now()`), and the statement's rows become the answer and the journal: one row
//! from `claim` is a grant with the token and lease end the row names, no row from `heartbeat`
//! is a refusal (as the article says), a row count of one from `commit` accepts the result. Each
//! decision is journaled after a [`StoreEvent::Ran`] naming the statement and its row
//! count, so a timeline shows which `where` clause let a stale commit through.
//!
//! What the database does not say, the adapter keeps from what it saw: which token a job's
//! current grant carries (for `took_over`), the attempt count when the claim does not return
//! it, and whether every job has ended. A repeated claim or commit (a duplicated or retried
//! request) gets its first answer again without a second statement, as from the reference
//! coordinator: the request's identity is the adapter's to keep, not the SQL's.

use crate::contract;
use crate::db::{Answer, Conn, Value};
use crate::steps::{self, Cursor, Ended, Stepped};
use crate::time::{parse_us, Scale};
use crate::SqlQueue;
use leasesim_protocol::{
    ClassSpec, Connection, CoordinatorMachine, ErrorCode, Event, GrantReason, JobId, JobSpec,
    JobState, Msg, Nanos, OperatorAction, Outcome, Output, Peer, RefusalReason, StoreEvent,
    StoreFailure, StoreStatement, Token, WorkerName,
};
use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;

/// A job's uuid.
pub fn job_uuid(job: JobId) -> String {
    format!("00000000-0000-4000-8000-{:012x}", job.0)
}

/// The job a uuid names, if it is one of ours.
pub fn job_of(uuid: &str) -> Option<JobId> {
    let hex = uuid.strip_prefix("00000000-0000-4000-8000-")?;
    if hex.len() != 12 {
        return None;
    }
    u32::from_str_radix(hex, 16).ok().map(JobId)
}

/// A worker's id as the SQL sees it.
pub fn worker_id(w: WorkerName) -> String {
    w.to_string()
}

/// An error code as the `error` column's JSON.
fn error_name(e: ErrorCode) -> &'static str {
    match e {
        ErrorCode::ToolTimeout => "tool_timeout",
        ErrorCode::ToolFailed => "tool_failed",
        ErrorCode::StageDeadline => "stage_deadline",
        ErrorCode::RenewalCap => "renewal_cap",
        ErrorCode::Validation => "validation",
        ErrorCode::Unauthorized => "unauthorized",
        ErrorCode::NeedsHumanReview => "needs_human_review",
    }
}

/// The parameters of `enqueue` for each job, in order: its uuid, an idempotency key, and a
/// payload naming its class and hash (and the lease it asks for, if any).
fn enqueue_rows(
    enqueue: &crate::file::Statement,
    jobs: &[JobSpec],
    scale: &Scale,
) -> Vec<Vec<Value>> {
    jobs.iter()
        .enumerate()
        .map(|(i, j)| {
            let id = JobId(i as u32);
            let mut payload = format!(
                "{{\"class\": {}, \"hash\": \"{:016x}\"",
                j.class.0, j.payload_hash
            );
            if let Some(asked) = j.payload_lease_ns {
                payload.push_str(&format!(", \"lease_seconds\": {}", scale.db_seconds(asked)));
            }
            payload.push('}');
            enqueue
                .params
                .iter()
                .map(|(p, _)| match p.as_str() {
                    "job_id" => Value::Text(job_uuid(id)),
                    "idempotency_key" => Value::Text(format!("tool-job:{}", id.0)),
                    _ => Value::Text(payload.clone()),
                })
                .collect()
        })
        .collect()
}

/// What the adapter saw of a job.
#[derive(Clone, Debug)]
struct Seen {
    class: ClassSpec,
    class_id: leasesim_protocol::ClassId,
    state: JobState,
    holder: Option<WorkerName>,
    token: Token,
    until: Option<Nanos>,
    attempt: u32,
    checkpoint: Option<u8>,
}

/// A statement's parameters, by name.
type Params = Vec<(String, Value)>;

/// A grant: job, token, lease end.
type Grant = (JobId, Token, Nanos);

/// The coordinator machine on a SQL file.
pub struct SqlCoordinator {
    /// Operations run step by step on their workers' own sessions, when the file has an
    /// operation of several statements.
    stepper: Option<Stepper>,
    /// The answer of a stepped operation, for the handler that decides with it.
    ready: Option<Ready>,
    /// The decision being made is a refusal because the store aborted its transaction.
    aborted: bool,
    queue: Arc<SqlQueue>,
    conn: Option<Conn>,
    scale: Scale,
    jobs: Vec<Seen>,
    open: usize,
    claims: BTreeMap<u32, (u64, Option<Grant>)>,
    accepted: BTreeMap<(JobId, WorkerName, Token), Outcome>,
    handoffs: BTreeMap<JobId, WorkerName>,
    out: VecDeque<Output>,
}

impl Drop for SqlCoordinator {
    fn drop(&mut self) {
        if let Some(mut c) = self.conn.take() {
            // A run can end with an operation between its steps or waiting on a lock.
            c.quiesce();
            self.queue.pool.give(c);
        }
    }
}

/// Fails the run with a machine error that names the SQL file (`End::ProcessFault`, the
/// message in the verdict), printing nothing: a store that failed is not a bug of leasesim's.
fn broken(queue: &SqlQueue, what: String) -> ! {
    leasesim::run::fail_machine(format!("store error: {}: {what}", queue.file.name))
}

impl SqlCoordinator {
    /// A coordinator for one run: a connection of its own, a clean state, every job enqueued.
    pub fn new(
        queue: Arc<SqlQueue>,
        classes: &[ClassSpec],
        jobs: &[JobSpec],
        seed: u64,
    ) -> SqlCoordinator {
        let lease = classes.first().map_or(0, |c| c.lease_ns);
        if lease == 0 || classes.iter().any(|c| c.lease_ns != lease) {
            broken(
                &queue,
                "the SQL grants one lease length, and this run's classes have different ones (not expressible)".into(),
            );
        }
        let scale = Scale::new(queue.lease_ns, lease);
        let mut conn = queue.pool.take().unwrap_or_else(|e| broken(&queue, e));
        conn.set_isolation(queue.isolation());
        let enqueue = queue.file.get("enqueue").expect("checked at open");
        let rows = enqueue_rows(enqueue, jobs, &scale);
        if let Err(e) = conn.start_run(enqueue, &rows) {
            queue.pool.give(conn);
            broken(&queue, e);
        }
        let jobs = jobs
            .iter()
            .map(|j| Seen {
                class: classes[j.class.0 as usize].clone(),
                class_id: j.class,
                state: JobState::Queued,
                holder: None,
                token: Token(0),
                until: None,
                attempt: 0,
                checkpoint: None,
            })
            .collect();
        let stepper = queue.stepped().then(|| Stepper::new(seed));
        SqlCoordinator {
            stepper,
            ready: None,
            aborted: false,
            queue,
            conn: Some(conn),
            scale,
            jobs,
            open: 0,
            claims: BTreeMap::new(),
            accepted: BTreeMap::new(),
            handoffs: BTreeMap::new(),
            out: VecDeque::new(),
        }
    }

    /// Runs statement `name` at simulated `now` with the parameters `value` gives by name, and
    /// journals it with its row count.
    fn exec(&mut self, name: &'static str, now: Nanos, params: &[(String, Value)]) -> Answer {
        let queue = self.queue.clone();
        if self.ready.as_ref().is_some_and(|r| r.name == name) {
            let r = self.ready.take().expect("checked");
            if let Some((step, failure)) = r.failure {
                self.aborted = true;
                self.out
                    .push_back(Output::Journal(Event::Store(StoreEvent::Failed {
                        statement: statement_of(name),
                        step,
                        failure,
                    })));
                return Answer::default();
            }
            return self.checked(name, r.answer);
        }
        let st = queue
            .file
            .get(name)
            .unwrap_or_else(|| broken(&queue, format!("the file has no `{name}` statement")));
        // Here, not by the stepper: a file of single statements, or a statement of several
        // whose operation was decided otherwise than planned (as when a hand-off was revoked
        // meanwhile). Its steps run one after the other on the control connection.
        let now_us = self.scale.db_us(now);
        let conn = self.conn.as_mut().expect("a connection while running");
        match steps::run(conn, st, params, now_us).unwrap_or_else(|e| broken(&queue, e)) {
            Ended::Done(answer) => self.checked(name, answer),
            Ended::Aborted { step, failure } => {
                self.aborted = true;
                self.out
                    .push_back(Output::Journal(Event::Store(StoreEvent::Failed {
                        statement: statement_of(name),
                        step: step.min(255) as u8,
                        failure,
                    })));
                Answer::default()
            }
        }
    }

    /// Holds a statement's answer to the contract and journals it.
    fn checked(&mut self, name: &'static str, answer: Answer) -> Answer {
        let queue = self.queue.clone();
        let st = queue.file.get(name).expect("checked at open").answering();
        let spec = contract::spec(name).expect("a contract statement");
        if spec.answer == contract::Answer::Returning && answer.count > 0 {
            for col in spec.returns {
                if !answer.columns.iter().any(|c| c == col) {
                    broken(
                        &queue,
                        format!(
                            "line {}: `{name}` returned the columns {:?}, without `{col}`",
                            st.first_line(),
                            answer.columns
                        ),
                    );
                }
            }
        }
        if answer.count > 1 && name != "schema" {
            broken(
                &queue,
                format!(
                    "line {}: `{name}` touched {} rows; it must decide about one job",
                    st.first_line(),
                    answer.count
                ),
            );
        }
        if name != "status" {
            // A status read only explains a refusal; the decision was the statement before.
            self.out
                .push_back(Output::Journal(Event::Store(StoreEvent::Ran {
                    statement: statement_of(name),
                    rows: answer.count.min(u64::from(u32::MAX)) as u32,
                })));
        }
        answer
    }

    /// The simulated time of a lease end the database returned (the first instant it calls
    /// expired).
    fn until(&self, name: &str, answer: &Answer) -> Nanos {
        let text = answer.get(0, "lease_until").unwrap_or_else(|| {
            broken(&self.queue, format!("`{name}` returned a null lease_until"))
        });
        let us = parse_us(text).unwrap_or_else(|e| broken(&self.queue, format!("`{name}`: {e}")));
        self.scale.sim_ns(us)
    }

    fn token(&self, name: &str, answer: &Answer) -> Token {
        let text = answer.get(0, "fencing_token").unwrap_or_default();
        Token(text.parse().unwrap_or_else(|_| {
            broken(
                &self.queue,
                format!("`{name}` returned fencing_token `{text}`, not a non-negative integer"),
            )
        }))
    }

    /// The parameters of a worker's request, by name.
    /// The parameters of a holder's request (heartbeat, commit, fail, checkpoint).
    fn request(&self, job: JobId, worker: WorkerName, token: Token, client_now: Nanos) -> Params {
        vec![
            ("job_id".into(), Value::Text(job_uuid(job))),
            ("worker_id".into(), Value::Text(worker_id(worker))),
            ("fencing_token".into(), Value::Int(token.0 as i64)),
            (
                "client_now".into(),
                Value::Text(self.scale.timestamp(client_now)),
            ),
        ]
    }

    /// The parameters of a checkpoint.
    fn checkpoint_params(
        &self,
        now: Nanos,
        job: JobId,
        worker: WorkerName,
        token: Token,
        step: u8,
    ) -> Params {
        let mut params = self.request(job, worker, token, now);
        params.push(("step".into(), Value::Int(i64::from(step))));
        params
    }

    /// The parameters of a claim.
    fn claim_params(&self, worker: WorkerName, client_now: Nanos) -> Params {
        vec![
            ("worker_id".into(), Value::Text(worker_id(worker))),
            (
                "client_now".into(),
                Value::Text(self.scale.timestamp(client_now)),
            ),
        ]
    }

    /// The statement a holder's outcome runs (`commit` or `fail`) and its parameters, with
    /// the retry's earliest time for a failure (P11's backoff, doubled per attempt, for a file
    /// whose `fail` honours it).
    fn outcome_params(
        &self,
        now: Nanos,
        seen: &Seen,
        mut params: Params,
        outcome: Outcome,
    ) -> (&'static str, Params, Nanos) {
        match outcome {
            Outcome::Success { result } => {
                params.push((
                    "result".into(),
                    Value::Text(format!("{{\"hash\": \"{result:016x}\"}}")),
                ));
                ("commit", params, now)
            }
            Outcome::Failure { error, retryable } => {
                let shift = seen.attempt.saturating_sub(1).min(16);
                let not_before = now + seen.class.retry_backoff_ns.saturating_mul(1 << shift);
                params.extend([
                    (
                        "error".to_string(),
                        Value::Text(format!(
                            "{{\"code\": \"{}\", \"retryable\": {retryable}}}",
                            error_name(error)
                        )),
                    ),
                    ("retryable".into(), Value::Bool(retryable)),
                    (
                        "max_attempts".into(),
                        Value::Int(i64::from(seen.class.max_attempts)),
                    ),
                    (
                        "not_before".into(),
                        Value::Text(self.scale.timestamp(not_before)),
                    ),
                ]);
                ("fail", params, not_before)
            }
        }
    }

    /// The statement of an operator's action and its parameters (`None`: a hand-off to a
    /// human, which no statement expresses).
    fn operator_params(job: JobId, action: OperatorAction) -> Option<(&'static str, Params)> {
        let (name, to) = match action {
            OperatorAction::Revoke => ("revoke", None),
            OperatorAction::Cancel => ("cancel", None),
            OperatorAction::Takeover { to } => ("takeover", Some(to)),
            OperatorAction::HandToHuman | OperatorAction::HumanResolves => return None,
        };
        let mut params = vec![("job_id".to_string(), Value::Text(job_uuid(job)))];
        if let Some(to) = to {
            params.push(("worker_id".into(), Value::Text(worker_id(to))));
        }
        Some((name, params))
    }

    fn seen(&self, job: JobId) -> Option<&Seen> {
        self.jobs.get(job.0 as usize)
    }

    /// The adapter's view of whether `worker` still holds `job` under `token` at `now`.
    fn holds(&self, job: JobId, worker: WorkerName, token: Token, now: Nanos) -> bool {
        self.seen(job).is_some_and(|s| {
            s.state == JobState::Running
                && s.holder == Some(worker)
                && s.token == token
                && s.until.is_some_and(|u| u > now)
        })
    }

    /// Why a request was refused: from the `status` statement when the file has one, else from
    /// what the adapter saw.
    fn reason(
        &mut self,
        now: Nanos,
        job: JobId,
        worker: WorkerName,
        token: Token,
    ) -> RefusalReason {
        if std::mem::take(&mut self.aborted) {
            return RefusalReason::Aborted;
        }
        let status = if self.queue.file.get("status").is_some() && self.seen(job).is_some() {
            let a = self.exec(
                "status",
                now,
                &[("job_id".to_string(), Value::Text(job_uuid(job)))],
            );
            (a.count == 1).then(|| {
                let until = a.get(0, "lease_until").and_then(|t| parse_us(t).ok());
                (
                    a.get(0, "state").unwrap_or_default().to_string(),
                    a.get(0, "owner_id").map(str::to_string),
                    a.get(0, "fencing_token")
                        .and_then(|t| t.parse::<u64>().ok()),
                    until,
                )
            })
        } else {
            None
        };
        match status {
            Some((state, owner, tok, until)) => {
                if state != "running" {
                    RefusalReason::NotRunning
                } else if owner.as_deref() != Some(worker_id(worker).as_str()) {
                    RefusalReason::NotOwner
                } else if tok != Some(token.0) {
                    RefusalReason::StaleToken
                } else if until.is_none_or(|u| u <= self.scale.db_us(now)) {
                    RefusalReason::Expired
                } else {
                    // The row says it holds; the statement refused for a reason of its own.
                    RefusalReason::NotRunning
                }
            }
            None => match self.seen(job) {
                None => RefusalReason::NotRunning,
                Some(s) if s.state != JobState::Running => RefusalReason::NotRunning,
                Some(s) if s.holder != Some(worker) => RefusalReason::NotOwner,
                Some(s) if s.token != token => RefusalReason::StaleToken,
                Some(_) => RefusalReason::Expired,
            },
        }
    }

    fn set_state(&mut self, job: JobId, state: JobState) {
        if let Some(s) = self.jobs.get_mut(job.0 as usize) {
            s.state = state;
            if state != JobState::Running {
                s.until = None;
            }
            if state == JobState::Queued || state == JobState::Cancelled {
                s.holder = None;
            }
        }
        if !state.is_terminal() {
            self.open = self.open.min(job.0 as usize);
        }
    }

    fn claim(&mut self, now: Nanos, worker: WorkerName, client_now: Nanos) -> Option<Grant> {
        // A claim whose statement already ran (stepped) decides with its own answer, even if
        // an operator handed this worker a job meanwhile (the next claim picks that up).
        let claimed = self.ready.as_ref().is_some_and(|r| r.name == "claim");
        if !claimed {
            if let Some(grant) = self.pick_up_handoff(now, worker) {
                return Some(grant);
            }
        }
        let params = self.claim_params(worker, client_now);
        let a = self.exec("claim", now, &params);
        if a.count == 0 || a.rows.is_empty() {
            return None;
        }
        let id = a.get(0, "id").unwrap_or_default();
        let job = job_of(id)
            .filter(|j| (j.0 as usize) < self.jobs.len())
            .unwrap_or_else(|| {
                broken(
                    &self.queue,
                    format!("`claim` returned id `{id}`, which is no job of this run"),
                )
            });
        let token = self.token("claim", &a);
        let until = self.until("claim", &a);
        let attempt = a.get(0, "attempt").and_then(|t| t.parse::<u32>().ok());
        let checkpoint = a.get(0, "checkpoint").and_then(|t| t.parse::<u8>().ok());
        let s = &mut self.jobs[job.0 as usize];
        let took_over = (s.state == JobState::Running).then_some(s.token);
        s.attempt = attempt.unwrap_or(s.attempt + 1);
        s.state = JobState::Running;
        s.holder = Some(worker);
        s.token = token;
        s.until = Some(until);
        if checkpoint.is_some() {
            s.checkpoint = checkpoint;
        }
        let attempt = s.attempt;
        self.open = self.open.min(job.0 as usize);
        self.out.push_back(Output::Journal(Event::LeaseGranted {
            job,
            holder: worker,
            token,
            attempt,
            lease_until: until,
            took_over,
            reason: if took_over.is_some() {
                GrantReason::Expired
            } else {
                GrantReason::Claim
            },
        }));
        Some((job, token, until))
    }

    /// A job an operator handed to this worker: its lease restarts now, by the file's own
    /// `heartbeat` under the new token (as the reference coordinator renews it).
    fn pick_up_handoff(&mut self, now: Nanos, worker: WorkerName) -> Option<Grant> {
        let (&job, _) = self.handoffs.iter().find(|(_, w)| **w == worker)?;
        self.handoffs.remove(&job);
        let token = self.seen(job)?.token;
        let until = self.heartbeat(now, job, worker, token, now)?;
        Some((job, token, until))
    }

    /// Runs `heartbeat`; the new lease end, or `None` (journaled as a refusal).
    fn heartbeat(
        &mut self,
        now: Nanos,
        job: JobId,
        worker: WorkerName,
        token: Token,
        client_now: Nanos,
    ) -> Option<Nanos> {
        let params = self.request(job, worker, token, client_now);
        let a = self.exec("heartbeat", now, &params);
        if a.count == 0 {
            let reason = self.reason(now, job, worker, token);
            self.out.push_back(Output::Journal(Event::HeartbeatRefused {
                job,
                worker,
                token,
                reason,
            }));
            return None;
        }
        let until = self.until("heartbeat", &a);
        if let Some(s) = self.jobs.get_mut(job.0 as usize) {
            s.until = Some(until);
        }
        self.out.push_back(Output::Journal(Event::LeaseRenewed {
            job,
            worker,
            token,
            lease_until: until,
        }));
        Some(until)
    }

    // Long: the statement, its answer and the journal of the decision read as one story.
    fn commit(
        &mut self,
        now: Nanos,
        job: JobId,
        worker: WorkerName,
        token: Token,
        outcome: Outcome,
        client_now: Nanos,
    ) -> bool {
        if self.accepted.get(&(job, worker, token)) == Some(&outcome) {
            // The same commit again: the same answer, and nothing runs.
            return true;
        }
        let Some(seen) = self.seen(job).cloned() else {
            self.out.push_back(Output::Journal(Event::ResultRejected {
                job,
                worker,
                token,
                reason: RefusalReason::NotRunning,
                result_hash: 0,
            }));
            return false;
        };
        let request = self.request(job, worker, token, client_now);
        let (name, params, not_before) = self.outcome_params(now, &seen, request, outcome);
        let a = self.exec(name, now, &params);
        let (result_hash, decided) = match outcome {
            Outcome::Success { result } => (
                result,
                (a.count == 1).then_some((JobState::Succeeded, None)),
            ),
            Outcome::Failure { error, .. } => {
                let decided = (a.count == 1).then(|| match a.get(0, "state") {
                    Some("queued") => (JobState::Queued, Some((error, not_before))),
                    Some("failed") => (JobState::Failed, Some((error, not_before))),
                    other => broken(
                        &self.queue,
                        format!("`fail` returned state {other:?}; leasesim reads `queued` (retried) or `failed` (ended)"),
                    ),
                });
                (0, decided)
            }
        };
        let Some((state, failure)) = decided else {
            let reason = self.reason(now, job, worker, token);
            self.out.push_back(Output::Journal(Event::ResultRejected {
                job,
                worker,
                token,
                reason,
                result_hash,
            }));
            return false;
        };
        self.set_state(job, state);
        let attempt = seen.attempt;
        self.out.push_back(Output::Journal(Event::ResultAccepted {
            job,
            worker,
            token,
            state,
        }));
        match (state, failure) {
            (JobState::Queued, Some((_, not_before))) => {
                // Without `:not_before` the file's claim may take the job again at once.
                let uses = self
                    .queue
                    .file
                    .get("fail")
                    .is_some_and(|st| st.params.iter().any(|(p, _)| p == "not_before"));
                self.out.push_back(Output::Journal(Event::RetryScheduled {
                    job,
                    attempt,
                    not_before: if uses { not_before } else { now },
                }));
            }
            (JobState::Failed, Some((error, _))) => {
                self.out.push_back(Output::Journal(Event::JobFailed {
                    job,
                    error,
                    attempt,
                }));
            }
            _ => {}
        }
        self.accepted.insert((job, worker, token), outcome);
        true
    }

    fn checkpoint(
        &mut self,
        now: Nanos,
        job: JobId,
        worker: WorkerName,
        token: Token,
        step: u8,
    ) -> bool {
        let params = self.checkpoint_params(now, job, worker, token, step);
        let a = self.exec("checkpoint", now, &params);
        if a.count == 0 {
            let reason = self.reason(now, job, worker, token);
            self.out.push_back(Output::Journal(Event::HeartbeatRefused {
                job,
                worker,
                token,
                reason,
            }));
            return false;
        }
        let until = self.until("checkpoint", &a);
        if let Some(s) = self.jobs.get_mut(job.0 as usize) {
            s.until = Some(until);
            s.checkpoint = Some(step);
        }
        self.out.push_back(Output::Journal(Event::CheckpointSaved {
            job,
            worker,
            token,
            step,
            lease_until: until,
        }));
        true
    }

    fn operator(&mut self, now: Nanos, job: JobId, action: OperatorAction) -> bool {
        let Some(seen) = self.seen(job).cloned() else {
            return false;
        };
        let Some((name, params)) = Self::operator_params(job, action) else {
            broken(
                &self.queue,
                "a job handed to a human (P15) is not expressible in SQL; this run should have been skipped".into(),
            )
        };
        let to = match action {
            OperatorAction::Takeover { to } => Some(to),
            _ => None,
        };
        let a = self.exec(name, now, &params);
        if a.count == 0 {
            return false;
        }
        let epoch = self.token(name, &a);
        self.handoffs.remove(&job);
        self.out.push_back(Output::Journal(Event::LeaseRevoked {
            job,
            holder: seen.holder,
            token: seen.token,
            epoch,
            action,
        }));
        match to {
            None => {
                let state = if action == OperatorAction::Cancel {
                    match a.get(0, "state") {
                        Some("queued") => JobState::Queued,
                        Some("running") => JobState::Running,
                        Some("succeeded") => JobState::Succeeded,
                        Some("failed") => JobState::Failed,
                        _ => JobState::Cancelled,
                    }
                } else {
                    JobState::Queued
                };
                self.set_state(job, state);
                if let Some(s) = self.jobs.get_mut(job.0 as usize) {
                    s.token = epoch;
                }
            }
            Some(to) => {
                let until = self.until(name, &a);
                let s = &mut self.jobs[job.0 as usize];
                s.state = JobState::Running;
                s.holder = Some(to);
                s.token = epoch;
                s.until = Some(until);
                s.attempt += 1;
                let attempt = s.attempt;
                self.open = self.open.min(job.0 as usize);
                self.handoffs.insert(job, to);
                self.out.push_back(Output::Journal(Event::LeaseGranted {
                    job,
                    holder: to,
                    token: epoch,
                    attempt,
                    lease_until: until,
                    took_over: Some(seen.token),
                    reason: GrantReason::Operator,
                }));
            }
        }
        true
    }
}

/// The journal's name for a contract statement.
fn statement_of(name: &str) -> StoreStatement {
    match name {
        "enqueue" => StoreStatement::Enqueue,
        "claim" => StoreStatement::Claim,
        "heartbeat" => StoreStatement::Heartbeat,
        "commit" => StoreStatement::Commit,
        "fail" => StoreStatement::Fail,
        "revoke" => StoreStatement::Revoke,
        "takeover" => StoreStatement::Takeover,
        "cancel" => StoreStatement::Cancel,
        "checkpoint" => StoreStatement::Checkpoint,
        _ => StoreStatement::Status,
    }
}

impl CoordinatorMachine for SqlCoordinator {
    fn handle_message(&mut self, now: Nanos, from: u32, msg: Msg) {
        match &mut self.stepper {
            None => {
                self.respond(now, from, msg);
                // A refusal because the store aborted is this request's alone.
                self.aborted = false;
            }
            Some(stepper) => {
                let session = stepper.session_of(&msg);
                stepper
                    .queues
                    .entry(session)
                    .or_default()
                    .push_back(Op::new(from, msg, now));
                self.pump(now);
            }
        }
    }

    fn poll_timeout(&self) -> Option<Nanos> {
        let stepper = self.stepper.as_ref()?;
        stepper
            .queues
            .values()
            .filter_map(|q| q.front())
            .filter(|op| op.waiting.is_none())
            .map(|op| op.due)
            .min()
    }

    fn handle_timeout(&mut self, now: Nanos) {
        if self.stepper.is_some() {
            self.pump(now);
        }
    }

    fn poll_output(&mut self) -> Option<Output> {
        self.out.pop_front()
    }

    fn all_terminal(&self) -> bool {
        self.jobs[self.open.min(self.jobs.len())..]
            .iter()
            .all(|s| s.state.is_terminal())
    }
}

impl SqlCoordinator {
    /// Answers a request: the statement it needs runs now, or its answer is ready from the
    /// steps that ran it ([`SqlCoordinator::ready`]).
    // Long: one arm per request, each the reply its handler decides: a table.
    fn respond(&mut self, now: Nanos, from: u32, msg: Msg) {
        let to = Peer::Addr(from);
        let reply = match msg {
            Msg::Claim {
                req,
                worker,
                client_now,
            } => {
                let grant = match self.claims.get(&from) {
                    Some(&(last, grant)) if last == req => {
                        grant.filter(|&(job, token, _)| self.holds(job, worker, token, now))
                    }
                    _ => {
                        let grant = self.claim(now, worker, client_now);
                        self.claims.insert(from, (req, grant));
                        grant
                    }
                };
                match grant {
                    Some((job, token, until)) => {
                        let s = &self.jobs[job.0 as usize];
                        Msg::ClaimGranted {
                            req,
                            job,
                            token,
                            lease_ns: until.saturating_sub(now),
                            class: s.class_id,
                            checkpoint: s.checkpoint,
                        }
                    }
                    None => Msg::ClaimEmpty { req },
                }
            }
            Msg::Heartbeat {
                req,
                job,
                worker,
                token,
                client_now,
                ..
            } => match self.heartbeat(now, job, worker, token, client_now) {
                Some(until) => Msg::HeartbeatOk {
                    req,
                    job,
                    token,
                    lease_ns: until.saturating_sub(now),
                },
                None => Msg::HeartbeatRejected { req, job, token },
            },
            Msg::Commit {
                req,
                job,
                worker,
                token,
                outcome,
                client_now,
            } => {
                if self.commit(now, job, worker, token, outcome, client_now) {
                    Msg::CommitAccepted { req, job, token }
                } else {
                    Msg::CommitRejected { req, job, token }
                }
            }
            Msg::Checkpoint {
                req,
                job,
                worker,
                token,
                step,
            } => Msg::CheckpointAck {
                req,
                job,
                token,
                saved: self.checkpoint(now, job, worker, token, step),
            },
            Msg::Operator { req, job, action } => Msg::OperatorDone {
                req,
                job,
                applied: self.operator(now, job, action),
            },
            _ => return,
        };
        self.out.push_back(Output::Send { to, msg: reply });
    }
}

/// Most simulated time between two statements of one operation: a client's round trip and
/// its own work between them. The seed draws each gap in `0..=STEP_GAP_MAX_NS`.
pub const STEP_GAP_MAX_NS: Nanos = 20 * leasesim_protocol::MILLI_NS;

/// Most steps one call runs (every operation's steps are few; a run's are bounded by its
/// inputs).
const PUMP_MAX: usize = 100_000;

/// Whose connection an operation runs on.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum SessionKey {
    Worker(WorkerName),
    Operator,
}

/// The operations of a run, step by step, one session per worker.
struct Stepper {
    /// splitmix64 state, from the run's seed.
    rng: u64,
    /// Session index of each key, in order of first use.
    keys: Vec<SessionKey>,
    /// Operations waiting or running, per session, in arrival order.
    queues: BTreeMap<usize, VecDeque<Op>>,
    /// A step ended since blocked steps were last sent again.
    retry: bool,
}

impl Stepper {
    fn new(seed: u64) -> Stepper {
        Stepper {
            rng: seed,
            keys: Vec::new(),
            queues: BTreeMap::new(),
            retry: false,
        }
    }

    fn session_of(&mut self, msg: &Msg) -> usize {
        let key = match *msg {
            Msg::Claim { worker, .. }
            | Msg::Heartbeat { worker, .. }
            | Msg::Commit { worker, .. }
            | Msg::Checkpoint { worker, .. } => SessionKey::Worker(worker),
            _ => SessionKey::Operator,
        };
        match self.keys.iter().position(|k| *k == key) {
            Some(i) => i,
            None => {
                self.keys.push(key);
                self.keys.len() - 1
            }
        }
    }

    /// The gap before an operation's next statement.
    fn gap(&mut self) -> Nanos {
        self.rng = self.rng.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.rng;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^= z >> 31;
        z % (STEP_GAP_MAX_NS + 1)
    }
}

/// One request's operation: its statement's steps, run one at a time.
struct Op {
    from: u32,
    msg: Msg,
    /// Planned: the statement and its parameters (`None` before it starts).
    plan: Option<(&'static str, Params)>,
    /// Its steps so far: the next one, the columns carried, the answer.
    cursor: Cursor,
    due: Nanos,
    /// Waiting on a lock since then.
    waiting: Option<Nanos>,
    failure: Option<(u8, StoreFailure)>,
    /// When the current step was first sent, on the simulated clock.
    issued: Nanos,
    /// The session whose open transaction holds the lock the current step needs: the step
    /// is sent again when a step anywhere ends.
    blocked_on: Option<usize>,
}

impl Op {
    fn new(from: u32, msg: Msg, now: Nanos) -> Op {
        Op {
            from,
            msg,
            plan: None,
            cursor: Cursor::new(true),
            due: now,
            waiting: None,
            failure: None,
            issued: now,
            blocked_on: None,
        }
    }
}

/// A stepped operation's outcome, for the handler.
struct Ready {
    name: &'static str,
    answer: Answer,
    failure: Option<(u8, StoreFailure)>,
}

impl SqlCoordinator {
    fn stepper(&mut self) -> &mut Stepper {
        self.stepper.as_mut().expect("stepped")
    }

    fn head(&mut self, session: usize) -> &mut Op {
        self.stepper()
            .queues
            .get_mut(&session)
            .and_then(|q| q.front_mut())
            .expect("an operation at the head")
    }

    /// Runs every step that is due at `now`, in order of (due time, session), and what they
    /// unblock.
    fn pump(&mut self, now: Nanos) {
        for _ in 0..PUMP_MAX {
            if std::mem::take(&mut self.stepper().retry) {
                self.retry_blocked(now);
                continue;
            }
            let next = self
                .stepper()
                .queues
                .iter()
                .filter_map(|(&i, q)| q.front().map(|op| (op.due, i, op.waiting.is_some())))
                .filter(|&(due, _, waiting)| due <= now && !waiting)
                .min();
            let Some((_, session, _)) = next else {
                return;
            };
            self.start_step(session, now);
        }
        broken(&self.queue, "a run's statements did not settle".into());
    }

    /// Plans the head operation of `session` if it has not started, then sends its next step
    /// (the step engine's [`steps::send`]) and follows what it did.
    fn start_step(&mut self, session: usize, now: Nanos) {
        if self.head(session).plan.is_none() {
            let (from, msg) = {
                let op = self.head(session);
                (op.from, op.msg)
            };
            match self.plan(now, from, &msg) {
                Some(plan) => self.head(session).plan = Some(plan),
                None => {
                    // Answered without a statement (a repeated request): as the reference.
                    self.stepper()
                        .queues
                        .get_mut(&session)
                        .map(VecDeque::pop_front);
                    self.respond(now, from, msg);
                    self.next_due(session, now);
                    return;
                }
            }
        }
        let queue = self.queue.clone();
        let now_us = self.scale.db_us(now);
        if self.head(session).waiting.is_none() {
            self.head(session).issued = now;
        }
        let conn = self.conn.as_mut().expect("a connection");
        let op = self
            .stepper
            .as_mut()
            .and_then(|s| s.queues.get_mut(&session))
            .and_then(|q| q.front_mut())
            .expect("an operation at the head");
        let (name, values) = op.plan.as_ref().expect("planned");
        let st = queue.file.get(name).expect("checked at open");
        let step = op.cursor.step();
        let stepped = steps::send(conn, session, &mut op.cursor, st, values, now_us)
            .unwrap_or_else(|e| broken(&queue, e));
        match stepped {
            Stepped::Blocked(by) => self.blocked(session, by, now),
            Stepped::Stopped(failure) => self.stop_early(session, failure, now),
            answered => self.step_done(session, step, answered, now),
        }
    }

    /// The step `session` sent waited on a lock, and the engine cancelled and undid it: the
    /// operation is marked as blocked by the session that holds the lock, and the step is sent
    /// again, alone, after the next step anywhere ends. A cycle of blocked operations is a
    /// deadlock: the operation that closed it is aborted.
    fn blocked(&mut self, session: usize, by: usize, now: Nanos) {
        let op = self.head(session);
        op.waiting.get_or_insert(now);
        op.blocked_on = Some(by);
        let sessions = self.conn.as_mut().expect("a connection").sessions().len();
        let stepper = self.stepper();
        let cycle = steps::closes_cycle(session, by, sessions, |at| {
            stepper
                .queues
                .get(&at)
                .and_then(|q| q.front())
                .and_then(|op| op.blocked_on)
        });
        if cycle {
            self.deadlock(session, now);
        }
    }

    /// The operation of `session` closed a cycle of waits: it is aborted (its transaction
    /// rolled back), as a server's deadlock detector would, and always this one.
    fn deadlock(&mut self, session: usize, now: Nanos) {
        let queue = self.queue.clone();
        let conn = self.conn.as_mut().expect("a connection");
        let op = self
            .stepper
            .as_mut()
            .and_then(|s| s.queues.get_mut(&session))
            .and_then(|q| q.front_mut())
            .expect("an operation at the head");
        let (name, _) = op.plan.as_ref().expect("planned");
        let st = queue.file.get(name).expect("checked at open");
        let step = op.cursor.step();
        let stepped = conn
            .session(session)
            .and_then(|s| op.cursor.abort(st, s))
            .unwrap_or_else(|e| broken(&queue, e));
        self.step_done(session, step, stepped, now);
    }

    /// Sends again, one at a time in session order, every step blocked by a lock, until none
    /// goes on.
    fn retry_blocked(&mut self, now: Nanos) {
        let blocked: Vec<usize> = self
            .stepper()
            .queues
            .iter()
            .filter(|(_, q)| q.front().is_some_and(|op| op.blocked_on.is_some()))
            .map(|(&i, _)| i)
            .collect();
        for session in blocked {
            if self.stepper().retry {
                // A step ended: start over, in session order.
                return;
            }
            self.head(session).blocked_on = None;
            self.start_step(session, now);
        }
    }

    /// Step `step` of the head operation of `session` answered (it ran, was the last, or its
    /// transaction was aborted): it is journaled, and the next step is due after a gap, or the
    /// operation is done.
    fn step_done(&mut self, session: usize, step: usize, stepped: Stepped, now: Nanos) {
        let queue = self.queue.clone();
        let (name, waited, issued) = {
            let op = self.head(session);
            (
                op.plan.as_ref().expect("planned").0,
                op.waiting.take(),
                op.issued,
            )
        };
        let steps_n = queue.file.get(name).expect("checked").each_step().len();
        let connection = match self.stepper().keys.get(session) {
            Some(SessionKey::Worker(w)) => Connection::Worker(w.0),
            _ => Connection::Operator,
        };
        self.out
            .push_back(Output::Journal(Event::Store(StoreEvent::Step {
                statement: statement_of(name),
                step: step.min(255) as u8,
                steps: steps_n.min(255) as u8,
                connection,
                issued,
            })));
        if let Some(since) = waited {
            self.out
                .push_back(Output::Journal(Event::Store(StoreEvent::Waited {
                    statement: statement_of(name),
                    step: step.min(255) as u8,
                    waited: now.saturating_sub(since),
                })));
        }
        match stepped {
            Stepped::Aborted(failure) => {
                self.head(session).failure = Some((step.min(255) as u8, failure));
                self.finish(session, now);
            }
            done_or_ran => {
                // Drawn for every step that ran, the last one too: the seed's gaps stay put.
                let gap = self.stepper().gap();
                if done_or_ran == Stepped::Done {
                    self.finish(session, now);
                } else {
                    self.head(session).due = now + gap;
                }
            }
        }
        self.stepper().retry = true;
    }

    /// An earlier step found no row that a later one needs: the operation ends with no row
    /// (the engine committed its open transaction, as a client that found nothing would, or
    /// the server aborted that commit).
    fn stop_early(&mut self, session: usize, failure: Option<StoreFailure>, now: Nanos) {
        let op = self.head(session);
        if let Some(f) = failure {
            op.failure = Some((op.cursor.step().min(255) as u8, f));
        }
        self.finish(session, now);
        self.stepper().retry = true;
    }

    /// The operation at the head of `session` is done: its request is answered now.
    fn finish(&mut self, session: usize, now: Nanos) {
        let mut op = self
            .stepper()
            .queues
            .get_mut(&session)
            .and_then(VecDeque::pop_front)
            .expect("an operation");
        let (name, _) = op.plan.expect("planned");
        self.ready = Some(Ready {
            name,
            answer: op.cursor.take_answer(),
            failure: op.failure,
        });
        self.respond(now, op.from, op.msg);
        self.ready = None;
        self.aborted = false;
        self.next_due(session, now);
    }

    /// The next operation of `session`, if any, starts now.
    fn next_due(&mut self, session: usize, now: Nanos) {
        if let Some(op) = self
            .stepper()
            .queues
            .get_mut(&session)
            .and_then(|q| q.front_mut())
        {
            op.due = op.due.max(now);
        }
    }

    /// The statement a request needs and its parameters, or `None` when it is answered without
    /// one: the same parameters the handlers pass, decided before the steps run.
    fn plan(&self, now: Nanos, from: u32, msg: &Msg) -> Option<(&'static str, Params)> {
        match *msg {
            Msg::Claim {
                req,
                worker,
                client_now,
            } => {
                if self.claims.get(&from).is_some_and(|&(last, _)| last == req) {
                    return None;
                }
                if let Some((&job, _)) = self.handoffs.iter().find(|(_, w)| **w == worker) {
                    let token = self.seen(job)?.token;
                    return Some(("heartbeat", self.request(job, worker, token, now)));
                }
                Some(("claim", self.claim_params(worker, client_now)))
            }
            Msg::Heartbeat {
                job,
                worker,
                token,
                client_now,
                ..
            } => Some(("heartbeat", self.request(job, worker, token, client_now))),
            Msg::Commit {
                job,
                worker,
                token,
                outcome,
                client_now,
                ..
            } => {
                if self.accepted.get(&(job, worker, token)) == Some(&outcome) {
                    return None;
                }
                let seen = self.seen(job)?;
                let request = self.request(job, worker, token, client_now);
                let (name, params, _) = self.outcome_params(now, seen, request, outcome);
                Some((name, params))
            }
            Msg::Checkpoint {
                job,
                worker,
                token,
                step,
                ..
            } => Some((
                "checkpoint",
                self.checkpoint_params(now, job, worker, token, step),
            )),
            Msg::Operator { job, action, .. } => {
                self.seen(job)?;
                Self::operator_params(job, action)
            }
            _ => None,
        }
    }
}
