//! The coordinator: the job table and its lease records. Its clock is the only arbiter of lease
//! time (P3). It owns claim, conditional heartbeat and conditional commit; it never reads a
//! client's clock, never extends a lease it cannot justify, and never applies a refused result.

use crate::outbox::{Outbox, KEPT_MAX};
use crate::types::*;
use crate::variant::Switches;
use leasesim_sorted::SortedMap;
use serde::{Deserialize, Serialize};

/// A job class: the lease length lives here, on the coordinator, never in the payload (P7).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClassSpec {
    /// Lease length L on the coordinator's clock.
    pub lease_ns: Nanos,
    /// Attempts after which a failed job is not re-queued (P11).
    pub max_attempts: u32,
    /// Hard cap on total lease time from the first claim (P7; SQS caps at 12 h): endless work
    /// must become stages. A checkpoint starts the count again for the next stage.
    pub renewal_cap_ns: Nanos,
    /// Admission (P16): most jobs of this class running at once (`None`: no limit).
    #[serde(default)]
    pub capacity: Option<u32>,
    /// Backoff before a transient failure's retry (P11): doubled per attempt.
    #[serde(default)]
    pub retry_backoff_ns: Nanos,
}

/// A job as it is enqueued.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobSpec {
    /// The job's class.
    pub class: ClassId,
    /// Hash of the payload; the payload text never enters the protocol state (P18).
    pub payload_hash: u64,
    /// A lease length the payload asks for (the model chose it). The reference ignores it
    /// (P7); a known-bad variant obeys it (V13).
    #[serde(default)]
    pub payload_lease_ns: Option<Nanos>,
}

/// One row of the job table, every field of P1.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobRow {
    /// The job id.
    pub id: JobId,
    /// The class.
    pub class: ClassId,
    /// The state; lease and state are separate facts.
    pub state: JobState,
    /// Who holds or last held the lease.
    pub owner: Option<WorkerName>,
    /// Lease expiry on the coordinator's clock.
    pub lease_until: Option<Nanos>,
    /// The current fencing token (0 before the first claim).
    pub token: Token,
    /// The last accepted heartbeat.
    pub heartbeat_at: Option<Nanos>,
    /// Attempts so far.
    pub attempt: u32,
    /// The job's unique idempotency key.
    pub idem_key: IdemKey,
    /// Hash of the payload.
    pub payload_hash: u64,
    /// Hash of the accepted result.
    pub result: Option<u64>,
    /// The last reported error.
    pub error: Option<ErrorCode>,
    /// When the job was first claimed (the renewal cap runs from here, P7).
    pub first_claimed_at: Option<Nanos>,
    /// When the current attempt was claimed (the `running` status's age).
    pub started_at: Option<Nanos>,
    /// The lease length the payload asks for (ignored by the reference, P7).
    pub payload_lease_ns: Option<Nanos>,
    /// The last persisted checkpoint: the plan step that ended a stage (P17).
    pub checkpoint: Option<u8>,
    /// A retry waits until this coordinator time (P11 backoff).
    pub not_before: Option<Nanos>,
}

/// One lease record per grant (P2): protocol state, not an audit nicety.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LeaseRecord {
    /// The job.
    pub job: JobId,
    /// The holder.
    pub holder: WorkerName,
    /// The fencing epoch of this grant.
    pub token: Token,
    /// When it was issued, on the coordinator's clock.
    pub issued_at: Nanos,
    /// Every renewal, on the coordinator's clock, with the holder's certainty as it reported
    /// it and the effects it had attempted by then.
    pub renewals: Vec<Renewal>,
    /// The expiry rule: lease length from the class.
    pub lease_ns: Nanos,
    /// The lease this grant took over, if any.
    pub took_over: Option<Token>,
    /// Why it was granted (a claim, an expiry takeover, an operator).
    pub reason: GrantReason,
    /// Effects the holder reported attempting under this lease.
    pub effects_attempted: u16,
}

/// One renewal of a lease (P2).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Renewal {
    /// When, on the coordinator's clock.
    pub at: Nanos,
    /// Whether the holder said it was in jeopardy when it asked.
    pub holder_in_jeopardy: bool,
}

/// How long a human holds a job handed to them (P15), on the coordinator's clock.
pub const HUMAN_LEASE_NS: Nanos = 3_600 * SECOND_NS;

/// What a claim was granted: job, token, lease length, class.
type Grant = (JobId, Token, Nanos, ClassId);

/// V10: the write half of a claim that was read earlier.
#[derive(Clone, Debug)]
struct PendingClaim {
    due: Nanos,
    from: u32,
    req: u64,
    worker: WorkerName,
    job: JobId,
    /// The token the read saw; the write sets it + 1 without looking again.
    read_token: Token,
}

/// V10: how long the write of a non-atomic claim trails its read (a database round trip).
pub const NON_ATOMIC_WRITE_DELAY_NS: Nanos = 5 * MILLI_NS;

/// What the last claim query that found nothing learned about the table: no queued job may
/// start before `retry` (every queued job waits out a backoff that ends then or later), and no
/// running job's lease has expired at any time up to `expiry` (every lease lasts until then or
/// later). While both still hold, the query finds nothing again without looking.
#[derive(Copy, Clone, Debug)]
struct Quiet {
    /// The earliest `not_before` of a queued job.
    retry: Nanos,
    /// The earliest `lease_until` of a running job.
    expiry: Nanos,
}

/// What the coordinator keeps of its table as it writes it, so that a claim does not read the
/// whole table: every write of a job's state goes through `write_state`, and every lease set
/// through `set_lease`, which keep it. The other fields a claim reads are written directly only
/// where that cannot make a job claimable sooner than the kept bounds say: a lease cleared (a
/// running job without a lease is never claimed) and a backoff set just before its job's state
/// is written (which forgets the bounds). In debug builds every claim answered from the bounds
/// is checked against a read of the whole table.
#[derive(Clone, Debug, Default)]
struct Tally {
    /// How many jobs of each class are running, indexed by class id: admission (P16) reads it
    /// instead of counting the table on every claim. Empty when no class has a capacity: nobody
    /// asks then.
    running: Vec<u32>,
    /// How many jobs are not terminal.
    open: usize,
    /// The bounds the last empty claim query found (see [`Quiet`]), while they still hold: an
    /// idle worker polls far more often than the table changes. `write_state` forgets them (a
    /// job that becomes queued or running may be claimable at once), and a lease set without a
    /// change of state lowers `expiry` to it (`set_lease`). Only kept when the query depends on
    /// nothing else: no class has a capacity (admission reads other rows) and V11 is off (it
    /// reads the claim time).
    quiet: Option<Quiet>,
}

/// The coordinator state machine.
#[derive(Clone, Debug)]
pub struct Coordinator {
    classes: Vec<ClassSpec>,
    jobs: Vec<JobRow>,
    /// Every job below this index is terminal, so the claim query and the search for a
    /// deferred job start here: the same answers, without rescanning the finished part of a
    /// long table.
    /// Every write of a job's state lowers it first (`reopen`).
    first_open: usize,
    /// What the coordinator keeps of its table as it writes it (see [`Tally`]).
    tally: Tally,
    leases: Vec<LeaseRecord>,
    /// Jobs an operator handed to a named worker, waiting for that worker's next claim.
    handoffs: SortedMap<JobId, WorkerName>,
    /// The last claim of each sender and what it was granted: a repeated claim (a duplicated
    /// or retried request) gets the same answer instead of a second job.
    claims: SortedMap<u32, (u64, Option<Grant>)>,
    /// Every accepted commit (one per attempt at most): a repeated commit gets the same answer,
    /// even after a later attempt finished the job.
    accepted: SortedMap<(JobId, WorkerName, Token), Outcome>,
    /// V10 only: claims that read a candidate and will write it later.
    pending_claims: Vec<PendingClaim>,
    switches: Switches,
    out: Outbox,
}

