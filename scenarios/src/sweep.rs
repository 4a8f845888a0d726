//! The sweep: many seeds of some scenarios on every core, each run judged, the hazards each
//! reached counted, the failures kept. The command line, the tests and users' own test suites
//! all sweep through [`sweep`].
//!
//! Memory stays bounded however many seeds fail: per scenario the sweep keeps counts, the
//! [`FAILURES_KEPT`] lowest failing seeds and the hazard table; every failure is handed to the
//! [`Observer`] as soon as its chunk of seeds is done, in seed order, so a caller streams the
//! full list to a file. A sweep stops between two runs when its stop flag is set and says
//! exactly which seeds ran.
//!
//! **The space and its order.** A sweep's space is every (scenario, seed) pair of its
//! configuration, numbered seed-major: item `g` is seed `start + g / n` of scenario `g % n` (`n`
//! scenarios), so any prefix of the order ran every scenario over the same seeds, give or take
//! one. A [`Shard`] `K/N` is a contiguous slice of that order cut where the expected cost (the
//! fixed [`seed_cost`] of each scenario, never a measurement) reaches `(K-1)/N` and `K/N` of the
//! whole: the N shards are disjoint, together exactly the space, each with the same mix of
//! scenarios and within one seed's cost of an equal share, and each scenario's seeds in a shard
//! are one contiguous range. A time budget ([`SweepConfig::budget`]) starts no seed once it is
//! spent and finishes the ones in flight, so what ran is exactly a prefix of the sweep's order.

use crate::machines::Machines;
use crate::pool::{self, Chunks};
use crate::run::{check_same, run, RunResult, Verdict};
use crate::scenarios::ScenarioDef;
use leasesim_checkers::Hazard;
use leasesim_reports::{self as reports, Names};
use std::collections::BTreeMap;
use std::ops::Range;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::Duration;

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

/// Sweeps of at least this many seeds per scenario must reach every hazard it declares (for
/// machines expected to hold): a sweep that passes because nothing happened proves nothing.
pub const COVERAGE_MIN_SEEDS: u64 = 100;
/// Shards a sweep may be cut into at most.
pub const SHARDS_MAX: u64 = 10_000;
/// `K/N`: run shard K of N of the sweep (the variable a user sets anywhere).
pub const SHARD_VAR: &str = "LEASESIM_SHARD";
/// The total that goes with Kubernetes' `JOB_COMPLETION_INDEX` (which has none of its own).
pub const SHARD_TOTAL_VAR: &str = "LEASESIM_SHARD_TOTAL";

/// One share of a sweep's space: shard `index` of `count`, numbered from 1 as CI systems number
/// their parallel jobs (see the module's documentation for how the space is cut).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Shard {
    /// Which shard, `1..=count`.
    pub index: u64,
    /// How many shards.
    pub count: u64,
}

impl std::fmt::Display for Shard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

impl Shard {
    /// A shard from its 1-based index and count, refused out of range.
    pub fn new(index: u64, count: u64) -> Result<Shard, String> {
        if count == 0 {
            return Err("a sweep is cut into at least 1 shard".into());
        }
        if count > SHARDS_MAX {
            return Err(format!(
                "{count} shards is more than {SHARDS_MAX}; a shard should run for minutes, not milliseconds"
            ));
        }
        if index == 0 || index > count {
            return Err(format!(
                "shard {index}/{count} does not exist: shards are numbered 1 to {count}"
            ));
        }
        Ok(Shard { index, count })
    }

    /// `K/N` (shard K of N, `1 <= K <= N`).
    pub fn parse(s: &str) -> Result<Shard, String> {
        if s.trim().starts_with('-') {
            return Err(format!(
                "'{}' is negative; shards are numbered from 1, as K/N",
                s.trim()
            ));
        }
        let (k, n) = s
            .trim()
            .split_once('/')
            .ok_or_else(|| format!("'{s}' is not a shard: expected K/N, shard K of N"))?;
        let num = |t: &str| {
            let t = t.trim();
            if t.starts_with('-') {
                return Err(format!(
                    "'{s}': '{t}' is negative; shards are numbered from 1"
                ));
            }
            t.parse::<u64>()
                .map_err(|_| format!("'{s}' is not a shard: '{t}' is not a whole number"))
        };
        Shard::new(num(k)?, num(n)?)
    }

