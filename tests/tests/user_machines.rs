//! A user's own machines through the library and the command line: built by factories, run by
//! every command, kept in replay files only their own program reruns, and never able to crash
//! the process by breaking a rule of their host.

use leasesim::machines::{Machines, WorkerSpec};
use leasesim::sweep::{SeedRange, SweepConfig};
use leasesim::{run, scenarios, Verdict};
use leasesim_protocol::{
    CoordinatorMachine, Msg, Nanos, Output, Peer, ReceiverMachine, Variant, Worker, WorkerMachine,
};
use leasesim_sim::End;
use leasesim_tests::TempDir;

/// A worker that is the reference, wrapped: a user's machine in all but its code.
fn wrapped_reference() -> Machines {
    Machines::new("wrapped-worker").with_worker("wrapped-worker", |s: &WorkerSpec<'_>| {
        Worker::new(s.config.clone(), Variant::Reference.switches())
    })
}

/// The reference worker with V2's commit: a user's known-bad coordinator, for the tests.
fn careless() -> Machines {
    let v2 = Machines::variant(Variant::UnconditionalCommit);
    Machines::new("careless-coordinator")
        .with_coordinator("careless-coordinator", move |s| v2.coordinator(s))
        .known_bad()
}

fn cli(args: &[&str], catalogue: &[Machines]) -> (i32, String, String) {
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let mut argv = vec!["my-leasesim".to_string()];
    argv.extend(args.iter().map(|s| s.to_string()));
    let program = catalogue
        .iter()
        .cloned()
        .fold(leasesim::Builder::new(), leasesim::Builder::machines);
    let code = leasesim_cli::run_cli(argv, &mut out, &mut err, &program);
    (
        code,
        String::from_utf8(out).unwrap(),
        String::from_utf8(err).unwrap(),
    )
}

#[test]
fn a_users_machines_run_through_every_entry_point() {
    let mine = wrapped_reference();
    assert!(!mine.is_stock());
    let def = scenarios::find("w1-w2").unwrap();
    let setup = def.build(1, mine.setup_variant());
    // The same machines in all but name give the same run as the reference.
    assert_eq!(
        run(&setup, 1, &mine).trace_hash(),
        leasesim::run_setup(&setup, 1).trace_hash()
    );
    let report = SweepConfig::new(vec![def], SeedRange { start: 0, end: 30 }, mine.clone()).check();
    assert_eq!(report.runs, 30);
    // The matrix compares implementations: the careless one is caught, the wrapped one holds.
    let m = leasesim::matrix::compare(&[mine, careless()], scenarios::ALL, 20, 2);
    assert!(m.reference_clean && m.all_caught, "{m:?}");
    assert_eq!(m.rows[1].variant, "careless-coordinator");
    assert!(m.rows[1]
        .invariants
        .iter()
        .any(|i| i.starts_with("no-stale-commit")));
}

