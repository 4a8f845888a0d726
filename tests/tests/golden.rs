//! Golden values: a dependency bump or a code change that silently changes what a seed means
//! fails here. Update them only on purpose, and say why in the commit.

use leasesim_protocol::Variant;
use leasesim_sim::{Prng, Stream};
use leasesim_tests::run;

#[test]
fn prng_first_outputs_are_pinned() {
    let firsts: Vec<u64> = [
        Stream::Network,
        Stream::Faults,
        Stream::Config,
        Stream::Tool,
    ]
    .into_iter()
    .map(|s| Prng::new(1, s).next_u64())
    .collect();
    assert_eq!(
        firsts, GOLDEN_PRNG,
        "the generator changed: every seed now means another run"
    );
    let mut r = Prng::new(1, Stream::Config);
    let draws: Vec<u64> = (0..4).map(|_| r.range(0, 999)).collect();
    assert_eq!(draws, GOLDEN_RANGE);
}

#[test]
fn w1_w2_seed_1_trace_hash_is_pinned() {
    let r = run("w1-w2", 1, Variant::Reference);
    assert_eq!(
        format!("{:016x}", r.trace_hash()),
        GOLDEN_W1_W2_SEED_1,
        "the w1-w2 seed 1 trace changed; if on purpose, update the golden value"
    );
}

const GOLDEN_PRNG: [u64; 4] = [
    15715005604373573095,
    16166618085559792950,
    10481881765394875549,
    12212852551396965246,
];
const GOLDEN_RANGE: [u64; 4] = [568, 674, 197, 391];
const GOLDEN_W1_W2_SEED_1: &str = "c285681ebd3af28f";

/// Every named scenario x every variant x seeds 0..6: the trace hash, the verdict and the
/// invariants found, one line each, against `tests/golden/trace-hashes.txt`. A refactor that
/// claims to change no behaviour proves it here; a change on purpose rewrites the file with
/// `LEASESIM_UPDATE_GOLDEN=1` and the diff says which runs changed and how.
#[test]
fn every_scenario_variant_and_seed_keeps_its_trace() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("golden/trace-hashes.txt");
    let mut lines = String::new();
    for def in leasesim::scenarios::ALL {
        for &variant in Variant::ALL {
            for seed in 0..GOLDEN_SEEDS {
                let r = run(&def.name, seed, variant);
                let mut invariants: Vec<&str> =
                    r.findings.iter().map(|f| f.invariant.name()).collect();
                invariants.sort_unstable();
                invariants.dedup();
                lines.push_str(&format!(
                    "{} {} {seed} {:016x} {:?} {}\n",
                    def.name,
                    variant.name(),
                    r.trace_hash(),
                    r.verdict(),
                    if invariants.is_empty() {
                        "-".to_string()
                    } else {
                        invariants.join(",")
                    }
                ));
            }
        }
    }
    if std::env::var_os("LEASESIM_UPDATE_GOLDEN").is_some() {
        std::fs::write(&path, &lines).expect("the golden file is writable");
        return;
    }
    let golden = std::fs::read_to_string(&path).unwrap_or_default();
    let changed: Vec<String> = golden
        .lines()
        .zip(lines.lines())
        .filter(|(a, b)| a != b)
        .map(|(a, b)| format!("  was {a}\n  now {b}"))
        .collect();
    assert!(
        changed.is_empty() && golden.lines().count() == lines.lines().count(),
        "{} of {} runs changed (LEASESIM_UPDATE_GOLDEN=1 rewrites {} on purpose):\n{}",
        changed.len(),
        lines.lines().count(),
        path.display(),
        changed
            .iter()
            .take(20)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
}

const GOLDEN_SEEDS: u64 = 6;

/// The walk passes over routine events that no checker takes in (`leasesim_checkers`'s
/// `quiet_send`, `quiet_delivery`, `filed_only`). Those lists repeat what each checker reads; if
/// a checker starts to read one of those events, this test sees the judgement change: every
/// scenario x variant x golden seed is judged with and without the shortcuts, and the whole
/// judgement (every finding with its text and proofs, hazard counts, skipped judgements) must be
/// the same.
#[test]
fn the_walks_shortcuts_change_no_judgement() {
    let mut compared = 0;
    for def in leasesim::scenarios::ALL {
        for &variant in Variant::ALL {
            for seed in 0..GOLDEN_SEEDS {
                let fast = run(&def.name, seed, variant);
                let full = leasesim::workspace::without_shortcuts(|| run(&def.name, seed, variant));
                assert_eq!(fast.trace_hash(), full.trace_hash());
                let what = |r: &leasesim::RunResult| {
                    format!("{:?}\n{:?}\n{:?}", r.findings, r.hazards, r.skipped)
                };
                assert_eq!(
                    what(&fast),
                    what(&full),
                    "{} --variant {} seed {seed}: the shortcuts changed the judgement",
                    def.name,
                    variant.name()
                );
                compared += usize::from(!full.findings.is_empty());
            }
        }
    }
    // The comparison covers runs with findings, not only clean ones.
    assert!(
        compared > 100,
        "only {compared} runs with findings compared"
    );
}
