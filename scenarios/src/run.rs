//! One run: build the world from a setup and a seed, simulate, and judge the trace.

use crate::hazard::Hazards;
use crate::machines::Machines;
use crate::setup::{NodeInfo, Role, Setup};
use crate::workspace::{self, Names, Workspace};
use crate::world::Node;
use leasesim_checkers::{self as oracle, Scratch, Skipped, World};
use leasesim_protocol::{Event, Finding, Msg};
use leasesim_sim::{stable_hash, Clock, End, Sim, TraceEvent, WORLD};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

/// The node list and operation names of `setup`, shared with the thread's last run (`cached`)
/// when they are the same.
fn names_of(setup: &Setup, cached: &mut Option<Names>) -> Names {
    let (nodes, ops) = match cached.take() {
        Some((nodes, ops)) => (
            if setup.has_node_infos(&nodes) {
                nodes
            } else {
                setup.node_infos().into()
            },
            if Arc::ptr_eq(&ops, &setup.op_names) || *ops == *setup.op_names {
                ops
            } else {
                setup.op_names.clone()
            },
        ),
        None => (setup.node_infos().into(), setup.op_names.clone()),
    };
    *cached = Some((nodes.clone(), ops.clone()));
    (nodes, ops)
}

/// Gives a finished run's trace storage back to this thread's next run (a sweep calls it once
/// it has read what it needs): the trace of a run that held is not kept, and its storage is not
/// allocated again.
pub(crate) fn recycle(r: RunResult) {
    workspace::with(|ws| ws.sim.give_trace(r.trace));
}

pub use crate::verdict::Verdict;

/// Everything a run produced.
#[derive(Clone, Debug)]
pub struct RunResult {
    /// The seed.
    pub seed: u64,
    /// Node names and roles (shared by the runs of one setup's layout).
    pub nodes: Arc<[NodeInfo]>,
    /// Display names of operations (shared like `nodes`).
    pub op_names: Arc<[String]>,
    /// The full trace.
    pub trace: Vec<TraceEvent<Msg, Event>>,
    /// How the simulation ended.
    pub end: End,
    /// True time at the end.
    pub end_ns: u64,
    /// Events processed.
    pub events: u64,
    /// Violations, in trace order.
    pub findings: Vec<Finding>,
    /// Hazards reached.
    pub hazards: Hazards,
    /// The rule of its host a machine broke, naming the node and its implementation (the run
    /// then ended with `End::ProcessFault`): a peer that does not exist, output without end, a
    /// panic.
    pub machine_fault: Option<String>,
    /// Judgements the checkers did not make (a clock out of its drift bound), and why.
    pub skipped: Vec<Skipped>,
    /// What kept a run that hit a limit from ending (messages the plan holds and never
    /// released, busy workers, jobs not terminal); `None` for a run that ended by itself.
    pub unfinished: Option<String>,
    /// The text of each named operation of the coordinator (name, text; a SQL file's
    /// statements, see [`Machines::with_sources`]): reports show them beside its decisions.
    /// Empty otherwise.
    pub sources: std::sync::Arc<Vec<(String, String)>>,
}

impl RunResult {
    /// The result of a run (its end, true time at the end, events) judged as `judgement`, with
    /// no machine fault and no statements yet. Inlined, so that the result is built where its
    /// caller returns it rather than built and then moved (it is a few hundred bytes).
    #[inline(always)]
    fn judged(
        seed: u64,
        (nodes, op_names): Names,
        trace: Vec<TraceEvent<Msg, Event>>,
        (end, end_ns, events): (End, u64, u64),
        judgement: oracle::Judgement,
    ) -> RunResult {
        RunResult {
            seed,
            nodes,
            op_names,
            trace,
            end,
            end_ns,
            events,
            findings: judgement.findings,
            hazards: judgement.hazards,
            machine_fault: None,
            skipped: judgement.skipped,
            unfinished: None,
            sources: no_sources(),
        }
    }

    /// The verdict.
    pub fn verdict(&self) -> Verdict {
        if !self.findings.is_empty() {
            Verdict::Violated
        } else if self.end.is_limit() {
            Verdict::Unfinished { end: self.end }
        } else {
            Verdict::Held
        }
    }

    /// A stable fingerprint of the whole trace (same input, same hash, on any machine).
    pub fn trace_hash(&self) -> u64 {
        stable_hash(&self.trace)
    }
}

