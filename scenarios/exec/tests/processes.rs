//! Processes as machines: a Python worker and a Node.js payments service run on leasesim's
//! scenarios as processes, judged like any machine; a process that breaks the protocol ends its
//! run as MACHINE ERROR naming the node and the command, never a hang; one process serves a node
//! slot run after run; one that keeps state across runs is caught by the determinism check.

use leasesim::scenarios::{find, ALL};
use leasesim::{run, Builder, Machines, Verdict};
use leasesim_exec::{Exec, ExecMachines};
use leasesim_protocol::{Invariant, Variant};
use std::time::Duration;

fn example(file: &str) -> String {
    format!(
        "{}/../../tests/exec-examples/{file}",
        env!("CARGO_MANIFEST_DIR")
    )
}

fn python_worker(bug: bool) -> Machines {
    let flag = if bug { " --bug" } else { "" };
    let exec = Exec::new(&format!("python3 {}{flag}", example("worker.py"))).unwrap();
    let name = if bug {
        "python-worker-bug"
    } else {
        "python-worker"
    };
    let m = Machines::new(name).with_exec_worker(&exec);
    match bug {
        true => m.known_bad_as("renewal errors ignored: no jeopardy"),
        false => m,
    }
}

fn payments(forget_fence: bool) -> Machines {
    let flag = if forget_fence { " --forget-fence" } else { "" };
    let exec = Exec::new(&format!("node {}{flag}", example("payments.js"))).unwrap();
    Machines::new(if forget_fence {
        "payments-unfenced"
    } else {
        "payments"
    })
    .with_exec_receiver(&exec)
}

#[test]
fn a_process_that_breaks_the_protocol_ends_its_run_naming_the_node_and_the_command() {
    for (mode, says) in [
        (
            "exit",
            "exited (exit status: 3); its standard error ended with: worker: giving up on purpose",
        ),
        (
            "garbage",
            "wrote a line that is not a JSON object: this is not json",
        ),
        ("silent", "wrote nothing for 1.0s after the input 'start'"),
        ("flood", "wrote more than 4096 outputs for one input"),
        ("long-line", "wrote a line longer than 1048576 bytes"),
        ("no-hello", "did not answer hello"),
        ("wrong-message", "a send's 'msg' (missing field `req`)"),
        // Behind a wrapper that keeps the pipe open: the whole process group is ended.
        (
            "wrapped silent",
            "wrote nothing for 1.0s after the input 'start'",
        ),
    ] {
        let cmd = match mode.strip_prefix("wrapped ") {
            Some(m) => format!("sh -c 'python3 {} {m}; sleep 600'", example("faulty.py")),
            None => format!("python3 {} {mode}", example("faulty.py")),
        };
        let exec = Exec::new(&cmd)
            .unwrap()
            .with_timeout(Duration::from_secs(1));
        let m = Machines::new("faulty").with_exec_worker(&exec);
        let r = run(&find("w1-w2").unwrap().build(1, Variant::Reference), 1, &m);
        assert!(matches!(r.verdict(), Verdict::Unfinished { .. }), "{mode}");
        let fault = r
            .machine_fault
            .unwrap_or_else(|| panic!("{mode}: a machine fault"));
        assert!(fault.starts_with("W"), "{mode} names the node: {fault}");
        assert!(
            fault.contains(&format!("exec:{cmd}: {says}")),
            "{mode}: {fault}"
        );
    }
}

#[test]
fn the_python_worker_holds_on_every_named_scenario_for_seeds_0_to_100() {
    let testbed = Builder::new()
        .machines(python_worker(false))
        .without("swarm")
        .seeds(0..100);
    let config = testbed.sweep_config().unwrap();
    let report = testbed.sweep().unwrap();
    assert_eq!(report.runs, 100 * (ALL.len() as u64 - 1));
    for (def, o) in config.scenarios.iter().zip(&report.scenarios) {
        assert_eq!(o.failing, 0, "{}: {:?}", def.name, o.failures.first());
    }
    // What it never does, as leasesim's reference does: no status query (P12 c), no
    // reconciliation or human hand-off (P17); a stuck call ends by its own timeout before the
    // stage deadline; each effect is awaited before the report.
    let unreached: Vec<String> = report
        .unreached(&config, 1)
        .iter()
        .map(|(i, h)| format!("{} {}", config.scenarios[*i].name, h.name()))
        .collect();
    assert_eq!(
        unreached,
        [
            "gc-pause-after-check stale-commit-rejected",
            "stuck-tool-live-heartbeat stage-deadline",
            "retries status-query",
            "stages-and-checkpoints effect-reconciled",
            "stages-and-checkpoints human-review",
        ]
    );
}

#[test]
fn a_process_that_keeps_state_from_one_run_to_the_next_is_reported_by_the_determinism_check() {
    let exec = Exec::new(&format!("python3 {} leaky", example("faulty.py"))).unwrap();
    let m = Machines::new("leaky").with_exec_worker(&exec);
    let report = Builder::new()
        .machines(m)
        .scenarios([find("w1-w2").unwrap().clone()])
        .seeds(0..5)
        .threads(1)
        .check_determinism()
        .sweep()
        .unwrap();
    let o = &report.scenarios[0];
    assert!(o.nondeterministic > 0, "the leak is seen");
    let (_, why) = &o.nondeterministic_seeds[0];
    assert!(why.starts_with("traces diverge at event"), "{why}");
    // The leak shows in the claim it sends at its start: the input is named.
    assert!(
        why.contains("the first answer that differs is W1's to its timer or its start"),
        "{why}"
    );
}

#[test]
fn renewal_errors_ignored_are_caught_by_the_default_sweep_with_the_rerun_command() {
    let config = Builder::new()
        .machines(python_worker(true))
        .without("swarm")
        .seeds(0..100)
        .sweep_config()
        .unwrap();
    let said = config.try_check().expect_err("the sweep catches the bug");
    assert!(said.contains("quiescent-holder (I5)"), "{said}");
    assert!(
        said.contains("rerun exactly this run: LEASESIM_REPLAY="),
        "{said}"
    );
}

#[test]
fn the_node_payments_service_holds_and_without_its_fence_is_caught_as_a_double_effect() {
    let held = Builder::new()
        .machines(payments(false))
        .without("swarm")
        .seeds(0..20)
        .check();
    assert_eq!(held.failing(), 0);
    let r = run(
        &find("w1-w2").unwrap().build(1, Variant::Reference),
        1,
        &payments(true),
    );
    assert_eq!(r.verdict(), Verdict::Violated);
    assert!(
        r.findings
            .iter()
            .any(|f| f.invariant == Invariant::NoDoubleEffect),
        "{:?}",
        r.findings
    );
}

#[test]
fn a_python_lease_table_holds_as_the_coordinator_and_accepting_any_commit_is_caught() {
    let table = |flag: &str| {
        let exec = Exec::new(&format!("python3 {}{flag}", example("lease_table.py"))).unwrap();
        Machines::new("python-lease-table").with_exec_coordinator(&exec)
    };
    let w = find("w1-w2").unwrap();
    let m = table("");
    for seed in 0..100 {
        let r = run(&w.build(seed, Variant::Reference), seed, &m);
        assert_eq!(
            r.verdict(),
            Verdict::Held,
            "seed {seed}: {:?} {:?}",
            r.findings.first(),
            r.machine_fault
        );
    }
    let r = run(
        &w.build(1, Variant::Reference),
        1,
        &table(" --accept-any-commit"),
    );
    assert!(
        r.findings
            .iter()
            .any(|f| f.invariant == Invariant::NoStaleCommit),
        "{:?}",
        r.findings
    );
}
