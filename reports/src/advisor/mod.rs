//! The timing advisor (P6, "Timing guidance" in SPEC.md): given a lease L, a heartbeat period H,
//! a jitter reserve J, R heartbeats per lease window, a clock drift bound rho and a stop margin
//! G, it says whether the liveness condition holds, shows the formula with the numbers in it,
//! and gives the holder's conservative deadline, the largest safe heartbeat period and the
//! smallest safe lease.
//!
//! Every bound comes from [`leasesim_protocol::timing`], so the advisor and the simulated
//! protocol agree to the nanosecond. Arithmetic that could overflow 64 bits (a huge `R*H`) is
//! done in 128 bits first: such a configuration is reported as unsafe, never wrapped around.
//! The text shows seconds with millisecond precision, rounded in the safe direction (a largest
//! safe value down, a smallest safe value up); the JSON also carries exact nanoseconds.

pub mod plot;

use leasesim_protocol::timing;
use leasesim_sim::time::{secs_rounded as seconds, Round};
use serde_json::{json, Value};

const PPM: u128 = 1_000_000;
const NS_PER_S: u128 = 1_000_000_000;

/// The duration units [`parse_duration`] accepts, with their length in nanoseconds.
const UNITS: &[(&str, u64)] = &[
    ("ns", 1),
    ("us", 1_000),
    ("µs", 1_000),
    ("ms", 1_000_000),
    ("s", 1_000_000_000),
    ("m", 60_000_000_000),
    ("min", 60_000_000_000),
    ("h", 3_600_000_000_000),
];

const UNIT_LIST: &str = "ns, us, ms, s, m or h";

/// Parses a duration with a unit: `90s`, `1500ms`, `2m`, `250us`, `1h`, `0.5s` (also `ns`, `µs`
/// and `min`). A bare number is rejected with a message asking for a unit; so are negative
/// values, exponents, values finer than a nanosecond and values beyond `u64::MAX` nanoseconds
/// (about 584 years). Returns nanoseconds, or a one-line message.
pub fn parse_duration(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let example = "e.g. 90s, 1500ms or 0.5s";
    if t.is_empty() {
        return Err(format!(
            "an empty duration: give a number with a unit ({UNIT_LIST}), {example}"
        ));
    }
    if t.starts_with('-') {
        return Err(format!("'{t}' is negative: a duration cannot be negative"));
    }
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (number, unit) = (&t[..split], t[split..].trim_start());
    if number.is_empty() {
        return Err(format!(
            "'{t}' is not a duration: expected a number with a unit ({UNIT_LIST}), {example}"
        ));
    }
    if unit.is_empty() {
        return Err(format!(
            "'{t}' has no unit: write {number}s, {number}ms or another unit ({UNIT_LIST})"
        ));
    }
    let Some(&(_, unit_ns)) = UNITS.iter().find(|(name, _)| *name == unit) else {
        return Err(format!(
            "'{t}' has an unknown unit '{unit}': use {UNIT_LIST}, {example} (no exponents)"
        ));
    };
    let (int, frac) = match number.split_once('.') {
        Some((i, f)) => (i, f),
        None => (number, ""),
    };
    // Digits on both sides of at most one point: `0.5`, never `.5`, `5.` or `1.2.3`.
    let has_point = number.contains('.');
    let well_formed = !int.is_empty() && !frac.contains('.') && (!has_point || !frac.is_empty());
    if !well_formed {
        return Err(format!(
            "'{t}' is not a duration: expected a number with a unit ({UNIT_LIST}), {example}"
        ));
    }
    nanoseconds(t, int, frac, unit_ns)
}

