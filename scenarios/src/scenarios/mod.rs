//! Named scenarios: each a story whose timings the seed varies.

use crate::setup::Setup;
use leasesim_protocol::Variant;

mod w1_w2;

/// A named scenario.
pub struct ScenarioDef {
    /// Kebab-case name.
    pub name: &'static str,
    /// The story in one line.
    pub story: &'static str,
    /// Builds the setup for a seed and a variant.
    pub build: fn(seed: u64, variant: Variant) -> Setup,
}

/// Every scenario, in the order `list` shows them.
pub const ALL: &[ScenarioDef] = &[ScenarioDef {
    name: "w1-w2",
    story: "W1 loses only the coordinator past its lease expiry; W2 takes over and completes; \
            W1 returns with a late tool success and a late second effect",
    build: w1_w2::build,
}];

/// Looks a scenario up by name.
pub fn find(name: &str) -> Option<&'static ScenarioDef> {
    ALL.iter().find(|s| s.name == name)
}