    /// This shard's slice of a space of `rows` rows of items, numbered row-major (item `g` is
    /// item `g % costs.len()` of row `g / costs.len()`), an item of column `j` costing
    /// `costs[j]` (at least 1): the items from the first whose cost before it reaches
    /// `(K-1)/N` of the whole to the first whose cost before it reaches `K/N`. The N slices are
    /// contiguous, disjoint, together every item, and each within one item's cost of an equal
    /// share. A sweep's rows are its seeds and its columns its scenarios; the matrix's rows are
    /// its machines.
    pub fn slice(&self, costs: &[u64], rows: u64) -> Range<u64> {
        let costs: Vec<u128> = costs.iter().map(|&c| u128::from(c.max(1))).collect();
        let row: u128 = costs.iter().sum();
        let whole = row * u128::from(rows);
        // The first item whose cost before it is at least `before`.
        let first_from = |before: u128| -> u64 {
            if row == 0 {
                return 0;
            }
            let (full_rows, mut rest) = (before / row, before % row);
            let mut j = 0;
            while rest > 0 && j < costs.len() {
                rest = rest.saturating_sub(costs[j]);
                j += 1;
            }
            // It fits: it is at most the space's item count, which the caller counted in 64 bits.
            u64::try_from(full_rows * costs.len() as u128 + j as u128).unwrap_or(u64::MAX)
        };
        let cut = |k: u64| first_from(whole * u128::from(k) / u128::from(self.count));
        cut(self.index - 1)..cut(self.index)
    }

    /// The shard the environment names, and which variables named it: `LEASESIM_SHARD=K/N`,
    /// else GitLab's `CI_NODE_INDEX` (1-based) with `CI_NODE_TOTAL`, else Kubernetes'
    /// `JOB_COMPLETION_INDEX` (0-based) with `LEASESIM_SHARD_TOTAL`. `None` when none is set
    /// (GitLab's `CI_NODE_TOTAL` alone, which it sets on every job, is not a shard). A variable
    /// that is set but wrong is an error, never the whole sweep run on every node.
    pub fn from_env() -> Result<Option<(Shard, String)>, String> {
        Shard::from_vars(|name| std::env::var(name).ok())
    }

    /// [`Shard::from_env`] over any lookup of variables.
    pub fn from_vars(
        var: impl Fn(&str) -> Option<String>,
    ) -> Result<Option<(Shard, String)>, String> {
        let whole = |name: &str, value: &str| {
            value
                .trim()
                .parse::<u64>()
                .map_err(|_| format!("{name}={value} is not a whole number"))
        };
        if let Some(v) = var(SHARD_VAR) {
            let shard = Shard::parse(&v).map_err(|e| format!("{SHARD_VAR}: {e}"))?;
            return Ok(Some((shard, format!("{SHARD_VAR}={v}"))));
        }
        if let Some(index) = var("CI_NODE_INDEX") {
            let total = var("CI_NODE_TOTAL")
                .ok_or_else(|| format!("CI_NODE_INDEX={index} is set but CI_NODE_TOTAL is not"))?;
            let shard = Shard::new(
                whole("CI_NODE_INDEX", &index)?,
                whole("CI_NODE_TOTAL", &total)?,
            )
            .map_err(|e| format!("CI_NODE_INDEX={index} CI_NODE_TOTAL={total}: {e}"))?;
            return Ok(Some((
                shard,
                format!("CI_NODE_INDEX={index} CI_NODE_TOTAL={total}"),
            )));
        }
        if let Some(index) = var("JOB_COMPLETION_INDEX") {
            let total = var(SHARD_TOTAL_VAR).ok_or_else(|| {
                format!(
                    "JOB_COMPLETION_INDEX={index} is set but {SHARD_TOTAL_VAR} is not: set it to the Job's completions"
                )
            })?;
            let i = whole("JOB_COMPLETION_INDEX", &index)?;
            let shard =
                Shard::new(i.saturating_add(1), whole(SHARD_TOTAL_VAR, &total)?).map_err(|e| {
                    format!("JOB_COMPLETION_INDEX={index} (0-based) {SHARD_TOTAL_VAR}={total}: {e}")
                })?;
            return Ok(Some((
                shard,
                format!("JOB_COMPLETION_INDEX={index} {SHARD_TOTAL_VAR}={total}"),
            )));
        }
        Ok(None)
    }
}

/// The expected cost of one seed of a scenario, in tenths of a microsecond of one core (the
/// mean over seeds 0..2000 of the reference, release build, measured once and written down
/// here): shards are cut by it, so a shard with swarm seeds gets fewer seeds. It is a fixed
/// table, never a measurement, so every shard computes the same cut on any machine; a scenario
/// it does not name (a user's own) costs the median. A wrong figure moves where shards are cut,
/// never what runs in all.
pub fn seed_cost(def: &ScenarioDef) -> u64 {
    const MEDIAN: u64 = 320;
    SEED_COSTS
        .iter()
        .find(|(name, _)| *name == def.name)
        .map_or(MEDIAN, |(_, c)| *c)
}

