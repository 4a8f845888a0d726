//! (a) The buggy worker measures its window from the *arrival* of the grant or renewal reply.
//! Here is the mistake by hand, on the machine alone, and then leasesim's checkers catching it on
//! its named scenarios with the reference coordinator and receiver.

use leasesim::scenarios::ALL;
use leasesim::{SeedRange, SweepConfig, Verdict};
use leasesim_example::{machines, Bug, Worker};
use leasesim_protocol::{
    ClassId, Event, JobId, Msg, Nanos, OpId, Output, Plan, Step, Token, ToolAnswer, WorkerConfig,
    WorkerMachine, WorkerName, MILLI_NS, SECOND_NS,
};

const L: Nanos = 30 * SECOND_NS;
const H: Nanos = 10 * SECOND_NS;

fn worker(bug: Bug, steps: Vec<Step>) -> Worker {
    let cfg = WorkerConfig {
        name: WorkerName(1),
        heartbeat_ns: H,
        drift_ppm_max: 0,
        stop_margin_ns: SECOND_NS,
        tool_timeout_ns: 100 * SECOND_NS,
        stage_deadline_ns: 300 * SECOND_NS,
        claim_poll_ns: SECOND_NS,
        commit_retry_ns: SECOND_NS,
        commit_attempts_max: 5,
        start_delay_ns: 0,
        plans: vec![Plan { steps }],
    };
    Worker::new(cfg, bug)
}

fn journal(w: &mut Worker) -> Vec<&'static str> {
    std::iter::from_fn(|| w.poll_output())
        .filter_map(|o| match o {
            Output::Journal(e) => Some(e.name()),
            Output::Send { .. } => None,
        })
        .collect()
}

/// Starts the worker and sends its first claim (request 1) at local time 0.
fn claiming(bug: Bug, steps: Vec<Step>) -> Worker {
    let mut w = worker(bug, steps);
    w.start(0);
    w.handle_timeout(0);
    journal(&mut w);
    w
}

fn grant(at: Nanos) -> (Nanos, Msg) {
    let msg = Msg::ClaimGranted {
        req: 1,
        job: JobId(0),
        token: Token(1),
        lease_ns: L,
        class: ClassId(0),
        checkpoint: None,
    };
    (at, msg)
}

fn pay() -> Step {
    Step::Effect {
        op: OpId(1),
        receiver: 0,
    }
}

#[test]
fn a_grant_that_arrives_after_the_lease_ended_is_not_acted_on_by_the_fixed_worker() {
    // The grant spent L + 2 s on the wire: the coordinator's lease is already over.
    let (at, msg) = grant(L + 2 * SECOND_NS);
    let mut fixed = claiming(Bug::None, vec![pay()]);
    fixed.handle_message(at, msg);
    assert_eq!(journal(&mut fixed), vec!["job_claimed", "jeopardy_entered"]);

    let mut buggy = claiming(Bug::DeadlineFromReplyArrival, vec![pay()]);
    buggy.handle_message(at, msg);
    let names = journal(&mut buggy);
    assert!(names.contains(&"effect_started"), "{names:?}");
}

#[test]
fn a_late_renewal_acknowledgement_moves_only_the_buggy_workers_window_past_the_grant() {
    let steps = vec![Step::Tool, pay()];
    let mut seen = Vec::new();
    for bug in [Bug::None, Bug::DeadlineFromReplyArrival] {
        let mut w = claiming(bug, steps.clone());
        // Granted 10 ms after the claim left.
        let (at, msg) = grant(10 * MILLI_NS);
        w.handle_message(at, msg);
        journal(&mut w);
        // The heartbeat (request 3; the tool call is request 2) leaves at 10.01 s; the
        // coordinator renews it at once, until about 40 s. Its acknowledgement is held up.
        w.handle_timeout(at + H);
        journal(&mut w);
        // No acknowledgement in time: jeopardy at L - G (either worker, claim sent at 0 or
        // granted at 10 ms), then the tool answers; the payment must wait.
        w.handle_timeout(L);
        w.handle_message(
            35 * SECOND_NS,
            Msg::ToolResponse {
                req: 2,
                job: JobId(0),
                step: 0,
                answer: ToolAnswer::Success { result: 7 },
            },
        );
        let names = journal(&mut w);
        assert!(names.contains(&"jeopardy_entered"), "{names:?}");
        assert!(!names.contains(&"effect_started"), "{names:?}");
        // The acknowledgement arrives at 45 s, when the renewed lease (about 40 s) is over.
        w.handle_message(
            45 * SECOND_NS,
            Msg::HeartbeatOk {
                req: 3,
                job: JobId(0),
                token: Token(1),
                lease_ns: L,
            },
        );
        seen.push(journal(&mut w));
    }
    // Fixed: from the heartbeat's send time the window ended at 10.01 + 30 - 1 = 39.01 s.
    assert_eq!(seen[0], vec!["heartbeat_ok"]);
    // Buggy: from the arrival it "ends" at 45 + 30 - 1 = 74 s, and the payment goes out.
    assert_eq!(
        seen[1],
        vec!["heartbeat_ok", "jeopardy_exited", "effect_started"]
    );
}