/// `int.frac` units of `unit_ns` nanoseconds each, as whole nanoseconds; `t` is the text, for
/// the messages. `int` and `frac` are ASCII digits.
fn nanoseconds(t: &str, int: &str, frac: &str, unit_ns: u64) -> Result<u64, String> {
    let too_long = || {
        format!(
            "'{t}' is too long: a duration may be at most {} ({} ns, about 584 years)",
            seconds(u64::MAX as u128, Round::Down),
            u64::MAX
        )
    };
    let unit_ns = unit_ns as u128;
    let mut whole: u128 = 0;
    for d in int.bytes() {
        whole = whole
            .checked_mul(10)
            .and_then(|w| w.checked_add((d - b'0') as u128))
            .filter(|w| w.saturating_mul(unit_ns) <= u64::MAX as u128)
            .ok_or_else(too_long)?;
    }
    let frac = frac.trim_end_matches('0');
    let finer = || format!("'{t}' is finer than a nanosecond, the simulator's resolution");
    // No unit is longer than 10^13 ns, so a fraction with more digits than that (after its
    // trailing zeros) cannot come out as whole nanoseconds.
    if frac.len() > 18 {
        return Err(finer());
    }
    let mut frac_num: u128 = 0;
    for d in frac.bytes() {
        frac_num = frac_num * 10 + (d - b'0') as u128;
    }
    let scale = 10u128.pow(frac.len() as u32);
    let frac_scaled = frac_num * unit_ns;
    if frac_scaled % scale != 0 {
        return Err(finer());
    }
    let total = whole * unit_ns + frac_scaled / scale;
    u64::try_from(total).map_err(|_| too_long())
}

/// What the advisor is asked about. All durations are in nanoseconds.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct AdviseInput {
    /// L: the lease length on the coordinator's clock.
    pub lease_ns: u64,
    /// H: the heartbeat (renewal) period.
    pub heartbeat_ns: u64,
    /// J: the worst renewal latency (scheduling + round trip + coordinator work).
    pub jitter_ns: u64,
    /// R: heartbeats per lease window (`--misses`); R - 1 missed heartbeats are tolerated.
    pub misses: u32,
    /// rho: the clock rate error bound in parts per million (0 when not given).
    pub drift_ppm: u32,
    /// G: the time a holder needs to stop producing effects (0 when not given).
    pub stop_margin_ns: u64,
}

/// The advisor's findings for one [`AdviseInput`]; see [`advise`].
#[derive(Clone, Debug, PartialEq)]
pub struct Advice {
    input: AdviseInput,
    /// `R*H + J`, the bound without drift (128 bits: it may not fit 64).
    plain_bound: u128,
    /// `ceil((1+rho)/(1-rho)*R*H) + J`, the bound with drift (as `timing::min_safe_lease`).
    drift_bound: u128,
    /// `L > R*H + J`.
    plain_safe: bool,
    /// `L > (1+rho)/(1-rho)*R*H + J`.
    drift_safe: bool,
    /// The verdict: `drift_safe`, and the holder has a window to act in at all.
    safe: bool,
    /// `L*(1-rho)/(1+rho) - G` from the send time, saturating at 0.
    holder_window_ns: u64,
    /// The largest heartbeat period that keeps this L safe; 0 when none does.
    max_heartbeat_ns: u64,
    /// The smallest lease that is safe for this H (`drift_bound + 1`), if it fits 64 bits.
    min_lease_ns: Option<u64>,
    /// `(H, safe)` for H = L/3 (etcd keepalive) and H = L/2 (BullMQ).
    etcd: (u64, bool),
    bullmq: (u64, bool),
}

/// `ceil((1+rho)/(1-rho) * R*H) + J` in 128 bits ([`timing::lease_bound_ns`]).
fn drift_bound(heartbeat_ns: u64, misses: u32, jitter_ns: u64, drift_ppm: u32) -> u128 {
    timing::lease_bound_ns(heartbeat_ns, misses, jitter_ns, drift_ppm)
}

/// The liveness part of [`timing::check`] (`L > (1+rho)/(1-rho)*R*H + J` in 128 bits), for the
/// formula lines and the practice notes; the verdict is the whole check.
fn is_safe(lease_ns: u64, heartbeat_ns: u64, misses: u32, jitter_ns: u64, drift_ppm: u32) -> bool {
    lease_ns as u128 > drift_bound(heartbeat_ns, misses, jitter_ns, drift_ppm)
}

/// Refuses an input no timing can satisfy: a zero L or H, R = 0, a drift bound of 100% or more.
fn refuse_impossible(i: &AdviseInput) -> Result<(), String> {
    if i.lease_ns == 0 {
        return Err("the lease L must be longer than 0".into());
    }
    if i.heartbeat_ns == 0 {
        return Err("the heartbeat period H must be longer than 0".into());
    }
    if i.misses == 0 {
        return Err(
            "R (--misses, heartbeats per lease window; R - 1 misses are tolerated) must be at least 1"
                .into(),
        );
    }
    if i.drift_ppm as u128 >= PPM {
        return Err(format!(
            "the drift bound rho must be below 1000000 ppm (100%), got {} ppm",
            i.drift_ppm
        ));
    }
    Ok(())
}

