//! The invariant checkers (oracles) for I1-I8, and the hazard counter. They judge only the
//! trace: what each node recorded, at which true time, on which local clock reading. They never
//! look inside the machines, so the reference, every variant and a user's own implementation
//! are judged alike.
//!
//! [`check`] walks the trace once. At each event it files the event into the run's lease
//! [`History`] (the same reading the reports and the metrics make with
//! [`History::new`](history::History::new)), then hands the event to the checkers it concerns,
//! one per invariant family: [`leases`] (I3, I4, I8), [`commit`] (I1), [`effects`] (I2),
//! [`holder`] (I5), [`lost`] (I6) and [`liveness`] (I7). Each judges the event against what the
//! history says came before it and two models shared by all: the reference lease table
//! (`table`) and what the faults did so far (`faults`), both advanced after the checkers saw
//! the event. Findings come out in trace order, and within one event in the order of that list.
//! The events that nothing files, judges or counts (most of a trace: requests and routine
//! answers the network delivered on time) are passed by in the walk's loop, without a call; a
//! tool request on time is filed there, a request or routine answer the network did not deliver
//! on time goes to the fault model alone, and a send delivered on time is walked without it.
//!
//! Behaviour is judged, not self-report: a decision that crossed the network (an effect a
//! worker sent, a grant, renewal or acceptance the coordinator answered, an effect a receiver
//! acknowledged) is judged from its message when its node journaled nothing about it in the
//! same handler, and from the journal note when it did, once either way (`wire.rs`). The
//! journal adds what only its node knows (a holder's deadline and jeopardy, a grant's reason);
//! a machine that journals less is judged less, and what could not be judged is listed in
//! [`Judgement::skipped`].

pub mod audit;
pub mod commit;
pub mod effects;
mod faults;
mod groups;
mod handler;
pub mod hazard;
pub mod history;
pub mod holder;
pub mod journal;
pub mod leases;
pub mod liveness;
pub mod lost;
pub mod metrics;
pub mod node;
mod table;
mod wire;

use faults::Faults;
pub use hazard::{Hazard, Hazards};
use history::History;
use leasesim_protocol::{
    Event, Finding, GrantReason, IdemKey, Invariant, JobId, JobState, Msg, Token, WorkerName,
};
use leasesim_sim::{Clock, Command, End, EventKind, Fate, NodeId, TraceEvent};
pub use node::{NodeInfo, Role};
use std::fmt;
use table::Table;
use wire::{Said, Sending, Wire};

/// A run's trace.
pub type Trace = [TraceEvent<Msg, Event>];

type Ev = TraceEvent<Msg, Event>;

/// Part of a run's trace, as a walk reads it: trace event `i` is `events[i - base]`. The whole
/// trace has `base` 0; a run judged as it goes ([`Judging`]) keeps only the events a walk may
/// still read.
#[derive(Clone, Copy)]
pub(crate) struct Window<'a> {
    events: &'a Trace,
    base: usize,
}

impl<'a> Window<'a> {
    /// Trace event `i`.
    #[inline(always)]
    pub(crate) fn at(&self, i: usize) -> &'a Ev {
        &self.events[i - self.base]
    }

    /// The events this window holds before trace event `i`.
    #[inline(always)]
    pub(crate) fn before(&self, i: usize) -> &'a Trace {
        &self.events[..i - self.base]
    }

    /// The trace index after this window's last event.
    fn end(&self) -> usize {
        self.base + self.events.len()
    }
}

/// How far back a walk may read from the event it judges: the longest look-back of any checker
/// (see `wire.rs`), plus the event itself. A run judged as it goes keeps this many events before
/// the next one to judge.
pub const LOOK_BACK_EVENTS: usize = wire::LOOK_BACK_MAX + 1;

/// Most findings kept per run: the first ones tell the story; the rest repeat it.
pub const FINDINGS_MAX: usize = 32;

/// What the checkers know of the world besides the trace.
pub struct World<'a> {
    /// Every node, by id.
    pub nodes: &'a [NodeInfo],
    /// The coordinator's clock (the arbiter: never stepped, F4).
    pub coordinator_clock: Clock,
    /// Each worker's clock as configured at true time 0, by node id (the entries of other nodes
    /// are not read): a holder's stated deadline is mapped to true time through it. A worker
    /// whose clock is not here has its stated deadlines left unjudged, and
    /// [`Judgement::skipped`] says so.
    pub clocks: &'a [Clock],
    /// Operation names, by op id, for readable keys.
    pub op_names: &'a [String],
    /// The number of jobs.
    pub jobs: usize,
    /// The network's longest ordinary flight time; longer ones were delayed by the plan.
    pub latency_max_ns: u64,
    /// I7: every job must be terminal by this true time.
    pub liveness_deadline_ns: Option<u64>,
    /// How the run ended and when.
    pub end: End,
    /// True time at the end.
    pub end_ns: u64,
    /// Whether the trace holds the messages as well as the journal (a simulated run's does;
    /// an audited journal is notes only): what only a message can show (an operator's
    /// request behind a revocation) is judged only then.
    pub messages: bool,
}

