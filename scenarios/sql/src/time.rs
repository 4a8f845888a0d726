//! Simulated time as the database sees it.
//!
//! The database's `now()` reads the coordinator's simulated clock: simulated time 0 is
//! `2000-01-01 00:00:00+00`, and PostgreSQL keeps microseconds. The SQL's lease length (90 s in
//! the article) and the scenario's (its class's) may differ; the database's clock then runs at
//! the ratio of the two, so that the SQL's lease covers exactly the scenario's lease: the same
//! run, dilated in time for the database. A [`Scale`] maps both ways, and its inverse is exact
//! where it matters: a lease end the database returns maps to the first simulated instant the
//! database would call expired, so an expiry judged in SQL and one judged by the checkers agree
//! to the nanosecond.

use leasesim_protocol::Nanos;

/// Microseconds per day.
const DAY_US: i64 = 86_400_000_000;
/// Days from 1970-01-01 to 2000-01-01.
const BASE_DAYS: i64 = 10_957;
/// The last microsecond of the year 9999, from the base: later times do not print as plain
/// timestamps.
const MAX_US: i64 = 252_455_615_999_999_999;

/// The database clock's rate against the simulated clock: `sql / sim`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Scale {
    sql_ns: u128,
    sim_ns: u128,
}

impl Scale {
    /// The identity: the SQL's lease equals the scenario's.
    pub const ONE: Scale = Scale {
        sql_ns: 1,
        sim_ns: 1,
    };

    /// The scale at which a lease of `sim_ns` simulated nanoseconds is `sql_ns` in the database.
    pub fn new(sql_ns: Nanos, sim_ns: Nanos) -> Scale {
        assert!(
            sql_ns > 0 && sim_ns > 0,
            "a scale needs two positive lengths"
        );
        Scale {
            sql_ns: u128::from(sql_ns),
            sim_ns: u128::from(sim_ns),
        }
    }

    /// Whether the database's clock runs at the simulated rate.
    pub fn is_one(&self) -> bool {
        self.sql_ns == self.sim_ns
    }

    /// The rate as `sql/sim` in lowest terms, for messages.
    pub fn ratio(&self) -> (u128, u128) {
        let g = gcd(self.sql_ns, self.sim_ns);
        (self.sql_ns / g, self.sim_ns / g)
    }

    /// The database time of simulated `t`, in microseconds from the base (rounded down).
    pub fn db_us(&self, t: Nanos) -> i64 {
        let us = u128::from(t) * self.sql_ns / self.sim_ns / 1_000;
        assert!(
            us <= MAX_US as u128,
            "simulated time {t} ns is past the year 9999 on the database's clock at this scale"
        );
        us as i64
    }

    /// A database duration of `us` microseconds in simulated nanoseconds (rounded up).
    pub fn sim_ns(&self, us: i64) -> Nanos {
        let us = us.max(0) as u128;
        let ns = (us * 1_000 * self.sim_ns).div_ceil(self.sql_ns);
        u64::try_from(ns).unwrap_or(u64::MAX)
    }

    /// A simulated duration in database seconds, as SQL's numeric literal (microseconds kept).
    pub fn db_seconds(&self, ns: Nanos) -> String {
        let us = u128::from(ns) * self.sql_ns / self.sim_ns / 1_000;
        format!("{}.{:06}", us / 1_000_000, us % 1_000_000)
    }

    /// The timestamp literal of simulated `t`.
    pub fn timestamp(&self, t: Nanos) -> String {
        format_us(self.db_us(t))
    }
}

fn gcd(a: u128, b: u128) -> u128 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

/// `YYYY-MM-DD HH:MM:SS.ffffff+00` for `us` microseconds from the base.
pub fn format_us(us: i64) -> String {
    let days = us.div_euclid(DAY_US);
    let rem = us.rem_euclid(DAY_US);
    let (y, m, d) = civil_from_days(days + BASE_DAYS);
    let secs = rem / 1_000_000;
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02}.{:06}+00",
        secs / 3600,
        secs / 60 % 60,
        secs % 60,
        rem % 1_000_000
    )
}

