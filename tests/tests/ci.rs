//! Sweeps in CI: shards that merge into the unsharded sweep, JUnit that CI tools read, a time
//! budget that stops within a seed and names what ran, and the example CI files, whose
//! `leasesim` commands must parse with the real command line.

use leasesim_tests::{cli, leasesim_bin, run_with_limit, TempDir};
use serde_json::Value;
use std::collections::BTreeMap;
use std::process::Command;
use std::time::Duration;

/// A known-bad variant that fails every seed of w1-w2 (more than the 1,000 a list keeps), some
/// of the others' and none of most scenarios: failures to compare, and a list to truncate.
const BAD: &str = "receiver-ignores-fence";

/// The scenarios of the four-shard comparison: the cheapest seed (w1-w2) beside the dearest
/// (the swarm's, ten times its cost), so that shards cut by cost meet seeds of very different
/// cost, and 20,000 seeds of them stay a few seconds of the test build.
const SHARDED: [&str; 4] = [
    "w1-w2",
    "gc-pause-after-check",
    "coordinator-outage",
    "swarm",
];

/// `leasesim` with `args`, run as one whole sweep whatever CI runs the tests: none of the
/// variables a CI names its shard by reaches it.
fn unsharded(args: &[&str]) -> Command {
    let mut cmd = Command::new(leasesim_bin());
    cmd.args(args);
    for var in [
        "LEASESIM_SHARD",
        "CI_NODE_INDEX",
        "CI_NODE_TOTAL",
        "JOB_COMPLETION_INDEX",
    ] {
        cmd.env_remove(var);
    }
    cmd
}

fn json_of(out: &str) -> Value {
    serde_json::from_str(out).unwrap_or_else(|e| panic!("{e}: {out}"))
}

fn read_json(path: &std::path::Path) -> Value {
    json_of(&std::fs::read_to_string(path).expect("the result file"))
}

/// Per scenario, what a result says: runs, failing, unfinished, hazard counts, unreached
/// hazards, and the failure list without the replay files (each shard saves its own).
fn essence(v: &Value) -> Vec<Value> {
    v["scenarios"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            let failures: Vec<Value> = s["failures"]
                .as_array()
                .unwrap()
                .iter()
                .map(|f| {
                    serde_json::json!([
                        f["seed"],
                        f["verdict"],
                        f["invariants"],
                        f["first"],
                        f["reproduce"]
                    ])
                })
                .collect();
            serde_json::json!({
                "name": s["name"],
                "runs": s["runs"],
                "failing": s["failing"],
                "unfinished": s["unfinished"],
                "hazards": s["hazards"],
                "unreached": s["unreached_hazards"],
                "failures": failures,
            })
        })
        .collect()
}

#[test]
fn four_shards_merged_are_the_unsharded_sweep() {
    let tmp = TempDir::new("ci-shards");
    let dir = |name: &str| tmp.join(name).display().to_string();
    let sweep = |extra: &[&str]| {
        let mut args = vec!["sweep"];
        args.extend(SHARDED);
        args.extend(["--seeds", "20000", "--variant", BAD]);
        args.extend(extra);
        cli(&args)
    };
    // `--shard 1/1`: the whole sweep, whatever the environment says.
    let (code, out, err) = sweep(&[
        "--shard",
        "1/1",
        "--format",
        "json",
        "--failures-dir",
        &dir("f0"),
    ]);
    assert_eq!(code, 1, "{err}");
    let whole = json_of(&out);
    let mut files = Vec::new();
    let mut seen: Vec<Vec<(u64, u64)>> = vec![Vec::new(); SHARDED.len()];
    for k in 1..=4 {
        let file = dir(&format!("shard-{k}.json"));
        let (code, _, err) = sweep(&[
            "--shard",
            &format!("{k}/4"),
            "--json",
            &file,
            "--failures-dir",
            &dir(&format!("f{k}")),
        ]);
        assert_eq!(code, 1, "shard {k} has failures of its own: {err}");
        let shard = read_json(std::path::Path::new(&file));
        assert_eq!(shard["shard"]["index"], k);
        assert_eq!(shard["shard"]["source"], "--shard");
        assert_eq!(
            shard["coverage_judged"], false,
            "a shard leaves coverage to the merge"
        );
        // A quarter of the seeds of every scenario, give or take the seed where it is cut.
        for (j, s) in shard["scenarios"].as_array().unwrap().iter().enumerate() {
            let ran = s["ran"].as_array().unwrap();
            assert_eq!(ran.len(), 1, "one range per scenario: {s}");
            let (a, b) = (
                ran[0]["start"].as_u64().unwrap(),
                ran[0]["end"].as_u64().unwrap(),
            );
            assert!((4_999..=5_001).contains(&(b - a)), "shard {k}: {a}..{b}");
            assert_eq!(s["share"], ran[0], "a shard runs its whole share");
            seen[j].push((a, b));
        }
        files.push(file);
    }
    // Disjoint and together exactly the space: each scenario's four ranges follow each other.
    for ranges in &seen {
        assert_eq!(ranges[0].0, 0);
        assert!(ranges.windows(2).all(|w| w[0].1 == w[1].0), "{ranges:?}");
        assert_eq!(ranges[3].1, 20_000);
    }
    let mut args = vec!["merge"];
    args.extend(files.iter().map(String::as_str));
    let junit = dir("junit.xml");
    let summary = dir("summary.md");
    args.extend(["--format", "json", "--junit", &junit, "--summary", &summary]);
    let (code, out, err) = cli(&args);
    assert_eq!(code, 1, "the known-bad variant fails: {err}");
    let merged = json_of(&out);
    assert_eq!(merged["verdict"], "failed");
    assert_eq!(merged["verdict"], whole["verdict"]);
    assert_eq!(merged["runs"], whole["runs"]);
    assert_eq!(merged["runs"], 80_000);
    assert_eq!(merged["failing"], whole["failing"]);
    assert_eq!(merged["unreached_hazards"], whole["unreached_hazards"]);
    assert_eq!(merged["merged"]["problems"], serde_json::json!([]));
    let (a, b) = (essence(&merged), essence(&whole));
    assert_eq!(a.len(), SHARDED.len());
    for (m, w) in a.iter().zip(&b) {
        assert_eq!(m, w, "scenario {}", w["name"]);
    }
    // w1-w2 fails all 20,000 seeds; both lists keep the same lowest 1,000.
    let w1w2 = &merged["scenarios"][0];
    assert_eq!(w1w2["failing"], 20_000);
    assert_eq!(w1w2["failures"].as_array().unwrap().len(), 1_000);
    assert_eq!(w1w2["ran"], serde_json::json!([{"start": 0, "end": 20000}]));
    let (text_code, text, _) = cli(&[&args[..5], &["--format", "text"]].concat());
    assert_eq!(text_code, 1);
    assert!(
        text.contains("the lowest 1000 of its 20000 failing seeds are kept"),
        "{text}"
    );
    assert!(text.contains("verdict FAILED"), "{text}");
    let xml = std::fs::read_to_string(&junit).unwrap();
    let doc = validate_junit(&xml);
    assert_eq!(testcases(&doc), SHARDED, "one testcase per scenario");
    let md = std::fs::read_to_string(&summary).unwrap();
    assert!(
        md.starts_with("## leasesim sweep: FAILED (4 shard result(s) merged)"),
        "{md}"
    );
    assert!(
        md.contains("### Hazard coverage") && md.contains("| `swarm` | 20000 |"),
        "{md}"
    );
}

