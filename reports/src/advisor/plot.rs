//! The timing advisor's plot (P6, "Timing guidance" in SPEC.md): the plane of heartbeat period H
//! (x) and lease length L (y) for one jitter reserve J, R heartbeats per window and drift bound
//! rho, with the safe region `L > (1+rho)/(1-rho)*R*H + J` shaded, its boundary labelled with the
//! formula and the chosen point (L, H) marked SAFE or UNSAFE; with measured cells (the library's
//! `leasesim::advise::simulate`), each drawn by its rate of needless takeovers.
//!
//! Everything here is deterministic: the axes are integer arithmetic on nanoseconds and the SVG
//! formats every number with a fixed precision.

use super::{advise, AdviseInput};
use crate::escape;
use leasesim_sim::time::{secs_exact, secs_rounded, Round};
use std::fmt::Write as _;

const PPM: u128 = 1_000_000;
const NS_PER_S: u64 = 1_000_000_000;

/// The largest grid the simulation runs (per side).
pub const GRID_MAX: usize = 64;

/// The longest duration the simulation hands the simulator (a year): the axes' ends, J and G must
/// not exceed it, so that no sum of a few of them can overflow 64 bits of nanoseconds.
pub const SIMULATED_DURATION_MAX_NS: u64 = 365 * 24 * 3_600 * NS_PER_S;

/// What to plot: the advisor's input (L, H, J, R, rho, G).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct PlotInput {
    /// The advisor's input; L and H are the chosen point.
    pub advise: AdviseInput,
}

/// One measured grid cell of the library's simulation (`leasesim::advise::simulate`).
#[derive(Clone, Debug, PartialEq)]
pub struct SimulatedCell {
    /// The cell's lease length L.
    pub lease_ns: u64,
    /// The cell's heartbeat period H.
    pub heartbeat_ns: u64,
    /// How many runs (seeds) were measured.
    pub runs: u32,
    /// Fraction of the runs with a needless takeover (an I7 "healthy holder" finding).
    pub needless_takeover_rate: f64,
    /// Fraction of the runs in which a holder entered jeopardy (P13).
    pub jeopardy_rate: f64,
}

/// The plot's axes, in nanoseconds: H from 0 to `h_max`, L from 0 to `l_max`, with ticks every
/// `h_step` and `l_step`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Axes {
    /// The end of the H axis.
    pub h_max: u64,
    /// Its tick step.
    pub h_step: u64,
    /// The end of the L axis.
    pub l_max: u64,
    /// Its tick step.
    pub l_step: u64,
}

/// `ceil((1+rho)/(1-rho) * R*H) + J` in 128 bits (as `timing::min_safe_lease`).
fn bound(heartbeat_ns: u64, misses: u32, jitter_ns: u64, drift_ppm: u32) -> u128 {
    let rho = drift_ppm.min(999_999) as u128;
    (heartbeat_ns as u128 * misses as u128 * (PPM + rho)).div_ceil(PPM - rho) + jitter_ns as u128
}

/// The smallest 1, 2 or 5 times a power of ten (in nanoseconds) that is at least `v`.
fn nice_step(v: u128) -> u64 {
    let mut p: u128 = 1;
    loop {
        for m in [1u128, 2, 5] {
            if m * p >= v {
                return u64::try_from(m * p).unwrap_or(u64::MAX);
            }
        }
        if p > u64::MAX as u128 {
            return u64::MAX;
        }
        p *= 10;
    }
}

/// An axis from 0 to about `raw`: a nice step giving 3 to 6 ticks, and the maximum a whole
/// number of steps.
fn axis(raw: u128) -> (u64, u64) {
    let raw = raw.max(1);
    let step = nice_step(raw.div_ceil(6)).max(1);
    let max = raw.div_ceil(step as u128) * step as u128;
    match u64::try_from(max) {
        Ok(max) => (max, step),
        Err(_) => (u64::MAX, step),
    }
}

