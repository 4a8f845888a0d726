//! Restart under the same logical name (F5, P9, P4, P8; the reason owner names alone are not
//! enough, V9).
//!
//! W1 claims the job (token 1), applies `create_case`, runs a short lookup, sends `update_case`
//! and starts the long request. Then it crashes: in most seeds right after it sent its
//! conditional commit, in the others in the middle of the long request. The first incarnation
//! leaves messages in flight that the network holds: its first heartbeat, its `update_case`
//! effect and (if it got that far) its commit, all carrying token 1. W1 restarts under the same
//! name, waits for the old lease to expire on the coordinator's clock and claims the job again
//! with token 2. Only then do the first incarnation's messages arrive: the receiver fences the
//! effect off (its first contact with W1' raised the mark), and the coordinator refuses the
//! heartbeat and the commit for their stale token although the owner name, W1, matches. W1'
//! completes the job; nothing of the first incarnation is applied or published.

use super::story::Story;
use super::Stock;
use crate::plan::{Fault, FaultKind, MsgAction, MsgPattern, Trigger};
use crate::setup::Setup;
use leasesim_checkers::Hazard;
use leasesim_protocol::{MsgKind, OpId, Step, Token, Variant, MILLI_NS};

/// The `restart-same-name` scenario.
pub const DEF: Stock = Stock {
    name: "restart-same-name",
    story: "W1 crashes mid-job and restarts under the same name; its first life's heartbeat, \
            effect and commit (token 1) arrive after W1' claimed token 2 and are refused",
    hazards: &[
        Hazard::RestartSameName,
        Hazard::Crash,
        Hazard::Takeover,
        Hazard::HeartbeatRefused,
        Hazard::StaleCommitRejected,
        Hazard::StaleFenceRejected,
        Hazard::MessageLate,
    ],
    unjudged: &[],
    build,
};

const CREATE_CASE: OpId = OpId(1);
const UPDATE_CASE: OpId = OpId(2);
/// The short lookup's plan step.
const LOOKUP_STEP: u8 = 1;
/// The long request's plan step.
const FETCH_STEP: u8 = 3;

// Long: one story read top to bottom, its seed-drawn faults in the order they strike and draw.
fn build(seed: u64, variant: Variant) -> Setup {
    let steps = [
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
    ];
    let mut s = Story::new("restart-same-name", seed, variant, &[1], steps, 1);
    let (l, h) = (s.lease_ns(), s.heartbeat_ns());
    s.start_worker(0, 0, 100);
    s.tool_step(LOOKUP_STEP, 100 * MILLI_NS, 300 * MILLI_NS);
    // The long request spans exactly one heartbeat: it starts within 0.4 s of the claim and ends
    // between H + 2 s and 1.8 H after it, so W1 sends one heartbeat (the held one) and commits
    // well before its local deadline (2 H <= 0.66 L).
    s.tool_step(FETCH_STEP, h + 2_000 * MILLI_NS, h * 18 / 10);

    let w1 = s.worker(0);
    let (coord, recv) = (s.coordinator(), s.receiver(0));
    let old = Some(Token(1));
    let first_heartbeat = MsgPattern {
        token: old,
        ..s.msgs(Some(w1), Some(coord), MsgKind::Heartbeat)
    };
    let first_commit = MsgPattern {
        token: old,
        ..s.msgs(Some(w1), Some(coord), MsgKind::Commit)
    };
    let first_update = MsgPattern {
        token: old,
        op: Some(UPDATE_CASE),
        ..s.msgs(Some(w1), Some(recv), MsgKind::Effect)
    };
    // The restarted process holds token 2 of the same job under the same name.
    let regranted = Trigger::delivered(MsgPattern {
        token: Some(Token(2)),
        ..s.msgs(Some(coord), Some(w1), MsgKind::ClaimGranted)
    });
    let second_contact = Trigger::delivered(MsgPattern {
        token: Some(Token(2)),
        ..s.msgs(Some(w1), Some(recv), MsgKind::Effect)
    });

    // Where the first incarnation dies: right after its commit left (most seeds), or in the
    // middle of the long request, shortly after its only heartbeat.
    let crash_after_commit = s.r.chance(7, 10);
    let crash_at = if crash_after_commit {
        Trigger::sent(first_commit)
    } else {
        Trigger::sent(first_heartbeat).after(s.ms(0, 1_500))
    };
    // Down for a moment or for longer than the lease: W1' either polls until the old lease
    // expires or finds it expired at once.
    let down_ns = s.ms(500, l / MILLI_NS * 6 / 5);
    s.fault(Fault::new(
        crash_at,
        FaultKind::Crash {
            node: w1,
            restart_after_ns: Some(down_ns),
        },
    ));
    // The first life's messages stay in the network until W1' holds token 2. They arrive while
    // W1' still works (its plan takes longer than H), so the token, not the state, refuses them.
    let heartbeat_release = regranted.after(s.ms(0, 1_000));
    let commit_release = regranted.after(s.ms(0, 1_000));
    // The effect lands right after W1''s first contact (a repeated `create_case`) raised the
    // mark, and before W1''s own `update_case`, which waits for the lookup (>= 100 ms).
    let update_release = second_contact.after(s.ms(0, 10));
    for (pattern, release) in [
        (first_heartbeat, heartbeat_release),
        (first_update, update_release),
        (first_commit, commit_release),
    ] {
        s.fault(Fault::new(
            Trigger::at(0),
            FaultKind::Message {
                pattern,
                count: 1,
                action: MsgAction::Hold { release },
            },
        ));
    }
    s.finish()
}
