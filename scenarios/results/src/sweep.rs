//! A sweep's results as every report shows them (text, JSON, JUnit, the job summary, merge):
//! one sweep's, or its shards' merged. The `sweep` command makes them, the renderers read them.

use crate::{io, BadInput};
use leasesim::files::OutDir;
use leasesim::hazard::Hazard;
use leasesim::replay::{shrunk_path, Replay};
use leasesim::run::{command_prefix, reproduce_command_for};
use leasesim::run::{rerun_command, run};
use leasesim::scenarios::ScenarioDef;
use leasesim::shrink;
use leasesim::sweep::{describe_ranges, Failure, ScenarioOutcome, Shard, SweepConfig, SweepReport};
use leasesim::Machines;
use leasesim_reports::matrix::file_stem;
use serde_json::json;
use std::collections::BTreeMap;
use std::io::Write;
use std::ops::Range;
use std::path::PathBuf;

/// Failures printed per scenario; the rest are counted and listed in the file.
pub const PRINT_FAILURES_MAX: usize = 20;
/// The name a result file carries, so `merge` never reads another program's JSON as a sweep.
pub const RESULT_FORMAT: &str = "leasesim-sweep";
/// The version of the result file's layout.
pub const RESULT_VERSION: u64 = 1;
/// The first failure of a sweep, shrunk and saved.
pub struct Shrunk {
    /// The shrunk replay file.
    pub path: PathBuf,
    /// Seconds the shrinking took.
    pub seconds: f64,
    /// Faults of the plan before and after.
    pub faults_before: usize,
    /// Faults of the shrunk plan.
    pub faults_after: usize,
    /// The invariant it still breaks (its label).
    pub invariant: String,
    /// Its scenario, for the command that reruns it.
    pub scenario: String,
}

