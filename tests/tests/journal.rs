//! The technical journal (JSON lines through `tracing`) and the per-run metrics (P18), on the
//! first article's W1/W2 story and on a slow but healthy holder.

use leasesim::journal::{metrics, write_journal, write_journal_with_payload_hashes};
use leasesim::run::RunResult;
use leasesim::scenarios;
use leasesim_protocol::Variant;
use leasesim_sim::EventKind;
use leasesim_tests::run;
use serde_json::{Map, Value};

fn journal_bytes(r: &RunResult) -> Vec<u8> {
    let mut out = Vec::new();
    write_journal(r, &mut out).expect("the journal is written");
    out
}

/// Every event line of the journal, parsed; panics on a line that is not a JSON object. The
/// first line is the format's header (name, version 1, the nodes and their roles).
fn journal(r: &RunResult) -> Vec<Map<String, Value>> {
    let text = String::from_utf8(journal_bytes(r)).expect("utf-8 journal");
    assert!(text.ends_with('\n'), "the journal ends with a newline");
    let mut lines = text.lines();
    let header: Value = serde_json::from_str(lines.next().expect("a header")).expect("JSON");
    assert_eq!(header["journal"], "leasesim", "{header}");
    assert_eq!(header["version"], 1, "{header}");
    assert_eq!(
        header["nodes"].as_array().map(Vec::len),
        Some(r.nodes.len()),
        "{header}"
    );
    lines
        .map(|line| match serde_json::from_str::<Value>(line) {
            Ok(Value::Object(m)) => m,
            other => panic!("not a JSON object: {line}: {other:?}"),
        })
        .collect()
}

fn field<'a>(line: &'a Map<String, Value>, name: &str) -> &'a Value {
    line.get(name).unwrap_or(&Value::Null)
}

fn is(line: &Map<String, Value>, event: &str, node: &str) -> bool {
    field(line, "event") == event && field(line, "node") == node
}

/// The index of the first line at or after `from` that matches, or a panic naming what is missing.
fn find(
    lines: &[Map<String, Value>],
    from: usize,
    what: &str,
    pred: impl Fn(&Map<String, Value>) -> bool,
) -> usize {
    lines[from..]
        .iter()
        .position(pred)
        .map(|i| from + i)
        .unwrap_or_else(|| panic!("no {what} at or after line {from}"))
}

#[test]
fn journal_has_one_line_per_journal_event_in_trace_order() {
    let r = run("w1-w2", 1, Variant::Reference);
    let lines = journal(&r);
    let notes: Vec<_> = r
        .trace
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::Note { note } => Some((e, note)),
            _ => None,
        })
        .collect();
    assert_eq!(lines.len(), notes.len(), "one line per journal event");
    for (line, (e, note)) in lines.iter().zip(&notes) {
        assert_eq!(field(line, "event"), note.name(), "{line:?}");
        assert_eq!(field(line, "t_true_ns").as_u64(), Some(e.t), "{line:?}");
        assert_eq!(
            field(line, "t_local_ns").as_u64(),
            Some(e.local),
            "{line:?}"
        );
        assert_eq!(
            field(line, "node"),
            r.nodes[e.node as usize].name.as_str(),
            "{line:?}"
        );
        // Deterministic: no wall-clock stamp of tracing's own, no level or target noise.
        for noise in ["timestamp", "level", "target", "fields", "span", "spans"] {
            assert!(!line.contains_key(noise), "{noise} in {line:?}");
        }
    }
    let times: Vec<u64> = lines
        .iter()
        .map(|l| field(l, "t_true_ns").as_u64().unwrap())
        .collect();
    assert!(
        times.windows(2).all(|w| w[0] <= w[1]),
        "true time never goes back"
    );
}

