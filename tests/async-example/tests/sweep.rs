//! The async worker on leasesim's default sweep: the fixed worker holds on every named
//! scenario and the swarm; each bug is caught, with a seed that reproduces it.
#![cfg(feature = "sim")]

use leasesim::scenarios::{find, ALL};
use leasesim::Builder;
use leasesim_async_example::sim::machines;
use leasesim_async_example::worker::Bug;

#[test]
fn the_worker_holds_on_every_named_scenario_for_seeds_0_to_100() {
    let testbed = Builder::new()
        .machines(machines(Bug::None))
        .without("swarm")
        .seeds(0..100)
        // Every seed twice: the async worker's runs repeat, trace for trace.
        .check_determinism();
    let config = testbed.sweep_config().expect("a valid testbed");
    let report = testbed.sweep().expect("a valid testbed");
    assert_eq!(report.runs, 100 * (ALL.len() as u64 - 1));
    for (def, outcome) in config.scenarios.iter().zip(&report.scenarios) {
        assert_eq!(
            outcome.failing,
            0,
            "{}: {:?}",
            def.name,
            outcome.failures.first()
        );
        assert_eq!(outcome.nondeterministic, 0, "{}", def.name);
    }
    // The stories this worker never lets happen, because it works otherwise than leasesim's
    // reference: it asks the tool no status (P12 c), reconciles no effect of an interrupted
    // stage and calls no human (P17); a tool call's own timeout ends a stuck call before the
    // stage deadline does; and it awaits each effect's answer before it reports, so after a GC
    // pause its fenced effect stops it before a stale report goes out. The sweep names them;
    // `check()` would fail on them.
    let unreached: Vec<String> = report
        .unreached(&config, 1)
        .iter()
        .map(|(i, h)| format!("{} {}", config.scenarios[*i].name, h.name()))
        .collect();
    assert_eq!(
        unreached,
        [
            "gc-pause-after-check stale-commit-rejected",
            "stuck-tool-live-heartbeat stage-deadline",
            "retries status-query",
            "stages-and-checkpoints effect-reconciled",
            "stages-and-checkpoints human-review",
        ]
    );
}

#[test]
fn the_worker_holds_on_10_000_swarm_seeds() {
    let testbed = Builder::new()
        .machines(machines(Bug::None))
        .scenarios([find("swarm").expect("the swarm").clone()])
        .seeds(0..10_000);
    assert_eq!(testbed.check().runs, 10_000);
}

/// The default sweep (every named scenario, seeds 0 to 100) of `bug`.
fn default_sweep(bug: Bug) -> Builder {
    Builder::new()
        .machines(machines(bug))
        .without("swarm")
        .seeds(0..100)
}

/// What the default sweep says of `bug`, as `check()` panics with it: the first failing seed,
/// where its replay was saved, and the command that reruns it.
fn caught(bug: Bug) -> String {
    let config = default_sweep(bug).sweep_config().expect("a valid testbed");
    config.try_check().expect_err("the sweep catches the bug")
}

#[test]
fn renewals_on_the_tool_calls_task_are_caught() {
    let said = caught(Bug::RenewOnToolTask);
    assert!(
        said.contains("rerun exactly this run: LEASESIM_REPLAY="),
        "{said}"
    );
    assert!(
        said.contains("or this seed of the sweep: LEASESIM_SEED="),
        "{said}"
    );
}

#[test]
fn a_deadline_without_a_drift_allowance_is_caught_only_where_clocks_drift() {
    let said = caught(Bug::DeadlineWithoutDrift);
    assert!(
        said.contains("the first is clock-skew-fast-worker seed"),
        "{said}"
    );
    assert!(
        said.contains("rerun exactly this run: LEASESIM_REPLAY="),
        "{said}"
    );
    // Every other scenario holds: only a clock that drifts shows it.
    let testbed = default_sweep(Bug::DeadlineWithoutDrift);
    let config = testbed.sweep_config().unwrap();
    let report = testbed.sweep().unwrap();
    let failing: Vec<&str> = config
        .scenarios
        .iter()
        .zip(&report.scenarios)
        .filter(|(_, o)| o.failing > 0)
        .map(|(d, _)| d.name.as_ref())
        .collect();
    assert_eq!(failing, ["clock-skew-fast-worker"]);
}
