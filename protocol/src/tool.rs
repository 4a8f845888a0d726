//! The tool: an external call whose duration and answer the scenario decides. The tool keeps
//! no lease state and knows nothing of fences: it is the "vendor API" that may answer late.

use crate::outbox::{Outbox, KEPT_MAX};
use crate::types::*;
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// How the tool answers one call.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ToolCall {
    /// How long the call takes, on the tool's clock.
    pub duration_ns: Nanos,
    /// What it answers.
    pub answer: ToolAnswer,
    /// A fault the outside world imposes on this call (F7); `Hang` never answers and
    /// `AnswerLost` does the work but sends nothing. The others are already reflected in
    /// `duration_ns` and `answer` and are only journaled.
    pub fault: Option<ToolFaultKind>,
}

/// A pending answer.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
struct Pending {
    due: Nanos,
    to: u32,
    msg: Msg,
    lost: bool,
}

/// The tool state machine. Which call gets which [`ToolCall`] is decided by the host (the
/// scenario), since the tool models the outside world.
#[derive(Clone, Debug, Default)]
pub struct Tool {
    pending: Vec<Pending>,
    /// Calls it finished (answered or not), newest last, for status queries (P12 c).
    done: VecDeque<(u32, u64, ToolAnswer)>,
    out: Outbox,
}

/// Bound on finished calls the tool remembers for status queries.
pub const TOOL_DONE_MAX: usize = 4096;

/// Bound on calls in flight at the tool; beyond it a call is answered with a transient failure
/// at once (an overloaded vendor), so the queue cannot grow without limit.
pub const TOOL_PENDING_MAX: usize = 1024;

impl Tool {
    /// An idle tool.
    pub fn new() -> Self {
        Self::default()
    }

    /// Makes this tool an idle one, as [`Tool::new`] would, keeping its storage for another
    /// run: room for at most 4,096 entries per list, so a runaway run's memory is not kept.
    pub fn reset(&mut self) {
        // Every field, so that a field added later cannot be left out.
        let Tool { pending, done, out } = self;
        pending.clear();
        pending.shrink_to(KEPT_MAX);
        done.clear();
        done.shrink_to(KEPT_MAX);
        out.clear_within_bound();
    }

    /// The next output, if any.
    pub fn poll_output(&mut self) -> Option<Output> {
        self.out.pop()
    }

    /// When the tool next needs to be woken.
    pub fn poll_timeout(&self) -> Option<Nanos> {
        self.pending.iter().map(|p| p.due).min()
    }

    /// Handles a request with the behaviour the host chose for it.
    pub fn handle_request(&mut self, now: Nanos, from: u32, msg: Msg, call: ToolCall) {
        let Msg::ToolRequest { req, job, step, .. } = msg else {
            return;
        };
        if let Some(fault) = call.fault {
            self.out.push(Output::Journal(Event::ToolFaulted {
                job,
                request: req,
                fault,
            }));
            if fault == ToolFaultKind::Hang {
                return;
            }
        }
        let (due, answer) = if self.pending.len() >= TOOL_PENDING_MAX {
            (now, ToolAnswer::Failure { transient: true })
        } else {
            (now + call.duration_ns, call.answer)
        };
        self.pending.push(Pending {
            due,
            to: from,
            msg: Msg::ToolResponse {
                req,
                job,
                step,
                answer,
            },
            lost: call.fault == Some(ToolFaultKind::AnswerLost),
        });
    }

    /// Answers a status query about an earlier request at once (P12 c): its answer if it
    /// finished (even one whose answer was lost), `Running`, or `NoRecord`.
    pub fn handle_status(&mut self, from: u32, msg: Msg) {
        let Msg::ToolStatus {
            job, request, step, ..
        } = msg
        else {
            return;
        };
        let running = self.pending.iter().any(|p| {
            p.to == from && matches!(p.msg, Msg::ToolResponse { req, .. } if req == request)
        });
        let answer = if running {
            ToolAnswer::Running
        } else {
            self.done
                .iter()
                .rev()
                .find(|(to, req, _)| *to == from && *req == request)
                .map_or(ToolAnswer::NoRecord, |(_, _, a)| *a)
        };
        self.out.push(Output::Send {
            to: Peer::Addr(from),
            msg: Msg::ToolResponse {
                req: request,
                job,
                step,
                answer,
            },
        });
    }

