//! The SQL paths on a shared machine: the throwaway PostgreSQL is private to leasesim (another
//! account cannot reach it, its folder and socket are its own, a password is asked), a queue's
//! SQL runs as a role that cannot reach beyond its database, a privileged role of a user's
//! server is refused unless allowed, a failed setup leaves no schema, values reach the server
//! intact whatever `standard_conforming_strings` says, and a statement that never ends is
//! cancelled by the server and named.

use leasesim_sql::db::{Access, Conn, Value};
use leasesim_sql::file::SqlFile;
use leasesim_sql::{Database, SqlQueue};
use leasesim_tests::{leasesim_bin, run_with_limit, Finished, TempDir};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

fn query(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../scenarios/sql/queries")
        .join(name)
}

/// The article's file with `schema` (and nothing else) changed by `edit`.
fn articles_file_with(tmp: &TempDir, name: &str, edit: impl Fn(&str) -> String) -> PathBuf {
    let text = std::fs::read_to_string(query("seed-postgres.sql")).expect("the shipped file");
    let path = tmp.join(name);
    std::fs::write(&path, edit(&text)).expect("written");
    path
}

/// `psql` from the same PostgreSQL as the server.
fn psql() -> PathBuf {
    leasesim_sql::server::bindir()
        .expect("PostgreSQL is installed")
        .join("psql")
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

/// `psql` run as another account than this process's (`nobody`), without a password.
fn psql_as_another_account(host: &Path, user: &str, sql: &str) -> std::process::Output {
    let mut cmd = if is_root() {
        let mut c = Command::new("runuser");
        c.args(["-u", "nobody", "--"]);
        c
    } else {
        let sudo = Command::new("sudo").args(["-n", "true"]).status();
        assert!(
            sudo.is_ok_and(|s| s.success()),
            "this test needs a second account: run it as root, or with sudo that asks no password"
        );
        let mut c = Command::new("sudo");
        c.args(["-n", "-u", "nobody", "--"]);
        c
    };
    cmd.arg(psql())
        .args(["-w", "-h"])
        .arg(host)
        .args(["-U", user, "-d", "leasesim", "-c", sql])
        .env_remove("PGPASSWORD")
        .stdin(std::process::Stdio::null())
        .output()
        .expect("psql runs")
}

#[test]
fn another_account_cannot_reach_the_throwaway_server() {
    let db = Database::throwaway().expect("a throwaway PostgreSQL starts");
    let dir = db.dir().expect("a throwaway server has a folder");
    let name = dir.file_name().unwrap().to_string_lossy().into_owned();
    let random = name.strip_prefix("leasesim-pg-").expect("its prefix");
    assert!(
        // `mktemp`'s sixteen letters and digits: about 95 bits.
        random.len() == 16 && random.chars().all(|c| c.is_ascii_alphanumeric()),
        "an unpredictable name, not a process id: {name}"
    );
    let meta = std::fs::symlink_metadata(&dir).unwrap();
    assert!(meta.is_dir(), "a real folder, not a link");
    assert_eq!(meta.permissions().mode() & 0o777, 0o700, "its owner's only");
    let socket = std::fs::symlink_metadata(dir.join(".s.PGSQL.5432")).unwrap();
    assert_eq!(socket.permissions().mode() & 0o777, 0o700);
    assert_eq!(socket.uid(), meta.uid(), "the server's account owns both");
    // Another account: neither as the superuser nor as the run's role.
    for user in ["postgres", "leasesim_run"] {
        let out = psql_as_another_account(&dir, user, "select 1");
        let said = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{user}: {said}");
        assert!(said.contains("Permission denied"), "{user}: {said}");
    }
    // This account can reach the socket (root passes any folder's mode), but not without the
    // password drawn for the server.
    let out = Command::new(psql())
        .args(["-w", "-h"])
        .arg(&dir)
        .args(["-U", "postgres", "-d", "leasesim", "-c", "select 1"])
        .env_remove("PGPASSWORD")
        .output()
        .expect("psql runs");
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{said}");
    assert!(
        said.contains("no password supplied") || said.contains("Permission denied"),
        "{said}"
    );
}

#[test]
fn the_sql_runs_as_a_role_that_cannot_run_programs_or_read_the_servers_files() {
    let tmp = TempDir::new("sql-role");
    let db = Database::throwaway().expect("a throwaway PostgreSQL starts");
    let proof = tmp.join("ran");
    for (name, statement, refusal) in [
        (
            "program.sql",
            format!("copy (select 1) to program 'touch {}';", proof.display()),
            "pg_execute_server_program",
        ),
        (
            "read.sql",
            "create table stolen as select pg_read_file('/etc/passwd') as text;".to_string(),
            "permission denied",
        ),
        (
            "role.sql",
            "create role intruder;".to_string(),
            "permission denied",
        ),
    ] {
        let file = articles_file_with(&tmp, name, |t| {
            t.replacen(
                "-- name: schema\n",
                &format!("-- name: schema\n{statement}\n"),
                1,
            )
        });
        let e = SqlQueue::open_path(&file, &db)
            .err()
            .unwrap_or_else(|| panic!("{name}: `{statement}` was allowed"));
        assert!(e.contains(refusal), "{name}: {e}");
    }
    assert!(!proof.exists(), "a program ran as the server's account");
}

#[test]
fn a_privileged_role_of_a_users_server_is_refused_unless_allowed() {
    let db = Database::throwaway().expect("a throwaway PostgreSQL starts");
    let superuser = db.superuser_url().expect("a throwaway server's superuser");
    let e = SqlQueue::open_path(&query("seed-postgres.sql"), &Database::at(&superuser))
        .err()
        .expect("a superuser is refused");
    assert!(e.contains("is a superuser"), "{e}");
    assert!(e.contains("--allow-privileged-role"), "{e}");
    assert!(
        !e.contains("password="),
        "a message never shows a password: {e}"
    );
    let allowed = Database::at(&superuser).allowing_privileged_role();
    SqlQueue::open_path(&query("seed-postgres.sql"), &allowed).expect("allowed when asked");
    // The role leasesim made is not privileged: it passes the same check.
    SqlQueue::open_path(&query("seed-postgres.sql"), &Database::at(db.url()))
        .expect("an unprivileged role is used");
    // From the command line: one line, exit 2, the password never shown.
    let f = leasesim(&[
        "run",
        "w1-w2",
        "--seed",
        "0",
        "--coordinator",
        &format!("sql:{}", query("seed-postgres.sql").display()),
        "--database-url",
        &superuser,
    ]);
    assert_eq!(f.code, Some(2), "{}\n{}", f.out, f.err);
    assert_eq!(f.err.lines().count(), 1, "{}", f.err);
    assert!(f.err.contains("is a superuser"), "{}", f.err);
    let password = superuser.split("password=").nth(1).unwrap();
    let password = password.split_whitespace().next().unwrap();
    assert!(!f.err.contains(password), "{}", f.err);
}

/// The schemas leasesim made that are still on the server.
fn leasesim_schemas(superuser: &str) -> Vec<String> {
    let mut c = postgres::Client::connect(superuser, postgres::NoTls).expect("connects");
    c.query(
        "SELECT nspname::text FROM pg_namespace WHERE nspname LIKE 'leasesim\\_%' ORDER BY 1",
        &[],
    )
    .expect("lists")
    .iter()
    .map(|r| r.get(0))
    .collect()
}

#[test]
fn a_schema_statement_that_fails_or_writes_elsewhere_is_refused_and_leaves_no_schema() {
    let tmp = TempDir::new("sql-schema-left");
    let db = Database::throwaway().expect("a throwaway PostgreSQL starts");
    let superuser = db.superuser_url().unwrap();
    // A server of the user's: the throwaway one, reached as a user would (no cleanup of its
    // own), with a role that may create tables outside its schema.
    let users = Database::at(&superuser).allowing_privileged_role();
    let failing = articles_file_with(&tmp, "failing.sql", |t| {
        t.replacen(
            "-- name: schema\n",
            "-- name: schema\ncreate table broken (x no_such_type);\n",
            1,
        )
    });
    let elsewhere = articles_file_with(&tmp, "elsewhere.sql", |t| {
        t.replacen(
            "-- name: schema\n",
            "-- name: schema\ncreate table public.escaped (x int);\n",
            1,
        )
    });
    for _ in 0..3 {
        let e = SqlQueue::open_path(&failing, &users)
            .err()
            .expect("refused");
        assert!(
            e.contains("`schema` failed") && e.contains("no_such_type"),
            "{e}"
        );
    }
    let e = SqlQueue::open_path(&elsewhere, &users)
        .err()
        .expect("refused");
    assert!(
        e.contains("public.escaped") && e.contains("outside the schema"),
        "{e}"
    );
    assert_eq!(leasesim_schemas(&superuser), Vec::<String>::new());
    // A queue that opened and ran drops its schemas when it goes.
    let queue = SqlQueue::open_path(&query("seed-postgres.sql"), &users).expect("opens");
    assert_eq!(leasesim_schemas(&superuser).len(), 1);
    drop(queue);
    assert_eq!(leasesim_schemas(&superuser), Vec::<String>::new());
}

#[test]
fn values_reach_the_server_intact_whatever_standard_conforming_strings_says() {
    let db = Database::throwaway().expect("a throwaway PostgreSQL starts");
    let superuser = db.superuser_url().unwrap();
    let mut admin = postgres::Client::connect(&superuser, postgres::NoTls).expect("connects");
    admin
        .batch_execute("ALTER ROLE leasesim_run SET standard_conforming_strings = off")
        .expect("set for the role");
    let mut plain = postgres::Client::connect(db.url(), postgres::NoTls).expect("connects");
    let shown: String = plain
        .query_one("SHOW standard_conforming_strings", &[])
        .unwrap()
        .get(0);
    assert_eq!(shown, "off", "the role's connections start with it off");
    let file = SqlFile::parse(
        "echo.sql",
        "-- name: schema\ncreate table t (x text);\n-- name: echo\nselect :v::text as v\n",
    )
    .expect("parses");
    let access: &Access = db.access();
    let mut conn = Conn::open(access, &file, "leasesim").expect("a connection");
    let echo = file.get("echo").unwrap();
    for v in [
        r"a\'; drop table t; --",
        r"\",
        r"\\'",
        "it's",
        r"C:\path\n",
        "'') or true --",
    ] {
        let a = conn
            .run(echo, &[Value::Text(v.to_string())], 0)
            .unwrap_or_else(|e| panic!("{v:?}: {e}"));
        assert_eq!(a.get(0, "v"), Some(v), "{v:?} came back changed");
    }
}

/// `leasesim <args>` as a process, bounded in time.
fn leasesim(args: &[&str]) -> Finished {
    let tmp = TempDir::new("sql-safety-cli");
    let mut cmd = Command::new(leasesim_bin());
    cmd.args(args)
        .env("TMPDIR", &tmp.0)
        .env_remove("LEASESIM_DATABASE_URL")
        .current_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join(".."));
    let f = run_with_limit(cmd, Duration::from_secs(120));
    assert!(!f.timed_out, "leasesim {args:?} hung: {}\n{}", f.out, f.err);
    f
}

