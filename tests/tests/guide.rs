//! The README and the guide under `docs/` cannot go stale: every shell command in them runs here
//! (`sh` blocks line by line, the `$` lines of `console` transcripts), with the exit code the
//! text promises, and a transcript's lines must be what the command prints; every fence names its
//! language; every relative link points at a file. The Rust blocks are compiled as doctests of
//! this crate (`src/lib.rs` includes each page).

use leasesim_tests::{async_leasesim_bin, leasesim_bin, run_with_limit, TempDir};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the workspace")
        .to_path_buf()
}

/// README.md and every page of the guide.
fn pages() -> Vec<PathBuf> {
    let mut pages = vec![root().join("README.md")];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root().join("docs"))
        .expect("docs/")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    docs.sort();
    pages.extend(docs);
    pages
}

/// One fenced block: its page, the line of its opening fence, its language and its lines.
struct Block {
    page: String,
    line: usize,
    lang: String,
    lines: Vec<String>,
}

fn blocks(page: &Path) -> Vec<Block> {
    let text = std::fs::read_to_string(page).expect("a readable page");
    let name = page.strip_prefix(root()).unwrap().display().to_string();
    let mut out = Vec::new();
    let mut open: Option<Block> = None;
    for (i, line) in text.lines().enumerate() {
        let fence = line.trim_start().strip_prefix("```");
        match (fence, open.take()) {
            (Some(_), Some(block)) => out.push(block),
            (Some(lang), None) => {
                open = Some(Block {
                    page: name.clone(),
                    line: i + 1,
                    lang: lang.trim().to_string(),
                    lines: Vec::new(),
                })
            }
            (None, Some(mut block)) => {
                block.lines.push(line.to_string());
                open = Some(block);
            }
            (None, None) => {}
        }
    }
    assert!(open.is_none(), "{name}: a fence is never closed");
    out
}

/// One command of a page, what it must exit with and the lines it must print (in order).
#[derive(Debug)]
struct Step {
    at: String,
    command: String,
    exit: i32,
    prints: Vec<String>,
}

/// The exit code a command's comment promises (`# exit 1: ...`), else 0.
fn promised_exit(comment: &str) -> Option<i32> {
    let rest = comment.trim().strip_prefix("exit ")?;
    rest.split(|c: char| !c.is_ascii_digit())
        .next()?
        .parse()
        .ok()
}

/// A command line and its comment, split at the first ` # ` outside quotes.
fn split_comment(line: &str) -> (String, String) {
    let mut quoted = None;
    let bytes: Vec<char> = line.chars().collect();
    for (i, c) in bytes.iter().enumerate() {
        match (quoted, c) {
            (None, '\'' | '"') => quoted = Some(*c),
            (Some(q), c) if q == *c => quoted = None,
            (None, '#') if i == 0 || bytes[i - 1] == ' ' => {
                let cmd: String = bytes[..i].iter().collect();
                let comment: String = bytes[i + 1..].iter().collect();
                return (cmd.trim().to_string(), comment.trim().to_string());
            }
            _ => {}
        }
    }
    (line.trim().to_string(), String::new())
}

fn steps(block: &Block) -> Vec<Step> {
    let at = |n: usize| format!("{}:{}", block.page, block.line + 1 + n);
    let mut out: Vec<Step> = Vec::new();
    match block.lang.as_str() {
        "sh" => {
            for (n, line) in block.lines.iter().enumerate() {
                let (command, comment) = split_comment(line);
                if command.is_empty() {
                    continue;
                }
                out.push(Step {
                    at: at(n),
                    command,
                    exit: promised_exit(&comment).unwrap_or(0),
                    prints: Vec::new(),
                });
            }
        }
        "console" => {
            for (n, line) in block.lines.iter().enumerate() {
                if let Some(cmd) = line.strip_prefix("$ ") {
                    let (command, comment) = split_comment(cmd);
                    out.push(Step {
                        at: at(n),
                        command,
                        exit: promised_exit(&comment).unwrap_or(-1),
                        prints: Vec::new(),
                    });
                } else if let Some(step) = out.last_mut() {
                    step.prints.push(line.clone());
                } else {
                    panic!("{}: a transcript starts without a `$ ` command", at(n));
                }
            }
            for step in &mut out {
                if step.exit == -1 {
                    // A transcript that shows a violation promises exit 1.
                    let violated = step
                        .prints
                        .iter()
                        .any(|l| l.starts_with("verdict: VIOLATED") || l.starts_with("VIOLATED"));
                    step.exit = i32::from(violated);
                }
            }
        }
        _ => {}
    }
    out
}

