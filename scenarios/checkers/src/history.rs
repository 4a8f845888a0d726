//! The lease history: the one interpretation of a run's trace that the checkers, the reports and
//! the metrics all read (Jepsen's "one history, many checkers").
//!
//! [`History::new`] walks the trace once and files every journal event about a lease under its
//! job and token: the coordinator's grants, renewals and checkpoints (each with its
//! `lease_until` on the coordinator's clock), refused heartbeats, revocations, the renewal cap,
//! its decisions on commits; the holder's side of the same lease (each attempt: the deadlines it
//! stated, its jeopardy spans, how it ended), the commits it sent and what it was told; the
//! effects it started and what the receivers did with them. Besides the leases it keeps the
//! index the journal events do not carry themselves: each job's class and which node served
//! each tool request, and every tool call's records.
//!
//! The history records what the nodes said, nothing more. It judges nothing (a renewal the
//! reference would refuse is recorded like any other; the checkers decide what it means), reads
//! no clock but the trace's, and converts no time: every record keeps its trace index, its true
//! time and the recording node's local clock reading, so a reader maps times its own way.
//!
//! A reader asks about a lease by (job, token), and about the past of a trace position with the
//! `*_before(i)` queries, which see only records made before trace event `i`:
//!
//! ```
//! use leasesim_checkers::history::History;
//! use leasesim_protocol::{Event, GrantReason, JobId, Msg, Token, WorkerName};
//! use leasesim_sim::{EventKind, TraceEvent};
//!
//! let note = |t: u64, note: Event| TraceEvent { t, node: 0, local: t, kind: EventKind::Note { note } };
//! let (job, w1, token) = (JobId(0), WorkerName(1), Token(1));
//! let trace: Vec<TraceEvent<Msg, Event>> = vec![
//!     note(0, Event::LeaseGranted {
//!         job, holder: w1, token, attempt: 1, lease_until: 100, took_over: None,
//!         reason: GrantReason::Claim,
//!     }),
//!     note(40, Event::LeaseRenewed { job, worker: w1, token, lease_until: 140 }),
//! ];
//! let history = History::new(&trace);
//! let lease = history.lease(job, token).expect("the trace names it");
//! assert_eq!(lease.issues().map(|i| i.lease_until).collect::<Vec<_>>(), [100, 140]);
//! assert!(!lease.granted_before(0) && lease.granted_before(1));
//! assert_eq!(lease.ended(), None);
//! ```

use crate::{NearIds, Trace};
use leasesim_protocol::{
    ClassId, EffectOutcome, EntityId, Event, GrantReason, IdemKey, JobId, JobState, Msg,
    OperatorAction, Outcome, RefusalReason, StoreEvent, Token, ToolFaultKind, WorkerName,
};
use leasesim_sim::{Command, EventKind, NodeId};
use std::collections::BTreeMap;

/// Where in the trace a record was made.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct At {
    /// The index of the trace event.
    pub index: usize,
    /// True time.
    pub t_ns: u64,
    /// The recording node's local clock reading.
    pub local_ns: u64,
}

/// What the coordinator did when it set a lease's expiry.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Issued {
    /// A grant (P3): a claim, a takeover of an expired lease, or an operator's handoff.
    Grant {
        /// The new holder.
        holder: WorkerName,
        /// The attempt number after the claim.
        attempt: u32,
        /// The token of the lease this grant took over, if any.
        took_over: Option<Token>,
        /// Why it was granted (P15).
        reason: GrantReason,
    },
    /// A renewal (P4), for the worker that asked.
    Renewal {
        /// Who asked.
        worker: WorkerName,
    },
    /// A checkpoint (P17): the stage's result was saved and the next stage got a fresh lease.
    Checkpoint {
        /// The holder.
        worker: WorkerName,
        /// The plan step that ended the stage.
        step: u8,
    },
}

/// One grant, renewal or checkpoint of a lease, as the coordinator journaled it.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Issue {
    /// Where (on the coordinator).
    pub at: At,
    /// The lease's new expiry on the coordinator's clock.
    pub lease_until: u64,
    /// What it was.
    pub kind: Issued,
}

impl Issue {
    /// The worker the lease was issued to.
    pub fn holder(&self) -> WorkerName {
        match self.kind {
            Issued::Grant { holder, .. } => holder,
            Issued::Renewal { worker } | Issued::Checkpoint { worker, .. } => worker,
        }
    }
}

/// An operator's revocation of a lease (F8, P15).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Revocation {
    /// Where (on the coordinator).
    pub at: At,
    /// The holder whose lease ended, if any.
    pub holder: Option<WorkerName>,
    /// The new epoch.
    pub epoch: Token,
    /// The operator's action.
    pub action: OperatorAction,
}

/// A heartbeat the coordinator refused ("no row", P4).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Refusal {
    /// Where (on the coordinator).
    pub at: At,
    /// Who asked.
    pub worker: WorkerName,
    /// The failed condition.
    pub reason: RefusalReason,
}

/// The coordinator's decision on a commit (P8).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Accepted; the job's state after it.
    Accepted(JobState),
    /// Refused and kept in the journal only.
    Rejected(RefusalReason),
}

/// A commit the coordinator decided.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Decision {
    /// Where (on the coordinator).
    pub at: At,
    /// Who committed.
    pub worker: WorkerName,
    /// What the coordinator decided.
    pub verdict: Verdict,
}

/// A conditional commit a holder sent.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Commit {
    /// Where (on the holder).
    pub at: At,
    /// The holder's node.
    pub node: NodeId,
    /// What it reported.
    pub outcome: Outcome,
    /// Whether it believed itself in jeopardy.
    pub in_jeopardy: bool,
}

/// What a holder learned that ends its attempt.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Learned {
    /// Its heartbeat was answered "no row" (`heartbeat_lost`).
    Lost,
    /// Its commit was refused (`commit_refused`).
    CommitRefused,
    /// Its result was accepted; it claimed success (`success_claimed`).
    Succeeded,
    /// Its reported failure was accepted (`failure_acknowledged`).
    FailureAcknowledged,
    /// It gave up asking for its commit (`commit_abandoned`).
    CommitAbandoned,
}

/// A holder's journal entry about how its attempt ended.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Told {
    /// Where (on the holder).
    pub at: At,
    /// The holder's node.
    pub node: NodeId,
    /// What it learned.
    pub what: Learned,
}

/// A deadline a holder stated: at its claim or at an acknowledged heartbeat.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Stated {
    /// Where (on the holder).
    pub at: At,
    /// Its conservative deadline on its own clock.
    pub deadline: u64,
    /// A claim (`job_claimed`) rather than an acknowledged heartbeat (`heartbeat_ok`).
    pub claim: bool,
}

/// A span of jeopardy (P13), by trace index.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Span {
    /// The trace index of `jeopardy_entered`.
    pub from: usize,
    /// The trace index of the event that ended it (`jeopardy_exited`, or the end of the
    /// attempt); `None` while it lasts to the end of the run.
    pub to: Option<usize>,
    /// How often the holder journaled entering it (a repeated entry while in jeopardy is
    /// filed under the span it is already in).
    pub entries: u32,
}