/// What a sweep saved of its failures.
#[derive(Default)]
pub struct Saved {
    /// Replay files written.
    pub replays: usize,
    /// Where each was written, by (scenario, seed).
    pub paths: BTreeMap<(usize, u64), String>,
    /// The first failure, shrunk.
    pub shrunk: Option<Shrunk>,
    /// What could not be saved.
    pub errors: Vec<String>,
}
/// Why seeds were not expressible, most frequent first.
fn reasons(o: &ScenarioOutcome) -> String {
    let mut rs: Vec<(&String, &u64)> = o.not_expressible_reasons.iter().collect();
    rs.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    rs.iter()
        .map(|(r, n)| {
            if **n == o.not_expressible {
                (*r).clone()
            } else {
                format!("{r} ({n})")
            }
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// How a sweep (or the merge of its shards) ends.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Every seed held, every declared hazard was reached where judged.
    Held,
    /// A seed failed, a declared hazard was never reached, or a seed was not deterministic.
    Failed,
    /// Stopped by a signal before its share ran.
    Interrupted,
    /// Shards merged that are not the whole sweep: one missing, given twice or interrupted.
    Incomplete,
    /// No run was judged (a budget spent before the first seed, a shard without a run, every
    /// seed not expressible): a sweep that ran nothing must not pass.
    Empty,
}

impl Outcome {
    /// The word the reports print.
    pub fn word(self) -> &'static str {
        match self {
            Outcome::Held => "HELD",
            Outcome::Failed => "FAILED",
            Outcome::Interrupted => "INTERRUPTED",
            Outcome::Incomplete => "INCOMPLETE",
            Outcome::Empty => "EMPTY",
        }
    }

    /// The exit code (a signal's own code for an interrupted sweep is the caller's).
    pub fn exit_code(self) -> i32 {
        match self {
            Outcome::Held => 0,
            Outcome::Interrupted => 130,
            Outcome::Failed | Outcome::Incomplete => 1,
            Outcome::Empty => 2,
        }
    }
}

/// Where a merged result came from.
pub struct Merged {
    /// Each file with its shard (`None` for an unsharded sweep) and its runs.
    pub files: Vec<(String, Option<Shard>, u64)>,
    /// What keeps the shards from being the whole sweep (a missing, repeated or interrupted
    /// shard).
    pub problems: Vec<String>,
    /// Sum of the shards' wall times.
    pub elapsed_sum: f64,
}

/// A sweep's results as every report shows them (text, JSON, JUnit, Markdown): one sweep's, or
/// its shards' merged.
pub struct Results {
    /// The scenarios swept.
    pub defs: Vec<ScenarioDef>,
    /// How many scenarios the program has (a sweep of all of them names none), and whether
    /// they are all leasesim's own (leasesim's binary can then repeat it).
    pub program_scenarios: (usize, bool),
    /// The space (its seeds), the machines, the shard and the budget.
    pub config: SweepConfig,
    /// What the sweep found.
    pub report: SweepReport,
    /// How the shard was chosen (`--shard`, or the variables that named it).
    pub shard_source: Option<String>,
    /// The base `--seeds random` drew.
    pub random: Option<u64>,
    /// Per scenario, the seeds of this run's share.
    pub share: Vec<Range<u64>>,
    /// Whether hazard coverage was judged (not in one shard of several, not when interrupted).
    pub coverage_judged: bool,
    /// The declared hazards never reached, by scenario index ([`SweepReport::coverage`]).
    pub unreached: Vec<(usize, Hazard)>,
    /// Wall time in seconds (for a merge: the longest shard's).
    pub elapsed: f64,
    /// The failure list written, if any.
    pub listed: Option<PathBuf>,
    /// The replays saved and the first failure shrunk.
    pub saved: Saved,
    /// For a merge: the shards it was made of.
    pub merged: Option<Merged>,
}

/// Scenarios grouped by the seed ranges they share, in order: `[(0..100, [w1-w2, swarm])]`.
pub fn groups<'a>(
    defs: &[ScenarioDef],
    ranges: impl Iterator<Item = &'a [Range<u64>]>,
) -> Vec<(Range<u64>, Vec<String>)> {
    let ranges: Vec<&[Range<u64>]> = ranges.collect();
    // A shard or a budget runs one range per scenario, all alike give or take a seed at either
    // end (and the shards of a budgeted merge one such range each): said as the seeds every
    // scenario ran, then the seeds some ran besides, range by range.
    let k = ranges.first().map_or(0, |rs| rs.len());
    let aligned = ranges.len() == defs.len() && ranges.iter().all(|rs| rs.len() == k);
    let mut split: Vec<Vec<Range<u64>>> = ranges.iter().map(|rs| rs.to_vec()).collect();
    if aligned {
        for i in 0..k {
            let start = ranges.iter().map(|rs| rs[i].start).max().unwrap_or(0);
            let end = ranges.iter().map(|rs| rs[i].end).min().unwrap_or(0);
            if start >= end {
                continue;
            }
            for (rs, out) in ranges.iter().zip(&mut split) {
                let r = &rs[i];
                out.retain(|x| x != r);
                out.extend([r.start..start, start..end, end..r.end]);
            }
        }
    }
    let mut out: Vec<(Range<u64>, Vec<String>)> = Vec::new();
    for (d, rs) in defs.iter().zip(&split) {
        for r in rs.iter().filter(|r| !r.is_empty()) {
            match out.iter_mut().find(|(g, _)| g == r) {
                Some((_, names)) => names.push(d.name.to_string()),
                None => out.push((r.clone(), vec![d.name.to_string()])),
            }
        }
    }
    out.sort_by_key(|(r, _)| (r.start, std::cmp::Reverse(r.end)));
    out
}

/// `0..100 of every scenario; 100..101 of w1-w2, retries` (`none` when empty), for a sweep of
/// `every` scenarios.
pub fn describe_groups(groups: &[(Range<u64>, Vec<String>)], every: usize) -> String {
    if groups.is_empty() {
        return "none".into();
    }
    groups
        .iter()
        .map(|(r, names)| {
            let whom = if names.len() == every && every > 1 {
                "every scenario".to_string()
            } else {
                names.join(", ")
            };
            format!("{}..{} of {whom}", r.start, r.end)
        })
        .collect::<Vec<_>>()
        .join("; ")
}

impl Results {
    /// The verdict.
    pub fn outcome(&self) -> Outcome {
        let r = &self.report;
        if self.merged.as_ref().is_some_and(|m| !m.problems.is_empty()) {
            Outcome::Incomplete
        } else if r.interrupted {
            Outcome::Interrupted
        } else if self.empty().is_some() {
            Outcome::Empty
        } else if r.failing() > 0
            || !self.unreached.is_empty()
            || !self.never_judged().is_empty()
            || r.nondeterministic() > 0
        {
            Outcome::Failed
        } else {
            Outcome::Held
        }
    }