/// Runs a setup with a seed on leasesim's own machines for its variant, and judges it.
pub fn run_setup(setup: &Setup, seed: u64) -> RunResult {
    run(setup, seed, &Machines::variant(setup.variant))
}

/// Runs a setup with a seed on `machines` and judges it. A machine that breaks a rule of its
/// host (a peer that does not exist, output without end) or panics ends the run with
/// `End::ProcessFault` and [`RunResult::machine_fault`] naming it; the process goes on.
pub fn run(setup: &Setup, seed: u64, machines: &Machines) -> RunResult {
    run_judged(setup, seed, machines, u64::MAX, &mut 0)
}

/// How many events a sweep's run processes between two walks of the checkers over what it
/// recorded ([`run_swept`]). Few enough that what a pause recorded (about two trace events of
/// 112 bytes per event, under a MiB) is walked while it is still in the processor's cache and
/// the trace's storage stays small; enough that a pause's own cost is a few instructions per
/// event, and that almost every run is judged whole at its end (a w1-w2 seed takes about 70
/// events; of swarm seeds 0-299 the median takes 594 and one takes more than 4,096).
pub const JUDGE_EVERY_EVENTS: u64 = 4_096;

/// What [`run_swept`] hands back.
#[derive(Clone, Debug)]
pub struct Swept {
    /// The run's result. Its trace is whole unless the run was long and held: then only its
    /// last events are kept, from trace index `trace_from` on.
    pub result: RunResult,
    /// The trace index of `result.trace[0]`: 0 when the trace is whole.
    pub trace_from: usize,
}

impl Swept {
    /// Trace events recorded in all, those dropped included.
    pub fn recorded(&self) -> usize {
        self.trace_from + self.result.trace.len()
    }
}

/// [`run`] as a sweep runs it: the checkers judge the trace as the run goes, every
/// [`JUDGE_EVERY_EVENTS`] events, and the events no checker and no message in flight will read
/// again are dropped, so a long run's trace stays within about two pauses' worth of events (more
/// only while a message is held) instead of growing with its length.
/// The judgement is the one [`run`] makes. A run that did not hold, or did not drop any of its
/// trace, comes back whole: a long run that did not hold is run again with its whole trace, for
/// its report and its replay (the same run: a run is a function of its setup and seed).
pub fn run_swept(setup: &Setup, seed: u64, machines: &Machines) -> Swept {
    let mut trace_from = 0;
    let result = run_judged(setup, seed, machines, JUDGE_EVERY_EVENTS, &mut trace_from);
    if trace_from == 0 || result.verdict() == Verdict::Held {
        return Swept { result, trace_from };
    }
    recycle(result);
    Swept {
        result: run(setup, seed, machines),
        trace_from: 0,
    }
}

/// [`run_swept`], read by `read`, its storage then handed to this thread's next run as a sweep
/// hands it: for a measurement that runs seeds as a sweep does.
pub fn run_swept_then<T>(
    setup: &Setup,
    seed: u64,
    machines: &Machines,
    read: impl FnOnce(&Swept) -> T,
) -> T {
    let swept = run_swept(setup, seed, machines);
    let out = read(&swept);
    recycle(swept.result);
    out
}

/// Runs and judges a setup, walking the checkers over the trace every `judge_every` events
/// (and at the end) and dropping what they will not read again; `trace_from` is set to the trace
/// index of the result's first trace event. The run works in this thread's workspace.
fn run_judged(
    setup: &Setup,
    seed: u64,
    machines: &Machines,
    judge_every: u64,
    trace_from: &mut usize,
) -> RunResult {
    let mut ws = workspace::take();
    let r = run_in(&mut ws, setup, seed, machines, judge_every, trace_from);
    workspace::give(ws);
    r
}

