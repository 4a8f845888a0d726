//! The invariant checkers (oracles). They judge only the trace: what each node recorded, at
//! which true time, on which local clock reading. They never look inside the machines, so the
//! reference, every variant and a user's own implementation are judged alike.
//!
//! The checkers keep their own model of the lease table, rebuilt from the coordinator's grants
//! alone, and hold every renewal, commit and effect against it.

use crate::setup::{NodeInfo, Role};
use leasesim_protocol::{
    EntityId, Event, Finding, IdemKey, Invariant, JobId, JobState, Msg, Token, WorkerName,
};
use leasesim_sim::{Clock, Command, EventKind, NodeId, TraceEvent};
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
}

struct Oracle<'a> {
    world: &'a World<'a>,
    jobs: BTreeMap<JobId, JobModel>,
    /// Per (receiver, entity): highest fence admitted.
    marks: BTreeMap<(NodeId, EntityId), Token>,
    /// Per (receiver, key): applied already.
    applied: BTreeSet<(NodeId, IdemKey)>,
    /// (worker node, job, token) the worker learned were lost or refused.
    lost: BTreeSet<(NodeId, JobId, Token)>,
    /// (worker name, job, token) whose result the coordinator accepted.
    accepted: BTreeSet<(WorkerName, JobId, Token)>,
    /// Whether every worker clock is still within its configured drift bound.
    clocks_in_bound: bool,
    findings: Vec<Finding>,
}

/// Checks every invariant over a trace and returns the findings, in trace order.
pub fn check(world: &World<'_>, trace: &Trace) -> Vec<Finding> {
    let mut o = Oracle {
        world,
        jobs: BTreeMap::new(),
        marks: BTreeMap::new(),
        applied: BTreeSet::new(),
        lost: BTreeSet::new(),
        accepted: BTreeSet::new(),
        clocks_in_bound: true,
        findings: Vec::new(),
    };
    for e in trace {
        match &e.kind {
            EventKind::Note { note } => o.note(e, note),
            EventKind::Fault { command } => o.fault(command),
            _ => {}
        }
        if o.findings.len() >= FINDINGS_MAX {
            break;
        }
    }
    o.findings
}

