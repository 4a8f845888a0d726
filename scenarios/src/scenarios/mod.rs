//! Named scenarios: each a story whose timings the seed varies, declaring the hazards it exists
//! to reach (a sweep of 100 seeds or more that never reaches one of them fails).

use crate::setup::Setup;
use leasesim_checkers::Hazard;
use leasesim_protocol::Variant;

pub mod story;

mod admission;
mod clock_jump;
mod clock_skew_fast_worker;
mod coordinator_outage;
mod duplicate_delivery;
mod gc_pause_after_check;
mod heartbeat_ack_lost;
mod human_handoff;
mod late_grant_reply;
mod late_tool_answer;
mod operator_takeover;
mod renewal_cap;
mod reordered_commit;
mod restart_same_name;
mod retries;
mod slow_but_healthy;
mod stages;
mod stuck_tool_live_heartbeat;
mod swarm;
mod w1_w2;

/// A named scenario.
pub struct ScenarioDef {
    /// Kebab-case name.
    pub name: &'static str,
    /// The story in one line.
    pub story: &'static str,
    /// The hazards it exists to reach.
    pub hazards: &'static [Hazard],
    /// Judgements its story voids by design in every run (a stepped clock voids
    /// `belief-within-grant`): a sweep allows them to be skipped everywhere, and still counts
    /// each skip.
    pub unjudged: &'static [&'static str],
    /// Builds the setup for a seed and a variant.
    pub build: fn(seed: u64, variant: Variant) -> Setup,
}

/// Every scenario, in the order `list` shows them.
pub const ALL: &[ScenarioDef] = &[
    ScenarioDef {
        name: "w1-w2",
        story: "W1 loses only the coordinator past its lease expiry; W2 takes over and completes; \
                W1 returns with a late tool success and a late second effect",
        hazards: &[
            Hazard::Takeover,
            Hazard::StaleCommitRejected,
            Hazard::StaleFenceRejected,
            Hazard::DuplicateKeyAnswered,
            Hazard::JeopardyEntered,
            Hazard::LateAnswerAfterExpiry,
            Hazard::MessageLate,
        ],
        unjudged: &[],
        build: w1_w2::build,
    },
    gc_pause_after_check::DEF,
    late_tool_answer::DEF,
    heartbeat_ack_lost::DEF,
    coordinator_outage::DEF,
    clock_skew_fast_worker::DEF,
    clock_jump::DEF,
    restart_same_name::DEF,
    duplicate_delivery::DEF,
    reordered_commit::DEF,
    operator_takeover::DEF,
    slow_but_healthy::DEF,
    stuck_tool_live_heartbeat::DEF,
    renewal_cap::DEF,
    retries::DEF,
    human_handoff::DEF,
    admission::DEF,
    stages::DEF,
    late_grant_reply::DEF,
    swarm::DEF,
];

/// Looks a scenario up by name.
pub fn find(name: &str) -> Option<&'static ScenarioDef> {
    ALL.iter().find(|s| s.name == name)
}
