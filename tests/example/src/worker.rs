//! My worker: it asks the coordinator for a job, keeps the lease alive on a timer of its own,
//! walks the job's plan (payments, tool calls, checkpoints) and reports the outcome with a
//! conditional commit.
//!
//! How I think about the lease: the coordinator's clock decides, mine only estimates. When a
//! claim or a heartbeat is acknowledged, the lease was (re)started somewhere between the moment
//! I sent that request and the moment the answer came back. The only safe assumption is the
//! earliest one, the send time, so my window to act is
//!
//! ```text
//! act_until = sent + lease * (1 - rho) / (1 + rho) - stop_margin
//! ```
//!
//! on my own monotonic clock. Past it I go quiet ("jeopardy"): no payment, no tool call, no
//! success claimed, only heartbeats and, at the end, a commit the coordinator can still refuse.
//!
//! [`Bug::DeadlineFromReplyArrival`] keeps one classic mistake behind a switch: the window is
//! measured from when the reply *arrived*. Any time the reply spent on the wire (a slow
//! coordinator, a congested link, a retransmission) is then added to my window though the
//! coordinator never granted it.

use leasesim_protocol::{
    ClassId, EffectOutcome, EffectStatus, EntityId, ErrorCode, Event, IdemKey, JobId, Msg, Nanos,
    OpId, Outcome, Output, Peer, Step, Token, ToolAnswer, WorkerConfig, WorkerMachine,
};
use std::collections::VecDeque;

/// Which mistake the worker makes, if any.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Bug {
    /// The fixed worker: the window to act runs from the *send* time of the claim, heartbeat or
    /// checkpoint that the coordinator acknowledged.
    None,
    /// The window runs from the *arrival* of the acknowledgement: it overshoots the
    /// coordinator's lease by the reply's flight time.
    DeadlineFromReplyArrival,
    /// A stop callback that runs late: I journal jeopardy when my window ends, but the plan goes
    /// on paying, and each payment's journal line says I am not in jeopardy.
    PaysInJeopardy,
}

/// How many unanswered claims or heartbeats I remember for matching replies.
const REMEMBERED: usize = 8;
/// How often I ask a receiver about a payment before I give it to a human.
const VERIFY_TRIES: u32 = 3;
/// How many rounds of "wait, then ask" at the end of a plan before a human looks.
const DRAIN_ROUNDS: u32 = 3;
/// The idempotency key of a payment: the job and the operation, nothing per attempt.
fn payment_key(job: JobId, op: OpId) -> IdemKey {
    IdemKey { job, op, salt: 0 }
}
/// Each job settles one invoice; its number is the job's id.
fn invoice(job: JobId) -> EntityId {
    EntityId(job.0)
}

/// The last moment (on my clock) I may act on a lease of `lease` acknowledged from `from`.
fn act_until(from: Nanos, lease: Nanos, rho_ppm: u32, stop_margin: Nanos) -> Nanos {
    const MILLION: u128 = 1_000_000;
    let rho = u128::from(rho_ppm.min(999_999));
    let window = u128::from(lease) * (MILLION - rho) / (MILLION + rho);
    let end = (u128::from(from) + window).saturating_sub(u128::from(stop_margin));
    Nanos::try_from(end).unwrap_or(Nanos::MAX)
}

/// My alarms. Each is a local time or nothing; the earliest is my next wake-up.
#[derive(Copy, Clone, Debug, Default)]
struct Alarms {
    /// The window to act ends: jeopardy.
    quiet: Option<Nanos>,
    /// Time for the next heartbeat.
    beat: Option<Nanos>,
    /// Whatever the plan waits for (a tool, a receiver's answer) has waited long enough.
    patience: Option<Nanos>,
    /// The stage has run too long (P14), however healthy the lease is.
    stage: Option<Nanos>,
    /// Send the checkpoint or the commit again.
    resend: Option<Nanos>,
    /// Ask for work.
    poll: Option<Nanos>,
}

impl Alarms {
    fn earliest(&self) -> Option<Nanos> {
        [
            self.quiet,
            self.beat,
            self.patience,
            self.stage,
            self.resend,
            self.poll,
        ]
        .into_iter()
        .flatten()
        .min()
    }
}

/// Takes an alarm if it is due.
fn due(slot: &mut Option<Nanos>, now: Nanos) -> bool {
    if slot.is_some_and(|at| at <= now) {
        *slot = None;
        true
    } else {
        false
    }
}

