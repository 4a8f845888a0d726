//! My coordinator: an in-memory lease table, the only judge of who holds a job.
//!
//! Each row is what a `jobs` table in a database would hold. Every decision is a single step on
//! that row, judged by the coordinator's own clock only (the `client_now` workers send along is
//! ignored):
//!
//! - **claim**: the first job that is queued (its retry backoff over, its class under capacity)
//!   or running with an expired lease; token + 1, attempt + 1, lease from the job's class;
//! - **heartbeat**, **checkpoint** and **commit**: only for the running job's current holder and
//!   token, before the lease ends; a heartbeat past the class's renewal cap fails the job;
//! - **operator actions**: revoke, cancel, hand to another worker or to a human, all through a
//!   new token and a journaled reason.
//!
//! A request repeated on the wire gets its first answer again: a repeated claim the same grant,
//! a repeated commit the same acceptance.

use leasesim_protocol::{
    ClassSpec, CoordinatorMachine, ErrorCode, Event, GrantReason, JobId, JobSpec, JobState, Msg,
    Nanos, OperatorAction, Outcome, Output, Peer, RefusalReason, Token, WorkerName, HUMAN,
    SECOND_NS,
};
use std::collections::{BTreeMap, VecDeque};

/// How long a human holds a job handed to them.
pub const HUMAN_HOLD_NS: Nanos = 3_600 * SECOND_NS;

/// One row of the lease table.
#[derive(Clone, Debug)]
struct Row {
    class: usize,
    state: JobState,
    holder: Option<WorkerName>,
    token: Token,
    expires: Option<Nanos>,
    attempts: u32,
    /// The renewal cap counts from here (the first claim, or the last checkpoint).
    cap_from: Option<Nanos>,
    checkpoint: Option<u8>,
    /// A retry waits until then.
    not_before: Option<Nanos>,
    result: Option<u64>,
    error: Option<ErrorCode>,
}

/// What I remember of each grant: who, which token, why, and every renewal.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Grant {
    /// The job.
    pub job: JobId,
    /// Who got it.
    pub holder: WorkerName,
    /// Its token.
    pub token: Token,
    /// When, on my clock.
    pub issued_at: Nanos,
    /// Why.
    pub reason: GrantReason,
    /// The token it replaced, if any.
    pub took_over: Option<Token>,
    /// Every renewal, on my clock.
    pub renewals: Vec<Nanos>,
    /// Whether the holder said it was in jeopardy at its last heartbeat.
    pub holder_in_jeopardy: bool,
    /// The effects the holder said it had attempted, at its last heartbeat.
    pub effects_attempted: u16,
}

/// A holder's request: who sent it (and gets the answer), its number, and the job, worker and
/// token it is made under.
#[derive(Copy, Clone)]
struct Asked {
    from: u32,
    req: u64,
    job: JobId,
    worker: WorkerName,
    token: Token,
}

impl Asked {
    fn new(from: u32, req: u64, job: JobId, worker: WorkerName, token: Token) -> Asked {
        Asked {
            from,
            req,
            job,
            worker,
            token,
        }
    }
}

/// The coordinator.
#[derive(Clone, Debug)]
pub struct Coordinator {
    classes: Vec<ClassSpec>,
    rows: Vec<Row>,
    grants: Vec<Grant>,
    /// Jobs an operator handed to a worker, waiting for its next claim.
    handed: BTreeMap<JobId, WorkerName>,
    /// Each sender's last claim and what it got.
    last_claim: BTreeMap<u32, (u64, Option<(JobId, Token)>)>,
    /// Accepted commits, so that a repeated one gets the same answer.
    accepted: BTreeMap<(JobId, Token), (WorkerName, Outcome)>,
    out: VecDeque<Output>,
}