/// Whether a printed line carries a figure of the machine it ran on (a duration measured on the
/// wall clock, a rate, a size in memory, a thread count): such a line is shown, not compared.
fn measured(line: &str) -> bool {
    let elapsed = |after: &str| {
        line.split(after).skip(1).any(|rest| {
            let figure: String = rest
                .chars()
                .take_while(|c| c.is_ascii_digit() || *c == '.')
                .collect();
            !figure.is_empty() && rest[figure.len()..].starts_with('s')
        })
    };
    ["/s", "MiB", "thread(s)", "seconds"]
        .iter()
        .any(|m| line.contains(m))
        || elapsed(" in ")
        || elapsed(" took ")
        || elapsed("stopped ")
}

/// The commands the test cannot run as a user would, and what it checks of each instead.
fn special(step: &Step) -> Option<Result<(), String>> {
    let c = step.command.as_str();
    if c == "cargo xtask test" {
        // README's test command is what CI runs: `.ci/run` calls exactly it.
        let ci = std::fs::read_to_string(root().join(".ci/run")).expect(".ci/run");
        return Some(if ci.lines().any(|l| l.trim() == c) {
            Ok(())
        } else {
            Err(format!("{}: .ci/run does not run `{c}`", step.at))
        });
    }
    if let Some(args) = c.strip_prefix("cargo madsim ") {
        // The madsim build is built and tested by the test command's madsim step; here the
        // alias must exist and the command and its flags must be ones leasesim has (`--help`
        // after them parses them without running anything).
        let config = std::fs::read_to_string(root().join(".cargo/config.toml")).unwrap();
        if !config.contains("madsim = [") {
            return Some(Err(format!("{}: no `cargo madsim` alias", step.at)));
        }
        let out = Command::new(leasesim_bin())
            .args(args.split_whitespace())
            .arg("--help")
            .output()
            .expect("leasesim runs");
        return Some(if out.status.success() {
            Ok(())
        } else {
            Err(format!(
                "{}: `leasesim {args}` does not parse: {}",
                step.at,
                String::from_utf8_lossy(&out.stderr)
            ))
        });
    }
    None
}

/// How the guide starts the async example's own command line (its binary, built once).
const ASYNC_EXAMPLE: &str = "cargo run --release -p leasesim-async-example --no-default-features --features sim --bin async-leasesim -- ";

/// A fresh folder with the repository's inputs in reach (`scenarios/`, `tests/` as links to
/// them) and `leasesim` on the path, where a page's commands run one after another.
struct Workdir {
    dir: TempDir,
    path: String,
}

impl Workdir {
    fn new(page: &str, steps: &[Step]) -> Workdir {
        let dir = TempDir::new(&format!("guide-{}", page.replace(['/', '.'], "-")));
        for input in ["scenarios", "tests"] {
            std::os::unix::fs::symlink(root().join(input), dir.join(input)).unwrap();
        }
        let bin = dir.join("bin");
        std::fs::create_dir(&bin).unwrap();
        std::os::unix::fs::symlink(leasesim_bin(), bin.join("leasesim")).unwrap();
        if steps.iter().any(|s| s.command.starts_with(ASYNC_EXAMPLE)) {
            std::os::unix::fs::symlink(async_leasesim_bin(), bin.join("async-leasesim")).unwrap();
        }
        let mut path = bin.display().to_string();
        if let Ok(pg) = leasesim_sql::server::bindir() {
            path = format!("{path}:{}", pg.display());
        }
        path = format!("{path}:{}", std::env::var("PATH").unwrap_or_default());
        Workdir { dir, path }
    }

    fn run(&self, step: &Step, env: &[(String, String)]) -> Result<(), String> {
        let line = step
            .command
            .replace(ASYNC_EXAMPLE, "async-leasesim ")
            .replace("cargo run --release -- ", "leasesim ");
        let mut cmd = Command::new("sh");
        cmd.arg("-c")
            .arg(&line)
            .current_dir(&self.dir.0)
            .env("PATH", &self.path)
            .env_remove("CI_NODE_INDEX")
            .env_remove("CI_NODE_TOTAL")
            .env_remove("GITHUB_STEP_SUMMARY")
            .env_remove("LEASESIM_DATABASE_URL");
        for (k, v) in env {
            cmd.env(k, v);
        }
        #[allow(clippy::disallowed_methods)] // the guide's cost, on the wall clock, for its reader
        let started = std::time::Instant::now();
        let done = run_with_limit(cmd, Duration::from_secs(300));
        eprintln!(
            "{}: {:.1}s {line}",
            step.at,
            started.elapsed().as_secs_f64()
        );
        let all = format!("{}{}", done.out, done.err);
        if done.timed_out {
            return Err(format!("{}: `{line}` ran past 300 s", step.at));
        }
        if done.code != Some(step.exit) {
            return Err(format!(
                "{}: `{line}` exited {:?}, the page promises {}:\n{all}",
                step.at, done.code, step.exit
            ));
        }
        let printed: Vec<&str> = all.lines().collect();
        let mut from = 0;
        for want in &step.prints {
            if want.trim() == "..." || want.trim().is_empty() || measured(want) {
                continue;
            }
            match printed[from..].iter().position(|l| l.trim_end() == want.trim_end()) {
                Some(i) => from += i + 1,
                None => {
                    return Err(format!(
                        "{}: `{line}` did not print, in this order, the page's line\n  {want}\nit printed:\n{all}",
                        step.at
                    ))
                }
            }
        }
        Ok(())
    }
}