/// A side effect a holder started under the lease.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct EffectSent {
    /// Where (on the holder).
    pub at: At,
    /// The holder's node.
    pub node: NodeId,
    /// The receiver, by index among receivers.
    pub receiver: u8,
    /// The entity.
    pub entity: EntityId,
    /// The idempotency key.
    pub key: IdemKey,
    /// Whether the holder believed itself in jeopardy.
    pub in_jeopardy: bool,
}

/// A receiver's answer to an effect, as the holder journaled it.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct EffectAnswer {
    /// Where (on the holder).
    pub at: At,
    /// The holder's node.
    pub node: NodeId,
    /// The idempotency key.
    pub key: IdemKey,
    /// The answer.
    pub outcome: EffectOutcome,
}

/// What a receiver did with an effect.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Received {
    /// It took effect.
    Applied,
    /// A repeated key: the first result was returned.
    Duplicate,
    /// A fence below the entity's mark was refused.
    Fenced {
        /// The highest fence admitted for the entity.
        mark: Token,
    },
    /// Commit-time authorization refused it.
    Unauthorized,
}

/// An effect as a receiver journaled it. It is filed under the lease whose token is its
/// fence (a fence that no grant carried files it under a lease without issues).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Receipt {
    /// Where (on the receiver).
    pub at: At,
    /// The receiver's node.
    pub receiver: NodeId,
    /// The entity.
    pub entity: EntityId,
    /// The idempotency key.
    pub key: IdemKey,
    /// The fence it carried.
    pub fence: Token,
    /// What the receiver did.
    pub outcome: Received,
}

/// What became of a tool call, as the worker or the tool journaled it.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum ToolStep {
    /// The worker started the call.
    Started {
        /// The token of the attempt that asked.
        token: Token,
        /// The plan step.
        step: u8,
    },
    /// The tool answered.
    Answered {
        /// Whether it succeeded.
        success: bool,
    },
    /// The call hit the worker's client timeout (P12 c).
    TimedOut,
    /// The worker asked the tool about the call (P12 c).
    StatusQueried,
    /// The tool itself injected a fault on the call (F7); journaled by the tool's node.
    Faulted(ToolFaultKind),
}

/// One journal entry about a tool call.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct ToolRecord {
    /// Where (on the worker, or on the tool for a fault).
    pub at: At,
    /// The node that journaled it.
    pub node: NodeId,
    /// The job.
    pub job: JobId,
    /// The external request id.
    pub request: u64,
    /// What happened.
    pub step: ToolStep,
}

// ---------------------------------------------------------------------------------------------
// Storage. Every record of a kind lives in one vector for the whole run, and the records of
// one lease (or attempt, or job) are threaded through it by index, in trace order: a run's
// history costs a handful of allocations however many leases it has, and none at all when it
// is cleared and reused (the checkers keep one per thread for every simulated run).

const NONE: u32 = u32::MAX;

/// The records of one kind that belong to one lease, attempt or job: the first and last of
/// them in their arena.
#[derive(Copy, Clone, Debug)]
struct Thread {
    first: u32,
    last: u32,
}

impl Default for Thread {
    fn default() -> Self {
        Thread {
            first: NONE,
            last: NONE,
        }
    }
}

/// One vector of records, each with the index of the next one of its thread.
#[derive(Clone, Debug)]
struct Arena<T> {
    items: Vec<(T, u32)>,
}

impl<T> Default for Arena<T> {
    fn default() -> Self {
        Arena { items: Vec::new() }
    }
}

impl<T> Arena<T> {
    fn push(&mut self, thread: &mut Thread, item: T) -> u32 {
        let k = self.items.len() as u32;
        self.items.push((item, NONE));
        if thread.last == NONE {
            thread.first = k;
        } else {
            self.items[thread.last as usize].1 = k;
        }
        thread.last = k;
        k
    }

    fn iter(&self, thread: Thread) -> Records<'_, T> {
        Records {
            arena: self,
            next: thread.first,
        }
    }

    fn get(&self, k: u32) -> &T {
        &self.items[k as usize].0
    }

    fn get_mut(&mut self, k: u32) -> &mut T {
        &mut self.items[k as usize].0
    }
}

/// The records of one thread, in trace order.
pub struct Records<'h, T> {
    arena: &'h Arena<T>,
    next: u32,
}

impl<'h, T> Iterator for Records<'h, T> {
    type Item = &'h T;

    fn next(&mut self) -> Option<&'h T> {
        if self.next == NONE {
            return None;
        }
        let (item, next) = &self.arena.items[self.next as usize];
        self.next = *next;
        Some(item)
    }
}

#[derive(Clone, Debug)]
struct JobCore {
    job: JobId,
    class: Option<ClassId>,
    leases: Thread,
    failed: Thread,
}

#[derive(Clone, Debug)]
struct LeaseCore {
    job: JobId,
    token: Token,
    ended: Option<usize>,
    issues: Thread,
    refusals: Thread,
    revocations: Thread,
    cap_reached: Thread,
    decisions: Thread,
    attempts: Thread,
    commits: Thread,
    told: Thread,
    effects: Thread,
    answers: Thread,
    receipts: Thread,
}

#[derive(Clone, Debug)]
struct AttemptCore {
    node: NodeId,
    opened: usize,
    ended: Option<usize>,
    stated: Thread,
    jeopardy: Thread,
}

/// One worker's claim, for [`History::running`].
#[derive(Copy, Clone, Debug)]
struct Claim {
    index: usize,
    job: JobId,
    token: Token,
    /// The attempt it belongs to.
    attempt: u32,
}

/// The lease history of one run; see the module's documentation.
#[derive(Clone, Debug, Default)]
pub struct History {
    jobs: Vec<JobCore>,
    /// The job ids found by position ([`NearIds`]); the rest through `job_far`.
    near_ids: NearIds,
    /// Job id -> position in `jobs` + 1 (0 for none), for the ids of `near_ids`.
    job_near: Vec<u32>,
    /// Job id -> position in `jobs`, for the other ids.
    job_far: BTreeMap<JobId, usize>,
    leases: Arena<LeaseCore>,
    attempts: Arena<AttemptCore>,
    issues: Arena<Issue>,
    refusals: Arena<Refusal>,
    revocations: Arena<Revocation>,
    marks: Arena<At>,
    decisions: Arena<Decision>,
    commits: Arena<Commit>,
    told: Arena<Told>,
    effects: Arena<EffectSent>,
    answers: Arena<EffectAnswer>,
    receipts: Arena<Receipt>,
    stated: Arena<Stated>,
    spans: Arena<Span>,
    tools: Vec<ToolRecord>,
    /// (worker, request) -> the node that served it, in the order first sent.
    providers: Vec<((NodeId, u64), NodeId)>,
    /// Every claim, in trace order.
    claims: Vec<Claim>,
    /// Per worker node (by id), its claims: indexes into `claims`, in trace order.
    node_claims: Vec<Vec<u32>>,
    /// Worker nodes that claimed, with the trace index of their first claim.
    claimants: Vec<(NodeId, usize)>,
    /// The (job, token) last filed and its lease: consecutive records are mostly about the
    /// same lease.
    last: Option<(JobId, Token, u32)>,
    /// A lease store's waits on locks and aborted transactions.
    store: StoreCounts,
    /// Per node (by id), the claims and heartbeats it sent and its crashes and restarts, within
    /// the last [`REQUEST_EVENTS_MAX`] trace events, when they are logged
    /// ([`History::log_requests`]).
    requests: Vec<RequestMarks>,
    /// Whether `requests` is kept: for a run judged as it goes, whose trace is not kept whole.
    logs_requests: bool,
}

