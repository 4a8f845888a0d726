//! Tidy checks: the architecture invariants of ARCHITECTURE.md, enforced on the source tree so a
//! change that breaks one fails the test suite rather than a later review.

use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the workspace")
        .to_path_buf()
}

/// Every `.rs` file under `dir`, recursively.
fn sources(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut dirs = vec![dir.to_path_buf()];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).expect("a readable folder").flatten() {
            let p = e.path();
            if p.is_dir() {
                dirs.push(p);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// The workspace crates: (folder, package name).
const CRATES: &[(&str, &str)] = &[
    ("protocol", "leasesim-protocol"),
    ("sim", "leasesim-sim"),
    ("scenarios/checkers", "leasesim-checkers"),
    ("reports", "leasesim-reports"),
    ("scenarios", "leasesim"),
    ("scenarios/shell", "leasesim-shell"),
    ("scenarios/sql", "leasesim-sql"),
    ("scenarios/cli", "leasesim-cli"),
    ("tests", "leasesim-tests"),
    ("tests/xtask", "leasesim-xtask"),
    ("tests/example", "leasesim-example"),
];

/// The names a crate's `[dependencies]` (normal and target-specific) list.
fn dependencies(folder: &str) -> Vec<String> {
    let text = std::fs::read_to_string(root().join(folder).join("Cargo.toml")).expect("Cargo.toml");
    let mut deps = Vec::new();
    let mut in_deps = false;
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            in_deps = line.ends_with("dependencies]") && !line.contains("dev-dependencies");
            continue;
        }
        if in_deps && !line.starts_with('#') {
            if let Some((name, _)) = line.split_once(['=', '.']) {
                let name = name.trim();
                if !name.is_empty() {
                    deps.push(name.to_string());
                }
            }
        }
    }
    deps
}

#[test]
fn the_crate_graph_points_one_way() {
    // Which workspace crates each crate may depend on (DESIGN.md's dependency direction).
    let allowed: &[(&str, &[&str])] = &[
        ("protocol", &[]),
        ("sim", &[]),
        ("scenarios/checkers", &["leasesim-protocol", "leasesim-sim"]),
        (
            "reports",
            &["leasesim-protocol", "leasesim-sim", "leasesim-checkers"],
        ),
        (
            "scenarios",
            &[
                "leasesim-protocol",
                "leasesim-sim",
                "leasesim-checkers",
                "leasesim-reports",
            ],
        ),
        (
            "scenarios/shell",
            &[
                "leasesim",
                "leasesim-protocol",
                "leasesim-sim",
                "leasesim-checkers",
            ],
        ),
        (
            "scenarios/sql",
            &[
                "leasesim",
                "leasesim-protocol",
                "leasesim-sim",
                "leasesim-reports",
            ],
        ),
    ];
    for (folder, ok) in allowed {
        for dep in dependencies(folder) {
            if dep.starts_with("leasesim") {
                assert!(ok.contains(&dep.as_str()), "{folder} depends on {dep}");
            }
        }
    }
}

#[test]
fn heavy_dependencies_stay_in_their_satellite_crates() {
    // (dependency, the crates that may have it)
    let rules: &[(&str, &[&str])] = &[
        ("clap", &["scenarios/cli"]),
        ("indicatif", &["scenarios/cli"]),
        ("tracing-subscriber", &["scenarios/cli"]),
        ("signal-hook", &["scenarios/cli"]),
        ("tokio", &["scenarios/shell"]),
        ("real-tokio", &["scenarios/shell"]),
        ("madsim", &["scenarios/shell"]),
        // The database client: only the SQL coordinator talks to a database.
        ("postgres", &["scenarios/sql"]),
        ("tokio-postgres", &["scenarios/sql"]),
    ];
    for (folder, _) in CRATES {
        let deps = dependencies(folder);
        for (dep, owners) in rules {
            if deps.iter().any(|d| d == dep) {
                assert!(owners.contains(folder), "{folder} depends on {dep}");
            }
        }
    }
    // `cfg(madsim)` code lives in the shell (and in the tests that run on both builds).
    for folder in [
        "protocol",
        "sim",
        "scenarios/checkers",
        "reports",
        "scenarios/src",
    ] {
        for file in sources(&root().join(folder)) {
            let text = std::fs::read_to_string(&file).unwrap();
            assert!(
                !text.contains("cfg(madsim)"),
                "{} mentions cfg(madsim)",
                file.display()
            );
        }
    }
}

