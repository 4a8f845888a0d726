//! Retries (P11, P12 c): error classes, backoff, the attempt limit, terminal states with
//! reasons.
//!
//! Three jobs, two workers; the tool misbehaves on its first three calls of the lookup step.
//! The first fails transiently: the attempt reports a retryable failure, the coordinator
//! re-queues the job after a backoff (`retry_scheduled`) and a later attempt succeeds under the
//! same stable keys. The second fails validation: never retried, the job fails at once with its
//! reason (`job_failed Validation`). The third does the work but its answer is lost: the worker's
//! client timeout fires, the outcome is unknown, so it asks the tool for the call's status
//! (`tool_status_queried`) instead of guessing, and goes on with the answer the tool kept.

use super::story::Story;
use super::Stock;
use crate::plan::{Fault, FaultKind};
use crate::setup::Setup;
use leasesim_checkers::Hazard;
use leasesim_protocol::{OpId, Step, ToolFaultKind, Variant, MILLI_NS, SECOND_NS};

/// The `retries` scenario.
pub const DEF: Stock = Stock {
    name: "retries",
    story: "a transient tool failure is retried after a backoff, a validation error fails its \
            job at once, and a lost answer is recovered by asking the tool for the call's status",
    hazards: &[
        Hazard::RetryScheduled,
        Hazard::StatusQuery,
        Hazard::ToolFault,
        Hazard::DuplicateKeyAnswered,
    ],
    unjudged: &[],
    build,
};

/// The lookup's plan step.
const LOOKUP: u8 = 1;

fn build(seed: u64, variant: Variant) -> Setup {
    let effect = |op| Step::Effect {
        op: OpId(op),
        receiver: 0,
    };
    let steps = [effect(1), Step::Tool, effect(2)];
    let mut s = Story::new("retries", seed, variant, &[1, 2], steps, 3);
    s.start_worker(0, 0, 100);
    s.start_worker(1, 0, 100);
    let backoff = s.ms(500, 5_000);
    s.setup.classes[0].retry_backoff_ns = backoff;
    // Short client timeouts, so that a lost answer is noticed quickly.
    let timeout = s.ms(3_000, 8_000);
    for w in &mut s.setup.workers {
        w.config.tool_timeout_ns = timeout;
    }
    s.tool_step(LOOKUP, 50 * MILLI_NS, SECOND_NS);
    for (nth, kind) in [
        (1, ToolFaultKind::Transient),
        (2, ToolFaultKind::Permanent),
        (3, ToolFaultKind::AnswerLost),
    ] {
        s.fault(Fault::untriggered(FaultKind::Tool {
            worker: None,
            step: Some(LOOKUP),
            nth,
            kind,
            late_ns: 0,
        }));
    }
    s.finish()
}