    /// The judgements skipped in every judged run of a scenario and not allowed by name, with
    /// the scenario's place and the causes; judged like hazard coverage, over the whole sweep.
    pub fn never_judged(&self) -> Vec<(usize, String, Vec<String>)> {
        if !self.coverage_judged {
            return Vec::new();
        }
        self.report
            .scenarios
            .iter()
            .enumerate()
            .flat_map(|(i, o)| {
                o.never_judged(&leasesim::check::allowed(
                    &self.config.allow_skipped,
                    &self.defs[i],
                ))
                .into_iter()
                .map(move |(j, causes)| (i, j, causes))
            })
            .collect()
    }

    /// Per judgement over every scenario: the runs that skipped it (for any cause), with its
    /// invariant's id, in name order.
    pub fn skipped_totals(&self) -> Vec<(String, String, u64)> {
        let mut totals: BTreeMap<(String, String), u64> = BTreeMap::new();
        for o in &self.report.scenarios {
            for (judgement, n) in &o.skipped_runs {
                let spec = o
                    .skipped
                    .keys()
                    .find(|k| &k.judgement == judgement)
                    .map_or(String::new(), |k| k.spec.clone());
                *totals.entry((judgement.clone(), spec)).or_default() += n;
            }
        }
        totals.into_iter().map(|((j, s), n)| (j, s, n)).collect()
    }

    /// Why no run was judged, when none was: seeds not expressible are skipped, never passed.
    pub fn empty(&self) -> Option<String> {
        let r = &self.report;
        if r.runs > r.not_expressible() {
            return None;
        }
        Some(if r.budget.is_some_and(|b| b.spent) && r.runs == 0 {
            "the time budget ran out before any seed ran; give a longer --for".to_string()
        } else if r.runs > 0 {
            format!(
                "no seed was expressible by {}, so none was judged",
                self.config.machines.name()
            )
        } else {
            format!("{} holds no run of this sweep", self.scope())
        })
    }

    /// The seconds its rates are over: its wall time, or for a merge every shard's together.
    fn busy_seconds(&self) -> f64 {
        self.merged
            .as_ref()
            .map_or(self.elapsed, |mg| mg.elapsed_sum)
            .max(1e-9)
    }

    /// Runs in this run's share (the whole space unless sharded).
    pub fn share_runs(&self) -> u64 {
        self.share.iter().map(|r| r.end - r.start).sum()
    }

    /// `shard 2/4` or `merged 4 shards` or `whole sweep`.
    pub fn scope(&self) -> String {
        match (&self.merged, self.config.shard) {
            (Some(m), _) => format!("{} shard result(s) merged", m.files.len()),
            (None, Some(s)) => format!("shard {s}"),
            (None, None) => "the whole sweep".into(),
        }
    }

    /// The command that starts this program's sweep.
    fn program(&self) -> String {
        let m = &self.config.machines;
        // Machines leasesim's own command line selects (a SQL file, a process) run there too.
        command_prefix((m.is_stock() || m.command_line().is_some()) && self.program_scenarios.1)
    }

    /// Commands that run exactly the seeds that ran, one per group of scenarios that ran the
    /// same seeds.
    pub fn repeat(&self) -> Vec<String> {
        let m = &self.config.machines;
        // A group's scenarios go unnamed only when they are every scenario the program has:
        // a command without names sweeps them all.
        let every = self.program_scenarios.0;
        let ran = groups(
            &self.defs,
            self.report.scenarios.iter().map(|o| o.ran.as_slice()),
        );
        ran.iter()
            .map(|(r, names)| {
                let mut c = format!("{} sweep", self.program());
                if names.len() < every {
                    c.push(' ');
                    c.push_str(&names.join(" "));
                }
                c.push_str(&format!(" --seeds {}..{}", r.start, r.end));
                match m.command_line() {
                    Some(args) => c.push_str(&format!(" {args}")),
                    None if !(m.is_stock() && m.name() == "reference") => {
                        c.push_str(&format!(" --variant {}", m.name()))
                    }
                    None => {}
                }
                if self.config.allow_unsafe_timing {
                    c.push_str(" --allow-unsafe-timing");
                }
                if self.config.check_determinism {
                    c.push_str(" --check-determinism");
                }
                c
            })
            .collect()
    }

    /// The replay file saved for a failure, if any.
    pub fn replay(&self, scenario: usize, seed: u64) -> Option<&str> {
        self.saved.paths.get(&(scenario, seed)).map(String::as_str)
    }

