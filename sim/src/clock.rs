//! Per-node clocks: a local reading as a linear function of true time, with an offset, a drift
//! rate in parts per million, and steps forward or back (F4). Integer arithmetic only.

use serde::{Deserialize, Serialize};

const PPM: i128 = 1_000_000;

/// A node's clock. `local(t) = anchor_local + (t - anchor_true) * (1e6 + drift_ppm) / 1e6`.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Clock {
    /// True time of the anchor point.
    pub anchor_true: u64,
    /// Local reading at the anchor point.
    pub anchor_local: u64,
    /// Rate error: positive runs fast.
    pub drift_ppm: i32,
    /// The wall clock's distance from this (monotonic) clock. Wall-clock steps move only this,
    /// so a protocol that measures leases on its monotonic clock never sees them.
    #[serde(default)]
    pub wall_offset_ns: i64,
}

impl Clock {
    /// A clock that reads `offset_ns` at true time 0 and runs at `1 + drift_ppm/1e6`.
    pub fn new(offset_ns: u64, drift_ppm: i32) -> Clock {
        assert!(drift_ppm > -(PPM as i32), "a clock must run forward");
        Clock {
            anchor_true: 0,
            anchor_local: offset_ns,
            drift_ppm,
            wall_offset_ns: 0,
        }
    }

    /// The wall-clock reading at true time `t`: the monotonic reading plus the wall offset.
    #[inline]
    pub fn wall(&self, t: u64) -> u64 {
        self.wall_of(self.local(t))
    }

    /// The wall-clock reading when the monotonic clock reads `local`: a caller that already
    /// has the monotonic reading does not compute it again.
    #[inline]
    pub fn wall_of(&self, local: u64) -> u64 {
        if self.wall_offset_ns == 0 {
            return local;
        }
        (local as i128 + self.wall_offset_ns as i128).clamp(0, u64::MAX as i128) as u64
    }

    /// Steps the wall clock only (an NTP step, an operator setting the date).
    pub fn step_wall(&mut self, delta_ns: i64) {
        self.wall_offset_ns = self.wall_offset_ns.saturating_add(delta_ns);
    }

    /// The local reading at true time `t` (saturating at 0 and at `u64::MAX`).
    #[inline]
    pub fn local(&self, t: u64) -> u64 {
        // Fast path, exactly equal to the general one: forward of the anchor and short enough
        // that `dt * rate` fits in 64 bits; the rate is positive, so the product is
        // non-negative and 64-bit division truncates as the 128-bit one does.
        if t >= self.anchor_true {
            if self.drift_ppm == 0 {
                // A true-rate clock: `dt * 1e6 / 1e6` is `dt`, no multiplication or division.
                return self.anchor_local.saturating_add(t - self.anchor_true);
            }
            let rate = PPM as i64 + self.drift_ppm as i64;
            if let Some(p) = i64::try_from(t - self.anchor_true)
                .ok()
                .and_then(|dt| dt.checked_mul(rate))
            {
                return self.anchor_local.saturating_add((p / PPM as i64) as u64);
            }
        }
        self.local_slow(t)
    }

    /// [`Clock::local`] when no fast path applies: in 128 bits, out of line so that the fast
    /// paths inline small wherever a clock is read.
    #[inline(never)]
    fn local_slow(&self, t: u64) -> u64 {
        let dt = t as i128 - self.anchor_true as i128;
        let v = self.anchor_local as i128 + dt * (PPM + self.drift_ppm as i128) / PPM;
        v.clamp(0, u64::MAX as i128) as u64
    }

    /// The earliest true time `>= now` at which the clock reads at least `local_deadline`.
    /// The fast paths are inlined where a wake is armed; the general one is a call of its own.
    #[inline]
    pub fn true_at(&self, local_deadline: u64, now: u64) -> u64 {
        // Fast path for a true-rate clock read at or after its anchor, exactly equal to the
        // general one: the deadline is reached `deadline - anchor_local` after the anchor, or
        // now if that is already past (the reading then is at least the deadline, saturated
        // or not); the nudge below would find the reading reached at once.
        if self.drift_ppm == 0 && now >= self.anchor_true && local_deadline >= self.anchor_local {
            if let Some(t) = self
                .anchor_true
                .checked_add(local_deadline - self.anchor_local)
            {
                return t.max(now);
            }
        }
        // Fast path, exactly equal to the general one: read at or after the anchor, the
        // deadline ahead of the anchor, and `dl * 1e6 + rate` fitting in 64 bits, where the
        // division is one instruction rather than a 128-bit routine (both truncate a
        // non-negative quotient alike). No nudge is needed: with `q = ceil(dl * 1e6 / rate)`,
        // `q * rate >= dl * 1e6`, so the reading `q` after the anchor is at least the deadline
        // (or saturated), and `(q - 1) * rate < dl * 1e6`, so one nanosecond earlier it is not:
        // `anchor + q` is the first instant the deadline is met, and a deadline the reading now
        // already meets has it at most `now`.
        if now >= self.anchor_true && local_deadline >= self.anchor_local {
            let rate = PPM as i64 + self.drift_ppm as i64;
            if let Some(num) = i64::try_from(local_deadline - self.anchor_local)
                .ok()
                .and_then(|dl| dl.checked_mul(PPM as i64))
                .and_then(|x| x.checked_add(rate - 1))
            {
                if let Some(t) = self.anchor_true.checked_add((num / rate) as u64) {
                    return t.max(now);
                }
            }
        }
        self.true_at_slow(local_deadline, now)
    }

