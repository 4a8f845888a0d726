//! Timing rules (P6): the holder's conservative deadline and the liveness condition.

use crate::types::Nanos;

const PPM: u128 = 1_000_000;

/// The latest local time at which a holder may still act, measured from the local *send* time
/// `sent_at` of its last acknowledged claim or renewal: `s + L*(1 - rho)/(1 + rho) - G`
/// (Gray and Cheriton). Measuring from the reply's arrival would overshoot by the flight time.
pub fn holder_deadline(
    sent_at: Nanos,
    lease_ns: Nanos,
    drift_ppm: u32,
    stop_margin_ns: Nanos,
) -> Nanos {
    let rho = drift_ppm as u128;
    assert!(
        rho < PPM,
        "a drift bound of 100% or more makes every lease unsafe"
    );
    let window = (lease_ns as u128) * (PPM - rho) / (PPM + rho);
    (sent_at as u128 + window).saturating_sub(stop_margin_ns as u128) as Nanos
}

/// The liveness condition with drift: `L >= (1 + rho)/(1 - rho) * R*H + J` (and `L > R*H + J`
/// without drift). Returns the smallest lease that satisfies it, so callers can print both.
pub fn min_safe_lease(heartbeat_ns: Nanos, misses: u32, jitter_ns: Nanos, drift_ppm: u32) -> Nanos {
    let rho = drift_ppm as u128;
    assert!(
        rho < PPM,
        "a drift bound of 100% or more makes every lease unsafe"
    );
    let rh = heartbeat_ns as u128 * misses as u128;
    // Round up: the bound is a minimum.
    let scaled = (rh * (PPM + rho)).div_ceil(PPM - rho);
    (scaled + jitter_ns as u128) as Nanos
}

/// The largest heartbeat period for which `lease_ns` still satisfies the condition strictly.
pub fn max_safe_heartbeat(lease_ns: Nanos, misses: u32, jitter_ns: Nanos, drift_ppm: u32) -> Nanos {
    if misses == 0 || lease_ns <= jitter_ns {
        return 0;
    }
    let rho = drift_ppm as u128;
    let room = (lease_ns - jitter_ns) as u128;
    // (1+rho)/(1-rho) * R * H < room  =>  H < room * (1-rho) / ((1+rho) * R)
    let h = room * (PPM - rho) / ((PPM + rho) * misses as u128);
    let mut h = h as Nanos;
    while h > 0 && !lease_is_safe(lease_ns, h, misses, jitter_ns, drift_ppm) {
        h -= 1;
    }
    h
}

/// Everything P6 and the holder's deadline depend on: one lease timing of one holder.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Timing {
    /// L: the lease on the coordinator's clock.
    pub lease_ns: Nanos,
    /// H: the holder's heartbeat (renewal) period.
    pub heartbeat_ns: Nanos,
    /// R: heartbeats per lease window (R - 1 missed renewals are tolerated).
    pub misses: u32,
    /// J: the worst renewal latency.
    pub jitter_ns: Nanos,
    /// rho: the holder's clock rate error bound, in ppm.
    pub drift_ppm: u32,
    /// G: the time the holder needs to stop producing effects.
    pub stop_margin_ns: Nanos,
}

/// Why a timing is unsafe ([`check`]).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Unsafe {
    /// L is not longer than `(1+rho)/(1-rho)*R*H + J`, the bound given here in 128 bits (it may
    /// not fit 64): a healthy holder can lose its lease between two renewals.
    LeaseTooShort {
        /// The bound L must exceed.
        bound_ns: u128,
    },
    /// The stop margin G is not shorter than the drift-corrected lease `L*(1-rho)/(1+rho)`:
    /// the holder's deadline is at or before its renewal's send, so it may never act.
    NoWindow {
        /// `L*(1-rho)/(1+rho)`.
        window_ns: Nanos,
    },
}

/// `ceil((1+rho)/(1-rho) * R*H) + J` in 128 bits: [`min_safe_lease`] without the 64-bit
/// truncation, so that a huge `R*H` is a bound no lease meets instead of a wrapped small one.
/// `drift_ppm` must be below 1_000_000.
pub fn lease_bound_ns(heartbeat_ns: Nanos, misses: u32, jitter_ns: Nanos, drift_ppm: u32) -> u128 {
    let rho = drift_ppm as u128;
    assert!(
        rho < PPM,
        "a drift bound of 100% or more makes every lease unsafe"
    );
    let rh = heartbeat_ns as u128 * misses as u128;
    (rh * (PPM + rho)).div_ceil(PPM - rho) + jitter_ns as u128
}

