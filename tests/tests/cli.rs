//! The command-line contract: exit codes, one-line errors, identical output for identical input.

use leasesim_tests::cli;

#[test]
fn run_of_the_reference_exits_0_and_is_byte_identical_twice() {
    let (code, out, err) = cli(&["run", "w1-w2", "--seed", "1"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("verdict: HELD"));
    assert!(
        out.contains("result_rejected"),
        "W1's rejected result is in the timeline"
    );
    assert!(out.contains("effect_fenced"), "W1's stale effect is fenced");
    let (_, again, _) = cli(&["run", "w1-w2", "--seed", "1"]);
    assert_eq!(out, again);
}

#[test]
fn variants_exit_1_and_name_the_invariant() {
    let (code, out, _) = cli(&[
        "run",
        "w1-w2",
        "--seed",
        "1",
        "--variant",
        "unconditional-commit",
    ]);
    assert_eq!(code, 1);
    assert!(out.contains("verdict: VIOLATED"));
    assert!(out.contains("no-stale-commit (I1)"));
    assert!(out.contains(
        "reproduce: cargo run --release -- run w1-w2 --seed 1 --variant unconditional-commit"
    ));
    let (code, out, _) = cli(&[
        "run",
        "w1-w2",
        "--seed",
        "1",
        "--variant",
        "receiver-ignores-fence",
    ]);
    assert_eq!(code, 1);
    assert!(out.contains("no-double-effect (I2)"));
}

#[test]
fn bad_input_exits_2_with_one_line() {
    for args in [
        &["run", "no-such-scenario", "--seed", "1"][..],
        &["run", "w1-w2", "--seed", "abc"],
        &["run", "w1-w2", "--seed", "-1"],
        &["run", "w1-w2"],
        &["run", "w1-w2", "--seed", "1", "--variant", "nope"],
        &["sweep", "--seeds", "9..3"],
        &["sweep", "--seeds", "x"],
        &["sweep", "nope"],
        &["sweep", "--jobs", "0", "--seeds", "1"],
        &["frobnicate"],
        &[],
    ] {
        let (code, out, err) = cli(args);
        assert_eq!(code, 2, "{args:?}");
        assert!(out.is_empty(), "{args:?} printed {out}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.starts_with("error: "), "{args:?}: {err}");
    }
}

#[test]
fn an_unwritable_trace_path_is_bad_input() {
    let (code, _, err) = cli(&[
        "run",
        "w1-w2",
        "--seed",
        "1",
        "--trace",
        "/nonexistent-dir/t.json",
    ]);
    assert_eq!(code, 2);
    assert!(
        err.starts_with("error: --trace /nonexistent-dir/t.json: cannot write there"),
        "{err}"
    );
}

#[test]
fn run_json_and_trace_file_agree() {
    let dir = leasesim_tests::TempDir::new("run-json");
    let path = dir.join("t.json");
    let (code, out, _) = cli(&[
        "run",
        "w1-w2",
        "--seed",
        "7",
        "--format",
        "json",
        "--trace",
        path.to_str().unwrap(),
    ]);
    assert_eq!(code, 0);
    let summary: serde_json::Value = serde_json::from_str(&out).unwrap();
    let trace: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert_eq!(summary["verdict"]["verdict"], "held");
    assert_eq!(summary["trace_hash"], trace["trace_hash"]);
    assert_eq!(trace["seed"], 7);
    assert!(trace["events"].as_array().unwrap().len() > 20);
}

#[test]
fn sweep_json_reports_throughput_and_failures_with_reproduce_commands() {
    let (code, out, _) = cli(&["sweep", "w1-w2", "--seeds", "100..164", "--format", "json"]);
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["runs"], 64);
    assert_eq!(v["failing"], 0);
    assert!(v["seeds_per_s"].as_f64().unwrap() > 0.0);
    assert!(v["events_per_s"].as_f64().unwrap() > 0.0);

    let tmp = leasesim_tests::TempDir::new("sweep-json");
    let dir = tmp.join("f");
    let (code, out, _) = cli(&[
        "sweep",
        "w1-w2",
        "--seeds",
        "3",
        "--variant",
        "receiver-ignores-fence",
        "--format",
        "json",
        "--failures-dir",
        dir.to_str().unwrap(),
    ]);
    assert_eq!(code, 1);
    // Nothing found is lost: every failing seed is listed and the first one's trace saved.
    let list = std::fs::read_to_string(dir.join("sweep-receiver-ignores-fence.txt")).unwrap();
    assert_eq!(list.matches("cargo run --release -- run w1-w2").count(), 3);
    assert!(dir.join("w1-w2-receiver-ignores-fence-seed0.json").exists());
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let failures = v["scenarios"][0]["failures"].as_array().unwrap();
    assert_eq!(failures.len(), 3);
    assert_eq!(
        failures[0]["reproduce"],
        "cargo run --release -- run w1-w2 --seed 0 --variant receiver-ignores-fence"
    );
    assert_eq!(failures[0]["invariants"][0], "no-double-effect");
}

#[test]
fn list_names_every_scenario_variant_and_invariant() {
    let (code, out, _) = cli(&["list"]);
    assert_eq!(code, 0);
    for name in [
        "w1-w2",
        "reference",
        "unconditional-commit",
        "receiver-ignores-fence",
        "no-stale-commit",
        "I5",
    ] {
        assert!(out.contains(name), "{name} missing from list");
    }
}

#[test]
fn a_sweep_that_ran_nothing_does_not_pass() {
    // `sweep --for 1ns` ran 0 seeds and said `0 failing`, exit 0: a CI job with too small a
    // budget, or a shard without a run, passed without testing anything.
    let tmp = leasesim_tests::TempDir::new("sweep-empty");
    let dir = tmp.join("failures");
    let dir = dir.to_str().unwrap();
    for (args, why) in [
        (
            vec!["sweep", "w1-w2", "--for", "1ns"],
            "the time budget ran out before any seed ran",
        ),
        (
            vec!["sweep", "w1-w2", "--seeds", "3", "--shard", "4/4"],
            "shard 4/4 holds no run of this sweep",
        ),
    ] {
        let mut text = args.clone();
        text.extend(["--failures-dir", dir]);
        let (code, out, err) = cli(&text);
        assert_eq!(code, 2, "{args:?}: {out}{err}");
        assert!(
            out.lines()
                .any(|l| l == format!("sweep: NOTHING RAN, no verdict: {why}")
                    || l.starts_with(&format!("sweep: NOTHING RAN, no verdict: {why};"))),
            "{args:?}: {out}"
        );
        let mut json = text.clone();
        json.extend(["--format", "json"]);
        let (code, out, err) = cli(&json);
        assert_eq!(code, 2, "{args:?}: {out}{err}");
        let v: serde_json::Value = serde_json::from_str(&out).expect("JSON");
        assert_eq!(v["verdict"], "empty", "{v}");
        assert_eq!(v["runs"], 0);
        assert!(v["empty"].as_str().unwrap().starts_with(why), "{v}");
    }
    // A sweep that ran seeds still passes, and says nothing of the kind.
    let (code, out, err) = cli(&["sweep", "w1-w2", "--seeds", "3", "--failures-dir", dir]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(!out.contains("NOTHING RAN"), "{out}");
}