impl Coordinator {
    /// Builds the job table. Job ids are the indices of `jobs`.
    pub fn new(classes: Vec<ClassSpec>, jobs: &[JobSpec], switches: Switches) -> Self {
        let jobs = jobs
            .iter()
            .enumerate()
            .map(|(i, spec)| Self::row(&classes, i, spec))
            .collect::<Vec<_>>();
        Coordinator {
            tally: Tally {
                running: if classes.iter().any(|c| c.capacity.is_some()) {
                    vec![0; classes.len()]
                } else {
                    Vec::new()
                },
                open: jobs.len(),
                quiet: None,
            },
            classes,
            jobs,
            first_open: 0,
            leases: Vec::new(),
            handoffs: SortedMap::with_capacity(0),
            claims: SortedMap::with_capacity(0),
            accepted: SortedMap::with_capacity(0),
            pending_claims: Vec::new(),
            switches,
            out: Outbox::default(),
        }
    }

    /// Makes this coordinator what [`Coordinator::new`] makes of `classes`, `jobs` and
    /// `switches`, keeping the storage its table and lists grew: a host that runs many runs on
    /// one thread builds no coordinator again.
    pub fn rebuild(&mut self, classes: &[ClassSpec], jobs: &[JobSpec], switches: Switches) {
        // Every field is named, so that a field added later cannot be forgotten here.
        let Coordinator {
            classes: own_classes,
            jobs: rows,
            first_open,
            tally,
            leases,
            handoffs,
            claims,
            accepted,
            pending_claims,
            switches: own_switches,
            out,
        } = self;
        own_classes.clear();
        own_classes.extend_from_slice(classes);
        rows.clear();
        rows.extend(
            jobs.iter()
                .enumerate()
                .map(|(i, spec)| Self::row(classes, i, spec)),
        );
        let Tally {
            running,
            open,
            quiet,
        } = tally;
        running.clear();
        if classes.iter().any(|c| c.capacity.is_some()) {
            running.resize(classes.len(), 0);
        }
        *open = rows.len();
        *quiet = None;
        *first_open = 0;
        leases.clear();
        leases.shrink_to(KEPT_MAX);
        handoffs.clear();
        handoffs.shrink_to(KEPT_MAX);
        claims.clear();
        claims.shrink_to(KEPT_MAX);
        accepted.clear();
        accepted.shrink_to(KEPT_MAX);
        pending_claims.clear();
        pending_claims.shrink_to(KEPT_MAX);
        *own_switches = switches;
        out.clear_within_bound();
    }

    /// Job `i`'s row as the table starts.
    fn row(classes: &[ClassSpec], i: usize, spec: &JobSpec) -> JobRow {
        assert!(
            (spec.class.0 as usize) < classes.len(),
            "job {i} names an unknown class"
        );
        let id = JobId(i as u32);
        JobRow {
            id,
            class: spec.class,
            state: JobState::Queued,
            owner: None,
            lease_until: None,
            token: Token(0),
            heartbeat_at: None,
            attempt: 0,
            idem_key: IdemKey {
                job: id,
                op: OpId(u8::MAX),
                salt: 0,
            },
            payload_hash: spec.payload_hash,
            result: None,
            error: None,
            first_claimed_at: None,
            started_at: None,
            payload_lease_ns: spec.payload_lease_ns,
            checkpoint: None,
            not_before: None,
        }
    }

    /// The job table.
    pub fn jobs(&self) -> &[JobRow] {
        &self.jobs
    }

    /// Every lease record, in grant order.
    pub fn leases(&self) -> &[LeaseRecord] {
        &self.leases
    }

    /// Whether every job is in a terminal state.
    pub fn all_terminal(&self) -> bool {
        debug_assert_eq!(
            self.tally.open,
            self.jobs.iter().filter(|j| !j.state.is_terminal()).count()
        );
        self.tally.open == 0
    }

    /// Writes a job's state, keeps the counts of running and open jobs and forgets what the
    /// last empty claim query found. A free function of the row and the tally, so that callers
    /// may hold the row while they write.
    fn write_state(row: &mut JobRow, tally: &mut Tally, state: JobState) {
        tally.quiet = None;
        let old = row.state;
        if let Some(count) = tally.running.get_mut(row.class.0 as usize) {
            if old == JobState::Running {
                *count -= 1;
            }
            if state == JobState::Running {
                *count += 1;
            }
        }
        match (old.is_terminal(), state.is_terminal()) {
            (false, true) => tally.open -= 1,
            (true, false) => tally.open += 1,
            _ => {}
        }
        row.state = state;
    }

    /// Sets a job's lease expiry. What the last empty claim query found stays true of the table:
    /// a lease that ends before every lease it saw lowers its bound.
    fn set_lease(row: &mut JobRow, tally: &mut Tally, until: Nanos) {
        row.lease_until = Some(until);
        if let Some(q) = &mut tally.quiet {
            q.expiry = q.expiry.min(until);
        }
    }

    /// Keeps `first_open` at or below a job whose state is about to be written (the reference
    /// never reopens a terminal job; some known-bad variants do).
    fn reopen(&mut self, job: JobId) {
        self.first_open = self.first_open.min(job.0 as usize);
    }

    /// Moves `first_open` past the terminal jobs at the front of the table.
    fn advance_first_open(&mut self) {
        while self
            .jobs
            .get(self.first_open)
            .is_some_and(|j| j.state.is_terminal())
        {
            self.first_open += 1;
        }
    }

    /// The next output to carry out, if any.
    pub fn poll_output(&mut self) -> Option<Output> {
        self.out.pop()
    }

    /// Handles one request. `from` is the host address replies go to.
    // Long: one arm per request kind, each computing its reply; a claim's is `on_claim`.
    pub fn handle_message(&mut self, now: Nanos, from: u32, msg: Msg) {
        self.advance_first_open();
        let reply_to = Peer::Addr(from);
        match msg {
            Msg::Claim {
                req,
                worker,
                client_now,
            } => self.on_claim(now, from, req, worker, client_now),
            Msg::Heartbeat {
                req,
                job,
                worker,
                token,
                client_now,
                in_jeopardy,
                effects_attempted,
            } => {
                let judge = self.judge(now, client_now);
                let reply = match self.heartbeat(now, judge, job, worker, token) {
                    Ok(lease_ns) => {
                        // P2: the record keeps the holder's certainty and its effects.
                        if let Some(record) = self.record_mut(job, token) {
                            if let Some(last) = record.renewals.last_mut() {
                                last.holder_in_jeopardy = in_jeopardy;
                            }
                            record.effects_attempted = effects_attempted;
                        }
                        Ok(lease_ns)
                    }
                    err => err,
                };
                let reply = match reply {
                    Ok(lease_ns) => Msg::HeartbeatOk {
                        req,
                        job,
                        token,
                        lease_ns,
                    },
                    Err(_) => Msg::HeartbeatRejected { req, job, token },
                };
                self.out.push(Output::Send {
                    to: reply_to,
                    msg: reply,
                });
            }
            Msg::Commit {
                req,
                job,
                worker,
                token,
                outcome,
                client_now,
            } => {
                let judge = self.judge(now, client_now);
                let reply = match self.commit(judge, job, worker, token, outcome) {
                    Ok(()) => Msg::CommitAccepted { req, job, token },
                    Err(_) => Msg::CommitRejected { req, job, token },
                };
                self.out.push(Output::Send {
                    to: reply_to,
                    msg: reply,
                });
            }
            Msg::Checkpoint {
                req,
                job,
                worker,
                token,
                step,
            } => {
                let saved = self.checkpoint(now, job, worker, token, step);
                self.out.push(Output::Send {
                    to: reply_to,
                    msg: Msg::CheckpointAck {
                        req,
                        job,
                        token,
                        saved,
                    },
                });
            }
            Msg::Operator { req, job, action } => {
                let applied = self.operator(now, job, action);
                self.out.push(Output::Send {
                    to: reply_to,
                    msg: Msg::OperatorDone { req, job, applied },
                });
            }
            // The coordinator serves only requests; anything else is ignored, like a stray
            // packet on a server port.
            _ => {}
        }
    }

