//! The shrinker: delta debugging over a failing run's explicit plan. It drops faults (ddmin),
//! removes workers and jobs, shortens pauses, partitions, delays and outages, moves windowed
//! faults later, and quiets the network, keeping each change only if the same finding still
//! comes with the same seed: the same invariant, told by the same sentence (its numbers aside),
//! so that the shrunk run shows the bug it was shrunk from. What is left is a handful of faults
//! a reviewer can read.

use crate::machines::Machines;
use crate::plan::{Fault, FaultKind, MsgAction, Trigger};
use crate::replay::Replay;
use crate::run::run;
use crate::setup::Setup;
use leasesim_protocol::Invariant;
use leasesim_sim::NodeId;
use std::sync::atomic::{AtomicBool, Ordering};

/// Upper bound on candidate runs: shrinking always ends.
pub const RUNS_MAX: u64 = 20_000;
/// Upper bound on simulated events over every candidate run, so a file whose runs each take the
/// largest event budget still shrinks in bounded time (a few dozen runs of it).
pub const EVENTS_MAX: u64 = 100_000_000;

/// A shrunk failure.
pub struct Shrunk {
    /// The minimal replay (its expectation re-recorded).
    pub replay: Replay,
    /// The invariant kept failing.
    pub invariant: Invariant,
    /// Candidate runs tried.
    pub runs: u64,
    /// Faults before and after.
    pub faults_before: usize,
    /// The stop flag ended it before it was done: the replay is the smallest failing one
    /// found so far.
    pub stopped: bool,
}

struct Shrinker<'m> {
    seed: u64,
    invariant: Invariant,
    /// The first finding's sentence without its numbers: a candidate must tell the same story
    /// (the same finding at other times, tokens or names), not only break the same invariant.
    story: String,
    runs: u64,
    events: u64,
    machines: &'m Machines,
    stop: &'m AtomicBool,
}

impl Shrinker<'_> {
    /// Whether the run or event budget is used up, or a stop was asked for.
    fn spent(&self) -> bool {
        self.runs >= RUNS_MAX || self.events >= EVENTS_MAX || self.stopped()
    }

    fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    /// Whether `setup` still breaks the invariant (and is still a valid setup).
    fn fails(&mut self, setup: &Setup) -> bool {
        if self.spent() || setup.check().is_err() {
            return false;
        }
        self.runs += 1;
        let r = run(setup, self.seed, self.machines);
        self.events += r.events;
        r.findings
            .first()
            .is_some_and(|f| f.invariant == self.invariant && story(&f.message) == self.story)
    }

    /// Classic ddmin over the fault list: try removing chunks, then finer chunks.
    fn ddmin_faults(&mut self, setup: &mut Setup) {
        let mut n = 2usize;
        while setup.faults.len() >= 2 && !self.spent() {
            let len = setup.faults.len();
            let chunk = len.div_ceil(n);
            let mut reduced = false;
            for start in (0..len).step_by(chunk) {
                let mut candidate = setup.clone();
                candidate.faults.drain(start..(start + chunk).min(len));
                if self.fails(&candidate) {
                    *setup = candidate;
                    n = (n - 1).max(2);
                    reduced = true;
                    break;
                }
            }
            if !reduced {
                if n >= len {
                    break;
                }
                n = (n * 2).min(len);
            }
        }
        // A last pass: each single fault.
        let mut i = 0;
        while i < setup.faults.len() && !self.spent() {
            let mut candidate = setup.clone();
            candidate.faults.remove(i);
            if self.fails(&candidate) {
                *setup = candidate;
            } else {
                i += 1;
            }
        }
    }

    fn drop_workers(&mut self, setup: &mut Setup) {
        let mut i = setup.workers.len();
        while i > 0 && setup.workers.len() > 1 && !self.spent() {
            i -= 1;
            if let Some(candidate) = without_worker(setup, i) {
                if self.fails(&candidate) {
                    *setup = candidate;
                }
            }
        }
    }

    fn drop_jobs(&mut self, setup: &mut Setup) {
        while setup.jobs.len() > 1 && !self.spent() {
            let mut candidate = setup.clone();
            // Halve, then one at a time.
            let keep = (candidate.jobs.len() / 2).max(1);
            let mut progressed = false;
            for keep in [keep, candidate.jobs.len() - 1] {
                candidate = setup.clone();
                candidate.jobs.truncate(keep);
                candidate.faults.retain(|f| match f.kind {
                    FaultKind::Operator { job, .. } => (job.0 as usize) < keep,
                    _ => true,
                });
                if self.fails(&candidate) {
                    *setup = candidate.clone();
                    progressed = true;
                    break;
                }
            }
            if !progressed {
                break;
            }
        }
    }

    /// Shorter, smaller, later versions of each fault.
    fn simplify_faults(&mut self, setup: &mut Setup) {
        for i in 0..setup.faults.len() {
            // Each simplification is tried a few times (halving converges quickly).
            for _ in 0..8 {
                let mut progressed = false;
                for f in simpler(&setup.faults[i]) {
                    let mut candidate = setup.clone();
                    candidate.faults[i] = f;
                    if self.fails(&candidate) {
                        *setup = candidate;
                        progressed = true;
                        break;
                    }
                }
                if !progressed || self.spent() {
                    break;
                }
            }
        }
    }

    fn quiet_network(&mut self, setup: &mut Setup) {
        if setup.net.drop_ppm == 0 && setup.net.dup_ppm == 0 {
            return;
        }
        let mut candidate = setup.clone();
        candidate.net.drop_ppm = 0;
        candidate.net.dup_ppm = 0;
        if self.fails(&candidate) {
            *setup = candidate;
        }
    }
}

