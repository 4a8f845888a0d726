//! I1: every accepted result was committed by the current token while its lease was valid by
//! the coordinator's clock; at most one accepted result per job. Judged at each acceptance
//! against the reference lease table as it stood just before.

use crate::leases::holder_name;
use crate::{Cx, Ev, Judgement};
use leasesim_protocol::{Invariant, JobId, Token, WorkerName};

/// I1 at an accepted result.
pub(crate) fn accepted(
    cx: &Cx<'_>,
    e: &Ev,
    job: JobId,
    worker: WorkerName,
    token: Token,
    out: &mut Judgement,
) {
    let m = cx.models.table.row(job);
    let mut problems = Vec::new();
    if m.token != token {
        problems.push(format!("token {} was current", m.token));
    } else if m.holder != Some(worker) {
        problems.push(format!("the holder was {}", holder_name(m.holder)));
    }
    if m.valid_until.is_none_or(|u| u <= e.local) {
        problems.push("the lease was not valid by the coordinator's clock".to_string());
    }
    if m.succeeded {
        problems.push("the job already had an accepted result".to_string());
    }
    if !problems.is_empty() {
        out.flag(
            Invariant::NoStaleCommit,
            e,
            format!(
                "coordinator accepted the result of {job} from {worker} with token {token}, but {}",
                problems.join(", and ")
            ),
        );
    }
}
