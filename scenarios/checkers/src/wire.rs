//! What crossed the network, read as decisions: behaviour, not self-report.
//!
//! A decision a node announced in a message is judged from the journal note the node made in
//! the same handler when there is one (the note says what only the node knows: a grant's reason,
//! a holder's jeopardy), and from the message itself when there is none, so that a machine that
//! journals less is judged less but never passed on what it did, and a decision both journaled
//! and sent (as the reference does) is judged once. The messages read so:
//!
//! - an effect is the `Effect` a worker sent (I5 at the moment it acted, and the overlap
//!   accounting of I2); the trace records each send once, whatever the network did to it;
//! - a grant is the coordinator's first `ClaimGranted` of a (job, token), with `lease_ns` from the
//!   coordinator's now at its send (I3); a claim repeated by its sender gets that first answer
//!   again, which is the same decision, not a new grant;
//! - a renewal is its `HeartbeatOk`, extending by `lease_ns` from its now (I4);
//! - an acceptance is its first `CommitAccepted` of a (job, token) to a node, with the outcome of
//!   the `Commit` it answers (I1); a repeated commit gets the first answer again;
//! - an operator's action it applied is its `OperatorDone` (the lease table's revocation);
//! - an admitted effect is a receiver's `EffectAck` that applied it or answered its repeated
//!   key, with the entity and fence of the `Effect` it answers (I2, I6).
//!
//! What no message carries stays the journal's to say: a checkpoint's fresh lease
//! (`CheckpointAck` has no length), a grant's reason and the epoch it took over (I8), an
//! operator's new epoch, the renewal cap, a refusal's reason, and a holder's deadline and
//! jeopardy (I5 at its statements).
//!
//! Besides, it keeps the facts of the wire other checkers read: the latest expiry the
//! coordinator set for each (job, token), from its journal and from its answers alike (the grant
//! a holder's stated deadline is held against); the refusals delivered to each worker; and the
//! hazards of lease replies (late, after a pause, duplicated, reordered).

use crate::groups::Groups;
use crate::handler::{delivered_here, journaled_here, HANDLER_EVENTS_MAX};
use crate::hazard::Hazard;
use crate::history::{History, REQUEST_EVENTS_MAX};
use crate::{Cx, Ev, Judgement, NearIds, Role, Window, JOBS_LAID_OUT};
use leasesim_protocol::{
    EffectOutcome, EntityId, Event, IdemKey, JobId, Msg, OperatorAction, Outcome, Token, WorkerName,
};
use leasesim_sim::{Command, EventKind, Fate, NodeId};
use leasesim_sorted::SortedSet;
use std::collections::BTreeMap;

/// A message as it was sent: the send's trace event (its node is the sender), the node it was
/// sent to, the message, and what the network did with it.
pub(crate) struct Sending<'m> {
    pub(crate) e: &'m Ev,
    pub(crate) to: NodeId,
    pub(crate) msg: &'m Msg,
    pub(crate) fate: &'m Fate,
}

/// A decision a message announced and no journal note of its handler did: the checkers judge it
/// from the message, and the lease table takes it in.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Said {
    /// The coordinator granted (job, token) to `holder`, until `lease_until` on its clock.
    Grant {
        job: JobId,
        token: Token,
        holder: WorkerName,
        lease_until: u64,
    },
    /// The coordinator extended (job, token) for `worker` until `lease_until` on its clock.
    Renewal {
        job: JobId,
        token: Token,
        worker: WorkerName,
        lease_until: u64,
    },
    /// The coordinator accepted `worker`'s commit under (job, token); `success` tells the
    /// outcome the commit reported, when the commit is found in the handler.
    Accepted {
        job: JobId,
        token: Token,
        worker: WorkerName,
        success: Option<bool>,
    },
    /// The coordinator applied an operator's action on `job`.
    Operated { job: JobId, action: OperatorAction },
    /// A receiver applied an effect (`applied`), or answered its repeated key from its store.
    Admitted {
        entity: EntityId,
        key: IdemKey,
        fence: Token,
        applied: bool,
    },
    /// A worker sent an effect to the receiver of index `receiver`.
    Effect {
        job: JobId,
        fence: Token,
        receiver: u8,
        key: IdemKey,
    },
}