/// The verdict material of one run.
#[derive(Clone, Debug, Default)]
pub struct Judgement {
    /// Violations, in trace order.
    pub findings: Vec<Finding>,
    /// Hazards reached.
    pub hazards: Hazards,
    /// Judgements the checkers did not make, in the order they were given up: a verdict that
    /// held says what it does not rest on.
    pub skipped: Vec<Skipped>,
}

/// A judgement the checkers did not make for one node from some moment on, and why (a clock
/// that left its drift bound, a clock the checkers were not told).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Skipped {
    /// The invariant the judgement belongs to.
    pub invariant: Invariant,
    /// The judgement's name (`belief-within-grant`, `needless-takeover`).
    pub judgement: &'static str,
    /// The node it was not made for.
    pub node: NodeId,
    /// True time from which it was not made.
    pub from_ns: u64,
    /// Why, in words with no number in them (`its clock left its drift bound (a rate fault)`):
    /// what a sweep counts skipped judgements by.
    pub cause: &'static str,
    /// The whole sentence: `belief-within-grant (I5) not judged for W1 from 12.300s: ...`.
    pub reason: String,
}

impl fmt::Display for Skipped {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.reason)
    }
}

impl Judgement {
    /// Records a skipped judgement, once per (judgement, node).
    fn skip(&mut self, s: Skipped) {
        let known = self
            .skipped
            .iter()
            .any(|k| k.judgement == s.judgement && k.node == s.node);
        if !known {
            self.skipped.push(s);
        }
    }

    fn flag(&mut self, invariant: Invariant, e: &Ev, message: String) {
        self.flag_at(invariant, e.t, e.node, message);
    }

    fn flag_at(&mut self, invariant: Invariant, t_ns: u64, node: NodeId, message: String) {
        if self.findings.len() < FINDINGS_MAX {
            self.findings.push(Finding {
                invariant,
                t_ns,
                node,
                message,
            });
        }
    }

    fn hit(&mut self, h: Hazard) {
        self.hazards.hit(h);
    }
}

/// What does not change during a walk: the world, the trace (as much of it as the walk may
/// read), the coordinator's node.
struct Run<'a> {
    world: &'a World<'a>,
    trace: Window<'a>,
    coordinator: NodeId,
}

/// What every checker reads while it judges trace event `i`: the run, the trace's history, and
/// the shared models as they stood just before the event. Four words, made at each event a
/// checker reads.
struct Cx<'a> {
    run: &'a Run<'a>,
    history: &'a History,
    models: &'a Models,
    /// The index of the event being judged.
    i: usize,
}

impl Cx<'_> {
    fn name(&self, node: NodeId) -> &str {
        self.run
            .world
            .nodes
            .get(node as usize)
            .map_or("world", |n| n.name.as_str())
    }

    fn role(&self, node: NodeId) -> Option<&Role> {
        self.run.world.nodes.get(node as usize).map(|n| &n.role)
    }

    /// The logical name of a worker node.
    fn worker_name(&self, node: NodeId) -> Option<WorkerName> {
        match self.role(node) {
            Some(Role::Worker { name, .. }) => Some(*name),
            _ => None,
        }
    }

    fn key(&self, key: IdemKey) -> String {
        match self.run.world.op_names.get(key.op.0 as usize) {
            Some(op) if key.salt == 0 => format!("tool-job:{}:{op}", key.job.0),
            Some(op) => format!("tool-job:{}:{op}:{}", key.job.0, key.salt),
            None => key.to_string(),
        }
    }

    /// Whether `lease_over` holds for (job, token) at true time `t` in the reference table.
    fn lease_over(&self, job: JobId, token: Token, t: u64) -> bool {
        self.models
            .table
            .lease_over(&self.run.world.coordinator_clock, job, token, t)
    }
}

/// The checkers that keep state of their own between events.
#[derive(Default)]
struct Checkers {
    effects: effects::Effects,
    lost: lost::Lost,
    counter: hazard::Counter,
    wire: Wire,
}

/// The models every checker reads, advanced after the checkers saw each event.
#[derive(Default)]
struct Models {
    table: Table,
    faults: Faults,
}

/// Everything judging a run keeps between its events.
struct State {
    history: History,
    checkers: Checkers,
    models: Models,
}

/// What judging keeps from one run to the next: the state the checkers build for every run,
/// cleared, not dropped, for the next. The history's storage is reserved once, large enough that
/// each vector is a block of its own outside the small-object heap (where the simulator grows
/// its own buffers run after run); the checkers' and the models' sets and maps are vectors that
/// keep theirs. Once the first runs grew them, judging a run allocates almost nothing and leaves
/// that heap as it found it. A caller that judges run after run (a sweep's thread) keeps one and
/// hands it to each [`check`] or [`Judging::start`].
pub struct Scratch {
    state: Box<State>,
    shortcuts: bool,
}

impl Default for Scratch {
    fn default() -> Self {
        Scratch {
            state: Box::new(State {
                history: History::with_room(HISTORY_ROOM_BYTES),
                checkers: Checkers::default(),
                models: Models::default(),
            }),
            shortcuts: true,
        }
    }
}

impl Scratch {
    /// Whether the walks of the runs judged with it take their shortcuts (true unless set).
    pub fn shortcuts(&self) -> bool {
        self.shortcuts
    }