#[test]
fn a_users_program_keeps_its_counterexample_and_the_stock_program_refuses_it() {
    let dir = TempDir::new("user-replay");
    let file = dir.join("careless.json");
    let file = file.to_str().unwrap();
    let catalogue = [wrapped_reference(), careless()];
    let (code, out, err) = cli(
        &[
            "run",
            "w1-w2",
            "--seed",
            "1",
            "--variant",
            "careless-coordinator",
            "--save",
            file,
        ],
        &catalogue,
    );
    assert_eq!(code, 1, "{err}");
    assert!(out.contains("no-stale-commit (I1)"));
    // The user's program replays it, byte for byte the same timeline.
    let (code, again, _) = cli(&["replay", file], &catalogue);
    assert_eq!(code, 1);
    assert!(again.contains("identical to the recorded run"), "{again}");
    let timeline = |s: &str| {
        s.lines()
            .filter(|l| l.contains(" s  ") || l.starts_with("  "))
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    assert_eq!(timeline(&out), timeline(&again));
    // The stock program refuses it, and says who reruns it; it never runs the reference.
    let (code, out, err) = leasesim_tests::cli(&["replay", file]);
    assert_eq!(code, 2, "{out}");
    assert!(out.is_empty());
    assert!(err.contains("careless-coordinator"), "{err}");
    assert!(err.contains("rerun it with"), "{err}");
    for cmd in [
        vec!["shrink", file],
        vec!["report", file, "--html", "/dev/null"],
    ] {
        let (code, _, err) = leasesim_tests::cli(&cmd);
        assert_eq!(code, 2, "{cmd:?}: {err}");
        assert!(err.contains("careless-coordinator"), "{cmd:?}: {err}");
    }
    // The user's program shrinks it, keeping its machines.
    let (code, out, _) = cli(&["shrink", file], &catalogue);
    assert_eq!(code, 1, "{out}");
    let shrunk = leasesim::replay::Replay::load(&dir.join("careless.shrunk.json")).unwrap();
    assert_eq!(shrunk.machines.unwrap().name, "careless-coordinator");
}

#[test]
fn the_users_catalogue_is_what_list_and_the_default_show() {
    let catalogue = [wrapped_reference(), careless()];
    let (code, out, _) = cli(&["list"], &catalogue);
    assert_eq!(code, 0);
    assert!(out.contains("wrapped-worker") && out.contains("careless-coordinator"));
    assert!(
        !out.contains("unconditional-commit"),
        "only this program's machines"
    );
    let (code, out, _) = cli(&["run", "w1-w2", "--seed", "1"], &catalogue);
    assert_eq!(code, 0);
    assert!(
        out.contains("--variant wrapped-worker"),
        "the first is the default"
    );
    let (code, _, err) = cli(
        &["run", "w1-w2", "--seed", "1", "--variant", "nope"],
        &catalogue,
    );
    assert_eq!(code, 2);
    assert!(
        err.contains("wrapped-worker, careless-coordinator"),
        "{err}"
    );
}

/// A worker that breaks the adapter's rules in one of several ways, once it is started.
struct Rogue {
    how: u8,
    out: Vec<Output>,
}

impl WorkerMachine for Rogue {
    fn start(&mut self, _: Nanos) {
        let claim = Msg::Claim {
            req: 1,
            worker: leasesim_protocol::WorkerName(1),
            client_now: 0,
        };
        match self.how {
            0 => self.out.push(Output::Send {
                to: Peer::Receiver(99),
                msg: claim,
            }),
            1 => self.out.push(Output::Send {
                to: Peer::Addr(9_999),
                msg: claim,
            }),
            2 => panic!("a user's bug"),
            _ => {}
        }
    }
    fn crash(&mut self) {}
    fn handle_message(&mut self, _: Nanos, _: Msg) {}
    fn handle_timeout(&mut self, _: Nanos) {}
    fn poll_output(&mut self) -> Option<Output> {
        if self.how == 3 {
            // Never drains.
            return Some(Output::Send {
                to: Peer::Coordinator,
                msg: Msg::ClaimEmpty { req: 0 },
            });
        }
        self.out.pop()
    }
    fn poll_timeout(&self) -> Option<Nanos> {
        None
    }
    fn is_busy(&self) -> bool {
        false
    }
}

/// A coordinator that addresses a peer a server cannot name.
struct Confused;

impl CoordinatorMachine for Confused {
    fn handle_message(&mut self, _: Nanos, _: u32, _: Msg) {}
    fn poll_output(&mut self) -> Option<Output> {
        Some(Output::Send {
            to: Peer::Coordinator,
            msg: Msg::ClaimEmpty { req: 0 },
        })
    }
    fn all_terminal(&self) -> bool {
        false
    }
}

#[test]
fn a_machine_that_breaks_its_hosts_rules_ends_the_run_not_the_process() {
    let def = scenarios::find("w1-w2").unwrap();
    let setup = def.build(1, Variant::Reference);
    for (how, expect) in [
        (0u8, "receiver 99, which does not exist"),
        (1, "node 9999, which does not exist"),
        (2, "panicked: a user's bug"),
        (3, "more than 4096 outputs"),
    ] {
        let rogue = Machines::new("rogue").with_worker("rogue", move |_| Rogue {
            how,
            out: Vec::new(),
        });
        let r = run(&setup, 1, &rogue);
        assert_eq!(r.end, End::ProcessFault, "{how}");
        assert!(matches!(
            r.verdict(),
            Verdict::Unfinished { .. } | Verdict::Violated
        ));
        let fault = r.machine_fault.expect("named");
        assert!(fault.contains("worker 'rogue'"), "{fault}");
        assert!(fault.contains(expect), "{how}: {fault}");
    }
    let confused = Machines::new("confused").with_coordinator("confused", |_| Confused);
    // The coordinator speaks first only when asked: a claim makes it answer wrongly.
    let r = run(&setup, 1, &confused);
    assert_eq!(r.end, End::ProcessFault);
    assert!(r
        .machine_fault
        .unwrap()
        .contains("coord (coordinator 'confused') addressed Coordinator"));
    // A receiver factory that panics is reported too.
    let broken = Machines::new("broken").with_receiver("broken", |_| -> Box<dyn ReceiverMachine> {
        panic!("cannot build")
    });
    let r = run(&setup, 1, &broken);
    assert!(r
        .machine_fault
        .unwrap()
        .contains("factory of 'broken' panicked"));
}

#[test]
fn a_failure_in_a_users_test_says_how_to_rerun_it() {
    let def = scenarios::find("w1-w2").unwrap();
    let err = SweepConfig::new(vec![def], SeedRange { start: 0, end: 5 }, careless())
        .try_check()
        .expect_err("V2's coordinator fails every w1-w2 seed");
    assert!(err.contains("w1-w2 seed 0"), "{err}");
    assert!(err.contains("no-stale-commit"), "{err}");
    assert!(
        err.contains("LEASESIM_REPLAY=") && err.contains("cargo test -p leasesim-tests"),
        "{err}"
    );
    assert!(err.contains("LEASESIM_SEED=w1-w2:0"), "{err}");
    let saved = err
        .lines()
        .find_map(|l| l.strip_prefix("  saved: "))
        .expect("the replay was saved");
    assert!(saved.contains("target/leasesim-failures/"), "{saved}");
    let replay = leasesim::replay::Replay::load(std::path::Path::new(saved)).unwrap();
    let rec = replay
        .machines
        .as_ref()
        .expect("a user's machines are recorded");
    assert!(rec.rerun.starts_with("LEASESIM_REPLAY="), "{}", rec.rerun);
    assert_eq!(
        replay.run_on(&careless()).unwrap().verdict(),
        Verdict::Violated
    );
    let _ = std::fs::remove_file(saved);
}
