//! A sweep in a user's `cargo test` on a CI matrix: the library's `check` runs the shard the
//! environment names. One test in its own process, because it sets the process's environment.

use leasesim::sweep::{SeedRange, Shard, SweepConfig, SHARD_VAR};
use leasesim::{scenarios, Machines};

#[test]
fn check_runs_the_shard_the_environment_names() {
    let config = SweepConfig::new(
        vec![
            scenarios::find("w1-w2").unwrap(),
            scenarios::find("retries").unwrap(),
        ],
        SeedRange { start: 0, end: 300 },
        Machines::reference(),
    );
    std::env::set_var("CI_NODE_INDEX", "2");
    std::env::set_var("CI_NODE_TOTAL", "3");
    let report = config.check();
    assert_eq!(report.runs, 200);
    assert_eq!(report.scenarios[0].ran, vec![100..200]);
    assert_eq!(report.scenarios[1].ran, vec![100..200]);
    // Ours first; an explicit shard in the configuration wins over any variable.
    std::env::set_var(SHARD_VAR, "3/3");
    assert_eq!(config.check().scenarios[0].ran, vec![200..300]);
    let own = SweepConfig {
        shard: Some(Shard::new(1, 3).unwrap()),
        ..config.clone()
    };
    assert_eq!(own.check().scenarios[0].ran, vec![0..100]);
    // A variable set wrong is an error, never the whole sweep on every node.
    std::env::set_var(SHARD_VAR, "4/3");
    assert!(config.try_check().unwrap_err().contains("LEASESIM_SHARD"));
    std::env::remove_var(SHARD_VAR);
    std::env::remove_var("CI_NODE_INDEX");
    std::env::remove_var("CI_NODE_TOTAL");
    assert_eq!(config.check().runs, 600);
}
