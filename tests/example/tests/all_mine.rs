//! (c) My coordinator, my payments service and my fixed worker together hold on every named
//! scenario and on the swarm, swept as leasesim sweeps (with its hazard coverage).

use leasesim::scenarios::ALL;
use leasesim::{SeedRange, SweepConfig};
use leasesim_example::{machines, Bug};

#[test]
fn hold_on_every_named_scenario_for_seeds_0_to_50() {
    let named = ALL.iter().filter(|d| d.name != "swarm").collect();
    let config = SweepConfig::new(
        named,
        SeedRange { start: 0, end: 50 },
        machines::all_mine(Bug::None),
    );
    assert_eq!(config.check().runs, 50 * (ALL.len() as u64 - 1));
}

#[test]
fn hold_on_1_000_swarm_seeds() {
    let swarm = leasesim::scenarios::find("swarm").expect("the swarm");
    let config = SweepConfig::new(
        vec![swarm],
        SeedRange {
            start: 0,
            end: 1_000,
        },
        machines::all_mine(Bug::None),
    );
    assert_eq!(config.check().runs, 1_000);
}