    /// A claim from host `from`: a lease granted, the same grant again for a repeated claim,
    /// or nothing to do.
    fn on_claim(&mut self, now: Nanos, from: u32, req: u64, worker: WorkerName, client_now: Nanos) {
        let reply_to = Peer::Addr(from);
        let judge = self.judge(now, client_now);
        if self.switches.non_atomic_claim {
            // V10: read now, write later, never look again.
            match self.pick(now, judge) {
                Some(job) => self.pending_claims.push(PendingClaim {
                    due: now + NON_ATOMIC_WRITE_DELAY_NS,
                    from,
                    req,
                    worker,
                    job,
                    read_token: self.jobs[job.0 as usize].token,
                }),
                None => self.out.push(Output::Send {
                    to: reply_to,
                    msg: Msg::ClaimEmpty { req },
                }),
            }
            return;
        }
        // One search of the table of last claims serves the read and the write (a claim
        // itself never touches that table).
        let found = self.claims.search(&from);
        let grant = match found {
            Ok(i) if self.claims.value_at(i).0 == req => {
                self.claims.value_at(i).1.filter(|&(job, token, _, _)| {
                    let row = &self.jobs[job.0 as usize];
                    self.check_holder(row, now, worker, token).is_ok()
                })
            }
            _ => {
                let grant = self.claim(now, judge, worker);
                match found {
                    Ok(i) => *self.claims.value_at_mut(i) = (req, grant),
                    Err(i) => self.claims.insert_at(i, from, (req, grant)),
                }
                grant
            }
        };
        let reply = match grant {
            Some((job, token, lease_ns, class)) => Msg::ClaimGranted {
                req,
                job,
                token,
                lease_ns,
                class,
                checkpoint: self.jobs[job.0 as usize].checkpoint,
            },
            None => Msg::ClaimEmpty { req },
        };
        self.out.push(Output::Send {
            to: reply_to,
            msg: reply,
        });
    }

    /// The time lease expiry is judged at: the coordinator's own clock (P3), or, in the
    /// known-bad variant V5, the requesting worker's.
    fn judge(&self, now: Nanos, client_now: Nanos) -> Nanos {
        if self.switches.worker_clock_expiry {
            client_now
        } else {
            now
        }
    }

    /// The lease length a grant or renewal applies: the class's (P7), or the payload's (V13).
    fn lease_ns(&self, row: &JobRow) -> Nanos {
        match (self.switches.payload_lease_length, row.payload_lease_ns) {
            (true, Some(asked)) => asked,
            _ => self.classes[row.class.0 as usize].lease_ns,
        }
    }

    /// The read half of a claim: the first job (by id) that is queued, or running with a lease
    /// expired at `judge`.
    fn pick(&mut self, now: Nanos, judge: Nanos) -> Option<JobId> {
        if self.is_quiet(now, judge) {
            return None;
        }
        let found = self.pick_by_scan(now, judge);
        if found.is_none() && self.tally.running.is_empty() && !self.switches.takeover_by_status_age
        {
            // Nothing matched: every queued job has a `not_before` after `now`, and every
            // running job's lease lasts until `judge` or later (or it has none).
            let mut quiet = Quiet {
                retry: Nanos::MAX,
                expiry: Nanos::MAX,
            };
            for j in &self.jobs[self.first_open..] {
                match (j.state, j.not_before, j.lease_until) {
                    (JobState::Queued, Some(t), _) => quiet.retry = quiet.retry.min(t),
                    (JobState::Running, _, Some(t)) => quiet.expiry = quiet.expiry.min(t),
                    _ => {}
                }
            }
            self.tally.quiet = Some(quiet);
        }
        found
    }

    /// Whether every queued job still waits and every lease still runs at `now` and `judge`,
    /// by what the last empty claim query found (see [`Quiet`]): then the query finds nothing.
    #[inline]
    fn is_quiet(&self, now: Nanos, judge: Nanos) -> bool {
        let quiet = self
            .tally
            .quiet
            .is_some_and(|q| now < q.retry && judge <= q.expiry);
        debug_assert!(!quiet || self.pick_by_scan(now, judge).is_none());
        quiet
    }

    /// [`Coordinator::pick`] by reading every open row.
    fn pick_by_scan(&self, now: Nanos, judge: Nanos) -> Option<JobId> {
        let by_status_age = self.switches.takeover_by_status_age;
        self.jobs[self.first_open..]
            .iter()
            .find(|j| match j.state {
                // P11: a retry waits out its backoff; P16: admission waits for capacity.
                JobState::Queued => {
                    j.not_before.is_none_or(|t| t <= now) && self.admits(j.class).is_ok()
                }
                // V11: "running for longer than a lease" instead of "lease expired".
                JobState::Running if by_status_age => j
                    .started_at
                    .is_some_and(|s| now.saturating_sub(s) > self.lease_ns(j)),
                // `lease_until < now()`, as in the article's claim query.
                JobState::Running => j.lease_until.is_some_and(|until| until < judge),
                _ => false,
            })
            .map(|j| j.id)
    }

    /// P16 admission: whether a job of `class` may start now, or (running, capacity).
    fn admits(&self, class: ClassId) -> Result<(), (u32, u32)> {
        let Some(capacity) = self.classes[class.0 as usize].capacity else {
            return Ok(());
        };
        let running = self.tally.running[class.0 as usize];
        debug_assert_eq!(
            running as usize,
            self.jobs
                .iter()
                .filter(|j| j.class == class && j.state == JobState::Running)
                .count()
        );
        if running < capacity {
            Ok(())
        } else {
            Err((running, capacity))
        }
    }

    /// Extends `job`'s current lease by its length from `now`, records the renewal and journals
    /// it with the token the request carried.
    fn renew(&mut self, now: Nanos, job: JobId, worker: WorkerName, token: Token) -> Nanos {
        let lease_ns = self.lease_ns(&self.jobs[job.0 as usize]);
        let row = &mut self.jobs[job.0 as usize];
        Self::set_lease(row, &mut self.tally, now + lease_ns);
        row.heartbeat_at = Some(now);
        let current = row.token;
        if let Some(record) = self.record_mut(job, current) {
            record.renewals.push(Renewal {
                at: now,
                holder_in_jeopardy: false,
            });
        }
        self.out.push(Output::Journal(Event::LeaseRenewed {
            job,
            worker,
            token,
            lease_until: now + lease_ns,
        }));
        lease_ns
    }

    /// The lease record of (job, token), if any.
    fn record_mut(&mut self, job: JobId, token: Token) -> Option<&mut LeaseRecord> {
        self.leases
            .iter_mut()
            .rev()
            .find(|l| l.job == job && l.token == token)
    }