/// What the plan is waiting for before it can move on.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Waiting {
    /// Nothing: the next step can run.
    Nothing,
    /// A tool call. `asked`: I already asked the tool about it once; `resent`: I already sent
    /// it again after the tool said it had never heard of it.
    Tool {
        req: u64,
        step: u8,
        asked: bool,
        resent: bool,
    },
    /// A receiver's answer to "did this payment happen?". `before_step`: asked before doing a
    /// step of a resumed stage (rather than to settle a payment that never got its answer).
    Verify {
        req: u64,
        key: IdemKey,
        receiver: u8,
        tries: u32,
        before_step: bool,
    },
    /// The plan is done but some payments have no answer yet.
    Answers,
    /// A checkpoint on the coordinator, asked for `tries + 1` times so far.
    Checkpoint { step: u8, tries: u32 },
    /// The conditional commit: the attempt is over, whatever the coordinator says.
    Commit { outcome: Outcome, sent: u32 },
}

/// The job I hold: one attempt, from the grant to the commit (or the loss).
#[derive(Clone, Debug)]
struct Attempt {
    job: JobId,
    token: Token,
    lease: Nanos,
    steps: Vec<Step>,
    /// The next step to run.
    next: usize,
    /// Send time of the newest acknowledged request (to ignore older acknowledgements).
    newest_acked: Nanos,
    /// Where my current window was measured from.
    confirmed_at: Nanos,
    /// The window's end on my clock.
    act_until: Nanos,
    jeopardy: bool,
    heartbeats: VecDeque<(u64, Nanos)>,
    /// Each request sent for the checkpoint in progress, with its send time: on a slow link
    /// the answer to an earlier one may come after I sent it again, and it counts just as well.
    checkpoint_sends: Vec<(u64, Nanos)>,
    waiting: Waiting,
    /// Payments sent that have not been answered yet.
    unanswered: Vec<(IdemKey, u8)>,
    /// Resumed after a checkpoint: each payment of the interrupted stage is checked first.
    verify_first: bool,
    drain_rounds: u32,
    effects_sent: u16,
    result: u64,
}

impl Attempt {
    fn committing(&self) -> bool {
        matches!(self.waiting, Waiting::Commit { .. })
    }
}

/// The worker.
#[derive(Clone, Debug)]
pub struct Worker {
    cfg: WorkerConfig,
    bug: Bug,
    /// Request numbers. In production this counter lives on disk: a restarted process must not
    /// take a reply to its previous life for one of its own.
    next_req: u64,
    /// The wall clock, as the host last told it (sent along, never trusted).
    wall: Nanos,
    /// Claims sent while idle: (request, send time).
    claims: VecDeque<(u64, Nanos)>,
    held: Option<Box<Attempt>>,
    alarms: Alarms,
    out: VecDeque<Output>,
}

/// A grant the coordinator sent me, as its message states it.
#[derive(Copy, Clone)]
struct Grant {
    req: u64,
    job: JobId,
    token: Token,
    lease: Nanos,
    class: ClassId,
    checkpoint: Option<u8>,
}

impl Worker {
    /// A worker with this configuration, with or without the bug.
    pub fn new(cfg: WorkerConfig, bug: Bug) -> Self {
        Worker {
            cfg,
            bug,
            next_req: 1,
            wall: 0,
            claims: VecDeque::new(),
            held: None,
            alarms: Alarms::default(),
            out: VecDeque::new(),
        }
    }

    /// The job and token I hold, and whether I am in jeopardy.
    pub fn holding(&self) -> Option<(JobId, Token, bool)> {
        self.held.as_ref().map(|a| (a.job, a.token, a.jeopardy))
    }

    fn req(&mut self) -> u64 {
        let r = self.next_req;
        self.next_req += 1;
        r
    }

    fn send(&mut self, to: Peer, msg: Msg) {
        self.out.push_back(Output::Send { to, msg });
    }

    fn log(&mut self, e: Event) {
        self.out.push_back(Output::Journal(e));
    }

    /// Where the window starts when the acknowledgement of a request sent at `sent` arrives
    /// at `now`.
    fn window_start(&self, sent: Nanos, now: Nanos) -> Nanos {
        match self.bug {
            Bug::None | Bug::PaysInJeopardy => sent,
            Bug::DeadlineFromReplyArrival => now,
        }
    }

    /// The window to act after an acknowledgement of a request sent at `sent` arrived `now`.
    fn window_from(&self, sent: Nanos, now: Nanos, lease: Nanos) -> Nanos {
        let from = self.window_start(sent, now);
        act_until(from, lease, self.cfg.drift_ppm_max, self.cfg.stop_margin_ns)
    }

