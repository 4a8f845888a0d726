//! The worker: claims a job, heartbeats on its own timer whatever the tool call is doing (P5),
//! runs the job's plan (effects carrying the fence and a stable key, tool calls with a bounded
//! client timeout), and asks for a conditional commit (P8).
//!
//! It measures its conservative local deadline from the *send* time of the last acknowledged
//! renewal, minus a drift allowance and a stop margin (P6, Gray and Cheriton). Past it, it is in
//! jeopardy (P13): it starts no effect and claims no success. "No row" means lost (P12 a).
//! It never reads a clock: every input carries its local `now`.

use crate::outbox::{Outbox, KEPT_MAX};
use crate::timing::holder_deadline;
use crate::types::*;
use crate::variant::Switches;
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// One step of a job's plan.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "step", rename_all = "snake_case")]
pub enum Step {
    /// A side effect on the job's entity at a receiver, under a stable key for `op` (P10).
    Effect {
        /// The operation's meaning.
        op: OpId,
        /// Which receiver.
        receiver: u8,
    },
    /// A call to the tool; the next step waits for its answer.
    Tool,
    /// The end of a stage (P17): the holder persists its progress on the coordinator (under
    /// its lease) and waits for the answer; the next stage gets a fresh lease.
    Checkpoint,
}

/// What a worker knows about each job class: the steps of its plan.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Plan {
    /// The steps, in order.
    pub steps: Vec<Step>,
}

/// A worker's configuration (its durable identity and its timing).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkerConfig {
    /// The logical name it claims under.
    pub name: WorkerName,
    /// Heartbeat period H on the worker's own clock.
    pub heartbeat_ns: Nanos,
    /// The clock rate error bound rho the worker assumes, in parts per million.
    pub drift_ppm_max: u32,
    /// Stop margin G: the time the worker needs to stop producing effects.
    pub stop_margin_ns: Nanos,
    /// Client timeout of a tool call.
    pub tool_timeout_ns: Nanos,
    /// Stage deadline (P14): the longest an attempt may work on its plan, however alive its
    /// heartbeat is. A progress control, separate from the lease.
    pub stage_deadline_ns: Nanos,
    /// Period of claim polling while idle.
    pub claim_poll_ns: Nanos,
    /// Period of commit retries while the answer is missing.
    pub commit_retry_ns: Nanos,
    /// Commit requests sent before the worker gives up asking.
    pub commit_attempts_max: u32,
    /// Delay from start (or restart) to the first claim.
    pub start_delay_ns: Nanos,
    /// The plan of each class, indexed by class id.
    pub plans: Vec<Plan>,
}

/// The worker's named timers (quinn style: a small table, the earliest is the next wake). The
/// tool timeout also bounds a status query, which never overlaps a tool call. Due timers run in
/// the order deadline, heartbeat, tool timeout, stage, commit retry, poll (`handle_timeout`).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Timer {
    Deadline = 0,
    Heartbeat = 1,
    ToolTimeout = 2,
    CommitRetry = 3,
    Poll = 4,
    Stage = 5,
}

/// What an unarmed timer's slot holds: the latest time there is.
const UNARMED: Nanos = Nanos::MAX;

/// Bound on requests remembered for matching replies.
const INFLIGHT_MAX: usize = 8;

/// Outputs the worker's queue has room for from the start.
const OUT_ROOM: usize = 8;

#[derive(Clone, Debug)]
struct CommitState {
    outcome: Outcome,
    attempts: u32,
}

/// One attempt at one job, from grant to commit or loss.
#[derive(Clone, Debug)]
struct Attempt {
    job: JobId,
    token: Token,
    class: ClassId,
    lease_ns: Nanos,
    /// Local send time of the last acknowledged claim or renewal.
    confirmed_send: Nanos,
    deadline: Nanos,
    jeopardy: bool,
    next_step: usize,
    tool: Option<u64>,
    commit: Option<CommitState>,
    result: u64,
    /// Effects attempted under this lease (P2, reported with each heartbeat).
    effects_attempted: u16,
    /// Resumed from a checkpoint: each effect of the interrupted stage is checked first (P17).
    reconcile: bool,
    /// A status query in flight: (request, key, receiver, tries, before the step or at the end).
    status_query: Option<StatusQuery>,
    /// A checkpoint in flight: (request, step, send time, tries).
    checkpoint: Option<(u64, u8, Nanos, u32)>,
    /// Status queries about the current tool call (P12 c).
    tool_queries: u32,
    /// At the end of the plan, waiting (bounded) for the answers of effects still unanswered.
    awaiting_acks: bool,
    /// Rounds of end-of-plan reconciliation so far (bounded, then a human).
    reconcile_rounds: u32,
}

/// A status query to a receiver about one key.
#[derive(Copy, Clone, Debug)]
struct StatusQuery {
    req: u64,
    key: IdemKey,
    receiver: u8,
    tries: u32,
    /// Before performing a step (P17 resume) rather than before declaring the job done.
    before_step: bool,
}

/// Bound on status queries about one thing before the worker gives up and asks a human.
const STATUS_TRIES_MAX: u32 = 3;

#[derive(Clone, Debug)]
enum State {
    Idle,
    Holding(Attempt),
}

/// The worker state machine.
#[derive(Clone, Debug)]
pub struct Worker {
    cfg: WorkerConfig,
    /// Durable: request numbers never repeat across restarts, so a reply meant for the previous
    /// process cannot be taken for one of ours.
    next_req: u64,
    state: State,
    /// The requests in flight whose answer dates a lease, (request, local send time): the claims
    /// while idle, the heartbeats while holding. Emptied whenever the worker goes idle and at
    /// each grant, so the two never mix; one queue, whose storage lasts the whole run.
    inflight: VecDeque<(u64, Nanos)>,
    /// While holding: effects sent whose answer has not come, reconciled before the job is
    /// declared done. Emptied at each grant.
    unacked: Vec<(IdemKey, u8)>,
    /// Each timer's time, `UNARMED` when it is not armed (see `armed`).
    timers: [Nanos; 6],
    /// Which timers are armed, one bit per `Timer`. A timer may be armed at `UNARMED`'s value
    /// too: the bits, not the times, say which are armed.
    armed: u8,
    /// The wall clock's last reading, told by the host before each input. Sent along with
    /// requests as the client's time; the reference protocol never decides anything by it.
    wall: Nanos,
    switches: Switches,
    out: Outbox,
}

