//! I5, the quiescent holder: a holder in jeopardy or after loss starts no external effect and
//! claims no success; and, while its clock stays within the configured drift bound, it never
//! acts outside the coordinator's grant (judged at each moment it acts, in true time) and never
//! believes it may (judged when it states its deadline). A holder whose clock left its bound is
//! not judged by the belief check (the verdict lists it as skipped); one acting before it
//! learned of an operator's revocation reached a hazard (P15), not a violation.
//!
//! An effect is judged from the `Effect` message and what the holder's run shows around it:
//! the jeopardy it journaled elsewhere, a loss it learned, every refusal of its lease delivered
//! to it. A journal note of the effect can only add a finding (its `in_jeopardy`): a note that
//! says "not in jeopardy" never outweighs the jeopardy the holder journaled before it.

use crate::hazard::Hazard;
use crate::table::{coordinator_true, expiry_true};
use crate::wire::request_answered_here;
use crate::{fmt_ns, Cx, Ev, Judgement, Skipped};
use leasesim_protocol::{IdemKey, Invariant, JobId, Token};
use leasesim_sim::NodeId;

/// I5 at an effect a holder started, as it journaled it: the note can only add a finding
/// (its own `in_jeopardy`), never take one away; everything an unjournaled effect is judged
/// by is judged here too.
/// Inlined into the walk's arm for its note, like the other checkers of frequent notes.
#[inline(always)]
pub(crate) fn effect_started(
    cx: &Cx<'_>,
    e: &Ev,
    (job, token): (JobId, Token),
    key: IdemKey,
    in_jeopardy: bool,
    told_lost: bool,
    out: &mut Judgement,
) {
    if !in_jeopardy {
        return effect_sent(cx, e, (job, token), key, told_lost, out);
    }
    out.flag(
        Invariant::QuiescentHolder,
        e,
        format!(
            "{} started {} with token {token} while in jeopardy",
            cx.name(e.node),
            cx.key(key)
        ),
    );
}

/// I5 at an effect a holder sent without journaling it: its journal's jeopardy, if it keeps
/// one, and every refusal of the lease it was told of still count.
pub(crate) fn effect_sent(
    cx: &Cx<'_>,
    e: &Ev,
    (job, token): (JobId, Token),
    key: IdemKey,
    told_lost: bool,
    out: &mut Judgement,
) {
    let in_jeopardy = cx.history.lease(job, token).is_some_and(|l| {
        l.attempts()
            .filter(|a| a.node() == e.node)
            .last()
            .is_some_and(|a| {
                a.jeopardy()
                    .any(|s| s.from < cx.i && s.to.is_none_or(|to| to > cx.i))
            })
    });
    let why = if in_jeopardy {
        "while in jeopardy (as it journaled)"
    } else if told_lost {
        "after it was told the lease was lost"
    } else {
        return acted(cx, e, job, token, key, out);
    };
    out.flag(
        Invariant::QuiescentHolder,
        e,
        format!(
            "{} sent {} with token {token} {why}",
            cx.name(e.node),
            cx.key(key)
        ),
    );
}

/// I5 at an effect, whatever told the checkers of it: not after the holder learned the loss,
/// and, while its clock keeps its bound, never outside the coordinator's grant in true time.
fn acted(cx: &Cx<'_>, e: &Ev, job: JobId, token: Token, key: IdemKey, out: &mut Judgement) {
    // Texts are built only for a finding: this runs for every effect of every run.
    let texts = || (cx.name(e.node).to_string(), cx.key(key));
    let lease = cx.history.lease(job, token);
    if lease.is_some_and(|l| l.loss_known_before(e.node, cx.i)) {
        let (who, key_text) = texts();
        out.flag(
            Invariant::QuiescentHolder,
            e,
            format!(
                "{who} started {key_text} with token {token} after it learned the lease was lost"
            ),
        );
        return;
    }
    // A clock out of its bound voids the judgement below: what it made the holder do is then
    // shown as a hazard, the consequence of the broken assumption, never as a finding.
    let out_of_bound = cx.models.faults.clock_out(e.node);
    let m = cx.models.table.row(job);
    // An operator's action the coordinator answered without journaling it ends the lease
    // without a new token; the table keeps the token it ended.
    let revoked_here = m.revoked.is_some_and(|r| r >= token);
    let what = if m.token != token {
        let revoked_since = revoked_here
            || cx.history.job(job).is_some_and(|j| {
                j.leases()
                    .any(|l| l.token() >= token && l.revoked_before(cx.i))
            });
        if revoked_since {
            // The operator ended it; the holder learns at its next heartbeat (P15).
            out.hit(Hazard::ActedAfterRevoke);
            return;
        }
        format!(
            "believing it held token {token} while token {} had been granted",
            m.token
        )
    } else if expiry_true(&cx.run.world.coordinator_clock, m).is_none_or(|t| t <= e.t) {
        if revoked_here {
            out.hit(Hazard::ActedAfterRevoke);
            return;
        }
        format!("with token {token} after the coordinator's lease had expired")
    } else {
        return;
    };
    if out_of_bound {
        out.hit(Hazard::OutOfBoundEffect);
        return;
    }
    let (who, key_text) = texts();
    out.flag(
        Invariant::QuiescentHolder,
        e,
        format!("{who} started {key_text} {what}"),
    );
}