    /// The result document (`--json`, what `merge` reads back).
    pub fn json(&self) -> serde_json::Value {
        let r = &self.report;
        let m = &self.config.machines;
        let mut doc = json!({
            "format": RESULT_FORMAT,
            "format_version": RESULT_VERSION,
            "leasesim_version": env!("CARGO_PKG_VERSION"),
            "verdict": self.outcome().word().to_lowercase(),
            "variant": m.name(),
            "known_bad": m.is_known_bad(),
            "seeds": {"start": self.config.seeds.start, "end": self.config.seeds.end},
            "seeds_random_base": self.random,
            "check_determinism": self.config.check_determinism,
            "allow_unsafe_timing": self.config.allow_unsafe_timing,
            "shard": self.config.shard.map(|s| json!({
                "index": s.index,
                "count": s.count,
                "source": self.shard_source,
            })),
            "budget": r.budget.map(|b| json!({
                "budget_s": b.budget.as_secs_f64(),
                "spent": b.spent,
                "overrun_s": b.overrun.as_secs_f64(),
                "slowest_seed_s": b.slowest_seed.as_secs_f64(),
            })),
            "interrupted": r.interrupted,
            "coverage_judged": self.coverage_judged,
            "merged": self.merged.as_ref().map(|mg| json!({
                "files": mg.files.iter().map(|(f, s, runs)| json!({
                    "file": f,
                    "shard": s.map(|s| s.to_string()),
                    "runs": runs,
                })).collect::<Vec<_>>(),
                "problems": mg.problems,
                "elapsed_sum_s": mg.elapsed_sum,
            })),
            "scenarios": self.defs.iter().enumerate().map(|(i, d)| self.scenario_json(i, d)).collect::<Vec<_>>(),
            "runs": r.runs,
            "share_runs": self.share_runs(),
            "failing": r.failing(),
            "not_expressible": r.not_expressible(),
            "unreached_hazards": self.unreached.len(),
            "skipped_runs": self.skipped_totals().iter().map(|(j, _, n)| (j.clone(), json!(n))).collect::<serde_json::Map<_, _>>(),
            "never_judged": self.never_judged().len(),
            "allow_skipped": self.config.allow_skipped,
            "events": r.events,
            "elapsed_s": self.elapsed,
            "seeds_per_s": r.runs as f64 / self.busy_seconds(),
            "events_per_s": r.events as f64 / self.busy_seconds(),
            "threads": r.threads,
            "repeat": self.repeat(),
            "failure_list": self.listed.as_ref().map(|p| p.display().to_string()),
            "replays_saved": self.saved.replays,
            "shrunk": self.saved.shrunk.as_ref().map(|s| json!({
                "replay": s.path.display().to_string(),
                "elapsed_s": s.seconds,
                "faults_before": s.faults_before,
                "faults_after": s.faults_after,
                "invariant": s.invariant,
            })),
            "determinism_checked": self.config.check_determinism,
            "nondeterministic": r.nondeterministic(),
        });
        // Why nothing was judged, beside the verdict `empty` (null when runs were judged).
        doc["empty"] = self.empty().into();
        doc["threads_asked"] = self.config.threads.into();
        doc
    }

    /// The text a terminal shows: the merged files, one line per scenario with its first
    /// failing seeds, the hazard coverage, what was saved and checked, how the sweep stopped,
    /// and the totals.
    pub fn text(&self, out: &mut dyn Write) -> Result<(), BadInput> {
        self.merged_files(out)?;
        for (i, d) in self.defs.iter().enumerate() {
            self.scenario_text(out, d, &self.report.scenarios[i])?;
        }
        self.coverage(out)?;
        self.saved_and_checked(out)?;
        self.how_it_stopped(out)?;
        if let Some(why) = self.empty() {
            io(writeln!(out, "sweep: NOTHING RAN, no verdict: {why}"))?;
        }
        self.totals(out)
    }

    /// The result files a merge read, one line each.
    fn merged_files(&self, out: &mut dyn Write) -> Result<(), BadInput> {
        if let Some(mg) = &self.merged {
            for (file, shard, runs) in &mg.files {
                io(writeln!(
                    out,
                    "merged {file}: {} ({runs} runs)",
                    shard.map_or("the whole sweep".into(), |s| format!("shard {s}"))
                ))?;
            }
        }
        Ok(())
    }

