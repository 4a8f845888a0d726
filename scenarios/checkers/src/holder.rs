//! I5, the quiescent holder: a holder in jeopardy or after loss starts no external effect and
//! claims no success; and, while its clock stays within the configured drift bound, it never
//! acts outside the coordinator's grant (judged at each moment it acts, in true time). A holder
//! whose clock left its bound is not judged by the belief check; one acting before it learned
//! of an operator's revocation reached a hazard (P15), not a violation.

use crate::hazard::Hazard;
use crate::table::expiry_true;
use crate::{Cx, Ev, Judgement};
use leasesim_protocol::{IdemKey, Invariant, JobId, Token};

/// I5 at an effect a holder started.
pub(crate) fn effect_started(
    cx: &Cx<'_>,
    e: &Ev,
    job: JobId,
    token: Token,
    key: IdemKey,
    in_jeopardy: bool,
    out: &mut Judgement,
) {
    // Texts are built only for a finding: this runs for every effect of every run.
    let texts = || (cx.name(e.node).to_string(), cx.key(key));
    if in_jeopardy {
        let (who, key_text) = texts();
        out.flag(
            Invariant::QuiescentHolder,
            e,
            format!("{who} started {key_text} with token {token} while in jeopardy"),
        );
        return;
    }
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
    if cx.faults.clock_out(e.node) {
        return;
    }
    let m = cx.table.row(job);
    if m.token != token {
        let revoked_since = cx.history.job(job).is_some_and(|j| {
            j.leases()
                .any(|l| l.token() >= token && l.revoked_before(cx.i))
        });
        if revoked_since {
            // The operator ended it; the holder learns at its next heartbeat (P15).
            out.hit(Hazard::ActedAfterRevoke);
            return;
        }
        let (who, key_text) = texts();
        out.flag(
            Invariant::QuiescentHolder,
            e,
            format!(
                "{who} started {key_text} believing it held token {token} while token {} had been granted",
                m.token
            ),
        );
        return;
    }
    if expiry_true(&cx.world.coordinator_clock, &m).is_none_or(|t| t <= e.t) {
        let (who, key_text) = texts();
        out.flag(
            Invariant::QuiescentHolder,
            e,
            format!("{who} started {key_text} with token {token} after the coordinator's lease had expired"),
        );
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
        .is_some_and(|l| l.accepted_before(name, cx.i));
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
