//! Links planted at the paths leasesim writes (issue 31): at every output a command names or
//! makes up (each output flag, the failure list and replays a failing sweep saves, the shrunk
//! replay, the matrix's and explore's files, the old name of the folder probe, the library's
//! `target/leasesim-failures/` files), a symbolic link to a "victim" file outside the output
//! folder. The command must replace the link with its output and leave the victim as it was,
//! or, for `--summary` (appended to), refuse the link with exit 2. Before the fix every output
//! was opened with `O_CREAT | O_TRUNC` through whatever link was there.

#![cfg(unix)]

use leasesim::sweep::{SeedRange, Shard, SweepConfig};
use leasesim::{scenarios, Machines, Variant};
use leasesim_tests::{cli, TempDir};
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// What a command must do with a link planted at one of its paths.
#[derive(Clone, Copy, Debug)]
enum Link {
    /// Replace it with its output, a regular file that contains this text.
    Replaced(&'static str),
    /// Leave it alone: a name the command must not use (the old, guessable probe name).
    Untouched,
    /// Refuse it before any work: exit 2 and a one-line error that says it is a link.
    Refused,
}

/// One command and the paths a link is planted at before it runs.
struct Row {
    args: Vec<String>,
    planted: Vec<(PathBuf, Link)>,
}

/// A file a planted link points to: what it held and when it was last written.
struct Victim {
    path: PathBuf,
    text: String,
    modified: SystemTime,
}

impl Victim {
    fn new(path: PathBuf) -> Victim {
        let text = format!("{}: nothing may write here\n", path.display());
        std::fs::write(&path, &text).unwrap();
        let modified = std::fs::metadata(&path).unwrap().modified().unwrap();
        Victim {
            path,
            text,
            modified,
        }
    }

