//! Every named scenario and the swarm: the reference holds, every declared hazard is reached,
//! and the known-bad variants are caught.

use leasesim::run::Verdict;
use leasesim::scenarios;
use leasesim::sweep::{sweep, Quiet, SeedRange, SweepConfig};
use leasesim_protocol::{Invariant, Variant};
use leasesim_tests::{cli, run};
use std::sync::atomic::AtomicBool;

#[test]
fn every_scenario_holds_and_reaches_its_declared_hazards() {
    // 150 seeds per scenario (above the 100-seed floor at which a never-reached declared hazard
    // fails a sweep), through the library's sweep, as `leasesim sweep` runs it.
    let config = SweepConfig::new(
        scenarios::ALL.iter().collect(),
        SeedRange { start: 0, end: 150 },
        leasesim::Machines::reference(),
    );
    let report = sweep(&config, &AtomicBool::new(false), &Quiet);
    assert!(!report.interrupted);
    assert_eq!(report.runs, 150 * scenarios::ALL.len() as u64);
    for (def, o) in scenarios::ALL.iter().zip(&report.scenarios) {
        assert_eq!(o.failing, 0, "{}: {:?}", def.name, o.failures);
        assert!(!def.hazards.is_empty(), "{} declares no hazard", def.name);
    }
    let unreached = report.unreached(&config, 100);
    assert!(
        unreached.is_empty(),
        "declared hazards never reached: {:?}",
        unreached
            .iter()
            .map(|(i, h)| format!("{} {}", scenarios::ALL[*i].name, h.name()))
            .collect::<Vec<_>>()
    );
}

#[test]
fn list_shows_every_named_story_and_the_swarm() {
    // Nineteen stories (the seeds' and one per protocol rule of P7, P11, P15, P16, P17) and the
    // swarm.
    assert_eq!(scenarios::ALL.len(), 20);
    assert!(scenarios::find("swarm").is_some());
    let (_, out, _) = cli(&["list"]);
    for s in scenarios::ALL {
        assert!(out.contains(&*s.name));
        assert!(!s.story.is_empty());
    }
    for f in [
        "partition",
        "pause",
        "message",
        "clock-step",
        "crash",
        "slow",
        "tool",
        "operator",
    ] {
        assert!(out.contains(f), "fault kind {f} missing");
    }
    for i in Invariant::ALL {
        assert!(out.contains(i.name()));
    }
}

#[test]
fn the_swarm_catches_both_variants() {
    for (variant, invariant) in [
        (Variant::UnconditionalCommit, Invariant::NoStaleCommit),
        (Variant::ReceiverIgnoresFence, Invariant::NoDoubleEffect),
    ] {
        let caught = (0..300u64).find(|seed| {
            let r = run("swarm", *seed, variant);
            r.verdict() == Verdict::Violated && r.findings.iter().any(|f| f.invariant == invariant)
        });
        assert!(
            caught.is_some(),
            "{} not caught in 300 swarm seeds",
            variant.name()
        );
    }
}

#[test]
fn a_run_stays_within_its_limits_and_ends_by_itself() {
    for def in scenarios::ALL {
        for seed in 0..20 {
            let r = run(&def.name, seed, Variant::Reference);
            assert_eq!(
                r.verdict(),
                Verdict::Held,
                "{} seed {seed}: {:?}",
                def.name,
                r.findings
            );
            assert_eq!(r.end, leasesim_sim::End::Done, "{} seed {seed}", def.name);
        }
    }
}