/// The longest look-back of any walk in this module, in trace events, in a run judged as it goes
/// (a lease reply's request is found through the history there: `History::request_sent`).
pub(crate) const LOOK_BACK_MAX: usize = HANDLER_EVENTS_MAX;

/// What crossed the network about one job.
#[derive(Copy, Clone, Debug, Default)]
struct JobWire {
    /// The highest token the coordinator set an expiry for, and the latest expiry it set for
    /// it, on its clock.
    issued: Option<(Token, u64)>,
    /// The highest token a `ClaimGranted` carried, and the node its first one went to.
    granted: Option<(Token, NodeId)>,
}

/// What crossed the network about one node.
#[derive(Copy, Clone, Debug, Default)]
struct NodeWire {
    /// The highest request a grant or renewal reply delivered to it answered.
    replied: Option<u64>,
    /// Whether its last stated deadline came with a late reply.
    late: bool,
}

/// The facts of the wire the checkers keep between events. Small vectors, searched in place, and
/// kept per thread from run to run (see `Wire::clear`): most runs have a handful of jobs and
/// nodes, and a run that allocates pays for it.
#[derive(Default)]
pub(crate) struct Wire {
    /// The job ids whose facts are found by position ([`NearIds`]); the rest are in `far`.
    near_ids: NearIds,
    near: Vec<JobWire>,
    far: BTreeMap<JobId, JobWire>,
    nodes: Vec<NodeWire>,
    /// `CommitAccepted` answers sent, by job: (token, to).
    accepted: Groups<(Token, NodeId)>,
    /// Refusals of a lease delivered to a worker: (node, job, token).
    refused: SortedSet<(NodeId, JobId, Token)>,
}

impl Wire {
    /// Empties the wire for a run with `nodes` nodes and `jobs` jobs, keeping its storage; the
    /// facts of the first jobs are laid out at once (see `JOBS_LAID_OUT`).
    pub(crate) fn clear(&mut self, nodes: usize, jobs: usize) {
        self.near_ids = NearIds::for_jobs(jobs);
        self.near.clear();
        self.near
            .resize(jobs.min(JOBS_LAID_OUT), JobWire::default());
        if !self.far.is_empty() {
            self.far.clear();
        }
        self.accepted.clear();
        self.accepted.lay_out(jobs);
        self.refused.clear();
        self.nodes.clear();
        self.nodes.resize(nodes, NodeWire::default());
    }

    fn job(&self, job: JobId) -> JobWire {
        match self.near.get(job.0 as usize) {
            Some(j) => *j,
            None if self.near_ids.holds(job.0) => JobWire::default(),
            None => self.far.get(&job).copied().unwrap_or_default(),
        }
    }

    #[inline]
    fn job_mut(&mut self, job: JobId) -> &mut JobWire {
        // A job the run named already: found by position, without a call.
        let i = job.0 as usize;
        if i < self.near.len() {
            return &mut self.near[i];
        }
        self.new_job(job)
    }

    /// The facts of a job the run named first here (or of a far job id).
    #[inline(never)]
    fn new_job(&mut self, job: JobId) -> &mut JobWire {
        if !self.near_ids.holds(job.0) {
            return self.far.entry(job).or_default();
        }
        let i = job.0 as usize;
        if self.near.len() <= i {
            self.near.resize(i + 1, JobWire::default());
        }
        &mut self.near[i]
    }

    /// The coordinator set the expiry of (job, token) to `until` on its clock.
    pub(crate) fn issue(&mut self, job: JobId, token: Token, until: u64) {
        let j = self.job_mut(job);
        j.issued = match j.issued {
            Some((t, u)) if t == token => Some((t, u.max(until))),
            // An expiry set for an older token (a renewal the reference refuses) is not the
            // current grant's; the history keeps it.
            Some((t, u)) if t > token => Some((t, u)),
            _ => Some((token, until)),
        };
    }

