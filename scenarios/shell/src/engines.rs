//! The engines a run can use: the discrete-event simulator (the default), the async shell on
//! madsim (the madsim build), and the async shell on real tokio (the normal build, for plans
//! without process pauses or crashes). All record the same trace type and are judged by the
//! same checkers.

use crate::{ShellRun, ShellStats};
use leasesim::machines::Machines;
use leasesim::run::RunResult;
use leasesim::setup::Setup;
use serde::Serialize;

/// An engine.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Engine {
    /// The discrete-event simulator.
    Sim,
    /// The async shell on madsim nodes.
    Madsim,
    /// The async shell on real tokio (paused clock, in-memory network).
    Tokio,
}

/// The command that builds and runs `leasesim` with the madsim engine (docs/performance.md).
pub const MADSIM_CARGO: &str = "cargo madsim";

impl Engine {
    /// Its name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Engine::Sim => "sim",
            Engine::Madsim => "madsim",
            Engine::Tokio => "tokio",
        }
    }

    /// Parses a command-line name.
    pub fn parse(s: &str) -> Option<Engine> {
        [Engine::Sim, Engine::Madsim, Engine::Tokio]
            .into_iter()
            .find(|e| e.name() == s)
    }

    /// The engine `--engine NAME` names, if this build has it; else the one-line reason.
    pub fn named(name: &str) -> Result<Engine, String> {
        let engine = Engine::parse(name)
            .ok_or_else(|| format!("unknown engine {name:?}: expected sim, madsim or tokio"))?;
        engine.available()?;
        Ok(engine)
    }

    /// The async-shell engine this build has: madsim in the madsim build, real tokio otherwise.
    pub fn shell() -> Engine {
        if cfg!(madsim) {
            Engine::Madsim
        } else {
            Engine::Tokio
        }
    }

    /// Whether this build has the engine; if not, why and what to run instead.
    pub fn available(self) -> Result<(), String> {
        match (self, cfg!(madsim)) {
            (Engine::Sim, _) | (Engine::Madsim, true) | (Engine::Tokio, false) => Ok(()),
            (Engine::Madsim, false) => Err(format!(
                "the madsim engine is in the madsim build: run `{MADSIM_CARGO} <command> ...` (docs/performance.md, \"The madsim engine\")"
            )),
            (Engine::Tokio, true) => Err(
                "the real-tokio engine is in the normal build (`cargo run --release -- ...`); this is the madsim build".into(),
            ),
        }
    }

    /// Whether the engine can express this setup's fault plan; if not, why.
    #[cfg_attr(madsim, allow(unused_variables))]
    pub fn supports(self, setup: &Setup) -> Result<(), String> {
        self.available()?;
        match self {
            #[cfg(not(madsim))]
            Engine::Tokio => match crate::local::unsupported(setup) {
                Some(why) => Err(why),
                None => Ok(()),
            },
            _ => Ok(()),
        }
    }
}

/// One run on some engine.
#[derive(Clone, Debug)]
pub struct EngineRun {
    /// The engine.
    pub engine: Engine,
    /// The judged run.
    pub result: RunResult,
    /// What the async shell did (none for the simulator).
    pub stats: Option<ShellStats>,
    /// Where the engine did not do what its trace says (must stay empty).
    pub problems: Vec<String>,
}

impl EngineRun {
    fn shell(engine: Engine, run: ShellRun) -> EngineRun {
        EngineRun {
            engine,
            result: run.result,
            stats: Some(run.stats),
            problems: run.problems,
        }
    }
}

/// Runs `setup` with `seed` on `machines` on `engine`.
pub fn run(
    engine: Engine,
    setup: &Setup,
    seed: u64,
    machines: &Machines,
) -> Result<EngineRun, String> {
    engine.supports(setup)?;
    match engine {
        Engine::Sim => Ok(EngineRun {
            engine,
            result: leasesim::run::run(setup, seed, machines),
            stats: None,
            problems: Vec::new(),
        }),
        #[cfg(madsim)]
        Engine::Madsim => Ok(EngineRun::shell(
            engine,
            crate::madsim::run(setup, seed, machines),
        )),
        #[cfg(not(madsim))]
        Engine::Tokio => {
            crate::local::run(setup, seed, machines).map(|r| EngineRun::shell(engine, r))
        }
        _ => unreachable!("availability was checked"),
    }
}

