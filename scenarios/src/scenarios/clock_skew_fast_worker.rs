//! Worker clocks at the drift bound, with large offsets, through a forced takeover (F4, F1; P6
//! with drift, P13, I5).
//!
//! Both workers assume rho = 500 ppm (NTP's slew bound) and run exactly at it: one fast
//! (+500 ppm), one slow (-500 ppm), which is which chosen by the seed; their clocks are hours or
//! days off true time and off each other, which must not matter, since each measures only its own
//! intervals (P3: the coordinator's clock is the arbiter). While W1 works through a plan of
//! several effects and tool calls, its clock's rate swings to the other extreme of the bound
//! (still inside it), and then it loses the coordinator (F1), so it keeps acting on its last
//! confirmed lease as long as its conservative deadline `s + L(1 - rho)/(1 + rho) - G` allows and
//! then goes quiet in jeopardy (P13). The lease expires on the coordinator's clock, W2 takes
//! over (P15) and finishes; W1's link heals and it learns the loss. The checker holds every
//! action of both against the coordinator's grant at true time (I5, belief within grant): with
//! every clock inside the bound, no holder may act outside jeopardy once its lease is over. The
//! seed varies the lease, the tool durations, which clock is fast, the offsets, when the rate
//! swings, at which tool call W1 is cut, how long the cut outlasts the takeover, and the stop
//! margin G (in half the runs nearly zero, so that only the drift allowance protects the grant).

use super::story::{Story, DRIFT_BOUND_PPM};
use super::Stock;
use crate::plan::{Fault, FaultKind, MsgPattern, Trigger};
use crate::setup::Setup;
use leasesim_checkers::Hazard;
use leasesim_protocol::{MsgKind, OpId, Step, Variant, MILLI_NS, SECOND_NS};

/// The `clock-skew-fast-worker` scenario.
pub const DEF: Stock = Stock {
    name: "clock-skew-fast-worker",
    story: "workers' clocks at +/-500 ppm (the drift bound) with offsets of hours; W1's rate \
            swings across the bound, then it is cut from the coordinator mid-plan and W2 takes \
            over; every action stays within the coordinator's grant",
    hazards: &[
        Hazard::ClockFault,
        Hazard::Takeover,
        Hazard::JeopardyEntered,
        Hazard::HeartbeatRefused,
        Hazard::MessageLost,
    ],
    unjudged: &[],
    build,
};

// Long: one story read top to bottom, its seed-drawn clocks and faults in the order they draw.
fn build(seed: u64, variant: Variant) -> Setup {
    let effect = |op: u8| Step::Effect {
        op: OpId(op),
        receiver: 0,
    };
    let mut s = Story::new(
        "clock-skew-fast-worker",
        seed,
        variant,
        &[1, 2],
        [
            effect(1),
            Step::Tool,
            effect(2),
            Step::Tool,
            effect(3),
            Step::Tool,
            effect(4),
        ],
        1,
    );
    let lease_ms = s.lease_ns() / MILLI_NS;
    let rho = DRIFT_BOUND_PPM as i32;
    // Which worker runs fast; the other runs slow, both exactly at the bound.
    let w1_fast = s.r.chance(1, 2);
    let (d1, d2) = if w1_fast { (rho, -rho) } else { (-rho, rho) };
    for (i, drift) in [(0, d1), (1, d2)] {
        let offset_ns = s.r.range(3_600 * SECOND_NS, 30 * 86_400 * SECOND_NS);
        s.setup.workers[i].clock.drift_ppm = drift;
        s.setup.workers[i].clock.offset_ns = offset_ns;
    }
    // In half the runs the holders stop instantly (a stop margin G of at most 20 ms): then the
    // drift allowance of the deadline is nearly all that keeps them inside the grant.
    if s.r.chance(1, 2) {
        let g_ns = s.ms(0, 20);
        for w in &mut s.setup.workers {
            w.config.stop_margin_ns = g_ns;
        }
    }
    // Tool calls of an eighth to half a lease: W1's cut-off plan goes on for a while, so that
    // its last actions fall near its deadline.
    for step in [1, 3, 5] {
        s.tool_step(step, s.lease_ns() / 8, s.lease_ns() / 2);
    }
    s.start_worker(1, lease_ms * 6 / 10, lease_ms * 95 / 100);
    let (w1, w2, coord, tool) = (s.worker(0), s.worker(1), s.coordinator(), s.tool());
    // W1's rate swings to the other side of the bound some time into its first lease.
    let swing_ns = s.ms(0, lease_ms);
    s.fault(Fault::new(
        Trigger::at(swing_ns),
        FaultKind::Drift {
            node: w1,
            drift_ppm: -d1,
        },
    ));
    // W1 is cut while it waits for one of its tool calls (the delay stays below the shortest
    // call, so it still holds the job), and gets its link back only after W2 took over.
    let cut_step = [1u8, 3, 5][s.r.index(3)];
    let cut_after_ns = s.ms(0, lease_ms / 8);
    let heal_after_ns = s.ms(500, lease_ms);
    let tool_call = Trigger::sent(MsgPattern {
        step: Some(cut_step),
        ..s.msgs(Some(w1), Some(tool), MsgKind::ToolRequest)
    });
    let w2_granted = Trigger::sent(s.msgs(Some(coord), Some(w2), MsgKind::ClaimGranted));
    let partition = FaultKind::Partition {
        a: w1,
        b: coord,
        one_way: false,
    };
    s.fault(
        Fault::new(tool_call.after(cut_after_ns), partition).until(w2_granted.after(heal_after_ns)),
    );
    s.finish()
}
