//! Exhaustive bounded exploration: every fault plan of up to K faults from the catalogue, each
//! placed at a protocol event of the scenario's fault-free run, with the seed held fixed.
//!
//! A random sweep asks "does some seed break it?"; a design review asks "does *any* placement of
//! one or two faults break it, in this configuration?". leasesim anchors faults to protocol
//! events, so for one run the meaningful placements are finite:
//!
//! 1. The scenario's setup for the seed is taken without its plan (and without random loss and
//!    duplication, which are faults too) and run once: the **baseline**.
//! 2. Its **anchors** are collected: the first send and the first delivery of each distinct
//!    message (sender, receiver, kind, token, operation, plan step), and the first journal event
//!    of each name on each node that no message of that node marks at the same instant (those
//!    are anchored "right after" the event, at its baseline time plus 1 ns).
//! 3. At each anchor, every **candidate fault** of the chosen kinds is placed on the parties of
//!    the event, with durations just under, between and beyond the stop margin G, the heartbeat
//!    period H and the lease L (see [`durations`]); message faults act on the anchored message
//!    itself, tool faults on each tool call the baseline made.
//! 4. Every plan of up to K distinct candidates runs (K <= [`FAULTS_MAX`]), numbered: the
//!    baseline, then each single fault, then each pair in colex order.
//!
//! **Pruning keeps the claim honest.** A candidate does nothing until its anchor happens, so a
//! pair whose one fault's anchor never happens in the run of the other fault alone is that run,
//! event for event: it is counted as covered with that run's verdict, never run again. Only a
//! run that ended by itself (not at a limit) prunes. Nothing is sampled: a budget runs a prefix
//! of the numbered space and the result says which fraction ran; an interrupted exploration says
//! how many plans ran and claims nothing.
//!
//! **What it does not cover**: timings between anchors (a fault starts at an anchor, never
//! between two), durations other than the chosen ones, interleavings the seed fixes (latencies
//! and tool durations are the seed's), a journal anchor in a run the first fault changed (it is
//! placed at its baseline time), and plans of more than K faults.
//!
//! It runs any [`Machines`] (a user's, a SQL coordinator), on every core, sharded like a sweep.
//! It never changes a plan's meaning: the plans are ordinary [`Fault`]s, so a violation is
//! saved as an ordinary replay file and shrunk by the ordinary shrinker.
//!
//! ```
//! use leasesim::explore::{explore, ExploreConfig, Kind, Silent};
//! use leasesim::{scenarios, Machines, Variant};
//! use std::sync::atomic::AtomicBool;
//!
//! let w1_w2 = scenarios::find("w1-w2").unwrap();
//! let config = ExploreConfig {
//!     kinds: Kind::parse_list("operator").unwrap(),
//!     ..ExploreConfig::new(w1_w2, 1, Machines::variant(Variant::UnconditionalCommit), 1)
//! };
//! let x = explore(&config, &AtomicBool::new(false), &Silent).unwrap();
//! assert!(x.exhaustive() && x.violations.contains_key("no-stale-commit"), "{}", x.claim());
//! ```

use crate::hazard::Hazards;
use crate::machines::Machines;
use crate::plan::{Fault, FaultKind, MsgAction, MsgPattern, Trigger};
use crate::pool::{self, Chunks};
use crate::replay::Replay;
use crate::run::{run, RunResult, Verdict};
use crate::scenarios::ScenarioDef;
use crate::setup::Setup;
use crate::shrink;
use crate::sweep::Shard;
use leasesim_protocol::{Invariant, JobId, Msg, MsgKind, OperatorAction, ToolFaultKind};
use leasesim_sim::{End, EventKind, NodeId};
use std::collections::{BTreeMap, BTreeSet};
use std::ops::Range;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;

/// Most faults per plan: the space grows as N^K (N candidates, a few thousand on a small
/// scenario), so three faults would be billions of runs.
pub const FAULTS_MAX: usize = 2;
/// Most plans an exploration may have without a budget: beyond it the space is refused with its
/// size, so that nothing runs for days by accident.
pub const PLANS_MAX: u64 = 20_000_000;
/// Most anchors a baseline may have: a run that does not end by itself (a liveness bug)
/// repeats its messages with ever new tokens, and its space would be billions of plans.
pub const ANCHORS_MAX: usize = 5_000;
/// Violating plans kept per invariant for the report (every one is counted).
pub const KEPT_PER_INVARIANT: usize = 20;
/// Plans per chunk of work handed to a thread.
const CHUNK: u64 = 64;

/// The kinds of fault an exploration places, as `--kinds` names them (the catalogue's names).
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Kind {
    /// F1: cut the link between a party of the event and one of its peers, both ways.
    Partition,
    /// F1/F6: cut every link of a party.
    Isolate,
    /// F2: a GC pause of a party (the anchoring message waits when the party sent it).
    Pause,
    /// F3: drop, duplicate or delay the anchored message.
    Message,
    /// F4: a worker's monotonic clock jumps forward, or its wall clock steps.
    ClockStep,
    /// F4: a worker's clock rate changes (at and beyond its drift bound).
    Drift,
    /// F5: a party crashes and restarts.
    Crash,
    /// F6: every message of a party is slower for a while.
    Slow,
    /// F7: one tool call hangs, answers late, fails, or loses its answer.
    Tool,
    /// F8: the operator revokes, cancels or hands over a job.
    Operator,
}

impl Kind {
    /// Every kind, in the catalogue's order.
    pub const ALL: [Kind; 10] = [
        Kind::Partition,
        Kind::Isolate,
        Kind::Pause,
        Kind::Message,
        Kind::ClockStep,
        Kind::Drift,
        Kind::Crash,
        Kind::Slow,
        Kind::Tool,
        Kind::Operator,
    ];

    /// Its name in the catalogue (`leasesim list`).
    pub fn name(self) -> &'static str {
        match self {
            Kind::Partition => "partition",
            Kind::Isolate => "isolate",
            Kind::Pause => "pause",
            Kind::Message => "message",
            Kind::ClockStep => "clock-step",
            Kind::Drift => "drift",
            Kind::Crash => "crash",
            Kind::Slow => "slow",
            Kind::Tool => "tool",
            Kind::Operator => "operator",
        }
    }

    /// A comma-separated list of names (`pause,message`), each once; `all` is every kind.
    pub fn parse_list(s: &str) -> Result<Vec<Kind>, String> {
        let mut out = Vec::new();
        for name in s.split(',').map(str::trim) {
            if name == "all" {
                return Ok(Kind::ALL.to_vec());
            }
            let kind = Kind::ALL
                .into_iter()
                .find(|k| k.name() == name)
                .ok_or_else(|| {
                    let known: Vec<&str> = Kind::ALL.iter().map(|k| k.name()).collect();
                    format!(
                        "unknown fault kind '{name}' (known: {}, or all)",
                        known.join(", ")
                    )
                })?;
            if out.contains(&kind) {
                return Err(format!("fault kind '{name}' is named twice"));
            }
            out.push(kind);
        }
        out.sort();
        Ok(out)
    }
}

