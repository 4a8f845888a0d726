//! Conformance: the same random sequence of coordinator inputs and clock advances, given to the
//! reference coordinator machine and to the SQL coordinator running `seed-postgres.sql`, gets
//! the same answers: grant or not and to whom, token, lease length (so lease end), renewal or
//! refusal, commit accepted or refused, operator action applied or not, and the same "every job
//! ended". A mapping bug in the adapter (a parameter bound to the wrong value, a row count read
//! the wrong way, a time scaled or rounded wrongly) shows as a different answer here.
//!
//! Times are whole microseconds (PostgreSQL's `timestamptz` resolution) and the class's lease is
//! the SQL's 90 seconds, so both sides compute the same instants; advances include the exact
//! lease length, so expiry is compared at its boundary too.

use leasesim_protocol::{
    ClassId, ClassSpec, Coordinator, CoordinatorMachine, ErrorCode, JobId, JobSpec, Msg, Nanos,
    OperatorAction, Outcome, Output, Switches, Token, WorkerName, SECOND_NS,
};
use leasesim_sql::{Database, SqlQueue};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

const MICRO: Nanos = 1_000;
const WORKERS: u32 = 3;
const JOBS: u32 = 2;

/// One input to both coordinators.
#[derive(Clone, Debug)]
enum Op {
    /// The clock moves forward.
    Advance(Nanos),
    Claim {
        worker: u32,
    },
    /// `worker` 0: the job's current owner. `token`: 0 = the job's current token, 1 = one
    /// below it, 2 = one above it.
    Heartbeat {
        worker: u32,
        job: u32,
        token: u8,
    },
    Commit {
        worker: u32,
        job: u32,
        token: u8,
        outcome: Outcome,
    },
    Operator {
        job: u32,
        action: OperatorAction,
    },
}

fn advance() -> impl Strategy<Value = Nanos> {
    prop_oneof![
        Just(0),
        Just(MICRO),
        Just(30 * SECOND_NS),
        Just(45 * SECOND_NS),
        Just(90 * SECOND_NS),
        Just(90 * SECOND_NS - MICRO),
        Just(90 * SECOND_NS + MICRO),
        (1..200_000_000u64).prop_map(|us| us * MICRO),
    ]
}

fn outcome() -> impl Strategy<Value = Outcome> {
    prop_oneof![
        3 => any::<u64>().prop_map(|result| Outcome::Success { result }),
        1 => any::<bool>().prop_map(|retryable| Outcome::Failure {
            error: ErrorCode::ToolFailed,
            retryable,
        }),
        1 => Just(Outcome::Failure {
            error: ErrorCode::Validation,
            retryable: false,
        }),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    let w = 1..=WORKERS;
    // 0: the job's current owner (as the reference knows it), so renewals and commits of the
    // holder are as common as those of strangers.
    let sender = || prop_oneof![2 => Just(0u32), 1 => 1..=WORKERS];
    let j = 0..JOBS;
    prop_oneof![
        4 => advance().prop_map(Op::Advance),
        3 => w.clone().prop_map(|worker| Op::Claim { worker }),
        4 => (sender(), j.clone(), 0..3u8)
            .prop_map(|(worker, job, token)| Op::Heartbeat { worker, job, token }),
        3 => (sender(), j.clone(), 0..3u8, outcome())
            .prop_map(|(worker, job, token, outcome)| Op::Commit { worker, job, token, outcome }),
        1 => (j.clone(), prop_oneof![
            Just(OperatorAction::Revoke),
            Just(OperatorAction::Cancel),
            w.prop_map(|to| OperatorAction::Takeover { to: WorkerName(to) }),
        ])
            .prop_map(|(job, action)| Op::Operator { job, action }),
    ]
}

fn classes() -> Vec<ClassSpec> {
    vec![ClassSpec {
        lease_ns: 90 * SECOND_NS,
        max_attempts: 3,
        renewal_cap_ns: Nanos::MAX / 4,
        capacity: None,
        retry_backoff_ns: 0,
    }]
}

fn jobs() -> Vec<JobSpec> {
    (0..JOBS)
        .map(|i| JobSpec {
            class: ClassId(0),
            payload_hash: 0x1234 + u64::from(i),
            payload_lease_ns: None,
        })
        .collect()
}

/// The answers to one input: every message sent, and whether every job has ended.
fn answers(c: &mut dyn CoordinatorMachine) -> Vec<String> {
    let mut out = Vec::new();
    while let Some(o) = c.poll_output() {
        if let Output::Send { to, msg } = o {
            out.push(format!("{to:?} {msg:?}"));
        }
    }
    out.push(format!("all_terminal={}", c.all_terminal()));
    out
}

/// Runs `ops` on both coordinators; the first input whose answers differ fails the case.
/// Every answer is added to `seen`, to show what the sequences exercised.
fn compare(
    queue: &Arc<SqlQueue>,
    ops: &[Op],
    seen: &RefCell<BTreeMap<String, u64>>,
) -> Result<(), TestCaseError> {
    let mut reference = Coordinator::new(classes(), &jobs(), Switches::default());
    let mut sql =
        leasesim_sql::coordinator::SqlCoordinator::new(queue.clone(), &classes(), &jobs(), 0);
    // The current token of each job, as the reference granted it, for stale and future tokens.
    let mut tokens = vec![0u64; JOBS as usize];
    let mut now: Nanos = 0;
    for (i, op) in ops.iter().enumerate() {
        let req = i as u64 + 1;
        let op = &match op {
            Op::Heartbeat {
                worker: 0,
                job,
                token,
            }
            | Op::Commit {
                worker: 0,
                job,
                token,
                ..
            } => {
                let owner = reference.jobs()[*job as usize].owner.map_or(1, |w| w.0);
                match op {
                    Op::Commit { outcome, .. } => Op::Commit {
                        worker: owner,
                        job: *job,
                        token: *token,
                        outcome: *outcome,
                    },
                    _ => Op::Heartbeat {
                        worker: owner,
                        job: *job,
                        token: *token,
                    },
                }
            }
            other => other.clone(),
        };
        let token = |job: u32, t: u8, tokens: &[u64]| {
            let cur = tokens[job as usize];
            Token(match t {
                0 => cur,
                1 => cur.saturating_sub(1),
                _ => cur + 1,
            })
        };
        let msg = match op {
            Op::Advance(dt) => {
                now += dt;
                reference.handle_timeout(now);
                sql.handle_timeout(now);
                None
            }
            Op::Claim { worker } => Some(Msg::Claim {
                req,
                worker: WorkerName(*worker),
                client_now: now,
            }),
            Op::Heartbeat {
                worker,
                job,
                token: t,
            } => Some(Msg::Heartbeat {
                req,
                job: JobId(*job),
                worker: WorkerName(*worker),
                token: token(*job, *t, &tokens),
                client_now: now,
                in_jeopardy: false,
                effects_attempted: 0,
            }),
            Op::Commit {
                worker,
                job,
                token: t,
                outcome,
            } => Some(Msg::Commit {
                req,
                job: JobId(*job),
                worker: WorkerName(*worker),
                token: token(*job, *t, &tokens),
                outcome: *outcome,
                client_now: now,
            }),
            Op::Operator { job, action } => Some(Msg::Operator {
                req,
                job: JobId(*job),
                action: *action,
            }),
        };
        let from = match op {
            Op::Claim { worker } | Op::Heartbeat { worker, .. } | Op::Commit { worker, .. } => {
                *worker
            }
            _ => 100,
        };
        if let Some(msg) = msg {
            reference.handle_message(now, from, msg);
            sql.handle_message(now, from, msg);
        }
        let a = answers(&mut reference);
        let b = answers(&mut sql);
        for answer in &a {
            let kind = answer
                .split_once(' ')
                .map_or(answer.as_str(), |(_, m)| m)
                .split([' ', '{'])
                .next()
                .unwrap_or("")
                .to_string();
            let kind = match answer.contains("applied: true") {
                true => format!("{kind} applied"),
                false => kind,
            };
            *seen.borrow_mut().entry(kind).or_default() += 1;
        }
        if a.iter().any(|m| m.contains("ClaimGranted")) && tokens.iter().any(|&t| t > 0) {
            let retaken = ops[..i]
                .iter()
                .any(|o| matches!(o, Op::Advance(dt) if *dt >= 90 * SECOND_NS));
            if retaken {
                *seen
                    .borrow_mut()
                    .entry("ClaimGranted after an expiry".into())
                    .or_default() += 1;
            }
        }
        for j in 0..JOBS {
            tokens[j as usize] = reference.jobs()[j as usize].token.0;
        }
        prop_assert_eq!(
            &a,
            &b,
            "input {} of {} ({:?}) at {} ns: reference (left) and SQL (right) answer differently",
            i + 1,
            ops.len(),
            op,
            now
        );
    }
    Ok(())
}

fn queue(db: &Database) -> Arc<SqlQueue> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("queries/seed-postgres.sql");
    SqlQueue::open_path(&path, db).expect("seed-postgres.sql opens")
}

