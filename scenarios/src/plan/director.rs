//! The director that carries a fault plan out inside the simulator: it starts and ends each
//! fault at its triggers, catches the messages a message fault names, runs the heal phase, and
//! says when the run is over. It never changes the plan it was given.

use super::{Fault, FaultKind, MsgAction, MsgPattern, Trigger};
use crate::world::{Node, SIGNAL_HEAL};
use leasesim_protocol::{Event, Msg, MsgKind};
use leasesim_sim::{Command, Control, Director, DropCause, Envelope, Fate, NodeId};
use std::cell::Cell;
use std::collections::BTreeMap;

/// One of the three triggers a plan may state for a fault.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
#[repr(u8)]
enum Edge {
    /// The fault begins.
    Start = 0,
    /// A lasting fault ends.
    End = 1,
    /// A hold lets its messages go.
    Release = 2,
}

impl Edge {
    /// Every edge, in the order a fault's anchors are kept.
    const ALL: [Edge; 3] = [Edge::Start, Edge::End, Edge::Release];

    /// The fault's trigger for this edge, if it states one.
    fn of(self, fault: &Fault) -> Option<Trigger> {
        match self {
            Edge::Start => fault.start,
            Edge::End => fault.end,
            Edge::Release => fault.release(),
        }
    }
}

/// What an alarm wakes the director for: a trigger's time (or its delay after a matched
/// message), the end of a pause or a crash (timed from the moment it began), or the heal phase.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Alarm {
    /// Fault `fault`'s trigger for `edge` is due.
    Edge { fault: usize, edge: Edge },
    /// Pause fault `fault` is over: the node resumes.
    Resume { fault: usize },
    /// Crash fault `fault` is over: the node restarts.
    Restart { fault: usize },
    /// The heal phase begins.
    Heal,
}

impl Alarm {
    /// The heal phase's tag, apart from every fault's.
    const HEAL_TAG: u64 = u64::MAX;
    /// Tags per fault: `fault * SLOTS + slot`.
    const SLOTS: u64 = 8;

    /// The simulator carries an alarm as a `u64` tag; this and [`Alarm::decode`] are the only
    /// places that know how.
    fn encode(self) -> u64 {
        let (fault, slot) = match self {
            Alarm::Heal => return Self::HEAL_TAG,
            // The edges take the first three slots, by their values.
            Alarm::Edge { fault, edge } => (fault, edge as u64),
            Alarm::Resume { fault } => (fault, 3),
            Alarm::Restart { fault } => (fault, 4),
        };
        fault as u64 * Self::SLOTS + slot
    }

    /// The alarm a tag stands for; `None` for a tag [`Alarm::encode`] never writes.
    fn decode(tag: u64) -> Option<Alarm> {
        if tag == Self::HEAL_TAG {
            return Some(Alarm::Heal);
        }
        let fault = usize::try_from(tag / Self::SLOTS).ok()?;
        let edge = |edge| Some(Alarm::Edge { fault, edge });
        match tag % Self::SLOTS {
            0 => edge(Edge::Start),
            1 => edge(Edge::End),
            2 => edge(Edge::Release),
            3 => Some(Alarm::Resume { fault }),
            4 => Some(Alarm::Restart { fault }),
            _ => None,
        }
    }
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Phase {
    /// Waiting for the start trigger.
    Armed,
    /// Started; waiting for the end.
    Active,
    /// Finished.
    Done,
}

/// Which of a fault's message-anchored triggers already matched (each matches once), indexed
/// by edge: the check runs for every anchor on every message, so it is one load.
#[derive(Copy, Clone, Debug, Default)]
struct Matched([bool; Edge::ALL.len()]);

impl Matched {
    fn get(self, edge: Edge) -> bool {
        self.0[edge as usize]
    }