    /// Sets whether they do. Without them, a walk hands every event to every checker and model,
    /// without the shortcuts by which [`check`] passes over routine sends, deliveries and notes
    /// that nothing takes in, or hands them only to the part of the walk that does. The
    /// judgement must be the same, only slower: a test holds the two equal over every scenario
    /// and variant, so that a checker that starts to read one of those events cannot be
    /// bypassed unnoticed.
    pub fn set_shortcuts(&mut self, on: bool) {
        self.shortcuts = on;
    }
}

/// Most jobs whose per-job facts (the reference table's rows, the wire's, the heads of the
/// records filed by job) are laid out when a run starts, by position, with what an unnamed job
/// has: a job the run names then finds its place without a call. A run with more jobs lays out
/// the rest as it names them.
pub(crate) const JOBS_LAID_OUT: usize = 512;

/// The ids (of jobs, or of entities) the checkers' per-run tables find by position rather than
/// through a map: every id below twice the run's number of jobs (a run's job ids are mostly the
/// dense ones from 0), and never fewer than 4,096 nor more than 2^20 of them. Bounded below, so
/// that a run with a few sparse ids still finds the small ones without a search, and above, so
/// that a table laid out by position is at most twice the size of the run's jobs and one large
/// id cannot make a table of every id below it. A run with tens of thousands of jobs then finds
/// each by position: through a map, each lookup cost a search that grew with the number of jobs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct NearIds(u32);

impl NearIds {
    /// The fewest ids found by position.
    const MIN: u32 = 4096;
    /// The most ids found by position.
    const MAX: u32 = 1 << 20;

    /// The ids found by position in a run of `jobs` jobs.
    pub(crate) fn for_jobs(jobs: usize) -> NearIds {
        NearIds(
            jobs.saturating_mul(2)
                .clamp(Self::MIN as usize, Self::MAX as usize) as u32,
        )
    }

    /// Whether `id` is found by position.
    #[inline(always)]
    pub(crate) fn holds(self, id: u32) -> bool {
        id < self.0
    }
}

// The jobs laid out at the start of a run are always found by position.
const _: () = assert!(JOBS_LAID_OUT <= NearIds::MIN as usize);

impl Default for NearIds {
    /// The fewest: what a table not told the run's number of jobs uses.
    fn default() -> Self {
        NearIds(Self::MIN)
    }
}

/// Room reserved for each kind of record of the per-thread history: above the usual threshold
/// (128 KiB) at which an allocator gives a block pages of its own.
const HISTORY_ROOM_BYTES: usize = 256 * 1024;

/// Checks every invariant over a trace and counts the hazards reached, in `scratch`'s storage.
pub fn check(world: &World<'_>, trace: &Trace, scratch: &mut Scratch) -> Judgement {
    // Made here and filled in place: the judgement is returned without copies on the way.
    let mut out = Judgement::default();
    let state = &mut *scratch.state;
    let coordinator = begin(world, state, &mut out);
    let run = Run {
        world,
        trace: Window {
            events: trace,
            base: 0,
        },
        coordinator,
    };
    walk::<false>(&run, state, scratch.shortcuts, &mut out, 0);
    end(&run, state, &mut out);
    out
}

/// A run judged as it goes, a part of its trace at a time, so that the trace need not be kept
/// whole: the same judgement as [`check`] over the whole trace. [`Judging::walk`] takes the
/// events recorded since its last call; events before [`Judging::keep_from`] are never read
/// again and may be dropped.
///
/// The world's `end` and `end_ns` are read only by [`Judging::finish`]: a walk may be given the
/// world with any end while the run goes on.
pub struct Judging<'s> {
    /// The state of the scratch it was started with.
    state: &'s mut State,
    out: Judgement,
    coordinator: NodeId,
    shortcuts: bool,
    /// The trace index of the next event to judge.
    next: usize,
}

impl<'s> Judging<'s> {
    /// Starts judging a run of `world`, in `scratch`'s storage.
    pub fn start(world: &World<'_>, scratch: &'s mut Scratch) -> Judging<'s> {
        let state = &mut *scratch.state;
        let mut out = Judgement::default();
        let coordinator = begin(world, state, &mut out);
        state.history.log_requests();
        Judging {
            state,
            out,
            coordinator,
            shortcuts: scratch.shortcuts,
            next: 0,
        }
    }

    /// Judges the events of `events` (trace events `base`, `base + 1`, ...) not judged yet.
    ///
    /// # Panics
    ///
    /// When `events` lacks one of them, or an event before it that a walk may read
    /// ([`Judging::keep_from`]).
    pub fn walk(&mut self, world: &World<'_>, events: &Trace, base: usize) {
        let trace = Window { events, base };
        assert!(
            base <= self.keep_from() && trace.end() >= self.next,
            "the events from {} to {} do not hold those a walk from {} reads",
            base,
            trace.end(),
            self.next
        );
        let run = Run {
            world,
            trace,
            coordinator: self.coordinator,
        };
        walk::<true>(&run, self.state, self.shortcuts, &mut self.out, self.next);
        self.next = trace.end();
        self.state.history.forget_requests(self.next);
    }

    /// The first trace event a later walk may read: those before it may be dropped.
    pub fn keep_from(&self) -> usize {
        self.next.saturating_sub(LOOK_BACK_EVENTS)
    }

    /// Judges the events not judged yet, then the end of the run (`world.end`, `world.end_ns`).
    pub fn finish(mut self, world: &World<'_>, events: &Trace, base: usize) -> Judgement {
        self.walk(world, events, base);
        let run = Run {
            world,
            trace: Window { events, base },
            coordinator: self.coordinator,
        };
        end(&run, self.state, &mut self.out);
        self.out
    }
}

