//! Known-bad variants: each one is a single switch off the reference protocol (SPEC V1-V14).
//!
//! A variant exists so that the checkers can be proved by the bugs they catch. The reference is
//! the all-off switch set; every named variant turns exactly one switch on.

use serde::{Deserialize, Serialize};

/// The switch set the machines (and, for V12, the configuration) consult. All `false` is the
/// reference protocol.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Switches {
    /// V1: a heartbeat extends any running job's lease, without owner, token or expiry check.
    pub heartbeat_ignores_owner: bool,
    /// V2: the final commit is applied without checking state, owner, token or expiry.
    pub unconditional_commit: bool,
    /// V3: a receiver that claims fence support ignores the fence.
    pub receiver_ignores_fence: bool,
    /// V4: the worker makes a fresh idempotency key per attempt.
    pub fresh_key_per_attempt: bool,
    /// V5: the coordinator judges lease expiry by the requesting worker's clock.
    pub worker_clock_expiry: bool,
    /// V6: the worker never enters jeopardy: it keeps acting while ownership is unknown.
    pub no_jeopardy: bool,
    /// V7: the worker renews one second before it believes the lease ends.
    pub renew_at_last_second: bool,
    /// V8: the heartbeat runs on the tool's thread: none is sent while a tool call is running.
    pub heartbeat_on_tool_thread: bool,
    /// V9: the coordinator checks the owner's name but not the token.
    pub owner_name_only: bool,
    /// V10: the claim reads a candidate, then writes it a moment later without re-checking.
    pub non_atomic_claim: bool,
    /// V11: a running job is taken over by the age of its `running` status, not its lease.
    pub takeover_by_status_age: bool,
    /// V12: the heartbeat period makes L <= R*H + J (configuration, refused by validation).
    pub unsafe_timing: bool,
    /// V13: the lease length comes from the payload, not the job class.
    pub payload_lease_length: bool,
    /// V14: no cap on total renewal from the first claim.
    pub uncapped_renewal: bool,
}

macro_rules! variants {
    ($($variant:ident => $name:literal, $id:literal, $switch:ident, $summary:literal;)*) => {
        /// A named protocol variant.
        #[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
        #[serde(rename_all = "kebab-case")]
        pub enum Variant {
            /// The reference protocol: every rule of the SPEC.
            Reference,
            $(
                #[doc = $summary]
                $variant,
            )*
        }

        impl Variant {
            /// Every variant, the reference first.
            pub const ALL: &'static [Variant] = &[Variant::Reference, $(Variant::$variant),*];

            /// The kebab-case name used on the command line.
            pub fn name(self) -> &'static str {
                match self {
                    Variant::Reference => "reference",
                    $(Variant::$variant => $name,)*
                }
            }

            /// The SPEC id of the bug it models (`-` for the reference).
            pub fn spec_id(self) -> &'static str {
                match self {
                    Variant::Reference => "-",
                    $(Variant::$variant => $id,)*
                }
            }

            /// One line on the bug it models.
            pub fn summary(self) -> &'static str {
                match self {
                    Variant::Reference => "the protocol as the SPEC states it",
                    $(Variant::$variant => $summary,)*
                }
            }

            /// The switch set that realises the variant.
            pub fn switches(self) -> Switches {
                let mut s = Switches::default();
                match self {
                    Variant::Reference => {}
                    $(Variant::$variant => s.$switch = true,)*
                }
                s
            }
        }
    };
}

variants! {
    HeartbeatIgnoresOwner => "heartbeat-ignores-owner", "V1", heartbeat_ignores_owner,
        "a heartbeat extends any running job's lease: no owner, token or expiry check";
    UnconditionalCommit => "unconditional-commit", "V2", unconditional_commit,
        "the final commit is applied without checking state, owner, token or expiry";
    ReceiverIgnoresFence => "receiver-ignores-fence", "V3", receiver_ignores_fence,
        "the effect receiver accepts a fence lower than one it already admitted";
    FreshKeyPerAttempt => "fresh-key-per-attempt", "V4", fresh_key_per_attempt,
        "each attempt makes a fresh idempotency key instead of a stable key per operation";
    WorkerClockExpiry => "worker-clock-expiry", "V5", worker_clock_expiry,
        "lease expiry is judged by the requesting worker's wall clock, not the coordinator's";
    NoJeopardy => "no-jeopardy", "V6", no_jeopardy,
        "the holder keeps acting while it cannot confirm its lease";
    RenewAtLastSecond => "renew-at-last-second", "V7", renew_at_last_second,
        "the holder renews one second before its lease ends instead of every H";
    HeartbeatOnToolThread => "heartbeat-on-tool-thread", "V8", heartbeat_on_tool_thread,
        "no heartbeat is sent while a tool call is running";
    OwnerNameOnly => "owner-name-only", "V9", owner_name_only,
        "heartbeat and commit check the owner's name but not the token";
    NonAtomicClaim => "non-atomic-claim", "V10", non_atomic_claim,
        "the claim reads a candidate, then writes it later without checking again";
    TakeoverByStatusAge => "takeover-by-status-age", "V11", takeover_by_status_age,
        "a running job is taken over once its status is older than the lease, renewed or not";
    UnsafeTiming => "unsafe-timing", "V12", unsafe_timing,
        "the heartbeat period is as long as the lease: L <= R*H + J";
    PayloadLeaseLength => "payload-lease-length", "V13", payload_lease_length,
        "the lease length comes from the payload (what the model asked for), not the job class";
    UncappedRenewal => "uncapped-renewal", "V14", uncapped_renewal,
        "renewals go on forever: no cap on total lease time from the first claim";
}

impl Variant {
    /// Looks a variant up by its command-line name.
    pub fn from_name(name: &str) -> Option<Variant> {
        Variant::ALL.iter().copied().find(|v| v.name() == name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn on(s: Switches) -> usize {
        [
            s.heartbeat_ignores_owner,
            s.unconditional_commit,
            s.receiver_ignores_fence,
            s.fresh_key_per_attempt,
            s.worker_clock_expiry,
            s.no_jeopardy,
            s.renew_at_last_second,
            s.heartbeat_on_tool_thread,
            s.owner_name_only,
            s.non_atomic_claim,
            s.takeover_by_status_age,
            s.unsafe_timing,
            s.payload_lease_length,
            s.uncapped_renewal,
        ]
        .iter()
        .filter(|b| **b)
        .count()
    }

    #[test]
    fn each_variant_is_one_switch_off_the_reference() {
        assert_eq!(Variant::Reference.switches(), Switches::default());
        assert_eq!(Variant::ALL.len(), 15);
        let mut seen = Vec::new();
        for v in Variant::ALL.iter().skip(1) {
            let s = v.switches();
            assert_eq!(on(s), 1, "{} must turn exactly one switch on", v.name());
            assert!(!seen.contains(&s), "{} shares a switch", v.name());
            seen.push(s);
        }
    }

    #[test]
    fn names_and_ids_round_trip() {
        for (i, v) in Variant::ALL.iter().enumerate().skip(1) {
            assert_eq!(Variant::from_name(v.name()), Some(*v));
            assert_eq!(v.spec_id(), format!("V{i}"));
        }
        assert_eq!(Variant::from_name("no-such-variant"), None);
    }
}
