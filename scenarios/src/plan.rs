//! The fault catalogue (SPEC F1-F8) as one closed set of explicit faults, each applied at a true
//! time or anchored to a protocol event ("cut W1 from the coordinator when it starts the tool
//! call", "pause W1 right after it checked its lease"), and the director that carries a plan out
//! inside the simulator, including the heal phase that ends every fault.

use crate::world::{Node, SIGNAL_HEAL};
use leasesim_protocol::{Event, JobId, Msg, MsgKind, OpId, OperatorAction, Token, ToolFaultKind};
use leasesim_sim::{Command, Control, Director, DropCause, Envelope, Fate, NodeId};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Which messages a trigger or a message fault matches. Unset fields match anything.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MsgPattern {
    /// Sender.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<NodeId>,
    /// Receiver.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to: Option<NodeId>,
    /// Kind of message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<MsgKind>,
    /// Token or fence carried.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<Token>,
    /// Operation of an effect.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub op: Option<OpId>,
    /// Plan step of a tool request or response.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<u8>,
}

impl MsgPattern {
    /// Whether the message matches.
    pub fn matches(&self, from: NodeId, to: NodeId, msg: &Msg) -> bool {
        let op = match msg {
            Msg::Effect { key, .. } | Msg::EffectAck { key, .. } => Some(key.op),
            _ => None,
        };
        let step = match msg {
            Msg::ToolRequest { step, .. } | Msg::ToolResponse { step, .. } => Some(*step),
            _ => None,
        };
        self.from.is_none_or(|f| f == from)
            && self.to.is_none_or(|t| t == to)
            && self.kind.is_none_or(|k| k == msg.kind())
            && self.token.is_none_or(|t| Some(t) == msg.token())
            && self.op.is_none_or(|o| Some(o) == op)
            && self.step.is_none_or(|s| Some(s) == step)
    }
}

/// When a fault starts or ends.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "on", rename_all = "snake_case")]
pub enum Trigger {
    /// At a true time.
    At {
        /// True time in nanoseconds.
        t_ns: u64,
    },
    /// When a matching message is sent, plus a delay.
    Sent {
        /// The message.
        pattern: MsgPattern,
        /// Delay after the match.
        delay_ns: u64,
    },
    /// When a matching message is delivered, plus a delay.
    Delivered {
        /// The message.
        pattern: MsgPattern,
        /// Delay after the match.
        delay_ns: u64,
    },
}

impl Trigger {
    /// At true time `t_ns`.
    pub fn at(t_ns: u64) -> Trigger {
        Trigger::At { t_ns }
    }
    /// When a message matching `pattern` is sent.
    pub fn sent(pattern: MsgPattern) -> Trigger {
        Trigger::Sent {
            pattern,
            delay_ns: 0,
        }
    }
    /// When a message matching `pattern` is delivered.
    pub fn delivered(pattern: MsgPattern) -> Trigger {
        Trigger::Delivered {
            pattern,
            delay_ns: 0,
        }
    }
    /// The same trigger, `delay_ns` later.
    pub fn after(self, delay_ns: u64) -> Trigger {
        match self {
            Trigger::At { t_ns } => Trigger::At {
                t_ns: t_ns + delay_ns,
            },
            Trigger::Sent {
                pattern,
                delay_ns: d,
            } => Trigger::Sent {
                pattern,
                delay_ns: d + delay_ns,
            },
            Trigger::Delivered {
                pattern,
                delay_ns: d,
            } => Trigger::Delivered {
                pattern,
                delay_ns: d + delay_ns,
            },
        }
    }
}

/// What a message fault does to each message it catches (F3).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "do", rename_all = "snake_case")]
pub enum MsgAction {
    /// Lose it.
    Drop,
    /// Deliver it `extra_ns` later than the network would (reordering it past later ones).
    Delay {
        /// Extra flight time.
        extra_ns: u64,
    },
    /// Deliver it twice, the copy `gap_ns` after the original.
    Duplicate {
        /// Gap between the copies.
        gap_ns: u64,
    },
    /// Hold it until `release` (a late message), then let it fly.
    Hold {
        /// When the held messages are released.
        release: Trigger,
    },
}

