//! Exhaustive bounded exploration (`leasesim explore`): the reference holds under every single
//! fault placed at w1-w2's anchors; V2 and V3 are found there with shrunk plans that replay;
//! every known-bad variant of the matrix is found at K <= 2 on the scenario the matrix first
//! caught it in; a pruned plan really is the run it was counted as; shards split the space;
//! Ctrl-C claims nothing; a user's machines explore through the library; bad input exits 2.

use leasesim::explore::{self, ExploreConfig, Explored, Kind, Progress, Silent};
use leasesim::machines::{Machines, WorkerSpec};
use leasesim::sweep::Shard;
use leasesim::{run, scenarios, Invariant, Variant};
use leasesim_protocol::Worker;
use leasesim_sim::End;
use leasesim_tests::TempDir;
use std::sync::atomic::{AtomicBool, Ordering};

fn explore_with(config: &ExploreConfig) -> Explored {
    explore::explore(config, &AtomicBool::new(false), &Silent).expect("an exploration")
}

fn config(scenario: &str, seed: u64, machines: Machines, k: usize) -> ExploreConfig {
    ExploreConfig::new(scenarios::find(scenario).unwrap(), seed, machines, k)
}

fn cli(args: &[&str]) -> (i32, String, String) {
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let mut argv = vec!["leasesim".to_string()];
    argv.extend(args.iter().map(|s| s.to_string()));
    let code = leasesim_cli::run_cli(argv, &mut out, &mut err, &leasesim::Builder::stock());
    (
        code,
        String::from_utf8(out).unwrap(),
        String::from_utf8(err).unwrap(),
    )
}

#[test]
fn the_reference_holds_under_every_single_fault_at_w1_w2s_anchors() {
    let x = explore_with(&config("w1-w2", 1, Machines::reference(), 1));
    assert!(x.exhaustive(), "{}", x.claim());
    assert!(x.held(), "{}", x.claim());
    assert_eq!(x.covered(), x.space.total());
    assert_eq!(x.space.total(), 1 + x.space.candidates.len() as u64);
    // Every kind was placed, and the faults changed what happened: a walk that ran one
    // behaviour a thousand times would prove nothing.
    for k in Kind::ALL {
        assert!(
            x.space.candidates.iter().any(|c| c.kind == k),
            "no {} placed",
            k.name()
        );
    }
    assert!(x.distinct * 10 > x.covered() * 9, "{} distinct", x.distinct);
    for h in [
        leasesim::Hazard::Takeover,
        leasesim::Hazard::StaleCommitRejected,
        leasesim::Hazard::JeopardyEntered,
    ] {
        assert!(x.hazards.reached(h), "{} never reached", h.name());
    }
    // The durations straddle the stop margin, the heartbeat period and the lease.
    let lease = x.space.base.classes[0].lease_ns;
    assert!(x.space.durations.iter().any(|&d| d < lease));
    assert!(x.space.durations.iter().any(|&d| d > lease));
    assert!(x.claim().starts_with("no plan of at most 1 fault(s)"));
}

#[test]
fn v2_and_v3_are_found_on_w1_w2_with_minimal_plans_that_replay() {
    for (variant, invariant) in [
        (Variant::UnconditionalCommit, Invariant::NoStaleCommit),
        (Variant::ReceiverIgnoresFence, Invariant::NoDoubleEffect),
    ] {
        let m = Machines::variant(variant);
        let x = explore_with(&ExploreConfig {
            stop_at_first_violation: true,
            ..config("w1-w2", 1, m.clone(), 2)
        });
        assert!(!x.held());
        let broke = x.violations.get(invariant.name()).unwrap_or_else(|| {
            panic!("{} not found: {}", variant.name(), x.claim());
        });
        // Every plan numbered up to the first violation ran (and a chunk's worth past it at
        // most, those in flight when it was found).
        assert_eq!(Some(broke[0].plan), x.first_violation);
        assert!(x.covered() > broke[0].plan, "{}", x.claim());
        assert!(
            x.covered() <= broke[0].plan + 1 + x.threads as u64 * 64,
            "{}",
            x.claim()
        );
        assert!(x.claim().starts_with("NOT EXHAUSTIVE"), "{}", x.claim());
        let shrunk = x
            .shrunk(invariant.name(), &m, "leasesim replay")
            .unwrap()
            .unwrap();
        assert!(shrunk.replay.setup.faults.len() <= 2);
        assert_eq!(shrunk.invariant, invariant);
        let again = shrunk.replay.run_on(&m).unwrap();
        assert!(again.findings.iter().any(|f| f.invariant == invariant));
        assert_eq!(shrunk.replay.matches(&again), Some(true));
    }
}