    fn set(&mut self, edge: Edge) {
        self.0[edge as usize] = true;
    }
}

/// Where one fault of the plan is, and what it has done so far.
#[derive(Clone, Debug)]
struct FaultState {
    phase: Phase,
    matched: Matched,
    /// Messages a message fault caught so far.
    caught: u32,
    /// Ids of the messages a hold is holding.
    held: Vec<u64>,
    /// Whether a hold's release came before (or while) it was holding.
    released: bool,
    /// Whether the fault's end came before its (delayed) start.
    ended_early: bool,
}

impl FaultState {
    const ARMED: FaultState = FaultState {
        phase: Phase::Armed,
        matched: Matched([false; Edge::ALL.len()]),
        caught: 0,
        held: Vec::new(),
        released: false,
        ended_early: false,
    };
}

/// Items (anchors, message faults) filed by the message kind their pattern names, so that a
/// message is held only against those that can match it: a heartbeat meets none of a plan
/// that names tool requests and effects. A pattern without a kind is in every list. Each list
/// keeps the items' own order, which is the order they act in.
#[derive(Clone, Debug, Default)]
struct ByKind {
    /// Per message kind (by its index): the items naming it or naming no kind.
    kinds: Vec<Vec<u32>>,
    /// The items naming no kind: the list of a kind no item names.
    any: Vec<u32>,
}

impl ByKind {
    /// Files `items` (in their order), emptying the lists first and keeping their storage. A
    /// list beyond the kinds the items name holds the kind-less items only, as `any` does.
    fn fill(&mut self, items: impl Iterator<Item = (u32, Option<MsgKind>)> + Clone) {
        let len = items
            .clone()
            .filter_map(|(_, k)| k.map(|k| k as usize + 1))
            .max()
            .unwrap_or(0);
        if self.kinds.len() < len {
            self.kinds.resize_with(len, Vec::new);
        }
        self.kinds.iter_mut().for_each(Vec::clear);
        self.any.clear();
        for (item, kind) in items {
            match kind {
                Some(k) => self.kinds[k as usize].push(item),
                None => {
                    self.any.push(item);
                    for list in &mut self.kinds {
                        list.push(item);
                    }
                }
            }
        }
    }

    #[inline(always)]
    fn of(&self, kind: MsgKind) -> &[u32] {
        self.kinds.get(kind as usize).unwrap_or(&self.any)
    }
}

/// What a plan's lists by kind are filed from: per anchor, whether it matches on a send and
/// the kind it names; per fault, the kind a message fault catches (`None` for another fault).
/// A message fault catching any kind is `Some(None)`.
#[derive(Clone, Debug, Default)]
struct Shape {
    anchors: Vec<(bool, Option<MsgKind>)>,
    faults: Vec<Option<Option<MsgKind>>>,
    /// [`PlanDirector::anchor_watch`] before any anchor matched: what every run of the plan
    /// starts with.
    watch: [u64; 2],
}

/// What an active fault means for the end of the run and for the messages the director looks
/// at, filed from its kind (see [`PlanDirector::refresh`]).
#[derive(Copy, Clone, Debug)]
struct Settle {
    /// The kinds of message it acts on (a message fault's).
    watch: u64,
    /// Whether the run waits for it to end: a healing cut, a pause, a restarting crash.
    waits: bool,
    /// Whether the run waits for it while it holds messages: a message fault.
    holds: bool,
}

impl Settle {
    fn of(fault: &Fault) -> Settle {
        let (watch, waits, holds) = match fault.kind {
            FaultKind::Partition { .. } | FaultKind::Isolate { .. } => {
                (0, fault.end.is_some(), false)
            }
            FaultKind::Pause { .. } => (0, true, false),
            FaultKind::Crash {
                restart_after_ns, ..
            } => (0, restart_after_ns.is_some(), false),
            FaultKind::Message { pattern, .. } => (kinds_bit(pattern.kind), false, true),
            _ => (0, false, false),
        };
        Settle {
            watch,
            waits,
            holds,
        }
    }
}

/// One message-anchored trigger of a fault.
#[derive(Copy, Clone, Debug)]
struct Anchor {
    fault: usize,
    edge: Edge,
    on_send: bool,
    pattern: MsgPattern,
    delay_ns: u64,
}

/// Carries out a fault plan and stops the run once every job is terminal, no worker holds a
/// job, and no started fault is still waiting for its end.
#[derive(Default)]
pub struct PlanDirector {
    faults: Vec<Fault>,
    /// Every message-anchored trigger, in (fault, edge) order: what `observe` looks at for each
    /// message, without copying the faults.
    anchors: Vec<Anchor>,
    /// The anchors matched on a delivery and on a send (indexes into `anchors`), by the kind of
    /// message they name.
    by_kind: [ByKind; 2],
    /// The kinds of message ([`kind_bit`]) an anchor matched on a delivery and on a send that
    /// has not matched yet may match: each matches once, so a message of any other kind costs
    /// one check.
    anchor_watch: [u64; 2],
    /// The kinds of message an active message fault acts on; every kind while an anchored
    /// pause holds messages. With [`PlanDirector::anchor_watch`], a send of a kind in neither
    /// keeps the network's fate without looking further.
    fault_watch: u64,
    /// The message faults (indexes into the plan), by the kind of message they catch: the only
    /// ones a send's fate may depend on.
    msg_faults: ByKind,
    /// What [`PlanDirector::by_kind`] and [`PlanDirector::msg_faults`] were filed from.
    shape: Shape,
    /// One per fault, by index.
    state: Vec<FaultState>,
    /// One per fault, by index: what it means while active.
    settle: Vec<Settle>,
    /// Messages held until a pause ends, per pause fault: the anchoring message and every
    /// later one the paused node sent in the same instant (the rest of its handler).
    anchored: BTreeMap<usize, Vec<u64>>,
    /// A node paused by an anchored pause, with the fault and the instant it began.
    anchored_node: BTreeMap<NodeId, (usize, u64)>,
    /// The tool and operator nodes (signals go there).
    tool: NodeId,
    operator: NodeId,
    healed: bool,
    /// Whether a started fault is still waiting for its end ([`PlanDirector::is_done`] asks
    /// after every event): kept up to date where a fault's phase or its held messages change,
    /// so that the question costs one load.
    unsettled: bool,
    /// Where the one coordinator is among the nodes, found at the first
    /// [`Director::is_done`] of a run (a node keeps its role for the whole run): `Some(None)`
    /// when there is not exactly one, which are then all asked.
    coordinator: Cell<Option<Option<usize>>>,
}

impl PlanDirector {
    /// A director for `faults`; `tool` and `operator` are those nodes' ids.
    pub fn new(faults: Vec<Fault>, tool: NodeId, operator: NodeId) -> Self {
        let mut d = PlanDirector::default();
        d.reset(&faults, tool, operator);
        d
    }