/// A protocol event of the baseline a fault can start at.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Anchor {
    /// The trigger that starts a fault there.
    pub trigger: Trigger,
    /// The event in words (`W1 sends tool_request step 3`).
    pub label: String,
    /// The nodes the event belongs to (coordinator, workers, receivers among them).
    pub parties: Vec<NodeId>,
    /// Its true time in the baseline.
    pub t_ns: u64,
}

/// What must happen in a run for a candidate to do anything: its anchor.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Activation {
    /// A message matching the pattern is sent (`true`) or delivered (`false`).
    Msg {
        /// Send or delivery.
        sent: bool,
        /// The message.
        pattern: MsgPattern,
    },
    /// The run is still going at this true time.
    At {
        /// True time.
        t_ns: u64,
    },
}

/// One fault an exploration may place, with the event that sets it off.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Candidate {
    /// The fault as a plan states it.
    pub fault: Fault,
    /// The fault and its anchor in words.
    pub label: String,
    /// The kind it was placed as.
    pub kind: Kind,
    /// What must happen for it to act.
    pub activation: Activation,
}

/// What an exploration is asked to do.
#[derive(Clone)]
pub struct ExploreConfig {
    /// The scenario whose configuration is explored.
    pub scenario: ScenarioDef,
    /// The seed, held fixed for every plan.
    pub seed: u64,
    /// The machines under test.
    pub machines: Machines,
    /// K: most faults per plan (1 to [`FAULTS_MAX`]).
    pub faults_max: usize,
    /// The kinds placed.
    pub kinds: Vec<Kind>,
    /// Threads (every core when `None`).
    pub threads: Option<usize>,
    /// One shard of the numbered space.
    pub shard: Option<Shard>,
    /// Runs only the first this many plans of the (shard's) space, and says so.
    pub budget: Option<u64>,
    /// Stops once a violating plan is found, after every plan numbered before it ran: the
    /// number of plans needed to find it is then exact.
    pub stop_at_first_violation: bool,
    /// Runs a configuration that breaks P6 instead of refusing it.
    pub allow_unsafe_timing: bool,
}

impl ExploreConfig {
    /// Every kind, K faults, every core, the whole space.
    pub fn new(
        scenario: impl Into<ScenarioDef>,
        seed: u64,
        machines: Machines,
        faults_max: usize,
    ) -> ExploreConfig {
        ExploreConfig {
            scenario: scenario.into(),
            seed,
            machines,
            faults_max,
            kinds: Kind::ALL.to_vec(),
            threads: None,
            shard: None,
            budget: None,
            stop_at_first_violation: false,
            allow_unsafe_timing: false,
        }
    }
}

/// The space an exploration walks: the baseline and what can be placed in it.
pub struct Space {
    /// The scenario's setup for the seed, without any fault.
    pub base: Setup,
    /// The baseline's trace hash.
    pub baseline_hash: u64,
    /// The baseline's verdict.
    pub baseline_verdict: Verdict,
    /// Every anchor.
    pub anchors: Vec<Anchor>,
    /// Message anchors among them (the rest are journal anchors).
    pub message_anchors: usize,
    /// Every candidate fault, in the order plans number them.
    pub candidates: Vec<Candidate>,
    /// The durations placed (nanoseconds), shortest first.
    pub durations: Vec<u64>,
    /// K.
    pub faults_max: usize,
    /// Whether only the baseline was placed: it already broke an invariant and the exploration
    /// stops at the first violation, so no fault was placed.
    pub baseline_only: bool,
    /// The distinct activations, and each candidate's among them.
    activations: Vec<Activation>,
    activation_of: Vec<usize>,
}

/// n choose k for k <= 2, saturating.
fn choose(n: u64, k: usize) -> u64 {
    match k {
        0 => 1,
        1 => n,
        _ => n.saturating_mul(n.saturating_sub(1)) / 2,
    }
}

impl Space {
    /// Plans of exactly `k` faults.
    pub fn plans_of(&self, k: usize) -> u64 {
        choose(self.candidates.len() as u64, k)
    }

    /// Every plan of up to K faults, the baseline included.
    pub fn total(&self) -> u64 {
        (0..=self.faults_max)
            .map(|k| self.plans_of(k))
            .fold(0u64, u64::saturating_add)
    }

    /// The candidates plan number `index` holds.
    pub fn plan(&self, index: u64) -> Vec<usize> {
        let n = self.candidates.len() as u64;
        if index == 0 {
            return Vec::new();
        }
        if index <= n {
            return vec![(index - 1) as usize];
        }
        // Pairs i < j in colex order: (0,1), (0,2), (1,2), (0,3)...
        let q = index - 1 - n;
        let mut j = ((1.0 + (1.0 + 8.0 * q as f64).sqrt()) / 2.0) as u64;
        while j * j.saturating_sub(1) / 2 > q {
            j -= 1;
        }
        while (j + 1) * j / 2 <= q {
            j += 1;
        }
        let i = q - j * (j - 1) / 2;
        vec![i as usize, j as usize]
    }

    /// The setup of plan `index`.
    pub fn setup_of(&self, index: u64) -> Setup {
        let mut s = self.base.clone();
        s.faults = self
            .plan(index)
            .into_iter()
            .map(|c| self.candidates[c].fault)
            .collect();
        s
    }

    /// Whether candidate `c`'s anchor happened in run `r`: if not, and `r` ended by itself, `c`
    /// added to `r`'s plan changes nothing (the pruning rule).
    pub fn reaches(&self, r: &RunResult, c: usize) -> bool {
        bit(&reached(self, r), c)
    }

    /// Plan `index` in words, one fault per entry.
    pub fn labels(&self, index: u64) -> Vec<String> {
        self.plan(index)
            .into_iter()
            .map(|c| self.candidates[c].label.clone())
            .collect()
    }
}

/// The durations placed: one in each interval the stop margin G, the heartbeat period H and the
/// lease L cut time into (under the smallest, between each two, beyond the largest at 1.5 times
/// it), so that a fault is shorter than, between, and longer than each of them.
pub fn durations(setup: &Setup) -> Vec<u64> {
    let lease = setup.classes.iter().map(|c| c.lease_ns).min().unwrap_or(0);
    let heartbeat = setup
        .workers
        .iter()
        .map(|w| w.config.heartbeat_ns)
        .min()
        .unwrap_or(0);
    let margin = setup
        .workers
        .iter()
        .map(|w| w.config.stop_margin_ns)
        .min()
        .unwrap_or(0);
    let mut cuts: Vec<u64> = [margin, heartbeat, lease]
        .into_iter()
        .filter(|&x| x > 0)
        .collect();
    cuts.sort_unstable();
    cuts.dedup();
    let mut out = Vec::new();
    let mut below = 0;
    for &c in &cuts {
        out.push(below + (c - below) / 2);
        below = c;
    }
    out.push(below + below / 2);
    out.retain(|&d| d > 0);
    out.dedup();
    out
}