/// A duration, delay or step this short is not worth halving further.
const TINY_NS: u64 = 1_000_000;

/// Simpler versions of a fault, most aggressive first.
// Long: one arm per fault kind, each listing its few simpler versions; split, each would be a list of one or two.
fn simpler(f: &Fault) -> Vec<Fault> {
    let mut out = Vec::new();
    let mut kind = |k: FaultKind| out.push(f.with_kind(k));
    match f.kind {
        FaultKind::Pause {
            node,
            frozen,
            duration_ns,
            hold_anchor,
        } => {
            if duration_ns > TINY_NS {
                kind(FaultKind::Pause {
                    node,
                    frozen,
                    duration_ns: duration_ns / 2,
                    hold_anchor,
                });
            }
            if frozen {
                kind(FaultKind::Pause {
                    node,
                    frozen: false,
                    duration_ns,
                    hold_anchor,
                });
            }
        }
        FaultKind::Crash {
            node,
            restart_after_ns: Some(d),
        } if d > TINY_NS => kind(FaultKind::Crash {
            node,
            restart_after_ns: Some(d / 2),
        }),
        FaultKind::Partition { a, b, one_way } => {
            out.extend(shorter_windows(f));
            if !one_way {
                out.push(f.with_kind(FaultKind::Partition {
                    a,
                    b,
                    one_way: true,
                }));
            }
        }
        FaultKind::Isolate { .. } => out.extend(shorter_windows(f)),
        FaultKind::Slow { node, extra_ns } => {
            if extra_ns > TINY_NS {
                kind(FaultKind::Slow {
                    node,
                    extra_ns: extra_ns / 2,
                });
            }
            out.extend(shorter_windows(f));
        }
        FaultKind::Message {
            pattern,
            count,
            action,
        } => {
            if count != 1 {
                kind(FaultKind::Message {
                    pattern,
                    count: 1,
                    action,
                });
            }
            let smaller = match action {
                MsgAction::Delay { extra_ns } if extra_ns > TINY_NS => Some(MsgAction::Delay {
                    extra_ns: extra_ns / 2,
                }),
                MsgAction::Duplicate { gap_ns } if gap_ns > TINY_NS => {
                    Some(MsgAction::Duplicate { gap_ns: gap_ns / 2 })
                }
                // A hold released at a fixed time lets go sooner.
                MsgAction::Hold {
                    release: Trigger::At { t_ns },
                } => match f.start {
                    Some(Trigger::At { t_ns: s }) if t_ns > s + TINY_NS => Some(MsgAction::Hold {
                        release: Trigger::at(s + (t_ns - s) / 2),
                    }),
                    _ => None,
                },
                _ => None,
            };
            if let Some(action) = smaller {
                kind(FaultKind::Message {
                    pattern,
                    count,
                    action,
                });
            }
        }
        FaultKind::ClockStep {
            node,
            delta_ns,
            wall,
        } if delta_ns.unsigned_abs() > TINY_NS => kind(FaultKind::ClockStep {
            node,
            delta_ns: delta_ns / 2,
            wall,
        }),
        FaultKind::Drift { node, drift_ppm } if drift_ppm.unsigned_abs() > 1 => {
            kind(FaultKind::Drift {
                node,
                drift_ppm: drift_ppm / 2,
            })
        }
        FaultKind::Tool {
            worker,
            step,
            nth,
            kind: what,
            late_ns,
        } if late_ns > TINY_NS => kind(FaultKind::Tool {
            worker,
            step,
            nth,
            kind: what,
            late_ns: late_ns / 2,
        }),
        _ => {}
    }
    out
}