    fn stand_down(&mut self, now: Nanos) {
        self.held = None;
        self.claims.clear();
        self.alarms = Alarms {
            poll: Some(now + self.cfg.claim_poll_ns),
            ..Alarms::default()
        };
    }

    // ---- asking for work ----

    fn ask_for_work(&mut self, now: Nanos) {
        if self.held.is_some() {
            return;
        }
        let req = self.req();
        if self.claims.len() == REMEMBERED {
            self.claims.pop_front();
        }
        self.claims.push_back((req, now));
        let msg = Msg::Claim {
            req,
            worker: self.cfg.name,
            client_now: self.wall,
        };
        self.send(Peer::Coordinator, msg);
        self.alarms.poll = Some(now + self.cfg.claim_poll_ns);
    }

    fn granted(&mut self, now: Nanos, grant: Grant) {
        let Grant {
            req,
            job,
            token,
            lease,
            class,
            checkpoint,
        } = grant;
        if self.held.is_some() {
            // One job at a time; the coordinator lets an unused grant expire.
            return;
        }
        let Some(&(_, sent)) = self.claims.iter().find(|(r, _)| *r == req) else {
            return;
        };
        let Some(plan) = self.cfg.plans.get(class.0 as usize) else {
            return;
        };
        let steps = plan.steps.clone();
        let until = self.window_from(sent, now, lease);
        self.held = Some(Box::new(Attempt {
            job,
            token,
            lease,
            steps,
            next: checkpoint.map_or(0, |c| usize::from(c) + 1),
            newest_acked: sent,
            confirmed_at: self.window_start(sent, now),
            act_until: until,
            jeopardy: false,
            heartbeats: VecDeque::new(),
            checkpoint_sends: Vec::new(),
            waiting: Waiting::Nothing,
            unanswered: Vec::new(),
            verify_first: checkpoint.is_some(),
            drain_rounds: 0,
            effects_sent: 0,
            result: 0,
        }));
        self.claims.clear();
        self.log(Event::JobClaimed {
            job,
            token,
            deadline: until,
        });
        self.alarms = Alarms {
            quiet: Some(until),
            // The heartbeat has its own timer: a long tool call never delays it (P5).
            beat: Some(now + self.cfg.heartbeat_ns),
            stage: Some(now + self.cfg.stage_deadline_ns),
            ..Alarms::default()
        };
        self.proceed(now);
    }

    // ---- keeping the lease ----

    fn heartbeat(&mut self, now: Nanos) {
        let req = self.req();
        let (worker, wall, h) = (self.cfg.name, self.wall, self.cfg.heartbeat_ns);
        let Some(a) = self.held.as_mut() else {
            return;
        };
        if a.committing() {
            // The work is finished; nothing left to keep alive.
            return;
        }
        if a.heartbeats.len() == REMEMBERED {
            a.heartbeats.pop_front();
        }
        a.heartbeats.push_back((req, now));
        let msg = Msg::Heartbeat {
            req,
            job: a.job,
            worker,
            token: a.token,
            client_now: wall,
            in_jeopardy: a.jeopardy,
            effects_attempted: a.effects_sent,
        };
        self.send(Peer::Coordinator, msg);
        self.alarms.beat = Some(now + h);
    }

    fn heartbeat_ok(&mut self, now: Nanos, req: u64, job: JobId, token: Token) {
        let Some(a) = self.held.as_mut() else {
            return;
        };
        if (a.job, a.token) != (job, token) {
            return;
        }
        let Some(i) = a.heartbeats.iter().position(|(r, _)| *r == req) else {
            // A duplicate, or an answer I stopped waiting for.
            return;
        };
        let (_, sent) = a.heartbeats[i];
        a.heartbeats.drain(..=i);
        let lease = a.lease;
        if !self.renewed(now, sent, lease) {
            // Older than a request already acknowledged: it tells me nothing new.
            return;
        }
        let Some(a) = self.held.as_ref() else {
            return;
        };
        let until = a.act_until;
        self.log(Event::HeartbeatOk {
            job,
            token,
            deadline: until,
        });
        self.after_renewal(now);
    }

