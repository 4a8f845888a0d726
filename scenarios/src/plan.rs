//! Fault plans: explicit faults, each applied at a true time or anchored to a protocol event
//! ("cut W1 from the coordinator when it starts the tool call"), and the director that carries
//! them out inside the simulator.

use crate::world::Node;
use leasesim_protocol::{Event, Msg, MsgKind, OpId, Token};
use leasesim_sim::{Command, Control, Director, Envelope, Fate, NodeId};
use serde::{Deserialize, Serialize};

/// Which messages a trigger or a hold matches. Unset fields match anything.
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

/// One explicit fault.
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
        /// When it heals (never, if `None`).
        end: Option<Trigger>,
    },
    /// F3: hold the first message matching `pattern` (after `start`) until `release`.
    Hold {
        /// The message to hold.
        pattern: MsgPattern,
        /// When holding is armed.
        start: Trigger,
        /// When the held message is released: it then flies like a fresh message.
        release: Trigger,
    },
}

impl Fault {
    fn start(&self) -> Trigger {
        match *self {
            Fault::Partition { start, .. } | Fault::Hold { start, .. } => start,
        }
    }
    fn end(&self) -> Option<Trigger> {
        match *self {
            Fault::Partition { end, .. } => end,
            Fault::Hold { release, .. } => Some(release),
        }
    }
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Phase {
    /// Waiting for the start trigger.
    Armed,
    /// Started; waiting for the end trigger.
    Active,
    /// A hold caught its message and waits for the release.
    Holding(u64),
    /// Finished.
    Done,
}

/// Carries out a fault plan and stops the run once every job is terminal, no worker holds a
/// job, and no fault is still pending an end.
pub struct PlanDirector {
    faults: Vec<Fault>,
    phase: Vec<Phase>,
    /// Whether the start (index 0) or end (1) trigger already matched.
    matched: Vec<[bool; 2]>,
    /// A hold's release that came before the hold caught its message.
    early_release: Vec<bool>,
}

const ALARM_START: u64 = 0;
const ALARM_END: u64 = 1;

impl PlanDirector {
    /// A director for `faults`. Call [`PlanDirector::initial_commands`] before the run.
    pub fn new(faults: Vec<Fault>) -> Self {
        let n = faults.len();
        PlanDirector {
            faults,
            phase: vec![Phase::Armed; n],
            matched: vec![[false; 2]; n],
            early_release: vec![false; n],
        }
    }

    /// Alarms for the faults that start or end at a fixed time.
    pub fn initial_commands(&self) -> Vec<Command> {
        let mut out = Vec::new();
        for (i, f) in self.faults.iter().enumerate() {
            if let Trigger::At { t_ns } = f.start() {
                out.push(Command::Alarm {
                    at: t_ns,
                    tag: i as u64 * 2 + ALARM_START,
                });
            }
            if let Some(Trigger::At { t_ns }) = f.end() {
                out.push(Command::Alarm {
                    at: t_ns,
                    tag: i as u64 * 2 + ALARM_END,
                });
            }
        }
        out
    }

    fn fire(&mut self, ctl: &mut Control, i: usize, which: u64) {
        let fault = self.faults[i];
        if which == ALARM_START {
            if self.phase[i] != Phase::Armed {
                return;
            }
            self.phase[i] = Phase::Active;
            if let Fault::Partition { a, b, one_way, .. } = fault {
                ctl.push(Command::Cut { from: a, to: b });
                if !one_way {
                    ctl.push(Command::Cut { from: b, to: a });
                }
            }
            return;
        }
        match (fault, self.phase[i]) {
            (Fault::Partition { a, b, one_way, .. }, Phase::Active) => {
                self.phase[i] = Phase::Done;
                ctl.push(Command::Heal { from: a, to: b });
                if !one_way {
                    ctl.push(Command::Heal { from: b, to: a });
                }
            }
            (Fault::Hold { .. }, Phase::Holding(id)) => {
                self.phase[i] = Phase::Done;
                ctl.push(Command::Release { id });
            }
            (Fault::Hold { .. }, Phase::Active | Phase::Armed) => {
                self.early_release[i] = true;
            }
            _ => {}
        }
    }

    /// Matches anchored triggers against one observation.
    fn observe(&mut self, ctl: &mut Control, now: u64, sent: bool, env: &Envelope<Msg>) {
        for i in 0..self.faults.len() {
            let fault = self.faults[i];
            let triggers = [Some(fault.start()), fault.end()];
            for (which, trigger) in triggers.into_iter().enumerate() {
                let Some(trigger) = trigger else { continue };
                if self.matched[i][which] {
                    continue;
                }
                // An end trigger only counts once the fault has started.
                if which == 1 && self.phase[i] == Phase::Armed {
                    continue;
                }
                let (pattern, delay_ns, on_send) = match trigger {
                    Trigger::At { .. } => continue,
                    Trigger::Sent { pattern, delay_ns } => (pattern, delay_ns, true),
                    Trigger::Delivered { pattern, delay_ns } => (pattern, delay_ns, false),
                };
                if on_send != sent || !pattern.matches(env.from, env.to, &env.msg) {
                    continue;
                }
                self.matched[i][which] = true;
                let tag = i as u64 * 2 + which as u64;
                if delay_ns == 0 {
                    self.fire(ctl, i, which as u64);
                } else {
                    ctl.push(Command::Alarm {
                        at: now + delay_ns,
                        tag,
                    });
                }
            }
        }
    }
}

impl Director<Node> for PlanDirector {
    fn on_send(&mut self, ctl: &mut Control, now: u64, env: &Envelope<Msg>, fate: Fate) -> Fate {
        self.observe(ctl, now, true, env);
        let mut fate = fate;
        for i in 0..self.faults.len() {
            if let Fault::Hold { pattern, .. } = self.faults[i] {
                if self.phase[i] == Phase::Active && pattern.matches(env.from, env.to, &env.msg) {
                    if matches!(fate, Fate::Drop { .. }) {
                        continue;
                    }
                    if self.early_release[i] {
                        self.phase[i] = Phase::Done;
                        continue;
                    }
                    self.phase[i] = Phase::Holding(env.id);
                    fate = Fate::Hold;
                }
            }
        }
        fate
    }

    fn on_deliver(&mut self, ctl: &mut Control, now: u64, env: &Envelope<Msg>) {
        self.observe(ctl, now, false, env);
    }

    fn on_note(&mut self, _ctl: &mut Control, _now: u64, _node: NodeId, _note: &Event) {}

    fn on_alarm(&mut self, ctl: &mut Control, _now: u64, tag: u64) {
        self.fire(ctl, (tag / 2) as usize, tag % 2);
    }

    fn is_done(&self, nodes: &[Node]) -> bool {
        // Every fault that will end must have ended, so that a held message or a partition
        // cannot hide the end of the story.
        // A fault whose anchor never occurred is not waited for.
        let faults_settled = self.faults.iter().zip(&self.phase).all(|(f, p)| match p {
            Phase::Armed | Phase::Done => true,
            Phase::Active => f.end().is_none(),
            Phase::Holding(_) => false,
        });
        faults_settled
            && nodes.iter().any(Node::is_finished_coordinator)
            && !nodes.iter().any(Node::is_busy_worker)
    }
}