/// One explicit fault of the catalogue.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "fault", rename_all = "snake_case")]
pub enum Fault {
    /// F1: cut the link `a -> b` (and `b -> a` unless one-way) from `start` until `end`.
    Partition {
        /// One side.
        a: NodeId,
        /// Other side.
        b: NodeId,
        /// Only `a -> b` is cut.
        one_way: bool,
        /// When the cut starts.
        start: Trigger,
        /// When it heals (at the heal phase, if `None`).
        end: Option<Trigger>,
    },
    /// F1 full partition / F6 outage: cut every link of `node`, both ways.
    Isolate {
        /// The node (the coordinator for an outage).
        node: NodeId,
        /// When it starts.
        start: Trigger,
        /// When it ends (at the heal phase, if `None`).
        end: Option<Trigger>,
    },
    /// F2: the node runs nothing for `duration_ns`. `frozen`: its clock stops too (a VM stop);
    /// otherwise it runs on (a GC pause). `hold_anchor`: when `start` is a send, that very
    /// message leaves only when the pause ends ("paused right after it checked its lease").
    Pause {
        /// The node.
        node: NodeId,
        /// Whether the clock stops.
        frozen: bool,
        /// When the pause starts.
        start: Trigger,
        /// How long it lasts (true time).
        duration_ns: u64,
        /// Whether the anchoring message waits for the resume.
        hold_anchor: bool,
    },
    /// F3: drop, delay, duplicate or hold messages matching `pattern`, from `start` on, at most
    /// `count` of them (0: every one until `end`).
    Message {
        /// The messages.
        pattern: MsgPattern,
        /// When the fault is armed.
        start: Trigger,
        /// When it disarms (at the heal phase, if `None`).
        end: Option<Trigger>,
        /// How many messages it catches (0: unbounded).
        count: u32,
        /// What it does to each.
        action: MsgAction,
    },
    /// F4: step a clock. `wall`: only the wall clock (the protocol must not care); otherwise the
    /// monotonic clock jumps (a suspend or migration).
    ClockStep {
        /// The node.
        node: NodeId,
        /// Signed step.
        delta_ns: i64,
        /// Wall clock only.
        wall: bool,
        /// When.
        start: Trigger,
    },
    /// F4: change a clock's rate.
    Drift {
        /// The node.
        node: NodeId,
        /// New rate error.
        drift_ppm: i32,
        /// When.
        start: Trigger,
    },
    /// F5: crash the node (volatile state lost), restart it after `restart_after_ns` (never, or
    /// at the heal phase, if `None`). A worker restarts under the same logical name.
    Crash {
        /// The node.
        node: NodeId,
        /// When it crashes.
        start: Trigger,
        /// Down time.
        restart_after_ns: Option<u64>,
    },
    /// F6: every message to or from `node` takes `extra_ns` longer while active.
    Slow {
        /// The node (usually the coordinator).
        node: NodeId,
        /// Extra flight time.
        extra_ns: u64,
        /// When it starts.
        start: Trigger,
        /// When it ends (at the heal phase, if `None`).
        end: Option<Trigger>,
    },
    /// F7: the tool misbehaves on the `nth` call (0: every call) from `worker` (any, if `None`)
    /// at plan step `step` (any, if `None`). Applied by the tool itself, until the heal phase.
    Tool {
        /// Caller.
        worker: Option<NodeId>,
        /// Plan step.
        step: Option<u8>,
        /// Which matching call (1-based; 0 for every one).
        nth: u32,
        /// What goes wrong.
        kind: ToolFaultKind,
        /// Extra duration for `Late`.
        late_ns: u64,
    },
    /// F8: an operator acts on a job through the coordinator.
    Operator {
        /// The job.
        job: JobId,
        /// The action.
        action: OperatorAction,
        /// When.
        start: Trigger,
    },
}