/// Clears the state for a run of `world`; the coordinator's node.
fn begin(world: &World<'_>, state: &mut State, out: &mut Judgement) -> NodeId {
    let State {
        history,
        checkers,
        models,
    } = state;
    history.clear(world.jobs);
    checkers.clear(world.nodes.len(), world.jobs);
    models.table.clear(world.jobs);
    models.faults.start(world, out);
    world
        .nodes
        .iter()
        .position(|n| n.role == Role::Coordinator)
        .unwrap_or(0) as NodeId
}

/// Judges the trace events of `run` from index `from` to the end of its window.
///
/// With `LOG` the history logs every claim and heartbeat sent, so that a lease reply finds its
/// request without reading the trace back (`History::request_sent`): a run judged as it goes
/// keeps too little of its trace for that. A whole trace is read back instead.
// Long: the walk's loop: one arm per event kind, its shortcuts inline to spare the calls.
#[inline(always)]
fn walk<const LOG: bool>(
    run: &Run<'_>,
    state: &mut State,
    shortcuts: bool,
    out: &mut Judgement,
    from: usize,
) {
    let State {
        history,
        checkers,
        models,
    } = state;
    let mut walk = Walk {
        run: Run {
            world: run.world,
            trace: run.trace,
            coordinator: run.coordinator,
        },
        history,
        checkers,
        models,
        out,
        shortcuts,
    };
    let latency_max_ns = walk.run.world.latency_max_ns;
    let coordinator = walk.run.coordinator;
    let trace = walk.run.trace;
    for (k, e) in trace.events[from - trace.base..].iter().enumerate() {
        let i = from + k;
        // Each event is matched once, and taken in by the history (what the checkers ask of it
        // is what came before, so it grows with the walk), then judged by the checkers, then
        // taken in by the models. Most events are requests and routine answers that the network
        // delivered on time: nothing files, judges or counts them, and the walk passes them by
        // here, without a call (see `quiet_send` and `quiet_delivery`).
        match &e.kind {
            EventKind::Send { to, msg, fate, .. } => {
                // Whatever its fate: a lease reply's request is looked up by its number.
                if LOG {
                    if let Msg::Claim { req, .. } | Msg::Heartbeat { req, .. } = *msg {
                        walk.history.request(e.node, i, Some(req), e.t, e.local);
                    }
                }
                if let Fate::Deliver { delay_ns } = *fate {
                    if shortcuts && delay_ns <= latency_max_ns {
                        if quiet_send(msg) {
                            continue;
                        }
                        // A tool request on time is only filed: the history keeps which node
                        // serves it; nothing judges or counts it.
                        if let Msg::ToolRequest { .. } = msg {
                            walk.history.sent(e.node, *to, msg);
                            continue;
                        }
                        // Delivered on time: the fault model takes nothing in.
                        walk.sent::<true>(i, e, *to, msg, fate);
                        continue;
                    }
                }
                // A request or routine answer lost, held, duplicated or delayed: only the
                // fault model takes it in, through its fate.
                if shortcuts && quiet_send(msg) {
                    walk.disturbed(e, *to, fate);
                    continue;
                }
                walk.sent::<false>(i, e, *to, msg, fate);
            }
            EventKind::Deliver { msg, .. } => {
                if shortcuts && walk.checkers.lost.owes_nothing() {
                    // Of a claim's arrival only the claims close together are counted; the
                    // coordinator receives a claim from every idle worker at every poll, so
                    // claims are told apart first.
                    if let Msg::Claim { .. } = msg {
                        walk.checkers
                            .counter
                            .claim_arrived(e.t, &mut walk.out.hazards);
                        continue;
                    }
                    if quiet_delivery(msg) {
                        continue;
                    }
                }
                walk.delivered(i, e, msg);
            }
            EventKind::Note { note } => walk.note(i, e, note),
            EventKind::Fault { command } => {
                if LOG {
                    if let Command::Crash { .. } | Command::Restart { .. } = command {
                        walk.history.request(e.node, i, None, e.t, e.local);
                    }
                }
                walk.fault(i, e, command)
            }
            EventKind::Release { .. } => walk.models.faults.released(coordinator, e.node, e.t),
            EventKind::Lost { .. } => {}
        }
    }
}

/// The end-of-trace checks: pending journal debts (I6), then bounded completion (I7).
fn end(run: &Run<'_>, state: &mut State, out: &mut Judgement) {
    let State {
        history,
        checkers,
        models,
    } = state;
    let cx = Cx {
        run,
        history,
        models,
        i: run.trace.end(),
    };
    checkers.lost.finish(&cx, out);
    liveness::finish(&cx, out);
}

