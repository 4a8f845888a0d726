//! I7, liveness: once faults heal every job reaches a terminal state within its bound, and a
//! slow but healthy holder is not taken over.
//!
//! A needless takeover is an expiry takeover of an attempt whose worker was still running it,
//! with its clock in bound, and that no fault touched since the coordinator last confirmed its
//! lease beyond what the protocol must absorb (see `faults.rs`).

use crate::faults::Soft;
use crate::{fmt_ns, Cx, Ev, Judgement, Skipped};
use leasesim_protocol::{Invariant, JobId, JobState, Token};
use leasesim_sim::End;

/// I7 at an expiry takeover of (job, old): a holder that nothing disturbed since its last
/// renewal must never be taken over.
pub(crate) fn takeover(cx: &Cx<'_>, e: &Ev, job: JobId, old: Token, out: &mut Judgement) {
    let Some(lease) = cx.history.lease(job, old) else {
        return;
    };
    let Some(node) = lease.claimant_before(cx.i) else {
        // Nobody ever ran that grant (a lost reply left it dangling).
        return;
    };
    if cx.history.running(node, cx.i) != Some((job, old)) || cx.models.faults.clock_out(node) {
        return;
    }
    if lease.commit_sent_before(node, cx.i) {
        // Heartbeats stop once the conditional commit is out; its answer decides.
        return;
    }
    let m = cx.models.table.row(job);
    let since = m.confirmed_t;
    let hard = cx.models.faults.hard_since(node, cx.run.coordinator, since);
    // Within tolerance: at most one lost message on the link and extra latency within a
    // quarter of the lease (our configurations keep H <= L/3, so 2H + L/4 < L).
    let (mut drops, mut delay) = (0usize, 0u64);
    for s in cx.models.faults.soft_since(node, since) {
        match s {
            Soft::Drop => drops += 1,
            Soft::Delay(d) => delay = delay.max(d),
        }
    }
    let touched = hard || drops > 1 || delay > m.lease_ns / 4;
    if !touched {
        let who = cx.name(node);
        out.flag(
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

/// I7 when a job ends: within its bound.
pub(crate) fn ended(cx: &Cx<'_>, e: &Ev, job: JobId, out: &mut Judgement) {
    if let Some(deadline) = cx.run.world.liveness_deadline_ns {
        if e.t > deadline {
            out.flag(
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

/// I7 at the end of the trace: every job ended, unless the run ended early and within bound.
pub(crate) fn finish(cx: &Cx<'_>, out: &mut Judgement) {
    let Some(deadline) = cx.run.world.liveness_deadline_ns else {
        return;
    };
    let world = cx.run.world;
    let open: Vec<JobId> = (0..world.jobs as u32)
        .map(JobId)
        .filter(|&j| {
            let m = cx.models.table.row(j);
            !m.state.is_some_and(JobState::is_terminal) && !m.maybe_ended
        })
        .collect();
    if !open.is_empty() && matches!(world.end, End::ProcessFault | End::TimeReversed) {
        // A machine broke (a store that failed) or the engine did: the run did not go on long
        // enough to say whether its jobs would have ended; its verdict is that error.
        out.skip(Skipped {
            invariant: Invariant::Liveness,
            judgement: "completion",
            node: cx.run.coordinator,
            from_ns: world.end_ns,
            cause: "the run ended on a machine or engine error",
            reason: format!(
                "completion (I7) not judged: the run ended ({:?}) at {} with {} job(s) open",
                world.end,
                fmt_ns(world.end_ns),
                open.len()
            ),
        });
        return;
    }
    if !open.is_empty() && (world.end_ns >= deadline || world.end != End::Done) {
        let list: Vec<String> = open.iter().take(8).map(|j| j.to_string()).collect();
        out.flag_at(
            Invariant::Liveness,
            world.end_ns,
            cx.run.coordinator,
            format!(
                "{} job(s) never ended after the faults healed ({}{}); bound {}, run ended ({:?}) at {}",
                open.len(),
                list.join(", "),
                if open.len() > 8 { ", ..." } else { "" },
                fmt_ns(deadline),
                world.end,
                fmt_ns(world.end_ns)
            ),
        );
    }
}