    /// A scenario's line, its first failing seeds with the commands that reproduce them, and
    /// how many more there are.
    fn scenario_text(
        &self,
        out: &mut dyn Write,
        d: &ScenarioDef,
        o: &ScenarioOutcome,
    ) -> Result<(), BadInput> {
        let m = &self.config.machines;
        let verdict = if o.runs > 0 && o.not_expressible == o.runs {
            "NOT EXPRESSIBLE".to_string()
        } else if o.failing == 0 {
            "held".to_string()
        } else {
            format!("{} FAILING", o.failing)
        };
        let skipped = match o.not_expressible {
            0 => String::new(),
            n if n == o.runs => format!(": {}", reasons(o)),
            n => format!(" ({n} not expressible: {})", reasons(o)),
        };
        io(writeln!(
            out,
            "{:<26} {} seeds  {verdict}{skipped}",
            d.name, o.runs,
        ))?;
        for f in o.failures.iter().take(PRINT_FAILURES_MAX) {
            io(writeln!(out, "  seed {}: {}", f.seed, f.first))?;
            io(writeln!(
                out,
                "    reproduce: {}",
                reproduce_command_for(m, &d.name, f.seed)
            ))?;
        }
        let more = o.failing.saturating_sub(PRINT_FAILURES_MAX as u64);
        if more > 0 {
            io(writeln!(out, "  ... and {more} more failing seeds"))?;
        }
        if o.failing > o.failures.len() as u64 {
            io(writeln!(
                out,
                "  (the lowest {} of its {} failing seeds are kept in the results)",
                o.failures.len(),
                o.failing
            ))?;
        }
        Ok(())
    }

    /// Where the failing seeds were saved, the shrunk first failure, and the determinism check.
    fn saved_and_checked(&self, out: &mut dyn Write) -> Result<(), BadInput> {
        let r = &self.report;
        let m = &self.config.machines;
        if let Some(path) = &self.listed {
            io(writeln!(
                out,
                "failing seeds listed in {}, with {} replay file(s) beside it",
                path.display(),
                self.saved.replays
            ))?;
        }
        if let Some(s) = &self.saved.shrunk {
            io(writeln!(
                out,
                "first failure shrunk in {:.3}s: {} fault(s) -> {}, {} still fails; see it with: {}",
                s.seconds,
                s.faults_before,
                s.faults_after,
                s.invariant,
                rerun_command(m, &s.scenario, &s.path)
            ))?;
        }
        for (i, o) in r.scenarios.iter().enumerate() {
            for (seed, e) in &o.nondeterministic_seeds {
                io(writeln!(
                    out,
                    "NOT DETERMINISTIC: {} seed {seed}: {e}",
                    self.defs[i].name
                ))?;
            }
        }
        if self.config.check_determinism {
            io(writeln!(
                out,
                "determinism: every seed ran twice; {} differed",
                r.nondeterministic()
            ))?;
        }
        if let Some(mg) = &self.merged {
            for p in &mg.problems {
                io(writeln!(out, "INCOMPLETE: {p}"))?;
            }
        }
        Ok(())
    }

    /// How the sweep stopped (interrupted, out of time, or one shard's seeds) and how to repeat
    /// exactly its runs.
    fn how_it_stopped(&self, out: &mut dyn Write) -> Result<(), BadInput> {
        let r = &self.report;
        let ran = describe_groups(
            &groups(&self.defs, r.scenarios.iter().map(|o| o.ran.as_slice())),
            self.defs.len(),
        );
        if r.interrupted {
            let ran: Vec<String> = self
                .defs
                .iter()
                .zip(&r.scenarios)
                .filter(|(_, o)| o.runs > 0)
                .map(|(d, o)| format!("{} {}", d.name, describe_ranges(&o.ran)))
                .collect();
            io(writeln!(
                out,
                "sweep: INTERRUPTED after {} of {} runs (seeds run: {}); {} failing found so far, saved above; hazard coverage is not judged",
                r.runs,
                self.share_runs(),
                if ran.is_empty() { "none".to_string() } else { ran.join("; ") },
                r.failing()
            ))?;
        } else if let Some(b) = r.budget.filter(|b| b.spent) {
            io(writeln!(
                out,
                "sweep: time budget {:.3}s spent after {} of {} runs, stopped {:.3}s past it (the slowest seed took {:.3}s); ran seeds {ran}",
                b.budget.as_secs_f64(),
                r.runs,
                self.share_runs(),
                b.overrun.as_secs_f64(),
                b.slowest_seed.as_secs_f64(),
            ))?;
        } else if self.config.shard.is_some() || self.merged.is_some() {
            io(writeln!(out, "ran seeds {ran}"))?;
        }
        let again = r.interrupted || r.budget.is_some_and(|b| b.spent) || self.random.is_some();
        if again && r.runs > 0 {
            io(writeln!(
                out,
                "repeat exactly these runs: {}",
                self.repeat().join("; ")
            ))?;
        }
        Ok(())
    }

