//! Heartbeat acknowledgements lost: ownership unknown, not lost (F3; P12 b, P13, I5, I7).
//!
//! W1 claims the job, runs a short lookup, applies `create_case` and starts a long tool call.
//! From that moment every acknowledgement of its heartbeats is dropped for a while (F3),
//! although the heartbeats themselves reach the coordinator, which renews the lease each time
//! (P4). W1 cannot confirm its lease before its conservative deadline (P6) and enters jeopardy
//! (P13): the tool's answer arrives while it is there, and W1 starts nothing, claims nothing,
//! and waits (P12 b). Once acks flow again, the next one confirms the lease, W1 leaves jeopardy
//! and goes on with `update_case`, a last tool call and its commit. W2 polls the whole time and
//! never gets the job: the coordinator did renew it, so there is no takeover (I7). The seed
//! varies the lease, the lookup's length (so the drops start at any phase of the heartbeat
//! period), how long they last (always past W1's deadline) and the long call's duration (always
//! ending inside the window).

use super::story::Story;
use super::Stock;
use crate::plan::{Fault, FaultKind, MsgAction, MsgPattern, Trigger};
use crate::setup::Setup;
use leasesim_checkers::Hazard;
use leasesim_protocol::{MsgKind, OpId, Step, Variant, MILLI_NS};

/// `create_case`.
const CREATE_CASE: OpId = OpId(1);
/// `update_case`.
const UPDATE_CASE: OpId = OpId(2);
/// The short lookup's plan step.
const LOOKUP_STEP: u8 = 0;
/// The long tool call's plan step.
const LONG_STEP: u8 = 2;

/// The `heartbeat-ack-lost` scenario.
pub const DEF: Stock = Stock {
    name: "heartbeat-ack-lost",
    story: "W1's heartbeat acks are dropped past its deadline while the coordinator keeps \
            renewing; W1 waits in jeopardy with its tool answer in hand, leaves it at the next \
            ack and completes; no takeover",
    hazards: &[
        Hazard::JeopardyEntered,
        Hazard::JeopardyExited,
        Hazard::MessageLost,
    ],
    unjudged: &[],
    build,
};

fn build(seed: u64, variant: Variant) -> Setup {
    let mut s = Story::new(
        "heartbeat-ack-lost",
        seed,
        variant,
        &[1, 2],
        [
            Step::Tool,
            Step::Effect {
                op: CREATE_CASE,
                receiver: 0,
            },
            Step::Tool,
            Step::Effect {
                op: UPDATE_CASE,
                receiver: 0,
            },
            Step::Tool,
        ],
        1,
    );
    let lease_ms = s.lease_ns() / MILLI_NS;
    // The lookup ends at any phase of W1's heartbeat period.
    s.tool_step(LOOKUP_STEP, 100 * MILLI_NS, s.lease_ns() / 2);
    // The drops start with the long request, so W1's last confirmed send is before it and its
    // deadline (at most L * (1 - 2 rho) - G after that send) has passed by the time the tool
    // answers, 1.1 L to 1.4 L after the request. The window lasts 1.6 L to 2 L, so the answer
    // always lands inside it.
    let window_ns = s.ms(lease_ms * 16 / 10, lease_ms * 2);
    s.tool_step(LONG_STEP, s.lease_ns() * 11 / 10, s.lease_ns() * 14 / 10);
    // W2 waits for work the whole time and must never get it.
    s.start_worker(1, lease_ms / 4, lease_ms);
    let (w1, coord, tool) = (s.worker(0), s.coordinator(), s.tool());
    let request = Trigger::sent(MsgPattern {
        step: Some(LONG_STEP),
        ..s.msgs(Some(w1), Some(tool), MsgKind::ToolRequest)
    });
    let drop_acks = FaultKind::Message {
        pattern: s.msgs(Some(coord), Some(w1), MsgKind::HeartbeatOk),
        count: 0,
        action: MsgAction::Drop,
    };
    // Start and end hang on the same message: the start must fire at the match itself (no
    // delay), or the end would be looked for before the fault started and never seen.
    s.fault(Fault::new(request, drop_acks).until(request.after(window_ns)));
    s.finish()
}