#[test]
fn merge_names_a_missing_or_repeated_shard_and_refuses_another_sweep() {
    let tmp = TempDir::new("ci-merge-problems");
    let file = |name: &str| tmp.join(name).display().to_string();
    let shard = |k: u64, variant: &str, out: &str| {
        let (code, _, err) = cli(&[
            "sweep",
            "w1-w2",
            "retries",
            "--seeds",
            "60",
            "--variant",
            variant,
            "--shard",
            &format!("{k}/3"),
            "--json",
            &file(out),
            "--failures-dir",
            &file("f"),
        ]);
        assert_eq!(code, 0, "{err}");
    };
    shard(1, "reference", "a.json");
    shard(2, "reference", "b.json");
    shard(2, "no-jeopardy", "other.json");
    let (code, out, _) = cli(&["merge", &file("a.json"), &file("b.json"), &file("b.json")]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("INCOMPLETE: shard 2/3 is given twice"),
        "{out}"
    );
    assert!(out.contains("INCOMPLETE: shard(s) 3/3 missing"), "{out}");
    assert!(out.contains("verdict INCOMPLETE"), "{out}");
    assert!(
        out.contains("w1-w2                      40 seeds"),
        "counted once: {out}"
    );
    let (code, out, err) = cli(&["merge", &file("a.json"), &file("other.json")]);
    assert_eq!(code, 2, "{out}");
    assert!(
        err.starts_with("error: ") && err.lines().count() == 1,
        "{err}"
    );
    assert!(err.contains("its variant is \"no-jeopardy\""), "{err}");
    std::fs::write(file("junk.json"), "{\"runs\": 3}").unwrap();
    let (code, _, err) = cli(&["merge", &file("junk.json")]);
    assert_eq!(code, 2);
    assert!(
        err.contains("not a leasesim sweep or matrix result"),
        "{err}"
    );
    let (code, _, err) = cli(&["merge"]);
    assert_eq!(code, 2);
    assert_eq!(err.lines().count(), 1, "{err}");
}

