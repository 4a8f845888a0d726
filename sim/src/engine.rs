//! The discrete-event engine: one true time, an event queue ordered by (time, sequence), nodes
//! that each see their own clock, a network that gives each message its own fate, partitions,
//! pauses, crashes and restarts, a bounded event budget, and a trace of plain data.
//!
//! Architecture invariant: the engine knows nothing of leases. Processes and the director (the
//! scenario's fault plan) are the only places that give meaning to messages.

use crate::clock::Clock;
use crate::held::Held;
use crate::rng::{Prng, Stream};
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;
use std::fmt::Debug;

/// A node's index in the simulation.
pub type NodeId = u32;

/// The node id used in the trace for events that belong to no node (faults of the world).
pub const WORLD: NodeId = u32::MAX;

/// A process the engine runs: one per node. All inputs carry the node's local time through
/// [`Cx`]; outputs go into it. A process never sees true time.
pub trait Process {
    /// Messages between nodes.
    type Msg: Copy + Debug;
    /// Notes a node records in the trace (its journal).
    type Note: Copy + Debug;
    /// The node starts (at true time 0) or restarts after a crash.
    fn start(&mut self, cx: &mut Cx<'_, Self::Msg, Self::Note>);
    /// A message arrives.
    fn message(&mut self, cx: &mut Cx<'_, Self::Msg, Self::Note>, from: NodeId, msg: Self::Msg);
    /// The wake-up the node asked for is due (a spurious wake must be a no-op).
    fn wake(&mut self, cx: &mut Cx<'_, Self::Msg, Self::Note>);
    /// The node crashed: volatile state is lost, durable state is kept.
    fn crash(&mut self);
    /// An outside stimulus the fault plan sends (an operator's action); a no-op by default.
    fn signal(&mut self, _cx: &mut Cx<'_, Self::Msg, Self::Note>, _tag: u64) {}
}

/// What a process produced, in order.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Out<M, N> {
    /// A message to a node.
    Send(NodeId, M),
    /// A note for the trace.
    Note(N),
}

/// The context of one process call: the local time, and where outputs go.
pub struct Cx<'a, M, N> {
    now: u64,
    wall: u64,
    node: NodeId,
    out: &'a mut Vec<Out<M, N>>,
    wake: Option<u64>,
    /// The first rule of its host the process broke in this call, with its node.
    fault: &'a mut Option<(NodeId, String)>,
}

impl<M, N> Cx<'_, M, N> {
    /// The node's local monotonic clock reading.
    pub fn now(&self) -> u64 {
        self.now
    }
    /// The node's wall-clock reading (steps may move it either way).
    pub fn wall(&self) -> u64 {
        self.wall
    }
    /// The node's own id.
    pub fn node(&self) -> NodeId {
        self.node
    }
    /// Sends a message; its fate is decided by the network and the director.
    pub fn send(&mut self, to: NodeId, msg: M) {
        self.out.push(Out::Send(to, msg));
    }
    /// Records a note in the trace.
    pub fn note(&mut self, note: N) {
        self.out.push(Out::Note(note));
    }
    /// Asks to be woken when the local clock reads `at` (replaces any earlier request);
    /// `None` cancels.
    pub fn set_wake(&mut self, at: Option<u64>) {
        self.wake = at;
    }
    /// Reports that the process broke a rule of its host (it addressed a node that does not
    /// exist, it produced more than its host takes for one input): the run ends with
    /// [`End::ProcessFault`] after this call, naming the node and the first reason; never a
    /// panic.
    pub fn fault(&mut self, reason: String) {
        self.fault.get_or_insert((self.node, reason));
    }
}

/// One call of a process made outside this engine (another engine drives the same processes):
/// `f` runs with the given local clock readings and wake request; the outputs, in order, the
/// wake request after the call and the rule of its host the process broke, if any, come back.
pub fn drive<P: Process>(
    p: &mut P,
    node: NodeId,
    now: u64,
    wall: u64,
    wake: Option<u64>,
    out: &mut Vec<Out<P::Msg, P::Note>>,
    f: impl FnOnce(&mut P, &mut Cx<'_, P::Msg, P::Note>),
) -> (Option<u64>, Option<String>) {
    let mut fault = None;
    let mut cx = Cx {
        now,
        wall,
        node,
        out,
        wake,
        fault: &mut fault,
    };
    f(p, &mut cx);
    (cx.wake, fault.map(|(_, reason)| reason))
}

/// Why a message was dropped.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DropCause {
    /// Random loss (F3).
    Loss,
    /// The link was cut (F1).
    Partition,
    /// The fault plan dropped it.
    Plan,
}

/// A message's fate, decided when it is sent.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "fate", rename_all = "snake_case")]
pub enum Fate {
    /// Delivered after a delay.
    Deliver {
        /// Flight time.
        delay_ns: u64,
    },
    /// Delivered twice (F3).
    Duplicate {
        /// Flight time of the first copy.
        delay_ns: u64,
        /// Flight time of the second copy.
        dup_delay_ns: u64,
    },
    /// Never delivered.
    Drop {
        /// Why.
        cause: DropCause,
    },
    /// Held by the fault plan until it releases it (a late message, F3).
    Hold,
}

/// The network's random behaviour. Probabilities are integer ratios.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct NetConfig {
    /// Smallest flight time.
    pub latency_min_ns: u64,
    /// Largest flight time.
    pub latency_max_ns: u64,
    /// Loss probability numerator, per million.
    pub drop_ppm: u32,
    /// Duplication probability numerator, per million.
    pub dup_ppm: u32,
}

/// Limits that make every run end with a verdict rather than a hang.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Limits {
    /// Events processed before the run is stopped.
    pub event_budget: u64,
    /// True time after which the run is stopped.
    pub horizon_ns: u64,
    /// Events queued at once before the run is stopped.
    pub queue_max: usize,
}

