//! The judgement of one run, as every report, file and exit code states it.

use leasesim_sim::End;
use serde::{Deserialize, Serialize};

/// The judgement of one run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "verdict", rename_all = "snake_case")]
pub enum Verdict {
    /// Every invariant held and the run ended by itself.
    Held,
    /// At least one invariant was violated.
    Violated,
    /// The run hit a limit (event budget, horizon, queue bound) before it ended: a runaway; or
    /// the engine stopped it because its own check failed.
    Unfinished {
        /// Which limit.
        end: End,
    },
    /// The configuration was refused before it ran: a scenario drew one that breaks P6. A
    /// scenario that does is broken (every named one keeps its draws inside the bound).
    Invalid {
        /// Why, in one line.
        reason: String,
    },
}

impl Verdict {
    /// The process exit code: 0 held, 1 anything else.
    pub fn exit_code(&self) -> i32 {
        match self {
            Verdict::Held => 0,
            Verdict::Violated | Verdict::Unfinished { .. } | Verdict::Invalid { .. } => 1,
        }
    }

    /// The verdict as the timeline's last line says it: `HELD`, `VIOLATED`, or
    /// `UNFINISHED (<limit> limit reached)`.
    pub fn word(&self) -> String {
        match self {
            Verdict::Held => "HELD".into(),
            Verdict::Violated => "VIOLATED".into(),
            Verdict::Unfinished {
                end: End::TimeReversed,
            } => "ENGINE ERROR (time ran backwards)".into(),
            Verdict::Unfinished {
                end: End::ProcessFault,
            } => "MACHINE ERROR (a machine broke a rule of its host)".into(),
            Verdict::Unfinished { end } => format!("UNFINISHED ({end:?} limit reached)"),
            Verdict::Invalid { reason } => format!("INVALID CONFIGURATION ({reason})"),
        }
    }
}