#[test]
fn journal_tells_the_w1_w2_story_in_order() {
    let r = run("w1-w2", 1, Variant::Reference);
    let l = journal(&r);
    let token = |line: &Map<String, Value>| field(line, "token").as_u64();
    let job0 = |line: &Map<String, Value>| field(line, "job").as_u64() == Some(0);

    // W1: claim, external request, jeopardy with that request in flight, late commit refused.
    let claimed = find(&l, 0, "W1 job_claimed token 1", |x| {
        is(x, "job_claimed", "W1") && job0(x) && token(x) == Some(1)
    });
    let started = find(&l, claimed, "W1 tool_request_started", |x| {
        is(x, "tool_request_started", "W1") && token(x) == Some(1)
    });
    let jeopardy = find(&l, started, "W1 jeopardy_entered", |x| {
        is(x, "jeopardy_entered", "W1") && token(x) == Some(1)
    });
    let j = &l[jeopardy];
    assert!(
        field(j, "request").is_u64(),
        "jeopardy names the request in flight: {j:?}"
    );
    assert!(field(j, "last_confirmed_ns").is_u64(), "{j:?}");
    // The coordinator takes the expired lease over and grants it to W2 (token 2).
    let takeover = find(&l, jeopardy, "takeover of token 1", |x| {
        is(x, "lease_granted", "coord")
            && token(x) == Some(2)
            && field(x, "took_over").as_u64() == Some(1)
            && field(x, "reason") == "expired"
            && field(x, "holder") == "W2"
    });
    let w2_claimed = find(&l, takeover, "W2 job_claimed token 2", |x| {
        is(x, "job_claimed", "W2") && token(x) == Some(2)
    });
    find(&l, w2_claimed, "W2 tool_request_started", |x| {
        is(x, "tool_request_started", "W2") && token(x) == Some(2)
    });
    // W2's success: accepted by the coordinator, then claimed by W2.
    let accepted = find(&l, w2_claimed, "W2's result_accepted", |x| {
        is(x, "result_accepted", "coord")
            && token(x) == Some(2)
            && field(x, "worker") == "W2"
            && field(x, "state") == "succeeded"
    });
    find(&l, accepted, "W2 success_claimed", |x| {
        is(x, "success_claimed", "W2") && token(x) == Some(2)
    });
    // Only then W1's late success is refused and kept with its hash, never published.
    let rejected = find(&l, accepted, "coordinator's result_rejected for W1", |x| {
        is(x, "result_rejected", "coord") && token(x) == Some(1) && field(x, "worker") == "W1"
    });
    let rj = &l[rejected];
    assert!(field(rj, "reason").is_string(), "{rj:?}");
    assert!(
        field(rj, "result_hash")
            .as_str()
            .is_some_and(|h| h.starts_with("0x")),
        "{rj:?}"
    );
    find(&l, rejected, "W1 commit_refused", |x| {
        is(x, "commit_refused", "W1") && token(x) == Some(1)
    });
    // W1 never had its lease extended, and its stale second effect was fenced.
    assert!(!l
        .iter()
        .any(|x| is(x, "lease_renewed", "coord") && token(x) == Some(1)));
    let fenced = l
        .iter()
        .find(|x| field(x, "event") == "effect_fenced")
        .expect("W1's update_case is fenced");
    assert_eq!(field(fenced, "key"), "tool-job:0:update_case");
    assert_eq!(field(fenced, "fence").as_u64(), Some(1));
    assert_eq!(field(fenced, "mark").as_u64(), Some(2));
    // Tool lines name the class and the provider; answers carry their duration.
    let answered = l
        .iter()
        .find(|x| is(x, "tool_answered", "W1"))
        .expect("W1's tool answers");
    assert_eq!(field(answered, "provider"), "tool");
    assert!(field(answered, "class").is_u64());
    assert!(field(answered, "duration_ns").is_u64());
}

#[test]
fn journal_is_the_same_bytes_for_the_same_run() {
    let r = run("w1-w2", 1, Variant::Reference);
    let first = journal_bytes(&r);
    assert!(!first.is_empty());
    assert_eq!(first, journal_bytes(&r), "two writes of one run");
    let again = run("w1-w2", 1, Variant::Reference);
    assert_eq!(first, journal_bytes(&again), "two runs of one seed");
}

