//! Snapshots (insta) of every named scenario's story: seed 1 on the reference, as
//! `leasesim run <scenario> --seed 1 --format story` prints it (the CLI's own code): the journal's
//! protocol events in order with their jobs, tokens, fences, keys and reasons, without times,
//! then the verdict, the invariants broken and the hazards reached. A change to what the protocol
//! decides shows up here as a short, reviewable diff; a change of latency that decides nothing
//! differently rewrites nothing.
//!
//! The files live in `tests/tests/snapshots/<scenario>.snap`. After an intended change:
//! `INSTA_UPDATE=always cargo test -p leasesim-tests --test snapshots` (or `cargo insta review`),
//! then read the diff. With `CI=true` a missing or different snapshot fails and nothing is
//! written. A snapshot no named scenario claims fails too (`no_snapshot_is_unreferenced`).

use leasesim::scenarios::{self, ScenarioDef};
use leasesim_tests::cli;
use std::collections::BTreeSet;
use std::path::PathBuf;

/// The seed every snapshot shows.
const SEED: u64 = 1;

/// The scenarios with a snapshot: every named one, not the swarm (whose point is that the seed
/// picks everything; its seed 1 is not a story worth pinning).
fn named() -> impl Iterator<Item = &'static ScenarioDef> {
    scenarios::ALL.iter().filter(|s| s.name != "swarm")
}

/// Checks one scenario against `snapshots/<name>.snap`.
fn check(name: &str) {
    let def = scenarios::find(name).unwrap_or_else(|| panic!("{name} is not a scenario"));
    let (code, story, err) = cli(&[
        "run",
        name,
        "--seed",
        &SEED.to_string(),
        "--format",
        "story",
    ]);
    assert_eq!(code, 0, "{name}: {err}");
    let mut settings = insta::Settings::clone_current();
    settings.set_prepend_module_to_snapshot(false);
    settings.set_omit_expression(true);
    settings.set_description(format!(
        "leasesim run {name} --seed {SEED} (reference): {}",
        def.story
    ));
    settings.bind(|| insta::assert_snapshot!(name, story));
}

/// One test per named scenario, so that every mismatch is reported (not only the first) and
/// the runs go in parallel. `every_named_scenario_has_a_snapshot_test` keeps this list equal to
/// the named scenarios.
macro_rules! snapshot_tests {
    ($($test:ident => $name:literal,)*) => {
        $(
            #[test]
            fn $test() {
                check($name);
            }
        )*

        /// The scenarios the tests above snapshot.
        const SNAPSHOTTED: &[&str] = &[$($name),*];
    };
}

snapshot_tests! {
    w1_w2 => "w1-w2",
    gc_pause_after_check => "gc-pause-after-check",
    late_tool_answer => "late-tool-answer",
    heartbeat_ack_lost => "heartbeat-ack-lost",
    coordinator_outage => "coordinator-outage",
    clock_skew_fast_worker => "clock-skew-fast-worker",
    clock_jump => "clock-jump",
    restart_same_name => "restart-same-name",
    duplicate_delivery => "duplicate-delivery",
    reordered_commit => "reordered-commit",
    operator_takeover => "operator-takeover",
    slow_but_healthy => "slow-but-healthy",
    stuck_tool_live_heartbeat => "stuck-tool-live-heartbeat",
    renewal_cap => "renewal-cap",
    retries => "retries",
    human_handoff => "human-handoff",
    admission_and_authorization => "admission-and-authorization",
    stages_and_checkpoints => "stages-and-checkpoints",
    late_grant_reply => "late-grant-reply",
}

fn snapshot_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join("snapshots")
}

#[test]
fn every_named_scenario_has_a_snapshot_test() {
    let named: BTreeSet<&str> = named().map(|s| &*s.name).collect();
    let tested: BTreeSet<&str> = SNAPSHOTTED.iter().copied().collect();
    assert_eq!(
        SNAPSHOTTED.len(),
        tested.len(),
        "a scenario is listed twice in snapshot_tests!"
    );
    let untested: Vec<&&str> = named.difference(&tested).collect();
    let unknown: Vec<&&str> = tested.difference(&named).collect();
    assert!(
        untested.is_empty(),
        "named scenarios without a snapshot test (add them to snapshot_tests! in {}): {untested:?}",
        file!()
    );
    assert!(
        unknown.is_empty(),
        "snapshot tests of scenarios that are not named scenarios: {unknown:?}"
    );
}

#[test]
fn every_named_scenario_has_a_snapshot_file() {
    let missing: Vec<String> = named()
        .map(|s| format!("{}.snap", s.name))
        .filter(|f| !snapshot_dir().join(f).is_file())
        .collect();
    assert!(
        missing.is_empty(),
        "named scenarios without a snapshot in {}: {missing:?}; create them with \
         INSTA_UPDATE=always cargo test -p leasesim-tests --test snapshots (the run that creates \
         them may still fail here: the files appear while this test looks; run it again)",
        snapshot_dir().display()
    );
}

#[test]
fn no_snapshot_is_unreferenced() {
    let expected: BTreeSet<String> = named().map(|s| format!("{}.snap", s.name)).collect();
    let dir = snapshot_dir();
    let entries = std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    let mut unreferenced = Vec::new();
    for entry in entries {
        let entry = entry.expect("a directory entry");
        let file = entry.file_name().to_string_lossy().into_owned();
        if !expected.contains(&file) {
            unreferenced.push(file);
        }
    }
    unreferenced.sort();
    assert!(
        unreferenced.is_empty(),
        "files in {} that belong to no named scenario (a renamed or removed scenario's \
         snapshot, or a pending `.snap.new` to review with `cargo insta review`): {unreferenced:?}",
        dir.display()
    );
}

#[test]
fn a_latency_change_that_decides_nothing_rewrites_no_story() {
    // One microsecond more on every message: every trace changes, no story does. The old
    // snapshots (microsecond timelines) were rewritten whole by any such change.
    for def in named() {
        let setup = def.build(SEED, leasesim_protocol::Variant::Reference);
        let mut slower = setup.clone();
        slower.net.latency_min_ns += 1_000;
        slower.net.latency_max_ns += 1_000;
        let (a, b) = (
            leasesim::run::run_setup(&setup, SEED),
            leasesim::run::run_setup(&slower, SEED),
        );
        assert_ne!(
            a.trace_hash(),
            b.trace_hash(),
            "{}: the change reached the run",
            def.name
        );
        assert_eq!(
            leasesim::story::story(&setup, &a).unwrap(),
            leasesim::story::story(&slower, &b).unwrap(),
            "{}",
            def.name
        );
    }
}