/// The exact identity of a message as a pattern: every field it has.
fn identity(from: NodeId, to: NodeId, msg: &Msg) -> MsgPattern {
    let op = match msg {
        Msg::Effect { key, .. } | Msg::EffectAck { key, .. } => Some(key.op),
        _ => None,
    };
    let step = match msg {
        Msg::ToolRequest { step, .. } | Msg::ToolResponse { step, .. } => Some(*step),
        _ => None,
    };
    MsgPattern {
        from: Some(from),
        to: Some(to),
        kind: Some(msg.kind()),
        token: msg.token(),
        op,
        step,
    }
}

/// `ToolRequest` -> `tool_request`.
fn snake(kind: MsgKind) -> String {
    let mut s = String::new();
    for (i, c) in format!("{kind:?}").chars().enumerate() {
        if c.is_ascii_uppercase() {
            if i > 0 {
                s.push('_');
            }
            s.push(c.to_ascii_lowercase());
        } else {
            s.push(c);
        }
    }
    s
}

fn secs(ns: u64) -> String {
    leasesim_sim::time::secs_rounded(ns.into(), leasesim_sim::time::Round::Nearest)
}

/// Names of the nodes, by id.
struct Names {
    names: Vec<String>,
    ops: Vec<String>,
}

impl Names {
    fn node(&self, n: NodeId) -> &str {
        self.names.get(n as usize).map_or("?", String::as_str)
    }

    fn message(&self, p: &MsgPattern) -> String {
        let mut s = p.kind.map_or("message".to_string(), snake);
        if let Some(t) = p.token {
            s.push_str(&format!(" token {t}"));
        }
        if let Some(op) = p.op {
            let name = self.ops.get(op.0 as usize).cloned().unwrap_or_default();
            s.push_str(&format!(" {name}"));
        }
        if let Some(step) = p.step {
            s.push_str(&format!(" step {step}"));
        }
        s
    }
}

/// Whether a node is a party a fault may hit (coordinator, worker, receiver).
fn is_party(setup: &Setup, n: NodeId) -> bool {
    n < setup.tool_node()
}

/// The peers a party's link may be cut from: a worker's coordinator and receivers, the
/// coordinator's and each receiver's workers.
fn peers(setup: &Setup, n: NodeId) -> Vec<NodeId> {
    let workers: Vec<NodeId> = (0..setup.workers.len())
        .map(|i| setup.worker_node(i))
        .collect();
    if workers.contains(&n) {
        let mut p = vec![Setup::COORDINATOR];
        p.extend((0..setup.receivers.len()).map(|i| setup.receiver_node(i)));
        p
    } else {
        workers
    }
}

/// Builds the space: runs the baseline, collects its anchors, places the candidates.
pub fn space(config: &ExploreConfig) -> Result<Space, String> {
    if config.faults_max == 0 || config.faults_max > FAULTS_MAX {
        return Err(format!(
            "--faults {} is out of range: 1 to {FAULTS_MAX} (the space grows as N^K with N candidates, thousands on a small scenario)",
            config.faults_max
        ));
    }
    if config.kinds.is_empty() {
        return Err("no fault kind to place".into());
    }
    let base = fault_free(config)?;
    let baseline = run(&base, config.seed, &config.machines);
    let names = Names {
        names: base.node_infos().into_iter().map(|n| n.name).collect(),
        ops: base.op_names.to_vec(),
    };
    let (anchors, message_anchors) = anchors(&base, &baseline, &names);
    let durations = durations(&base);
    let baseline_only = baseline.verdict() != Verdict::Held && config.stop_at_first_violation;
    if anchors.len() > ANCHORS_MAX && !baseline_only {
        return Err(format!(
            "the fault-free run of {} seed {} has {} anchors (at most {ANCHORS_MAX}): its space is too large to walk; its verdict is {}",
            config.scenario.name,
            config.seed,
            anchors.len(),
            baseline.verdict().word()
        ));
    }
    // A baseline that already fails is found at plan 1: the rest is not placed.
    let candidates = if baseline_only {
        Vec::new()
    } else {
        candidates(
            &base,
            &baseline,
            &anchors,
            &durations,
            &config.kinds,
            &names,
        )
    };
    let (activations, activation_of) = activations(&candidates);
    let space = Space {
        baseline_only,
        activations,
        activation_of,
        base,
        baseline_hash: baseline.trace_hash(),
        baseline_verdict: baseline.verdict(),
        anchors,
        message_anchors,
        candidates,
        durations,
        faults_max: config.faults_max,
    };
    if config.budget.is_none() && space.total() > PLANS_MAX {
        return Err(format!(
            "{} plans of at most {} faults ({} candidates) is more than {PLANS_MAX}: name fewer --kinds, fewer --faults, or give a --budget",
            space.total(),
            config.faults_max,
            space.candidates.len()
        ));
    }
    Ok(space)
}

/// The scenario's setup for the seed without its faults (random loss and duplication among
/// them), refused when it is invalid, unsafely timed (unless allowed), or not expressible.
fn fault_free(config: &ExploreConfig) -> Result<Setup, String> {
    let mut base = config
        .scenario
        .build(config.seed, config.machines.setup_variant());
    base.faults.clear();
    // Random loss and duplication are faults too: the heal phase stops them with the rest.
    base.net.drop_ppm = 0;
    base.net.dup_ppm = 0;
    base.check()
        .map_err(|e| format!("{}: {e}", config.scenario.name))?;
    if !config.allow_unsafe_timing {
        base.validate_timing().map_err(|e| {
            format!(
                "{}: {e}; pass --allow-unsafe-timing to run it anyway",
                config.scenario.name
            )
        })?;
    }
    config.machines.expressible(&base).map_err(|e| {
        format!(
            "{} cannot express {} seed {}: {e}",
            config.machines.name(),
            config.scenario.name,
            config.seed
        )
    })?;
    Ok(base)
}

/// The distinct activations of the candidates, and each candidate's among them.
fn activations(candidates: &[Candidate]) -> (Vec<Activation>, Vec<usize>) {
    // Candidates come anchor by anchor, so most share the activation of the one before.
    let mut activations: Vec<Activation> = Vec::new();
    let mut index: BTreeMap<String, usize> = BTreeMap::new();
    let mut activation_of = Vec::with_capacity(candidates.len());
    for c in candidates {
        let id = match activations.last() {
            Some(last) if *last == c.activation => activations.len() - 1,
            _ => *index
                .entry(format!("{:?}", c.activation))
                .or_insert_with(|| {
                    activations.push(c.activation);
                    activations.len() - 1
                }),
        };
        activation_of.push(id);
    }
    (activations, activation_of)
}

