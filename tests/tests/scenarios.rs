//! Every named scenario and the swarm: the reference holds, every declared hazard is reached,
//! and the known-bad variants are caught.

use leasesim::run::Verdict;
use leasesim::scenarios;
use leasesim_protocol::{Invariant, Variant};
use leasesim_tests::{cli, run};

#[test]
fn every_scenario_holds_and_reaches_its_declared_hazards() {
    let dir = std::env::temp_dir().join(format!("leasesim-scn-{}", std::process::id()));
    // 150 seeds per scenario: above the 100-seed floor at which a never-reached declared hazard
    // fails the sweep.
    let (code, out, err) = cli(&[
        "sweep",
        "--seeds",
        "150",
        "--format",
        "json",
        "--failures-dir",
        dir.to_str().unwrap(),
    ]);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {err}"));
    for s in v["scenarios"].as_array().unwrap() {
        assert_eq!(s["failing"], 0, "{}: {}", s["name"], s["failures"]);
        assert_eq!(
            s["unreached_hazards"].as_array().unwrap().len(),
            0,
            "{} never reached {}",
            s["name"],
            s["unreached_hazards"]
        );
        assert!(
            !s["declared_hazards"].as_array().unwrap().is_empty(),
            "{} declares no hazard",
            s["name"]
        );
    }
    assert_eq!(
        v["scenarios"].as_array().unwrap().len(),
        scenarios::ALL.len()
    );
    assert_eq!(code, 0);
}

#[test]
fn list_shows_every_named_story_and_the_swarm() {
    // Thirteen stories of the seeds, one per protocol rule of P7, P11, P15, P16, P17, and the
    // swarm.
    assert_eq!(scenarios::ALL.len(), 19);
    assert!(scenarios::find("swarm").is_some());
    let (_, out, _) = cli(&["list"]);
    for s in scenarios::ALL {
        assert!(out.contains(s.name));
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
            let r = run(def.name, seed, Variant::Reference);
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
