//! The adapter from protocol machines to simulator nodes. Each node drains its machine's outputs
//! into the simulator (sends, journal notes) and asks to be woken at the machine's next timeout.
//!
//! The machines are reached through small traits, so the reference, each known-bad variant, and
//! a user's own implementation plug in the same way; nothing here judges a run. A node holds
//! leasesim's own machines by their type (`machines::Part`), so that its calls to them are
//! direct; the adapter's code is the same for both kinds.

use crate::machines::{
    on_part, CoordinatorPart, CoordinatorSpec, Machines, ReceiverPart, ReceiverSpec, Shelves,
    WorkerPart, WorkerSpec,
};
use crate::setup::ClockSpec;
pub use leasesim_protocol::machine::{CoordinatorMachine, ReceiverMachine, WorkerMachine};
use leasesim_protocol::{
    Event, JobId, Msg, OperatorAction, Output, Peer, Tool, ToolAnswer, ToolCall, ToolFaultKind,
};
use leasesim_sim::{Clock, Cx, NodeId, Prng, Process, Stream};

pub use crate::setup::{ToolFaultRule, ToolSetup, ToolStep};

/// The tool node: the machine, its behaviour, its stream of durations and its faults.
pub struct ToolNode {
    /// The machine.
    pub tool: Tool,
    /// Durations and answers.
    pub setup: ToolSetup,
    /// The tool's random stream.
    pub rng: Prng,
    /// F7 faults.
    pub faults: Vec<ToolFaultRule>,
    /// Matching calls seen per fault.
    pub seen: Vec<u32>,
    /// After the heal phase the tool behaves.
    pub healed: bool,
}

impl ToolNode {
    fn call(&mut self, from: NodeId, step: u8) -> ToolCall {
        let mut call = match self.setup.steps.iter().find(|s| s.step == step) {
            Some(s) => ToolCall {
                duration_ns: self.rng.range(s.min_ns, s.max_ns),
                answer: s.answer,
                fault: None,
            },
            None => ToolCall {
                duration_ns: self
                    .rng
                    .range(self.setup.default_min_ns, self.setup.default_max_ns),
                answer: ToolAnswer::Success {
                    result: self.rng.next_u64(),
                },
                fault: None,
            },
        };
        if self.healed {
            return call;
        }
        // Every matching rule counts the call; the first whose turn it is applies.
        let mut firing = None;
        for (i, rule) in self.faults.iter().enumerate() {
            if rule.worker.is_some_and(|w| w != from) || rule.step.is_some_and(|s| s != step) {
                continue;
            }
            self.seen[i] += 1;
            if firing.is_none() && (rule.nth == 0 || self.seen[i] == rule.nth) {
                firing = Some(*rule);
            }
        }
        if let Some(rule) = firing {
            call.fault = Some(rule.kind);
            match rule.kind {
                ToolFaultKind::Late => call.duration_ns += rule.late_ns,
                ToolFaultKind::Transient => call.answer = ToolAnswer::Failure { transient: true },
                ToolFaultKind::Permanent => call.answer = ToolAnswer::Failure { transient: false },
                ToolFaultKind::Hang | ToolFaultKind::AnswerLost => {}
            }
        }
        call
    }
}

/// What a thread's last run left for its next one to build its nodes in: the tool node, the
/// workers' lists of receivers, and leasesim's own machines (the workspace holds it; the next
/// run's [`Setup::build_nodes`] renews them instead of building new ones).
#[derive(Default)]
pub(crate) struct Kept {
    /// The tool node, renewed by [`tool_node`].
    tool: Option<Box<ToolNode>>,
    /// The workers' lists of receivers, filled by [`receivers_list`].
    receivers: Vec<Vec<NodeId>>,
    /// leasesim's own machines.
    pub(crate) machines: Shelves,
}

/// Most lists of receivers a thread keeps (one per worker of a run).
const KEPT_RECEIVERS_MAX: usize = 64;

