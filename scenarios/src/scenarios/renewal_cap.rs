//! The renewal cap (P7, V14): lease length comes from the job class, and renewal has a hard cap
//! from the first claim (SQS caps at 12 h): endless work must become stages.
//!
//! W1 claims a job whose tool call never returns. Its heartbeats keep the lease alive, and its
//! stage deadline is set (wrongly) to hours, so neither the lease nor the progress control ends
//! the attempt. Only the class's renewal cap does: once the total lease time since the first
//! claim reaches it, the coordinator refuses the next renewal and fails the job with its own
//! reason, journaled (`renewal_cap_reached`). W1 learns it at that heartbeat and goes quiet; W2,
//! polling all along, never gets the job. Without the cap (V14) the job renews on and never ends
//! within its bound (I7).

use super::story::Story;
use super::Stock;
use crate::plan::{Fault, FaultKind};
use crate::setup::Setup;
use leasesim_checkers::Hazard;
use leasesim_protocol::{OpId, Step, ToolFaultKind, Variant, SECOND_NS};

/// The `renewal-cap` scenario.
pub const DEF: Stock = Stock {
    name: "renewal-cap",
    story: "W1's tool call never returns and its stage deadline is hours away; heartbeats keep \
            the lease alive until the class's renewal cap fails the job (P7), journaled; W2 \
            never gets it",
    hazards: &[
        Hazard::RenewalCap,
        Hazard::HeartbeatRefused,
        Hazard::LongHold,
        Hazard::ToolFault,
    ],
    unjudged: &[],
    build,
};

fn build(seed: u64, variant: Variant) -> Setup {
    let steps = [
        Step::Effect {
            op: OpId(1),
            receiver: 0,
        },
        Step::Tool,
    ];
    let mut s = Story::new("renewal-cap", seed, variant, &[1, 2], steps, 1);
    s.start_worker(0, 0, 100);
    s.start_worker(1, 1_000, 5_000);
    let cap = s.ms(600_000, 1_200_000);
    s.setup.classes[0].renewal_cap_ns = cap;
    for w in &mut s.setup.workers {
        // A progress control set far too long: only the cap can end the attempt.
        w.config.stage_deadline_ns = 4 * 3_600 * SECOND_NS;
        w.config.tool_timeout_ns = 4 * 3_600 * SECOND_NS;
    }
    s.fault(Fault::untriggered(FaultKind::Tool {
        worker: None,
        step: None,
        nth: 0,
        kind: ToolFaultKind::Hang,
        late_ns: 0,
    }));
    // The job must end within the cap plus a few leases.
    let bound = cap + 10 * s.lease_ns();
    s.setup.liveness_bound_ns = Some(bound);
    s.setup.limits.horizon_ns = bound + 60 * SECOND_NS;
    s.finish()
}
