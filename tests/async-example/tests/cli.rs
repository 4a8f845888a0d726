//! The async worker's own command line (`async-leasesim`, through `leasesim_cli::main_with`),
//! run as a user runs it: a real process in a fresh folder. The default sweep catches each bug
//! and saves its seeds; every command it prints runs as printed and repeats the finding; replay,
//! shrink, report, explore and matrix take the async machines; a journal an async worker wrote is
//! audited; and a sweep's findings do not depend on how many threads ran it.
#![cfg(feature = "sim")]

use std::path::{Path, PathBuf};
use std::process::Command;

/// What a command printed, and how it ended.
struct Ran {
    code: i32,
    out: String,
    err: String,
}

impl Ran {
    fn all(&self) -> String {
        format!("{}\n{}", self.out, self.err)
    }
}

/// The example's binary with `args`, in `dir`.
fn cli(dir: &Path, args: &[&str]) -> Ran {
    let out = Command::new(env!("CARGO_BIN_EXE_async-leasesim"))
        .args(args)
        .current_dir(dir)
        .output()
        .expect("the example's binary starts");
    Ran {
        code: out.status.code().unwrap_or(-1),
        out: String::from_utf8_lossy(&out.stdout).into_owned(),
        err: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// A fresh folder of this test's own under cargo's temporary folder for tests.
fn fresh_dir(test: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("async-cli-{test}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir(&dir).expect("a fresh folder");
    dir
}

/// How every command the binary prints starts it: with the feature it needs.
const PREFIX: &str = "cargo run --release -p leasesim-async-example --no-default-features --features sim --bin async-leasesim -- ";

/// The arguments of a printed command, which must start the example's binary as it is built.
fn printed_args(line: &str) -> Vec<String> {
    let at = line
        .find(PREFIX)
        .unwrap_or_else(|| panic!("a printed command starts with {PREFIX:?}: {line}"));
    line[at + PREFIX.len()..]
        .split_whitespace()
        .map(str::to_string)
        .collect()
}

/// The line of `text` that contains `what`.
fn line_with<'a>(text: &'a str, what: &str) -> &'a str {
    text.lines()
        .find(|l| l.contains(what))
        .unwrap_or_else(|| panic!("no line with {what:?} in:\n{text}"))
}

#[test]
fn the_default_sweep_catches_renewals_on_the_tool_calls_task_and_every_printed_command_repeats_it()
{
    let dir = fresh_dir("renew");
    let variant = "async-worker-renew-on-tool-task";
    let sweep = cli(&dir, &["sweep", "--variant", variant, "--seeds", "0..20"]);
    assert_eq!(sweep.code, 1, "{}", sweep.all());
    let list = dir.join(format!("leasesim-failures/sweep-{variant}.txt"));
    let listed = std::fs::read_to_string(&list).expect("the failing seeds are listed");
    // The first failing seed of the list, and the command printed under it.
    let finding = listed.lines().next().expect("a failing seed");
    assert!(finding.starts_with("w1-w2 seed 0 variant"), "{finding}");
    let rerun = printed_args(line_with(&listed, "-- run w1-w2 --seed 0"));
    let args: Vec<&str> = rerun.iter().map(String::as_str).collect();
    let again = cli(&dir, &args);
    assert_eq!(again.code, 1, "{}", again.all());
    let said = finding
        .split_once(": ")
        .expect("a finding after its seed")
        .1;
    assert!(again.out.contains(said), "{said}\n{}", again.out);

    // The shrunk counterexample the sweep printed replays, still failing the same way.
    let shrunk = printed_args(line_with(&sweep.all(), "first failure shrunk"));
    assert_eq!(shrunk[0], "replay");
    let replay = cli(&dir, &[&shrunk[0], &shrunk[1]]);
    assert_eq!(replay.code, 1, "{}", replay.all());
    assert!(replay.out.contains("liveness (I7)"), "{}", replay.out);

    // Shrinking the saved seed again writes the same smallest plan; the report draws it.
    let saved = format!("leasesim-failures/w1-w2-{variant}-seed0.json");
    let shrink = cli(&dir, &["shrink", &saved]);
    assert_eq!(shrink.code, 1, "{}", shrink.all());
    assert!(shrink.all().contains("minimal plan:"), "{}", shrink.all());
    // A report of a failing run ends as the run does.
    let report = cli(&dir, &["report", &saved, "--html", "seed0.html"]);
    assert_eq!(report.code, 1, "{}", report.all());
    let page = std::fs::read_to_string(dir.join("seed0.html")).expect("the timeline page");
    assert!(
        page.contains(variant) && page.contains("W1"),
        "a page of the run"
    );
}

#[test]
fn the_fixed_worker_holds_in_explore_and_the_matrix_names_both_bugs() {
    let dir = fresh_dir("explore");
    let explore = cli(&dir, &["explore", "w1-w2", "--faults", "1"]);
    assert_eq!(explore.code, 0, "{}", explore.all());
    assert!(
        explore
            .out
            .contains("at the 26 anchors of w1-w2 seed 0 on async-worker breaks I1-I8"),
        "{}",
        explore.out
    );
    let matrix = cli(&dir, &["matrix", "--seeds", "20", "--out", "m"]);
    assert_eq!(matrix.code, 0, "{}", matrix.all());
    let table = std::fs::read_dir(dir.join("m"))
        .expect("the matrix's folder")
        .filter_map(|e| std::fs::read_to_string(e.ok()?.path()).ok())
        .find(|t| t.contains('|'))
        .expect("the matrix's table");
    // The fixed worker, first, stands as the matrix's reference; both bugs are caught.
    assert!(table.contains("Reference: clean"), "{table}");
    assert!(table.contains("Variants caught: 2 of 2"), "{table}");
    for variant in [
        "async-worker-renew-on-tool-task",
        "async-worker-deadline-without-drift",
    ] {
        let row = line_with(&table, &format!("| `{variant}` | "));
        assert!(row.contains("| yes |"), "{row}");
    }
}

#[test]
fn a_journal_written_by_the_async_worker_is_audited() {
    let dir = fresh_dir("audit");
    let run = cli(
        &dir,
        &["run", "w1-w2", "--seed", "1", "--journal-dir", "journal"],
    );
    assert_eq!(run.code, 0, "{}", run.all());
    let w1 = std::fs::read_to_string(dir.join("journal/W1.jsonl")).expect("W1's own journal");
    for event in ["\"job_claimed\"", "\"heartbeat_ok\"", "\"commit_sent\""] {
        assert!(
            w1.contains(event),
            "the async worker journaled {event}:\n{w1}"
        );
    }
    let audit = cli(&dir, &["audit", "journal"]);
    assert_eq!(audit.code, 0, "{}", audit.all());
    assert!(
        audit.out.contains(" 0 problem(s)")
            && audit
                .out
                .contains("judged: quiescent-holder (I5): on each holder's own records"),
        "{}",
        audit.out
    );
    assert!(audit.out.contains("verdict: HELD"), "{}", audit.out);
}

#[test]
fn a_sweep_finds_the_same_seeds_on_one_thread_and_on_two() {
    let variant = "async-worker-deadline-without-drift";
    let lists: Vec<String> = ["1", "2"]
        .iter()
        .map(|jobs| {
            let dir = fresh_dir(&format!("jobs{jobs}"));
            let sweep = cli(
                &dir,
                &[
                    "sweep",
                    "--variant",
                    variant,
                    "--seeds",
                    "0..40",
                    "--jobs",
                    jobs,
                    "--check-determinism",
                ],
            );
            assert_eq!(sweep.code, 1, "{}", sweep.all());
            assert!(!sweep.all().contains("nondetermin"), "{}", sweep.all());
            std::fs::read_to_string(dir.join(format!("leasesim-failures/sweep-{variant}.txt")))
                .expect("the failing seeds are listed")
        })
        .collect();
    assert!(
        lists[0].contains("clock-skew-fast-worker seed"),
        "{}",
        lists[0]
    );
    assert_eq!(lists[0], lists[1]);
}
