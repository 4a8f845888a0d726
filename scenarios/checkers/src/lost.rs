//! I6, nothing lost: every rejected result and every lost lease is in the journal, and every
//! applied effect is traceable to a lease. The coordinator journals each refusal it sends in
//! the same handler; a worker told its lease is lost journals it while handling that very
//! answer (before anything else reaches it), and never journals a loss of a lease whose result
//! the coordinator had accepted.

use crate::handler::journaled_here;
use crate::{Cx, Ev, Judgement};
use leasesim_protocol::{Event, IdemKey, Invariant, JobId, Msg, Token};
use leasesim_sim::NodeId;
use leasesim_sorted::SortedMap;

/// The journal entries workers owe.
#[derive(Default)]
pub(crate) struct Lost {
    /// A worker that must journal a loss it was just told about: node -> (job, token, when).
    owes_journal: SortedMap<NodeId, (JobId, Token, u64)>,
}

impl Lost {
    /// Forgets every debt, keeping the storage for the next run.
    pub(crate) fn clear(&mut self) {
        self.owes_journal.clear();
    }

    /// Whether no worker owes the journal anything: then a delivery other than a refusal asks
    /// nothing of this checker.
    #[inline(always)]
    pub(crate) fn owes_nothing(&self) -> bool {
        self.owes_journal.is_empty()
    }

    /// A message reached `e.node`: a debt it still owes is a finding; a refusal of the attempt
    /// it runs is a new debt.
    #[inline(always)]
    pub(crate) fn delivered<'a>(
        &mut self,
        cx: &impl Fn() -> Cx<'a>,
        e: &Ev,
        msg: &Msg,
        out: &mut Judgement,
    ) {
        // Nearly always nothing is owed and nothing refused: this runs at every delivery of
        // every run.
        if !self.owes_journal.is_empty() {
            self.settle(&cx(), e.node, e.t, out);
        }
        if let Some((job, token, heartbeat)) = refusal(msg) {
            self.refused(&cx(), e, job, token, heartbeat);
        }
    }

    /// A refusal of (job, token) reached `e.node`: if that is the attempt it runs, it now owes
    /// the journal its loss.
    fn refused(&mut self, cx: &Cx<'_>, e: &Ev, job: JobId, token: Token, heartbeat: bool) {
        if cx.history.running(e.node, cx.i) != Some((job, token)) {
            return;
        }
        // Heartbeats stop once the conditional commit is out; its answer decides.
        let committing = || {
            cx.history
                .lease(job, token)
                .is_some_and(|l| l.commit_sent_before(e.node, cx.i))
        };
        if !heartbeat || !committing() {
            self.owes_journal.insert(e.node, (job, token, e.t));
        }
    }

    /// I6: a worker told its lease is lost journals it while handling that very answer.
    fn settle(&mut self, cx: &Cx<'_>, node: NodeId, t: u64, out: &mut Judgement) {
        if let Some((job, token, at)) = self.owes_journal.remove(&node) {
            out.flag_at(
                Invariant::NothingLost,
                t.max(at),
                node,
                format!(
                    "{} was told its lease of {job} with token {token} was lost and journaled nothing",
                    cx.name(node)
                ),
            );
        }
    }

    /// A worker's attempt at (job, token) ended: what it owed about it is paid.
    pub(crate) fn attempt_ended(&mut self, node: NodeId, job: JobId, token: Token) {
        if self
            .owes_journal
            .get(&node)
            .is_some_and(|(j, t, _)| *j == job && *t == token)
        {
            self.owes_journal.remove(&node);
        }
    }

    /// A crashed worker owes nothing: its journal went with it.
    pub(crate) fn crashed(&mut self, node: NodeId) {
        self.owes_journal.remove(&node);
    }

    /// A worker journaled that it lost (job, token), or that its commit was refused: it must
    /// not be a lease whose result the coordinator had accepted.
    pub(crate) fn learned_loss(
        &mut self,
        cx: &Cx<'_>,
        e: &Ev,
        note: &Event,
        job: JobId,
        token: Token,
        out: &mut Judgement,
    ) {
        self.attempt_ended(e.node, job, token);
        let Some(name) = cx.worker_name(e.node) else {
            return;
        };
        let accepted = cx
            .history
            .lease(job, token)
            .is_some_and(|l| l.accepted_before(name, cx.i));
        if accepted {
            out.flag(
                Invariant::NothingLost,
                e,
                format!(
                    "{} journaled {} for {job} with token {token}, but the coordinator had accepted its result",
                    cx.name(e.node),
                    note.name()
                ),
            );
        }
    }

    /// End of trace: every debt still owed is a finding.
    pub(crate) fn finish(&mut self, cx: &Cx<'_>, out: &mut Judgement) {
        // In the order of the nodes; each settled debt leaves the map.
        while let Some(&node) = self.owes_journal.first_key() {
            self.settle(cx, node, cx.run.world.end_ns, out);
        }
    }
}

