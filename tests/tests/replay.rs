//! Replay files: a replay re-runs exactly (the same timeline, byte for byte, and the same exit),
//! shrinking leaves a handful of faults and the same invariant, the determinism self-check
//! passes, and a malformed, truncated, future or mutated file is refused without a panic.

use leasesim::replay::Replay;
use leasesim::run::run_setup;
use leasesim::{scenarios, shrink};
use leasesim_protocol::Variant;
use leasesim_tests::cli;
use proptest::prelude::*;
use std::path::PathBuf;

fn tmp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("leasesim-replay-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

fn valid_bytes() -> Vec<u8> {
    let setup = scenarios::find("w1-w2")
        .unwrap()
        .build(1, Variant::UnconditionalCommit);
    let r = run_setup(&setup, 1);
    Replay::record(&setup, 1, false, &r)
        .encode()
        .unwrap()
        .into_bytes()
}

#[test]
fn replay_prints_the_same_timeline_and_exits_the_same() {
    for (scenario, seed, variant) in [
        ("w1-w2", 1, "unconditional-commit"),
        ("gc-pause-after-check", 3, "reference"),
        ("swarm", 5, "reference"),
    ] {
        let path = tmp(&format!("{scenario}-{seed}.json"));
        let p = path.to_str().unwrap();
        let (code, run_out, _) = cli(&[
            "run",
            scenario,
            "--seed",
            &seed.to_string(),
            "--variant",
            variant,
            "--save",
            p,
        ]);
        let (again, replay_out, err) = cli(&["replay", p]);
        assert_eq!(code, again, "{err}");
        // Everything after the header line is the same, byte for byte; replay adds one line.
        let body = |s: &str| {
            s.lines()
                .skip(1)
                .map(|l| format!("{l}\n"))
                .collect::<String>()
        };
        let replayed = body(&replay_out);
        let (replayed, last) = replayed.trim_end().rsplit_once('\n').unwrap();
        assert_eq!(
            format!("{}\n", replayed),
            body(&run_out),
            "{scenario} seed {seed}"
        );
        assert!(
            last.starts_with("replay: identical to the recorded run"),
            "{last}"
        );
    }
}

#[test]
fn shrinking_every_caught_variant_leaves_at_most_three_faults_and_the_same_invariant() {
    // The matrix's first failing run of a few variants, each shrunk.
    for (scenario, variant) in [
        ("w1-w2", Variant::UnconditionalCommit),
        ("w1-w2", Variant::ReceiverIgnoresFence),
        ("restart-same-name", Variant::OwnerNameOnly),
        ("clock-jump", Variant::WorkerClockExpiry),
        ("late-tool-answer", Variant::NoJeopardy),
    ] {
        let def = scenarios::find(scenario).unwrap();
        let seed = (0..200)
            .find(|s| !run_setup(&def.build(*s, variant), *s).findings.is_empty())
            .unwrap();
        let setup = def.build(seed, variant);
        let r = run_setup(&setup, seed);
        let first = r.findings[0].invariant;
        let shrunk = shrink::shrink(&Replay::record(&setup, seed, false, &r)).unwrap();
        assert!(
            shrunk.replay.setup.faults.len() <= 3,
            "{scenario} {}: {:?}",
            variant.name(),
            shrunk.replay.setup.faults
        );
        assert_eq!(shrunk.invariant, first);
        let again = shrunk.replay.run();
        assert!(
            again.findings.iter().any(|f| f.invariant == first),
            "the shrunk run still fails"
        );
    }
}

#[test]
fn shrink_command_writes_a_failing_replay_and_exits_1() {
    let path = tmp("v3.json");
    let p = path.to_str().unwrap();
    cli(&[
        "run",
        "w1-w2",
        "--seed",
        "2",
        "--variant",
        "receiver-ignores-fence",
        "--save",
        p,
    ]);
    let out_path = tmp("v3.min.json");
    let (code, out, err) = cli(&["shrink", p, "--out", out_path.to_str().unwrap()]);
    assert_eq!(code, 1, "{err}");
    assert!(out.contains("no-double-effect (I2) still fails"), "{out}");
    assert!(out.contains("minimal plan:"));
    // Each fault of the plan is shown as the shrunk file holds it, in the file's field order.
    let shown: Vec<&str> = out
        .lines()
        .skip_while(|l| *l != "minimal plan:")
        .skip(1)
        .take_while(|l| l.starts_with("  {"))
        .map(str::trim)
        .collect();
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out_path).unwrap()).unwrap();
    let faults = doc["setup"]["faults"].as_array().unwrap();
    assert_eq!(shown.len(), faults.len(), "{out}");
    for (line, fault) in shown.iter().zip(faults) {
        assert!(line.starts_with("{\"fault\":"), "{line}");
        assert_eq!(
            &serde_json::from_str::<serde_json::Value>(line).unwrap(),
            fault
        );
    }
    let (code, _, _) = cli(&["replay", out_path.to_str().unwrap()]);
    assert_eq!(code, 1);
    // A run that holds has nothing to shrink: bad input.
    let held = tmp("held.json");
    cli(&[
        "run",
        "w1-w2",
        "--seed",
        "2",
        "--save",
        held.to_str().unwrap(),
    ]);
    let (code, _, err) = cli(&["shrink", held.to_str().unwrap()]);
    assert_eq!(code, 2);
    assert!(err.contains("nothing to shrink"), "{err}");
}