/// A fault or control the director asks the engine to apply (and the trace records).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "fault", rename_all = "snake_case")]
pub enum Command {
    /// Cut the directed link `from -> to` (F1).
    Cut {
        /// Sender side.
        from: NodeId,
        /// Receiver side.
        to: NodeId,
    },
    /// Heal the directed link `from -> to`.
    Heal {
        /// Sender side.
        from: NodeId,
        /// Receiver side.
        to: NodeId,
    },
    /// Stop running the node (F2). With `frozen`, its clock stops too (a VM stop); otherwise
    /// it runs on (a GC pause).
    Pause {
        /// The node.
        node: NodeId,
        /// Whether the clock stops.
        frozen: bool,
    },
    /// Resume a paused node: its inbox and overdue wake-ups are handled now.
    Resume {
        /// The node.
        node: NodeId,
    },
    /// Crash the node (F5).
    Crash {
        /// The node.
        node: NodeId,
    },
    /// Restart a crashed node.
    Restart {
        /// The node.
        node: NodeId,
    },
    /// Step the node's wall clock only (F4); the monotonic clock is untouched.
    WallStep {
        /// The node.
        node: NodeId,
        /// Signed step.
        delta_ns: i64,
    },
    /// Every message to or from the node takes `extra_ns` longer (F6: a slow node); 0 ends it.
    SetSlow {
        /// The node.
        node: NodeId,
        /// Extra flight time.
        extra_ns: u64,
    },
    /// Change the network's random loss and duplication (F3); the heal phase sets both to 0.
    SetNetwork {
        /// Loss probability, per million.
        drop_ppm: u32,
        /// Duplication probability, per million.
        dup_ppm: u32,
    },
    /// Give the node an outside stimulus (see [`Process::signal`]).
    Signal {
        /// The node.
        node: NodeId,
        /// What the stimulus means to the node.
        tag: u64,
    },
    /// Step the node's monotonic clock (F4): a suspend or a migration jumps it forward.
    ClockStep {
        /// The node.
        node: NodeId,
        /// Signed step.
        delta_ns: i64,
    },
    /// Change the node's clock rate (F4).
    SetDrift {
        /// The node.
        node: NodeId,
        /// New rate error.
        drift_ppm: i32,
    },
    /// Send a held message on its way: it arrives after a fresh flight time.
    Release {
        /// The held message.
        id: u64,
    },
    /// Wake the director at true time `at` with `tag` (not recorded in the trace).
    Alarm {
        /// True time.
        at: u64,
        /// Director's tag.
        tag: u64,
    },
}

/// Commands a director issues from a callback; the engine applies them right after it.
#[derive(Debug, Default)]
pub struct Control {
    commands: Vec<Command>,
}

impl Control {
    /// Asks the engine to apply a command.
    pub fn push(&mut self, c: Command) {
        self.commands.push(c);
    }

    /// The commands issued, in order (for an engine other than [`Sim`] to apply).
    pub fn into_commands(self) -> Vec<Command> {
        self.commands
    }
}

/// A message as the network sees it.
#[derive(Copy, Clone, Debug)]
pub struct Envelope<M> {
    /// Unique per run, in send order.
    pub id: u64,
    /// Sender.
    pub from: NodeId,
    /// Receiver.
    pub to: NodeId,
    /// Payload.
    pub msg: M,
}

/// The scenario's hand on the world: it sees every send, delivery and note, may change a
/// message's fate, and issues faults through [`Control`].
pub trait Director<P: Process> {
    /// A message is being sent with the fate the network chose; return the fate to apply.
    fn on_send(
        &mut self,
        _ctl: &mut Control,
        _now: u64,
        _env: &Envelope<P::Msg>,
        fate: Fate,
    ) -> Fate {
        fate
    }
    /// A message was delivered (before the receiving process handles it).
    fn on_deliver(&mut self, _ctl: &mut Control, _now: u64, _env: &Envelope<P::Msg>) {}
    /// A node recorded a note.
    fn on_note(&mut self, _ctl: &mut Control, _now: u64, _node: NodeId, _note: &P::Note) {}
    /// An alarm the director set is due.
    fn on_alarm(&mut self, _ctl: &mut Control, _now: u64, _tag: u64) {}
    /// Whether the run has reached its goal and may stop.
    fn is_done(&self, _nodes: &[P]) -> bool {
        false
    }
}

/// One recorded event. `node` and `local` say who and what its clock read.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct TraceEvent<M, N> {
    /// True time.
    pub t: u64,
    /// The node (or [`WORLD`]).
    pub node: NodeId,
    /// The node's local clock reading (0 for the world).
    pub local: u64,
    /// What happened.
    pub kind: EventKind<M, N>,
}

/// What a trace event records.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum EventKind<M, N> {
    /// `node` sent a message.
    Send {
        /// Message id.
        id: u64,
        /// Receiver.
        to: NodeId,
        /// Payload.
        msg: M,
        /// Its fate.
        fate: Fate,
    },
    /// `node` received a message.
    Deliver {
        /// Message id.
        id: u64,
        /// Sender.
        from: NodeId,
        /// Payload.
        msg: M,
    },
    /// A message reached a crashed node and was lost.
    Lost {
        /// Message id.
        id: u64,
    },
    /// A held message was released.
    Release {
        /// Message id.
        id: u64,
        /// Flight time from now.
        delay_ns: u64,
    },
    /// `node` recorded a note.
    Note {
        /// The note.
        note: N,
    },
    /// A fault was applied.
    Fault {
        /// The command.
        command: Command,
    },
}

/// How a run ended.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum End {
    /// The director's goal was reached.
    Done,
    /// Nothing left to happen.
    Idle,
    /// True time passed the horizon.
    Horizon,
    /// The event budget ran out (a runaway run).
    EventBudget,
    /// Too many events queued at once (a runaway run).
    QueueBound,
    /// The engine is broken: an event came due before the time already reached. Checked in
    /// every build (a release sweep relies on it), never expected to happen.
    TimeReversed,
    /// A process broke a rule of its host ([`Sim::fault`] says which and why): a machine
    /// that addressed a node that does not exist, or produced without end.
    ProcessFault,
}

/// The engine's own check failed: kept out of the event loop's hot path.
#[cold]
#[inline(never)]
fn time_reversed() -> End {
    End::TimeReversed
}

impl End {
    /// Whether the run was cut short (by a limit, or by the engine's own check) rather than
    /// ending by itself.
    pub fn is_limit(self) -> bool {
        matches!(
            self,
            End::Horizon
                | End::EventBudget
                | End::QueueBound
                | End::TimeReversed
                | End::ProcessFault
        )
    }
}

/// What a queued event does. A delivery names its message's send in the trace, which holds
/// the whole envelope, rather than carrying it: an entry is 32 bytes whatever the message, the
/// heap moves small entries when it sifts, and a message is stored once.
#[derive(Copy, Clone, Debug)]
enum EvKind {
    Deliver { send: usize },
    Wake { node: NodeId, gen: u64 },
    Alarm { tag: u64 },
    Restart { node: NodeId },
    Signal { node: NodeId, tag: u64 },
}

