//! Hostile and careless input to every command: each case is a defect a user met (issue 12),
//! and each test failed before its fix.

use leasesim_tests::{cli, TempDir};

/// Exit 2, nothing on standard output, one line on standard error that contains `needle`.
fn refused(args: &[&str], needle: &str) {
    let (code, out, err) = cli(args);
    assert_eq!(code, 2, "{args:?}: {out}{err}");
    assert!(out.is_empty(), "{args:?} printed {out}");
    assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
    assert!(err.starts_with("error: "), "{args:?}: {err}");
    assert!(err.contains(needle), "{args:?}: {err}");
}

#[test]
fn a_missing_required_argument_is_named() {
    refused(&["run", "w1-w2"], "--seed");
    refused(&["advise", "--lease", "90s"], "--heartbeat");
}

#[test]
fn negative_numbers_are_told_as_such() {
    refused(
        &[
            "advise",
            "--lease",
            "-90s",
            "--heartbeat",
            "30s",
            "--jitter",
            "20s",
            "--misses",
            "1",
        ],
        "negative",
    );
    refused(&["run", "w1-w2", "--seed", "-1"], "negative");
    refused(&["sweep", "--seeds", "-5"], "negative");
    refused(&["sweep", "--jobs", "-2", "--seeds", "1"], "negative");
    refused(&["matrix", "--seeds", "-1"], "negative");
}

#[test]
fn no_command_names_every_command() {
    let (code, _, err) = cli(&[]);
    assert_eq!(code, 2);
    for c in [
        "list", "run", "sweep", "replay", "shrink", "matrix", "advise", "report", "agree", "bench",
        "examples",
    ] {
        assert!(err.contains(c), "{c} missing: {err}");
    }
    assert!(
        !err.contains("child"),
        "a hidden option is not a command: {err}"
    );
}

#[test]
fn threads_are_bounded() {
    for cmd in [
        vec!["sweep", "w1-w2", "--seeds", "1"],
        vec!["matrix", "--seeds", "1"],
        vec!["bench", "--seeds", "1", "--shell-seeds", "1"],
        vec!["examples", "--out", "/nonexistent-leasesim"],
    ] {
        for jobs in ["100000", "18446744073709551615"] {
            let mut args = cmd.clone();
            args.extend(["--jobs", jobs]);
            refused(&args, "--jobs");
        }
    }
}

#[test]
fn degenerate_inputs_are_refused() {
    refused(&["bench", "--seeds", "0"], "at least 1");
    refused(&["bench", "--shell-seeds", "0"], "at least 1");
    refused(&["bench", "--variant", "unsafe-timing"], "P6");
    refused(&["sweep", "w1-w2", "w1-w2", "--seeds", "1"], "named twice");
    refused(&["agree", "w1-w2", "w1-w2", "--seeds", "1"], "named twice");
    refused(
        &[
            "agree",
            "w1-w2",
            "--seeds",
            "1",
            "--variants",
            "reference,reference",
        ],
        "named twice",
    );
    refused(
        &[
            "agree",
            "w1-w2",
            "--seeds",
            "1",
            "--variants",
            "unsafe-timing",
        ],
        "P6",
    );
    // In the normal build the shell runs on real tokio, which cannot pause a process: a scenario
    // made of pauses leaves nothing to compare.
    #[cfg(not(madsim))]
    refused(
        &["agree", "gc-pause-after-check", "--seeds", "2"],
        "nothing to compare",
    );
}

#[test]
fn output_locations_are_checked_before_any_work() {
    let dir = TempDir::new("outputs");
    let t = dir.join("t.json");
    let t = t.to_str().unwrap();
    refused(
        &[
            "run",
            "w1-w2",
            "--seed",
            "1",
            "--trace",
            t,
            "--html",
            "/proc/leasesim/x.html",
        ],
        "--html",
    );
    assert!(
        !dir.join("t.json").exists(),
        "nothing is written when an output is refused"
    );
    refused(
        &[
            "run",
            "w1-w2",
            "--seed",
            "1",
            "--variant",
            "unconditional-commit",
            "--save",
            "/proc/x.json",
        ],
        "--save",
    );
    refused(
        &["run", "w1-w2", "--seed", "1", "--trace", t, "--save", t],
        "same file",
    );
    refused(
        &["run", "w1-w2", "--seed", "1", "--trace", "/tmp"],
        "directory",
    );
    // A replay's outputs may not overwrite the replay itself.
    let saved = dir.join("r.json");
    let saved = saved.to_str().unwrap();
    assert_eq!(cli(&["run", "w1-w2", "--seed", "1", "--save", saved]).0, 0);
    refused(&["replay", saved, "--trace", saved], "same file");
    refused(&["shrink", saved, "--out", saved], "same file");
    refused(&["report", saved, "--html", saved], "same file");
    refused(
        &[
            "advise",
            "--lease",
            "90s",
            "--heartbeat",
            "30s",
            "--jitter",
            "20s",
            "--misses",
            "1",
            "--plot",
            "/proc/x.svg",
        ],
        "--plot",
    );
    refused(
        &["matrix", "--seeds", "1", "--out", "/proc/leasesim"],
        "--out",
    );
}

