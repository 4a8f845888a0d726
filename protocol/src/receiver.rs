//! An effect receiver: an external system (payments, tickets) that accepts or refuses side
//! effects. It remembers the highest fence admitted per entity and refuses lower ones (P9), and
//! answers a repeated idempotency key with the first result, applying nothing (P10).

use crate::outbox::{Outbox, KEPT_MAX};
use crate::types::*;
use crate::variant::Switches;
use leasesim_sorted::SortedMap;

/// The receiver state machine. Its whole state is durable: an external system does not forget
/// what it applied.
#[derive(Clone, Debug)]
pub struct Receiver {
    /// Whether this receiver can check fences at all. Some real receivers cannot; then safety
    /// rests on stable keys (SPEC I2).
    supports_fence: bool,
    /// Whether it answers status queries (P12 c); one that cannot answers `Unknown`.
    supports_status: bool,
    /// Commit-time authorization (P16): operations its policy refuses now, whoever asks.
    refused_ops: Vec<OpId>,
    switches: Switches,
    marks: SortedMap<EntityId, Token>,
    applied: SortedMap<IdemKey, Token>,
    out: Outbox,
}

impl Receiver {
    /// A receiver; `supports_fence` says whether it checks the execution fence.
    pub fn new(supports_fence: bool, switches: Switches) -> Self {
        Receiver {
            supports_fence,
            supports_status: true,
            refused_ops: Vec::new(),
            switches,
            marks: SortedMap::with_capacity(0),
            applied: SortedMap::with_capacity(0),
            out: Outbox::default(),
        }
    }

    /// Makes this receiver what [`Receiver::new`] makes, keeping the storage its stores grew (a
    /// host that runs many runs on one thread builds no receiver again).
    pub fn rebuild(&mut self, supports_fence: bool, switches: Switches) {
        // Every field is named, so that a field added later cannot be forgotten here.
        let Receiver {
            supports_fence: own_fence,
            supports_status,
            refused_ops,
            switches: own_switches,
            marks,
            applied,
            out,
        } = self;
        *own_fence = supports_fence;
        *supports_status = true;
        refused_ops.clear();
        *own_switches = switches;
        marks.clear();
        marks.shrink_to(KEPT_MAX);
        applied.clear();
        applied.shrink_to(KEPT_MAX);
        out.clear_within_bound();
    }

    /// The same receiver, answering status queries or not.
    pub fn with_status(mut self, supports_status: bool) -> Self {
        self.supports_status = supports_status;
        self
    }

    /// The same receiver, with a policy refusing these operations (P16).
    pub fn with_refused_ops(mut self, ops: Vec<OpId>) -> Self {
        self.refused_ops = ops;
        self
    }

    /// Whether this receiver checks fences.
    pub fn supports_fence(&self) -> bool {
        self.supports_fence
    }

    /// The highest admitted fence for an entity.
    pub fn mark(&self, entity: EntityId) -> Option<Token> {
        self.marks.get(&entity).copied()
    }

    /// The next output, if any.
    pub fn poll_output(&mut self) -> Option<Output> {
        self.out.pop()
    }

    /// Handles one effect request or status query; anything else is ignored.
    pub fn handle_message(&mut self, _now: Nanos, from: u32, msg: Msg) {
        if let Msg::EffectStatus {
            req,
            job,
            key,
            fence,
        } = msg
        {
            // P9: the question raises the mark too (only a fencing receiver keeps one).
            if self.supports_fence && !self.switches.receiver_ignores_fence {
                let entity = EntityId(key.job.0);
                let mark = self.marks.get_or_insert(entity, fence);
                *mark = (*mark).max(fence);
            }
            let status = if !self.supports_status {
                EffectStatus::Unknown
            } else if self.applied.contains_key(&key) {
                EffectStatus::Applied
            } else {
                EffectStatus::NotApplied
            };
            self.out.push(Output::Send {
                to: Peer::Addr(from),
                msg: Msg::EffectStatusReply {
                    req,
                    job,
                    key,
                    status,
                },
            });
            return;
        }
        let Msg::Effect {
            req,
            job,
            entity,
            key,
            fence,
        } = msg
        else {
            return;
        };
        let outcome = self.admit(entity, key, fence);
        self.out.push(Output::Journal(match outcome {
            EffectOutcome::Applied => Event::EffectApplied { entity, key, fence },
            EffectOutcome::Duplicate { .. } => Event::EffectDuplicate { entity, key, fence },
            EffectOutcome::StaleFence { mark } => Event::EffectFenced {
                entity,
                key,
                fence,
                mark,
            },
            EffectOutcome::Unauthorized => Event::EffectUnauthorized { entity, key, fence },
        }));
        self.out.push(Output::Send {
            to: Peer::Addr(from),
            msg: Msg::EffectAck {
                req,
                job,
                key,
                outcome,
            },
        });
    }

