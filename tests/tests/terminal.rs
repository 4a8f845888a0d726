//! The program as a person runs it: at a terminal (under a pseudo-terminal, where the progress
//! bar draws), interrupted with Ctrl-C, piped into `head`, under a memory limit. Tests that pipe
//! the output of an in-process call cannot see a hang at a terminal or a finding lost at a
//! signal; these run the real binary.

use leasesim_tests::{leasesim_bin, run_with_limit, Finished, TempDir};
use std::process::Command;
use std::time::Duration;

/// `leasesim <args>` under a pseudo-terminal (`script`), bounded in time twice over: `timeout`
/// inside the terminal and a kill from outside.
fn at_terminal(args: &str, limit_s: u64) -> Finished {
    let inner = format!("timeout -k 5 {limit_s} {} {args}", leasesim_bin().display());
    let mut cmd = Command::new("script");
    cmd.args(["-qec", &inner, "/dev/null"]);
    run_with_limit(cmd, Duration::from_secs(limit_s + 15))
}

#[test]
fn the_main_command_finishes_at_a_terminal_with_its_results() {
    let dir = TempDir::new("terminal-main");
    // README's main command is `cargo run --release -- sweep`: every scenario, 1,000 seeds.
    let f = at_terminal(
        &format!("sweep --failures-dir {}", dir.join("f").display()),
        240,
    );
    assert!(!f.timed_out, "the sweep hung at a terminal: {}", f.out);
    assert_eq!(f.code, Some(0), "{}", f.out);
    assert!(f.out.contains("hazard coverage"), "{}", f.out);
    assert!(f.out.contains("sweep: 20000 runs"), "{}", f.out);
    assert!(
        f.out.contains("seeds ("),
        "the progress bar drew: {}",
        f.out
    );
}

#[test]
fn a_violating_sweep_finishes_at_a_terminal_with_its_failures() {
    let dir = TempDir::new("terminal-variant");
    let f = at_terminal(
        &format!(
            "sweep w1-w2 --seeds 300 --variant unconditional-commit --failures-dir {}",
            dir.join("f").display()
        ),
        120,
    );
    assert!(!f.timed_out, "the sweep hung at a terminal: {}", f.out);
    assert_eq!(f.code, Some(1), "{}", f.out);
    assert!(f.out.contains("300 FAILING"), "{}", f.out);
    assert!(f.out.contains(
        "reproduce: cargo run --release -- run w1-w2 --seed 0 --variant unconditional-commit"
    ));
    assert!(f.out.contains("sweep: 300 runs"), "{}", f.out);
    assert!(dir.join("f/sweep-unconditional-commit.txt").exists());
}

/// Sends a signal with the system's `kill` (the crate forbids unsafe code, so no libc here).
fn signal(pid: u32, sig: &str) {
    let status = Command::new("kill")
        .args([sig, &pid.to_string()])
        .status()
        .expect("kill runs");
    assert!(status.success());
}

/// The file a running sweep's list grows in: `<name>.partial-<digits>` beside its name.
fn growing(dir: &std::path::Path, name: &str) -> Option<std::path::PathBuf> {
    let prefix = format!("{name}.partial-");
    std::fs::read_dir(dir)
        .ok()?
        .flatten()
        .map(|e| e.path())
        .find(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with(&prefix))
        })
}

/// Waits until a running sweep has written 20 lines of failures (the list grows while it
/// runs, as they are found).
fn wait_for_failures(dir: &std::path::Path, name: &str) {
    let mut waited = 0;
    while growing(dir, name)
        .and_then(|p| std::fs::read_to_string(p).ok())
        .map_or(0, |s| s.lines().count())
        < 20
    {
        assert!(waited < 600, "no failure was written within a minute");
        std::thread::sleep(Duration::from_millis(100));
        waited += 1;
    }
}