/// One node's [`RequestMark`]s, in trace order: those from `start` on may still be read.
#[derive(Clone, Debug, Default)]
struct RequestMarks {
    marks: Vec<RequestMark>,
    start: usize,
}

/// Most trace events looked through, back from a lease reply, for the request it answers: the
/// reference keeps 8 requests in flight, each at most a heartbeat period after the last.
pub(crate) const REQUEST_EVENTS_MAX: usize = 1 << 16;

/// A claim or heartbeat a node sent (`req`), or the end of its process (`None`: a crash or a
/// restart), at trace event `index`.
#[derive(Copy, Clone, Debug)]
struct RequestMark {
    index: usize,
    req: Option<u64>,
    t_ns: u64,
    local_ns: u64,
}

/// What a lease store's statements waited for and how many of its transactions it aborted
/// (a SQL coordinator journals them; leasesim's own coordinator has none).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct StoreCounts {
    /// Statement steps that waited on a lock.
    pub waits: u64,
    /// Their simulated waiting time, summed.
    pub waited_ns: u64,
    /// Transactions the store aborted (deadlock, serialization failure).
    pub aborts: u64,
}

// ---------------------------------------------------------------------------------------------
// Reading.

/// One job's history: a view into the [`History`].
#[derive(Copy, Clone)]
pub struct Job<'h> {
    h: &'h History,
    core: &'h JobCore,
}

impl<'h> Job<'h> {
    /// The job.
    pub fn job(&self) -> JobId {
        self.core.job
    }

    /// Its class, from the coordinator's first grant message.
    pub fn class(&self) -> Option<ClassId> {
        self.core.class
    }

    /// Its leases, one per token, in the order the trace first names them.
    pub fn leases(&self) -> impl Iterator<Item = Lease<'h>> + 'h {
        let h = self.h;
        h.leases
            .iter(self.core.leases)
            .map(move |core| Lease { h, core })
    }

    /// Where the coordinator failed it for good (`job_failed`).
    pub fn failed(&self) -> Records<'h, At> {
        self.h.marks.iter(self.core.failed)
    }
}

/// Everything the trace says about one (job, token): the coordinator's side, the holder's
/// side, and the effects made under it. A view into the [`History`].
#[derive(Copy, Clone)]
pub struct Lease<'h> {
    h: &'h History,
    core: &'h LeaseCore,
}

impl<'h> Lease<'h> {
    /// The job.
    pub fn job(&self) -> JobId {
        self.core.job
    }

    /// The token (the lease's epoch and fence).
    pub fn token(&self) -> Token {
        self.core.token
    }

    /// Grants, renewals and checkpoints, in trace order.
    pub fn issues(&self) -> Records<'h, Issue> {
        self.h.issues.iter(self.core.issues)
    }

    /// Its grants, in trace order.
    pub fn grants(&self) -> impl Iterator<Item = &'h Issue> {
        self.issues()
            .filter(|i| matches!(i.kind, Issued::Grant { .. }))
    }

    /// Heartbeats the coordinator refused.
    pub fn refusals(&self) -> Records<'h, Refusal> {
        self.h.refusals.iter(self.core.refusals)
    }

    /// Operator revocations.
    pub fn revocations(&self) -> Records<'h, Revocation> {
        self.h.revocations.iter(self.core.revocations)
    }

    /// Where the coordinator journaled the renewal cap for it (P7).
    pub fn cap_reached(&self) -> Records<'h, At> {
        self.h.marks.iter(self.core.cap_reached)
    }

    /// The coordinator's decisions on commits under it.
    pub fn decisions(&self) -> Records<'h, Decision> {
        self.h.decisions.iter(self.core.decisions)
    }

    /// The trace index at which the coordinator's lease ended after its first issue: another
    /// token's grant of the job, an accepted result, a revocation, the renewal cap, or the
    /// job's failure. `None` if it was never issued or lasted to the end of the run.
    pub fn ended(&self) -> Option<usize> {
        self.core.ended
    }

    /// The holders' attempts, in the order they were opened.
    pub fn attempts(&self) -> impl Iterator<Item = Attempt<'h>> + 'h {
        let h = self.h;
        h.attempts
            .iter(self.core.attempts)
            .map(move |core| Attempt { h, core })
    }

    /// Conditional commits sent.
    pub fn commits(&self) -> Records<'h, Commit> {
        self.h.commits.iter(self.core.commits)
    }

    /// What holders learned that ended their attempts.
    pub fn told(&self) -> Records<'h, Told> {
        self.h.told.iter(self.core.told)
    }

    /// Effects started.
    pub fn effects(&self) -> Records<'h, EffectSent> {
        self.h.effects.iter(self.core.effects)
    }

    /// Receivers' answers the holders journaled.
    pub fn answers(&self) -> Records<'h, EffectAnswer> {
        self.h.answers.iter(self.core.answers)
    }

    /// Effects as the receivers journaled them.
    pub fn receipts(&self) -> Records<'h, Receipt> {
        self.h.receipts.iter(self.core.receipts)
    }

    /// Whether the coordinator had granted it before trace index `i`.
    pub fn granted_before(&self, i: usize) -> bool {
        self.grants().any(|g| g.at.index < i)
    }

    /// Whether an operator had revoked it before trace index `i`.
    pub fn revoked_before(&self, i: usize) -> bool {
        self.revocations().any(|r| r.at.index < i)
    }

    /// Whether the coordinator had accepted a result from `worker` under it before trace
    /// index `i`.
    pub fn accepted_before(&self, worker: WorkerName, i: usize) -> bool {
        self.decisions().any(|d| {
            d.worker == worker && d.at.index < i && matches!(d.verdict, Verdict::Accepted(_))
        })
    }

    /// Whether `node` had sent its conditional commit under it before trace index `i`.
    pub fn commit_sent_before(&self, node: NodeId, i: usize) -> bool {
        self.commits().any(|c| c.node == node && c.at.index < i)
    }

    /// Whether `node` had learned before trace index `i` that it lost the lease or that its
    /// commit was refused.
    pub fn loss_known_before(&self, node: NodeId, i: usize) -> bool {
        self.told().any(|t| {
            t.node == node
                && t.at.index < i
                && matches!(t.what, Learned::Lost | Learned::CommitRefused)
        })
    }

    /// The node that last journaled claiming it before trace index `i`.
    pub fn claimant_before(&self, i: usize) -> Option<NodeId> {
        self.attempts()
            .filter_map(|a| {
                a.stated()
                    .filter(|s| s.claim && s.at.index < i)
                    .last()
                    .map(|s| (s.at.index, a.node()))
            })
            .max()
            .map(|(_, node)| node)
    }

    /// The node of the first attempt that journaled a claim of it.
    pub fn claimant(&self) -> Option<NodeId> {
        self.attempts()
            .find(|a| a.claim().is_some())
            .map(|a| a.node())
    }
}

