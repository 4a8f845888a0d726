//! The SQL coordinator from the command line, as a user runs it: a sweep of the article's SQL on
//! a throwaway PostgreSQL that leaves nothing behind (also on Ctrl-C), the matrix over the
//! shipped SQL files with reproduce commands that fail again, `sql check`, replay files that
//! record the SQL file, and timelines that name the statement behind each decision.

use leasesim_tests::{leasesim_bin, run_with_limit, Finished, TempDir};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

fn query(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../scenarios/sql/queries")
        .join(name)
}

fn coordinator(name: &str) -> String {
    format!("sql:{}", query(name).display())
}

/// `leasesim <args>` as a process whose temporary files go to `tmp`, bounded in time.
fn leasesim(args: &[&str], tmp: &Path, limit_s: u64) -> Finished {
    let mut cmd = Command::new(leasesim_bin());
    cmd.args(args)
        .env("TMPDIR", tmp)
        .env_remove("LEASESIM_DATABASE_URL")
        .current_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join(".."));
    let f = run_with_limit(cmd, Duration::from_secs(limit_s));
    assert!(!f.timed_out, "leasesim {args:?} hung: {}\n{}", f.out, f.err);
    f
}

/// What is left in `tmp`, and any process still running from it (a server left behind).
fn leftovers(tmp: &Path) -> (Vec<String>, Vec<String>) {
    let files = std::fs::read_dir(tmp)
        .map(|d| {
            d.filter_map(Result::ok)
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    let needle = tmp.to_string_lossy().into_owned();
    let mut procs = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        if cmdline.contains(&needle) && cmdline.contains("postgres") {
            procs.push(cmdline);
        }
    }
    (files, procs)
}

#[test]
fn a_sweep_of_the_articles_sql_holds_says_what_it_skipped_and_leaves_nothing() {
    let tmp = TempDir::new("sql-sweep");
    let f = leasesim(
        &[
            "sweep",
            "--coordinator",
            &coordinator("seed-postgres.sql"),
            "--seeds",
            "8",
            "--check-determinism",
            // The SQL expresses one swarm seed of these eight, and that seed draws a worker
            // clock beyond its drift bound: allowed here by name, and still counted below.
            "--allow-skipped",
            "belief-within-grant",
            "--allow-skipped",
            "needless-takeover",
        ],
        &tmp.0,
        300,
    );
    assert_eq!(f.code, Some(0), "{}\n{}", f.out, f.err);
    for (scenario, why) in [
        ("renewal-cap", "the renewal cap (P7)"),
        ("human-handoff", "hands a job to a human (P15)"),
        ("admission-and-authorization", "(P16)"),
        ("stages-and-checkpoints", "no `checkpoint` statement"),
    ] {
        let line = f
            .out
            .lines()
            .find(|l| l.starts_with(scenario))
            .unwrap_or_else(|| panic!("no line for {scenario}: {}", f.out));
        assert!(
            line.contains("NOT EXPRESSIBLE") && line.contains(why),
            "{scenario}: {line}"
        );
    }
    let w1w2 = f.out.lines().find(|l| l.starts_with("w1-w2")).unwrap();
    assert!(w1w2.ends_with("held"), "{w1w2}");
    assert!(
        f.out.contains("not expressible by sql:seed-postgres.sql@")
            && f.out.contains("(skipped, never passed)"),
        "{}",
        f.out
    );
    assert!(!f.out.contains("FAILING"), "{}", f.out);
    let skipped = f
        .out
        .lines()
        .find(|l| l.starts_with("  swarm") && l.contains("belief-within-grant (I5) in 1 of 1 runs"))
        .unwrap_or_else(|| panic!("the swarm's skipped judgement is not counted: {}", f.out));
    assert!(skipped.contains("beyond its drift bound"), "{skipped}");
    let (files, procs) = leftovers(&tmp.0);
    assert!(files.is_empty(), "left behind in TMPDIR: {files:?}");
    assert!(procs.is_empty(), "servers left running: {procs:?}");
}

#[test]
fn ctrl_c_stops_and_removes_the_throwaway_server() {
    let tmp = TempDir::new("sql-sigint");
    let mut child = Command::new(leasesim_bin())
        .args([
            "sweep",
            "w1-w2",
            "--seeds",
            "10000000",
            "--coordinator",
            &coordinator("seed-postgres.sql"),
        ])
        .env("TMPDIR", &tmp.0)
        .env_remove("LEASESIM_DATABASE_URL")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("leasesim starts");
    // Wait until the server runs: its folder exists and a postgres process runs from it.
    let mut up = false;
    for _ in 0..600 {
        let (files, procs) = leftovers(&tmp.0);
        if !files.is_empty() && !procs.is_empty() {
            up = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    // Let some seeds run on it.
    std::thread::sleep(Duration::from_millis(500));
    let status = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .expect("kill runs");
    assert!(status.success());
    let mut code = None;
    for _ in 0..600 {
        if let Some(s) = child.try_wait().expect("waitable") {
            code = Some(s.code());
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    if code.is_none() {
        let _ = child.kill();
        let _ = child.wait();
    }
    assert!(
        up,
        "the throwaway server never came up in {}",
        tmp.0.display()
    );
    assert_eq!(code, Some(Some(130)), "exit after Ctrl-C");
    let (files, procs) = leftovers(&tmp.0);
    assert!(files.is_empty(), "left behind after Ctrl-C: {files:?}");
    assert!(
        procs.is_empty(),
        "servers left running after Ctrl-C: {procs:?}"
    );
}

#[test]
fn the_matrix_over_the_shipped_sql_catches_every_bad_file_and_each_reproduces() {
    let tmp = TempDir::new("sql-matrix");
    let out = tmp.join("out");
    let mut files: Vec<String> = std::fs::read_dir(query(""))
        .expect("the queries folder")
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".sql"))
        .collect();
    files.sort();
    assert!(files.len() >= 8, "{files:?}");
    let mut args = vec![
        "matrix".to_string(),
        "--seeds".into(),
        "2".into(),
        "--out".into(),
        out.display().to_string(),
    ];
    for f in &files {
        args.push("--coordinator".into());
        args.push(coordinator(f));
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let f = leasesim(&args, &tmp.0, 900);
    assert_eq!(f.code, Some(0), "{}\n{}", f.out, f.err);
    let md = std::fs::read_to_string(out.join("matrix.md")).expect("matrix.md written");
    assert!(
        md.contains("Reference: clean"),
        "seed-postgres.sql failed somewhere: {md}"
    );
    // A file says it is known-bad in its first line; every other must hold.
    let bad = files
        .iter()
        .filter(|f| {
            std::fs::read_to_string(query(f))
                .unwrap()
                .starts_with("-- leasesim: known-bad")
        })
        .count();
    assert!(bad >= 8 && bad < files.len(), "{files:?}");
    assert!(
        md.contains(&format!("Variants caught: {bad} of {bad}.")),
        "{md}"
    );
    let seed_row = md
        .lines()
        .find(|l| l.starts_with("| `sql:seed-postgres.sql@"))
        .expect("the reference file's row");
    assert!(seed_row.contains("| clean |"), "{seed_row}");
    // Every bad file's row names an invariant and a reproduce command; run that command (with
    // this build's binary) and it fails again, naming the same invariant.
    let mut reproduced = 0;
    for row in md
        .lines()
        .filter(|l| l.starts_with("| `sql:") && l.contains("| yes |"))
    {
        let cells: Vec<&str> = row.split(" | ").collect();
        let invariants: Vec<&str> = cells[3].split(", ").collect();
        assert!(invariants.iter().all(|i| i.contains("(I")), "{row}");
        let command = cells[6].trim_end_matches(" |").trim_matches('`');
        let rest = command
            .strip_prefix("cargo run --release -- ")
            .unwrap_or_else(|| panic!("not a leasesim command: {command}"));
        let argv: Vec<&str> = rest.split(' ').collect();
        let again = leasesim(&argv, &tmp.0, 120);
        assert_eq!(
            again.code,
            Some(1),
            "{command}: {}\n{}",
            again.out,
            again.err
        );
        assert!(
            invariants.iter().any(|i| again.out.contains(i)),
            "{command} breaks none of {invariants:?}: {}",
            again.out
        );
        reproduced += 1;
    }
    assert_eq!(reproduced, bad, "{md}");
    // n/a, never held, where a file cannot express a scenario.
    let grid_row = md
        .lines()
        .filter(|l| l.starts_with("| `sql:seed-postgres.sql@"))
        .nth(1)
        .expect("the reference file's row of the grid");
    assert!(
        grid_row.contains("| n/a |") && grid_row.contains("| held |"),
        "{grid_row}"
    );
    // Counterexamples are written under portable names.
    let shrunk: Vec<String> = std::fs::read_dir(out.join("counterexamples"))
        .expect("counterexamples written")
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(shrunk.len(), 2 * bad, "{shrunk:?}");
    assert!(
        shrunk.iter().all(|n| !n.contains(':') && !n.contains('@')),
        "{shrunk:?}"
    );
    let (files, procs) = leftovers(&tmp.0);
    assert_eq!(files, vec!["out".to_string()], "left behind: {files:?}");
    assert!(procs.is_empty(), "servers left running: {procs:?}");
}

#[test]
fn sql_check_names_each_problem_with_its_line() {
    let tmp = TempDir::new("sql-check");
    let bad = tmp.join("bad.sql");
    std::fs::write(
        &bad,
        "-- name: schema\ncreate table jobs (id uuid primary key);\n\n\
         -- name: enqueue\ninsert into jobs (id) values (:job_id);\n\n\
         -- name: claim\nupdate jobs set owner = :worker_id where lease_until < clock_timestamp()\n\
         returning id, fencing_token, lease_until;\n\n\
         -- name: commit\nupdate jobs set result = :result where id = :job_id and owner = :wroker_id;\n\n\
         -- name: fail\nupdate jobs set error = :error where id = :job_id;\n",
    )
    .unwrap();
    let f = leasesim(&["sql", "check", bad.to_str().unwrap()], &tmp.0, 60);
    assert_eq!(f.code, Some(2), "{}\n{}", f.out, f.err);
    let path = bad.display().to_string();
    assert!(
        f.out.contains(&format!("{path}:8: ")) && f.out.contains("clock_timestamp"),
        "the real-time read on line 8: {}",
        f.out
    );
    assert!(
        f.out.contains(&format!("{path}:12: ")) && f.out.contains("did you mean `:worker_id`"),
        "the misspelt parameter on line 12: {}",
        f.out
    );
    assert!(
        f.out.contains("heartbeat"),
        "the missing heartbeat: {}",
        f.out
    );
    assert_eq!(f.err.lines().count(), 1, "one error line: {}", f.err);
    // Every shipped file keeps the contract.
    let mut args = vec!["sql".to_string(), "check".into()];
    for e in std::fs::read_dir(query("")).unwrap().flatten() {
        args.push(e.path().display().to_string());
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let f = leasesim(&args, &tmp.0, 60);
    assert_eq!(f.code, Some(0), "{}\n{}", f.out, f.err);
    // A run refuses the file before any server starts.
    let f = leasesim(
        &[
            "run",
            "w1-w2",
            "--seed",
            "1",
            "--sql",
            bad.to_str().unwrap(),
        ],
        &tmp.0,
        60,
    );
    assert_eq!(f.code, Some(2), "{}\n{}", f.out, f.err);
    assert_eq!(f.err.lines().count(), 1, "{}", f.err);
    assert!(
        f.err.contains("statement `heartbeat` is missing") && f.err.contains("lists every problem"),
        "{}",
        f.err
    );
}

/// The seed file with `from` replaced by `to` (once), and the line it is on.
fn seed_with(from: &str, to: &str) -> (String, usize) {
    let seed = std::fs::read_to_string(query("seed-postgres.sql")).unwrap();
    let at = seed
        .find(from)
        .unwrap_or_else(|| panic!("{from} is in the seed file"));
    let line = seed[..at].matches('\n').count() + 1;
    (seed.replacen(from, to, 1), line)
}

#[test]
fn sql_check_lexes_as_postgresql_does_and_finds_every_real_clock_reading() {
    let tmp = TempDir::new("sql-lex");
    let write = |name: &str, text: &str| {
        let p = tmp.join(name);
        std::fs::write(&p, text).unwrap();
        p.display().to_string()
    };
    // Valid SQL that a naive reading cuts or refuses: nested comments with `;` inside, an
    // escape string holding a quote and a `;`. It passes, and PostgreSQL runs it.
    let (good, _) = seed_with(
        "  error jsonb\n);",
        "  error jsonb,\n  note text default E'it\\'s; fine'\n); /* outer /* inner; */ still a comment; */",
    );
    let good = write("good.sql", &good);
    let f = leasesim(&["sql", "check", &good], &tmp.0, 60);
    assert_eq!(f.code, Some(0), "{}\n{}", f.out, f.err);
    let f = leasesim(
        &[
            "run",
            "w1-w2",
            "--seed",
            "1",
            "--coordinator",
            &format!("sql:{good}"),
        ],
        &tmp.0,
        120,
    );
    assert_eq!(f.code, Some(0), "PostgreSQL runs it: {}\n{}", f.out, f.err);
    // `'now'` is the real clock to PostgreSQL: it made a correct queue look broken.
    let (now, now_line) = seed_with(
        "lease_until > now()\nreturning",
        "lease_until > 'now'::timestamptz\nreturning",
    );
    let now = write("now.sql", &now);
    let f = leasesim(&["sql", "check", &now], &tmp.0, 60);
    assert_eq!(f.code, Some(2), "{}\n{}", f.out, f.err);
    assert!(
        f.out.contains(&format!("{now}:{now_line}: ")) && f.out.contains("'now'"),
        "line {now_line}: {}",
        f.out
    );
    let f = leasesim(
        &[
            "run",
            "w1-w2",
            "--seed",
            "1",
            "--coordinator",
            &format!("sql:{now}"),
        ],
        &tmp.0,
        60,
    );
    assert_eq!(
        f.code,
        Some(2),
        "refused before it runs: {}\n{}",
        f.out,
        f.err
    );
    assert!(
        f.err.contains("'now'") && f.err.lines().count() == 1,
        "{}",
        f.err
    );
    // A clock reading after an escaped quote is still code.
    let (hidden, hidden_line) = seed_with(
        "  and lease_until > now();",
        "  and lease_until > now() and E'\\'' <> clock_timestamp()::text;",
    );
    let hidden = write("hidden.sql", &hidden);
    let f = leasesim(&["sql", "check", &hidden], &tmp.0, 60);
    assert_eq!(f.code, Some(2), "{}\n{}", f.out, f.err);
    assert!(
        f.out.contains(&format!("{hidden}:{hidden_line}: ")) && f.out.contains("clock_timestamp"),
        "line {hidden_line}: {}",
        f.out
    );
    // A literal that does not end is called that, at the line it starts on; one that a
    // missing quote made run over the next statements is called that.
    let (open, open_line) = seed_with("'succeeded'", "'succeeded");
    let open = write("open.sql", &open);
    let f = leasesim(&["sql", "check", &open], &tmp.0, 60);
    assert_eq!(f.code, Some(2), "{}\n{}", f.out, f.err);
    assert!(
        f.out.starts_with(&format!("{open}:{open_line}: a quoted string starts here and runs over the `-- name:` marker at line 22: is a quote missing?")),
        "{}",
        f.out
    );
    let open = write(
        "open-end.sql",
        &format!(
            "{}-- name: status\nselect 'x as state;\n",
            std::fs::read_to_string(&good).unwrap()
        ),
    );
    let last = std::fs::read_to_string(&open).unwrap().lines().count();
    let f = leasesim(&["sql", "check", &open], &tmp.0, 60);
    assert_eq!(f.code, Some(2), "{}\n{}", f.out, f.err);
    assert_eq!(
        f.out.trim(),
        format!("{open}:{last}: unterminated quoted string (it starts here)"),
        "{}",
        f.err
    );
}

#[test]
fn bad_sql_options_get_one_line_and_exit_2() {
    let tmp = TempDir::new("sql-usage");
    let seed = coordinator("seed-postgres.sql");
    for args in [
        &["run", "w1-w2", "--seed", "1", "--coordinator", "postgres"][..],
        &["run", "w1-w2", "--seed", "1", "--coordinator", "sql:"],
        &[
            "run",
            "w1-w2",
            "--seed",
            "1",
            "--coordinator",
            "sql:/no/such.sql",
        ],
        &[
            "run",
            "w1-w2",
            "--seed",
            "1",
            "--database-url",
            "postgres://x",
        ],
        // A scenario the file cannot express is refused, never passed.
        &["run", "renewal-cap", "--seed", "1", "--coordinator", &seed],
        &[
            "run",
            "w1-w2",
            "--seed",
            "1",
            "--coordinator",
            &seed,
            "--variant",
            "unconditional-commit",
        ],
        &["sql", "check"],
    ] {
        let f = leasesim(args, &tmp.0, 120);
        assert_eq!(f.code, Some(2), "{args:?}: {}\n{}", f.out, f.err);
        assert_eq!(f.err.lines().count(), 1, "{args:?}: {}", f.err);
        assert!(f.err.starts_with("error: "), "{args:?}: {}", f.err);
    }
    let (files, procs) = leftovers(&tmp.0);
    assert!(files.is_empty() && procs.is_empty(), "{files:?} {procs:?}");
}

#[test]
fn replays_record_the_sql_file_and_reports_name_the_statements() {
    let tmp = TempDir::new("sql-replay");
    let failures = tmp.join("f");
    let v2 = coordinator("v2-naive-commit.sql");
    let f = leasesim(
        &[
            "sweep",
            "clock-skew-fast-worker",
            "--seeds",
            "1",
            "--coordinator",
            &v2,
            "--failures-dir",
            failures.to_str().unwrap(),
        ],
        &tmp.0,
        120,
    );
    assert_eq!(f.code, Some(1), "{}\n{}", f.out, f.err);
    let replay = std::fs::read_dir(&failures)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.to_string_lossy().ends_with("seed0.json"))
        .expect("the failing seed's replay file");
    let text = std::fs::read_to_string(&replay).unwrap();
    assert!(
        text.contains("sql:v2-naive-commit.sql@"),
        "the file's name and hash are recorded"
    );
    let replay = replay.to_str().unwrap();
    // With the file: the same run again.
    let again = leasesim(&["replay", replay, "--coordinator", &v2], &tmp.0, 120);
    assert_eq!(again.code, Some(1), "{}\n{}", again.out, again.err);
    assert!(
        again.out.contains("identical to the recorded run"),
        "{}",
        again.out
    );
    // Without it, or with another file: a one-line error naming what is needed.
    let none = leasesim(&["replay", replay], &tmp.0, 60);
    assert_eq!(none.code, Some(2));
    assert!(
        none.err
            .contains("--coordinator sql:<path to v2-naive-commit.sql>"),
        "{}",
        none.err
    );
    let other = leasesim(
        &[
            "replay",
            replay,
            "--coordinator",
            &coordinator("seed-postgres.sql"),
        ],
        &tmp.0,
        60,
    );
    assert_eq!(other.code, Some(2));
    assert!(other.err.contains("not the same file"), "{}", other.err);
    // The report names the statement behind each decision and shows its text.
    let html = tmp.join("t.html");
    let md = tmp.join("t.md");
    let r = leasesim(
        &[
            "report",
            replay,
            "--coordinator",
            &v2,
            "--html",
            html.to_str().unwrap(),
            "--markdown",
            md.to_str().unwrap(),
        ],
        &tmp.0,
        120,
    );
    // The report of a violating run exits 1, as its run does.
    assert_eq!(r.code, Some(1), "{}\n{}", r.out, r.err);
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(
        page.contains("class=\"stmt\""),
        "statement labels in the timeline"
    );
    assert!(
        page.contains("`commit` -&gt; 1 row") || page.contains("commit"),
        "the commit statement"
    );
    assert!(
        page.contains("set state = &#39;succeeded&#39;")
            || page.contains("set state = &apos;succeeded&apos;")
            || page.contains("set state = 'succeeded'"),
        "the naive update's text in a tooltip"
    );
    // And the journal of a run carries the statement on the decision it made.
    let journal = tmp.join("j.jsonl");
    let j = leasesim(
        &[
            "run",
            "clock-skew-fast-worker",
            "--seed",
            "0",
            "--coordinator",
            &v2,
            "--journal",
            journal.to_str().unwrap(),
        ],
        &tmp.0,
        120,
    );
    assert_eq!(j.code, Some(1), "{}\n{}", j.out, j.err);
    let lines = std::fs::read_to_string(&journal).unwrap();
    assert!(
        lines
            .lines()
            .any(|l| l.contains("\"statement\":\"commit\"") && l.contains("\"rows\":1")),
        "a decision line names `commit` and its row: {lines}"
    );
}

/// The committed SQL matrix (`reports/sql/`) is of the shipped files as they are: each row
/// names a file with its current content hash, and every shipped file has its row.
#[test]
fn the_committed_sql_matrix_is_of_the_shipped_files() {
    let md = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../reports/sql/matrix.md"),
    )
    .expect("reports/sql/matrix.md");
    let mut shipped = 0;
    for e in std::fs::read_dir(query("")).unwrap().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let text = std::fs::read_to_string(e.path()).unwrap();
        let file = leasesim_sql::file::SqlFile::parse(&name, &text).expect("a shipped file parses");
        let row = format!("| `sql:{name}@{:016x}` |", file.hash);
        assert!(
            md.contains(&row),
            "reports/sql/matrix.md has no row {row}: regenerate it with the command at its top"
        );
        shipped += 1;
    }
    let rows = md.lines().filter(|l| l.starts_with("| `sql:")).count();
    assert_eq!(rows, 2 * shipped, "a row for a file that is not shipped");
}

#[test]
fn sql_explore_tries_every_interleaving_and_says_which_break() {
    let tmp = TempDir::new("sql-explore");
    let v10 = coordinator("v10-select-then-update.sql");
    let f = leasesim(&["sql", "explore", "--coordinator", &v10], &tmp.0, 120);
    assert_eq!(f.code, Some(1), "{}\n{}", f.out, f.err);
    assert!(
        f.out.contains("70 interleavings tried (every one)"),
        "{}",
        f.out
    );
    assert!(
        f.out.contains("VIOLATED single-valid-lease (I3)") && f.out.contains("W1 job0 token"),
        "{}",
        f.out
    );
    for args in [
        &[
            "sql",
            "explore",
            "--coordinator",
            &coordinator("claim-for-update.sql"),
        ][..],
        &[
            "sql",
            "explore",
            "--coordinator",
            &v10,
            "--isolation",
            "serializable",
        ],
        &[
            "sql",
            "explore",
            "--coordinator",
            &coordinator("seed-postgres.sql"),
            "--workers",
            "3",
            "--jobs",
            "2",
        ],
    ] {
        let f = leasesim(args, &tmp.0, 300);
        assert_eq!(f.code, Some(0), "{args:?}: {}\n{}", f.out, f.err);
        assert!(f.out.contains("held: no interleaving"), "{}", f.out);
    }
    for args in [
        &["sql", "explore", "--coordinator", &v10, "--workers", "4"][..],
        &[
            "sql",
            "explore",
            "--coordinator",
            &v10,
            "--isolation",
            "snapshot",
        ],
        &["sql", "explore"],
        &["run", "w1-w2", "--seed", "1", "--isolation", "serializable"],
    ] {
        let f = leasesim(args, &tmp.0, 60);
        assert_eq!(f.code, Some(2), "{args:?}: {}\n{}", f.out, f.err);
        assert_eq!(f.err.lines().count(), 1, "{args:?}: {}", f.err);
    }
    let (files, procs) = leftovers(&tmp.0);
    assert!(files.is_empty() && procs.is_empty(), "{files:?} {procs:?}");
}

#[test]
fn the_timeline_draws_each_transaction_on_its_connection() {
    let tmp = TempDir::new("sql-timeline");
    // The race: two claims on two connections, overlapping.
    let html = tmp.join("race.html");
    let f = leasesim(
        &[
            "run",
            "retries",
            "--seed",
            "0",
            "--coordinator",
            &coordinator("v10-select-then-update.sql"),
            "--html",
            html.to_str().unwrap(),
        ],
        &tmp.0,
        120,
    );
    assert_eq!(f.code, Some(1), "{}\n{}", f.out, f.err);
    assert!(f.out.contains("single-valid-lease (I3)"), "{}", f.out);
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("W1\u{2019}s connection") && page.contains("W2\u{2019}s connection"));
    let bars = page.matches("class=\"txbar\"").count();
    assert!(bars >= 2, "{bars} transaction bars");
    assert!(
        page.contains("`claim`: 4 of 4 statement(s)"),
        "a whole claim's bar"
    );
    // A wait on a lock is drawn, and said in the metrics.
    let html = tmp.join("wait.html");
    let f = leasesim(
        &[
            "run",
            "coordinator-outage",
            "--seed",
            "5",
            "--coordinator",
            &coordinator("claim-for-update.sql"),
            "--html",
            html.to_str().unwrap(),
        ],
        &tmp.0,
        120,
    );
    assert_eq!(f.code, Some(0), "{}\n{}", f.out, f.err);
    assert!(
        f.out.contains("store: 1 statement waited on a lock"),
        "{}",
        f.out
    );
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("class=\"txwait\""), "the wait is drawn");
    assert!(page.contains("on locks"), "and said in the bar's tooltip");
}

