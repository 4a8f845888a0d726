//! Faults: the bands of cut links, pauses, crashes, slowness and a lossy network, merged where
//! several faults cover the same span, and the instant clock faults.

use super::{f, Page, AXIS_H};
use crate::escape::html as esc;
use crate::html::squash;
use crate::{dur, line, Names};
use leasesim_protocol::{Event, Msg};
use leasesim_sim::{Command, EventKind, NodeId, TraceEvent};
use std::collections::BTreeMap;
use std::fmt::Write;

type Ev = TraceEvent<Msg, Event>;

/// A fault band on one lane (or, with no lane, the network's row): its span and what it was.
pub(super) struct Band {
    pub lane: Option<usize>,
    pub start: u64,
    pub end: u64,
    pub kind: &'static str,
    pub labels: Vec<String>,
    pub titles: Vec<String>,
}

/// A fault interval before merging: (lane, start index, end index, kind, label).
type RawBand = (Option<usize>, usize, Option<usize>, &'static str, String);

fn pause_label(trace: &[Ev], s: usize) -> String {
    match trace[s].kind {
        EventKind::Fault {
            command: Command::Pause { frozen: true, .. },
        } => "VM stop (clock frozen)".into(),
        _ => "paused (GC)".into(),
    }
}

fn slow_label(trace: &[Ev], s: usize) -> String {
    match trace[s].kind {
        EventKind::Fault {
            command: Command::SetSlow { extra_ns, .. },
        } => format!("slow +{}", dur(extra_ns)),
        _ => "slow".into(),
    }
}

fn net_label(trace: &[Ev], s: usize) -> String {
    match trace[s].kind {
        EventKind::Fault {
            command: Command::SetNetwork { drop_ppm, dup_ppm },
        } => format!("network loses {drop_ppm} ppm, duplicates {dup_ppm} ppm"),
        _ => "lossy network".into(),
    }
}

impl Page<'_> {
    /// Fault bands and instant clock faults.
    pub(super) fn faults(&self, o: &mut String) {
        let Page {
            names,
            sc,
            an,
            geoms,
            ..
        } = self;
        let trace = self.trace;
        let net_h = self.net_h;
        // fault bands
        o.push_str("<g class=\"faults\">\n");
        for b in &an.bands {
            let (y0, h) = match b.lane {
                Some(l) => (geoms[l].y + 1.0, geoms[l].h - 2.0),
                None => (AXIS_H + 1.0, net_h - 2.0),
            };
            let x0 = sc.x(b.start);
            let w = (sc.x(b.end) - x0).max(2.0);
            let label = b.labels.join(", ");
            let _ = write!(
                o,
                "<g class=\"fault {}\"><title>{}</title><rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"/>",
                b.kind,
                esc(&b.titles.join("\n\n")),
                f(x0),
                f(y0),
                f(w),
                f(h)
            );
            if w >= label.chars().count() as f64 * 5.0 + 6.0 {
                let _ = write!(
                    o,
                    "<text class=\"fault-label\" x=\"{}\" y=\"{}\">{}</text>",
                    f(x0 + 3.0),
                    f(y0 + 9.0),
                    esc(&label)
                );
            }
            o.push_str("</g>\n");
        }
        for &(l, i) in &an.instants {
            let x = sc.x(trace[i].t);
            let g = &geoms[l];
            let word = match trace[i].kind {
                EventKind::Fault {
                    command: Command::WallStep { .. },
                } => "wall step",
                EventKind::Fault {
                    command: Command::SetDrift { .. },
                } => "drift",
                _ => "clock step",
            };
            let _ = writeln!(
                o,
                "<g class=\"fault instant\"><title>{}</title><line x1=\"{x}\" x2=\"{x}\" y1=\"{}\" \
                 y2=\"{}\"/><text class=\"fault-label\" x=\"{}\" y=\"{}\">{word}</text></g>",
                esc(&squash(&line(names, &trace[i]))),
                f(g.y + 2.0),
                f(g.y + g.h - 2.0),
                f(x + 2.0),
                f(g.y + 11.0),
                x = f(x)
            );
        }
        o.push_str("</g>\n");
    }
}

/// The fault bands of a trace, merged where faults of one kind cover the same span of a lane,
/// and the instant clock faults as (lane, trace index).
pub(super) fn bands(
    trace: &[Ev],
    names: &Names<'_>,
    n: usize,
    t_end: u64,
) -> (Vec<Band>, Vec<(usize, usize)>) {
    let (raw, instants) = raw_bands(trace, names, n);
    (merge(trace, names, raw, t_end), instants)
}

