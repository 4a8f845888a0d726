//! Concurrent transactions: operations of several statements run step by step, each worker's
//! on its own connection, so a race in SQL is found. The non-atomic claim (V10) is caught on a
//! scenario where workers race for jobs and by trying every interleaving of two claims; the
//! article's claim and a locking claim hold under every isolation level; two transactions that
//! deadlock end with the deadlock journaled; the same seed gives the same trace.

use leasesim::sweep::{self, SeedRange, SweepConfig};
use leasesim::{run, scenarios, Verdict};
use leasesim_protocol::{
    ClassId, ClassSpec, CoordinatorMachine, Event, JobId, JobSpec, Msg, Output, StoreEvent,
    StoreFailure, WorkerName, SECOND_NS,
};
use leasesim_sim::EventKind;
use leasesim_sql::{Database, Isolation, SqlQueue};
use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

fn queue(db: &Database, file: &str, isolation: Isolation) -> Arc<SqlQueue> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("queries")
        .join(file);
    SqlQueue::open_path_with(&path, db, isolation).expect("the shipped file opens")
}

/// A sweep of `scenario` seeds `0..seeds` on `queue`; (failing seeds, first failure's
/// invariants, statement waits over every run).
fn sweep_of(queue: &Arc<SqlQueue>, scenario: &str, seeds: u64) -> (u64, Vec<String>) {
    let def = scenarios::find(scenario).expect("a scenario");
    let config = SweepConfig {
        threads: 2,
        ..SweepConfig::new(
            vec![def],
            SeedRange {
                start: 0,
                end: seeds,
            },
            queue.machines(),
        )
    };
    let report = sweep::sweep(&config, &AtomicBool::new(false), &sweep::Quiet);
    let o = &report.scenarios[0];
    assert_eq!(o.unfinished, 0, "{scenario}: a run did not end");
    assert_eq!(o.not_expressible, 0, "{scenario} is expressible");
    let first = o
        .failures
        .first()
        .map(|f| f.invariants.iter().map(|i| i.to_string()).collect())
        .unwrap_or_default();
    (o.failing, first)
}

#[test]
fn the_non_atomic_claim_is_caught_under_read_committed_and_refused_above_it() {
    let db = Database::throwaway().expect("a throwaway PostgreSQL starts");
    // `retries`: several workers race for the same jobs, and a failed job is claimed again.
    let rc = queue(&db, "v10-select-then-update.sql", Isolation::ReadCommitted);
    let (failing, invariants) = sweep_of(&rc, "retries", 100);
    assert!(failing > 0, "V10 in SQL held on 100 seeds of retries");
    assert!(
        invariants.iter().any(|i| i == "single-valid-lease"),
        "caught by {invariants:?}"
    );
    // Under repeatable read and serializable the second claim is aborted instead.
    for level in [Isolation::RepeatableRead, Isolation::Serializable] {
        let q = queue(&db, "v10-select-then-update.sql", level);
        let (failing, invariants) = sweep_of(&q, "retries", 100);
        assert_eq!(failing, 0, "{level:?}: {invariants:?}");
    }
}

#[test]
fn the_articles_claim_and_a_locking_claim_hold_under_every_isolation_level() {
    let db = Database::throwaway().expect("a throwaway PostgreSQL starts");
    for level in Isolation::ALL {
        for file in ["seed-postgres.sql", "claim-for-update.sql"] {
            let q = queue(&db, file, level);
            for scenario in ["retries", "coordinator-outage"] {
                let (failing, invariants) = sweep_of(&q, scenario, 60);
                assert_eq!(
                    failing, 0,
                    "{file} at {level:?} on {scenario}: {invariants:?}"
                );
            }
        }
    }
    // The locking claim is safe by waiting: its runs show waits on locks.
    let q = queue(&db, "claim-for-update.sql", Isolation::ReadCommitted);
    let machines = q.machines();
    let def = scenarios::find("coordinator-outage").unwrap();
    let waits: usize = (0..60)
        .map(|seed| {
            let r = run(&def.build(seed, machines.setup_variant()), seed, &machines);
            r.trace
                .iter()
                .filter(|e| {
                    matches!(
                        e.kind,
                        EventKind::Note {
                            note: Event::Store(StoreEvent::Waited { .. })
                        }
                    )
                })
                .count()
        })
        .sum();
    assert!(waits > 0, "no statement of the locking claim ever waited");
}

