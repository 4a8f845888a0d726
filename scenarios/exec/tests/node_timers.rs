//! The Node.js helper's simulated timers: a worker that waits with `setTimeout` asks for its
//! wake-up on the node's clock, and runs when leasesim says the time has come (its own process:
//! the transcript is process-wide).

use leasesim::scenarios::find;
use leasesim::{run, Machines};
use leasesim_exec::{record_exchanges, take_exchanges, Exec, ExecMachines};
use leasesim_protocol::Variant;

#[test]
fn a_node_worker_sleeps_on_its_nodes_clock() {
    let helper = concat!(env!("CARGO_MANIFEST_DIR"), "/helpers/leasesim_process.js");
    // It waits 1.5 s by the node's clock, then asks for a job once, and never holds one.
    let script = format!(
        "require('{helper}').run(async (node) => {{ \
           const t0 = Date.now(); await node.sleep(1500); \
           node.journal({{event: 'heartbeat_lost', job: 0, token: Date.now() - t0}}); \
           await node.request('coordinator', {{type: 'claim', worker: node.config.name, client_now: 0}}); }})"
    );
    let exec = Exec::new(&format!("node -e \"{script}\"")).unwrap();
    let m = Machines::new("sleepy").with_exec_worker(&exec);
    record_exchanges();
    let r = run(&find("w1-w2").unwrap().build(1, Variant::Reference), 1, &m);
    let log = take_exchanges();
    assert!(r.machine_fault.is_none(), "{:?}", r.machine_fault);
    let start = log
        .iter()
        .find(|l| l.starts_with("worker 0 >") && l.contains("\"input\":\"start\""))
        .expect("worker 0 started");
    let v: serde_json::Value = serde_json::from_str(start.split_once(" > ").unwrap().1).unwrap();
    let at = v["now"].as_u64().unwrap() + 1_500_000_000;
    // Its first answer sets the timer 1.5 s on; the timer input at that time runs the rest.
    let timer = format!("worker 0 < {{\"at\":{at},\"output\":\"timer\"}}");
    assert!(log.contains(&timer), "{timer} in {log:#?}");
    assert!(
        log.iter().any(|l| l.starts_with("worker 0 > ")
            && l.contains(&format!("\"input\":\"timer\",\"now\":{at}"))),
        "{log:#?}"
    );
    // Date.now() is the node's wall clock: it moved by the 1.5 s slept.
    assert!(
        log.iter()
            .any(|l| l.contains("\"event\":\"heartbeat_lost\"") && l.contains("\"token\":1500")),
        "{log:#?}"
    );
}
