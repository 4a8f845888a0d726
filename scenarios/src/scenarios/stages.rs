//! Stages and checkpoints (P17): long work split where a checkable result appears; each stage
//! has its own key, result and lease; a successor reconciles before it goes on and before it
//! declares the job done.
//!
//! W1 runs stage 1 (`create_case`, a lookup) and persists it (`checkpoint_saved`: a fresh lease
//! and a fresh renewal cap for the next stage). In stage 2 it sends `update_case` and starts the
//! long call, and crashes. Its lease expires; W2 claims the job, learns the checkpoint, and
//! before redoing `update_case` asks the receiver whether it already took place
//! (`effect_reconciled`): it did, so W2 skips it and goes on. In some seeds the receiver cannot
//! answer status queries: the partial stage cannot be reconciled and the job goes to a human
//! (`human_review_requested`), failed for that reason rather than guessed.

use super::story::Story;
use super::Stock;
use crate::plan::{Fault, FaultKind, MsgPattern, Trigger};
use crate::setup::Setup;
use leasesim_checkers::Hazard;
use leasesim_protocol::{MsgKind, OpId, Step, Variant};

/// The `stages-and-checkpoints` scenario.
pub const DEF: Stock = Stock {
    name: "stages-and-checkpoints",
    story: "W1 persists stage 1, sends stage 2's effect and crashes; W2 resumes from the \
            checkpoint, asks the receiver whether the effect took place and skips it (or, with a \
            receiver that cannot tell, hands the job to a human)",
    hazards: &[
        Hazard::CheckpointSaved,
        Hazard::EffectReconciled,
        Hazard::Crash,
        Hazard::Takeover,
        Hazard::HumanReview,
    ],
    unjudged: &[],
    build,
};

/// The long call of stage 2.
const LONG_CALL: u8 = 4;

fn build(seed: u64, variant: Variant) -> Setup {
    let effect = |op| Step::Effect {
        op: OpId(op),
        receiver: 0,
    };
    let steps = [
        effect(1),
        Step::Tool,
        Step::Checkpoint,
        effect(2),
        Step::Tool,
        Step::Checkpoint,
        effect(4),
    ];
    let mut s = Story::new("stages-and-checkpoints", seed, variant, &[1, 2], steps, 1);
    s.start_worker(0, 0, 100);
    let l_ms = s.lease_ns() / 1_000_000;
    s.start_worker(1, l_ms / 2, l_ms);
    // A third of the receivers cannot answer status queries.
    s.setup.receivers[0].supports_status = !s.r.chance(1, 3);
    // W1 crashes while stage 2's long call runs, after its effect left.
    let w1 = s.worker(0);
    let after = s.ms(50, 500);
    let down = s.ms(1_000, 5_000);
    let long_call = Trigger::sent(MsgPattern {
        from: Some(w1),
        kind: Some(MsgKind::ToolRequest),
        step: Some(LONG_CALL),
        ..MsgPattern::default()
    });
    s.fault(Fault::new(
        long_call.after(after),
        FaultKind::Crash {
            node: w1,
            restart_after_ns: Some(down),
        },
    ));
    s.finish()
}