    /// The latest expiry the coordinator set for (job, token), on its clock: the one it set for
    /// the job's highest token, or what its journal says of an older one.
    /// Inlined: most answers are the lookup of one row.
    #[inline(always)]
    pub(crate) fn issued(&self, history: &History, job: JobId, token: Token) -> Option<u64> {
        match self.job(job).issued {
            Some((t, until)) if t == token => Some(until),
            _ => history
                .lease(job, token)?
                .issues()
                .map(|x| x.lease_until)
                .max(),
        }
    }

    /// Whether a refusal of (job, token) was delivered to `node`.
    pub(crate) fn refused(&self, node: NodeId, job: JobId, token: Token) -> bool {
        self.refused.contains(&(node, job, token))
    }

    /// Whether `node`'s last stated deadline came with a late reply.
    pub(crate) fn late(&self, node: NodeId) -> bool {
        self.nodes.get(node as usize).is_some_and(|n| n.late)
    }

    /// `node` stated a deadline on a reply that came `late` or not.
    pub(crate) fn confirmed(&mut self, node: NodeId, late: bool) {
        if let Some(n) = self.nodes.get_mut(node as usize) {
            n.late = late;
        }
    }

    /// A worker process crashed: what it was told and asked went with it.
    pub(crate) fn crashed(&mut self, node: NodeId) {
        if let Some(n) = self.nodes.get_mut(node as usize) {
            *n = NodeWire::default();
        }
        self.refused.retain(|&(n, _, _)| n != node);
    }

