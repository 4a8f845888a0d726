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
    /// Whether the message matches. The kind is compared first: it is the field most patterns
    /// state and most messages fail on, and the other fields are read only when stated.
    #[inline]
    pub fn matches(&self, from: NodeId, to: NodeId, msg: &Msg) -> bool {
        if self.kind.is_some_and(|k| k != msg.kind())
            || self.from.is_some_and(|f| f != from)
            || self.to.is_some_and(|t| t != to)
        {
            return false;
        }
        if let Some(t) = self.token {
            if msg.token() != Some(t) {
                return false;
            }
        }
        if let Some(o) = self.op {
            let op = match msg {
                Msg::Effect { key, .. } | Msg::EffectAck { key, .. } => Some(key.op),
                _ => None,
            };
            if op != Some(o) {
                return false;
            }
        }
        if let Some(s) = self.step {
            let step = match msg {
                Msg::ToolRequest { step, .. } | Msg::ToolResponse { step, .. } => Some(*step),
                _ => None,
            };
            if step != Some(s) {
                return false;
            }
        }
        true
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

/// One explicit fault of the catalogue: what goes wrong (its [`FaultKind`]) and when.
///
/// The timing every kind shares lives here once: the trigger that starts the fault and the one
/// that ends it. Timing that truly differs stays in the kind: a pause and a crash last for a
/// duration counted from the moment they began, whatever began them (the director times the
/// resume and the restart itself, and the shrinker halves the duration), and a hold names the
/// trigger that releases what it holds. So `end` is stated only by the kinds that last until
/// something ends them ([`FaultKind::ends_by_trigger`]: a partition, an isolation, slowness, an
/// armed message fault; `None` leaves them to the heal phase); every other kind has `end: None`.
/// A tool fault has no start either: the tool applies it to the calls it matches from the run's
/// beginning until the heal phase. `Setup::check` refuses any other combination, so a plan
/// cannot state a trigger nothing would act on.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Fault {
    /// When it starts; `None` for a tool fault, and only for one.
    pub start: Option<Trigger>,
    /// When a lasting fault ends (at the heal phase, if `None`); `None` for every other kind.
    pub end: Option<Trigger>,
    /// What goes wrong.
    pub kind: FaultKind,
}