    /// P17: a stage's result is persisted by its current holder only; the next stage gets a
    /// fresh lease, and the renewal cap counts again from here.
    fn checkpoint(
        &mut self,
        now: Nanos,
        job: JobId,
        worker: WorkerName,
        token: Token,
        step: u8,
    ) -> bool {
        let Some(row) = self.jobs.get(job.0 as usize) else {
            return false;
        };
        if let Err(reason) = self.check_holder(row, now, worker, token) {
            self.out.push(Output::Journal(Event::HeartbeatRefused {
                job,
                worker,
                token,
                reason,
            }));
            return false;
        }
        let lease_ns = self.lease_ns(row);
        let row = &mut self.jobs[job.0 as usize];
        row.checkpoint = Some(step);
        Self::set_lease(row, &mut self.tally, now + lease_ns);
        row.heartbeat_at = Some(now);
        row.first_claimed_at = Some(now);
        if let Some(record) = self.record_mut(job, token) {
            record.renewals.push(Renewal {
                at: now,
                holder_in_jeopardy: false,
            });
        }
        self.out.push(Output::Journal(Event::CheckpointSaved {
            job,
            worker,
            token,
            step,
            lease_until: now + lease_ns,
        }));
        true
    }

    /// P3: one atomic step. Picks the first job that is queued, or running with a lease
    /// expired by the coordinator's clock, and grants it. Never the client's clock.
    #[inline]
    fn claim(&mut self, now: Nanos, judge: Nanos, worker: WorkerName) -> Option<Grant> {
        // The usual answer to an idle worker's poll, decided here without a call: nothing is
        // handed to anyone, and the table is as quiet as the last empty query found it (then
        // nothing defers either: `quiet` is only kept without capacities).
        if self.handoffs.is_empty() && self.is_quiet(now, judge) {
            return None;
        }
        self.claim_from_table(now, judge, worker)
    }

    /// [`Coordinator::claim`], looking at the handoffs and the table.
    #[inline(never)]
    fn claim_from_table(&mut self, now: Nanos, judge: Nanos, worker: WorkerName) -> Option<Grant> {
        if let Some(grant) = self.pick_up_handoff(now, worker) {
            return Some(grant);
        }
        let Some(job) = self.pick(now, judge) else {
            // Told apart from a lease refusal: the job may not start at all yet (P16). Only a
            // class with a capacity defers, and the jobs below `first_open` are all terminal.
            let deferred = if self.tally.running.is_empty() {
                None
            } else {
                self.jobs[self.first_open..].iter().find_map(|j| {
                    let waiting =
                        j.state == JobState::Queued && j.not_before.is_none_or(|t| t <= now);
                    if !waiting {
                        return None;
                    }
                    let (running, capacity) = self.admits(j.class).err()?;
                    Some((j.id, running, capacity))
                })
            };
            if let Some((job, running, capacity)) = deferred {
                self.out.push(Output::Journal(Event::AdmissionDeferred {
                    job,
                    running,
                    capacity,
                }));
            }
            return None;
        };
        let read_token = self.jobs[job.0 as usize].token;
        Some(self.grant(now, job, worker, read_token))
    }

    /// The write half of a claim: token = the token read + 1.
    fn grant(&mut self, now: Nanos, job: JobId, worker: WorkerName, read_token: Token) -> Grant {
        // A known-bad claim (V10) may grant a finished job again: it is open from now on.
        self.reopen(job);
        let lease_ns = self.lease_ns(&self.jobs[job.0 as usize]);
        let row = &mut self.jobs[job.0 as usize];
        let took_over = (row.state == JobState::Running).then_some(row.token);
        let reason = if took_over.is_some() {
            GrantReason::Expired
        } else {
            GrantReason::Claim
        };
        let token = Token(read_token.0 + 1);
        if !self.switches.non_atomic_claim {
            assert!(token > row.token, "P3: fencing token must increase");
        }
        Self::write_state(row, &mut self.tally, JobState::Running);
        row.owner = Some(worker);
        Self::set_lease(row, &mut self.tally, now + lease_ns);
        row.heartbeat_at = Some(now);
        row.started_at = Some(now);
        row.first_claimed_at.get_or_insert(now);
        row.token = token;
        row.attempt += 1;
        row.not_before = None;
        self.leases.push(LeaseRecord {
            job: row.id,
            holder: worker,
            token,
            issued_at: now,
            renewals: Vec::new(),
            lease_ns,
            took_over,
            reason,
            effects_attempted: 0,
        });
        self.out.push(Output::Journal(Event::LeaseGranted {
            job: row.id,
            holder: worker,
            token,
            attempt: row.attempt,
            lease_until: now + lease_ns,
            took_over,
            reason,
        }));
        (row.id, token, lease_ns, row.class)
    }

    /// When the coordinator next needs to be woken (only V10's delayed writes).
    pub fn poll_timeout(&self) -> Option<Nanos> {
        self.pending_claims.iter().map(|p| p.due).min()
    }

    /// Carries out every due delayed claim write (V10). A spurious call is a no-op.
    pub fn handle_timeout(&mut self, now: Nanos) {
        self.advance_first_open();
        let (due, later): (Vec<PendingClaim>, Vec<PendingClaim>) =
            std::mem::take(&mut self.pending_claims)
                .into_iter()
                .partition(|p| p.due <= now);
        self.pending_claims = later;
        for p in due {
            let (job, token, lease_ns, class) = self.grant(now, p.job, p.worker, p.read_token);
            let checkpoint = self.jobs[job.0 as usize].checkpoint;
            self.out.push(Output::Send {
                to: Peer::Addr(p.from),
                msg: Msg::ClaimGranted {
                    req: p.req,
                    job,
                    token,
                    lease_ns,
                    class,
                    checkpoint,
                },
            });
        }
    }

    /// A job an operator handed to this worker: the lease restarts now, so the worker's
    /// deadline (measured from its claim's send time) stays inside it.
    fn pick_up_handoff(&mut self, now: Nanos, worker: WorkerName) -> Option<Grant> {
        let (&job, _) = self.handoffs.iter().find(|(_, w)| **w == worker)?;
        self.handoffs.remove(&job);
        let lease_ns = self.lease_ns(&self.jobs[job.0 as usize]);
        let row = &self.jobs[job.0 as usize];
        if self.check_holder(row, now, worker, row.token).is_err() {
            // Expired or taken elsewhere meanwhile: an ordinary claim decides.
            return None;
        }
        let row = &mut self.jobs[job.0 as usize];
        row.started_at = Some(now);
        let (token, class) = (row.token, row.class);
        self.renew(now, job, worker, token);
        Some((job, token, lease_ns, class))
    }

    /// F8, P15: an operator's action goes through the lease path: a new epoch, a reason.
    fn operator(&mut self, now: Nanos, job: JobId, action: OperatorAction) -> bool {
        self.reopen(job);
        let Some(row) = self.jobs.get(job.0 as usize) else {
            return false;
        };
        if action == OperatorAction::HumanResolves {
            return self.human_resolves(now, job);
        }
        if row.state.is_terminal()
            || (row.state == JobState::Queued && action == OperatorAction::Revoke)
        {
            return false;
        }
        let class_lease = self.lease_ns(row);
        let row = &mut self.jobs[job.0 as usize];
        let old = row.token;
        let epoch = Token(old.0 + 1);
        let holder = row.owner;
        self.handoffs.remove(&job);
        row.token = epoch;
        row.lease_until = None;
        // Who gets the new epoch, and for how long.
        let new_holder = match action {
            OperatorAction::Revoke => {
                Self::write_state(row, &mut self.tally, JobState::Queued);
                row.owner = None;
                None
            }
            OperatorAction::Cancel => {
                Self::write_state(row, &mut self.tally, JobState::Cancelled);
                row.owner = None;
                None
            }
            OperatorAction::Takeover { to } => {
                self.handoffs.insert(job, to);
                Some((to, class_lease))
            }
            OperatorAction::HandToHuman => Some((HUMAN, HUMAN_LEASE_NS)),
            OperatorAction::HumanResolves => unreachable!("handled above"),
        };
        self.out.push(Output::Journal(Event::LeaseRevoked {
            job,
            holder,
            token: old,
            epoch,
            action,
        }));
        if let Some((to, lease_ns)) = new_holder {
            self.operator_grant(now, job, to, lease_ns, old);
        }
        true
    }