/// I6 at an effect a receiver applied: it traces to a lease granted before it.
/// Inlined into the walk's arm for its note, like the other checkers of frequent notes.
#[inline(always)]
pub(crate) fn effect_applied(cx: &Cx<'_>, e: &Ev, key: IdemKey, fence: Token, out: &mut Judgement) {
    // A grant journaled, or one whose message alone said it (a coordinator that keeps no
    // journal is judged by what it sent).
    let traced = cx
        .history
        .lease(key.job, fence)
        .is_some_and(|l| l.granted_before(cx.i))
        || cx.models.table.was_granted(key.job, fence);
    if !traced {
        out.flag(
            Invariant::NothingLost,
            e,
            format!(
                "{} applied {} under fence {fence}, which no lease of {} ever carried",
                cx.name(e.node),
                cx.key(key),
                key.job
            ),
        );
    }
}

/// I6 at a message the coordinator sent: a refusal is journaled in the same handler.
#[inline]
pub(crate) fn coordinator_sent<'a>(
    cx: impl Fn() -> Cx<'a>,
    e: &Ev,
    msg: &Msg,
    out: &mut Judgement,
) {
    if let Some((job, token, heartbeat)) = refusal(msg) {
        refusal_sent(&cx(), e, job, token, heartbeat, out);
    }
}

fn refusal_sent(
    cx: &Cx<'_>,
    e: &Ev,
    job: JobId,
    token: Token,
    heartbeat: bool,
    out: &mut Judgement,
) {
    let journaled = journaled_here(cx.run.trace, cx.i, |n| match *n {
        Event::HeartbeatRefused {
            job: j, token: t, ..
        } => heartbeat && j == job && t == token,
        Event::ResultRejected {
            job: j, token: t, ..
        } => !heartbeat && j == job && t == token,
        _ => false,
    });
    if !journaled {
        let what = if heartbeat {
            format!("a refused heartbeat of {job} with token {token}")
        } else {
            format!("a rejected result of {job} with token {token}")
        };
        out.flag(
            Invariant::NothingLost,
            e,
            format!("coordinator answered {what} without journaling it"),
        );
    }
}

/// The (job, token) a refusal is about, and whether it refused a heartbeat (else a commit).
#[inline]
fn refusal(msg: &Msg) -> Option<(JobId, Token, bool)> {
    Some(match *msg {
        Msg::HeartbeatRejected { job, token, .. } => (job, token, true),
        Msg::CommitRejected { job, token, .. } => (job, token, false),
        Msg::Claim { .. }
        | Msg::ClaimGranted { .. }
        | Msg::ClaimEmpty { .. }
        | Msg::Heartbeat { .. }
        | Msg::HeartbeatOk { .. }
        | Msg::Commit { .. }
        | Msg::CommitAccepted { .. }
        | Msg::ToolRequest { .. }
        | Msg::ToolResponse { .. }
        | Msg::Effect { .. }
        | Msg::Checkpoint { .. }
        | Msg::CheckpointAck { .. }
        | Msg::EffectStatus { .. }
        | Msg::EffectStatusReply { .. }
        | Msg::ToolStatus { .. }
        | Msg::Operator { .. }
        | Msg::OperatorDone { .. }
        | Msg::EffectAck { .. } => return None,
    })
}
