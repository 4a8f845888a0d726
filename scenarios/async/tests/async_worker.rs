//! An async lease worker, written as a team would write one with tokio (a heartbeat task
//! spawned beside the work, `select!` between the tool's answer and the lost-lease signal,
//! `timeout` on every request), judged on leasesim's scenarios; and the same worker with its
//! heartbeat awaited on the tool call's task (V8 in async form), which the checkers catch.

use leasesim::scenarios::{find, ALL};
use leasesim::{run, Machines, Verdict};
use leasesim_async::{AsyncMachines, ClaimReply, Grant, WorkerIo};
use leasesim_protocol::timing::holder_deadline;
use leasesim_protocol::{
    EffectOutcome, EntityId, ErrorCode, IdemKey, Outcome, Step, ToolAnswer, Variant,
};
use leasesim_tokio::sync::watch;
use leasesim_tokio::time::{self, Duration, Instant};
use leasesim_tokio::{select, spawn};

/// What the heartbeat task tells the work: the latest local time it may act, or that the lease
/// is lost.
type Lease = watch::Receiver<Option<u64>>;

fn ns(n: u64) -> Duration {
    Duration::from_nanos(n)
}

/// Whether the lease still lets the worker act now.
fn may_act(lease: &Lease) -> bool {
    matches!(*lease.borrow(), Some(deadline) if Instant::now().as_nanos() < deadline)
}

/// Resolves once the lease is lost or past its deadline.
async fn lost(mut lease: Lease) {
    loop {
        let deadline = match *lease.borrow_and_update() {
            None => return,
            Some(d) => d,
        };
        select! {
            changed = lease.changed() => {
                if changed.is_err() {
                    return;
                }
            }
            _ = time::sleep_until(Instant::from_nanos(deadline)) => {
                if !may_act(&lease) {
                    return;
                }
            }
        }
    }
}

/// Renews the lease every heartbeat period, apart from the work.
async fn heartbeat(io: WorkerIo, g: Grant, sent: u64, tx: watch::Sender<Option<u64>>) {
    let c = io.config().clone();
    let mut lease_ns = g.lease_ns;
    let mut sent_at = sent;
    loop {
        time::sleep(ns(c.heartbeat_ns)).await;
        let now = Instant::now().as_nanos();
        let jeopardy = now >= holder_deadline(sent_at, lease_ns, c.drift_ppm_max, c.stop_margin_ns);
        match time::timeout(
            ns(c.heartbeat_ns),
            io.heartbeat(g.job, g.token, jeopardy, 0),
        )
        .await
        {
            Ok(Some(lease)) => {
                lease_ns = lease;
                sent_at = now;
                let d = holder_deadline(sent_at, lease_ns, c.drift_ppm_max, c.stop_margin_ns);
                let _ = tx.send(Some(d));
            }
            Ok(None) => {
                let _ = tx.send(None);
                return;
            }
            // No answer within a period: the deadline stands, and the next renewal goes out.
            Err(_) => {}
        }
    }
}

/// One renewal on the caller's task (the starved worker's way): whether the lease holds.
async fn renew_inline(io: &WorkerIo, g: Grant, tx: &watch::Sender<Option<u64>>) -> bool {
    let c = io.config();
    let sent = Instant::now().as_nanos();
    match time::timeout(ns(c.heartbeat_ns), io.heartbeat(g.job, g.token, false, 0)).await {
        Ok(Some(lease_ns)) => {
            let d = holder_deadline(sent, lease_ns, c.drift_ppm_max, c.stop_margin_ns);
            let _ = tx.send(Some(d));
            true
        }
        Ok(None) => false,
        Err(_) => true,
    }
}