/// One throwaway PostgreSQL for a page's SQL commands, so that each does not start its own:
/// `LEASESIM_DATABASE_URL` points leasesim at it (as a user's own server would), and `psql`'s
/// variables point at it as its superuser, with the article's `tool_jobs` after the audit
/// chapter's incident loaded when the page reads tables with `psql`.
fn page_database(steps: &[Step]) -> Option<(leasesim_sql::server::Server, Vec<(String, String)>)> {
    let sql = steps
        .iter()
        .any(|s| s.command.contains("sql:") || s.command.contains("-- sql "));
    let psql = steps.iter().any(|s| s.command.starts_with("psql "));
    if !sql && !psql {
        return None;
    }
    let server = leasesim_sql::server::Server::start().expect("a throwaway PostgreSQL");
    let url = server.superuser_url("postgres");
    let field = |k: &str| {
        url.split_whitespace()
            .find_map(|kv| kv.strip_prefix(&format!("{k}=")))
            .expect("a connection field")
            .to_string()
    };
    let env = vec![
        ("LEASESIM_DATABASE_URL".to_string(), server.url()),
        ("PGHOST".to_string(), field("host")),
        ("PGUSER".to_string(), field("user")),
        ("PGPASSWORD".to_string(), field("password")),
        ("PGDATABASE".to_string(), field("dbname")),
    ];
    if psql {
        let seed = std::fs::read_to_string(root().join("scenarios/sql/queries/seed-postgres.sql"))
            .expect("the article's queue");
        let schema = seed
            .split("-- name: ")
            .find(|s| s.starts_with("schema"))
            .expect("the article's schema")
            .trim_start_matches("schema")
            .to_string();
        let example =
            std::fs::read_to_string(root().join("tests/fixtures/audit/tool-jobs-example.sql"))
                .expect("the incident");
        let bin = leasesim_sql::server::bindir()
            .expect("PostgreSQL")
            .join("psql");
        let mut load = Command::new(bin);
        load.args(["-v", "ON_ERROR_STOP=1", "-q", "-c", &schema, "-c", &example])
            .envs(env.iter().map(|(k, v)| (k, v)));
        let done = run_with_limit(load, Duration::from_secs(60));
        assert_eq!(done.code, Some(0), "loading the incident: {}", done.err);
    }
    Some((server, env))
}