    /// Makes this director one for `faults`, as [`PlanDirector::new`] would, keeping the
    /// storage an earlier plan grew (a thread reuses one director run after run).
    pub fn reset(&mut self, faults: &[Fault], tool: NodeId, operator: NodeId) {
        // Filed anew each time: a sweep's plans differ from seed to seed in their times, so
        // comparing them with the last one first mostly costs a comparison more. The lists by
        // kind, which depend on the plan's shape alone, are kept when it is the same.
        self.file(faults);
        // Each fault armed again; a hold's list keeps its storage.
        self.state.truncate(faults.len());
        for st in &mut self.state {
            let mut held = std::mem::take(&mut st.held);
            held.clear();
            *st = FaultState {
                held,
                ..FaultState::ARMED
            };
        }
        self.state.resize(faults.len(), FaultState::ARMED);
        // Mostly empty already: a tree's `clear` takes it apart even then.
        if !self.anchored.is_empty() {
            self.anchored.clear();
        }
        if !self.anchored_node.is_empty() {
            self.anchored_node.clear();
        }
        self.tool = tool;
        self.operator = operator;
        self.healed = false;
        self.coordinator.set(None);
        // What recomputing them finds for a plan no event has touched yet: every anchor
        // still to match, no fault active, nothing held.
        self.anchor_watch = self.shape.watch;
        self.unsettled = false;
        self.fault_watch = 0;
        #[cfg(test)]
        self.assert_watch_current();
    }

    /// Files a plan's message-anchored triggers and message faults by the kinds of message
    /// they name.
    fn file(&mut self, faults: &[Fault]) {
        self.faults.clear();
        self.faults.extend_from_slice(faults);
        self.settle.clear();
        self.settle.extend(faults.iter().map(Settle::of));
        self.anchors.clear();
        for (i, f) in faults.iter().enumerate() {
            for edge in Edge::ALL {
                let (on_send, pattern, delay_ns) = match edge.of(f) {
                    Some(Trigger::Sent { pattern, delay_ns }) => (true, pattern, delay_ns),
                    Some(Trigger::Delivered { pattern, delay_ns }) => (false, pattern, delay_ns),
                    Some(Trigger::At { .. }) | None => continue,
                };
                self.anchors.push(Anchor {
                    fault: i,
                    edge,
                    on_send,
                    pattern,
                    delay_ns,
                });
            }
        }
        // The lists by kind depend only on which anchor and which message fault names which
        // kind of message: a plan whose times alone differ from the last one's (a scenario's
        // next seed) keeps them.
        let msg_kind = |f: &Fault| match f.kind {
            FaultKind::Message { pattern, .. } => Some(pattern.kind),
            _ => None,
        };
        let same_shape = self.anchors.len() == self.shape.anchors.len()
            && self
                .anchors
                .iter()
                .zip(&self.shape.anchors)
                .all(|(a, &(on_send, kind))| a.on_send == on_send && a.pattern.kind == kind)
            && faults.len() == self.shape.faults.len()
            && faults
                .iter()
                .zip(&self.shape.faults)
                .all(|(f, &kind)| msg_kind(f) == kind);
        if same_shape {
            return;
        }
        let anchors = &self.anchors;
        for sent in [false, true] {
            self.by_kind[sent as usize].fill(
                (0..anchors.len() as u32)
                    .filter(|&a| anchors[a as usize].on_send == sent)
                    .map(|a| (a, anchors[a as usize].pattern.kind)),
            );
        }
        self.msg_faults.fill(
            faults
                .iter()
                .enumerate()
                .filter_map(|(i, f)| Some((i as u32, msg_kind(f)?))),
        );
        self.shape.anchors.clear();
        self.shape
            .anchors
            .extend(anchors.iter().map(|a| (a.on_send, a.pattern.kind)));
        self.shape.faults.clear();
        self.shape.faults.extend(faults.iter().map(msg_kind));
        self.shape.watch = [0; 2];
        for a in anchors {
            self.shape.watch[a.on_send as usize] |= kinds_bit(a.pattern.kind);
        }
    }