/// Walks the job's plan while the lease allows; `None` when it had to stop (lost, jeopardy).
/// With `inline`, the lease is renewed before each step on this task, not beside it.
async fn work(
    io: &WorkerIo,
    g: Grant,
    lease: &Lease,
    inline: Option<&watch::Sender<Option<u64>>>,
) -> Option<Outcome> {
    let c = io.config().clone();
    let plan = c.plans.get(g.class.0 as usize)?.clone();
    let mut result = 0u64;
    for (i, step) in plan.steps.iter().enumerate() {
        let i = i as u8;
        if g.checkpoint.is_some_and(|saved| i <= saved) {
            continue;
        }
        if let Some(tx) = inline {
            if !renew_inline(io, g, tx).await {
                return None;
            }
        }
        if !may_act(lease) {
            return None;
        }
        match *step {
            Step::Tool => {
                select! {
                    answer = time::timeout(ns(c.tool_timeout_ns), io.tool(g.job, g.token, i)) => {
                        match answer {
                            Ok(ToolAnswer::Success { result: r }) => result ^= r,
                            Ok(ToolAnswer::Failure { transient }) => {
                                return Some(Outcome::Failure {
                                    error: ErrorCode::ToolFailed,
                                    retryable: transient,
                                })
                            }
                            Ok(_) => {}
                            Err(_) => {
                                return Some(Outcome::Failure {
                                    error: ErrorCode::ToolTimeout,
                                    retryable: true,
                                })
                            }
                        }
                    }
                    _ = lost(lease.clone()) => return None,
                }
            }
            Step::Effect { op, receiver } => {
                let key = IdemKey {
                    job: g.job,
                    op,
                    salt: 0,
                };
                let entity = EntityId(g.job.0);
                let effect = io.effect(receiver, g.job, entity, key, g.token);
                select! {
                    outcome = time::timeout(ns(c.tool_timeout_ns), effect) => {
                        if matches!(outcome, Ok(EffectOutcome::StaleFence { .. })) {
                            return None;
                        }
                    }
                    _ = lost(lease.clone()) => return None,
                }
            }
            Step::Checkpoint => {
                let saved = time::timeout(ns(c.heartbeat_ns), io.checkpoint(g.job, g.token, i));
                if !matches!(saved.await, Ok(true)) {
                    return None;
                }
            }
        }
    }
    Some(Outcome::Success { result })
}

/// Commits while the lease allows, retrying a missing answer.
async fn commit(io: &WorkerIo, g: Grant, outcome: Outcome, lease: &Lease) {
    let c = io.config().clone();
    for _ in 0..c.commit_attempts_max {
        if !may_act(lease) {
            return;
        }
        let answer = time::timeout(ns(c.commit_retry_ns), io.commit(g.job, g.token, outcome));
        if let Ok(_accepted_or_refused) = answer.await {
            return;
        }
    }
}

/// The worker: claims, then for each job a heartbeat task beside the work. With `starve`, the
/// renewals are awaited between the steps on the work's own task, so none goes out while a
/// tool call is out (V8).
async fn worker(io: WorkerIo, starve: bool) {
    let c = io.config().clone();
    time::sleep(ns(c.start_delay_ns)).await;
    loop {
        let sent = Instant::now().as_nanos();
        let grant = match time::timeout(ns(c.claim_poll_ns), io.claim()).await {
            Ok(ClaimReply::Granted(g)) => g,
            _ => {
                time::sleep(ns(c.claim_poll_ns)).await;
                continue;
            }
        };
        io.set_busy(true);
        let first = holder_deadline(sent, grant.lease_ns, c.drift_ppm_max, c.stop_margin_ns);
        let (tx, lease) = watch::channel(Some(first));
        let (beat, inline) = match starve {
            false => (Some(spawn(heartbeat(io.clone(), grant, sent, tx))), None),
            true => (None, Some(tx)),
        };
        let walk = work(&io, grant, &lease, inline.as_ref());
        let stage = time::timeout(ns(c.stage_deadline_ns), walk).await;
        let outcome = match stage {
            Ok(Some(o)) => Some(o),
            Ok(None) => None,
            Err(_) => Some(Outcome::Failure {
                error: ErrorCode::StageDeadline,
                retryable: true,
            }),
        };
        // Renewals stop once the work is done: a worker that kept renewing while its commit
        // is held on the wire would keep the job from everyone else forever (I7).
        if let Some(beat) = beat {
            beat.abort();
        }
        if let Some(outcome) = outcome {
            commit(&io, grant, outcome, &lease).await;
        }
        io.set_busy(false);
    }
}