/// A list of the receivers `receivers` names, in the storage of one `kept` holds when it holds
/// one: the same list as one collected anew.
fn receivers_list(kept: &mut Kept, receivers: impl Iterator<Item = NodeId>) -> Vec<NodeId> {
    let mut list = kept.receivers.pop().unwrap_or_default();
    list.clear();
    list.extend(receivers);
    list
}

/// Most elements a kept vector keeps room for: a tool node's steps or fault rules, a worker's
/// list of receivers.
const KEPT_ROOM_MAX: usize = 256;

/// The tool node for a run: the one `kept` holds, renewed, or a new one. A renewed node is the
/// same as a new one (a test holds it to that).
fn tool_node(
    kept: &mut Kept,
    setup: &ToolSetup,
    rng: Prng,
    faults: impl Iterator<Item = ToolFaultRule>,
) -> Box<ToolNode> {
    let Some(mut node) = kept.tool.take() else {
        let faults: Vec<ToolFaultRule> = faults.collect();
        return Box::new(ToolNode {
            tool: Tool::new(),
            setup: setup.clone(),
            rng,
            seen: vec![0; faults.len()],
            faults,
            healed: false,
        });
    };
    // Every field, so that a field added later cannot be left stale.
    let ToolNode {
        tool,
        setup: kept_setup,
        rng: kept_rng,
        faults: kept_faults,
        seen,
        healed,
    } = &mut *node;
    tool.reset();
    let ToolSetup {
        steps,
        default_min_ns,
        default_max_ns,
    } = kept_setup;
    steps.clone_from(&setup.steps);
    *default_min_ns = setup.default_min_ns;
    *default_max_ns = setup.default_max_ns;
    *kept_rng = rng;
    kept_faults.clear();
    kept_faults.extend(faults);
    seen.clear();
    seen.resize(kept_faults.len(), 0);
    *healed = false;
    node
}

/// Keeps in `kept`, for the next run, a finished run's leasesim machines (a few per role), its
/// tool node (one at most, and only with room for at most a few hundred steps and rules), and
/// the workers' lists of receivers (a few dozen at most, each with room for a few hundred); the
/// rest of `nodes` is dropped.
pub(crate) fn keep_nodes(kept: &mut Kept, nodes: Vec<Node>) {
    for node in nodes {
        match node {
            Node::Coordinator(part) => kept.machines.keep_coordinator(part),
            Node::Worker(worker, addrs) => {
                kept.machines.keep_worker(worker);
                let list = addrs.receivers;
                if list.capacity() != 0
                    && list.capacity() <= KEPT_ROOM_MAX
                    && kept.receivers.len() < KEPT_RECEIVERS_MAX
                {
                    kept.receivers.push(list);
                }
            }
            Node::Receiver(part) => kept.machines.keep_receiver(part),
            Node::Tool(tool) => {
                let small = tool.setup.steps.capacity() <= KEPT_ROOM_MAX
                    && tool.faults.capacity() <= KEPT_ROOM_MAX
                    && tool.seen.capacity() <= KEPT_ROOM_MAX;
                if small && kept.tool.is_none() {
                    kept.tool = Some(tool);
                }
            }
            Node::Operator(..) => {}
        }
    }
}

/// The signal the plan's heal phase sends the tool: from then on it behaves (F7 faults end).
pub const SIGNAL_HEAL: u64 = u64::MAX;

/// Where the roles live in the simulation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Addrs {
    /// The coordinator.
    pub coordinator: NodeId,
    /// The tool.
    pub tool: NodeId,
    /// The receivers, by index.
    pub receivers: Vec<NodeId>,
}

impl Addrs {
    /// The node a peer names, if it exists.
    fn resolve(&self, to: Peer) -> Result<NodeId, String> {
        match to {
            Peer::Coordinator => Ok(self.coordinator),
            Peer::Tool => Ok(self.tool),
            Peer::Receiver(i) => self.receivers.get(i as usize).copied().ok_or_else(|| {
                format!(
                    "addressed receiver {i}, which does not exist (there are {})",
                    self.receivers.len()
                )
            }),
            Peer::Addr(a) => Ok(a),
        }
    }
}