#[derive(Copy, Clone, Debug)]
struct Ev {
    t: u64,
    seq: u64,
    kind: EvKind,
}

impl Ev {
    /// Whether this event comes before `other`: by time, then by the order they were queued
    /// (sequence numbers are unique, so two events are never tied).
    #[inline(always)]
    fn before(&self, other: &Ev) -> bool {
        self.key() < other.key()
    }

    /// The event's place in the order: its time, then its sequence number.
    #[inline(always)]
    fn key(&self) -> u128 {
        (self.t as u128) << 64 | self.seq as u128
    }
}

/// The event queue: a binary min-heap on (time, sequence). Every key is unique, so the order
/// events leave in is that of their keys alone, whatever the heap's shape.
///
/// The event being handled stays at the root until the handler queues its first event, which
/// then takes the root's place in one pass down the heap; only a handler that queues nothing
/// has the root removed ([`Queue::settle`]). Most events queue at least one more (a delivery's
/// answer, a re-armed wake), so most take one pass instead of two.
#[derive(Debug, Default)]
struct Queue {
    heap: Vec<Ev>,
    /// Whether `heap[0]` was handed out by [`Queue::take_first`] and is no longer queued.
    taken: bool,
}

impl Queue {
    fn len(&self) -> usize {
        self.heap.len() - self.taken as usize
    }

    #[inline(always)]
    fn push(&mut self, ev: Ev) {
        if self.taken {
            self.taken = false;
            self.replace_root(ev);
            return;
        }
        let mut pos = self.heap.len();
        self.heap.push(ev);
        while pos > 0 {
            let parent = (pos - 1) / 2;
            if !ev.before(&self.heap[parent]) {
                break;
            }
            self.heap[pos] = self.heap[parent];
            pos = parent;
        }
        self.heap[pos] = ev;
    }

    /// Hands out the first event, left in place until the next push takes its place or
    /// [`Queue::settle`] removes it.
    #[inline]
    fn take_first(&mut self) -> Option<Ev> {
        self.settle();
        let first = *self.heap.first()?;
        self.taken = true;
        Some(first)
    }

    /// Removes the event [`Queue::take_first`] handed out, if no push took its place. Most
    /// handlers queue an event, so there is usually nothing to do: only the test is inlined.
    #[inline(always)]
    fn settle(&mut self) {
        if self.taken {
            self.remove_taken();
        }
    }

    /// [`Queue::settle`]'s work: the last event takes the root's place.
    #[inline(never)]
    fn remove_taken(&mut self) {
        self.taken = false;
        let last = self.heap.pop().expect("a taken event is in the heap");
        if !self.heap.is_empty() {
            self.fill_root(last);
        }
    }

    /// Takes the first event out.
    #[cfg(test)]
    fn pop(&mut self) -> Option<Ev> {
        let first = self.take_first();
        self.settle();
        first
    }

    /// Puts a new event `ev` at the root, whose event is gone, and restores the heap by moving
    /// it down past every earlier child. A handler's first event is often due soon (a message
    /// in flight for a few milliseconds) and stops near the top.
    #[inline]
    fn replace_root(&mut self, ev: Ev) {
        let heap = &mut self.heap[..];
        let n = heap.len();
        let key = ev.key();
        let mut pos = 0;
        loop {
            let child = 2 * pos + 1;
            if child >= n {
                break;
            }
            let mut first = child;
            let mut first_key = heap[child].key();
            if let Some(next) = heap.get(child + 1) {
                let k = next.key();
                if k < first_key {
                    (first, first_key) = (child + 1, k);
                }
            }
            if key < first_key {
                break;
            }
            heap[pos] = heap[first];
            pos = first;
        }
        heap[pos] = ev;
    }

    /// Puts `ev` at the root, whose event is gone, and restores the heap: the hole goes down
    /// to the bottom along the earlier child, and `ev` goes up from there (fewer comparisons
    /// than sifting it down from the top, as a new or last event usually belongs near the
    /// bottom).
    #[inline]
    fn fill_root(&mut self, ev: Ev) {
        let n = self.heap.len();
        let mut pos = 0;
        let mut child = 1;
        while child + 1 < n {
            if self.heap[child + 1].before(&self.heap[child]) {
                child += 1;
            }
            self.heap[pos] = self.heap[child];
            pos = child;
            child = 2 * pos + 1;
        }
        if child < n {
            self.heap[pos] = self.heap[child];
            pos = child;
        }
        while pos > 0 {
            let parent = (pos - 1) / 2;
            if !ev.before(&self.heap[parent]) {
                break;
            }
            self.heap[pos] = self.heap[parent];
            pos = parent;
        }
        self.heap[pos] = ev;
    }
}

/// The storage a simulation grows as it runs (its queue, its output and
/// command buffers, its trace), kept apart from the simulation so that the next run on the same
/// thread starts with it already grown: a sweep's steady state allocates nothing here. Get one
/// back from [`Sim::finish`]; [`Buffers::default`] is empty.
pub struct Buffers<M, N> {
    queue: Vec<Ev>,
    out: Vec<Out<M, N>>,
    commands: Vec<Command>,
    trace: Vec<TraceEvent<M, N>>,
    slots: Vec<Slot>,
    held: Held,
}

impl<M, N> Default for Buffers<M, N> {
    fn default() -> Self {
        Buffers {
            queue: Vec::new(),
            out: Vec::new(),
            commands: Vec::new(),
            trace: Vec::new(),
            slots: Vec::new(),
            held: Held::default(),
        }
    }
}

/// The most storage a [`Buffers`] keeps in any one of its vectors between runs: a runaway run's
/// millions of events are not held by its thread for the rest of a sweep.
pub const BUFFER_KEPT_MAX_BYTES: usize = 8 << 20;

impl<M, N> Buffers<M, N> {
    /// Gives back a trace the caller is done with, so that the next run records into its
    /// storage: kept if it is larger than the trace storage these buffers hold, and not above
    /// [`BUFFER_KEPT_MAX_BYTES`].
    pub fn give_trace(&mut self, mut trace: Vec<TraceEvent<M, N>>) {
        if trace.capacity() > self.trace.capacity() && fits(&trace) {
            trace.clear();
            self.trace = trace;
        }
    }
}