/// Parses a `timestamptz` as PostgreSQL prints it with `TimeZone = UTC` and ISO dates
/// (`2000-01-01 00:01:30+00`, `2000-01-01 00:01:30.25+00`) into microseconds from the base.
pub fn parse_us(text: &str) -> Result<i64, String> {
    let bad = || format!("`{text}` is not a UTC timestamp (YYYY-MM-DD HH:MM:SS[.ffffff]+00)");
    let t = text.trim();
    let t = t
        .strip_suffix("+00:00")
        .or_else(|| t.strip_suffix("+00"))
        .ok_or_else(bad)?;
    let (date, clock) = t.split_once(' ').ok_or_else(bad)?;
    let mut dp = date.splitn(3, '-');
    let num = |s: Option<&str>| s.and_then(|s| s.parse::<i64>().ok()).ok_or_else(bad);
    let (y, m, d) = (num(dp.next())?, num(dp.next())?, num(dp.next())?);
    let (hms, frac) = match clock.split_once('.') {
        Some((hms, frac)) => (hms, frac),
        None => (clock, ""),
    };
    let mut cp = hms.splitn(3, ':');
    let (hh, mm, ss) = (num(cp.next())?, num(cp.next())?, num(cp.next())?);
    if frac.len() > 6 || !frac.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad());
    }
    let micros = if frac.is_empty() {
        0
    } else {
        frac.parse::<i64>().map_err(|_| bad())? * 10i64.pow(6 - frac.len() as u32)
    };
    if !(1..=12).contains(&m) || !(1..=31).contains(&d) || hh > 23 || mm > 59 || ss > 60 {
        return Err(bad());
    }
    let days = days_from_civil(y, m, d) - BASE_DAYS;
    Ok(days * DAY_US + (hh * 3600 + mm * 60 + ss) * 1_000_000 + micros)
}

/// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's algorithm).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The date of a day count since 1970-01-01.
fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (
        if m <= 2 {
            yoe + era * 400 + 1
        } else {
            yoe + era * 400
        },
        m,
        d,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use leasesim_protocol::SECOND_NS;

    #[test]
    fn timestamps_print_and_parse_back() {
        assert_eq!(format_us(0), "2000-01-01 00:00:00.000000+00");
        assert_eq!(parse_us("2000-01-01 00:01:30+00"), Ok(90_000_000));
        assert_eq!(parse_us("2000-01-01 00:01:30.25+00"), Ok(90_250_000));
        for us in [
            0,
            1,
            59_999_999,
            86_400_000_000,
            31_622_400_000_000 + 7,
            MAX_US,
        ] {
            assert_eq!(parse_us(&format_us(us)), Ok(us), "{}", format_us(us));
        }
        assert_eq!(format_us(366 * DAY_US), "2001-01-01 00:00:00.000000+00");
        assert!(parse_us("2000-01-01 00:01:30+01").is_err());
        assert!(parse_us("yesterday").is_err());
    }

    #[test]
    fn a_lease_end_maps_back_to_the_first_instant_the_database_calls_expired() {
        // The article's 90 s against a scenario's 30 s: the database runs three times faster.
        let s = Scale::new(90 * SECOND_NS, 30 * SECOND_NS);
        assert_eq!(s.db_us(30 * SECOND_NS), 90_000_000);
        for t in [0, 1, 333, 334, 1_000_001, 7 * SECOND_NS + 123_456_789] {
            let until = s.db_us(t) + 90_000_000;
            let end = s.sim_ns(until);
            // Just before `end` the database still holds the lease; at `end` it has expired.
            assert!(s.db_us(end - 1) < until && s.db_us(end) >= until, "t={t}");
            assert!(
                end <= t + 30 * SECOND_NS,
                "never later than the scenario's lease"
            );
        }
        assert_eq!(Scale::ONE.sim_ns(1), 1_000);
        assert_eq!(s.db_seconds(SECOND_NS / 2), "1.500000");
        assert_eq!(s.ratio(), (3, 1));
    }
}