impl Coordinator {
    /// A table of `jobs`, all queued; job ids are positions in `jobs`.
    pub fn new(classes: Vec<ClassSpec>, jobs: &[JobSpec]) -> Self {
        assert!(
            jobs.iter().all(|j| usize::from(j.class.0) < classes.len()),
            "every job needs a known class"
        );
        let rows = jobs
            .iter()
            .map(|j| Row {
                class: usize::from(j.class.0),
                state: JobState::Queued,
                holder: None,
                token: Token(0),
                expires: None,
                attempts: 0,
                cap_from: None,
                checkpoint: None,
                not_before: None,
                result: None,
                error: None,
            })
            .collect();
        Coordinator {
            classes,
            rows,
            grants: Vec::new(),
            handed: BTreeMap::new(),
            last_claim: BTreeMap::new(),
            accepted: BTreeMap::new(),
            out: VecDeque::new(),
        }
    }

    /// Every grant so far, oldest first.
    pub fn grants(&self) -> &[Grant] {
        &self.grants
    }

    /// What a status page would show of a job: its state, its accepted result's hash, and the
    /// last error reported.
    pub fn status(&self, job: JobId) -> Option<(JobState, Option<u64>, Option<ErrorCode>)> {
        self.rows
            .get(job.0 as usize)
            .map(|r| (r.state, r.result, r.error))
    }

    fn log(&mut self, e: Event) {
        self.out.push_back(Output::Journal(e));
    }

    fn reply(&mut self, to: u32, msg: Msg) {
        self.out.push_back(Output::Send {
            to: Peer::Addr(to),
            msg,
        });
    }

    fn lease_of(&self, job: JobId) -> Nanos {
        self.classes[self.rows[job.0 as usize].class].lease_ns
    }

    /// The conditions every holder's request must meet: running, its holder, its token, and a
    /// lease that has not ended by my clock.
    fn check(
        &self,
        job: JobId,
        now: Nanos,
        worker: WorkerName,
        token: Token,
    ) -> Result<(), RefusalReason> {
        let Some(row) = self.rows.get(job.0 as usize) else {
            return Err(RefusalReason::NotRunning);
        };
        if row.state != JobState::Running {
            Err(RefusalReason::NotRunning)
        } else if row.holder != Some(worker) {
            Err(RefusalReason::NotOwner)
        } else if row.token != token {
            Err(RefusalReason::StaleToken)
        } else if row.expires.is_none_or(|t| t <= now) {
            Err(RefusalReason::Expired)
        } else {
            Ok(())
        }
    }

    fn grant_mut(&mut self, job: JobId, token: Token) -> Option<&mut Grant> {
        self.grants
            .iter_mut()
            .rev()
            .find(|g| g.job == job && g.token == token)
    }

    /// Extends the current lease from now.
    fn extend(&mut self, now: Nanos, job: JobId, worker: WorkerName, token: Token) -> Nanos {
        let lease = self.lease_of(job);
        self.rows[job.0 as usize].expires = Some(now + lease);
        if let Some(g) = self.grant_mut(job, token) {
            g.renewals.push(now);
        }
        self.log(Event::LeaseRenewed {
            job,
            worker,
            token,
            lease_until: now + lease,
        });
        lease
    }

    // ---- claim ----

    fn running_in_class(&self, class: usize) -> u32 {
        self.rows
            .iter()
            .filter(|r| r.class == class && r.state == JobState::Running)
            .count() as u32
    }

    fn admitted(&self, class: usize) -> bool {
        self.classes[class]
            .capacity
            .is_none_or(|cap| self.running_in_class(class) < cap)
    }

    /// The job a claim gets now, if any.
    fn pick(&self, now: Nanos) -> Option<JobId> {
        let found = self.rows.iter().position(|r| match r.state {
            JobState::Queued => r.not_before.is_none_or(|t| t <= now) && self.admitted(r.class),
            JobState::Running => r.expires.is_some_and(|t| t < now),
            _ => false,
        })?;
        Some(JobId(found as u32))
    }