#[test]
fn every_interleaving_of_two_claims_is_tried() {
    let db = Database::throwaway().expect("a throwaway PostgreSQL starts");
    let v10 = queue(&db, "v10-select-then-update.sql", Isolation::ReadCommitted);
    let e = leasesim_sql::explore::explore(&v10, 2, 1).expect("explores");
    // begin, select, update, commit: 8! / (4! 4!) orders.
    assert_eq!(e.tried, 70);
    assert!(e.violating > 0, "{e:?}");
    assert!(e
        .outcomes
        .keys()
        .any(|o| o.contains("W1 job0") && o.contains("W2 job0")));
    for (file, level) in [
        ("claim-for-update.sql", Isolation::ReadCommitted),
        ("seed-postgres.sql", Isolation::ReadCommitted),
        ("v10-select-then-update.sql", Isolation::Serializable),
    ] {
        let q = queue(&db, file, level);
        let e = leasesim_sql::explore::explore(&q, 2, 1).expect("explores");
        assert_eq!(e.violating, 0, "{file} at {level:?}: {e:?}");
        assert!(e.tried >= 2);
        // Each order ends with exactly one holder (or a refused claim), never none at all.
        assert!(
            e.outcomes.keys().all(|o| o.contains("job0")),
            "{file}: {:?}",
            e.outcomes
        );
    }
}

/// A heartbeat that locks its own job, then every other job: two holders renewing at once
/// lock in opposite orders.
const DEADLOCKING: &str = "
-- name: schema
create table jobs (id uuid primary key, state text not null, owner_id text, lease_until timestamptz, fencing_token bigint not null default 0, idempotency_key text, payload jsonb);
-- name: enqueue
insert into jobs (id, state, idempotency_key, payload) values (:job_id, 'queued', :idempotency_key, :payload);
-- name: claim
with c as (select id from jobs where state = 'queued' order by id for update skip locked limit 1)
update jobs j set state = 'running', owner_id = :worker_id, lease_until = now() + interval '90 seconds', fencing_token = fencing_token + 1
from c where j.id = c.id returning j.id, j.fencing_token, j.lease_until;
-- name: heartbeat
begin;
select id from jobs where id = :job_id for update;
select id as other from jobs where id <> :job_id order by id for update;
update jobs set lease_until = now() + interval '90 seconds'
where id = :job_id and owner_id = :worker_id and fencing_token = :fencing_token and lease_until > now()
returning lease_until;
commit;
-- name: commit
update jobs set state = 'succeeded' where id = :job_id and owner_id = :worker_id and fencing_token = :fencing_token and lease_until > now();
-- name: fail
update jobs set state = 'failed' where id = :job_id and owner_id = :worker_id and fencing_token = :fencing_token returning state;
";

