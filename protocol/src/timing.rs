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