    /// The last line: runs, scope, variant, time, rates, failures and what was not judged.
    fn totals(&self, out: &mut dyn Write) -> Result<(), BadInput> {
        let r = &self.report;
        let m = &self.config.machines;
        // A merge's rates are over the time of every shard (the machines' throughput); its wall
        // time, with the shards in parallel, is the longest shard's.
        let secs = self.busy_seconds();
        let time = match &self.merged {
            Some(mg) => format!(
                "in {:.2}s over every shard on up to {} thread(s) each, {:.2}s the longest",
                mg.elapsed_sum, r.threads, self.elapsed
            ),
            None if r.threads < self.config.threads => format!(
                "on {} thread(s), of {} asked (the process's address-space limit or the system let no more start), in {:.2}s",
                r.threads, self.config.threads, self.elapsed
            ),
            None => format!("on {} thread(s) in {:.2}s", r.threads, self.elapsed),
        };
        let scope = match (&self.merged, self.config.shard) {
            (None, Some(s)) => format!("shard {s} of "),
            (Some(mg), _) => format!("{} merged result(s) of ", mg.files.len()),
            (None, None) => String::new(),
        };
        let mut skipped = match r.not_expressible() {
            0 => String::new(),
            n => format!(
                ", {n} not expressible by {} (skipped, never passed)",
                m.name()
            ),
        };
        // A verdict that held says what it does not rest on.
        let judged: u64 = r.scenarios.iter().map(|o| o.judged()).sum();
        let totals: Vec<String> = self
            .skipped_totals()
            .iter()
            .map(|(j, spec, n)| format!("{j} ({spec}) in {n} of {judged} runs"))
            .collect();
        if !totals.is_empty() {
            skipped.push_str(&format!("; not judged: {}", totals.join(", ")));
        }
        io(writeln!(
            out,
            "sweep: {} runs ({scope}{} scenario(s) x {} seeds, variant {}) {}: {:.0} seeds/s, {:.0} events/s; {} failing{skipped}{}",
            r.runs,
            self.defs.len(),
            self.config.seeds.len(),
            m.name(),
            time,
            r.runs as f64 / secs,
            r.events as f64 / secs,
            r.failing(),
            if self.merged.is_some() {
                format!("; verdict {}", self.outcome().word())
            } else {
                String::new()
            }
        ))
    }

    /// One scenario's part of the result document.
    fn scenario_json(&self, i: usize, d: &ScenarioDef) -> serde_json::Value {
        let m = &self.config.machines;
        let range = |s: &Range<u64>| json!({"start": s.start, "end": s.end});
        let o = &self.report.scenarios[i];
        json!({
            "name": d.name,
            "runs": o.runs,
            "share": range(&self.share[i]),
            "ran": o.ran.iter().map(range).collect::<Vec<_>>(),
            "failing": o.failing,
            "unfinished": o.unfinished,
            "nondeterministic": o.nondeterministic,
            "nondeterministic_seeds": o.nondeterministic_seeds.iter().map(|(seed, e)| json!({"seed": seed, "difference": e})).collect::<Vec<_>>(),
            "busy_s": o.busy.as_secs_f64(),
            "slowest_seed_s": o.slowest_seed.as_secs_f64(),
            "not_expressible": o.not_expressible,
            "not_expressible_reasons": o.not_expressible_reasons,
            "hazards": o.hazards.iter().map(|(h, n)| (h.name().to_string(), json!(n))).collect::<serde_json::Map<_, _>>(),
            "declared_hazards": d.hazards.iter().map(|h| h.name()).collect::<Vec<_>>(),
            "unreached_hazards": self.unreached.iter().filter(|(s, _)| *s == i).map(|(_, h)| h.name()).collect::<Vec<_>>(),
            "skipped": o.skipped.iter().map(|(k, n)| json!({
                "judgement": k.judgement,
                "invariant": k.invariant,
                "spec": k.spec,
                "cause": k.cause,
                "runs": n,
            })).collect::<Vec<_>>(),
            "skipped_runs": o.skipped_runs,
            "never_judged": self.never_judged().iter().filter(|(s, _, _)| *s == i).map(|(_, j, _)| j.clone()).collect::<Vec<_>>(),
            "failures_listed": o.failures.len(),
            "failures": o.failures.iter().map(|f| failure_json(
                f,
                reproduce_command_for(m, &d.name, f.seed),
                self.replay(i, f.seed),
            )).collect::<Vec<_>>(),
        })
    }

