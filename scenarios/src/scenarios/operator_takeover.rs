//! Operator actions (F8; P15 takeover through the lease path, P4 "no row", P9 fencing, I8).
//!
//! Two slow jobs: W1 runs job 0 and W2 runs job 1, each a `create_case`, a long call (50 to
//! 100 s under steady heartbeats), an `update_case` and a short call. An operator first ends
//! W2's lease of job 1: in some seeds it cancels the job (terminal), in others it revokes the
//! lease and the job goes back to the queue. W2 learns it at its next heartbeat ("no row") and
//! stands down. The operator then hands W1's job 0 to the now idle W2: the coordinator ends
//! token 1 and grants token 2 with the reason recorded (I8), and W2 picks the job up on its next
//! claim and runs it from the start (its repeated `create_case` is answered from the store and
//! raises the receiver's mark to 2). W1 learns at its next heartbeat that it lost, and goes
//! quiet; a revoked job 1 is then claimed by W1 and completed.
//!
//! In some seeds the operator acts just as W1's long call ends: the tool's answer reaches W1
//! only after W2 picked the job up, so W1, which has not heard of it yet, sends its
//! `update_case` with token 1 (an act after the revocation, not a bug: it cannot know) and the
//! receiver fences it off; W1's heartbeat or commit that follows is refused.

use super::story::Story;
use super::Stock;
use crate::plan::{Fault, FaultKind, MsgAction, MsgPattern, Trigger};
use crate::setup::Setup;
use leasesim_checkers::Hazard;
use leasesim_protocol::{
    JobId, MsgKind, OpId, OperatorAction, Step, Token, Variant, WorkerName, MILLI_NS,
};

/// The `operator-takeover` scenario.
pub const DEF: Stock = Stock {
    name: "operator-takeover",
    story: "an operator cancels or revokes W2's job, then hands slow W1's job to W2 (higher \
            epoch); W1 learns at its next heartbeat and anything it still sends is refused",
    hazards: &[
        Hazard::OperatorAction,
        Hazard::HeartbeatRefused,
        Hazard::StaleFenceRejected,
        Hazard::ActedAfterRevoke,
    ],
    unjudged: &[],
    build,
};

const CREATE_CASE: OpId = OpId(1);
const UPDATE_CASE: OpId = OpId(2);
/// The long call's plan step.
const SLOW_STEP: u8 = 1;
/// The short call's plan step.
const SHORT_STEP: u8 = 3;

// Long: one story read top to bottom, its seed-drawn faults in the order they strike and draw.
fn build(seed: u64, variant: Variant) -> Setup {
    let effect = |op| Step::Effect { op, receiver: 0 };
    let steps = [
        effect(CREATE_CASE),
        Step::Tool,
        effect(UPDATE_CASE),
        Step::Tool,
    ];
    let mut s = Story::new("operator-takeover", seed, variant, &[1, 2], steps, 2);
    s.tool_step(SLOW_STEP, 50_000 * MILLI_NS, 100_000 * MILLI_NS);
    s.tool_step(SHORT_STEP, 100 * MILLI_NS, 2_000 * MILLI_NS);
    // W1 claims job 0, W2 job 1.
    s.start_worker(0, 0, 100);
    s.start_worker(1, 500, 1_500);
    // W2 checks often for work handed to it.
    s.setup.workers[1].config.claim_poll_ns = s.ms(400, 1_000);

    let (w1, w2, coord, tool) = (s.worker(0), s.worker(1), s.coordinator(), s.tool());
    let late_answer = s.r.chance(2, 5);
    // The end of W2's lease of job 1: 2 to 20 s into its long call, which lasts at least 50 s.
    let job1_action = if !late_answer && s.r.chance(1, 2) {
        OperatorAction::Revoke
    } else {
        // With W1's answer held until the handoff, a revoked job 1 would go straight back to
        // the idle W2 and keep it from picking the handoff up.
        OperatorAction::Cancel
    };
    let w2_granted = Trigger::delivered(s.msgs(Some(coord), Some(w2), MsgKind::ClaimGranted));
    let job1_at = w2_granted.after(s.ms(2_000, 20_000));
    s.fault(Fault::new(
        job1_at,
        FaultKind::Operator {
            job: JobId(1),
            action: job1_action,
        },
    ));
    let takeover = OperatorAction::Takeover { to: WorkerName(2) };
    if late_answer {
        // The operator acts as the tool answers W1; the answer reaches W1 only once W2 holds
        // token 2 and its `create_case` has reached the receiver (25 ms covers the flight).
        let w1_answer = MsgPattern {
            step: Some(SLOW_STEP),
            ..s.msgs(Some(tool), Some(w1), MsgKind::ToolResponse)
        };
        s.fault(Fault::new(
            Trigger::sent(w1_answer),
            FaultKind::Operator {
                job: JobId(0),
                action: takeover,
            },
        ));
        let handed = Trigger::delivered(MsgPattern {
            token: Some(Token(2)),
            ..s.msgs(Some(coord), Some(w2), MsgKind::ClaimGranted)
        });
        let release = handed.after(s.ms(25, 500));
        s.fault(Fault::new(
            Trigger::at(0),
            FaultKind::Message {
                pattern: w1_answer,
                count: 1,
                action: MsgAction::Hold { release },
            },
        ));
    } else {
        // The operator hands job 0 over as soon as W2 is free: before its next claim poll.
        let w2_refused = s.msgs(Some(coord), Some(w2), MsgKind::HeartbeatRejected);
        let start = Trigger::delivered(w2_refused).after(s.ms(0, 50));
        s.fault(Fault::new(
            start,
            FaultKind::Operator {
                job: JobId(0),
                action: takeover,
            },
        ));
    }
    s.finish()
}