/// Whether a vector's storage is small enough to keep between runs.
fn fits<T>(v: &Vec<T>) -> bool {
    v.capacity().saturating_mul(std::mem::size_of::<T>()) <= BUFFER_KEPT_MAX_BYTES
}

/// Drops a vector's storage if it is too large to keep between runs.
fn trimmed<T>(v: Vec<T>) -> Vec<T> {
    if fits(&v) {
        v
    } else {
        Vec::new()
    }
}

#[derive(Clone, Debug)]
struct Slot {
    clock: Clock,
    wake: Option<u64>,
    gen: u64,
    paused: bool,
    frozen_at: Option<u64>,
    crashed: bool,
    extra_latency_ns: u64,
    /// The cut links from this node to nodes `0..64`, one bit each (one load per send); links
    /// to the others are in [`Sim::cut_far`].
    cut_to: u64,
    /// Messages that reached the node while it was paused, by their sends in the trace.
    deferred: Vec<usize>,
    /// The true time of its last wake-up, and how many it had at that instant.
    woken_at: u64,
    wakes_at_once: u32,
}

/// Wake-ups a node may have at one instant of true time. A node that keeps asking to be woken
/// no later than now spins without time passing: past this, the run ends with a process
/// fault naming it, rather than at the event budget with nobody named.
pub const WAKES_PER_INSTANT_MAX: u32 = 1024;

/// The trace of a simulation of processes `P`.
pub type Trace<P> = Vec<TraceEvent<<P as Process>::Msg, <P as Process>::Note>>;

/// The storage a simulation of processes `P` grows ([`Buffers`]).
pub type BuffersOf<P> = Buffers<<P as Process>::Msg, <P as Process>::Note>;

/// The simulator.
pub struct Sim<P: Process> {
    nodes: Vec<P>,
    slots: Vec<Slot>,
    queue: Queue,
    seq: u64,
    now: u64,
    next_msg: u64,
    /// Cut links that [`Slot::cut_to`] has no bit for.
    cut_far: BTreeSet<(NodeId, NodeId)>,
    /// Held messages, by id: their sends in the trace.
    held: Held,
    /// Deliveries queued (a duplicated message counts twice).
    in_flight: u64,
    net: NetConfig,
    net_rng: Prng,
    limits: Limits,
    events: u64,
    out: Vec<Out<P::Msg, P::Note>>,
    ctl: Control,
    trace: Vec<TraceEvent<P::Msg, P::Note>>,
    /// The trace index of `trace[0]`: events before it were dropped ([`Sim::compact`]).
    base: usize,
    /// Whether the processes were started (the first [`Sim::run_until`] starts them).
    started: bool,
    /// The first rule of the host a process broke, which ends the run.
    fault: Option<(NodeId, String)>,
    /// The rule the process being called broke, if it did, until its outputs are handled.
    call_fault: Option<(NodeId, String)>,
    /// The node whose process is being called (for a panic inside it).
    calling: Option<NodeId>,
}

impl<P: Process> Sim<P> {
    /// A simulation of `nodes`, each with its clock, over a network drawn from `seed`.
    pub fn new(seed: u64, nodes: Vec<(P, Clock)>, net: NetConfig, limits: Limits) -> Self {
        let mut buffers = Buffers::default();
        // Room for a short run's trace at once: most runs never grow it.
        buffers.trace.reserve(256);
        Self::with_buffers(seed, nodes, net, limits, buffers)
    }

    /// [`Sim::new`] recording into `buffers` (emptied first), grown by earlier runs: the same
    /// run, without growing its storage again.
    pub fn with_buffers(
        seed: u64,
        nodes: Vec<(P, Clock)>,
        net: NetConfig,
        limits: Limits,
        buffers: Buffers<P::Msg, P::Note>,
    ) -> Self {
        let Buffers {
            mut queue,
            mut out,
            mut commands,
            mut trace,
            mut slots,
            mut held,
        } = buffers;
        queue.clear();
        out.clear();
        commands.clear();
        trace.clear();
        held.clear();
        assert!(
            net.latency_min_ns <= net.latency_max_ns,
            "latency range is empty"
        );
        assert!(net.drop_ppm <= 1_000_000 && net.dup_ppm <= 1_000_000);
        // A slot kept from an earlier run keeps its deferral list's storage; the processes
        // take the place of the list they came in (collected in place, no new allocation).
        slots.truncate(nodes.len());
        for (i, (_, clock)) in nodes.iter().enumerate() {
            let fresh = |deferred| Slot {
                clock: *clock,
                wake: None,
                gen: 0,
                paused: false,
                frozen_at: None,
                crashed: false,
                extra_latency_ns: 0,
                cut_to: 0,
                deferred,
                woken_at: 0,
                wakes_at_once: 0,
            };
            match slots.get_mut(i) {
                Some(slot) => {
                    let mut deferred = std::mem::take(&mut slot.deferred);
                    deferred.clear();
                    *slot = fresh(deferred);
                }
                None => slots.push(fresh(Vec::new())),
            }
        }
        let nodes: Vec<P> = nodes.into_iter().map(|(p, _)| p).collect();
        Sim {
            nodes,
            slots,
            queue: Queue {
                heap: queue,
                taken: false,
            },
            seq: 0,
            now: 0,
            next_msg: 0,
            cut_far: BTreeSet::new(),
            held,
            in_flight: 0,
            net,
            net_rng: Prng::new(seed, Stream::Network),
            limits,
            events: 0,
            out,
            ctl: Control { commands },
            trace,
            base: 0,
            started: false,
            fault: None,
            call_fault: None,
            calling: None,
        }
    }

    /// The processes, for inspection after a run.
    pub fn nodes(&self) -> &[P] {
        &self.nodes
    }

    /// The current true time.
    pub fn now(&self) -> u64 {
        self.now
    }

    /// Events processed so far.
    pub fn events(&self) -> u64 {
        self.events
    }

    /// A node's clock.
    pub fn clock(&self, node: NodeId) -> Clock {
        self.slots[node as usize].clock
    }

    /// The trace so far: from trace index [`Sim::trace_base`] on (the whole trace unless
    /// [`Sim::compact`] dropped its beginning).
    pub fn trace(&self) -> &[TraceEvent<P::Msg, P::Note>] {
        &self.trace
    }

    /// The trace index of the first event [`Sim::trace`] holds: 0 unless [`Sim::compact`]
    /// dropped the events before it.
    pub fn trace_base(&self) -> usize {
        self.base
    }