    fn admit(&mut self, entity: EntityId, key: IdemKey, fence: Token) -> EffectOutcome {
        let checks_fence = self.supports_fence && !self.switches.receiver_ignores_fence;
        // One search of each table serves its read and its write.
        let mark_at = self.marks.search(&entity);
        if checks_fence {
            if let Ok(i) = mark_at {
                // P9: a lower fence than the highest admitted for the entity is refused.
                let mark = *self.marks.value_at(i);
                if fence < mark {
                    return EffectOutcome::StaleFence { mark };
                }
            }
        }
        // P16: the policy refuses this concrete effect now, whoever holds the lease; told apart
        // from a lease refusal (the coordinator's) and an admission refusal (the claim's).
        if self.refused_ops.contains(&key.op) {
            return EffectOutcome::Unauthorized;
        }
        // P9: raise the mark on every admitted request, also one answered from the idempotency
        // store, so that a successor's first contact already fences off its predecessor.
        match mark_at {
            Ok(i) => {
                let mark = self.marks.value_at_mut(i);
                *mark = (*mark).max(fence);
            }
            Err(i) => self.marks.insert_at(i, entity, fence),
        }
        // P10: a repeated key returns the first result and applies nothing.
        match self.applied.search(&key) {
            Ok(i) => {
                return EffectOutcome::Duplicate {
                    first_fence: *self.applied.value_at(i),
                }
            }
            Err(i) => self.applied.insert_at(i, key, fence),
        }
        EffectOutcome::Applied
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(op: u8) -> IdemKey {
        IdemKey {
            job: JobId(0),
            op: OpId(op),
            salt: 0,
        }
    }

    #[test]
    fn a_rebuilt_receiver_is_a_new_one() {
        // A receiver with marks, keys, a refusal policy and an answer waiting, rebuilt: nothing
        // of its run may remain.
        let mut r = Receiver::new(true, Switches::default())
            .with_status(false)
            .with_refused_ops(vec![OpId(3)]);
        send(&mut r, 1, 4);
        r.handle_message(
            0,
            9,
            Msg::Effect {
                req: 2,
                job: JobId(0),
                entity: EntityId(5),
                key: key(2),
                fence: Token(5),
            },
        );
        let switches = crate::Variant::UnconditionalCommit.switches();
        r.rebuild(false, switches);
        let fresh = Receiver::new(false, switches);
        assert_eq!(format!("{r:?}"), format!("{fresh:?}"));
    }

    fn send(r: &mut Receiver, op: u8, fence: u64) -> EffectOutcome {
        r.handle_message(
            0,
            9,
            Msg::Effect {
                req: 1,
                job: JobId(0),
                entity: EntityId(5),
                key: key(op),
                fence: Token(fence),
            },
        );
        std::iter::from_fn(|| r.poll_output())
            .find_map(|o| match o {
                Output::Send {
                    msg: Msg::EffectAck { outcome, .. },
                    to: Peer::Addr(9),
                } => Some(outcome),
                _ => None,
            })
            .expect("an ack to the sender")
    }

    #[test]
    fn repeated_key_returns_first_result_and_applies_nothing_p10() {
        let mut r = Receiver::new(true, Switches::default());
        assert_eq!(send(&mut r, 1, 41), EffectOutcome::Applied);
        assert_eq!(
            send(&mut r, 1, 41),
            EffectOutcome::Duplicate {
                first_fence: Token(41)
            }
        );
    }

    #[test]
    fn lower_fence_is_refused_after_a_duplicate_raised_the_mark_p9() {
        let mut r = Receiver::new(true, Switches::default());
        assert_eq!(send(&mut r, 1, 41), EffectOutcome::Applied);
        // The successor's first contact is a repeated key, yet it raises the mark to 42...
        assert!(matches!(
            send(&mut r, 1, 42),
            EffectOutcome::Duplicate { .. }
        ));
        assert_eq!(r.mark(EntityId(5)), Some(Token(42)));
        // ...so the predecessor's late second effect is fenced off (Kleppmann's 33 and 34).
        assert_eq!(
            send(&mut r, 2, 41),
            EffectOutcome::StaleFence { mark: Token(42) }
        );
        assert_eq!(send(&mut r, 2, 42), EffectOutcome::Applied);
    }

    #[test]
    fn receiver_ignoring_fences_accepts_the_stale_effect_v3() {
        let mut r = Receiver::new(
            true,
            Switches {
                receiver_ignores_fence: true,
                ..Switches::default()
            },
        );
        send(&mut r, 1, 42);
        assert_eq!(send(&mut r, 2, 41), EffectOutcome::Applied);
    }

    #[test]
    fn receiver_without_fence_support_relies_on_keys_only() {
        let mut r = Receiver::new(false, Switches::default());
        send(&mut r, 1, 42);
        assert_eq!(send(&mut r, 2, 41), EffectOutcome::Applied);
        assert!(matches!(
            send(&mut r, 2, 43),
            EffectOutcome::Duplicate { .. }
        ));
    }
}