/// Shorter windows for a fault that starts and ends at fixed times: end earlier, or start
/// later (the fault moved later and shorter).
fn shorter_windows(f: &Fault) -> Vec<Fault> {
    match (f.start, f.end) {
        (Some(Trigger::At { t_ns: s }), Some(Trigger::At { t_ns: e })) if e > s + TINY_NS => {
            let mid = Trigger::at(s + (e - s) / 2);
            vec![
                Fault {
                    end: Some(mid),
                    ..*f
                },
                Fault {
                    start: Some(mid),
                    ..*f
                },
            ]
        }
        _ => Vec::new(),
    }
}

/// The setup without worker `index`, its node ids renumbered; faults that name it are dropped.
pub fn without_worker(setup: &Setup, index: usize) -> Option<Setup> {
    if setup.workers.len() <= 1 || index >= setup.workers.len() {
        return None;
    }
    let removed = setup.worker_node(index);
    let map = |n: NodeId| -> Option<NodeId> {
        match n.cmp(&removed) {
            std::cmp::Ordering::Less => Some(n),
            std::cmp::Ordering::Equal => None,
            std::cmp::Ordering::Greater => Some(n - 1),
        }
    };
    let mut s = setup.clone();
    s.workers.remove(index);
    s.faults = setup
        .faults
        .iter()
        .filter_map(|f| f.map_nodes(map))
        .collect();
    Some(s)
}

/// Shrinks a failing replay of leasesim's own machines while its first broken invariant keeps
/// failing.
pub fn shrink(replay: &Replay) -> Result<Shrunk, String> {
    shrink_on(replay, &Machines::variant(replay.setup.variant))
}

/// Shrinks a failing replay on `machines` (the ones it was recorded with) while its first
/// broken invariant keeps failing; the shrunk replay records the same machines.
pub fn shrink_on(replay: &Replay, machines: &Machines) -> Result<Shrunk, String> {
    shrink_until(replay, machines, &AtomicBool::new(false))
}

/// [`shrink_on`] until `stop` is set: it then ends after the candidate run under way, with the
/// smallest failing replay found so far ([`Shrunk::stopped`]).
pub fn shrink_until(
    replay: &Replay,
    machines: &Machines,
    stop: &AtomicBool,
) -> Result<Shrunk, String> {
    let original = replay.run_on(machines)?;
    let Some(first) = original.findings.first() else {
        return Err(format!(
            "the run does not break any invariant (verdict {:?}); there is nothing to shrink",
            original.verdict()
        ));
    };
    let mut sh = Shrinker {
        seed: replay.seed,
        invariant: first.invariant,
        story: story(&first.message),
        runs: 0,
        events: original.events,
        machines,
        stop,
    };
    let mut setup = replay.setup.clone();
    let faults_before = setup.faults.len();
    // Rounds until nothing changes (bounded by the run budget and a round limit).
    for _ in 0..8 {
        let before = setup.clone();
        sh.ddmin_faults(&mut setup);
        sh.drop_workers(&mut setup);
        sh.drop_jobs(&mut setup);
        sh.simplify_faults(&mut setup);
        sh.quiet_network(&mut setup);
        if setup == before || sh.spent() {
            break;
        }
    }
    let stopped = sh.stopped();
    let result = run(&setup, replay.seed, machines);
    let mut shrunk = Replay::record(&setup, replay.seed, replay.allow_unsafe_timing, &result);
    shrunk.note = replay.note.clone();
    shrunk.machines = replay.machines.clone();
    Ok(Shrunk {
        replay: shrunk,
        invariant: sh.invariant,
        runs: sh.runs,
        faults_before,
        stopped,
    })
}