    /// Events recorded so far, including those [`Sim::compact`] dropped.
    pub fn recorded(&self) -> usize {
        self.base + self.trace.len()
    }

    /// Drops the recorded events before trace index `keep_from`, except those the simulator
    /// still reads: the sends of messages queued for delivery, held, or waiting for a paused
    /// node, and every event after the earliest of them. Nothing is dropped until at least half
    /// the events held can go. Trace indices keep their meaning (a caller reads event `i` at
    /// `trace()[i - trace_base()]`). Returns the new base.
    ///
    /// A host that judges a run as it goes calls this between [`Sim::run_until`] calls, so
    /// that a long run's memory stays bounded by the events it has not judged yet. The run
    /// itself is the same run, event for event.
    pub fn compact(&mut self, keep_from: usize) -> usize {
        self.queue.settle();
        let mut keep = keep_from.min(self.recorded());
        let base = self.base;
        for ev in &self.queue.heap {
            if let EvKind::Deliver { send } = ev.kind {
                keep = keep.min(base + send);
            }
        }
        if let Some(send) = self.held.earliest_send() {
            keep = keep.min(base + send);
        }
        for slot in &self.slots {
            if let Some(&send) = slot.deferred.iter().min() {
                keep = keep.min(base + send);
            }
        }
        // Dropped only once at least half the events held can go, so that moving the rest costs
        // at most one move per event dropped (a message held for long keeps its send and
        // everything after it).
        if keep > self.base && (keep - self.base) * 2 >= self.trace.len() {
            // The simulator's own references are positions in `trace`: moved with the events.
            let dropped = keep - self.base;
            self.trace.drain(..dropped);
            self.base = keep;
            for ev in &mut self.queue.heap {
                if let EvKind::Deliver { send } = &mut ev.kind {
                    *send -= dropped;
                }
            }
            self.held.shift(dropped);
            for slot in &mut self.slots {
                for send in &mut slot.deferred {
                    *send -= dropped;
                }
            }
        }
        self.base
    }

    /// Takes the trace out of the simulator (from [`Sim::trace_base`] on).
    pub fn into_trace(self) -> Vec<TraceEvent<P::Msg, P::Note>> {
        self.trace
    }

    /// Takes the trace out of the simulator, and the storage it grew for the next run
    /// ([`Sim::with_buffers`]); the processes are dropped.
    pub fn finish(self) -> (Trace<P>, Buffers<P::Msg, P::Note>) {
        let (trace, buffers, _) = self.finish_with_nodes();
        (trace, buffers)
    }

    /// [`Sim::finish`], handing the processes back too (a host may keep their storage for its
    /// next run).
    pub fn finish_with_nodes(self) -> (Trace<P>, BuffersOf<P>, Vec<P>) {
        let mut slots = trimmed(self.slots);
        for slot in &mut slots {
            if !fits(&slot.deferred) {
                slot.deferred = Vec::new();
            }
        }
        let held = if self.held.capacity_bytes() <= BUFFER_KEPT_MAX_BYTES {
            self.held
        } else {
            Held::default()
        };
        let buffers = Buffers {
            queue: trimmed(self.queue.heap),
            out: trimmed(self.out),
            commands: trimmed(self.ctl.commands),
            trace: Vec::new(),
            slots,
            held,
        };
        (self.trace, buffers, self.nodes)
    }

    /// Applies a command now (before the run: initial alarms, cuts, clock settings).
    pub fn command(&mut self, c: Command) {
        self.apply_one(c);
    }

    fn push(&mut self, t: u64, kind: EvKind) {
        if let EvKind::Deliver { .. } = kind {
            self.in_flight += 1;
        }
        self.seq += 1;
        self.queue.push(Ev {
            t,
            seq: self.seq,
            kind,
        });
    }

    /// Queues at `t` the delivery of the message sent by trace event `send`.
    #[inline(always)]
    fn push_delivery(&mut self, t: u64, send: usize) {
        self.push(t, EvKind::Deliver { send });
    }

    /// The envelope of the message sent by trace event `send`.
    #[inline(always)]
    fn envelope(&self, send: usize) -> Envelope<P::Msg> {
        let e = &self.trace[send];
        match e.kind {
            EventKind::Send { id, to, msg, .. } => Envelope {
                id,
                from: e.node,
                to,
                msg,
            },
            _ => unreachable!("a delivery names a send"),
        }
    }

    #[inline(always)]
    fn record(&mut self, node: NodeId, kind: EventKind<P::Msg, P::Note>) {
        let local = if node == WORLD { 0 } else { self.local(node) };
        self.record_at(node, local, kind);
    }

    /// [`Sim::record`] for a node whose clock reading now the caller already has.
    #[inline(always)]
    fn record_at(&mut self, node: NodeId, local: u64, kind: EventKind<P::Msg, P::Note>) {
        self.trace.push(TraceEvent {
            t: self.now,
            node,
            local,
            kind,
        });
    }

    /// The rule of its host a process broke, if one did (the run then ended with
    /// [`End::ProcessFault`]): the node and the reason.
    pub fn fault(&self) -> Option<&(NodeId, String)> {
        self.fault.as_ref()
    }

    /// The node whose process was being called when the run stopped, if any: after a panic
    /// inside a process, the one that panicked.
    pub fn calling(&self) -> Option<NodeId> {
        self.calling
    }

    /// Runs until the director is done, nothing is left, or a limit is hit.
    pub fn run<D: Director<P>>(&mut self, director: &mut D) -> End {
        // Never paused: the first call ends the run (the loop only satisfies the type).
        loop {
            if let Some(end) = self.run_until(director, u64::MAX) {
                return end;
            }
        }
    }

