//! I2, no double side effect: each idempotency key takes effect at most once (and one operation
//! meaning once, whatever key it came under), and a receiver that checks fences never admits a
//! fence lower than one it already admitted for the entity. For a receiver without fences an
//! effect from a superseded holder is a hazard, not a violation (Kleppmann); an effect issued
//! while two attempts of its job overlap must then carry a key stable across attempts.

use crate::groups::Groups;
use crate::hazard::Hazard;
use crate::{Cx, Ev, Judgement, Role};
use leasesim_protocol::{EntityId, IdemKey, Invariant, JobId, OpId, Token};
use leasesim_sim::NodeId;

/// What the receivers admitted so far.
#[derive(Default)]
pub(crate) struct Effects {
    /// By entity: each receiver's highest fence admitted for it, (receiver, mark).
    marks: Groups<(NodeId, Token)>,
    /// By job: each key a receiver applied, (receiver, op, salt). A receiver applied an
    /// operation meaning (a key without its salt) once it applied any key of it.
    applied: Groups<(NodeId, OpId, u32)>,
}

impl Effects {
    /// Forgets every effect admitted, keeping the storage for the next run of `jobs` jobs.
    pub(crate) fn clear(&mut self, jobs: usize) {
        self.marks.clear();
        // A run's entities are about as many as its jobs.
        self.marks.expect(jobs);
        self.applied.clear();
        self.applied.lay_out(jobs);
    }

    /// I2 at a receiver that admitted an effect (its entity, key and fence): `applied` it, or
    /// answered a repeated key. Inlined into the walk's arms for the receivers' notes, as are
    /// the two checks: a call cost more than the check.
    #[inline(always)]
    pub(crate) fn admitted(
        &mut self,
        cx: &Cx<'_>,
        e: &Ev,
        (entity, key, fence): (EntityId, IdemKey, Token),
        applied: bool,
        out: &mut Judgement,
    ) {
        self.fenced(cx, e, (entity, key, fence), applied, out);
        if applied {
            self.applied_once(cx, e, key, out);
        }
    }

    /// An effect admitted with a fence below the receiver's mark for its entity: a finding at
    /// a receiver that checks fences, a hazard where one that does not applied it.
    #[inline(always)]
    fn fenced(
        &mut self,
        cx: &Cx<'_>,
        e: &Ev,
        (entity, key, fence): (EntityId, IdemKey, Token),
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
        match self.marks.find(entity.0, |&(r, _)| r == receiver) {
            Some(k) => {
                let mark = self.marks.get_mut(k);
                if fence < mark.1 {
                    if supports_fence {
                        out.flag(
                            Invariant::NoDoubleEffect,
                            e,
                            format!(
                                "{} accepted {} with fence {fence} after it had admitted fence {} for {entity}",
                                cx.name(receiver),
                                cx.key(key),
                                mark.1
                            ),
                        );
                    } else if applied {
                        // Kleppmann: without fence support no lease protocol prevents this;
                        // the stable key is what keeps it from doubling.
                        out.hit(Hazard::UnfencedStaleEffect);
                    }
                }
                mark.1 = mark.1.max(fence);
            }
            None => self.marks.push(entity.0, (receiver, fence)),
        }
    }

    /// An effect applied: P10, one operation meaning takes effect once.
    #[inline(always)]
    fn applied_once(&mut self, cx: &Cx<'_>, e: &Ev, key: IdemKey, out: &mut Judgement) {
        let receiver = e.node;
        // P10: one operation meaning takes effect once, whatever key it came under (a fresh key
        // per attempt defeats the store, V4).
        let (mut meaning_known, mut key_known) = (false, false);
        for &(r, op, salt) in self.applied.of(key.job.0) {
            if r == receiver && op == key.op {
                meaning_known = true;
                key_known |= salt == key.salt;
            }
        }
        let meaning = IdemKey { salt: 0, ..key };
        if meaning_known && key != meaning {
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
        if key_known {
            out.flag(
                Invariant::NoDoubleEffect,
                e,
                format!(
                    "{} applied {} a second time",
                    cx.name(receiver),
                    cx.key(key)
                ),
            );
        } else {
            self.applied.push(key.job.0, (receiver, key.op, key.salt));
        }
    }
}

/// Overlap accounting at an effect a holder started: issued while another attempt of its job
/// was running, it must go to a receiver with fences or carry a key stable across attempts.
/// Inlined into the walk's arm for `effect_started`, like the other checkers of frequent notes.
#[inline(always)]
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
    let fenced = cx.run.world.nodes.iter().any(
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