impl Oracle<'_> {
    fn flag(&mut self, invariant: Invariant, e: &TraceEvent<Msg, Event>, message: String) {
        if self.findings.len() < FINDINGS_MAX {
            self.findings.push(Finding {
                invariant,
                t_ns: e.t,
                node: e.node,
                message,
            });
        }
    }

    fn name(&self, node: NodeId) -> &str {
        self.world
            .nodes
            .get(node as usize)
            .map_or("world", |n| n.name.as_str())
    }

    fn key(&self, key: IdemKey) -> String {
        match self.world.op_names.get(key.op.0 as usize) {
            Some(op) if key.salt == 0 => format!("tool-job:{}:{op}", key.job.0),
            Some(op) => format!("tool-job:{}:{op}:{}", key.job.0, key.salt),
            None => key.to_string(),
        }
    }

    fn fault(&mut self, command: &Command) {
        // Belief within grant (I5) is promised only while clocks stay within the drift bound.
        match *command {
            Command::ClockStep { node, .. } => {
                if matches!(self.world.nodes[node as usize].role, Role::Worker { .. }) {
                    self.clocks_in_bound = false;
                }
            }
            Command::SetDrift { node, drift_ppm } => {
                if let Role::Worker { drift_ppm_max, .. } = self.world.nodes[node as usize].role {
                    if drift_ppm.unsigned_abs() > drift_ppm_max {
                        self.clocks_in_bound = false;
                    }
                }
            }
            Command::Pause { node, frozen: true } => {
                if matches!(self.world.nodes[node as usize].role, Role::Worker { .. }) {
                    self.clocks_in_bound = false;
                }
            }
            _ => {}
        }
    }

    fn note(&mut self, e: &TraceEvent<Msg, Event>, note: &Event) {
        match *note {
            Event::LeaseGranted {
                job,
                holder,
                token,
                lease_until,
                ..
            } => self.granted(e, job, holder, token, lease_until),
            Event::LeaseRenewed {
                job,
                worker,
                token,
                lease_until,
            } => self.renewed(e, job, worker, token, lease_until),
            Event::ResultAccepted {
                job,
                worker,
                token,
                state,
            } => self.result_accepted(e, job, worker, token, state),
            Event::EffectApplied { entity, key, fence } => {
                self.effect_admitted(e, entity, key, fence, true)
            }
            Event::EffectDuplicate { entity, key, fence } => {
                self.effect_admitted(e, entity, key, fence, false)
            }
            Event::EffectStarted {
                job,
                token,
                key,
                in_jeopardy,
                ..
            } => self.effect_started(e, job, token, key, in_jeopardy),
            Event::HeartbeatLost { job, token } | Event::CommitRefused { job, token } => {
                self.lost.insert((e.node, job, token));
            }
            Event::SuccessClaimed { job, token } => {
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

    /// I3: tokens strictly increase; a grant never overlaps a valid lease.
    fn granted(
        &mut self,
        e: &TraceEvent<Msg, Event>,
        job: JobId,
        holder: WorkerName,
        token: Token,
        lease_until: u64,
    ) {
        let m = self.jobs.entry(job).or_default().clone();
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
            if until >= e.local {
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
        let m = self.jobs.get_mut(&job).expect("inserted above");
        m.token = m.token.max(token);
        m.holder = Some(holder);
        m.valid_until = Some(lease_until);
        m.state = Some(JobState::Running);
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
        let m = self.jobs.entry(job).or_default().clone();
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
        self.jobs.get_mut(&job).expect("present").valid_until = Some(lease_until);
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
        let m = self.jobs.entry(job).or_default().clone();
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
    }

    /// I2: a key takes effect once; a fencing receiver never admits a lower fence.
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
            self.world.nodes[receiver as usize].role,
            Role::Receiver {
                supports_fence: true,
                ..
            }
        );
        let mark = self.marks.get(&(receiver, entity)).copied();
        if let Some(mark) = mark {
            if fence < mark && supports_fence {
                self.flag(
                    Invariant::NoDoubleEffect,
                    e,
                    format!(
                        "{} accepted {} with fence {fence} after it had admitted fence {mark} for {entity}",
                        self.name(receiver),
                        self.key(key)
                    ),
                );
            }
        }
        let m = self.marks.entry((receiver, entity)).or_insert(fence);
        *m = (*m).max(fence);
        if applied && !self.applied.insert((receiver, key)) {
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
    }

    /// I5: no effect in jeopardy or after loss, and none outside the coordinator's grant.
    fn effect_started(
        &mut self,
        e: &TraceEvent<Msg, Event>,
        job: JobId,
        token: Token,
        key: IdemKey,
        in_jeopardy: bool,
    ) {
        let who = self.name(e.node).to_string();
        let key = self.key(key);
        if in_jeopardy {
            self.flag(
                Invariant::QuiescentHolder,
                e,
                format!("{who} started {key} with token {token} while in jeopardy"),
            );
            return;
        }
        if self.lost.contains(&(e.node, job, token)) {
            self.flag(
                Invariant::QuiescentHolder,
                e,
                format!(
                    "{who} started {key} with token {token} after it learned the lease was lost"
                ),
            );
            return;
        }
        if !self.clocks_in_bound {
            return;
        }
        let m = self.jobs.get(&job).cloned().unwrap_or_default();
        if m.token != token {
            self.flag(
                Invariant::QuiescentHolder,
                e,
                format!(
                    "{who} started {key} believing it held token {token} while token {} had been granted",
                    m.token
                ),
            );
            return;
        }
        let expiry = m
            .valid_until
            .map(|until| self.world.coordinator_clock.true_at(until, 0));
        if expiry.is_none_or(|t| t <= e.t) {
            self.flag(
                Invariant::QuiescentHolder,
                e,
                format!(
                    "{who} started {key} with token {token} after the coordinator's lease had expired"
                ),
            );
        }
    }
}

/// Formats nanoseconds as seconds with millisecond precision.
pub fn fmt_ns(ns: u64) -> String {
    format!("{}.{:03}s", ns / 1_000_000_000, (ns / 1_000_000) % 1000)
}