/// A simulator node: one protocol machine and the addresses it talks to. A machine's part
/// gives it through its role's trait (`get`, `get_mut`); a node built by hand makes its part
/// from a boxed machine (`WorkerPart::from(Box<dyn WorkerMachine>)`, and so on).
pub enum Node {
    /// The coordinator.
    Coordinator(CoordinatorPart),
    /// A worker.
    Worker(WorkerPart, Addrs),
    /// An effect receiver.
    Receiver(ReceiverPart),
    /// The tool.
    Tool(Box<ToolNode>),
    /// The operator: the actions of the plan's `Fault::Operator`, by fault index.
    Operator(Vec<Option<(JobId, OperatorAction)>>, NodeId),
}

impl Node {
    /// Whether this node is a worker that holds a job.
    pub fn is_busy_worker(&self) -> bool {
        matches!(self, Node::Worker(w, _) if w.get().is_busy())
    }

    /// The tool call this node waits for, if it is a worker that waits for one.
    pub fn tool_in_flight(&self) -> Option<u64> {
        match self {
            Node::Worker(w, _) => w.get().tool_in_flight(),
            _ => None,
        }
    }

    /// Whether this node is a coordinator with every job terminal.
    pub fn is_finished_coordinator(&self) -> bool {
        matches!(self, Node::Coordinator(c) if on_part!(&c.0, c => c.all_terminal()))
    }
}

type NodeCx<'a> = Cx<'a, Msg, Event>;

/// Outputs a machine may produce for one input. A machine that goes on past it (it never
/// drains) breaks a rule of its host: the run ends with a process fault naming it.
pub const OUTPUTS_PER_INPUT_MAX: usize = 4096;

/// Moves a machine's outputs into the simulator. A server (coordinator, receiver, tool)
/// answers by host address only; a worker also names the coordinator, the tool and receivers.
/// A peer that does not exist, or output without end, ends the run as a process fault.
fn drain(cx: &mut NodeCx<'_>, addrs: Option<&Addrs>, mut next: impl FnMut() -> Option<Output>) {
    for _ in 0..OUTPUTS_PER_INPUT_MAX {
        match next() {
            None => return,
            Some(Output::Journal(e)) => cx.note(e),
            Some(Output::Send { to, msg }) => {
                let node = match (addrs, to) {
                    (Some(a), to) => a.resolve(to),
                    (None, Peer::Addr(a)) => Ok(a),
                    (None, other) => Err(format!(
                        "addressed {other:?}; a server answers the host address a request came from (Peer::Addr)"
                    )),
                };
                match node {
                    Ok(node) => cx.send(node, msg),
                    Err(reason) => return cx.fault(reason),
                }
            }
        }
    }
    if next().is_some() {
        cx.fault(format!(
            "produced more than {OUTPUTS_PER_INPUT_MAX} outputs for one input (poll_output never returned None)"
        ));
    }
}

impl Process for Node {
    type Msg = Msg;
    type Note = Event;

    fn start(&mut self, cx: &mut NodeCx<'_>) {
        if let Node::Worker(w, addrs) = self {
            on_part!(&mut w.0, w => {
                w.observe_wall(cx.wall());
                w.start(cx.now());
                drain(cx, Some(addrs), || w.poll_output());
                cx.set_wake(w.poll_timeout());
            })
        }
    }