/// The rows of the committed matrix: (variant, first-caught scenario, its seed).
fn matrix_rows() -> Vec<(String, String, u64)> {
    let text = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../reports/matrix.md"),
    )
    .unwrap();
    let mut rows = Vec::new();
    for line in text.lines() {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        // | `variant` | V1 | yes | invariants | `scenario` seed N | seeds | reproduce |
        if cells.len() < 7 || cells[3] != "yes" {
            continue;
        }
        let variant = cells[1].trim_matches('`').to_string();
        let (scenario, seed) = cells[5].split_once(" seed ").unwrap();
        rows.push((
            variant,
            scenario.trim_matches('`').to_string(),
            seed.parse().unwrap(),
        ));
    }
    rows
}

#[test]
fn every_variant_of_the_matrix_is_found_at_two_faults_on_its_first_caught_scenario() {
    let rows = matrix_rows();
    assert_eq!(rows.len(), 14, "{rows:?}");
    // The kinds that carry the stories (a pause, a message fault, a cut and an outage); the full
    // catalogue finds each too (docs/explore.md), at the cost of more plans.
    let kinds = Kind::parse_list("pause,message,partition,isolate").unwrap();
    let mut found = Vec::new();
    for (variant, scenario, seed) in &rows {
        let v = Variant::from_name(variant).unwrap();
        let c = ExploreConfig {
            kinds: kinds.clone(),
            stop_at_first_violation: true,
            allow_unsafe_timing: true,
            ..config(scenario, *seed, Machines::variant(v), 2)
        };
        let x = explore_with(&c);
        let needed = x
            .plans_needed()
            .unwrap_or_else(|| panic!("{variant} not found on {scenario}: {}", x.claim()));
        assert!(!x.violating.is_empty(), "{variant}: {}", x.claim());
        found.push(format!("{variant} {scenario} seed {seed}: {needed}"));
    }
    eprintln!("plans needed: {}", found.join("; "));
}

#[test]
fn a_pruned_pair_is_the_single_fault_run_it_is_counted_as() {
    let m = Machines::reference();
    let c = config("w1-w2", 1, m.clone(), 2);
    let space = explore::space(&c).unwrap();
    let n = space.candidates.len();
    let runs: Vec<_> = (0..n)
        .map(|i| run(&space.setup_of(1 + i as u64), 1, &m))
        .collect();
    let mut checked = 0;
    let mut kept = 0;
    for j in 1..n {
        for i in (0..j).step_by(7) {
            if checked >= 40 && kept >= 40 {
                break;
            }
            let a = &runs[i];
            if a.end == End::Done && !space.reaches(a, j) {
                if checked < 40 {
                    // Plan numbers: 1 + n + j(j-1)/2 + i.
                    let index = 1 + n as u64 + (j * (j - 1) / 2 + i) as u64;
                    assert_eq!(space.plan(index), vec![i, j]);
                    let pair = run(&space.setup_of(index), 1, &m);
                    assert_eq!(
                        pair.trace_hash(),
                        a.trace_hash(),
                        "{:?}",
                        space.labels(index)
                    );
                    checked += 1;
                }
            } else {
                kept += 1;
            }
        }
    }
    assert!(checked >= 40 && kept >= 40, "{checked} pruned, {kept} kept");
}

#[test]
fn shards_split_the_space_and_a_budget_says_what_ran() {
    let kinds = Kind::parse_list("pause,message").unwrap();
    let base = ExploreConfig {
        kinds,
        ..config("gc-pause-after-check", 0, Machines::reference(), 2)
    };
    let whole = explore_with(&base);
    assert!(whole.exhaustive() && whole.held(), "{}", whole.claim());
    let shards: Vec<Explored> = (1..=3)
        .map(|k| {
            explore_with(&ExploreConfig {
                shard: Some(Shard::new(k, 3).unwrap()),
                ..base.clone()
            })
        })
        .collect();
    let mut next = 0;
    for s in &shards {
        assert_eq!(s.share.start, next);
        next = s.share.end;
        assert!(!s.exhaustive());
        assert!(s.claim().starts_with("NOT EXHAUSTIVE"), "{}", s.claim());
    }
    assert_eq!(next, whole.space.total());
    let covered: u64 = shards.iter().map(|s| s.covered()).sum();
    let ran: u64 = shards.iter().map(|s| s.ran()).sum();
    assert_eq!(covered, whole.covered());
    assert_eq!(ran, whole.ran());
    let budget = explore_with(&ExploreConfig {
        budget: Some(50),
        ..base.clone()
    });
    assert_eq!(budget.covered(), 50);
    assert!(budget
        .claim()
        .contains(&format!("50 of the {} plans", whole.space.total())));
}

