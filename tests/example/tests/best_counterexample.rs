//! The counterexample a failing check shows is the shortest one found (fewest faults, then
//! fewest events, then lowest seed), not the first in the order the scenarios were listed.

use leasesim::scenarios::ALL;
use leasesim::{sweep, Quiet, SeedRange, SweepConfig};
use leasesim_example::{machines, Bug};
use std::sync::atomic::AtomicBool;

#[test]
fn a_failing_check_shows_the_shortest_counterexample() {
    let config = SweepConfig::new(
        ALL.iter().collect(),
        SeedRange { start: 0, end: 30 },
        machines::my_worker(Bug::PaysInJeopardy),
    );
    let report = sweep(&config, &AtomicBool::new(false), &Quiet);
    let all: Vec<_> = report.scenarios.iter().flat_map(|o| &o.failures).collect();
    let best = all
        .iter()
        .min_by_key(|f| f.rank())
        .expect("the bug is caught");
    let first = all[0];
    println!(
        "first listed: {} seed {} ({} faults, {} events); shortest: {} seed {} ({} faults, {} events)",
        ALL[first.scenario].name,
        first.seed,
        first.faults,
        first.events,
        ALL[best.scenario].name,
        best.seed,
        best.faults,
        best.events
    );
    assert!(
        best.rank() < first.rank(),
        "the first listed is the shortest here: the test would prove nothing"
    );
    let message = config.try_check().expect_err("it fails");
    let header = message.lines().next().unwrap_or_default();
    assert!(
        header.contains(&format!("{} seed {}", ALL[best.scenario].name, best.seed)),
        "{message}"
    );
}