    fn message(&mut self, cx: &mut NodeCx<'_>, from: NodeId, msg: Msg) {
        let now = cx.now();
        match self {
            Node::Coordinator(c) => on_part!(&mut c.0, c => {
                c.handle_message(now, from, msg);
                drain(cx, None, || c.poll_output());
                cx.set_wake(c.poll_timeout());
            }),
            Node::Worker(w, addrs) => on_part!(&mut w.0, w => {
                w.observe_wall(cx.wall());
                w.handle_message(now, msg);
                drain(cx, Some(addrs), || w.poll_output());
                cx.set_wake(w.poll_timeout());
            }),
            Node::Receiver(r) => on_part!(&mut r.0, r => {
                r.handle_message(now, from, msg);
                drain(cx, None, || r.poll_output());
            }),
            Node::Tool(tool) => {
                if let Msg::ToolStatus { .. } = msg {
                    tool.tool.handle_status(from, msg);
                    drain(cx, None, || tool.tool.poll_output());
                    return;
                }
                let step = match msg {
                    Msg::ToolRequest { step, .. } => step,
                    _ => return,
                };
                let call = tool.call(from, step);
                tool.tool.handle_request(now, from, msg, call);
                drain(cx, None, || tool.tool.poll_output());
                cx.set_wake(tool.tool.poll_timeout());
            }
            // The operator acts on its own; answers are only recorded in the trace.
            Node::Operator(..) => {}
        }
    }

    fn wake(&mut self, cx: &mut NodeCx<'_>) {
        let now = cx.now();
        match self {
            Node::Worker(w, addrs) => on_part!(&mut w.0, w => {
                w.observe_wall(cx.wall());
                w.handle_timeout(now);
                drain(cx, Some(addrs), || w.poll_output());
                cx.set_wake(w.poll_timeout());
            }),
            Node::Tool(tool) => {
                tool.tool.handle_timeout(now);
                drain(cx, None, || tool.tool.poll_output());
                cx.set_wake(tool.tool.poll_timeout());
            }
            Node::Coordinator(c) => on_part!(&mut c.0, c => {
                c.handle_timeout(now);
                drain(cx, None, || c.poll_output());
                cx.set_wake(c.poll_timeout());
            }),
            Node::Receiver(_) | Node::Operator(..) => {}
        }
    }

    fn crash(&mut self) {
        match self {
            Node::Worker(w, _) => on_part!(&mut w.0, w => w.crash()),
            // The coordinator's table and a receiver's store are durable; the tool is the
            // outside world. Their crashes are modelled as outages (no messages in or out).
            Node::Coordinator(_) | Node::Receiver(_) | Node::Tool(..) | Node::Operator(..) => {}
        }
    }

    fn signal(&mut self, cx: &mut NodeCx<'_>, tag: u64) {
        match self {
            Node::Tool(tool) if tag == SIGNAL_HEAL => tool.healed = true,
            Node::Operator(actions, coordinator) => {
                let Some(Some((job, action))) = actions.get(tag as usize).copied() else {
                    return;
                };
                cx.note(Event::OperatorActed { job, action });
                cx.send(
                    *coordinator,
                    Msg::Operator {
                        req: tag,
                        job,
                        action,
                    },
                );
            }
            _ => {}
        }
    }
}

/// A setup's simulator nodes: the adapter builds them, so that the setup stays data.
impl crate::setup::Setup {
    /// Builds the simulator's nodes with their clocks, each role's machine from `machines`.
    pub fn build_nodes(&self, seed: u64, machines: &Machines) -> Vec<(Node, Clock)> {
        self.build_nodes_in(seed, machines, &mut Kept::default())
    }