impl Axes {
    /// H from 0 to about twice the larger of the input H and the largest safe H; L from 0 to
    /// about 1.5 times the larger of the input L and the bound at the end of the H axis.
    pub fn new(i: &AdviseInput) -> Axes {
        let h_safe = match advise(i) {
            Ok(a) => a.max_safe_heartbeat_ns(),
            Err(_) => 0,
        };
        let (h_max, h_step) = axis(2 * i.heartbeat_ns.max(h_safe) as u128);
        let b = bound(h_max, i.misses.max(1), i.jitter_ns, i.drift_ppm);
        let (l_max, l_step) = axis(b.max(i.lease_ns as u128) * 3 / 2);
        Axes {
            h_max,
            h_step,
            l_max,
            l_step,
        }
    }

    /// The centres of an `n` x `n` grid of cells tiling the axes: `(L, H)` pairs, ascending L
    /// first, then ascending H.
    pub fn grid(&self, n: usize) -> Vec<(u64, u64)> {
        let n = n as u128;
        let centre = |max: u64, k: u128| ((max as u128 * (2 * k + 1)) / (2 * n)).max(1) as u64;
        let mut v = Vec::new();
        for j in 0..n {
            for i in 0..n {
                v.push((centre(self.l_max, j), centre(self.h_max, i)));
            }
        }
        v
    }
}

// ---------------------------------------------------------------------------------------------
// The SVG.

const WIDTH: f64 = 800.0;
const HEIGHT: f64 = 600.0;
/// The plot area.
const X0: f64 = 72.0;
const X1: f64 = 592.0;
const Y0: f64 = 78.0;
const Y1: f64 = 528.0;
/// The legend's left edge.
const LEGEND_X: f64 = 608.0;

const SAFE_FILL: &str = "#d9f2d9";
const SAFE_TEXT: &str = "#1b5e20";
const UNSAFE_TEXT: &str = "#b71c1c";
const BOUNDARY: &str = "#1b5e20";

/// Escapes text for XML content and attribute values (the reports' one escaper).
fn esc(s: &str) -> String {
    escape::html(s)
}

/// A coordinate with one decimal (never `-0.0`).
fn n(x: f64) -> String {
    let s = format!("{:.1}", if x.is_finite() { x } else { 0.0 });
    if s == "-0.0" {
        "0.0".into()
    } else {
        s
    }
}

/// Exact seconds, with at least millisecond precision: `35.000s`, `0.00025s`.
fn secs(ns: u64) -> String {
    secs_exact(ns as u128)
}

/// Seconds with millisecond precision, rounded as asked (a largest safe value down, as the
/// advisor's text does); exact below a millisecond.
fn secs_ms(ns: u128, round: Round) -> String {
    if ns < 1_000_000 {
        return secs_exact(ns);
    }
    secs_rounded(ns, round)
}

/// A tick label in seconds, with as many decimals as the step needs.
fn tick_label(v: u64, step: u64) -> String {
    let mut decimals = 0u32;
    while decimals < 9 && step % 10u64.pow(9 - decimals) != 0 {
        decimals += 1;
    }
    let whole = v / NS_PER_S;
    if decimals == 0 {
        return whole.to_string();
    }
    let frac = (v % NS_PER_S) / 10u64.pow(9 - decimals);
    format!("{whole}.{frac:0width$}", width = decimals as usize)
}

/// The colour of a rate in `[0, 1]`: white to dark red.
fn rate_colour(rate: f64) -> String {
    let t = if rate.is_finite() {
        rate.clamp(0.0, 1.0)
    } else {
        0.0
    };
    let mix = |a: f64, b: f64| (a + (b - a) * t).round() as u8;
    format!(
        "#{:02x}{:02x}{:02x}",
        mix(255.0, 165.0),
        mix(255.0, 15.0),
        mix(255.0, 21.0)
    )
}

