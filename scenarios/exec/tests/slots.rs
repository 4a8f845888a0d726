//! One process per node slot and thread, run after run, and runs that repeat: in a test binary
//! of its own, since the count of processes started is the whole program's.

use leasesim::scenarios::find;
use leasesim::{Builder, Machines};
use leasesim_exec::{processes_started, Exec, ExecMachines};

fn python_worker() -> Machines {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/exec-examples/worker.py"
    );
    let exec = Exec::new(&format!("python3 {path}")).unwrap();
    Machines::new("python-worker").with_exec_worker(&exec)
}

#[test]
fn the_python_worker_repeats_its_runs_and_one_process_serves_each_slot() {
    let before = processes_started();
    let report = Builder::new()
        .machines(python_worker())
        .scenarios([
            find("w1-w2").unwrap().clone(),
            find("restart-same-name").unwrap().clone(),
        ])
        .seeds(0..30)
        .threads(1)
        .check_determinism()
        .sweep()
        .unwrap();
    for o in &report.scenarios {
        assert_eq!(o.failing, 0, "{:?}", o.failures.first());
        assert_eq!(
            o.nondeterministic,
            0,
            "{:?}",
            o.nondeterministic_seeds.first()
        );
    }
    // 120 runs of two or three workers: a process per worker slot on this thread, and one more
    // for each restart of restart-same-name's crashed worker (60 runs), never one per run.
    let started = processes_started() - before;
    assert!(started <= 3 + 60, "{started} processes for 120 runs");
}