#[test]
fn determinism_self_check_runs_twice_and_agrees() {
    let (code, out, _) = cli(&["run", "swarm", "--seed", "11", "--check-determinism"]);
    assert_eq!(code, 0);
    assert!(out.contains("determinism: ran twice, identical traces"));
    let (code, out, err) = cli(&[
        "sweep",
        "--seeds",
        "30",
        "--check-determinism",
        "--format",
        "json",
    ]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["determinism_checked"], true);
    assert_eq!(v["nondeterministic"], 0);
}

#[test]
fn bad_replay_files_exit_2_with_one_line() {
    let valid = valid_bytes();
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("truncated", valid[..valid.len() / 2].to_vec()),
        ("empty", Vec::new()),
        ("garbage", b"\x00\xff not json".to_vec()),
        ("other json", br#"{"hello": 1}"#.to_vec()),
        (
            "future",
            String::from_utf8(valid.clone())
                .unwrap()
                .replacen("\"version\": 1", "\"version\": 99", 1)
                .into_bytes(),
        ),
        (
            "bad node",
            String::from_utf8(valid.clone())
                .unwrap()
                .replacen("\"a\": 1", "\"a\": 77", 1)
                .into_bytes(),
        ),
    ];
    for (what, bytes) in cases {
        let path = tmp(&format!("bad-{}.json", what.replace(' ', "-")));
        std::fs::write(&path, bytes).unwrap();
        let (code, out, err) = cli(&["replay", path.to_str().unwrap()]);
        assert_eq!(code, 2, "{what}: {out}");
        assert_eq!(err.lines().count(), 1, "{what}: {err}");
        assert!(err.starts_with("error: "), "{what}: {err}");
    }
    let (code, _, err) = cli(&["replay", "/no/such/file.json"]);
    assert_eq!(code, 2);
    assert!(err.contains("cannot read"));
}

fn committed(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(rel)
}

// A file saved by `leasesim run w1-w2 --seed 1 --variant unconditional-commit --save` before
// replay files had types of their own: format 1 must keep loading, keep running the same run,
// and be written back byte for byte.
#[test]
fn a_version_1_file_loads_reproduces_its_run_and_is_written_back_unchanged() {
    let path = committed("fixtures/replay-v1.json");
    let replay = Replay::load(&path).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(replay.setup.scenario, "w1-w2");
    assert_eq!(replay.setup.variant, Variant::UnconditionalCommit);
    assert_eq!(replay.seed, 1);
    let r = replay.run();
    assert_eq!(
        replay.matches(&r),
        Some(true),
        "trace hash {:016x}, verdict {:?}",
        r.trace_hash(),
        r.verdict()
    );
    let bytes = std::fs::read_to_string(&path).unwrap();
    assert_eq!(replay.encode().unwrap(), bytes);
    // Today's run writes the same file.
    let setup = scenarios::find("w1-w2")
        .unwrap()
        .build(1, Variant::UnconditionalCommit);
    let again = Replay::record(&setup, 1, false, &run_setup(&setup, 1));
    assert_eq!(again.encode().unwrap(), bytes);
}

/// Whether everything `old` says, `new` says the same way (`new` may add fields that `old`
/// left to their defaults).
fn says_all_of(old: &serde_json::Value, new: &serde_json::Value) -> bool {
    use serde_json::Value::{Array, Object};
    match (old, new) {
        (Object(o), Object(n)) => o
            .iter()
            .all(|(k, v)| n.get(k).is_some_and(|m| says_all_of(v, m))),
        (Array(o), Array(n)) => {
            o.len() == n.len() && o.iter().zip(n).all(|(a, b)| says_all_of(a, b))
        }
        _ => old == new,
    }
}