    /// P15: the human who holds the job finishes it, under their own lease. Whether it did.
    fn human_resolves(&mut self, now: Nanos, job: JobId) -> bool {
        let Some(row) = self.jobs.get(job.0 as usize) else {
            return false;
        };
        let token = row.token;
        if self.check_holder(row, now, HUMAN, token).is_err() {
            return false;
        }
        let row = &mut self.jobs[job.0 as usize];
        Self::write_state(row, &mut self.tally, JobState::Succeeded);
        row.lease_until = None;
        self.out.push(Output::Journal(Event::ResultAccepted {
            job,
            worker: HUMAN,
            token,
            state: JobState::Succeeded,
        }));
        true
    }

    /// An operator's takeover or handoff to a human: the new epoch (one above `old`) granted
    /// to `to` for `lease_ns`, recorded and journaled with the operator as its reason.
    fn operator_grant(
        &mut self,
        now: Nanos,
        job: JobId,
        to: WorkerName,
        lease_ns: Nanos,
        old: Token,
    ) {
        let epoch = Token(old.0 + 1);
        let row = &mut self.jobs[job.0 as usize];
        Self::write_state(row, &mut self.tally, JobState::Running);
        row.owner = Some(to);
        Self::set_lease(row, &mut self.tally, now + lease_ns);
        row.heartbeat_at = Some(now);
        row.started_at = Some(now);
        row.attempt += 1;
        let attempt = row.attempt;
        self.leases.push(LeaseRecord {
            job,
            holder: to,
            token: epoch,
            issued_at: now,
            renewals: Vec::new(),
            lease_ns,
            took_over: Some(old),
            reason: GrantReason::Operator,
            effects_attempted: 0,
        });
        self.out.push(Output::Journal(Event::LeaseGranted {
            job,
            holder: to,
            token: epoch,
            attempt,
            lease_until: now + lease_ns,
            took_over: Some(old),
            reason: GrantReason::Operator,
        }));
    }

    /// The conditions of P4 and P8: running, owner, token, unexpired (by `judge`, the
    /// coordinator's clock in the reference).
    fn check_holder(
        &self,
        row: &JobRow,
        judge: Nanos,
        worker: WorkerName,
        token: Token,
    ) -> Result<(), RefusalReason> {
        if row.state != JobState::Running {
            return Err(RefusalReason::NotRunning);
        }
        if row.owner != Some(worker) {
            return Err(RefusalReason::NotOwner);
        }
        // V9 checks the name only: a restarted process under the same name passes.
        if row.token != token && !self.switches.owner_name_only {
            return Err(RefusalReason::StaleToken);
        }
        // `lease_until > now()`.
        if row.lease_until.is_none_or(|until| until <= judge) {
            return Err(RefusalReason::Expired);
        }
        Ok(())
    }

    /// P4: extends only the current, unexpired holder's lease, and never past the class's
    /// renewal cap (P7).
    fn heartbeat(
        &mut self,
        now: Nanos,
        judge: Nanos,
        job: JobId,
        worker: WorkerName,
        token: Token,
    ) -> Result<Nanos, RefusalReason> {
        let Some(row) = self.jobs.get(job.0 as usize) else {
            return Err(RefusalReason::NotRunning);
        };
        let check = if self.switches.heartbeat_ignores_owner {
            // V1: `update ... where id = :job_id and state = 'running'`, nothing else.
            if row.state == JobState::Running {
                Ok(())
            } else {
                Err(RefusalReason::NotRunning)
            }
        } else {
            self.check_holder(row, judge, worker, token)
        };
        let cap = self.classes[row.class.0 as usize].renewal_cap_ns;
        let capped = check.is_ok()
            && !self.switches.uncapped_renewal
            && row
                .first_claimed_at
                .is_some_and(|first| now.saturating_sub(first) >= cap);
        if capped {
            // P7: endless work must become stages; the job fails with its own reason.
            let row = &mut self.jobs[job.0 as usize];
            let first_claimed_at = row.first_claimed_at.unwrap_or(now);
            Self::write_state(row, &mut self.tally, JobState::Failed);
            row.error = Some(ErrorCode::RenewalCap);
            row.lease_until = None;
            self.out.push(Output::Journal(Event::RenewalCapReached {
                job,
                token,
                first_claimed_at,
            }));
        }
        let check = if capped {
            Err(RefusalReason::RenewalCap)
        } else {
            check
        };
        if let Err(reason) = check {
            self.out.push(Output::Journal(Event::HeartbeatRefused {
                job,
                worker,
                token,
                reason,
            }));
            return Err(reason);
        }
        Ok(self.renew(now, job, worker, token))
    }

    /// Writes an accepted commit's outcome to its job's row: succeeded with its result, or
    /// failed, and queued again after a backoff while attempts remain (with its class's most
    /// attempts and backoff, judged at `judge`). Returns when a retry may start, if one may.
    fn write_outcome(
        row: &mut JobRow,
        tally: &mut Tally,
        outcome: Outcome,
        judge: Nanos,
        (max_attempts, backoff_ns): (u32, Nanos),
    ) -> Option<Nanos> {
        let mut retry_at = None;
        match outcome {
            Outcome::Success { result } => {
                Self::write_state(row, tally, JobState::Succeeded);
                row.result = Some(result);
            }
            Outcome::Failure { error, retryable } => {
                row.error = Some(error);
                // P11: retry transient failures while attempts remain, after a backoff that
                // doubles per attempt; validation errors and exhausted jobs end for good.
                let state = if retryable && row.attempt < max_attempts {
                    let shift = row.attempt.saturating_sub(1).min(16);
                    let not_before = judge + backoff_ns.saturating_mul(1 << shift);
                    row.not_before = Some(not_before);
                    retry_at = Some(not_before);
                    JobState::Queued
                } else {
                    JobState::Failed
                };
                Self::write_state(row, tally, state);
            }
        }
        retry_at
    }

    /// Journals an accepted commit: the acceptance, then the retry scheduled (at `retry_at`)
    /// or the failure.
    fn journal_accepted(
        &mut self,
        (job, worker, token): (JobId, WorkerName, Token),
        outcome: Outcome,
        retry_at: Option<Nanos>,
    ) {
        let row = &self.jobs[job.0 as usize];
        let (state, attempt) = (row.state, row.attempt);
        self.out.push(Output::Journal(Event::ResultAccepted {
            job,
            worker,
            token,
            state,
        }));
        match (outcome, retry_at) {
            (Outcome::Failure { .. }, Some(not_before)) => {
                self.out.push(Output::Journal(Event::RetryScheduled {
                    job,
                    attempt,
                    not_before,
                }))
            }
            (Outcome::Failure { error, .. }, None) => {
                self.out.push(Output::Journal(Event::JobFailed {
                    job,
                    error,
                    attempt,
                }))
            }
            _ => {}
        }
    }

