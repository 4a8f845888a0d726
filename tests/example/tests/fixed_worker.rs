//! (b) The fixed worker, among leasesim's reference coordinator and receivers, holds on every
//! named scenario and on 10,000 swarm seeds, swept as leasesim sweeps (with hazard coverage: a
//! scenario whose story my worker never lets happen fails too).

use leasesim::scenarios::ALL;
use leasesim::{SeedRange, SweepConfig};
use leasesim_example::{machines, Bug};

#[test]
fn holds_on_every_named_scenario_for_seeds_0_to_100() {
    let named = ALL.iter().filter(|d| d.name != "swarm").collect();
    let config = SweepConfig::new(
        named,
        SeedRange { start: 0, end: 100 },
        machines::my_worker(Bug::None),
    );
    assert_eq!(config.check().runs, 100 * (ALL.len() as u64 - 1));
}

#[test]
fn holds_on_10_000_swarm_seeds() {
    let swarm = leasesim::scenarios::find("swarm").expect("the swarm");
    let config = SweepConfig::new(
        vec![swarm],
        SeedRange {
            start: 0,
            end: 10_000,
        },
        machines::my_worker(Bug::None),
    );
    assert_eq!(config.check().runs, 10_000);
}
