//! Regressions, in the style of a postmortem: each entry is a replay file under
//! `tests/regressions/` plus one line (its `note`) on the bug it caught. The replay must still
//! end as it did when the bug was fixed: the reference entries hold and end by themselves; the
//! known-bad entries still break the same invariants.

use leasesim::replay::Replay;
use leasesim::run::Verdict;
use leasesim_sim::End;
use std::path::PathBuf;

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("regressions")
}

fn check(file: &str) {
    let replay = Replay::load(&dir().join(file)).unwrap_or_else(|e| panic!("{e}"));
    let note = replay.note.as_deref().unwrap_or("");
    assert!(
        !note.is_empty(),
        "{file}: every regression says what bug it caught"
    );
    let expect = replay
        .expect
        .as_ref()
        .unwrap_or_else(|| panic!("{file}: a regression records what it expects"));
    let r = replay.run();
    assert_eq!(
        r.verdict(),
        expect.verdict,
        "{file} ({note}): {:?}",
        r.findings
    );
    let mut broken: Vec<String> = Vec::new();
    for f in &r.findings {
        let name = f.invariant.name().to_string();
        if !broken.contains(&name) {
            broken.push(name);
        }
    }
    assert_eq!(broken, expect.invariants, "{file} ({note})");
    if r.verdict() == Verdict::Held {
        assert_eq!(
            r.end,
            End::Done,
            "{file} ({note}): the run must end by itself"
        );
    }
}

// postmortem: a run ended with W1's stale write still in flight, so I2 never saw it.
#[test]
fn gc_pause_stale_write_in_flight() {
    check("gc-pause-stale-write-in-flight.json");
}

// postmortem: a duplicated commit's refusal overtook its acceptance; the worker journaled a
// refusal of an accepted result.
#[test]
fn duplicate_commit_journaled_as_refused() {
    check("duplicate-commit-journaled-as-refused.json");
}

// postmortem: a retried commit after a lost acceptance was refused once another attempt had
// finished the job.
#[test]
fn swarm_retried_commit_after_lost_ack() {
    check("swarm-retried-commit-after-lost-ack.json");
}

// postmortem: the checker's model took an operator takeover's epoch too early (a false I3).
#[test]
fn swarm_operator_takeover_of_queued_job() {
    check("swarm-operator-takeover-of-queued-job.json");
}

// postmortem: an anchored pause that first matched after healing held messages forever.
#[test]
fn swarm_anchored_pause_after_heal() {
    check("swarm-anchored-pause-after-heal.json");
}

// postmortem: the W1/W2 stale commit of V2, shrunk to the two faults that matter.
#[test]
fn w1_w2_stale_commit_shrunk() {
    check("w1-w2-stale-commit.shrunk.json");
}

// postmortem: a checkpoint's refusal overtook its attempt's accepted commit (a false loss).
#[test]
fn swarm_checkpoint_refusal_after_accepted_commit() {
    check("swarm-checkpoint-refusal-after-accepted-commit.json");
}

// postmortem: a checkpoint kept the commit's retry timer; every worker stuck, jobs never ended.
#[test]
fn swarm_commit_retry_timer_taken_by_checkpoint() {
    check("swarm-commit-retry-timer-taken-by-checkpoint.json");
}

// postmortem: a second, different commit of one attempt was refused after the first was accepted.
#[test]
fn swarm_second_commit_of_one_attempt() {
    check("swarm-second-commit-of-one-attempt.json");
}

#[test]
fn every_regression_file_has_a_test() {
    let src = std::fs::read_to_string(
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/regressions.rs"),
    )
    .expect("this file");
    for entry in std::fs::read_dir(dir()).expect("the regressions folder") {
        let name = entry
            .expect("an entry")
            .file_name()
            .to_string_lossy()
            .to_string();
        assert!(
            src.contains(&format!("check(\"{name}\")")),
            "{name} has no test"
        );
    }
}
