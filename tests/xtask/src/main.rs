//! `cargo xtask test`: the whole test suite on any machine of this project's kind, fresh or not.
//!
//! It installs what a fresh machine lacks (the formatter and linter components, Debian's
//! Chromium for the browser test, PostgreSQL's server for the SQL coordinator's tests, Python
//! and Node.js for the process examples) and then
//! runs, in order and stopping at the first failure:
//! `cargo fmt --check`, `cargo clippy -D warnings`, `cargo test --workspace`, and the madsim
//! engine's tests in their own build. Nothing is skipped: a test that needs something this
//! program cannot install fails and says how to install it.

use std::process::{Command, ExitCode};

/// The cargo that started this program (the toolchain the suite must run on).
fn cargo() -> String {
    std::env::var("CARGO").unwrap_or_else(|_| "cargo".into())
}

/// One step: a command line, shown before it runs, and how long it took after.
fn run(what: &str, program: &str, args: &[&str]) -> Result<(), String> {
    println!("xtask: {what}: {program} {}", args.join(" "));
    let program = if program == "cargo" {
        cargo()
    } else {
        program.to_string()
    };
    // The test command's own step timing, not simulated code.
    #[allow(clippy::disallowed_methods)]
    let started = std::time::Instant::now();
    let status = Command::new(&program)
        .args(args)
        .status()
        .map_err(|e| format!("{what}: cannot start {program}: {e}"))?;
    println!(
        "xtask: {what} took {:.0} s",
        started.elapsed().as_secs_f64()
    );
    if status.success() {
        Ok(())
    } else {
        Err(format!("{what} failed ({status})"))
    }
}

/// Whether `program --version` runs.
fn present(program: &str, args: &[&str]) -> bool {
    Command::new(program)
        .args(args)
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Whether this process runs as root (package installs need it).
fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

/// Installs Debian packages with apt-get, as root or through sudo without a password.
fn apt_install(packages: &[&str]) -> Result<(), String> {
    let how = format!("apt-get install {}", packages.join(" "));
    let (program, prefix): (&str, &[&str]) = if is_root() {
        ("apt-get", &[])
    } else if present("sudo", &["-n", "true"]) {
        ("sudo", &["-n", "apt-get"])
    } else {
        return Err(format!(
            "{} missing and this user cannot install packages: run `sudo {how}` and try again",
            packages.join(", ")
        ));
    };
    let with = |args: &[&str]| -> Vec<String> {
        prefix.iter().chain(args).map(|s| s.to_string()).collect()
    };
    let update = with(&["update", "-qq"]);
    let install: Vec<String> = with(&["install", "-y", "-qq"])
        .into_iter()
        .chain(packages.iter().map(|s| s.to_string()))
        .collect();
    for args in [update, install] {
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        println!("xtask: installing: {program} {}", refs.join(" "));
        let status = Command::new(program)
            .args(&refs)
            .env("DEBIAN_FRONTEND", "noninteractive")
            .status()
            .map_err(|e| format!("cannot run {program}: {e}; install by hand: {how}"))?;
        if !status.success() {
            return Err(format!("`{how}` failed ({status})"));
        }
    }
    Ok(())
}

/// What the tests need that a fresh machine may lack.
fn provision() -> Result<(), String> {
    if !present(&cargo(), &["fmt", "--version"]) || !present(&cargo(), &["clippy", "--version"]) {
        run(
            "formatter and linter",
            "rustup",
            &["component", "add", "rustfmt", "clippy"],
        )?;
    }
    // The browser test loads the example reports in Debian's Chromium, headless.
    if std::env::var_os("LEASESIM_CHROMIUM").is_none() && !present("chromium", &["--version"]) {
        apt_install(&["chromium"])?;
    }
    // The process examples: a Python worker and a Node.js payments service (the helpers need
    // nothing beyond each language's standard library).
    if !present("python3", &["--version"]) {
        apt_install(&["python3"])?;
    }
    if !present("node", &["--version"]) {
        apt_install(&["nodejs"])?;
    }
    // `bench --instructions` counts a seed's instructions under callgrind; its test runs it.
    if !present("valgrind", &["--version"]) {
        apt_install(&["valgrind"])?;
    }
    // The SQL coordinator's tests start throwaway PostgreSQL servers from the system's server
    // binaries (initdb, pg_ctl); as root they run as the `postgres` user, which the package
    // creates.
    if !postgres_present() {
        apt_install(&["postgresql"])?;
    }
    if is_root() && !present("id", &["postgres"]) {
        run(
            "the postgres user",
            "useradd",
            &[
                "--system",
                "--no-create-home",
                "--shell",
                "/usr/sbin/nologin",
                "postgres",
            ],
        )?;
    }
    // The SQL safety tests try the throwaway server from a second account, `nobody`, which
    // Debian has; a machine without it gets it.
    if is_root() && !present("id", &["nobody"]) {
        run(
            "a second account for the SQL safety tests",
            "useradd",
            &[
                "--system",
                "--no-create-home",
                "--shell",
                "/usr/sbin/nologin",
                "nobody",
            ],
        )?;
    }
    Ok(())
}

/// Whether PostgreSQL's server binaries are installed where leasesim looks for them.
fn postgres_present() -> bool {
    let from_config = Command::new("pg_config")
        .arg("--bindir")
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| std::path::PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()));
    let mut dirs: Vec<std::path::PathBuf> = from_config.into_iter().collect();
    if let Ok(rd) = std::fs::read_dir("/usr/lib/postgresql") {
        dirs.extend(rd.flatten().map(|e| e.path().join("bin")));
    }
    dirs.iter()
        .any(|d| d.join("initdb").exists() && d.join("pg_ctl").exists())
}