/// See [`seed_cost`].
const SEED_COSTS: &[(&str, u64)] = &[
    ("w1-w2", 155),
    ("gc-pause-after-check", 225),
    ("late-tool-answer", 185),
    ("heartbeat-ack-lost", 270),
    ("coordinator-outage", 780),
    ("clock-skew-fast-worker", 300),
    ("clock-jump", 230),
    ("restart-same-name", 200),
    ("duplicate-delivery", 335),
    ("reordered-commit", 180),
    ("operator-takeover", 550),
    ("slow-but-healthy", 1280),
    ("stuck-tool-live-heartbeat", 635),
    ("renewal-cap", 2840),
    ("retries", 155),
    ("human-handoff", 1030),
    ("admission-and-authorization", 1570),
    ("stages-and-checkpoints", 185),
    ("late-grant-reply", 525),
    ("swarm", 1610),
];

/// Seeds `g..` of the seed-major order that belong to scenario `j` of `n`: the seed offsets
/// `s` with `s * n + j` in `items`.
fn offsets_of(items: &Range<u64>, n: u64, j: u64) -> Range<u64> {
    let first = |g: u64| if g > j { (g - j).div_ceil(n) } else { 0 };
    let (a, b) = (first(items.start), first(items.end));
    a..b.max(a)
}

/// What to sweep.
#[derive(Clone)]
pub struct SweepConfig {
    /// The scenarios, each swept over every seed.
    pub scenarios: Vec<ScenarioDef>,
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
    /// Run only this share of the space (all of it when `None`).
    pub shard: Option<Shard>,
    /// Start no seed once this much time has passed since the sweep began; the seeds in flight
    /// finish, so what ran is a prefix of the sweep's order ([`SweepReport::budget`]).
    pub budget: Option<Duration>,
    /// Judgements [`SweepConfig::check`] lets be skipped in every run of a scenario, by the
    /// judgement's name (`belief-within-grant`) or its invariant's (`quiescent-holder`, `I5`):
    /// without it a judgement no run of a scenario made fails the check, since the sweep then
    /// proves nothing about it.
    pub allow_skipped: Vec<String>,
}

impl SweepConfig {
    /// Every seed of `scenarios` (definitions, or references to them) on `machines`, every
    /// core, every check: what `leasesim sweep` runs.
    pub fn new<S: Into<ScenarioDef>>(
        scenarios: Vec<S>,
        seeds: SeedRange,
        machines: Machines,
    ) -> Self {
        SweepConfig {
            scenarios: scenarios.into_iter().map(Into::into).collect(),
            seeds,
            machines,
            threads: pool::threads(None, u64::MAX).unwrap_or(1),
            check_determinism: false,
            allow_unsafe_timing: false,
            stop_at_first_violation: false,
            shard: None,
            budget: None,
            allow_skipped: Vec::new(),
        }
    }
}

impl SweepConfig {
    /// Runs in the whole space: scenarios x seeds, or an error when that does not fit in 64
    /// bits.
    pub fn total(&self) -> Result<u64, String> {
        self.seeds
            .len()
            .checked_mul(self.scenarios.len() as u64)
            .ok_or_else(|| "too many seeds: scenarios x seeds does not fit in 64 bits".into())
    }

    /// The items of the seed-major order this sweep runs: its shard's slice, or the whole space.
    pub fn items(&self) -> Result<Range<u64>, String> {
        let total = self.total()?;
        let Some(shard) = self.shard else {
            return Ok(0..total);
        };
        let costs: Vec<u64> = self.scenarios.iter().map(seed_cost).collect();
        Ok(shard.slice(&costs, self.seeds.len()))
    }

    /// Per scenario, the seeds this sweep's share holds: one range each (empty when the shard
    /// has none of that scenario).
    pub fn share(&self) -> Result<Vec<Range<u64>>, String> {
        let items = self.items()?;
        let n = self.scenarios.len() as u64;
        Ok((0..n)
            .map(|j| {
                let o = offsets_of(&items, n, j);
                self.seeds.start + o.start..self.seeds.start + o.end
            })
            .collect())
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
    /// The faults of its plan.
    pub faults: usize,
    /// The events its run took (0 for a configuration refused before it ran).
    pub events: u64,
}

impl Failure {
    /// How it ranks as a counterexample: fewest faults, then fewest events, then lowest seed
    /// (then the scenario's place, for a total order).
    pub fn rank(&self) -> (usize, u64, u64, usize) {
        (self.faults, self.events, self.seed, self.scenario)
    }
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
    /// Time its seeds took, over every thread (the sweep's own wall time per thread).
    pub busy: Duration,
    /// The longest one of its seeds took.
    pub slowest_seed: Duration,
    /// Seeds the machines cannot express (a SQL file without the statement a scenario needs):
    /// counted among `runs` as done, never run, never passed.
    pub not_expressible: u64,
    /// Why, with how many seeds each reason kept out (at most [`REASONS_KEPT`] reasons).
    pub not_expressible_reasons: BTreeMap<String, u64>,
    /// Judgements the checkers did not make, with the runs that skipped each for each cause
    /// (a clock that left its drift bound, a clock the checkers were not told).
    pub skipped: BTreeMap<SkipKind, u64>,
    /// Per judgement (by name), the runs that skipped it for any cause: what
    /// [`SweepConfig::check`] compares with the runs judged.
    pub skipped_runs: BTreeMap<String, u64>,
}

/// A judgement a run did not make, and why: what a sweep counts skipped judgements by.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SkipKind {
    /// The judgement (`belief-within-grant`).
    pub judgement: String,
    /// Its invariant (`quiescent-holder`).
    pub invariant: String,
    /// Its invariant's id (`I5`).
    pub spec: String,
    /// Why, with no number in it (`its clock was configured beyond its drift bound`).
    pub cause: String,
}

