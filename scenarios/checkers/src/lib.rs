//! The invariant checkers (oracles) for I1-I8, and the hazard counter. They judge only the
//! trace: what each node recorded, at which true time, on which local clock reading. They never
//! look inside the machines, so the reference, every variant and a user's own implementation
//! are judged alike.
//!
//! The checkers keep their own model of the lease table, rebuilt from the coordinator's grants,
//! renewals and revocations, and hold every commit, effect and success claim against it.

pub mod hazard;
pub mod metrics;
pub mod node;

pub use hazard::{Hazard, Hazards};
use leasesim_protocol::{
    EntityId, Event, Finding, GrantReason, IdemKey, Invariant, JobId, JobState, Msg,
    OperatorAction, Token, WorkerName,
};
use leasesim_sim::{Clock, Command, End, EventKind, Fate, NodeId, TraceEvent};
pub use node::{NodeInfo, Role};
use std::collections::{BTreeMap, BTreeSet};

/// A run's trace.
pub type Trace = [TraceEvent<Msg, Event>];

/// Most findings kept per run: the first ones tell the story; the rest repeat it.
pub const FINDINGS_MAX: usize = 32;

#[derive(Clone, Debug, Default)]
struct JobModel {
    token: Token,
    holder: Option<WorkerName>,
    /// Lease expiry on the coordinator's clock while a lease is live.
    valid_until: Option<u64>,
    /// True time of the last grant or renewal of the current token.
    confirmed_t: u64,
    /// Length of the current lease, as the coordinator applied it.
    lease_ns: u64,
    state: Option<JobState>,
    succeeded: bool,
    /// Every token ever granted (effects must trace to one, I6).
    granted: BTreeSet<Token>,
    /// Tokens an operator ended (acting under them before learning it is a hazard, not a bug).
    revoked: BTreeSet<Token>,
}

/// A disturbance the reference protocol is built to absorb: one missed heartbeat (R - 1 misses
/// tolerated) or extra latency within the jitter reserve (P6).
#[derive(Copy, Clone, Debug)]
enum Soft {
    Drop,
    Delay(u64),
}

/// The scalar facts of a job's model, copied out cheaply (the model's sets stay behind).
#[derive(Copy, Clone, Debug)]
struct JobView {
    token: Token,
    holder: Option<WorkerName>,
    valid_until: Option<u64>,
    confirmed_t: u64,
    lease_ns: u64,
    state: Option<JobState>,
    succeeded: bool,
}

/// What the checkers know of the world besides the trace.
pub struct World<'a> {
    /// Every node, by id.
    pub nodes: &'a [NodeInfo],
    /// The coordinator's clock (the arbiter: never stepped, F4).
    pub coordinator_clock: Clock,
    /// Operation names, by op id, for readable keys.
    pub op_names: &'a [String],
    /// The number of jobs.
    pub jobs: usize,
    /// The network's longest ordinary flight time; longer ones were delayed by the plan.
    pub latency_max_ns: u64,
    /// I7: every job must be terminal by this true time.
    pub liveness_deadline_ns: Option<u64>,
    /// How the run ended and when.
    pub end: End,
    /// True time at the end.
    pub end_ns: u64,
}

/// The verdict material of one run.
#[derive(Clone, Debug, Default)]
pub struct Judgement {
    /// Violations, in trace order.
    pub findings: Vec<Finding>,
    /// Hazards reached.
    pub hazards: Hazards,
}

struct Oracle<'a> {
    world: &'a World<'a>,
    coordinator: NodeId,
    jobs: BTreeMap<JobId, JobModel>,
    /// Per (receiver, entity): highest fence admitted.
    marks: BTreeMap<(NodeId, EntityId), Token>,
    /// Per (receiver, key): applied already.
    applied: BTreeSet<(NodeId, IdemKey)>,
    /// Per receiver: operation meanings (keys without their salt) applied already.
    meanings: BTreeSet<(NodeId, IdemKey)>,
    /// Per worker node: the attempt it is running.
    live: BTreeMap<NodeId, (JobId, Token)>,
    /// (worker node, job, token) the worker learned were lost or refused.
    lost: BTreeSet<(NodeId, JobId, Token)>,
    /// (worker name, job, token) whose result the coordinator accepted.
    accepted: BTreeSet<(WorkerName, JobId, Token)>,
    /// Who ran which attempt: (job, token) -> worker node.
    runner: BTreeMap<(JobId, Token), NodeId>,
    /// Worker nodes whose clocks left their bound (belief checks are void for them).
    clocks_out: BTreeSet<NodeId>,
    /// The last true time a fault touched a worker node or its link to the coordinator.
    disturbed_at: BTreeMap<NodeId, u64>,
    /// The last true time a fault touched the coordinator itself.
    coordinator_disturbed_at: Option<u64>,
    /// When the coordinator last received a claim.
    last_claim_t: Option<u64>,
    /// Soft disturbances on each worker's link to the coordinator, in time order.
    soft: BTreeMap<NodeId, Vec<(u64, Soft)>>,
    /// Faults in force now: cut links, paused or crashed nodes, slow nodes.
    cuts: BTreeSet<(NodeId, NodeId)>,
    down: BTreeSet<NodeId>,
    slow: BTreeSet<NodeId>,
    /// Whether the coordinator is cut from everyone right now.
    outage: bool,
    /// Renewals per (job, token).
    renewals: BTreeMap<(JobId, Token), u32>,
    /// Grants and acceptances the coordinator already answered: (job, token, is-commit).
    answered: BTreeSet<(JobId, Token, bool)>,
    /// Attempts whose conditional commit is out: their commit's answer decides, not a
    /// heartbeat's.
    committing: BTreeSet<(NodeId, JobId, Token)>,
    /// A worker that must journal a loss it was just told about: node -> (job, token).
    owes_journal: BTreeMap<NodeId, (JobId, Token, u64)>,
    /// Worker names seen claiming, with the nodes that claimed under them.
    claimers: BTreeMap<WorkerName, BTreeSet<NodeId>>,
    /// Notes of the current handler (same node, same instant), for journal checks.
    recent: Vec<(NodeId, u64, Event)>,
    judgement: Judgement,
}