fn percent(rate: f64) -> String {
    format!("{:.0}%", (rate * 100.0).clamp(0.0, 100.0))
}

/// Maps data (nanoseconds) to pixels.
struct Frame {
    axes: Axes,
}

impl Frame {
    fn x(&self, h: f64) -> f64 {
        X0 + (X1 - X0) * (h / self.axes.h_max as f64)
    }
    fn y(&self, l: f64) -> f64 {
        Y1 - (Y1 - Y0) * (l / self.axes.l_max as f64)
    }
}

/// The SVG: x = heartbeat period H, y = lease length L, for the input's J, R and rho; the safe
/// region (`L > (1+rho)/(1-rho)*R*H + J`) shaded, the boundary line labelled with the formula,
/// the chosen point (L, H) marked and labelled SAFE or UNSAFE, axes with ticks in seconds and a
/// title with J, R, rho and G. With `cells` (from `leasesim::advise::simulate`), each cell is drawn as a small
/// square coloured by its needless-takeover rate, its jeopardy rate in its tooltip, with a
/// legend. 800 x 600, self-contained, deterministic (same input, same bytes).
pub fn svg(input: &PlotInput, cells: Option<&[SimulatedCell]>) -> String {
    let i = input.advise;
    let mut o = String::new();
    header(&mut o, &i);
    let advice = match advise(&i) {
        Ok(a) => a,
        Err(e) => {
            let _ = writeln!(
                o,
                r#"<text x="{}" y="56" font-size="14" fill="{UNSAFE_TEXT}">cannot plot: {}</text>"#,
                n(X0),
                esc(&e)
            );
            o.push_str("</svg>\n");
            return o;
        }
    };
    let p = Plot::new(i, advice.safe(), advice.max_safe_heartbeat_ns());
    p.subtitle_and_area(&mut o);
    p.safe_region(&mut o);
    p.ticks(&mut o);
    axis_titles(&mut o);
    // Region labels, in the plot when no cells cover it (the legend names them too).
    if cells.is_none() {
        region_labels(&mut o);
    }
    // The measured cells, under the boundary and the point.
    let legend_cells = cells.map(|cells| p.cells(&mut o, cells));
    p.boundary(&mut o);
    p.point(&mut o);
    p.legend(&mut o, legend_cells);
    o.push_str("</svg>\n");
    o
}

/// The SVG's opening, its background and its title (J, R, rho and G).
fn header(o: &mut String, i: &AdviseInput) {
    let _ = writeln!(
        o,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" font-family="sans-serif" font-size="12">"#,
        w = WIDTH,
        h = HEIGHT
    );
    let _ = writeln!(
        o,
        r##"<rect x="0" y="0" width="{}" height="{}" fill="#ffffff"/>"##,
        WIDTH, HEIGHT
    );
    let title = format!(
        "Lease timing (P6): J = {}, R = {}, rho = {} ppm, G = {}",
        secs(i.jitter_ns),
        i.misses,
        i.drift_ppm,
        secs(i.stop_margin_ns)
    );
    let _ = writeln!(o, "<title>{}</title>", esc(&title));
    let _ = writeln!(
        o,
        r#"<text x="{}" y="26" font-size="17" font-weight="bold">{}</text>"#,
        n(X0),
        esc(&title)
    );
}

/// The names of the two axes.
fn axis_titles(o: &mut String) {
    let _ = writeln!(
        o,
        r#"<text x="{}" y="{}" text-anchor="middle" font-size="13">heartbeat period H (seconds)</text>"#,
        n((X0 + X1) / 2.0),
        n(Y1 + 42.0)
    );
    let _ = writeln!(
        o,
        r#"<text x="{x}" y="{y}" text-anchor="middle" font-size="13" transform="rotate(-90 {x} {y})">lease length L (seconds)</text>"#,
        x = n(X0 - 46.0),
        y = n((Y0 + Y1) / 2.0)
    );
}