impl SkipKind {
    /// `belief-within-grant (I5): its clock was configured beyond its drift bound`.
    pub fn label(&self) -> String {
        format!("{} ({}): {}", self.judgement, self.spec, self.cause)
    }
}

impl ScenarioOutcome {
    /// Seeds that ran and were judged (not the ones the machines cannot express).
    pub fn judged(&self) -> u64 {
        self.runs - self.not_expressible
    }

    /// The judgements no judged run of the scenario made (skipped in every one), each with
    /// the causes it was skipped for, leaving out those `allowed` names (by judgement,
    /// invariant or spec id).
    pub fn never_judged(&self, allowed: &[String]) -> Vec<(String, Vec<String>)> {
        let judged = self.judged();
        self.skipped_runs
            .iter()
            .filter(|(_, &runs)| judged > 0 && runs >= judged)
            .filter_map(|(judgement, _)| {
                let kinds: Vec<&SkipKind> = self
                    .skipped
                    .keys()
                    .filter(|k| &k.judgement == judgement)
                    .collect();
                let named = |name: &String| {
                    name == judgement
                        || kinds
                            .iter()
                            .any(|k| *name == k.invariant || name.eq_ignore_ascii_case(&k.spec))
                };
                (!allowed.iter().any(named)).then(|| {
                    let causes = kinds.iter().map(|k| k.cause.clone()).collect();
                    (judgement.clone(), causes)
                })
            })
            .collect()
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
    /// Threads it ran on: those that started, which is fewer than asked when the process's
    /// address space or the system let no more start ([`crate::pool::run`]).
    pub threads: usize,
    /// Whether it was stopped (its stop flag, or its first violation) before every seed ran.
    pub interrupted: bool,
    /// With a time budget: whether it was spent, and how close to it the sweep stopped.
    pub budget: Option<BudgetOutcome>,
}

/// How a sweep with a time budget ended.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct BudgetOutcome {
    /// The budget.
    pub budget: Duration,
    /// Whether it ran out before every seed of the share ran (what ran is then a prefix of
    /// the sweep's order; see [`ScenarioOutcome::ran`]).
    pub spent: bool,
    /// From the moment the budget ran out to the end of the last seed in flight (zero when
    /// every seed ran first): at most the longest seed, and the moment between a thread's last
    /// look at the clock and its seed's start.
    pub overrun: Duration,
    /// The longest any one seed took.
    pub slowest_seed: Duration,
}

impl SweepReport {
    /// The best counterexample among the failures kept: the shortest story (fewest faults,
    /// then fewest events, then lowest seed), whichever scenario found it.
    pub fn best_failure(&self) -> Option<&Failure> {
        self.scenarios
            .iter()
            .flat_map(|o| &o.failures)
            .min_by_key(|f| f.rank())
    }

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

