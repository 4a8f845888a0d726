//! The async shell: the same protocol machines, driven by async tasks instead of the
//! discrete-event loop (ARCHITECTURE.md, "scenarios/shell/").
//!
//! Each node is a set of tasks that share the node's machine through the [`World`]:
//!
//! - the **inbox** task receives messages (and the plan's outside stimuli) and hands each to the
//!   machine;
//! - the **heartbeat** task runs the machine's timers (renewals, the jeopardy deadline, the
//!   tool timeout, commit retries), apart from any tool call: a worker keeps renewing while its
//!   tool call is out, as the seeds demand;
//! - the **outbox** task puts the machine's messages on the network;
//! - a worker's **tool-call** task sends each external request and waits, in one `select!`, for
//!   the answer, for the lease-lost signal, and for a bounded client timeout. When the machine
//!   stops waiting for the call (its heartbeat was refused, the call timed out, the stage ended),
//!   the signal cancels the wait; a late answer then reaches a machine that refuses it.
//!
//! The fault plan is the same [`PlanDirector`] the simulator uses; its commands are applied with
//! the engine's own means through [`FabricControl`] (on madsim: `pause`/`resume` of a node,
//! `kill`/`restart`, `NetSim` link clogging). The run is recorded as the same trace type and
//! judged by the same checkers ([`leasesim::run::judge`]).
//!
//! Engines: `madsim` (under `--cfg madsim`) and [`local`] (real tokio on one
//! thread with its clock paused, for fault plans without node faults). The World holds every
//! piece of state behind one lock that no task holds across an `.await`.

pub mod engines;
#[cfg(not(madsim))]
pub mod local;
#[cfg(madsim)]
pub mod madsim;

use leasesim::machines::Machines;
use leasesim::plan::PlanDirector;
use leasesim::run::{judge, RunResult};
use leasesim::setup::Setup;
use leasesim::world::Node;
use leasesim_protocol::{Event, Msg};
use leasesim_sim::{
    drive, Clock, Command, Control, Director, DropCause, End, Envelope, EventKind, Fate, Limits,
    NetConfig, NodeId, Out, Prng, Process, Stream, TraceEvent, WORLD,
};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex, MutexGuard};
use tokio::sync::{mpsc, watch, Notify};
use tokio::time::{Duration, Instant};

/// A message on the wire.
pub type Env = Envelope<Msg>;

/// What the async shell did beyond the trace (the trace is the same type as the simulator's).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ShellStats {
    /// External requests the tool-call tasks sent.
    pub tool_calls: u64,
    /// Calls that ended with their answer.
    pub tool_answered: u64,
    /// Calls cancelled by the lease-lost signal (a refused heartbeat or commit, a revoke).
    pub cancelled_lease_lost: u64,
    /// Calls cancelled because the machine's client timeout fired (P12 c).
    pub cancelled_timed_out: u64,
    /// Calls cancelled for another reason (stage deadline, a crash of the caller).
    pub cancelled_other: u64,
    /// Calls whose wait hit the shell's hard bound (a machine that never gave up).
    pub bound_hit: u64,
    /// Timer firings the heartbeat tasks handled.
    pub heartbeat_task_wakes: u64,
    /// Messages the network was asked to carry.
    pub sent: u64,
    /// Partitioned messages handed to the network so that it drops them itself.
    pub sent_into_partition: u64,
}

/// Why a worker's tool call ended, as its tool-call task learns it.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum CallEnd {
    Answered,
    LeaseLost,
    TimedOut,
    Other,
}

/// The engine's hand on nodes and links (pause, kill, clog), applied as the plan commands.
pub trait FabricControl: Send {
    /// Stops running the node's tasks (a process pause).
    fn pause(&self, node: NodeId);
    /// Runs them again.
    fn resume(&self, node: NodeId);
    /// Kills every task of the node; its sockets close.
    fn kill(&self, node: NodeId);
    /// Starts the node again from its initial task.
    fn restart(&self, node: NodeId);
    /// Drops every later message on the directed link.
    fn clog(&self, from: NodeId, to: NodeId);
    /// Carries them again.
    fn unclog(&self, from: NodeId, to: NodeId);
    /// Ends every task of the run (nothing may outlive it: a task waiting on the run's state
    /// would keep it alive).
    fn shutdown(&self) {}
    /// Sends a message on from the network itself (a held message released, a delayed one),
    /// after `extra_ns` on top of the network's latency.
    fn relay(&self, env: Env, extra_ns: u64);
}

/// The control of a run that is over.
struct Detached;

impl FabricControl for Detached {
    fn pause(&self, _: NodeId) {}
    fn resume(&self, _: NodeId) {}
    fn kill(&self, _: NodeId) {}
    fn restart(&self, _: NodeId) {}
    fn clog(&self, _: NodeId, _: NodeId) {}
    fn unclog(&self, _: NodeId, _: NodeId) {}
    fn relay(&self, _: Env, _: u64) {}
}