/// The baseline's anchors: message anchors first (in trace order), then journal anchors.
fn anchors(base: &Setup, baseline: &RunResult, names: &Names) -> (Vec<Anchor>, usize) {
    let (mut out, marked) = message_anchors(base, baseline, names);
    let message_anchors = out.len();
    journal_anchors(base, baseline, names, &marked, &mut out);
    (out, message_anchors)
}

/// The first send and the first delivery of each distinct message, and the (node, time) pairs
/// messages mark: a journal event there is anchored by the message.
fn message_anchors(
    base: &Setup,
    baseline: &RunResult,
    names: &Names,
) -> (Vec<Anchor>, BTreeSet<(NodeId, u64)>) {
    let mut seen: BTreeSet<(bool, String)> = BTreeSet::new();
    let mut out = Vec::new();
    // (node, time) pairs a message marks: a journal event there is anchored by the message.
    let mut marked: BTreeSet<(NodeId, u64)> = BTreeSet::new();
    for ev in &baseline.trace {
        let (sent, p) = match &ev.kind {
            EventKind::Send { to, msg, .. } => (true, identity(ev.node, *to, msg)),
            EventKind::Deliver { from, msg, .. } => (false, identity(*from, ev.node, msg)),
            _ => continue,
        };
        marked.insert((ev.node, ev.t));
        if !seen.insert((sent, format!("{p:?}"))) {
            continue;
        }
        let (from, to) = (p.from.unwrap_or(0), p.to.unwrap_or(0));
        let label = if sent {
            format!(
                "when {} sends {} to {}",
                names.node(from),
                names.message(&p),
                names.node(to)
            )
        } else {
            format!(
                "when {} receives {} from {}",
                names.node(to),
                names.message(&p),
                names.node(from)
            )
        };
        out.push(Anchor {
            trigger: if sent {
                Trigger::sent(p)
            } else {
                Trigger::delivered(p)
            },
            label,
            parties: [from, to]
                .into_iter()
                .filter(|&n| is_party(base, n))
                .collect(),
            t_ns: ev.t,
        });
    }
    (out, marked)
}

/// The first journal event of each name on each party that no message marks, anchored right
/// after it.
fn journal_anchors(
    base: &Setup,
    baseline: &RunResult,
    names: &Names,
    marked: &BTreeSet<(NodeId, u64)>,
    out: &mut Vec<Anchor>,
) {
    let mut journal: BTreeSet<(NodeId, &str)> = BTreeSet::new();
    for ev in &baseline.trace {
        let EventKind::Note { note } = &ev.kind else {
            continue;
        };
        if !is_party(base, ev.node)
            || !journal.insert((ev.node, note.name()))
            || marked.contains(&(ev.node, ev.t))
        {
            continue;
        }
        out.push(Anchor {
            trigger: Trigger::at(ev.t + 1),
            label: format!(
                "right after {} journals {} (at {})",
                names.node(ev.node),
                note.name(),
                secs(ev.t)
            ),
            parties: vec![ev.node],
            t_ns: ev.t + 1,
        });
    }
}

/// Every candidate fault, anchor by anchor, kind by kind; the same fault placed twice is kept
/// once.
fn candidates(
    base: &Setup,
    baseline: &RunResult,
    anchors: &[Anchor],
    durations: &[u64],
    kinds: &[Kind],
    names: &Names,
) -> Vec<Candidate> {
    let mut placer = Placer {
        base,
        durations,
        names,
        kinds,
        lease: base.classes.iter().map(|c| c.lease_ns).min().unwrap_or(0),
        workers: (0..base.workers.len())
            .map(|i| base.worker_node(i))
            .collect(),
        seen: BTreeSet::new(),
        out: Vec::new(),
    };
    for a in anchors {
        placer.at_anchor(a);
    }
    placer.tool_calls(baseline);
    placer.out
}

/// Places candidates in order, each distinct fault once and only of the chosen kinds.
struct Placer<'a> {
    base: &'a Setup,
    durations: &'a [u64],
    names: &'a Names,
    kinds: &'a [Kind],
    /// The shortest lease of any class.
    lease: u64,
    workers: Vec<NodeId>,
    seen: BTreeSet<String>,
    out: Vec<Candidate>,
}

/// Where a fault is placed: the anchor's trigger, in words, and what sets it off.
struct Spot<'a> {
    start: Trigger,
    activation: Activation,
    at: &'a str,
    /// The node that sends the anchoring message, if the anchor is a send.
    sender: Option<NodeId>,
}

