//! `merge`'s checks of one result file against itself and against this program, before anything
//! of it is merged: every total the sum of what it totals, every kept list the one the sweep
//! keeps (no longer than its bound, sorted, no seed twice, each seed one that ran in the file's
//! own share), the hazard and coverage tables what the counts allow, the verdict the one the
//! counts make. A file that contradicts itself was edited, cut short or written by another
//! program; it is refused in one line that names the file and the field, since a verdict made
//! from it would be wrong. Only what the files say of each other is left to `merge`.

use super::doc::{bad, CellDoc, FailureDoc, MatrixDoc, ScenarioDoc, ShardAt, Span, SweepDoc};
use super::NONDETERMINISTIC_KEPT;
use crate::{machines, scenario_list, BadInput};
use leasesim::check::COVERAGE_MIN_SEEDS;
use leasesim::hazard::Hazard;
use leasesim::matrix;
use leasesim::pool::THREADS_MAX;
use leasesim::run::Verdict;
use leasesim::scenarios::{self, ScenarioDef};
use leasesim::sweep::{describe_ranges, SeedRange, Shard, SweepConfig, FAILURES_KEPT};
use leasesim::{Invariant, Machines};
use std::fmt::Display;
use std::ops::Range;

/// A sweep's result that holds together, with what it was checked against.
pub struct SweepShard {
    pub name: String,
    pub doc: Box<SweepDoc>,
    pub defs: Vec<ScenarioDef>,
    pub machines: Machines,
    /// Per scenario, the seeds its shard holds, as this program cuts the sweep.
    pub share: Vec<Range<u64>>,
}

impl SweepShard {
    pub fn shard(&self) -> Option<Shard> {
        self.doc.shard.map(|ShardAt(s)| s)
    }
}

/// What every scenario of one result is judged by.
struct Rules {
    check_determinism: bool,
    allow_unsafe_timing: bool,
    /// Whether declared hazards never reached are listed as unreached.
    coverage: bool,
    /// Ranges of seeds a scenario's `ran` may hold: a sweep stopped early leaves at most one
    /// gap per thread (each thread stops inside its own chunk), and a merge joins its files'.
    ranges_max: u64,
}

/// Checks a sweep's result against itself and against this program's scenarios and machines.
pub fn sweep(
    name: String,
    doc: Box<SweepDoc>,
    cat: &[Machines],
    scen: &[ScenarioDef],
) -> Result<SweepShard, BadInput> {
    let file = name.as_str();
    let names: Vec<String> = doc.scenarios.0.iter().map(|s| s.name.clone()).collect();
    if names.is_empty() {
        return Err(bad(file, "scenarios: a sweep of no scenarios"));
    }
    let defs =
        scenario_list(scen, &names).map_err(|BadInput(e)| bad(file, format!("scenarios: {e}")))?;
    let m = machines(cat, &doc.variant).map_err(|BadInput(e)| {
        bad(
            file,
            format!("variant: {e}; merge with the program that ran the shards"),
        )
    })?;
    header(file, &doc, &m)?;
    let seeds = doc.seeds.0.clone();
    let config = SweepConfig {
        shard: doc.shard.map(|ShardAt(s)| s),
        ..SweepConfig::new(
            defs.clone(),
            SeedRange {
                start: seeds.start,
                end: seeds.end,
            },
            m.clone(),
        )
    };
    let share = config
        .share()
        .map_err(|e| bad(file, format!("seeds: {e}")))?;
    let merged_files = doc.merged.as_ref().map_or(1, |mg| mg.files.len().max(1));
    let rules = Rules {
        check_determinism: doc.check_determinism,
        allow_unsafe_timing: doc.allow_unsafe_timing,
        coverage: doc.coverage_judged && !doc.interrupted && !m.is_known_bad(),
        ranges_max: (doc.threads + 1).saturating_mul(merged_files as u64),
    };
    for (j, (s, def)) in doc.scenarios.0.iter().zip(&defs).enumerate() {
        let p = Place { file, j, def };
        scenario(&p, s, &share[j], &rules)?;
    }
    totals(file, &doc, &share)?;
    verdict(file, &doc)?;
    Ok(SweepShard {
        name,
        doc,
        defs,
        machines: m,
        share,
    })
}

