//! Admission and commit-time authorization (P16): three separate decisions, told apart in the
//! journal and the timeline.
//!
//! Admission: the `report` class may run one job at a time; while one runs, the others wait
//! queued with no lease (`admission_deferred`), not refused by the lease. Lease: W1 is cut from
//! the coordinator past its lease, its heartbeat is then refused (`heartbeat_refused`) and the
//! job is retaken. Commit-time authorization: the second receiver's policy refuses `notify` now,
//! whoever holds the lease; the valid holder's effect is refused (`effect_unauthorized`), and
//! its job fails for that reason without a retry.

use super::story::Story;
use super::Stock;
use crate::plan::{Fault, FaultKind, MsgPattern, Trigger};
use crate::setup::{ClockSpec, ReceiverSetup, Setup};
use leasesim_checkers::Hazard;
use leasesim_protocol::{ClassId, MsgKind, OpId, Plan, Step, Variant};

/// The `admission-and-authorization` scenario.
pub const DEF: Stock = Stock {
    name: "admission-and-authorization",
    story: "a class that runs one job at a time defers the rest (admission), a cut holder's \
            heartbeat is refused (lease), and a receiver's policy refuses a valid holder's \
            effect (authorization): three refusals, told apart",
    hazards: &[
        Hazard::AdmissionDeferred,
        Hazard::AuthorizationRefused,
        Hazard::HeartbeatRefused,
        Hazard::Takeover,
    ],
    unjudged: &[],
    build,
};

fn build(seed: u64, variant: Variant) -> Setup {
    let effect = |op, receiver| Step::Effect {
        op: OpId(op),
        receiver,
    };
    // Class 0 (`report`, capacity 1): create, work, notify at receiver 0.
    let steps = [effect(1, 0), Step::Tool, effect(4, 0)];
    let mut s = Story::new(
        "admission-and-authorization",
        seed,
        variant,
        &[1, 2, 3],
        steps,
        3,
    );
    s.start_worker(0, 0, 50);
    s.start_worker(1, 200, 400);
    s.start_worker(2, 200, 400);
    s.setup.classes[0].capacity = Some(1);
    // Class 1: the same work, but it notifies through receiver 1, whose policy refuses it.
    let mut class1 = s.setup.classes[0].clone();
    class1.capacity = None;
    s.setup.classes.push(class1);
    let plan1 = Plan {
        steps: vec![effect(1, 1), Step::Tool, effect(4, 1)],
    };
    s.setup.plans.push(plan1.clone());
    for w in &mut s.setup.workers {
        w.config.plans.push(plan1.clone());
    }
    let mut job = s.setup.jobs[0].clone();
    job.class = ClassId(1);
    s.setup.jobs.push(job);
    let offset = s.r.range(0, 5_000_000_000);
    s.setup.receivers.push(ReceiverSetup {
        supports_fence: true,
        supports_status: true,
        refused_ops: vec![OpId(4)],
        clock: ClockSpec {
            offset_ns: offset,
            drift_ppm: 0,
        },
    });
    // W1 (first to claim) loses the coordinator as it starts its work, for longer than its
    // lease.
    let l = s.lease_ns();
    let cut = s.r.range(l + l / 4, l + 3 * l / 4);
    // The work outlasts the cut, so W1 is still heartbeating when it can reach the coordinator
    // again: its next heartbeat is refused (a lease refusal, told apart from the other two).
    s.tool_step(1, 2 * l, 2 * l + l / 2);
    let (w3, coord) = (s.worker(0), s.coordinator());
    let tool_call = Trigger::sent(MsgPattern {
        from: Some(w3),
        kind: Some(MsgKind::ToolRequest),
        ..MsgPattern::default()
    });
    let partition = FaultKind::Partition {
        a: w3,
        b: coord,
        one_way: false,
    };
    s.fault(Fault::new(tool_call, partition).until(tool_call.after(cut)));
    s.finish()
}