fn machines(starve: bool) -> Machines {
    let name = if starve { "async-starved" } else { "async" };
    Machines::new(name).with_async_worker(name, move |io| worker(io, starve))
}

#[test]
fn the_async_worker_holds_on_w1_w2_and_repeats_its_trace() {
    let m = machines(false);
    let w = find("w1-w2").expect("w1-w2");
    for seed in 0..200 {
        let setup = w.build(seed, Variant::Reference);
        let a = run(&setup, seed, &m);
        assert_eq!(a.verdict(), Verdict::Held, "seed {seed}: {:?}", a.findings);
        let b = run(&setup, seed, &m);
        assert_eq!(a.trace_hash(), b.trace_hash(), "seed {seed} repeats");
    }
}

#[test]
fn the_async_worker_breaks_no_invariant_on_any_named_scenario() {
    let m = machines(false);
    let mut judged = 0;
    for def in ALL.iter() {
        for seed in 0..20 {
            let setup = def.build(seed, Variant::Reference);
            if m.expressible(&setup).is_err() {
                continue;
            }
            let r = run(&setup, seed, &m);
            assert!(
                r.findings.is_empty() && r.machine_fault.is_none(),
                "{} seed {seed}: {:?} {:?}",
                def.name,
                r.findings.first(),
                r.machine_fault
            );
            judged += 1;
        }
    }
    assert!(judged >= 20 * (ALL.len() - 1), "{judged} runs judged");
}

#[test]
fn renewals_awaited_on_the_tool_calls_task_are_caught() {
    let m = machines(true);
    let caught = ALL.iter().any(|def| {
        (0..50).any(|seed| {
            let setup = def.build(seed, Variant::Reference);
            !run(&setup, seed, &m).findings.is_empty()
        })
    });
    assert!(
        caught,
        "renewals starved by a tool call are caught on some scenario"
    );
}

#[test]
fn the_same_seeds_give_the_same_traces_on_any_thread_and_in_any_order() {
    let w = find("w1-w2").expect("w1-w2");
    let hashes = |seeds: Vec<u64>| {
        let m = machines(false);
        let mut out: Vec<(u64, u64)> = seeds
            .into_iter()
            .map(|seed| {
                (
                    seed,
                    run(&w.build(seed, Variant::Reference), seed, &m).trace_hash(),
                )
            })
            .collect();
        out.sort();
        out
    };
    let here = hashes((0..60).collect());
    // Two other threads at once, each with its own share, one of them backwards: each node's
    // executor is its own, whichever thread polls it and whatever ran there before.
    let evens = std::thread::spawn(move || hashes((0..60).filter(|s| s % 2 == 0).collect()));
    let odds = std::thread::spawn(move || hashes((0..60).rev().filter(|s| s % 2 == 1).collect()));
    let mut there = evens.join().unwrap();
    there.extend(odds.join().unwrap());
    there.sort();
    assert_eq!(here, there);
}

/// Runs of the whole test binary so far: what a worker that keeps state outside its node sees.
static STARTS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// A worker whose first claim waits for a time drawn from outside the simulation (a process-wide
/// counter, as a global or the machine's clock would be): the same seed runs differently twice.
async fn leaky(io: WorkerIo) {
    let n = STARTS.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    time::sleep(Duration::from_millis(1 + n % 7)).await;
    worker(io, false).await;
}

#[test]
fn a_worker_that_reads_state_outside_its_node_is_reported_with_where_its_runs_diverge() {
    let m = Machines::new("leaky").with_async_worker("leaky", leaky);
    let report = leasesim::Builder::new()
        .machines(m)
        .scenarios([find("w1-w2").unwrap().clone()])
        .seeds(0..20)
        .threads(1)
        .check_determinism()
        .sweep()
        .unwrap();
    let o = &report.scenarios[0];
    assert!(o.nondeterministic > 0, "the leak is seen");
    let (_, why) = &o.nondeterministic_seeds[0];
    assert!(why.starts_with("traces diverge at event"), "{why}");
    assert!(
        why.contains("W1") || why.contains("W2"),
        "it names the node: {why}"
    );
}