/// Every fault interval from its start to its end (or the end of the run), and the instant
/// clock faults.
// Long: one arm per fault command, each opening or closing its kind of band in the shared open-band maps.
fn raw_bands(trace: &[Ev], names: &Names<'_>, n: usize) -> (Vec<RawBand>, Vec<(usize, usize)>) {
    let lane = |id: NodeId| -> Option<usize> { ((id as usize) < n).then_some(id as usize) };
    let mut instants = Vec::new();
    let mut cuts: BTreeMap<(NodeId, NodeId), usize> = BTreeMap::new();
    let mut pauses: BTreeMap<NodeId, usize> = BTreeMap::new();
    let mut crashes: BTreeMap<NodeId, usize> = BTreeMap::new();
    let mut slow: BTreeMap<NodeId, usize> = BTreeMap::new();
    let mut network: Option<usize> = None;
    let mut raw: Vec<RawBand> = Vec::new();
    for (i, e) in trace.iter().enumerate() {
        let EventKind::Fault { command } = &e.kind else {
            continue;
        };
        match *command {
            Command::Cut { from, to } => {
                cuts.entry((from, to)).or_insert(i);
            }
            Command::Heal { from, to } => {
                if let Some(s) = cuts.remove(&(from, to)) {
                    let label = format!("link {}\u{2192}{} cut", names.node(from), names.node(to));
                    raw.push((lane(from), s, Some(i), "cut", label.clone()));
                    raw.push((lane(to), s, Some(i), "cut", label));
                }
            }
            Command::Pause { node, .. } => {
                pauses.entry(node).or_insert(i);
            }
            Command::Resume { node } => {
                if let Some(s) = pauses.remove(&node) {
                    raw.push((lane(node), s, Some(i), "pause", pause_label(trace, s)));
                }
            }
            Command::Crash { node } => {
                crashes.entry(node).or_insert(i);
                if let Some(s) = pauses.remove(&node) {
                    raw.push((lane(node), s, Some(i), "pause", pause_label(trace, s)));
                }
            }
            Command::Restart { node } => {
                if let Some(s) = crashes.remove(&node) {
                    raw.push((lane(node), s, Some(i), "crash", "crashed".into()));
                }
            }
            Command::SetSlow { node, extra_ns } => {
                if let Some(s) = slow.remove(&node) {
                    raw.push((lane(node), s, Some(i), "slow", slow_label(trace, s)));
                }
                if extra_ns > 0 {
                    slow.insert(node, i);
                }
            }
            Command::SetNetwork { drop_ppm, dup_ppm } => {
                if let Some(s) = network.take() {
                    raw.push((None, s, Some(i), "network", net_label(trace, s)));
                }
                if drop_ppm > 0 || dup_ppm > 0 {
                    network = Some(i);
                }
            }
            Command::ClockStep { node, .. }
            | Command::WallStep { node, .. }
            | Command::SetDrift { node, .. } => {
                if let Some(l) = lane(node) {
                    instants.push((l, i));
                }
            }
            Command::Signal { .. } | Command::Release { .. } | Command::Alarm { .. } => {}
        }
    }
    // Faults that never ended run to the end of the plot.
    for ((from, to), s) in cuts {
        let label = format!("link {}\u{2192}{} cut", names.node(from), names.node(to));
        raw.push((lane(from), s, None, "cut", label.clone()));
        raw.push((lane(to), s, None, "cut", label));
    }
    for (node, s) in pauses {
        raw.push((lane(node), s, None, "pause", pause_label(trace, s)));
    }
    for (node, s) in crashes {
        raw.push((lane(node), s, None, "crash", "crashed".into()));
    }
    for (node, s) in slow {
        raw.push((lane(node), s, None, "slow", slow_label(trace, s)));
    }
    if let Some(s) = network {
        raw.push((None, s, None, "network", net_label(trace, s)));
    }
    (raw, instants)
}

/// One band per (lane, span, kind), with the labels and trace lines of every fault in it.
fn merge(trace: &[Ev], names: &Names<'_>, mut raw: Vec<RawBand>, t_end: u64) -> Vec<Band> {
    let title = |i: usize| squash(&line(names, &trace[i]));
    raw.sort_by_key(|b| (b.1, b.2.unwrap_or(usize::MAX), b.0, b.3));
    let mut bands: Vec<Band> = Vec::new();
    let mut merged: BTreeMap<(Option<usize>, u64, u64, &'static str), usize> = BTreeMap::new();
    for (l, s, e, kind, label) in raw {
        if l.is_none() && kind != "network" {
            continue;
        }
        let start = trace[s].t;
        let end = e.map_or(t_end, |e| trace[e].t);
        let mut text = title(s);
        text.push('\n');
        text.push_str(&e.map_or_else(|| "(lasts to the end of the run)".into(), title));
        let key = (l, start, end, kind);
        if let Some(&k) = merged.get(&key) {
            let b: &mut Band = &mut bands[k];
            if !b.labels.contains(&label) {
                b.labels.push(label);
            }
            if !b.titles.contains(&text) {
                b.titles.push(text);
            }
        } else {
            merged.insert(key, bands.len());
            bands.push(Band {
                lane: l,
                start,
                end,
                kind,
                labels: vec![label],
                titles: vec![text],
            });
        }
    }
    bands
}