    /// Hazard coverage by the one rule that `check()`, `leasesim sweep` and `leasesim merge`
    /// share: judged over a sweep that ran every seed of its range (not interrupted, not one
    /// shard of several, since a shard's share may miss a hazard another shard reaches; the
    /// merge of the shards judges it), as the declared hazards never reached
    /// ([`SweepReport::unreached`] with [`COVERAGE_MIN_SEEDS`]). `None`: not
    /// judged.
    pub fn coverage(&self, config: &SweepConfig) -> Option<Vec<(usize, Hazard)>> {
        let whole = !self.interrupted && config.shard.is_none_or(|s| s.count == 1);
        whole.then(|| self.unreached(config, COVERAGE_MIN_SEEDS))
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
            let expected = |h: &&Hazard| {
                config.machines.journals() || !crate::hazard::JOURNAL_ONLY.contains(h)
            };
            unreached.extend(
                d.hazards
                    .iter()
                    .filter(expected)
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
    /// Per scenario, the seeds that reached each hazard, by its place in [`Hazard::ALL`].
    hazards: Vec<[u64; Hazard::ALL.len()]>,
    /// Per scenario: time its seeds took, and the longest.
    busy: Vec<(Duration, Duration)>,
    /// Per scenario, the runs that skipped each (judgement, invariant, cause), and each
    /// judgement whatever the cause.
    skipped: Vec<SkippedRuns>,
    /// When its last seed ended, since the sweep began.
    last_end: Duration,
}

/// Per scenario and thread: runs that skipped a judgement, by (judgement, invariant, cause),
/// and by judgement alone.
#[derive(Default)]
struct SkippedRuns {
    by_cause: BTreeMap<(&'static str, &'static str, &'static str, &'static str), u64>,
    by_judgement: BTreeMap<&'static str, u64>,
}

impl SkippedRuns {
    /// Books one run's skipped judgements, each kind once however many nodes it was skipped for.
    fn book(&mut self, skipped: &[leasesim_checkers::Skipped]) {
        for (i, s) in skipped.iter().enumerate() {
            let key = (
                s.judgement,
                s.invariant.name(),
                s.invariant.spec_id(),
                s.cause,
            );
            let seen = |k: &leasesim_checkers::Skipped| {
                (k.judgement, k.invariant, k.cause) == (s.judgement, s.invariant, s.cause)
            };
            if !skipped[..i].iter().any(seen) {
                *self.by_cause.entry(key).or_default() += 1;
            }
            if !skipped[..i].iter().any(|k| k.judgement == s.judgement) {
                *self.by_judgement.entry(s.judgement).or_default() += 1;
            }
        }
    }
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
    let setup = config.scenarios[sc].build(seed, config.machines.setup_variant());
    config.machines.expressible(&setup)?;
    let failure = judge_seed(config, sc, seed, &setup, local, nondet);
    // The next seed's setup is built in this one's storage.
    crate::workspace::recycle_setup(setup);
    Ok(failure)
}

/// A run that did not hold as the sweep keeps it: its seed, its verdict and first finding.
fn failure_of(
    sc: usize,
    seed: u64,
    setup: &crate::Setup,
    r: &RunResult,
    verdict: Verdict,
) -> Failure {
    let node_names: Vec<String> = r.nodes.iter().map(|n| n.name.clone()).collect();
    let names = Names {
        nodes: &node_names,
        ops: &r.op_names,
    };
    let mut invariants: Vec<&'static str> = r.findings.iter().map(|f| f.invariant.name()).collect();
    invariants.sort_unstable();
    invariants.dedup();
    Failure {
        scenario: sc,
        seed,
        first: match (r.findings.first(), &r.machine_fault, &r.unfinished) {
            (Some(f), _, _) => reports::finding(&names, f),
            (None, Some(fault), _) => format!("{}: {fault}", verdict.word()),
            (None, None, Some(why)) => format!("{}: {why}", verdict.word()),
            (None, None, None) => verdict.word(),
        },
        verdict,
        invariants,
        faults: setup.faults.len(),
        events: r.events,
    }
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
                faults: setup.faults.len(),
                events: 0,
            });
        }
    }
    // A held run's trace is judged as it goes and not kept whole (`run_swept`), unless the
    // sweep compares two runs' traces.
    let (r, recorded) = if config.check_determinism {
        let r = run(setup, seed, &config.machines);
        if let Err(e) = check_same(&r, &run(setup, seed, &config.machines)) {
            nondet.push((sc, seed, e));
        }
        let recorded = r.trace.len();
        (r, recorded)
    } else {
        let swept = crate::run::run_swept(setup, seed, &config.machines);
        let recorded = swept.recorded();
        (swept.result, recorded)
    };
    local.events += r.events;
    local.trace_events += recorded as u64;
    for (h, _) in r.hazards.iter() {
        local.hazards[sc][*h as usize] += 1;
    }
    if !r.skipped.is_empty() {
        local.skipped[sc].book(&r.skipped);
    }
    let verdict = r.verdict();
    if verdict == Verdict::Held {
        crate::run::recycle(r);
        return None;
    }
    let failure = failure_of(sc, seed, setup, &r, verdict);
    // A failure is kept as its seed and first finding; a replay runs it again in full.
    crate::run::recycle(r);
    Some(failure)
}