/// One holder's attempt at a lease, as it stated its belief: from its claim (or its first
/// word about the lease) until it learned the attempt ended or its node crashed. A node that
/// speaks of the same lease again after that starts a new attempt. A view into the
/// [`History`].
#[derive(Copy, Clone)]
pub struct Attempt<'h> {
    h: &'h History,
    core: &'h AttemptCore,
}

impl<'h> Attempt<'h> {
    /// The holder's node.
    pub fn node(&self) -> NodeId {
        self.core.node
    }

    /// The trace index of the event that opened the attempt.
    pub fn opened(&self) -> usize {
        self.core.opened
    }

    /// The trace index of the event that ended it: what the holder learned, or its crash.
    pub fn ended(&self) -> Option<usize> {
        self.core.ended
    }

    /// The deadlines it stated, in trace order.
    pub fn stated(&self) -> Records<'h, Stated> {
        self.h.stated.iter(self.core.stated)
    }

    /// Its spans of jeopardy, in trace order.
    pub fn jeopardy(&self) -> Records<'h, Span> {
        self.h.spans.iter(self.core.jeopardy)
    }

    /// The first claim of the attempt.
    pub fn claim(&self) -> Option<&'h Stated> {
        self.stated().find(|s| s.claim)
    }

    /// The last deadline the holder stated, on its own clock.
    pub fn deadline(&self) -> Option<u64> {
        self.core
            .stated
            .last
            .ne(&NONE)
            .then(|| self.h.stated.get(self.core.stated.last).deadline)
    }

    /// Whether the attempt had ended before trace index `i`.
    pub fn ended_before(&self, i: usize) -> bool {
        self.core.ended.is_some_and(|e| e < i)
    }
}

impl History {
    /// The lease store's waits on locks and aborted transactions.
    pub fn store(&self) -> StoreCounts {
        self.store
    }

    /// Reads the history off a trace, in one pass.
    pub fn new(trace: &Trace) -> History {
        let mut h = History::default();
        for i in 0..trace.len() {
            h.record(trace, i);
        }
        h
    }

    /// An empty history whose every vector has room for `bytes` of records, for a history
    /// reused run after run (see [`History::clear`]).
    pub(crate) fn with_room(bytes: usize) -> History {
        fn room<T>(v: &mut Vec<T>, bytes: usize) {
            v.reserve_exact(bytes / std::mem::size_of::<T>().max(1) + 1);
        }
        let mut h = History::default();
        room(&mut h.jobs, bytes);
        room(&mut h.job_near, bytes);
        room(&mut h.leases.items, bytes);
        room(&mut h.attempts.items, bytes);
        room(&mut h.issues.items, bytes);
        room(&mut h.refusals.items, bytes);
        room(&mut h.revocations.items, bytes);
        room(&mut h.marks.items, bytes);
        room(&mut h.decisions.items, bytes);
        room(&mut h.commits.items, bytes);
        room(&mut h.told.items, bytes);
        room(&mut h.effects.items, bytes);
        room(&mut h.answers.items, bytes);
        room(&mut h.receipts.items, bytes);
        room(&mut h.stated.items, bytes);
        room(&mut h.spans.items, bytes);
        room(&mut h.tools, bytes);
        room(&mut h.providers, bytes);
        room(&mut h.claims, bytes);
        room(&mut h.claimants, bytes);
        h
    }

    /// Empties the history for a run of `jobs` jobs, and keeps its storage.
    pub(crate) fn clear(&mut self, jobs: usize) {
        self.near_ids = NearIds::for_jobs(jobs);
        self.jobs.clear();
        self.job_near.clear();
        if !self.job_far.is_empty() {
            self.job_far.clear();
        }
        self.leases.items.clear();
        self.attempts.items.clear();
        self.issues.items.clear();
        self.refusals.items.clear();
        self.revocations.items.clear();
        self.marks.items.clear();
        self.decisions.items.clear();
        self.commits.items.clear();
        self.told.items.clear();
        self.effects.items.clear();
        self.answers.items.clear();
        self.receipts.items.clear();
        self.stated.items.clear();
        self.spans.items.clear();
        self.tools.clear();
        self.providers.clear();
        self.claims.clear();
        self.node_claims.iter_mut().for_each(Vec::clear);
        self.claimants.clear();
        self.last = None;
        self.store = StoreCounts::default();
        for r in &mut self.requests {
            r.marks.clear();
            r.start = 0;
        }
        self.logs_requests = false;
    }

    /// Files trace event `i` into the history. Events are recorded in trace order, each
    /// once; the checkers call this as they walk the trace, so that at each event they read
    /// the history of everything up to it (every query they make is about what came before),
    /// through the parts below, one per kind of event: their walk matches each event once.
    pub(crate) fn record(&mut self, trace: &Trace, i: usize) {
        let e = &trace[i];
        match &e.kind {
            EventKind::Note { note } => {
                let at = At {
                    index: i,
                    t_ns: e.t,
                    local_ns: e.local,
                };
                self.note(at, e.node, note);
            }
            EventKind::Send { to, msg, .. } => self.sent(e.node, *to, msg),
            EventKind::Fault {
                command: Command::Crash { node },
            } => self.crashed(*node, i),
            EventKind::Fault { .. }
            | EventKind::Deliver { .. }
            | EventKind::Release { .. }
            | EventKind::Lost { .. } => {}
        }
    }

    /// Logs from now on the claims and heartbeats sent ([`History::request`]), so that
    /// [`History::request_sent`] answers (until the next [`History::clear`]).
    pub(crate) fn log_requests(&mut self) {
        self.logs_requests = true;
    }

    /// Whether the claims and heartbeats sent are logged ([`History::log_requests`]).
    pub(crate) fn logs_requests(&self) -> bool {
        self.logs_requests
    }

    /// Files claim or heartbeat `req` that `node` sent at trace event `index` (true time
    /// `t_ns`, its clock reading `local_ns`), or with `req` `None` the end of its process (a crash
    /// or a restart recorded as its own). [`History::forget_requests`] drops the old ones.
    #[inline]
    pub(crate) fn request(
        &mut self,
        node: NodeId,
        index: usize,
        req: Option<u64>,
        t_ns: u64,
        local_ns: u64,
    ) {
        let n = node as usize;
        if self.requests.len() <= n {
            self.requests.resize_with(n + 1, RequestMarks::default);
        }
        self.requests[n].marks.push(RequestMark {
            index,
            req,
            t_ns,
            local_ns,
        });
    }