/// The fields of a sweep's result that say how it ran, against each other and its machines.
fn header(file: &str, doc: &SweepDoc, m: &Machines) -> Result<(), BadInput> {
    let err = |field: &str, why: String| Err(bad(file, format!("{field}: {why}")));
    if doc.known_bad != m.is_known_bad() {
        let is = if m.is_known_bad() {
            "a known-bad variant"
        } else {
            "machines expected to hold"
        };
        return err(
            "known_bad",
            format!(
                "{}, but this leasesim's {} is {is}",
                doc.known_bad,
                m.name()
            ),
        );
    }
    if let Some(base) = doc.seeds_random_base {
        if base != doc.seeds.0.start {
            return err(
                "seeds_random_base",
                format!(
                    "{base}, but the seeds begin at {}: a random sweep's seeds begin at its base",
                    doc.seeds.0.start
                ),
            );
        }
        if let Some(ShardAt(s)) = doc.shard.filter(|ShardAt(s)| s.count > 1) {
            return err(
                "seeds_random_base",
                format!("{base} in shard {s}: the shards of one sweep are never drawn at random"),
            );
        }
    }
    if doc.determinism_checked != doc.check_determinism {
        return err(
            "determinism_checked",
            format!(
                "{}, but check_determinism is {}",
                doc.determinism_checked, doc.check_determinism
            ),
        );
    }
    if doc.threads == 0 || doc.threads > THREADS_MAX as u64 {
        return err(
            "threads",
            format!("{}, but a sweep runs on 1 to {THREADS_MAX}", doc.threads),
        );
    }
    if let Some(b) = &doc.budget {
        if !b.spent && b.overrun_s.0 > 0.0 {
            return err(
                "budget.overrun_s",
                format!("{}s past a budget that was not spent", b.overrun_s.0),
            );
        }
    }
    coverage_judged(file, doc)
}

/// Whether coverage was judged: only on a whole sweep that ran to its end, or a merge of one.
fn coverage_judged(file: &str, doc: &SweepDoc) -> Result<(), BadInput> {
    let err = |field: &str, why: String| Err(bad(file, format!("{field}: {why}")));
    let judged = match &doc.merged {
        Some(mg) => {
            if let Some(ShardAt(s)) = doc.shard {
                return err(
                    "merged",
                    format!("a merged result of shard {s}: a merge is of the whole sweep"),
                );
            }
            mg.problems.is_empty()
        }
        None => !doc.interrupted && doc.shard.is_none_or(|ShardAt(s)| s.count == 1),
    };
    if doc.coverage_judged != judged {
        return err(
            "coverage_judged",
            format!(
                "{}, but coverage is judged only on a whole sweep that ran to its end",
                doc.coverage_judged
            ),
        );
    }
    Ok(())
}

/// One scenario of one file, for an error's message.
struct Place<'a> {
    file: &'a str,
    j: usize,
    def: &'a ScenarioDef,
}

impl Place<'_> {
    fn err(&self, field: impl Display, why: impl Display) -> BadInput {
        bad(
            self.file,
            format!("scenarios[{}].{field} ({}): {why}", self.j, self.def.name),
        )
    }
}

fn scenario(p: &Place, s: &ScenarioDoc, share: &Range<u64>, rules: &Rules) -> Result<(), BadInput> {
    let Span(named) = &s.share;
    if named != share {
        return Err(p.err(
            "share",
            format!(
                "its share of {} is seeds {}..{}, but this shard of the sweep holds {}..{}",
                p.def.name, named.start, named.end, share.start, share.end
            ),
        ));
    }
    ran(p, s, share, rules.ranges_max)?;
    let judged = counts(p, s, rules)?;
    hazards(p, s, share, judged, rules.coverage)?;
    failures(p, s, rules.allow_unsafe_timing)?;
    differences(p, s)
}

