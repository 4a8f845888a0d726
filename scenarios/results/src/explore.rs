//! What `leasesim explore` found, kept and said: each violated invariant's first plan shrunk and
//! saved as a replay with its HTML timeline ([`save`]), the JSON document ([`json`]) and the
//! words `explore` prints ([`text`]).

use leasesim::explore::Explored;
use leasesim::files::OutDir;
use leasesim::replay::Replay;
use leasesim::{report, Invariant, Machines, RunResult};
use std::io::Write;
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

/// The exploration in words: the space, what was covered, each violated invariant with its
/// first plan and what was saved of it, and the claim the exploration makes.
pub fn text(
    out: &mut dyn Write,
    x: &Explored,
    saved: &[Saved],
    machines: &Machines,
) -> std::io::Result<()> {
    space_text(out, x)?;
    covered_text(out, x)?;
    for (invariant, n) in &x.violating {
        violation_text(out, x, invariant, *n, saved, machines)?;
    }
    if x.unfinished.0 > 0 {
        writeln!(
            out,
            "UNFINISHED: {} plan(s) ended at a limit without a finding; the first is plan {}",
            thousands(x.unfinished.0),
            x.unfinished.1.first().map_or(0, |p| p + 1)
        )?;
    }
    if x.interrupted {
        writeln!(
            out,
            "explore: INTERRUPTED after {} of {} plans",
            thousands(x.covered()),
            thousands(x.share.end - x.share.start)
        )?;
    }
    writeln!(out, "{}", x.claim())?;
    Ok(())
}

/// The space explored: the scenario, the baseline run, the plans by number of faults.
fn space_text(out: &mut dyn Write, x: &Explored) -> std::io::Result<()> {
    let sp = &x.space;
    let kinds: Vec<&str> = x.kinds.iter().map(|k| k.name()).collect();
    let durations: Vec<String> = sp
        .durations
        .iter()
        .map(|&d| leasesim_sim::time::secs_rounded(d.into(), leasesim_sim::time::Round::Nearest))
        .collect();
    writeln!(
        out,
        "explore {} seed {} on {}: plans of at most {} fault(s) from {}",
        sp.base.scenario,
        x.seed,
        x.machines,
        sp.faults_max,
        kinds.join(", ")
    )?;
    writeln!(
        out,
        "baseline (no fault): {}, trace {:016x}; {} anchors ({} message sends and deliveries, {} journal events); {} candidate faults; durations {}",
        sp.baseline_verdict.word(),
        sp.baseline_hash,
        sp.anchors.len(),
        sp.message_anchors,
        sp.anchors.len() - sp.message_anchors,
        thousands(sp.candidates.len() as u64),
        durations.join(", ")
    )?;
    let sizes: Vec<String> = (0..=sp.faults_max)
        .map(|k| thousands(sp.plans_of(k)))
        .collect();
    writeln!(
        out,
        "space: {} = {} plans",
        sizes.join(" + "),
        thousands(sp.total())
    )?;
    for (k, l) in x.levels.iter().enumerate() {
        writeln!(
            out,
            "  {k} fault(s): {:>11} plans, {:>11} run, {:>11} proved equal to a run of one fault fewer{}",
            thousands(l.share),
            thousands(l.ran),
            thousands(l.pruned),
            if l.not_expressible > 0 {
                format!(", {} not expressible", thousands(l.not_expressible))
            } else {
                String::new()
            }
        )?;
    }
    Ok(())
}

/// How much of the space was covered, how fast, and the hazards its plans reached.
fn covered_text(out: &mut dyn Write, x: &Explored) -> std::io::Result<()> {
    writeln!(
        out,
        "covered {} plans ({} run) on {} thread(s) in {:.2}s ({:.0} runs/s): {} distinct runs (traces)",
        thousands(x.covered()),
        thousands(x.ran()),
        x.threads,
        x.seconds,
        x.ran() as f64 / x.seconds.max(1e-9),
        thousands(x.distinct)
    )?;
    let hazards: Vec<String> = x
        .hazards
        .iter()
        .map(|(h, n)| format!("{} ({})", h.name(), thousands(*n)))
        .collect();
    writeln!(
        out,
        "hazards reached (plans): {}",
        if hazards.is_empty() {
            "none".to_string()
        } else {
            hazards.join(", ")
        }
    )?;
    Ok(())
}

/// One violated invariant: how many plans broke it, the first of them, and what was saved of
/// it (the shrunk plan, what the finding depends on, the replay and the timeline).
fn violation_text(
    out: &mut dyn Write,
    x: &Explored,
    invariant: &str,
    n: u64,
    saved: &[Saved],
    machines: &Machines,
) -> std::io::Result<()> {
    let first = &x.violations[invariant][0];
    writeln!(
        out,
        "VIOLATED {invariant}: {} plan(s); the first is plan {} of the space:",
        thousands(n),
        first.plan + 1
    )?;
    for l in &first.labels {
        writeln!(out, "    {l}")?;
    }
    let Some(s) = saved.iter().find(|s| s.invariant == invariant) else {
        return Ok(());
    };
    if let Some(sh) = &s.shrunk {
        writeln!(
            out,
            "  minimal plan (shrunk, {} fault(s) -> {}):",
            s.faults_before, s.faults_after
        )?;
        for l in sh.lines() {
            writeln!(out, "    {l}")?;
        }
    }
    if !s.depends.is_empty() {
        writeln!(
            out,
            "  what the finding depends on (the minimal plan run without each fault):"
        )?;
        for l in &s.depends {
            writeln!(out, "    {l}")?;
        }
    }
    if let Some(p) = &s.replay {
        writeln!(
            out,
            "  replay: {}",
            leasesim::run::rerun_command(machines, &x.space.base.scenario, p)
        )?;
    }
    if let Some(h) = &s.html {
        writeln!(out, "  timeline: {}", h.display())?;
    }
    if let Some(e) = &s.error {
        writeln!(out, "  note: {e}")?;
    }
    Ok(())
}

/// A count with thousands separated by commas: `920,047`.
pub fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}