/// A worker's new calls: the request id, and the request when its call task carries it.
type NewCalls = mpsc::UnboundedSender<(u64, Option<Env>)>;

/// The per-node channels of the running incarnation of a node.
struct Links {
    outbox: mpsc::UnboundedSender<Env>,
    signals: mpsc::UnboundedSender<u64>,
    timer: Arc<Notify>,
    /// A worker's new calls (the request, when the call task carries it), and the signal that
    /// some call ended.
    tool: Option<(NewCalls, watch::Sender<u64>)>,
}

/// The shared state of one run: the machines, their clocks, the director, the trace, and the
/// books the end of the run is judged by.
pub struct World {
    nodes: Vec<Node>,
    clocks: Vec<Clock>,
    frozen_at: Vec<Option<u64>>,
    wake: Vec<Option<u64>>,
    paused: Vec<bool>,
    crashed: Vec<bool>,
    /// Nodes whose (re)start the engine has not run yet.
    starting: Vec<bool>,
    slow: Vec<u64>,
    links: Vec<Option<Links>>,
    /// Per worker: the call its tool-call task waits on, and how it ended.
    call: Vec<Option<u64>>,
    call_end: Vec<BTreeMap<u64, CallEnd>>,
    director: PlanDirector,
    trace: Vec<TraceEvent<Msg, Event>>,
    next_msg: u64,
    held: BTreeMap<u64, Env>,
    cut: BTreeSet<(NodeId, NodeId)>,
    /// Messages on their way: id -> (receiver, copies still to arrive).
    in_flight: BTreeMap<u64, (NodeId, u32)>,
    /// Messages recorded as sent but not yet handed to the network.
    unsent: BTreeMap<u64, Env>,
    /// Messages the trace says a partition dropped; the network must not deliver them.
    cut_ids: BTreeSet<u64>,
    /// Messages the trace has dropped or lost that the network may still bring (a heal in the
    /// instant between the record and the hand-over; a message to a process that crashed while
    /// it flew): discarded on arrival, as the trace says.
    strays: BTreeSet<u64>,
    net: NetConfig,
    rng: Prng,
    limits: Limits,
    events: u64,
    end: Option<End>,
    alarms: BTreeSet<(u64, u64, u64)>,
    alarm_seq: u64,
    /// An alarm was set since the supervisor last looked.
    alarm_added: bool,
    now: u64,
    control: Box<dyn FabricControl>,
    stats: ShellStats,
    problems: Vec<String>,
}

/// The World behind its lock, plus the wake-up of the run's supervisor.
pub struct Shared {
    world: Mutex<World>,
    supervisor: Notify,
    t0: Instant,
}

impl Shared {
    /// A run of `setup` with `seed` on `machines`; `control` applies faults with the engine's
    /// means.
    pub fn new(
        setup: &Setup,
        seed: u64,
        machines: &Machines,
        control: Box<dyn FabricControl>,
    ) -> Arc<Shared> {
        let (nodes, clocks): (Vec<Node>, Vec<Clock>) =
            setup.build_nodes(seed, machines).into_iter().unzip();
        let n = nodes.len();
        let director = PlanDirector::new(
            setup.faults.clone(),
            setup.tool_node(),
            setup.operator_node(),
        );
        let world = World {
            nodes,
            clocks,
            frozen_at: vec![None; n],
            wake: vec![None; n],
            paused: vec![false; n],
            crashed: vec![false; n],
            starting: vec![true; n],
            slow: vec![0; n],
            links: (0..n).map(|_| None).collect(),
            call: vec![None; n],
            call_end: vec![BTreeMap::new(); n],
            director,
            trace: Vec::new(),
            next_msg: 0,
            held: BTreeMap::new(),
            cut: BTreeSet::new(),
            in_flight: BTreeMap::new(),
            unsent: BTreeMap::new(),
            cut_ids: BTreeSet::new(),
            strays: BTreeSet::new(),
            net: setup.net,
            rng: Prng::new(seed, Stream::Network),
            limits: setup.limits,
            events: 0,
            end: None,
            alarms: BTreeSet::new(),
            alarm_seq: 0,
            alarm_added: false,
            now: 0,
            control,
            stats: ShellStats::default(),
            problems: Vec::new(),
        };
        Arc::new(Shared {
            world: Mutex::new(world),
            supervisor: Notify::new(),
            t0: Instant::now(),
        })
    }

    /// Applies the plan's first commands (its alarms); call once the engine's nodes exist.
    pub fn begin(&self, setup: &Setup) {
        let mut w = self.lock();
        let mut ctl = Control::default();
        for c in w.director.initial_commands(setup.heal_at_ns) {
            ctl.push(c);
        }
        w.apply(ctl);
    }

    /// True time of the run: nanoseconds since it began, on the engine's clock.
    pub fn now(&self) -> u64 {
        Instant::now().saturating_duration_since(self.t0).as_nanos() as u64
    }

    fn at(&self, t: u64) -> Instant {
        self.t0 + Duration::from_nanos(t)
    }