/// Checks every invariant over a trace and counts the hazards reached.
pub fn check(world: &World<'_>, trace: &Trace) -> Judgement {
    let coordinator = world
        .nodes
        .iter()
        .position(|n| n.role == Role::Coordinator)
        .unwrap_or(0) as NodeId;
    let mut o = Oracle {
        world,
        coordinator,
        jobs: BTreeMap::new(),
        marks: BTreeMap::new(),
        applied: BTreeSet::new(),
        meanings: BTreeSet::new(),
        live: BTreeMap::new(),
        lost: BTreeSet::new(),
        accepted: BTreeSet::new(),
        runner: BTreeMap::new(),
        clocks_out: BTreeSet::new(),
        disturbed_at: BTreeMap::new(),
        coordinator_disturbed_at: None,
        soft: BTreeMap::new(),
        last_claim_t: None,
        cuts: BTreeSet::new(),
        down: BTreeSet::new(),
        slow: BTreeSet::new(),
        outage: false,
        renewals: BTreeMap::new(),
        answered: BTreeSet::new(),
        committing: BTreeSet::new(),
        owes_journal: BTreeMap::new(),
        claimers: BTreeMap::new(),
        recent: Vec::new(),
        judgement: Judgement::default(),
    };
    for e in trace {
        if o.recent
            .first()
            .is_some_and(|(n, t, _)| *n != e.node || *t != e.t)
        {
            o.recent.clear();
        }
        match &e.kind {
            EventKind::Note { note } => {
                o.note(e, note);
                o.recent.push((e.node, e.t, *note));
            }
            EventKind::Fault { command } => o.fault(e, command),
            EventKind::Send { to, msg, fate, .. } => o.send(e, *to, msg, fate),
            EventKind::Deliver { from, msg, .. } => o.deliver(e, *from, msg),
            EventKind::Release { .. } => o.disturb(e.node, e.t),
            EventKind::Lost { .. } => {}
        }
    }
    o.finish();
    o.judgement
}