#[test]
fn three_matrix_shards_merged_are_the_whole_matrix() {
    let tmp = TempDir::new("ci-matrix");
    let path = |name: &str| tmp.join(name).display().to_string();
    let (whole_code, out, err) = cli(&[
        "matrix",
        "--seeds",
        "12",
        "--shard",
        "1/1",
        "--out",
        &path("whole"),
        "--junit",
        &path("whole.xml"),
    ]);
    assert!(whole_code == 0 || whole_code == 1, "{err}");
    assert!(
        out.starts_with("shard 1/1 (from --shard): cells 0..300 of 300"),
        "{out}"
    );
    let mut files = Vec::new();
    let mut next = 0;
    for k in 1..=3 {
        let file = path(&format!("m{k}.json"));
        let (code, out, err) = cli(&[
            "matrix",
            "--seeds",
            "12",
            "--shard",
            &format!("{k}/3"),
            "--json",
            &file,
            "--out",
            &path("unused"),
        ]);
        assert_eq!(code, 0, "the reference's cells hold: {err}");
        assert!(
            out.contains("the verdict and the tables come from `leasesim merge`"),
            "{out}"
        );
        let doc = read_json(std::path::Path::new(&file));
        let cells = doc["cells"].as_array().unwrap();
        // Contiguous, disjoint, together every cell.
        assert_eq!(cells[0]["index"], next);
        next = cells.last().unwrap()["index"].as_u64().unwrap() + 1;
        files.push(file);
    }
    assert_eq!(next, 300, "15 machines x 20 scenarios");
    assert!(
        !tmp.join("unused").exists(),
        "a shard writes no table: a row's verdict needs every scenario"
    );
    let (code, _, err) = cli(&["matrix", "--shard", "2/3", "--junit", &path("x.xml")]);
    assert_eq!(code, 2);
    assert!(err.contains("need the whole matrix"), "{err}");
    let mut args = vec!["merge"];
    args.extend(files.iter().map(String::as_str));
    let merged_dir = path("merged");
    let merged_xml = path("merged.xml");
    args.extend(["--out", &merged_dir, "--junit", &merged_xml]);
    let (merged_code, out, err) = cli(&args);
    assert_eq!(merged_code, whole_code, "the same verdict: {err}");
    assert!(
        out.contains("matrix merged from 3 shard result(s)"),
        "{out}"
    );
    for file in ["matrix.md", "matrix.html"] {
        assert_eq!(
            std::fs::read_to_string(tmp.join("merged").join(file)).unwrap(),
            std::fs::read_to_string(tmp.join("whole").join(file)).unwrap(),
            "{file}"
        );
    }
    let xml = std::fs::read_to_string(&merged_xml).unwrap();
    assert_eq!(xml, std::fs::read_to_string(tmp.join("whole.xml")).unwrap());
    let doc = validate_junit(&xml);
    // One testcase per variant x scenario, and whether each known-bad variant was caught.
    let cases = testcases(&doc);
    assert_eq!(cases.len(), 15 * 20 + 14, "{cases:?}");
    let caught = doc
        .descendants()
        .find(|n| {
            n.attribute("classname") == Some("leasesim.unconditional-commit")
                && n.attribute("name") == Some("caught")
        })
        .expect("a caught testcase for V2");
    assert!(
        caught.children().all(|n| !n.has_tag_name("failure")),
        "V2 is caught"
    );
    // A shard missing: no table, INCOMPLETE.
    let (code, out, _) = cli(&["merge", &files[0], &files[2]]);
    assert_eq!(code, 1);
    assert!(out.contains("INCOMPLETE: shard(s) 2/3 missing"), "{out}");
    // Hand-made results that hold nothing: refused, in one line.
    for (name, doc) in [
        (
            "none.json",
            r#"{"format":"leasesim-matrix","format_version":1,"catalogue":[],"seeds":3,"cells":[],"shard":null}"#,
        ),
        (
            "garbled.json",
            r#"{"format":"leasesim-matrix","format_version":1,"catalogue":[{"name":"reference"}],"seeds":3,"cells":"x","shard":{"index":1,"count":2}}"#,
        ),
        (
            "empty-sweep.json",
            r#"{"format":"leasesim-sweep","format_version":1,"variant":"reference","seeds":{"start":4,"end":4},"scenarios":[]}"#,
        ),
    ] {
        std::fs::write(tmp.join(name), doc).unwrap();
        let (code, out, err) = cli(&["merge", &path(name)]);
        assert_eq!(code, 2, "{name}: {out}");
        assert!(
            err.starts_with("error: ") && err.lines().count() == 1,
            "{err}"
        );
        assert!(
            ["no machines", "expected a list", "no seeds"]
                .iter()
                .any(|why| err.contains(why)),
            "{name}: {err}"
        );
    }
    // A sweep's result among a matrix's: refused.
    let sweep = path("sweep.json");
    let (code, _, err) = cli(&["sweep", "w1-w2", "--seeds", "5", "--json", &sweep]);
    assert_eq!(code, 0, "{err}");
    let (code, _, err) = cli(&["merge", &files[0], &sweep]);
    assert_eq!(code, 2);
    assert!(err.contains("a sweep result among matrix results"), "{err}");
}

#[test]
fn merge_refuses_a_shard_whose_counts_do_not_add_up() {
    let tmp = TempDir::new("ci-merge-tampered");
    let file = |name: &str| tmp.join(name).display().to_string();
    for k in 1..=2 {
        let (code, _, err) = cli(&[
            "sweep",
            "w1-w2",
            "--seeds",
            "40",
            "--shard",
            &format!("{k}/2"),
            "--json",
            &file(&format!("s{k}.json")),
        ]);
        assert_eq!(code, 0, "{err}");
    }
    let (code, out, _) = cli(&["merge", &file("s1.json"), &file("s2.json")]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("verdict HELD"), "{out}");
    // A shard that claims runs it does not name.
    let mut doc = read_json(&tmp.join("s2.json"));
    doc["scenarios"][0]["ran"] = serde_json::json!([{"start": 20, "end": 30}]);
    std::fs::write(file("s2.json"), doc.to_string()).unwrap();
    let (code, _, err) = cli(&["merge", &file("s1.json"), &file("s2.json")]);
    assert_eq!(code, 2);
    assert!(
        err.contains("counts 20 runs of w1-w2 but names 10 seeds"),
        "{err}"
    );
    // One that ran less than its share without saying why: the seeds are named as missing.
    doc["scenarios"][0]["runs"] = serde_json::json!(10);
    doc["runs"] = serde_json::json!(10);
    std::fs::write(file("s2.json"), doc.to_string()).unwrap();
    let (code, out, _) = cli(&["merge", &file("s1.json"), &file("s2.json")]);
    assert_eq!(code, 1);
    assert!(
        out.contains("INCOMPLETE: w1-w2 ran seeds 0..30 in these shards, not 0..40"),
        "{out}"
    );
}