/// The engine's determinism check: for madsim, madsim's own (every random draw of a second run
/// compared with the first, on fresh threads) followed by a comparison of the trace hashes;
/// for the others, two runs with the same trace hash.
pub fn check_determinism(
    engine: Engine,
    setup: &Setup,
    seed: u64,
    machines: &Machines,
) -> Result<EngineRun, String> {
    let first = run(engine, setup, seed, machines)?;
    let again = match engine {
        #[cfg(madsim)]
        Engine::Madsim => crate::madsim::check_determinism(setup, seed, machines)?,
        _ => run(engine, setup, seed, machines)?.result.trace_hash(),
    };
    let a = first.result.trace_hash();
    if a != again {
        return Err(format!(
            "not deterministic on {}: seed {seed} gave trace hashes {a:016x} and {again:016x}",
            engine.name()
        ));
    }
    Ok(first)
}

/// The scenarios both engines must agree on (issue 8): the ones the async shell expresses with
/// its engine's own means.
pub const AGREE_SCENARIOS: &[&str] = &[
    "w1-w2",
    "gc-pause-after-check",
    "late-tool-answer",
    "restart-same-name",
    "heartbeat-ack-lost",
];

/// The variants compared: the reference, the two the issue names, and the variant each story
/// exists to catch where those two cannot bite (late-tool-answer's holder in jeopardy).
pub const AGREE_VARIANTS: &[&str] = &[
    "reference",
    "unconditional-commit",
    "receiver-ignores-fence",
    "no-jeopardy",
];

/// One engine's outcome over the seeds of one (scenario, variant).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Outcome {
    /// Seeds run.
    pub seeds: u64,
    /// Seeds that violated an invariant.
    pub violated: u64,
    /// Seeds that hit a limit.
    pub unfinished: u64,
    /// The first violating seed.
    pub first_violation: Option<u64>,
    /// The first unfinished seed.
    pub first_unfinished: Option<u64>,
    /// Invariants named over all seeds.
    pub invariants: Vec<String>,
    /// Where the engine did not do what its trace says, with the seed.
    pub problems: Vec<String>,
    /// Seeds left out because the engine cannot express their plan (real tokio and a pause).
    pub skipped: u64,
    /// Trace events over all seeds.
    pub events: u64,
}

impl Outcome {
    /// Whether any seed violated an invariant.
    pub fn caught(&self) -> bool {
        self.violated > 0
    }
}

/// Failures on one engine only that make a disagreement: fewer are too rare to tell apart
/// from chance in the seeds run (see [`compare`]).
pub const RARE_MIN: u64 = 5;

/// The comparison of two engines on one (scenario, variant).
#[derive(Clone, Debug, Serialize)]
pub struct Agreement {
    /// Scenario.
    pub scenario: String,
    /// Variant.
    pub variant: String,
    /// The simulator's outcome.
    pub sim: Outcome,
    /// The other engine's outcome.
    pub other: Outcome,
    /// Seeds on which both engines gave the same verdict.
    pub same_verdict_seeds: u64,
    /// Why the engines disagree (empty when they agree).
    pub disagreement: Option<String>,
}

fn outcome_of(
    engine: Engine,
    setup_of: &dyn Fn(u64) -> Setup,
    machines: &Machines,
    seeds: std::ops::Range<u64>,
) -> Result<(Outcome, Vec<leasesim::run::Verdict>), String> {
    let mut o = Outcome::default();
    let mut verdicts = Vec::new();
    let mut invariants = std::collections::BTreeSet::new();
    for seed in seeds {
        let setup = setup_of(seed);
        if Engine::shell().supports(&setup).is_err() {
            // Both engines leave it out, so that they are compared on the same seeds.
            o.skipped += 1;
            continue;
        }
        let run = run(engine, &setup, seed, machines)?;
        let r = &run.result;
        o.seeds += 1;
        o.events += r.trace.len() as u64;
        let v = r.verdict();
        match v {
            leasesim::run::Verdict::Violated => {
                o.violated += 1;
                o.first_violation.get_or_insert(seed);
            }
            leasesim::run::Verdict::Unfinished { .. } => {
                o.unfinished += 1;
                o.first_unfinished.get_or_insert(seed);
            }
            // A run's own verdict is never `Invalid`: only a sweep refuses a configuration.
            leasesim::run::Verdict::Held | leasesim::run::Verdict::Invalid { .. } => {}
        }
        for f in &r.findings {
            invariants.insert(f.invariant.name().to_string());
        }
        for p in run.problems {
            o.problems.push(format!("seed {seed}: {p}"));
        }
        verdicts.push(v);
    }
    o.invariants = invariants.into_iter().collect();
    Ok((o, verdicts))
}

