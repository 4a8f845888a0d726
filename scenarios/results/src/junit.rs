//! A sweep's result as JUnit XML, the format CI systems render as test results: one testsuite
//! for the sweep, one testcase per scenario (classname `leasesim.<variant>`), a `failure` for
//! its failing seeds (the message carries the first seed and the command that reproduces it),
//! for a declared hazard never reached and for a seed that was not deterministic, `skipped` for
//! a scenario this shard had no seed of, and the saved replay files in `system-out` (with
//! GitLab's attachment lines). It keeps to the elements and attributes of the JUnit schema
//! that Jenkins, GitLab and the GitHub reporters read; every text is escaped. The matrix has
//! its own layout ([`matrix_junit`]).

use crate::sweep::{Results, PRINT_FAILURES_MAX};
use leasesim::matrix::{Cell, Matrix, Row};
use leasesim::run::reproduce_command_for;
use leasesim::sweep::describe_ranges;
use leasesim::Machines;
use leasesim_reports::escape::html as esc;
use std::fmt::Write;

/// The whole document.
pub fn junit(r: &Results) -> String {
    let m = &r.config.machines;
    let mut cases = String::new();
    let (mut tests, mut failures, mut skipped) = (0u64, 0u64, 0u64);
    for (i, d) in r.defs.iter().enumerate() {
        let o = &r.report.scenarios[i];
        tests += 1;
        let mut body = String::new();
        let failed = failures_of(&mut body, r, i);
        if let Some(why) = skip_reason(r, i) {
            skipped += 1;
            let _ = write!(body, "\n      <skipped message=\"{}\"/>", esc(&why));
        }
        let text = system_out(r, i);
        if !text.is_empty() {
            let _ = write!(body, "\n      <system-out>{}</system-out>", esc(&text));
        }
        if failed {
            failures += 1;
        }
        let _ = write!(
            cases,
            "\n    <testcase classname=\"{}\" name=\"{}\" time=\"{:.3}\">{}{}",
            esc(&format!("leasesim.{}", m.name())),
            esc(&d.name),
            o.busy.as_secs_f64(),
            body,
            if body.is_empty() {
                "</testcase>"
            } else {
                "\n    </testcase>"
            }
        );
    }
    let properties = properties(r);
    let suite = format!("leasesim sweep {} ({})", m.name(), r.scope());
    let time = format!("{:.3}", r.elapsed);
    format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"leasesim\" tests=\"{tests}\" failures=\"{failures}\" errors=\"0\" time=\"{time}\">\n  <testsuite name=\"{}\" tests=\"{tests}\" failures=\"{failures}\" errors=\"0\" skipped=\"{skipped}\" time=\"{time}\">\n    <properties>{properties}\n    </properties>{cases}\n  </testsuite>\n</testsuites>\n",
        esc(&suite)
    )
}

/// Scenario `i`'s `failure` elements (its failing seeds, a declared hazard never reached, a
/// judgement never made, a seed that was not deterministic), written to `body`; whether there
/// was one.
fn failures_of(body: &mut String, r: &Results, i: usize) -> bool {
    let o = &r.report.scenarios[i];
    let mut failed = failing_seeds(body, r, i);
    for (_, h) in r.unreached.iter().filter(|(s, _)| *s == i) {
        failed = true;
        let _ = write!(
            body,
            "\n      <failure message=\"{}\" type=\"hazard-coverage\">{}</failure>",
            esc(&format!(
                "never reached its declared hazard {} in {} seeds",
                h.name(),
                o.runs
            )),
            esc(h.summary())
        );
    }
    for (_, judgement, causes) in r.never_judged().iter().filter(|(s, _, _)| *s == i) {
        failed = true;
        let _ = write!(
            body,
            "\n      <failure message=\"{}\" type=\"never-judged\">{}</failure>",
            esc(&format!(
                "never judged {judgement}: skipped in all {} runs",
                o.judged()
            )),
            esc(&format!(
                "{}; allow it with --allow-skipped {judgement} if that is meant",
                causes.join("; ")
            ))
        );
    }
    if let Some((seed, e)) = o.nondeterministic_seeds.first() {
        failed = true;
        let _ = write!(
            body,
            "\n      <failure message=\"{}\" type=\"nondeterministic\">{}</failure>",
            esc(&format!(
                "seed {seed} is not deterministic ({} seed(s) differed)",
                o.nondeterministic
            )),
            esc(e)
        );
    }
    failed
}