    /// [`Sim::run`], pausing once `pause_at` events in all were processed: `None` then, and the
    /// next call goes on exactly where this one stopped (the same run, event for event, as one
    /// call to [`Sim::run`]). The first call starts the processes.
    // Kept out of its caller: inlined into a host's run loop, the event loop compiled to code
    // that ran a w1-w2 sweep 5% slower for the same instructions (measured side by side).
    #[inline(never)]
    pub fn run_until<D: Director<P>>(&mut self, director: &mut D, pause_at: u64) -> Option<End> {
        if !self.started {
            self.started = true;
            for n in 0..self.nodes.len() as NodeId {
                self.call(director, n, |p, cx| p.start(cx));
            }
        }
        let stop_at = pause_at.min(self.limits.event_budget);
        let end = loop {
            if self.fault.is_some() {
                break End::ProcessFault;
            }
            // Done means the director's goal is reached and nothing is still on the wire: a
            // message in flight may yet break an invariant, so it must land first.
            if self.in_flight == 0 && director.is_done(&self.nodes) {
                break End::Done;
            }
            if self.queue.len() > self.limits.queue_max {
                break End::QueueBound;
            }
            let Some(ev) = self.queue.take_first() else {
                break End::Idle;
            };
            if ev.t > self.limits.horizon_ns {
                break End::Horizon;
            }
            if self.events >= stop_at {
                if self.events >= self.limits.event_budget {
                    break End::EventBudget;
                }
                // Paused: the event goes back where it was (its time and sequence number
                // order it first again), and the next call takes it.
                self.queue.push(ev);
                return None;
            }
            if ev.t < self.now {
                break time_reversed();
            }
            self.events += 1;
            self.now = ev.t;
            match ev.kind {
                EvKind::Deliver { send } => {
                    self.in_flight -= 1;
                    self.deliver(director, send)
                }
                EvKind::Wake { node, gen } => {
                    let slot = &mut self.slots[node as usize];
                    if gen != slot.gen || slot.crashed || slot.paused {
                        // Stale, dead, or deferred: a paused node's wake is re-armed on resume.
                        continue;
                    }
                    let asked = slot.wake.take();
                    if slot.woken_at == self.now {
                        slot.wakes_at_once += 1;
                    } else {
                        (slot.woken_at, slot.wakes_at_once) = (self.now, 1);
                    }
                    if slot.wakes_at_once > WAKES_PER_INSTANT_MAX {
                        let local = self.local(node);
                        let asked = asked.map_or("none".to_string(), |a| a.to_string());
                        self.fault.get_or_insert((
                            node,
                            format!(
                                "asked to be woken more than {WAKES_PER_INSTANT_MAX} times at one instant (poll_timeout said {asked} with its clock at {local}): a wake-up must be later than now, or None"
                            ),
                        ));
                        continue;
                    }
                    self.call(director, node, |p, cx| p.wake(cx));
                }
                EvKind::Alarm { tag } => {
                    let now = self.now;
                    director.on_alarm(&mut self.ctl, now, tag);
                    self.apply();
                }
                EvKind::Restart { node } => {
                    self.call(director, node, |p, cx| p.start(cx));
                }
                EvKind::Signal { node, tag } => {
                    let slot = &self.slots[node as usize];
                    if slot.crashed || slot.paused {
                        // Nobody is there to act on it: the stimulus is lost.
                        continue;
                    }
                    self.call(director, node, |p, cx| p.signal(cx, tag));
                }
            }
        };
        // The last event taken may still hold the root, if it queued nothing.
        self.queue.settle();
        Some(end)
    }

    fn deliver<D: Director<P>>(&mut self, director: &mut D, send: usize) {
        let env = self.envelope(send);
        let slot = &mut self.slots[env.to as usize];
        if slot.crashed {
            self.record(env.to, EventKind::Lost { id: env.id });
            return;
        }
        if slot.paused {
            slot.deferred.push(send);
            return;
        }
        let mut local = self.local(env.to);
        self.record_at(
            env.to,
            local,
            EventKind::Deliver {
                id: env.id,
                from: env.from,
                msg: env.msg,
            },
        );
        let now = self.now;
        director.on_deliver(&mut self.ctl, now, &env);
        if self.apply() {
            // The director may have crashed or paused the receiver at this very delivery, or
            // moved its clock.
            let slot = &mut self.slots[env.to as usize];
            if slot.crashed {
                return;
            }
            if slot.paused {
                slot.deferred.push(send);
                return;
            }
            local = self.local(env.to);
        }
        self.call_at(director, env.to, local, |p, cx| {
            p.message(cx, env.from, env.msg)
        });
    }

    /// A node's clock reading now.
    #[inline(always)]
    fn local(&self, node: NodeId) -> u64 {
        self.slots[node as usize].clock.local(self.now)
    }

