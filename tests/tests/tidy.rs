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
    ("protocol/sorted", "leasesim-sorted"),
    ("protocol/store", "leasesim-store"),
    ("sim", "leasesim-sim"),
    ("sim/tokio", "leasesim-tokio"),
    ("scenarios/async", "leasesim-async"),
    ("scenarios/checkers", "leasesim-checkers"),
    ("reports", "leasesim-reports"),
    ("scenarios", "leasesim"),
    ("scenarios/shell", "leasesim-shell"),
    ("scenarios/sql", "leasesim-sql"),
    ("scenarios/exec", "leasesim-exec"),
    ("scenarios/results", "leasesim-results"),
    ("scenarios/bench", "leasesim-bench"),
    ("scenarios/cli", "leasesim-cli"),
    ("tests", "leasesim-tests"),
    ("tests/xtask", "leasesim-xtask"),
    ("tests/example", "leasesim-example"),
    ("tests/async-example", "leasesim-async-example"),
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
    // Which workspace crates each crate may depend on (ARCHITECTURE.md's crate map): the
    // protocol and the simulator at the bottom, the command line at the top.
    let allowed: &[(&str, &[&str])] = &[
        // The protocol's workspace dependencies are two leaves: its internal collections, and
        // the events a lease store reports of its own work.
        ("protocol", &["leasesim-sorted", "leasesim-store"]),
        ("protocol/sorted", &[]),
        ("protocol/store", &[]),
        ("sim", &[]),
        // tokio's API on the simulator knows nothing of leases.
        ("sim/tokio", &[]),
        (
            "scenarios/async",
            &["leasesim", "leasesim-protocol", "leasesim-tokio"],
        ),
        (
            "scenarios/checkers",
            &["leasesim-protocol", "leasesim-sim", "leasesim-sorted"],
        ),
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
        // Processes as machines: the library's machine traits over a pipe.
        (
            "scenarios/exec",
            &["leasesim", "leasesim-protocol", "leasesim-sim"],
        ),
        (
            "scenarios/results",
            &[
                "leasesim",
                "leasesim-protocol",
                "leasesim-sim",
                "leasesim-checkers",
                "leasesim-reports",
            ],
        ),
        (
            "scenarios/bench",
            &[
                "leasesim",
                "leasesim-shell",
                "leasesim-protocol",
                "leasesim-sim",
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
        // The journal format module writes through tracing-subscriber's JSON formatter.
        ("tracing-subscriber", &["scenarios/checkers"]),
        // The library's interrupt module: a signal ends a run and stops the servers it started.
        ("signal-hook", &["scenarios"]),
        // The async example is a user's worker: real tokio in its production build.
        ("tokio", &["scenarios/shell", "tests/async-example"]),
        ("real-tokio", &["scenarios/shell", "sim/tokio"]),
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
    for folder in [
        "protocol/src",
        "protocol/sorted/src",
        "protocol/store/src",
        "sim/src",
        // Async code on the simulator reads its node's clock, never the machine's.
        "sim/tokio/src",
        "scenarios/async/src",
    ] {
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

/// A module's path in its crate (`["merge", "doc"]`) from its file under `src`: `lib.rs` and
/// `main.rs` are the root, `x/mod.rs` is `x`.
fn module_of(src: &Path, file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(src).expect("under src");
    let mut parts: Vec<String> = rel
        .iter()
        .map(|p| p.to_string_lossy().trim_end_matches(".rs").to_string())
        .collect();
    if matches!(parts.last().map(String::as_str), Some("mod"))
        || parts.len() == 1 && matches!(parts[0].as_str(), "lib" | "main")
    {
        parts.pop();
    }
    if rel.starts_with("bin") {
        // A binary of the package is a crate of its own: named apart from the library.
        parts.insert(0, "<bin>".into());
    }
    parts
}

/// The first segments of every path a source names from `crate::`, `super::` or `self::`
/// (`super::super::x::y`, `crate::{a, b::c}`), as (anchor, segments after it), outside its
/// test module.
fn paths_named(text: &str) -> Vec<(String, Vec<String>)> {
    let code = text
        .find("#[cfg(test)]\nmod tests")
        .map_or(text, |i| &text[..i]);
    let code: String = code
        .lines()
        .map(|l| match l.trim_start().starts_with("//") {
            true => "",
            false => l,
        })
        .collect::<Vec<_>>()
        .join("\n");
    let ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let bytes: Vec<char> = code.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let starts = (i == 0 || !ident(bytes[i - 1]))
            && ["crate::", "super::", "self::"]
                .iter()
                .any(|a| bytes[i..].starts_with(&a.chars().collect::<Vec<_>>()));
        if !starts {
            i += 1;
            continue;
        }
        // Read `a::b::c` or `a::{x, y::z}` (one level of braces), the anchors included.
        let mut segs = Vec::new();
        let mut j = i;
        loop {
            let s = j;
            while j < bytes.len() && ident(bytes[j]) {
                j += 1;
            }
            segs.push(bytes[s..j].iter().collect::<String>());
            if bytes[j..].starts_with(&[':', ':']) {
                j += 2;
                if j < bytes.len() && bytes[j] == '{' {
                    let end = (j..bytes.len()).find(|&k| bytes[k] == '}').unwrap_or(j);
                    let inner: String = bytes[j + 1..end].iter().collect();
                    for item in inner.split(',') {
                        let first: String = item.trim().chars().take_while(|&c| ident(c)).collect();
                        let mut p = segs.clone();
                        if !first.is_empty() && first != "self" {
                            p.push(first);
                        }
                        out.push(p);
                    }
                    j = end;
                    break;
                }
                continue;
            }
            out.push(segs.clone());
            break;
        }
        i = j.max(i + 1);
    }
    out.into_iter()
        .map(|mut p| {
            let anchor = p.remove(0);
            (anchor, p)
        })
        .collect()
}

/// The names the crate root (`lib.rs`) re-exports, with the module each comes from: listed
/// (`pub use m::{A, B};`) or by a glob (`pub use m::*;`, its module's `pub` items).
fn reexports(
    src: &Path,
    files: &[PathBuf],
    modules: &[Vec<String>],
) -> std::collections::BTreeMap<String, Vec<String>> {
    let mut out = std::collections::BTreeMap::new();
    let Ok(root) = std::fs::read_to_string(src.join("lib.rs")) else {
        return out;
    };
    for line in root.lines().map(str::trim) {
        let Some(rest) = line.strip_prefix("pub use ") else {
            continue;
        };
        let rest = rest.trim_end_matches(';');
        let Some((module, names)) = rest.split_once("::") else {
            continue;
        };
        let m = vec![module.to_string()];
        let Some(i) = modules.iter().position(|x| *x == m) else {
            continue;
        };
        let names = names.trim_start_matches('{').trim_end_matches('}');
        if names == "*" {
            let text = std::fs::read_to_string(&files[i]).unwrap_or_default();
            for l in text.lines().map(str::trim) {
                for kind in [
                    "pub struct ",
                    "pub enum ",
                    "pub fn ",
                    "pub type ",
                    "pub const ",
                    "pub trait ",
                    "pub static ",
                ] {
                    if let Some(r) = l.strip_prefix(kind) {
                        let name: String = r
                            .chars()
                            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                            .collect();
                        out.insert(name, m.clone());
                    }
                }
            }
        } else {
            for n in names.split(',') {
                let n = n.trim().split(" as ").last().unwrap_or("").trim();
                if !n.is_empty() {
                    out.insert(n.to_string(), m.clone());
                }
            }
        }
    }
    out
}

/// A loop of imports between the modules of one crate, if any: the modules in order.
fn module_cycle(src: &Path) -> Option<Vec<String>> {
    let files = sources(src);
    let modules: Vec<Vec<String>> = files.iter().map(|f| module_of(src, f)).collect();
    let index = |m: &[String]| modules.iter().position(|x| x == m);
    let mut edges: Vec<std::collections::BTreeSet<usize>> = vec![Default::default(); files.len()];
    let reexported = reexports(src, &files, &modules);
    for (a, file) in files.iter().enumerate() {
        let here = &modules[a];
        // Where `super::` starts: a `mod.rs` or a root is the module itself, any other file
        // is one level down.
        let is_dir_module = file.ends_with("mod.rs") || here.is_empty();
        let text = std::fs::read_to_string(file).expect("a readable source");
        for (anchor, segs) in paths_named(&text) {
            let mut base: Vec<String> = match anchor.as_str() {
                "crate" => here
                    .first()
                    .filter(|h| *h == "<bin>")
                    .map_or(Vec::new(), |_| vec!["<bin>".into()]),
                _ => here.clone(),
            };
            let mut rest = segs.as_slice();
            if anchor == "super" {
                if !is_dir_module || !base.is_empty() {
                    base.pop();
                }
                while rest.first().is_some_and(|s| s == "super") {
                    base.pop();
                    rest = &rest[1..];
                }
            }
            // The deepest module the path reaches.
            let mut target = base.clone();
            for s in rest {
                let mut next = target.clone();
                next.push(s.clone());
                if index(&next).is_some() {
                    target = next;
                } else {
                    break;
                }
            }
            // A name the crate root re-exports (`crate::Coordinator`) is its module's.
            if target.is_empty() && anchor == "crate" {
                if let Some(m) = rest.first().and_then(|n| reexported.get(n.as_str())) {
                    target = m.clone();
                }
            }
            if target.is_empty() || target == ["<bin>"] || target == *here {
                continue;
            }
            if let Some(b) = index(&target) {
                edges[a].insert(b);
            }
        }
    }
    // Roots are where modules are declared and the crate's face: an arrow to one is not a
    // dependency on a module.
    let roots: Vec<usize> = (0..files.len())
        .filter(|&i| modules[i].is_empty() || modules[i] == ["<bin>"])
        .collect();
    for e in &mut edges {
        for r in &roots {
            e.remove(r);
        }
    }
    // Depth-first search for a back edge (bounded by the number of modules).
    fn visit(
        n: usize,
        edges: &[std::collections::BTreeSet<usize>],
        state: &mut [u8],
        stack: &mut Vec<usize>,
    ) -> Option<Vec<usize>> {
        state[n] = 1;
        stack.push(n);
        for &m in &edges[n] {
            if state[m] == 1 {
                let at = stack.iter().position(|&x| x == m).expect("on the stack");
                return Some(stack[at..].to_vec());
            }
            if state[m] == 0 {
                if let Some(c) = visit(m, edges, state, stack) {
                    return Some(c);
                }
            }
        }
        stack.pop();
        state[n] = 2;
        None
    }
    let mut state = vec![0u8; files.len()];
    for n in 0..files.len() {
        if state[n] == 0 {
            if let Some(c) = visit(n, &edges, &mut state, &mut Vec::new()) {
                return Some(
                    c.into_iter()
                        .map(|i| files[i].strip_prefix(src).unwrap().display().to_string())
                        .collect(),
                );
            }
        }
    }
    None
}

#[test]
fn no_two_modules_of_a_crate_import_each_other() {
    let root = root();
    for (folder, _) in CRATES {
        let src = root.join(folder).join("src");
        if let Some(cycle) = module_cycle(&src) {
            panic!(
                "{folder}: the modules {} import each other in a loop",
                cycle.join(" -> ")
            );
        }
    }
}

#[test]
fn the_cycle_check_finds_a_loop() {
    // Two modules that name each other, and a third that only names one of them.
    let dir = leasesim_tests::TempDir::new("cycle");
    let src = dir.join("src");
    std::fs::create_dir_all(src.join("a")).unwrap();
    std::fs::write(src.join("lib.rs"), "mod a;\nmod b;\nmod c;\n").unwrap();
    std::fs::write(src.join("a/mod.rs"), "mod inner;\nuse crate::b::thing;\n").unwrap();
    std::fs::write(src.join("a/inner.rs"), "use super::super::c::X;\n").unwrap();
    std::fs::write(src.join("b.rs"), "pub fn thing() { super::c::y(); }\n").unwrap();
    std::fs::write(src.join("c.rs"), "use crate::{b, a::inner};\n").unwrap();
    let cycle = module_cycle(&src).expect("b -> c -> b");
    assert!(
        cycle.contains(&"b.rs".to_string()) && cycle.contains(&"c.rs".to_string()),
        "{cycle:?}"
    );
    // Broken: c names only the inner module, which names c: still a loop through a/inner.
    std::fs::write(src.join("c.rs"), "use crate::a::inner::Z;\n").unwrap();
    let cycle = module_cycle(&src).expect("inner -> c -> inner");
    assert!(cycle.contains(&"a/inner.rs".to_string()), "{cycle:?}");
    // Through the root's re-export: b names `crate::Y`, which the root takes from c.
    std::fs::write(
        src.join("lib.rs"),
        "mod a;\nmod b;\nmod c;\npub use c::{Y};\n",
    )
    .unwrap();
    std::fs::write(src.join("b.rs"), "pub fn thing() -> crate::Y { todo() }\n").unwrap();
    std::fs::write(src.join("c.rs"), "pub struct Y;\nuse crate::b::thing;\n").unwrap();
    let cycle = module_cycle(&src).expect("b -> c -> b through the root");
    assert!(cycle.contains(&"b.rs".to_string()), "{cycle:?}");
    std::fs::write(src.join("b.rs"), "pub fn thing() {}\n").unwrap();
    // Gone: c names nothing.
    std::fs::write(src.join("c.rs"), "pub fn y() {}\n").unwrap();
    assert_eq!(module_cycle(&src), None);
}

/// One function of a source file: its name, first line (1-based) and length in lines, from the
/// `fn` line to its closing brace, with whether a `// Long: <reason>` line stands in the comment
/// and attribute block just above it.
struct FnSpan {
    name: String,
    line: usize,
    lines: usize,
    reason: bool,
}

/// Brace depth of one line's code: strings, characters and comments removed.
fn braces(line: &str) -> (i64, bool) {
    let code = line.split("//").next().unwrap_or("");
    let (mut depth, mut in_str, mut prev, mut semicolon) = (0i64, false, ' ', false);
    let chars: Vec<char> = code.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if in_str {
            if c == '"' && prev != '\\' {
                in_str = false;
            }
        } else if c == '"' {
            in_str = true;
        } else if c == '\'' && i + 2 < chars.len() && chars[i + 2] == '\'' {
            i += 2;
        } else if c == '{' {
            depth += 1;
        } else if c == '}' {
            depth -= 1;
        } else if c == ';' && depth == 0 {
            semicolon = true;
        }
        prev = if prev == '\\' && c == '\\' { ' ' } else { c };
        i += 1;
    }
    (depth, semicolon)
}

/// The functions of one file that are not test code (everything from `#[cfg(test)]` on is).
fn functions(text: &str) -> Vec<FnSpan> {
    let lines: Vec<&str> = text.lines().collect();
    let end = lines
        .iter()
        .position(|l| l.trim_start().starts_with("#[cfg(test)]"))
        .unwrap_or(lines.len());
    let mut out = Vec::new();
    let mut i = 0;
    while i < end {
        let t = lines[i].trim_start();
        let head = t
            .trim_start_matches("pub(crate) ")
            .trim_start_matches("pub(super) ")
            .trim_start_matches("pub ")
            .trim_start_matches("const ")
            .trim_start_matches("async ");
        let Some(rest) = head.strip_prefix("fn ") else {
            i += 1;
            continue;
        };
        let name: String = rest
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        let (mut depth, mut opened, mut j) = (0i64, false, i);
        while j < end {
            let (d, semicolon) = braces(lines[j]);
            if !opened && semicolon && d == 0 {
                break; // a declaration without a body
            }
            opened |= lines[j].contains('{');
            depth += d;
            if opened && depth <= 0 {
                break;
            }
            j += 1;
        }
        if !opened {
            i = j + 1;
            continue;
        }
        let mut k = i;
        let mut reason = false;
        while k > 0 {
            let above = lines[k - 1].trim_start();
            if above.starts_with("// Long: ") {
                reason = true;
            }
            if above.starts_with("//") || above.starts_with("#[") || above.starts_with(')') {
                k -= 1;
            } else {
                break;
            }
        }
        out.push(FnSpan {
            name,
            line: i + 1,
            lines: j - i + 1,
            reason,
        });
        i = j + 1;
    }
    out
}

/// Every function outside test code over `limit` lines, or over `reasoned` without a reason.
fn long_functions(limit: usize, reasoned: usize) -> Vec<String> {
    let mut found = Vec::new();
    for (folder, _) in CRATES {
        for file in sources(&root().join(folder)) {
            let rel = file.strip_prefix(root()).unwrap().to_path_buf();
            let in_tests = rel.components().skip(1).any(|c| c.as_os_str() == "tests");
            if in_tests || rel.starts_with("tests/src") {
                continue;
            }
            let text = std::fs::read_to_string(&file).unwrap();
            for f in functions(&text) {
                if f.lines > limit || (f.lines > reasoned && !f.reason) {
                    found.push(format!(
                        "{}:{} fn {} ({} lines)",
                        rel.display(),
                        f.line,
                        f.name,
                        f.lines
                    ));
                }
            }
        }
    }
    found.sort();
    found.dedup();
    found
}

#[test]
fn no_function_runs_over_150_lines_and_one_over_70_says_why() {
    // A reader holds a function whole: none over 150 lines outside tests, and one over 70 only
    // with a `// Long: <reason>` line above it (a table that would only repeat itself if split).
    let found = long_functions(150, 70);
    assert!(
        found.is_empty(),
        "{} function(s) too long (over 150 lines, or over 70 without a `// Long: ` reason):\n{}",
        found.len(),
        found.join("\n")
    );
}

#[test]
fn the_length_check_measures_bodies_and_sees_reasons() {
    let body = |n: usize| "    let x = \"{\";\n".repeat(n);
    let text = format!(
        "//! m\nfn short() {{\n{}}}\n// Long: a table.\nfn long() {{\n{}}}\nfn decl();\n#[cfg(test)]\nfn t() {{\n{}}}\n",
        body(3),
        body(80),
        body(200)
    );
    let fs = functions(&text);
    let got: Vec<(&str, usize, bool)> = fs
        .iter()
        .map(|f| (f.name.as_str(), f.lines, f.reason))
        .collect();
    assert_eq!(got, vec![("short", 5, false), ("long", 82, true)]);
}
