//! Shared helpers for leasesim's integration tests: run a scenario by name and read facts off
//! its trace. The tests themselves live in `tests/`.

use leasesim::run::{run_setup, RunResult};
use leasesim::scenarios;
use leasesim_protocol::{Event, Msg, Variant};
use leasesim_sim::{EventKind, TraceEvent};

/// Runs one seed of a named scenario.
pub fn run(scenario: &str, seed: u64, variant: Variant) -> RunResult {
    let def = scenarios::find(scenario).expect("a known scenario");
    run_setup(&def.build(seed, variant), seed)
}

/// Every journal note of a node, in order, with the true time.
pub fn notes<'a>(r: &'a RunResult, node: &str) -> Vec<(u64, &'a Event)> {
    let id = node_id(r, node);
    r.trace
        .iter()
        .filter(|e| e.node == id)
        .filter_map(|e| match &e.kind {
            EventKind::Note { note } => Some((e.t, note)),
            _ => None,
        })
        .collect()
}

/// Every message a node sent, with the trace event.
pub fn sends<'a>(r: &'a RunResult, node: &str) -> Vec<&'a TraceEvent<Msg, Event>> {
    let id = node_id(r, node);
    r.trace
        .iter()
        .filter(|e| e.node == id && matches!(e.kind, EventKind::Send { .. }))
        .collect()
}

/// A node's id by display name.
pub fn node_id(r: &RunResult, node: &str) -> u32 {
    r.nodes
        .iter()
        .position(|n| n.name == node)
        .unwrap_or_else(|| panic!("no node named {node}")) as u32
}

/// Runs the command line in-process; returns (exit code, stdout, stderr).
pub fn cli(args: &[&str]) -> (i32, String, String) {
    let mut out = Vec::new();
    let mut err = Vec::new();
    let mut argv = vec!["leasesim".to_string()];
    argv.extend(args.iter().map(|s| s.to_string()));
    let code = leasesim_cli::run_cli(argv, &mut out, &mut err, &leasesim::Builder::stock());
    (
        code,
        String::from_utf8(out).expect("utf-8 output"),
        String::from_utf8(err).expect("utf-8 errors"),
    )
}

/// The `leasesim` binary of this build, built on first use (`cargo test` builds only the
/// binaries of the package under test, and this package is not the one that has it). Tests that
/// must see the program as a person does (a terminal, a signal, a closed pipe, a memory limit)
/// run it as a process.
pub fn leasesim_bin() -> std::path::PathBuf {
    static BIN: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();
    BIN.get_or_init(|| build_bin(&["-p", "leasesim-cli", "--bin", "leasesim"], "leasesim"))
        .clone()
}

/// The async example's own command line (`async-leasesim`, in its `sim` build), built on first
/// use as [`leasesim_bin`] is: the guide's chapter on async workers runs it.
pub fn async_leasesim_bin() -> std::path::PathBuf {
    static BIN: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();
    BIN.get_or_init(|| {
        let args = [
            "-p",
            "leasesim-async-example",
            "--no-default-features",
            "--features",
            "sim",
            "--bin",
            "async-leasesim",
        ];
        build_bin(&args, "async-leasesim")
    })
    .clone()
}

/// Builds a binary of the workspace (`cargo build ARGS`) in this test's own profile and
/// target folder; its path.
fn build_bin(args: &[&str], name: &str) -> std::path::PathBuf {
    // This test executable lives in target/<profile>/deps/; the binary in target/<profile>/.
    let exe = std::env::current_exe().expect("the test executable has a path");
    let profile_dir = exe
        .parent()
        .and_then(|deps| deps.parent())
        .expect("target/<profile>/deps");
    let target_dir = profile_dir.parent().expect("target/");
    let profile = match profile_dir.file_name().and_then(|n| n.to_str()) {
        Some("debug") | None => "dev",
        Some(other) => other,
    };
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let status = std::process::Command::new(cargo)
        .args(["build", "--quiet"])
        .args(args)
        .args(["--profile", profile])
        .arg("--target-dir")
        .arg(target_dir)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .status()
        .expect("cargo runs");
    assert!(status.success(), "building {name} failed");
    let bin = profile_dir.join(name);
    assert!(bin.exists(), "{} was not built", bin.display());
    bin
}