/// Sweeps every seed of every scenario of `config` (its shard's share of them), stopping
/// between two runs once `stop` is set, starting no seed once its budget is spent; the observer
/// sees each chunk as it finishes.
// Long: the pool's worker closure shares the chunk queue, the clock and the stop flags with the report after it.
pub fn sweep(config: &SweepConfig, stop: &AtomicBool, observer: &dyn Observer) -> SweepReport {
    let n = config.scenarios.len();
    let items = config.items().unwrap_or(0..u64::MAX);
    let total = items.end - items.start;
    // Under a budget every seed is a chunk of its own: a chunk once taken runs to its end, so
    // the budget stops within one seed and what ran is a prefix of the order.
    let chunk = if config.budget.is_some() { 1 } else { CHUNK };
    let chunks = Chunks::new(total, chunk, stop);
    let threads = config.threads.clamp(1, pool::THREADS_MAX);
    let shared = Mutex::new(Shared {
        scenarios: vec![ScenarioOutcome::default(); n],
        kept: vec![BTreeMap::new(); n],
        done: BTreeMap::new(),
    });
    // The first violation ends the sweep early when asked, without touching the caller's flag.
    let violated = AtomicBool::new(false);
    let clock = Stopwatch::start();
    let spent = || config.budget.is_some_and(|b| clock.now() >= b);
    let locals = pool::run(threads, |_| {
        let mut local = Local {
            hazards: vec![[0; Hazard::ALL.len()]; n],
            busy: vec![(Duration::ZERO, Duration::ZERO); n],
            skipped: (0..n).map(|_| SkippedRuns::default()).collect(),
            ..Local::default()
        };
        while !spent() {
            let Some((index, chunk_items)) = chunks.take() else {
                break;
            };
            let begin = items.start + chunk_items.start;
            let mut failures = Vec::new();
            let mut nondet = Vec::new();
            let mut skipped = Vec::new();
            let mut ran = 0;
            for i in chunk_items {
                if chunks.stopped() || violated.load(Ordering::Relaxed) {
                    break;
                }
                let g = items.start + i;
                let (sc, seed) = ((g % n as u64) as usize, config.seeds.start + g / n as u64);
                let seed_started = clock.now();
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
                let ended = clock.now();
                local.last_end = local.last_end.max(ended);
                let took = ended.saturating_sub(seed_started);
                let (busy, slowest) = &mut local.busy[sc];
                *busy += took;
                *slowest = (*slowest).max(took);
                ran += 1;
            }
            observer.chunk_done(index, ran, &failures);
            let mut s = shared.lock().unwrap_or_else(|p| p.into_inner());
            s.record(begin, ran, n as u64, failures, nondet);
            s.skip(skipped);
            if violated.load(Ordering::Relaxed) {
                break;
            }
        }
        local
    });
    let mut shared = shared.into_inner().unwrap_or_else(|p| p.into_inner());
    // Fewer than asked when the address space or the system let no more start.
    let ran_on = locals.len();
    let (events, trace_events, last_end) = merge(&mut shared, locals);
    shared.finish(config);
    let runs = shared.scenarios.iter().map(|s| s.runs).sum();
    let budget = config.budget.map(|b| BudgetOutcome {
        budget: b,
        spent: runs < total && spent(),
        overrun: last_end.saturating_sub(b),
        slowest_seed: shared
            .scenarios
            .iter()
            .map(|o| o.slowest_seed)
            .max()
            .unwrap_or_default(),
    });
    let budget_ended = budget.is_some_and(|b| b.spent) && !stop.load(Ordering::Relaxed);
    SweepReport {
        scenarios: shared.scenarios,
        runs,
        events,
        trace_events,
        threads: ran_on,
        interrupted: runs < total && !violated.load(Ordering::Relaxed) && !budget_ended,
        budget: budget.map(|b| BudgetOutcome {
            overrun: if b.spent { b.overrun } else { Duration::ZERO },
            ..b
        }),
    }
}

/// Adds each thread's counts to the scenarios' outcomes; returns the events run and traced,
/// and when the last seed ended.
fn merge(shared: &mut Shared, locals: Vec<Local>) -> (u64, u64, Duration) {
    let (mut events, mut trace_events, mut last_end) = (0, 0, Duration::ZERO);
    for local in locals {
        events += local.events;
        last_end = last_end.max(local.last_end);
        trace_events += local.trace_events;
        for (((outcome, hazards), (busy, slowest)), skipped) in shared
            .scenarios
            .iter_mut()
            .zip(local.hazards)
            .zip(local.busy)
            .zip(local.skipped)
        {
            for (h, k) in Hazard::ALL.iter().zip(hazards).filter(|(_, k)| *k > 0) {
                *outcome.hazards.entry(*h).or_default() += k;
            }
            for ((judgement, invariant, spec, cause), k) in skipped.by_cause {
                let kind = SkipKind {
                    judgement: judgement.into(),
                    invariant: invariant.into(),
                    spec: spec.into(),
                    cause: cause.into(),
                };
                *outcome.skipped.entry(kind).or_default() += k;
            }
            for (judgement, k) in skipped.by_judgement {
                *outcome.skipped_runs.entry(judgement.into()).or_default() += k;
            }
            outcome.busy += busy;
            outcome.slowest_seed = outcome.slowest_seed.max(slowest);
        }
    }
    (events, trace_events, last_end)
}

/// The sweep's own wall time (its budget, the time its seeds take), outside any simulated world.
struct Stopwatch(std::time::Instant);

impl Stopwatch {
    fn start() -> Stopwatch {
        #[allow(clippy::disallowed_methods)] // the sweep's own duration, never the simulated world
        let started = std::time::Instant::now();
        Stopwatch(started)
    }

    /// Time since the sweep began.
    fn now(&self) -> Duration {
        self.0.elapsed()
    }
}