/// The ranges that ran: inside the share, sorted and disjoint, as many as the runs count.
fn ran(p: &Place, s: &ScenarioDoc, share: &Range<u64>, ranges_max: u64) -> Result<(), BadInput> {
    let ran = &s.ran.0;
    if ran.len() as u64 > ranges_max {
        return Err(p.err(
            "ran",
            format!(
                "{} ranges of seeds, more than the {ranges_max} its threads and files can leave",
                ran.len()
            ),
        ));
    }
    let mut seeds_ran = 0u64;
    let mut end_before: Option<u64> = None;
    for (i, Span(r)) in ran.iter().enumerate() {
        if r.start < share.start || r.end > share.end {
            return Err(p.err(
                format_args!("ran[{i}]"),
                format!(
                    "it ran seeds {}..{} of {}, outside its share",
                    r.start, r.end, p.def.name
                ),
            ));
        }
        if let Some(before) = end_before.filter(|&e| r.start < e) {
            return Err(p.err(
                format_args!("ran[{i}]"),
                format!("seeds {}..{} begin before the range before them ends at {before}: the ranges that ran are sorted and disjoint", r.start, r.end),
            ));
        }
        end_before = Some(r.end);
        // Disjoint ranges inside the share: their sum is at most the share's length.
        seeds_ran += r.end - r.start;
    }
    if s.runs != seeds_ran {
        return Err(p.err(
            "runs",
            format!(
                "it counts {} runs of {} but names {seeds_ran} seeds that ran",
                s.runs, p.def.name
            ),
        ));
    }
    Ok(())
}

/// The counts of one scenario against each other; returns the seeds judged (run and
/// expressible).
fn counts(p: &Place, s: &ScenarioDoc, rules: &Rules) -> Result<u64, BadInput> {
    let Some(judged) = s.runs.checked_sub(s.not_expressible) else {
        return Err(p.err(
            "not_expressible",
            format!(
                "{} seeds not expressible among {} runs",
                s.not_expressible, s.runs
            ),
        ));
    };
    if s.failing > judged {
        return Err(p.err("failing", format!("{} failing seeds among the {judged} it judged (runs less the seeds not expressible)", s.failing)));
    }
    for (judgement, &n) in &s.skipped_runs.0 {
        if n > judged {
            return Err(p.err(
                "skipped_runs",
                format!("{judgement} skipped in {n} runs among the {judged} it judged"),
            ));
        }
    }
    for k in &s.skipped.0 {
        let of_judgement = s.skipped_runs.0.get(&k.judgement).copied().unwrap_or(0);
        if k.runs > of_judgement {
            return Err(p.err(
                "skipped",
                format!(
                    "{} skipped for one cause in {} runs, more than the {of_judgement} runs that skipped it at all",
                    k.judgement, k.runs
                ),
            ));
        }
    }
    if s.unfinished > s.failing {
        return Err(p.err(
            "unfinished",
            format!(
                "{} unfinished runs among {} failing seeds: an unfinished run is a failing one",
                s.unfinished, s.failing
            ),
        ));
    }
    if s.nondeterministic > judged {
        return Err(p.err(
            "nondeterministic",
            format!(
                "{} seeds that differed among the {judged} it judged",
                s.nondeterministic
            ),
        ));
    }
    if s.nondeterministic > 0 && !rules.check_determinism {
        return Err(p.err("nondeterministic", format!("{} seeds that differed between two runs, in a sweep that ran each seed once (check_determinism is false)", s.nondeterministic)));
    }
    reasons_add_up(p, s)?;
    Ok(judged)
}

/// The reasons seeds were not expressible: each kept some out, and together all of them.
fn reasons_add_up(p: &Place, s: &ScenarioDoc) -> Result<(), BadInput> {
    let mut reasons = 0u64;
    for (why, &k) in &s.not_expressible_reasons.0 {
        if k == 0 {
            return Err(p.err(
                "not_expressible_reasons",
                format!("{why:?} kept out 0 seeds: a reason is listed for the seeds it kept out"),
            ));
        }
        reasons = reasons
            .checked_add(k)
            .ok_or_else(|| p.err("not_expressible_reasons", "its counts add up past 2^64 - 1"))?;
    }
    if reasons != s.not_expressible {
        return Err(p.err(
            "not_expressible_reasons",
            format!(
                "its reasons count {reasons} seeds, but not_expressible is {}",
                s.not_expressible
            ),
        ));
    }
    Ok(())
}