/// Whether a message, sent and delivered on time, is one that nothing takes in at its send: not
/// a decision (`wire.rs`), a refusal (`lost.rs`), an answer the hazards count, a grant's class
/// or a tool request's provider (the history). The fault model sees a send only through its
/// fate, and an on-time delivery changes nothing there.
#[inline(always)]
fn quiet_send(msg: &Msg) -> bool {
    match msg {
        // A heartbeat sent in jeopardy and a saved checkpoint are hazards their messages show
        // (`hazard::of_message`), as is a status query.
        Msg::Heartbeat { in_jeopardy, .. } => !in_jeopardy,
        Msg::CheckpointAck { saved, .. } => !saved,
        Msg::Claim { .. }
        | Msg::ClaimEmpty { .. }
        | Msg::Commit { .. }
        | Msg::ToolResponse { .. }
        | Msg::Checkpoint { .. }
        | Msg::EffectStatus { .. }
        | Msg::EffectStatusReply { .. }
        | Msg::Operator { .. } => true,
        Msg::ToolStatus { .. } => false,
        Msg::ClaimGranted { .. }
        | Msg::HeartbeatOk { .. }
        | Msg::HeartbeatRejected { .. }
        | Msg::CommitAccepted { .. }
        | Msg::CommitRejected { .. }
        | Msg::ToolRequest { .. }
        | Msg::Effect { .. }
        | Msg::EffectAck { .. }
        | Msg::OperatorDone { .. } => false,
    }
}

/// Whether a delivered message is one that no checker reads at its delivery (a worker that
/// still owes the journal a loss is judged at any delivery: see `Lost::delivered`): not a
/// refusal, a lease reply, a claim (the hazard of claims close together) or a tool's answer.
#[inline(always)]
fn quiet_delivery(msg: &Msg) -> bool {
    match msg {
        Msg::ClaimEmpty { .. }
        | Msg::Heartbeat { .. }
        | Msg::Commit { .. }
        | Msg::CommitAccepted { .. }
        | Msg::ToolRequest { .. }
        | Msg::Effect { .. }
        | Msg::EffectAck { .. }
        | Msg::Operator { .. }
        | Msg::OperatorDone { .. }
        | Msg::Checkpoint { .. }
        | Msg::EffectStatus { .. }
        | Msg::EffectStatusReply { .. }
        | Msg::ToolStatus { .. } => true,
        Msg::Claim { .. }
        | Msg::ClaimGranted { .. }
        | Msg::HeartbeatOk { .. }
        | Msg::HeartbeatRejected { .. }
        | Msg::CommitRejected { .. }
        | Msg::CheckpointAck { .. }
        | Msg::ToolResponse { .. } => false,
    }
}

/// Whether a journal note is one that neither the checkers nor the reference table take in:
/// the history files it, a hazard may count it, and nothing judges it where it stands (tool
/// calls, effects' answers, commits sent, refusals the coordinator journaled, statements). About
/// a third of a trace's notes; they skip the context and the checkers' dispatch.
#[inline(always)]
fn filed_only(note: &Event) -> bool {
    match note {
        Event::AdmissionDeferred { .. }
        | Event::RetryScheduled { .. }
        | Event::JobFailed { .. }
        | Event::HeartbeatRefused { .. }
        | Event::ResultRejected { .. }
        | Event::JeopardyExited { .. }
        | Event::ToolRequestStarted { .. }
        | Event::ToolAnswered { .. }
        | Event::StageDeadlineExceeded { .. }
        | Event::ToolFaulted { .. }
        | Event::OperatorActed { .. }
        | Event::ToolTimedOut { .. }
        | Event::EffectReconciled { .. }
        | Event::ToolStatusQueried { .. }
        | Event::HumanReviewRequested { .. }
        | Event::EffectAnswered { .. }
        | Event::CommitSent { .. }
        | Event::EffectUnauthorized { .. }
        | Event::EffectFenced { .. }
        | Event::Store(_) => true,
        Event::LeaseGranted { .. }
        | Event::CheckpointSaved { .. }
        | Event::RenewalCapReached { .. }
        | Event::LeaseRevoked { .. }
        | Event::LeaseRenewed { .. }
        | Event::ResultAccepted { .. }
        | Event::JobClaimed { .. }
        | Event::HeartbeatOk { .. }
        | Event::HeartbeatLost { .. }
        | Event::JeopardyEntered { .. }
        | Event::EffectStarted { .. }
        | Event::SuccessClaimed { .. }
        | Event::FailureAcknowledged { .. }
        | Event::CommitRefused { .. }
        | Event::CommitAbandoned { .. }
        | Event::EffectApplied { .. }
        | Event::EffectDuplicate { .. } => false,
    }
}

/// One walk over a trace: what judging it keeps, and the verdict so far. Each kind of event
/// is taken in by a function of its own, out of line, so that the loop over the trace stays
/// small and keeps its few values in registers.
struct Walk<'a, 's> {
    run: Run<'a>,
    history: &'s mut History,
    checkers: &'s mut Checkers,
    models: &'s mut Models,
    out: &'s mut Judgement,
    /// Whether notes only the history files skip the rest (see [`Scratch::set_shortcuts`]).
    shortcuts: bool,
}