/// What a fault does.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum FaultKind {
    /// F1: cut the link `a -> b` (and `b -> a` unless one-way) from the start until the end.
    Partition {
        /// One side.
        a: NodeId,
        /// Other side.
        b: NodeId,
        /// Only `a -> b` is cut.
        one_way: bool,
    },
    /// F1 full partition / F6 outage: cut every link of `node`, both ways.
    Isolate {
        /// The node (the coordinator for an outage).
        node: NodeId,
    },
    /// F2: the node runs nothing for `duration_ns`. `frozen`: its clock stops too (a VM stop);
    /// otherwise it runs on (a GC pause). `hold_anchor`: when the start is a send, that very
    /// message leaves only when the pause ends ("paused right after it checked its lease").
    Pause {
        /// The node.
        node: NodeId,
        /// Whether the clock stops.
        frozen: bool,
        /// How long it lasts (true time), from the moment it began.
        duration_ns: u64,
        /// Whether the anchoring message waits for the resume.
        hold_anchor: bool,
    },
    /// F3: drop, delay, duplicate or hold messages matching `pattern` while armed (from the
    /// start until the end), at most `count` of them (0: every one).
    Message {
        /// The messages.
        pattern: MsgPattern,
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
    },
    /// F4: change a clock's rate.
    Drift {
        /// The node.
        node: NodeId,
        /// New rate error.
        drift_ppm: i32,
    },
    /// F5: crash the node (volatile state lost), restart it `restart_after_ns` after the crash
    /// (at the heal phase, if `None`). A worker restarts under the same logical name.
    Crash {
        /// The node.
        node: NodeId,
        /// Down time.
        restart_after_ns: Option<u64>,
    },
    /// F6: every message to or from `node` takes `extra_ns` longer while active.
    Slow {
        /// The node (usually the coordinator).
        node: NodeId,
        /// Extra flight time.
        extra_ns: u64,
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

/// `t` with its nodes mapped: `Some(None)` for no trigger, `None` when a node maps to nothing.
fn map_trigger(
    t: Option<Trigger>,
    map: &mut impl FnMut(NodeId) -> Option<NodeId>,
) -> Option<Option<Trigger>> {
    match t {
        None => Some(None),
        Some(t) => t.map_nodes(map).map(Some),
    }
}

impl Fault {
    /// A fault of `kind` from `start` on; one that lasts ends at the heal phase unless given an
    /// end with [`Fault::until`].
    pub fn new(start: Trigger, kind: FaultKind) -> Fault {
        Fault {
            start: Some(start),
            end: None,
            kind,
        }
    }

    /// A fault without triggers: a tool fault, which the tool applies from the run's beginning
    /// until the heal phase.
    pub fn untriggered(kind: FaultKind) -> Fault {
        Fault {
            start: None,
            end: None,
            kind,
        }
    }

    /// The same fault, ending at `end`.
    pub fn until(self, end: Trigger) -> Fault {
        Fault {
            end: Some(end),
            ..self
        }
    }

    /// The same timing, with another kind.
    pub fn with_kind(self, kind: FaultKind) -> Fault {
        Fault { kind, ..self }
    }

    /// The trigger that releases what a hold holds, if the fault is a hold.
    pub fn release(&self) -> Option<Trigger> {
        match self.kind {
            FaultKind::Message {
                action: MsgAction::Hold { release },
                ..
            } => Some(release),
            _ => None,
        }
    }

    /// Every message pattern the fault names: the messages it acts on, then its triggers'.
    pub fn patterns(&self) -> Vec<MsgPattern> {
        let acts_on = match self.kind {
            FaultKind::Message { pattern, .. } => Some(pattern),
            _ => None,
        };
        let triggers = [self.start, self.end, self.release()].into_iter().flatten();
        acts_on
            .into_iter()
            .chain(triggers.filter_map(|t| t.pattern()))
            .collect()
    }

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
        let mut kind = self.kind.map_nodes(m)?;
        let start = map_trigger(self.start, m)?;
        let end = map_trigger(self.end, m)?;
        if let FaultKind::Message {
            action: MsgAction::Hold { release },
            ..
        } = &mut kind
        {
            *release = release.map_nodes(m)?;
        }
        Some(Fault { start, end, kind })
    }
}

impl FaultKind {
    /// The nodes the fault acts on, in the order it names them (not those its triggers name).
    pub fn acts_on(&self) -> Vec<NodeId> {
        let mut nodes = Vec::new();
        let _ = self.map_nodes(&mut |n| {
            if !nodes.contains(&n) {
                nodes.push(n);
            }
            Some(n)
        });
        nodes
    }

    /// Whether the fault lasts once started, until something ends it (and so must end by the
    /// heal phase): an instant fault (a clock step, a drift change, an operator action) is done
    /// as it starts.
    pub fn lasts(&self) -> bool {
        matches!(
            self,
            FaultKind::Partition { .. }
                | FaultKind::Isolate { .. }
                | FaultKind::Pause { .. }
                | FaultKind::Message { .. }
                | FaultKind::Crash { .. }
                | FaultKind::Slow { .. }
        )
    }

    /// Whether a trigger may end it. A pause and a crash end by their own duration.
    pub fn ends_by_trigger(&self) -> bool {
        matches!(
            self,
            FaultKind::Partition { .. }
                | FaultKind::Isolate { .. }
                | FaultKind::Message { .. }
                | FaultKind::Slow { .. }
        )
    }