/// The kinds of fault, for `list` and coverage.
pub const FAULT_KINDS: &[(&str, &str, &str)] = &[
    (
        "partition",
        "F1",
        "cut one link, one way or both, until it heals",
    ),
    (
        "isolate",
        "F1/F6",
        "cut every link of a node (full partition; coordinator outage)",
    ),
    (
        "pause",
        "F2",
        "stop a node: GC pause (clock runs on) or VM stop (clock frozen)",
    ),
    (
        "message",
        "F3",
        "drop, delay (reorder), duplicate or hold (late) matching messages",
    ),
    (
        "clock-step",
        "F4",
        "step a wall clock, or jump a monotonic clock forward",
    ),
    ("drift", "F4", "change a clock's rate"),
    (
        "crash",
        "F5",
        "crash a node; restart it (a worker under the same name)",
    ),
    (
        "slow",
        "F6",
        "add latency to every message of a node (a slow coordinator)",
    ),
    (
        "tool",
        "F7",
        "tool hangs, answers late, fails transiently or permanently, loses its answer",
    ),
    (
        "operator",
        "F8",
        "operator revokes, takes over or cancels a job",
    ),
];

impl Trigger {
    /// The message pattern it waits for, if any.
    fn pattern(&self) -> Option<MsgPattern> {
        match *self {
            Trigger::At { .. } => None,
            Trigger::Sent { pattern, .. } | Trigger::Delivered { pattern, .. } => Some(pattern),
        }
    }
}

impl Fault {
    /// Every message pattern the fault names: its triggers' and the messages it acts on.
    pub fn patterns(&self) -> Vec<MsgPattern> {
        let mut triggers: Vec<Trigger> = Vec::new();
        let mut patterns = Vec::new();
        match *self {
            Fault::Partition { start, end, .. }
            | Fault::Isolate { start, end, .. }
            | Fault::Slow { start, end, .. } => triggers.extend(Some(start).into_iter().chain(end)),
            Fault::Message {
                pattern,
                start,
                end,
                action,
                ..
            } => {
                patterns.push(pattern);
                triggers.extend(Some(start).into_iter().chain(end));
                if let MsgAction::Hold { release } = action {
                    triggers.push(release);
                }
            }
            Fault::Pause { start, .. }
            | Fault::ClockStep { start, .. }
            | Fault::Drift { start, .. }
            | Fault::Crash { start, .. }
            | Fault::Operator { start, .. } => triggers.push(start),
            Fault::Tool { .. } => {}
        }
        patterns.extend(triggers.iter().filter_map(Trigger::pattern));
        patterns
    }
}

impl MsgPattern {
    fn map_nodes(self, map: &mut impl FnMut(NodeId) -> Option<NodeId>) -> Option<MsgPattern> {
        let mut p = self;
        if let Some(f) = p.from {
            p.from = Some(map(f)?);
        }
        if let Some(t) = p.to {
            p.to = Some(map(t)?);
        }
        Some(p)
    }
}

impl Trigger {
    fn map_nodes(self, map: &mut impl FnMut(NodeId) -> Option<NodeId>) -> Option<Trigger> {
        Some(match self {
            Trigger::At { .. } => self,
            Trigger::Sent { pattern, delay_ns } => Trigger::Sent {
                pattern: pattern.map_nodes(map)?,
                delay_ns,
            },
            Trigger::Delivered { pattern, delay_ns } => Trigger::Delivered {
                pattern: pattern.map_nodes(map)?,
                delay_ns,
            },
        })
    }
}

impl Fault {
    /// Calls `f` with every node the fault names (directly, in patterns, in triggers).
    pub fn for_each_node(&self, mut f: impl FnMut(NodeId)) {
        let _ = self.map_nodes(|n| {
            f(n);
            Some(n)
        });
    }