/// Checks the timing of a lease protocol. `Err` (one line) only for impossible input: a zero
/// lease or heartbeat period, `misses == 0` (R counts heartbeats per window, at least 1), or a
/// drift bound of 1_000_000 ppm (100%) or more.
pub fn advise(input: &AdviseInput) -> Result<Advice, String> {
    let i = *input;
    refuse_impossible(&i)?;
    let plain_bound = i.heartbeat_ns as u128 * i.misses as u128 + i.jitter_ns as u128;
    let drift_bound = drift_bound(i.heartbeat_ns, i.misses, i.jitter_ns, i.drift_ppm);
    if let Ok(b) = u64::try_from(drift_bound) {
        debug_assert_eq!(
            b,
            timing::min_safe_lease(i.heartbeat_ns, i.misses, i.jitter_ns, i.drift_ppm)
        );
    }
    let drift_safe = is_safe(
        i.lease_ns,
        i.heartbeat_ns,
        i.misses,
        i.jitter_ns,
        i.drift_ppm,
    );
    let plain_safe = is_safe(i.lease_ns, i.heartbeat_ns, i.misses, i.jitter_ns, 0);
    let holder_window_ns = timing::holder_deadline(0, i.lease_ns, i.drift_ppm, i.stop_margin_ns);
    // The verdict is the one check every command applies (a stop margin that eats the whole
    // drift-corrected lease leaves the holder no moment in which it may act), so `advise` and
    // `run`, `sweep` and `replay` never disagree.
    let safe = timing::check(&timing::Timing {
        lease_ns: i.lease_ns,
        heartbeat_ns: i.heartbeat_ns,
        misses: i.misses,
        jitter_ns: i.jitter_ns,
        drift_ppm: i.drift_ppm,
        stop_margin_ns: i.stop_margin_ns,
    })
    .is_ok();
    debug_assert_eq!(safe, drift_safe && holder_window_ns > 0);
    let max_heartbeat_ns =
        timing::max_safe_heartbeat(i.lease_ns, i.misses, i.jitter_ns, i.drift_ppm);
    let min_lease_ns = u64::try_from(drift_bound + 1).ok();
    let practice = |h: u64| {
        (
            h,
            h > 0 && is_safe(i.lease_ns, h, i.misses, i.jitter_ns, i.drift_ppm),
        )
    };
    Ok(Advice {
        input: i,
        plain_bound,
        drift_bound,
        plain_safe,
        drift_safe,
        safe,
        holder_window_ns,
        max_heartbeat_ns,
        min_lease_ns,
        etcd: practice(i.lease_ns / 3),
        bullmq: practice(i.lease_ns / 2),
    })
}

/// Seconds with millisecond precision, rounded to the nearest.
fn secs(ns: u64) -> String {
    seconds(ns as u128, Round::Nearest)
}

/// Seconds as a JSON number (exact nanoseconds are given next to it).
fn secs_f64(ns: u128) -> f64 {
    ns as f64 / NS_PER_S as f64
}

fn verdict_word(safe: bool) -> &'static str {
    if safe {
        "SAFE"
    } else {
        "UNSAFE"
    }
}

/// `35.000s <= 50.000s`, falling back to nanoseconds when milliseconds would hide the difference.
fn comparison(lease_ns: u64, bound: u128, safe: bool) -> String {
    let op = if safe { ">" } else { "<=" };
    let (l, b) = (secs(lease_ns), seconds(bound, Round::Nearest));
    if l == b && lease_ns as u128 != bound {
        format!("{lease_ns}ns {op} {bound}ns")
    } else {
        format!("{l} {op} {b}")
    }
}

impl Advice {
    /// Whether the lease satisfies the liveness condition `L > (1+rho)/(1-rho)*R*H + J` (which
    /// is `L > R*H + J` without drift) and leaves the holder a window to act in
    /// (`L*(1-rho)/(1+rho) > G`).
    pub fn safe(&self) -> bool {
        self.safe
    }

    /// The input this advice is about.
    pub fn input(&self) -> &AdviseInput {
        &self.input
    }

    /// The holder's window from the send time s of its last acknowledged renewal:
    /// `L*(1-rho)/(1+rho) - G` ([`timing::holder_deadline`] with s = 0); 0 when G eats it all.
    pub fn holder_window_ns(&self) -> u64 {
        self.holder_window_ns
    }

