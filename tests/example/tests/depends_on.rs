//! Which fault a finding depends on: the plan run without each fault in turn. A fault the
//! finding needs is named so; one added beside it that changes nothing is "not needed".

use leasesim::scenarios::ALL;
use leasesim::shrink::{depends_on, describe_dependence};
use leasesim::{run, sweep, Fault, FaultKind, Invariant, Quiet, SeedRange, SweepConfig, Trigger};
use leasesim_example::{machines, Bug};
use std::sync::atomic::AtomicBool;

#[test]
fn the_fault_a_finding_needs_is_told_from_one_that_changes_nothing() {
    let m = machines::my_worker(Bug::DeadlineFromReplyArrival);
    let config = SweepConfig::new(
        ALL.iter().collect(),
        SeedRange { start: 0, end: 50 },
        m.clone(),
    );
    let report = sweep(&config, &AtomicBool::new(false), &Quiet);
    // The shortest counterexample with a fault in its plan.
    let f = report
        .scenarios
        .iter()
        .flat_map(|o| &o.failures)
        .filter(|f| f.faults > 0 && f.invariants.contains(&"quiescent-holder"))
        .min_by_key(|f| f.rank())
        .expect("the late-reply bug caught with a fault");
    let mut setup = ALL[f.scenario].build(f.seed, m.setup_variant());
    let before = setup.faults.len();
    let r = run(&setup, f.seed, &m);
    // Beside the plan: a step of the coordinator's wall clock at the start, which the protocol
    // never reads for a lease.
    let coord = 0;
    setup.faults.push(Fault::new(
        Trigger::at(0),
        FaultKind::ClockStep {
            node: coord,
            delta_ns: 3_600_000_000_000,
            wall: true,
        },
    ));
    let (finding, deps) =
        depends_on(&setup, f.seed, &m, Invariant::QuiescentHolder).expect("it still breaks I5");
    assert_eq!(deps.len(), before + 1);
    let added = deps.last().unwrap();
    assert!(!added.needed, "{deps:?}");
    assert_eq!(added.acts_on, vec![coord]);
    assert!(
        deps.iter().any(|d| d.needed),
        "{} seed {}: some fault of the plan is needed: {deps:?}",
        ALL[f.scenario].name,
        f.seed
    );
    let name = |n: u32| r.nodes[n as usize].name.clone();
    let lines = describe_dependence(&setup, &finding, &deps, &name);
    assert!(
        lines
            .last()
            .unwrap()
            .contains("not needed: without it quiescent-holder still breaks"),
        "{lines:?}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.contains("needed: without it nothing breaks quiescent-holder")),
        "{lines:?}"
    );
}
