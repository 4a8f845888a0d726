//! Clocks: each node's readings against true time as the trace saw them, the mapping of a
//! local reading back to true time, and the offset line drawn in each lane.

use super::{f, Page, CLOCK_H};
use crate::dur;
use crate::escape::html as esc;
use leasesim_protocol::{Event, Msg};
use leasesim_sim::{Command, EventKind, NodeId, TraceEvent};
use std::fmt::Write;

type Ev = TraceEvent<Msg, Event>;

/// Each node's clock as the trace saw it: (true time, local reading) pairs in trace order, with
/// the reading just before each monotonic step added, so steps show as steps.
pub(crate) struct Clocks {
    samples: Vec<Vec<(u64, u64)>>,
}

impl Clocks {
    /// Reads every node's (t, local) pairs off the trace.
    pub fn new(trace: &[Ev], nodes: usize) -> Clocks {
        let mut samples = vec![Vec::new(); nodes];
        for e in trace {
            let Some(s) = samples.get_mut(e.node as usize) else {
                continue;
            };
            if let EventKind::Fault {
                command: Command::ClockStep { delta_ns, .. },
            } = e.kind
            {
                let before = (e.local as i128 - delta_ns as i128).clamp(0, u64::MAX as i128);
                s.push((e.t, before as u64));
            }
            s.push((e.t, e.local));
        }
        Clocks { samples }
    }

    /// The pairs of one node.
    pub fn of(&self, node: NodeId) -> &[(u64, u64)] {
        self.samples.get(node as usize).map_or(&[], Vec::as_slice)
    }

    /// The first true time at or after `t0` at which `node`'s clock read `local`: interpolated
    /// between the node's readings, extrapolated at rate 1 past its last one.
    pub fn to_true(&self, node: NodeId, t0: u64, local: u64) -> u64 {
        let s = self.of(node);
        let i = s.partition_point(|&(t, _)| t < t0);
        if i >= s.len() {
            return match s.last() {
                Some(&(tl, ll)) => t0.max(tl).saturating_add(local.saturating_sub(ll)),
                None => t0.max(local),
            };
        }
        if s[i].1 >= local {
            return t0;
        }
        for j in i + 1..s.len() {
            let (tb, lb) = s[j];
            if lb >= local {
                let (ta, la) = s[j - 1];
                if lb > la && la < local {
                    let dt = (tb - ta) as u128 * (local - la) as u128 / (lb - la) as u128;
                    return ta + dt as u64;
                }
                return tb;
            }
        }
        let (tl, ll) = s[s.len() - 1];
        tl.saturating_add(local - ll)
    }
}

/// A signed duration: `+0.132s`, `-2.000ms`.
pub(crate) fn sdur(ns: i128) -> String {
    let sign = if ns < 0 { "-" } else { "+" };
    format!(
        "{sign}{}",
        dur(ns.unsigned_abs().min(u64::MAX as u128) as u64)
    )
}

impl Page<'_> {
    /// Each node's local clock minus true time.
    pub(super) fn clock_offsets(&self, o: &mut String) {
        let Page {
            view,
            sc,
            clocks,
            geoms,
            ..
        } = self;
        let t_end = self.sc.t_end;
        // clock offsets: local - true per node
        o.push_str("<g class=\"clocks\">\n");
        for (l, g) in geoms.iter().enumerate() {
            let s = clocks.of(l as NodeId);
            if s.is_empty() {
                continue;
            }
            let offs: Vec<i128> = s.iter().map(|&(t, lc)| lc as i128 - t as i128).collect();
            let lo = *offs.iter().min().expect("samples");
            let hi = *offs.iter().max().expect("samples");
            let yv = |o: i128| -> f64 {
                let top = g.clock_y + 3.0;
                let bot = g.clock_y + CLOCK_H - 3.0;
                if hi == lo {
                    (top + bot) / 2.0
                } else {
                    bot - (o - lo) as f64 / (hi - lo) as f64 * (bot - top)
                }
            };
            let mut pts = String::new();
            let mut last: Option<(f64, f64)> = None;
            for (k, (&(t, _), &ofs)) in s.iter().zip(&offs).enumerate() {
                let (x, yy) = (sc.x(t), yv(ofs));
                let keep = match last {
                    None => true,
                    Some((lx, ly)) => x - lx >= 1.0 || (yy - ly).abs() >= 1.0,
                };
                if keep || k + 1 == s.len() {
                    let _ = write!(pts, "{},{} ", f(x), f(yy));
                    last = Some((x, yy));
                }
            }
            // the clock runs on to the end of the plot at its last offset
            if let (Some(&(tl, _)), Some(&ol)) = (s.last(), offs.last()) {
                if tl < t_end {
                    let _ = write!(pts, "{},{}", f(sc.x(t_end)), f(yv(ol)));
                }
            }
            let _ = writeln!(
                o,
                "<polyline class=\"clock\" data-node=\"{}\" points=\"{}\"><title>{}</title></polyline>",
                esc(&view.nodes[l].name),
                pts.trim_end(),
                esc(&format!(
                    "{}: local clock \u{2212} true time, from {} to {} over the run ({} readings){}",
                    view.nodes[l].name,
                    sdur(lo),
                    sdur(hi),
                    s.len(),
                    if hi == lo {
                        ": a constant offset"
                    } else {
                        ": drift, steps or a frozen clock"
                    }
                ))
            );
        }
        o.push_str("</g>\n");
    }
}

pub(super) fn clock_summary(s: &[(u64, u64)]) -> String {
    let offs = s.iter().map(|&(t, l)| l as i128 - t as i128);
    let (Some(lo), Some(hi)) = (offs.clone().min(), offs.max()) else {
        return "clock: no readings".into();
    };
    if hi - lo < 1_000_000 {
        format!("clock {}", short(lo))
    } else {
        let (a, b) = (short(lo), short(hi));
        // one unit for both ends when they share it: `+131.9…+138.6ms`
        let unit = |s: &str| {
            s.trim_start_matches(|c: char| !c.is_alphabetic() && c != '\u{b5}')
                .to_string()
        };
        if unit(&a) == unit(&b) {
            format!("clock {}\u{2026}{b}", a.trim_end_matches(unit(&a).as_str()))
        } else {
            format!("clock {a}\u{2026}{b}")
        }
    }
}

/// A signed duration in three or four digits: `+131.9ms`, `+4.38s`, `-7200s`.
fn short(ns: i128) -> String {
    let sign = if ns < 0 { "-" } else { "+" };
    let a = ns.unsigned_abs() as f64;
    if a >= 100e9 {
        format!("{sign}{:.0}s", a / 1e9)
    } else if a >= 1e9 {
        format!("{sign}{:.2}s", a / 1e9)
    } else if a >= 1e6 {
        format!("{sign}{:.1}ms", a / 1e6)
    } else {
        format!("{sign}{:.0}\u{b5}s", a / 1e3)
    }
}
