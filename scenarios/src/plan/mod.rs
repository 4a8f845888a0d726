//! The fault catalogue (SPEC F1-F8) as one closed set of explicit faults, each applied at a true
//! time or anchored to a protocol event ("cut W1 from the coordinator when it starts the tool
//! call", "pause W1 right after it checked its lease"), and the director that carries a plan out
//! inside the simulator ([`PlanDirector`]), including the heal phase that ends every fault.

use leasesim_protocol::{JobId, Msg, MsgKind, OpId, OperatorAction, Token, ToolFaultKind};
use leasesim_sim::NodeId;

mod director;
pub use director::PlanDirector;

/// Which messages a trigger or a message fault matches. Unset fields match anything.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct MsgPattern {
    /// Sender.
    pub from: Option<NodeId>,
    /// Receiver.
    pub to: Option<NodeId>,
    /// Kind of message.
    pub kind: Option<MsgKind>,
    /// Token or fence carried.
    pub token: Option<Token>,
    /// Operation of an effect.
    pub op: Option<OpId>,
    /// Plan step of a tool request or response.
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
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
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
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
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
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
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