    /// [`Clock::true_at`] when no fast path applies: in 128 bits.
    #[inline(never)]
    fn true_at_slow(&self, local_deadline: u64, now: u64) -> u64 {
        if self.local(now) >= local_deadline {
            return now;
        }
        let rate = PPM + self.drift_ppm as i128;
        let dl = local_deadline as i128 - self.anchor_local as i128;
        // ceil(dl * 1e6 / rate), then nudge forward until the reading really is reached
        // (integer division in `local` can lose one nanosecond).
        let mut t =
            (self.anchor_true as i128 + (dl * PPM + rate - 1) / rate).max(now as i128) as u64;
        for _ in 0..4 {
            if self.local(t) >= local_deadline {
                break;
            }
            t += 1;
        }
        t
    }

    /// Re-anchors at true time `now`, keeping the reading, then changes the rate.
    pub fn set_drift(&mut self, now: u64, drift_ppm: i32) {
        assert!(drift_ppm > -(PPM as i32), "a clock must run forward");
        self.anchor_local = self.local(now);
        self.anchor_true = now;
        self.drift_ppm = drift_ppm;
    }

    /// Steps the monotonic reading by `delta_ns` (forward if positive) at true time `now`.
    pub fn step(&mut self, now: u64, delta_ns: i64) {
        let v = self.local(now) as i128 + delta_ns as i128;
        self.anchor_local = v.clamp(0, u64::MAX as i128) as u64;
        self.anchor_true = now;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The general formula, without the fast path.
    fn local_general(c: &Clock, t: u64) -> u64 {
        let dt = t as i128 - c.anchor_true as i128;
        let v = c.anchor_local as i128 + dt * (PPM + c.drift_ppm as i128) / PPM;
        v.clamp(0, u64::MAX as i128) as u64
    }

    /// The general inverse, without the fast path.
    fn true_at_general(c: &Clock, local_deadline: u64, now: u64) -> u64 {
        if local_general(c, now) >= local_deadline {
            return now;
        }
        let rate = PPM + c.drift_ppm as i128;
        let dl = local_deadline as i128 - c.anchor_local as i128;
        let mut t = (c.anchor_true as i128 + (dl * PPM + rate - 1) / rate).max(now as i128) as u64;
        for _ in 0..4 {
            if local_general(c, t) >= local_deadline {
                break;
            }
            t += 1;
        }
        t
    }

    #[test]
    fn the_fast_path_is_the_general_formula() {
        // A small deterministic generator: anchors, drifts at and inside the bounds, instants
        // before, at and after the anchor, and around the fast path's length limit.
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let limit = (i64::MAX as u64) / (2 * PPM as u64);
        for i in 0..200_000u64 {
            let drift = match i % 5 {
                0 => -(PPM as i32) + 1,
                1 => PPM as i32 * 4,
                2 => 0,
                _ => (next() % 2_000_001) as i32 - 1_000_000,
            }
            .max(-(PPM as i32) + 1);
            let c = Clock {
                anchor_true: next() % (1 << 50),
                anchor_local: if i % 7 == 0 {
                    u64::MAX - next() % 1000
                } else {
                    next() % (1 << 55)
                },
                drift_ppm: drift,
                wall_offset_ns: 0,
            };
            let t = match i % 4 {
                0 => c
                    .anchor_true
                    .saturating_add(limit)
                    .saturating_sub(next() % 3),
                1 => c.anchor_true.saturating_sub(next() % 1_000_000),
                2 => c.anchor_true + next() % (1 << 44),
                _ => c.anchor_true.saturating_add(limit + next() % 5),
            };
            assert_eq!(c.local(t), local_general(&c, t), "{c:?} at {t}");
            let wall = Clock {
                wall_offset_ns: 0,
                ..c
            };
            assert_eq!(wall.wall(t), local_general(&c, t), "{c:?} wall at {t}");
            // The inverse, for deadlines just behind, at and ahead of the reading at `t`, and
            // far ahead.
            let reading = local_general(&c, t);
            for deadline in [
                reading.saturating_sub(next() % 1_000),
                reading,
                reading.saturating_add(1 + next() % (1 << 40)),
                reading.saturating_add(next() % (1 << 62)),
            ] {
                if c.anchor_local > u64::MAX / 2 || t > u64::MAX / 4 {
                    continue;
                }
                assert_eq!(
                    c.true_at(deadline, t),
                    true_at_general(&c, deadline, t),
                    "{c:?}: deadline {deadline} from {t}"
                );
            }
        }
    }

    #[test]
    fn drift_offset_and_inverse_agree() {
        let c = Clock::new(5_000, 250);
        assert_eq!(c.local(0), 5_000);
        assert_eq!(c.local(1_000_000), 5_000 + 1_000_250);
        for d in [5_000u64, 5_001, 777_777, 1_000_000_007] {
            let t = c.true_at(d, 0);
            assert!(c.local(t) >= d);
            assert!(
                t == 0 || c.local(t - 1) < d,
                "true_at must be the earliest instant"
            );
        }
    }

    #[test]
    fn slow_clock_and_steps() {
        let mut c = Clock::new(0, -500);
        assert_eq!(c.local(1_000_000), 999_500);
        c.step(1_000_000, -2_000_000);
        assert_eq!(c.local(1_000_000), 0, "a step back saturates at zero");
        c.step(1_000_000, 10);
        assert_eq!(c.local(1_000_000), 10);
        c.set_drift(1_000_000, 0);
        assert_eq!(c.local(2_000_000), 1_000_010);
        assert_eq!(
            c.true_at(5, 1_000_000),
            1_000_000,
            "a passed deadline is due now"
        );
    }
}
