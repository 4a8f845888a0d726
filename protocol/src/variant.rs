//! Known-bad variants: each one is a single switch off the reference protocol (SPEC V1-V14).
//!
//! A variant exists so that the checkers can be proved by the bugs they catch. The reference is
//! the all-off switch set; every named variant turns exactly one switch on.

use serde::{Deserialize, Serialize};

/// The switch set the machines consult. All `false` is the reference protocol.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Switches {
    /// V2: the coordinator applies the final commit without checking state, owner, token or
    /// expiry.
    pub unconditional_commit: bool,
    /// V3: a receiver that claims fence support ignores the fence.
    pub receiver_ignores_fence: bool,
}

/// A named protocol variant.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Variant {
    /// The reference protocol: every rule of the SPEC.
    Reference,
    /// V2: unconditional final commit.
    UnconditionalCommit,
    /// V3: receiver without fence check.
    ReceiverIgnoresFence,
}

impl Variant {
    /// Every variant, the reference first.
    pub const ALL: [Variant; 3] = [
        Variant::Reference,
        Variant::UnconditionalCommit,
        Variant::ReceiverIgnoresFence,
    ];

    /// The kebab-case name used on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Variant::Reference => "reference",
            Variant::UnconditionalCommit => "unconditional-commit",
            Variant::ReceiverIgnoresFence => "receiver-ignores-fence",
        }
    }

    /// The SPEC id of the bug it models (`-` for the reference).
    pub fn spec_id(self) -> &'static str {
        match self {
            Variant::Reference => "-",
            Variant::UnconditionalCommit => "V2",
            Variant::ReceiverIgnoresFence => "V3",
        }
    }

    /// One line on what it does.
    pub fn summary(self) -> &'static str {
        match self {
            Variant::Reference => "the protocol as the SPEC states it",
            Variant::UnconditionalCommit => {
                "the final commit is applied without checking state, owner, token or expiry"
            }
            Variant::ReceiverIgnoresFence => {
                "the effect receiver accepts a fence lower than one it already admitted"
            }
        }
    }

    /// Looks a variant up by its command-line name.
    pub fn from_name(name: &str) -> Option<Variant> {
        Variant::ALL.into_iter().find(|v| v.name() == name)
    }

    /// The switch set that realises the variant.
    pub fn switches(self) -> Switches {
        let mut s = Switches::default();
        match self {
            Variant::Reference => {}
            Variant::UnconditionalCommit => s.unconditional_commit = true,
            Variant::ReceiverIgnoresFence => s.receiver_ignores_fence = true,
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_variant_is_one_switch_off_the_reference() {
        assert_eq!(Variant::Reference.switches(), Switches::default());
        for v in Variant::ALL.into_iter().skip(1) {
            let s = v.switches();
            let on = [s.unconditional_commit, s.receiver_ignores_fence]
                .iter()
                .filter(|b| **b)
                .count();
            assert_eq!(on, 1, "{} must turn exactly one switch on", v.name());
        }
    }

    #[test]
    fn names_round_trip() {
        for v in Variant::ALL {
            assert_eq!(Variant::from_name(v.name()), Some(v));
        }
        assert_eq!(Variant::from_name("no-such-variant"), None);
    }
}
