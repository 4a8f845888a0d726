//! The one source of randomness: ChaCha8 (a pinned algorithm) seeded from the run's seed, with a
//! separate stream per purpose so that a new draw in one purpose does not shift the others.
//! Ranges and probabilities use our own integer arithmetic, so no library change can move them.

use rand_chacha::ChaCha8Rng;
use rand_core::{Rng, SeedableRng};

/// What a stream is used for. The discriminant is the ChaCha stream number: never renumber.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Stream {
    /// Message latencies and fates.
    Network = 1,
    /// Fault timing and choice.
    Faults = 2,
    /// Scenario configuration (timings, clocks).
    Config = 3,
    /// Tool durations and answers.
    Tool = 4,
}

/// A deterministic generator for one purpose.
#[derive(Clone, Debug)]
pub struct Prng {
    inner: ChaCha8Rng,
}

impl Prng {
    /// The stream `stream` of seed `seed`.
    pub fn new(seed: u64, stream: Stream) -> Prng {
        let mut inner = ChaCha8Rng::seed_from_u64(seed);
        inner.set_stream(stream as u64);
        Prng { inner }
    }

    /// The next raw 64 bits.
    pub fn next_u64(&mut self) -> u64 {
        self.inner.next_u64()
    }

    /// A uniform draw in `lo..=hi` (multiply-high reduction; `lo <= hi`).
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        assert!(lo <= hi, "empty range {lo}..={hi}");
        let span = (hi - lo) as u128 + 1;
        lo + ((self.next_u64() as u128 * span) >> 64) as u64
    }

    /// A signed uniform draw in `lo..=hi`.
    pub fn range_i64(&mut self, lo: i64, hi: i64) -> i64 {
        assert!(lo <= hi, "empty range {lo}..={hi}");
        let span = (hi as i128 - lo as i128) as u64;
        (lo as i128 + self.range(0, span) as i128) as i64
    }

    /// True with probability `num/den` (an integer ratio, never a float).
    pub fn chance(&mut self, num: u32, den: u32) -> bool {
        assert!(den > 0 && num <= den, "bad ratio {num}/{den}");
        self.range(0, den as u64 - 1) < num as u64
    }

    /// A uniform index below `len` (`len > 0`).
    pub fn index(&mut self, len: usize) -> usize {
        assert!(len > 0, "index into an empty set");
        self.range(0, len as u64 - 1) as usize
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streams_are_independent_and_reproducible() {
        let mut a = Prng::new(7, Stream::Network);
        let mut b = Prng::new(7, Stream::Faults);
        let mut a2 = Prng::new(7, Stream::Network);
        let (x, y, z) = (a.next_u64(), b.next_u64(), a2.next_u64());
        assert_eq!(x, z);
        assert_ne!(x, y);
    }

    #[test]
    fn ranges_stay_inside() {
        let mut r = Prng::new(1, Stream::Config);
        for _ in 0..10_000 {
            let v = r.range(3, 9);
            assert!((3..=9).contains(&v));
            let s = r.range_i64(-5, 5);
            assert!((-5..=5).contains(&s));
        }
        assert_eq!(r.range(4, 4), 4);
        assert!(!r.chance(0, 10));
        assert!(r.chance(10, 10));
    }
}