#[test]
fn seed_postgres_answers_as_the_reference_coordinator() {
    let db = Database::throwaway().expect("a throwaway PostgreSQL starts");
    let queue = queue(&db);
    let mut runner = TestRunner::new(Config {
        cases: 1000,
        failure_persistence: None,
        ..Config::default()
    });
    let seen = RefCell::new(BTreeMap::new());
    let result = runner.run(&prop::collection::vec(op(), 1..40), |ops| {
        compare(&queue, &ops, &seen)
    });
    if let Err(e) = result {
        panic!("{e}");
    }
    // The sequences reach every kind of answer, each many times: a comparison of nothing but
    // refusals would pass for any adapter.
    let seen = seen.into_inner();
    eprintln!("answers compared: {seen:?}");
    for kind in [
        "ClaimGranted",
        "ClaimGranted after an expiry",
        "ClaimEmpty",
        "HeartbeatOk",
        "HeartbeatRejected",
        "CommitAccepted",
        "CommitRejected",
        "OperatorDone",
        "OperatorDone applied",
        "all_terminal=true",
    ] {
        let n = seen.get(kind).copied().unwrap_or(0);
        assert!(
            n >= 50,
            "only {n} answers `{kind}` over 1,000 sequences: {seen:?}"
        );
    }
}

/// The comparison is able to fail: a coordinator that differs from the reference in one
/// `where` clause (the naive final update, V2) is told apart on some generated sequence.
#[test]
fn a_file_that_differs_in_one_clause_is_told_apart() {
    let db = Database::throwaway().expect("a throwaway PostgreSQL starts");
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("queries/v2-naive-commit.sql");
    let queue = SqlQueue::open_path(&path, &db).expect("v2-naive-commit.sql opens");
    let mut runner = TestRunner::new(Config {
        cases: 1000,
        failure_persistence: None,
        ..Config::default()
    });
    let seen = RefCell::new(BTreeMap::new());
    let result = runner.run(&prop::collection::vec(op(), 1..40), |ops| {
        compare(&queue, &ops, &seen)
    });
    let err = result.expect_err("the naive commit answers as the reference on every sequence");
    assert!(
        err.to_string().contains("Commit"),
        "the difference found is not at a commit: {err}"
    );
}