    /// The same fault with every node id mapped; `None` when a named node maps to nothing.
    pub fn map_nodes(&self, mut map: impl FnMut(NodeId) -> Option<NodeId>) -> Option<Fault> {
        let m = &mut map;
        let opt = |t: Option<Trigger>,
                   m: &mut dyn FnMut(NodeId) -> Option<NodeId>|
         -> Option<Option<Trigger>> {
            match t {
                None => Some(None),
                Some(t) => Some(Some(t.map_nodes(&mut |n| m(n))?)),
            }
        };
        Some(match *self {
            Fault::Partition {
                a,
                b,
                one_way,
                start,
                end,
            } => Fault::Partition {
                a: m(a)?,
                b: m(b)?,
                one_way,
                start: start.map_nodes(m)?,
                end: opt(end, m)?,
            },
            Fault::Isolate { node, start, end } => Fault::Isolate {
                node: m(node)?,
                start: start.map_nodes(m)?,
                end: opt(end, m)?,
            },
            Fault::Pause {
                node,
                frozen,
                start,
                duration_ns,
                hold_anchor,
            } => Fault::Pause {
                node: m(node)?,
                frozen,
                start: start.map_nodes(m)?,
                duration_ns,
                hold_anchor,
            },
            Fault::Message {
                pattern,
                start,
                end,
                count,
                action,
            } => Fault::Message {
                pattern: pattern.map_nodes(m)?,
                start: start.map_nodes(m)?,
                end: opt(end, m)?,
                count,
                action: match action {
                    MsgAction::Hold { release } => MsgAction::Hold {
                        release: release.map_nodes(m)?,
                    },
                    other => other,
                },
            },
            Fault::ClockStep {
                node,
                delta_ns,
                wall,
                start,
            } => Fault::ClockStep {
                node: m(node)?,
                delta_ns,
                wall,
                start: start.map_nodes(m)?,
            },
            Fault::Drift {
                node,
                drift_ppm,
                start,
            } => Fault::Drift {
                node: m(node)?,
                drift_ppm,
                start: start.map_nodes(m)?,
            },
            Fault::Crash {
                node,
                start,
                restart_after_ns,
            } => Fault::Crash {
                node: m(node)?,
                start: start.map_nodes(m)?,
                restart_after_ns,
            },
            Fault::Slow {
                node,
                extra_ns,
                start,
                end,
            } => Fault::Slow {
                node: m(node)?,
                extra_ns,
                start: start.map_nodes(m)?,
                end: opt(end, m)?,
            },
            Fault::Tool {
                worker,
                step,
                nth,
                kind,
                late_ns,
            } => Fault::Tool {
                worker: match worker {
                    Some(w) => Some(m(w)?),
                    None => None,
                },
                step,
                nth,
                kind,
                late_ns,
            },
            Fault::Operator { job, action, start } => Fault::Operator {
                job,
                action,
                start: start.map_nodes(m)?,
            },
        })
    }

    fn start(&self) -> Option<Trigger> {
        match *self {
            Fault::Partition { start, .. }
            | Fault::Isolate { start, .. }
            | Fault::Pause { start, .. }
            | Fault::Message { start, .. }
            | Fault::ClockStep { start, .. }
            | Fault::Drift { start, .. }
            | Fault::Crash { start, .. }
            | Fault::Slow { start, .. }
            | Fault::Operator { start, .. } => Some(start),
            Fault::Tool { .. } => None,
        }
    }

    fn end(&self) -> Option<Trigger> {
        match *self {
            Fault::Partition { end, .. }
            | Fault::Isolate { end, .. }
            | Fault::Message { end, .. }
            | Fault::Slow { end, .. } => end,
            _ => None,
        }
    }

    fn release(&self) -> Option<Trigger> {
        match *self {
            Fault::Message {
                action: MsgAction::Hold { release },
                ..
            } => Some(release),
            _ => None,
        }
    }