/// [`run_judged`] in the workspace `ws`: its nodes are built in what the last run left, and
/// what this one leaves is kept there for the next.
fn run_in(
    ws: &mut Workspace,
    setup: &Setup,
    seed: u64,
    machines: &Machines,
    judge_every: u64,
    trace_from: &mut usize,
) -> RunResult {
    let kept = &mut ws.nodes;
    let built = catch_unwind(AssertUnwindSafe(|| {
        setup.build_nodes_in(seed, machines, kept)
    }));
    let nodes = match built {
        Ok(nodes) => nodes,
        Err(panic) => {
            let mut r = judge_in(ws, setup, seed, Vec::new(), (End::ProcessFault, 0, 0));
            r.machine_fault = Some(factory_fault(machines, &panic));
            return r;
        }
    };
    let buffers = std::mem::take(&mut ws.sim);
    let mut sim = Sim::with_buffers(seed, nodes, setup.net, setup.limits, buffers);
    let director = &mut ws.director;
    director.reset(&setup.faults, setup.tool_node(), setup.operator_node());
    for c in director.initial_commands(setup.heal_at_ns) {
        sim.command(c);
    }
    // Judged in parts only once the run pauses: a run shorter than a pause is judged whole at
    // its end, as `judge` judges any engine's trace. The parts are lent the workspace's clocks
    // and checkers when they start.
    let mut parts: Option<Parts> = None;
    let mut lent = Some((&mut ws.clocks, &mut ws.checkers));
    // Bounded: each pass processes at least one event, up to the event budget.
    let (end, fault) = loop {
        let pause_at = sim.events().saturating_add(judge_every);
        match catch_unwind(AssertUnwindSafe(|| sim.run_until(director, pause_at))) {
            Ok(Some(end)) => break (end, sim.fault().cloned()),
            Ok(None) => parts
                .get_or_insert_with(|| {
                    let (clocks, checkers) = lent.take().expect("lent once, to the parts");
                    Parts::start(setup, &mut ws.names, clocks, checkers)
                })
                .walk(setup, &mut sim),
            Err(panic) => {
                break (
                    End::ProcessFault,
                    Some((sim.calling().unwrap_or(WORLD), unwound(&panic))),
                )
            }
        }
    };
    let (end_ns, events, from) = (sim.now(), sim.events(), sim.trace_base());
    let (trace, buffers, nodes) = sim.finish_with_nodes();
    let still = end.is_limit().then(|| Still::of(&trace, &nodes));
    crate::world::keep_nodes(&mut ws.nodes, nodes);
    ws.sim = buffers;
    *trace_from = from;
    let ending = (end, end_ns, events);
    let mut r = match parts {
        None => judge_in(ws, setup, seed, trace, ending),
        Some(p) => p.finish(setup, seed, trace, from, ending),
    };
    r.sources = machines.sources_shared();
    r.unfinished = still.map(|st| st.describe(setup, &r.nodes, end));
    r.machine_fault = fault.map(|(node, reason)| machine_fault(&r, machines, node, &reason));
    r
}

/// A factory's fault in words: which machines, what it did.
fn factory_fault(machines: &Machines, panic: &Box<dyn std::any::Any + Send>) -> String {
    format!(
        "a machine factory of '{}' {}",
        machines.name(),
        unwound(panic)
    )
}

/// A machine's fault in words: the node, the implementation of its role, what it did.
fn machine_fault(r: &RunResult, machines: &Machines, node: u32, reason: &str) -> String {
    let info = r.nodes.get(node as usize);
    let part = match info.map(|n| &n.role) {
        Some(Role::Coordinator) => format!("coordinator '{}'", machines.parts().coordinator),
        Some(Role::Worker { .. }) => format!("worker '{}'", machines.parts().worker),
        Some(Role::Receiver { .. }) => format!("receiver '{}'", machines.parts().receiver),
        Some(Role::Tool) | Some(Role::Operator) | None => "leasesim's own node".to_string(),
    };
    format!(
        "{} ({part}) {reason}",
        info.map_or("the simulator", |n| n.name.as_str())
    )
}

/// What was still going on when a run hit a limit.
struct Still {
    /// Messages the plan held and never released.
    held: usize,
    /// Workers that still held (or believed they held) a job, by node.
    busy: Vec<usize>,
    /// Whether the coordinator had every job terminal.
    done: bool,
}

impl Still {
    fn of(trace: &[TraceEvent<Msg, Event>], nodes: &[Node]) -> Still {
        let mut held = std::collections::BTreeSet::new();
        for e in trace {
            match e.kind {
                leasesim_sim::EventKind::Send {
                    id,
                    fate: leasesim_sim::Fate::Hold,
                    ..
                } => {
                    held.insert(id);
                }
                leasesim_sim::EventKind::Release { id, .. } => {
                    held.remove(&id);
                }
                _ => {}
            }
        }
        Still {
            held: held.len(),
            busy: (0..nodes.len())
                .filter(|&i| nodes[i].is_busy_worker())
                .collect(),
            done: nodes.iter().any(Node::is_finished_coordinator),
        }
    }