fn run_page(name: &str) {
    let page = root().join(name);
    let all: Vec<Step> = blocks(&page).iter().flat_map(steps).collect();
    assert!(!all.is_empty(), "{name} has no command");
    let work = Workdir::new(name, &all);
    let database = page_database(&all);
    let env = database
        .as_ref()
        .map(|(_, e)| e.clone())
        .unwrap_or_default();
    let mut failures = Vec::new();
    for step in &all {
        let result = special(step).unwrap_or_else(|| work.run(step, &env));
        if let Err(e) = result {
            failures.push(e);
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn every_fence_names_its_language_and_every_link_resolves() {
    let mut problems = Vec::new();
    for page in pages() {
        let name = page.strip_prefix(root()).unwrap().display().to_string();
        for b in blocks(&page) {
            if b.lang.is_empty() {
                problems.push(format!("{name}:{}: a fence without a language", b.line));
            }
        }
        let text = std::fs::read_to_string(&page).unwrap();
        for (i, line) in text.lines().enumerate() {
            for part in line.split("](").skip(1) {
                let target = part.split(')').next().unwrap_or("");
                let target = target.split('#').next().unwrap_or("");
                if target.is_empty() || target.contains("://") || target.starts_with("mailto:") {
                    continue;
                }
                if !page.parent().unwrap().join(target).exists() {
                    problems.push(format!(
                        "{name}:{}: link to {target}, which is not there",
                        i + 1
                    ));
                }
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn the_readme_stays_one_screen_and_every_chapter_is_linked_from_it() {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let lines = readme.lines().count();
    assert!(lines <= 250, "README.md is {lines} lines, over 250");
    for page in pages().iter().skip(1) {
        let name = page.strip_prefix(root()).unwrap().display().to_string();
        assert!(
            readme.contains(&format!("]({name})")),
            "README.md does not link {name}"
        );
    }
    // Every page is compiled as doctests too (`src/lib.rs`'s `guide` module).
    let lib = std::fs::read_to_string(root().join("tests/src/lib.rs")).unwrap();
    for page in pages() {
        let name = page.strip_prefix(root()).unwrap().display().to_string();
        assert!(
            lib.contains(&format!("include_str!(\"../../{name}\")")),
            "tests/src/lib.rs does not compile the Rust blocks of {name}"
        );
    }
    // The two commands come first.
    let first = blocks(&root().join("README.md"))
        .into_iter()
        .next()
        .unwrap();
    let commands: Vec<String> = steps(&first).into_iter().map(|s| s.command).collect();
    assert_eq!(
        commands,
        ["cargo run --release -- sweep", "cargo xtask test"]
    );
}

#[test]
fn the_transcript_reader_finds_commands_exit_codes_and_lines() {
    let b = Block {
        page: "p.md".into(),
        line: 1,
        lang: "console".into(),
        lines: vec![
            "$ leasesim run w1-w2 --seed 1 --variant x".into(),
            "verdict: VIOLATED (1)".into(),
            "...".into(),
            "$ leasesim sql check a.sql   # exit 2".into(),
            "a.sql:1: no".into(),
        ],
    };
    let s = steps(&b);
    assert_eq!(s.len(), 2);
    assert_eq!((s[0].exit, s[1].exit), (1, 2));
    assert_eq!(s[1].command, "leasesim sql check a.sql");
    assert_eq!(s[0].prints, ["verdict: VIOLATED (1)", "..."]);
    assert_eq!(split_comment("a '#b' # c"), ("a '#b'".into(), "c".into()));
    assert!(measured(
        "sweep: 400000 runs on 2 thread(s) in 20.97s: 19071 seeds/s"
    ));
    assert!(!measured(
        "verdict: HELD (8 invariants checked over 79 events; the run ended (Done) at 35.357498s)"
    ));
}

macro_rules! page_tests {
    ($($name:ident => $page:literal,)*) => {
        $(
            #[test]
            fn $name() {
                run_page($page);
            }
        )*

        #[test]
        fn every_page_with_a_command_has_its_test() {
            let tested: Vec<&str> = vec![$($page),*];
            for page in pages() {
                let name = page.strip_prefix(root()).unwrap().display().to_string();
                let has = blocks(&page).iter().any(|b| !steps(b).is_empty());
                assert_eq!(has, tested.contains(&name.as_str()), "{name}: commands and a test go together");
            }
        }
    };
}

page_tests! {
    readme_commands_run_as_written => "README.md",
    sql_queue_commands_run_as_written => "docs/sql-queue.md",
    audit_commands_run_as_written => "docs/audit.md",
    findings_commands_run_as_written => "docs/findings.md",
    explore_commands_run_as_written => "docs/explore.md",
    ci_commands_run_as_written => "docs/ci.md",
    protocol_commands_run_as_written => "docs/protocol.md",
    performance_commands_run_as_written => "docs/performance.md",
    async_worker_commands_run_as_written => "docs/async-worker.md",
    process_protocol_commands_run_as_written => "docs/process-protocol.md",
}

#[test]
fn the_readme_timeline_is_the_committed_reports_with_the_empty_claims_left_out() {
    // README shows the W1/W2 finding's Mermaid diagram from the committed report, without W2's
    // claims answered "no job" before the takeover (it says so): any other difference is a
    // stale picture.
    let mermaid = |page: &Path| -> Vec<String> {
        blocks(page)
            .into_iter()
            .find(|b| b.lang == "mermaid")
            .unwrap_or_else(|| panic!("{} has a Mermaid diagram", page.display()))
            .lines
    };
    let report = mermaid(&root().join("reports/w1-w2-seed1-unconditional-commit.md"));
    let mut abridged = Vec::new();
    let mut i = 0;
    while i < report.len() {
        let empty_claim = report[i].contains("claim by W2")
            && report.get(i + 1).is_some_and(|l| l.contains("no job"));
        if empty_claim {
            i += 2;
        } else {
            abridged.push(report[i].clone());
            i += 1;
        }
    }
    assert!(
        abridged.len() < report.len(),
        "the report has empty claims to leave out"
    );
    assert_eq!(mermaid(&root().join("README.md")), abridged);
}