/// `explore` takes a SQL coordinator like any machines: the article's SQL holds under every
/// single pause and message fault at w1-w2's anchors, and the naive-commit file is caught by an
/// operator's revocation, shrunk, saved, and replayed with the same file.
#[test]
fn explore_places_faults_around_a_sql_coordinator() {
    let tmp = TempDir::new("sql-explore");
    let failures = tmp.join("f");
    let base = [
        "explore",
        "w1-w2",
        "--faults",
        "1",
        "--seed",
        "1",
        "--failures-dir",
        failures.to_str().unwrap(),
    ];
    let seed = coordinator("seed-postgres.sql");
    let mut args = base.to_vec();
    args.extend(["--kinds", "pause,message", "--coordinator", &seed]);
    let held = leasesim(&args, &tmp.0, 300);
    assert_eq!(held.code, Some(0), "{}\n{}", held.out, held.err);
    assert!(
        held.out.contains(
            "no plan of at most 1 fault(s) from pause, message at the 24 anchors of w1-w2 seed 1 on sql:seed-postgres.sql@"
        ),
        "{}",
        held.out
    );
    let v2 = coordinator("v2-naive-commit.sql");
    let mut args = base.to_vec();
    args.extend(["--kinds", "operator", "--coordinator", &v2]);
    let caught = leasesim(&args, &tmp.0, 300);
    assert_eq!(caught.code, Some(1), "{}\n{}", caught.out, caught.err);
    assert!(
        caught.out.contains("VIOLATED no-stale-commit"),
        "{}",
        caught.out
    );
    let replay = std::fs::read_dir(&failures)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|x| x == "json"))
        .expect("the violation's replay file");
    let again = leasesim(
        &["replay", replay.to_str().unwrap(), "--coordinator", &v2],
        &tmp.0,
        120,
    );
    assert_eq!(again.code, Some(1), "{}\n{}", again.out, again.err);
    assert!(
        again.out.contains("identical to the recorded run"),
        "{}",
        again.out
    );
}