/// Today's trace hash of each regression replay. Their `expect` is what the run that found the
/// bug saw, and several runs have changed since on purpose (the regressions test checks their
/// verdicts and invariants); these pin the runs themselves, as the committed files make them.
const REGRESSION_RUNS: &[(&str, &str)] = &[
    (
        "duplicate-commit-journaled-as-refused.json",
        "5c61374ced173a32",
    ),
    ("gc-pause-stale-write-in-flight.json", "9901106511411e00"),
    ("swarm-anchored-pause-after-heal.json", "b33a4eed7a0aa085"),
    (
        "swarm-checkpoint-refusal-after-accepted-commit.json",
        "b7c6151ff0b7b2bd",
    ),
    (
        "swarm-commit-retry-timer-taken-by-checkpoint.json",
        "b86156477213e7f8",
    ),
    (
        "swarm-operator-takeover-of-queued-job.json",
        "8a525d93fa3f68e6",
    ),
    (
        "swarm-retried-commit-after-lost-ack.json",
        "3cc7c199fba40ad5",
    ),
    (
        "swarm-second-commit-of-one-attempt.json",
        "96eb93c1b625c800",
    ),
    ("w1-w2-stale-commit.shrunk.json", "3c9195123d9e4973"),
];

#[test]
fn every_committed_replay_makes_its_run_and_is_written_back_saying_the_same() {
    let mut files = Vec::new();
    for dir in ["regressions", "../reports/counterexamples", "fixtures"] {
        for e in std::fs::read_dir(committed(dir)).unwrap().flatten() {
            if e.path().extension().is_some_and(|x| x == "json") {
                files.push(e.path());
            }
        }
    }
    assert!(files.len() >= 20, "{files:?}");
    for path in files {
        let text = std::fs::read_to_string(&path).unwrap();
        let replay = Replay::load(&path).unwrap_or_else(|e| panic!("{e}"));
        let written = replay.encode().unwrap();
        let old: serde_json::Value = serde_json::from_str(&text).unwrap();
        let new: serde_json::Value = serde_json::from_str(&written).unwrap();
        assert!(says_all_of(&old, &new), "{}", path.display());
        assert_eq!(Replay::parse(written.as_bytes()).unwrap(), replay);
        let r = replay.run();
        let name = path.file_name().unwrap().to_str().unwrap();
        match REGRESSION_RUNS.iter().find(|(file, _)| *file == name) {
            Some((_, hash)) => assert_eq!(&format!("{:016x}", r.trace_hash()), hash, "{name}"),
            None => assert_eq!(replay.matches(&r), Some(true), "{name}"),
        }
    }
}

#[test]
fn a_trace_file_holds_its_setup_as_a_replay_file_does() {
    let (trace, saved) = (tmp("setup-trace.json"), tmp("setup-replay.json"));
    let (code, _, err) = cli(&[
        "run",
        "late-tool-answer",
        "--seed",
        "3",
        "--trace",
        trace.to_str().unwrap(),
        "--save",
        saved.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let read = |p: &PathBuf| -> serde_json::Value {
        serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
    };
    let (t, r) = (read(&trace), read(&saved));
    assert_eq!(t["format"], "leasesim-trace");
    assert_eq!(t["setup"], r["setup"]);
}

proptest! {
    // The reader is a parser of untrusted input: it must never panic.
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..2048)) {
        let _ = Replay::parse(&bytes);
    }

    #[test]
    fn mutated_valid_files_are_refused_or_run_to_a_verdict(
        flips in proptest::collection::vec((any::<proptest::sample::Index>(), any::<u8>()), 1..6),
        cut in any::<proptest::sample::Index>(),
        truncate in any::<bool>(),
    ) {
        let mut bytes = valid_bytes();
        for (i, b) in flips {
            let at = i.index(bytes.len());
            bytes[at] = b;
        }
        if truncate {
            bytes.truncate(cut.index(bytes.len()));
        }
        if let Ok(replay) = Replay::parse(&bytes) {
            // Whatever it says, it runs to a verdict, with the limits the file gives: the
            // reader's own bounds are what keep the run short.
            let _ = replay.run().verdict();
        }
    }

    #[test]
    fn mutated_numbers_are_refused_or_run_to_a_verdict(
        picks in proptest::collection::vec((any::<proptest::sample::Index>(), any::<i64>()), 1..4),
    ) {
        let mut value: serde_json::Value = serde_json::from_slice(&valid_bytes()).unwrap();
        fn count(v: &serde_json::Value) -> usize {
            match v {
                serde_json::Value::Number(_) => 1,
                serde_json::Value::Array(a) => a.iter().map(count).sum(),
                serde_json::Value::Object(o) => o.values().map(count).sum(),
                _ => 0,
            }
        }
        let slots = count(&value);
        let chosen: Vec<(usize, i64)> = picks.iter().map(|(i, n)| (i.index(slots), *n)).collect();
        // Rewrite the chosen numbers, found by their order in a walk.
        let mut k = 0usize;
        fn rewrite(v: &mut serde_json::Value, k: &mut usize, chosen: &[(usize, i64)]) {
            match v {
                serde_json::Value::Number(_) => {
                    if let Some((_, n)) = chosen.iter().find(|(i, _)| *i == *k) {
                        *v = serde_json::json!(n);
                    }
                    *k += 1;
                }
                serde_json::Value::Array(a) => a.iter_mut().for_each(|x| rewrite(x, k, chosen)),
                serde_json::Value::Object(o) => o.values_mut().for_each(|x| rewrite(x, k, chosen)),
                _ => {}
            }
        }
        rewrite(&mut value, &mut k, &chosen);
        let bytes = serde_json::to_vec(&value).unwrap();
        if let Ok(replay) = Replay::parse(&bytes) {
            let _ = replay.run().verdict();
        }
    }
}

