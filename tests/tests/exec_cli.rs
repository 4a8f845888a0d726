//! Processes through leasesim's command line, as a user runs them: the commands a sweep of a
//! Python worker prints run as printed, its replay files know the worker's file and refuse
//! another, a Ctrl-C ends every process leasesim started, and a bad `--worker` is a one-line
//! error.

use leasesim_tests::{leasesim_bin, TempDir};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// A copy of the example worker and its helper in a folder of the test's own.
fn worker_copy(dir: &Path) -> PathBuf {
    let w = dir.join("worker.py");
    std::fs::copy(root().join("tests/exec-examples/worker.py"), &w).unwrap();
    std::fs::copy(
        root().join("scenarios/exec/helpers/leasesim_process.py"),
        dir.join("leasesim_process.py"),
    )
    .unwrap();
    w
}

/// A command line through `sh` (the printed commands quote their arguments), in `dir`.
fn sh(dir: &Path, line: &str) -> (i32, String) {
    let line = line.replace(
        "cargo run --release -- ",
        &format!("{} ", leasesim_bin().display()),
    );
    let out = Command::new("sh")
        .args(["-c", &line])
        .current_dir(dir)
        .output()
        .unwrap();
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code().unwrap_or(-1), all)
}

#[test]
fn a_python_workers_sweep_prints_commands_that_run_as_printed_and_replays_know_its_file() {
    let dir = TempDir::new("exec-cli-printed");
    let w = worker_copy(&dir.0);
    let worker = format!("exec:python3 {} --bug", w.display());
    let (code, out) = sh(
        &dir.0,
        &format!("cargo run --release -- sweep late-tool-answer --seeds 0..3 --worker '{worker}'"),
    );
    assert_eq!(code, 1, "{out}");
    let list_path = std::fs::read_dir(dir.join("leasesim-failures"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|x| x == "txt"))
        .expect("the failing seeds' list");
    let list = std::fs::read_to_string(&list_path).unwrap();
    let finding = list.lines().next().unwrap();
    let said = finding.split_once(": ").unwrap().1;
    let rerun = list
        .lines()
        .find(|l| {
            l.trim_start()
                .starts_with("cargo run --release -- run late-tool-answer --seed 0")
        })
        .unwrap_or_else(|| panic!("a rerun command in:\n{list}"));
    let (code, again) = sh(&dir.0, rerun.trim());
    assert_eq!(code, 1, "{rerun}\n{again}");
    assert!(again.contains(said), "{said}\n{again}");
    // The shrunk counterexample's replay, as printed.
    let shown = out
        .lines()
        .find(|l| l.contains("first failure shrunk"))
        .and_then(|l| l.split_once("see it with: "))
        .map(|(_, c)| c.to_string())
        .unwrap_or_else(|| panic!("the shrunk replay's command in:\n{out}"));
    let (code, replayed) = sh(&dir.0, &shown);
    assert_eq!(code, 1, "{shown}\n{replayed}");
    let replay = list_path.with_file_name(format!(
        "late-tool-answer-{}-seed0.json",
        list_path
            .file_stem()
            .unwrap()
            .to_string_lossy()
            .trim_start_matches("sweep-")
    ));
    assert!(replay.exists(), "{}", replay.display());
    let r = replay.display();
    let (code, same) = sh(
        &dir.0,
        &format!("cargo run --release -- replay {r} --worker '{worker}'"),
    );
    assert_eq!(code, 1, "{same}");
    assert!(same.contains("identical to the recorded run"), "{same}");
    // Without the worker, and with the worker's file changed: one line each, exit 2.
    let (code, needs) = sh(&dir.0, &format!("cargo run --release -- replay {r}"));
    assert_eq!(code, 2, "{needs}");
    assert!(
        needs.contains("it was recorded with a process, --worker exec:python3"),
        "{needs}"
    );
    assert_eq!(needs.trim().lines().count(), 1, "{needs}");
    let mut text = std::fs::read_to_string(&w).unwrap();
    text.push_str("\n# changed after the replay was saved\n");
    std::fs::write(&w, text).unwrap();
    let (code, changed) = sh(
        &dir.0,
        &format!("cargo run --release -- replay {r} --worker '{worker}'"),
    );
    assert_eq!(code, 2, "{changed}");
    assert!(
        changed.contains("a file it names changed since"),
        "{changed}"
    );
}