    /// [`PlanDirector::anchor_watch`] as the anchors not matched yet make it.
    fn anchor_watch_now(&self) -> [u64; 2] {
        let mut watch = [0; 2];
        for a in &self.anchors {
            if !self.state[a.fault].matched.get(a.edge) {
                watch[a.on_send as usize] |= kinds_bit(a.pattern.kind);
            }
        }
        watch
    }

    /// Checks that what the director keeps up to date as it goes ([`PlanDirector::anchor_watch`],
    /// [`PlanDirector::unsettled`], [`PlanDirector::fault_watch`]) is what recomputing it
    /// from scratch gives.
    #[cfg(test)]
    fn assert_watch_current(&self) {
        assert_eq!(self.anchor_watch, self.anchor_watch_now(), "anchor watch");
        assert_eq!(
            (self.unsettled, self.fault_watch),
            self.settled_now(),
            "unsettled, fault watch"
        );
    }

    /// Recomputes [`PlanDirector::unsettled`] and [`PlanDirector::fault_watch`] after a
    /// callback that may have moved a fault or an anchored pause. A fault whose anchor never
    /// occurred is not waited for; one that started and will end by itself (a healing cut, a
    /// pause, a restart, a held message) is, so that it cannot hide the end of the story.
    fn refresh(&mut self) {
        let (mut unsettled, mut watch) = (false, 0);
        for (settle, st) in self.settle.iter().zip(&self.state) {
            if st.phase == Phase::Active {
                unsettled |= settle.waits || (settle.holds && !st.held.is_empty());
                watch |= settle.watch;
            }
        }
        self.unsettled = unsettled;
        self.fault_watch = if self.anchored.is_empty() && self.anchored_node.is_empty() {
            watch
        } else {
            u64::MAX
        };
    }

    /// [`PlanDirector::unsettled`] and [`PlanDirector::fault_watch`] as the faults' kinds and
    /// state make them: what [`PlanDirector::refresh`] finds from what it filed of each kind.
    #[cfg(test)]
    fn settled_now(&self) -> (bool, u64) {
        let (mut unsettled, mut watch) = (false, 0);
        for (fault, st) in self.faults.iter().zip(&self.state) {
            if st.phase != Phase::Active {
                continue;
            }
            match fault.kind {
                FaultKind::Partition { .. } | FaultKind::Isolate { .. } => {
                    unsettled |= fault.end.is_some()
                }
                FaultKind::Pause { .. } => unsettled = true,
                FaultKind::Crash {
                    restart_after_ns, ..
                } => unsettled |= restart_after_ns.is_some(),
                FaultKind::Message { pattern, .. } => {
                    unsettled |= !st.held.is_empty();
                    watch |= kinds_bit(pattern.kind);
                }
                _ => {}
            }
        }
        let watch = if self.anchored.is_empty() && self.anchored_node.is_empty() {
            watch
        } else {
            u64::MAX
        };
        (unsettled, watch)
    }

    /// Alarms for the faults that start or end at a fixed time, and for the heal phase, in
    /// that order.
    pub fn initial_commands(&self, heal_at_ns: Option<u64>) -> impl Iterator<Item = Command> + '_ {
        let edges = self.faults.iter().enumerate().flat_map(|(i, f)| {
            Edge::ALL
                .into_iter()
                .filter_map(move |edge| match edge.of(f) {
                    Some(Trigger::At { t_ns }) => Some(Command::Alarm {
                        at: t_ns,
                        tag: Alarm::Edge { fault: i, edge }.encode(),
                    }),
                    _ => None,
                })
        });
        let heal = heal_at_ns.map(|at| Command::Alarm {
            at,
            tag: Alarm::Heal.encode(),
        });
        edges.chain(heal)
    }

    fn cut(ctl: &mut Control, a: NodeId, b: NodeId, one_way: bool, heal: bool) {
        let (x, y) = if heal {
            (
                Command::Heal { from: a, to: b },
                Command::Heal { from: b, to: a },
            )
        } else {
            (
                Command::Cut { from: a, to: b },
                Command::Cut { from: b, to: a },
            )
        };
        ctl.push(x);
        if !one_way {
            ctl.push(y);
        }
    }

    fn fire(&mut self, ctl: &mut Control, now: u64, nodes: u32, i: usize, edge: Edge) {
        match edge {
            Edge::Start => self.start(ctl, now, nodes, i),
            Edge::End => self.end(ctl, nodes, i),
            Edge::Release => self.release(ctl, i),
        }
    }