/// Checks a JUnit document against the JUnit schema CI tools use (Jenkins' junit-10, which
/// GitLab and the GitHub reporters read alike): only its elements, nested as it allows, its
/// required attributes present and no other attributes, counts and times as numbers, and the
/// counts consistent with the test cases. `roxmltree` checks that the XML is well formed.
fn validate_junit(xml: &str) -> roxmltree::Document<'_> {
    let doc = roxmltree::Document::parse(xml).unwrap_or_else(|e| panic!("not XML: {e}\n{xml}"));
    type Rule = (
        &'static [&'static str],
        &'static [&'static str],
        &'static [&'static str],
    );
    // element -> (required attributes, optional attributes, allowed children)
    let rules: BTreeMap<&str, Rule> = BTreeMap::from([
        (
            "testsuites",
            (
                &[][..],
                &["name", "time", "tests", "failures", "errors"][..],
                &["testsuite"][..],
            ),
        ),
        (
            "testsuite",
            (
                &["name", "tests", "failures", "errors"][..],
                &[
                    "group",
                    "time",
                    "skipped",
                    "timestamp",
                    "hostname",
                    "id",
                    "package",
                    "file",
                    "log",
                    "url",
                ][..],
                &[
                    "testsuite",
                    "properties",
                    "testcase",
                    "system-out",
                    "system-err",
                ][..],
            ),
        ),
        ("properties", (&[][..], &[][..], &["property"][..])),
        ("property", (&["name", "value"][..], &[][..], &[][..])),
        (
            "testcase",
            (
                &["name"][..],
                &["time", "classname", "group"][..],
                &["skipped", "error", "failure", "system-out", "system-err"][..],
            ),
        ),
        ("failure", (&[][..], &["type", "message"][..], &[][..])),
        ("error", (&[][..], &["type", "message"][..], &[][..])),
        ("skipped", (&[][..], &["type", "message"][..], &[][..])),
        ("system-out", (&[][..], &[][..], &[][..])),
        ("system-err", (&[][..], &[][..], &[][..])),
    ]);
    let root = doc.root_element();
    assert_eq!(root.tag_name().name(), "testsuites");
    for node in root.descendants().filter(|n| n.is_element()) {
        let name = node.tag_name().name();
        let (required, optional, children) = rules
            .get(name)
            .unwrap_or_else(|| panic!("<{name}> is not a JUnit element"));
        for a in *required {
            assert!(node.attribute(*a).is_some(), "<{name}> lacks {a}");
        }
        for a in node.attributes() {
            assert!(
                required.contains(&a.name()) || optional.contains(&a.name()),
                "<{name}> has no attribute {}",
                a.name()
            );
        }
        for c in node.children().filter(|c| c.is_element()) {
            assert!(
                children.contains(&c.tag_name().name()),
                "<{}> inside <{name}>",
                c.tag_name().name()
            );
        }
        for a in ["tests", "failures", "errors", "skipped"] {
            if let Some(v) = node.attribute(a) {
                v.parse::<u64>()
                    .unwrap_or_else(|_| panic!("{name} {a}={v}"));
            }
        }
        if let Some(t) = node.attribute("time") {
            assert!(
                t.parse::<f64>().is_ok_and(|t| t >= 0.0) && !t.contains('e'),
                "time={t}"
            );
        }
    }
    let (mut tests, mut failures) = (0, 0);
    for suite in root.children().filter(|n| n.has_tag_name("testsuite")) {
        let cases: Vec<_> = suite
            .children()
            .filter(|n| n.has_tag_name("testcase"))
            .collect();
        assert!(!cases.is_empty(), "a suite without a testcase");
        assert_eq!(
            suite.attribute("tests"),
            Some(cases.len().to_string().as_str())
        );
        let failed = cases
            .iter()
            .filter(|c| c.children().any(|x| x.has_tag_name("failure")))
            .count();
        assert_eq!(
            suite.attribute("failures"),
            Some(failed.to_string().as_str())
        );
        tests += cases.len();
        failures += failed;
        for c in &cases {
            for f in c.children().filter(|x| x.has_tag_name("failure")) {
                assert!(
                    f.attribute("message").is_some_and(|m| !m.is_empty()),
                    "a failure says what failed"
                );
            }
        }
    }
    assert_eq!(root.attribute("tests"), Some(tests.to_string().as_str()));
    assert_eq!(
        root.attribute("failures"),
        Some(failures.to_string().as_str())
    );
    doc
}

/// The names of a JUnit document's testcases, in order.
fn testcases(doc: &roxmltree::Document<'_>) -> Vec<String> {
    doc.descendants()
        .filter(|n| n.has_tag_name("testcase"))
        .map(|n| n.attribute("name").unwrap_or_default().to_string())
        .collect()
}