    /// P8: the final commit is conditional; a refused one is journaled, never applied. Expiry
    /// is judged at `judge` (the coordinator's clock in the reference).
    fn commit(
        &mut self,
        judge: Nanos,
        job: JobId,
        worker: WorkerName,
        token: Token,
        outcome: Outcome,
    ) -> Result<(), RefusalReason> {
        if job.0 as usize >= self.jobs.len() {
            return Err(RefusalReason::NotRunning);
        }
        // A known-bad commit (V2) may re-queue a finished job.
        self.reopen(job);
        if self.accepted.get(&(job, worker, token)) == Some(&outcome) {
            // The same commit again (a duplicate or a retry whose first answer was lost): the
            // same answer, and nothing changes.
            return Ok(());
        }
        let check = self.check_holder(&self.jobs[job.0 as usize], judge, worker, token);
        let row = &mut self.jobs[job.0 as usize];
        let result_hash = match outcome {
            Outcome::Success { result } => result,
            Outcome::Failure { .. } => 0,
        };
        if let Err(reason) = check {
            if !self.switches.unconditional_commit {
                self.out.push(Output::Journal(Event::ResultRejected {
                    job,
                    worker,
                    token,
                    reason,
                    result_hash,
                }));
                return Err(reason);
            }
            // V2: `update ... set state = 'succeeded' where id = :job_id`, nothing else checked.
        }
        let class = &self.classes[row.class.0 as usize];
        let (max_attempts, backoff_ns) = (class.max_attempts, class.retry_backoff_ns);
        let retry_at = Self::write_outcome(
            row,
            &mut self.tally,
            outcome,
            judge,
            (max_attempts, backoff_ns),
        );
        row.lease_until = None;
        if row.state == JobState::Queued {
            row.owner = None;
        }
        self.journal_accepted((job, worker, token), outcome, retry_at);
        self.accepted.insert((job, worker, token), outcome);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const L: Nanos = 30 * SECOND_NS;

    fn coord(jobs: usize, switches: Switches) -> Coordinator {
        Coordinator::new(
            vec![ClassSpec {
                lease_ns: L,
                max_attempts: 3,
                renewal_cap_ns: 100 * L,
                capacity: None,
                retry_backoff_ns: 0,
            }],
            &vec![
                JobSpec {
                    class: ClassId(0),
                    payload_hash: 7,
                    payload_lease_ns: None,
                };
                jobs
            ],
            switches,
        )
    }

    fn drain(c: &mut Coordinator) -> Vec<Output> {
        std::iter::from_fn(|| c.poll_output()).collect()
    }

    /// A pseudo-random source for the table tests (xorshift): `draw(n)` is below `n`.
    fn drawer(mut x: u64) -> impl FnMut(u64) -> u64 {
        move |n| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % n
        }
    }

    /// One pseudo-random step of the table tests: the clock mostly moves forward and sometimes
    /// jumps back; then, from one of four workers whose clocks are off by up to a lease either
    /// way, a claim (now and then a repeated one), a heartbeat, a checkpoint, a commit (a
    /// success or a failure, mostly retryable) or an operator action, on one of the table's
    /// jobs, with its token or one off either way. Returns the sender and the message.
    fn random_input(
        draw: &mut impl FnMut(u64) -> u64,
        c: &Coordinator,
        now: &mut Nanos,
        req: &mut u64,
    ) -> (u32, Msg) {
        *now = if draw(12) == 0 {
            now.saturating_sub(draw(L))
        } else {
            *now + draw(L / 3)
        };
        let client_now = (*now + draw(2 * L)).saturating_sub(L);
        let (w, job) = (draw(4) as u32, JobId(draw(c.jobs().len() as u64) as u32));
        let current = c.jobs()[job.0 as usize].token.0;
        let token = Token(match draw(5) {
            0 => current.saturating_sub(1),
            1 => current + 1,
            _ => current,
        });
        if draw(8) != 0 {
            *req += 1;
        }
        let req = *req;
        let worker = WorkerName(w);
        let msg = match draw(10) {
            0..=3 => Msg::Claim {
                req,
                worker,
                client_now,
            },
            4 => Msg::Heartbeat {
                req,
                job,
                worker,
                token,
                client_now,
                in_jeopardy: false,
                effects_attempted: 0,
            },
            5 => Msg::Checkpoint {
                req,
                job,
                worker,
                token,
                step: 0,
            },
            6 => Msg::Commit {
                req,
                job,
                worker,
                token,
                outcome: Outcome::Success { result: 1 },
                client_now,
            },
            7 => Msg::Commit {
                req,
                job,
                worker,
                token,
                outcome: Outcome::Failure {
                    error: ErrorCode::ToolFailed,
                    retryable: draw(4) != 0,
                },
                client_now,
            },
            _ => Msg::Operator {
                req,
                job,
                action: match draw(5) {
                    0 => OperatorAction::Revoke,
                    1 => OperatorAction::Takeover {
                        to: WorkerName(draw(4) as u32),
                    },
                    2 => OperatorAction::HandToHuman,
                    3 => OperatorAction::HumanResolves,
                    _ => OperatorAction::Cancel,
                },
            },
        };
        (w, msg)
    }

    fn reply(c: &mut Coordinator) -> Msg {
        drain(c)
            .into_iter()
            .find_map(|o| match o {
                Output::Send { msg, .. } => Some(msg),
                Output::Journal(_) => None,
            })
            .expect("a reply")
    }

    #[test]
    fn a_rebuilt_coordinator_is_a_new_one() {
        // A table with a granted lease and an answer waiting, rebuilt for other classes and
        // jobs: nothing of its run may remain.
        let mut c = coord(3, Switches::default());
        claim(&mut c, 0, 1);
        c.handle_message(5, 2, Msg::ClaimEmpty { req: 1 });
        let classes = [
            ClassSpec {
                lease_ns: 2 * L,
                max_attempts: 1,
                renewal_cap_ns: L,
                capacity: Some(1),
                retry_backoff_ns: 1,
            },
            ClassSpec {
                lease_ns: L,
                max_attempts: 2,
                renewal_cap_ns: L,
                capacity: None,
                retry_backoff_ns: 0,
            },
        ];
        let jobs = [JobSpec {
            class: ClassId(1),
            payload_hash: 9,
            payload_lease_ns: Some(L),
        }];
        let switches = crate::Variant::UnconditionalCommit.switches();
        c.rebuild(&classes, &jobs, switches);
        let fresh = Coordinator::new(classes.to_vec(), &jobs, switches);
        assert_eq!(format!("{c:?}"), format!("{fresh:?}"));
    }

    fn claim(c: &mut Coordinator, now: Nanos, w: u32) -> Msg {
        // A fresh request number per claim, as a worker sends them.
        let req = c.leases().len() as u64 * 1000 + now;
        claim_req(c, now, w, req)
    }

    fn claim_req(c: &mut Coordinator, now: Nanos, w: u32, req: u64) -> Msg {
        c.handle_message(
            now,
            w,
            Msg::Claim {
                client_now: 0,
                req,
                worker: WorkerName(w),
            },
        );
        reply(c)
    }

    fn hb(c: &mut Coordinator, now: Nanos, w: u32, token: u64) -> Msg {
        c.handle_message(
            now,
            w,
            Msg::Heartbeat {
                client_now: 0,
                req: 2,
                job: JobId(0),
                worker: WorkerName(w),
                token: Token(token),
                in_jeopardy: false,
                effects_attempted: 0,
            },
        );
        reply(c)
    }

