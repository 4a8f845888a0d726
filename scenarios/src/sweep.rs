//! The sweep: many seeds of some scenarios on every core, each run judged, the hazards each
//! reached counted, the failures kept. The command line, the tests and users' own test suites
//! all sweep through [`sweep`].
//!
//! Memory stays bounded however many seeds fail: per scenario the sweep keeps counts, the
//! [`FAILURES_KEPT`] lowest failing seeds and the hazard table; every failure is handed to the
//! [`Observer`] as soon as its chunk of seeds is done, in seed order, so a caller streams the
//! full list to a file. A sweep stops between two runs when its stop flag is set and says
//! exactly which seeds ran.

use crate::machines::Machines;
use crate::pool::{self, Chunks};
use crate::run::{check_same, run, Verdict};
use crate::scenarios::ScenarioDef;
use leasesim_checkers::Hazard;
use leasesim_reports::{self as reports, Names};
use std::collections::BTreeMap;
use std::ops::Range;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

/// Failing seeds kept in memory per scenario (the lowest ones); the rest are counted and
/// handed to the observer.
pub const FAILURES_KEPT: usize = 1_000;
/// Seeds run between two looks at the shared work counter (and at the stop flag's effect on
/// the progress the observer sees).
pub const CHUNK: u64 = 64;
/// Determinism differences kept per scenario (the rest are counted).
const NONDETERMINISTIC_KEPT: usize = 100;

/// A half-open range of seeds.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct SeedRange {
    /// First seed.
    pub start: u64,
    /// One past the last seed.
    pub end: u64,
}

impl SeedRange {
    /// How many seeds.
    pub fn len(self) -> u64 {
        self.end - self.start
    }

    /// Whether it holds no seed.
    pub fn is_empty(self) -> bool {
        self.end <= self.start
    }

    /// `N` (seeds `0..N`) or `A..B` (seeds `A` up to but not including `B`), never empty.
    pub fn parse(s: &str) -> Result<SeedRange, String> {
        let num = |t: &str| {
            let t = t.trim();
            if t.starts_with('-') {
                return Err(format!("'{t}' is negative; seeds are 0 or more"));
            }
            t.parse::<u64>()
                .map_err(|_| format!("'{t}' is not a seed (an unsigned 64-bit integer)"))
        };
        let range = match s.split_once("..") {
            Some((a, b)) => SeedRange {
                start: num(a)?,
                end: num(b)?,
            },
            None => SeedRange {
                start: 0,
                end: num(s)?,
            },
        };
        if range.is_empty() {
            return Err(format!("'{s}' is an empty range of seeds"));
        }
        Ok(range)
    }
}

/// What to sweep.
#[derive(Clone)]
pub struct SweepConfig {
    /// The scenarios, each swept over every seed.
    pub scenarios: Vec<&'static ScenarioDef>,
    /// The seeds.
    pub seeds: SeedRange,
    /// The machines under test (their setup variant builds the scenarios).
    pub machines: Machines,
    /// Threads to run on (see [`pool::threads`]).
    pub threads: usize,
    /// Run every seed twice and compare the traces.
    pub check_determinism: bool,
    /// Run configurations that break P6. Without it every seed's configuration is validated
    /// first, and one that breaks P6 is a failure of its own ([`Verdict::Invalid`]): a scenario
    /// must never draw one.
    pub allow_unsafe_timing: bool,
    /// Stop at the first seed that violates an invariant (the matrix's question: is this
    /// variant caught, and after how many seeds?). Meant for one thread, where "first" is the
    /// lowest seed.
    pub stop_at_first_violation: bool,
}

impl SweepConfig {
    /// Every seed of `scenarios` on `machines`, every core, every check: what `leasesim sweep`
    /// runs.
    pub fn new(scenarios: Vec<&'static ScenarioDef>, seeds: SeedRange, machines: Machines) -> Self {
        SweepConfig {
            scenarios,
            seeds,
            machines,
            threads: pool::threads(None, u64::MAX).unwrap_or(1),
            check_determinism: false,
            allow_unsafe_timing: false,
            stop_at_first_violation: false,
        }
    }
}

impl SweepConfig {
    /// Runs in all: scenarios x seeds, or an error when that does not fit in 64 bits.
    pub fn total(&self) -> Result<u64, String> {
        self.seeds
            .len()
            .checked_mul(self.scenarios.len() as u64)
            .ok_or_else(|| "too many seeds: scenarios x seeds does not fit in 64 bits".into())
    }
}