/// Whether a timing is safe (P6): the one answer that `run`, `sweep`, `replay` (through the
/// setup's validation) and `advise` all give, so they can never disagree. Safe is `L >
/// (1+rho)/(1-rho)*R*H + J` (in 128 bits) and a holder window `L*(1-rho)/(1+rho) - G` above 0.
/// A drift bound of 100% or more is unsafe for every lease.
pub fn check(t: &Timing) -> Result<(), Unsafe> {
    if t.drift_ppm as u128 >= PPM {
        return Err(Unsafe::LeaseTooShort {
            bound_ns: u128::MAX,
        });
    }
    let bound_ns = lease_bound_ns(t.heartbeat_ns, t.misses, t.jitter_ns, t.drift_ppm);
    if t.lease_ns as u128 <= bound_ns {
        return Err(Unsafe::LeaseTooShort { bound_ns });
    }
    if holder_deadline(0, t.lease_ns, t.drift_ppm, t.stop_margin_ns) == 0 {
        return Err(Unsafe::NoWindow {
            window_ns: holder_deadline(0, t.lease_ns, t.drift_ppm, 0),
        });
    }
    Ok(())
}

/// Whether `lease_ns` satisfies the liveness condition strictly (`L > ...`).
pub fn lease_is_safe(
    lease_ns: Nanos,
    heartbeat_ns: Nanos,
    misses: u32,
    jitter_ns: Nanos,
    drift_ppm: u32,
) -> bool {
    lease_ns > min_safe_lease(heartbeat_ns, misses, jitter_ns, drift_ppm)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::{MILLI_NS, SECOND_NS};

    #[test]
    fn worked_example_of_the_spec() {
        // L = 30 s, H = 5 s, R = 3, J = 2 s, rho = 500 ppm, G = 2 s: 17 s < 30 s and the
        // holder's window is about 27.97 s from the send.
        assert!(lease_is_safe(
            30 * SECOND_NS,
            5 * SECOND_NS,
            3,
            2 * SECOND_NS,
            500
        ));
        let d = holder_deadline(0, 30 * SECOND_NS, 500, 2 * SECOND_NS);
        assert!(d > 27_960 * MILLI_NS && d < 27_980 * MILLI_NS, "{d}");
    }

    #[test]
    fn the_largest_safe_heartbeat_is_safe_and_one_more_is_not() {
        for (l, r, j, rho) in [(90, 1, 20, 0), (30, 3, 2, 500), (35, 1, 20, 0)] {
            let (l, j) = (l * SECOND_NS, j * SECOND_NS);
            let h = max_safe_heartbeat(l, r, j, rho);
            assert!(lease_is_safe(l, h, r, j, rho));
            assert!(!lease_is_safe(l, h + 1, r, j, rho));
        }
    }

    #[test]
    fn article_examples_p6() {
        assert!(lease_is_safe(
            90 * SECOND_NS,
            30 * SECOND_NS,
            1,
            20 * SECOND_NS,
            0
        ));
        assert!(!lease_is_safe(
            35 * SECOND_NS,
            30 * SECOND_NS,
            1,
            20 * SECOND_NS,
            0
        ));
    }

    #[test]
    fn the_one_check_refuses_a_short_lease_an_overflowing_bound_and_a_stop_margin_that_eats_the_lease(
    ) {
        let t = Timing {
            lease_ns: 30 * SECOND_NS,
            heartbeat_ns: 5 * SECOND_NS,
            misses: 3,
            jitter_ns: 2 * SECOND_NS,
            drift_ppm: 500,
            stop_margin_ns: 2 * SECOND_NS,
        };
        assert_eq!(check(&t), Ok(()));
        let short = Timing {
            heartbeat_ns: 10 * SECOND_NS,
            ..t
        };
        assert!(matches!(check(&short), Err(Unsafe::LeaseTooShort { .. })));
        // R*H beyond 64 bits: min_safe_lease would wrap to a small bound.
        let huge = Timing {
            heartbeat_ns: 1 << 60,
            misses: 64,
            ..t
        };
        assert!(
            matches!(check(&huge), Err(Unsafe::LeaseTooShort { bound_ns }) if bound_ns > u64::MAX as u128)
        );
        let margin = Timing {
            stop_margin_ns: 30 * SECOND_NS,
            ..t
        };
        assert!(
            matches!(check(&margin), Err(Unsafe::NoWindow { window_ns }) if window_ns < 30 * SECOND_NS)
        );
    }

    #[test]
    fn deadline_is_earlier_than_the_grant_and_runs_from_the_send() {
        let d = holder_deadline(1_000, 10_000, 0, 0);
        assert_eq!(d, 11_000);
        assert!(holder_deadline(1_000, 10_000, 1_000, 0) < d);
        assert_eq!(
            holder_deadline(0, 10, 0, 100),
            0,
            "saturates instead of wrapping"
        );
    }
}