/// A condition no statement of a queue would write: true, after counting to 10^11 (hours).
const FOREVER: &str = "(select count(*) from generate_series(1, 100000000000)) > 0";

#[test]
fn a_statement_that_never_ends_is_cancelled_by_the_server_and_named() {
    let tmp = TempDir::new("sql-timeout");
    // The commit never ends: the run is a machine error naming it, in seconds.
    let slow_commit = articles_file_with(&tmp, "slow-commit.sql", |t| {
        let at = t.find("-- name: commit").unwrap();
        let (head, tail) = t.split_at(at);
        format!(
            "{head}{}",
            tail.replacen("where ", &format!("where {FOREVER} and "), 1)
        )
    });
    let f = leasesim(&[
        "run",
        "w1-w2",
        "--seed",
        "0",
        "--coordinator",
        &format!("sql:{}", slow_commit.display()),
        "--statement-timeout",
        "1s",
    ]);
    assert_eq!(f.code, Some(1), "{}\n{}", f.out, f.err);
    assert!(f.out.contains("MACHINE ERROR"), "{}", f.out);
    assert!(
        f.out.contains(
            "store error: slow-commit.sql: `commit` ran longer than the statement timeout (1.000s)"
        ),
        "{}",
        f.out
    );
    assert!(!f.err.contains("panicked"), "{}", f.err);
    // The claim that measures the lease when the file opens never ends: a one-line error.
    let slow_claim = articles_file_with(&tmp, "slow-claim.sql", |t| {
        let at = t.find("-- name: claim").unwrap();
        let (head, tail) = t.split_at(at);
        format!(
            "{head}{}",
            tail.replacen("where ", &format!("where {FOREVER} and "), 1)
        )
    });
    let f = leasesim(&[
        "run",
        "w1-w2",
        "--seed",
        "0",
        "--coordinator",
        &format!("sql:{}", slow_claim.display()),
        "--statement-timeout",
        "1s",
    ]);
    assert_eq!(f.code, Some(2), "{}\n{}", f.out, f.err);
    assert_eq!(f.err.lines().count(), 1, "{}", f.err);
    assert!(
        f.err
            .contains("`claim` ran longer than the statement timeout (1.000s)"),
        "{}",
        f.err
    );
    // A timeout of 0 would be none at all.
    let f = leasesim(&[
        "run",
        "w1-w2",
        "--seed",
        "0",
        "--coordinator",
        &format!("sql:{}", query("seed-postgres.sql").display()),
        "--statement-timeout",
        "0s",
    ]);
    assert_eq!(f.code, Some(2), "{}", f.err);
}

