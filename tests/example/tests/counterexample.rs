//! The counterexample I keep: the late-reply bug caught in swarm seed 1214, saved with my own
//! command line (`payments-leasesim run swarm --seed 1214 --variant
//! payments-worker-late-reply-bug --save ...`) and shrunk with it. My binary replays it exactly;
//! leasesim's own binary, which does not have my machines, refuses it and says who can.

use std::path::PathBuf;
use std::process::Command;

fn file(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("counterexamples")
        .join(name)
}

#[test]
fn my_binary_replays_the_saved_failure_exactly() {
    for name in ["late-reply.json", "late-reply.shrunk.json"] {
        let out = Command::new(env!("CARGO_BIN_EXE_payments-leasesim"))
            .arg("replay")
            .arg(file(name))
            .output()
            .expect("my binary runs");
        let text = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(1), "{name}: {text}");
        assert!(text.contains("quiescent-holder (I5)"), "{name}: {text}");
        assert!(
            text.contains("replay: identical to the recorded run"),
            "{name}: the same trace, byte for byte: {text}"
        );
    }
}

#[test]
fn leasesim_s_own_binary_refuses_it_and_names_the_program_that_can() {
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let code = leasesim_cli::run_cli(
        vec![
            "leasesim".into(),
            "replay".into(),
            file("late-reply.shrunk.json").display().to_string(),
        ],
        &mut out,
        &mut err,
        &leasesim::Builder::stock(),
    );
    let err = String::from_utf8_lossy(&err);
    assert_eq!(code, 2);
    assert!(err.contains("payments-worker-late-reply-bug"), "{err}");
    assert!(err.contains("--bin payments-leasesim -- replay"), "{err}");
}