/// `$walk` in one arm per kind of the message `$msg`: the same code in each, which the compiler
/// specializes to the kind the arm matched, so that what `$walk` inlines does not match it again.
macro_rules! by_msg_kind {
    ($msg:expr, $walk:expr) => {
        match $msg {
            Msg::Claim { .. } => $walk,
            Msg::ClaimGranted { .. } => $walk,
            Msg::ClaimEmpty { .. } => $walk,
            Msg::Heartbeat { .. } => $walk,
            Msg::HeartbeatOk { .. } => $walk,
            Msg::HeartbeatRejected { .. } => $walk,
            Msg::Commit { .. } => $walk,
            Msg::CommitAccepted { .. } => $walk,
            Msg::CommitRejected { .. } => $walk,
            Msg::ToolRequest { .. } => $walk,
            Msg::ToolResponse { .. } => $walk,
            Msg::Effect { .. } => $walk,
            Msg::Checkpoint { .. } => $walk,
            Msg::CheckpointAck { .. } => $walk,
            Msg::EffectStatus { .. } => $walk,
            Msg::EffectStatusReply { .. } => $walk,
            Msg::ToolStatus { .. } => $walk,
            Msg::Operator { .. } => $walk,
            Msg::OperatorDone { .. } => $walk,
            Msg::EffectAck { .. } => $walk,
        }
    };
}

/// The context of trace event `$i` for the checkers, as a closure: made only where one reads it.
macro_rules! cx {
    ($run:expr, $history:expr, $models:expr, $i:expr) => {
        || Cx {
            run: $run,
            history: $history,
            models: $models,
            i: $i,
        }
    };
}

impl Walk<'_, '_> {
    /// A journal note: filed, counted as a hazard if it is one by its kind, judged, then taken
    /// in by the reference table. The history's and the checkers' parts are inlined here, in
    /// one function out of the walk's loop, and matched on the note's kind once: each arm below
    /// is the same walk (`Walk::take_note`), which the compiler specializes to that kind, so the
    /// history, the hazards, the checkers and the table do not each dispatch on it again.
    #[inline(never)]
    fn note(&mut self, i: usize, e: &Ev, note: &Event) {
        macro_rules! by_kind {
            ($($kind:ident),* $(,)?) => {
                match note {
                    $(Event::$kind { .. } => self.take_note(i, e, note),)*
                }
            };
        }
        by_kind!(
            LeaseGranted,
            CheckpointSaved,
            AdmissionDeferred,
            RetryScheduled,
            JobFailed,
            RenewalCapReached,
            LeaseRevoked,
            LeaseRenewed,
            HeartbeatRefused,
            ResultAccepted,
            ResultRejected,
            JobClaimed,
            HeartbeatOk,
            HeartbeatLost,
            JeopardyEntered,
            JeopardyExited,
            ToolRequestStarted,
            ToolAnswered,
            StageDeadlineExceeded,
            ToolFaulted,
            OperatorActed,
            ToolTimedOut,
            EffectStarted,
            EffectReconciled,
            ToolStatusQueried,
            HumanReviewRequested,
            EffectAnswered,
            CommitSent,
            SuccessClaimed,
            FailureAcknowledged,
            CommitRefused,
            CommitAbandoned,
            EffectApplied,
            EffectDuplicate,
            EffectUnauthorized,
            EffectFenced,
            Store,
        )
    }

    /// The walk of one journal note, inlined into each arm of `Walk::note`.
    #[inline(always)]
    fn take_note(&mut self, i: usize, e: &Ev, note: &Event) {
        let Walk {
            run,
            history,
            checkers,
            models,
            out,
            shortcuts,
        } = self;
        let at = history::At {
            index: i,
            t_ns: e.t,
            local_ns: e.local,
        };
        history.note(at, e.node, note);
        if let Some(h) = hazard::of_note(note) {
            out.hit(h);
        }
        if *shortcuts && filed_only(note) {
            return;
        }
        checkers.note(&cx!(run, history, models, i)(), e, note, out);
        models.table.note(e, note, &mut out.hazards);
    }

    /// A fault plan's command.
    #[inline(never)]
    fn fault(&mut self, i: usize, e: &Ev, command: &Command) {
        let Walk {
            run,
            history,
            checkers,
            models,
            out,
            ..
        } = self;
        if let Command::Crash { node } = *command {
            history.crashed(node, i);
        }
        checkers.fault(&cx!(run, history, models, i)(), command, e.t, out);
        models
            .faults
            .command(run.world, run.coordinator, command, e.t, out);
    }

    /// A message sent: filed, judged as the decision it announced if its handler journaled
    /// none, then taken in by the fault model and the reference table. `ON_TIME`: the walk
    /// knows its fate is a delivery within the network's longest ordinary flight time, which
    /// the fault model takes nothing from. Matched on the message's kind once, as
    /// `Walk::delivered` is: each arm is `Walk::take_sent`, specialized, so that the history,
    /// the hazard counter, the refusals' checker and the wire do not each match it again.
    #[inline(never)]
    fn sent<const ON_TIME: bool>(&mut self, i: usize, e: &Ev, to: NodeId, msg: &Msg, fate: &Fate) {
        by_msg_kind!(msg, self.take_sent::<ON_TIME>(i, e, to, msg, fate))
    }