    /// The same kind with the nodes it names directly (and a message fault's pattern) mapped;
    /// `None` when one maps to nothing. A hold's release is a trigger: [`Fault::map_nodes`]
    /// maps it.
    fn map_nodes(self, m: &mut impl FnMut(NodeId) -> Option<NodeId>) -> Option<FaultKind> {
        let mut kind = self;
        match &mut kind {
            FaultKind::Partition { a, b, .. } => {
                *a = m(*a)?;
                *b = m(*b)?;
            }
            FaultKind::Isolate { node }
            | FaultKind::Pause { node, .. }
            | FaultKind::ClockStep { node, .. }
            | FaultKind::Drift { node, .. }
            | FaultKind::Crash { node, .. }
            | FaultKind::Slow { node, .. } => *node = m(*node)?,
            FaultKind::Message { pattern, .. } => *pattern = pattern.map_nodes(m)?,
            FaultKind::Tool { worker, .. } => {
                if let Some(w) = worker {
                    *w = m(*w)?;
                }
            }
            FaultKind::Operator { .. } => {}
        }
        Some(kind)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenarios;

    /// Cut `a -> b` from `a`'s next send until `b` gets an answer from `tool`.
    fn cut(a: NodeId, b: NodeId, tool: NodeId) -> Fault {
        let answer = MsgPattern {
            from: Some(tool),
            to: Some(b),
            ..MsgPattern::default()
        };
        let sends = MsgPattern {
            from: Some(a),
            ..MsgPattern::default()
        };
        let partition = FaultKind::Partition {
            a,
            b,
            one_way: true,
        };
        Fault::new(Trigger::sent(sends), partition).until(Trigger::delivered(answer))
    }

    #[test]
    fn map_nodes_maps_the_kind_and_every_trigger() {
        let mut seen = Vec::new();
        cut(1, 0, 4).for_each_node(|n| seen.push(n));
        // The kind's nodes, then the start's pattern, then the end's.
        assert_eq!(seen, [1, 0, 1, 4, 0]);
        let renumbered = cut(2, 0, 4).map_nodes(|n| Some(n.saturating_sub(1)));
        assert_eq!(renumbered, Some(cut(1, 0, 3)));
        assert_eq!(cut(2, 0, 4).map_nodes(|n| (n != 4).then_some(n)), None);
    }

    #[test]
    fn a_hold_names_its_release_pattern_and_maps_its_nodes() {
        let release = Trigger::sent(MsgPattern {
            from: Some(3),
            ..MsgPattern::default()
        });
        let hold = Fault::new(
            Trigger::at(0),
            FaultKind::Message {
                pattern: MsgPattern {
                    to: Some(1),
                    ..MsgPattern::default()
                },
                count: 1,
                action: MsgAction::Hold { release },
            },
        );
        assert_eq!(hold.release(), Some(release));
        assert_eq!(hold.patterns().len(), 2);
        assert_eq!(hold.map_nodes(|n| (n != 3).then_some(n)), None);
    }

    #[test]
    fn a_trigger_the_kind_has_no_use_for_is_refused() {
        let base = scenarios::find("w1-w2")
            .unwrap()
            .build(1, leasesim_protocol::Variant::Reference);
        let check = |f: Fault| {
            let mut s = base.clone();
            s.faults.push(f);
            s.check()
        };
        let tool = FaultKind::Tool {
            worker: None,
            step: None,
            nth: 0,
            kind: ToolFaultKind::Hang,
            late_ns: 0,
        };
        let pause = FaultKind::Pause {
            node: 1,
            frozen: false,
            duration_ns: 1,
            hold_anchor: false,
        };
        assert_eq!(check(Fault::untriggered(tool)), Ok(()));
        assert_eq!(check(Fault::new(Trigger::at(5), pause)), Ok(()));
        let refused = [
            Fault::new(Trigger::at(5), tool),
            Fault::untriggered(pause),
            Fault::new(Trigger::at(5), pause).until(Trigger::at(9)),
        ];
        for f in refused {
            assert!(check(f).is_err(), "{f:?}");
        }
    }
}