#[test]
fn junit_carries_the_failing_seed_its_reproduce_command_and_replay() {
    let tmp = TempDir::new("ci-junit");
    let junit = tmp.join("junit.xml");
    let failures = tmp.join("f");
    let (code, _, err) = cli(&[
        "sweep",
        "w1-w2",
        "retries",
        "swarm",
        "--seeds",
        "120",
        "--variant",
        BAD,
        "--junit",
        junit.to_str().unwrap(),
        "--failures-dir",
        failures.to_str().unwrap(),
    ]);
    assert_eq!(code, 1, "{err}");
    let xml = std::fs::read_to_string(&junit).unwrap();
    let doc = validate_junit(&xml);
    assert_eq!(testcases(&doc), ["w1-w2", "retries", "swarm"]);
    let case = |name: &str| {
        doc.descendants()
            .find(|n| n.has_tag_name("testcase") && n.attribute("name") == Some(name))
            .unwrap_or_else(|| panic!("no testcase {name}"))
    };
    let w1w2 = case("w1-w2");
    assert_eq!(
        w1w2.attribute("classname"),
        Some("leasesim.receiver-ignores-fence")
    );
    let failure = w1w2
        .children()
        .find(|n| n.has_tag_name("failure"))
        .expect("a failure");
    let message = failure.attribute("message").unwrap();
    let command = "cargo run --release -- run w1-w2 --seed 0 --variant receiver-ignores-fence";
    assert!(
        message.starts_with("seed 0: no-double-effect (I2)"),
        "{message}"
    );
    assert!(
        message.ends_with(&format!("reproduce: {command}")),
        "{message}"
    );
    assert_eq!(failure.attribute("type"), Some("no-double-effect"));
    assert!(failure.text().unwrap().contains("120 of 120 seeds failed"));
    // The command reproduces it.
    let args: Vec<&str> = command
        .strip_prefix("cargo run --release -- ")
        .unwrap()
        .split(' ')
        .collect();
    let (code, out, _) = cli(&args);
    assert_eq!(code, 1);
    assert!(out.contains("no-double-effect (I2)"));
    // system-out names the replay file, which exists and replays the failure.
    let out_text = w1w2
        .children()
        .find(|n| n.has_tag_name("system-out"))
        .and_then(|n| n.text())
        .expect("system-out");
    let replay = out_text
        .lines()
        .next()
        .unwrap()
        .strip_prefix("replay: ")
        .unwrap();
    assert!(
        replay.ends_with("w1-w2-receiver-ignores-fence-seed0.json"),
        "{out_text}"
    );
    assert!(out_text.contains(&format!("[[ATTACHMENT|{replay}]]")));
    let (code, out, _) = cli(&["replay", replay]);
    assert_eq!(code, 1, "{out}");
    // A scenario that held has no failure.
    assert!(case("retries")
        .children()
        .all(|n| !n.has_tag_name("failure")));
}