    /// The coordinator acknowledged a request I sent at `sent`: move the window, unless a
    /// later request was acknowledged already.
    fn renewed(&mut self, now: Nanos, sent: Nanos, lease: Nanos) -> bool {
        let until = self.window_from(sent, now, lease);
        let from = self.window_start(sent, now);
        let Some(a) = self.held.as_mut() else {
            return false;
        };
        if sent <= a.newest_acked {
            return false;
        }
        a.newest_acked = sent;
        a.confirmed_at = from;
        a.act_until = until;
        true
    }

    /// After the window moved: leave jeopardy if the new window is still open, and go on.
    fn after_renewal(&mut self, now: Nanos) {
        let Some(a) = self.held.as_mut() else {
            return;
        };
        if now >= a.act_until {
            self.go_quiet();
            return;
        }
        self.alarms.quiet = Some(a.act_until);
        if a.jeopardy {
            a.jeopardy = false;
            let (job, token) = (a.job, a.token);
            self.log(Event::JeopardyExited { job, token });
            self.proceed(now);
        }
    }

    fn go_quiet(&mut self) {
        let Some(a) = self.held.as_mut() else {
            return;
        };
        if a.jeopardy {
            return;
        }
        a.jeopardy = true;
        let request = match a.waiting {
            Waiting::Tool { req, .. } => Some(req),
            _ => None,
        };
        let e = Event::JeopardyEntered {
            job: a.job,
            token: a.token,
            last_confirmed: a.confirmed_at,
            request,
        };
        self.log(e);
    }

    /// "No row": the lease is gone (P12 a). Stop, say so, look for other work.
    fn lost(&mut self, now: Nanos) {
        if let Some(a) = self.held.as_ref() {
            let (job, token) = (a.job, a.token);
            self.log(Event::HeartbeatLost { job, token });
        }
        self.stand_down(now);
    }

    // ---- the plan ----

    /// Runs steps until one has to wait.
    fn proceed(&mut self, now: Nanos) {
        let rounds = self.held.as_ref().map_or(0, |a| a.steps.len() + 2);
        for _ in 0..rounds {
            let Some(a) = self.held.as_mut() else {
                return;
            };
            if a.waiting != Waiting::Nothing {
                return;
            }
            let Some(&step) = a.steps.get(a.next) else {
                self.plan_done(now);
                return;
            };
            if now >= a.act_until {
                self.go_quiet();
            }
            let Some(a) = self.held.as_mut() else {
                return;
            };
            if a.jeopardy && self.bug != Bug::PaysInJeopardy {
                // Quiescence: I wait for a renewal or for the loss.
                return;
            }
            match step {
                Step::Effect { op, receiver } => {
                    let key = payment_key(a.job, op);
                    if a.verify_first {
                        self.verify(now, key, receiver, 0, true);
                        return;
                    }
                    a.next += 1;
                    a.unanswered.push((key, receiver));
                    // I don't wait for the receiver's answer here; I collect the answers before
                    // I commit.
                    self.pay(key, receiver);
                }
                Step::Tool => {
                    let step = a.next as u8;
                    self.call_tool(now, step);
                    return;
                }
                Step::Checkpoint => {
                    let step = a.next as u8;
                    self.checkpoint(now, step, 0);
                    return;
                }
            }
        }
    }

    /// Sends one payment with my fence and its stable key.
    fn pay(&mut self, key: IdemKey, receiver: u8) {
        let req = self.req();
        let Some(a) = self.held.as_mut() else {
            return;
        };
        a.effects_sent = a.effects_sent.saturating_add(1);
        let (job, token) = (a.job, a.token);
        let entity = invoice(job);
        self.log(Event::EffectStarted {
            job,
            token,
            receiver,
            entity,
            key,
            in_jeopardy: false,
        });
        self.send(
            Peer::Receiver(receiver),
            Msg::Effect {
                req,
                job,
                entity,
                key,
                fence: token,
            },
        );
    }

    fn call_tool(&mut self, now: Nanos, step: u8) {
        let req = self.req();
        let timeout = self.cfg.tool_timeout_ns;
        let Some(a) = self.held.as_mut() else {
            return;
        };
        a.waiting = Waiting::Tool {
            req,
            step,
            asked: false,
            resent: false,
        };
        let (job, token) = (a.job, a.token);
        self.log(Event::ToolRequestStarted {
            job,
            token,
            request: req,
            step,
        });
        self.send(
            Peer::Tool,
            Msg::ToolRequest {
                req,
                job,
                token,
                step,
            },
        );
        self.alarms.patience = Some(now + timeout);
    }

