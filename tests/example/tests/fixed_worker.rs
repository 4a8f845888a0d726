//! (b) The fixed worker, among leasesim's reference coordinator and receivers, holds on every
//! named scenario and on the swarm.

use leasesim::scenarios::{ScenarioDef, ALL};
use leasesim_example::harness::{sweep, Cast, Failure};
use leasesim_example::Bug;

fn report(failures: &[Failure]) -> String {
    failures
        .iter()
        .map(|f| format!("{} seed {}: {} {}", f.scenario, f.seed, f.verdict, f.first))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn holds_on_every_named_scenario_for_seeds_0_to_50() {
    let all: Vec<&'static ScenarioDef> = ALL.iter().collect();
    let failures = sweep(&all, 0..50, Cast::worker(Bug::None), 2);
    assert!(failures.is_empty(), "{}", report(&failures));
}

#[test]
fn holds_on_10_000_swarm_seeds() {
    let swarm = ALL.iter().find(|d| d.name == "swarm").expect("the swarm");
    let failures = sweep(&[swarm], 0..10_000, Cast::worker(Bug::None), 2);
    assert!(failures.is_empty(), "{}", report(&failures));
}
