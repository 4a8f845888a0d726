//! `list` and `advise`: what leasesim knows, and the P6 timing advisor.

use super::run::describe;
use super::{io, Format, UsageError};
use leasesim::advise;
use leasesim::hazard::Hazard;
use leasesim::plan::FAULT_KINDS;
use leasesim::Machines;
use leasesim_protocol::{Invariant, Variant};
use serde_json::json;
use std::io::Write;
use std::path::PathBuf;

pub(super) fn list(
    out: &mut dyn Write,
    format: Format,
    cat: &[Machines],
    scen: &[leasesim::ScenarioDef],
) -> Result<i32, UsageError> {
    let spec = |m: &Machines| {
        Variant::from_name(m.name())
            .filter(|_| m.is_stock())
            .map_or("-", |v| v.spec_id())
    };
    if format == Format::Json {
        let v = json!({
            "scenarios": scen.iter().map(|s| json!({"name": s.name, "story": s.story})).collect::<Vec<_>>(),
            "variants": cat.iter().map(|m| json!({"name": m.name(), "spec": spec(m), "summary": describe(m), "known_bad": m.is_known_bad()})).collect::<Vec<_>>(),
            "invariants": Invariant::ALL.iter().map(|i| json!({"name": i.name(), "spec": i.spec_id(), "summary": i.summary()})).collect::<Vec<_>>(),
            "faults": FAULT_KINDS.iter().map(|(n, id, summary)| json!({"name": n, "spec": id, "summary": summary})).collect::<Vec<_>>(),
            "hazards": Hazard::ALL.iter().map(|h| json!({"name": h.name(), "summary": h.summary()})).collect::<Vec<_>>(),
        });
        io(writeln!(out, "{v:#}"))?;
        return Ok(0);
    }
    io(writeln!(out, "scenarios:"))?;
    for s in scen {
        io(writeln!(out, "  {:<26} {}", s.name, s.story))?;
        let declared: Vec<&str> = s.hazards.iter().map(|h| h.name()).collect();
        io(writeln!(
            out,
            "  {:<26}   reaches: {}",
            "",
            declared.join(", ")
        ))?;
    }
    io(writeln!(out, "variants:"))?;
    for m in cat {
        io(writeln!(
            out,
            "  {:<26} {:<3} {}",
            m.name(),
            spec(m),
            describe(m)
        ))?;
    }
    io(writeln!(out, "faults:"))?;
    for (name, id, summary) in FAULT_KINDS {
        io(writeln!(out, "  {name:<26} {id:<5} {summary}"))?;
    }
    io(writeln!(
        out,
        "hazards (counted per run; each scenario declares the ones it must reach):"
    ))?;
    for h in Hazard::ALL {
        io(writeln!(out, "  {:<26} {}", h.name(), h.summary()))?;
    }
    io(writeln!(out, "invariants:"))?;
    for i in Invariant::ALL {
        io(writeln!(
            out,
            "  {:<26} {:<3} {}",
            i.name(),
            i.spec_id(),
            i.summary()
        ))?;
    }
    Ok(0)
}

pub(super) fn advise_cmd(
    out: &mut dyn Write,
    input: &advise::AdviseInput,
    plot_path: Option<PathBuf>,
    simulate: bool,
    format: Format,
) -> Result<i32, UsageError> {
    let advice = advise::advise(input).map_err(UsageError)?;
    if simulate && plot_path.is_none() {
        return Err(UsageError(
            "--simulate draws on a plot: give --plot <file.svg>".into(),
        ));
    }
    if let Some(path) = &plot_path {
        leasesim::files::writable("--plot", path)?;
    }
    if let Some(path) = plot_path {
        let p = advise::PlotInput { advise: *input };
        let cells = simulate.then(|| advise::simulate(&p, 6, 20));
        leasesim::files::write(&path, advise::svg(&p, cells.as_deref()))
            .map_err(|e| UsageError(format!("cannot write {}: {e}", path.display())))?;
    }
    if format == Format::Json {
        io(writeln!(out, "{:#}", advice.to_json()))?;
    } else {
        io(write!(out, "{}", advice.render()))?;
    }
    Ok(if advice.safe() { 0 } else { 1 })
}
