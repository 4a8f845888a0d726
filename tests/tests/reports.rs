//! The visual reports (HTML timeline and Mermaid sequence diagram) built from real runs: a
//! design reviewer must see the lease bug, and the page must stand alone.

use leasesim::report::node_views;
use leasesim::run::reproduce_command;
use leasesim::run::{RunResult, Verdict};
use leasesim_protocol::Variant;
use leasesim_reports::{html, mermaid, NodeKind, NodeView, RunView};
use leasesim_tests::run;

fn verdict(r: &RunResult) -> String {
    r.verdict().word()
}

/// Renders both reports of one run.
fn render(scenario: &str, seed: u64, variant: Variant) -> (RunResult, String, String) {
    let r = run(scenario, seed, variant);
    let nodes = node_views(&r);
    let view = RunView {
        title: format!("{scenario} seed {seed} ({})", variant.name()),
        subtitle: reproduce_command(scenario, seed, variant),
        verdict: verdict(&r),
        nodes: &nodes,
        ops: &r.op_names,
        trace: &r.trace,
        findings: &r.findings,
        sources: &[],
    };
    let page = html::render(&view);
    let md = mermaid::render(&view);
    (r, page, md)
}

/// Every element's class list, one `Vec` per `class="..."` attribute.
fn class_lists(page: &str) -> Vec<Vec<&str>> {
    page.split("class=\"")
        .skip(1)
        .map(|rest| {
            rest[..rest.find('"').unwrap_or(0)]
                .split_whitespace()
                .collect()
        })
        .collect()
}

/// How many elements carry `class` among their classes.
fn count_class(page: &str, class: &str) -> usize {
    class_lists(page)
        .iter()
        .filter(|c| c.contains(&class))
        .count()
}

/// The elements that carry `class`, with their attributes.
fn tags_with_class<'a>(page: &'a str, class: &str) -> Vec<&'a str> {
    page.match_indices('<')
        .filter_map(|(i, _)| {
            let tag = &page[i..i + page[i..].find('>')?];
            let classes = tag.split("class=\"").nth(1)?;
            let classes = &classes[..classes.find('"')?];
            classes
                .split_whitespace()
                .any(|c| c == class)
                .then_some(tag)
        })
        .collect()
}

fn assert_self_contained(page: &str) {
    assert!(page.starts_with("<!DOCTYPE html>"));
    assert!(page.trim_end().ends_with("</html>"));
    for bad in [
        "http://",
        "https://",
        "<script src",
        "<link",
        "@import",
        "url(http",
        "console.",
    ] {
        assert!(
            !page.contains(bad),
            "the page must stand alone: found {bad:?}"
        );
    }
}

#[test]
fn w1_w2_unconditional_commit_shows_the_stale_commit() {
    let (r, page, _) = render("w1-w2", 1, Variant::UnconditionalCommit);
    assert_eq!(r.verdict(), Verdict::Violated);
    assert_self_contained(&page);
    let lanes = tags_with_class(&page, "lane");
    for n in r.nodes.iter() {
        let attr = format!("data-node=\"{}\"", n.name);
        assert!(
            lanes.iter().any(|t| t.contains(&attr)),
            "a lane for {}",
            n.name
        );
    }
    assert_eq!(lanes.len(), r.nodes.len(), "one lane per node");
    assert!(
        count_class(&page, "lease-coord") >= 2,
        "the coordinator granted token 1 and token 2"
    );
    assert!(count_class(&page, "lease-holder") >= 1);
    assert!(count_class(&page, "jeopardy") >= 1, "W1 went into jeopardy");
    assert!(count_class(&page, "violation") >= 1);
    assert!(count_class(&page, "fault") >= 1, "W1's link was cut");
    assert!(
        count_class(&page, "dropped") >= 1,
        "W1's heartbeats were dropped"
    );
    assert!(count_class(&page, "late") >= 1, "W1's effect was held");
    assert!(
        count_class(&page, "rejected") >= 1,
        "W1's late effect was fenced"
    );
    assert!(page.contains("no-stale-commit (I1)"));
    assert!(page.contains(&r.findings[0].message.replace('\'', "&#39;")));
    assert!(page.contains("data-job=\"0\""));
    // the leases are labelled with their tokens and carry their trace lines as tooltips
    let coord = tags_with_class(&page, "lease-coord");
    assert!(coord.iter().any(|t| t.contains("data-token=\"1\"")));
    assert!(coord.iter().any(|t| t.contains("data-token=\"2\"")));
    assert!(page.contains("<title>0.094492s coord @ 0.630308s ** lease_granted job0 to W1 token 1"));
    assert!(page.contains("jeopardy_entered job0 token 1"));
    if let Ok(dir) = std::env::var("LEASESIM_REPORT_OUT") {
        let dir = std::path::Path::new(&dir);
        std::fs::write(dir.join("w1w2-v2.html"), &page).expect("write the page");
        let (_, _, md) = render("w1-w2", 1, Variant::UnconditionalCommit);
        std::fs::write(dir.join("w1w2-v2.md"), md).expect("write the Markdown");
    }
}