    fn start(&mut self, ctl: &mut Control, now: u64, nodes: u32, i: usize) {
        let st = &mut self.state[i];
        if self.healed || st.phase != Phase::Armed {
            return;
        }
        if st.ended_early {
            // Its end came first: the fault never takes effect.
            st.phase = Phase::Done;
            return;
        }
        let kind = self.faults[i].kind;
        st.phase = if kind.lasts() {
            Phase::Active
        } else {
            Phase::Done
        };
        match kind {
            FaultKind::Partition { a, b, one_way } => Self::cut(ctl, a, b, one_way, false),
            FaultKind::Isolate { node } => {
                for other in (0..nodes).filter(|o| *o != node) {
                    Self::cut(ctl, node, other, false, false);
                }
            }
            FaultKind::Pause {
                node,
                frozen,
                duration_ns,
                ..
            } => {
                ctl.push(Command::Pause { node, frozen });
                ctl.push(Command::Alarm {
                    at: now + duration_ns,
                    tag: Alarm::Resume { fault: i }.encode(),
                });
            }
            FaultKind::Crash {
                node,
                restart_after_ns,
            } => {
                ctl.push(Command::Crash { node });
                if let Some(d) = restart_after_ns {
                    ctl.push(Command::Alarm {
                        at: now + d,
                        tag: Alarm::Restart { fault: i }.encode(),
                    });
                }
            }
            FaultKind::ClockStep {
                node,
                delta_ns,
                wall,
            } => ctl.push(if wall {
                Command::WallStep { node, delta_ns }
            } else {
                Command::ClockStep { node, delta_ns }
            }),
            FaultKind::Drift { node, drift_ppm } => ctl.push(Command::SetDrift { node, drift_ppm }),
            FaultKind::Operator { .. } => ctl.push(Command::Signal {
                node: self.operator,
                tag: i as u64,
            }),
            FaultKind::Slow { node, extra_ns } => ctl.push(Command::SetSlow { node, extra_ns }),
            FaultKind::Message { .. } | FaultKind::Tool { .. } => {}
        }
    }

    fn end(&mut self, ctl: &mut Control, nodes: u32, i: usize) {
        let st = &mut self.state[i];
        if st.phase == Phase::Armed {
            st.ended_early = true;
            return;
        }
        if st.phase != Phase::Active {
            return;
        }
        match self.faults[i].kind {
            FaultKind::Partition { a, b, one_way } => {
                st.phase = Phase::Done;
                Self::cut(ctl, a, b, one_way, true);
            }
            FaultKind::Isolate { node } => {
                st.phase = Phase::Done;
                for other in (0..nodes).filter(|o| *o != node) {
                    Self::cut(ctl, node, other, false, true);
                }
            }
            // Disarmed; a hold still owes its release.
            FaultKind::Message { .. } if st.held.is_empty() || st.released => {
                st.phase = Phase::Done;
            }
            FaultKind::Slow { node, .. } => {
                st.phase = Phase::Done;
                ctl.push(Command::SetSlow { node, extra_ns: 0 });
            }
            _ => {}
        }
    }

    fn release(&mut self, ctl: &mut Control, i: usize) {
        let st = &mut self.state[i];
        st.released = true;
        // Drained in place: the list keeps its storage for the thread's next run.
        for id in st.held.drain(..) {
            ctl.push(Command::Release { id });
        }
        if st.phase == Phase::Active && st.matched.get(Edge::End) {
            st.phase = Phase::Done;
        }
        if self.faults[i].end.is_none() && st.phase == Phase::Active {
            // A hold without an end trigger is done once released.
            st.phase = Phase::Done;
        }
    }

    fn resume(&mut self, ctl: &mut Control, i: usize) {
        if let FaultKind::Pause { node, .. } = self.faults[i].kind {
            if self.state[i].phase == Phase::Active {
                self.state[i].phase = Phase::Done;
                ctl.push(Command::Resume { node });
                self.anchored_node.remove(&node);
                for id in self.anchored.remove(&i).unwrap_or_default() {
                    ctl.push(Command::Release { id });
                }
            }
        }
    }

    fn restart(&mut self, ctl: &mut Control, i: usize) {
        if let FaultKind::Crash { node, .. } = self.faults[i].kind {
            if self.state[i].phase == Phase::Active {
                self.state[i].phase = Phase::Done;
                ctl.push(Command::Restart { node });
            }
        }
    }

