//! Duplicated messages (F3; P10 idempotency, P8 conditional commit, P3 atomic claim).
//!
//! Two workers run several jobs of `create_case`, a lookup, `write`, a second tool call and
//! `notify`, on a network that duplicates a few percent of all messages at random. On top of
//! that the plan duplicates every effect, every commit and every heartbeat acknowledgement, and
//! a few claims, each copy arriving a seed-drawn gap after the original. The receiver answers
//! every repeated key from its store and applies nothing twice (I2); the coordinator answers a
//! repeated commit or claim with its first answer instead of deciding twice (one accepted
//! result per job, I1; no second job granted to a busy claimer); a repeated heartbeat
//! acknowledgement moves nobody's deadline. Every job ends (I7).

use super::story::Story;
use super::Stock;
use crate::plan::{Fault, FaultKind, MsgAction, Trigger};
use crate::setup::Setup;
use leasesim_checkers::Hazard;
use leasesim_protocol::{MsgKind, OpId, Step, Variant, MILLI_NS};

/// The `duplicate-delivery` scenario.
pub const DEF: Stock = Stock {
    name: "duplicate-delivery",
    story: "the network and the plan duplicate effects, claims, commits and heartbeat acks for \
            several jobs; repeated keys are answered from the store, repeated claims and \
            commits get their first answer again",
    hazards: &[
        Hazard::MessageDuplicated,
        Hazard::DuplicateKeyAnswered,
        Hazard::RequestReplayed,
    ],
    unjudged: &[],
    build,
};

fn build(seed: u64, variant: Variant) -> Setup {
    let effect = |op| Step::Effect {
        op: OpId(op),
        receiver: 0,
    };
    let steps = [effect(1), Step::Tool, effect(3), Step::Tool, effect(4)];
    let mut s = Story::new("duplicate-delivery", seed, variant, &[1, 2], steps, 3);
    // A fourth and fifth job in some seeds.
    let extra = s.r.range(0, 2) as usize;
    for i in 0..extra {
        let mut job = s.setup.jobs[0].clone();
        job.payload_hash ^= 0x1000 * (i as u64 + 3);
        s.setup.jobs.push(job);
    }
    let h = s.heartbeat_ns();
    s.start_worker(0, 0, 100);
    s.start_worker(1, 0, 2_000);
    // The lookup sometimes outlasts a heartbeat period, so acknowledgements get duplicated too.
    s.tool_step(1, 200 * MILLI_NS, h * 3 / 2);
    s.tool_step(3, 100 * MILLI_NS, 1_000 * MILLI_NS);
    // Random duplication on every link: 1 to 5 percent of all messages.
    s.setup.net.dup_ppm = s.r.range(10_000, 50_000) as u32;

    let (w1, w2, coord, recv) = (s.worker(0), s.worker(1), s.coordinator(), s.receiver(0));
    // Gaps stay above the network's latency spread (at most 21 ms), so a copy never overtakes
    // its original.
    let effect_gap = s.ms(25, 3_000);
    let commit_gap = s.ms(25, 2_000);
    let ack_gap = s.ms(25, 2_000);
    let claim_gap = s.ms(25, 500);
    let claims = s.r.range(1, 3) as u32;
    let claimer = if s.r.chance(1, 2) { w1 } else { w2 };
    let plan = [
        // Every effect, from either worker.
        (s.msgs(None, Some(recv), MsgKind::Effect), 0, effect_gap),
        // Every commit.
        (s.msgs(None, Some(coord), MsgKind::Commit), 0, commit_gap),
        // Every heartbeat acknowledgement.
        (s.msgs(Some(coord), None, MsgKind::HeartbeatOk), 0, ack_gap),
        // A few claims of one worker.
        (
            s.msgs(Some(claimer), Some(coord), MsgKind::Claim),
            claims,
            claim_gap,
        ),
    ];
    for (pattern, count, gap_ns) in plan {
        s.fault(Fault::new(
            Trigger::at(0),
            FaultKind::Message {
                pattern,
                count,
                action: MsgAction::Duplicate { gap_ns },
            },
        ));
    }
    s.finish()
}