    fn claim(&mut self, now: Nanos, worker: WorkerName) -> Option<(JobId, Token)> {
        if let Some(got) = self.pick_up_handoff(now, worker) {
            return Some(got);
        }
        let Some(job) = self.pick(now) else {
            self.note_deferred(now);
            return None;
        };
        let lease = self.lease_of(job);
        let row = &mut self.rows[job.0 as usize];
        let took_over = (row.state == JobState::Running).then_some(row.token);
        let reason = if took_over.is_some() {
            GrantReason::Expired
        } else {
            GrantReason::Claim
        };
        row.token = Token(row.token.0 + 1);
        row.state = JobState::Running;
        row.holder = Some(worker);
        row.expires = Some(now + lease);
        row.attempts += 1;
        row.not_before = None;
        row.cap_from.get_or_insert(now);
        let (token, attempt) = (row.token, row.attempts);
        self.grants.push(Grant {
            job,
            holder: worker,
            token,
            issued_at: now,
            reason,
            took_over,
            renewals: Vec::new(),
            holder_in_jeopardy: false,
            effects_attempted: 0,
        });
        self.log(Event::LeaseGranted {
            job,
            holder: worker,
            token,
            attempt,
            lease_until: now + lease,
            took_over,
            reason,
        });
        Some((job, token))
    }

    /// Admission: if a queued job waits only because its class is full, say so.
    fn note_deferred(&mut self, now: Nanos) {
        let waiting = self.rows.iter().enumerate().find(|(_, r)| {
            r.state == JobState::Queued
                && r.not_before.is_none_or(|t| t <= now)
                && !self.admitted(r.class)
        });
        if let Some((i, r)) = waiting {
            let e = Event::AdmissionDeferred {
                job: JobId(i as u32),
                running: self.running_in_class(r.class),
                capacity: self.classes[r.class].capacity.unwrap_or(0),
            };
            self.log(e);
        }
    }

    /// A job handed to this worker by an operator: its lease starts over now, when the worker
    /// actually picks it up.
    fn pick_up_handoff(&mut self, now: Nanos, worker: WorkerName) -> Option<(JobId, Token)> {
        let job = self
            .handed
            .iter()
            .find(|(_, w)| **w == worker)
            .map(|(j, _)| *j)?;
        self.handed.remove(&job);
        let token = self.rows[job.0 as usize].token;
        self.check(job, now, worker, token).ok()?;
        self.extend(now, job, worker, token);
        Some((job, token))
    }

    fn on_claim(&mut self, now: Nanos, from: u32, req: u64, worker: WorkerName) {
        let got = match self.last_claim.get(&from) {
            // The same request again: the same answer, if it still stands.
            Some(&(last, got)) if last == req => {
                got.filter(|&(job, token)| self.check(job, now, worker, token).is_ok())
            }
            _ => {
                let got = self.claim(now, worker);
                self.last_claim.insert(from, (req, got));
                got
            }
        };
        let msg = match got {
            Some((job, token)) => {
                let row = &self.rows[job.0 as usize];
                Msg::ClaimGranted {
                    req,
                    job,
                    token,
                    lease_ns: self.classes[row.class].lease_ns,
                    class: leasesim_protocol::ClassId(row.class as u8),
                    checkpoint: row.checkpoint,
                }
            }
            None => Msg::ClaimEmpty { req },
        };
        self.reply(from, msg);
    }

    // ---- holder requests ----

    fn on_heartbeat(&mut self, now: Nanos, asked: Asked, in_jeopardy: bool, effects: u16) {
        let Asked {
            from,
            req,
            job,
            worker,
            token,
        } = asked;
        let mut verdict = self.check(job, now, worker, token);
        if verdict.is_ok() {
            let row = &self.rows[job.0 as usize];
            let cap = self.classes[row.class].renewal_cap_ns;
            let since = row.cap_from.unwrap_or(now);
            if now.saturating_sub(since) >= cap {
                // Endless work must become stages: the job fails, for this reason.
                let row = &mut self.rows[job.0 as usize];
                row.state = JobState::Failed;
                row.error = Some(ErrorCode::RenewalCap);
                row.expires = None;
                self.log(Event::RenewalCapReached {
                    job,
                    token,
                    first_claimed_at: since,
                });
                verdict = Err(RefusalReason::RenewalCap);
            }
        }
        let msg = match verdict {
            Ok(()) => {
                let lease = self.extend(now, job, worker, token);
                if let Some(g) = self.grant_mut(job, token) {
                    g.holder_in_jeopardy = in_jeopardy;
                    g.effects_attempted = effects;
                }
                Msg::HeartbeatOk {
                    req,
                    job,
                    token,
                    lease_ns: lease,
                }
            }
            Err(reason) => {
                self.log(Event::HeartbeatRefused {
                    job,
                    worker,
                    token,
                    reason,
                });
                Msg::HeartbeatRejected { req, job, token }
            }
        };
        self.reply(from, msg);
    }