impl Placer<'_> {
    fn push(&mut self, fault: Fault, kind: Kind, what: String, activation: Activation) {
        if self.kinds.contains(&kind) && self.seen.insert(format!("{fault:?}")) {
            self.out.push(Candidate {
                fault,
                label: what,
                kind,
                activation,
            });
        }
    }

    /// Every candidate at one anchor: on each party, on the anchored message, by the operator.
    fn at_anchor(&mut self, a: &Anchor) {
        let start = a.trigger;
        let spot = Spot {
            start,
            activation: match start {
                Trigger::Sent { pattern, .. } => Activation::Msg {
                    sent: true,
                    pattern,
                },
                Trigger::Delivered { pattern, .. } => Activation::Msg {
                    sent: false,
                    pattern,
                },
                Trigger::At { t_ns } => Activation::At { t_ns },
            },
            at: &a.label,
            sender: match start {
                Trigger::Sent { pattern, .. } => pattern.from,
                _ => None,
            },
        };
        for &n in &a.parties {
            for &d in self.durations {
                self.on_party_for(&spot, n, d);
            }
            if let Some(w) = self.workers.iter().position(|&x| x == n) {
                self.on_worker_clock(&spot, n, w);
            }
        }
        if let Trigger::Sent { pattern, .. } = start {
            self.on_message(&spot, pattern);
        }
        self.by_operator(&spot);
    }

    /// The faults that hit party `n` for `d`: its links cut, then the party itself stalled.
    fn on_party_for(&mut self, spot: &Spot, n: NodeId, d: u64) {
        self.cuts_for(spot, n, d);
        self.stalls_for(spot, n, d);
    }

    /// Party `n` isolated for `d`, then each of its links to a peer cut for `d`.
    fn cuts_for(&mut self, spot: &Spot, n: NodeId, d: u64) {
        let (start, activation, at) = (spot.start, spot.activation, spot.at);
        let names = self.names;
        let who = names.node(n).to_string();
        let ds = secs(d);
        self.push(
            Fault::new(start, FaultKind::Isolate { node: n }).until(start.after(d)),
            Kind::Isolate,
            format!("isolate {who} for {ds} {at}"),
            activation,
        );
        for peer in peers(self.base, n) {
            let (x, y) = (n.min(peer), n.max(peer));
            self.push(
                Fault::new(
                    start,
                    FaultKind::Partition {
                        a: x,
                        b: y,
                        one_way: false,
                    },
                )
                .until(start.after(d)),
                Kind::Partition,
                format!("cut {} <-> {} for {ds} {at}", names.node(x), names.node(y)),
                activation,
            );
        }
    }

    /// Party `n` paused, crashed or slowed for `d`, and a worker's monotonic clock jumped by `d`.
    fn stalls_for(&mut self, spot: &Spot, n: NodeId, d: u64) {
        let (start, activation, at) = (spot.start, spot.activation, spot.at);
        let who = self.names.node(n).to_string();
        let ds = secs(d);
        self.push(
            Fault::new(
                start,
                FaultKind::Pause {
                    node: n,
                    frozen: false,
                    duration_ns: d,
                    hold_anchor: spot.sender == Some(n),
                },
            ),
            Kind::Pause,
            format!("pause {who} for {ds} {at}"),
            activation,
        );
        self.push(
            Fault::new(
                start,
                FaultKind::Crash {
                    node: n,
                    restart_after_ns: Some(d),
                },
            ),
            Kind::Crash,
            format!("crash {who}, restart after {ds}, {at}"),
            activation,
        );
        self.push(
            Fault::new(
                start,
                FaultKind::Slow {
                    node: n,
                    extra_ns: d,
                },
            )
            .until(start.after(d)),
            Kind::Slow,
            format!("slow {who} by {ds} for {ds} {at}"),
            activation,
        );
        if self.workers.contains(&n) {
            self.push(
                Fault::new(
                    start,
                    FaultKind::ClockStep {
                        node: n,
                        delta_ns: i64::try_from(d).unwrap_or(i64::MAX),
                        wall: false,
                    },
                ),
                Kind::ClockStep,
                format!("jump {who}'s clock {ds} forward {at}"),
                activation,
            );
        }
    }

    /// Worker `w` (node `n`): its wall clock steps by 1.5 leases either way, and its drift is set
    /// at and beyond its bound.
    fn on_worker_clock(&mut self, spot: &Spot, n: NodeId, w: usize) {
        let (start, activation, at) = (spot.start, spot.activation, spot.at);
        let who = self.names.node(n).to_string();
        let step = i64::try_from(self.lease + self.lease / 2).unwrap_or(i64::MAX);
        for delta in [step, -step] {
            self.push(
                Fault::new(
                    start,
                    FaultKind::ClockStep {
                        node: n,
                        delta_ns: delta,
                        wall: true,
                    },
                ),
                Kind::ClockStep,
                format!(
                    "step {who}'s wall clock {}{} {at}",
                    if delta > 0 { "+" } else { "-" },
                    secs(delta.unsigned_abs())
                ),
                activation,
            );
        }
        let rho = i32::try_from(self.base.workers[w].config.drift_ppm_max.max(100))
            .unwrap_or(100_000)
            .min(20_000);
        for ppm in [rho, -rho, 20 * rho, -20 * rho] {
            self.push(
                Fault::new(
                    start,
                    FaultKind::Drift {
                        node: n,
                        drift_ppm: ppm,
                    },
                ),
                Kind::Drift,
                format!("set {who}'s drift to {ppm} ppm {at}"),
                activation,
            );
        }
    }

    /// The anchored message itself is dropped, delayed or duplicated.
    fn on_message(&mut self, spot: &Spot, pattern: MsgPattern) {
        let names = self.names;
        let msg = format!(
            "{} from {} to {}",
            names.message(&pattern),
            names.node(pattern.from.unwrap_or(0)),
            names.node(pattern.to.unwrap_or(0))
        );
        let mut actions = vec![(MsgAction::Drop, format!("drop the first {msg}"))];
        for &d in self.durations {
            actions.push((
                MsgAction::Delay { extra_ns: d },
                format!("delay the first {msg} by {}", secs(d)),
            ));
            actions.push((
                MsgAction::Duplicate { gap_ns: d },
                format!("duplicate the first {msg}, the copy {} later", secs(d)),
            ));
        }
        for (action, what) in actions {
            self.push(
                Fault::new(
                    spot.start,
                    FaultKind::Message {
                        pattern,
                        count: 1,
                        action,
                    },
                ),
                Kind::Message,
                what,
                spot.activation,
            );
        }
    }

    /// The operator revokes, cancels, or hands over each job to each worker.
    fn by_operator(&mut self, spot: &Spot) {
        let at = spot.at;
        for j in 0..self.base.jobs.len() {
            let job = JobId(j as u32);
            let mut actions = vec![
                (OperatorAction::Revoke, format!("revoke {job}")),
                (OperatorAction::Cancel, format!("cancel {job}")),
            ];
            for w in &self.base.workers {
                let to = w.config.name;
                if !actions
                    .iter()
                    .any(|(a, _)| *a == OperatorAction::Takeover { to })
                {
                    actions.push((
                        OperatorAction::Takeover { to },
                        format!("hand {job} over to {to}"),
                    ));
                }
            }
            for (action, what) in actions {
                self.push(
                    Fault::new(spot.start, FaultKind::Operator { job, action }),
                    Kind::Operator,
                    format!("operator: {what} {at}"),
                    spot.activation,
                );
            }
        }
    }

    /// Tool faults: on the first call of each worker at each plan step the baseline made.
    fn tool_calls(&mut self, baseline: &RunResult) {
        let tool = self.base.tool_node();
        let mut calls: BTreeSet<(NodeId, u8)> = BTreeSet::new();
        for ev in &baseline.trace {
            if let EventKind::Deliver {
                from,
                msg: Msg::ToolRequest { step, .. },
                ..
            } = &ev.kind
            {
                if ev.node == tool && calls.insert((*from, *step)) {
                    self.on_tool_call(tool, *from, *step);
                }
            }
        }
    }

    /// Worker `from`'s first call at `step` hangs, fails, loses its answer, or answers late.
    fn on_tool_call(&mut self, tool: NodeId, from: NodeId, step: u8) {
        let activation = Activation::Msg {
            sent: false,
            pattern: MsgPattern {
                from: Some(from),
                to: Some(tool),
                kind: Some(MsgKind::ToolRequest),
                step: Some(step),
                ..MsgPattern::default()
            },
        };
        let call = format!("{}'s first tool call at step {step}", self.names.node(from));
        let mut kinds_of: Vec<(ToolFaultKind, u64, String)> = vec![
            (ToolFaultKind::Hang, 0, "hangs".into()),
            (ToolFaultKind::Transient, 0, "fails transiently".into()),
            (ToolFaultKind::Permanent, 0, "fails for good".into()),
            (ToolFaultKind::AnswerLost, 0, "loses its answer".into()),
        ];
        for &d in self.durations {
            kinds_of.push((ToolFaultKind::Late, d, format!("answers {} late", secs(d))));
        }
        for (kind, late_ns, what) in kinds_of {
            self.push(
                Fault::untriggered(FaultKind::Tool {
                    worker: Some(from),
                    step: Some(step),
                    nth: 1,
                    kind,
                    late_ns,
                }),
                Kind::Tool,
                format!("{call} {what}"),
                activation,
            );
        }
    }
}