    /// The largest heartbeat period for which this L, J, R, rho is safe
    /// ([`timing::max_safe_heartbeat`]); 0 when no period is (L <= J, roughly).
    pub fn max_safe_heartbeat_ns(&self) -> u64 {
        self.max_heartbeat_ns
    }

    /// The smallest safe lease for this H, J, R, rho (one nanosecond above
    /// [`timing::min_safe_lease`]); `None` when it exceeds `u64::MAX` nanoseconds.
    pub fn min_safe_lease_ns(&self) -> Option<u64> {
        self.min_lease_ns
    }

    /// `(1+rho)/(1-rho)`, for display.
    fn factor(&self) -> f64 {
        let rho = self.input.drift_ppm as f64 / PPM as f64;
        (1.0 + rho) / (1.0 - rho)
    }

    /// The human text: the verdict on the first line, then the formulas with the numbers
    /// substituted, the holder's deadline, the largest safe heartbeat, the smallest safe lease
    /// and a practical note. Lines end with `\n` (the last one too).
    pub fn render(&self) -> String {
        let mut lines = Vec::new();
        self.verdict_lines(&mut lines);
        self.deadline_lines(&mut lines);
        self.limit_lines(&mut lines);
        let mut text = lines.join("\n");
        text.push('\n');
        text
    }

    /// The input's L, H, J and G as the text shows them.
    fn shown(&self) -> (String, String, String, String) {
        let i = &self.input;
        (
            secs(i.lease_ns),
            secs(i.heartbeat_ns),
            secs(i.jitter_ns),
            secs(i.stop_margin_ns),
        )
    }

    /// The verdict with the input, then both liveness conditions with the numbers substituted.
    fn verdict_lines(&self, lines: &mut Vec<String>) {
        let i = &self.input;
        let (l, h, j, g) = self.shown();
        let r = i.misses;
        let rho = i.drift_ppm;
        lines.push(format!(
            "{}: lease L = {l}, heartbeat H = {h}, jitter reserve J = {j}, R = {r} heartbeat(s) per lease window ({} miss(es) tolerated), drift rho = {rho} ppm, stop margin G = {g}",
            verdict_word(self.safe),
            r - 1,
        ));
        lines.push(format!(
            "  liveness:   L = {l}  vs  R*H + J = {r}*{h} + {j} = {}  ->  {}: {}",
            seconds(self.plain_bound, Round::Nearest),
            comparison(i.lease_ns, self.plain_bound, self.plain_safe),
            verdict_word(self.plain_safe),
        ));
        lines.push(format!(
            "  with drift: L = {l}  vs  (1+rho)/(1-rho)*R*H + J = {:.6}*{r}*{h} + {j} = {}  ->  {}: {}",
            self.factor(),
            seconds(self.drift_bound, Round::Nearest),
            comparison(i.lease_ns, self.drift_bound, self.drift_safe),
            verdict_word(self.drift_safe),
        ));
        if !self.drift_safe {
            lines.push(
                "  a healthy holder can lose its lease between two renewals: lengthen L or shorten H (below)"
                    .into(),
            );
        }
    }

    /// The holder's deadline, and what it may not do after it.
    fn deadline_lines(&self, lines: &mut Vec<String>) {
        let i = &self.input;
        let (l, _, _, g) = self.shown();
        let window = self.holder_window_ns;
        lines.push(format!(
            "holder deadline, from the send time s of the last acknowledged renewal: s + L*(1-rho)/(1+rho) - G = s + {l}*{:.6} - {g} = s + {}, {} earlier than L",
            1.0 / self.factor(),
            seconds(window as u128, Round::Down),
            seconds((i.lease_ns - window) as u128, Round::Up),
        ));
        if window == 0 {
            lines.push(format!(
                "  UNSAFE: the stop margin G = {g} uses up the whole drift-corrected lease: the holder may never act (shorten G or lengthen L)"
            ));
        } else {
            lines.push(
                "  after it the holder is in jeopardy (P13): no effect, no commitment, no claim of success; measuring from the reply's arrival would overshoot by the flight time"
                    .into(),
            );
        }
    }