    fn on_checkpoint(&mut self, now: Nanos, asked: Asked, step: u8) {
        let Asked {
            from,
            req,
            job,
            worker,
            token,
        } = asked;
        let saved = match self.check(job, now, worker, token) {
            Ok(()) => {
                let lease = self.lease_of(job);
                let row = &mut self.rows[job.0 as usize];
                row.checkpoint = Some(step);
                row.expires = Some(now + lease);
                // A new stage: a fresh lease, and the renewal cap counts again.
                row.cap_from = Some(now);
                if let Some(g) = self.grant_mut(job, token) {
                    g.renewals.push(now);
                }
                self.log(Event::CheckpointSaved {
                    job,
                    worker,
                    token,
                    step,
                    lease_until: now + lease,
                });
                true
            }
            Err(reason) => {
                self.log(Event::HeartbeatRefused {
                    job,
                    worker,
                    token,
                    reason,
                });
                false
            }
        };
        self.reply(
            from,
            Msg::CheckpointAck {
                req,
                job,
                token,
                saved,
            },
        );
    }

    fn on_commit(&mut self, now: Nanos, asked: Asked, outcome: Outcome) {
        let Asked {
            from,
            req,
            job,
            worker,
            token,
        } = asked;
        let accepted = if self.accepted.get(&(job, token)) == Some(&(worker, outcome)) {
            // Asked and answered already.
            true
        } else {
            match self.check(job, now, worker, token) {
                Ok(()) => {
                    self.settle(now, job, worker, token, outcome);
                    true
                }
                Err(reason) => {
                    // Kept for whoever investigates; never applied.
                    let result_hash = match outcome {
                        Outcome::Success { result } => result,
                        Outcome::Failure { .. } => 0,
                    };
                    self.log(Event::ResultRejected {
                        job,
                        worker,
                        token,
                        reason,
                        result_hash,
                    });
                    false
                }
            }
        };
        let msg = if accepted {
            Msg::CommitAccepted { req, job, token }
        } else {
            Msg::CommitRejected { req, job, token }
        };
        self.reply(from, msg);
    }

    /// Applies an accepted outcome: success, a retry after a backoff, or a final failure.
    fn settle(
        &mut self,
        now: Nanos,
        job: JobId,
        worker: WorkerName,
        token: Token,
        outcome: Outcome,
    ) {
        let row = &self.rows[job.0 as usize];
        let class = &self.classes[row.class];
        let (limit, backoff) = (class.max_attempts, class.retry_backoff_ns);
        let row = &mut self.rows[job.0 as usize];
        row.expires = None;
        let mut follow_up = None;
        match outcome {
            Outcome::Success { result } => {
                row.state = JobState::Succeeded;
                row.result = Some(result);
            }
            Outcome::Failure { error, retryable } => {
                row.error = Some(error);
                if retryable && row.attempts < limit {
                    // Twice as long before each further attempt.
                    let doublings = row.attempts.saturating_sub(1).min(16);
                    let at = now + backoff.saturating_mul(1 << doublings);
                    row.state = JobState::Queued;
                    row.holder = None;
                    row.not_before = Some(at);
                    follow_up = Some(Event::RetryScheduled {
                        job,
                        attempt: row.attempts,
                        not_before: at,
                    });
                } else {
                    row.state = JobState::Failed;
                    follow_up = Some(Event::JobFailed {
                        job,
                        error,
                        attempt: row.attempts,
                    });
                }
            }
        }
        let state = row.state;
        self.log(Event::ResultAccepted {
            job,
            worker,
            token,
            state,
        });
        if let Some(e) = follow_up {
            self.log(e);
        }
        self.accepted.insert((job, token), (worker, outcome));
    }

    // ---- operators ----