/// Which candidates' anchors a run reached, as a bit per candidate.
fn reached(space: &Space, r: &RunResult) -> Vec<u64> {
    let hit: Vec<bool> = space
        .activations
        .iter()
        .map(|a| match *a {
            Activation::At { t_ns } => t_ns <= r.end_ns,
            Activation::Msg { sent, pattern } => r.trace.iter().any(|ev| match &ev.kind {
                EventKind::Send { to, msg, .. } if sent => pattern.matches(ev.node, *to, msg),
                EventKind::Deliver { from, msg, .. } if !sent => {
                    pattern.matches(*from, ev.node, msg)
                }
                _ => false,
            }),
        })
        .collect();
    let mut bits = vec![0u64; space.candidates.len().div_ceil(64)];
    for (i, &a) in space.activation_of.iter().enumerate() {
        if hit[a] {
            bits[i / 64] |= 1 << (i % 64);
        }
    }
    bits
}

fn bit(bits: &[u64], i: usize) -> bool {
    bits[i / 64] >> (i % 64) & 1 == 1
}

/// What one single-fault run left for the pairs: whether it ended by itself, which anchors it
/// reached, and its outcome (a pruned pair has it).
#[derive(Clone)]
struct Single {
    done: bool,
    reached: Vec<u64>,
    outcome: Outcome,
}

/// A fingerprint of a run's whole trace for telling behaviours apart within one exploration:
/// SipHash with fixed keys over the same data as [`RunResult::trace_hash`], which is the stable
/// hash files record but hashes byte by byte, a quarter of a short run's time.
fn behaviour(r: &RunResult) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::hash::DefaultHasher::new();
    r.trace.hash(&mut h);
    h.finish()
}

/// One run's outcome, as the exploration counts it.
#[derive(Clone, Debug)]
struct Outcome {
    hash: u64,
    verdict: Verdict,
    invariants: Vec<Invariant>,
    hazards: Vec<leasesim_checkers::Hazard>,
}

impl Outcome {
    fn of(r: &RunResult) -> Outcome {
        let mut invariants: Vec<Invariant> = r.findings.iter().map(|f| f.invariant).collect();
        invariants.sort_by_key(|i| i.name());
        invariants.dedup();
        Outcome {
            hash: behaviour(r),
            verdict: r.verdict(),
            invariants,
            hazards: r.hazards.keys().copied().collect(),
        }
    }
}

/// A plan that broke an invariant.
#[derive(Clone, Debug)]
pub struct Violation {
    /// Its number in the space (plans needed to reach it: this + 1).
    pub plan: u64,
    /// Its faults in words.
    pub labels: Vec<String>,
    /// Its faults.
    pub faults: Vec<Fault>,
    /// The invariants it broke.
    pub invariants: Vec<Invariant>,
    /// Its behaviour's fingerprint (not the file's trace hash: see the replay for that).
    pub behaviour: u64,
}

/// Plans of one size.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Level {
    /// Plans of this size in the whole space.
    pub plans: u64,
    /// In this shard's (and budget's) share.
    pub share: u64,
    /// Run.
    pub ran: u64,
    /// Proved equal to a run of one fault fewer, so not run again.
    pub pruned: u64,
    /// Not expressible by the machines (skipped, never counted as held).
    pub not_expressible: u64,
}

/// Sees an exploration's progress.
pub trait Progress: Sync {
    /// `done` of `total` plans of the share are covered.
    fn advanced(&self, done: u64, total: u64);
}

/// Progress seen by no one.
pub struct Silent;

impl Progress for Silent {
    fn advanced(&self, _: u64, _: u64) {}
}

/// What an exploration found.
pub struct Explored {
    /// The space walked.
    pub space: Space,
    /// The kinds placed.
    pub kinds: Vec<Kind>,
    /// The seed.
    pub seed: u64,
    /// The machines' name.
    pub machines: String,
    /// The plans of this shard and budget (numbers into the space).
    pub share: Range<u64>,
    /// The shard, if any.
    pub shard: Option<Shard>,
    /// Per plan size (0 = the baseline).
    pub levels: Vec<Level>,
    /// Distinct traces (behaviours) among the plans covered.
    pub distinct: u64,
    /// Plans that broke at least one invariant.
    pub violating_plans: u64,
    /// Violating plans, per invariant (counted among the plans covered).
    pub violating: BTreeMap<&'static str, u64>,
    /// The first violating plans per invariant (at most [`KEPT_PER_INVARIANT`]), lowest number
    /// first.
    pub violations: BTreeMap<&'static str, Vec<Violation>>,
    /// The lowest-numbered violating plan.
    pub first_violation: Option<u64>,
    /// Plans that ended at a limit without a finding (runaways), lowest number first (at most
    /// [`KEPT_PER_INVARIANT`]), and their count.
    pub unfinished: (u64, Vec<u64>),
    /// Plans that reached each hazard.
    pub hazards: Hazards,
    /// Whether the stop flag ended it before its share was covered.
    pub interrupted: bool,
    /// Whether it stopped at its first violation before covering its share.
    pub stopped_at_violation: bool,
    /// Threads used.
    pub threads: usize,
    /// Wall time, seconds.
    pub seconds: f64,
}

impl Explored {
    /// Plans covered (run or pruned).
    pub fn covered(&self) -> u64 {
        self.levels.iter().map(|l| l.ran + l.pruned).sum()
    }

    /// Plans run.
    pub fn ran(&self) -> u64 {
        self.levels.iter().map(|l| l.ran).sum()
    }

    /// Plans pruned.
    pub fn pruned(&self) -> u64 {
        self.levels.iter().map(|l| l.pruned).sum()
    }

    /// Plans skipped as not expressible.
    pub fn not_expressible(&self) -> u64 {
        self.levels.iter().map(|l| l.not_expressible).sum()
    }

    /// Whether every plan of the whole space was covered (no shard, budget or interruption cut
    /// it, nothing skipped).
    pub fn exhaustive(&self) -> bool {
        !self.interrupted
            && !self.space.baseline_only
            && !self.stopped_at_violation
            && self.share == (0..self.space.total())
            && self.covered() == self.space.total()
            && self.not_expressible() == 0
    }

    /// Whether every plan covered held.
    pub fn held(&self) -> bool {
        self.first_violation.is_none() && self.unfinished.0 == 0
    }

    /// Plans needed to find the first violation (its number + 1).
    pub fn plans_needed(&self) -> Option<u64> {
        self.first_violation.map(|p| p + 1)
    }