    /// Locks the World for one step at the engine's present instant.
    fn lock(&self) -> MutexGuard<'_, World> {
        let now = self.now();
        let mut w = self.world.lock().unwrap_or_else(|p| p.into_inner());
        w.now = w.now.max(now);
        w
    }

    fn after_step(&self, w: &mut World) {
        if w.check_end() | std::mem::take(&mut w.alarm_added) {
            self.supervisor.notify_one();
        }
    }

    /// Records that the engine could not do what the run needs (it fails the run).
    pub fn problem(&self, what: String) {
        self.lock().problems.push(what);
    }
}

impl World {
    fn record(&mut self, node: NodeId, kind: EventKind<Msg, Event>) {
        let local = if node == WORLD {
            0
        } else {
            self.clocks[node as usize].local(self.now)
        };
        self.trace.push(TraceEvent {
            t: self.now,
            node,
            local,
            kind,
        });
    }

    fn live(&self, node: NodeId) -> bool {
        self.end.is_none() && !self.crashed[node as usize] && !self.paused[node as usize]
    }

    /// Runs one machine call on `node` and routes what it produced.
    fn step(
        &mut self,
        node: NodeId,
        f: impl FnOnce(&mut Node, &mut leasesim_sim::Cx<'_, Msg, Event>),
    ) {
        let i = node as usize;
        let clock = self.clocks[i];
        let local = self.frozen_at[i].unwrap_or_else(|| clock.local(self.now));
        let wall = clock.wall(self.now);
        let before = self.wake[i];
        let mut out = Vec::new();
        let (wake, fault) = drive(&mut self.nodes[i], node, local, wall, before, &mut out, f);
        if let Some(reason) = fault {
            // The machine broke a rule of its host: the run ends as the simulator ends it.
            self.problems
                .push(format!("node {node} broke a rule of its host: {reason}"));
            self.end.get_or_insert(leasesim_sim::End::ProcessFault);
        }
        let mut ctl = Control::default();
        let mut lease_lost = false;
        let mut timed_out = false;
        let mut answered = None;
        for o in out {
            match o {
                Out::Note(note) => {
                    lease_lost |= matches!(note, Event::HeartbeatLost { .. });
                    timed_out |= matches!(note, Event::ToolTimedOut { .. });
                    if let Event::ToolAnswered { request, .. } = note {
                        answered = Some(request);
                    }
                    self.record(node, EventKind::Note { note });
                    let now = self.now;
                    self.director.on_note(&mut ctl, now, node, &note);
                    self.apply(std::mem::take(&mut ctl));
                }
                Out::Send(to, msg) => {
                    if let Msg::ToolRequest { req, .. } = msg {
                        self.call_over(node, Some(req), answered, lease_lost, timed_out);
                    }
                    self.send(node, to, msg)
                }
            }
        }
        if wake != before && !self.crashed[i] {
            self.wake[i] = wake;
            self.rearm(node);
        }
        let waits = self.nodes[i].tool_in_flight();
        self.call_over(node, waits, answered, lease_lost, timed_out);
    }

    /// The lease-lost signal: the machine no longer waits for the call its task waits on
    /// (`waits` is the call it waits for now).
    fn call_over(
        &mut self,
        node: NodeId,
        waits: Option<u64>,
        answered: Option<u64>,
        lease_lost: bool,
        timed_out: bool,
    ) {
        let Some(req) = self.call[node as usize] else {
            return;
        };
        if waits == Some(req) {
            return;
        }
        let why = if answered == Some(req) {
            CallEnd::Answered
        } else if lease_lost {
            CallEnd::LeaseLost
        } else if timed_out {
            CallEnd::TimedOut
        } else {
            CallEnd::Other
        };
        self.end_call(node, req, why);
    }

    fn end_call(&mut self, node: NodeId, req: u64, why: CallEnd) {
        let i = node as usize;
        self.call[i] = None;
        self.call_end[i].insert(req, why);
        if let Some(Links {
            tool: Some((_, ended)),
            ..
        }) = &self.links[i]
        {
            ended.send_modify(|n| *n = n.wrapping_add(1));
        }
    }

    fn rearm(&self, node: NodeId) {
        if let Some(l) = &self.links[node as usize] {
            l.timer.notify_one();
        }
    }

    fn send(&mut self, from: NodeId, to: NodeId, msg: Msg) {
        let id = self.next_msg;
        self.next_msg += 1;
        let env = Envelope { id, from, to, msg };
        let lost = self.net.drop_ppm > 0 && self.rng.chance(self.net.drop_ppm, 1_000_000);
        let dup = self.net.dup_ppm > 0 && self.rng.chance(self.net.dup_ppm, 1_000_000);
        // The network's own latency is the engine's; a fate's delay here is what the plan adds
        // on top (the trace gets the flight time actually taken once the message lands).
        let slow = self.slow[from as usize] + self.slow[to as usize];
        let base = if self.cut.contains(&(from, to)) {
            Fate::Drop {
                cause: DropCause::Partition,
            }
        } else if lost {
            Fate::Drop {
                cause: DropCause::Loss,
            }
        } else if dup {
            Fate::Duplicate {
                delay_ns: slow,
                dup_delay_ns: slow + self.rng.range(0, self.net.latency_max_ns),
            }
        } else {
            Fate::Deliver { delay_ns: slow }
        };
        let mut ctl = Control::default();
        let now = self.now;
        let fate = self.director.on_send(&mut ctl, now, &env, base);
        self.record(from, EventKind::Send { id, to, msg, fate });
        let dead = self.crashed[to as usize];
        match fate {
            Fate::Deliver { .. } | Fate::Duplicate { .. } if dead => {
                self.record(to, EventKind::Lost { id });
                self.start_call(env, false);
            }
            Fate::Deliver { delay_ns } => {
                self.in_flight.insert(id, (to, 1));
                self.put_on_wire(env, delay_ns);
            }
            Fate::Duplicate {
                delay_ns,
                dup_delay_ns,
            } => {
                self.in_flight.insert(id, (to, 2));
                self.put_on_wire(env, delay_ns);
                self.control.relay(env, dup_delay_ns);
                self.stats.sent += 1;
            }
            Fate::Drop {
                cause: DropCause::Partition,
            } => {
                // The engine's own partition drops it: the message is handed over (see `sent`).
                self.cut_ids.insert(id);
                self.stats.sent_into_partition += 1;
                self.put_on_wire(env, 0);
            }
            Fate::Drop { .. } => {
                self.start_call(env, false);
            }
            Fate::Hold => {
                self.held.insert(id, env);
                self.start_call(env, false);
            }
        }
        self.apply(ctl);
    }

    /// Hands a message to the sender's outbox or a new tool-call task; to the network itself
    /// when the plan delays it, or when its sender crashed in the very step that sent it (the
    /// simulator, too, sends what a step produced before the crash).
    fn put_on_wire(&mut self, env: Env, extra_ns: u64) {
        self.stats.sent += 1;
        let dropped = self.cut_ids.contains(&env.id);
        if extra_ns > 0 || self.links[env.from as usize].is_none() {
            if dropped {
                self.cut_ids.remove(&env.id);
            } else {
                self.control.relay(env, extra_ns);
            }
            self.start_call(env, false);
            return;
        }
        self.unsent.insert(env.id, env);
        if self.start_call(env, true) {
            return;
        }
        if let Some(links) = &self.links[env.from as usize] {
            let _ = links.outbox.send(env);
        }
    }

    /// A worker's new external request gets a call task of its own (a re-sent request belongs
    /// to the call already out). Returns whether that task carries the request to the network.
    fn start_call(&mut self, env: Env, carry: bool) -> bool {
        let Msg::ToolRequest { req, .. } = env.msg else {
            return false;
        };
        let i = env.from as usize;
        if self.call[i] == Some(req) {
            return false;
        }
        let Some(Links {
            tool: Some((tx, _)),
            ..
        }) = &self.links[i]
        else {
            return false;
        };
        if tx.send((req, carry.then_some(env))).is_err() {
            return false;
        }
        self.call[i] = Some(req);
        carry
    }

    /// Message `id` was handed to the network, which has just decided, by its own partition
    /// state, whether it drops it. That state is the trace's at this instant, so the two are
    /// reconciled exactly: a message cut after the trace put it on its way goes on from the
    /// network, as it would have in the simulator; one the trace dropped for a partition that
    /// healed before the hand-over arrives and is discarded.
    fn sent(&mut self, id: u64) {
        let Some(env) = self.unsent.remove(&id) else {
            return;
        };
        let cut_now = self.cut.contains(&(env.from, env.to));
        if self.cut_ids.contains(&id) {
            if cut_now {
                self.cut_ids.remove(&id);
            } else {
                self.strays.insert(id);
            }
        } else if cut_now && self.in_flight.contains_key(&id) {
            self.control.relay(env, 0);
        }
    }

    fn apply(&mut self, ctl: Control) {
        for c in ctl.into_commands() {
            self.apply_one(c);
        }
    }

    fn apply_one(&mut self, c: Command) {
        let Some(node) = self.act(c) else {
            return;
        };
        self.record(node, EventKind::Fault { command: c });
        if let Command::Crash { node } = c {
            self.lose_with(node);
        }
    }

    /// Carries out `c`; returns the node its fault event is recorded at, or `None` when it
    /// records none (a timer, a release, a signal, a command that changes nothing) or its own.
    fn act(&mut self, c: Command) -> Option<NodeId> {
        let now = self.now;
        match c {
            Command::Alarm { at, tag } => {
                self.alarm_seq += 1;
                self.alarms.insert((at.max(now), self.alarm_seq, tag));
                self.alarm_added = true;
                None
            }
            Command::Release { id } => {
                self.release(id);
                None
            }
            Command::Signal { node, tag } => {
                // A stimulus to a paused or crashed node finds nobody there and is lost.
                if self.live(node) {
                    if let Some(l) = &self.links[node as usize] {
                        let _ = l.signals.send(tag);
                    }
                }
                None
            }
            Command::Cut { from, to } => {
                self.cut.insert((from, to));
                self.control.clog(from, to);
                Some(WORLD)
            }
            Command::Heal { from, to } => {
                self.cut.remove(&(from, to));
                self.control.unclog(from, to);
                Some(WORLD)
            }
            Command::Pause { node, frozen } => self.pause(node, frozen),
            Command::Resume { node } => self.resume(node),
            Command::Crash { node } => self.crash(node),
            Command::Restart { node } => {
                self.restart(node, c);
                None
            }
            Command::SetSlow { node, extra_ns } => {
                self.slow[node as usize] = extra_ns;
                Some(node)
            }
            Command::SetNetwork { drop_ppm, dup_ppm } => {
                self.net.drop_ppm = drop_ppm.min(1_000_000);
                self.net.dup_ppm = dup_ppm.min(1_000_000);
                Some(WORLD)
            }
            Command::WallStep { node, delta_ns } => {
                self.clocks[node as usize].step_wall(delta_ns);
                Some(node)
            }
            Command::ClockStep { node, delta_ns } => {
                self.clocks[node as usize].step(now, delta_ns);
                self.rearm(node);
                Some(node)
            }
            Command::SetDrift { node, drift_ppm } => {
                self.clocks[node as usize].set_drift(now, drift_ppm);
                self.rearm(node);
                Some(node)
            }
        }
    }

    /// A held message goes on its way, or is lost when its receiver is down.
    fn release(&mut self, id: u64) {
        let Some(env) = self.held.remove(&id) else {
            return;
        };
        self.record(env.from, EventKind::Release { id, delay_ns: 0 });
        if self.crashed[env.to as usize] {
            self.record(env.to, EventKind::Lost { id });
        } else {
            self.in_flight.insert(id, (env.to, 1));
            self.stats.sent += 1;
            self.control.relay(env, 0);
        }
    }

    /// Pauses a running node (its clock stops too when `frozen`).
    fn pause(&mut self, node: NodeId, frozen: bool) -> Option<NodeId> {
        let i = node as usize;
        if self.crashed[i] || self.paused[i] {
            return None;
        }
        self.paused[i] = true;
        if frozen {
            self.frozen_at[i] = Some(self.clocks[i].local(self.now));
        }
        self.control.pause(node);
        Some(node)
    }

    /// Resumes a paused node, its frozen clock going on from the reading it stopped at.
    fn resume(&mut self, node: NodeId) -> Option<NodeId> {
        let i = node as usize;
        if !self.paused[i] {
            return None;
        }
        self.paused[i] = false;
        if let Some(reading) = self.frozen_at[i].take() {
            self.clocks[i].anchor_true = self.now;
            self.clocks[i].anchor_local = reading;
        }
        self.control.resume(node);
        self.rearm(node);
        Some(node)
    }

    /// Kills a live node's process; its timers, its link and its tool call go with it.
    fn crash(&mut self, node: NodeId) -> Option<NodeId> {
        let i = node as usize;
        if self.crashed[i] {
            return None;
        }
        self.crashed[i] = true;
        self.paused[i] = false;
        self.frozen_at[i] = None;
        self.wake[i] = None;
        self.nodes[i].crash();
        self.control.kill(node);
        self.links[i] = None;
        if self.call[i].take().is_some() {
            self.stats.cancelled_other += 1;
        }
        self.call_end[i].clear();
        Some(node)
    }

    /// Starts a crashed node's process again, recording `c` as it does.
    fn restart(&mut self, node: NodeId, c: Command) {
        let i = node as usize;
        if self.crashed[i] {
            self.crashed[i] = false;
            self.starting[i] = true;
            self.record(node, EventKind::Fault { command: c });
            self.control.restart(node);
        }
    }

    /// What was on its way to the crashed process is lost with it (should the network still
    /// bring it to the restarted process, it is discarded). What the process had produced but
    /// its tasks not yet handed to the network was already sent in the simulator's terms: it
    /// goes on from the network.
    fn lose_with(&mut self, node: NodeId) {
        let to_it: Vec<u64> = self
            .in_flight
            .iter()
            .filter(|(_, (to, _))| *to == node)
            .map(|(id, _)| *id)
            .collect();
        for id in to_it {
            self.in_flight.remove(&id);
            self.strays.insert(id);
            self.record(node, EventKind::Lost { id });
        }
        let from_it: Vec<Env> = self
            .unsent
            .values()
            .filter(|e| e.from == node)
            .copied()
            .collect();
        for env in from_it {
            self.unsent.remove(&env.id);
            if !self.cut_ids.remove(&env.id) && self.in_flight.contains_key(&env.id) {
                self.control.relay(env, 0);
            }
        }
    }

    /// A message arrived at `node`. Returns false when the node is paused (or was paused at
    /// this very delivery): the caller waits for the resume and delivers it again, as the
    /// simulator does; the message counts as on its way meanwhile.
    fn deliver(&mut self, node: NodeId, env: Env, first: bool) -> bool {
        if self.end.is_some() {
            return true;
        }
        if first {
            if self.strays.remove(&env.id) {
                self.cut_ids.remove(&env.id);
                return true;
            }
            if self.cut_ids.contains(&env.id) {
                self.problems.push(format!(
                    "the network delivered message {} ({} -> {}) that a partition dropped",
                    env.id, env.from, env.to
                ));
                return true;
            }
        }
        if self.crashed[node as usize] {
            return true;
        }
        match self.in_flight.get_mut(&env.id) {
            Some((_, n)) if *n > 1 => *n -= 1,
            Some(_) => {
                self.in_flight.remove(&env.id);
            }
            None => {
                self.problems.push(format!(
                    "message {} arrived at node {node} that was not on its way",
                    env.id
                ));
                return true;
            }
        }
        let i = node as usize;
        if self.paused[i] {
            self.in_flight.entry(env.id).or_insert((node, 0)).1 += 1;
            return false;
        }
        self.events += 1;
        self.record(
            node,
            EventKind::Deliver {
                id: env.id,
                from: env.from,
                msg: env.msg,
            },
        );
        let mut ctl = Control::default();
        let now = self.now;
        self.director.on_deliver(&mut ctl, now, &env);
        self.apply(ctl);
        if self.crashed[i] {
            return true;
        }
        if self.paused[i] {
            self.in_flight.entry(env.id).or_insert((node, 0)).1 += 1;
            return false;
        }
        self.step(node, |p, cx| p.message(cx, env.from, env.msg));
        true
    }

    /// The node's timer is due (or a spurious wake: then nothing happens).
    fn timer(&mut self, node: NodeId) {
        let i = node as usize;
        if !self.live(node) {
            return;
        }
        let Some(at) = self.wake[i] else { return };
        let local = self.clocks[i].local(self.now);
        if local < at {
            return;
        }
        self.events += 1;
        self.stats.heartbeat_task_wakes += 1;
        self.wake[i] = None;
        self.step(node, |p, cx| p.wake(cx));
    }

    /// True time at which the node's timer is due.
    fn timer_due(&self, node: NodeId) -> Option<u64> {
        let i = node as usize;
        if self.paused[i] || self.crashed[i] {
            return None;
        }
        self.wake[i].map(|at| self.clocks[i].true_at(at, self.now))
    }

    fn signal(&mut self, node: NodeId, tag: u64) {
        if !self.live(node) {
            return;
        }
        self.events += 1;
        self.step(node, |p, cx| p.signal(cx, tag));
    }

    fn start(&mut self, node: NodeId, links: Links) {
        self.links[node as usize] = Some(links);
        self.starting[node as usize] = false;
        if self.end.is_some() || self.crashed[node as usize] {
            return;
        }
        self.events += 1;
        self.step(node, |p, cx| p.start(cx));
    }

    fn fire_alarms(&mut self) {
        while let Some(&(at, seq, tag)) = self.alarms.first() {
            if at > self.now || self.end.is_some() {
                return;
            }
            self.alarms.remove(&(at, seq, tag));
            self.events += 1;
            let mut ctl = Control::default();
            let now = self.now;
            self.director.on_alarm(&mut ctl, now, tag);
            self.apply(ctl);
            self.check_end();
        }
    }

    /// Decides whether the run is over; true when it just ended.
    fn check_end(&mut self) -> bool {
        if self.end.is_some() {
            return false;
        }
        let starting = self.starting.iter().any(|s| *s);
        let on_the_way = self.in_flight.len() + self.unsent.len();
        let queued = on_the_way + self.alarms.len();
        // In the simulator's order: the goal first, then the limits.
        let end = if starting {
            None
        } else if on_the_way == 0 && self.director.is_done(&self.nodes) {
            Some(End::Done)
        } else if self.events >= self.limits.event_budget {
            Some(End::EventBudget)
        } else if queued + self.held.len() > self.limits.queue_max {
            Some(End::QueueBound)
        } else if queued == 0
            && (0..self.nodes.len()).all(|i| self.wake[i].is_none() || self.crashed[i])
        {
            // Held messages do not keep a run going: nothing is scheduled to release them.
            Some(End::Idle)
        } else {
            None
        };
        self.end = end;
        end.is_some()
    }

    /// The trace with each delivered message's flight time as it was actually taken.
    fn finish_trace(&mut self) -> Vec<TraceEvent<Msg, Event>> {
        let mut trace = std::mem::take(&mut self.trace);
        // When each message landed (a duplicate twice; a delivery deferred by a pause is
        // recorded again on resume, and the first landing is the flight's end).
        let mut landed: BTreeMap<u64, Vec<u64>> = BTreeMap::new();
        for e in &trace {
            if let EventKind::Deliver { id, .. } = e.kind {
                landed.entry(id).or_default().push(e.t);
            }
        }
        for e in trace.iter_mut() {
            let t = e.t;
            let (id, first, second) = match &mut e.kind {
                EventKind::Send {
                    id,
                    fate: Fate::Deliver { delay_ns },
                    ..
                }
                | EventKind::Release { id, delay_ns } => (*id, delay_ns, None),
                EventKind::Send {
                    id,
                    fate:
                        Fate::Duplicate {
                            delay_ns,
                            dup_delay_ns,
                        },
                    ..
                } => (*id, delay_ns, Some(dup_delay_ns)),
                _ => continue,
            };
            let at = landed.get(&id).map(Vec::as_slice).unwrap_or_default();
            if let Some(a) = at.first() {
                *first = a.saturating_sub(t);
            }
            if let (Some(d), Some(b)) = (second, at.get(1)) {
                *d = b.saturating_sub(t);
            }
        }
        trace
    }
}

/// What a run on the async shell produced.
#[derive(Clone, Debug)]
pub struct ShellRun {
    /// The run, judged by the same checkers as a simulator run.
    pub result: RunResult,
    /// What the shell's tasks did.
    pub stats: ShellStats,
    /// Places where the engine did not do what the trace says it did (must stay empty).
    pub problems: Vec<String>,
}

/// The engine's network as a node's tasks see it.
pub(crate) trait Port: 'static {
    /// Puts a message on the wire, from this node.
    fn send(&self, env: Env) -> impl std::future::Future<Output = ()>;
    /// The next message for this node.
    fn recv(&self) -> impl std::future::Future<Output = Option<Env>>;
}