/// The names of the safe and the unsafe region, written inside them.
fn region_labels(o: &mut String) {
    let _ = writeln!(
        o,
        r#"<text x="{}" y="{}" fill="{SAFE_TEXT}" font-size="13" font-weight="bold">safe region</text>"#,
        n(X0 + 10.0),
        n(Y0 + 20.0)
    );
    let _ = writeln!(
        o,
        r#"<text x="{}" y="{}" text-anchor="end" fill="{UNSAFE_TEXT}" font-size="13" font-weight="bold">unsafe: a healthy holder can lose its lease</text>"#,
        n(X1 - 10.0),
        n(Y1 - 12.0)
    );
}

/// What every part of a plottable input's SVG shares: the input, the frame, the boundary line
/// `L = factor*R*H + J` clipped to the axes, and the chosen point's verdict.
struct Plot {
    i: AdviseInput,
    f: Frame,
    /// `(1+rho)/(1-rho)`.
    factor: f64,
    /// R, as a float.
    misses: f64,
    /// J, as a float.
    jitter: f64,
    h_max: f64,
    l_max: f64,
    /// Where the boundary meets the L axis (J, clipped to the axis).
    j_clip: f64,
    /// Where the boundary leaves the plot (the H axis's end or the L axis's end).
    h_end: f64,
    l_end: f64,
    safe: bool,
    verdict: &'static str,
    /// The chosen point's verdict in a sentence, under the title and in the point's tooltip.
    subtitle: String,
}

impl Plot {
    fn new(i: AdviseInput, safe: bool, max_safe_heartbeat_ns: u64) -> Plot {
        let axes = Axes::new(&i);
        let f = Frame { axes };
        let misses = i.misses as f64;
        let rho = i.drift_ppm as f64 / PPM as f64;
        let factor = (1.0 + rho) / (1.0 - rho);
        let jitter = i.jitter_ns as f64;
        let (h_max, l_max) = (axes.h_max as f64, axes.l_max as f64);
        let verdict = if safe { "SAFE" } else { "UNSAFE" };
        let min_lease = bound(i.heartbeat_ns, i.misses, i.jitter_ns, i.drift_ppm);
        let subtitle = format!(
            "chosen point L = {}, H = {}: {verdict} (L {} {}); largest safe H for this L: {}",
            secs(i.lease_ns),
            secs(i.heartbeat_ns),
            if safe { ">" } else { "<=" },
            secs_ms(min_lease, Round::Nearest),
            match max_safe_heartbeat_ns {
                0 => "none".to_string(),
                h => secs_ms(h as u128, Round::Down),
            }
        );
        let mut p = Plot {
            i,
            f,
            factor,
            misses,
            jitter,
            h_max,
            l_max,
            j_clip: jitter.min(l_max),
            h_end: 0.0,
            l_end: 0.0,
            safe,
            verdict,
            subtitle,
        };
        (p.h_end, p.l_end) = if p.line(h_max) <= l_max {
            (h_max, p.line(h_max))
        } else {
            ((l_max - jitter).max(0.0) / (factor * misses), l_max)
        };
        p
    }

    /// The boundary's L at `h`.
    fn line(&self, h: f64) -> f64 {
        self.factor * self.misses * h + self.jitter
    }

