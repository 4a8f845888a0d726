//! (c) My coordinator, my payments service and my fixed worker together hold on every named
//! scenario and on the swarm, swept as leasesim sweeps (with its hazard coverage).

use leasesim::scenarios::{find, ALL};
use leasesim::Builder;
use leasesim_example::{machines, Bug};

#[test]
fn hold_on_every_named_scenario_for_seeds_0_to_50() {
    let testbed = Builder::new()
        .machines(machines::all_mine(Bug::None))
        .without("swarm")
        .seeds(0..50);
    assert_eq!(testbed.check().runs, 50 * (ALL.len() as u64 - 1));
}

#[test]
fn hold_on_1_000_swarm_seeds() {
    let testbed = Builder::new()
        .machines(machines::all_mine(Bug::None))
        .scenarios([find("swarm").expect("the swarm").clone()])
        .seeds(0..1_000);
    assert_eq!(testbed.check().runs, 1_000);
}
