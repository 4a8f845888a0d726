//! The cost of one input round trip to a process: a bare Python loop that answers `done`, the
//! Python helper with an idle node, and the Node.js helper with an idle node.
//!
//! `cargo run --release -p leasesim-exec --example round_trip` (from the repository's root).

fn main() {
    let helpers = "scenarios/exec/helpers";
    let bare = "python3 -c 'import sys\nfor l in sys.stdin:\n    print(\"{\\\"output\\\":\\\"hello\\\",\\\"version\\\":1}\" if \"hello\" in l else \"\", flush=False)\n    print(\"{\\\"output\\\":\\\"done\\\"}\", flush=True)'";
    let python = format!(
        "python3 -c 'import sys, asyncio; sys.path.insert(0, \"{helpers}\"); import leasesim_process as lp; lp.run(lambda node: asyncio.sleep(3600))'"
    );
    let node = format!(
        "node -e 'require(\"./{helpers}/leasesim_process.js\").run(async (node) => {{ await node.sleep(3600e3); }})'"
    );
    let n = 20_000;
    for (what, cmd) in [
        ("bare Python loop", bare.to_string()),
        ("Python helper", python),
        ("Node.js helper", node),
    ] {
        match leasesim_exec::round_trip_seconds(&cmd, serde_json::json!({}), n) {
            Ok(s) => println!("{what:>17}: {:.1} us per input ({n} inputs)", s * 1e6),
            Err(e) => println!("{what:>17}: {e}"),
        }
    }
}