#[test]
fn journal_carries_hashes_never_payload_text() {
    let r = run("w1-w2", 1, Variant::Reference);
    let lines = journal(&r);
    for line in &lines {
        for key in line.keys() {
            let k = key.to_ascii_lowercase();
            assert!(
                k != "payload" && !k.contains("prompt") && !k.contains("input"),
                "field {key} in {line:?}"
            );
            assert!(
                !(k.contains("payload") && k != "payload_hash"),
                "field {key} in {line:?}"
            );
        }
    }
    // Without payload hashes nothing is said about the payload at all.
    assert!(lines.iter().all(|l| !l.contains_key("payload_hash")));
    // With them, the grant and the claim carry the job's hash, and only the hash.
    let mut out = Vec::new();
    write_journal_with_payload_hashes(&r, &[0xfeed], &mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    let with: Vec<Value> = text
        .lines()
        .skip(1)
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let stamped: Vec<&str> = with
        .iter()
        .filter(|l| l["payload_hash"] == "0xfeed")
        .map(|l| l["event"].as_str().unwrap())
        .collect();
    assert!(stamped.contains(&"lease_granted") && stamped.contains(&"job_claimed"));
    assert!(stamped
        .iter()
        .all(|e| *e == "lease_granted" || *e == "job_claimed"));
}

#[test]
fn metrics_of_the_w1_w2_story() {
    let r = run("w1-w2", 1, Variant::Reference);
    let m = metrics(&r);
    assert_eq!(m.expired_leases, 1, "{m}");
    assert_eq!(m.reclaimed_jobs, 1, "{m}");
    assert_eq!(m.rejected_results, 1, "{m}");
    assert_eq!(m.leases_granted, 2, "{m}");
    assert!(m.jeopardy_entries >= 1, "{m}");
    let tools: u64 = m.tools.iter().map(|t| t.requests).sum();
    assert!(tools >= 4, "both attempts call the tool: {m}");
    assert!(m.tools.iter().all(|t| t.provider == "tool"), "{m}");
    assert!(m.tools.iter().any(|t| t.latency_mean_ns.is_some()), "{m}");
    let text = m.to_string();
    assert!(text.starts_with("metrics:"), "{text}");
    assert!(text.contains("1 expired"), "{text}");
    assert!(text.contains("1 re-claimed job"), "{text}");
    assert!(text.contains("1 rejected result"), "{text}");
    let json = m.to_json();
    assert_eq!(json["expired_leases"], 1);
    assert_eq!(json["reclaimed_jobs"], 1);
    assert_eq!(json["rejected_results"], 1);
    assert!(json["tools"].is_array());
    assert_eq!(metrics(&r), m, "metrics are a function of the trace");
}

#[test]
fn metrics_of_a_slow_but_healthy_holder() {
    let r = run("slow-but-healthy", 1, Variant::Reference);
    let m = metrics(&r);
    assert!(m.renewals >= 5, "many renewals: {m}");
    let left = m.lease_left_min_ns.expect("lease left at renewal");
    assert!(left > 0, "every renewal came with lease time left: {m}");
    assert!(m.lease_left_mean_ns.unwrap() >= left, "{m}");
    let (age_max, age_mean) = (
        m.heartbeat_age_max_ns.unwrap(),
        m.heartbeat_age_mean_ns.unwrap(),
    );
    assert!(age_max >= age_mean && age_mean > 0, "{m}");
    assert_eq!(m.expired_leases, 0, "{m}");
    assert_eq!(m.reclaimed_jobs, 0, "{m}");
    assert_eq!(m.failed_renewals, 0, "{m}");
    assert_eq!(m.rejected_results, 0, "{m}");
    assert!(m.to_string().contains("lease left min"), "{m}");
}

#[test]
fn every_scenario_and_variant_journals_every_event_as_json() {
    let mut names = std::collections::BTreeSet::new();
    for def in scenarios::ALL {
        for &variant in Variant::ALL {
            for seed in 0..2 {
                let r = run(&def.name, seed, variant);
                let lines = journal(&r);
                let notes = r
                    .trace
                    .iter()
                    .filter(|e| matches!(e.kind, EventKind::Note { .. }))
                    .count();
                assert_eq!(lines.len(), notes, "{} {variant:?} seed {seed}", def.name);
                for l in &lines {
                    assert!(field(l, "t_true_ns").is_u64() && field(l, "t_local_ns").is_u64());
                    assert!(field(l, "node").is_string(), "{l:?}");
                    names.insert(field(l, "event").as_str().unwrap().to_string());
                }
                // Metrics never panic and always render.
                let m = metrics(&r);
                assert!(m.to_string().starts_with("metrics:"));
                assert!(m.to_json().is_object());
            }
        }
    }
    for expected in [
        "lease_granted",
        "lease_renewed",
        "heartbeat_refused",
        "result_rejected",
        "job_claimed",
        "heartbeat_ok",
        "heartbeat_lost",
        "jeopardy_entered",
        "tool_request_started",
        "tool_answered",
        "effect_fenced",
    ] {
        assert!(
            names.contains(expected),
            "{expected} never journaled: {names:?}"
        );
    }
}

/// The writer and the reader are one format: every journal written, as one file or one file a
/// node, reads back without a problem, every line read, with the run's nodes, and each node's
/// events (of the kinds the reader builds records of) in its order. (The reader numbers jobs,
/// entities and operations in the order it meets them, so events are compared by name.)
#[test]
fn every_written_journal_reads_back_as_the_run_it_came_from() {
    use leasesim::journal::journal_per_node;
    use leasesim_checkers::journal::read;
    use leasesim_checkers::node::Role;
    use std::collections::BTreeSet;
    // (where, node, events written, events read)
    let mut compared = Vec::new();
    let mut built = BTreeSet::new();
    for def in scenarios::ALL {
        for &variant in Variant::ALL {
            for seed in 0..2 {
                let r = run(&def.name, seed, variant);
                let at = format!("{} {variant:?} seed {seed}", def.name);
                let mut written = vec![Vec::new(); r.nodes.len()];
                for e in &r.trace {
                    if let EventKind::Note { note } = &e.kind {
                        written[e.node as usize].push(note.name());
                    }
                }
                let lines: usize = written.iter().map(Vec::len).sum();
                let one = vec![("run.jsonl".to_string(), journal_bytes(&r))];
                let per_node = journal_per_node(&r, &[]).expect("per-node journals");
                for files in [one, per_node] {
                    let j = read(&files);
                    assert!(j.refused.is_none(), "{at}: {:?}", j.refused);
                    assert!(j.problems.is_empty(), "{at}: {:?}", j.problems);
                    assert!(
                        j.unread.is_empty() && !j.left_unread,
                        "{at}: {:?}",
                        j.unread
                    );
                    assert_eq!(j.lines_read, lines, "{at}: every line is read");
                    assert_eq!(j.nodes.len(), r.nodes.len(), "{at}");
                    for (i, node) in r.nodes.iter().enumerate() {
                        let k = j
                            .nodes
                            .iter()
                            .position(|n| n.name == node.name)
                            .unwrap_or_else(|| panic!("{at}: node {} not read", node.name));
                        // A worker's drift bound is the run's configuration, not something a
                        // node journals: it reads back as none.
                        let mut want = node.clone();
                        if let Role::Worker { drift_ppm_max, .. } = &mut want.role {
                            *drift_ppm_max = 0;
                        }
                        assert_eq!(j.nodes[k], want, "{at}");
                        let got: Vec<&str> = j
                            .records
                            .iter()
                            .filter(|rec| rec.node == k)
                            .map(|rec| rec.event.name())
                            .collect();
                        built.extend(got.iter().copied());
                        compared.push((at.clone(), node.name.clone(), written[i].clone(), got));
                    }
                }
            }
        }
    }
    for (at, node, written, got) in &compared {
        let want: Vec<&str> = written
            .iter()
            .copied()
            .filter(|n| built.contains(n))
            .collect();
        assert_eq!(got, &want, "{at}: node {node}");
    }
    for kind in [
        "lease_granted",
        "job_claimed",
        "commit_sent",
        "effect_fenced",
    ] {
        assert!(built.contains(kind), "{kind} never read back: {built:?}");
    }
}