/// One failing seed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Failure {
    /// Index of its scenario in [`SweepConfig::scenarios`].
    pub scenario: usize,
    /// The seed.
    pub seed: u64,
    /// Its verdict (violated, or unfinished for a runaway run).
    pub verdict: Verdict,
    /// The first finding in one line (or the verdict when there is none).
    pub first: String,
    /// Every invariant it broke, sorted.
    pub invariants: Vec<&'static str>,
}

/// What one scenario's seeds gave.
#[derive(Clone, Debug, Default)]
pub struct ScenarioOutcome {
    /// Seeds run.
    pub runs: u64,
    /// Seeds that failed (violated, ran away, or were refused).
    pub failing: u64,
    /// Of those, the runs that hit a limit without a finding.
    pub unfinished: u64,
    /// The lowest failing seeds, at most [`FAILURES_KEPT`], in seed order.
    pub failures: Vec<Failure>,
    /// Seeds that reached each hazard.
    pub hazards: BTreeMap<Hazard, u64>,
    /// Seeds whose two runs differed (with `check_determinism`).
    pub nondeterministic: u64,
    /// The first of them, with the first diverging event.
    pub nondeterministic_seeds: Vec<(u64, String)>,
    /// The seeds that ran, as sorted, disjoint ranges (all of them unless the sweep stopped).
    pub ran: Vec<Range<u64>>,
    /// Seeds the machines cannot express (a SQL file without the statement a scenario needs):
    /// counted among `runs` as done, never run, never passed.
    pub not_expressible: u64,
    /// Why, with how many seeds each reason kept out (at most [`REASONS_KEPT`] reasons).
    pub not_expressible_reasons: BTreeMap<String, u64>,
}

impl ScenarioOutcome {
    /// Seeds that ran and were judged (not the ones the machines cannot express).
    pub fn judged(&self) -> u64 {
        self.runs - self.not_expressible
    }
}

/// Distinct reasons for "not expressible" kept per scenario (the rest are counted under the
/// last).
pub const REASONS_KEPT: usize = 8;

/// What a sweep gave.
#[derive(Clone, Debug)]
pub struct SweepReport {
    /// Per scenario, in the order of the configuration.
    pub scenarios: Vec<ScenarioOutcome>,
    /// Runs done.
    pub runs: u64,
    /// Simulator events over every run.
    pub events: u64,
    /// Trace events recorded over every run.
    pub trace_events: u64,
    /// Threads it ran on.
    pub threads: usize,
    /// Whether it stopped before every seed ran.
    pub interrupted: bool,
}

impl SweepReport {
    /// Failing seeds over every scenario.
    pub fn failing(&self) -> u64 {
        self.scenarios.iter().map(|s| s.failing).sum()
    }

    /// Seeds the machines cannot express, over every scenario.
    pub fn not_expressible(&self) -> u64 {
        self.scenarios.iter().map(|s| s.not_expressible).sum()
    }

    /// Determinism differences over every scenario.
    pub fn nondeterministic(&self) -> u64 {
        self.scenarios.iter().map(|s| s.nondeterministic).sum()
    }

    /// Declared hazards never reached by a scenario swept over at least `min_seeds` seeds (by
    /// index in the configuration): the scenario no longer tells its story, it passes because
    /// nothing happened. Only the reference promises its stories (a variant changes what
    /// happens), and only a sweep that ran every seed is judged.
    pub fn unreached(&self, config: &SweepConfig, min_seeds: u64) -> Vec<(usize, Hazard)> {
        let mut unreached = Vec::new();
        if self.interrupted || config.machines.is_known_bad() {
            return unreached;
        }
        for (i, d) in config.scenarios.iter().enumerate() {
            let o = &self.scenarios[i];
            if o.judged() < min_seeds {
                continue;
            }
            unreached.extend(
                d.hazards
                    .iter()
                    .filter(|h| !o.hazards.contains_key(h))
                    .map(|h| (i, *h)),
            );
        }
        unreached
    }
}

/// Sees a sweep's progress from its threads.
pub trait Observer: Sync {
    /// Chunk number `chunk` is done: `runs` seeds ran (fewer than the chunk's size only when the
    /// sweep stopped), with these failures. Chunks arrive in any order; the failures of one
    /// chunk are in seed order.
    fn chunk_done(&self, chunk: u64, runs: u64, failures: &[Failure]);
}

/// An observer that looks at nothing.
pub struct Quiet;

impl Observer for Quiet {
    fn chunk_done(&self, _: u64, _: u64, _: &[Failure]) {}
}