    fn coverage(&self, out: &mut dyn Write) -> Result<(), BadInput> {
        io(writeln!(
            out,
            "hazard coverage (seeds that reached each hazard; * declared by the scenario):"
        ))?;
        for (i, d) in self.defs.iter().enumerate() {
            let hazards = &self.report.scenarios[i].hazards;
            let mut cells: Vec<String> = hazards
                .iter()
                .map(|(h, n)| {
                    format!(
                        "{}{} {n}",
                        h.name(),
                        if d.hazards.contains(h) { "*" } else { "" }
                    )
                })
                .collect();
            let o = &self.report.scenarios[i];
            if o.runs > 0 && o.not_expressible == o.runs {
                cells = vec!["not expressible".to_string()];
            } else {
                for h in d.hazards.iter().filter(|h| !hazards.contains_key(h)) {
                    cells.push(format!("{}* NEVER", h.name()));
                }
            }
            io(writeln!(
                out,
                "  {:<26} {}",
                d.name,
                if cells.is_empty() {
                    "none".to_string()
                } else {
                    cells.join(", ")
                }
            ))?;
        }
        for (i, h) in &self.unreached {
            io(writeln!(
                out,
                "FAIL: {} never reached its declared hazard {} ({}) in {} seeds",
                self.defs[*i].name,
                h.name(),
                h.summary(),
                self.report.scenarios[*i].runs
            ))?;
        }
        self.skipped_judgements(out)?;
        if !self.coverage_judged && !self.report.interrupted {
            io(writeln!(
                out,
                "hazard coverage is judged over every shard together: `leasesim merge` of the shards' --json results"
            ))?;
        }
        Ok(())
    }

    /// The judgements the checkers skipped, and why; a judgement never made fails the sweep.
    fn skipped_judgements(&self, out: &mut dyn Write) -> Result<(), BadInput> {
        if self.report.scenarios.iter().any(|o| !o.skipped.is_empty()) {
            io(writeln!(
                out,
                "skipped judgements (runs in which the checkers did not make one, and why; * voided by the scenario's story):"
            ))?;
            for (d, o) in self.defs.iter().zip(&self.report.scenarios) {
                for (k, n) in &o.skipped {
                    let by_story = if d.unjudged.contains(&k.judgement.as_str()) {
                        "*"
                    } else {
                        ""
                    };
                    io(writeln!(
                        out,
                        "  {:<26} {}{by_story} ({}) in {n} of {} runs: {}",
                        d.name,
                        k.judgement,
                        k.spec,
                        o.judged(),
                        k.cause
                    ))?;
                }
            }
        }
        for (i, judgement, causes) in self.never_judged() {
            io(writeln!(
                out,
                "FAIL: {} never judged {judgement}: skipped in all {} runs ({}); --allow-skipped {judgement} if that is meant",
                self.defs[i].name,
                self.report.scenarios[i].judged(),
                causes.join("; ")
            ))?;
        }
        Ok(())
    }
}

/// One kept failure in a sweep's JSON result.
fn failure_json(f: &Failure, reproduce: String, replay: Option<&str>) -> serde_json::Value {
    json!({
        "seed": f.seed,
        "verdict": f.verdict,
        "invariants": f.invariants,
        "first": f.first,
        "faults": f.faults,
        "events": f.events,
        "reproduce": reproduce,
        "replay": replay,
    })
}

/// Replay files one sweep writes at most (for the first printed failures).
pub const REPLAYS_PER_SWEEP: usize = 100;
/// The printed failures, in printed order: the first [`PRINT_FAILURES_MAX`] of each scenario.
pub fn printed(report: &SweepReport) -> impl Iterator<Item = &Failure> {
    report
        .scenarios
        .iter()
        .flat_map(|s| s.failures.iter().take(PRINT_FAILURES_MAX))
}