    /// Forgets the logged requests that no query from trace event `next` on can reach. Marks
    /// are passed over, and dropped once they are half a node's list: amortised constant work
    /// a mark, however often this is called.
    pub(crate) fn forget_requests(&mut self, next: usize) {
        for r in &mut self.requests {
            while r
                .marks
                .get(r.start)
                .is_some_and(|m| m.index + REQUEST_EVENTS_MAX < next)
            {
                r.start += 1;
            }
            if r.start * 2 >= r.marks.len() {
                r.marks.drain(..r.start);
                r.start = 0;
            }
        }
    }

    /// The true time and the clock reading at which `node` sent claim or heartbeat `req`, as
    /// read back from trace event `i` through at most [`REQUEST_EVENTS_MAX`] events: its last
    /// request numbered `req`, unless a lower number (requests are numbered upwards by each
    /// process) or the end of its process comes after it.
    pub(crate) fn request_sent(&self, node: NodeId, i: usize, req: u64) -> Option<(u64, u64)> {
        let r = self.requests.get(node as usize)?;
        for m in r.marks[r.start..].iter().rev() {
            if m.index >= i {
                continue;
            }
            if m.index + REQUEST_EVENTS_MAX < i {
                return None;
            }
            match m.req {
                Some(r) if r == req => return Some((m.t_ns, m.local_ns)),
                Some(r) if r < req => return None,
                Some(_) => {}
                None => return None,
            }
        }
        None
    }

    /// Files a message `from` sent to `to`. Inlined into the walk: most messages file nothing,
    /// and only the journal notes (`History::note`) pay for a call.
    #[inline(always)]
    pub(crate) fn sent(&mut self, from: NodeId, to: NodeId, msg: &Msg) {
        match *msg {
            Msg::ClaimGranted { job, class, .. } => self.classed(job, class),
            // Looked up by the first match, so a repeated request keeps its first provider.
            Msg::ToolRequest { req, .. } => self.providers.push(((from, req), to)),
            Msg::Claim { .. }
            | Msg::ClaimEmpty { .. }
            | Msg::Heartbeat { .. }
            | Msg::HeartbeatOk { .. }
            | Msg::HeartbeatRejected { .. }
            | Msg::Commit { .. }
            | Msg::CommitAccepted { .. }
            | Msg::CommitRejected { .. }
            | Msg::ToolResponse { .. }
            | Msg::Effect { .. }
            | Msg::Checkpoint { .. }
            | Msg::CheckpointAck { .. }
            | Msg::EffectStatus { .. }
            | Msg::EffectStatusReply { .. }
            | Msg::ToolStatus { .. }
            | Msg::Operator { .. }
            | Msg::OperatorDone { .. }
            | Msg::EffectAck { .. } => {}
        }
    }