impl Shared {
    /// Books a chunk that started at item `begin` (of the seed-major order over `n` scenarios)
    /// and ran `ran` items.
    fn record(
        &mut self,
        begin: u64,
        ran: u64,
        n: u64,
        failures: Vec<Failure>,
        nondet: Vec<(usize, u64, String)>,
    ) {
        if ran > 0 {
            self.mark_done(begin, begin + ran);
            // Runs per scenario: a chunk holds seeds of every scenario.
            for (j, o) in self.scenarios.iter_mut().enumerate() {
                let seeds = offsets_of(&(begin..begin + ran), n, j as u64);
                o.runs += seeds.end - seeds.start;
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
    fn finish(&mut self, config: &SweepConfig) {
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
        let n = self.scenarios.len() as u64;
        for (&s, &e) in &self.done {
            for (j, o) in self.scenarios.iter_mut().enumerate() {
                let seeds = offsets_of(&(s..e), n, j as u64);
                if seeds.end > seeds.start {
                    let start = config.seeds.start + seeds.start;
                    let end = config.seeds.start + seeds.end;
                    // Item ranges that touch may still leave a scenario's seeds touching.
                    match o.ran.last_mut() {
                        Some(last) if last.end == start => last.end = end,
                        _ => o.ran.push(start..end),
                    }
                }
            }
        }
    }
}

/// Ranges of seeds as `A..B` joined by commas (`0..1000` for a whole sweep).
pub fn describe_ranges(ranges: &[Range<u64>]) -> String {
    if ranges.iter().all(|r| r.is_empty()) {
        return "none".into();
    }
    ranges
        .iter()
        .filter(|r| !r.is_empty())
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
    #[test]
    fn shards_cut_the_space_exactly_and_evenly_by_cost() {
        for names in [
            &["w1-w2"][..],
            &["w1-w2", "swarm"],
            &[
                "swarm",
                "renewal-cap",
                "w1-w2",
                "retries",
                "late-grant-reply",
            ],
        ] {
            for seeds in [(0, 1), (0, 3), (5, 17), (0, 1000), (7, 20007)] {
                let seeds = SeedRange {
                    start: seeds.0,
                    end: seeds.1,
                };
                let whole = config(names, seeds, Variant::Reference);
                let total = whole.total().unwrap();
                let costs: Vec<u64> = whole.scenarios.iter().map(seed_cost).collect();
                let cost_of = |items: &Range<u64>| -> u64 {
                    items
                        .clone()
                        .map(|g| costs[(g % costs.len() as u64) as usize])
                        .sum()
                };
                let all = cost_of(&(0..total));
                for count in 1..=9 {
                    let mut next = 0;
                    let mut seen = vec![0u64; names.len()];
                    for index in 1..=count {
                        let c = SweepConfig {
                            shard: Some(Shard::new(index, count).unwrap()),
                            ..whole.clone()
                        };
                        let items = c.items().unwrap();
                        assert_eq!(items.start, next, "{names:?} {seeds:?} {index}/{count}");
                        next = items.end;
                        // Within one seed's cost of an equal share.
                        let share = cost_of(&items) as f64;
                        let fair = all as f64 / count as f64;
                        let most = *costs.iter().max().unwrap() as f64;
                        assert!(
                            (share - fair).abs() <= most,
                            "{names:?} {seeds:?} {index}/{count}: {share} vs {fair}"
                        );
                        for (j, r) in c.share().unwrap().iter().enumerate() {
                            assert!(r.start >= seeds.start && r.end <= seeds.end);
                            seen[j] += r.end.saturating_sub(r.start);
                        }
                    }
                    assert_eq!(next, total, "together exactly the space");
                    assert!(seen.iter().all(|&k| k == seeds.len()), "{seen:?}");
                }
            }
        }
    }

    #[test]
    fn shards_together_give_what_the_whole_sweep_gives() {
        let names = ["w1-w2", "gc-pause-after-check", "retries"];
        let seeds = SeedRange { start: 3, end: 203 };
        let whole = config(&names, seeds, Variant::ReceiverIgnoresFence);
        let all = sweep(&whole, &AtomicBool::new(false), &Quiet);
        let mut failures = vec![Vec::new(); names.len()];
        let mut hazards = vec![BTreeMap::new(); names.len()];
        let mut ran = vec![Vec::new(); names.len()];
        for index in 1..=3 {
            let c = SweepConfig {
                shard: Some(Shard::new(index, 3).unwrap()),
                ..whole.clone()
            };
            let r = sweep(&c, &AtomicBool::new(false), &Quiet);
            assert_eq!(
                r.scenarios
                    .iter()
                    .map(|o| o.ran.clone())
                    .collect::<Vec<_>>(),
                c.share()
                    .unwrap()
                    .into_iter()
                    .map(|s| vec![s])
                    .collect::<Vec<_>>(),
                "a shard runs exactly its share"
            );
            for (j, o) in r.scenarios.iter().enumerate() {
                failures[j].extend(o.failures.iter().map(|f| (f.seed, f.first.clone())));
                for (h, k) in &o.hazards {
                    *hazards[j].entry(*h).or_insert(0) += k;
                }
                ran[j].extend(o.ran.iter().cloned());
            }
        }
        for (j, o) in all.scenarios.iter().enumerate() {
            let whole_failures: Vec<(u64, String)> = o
                .failures
                .iter()
                .map(|f| (f.seed, f.first.clone()))
                .collect();
            assert_eq!(failures[j], whole_failures);
            assert_eq!(hazards[j], o.hazards);
            assert_eq!(ran[j].iter().map(|r| r.end - r.start).sum::<u64>(), 200);
        }
        assert!(all.failing() > 0, "there were failures to compare");
    }

    #[test]
    fn shards_parse_and_come_from_the_usual_variables() {
        assert_eq!(Shard::parse("2/4"), Ok(Shard { index: 2, count: 4 }));
        for bad in ["0/4", "5/4", "1/0", "x", "2/", "-1/4", "1/100000"] {
            assert!(Shard::parse(bad).is_err(), "{bad}");
        }
        let from = |vars: &[(&str, &str)]| {
            let vars: Vec<(String, String)> = vars
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            Shard::from_vars(|name| vars.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone()))
        };
        assert_eq!(from(&[]), Ok(None));
        assert_eq!(
            from(&[("CI_NODE_TOTAL", "1")]),
            Ok(None),
            "GitLab sets it on every job"
        );
        let (s, source) = from(&[("CI_NODE_INDEX", "3"), ("CI_NODE_TOTAL", "4")])
            .unwrap()
            .unwrap();
        assert_eq!(
            (s, source.as_str()),
            (
                Shard { index: 3, count: 4 },
                "CI_NODE_INDEX=3 CI_NODE_TOTAL=4"
            )
        );
        let (s, _) = from(&[("JOB_COMPLETION_INDEX", "0"), (SHARD_TOTAL_VAR, "8")])
            .unwrap()
            .unwrap();
        assert_eq!(s, Shard { index: 1, count: 8 }, "Kubernetes counts from 0");
        let (s, source) = from(&[
            (SHARD_VAR, "1/2"),
            ("CI_NODE_INDEX", "3"),
            ("CI_NODE_TOTAL", "4"),
        ])
        .unwrap()
        .unwrap();
        assert_eq!(
            (s.index, source.as_str()),
            (1, "LEASESIM_SHARD=1/2"),
            "ours first"
        );
        assert!(from(&[("JOB_COMPLETION_INDEX", "0")])
            .unwrap_err()
            .contains(SHARD_TOTAL_VAR));
        assert!(from(&[("CI_NODE_INDEX", "5"), ("CI_NODE_TOTAL", "4")]).is_err());
        assert!(from(&[("CI_NODE_INDEX", "one"), ("CI_NODE_TOTAL", "4")]).is_err());
    }

    #[test]
    fn a_budget_runs_a_prefix_of_the_order_and_stops_within_a_seed() {
        let names = ["w1-w2", "swarm", "retries"];
        let c = SweepConfig {
            budget: Some(Duration::from_millis(300)),
            ..config(
                &names,
                SeedRange {
                    start: 40,
                    end: 40 + (1 << 40),
                },
                Variant::Reference,
            )
        };
        let r = sweep(&c, &AtomicBool::new(false), &Quiet);
        let b = r.budget.unwrap();
        assert!(b.spent && !r.interrupted && r.runs > 0);
        assert!(
            b.overrun <= b.slowest_seed + Duration::from_millis(50),
            "{b:?}"
        );
        // Seed-major prefix: every scenario ran 40..40+k or 40..40+k+1, the longer ones first.
        let ends: Vec<u64> = r
            .scenarios
            .iter()
            .map(|o| {
                assert_eq!(o.ran.len(), 1, "{:?}", o.ran);
                assert_eq!(o.ran[0].start, 40);
                o.ran[0].end
            })
            .collect();
        assert!(
            ends.windows(2).all(|w| w[0] == w[1] || w[0] == w[1] + 1),
            "{ends:?}"
        );
        assert_eq!(r.runs, ends.iter().map(|e| e - 40).sum::<u64>());
        // No budget left: nothing starts.
        let none = SweepConfig {
            budget: Some(Duration::ZERO),
            ..c.clone()
        };
        let r = sweep(&none, &AtomicBool::new(false), &Quiet);
        assert_eq!(r.runs, 0);
        assert!(r.budget.unwrap().spent);
        // A budget larger than the work: every seed runs and nothing is spent.
        let ample = SweepConfig {
            budget: Some(Duration::from_secs(3600)),
            seeds: SeedRange { start: 0, end: 10 },
            ..c
        };
        let r = sweep(&ample, &AtomicBool::new(false), &Quiet);
        assert_eq!(r.runs, 30);
        assert!(!r.budget.unwrap().spent && !r.interrupted);
    }
}