/// Saves a replay file for each printed failure (at most [`REPLAYS_PER_SWEEP`], the first
/// ones) and, unless told not to, the first failure shrunk. Files of other sweeps in the folder
/// are left alone. Problems are collected, never fatal: the failing seeds are printed anyway.
/// When the sweep ran to its end, a signal (`stop`) ends the saving after the replay under
/// way, and the shrinking with the smallest failing plan found so far; the failure list
/// already holds every failing seed.
pub fn save_failures(
    dir: &OutDir,
    defs: &[ScenarioDef],
    m: &Machines,
    report: &SweepReport,
    shrink_first: bool,
    stop: &std::sync::atomic::AtomicBool,
) -> Saved {
    let mut saved = Saved::default();
    let mut first: Option<(PathBuf, Replay)> = None;
    for f in printed(report).take(REPLAYS_PER_SWEEP) {
        // A sweep a signal stopped saves its replays (a second signal ends it at once); a
        // sweep that ran to its end stops saving at its first signal.
        if shrink_first && stop.load(std::sync::atomic::Ordering::Relaxed) {
            break;
        }
        let d = &defs[f.scenario];
        let setup = d.build(f.seed, m.setup_variant());
        let r = run(&setup, f.seed, m);
        let path = dir.path.join(format!(
            "{}-{}-seed{}.json",
            d.name,
            file_stem(m.name()),
            f.seed
        ));
        let replay = Replay::record_on(
            &setup,
            f.seed,
            true,
            &r,
            m,
            &rerun_command(m, &d.name, &path),
        );
        match replay.save(&path) {
            Ok(()) => {
                saved.replays += 1;
                saved
                    .paths
                    .insert((f.scenario, f.seed), path.display().to_string());
                if first.is_none() {
                    first = Some((path, replay));
                }
            }
            Err(e) => {
                saved.errors.push(e);
                break;
            }
        }
    }
    // The first failure, shrunk, so the report starts from a handful of faults.
    let stopped = stop.load(std::sync::atomic::Ordering::Relaxed);
    if let (Some((path, replay)), true) = (first, shrink_first && !stopped) {
        shrink_and_save(&mut saved, &path, &replay, m, stop);
    }
    saved
}

/// Shrinks a saved failure's replay (at `path`) and saves the result beside it.
fn shrink_and_save(
    saved: &mut Saved,
    path: &std::path::Path,
    replay: &Replay,
    m: &Machines,
    stop: &std::sync::atomic::AtomicBool,
) {
    #[allow(clippy::disallowed_methods)] // the shrinker's own duration
    let started = std::time::Instant::now();
    if let Ok(mut s) = shrink::shrink_until(replay, m, stop) {
        let elapsed = started.elapsed().as_secs_f64();
        let dest = shrunk_path(path);
        if let Some(rec) = &mut s.replay.machines {
            rec.rerun = rerun_command(m, &s.replay.setup.scenario, &dest);
        }
        match s.replay.save(&dest) {
            Ok(()) => {
                saved.shrunk = Some(Shrunk {
                    path: dest,
                    seconds: elapsed,
                    faults_before: s.faults_before,
                    faults_after: s.replay.setup.faults.len(),
                    invariant: s.invariant.label(),
                    scenario: s.replay.setup.scenario.clone(),
                })
            }
            Err(e) => saved.errors.push(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use leasesim::scenarios;

    #[test]
    fn seeds_that_ran_are_grouped_by_what_every_scenario_ran() {
        let defs: Vec<ScenarioDef> = ["w1-w2", "retries", "swarm"]
            .iter()
            .map(|n| scenarios::find(n).unwrap().clone())
            .collect();
        // Per scenario, its ranges as (start, end).
        let say = |ranges: [&[(u64, u64)]; 3]| {
            let ranges: Vec<Vec<Range<u64>>> = ranges
                .iter()
                .map(|rs| rs.iter().map(|&(a, b)| a..b).collect())
                .collect();
            describe_groups(&groups(&defs, ranges.iter().map(Vec::as_slice)), defs.len())
        };
        // A budget: a prefix of the seed-major order.
        assert_eq!(
            say([&[(5, 9)], &[(5, 9)], &[(5, 8)]]),
            "5..8 of every scenario; 8..9 of w1-w2, retries"
        );
        // Two budgeted shards merged: the same, shard by shard.
        assert_eq!(
            say([&[(0, 4), (50, 53)], &[(0, 3), (50, 53)], &[(0, 3), (50, 52)]]),
            "0..3 of every scenario; 3..4 of w1-w2; 50..52 of every scenario; 52..53 of w1-w2, retries"
        );
        // Nothing alike: each range as it is.
        assert_eq!(
            say([&[(0, 4)], &[], &[(7, 8)]]),
            "0..4 of w1-w2; 7..8 of swarm"
        );
        assert_eq!(say([&[], &[], &[]]), "none");
    }
}
