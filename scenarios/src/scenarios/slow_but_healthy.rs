//! Slow but healthy (I7 second half; P4, P5 heartbeat apart from the tool call, P14 two
//! separate controls).
//!
//! W1 claims the only job, applies `create_case` and starts a tool call that takes about ten
//! minutes (8 to 13 minutes, drawn per seed). Its heartbeats run on their own timer all that
//! time and each one extends the lease (a long hold, dozens of renewals). W2 polls for work the
//! whole time, every few seconds. No fault touches anyone. W1's tool timeout and stage deadline
//! are configured above the call's length (ownership and progress are separate controls, P14),
//! so the call completes, W1 applies `write` and commits. Pass: W2 never takes the job over (the
//! checker flags any takeover of an undisturbed holder, I7), W1's commit is accepted, and the
//! job ends well within its liveness bound.

use super::story::Story;
use super::Stock;
use crate::setup::Setup;
use leasesim_checkers::Hazard;
use leasesim_protocol::{OpId, Step, Variant};

/// The `slow-but-healthy` scenario.
pub const DEF: Stock = Stock {
    name: "slow-but-healthy",
    story: "W1 holds a job through a ten-minute tool call with steady heartbeats while W2 polls \
            all the time; no fault, so W2 must never take it over",
    hazards: &[Hazard::LongHold],
    unjudged: &[],
    build,
};

/// The long call's plan step.
const CALL_STEP: u8 = 1;

fn build(seed: u64, variant: Variant) -> Setup {
    let effect = |op| Step::Effect {
        op: OpId(op),
        receiver: 0,
    };
    let steps = [effect(1), Step::Tool, effect(3)];
    let mut s = Story::new("slow-but-healthy", seed, variant, &[1, 2], steps, 1);
    // About ten minutes: the shortest call 8 to 10 minutes, the longest up to 3 minutes more.
    let call_min = s.ms(480_000, 600_000);
    let call_max = call_min + s.ms(0, 180_000);
    s.tool_step(CALL_STEP, call_min, call_max);
    // Progress controls above the call: the tool timeout 1 to 4 minutes past its longest
    // duration, the stage deadline 1 to 5 minutes past that (P14).
    let tool_timeout_ns = call_max + s.ms(60_000, 240_000);
    let stage_deadline_ns = tool_timeout_ns + s.ms(60_000, 300_000);
    for w in &mut s.setup.workers {
        w.config.tool_timeout_ns = tool_timeout_ns;
        w.config.stage_deadline_ns = stage_deadline_ns;
    }
    s.start_worker(0, 0, 100);
    // W2 arrives while W1 is in its call and polls every 1.5 to 4 s from then on.
    s.start_worker(1, 500, 30_000);
    s.setup.workers[1].config.claim_poll_ns = s.ms(1_500, 4_000);
    // The story fits well inside the default bounds: the job ends within about 13.5 minutes,
    // the liveness bound is 30 minutes and the horizon an hour.
    s.finish()
}