/// A finding's sentence with its numbers (times, tokens, seeds, node and job numbers) left
/// out: what stays is the story it tells.
pub fn story(message: &str) -> String {
    message.chars().filter(|c| !c.is_ascii_digit()).collect()
}

/// A fault in one readable line: as a replay file writes it.
pub fn describe(f: &Fault) -> String {
    crate::replay::fault_line(f)
}

/// How a finding rests on one fault of its plan, found by running the plan without it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Dependence {
    /// The fault's place in the plan.
    pub fault: usize,
    /// Whether the finding goes away without it: the finding depends on it.
    pub needed: bool,
    /// The nodes the fault acts on (not those its triggers name).
    pub acts_on: Vec<NodeId>,
}

/// Which faults of `setup`'s plan the first finding of `invariant` depends on: each fault left
/// out in turn, one run each (at most [`DEPENDENCE_FAULTS_MAX`] faults). A fault the finding
/// needs but that acts on other nodes than the finding's may only set the stage (keep a job
/// running long enough); the reader sees which from the nodes. `None` when the plan does not
/// break `invariant`.
pub fn depends_on(
    setup: &Setup,
    seed: u64,
    machines: &Machines,
    invariant: Invariant,
) -> Option<(leasesim_protocol::Finding, Vec<Dependence>)> {
    let full = run(setup, seed, machines);
    let finding = full
        .findings
        .iter()
        .find(|f| f.invariant == invariant)?
        .clone();
    let deps = (0..setup.faults.len().min(DEPENDENCE_FAULTS_MAX))
        .map(|i| {
            let mut without = setup.clone();
            let fault = without.faults.remove(i);
            let r = run(&without, seed, machines);
            Dependence {
                fault: i,
                needed: !r.findings.iter().any(|f| f.invariant == invariant),
                acts_on: fault.kind.acts_on(),
            }
        })
        .collect();
    Some((finding, deps))
}

/// Faults [`depends_on`] tries leaving out: a minimal plan has a handful.
pub const DEPENDENCE_FAULTS_MAX: usize = 16;

/// One line per fault on what the finding owes it, with nodes named by `names`: `fault 1
/// (slow): needed: without it nothing breaks no-double-effect; it acts on W1, not on recv where
/// the finding is: it sets the stage, and the finding is recv's own doing`.
pub fn describe_dependence(
    setup: &Setup,
    finding: &leasesim_protocol::Finding,
    deps: &[Dependence],
    names: &dyn Fn(NodeId) -> String,
) -> Vec<String> {
    let on = names(finding.node);
    let invariant = finding.invariant.name();
    deps.iter()
        .map(|d| {
            let acts: Vec<String> = d.acts_on.iter().map(|&n| names(n)).collect();
            let acts = if acts.is_empty() {
                "names no node".to_string()
            } else {
                format!("acts on {}", acts.join(", "))
            };
            let what = match (d.needed, d.acts_on.contains(&finding.node)) {
                (false, _) => format!("not needed: without it {invariant} still breaks"),
                (true, _) if d.acts_on.is_empty() => {
                    format!("needed: without it nothing breaks {invariant}")
                }
                (true, true) => format!(
                    "needed: without it nothing breaks {invariant}; it {acts}, where the finding is"
                ),
                (true, false) => format!(
                    "needed: without it nothing breaks {invariant}; it {acts}, not on {on} where the finding is: it sets the stage, and the finding is {on}'s own doing"
                ),
            };
            format!("fault {} ({}): {what}", d.fault + 1, fault_kind(&setup.faults[d.fault]))
        })
        .collect()
}

/// A fault's kind as a replay file names it (`slow`, `partition`).
fn fault_kind(f: &Fault) -> String {
    let line = describe(f);
    serde_json::from_str::<serde_json::Value>(&line)
        .ok()
        .and_then(|v| v["fault"].as_str().map(str::to_string))
        .unwrap_or(line)
}