    fn call<D, F>(&mut self, director: &mut D, node: NodeId, f: F)
    where
        D: Director<P>,
        F: FnOnce(&mut P, &mut Cx<'_, P::Msg, P::Note>),
    {
        let local = self.local(node);
        self.call_at(director, node, local, f);
    }

    /// Calls node `node`'s process, whose clock reads `local` now, then handles what it
    /// produced, in order, and its new wake request.
    fn call_at<D, F>(&mut self, director: &mut D, node: NodeId, mut local: u64, f: F)
    where
        D: Director<P>,
        F: FnOnce(&mut P, &mut Cx<'_, P::Msg, P::Note>),
    {
        let slot = &self.slots[node as usize];
        let before = slot.wake;
        // The wall reading derives from the monotonic one, computed once.
        let mut cx = Cx {
            now: local,
            wall: slot.clock.wall_of(local),
            node,
            out: &mut self.out,
            wake: before,
            fault: &mut self.call_fault,
        };
        self.calling = Some(node);
        f(&mut self.nodes[node as usize], &mut cx);
        self.calling = None;
        let wake = cx.wake;
        // The outputs are read in place: handling one calls no process, so none is added
        // meanwhile. The node's reading stays `local` until a command is applied (one may move
        // its clock).
        let mut i = 0;
        while let Some(&o) = self.out.get(i) {
            i += 1;
            let applied = match o {
                Out::Note(note) => {
                    self.record_at(node, local, EventKind::Note { note });
                    let now = self.now;
                    director.on_note(&mut self.ctl, now, node, &note);
                    self.apply()
                }
                Out::Send(to, msg) => self.send(director, node, local, to, msg),
            };
            if applied {
                local = self.local(node);
            }
        }
        self.out.clear();
        // After the outputs: a rule broken by one of them (a send to no node) came first.
        if let Some(fault) = self.call_fault.take() {
            self.fault.get_or_insert(fault);
        }
        let slot = &mut self.slots[node as usize];
        if wake != before && !slot.crashed {
            slot.wake = wake;
            self.rearm(node);
        }
    }

    fn rearm(&mut self, node: NodeId) {
        let slot = &mut self.slots[node as usize];
        slot.gen += 1;
        let gen = slot.gen;
        if let Some(at) = slot.wake {
            let t = slot.clock.true_at(at, self.now);
            self.push(t, EvKind::Wake { node, gen });
        }
    }

    /// Sends `msg` from node `from`, whose clock reads `local` now; whether the director's
    /// commands were applied (a node's clock may have moved).
    fn send<D: Director<P>>(
        &mut self,
        director: &mut D,
        from: NodeId,
        local: u64,
        to: NodeId,
        msg: P::Msg,
    ) -> bool {
        if to as usize >= self.nodes.len() {
            self.fault.get_or_insert((
                from,
                format!(
                    "sent a message to node {to}, which does not exist (there are {})",
                    self.nodes.len()
                ),
            ));
            return false;
        }
        let id = self.next_msg;
        self.next_msg += 1;
        let env = Envelope { id, from, to, msg };
        // The random draws happen for every message, cut or not, so that a partition does not
        // shift the latencies of every later message.
        let slow =
            self.slots[from as usize].extra_latency_ns + self.slots[to as usize].extra_latency_ns;
        let delay_ns = self
            .net_rng
            .range(self.net.latency_min_ns, self.net.latency_max_ns)
            + slow;
        let lost = self.net.drop_ppm > 0 && self.net_rng.chance(self.net.drop_ppm, 1_000_000);
        let dup = self.net.dup_ppm > 0 && self.net_rng.chance(self.net.dup_ppm, 1_000_000);
        let mut fate = if self.is_cut(from, to) {
            Fate::Drop {
                cause: DropCause::Partition,
            }
        } else if lost {
            Fate::Drop {
                cause: DropCause::Loss,
            }
        } else if dup {
            let dup_delay_ns = self
                .net_rng
                .range(self.net.latency_min_ns, self.net.latency_max_ns)
                + slow;
            Fate::Duplicate {
                delay_ns,
                dup_delay_ns,
            }
        } else {
            Fate::Deliver { delay_ns }
        };
        let now = self.now;
        fate = director.on_send(&mut self.ctl, now, &env, fate);
        self.record_at(from, local, EventKind::Send { id, to, msg, fate });
        let send = self.trace.len() - 1;
        match fate {
            Fate::Deliver { delay_ns } => self.push_delivery(now + delay_ns, send),
            Fate::Duplicate {
                delay_ns,
                dup_delay_ns,
            } => {
                self.push_delivery(now + delay_ns, send);
                self.push_delivery(now + dup_delay_ns, send);
            }
            Fate::Drop { .. } => {}
            Fate::Hold => {
                self.held.insert(id, send);
            }
        }
        self.apply()
    }

    /// Whether the link `from -> to` is cut (`from` is a node).
    #[inline(always)]
    fn is_cut(&self, from: NodeId, to: NodeId) -> bool {
        match 1u64.checked_shl(to) {
            Some(bit) => self.slots[from as usize].cut_to & bit != 0,
            None => self.cut_far.contains(&(from, to)),
        }
    }

    /// Cuts or heals the link `from -> to` (either may name no node: nothing is sent there).
    fn set_cut(&mut self, from: NodeId, to: NodeId, cut: bool) {
        match (1u64.checked_shl(to), self.slots.get_mut(from as usize)) {
            (Some(bit), Some(slot)) => {
                if cut {
                    slot.cut_to |= bit;
                } else {
                    slot.cut_to &= !bit;
                }
            }
            _ => {
                if cut {
                    self.cut_far.insert((from, to));
                } else {
                    self.cut_far.remove(&(from, to));
                }
            }
        }
    }

    /// Applies the commands the director issued in its last callback; whether there were any.
    #[inline]
    fn apply(&mut self) -> bool {
        if self.ctl.commands.is_empty() {
            return false;
        }
        // Applying a command calls no process, so it cannot issue more: the loop is bounded by
        // the commands already issued.
        // The buffer is put back emptied, keeping its storage for the next callback.
        let mut commands = std::mem::take(&mut self.ctl.commands);
        for c in commands.drain(..) {
            self.apply_one(c);
        }
        self.ctl.commands = commands;
        true
    }

    fn apply_one(&mut self, c: Command) {
        let now = self.now;
        match c {
            Command::Alarm { at, tag } => {
                self.push(at.max(now), EvKind::Alarm { tag });
                return;
            }
            Command::Release { id } => {
                let Some(send) = self.held.remove(id) else {
                    return;
                };
                let delay_ns = self
                    .net_rng
                    .range(self.net.latency_min_ns, self.net.latency_max_ns);
                self.record(self.trace[send].node, EventKind::Release { id, delay_ns });
                self.push_delivery(now + delay_ns, send);
                return;
            }
            _ => {}
        }
        let node = match c {
            Command::Cut { from, to } => {
                self.set_cut(from, to, true);
                WORLD
            }
            Command::Heal { from, to } => {
                self.set_cut(from, to, false);
                WORLD
            }
            Command::Pause { node, frozen } => {
                let slot = &mut self.slots[node as usize];
                if slot.crashed || slot.paused {
                    return;
                }
                slot.paused = true;
                slot.frozen_at = frozen.then(|| slot.clock.local(now));
                node
            }
            Command::Resume { node } => {
                let slot = &mut self.slots[node as usize];
                if !slot.paused {
                    return;
                }
                slot.paused = false;
                if let Some(reading) = slot.frozen_at.take() {
                    // A VM stop: the clock resumes from where it stopped.
                    slot.clock.anchor_true = now;
                    slot.clock.anchor_local = reading;
                }
                let deferred = std::mem::take(&mut slot.deferred);
                for send in deferred {
                    self.push_delivery(now, send);
                }
                self.rearm(node);
                node
            }
            Command::Crash { node } => {
                let slot = &mut self.slots[node as usize];
                if slot.crashed {
                    return;
                }
                slot.crashed = true;
                slot.paused = false;
                slot.frozen_at = None;
                slot.deferred.clear();
                slot.wake = None;
                slot.gen += 1;
                self.nodes[node as usize].crash();
                node
            }
            Command::Restart { node } => {
                let slot = &mut self.slots[node as usize];
                if !slot.crashed {
                    return;
                }
                slot.crashed = false;
                self.push(now, EvKind::Restart { node });
                node
            }
            Command::SetSlow { node, extra_ns } => {
                self.slots[node as usize].extra_latency_ns = extra_ns;
                node
            }
            Command::SetNetwork { drop_ppm, dup_ppm } => {
                assert!(drop_ppm <= 1_000_000 && dup_ppm <= 1_000_000);
                self.net.drop_ppm = drop_ppm;
                self.net.dup_ppm = dup_ppm;
                WORLD
            }
            Command::WallStep { node, delta_ns } => {
                self.slots[node as usize].clock.step_wall(delta_ns);
                node
            }
            Command::Signal { node, tag } => {
                self.push(now, EvKind::Signal { node, tag });
                return;
            }
            Command::ClockStep { node, delta_ns } => {
                self.slots[node as usize].clock.step(now, delta_ns);
                self.rearm(node);
                node
            }
            Command::SetDrift { node, drift_ppm } => {
                self.slots[node as usize].clock.set_drift(now, drift_ppm);
                self.rearm(node);
                node
            }
            Command::Alarm { .. } | Command::Release { .. } => unreachable!("handled above"),
        };
        self.record(node, EventKind::Fault { command: c });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Idle;
    impl Process for Idle {
        type Msg = ();
        type Note = ();
        fn start(&mut self, _: &mut Cx<'_, (), ()>) {}
        fn message(&mut self, _: &mut Cx<'_, (), ()>, _: NodeId, _: ()) {}
        fn wake(&mut self, _: &mut Cx<'_, (), ()>) {}
        fn crash(&mut self) {}
    }
    struct Quiet;
    impl Director<Idle> for Quiet {}

    /// The queue hands events out in (time, sequence) order, as a sorted list would, under
    /// any mix of pushes, pops and taken events whose place a push takes, ties in time
    /// included.
    #[test]
    fn the_queue_pops_in_time_then_sequence_order() {
        let mut rng = Prng::new(3, Stream::Config);
        let mut q = Queue::default();
        let mut model: Vec<(u64, u64)> = Vec::new();
        let mut seq = 0;
        // Queues a new event due at a random time, in the queue and in the model.
        let push = |q: &mut Queue, model: &mut Vec<(u64, u64)>, rng: &mut Prng, seq: &mut u64| {
            *seq += 1;
            let ev = Ev {
                t: rng.range(0, 40),
                seq: *seq,
                kind: EvKind::Alarm { tag: *seq },
            };
            q.push(ev);
            model.push((ev.t, ev.seq));
        };
        for _ in 0..20_000 {
            if rng.chance(11, 20) || model.is_empty() {
                push(&mut q, &mut model, &mut rng, &mut seq);
            } else if rng.chance(1, 2) {
                model.sort_unstable_by(|a, b| b.cmp(a));
                let want = model.pop();
                let got = q.pop().map(|e| (e.t, e.seq));
                assert_eq!(got, want);
            } else {
                // As the event loop does: the first event is taken, then its handler queues
                // none, one or several events (the first takes the root's place), and the
                // queue settles.
                model.sort_unstable_by(|a, b| b.cmp(a));
                let want = model.pop();
                assert_eq!(q.take_first().map(|e| (e.t, e.seq)), want);
                assert_eq!(q.len(), model.len());
                for _ in 0..rng.range(0, 3) {
                    push(&mut q, &mut model, &mut rng, &mut seq);
                    assert_eq!(q.len(), model.len());
                }
                q.settle();
            }
            assert_eq!(q.len(), model.len());
        }
        model.sort_unstable_by(|a, b| b.cmp(a));
        while let Some(want) = model.pop() {
            assert_eq!(q.pop().map(|e| (e.t, e.seq)), Some(want));
        }
        assert!(q.pop().is_none());
    }

    /// A network without latency or faults, and limits of ten events.
    fn instant_net() -> (NetConfig, Limits) {
        let net = NetConfig {
            latency_min_ns: 0,
            latency_max_ns: 0,
            drop_ppm: 0,
            dup_ppm: 0,
        };
        let limits = Limits {
            event_budget: 10,
            horizon_ns: u64::MAX,
            queue_max: 10,
        };
        (net, limits)
    }

    /// A link to a node past the first 64 is cut and healed as one to the first 64 is, and a
    /// link naming no node is taken without effect.
    #[test]
    fn cuts_reach_every_node() {
        let (net, limits) = instant_net();
        let nodes = (0..70).map(|_| (Idle, Clock::new(0, 0))).collect();
        let mut sim = Sim::new(1, nodes, net, limits);
        for (from, to) in [(1, 3), (1, 65), (69, 0), (69, 69)] {
            assert!(!sim.is_cut(from, to));
            sim.command(Command::Cut { from, to });
            assert!(sim.is_cut(from, to), "{from} -> {to}");
            assert!(!sim.is_cut(to, from) || from == to, "one way only");
        }
        sim.command(Command::Cut { from: 500, to: 2 });
        sim.command(Command::Heal { from: 1, to: 65 });
        sim.command(Command::Heal { from: 1, to: 3 });
        assert!(!sim.is_cut(1, 65) && !sim.is_cut(1, 3));
        assert!(sim.is_cut(69, 0) && sim.is_cut(69, 69));
    }

    /// A thread keeps a finished run's storage for the next run, but not a runaway's.
    #[test]
    fn buffers_keep_a_trace_storage_only_up_to_their_bound() {
        let mut b: Buffers<(), ()> = Buffers::default();
        let small: Vec<TraceEvent<(), ()>> = Vec::with_capacity(1_000);
        b.give_trace(small);
        assert!(
            b.trace.capacity() >= 1_000,
            "a usual trace's storage is kept"
        );
        let per = std::mem::size_of::<TraceEvent<(), ()>>();
        let huge: Vec<TraceEvent<(), ()>> = Vec::with_capacity(BUFFER_KEPT_MAX_BYTES / per + 1);
        b.give_trace(huge);
        assert!(
            b.trace.capacity() < BUFFER_KEPT_MAX_BYTES / per,
            "a runaway's is not"
        );
        assert!(trimmed(Vec::<u64>::with_capacity(BUFFER_KEPT_MAX_BYTES)).capacity() == 0);
        assert!(trimmed(Vec::<u64>::with_capacity(16)).capacity() >= 16);
    }

    /// The engine's own check holds in every build: an event due before the time already
    /// reached (which only a broken engine can queue) ends the run with its own `End`.
    #[test]
    fn an_event_in_the_past_ends_the_run_as_an_engine_error() {
        let (net, limits) = instant_net();
        let mut sim = Sim::new(1, vec![(Idle, Clock::new(0, 0))], net, limits);
        sim.now = 100;
        sim.push(50, EvKind::Signal { node: 0, tag: 0 });
        assert_eq!(sim.run(&mut Quiet), End::TimeReversed);
        assert!(End::TimeReversed.is_limit());
        assert_eq!(sim.now(), 100, "time never went back");
    }
}