#[test]
fn the_reference_run_has_no_violation() {
    let (r, page, md) = render("w1-w2", 1, Variant::Reference);
    assert_eq!(r.verdict(), Verdict::Held);
    assert_self_contained(&page);
    assert_eq!(count_class(&page, "violation"), 0);
    assert_eq!(count_class(&page, "violation-box"), 0);
    assert!(
        !page.contains("violation"),
        "a page of a run that held never mentions a violation"
    );
    assert!(page.contains("verdict-held"));
    assert!(count_class(&page, "lease-coord") >= 2);
    assert!(!md.contains("VIOLATION"));
    assert!(md.contains("no invariant was violated"));
}

#[test]
fn rendering_is_deterministic() {
    for (scenario, seed, variant) in [
        ("w1-w2", 1, Variant::UnconditionalCommit),
        ("swarm", 3, Variant::Reference),
        ("clock-jump", 2, Variant::Reference),
    ] {
        let (_, a, ma) = render(scenario, seed, variant);
        let (_, b, mb) = render(scenario, seed, variant);
        assert!(a == b, "{scenario} seed {seed}: the same page twice");
        assert!(ma == mb, "{scenario} seed {seed}: the same Markdown twice");
    }
}

#[test]
fn a_swarm_run_has_a_job_filter() {
    let (r, page, md) = render("swarm", 3, Variant::Reference);
    assert_self_contained(&page);
    assert!(page.contains("<select id=\"job-filter\">"));
    assert!(page.contains("<option value=\"all\">"));
    let jobs: std::collections::BTreeSet<u32> = r
        .trace
        .iter()
        .filter_map(|e| match &e.kind {
            leasesim_sim::EventKind::Send { msg, .. } => msg.job().map(|j| j.0),
            _ => None,
        })
        .collect();
    assert!(jobs.len() > 1, "a swarm of several jobs");
    for j in &jobs {
        assert!(
            page.contains(&format!("<option value=\"{j}\">job{j}</option>")),
            "job{j} in the filter"
        );
        assert!(page.contains(&format!("data-job=\"{j}\"")));
    }
    for n in r.nodes.iter() {
        assert!(page.contains(&format!("class=\"lane\" data-node=\"{}\"", n.name)));
    }
    assert!(md.contains("sequenceDiagram"));
}

#[test]
fn a_large_swarm_stays_bounded() {
    // the largest of the first seeds: thousands of events
    let (r, page, md) = (0..40)
        .map(|s| run("swarm", s, Variant::Reference))
        .max_by_key(|r| r.trace.len())
        .map(|r| {
            let seed = r.seed;
            let (r, p, m) = render("swarm", seed, Variant::Reference);
            (r, p, m)
        })
        .expect("a run");
    assert!(r.trace.len() > 1000, "{} events", r.trace.len());
    assert_self_contained(&page);
    let width: f64 = page
        .split("<svg class=\"timeline\" width=\"")
        .nth(1)
        .and_then(|s| s.split('"').next())
        .and_then(|w| w.parse().ok())
        .expect("the timeline's width");
    assert!((1200.0..=6200.0).contains(&width), "width {width}");
    let arrows = arrow_count(&md);
    assert!(arrows <= mermaid::MAX_ARROWS, "{arrows} arrows");
}