/// The hazard table, the declared hazards and the unreached ones.
fn hazards(
    p: &Place,
    s: &ScenarioDoc,
    share: &Range<u64>,
    judged: u64,
    coverage: bool,
) -> Result<(), BadInput> {
    // Bounded by the share, not the runs: a shard cut short keeps its table (the merge names
    // its missing seeds).
    let seeds = share.end - share.start;
    for (name, &k) in &s.hazards.0 {
        if !Hazard::ALL.iter().any(|h| h.name() == name) {
            return Err(p.err("hazards", format!("unknown hazard '{name}'")));
        }
        if k == 0 || k > seeds {
            return Err(p.err(format_args!("hazards.{name}"), format!("{k} seeds reached it, but a hazard listed is one that 1 to the {seeds} seeds of its share reached")));
        }
    }
    let declared: Vec<&str> = p.def.hazards.iter().map(|h| h.name()).collect();
    if s.declared_hazards.0 != declared {
        return Err(p.err(
            "declared_hazards",
            format!(
                "{:?}, but this leasesim's {} declares {declared:?}",
                s.declared_hazards.0, p.def.name
            ),
        ));
    }
    let unreached: Vec<&str> = if coverage && judged >= COVERAGE_MIN_SEEDS {
        declared
            .into_iter()
            .filter(|h| !s.hazards.0.contains_key(*h))
            .collect()
    } else {
        Vec::new()
    };
    if s.unreached_hazards.0 != unreached {
        return Err(p.err(
            "unreached_hazards",
            format!(
                "{:?}, but its hazard table and coverage leave {unreached:?} unreached",
                s.unreached_hazards.0
            ),
        ));
    }
    Ok(())
}

/// Whether `seed` is in one of `ran`'s sorted, disjoint ranges.
fn ran_seed(ran: &[Span], seed: u64) -> bool {
    let i = ran.partition_point(|Span(r)| r.end <= seed);
    ran.get(i).is_some_and(|Span(r)| r.start <= seed)
}

/// The kept failures: the lowest [`FAILURES_KEPT`] failing seeds, each once, in seed order,
/// each one that ran, each verdict one a failure can have.
fn failures(p: &Place, s: &ScenarioDoc, allow_unsafe_timing: bool) -> Result<(), BadInput> {
    let list = &s.failures.0;
    let kept = s.failing.min(FAILURES_KEPT as u64);
    if list.len() as u64 != kept {
        return Err(p.err("failures", format!("{} failures listed, but failing is {}: a result lists its lowest {kept} failing seeds (at most {FAILURES_KEPT})", list.len(), s.failing)));
    }
    if s.failures_listed != kept {
        return Err(p.err(
            "failures_listed",
            format!("{}, but the failure list holds {kept}", s.failures_listed),
        ));
    }
    let mut unfinished = 0u64;
    for (i, f) in list.iter().enumerate() {
        if i > 0 && f.seed <= list[i - 1].seed {
            return Err(p.err(
                format_args!("failures[{i}].seed"),
                format!(
                    "seed {} after seed {}: failures are listed in seed order, each seed once",
                    f.seed,
                    list[i - 1].seed
                ),
            ));
        }
        if !ran_seed(&s.ran.0, f.seed) {
            return Err(p.err(
                format_args!("failures[{i}].seed"),
                format!(
                    "seed {} is not one that ran (seeds {})",
                    f.seed,
                    ranges(&s.ran.0)
                ),
            ));
        }
        failure(p, i, f, allow_unsafe_timing)?;
        unfinished += u64::from(matches!(f.verdict, Verdict::Unfinished { .. }));
    }
    let whole = s.failing <= FAILURES_KEPT as u64;
    if unfinished > s.unfinished || (whole && unfinished != s.unfinished) {
        return Err(p.err(
            "unfinished",
            format!(
                "{} unfinished runs, but the failure list holds {unfinished} of them",
                s.unfinished
            ),
        ));
    }
    Ok(())
}

