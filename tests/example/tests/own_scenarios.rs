//! My own scenarios plug in like my machines: through the one builder into a sweep, `check()`,
//! the explorer, the matrix and my command line, and into the replay files that command line
//! saves (by name: a program without the scenario refuses the file and names it). What my
//! binary prints names my binary, and a set's name, variant and known-bad mark are mine to
//! give, never reset behind my back.

use leasesim::scenarios::{find, story::Story, ScenarioDef};
use leasesim::{Builder, Hazard, Machines, Variant, Verdict};
use leasesim_example::machines::{self, fast_clocks, my_worker};
use leasesim_example::Bug;
use leasesim_protocol::{OpId, Step};
use std::path::{Path, PathBuf};

/// A fresh folder of this test's own under cargo's temporary folder for tests.
fn fresh_dir(test: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("own-scenarios-{test}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir(&dir).expect("a fresh folder");
    dir
}

/// My command line, in-process, as `payments-leasesim`.
fn my_cli(program: &Builder, args: &[&str]) -> (i32, String, String) {
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let mut argv = vec!["payments-leasesim".to_string()];
    argv.extend(args.iter().map(|s| s.to_string()));
    let code = leasesim_cli::run_cli(argv, &mut out, &mut err, program);
    (
        code,
        String::from_utf8(out).unwrap(),
        String::from_utf8(err).unwrap(),
    )
}

/// A story of my own, built at run time from a closure: two of my workers race for one job,
/// whose tool call outlasts a dozen heartbeats, then a payment; nothing goes wrong, so the
/// holder keeps its lease throughout.
fn two_workers() -> ScenarioDef {
    ScenarioDef::new(
        "two-workers-long-call",
        "two workers race for one job whose tool call outlasts a dozen heartbeats; no fault",
        |seed, variant| {
            let pay = Step::Effect {
                op: OpId(1),
                receiver: 0,
            };
            let mut s = Story::new(
                "whatever-the-closure-says",
                seed,
                variant,
                &[1, 2],
                [Step::Tool, pay],
                1,
            );
            let hb = s.heartbeat_ns();
            s.tool_step(0, 12 * hb, 15 * hb);
            for w in &mut s.setup.workers {
                w.config.tool_timeout_ns = 20 * hb;
                w.config.stage_deadline_ns = 30 * hb;
            }
            s.start_worker(0, 0, 20);
            s.start_worker(1, 0, 20);
            s.finish()
        },
    )
    .with_hazards(&[Hazard::LongHold])
}

#[test]
fn my_scenarios_run_in_every_action_of_the_builder() {
    let testbed = Builder::new()
        .machines(my_worker(Bug::None))
        .scenarios([two_workers(), fast_clocks()])
        .seeds(0..100)
        .threads(2);
    testbed.validate().expect("consistent");
    // One seed: the setup is named after the scenario, whatever its closure called it.
    let r = testbed.run("two-workers-long-call", 3).unwrap();
    assert_eq!(r.verdict(), Verdict::Held, "{:?}", r.findings);
    assert_eq!(
        two_workers().build(3, Variant::Reference).scenario,
        "two-workers-long-call"
    );
    // A sweep as a test, with the coverage of the hazards I declared (100 seeds each).
    let report = testbed.check();
    assert_eq!(report.runs, 200);
    assert_eq!(report.scenarios.len(), 2);
    // The explorer places faults in my scenario's run.
    let x = testbed
        .clone()
        .seeds(0..1)
        .explore("w1-w2-fast-clocks", 1, 1)
        .unwrap();
    assert!(x.exhaustive() && x.held(), "{}", x.claim());
    assert!(x.space.total() > 1);
    // The matrix compares my sets on my scenarios: the buggy worker is caught in one.
    let m = testbed
        .clone()
        .machines(my_worker(Bug::DeadlineFromReplyArrival))
        .scenario(find("late-grant-reply").unwrap().clone())
        .seeds(0..20)
        .matrix()
        .unwrap();
    assert!(m.reference_clean && m.all_caught, "{m:?}");
    assert_eq!(m.rows[0].cells.len(), 3);
    assert_eq!(m.rows[0].cells[1].scenario, "w1-w2-fast-clocks");
    // My binary regenerates it, not leasesim's.
    assert!(
        !m.command.starts_with("cargo run --release -- matrix"),
        "{}",
        m.command
    );
    // The bug I named shows in its row.
    assert!(
        m.rows[1]
            .summary
            .starts_with("a deadline measured from the reply's arrival"),
        "{}",
        m.rows[1].summary
    );
}

#[test]
fn a_builder_that_contradicts_itself_is_refused_with_the_reason() {
    let taken = ScenarioDef::new("w1-w2", "mine, under a stock name", |seed, v| {
        find("w1-w2").unwrap().build(seed, v)
    });
    let e = Builder::new().scenario(taken).validate().unwrap_err();
    assert!(e.contains("takes the name of a stock scenario"), "{e}");
    let e = Builder::new()
        .scenario(fast_clocks())
        .scenario(fast_clocks())
        .validate()
        .unwrap_err();
    assert!(
        e.contains("two scenarios are named 'w1-w2-fast-clocks'"),
        "{e}"
    );
    let e = Builder::new()
        .machines(my_worker(Bug::None))
        .machines(my_worker(Bug::None))
        .validate()
        .unwrap_err();
    assert!(
        e.contains("two machine sets are named 'payments-worker'"),
        "{e}"
    );
    let e = Builder::new().seeds(5..5).run("w1-w2", 5).unwrap_err();
    assert!(e.contains("empty"), "{e}");
    let e = Builder::new().run("no-such-story", 1).unwrap_err();
    assert!(e.contains("unknown scenario 'no-such-story'"), "{e}");
    // My command line says so in one line, exit 2.
    let (code, _, err) = my_cli(
        &Builder::new()
            .scenario(fast_clocks())
            .scenario(fast_clocks()),
        &["list"],
    );
    assert_eq!(code, 2);
    assert_eq!(err.lines().count(), 1, "{err}");
}

#[test]
fn replacing_a_part_keeps_the_sets_name_variant_and_known_bad_mark() {
    let bad = Machines::variant(Variant::UnconditionalCommit)
        .known_bad_as("V2: the naive final update")
        .with_worker("payments-worker", |spec| {
            leasesim_example::Worker::new(spec.config.clone(), Bug::None)
        });
    assert_eq!(bad.name(), "unconditional-commit");
    assert_eq!(bad.setup_variant(), Variant::UnconditionalCommit);
    assert!(bad.is_known_bad() && !bad.is_stock());
    assert_eq!(bad.bug(), Some("V2: the naive final update"));
    assert_eq!(bad.parts().worker, "payments-worker");
    assert_eq!(bad.parts().coordinator, "leasesim:unconditional-commit");
    let mine = Machines::new("mine");
    assert!(!mine.is_known_bad() && mine.setup_variant() == Variant::Reference);
}

#[test]
fn my_command_line_runs_my_scenario_saves_it_by_name_and_only_my_binary_replays_it() {
    let dir = fresh_dir("replay");
    let program = machines::program();
    let file = dir.join("fast.json");
    let f = file.to_str().unwrap();
    // `list` shows my scenario, and the bug each known-bad set carries.
    let (code, out, _) = my_cli(&program, &["list"]);
    assert_eq!(code, 0);
    assert!(out.contains("w1-w2-fast-clocks"), "{out}");
    assert!(
        out.contains("clocks run 400 ppm fast"),
        "its own story: {out}"
    );
    assert!(
        out.contains("a deadline measured from the reply's arrival"),
        "{out}"
    );
    // `run` names my binary in its header and saves the run.
    let (code, out, err) = my_cli(
        &program,
        &["run", "w1-w2-fast-clocks", "--seed", "2", "--save", f],
    );
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.starts_with("payments-leasesim run w1-w2-fast-clocks --seed 2"),
        "{out}"
    );
    let saved = std::fs::read_to_string(&file).unwrap();
    assert!(
        saved.contains("\"scenario\": \"w1-w2-fast-clocks\""),
        "{saved}"
    );
    // My binary replays it, identical.
    let (code, out, _) = my_cli(&program, &["replay", f]);
    assert_eq!(code, 0, "{out}");
    assert!(out.starts_with("payments-leasesim replay"), "{out}");
    assert!(out.contains("identical to the recorded run"), "{out}");
    // A program with my machines but without my scenario refuses it, naming the scenario.
    let without = Builder::new().machines(my_worker(Bug::None));
    let (code, _, err) = my_cli(&without, &["replay", f]);
    assert_eq!(code, 2);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("'w1-w2-fast-clocks'"), "{err}");
    assert!(err.contains("does not have"), "{err}");
    // leasesim's own binary lacks my machines too: it says which program reruns the file.
    let (code, _, err) = my_cli(&Builder::stock(), &["replay", f]);
    assert_eq!(code, 2);
    assert!(err.contains("rerun it with:"), "{err}");
    assert!(err.contains("payments-worker"), "{err}");
    // So does `shrink` and `report`.
    for cmd in [vec!["shrink", f], vec!["report", f, "--html", "x.html"]] {
        let (code, _, err) = my_cli(&without, &cmd);
        assert_eq!(code, 2, "{cmd:?}");
        assert!(err.contains("'w1-w2-fast-clocks'"), "{cmd:?}: {err}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn leasesims_refusal_names_the_file_i_gave_not_where_it_was_recorded() {
    let dir = fresh_dir("moved");
    let program = machines::program();
    let first = dir.join("first.json");
    let (code, _, err) = my_cli(
        &program,
        &[
            "run",
            "late-grant-reply",
            "--seed",
            "0",
            "--variant",
            "payments-worker-late-reply-bug",
            "--save",
            first.to_str().unwrap(),
        ],
    );
    assert_eq!(code, 1, "{err}");
    let moved = dir.join("moved-here.json");
    std::fs::rename(&first, &moved).unwrap();
    let (code, _, err) = my_cli(&Builder::stock(), &["replay", moved.to_str().unwrap()]);
    assert_eq!(code, 2);
    assert!(err.contains("payments-worker-late-reply-bug"), "{err}");
    assert!(
        err.contains(&format!("replay {}", moved.display())),
        "the file as given: {err}"
    );
    assert!(!err.contains("first.json"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn agree_takes_variant_like_every_other_command() {
    let program = machines::program();
    let (code, out, err) = my_cli(
        &program,
        &[
            "agree",
            "w1-w2",
            "--seeds",
            "2",
            "--variant",
            "payments-worker",
            "--format",
            "json",
        ],
    );
    assert_eq!(code, 0, "{out}{err}");
    let doc: serde_json_like::Doc = serde_json_like::parse(&out);
    assert_eq!(doc.rows_variants(), vec!["payments-worker".to_string()]);
    // An unknown one is refused as everywhere, naming the sets there are.
    let (code, _, err) = my_cli(&program, &["agree", "--variant", "nope"]);
    assert_eq!(code, 2);
    assert!(err.contains("unknown variant 'nope'"), "{err}");
}

/// The agreement's rows, read without a JSON dependency of my own: every `"variant": "..."`.
mod serde_json_like {
    pub struct Doc(String);

    pub fn parse(s: &str) -> Doc {
        Doc(s.to_string())
    }

    impl Doc {
        pub fn rows_variants(&self) -> Vec<String> {
            self.0
                .split("\"variant\": \"")
                .skip(1)
                .filter_map(|t| t.split('"').next())
                .map(str::to_string)
                .collect()
        }
    }
}

#[test]
fn the_repeat_command_of_a_sweep_with_my_scenario_is_my_programs() {
    // leasesim's reference machines, and one scenario of mine beside the stock ones.
    let program = Builder::new()
        .machines(Machines::reference())
        .scenario(fast_clocks());
    let (code, out, err) = my_cli(&program, &["sweep", "--seeds", "2", "--format", "json"]);
    assert_eq!(code, 0, "{out}{err}");
    let repeat: Vec<&str> = out
        .lines()
        .skip_while(|l| !l.contains("\"repeat\""))
        .skip(1)
        .take_while(|l| !l.trim_start().starts_with(']'))
        .collect();
    assert_eq!(repeat.len(), 1, "{out}");
    // Every scenario of mine ran: the command names none, and it is not leasesim's binary's,
    // which lacks w1-w2-fast-clocks.
    assert!(repeat[0].contains(" sweep --seeds 0..2"), "{}", repeat[0]);
    assert!(
        !repeat[0].contains("cargo run --release -- sweep"),
        "{}",
        repeat[0]
    );
    // Only stock scenarios named: those are named.
    let (_, out, _) = my_cli(
        &program,
        &["sweep", "w1-w2", "--seeds", "2", "--format", "json"],
    );
    assert!(out.contains(" sweep w1-w2 --seeds 0..2"), "{out}");
}

#[test]
fn the_shards_of_a_sweep_and_a_matrix_with_my_scenario_merge_into_the_whole() {
    let dir = fresh_dir("merge");
    let program = machines::program();
    let mut sweeps = Vec::new();
    let mut matrices = Vec::new();
    for k in 1..=2 {
        let json = dir.join(format!("sweep-{k}.json"));
        let shard = format!("{k}/2");
        let (code, out, err) = my_cli(
            &program,
            &[
                "sweep",
                "--seeds",
                "3",
                "--shard",
                &shard,
                "--json",
                json.to_str().unwrap(),
            ],
        );
        assert_eq!(code, 0, "{out}{err}");
        sweeps.push(json.to_str().unwrap().to_string());
        let json = dir.join(format!("matrix-{k}.json"));
        let (code, out, err) = my_cli(
            &program,
            &[
                "matrix",
                "--seeds",
                "3",
                "--shard",
                &shard,
                "--json",
                json.to_str().unwrap(),
            ],
        );
        assert!(code <= 1, "{out}{err}");
        matrices.push(json.to_str().unwrap().to_string());
    }
    // 21 scenarios: the stock ones and mine.
    let mut args = vec!["merge"];
    args.extend(sweeps.iter().map(String::as_str));
    let (code, out, err) = my_cli(&program, &args);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("21 scenario(s) x 3 seeds"), "{out}");
    let mut args = vec!["merge", "--out"];
    let tables = dir.join("tables");
    args.push(tables.to_str().unwrap());
    args.extend(matrices.iter().map(String::as_str));
    let (code, out, err) = my_cli(&program, &args);
    assert!(code <= 1, "{out}{err}");
    let md = std::fs::read_to_string(tables.join("matrix.md")).expect("the merged matrix");
    assert!(md.contains("w1-w2-fast-clocks"), "{md}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn my_matrix_keeps_a_counterexample_caught_in_my_scenario_and_says_how_to_rerun_it() {
    let dir = fresh_dir("matrix-out");
    let late = find("late-grant-reply")
        .unwrap()
        .with_setup("late-grant-reply-on-my-hosts", |_, _, _| {});
    let program = Builder::new()
        .machines(my_worker(Bug::None))
        .machines(my_worker(Bug::DeadlineFromReplyArrival))
        .scenarios([late]);
    let out_dir = dir.join("tables");
    let (code, out, err) = my_cli(
        &program,
        &["matrix", "--seeds", "2", "--out", out_dir.to_str().unwrap()],
    );
    assert_eq!(code, 0, "{out}{err}");
    let page = std::fs::read_to_string(
        out_dir.join("counterexamples/payments-worker-late-reply-bug.html"),
    )
    .expect("the counterexample's page");
    assert!(
        page.contains("late-grant-reply-on-my-hosts"),
        "its scenario"
    );
    assert!(
        !page.contains("cargo run --release -- replay reports/"),
        "not leasesim's own rerun command"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn my_programs_choices_hold_on_its_command_line_too() {
    // A name a file or a command could not carry is refused.
    let odd = ScenarioDef::new("My Scenario", "spaces", |seed, v| {
        find("w1-w2").unwrap().build(seed, v)
    });
    let e = Builder::new().scenario(odd).validate().unwrap_err();
    assert!(e.contains("not kebab-case"), "{e}");
    // A stock scenario changed in place is no longer leasesim's, so it needs a name of its own.
    let e = Builder::new()
        .scenarios([find("w1-w2")
            .unwrap()
            .clone()
            .with_hazards(&[Hazard::Crash])])
        .validate()
        .unwrap_err();
    assert!(e.contains("takes the name of a stock scenario"), "{e}");
    // Stock machines on every stock scenario but one: repeating the sweep needs my program
    // (leasesim's `sweep` without names would run the swarm too).
    let some = Builder::new()
        .machines(Machines::reference())
        .without("swarm");
    let (code, out, err) = my_cli(&some, &["sweep", "--seeds", "1", "--format", "json"]);
    assert_eq!(code, 0, "{out}{err}");
    let line = out
        .lines()
        .find(|l| l.contains(" sweep --seeds 0..1"))
        .expect("a repeat command");
    assert!(!line.contains("cargo run --release -- sweep"), "{line}");
    // A judgement my program allows to be skipped is allowed by its `sweep` as by `check()`.
    let slow = find("w1-w2")
        .unwrap()
        .with_setup("w1-w2-slow-clocks", |s, _, _| {
            for w in &mut s.workers {
                w.clock.drift_ppm = -200_000;
            }
        });
    let strict = Builder::new()
        .machines(my_worker(Bug::None))
        .scenarios([slow]);
    let (code, out, _) = my_cli(&strict, &["sweep", "--seeds", "100"]);
    assert_eq!(code, 1, "never judged fails: {out}");
    let lenient = strict
        .allow_skipped("belief-within-grant")
        .allow_skipped("needless-takeover");
    let (code, out, err) = my_cli(&lenient, &["sweep", "--seeds", "100"]);
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(lenient.check().runs, 100);
}