#[test]
fn mermaid_has_participants_and_the_invariant() {
    let (r, _, md) = render("w1-w2", 1, Variant::UnconditionalCommit);
    assert!(md.starts_with("## "));
    assert!(md.lines().next().unwrap_or("").contains("VIOLATED"));
    assert!(md.contains("- **no-stale-commit (I1)**"));
    let block = mermaid_block(&md);
    assert!(block.starts_with("sequenceDiagram\n"));
    for (i, n) in r.nodes.iter().enumerate() {
        assert!(
            block.contains(&format!("participant n{i} as {}\n", n.name)),
            "participant {}",
            n.name
        );
    }
    assert!(block.contains("no-stale-commit (I1)"));
    assert!(block.contains("-x"), "W1's dropped heartbeats");
    assert!(block.contains("-->>"), "W1's held effect arrives late");
    assert!(block.contains("lease_granted"));
    assert!(block.contains("jeopardy_entered"));
    assert!(block.contains("effect_fenced"));
    // Escaped: once Mermaid's entity codes are taken out, every statement has exactly one
    // separating colon and no `;` or `#` of its own.
    for l in block.lines().skip(1).map(str::trim) {
        let bare = strip_entities(l);
        assert!(!bare.contains(';') && !bare.contains('#'), "unescaped: {l}");
        if l.starts_with("Note") || l.contains("->>") || l.contains("-x") {
            assert_eq!(bare.matches(':').count(), 1, "one colon: {l}");
        }
    }
}

/// The Mermaid block of a Markdown report.
fn mermaid_block(md: &str) -> &str {
    md.split("```mermaid\n")
        .nth(1)
        .and_then(|b| b.split("\n```").next())
        .expect("a mermaid block")
}

/// Message arrows in the diagram (notes excluded).
fn arrow_count(md: &str) -> usize {
    mermaid_block(md)
        .lines()
        .map(str::trim)
        .filter(|l| !l.starts_with("Note") && (l.contains("->>") || l.contains("-x")))
        .count()
}

/// Removes Mermaid entity codes (`#59;`, `#lt;`).
fn strip_entities(s: &str) -> String {
    let mut out = String::new();
    let mut rest = s;
    while let Some(i) = rest.find('#') {
        out.push_str(&rest[..i]);
        let tail = &rest[i + 1..];
        match tail.find(';') {
            Some(j) if j > 0 && tail[..j].chars().all(|c| c.is_ascii_alphanumeric()) => {
                rest = &tail[j + 1..];
            }
            _ => {
                out.push('#');
                rest = tail;
            }
        }
    }
    out.push_str(rest);
    out
}

#[test]
fn mermaid_escapes_what_would_break_a_diagram() {
    assert_eq!(mermaid::escape("a;b#c:d"), "a#59;b#35;c#58;d");
    assert_eq!(mermaid::escape("x -> y"), "x -#gt; y");
}