fn ranges(ran: &[Span]) -> String {
    describe_ranges(&ran.iter().map(|Span(r)| r.clone()).collect::<Vec<_>>())
}

/// One failure's verdict and invariants: a violation names the invariants it broke (sorted,
/// each once), any other failure none.
fn failure(p: &Place, i: usize, f: &FailureDoc, allow_unsafe_timing: bool) -> Result<(), BadInput> {
    match &f.verdict {
        Verdict::Held => {
            return Err(p.err(
                format_args!("failures[{i}].verdict"),
                format!("seed {} held: a failure list holds failures", f.seed),
            ));
        }
        Verdict::Invalid { .. } if allow_unsafe_timing => {
            return Err(p.err(
                format_args!("failures[{i}].verdict"),
                format!(
                    "seed {} refused as breaking P6 in a sweep that allowed unsafe timing",
                    f.seed
                ),
            ));
        }
        _ => {}
    }
    let names = &f.invariants.0;
    if let Some(name) = names
        .iter()
        .find(|n| !Invariant::ALL.iter().any(|x| x.name() == n.as_str()))
    {
        return Err(p.err(
            format_args!("failures[{i}].invariants"),
            format!("unknown invariant '{name}'"),
        ));
    }
    if names.windows(2).any(|w| w[0] >= w[1]) {
        return Err(p.err(
            format_args!("failures[{i}].invariants"),
            format!("{names:?}: a failure names its invariants sorted, each once"),
        ));
    }
    if names.is_empty() == (f.verdict == Verdict::Violated) {
        return Err(p.err(format_args!("failures[{i}].invariants"), format!("{names:?} for a verdict {}: a violation names the invariants it broke, any other failure none", f.verdict.word())));
    }
    Ok(())
}

/// The seeds whose two runs differed: at most [`NONDETERMINISTIC_KEPT`], as many as counted up
/// to that, each once, in seed order, each one that ran.
fn differences(p: &Place, s: &ScenarioDoc) -> Result<(), BadInput> {
    let list = &s.nondeterministic_seeds.0;
    let kept = s.nondeterministic.min(NONDETERMINISTIC_KEPT as u64);
    if list.len() as u64 != kept {
        return Err(p.err(
            "nondeterministic_seeds",
            format!(
                "{} seeds listed, but nondeterministic is {}: a result lists {kept}",
                list.len(),
                s.nondeterministic
            ),
        ));
    }
    for (i, d) in list.iter().enumerate() {
        if i > 0 && d.seed <= list[i - 1].seed {
            return Err(p.err(
                format_args!("nondeterministic_seeds[{i}].seed"),
                format!(
                    "seed {} after seed {}: listed in seed order, each seed once",
                    d.seed,
                    list[i - 1].seed
                ),
            ));
        }
        if !ran_seed(&s.ran.0, d.seed) {
            return Err(p.err(
                format_args!("nondeterministic_seeds[{i}].seed"),
                format!(
                    "seed {} is not one that ran (seeds {})",
                    d.seed,
                    ranges(&s.ran.0)
                ),
            ));
        }
    }
    Ok(())
}

