//! `LEASESIM_SEED` and `LEASESIM_REPLAY` in a user's `cargo test`: one seed of the sweep, or
//! exactly the saved run, instead of the whole sweep. One test in its own process, because it
//! sets the process's environment.

use leasesim::check::{REPLAY_VAR, SEED_VAR};
use leasesim::machines::Machines;
use leasesim::sweep::{SeedRange, SweepConfig};
use leasesim::{scenarios, Variant};

#[test]
fn one_seed_or_one_saved_run_is_rerun_from_the_environment() {
    let v2 = Machines::variant(Variant::UnconditionalCommit);
    let careless = Machines::new("careless-coordinator")
        .with_coordinator("careless-coordinator", move |s| v2.coordinator(s))
        .known_bad();
    let config = SweepConfig::new(
        vec![
            scenarios::find("w1-w2").unwrap(),
            scenarios::find("retries").unwrap(),
        ],
        SeedRange { start: 0, end: 50 },
        careless.clone(),
    );
    let err = config.try_check().expect_err("it fails");
    let saved = err
        .lines()
        .find_map(|l| l.strip_prefix("  saved: "))
        .expect("saved")
        .to_string();

    // One seed: the sweep narrows to it (a seed of retries holds; w1-w2's fails).
    std::env::set_var(SEED_VAR, "retries:7");
    let report = config
        .try_check()
        .expect("retries seed 7 holds on these machines");
    assert_eq!(report.runs, 1);
    std::env::set_var(SEED_VAR, "w1-w2:3");
    let err = config.try_check().expect_err("w1-w2 seed 3 fails");
    assert!(err.contains("failed 1 of 1 runs"), "{err}");
    std::env::set_var(SEED_VAR, "nope:1");
    assert!(config.try_check().unwrap_err().contains("no such scenario"));
    std::env::remove_var(SEED_VAR);

    // Exactly the saved run, on the test's own machines; other machines are refused.
    std::env::set_var(REPLAY_VAR, &saved);
    let err = config.try_check().expect_err("the saved run fails again");
    assert!(err.contains("fails again"), "{err}");
    let other = SweepConfig {
        machines: Machines::reference(),
        ..config.clone()
    };
    assert!(other
        .try_check()
        .unwrap_err()
        .contains("not recorded with the machines 'reference'"));
    std::env::remove_var(REPLAY_VAR);
    let _ = std::fs::remove_file(&saved);
}