fn test() -> Result<(), String> {
    provision()?;
    run("format", "cargo", &["fmt", "--all", "--", "--check"])?;
    run(
        "lints",
        "cargo",
        &[
            "clippy",
            "--workspace",
            "--all-targets",
            "--",
            "-D",
            "warnings",
        ],
    )?;
    run("tests", "cargo", &["test", "--workspace"])?;
    async_example()?;
    // The crate documentation is the users' guide: it must build without a broken link.
    std::env::set_var("RUSTDOCFLAGS", "-D warnings");
    run("docs", "cargo", &["doc", "--workspace", "--no-deps"])?;
    std::env::remove_var("RUSTDOCFLAGS");
    madsim_engine()?;
    println!("xtask: all tests passed");
    Ok(())
}

/// The async example's own test build and its lints.
fn async_example() -> Result<(), String> {
    // The async example's own test build: the same worker source against leasesim's tokio
    // (`--features sim`); the workspace build above is its production build, on real tokio.
    run(
        "async example lints (sim build)",
        "cargo",
        &[
            "clippy",
            "-p",
            "leasesim-async-example",
            "--all-targets",
            "--no-default-features",
            "--features",
            "sim",
            "--",
            "-D",
            "warnings",
        ],
    )?;
    run(
        "async example tests (sim build)",
        "cargo",
        &[
            "test",
            "-p",
            "leasesim-async-example",
            "--no-default-features",
            "--features",
            "sim",
        ],
    )?;
    Ok(())
}

/// The engine tests on madsim.
fn madsim_engine() -> Result<(), String> {
    // The madsim engine: built with `--cfg madsim` in its own target directory (the normal
    // build above is untouched), warnings refused: the shell, the only code that differs
    // there, runs its engine tests on madsim.
    // Unoptimised: every crate is built again for the flag, and the engine tests are small
    // (52 s to build and run, against 198 s optimised as the rest of the suite is).
    // The async example's engine tests run here too: its async worker as madsim nodes.
    run(
        "madsim engine tests",
        "cargo",
        &[
            "--config",
            r#"build.rustflags=["--cfg", "madsim", "-D", "warnings"]"#,
            "--config",
            "profile.dev.opt-level=0",
            "--config",
            r#"profile.dev.package."*".opt-level=0"#,
            "--config",
            "profile.dev.debug=false",
            "test",
            "--target-dir",
            "target/madsim",
            "-p",
            "leasesim-shell",
            "-p",
            "leasesim-async-example",
            "--no-default-features",
            "--features",
            "leasesim-async-example/sim",
            "--test",
            "engines",
        ],
    )
}

const USAGE: &str = "usage: cargo xtask test   (installs what a fresh machine lacks, then runs fmt, clippy, the tests and the madsim tests)";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.iter().map(String::as_str).collect::<Vec<_>>()[..] {
        ["test"] => test(),
        ["provision"] => provision(),
        [] | ["help"] | ["--help"] | ["-h"] => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        _ => Err(format!("unknown arguments {args:?}; {USAGE}")),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("xtask: error: {e}");
            ExitCode::from(1)
        }
    }
}