    /// A message was delivered to `e.node`.
    #[inline(always)]
    pub(crate) fn delivered<'a>(
        &mut self,
        cx: &impl Fn() -> Cx<'a>,
        e: &Ev,
        msg: &Msg,
        out: &mut Judgement,
    ) {
        match msg {
            Msg::HeartbeatRejected { .. }
            | Msg::CommitRejected { .. }
            | Msg::CheckpointAck { .. }
            | Msg::ClaimGranted { .. }
            | Msg::HeartbeatOk { .. } => self.delivered_lease(cx, e, msg, out),
            Msg::Claim { .. }
            | Msg::ClaimEmpty { .. }
            | Msg::Heartbeat { .. }
            | Msg::Commit { .. }
            | Msg::CommitAccepted { .. }
            | Msg::ToolRequest { .. }
            | Msg::ToolResponse { .. }
            | Msg::Effect { .. }
            | Msg::EffectAck { .. }
            | Msg::Operator { .. }
            | Msg::OperatorDone { .. }
            | Msg::Checkpoint { .. }
            | Msg::EffectStatus { .. }
            | Msg::EffectStatusReply { .. }
            | Msg::ToolStatus { .. } => {}
        }
    }

    #[inline(always)]
    fn delivered_lease<'a>(
        &mut self,
        cx: &impl Fn() -> Cx<'a>,
        e: &Ev,
        msg: &Msg,
        out: &mut Judgement,
    ) {
        match *msg {
            Msg::HeartbeatRejected { job, token, .. }
            | Msg::CommitRejected { job, token, .. }
            | Msg::CheckpointAck {
                job,
                token,
                saved: false,
                ..
            } => {
                self.refused.insert((e.node, job, token));
            }
            Msg::ClaimGranted { req, .. } | Msg::HeartbeatOk { req, .. } => {
                let cx = cx();
                if cx.models.faults.resumed_at(e.node, e.t) {
                    out.hit(Hazard::LeaseReplyAfterPause);
                }
                // A worker that journals its claims counts a late reply where it states the
                // deadline the reply gave it; for one that never did, the reply tells it.
                let journals = cx.history.claimants().iter().any(|&(n, _)| n == e.node);
                if !journals && cx.worker_name(e.node).is_some() {
                    let sent = request_sent_before(cx.run.trace, cx.history, cx.i, e.node, req);
                    if sent.is_some_and(|(t, _)| e.t - t > 2 * cx.run.world.latency_max_ns) {
                        out.hit(Hazard::LateLeaseReply);
                    }
                }
                if let Some(n) = self.nodes.get_mut(e.node as usize) {
                    match n.replied {
                        Some(highest) if req < highest => out.hit(Hazard::LeaseReplyReordered),
                        _ => n.replied = Some(req),
                    }
                }
            }
            // A refusal it was told of already, a checkpoint saved, or what `delivered` leaves.
            _ => {}
        }
    }

    /// A message sent: the decision to judge from it, if its handler journaled none.
    #[inline(always)]
    pub(crate) fn sent<'a>(
        &mut self,
        cx: &impl Fn() -> Cx<'a>,
        coordinator: NodeId,
        s: &Sending<'_>,
        out: &mut Judgement,
    ) -> Option<Said> {
        match s.msg {
            Msg::ClaimGranted { .. }
            | Msg::HeartbeatOk { .. }
            | Msg::CommitAccepted { .. }
            | Msg::OperatorDone { .. }
            | Msg::EffectAck { .. }
            | Msg::Effect { .. } => self.decision(cx, coordinator, s, out),
            // Requests decide nothing; a refusal is judged by `lost.rs` and its reason is the
            // journal's; a checkpoint's answer carries no lease length; tool traffic and status
            // queries change no lease and admit no effect.
            Msg::Claim { .. }
            | Msg::ClaimEmpty { .. }
            | Msg::Heartbeat { .. }
            | Msg::HeartbeatRejected { .. }
            | Msg::Commit { .. }
            | Msg::CommitRejected { .. }
            | Msg::ToolRequest { .. }
            | Msg::ToolResponse { .. }
            | Msg::Operator { .. }
            | Msg::Checkpoint { .. }
            | Msg::CheckpointAck { .. }
            | Msg::EffectStatus { .. }
            | Msg::EffectStatusReply { .. }
            | Msg::ToolStatus { .. } => None,
        }
    }

    /// The decision a message announces, by the message's kind. Inlined into `Wire::sent`, and
    /// with it into the walk's arm for the message's kind, as is each function it calls.
    #[inline(always)]
    fn decision<'a>(
        &mut self,
        cx: &impl Fn() -> Cx<'a>,
        coordinator: NodeId,
        s: &Sending<'_>,
        out: &mut Judgement,
    ) -> Option<Said> {
        let from_coordinator = s.e.node == coordinator;
        match *s.msg {
            Msg::ClaimGranted {
                job,
                token,
                lease_ns,
                ..
            } if from_coordinator => self.granted(cx, s, (job, token), lease_ns, out),
            Msg::HeartbeatOk {
                job,
                token,
                lease_ns,
                ..
            } if from_coordinator => self.renewed(cx, s, (job, token), lease_ns, out),
            Msg::CommitAccepted { req, job, token } if from_coordinator => {
                self.accepted(cx, s.to, req, (job, token))
            }
            Msg::OperatorDone {
                req,
                job,
                applied: true,
            } if from_coordinator => operated(cx, s.to, req, job),
            Msg::EffectAck {
                req, key, outcome, ..
            } => admitted(cx, s, req, key, outcome),
            Msg::Effect {
                job, key, fence, ..
            } => effect_sent(cx, s, job, key, fence),
            // Sent by a node that does not decide it, or what `sent` leaves.
            _ => None,
        }
    }

    /// The coordinator's `ClaimGranted` of (job, token): a grant, or the extension of the
    /// current lease handed to its own holder, unless journaled or a repeated claim's answer.
    #[inline(always)]
    fn granted<'a>(
        &mut self,
        cx: &impl Fn() -> Cx<'a>,
        s: &Sending<'_>,
        (job, token): (JobId, Token),
        lease_ns: u64,
        out: &mut Judgement,
    ) -> Option<Said> {
        let (e, to) = (s.e, s.to);
        if matches!(s.fate, Fate::Duplicate { .. }) {
            out.hit(Hazard::LeaseReplyDuplicated);
        }
        let j = self.job_mut(job);
        match j.granted {
            Some((t, n)) if t == token && n == to => {
                // A repeated claim's first answer again: no new decision.
                out.hit(Hazard::LeaseReplyDuplicated);
                return None;
            }
            Some((t, _)) if t >= token => {}
            _ => j.granted = Some((token, to)),
        }
        let lease_until = e.local.saturating_add(lease_ns);
        self.issue(job, token, lease_until);
        let cx = cx();
        let journaled = journaled_here(cx.run.trace, cx.i, |n| match *n {
            Event::LeaseGranted {
                job: j, token: t, ..
            }
            | Event::LeaseRenewed {
                job: j, token: t, ..
            } => j == job && t == token,
            _ => false,
        });
        if journaled {
            return None;
        }
        let holder = cx.worker_name(to)?;
        let m = cx.models.table.row(job);
        // The current lease handed to its own holder (an operator's handoff picked up)
        // extends it; anything else is a new grant.
        let extends = m.token == token
            && m.holder == Some(holder)
            && m.valid_until.is_some_and(|u| u > e.local);
        Some(if extends {
            Said::Renewal {
                job,
                token,
                worker: holder,
                lease_until,
            }
        } else {
            Said::Grant {
                job,
                token,
                holder,
                lease_until,
            }
        })
    }

    /// The coordinator's `HeartbeatOk` of (job, token): a renewal, unless journaled.
    #[inline(always)]
    fn renewed<'a>(
        &mut self,
        cx: &impl Fn() -> Cx<'a>,
        s: &Sending<'_>,
        (job, token): (JobId, Token),
        lease_ns: u64,
        out: &mut Judgement,
    ) -> Option<Said> {
        if matches!(s.fate, Fate::Duplicate { .. }) {
            out.hit(Hazard::LeaseReplyDuplicated);
        }
        let lease_until = s.e.local.saturating_add(lease_ns);
        self.issue(job, token, lease_until);
        let cx = cx();
        let journaled = journaled_here(
            cx.run.trace,
            cx.i,
            |n| matches!(*n, Event::LeaseRenewed { job: j, token: t, .. } if j == job && t == token),
        );
        if journaled {
            return None;
        }
        Some(Said::Renewal {
            job,
            token,
            worker: cx.worker_name(s.to)?,
            lease_until,
        })
    }

    /// The coordinator's first `CommitAccepted` of (job, token) to `to`: an acceptance, with
    /// the outcome of the commit it answers, unless journaled.
    #[inline(always)]
    fn accepted<'a>(
        &mut self,
        cx: &impl Fn() -> Cx<'a>,
        to: NodeId,
        req: u64,
        (job, token): (JobId, Token),
    ) -> Option<Said> {
        if self.accepted.find(job.0, |&a| a == (token, to)).is_some() {
            // A repeated commit's first answer again.
            return None;
        }
        self.accepted.push(job.0, (token, to));
        let cx = cx();
        let journaled = journaled_here(
            cx.run.trace,
            cx.i,
            |n| matches!(*n, Event::ResultAccepted { job: j, token: t, .. } if j == job && t == token),
        );
        if journaled {
            return None;
        }
        let success = match delivered_here(cx.run.trace, cx.i) {
            Some((
                from,
                Msg::Commit {
                    req: r, outcome, ..
                },
            )) if from == to && r == req => Some(matches!(outcome, Outcome::Success { .. })),
            _ => None,
        };
        Some(Said::Accepted {
            job,
            token,
            worker: cx.worker_name(to)?,
            success,
        })
    }
}