    /// The colour of the chosen point's verdict.
    fn colour(&self) -> &'static str {
        if self.safe {
            SAFE_TEXT
        } else {
            UNSAFE_TEXT
        }
    }

    /// The verdict line under the title, and the plot area's frame.
    fn subtitle_and_area(&self, o: &mut String) {
        let _ = writeln!(
            o,
            r#"<text x="{}" y="48" font-size="13" fill="{}">{}</text>"#,
            n(X0),
            self.colour(),
            esc(&self.subtitle)
        );
        // The plot area and the safe region above the boundary.
        let _ = writeln!(
            o,
            r##"<rect x="{}" y="{}" width="{}" height="{}" fill="#ffffff" stroke="#888888"/>"##,
            n(X0),
            n(Y0),
            n(X1 - X0),
            n(Y1 - Y0)
        );
    }

    /// The safe region: the polygon above the boundary.
    fn safe_region(&self, o: &mut String) {
        let (h_max, l_max) = (self.h_max, self.l_max);
        let mut poly = vec![(0.0, self.j_clip), (self.h_end, self.l_end)];
        if self.h_end >= h_max && self.l_end < l_max {
            poly.push((h_max, l_max));
        }
        poly.push((0.0, l_max));
        let points: Vec<String> = poly
            .iter()
            .map(|&(h, l)| format!("{},{}", n(self.f.x(h)), n(self.f.y(l))))
            .collect();
        let _ = writeln!(
            o,
            r#"<polygon points="{}" fill="{SAFE_FILL}" stroke="none"><title>safe region: L &gt; (1+rho)/(1-rho)*R*H + J</title></polygon>"#,
            points.join(" ")
        );
    }

    /// Grid lines and ticks, H's then L's.
    fn ticks(&self, o: &mut String) {
        let (f, axes) = (&self.f, &self.f.axes);
        let mut ticks = String::new();
        let mut t = 0u64;
        loop {
            let x = f.x(t as f64);
            let _ = writeln!(
                ticks,
                r##"<line x1="{x}" y1="{}" x2="{x}" y2="{}" stroke="#cccccc" stroke-width="0.5"/><line x1="{x}" y1="{}" x2="{x}" y2="{}" stroke="#333333"/><text x="{x}" y="{}" text-anchor="middle">{}</text>"##,
                n(Y0),
                n(Y1),
                n(Y1),
                n(Y1 + 5.0),
                n(Y1 + 19.0),
                esc(&tick_label(t, axes.h_step)),
                x = n(x),
            );
            match t.checked_add(axes.h_step) {
                Some(next) if next <= axes.h_max => t = next,
                _ => break,
            }
        }
        let mut t = 0u64;
        loop {
            let y = f.y(t as f64);
            let _ = writeln!(
                ticks,
                r##"<line x1="{}" y1="{y}" x2="{}" y2="{y}" stroke="#cccccc" stroke-width="0.5"/><line x1="{}" y1="{y}" x2="{}" y2="{y}" stroke="#333333"/><text x="{}" y="{}" text-anchor="end">{}</text>"##,
                n(X0),
                n(X1),
                n(X0 - 5.0),
                n(X0),
                n(X0 - 8.0),
                n(y + 4.0),
                esc(&tick_label(t, axes.l_step)),
                y = n(y),
            );
            match t.checked_add(axes.l_step) {
                Some(next) if next <= axes.l_max => t = next,
                _ => break,
            }
        }
        o.push_str(&ticks);
    }

    /// The measured cells as squares coloured by their needless-takeover rate; returns the
    /// distinct run counts, ascending, for the legend.
    fn cells(&self, o: &mut String, cells: &[SimulatedCell]) -> Vec<u32> {
        let (i, f, axes) = (&self.i, &self.f, &self.f.axes);
        let count_distinct = |key: fn(&SimulatedCell) -> u64| {
            let mut v: Vec<u64> = cells.iter().map(key).collect();
            v.sort_unstable();
            v.dedup();
            v.len().max(1)
        };
        let (nh, nl) = (
            count_distinct(|c| c.heartbeat_ns),
            count_distinct(|c| c.lease_ns),
        );
        let side = ((X1 - X0) / nh as f64).min((Y1 - Y0) / nl as f64) * 0.55;
        let side = side.clamp(4.0, 36.0);
        let mut runs = cells.iter().map(|c| c.runs).collect::<Vec<_>>();
        runs.sort_unstable();
        runs.dedup();
        o.push_str("<g stroke=\"#444444\" stroke-width=\"0.8\">\n");
        for c in cells {
            if c.heartbeat_ns > axes.h_max || c.lease_ns > axes.l_max {
                continue;
            }
            let (cx, cy) = (f.x(c.heartbeat_ns as f64), f.y(c.lease_ns as f64));
            let cell_safe =
                bound(c.heartbeat_ns, i.misses, i.jitter_ns, i.drift_ppm) < c.lease_ns as u128;
            let tip = format!(
                "L = {}, H = {} ({} by the formula): needless takeover in {} of {} runs ({}), jeopardy in {} of {} runs ({})",
                secs_ms(c.lease_ns as u128, Round::Nearest),
                secs_ms(c.heartbeat_ns as u128, Round::Nearest),
                if cell_safe { "safe" } else { "unsafe" },
                (c.needless_takeover_rate * c.runs as f64).round() as u64,
                c.runs,
                percent(c.needless_takeover_rate),
                (c.jeopardy_rate * c.runs as f64).round() as u64,
                c.runs,
                percent(c.jeopardy_rate),
            );
            let _ = writeln!(
                o,
                r#"<rect x="{}" y="{}" width="{s}" height="{s}" fill="{}"><title>{}</title></rect>"#,
                n(cx - side / 2.0),
                n(cy - side / 2.0),
                rate_colour(c.needless_takeover_rate),
                esc(&tip),
                s = n(side),
            );
        }
        o.push_str("</g>\n");
        runs
    }

    /// The boundary's ends in pixels: `(x0, y0, x1, y1)`.
    fn boundary_px(&self) -> (f64, f64, f64, f64) {
        let f = &self.f;
        (f.x(0.0), f.y(self.j_clip), f.x(self.h_end), f.y(self.l_end))
    }

    /// The chosen point, clipped to the axes, in data (H, L) and in pixels (x, y).
    fn point_at(&self) -> ((f64, f64), (f64, f64)) {
        let (h_pt, l_pt) = (
            (self.i.heartbeat_ns as f64).min(self.h_max),
            (self.i.lease_ns as f64).min(self.l_max),
        );
        ((h_pt, l_pt), (self.f.x(h_pt), self.f.y(l_pt)))
    }

    /// The boundary line and its formula, written along it.
    fn boundary(&self, o: &mut String) {
        let i = &self.i;
        let (bx0, by0, bx1, by1) = self.boundary_px();
        let _ = writeln!(
            o,
            r#"<line x1="{}" y1="{}" x2="{}" y2="{}" stroke="{BOUNDARY}" stroke-width="2.5"/>"#,
            n(bx0),
            n(by0),
            n(bx1),
            n(by1)
        );
        // The chosen point (drawn after the formula), for where the line passes it.
        let (_, (px, py)) = self.point_at();
        // The formula along the line, at whichever of three places is farthest from the point.
        let angle = (by1 - by0).atan2(bx1 - bx0).to_degrees();
        let along = |t: f64| (bx0 + (bx1 - bx0) * t, by0 + (by1 - by0) * t);
        let distance = |t: f64| {
            let (x, y) = along(t);
            (x - px).powi(2) + (y - py).powi(2)
        };
        let mut best = 0.5;
        for t in [0.3, 0.75] {
            if distance(t) > distance(best) {
                best = t;
            }
        }
        let (lx, ly) = along(best);
        let formula = "L = (1+rho)/(1-rho)*R*H + J";
        let numbers = format!(
            "= {:.6}*{}*H + {}",
            self.factor,
            i.misses,
            secs(i.jitter_ns)
        );
        let _ = writeln!(
            o,
            r##"<g transform="translate({} {}) rotate({})" stroke="#ffffff" stroke-width="3" paint-order="stroke"><text x="0" y="-8" text-anchor="middle" fill="{BOUNDARY}" font-size="13" font-weight="bold">{}</text><text x="0" y="17" text-anchor="middle" fill="{BOUNDARY}">{}</text></g>"##,
            n(lx),
            n(ly),
            n(angle),
            esc(formula),
            esc(&numbers)
        );
    }

    /// The chosen point, with dashed guides to the axes and its verdict written beside it.
    fn point(&self, o: &mut String) {
        let i = &self.i;
        let ((h_pt, _), (px, py)) = self.point_at();
        let colour = self.colour();
        let _ = writeln!(
            o,
            r#"<path d="M {} {} H {} V {}" fill="none" stroke="{colour}" stroke-width="1" stroke-dasharray="4 3"/>"#,
            n(X0),
            n(py),
            n(px),
            n(Y1)
        );
        let _ = writeln!(
            o,
            r##"<circle cx="{}" cy="{}" r="7" fill="{colour}" stroke="#ffffff" stroke-width="2"><title>{}</title></circle>"##,
            n(px),
            n(py),
            esc(&self.subtitle)
        );
        let label = format!(
            "{}: L = {}, H = {}",
            self.verdict,
            secs(i.lease_ns),
            secs(i.heartbeat_ns)
        );
        // The label goes away from the line (which rises to the right): up and to the left of a
        // point above it, down and to the right of a point below it, as far as the plot allows.
        let line_y = self.f.y(self.line(h_pt));
        let above = py <= line_y;
        let room = 230.0;
        let left = if above {
            px - X0 > room
        } else {
            X1 - px < room
        };
        let (tx, anchor) = if left {
            (px - 10.0, "end")
        } else {
            (px + 10.0, "start")
        };
        // Keep the whole label clear of the line: above it over the label's width, or below it.
        let width = label.len() as f64 * 8.0;
        let (x_left, x_right) = if left {
            (tx - width, tx)
        } else {
            (tx, tx + width)
        };
        let line_at = |x: f64| {
            self.f
                .y(self.line((x - X0) / (X1 - X0) * self.h_max))
                .clamp(Y0, Y1)
        };
        let ty = if above {
            (py - 12.0).min(line_at(x_right) - 8.0)
        } else {
            (py + 22.0).max(line_at(x_left) + 18.0)
        };
        let ty = ty.clamp(Y0 + 14.0, Y1 - 6.0);
        let _ = writeln!(
            o,
            r##"<text x="{}" y="{}" text-anchor="{anchor}" fill="{colour}" font-size="14" font-weight="bold" stroke="#ffffff" stroke-width="3" paint-order="stroke">{}</text>"##,
            n(tx),
            n(ty),
            esc(&label)
        );
    }

    /// The legend: the regions, the boundary and the point, then (with cells) the cells' scale.
    fn legend(&self, o: &mut String, legend_cells: Option<Vec<u32>>) {
        let lx = LEGEND_X;
        let mut y = Y0 + 4.0;
        let _ = writeln!(
            o,
            r#"<text x="{}" y="{}" font-weight="bold">Legend</text>"#,
            n(lx),
            n(y)
        );
        y += 16.0;
        let _ = writeln!(
            o,
            r##"<rect x="{}" y="{}" width="16" height="12" fill="{SAFE_FILL}" stroke="#888888"/><text x="{}" y="{}">safe region</text><text x="{}" y="{}" font-size="10">L &gt; (1+rho)/(1-rho)*R*H + J</text>"##,
            n(lx),
            n(y - 10.0),
            n(lx + 22.0),
            n(y),
            n(lx + 22.0),
            n(y + 13.0)
        );
        y += 30.0;
        let _ = writeln!(
            o,
            r##"<rect x="{}" y="{}" width="16" height="12" fill="#ffffff" stroke="#888888"/><text x="{}" y="{}">unsafe region</text><text x="{}" y="{}" font-size="10">a healthy holder may lose it</text>"##,
            n(lx),
            n(y - 10.0),
            n(lx + 22.0),
            n(y),
            n(lx + 22.0),
            n(y + 13.0)
        );
        y += 32.0;
        let _ = writeln!(
            o,
            r#"<line x1="{}" y1="{}" x2="{}" y2="{}" stroke="{BOUNDARY}" stroke-width="2.5"/><text x="{}" y="{}">boundary</text>"#,
            n(lx),
            n(y - 4.0),
            n(lx + 16.0),
            n(y - 4.0),
            n(lx + 22.0),
            n(y)
        );
        y += 20.0;
        let _ = writeln!(
            o,
            r#"<circle cx="{}" cy="{}" r="6" fill="{}"/><text x="{}" y="{}">chosen point ({})</text>"#,
            n(lx + 8.0),
            n(y - 4.0),
            self.colour(),
            n(lx + 22.0),
            n(y),
            self.verdict
        );
        if let Some(runs) = legend_cells {
            cells_legend(o, y + 30.0, &runs);
        }
    }
}

