//! A run's story: its journal (P18) in order, one protocol event a line with its job, tokens,
//! fences, keys and reasons, and without its times. It is what `run --format story` prints and
//! what the snapshot tests pin: a reviewer reads what the protocol did, and a change of latency
//! that leaves the protocol's decisions alone leaves the story alone.

use crate::journal;
use crate::run::RunResult;
use crate::setup::Setup;

/// The story of `r`, a run of `setup`: one line per journal event (`node  event  key=value ...`,
/// the values sorted by key; every `*_ns` time and duration and the request numbers, which count
/// heartbeats too, left out), then the verdict, the invariants broken (by node) and the hazards
/// reached.
pub fn story(setup: &Setup, r: &RunResult) -> Result<String, String> {
    let hashes: Vec<u64> = setup.jobs.iter().map(|j| j.payload_hash).collect();
    let mut bytes = Vec::new();
    journal::write_journal_with_payload_hashes(r, &hashes, &mut bytes)?;
    let text = String::from_utf8(bytes).map_err(|e| format!("the journal is not text: {e}"))?;
    let mut out = String::with_capacity(text.len() / 2);
    for line in text.lines() {
        let value: serde_json::Value =
            serde_json::from_str(line).map_err(|e| format!("a journal line is not JSON: {e}"))?;
        // The format's header is not an event.
        let Some(fields) = value.as_object().filter(|f| !f.contains_key("journal")) else {
            continue;
        };
        let word = |k: &str| fields.get(k).and_then(|v| v.as_str()).unwrap_or("?");
        let rest: Vec<String> = fields
            .iter()
            .filter(|(k, _)| {
                !matches!(k.as_str(), "event" | "node" | "request") && !k.ends_with("_ns")
            })
            .map(|(k, v)| match v {
                serde_json::Value::String(s) => format!("{k}={s}"),
                other => format!("{k}={other}"),
            })
            .collect();
        out.push_str(&format!(
            "{:<6} {:<26} {}\n",
            word("node"),
            word("event"),
            rest.join(" ")
        ));
    }
    out.push_str(&format!(
        "verdict: {} (ended {:?})\n",
        r.verdict().word(),
        r.end
    ));
    for f in &r.findings {
        let node = r
            .nodes
            .get(f.node as usize)
            .map_or("world", |n| n.name.as_str());
        out.push_str(&format!("  {} on {node}\n", f.invariant.label()));
    }
    let reached: Vec<&str> = r.hazards.keys().map(|h| h.name()).collect();
    out.push_str(&format!(
        "hazards reached: {}\n",
        if reached.is_empty() {
            "none".to_string()
        } else {
            reached.join(", ")
        }
    ));
    Ok(out)
}