    /// `the Horizon limit (3600.000s): 1 message the plan holds was never released (...)`.
    fn describe(&self, setup: &Setup, names: &[NodeInfo], end: End) -> String {
        let mut parts = Vec::new();
        if self.held > 0 {
            let holds: Vec<String> = setup
                .faults
                .iter()
                .filter(|f| f.release().is_some())
                .map(crate::replay::v1::fault_line)
                .collect();
            parts.push(format!(
                "{} message(s) the plan held were never released: the hold's release never came ({})",
                self.held,
                holds.join("; ")
            ));
        }
        if !self.busy.is_empty() {
            let who: Vec<&str> = self
                .busy
                .iter()
                .filter_map(|&i| names.get(i).map(|n| n.name.as_str()))
                .collect();
            parts.push(format!("{} still held a job", who.join(", ")));
        }
        if !self.done {
            parts.push("the coordinator had jobs not terminal".to_string());
        }
        if parts.is_empty() {
            parts.push("every job was terminal and no worker busy, yet events kept coming".into());
        }
        format!("it reached the {end:?} limit while {}", parts.join("; "))
    }
}

/// A run judged in parts: its world's names and clocks, and the judging, in the storage of
/// the workspace the run works in.
struct Parts<'w> {
    nodes: Arc<[NodeInfo]>,
    op_names: Arc<[String]>,
    clocks: &'w [Clock],
    judging: oracle::Judging<'w>,
}

impl<'w> Parts<'w> {
    #[cold]
    #[inline(never)]
    fn start(
        setup: &Setup,
        names: &mut Option<Names>,
        clocks: &'w mut Vec<Clock>,
        checkers: &'w mut Scratch,
    ) -> Parts<'w> {
        let (nodes, op_names) = names_of(setup, names);
        clocks_of(setup, nodes.len(), clocks);
        let clocks: &'w [Clock] = clocks;
        let world = world_of(setup, &nodes, &op_names, clocks, End::Idle, 0);
        let judging = oracle::Judging::start(&world, checkers);
        Parts {
            nodes,
            op_names,
            clocks,
            judging,
        }
    }

    /// Judges what the paused run recorded since the last walk, and drops what no walk will
    /// read again.
    #[cold]
    #[inline(never)]
    fn walk(&mut self, setup: &Setup, sim: &mut Sim<Node>) {
        // The run's end is read only when the judging finishes.
        let world = world_of(
            setup,
            &self.nodes,
            &self.op_names,
            self.clocks,
            End::Idle,
            0,
        );
        self.judging.walk(&world, sim.trace(), sim.trace_base());
        sim.compact(self.judging.keep_from());
    }

    /// The result: the rest of the trace (from trace index `trace_from`) judged, then the run's
    /// end (how it ended, true time at the end, events).
    #[cold]
    #[inline(never)]
    fn finish(
        self,
        setup: &Setup,
        seed: u64,
        trace: Vec<TraceEvent<Msg, Event>>,
        trace_from: usize,
        ending: (End, u64, u64),
    ) -> RunResult {
        let (end, end_ns, _) = ending;
        let world = world_of(setup, &self.nodes, &self.op_names, self.clocks, end, end_ns);
        let judgement = self.judging.finish(&world, &trace, trace_from);
        let names = (self.nodes, self.op_names);
        RunResult::judged(seed, names, trace, ending, judgement)
    }
}

/// The text of a panic's payload.
fn panic_text(panic: &Box<dyn std::any::Any + Send>) -> String {
    panic
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_else(|| "(no message)".into())
}

/// What ended a run that unwound: a machine's own [`MachineFailure`] as its reason, any other
/// panic as `panicked: <message>`.
fn unwound(panic: &Box<dyn std::any::Any + Send>) -> String {
    match panic.downcast_ref::<MachineFailure>() {
        Some(f) => f.0.clone(),
        None => format!("panicked: {}", panic_text(panic)),
    }
}

/// A machine's report that it cannot go on, which is not a bug of its code: a store that
/// failed (a SQL statement the server refused or cancelled), a store that broke its contract.
/// See [`fail_machine`].
#[derive(Clone, Debug)]
pub struct MachineFailure(pub String);

