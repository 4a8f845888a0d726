//! The variant matrix as plain data, filled by the library (`leasesim::matrix::run`), and its
//! two renderings: the Markdown table committed as `reports/matrix.md` and the HTML page that
//! links each caught variant to its counterexample's timeline.

use crate::escape;
use serde::Serialize;

/// One (variant, scenario) pair.
#[derive(Clone, Debug, Serialize)]
pub struct Cell {
    /// Scenario name.
    pub scenario: String,
    /// Seeds run (a variant stops at its first failing seed).
    pub seeds_run: u64,
    /// The first failing seed, if any.
    pub first_failing_seed: Option<u64>,
    /// Seeds that broke an invariant among those run (the reference runs them all).
    pub failing: u64,
    /// Runs that hit a limit without a finding (runaways).
    pub unfinished: u64,
    /// Invariants the first failure broke (or `unfinished` for a runaway run).
    pub invariants: Vec<String>,
    /// Whether validation refused the configuration before it was run with the bypass.
    pub refused_by_validation: bool,
    /// Seeds whose setup these machines cannot express (a SQL file without the statement a
    /// scenario needs): skipped, never counted as held.
    pub not_expressible: u64,
    /// Runs that did not make a judgement, by `judgement (invariant): cause`: what a verdict
    /// that held does not rest on.
    pub skipped: std::collections::BTreeMap<String, u64>,
}

impl Cell {
    /// Whether no seed run could be expressed by the machines (the cell says `n/a`).
    pub fn inexpressible(&self) -> bool {
        self.seeds_run > 0 && self.not_expressible == self.seeds_run
    }
}

/// One variant's row.
#[derive(Clone, Debug, Serialize)]
pub struct Row {
    /// Variant name (or the name of a user's machines).
    pub variant: String,
    /// SPEC id (`-` for a user's machines).
    pub spec: String,
    /// The bug (for a user's machines, their parts).
    pub summary: String,
    /// Whether these machines are expected to hold everywhere (a reference) rather than be
    /// caught (a known-bad variant).
    pub expected_to_hold: bool,
    /// Whether some scenario caught it (for the reference: whether it failed anywhere).
    pub caught: bool,
    /// Invariants that caught it, over all scenarios.
    pub invariants: Vec<String>,
    /// Scenarios that caught it.
    pub caught_by: Vec<String>,
    /// The scenario that needed the fewest seeds.
    pub best_scenario: Option<String>,
    /// Its first failing seed.
    pub first_failing_seed: Option<u64>,
    /// Seeds run until detection in that scenario: the first failing seed + 1 (seeds start at 0).
    pub seeds_to_detection: Option<u64>,
    /// The command that reproduces it.
    pub reproduce: Option<String>,
    /// Every cell of the row.
    pub cells: Vec<Cell>,
}

/// The whole matrix.
#[derive(Clone, Debug, Serialize)]
pub struct Matrix {
    /// What the rows are, as the reports' first sentence begins ("Every known-bad variant of
    /// the SPEC (V1-V14)", "Every SQL file").
    pub subject: String,
    /// The command that regenerates the matrix.
    pub command: String,
    /// Seeds per scenario budget.
    pub seeds: u64,
    /// One row per variant (leasesim's own matrix: the reference first).
    pub rows: Vec<Row>,
    /// Whether the reference held everywhere.
    pub reference_clean: bool,
    /// Whether every known-bad variant was caught.
    pub all_caught: bool,
    /// Median seeds to detection over the caught variants.
    pub median_seeds_to_detection: Option<u64>,
}

/// Whether a row's runs hit a limit somewhere (a failure, as a sweep counts it).
fn unfinished(r: &Row) -> bool {
    r.cells.iter().any(|c| c.unfinished > 0)
}

/// The rows expected to be caught.
fn bad(m: &Matrix) -> impl Iterator<Item = &Row> {
    m.rows.iter().filter(|r| !r.expected_to_hold)
}

/// A variant's name as a portable file name without dots (`sql:v2.sql@ab` -> `sql-v2-sql-ab`):
/// the counterexample files are named so.
pub fn file_stem(variant: &str) -> String {
    variant
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '-'
            }
        })
        .collect()
}

