//! `agree`: the simulator beside the async-shell engine for verdicts, scenario by scenario.

use crate::io;
use crate::{machines, refuse_unsafe_timing, scenario_list, Error, Format};
use leasesim::sweep::SeedRange;
use leasesim::Machines;
use leasesim_shell::engines::{self, Engine};
use serde_json::json;
use std::io::Write;

/// What `agree` compares.
pub struct AgreeArgs {
    /// The scenarios (the default set when empty).
    pub names: Vec<String>,
    /// The seeds of each scenario, on both engines.
    pub seeds: SeedRange,
    /// `--variant`, each once, comma-separated ones split (the default set when empty).
    pub variants: Vec<String>,
    /// Runs configurations that break P6 instead of refusing them.
    pub allow_unsafe_timing: bool,
    /// How the table is printed.
    pub format: Format,
}

/// Runs each scenario's seeds on the simulator and on the async-shell engine and prints where
/// their verdicts differ; returns the exit code (1 when any differ).
pub fn agree_cmd(
    out: &mut dyn Write,
    a: &AgreeArgs,
    cat: &[Machines],
    scen: &[leasesim::ScenarioDef],
) -> Result<i32, Error> {
    let (names, seeds, allow_unsafe_timing, format) =
        (&a.names, a.seeds, a.allow_unsafe_timing, a.format);
    let joined = a.variants.join(",");
    let variants = (!a.variants.is_empty()).then_some(joined.as_str());
    let other = Engine::shell();
    let names = agree_scenarios(names, scen)?;
    let defs = scenario_list(scen, &names)?;
    let vs = agree_variants(variants, &defs, seeds, allow_unsafe_timing, cat)?;
    let range = seeds.start..seeds.end;
    let mut rows = Vec::new();
    let mut skipped = Vec::new();
    for def in &defs {
        let unsupported = range.clone().find_map(|seed| {
            other
                .supports(&def.build(seed, leasesim::Variant::Reference))
                .err()
        });
        if let (Some(why), true) = (
            &unsupported,
            range.clone().all(|seed| {
                other
                    .supports(&def.build(seed, leasesim::Variant::Reference))
                    .is_err()
            }),
        ) {
            skipped.push(why.clone());
            continue;
        }
        for v in &vs {
            rows.push(engines::agree(other, def, v, range.clone()).map_err(Error)?);
        }
    }
    if rows.is_empty() {
        return Err(Error(format!(
            "nothing to compare: the {} engine expresses none of these scenarios ({})",
            other.name(),
            skipped.join("; ")
        )));
    }
    let disagreements = rows.iter().filter(|r| r.disagreement.is_some()).count();
    if format == Format::Json {
        io(writeln!(
            out,
            "{:#}",
            json!({"engine": other.name(), "rows": rows, "skipped": skipped, "disagreements": disagreements})
        ))?;
    } else {
        print_agreement(out, other, &range, &rows, &skipped)?;
    }
    Ok(i32::from(disagreements > 0))
}

/// The scenarios to compare: those named, else agree's default set as far as this program
/// has it.
fn agree_scenarios(names: &[String], scen: &[leasesim::ScenarioDef]) -> Result<Vec<String>, Error> {
    let names: Vec<String> = if names.is_empty() {
        // The default set, as far as this program has it.
        engines::AGREE_SCENARIOS
            .iter()
            .filter(|s| scen.iter().any(|d| d.name == **s))
            .map(|s| s.to_string())
            .collect()
    } else {
        names.to_vec()
    };
    if names.is_empty() {
        return Err(Error(format!(
            "this program has none of agree's default scenarios ({}): name the scenarios to compare",
            engines::AGREE_SCENARIOS.join(", ")
        )));
    }
    Ok(names)
}

/// The variants `--variants` names (or the default set), each once, each valid by P6 unless
/// the bypass was given.
fn agree_variants(
    variants: Option<&str>,
    defs: &[leasesim::scenarios::ScenarioDef],
    seeds: SeedRange,
    allow_unsafe_timing: bool,
    cat: &[Machines],
) -> Result<Vec<Machines>, Error> {
    let vs: Vec<Machines> = match variants {
        Some(list) => list
            .split(',')
            .map(|s| machines(cat, s.trim()))
            .collect::<Result<_, _>>()?,
        // The default set is leasesim's own; a user's program compares its own machines.
        None if cat.iter().all(Machines::is_stock) => engines::AGREE_VARIANTS
            .iter()
            .map(|s| machines(cat, s))
            .collect::<Result<_, _>>()?,
        None => cat.to_vec(),
    };
    for (i, v) in vs.iter().enumerate() {
        if vs[..i].iter().any(|w| w.name() == v.name()) {
            return Err(Error(format!(
                "variant '{}' is named twice in --variants",
                v.name()
            )));
        }
        refuse_unsafe_timing(defs, seeds.start, v, allow_unsafe_timing)?;
    }
    Ok(vs)
}

/// One engine's outcome over a row's seeds, as the agreement table shows it.
fn cell(o: &engines::Outcome) -> String {
    if o.caught() {
        let runaway = if o.unfinished > 0 {
            format!(" +{} unfinished", o.unfinished)
        } else {
            String::new()
        };
        format!(
            "caught {}/{}{runaway} (first seed {}) {}",
            o.violated,
            o.seeds,
            o.first_violation.unwrap_or(0),
            o.invariants.join(",")
        )
    } else if o.unfinished > 0 {
        format!("UNFINISHED {}/{}", o.unfinished, o.seeds)
    } else {
        format!("held {}/{}", o.seeds, o.seeds)
    }
}

/// The agreement table, the disagreements with both seeds, what was left out.
fn print_agreement(
    out: &mut dyn Write,
    other: Engine,
    range: &std::ops::Range<u64>,
    rows: &[engines::Agreement],
    skipped: &[String],
) -> Result<(), Error> {
    let disagreements = rows.iter().filter(|r| r.disagreement.is_some()).count();
    io(writeln!(
        out,
        "sim vs {} over seeds {}..{}:",
        other.name(),
        range.start,
        range.end
    ))?;
    for r in rows {
        io(writeln!(
            out,
            "  {:<22} {:<24} sim: {:<48} {}: {:<48} same verdict on {}/{} seeds{}",
            r.scenario,
            r.variant,
            cell(&r.sim),
            other.name(),
            cell(&r.other),
            r.same_verdict_seeds,
            r.sim.seeds,
            if r.disagreement.is_some() {
                "  DISAGREE"
            } else {
                ""
            }
        ))?;
    }
    for r in rows {
        if let Some(d) = &r.disagreement {
            io(writeln!(
                out,
                "disagreement: {} {}: {d}",
                r.scenario, r.variant
            ))?;
        }
    }
    for s in skipped {
        io(writeln!(out, "skipped: {s}"))?;
    }
    let left_out: u64 = rows.iter().map(|r| r.sim.skipped).sum();
    if left_out > 0 {
        io(writeln!(
            out,
            "left out: {left_out} (scenario, variant, seed) runs whose plan the {} engine cannot express",
            other.name()
        ))?;
    }
    io(writeln!(
        out,
        "{} comparisons, {} disagreements",
        rows.len(),
        disagreements
    ))?;
    Ok(())
}