/// What the threads share while they run.
struct Shared {
    scenarios: Vec<ScenarioOutcome>,
    /// Kept failures per scenario, by seed, while the sweep runs.
    kept: Vec<BTreeMap<u64, Failure>>,
    /// Merged ranges of item numbers done (start -> end): chunks finish nearly in order, so
    /// this stays a handful of entries.
    done: BTreeMap<u64, u64>,
}

/// What one thread gathered.
#[derive(Default)]
struct Local {
    events: u64,
    trace_events: u64,
    hazards: Vec<BTreeMap<Hazard, u64>>,
}

/// One seed: left out when the machines cannot express it (`Err` with the reason), refused
/// before it runs when its configuration breaks P6 (unless allowed), else run, judged and, when
/// asked, run again for the determinism check.
fn one_seed(
    config: &SweepConfig,
    sc: usize,
    seed: u64,
    local: &mut Local,
    nondet: &mut Vec<(usize, u64, String)>,
) -> Result<Option<Failure>, String> {
    let setup = (config.scenarios[sc].build)(seed, config.machines.setup_variant());
    config.machines.expressible(&setup)?;
    Ok(judge_seed(config, sc, seed, &setup, local, nondet))
}

fn judge_seed(
    config: &SweepConfig,
    sc: usize,
    seed: u64,
    setup: &crate::Setup,
    local: &mut Local,
    nondet: &mut Vec<(usize, u64, String)>,
) -> Option<Failure> {
    if !config.allow_unsafe_timing {
        if let Err(reason) = setup.validate_timing() {
            return Some(Failure {
                scenario: sc,
                seed,
                first: format!("the scenario drew a configuration that breaks P6: {reason}"),
                verdict: Verdict::Invalid { reason },
                invariants: Vec::new(),
            });
        }
    }
    let r = run(setup, seed, &config.machines);
    if config.check_determinism {
        if let Err(e) = check_same(&r, &run(setup, seed, &config.machines)) {
            nondet.push((sc, seed, e));
        }
    }
    local.events += r.events;
    local.trace_events += r.trace.len() as u64;
    for (h, _) in r.hazards.0.iter() {
        *local.hazards[sc].entry(*h).or_default() += 1;
    }
    let verdict = r.verdict();
    if verdict == Verdict::Held {
        return None;
    }
    let node_names: Vec<String> = r.nodes.iter().map(|n| n.name.clone()).collect();
    let names = Names {
        nodes: &node_names,
        ops: &r.op_names,
    };
    let mut invariants: Vec<&'static str> = r.findings.iter().map(|f| f.invariant.name()).collect();
    invariants.sort_unstable();
    invariants.dedup();
    Some(Failure {
        scenario: sc,
        seed,
        first: r
            .findings
            .first()
            .map(|f| reports::finding(&names, f))
            .unwrap_or_else(|| verdict.word()),
        verdict,
        invariants,
    })
}

/// Sweeps every seed of every scenario of `config`, stopping between two runs once `stop` is
/// set; the observer sees each chunk as it finishes.
pub fn sweep(config: &SweepConfig, stop: &AtomicBool, observer: &dyn Observer) -> SweepReport {
    let per = config.seeds.len();
    let n = config.scenarios.len();
    let total = config.total().unwrap_or(u64::MAX);
    let chunks = Chunks::new(total, CHUNK, stop);
    let threads = config.threads.clamp(1, pool::THREADS_MAX);
    let shared = Mutex::new(Shared {
        scenarios: vec![ScenarioOutcome::default(); n],
        kept: vec![BTreeMap::new(); n],
        done: BTreeMap::new(),
    });
    // The first violation ends the sweep early when asked, without touching the caller's flag.
    let violated = AtomicBool::new(false);
    let locals = pool::run(threads, |_| {
        let mut local = Local {
            events: 0,
            trace_events: 0,
            hazards: vec![BTreeMap::new(); n],
        };
        while let Some((index, items)) = chunks.take() {
            let begin = items.start;
            let mut failures = Vec::new();
            let mut nondet = Vec::new();
            let mut skipped = Vec::new();
            let mut ran = 0;
            for i in items {
                if chunks.stopped() || violated.load(Ordering::Relaxed) {
                    break;
                }
                let (sc, seed) = ((i / per) as usize, config.seeds.start + i % per);
                match one_seed(config, sc, seed, &mut local, &mut nondet) {
                    Ok(Some(f)) => {
                        if config.stop_at_first_violation && f.verdict == Verdict::Violated {
                            violated.store(true, Ordering::Relaxed);
                        }
                        failures.push(f);
                    }
                    Ok(None) => {}
                    Err(reason) => skipped.push((sc, reason)),
                }
                ran += 1;
            }
            observer.chunk_done(index, ran, &failures);
            let mut s = shared.lock().unwrap_or_else(|p| p.into_inner());
            s.record(begin, ran, per, failures, nondet);
            s.skip(skipped);
            if violated.load(Ordering::Relaxed) {
                break;
            }
        }
        local
    });
    let mut shared = shared.into_inner().unwrap_or_else(|p| p.into_inner());
    let (mut events, mut trace_events) = (0, 0);
    for local in locals {
        events += local.events;
        trace_events += local.trace_events;
        for (outcome, hazards) in shared.scenarios.iter_mut().zip(local.hazards) {
            for (h, k) in hazards {
                *outcome.hazards.entry(h).or_default() += k;
            }
        }
    }
    shared.finish(config, per);
    let runs = shared.scenarios.iter().map(|s| s.runs).sum();
    SweepReport {
        scenarios: shared.scenarios,
        runs,
        events,
        trace_events,
        threads,
        interrupted: runs < total && !violated.load(Ordering::Relaxed),
    }
}