/// The body of a node's initial task: installs its channels, starts the machine, and runs the
/// inbox, heartbeat, outbox and (for a worker) tool-call tasks.
pub(crate) async fn node_main<P: Port>(
    sh: Arc<Shared>,
    port: P,
    node: NodeId,
    client_bound_ns: u64,
) {
    let port = std::rc::Rc::new(port);
    let (out_tx, out_rx) = mpsc::unbounded_channel();
    let (sig_tx, sig_rx) = mpsc::unbounded_channel();
    let timer = Arc::new(Notify::new());
    let is_worker = matches!(sh.lock().nodes[node as usize], Node::Worker(..));
    let mut calls = None;
    let tool = if is_worker {
        let (tx, rx) = mpsc::unbounded_channel();
        let (ended_tx, ended_rx) = watch::channel(0u64);
        calls = Some((rx, ended_rx));
        Some((tx, ended_tx))
    } else {
        None
    };
    {
        let mut w = sh.lock();
        w.start(
            node,
            Links {
                outbox: out_tx,
                signals: sig_tx,
                timer: timer.clone(),
                tool,
            },
        );
        sh.after_step(&mut w);
    }
    tokio::task::spawn_local(outbox(sh.clone(), port.clone(), out_rx));
    tokio::task::spawn_local(heartbeat(sh.clone(), node, timer));
    if let Some((rx, ended)) = calls {
        tokio::task::spawn_local(tool_calls(
            sh.clone(),
            port.clone(),
            node,
            rx,
            ended,
            client_bound_ns,
        ));
    }
    inbox(sh, port, node, sig_rx).await;
}