/// Ends the current run from inside a machine's handler (or its factory) with a machine error
/// whose reason is `reason`, as a panic would, but without the panic message and backtrace a
/// bug prints on standard error: the run's verdict carries the reason. Outside a run it
/// unwinds like a panic that prints nothing.
pub fn fail_machine(reason: String) -> ! {
    std::panic::resume_unwind(Box::new(MachineFailure(reason)))
}

/// Judges a trace of `setup` run with `seed`, whichever engine produced it.
pub fn judge(
    setup: &Setup,
    seed: u64,
    trace: Vec<TraceEvent<Msg, Event>>,
    end: End,
    end_ns: u64,
    events: u64,
) -> RunResult {
    workspace::with(|ws| judge_in(ws, setup, seed, trace, (end, end_ns, events)))
}

/// [`judge`] in the workspace `ws`; `ending` is how the run ended, true time at the end and
/// the events processed.
fn judge_in(
    ws: &mut Workspace,
    setup: &Setup,
    seed: u64,
    trace: Vec<TraceEvent<Msg, Event>>,
    ending: (End, u64, u64),
) -> RunResult {
    let (end, end_ns, _) = ending;
    let (nodes, op_names) = names_of(setup, &mut ws.names);
    clocks_of(setup, nodes.len(), &mut ws.clocks);
    let world = world_of(setup, &nodes, &op_names, &ws.clocks, end, end_ns);
    let judgement = oracle::check(&world, &trace, &mut ws.checkers);
    let names = (nodes, op_names);
    RunResult::judged(seed, names, trace, ending, judgement)
}

/// Fills `clocks` with the clocks the checkers read, by node: they map a holder's stated
/// deadline to true time.
fn clocks_of(setup: &Setup, nodes: usize, clocks: &mut Vec<Clock>) {
    clocks.clear();
    clocks.resize(nodes, Clock::new(0, 0));
    for (i, w) in setup.workers.iter().enumerate() {
        clocks[setup.worker_node(i) as usize] = w.clock.clock();
    }
}

/// The world the checkers judge a run of `setup` in.
fn world_of<'a>(
    setup: &Setup,
    nodes: &'a [NodeInfo],
    op_names: &'a [String],
    clocks: &'a [Clock],
    end: End,
    end_ns: u64,
) -> World<'a> {
    World {
        nodes,
        coordinator_clock: setup.coordinator_clock.clock(),
        clocks,
        op_names,
        jobs: setup.jobs.len(),
        latency_max_ns: setup.net.latency_max_ns,
        liveness_deadline_ns: setup
            .liveness_bound_ns
            .map(|b| setup.heal_at_ns.unwrap_or(0) + b),
        end,
        end_ns,
        messages: true,
    }
}

/// The sources of a coordinator that has none, shared rather than allocated for each run.
fn no_sources() -> Arc<Vec<(String, String)>> {
    static NONE: std::sync::OnceLock<Arc<Vec<(String, String)>>> = std::sync::OnceLock::new();
    NONE.get_or_init(|| Arc::new(Vec::new())).clone()
}

/// Determinism self-check: two runs of the same input must give the same trace; if not, the
/// first diverging event is named.
pub fn check_same(a: &RunResult, b: &RunResult) -> Result<(), String> {
    if a.trace_hash() == b.trace_hash() && a.trace.len() == b.trace.len() {
        return Ok(());
    }
    let node_names: Vec<String> = a.nodes.iter().map(|n| n.name.clone()).collect();
    let names = leasesim_reports::Names {
        nodes: &node_names,
        ops: &a.op_names,
    };
    let i = a
        .trace
        .iter()
        .zip(&b.trace)
        .position(|(x, y)| x != y)
        .unwrap_or(a.trace.len().min(b.trace.len()));
    let show = |t: &[TraceEvent<Msg, Event>]| {
        t.get(i).map_or("(the trace ended)".to_string(), |e| {
            leasesim_reports::line(&names, e).trim().to_string()
        })
    };
    Err(format!(
        "traces diverge at event {i}: first run `{}`, second run `{}`{}",
        show(&a.trace),
        show(&b.trace),
        answer_to(a, i, &names)
    ))
}

