//! What `leasesim explore` found, kept and said: each violated invariant's first plan shrunk and
//! saved as a replay with its HTML timeline ([`save`]), and the JSON document ([`json`]).

use leasesim::explore::Explored;
use leasesim::files::OutDir;
use leasesim::replay::Replay;
use leasesim::{report, Invariant, Machines, RunResult};
use std::path::PathBuf;

/// What was saved for one violated invariant.
pub struct Saved {
    /// The invariant, by name.
    pub invariant: &'static str,
    /// The shrunk plan's faults, one a line.
    pub shrunk: Option<String>,
    /// Faults of the first violating plan.
    pub faults_before: usize,
    /// Faults left after shrinking.
    pub faults_after: usize,
    /// The replay file written.
    pub replay: Option<PathBuf>,
    /// The HTML timeline written.
    pub html: Option<PathBuf>,
    /// Per fault of the minimal plan, what the finding owes it (a run without it each).
    pub depends: Vec<String>,
    /// What could not be shrunk or written.
    pub error: Option<String>,
}

/// For each violated invariant: its first plan shrunk by the shrinker, saved as a replay file
/// with its HTML timeline beside it.
pub fn save(dir: &OutDir, x: &Explored, machines: &Machines, scenario: &str) -> Vec<Saved> {
    let mut out = Vec::new();
    for (&invariant, kept) in &x.violations {
        let Some(v) = kept.first() else { continue };
        let stem = format!(
            "explore-{scenario}-{}-seed{}-{invariant}",
            leasesim_reports::matrix::file_stem(machines.name()),
            x.seed
        );
        let path = dir.path.join(format!("{stem}.json"));
        let rerun = leasesim::run::rerun_command(machines, scenario, &path);
        let mut s = Saved {
            invariant,
            shrunk: None,
            faults_before: v.faults.len(),
            faults_after: v.faults.len(),
            replay: None,
            html: None,
            depends: Vec::new(),
            error: None,
        };
        let replay = match x.shrunk(invariant, machines, &rerun) {
            Some(Ok(shrunk)) => {
                s.faults_after = shrunk.replay.setup.faults.len();
                s.shrunk = Some(
                    shrunk
                        .replay
                        .setup
                        .faults
                        .iter()
                        .map(leasesim::shrink::describe)
                        .collect::<Vec<_>>()
                        .join("\n"),
                );
                shrunk.replay
            }
            Some(Err(e)) => {
                s.error = Some(e);
                x.replay(v.plan, machines, &rerun)
            }
            None => continue,
        };
        match replay.save(&path) {
            Ok(()) => s.replay = Some(path.clone()),
            Err(e) => s.error = Some(e),
        }
        if let Ok(r) = replay.run_on(machines) {
            s.depends = dependence(&replay, &r, machines, invariant);
            let (html, _) = report::render(
                &r,
                &report::title(&replay.setup, replay.seed),
                &format!("explore: {invariant}, plan {} shrunk", v.plan + 1),
            );
            let h = dir.path.join(format!("{stem}.html"));
            match leasesim::files::write(&h, html) {
                Ok(()) => s.html = Some(h),
                Err(e) => s.error = Some(format!("cannot write {}: {e}", h.display())),
            }
        }
        out.push(s);
    }
    out
}

/// What the broken invariant's finding depends on in the replay's run, in words (empty when
/// nothing is found).
fn dependence(replay: &Replay, r: &RunResult, machines: &Machines, invariant: &str) -> Vec<String> {
    let broken = Invariant::ALL.iter().find(|i| i.name() == invariant);
    let Some((finding, deps)) =
        broken.and_then(|&i| leasesim::shrink::depends_on(&replay.setup, replay.seed, machines, i))
    else {
        return Vec::new();
    };
    let name = |n: leasesim_sim::NodeId| {
        r.nodes
            .get(n as usize)
            .map_or(format!("node {n}"), |x| x.name.clone())
    };
    leasesim::shrink::describe_dependence(&replay.setup, &finding, &deps, &name)
}

/// The JSON document of an exploration (`leasesim explore --format json`).
pub fn json(x: &Explored, saved: &[Saved]) -> serde_json::Value {
    let sp = &x.space;
    serde_json::json!({
        "scenario": sp.base.scenario,
        "seed": x.seed,
        "machines": x.machines,
        "faults_max": sp.faults_max,
        "kinds": x.kinds.iter().map(|k| k.name()).collect::<Vec<_>>(),
        "anchors": sp.anchors.len(),
        "message_anchors": sp.message_anchors,
        "candidates": sp.candidates.len(),
        "durations_ns": sp.durations,
        "baseline": { "verdict": sp.baseline_verdict.word(), "trace_hash": format!("{:016x}", sp.baseline_hash) },
        "space": sp.total(),
        "shard": x.shard.map(|s| s.to_string()),
        "share": [x.share.start, x.share.end],
        "levels": x.levels.iter().enumerate().map(|(k, l)| serde_json::json!({
            "faults": k, "plans": l.plans, "share": l.share, "ran": l.ran, "pruned": l.pruned,
            "not_expressible": l.not_expressible,
        })).collect::<Vec<_>>(),
        "covered": x.covered(),
        "ran": x.ran(),
        "distinct_runs": x.distinct,
        "exhaustive": x.exhaustive(),
        "held": x.held(),
        "interrupted": x.interrupted,
        "plans_needed": x.plans_needed(),
        "violations": x.violating.iter().map(|(inv, n)| {
            let first = &x.violations[inv][0];
            let s = saved.iter().find(|s| s.invariant == *inv);
            serde_json::json!({
                "invariant": inv,
                "plans": n,
                "first_plan": first.plan + 1,
                "faults": first.labels,
                "shrunk_faults": s.map(|s| s.faults_after),
                "depends_on": s.map(|s| s.depends.clone()),
                "replay": s.and_then(|s| s.replay.as_ref()).map(|p| p.display().to_string()),
                "html": s.and_then(|s| s.html.as_ref()).map(|p| p.display().to_string()),
            })
        }).collect::<Vec<_>>(),
        "unfinished": x.unfinished.0,
        "hazards": x.hazards.iter().map(|(h, n)| (h.name().to_string(), serde_json::json!(n))).collect::<serde_json::Map<_, _>>(),
        "seconds": x.seconds,
        "threads": x.threads,
        "claim": x.claim(),
    })
}