/// V7: how long before its lease ends the last-second renewer renews.
pub const LAST_SECOND_NS: Nanos = SECOND_NS;

impl Worker {
    /// A worker that has not started yet.
    pub fn new(cfg: WorkerConfig, switches: Switches) -> Self {
        Worker {
            cfg,
            next_req: 1,
            state: State::Idle,
            inflight: VecDeque::with_capacity(INFLIGHT_MAX),
            unacked: Vec::new(),
            timers: [UNARMED; 6],
            armed: 0,
            wall: 0,
            switches,
            // Room for the outputs of one busy input (a grant starting a plan), so that the
            // queue does not grow again during the run.
            out: Outbox::with_capacity(OUT_ROOM),
        }
    }

    /// Makes this worker what [`Worker::new`] makes of `cfg` and `switches`, keeping the storage
    /// its lists grew: a host that runs many runs on one thread builds no worker again.
    pub fn rebuild(&mut self, cfg: &WorkerConfig, switches: Switches) {
        // Every field is named, so that a field added later cannot be forgotten here.
        let Worker {
            cfg: own_cfg,
            next_req,
            state,
            inflight,
            unacked,
            timers,
            armed,
            wall,
            switches: own_switches,
            out,
        } = self;
        // Field by field, so that the plans' lists keep their storage (a derived `clone_from`
        // would clone the whole configuration anew).
        let WorkerConfig {
            name,
            heartbeat_ns,
            drift_ppm_max,
            stop_margin_ns,
            tool_timeout_ns,
            stage_deadline_ns,
            claim_poll_ns,
            commit_retry_ns,
            commit_attempts_max,
            start_delay_ns,
            plans,
        } = own_cfg;
        *name = cfg.name;
        *heartbeat_ns = cfg.heartbeat_ns;
        *drift_ppm_max = cfg.drift_ppm_max;
        *stop_margin_ns = cfg.stop_margin_ns;
        *tool_timeout_ns = cfg.tool_timeout_ns;
        *stage_deadline_ns = cfg.stage_deadline_ns;
        *claim_poll_ns = cfg.claim_poll_ns;
        *commit_retry_ns = cfg.commit_retry_ns;
        *commit_attempts_max = cfg.commit_attempts_max;
        *start_delay_ns = cfg.start_delay_ns;
        plans.truncate(cfg.plans.len());
        for (mine, theirs) in plans.iter_mut().zip(&cfg.plans) {
            let Plan { steps } = mine;
            steps.clone_from(&theirs.steps);
        }
        let kept = plans.len();
        plans.extend_from_slice(&cfg.plans[kept..]);
        *next_req = 1;
        *state = State::Idle;
        inflight.clear();
        inflight.shrink_to(KEPT_MAX);
        unacked.clear();
        unacked.shrink_to(KEPT_MAX);
        *timers = [UNARMED; 6];
        *armed = 0;
        *wall = 0;
        *own_switches = switches;
        out.clear_within_bound();
    }

    /// Tells the worker its wall clock's reading (call before each input).
    pub fn observe_wall(&mut self, wall: Nanos) {
        self.wall = wall;
    }

    /// The configuration.
    pub fn config(&self) -> &WorkerConfig {
        &self.cfg
    }

    /// The job and token currently held, if any, and whether the worker is in jeopardy.
    pub fn holding(&self) -> Option<(JobId, Token, bool)> {
        match &self.state {
            State::Holding(a) => Some((a.job, a.token, a.jeopardy)),
            State::Idle => None,
        }
    }

    /// The external request this worker waits for an answer to, if any. An async shell cancels
    /// its tool call when this no longer names the call (the lease was lost, the call timed
    /// out, the stage ended).
    pub fn tool_in_flight(&self) -> Option<u64> {
        match &self.state {
            State::Holding(a) => a.tool,
            State::Idle => None,
        }
    }

    /// The next output, if any.
    pub fn poll_output(&mut self) -> Option<Output> {
        self.out.pop()
    }

    /// The earliest armed timer.
    pub fn poll_timeout(&self) -> Option<Nanos> {
        // The host asks after every input: a minimum over six plain numbers, as an unarmed
        // slot holds the largest time and so never wins over an armed one.
        if self.armed == 0 {
            return None;
        }
        let t = &self.timers;
        Some(t[0].min(t[1]).min(t[2].min(t[3])).min(t[4].min(t[5])))
    }

    /// Starts (or restarts) the process: the first claim after the start delay.
    pub fn start(&mut self, now: Nanos) {
        self.set(Timer::Poll, now + self.cfg.start_delay_ns);
    }

    /// A crash: every volatile fact is gone. The durable request counter survives.
    pub fn crash(&mut self) {
        self.state = State::Idle;
        self.inflight.clear();
        self.disarm_all();
        self.out.clear();
    }

    fn set(&mut self, t: Timer, at: Nanos) {
        self.timers[t as usize] = at;
        self.armed |= 1 << t as u8;
    }

    fn clear(&mut self, t: Timer) {
        self.timers[t as usize] = UNARMED;
        self.armed &= !(1 << t as u8);
    }

    fn is_armed(&self, t: Timer) -> bool {
        self.armed & (1 << t as u8) != 0
    }

    fn disarm_all(&mut self) {
        self.timers = [UNARMED; 6];
        self.armed = 0;
    }