#[test]
fn an_async_worker_runs_through_replay_shrink_and_explore() {
    let m = machines(true);
    // The first run where the starved worker fails, saved, replayed, shrunk.
    let (seed, setup, r) = ALL
        .iter()
        .flat_map(|def| (0..50).map(move |seed| (def, seed)))
        .map(|(def, seed)| {
            let setup = def.build(seed, Variant::Reference);
            let r = run(&setup, seed, &m);
            (seed, setup, r)
        })
        .find(|(_, _, r)| !r.findings.is_empty())
        .expect("the starved worker fails some run");
    let dir = std::env::temp_dir().join(format!("leasesim-async-replay-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir(&dir).unwrap();
    let file = dir.join("starved.json");
    let replay = leasesim::replay::Replay::record_on(&setup, seed, false, &r, &m, "");
    replay.save(&file).unwrap();
    let again = leasesim::replay::Replay::load(&file)
        .unwrap()
        .run_on(&m)
        .unwrap();
    assert_eq!(
        again.trace_hash(),
        r.trace_hash(),
        "the replay repeats the run"
    );
    let shrunk = leasesim::shrink::shrink_on(&replay, &m).unwrap();
    assert!(shrunk.replay.setup.faults.len() <= setup.faults.len());
    assert_eq!(shrunk.invariant, r.findings[0].invariant);
    std::fs::remove_dir_all(&dir).unwrap();
    // Every placement of one fault on the held worker: explored, and it holds.
    let explored = leasesim::Builder::new()
        .machines(machines(false))
        .explore("w1-w2", 1, 1)
        .unwrap();
    assert!(explored.distinct > 0, "plans ran");
    assert_eq!(explored.violating_plans, 0, "one fault breaks no async run");
}

/// The worker, keeping on its node's durable store how many times it started, and telling the
/// test what each start read there.
async fn counting(io: WorkerIo, seen: std::sync::Arc<std::sync::Mutex<Vec<(String, u8)>>>) {
    let before = io.durable_get("starts").map_or(0, |v| v[0]);
    seen.lock().unwrap().push((io.name().to_string(), before));
    io.durable_put("starts", &[before + 1]);
    worker(io, false).await;
}

#[test]
fn a_restart_runs_the_start_function_again_with_what_the_node_kept_on_its_durable_store() {
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let s = seen.clone();
    let m =
        Machines::new("counting").with_async_worker("counting", move |io| counting(io, s.clone()));
    let def = find("restart-same-name").unwrap();
    let r = run(&def.build(0, Variant::Reference), 0, &m);
    assert_eq!(r.verdict(), Verdict::Held, "{:?}", r.findings);
    // W1 started, crashed and started again: its second life read what its first wrote,
    // although every task and channel of the first was dropped.
    assert_eq!(
        *seen.lock().unwrap(),
        [("W1".to_string(), 0), ("W1".to_string(), 1)]
    );
}

/// A worker that writes more than its node's disk holds.
async fn hoarding(io: WorkerIo) {
    for i in 0.. {
        io.durable_put(&format!("k{i}"), &[0; 4096]);
        time::sleep(Duration::from_millis(1)).await;
    }
}

#[test]
fn a_worker_that_fills_its_durable_store_ends_the_run_as_a_machine_fault() {
    let m = Machines::new("hoarding").with_async_worker("hoarding", hoarding);
    let r = run(&find("w1-w2").unwrap().build(0, Variant::Reference), 0, &m);
    let fault = r.machine_fault.expect("a machine fault");
    assert!(
        fault.contains("durable store would hold") && fault.contains("(worker 'hoarding')"),
        "{fault}"
    );
}