#[test]
fn two_transactions_that_deadlock_end_with_the_deadlock_journaled() {
    let db = Database::throwaway().expect("a throwaway PostgreSQL starts");
    let file = leasesim_sql::file::SqlFile::parse("deadlocking.sql", DEADLOCKING).expect("parses");
    let q = SqlQueue::open(file, &db).expect("opens");
    let classes = vec![ClassSpec {
        lease_ns: 90 * SECOND_NS,
        max_attempts: 3,
        renewal_cap_ns: u64::MAX / 4,
        capacity: None,
        retry_backoff_ns: 0,
    }];
    let jobs: Vec<JobSpec> = (0..2)
        .map(|i| JobSpec {
            class: ClassId(0),
            payload_hash: i,
            payload_lease_ns: None,
        })
        .collect();
    let mut deadlocks = 0;
    let mut renewed = 0;
    // The seed draws the gaps between statements; some orders deadlock, and every one ends.
    for seed in 0..40 {
        let mut c =
            leasesim_sql::coordinator::SqlCoordinator::new(q.clone(), &classes, &jobs, seed);
        let mut out = Vec::new();
        let drain = |c: &mut dyn CoordinatorMachine, out: &mut Vec<Output>| {
            while let Some(o) = c.poll_output() {
                out.push(o);
            }
        };
        for w in 1..=2u32 {
            c.handle_message(
                0,
                w,
                Msg::Claim {
                    req: 1,
                    worker: WorkerName(w),
                    client_now: 0,
                },
            );
            drain(&mut c, &mut out);
        }
        let t = SECOND_NS;
        for (w, job) in [(1u32, 0u32), (2, 1)] {
            c.handle_message(
                t,
                w,
                Msg::Heartbeat {
                    req: 2,
                    job: JobId(job),
                    worker: WorkerName(w),
                    token: leasesim_protocol::Token(1),
                    client_now: t,
                    in_jeopardy: false,
                    effects_attempted: 0,
                },
            );
            drain(&mut c, &mut out);
        }
        // Time runs until nothing is due: a bounded number of wake-ups.
        for _ in 0..100 {
            let Some(at) = c.poll_timeout() else { break };
            c.handle_timeout(at);
            drain(&mut c, &mut out);
        }
        assert!(c.poll_timeout().is_none(), "seed {seed}: a step never ran");
        let answers = out
            .iter()
            .filter(|o| {
                matches!(
                    o,
                    Output::Send {
                        msg: Msg::HeartbeatOk { .. } | Msg::HeartbeatRejected { .. },
                        ..
                    }
                )
            })
            .count();
        assert_eq!(answers, 2, "seed {seed}: both heartbeats are answered");
        let failed = out.iter().any(|o| {
            matches!(
                o,
                Output::Journal(Event::Store(StoreEvent::Failed {
                    failure: StoreFailure::Deadlock,
                    ..
                }))
            )
        });
        if failed {
            deadlocks += 1;
            assert!(
                out.iter().any(|o| matches!(
                    o,
                    Output::Journal(Event::HeartbeatRefused {
                        reason: leasesim_protocol::RefusalReason::Aborted,
                        ..
                    })
                )),
                "seed {seed}: the deadlock's victim is refused as aborted"
            );
        }
        renewed += out
            .iter()
            .filter(|o| {
                matches!(
                    o,
                    Output::Send {
                        msg: Msg::HeartbeatOk { .. },
                        ..
                    }
                )
            })
            .count();
    }
    assert!(deadlocks > 0, "no seed of 40 deadlocked");
    assert!(renewed > 0, "no heartbeat went through");
}

#[test]
fn a_seed_gives_the_same_trace_twice_on_a_fresh_database() {
    let hashes = |db: &Database| -> Vec<(u64, Verdict)> {
        let v10 = queue(db, "v10-select-then-update.sql", Isolation::ReadCommitted);
        let locking = queue(db, "claim-for-update.sql", Isolation::ReadCommitted);
        let mut out = Vec::new();
        for (q, scenario) in [(&v10, "retries"), (&locking, "coordinator-outage")] {
            let machines = q.machines();
            let def = scenarios::find(scenario).unwrap();
            for seed in 0..12 {
                let r = run(&def.build(seed, machines.setup_variant()), seed, &machines);
                out.push((r.trace_hash(), r.verdict()));
            }
        }
        out
    };
    let first = hashes(&Database::throwaway().expect("a server"));
    let second = hashes(&Database::throwaway().expect("another server"));
    assert_eq!(first, second);
    assert!(
        first.iter().any(|(_, v)| *v == Verdict::Violated),
        "the comparison includes failing runs"
    );
}