/// The inbox: messages and outside stimuli, one at a time.
async fn inbox<P: Port>(
    sh: Arc<Shared>,
    port: std::rc::Rc<P>,
    node: NodeId,
    mut sig_rx: mpsc::UnboundedReceiver<u64>,
) {
    loop {
        tokio::select! {
            biased;
            tag = sig_rx.recv() => {
                let Some(tag) = tag else { return };
                let mut w = sh.lock();
                w.signal(node, tag);
                sh.after_step(&mut w);
            }
            env = port.recv() => {
                let Some(env) = env else { return };
                let mut first = true;
                // Bounded: each round is a delivery the event budget counts.
                loop {
                    let done = {
                        let mut w = sh.lock();
                        let done = w.deliver(node, env, first);
                        sh.after_step(&mut w);
                        done || w.end.is_some()
                    };
                    if done {
                        break;
                    }
                    first = false;
                    // Paused at this delivery: the engine runs this task again on resume.
                    tokio::task::yield_now().await;
                }
            }
        }
    }
}

async fn outbox<P: Port>(
    sh: Arc<Shared>,
    port: std::rc::Rc<P>,
    mut rx: mpsc::UnboundedReceiver<Env>,
) {
    while let Some(env) = rx.recv().await {
        port.send(env).await;
        let mut w = sh.lock();
        w.sent(env.id);
        sh.after_step(&mut w);
    }
}