/// The matrix as Markdown: a summary table, then the full variant-by-scenario grid.
pub fn markdown(m: &Matrix) -> String {
    let mut s = String::new();
    s.push_str("# leasesim variant matrix\n\n");
    s.push_str(&format!(
        "{} against every scenario, at most {} seeds per scenario; a variant stops at its first failing seed. Regenerate with `{}`.\n\n",
        m.subject, m.seeds, m.command
    ));
    s.push_str("The same table as HTML, each caught variant linked to the timeline of its shrunk counterexample: [`matrix.html`](matrix.html).\n\n");
    s.push_str(&format!(
        "Reference: {}. Variants caught: {} of {}. Median seeds to detection: {}.\n\n",
        if m.reference_clean {
            "clean (every invariant held on every seed of every scenario)".to_string()
        } else {
            "FAILED".to_string()
        },
        bad(m).filter(|r| r.caught).count(),
        bad(m).count(),
        m.median_seeds_to_detection
            .map_or("-".to_string(), |n| n.to_string())
    ));
    summary_table(&mut s, m);
    scenario_grid(&mut s, m);
    s.push_str("\nHow to read it: a number is the seeds it took to catch the variant in that scenario (seed numbers start at 0, so 1 means seed 0 failed). `held` means every seed in the budget held: the scenario does not exercise that bug, which is expected for most pairs. A variant is caught when any scenario catches it; the reference row must read `held` everywhere. `unfinished (n)`: no seed broke an invariant, but n runs hit a limit before they ended (a failure, as a sweep counts it: `leasesim run` of one says what kept it going). `n/a`: the machines cannot express the scenario (a SQL file without the statement it needs), so no seed of it ran and none counts as held. `unsafe-timing` (V12) is first refused by configuration validation; the matrix runs it with the validation bypassed to show the simulation catches it too.\n");
    s.push_str(&skipped_md(m));
    s
}

/// One row per variant: whether it was caught, by what, how soon, and how to reproduce it.
fn summary_table(s: &mut String, m: &Matrix) {
    s.push_str("| variant | SPEC | caught | by invariants | first caught in | seeds to detection | reproduce |\n");
    s.push_str("|---|---|---|---|---|---|---|\n");
    for r in &m.rows {
        let caught = if r.expected_to_hold {
            if r.caught {
                "FAILED"
            } else if unfinished(r) {
                "UNFINISHED"
            } else {
                "clean"
            }
        } else if r.caught {
            "yes"
        } else {
            "NO"
        };
        s.push_str(&format!(
            "| `{}` | {} | {} | {} | {} | {} | {} |\n",
            r.variant,
            r.spec,
            caught,
            if r.invariants.is_empty() {
                "-".to_string()
            } else {
                r.invariants.join(", ")
            },
            r.best_scenario
                .as_deref()
                .map_or("-".to_string(), |sc| format!(
                    "`{sc}` seed {}",
                    r.first_failing_seed.unwrap_or(0)
                )),
            r.seeds_to_detection
                .map_or("-".to_string(), |n| n.to_string()),
            r.reproduce
                .as_ref()
                .map_or("-".to_string(), |c| format!("`{c}`")),
        ));
    }
}

/// The variant-by-scenario grid: the seeds each pair took until its first failure.
fn scenario_grid(s: &mut String, m: &Matrix) {
    s.push_str("\n## By scenario\n\nEach cell: the seeds run until the first failure (`held` when none failed in the budget).\n\n");
    // Every row has a cell per scenario, in the same order.
    let scenarios: Vec<&str> = m
        .rows
        .first()
        .map(|r| r.cells.iter().map(|c| c.scenario.as_str()).collect())
        .unwrap_or_default();
    s.push_str("| variant |");
    for name in &scenarios {
        s.push_str(&format!(" {name} |"));
    }
    s.push('\n');
    s.push_str("|---|");
    for _ in &scenarios {
        s.push_str("---|");
    }
    s.push('\n');
    for r in &m.rows {
        s.push_str(&format!("| `{}` |", r.variant));
        for c in &r.cells {
            match c.first_failing_seed {
                Some(seed) => s.push_str(&format!(" {} |", seed + 1)),
                None if c.inexpressible() => s.push_str(" n/a |"),
                None if c.unfinished > 0 => {
                    s.push_str(&format!(" unfinished ({}) |", c.unfinished))
                }
                None => s.push_str(" held |"),
            }
        }
        s.push('\n');
    }
}

/// The judgements the rows expected to hold did not make in some runs, and why (a known-bad
/// row stops at its first failing seed, so its counts say little).
fn skipped_md(m: &Matrix) -> String {
    let mut lines = String::new();
    for r in m.rows.iter().filter(|r| r.expected_to_hold) {
        for c in &r.cells {
            for (what, n) in &c.skipped {
                lines.push_str(&format!(
                    "- `{}` in `{}`: {what}, in {n} of {} runs\n",
                    r.variant, c.scenario, c.seeds_run
                ));
            }
        }
    }
    if lines.is_empty() {
        return lines;
    }
    format!("\nSkipped judgements: runs in which the checkers did not make a judgement, and why; a `held` does not rest on them.\n\n{lines}")
}

/// The matrix as HTML, each caught variant linking to `counterexamples/<variant>.html`.
pub fn html(m: &Matrix) -> String {
    html_with_pages(m, &|_| true)
}

