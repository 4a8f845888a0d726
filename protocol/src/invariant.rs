//! The invariants of the SPEC (I1-I8) as names, and a finding: one violation the checkers
//! found in a run's history. The checkers themselves judge traces and live with the scenarios.

use serde::{Deserialize, Serialize};

/// An invariant the checkers verify over each run's history.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Invariant {
    /// I1: every accepted result was committed by the current token while its lease was valid
    /// by the coordinator's clock; at most one accepted result per job.
    NoStaleCommit,
    /// I2: each idempotency key takes effect at most once; a fencing receiver never accepts a
    /// token lower than one it already admitted for that entity.
    NoDoubleEffect,
    /// I3: tokens strictly increase per job; at most one valid lease per job at any instant.
    SingleValidLease,
    /// I4: no extension of a lease for a non-owner, a stale token or an expired lease.
    NoStaleExtension,
    /// I5: a holder in jeopardy or after loss starts no effect and claims no success, and a
    /// holder never acts outside the lease the coordinator granted.
    QuiescentHolder,
    /// I6: every rejected result and every lost lease is journaled; every accepted effect is
    /// traceable to a lease.
    NothingLost,
    /// I7: once faults heal every job ends within its bound, and a healthy holder is never
    /// taken over.
    Liveness,
    /// I8: every takeover has a recorded reason and a higher epoch.
    RecordedTakeover,
}

impl Invariant {
    /// Every invariant.
    pub const ALL: [Invariant; 8] = [
        Invariant::NoStaleCommit,
        Invariant::NoDoubleEffect,
        Invariant::SingleValidLease,
        Invariant::NoStaleExtension,
        Invariant::QuiescentHolder,
        Invariant::NothingLost,
        Invariant::Liveness,
        Invariant::RecordedTakeover,
    ];

    /// The short name.
    pub fn name(self) -> &'static str {
        match self {
            Invariant::NoStaleCommit => "no-stale-commit",
            Invariant::NoDoubleEffect => "no-double-effect",
            Invariant::SingleValidLease => "single-valid-lease",
            Invariant::NoStaleExtension => "no-stale-extension",
            Invariant::QuiescentHolder => "quiescent-holder",
            Invariant::NothingLost => "nothing-lost",
            Invariant::Liveness => "liveness",
            Invariant::RecordedTakeover => "recorded-takeover",
        }
    }

    /// The SPEC id.
    pub fn spec_id(self) -> &'static str {
        match self {
            Invariant::NoStaleCommit => "I1",
            Invariant::NoDoubleEffect => "I2",
            Invariant::SingleValidLease => "I3",
            Invariant::NoStaleExtension => "I4",
            Invariant::QuiescentHolder => "I5",
            Invariant::NothingLost => "I6",
            Invariant::Liveness => "I7",
            Invariant::RecordedTakeover => "I8",
        }
    }

    /// `name (id)`, as reports print it.
    pub fn label(self) -> String {
        format!("{} ({})", self.name(), self.spec_id())
    }

    /// One line on what it demands.
    pub fn summary(self) -> &'static str {
        match self {
            Invariant::NoStaleCommit => {
                "an accepted result comes from the current token within its lease; one per job"
            }
            Invariant::NoDoubleEffect => {
                "each key takes effect once; a fencing receiver never accepts a lower fence"
            }
            Invariant::SingleValidLease => {
                "tokens strictly increase; at most one valid lease per job at any instant"
            }
            Invariant::NoStaleExtension => {
                "no renewal for a non-owner, a stale token or an expired lease"
            }
            Invariant::QuiescentHolder => {
                "no effect or success claim in jeopardy or after loss; no action outside the grant"
            }
            Invariant::NothingLost => {
                "every rejected result and lost lease is journaled; every effect traces to a lease"
            }
            Invariant::Liveness => {
                "after healing every job ends within its bound; no healthy holder is taken over"
            }
            Invariant::RecordedTakeover => "every takeover records its reason and a higher epoch",
        }
    }
}

/// One violation found in a run.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Finding {
    /// The invariant broken.
    pub invariant: Invariant,
    /// True time of the event that broke it.
    pub t_ns: u64,
    /// The node where it happened.
    pub node: u32,
    /// A sentence that explains it.
    pub message: String,
}
