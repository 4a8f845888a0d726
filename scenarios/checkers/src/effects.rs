//! I2, no double side effect: each idempotency key takes effect at most once (and one operation
//! meaning once, whatever key it came under), and a receiver that checks fences never admits a
//! fence lower than one it already admitted for the entity. For a receiver without fences an
//! effect from a superseded holder is a hazard, not a violation (Kleppmann); an effect issued
//! while two attempts of its job overlap must then carry a key stable across attempts.

use crate::hazard::Hazard;
use crate::{Cx, Ev, Judgement, Role};
use leasesim_protocol::sorted::{SortedMap, SortedSet};
use leasesim_protocol::{EntityId, IdemKey, Invariant, JobId, Token};
use leasesim_sim::NodeId;

/// What the receivers admitted so far.
#[derive(Default)]
pub(crate) struct Effects {
    /// Per (receiver, entity): highest fence admitted.
    marks: SortedMap<(NodeId, EntityId), Token>,
    /// Per (receiver, key): applied already.
    applied: SortedSet<(NodeId, IdemKey)>,
    /// Per receiver: operation meanings (keys without their salt) applied already.
    meanings: SortedSet<(NodeId, IdemKey)>,
}

impl Effects {
    /// Forgets every effect admitted, keeping the storage for the next run.
    pub(crate) fn clear(&mut self) {
        self.marks.clear();
        self.applied.clear();
        self.meanings.clear();
    }

    /// I2 at a receiver that admitted an effect: `applied` it, or answered a repeated key.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn admitted(
        &mut self,
        cx: &Cx<'_>,
        e: &Ev,
        entity: EntityId,
        key: IdemKey,
        fence: Token,
        applied: bool,
        out: &mut Judgement,
    ) {
        let receiver = e.node;
        let supports_fence = matches!(
            cx.role(receiver),
            Some(Role::Receiver {
                supports_fence: true,
                ..
            })
        );
        if let Some(&mark) = self.marks.get(&(receiver, entity)) {
            if fence < mark {
                if supports_fence {
                    out.flag(
                        Invariant::NoDoubleEffect,
                        e,
                        format!(
                            "{} accepted {} with fence {fence} after it had admitted fence {mark} for {entity}",
                            cx.name(receiver),
                            cx.key(key)
                        ),
                    );
                } else if applied {
                    // Kleppmann: without fence support no lease protocol prevents this; the
                    // stable key is what keeps it from doubling.
                    out.hit(Hazard::UnfencedStaleEffect);
                }
            }
        }
        let m = self.marks.get_or_insert_with((receiver, entity), || fence);
        *m = (*m).max(fence);
        if !applied {
            return;
        }
        // P10: one operation meaning takes effect once, whatever key it came under (a fresh key
        // per attempt defeats the store, V4).
        let meaning = IdemKey { salt: 0, ..key };
        if !self.meanings.insert((receiver, meaning)) && key != meaning {
            out.flag(
                Invariant::NoDoubleEffect,
                e,
                format!(
                    "{} applied operation {} again, under the fresh key {}",
                    cx.name(receiver),
                    cx.key(meaning),
                    cx.key(key)
                ),
            );
        }
        if !self.applied.insert((receiver, key)) {
            out.flag(
                Invariant::NoDoubleEffect,
                e,
                format!(
                    "{} applied {} a second time",
                    cx.name(receiver),
                    cx.key(key)
                ),
            );
        }
    }
}

/// Overlap accounting at an effect a holder started: issued while another attempt of its job
/// was running, it must go to a receiver with fences or carry a key stable across attempts.
pub(crate) fn started(
    cx: &Cx<'_>,
    e: &Ev,
    job: JobId,
    token: Token,
    receiver: u8,
    key: IdemKey,
    out: &mut Judgement,
) {
    // Another node runs the job under another token: a node whose last claim is of this job
    // holds an attempt of one of the job's leases, so only those nodes are asked, not every
    // claimant of the run.
    let overlapping = cx.history.job(job).is_some_and(|j| {
        j.leases().any(|l| {
            l.attempts().any(|a| {
                let n = a.node();
                n != e.node
                    && cx
                        .history
                        .running(n, cx.i)
                        .is_some_and(|(j, t)| j == job && t != token)
            })
        })
    });
    if !overlapping {
        return;
    }
    out.hit(Hazard::OverlapEffect);
    let fenced = cx.world.nodes.iter().any(
        |n| matches!(n.role, Role::Receiver { index, supports_fence: true } if index == receiver),
    );
    if !fenced && key.salt != 0 {
        out.flag(
            Invariant::NoDoubleEffect,
            e,
            format!(
                "{} issued {} while another attempt of {job} was running, to a receiver without fences and under a key of its own attempt",
                cx.name(e.node),
                cx.key(key)
            ),
        );
    }
}