/// Starts `leasesim <args>` with its temporary files in `tmp`, waits until its throwaway server
/// is up and `ready` says the command is well under way, then sends it `signals` (from one shell,
/// so they come microseconds apart) and waits for its end. Returns the exit code and what it
/// printed on both streams.
fn interrupted(
    args: &[&str],
    tmp: &Path,
    ready: &dyn Fn() -> bool,
    signals: &[&str],
) -> (Option<i32>, String) {
    use std::io::Read;
    let mut child = Command::new(leasesim_bin())
        .args(args)
        .env("TMPDIR", tmp)
        .env_remove("LEASESIM_DATABASE_URL")
        .current_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join(".."))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("leasesim starts");
    let mut up = false;
    for _ in 0..1200 {
        if server_up(tmp) && ready() {
            up = true;
            break;
        }
        if child.try_wait().expect("waitable").is_some() {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let kills: Vec<String> = signals
        .iter()
        .map(|s| format!("kill -{s} {}", child.id()))
        .collect();
    let sent = Command::new("bash")
        .args(["-c", &kills.join("; ")])
        .status()
        .expect("bash runs");
    let mut code = None;
    for _ in 0..1200 {
        if let Some(s) = child.try_wait().expect("waitable") {
            code = Some(s.code());
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    if code.is_none() {
        let _ = child.kill();
        let _ = child.wait();
    }
    let mut said = String::new();
    let _ = child
        .stdout
        .take()
        .expect("piped")
        .read_to_string(&mut said);
    let _ = child
        .stderr
        .take()
        .expect("piped")
        .read_to_string(&mut said);
    assert!(up, "{args:?} never got under way: {said}");
    assert!(sent.success());
    let code = code.unwrap_or_else(|| panic!("{args:?} did not end after {signals:?}: {said}"));
    (code, said)
}

/// Whether a throwaway server's postmaster runs from `tmp` (its `initdb` or its watchdog
/// alone do not count: the server is not up yet).
fn server_up(tmp: &Path) -> bool {
    leftovers(tmp)
        .1
        .iter()
        .any(|cmdline| cmdline.contains("bin/postgres -D"))
}

/// Nothing of the server is left: no folder in `tmp`, no process running from it.
fn assert_nothing_left(tmp: &Path, what: &str, said: &str) {
    let (files, procs) = leftovers(tmp);
    assert!(
        files.is_empty(),
        "{what}: left in TMPDIR: {files:?}\n{said}"
    );
    assert!(procs.is_empty(), "{what}: servers left running: {procs:?}");
}

/// The failure list of a sweep in `dir`, under its final name or as it grows.
fn list_lines(dir: &Path, partial: bool) -> usize {
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| {
            let n = e.file_name().to_string_lossy().into_owned();
            n.starts_with("sweep-") && n.contains(".txt") && (partial || n.ends_with(".txt"))
        })
        .map(|e| std::fs::read_to_string(e.path()).map_or(0, |s| s.lines().count()))
        .max()
        .unwrap_or(0)
}

/// A readiness test that says yes at its `n`-th poll (polls come every 50 ms once the server
/// is up).
fn after_polls(n: u32) -> impl Fn() -> bool {
    let polls = std::cell::Cell::new(0);
    move || {
        polls.set(polls.get() + 1);
        polls.get() >= n
    }
}

#[test]
fn a_sql_sweep_signalled_twice_keeps_its_failure_list_and_leaves_no_server() {
    let tmp = TempDir::new("sql-signal-twice");
    let out = TempDir::new("sql-signal-twice-out");
    let failures = out.join("f");
    let failures_arg = failures.display().to_string();
    let v2 = coordinator("v2-naive-commit.sql");
    // Failures on disk, then Ctrl-C and a second signal at once: the second ends the process
    // while the first's saving is under way; the list keeps its name and its lines, nothing
    // panics although the server is stopped under running seeds, and the server goes.
    let (code, said) = interrupted(
        &[
            "sweep",
            "--seeds",
            "1000000",
            "--coordinator",
            &v2,
            "--failures-dir",
            &failures_arg,
        ],
        &tmp.0,
        &|| list_lines(&failures, true) >= 6,
        &["INT", "TERM"],
    );
    assert!(matches!(code, Some(130 | 143)), "{code:?}: {said}");
    assert!(!said.contains("panicked"), "{said}");
    assert!(
        list_lines(&failures, false) >= 6,
        "the list keeps its name: {said}"
    );
    assert_nothing_left(&tmp.0, "sweep", &said);
}

#[test]
fn ctrl_c_ends_a_sql_shrink_with_the_smallest_plan_so_far_saved() {
    let tmp = TempDir::new("sql-signal-shrink");
    let out = TempDir::new("sql-signal-shrink-out");
    let failures = out.join("f");
    let failures_arg = failures.display().to_string();
    let v2 = coordinator("v2-naive-commit.sql");
    // Swarm failures with their replays: a sweep stopped by one Ctrl-C saves them.
    let (code, said) = interrupted(
        &[
            "sweep",
            "swarm",
            "--seeds",
            "1000000",
            "--coordinator",
            &v2,
            "--failures-dir",
            &failures_arg,
        ],
        &tmp.0,
        &|| list_lines(&failures, true) >= 4,
        &["INT"],
    );
    assert_eq!(code, Some(130), "{said}");
    let replay = std::fs::read_dir(&failures)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .max_by_key(|p| std::fs::read_to_string(p).map_or(0, |s| s.matches("\"kind\"").count()))
        .unwrap_or_else(|| panic!("the stopped sweep saved no replay: {said}"));
    let shrunk = out.join("shrunk.json");
    // Ctrl-C as soon as the server is up: the shrink's graceful section holds from before the
    // server starts, so whenever the signal comes, the smallest plan so far is saved (a shrink
    // of this replay takes over a second more, the signal a twentieth of one).
    let (code, said) = interrupted(
        &[
            "shrink",
            replay.to_str().unwrap(),
            "--coordinator",
            &v2,
            "--out",
            shrunk.to_str().unwrap(),
        ],
        &tmp.0,
        &|| true,
        &["INT"],
    );
    assert_eq!(code, Some(130), "{said}");
    assert!(said.contains("stopped by a signal"), "{said}");
    assert!(shrunk.exists(), "the smallest plan so far is saved: {said}");
    assert!(!said.contains("panicked"), "{said}");
    assert_nothing_left(&tmp.0, "shrink", &said);
}

#[test]
fn ctrl_c_and_sigterm_end_the_matrix_the_benchmark_and_a_sweep_on_sql_with_no_server_left() {
    let tmp = TempDir::new("sql-signal-others");
    let out = TempDir::new("sql-signal-others-out");
    let good = coordinator("seed-postgres.sql");
    let v2 = coordinator("v2-naive-commit.sql");
    let reports = out.join("m");
    // A claim that never ends while the file opens: Ctrl-C while the statement runs.
    let text = std::fs::read_to_string(query("seed-postgres.sql")).unwrap();
    let at = text.find("-- name: claim").unwrap();
    let (head, tail) = text.split_at(at);
    let slow = out.join("slow-claim.sql");
    std::fs::write(
        &slow,
        format!(
            "{head}{}",
            tail.replacen(
                "where ",
                "where (select count(*) from generate_series(1, 100000000000)) > 0 and ",
                1
            )
        ),
    )
    .unwrap();
    let slow = format!("sql:{}", slow.display());
    // The benchmark's server runs in a child process of its own.
    for (args, signal, want) in [
        (
            vec!["run", "w1-w2", "--seed", "0", "--coordinator", &slow],
            "INT",
            130,
        ),
        (
            vec![
                "matrix",
                "--coordinator",
                &good,
                "--coordinator",
                &v2,
                "--out",
                reports.to_str().unwrap(),
            ],
            "INT",
            130,
        ),
        (
            vec!["bench", "--coordinator", &good, "--seeds", "1000000"],
            "INT",
            130,
        ),
        (
            vec![
                "sweep",
                "w1-w2",
                "--seeds",
                "1000000",
                "--coordinator",
                &good,
            ],
            "TERM",
            143,
        ),
    ] {
        let (code, said) = interrupted(&args, &tmp.0, &after_polls(10), &[signal]);
        assert_eq!(code, Some(want), "{args:?}: {said}");
        assert!(!said.contains("panicked"), "{args:?}: {said}");
        assert_nothing_left(&tmp.0, args[0], &said);
    }
}

#[test]
fn a_killed_leasesim_leaves_no_server_behind() {
    let tmp = TempDir::new("sql-kill9");
    let (code, said) = interrupted(
        &[
            "sweep",
            "w1-w2",
            "--seeds",
            "1000000",
            "--coordinator",
            &coordinator("seed-postgres.sql"),
        ],
        &tmp.0,
        &|| true,
        &["KILL"],
    );
    assert_eq!(code, None, "killed: {said}");
    // Its watchdog stops the server and removes the folder once leasesim is gone.
    for _ in 0..400 {
        let (files, procs) = leftovers(&tmp.0);
        if files.is_empty() && procs.is_empty() {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_nothing_left(&tmp.0, "kill -9", &said);
}

#[test]
fn the_throwaway_server_starts_on_a_busy_machine_and_says_why_when_it_cannot() {
    // Busy: both cores spinning, and six servers starting at once.
    let spinners: Vec<std::process::Child> = (0..2)
        .map(|_| {
            Command::new("sh")
                .args(["-c", "while :; do :; done"])
                .spawn()
                .expect("sh starts")
        })
        .collect();
    let started: Vec<Result<leasesim_sql::Database, String>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..6)
            .map(|_| s.spawn(leasesim_sql::Database::throwaway))
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for mut c in spinners {
        let _ = c.kill();
        let _ = c.wait();
    }
    for (i, db) in started.iter().enumerate() {
        assert!(db.is_ok(), "server {i}: {:?}", db.as_ref().err());
    }
    drop(started);
    // A socket path longer than the system allows: the error carries the server's own words.
    let deep = TempDir::new("sql-deep");
    let long = deep.join(&"d".repeat(90));
    std::fs::create_dir_all(&long).unwrap();
    let mut cmd = Command::new(leasesim_bin());
    cmd.args(["run", "w1-w2", "--seed", "0", "--coordinator"])
        .arg(coordinator("seed-postgres.sql"))
        .env("TMPDIR", &long)
        .env_remove("LEASESIM_DATABASE_URL");
    let f = run_with_limit(cmd, Duration::from_secs(300));
    assert_eq!(f.code, Some(2), "{}\n{}", f.out, f.err);
    assert_eq!(f.err.lines().count(), 1, "{}", f.err);
    assert!(f.err.contains("did not start, twice"), "{}", f.err);
    assert!(
        f.err.contains("too long"),
        "the server's log is quoted: {}",
        f.err
    );
}