/// Runs seeds `seeds` of `scenario` on `machines` on the simulator and on `other` (leaving out
/// seeds whose plan the shell engine cannot express), and compares: machines expected to hold
/// must hold on both; known-bad ones must be caught on both or on neither, and the two engines
/// must name at least one invariant in common. The engines draw their own latencies and
/// schedules, so a single seed may go either way; what must agree is the outcome over the seeds.
pub fn agree(
    other: Engine,
    def: &leasesim::ScenarioDef,
    machines: &Machines,
    seeds: std::ops::Range<u64>,
) -> Result<Agreement, String> {
    let scenario: &str = &def.name;
    let variant = machines.setup_variant();
    let setup_of = |seed: u64| def.build(seed, variant);
    let (sim, sv) = outcome_of(Engine::Sim, &setup_of, machines, seeds.clone())?;
    let (oth, ov) = outcome_of(other, &setup_of, machines, seeds.clone())?;
    let same = sv.iter().zip(&ov).filter(|(a, b)| a == b).count() as u64;
    let disagreement = compare(other, scenario, machines, seeds.clone(), &sim, &oth);
    Ok(Agreement {
        scenario: scenario.to_string(),
        variant: machines.name().to_string(),
        sim,
        other: oth,
        same_verdict_seeds: same,
        disagreement,
    })
}

/// Why two engines' outcomes over the same seeds disagree, if they do (see [`agree`]); each
/// reason carries the seed and the command that reproduces it on its engine.
pub fn compare(
    other: Engine,
    scenario: &str,
    machines: &Machines,
    seeds: std::ops::Range<u64>,
    sim: &Outcome,
    oth: &Outcome,
) -> Option<String> {
    let name = other.name();
    let cmd = |engine: Engine, seed: u64| rerun(engine, scenario, machines, seed);
    let mut why = Vec::new();
    if !oth.problems.is_empty() {
        why.push(format!(
            "the {name} engine did not do what its trace says: {}",
            oth.problems.join("; ")
        ));
    }
    if !machines.is_known_bad() {
        if let Some(s) = sim.first_violation.or(sim.first_unfinished) {
            why.push(format!(
                "{} failed on sim seed {s} (`{}`)",
                machines.name(),
                cmd(Engine::Sim, s)
            ));
        }
        if let Some(s) = oth.first_violation.or(oth.first_unfinished) {
            why.push(format!(
                "{} failed on {name} seed {s} (`{}`)",
                machines.name(),
                cmd(other, s)
            ));
        }
    } else {
        why.extend(known_bad_disagreement(
            other, scenario, machines, seeds, sim, oth,
        ));
    }
    (!why.is_empty()).then(|| why.join("; "))
}

/// The command that reruns `scenario` seed `seed` on `engine`.
fn rerun(engine: Engine, scenario: &str, machines: &Machines, seed: u64) -> String {
    let prefix = match engine {
        Engine::Madsim => format!("{MADSIM_CARGO} run"),
        _ => "cargo run --release -- run".to_string(),
    };
    format!(
        "{prefix} {scenario} --seed {seed} --variant {} --engine {}",
        machines.name(),
        engine.name()
    )
}

/// Where a known-bad variant, which must fail somewhere, fails differently on the two engines.
fn known_bad_disagreement(
    other: Engine,
    scenario: &str,
    machines: &Machines,
    seeds: std::ops::Range<u64>,
    sim: &Outcome,
    oth: &Outcome,
) -> Option<String> {
    let name = other.name();
    let cmd = |engine: Engine, seed: u64| rerun(engine, scenario, machines, seed);
    // A variant fails a seed by a violation or by a runaway run. When it fails on one
    // engine only, the other engine's misses count against it only if they would be
    // unlikely at the same rate: k failures in n seeds leave a chance of about e^-k to miss
    // all n, so k >= RARE_MIN (under 1%) is a disagreement, fewer is too rare to tell.
    let fail = |o: &Outcome| o.first_violation.or(o.first_unfinished);
    let one_sided = |k: u64, who: &str, seed: u64, cmd: String, other: &str| {
        if k >= RARE_MIN {
            Some(format!(
                "fails on {who} ({k} of the seeds, first seed {seed}: `{cmd}`) but on no {other} seed of {}..{}",
                seeds.start, seeds.end
            ))
        } else {
            None
        }
    };
    match (fail(sim), fail(oth)) {
        (Some(a), None) => one_sided(
            sim.violated + sim.unfinished,
            "sim",
            a,
            cmd(Engine::Sim, a),
            name,
        ),
        (None, Some(b)) => one_sided(oth.violated + oth.unfinished, name, b, cmd(other, b), "sim"),
        (Some(a), Some(b)) => {
            let both_named = !sim.invariants.is_empty() && !oth.invariants.is_empty();
            let disjoint = !sim.invariants.iter().any(|i| oth.invariants.contains(i));
            (both_named && disjoint).then(|| {
                format!(
                    "different invariants: sim seed {a} names {:?}, {name} seed {b} names {:?}",
                    sim.invariants, oth.invariants
                )
            })
        }
        (None, None) => None,
    }
}