    fn tool_answered(&mut self, now: Nanos, req: u64, answer: ToolAnswer) {
        let timeout = self.cfg.tool_timeout_ns;
        let Some(a) = self.held.as_mut() else {
            return;
        };
        let Waiting::Tool {
            req: waiting_for,
            step,
            asked,
            resent,
        } = a.waiting
        else {
            return;
        };
        if waiting_for != req {
            return;
        }
        let (job, token) = (a.job, a.token);
        match answer {
            ToolAnswer::Success { result } => {
                a.result = a.result.wrapping_mul(31).wrapping_add(result);
                a.next += 1;
                a.waiting = Waiting::Nothing;
                self.alarms.patience = None;
                self.log(Event::ToolAnswered {
                    job,
                    token,
                    request: req,
                    success: true,
                });
                self.proceed(now);
            }
            ToolAnswer::Failure { transient } => {
                a.waiting = Waiting::Nothing;
                self.tool_failed(now, req, transient);
            }
            ToolAnswer::Running => {
                // My status question's answer: still working. Give it another timeout.
                self.alarms.patience = Some(now + timeout);
            }
            ToolAnswer::NoRecord if !resent => {
                // It never got the call: send the same request again, once.
                a.waiting = Waiting::Tool {
                    req,
                    step,
                    asked,
                    resent: true,
                };
                self.send(
                    Peer::Tool,
                    Msg::ToolRequest {
                        req,
                        job,
                        token,
                        step,
                    },
                );
                self.alarms.patience = Some(now + timeout);
            }
            ToolAnswer::NoRecord => {
                // Lost twice; the patience alarm ends it.
            }
        }
    }

    /// The tool answered call `req` with a failure: the attempt ends with it, retryable when
    /// the failure was transient.
    fn tool_failed(&mut self, now: Nanos, req: u64, transient: bool) {
        let Some(a) = self.held.as_ref() else {
            return;
        };
        let (job, token) = (a.job, a.token);
        self.alarms.patience = None;
        self.log(Event::ToolAnswered {
            job,
            token,
            request: req,
            success: false,
        });
        // A validation error is final; anything else may work on another attempt.
        let error = if transient {
            ErrorCode::ToolFailed
        } else {
            ErrorCode::Validation
        };
        self.commit(
            now,
            Outcome::Failure {
                error,
                retryable: transient,
            },
        );
    }

    /// The thing I wait for did not answer in time.
    fn out_of_patience(&mut self, now: Nanos) {
        let Some(a) = self.held.as_mut() else {
            return;
        };
        let (job, token) = (a.job, a.token);
        match a.waiting {
            Waiting::Tool {
                req,
                step,
                asked: false,
                resent,
            } => {
                // The call's outcome is unknown (P12 c): ask before deciding anything.
                a.waiting = Waiting::Tool {
                    req,
                    step,
                    asked: true,
                    resent,
                };
                self.ask_tool_status(now, req, step);
            }
            Waiting::Tool { req, .. } => {
                a.waiting = Waiting::Nothing;
                self.log(Event::ToolTimedOut {
                    job,
                    token,
                    request: req,
                });
                // Whatever the tool did, the next attempt repeats it under the same keys.
                self.commit(
                    now,
                    Outcome::Failure {
                        error: ErrorCode::ToolTimeout,
                        retryable: true,
                    },
                );
            }
            Waiting::Verify {
                key,
                receiver,
                tries,
                before_step,
                ..
            } => {
                if tries + 1 >= VERIFY_TRIES {
                    self.ask_a_human(now, key);
                } else {
                    self.verify(now, key, receiver, tries + 1, before_step);
                }
            }
            Waiting::Answers => {
                a.drain_rounds += 1;
                a.waiting = Waiting::Nothing;
                let Some(&(key, receiver)) = a.unanswered.first() else {
                    self.proceed(now);
                    return;
                };
                if a.drain_rounds > DRAIN_ROUNDS {
                    self.ask_a_human(now, key);
                } else {
                    self.verify(now, key, receiver, 0, false);
                }
            }
            Waiting::Nothing | Waiting::Checkpoint { .. } | Waiting::Commit { .. } => {}
        }
    }

    /// Asks the tool what became of call `req` at `step`, and gives it another timeout.
    fn ask_tool_status(&mut self, now: Nanos, req: u64, step: u8) {
        let timeout = self.cfg.tool_timeout_ns;
        let Some(a) = self.held.as_ref() else {
            return;
        };
        let (job, token) = (a.job, a.token);
        let query = self.req();
        self.log(Event::ToolStatusQueried {
            job,
            token,
            request: req,
        });
        self.send(
            Peer::Tool,
            Msg::ToolStatus {
                req: query,
                job,
                request: req,
                step,
            },
        );
        self.alarms.patience = Some(now + timeout);
    }