    /// The heal phase (swarm): every fault stops, every node is back, every message released.
    fn heal(&mut self, ctl: &mut Control, nodes: u32) {
        self.healed = true;
        for i in 0..self.faults.len() {
            match self.faults[i].kind {
                FaultKind::Pause { .. } => self.resume(ctl, i),
                FaultKind::Crash { .. } => self.restart(ctl, i),
                FaultKind::Drift { node, drift_ppm } => {
                    if self.state[i].phase == Phase::Done && drift_ppm != 0 {
                        // Clocks back within their bound.
                        ctl.push(Command::SetDrift { node, drift_ppm: 0 });
                    }
                }
                FaultKind::Message { .. } => {
                    self.release(ctl, i);
                    self.state[i].phase = Phase::Done;
                }
                _ => self.end(ctl, nodes, i),
            }
            if self.state[i].phase == Phase::Armed {
                self.state[i].phase = Phase::Done;
            }
        }
        ctl.push(Command::Signal {
            node: self.tool,
            tag: SIGNAL_HEAL,
        });
        // Random loss and duplication are faults too: they stop with the rest.
        ctl.push(Command::SetNetwork {
            drop_ppm: 0,
            dup_ppm: 0,
        });
    }

    /// Matches anchored triggers against one observation: nothing to do, in the caller's own
    /// code, once every anchor of this direction has matched or when none can match the
    /// message's kind.
    #[inline(always)]
    fn observe(
        &mut self,
        ctl: &mut Control,
        now: u64,
        nodes: u32,
        sent: bool,
        env: &Envelope<Msg>,
    ) {
        if self.anchor_watch[sent as usize] & kind_bit(env.msg.kind()) != 0 {
            self.match_anchors(ctl, now, nodes, sent, env);
        }
    }

    /// The anchors of this direction that can match the message's kind, in their order: each
    /// that matches is marked and fires (or sets its delay's alarm).
    #[inline(never)]
    fn match_anchors(
        &mut self,
        ctl: &mut Control,
        now: u64,
        nodes: u32,
        sent: bool,
        env: &Envelope<Msg>,
    ) {
        let kind = env.msg.kind();
        let mut k = 0;
        // Whether an anchor naming no kind matched; whether one of the list is still to match;
        // whether a trigger fired here.
        let mut matched_any_kind = false;
        let (mut left, mut fired) = (false, false);
        while let Some(&a) = self.by_kind[sent as usize].of(kind).get(k) {
            k += 1;
            let anchor = &self.anchors[a as usize];
            let st = &self.state[anchor.fault];
            if st.matched.get(anchor.edge) {
                continue;
            }
            // An end or a release only counts once the start trigger matched (the start itself
            // may still be waiting for its delay).
            if anchor.edge != Edge::Start
                && st.phase == Phase::Armed
                && !st.matched.get(Edge::Start)
            {
                left = true;
                continue;
            }
            if !anchor.pattern.matches(env.from, env.to, &env.msg) {
                left = true;
                continue;
            }
            matched_any_kind |= anchor.pattern.kind.is_none();
            fired |= self.anchor_matched(ctl, now, nodes, sent, env, a as usize);
        }
        // The list holds every anchor of this direction that names this kind or none: once
        // none of it is left to match, no anchor watches the kind any more. One naming no
        // kind watched every kind, and a kind beyond 64 shares its bit with all the others:
        // then every anchor is looked at again.
        if matched_any_kind || kind_bit(kind) == u64::MAX {
            self.anchor_watch = self.anchor_watch_now();
        } else if !left {
            self.anchor_watch[sent as usize] &= !kind_bit(kind);
        }
        // Only a fired trigger moves a fault or an anchored pause.
        if fired {
            self.refresh();
        }
        #[cfg(test)]
        self.assert_watch_current();
    }

    /// Anchor `a`, which matched the message: marks it, then fires its trigger (and says so)
    /// or sets its delay's alarm. Out of line: most messages a kind's anchors look at match
    /// none of them, and the search above is then the whole call.
    #[inline(never)]
    fn anchor_matched(
        &mut self,
        ctl: &mut Control,
        now: u64,
        nodes: u32,
        sent: bool,
        env: &Envelope<Msg>,
        a: usize,
    ) -> bool {
        let Anchor {
            fault: i,
            edge,
            delay_ns,
            ..
        } = self.anchors[a];
        let st = &mut self.state[i];
        st.matched.set(edge);
        let will_start = st.phase == Phase::Armed && !self.healed;
        if edge == Edge::Start && sent && delay_ns == 0 && will_start {
            if let FaultKind::Pause {
                node,
                hold_anchor: true,
                ..
            } = self.faults[i].kind
            {
                if node == env.from {
                    self.anchored.insert(i, vec![env.id]);
                    self.anchored_node.insert(node, (i, now));
                }
            }
        }
        if delay_ns == 0 {
            self.fire(ctl, now, nodes, i, edge);
            true
        } else {
            ctl.push(Command::Alarm {
                at: now + delay_ns,
                tag: Alarm::Edge { fault: i, edge }.encode(),
            });
            false
        }
    }
}

/// A message kind's bit in a set of kinds (every bit for a kind beyond 64, which is then
/// looked at as if every kind were watched).
#[inline(always)]
fn kind_bit(kind: MsgKind) -> u64 {
    1u64.checked_shl(kind as u32).unwrap_or(u64::MAX)
}