#[test]
fn the_buggy_worker_states_a_deadline_past_the_grant() {
    // What the belief-within-grant check judges: the deadline the worker journals.
    let deadline = |bug| {
        let mut w = claiming(bug, vec![pay()]);
        let (at, msg) = grant(5 * SECOND_NS);
        w.handle_message(at, msg);
        std::iter::from_fn(|| w.poll_output())
            .find_map(|o| match o {
                Output::Journal(Event::JobClaimed { deadline, .. }) => Some(deadline),
                _ => None,
            })
            .expect("a claim")
    };
    // The coordinator granted somewhere in [0, 5 s]; only 0 + L is safe to assume.
    assert_eq!(deadline(Bug::None), L - SECOND_NS);
    assert_eq!(deadline(Bug::DeadlineFromReplyArrival), L + 4 * SECOND_NS);
}

/// Every scenario, 2,000 seeds each, with the buggy worker: where leasesim catches it.
fn caught(m: leasesim::Machines) -> leasesim::SweepReport {
    leasesim::Builder::new()
        .machines(m)
        .seeds(0..2_000)
        .sweep()
        .expect("a consistent builder")
}

#[test]
fn leasesim_catches_the_buggy_worker_and_says_how_to_rerun_it() {
    let report = caught(machines::my_worker(Bug::DeadlineFromReplyArrival));
    let failures: Vec<_> = report.scenarios.iter().flat_map(|o| &o.failures).collect();
    for f in &failures {
        println!(
            "caught: {} seed {}: {}",
            ALL[f.scenario].name, f.seed, f.first
        );
    }
    assert!(
        !failures.is_empty(),
        "no scenario caught the late-reply bug in 2,000 seeds"
    );
    let fixed = leasesim::Builder::new().machines(machines::my_worker(Bug::None));
    for f in &failures {
        // Named by the invariant it breaks: a holder acting or believing outside the grant.
        assert!(
            f.invariants.contains(&"quiescent-holder"),
            "{} seed {}: {:?}",
            ALL[f.scenario].name,
            f.seed,
            f.invariants
        );
        // And it is the bug, nothing else: the same seed holds with the fix.
        let r = fixed.run(&ALL[f.scenario].name, f.seed).expect("runs");
        assert_eq!(r.verdict(), Verdict::Held);
    }
    // As a test would see it: the seed, the invariant, the saved replay and the command.
    let first = failures[0];
    let config = SweepConfig::new(
        vec![&ALL[first.scenario]],
        SeedRange {
            start: first.seed,
            end: first.seed + 1,
        },
        machines::my_worker(Bug::DeadlineFromReplyArrival),
    );
    let message = config.try_check().expect_err("it fails");
    assert!(
        message.contains(&format!("seed {}", first.seed)),
        "{message}"
    );
    assert!(message.contains("quiescent-holder"), "{message}");
    assert!(message.contains("LEASESIM_REPLAY="), "{message}");
    assert!(
        message.contains("cargo test -p leasesim-example"),
        "{message}"
    );
    let saved = message
        .lines()
        .find_map(|l| l.strip_prefix("  saved: "))
        .expect("saved");
    assert!(std::path::Path::new(saved).exists());
}

#[test]
fn the_bug_is_caught_among_my_own_coordinator_and_receivers_too() {
    let report = caught(machines::all_mine(Bug::DeadlineFromReplyArrival));
    let failures: Vec<_> = report.scenarios.iter().flat_map(|o| &o.failures).collect();
    assert!(!failures.is_empty());
    assert!(failures
        .iter()
        .all(|f| f.invariants.contains(&"quiescent-holder")));
}