/// Which input of its node the diverging event `i` answers: the message delivered to that node
/// in the same step, or else its timer or start (neither is a trace event).
fn answer_to(r: &RunResult, i: usize, names: &leasesim_reports::Names<'_>) -> String {
    use leasesim_sim::EventKind;
    let Some(e) = r.trace.get(i) else {
        return String::new();
    };
    if !matches!(e.kind, EventKind::Send { .. } | EventKind::Note { .. }) || e.node == WORLD {
        return String::new();
    }
    let who = names.nodes.get(e.node as usize).map_or("?", String::as_str);
    let input = r.trace[..i]
        .iter()
        .rev()
        .take_while(|x| x.t == e.t)
        .find(|x| x.node == e.node && matches!(x.kind, EventKind::Deliver { .. }));
    match input {
        Some(d) => format!(
            "; the first answer that differs is {who}'s to its input `{}`",
            leasesim_reports::line(names, d).trim()
        ),
        None => format!(
            "; the first answer that differs is {who}'s to its timer or its start at its local {:.6}s",
            e.local as f64 / 1e9
        ),
    }
}

/// The command that reproduces one seed of a named scenario on `machines`: leasesim's own
/// `cargo run --release -- run ...` for its own machines; for a user's, the same command of the
/// user's program (the binary that runs these machines, as `leasesim_cli::main_with` builds it).
pub fn reproduce_command_for(machines: &Machines, scenario: &str, seed: u64) -> String {
    // A scenario of the user's own is only in the user's program.
    let stock_scenario = crate::scenarios::find(scenario).is_some();
    if machines.is_stock() && stock_scenario {
        if let Some(v) = leasesim_protocol::Variant::from_name(machines.name()) {
            return reproduce_command(scenario, seed, v);
        }
    }
    if let Some(args) = machines.command_line() {
        let prefix = command_prefix(stock_scenario);
        return format!("{prefix} run {scenario} --seed {seed} {args}");
    }
    format!(
        "{} run {scenario} --seed {seed} --variant {}",
        program_prefix(),
        machines.name()
    )
}

/// The command that replays `file` with this program's machines `m`: leasesim's own binary
/// when it has the machines (its own, or a SQL file's) and the scenario, the user's program
/// otherwise.
pub fn rerun_command(m: &crate::Machines, scenario: &str, file: &std::path::Path) -> String {
    let prefix = command_prefix(
        (m.is_stock() || m.command_line().is_some()) && crate::scenarios::find(scenario).is_some(),
    );
    match m.command_line() {
        Some(args) => format!("{prefix} replay {} {args}", file.display()),
        None => format!("{prefix} replay {}", file.display()),
    }
}

/// How a printed command starts the program that can run it: leasesim's own binary
/// (`cargo run --release --` at leasesim's root) when it has everything the command needs,
/// this program ([`program_prefix`]) otherwise.
pub fn command_prefix(leasesim_can: bool) -> String {
    if leasesim_can {
        "cargo run --release --".to_string()
    } else {
        program_prefix()
    }
}

/// The command this program's own [`set_program_prefix`] gave, once for the process.
static PROGRAM_PREFIX: std::sync::OnceLock<String> = std::sync::OnceLock::new();

/// Says how this program is started again (the first call wins): a binary that needs cargo
/// features or options the default of [`program_prefix`] cannot know gives its own command.
pub fn set_program_prefix(command: &str) {
    let _ = PROGRAM_PREFIX.set(command.trim_end().to_string());
}

/// How this program is started again from its workspace: the command [`set_program_prefix`]
/// gave, or `cargo run --release -p <package> --bin <name> --` for a binary under a cargo
/// target folder, or its path otherwise.
pub fn program_prefix() -> String {
    if let Some(p) = PROGRAM_PREFIX.get() {
        return p.clone();
    }
    let exe = std::env::current_exe().ok();
    let name = exe
        .as_ref()
        .and_then(|p| p.file_stem())
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "leasesim".into());
    let in_target = exe
        .as_ref()
        .and_then(|p| p.parent())
        .and_then(|d| d.parent())
        .is_some_and(|t| t.file_name().is_some_and(|n| n == "target"));
    if in_target {
        // Under `cargo run` the package is known; run by hand, the binary's name must do.
        match std::env::var("CARGO_PKG_NAME") {
            Ok(pkg) => format!("cargo run --release -p {pkg} --bin {name} --"),
            Err(_) => format!("cargo run --release --bin {name} --"),
        }
    } else {
        exe.map_or(name, |p| p.display().to_string())
    }
}

