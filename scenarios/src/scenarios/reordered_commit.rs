//! A reordered commit (F3; P8 conditional commit, I1 at most one accepted result, I6).
//!
//! W1 claims a job, applies `create_case`, runs a lookup, applies `write`, runs a second call
//! and asks for its conditional commit. The network delays that first commit past W1's retry
//! period, so the retry overtakes it and is accepted; W1 goes on to the next job. When the
//! original arrives the coordinator recognises the same commit of the same attempt and gives
//! its first answer again instead of deciding twice, so the job keeps exactly one accepted
//! result. In the variant (some seeds, one job) every
//! commit W1 sends is held back: W1 stopped heartbeating when it asked for its commit, so its
//! lease expires on the coordinator's clock and W2, polling all along, takes the job over with
//! token 2 (a recorded takeover, I8). Only then do W1's commits arrive, while W2 works: each is
//! refused for its stale owner and token and journaled; W1 stands down and W2 completes.
//!
//! A second job keeps W1 busy while its late commit is on the wire (a run also never ends
//! while a message is in flight).

use super::story::Story;
use super::Stock;
use crate::plan::{Fault, FaultKind, MsgAction, MsgPattern, Trigger};
use crate::setup::Setup;
use leasesim_checkers::Hazard;
use leasesim_protocol::{MsgKind, OpId, Step, Token, Variant, MILLI_NS};

/// The `reordered-commit` scenario.
pub const DEF: Stock = Stock {
    name: "reordered-commit",
    story: "W1's first commit is delayed past its retry, which is accepted; the late original \
            gets the first answer again, not a second decision (variant: held past the lease, \
            W2 takes over first and W1's commits are refused and journaled)",
    hazards: &[
        Hazard::MessageLate,
        Hazard::RequestReplayed,
        Hazard::StaleCommitRejected,
        Hazard::Takeover,
    ],
    unjudged: &[],
    build,
};

fn build(seed: u64, variant: Variant) -> Setup {
    let effect = |op| Step::Effect {
        op: OpId(op),
        receiver: 0,
    };
    let steps = [effect(1), Step::Tool, effect(3), Step::Tool];
    let mut s = Story::new("reordered-commit", seed, variant, &[1, 2], steps, 2);
    let (l, h) = (s.lease_ns(), s.heartbeat_ns());
    let l_ms = l / MILLI_NS;
    s.tool_step(1, 200 * MILLI_NS, h * 3 / 2);
    s.tool_step(3, 100 * MILLI_NS, 2_000 * MILLI_NS);
    s.start_worker(0, 0, 100);

    let (w1, w2, coord) = (s.worker(0), s.worker(1), s.coordinator());
    let w1_commits = s.msgs(Some(w1), Some(coord), MsgKind::Commit);
    if s.r.chance(2, 5) {
        // Late past the lease. One job; W2 polls from early on.
        s.setup.jobs.truncate(1);
        s.start_worker(1, 500, 3_000);
        // W1 backs off between commit retries (it keeps retrying well within its bound).
        s.setup.workers[0].config.commit_retry_ns = s.ms(2_000, 4_000);
        // Every commit W1 sends before the takeover waits until W2 holds token 2, then flies.
        // W2 works at least 300 ms (two tool calls), so they all land while it holds the job.
        let takeover = Trigger::sent(MsgPattern {
            token: Some(Token(2)),
            ..s.msgs(Some(coord), Some(w2), MsgKind::ClaimGranted)
        });
        let release = takeover.after(s.ms(0, 250));
        s.fault(Fault::new(
            Trigger::at(0),
            FaultKind::Message {
                pattern: w1_commits,
                count: 0,
                action: MsgAction::Hold { release },
            },
        ));
    } else {
        // The retry overtakes. Two jobs: W1 runs both, one after the other; W2 starts polling
        // only once W1 is past the first (its first job takes at most 1.5 H + 5.5 s < L).
        s.start_worker(1, l_ms, l_ms * 3 / 2);
        // Only the first commit is late, past W1's retry period plus the network's spread (at
        // most 21 ms), so the retry arrives first; the lease (at least 0.67 L left) outlasts
        // both. At most 700 ms past the retry, the original lands before W1's second job can
        // end: W1 waits a poll period (>= 500 ms) and two tool calls (>= 300 ms) for it.
        let retry_ns = s.setup.workers[0].config.commit_retry_ns;
        let extra_ns = retry_ns + s.ms(30, 700);
        s.fault(Fault::new(
            Trigger::at(0),
            FaultKind::Message {
                pattern: w1_commits,
                count: 1,
                action: MsgAction::Delay { extra_ns },
            },
        ));
    }
    s.finish()
}