/// The legend's part for simulated cells, from `y` down: what the colour means, the runs per
/// cell and the colour scale.
fn cells_legend(o: &mut String, mut y: f64, runs: &[u32]) {
    let lx = LEGEND_X;
    let _ = writeln!(
        o,
        r#"<text x="{}" y="{}" font-weight="bold">Simulated cells</text>"#,
        n(lx),
        n(y)
    );
    y += 15.0;
    let runs_text = match runs {
        [] => "no cells".to_string(),
        [r] => format!("{r} runs per cell"),
        many => format!("{} to {} runs per cell", many[0], many[many.len() - 1]),
    };
    for line in [
        "needless takeover rate".to_string(),
        "(I7 healthy holder taken over)".to_string(),
        runs_text,
    ] {
        let _ = writeln!(
            o,
            r#"<text x="{}" y="{}" font-size="11">{}</text>"#,
            n(lx),
            n(y),
            esc(&line)
        );
        y += 14.0;
    }
    y += 4.0;
    for (k, rate) in [0.0, 0.25, 0.5, 0.75, 1.0].into_iter().enumerate() {
        let yy = y + k as f64 * 18.0;
        let _ = writeln!(
            o,
            r##"<rect x="{}" y="{}" width="14" height="14" fill="{}" stroke="#444444" stroke-width="0.8"/><text x="{}" y="{}">{}</text>"##,
            n(lx),
            n(yy),
            rate_colour(rate),
            n(lx + 22.0),
            n(yy + 11.0),
            percent(rate)
        );
    }
    y += 5.0 * 18.0 + 10.0;
    for line in [
        "hover a square for its",
        "jeopardy rate (P13)",
        "no loss injected; round",
        "trips jitter by up to J",
    ] {
        let _ = writeln!(
            o,
            r##"<text x="{}" y="{}" font-size="11" fill="#555555">{}</text>"##,
            n(lx),
            n(y),
            esc(line)
        );
        y += 14.0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nice_axes() {
        assert_eq!(nice_step(1), 1);
        assert_eq!(nice_step(3), 5);
        assert_eq!(nice_step(4_666_666_667), 5_000_000_000);
        assert_eq!(axis(28 * NS_PER_S as u128), (30 * NS_PER_S, 5 * NS_PER_S));
        assert_eq!(tick_label(2_500_000_000, 500_000_000), "2.5");
        assert_eq!(tick_label(20 * NS_PER_S, 20 * NS_PER_S), "20");
        assert_eq!(esc("a<b & \"c\""), "a&lt;b &amp; &quot;c&quot;");
        assert_eq!(secs(35 * NS_PER_S), "35.000s");
        assert_eq!(secs(250_000), "0.00025s");
        assert_eq!(secs(999_999_999), "0.999999999s");
        assert_eq!(secs(1_500_000_000), "1.500s");
        assert_eq!(secs_ms(69_999_999_999, Round::Down), "69.999s");
        assert_eq!(secs_ms(16_666_666_666, Round::Nearest), "16.667s");
        assert_eq!(secs_ms(250_000, Round::Down), "0.00025s");
    }
}