    /// The walk of one send, inlined into each arm of `Walk::sent`.
    #[inline(always)]
    fn take_sent<const ON_TIME: bool>(
        &mut self,
        i: usize,
        e: &Ev,
        to: NodeId,
        msg: &Msg,
        fate: &Fate,
    ) {
        let Walk {
            run,
            history,
            checkers,
            models,
            out,
            ..
        } = self;
        history.sent(e.node, to, msg);
        let (world, coordinator) = (run.world, run.coordinator);
        let s = Sending { e, to, msg, fate };
        let said = checkers.sent(cx!(run, history, models, i), coordinator, &s, out);
        let hazards = &mut out.hazards;
        if !ON_TIME {
            models.faults.sent(world, coordinator, e, to, fate, hazards);
        }
        if let Some(said) = said {
            models.table.said(e, &said, hazards);
        }
    }

    /// A message sent that only the fault model takes in, through its fate.
    #[inline(never)]
    fn disturbed(&mut self, e: &Ev, to: NodeId, fate: &Fate) {
        let (world, coordinator) = (self.run.world, self.run.coordinator);
        let hazards = &mut self.out.hazards;
        self.models
            .faults
            .sent(world, coordinator, e, to, fate, hazards);
    }

    /// A message delivered: judged. Matched on the message's kind once, as `Walk::note` matches
    /// a note's: each arm is `Walk::take_delivered`, specialized.
    #[inline(never)]
    fn delivered(&mut self, i: usize, e: &Ev, msg: &Msg) {
        by_msg_kind!(msg, self.take_delivered(i, e, msg))
    }

    /// The walk of one delivery, inlined into each arm of `Walk::delivered`.
    #[inline(always)]
    fn take_delivered(&mut self, i: usize, e: &Ev, msg: &Msg) {
        let Walk {
            run,
            history,
            checkers,
            models,
            out,
            ..
        } = self;
        checkers.delivered(cx!(run, history, models, i), e, msg, out);
    }
}

impl Checkers {
    /// Starts over for a run with `nodes` nodes and `jobs` jobs, keeping the storage.
    fn clear(&mut self, nodes: usize, jobs: usize) {
        self.effects.clear(jobs);
        self.lost.clear();
        self.counter.clear(jobs);
        self.wire.clear(nodes, jobs);
    }

    /// A fault plan's command, judged against the history and the models as they stood before
    /// it.
    fn fault(&mut self, cx: &Cx<'_>, command: &Command, t: u64, out: &mut Judgement) {
        self.counter.command(cx, command, t, out);
        if let Command::Crash { node } = *command {
            self.lost.crashed(node);
            self.wire.crashed(node);
        }
    }