#[test]
fn a_time_budget_stops_within_a_seed_and_names_the_seeds_to_rerun() {
    let tmp = TempDir::new("ci-budget");
    let mut cmd = unsharded(&[
        "sweep",
        "--seeds",
        "random",
        "--for",
        "5s",
        "--variant",
        BAD,
        "--format",
        "json",
    ]);
    cmd.arg("--failures-dir")
        .arg(tmp.join("f"))
        .arg("--summary")
        .arg(tmp.join("summary.md"));
    let f = run_with_limit(cmd, Duration::from_secs(120));
    assert!(!f.timed_out);
    assert_eq!(f.code, Some(1), "the variant fails: {}", f.err);
    let v = json_of(&f.out);
    let base = v["seeds_random_base"].as_u64().unwrap();
    assert_eq!(v["seeds"]["start"], base);
    // The base is printed before any seed runs, so even a run that dies can be repeated.
    assert!(
        f.err.starts_with(&format!(
            "seeds drawn at random: base {base}; this run is --seeds {base}.."
        )),
        "{}",
        f.err
    );
    let budget = &v["budget"];
    assert_eq!(budget["spent"], true);
    assert_eq!(
        v["interrupted"], false,
        "a spent budget is not an interruption"
    );
    let (overrun, slowest) = (
        budget["overrun_s"].as_f64().unwrap(),
        budget["slowest_seed_s"].as_f64().unwrap(),
    );
    // The last seed started before the budget ran out and ended at most one seed's time after
    // it; the margin is the moment between a thread's look at the clock and its seed's start,
    // on a machine that may be busy with other work.
    assert!(
        overrun <= slowest + 0.1,
        "stopped {overrun}s past the budget; slowest seed {slowest}s"
    );
    let elapsed = v["elapsed_s"].as_f64().unwrap();
    assert!(
        (5.0..=5.0 + slowest + 0.5).contains(&elapsed),
        "{elapsed}s, slowest seed {slowest}s"
    );
    // What ran is a prefix of the seed-major order: every scenario from the base, all alike
    // give or take the last seed.
    let ends: Vec<u64> = v["scenarios"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            let ran = s["ran"].as_array().unwrap();
            assert_eq!(ran.len(), 1, "{s}");
            assert_eq!(ran[0]["start"], base);
            ran[0]["end"].as_u64().unwrap()
        })
        .collect();
    assert!(
        ends.windows(2).all(|w| w[0] == w[1] || w[0] == w[1] + 1),
        "{ends:?}"
    );
    assert!(ends[0] > base + 100, "ran {} rows", ends[0] - base);
    // The summary names them too, and the commands that repeat them.
    let md = std::fs::read_to_string(tmp.join("summary.md")).unwrap();
    assert!(
        md.contains(&format!("Seed base drawn at random: {base}.")),
        "{md}"
    );
    assert!(
        md.contains(&format!("Time budget 5 s spent; ran seeds {base}..")),
        "{md}"
    );
    // The repeat commands run exactly those seeds again, with the same results.
    let repeat = v["repeat"].as_array().unwrap();
    assert!(!repeat.is_empty() && repeat.len() <= 2, "{repeat:?}");
    let mut again: BTreeMap<String, Value> = BTreeMap::new();
    for (i, c) in repeat.iter().enumerate() {
        let c = c
            .as_str()
            .unwrap()
            .strip_prefix("cargo run --release -- ")
            .unwrap();
        let dir = tmp.join(&format!("r{i}")).display().to_string();
        let mut args: Vec<&str> = c.split(' ').collect();
        args.extend(["--shard", "1/1", "--format", "json", "--failures-dir", &dir]);
        let (_, out, err) = cli(&args);
        let r = json_of(&out);
        assert!(
            err.lines()
                .all(|l| l.starts_with("shard 1/1 (from --shard)")),
            "{err}"
        );
        for s in r["scenarios"].as_array().unwrap() {
            let name = s["name"].as_str().unwrap().to_string();
            let entry = again.entry(name).or_insert_with(
                || serde_json::json!({"runs": 0, "failing": 0, "failures": [], "hazards": {}}),
            );
            entry["runs"] = (entry["runs"].as_u64().unwrap() + s["runs"].as_u64().unwrap()).into();
            entry["failing"] =
                (entry["failing"].as_u64().unwrap() + s["failing"].as_u64().unwrap()).into();
            for fl in s["failures"].as_array().unwrap() {
                entry["failures"]
                    .as_array_mut()
                    .unwrap()
                    .push(serde_json::json!([fl["seed"], fl["first"]]));
            }
            for (h, k) in s["hazards"].as_object().unwrap() {
                let was = entry["hazards"][h].as_u64().unwrap_or(0);
                entry["hazards"][h] = (was + k.as_u64().unwrap()).into();
            }
        }
    }
    for s in v["scenarios"].as_array().unwrap() {
        let a = &again[s["name"].as_str().unwrap()];
        assert_eq!(a["runs"], s["runs"], "{}", s["name"]);
        assert_eq!(a["failing"], s["failing"], "{}", s["name"]);
        assert_eq!(a["hazards"], s["hazards"], "{}", s["name"]);
        let mut seeds: Vec<(u64, String)> = a["failures"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| (x[0].as_u64().unwrap(), x[1].as_str().unwrap().to_string()))
            .collect();
        seeds.sort_unstable();
        seeds.truncate(1000);
        let listed: Vec<(u64, String)> = s["failures"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| {
                (
                    x["seed"].as_u64().unwrap(),
                    x["first"].as_str().unwrap().to_string(),
                )
            })
            .collect();
        assert_eq!(seeds, listed, "{}", s["name"]);
    }
}