#[test]
fn ctrl_c_prints_and_saves_what_the_sweep_found() {
    use std::io::Read;
    use std::process::Stdio;
    let dir = TempDir::new("sigint");
    let failures = dir.join("f");
    // A long hunt: V2 over the swarm fails about one seed in ten.
    let mut child = Command::new(leasesim_bin())
        .args([
            "sweep",
            "swarm",
            "--seeds",
            "10000000",
            "--variant",
            "unconditional-commit",
        ])
        .arg("--failures-dir")
        .arg(&failures)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("leasesim starts");
    let list = failures.join("sweep-unconditional-commit.txt");
    wait_for_failures(&failures, "sweep-unconditional-commit.txt");
    signal(child.id(), "-INT");
    let mut out = String::new();
    child
        .stdout
        .take()
        .expect("piped")
        .read_to_string(&mut out)
        .expect("output");
    let status = child.wait().expect("it ends");
    assert_eq!(status.code(), Some(130), "{out}");
    assert!(out.contains("sweep: INTERRUPTED after"), "{out}");
    assert_eq!(growing(&failures, "sweep-unconditional-commit.txt"), None);
    assert!(out.contains("FAILING"), "{out}");
    assert!(out.contains("reproduce: cargo run --release -- run swarm --seed"));
    // Every failing seed printed is in the list, and the list holds only seeds that ran.
    let listed = std::fs::read_to_string(&list).expect("the list");
    let seeds: Vec<u64> = listed
        .lines()
        .filter_map(|l| l.strip_prefix("swarm seed "))
        .map(|l| l.split(' ').next().unwrap().parse().unwrap())
        .collect();
    assert!(seeds.len() >= 10, "{listed}");
    assert!(
        seeds.windows(2).all(|w| w[0] < w[1]),
        "the list is in seed order"
    );
    for line in out.lines().filter(|l| l.starts_with("  seed ")) {
        let seed: u64 = line[7..].split(':').next().unwrap().parse().unwrap();
        assert!(
            seeds.contains(&seed),
            "printed seed {seed} is not in the list"
        );
    }
    let ran = out
        .lines()
        .find_map(|l| l.split("(seeds run: swarm ").nth(1))
        .expect("the seeds that ran are named");
    let ranges: Vec<(u64, u64)> = ran
        .split(')')
        .next()
        .unwrap()
        .split(", ")
        .map(|r| {
            let (a, b) = r.split_once("..").unwrap();
            (a.parse().unwrap(), b.parse().unwrap())
        })
        .collect();
    for s in &seeds {
        assert!(
            ranges.iter().any(|(a, b)| a <= s && s < b),
            "seed {s} outside {ran}"
        );
    }
    // Replay files for the printed failures are saved, and one reproduces its failure.
    let replay = failures.join(format!("swarm-unconditional-commit-seed{}.json", seeds[0]));
    assert!(replay.exists(), "{}", replay.display());
    let (code, text, _) = leasesim_tests::cli(&["replay", replay.to_str().unwrap()]);
    assert_eq!(code, 1);
    assert!(text.contains("identical to the recorded run"));
}

#[test]
fn a_closed_pipe_ends_quietly_with_the_runs_own_exit_code() {
    // Swarm seed 27's timeline is far longer than a pipe's buffer, so `head` closes the pipe
    // while leasesim still writes.
    for (variant, expected) in [("reference", 0), ("unconditional-commit", 1)] {
        let mut cmd = Command::new("bash");
        cmd.args([
            "-c",
            &format!(
                "set -o pipefail; {} run swarm --seed 27 --variant {variant} | head -1",
                leasesim_bin().display()
            ),
        ]);
        let f = run_with_limit(cmd, Duration::from_secs(60));
        assert_eq!(f.code, Some(expected), "{variant}: {}", f.err);
        assert!(f.err.is_empty(), "{variant}: {}", f.err);
        assert_eq!(f.out.lines().count(), 1);
    }
}

#[test]
fn a_replay_asking_for_every_limit_ends_with_a_verdict_within_bounded_memory() {
    let dir = TempDir::new("hungry");
    let (_, _, _) = leasesim_tests::cli(&[
        "run",
        "w1-w2",
        "--seed",
        "1",
        "--save",
        dir.join("base.json").to_str().unwrap(),
    ]);
    let mut doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("base.json")).unwrap()).unwrap();
    // Every worker renews each nanosecond and polls each nanosecond; the limits are the largest
    // a replay file may give.
    for w in doc["setup"]["workers"].as_array_mut().unwrap() {
        w["config"]["heartbeat_ns"] = 1.into();
        w["config"]["claim_poll_ns"] = 1.into();
    }
    doc["setup"]["limits"] = serde_json::json!({
        "event_budget": leasesim::setup::EVENT_BUDGET_MAX,
        "horizon_ns": 1u64 << 53,
        "queue_max": leasesim::setup::QUEUE_MAX,
    });
    doc["allow_unsafe_timing"] = true.into();
    doc.as_object_mut().unwrap().remove("expect");
    let file = dir.join("hungry.json");
    std::fs::write(&file, serde_json::to_vec(&doc).unwrap()).unwrap();
    // 1.5 GB of address space is far above what the largest allowed run needs.
    let mut cmd = Command::new("bash");
    cmd.args([
        "-c",
        &format!(
            "ulimit -v 1500000; exec {} replay {} --format json",
            leasesim_bin().display(),
            file.display()
        ),
    ]);
    let f = run_with_limit(cmd, Duration::from_secs(180));
    assert!(!f.timed_out);
    assert_eq!(f.code, Some(1), "a verdict, not a crash: {}", f.err);
    let v: serde_json::Value = serde_json::from_str(&f.out).expect("a JSON verdict");
    assert!(v["verdict"]["verdict"].is_string(), "{v}");
    assert!(v["events"].as_u64().unwrap() <= leasesim::setup::EVENT_BUDGET_MAX);
    // The same file asking for the old maximum budget (10^8 events, 8 GB) is refused.
    doc["setup"]["limits"]["event_budget"] = 100_000_000u64.into();
    std::fs::write(&file, serde_json::to_vec(&doc).unwrap()).unwrap();
    let (code, _, err) = leasesim_tests::cli(&["replay", file.to_str().unwrap()]);
    assert_eq!(code, 2);
    assert!(err.contains("event budget 1 to 4000000"), "{err}");
}

