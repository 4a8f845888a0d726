//! The tool answers "success" after the lease it was asked under has ended (F3, F7; P12, P13).
//!
//! W1 claims the job (token 1), applies `create_case` and calls the tool; while the tool runs,
//! W1 loses the coordinator (F1, only that link), so its heartbeats go nowhere and its lease
//! expires on the coordinator's clock (P3, P4). The tool's answer is held until W2 has claimed
//! the job with token 2 (P15), then reaches W1: a success in hand, an `update_case` still to do.
//! W1 is past its conservative deadline, in jeopardy (P13): it starts no effect and claims
//! nothing (I5). When its link heals, its next heartbeat is refused, "no row" (P4, P12 a): it
//! journals the loss and stops (I6). W2 does the work under its own token; `create_case` is
//! answered from the receiver's store (P10). The seed varies the lease, how long W1 renews before
//! the cut, the tool's duration, how long after the takeover the answer lands (while W2 works or
//! after it finished) and how long the cut outlasts the answer.

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
/// The tool call's plan step.
const TOOL_STEP: u8 = 1;

/// The `late-tool-answer` scenario.
pub const DEF: Stock = Stock {
    name: "late-tool-answer",
    story: "W1 is cut from the coordinator while its tool runs; the tool's success reaches it \
            only after W2 took over; in jeopardy W1 starts no further effect and learns the \
            loss when its heartbeat is refused",
    hazards: &[
        Hazard::LateAnswerAfterExpiry,
        Hazard::JeopardyEntered,
        Hazard::Takeover,
        Hazard::HeartbeatRefused,
        Hazard::DuplicateKeyAnswered,
        Hazard::MessageLate,
        Hazard::MessageLost,
    ],
    unjudged: &[],
    build,
};

fn build(seed: u64, variant: Variant) -> Setup {
    let mut s = Story::new(
        "late-tool-answer",
        seed,
        variant,
        &[1, 2],
        [
            Step::Effect {
                op: CREATE_CASE,
                receiver: 0,
            },
            Step::Tool,
            Step::Effect {
                op: UPDATE_CASE,
                receiver: 0,
            },
        ],
        1,
    );
    let lease_ms = s.lease_ns() / MILLI_NS;
    let tool_max_ns = s.ms(500, 10_000);
    s.tool_step(TOOL_STEP, 100 * MILLI_NS, tool_max_ns);
    s.start_worker(1, lease_ms * 6 / 10, lease_ms * 95 / 100);
    // W1 may renew a few times before it loses the coordinator. The answer is held until the
    // takeover, then up to half a lease more: together at most about 2 L + 2 s after the tool
    // request, well inside W1's 120 s tool timeout, so the answer is late, not abandoned.
    let cut_after_ns = s.ms(0, lease_ms / 2);
    let release_after_ns = s.ms(0, lease_ms / 2);
    let heal_after_ns = s.ms(100, 5_000);
    let (w1, w2, coord, tool) = (s.worker(0), s.worker(1), s.coordinator(), s.tool());
    let request = Trigger::sent(MsgPattern {
        step: Some(TOOL_STEP),
        ..s.msgs(Some(w1), Some(tool), MsgKind::ToolRequest)
    });
    let answer = MsgPattern {
        step: Some(TOOL_STEP),
        ..s.msgs(Some(tool), Some(w1), MsgKind::ToolResponse)
    };
    // W1 loses the coordinator, and only it, while the tool runs; it gets the link back only
    // with the late success in hand.
    let partition = FaultKind::Partition {
        a: w1,
        b: coord,
        one_way: false,
    };
    s.fault(
        Fault::new(request.after(cut_after_ns), partition)
            .until(Trigger::delivered(answer).after(heal_after_ns)),
    );
    // The tool's success reaches W1 only after W2 took the job over.
    let w2_granted = Trigger::sent(s.msgs(Some(coord), Some(w2), MsgKind::ClaimGranted));
    s.fault(Fault::new(
        Trigger::at(0),
        FaultKind::Message {
            pattern: answer,
            count: 1,
            action: MsgAction::Hold {
                release: w2_granted.after(release_after_ns),
            },
        },
    ));
    s.finish()
}