/// The matrix as HTML, each caught variant linking to `counterexamples/<variant>.html` where
/// `has_page(<variant>)` says that page was written, else to its replay
/// (`counterexamples/<variant>.json`), from which `replay --html` draws it.
pub fn html_with_pages(m: &Matrix, has_page: &dyn Fn(&str) -> bool) -> String {
    let esc = escape::html_text;
    let mut s = String::from(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>leasesim variant matrix</title>\n<style>body{font:14px system-ui,sans-serif;margin:2em;color:#222}table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:4px 8px;text-align:left;vertical-align:top}th{background:#f3f3f3}.no{background:#fdd}.yes{background:#dfd}.clean{background:#def}code{font-size:12px}</style></head><body>\n<h1>leasesim variant matrix</h1>\n",
    );
    s.push_str(&format!(
        "<p>{} against every scenario, at most {} seeds per scenario. Reference: <b>{}</b>. Caught: <b>{} of {}</b>. Median seeds to detection: <b>{}</b>. Regenerate with <code>{}</code>.</p>\n",
        esc(&m.subject),
        m.seeds,
        if m.reference_clean { "clean" } else { "FAILED" },
        bad(m).filter(|r| r.caught).count(),
        bad(m).count(),
        m.median_seeds_to_detection.map_or("-".to_string(), |n| n.to_string()),
        esc(&m.command)
    ));
    s.push_str("<table class=\"matrix\"><tr><th>variant</th><th>SPEC</th><th>caught</th><th>by invariants</th><th>first caught in</th><th>seeds to detection</th><th>shrunk counterexample</th><th>reproduce</th></tr>\n");
    for r in &m.rows {
        let (class, word) = if r.expected_to_hold {
            (
                "clean",
                if r.caught {
                    "FAILED"
                } else if unfinished(r) {
                    "UNFINISHED"
                } else {
                    "clean"
                },
            )
        } else if r.caught {
            ("yes", "yes")
        } else {
            ("no", "NO")
        };
        let stem = file_stem(&r.variant);
        let link = if r.caught && !r.expected_to_hold && has_page(&stem) {
            format!(
                "<a class=\"counterexample\" href=\"counterexamples/{}.html\">timeline</a>",
                esc(&stem)
            )
        } else if r.caught && !r.expected_to_hold {
            format!(
                "<a class=\"counterexample\" href=\"counterexamples/{0}.json\">replay</a><br><small>its timeline is larger than these pages keep: <code>leasesim replay counterexamples/{0}.json --html {0}.html</code></small>",
                esc(&stem)
            )
        } else {
            "-".into()
        };
        s.push_str(&format!(
            "<tr class=\"{class}\"><td><code>{}</code><br><small>{}</small></td><td>{}</td><td>{word}</td><td>{}</td><td>{}</td><td>{}</td><td>{link}</td><td><code>{}</code></td></tr>\n",
            esc(&r.variant),
            esc(&r.summary),
            esc(&r.spec),
            esc(&r.invariants.join(", ")),
            r.best_scenario.as_deref().map_or("-".to_string(), |sc| format!("{} seed {}", esc(sc), r.first_failing_seed.unwrap_or(0))),
            r.seeds_to_detection.map_or("-".to_string(), |n| n.to_string()),
            esc(r.reproduce.as_deref().unwrap_or("-")),
        ));
    }
    s.push_str("</table>\n</body></html>\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cell(first_failing_seed: Option<u64>, unfinished: u64) -> Cell {
        Cell {
            scenario: "w1-w2".into(),
            seeds_run: 10,
            first_failing_seed,
            failing: 0,
            unfinished,
            invariants: Vec::new(),
            refused_by_validation: false,
            not_expressible: 0,
            skipped: Default::default(),
        }
    }

    #[test]
    fn a_cell_of_unfinished_runs_says_so_and_never_reads_held() {
        let row = Row {
            variant: "mine".into(),
            spec: String::new(),
            summary: String::new(),
            expected_to_hold: true,
            caught: false,
            invariants: Vec::new(),
            caught_by: Vec::new(),
            best_scenario: None,
            first_failing_seed: None,
            seeds_to_detection: None,
            reproduce: None,
            cells: vec![cell(None, 3), cell(None, 0)],
        };
        let m = Matrix {
            subject: "Mine".into(),
            command: "leasesim matrix".into(),
            seeds: 10,
            rows: vec![row],
            reference_clean: false,
            all_caught: true,
            median_seeds_to_detection: None,
        };
        let md = markdown(&m);
        let mut rows = md.lines().filter(|l| l.starts_with("| `mine` |"));
        let summary = rows.next().expect("the summary row");
        assert!(
            summary.starts_with("| `mine` |  | UNFINISHED |"),
            "{summary}"
        );
        assert_eq!(rows.next(), Some("| `mine` | unfinished (3) | held |"));
        assert!(html(&m).contains("UNFINISHED"));
    }
}