    /// Whether the fault lasts until something ends it (and so must end by the heal phase).
    fn lasts(&self) -> bool {
        matches!(
            self,
            Fault::Partition { .. }
                | Fault::Isolate { .. }
                | Fault::Pause { .. }
                | Fault::Message { .. }
                | Fault::Crash { .. }
                | Fault::Slow { .. }
        )
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

// Alarm tags: fault index * 8 + what.
const WHAT_START: u64 = 0;
const WHAT_END: u64 = 1;
const WHAT_RELEASE: u64 = 2;
const WHAT_RESUME: u64 = 3;
const WHAT_RESTART: u64 = 4;
const TAG_HEAL: u64 = u64::MAX;

/// Carries out a fault plan and stops the run once every job is terminal, no worker holds a
/// job, and no started fault is still waiting for its end.
pub struct PlanDirector {
    faults: Vec<Fault>,
    /// Every message-anchored trigger, in (fault, start/end/release) order: what `observe`
    /// looks at for each message, without copying the faults.
    anchors: Vec<Anchor>,
    phase: Vec<Phase>,
    /// Whether the start / end / release trigger already matched.
    matched: Vec<[bool; 3]>,
    /// Messages a message fault caught so far.
    caught: Vec<u32>,
    /// Held message ids per fault.
    held: Vec<Vec<u64>>,
    /// Whether a hold's release came before (or while) it was holding.
    released: Vec<bool>,
    /// Whether a fault's end came before its (delayed) start.
    ended_early: Vec<bool>,
    /// Messages held until a pause ends, per pause fault: the anchoring message and every
    /// later one the paused node sent in the same instant (the rest of its handler).
    anchored: BTreeMap<usize, Vec<u64>>,
    /// A node paused by an anchored pause, with the fault and the instant it began.
    anchored_node: BTreeMap<NodeId, (usize, u64)>,
    /// The tool and operator nodes (signals go there).
    tool: NodeId,
    operator: NodeId,
    healed: bool,
}

/// One message-anchored trigger of a fault.
#[derive(Copy, Clone, Debug)]
struct Anchor {
    fault: usize,
    what: u64,
    on_send: bool,
    pattern: MsgPattern,
    delay_ns: u64,
}

impl PlanDirector {
    /// A director for `faults`; `tool` and `operator` are those nodes' ids.
    pub fn new(faults: Vec<Fault>, tool: NodeId, operator: NodeId) -> Self {
        let n = faults.len();
        let mut anchors = Vec::new();
        for (i, f) in faults.iter().enumerate() {
            for (what, trigger) in [
                (WHAT_START, f.start()),
                (WHAT_END, f.end()),
                (WHAT_RELEASE, f.release()),
            ] {
                let (on_send, pattern, delay_ns) = match trigger {
                    Some(Trigger::Sent { pattern, delay_ns }) => (true, pattern, delay_ns),
                    Some(Trigger::Delivered { pattern, delay_ns }) => (false, pattern, delay_ns),
                    Some(Trigger::At { .. }) | None => continue,
                };
                anchors.push(Anchor {
                    fault: i,
                    what,
                    on_send,
                    pattern,
                    delay_ns,
                });
            }
        }
        PlanDirector {
            faults,
            anchors,
            phase: vec![Phase::Armed; n],
            matched: vec![[false; 3]; n],
            caught: vec![0; n],
            held: vec![Vec::new(); n],
            released: vec![false; n],
            ended_early: vec![false; n],
            anchored: BTreeMap::new(),
            anchored_node: BTreeMap::new(),
            tool,
            operator,
            healed: false,
        }
    }

    /// Alarms for the faults that start or end at a fixed time, and for the heal phase.
    pub fn initial_commands(&self, heal_at_ns: Option<u64>) -> Vec<Command> {
        let mut out = Vec::new();
        for (i, f) in self.faults.iter().enumerate() {
            let triggers = [
                (WHAT_START, f.start()),
                (WHAT_END, f.end()),
                (WHAT_RELEASE, f.release()),
            ];
            for (what, t) in triggers {
                if let Some(Trigger::At { t_ns }) = t {
                    out.push(Command::Alarm {
                        at: t_ns,
                        tag: i as u64 * 8 + what,
                    });
                }
            }
        }
        if let Some(at) = heal_at_ns {
            out.push(Command::Alarm { at, tag: TAG_HEAL });
        }
        out
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

    fn fire(&mut self, ctl: &mut Control, now: u64, nodes: u32, i: usize, what: u64) {
        if self.healed && what == WHAT_START {
            return;
        }
        let fault = self.faults[i];
        match what {
            WHAT_START => {
                if self.phase[i] != Phase::Armed {
                    return;
                }
                if self.ended_early[i] {
                    // Its end came first: the fault never takes effect.
                    self.phase[i] = Phase::Done;
                    return;
                }
                self.phase[i] = if fault.lasts() {
                    Phase::Active
                } else {
                    Phase::Done
                };
                match fault {
                    Fault::Partition { a, b, one_way, .. } => Self::cut(ctl, a, b, one_way, false),
                    Fault::Isolate { node, .. } => {
                        for other in (0..nodes).filter(|o| *o != node) {
                            Self::cut(ctl, node, other, false, false);
                        }
                    }
                    Fault::Pause {
                        node,
                        frozen,
                        duration_ns,
                        ..
                    } => {
                        ctl.push(Command::Pause { node, frozen });
                        ctl.push(Command::Alarm {
                            at: now + duration_ns,
                            tag: i as u64 * 8 + WHAT_RESUME,
                        });
                    }
                    Fault::Crash {
                        node,
                        restart_after_ns,
                        ..
                    } => {
                        ctl.push(Command::Crash { node });
                        if let Some(d) = restart_after_ns {
                            ctl.push(Command::Alarm {
                                at: now + d,
                                tag: i as u64 * 8 + WHAT_RESTART,
                            });
                        }
                    }
                    Fault::ClockStep {
                        node,
                        delta_ns,
                        wall,
                        ..
                    } => ctl.push(if wall {
                        Command::WallStep { node, delta_ns }
                    } else {
                        Command::ClockStep { node, delta_ns }
                    }),
                    Fault::Drift {
                        node, drift_ppm, ..
                    } => ctl.push(Command::SetDrift { node, drift_ppm }),
                    Fault::Operator { .. } => ctl.push(Command::Signal {
                        node: self.operator,
                        tag: i as u64,
                    }),
                    Fault::Slow { node, extra_ns, .. } => {
                        ctl.push(Command::SetSlow { node, extra_ns })
                    }
                    Fault::Message { .. } | Fault::Tool { .. } => {}
                }
            }
            WHAT_END => {
                if self.phase[i] == Phase::Armed {
                    self.ended_early[i] = true;
                    return;
                }
                if self.phase[i] != Phase::Active {
                    return;
                }
                match fault {
                    Fault::Partition { a, b, one_way, .. } => {
                        self.phase[i] = Phase::Done;
                        Self::cut(ctl, a, b, one_way, true);
                    }
                    Fault::Isolate { node, .. } => {
                        self.phase[i] = Phase::Done;
                        for other in (0..nodes).filter(|o| *o != node) {
                            Self::cut(ctl, node, other, false, true);
                        }
                    }
                    // Disarmed; a hold still owes its release.
                    Fault::Message { .. } if self.held[i].is_empty() || self.released[i] => {
                        self.phase[i] = Phase::Done;
                    }
                    Fault::Slow { node, .. } => {
                        self.phase[i] = Phase::Done;
                        ctl.push(Command::SetSlow { node, extra_ns: 0 });
                    }
                    _ => {}
                }
            }
            WHAT_RELEASE => {
                self.released[i] = true;
                for id in std::mem::take(&mut self.held[i]) {
                    ctl.push(Command::Release { id });
                }
                if self.phase[i] == Phase::Active && self.matched[i][1] {
                    self.phase[i] = Phase::Done;
                }
                if fault.end().is_none() && self.phase[i] == Phase::Active {
                    // A hold without an end trigger is done once released.
                    self.phase[i] = Phase::Done;
                }
            }
            WHAT_RESUME => {
                if let Fault::Pause { node, .. } = fault {
                    if self.phase[i] == Phase::Active {
                        self.phase[i] = Phase::Done;
                        ctl.push(Command::Resume { node });
                        self.anchored_node.remove(&node);
                        for id in self.anchored.remove(&i).unwrap_or_default() {
                            ctl.push(Command::Release { id });
                        }
                    }
                }
            }
            WHAT_RESTART => {
                if let Fault::Crash { node, .. } = fault {
                    if self.phase[i] == Phase::Active {
                        self.phase[i] = Phase::Done;
                        ctl.push(Command::Restart { node });
                    }
                }
            }
            _ => {}
        }
    }

    /// The heal phase (swarm): every fault stops, every node is back, every message released.
    fn heal(&mut self, ctl: &mut Control, now: u64, nodes: u32) {
        self.healed = true;
        for i in 0..self.faults.len() {
            match self.faults[i] {
                Fault::Pause { .. } => self.fire(ctl, now, nodes, i, WHAT_RESUME),
                Fault::Crash { node, .. } => {
                    if self.phase[i] == Phase::Active {
                        self.phase[i] = Phase::Done;
                        ctl.push(Command::Restart { node });
                    }
                }
                Fault::Drift {
                    node, drift_ppm, ..
                } => {
                    if self.phase[i] == Phase::Done && drift_ppm != 0 {
                        // Clocks back within their bound.
                        ctl.push(Command::SetDrift { node, drift_ppm: 0 });
                    }
                }
                Fault::Message { .. } => {
                    self.fire(ctl, now, nodes, i, WHAT_RELEASE);
                    self.phase[i] = Phase::Done;
                }
                _ => self.fire(ctl, now, nodes, i, WHAT_END),
            }
            if self.phase[i] == Phase::Armed {
                self.phase[i] = Phase::Done;
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

    /// Matches anchored triggers against one observation.
    fn observe(
        &mut self,
        ctl: &mut Control,
        now: u64,
        nodes: u32,
        sent: bool,
        env: &Envelope<Msg>,
    ) {
        for a in 0..self.anchors.len() {
            let Anchor {
                fault: i,
                what,
                on_send,
                pattern,
                delay_ns,
            } = self.anchors[a];
            let slot = what as usize;
            if self.matched[i][slot] || on_send != sent {
                continue;
            }
            // An end or a release only counts once the start trigger matched (the start itself
            // may still be waiting for its delay).
            if what != WHAT_START && self.phase[i] == Phase::Armed && !self.matched[i][0] {
                continue;
            }
            if !pattern.matches(env.from, env.to, &env.msg) {
                continue;
            }
            self.matched[i][slot] = true;
            let will_start = self.phase[i] == Phase::Armed && !self.healed;
            if what == WHAT_START && sent && delay_ns == 0 && will_start {
                if let Fault::Pause {
                    node,
                    hold_anchor: true,
                    ..
                } = self.faults[i]
                {
                    if node == env.from {
                        self.anchored.insert(i, vec![env.id]);
                        self.anchored_node.insert(node, (i, now));
                    }
                }
            }
            if delay_ns == 0 {
                self.fire(ctl, now, nodes, i, what);
            } else {
                ctl.push(Command::Alarm {
                    at: now + delay_ns,
                    tag: i as u64 * 8 + what,
                });
            }
        }
    }
}

impl Director<Node> for PlanDirector {
    fn on_send(&mut self, ctl: &mut Control, now: u64, env: &Envelope<Msg>, fate: Fate) -> Fate {
        let nodes = self.operator + 1;
        self.observe(ctl, now, nodes, true, env);
        if self.anchored.values().any(|ids| ids.contains(&env.id)) {
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
        for i in 0..self.faults.len() {
            if self.phase[i] != Phase::Active {
                continue;
            }
            match self.faults[i] {
                Fault::Message {
                    pattern,
                    count,
                    action,
                    ..
                } if pattern.matches(env.from, env.to, &env.msg) => {
                    if count != 0 && self.caught[i] >= count {
                        continue;
                    }
                    if let MsgAction::Hold { .. } = action {
                        if self.released[i] {
                            continue;
                        }
                    }
                    self.caught[i] += 1;
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
                            self.held[i].push(env.id);
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

    fn on_deliver(&mut self, ctl: &mut Control, now: u64, env: &Envelope<Msg>) {
        let nodes = self.operator + 1;
        self.observe(ctl, now, nodes, false, env);
    }

    fn on_note(&mut self, _ctl: &mut Control, _now: u64, _node: NodeId, _note: &Event) {}

    fn on_alarm(&mut self, ctl: &mut Control, now: u64, tag: u64) {
        let nodes = self.operator + 1;
        if tag == TAG_HEAL {
            self.heal(ctl, now, nodes);
        } else {
            self.fire(ctl, now, nodes, (tag / 8) as usize, tag % 8);
        }
    }

    fn is_done(&self, nodes: &[Node]) -> bool {
        // A fault whose anchor never occurred is not waited for; one that started and will end
        // by itself (a healing cut, a pause, a restart, a held message) is, so that it cannot
        // hide the end of the story.
        let pending = |i: usize| match self.faults[i] {
            Fault::Partition { end, .. } | Fault::Isolate { end, .. } => end.is_some(),
            Fault::Pause { .. } => true,
            Fault::Crash {
                restart_after_ns, ..
            } => restart_after_ns.is_some(),
            Fault::Message { .. } => !self.held[i].is_empty(),
            _ => false,
        };
        let settled = (0..self.faults.len()).all(|i| self.phase[i] != Phase::Active || !pending(i));
        settled
            && self.anchored.is_empty()
            && nodes.iter().any(Node::is_finished_coordinator)
            && !nodes.iter().any(Node::is_busy_worker)
    }
}
