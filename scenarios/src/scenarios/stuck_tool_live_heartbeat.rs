//! A stuck tool under a live heartbeat (P14 two separate controls; F7 tool hang; P11 bounded
//! attempts; I7).
//!
//! Two workers share one or two jobs of `create_case`, a tool call and `write`. The tool hangs
//! on every call, as if stuck on a modal dialog: it never answers. The holder's heartbeat runs
//! on its own timer (P5), so the lease stays valid and nobody can take the job over by expiry:
//! ownership is fine, progress is not. The stage deadline, configured shorter than the tool
//! timeout (30 to 120 s), ends each attempt: the holder gives the call up, reports a retryable
//! failure through its conditional commit, and the job goes back to the queue. The next attempt
//! repeats `create_case` under the same key (answered from the store) and hangs again. After the
//! class's attempt limit the coordinator fails the job for good (terminal), well within the
//! liveness bound.

use super::story::Story;
use super::Stock;
use crate::plan::{Fault, FaultKind};
use crate::setup::Setup;
use leasesim_checkers::Hazard;
use leasesim_protocol::{OpId, Step, ToolFaultKind, Variant};

/// The `stuck-tool-live-heartbeat` scenario.
pub const DEF: Stock = Stock {
    name: "stuck-tool-live-heartbeat",
    story: "the tool hangs on every call while heartbeats keep the lease alive; the stage \
            deadline ends each attempt and the job fails after its attempt limit",
    hazards: &[
        Hazard::ToolFault,
        Hazard::StageDeadline,
        Hazard::DuplicateKeyAnswered,
    ],
    unjudged: &[],
    build,
};

fn build(seed: u64, variant: Variant) -> Setup {
    let effect = |op| Step::Effect {
        op: OpId(op),
        receiver: 0,
    };
    let steps = [effect(1), Step::Tool, effect(3)];
    let mut s = Story::new(
        "stuck-tool-live-heartbeat",
        seed,
        variant,
        &[1, 2],
        steps,
        2,
    );
    if s.r.chance(1, 2) {
        s.setup.jobs.truncate(1);
    }
    // Progress control (P14): the stage deadline ends the attempt before the tool's own client
    // timeout would, however alive the heartbeat is.
    let stage_deadline_ns = s.ms(30_000, 120_000);
    let tool_timeout_ns = stage_deadline_ns + s.ms(30_000, 180_000);
    for w in &mut s.setup.workers {
        w.config.stage_deadline_ns = stage_deadline_ns;
        w.config.tool_timeout_ns = tool_timeout_ns;
    }
    s.start_worker(0, 0, 100);
    s.start_worker(1, 0, 5_000);
    // F7: every call from any worker at any step hangs (never answers).
    s.fault(Fault::untriggered(FaultKind::Tool {
        worker: None,
        step: None,
        nth: 0,
        kind: ToolFaultKind::Hang,
        late_ns: 0,
    }));
    s.finish()
}
