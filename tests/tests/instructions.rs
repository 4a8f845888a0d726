//! `bench --instructions`: the instruction count of a seed, from two sweeps under callgrind.

use leasesim_tests::leasesim_bin;
use std::process::Command;

#[test]
fn the_instruction_count_of_a_seed_is_the_difference_of_two_counted_sweeps() {
    let out = Command::new(leasesim_bin())
        .args([
            "bench",
            "--instructions",
            "--instruction-seeds",
            "10",
            "--format",
            "json",
        ])
        .output()
        .expect("leasesim runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON document");
    let n = |v: &serde_json::Value| v.as_f64().expect("a number");
    let (lo, hi) = (n(&doc["instructions"][0]), n(&doc["instructions"][1]));
    let (elo, ehi) = (n(&doc["events"][0]), n(&doc["events"][1]));
    assert_eq!(doc["seeds"], serde_json::json!([10, 30]));
    assert!(hi > lo && lo > 0.0, "{doc}");
    // Per seed: the difference over the 20 seeds between the two sweeps.
    assert_eq!(n(&doc["instructions_per_seed"]), ((hi - lo) / 20.0).round());
    assert_eq!(
        n(&doc["instructions_per_event"]),
        ((hi - lo) / (ehi - elo)).round()
    );
    // A w1-w2 seed is tens of events (67 on average over many seeds).
    let events = n(&doc["events_per_seed"]);
    assert!((30.0..150.0).contains(&events), "{doc}");
    // Where a seed's instructions go: every part of leasesim a seed runs is found in the
    // profile (a source path not matched to its part would leave it at zero), and the parts add
    // up to the seed.
    let parts = doc["per_seed_by_part"].as_array().expect("a list of parts");
    let of = |name: &str| {
        parts
            .iter()
            .find(|p| p["part"].as_str().is_some_and(|p| p.starts_with(name)))
            .map(|p| n(&p["instructions"]))
            .unwrap_or_else(|| panic!("no part {name} in {doc}"))
    };
    for part in [
        "simulator",
        "fault-plan director",
        "nodes' adapters",
        "protocol machines",
        "checkers",
        "scenario setup",
        "random streams",
    ] {
        assert!(of(part) > 0.0, "{part}: {doc}");
    }
    let sum: f64 = parts.iter().map(|p| n(&p["instructions"])).sum();
    let per_seed = n(&doc["instructions_per_seed"]);
    assert!(
        (sum - per_seed).abs() <= parts.len() as f64,
        "the parts add up to {sum}, a seed to {per_seed}: {doc}"
    );
    // The simulator is a share of a seed, not all of it.
    assert!(of("simulator") < per_seed * 0.8, "{doc}");
}

#[test]
fn without_valgrind_the_count_is_refused_in_one_line() {
    let out = Command::new(leasesim_bin())
        .args(["bench", "--instructions"])
        .env("PATH", "/nonexistent")
        .output()
        .expect("leasesim runs");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("valgrind"), "{err}");
}

/// A SQL file whose `claim` uses `n` distinct parameters (none of them the contract's).
fn claim_with_parameters(n: usize) -> String {
    let mut text = String::from(
        "-- name: schema\ncreate table t (id int);\n-- name: enqueue\ninsert into t values (:job_id);\n\
         -- name: heartbeat\nupdate t set id = id where id = :job_id returning now() as lease_until;\n\
         -- name: commit\nupdate t set id = id where id = :job_id;\n\
         -- name: fail\nupdate t set id = id where id = :job_id returning 'failed' as state;\n\
         -- name: claim\nselect 1 as id, 2 as fencing_token, now() as lease_until where :worker_id = 'w'",
    );
    for i in 0..n {
        text.push_str(&format!(" and :p{i} = 1"));
        if i % 10 == 9 {
            text.push('\n');
        }
    }
    text.push_str(";\n");
    text
}

/// The instructions `sql check` spends parsing and checking `file` (its output not counted).
fn check_instructions(file: &std::path::Path) -> u64 {
    let out = Command::new("valgrind")
        .args([
            "--tool=callgrind",
            "--callgrind-out-file=/dev/null",
            "--toggle-collect=*SqlFile*parse*",
            "--toggle-collect=*contract*check*",
        ])
        .arg(leasesim_bin())
        .args(["sql", "check"])
        .arg(file)
        .output()
        .expect("valgrind runs");
    assert_eq!(out.status.code(), Some(2), "the file breaks the contract");
    let err = String::from_utf8_lossy(&out.stderr);
    let collected = err
        .lines()
        .find_map(|l| l.split("Collected : ").nth(1))
        .unwrap_or_else(|| panic!("no count from callgrind: {err}"));
    collected.trim().parse().expect("a count")
}

#[test]
fn sql_check_grows_linearly_with_a_files_parameters() {
    let tmp = leasesim_tests::TempDir::new("sql-scaling");
    let (small, large) = (4_000, 16_000);
    let mut counts = Vec::new();
    for n in [small, large] {
        let path = tmp.join(&format!("p{n}.sql"));
        std::fs::write(&path, claim_with_parameters(n)).unwrap();
        counts.push(check_instructions(&path));
    }
    let ratio = counts[1] as f64 / counts[0] as f64;
    println!(
        "sql check: {} instructions for {small} parameters, {} for {large}: x{ratio:.2} for x4",
        counts[0], counts[1]
    );
    // Linear work is about 4 times as much for 4 times the parameters; quadratic work, 16.
    assert!(
        (3.0..6.0).contains(&ratio),
        "x{ratio:.2} for 4 times the parameters: {counts:?}"
    );
}
