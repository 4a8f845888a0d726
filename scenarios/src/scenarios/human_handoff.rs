//! Handoff to a human (P15): the same path as any takeover. The operator revokes W1's lease and
//! hands the job to a human: a new epoch held by the human, the reason and the actor journaled,
//! the lease records kept as evidence. W1 learns it at its next heartbeat (refused) and goes
//! quiet; anything it still sends carries a stale fence. After a review the human resolves the
//! job under their own lease.

use super::story::Story;
use super::Stock;
use crate::plan::{Fault, FaultKind, MsgPattern, Trigger};
use crate::setup::Setup;
use leasesim_checkers::Hazard;
use leasesim_protocol::{JobId, MsgKind, OpId, OperatorAction, Step, Variant, SECOND_NS};

/// The `human-handoff` scenario.
pub const DEF: Stock = Stock {
    name: "human-handoff",
    story: "an operator hands W1's job to a human (new epoch, reason and actor journaled); W1 \
            learns at its next heartbeat and goes quiet; the human resolves the job",
    hazards: &[Hazard::OperatorAction, Hazard::HeartbeatRefused],
    unjudged: &[],
    build,
};

fn build(seed: u64, variant: Variant) -> Setup {
    let effect = |op| Step::Effect {
        op: OpId(op),
        receiver: 0,
    };
    let steps = [effect(1), Step::Tool, effect(2)];
    let mut s = Story::new("human-handoff", seed, variant, &[1, 2], steps, 1);
    s.start_worker(0, 0, 100);
    s.start_worker(1, 500, 2_000);
    // W1's call is long; the operator steps in while it runs.
    s.tool_step(1, 60 * SECOND_NS, 120 * SECOND_NS);
    let w1 = s.worker(0);
    let at = s.ms(2_000, 20_000);
    let review = s.ms(30_000, 300_000);
    let started = Trigger::sent(MsgPattern {
        from: Some(w1),
        kind: Some(MsgKind::ToolRequest),
        ..MsgPattern::default()
    });
    let operator = |action| FaultKind::Operator {
        job: JobId(0),
        action,
    };
    s.fault(Fault::new(
        started.after(at),
        operator(OperatorAction::HandToHuman),
    ));
    s.fault(Fault::new(
        started.after(at + review),
        operator(OperatorAction::HumanResolves),
    ));
    s.finish()
}
