//! The advisor's plot (P6): the SVG marks the articles' examples SAFE and UNSAFE, is
//! self-contained, well-formed enough and deterministic; the simulated grid agrees with the
//! formula where it should (no needless takeover well inside the safe region, many where H >= L).

use leasesim::advise::AdviseInput;
use leasesim::advise::{simulate, svg, PlotInput, SimulatedCell};

const S: u64 = 1_000_000_000;

fn input(lease: u64, heartbeat: u64, jitter: u64, misses: u32) -> PlotInput {
    PlotInput {
        advise: AdviseInput {
            lease_ns: lease * S,
            heartbeat_ns: heartbeat * S,
            jitter_ns: jitter * S,
            misses,
            drift_ppm: 0,
            stop_margin_ns: 0,
        },
    }
}

/// The names of the elements opened (`<name ...>` not self-closed) and closed, checked like a
/// stack: every element that is opened is closed, in order.
fn assert_balanced(svg: &str) {
    let mut stack: Vec<String> = Vec::new();
    let mut rest = svg;
    while let Some(start) = rest.find('<') {
        let end = rest[start..].find('>').expect("every tag is closed by '>'") + start;
        let tag = &rest[start + 1..end];
        assert!(!tag.contains('<'), "a '<' inside a tag: {tag}");
        if let Some(name) = tag.strip_prefix('/') {
            let open = stack
                .pop()
                .unwrap_or_else(|| panic!("</{name}> closes nothing"));
            assert_eq!(open, name.trim(), "mismatched tags");
        } else if !tag.ends_with('/') && !tag.starts_with('?') && !tag.starts_with('!') {
            let name = tag.split_whitespace().next().expect("a tag has a name");
            stack.push(name.to_string());
        }
        rest = &rest[end + 1..];
    }
    assert!(stack.is_empty(), "unclosed elements: {stack:?}");
    // Text between tags has no stray '&' that is not an entity.
    for (k, _) in svg.match_indices('&') {
        let entity = &svg[k..svg.len().min(k + 6)];
        assert!(
            ["&amp;", "&lt;", "&gt;", "&quot;", "&apos;"]
                .iter()
                .any(|e| entity.starts_with(e)),
            "an unescaped '&' at {k}: {entity}"
        );
    }
}

fn assert_self_contained(svg: &str) {
    let without_ns = svg.replace("xmlns=\"http://www.w3.org/2000/svg\"", "");
    assert!(!without_ns.contains("http"), "an external reference");
    assert!(!without_ns.contains("href"), "a reference");
    assert!(!without_ns.contains("url("), "a reference");
}

/// The label next to the chosen point (`SAFE: L = ...` or `UNSAFE: L = ...`).
fn point_label(svg: &str) -> &str {
    let k = svg
        .find("SAFE: L = ")
        .expect("the chosen point is labelled");
    let start = svg[..k].rfind('>').expect("inside a text element") + 1;
    let end = k + svg[k..].find('<').expect("the label ends");
    &svg[start..end]
}

#[test]
fn article_90s_30s_20s_1_is_marked_safe() {
    let s = svg(&input(90, 30, 20, 1), None);
    assert!(s.starts_with("<svg"), "{s}");
    assert_eq!(point_label(&s), "SAFE: L = 90.000s, H = 30.000s");
    assert!(
        s.contains("J = 20.000s, R = 1, rho = 0 ppm, G = 0.000s"),
        "{s}"
    );
    assert!(
        s.contains("L = (1+rho)/(1-rho)*R*H + J"),
        "the boundary is labelled"
    );
    assert!(!s.contains("Simulated cells"), "no legend without cells");
}

#[test]
fn article_35s_30s_20s_1_is_marked_unsafe() {
    let s = svg(&input(35, 30, 20, 1), None);
    assert!(s.starts_with("<svg"));
    assert_eq!(point_label(&s), "UNSAFE: L = 35.000s, H = 30.000s");
    assert!(s.contains("(L &lt;= 50.000s)"), "the bound at this H: {s}");
}

#[test]
fn the_svg_is_well_formed_self_contained_and_deterministic() {
    for i in [
        input(90, 30, 20, 1),
        input(35, 30, 20, 1),
        input(30, 10, 2, 2),
        PlotInput {
            advise: AdviseInput {
                lease_ns: 30 * S,
                heartbeat_ns: 5 * S,
                jitter_ns: 2 * S,
                misses: 3,
                drift_ppm: 500,
                stop_margin_ns: 2 * S,
            },
        },
        // Invalid for the advisor: still a well-formed picture saying why.
        input(0, 30, 20, 1),
        input(1, 1, 0, 1),
    ] {
        let cells = [
            SimulatedCell {
                lease_ns: 20 * S,
                heartbeat_ns: 5 * S,
                runs: 5,
                needless_takeover_rate: 0.0,
                jeopardy_rate: 0.2,
            },
            SimulatedCell {
                lease_ns: 10 * S,
                heartbeat_ns: 25 * S,
                runs: 5,
                needless_takeover_rate: 1.0,
                jeopardy_rate: 1.0,
            },
        ];
        for c in [None, Some(&cells[..])] {
            let a = svg(&i, c);
            assert!(a.starts_with("<svg"), "{a}");
            assert!(a.trim_end().ends_with("</svg>"));
            assert_balanced(&a);
            assert_self_contained(&a);
            assert_eq!(a, svg(&i, c), "same input, same bytes");
        }
    }
    let with = svg(&input(30, 10, 2, 2), Some(&[]));
    assert!(with.contains("Simulated cells"), "a legend with cells");
}

#[test]
fn simulated_grid_agrees_with_the_formula() {
    let i = input(30, 10, 2, 2);
    let cells = simulate(&i, 3, 5);
    assert_eq!(cells.len(), 9);
    assert_eq!(cells, simulate(&i, 3, 5), "deterministic");
    let bound = |c: &SimulatedCell| 2 * c.heartbeat_ns + 2 * S;
    let mut well_inside = 0;
    let mut beyond = 0;
    for c in &cells {
        assert_eq!(c.runs, 5);
        assert!((0.0..=1.0).contains(&c.needless_takeover_rate), "{c:?}");
        assert!((0.0..=1.0).contains(&c.jeopardy_rate), "{c:?}");
        // Safe by the formula with a margin of a fifth.
        if c.lease_ns as f64 > 1.2 * bound(c) as f64 {
            well_inside += 1;
            assert_eq!(c.needless_takeover_rate, 0.0, "{c:?}");
        }
        if c.heartbeat_ns >= c.lease_ns {
            beyond += 1;
            assert!(c.needless_takeover_rate > 0.0, "{c:?}");
        }
    }
    assert!(well_inside >= 2 && beyond >= 1, "{cells:?}");
    let s = svg(&i, Some(&cells));
    assert_balanced(&s);
    assert_eq!(
        s.matches("needless takeover in").count(),
        9,
        "a tooltip per cell"
    );
    assert!(s.contains("jeopardy in"));
}

#[test]
fn invalid_input_simulates_nothing() {
    assert!(simulate(&input(0, 30, 20, 1), 3, 5).is_empty());
    assert!(simulate(&input(90, 30, 20, 0), 3, 5).is_empty());
    assert!(simulate(&input(90, 30, 20, 1), 0, 5).is_empty());
}