    /// [`Setup::build_nodes`], renewing what `kept` holds from a thread's last run instead of
    /// building new machines, tool node and lists (the same nodes: tests hold them to that).
    pub(crate) fn build_nodes_in(
        &self,
        seed: u64,
        machines: &Machines,
        kept: &mut Kept,
    ) -> Vec<(Node, Clock)> {
        let addrs = Addrs {
            coordinator: Self::COORDINATOR,
            tool: self.tool_node(),
            receivers: receivers_list(
                kept,
                (0..self.receivers.len()).map(|i| self.receiver_node(i)),
            ),
        };
        // The coordinator, the workers, the receivers, the tool and the operator.
        let mut nodes: Vec<(Node, Clock)> =
            Vec::with_capacity(self.workers.len() + self.receivers.len() + 3);
        let spec = CoordinatorSpec {
            classes: &self.classes,
            jobs: &self.jobs,
            // Its own stream, apart from the simulator's: a coordinator that draws (a
            // SQL coordinator's gaps between statements) changes nothing else of the run.
            seed: leasesim_sim::stable_hash(&("coordinator", seed)),
            kept: kept.machines.coordinator(),
        };
        let coordinator = machines.coordinator_part(&spec);
        kept.machines.unused_coordinator(spec.kept);
        nodes.push((
            Node::Coordinator(coordinator),
            self.coordinator_clock.clock(),
        ));
        self.push_workers(&mut nodes, addrs, machines, kept);
        for (index, r) in self.receivers.iter().enumerate() {
            let spec = ReceiverSpec {
                index: index as u8,
                supports_fence: r.supports_fence,
                supports_status: r.supports_status,
                refused_ops: &r.refused_ops,
                kept: kept.machines.receiver(),
            };
            let receiver = machines.receiver_part(&spec);
            kept.machines.unused_receiver(spec.kept);
            nodes.push((Node::Receiver(receiver), r.clock.clock()));
        }
        nodes.push((
            Node::Tool(tool_node(
                kept,
                &self.tool,
                Prng::new(seed, Stream::Tool),
                self.tool_faults(),
            )),
            self.tool_clock.clock(),
        ));
        let actions = self.operator_actions();
        nodes.push((
            Node::Operator(actions, Self::COORDINATOR),
            ClockSpec {
                offset_ns: 0,
                drift_ppm: 0,
            }
            .clock(),
        ));
        nodes
    }