    fn commit(c: &mut Coordinator, now: Nanos, w: u32, token: u64) -> Msg {
        c.handle_message(
            now,
            w,
            Msg::Commit {
                client_now: 0,
                req: 3,
                job: JobId(0),
                worker: WorkerName(w),
                token: Token(token),
                outcome: Outcome::Success { result: 9 },
            },
        );
        reply(c)
    }

    #[test]
    fn claim_race_grants_one_job_once_p3() {
        let mut c = coord(1, Switches::default());
        assert!(matches!(
            claim(&mut c, 0, 1),
            Msg::ClaimGranted {
                token: Token(1),
                ..
            }
        ));
        // A second claim at the same instant finds nothing: the claim is one atomic step.
        assert!(matches!(claim(&mut c, 0, 2), Msg::ClaimEmpty { .. }));
        // Still nothing at exactly lease_until (`lease_until < now` is strict).
        assert!(matches!(claim(&mut c, L, 2), Msg::ClaimEmpty { .. }));
        // After expiry the next claim takes over with a higher token.
        assert!(matches!(
            claim(&mut c, L + 1, 2),
            Msg::ClaimGranted {
                token: Token(2),
                ..
            }
        ));
        assert_eq!(c.jobs()[0].attempt, 2);
        assert_eq!(c.leases().len(), 2);
        assert_eq!(c.leases()[1].took_over, Some(Token(1)));
    }

    #[test]
    fn heartbeat_by_stale_token_or_after_expiry_is_refused_p4() {
        let mut c = coord(1, Switches::default());
        claim(&mut c, 0, 1);
        assert!(matches!(hb(&mut c, 10, 1, 1), Msg::HeartbeatOk { .. }));
        assert_eq!(c.jobs()[0].lease_until, Some(10 + L));
        assert_eq!(
            c.leases()[0]
                .renewals
                .iter()
                .map(|r| r.at)
                .collect::<Vec<_>>(),
            vec![10]
        );
        // Wrong owner, stale token, and expiry are each "no row".
        assert!(matches!(
            hb(&mut c, 20, 2, 1),
            Msg::HeartbeatRejected { .. }
        ));
        assert!(matches!(
            hb(&mut c, 20, 1, 0),
            Msg::HeartbeatRejected { .. }
        ));
        assert!(matches!(
            hb(&mut c, 10 + L, 1, 1),
            Msg::HeartbeatRejected { .. }
        ));
        assert_eq!(
            c.jobs()[0].lease_until,
            Some(10 + L),
            "refusals change nothing"
        );
        // Once W2 took over, W1's token is stale even though it names itself correctly.
        claim(&mut c, 11 + L, 2);
        assert!(matches!(
            hb(&mut c, 12 + L, 1, 1),
            Msg::HeartbeatRejected { .. }
        ));
        let journal = drain(&mut c);
        assert!(journal.is_empty());
    }

    #[test]
    fn commit_after_expiry_is_rejected_and_journaled_p8() {
        let mut c = coord(1, Switches::default());
        claim(&mut c, 0, 1);
        c.handle_message(
            L + 5,
            1,
            Msg::Commit {
                client_now: 0,
                req: 3,
                job: JobId(0),
                worker: WorkerName(1),
                token: Token(1),
                outcome: Outcome::Success { result: 9 },
            },
        );
        let outs = drain(&mut c);
        assert!(outs.iter().any(|o| matches!(
            o,
            Output::Journal(Event::ResultRejected {
                reason: RefusalReason::Expired,
                result_hash: 9,
                ..
            })
        )));
        assert!(outs.iter().any(|o| matches!(
            o,
            Output::Send {
                msg: Msg::CommitRejected { .. },
                ..
            }
        )));
        assert_eq!(c.jobs()[0].state, JobState::Running);
        assert_eq!(
            c.jobs()[0].result,
            None,
            "a rejected result is never applied"
        );
    }

    #[test]
    fn unconditional_commit_variant_applies_a_stale_result_v2() {
        let mut c = coord(
            1,
            Switches {
                unconditional_commit: true,
                ..Switches::default()
            },
        );
        claim(&mut c, 0, 1);
        claim(&mut c, L + 1, 2);
        assert!(matches!(
            commit(&mut c, L + 2, 1, 1),
            Msg::CommitAccepted { .. }
        ));
        assert_eq!(c.jobs()[0].state, JobState::Succeeded);
    }

    #[test]
    fn transient_failure_requeues_until_attempts_run_out_p11() {
        let mut c = coord(1, Switches::default());
        for attempt in 1..=3u64 {
            assert!(matches!(
                claim(&mut c, attempt * 10, 1),
                Msg::ClaimGranted { .. }
            ));
            c.handle_message(
                attempt * 10 + 1,
                1,
                Msg::Commit {
                    client_now: 0,
                    req: 3,
                    job: JobId(0),
                    worker: WorkerName(1),
                    token: Token(attempt),
                    outcome: Outcome::Failure {
                        error: ErrorCode::ToolFailed,
                        retryable: true,
                    },
                },
            );
            drain(&mut c);
        }
        assert_eq!(c.jobs()[0].state, JobState::Failed);
        assert!(matches!(claim(&mut c, 100, 1), Msg::ClaimEmpty { .. }));
    }

    fn operator(c: &mut Coordinator, now: Nanos, action: OperatorAction) -> Msg {
        c.handle_message(
            now,
            99,
            Msg::Operator {
                req: 5,
                job: JobId(0),
                action,
            },
        );
        reply(c)
    }

    #[test]
    fn operator_takeover_hands_over_with_a_new_epoch_and_a_reason_p15() {
        let mut c = coord(1, Switches::default());
        claim(&mut c, 0, 1);
        c.handle_message(
            10,
            99,
            Msg::Operator {
                req: 5,
                job: JobId(0),
                action: OperatorAction::Takeover { to: WorkerName(2) },
            },
        );
        let outs = drain(&mut c);
        assert!(outs.iter().any(|o| matches!(
            o,
            Output::Journal(Event::LeaseRevoked {
                token: Token(1),
                epoch: Token(2),
                ..
            })
        )));
        assert!(outs.iter().any(|o| matches!(
            o,
            Output::Journal(Event::LeaseGranted {
                token: Token(2),
                reason: GrantReason::Operator,
                took_over: Some(Token(1)),
                ..
            })
        )));
        // The old holder learns on its next heartbeat.
        assert!(matches!(
            hb(&mut c, 20, 1, 1),
            Msg::HeartbeatRejected { .. }
        ));
        // W2's next claim picks the job up with the operator's epoch, lease restarted then.
        assert!(matches!(
            claim(&mut c, 30, 2),
            Msg::ClaimGranted {
                token: Token(2),
                ..
            }
        ));
        assert_eq!(c.jobs()[0].lease_until, Some(30 + L));
    }

    #[test]
    fn operator_revoke_requeues_and_cancel_ends_the_job_f8() {
        let mut c = coord(1, Switches::default());
        claim(&mut c, 0, 1);
        assert!(matches!(
            operator(&mut c, 5, OperatorAction::Revoke),
            Msg::OperatorDone { applied: true, .. }
        ));
        assert_eq!(c.jobs()[0].state, JobState::Queued);
        assert_eq!(c.jobs()[0].token, Token(2), "a revocation is a new epoch");
        assert!(matches!(
            claim(&mut c, 6, 2),
            Msg::ClaimGranted {
                token: Token(3),
                ..
            }
        ));
        assert!(matches!(
            operator(&mut c, 7, OperatorAction::Cancel),
            Msg::OperatorDone { applied: true, .. }
        ));
        assert_eq!(c.jobs()[0].state, JobState::Cancelled);
        assert!(matches!(
            operator(&mut c, 8, OperatorAction::Revoke),
            Msg::OperatorDone { applied: false, .. }
        ));
        assert!(matches!(
            commit(&mut c, 9, 2, 3),
            Msg::CommitRejected { .. }
        ));
    }

