//! Kleppmann's client 1 / client 2 ("How to do distributed locking"; his tokens 33 and 34, ours
//! 1 and 2), F2 against P9 and P13.
//!
//! W1 claims the job (token 1), runs a tool call, finds its lease still good and sends its
//! `write` effect, and in that very instant a GC pause stops it (the clock runs on): the
//! `write`, and the conditional commit that follows it in the same handler, leave only when the
//! pause ends, and it lasts longer than the lease. The lease expires on the coordinator's clock
//! (P3); W2 claims the job with token 2 (P15), runs the tool and writes. W1 resumes believing
//! what it believed: its held `write` with fence 1 reaches the receiver after W2's fence 2 and is
//! refused (P9, I2); W1's deadline has passed, so it is in jeopardy (P13) and starts nothing more;
//! its held commit is refused and journaled (P8, I1, I6). The seed varies the lease, the tool's
//! duration (so W1 may renew a few times before the check), when W2 starts waiting, and how far
//! the pause overshoots the lease.

use super::story::Story;
use super::Stock;
use crate::plan::{Fault, FaultKind, MsgPattern, Trigger};
use crate::setup::Setup;
use leasesim_checkers::Hazard;
use leasesim_protocol::{MsgKind, OpId, Step, Variant, MILLI_NS};

/// `write`.
const WRITE: OpId = OpId(3);

/// The `gc-pause-after-check` scenario.
pub const DEF: Stock = Stock {
    name: "gc-pause-after-check",
    story: "W1 checks its lease and is paused (GC) as it sends its write, past its lease; W2 \
            takes over with token 2 and writes; W1's held write with fence 1 is fenced off and \
            its commit refused",
    hazards: &[
        Hazard::PauseAcrossExpiry,
        Hazard::Takeover,
        Hazard::StaleFenceRejected,
        Hazard::StaleCommitRejected,
        Hazard::JeopardyEntered,
        Hazard::MessageLate,
    ],
    unjudged: &[],
    build,
};

fn build(seed: u64, variant: Variant) -> Setup {
    let mut s = Story::new(
        "gc-pause-after-check",
        seed,
        variant,
        &[1, 2],
        [
            Step::Tool,
            Step::Effect {
                op: WRITE,
                receiver: 0,
            },
        ],
        1,
    );
    let lease_ms = s.lease_ns() / MILLI_NS;
    // The tool call: sometimes shorter than a heartbeat period, sometimes long enough for W1
    // to renew its lease a few times before it checks it.
    let tool_max_ns = s.ms(300, lease_ms * 3 / 2);
    s.tool_step(0, 100 * MILLI_NS, tool_max_ns);
    // W2 starts waiting for work before W1's first lease could run out; it gets the job only
    // once W1's lease expired.
    s.start_worker(1, lease_ms * 6 / 10, lease_ms * 95 / 100);
    // Longer than the lease, and long enough for W2 to claim (a poll period of at most 2 s),
    // run its own tool call (at most `tool_max_ns`) and write before W1 resumes: W1's write
    // arrives second, as in Kleppmann's figure.
    let overshoot_ns = s.ms(2_500, 30_000);
    let pause_ns = s.lease_ns() + tool_max_ns + overshoot_ns;
    let w1 = s.worker(0);
    let recv = s.receiver(0);
    let write_sent = Trigger::sent(MsgPattern {
        op: Some(WRITE),
        ..s.msgs(Some(w1), Some(recv), MsgKind::Effect)
    });
    s.fault(Fault::new(
        write_sent,
        FaultKind::Pause {
            node: w1,
            frozen: false,
            duration_ns: pause_ns,
            hold_anchor: true,
        },
    ));
    s.finish()
}
