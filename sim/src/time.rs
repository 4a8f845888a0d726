//! Time in words: the one set of formatters every crate uses for nanoseconds, so a duration
//! reads the same in a timeline, a finding, a metric and a report.

/// Seconds with microsecond precision: `12.345678s` (timelines, findings).
pub fn secs(ns: u64) -> String {
    format!("{}.{:06}s", ns / 1_000_000_000, (ns / 1_000) % 1_000_000)
}

/// Seconds with millisecond precision, truncated: `12.345s`.
pub fn secs_ms(ns: u64) -> String {
    format!("{}.{:03}s", ns / 1_000_000_000, (ns / 1_000_000) % 1000)
}

/// Which way a value is rounded to the millisecond for display: a largest safe value is shown
/// rounded down, a smallest safe value up, anything else to the nearest.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Round {
    /// To the nearest millisecond.
    Nearest,
    /// Down.
    Down,
    /// Up.
    Up,
}

/// Seconds with millisecond precision, rounded as asked: `35.000s`. Takes 128 bits so a bound
/// beyond 64 bits of nanoseconds (an unsafe `R*H`) still prints.
pub fn secs_rounded(ns: u128, round: Round) -> String {
    const NS_PER_MS: u128 = 1_000_000;
    let ms = match round {
        Round::Nearest => (ns + NS_PER_MS / 2) / NS_PER_MS,
        Round::Down => ns / NS_PER_MS,
        Round::Up => ns.div_ceil(NS_PER_MS),
    };
    format!("{}.{:03}s", ms / 1000, ms % 1000)
}

/// Exact seconds, with at least millisecond precision: `35.000s`, `0.00025s`, `16.666666666s`.
pub fn secs_exact(ns: u128) -> String {
    const NS_PER_S: u128 = 1_000_000_000;
    let (whole, frac) = (ns / NS_PER_S, ns % NS_PER_S);
    let digits = format!("{frac:09}");
    let trimmed = digits.trim_end_matches('0');
    let shown = if trimmed.len() < 3 {
        &digits[..3]
    } else {
        trimmed
    };
    format!("{whole}.{shown}s")
}

/// A duration in the unit that reads best: `1.500s`, `12.000ms`, `40us`.
pub fn dur(ns: u64) -> String {
    if ns >= 1_000_000_000 {
        format!("{:.3}s", ns as f64 / 1e9)
    } else if ns >= 1_000_000 {
        format!("{:.3}ms", ns as f64 / 1e6)
    } else {
        format!("{}us", ns / 1_000)
    }
}

/// A signed duration in the unit that reads best (`-1.500s`).
pub fn signed_dur(ns: i64) -> String {
    if ns < 0 {
        format!("-{}", dur(ns.unsigned_abs()))
    } else {
        dur(ns.unsigned_abs())
    }
}

/// A duration, or `-` when there is none.
pub fn opt_dur(ns: Option<u64>) -> String {
    ns.map_or_else(|| "-".to_string(), dur)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_in_their_unit() {
        assert_eq!(secs(12_345_678_901), "12.345678s");
        assert_eq!(secs_ms(12_345_678_901), "12.345s");
        assert_eq!(dur(1_500_000_000), "1.500s");
        assert_eq!(dur(12_000_000), "12.000ms");
        assert_eq!(dur(40_000), "40us");
        assert_eq!(signed_dur(-1_500_000_000), "-1.500s");
        assert_eq!(opt_dur(None), "-");
        assert_eq!(secs_rounded(69_999_999_999, Round::Down), "69.999s");
        assert_eq!(secs_rounded(16_666_666_666, Round::Nearest), "16.667s");
        assert_eq!(secs_rounded(16_666_666_666, Round::Up), "16.667s");
        assert_eq!(secs_exact(250_000), "0.00025s");
        assert_eq!(secs_exact(35_000_000_000), "35.000s");
    }
}