    /// Asks a receiver whether a payment took place (P12 c, P17). The question carries my fence:
    /// it fences off my predecessor even if it is my first contact with the receiver.
    fn verify(&mut self, now: Nanos, key: IdemKey, receiver: u8, tries: u32, before_step: bool) {
        let req = self.req();
        let timeout = self.cfg.tool_timeout_ns;
        let Some(a) = self.held.as_mut() else {
            return;
        };
        a.waiting = Waiting::Verify {
            req,
            key,
            receiver,
            tries,
            before_step,
        };
        let (job, fence) = (a.job, a.token);
        self.send(
            Peer::Receiver(receiver),
            Msg::EffectStatus {
                req,
                job,
                key,
                fence,
            },
        );
        self.alarms.patience = Some(now + timeout);
    }

    fn verified(&mut self, now: Nanos, req: u64, key: IdemKey, status: EffectStatus) {
        let Some(a) = self.held.as_mut() else {
            return;
        };
        let Waiting::Verify {
            req: asked,
            key: asked_key,
            receiver,
            before_step,
            ..
        } = a.waiting
        else {
            return;
        };
        if asked != req || asked_key != key {
            return;
        }
        a.waiting = Waiting::Nothing;
        self.alarms.patience = None;
        let (job, token) = (a.job, a.token);
        self.log(Event::EffectReconciled {
            job,
            token,
            key,
            status,
        });
        let Some(a) = self.held.as_mut() else {
            return;
        };
        match status {
            EffectStatus::Applied => {
                if before_step {
                    // My predecessor already paid this one.
                    a.next += 1;
                } else {
                    a.unanswered.retain(|(k, _)| *k != key);
                }
                self.proceed(now);
            }
            EffectStatus::NotApplied => {
                if now >= a.act_until {
                    self.go_quiet();
                }
                let Some(a) = self.held.as_mut() else {
                    return;
                };
                if a.jeopardy {
                    // Not now: the question is asked again once the lease is confirmed.
                    return;
                }
                if before_step {
                    a.next += 1;
                    a.unanswered.push((key, receiver));
                }
                // Same key again: if it did go through meanwhile, the receiver says so.
                self.pay(key, receiver);
                self.proceed(now);
            }
            EffectStatus::Unknown => self.ask_a_human(now, key),
        }
    }

    fn effect_answered(&mut self, now: Nanos, job: JobId, key: IdemKey, outcome: EffectOutcome) {
        let Some(a) = self.held.as_mut() else {
            return;
        };
        if a.job != job {
            return;
        }
        a.unanswered.retain(|(k, _)| *k != key);
        let token = a.token;
        let committing = a.committing();
        let all_in = a.waiting == Waiting::Answers && a.unanswered.is_empty();
        self.log(Event::EffectAnswered {
            job,
            token,
            key,
            outcome,
        });
        if committing {
            return;
        }
        if outcome == EffectOutcome::Unauthorized {
            // The receiver's policy says no to this payment, whoever holds the lease (P16).
            self.commit(
                now,
                Outcome::Failure {
                    error: ErrorCode::Unauthorized,
                    retryable: false,
                },
            );
            return;
        }
        // A fenced payment needs nothing here: the coordinator tells me about the lease.
        if all_in {
            if let Some(a) = self.held.as_mut() {
                a.waiting = Waiting::Nothing;
            }
            self.alarms.patience = None;
            self.proceed(now);
        }
    }

    /// The last step is done.
    fn plan_done(&mut self, now: Nanos) {
        let timeout = self.cfg.tool_timeout_ns;
        let Some(a) = self.held.as_mut() else {
            return;
        };
        if !a.unanswered.is_empty() {
            // Not done until every payment is answered or checked (P17).
            a.waiting = Waiting::Answers;
            self.alarms.patience = Some(now + timeout);
            return;
        }
        let result = a.result;
        self.commit(now, Outcome::Success { result });
    }

    fn ask_a_human(&mut self, now: Nanos, key: IdemKey) {
        let Some(a) = self.held.as_ref() else {
            return;
        };
        let (job, token) = (a.job, a.token);
        self.log(Event::HumanReviewRequested { job, token, key });
        self.commit(
            now,
            Outcome::Failure {
                error: ErrorCode::NeedsHumanReview,
                retryable: false,
            },
        );
    }