    /// The workers' nodes, each with its own addresses (the last takes `addrs` instead of a
    /// copy) and its configuration (V12 lengthens its heartbeat to the shortest lease).
    fn push_workers(
        &self,
        nodes: &mut Vec<(Node, Clock)>,
        addrs: Addrs,
        machines: &Machines,
        kept: &mut Kept,
    ) {
        let switches = self.variant.switches();
        let mut addrs = Some(addrs);
        let last = self.workers.len().saturating_sub(1);
        for (index, w) in self.workers.iter().enumerate() {
            let mut config = std::borrow::Cow::Borrowed(&w.config);
            if switches.unsafe_timing {
                // V12: a heartbeat period as long as the shortest lease: L <= R*H + J.
                let config = config.to_mut();
                config.heartbeat_ns = self
                    .classes
                    .iter()
                    .map(|c| c.lease_ns)
                    .min()
                    .unwrap_or(config.heartbeat_ns);
            }
            let spec = WorkerSpec {
                index,
                config: &config,
                kept: kept.machines.worker(),
            };
            let worker = machines.worker_part(&spec);
            kept.machines.unused_worker(spec.kept);
            let addrs = match &mut addrs {
                Some(a) if index < last => Addrs {
                    receivers: receivers_list(kept, a.receivers.iter().copied()),
                    ..*a
                },
                a => a.take().expect("only the last worker takes the addresses"),
            };
            nodes.push((Node::Worker(worker, addrs), w.clock.clock()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use leasesim_protocol::{JobId, Token, ToolFaultKind};
    use leasesim_sim::Stream;

    fn rule(nth: u32, kind: ToolFaultKind) -> ToolFaultRule {
        ToolFaultRule {
            worker: None,
            step: Some(0),
            nth,
            kind,
            late_ns: 5,
        }
    }

    fn setup(steps: u8) -> ToolSetup {
        ToolSetup {
            steps: (0..steps)
                .map(|step| ToolStep {
                    step,
                    min_ns: 10,
                    max_ns: 20 + step as u64,
                    answer: ToolAnswer::Success { result: 3 },
                })
                .collect(),
            default_min_ns: 1,
            default_max_ns: 9,
        }
    }

    /// The workers' addresses of a run, built in the lists another run's workers left (a
    /// setup with more workers and receivers, or fewer) are the ones built in new lists.
    #[test]
    fn addresses_built_in_kept_lists_are_new_ones() {
        use crate::machines::Machines;
        use leasesim_protocol::Variant;
        let addrs = |kept: &mut Kept, nodes: Vec<(Node, leasesim_sim::Clock)>| -> Vec<Addrs> {
            let all = nodes
                .iter()
                .filter_map(|(n, _)| match n {
                    Node::Worker(_, a) => Some(a.clone()),
                    _ => None,
                })
                .collect();
            keep_nodes(kept, nodes.into_iter().map(|(n, _)| n).collect());
            all
        };
        let machines = Machines::reference();
        for name in ["w1-w2", "swarm", "admission-and-authorization"] {
            let setup = crate::scenarios::find(name)
                .unwrap()
                .build(3, Variant::Reference);
            let mut kept = Kept::default();
            let new = {
                let nodes = setup.build_nodes_in(3, &machines, &mut kept);
                addrs(&mut kept, nodes)
            };
            let want = Addrs {
                coordinator: crate::Setup::COORDINATOR,
                tool: setup.tool_node(),
                receivers: (0..setup.receivers.len())
                    .map(|i| setup.receiver_node(i))
                    .collect(),
            };
            assert_eq!(new, vec![want; setup.workers.len()], "{name}");
            for other in ["swarm", "w1-w2", "admission-and-authorization"] {
                let before = crate::scenarios::find(other)
                    .unwrap()
                    .build(5, Variant::Reference);
                {
                    let nodes = before.build_nodes_in(5, &machines, &mut kept);
                    addrs(&mut kept, nodes)
                };
                assert!(!kept.receivers.is_empty());
                assert_eq!(
                    {
                        let nodes = setup.build_nodes_in(3, &machines, &mut kept);
                        addrs(&mut kept, nodes)
                    },
                    new,
                    "{name} after {other}"
                );
            }
        }
    }

    /// Every field of a tool node, and where its stream stands.
    fn state(node: &ToolNode) -> String {
        let next = node.rng.clone().next_u64();
        format!(
            "{:?} {:?} {:?} {:?} {} {next}",
            node.tool, node.setup, node.faults, node.seen, node.healed
        )
    }

    /// A tool node kept from a run that used it (calls pending and remembered, faults counted,
    /// healed) and renewed for another setup is the same as a new node for that setup.
    #[test]
    fn a_renewed_tool_node_is_a_new_one() {
        let mut kept = Kept::default();
        let faults = [rule(1, ToolFaultKind::Late), rule(0, ToolFaultKind::Hang)];
        let mut used = tool_node(
            &mut kept,
            &setup(3),
            Prng::new(1, Stream::Tool),
            faults.into_iter(),
        );
        for step in 0..3 {
            let call = used.call(4, step);
            let msg = Msg::ToolRequest {
                req: step as u64,
                job: JobId(0),
                token: Token(1),
                step,
            };
            used.tool.handle_request(0, 4, msg, call);
        }
        used.tool.handle_timeout(15);
        used.healed = true;
        assert!(used.seen.iter().any(|&n| n > 0));
        keep_nodes(&mut kept, vec![Node::Tool(used)]);

        let faults = [rule(2, ToolFaultKind::AnswerLost)];
        let renewed = tool_node(
            &mut kept,
            &setup(1),
            Prng::new(2, Stream::Tool),
            faults.into_iter(),
        );
        assert!(kept.tool.is_none(), "the kept node was taken");
        let new = Box::new(ToolNode {
            tool: Tool::new(),
            setup: setup(1),
            rng: Prng::new(2, Stream::Tool),
            faults: faults.to_vec(),
            seen: vec![0],
            healed: false,
        });
        assert_eq!(state(&renewed), state(&new));
    }
}
