//! Clock steps: wall clocks jump by hours, and one worker's monotonic clock jumps forward (F4;
//! P3, P6, P13, SPEC "Timing guidance").
//!
//! Two workers run two jobs. Meanwhile the wall clocks of the coordinator, of both workers and
//! of the receiver are stepped by hours, forward and back (an NTP step, an operator setting the
//! date). Leases are measured on monotonic clocks, so none of that may move a lease, a deadline
//! or a renewal (a step on the coordinator's wall clock must not move `lease_until`). Then one
//! worker's monotonic clock jumps forward while it waits for its tool, like a suspend: its
//! deadline passes early, which is the safe direction. It enters jeopardy at once (P13), and its
//! next heartbeat, overdue too, confirms the lease again, so it leaves jeopardy and finishes.
//! Sometimes the suspend lasts hours: then its tool timeout fires as well, and it reports a
//! retryable failure (P12 c) under its still valid lease, and the job is claimed again. Every job
//! finishes (I7). The seed varies the lease, tool durations, step sizes, signs and times, which
//! worker jumps, and how far.

use super::story::Story;
use super::Stock;
use crate::plan::{Fault, FaultKind, MsgPattern, Trigger};
use crate::setup::Setup;
use leasesim_checkers::Hazard;
use leasesim_protocol::{MsgKind, OpId, Step, Variant, MILLI_NS, SECOND_NS};

/// `create_case`.
const CREATE_CASE: OpId = OpId(1);
/// `update_case`.
const UPDATE_CASE: OpId = OpId(2);
/// The tool call the monotonic jump interrupts.
const JUMP_STEP: u8 = 1;

/// An hour, in nanoseconds.
const HOUR_NS: u64 = 3_600 * SECOND_NS;

/// The `clock-jump` scenario.
pub const DEF: Stock = Stock {
    name: "clock-jump",
    story: "wall clocks of the coordinator, workers and receiver step by hours both ways \
            (leases do not move); one worker's monotonic clock jumps forward mid-lease: early \
            jeopardy, then a renewal, or after hours a retryable timeout",
    hazards: &[
        Hazard::ClockFault,
        Hazard::JeopardyEntered,
        Hazard::JeopardyExited,
    ],
    // A stepped clock voids what is judged against it, in every run.
    unjudged: &["belief-within-grant", "needless-takeover"],
    build,
};

// Long: one story read top to bottom, its seed-drawn clock steps in the order they draw.
fn build(seed: u64, variant: Variant) -> Setup {
    let mut s = Story::new(
        "clock-jump",
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
            Step::Tool,
        ],
        2,
    );
    let lease_ms = s.lease_ns() / MILLI_NS;
    s.tool_step(JUMP_STEP, SECOND_NS, s.lease_ns());
    s.tool_step(3, SECOND_NS, s.lease_ns());
    s.start_worker(1, 0, 1_000);
    let hours = |s: &mut Story| s.r.range(HOUR_NS, 12 * HOUR_NS) as i64;
    // Wall steps of hours, forward and back, on the coordinator, the workers and the receiver,
    // at times inside the first two leases (while the jobs are running).
    let mut wall_nodes = vec![s.coordinator(), s.worker(0), s.worker(1), s.receiver(0)];
    if s.r.chance(1, 2) {
        wall_nodes.swap(1, 2);
    }
    for node in wall_nodes {
        let first = hours(&mut s);
        let back = hours(&mut s);
        let forward_first = s.r.chance(1, 2);
        let (a, b) = if forward_first {
            (first, -back)
        } else {
            (-first, back)
        };
        let t1 = s.ms(0, lease_ms);
        let t2 = t1 + s.ms(0, lease_ms);
        for (t, delta_ns) in [(t1, a), (t2, b)] {
            s.fault(Fault::new(
                Trigger::at(t),
                FaultKind::ClockStep {
                    node,
                    delta_ns,
                    wall: true,
                },
            ));
        }
    }
    // One worker's monotonic clock jumps forward while it waits for its first tool call (the
    // delay stays below the call's shortest duration): usually by one to two leases, so that
    // its deadline passes at once; sometimes by hours, a long suspend.
    let jumper_index = s.r.index(2);
    let jumper = s.worker(jumper_index);
    let jump_ns = if s.r.chance(1, 5) {
        s.r.range(HOUR_NS, 8 * HOUR_NS)
    } else {
        s.ms(lease_ms, 2 * lease_ms)
    };
    let jump_after_ns = s.ms(0, 900);
    let tool = s.tool();
    let waiting = Trigger::sent(MsgPattern {
        step: Some(JUMP_STEP),
        ..s.msgs(Some(jumper), Some(tool), MsgKind::ToolRequest)
    });
    s.fault(Fault::new(
        waiting.after(jump_after_ns),
        FaultKind::ClockStep {
            node: jumper,
            delta_ns: jump_ns as i64,
            wall: false,
        },
    ));
    s.finish()
}