    /// A message `e.node` sent, judged against the history and the models as they stood before
    /// it (`cx` makes the context to read them through). Returns the decision it announced
    /// without a journal note, for the models to take in.
    #[inline(always)]
    fn sent<'a>(
        &mut self,
        cx: impl Fn() -> Cx<'a>,
        coordinator: NodeId,
        s: &Sending<'_>,
        out: &mut Judgement,
    ) -> Option<Said> {
        let (e, msg) = (s.e, s.msg);
        if e.node == coordinator {
            self.counter.answered(msg, out);
            lost::coordinator_sent(&cx, e, msg, out);
        }
        if let Some(h) = hazard::of_message(&cx(), e, msg) {
            self.counter.seen(e.node, msg, h, out);
        }
        let said = self.wire.sent(&cx, coordinator, s, out)?;
        self.said(&cx(), e, said, out);
        Some(said)
    }

    /// A message delivered to `e.node`, judged the same way.
    #[inline(always)]
    fn delivered<'a>(&mut self, cx: impl Fn() -> Cx<'a>, e: &Ev, msg: &Msg, out: &mut Judgement) {
        self.lost.delivered(&cx, e, msg, out);
        self.counter.delivered(&cx, e, msg, out);
        self.wire.delivered(&cx, e, msg, out);
    }

    /// A decision judged from its message, its node having journaled none: the same checks its
    /// journal note would get, as far as the message tells.
    fn said(&mut self, cx: &Cx<'_>, e: &Ev, said: Said, out: &mut Judgement) {
        match said {
            Said::Grant {
                job, token, holder, ..
            } => {
                let m = cx.models.table.row(job);
                leases::granted_said(cx, e, job, holder, token, out);
                if m.state == Some(JobState::Running) && m.token < token {
                    liveness::takeover(cx, e, job, m.token, out);
                    // A running job's expired lease given to another: a takeover, as the
                    // journal of one that keeps it would say (`hazard::of_note`).
                    if m.valid_until.is_none_or(|u| u <= e.local) {
                        out.hit(Hazard::Takeover);
                    }
                }
            }
            Said::Renewal {
                job, token, worker, ..
            } => leases::renewed(cx, e, job, worker, token, out),
            Said::Accepted {
                job,
                token,
                worker,
                success,
            } => {
                commit::accepted(cx, e, job, worker, token, out);
                if success == Some(true) {
                    liveness::ended(cx, e, job, out);
                }
            }
            // Revocations are judged from the journal only (I8: the epoch is not in the answer).
            Said::Operated { .. } => {}
            Said::Admitted {
                entity,
                key,
                fence,
                applied,
            } => {
                self.effects
                    .admitted(cx, e, (entity, key, fence), applied, out);
                if applied {
                    lost::effect_applied(cx, e, key, fence, out);
                }
            }
            Said::Effect {
                job,
                fence,
                receiver,
                key,
            } => {
                effects::started(cx, e, job, fence, receiver, key, out);
                let told_lost = self.wire.refused(e.node, job, fence);
                holder::effect_sent(cx, e, (job, fence), key, told_lost, out);
            }
        }
    }

    /// A journal event, handed to the checkers it concerns in the order of the crate's list.
    /// Inlined into `Walk::note`, which is out of the walk's loop.
    // Long: one arm per journal event, each one to three calls into the checkers it concerns.
    #[inline(always)]
    fn note(&mut self, cx: &Cx<'_>, e: &Ev, note: &Event, out: &mut Judgement) {
        match *note {
            Event::LeaseGranted {
                job,
                holder,
                token,
                lease_until,
                took_over,
                reason,
                ..
            } => {
                self.wire.issue(job, token, lease_until);
                leases::granted(cx, e, (job, token), holder, took_over, reason, out);
                if let (Some(old), GrantReason::Expired) = (took_over, reason) {
                    liveness::takeover(cx, e, job, old, out);
                }
            }
            Event::LeaseRenewed {
                job,
                worker,
                token,
                lease_until,
            }
            | Event::CheckpointSaved {
                job,
                worker,
                token,
                lease_until,
                ..
            } => {
                self.wire.issue(job, token, lease_until);
                // A checkpoint renews the lease for the next stage: judged like a renewal (I4).
                leases::renewed(cx, e, job, worker, token, out);
            }
            Event::LeaseRevoked {
                job,
                token,
                epoch,
                action,
                ..
            } => leases::revoked(cx, e, job, token, epoch, action, out),
            Event::ResultAccepted {
                job,
                worker,
                token,
                state,
            } => {
                commit::accepted(cx, e, job, worker, token, out);
                if state.is_terminal() {
                    liveness::ended(cx, e, job, out);
                }
            }
            Event::RenewalCapReached { job, .. } => liveness::ended(cx, e, job, out),
            Event::EffectApplied { entity, key, fence } => {
                self.effects
                    .admitted(cx, e, (entity, key, fence), true, out);
                lost::effect_applied(cx, e, key, fence, out);
            }
            Event::EffectDuplicate { entity, key, fence } => {
                self.effects
                    .admitted(cx, e, (entity, key, fence), false, out);
            }
            Event::EffectStarted {
                job,
                token,
                receiver,
                key,
                in_jeopardy,
                ..
            } => {
                effects::started(cx, e, job, token, receiver, key, out);
                let told_lost = self.wire.refused(e.node, job, token);
                holder::effect_started(cx, e, (job, token), key, in_jeopardy, told_lost, out);
            }
            Event::JobClaimed {
                job,
                token,
                deadline,
            } => {
                self.counter.claimed(cx, e, out);
                let issued = self.wire.issued(cx.history, job, token);
                let late = holder::stated(cx, e, (job, token), deadline, true, issued, out);
                self.wire.confirmed(e.node, late);
            }
            Event::HeartbeatOk {
                job,
                token,
                deadline,
            } => {
                let issued = self.wire.issued(cx.history, job, token);
                let late = holder::stated(cx, e, (job, token), deadline, false, issued, out);
                self.wire.confirmed(e.node, late);
            }
            Event::JeopardyEntered { job, token, .. } => {
                holder::jeopardy_entered(cx, e, job, token, self.wire.late(e.node), out);
            }
            Event::HeartbeatLost { job, token } | Event::CommitRefused { job, token } => {
                self.lost.learned_loss(cx, e, note, job, token, out);
            }
            Event::FailureAcknowledged { job, token } | Event::CommitAbandoned { job, token } => {
                self.lost.attempt_ended(e.node, job, token);
            }
            Event::SuccessClaimed { job, token } => {
                self.lost.attempt_ended(e.node, job, token);
                holder::success_claimed(cx, e, job, token, out);
            }
            // Counted as hazards only, or read from the history by the checkers that need them.
            Event::ResultRejected { .. }
            | Event::AdmissionDeferred { .. }
            | Event::RetryScheduled { .. }
            | Event::JobFailed { .. }
            | Event::EffectReconciled { .. }
            | Event::HumanReviewRequested { .. }
            | Event::ToolStatusQueried { .. }
            | Event::EffectUnauthorized { .. }
            | Event::HeartbeatRefused { .. }
            | Event::EffectFenced { .. }
            | Event::EffectAnswered { .. }
            | Event::CommitSent { .. }
            | Event::JeopardyExited { .. }
            | Event::ToolRequestStarted { .. }
            | Event::ToolAnswered { .. }
            | Event::ToolTimedOut { .. }
            | Event::StageDeadlineExceeded { .. }
            | Event::ToolFaulted { .. }
            | Event::Store(_)
            | Event::OperatorActed { .. } => {}
        }
    }
}

pub use leasesim_sim::time::secs_ms as fmt_ns;