#[test]
fn a_bad_worker_option_is_a_one_line_error() {
    let dir = TempDir::new("exec-cli-bad");
    for (arg, says) in [
        ("python3 worker.py", "expected exec:COMMAND"),
        ("exec:", "needs a command"),
        (
            "exec:no-such-program-here x.py",
            "no program 'no-such-program-here' on the PATH",
        ),
        ("exec:python3 'unclosed", "a quote is never closed"),
    ] {
        let out = Command::new(leasesim_bin())
            .args(["run", "w1-w2", "--seed", "1", "--worker", arg])
            .current_dir(&dir.0)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{arg}: {err}");
        assert!(err.contains(says), "{arg}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{arg}: {err}");
    }
}

/// Processes whose command line names `path`.
fn running(path: &str) -> Vec<String> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
        .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
        .filter(|c| c.contains(path) && !c.contains("sh -c"))
        .collect()
}

#[test]
fn ctrl_c_stops_a_sweep_of_processes_and_ends_every_process_it_started() {
    let dir = TempDir::new("exec-cli-signal");
    let w = worker_copy(&dir.0);
    let path = w.display().to_string();
    let mut child = Command::new(leasesim_bin())
        .args([
            "sweep", "--seeds", "0..", "--for", "120s", "--jobs", "2", "--worker",
        ])
        .arg(format!("exec:python3 {path}"))
        .current_dir(&dir.0)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Bounded: the processes are up within 20 s.
    for _ in 0..200 {
        if !running(&path).is_empty() {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(
        !running(&path).is_empty(),
        "the sweep started its processes"
    );
    std::thread::sleep(Duration::from_millis(1500));
    let _ = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status();
    // Bounded: the sweep ends within 60 s of the signal.
    let mut status = None;
    for _ in 0..600 {
        if let Some(s) = child.try_wait().unwrap() {
            status = Some(s);
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let Some(status) = status else {
        let _ = child.kill();
        panic!("the sweep did not end after Ctrl-C");
    };
    let out = child.wait_with_output().unwrap();
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(status.code(), Some(130), "{all}");
    assert!(all.contains("sweep:"), "it reports what it ran: {all}");
    // The command it prints to repeat exactly what ran names the process, and runs.
    let repeat = all
        .lines()
        .find_map(|l| l.strip_prefix("repeat exactly these runs: "))
        .unwrap_or_else(|| panic!("a repeat command in:\n{all}"));
    let first = repeat.split("; ").next().unwrap();
    assert!(first.contains("--worker 'exec:python3"), "{first}");
    let (code, again) = sh(&dir.0, first);
    assert!(code == 0 || code == 1, "{first}\n{again}");
    assert!(again.contains("sweep: "), "{first}\n{again}");
    // Every process it started has ended (they leave with leasesim, within a moment).
    for _ in 0..50 {
        if running(&path).is_empty() {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(running(&path), Vec::<String>::new());
}

#[test]
fn every_command_takes_a_process() {
    let dir = TempDir::new("exec-cli-every");
    let payments = root().join("tests/exec-examples/payments.js");
    let held = format!("exec:node {}", payments.display());
    let unfenced = format!("{held} --forget-fence");
    let bin = leasesim_bin().display().to_string();
    let cases: &[(&str, i32, &str)] = &[
        (
            &format!("{bin} explore w1-w2 --faults 1 --receiver '{held}'"),
            0,
            "breaks I1-I8",
        ),
        (
            &format!("{bin} matrix --seeds 5 --out m --receiver '{held}'"),
            0,
            "matrix written to m/matrix.md",
        ),
        (
            &format!("{bin} bench --seeds 100 --shell-seeds 10 --receiver '{held}'"),
            0,
            "ratio sim/tokio",
        ),
        (
            &format!("{bin} run w1-w2 --seed 1 --save s.json --receiver '{unfenced}'"),
            1,
            "no-double-effect (I2)",
        ),
        (
            &format!("{bin} report s.json --html s.html --receiver '{unfenced}'"),
            1,
            "wrote s.html",
        ),
        (
            &format!("{bin} shrink s.json --receiver '{unfenced}'"),
            1,
            "--receiver 'exec:node",
        ),
        (
            &format!("{bin} replay s.shrunk.json --receiver '{unfenced}'"),
            1,
            "no-double-effect (I2)",
        ),
    ];
    for (line, code, says) in cases {
        let (got, out) = sh(&dir.0, line);
        assert_eq!(got, *code, "{line}\n{out}");
        assert!(out.contains(says), "{line}: {says}\n{out}");
    }
    let matrix = std::fs::read_to_string(dir.join("m/matrix.md")).unwrap();
    assert!(matrix.contains("exec:node"), "{matrix}");
}