/// The result's totals against the sums over its scenarios, and what it says of its own end.
fn totals(file: &str, doc: &SweepDoc, share: &[Range<u64>]) -> Result<(), BadInput> {
    let sc = &doc.scenarios.0;
    let sum = |field: &str, of: &dyn Fn(&ScenarioDoc) -> u64| {
        sc.iter()
            .try_fold(0u64, |a, s| a.checked_add(of(s)))
            .ok_or_else(|| {
                bad(
                    file,
                    format!("{field}: its scenarios' counts add up past 2^64 - 1"),
                )
            })
    };
    let rows: [(&str, u64, u64); 5] = [
        ("runs", doc.runs, sum("runs", &|s| s.runs)?),
        ("failing", doc.failing, sum("failing", &|s| s.failing)?),
        (
            "not_expressible",
            doc.not_expressible,
            sum("not_expressible", &|s| s.not_expressible)?,
        ),
        (
            "nondeterministic",
            doc.nondeterministic,
            sum("nondeterministic", &|s| s.nondeterministic)?,
        ),
        (
            "unreached_hazards",
            doc.unreached_hazards,
            sum("unreached_hazards", &|s| s.unreached_hazards.0.len() as u64)?,
        ),
    ];
    for (field, total, of) in rows {
        if total != of {
            return Err(bad(
                file,
                format!("{field}: {total}, but its scenarios' add up to {of}"),
            ));
        }
    }
    // The shares are cut from scenarios x seeds, which the configuration counted in 64 bits.
    let share_runs: u64 = share.iter().map(|r| r.end - r.start).sum();
    if doc.share_runs != share_runs {
        return Err(bad(
            file,
            format!(
                "share_runs: {}, but its scenarios' shares hold {share_runs} seeds",
                doc.share_runs
            ),
        ));
    }
    if doc.interrupted && doc.runs >= share_runs {
        return Err(bad(
            file,
            format!("interrupted: true, but it ran all {share_runs} runs of its share"),
        ));
    }
    if doc.budget.as_ref().is_some_and(|b| b.spent) && doc.runs >= share_runs {
        return Err(bad(
            file,
            format!("budget.spent: true, but it ran all {share_runs} runs of its share"),
        ));
    }
    Ok(())
}

/// The verdict the counts make, as the sweep decides it.
fn verdict(file: &str, doc: &SweepDoc) -> Result<(), BadInput> {
    let want = if doc.merged.as_ref().is_some_and(|m| !m.problems.is_empty()) {
        "incomplete"
    } else if doc.interrupted {
        "interrupted"
    } else if doc.failing > 0 || doc.unreached_hazards > 0 || doc.nondeterministic > 0 {
        "failed"
    } else {
        "held"
    };
    if doc.verdict != want {
        return Err(bad(
            file,
            format!(
                "verdict: {:?}, but its counts make it {want:?}",
                doc.verdict
            ),
        ));
    }
    Ok(())
}

/// A matrix's result that holds together, with the machines of its rows.
pub struct MatrixShard {
    pub name: String,
    pub doc: Box<MatrixDoc>,
    pub machines: Vec<Machines>,
}

impl MatrixShard {
    pub fn shard(&self) -> Option<Shard> {
        self.doc.shard.map(|ShardAt(s)| s)
    }
}

/// Checks a matrix's result: its rows this program's machines, each once; its cells exactly
/// the ones its shard holds, each consistent in itself.
pub fn matrix(
    name: String,
    doc: Box<MatrixDoc>,
    cat: &[Machines],
    scen: &[ScenarioDef],
) -> Result<MatrixShard, BadInput> {
    let file = name.as_str();
    let mut rows: Vec<Machines> = Vec::with_capacity(doc.catalogue.len().min(cat.len()));
    for (i, entry) in doc.catalogue.iter().enumerate() {
        let m = machines(cat, &entry.name).map_err(|BadInput(e)| {
            bad(
                file,
                format!("catalogue[{i}].name: {e}; merge with the program that ran the shards"),
            )
        })?;
        if rows.iter().any(|r| r.name() == m.name()) {
            return Err(bad(
                file,
                format!(
                    "catalogue[{i}].name: {} is named twice; a matrix has one row per machines",
                    m.name()
                ),
            ));
        }
        if let Some(known_bad) = entry.known_bad.filter(|&k| k != m.is_known_bad()) {
            return Err(bad(
                file,
                format!(
                    "catalogue[{i}].known_bad: {known_bad}, but this leasesim's {} is {}",
                    m.name(),
                    if m.is_known_bad() {
                        "a known-bad variant"
                    } else {
                        "machines expected to hold"
                    }
                ),
            ));
        }
        rows.push(m);
    }
    let shard = doc.shard.map(|ShardAt(s)| s);
    let held = matrix::shard_cells(&rows, scen, shard);
    let cells = &doc.cells.0;
    if !cells.iter().map(|c| c.index).eq(held.clone()) {
        let which = shard.map_or("the whole matrix".into(), |s| {
            format!("shard {s} of this matrix")
        });
        return Err(bad(
            file,
            format!(
                "cells: its cells are not the cells {}..{} that {which} holds",
                held.start, held.end
            ),
        ));
    }
    for (i, c) in cells.iter().enumerate() {
        cell(file, i, c, &rows, doc.seeds, scen)?;
    }
    Ok(MatrixShard {
        name,
        doc,
        machines: rows,
    })
}