    /// The largest safe heartbeat, the smallest safe lease and common practice.
    fn limit_lines(&self, lines: &mut Vec<String>) {
        let i = &self.input;
        let (l, h, j, _) = self.shown();
        let r = i.misses;
        let rho = i.drift_ppm;
        if self.max_heartbeat_ns == 0 {
            lines.push(format!(
                "largest safe heartbeat period for L = {l}, J = {j}, R = {r}, rho = {rho} ppm: none (L must exceed J, with room for R heartbeats)"
            ));
        } else {
            lines.push(format!(
                "largest safe heartbeat period for L = {l}, J = {j}, R = {r}, rho = {rho} ppm: H = {} (rounded down)",
                seconds(self.max_heartbeat_ns as u128, Round::Down),
            ));
        }
        match self.min_lease_ns {
            Some(min) => lines.push(format!(
                "smallest safe lease for H = {h}: L = {} (rounded up; L must exceed {})",
                seconds(min as u128, Round::Up),
                seconds(self.drift_bound, Round::Nearest),
            )),
            None => lines.push(format!(
                "smallest safe lease for H = {h}: none fits in 64 bits of nanoseconds (L must exceed {})",
                seconds(self.drift_bound, Round::Nearest),
            )),
        }
        let practice = |(hp, ok): (u64, bool), source: &str| {
            format!(
                "{} ({source}; {} here)",
                seconds(hp as u128, Round::Down),
                verdict_word(ok)
            )
        };
        lines.push(format!(
            "note: renew early and often, never \"one second before expiry\"; common practice is H = L/3 = {} or H = L/2 = {}",
            practice(self.etcd, "etcd keepalive"),
            practice(self.bullmq, "BullMQ"),
        ));
    }

    /// The same facts for tools: the verdict, the input, both bounds, the holder's window, the
    /// largest safe heartbeat and the smallest safe lease, in exact nanoseconds and in seconds.
    /// A bound that does not fit 64 bits is `null` in `*_ns`.
    pub fn to_json(&self) -> Value {
        let i = &self.input;
        let ns128 = |v: u128| u64::try_from(v).ok();
        json!({
            "verdict": verdict_word(self.safe),
            "safe": self.safe,
            "input": {
                "lease_ns": i.lease_ns,
                "lease_s": secs_f64(i.lease_ns as u128),
                "heartbeat_ns": i.heartbeat_ns,
                "heartbeat_s": secs_f64(i.heartbeat_ns as u128),
                "jitter_ns": i.jitter_ns,
                "jitter_s": secs_f64(i.jitter_ns as u128),
                "misses": i.misses,
                "drift_ppm": i.drift_ppm,
                "stop_margin_ns": i.stop_margin_ns,
                "stop_margin_s": secs_f64(i.stop_margin_ns as u128),
            },
            "liveness": {
                "formula": "L > R*H + J",
                "bound_ns": ns128(self.plain_bound),
                "bound_s": secs_f64(self.plain_bound),
                "safe": self.plain_safe,
            },
            "liveness_with_drift": {
                "formula": "L > (1+rho)/(1-rho)*R*H + J",
                "factor": self.factor(),
                "bound_ns": ns128(self.drift_bound),
                "bound_s": secs_f64(self.drift_bound),
                "safe": self.drift_safe,
            },
            "holder_deadline": {
                "formula": "s + L*(1-rho)/(1+rho) - G",
                "window_ns": self.holder_window_ns,
                "window_s": secs_f64(self.holder_window_ns as u128),
                "earlier_than_lease_ns": i.lease_ns - self.holder_window_ns,
                "earlier_than_lease_s": secs_f64((i.lease_ns - self.holder_window_ns) as u128),
                "holder_may_act": self.holder_window_ns > 0,
            },
            "max_safe_heartbeat_ns": (self.max_heartbeat_ns > 0).then_some(self.max_heartbeat_ns),
            "max_safe_heartbeat_s": (self.max_heartbeat_ns > 0).then(|| secs_f64(self.max_heartbeat_ns as u128)),
            "min_safe_lease_ns": self.min_lease_ns,
            "min_safe_lease_s": self.min_lease_ns.map(|v| secs_f64(v as u128)),
            "practice": [
                {"rule": "H = L/3", "source": "etcd keepalive", "heartbeat_ns": self.etcd.0, "safe": self.etcd.1},
                {"rule": "H = L/2", "source": "BullMQ", "heartbeat_ns": self.bullmq.0, "safe": self.bullmq.1},
            ],
            "note": "renew early and often, never one second before expiry",
        })
    }
}