/// A fresh, empty temporary folder for one test, removed when the value is dropped.
pub struct TempDir(pub std::path::PathBuf);

impl TempDir {
    /// A fresh folder named after the test, the process and a number of its own: tests of one
    /// binary run in parallel threads of one process, and two asking for the same name must not
    /// share (or remove) each other's folder.
    pub fn new(name: &str) -> TempDir {
        static MADE: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = MADE.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let path = std::env::temp_dir().join(format!("leasesim-{name}-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).expect("a temporary folder");
        TempDir(path)
    }

    /// A path inside it.
    pub fn join(&self, name: &str) -> std::path::PathBuf {
        self.0.join(name)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// What a process did: exit code (`None` when a signal ended it), its output, and whether it
/// had to be killed for running past its time.
#[derive(Debug)]
pub struct Finished {
    /// Exit code.
    pub code: Option<i32>,
    /// Standard output.
    pub out: String,
    /// Standard error.
    pub err: String,
    /// Whether it was killed at the time limit.
    pub timed_out: bool,
}

/// Runs `cmd` with its output captured, killing it after `limit`: a hang becomes a failing
/// assertion, never a stuck test suite.
pub fn run_with_limit(mut cmd: std::process::Command, limit: std::time::Duration) -> Finished {
    use std::io::Read;
    use std::process::Stdio;
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the command starts");
    // Readers on threads, so a chatty child never blocks on a full pipe.
    let mut stdout = child.stdout.take().expect("piped");
    let mut stderr = child.stderr.take().expect("piped");
    let out = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stdout.read_to_string(&mut s);
        s
    });
    let err = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stderr.read_to_string(&mut s);
        s
    });
    #[allow(clippy::disallowed_methods)] // a test's own time limit, outside any simulated world
    let started = std::time::Instant::now();
    let mut timed_out = false;
    let status = loop {
        if let Some(status) = child.try_wait().expect("the child can be waited for") {
            break status;
        }
        if started.elapsed() > limit {
            timed_out = true;
            let _ = child.kill();
            break child.wait().expect("the killed child ends");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    Finished {
        code: status.code(),
        out: out.join().unwrap_or_default(),
        err: err.join().unwrap_or_default(),
        timed_out,
    }
}

/// The README and the guide's pages, compiled as doctests: every Rust block in them builds (and,
/// unless it says `no_run`, runs) against the crates as they are (`tests/guide.rs` runs their
/// shell commands).
#[cfg(doctest)]
pub mod guide {
    #[doc = include_str!("../../README.md")]
    pub struct Readme;
    #[doc = include_str!("../../docs/your-implementation.md")]
    pub struct YourImplementation;
    #[doc = include_str!("../../docs/process-protocol.md")]
    pub struct ProcessProtocol;
    #[doc = include_str!("../../docs/async-worker.md")]
    pub struct AsyncWorker;
    #[doc = include_str!("../../docs/sql-queue.md")]
    pub struct SqlQueue;
    #[doc = include_str!("../../docs/audit.md")]
    pub struct Audit;
    #[doc = include_str!("../../docs/journal-format.md")]
    pub struct JournalFormat;
    #[doc = include_str!("../../docs/findings.md")]
    pub struct Findings;
    #[doc = include_str!("../../docs/explore.md")]
    pub struct Explore;
    #[doc = include_str!("../../docs/ci.md")]
    pub struct Ci;
    #[doc = include_str!("../../docs/protocol.md")]
    pub struct Protocol;
    #[doc = include_str!("../../docs/commands.md")]
    pub struct Commands;
    #[doc = include_str!("../../docs/performance.md")]
    pub struct Performance;
    #[doc = include_str!("../../docs/testing.md")]
    pub struct Testing;
}
