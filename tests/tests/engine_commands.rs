//! The engine options of the command line (`run --engine`, `agree`, `bench --child`), on the
//! shell engine of this build (real tokio; the madsim build tests the engines themselves, in
//! `scenarios/shell/tests/engines.rs`).

use leasesim_shell::engines::Engine;
use leasesim_tests::cli;

#[test]
fn the_engine_option_is_checked() {
    let (code, _, err) = cli(&["run", "w1-w2", "--seed", "1", "--engine", "nope"]);
    assert_eq!(code, 2);
    assert_eq!(err.lines().count(), 1, "{err}");
    let missing = if Engine::shell() == Engine::Madsim {
        "tokio"
    } else {
        "madsim"
    };
    let (code, _, err) = cli(&["run", "w1-w2", "--seed", "1", "--engine", missing]);
    assert_eq!(code, 2, "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    let (code, out, err) = cli(&[
        "run",
        "w1-w2",
        "--seed",
        "1",
        "--engine",
        Engine::shell().name(),
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("verdict: HELD") && out.contains("async shell:"),
        "{out}"
    );
    let shell = Engine::shell().name();
    let (code, out, err) = cli(&[
        "run", "w1-w2", "--seed", "1", "--engine", shell, "--format", "json",
    ]);
    assert_eq!(code, 0, "{err}");
    let doc: serde_json::Value = serde_json::from_str(&out).expect("json");
    assert_eq!(doc["engine"], shell);
    assert_eq!(doc["shell"]["tool_calls"], 4, "{doc}");
    assert!(
        doc["shell"]["sent"].as_u64().is_some_and(|n| n > 0),
        "{doc}"
    );
    assert_eq!(doc["engine_problems"].as_array().map(Vec::len), Some(0));
    let (code, out, _) = cli(&[
        "run",
        "w1-w2",
        "--seed",
        "1",
        "--engine",
        Engine::shell().name(),
        "--variant",
        "receiver-ignores-fence",
    ]);
    assert_eq!(code, 1);
    assert!(out.contains("no-double-effect (I2)"));
    if Engine::shell() == Engine::Tokio {
        let (code, _, err) = cli(&[
            "run",
            "gc-pause-after-check",
            "--seed",
            "1",
            "--engine",
            "tokio",
        ]);
        assert_eq!(code, 2);
        assert!(err.contains("madsim"), "{err}");
    }
}

#[test]
fn agree_command_reports_and_exits_0_when_the_engines_agree() {
    let (code, out, err) = cli(&[
        "agree",
        "w1-w2",
        "--seeds",
        "3",
        "--variants",
        "reference,unconditional-commit",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("2 comparisons, 0 disagreements"), "{out}");
    let (code, _, err) = cli(&["agree", "no-such-scenario"]);
    assert_eq!(code, 2);
    assert_eq!(err.lines().count(), 1);
}

#[test]
fn bench_child_prints_figures() {
    let (code, out, err) = cli(&["bench", "--child", "sim", "--seeds", "20", "--jobs", "1"]);
    assert_eq!(code, 0, "{err}");
    let f: leasesim_bench::EngineFigures = serde_json::from_str(&out).expect("figures");
    assert_eq!((f.engine.as_str(), f.seeds, f.not_held), ("sim", 20, 0));
    assert!(f.events > 20 && f.seeds_per_s > 0.0);
    let (code, out, err) = cli(&[
        "bench",
        "--child",
        Engine::shell().name(),
        "--shell-seeds",
        "5",
        "--jobs",
        "1",
    ]);
    assert_eq!(code, 0, "{err}");
    let f: leasesim_bench::EngineFigures = serde_json::from_str(&out).expect("figures");
    assert_eq!((f.seeds, f.not_held), (5, 0));
}
