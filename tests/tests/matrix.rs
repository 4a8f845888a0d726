//! The mutation matrix: the reference is clean and each of the fourteen known-bad variants is
//! caught, with a named invariant, within a fixed seed budget per scenario (at most 2,000; this
//! test uses 150). The command each row prints reproduces the failure.

use leasesim::matrix;
use leasesim_protocol::Variant;
use leasesim_tests::cli;

const BUDGET: u64 = 150;

#[test]
fn every_variant_is_caught_and_the_reference_is_clean() {
    let m = matrix::run(BUDGET, 2);
    assert!(m.reference_clean, "{:?}", m.rows[0]);
    assert_eq!(m.rows.len(), 15);
    for row in m.rows.iter().skip(1) {
        assert!(
            row.caught,
            "{} ({}) was not caught in {BUDGET} seeds per scenario",
            row.variant, row.spec
        );
        assert!(
            !row.invariants.is_empty(),
            "{} caught without an invariant",
            row.variant
        );
        let n = row
            .seeds_to_detection
            .expect("a caught variant has a detection");
        assert!((1..=BUDGET).contains(&n));
        // Its reproduce command fails again, naming an invariant of the row.
        let cmd = row.reproduce.as_ref().expect("a reproduce command");
        let args: Vec<&str> = cmd
            .strip_prefix("cargo run --release -- ")
            .expect("the cargo form")
            .split(' ')
            .collect();
        let (code, out, err) = cli(&args);
        assert_eq!(code, 1, "{cmd}: {err}");
        assert!(
            row.invariants.iter().any(|i| out.contains(i.as_str())),
            "{cmd} must name one of {:?}",
            row.invariants
        );
    }
    assert!(m.median_seeds_to_detection.is_some_and(|n| n <= 100));
    let md = matrix::markdown(&m);
    for v in Variant::ALL {
        assert!(
            md.contains(v.name()),
            "{} missing from the Markdown",
            v.name()
        );
    }
}

#[test]
fn unsafe_timing_is_refused_by_validation_with_the_formula_v12() {
    let (code, out, err) = cli(&["run", "w1-w2", "--seed", "1", "--variant", "unsafe-timing"]);
    assert_eq!(code, 2, "{out}");
    assert_eq!(err.lines().count(), 1);
    assert!(err.contains("configuration refused (P6)"), "{err}");
    assert!(err.contains("(1+rho)/(1-rho)*R*H + J"), "{err}");
    assert!(err.contains("largest safe heartbeat period"), "{err}");
    // The same configuration is refused by sweep too, and runs when validation is bypassed.
    let (code, _, err) = cli(&[
        "sweep",
        "w1-w2",
        "--seeds",
        "3",
        "--variant",
        "unsafe-timing",
    ]);
    assert_eq!(code, 2, "{err}");
    let (code, _, _) = cli(&[
        "run",
        "heartbeat-ack-lost",
        "--seed",
        "0",
        "--variant",
        "unsafe-timing",
        "--allow-unsafe-timing",
    ]);
    assert_eq!(
        code, 1,
        "the simulation catches it when validation is bypassed"
    );
    // The reference configuration of every scenario passes validation.
    for def in leasesim::scenarios::ALL {
        for seed in 0..50 {
            def.build(seed, Variant::Reference)
                .validate_timing()
                .unwrap_or_else(|e| panic!("{} seed {seed}: {e}", def.name));
        }
    }
}