/// A sweep of some scenarios only: the commands that repeat what ran name those scenarios, and
/// run exactly their seeds again, not every scenario's.
#[test]
fn the_repeat_commands_of_a_sweep_of_some_scenarios_name_them() {
    let tmp = TempDir::new("ci-budget-some");
    let mut cmd = unsharded(&[
        "sweep", "w1-w2", "retries", "--seeds", "random", "--for", "150ms", "--format", "json",
    ]);
    cmd.arg("--failures-dir").arg(tmp.join("f"));
    let f = run_with_limit(cmd, Duration::from_secs(120));
    assert!(!f.timed_out);
    assert_eq!(f.code, Some(0), "{}", f.err);
    let v = json_of(&f.out);
    let ran: BTreeMap<String, u64> = v["scenarios"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["name"].as_str().unwrap().into(),
                s["runs"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(ran.len(), 2, "{ran:?}");
    let repeat = v["repeat"].as_array().unwrap();
    assert!(!repeat.is_empty() && repeat.len() <= 2, "{repeat:?}");
    let mut again: BTreeMap<String, u64> = BTreeMap::new();
    for c in repeat {
        let c = c
            .as_str()
            .unwrap()
            .strip_prefix("cargo run --release -- ")
            .unwrap();
        assert!(
            c.starts_with("sweep w1-w2 ") || c.starts_with("sweep retries "),
            "{c}"
        );
        let mut args: Vec<&str> = c.split(' ').collect();
        let dir = tmp.join("r").display().to_string();
        args.extend(["--format", "json", "--failures-dir", &dir]);
        let (code, out, err) = cli(&args);
        assert_eq!(code, 0, "{c}: {err}");
        for s in json_of(&out)["scenarios"].as_array().unwrap() {
            *again.entry(s["name"].as_str().unwrap().into()).or_default() +=
                s["runs"].as_u64().unwrap();
        }
    }
    assert_eq!(again, ran);
}

#[test]
fn the_shard_comes_from_ci_variables_and_the_output_says_which() {
    let tmp = TempDir::new("ci-env");
    let run = |vars: &[(&str, &str)]| {
        let mut cmd = unsharded(&["sweep", "w1-w2", "--seeds", "100", "--failures-dir"]);
        cmd.arg(tmp.join("f"));
        for (k, v) in vars {
            cmd.env(k, v);
        }
        run_with_limit(cmd, Duration::from_secs(60))
    };
    let f = run(&[("CI_NODE_INDEX", "2"), ("CI_NODE_TOTAL", "4")]);
    assert_eq!(f.code, Some(0), "{}", f.err);
    assert!(f.out.starts_with("shard 2/4 (from CI_NODE_INDEX=2 CI_NODE_TOTAL=4): 25 of the 100 runs, seeds 25..50 of w1-w2"), "{}", f.out);
    let f = run(&[("JOB_COMPLETION_INDEX", "3"), ("LEASESIM_SHARD_TOTAL", "4")]);
    assert!(
        f.out
            .contains("shard 4/4 (from JOB_COMPLETION_INDEX=3 LEASESIM_SHARD_TOTAL=4)"),
        "{}",
        f.out
    );
    let f = run(&[("CI_NODE_TOTAL", "1")]);
    assert!(f.out.starts_with("w1-w2 "), "not a shard: {}", f.out);
    let f = run(&[("JOB_COMPLETION_INDEX", "3")]);
    assert_eq!(f.code, Some(2));
    assert!(f.err.contains("LEASESIM_SHARD_TOTAL"), "{}", f.err);
    let flag = {
        let mut cmd = Command::new(leasesim_bin());
        cmd.args([
            "sweep",
            "w1-w2",
            "--seeds",
            "100",
            "--shard",
            "1/2",
            "--failures-dir",
        ])
        .arg(tmp.join("f"))
        .env("CI_NODE_INDEX", "2")
        .env("CI_NODE_TOTAL", "4");
        run_with_limit(cmd, Duration::from_secs(60))
    };
    assert_eq!(flag.code, Some(0), "{}", flag.err);
    assert!(
        flag.out
            .starts_with("shard 1/2 (from --shard): 50 of the 100 runs, seeds 0..50 of w1-w2"),
        "the flag wins: {}",
        flag.out
    );
    // The matrix takes its shard the same way.
    let mut cmd = Command::new(leasesim_bin());
    cmd.args(["matrix", "--seeds", "2", "--json"])
        .arg(tmp.join("m.json"))
        .env_remove("LEASESIM_SHARD")
        .env_remove("JOB_COMPLETION_INDEX")
        .env("CI_NODE_INDEX", "3")
        .env("CI_NODE_TOTAL", "3");
    let m = run_with_limit(cmd, Duration::from_secs(60));
    assert!(
        m.out
            .starts_with("shard 3/3 (from CI_NODE_INDEX=3 CI_NODE_TOTAL=3): cells 200..300 of 300"),
        "{}",
        m.out
    );
    let doc = read_json(&tmp.join("m.json"));
    assert_eq!(doc["cells"].as_array().unwrap().len(), 100);
    assert_eq!(doc["shard"]["source"], "CI_NODE_INDEX=3 CI_NODE_TOTAL=3");
}

/// The shell lines a CI file runs: GitHub's `run` steps, GitLab's `script`, `before_script`
/// and `after_script` lists, each line on its own (a folded `>-` block is one line).
fn shell_lines(yaml: &yaml_rust2::Yaml, out: &mut Vec<String>) {
    use yaml_rust2::Yaml;
    match yaml {
        Yaml::Hash(map) => {
            for (k, v) in map {
                let key = k.as_str().unwrap_or_default();
                if ["run", "script", "before_script", "after_script"].contains(&key) {
                    let texts: Vec<&str> = match v {
                        Yaml::String(s) => vec![s.as_str()],
                        Yaml::Array(items) => items.iter().filter_map(|y| y.as_str()).collect(),
                        other => panic!("{key}: {other:?} is not a command"),
                    };
                    for t in texts {
                        out.extend(t.lines().map(|l| l.trim().to_string()));
                    }
                } else {
                    shell_lines(v, out);
                }
            }
        }
        Yaml::Array(items) => items.iter().for_each(|y| shell_lines(y, out)),
        _ => {}
    }
}

/// A shell line as words, its variables (`${{ matrix.shard }}`, `$CI_NODE_INDEX`) replaced by
/// `1` and its quotes dropped.
fn words(line: &str) -> Vec<String> {
    let mut text = line.to_string();
    while let Some(a) = text.find("${{") {
        let b = text[a..].find("}}").expect("a closed expression") + a;
        text.replace_range(a..b + 2, "1");
    }
    text.split_whitespace()
        .map(|w| {
            let mut w = w.replace(['"', '\''], "");
            while let Some(a) = w.find('$') {
                let end = w[a + 1..]
                    .find(|c: char| {
                        !(c.is_ascii_alphanumeric() || c == '_' || c == '{' || c == '}')
                    })
                    .map_or(w.len(), |e| a + 1 + e);
                w.replace_range(a..end, "1");
            }
            w
        })
        .collect()
}

fn load(name: &str) -> yaml_rust2::Yaml {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("ci-examples")
        .join(name);
    let text = std::fs::read_to_string(&path).unwrap();
    let mut docs =
        yaml_rust2::YamlLoader::load_from_str(&text).unwrap_or_else(|e| panic!("{name}: {e}"));
    assert_eq!(docs.len(), 1, "{name}");
    docs.remove(0)
}

/// The packages of this workspace that have a binary named `leasesim`.
fn packages_with_the_binary() -> Vec<String> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let manifest = std::fs::read_to_string(root.join("scenarios/cli/Cargo.toml")).unwrap();
    let name = manifest
        .lines()
        .find_map(|l| l.strip_prefix("name = \""))
        .and_then(|l| l.strip_suffix('"'))
        .unwrap()
        .to_string();
    assert!(
        manifest.contains("[[bin]]\nname = \"leasesim\""),
        "{name} builds the leasesim binary"
    );
    vec![name]
}

#[test]
fn the_ci_examples_parse_and_run_real_commands() {
    let builds = packages_with_the_binary();
    for name in ["github-nightly.yml", "gitlab-ci.yml"] {
        let doc = load(name);
        let mut lines = Vec::new();
        shell_lines(&doc, &mut lines);
        let commands: Vec<Vec<String>> = lines
            .iter()
            .filter(|l| l.starts_with("leasesim "))
            .map(|l| words(l))
            .collect();
        let count = |cmd: &str| commands.iter().filter(|c| c[1] == cmd).count();
        assert_eq!(
            (count("sweep"), count("merge")),
            (1, 1),
            "{name}: one sharded sweep, one merge: {commands:?}"
        );
        for c in &commands {
            leasesim_cli::check_args(c.clone()).unwrap_or_else(|e| panic!("{name}: {c:?}: {e}"));
            let flags: Vec<&str> = c
                .iter()
                .map(String::as_str)
                .filter(|w| w.starts_with("--"))
                .collect();
            if c[1] == "sweep" {
                for f in ["--for", "--json", "--junit", "--failures-dir"] {
                    assert!(flags.contains(&f), "{name}: the sweep writes {f}");
                }
            }
            if c[1] == "merge" {
                assert!(flags.contains(&"--junit"), "{name}: the merge's JUnit");
                assert!(c.contains(&"shard-*.json".to_string()), "{name}: {c:?}");
            }
        }
        // The binary they run is the one they build.
        let built: Vec<Vec<String>> = lines
            .iter()
            .filter(|l| l.starts_with("cargo build"))
            .map(|l| words(l))
            .collect();
        assert!(!built.is_empty(), "{name} builds leasesim");
        for b in &built {
            let p = b.iter().position(|w| w == "-p").expect("a package");
            assert!(builds.contains(&b[p + 1]), "{name}: {b:?}");
            assert!(b.contains(&"--release".to_string()));
        }
        assert!(
            lines.iter().any(|l| l.contains("target/release")),
            "{name}: the release binary on the PATH"
        );
    }
    // GitHub: a four-way matrix, the merge after it even when a shard failed, replays kept.
    let gh = load("github-nightly.yml");
    let jobs = &gh["jobs"];
    assert_eq!(
        jobs["sweep"]["strategy"]["matrix"]["shard"]
            .as_vec()
            .unwrap()
            .len(),
        4
    );
    assert_eq!(jobs["merge"]["needs"].as_str(), Some("sweep"));
    assert_eq!(jobs["merge"]["if"].as_str(), Some("always()"));
    let uploads: Vec<&yaml_rust2::Yaml> = jobs["sweep"]["steps"]
        .as_vec()
        .unwrap()
        .iter()
        .filter(|s| {
            s["uses"]
                .as_str()
                .is_some_and(|u| u.starts_with("actions/upload-artifact"))
        })
        .collect();
    assert!(uploads
        .iter()
        .any(|s| s["with"]["path"].as_str() == Some("leasesim-failures/")
            && s["if"].as_str() == Some("failure()")));
    // GitLab: `parallel` gives CI_NODE_INDEX/CI_NODE_TOTAL, the merge needs the shards and
    // publishes the merged JUnit, the replays are artifacts.
    let gl = load("gitlab-ci.yml");
    assert_eq!(gl["leasesim-sweep"]["parallel"].as_i64(), Some(4));
    let paths = gl["leasesim-sweep"]["artifacts"]["paths"].as_vec().unwrap();
    assert!(paths
        .iter()
        .any(|p| p.as_str() == Some("leasesim-failures/")));
    assert_eq!(
        gl["leasesim-sweep"]["artifacts"]["when"].as_str(),
        Some("always")
    );
    assert_eq!(
        gl["leasesim-merge"]["needs"][0].as_str(),
        Some("leasesim-sweep")
    );
    assert_eq!(
        gl["leasesim-merge"]["artifacts"]["reports"]["junit"].as_str(),
        Some("junit.xml")
    );
    // The check can fail: a flag that does not exist, a command that does not.
    for bad in [&["sweep", "--no-such-flag"][..], &["sweeps"], &["merge"]] {
        let mut c = vec!["leasesim".to_string()];
        c.extend(bad.iter().map(|s| s.to_string()));
        assert!(leasesim_cli::check_args(c).is_err(), "{bad:?}");
    }
}
