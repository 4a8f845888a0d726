//! The async worker on leasesim's second engine, against the simulator. In the madsim build
//! (the test command's madsim step) each node is a madsim node: madsim's scheduler, network,
//! `pause`/`resume` and `kill`/`restart`, while the worker's own `tokio` calls run on
//! leasesim-tokio on its node's clock, which the shell keeps per node. In the normal build the
//! engine is real tokio with its clock paused (plans without process pauses or crashes).
#![cfg(feature = "sim")]

use leasesim::scenarios::find;
use leasesim_async_example::sim::machines;
use leasesim_async_example::worker::Bug;
use leasesim_shell::engines::{self, Engine, AGREE_SCENARIOS};

const SEEDS: std::ops::Range<u64> = 0..10;

/// The scenarios compared: the five both engines express, and the one whose clock drifts.
fn scenarios() -> Vec<&'static str> {
    let mut s = AGREE_SCENARIOS.to_vec();
    s.push("clock-skew-fast-worker");
    s.retain(|name| {
        let setup = find(name)
            .expect("a stock scenario")
            .build(0, leasesim_protocol::Variant::Reference);
        Engine::shell().supports(&setup).is_ok()
    });
    if Engine::shell() == Engine::Madsim {
        assert_eq!(s.len(), 6, "madsim expresses every one");
    }
    s
}

#[test]
fn the_engines_agree_on_the_async_worker_and_both_catch_each_bug_where_it_bites() {
    let shell = Engine::shell();
    for (bug, caught_in) in [
        (Bug::None, &[][..]),
        (
            Bug::RenewOnToolTask,
            &["w1-w2", "gc-pause-after-check", "heartbeat-ack-lost"][..],
        ),
        // Only a drifting clock shows it: per-node clocks, on either engine.
        (Bug::DeadlineWithoutDrift, &["clock-skew-fast-worker"][..]),
    ] {
        let m = machines(bug);
        for s in scenarios() {
            let a = engines::agree(shell, find(s).unwrap(), &m, SEEDS).expect("runs");
            let what = format!("{s} {}", m.name());
            assert_eq!(a.disagreement, None, "{what}: {a:?}");
            assert!(
                a.other.problems.is_empty(),
                "{what}: {:?}",
                a.other.problems
            );
            assert_eq!(a.other.unfinished, 0, "{what}: {a:?}");
            let expect = caught_in.contains(&s);
            assert_eq!(
                (a.sim.caught(), a.other.caught()),
                (expect, expect),
                "{what}: caught on sim {} / {} {}",
                a.sim.violated,
                shell.name(),
                a.other.violated
            );
        }
    }
}

#[test]
fn the_async_worker_repeats_its_trace_on_the_second_engine() {
    let m = machines(Bug::None);
    let w = find("w1-w2").unwrap();
    for seed in 0..3 {
        let setup = w.build(seed, m.setup_variant());
        // On madsim: madsim's own check, every random draw of a second run compared.
        let run = engines::check_determinism(Engine::shell(), &setup, seed, &m)
            .unwrap_or_else(|e| panic!("seed {seed}: {e}"));
        assert!(run.problems.is_empty(), "{:?}", run.problems);
    }
}