/// The coordinator's `OperatorDone` of an action it applied on `job`, unless journaled.
#[inline(always)]
fn operated<'a>(cx: &impl Fn() -> Cx<'a>, to: NodeId, req: u64, job: JobId) -> Option<Said> {
    let cx = cx();
    let journaled = journaled_here(cx.run.trace, cx.i, |n| match *n {
        Event::LeaseRevoked { job: j, .. } | Event::ResultAccepted { job: j, .. } => j == job,
        _ => false,
    });
    if journaled {
        return None;
    }
    match delivered_here(cx.run.trace, cx.i) {
        Some((from, Msg::Operator { req: r, action, .. })) if from == to && r == req => {
            Some(Said::Operated { job, action })
        }
        _ => None,
    }
}

/// A receiver's `EffectAck` that applied `key` or answered it from its store: an admitted
/// effect, with the entity and fence of the `Effect` it answers, unless journaled.
#[inline(always)]
fn admitted<'a>(
    cx: &impl Fn() -> Cx<'a>,
    s: &Sending<'_>,
    req: u64,
    key: IdemKey,
    outcome: EffectOutcome,
) -> Option<Said> {
    let applied = match outcome {
        EffectOutcome::Applied => true,
        EffectOutcome::Duplicate { .. } => false,
        // A refusal admits nothing.
        EffectOutcome::StaleFence { .. } | EffectOutcome::Unauthorized => return None,
    };
    let cx = cx();
    if !matches!(cx.role(s.e.node), Some(Role::Receiver { .. })) {
        return None;
    }
    let journaled = journaled_here(cx.run.trace, cx.i, |n| match *n {
        Event::EffectApplied { key: k, .. }
        | Event::EffectDuplicate { key: k, .. }
        | Event::EffectFenced { key: k, .. }
        | Event::EffectUnauthorized { key: k, .. } => k == key,
        _ => false,
    });
    if journaled {
        return None;
    }
    match delivered_here(cx.run.trace, cx.i) {
        Some((
            from,
            Msg::Effect {
                req: r,
                entity,
                key: k,
                fence,
                ..
            },
        )) if from == s.to && r == req && k == key => Some(Said::Admitted {
            entity,
            key,
            fence,
            applied,
        }),
        _ => None,
    }
}