impl Shared {
    /// Books a chunk that started at item `begin` and ran `ran` items.
    fn record(
        &mut self,
        begin: u64,
        ran: u64,
        per: u64,
        failures: Vec<Failure>,
        nondet: Vec<(usize, u64, String)>,
    ) {
        if ran > 0 {
            self.mark_done(begin, begin + ran);
            // Runs per scenario: the chunk may straddle scenarios.
            let mut i = begin;
            while i < begin + ran {
                let sc = (i / per) as usize;
                let end = ((sc as u64 + 1) * per).min(begin + ran);
                self.scenarios[sc].runs += end - i;
                i = end;
            }
        }
        for f in failures {
            let sc = f.scenario;
            self.scenarios[sc].failing += 1;
            if matches!(f.verdict, Verdict::Unfinished { .. }) {
                self.scenarios[sc].unfinished += 1;
            }
            let kept = &mut self.kept[sc];
            kept.insert(f.seed, f);
            if kept.len() > FAILURES_KEPT {
                kept.pop_last();
            }
        }
        for (sc, seed, e) in nondet {
            let o = &mut self.scenarios[sc];
            o.nondeterministic += 1;
            if o.nondeterministic_seeds.len() < NONDETERMINISTIC_KEPT {
                o.nondeterministic_seeds.push((seed, e));
            }
        }
    }

    /// Books seeds the machines cannot express.
    fn skip(&mut self, skipped: Vec<(usize, String)>) {
        for (sc, reason) in skipped {
            let o = &mut self.scenarios[sc];
            o.not_expressible += 1;
            let full = o.not_expressible_reasons.len() >= REASONS_KEPT;
            if full && !o.not_expressible_reasons.contains_key(&reason) {
                if let Some(mut last) = o.not_expressible_reasons.last_entry() {
                    *last.get_mut() += 1;
                }
            } else {
                *o.not_expressible_reasons.entry(reason).or_default() += 1;
            }
        }
    }

    /// Adds items `start..end` to the merged ranges of items done.
    fn mark_done(&mut self, start: u64, end: u64) {
        let (mut start, mut end) = (start, end);
        if let Some((&s, &e)) = self.done.range(..=start).next_back() {
            if e >= start {
                start = s;
                end = end.max(e);
                self.done.remove(&s);
            }
        }
        while let Some((&s, &e)) = self.done.range(start..).next() {
            if s > end {
                break;
            }
            end = end.max(e);
            self.done.remove(&s);
        }
        self.done.insert(start, end);
    }

    /// Moves the kept failures and the ranges done into each scenario's outcome.
    fn finish(&mut self, config: &SweepConfig, per: u64) {
        for (outcome, kept) in self
            .scenarios
            .iter_mut()
            .zip(std::mem::take(&mut self.kept))
        {
            outcome.failures = kept.into_values().collect();
            outcome
                .nondeterministic_seeds
                .sort_by_key(|(seed, _)| *seed);
        }
        for (&s, &e) in &self.done {
            let mut i = s;
            while i < e {
                let sc = (i / per) as usize;
                let end = ((sc as u64 + 1) * per).min(e);
                let base = sc as u64 * per;
                let seeds = config.seeds.start + (i - base)..config.seeds.start + (end - base);
                self.scenarios[sc].ran.push(seeds);
                i = end;
            }
        }
    }
}