/// Asks to stop once some plans are covered, as Ctrl-C does.
struct StopAfter<'a>(&'a AtomicBool);

impl Progress for StopAfter<'_> {
    fn advanced(&self, _: u64, _: u64) {
        self.0.store(true, Ordering::Relaxed);
    }
}

#[test]
fn an_interrupted_exploration_claims_nothing() {
    let stop = AtomicBool::new(false);
    let c = config("w1-w2", 1, Machines::reference(), 2);
    let x = explore::explore(&c, &stop, &StopAfter(&stop)).unwrap();
    assert!(x.interrupted);
    assert!(x.covered() < x.space.total());
    assert!(!x.exhaustive());
    assert!(x.claim().starts_with("NOT EXHAUSTIVE"), "{}", x.claim());
}

#[test]
fn a_users_machines_explore_through_the_library() {
    // A user's worker: the reference with V6's switch (it keeps acting without a lease).
    let mine = Machines::new("eager-worker")
        .with_worker("eager-worker", |s: &WorkerSpec<'_>| {
            Worker::new(s.config.clone(), Variant::NoJeopardy.switches())
        })
        .known_bad();
    let x = explore_with(&ExploreConfig {
        stop_at_first_violation: true,
        ..config("late-tool-answer", 0, mine.clone(), 1)
    });
    assert!(
        x.violations.contains_key("quiescent-holder"),
        "{}",
        x.claim()
    );
    assert!(x.claim().contains("eager-worker"));
    let replay = x.replay(x.first_violation.unwrap(), &mine, "my-leasesim replay");
    assert_eq!(replay.machines.as_ref().unwrap().name, "eager-worker");
}

#[test]
fn the_command_line_explores_and_refuses_bad_input_in_one_line() {
    let dir = TempDir::new("explore-cli");
    let failures = dir.join("failures");
    let f = failures.to_str().unwrap();
    let (code, out, _) = cli(&[
        "explore",
        "w1-w2",
        "--faults",
        "1",
        "--seed",
        "1",
        "--variant",
        "unconditional-commit",
        "--kinds",
        "isolate,pause",
        "--failures-dir",
        f,
    ]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("VIOLATED no-stale-commit"), "{out}");
    assert!(out.contains("minimal plan"), "{out}");
    // Which fault of it the finding depends on, from a run without each.
    assert!(
        out.contains("what the finding depends on")
            && out.contains("needed: without it nothing breaks no-stale-commit"),
        "{out}"
    );
    let saved: Vec<_> = std::fs::read_dir(&failures)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        saved.iter().any(|n| n.ends_with("no-stale-commit.json")),
        "{saved:?}"
    );
    assert!(
        saved.iter().any(|n| n.ends_with("no-stale-commit.html")),
        "{saved:?}"
    );
    let (code, out, _) = cli(&[
        "explore",
        "w1-w2",
        "--faults",
        "1",
        "--seed",
        "1",
        "--kinds",
        "operator",
        "--format",
        "json",
        "--failures-dir",
        f,
    ]);
    assert_eq!(code, 0, "{out}");
    let doc: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(doc["exhaustive"], true);
    assert_eq!(doc["covered"], doc["space"]);
    for bad in [
        &["explore", "no-such-scenario", "--faults", "1"][..],
        &["explore", "w1-w2", "--faults", "0"],
        &["explore", "w1-w2", "--faults", "3"],
        &["explore", "w1-w2", "--faults", "99999999999999999999"],
        &["explore", "w1-w2", "--faults", "1", "--kinds", "meteor"],
        &[
            "explore",
            "w1-w2",
            "--faults",
            "1",
            "--kinds",
            "pause,pause",
        ],
        &["explore", "w1-w2", "--faults", "1", "--shard", "3/2"],
        &["explore", "w1-w2", "--faults", "1", "--budget", "0"],
        &["explore", "w1-w2", "--faults", "1", "--variant", "nope"],
        &["explore", "w1-w2"],
    ] {
        let (code, out, err) = cli(bad);
        assert_eq!(code, 2, "{bad:?}: {out}{err}");
        assert_eq!(err.trim().lines().count(), 1, "{bad:?}: {err}");
    }
}