/// A saved run's file with every worker's stop margin set to `margin_ns`, and the recorded run
/// left out (a hand-edited file is judged without a comparison).
fn with_stop_margin(path: &std::path::Path, margin_ns: u64) -> serde_json::Value {
    let mut doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    for w in doc["setup"]["workers"].as_array_mut().unwrap() {
        w["config"]["stop_margin_ns"] = margin_ns.into();
    }
    doc.as_object_mut().unwrap().remove("expect");
    doc
}

#[test]
fn replay_refuses_a_timing_advise_calls_unsafe_unless_the_file_was_recorded_past_the_check() {
    // A stop margin three times the lease: `advise` calls it unsafe (the holder may never act),
    // and `replay`, `shrink` and `report` ran it as if nothing were wrong.
    let base = tmp("margin-base.json");
    let (code, _, err) = cli(&[
        "run",
        "w1-w2",
        "--seed",
        "1",
        "--save",
        base.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let saved: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&base).unwrap()).unwrap();
    let setup = &saved["setup"];
    let lease_ns = setup["classes"][0]["lease_ns"].as_u64().unwrap();
    let w = &setup["workers"][0]["config"];
    let ns = |v: &serde_json::Value| format!("{}ns", v.as_u64().unwrap());
    let margin_ns = 3 * lease_ns;
    let advise = [
        "advise".to_string(),
        "--lease".into(),
        format!("{lease_ns}ns"),
        "--heartbeat".into(),
        ns(&w["heartbeat_ns"]),
        "--jitter".into(),
        ns(&setup["timing"]["jitter_ns"]),
        "--misses".into(),
        setup["timing"]["heartbeats_per_window"].to_string(),
        "--drift-ppm".into(),
        w["drift_ppm_max"].to_string(),
        "--stop-margin".into(),
        format!("{margin_ns}ns"),
    ];
    let advise: Vec<&str> = advise.iter().map(String::as_str).collect();
    let (code, out, _) = cli(&advise);
    assert_eq!(code, 1, "advise calls it unsafe: {out}");
    assert!(out.starts_with("UNSAFE"), "{out}");
    let file = tmp("margin.json");
    let doc = with_stop_margin(&base, margin_ns);
    std::fs::write(&file, serde_json::to_vec(&doc).unwrap()).unwrap();
    let f = file.to_str().unwrap();
    for args in [
        vec!["replay", f],
        vec!["shrink", f],
        vec!["report", f, "--html", "/dev/null"],
    ] {
        let (code, out, err) = cli(&args);
        assert_eq!(code, 2, "{args:?}: {out}{err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains("stop margin"), "{args:?}: {err}");
        assert!(err.contains("the holder may never act"), "{args:?}: {err}");
        assert!(
            err.contains("\"allow_unsafe_timing\": true"),
            "{args:?}: {err}"
        );
    }
    // A file that says it was recorded past the check replays, as `run --allow-unsafe-timing`
    // would run it.
    let mut doc = doc;
    doc["allow_unsafe_timing"] = true.into();
    std::fs::write(&file, serde_json::to_vec(&doc).unwrap()).unwrap();
    let (code, out, err) = cli(&["replay", f]);
    assert!(code == 0 || code == 1, "{out}{err}");
    assert!(
        out.contains("replay: the file records no expected run"),
        "{out}"
    );
    // V12's own counterexample (L <= R*H + J on purpose) was recorded past the check and still
    // replays to its recorded run.
    let v12 = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../reports/counterexamples/unsafe-timing.json"
    );
    let (code, out, err) = cli(&["replay", v12]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        out.contains("replay: identical to the recorded run"),
        "{out}"
    );
}