    /// The sentence a reviewer can quote.
    pub fn claim(&self) -> String {
        let kinds: Vec<&str> = self.kinds.iter().map(|k| k.name()).collect();
        let scope = format!(
            "of at most {} fault(s) from {} at the {} anchors of {} seed {} on {}",
            self.space.faults_max,
            kinds.join(", "),
            self.space.anchors.len(),
            self.space.base.scenario,
            self.seed,
            self.machines
        );
        let sizes = format!(
            "{} plans, {} run, {} proved equal to a smaller plan, {} distinct runs",
            self.covered(),
            self.ran(),
            self.pruned(),
            self.distinct
        );
        if self.space.baseline_only {
            let broken: Vec<&str> = self.violating.keys().copied().collect();
            return format!(
                "the fault-free run of {} seed {} on {} already breaks {}: found at plan 1, no fault placed",
                self.space.base.scenario,
                self.seed,
                self.machines,
                if broken.is_empty() {
                    "nothing but ends at a limit".to_string()
                } else {
                    broken.join(", ")
                }
            );
        }
        if !self.exhaustive() {
            let total = self.space.total();
            let pct = if total == 0 {
                100.0
            } else {
                100.0 * self.covered() as f64 / total as f64
            };
            let mut s = format!(
                "NOT EXHAUSTIVE: {} of the {total} plans {scope} were covered ({pct:.2}%; {sizes})",
                self.covered()
            );
            if let Some(p) = self.plans_needed() {
                s.push_str(&format!(
                    "; the first violation was plan {p} of them in the space's order"
                ));
            }
            return s;
        }
        if self.held() {
            format!("no plan {scope} breaks I1-I8 ({sizes})")
        } else {
            let broken: Vec<&str> = self.violating.keys().copied().collect();
            format!(
                "{} of the plans {scope} break {} ({sizes}); the first is plan {}",
                self.violating_plans + self.unfinished.0,
                if broken.is_empty() {
                    "no invariant but end at a limit".to_string()
                } else {
                    broken.join(", ")
                },
                self.plans_needed()
                    .or(self.unfinished.1.first().map(|p| p + 1))
                    .unwrap_or(0)
            )
        }
    }

    /// The replay file of plan `index` (the seed, the setup with its faults, what it saw).
    pub fn replay(&self, index: u64, machines: &Machines, rerun: &str) -> Replay {
        let setup = self.space.setup_of(index);
        let r = run(&setup, self.seed, machines);
        let mut replay = Replay::record_on(&setup, self.seed, false, &r, machines, rerun);
        replay.allow_unsafe_timing = setup.validate_timing().is_err();
        replay
    }

    /// The first violating plan of `invariant` shrunk to its fewest faults by the shrinker.
    pub fn shrunk(
        &self,
        invariant: &str,
        machines: &Machines,
        rerun: &str,
    ) -> Option<Result<shrink::Shrunk, String>> {
        let v = self.violations.get(invariant)?.first()?;
        let replay = self.replay(v.plan, machines, rerun);
        Some(shrink::shrink_on(&replay, machines))
    }
}

/// What the threads share.
struct Shared {
    violating_plans: u64,
    hashes: BTreeSet<u64>,
    violating: BTreeMap<&'static str, u64>,
    violations: BTreeMap<&'static str, Vec<Violation>>,
    unfinished: (u64, Vec<u64>),
    hazards: Hazards,
    levels: Vec<Level>,
}

impl Shared {
    fn count(&mut self, space: &Space, index: u64, o: &Outcome, ran: bool) {
        let level = space.plan(index).len();
        if ran {
            self.levels[level].ran += 1;
        } else {
            self.levels[level].pruned += 1;
        }
        self.hashes.insert(o.hash);
        for h in &o.hazards {
            self.hazards.hit(*h);
        }
        if matches!(o.verdict, Verdict::Unfinished { .. }) {
            self.unfinished.0 += 1;
            let kept = &mut self.unfinished.1;
            kept.push(index);
            kept.sort_unstable();
            kept.truncate(KEPT_PER_INVARIANT);
        }
        if !o.invariants.is_empty() {
            self.violating_plans += 1;
        }
        for inv in &o.invariants {
            *self.violating.entry(inv.name()).or_default() += 1;
            let kept = self.violations.entry(inv.name()).or_default();
            if kept.len() >= KEPT_PER_INVARIANT && kept.last().is_some_and(|v| v.plan < index) {
                continue;
            }
            kept.push(Violation {
                plan: index,
                labels: space.labels(index),
                faults: space.setup_of(index).faults,
                invariants: o.invariants.clone(),
                behaviour: o.hash,
            });
            kept.sort_by_key(|v| v.plan);
            kept.truncate(KEPT_PER_INVARIANT);
        }
    }
}

/// Explores: builds the space, then covers the share on the thread pool. `stop` ends it
/// between two plans; `progress` sees it advance.
pub fn explore(
    config: &ExploreConfig,
    stop: &AtomicBool,
    progress: &dyn Progress,
) -> Result<Explored, String> {
    // The exploration's own duration, for its report; it reaches no run.
    #[allow(clippy::disallowed_methods)]
    let started = std::time::Instant::now();
    let space = space(config)?;
    let share = share_of(config, space.total())?;
    let threads = pool::threads(
        config.threads,
        share.end.saturating_sub(share.start).div_ceil(CHUNK),
    )?;
    let walk = Walk {
        space: &space,
        config,
        share: share.clone(),
        stop,
        progress,
        shared: Mutex::new(Shared {
            violating_plans: 0,
            hashes: BTreeSet::new(),
            violating: BTreeMap::new(),
            violations: BTreeMap::new(),
            unfinished: (0, Vec::new()),
            hazards: Hazards::default(),
            levels: levels_of(&space, config.faults_max, &share),
        }),
        first_violation: AtomicU64::new(u64::MAX),
        covered: AtomicU64::new(0),
    };
    walk.baseline();
    let singles = walk.singles(threads);
    walk.pairs(threads, &singles);
    let share_len = share.end - share.start;
    let interrupted = stop.load(Ordering::Relaxed);
    let first = walk.first_violation.load(Ordering::Relaxed);
    let sh = walk.shared.into_inner().unwrap_or_else(|p| p.into_inner());
    let covered_all: u64 = sh
        .levels
        .iter()
        .map(|l| l.ran + l.pruned + l.not_expressible)
        .sum();
    Ok(Explored {
        kinds: config.kinds.clone(),
        seed: config.seed,
        machines: config.machines.name().to_string(),
        share,
        shard: config.shard,
        levels: sh.levels,
        distinct: sh.hashes.len() as u64,
        violating_plans: sh.violating_plans,
        violating: sh.violating,
        violations: sh.violations,
        first_violation: (first != u64::MAX).then_some(first),
        unfinished: sh.unfinished,
        hazards: sh.hazards,
        interrupted: interrupted && covered_all < share_len,
        stopped_at_violation: config.stop_at_first_violation
            && first != u64::MAX
            && covered_all < share_len,
        threads,
        seconds: started.elapsed().as_secs_f64(),
        space,
    })
}

