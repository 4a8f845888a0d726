//! What a verdict does not rest on: a worker's clock that leaves its drift bound voids the
//! judgements the SPEC promises only within it (belief within grant, I5; a needless takeover,
//! I7), whether the drift was configured or set by a fault, and the run says so: in
//! `RunResult::skipped`, in `run`'s text (`skipped: ...` after the findings) and in its JSON.

use leasesim::plan::FaultKind;
use leasesim::run::run_setup;
use leasesim::scenarios;
use leasesim_protocol::Variant;
use leasesim_tests::{cli, run};

/// A swarm seed whose plan sets a worker's rate beyond its 500 ppm bound mid-run.
const DRIFT_SEED: u64 = 1;

#[test]
fn a_drift_fault_beyond_the_bound_is_listed_as_skipped() {
    let r = run("swarm", DRIFT_SEED, Variant::Reference);
    let lines: Vec<String> = r.skipped.iter().map(|s| s.to_string()).collect();
    assert_eq!(
        lines,
        vec![
            "belief-within-grant (I5) not judged for W3 from 55.439s: its clock left its 500 ppm drift bound (its rate was set to -14974 ppm)",
            "needless-takeover (I7) not judged for W3 from 55.439s: its clock left its 500 ppm drift bound (its rate was set to -14974 ppm)",
        ]
    );
    let (code, out, err) = cli(&["run", "swarm", "--seed", &DRIFT_SEED.to_string()]);
    assert_eq!(code, 0, "{err}");
    let verdict = out.find("verdict: HELD").expect("a verdict line");
    for line in &lines {
        let at = out
            .find(&format!("\nskipped: {line}\n"))
            .unwrap_or_else(|| panic!("{line} is not printed:\n{out}"));
        assert!(
            at > verdict,
            "skipped lines follow the verdict and findings"
        );
    }
    let (code, out, err) = cli(&[
        "run",
        "swarm",
        "--seed",
        &DRIFT_SEED.to_string(),
        "--format",
        "json",
    ]);
    assert_eq!(code, 0, "{err}");
    let doc: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    assert_eq!(doc["skipped"], serde_json::json!(lines));
}

#[test]
fn the_same_drift_configured_from_the_start_is_skipped_the_same_way() {
    let def = scenarios::find("swarm").expect("the swarm");
    let mut setup = def.build(DRIFT_SEED, Variant::Reference);
    // Move the fault's rate into W3's clock configuration.
    let (node, drift_ppm) = setup
        .faults
        .iter()
        .find_map(|f| match f.kind {
            FaultKind::Drift { node, drift_ppm } if drift_ppm.unsigned_abs() > 500 => {
                Some((node, drift_ppm))
            }
            _ => None,
        })
        .expect("the seed's drift fault");
    setup
        .faults
        .retain(|f| !matches!(f.kind, FaultKind::Drift { .. }));
    let w = (0..setup.workers.len())
        .find(|&i| setup.worker_node(i) == node)
        .expect("a worker");
    setup.workers[w].clock.drift_ppm = drift_ppm;
    let r = run_setup(&setup, DRIFT_SEED);
    let lines: Vec<String> = r.skipped.iter().map(|s| s.to_string()).collect();
    assert_eq!(
        lines,
        vec![
            "belief-within-grant (I5) not judged for W3 from 0.000s: its clock left its 500 ppm drift bound (configured at -14974 ppm)",
            "needless-takeover (I7) not judged for W3 from 0.000s: its clock left its 500 ppm drift bound (configured at -14974 ppm)",
        ]
    );
}

#[test]
fn a_run_whose_clocks_keep_their_bound_skips_nothing() {
    for name in ["w1-w2", "clock-skew-fast-worker", "late-grant-reply"] {
        for seed in 0..20 {
            let r = run(name, seed, Variant::Reference);
            assert!(r.skipped.is_empty(), "{name} seed {seed}: {:?}", r.skipped);
        }
    }
}
