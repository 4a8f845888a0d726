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
    }
}