#[test]
fn special_files_are_refused_without_reading_them() {
    let dir = TempDir::new("special");
    let fifo = dir.join("fifo");
    assert!(Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    for file in ["/dev/zero", "/dev/urandom", fifo.to_str().unwrap(), "/tmp"] {
        for cmd in [
            vec!["replay", file],
            vec!["shrink", file],
            vec!["report", file, "--html", "/dev/null"],
        ] {
            let mut c = Command::new(leasesim_bin());
            c.args(&cmd);
            let f = run_with_limit(c, Duration::from_secs(30));
            assert!(!f.timed_out, "{cmd:?} hung");
            assert_eq!(f.code, Some(2), "{cmd:?}: {}", f.err);
            assert!(f.err.contains("not a regular file"), "{cmd:?}: {}", f.err);
            assert_eq!(f.err.lines().count(), 1, "{cmd:?}: {}", f.err);
        }
    }
}

#[test]
fn many_threads_under_an_address_space_limit_run_on_fewer_instead_of_aborting() {
    // `sweep --jobs 64` under `ulimit -v` ended in "memory allocation failed" or glibc's "failed
    // to register TLS destructor": each started thread reserves a 64 MiB malloc arena at its
    // first allocation, and 64 of them do not fit. The limits are all far above what the
    // process needs to start (about 150 MB on one thread) and far below what 64 threads take
    // (about 1.5 GB), so each must give the whole sweep on fewer threads, saying how many.
    let tmp = TempDir::new("threads-limit");
    for limit_kb in [300_000, 500_000, 800_000] {
        let mut cmd = Command::new("sh");
        cmd.args([
            "-c",
            &format!(
                "ulimit -v {limit_kb}; exec {} sweep w1-w2 --seeds 20000 --jobs 64 --failures-dir {} --format json",
                leasesim_bin().display(),
                tmp.join("f").display()
            ),
        ]);
        let f = run_with_limit(cmd, Duration::from_secs(120));
        assert!(!f.timed_out, "{limit_kb} KB");
        assert_eq!(
            f.code,
            Some(0),
            "{limit_kb} KB: a verdict, not a crash: {}",
            f.err
        );
        let v: serde_json::Value = serde_json::from_str(&f.out).expect("a JSON result");
        assert_eq!(v["runs"], 20_000, "{limit_kb} KB");
        assert_eq!(v["failing"], 0, "{limit_kb} KB");
        assert_eq!(v["verdict"], "held", "{limit_kb} KB");
        assert_eq!(v["threads_asked"], 64, "{limit_kb} KB");
        let used = v["threads"].as_u64().unwrap();
        assert!((1..64).contains(&used), "{limit_kb} KB: {used} threads");
    }
    // The text says it too.
    let mut cmd = Command::new("sh");
    cmd.args([
        "-c",
        &format!(
            "ulimit -v 500000; exec {} sweep w1-w2 --seeds 20000 --jobs 64 --failures-dir {}",
            leasesim_bin().display(),
            tmp.join("f").display()
        ),
    ]);
    let f = run_with_limit(cmd, Duration::from_secs(120));
    assert_eq!(f.code, Some(0), "{}", f.err);
    assert!(
        f.out
            .contains("of 64 asked (the process's address-space limit"),
        "{}",
        f.out
    );
}

#[test]
fn a_second_signal_ends_the_sweep_at_once_and_the_list_keeps_its_name() {
    let dir = TempDir::new("sigint-twice");
    let failures = dir.join("f");
    let name = "sweep-unconditional-commit.txt";
    // At the lowest priority, so that the shell sending the two signals below runs first.
    let mut child = Command::new("nice")
        .args(["-n", "19"])
        .arg(leasesim_bin())
        .args(["sweep", "swarm", "--seeds", "10000000"])
        .args(["--variant", "unconditional-commit", "--failures-dir"])
        .arg(&failures)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("leasesim starts");
    wait_for_failures(&failures, name);
    // Two different signals, so that the second is not merged into the first, from one shell
    // so that they come a few microseconds apart: the first asks the sweep to stop, the second
    // ends the process at once through its cleanups, before the list was finished.
    let pid = child.id();
    let both = Command::new("bash")
        .args(["-c", &format!("kill -INT {pid}; kill -TERM {pid}")])
        .status()
        .expect("bash runs");
    assert!(both.success());
    let status = child.wait().expect("it ends");
    assert!(
        matches!(status.code(), Some(130 | 143)),
        "ended by its own exit: {status:?}"
    );
    let listed = std::fs::read_to_string(failures.join(name)).expect("the list has its name");
    assert!(listed.lines().count() >= 20, "{listed}");
    assert!(listed.starts_with("swarm seed "), "{listed}");
    assert_eq!(growing(&failures, name), None, "no partial list is left");
}