impl Oracle<'_> {
    fn flag(&mut self, invariant: Invariant, e: &TraceEvent<Msg, Event>, message: String) {
        self.flag_at(invariant, e.t, e.node, message);
    }

    fn flag_at(&mut self, invariant: Invariant, t_ns: u64, node: NodeId, message: String) {
        if self.judgement.findings.len() < FINDINGS_MAX {
            self.judgement.findings.push(Finding {
                invariant,
                t_ns,
                node,
                message,
            });
        }
    }

    /// The job's scalar facts (its model is created if the job is new).
    fn view(&mut self, job: JobId) -> JobView {
        let m = self.jobs.entry(job).or_default();
        JobView {
            token: m.token,
            holder: m.holder,
            valid_until: m.valid_until,
            confirmed_t: m.confirmed_t,
            lease_ns: m.lease_ns,
            state: m.state,
            succeeded: m.succeeded,
        }
    }

    fn hit(&mut self, h: Hazard) {
        self.judgement.hazards.hit(h);
    }

    fn name(&self, node: NodeId) -> &str {
        self.world
            .nodes
            .get(node as usize)
            .map_or("world", |n| n.name.as_str())
    }

    fn role(&self, node: NodeId) -> Option<&Role> {
        self.world.nodes.get(node as usize).map(|n| &n.role)
    }

    fn is_worker(&self, node: NodeId) -> bool {
        matches!(self.role(node), Some(Role::Worker { .. }))
    }

    fn key(&self, key: IdemKey) -> String {
        match self.world.op_names.get(key.op.0 as usize) {
            Some(op) if key.salt == 0 => format!("tool-job:{}:{op}", key.job.0),
            Some(op) => format!("tool-job:{}:{op}:{}", key.job.0, key.salt),
            None => key.to_string(),
        }
    }

    /// True expiry of a job's current lease, if it has one.
    fn expiry_true(&self, m: &JobModel) -> Option<u64> {
        m.valid_until
            .map(|until| self.world.coordinator_clock.true_at(until, 0))
    }

    /// Whether the lease of (job, token) is over at true time `t`.
    fn lease_over(&self, job: JobId, token: Token, t: u64) -> bool {
        let Some(m) = self.jobs.get(&job) else {
            return true;
        };
        m.token != token || self.expiry_true(m).is_none_or(|x| x <= t)
    }

    fn disturb(&mut self, node: NodeId, t: u64) {
        if node == self.coordinator {
            self.coordinator_disturbed_at = Some(t);
        } else {
            self.disturbed_at.insert(node, t);
        }
    }

    fn fault(&mut self, e: &TraceEvent<Msg, Event>, command: &Command) {
        let t = e.t;
        match *command {
            Command::Cut { from, to } | Command::Heal { from, to } => {
                if matches!(command, Command::Cut { .. }) {
                    self.cuts.insert((from, to));
                } else {
                    self.cuts.remove(&(from, to));
                }
                if from == self.coordinator || to == self.coordinator {
                    let other = if from == self.coordinator { to } else { from };
                    self.disturb(other, t);
                    // An outage: the coordinator is cut from every other node.
                    let coordinator = self.coordinator;
                    let cut_off: BTreeSet<NodeId> = self
                        .cuts
                        .iter()
                        .filter_map(|&(a, b)| {
                            (a == coordinator)
                                .then_some(b)
                                .or((b == coordinator).then_some(a))
                        })
                        .collect();
                    if matches!(command, Command::Cut { .. })
                        && cut_off.len() + 1 == self.world.nodes.len()
                        && cut_off.contains(&other)
                        && self.cuts.contains(&(coordinator, other))
                        && self.cuts.contains(&(other, coordinator))
                        && !self.outage
                    {
                        self.outage = true;
                        self.hit(Hazard::CoordinatorOutage);
                    }
                    if matches!(command, Command::Heal { .. }) {
                        self.outage = false;
                    }
                }
            }
            Command::Pause { node, frozen } => {
                self.down.insert(node);
                self.disturb(node, t);
                if frozen && self.is_worker(node) {
                    self.clocks_out.insert(node);
                }
                if node == self.coordinator {
                    self.hit(Hazard::CoordinatorOutage);
                }
            }
            Command::Resume { node } => {
                self.down.remove(&node);
                self.disturb(node, t);
                if let Some(&(job, token)) = self.live.get(&node) {
                    if self.lease_over(job, token, t) {
                        self.hit(Hazard::PauseAcrossExpiry);
                    }
                }
            }
            Command::Crash { node } => {
                self.down.insert(node);
                self.disturb(node, t);
                self.live.remove(&node);
                self.owes_journal.remove(&node);
                self.hit(Hazard::Crash);
            }
            Command::Restart { node } => {
                self.down.remove(&node);
                self.disturb(node, t);
                if self.is_worker(node) {
                    self.hit(Hazard::RestartSameName);
                }
            }
            Command::ClockStep { node, .. } => {
                self.hit(Hazard::ClockFault);
                if self.is_worker(node) {
                    self.clocks_out.insert(node);
                }
            }
            Command::WallStep { .. } => self.hit(Hazard::ClockFault),
            Command::SetDrift { node, drift_ppm } => {
                self.hit(Hazard::ClockFault);
                if let Some(Role::Worker { drift_ppm_max, .. }) = self.role(node) {
                    if drift_ppm.unsigned_abs() > *drift_ppm_max {
                        self.clocks_out.insert(node);
                    }
                }
            }
            Command::SetSlow { node, extra_ns } => {
                // Its delays show in each message's flight time (a soft disturbance).
                if extra_ns > 0 {
                    self.slow.insert(node);
                    if node == self.coordinator {
                        self.hit(Hazard::CoordinatorOutage);
                    }
                } else {
                    self.slow.remove(&node);
                }
            }
            Command::SetNetwork { .. }
            | Command::Release { .. }
            | Command::Alarm { .. }
            | Command::Signal { .. } => {}
        }
    }

    fn send(&mut self, e: &TraceEvent<Msg, Event>, to: NodeId, msg: &Msg, fate: &Fate) {
        let touches_coordinator = e.node == self.coordinator || to == self.coordinator;
        let other = if e.node == self.coordinator {
            to
        } else {
            e.node
        };
        // What the message's fate did to its link. A drop or a plan delay is a soft
        // disturbance the protocol is built to absorb (one miss, a jitter reserve); a hold is a
        // hard one. A duplicate harms no lease.
        let soft = match *fate {
            Fate::Drop { .. } => {
                self.hit(Hazard::MessageLost);
                Some(Soft::Drop)
            }
            Fate::Duplicate { .. } => {
                self.hit(Hazard::MessageDuplicated);
                None
            }
            Fate::Hold => {
                self.hit(Hazard::MessageLate);
                if touches_coordinator {
                    self.disturb(other, e.t);
                }
                None
            }
            Fate::Deliver { delay_ns } => {
                let extra = delay_ns.saturating_sub(self.world.latency_max_ns);
                let slow = self.slow.contains(&e.node) || self.slow.contains(&to);
                if extra > 0 && !slow {
                    self.hit(Hazard::MessageLate);
                }
                (extra > 0).then_some(Soft::Delay(extra))
            }
        };
        if let (Some(soft), true) = (soft, touches_coordinator) {
            self.soft.entry(other).or_default().push((e.t, soft));
        }
        if e.node != self.coordinator {
            return;
        }
        let answer = match *msg {
            Msg::ClaimGranted { job, token, .. } => Some((job, token, false)),
            Msg::CommitAccepted { job, token, .. } => Some((job, token, true)),
            _ => None,
        };
        if let Some(a) = answer {
            if !self.answered.insert(a) {
                self.hit(Hazard::RequestReplayed);
            }
        }
        // I6: the coordinator journals every refusal it sends.
        let (journaled, what) = match *msg {
            Msg::CommitRejected { job, token, .. } => (
                self.recent.iter().any(|(_, _, n)| {
                    matches!(n, Event::ResultRejected { job: j, token: t, .. } if *j == job && *t == token)
                }),
                format!("a rejected result of {job} with token {token}"),
            ),
            Msg::HeartbeatRejected { job, token, .. } => (
                self.recent.iter().any(|(_, _, n)| {
                    matches!(n, Event::HeartbeatRefused { job: j, token: t, .. } if *j == job && *t == token)
                }),
                format!("a refused heartbeat of {job} with token {token}"),
            ),
            _ => (true, String::new()),
        };
        if !journaled {
            self.flag(
                Invariant::NothingLost,
                e,
                format!("coordinator answered {what} without journaling it"),
            );
        }
    }

    fn deliver(&mut self, e: &TraceEvent<Msg, Event>, _from: NodeId, msg: &Msg) {
        self.settle_journal_debt(e.node, e.t);
        if let Msg::Claim { .. } = msg {
            if self.last_claim_t.is_some_and(|t| e.t - t <= 5_000_000) {
                self.hit(Hazard::ConcurrentClaims);
            }
            self.last_claim_t = Some(e.t);
        }
        let Some(&(job, token)) = self.live.get(&e.node) else {
            return;
        };
        match *msg {
            Msg::HeartbeatRejected {
                job: j, token: t, ..
            } if j == job && t == token && !self.committing.contains(&(e.node, job, token)) => {
                self.owes_journal.insert(e.node, (job, token, e.t));
            }
            Msg::CommitRejected {
                job: j, token: t, ..
            } if j == job && t == token => {
                self.owes_journal.insert(e.node, (job, token, e.t));
            }
            Msg::ToolResponse { job: j, .. } if j == job && self.lease_over(job, token, e.t) => {
                self.hit(Hazard::LateAnswerAfterExpiry);
            }
            _ => {}
        }
    }

    /// I6: a worker told its lease is lost journals it while handling that very answer.
    fn settle_journal_debt(&mut self, node: NodeId, t: u64) {
        if let Some((job, token, at)) = self.owes_journal.remove(&node) {
            let who = self.name(node).to_string();
            self.flag_at(
                Invariant::NothingLost,
                t.max(at),
                node,
                format!("{who} was told its lease of {job} with token {token} was lost and journaled nothing"),
            );
        }
    }

    fn end_attempt(&mut self, node: NodeId, job: JobId, token: Token) {
        if self.live.get(&node) == Some(&(job, token)) {
            self.live.remove(&node);
        }
        if self
            .owes_journal
            .get(&node)
            .is_some_and(|(j, t, _)| *j == job && *t == token)
        {
            self.owes_journal.remove(&node);
        }
    }

    fn note(&mut self, e: &TraceEvent<Msg, Event>, note: &Event) {
        match *note {
            Event::LeaseGranted {
                job,
                holder,
                token,
                lease_until,
                took_over,
                reason,
                ..
            } => self.granted(e, job, holder, token, lease_until, took_over, reason),
            Event::LeaseRenewed {
                job,
                worker,
                token,
                lease_until,
            } => self.renewed(e, job, worker, token, lease_until),
            Event::LeaseRevoked {
                job,
                token,
                epoch,
                action,
                ..
            } => self.revoked(e, job, token, epoch, action),
            Event::ResultAccepted {
                job,
                worker,
                token,
                state,
            } => self.result_accepted(e, job, worker, token, state),
            Event::ResultRejected { .. } => self.hit(Hazard::StaleCommitRejected),
            Event::CheckpointSaved {
                job,
                worker,
                token,
                lease_until,
                ..
            } => {
                // A checkpoint renews the lease for the next stage: judged like a renewal (I4).
                self.hit(Hazard::CheckpointSaved);
                self.renewed(e, job, worker, token, lease_until);
            }
            Event::AdmissionDeferred { .. } => self.hit(Hazard::AdmissionDeferred),
            Event::RetryScheduled { .. } => self.hit(Hazard::RetryScheduled),
            Event::EffectReconciled { .. } => self.hit(Hazard::EffectReconciled),
            Event::HumanReviewRequested { .. } => self.hit(Hazard::HumanReview),
            Event::ToolStatusQueried { .. } => self.hit(Hazard::StatusQuery),
            Event::EffectUnauthorized { .. } => self.hit(Hazard::AuthorizationRefused),
            Event::RenewalCapReached { job, .. } => {
                self.hit(Hazard::RenewalCap);
                let m = self.jobs.entry(job).or_default();
                m.valid_until = None;
                m.state = Some(JobState::Failed);
                self.terminal_check(e, job);
            }
            Event::HeartbeatRefused { .. } => self.hit(Hazard::HeartbeatRefused),
            Event::EffectApplied { entity, key, fence } => {
                self.effect_admitted(e, entity, key, fence, true)
            }
            Event::EffectDuplicate { entity, key, fence } => {
                self.hit(Hazard::DuplicateKeyAnswered);
                self.effect_admitted(e, entity, key, fence, false)
            }
            Event::EffectFenced { .. } => self.hit(Hazard::StaleFenceRejected),
            Event::EffectStarted {
                job,
                token,
                receiver,
                key,
                in_jeopardy,
                ..
            } => self.effect_started(e, job, token, receiver, key, in_jeopardy),
            Event::JobClaimed { job, token, .. } => {
                if let Role::Worker { name, .. } = self.world.nodes[e.node as usize].role {
                    let nodes = self.claimers.entry(name).or_default();
                    // A second process claiming under a name already used by another one.
                    if nodes.insert(e.node) && nodes.len() > 1 {
                        self.hit(Hazard::RestartSameName);
                    }
                }
                self.live.insert(e.node, (job, token));
                self.runner.insert((job, token), e.node);
            }
            Event::HeartbeatLost { job, token } | Event::CommitRefused { job, token } => {
                self.lost.insert((e.node, job, token));
                self.end_attempt(e.node, job, token);
                if let Role::Worker { name, .. } = self.world.nodes[e.node as usize].role {
                    if self.accepted.contains(&(name, job, token)) {
                        let msg = format!(
                            "{} journaled {} for {job} with token {token}, but the coordinator had accepted its result",
                            self.name(e.node),
                            note.name()
                        );
                        self.flag(Invariant::NothingLost, e, msg);
                    }
                }
            }
            Event::FailureAcknowledged { job, token } => self.end_attempt(e.node, job, token),
            Event::CommitAbandoned { job, token } => {
                self.hit(Hazard::CommitAbandoned);
                self.end_attempt(e.node, job, token);
            }
            Event::CommitSent { job, token, .. } => {
                self.committing.insert((e.node, job, token));
            }
            Event::JeopardyEntered { .. } => self.hit(Hazard::JeopardyEntered),
            Event::JeopardyExited { .. } => self.hit(Hazard::JeopardyExited),
            Event::StageDeadlineExceeded { .. } => self.hit(Hazard::StageDeadline),
            Event::ToolFaulted { .. } => self.hit(Hazard::ToolFault),
            Event::OperatorActed { .. } => self.hit(Hazard::OperatorAction),
            Event::SuccessClaimed { job, token } => {
                self.end_attempt(e.node, job, token);
                let Role::Worker { name, .. } = self.world.nodes[e.node as usize].role else {
                    return;
                };
                if !self.accepted.contains(&(name, job, token)) {
                    let msg = format!(
                        "{} claimed success for {job} with token {token} that the coordinator never accepted",
                        self.name(e.node)
                    );
                    self.flag(Invariant::QuiescentHolder, e, msg);
                }
            }
            _ => {}
        }
    }

    /// I3 and I8 at a grant; I7's needless-takeover check.
    #[allow(clippy::too_many_arguments)]
    fn granted(
        &mut self,
        e: &TraceEvent<Msg, Event>,
        job: JobId,
        holder: WorkerName,
        token: Token,
        lease_until: u64,
        took_over: Option<Token>,
        reason: GrantReason,
    ) {
        let m = self.view(job);
        if token <= m.token {
            self.flag(
                Invariant::SingleValidLease,
                e,
                format!(
                    "{job} granted token {token} to {holder}, not above the previous token {}",
                    m.token
                ),
            );
        }
        if let Some(until) = m.valid_until {
            if until >= e.local && reason != GrantReason::Operator {
                self.flag(
                    Invariant::SingleValidLease,
                    e,
                    format!(
                        "{job} granted token {token} to {holder} while token {} of {} was valid for {} more",
                        m.token,
                        m.holder.map_or("nobody".to_string(), |h| h.to_string()),
                        fmt_ns(until - e.local + 1)
                    ),
                );
            }
        }
        if m.state.is_some_and(JobState::is_terminal) {
            self.flag(
                Invariant::SingleValidLease,
                e,
                format!("{job} granted token {token} to {holder} after it ended"),
            );
        }
        // I8: replacing a running lease is a takeover, and a takeover records why.
        if m.state == Some(JobState::Running) && m.valid_until.is_some() {
            match (took_over, reason) {
                (Some(old), GrantReason::Expired | GrantReason::Operator) if old < token => {}
                _ => self.flag(
                    Invariant::RecordedTakeover,
                    e,
                    format!(
                        "{job} passed from token {} to token {token} of {holder} without a recorded takeover (reason {reason:?}, took over {took_over:?})",
                        m.token
                    ),
                ),
            }
        }
        if let Some(old) = took_over {
            if old >= token {
                self.flag(
                    Invariant::RecordedTakeover,
                    e,
                    format!(
                        "{job} takeover from token {old} to a token {token} that is not higher"
                    ),
                );
            }
            if reason == GrantReason::Expired {
                self.hit(Hazard::Takeover);
                self.needless_takeover(e, job, old, &m);
            }
        }
        let m = self.jobs.get_mut(&job).expect("inserted above");
        m.token = m.token.max(token);
        m.holder = Some(holder);
        m.valid_until = Some(lease_until);
        m.confirmed_t = e.t;
        m.lease_ns = lease_until.saturating_sub(e.local);
        m.state = Some(JobState::Running);
        m.granted.insert(token);
    }

    /// I7: a holder that nothing disturbed since its last renewal must never be taken over.
    fn needless_takeover(
        &mut self,
        e: &TraceEvent<Msg, Event>,
        job: JobId,
        old: Token,
        m: &JobView,
    ) {
        let Some(&node) = self.runner.get(&(job, old)) else {
            // Nobody ever ran that grant (a lost reply left it dangling).
            return;
        };
        if self.live.get(&node) != Some(&(job, old)) || self.clocks_out.contains(&node) {
            return;
        }
        if self.committing.contains(&(node, job, old)) {
            // Heartbeats stop once the conditional commit is out; its answer decides.
            return;
        }
        let since = m.confirmed_t;
        let hard = self.disturbed_at.get(&node).is_some_and(|t| *t >= since)
            || self.coordinator_disturbed_at.is_some_and(|t| t >= since)
            || self.down.contains(&node)
            || self.down.contains(&self.coordinator)
            || self.cuts.iter().any(|(a, b)| {
                (*a == node && *b == self.coordinator) || (*a == self.coordinator && *b == node)
            });
        // Within tolerance: at most one lost message on the link and extra latency within a
        // quarter of the lease (our configurations keep H <= L/3, so 2H + L/4 < L).
        let softs: Vec<Soft> = self
            .soft
            .get(&node)
            .map(|v| {
                v.iter()
                    .filter(|(t, _)| *t >= since)
                    .map(|(_, s)| *s)
                    .collect()
            })
            .unwrap_or_default();
        let drops = softs.iter().filter(|s| matches!(s, Soft::Drop)).count();
        let delay = softs
            .iter()
            .map(|s| match s {
                Soft::Delay(d) => *d,
                Soft::Drop => 0,
            })
            .max()
            .unwrap_or(0);
        let touched = hard || drops > 1 || delay > m.lease_ns / 4;
        if !touched {
            let who = self.name(node).to_string();
            self.flag(
                Invariant::Liveness,
                e,
                format!(
                    "{job}: healthy holder {who} (token {old}) was taken over; since its lease was last confirmed at {} nothing touched it beyond what the protocol must absorb ({drops} lost message(s), at most {} extra latency)",
                    fmt_ns(since),
                    fmt_ns(delay)
                ),
            );
        }
    }

    /// I4: only the current, unexpired holder's lease is extended.
    fn renewed(
        &mut self,
        e: &TraceEvent<Msg, Event>,
        job: JobId,
        worker: WorkerName,
        token: Token,
        lease_until: u64,
    ) {
        let m = self.view(job);
        let problem = if m.state != Some(JobState::Running) {
            Some(format!("the job is {:?}", m.state))
        } else if m.holder != Some(worker) {
            Some(format!(
                "the holder is {}",
                m.holder.map_or("nobody".to_string(), |h| h.to_string())
            ))
        } else if m.token != token {
            Some(format!("the current token is {}", m.token))
        } else if m.valid_until.is_none_or(|u| u <= e.local) {
            Some("the lease had expired".to_string())
        } else {
            None
        };
        if let Some(why) = problem {
            self.flag(
                Invariant::NoStaleExtension,
                e,
                format!("coordinator extended {job} for {worker} with token {token}, but {why}"),
            );
            return;
        }
        let m = self.jobs.get_mut(&job).expect("present");
        m.valid_until = Some(lease_until);
        m.confirmed_t = e.t;
        let n = self.renewals.entry((job, token)).or_default();
        *n += 1;
        if *n == 10 {
            self.hit(Hazard::LongHold);
        }
    }

    /// I8 at a revocation: a new, higher epoch.
    fn revoked(
        &mut self,
        e: &TraceEvent<Msg, Event>,
        job: JobId,
        token: Token,
        epoch: Token,
        action: OperatorAction,
    ) {
        if epoch <= token {
            self.flag(
                Invariant::RecordedTakeover,
                e,
                format!("{job}: operator {action:?} ended token {token} without a higher epoch ({epoch})"),
            );
        }
        let m = self.jobs.entry(job).or_default();
        m.revoked.insert(token);
        if !matches!(
            action,
            OperatorAction::Takeover { .. } | OperatorAction::HandToHuman
        ) {
            // A takeover's (or a handoff's) new epoch arrives with the grant that follows.
            m.token = m.token.max(epoch);
        }
        m.valid_until = None;
        m.holder = None;
        m.state = Some(match action {
            OperatorAction::Revoke => JobState::Queued,
            OperatorAction::Cancel => JobState::Cancelled,
            // The grant that follows sets the holder and the lease.
            OperatorAction::Takeover { .. } | OperatorAction::HandToHuman => JobState::Queued,
            OperatorAction::HumanResolves => JobState::Running,
        });
    }

    /// I1: an accepted result comes from the current token within its lease; one per job.
    fn result_accepted(
        &mut self,
        e: &TraceEvent<Msg, Event>,
        job: JobId,
        worker: WorkerName,
        token: Token,
        state: JobState,
    ) {
        let m = self.view(job);
        let mut problems = Vec::new();
        if m.token != token {
            problems.push(format!("token {} was current", m.token));
        } else if m.holder != Some(worker) {
            problems.push(format!(
                "the holder was {}",
                m.holder.map_or("nobody".to_string(), |h| h.to_string())
            ));
        }
        if m.valid_until.is_none_or(|u| u <= e.local) {
            problems.push("the lease was not valid by the coordinator's clock".to_string());
        }
        if m.succeeded {
            problems.push("the job already had an accepted result".to_string());
        }
        if !problems.is_empty() {
            self.flag(
                Invariant::NoStaleCommit,
                e,
                format!(
                    "coordinator accepted the result of {job} from {worker} with token {token}, but {}",
                    problems.join(", and ")
                ),
            );
        }
        self.accepted.insert((worker, job, token));
        let m = self.jobs.get_mut(&job).expect("present");
        m.valid_until = None;
        m.state = Some(state);
        if state == JobState::Succeeded {
            m.succeeded = true;
        }
        if state == JobState::Queued {
            m.holder = None;
        }
        if state.is_terminal() {
            self.terminal_check(e, job);
        }
    }

    /// I7: a job that ends must end within its bound.
    fn terminal_check(&mut self, e: &TraceEvent<Msg, Event>, job: JobId) {
        if let Some(deadline) = self.world.liveness_deadline_ns {
            if e.t > deadline {
                self.flag(
                    Invariant::Liveness,
                    e,
                    format!(
                        "{job} ended only at {}, after its bound {}",
                        fmt_ns(e.t),
                        fmt_ns(deadline)
                    ),
                );
            }
        }
    }

    /// I2: a key takes effect once; a fencing receiver never admits a lower fence. I6: every
    /// applied effect traces to a lease.
    fn effect_admitted(
        &mut self,
        e: &TraceEvent<Msg, Event>,
        entity: EntityId,
        key: IdemKey,
        fence: Token,
        applied: bool,
    ) {
        let receiver = e.node;
        let supports_fence = matches!(
            self.role(receiver),
            Some(Role::Receiver {
                supports_fence: true,
                ..
            })
        );
        if let Some(&mark) = self.marks.get(&(receiver, entity)) {
            if fence < mark {
                if supports_fence {
                    self.flag(
                        Invariant::NoDoubleEffect,
                        e,
                        format!(
                            "{} accepted {} with fence {fence} after it had admitted fence {mark} for {entity}",
                            self.name(receiver),
                            self.key(key)
                        ),
                    );
                } else if applied {
                    // Kleppmann: without fence support no lease protocol prevents this; the
                    // stable key is what keeps it from doubling.
                    self.hit(Hazard::UnfencedStaleEffect);
                }
            }
        }
        let m = self.marks.entry((receiver, entity)).or_insert(fence);
        *m = (*m).max(fence);
        if applied {
            // P10: one operation meaning takes effect once, whatever key it came under (a fresh
            // key per attempt defeats the store, V4).
            let meaning = IdemKey { salt: 0, ..key };
            if !self.meanings.insert((receiver, meaning)) && key != meaning {
                self.flag(
                    Invariant::NoDoubleEffect,
                    e,
                    format!(
                        "{} applied operation {} again, under the fresh key {}",
                        self.name(receiver),
                        self.key(meaning),
                        self.key(key)
                    ),
                );
            }
            if !self.applied.insert((receiver, key)) {
                self.flag(
                    Invariant::NoDoubleEffect,
                    e,
                    format!(
                        "{} applied {} a second time",
                        self.name(receiver),
                        self.key(key)
                    ),
                );
            }
            let traced = self
                .jobs
                .get(&key.job)
                .is_some_and(|m| m.granted.contains(&fence));
            if !traced {
                self.flag(
                    Invariant::NothingLost,
                    e,
                    format!(
                        "{} applied {} under fence {fence}, which no lease of {} ever carried",
                        self.name(receiver),
                        self.key(key),
                        key.job
                    ),
                );
            }
        }
    }

    /// I5: no effect in jeopardy or after loss, and none outside the coordinator's grant.
    /// Overlap accounting (I2): an effect issued while two attempts overlap is fenced or keyed.
    fn effect_started(
        &mut self,
        e: &TraceEvent<Msg, Event>,
        job: JobId,
        token: Token,
        receiver: u8,
        key: IdemKey,
        in_jeopardy: bool,
    ) {
        // Texts are built only for a finding: this runs for every effect of every run.
        let texts = |o: &Self| (o.name(e.node).to_string(), o.key(key));
        let overlapping = self
            .live
            .iter()
            .any(|(n, (j, t))| *n != e.node && *j == job && *t != token);
        if overlapping {
            self.hit(Hazard::OverlapEffect);
            let fenced = self.world.nodes.iter().any(|n| {
                matches!(n.role, Role::Receiver { index, supports_fence: true } if index == receiver)
            });
            if !fenced && key.salt != 0 {
                let (who, key_text) = texts(self);
                self.flag(
                    Invariant::NoDoubleEffect,
                    e,
                    format!("{who} issued {key_text} while another attempt of {job} was running, to a receiver without fences and under a key of its own attempt"),
                );
            }
        }
        if in_jeopardy {
            let (who, key_text) = texts(self);
            self.flag(
                Invariant::QuiescentHolder,
                e,
                format!("{who} started {key_text} with token {token} while in jeopardy"),
            );
            return;
        }
        if self.lost.contains(&(e.node, job, token)) {
            let (who, key_text) = texts(self);
            self.flag(
                Invariant::QuiescentHolder,
                e,
                format!("{who} started {key_text} with token {token} after it learned the lease was lost"),
            );
            return;
        }
        if self.clocks_out.contains(&e.node) {
            return;
        }
        // Read what is needed of the job's model without copying its sets.
        let (current, revoked_since, expiry) = match self.jobs.get(&job) {
            Some(m) => (
                m.token,
                m.revoked.range(token..).next().is_some(),
                self.expiry_true(m),
            ),
            None => (Token::default(), false, None),
        };
        if current != token {
            if revoked_since {
                // The operator ended it; the holder learns at its next heartbeat (P15).
                self.hit(Hazard::ActedAfterRevoke);
                return;
            }
            let (who, key_text) = texts(self);
            self.flag(
                Invariant::QuiescentHolder,
                e,
                format!(
                    "{who} started {key_text} believing it held token {token} while token {current} had been granted"
                ),
            );
            return;
        }
        if expiry.is_none_or(|t| t <= e.t) {
            let (who, key_text) = texts(self);
            self.flag(
                Invariant::QuiescentHolder,
                e,
                format!("{who} started {key_text} with token {token} after the coordinator's lease had expired"),
            );
        }
    }

    /// End-of-trace checks: pending journal debts (I6) and bounded completion (I7).
    fn finish(&mut self) {
        let debts: Vec<NodeId> = self.owes_journal.keys().copied().collect();
        for node in debts {
            self.settle_journal_debt(node, self.world.end_ns);
        }
        let Some(deadline) = self.world.liveness_deadline_ns else {
            return;
        };
        let open: Vec<JobId> = (0..self.world.jobs as u32)
            .map(JobId)
            .filter(|j| {
                !self
                    .jobs
                    .get(j)
                    .and_then(|m| m.state)
                    .is_some_and(JobState::is_terminal)
            })
            .collect();
        if !open.is_empty() && (self.world.end_ns >= deadline || self.world.end != End::Done) {
            let list: Vec<String> = open.iter().take(8).map(|j| j.to_string()).collect();
            let coordinator = self.coordinator;
            self.flag_at(
                Invariant::Liveness,
                self.world.end_ns,
                coordinator,
                format!(
                    "{} job(s) never ended after the faults healed ({}{}); bound {}, run ended ({:?}) at {}",
                    open.len(),
                    list.join(", "),
                    if open.len() > 8 { ", ..." } else { "" },
                    fmt_ns(deadline),
                    self.world.end,
                    fmt_ns(self.world.end_ns)
                ),
            );
        }
    }
}

pub use leasesim_sim::time::secs_ms as fmt_ns;
