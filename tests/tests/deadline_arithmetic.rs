//! A holder's deadline arithmetic, judged when the holder states its belief (I5, belief within
//! grant): a worker that measures its deadline from the ARRIVAL of a grant or renewal reply, not
//! from the SEND of the request it answers, believes in lease time the coordinator never granted.
//! The `late-grant-reply` scenario sends replies late enough for that to show, and the checkers
//! flag the wrong deadline where it is stated, before the worker acts on it.
//!
//! The wrong worker is the reference worker behind a wrapper that rewrites the `deadline` of its
//! `job_claimed` and `heartbeat_ok` journal events as an arrival-based worker would state it:
//! `arrival + (deadline - send)`. Its behaviour is the reference's, so only the statement can
//! give it away.

use leasesim::run::RunResult;
use leasesim::scenarios;
use leasesim::setup::Setup;
use leasesim::{Hazard, Machines};
use leasesim_protocol::{Event, Invariant, Msg, Nanos, Output, Variant, Worker, WorkerMachine};

/// Requests remembered for their send times: more than the reference keeps in flight.
const SENT_KEPT: usize = 64;

/// The reference worker, stating deadlines measured from each reply's arrival.
struct FromArrival {
    inner: Box<dyn WorkerMachine>,
    /// The local time of the input being handled.
    now: Nanos,
    /// (request, local send time) of its recent claims and heartbeats.
    sent: Vec<(u64, Nanos)>,
    /// The request the grant or renewal being handled answers.
    answering: Option<u64>,
}

impl FromArrival {
    fn new(inner: Box<dyn WorkerMachine>) -> FromArrival {
        FromArrival {
            inner,
            now: 0,
            sent: Vec::new(),
            answering: None,
        }
    }

    fn input(&mut self, now: Nanos) {
        self.now = now;
        self.answering = None;
    }

    /// `deadline` as measured from now (the arrival) instead of the request's send.
    fn measured_from_arrival(&self, deadline: Nanos) -> Nanos {
        let sent_at = self.answering.and_then(|req| {
            self.sent
                .iter()
                .rev()
                .find(|(r, _)| *r == req)
                .map(|&(_, at)| at)
        });
        match sent_at {
            Some(at) => deadline + (self.now - at),
            None => deadline,
        }
    }
}

impl WorkerMachine for FromArrival {
    fn start(&mut self, now: Nanos) {
        self.input(now);
        self.inner.start(now);
    }
    fn crash(&mut self) {
        self.sent.clear();
        self.inner.crash();
    }
    fn handle_message(&mut self, now: Nanos, msg: Msg) {
        self.input(now);
        if let Msg::ClaimGranted { req, .. } | Msg::HeartbeatOk { req, .. } = msg {
            self.answering = Some(req);
        }
        self.inner.handle_message(now, msg);
    }
    fn handle_timeout(&mut self, now: Nanos) {
        self.input(now);
        self.inner.handle_timeout(now);
    }
    fn poll_output(&mut self) -> Option<Output> {
        let out = self.inner.poll_output()?;
        Some(match out {
            Output::Send {
                msg: Msg::Claim { req, .. } | Msg::Heartbeat { req, .. },
                ..
            } => {
                if self.sent.len() == SENT_KEPT {
                    self.sent.remove(0);
                }
                self.sent.push((req, self.now));
                out
            }
            Output::Journal(Event::JobClaimed {
                job,
                token,
                deadline,
            }) => Output::Journal(Event::JobClaimed {
                job,
                token,
                deadline: self.measured_from_arrival(deadline),
            }),
            Output::Journal(Event::HeartbeatOk {
                job,
                token,
                deadline,
            }) => Output::Journal(Event::HeartbeatOk {
                job,
                token,
                deadline: self.measured_from_arrival(deadline),
            }),
            other => other,
        })
    }
    fn poll_timeout(&self) -> Option<Nanos> {
        self.inner.poll_timeout()
    }
    fn is_busy(&self) -> bool {
        self.inner.is_busy()
    }
    fn observe_wall(&mut self, wall: Nanos) {
        self.inner.observe_wall(wall);
    }
    fn tool_in_flight(&self) -> Option<u64> {
        self.inner.tool_in_flight()
    }
}

/// Runs `setup` with every worker measuring its deadline from the arrival, judged as any run:
/// the reference worker wrapped, plugged in as a user's machine.
fn run_from_arrival(setup: &Setup, seed: u64) -> RunResult {
    let from_arrival = Machines::new("from-arrival").with_worker("from-arrival", |spec| {
        let inner = Box::new(Worker::new(
            spec.config.clone(),
            Variant::Reference.switches(),
        ));
        FromArrival::new(inner)
    });
    leasesim::run(setup, seed, &from_arrival)
}

#[test]
fn a_deadline_measured_from_the_reply_s_arrival_is_caught_where_it_is_stated() {
    let def = scenarios::find("late-grant-reply").expect("the scenario exists");
    let mut caught = Vec::new();
    for seed in 0..100 {
        let setup = def.build(seed, Variant::Reference);
        let reference = leasesim::run_setup(&setup, seed);
        assert!(
            reference.findings.is_empty(),
            "seed {seed}: the reference must hold: {:?}",
            reference.findings
        );
        let r = run_from_arrival(&setup, seed);
        let stated = r.findings.iter().find(|f| {
            f.invariant == Invariant::QuiescentHolder && f.message.contains("a deadline for")
        });
        if let Some(f) = stated {
            // Caught at a statement, whether or not the worker went on to act on it.
            assert!(f.message.contains("past the coordinator's grant"), "{f:?}");
            assert!(
                r.hazards.reached(Hazard::LeaseReplyPastMargin),
                "seed {seed}"
            );
            caught.push(seed);
        }
    }
    assert!(
        !caught.is_empty(),
        "an arrival-based deadline went unnoticed in 100 seeds of late-grant-reply"
    );
    // Every seed sends replies past the stop margin: the bug shows in (nearly) every one.
    assert!(caught.len() >= 90, "caught only in seeds {caught:?}");
}