#[test]
fn an_unusable_failures_dir_is_refused_before_the_sweep() {
    let dir = TempDir::new("failures-dir");
    let file = dir.join("a-file");
    std::fs::write(&file, "x").unwrap();
    refused(
        &[
            "sweep",
            "w1-w2",
            "--seeds",
            "20000",
            "--variant",
            "unconditional-commit",
            "--failures-dir",
            file.to_str().unwrap(),
        ],
        "--failures-dir",
    );
    refused(
        &[
            "sweep",
            "w1-w2",
            "--seeds",
            "20000",
            "--failures-dir",
            "/proc/leasesim/f",
        ],
        "--failures-dir",
    );
    // A sweep that finds nothing leaves no folder behind.
    let unused = dir.join("unused");
    let (code, _, _) = cli(&[
        "sweep",
        "w1-w2",
        "--seeds",
        "3",
        "--failures-dir",
        unused.to_str().unwrap(),
    ]);
    assert_eq!(code, 0);
    assert!(!unused.exists());
}

#[test]
fn a_sweep_saves_the_replays_it_says_and_deletes_nothing_of_others() {
    let dir = TempDir::new("replays");
    let failures = dir.join("f");
    std::fs::create_dir_all(&failures).unwrap();
    let other = failures.join("an-earlier-sweep.json");
    std::fs::write(&other, "{}").unwrap();
    // V2 fails on many scenarios: more printed failures than replays a sweep writes.
    let (code, out, _) = cli(&[
        "sweep",
        "--seeds",
        "40",
        "--variant",
        "unconditional-commit",
        "--failures-dir",
        failures.to_str().unwrap(),
    ]);
    assert_eq!(code, 1);
    let said: usize = out
        .lines()
        .find_map(|l| {
            l.split("with ")
                .nth(1)?
                .split(" replay file(s)")
                .next()?
                .parse()
                .ok()
        })
        .expect("the summary counts the replays");
    let replays: Vec<String> = std::fs::read_dir(&failures)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| {
            n.ends_with(".json") && !n.ends_with(".shrunk.json") && n != "an-earlier-sweep.json"
        })
        .collect();
    assert_eq!(replays.len(), said, "{out}");
    assert!(said <= 100);
    assert!(other.exists(), "another sweep's file is left alone");
    // The first printed failure has its replay.
    let first = out
        .lines()
        .find_map(|l| l.strip_prefix("    reproduce: cargo run --release -- run "))
        .unwrap();
    let mut words = first.split(' ');
    let scenario = words.next().unwrap();
    let seed = words.nth(1).unwrap();
    assert!(replays.contains(&format!("{scenario}-unconditional-commit-seed{seed}.json")));
}

fn saved_replay(dir: &TempDir) -> (std::path::PathBuf, serde_json::Value) {
    let path = dir.join("r.json");
    let (code, _, _) = cli(&[
        "run",
        "w1-w2",
        "--seed",
        "1",
        "--save",
        path.to_str().unwrap(),
    ]);
    assert_eq!(code, 0);
    let doc = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    (path, doc)
}

#[test]
fn self_contradicting_replay_files_are_refused_with_the_field_named() {
    let dir = TempDir::new("contradictions");
    let (path, doc) = saved_replay(&dir);
    type Edit = Box<dyn Fn(&mut serde_json::Value)>;
    let edits: Vec<(&str, Edit)> = vec![
        (
            "\"variant\"",
            Box::new(|d| d["variant"] = "unconditional-commit".into()),
        ),
        (
            "scenario 'nope', which this program does not have",
            Box::new(|d| {
                d["scenario"] = "nope".into();
                d["setup"]["scenario"] = "nope".into();
            }),
        ),
        (
            "\"scenario\"",
            Box::new(|d| d["scenario"] = "gc-pause-after-check".into()),
        ),
        (
            "trace_hash",
            Box::new(|d| d["expect"]["trace_hash"] = "zzzz".into()),
        ),
        (
            "not an invariant",
            Box::new(|d| {
                d["expect"]["invariants"] = serde_json::json!(["no-such-invariant"]);
                d["expect"]["verdict"] = serde_json::json!({"verdict": "violated"});
            }),
        ),
        (
            "heartbeats_per_window",
            Box::new(|d| d["setup"]["timing"]["heartbeats_per_window"] = 0.into()),
        ),
        (
            "op_names",
            Box::new(|d| {
                d["setup"]["op_names"] = serde_json::json!(["none"]);
            }),
        ),
        (
            "no invariant is named",
            Box::new(|d| d["expect"]["verdict"] = serde_json::json!({"verdict": "violated"})),
        ),
    ];
    for (needle, edit) in edits {
        let mut d = doc.clone();
        edit(&mut d);
        std::fs::write(&path, serde_json::to_vec_pretty(&d).unwrap()).unwrap();
        refused(&["replay", path.to_str().unwrap()], needle);
        refused(
            &[
                "report",
                path.to_str().unwrap(),
                "--html",
                dir.join("x.html").to_str().unwrap(),
            ],
            needle,
        );
    }
    // A key given twice: serde_json would keep the last one silently.
    let text = serde_json::to_string_pretty(&doc).unwrap();
    let doubled = text.replacen("\"seed\": 1,", "\"seed\": 1,\n  \"seed\": 2,", 1);
    assert_ne!(doubled, text);
    std::fs::write(&path, doubled).unwrap();
    refused(
        &["replay", path.to_str().unwrap()],
        "\"seed\" appears twice",
    );
}