/// Scenario `i`'s failing seeds as one `failure` (the first seed and the command that
/// reproduces it in the message, the first few in the text), written to `body`; whether it
/// has any.
fn failing_seeds(body: &mut String, r: &Results, i: usize) -> bool {
    let m = &r.config.machines;
    let d = &r.defs[i];
    let o = &r.report.scenarios[i];
    let Some(f) = o.failures.first() else {
        return false;
    };
    let reproduce = reproduce_command_for(m, &d.name, f.seed);
    let mut text = format!(
        "{} of {} seeds failed (seeds run: {})\n",
        o.failing,
        o.runs,
        describe_ranges(&o.ran)
    );
    for f in o.failures.iter().take(PRINT_FAILURES_MAX) {
        let _ = writeln!(
            text,
            "seed {}: {}\n  reproduce: {}",
            f.seed,
            f.first,
            reproduce_command_for(m, &d.name, f.seed)
        );
        if let Some(path) = r.replay(i, f.seed) {
            let _ = writeln!(text, "  replay: {path}");
        }
    }
    let more = o.failing.saturating_sub(PRINT_FAILURES_MAX as u64);
    if more > 0 {
        let _ = writeln!(text, "... and {more} more failing seeds");
    }
    let kind = if f.invariants.is_empty() {
        f.verdict.word()
    } else {
        f.invariants.join(",")
    };
    let _ = write!(
        body,
        "\n      <failure message=\"{}\" type=\"{}\">{}</failure>",
        esc(&format!(
            "seed {}: {}; reproduce: {reproduce}",
            f.seed, f.first
        )),
        esc(&kind),
        esc(&text)
    );
    true
}

/// Why scenario `i` has no run, when it has none.
fn skip_reason(r: &Results, i: usize) -> Option<String> {
    let report = &r.report;
    if report.scenarios[i].runs > 0 {
        return None;
    }
    Some(if report.interrupted {
        "the sweep was interrupted before any seed of it ran".to_string()
    } else if report.budget.is_some_and(|b| b.spent) {
        "the time budget was spent before any seed of it ran".to_string()
    } else {
        format!("{} holds no seed of it", r.scope())
    })
}

/// Scenario `i`'s `system-out` text: the judgements skipped and the saved replay files.
fn system_out(r: &Results, i: usize) -> String {
    let o = &r.report.scenarios[i];
    let replays: Vec<&str> = o
        .failures
        .iter()
        .filter_map(|f| r.replay(i, f.seed))
        .collect();
    let mut text = String::new();
    // What a verdict that held does not rest on.
    for (k, n) in &o.skipped {
        let _ = writeln!(
            text,
            "not judged: {} ({}) in {n} of {} runs: {}",
            k.judgement,
            k.spec,
            o.judged(),
            k.cause
        );
    }
    for p in &replays {
        let _ = writeln!(text, "replay: {p}");
    }
    if let Some(first) = replays.first() {
        // GitLab links the first as the test's attachment.
        let _ = writeln!(text, "[[ATTACHMENT|{first}]]");
    }
    text
}

/// The suite's `property` elements: version, variant, seeds, scope, runs, verdict, shard,
/// budget and the commands that repeat the runs.
fn properties(r: &Results) -> String {
    let report = &r.report;
    let m = &r.config.machines;
    let mut props = vec![
        ("leasesim.version", env!("CARGO_PKG_VERSION").to_string()),
        ("variant", m.name().to_string()),
        (
            "seeds",
            format!("{}..{}", r.config.seeds.start, r.config.seeds.end),
        ),
        ("scope", r.scope()),
        ("runs", report.runs.to_string()),
        ("verdict", r.outcome().word().to_string()),
    ];
    if let Some(s) = r.config.shard {
        props.push(("shard", s.to_string()));
    }
    if let Some(b) = report.budget {
        props.push(("budget_s", format!("{:.3}", b.budget.as_secs_f64())));
    }
    for (i, cmd) in r.repeat().into_iter().enumerate() {
        props.push(if i == 0 {
            ("repeat", cmd)
        } else {
            ("repeat.more", cmd)
        });
    }
    let mut properties = String::new();
    for (k, v) in props {
        let _ = write!(
            properties,
            "\n      <property name=\"{}\" value=\"{}\"/>",
            esc(k),
            esc(&v)
        );
    }
    properties
}

