//! I3 (tokens strictly increase; at most one valid lease per job at any coordinator instant),
//! I4 (no extension for a non-owner, a stale token or an expired lease) and I8 (every takeover
//! has a recorded reason and a higher epoch), judged at each grant, renewal, checkpoint and
//! revocation against the reference lease table as it stood just before: from the
//! coordinator's journal, or from its `ClaimGranted` and `HeartbeatOk` where it journaled none
//! (I3 and I4 only: the reason and the epoch a takeover records are in the journal alone). A
//! revocation's reason is what the run shows, not what the journal calls it: an operator's
//! request (F8) the handler answers, or the lease's end by the coordinator's clock; a live
//! lease taken back for no such reason breaks I8.

use crate::table::RenewalFault;
use crate::{fmt_ns, Cx, Ev, Judgement, Role};
use leasesim_protocol::{
    GrantReason, Invariant, JobId, JobState, Msg, OperatorAction, Token, WorkerName,
};

/// I3 and I8 at a grant.
pub(crate) fn granted(
    cx: &Cx<'_>,
    e: &Ev,
    (job, token): (JobId, Token),
    holder: WorkerName,
    took_over: Option<Token>,
    reason: GrantReason,
    out: &mut Judgement,
) {
    let m = cx.models.table.row(job);
    single_valid_lease(
        cx,
        e,
        job,
        holder,
        token,
        reason == GrantReason::Operator,
        out,
    );
    // I8: replacing a running lease is a takeover, and a takeover records why.
    if m.state == Some(JobState::Running) && m.valid_until.is_some() {
        match (took_over, reason) {
            (Some(old), GrantReason::Expired | GrantReason::Operator) if old < token => {}
            _ => out.flag(
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
            out.flag(
                Invariant::RecordedTakeover,
                e,
                format!("{job} takeover from token {old} to a token {token} that is not higher"),
            );
        }
    }
}

/// I3 at a grant the coordinator answered without journaling it. Its reason and the epoch it
/// took over are the journal's to say: I8 is not judged, and the grant is held to the rule of an
/// ordinary claim (an operator's handoff it answered the same way ended the old lease first).
pub(crate) fn granted_said(
    cx: &Cx<'_>,
    e: &Ev,
    job: JobId,
    holder: WorkerName,
    token: Token,
    out: &mut Judgement,
) {
    single_valid_lease(cx, e, job, holder, token, false, out);
}

/// I3 at a grant: a higher token, no other valid lease (an operator's takeover aside), a job
/// that has not ended.
fn single_valid_lease(
    cx: &Cx<'_>,
    e: &Ev,
    job: JobId,
    holder: WorkerName,
    token: Token,
    operator: bool,
    out: &mut Judgement,
) {
    let m = cx.models.table.row(job);
    if token <= m.token {
        out.flag(
            Invariant::SingleValidLease,
            e,
            format!(
                "{job} granted token {token} to {holder}, not above the previous token {}",
                m.token
            ),
        );
    }
    if let Some(until) = m.valid_until {
        if until >= e.local && !operator {
            out.flag(
                Invariant::SingleValidLease,
                e,
                format!(
                    "{job} granted token {token} to {holder} while token {} of {} was valid for {} more",
                    m.token,
                    holder_name(m.holder),
                    fmt_ns(until - e.local + 1)
                ),
            );
        }
    }
    if m.state.is_some_and(JobState::is_terminal) {
        out.flag(
            Invariant::SingleValidLease,
            e,
            format!("{job} granted token {token} to {holder} after it ended"),
        );
    }
}

/// I4 at a renewal or a checkpoint: only the current, unexpired holder's lease is extended.
pub(crate) fn renewed(
    cx: &Cx<'_>,
    e: &Ev,
    job: JobId,
    worker: WorkerName,
    token: Token,
    out: &mut Judgement,
) {
    let Some(fault) = cx.models.table.renewal_fault(job, worker, token, e.local) else {
        return;
    };
    let why = match fault {
        RenewalFault::NotRunning(state) => format!("the job is {state:?}"),
        RenewalFault::NotHolder(holder) => format!("the holder is {}", holder_name(holder)),
        RenewalFault::StaleToken(current) => format!("the current token is {current}"),
        RenewalFault::Expired => "the lease had expired".to_string(),
    };
    out.flag(
        Invariant::NoStaleExtension,
        e,
        format!("coordinator extended {job} for {worker} with token {token}, but {why}"),
    );
}

/// I8 at a revocation: a new, higher epoch.
pub(crate) fn revoked(
    cx: &Cx<'_>,
    e: &Ev,
    job: JobId,
    token: Token,
    epoch: Token,
    action: OperatorAction,
    out: &mut Judgement,
) {
    if epoch <= token {
        out.flag(
            Invariant::RecordedTakeover,
            e,
            format!(
                "{job}: operator {action:?} ended token {token} without a higher epoch ({epoch})"
            ),
        );
    }
    // A reason: the operator's request this handler answers (F8), or the lease's end by the
    // coordinator's own clock. Anything else is the coordinator taking a live lease back by
    // itself, whatever its journal calls it.
    let asked = crate::handler::delivered_here(cx.run.trace, cx.i).is_some_and(|(from, msg)| {
        matches!(msg, Msg::Operator { job: j, .. } if j == job)
            && matches!(cx.role(from), Some(Role::Operator))
    });
    if asked || !cx.run.world.messages {
        return;
    }
    let m = cx.models.table.row(job);
    let live = m.token == token && m.valid_until.is_some_and(|u| u > e.local);
    if live {
        out.flag(
            Invariant::RecordedTakeover,
            e,
            format!(
                "{} ended {job}'s token {token} ({}'s lease, {} left by its own clock) as an operator's {action:?} that no operator asked for",
                cx.name(e.node),
                holder_name(m.holder),
                fmt_ns(m.valid_until.unwrap_or(0).saturating_sub(e.local))
            ),
        );
    }
}

/// A holder's name, or `nobody`.
pub(crate) fn holder_name(holder: Option<WorkerName>) -> String {
    holder.map_or("nobody".to_string(), |h| h.to_string())
}
