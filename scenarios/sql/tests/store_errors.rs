//! A server error is a value that names its statement, on every path a statement runs by: a
//! claim of several statements that finds no job commits its transaction, and when the server
//! refuses that commit the claim ends as a store error naming `claim` (in a run, in a
//! synchronous run of its steps, in `sql explore`), never as a silent "no job" that the run
//! would only see as work that never finished.

use leasesim::{run, scenarios};
use leasesim_sql::db::Conn;
use leasesim_sql::file::SqlFile;
use leasesim_sql::{time, Database, SqlQueue};
use std::path::Path;

/// claim-for-update.sql, where a claim that finds nothing to take records it in a table whose
/// deferred trigger refuses every row at commit.
fn refusing_empty_claims() -> SqlFile {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("queries/claim-for-update.sql");
    let text = std::fs::read_to_string(path).expect("the shipped file");
    let text = text.replacen(
        "-- name: enqueue",
        "create table empty_claims (at timestamptz not null);\n\
         create function refuse_empty_claim() returns trigger language plpgsql as $$\n\
         begin raise exception 'an empty claim is refused at commit'; end $$;\n\
         create constraint trigger refuse_empty_claim after insert on empty_claims\n\
         initially deferred for each row execute function refuse_empty_claim();\n\n\
         -- name: enqueue",
        1,
    );
    let text = text.replacen(
        "begin;\nselect id",
        "begin;\n\
         insert into empty_claims select now() where not exists (\n\
         select 1 from tool_jobs where state = 'queued' or (state = 'running' and lease_until < now()));\n\
         select id",
        1,
    );
    assert!(
        text.contains("empty_claims select now()"),
        "the claim changed"
    );
    SqlFile::parse("empty-claim.sql", &text).expect("parses")
}

/// The message names the statement and says what the server said.
fn names_the_claim(message: &str) {
    assert!(message.contains("`claim`"), "{message}");
    assert!(
        message.contains("an empty claim is refused at commit"),
        "{message}"
    );
}

#[test]
fn a_commit_the_server_refuses_after_a_claim_found_nothing_is_a_store_error_naming_claim() {
    let db = Database::throwaway().expect("a throwaway PostgreSQL starts");
    let file = refusing_empty_claims();
    // Opening measures the lease with one queued job: that claim finds it and commits.
    let q = SqlQueue::open(file.clone(), &db).expect("opens");

    // Its steps run one after the other, with no job queued.
    let mut conn = Conn::open(db.access(), &file, "leasesim").expect("a connection");
    let enqueue = file.get("enqueue").expect("enqueue");
    conn.start_run(enqueue, &[]).expect("a clean start");
    let claim = file.get("claim").expect("claim");
    let values = [
        (
            "worker_id".to_string(),
            leasesim_sql::db::Value::Text("W1".into()),
        ),
        (
            "client_now".to_string(),
            leasesim_sql::db::Value::Text(time::format_us(0)),
        ),
    ];
    let e = conn
        .run_steps(claim, &values, 0)
        .expect_err("the refused commit is an error, not an empty answer");
    names_the_claim(&e);

    // Every order of two claims on one job: the second finds nothing once the first commits.
    let e = leasesim_sql::explore::explore(&q, 2, 1).expect_err("a refused commit ends it");
    names_the_claim(&e);

    // A run: the worker that finds nothing ends the run as a store error naming the claim.
    let machines = q.machines();
    let def = scenarios::find("w1-w2").expect("a scenario");
    let r = run(&def.build(0, machines.setup_variant()), 0, &machines);
    let fault = r.machine_fault.expect("the run ends as a machine error");
    assert!(fault.contains("store error: empty-claim.sql: "), "{fault}");
    names_the_claim(&fault);
}
