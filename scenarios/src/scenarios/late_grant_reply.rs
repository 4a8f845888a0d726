//! Late grant and renewal replies, then silence: the holder's deadline arithmetic (F2, F3, F1;
//! P5, P6, P13, I5).
//!
//! A holder measures its deadline from the send time of the request a grant or renewal answers
//! (`s + L(1 - rho)/(1 + rho) - G`), never from the reply's arrival: the coordinator started the
//! lease when it handled the request, so a reply that comes back late has already spent part of
//! it. This story sends W1 every kind of late reply. Its grant comes back late (held past its
//! stop margin), or twice (the reply duplicated, or its claim duplicated and answered again).
//! Early in its first tool call a renewal reply is sometimes queued behind a GC pause of W1 (the
//! clock runs on; the reply is handled at the resume), and sometimes overtaken by the reply to
//! the next heartbeat. From its long tool call on, every renewal reply comes back later than its
//! stop margin; a heartbeat period later W1 is cut from the coordinator (F1) with the long call
//! still running, so its last confirmation is a late one and nothing follows it. W1 goes quiet in
//! jeopardy at the deadline measured from that heartbeat's send (P13); the lease expires on the
//! coordinator's clock, W2 takes over (P15) and completes; W1's link heals and it learns the
//! loss. The checker holds every deadline W1 states against the grant it rests on (I5, belief
//! within grant): one measured from the arrival passes it, whether W1 acts on it or not. The
//! seed varies the lease, the margins, which grant fault applies, whether the pause and the
//! overtaking happen, how late the replies are, when the cut comes and how long it lasts.

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
/// The first tool call's plan step: long enough for two heartbeats.
const FIRST_STEP: u8 = 0;
/// The long tool call's plan step: W1 is cut while it runs.
const LONG_STEP: u8 = 2;

/// The `late-grant-reply` scenario.
pub const DEF: Stock = Stock {
    name: "late-grant-reply",
    story: "W1's grant comes back late or twice, a renewal reply waits behind a pause or is \
            overtaken, then every renewal reply comes back past its stop margin and W1 is cut \
            from the coordinator mid-call; its deadlines, measured from each request's send, \
            stay within the grant; W2 takes over",
    hazards: &[
        Hazard::LateLeaseReply,
        Hazard::LeaseReplyPastMargin,
        Hazard::LeaseReplyAfterPause,
        Hazard::LeaseReplyDuplicated,
        Hazard::LeaseReplyReordered,
        Hazard::SilenceAfterLateReply,
        Hazard::Takeover,
        Hazard::JeopardyEntered,
        Hazard::HeartbeatRefused,
    ],
    unjudged: &[],
    build,
};

// Long: one story read top to bottom, its seed-drawn faults in the order they strike and draw.
fn build(seed: u64, variant: Variant) -> Setup {
    let effect = |op: OpId| Step::Effect { op, receiver: 0 };
    let mut s = Story::new(
        "late-grant-reply",
        seed,
        variant,
        &[1, 2],
        [
            Step::Tool,
            effect(CREATE_CASE),
            Step::Tool,
            effect(UPDATE_CASE),
            Step::Tool,
        ],
        1,
    );
    let lease_ms = s.lease_ns() / MILLI_NS;
    let heartbeat_ns = s.heartbeat_ns();
    let heartbeat_ms = heartbeat_ns / MILLI_NS;
    let margin_ms = s.setup.workers[0].config.stop_margin_ns / MILLI_NS;
    // The first call spans two heartbeats or more; the long one outlasts W1's lease once it is
    // cut (its deadline is at most a lease after its last confirmed send), so work remains.
    s.tool_step(FIRST_STEP, heartbeat_ns * 22 / 10, heartbeat_ns * 3);
    s.tool_step(LONG_STEP, s.lease_ns() * 16 / 10, s.lease_ns() * 2);
    // W2 waits for work before W1's lease could run out, and gets it once it expired.
    s.start_worker(1, lease_ms * 6 / 10, lease_ms * 95 / 100);
    let (w1, w2, coord) = (s.worker(0), s.worker(1), s.coordinator());
    let grants = s.msgs(Some(coord), Some(w1), MsgKind::ClaimGranted);
    let renewals = s.msgs(Some(coord), Some(w1), MsgKind::HeartbeatOk);
    let heartbeats = s.msgs(Some(w1), Some(coord), MsgKind::Heartbeat);
    // Later than the stop margin: a deadline measured from the arrival passes the grant.
    let late_ms = |s: &mut Story| s.ms(margin_ms + 300, margin_ms + 300 + heartbeat_ms / 4);
    // The grant: late, its reply twice, or the claim twice (answered again), or untouched.
    let grant_fault = match s.r.index(4) {
        0 => Some((
            grants,
            MsgAction::Delay {
                extra_ns: late_ms(&mut s).max(s.ms(0, lease_ms / 4)),
            },
        )),
        1 => Some((
            grants,
            MsgAction::Duplicate {
                gap_ns: late_ms(&mut s),
            },
        )),
        2 => Some((
            s.msgs(Some(w1), Some(coord), MsgKind::Claim),
            MsgAction::Duplicate {
                gap_ns: s.ms(1, 50),
            },
        )),
        _ => None,
    };
    if let Some((pattern, action)) = grant_fault {
        s.fault(Fault::new(
            Trigger::at(0),
            FaultKind::Message {
                pattern,
                count: 1,
                action,
            },
        ));
    }
    // A GC pause as W1 sends its first heartbeat: the reply waits for the resume.
    if s.r.chance(1, 2) {
        let pause_ns = late_ms(&mut s);
        s.fault(Fault::new(
            Trigger::sent(heartbeats),
            FaultKind::Pause {
                node: w1,
                frozen: false,
                duration_ns: pause_ns,
                hold_anchor: false,
            },
        ));
    }
    // The reply to the second heartbeat arrives after the reply to the third.
    if s.r.chance(1, 2) {
        let extra_ns = s.ms(heartbeat_ms * 11 / 10, heartbeat_ms * 15 / 10);
        s.fault(Fault::new(
            Trigger::sent(heartbeats).after(heartbeat_ns / 2),
            FaultKind::Message {
                pattern: renewals,
                count: 1,
                action: MsgAction::Delay { extra_ns },
            },
        ));
    }
    // From the long call on, every renewal reply is late; a period or so later W1 is cut, so
    // that a late reply is in flight and is the last it hears; the link heals after W2 took
    // over.
    let long_call = Trigger::sent(MsgPattern {
        step: Some(LONG_STEP),
        ..s.msgs(Some(w1), None, MsgKind::ToolRequest)
    });
    let w2_granted = Trigger::sent(s.msgs(Some(coord), Some(w2), MsgKind::ClaimGranted));
    let extra_ns = late_ms(&mut s);
    s.fault(
        Fault::new(
            long_call,
            FaultKind::Message {
                pattern: renewals,
                count: 0,
                action: MsgAction::Delay { extra_ns },
            },
        )
        .until(w2_granted),
    );
    let cut_after_ns = s.ms(heartbeat_ms * 105 / 100, heartbeat_ms * 15 / 10);
    let heal_after_ns = s.ms(500, lease_ms);
    let partition = FaultKind::Partition {
        a: w1,
        b: coord,
        one_way: false,
    };
    s.fault(
        Fault::new(long_call.after(cut_after_ns), partition).until(w2_granted.after(heal_after_ns)),
    );
    s.finish()
}
