//! The coordinator (the database) is unavailable or slow for a while (F6; P12 b, P13, P3, I7).
//!
//! Three workers share two jobs: two hold one each, the third waits for work. While the holders
//! are in the middle of their plans, the coordinator is cut from every node (F6) for a
//! seed-chosen time that is sometimes well inside a lease and sometimes longer than two, and/or
//! it becomes slow (every message to or from it takes seconds longer) for a while. The holders
//! cannot confirm their leases: past their conservative deadlines they enter jeopardy and go
//! quiet (P12 b, P13), starting no effect and claiming nothing (I5). When the coordinator comes
//! back, a holder whose lease survived by the coordinator's clock is renewed and leaves jeopardy;
//! one whose lease expired is told "no row" (P4, P12 a) and stops, and the job is claimed again
//! with a higher token (P3, P15), by the waiting worker or by whoever asks first. Every job still
//! finishes (I7). The seed varies the lease, the tool durations, when the outage starts, how long
//! it lasts, and whether and how much the coordinator is slow before or after it.

use super::story::Story;
use super::Stock;
use crate::plan::{Fault, FaultKind, Trigger};
use crate::setup::Setup;
use leasesim_checkers::Hazard;
use leasesim_protocol::{OpId, Step, Variant, MILLI_NS};

/// `create_case`.
const CREATE_CASE: OpId = OpId(1);
/// `update_case`.
const UPDATE_CASE: OpId = OpId(2);
/// `write`.
const WRITE: OpId = OpId(3);

/// The `coordinator-outage` scenario.
pub const DEF: Stock = Stock {
    name: "coordinator-outage",
    story: "the coordinator is cut off and/or slow for a seed-chosen time while two jobs run; \
            holders go quiet in jeopardy, then either are renewed or lose the lease and the job \
            is retaken; every job finishes",
    hazards: &[
        Hazard::CoordinatorOutage,
        Hazard::JeopardyEntered,
        Hazard::JeopardyExited,
        Hazard::HeartbeatRefused,
        Hazard::Takeover,
        Hazard::MessageLost,
    ],
    unjudged: &[],
    build,
};

fn build(seed: u64, variant: Variant) -> Setup {
    let mut s = Story::new(
        "coordinator-outage",
        seed,
        variant,
        &[1, 2, 3],
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
            Step::Effect {
                op: WRITE,
                receiver: 0,
            },
        ],
        2,
    );
    let lease_ms = s.lease_ns() / MILLI_NS;
    // Work that spans a few heartbeat periods, so that the outage finds holders mid-plan.
    s.tool_step(1, s.lease_ns() / 4, s.lease_ns());
    s.tool_step(3, s.lease_ns() / 4, s.lease_ns());
    s.start_worker(1, 0, 500);
    // The third worker waits for work; it is the usual taker of an expired lease.
    s.start_worker(2, 1_000, 3_000);
    let coord = s.coordinator();
    // The holders claim within half a second and their plans take at least half a lease: a
    // fault starting between an eighth of a lease and 0.45 L finds both of them mid-plan, at
    // any phase of their heartbeat period (H is 0.2 L to 0.33 L).
    let start_ns = s.ms(lease_ms / 8, lease_ms * 45 / 100);
    // 0: a cut only; 1: slow only; 2: slow, then cut; 3: cut, then slow.
    let mode = s.r.range(0, 3);
    // From well inside a lease to more than two.
    let outage_ns = s.ms(lease_ms / 4, lease_ms * 5 / 2);
    // At the top of the range a renewal's round trip outlasts the holder's window, so that
    // slowness alone can bring jeopardy.
    let extra_ns = s.ms(200, lease_ms * 6 / 10);
    let slow_ns = s.ms(lease_ms / 2, lease_ms * 2);
    let window = |kind, from: u64, len: u64| {
        Fault::new(Trigger::at(from), kind).until(Trigger::at(from + len))
    };
    let isolate = |from, len| window(FaultKind::Isolate { node: coord }, from, len);
    let slow = |from, len| {
        let kind = FaultKind::Slow {
            node: coord,
            extra_ns,
        };
        window(kind, from, len)
    };
    match mode {
        0 => s.fault(isolate(start_ns, outage_ns)),
        1 => s.fault(slow(start_ns, slow_ns)),
        2 => {
            s.fault(slow(start_ns, slow_ns));
            s.fault(isolate(start_ns + slow_ns, outage_ns));
        }
        _ => {
            s.fault(isolate(start_ns, outage_ns));
            s.fault(slow(start_ns + outage_ns, slow_ns));
        }
    }
    s.finish()
}