    fn req(&mut self) -> u64 {
        let r = self.next_req;
        self.next_req += 1;
        r
    }

    fn send(&mut self, to: Peer, msg: Msg) {
        self.out.push(Output::Send { to, msg });
    }

    fn journal(&mut self, e: Event) {
        self.out.push(Output::Journal(e));
    }

    /// Handles every due timer. A spurious call is a no-op.
    pub fn handle_timeout(&mut self, now: Nanos) {
        // In the order of `Timer`'s doc; each is looked at after the ones before it have run,
        // so a handler that sets or clears a later timer is seen.
        if self.take_due(Timer::Deadline, now) {
            self.enter_jeopardy();
        }
        if self.take_due(Timer::Heartbeat, now) {
            self.on_heartbeat_timer(now);
        }
        if self.take_due(Timer::ToolTimeout, now) {
            self.on_tool_timeout(now);
        }
        if self.take_due(Timer::Stage, now) {
            self.on_stage_deadline(now);
        }
        if self.take_due(Timer::CommitRetry, now) {
            self.on_commit_retry(now);
        }
        if self.take_due(Timer::Poll, now) {
            self.on_poll(now);
        }
    }

    /// Disarms `t` if it is due at `now`; whether it was.
    #[inline]
    fn take_due(&mut self, t: Timer, now: Nanos) -> bool {
        let due = self.is_armed(t) && self.timers[t as usize] <= now;
        if due {
            self.clear(t);
        }
        due
    }

    /// Handles a reply from the coordinator, the tool or a receiver.
    #[inline]
    pub fn handle_message(&mut self, now: Nanos, msg: Msg) {
        // Most answers to an idle worker's polls are "no job", which changes nothing: decided
        // here, small enough for the host's call to see it, before the full handler.
        if let Msg::ClaimEmpty { .. } = msg {
            return;
        }
        self.handle_reply(now, msg)
    }