#[test]
fn protocol_and_sim_do_no_io_and_read_no_time() {
    for folder in ["protocol/src", "sim/src"] {
        for file in sources(&root().join(folder)) {
            let text = std::fs::read_to_string(&file).unwrap();
            for banned in [
                "std::fs",
                "std::net",
                "std::thread",
                "std::time",
                "std::process",
            ] {
                assert!(!text.contains(banned), "{} uses {banned}", file.display());
            }
        }
    }
}

#[test]
fn files_are_written_only_through_leasesim_files() {
    // Every file leasesim leaves appears whole and is written through no link
    // (`leasesim::files`, issue 31): nothing else opens a file for writing.
    for (folder, _) in CRATES.iter().filter(|(f, _)| !f.starts_with("tests")) {
        for file in sources(&root().join(folder).join("src")) {
            if file.ends_with("scenarios/src/files.rs") {
                continue;
            }
            let text = std::fs::read_to_string(&file).unwrap();
            for banned in [
                "fs::write(",
                "File::create(",
                "OpenOptions",
                "File::options(",
            ] {
                assert!(
                    !text.contains(banned),
                    "{} uses {banned}; write through leasesim::files",
                    file.display()
                );
            }
        }
    }
}

#[test]
fn the_checkers_see_no_machine() {
    for file in sources(&root().join("scenarios/checkers/src")) {
        let text = std::fs::read_to_string(&file).unwrap();
        for banned in [
            "machine::",
            "CoordinatorMachine",
            "WorkerMachine",
            "ReceiverMachine",
            "Coordinator::new",
            "Worker::new",
            "Receiver::new",
            "Switches",
        ] {
            assert!(!text.contains(banned), "{} uses {banned}", file.display());
        }
    }
}

#[test]
fn every_module_says_what_it_owns() {
    let mut folders: Vec<PathBuf> = CRATES
        .iter()
        .map(|(f, _)| root().join(f).join("src"))
        .collect();
    folders.push(root().join("tests/tests"));
    folders.push(root().join("tests/example/tests"));
    for folder in folders {
        for file in sources(&folder) {
            let text = std::fs::read_to_string(&file).unwrap();
            assert!(
                text.starts_with("//!"),
                "{} does not start with a module doc (`//!`)",
                file.display()
            );
        }
    }
}

#[test]
fn no_test_is_ignored_and_nothing_is_left_unfinished() {
    let this = Path::new(file!()).file_name().unwrap().to_owned();
    for (folder, _) in CRATES {
        for file in sources(&root().join(folder)) {
            if file.file_name() == Some(this.as_os_str()) {
                continue;
            }
            let text = std::fs::read_to_string(&file).unwrap();
            for banned in ["#[ignore", "todo!(", "unimplemented!(", "#[should_panic"] {
                assert!(!text.contains(banned), "{} has {banned}", file.display());
            }
        }
    }
}

#[test]
fn the_library_builds_machines_only_through_machines() {
    // Every role's machine comes from a `Machines` factory, so a user's plugs in wherever the
    // reference does: nothing else in the library constructs one.
    for file in sources(&root().join("scenarios/src")) {
        if file.ends_with("machines.rs") {
            continue;
        }
        let text = std::fs::read_to_string(&file).unwrap();
        // Code only: the guide's examples show a user building one.
        let code: Vec<&str> = text
            .lines()
            .filter(|l| !l.trim_start().starts_with("//"))
            .collect();
        for banned in ["Coordinator::new(", "Worker::new(", "Receiver::new("] {
            assert!(
                !code.iter().any(|l| l.contains(banned)),
                "{} calls {banned}",
                file.display()
            );
        }
    }
}