/// The heartbeat task: the machine's timers, apart from any tool call.
async fn heartbeat(sh: Arc<Shared>, node: NodeId, timer: Arc<Notify>) {
    loop {
        let due = {
            let w = sh.lock();
            if w.end.is_some() {
                return;
            }
            w.timer_due(node)
        };
        match due {
            None => timer.notified().await,
            Some(t) => {
                tokio::select! {
                    biased;
                    _ = timer.notified() => {}
                    _ = tokio::time::sleep_until(sh.at(t)) => {
                        let mut w = sh.lock();
                        w.timer(node);
                        sh.after_step(&mut w);
                    }
                }
            }
        }
    }
}

/// The tool-call task: every new external request of the worker gets a call task of its own.
async fn tool_calls<P: Port>(
    sh: Arc<Shared>,
    port: std::rc::Rc<P>,
    node: NodeId,
    mut rx: mpsc::UnboundedReceiver<(u64, Option<Env>)>,
    ended: watch::Receiver<u64>,
    bound_ns: u64,
) {
    while let Some((req, env)) = rx.recv().await {
        tokio::task::spawn_local(one_call(
            sh.clone(),
            port.clone(),
            node,
            req,
            env,
            ended.clone(),
            bound_ns,
        ));
    }
}

/// One external request: sent (unless the plan carries it), then waited for in one `select!`
/// over the signal that the call ended (answered, or cancelled because the lease was lost, the
/// client timeout fired or the stage ended) and the shell's hard bound.
async fn one_call<P: Port>(
    sh: Arc<Shared>,
    port: std::rc::Rc<P>,
    node: NodeId,
    req: u64,
    env: Option<Env>,
    mut ended: watch::Receiver<u64>,
    bound_ns: u64,
) {
    if let Some(env) = env {
        port.send(env).await;
        let mut w = sh.lock();
        w.sent(env.id);
        sh.after_step(&mut w);
    }
    sh.lock().stats.tool_calls += 1;
    let bound = tokio::time::sleep(Duration::from_nanos(bound_ns));
    tokio::pin!(bound);
    // Bounded: every round ends the call or waits for the next call to end. The World is read
    // first, so an end signalled before this task waited is not missed.
    loop {
        {
            let mut w = sh.lock();
            if let Some(why) = w.call_end[node as usize].remove(&req) {
                match why {
                    CallEnd::Answered => w.stats.tool_answered += 1,
                    CallEnd::LeaseLost => w.stats.cancelled_lease_lost += 1,
                    CallEnd::TimedOut => w.stats.cancelled_timed_out += 1,
                    CallEnd::Other => w.stats.cancelled_other += 1,
                }
                return;
            }
        }
        tokio::select! {
            biased;
            changed = ended.changed() => {
                if changed.is_err() {
                    // The node's tasks are gone (a crash, the end of the run).
                    return;
                }
            }
            _ = &mut bound => {
                let mut w = sh.lock();
                w.stats.bound_hit += 1;
                if w.call[node as usize] == Some(req) {
                    w.call[node as usize] = None;
                }
                return;
            }
        }
    }
}