/// The command that reproduces one seed of a named scenario.
pub fn reproduce_command(scenario: &str, seed: u64, variant: leasesim_protocol::Variant) -> String {
    let mut s = format!("cargo run --release -- run {scenario} --seed {seed}");
    if variant != leasesim_protocol::Variant::Reference {
        s.push_str(&format!(" --variant {}", variant.name()));
    }
    if variant.switches().unsafe_timing {
        s.push_str(" --allow-unsafe-timing");
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::PlanDirector;
    use leasesim_protocol::Variant;

    /// A run judged a few events at a time is the run [`run`] makes and judges at once: the
    /// same trace (what it kept of it), the same end and the same judgement, for every scenario
    /// and variant. Pausing the simulator, walking the checkers in parts and dropping what they
    /// will not read again (a lease reply's request found in the history's log, not by reading
    /// the trace back) changes nothing.
    #[test]
    fn a_run_judged_as_it_goes_is_judged_as_a_whole_one() {
        let (mut compared, mut dropped) = (0, 0);
        for def in crate::scenarios::ALL {
            for &variant in Variant::ALL {
                for seed in 0..3 {
                    let setup = def.build(seed, variant);
                    let machines = Machines::variant(variant);
                    let whole = run(&setup, seed, &machines);
                    let mut trace_from = 0;
                    let result = run_judged(&setup, seed, &machines, 5, &mut trace_from);
                    let parts = Swept { result, trace_from };
                    let what = |r: &RunResult| {
                        format!(
                            "{:?} {} {}\n{:?}\n{:?}\n{:?}",
                            r.end, r.end_ns, r.events, r.findings, r.hazards, r.skipped
                        )
                    };
                    assert_eq!(parts.recorded(), whole.trace.len());
                    assert!(
                        parts.result.trace[..] == whole.trace[parts.trace_from..],
                        "{} --variant {} seed {seed}: the events kept are the trace's last",
                        def.name,
                        variant.name()
                    );
                    dropped += usize::from(parts.trace_from > 0);
                    assert_eq!(
                        what(&parts.result),
                        what(&whole),
                        "{} --variant {} seed {seed}",
                        def.name,
                        variant.name()
                    );
                    compared += usize::from(!whole.findings.is_empty());
                }
            }
        }
        assert!(compared > 50, "only {compared} runs with findings compared");
        assert!(
            dropped > 500,
            "only {dropped} runs dropped part of their trace"
        );
    }

    /// The simulator drops the start of its trace when asked ([`Sim::compact`]) and still
    /// delivers every message in flight, held or deferred by a pause: a run paused every few
    /// events, with everything it may drop dropped each time, records the same events as a
    /// run left alone.
    #[test]
    fn a_compacted_run_records_the_same_events() {
        let mut dropped_any = 0;
        for def in crate::scenarios::ALL {
            for seed in 0..3 {
                let setup = def.build(seed, Variant::Reference);
                let machines = Machines::variant(Variant::Reference);
                let whole = run(&setup, seed, &machines);
                let nodes = setup.build_nodes(seed, &machines);
                let mut sim = Sim::new(seed, nodes, setup.net, setup.limits);
                let mut director = PlanDirector::default();
                director.reset(&setup.faults, setup.tool_node(), setup.operator_node());
                for c in director.initial_commands(setup.heal_at_ns) {
                    sim.command(c);
                }
                let mut seen: Vec<TraceEvent<Msg, Event>> = Vec::new();
                let end = loop {
                    let at = sim.events() + 3;
                    let paused = sim.run_until(&mut director, at);
                    let base = sim.trace_base();
                    seen.extend_from_slice(&sim.trace()[seen.len() - base..]);
                    if let Some(end) = paused {
                        break end;
                    }
                    let kept_from = sim.compact(usize::MAX);
                    assert!(kept_from <= seen.len());
                    dropped_any += usize::from(kept_from > base);
                };
                assert_eq!(end, whole.end, "{} seed {seed}", def.name);
                assert_eq!(sim.recorded(), whole.trace.len());
                assert!(
                    seen == whole.trace,
                    "{} seed {seed}: the compacted run recorded other events",
                    def.name
                );
            }
        }
        assert!(
            dropped_any > 100,
            "compaction dropped events {dropped_any} times"
        );
    }
}