/// The kinds a pattern names: one, or every kind when it names none.
fn kinds_bit(kind: Option<MsgKind>) -> u64 {
    kind.map_or(u64::MAX, kind_bit)
}

/// Whether any node is a coordinator with every job terminal.
#[cold]
#[inline(never)]
fn any_finished_coordinator(nodes: &[Node]) -> bool {
    nodes.iter().any(Node::is_finished_coordinator)
}

/// Whether any node is a worker that holds a job.
#[inline(never)]
fn any_busy_worker(nodes: &[Node]) -> bool {
    nodes.iter().any(Node::is_busy_worker)
}

impl PlanDirector {
    /// Finds where the coordinator is (see [`PlanDirector::coordinator`]) and whether it is
    /// finished.
    #[cold]
    #[inline(never)]
    fn find_coordinator(&self, nodes: &[Node]) -> bool {
        let mut at = nodes
            .iter()
            .enumerate()
            .filter(|(_, n)| matches!(n, Node::Coordinator(_)))
            .map(|(i, _)| i);
        let one = at.next().filter(|_| at.next().is_none());
        self.coordinator.set(Some(one));
        match one {
            Some(i) => nodes[i].is_finished_coordinator(),
            None => nodes.iter().any(Node::is_finished_coordinator),
        }
    }

    /// [`Director::on_send`] for a message something may watch.
    #[inline(never)]
    fn on_watched_send(
        &mut self,
        ctl: &mut Control,
        now: u64,
        env: &Envelope<Msg>,
        fate: Fate,
    ) -> Fate {
        let nodes = self.operator + 1;
        self.observe(ctl, now, nodes, true, env);
        if !self.anchored.is_empty() && self.anchored.values().any(|ids| ids.contains(&env.id)) {
            // Paused right after the check: the message leaves when the pause ends.
            return Fate::Hold;
        }
        if let Some(&(i, at)) = self.anchored_node.get(&env.from) {
            if at == now {
                // The rest of the handler that was interrupted leaves with it.
                self.anchored.entry(i).or_default().push(env.id);
                return Fate::Hold;
            }
        }
        let mut fate = fate;
        if matches!(fate, Fate::Drop { .. }) {
            return fate;
        }
        for &i in self.msg_faults.of(env.msg.kind()) {
            let i = i as usize;
            let st = &mut self.state[i];
            if st.phase != Phase::Active {
                continue;
            }
            match self.faults[i].kind {
                FaultKind::Message {
                    pattern,
                    count,
                    action,
                } if pattern.matches(env.from, env.to, &env.msg) => {
                    if count != 0 && st.caught >= count {
                        continue;
                    }
                    if let MsgAction::Hold { .. } = action {
                        if st.released {
                            continue;
                        }
                    }
                    st.caught += 1;
                    fate = match (action, fate) {
                        (MsgAction::Drop, _) => Fate::Drop {
                            cause: DropCause::Plan,
                        },
                        (MsgAction::Delay { extra_ns }, Fate::Deliver { delay_ns }) => {
                            Fate::Deliver {
                                delay_ns: delay_ns + extra_ns,
                            }
                        }
                        (MsgAction::Duplicate { gap_ns }, Fate::Deliver { delay_ns }) => {
                            Fate::Duplicate {
                                delay_ns,
                                dup_delay_ns: delay_ns + gap_ns,
                            }
                        }
                        (MsgAction::Hold { .. }, _) => {
                            st.held.push(env.id);
                            // An active hold with a message is pending.
                            self.unsettled = true;
                            Fate::Hold
                        }
                        (_, other) => other,
                    };
                    if matches!(fate, Fate::Drop { .. } | Fate::Hold) {
                        return fate;
                    }
                }
                _ => {}
            }
        }
        fate
    }
}

impl Director<Node> for PlanDirector {
    /// A send of a kind no anchor, message fault or anchored pause watches keeps its fate
    /// here, in the engine's own code; any other takes the full look.
    #[inline]
    fn on_send(&mut self, ctl: &mut Control, now: u64, env: &Envelope<Msg>, fate: Fate) -> Fate {
        if (self.anchor_watch[1] | self.fault_watch) & kind_bit(env.msg.kind()) == 0 {
            return fate;
        }
        let fate = self.on_watched_send(ctl, now, env, fate);
        #[cfg(test)]
        self.assert_watch_current();
        fate
    }

    #[inline]
    fn on_deliver(&mut self, ctl: &mut Control, now: u64, env: &Envelope<Msg>) {
        let nodes = self.operator + 1;
        self.observe(ctl, now, nodes, false, env);
    }

    fn on_note(&mut self, _ctl: &mut Control, _now: u64, _node: NodeId, _note: &Event) {}

