//! My payments service: the external system the workers' effects land on.
//!
//! Each job settles one invoice (the invoice number is the job's id). A worker asks to
//! *capture* under an idempotency key that names the operation, never the attempt, and carries
//! its fencing token. The service:
//!
//! 1. refuses a token lower than the highest it has seen for that invoice (if it checks fences
//!    at all; some real providers cannot),
//! 2. refuses operations its policy forbids right now, whoever asks,
//! 3. answers a key it has seen with the first result, capturing nothing again,
//! 4. otherwise captures.
//!
//! Every request it lets through raises the invoice's fence mark, including one answered from
//! the key store and a status question, so that the first contact of a new holder already shuts
//! the old one out. It never forgets a capture: its whole state is durable.

use leasesim_protocol::{
    EffectOutcome, EffectStatus, EntityId, Event, IdemKey, Msg, Nanos, OpId, Output, Peer,
    ReceiverMachine, Token,
};
use std::collections::{BTreeMap, VecDeque};

/// The payments service.
#[derive(Clone, Debug)]
pub struct Payments {
    checks_fence: bool,
    answers_status: bool,
    declined: Vec<OpId>,
    /// Highest fence let through, per invoice.
    fence_mark: BTreeMap<EntityId, Token>,
    /// Captures by idempotency key, with the fence each was made under (returned to anyone
    /// repeating the key).
    captures: BTreeMap<IdemKey, Token>,
    out: VecDeque<Output>,
}

impl Payments {
    /// A service that checks fences (or not) and answers status questions (or not).
    pub fn new(checks_fence: bool, answers_status: bool) -> Self {
        Payments {
            checks_fence,
            answers_status,
            declined: Vec::new(),
            fence_mark: BTreeMap::new(),
            captures: BTreeMap::new(),
            out: VecDeque::new(),
        }
    }

    /// The same service, declining these operations (its policy, not the lease).
    pub fn declining(mut self, ops: Vec<OpId>) -> Self {
        self.declined = ops;
        self
    }

    /// How many captures it made.
    pub fn captured(&self) -> usize {
        self.captures.len()
    }

    fn raise_mark(&mut self, invoice: EntityId, fence: Token) {
        if !self.checks_fence {
            return;
        }
        let mark = self.fence_mark.entry(invoice).or_insert(fence);
        if fence > *mark {
            *mark = fence;
        }
    }

    fn decide(&mut self, invoice: EntityId, key: IdemKey, fence: Token) -> EffectOutcome {
        if self.checks_fence {
            if let Some(&mark) = self.fence_mark.get(&invoice) {
                if fence < mark {
                    return EffectOutcome::StaleFence { mark };
                }
            }
        }
        if self.declined.contains(&key.op) {
            return EffectOutcome::Unauthorized;
        }
        self.raise_mark(invoice, fence);
        if let Some(&first_fence) = self.captures.get(&key) {
            return EffectOutcome::Duplicate { first_fence };
        }
        self.captures.insert(key, fence);
        EffectOutcome::Applied
    }
}

impl ReceiverMachine for Payments {
    fn handle_message(&mut self, _now: Nanos, from: u32, msg: Msg) {
        match msg {
            Msg::Effect {
                req,
                job,
                entity,
                key,
                fence,
            } => {
                let outcome = self.decide(entity, key, fence);
                let note = match outcome {
                    EffectOutcome::Applied => Event::EffectApplied { entity, key, fence },
                    EffectOutcome::Duplicate { .. } => {
                        Event::EffectDuplicate { entity, key, fence }
                    }
                    EffectOutcome::StaleFence { mark } => Event::EffectFenced {
                        entity,
                        key,
                        fence,
                        mark,
                    },
                    EffectOutcome::Unauthorized => Event::EffectUnauthorized { entity, key, fence },
                };
                self.out.push_back(Output::Journal(note));
                self.out.push_back(Output::Send {
                    to: Peer::Addr(from),
                    msg: Msg::EffectAck {
                        req,
                        job,
                        key,
                        outcome,
                    },
                });
            }
            Msg::EffectStatus {
                req,
                job,
                key,
                fence,
            } => {
                // A question from a new holder shuts the old one out just like a capture does.
                self.raise_mark(EntityId(key.job.0), fence);
                let status = if !self.answers_status {
                    EffectStatus::Unknown
                } else if self.captures.contains_key(&key) {
                    EffectStatus::Applied
                } else {
                    EffectStatus::NotApplied
                };
                self.out.push_back(Output::Send {
                    to: Peer::Addr(from),
                    msg: Msg::EffectStatusReply {
                        req,
                        job,
                        key,
                        status,
                    },
                });
            }
            // Not an API this service offers.
            _ => {}
        }
    }

    fn poll_output(&mut self) -> Option<Output> {
        self.out.pop_front()
    }
}