/// The plans this shard and budget cover, as numbers into a space of `total` plans.
fn share_of(config: &ExploreConfig, total: u64) -> Result<Range<u64>, String> {
    let mut share = match config.shard {
        Some(s) => s.slice(&[1], total),
        None => 0..total,
    };
    if let Some(b) = config.budget {
        if b == 0 {
            return Err("--budget must be at least 1 plan".into());
        }
        share.end = share.end.min(share.start.saturating_add(b));
    }
    Ok(share)
}

/// Each plan size's count in the space and in the share, none covered yet.
fn levels_of(space: &Space, faults_max: usize, share: &Range<u64>) -> Vec<Level> {
    let mut levels = vec![Level::default(); faults_max + 1];
    for (k, l) in levels.iter_mut().enumerate() {
        l.plans = space.plans_of(k);
        let first = (0..k).map(|j| space.plans_of(j)).sum::<u64>();
        let r = first..first + l.plans;
        l.share = r
            .end
            .min(share.end)
            .saturating_sub(r.start.max(share.start));
    }
    levels
}

/// One exploration's walk over its share: what every thread reads and what they count into.
struct Walk<'a> {
    space: &'a Space,
    config: &'a ExploreConfig,
    share: Range<u64>,
    stop: &'a AtomicBool,
    progress: &'a dyn Progress,
    shared: Mutex<Shared>,
    first_violation: AtomicU64,
    covered: AtomicU64,
}

impl Walk<'_> {
    fn lock(&self) -> std::sync::MutexGuard<'_, Shared> {
        self.shared.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn in_share(&self, i: u64) -> bool {
        self.share.contains(&i)
    }

    /// Runs plan `index`, unless the machines cannot express it.
    fn run_plan(&self, index: u64) -> Option<(RunResult, Outcome)> {
        let setup = self.space.setup_of(index);
        let machines = &self.config.machines;
        if machines.expressible(&setup).is_err() {
            return None;
        }
        let r = run(&setup, self.config.seed, machines);
        let o = Outcome::of(&r);
        Some((r, o))
    }

    /// Counts plan `index` covered with outcome `o`, run or pruned.
    fn note(&self, index: u64, o: &Outcome, ran: bool) {
        if !o.invariants.is_empty() {
            self.first_violation.fetch_min(index, Ordering::Relaxed);
        }
        self.lock().count(self.space, index, o, ran);
        let share_len = self.share.end - self.share.start;
        let done = self.covered.fetch_add(1, Ordering::Relaxed) + 1;
        if done % CHUNK == 0 || done == share_len {
            self.progress.advanced(done, share_len);
        }
    }

    /// Counts plan `index` covered as not expressible.
    fn skipped(&self, index: u64) {
        let level = self.space.plan(index).len();
        self.lock().levels[level].not_expressible += 1;
        self.covered.fetch_add(1, Ordering::Relaxed);
    }

    /// Whether plan `index` comes after a violation already found, when the walk stops there.
    fn beyond_first(&self, index: u64) -> bool {
        self.config.stop_at_first_violation && index > self.first_violation.load(Ordering::Relaxed)
    }

    fn baseline(&self) {
        if self.in_share(0) {
            match self.run_plan(0) {
                Some((r, o)) => {
                    self.note(0, &o, true);
                    crate::run::recycle(r);
                }
                None => self.skipped(0),
            }
        }
    }

    /// The single faults: every shard runs them all when pairs follow, since the pairs are
    /// pruned by what the single runs reached; what each left is returned for the pairs.
    fn singles(&self, threads: usize) -> Vec<Option<Single>> {
        let (share, space) = (&self.share, self.space);
        let n = space.candidates.len() as u64;
        let singles_needed = self.config.faults_max >= 2 && share.end > n + 1;
        let single_range = if singles_needed {
            0..n
        } else {
            let (lo, hi) = (share.start.max(1), share.end.min(n + 1));
            if lo < hi {
                lo - 1..hi - 1
            } else {
                0..0
            }
        };
        let singles: Vec<Mutex<Option<Single>>> = (0..n).map(|_| Mutex::new(None)).collect();
        let chunks = Chunks::new(single_range.end - single_range.start, CHUNK, self.stop);
        pool::run(threads, |_| {
            while let Some((_, items)) = chunks.take() {
                for item in items {
                    let c = single_range.start + item;
                    let index = c + 1;
                    if chunks.stopped() || self.beyond_first(index) {
                        break;
                    }
                    let Some((r, o)) = self.run_plan(index) else {
                        if self.in_share(index) {
                            self.skipped(index);
                        }
                        continue;
                    };
                    if self.in_share(index) && !self.beyond_first(index) {
                        self.note(index, &o, true);
                    }
                    if singles_needed {
                        *singles[c as usize]
                            .lock()
                            .unwrap_or_else(|p| p.into_inner()) = Some(Single {
                            done: r.end == End::Done,
                            reached: reached(space, &r),
                            outcome: o,
                        });
                    }
                    crate::run::recycle(r);
                }
            }
        });
        singles
            .into_iter()
            .map(|m| m.into_inner().unwrap_or_else(|p| p.into_inner()))
            .collect()
    }

    /// The pairs of the share, each pruned when a single run proves it equal, else run.
    fn pairs(&self, threads: usize, singles: &[Option<Single>]) {
        let pairs_start = self.space.candidates.len() as u64 + 1;
        let pairs = self.share.start.max(pairs_start)..self.share.end.max(pairs_start);
        if self.config.faults_max < 2 || pairs.is_empty() || self.stop.load(Ordering::Relaxed) {
            return;
        }
        let chunks = Chunks::new(pairs.end - pairs.start, CHUNK, self.stop);
        pool::run(threads, |_| {
            while let Some((_, items)) = chunks.take() {
                for item in items {
                    let index = pairs.start + item;
                    if chunks.stopped() || self.beyond_first(index) {
                        break;
                    }
                    let plan = self.space.plan(index);
                    let (i, j) = (plan[0], plan[1]);
                    // A fault whose anchor never happens in the other's run changes nothing.
                    let equal_to = match (&singles[i], &singles[j]) {
                        (Some(a), _) if a.done && !bit(&a.reached, j) => Some(a),
                        (_, Some(b)) if b.done && !bit(&b.reached, i) => Some(b),
                        _ => None,
                    };
                    match equal_to {
                        Some(s) => self.note(index, &s.outcome, false),
                        None => match self.run_plan(index) {
                            Some((r, o)) => {
                                self.note(index, &o, true);
                                // Its trace's storage serves the next plan on this thread.
                                crate::run::recycle(r);
                            }
                            None => self.skipped(index),
                        },
                    }
                }
            }
        });
    }
}
