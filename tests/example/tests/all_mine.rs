//! (c) My coordinator, my payments service and my fixed worker together hold on every named
//! scenario and on the swarm.

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
fn hold_on_every_named_scenario_for_seeds_0_to_50() {
    let all: Vec<&'static ScenarioDef> = ALL.iter().collect();
    let failures = sweep(&all, 0..50, Cast::all_mine(Bug::None), 2);
    assert!(failures.is_empty(), "{}", report(&failures));
}

#[test]
fn hold_on_1_000_swarm_seeds() {
    let swarm = ALL.iter().find(|d| d.name == "swarm").expect("the swarm");
    let failures = sweep(&[swarm], 0..1_000, Cast::all_mine(Bug::None), 2);
    assert!(failures.is_empty(), "{}", report(&failures));
}