/// Ranges of seeds as `A..B` joined by commas (`0..1000` for a whole sweep).
pub fn describe_ranges(ranges: &[Range<u64>]) -> String {
    if ranges.is_empty() {
        return "none".into();
    }
    ranges
        .iter()
        .map(|r| format!("{}..{}", r.start, r.end))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenarios;
    use leasesim_protocol::Variant;

    fn config(names: &[&str], seeds: SeedRange, variant: Variant) -> SweepConfig {
        SweepConfig {
            threads: 2,
            ..SweepConfig::new(
                names.iter().map(|n| scenarios::find(n).unwrap()).collect(),
                seeds,
                Machines::variant(variant),
            )
        }
    }

    #[test]
    fn seed_ranges_parse_and_refuse_clearly() {
        assert_eq!(SeedRange::parse("5"), Ok(SeedRange { start: 0, end: 5 }));
        assert_eq!(SeedRange::parse("3..9"), Ok(SeedRange { start: 3, end: 9 }));
        assert!(SeedRange::parse("9..3").unwrap_err().contains("empty"));
        assert!(SeedRange::parse("-1").unwrap_err().contains("negative"));
        assert!(SeedRange::parse("x").unwrap_err().contains("not a seed"));
    }

    #[test]
    fn a_variant_sweep_keeps_a_bounded_list_and_counts_the_rest() {
        let c = config(
            &["w1-w2"],
            SeedRange {
                start: 0,
                end: FAILURES_KEPT as u64 + 200,
            },
            Variant::UnconditionalCommit,
        );
        let r = sweep(&c, &AtomicBool::new(false), &Quiet);
        let o = &r.scenarios[0];
        assert_eq!(
            o.failing,
            FAILURES_KEPT as u64 + 200,
            "V2 fails every w1-w2 seed"
        );
        assert_eq!(o.failures.len(), FAILURES_KEPT);
        assert_eq!(o.failures[0].seed, 0, "the lowest seeds are kept");
        assert!(o.failures.windows(2).all(|w| w[0].seed < w[1].seed));
        assert_eq!(o.ran, vec![0..FAILURES_KEPT as u64 + 200]);
        assert!(!r.interrupted);
    }

    #[test]
    fn every_drawn_configuration_is_checked_against_p6() {
        // V12's configurations break P6 on every seed: a sweep that does not allow it refuses
        // each one as a failure with its seed (not only the first seed, and in release builds).
        let c = config(
            &["w1-w2", "swarm"],
            SeedRange { start: 0, end: 70 },
            Variant::UnsafeTiming,
        );
        let r = sweep(&c, &AtomicBool::new(false), &Quiet);
        for o in &r.scenarios {
            assert_eq!(o.failing, 70);
            assert!(o
                .failures
                .iter()
                .all(|f| matches!(f.verdict, Verdict::Invalid { .. }) && f.first.contains("P6")));
        }
        assert_eq!(r.events, 0, "nothing refused was run");
        let allowed = SweepConfig {
            allow_unsafe_timing: true,
            ..c
        };
        let r = sweep(&allowed, &AtomicBool::new(false), &Quiet);
        assert!(r.events > 0);
        assert!(r.scenarios[0]
            .failures
            .iter()
            .all(|f| !matches!(f.verdict, Verdict::Invalid { .. })));
    }

    #[test]
    fn a_stopped_sweep_says_which_seeds_ran() {
        struct StopAfter<'a>(&'a AtomicBool);
        impl Observer for StopAfter<'_> {
            fn chunk_done(&self, _: u64, _: u64, _: &[Failure]) {
                self.0.store(true, Ordering::Relaxed);
            }
        }
        let stop = AtomicBool::new(false);
        let c = config(
            &["w1-w2", "gc-pause-after-check"],
            SeedRange {
                start: 10,
                end: 1010,
            },
            Variant::Reference,
        );
        let r = sweep(&c, &stop, &StopAfter(&stop));
        assert!(r.interrupted);
        assert!(r.runs >= 1 && r.runs < 2000, "{}", r.runs);
        let ran: u64 = r
            .scenarios
            .iter()
            .flat_map(|s| s.ran.iter())
            .map(|s| s.end - s.start)
            .sum();
        assert_eq!(ran, r.runs, "the ranges account for every run");
        assert_eq!(
            r.scenarios[0].ran[0].start, 10,
            "the first chunk ran from the start"
        );
    }
}