/// The run's supervisor: fires the plan's alarms, watches the horizon, and ends the run.
pub(crate) async fn supervise(sh: Arc<Shared>) -> End {
    let horizon = sh.lock().limits.horizon_ns;
    // Bounded: every round fires an alarm, ends the run, or waits for a change.
    loop {
        let next = {
            let mut w = sh.lock();
            if w.now > horizon {
                w.end.get_or_insert(End::Horizon);
            }
            if let Some(end) = w.end {
                return end;
            }
            w.alarms
                .first()
                .map_or(horizon + 1, |a| a.0.min(horizon + 1))
        };
        tokio::select! {
            biased;
            _ = sh.supervisor.notified() => {}
            _ = tokio::time::sleep_until(sh.at(next)) => {
                let mut w = sh.lock();
                w.fire_alarms();
                w.check_end();
            }
        }
    }
}

/// Takes the finished run out of the World and judges it.
pub(crate) fn conclude(sh: &Shared, setup: &Setup, seed: u64, end: End) -> ShellRun {
    let mut w = sh.lock();
    let end_ns = w.now;
    let events = w.events;
    let trace = w.finish_trace();
    let stats = w.stats;
    let mut problems = std::mem::take(&mut w.problems);
    if end == End::Done && !w.in_flight.is_empty() {
        problems.push(format!(
            "{} messages still in flight at the end",
            w.in_flight.len()
        ));
    }
    // Tasks still waiting hold the run's state and the state holds their wake-ups: wake and
    // end them all, and empty the state, so that nothing of this run outlives it.
    w.control.shutdown();
    // The engine's handle would keep the engine alive: the nodes' start-up closures hold this
    // run's state.
    w.control = Box::new(Detached);
    for l in w.links.iter().flatten() {
        l.timer.notify_waiters();
    }
    w.links.clear();
    w.nodes.clear();
    w.held.clear();
    drop(w);
    sh.supervisor.notify_waiters();
    ShellRun {
        result: judge(setup, seed, trace, end, end_ns, events),
        stats,
        problems,
    }
}

/// The shell's hard bound on one tool call's wait: past every timeout the protocol may use.
pub(crate) fn client_bound_ns(setup: &Setup) -> u64 {
    setup.limits.horizon_ns.saturating_add(1)
}