/// A worker's `Effect` to a receiver: the effect it acted on, unless journaled.
#[inline(always)]
fn effect_sent<'a>(
    cx: &impl Fn() -> Cx<'a>,
    s: &Sending<'_>,
    job: JobId,
    key: IdemKey,
    fence: Token,
) -> Option<Said> {
    let cx = cx();
    if !matches!(cx.role(s.e.node), Some(Role::Worker { .. })) {
        return None;
    }
    let journaled = journaled_here(
        cx.run.trace,
        cx.i,
        |n| matches!(*n, Event::EffectStarted { job: j, token: t, key: k, .. } if j == job && t == fence && k == key),
    );
    if journaled {
        return None;
    }
    let Some(&Role::Receiver { index, .. }) = cx.role(s.to) else {
        return None;
    };
    Some(Said::Effect {
        job,
        fence,
        receiver: index,
        key,
    })
}

/// The true time and the holder's clock reading at which it sent the claim or heartbeat that
/// the grant or renewal reply of (job, token) starting the handler of trace event `i` answers.
pub(crate) fn request_answered_here(
    trace: Window<'_>,
    history: &History,
    i: usize,
    job: JobId,
    token: Token,
) -> Option<(u64, u64)> {
    let req = match delivered_here(trace, i)? {
        (
            _,
            Msg::ClaimGranted {
                req,
                job: j,
                token: t,
                ..
            }
            | Msg::HeartbeatOk {
                req,
                job: j,
                token: t,
                ..
            },
        ) if j == job && t == token => req,
        _ => return None,
    };
    request_sent_before(trace, history, i, trace.at(i).node, req)
}

/// The true time and the clock reading at which `node` sent claim or heartbeat `req`, looked
/// up before trace event `i`: in the history's log of requests, or back in the trace.
pub(crate) fn request_sent_before(
    trace: Window<'_>,
    history: &History,
    i: usize,
    node: NodeId,
    req: u64,
) -> Option<(u64, u64)> {
    if history.logs_requests() {
        return history.request_sent(node, i, req);
    }
    // Requests are numbered upwards by each process: going back, a lower number of the same
    // process means the request is not there; a crash or restart ends the process.
    for p in trace.before(i).iter().rev().take(REQUEST_EVENTS_MAX) {
        if p.node != node {
            continue;
        }
        match &p.kind {
            EventKind::Send {
                msg: Msg::Claim { req: r, .. } | Msg::Heartbeat { req: r, .. },
                ..
            } => {
                if *r == req {
                    return Some((p.t, p.local));
                }
                if *r < req {
                    return None;
                }
            }
            EventKind::Fault {
                command: Command::Crash { .. } | Command::Restart { .. },
            } => return None,
            _ => {}
        }
    }
    None
}