    // ---- checkpoints and the commit ----

    fn checkpoint(&mut self, now: Nanos, step: u8, tries: u32) {
        let req = self.req();
        let (worker, retry) = (self.cfg.name, self.cfg.commit_retry_ns);
        let Some(a) = self.held.as_mut() else {
            return;
        };
        if tries == 0 {
            a.checkpoint_sends.clear();
        }
        a.checkpoint_sends.push((req, now));
        a.waiting = Waiting::Checkpoint { step, tries };
        let msg = Msg::Checkpoint {
            req,
            job: a.job,
            worker,
            token: a.token,
            step,
        };
        self.send(Peer::Coordinator, msg);
        self.alarms.resend = Some(now + retry);
    }

    fn checkpoint_answered(&mut self, now: Nanos, req: u64, job: JobId, token: Token, saved: bool) {
        let Some(a) = self.held.as_mut() else {
            return;
        };
        if (a.job, a.token) != (job, token) {
            return;
        }
        if !matches!(a.waiting, Waiting::Checkpoint { .. }) {
            return;
        }
        let Some(&(_, sent)) = a.checkpoint_sends.iter().find(|(r, _)| *r == req) else {
            return;
        };
        a.checkpoint_sends.clear();
        a.waiting = Waiting::Nothing;
        self.alarms.resend = None;
        if !saved {
            self.lost(now);
            return;
        }
        a.next += 1;
        a.verify_first = false;
        // A saved checkpoint renews the lease from the moment it was asked for.
        let lease = a.lease;
        self.renewed(now, sent, lease);
        self.after_renewal(now);
        self.proceed(now);
    }

    fn commit(&mut self, now: Nanos, outcome: Outcome) {
        let Some(a) = self.held.as_mut() else {
            return;
        };
        if a.committing() {
            // The first decision stands.
            return;
        }
        a.waiting = Waiting::Commit { outcome, sent: 0 };
        // Heartbeats stop here: only the commit's answer matters now.
        self.alarms.beat = None;
        self.alarms.stage = None;
        self.alarms.patience = None;
        self.send_commit(now);
    }

    fn send_commit(&mut self, now: Nanos) {
        let req = self.req();
        let (worker, wall, retry) = (self.cfg.name, self.wall, self.cfg.commit_retry_ns);
        let Some(a) = self.held.as_mut() else {
            return;
        };
        let Waiting::Commit { outcome, sent } = a.waiting else {
            return;
        };
        a.waiting = Waiting::Commit {
            outcome,
            sent: sent + 1,
        };
        let (job, token) = (a.job, a.token);
        // Allowed in jeopardy: the coordinator, not me, decides whether it counts.
        let in_jeopardy = a.jeopardy || now >= a.act_until;
        self.log(Event::CommitSent {
            job,
            token,
            outcome,
            in_jeopardy,
        });
        self.send(
            Peer::Coordinator,
            Msg::Commit {
                req,
                job,
                worker,
                token,
                outcome,
                client_now: wall,
            },
        );
        self.alarms.resend = Some(now + retry);
    }

    fn resend(&mut self, now: Nanos) {
        let most = self.cfg.commit_attempts_max;
        let Some(a) = self.held.as_ref() else {
            return;
        };
        let (job, token) = (a.job, a.token);
        match a.waiting {
            Waiting::Checkpoint { step, tries, .. } if tries + 1 < most => {
                self.checkpoint(now, step, tries + 1)
            }
            Waiting::Commit { sent, .. } if sent < most => self.send_commit(now),
            Waiting::Checkpoint { .. } | Waiting::Commit { .. } => {
                // Nobody answers. I stop asking; the lease runs out on its own.
                self.log(Event::CommitAbandoned { job, token });
                self.stand_down(now);
            }
            _ => {}
        }
    }

    fn commit_answered(&mut self, now: Nanos, job: JobId, token: Token, accepted: bool) {
        let Some(a) = self.held.as_ref() else {
            return;
        };
        if (a.job, a.token) != (job, token) {
            return;
        }
        let outcome = match a.waiting {
            Waiting::Commit { outcome, .. } => Some(outcome),
            _ => None,
        };
        match (accepted, outcome) {
            // Only now may I say it worked (P13).
            (true, Some(Outcome::Success { .. })) => self.log(Event::SuccessClaimed { job, token }),
            (true, Some(Outcome::Failure { .. })) => {
                self.log(Event::FailureAcknowledged { job, token })
            }
            // An acceptance of a commit I never sent: not mine to believe.
            (true, None) => return,
            // Refused: my result stays in my journal, for whoever investigates (P8).
            (false, _) => self.log(Event::CommitRefused { job, token }),
        }
        self.stand_down(now);
    }