    /// Sends every answer that is due. A spurious call is a no-op.
    pub fn handle_timeout(&mut self, now: Nanos) {
        // Answer in due order; ties keep arrival order, so the outcome is deterministic. The
        // earliest due call (the first of equals) is taken out one at a time, without a list of
        // its own: usually only one is due.
        loop {
            let mut first: Option<usize> = None;
            for (i, p) in self.pending.iter().enumerate() {
                if p.due <= now && first.is_none_or(|f| p.due < self.pending[f].due) {
                    first = Some(i);
                }
            }
            let Some(i) = first else {
                break;
            };
            let p = self.pending.remove(i);
            if let Msg::ToolResponse { req, answer, .. } = p.msg {
                if self.done.len() == TOOL_DONE_MAX {
                    self.done.pop_front();
                }
                self.done.push_back((p.to, req, answer));
            }
            if p.lost {
                // The work is done; the answer never leaves.
                continue;
            }
            self.out.push(Output::Send {
                to: Peer::Addr(p.to),
                msg: p.msg,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_after_its_duration_in_due_order() {
        let mut t = Tool::new();
        let req = |req| Msg::ToolRequest {
            req,
            job: JobId(0),
            token: Token(1),
            step: 0,
        };
        let ok = ToolAnswer::Success { result: 1 };
        let call = |duration_ns, fault| ToolCall {
            duration_ns,
            answer: ok,
            fault,
        };
        t.handle_request(0, 1, req(1), call(50, None));
        t.handle_request(0, 2, req(2), call(20, None));
        t.handle_request(0, 3, req(3), call(10, Some(ToolFaultKind::Hang)));
        t.handle_request(0, 4, req(4), call(10, Some(ToolFaultKind::AnswerLost)));
        let faults: Vec<Output> = std::iter::from_fn(|| t.poll_output()).collect();
        assert_eq!(faults.len(), 2, "both faults are journaled at once");
        assert_eq!(t.poll_timeout(), Some(10));
        t.handle_timeout(19);
        assert!(t.poll_output().is_none(), "a lost answer is never sent");
        t.handle_timeout(60);
        let order: Vec<u32> = std::iter::from_fn(|| t.poll_output())
            .map(|o| match o {
                Output::Send {
                    to: Peer::Addr(a), ..
                } => a,
                other => panic!("unexpected {other:?}"),
            })
            .collect();
        assert_eq!(order, vec![2, 1]);
        assert_eq!(t.poll_timeout(), None);
    }

    /// A tool reset in the middle of its work (answers pending, outputs not taken, calls
    /// remembered) is an idle one, as a new tool is.
    #[test]
    fn a_reset_tool_is_a_new_one() {
        let mut t = Tool::new();
        let ok = ToolAnswer::Success { result: 7 };
        for req in 0..3 {
            let msg = Msg::ToolRequest {
                req,
                job: JobId(0),
                token: Token(1),
                step: 0,
            };
            let call = ToolCall {
                duration_ns: 10 * (req + 1),
                answer: ok,
                fault: (req == 2).then_some(ToolFaultKind::Late),
            };
            t.handle_request(0, 1, msg, call);
        }
        t.handle_timeout(15);
        assert!(t.poll_timeout().is_some() && !t.done.is_empty() && !t.pending.is_empty());
        t.reset();
        assert_eq!(format!("{t:?}"), format!("{:?}", Tool::new()));
        assert_eq!(t.poll_output(), None);
        assert_eq!(t.poll_timeout(), None);
    }
}
