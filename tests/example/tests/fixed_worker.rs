//! (b) The fixed worker, among leasesim's reference coordinator and receivers, holds on every
//! named scenario and on 10,000 swarm seeds, swept as leasesim sweeps (with hazard coverage: a
//! scenario whose story my worker never lets happen fails too).

use leasesim::scenarios::{find, ALL};
use leasesim::Builder;
use leasesim_example::{machines, Bug};

#[test]
fn holds_on_every_named_scenario_for_seeds_0_to_100() {
    let testbed = Builder::new()
        .machines(machines::my_worker(Bug::None))
        .without("swarm")
        .seeds(0..100);
    assert_eq!(testbed.check().runs, 100 * (ALL.len() as u64 - 1));
}

#[test]
fn holds_on_10_000_swarm_seeds() {
    let testbed = Builder::new()
        .machines(machines::my_worker(Bug::None))
        .scenarios([find("swarm").expect("the swarm").clone()])
        .seeds(0..10_000);
    assert_eq!(testbed.check().runs, 10_000);
}