    fn stage_over(&mut self, now: Nanos) {
        let Some(a) = self.held.as_mut() else {
            return;
        };
        if a.committing() {
            return;
        }
        // Progress, not ownership (P14): a healthy lease does not excuse a stuck stage.
        a.waiting = Waiting::Nothing;
        let (job, token) = (a.job, a.token);
        self.log(Event::StageDeadlineExceeded { job, token });
        self.commit(
            now,
            Outcome::Failure {
                error: ErrorCode::StageDeadline,
                retryable: true,
            },
        );
    }
}

impl WorkerMachine for Worker {
    fn start(&mut self, now: Nanos) {
        self.alarms.poll = Some(now + self.cfg.start_delay_ns);
    }

    fn crash(&mut self) {
        // Everything but the request counter is gone.
        self.held = None;
        self.claims.clear();
        self.alarms = Alarms::default();
        self.out.clear();
    }

    fn handle_message(&mut self, now: Nanos, msg: Msg) {
        match msg {
            Msg::ClaimGranted {
                req,
                job,
                token,
                lease_ns,
                class,
                checkpoint,
            } => {
                let grant = Grant {
                    req,
                    job,
                    token,
                    lease: lease_ns,
                    class,
                    checkpoint,
                };
                self.granted(now, grant)
            }
            Msg::ClaimEmpty { req } => self.claims.retain(|(r, _)| *r != req),
            Msg::HeartbeatOk {
                req, job, token, ..
            } => self.heartbeat_ok(now, req, job, token),
            Msg::HeartbeatRejected { job, token, .. } => {
                // While my commit is out, its answer decides: a heartbeat it overtook is
                // refused because the job already ended.
                let mine = self
                    .held
                    .as_ref()
                    .is_some_and(|a| (a.job, a.token) == (job, token) && !a.committing());
                if mine {
                    self.lost(now);
                }
            }
            Msg::ToolResponse { req, answer, .. } => self.tool_answered(now, req, answer),
            Msg::EffectAck {
                job, key, outcome, ..
            } => self.effect_answered(now, job, key, outcome),
            Msg::EffectStatusReply {
                req, key, status, ..
            } => self.verified(now, req, key, status),
            Msg::CheckpointAck {
                req,
                job,
                token,
                saved,
            } => self.checkpoint_answered(now, req, job, token, saved),
            Msg::CommitAccepted { job, token, .. } => self.commit_answered(now, job, token, true),
            Msg::CommitRejected { job, token, .. } => self.commit_answered(now, job, token, false),
            // Requests are for servers, not for me.
            Msg::Claim { .. }
            | Msg::Heartbeat { .. }
            | Msg::Commit { .. }
            | Msg::ToolRequest { .. }
            | Msg::Effect { .. }
            | Msg::Operator { .. }
            | Msg::OperatorDone { .. }
            | Msg::Checkpoint { .. }
            | Msg::EffectStatus { .. }
            | Msg::ToolStatus { .. } => {}
        }
    }

    fn handle_timeout(&mut self, now: Nanos) {
        // Jeopardy first: whatever else is due must see it.
        if due(&mut self.alarms.quiet, now) {
            self.go_quiet();
        }
        if due(&mut self.alarms.beat, now) {
            self.heartbeat(now);
        }
        if due(&mut self.alarms.patience, now) {
            self.out_of_patience(now);
        }
        if due(&mut self.alarms.stage, now) {
            self.stage_over(now);
        }
        if due(&mut self.alarms.resend, now) {
            self.resend(now);
        }
        if due(&mut self.alarms.poll, now) {
            self.ask_for_work(now);
        }
    }

    fn poll_output(&mut self) -> Option<Output> {
        self.out.pop_front()
    }

    fn poll_timeout(&self) -> Option<Nanos> {
        self.alarms.earliest()
    }

    fn is_busy(&self) -> bool {
        self.held.is_some()
    }

    fn observe_wall(&mut self, wall: Nanos) {
        self.wall = wall;
    }

    fn tool_in_flight(&self) -> Option<u64> {
        match self.held.as_ref()?.waiting {
            Waiting::Tool { req, .. } => Some(req),
            _ => None,
        }
    }
}