/// A synthetic run: `n` claims from W1 to the coordinator, each answered "no job".
fn polling_trace(
    n: u64,
) -> Vec<leasesim_sim::TraceEvent<leasesim_protocol::Msg, leasesim_protocol::Event>> {
    use leasesim_protocol::{Msg, WorkerName};
    use leasesim_sim::{EventKind, Fate, TraceEvent};
    let mut trace = Vec::new();
    for k in 0..n {
        let t = k * 10_000_000;
        let claim = Msg::Claim {
            req: k,
            worker: WorkerName(1),
            client_now: t,
        };
        let empty = Msg::ClaimEmpty { req: k };
        trace.push(TraceEvent {
            t,
            node: 1,
            local: t + 5,
            kind: EventKind::Send {
                id: 2 * k,
                to: 0,
                msg: claim,
                fate: Fate::Deliver {
                    delay_ns: 1_000_000,
                },
            },
        });
        trace.push(TraceEvent {
            t: t + 1_000_000,
            node: 0,
            local: t + 1_000_000,
            kind: EventKind::Deliver {
                id: 2 * k,
                from: 1,
                msg: claim,
            },
        });
        trace.push(TraceEvent {
            t: t + 1_000_000,
            node: 0,
            local: t + 1_000_000,
            kind: EventKind::Send {
                id: 2 * k + 1,
                to: 1,
                msg: empty,
                fate: Fate::Deliver {
                    delay_ns: 1_000_000,
                },
            },
        });
        trace.push(TraceEvent {
            t: t + 2_000_000,
            node: 1,
            local: t + 2_000_005,
            kind: EventKind::Deliver {
                id: 2 * k + 1,
                from: 0,
                msg: empty,
            },
        });
    }
    trace
}

#[test]
fn thousands_of_messages_are_elided_with_a_note() {
    let trace = polling_trace(2_000);
    let nodes = vec![
        NodeView {
            name: "coord".into(),
            kind: NodeKind::Coordinator,
        },
        NodeView {
            name: "W1".into(),
            kind: NodeKind::Worker,
        },
    ];
    let view = RunView {
        title: "polling".into(),
        subtitle: String::new(),
        verdict: "HELD".into(),
        nodes: &nodes,
        ops: &[],
        trace: &trace,
        findings: &[],
        sources: &[],
    };
    let page = html::render(&view);
    assert_self_contained(&page);
    assert_eq!(count_class(&page, "msg"), html::MAX_ARROWS);
    assert_eq!(count_class(&page, "elided"), 1);
    assert!(page.contains("1000 of 4000 messages are not drawn"));
    let md = mermaid::render(&view);
    assert!(md.contains("left out to keep the diagram readable"));
    let arrows = arrow_count(&md);
    assert!(arrows <= mermaid::MAX_ARROWS && arrows > 100, "{arrows}");
    assert!(md.len() < 50_000, "Mermaid's default size limit");
}

#[test]
fn odd_input_is_escaped_and_never_panics() {
    let r = run("w1-w2", 1, Variant::UnconditionalCommit);
    let mut nodes = node_views(&r);
    nodes[1].name = "<script>alert('W1')</script> & \"co\"".into();
    let view = RunView {
        title: "a <b>bold</b> title; #1: yes".into(),
        subtitle: "`x` <i>".into(),
        verdict: "VIOLATED".into(),
        nodes: &nodes,
        ops: &r.op_names,
        trace: &r.trace,
        findings: &r.findings,
        sources: &[],
    };
    let page = html::render(&view);
    assert_eq!(
        page.matches("<script>").count(),
        1,
        "only the page's own script"
    );
    assert!(page.contains("&lt;script&gt;alert(&#39;W1&#39;)&lt;/script&gt; &amp; &quot;co&quot;"));
    assert!(!page.contains("<b>bold"));
    let md = mermaid::render(&view);
    assert!(!md.contains("<script>"));
    // fewer nodes than the trace names, and an empty trace: still a page
    for nodes in [&nodes[..2], &[][..]] {
        let view = RunView {
            title: "t".into(),
            subtitle: "s".into(),
            verdict: "HELD".into(),
            nodes,
            ops: &[],
            trace: &r.trace,
            findings: &r.findings,
            sources: &[],
        };
        assert!(html::render(&view).contains("</html>"));
        assert!(mermaid::render(&view).contains("sequenceDiagram"));
    }
    let empty = RunView {
        title: "empty".into(),
        subtitle: String::new(),
        verdict: "HELD".into(),
        nodes: &nodes,
        ops: &[],
        trace: &[],
        findings: &[],
        sources: &[],
    };
    assert!(html::render(&empty).contains("</html>"));
    assert!(mermaid::render(&empty).contains("sequenceDiagram"));
}
