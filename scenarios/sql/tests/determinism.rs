//! A run on the SQL coordinator is a pure function of (seed, config, SQL file): the same seed
//! gives the same trace hash on a fresh database and on one that ran other seeds before, and
//! on a second server.

use leasesim::{run, scenarios, Verdict};
use leasesim_protocol::{Event, StoreEvent};
use leasesim_sim::EventKind;
use leasesim_sql::{Database, SqlQueue};
use std::path::Path;
use std::sync::Arc;

fn queue(db: &Database, file: &str) -> Arc<SqlQueue> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("queries")
        .join(file);
    SqlQueue::open_path(&path, db).expect("the shipped file opens")
}

/// Trace hash and verdict of `scenario` with `seed` on `queue`.
fn hash(queue: &Arc<SqlQueue>, scenario: &str, seed: u64) -> (u64, Verdict, usize) {
    let machines = queue.machines();
    let def = scenarios::find(scenario).expect("a scenario");
    let setup = def.build(seed, machines.setup_variant());
    let r = run(&setup, seed, &machines);
    assert!(r.machine_fault.is_none(), "{:?}", r.machine_fault);
    let statements = r
        .trace
        .iter()
        .filter(|e| {
            matches!(
                e.kind,
                EventKind::Note {
                    note: Event::Store(StoreEvent::Ran { .. })
                }
            )
        })
        .count();
    (r.trace_hash(), r.verdict(), statements)
}

#[test]
fn a_seed_hashes_the_same_on_a_fresh_and_on_a_used_database() {
    let cases = [
        ("w1-w2", 7),
        ("coordinator-outage", 3),
        ("operator-takeover", 5),
        ("retries", 2),
    ];
    let used = Database::throwaway().expect("a throwaway PostgreSQL starts");
    let used_queue = queue(&used, "seed-postgres.sql");
    // The used database runs other seeds of every case first, so its tables, sequences and
    // tokens have been written to before.
    for (scenario, seed) in cases {
        for other in 0..4 {
            hash(&used_queue, scenario, seed + 100 + other);
        }
    }
    let fresh = Database::throwaway().expect("a second throwaway PostgreSQL starts");
    let fresh_queue = queue(&fresh, "seed-postgres.sql");
    for (scenario, seed) in cases {
        let (on_used, verdict, statements) = hash(&used_queue, scenario, seed);
        let (on_fresh, _, _) = hash(&fresh_queue, scenario, seed);
        let (again, _, _) = hash(&used_queue, scenario, seed);
        assert!(statements > 0, "{scenario} seed {seed} ran no statement");
        assert_eq!(verdict, Verdict::Held, "{scenario} seed {seed}");
        assert_eq!(
            on_used, on_fresh,
            "{scenario} seed {seed}: a used database and a fresh one give different traces"
        );
        assert_eq!(on_used, again, "{scenario} seed {seed}: a rerun differs");
    }
}

#[test]
fn a_bad_file_fails_the_same_seed_the_same_way_twice() {
    let db = Database::throwaway().expect("a throwaway PostgreSQL starts");
    let q = queue(&db, "v2-naive-commit.sql");
    let first = hash(&q, "clock-skew-fast-worker", 0);
    assert!(
        matches!(first.1, Verdict::Violated),
        "the naive commit is caught: {:?}",
        first.1
    );
    assert_eq!(first, hash(&q, "clock-skew-fast-worker", 0));
    // The reference file on the same server runs the same seed to another trace: the hash is
    // of the run, not of the scenario alone.
    let reference = queue(&db, "seed-postgres.sql");
    assert_ne!(first.0, hash(&reference, "clock-skew-fast-worker", 0).0);
}