    /// Every job the trace names in a lease record, in the order the trace first names them.
    pub fn jobs(&self) -> impl Iterator<Item = Job<'_>> {
        self.jobs.iter().map(move |core| Job { h: self, core })
    }

    /// One job's history.
    pub fn job(&self, job: JobId) -> Option<Job<'_>> {
        self.job_pos(job).map(|k| Job {
            h: self,
            core: &self.jobs[k],
        })
    }

    /// Every lease of every job, job by job, each job's in the order the trace first names
    /// them.
    pub fn leases(&self) -> impl Iterator<Item = Lease<'_>> {
        self.jobs().flat_map(|j| j.leases())
    }

    /// The lease of (job, token), if the trace names it.
    #[inline]
    pub fn lease(&self, job: JobId, token: Token) -> Option<Lease<'_>> {
        // The checkers mostly ask about the lease the history filed the event under: that one
        // is found inline, the others by a call.
        if let Some((j, t, k)) = self.last {
            if j == job && t == token {
                return Some(Lease {
                    h: self,
                    core: self.leases.get(k),
                });
            }
        }
        self.lease_of_job(job, token)
    }

    /// The lease of (job, token) when it is not the one last filed.
    #[inline(never)]
    fn lease_of_job(&self, job: JobId, token: Token) -> Option<Lease<'_>> {
        let j = self.job(job)?;
        // Most questions are about the job's latest lease, the last of its thread.
        let latest = j.core.leases.last;
        if latest != NONE && self.leases.get(latest).token == token {
            return Some(Lease {
                h: self,
                core: self.leases.get(latest),
            });
        }
        j.leases().find(|l| l.token() == token)
    }

    /// A job's class, from the coordinator's first grant message.
    pub fn class(&self, job: JobId) -> Option<ClassId> {
        self.job(job).and_then(|j| j.class())
    }

    /// The node that served a worker's tool request, if the trace shows it being sent.
    pub fn provider(&self, worker: NodeId, request: u64) -> Option<NodeId> {
        self.providers
            .iter()
            .find(|(k, _)| *k == (worker, request))
            .map(|&(_, p)| p)
    }

    /// Every journal entry about a tool call, in trace order.
    pub fn tool_records(&self) -> &[ToolRecord] {
        &self.tools
    }

    /// The worker's clock when it last started `request` before trace index `i`.
    pub fn started_before(&self, worker: NodeId, request: u64, i: usize) -> Option<u64> {
        let k = self.tools.partition_point(|r| r.at.index < i);
        self.tools[..k]
            .iter()
            .rev()
            .find(|r| {
                r.node == worker
                    && r.request == request
                    && matches!(r.step, ToolStep::Started { .. })
            })
            .map(|r| r.at.local_ns)
    }

    /// The (job, token) a worker node was running just before trace index `i`: its last claim,
    /// unless that attempt had ended (it learned the outcome, or the node crashed).
    pub fn running(&self, node: NodeId, i: usize) -> Option<(JobId, Token)> {
        let mine = self.node_claims.get(node as usize)?;
        // The checkers ask at the event they judge, after every claim before it was filed: the
        // last claim is nearly always the one.
        let &last = mine.last()?;
        let c = if self.claims[last as usize].index < i {
            &self.claims[last as usize]
        } else {
            let k = mine.partition_point(|&c| self.claims[c as usize].index < i);
            &self.claims[*mine[..k].last()? as usize]
        };
        let ended = self.attempts.get(c.attempt).ended.is_some_and(|e| e < i);
        (!ended).then_some((c.job, c.token))
    }

    /// Every worker node that journaled a claim, with the trace index of its first one, in
    /// that order.
    pub fn claimants(&self) -> &[(NodeId, usize)] {
        &self.claimants
    }

    // -----------------------------------------------------------------------------------------
    // Building.

    fn job_pos(&self, job: JobId) -> Option<usize> {
        match self.job_near.get(job.0 as usize) {
            Some(&k) => (k > 0).then(|| k as usize - 1),
            None if self.near_ids.holds(job.0) => None,
            None => self.job_far.get(&job).copied(),
        }
    }

    /// The position of `job` in `jobs`, made if the trace never named it before: a known job
    /// is found inline, a new one made by a call.
    #[inline(always)]
    fn job_slot(&mut self, job: JobId) -> usize {
        if let Some(&k) = self.job_near.get(job.0 as usize) {
            if k > 0 {
                return k as usize - 1;
            }
        }
        self.new_job(job)
    }

    /// The position of a job not found by position: a far id, or a job new to the history.
    #[inline(never)]
    fn new_job(&mut self, job: JobId) -> usize {
        if let Some(k) = self.job_pos(job) {
            return k;
        }
        let k = self.jobs.len();
        self.jobs.push(JobCore {
            job,
            class: None,
            leases: Thread::default(),
            failed: Thread::default(),
        });
        if self.near_ids.holds(job.0) {
            let i = job.0 as usize;
            if self.job_near.len() <= i {
                self.job_near.resize(i + 1, 0);
            }
            self.job_near[i] = k as u32 + 1;
        } else {
            self.job_far.insert(job, k);
        }
        k
    }

    /// The lease of (job, token), created if the trace never named it before. Consecutive
    /// records are mostly about the same lease: that one is found inline, the others by a call.
    #[inline(always)]
    fn lease_id(&mut self, job: JobId, token: Token) -> u32 {
        if let Some((j, t, k)) = self.last {
            if j == job && t == token {
                return k;
            }
        }
        self.find_lease(job, token)
    }

    /// The lease of (job, token) when it is not the one last filed.
    #[inline(never)]
    fn find_lease(&mut self, job: JobId, token: Token) -> u32 {
        let a = self.job_slot(job);
        // Most records are about the job's latest lease, the last of its thread.
        let latest = self.jobs[a].leases.last;
        let k = if latest != NONE && self.leases.get(latest).token == token {
            latest
        } else {
            let mut found = None;
            let mut next = self.jobs[a].leases.first;
            while next != NONE {
                let (l, n) = &self.leases.items[next as usize];
                if l.token == token {
                    found = Some(next);
                    break;
                }
                next = *n;
            }
            match found {
                Some(k) => k,
                None => self.new_lease(a, job, token),
            }
        };
        self.last = Some((job, token, k));
        k
    }

    /// A lease the trace names for the first time, of the job at position `a`.
    #[inline(never)]
    fn new_lease(&mut self, a: usize, job: JobId, token: Token) -> u32 {
        let core = LeaseCore {
            job,
            token,
            ended: None,
            issues: Thread::default(),
            refusals: Thread::default(),
            revocations: Thread::default(),
            cap_reached: Thread::default(),
            decisions: Thread::default(),
            attempts: Thread::default(),
            commits: Thread::default(),
            told: Thread::default(),
            effects: Thread::default(),
            answers: Thread::default(),
            receipts: Thread::default(),
        };
        self.leases.push(&mut self.jobs[a].leases, core)
    }

    /// The coordinator's grant message names the job's class; the first one counts.
    #[inline(never)]
    fn classed(&mut self, job: JobId, class: ClassId) {
        let k = self.job_slot(job);
        self.jobs[k].class.get_or_insert(class);
    }

    /// Files a journal note `node` made at `at`, by the note's family. Inlined into the
    /// checkers' walk, which files and judges a note in one function, as is each family's
    /// function.
    #[inline(always)]
    pub(crate) fn note(&mut self, at: At, node: NodeId, note: &Event) {
        match *note {
            Event::LeaseGranted { .. }
            | Event::LeaseRenewed { .. }
            | Event::CheckpointSaved { .. }
            | Event::HeartbeatRefused { .. }
            | Event::LeaseRevoked { .. }
            | Event::RenewalCapReached { .. }
            | Event::ResultAccepted { .. }
            | Event::ResultRejected { .. }
            | Event::JobFailed { .. } => self.coordinator_note(at, note),
            Event::JobClaimed { .. }
            | Event::HeartbeatOk { .. }
            | Event::JeopardyEntered { .. }
            | Event::JeopardyExited { .. }
            | Event::HeartbeatLost { .. }
            | Event::CommitRefused { .. }
            | Event::SuccessClaimed { .. }
            | Event::FailureAcknowledged { .. }
            | Event::CommitAbandoned { .. }
            | Event::CommitSent { .. } => self.holder_note(at, node, note),
            Event::EffectStarted { .. }
            | Event::EffectAnswered { .. }
            | Event::EffectApplied { .. }
            | Event::EffectDuplicate { .. }
            | Event::EffectFenced { .. }
            | Event::EffectUnauthorized { .. } => self.effect_note(at, node, note),
            Event::ToolRequestStarted { .. }
            | Event::ToolAnswered { .. }
            | Event::ToolTimedOut { .. }
            | Event::ToolStatusQueried { .. }
            | Event::ToolFaulted { .. } => self.tool_note(at, node, note),
            // Not about a lease: admission, retries, reconciliation, human review, the stage
            // deadline and the operator's own word are read off the trace where needed.
            Event::AdmissionDeferred { .. }
            | Event::RetryScheduled { .. }
            | Event::StageDeadlineExceeded { .. }
            | Event::OperatorActed { .. }
            | Event::EffectReconciled { .. }
            | Event::HumanReviewRequested { .. } => {}
            Event::Store(_) => self.store_note(note),
        }
    }

    /// The coordinator's side: issues, refusals, revocations, the cap, decisions, failures.
    // Long: one arm per coordinator event, each building its record and filing it in its lease.
    #[inline(always)]
    fn coordinator_note(&mut self, at: At, note: &Event) {
        match *note {
            Event::LeaseGranted {
                job,
                holder,
                token,
                attempt,
                lease_until,
                took_over,
                reason,
            } => {
                let l = self.granted(job, token, at.index);
                let x = Issue {
                    at,
                    lease_until,
                    kind: Issued::Grant {
                        holder,
                        attempt,
                        took_over,
                        reason,
                    },
                };
                self.issues.push(&mut self.leases.get_mut(l).issues, x);
            }
            Event::LeaseRenewed {
                job,
                worker,
                token,
                lease_until,
            } => self.issue(job, token, at, lease_until, Issued::Renewal { worker }),
            Event::CheckpointSaved {
                job,
                worker,
                token,
                step,
                lease_until,
            } => {
                let kind = Issued::Checkpoint { worker, step };
                self.issue(job, token, at, lease_until, kind);
            }
            Event::HeartbeatRefused {
                job,
                worker,
                token,
                reason,
            } => {
                let l = self.lease_id(job, token);
                let r = Refusal { at, worker, reason };
                self.refusals.push(&mut self.leases.get_mut(l).refusals, r);
            }
            Event::LeaseRevoked {
                job,
                holder,
                token,
                epoch,
                action,
            } => {
                let r = Revocation {
                    at,
                    holder,
                    epoch,
                    action,
                };
                self.revoked(job, token, r);
            }
            Event::RenewalCapReached { job, token, .. } => {
                let l = self.lease_id(job, token);
                self.marks.push(&mut self.leases.get_mut(l).cap_reached, at);
                self.end_lease(l, at.index);
            }
            Event::ResultAccepted {
                job,
                worker,
                token,
                state,
            } => {
                self.decision(job, token, at, worker, Verdict::Accepted(state));
                let l = self.lease_id(job, token);
                self.end_lease(l, at.index);
            }
            Event::ResultRejected {
                job,
                worker,
                token,
                reason,
                ..
            } => self.decision(job, token, at, worker, Verdict::Rejected(reason)),
            Event::JobFailed { job, .. } => self.failed(job, at),
            // Another family's: `note` files it.
            _ => {}
        }
    }

    /// The holder's side: what it stated, jeopardy, what it was told, its commits.
    #[inline(always)]
    fn holder_note(&mut self, at: At, node: NodeId, note: &Event) {
        match *note {
            Event::JobClaimed {
                job,
                token,
                deadline,
            } => self.stated(node, job, token, at, deadline, true),
            Event::HeartbeatOk {
                job,
                token,
                deadline,
            } => self.stated(node, job, token, at, deadline, false),
            Event::JeopardyEntered { job, token, .. } => self.jeopardy(node, job, token, at),
            Event::JeopardyExited { job, token } => self.quiet(node, job, token, at),
            Event::HeartbeatLost { job, token } => self.told(node, job, token, at, Learned::Lost),
            Event::CommitRefused { job, token } => {
                self.told(node, job, token, at, Learned::CommitRefused)
            }
            Event::SuccessClaimed { job, token } => {
                self.told(node, job, token, at, Learned::Succeeded)
            }
            Event::FailureAcknowledged { job, token } => {
                self.told(node, job, token, at, Learned::FailureAcknowledged)
            }
            Event::CommitAbandoned { job, token } => {
                self.told(node, job, token, at, Learned::CommitAbandoned)
            }
            Event::CommitSent {
                job,
                token,
                outcome,
                in_jeopardy,
            } => {
                let l = self.lease_id(job, token);
                let c = Commit {
                    at,
                    node,
                    outcome,
                    in_jeopardy,
                };
                self.commits.push(&mut self.leases.get_mut(l).commits, c);
            }
            // Another family's: `note` files it.
            _ => {}
        }
    }

    /// Effects: a holder's starts and the answers it got, a receiver's receipts.
    #[inline(always)]
    fn effect_note(&mut self, at: At, node: NodeId, note: &Event) {
        match *note {
            Event::EffectStarted {
                job,
                token,
                receiver,
                entity,
                key,
                in_jeopardy,
            } => {
                let l = self.lease_id(job, token);
                let x = EffectSent {
                    at,
                    node,
                    receiver,
                    entity,
                    key,
                    in_jeopardy,
                };
                self.effects.push(&mut self.leases.get_mut(l).effects, x);
            }
            Event::EffectAnswered {
                job,
                token,
                key,
                outcome,
            } => {
                let l = self.lease_id(job, token);
                let x = EffectAnswer {
                    at,
                    node,
                    key,
                    outcome,
                };
                self.answers.push(&mut self.leases.get_mut(l).answers, x);
            }
            Event::EffectApplied { entity, key, fence } => {
                self.receipt(at, node, entity, key, fence, Received::Applied)
            }
            Event::EffectDuplicate { entity, key, fence } => {
                self.receipt(at, node, entity, key, fence, Received::Duplicate)
            }
            Event::EffectFenced {
                entity,
                key,
                fence,
                mark,
            } => self.receipt(at, node, entity, key, fence, Received::Fenced { mark }),
            Event::EffectUnauthorized { entity, key, fence } => {
                self.receipt(at, node, entity, key, fence, Received::Unauthorized)
            }
            // Another family's: `note` files it.
            _ => {}
        }
    }

    /// Tool calls, as the worker and the tool journal them.
    #[inline(always)]
    fn tool_note(&mut self, at: At, node: NodeId, note: &Event) {
        match *note {
            Event::ToolRequestStarted {
                job,
                token,
                request,
                step,
            } => self.tool(at, node, job, request, ToolStep::Started { token, step }),
            Event::ToolAnswered {
                job,
                request,
                success,
                ..
            } => self.tool(at, node, job, request, ToolStep::Answered { success }),
            Event::ToolTimedOut { job, request, .. } => {
                self.tool(at, node, job, request, ToolStep::TimedOut)
            }
            Event::ToolStatusQueried { job, request, .. } => {
                self.tool(at, node, job, request, ToolStep::StatusQueried)
            }
            Event::ToolFaulted {
                job,
                request,
                fault,
            } => self.tool(at, node, job, request, ToolStep::Faulted(fault)),
            // Another family's: `note` files it.
            _ => {}
        }
    }

    /// A store's statements: the waits and aborts counted. Which statement decided is not
    /// filed: the decision itself follows it.
    #[inline(always)]
    fn store_note(&mut self, note: &Event) {
        match *note {
            Event::Store(StoreEvent::Ran { .. } | StoreEvent::Step { .. }) => {}
            Event::Store(StoreEvent::Waited { waited, .. }) => {
                self.store.waits += 1;
                self.store.waited_ns = self.store.waited_ns.saturating_add(waited);
            }
            Event::Store(StoreEvent::Failed { .. }) => self.store.aborts += 1,
            // Another family's: `note` files it.
            _ => {}
        }
    }

    /// A grant of (job, token) ends every other lease of the job issued before it. Returns the
    /// lease granted, found (or made) in the same walk over the job's leases, which the grant's
    /// lookup and its filing no longer walk twice. Inlined into the walk's arm for grants, like
    /// the functions that file one note.
    #[inline(always)]
    fn granted(&mut self, job: JobId, token: Token, i: usize) -> u32 {
        let a = self.job_slot(job);
        let mut found = NONE;
        let mut next = self.jobs[a].leases.first;
        while next != NONE {
            let (l, n) = &mut self.leases.items[next as usize];
            // A job has one lease per token: one is made only when none is found.
            if l.token == token {
                found = next;
            } else if l.issues.first != NONE && l.ended.is_none() {
                l.ended = Some(i);
            }
            next = *n;
        }
        let k = match found {
            NONE => self.new_lease(a, job, token),
            k => k,
        };
        self.last = Some((job, token, k));
        k
    }

    fn revoked(&mut self, job: JobId, token: Token, r: Revocation) {
        let l = self.lease_id(job, token);
        let i = r.at.index;
        self.revocations
            .push(&mut self.leases.get_mut(l).revocations, r);
        self.end_lease(l, i);
    }

    /// The job failed for good: every lease of it ends.
    fn failed(&mut self, job: JobId, at: At) {
        let a = self.job_slot(job);
        self.marks.push(&mut self.jobs[a].failed, at);
        let mut next = self.jobs[a].leases.first;
        while next != NONE {
            self.end_lease(next, at.index);
            next = self.leases.items[next as usize].1;
        }
    }

    /// `node` entered jeopardy at (job, token): a span opens, unless one is open already.
    /// Inlined into the walk's arm for its note, like the functions that file one note.
    #[inline(always)]
    fn jeopardy(&mut self, node: NodeId, job: JobId, token: Token, at: At) {
        let l = self.lease_id(job, token);
        let a = match self.current(l, node) {
            Some(a) => a,
            None => self.open(l, node, at.index),
        };
        let mut k = self.attempts.get(a).jeopardy.first;
        while k != NONE && self.spans.get(k).to.is_some() {
            k = self.spans.items[k as usize].1;
        }
        match k {
            // A repeated entry while in jeopardy counts in the span it is in.
            NONE => {
                let span = Span {
                    from: at.index,
                    to: None,
                    entries: 1,
                };
                self.spans
                    .push(&mut self.attempts.get_mut(a).jeopardy, span);
            }
            k => self.spans.get_mut(k).entries += 1,
        }
    }

    /// `node` left jeopardy at (job, token): every open span of its attempt closes.
    fn quiet(&mut self, node: NodeId, job: JobId, token: Token, at: At) {
        let l = self.lease_id(job, token);
        if let Some(a) = self.current(l, node) {
            let mut k = self.attempts.get(a).jeopardy.first;
            while k != NONE {
                let (s, next) = &mut self.spans.items[k as usize];
                s.to.get_or_insert(at.index);
                k = *next;
            }
        }
    }

    // The functions that file one kind of note (`issue` to `receipt`) are inlined into the
    // walk's arm for that note (see `History::note`): a call, with its arguments spilled, cost
    // about as much as the filing itself.
    #[inline(always)]
    fn issue(&mut self, job: JobId, token: Token, at: At, lease_until: u64, kind: Issued) {
        let l = self.lease_id(job, token);
        let x = Issue {
            at,
            lease_until,
            kind,
        };
        self.issues.push(&mut self.leases.get_mut(l).issues, x);
    }

    #[inline(always)]
    fn decision(&mut self, job: JobId, token: Token, at: At, worker: WorkerName, verdict: Verdict) {
        let l = self.lease_id(job, token);
        let d = Decision {
            at,
            worker,
            verdict,
        };
        self.decisions
            .push(&mut self.leases.get_mut(l).decisions, d);
    }

    #[inline(always)]
    fn stated(
        &mut self,
        node: NodeId,
        job: JobId,
        token: Token,
        at: At,
        deadline: u64,
        claim: bool,
    ) {
        let l = self.lease_id(job, token);
        let a = match self.current(l, node) {
            Some(a) if self.attempts.get(a).ended.is_none() => a,
            _ => self.open(l, node, at.index),
        };
        let s = Stated {
            at,
            deadline,
            claim,
        };
        self.stated.push(&mut self.attempts.get_mut(a).stated, s);
        if claim {
            // A node is a claimant once it has claims of its own: its first claim is filed here.
            if self
                .node_claims
                .get(node as usize)
                .is_none_or(|mine| mine.is_empty())
            {
                self.claimants.push((node, at.index));
            }
            if self.node_claims.len() <= node as usize {
                self.node_claims.resize_with(node as usize + 1, Vec::new);
            }
            self.node_claims[node as usize].push(self.claims.len() as u32);
            self.claims.push(Claim {
                index: at.index,
                job,
                token,
                attempt: a,
            });
        }
    }

    #[inline(always)]
    fn told(&mut self, node: NodeId, job: JobId, token: Token, at: At, what: Learned) {
        let l = self.lease_id(job, token);
        self.told
            .push(&mut self.leases.get_mut(l).told, Told { at, node, what });
        if let Some(a) = self.current(l, node) {
            self.end_attempt(a, at.index);
        }
    }

    /// Files the crash of `node` at trace event `i`: its open attempts end there.
    pub(crate) fn crashed(&mut self, node: NodeId, i: usize) {
        for a in 0..self.attempts.items.len() as u32 {
            if self.attempts.get(a).node == node {
                self.end_attempt(a, i);
            }
        }
    }

    #[inline(always)]
    fn receipt(
        &mut self,
        at: At,
        receiver: NodeId,
        entity: EntityId,
        key: IdemKey,
        fence: Token,
        outcome: Received,
    ) {
        let l = self.lease_id(key.job, fence);
        let r = Receipt {
            at,
            receiver,
            entity,
            key,
            fence,
            outcome,
        };
        self.receipts.push(&mut self.leases.get_mut(l).receipts, r);
    }

    fn tool(&mut self, at: At, node: NodeId, job: JobId, request: u64, step: ToolStep) {
        self.tools.push(ToolRecord {
            at,
            node,
            job,
            request,
            step,
        });
    }

    /// Ends a lease the coordinator had issued, unless it ended already.
    fn end_lease(&mut self, l: u32, i: usize) {
        let l = self.leases.get_mut(l);
        if l.issues.first != NONE && l.ended.is_none() {
            l.ended = Some(i);
        }
    }

    /// `node`'s latest attempt at lease `l`, ended or not.
    fn current(&self, l: u32, node: NodeId) -> Option<u32> {
        let mut found = None;
        let mut next = self.leases.get(l).attempts.first;
        while next != NONE {
            let (a, n) = &self.attempts.items[next as usize];
            if a.node == node {
                found = Some(next);
            }
            next = *n;
        }
        found
    }

    /// Opens a new attempt of `node` at lease `l`.
    fn open(&mut self, l: u32, node: NodeId, i: usize) -> u32 {
        let a = AttemptCore {
            node,
            opened: i,
            ended: None,
            stated: Thread::default(),
            jeopardy: Thread::default(),
        };
        self.attempts.push(&mut self.leases.get_mut(l).attempts, a)
    }

    /// Ends an attempt at trace index `i`, with the jeopardy it was in, unless it ended already.
    fn end_attempt(&mut self, a: u32, i: usize) {
        if self.attempts.get(a).ended.is_some() {
            return;
        }
        self.attempts.get_mut(a).ended = Some(i);
        let mut k = self.attempts.get(a).jeopardy.first;
        while k != NONE {
            let (s, next) = &mut self.spans.items[k as usize];
            // A span began at or before `i`: the walk files events in order (and a trace's
            // times never go back, so it began no later in time either).
            if s.to.is_none() && s.from <= i {
                s.to = Some(i);
            }
            k = *next;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A job keeps one position in the history whether its id is found by position or through
    /// the map ([`NearIds`]), in a run of 10 jobs and of 100,000.
    #[test]
    fn jobs_by_position_and_through_the_map_keep_their_place() {
        let ids = [0u32, 9, 4_095, 4_096, 70_000, u32::MAX];
        let mut h = History::default();
        for jobs in [10, 100_000] {
            h.clear(jobs);
            let slots: Vec<usize> = ids.iter().map(|&id| h.job_slot(JobId(id))).collect();
            assert_eq!(slots, (0..ids.len()).collect::<Vec<_>>(), "{jobs} jobs");
            for (&id, &k) in ids.iter().zip(&slots) {
                assert_eq!(h.job_pos(JobId(id)), Some(k), "{jobs} jobs");
                assert_eq!(h.job_slot(JobId(id)), k, "{jobs} jobs");
                assert_eq!(h.jobs[k].job, JobId(id));
            }
            for unnamed in [1u32, 4_097, 80_000, u32::MAX - 1] {
                assert_eq!(h.job_pos(JobId(unnamed)), None, "{jobs} jobs");
            }
        }
    }
}