/// One cell: of its row's machines and its column's scenario, its counts within its seeds, its
/// first failing seed one it ran, its invariants those that seed broke.
fn cell(
    file: &str,
    i: usize,
    c: &CellDoc,
    rows: &[Machines],
    seeds: u64,
    scen: &[ScenarioDef],
) -> Result<(), BadInput> {
    let err = |field: &str, why: String| Err(bad(file, format!("cells[{i}].{field}: {why}")));
    let n = scen.len() as u64;
    // The index is one the shard holds, so its row and column exist.
    let m = &rows[(c.index / n) as usize];
    let column = &scen[(c.index % n) as usize].name;
    if c.variant != m.name() {
        return err(
            "variant",
            format!(
                "{:?}, but cell {} is in the row of {}",
                c.variant,
                c.index,
                m.name()
            ),
        );
    }
    if scenarios::find_in(scen, &c.scenario).is_none() {
        return err(
            "scenario",
            format!("unknown scenario '{}' in a cell", c.scenario),
        );
    }
    if c.scenario != **column {
        return err(
            "scenario",
            format!(
                "{:?}, but cell {} is in the column of {column}",
                c.scenario, c.index
            ),
        );
    }
    if c.seeds_run > seeds {
        return err(
            "seeds_run",
            format!("{}, more than the matrix's {seeds} seeds", c.seeds_run),
        );
    }
    let counted = c
        .failing
        .checked_add(c.unfinished)
        .and_then(|k| k.checked_add(c.not_expressible));
    if counted.is_none_or(|k| k > c.seeds_run) {
        return err(
            "failing",
            format!(
                "{} failing, {} unfinished and {} not expressible among {} seeds run",
                c.failing, c.unfinished, c.not_expressible, c.seeds_run
            ),
        );
    }
    if c.seeds_run < seeds && !(m.is_known_bad() && c.failing > 0) {
        return err("seeds_run", format!("{} of the matrix's {seeds} seeds: a cell runs them all, unless a known-bad variant stopped at its first violation", c.seeds_run));
    }
    cell_failure(file, i, c)
}

/// A cell's first failing seed, one it ran, and its invariants, those that seed broke.
fn cell_failure(file: &str, i: usize, c: &CellDoc) -> Result<(), BadInput> {
    let err = |field: &str, why: String| Err(bad(file, format!("cells[{i}].{field}: {why}")));
    match c.first_failing_seed {
        Some(s) if s >= c.seeds_run => {
            return err(
                "first_failing_seed",
                format!("seed {s}, but the cell ran seeds 0..{}", c.seeds_run),
            )
        }
        Some(s) if c.failing == 0 => {
            return err(
                "first_failing_seed",
                format!("seed {s} in a cell whose failing is 0"),
            )
        }
        _ => {}
    }
    let labels: Vec<String> = Invariant::ALL.iter().map(|x| x.label()).collect();
    let names = &c.invariants.0;
    if let Some(name) = names.iter().find(|n| !labels.contains(n)) {
        return err("invariants", format!("unknown invariant '{name}'"));
    }
    if names.windows(2).any(|w| w[0] >= w[1]) {
        return err(
            "invariants",
            format!("{names:?}: a cell names its invariants sorted, each once"),
        );
    }
    if names.is_empty() == c.first_failing_seed.is_some() {
        return err("invariants", format!("{names:?} with first_failing_seed {:?}: the invariants are the ones its first failing seed broke", c.first_failing_seed));
    }
    Ok(())
}