    /// [`Worker::handle_message`] for every other message.
    // Long: one arm per message kind, the short answers inline, the longer ones `on_*` calls.
    #[inline(never)]
    fn handle_reply(&mut self, now: Nanos, msg: Msg) {
        match msg {
            Msg::ClaimGranted {
                req,
                job,
                token,
                lease_ns,
                class,
                checkpoint,
            } => self.on_granted(now, req, (job, token), lease_ns, class, checkpoint),
            Msg::HeartbeatOk {
                req, job, token, ..
            } => self.on_heartbeat_ok(now, req, job, token),
            Msg::HeartbeatRejected { job, token, .. } => {
                let committing = matches!(&self.state, State::Holding(a) if a.commit.is_some());
                // While its conditional commit is out, the commit's answer is what decides: a
                // heartbeat overtaken by that commit is refused because the job already ended.
                if self.holds(job, token) && !committing {
                    // P12 a: "no row" is not "retry", it is "you are not the owner".
                    self.journal(Event::HeartbeatLost { job, token });
                    self.go_idle(now);
                }
            }
            Msg::ToolResponse { req, answer, .. } => self.on_tool_answer(now, req, answer),
            Msg::EffectAck {
                job, key, outcome, ..
            } => {
                // The receiver's answer is recorded; ownership is judged by the coordinator only.
                let State::Holding(a) = &mut self.state else {
                    return;
                };
                if a.job != job {
                    return;
                }
                let token = a.token;
                self.unacked.retain(|(k, _)| *k != key);
                let committing = a.commit.is_some();
                self.journal(Event::EffectAnswered {
                    job,
                    token,
                    key,
                    outcome,
                });
                if outcome == EffectOutcome::Unauthorized && !committing {
                    // P16: the policy refused a concrete effect; the job cannot finish as planned.
                    self.start_commit(
                        now,
                        Outcome::Failure {
                            error: ErrorCode::Unauthorized,
                            retryable: false,
                        },
                    );
                } else {
                    self.advance(now);
                }
            }
            Msg::EffectStatusReply {
                req, key, status, ..
            } => self.on_status(now, req, key, status),
            Msg::CheckpointAck {
                req,
                job,
                token,
                saved,
                ..
            } => self.on_checkpoint_ack(now, req, job, token, saved),
            Msg::CommitAccepted { job, token, .. } => {
                if let State::Holding(a) = &self.state {
                    if a.job == job && a.token == token {
                        match a.commit {
                            // P13: success is claimed only once the coordinator accepted it.
                            Some(CommitState {
                                outcome: Outcome::Success { .. },
                                ..
                            }) => self.journal(Event::SuccessClaimed { job, token }),
                            Some(_) => self.journal(Event::FailureAcknowledged { job, token }),
                            // An acceptance of a commit this attempt never sent: ignore it.
                            None => return,
                        }
                        self.go_idle(now);
                    }
                }
            }
            Msg::CommitRejected { job, token, .. } => {
                if self.holds(job, token) {
                    // P8: the result is kept for investigation, never published.
                    self.journal(Event::CommitRefused { job, token });
                    self.go_idle(now);
                }
            }
            Msg::ClaimEmpty { .. } => {}
            // Requests are not addressed to workers.
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

    fn holds(&self, job: JobId, token: Token) -> bool {
        matches!(&self.state, State::Holding(a) if a.job == job && a.token == token)
    }

    fn go_idle(&mut self, now: Nanos) {
        self.state = State::Idle;
        self.inflight.clear();
        self.disarm_all();
        self.set(Timer::Poll, now + self.cfg.claim_poll_ns);
    }

    fn on_poll(&mut self, now: Nanos) {
        let req = self.req();
        let State::Idle = self.state else {
            return;
        };
        if self.inflight.len() == INFLIGHT_MAX {
            self.inflight.pop_front();
        }
        self.inflight.push_back((req, now));
        let worker = self.cfg.name;
        let client_now = self.wall;
        self.send(
            Peer::Coordinator,
            Msg::Claim {
                req,
                worker,
                client_now,
            },
        );
        self.set(Timer::Poll, now + self.cfg.claim_poll_ns);
    }

    /// A grant of (job, token): the attempt starts, with its deadline, timers and journal line.
    fn on_granted(
        &mut self,
        now: Nanos,
        req: u64,
        (job, token): (JobId, Token),
        lease_ns: Nanos,
        class: ClassId,
        checkpoint: Option<u8>,
    ) {
        let State::Idle = self.state else {
            // Already busy: the grant is left to expire on the coordinator.
            return;
        };
        let Some(&(_, sent_at)) = self.inflight.iter().find(|(r, _)| *r == req) else {
            return;
        };
        if (class.0 as usize) >= self.cfg.plans.len() {
            // A class this worker cannot run: let the lease expire.
            return;
        }
        // The deadline runs from the claim's send time, never from the reply's arrival.
        let deadline = holder_deadline(
            sent_at,
            lease_ns,
            self.cfg.drift_ppm_max,
            self.cfg.stop_margin_ns,
        );
        self.inflight.clear();
        self.unacked.clear();
        self.state = State::Holding(Attempt {
            job,
            token,
            class,
            lease_ns,
            confirmed_send: sent_at,
            deadline,
            jeopardy: false,
            // P17: resume after the last persisted stage.
            next_step: checkpoint.map_or(0, |c| c as usize + 1),
            tool: None,
            commit: None,
            result: 0,
            effects_attempted: 0,
            reconcile: checkpoint.is_some(),
            status_query: None,
            checkpoint: None,
            tool_queries: 0,
            awaiting_acks: false,
            reconcile_rounds: 0,
        });
        self.clear(Timer::Poll);
        self.journal(Event::JobClaimed {
            job,
            token,
            deadline,
        });
        self.set(Timer::Deadline, deadline);
        // P5: the heartbeat runs on its own timer, apart from whatever the steps are doing.
        let first = self.first_heartbeat(now, sent_at, lease_ns);
        self.set(Timer::Heartbeat, first);
        // P14: progress is bounded separately from ownership.
        self.set(Timer::Stage, now + self.cfg.stage_deadline_ns);
        if now >= deadline {
            self.enter_jeopardy();
        }
        self.advance(now);
    }

    /// When the first heartbeat of a lease granted for `lease_ns` to a claim sent at `sent_at`
    /// is due: a period from now, or, in V7, one second before the lease ends.
    fn first_heartbeat(&self, now: Nanos, sent_at: Nanos, lease_ns: Nanos) -> Nanos {
        if self.switches.renew_at_last_second {
            (sent_at + lease_ns).saturating_sub(LAST_SECOND_NS).max(now)
        } else {
            now + self.cfg.heartbeat_ns
        }
    }

    fn enter_jeopardy(&mut self) {
        if self.switches.no_jeopardy {
            // V6: optimism instead of quiescence.
            return;
        }
        let State::Holding(a) = &mut self.state else {
            return;
        };
        if a.jeopardy {
            return;
        }
        a.jeopardy = true;
        let e = Event::JeopardyEntered {
            job: a.job,
            token: a.token,
            last_confirmed: a.confirmed_send,
            request: a.tool,
        };
        self.journal(e);
    }

    fn on_heartbeat_timer(&mut self, now: Nanos) {
        let req = self.req();
        let worker = self.cfg.name;
        let State::Holding(a) = &mut self.state else {
            return;
        };
        if a.commit.is_some() {
            return;
        }
        if self.switches.heartbeat_on_tool_thread && a.tool.is_some() {
            // V8: the thread that would send it is blocked in the tool call; it catches up when
            // the call returns.
            return;
        }
        if self.inflight.len() == INFLIGHT_MAX {
            self.inflight.pop_front();
        }
        self.inflight.push_back((req, now));
        let msg = Msg::Heartbeat {
            req,
            job: a.job,
            worker,
            token: a.token,
            client_now: self.wall,
            in_jeopardy: a.jeopardy,
            effects_attempted: a.effects_attempted,
        };
        let next = if self.switches.renew_at_last_second {
            // V7: "one second before expiry", as the lease looks from here.
            (now + a.lease_ns)
                .saturating_sub(LAST_SECOND_NS)
                .max(now + 1)
        } else {
            now + self.cfg.heartbeat_ns
        };
        self.send(Peer::Coordinator, msg);
        self.set(Timer::Heartbeat, next);
    }

    fn on_heartbeat_ok(&mut self, now: Nanos, req: u64, job: JobId, token: Token) {
        let (drift, margin) = (self.cfg.drift_ppm_max, self.cfg.stop_margin_ns);
        let State::Holding(a) = &mut self.state else {
            return;
        };
        if a.job != job || a.token != token {
            return;
        }
        let Some(pos) = self.inflight.iter().position(|(r, _)| *r == req) else {
            return;
        };
        let (_, sent_at) = self.inflight[pos];
        // Older requests are answered or lost; newer ones may still be answered.
        self.inflight.drain(..=pos);
        if sent_at <= a.confirmed_send {
            return;
        }
        a.confirmed_send = sent_at;
        let lease_ns = a.lease_ns;
        a.deadline = holder_deadline(sent_at, a.lease_ns, drift, margin);
        let (deadline, was_jeopardy) = (a.deadline, a.jeopardy);
        let leave = was_jeopardy && now < deadline;
        if leave {
            a.jeopardy = false;
        }
        if self.switches.renew_at_last_second {
            self.set(
                Timer::Heartbeat,
                (sent_at + lease_ns).saturating_sub(LAST_SECOND_NS).max(now),
            );
        }
        self.journal(Event::HeartbeatOk {
            job,
            token,
            deadline,
        });
        if now < deadline {
            self.set(Timer::Deadline, deadline);
        }
        if leave {
            self.journal(Event::JeopardyExited { job, token });
            self.advance(now);
        }
    }

    fn on_tool_answer(&mut self, now: Nanos, req: u64, answer: ToolAnswer) {
        let State::Holding(a) = &mut self.state else {
            return;
        };
        if a.tool != Some(req) {
            // A late answer to a call this attempt no longer waits for.
            return;
        }
        a.tool = None;
        let (job, token) = (a.job, a.token);
        self.clear(Timer::ToolTimeout);
        if self.switches.heartbeat_on_tool_thread && !self.is_armed(Timer::Heartbeat) {
            self.set(Timer::Heartbeat, now);
        }
        match answer {
            ToolAnswer::Success { result } => {
                self.journal(Event::ToolAnswered {
                    job,
                    token,
                    request: req,
                    success: true,
                });
                if let State::Holding(a) = &mut self.state {
                    a.result = a.result.rotate_left(17) ^ result;
                    a.next_step += 1;
                }
                self.advance(now);
            }
            ToolAnswer::Failure { transient } => {
                self.journal(Event::ToolAnswered {
                    job,
                    token,
                    request: req,
                    success: false,
                });
                // P11: a validation error is never retried; a transient failure is.
                self.start_commit(
                    now,
                    Outcome::Failure {
                        error: if transient {
                            ErrorCode::ToolFailed
                        } else {
                            ErrorCode::Validation
                        },
                        retryable: transient,
                    },
                );
            }
            ToolAnswer::Running => {
                // A status query's answer: still working; wait once more.
                if let State::Holding(a) = &mut self.state {
                    a.tool = Some(req);
                }
                self.set(Timer::ToolTimeout, now + self.cfg.tool_timeout_ns);
            }
            ToolAnswer::NoRecord => self.resend_tool_request(now, req, (job, token)),
        }
    }

    /// The tool never saw the call: send it again under the same request (and so the same
    /// idempotency) once (P12 c).
    fn resend_tool_request(&mut self, now: Nanos, req: u64, (job, token): (JobId, Token)) {
        let step = match &self.state {
            State::Holding(a) => a.next_step as u8,
            State::Idle => return,
        };
        if let State::Holding(a) = &mut self.state {
            a.tool = Some(req);
        }
        self.send(
            Peer::Tool,
            Msg::ToolRequest {
                req,
                job,
                token,
                step,
            },
        );
        self.set(Timer::ToolTimeout, now + self.cfg.tool_timeout_ns);
    }

    /// A receiver answered a status query (P12 c, P17).
    fn on_status(&mut self, now: Nanos, req: u64, key: IdemKey, status: EffectStatus) {
        let State::Holding(a) = &mut self.state else {
            return;
        };
        let Some(q) = a.status_query.filter(|q| q.req == req && q.key == key) else {
            return;
        };
        if a.commit.is_some() {
            // The attempt already decided how it ends.
            a.status_query = None;
            return;
        }
        a.status_query = None;
        let (job, token) = (a.job, a.token);
        self.clear(Timer::ToolTimeout);
        self.journal(Event::EffectReconciled {
            job,
            token,
            key,
            status,
        });
        match status {
            EffectStatus::Applied => {
                if let State::Holding(a) = &mut self.state {
                    if q.before_step {
                        // The predecessor did it: skip the step.
                        a.next_step += 1;
                    } else {
                        self.unacked.retain(|(k, _)| *k != key);
                    }
                }
                self.advance(now);
            }
            EffectStatus::NotApplied => self.redo_effect(now, q, key, (job, token)),
            EffectStatus::Unknown => self.human_review(now, key),
        }
    }

    /// An effect a status query found not applied: done (again) under the same key, unless the
    /// holder is in jeopardy, when the query waits for the lease to be confirmed.
    fn redo_effect(
        &mut self,
        now: Nanos,
        q: StatusQuery,
        key: IdemKey,
        (job, token): (JobId, Token),
    ) {
        let in_jeopardy = match &self.state {
            State::Holding(a) => a.jeopardy || now >= a.deadline,
            State::Idle => true,
        };
        if in_jeopardy && !self.switches.no_jeopardy {
            // P13: no effect now; the step (or the end-of-plan check) is asked again
            // once the lease is confirmed.
            self.enter_jeopardy();
            return;
        }
        let fence = token;
        let entity = EntityId(job.0);
        let req = self.req();
        if let State::Holding(a) = &mut self.state {
            if q.before_step {
                a.next_step += 1;
                self.unacked.push((key, q.receiver));
            }
            a.effects_attempted = a.effects_attempted.saturating_add(1);
        }
        // Do it (again) under the same key: the key makes it safe (P10).
        self.journal(Event::EffectStarted {
            job,
            token,
            receiver: q.receiver,
            entity,
            key,
            in_jeopardy: false,
        });
        self.send(
            Peer::Receiver(q.receiver),
            Msg::Effect {
                req,
                job,
                entity,
                key,
                fence,
            },
        );
        self.advance(now);
    }

    /// P17: a partial effect that cannot be reconciled goes to a human.
    fn human_review(&mut self, now: Nanos, key: IdemKey) {
        let State::Holding(a) = &self.state else {
            return;
        };
        let (job, token) = (a.job, a.token);
        self.journal(Event::HumanReviewRequested { job, token, key });
        self.start_commit(
            now,
            Outcome::Failure {
                error: ErrorCode::NeedsHumanReview,
                retryable: false,
            },
        );
    }

    fn on_checkpoint_ack(&mut self, now: Nanos, req: u64, job: JobId, token: Token, saved: bool) {
        let (drift, margin) = (self.cfg.drift_ppm_max, self.cfg.stop_margin_ns);
        let State::Holding(a) = &mut self.state else {
            return;
        };
        if a.job != job || a.token != token {
            return;
        }
        let Some((r, _, sent_at, _)) = a.checkpoint else {
            return;
        };
        if r != req {
            return;
        }
        a.checkpoint = None;
        self.clear(Timer::CommitRetry);
        if !saved {
            // Refused: the lease is gone (P12 a).
            self.journal(Event::HeartbeatLost { job, token });
            self.go_idle(now);
            return;
        }
        // The checkpoint renewed the lease from its send time, like a heartbeat; leaving
        // jeopardy by it is journaled as by a heartbeat.
        let mut left = false;
        if let State::Holding(a) = &mut self.state {
            a.next_step += 1;
            a.reconcile = false;
            if sent_at > a.confirmed_send {
                a.confirmed_send = sent_at;
                a.deadline = holder_deadline(sent_at, a.lease_ns, drift, margin);
                let deadline = a.deadline;
                if now < deadline {
                    left = std::mem::replace(&mut a.jeopardy, false);
                    self.set(Timer::Deadline, deadline);
                }
            }
        }
        if left {
            self.journal(Event::JeopardyExited { job, token });
        }
        self.advance(now);
    }

    fn on_stage_deadline(&mut self, now: Nanos) {
        let State::Holding(a) = &mut self.state else {
            return;
        };
        if a.commit.is_some() {
            return;
        }
        // Cancel the tool call if one is running; its answer will be ignored.
        a.tool = None;
        let (job, token) = (a.job, a.token);
        self.clear(Timer::ToolTimeout);
        self.journal(Event::StageDeadlineExceeded { job, token });
        self.start_commit(
            now,
            Outcome::Failure {
                error: ErrorCode::StageDeadline,
                retryable: true,
            },
        );
    }

    fn on_tool_timeout(&mut self, now: Nanos) {
        let State::Holding(a) = &mut self.state else {
            return;
        };
        if a.awaiting_acks && a.status_query.is_none() && a.tool.is_none() {
            a.awaiting_acks = false;
            a.reconcile_rounds += 1;
            let Some(&(key, receiver)) = self.unacked.first() else {
                self.advance(now);
                return;
            };
            if a.reconcile_rounds > STATUS_TRIES_MAX {
                self.human_review(now, key);
                return;
            }
            self.query_status(now, key, receiver, 0, false);
            return;
        }
        if let Some(q) = a.status_query {
            // A receiver did not answer a status query: ask again, then a human.
            a.status_query = None;
            if q.tries + 1 >= STATUS_TRIES_MAX {
                self.human_review(now, q.key);
                return;
            }
            self.query_status(now, q.key, q.receiver, q.tries + 1, q.before_step);
            return;
        }
        let Some(request) = a.tool.take() else {
            return;
        };
        let (job, token) = (a.job, a.token);
        if a.tool_queries == 0 {
            // P12 c: the outcome is unknown; ask the tool before anything else.
            a.tool_queries += 1;
            a.tool = Some(request);
            let step = a.next_step as u8;
            let req = self.req();
            self.journal(Event::ToolStatusQueried {
                job,
                token,
                request,
            });
            self.send(
                Peer::Tool,
                Msg::ToolStatus {
                    req,
                    job,
                    request,
                    step,
                },
            );
            self.set(Timer::ToolTimeout, now + self.cfg.tool_timeout_ns);
            return;
        }
        self.journal(Event::ToolTimedOut {
            job,
            token,
            request,
        });
        // P12 c: the tool's outcome is unknown; report a retryable failure so that the next
        // attempt repeats the work under the same stable keys.
        self.start_commit(
            now,
            Outcome::Failure {
                error: ErrorCode::ToolTimeout,
                retryable: true,
            },
        );
    }

    /// Runs the plan forward from the next step, as far as it can go without waiting.
    // Long: the plan's bounded loop, one arm per step kind, each sending its step's message.
    fn advance(&mut self, now: Nanos) {
        // Bounded by the plan's length: each turn either consumes a step or returns.
        for _ in 0..=self.plan_len() {
            let State::Holding(a) = &mut self.state else {
                return;
            };
            if a.tool.is_some()
                || a.commit.is_some()
                || a.status_query.is_some()
                || a.checkpoint.is_some()
            {
                return;
            }
            let steps = &self.cfg.plans[a.class.0 as usize].steps;
            let Some(&step) = steps.get(a.next_step) else {
                // P17: before declaring the job done, every effect must be answered; one whose
                // answer does not come within the client timeout has an unknown outcome
                // (P12 c) and is reconciled by a status query.
                if !self.unacked.is_empty() {
                    if !a.awaiting_acks {
                        a.awaiting_acks = true;
                        self.set(Timer::ToolTimeout, now + self.cfg.tool_timeout_ns);
                    }
                    return;
                }
                a.awaiting_acks = false;
                let result = a.result;
                self.start_commit(now, Outcome::Success { result });
                return;
            };
            if now >= a.deadline {
                // The deadline timer may not have fired yet at this very instant.
                self.enter_jeopardy();
            }
            let State::Holding(a) = &mut self.state else {
                return;
            };
            if a.jeopardy {
                // P13: quiescence, not optimism. Wait for a renewal or for the loss.
                return;
            }
            let (job, token) = (a.job, a.token);
            match step {
                Step::Effect { op, receiver } => {
                    // P10: a stable key per operation meaning; V4 salts it per attempt.
                    let salt = if self.switches.fresh_key_per_attempt {
                        token.0 as u32
                    } else {
                        0
                    };
                    let key = IdemKey { job, op, salt };
                    if a.reconcile {
                        // P17: resumed from a checkpoint; did the predecessor already do this?
                        self.query_status(now, key, receiver, 0, true);
                        return;
                    }
                    // Effects are pipelined: the next step does not wait for the receiver.
                    a.next_step += 1;
                    self.unacked.push((key, receiver));
                    a.effects_attempted = a.effects_attempted.saturating_add(1);
                    let req = self.req();
                    let entity = EntityId(job.0);
                    self.journal(Event::EffectStarted {
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
                Step::Tool => {
                    let req = self.req();
                    let State::Holding(a) = &mut self.state else {
                        return;
                    };
                    // The step index is consumed when the answer arrives.
                    a.tool = Some(req);
                    a.tool_queries = 0;
                    let step = a.next_step as u8;
                    self.journal(Event::ToolRequestStarted {
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
                    self.set(Timer::ToolTimeout, now + self.cfg.tool_timeout_ns);
                    return;
                }
                Step::Checkpoint => {
                    let step = a.next_step as u8;
                    self.send_checkpoint(now, step, 0);
                    return;
                }
            }
        }
    }

    fn query_status(
        &mut self,
        now: Nanos,
        key: IdemKey,
        receiver: u8,
        tries: u32,
        before_step: bool,
    ) {
        let req = self.req();
        let State::Holding(a) = &mut self.state else {
            return;
        };
        a.status_query = Some(StatusQuery {
            req,
            key,
            receiver,
            tries,
            before_step,
        });
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
        self.set(Timer::ToolTimeout, now + self.cfg.tool_timeout_ns);
    }

    fn send_checkpoint(&mut self, now: Nanos, step: u8, tries: u32) {
        let req = self.req();
        let worker = self.cfg.name;
        let State::Holding(a) = &mut self.state else {
            return;
        };
        a.checkpoint = Some((req, step, now, tries));
        let (job, token) = (a.job, a.token);
        self.send(
            Peer::Coordinator,
            Msg::Checkpoint {
                req,
                job,
                worker,
                token,
                step,
            },
        );
        self.set(Timer::CommitRetry, now + self.cfg.commit_retry_ns);
    }

    fn plan_len(&self) -> usize {
        match &self.state {
            State::Holding(a) => self.cfg.plans[a.class.0 as usize].steps.len(),
            State::Idle => 0,
        }
    }

    /// On completion the heartbeat stops and the worker asks for its conditional commit
    /// (the article's loop: "stop heartbeat; commit only if the same token still owns the job").
    fn start_commit(&mut self, now: Nanos, outcome: Outcome) {
        let State::Holding(a) = &mut self.state else {
            return;
        };
        if a.commit.is_some() {
            // The first decision stands: a second, different commit of the same attempt would
            // be refused, and the worker would journal a refusal of an accepted result.
            return;
        }
        // A tool call still running is abandoned: its answer no longer changes the outcome.
        a.tool = None;
        self.clear(Timer::ToolTimeout);
        let State::Holding(a) = &mut self.state else {
            return;
        };
        a.commit = Some(CommitState {
            outcome,
            attempts: 0,
        });
        // The commit decides now: a checkpoint, a status query or a wait for answers still in
        // flight no longer matters (and must not take the commit's retry timer).
        a.checkpoint = None;
        a.status_query = None;
        a.awaiting_acks = false;
        self.clear(Timer::Heartbeat);
        self.clear(Timer::Stage);
        self.send_commit(now);
    }

    fn send_commit(&mut self, now: Nanos) {
        let req = self.req();
        let worker = self.cfg.name;
        let State::Holding(a) = &mut self.state else {
            return;
        };
        let Some(c) = a.commit.as_mut() else {
            return;
        };
        c.attempts += 1;
        let outcome = c.outcome;
        let (job, token) = (a.job, a.token);
        // A commit in jeopardy is still sent: it is conditional, so the coordinator, not the
        // holder, decides. The holder claims nothing until it is accepted.
        let in_jeopardy = a.jeopardy || now >= a.deadline;
        self.journal(Event::CommitSent {
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
                client_now: self.wall,
            },
        );
        self.set(Timer::CommitRetry, now + self.cfg.commit_retry_ns);
    }

    fn on_commit_retry(&mut self, now: Nanos) {
        let State::Holding(a) = &self.state else {
            return;
        };
        if let Some((_, step, _, tries)) = a.checkpoint {
            if tries + 1 >= self.cfg.commit_attempts_max {
                // Nobody answers: like an unanswered heartbeat, the deadline decides; stop
                // asking and wait in place.
                let (job, token) = (a.job, a.token);
                self.journal(Event::CommitAbandoned { job, token });
                self.go_idle(now);
                return;
            }
            self.send_checkpoint(now, step, tries + 1);
            return;
        }
        let Some(c) = &a.commit else {
            return;
        };
        if c.attempts >= self.cfg.commit_attempts_max {
            let (job, token) = (a.job, a.token);
            self.journal(Event::CommitAbandoned { job, token });
            self.go_idle(now);
            return;
        }
        self.send_commit(now);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const L: Nanos = 30 * SECOND_NS;
    const H: Nanos = 10 * SECOND_NS;

    fn worker(steps: Vec<Step>) -> Worker {
        Worker::new(
            WorkerConfig {
                name: WorkerName(1),
                heartbeat_ns: H,
                drift_ppm_max: 0,
                stop_margin_ns: SECOND_NS,
                tool_timeout_ns: 100 * SECOND_NS,
                stage_deadline_ns: 60 * SECOND_NS,
                claim_poll_ns: SECOND_NS,
                commit_retry_ns: SECOND_NS,
                commit_attempts_max: 3,
                start_delay_ns: 0,
                plans: vec![Plan { steps }],
            },
            Switches::default(),
        )
    }

    fn drain(w: &mut Worker) -> Vec<Output> {
        std::iter::from_fn(|| w.poll_output()).collect()
    }

    fn journal(outs: &[Output]) -> Vec<&'static str> {
        outs.iter()
            .filter_map(|o| match o {
                Output::Journal(e) => Some(e.name()),
                Output::Send { .. } => None,
            })
            .collect()
    }

    /// Starts, claims at local time 0 and gets the grant at `granted_at`.
    fn holding(steps: Vec<Step>, granted_at: Nanos) -> Worker {
        let mut w = worker(steps);
        w.start(0);
        w.handle_timeout(0);
        drain(&mut w);
        w.handle_message(
            granted_at,
            Msg::ClaimGranted {
                req: 1,
                job: JobId(0),
                token: Token(1),
                lease_ns: L,
                class: ClassId(0),
                checkpoint: None,
            },
        );
        w
    }

    #[test]
    fn a_rebuilt_worker_is_a_new_one() {
        // A worker in the middle of a plan, with outputs queued and timers armed, rebuilt for
        // another configuration: nothing of its run may remain.
        let mut w = holding(vec![Step::Tool, Step::Tool], 5 * SECOND_NS);
        w.handle_timeout(L);
        let mut other = worker(vec![Step::Checkpoint]).config().clone();
        other.name = WorkerName(7);
        other.start_delay_ns = 3;
        other.plans.push(Plan { steps: Vec::new() });
        w.rebuild(&other, crate::Variant::UnconditionalCommit.switches());
        let fresh = Worker::new(other, crate::Variant::UnconditionalCommit.switches());
        assert_eq!(format!("{w:?}"), format!("{fresh:?}"));
    }

    #[test]
    fn the_deadline_runs_from_the_claims_send_time_not_the_replys_arrival_p6() {
        // The grant arrives 5 s after the claim left: the deadline is L - G from the send.
        let mut w = holding(vec![Step::Tool], 5 * SECOND_NS);
        let outs = drain(&mut w);
        assert!(outs.iter().any(|o| matches!(
            o,
            Output::Journal(Event::JobClaimed { deadline, .. }) if *deadline == L - SECOND_NS
        )));
    }

    #[test]
    fn unanswered_heartbeats_lead_to_jeopardy_and_no_effect_p13() {
        let mut w = holding(
            vec![
                Step::Tool,
                Step::Effect {
                    op: OpId(1),
                    receiver: 0,
                },
            ],
            0,
        );
        drain(&mut w);
        // Heartbeats go out every H, whatever the tool call is doing (P5).
        for t in [H, 2 * H] {
            w.handle_timeout(t);
            assert!(drain(&mut w).iter().any(|o| matches!(
                o,
                Output::Send {
                    msg: Msg::Heartbeat { .. },
                    ..
                }
            )));
        }
        // No answer: at the deadline the worker is in jeopardy.
        w.handle_timeout(L - SECOND_NS);
        assert!(journal(&drain(&mut w)).contains(&"jeopardy_entered"));
        // The tool answers now; the next step is an effect, which must not start.
        w.handle_message(
            L,
            Msg::ToolResponse {
                req: 2,
                job: JobId(0),
                step: 0,
                answer: ToolAnswer::Success { result: 1 },
            },
        );
        let outs = drain(&mut w);
        assert!(!journal(&outs).contains(&"effect_started"), "{outs:?}");
        // "No row": lost, quiet.
        w.handle_message(
            L + 1,
            Msg::HeartbeatRejected {
                req: 3,
                job: JobId(0),
                token: Token(1),
            },
        );
        assert_eq!(journal(&drain(&mut w)), vec!["heartbeat_lost"]);
        assert_eq!(w.holding(), None);
    }

    #[test]
    fn a_late_acknowledgement_ends_jeopardy_and_work_goes_on() {
        let mut w = holding(
            vec![
                Step::Tool,
                Step::Effect {
                    op: OpId(1),
                    receiver: 0,
                },
            ],
            0,
        );
        drain(&mut w);
        w.handle_timeout(H); // heartbeat req 3 sent at H
        w.handle_timeout(L - SECOND_NS);
        drain(&mut w);
        w.handle_message(
            L - SECOND_NS + 1,
            Msg::ToolResponse {
                req: 2,
                job: JobId(0),
                step: 0,
                answer: ToolAnswer::Success { result: 1 },
            },
        );
        assert!(!journal(&drain(&mut w)).contains(&"effect_started"));
        // The acknowledgement of the heartbeat sent at H arrives: deadline H + L - G.
        w.handle_message(
            L,
            Msg::HeartbeatOk {
                req: 3,
                job: JobId(0),
                token: Token(1),
                lease_ns: L,
            },
        );
        let names = journal(&drain(&mut w));
        assert_eq!(
            names,
            vec!["heartbeat_ok", "jeopardy_exited", "effect_started"]
        );
        // The job is declared done only once its effect is answered (P17, P12 c).
        let key = IdemKey {
            job: JobId(0),
            op: OpId(1),
            salt: 0,
        };
        w.handle_message(
            L + 1,
            Msg::EffectAck {
                req: 5,
                job: JobId(0),
                key,
                outcome: EffectOutcome::Applied,
            },
        );
        assert_eq!(
            journal(&drain(&mut w)),
            vec!["effect_answered", "commit_sent"]
        );
    }

    #[test]
    fn a_stuck_tool_is_ended_by_the_stage_deadline_not_the_lease_p14() {
        let mut w = holding(vec![Step::Tool], 0);
        drain(&mut w);
        let mut t = 0;
        let mut req = 3;
        // Heartbeats are answered: the lease is fine all along.
        while t + H < 60 * SECOND_NS {
            t += H;
            w.handle_timeout(t);
            drain(&mut w);
            w.handle_message(
                t + 1,
                Msg::HeartbeatOk {
                    req,
                    job: JobId(0),
                    token: Token(1),
                    lease_ns: L,
                },
            );
            req += 1;
            assert!(!journal(&drain(&mut w)).contains(&"jeopardy_entered"));
        }
        w.handle_timeout(60 * SECOND_NS);
        let outs = drain(&mut w);
        assert_eq!(
            journal(&outs),
            vec!["stage_deadline_exceeded", "commit_sent"]
        );
        assert!(outs.iter().any(|o| matches!(
            o,
            Output::Send {
                msg: Msg::Commit {
                    outcome: Outcome::Failure {
                        error: ErrorCode::StageDeadline,
                        ..
                    },
                    ..
                },
                ..
            }
        )));
    }
}