#[test]
fn a_replay_without_expectations_runs_and_claims_no_difference() {
    let dir = TempDir::new("no-expect");
    let (path, mut doc) = saved_replay(&dir);
    doc.as_object_mut().unwrap().remove("expect");
    std::fs::write(&path, serde_json::to_vec_pretty(&doc).unwrap()).unwrap();
    let (code, out, _) = cli(&["replay", path.to_str().unwrap()]);
    assert_eq!(code, 0);
    assert!(out.contains("records no expected run"), "{out}");
    assert!(!out.contains("DIFFERS"));
    // An edited plan differs, and the message blames the file as much as the code.
    let (_, mut doc) = saved_replay(&dir);
    doc["setup"]["faults"] = serde_json::json!([]);
    std::fs::write(&path, serde_json::to_vec_pretty(&doc).unwrap()).unwrap();
    let (_, out, _) = cli(&["replay", path.to_str().unwrap()]);
    assert!(out.contains("DIFFERS"), "{out}");
    assert!(out.contains("the code or the file changed"), "{out}");
}

#[test]
fn report_makes_the_checks_replay_makes() {
    let dir = TempDir::new("report-checks");
    let trace = dir.join("t.json");
    let html = dir.join("r.html");
    let (code, _, _) = cli(&[
        "run",
        "w1-w2",
        "--seed",
        "1",
        "--trace",
        trace.to_str().unwrap(),
    ]);
    assert_eq!(code, 0);
    let mut doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&trace).unwrap()).unwrap();
    // A pause of u64::MAX ns would wrap to nothing; it is refused as out of range.
    doc["setup"]["faults"] = serde_json::json!([{
        "fault": "pause", "node": 1, "frozen": false,
        "start": {"on": "at", "t_ns": 10}, "duration_ns": u64::MAX, "hold_anchor": false
    }]);
    std::fs::write(&trace, serde_json::to_vec(&doc).unwrap()).unwrap();
    refused(
        &[
            "report",
            trace.to_str().unwrap(),
            "--html",
            html.to_str().unwrap(),
        ],
        "out of range",
    );
    // A file past the size bound is refused by bytes read, whatever its kind.
    let big = dir.join("big.json");
    let mut bytes = b"{\"format\": \"leasesim-trace\", \"pad\": \"".to_vec();
    bytes.resize(65 << 20, b'x');
    std::fs::write(&big, bytes).unwrap();
    refused(
        &[
            "report",
            big.to_str().unwrap(),
            "--html",
            html.to_str().unwrap(),
        ],
        "larger than",
    );
    assert!(!html.exists());
}

#[test]
fn every_number_and_duration_option_says_a_negative_value_is_negative() {
    // `audit --clock-uncertainty -1s` said "unexpected argument '-1s'": the value was taken for
    // an option before its parser could say what is wrong with it.
    let options = leasesim_cli::number_options();
    for (cmd, flag) in [
        ("audit", "--clock-uncertainty"),
        ("sweep", "--for"),
        ("sql explore", "--workers"),
        ("advise", "--stop-margin"),
    ] {
        assert!(
            options.iter().any(|(c, f)| c.join(" ") == cmd && f == flag),
            "{cmd} {flag} among {options:?}"
        );
    }
    for (cmd, flag) in &options {
        let mut args: Vec<String> = std::iter::once("leasesim".to_string())
            .chain(cmd.iter().cloned())
            .collect();
        args.extend([flag.clone(), "-1".into()]);
        let err = leasesim_cli::check_args(args.clone()).expect_err("a negative value");
        assert!(err.contains("negative"), "{args:?}: {err}");
        assert!(!err.contains("unexpected argument"), "{args:?}: {err}");
    }
    refused(
        &["audit", "journal.jsonl", "--clock-uncertainty", "-1s"],
        "negative",
    );
}
