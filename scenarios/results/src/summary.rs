//! A sweep's result as Markdown for a CI page (`$GITHUB_STEP_SUMMARY`, a merge request note):
//! the verdict in the heading, the run in one line, one row per failing scenario with its
//! first seed and the command that reproduces it, the first failing seeds folded away, and the
//! hazard coverage table. Every cell is escaped, so a finding cannot break the table.

use crate::sweep::{describe_groups, groups, Results, PRINT_FAILURES_MAX};
use leasesim::run::reproduce_command_for;
use leasesim_reports::escape::html_text;
use std::fmt::Write;

/// Text for a table cell: HTML-escaped (GitHub renders HTML), on one line, no bare `|`.
fn cell(s: &str) -> String {
    html_text(s).replace('|', "\\|").replace(['\n', '\r'], " ")
}

/// The summary.
pub fn markdown(r: &Results) -> String {
    let mut s = String::new();
    heading(&mut s, r);
    failures(&mut s, r);
    coverage(&mut s, r);
    skipped(&mut s, r);
    s.push('\n');
    s
}

/// The verdict, the run in one line, a spent time budget and a merge's problems.
fn heading(s: &mut String, r: &Results) {
    let report = &r.report;
    let m = &r.config.machines;
    let _ = writeln!(
        s,
        "## leasesim sweep: {} ({})\n",
        r.outcome().word(),
        cell(&r.scope())
    );
    let time = match &r.merged {
        Some(mg) => format!(
            "in {:.1} s over every shard ({:.1} s the longest)",
            mg.elapsed_sum, r.elapsed
        ),
        None => format!("on {} thread(s) in {:.1} s", report.threads, r.elapsed),
    };
    let _ = writeln!(
        s,
        "Variant `{}`, seeds {}..{} of {} scenario(s){}: {} runs {time}, {} failing.\n",
        cell(m.name()),
        r.config.seeds.start,
        r.config.seeds.end,
        r.defs.len(),
        r.shard_source
            .as_ref()
            .map_or(String::new(), |src| format!(" (shard from {})", cell(src))),
        report.runs,
        report.failing()
    );
    if let Some(base) = r.random {
        let _ = writeln!(s, "Seed base drawn at random: {base}.\n");
    }
    if let Some(b) = report.budget.filter(|b| b.spent) {
        let _ = writeln!(
            s,
            "Time budget {:.0} s spent; ran seeds {}. Repeat exactly: `{}`.\n",
            b.budget.as_secs_f64(),
            cell(&describe_groups(
                &groups(&r.defs, report.scenarios.iter().map(|o| o.ran.as_slice())),
                r.defs.len()
            )),
            r.repeat().join("`; `")
        );
    }
    if let Some(mg) = &r.merged {
        for p in &mg.problems {
            let _ = writeln!(s, "- **INCOMPLETE**: {}", cell(p));
        }
        if !mg.problems.is_empty() {
            s.push('\n');
        }
    }
}

/// One row per failing scenario, then its first failing seeds folded away.
fn failures(s: &mut String, r: &Results) {
    let report = &r.report;
    let m = &r.config.machines;
    let failing: Vec<usize> = (0..r.defs.len())
        .filter(|&i| report.scenarios[i].failing > 0)
        .collect();
    if !failing.is_empty() {
        s.push_str("### Failures\n\n| scenario | failing seeds | first | invariants | reproduce |\n|---|---|---|---|---|\n");
        for &i in &failing {
            let o = &report.scenarios[i];
            let d = &r.defs[i];
            if let Some(f) = o.failures.first() {
                let _ = writeln!(
                    s,
                    "| `{}` | {} of {} | seed {}: {} | {} | `{}` |",
                    d.name,
                    o.failing,
                    o.runs,
                    f.seed,
                    cell(&f.first),
                    cell(&f.invariants.join(", ")),
                    reproduce_command_for(m, &d.name, f.seed)
                );
            }
        }
        s.push_str("\n<details><summary>The first failing seeds of each scenario</summary>\n\n");
        for &i in &failing {
            let o = &report.scenarios[i];
            let d = &r.defs[i];
            for f in o.failures.iter().take(PRINT_FAILURES_MAX) {
                let _ = writeln!(
                    s,
                    "- `{}` seed {}: {} — `{}`{}",
                    d.name,
                    f.seed,
                    cell(&f.first),
                    reproduce_command_for(m, &d.name, f.seed),
                    r.replay(i, f.seed)
                        .map_or(String::new(), |p| format!(" (replay `{}`)", cell(p)))
                );
            }
        }
        s.push_str("\n</details>\n\n");
    }
}

/// The hazards each scenario's seeds reached, and whether every declared one was.
fn coverage(s: &mut String, r: &Results) {
    let report = &r.report;
    s.push_str("### Hazard coverage\n\nSeeds that reached each hazard; **bold**: declared by the scenario.\n\n| scenario | runs | hazards reached | declared, never reached |\n|---|---|---|---|\n");
    for (i, d) in r.defs.iter().enumerate() {
        let o = &report.scenarios[i];
        let reached: Vec<String> = o
            .hazards
            .iter()
            .map(|(h, n)| {
                if d.hazards.contains(h) {
                    format!("**{}** {n}", h.name())
                } else {
                    format!("{} {n}", h.name())
                }
            })
            .collect();
        let never: Vec<&str> = d
            .hazards
            .iter()
            .filter(|h| !o.hazards.contains_key(h))
            .map(|h| h.name())
            .collect();
        let _ = writeln!(
            s,
            "| `{}` | {} | {} | {} |",
            d.name,
            o.runs,
            if reached.is_empty() {
                "none".into()
            } else {
                reached.join(", ")
            },
            if never.is_empty() {
                "-".into()
            } else {
                never.join(", ")
            }
        );
    }
    if !r.coverage_judged {
        s.push_str("\nHazard coverage is judged over every shard together, by `leasesim merge`.\n");
    } else if !r.unreached.is_empty() {
        let _ = writeln!(
            s,
            "\n**FAIL**: {} declared hazard(s) never reached.",
            r.unreached.len()
        );
    }
}

/// The judgements the checkers skipped, and why; a judgement never made fails the sweep.
fn skipped(s: &mut String, r: &Results) {
    let report = &r.report;
    if report.scenarios.iter().any(|o| !o.skipped.is_empty()) {
        s.push_str("\n### Skipped judgements\n\nRuns in which the checkers did not make a judgement, and why; a verdict that held does not rest on them. *Voided by the story*: the scenario is built to void it.\n\n| scenario | judgement | runs | cause |\n|---|---|---|---|\n");
        for (d, o) in r.defs.iter().zip(&report.scenarios) {
            for (k, n) in &o.skipped {
                let by_story = if d.unjudged.contains(&k.judgement.as_str()) {
                    " (*voided by the story*)"
                } else {
                    ""
                };
                let _ = writeln!(
                    s,
                    "| `{}` | {} ({}){by_story} | {n} of {} | {} |",
                    d.name,
                    k.judgement,
                    k.spec,
                    o.judged(),
                    cell(&k.cause)
                );
            }
        }
    }
    for (i, judgement, causes) in r.never_judged() {
        let _ = writeln!(
            s,
            "\n**FAIL**: `{}` never judged {judgement}: skipped in all {} runs ({}).",
            r.defs[i].name,
            report.scenarios[i].judged(),
            cell(&causes.join("; "))
        );
    }
}
