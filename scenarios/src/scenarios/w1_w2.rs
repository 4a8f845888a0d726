//! The W1/W2 test of the first article (SPEC, last section).
//!
//! W1 claims the job, applies `create_case`, runs a short lookup, sends `update_case` and starts
//! the long external request. At that moment it loses the coordinator, and only the coordinator.
//! Its lease expires; W2 claims the job with a higher token, and its first effect (a repeated
//! `create_case` key) raises the receiver's fence mark. Only then does the network deliver W1's
//! `update_case`: the key cannot stop it (W2 has not sent that key yet), only the fence can.
//! W2 completes. The tool's success reaches W1 late; W1 gets its network back and asks for its
//! conditional commit. Pass: W1 cannot extend, cannot commit, creates no second effect, and its
//! rejected result is journaled.

use super::story::Story;
use crate::plan::{Fault, FaultKind, MsgAction, MsgPattern, Trigger};
use crate::setup::Setup;
use leasesim_protocol::{MsgKind, OpId, Step, Token, Variant, MILLI_NS, SECOND_NS};

/// `create_case`.
pub const CREATE_CASE: OpId = OpId(1);
/// `update_case`.
pub const UPDATE_CASE: OpId = OpId(2);
/// The short lookup's plan step.
pub const LOOKUP_STEP: u8 = 1;
/// The long external request's plan step.
pub const FETCH_STEP: u8 = 3;

/// Builds a W1/W2 story; the seed varies timings, latencies and clocks inside ranges that keep
/// the story.
// Long: one story read top to bottom, its seed-drawn faults in the order they strike and draw.
pub fn build(seed: u64, variant: Variant) -> Setup {
    let effect = |op| Step::Effect { op, receiver: 0 };
    let steps = [
        effect(CREATE_CASE),
        Step::Tool,
        effect(UPDATE_CASE),
        Step::Tool,
    ];
    let mut s = Story::new("w1-w2", seed, variant, &[1, 2], steps, 1);
    s.start_worker(0, 0, 100);
    // W2 starts polling some time before W1's lease runs out, so the takeover comes from a
    // worker that was waiting, not from one that happened to arrive late.
    let lease_ms = s.lease_ns() / MILLI_NS;
    s.start_worker(1, lease_ms * 7 / 10, lease_ms * 95 / 100);
    s.tool_step(LOOKUP_STEP, 100 * MILLI_NS, 300 * MILLI_NS);
    s.tool_step(FETCH_STEP, 100 * MILLI_NS, 2 * SECOND_NS);
    let heal_after_ns = s.ms(100, 3_000);
    // W1's late `update_case` must land after W2's `create_case` and before W2's own
    // `update_case`, which waits for a lookup of at least 100 ms: a release within 10 ms of
    // W2's first effect keeps that order for every latency the story draws (at most 22 ms).
    let fence_release_ns = s.ms(0, 10);
    let answer_release_ns = s.ms(10, 1_000);
    let (w1_node, w2_node) = (s.worker(0), s.worker(1));
    let (recv, tool, coord) = (s.receiver(0), s.tool(), s.coordinator());
    // The story's fault list is empty: its storage is reused when it has some.
    s.setup.faults.extend([
        // W1 loses the coordinator, and only it, as it starts the long external request.
        Fault::new(
            Trigger::sent(MsgPattern {
                from: Some(w1_node),
                kind: Some(MsgKind::ToolRequest),
                step: Some(FETCH_STEP),
                ..MsgPattern::default()
            }),
            FaultKind::Partition {
                a: w1_node,
                b: coord,
                one_way: false,
            },
        )
        // W1 gets its network back only with the late success in hand.
        .until(
            Trigger::delivered(MsgPattern {
                to: Some(w1_node),
                kind: Some(MsgKind::ToolResponse),
                step: Some(FETCH_STEP),
                ..MsgPattern::default()
            })
            .after(heal_after_ns),
        ),
        // W1's `update_case` reaches the receiver only after W2's first effect did.
        Fault::new(
            Trigger::at(0),
            FaultKind::Message {
                pattern: MsgPattern {
                    from: Some(w1_node),
                    to: Some(recv),
                    kind: Some(MsgKind::Effect),
                    op: Some(UPDATE_CASE),
                    ..MsgPattern::default()
                },
                count: 1,
                action: MsgAction::Hold {
                    release: Trigger::delivered(MsgPattern {
                        to: Some(recv),
                        kind: Some(MsgKind::Effect),
                        token: Some(Token(2)),
                        ..MsgPattern::default()
                    })
                    .after(fence_release_ns),
                },
            },
        ),
        // The tool's success reaches W1 only after W2 has completed.
        Fault::new(
            Trigger::at(0),
            FaultKind::Message {
                pattern: MsgPattern {
                    from: Some(tool),
                    to: Some(w1_node),
                    kind: Some(MsgKind::ToolResponse),
                    step: Some(FETCH_STEP),
                    ..MsgPattern::default()
                },
                count: 1,
                action: MsgAction::Hold {
                    release: Trigger::sent(MsgPattern {
                        from: Some(coord),
                        to: Some(w2_node),
                        kind: Some(MsgKind::CommitAccepted),
                        ..MsgPattern::default()
                    })
                    .after(answer_release_ns),
                },
            },
        ),
    ]);
    s.finish()
}