/// I5 when a holder states its deadline, at its claim or at an acknowledged heartbeat: mapped to
/// true time through its clock, the deadline must not pass the coordinator's grant for that
/// token (`issued`, the latest expiry the coordinator set for it, on its own clock). Judged
/// when the belief is formed, whether the holder acts on it or not. Counts the hazards of the
/// reply it rests on, and returns whether that reply came late.
/// Inlined into the walk's arms for claims and heartbeats answered.
#[inline(always)]
pub(crate) fn stated(
    cx: &Cx<'_>,
    e: &Ev,
    (job, token): (JobId, Token),
    deadline: u64,
    claim: bool,
    issued: Option<u64>,
    out: &mut Judgement,
) -> bool {
    let node = e.node;
    let sent = request_answered_here(cx.run.trace, cx.history, cx.i, job, token);
    let late = sent.is_some_and(|(t, _)| e.t - t > 2 * cx.run.world.latency_max_ns);
    if late {
        out.hit(Hazard::LateLeaseReply);
    }
    let out_of_bound = cx.models.faults.clock_out(node);
    let Some(drift_ppm) = cx.models.faults.rate(cx.run.world, node) else {
        if !out_of_bound {
            clock_unknown(cx, node, out);
        }
        return late;
    };
    let Some(until) = issued else {
        // No grant of that token crossed the network: nothing to hold the belief against.
        return late;
    };
    let expiry = coordinator_true(&cx.run.world.coordinator_clock, until);
    // A deadline the clock already reads is no belief at all: the holder is in jeopardy.
    let believed = |d: u64| (d > e.local).then(|| reads_at(e.t, e.local, drift_ppm, d));
    if out_of_bound {
        // The judgement is void for this clock; what its rate made of the deadline is shown.
        if believed(deadline).is_some_and(|t| t > expiry) {
            out.hit(Hazard::OutOfBoundDeadline);
        }
        return late;
    }
    if let Some(t_deadline) = believed(deadline).filter(|&t| t > expiry) {
        out.flag(
            Invariant::QuiescentHolder,
            e,
            format!(
                "{} stated at its {} a deadline for {job} with token {token} that runs to {}, past the coordinator's grant, which ends at {} ({} later)",
                cx.name(node),
                if claim { "claim" } else { "renewal" },
                fmt_ns(t_deadline),
                fmt_ns(expiry),
                fmt_ns(t_deadline - expiry)
            ),
        );
    }
    // The same deadline measured from the reply's arrival instead of the request's send: where
    // it would pass the grant, a holder that measures it so shows its bug here.
    if let Some((_, sent_local)) = sent {
        let from_arrival = deadline.saturating_add(e.local.saturating_sub(sent_local));
        if believed(from_arrival).is_some_and(|t| t > expiry) {
            out.hit(Hazard::LeaseReplyPastMargin);
        }
    }
    late
}

/// A holder's stated deadlines not judged: the checkers know nothing of its clock.
fn clock_unknown(cx: &Cx<'_>, node: NodeId, out: &mut Judgement) {
    out.skip(Skipped {
        invariant: Invariant::QuiescentHolder,
        judgement: "belief-within-grant",
        node,
        from_ns: 0,
        cause: "its clock is not known to the checkers",
        reason: format!(
            "belief-within-grant (I5) not judged at the deadlines {} stated: its clock is not known to the checkers",
            cx.name(node)
        ),
    });
}

/// The first true time at which a clock that reads `local` at true time `t` and runs at
/// `1 + drift_ppm/1e6` from then on reads `target` (above `local`): the inverse of
/// `Clock::local` from that anchor, `t + ceil((target - local) * 1e6 / (1e6 + drift))`, in 64 bits
/// when the interval allows (a deadline is a lease away, not days).
fn reads_at(t: u64, local: u64, drift_ppm: i32, target: u64) -> u64 {
    const PPM: u64 = 1_000_000;
    let rate = (PPM as i64 + drift_ppm as i64).max(1) as u64;
    let dl = target - local;
    let dt = match dl.checked_mul(PPM) {
        Some(scaled) => scaled.div_ceil(rate),
        None => (dl as u128 * PPM as u128).div_ceil(rate as u128) as u64,
    };
    t.saturating_add(dt)
}

/// A holder entered jeopardy: a hazard when its last confirmation came in a late reply and it
/// still has work (no commit sent).
pub(crate) fn jeopardy_entered(
    cx: &Cx<'_>,
    e: &Ev,
    job: JobId,
    token: Token,
    late: bool,
    out: &mut Judgement,
) {
    let committing = || {
        cx.history
            .lease(job, token)
            .is_some_and(|l| l.commit_sent_before(e.node, cx.i))
    };
    if late && !committing() {
        out.hit(Hazard::SilenceAfterLateReply);
    }
}

/// I5 at a success claim: only after the coordinator accepted the holder's result.
pub(crate) fn success_claimed(cx: &Cx<'_>, e: &Ev, job: JobId, token: Token, out: &mut Judgement) {
    let Some(name) = cx.worker_name(e.node) else {
        return;
    };
    let accepted = cx
        .history
        .lease(job, token)
        .is_some_and(|l| l.accepted_before(name, cx.i))
        || cx.models.table.accepted_by_message(job, token, name);
    if !accepted {
        out.flag(
            Invariant::QuiescentHolder,
            e,
            format!(
                "{} claimed success for {job} with token {token} that the coordinator never accepted",
                cx.name(e.node)
            ),
        );
    }
}