    /// What happened to it, if anything.
    fn changed(&self) -> Option<String> {
        let text = std::fs::read_to_string(&self.path).unwrap_or_else(|e| format!("<{e}>"));
        let modified = std::fs::metadata(&self.path)
            .and_then(|m| m.modified())
            .ok();
        if text != self.text {
            return Some(format!("now holds {:?}", cut(&text)));
        }
        (modified != Some(self.modified)).then(|| "was written (its mtime moved)".to_string())
    }
}

fn cut(text: &str) -> &str {
    &text[..text.char_indices().nth(80).map_or(text.len(), |(i, _)| i)]
}

/// Plants a link to a fresh victim (in `victims`) at each of a row's paths.
fn plant(victims: &Path, name: &str, planted: &[(PathBuf, Link)]) -> Vec<Victim> {
    planted
        .iter()
        .enumerate()
        .map(|(i, (path, _))| {
            let victim = Victim::new(victims.join(format!("{name}-{i}")));
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            symlink(&victim.path, path).unwrap();
            victim
        })
        .collect()
}

/// What is wrong at one planted path after the command ran.
fn judge(path: &Path, link: Link, victim: &Victim) -> Option<String> {
    if let Some(what) = victim.changed() {
        return Some(format!("the victim of {} {what}", path.display()));
    }
    let meta = std::fs::symlink_metadata(path);
    match link {
        Link::Replaced(marker) => {
            if !meta.as_ref().is_ok_and(|m| m.is_file()) {
                return Some(format!(
                    "{} is not a regular file: {meta:?}",
                    path.display()
                ));
            }
            let text = std::fs::read_to_string(path).unwrap_or_default();
            (!text.contains(marker))
                .then(|| format!("{} lacks {marker:?}: {:?}", path.display(), cut(&text)))
        }
        Link::Untouched | Link::Refused => (std::fs::read_link(path).ok().as_deref()
            != Some(victim.path.as_path()))
        .then(|| format!("the link at {} was changed: {meta:?}", path.display())),
    }
}

/// Runs every row (in this process, like `cli.rs`) and returns every problem found, so that
/// one run of the test shows each path that was written through.
fn check(root: &Path, rows: &[Row]) -> Vec<String> {
    let victims = root.join("victims");
    std::fs::create_dir_all(&victims).unwrap();
    let mut problems = Vec::new();
    for (r, row) in rows.iter().enumerate() {
        let victim_list = plant(&victims, &format!("row{r}"), &row.planted);
        let args: Vec<&str> = row.args.iter().map(String::as_str).collect();
        let shown = args.join(" ");
        let (code, _, err) = cli(&args);
        let refused = row.planted.iter().any(|(_, l)| matches!(l, Link::Refused));
        if refused && !(code == 2 && err.lines().count() == 1 && err.contains("symbolic link")) {
            problems.push(format!("{shown}: not refused (exit {code}): {err}"));
        } else if !refused && code == 2 {
            problems.push(format!("{shown}: exit 2: {err}"));
        }
        for ((path, link), victim) in row.planted.iter().zip(&victim_list) {
            if let Some(p) = judge(path, *link, victim) {
                problems.push(format!("{shown}: {p}"));
            }
        }
    }
    problems
}

/// The inputs some commands read, made first, with no link anywhere near them.
fn inputs(root: &Path) -> PathBuf {
    let dir = root.join("inputs");
    std::fs::create_dir_all(&dir).unwrap();
    for template in [
        "run w1-w2 --seed 1 --save %r.json --journal %j.jsonl",
        "run w1-w2 --seed 1 --variant unconditional-commit --save %v2.json",
        "sweep w1-w2 --seeds 4 --shard 1/2 --json %s1.json",
        "sweep w1-w2 --seeds 4 --shard 2/2 --json %s2.json",
    ] {
        let args = words(template, &dir, &dir);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let (code, _, err) = cli(&args);
        assert!(code == 0 || code == 1, "{args:?}: {err}");
    }
    dir
}

/// A command line from a template: `@rel` is `rel` in the output folder, `%name` an input.
fn words(template: &str, out: &Path, inputs: &Path) -> Vec<String> {
    template
        .split_whitespace()
        .map(|w| match (w.strip_prefix('@'), w.strip_prefix('%')) {
            (Some(rel), _) => out.join(rel).display().to_string(),
            (_, Some(name)) => inputs.join(name).display().to_string(),
            _ => w.to_string(),
        })
        .collect()
}

/// The table: each command, and the paths it writes with what it must do with a link there.
fn rows(root: &Path, inputs: &Path) -> Vec<Row> {
    let out = root.join("out");
    let o = |rel: &str| out.join(rel);
    let row = |template: &str, planted: &[(&str, Link)]| Row {
        args: words(template, &out, inputs),
        planted: planted.iter().map(|&(rel, l)| (o(rel), l)).collect(),
    };
    let html = Link::Replaced("<!DOCTYPE html>");
    let replay = Link::Replaced("\"format\": \"leasesim-replay\"");
    let journal = Link::Replaced("{\"journal\":\"leasesim\"");
    let trace = Link::Replaced("\"trace_hash\"");
    let markdown = Link::Replaced("```mermaid");
    let matrix = Link::Replaced("# leasesim variant matrix");
    let junit = Link::Replaced("<testsuites name=\"leasesim");
    let svg = Link::Replaced("<svg");
    let list = Link::Replaced("w1-w2 seed 0 variant unconditional-commit: no-stale-commit");
    // The folder probe's old name, guessable from the process id (these commands run in this
    // process).
    let probe = |dir: &str| format!("{dir}/.leasesim-probe-{}", std::process::id());
    let (sweep_probe, explore_probe) = (probe("sweep/f"), probe("explore"));
    // A copy of the failing replay, so that `shrink` writes its default output beside it.
    std::fs::create_dir_all(o("beside")).unwrap();
    std::fs::copy(inputs.join("v2.json"), o("beside/v2.json")).unwrap();
    let sweep = "sweep w1-w2 --seeds 3 --variant unconditional-commit --failures-dir @sweep/f";
    let explored = "explore/explore-w1-w2-unconditional-commit-seed1-no-stale-commit";
    vec![
        row(
            "run w1-w2 --seed 1 --trace @run/t.json --journal @run/j.jsonl --journal-dir @run/jd \
             --html @run/h.html --markdown @run/m.md --save @run/s.json",
            &[
                ("run/t.json", trace),
                ("run/j.jsonl", journal),
                ("run/jd/coord.jsonl", journal),
                ("run/jd/W1.jsonl", journal),
                ("run/h.html", html),
                ("run/m.md", markdown),
                ("run/s.json", replay),
            ],
        ),
        row(
            "replay %r.json --trace @replay/t.json",
            &[("replay/t.json", trace)],
        ),
        row(
            "report %r.json --html @report/h.html --markdown @report/m.md",
            &[("report/h.html", html), ("report/m.md", markdown)],
        ),
        row(
            "shrink %v2.json --out @shrink/s.json",
            &[("shrink/s.json", replay)],
        ),
        row(
            "shrink @beside/v2.json",
            &[("beside/v2.shrunk.json", replay)],
        ),
        row(
            &format!("{sweep} --json @sweep/s.json --junit @sweep/j.xml"),
            &[
                ("sweep/f/sweep-unconditional-commit.txt", list),
                ("sweep/f/w1-w2-unconditional-commit-seed0.json", replay),
                ("sweep/f/w1-w2-unconditional-commit-seed1.json", replay),
                (
                    "sweep/f/w1-w2-unconditional-commit-seed0.shrunk.json",
                    replay,
                ),
                (
                    "sweep/s.json",
                    Link::Replaced("\"format\": \"leasesim-sweep\""),
                ),
                ("sweep/j.xml", junit),
                (&sweep_probe, Link::Untouched),
            ],
        ),
        row(
            &format!("{sweep} --summary @sweep/summary.md"),
            &[("sweep/summary.md", Link::Refused)],
        ),
        row(
            "matrix --seeds 1 --out @matrix --json @matrix.json --junit @matrix.xml",
            &[
                ("matrix/matrix.md", matrix),
                ("matrix/matrix.html", html),
                ("matrix/counterexamples/unconditional-commit.json", replay),
                ("matrix/counterexamples/unconditional-commit.html", html),
                ("matrix.json", Link::Replaced("\"cells\"")),
                ("matrix.xml", junit),
            ],
        ),
        row(
            "matrix --seeds 1 --out @matrix-refused --summary @matrix-summary.md",
            &[("matrix-summary.md", Link::Refused)],
        ),
        row(
            "advise --lease 90s --heartbeat 30s --jitter 20s --misses 1 --plot @advise/p.svg",
            &[("advise/p.svg", svg)],
        ),
        row(
            "audit %j.jsonl --html @audit/h.html",
            &[("audit/h.html", html)],
        ),
        row(
            "explore w1-w2 --faults 1 --seed 1 --variant unconditional-commit \
             --kinds isolate,pause --failures-dir @explore",
            &[
                (&format!("{explored}.json"), replay),
                (&format!("{explored}.html"), html),
                (&explore_probe, Link::Untouched),
            ],
        ),
        row(
            "merge %s1.json %s2.json --json @merge/m.json --junit @merge/m.xml",
            &[
                ("merge/m.json", Link::Replaced("\"merged\"")),
                ("merge/m.xml", junit),
            ],
        ),
        row(
            "examples --out @examples",
            &[
                ("examples/w1-w2-seed1-reference.html", html),
                ("examples/w1-w2-seed1-unconditional-commit.md", markdown),
                ("examples/matrix.md", matrix),
                ("examples/counterexamples/unconditional-commit.json", replay),
                ("examples/advise-90s-30s-20s-1.svg", svg),
            ],
        ),
    ]
}

#[test]
fn every_command_replaces_a_planted_link_and_never_writes_through_it() {
    let dir = TempDir::new("links");
    let inputs = inputs(&dir.0);
    let rows = rows(&dir.0, &inputs);
    let problems = check(&dir.0, &rows);
    assert!(
        problems.is_empty(),
        "{} problem(s):\n{}",
        problems.len(),
        problems.join("\n")
    );
}

#[test]
fn the_library_saves_a_failure_through_no_link() {
    let dir = TempDir::new("links-library");
    let config = SweepConfig {
        // Its own shard, so that no CI variable narrows it.
        shard: Some(Shard { index: 1, count: 1 }),
        ..SweepConfig::new(
            vec![scenarios::find("w1-w2").unwrap()],
            SeedRange { start: 0, end: 3 },
            Machines::variant(Variant::UnconditionalCommit),
        )
    };
    // The first run says where this test's failure is saved (under the build's
    // target/leasesim-failures/, named after the test); the second finds links there.
    let saved_at = |message: &str| -> PathBuf {
        let line = message
            .lines()
            .find_map(|l| l.trim().strip_prefix("saved: "));
        PathBuf::from(line.unwrap_or_else(|| panic!("no saved file named: {message}")))
    };
    let first = config.try_check().expect_err("the variant fails");
    let saved = saved_at(&first);
    let shrunk = saved.with_file_name(
        saved
            .file_name()
            .unwrap()
            .to_string_lossy()
            .replace(".json", ".shrunk.json"),
    );
    assert!(shrunk.exists(), "{first}");
    for p in [&saved, &shrunk] {
        std::fs::remove_file(p).unwrap();
    }
    let victims: Vec<Victim> = [&saved, &shrunk]
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let v = Victim::new(dir.join(&format!("victim-{i}")));
            symlink(&v.path, p).unwrap();
            v
        })
        .collect();
    let again = config.try_check().expect_err("the variant fails again");
    assert_eq!(saved_at(&again), saved);
    let problems: Vec<String> = [&saved, &shrunk]
        .iter()
        .zip(&victims)
        .filter_map(|(p, v)| judge(p, Link::Replaced("\"format\": \"leasesim-replay\""), v))
        .collect();
    for p in [&saved, &shrunk] {
        let _ = std::fs::remove_file(p);
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