    fn on_operator(&mut self, now: Nanos, job: JobId, action: OperatorAction) -> bool {
        let Some(row) = self.rows.get(job.0 as usize) else {
            return false;
        };
        if action == OperatorAction::HumanResolves {
            return self.human_resolves(now, job);
        }
        let nothing_to_end = row.state.is_terminal()
            || (row.state == JobState::Queued && action == OperatorAction::Revoke);
        if nothing_to_end {
            return false;
        }
        let lease = self.lease_of(job);
        let row = &mut self.rows[job.0 as usize];
        let (old, previous_holder) = (row.token, row.holder);
        let epoch = Token(old.0 + 1);
        row.token = epoch;
        row.expires = None;
        self.handed.remove(&job);
        let successor = match action {
            OperatorAction::Revoke => {
                row.state = JobState::Queued;
                row.holder = None;
                None
            }
            OperatorAction::Cancel => {
                row.state = JobState::Cancelled;
                row.holder = None;
                None
            }
            OperatorAction::Takeover { to } => Some((to, lease)),
            OperatorAction::HandToHuman => Some((HUMAN, HUMAN_HOLD_NS)),
            OperatorAction::HumanResolves => None,
        };
        self.log(Event::LeaseRevoked {
            job,
            holder: previous_holder,
            token: old,
            epoch,
            action,
        });
        if let Some((to, length)) = successor {
            self.hand_over(now, job, to, length, old);
        }
        true
    }

    /// The human finishes the job handed to them, under their own lease.
    fn human_resolves(&mut self, now: Nanos, job: JobId) -> bool {
        let token = self.rows[job.0 as usize].token;
        if self.check(job, now, HUMAN, token).is_err() {
            return false;
        }
        let row = &mut self.rows[job.0 as usize];
        row.state = JobState::Succeeded;
        row.expires = None;
        self.log(Event::ResultAccepted {
            job,
            worker: HUMAN,
            token,
            state: JobState::Succeeded,
        });
        true
    }

    /// The operator grants the job to `to` for `length`, under the token after `old` (the row
    /// holds it already).
    fn hand_over(&mut self, now: Nanos, job: JobId, to: WorkerName, length: Nanos, old: Token) {
        let row = &mut self.rows[job.0 as usize];
        let epoch = row.token;
        row.state = JobState::Running;
        row.holder = Some(to);
        row.expires = Some(now + length);
        row.attempts += 1;
        let attempt = row.attempts;
        if to != HUMAN {
            self.handed.insert(job, to);
        }
        self.grants.push(Grant {
            job,
            holder: to,
            token: epoch,
            issued_at: now,
            reason: GrantReason::Operator,
            took_over: Some(old),
            renewals: Vec::new(),
            holder_in_jeopardy: false,
            effects_attempted: 0,
        });
        self.log(Event::LeaseGranted {
            job,
            holder: to,
            token: epoch,
            attempt,
            lease_until: now + length,
            took_over: Some(old),
            reason: GrantReason::Operator,
        });
    }
}

impl CoordinatorMachine for Coordinator {
    fn handle_message(&mut self, now: Nanos, from: u32, msg: Msg) {
        match msg {
            Msg::Claim { req, worker, .. } => self.on_claim(now, from, req, worker),
            Msg::Heartbeat {
                req,
                job,
                worker,
                token,
                in_jeopardy,
                effects_attempted,
                ..
            } => {
                let asked = Asked::new(from, req, job, worker, token);
                self.on_heartbeat(now, asked, in_jeopardy, effects_attempted)
            }
            Msg::Checkpoint {
                req,
                job,
                worker,
                token,
                step,
            } => self.on_checkpoint(now, Asked::new(from, req, job, worker, token), step),
            Msg::Commit {
                req,
                job,
                worker,
                token,
                outcome,
                ..
            } => self.on_commit(now, Asked::new(from, req, job, worker, token), outcome),
            Msg::Operator { req, job, action } => {
                let applied = self.on_operator(now, job, action);
                self.reply(from, Msg::OperatorDone { req, job, applied });
            }
            // Anything else is not a request this service takes.
            _ => {}
        }
    }

    fn poll_output(&mut self) -> Option<Output> {
        self.out.pop_front()
    }

    fn all_terminal(&self) -> bool {
        self.rows.iter().all(|r| r.state.is_terminal())
    }
}