#[test]
fn a_clock_reading_built_at_run_time_is_refused_by_the_throwaway_server() {
    let tmp = TempDir::new("sql-hidden-clock");
    // `sql check` cannot see a function name put together when the statement runs.
    let hidden = articles_file_with(&tmp, "hidden-clock.sql", |t| {
        let t = t.replacen(
            "-- name: enqueue",
            "create function real_time() returns timestamptz language plpgsql as $$\n\
             declare r timestamptz;\n\
             begin execute 'select clock' || '_timestamp()' into r; return r; end $$;\n\n\
             -- name: enqueue",
            1,
        );
        let at = t.find("-- name: commit").unwrap();
        let (head, tail) = t.split_at(at);
        format!(
            "{head}{}",
            tail.replacen("where ", "where real_time() is not null and ", 1)
        )
    });
    let f = leasesim(&["sql", "check", hidden.to_str().unwrap()]);
    assert_eq!(f.code, Some(0), "{}\n{}", f.out, f.err);
    let f = leasesim(&[
        "run",
        "w1-w2",
        "--seed",
        "0",
        "--coordinator",
        &format!("sql:{}", hidden.display()),
    ]);
    assert_eq!(f.code, Some(1), "{}\n{}", f.out, f.err);
    assert!(f.out.contains("MACHINE ERROR"), "{}", f.out);
    assert!(
        f.out.contains("`commit`")
            && f.out
                .contains("permission denied for function clock_timestamp"),
        "{}",
        f.out
    );
    assert!(!f.err.contains("panicked"), "{}", f.err);
}