/// The matrix as JUnit XML: one testsuite per variant, one testcase per variant x scenario
/// (classname `leasesim.<variant>`), and for a known-bad variant one testcase more, `caught`,
/// that fails when no scenario caught it. A cell fails when machines expected to hold broke an
/// invariant or ran away there (its message: the first failing seed and the command that
/// reproduces it); a known-bad variant's cell says in `system-out` whether it caught it.
pub fn matrix_junit(mx: &Matrix, cat: &[Machines]) -> String {
    let (mut tests, mut failures) = (0u64, 0u64);
    let mut suites = String::new();
    for (row, m) in mx.rows.iter().zip(cat) {
        let class = esc(&format!("leasesim.{}", m.name()));
        let (mut suite_tests, mut suite_failures) = (0u64, 0u64);
        let mut cases = String::new();
        for c in &row.cells {
            suite_tests += 1;
            let (body, failed) = cell_body(c, m);
            if failed {
                suite_failures += 1;
            }
            let _ = write!(
                cases,
                "\n      <testcase classname=\"{class}\" name=\"{}\">{}{}",
                esc(&c.scenario),
                body,
                if body.is_empty() {
                    "</testcase>"
                } else {
                    "\n      </testcase>"
                }
            );
        }
        if m.is_known_bad() {
            suite_tests += 1;
            let (body, failed) = caught_body(mx, row, m);
            if failed {
                suite_failures += 1;
            }
            let _ = write!(
                cases,
                "\n      <testcase classname=\"{class}\" name=\"caught\">{body}</testcase>"
            );
        }
        tests += suite_tests;
        failures += suite_failures;
        let _ = write!(
            suites,
            "\n  <testsuite name=\"{}\" tests=\"{suite_tests}\" failures=\"{suite_failures}\" errors=\"0\" skipped=\"0\">\n    <properties>\n      <property name=\"known_bad\" value=\"{}\"/>\n      <property name=\"seeds\" value=\"{}\"/>\n    </properties>{cases}\n  </testsuite>",
            esc(&format!("leasesim matrix: {}", m.name())),
            m.is_known_bad(),
            mx.seeds
        );
    }
    format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"leasesim matrix\" tests=\"{tests}\" failures=\"{failures}\" errors=\"0\">{suites}\n</testsuites>\n"
    )
}

/// A matrix cell's testcase body: a `failure` where machines expected to hold broke, a
/// `system-out` saying whether a known-bad variant was caught there; and whether it failed.
fn cell_body(c: &Cell, m: &Machines) -> (String, bool) {
    let mut body = String::new();
    let broke = c.first_failing_seed.is_some() || c.unfinished > 0;
    if broke && !m.is_known_bad() {
        let (message, kind) = match c.first_failing_seed {
            Some(seed) => (
                format!(
                    "seed {seed}: {}; reproduce: {}",
                    c.invariants.join(", "),
                    reproduce_command_for(m, &c.scenario, seed)
                ),
                c.invariants.join(","),
            ),
            None => (
                format!(
                    "{} run(s) hit a limit without a finding in {} seeds",
                    c.unfinished, c.seeds_run
                ),
                "unfinished".to_string(),
            ),
        };
        let _ = write!(
            body,
            "\n        <failure message=\"{}\" type=\"{}\">{} of {} seeds failed</failure>",
            esc(&message),
            esc(&kind),
            c.failing + c.unfinished,
            c.seeds_run
        );
        return (body, true);
    }
    if m.is_known_bad() {
        let said = match c.first_failing_seed {
            Some(seed) => format!(
                "caught at seed {seed} by {}; reproduce: {}",
                c.invariants.join(", "),
                reproduce_command_for(m, &c.scenario, seed)
            ),
            None => format!("not caught here in {} seeds", c.seeds_run),
        };
        let _ = write!(body, "\n        <system-out>{}</system-out>", esc(&said));
    }
    (body, false)
}

/// A known-bad variant's `caught` testcase body (what caught it, or a `failure` when nothing
/// did); and whether it failed.
fn caught_body(mx: &Matrix, row: &Row, m: &Machines) -> (String, bool) {
    if row.caught {
        let body = format!(
            "\n        <system-out>{}</system-out>\n      ",
            esc(&format!(
                "caught by {} ({}); first: {}",
                row.caught_by.join(", "),
                row.invariants.join(", "),
                row.reproduce.as_deref().unwrap_or("-")
            ))
        );
        return (body, false);
    }
    let body = format!(
        "\n        <failure message=\"{}\" type=\"not-caught\"/>\n      ",
        esc(&format!(
            "the known-bad variant {} was caught by no scenario in {} seeds each",
            m.name(),
            mx.seeds
        ))
    );
    (body, true)
}