    #[test]
    fn repeated_claims_and_commits_get_the_same_answer() {
        let mut c = coord(2, Switches::default());
        let first = claim_req(&mut c, 0, 1, 7);
        // The same request again (a duplicate on the wire): the same grant, not a second job.
        assert_eq!(claim_req(&mut c, 1, 1, 7), first);
        assert_eq!(c.leases().len(), 1);
        assert!(matches!(
            commit(&mut c, 2, 1, 1),
            Msg::CommitAccepted { .. }
        ));
        let journal_len = drain(&mut c).len();
        assert!(matches!(
            commit(&mut c, 3, 1, 1),
            Msg::CommitAccepted { .. }
        ));
        assert_eq!(journal_len, 0);
        assert_eq!(c.jobs()[0].state, JobState::Succeeded);
        // A commit with another token is still refused.
        assert!(matches!(
            commit(&mut c, 4, 1, 2),
            Msg::CommitRejected { .. }
        ));
    }

    #[test]
    fn the_lease_record_keeps_certainty_effects_and_reason_p2() {
        let mut c = coord(1, Switches::default());
        claim(&mut c, 0, 1);
        c.handle_message(
            10,
            1,
            Msg::Heartbeat {
                req: 2,
                job: JobId(0),
                worker: WorkerName(1),
                token: Token(1),
                client_now: 0,
                in_jeopardy: true,
                effects_attempted: 3,
            },
        );
        drain(&mut c);
        let record = &c.leases()[0];
        assert_eq!(record.reason, GrantReason::Claim);
        assert_eq!(record.renewals.len(), 1);
        assert!(record.renewals[0].holder_in_jeopardy);
        assert_eq!(record.effects_attempted, 3);
        claim(&mut c, L + 20, 2);
        assert_eq!(c.leases()[1].reason, GrantReason::Expired);
        assert_eq!(c.leases()[1].took_over, Some(Token(1)));
        // The old record is kept as evidence.
        assert_eq!(c.leases()[0].effects_attempted, 3);
    }

    #[test]
    fn a_claim_query_answered_from_what_an_empty_one_found_is_the_query_itself() {
        // A fixed pseudo-random run of claims, renewals, checkpoints, commits (successes, and
        // failures that mostly back off and retry) and operator actions on a small table, with
        // clocks that mostly move forward and sometimes jump back (`random_input`). After every step the claim
        // query is asked at several times; each answer must be the full scan's.
        let mut draw = drawer(0x2545_f491_4f6c_dd1d);
        let classes = [ClassSpec {
            lease_ns: L,
            max_attempts: 4,
            renewal_cap_ns: 20 * L,
            capacity: None,
            retry_backoff_ns: L / 3,
        }];
        let jobs = vec![
            JobSpec {
                class: ClassId(0),
                payload_hash: 7,
                payload_lease_ns: None,
            };
            6
        ];
        for variant in [
            Switches::default(),
            crate::Variant::WorkerClockExpiry.switches(),
        ] {
            let mut c = Coordinator::new(classes.to_vec(), &jobs, variant);
            let (mut now, mut req, mut grants) = (10 * L, 0, 0);
            for _ in 0..3_000 {
                if c.all_terminal() {
                    // A new table (what the last one's empty queries found is forgotten).
                    grants += c.leases().len();
                    c.rebuild(&classes, &jobs, variant);
                }
                let (w, msg) = random_input(&mut draw, &c, &mut now, &mut req);
                c.handle_message(now, w, msg);
                drain(&mut c);
                // Times around every lease's end and every backoff's end, where answers change,
                // and anywhere near now.
                let edges = c
                    .jobs()
                    .iter()
                    .flat_map(|j| [j.lease_until, j.not_before])
                    .flatten()
                    .flat_map(|t| [t.saturating_sub(1), t, t + 1].map(|at| (at, at)))
                    .collect::<Vec<_>>();
                let near = (0..4).map(|_| {
                    let at = (now + draw(2 * L)).saturating_sub(L);
                    (at, c.judge(at, (at + draw(2 * L)).saturating_sub(L)))
                });
                for (at, judge) in near.collect::<Vec<_>>().into_iter().chain(edges) {
                    assert_eq!(c.pick(at, judge), c.pick_by_scan(at, judge));
                }
            }
            grants += c.leases().len();
            assert!(
                grants > 300,
                "the run claims and takes over often: {grants}"
            );
        }
    }

    /// A coordinator whose quiet bounds are forgotten before every input (so that it reads its
    /// whole table on every claim) answers and journals exactly as one that keeps them, for
    /// every variant, with and without a class capacity, through handoffs, V10's delayed
    /// writes, payload lease lengths, backoffs, human handoffs and clocks that jump back.
    #[test]
    fn the_quiet_table_changes_no_answer_of_any_variant() {
        let mut draw = drawer(0x9e37_79b9_7f4a_7c15);
        let mut quiet_hits = 0u64;
        for &variant in crate::Variant::ALL {
            for capacity in [None, Some(2)] {
                let classes = vec![
                    ClassSpec {
                        lease_ns: L,
                        max_attempts: 4,
                        renewal_cap_ns: 6 * L,
                        capacity: None,
                        retry_backoff_ns: L / 3,
                    },
                    ClassSpec {
                        lease_ns: L / 2,
                        max_attempts: 3,
                        renewal_cap_ns: 4 * L,
                        capacity,
                        retry_backoff_ns: L / 5,
                    },
                ];
                let jobs: Vec<JobSpec> = (0..7)
                    .map(|i| JobSpec {
                        class: ClassId((i % 2) as u8),
                        payload_hash: i,
                        payload_lease_ns: if i % 3 == 0 { Some(L / 7) } else { None },
                    })
                    .collect();
                let sw = variant.switches();
                let mut a = Coordinator::new(classes.clone(), &jobs, sw);
                let mut b = Coordinator::new(classes.clone(), &jobs, sw);
                let mut now = 10 * L;
                let mut req = 0;
                for step in 0..6_000 {
                    if a.all_terminal() {
                        a.rebuild(&classes, &jobs, sw);
                        b.rebuild(&classes, &jobs, sw);
                    }
                    let (w, msg) = random_input(&mut draw, &a, &mut now, &mut req);
                    b.tally.quiet = None;
                    if let Msg::Claim { client_now, .. } = msg {
                        let judge = a.judge(now, client_now);
                        if a.handoffs.is_empty()
                            && a.tally
                                .quiet
                                .is_some_and(|q| now < q.retry && judge <= q.expiry)
                        {
                            quiet_hits += 1;
                        }
                    }
                    a.handle_message(now, w, msg);
                    b.handle_message(now, w, msg);
                    assert_eq!(
                        drain(&mut a),
                        drain(&mut b),
                        "{} cap {capacity:?} step {step}",
                        variant.name()
                    );
                    assert_eq!(a.jobs(), b.jobs(), "{} step {step}", variant.name());
                    if draw(3) == 0 {
                        if let Some(t) = a.poll_timeout() {
                            let at = t.max(now);
                            b.tally.quiet = None;
                            a.handle_timeout(at);
                            b.handle_timeout(at);
                            assert_eq!(drain(&mut a), drain(&mut b));
                        }
                    }
                }
            }
        }
        assert!(
            quiet_hits > 1_000,
            "the fast path was taken {quiet_hits} times"
        );
    }
}