    fn on_alarm(&mut self, ctl: &mut Control, now: u64, tag: u64) {
        let nodes = self.operator + 1;
        // Every tag is one this director encoded for a fault of its own plan.
        match Alarm::decode(tag) {
            Some(Alarm::Heal) => self.heal(ctl, nodes),
            Some(Alarm::Edge { fault, edge }) if fault < self.faults.len() => {
                self.fire(ctl, now, nodes, fault, edge)
            }
            Some(Alarm::Resume { fault }) if fault < self.faults.len() => self.resume(ctl, fault),
            Some(Alarm::Restart { fault }) if fault < self.faults.len() => self.restart(ctl, fault),
            _ => debug_assert!(false, "an alarm tag this director never set: {tag}"),
        }
        self.refresh();
        #[cfg(test)]
        self.assert_watch_current();
    }

    fn is_done(&self, nodes: &[Node]) -> bool {
        if self.unsettled || !self.anchored.is_empty() {
            return false;
        }
        // Asked after every event, and mostly answered by the coordinator alone: the walks
        // over the nodes are kept out of line, so that this answer costs no more than it.
        let finished = match self.coordinator.get() {
            Some(Some(i)) if i < nodes.len() => nodes[i].is_finished_coordinator(),
            Some(_) => any_finished_coordinator(nodes),
            None => self.find_coordinator(nodes),
        };
        finished && !any_busy_worker(nodes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alarm_tags_decode_to_what_was_encoded() {
        let edges = Edge::ALL.map(|edge| Alarm::Edge { fault: 7, edge });
        for alarm in edges.into_iter().chain([
            Alarm::Resume { fault: 0 },
            Alarm::Restart { fault: 999 },
            Alarm::Heal,
        ]) {
            assert_eq!(Alarm::decode(alarm.encode()), Some(alarm));
        }
        // The encoding is the one runs were recorded with: fault * 8 + slot.
        assert_eq!(
            Alarm::Edge {
                fault: 2,
                edge: Edge::Release
            }
            .encode(),
            18
        );
        assert_eq!(Alarm::Restart { fault: 1 }.encode(), 12);
        assert_eq!(Alarm::decode(5), None);
    }

    /// What a director files from a plan: what each kind of message is held against (a list
    /// beyond the kinds a plan names holds what `any` does, so lists are read as `of` reads
    /// them).
    fn filed(d: &PlanDirector) -> String {
        let of = |b: &ByKind| -> Vec<Vec<u32>> {
            (0..64)
                .map(|k| b.kinds.get(k).unwrap_or(&b.any).clone())
                .collect()
        };
        format!(
            "{:?} {:?} {:?} {:?} {:?}",
            d.faults,
            d.anchors,
            of(&d.by_kind[0]),
            of(&d.by_kind[1]),
            of(&d.msg_faults)
        )
    }

    /// What a director keeps up to date as a run goes (the kinds of message it watches, and
    /// whether a fault is unsettled) is what recomputing it from scratch gives, after every
    /// callback of every scenario's runs: each callback asserts it in a test build.
    #[test]
    fn the_watch_kept_up_to_date_is_the_one_recomputed() {
        use crate::scenarios::ALL;
        use leasesim_protocol::Variant;
        for def in ALL {
            for seed in 0..4 {
                let variant = Variant::ALL[seed as usize % Variant::ALL.len()];
                let setup = def.build(seed, variant);
                let r = crate::run(&setup, seed, &crate::Machines::variant(variant));
                // A run catches a panic as a machine's fault.
                assert_eq!(r.machine_fault, None, "{} seed {seed}", def.name);
            }
        }
    }

    /// A director reset for a plan after any other plan (another scenario's, the same
    /// scenario's at another seed, or none) files it as a new director does.
    #[test]
    fn a_reset_director_files_a_plan_as_a_new_one() {
        use crate::scenarios::ALL;
        use leasesim_protocol::Variant;
        let plan = |def: &crate::scenarios::ScenarioDef, seed: u64| {
            def.build(seed, Variant::Reference).faults.clone()
        };
        for (k, def) in ALL.iter().enumerate() {
            for (p, prev) in ALL.iter().enumerate() {
                let seed = (k * ALL.len() + p) as u64;
                let want = filed(&PlanDirector::new(plan(def, seed), 1, 2));
                let mut d = PlanDirector::default();
                d.reset(&plan(prev, seed + 1), 1, 2);
                d.reset(&plan(def, seed), 1, 2);
                assert_eq!(filed(&d), want, "{} after {}", def.name, prev.name);
                d.reset(&plan(def, seed + 7), 1, 2);
                d.reset(&plan(def, seed), 1, 2);
                assert_eq!(filed(&d), want, "{} after itself", def.name);
                d.reset(&[], 1, 2);
                d.reset(&plan(def, seed), 1, 2);
                assert_eq!(filed(&d), want, "{} after no plan", def.name);
            }
        }
    }
}
