//! Leases: per (job, token), the coordinator's grant beside what its holder believed, both in
//! true time, with the holder's jeopardy; drawn from the run's lease history.

use super::clocks::Clocks;
use super::{f, Page, Scale, BAR_H, LEASE_ROW};
use crate::escape::html as esc;
use crate::html::squash;
use crate::{line, secs, Names, NodeKind, NodeView};
use leasesim_checkers::history::{self, History, Issue};
use leasesim_protocol::{Event, Msg};
use leasesim_sim::{NodeId, TraceEvent};
use std::collections::BTreeMap;
use std::fmt::Write;

type Ev = TraceEvent<Msg, Event>;

/// The coordinator's lease of one (job, token), as drawn: its spans in true time.
pub(super) struct Lease {
    pub job: u32,
    pub token: u64,
    pub holder: String,
    /// The trace index of its first grant (or renewal, or checkpoint).
    pub grant: usize,
    pub segs: Vec<(u64, u64)>,
    /// The trace indices of every later grant, renewal and checkpoint.
    pub renewals: Vec<usize>,
    pub closed: Option<usize>,
    pub expiry_local: u64,
}

/// What the holder of one (job, token) believed in one attempt, as drawn.
pub(super) struct Belief {
    pub node: NodeId,
    pub job: u32,
    pub token: u64,
    pub claim: Option<usize>,
    pub segs: Vec<(u64, u64)>,
    pub oks: Vec<usize>,
    pub ended: Option<usize>,
    pub deadline_local: u64,
    pub jeopardy: Vec<(usize, Option<usize>)>,
}

/// Every lease the coordinator issued, in the order of its first issue: each grant, renewal or
/// checkpoint until the lease ended extends it to the expiry it set (mapped to true time
/// through the coordinator's clock readings); the end cuts it short.
pub(super) fn leases(history: &History, trace: &[Ev], clocks: &Clocks) -> Vec<Lease> {
    let mut out: Vec<Lease> = history
        .leases()
        .filter_map(|l| lease(&l, trace, clocks))
        .collect();
    out.sort_by_key(|l| l.grant);
    out
}

fn lease(l: &history::Lease<'_>, trace: &[Ev], clocks: &Clocks) -> Option<Lease> {
    let mut issues = l.issues();
    let first = issues.next()?;
    let expiry = |x: &Issue| {
        let node = trace[x.at.index].node;
        clocks
            .to_true(node, x.at.t_ns, x.lease_until)
            .max(x.at.t_ns)
    };
    let mut out = Lease {
        job: l.job().0,
        token: l.token().0,
        holder: first.holder().to_string(),
        grant: first.at.index,
        segs: vec![(first.at.t_ns, expiry(first))],
        renewals: Vec::new(),
        closed: l.ended(),
        expiry_local: first.lease_until,
    };
    for x in issues {
        out.renewals.push(x.at.index);
        if out.closed.is_some_and(|c| c < x.at.index) {
            continue;
        }
        let (t, exp) = (x.at.t_ns, expiry(x));
        out.expiry_local = x.lease_until;
        match out.segs.last_mut() {
            Some(last) if t <= last.1 => last.1 = exp,
            _ => out.segs.push((t, exp)),
        }
    }
    if let (Some(c), Some(last)) = (out.closed, out.segs.last_mut()) {
        last.1 = last.1.min(trace[c].t).max(last.0);
    }
    Some(out)
}

/// Every holder's attempt, in the order they were opened: the deadlines it stated (mapped to
/// true time through its own clock readings), cut short where the attempt ended, and its
/// jeopardy.
pub(super) fn beliefs(history: &History, trace: &[Ev], clocks: &Clocks) -> Vec<Belief> {
    let mut out: Vec<Opened> = history
        .leases()
        .flat_map(|l| l.attempts().map(move |a| (l, a)))
        .map(|(l, a)| belief(&l, &a, trace, clocks))
        .collect();
    // Each event opens at most one attempt, so the order is total.
    out.sort_by_key(|b| b.opened);
    out.into_iter().map(|b| b.belief).collect()
}

/// A belief with the trace index that opened its attempt.
struct Opened {
    opened: usize,
    belief: Belief,
}

fn belief(
    l: &history::Lease<'_>,
    a: &history::Attempt<'_>,
    trace: &[Ev],
    clocks: &Clocks,
) -> Opened {
    let node = a.node();
    let mut b = Belief {
        node,
        job: l.job().0,
        token: l.token().0,
        claim: a.claim().map(|s| s.at.index),
        segs: Vec::new(),
        oks: Vec::new(),
        ended: a.ended(),
        deadline_local: a.deadline().unwrap_or(0),
        jeopardy: a.jeopardy().map(|s| (s.from, s.to)).collect(),
    };
    for s in a.stated() {
        if !s.claim {
            b.oks.push(s.at.index);
        }
        let t = s.at.t_ns;
        let dl = clocks.to_true(node, t, s.deadline).max(t);
        match b.segs.last_mut() {
            Some(last) if t <= last.1 => last.1 = last.1.max(dl),
            _ => b.segs.push((t, dl)),
        }
    }
    if let (Some(e), Some(last)) = (b.ended, b.segs.last_mut()) {
        last.1 = last.1.min(trace[e].t).max(last.0);
    }
    Opened {
        opened: a.opened(),
        belief: b,
    }
}

/// One row of a lane: a (job, token) with its coordinator lease and its holders' beliefs.
pub(super) struct RowItem {
    pub lane: usize,
    pub row: usize,
    pub lease: Option<usize>,
    pub beliefs: Vec<usize>,
}

/// Rows of lease items keyed by (lane, job, token).
pub(super) type Rows = BTreeMap<(usize, u32, u64), RowItem>;

/// Every (job, token) on its lane, packed into rows: returns the items and the number of rows
/// of each lane.
pub(super) fn rows(
    nodes: &[NodeView],
    leases: &[Lease],
    beliefs: &[Belief],
    trace: &[Ev],
    sc: &Scale,
) -> (Rows, Vec<usize>) {
    let mut items = place(nodes, leases, beliefs);
    let span = |it: &RowItem| span(it, leases, beliefs, trace, sc.t_end);
    // Pack rows per lane: an item goes to the first row whose last item ended before it began.
    let mut order: Vec<(usize, u64, u32, u64)> = items
        .iter()
        .map(|(&(lane, job, token), it)| (lane, span(it).0, job, token))
        .collect();
    order.sort();
    let gap_ns = (90.0 * sc.ns_per_px()) as u64;
    let mut row_ends: Vec<Vec<u64>> = vec![Vec::new(); nodes.len()];
    for &(lane, _, job, token) in &order {
        let it = items.get_mut(&(lane, job, token)).expect("an item");
        let (s, e) = span(it);
        let ends = &mut row_ends[lane];
        let row = match ends.iter().position(|&end| end.saturating_add(gap_ns) <= s) {
            Some(r) => r,
            None => {
                ends.push(0);
                ends.len() - 1
            }
        };
        ends[row] = e.max(s);
        it.row = row;
    }
    (items, row_ends.iter().map(Vec::len).collect())
}

/// Which lane each (job, token) is drawn on: its holder's, found by who journaled the claim,
/// else by the holder's name, else the coordinator's; each belief on its holder's lane.
fn place(nodes: &[NodeView], leases: &[Lease], beliefs: &[Belief]) -> Rows {
    let n = nodes.len();
    let lane_of = |id: NodeId| -> Option<usize> { ((id as usize) < n).then_some(id as usize) };
    let coord_lane = nodes.iter().position(|v| v.kind == NodeKind::Coordinator);
    let mut holder_node: BTreeMap<(u32, u64), NodeId> = BTreeMap::new();
    for b in beliefs {
        if b.claim.is_some() {
            holder_node.entry((b.job, b.token)).or_insert(b.node);
        }
    }
    let mut items = Rows::new();
    for (k, l) in leases.iter().enumerate() {
        let lane = holder_node
            .get(&(l.job, l.token))
            .and_then(|&nd| lane_of(nd))
            .or_else(|| nodes.iter().position(|v| v.name == l.holder))
            .or(coord_lane);
        if let Some(lane) = lane {
            entry(&mut items, lane, l.job, l.token).lease = Some(k);
        }
    }
    for (k, b) in beliefs.iter().enumerate() {
        if let Some(lane) = lane_of(b.node) {
            entry(&mut items, lane, b.job, b.token).beliefs.push(k);
        }
    }
    items
}

fn entry(items: &mut Rows, lane: usize, job: u32, token: u64) -> &mut RowItem {
    items.entry((lane, job, token)).or_insert_with(|| RowItem {
        lane,
        row: 0,
        lease: None,
        beliefs: Vec::new(),
    })
}

/// The true-time span an item covers on the plot: its lease, its beliefs and their jeopardy.
fn span(
    it: &RowItem,
    leases: &[Lease],
    beliefs: &[Belief],
    trace: &[Ev],
    t_end: u64,
) -> (u64, u64) {
    let mut lo = u64::MAX;
    let mut hi = 0;
    let mut add = |s: u64, e: u64| {
        lo = lo.min(s);
        hi = hi.max(e);
    };
    if let Some(l) = it.lease {
        for &(s, e) in &leases[l].segs {
            add(s, e);
        }
    }
    for &b in &it.beliefs {
        let b = &beliefs[b];
        for &(s, e) in &b.segs {
            add(s, e);
        }
        for &(s, e) in &b.jeopardy {
            add(trace[s].t, e.map_or(t_end, |e| trace[e].t));
        }
    }
    if lo == u64::MAX {
        (0, 0)
    } else {
        (lo.min(t_end), hi.min(t_end))
    }
}

impl Page<'_> {
    /// The coordinator's grants and the holders' beliefs, with jeopardy.
    pub(super) fn leases(&self, o: &mut String) {
        let Page {
            names,
            sc,
            an,
            items,
            geoms,
            ..
        } = self;
        let trace = self.trace;
        // leases: the coordinator's grant above the holder's belief, per (job, token)
        o.push_str("<g class=\"leases\">\n");
        for it in items.values() {
            let g = &geoms[it.lane];
            let ry = g.lease_y + it.row as f64 * LEASE_ROW + 3.0;
            if let Some(k) = it.lease {
                let l = &an.leases[k];
                write_lease(o, names, trace, sc, l, ry);
            }
            for &b in &it.beliefs {
                write_belief(o, names, trace, sc, &an.beliefs[b], ry + BAR_H + 1.0);
            }
        }
        o.push_str("</g>\n");
    }
}

fn write_lease(o: &mut String, names: &Names<'_>, trace: &[Ev], sc: &Scale, l: &Lease, y: f64) {
    let last_end = l.segs.last().map_or(trace[l.grant].t, |s| s.1);
    let title = esc(&lease_title(names, trace, sc, l));
    let _ = write!(
        o,
        "<g class=\"lease-coord\" data-job=\"{}\" data-token=\"{}\"><title>{title}</title>",
        l.job, l.token
    );
    for &(s, e) in &l.segs {
        let x0 = sc.x(s);
        let w = (sc.x(e) - x0).max(1.5);
        let _ = write!(
            o,
            "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"/>",
            f(x0),
            f(y),
            f(w),
            f(BAR_H)
        );
    }
    for &r in &l.renewals {
        let x = f(sc.x(trace[r].t));
        let _ = write!(
            o,
            "<line class=\"tickmark\" x1=\"{x}\" x2=\"{x}\" y1=\"{}\" y2=\"{}\"/>",
            f(y),
            f(y + BAR_H)
        );
    }
    let expired = match l.closed {
        None => last_end <= sc.t_end,
        Some(c) => trace[c].t > last_end,
    };
    if expired {
        let _ = write!(
            o,
            "<text class=\"bar-note\" x=\"{}\" y=\"{}\">expired</text>",
            f(sc.x(last_end) + 3.0),
            f(y + BAR_H - 2.0)
        );
    }
    if let Some(&(s, e)) = l.segs.first() {
        let w = sc.x(e) - sc.x(s);
        let full = format!("job{} token {} \u{2192} {}", l.job, l.token, l.holder);
        let label = if w >= full.chars().count() as f64 * 4.9 + 4.0 {
            full
        } else {
            format!("t{}", l.token)
        };
        let _ = write!(
            o,
            "<text class=\"bar-label\" x=\"{}\" y=\"{}\">{}</text>",
            f(sc.x(s) + 2.0),
            f(y + BAR_H - 2.0),
            esc(&label)
        );
    }
    o.push_str("</g>\n");
}

fn write_belief(o: &mut String, names: &Names<'_>, trace: &[Ev], sc: &Scale, b: &Belief, y: f64) {
    if !b.segs.is_empty() {
        let mut title = match b.claim {
            Some(c) => squash(&line(names, &trace[c])),
            None => format!("job{} token {}", b.job, b.token),
        };
        if !b.oks.is_empty() {
            let _ = write!(title, "\n{} heartbeat(s) acknowledged", b.oks.len());
        }
        let last = b.segs.last().map_or(0, |s| s.1);
        let _ = write!(
            title,
            "\nthe holder believed its lease ran until {} (its own clock {})",
            secs(last),
            secs(b.deadline_local)
        );
        if let Some(e) = b.ended {
            let _ = write!(
                title,
                "\nthe attempt ended: {}",
                squash(&line(names, &trace[e]))
            );
        }
        let _ = write!(
            o,
            "<g class=\"lease-holder\" data-job=\"{}\" data-token=\"{}\"><title>{}</title>",
            b.job,
            b.token,
            esc(&title)
        );
        for &(s, e) in &b.segs {
            let x0 = sc.x(s);
            let w = (sc.x(e) - x0).max(1.5);
            let _ = write!(
                o,
                "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"/>",
                f(x0),
                f(y),
                f(w),
                f(BAR_H)
            );
        }
        for &k in &b.oks {
            let x = f(sc.x(trace[k].t));
            let _ = write!(
                o,
                "<line class=\"tickmark\" x1=\"{x}\" x2=\"{x}\" y1=\"{}\" y2=\"{}\"/>",
                f(y),
                f(y + BAR_H)
            );
        }
        let (s, e) = b.segs[0];
        let w = sc.x(e) - sc.x(s);
        let full = format!("job{} token {}", b.job, b.token);
        let label = if w >= full.chars().count() as f64 * 4.9 + 4.0 {
            full
        } else {
            format!("t{}", b.token)
        };
        let _ = writeln!(
            o,
            "<text class=\"bar-label\" x=\"{}\" y=\"{}\">{}</text></g>",
            f(sc.x(s) + 2.0),
            f(y + BAR_H - 2.0),
            esc(&label)
        );
    }
    write_jeopardy(o, names, trace, sc, b, y);
}

/// The holder's spans of jeopardy over its belief bar.
fn write_jeopardy(o: &mut String, names: &Names<'_>, trace: &[Ev], sc: &Scale, b: &Belief, y: f64) {
    for &(s, e) in &b.jeopardy {
        let t0 = trace[s].t;
        let t1 = e.map_or(sc.t_end, |e| trace[e].t);
        let x0 = sc.x(t0);
        let w = (sc.x(t1) - x0).max(2.0);
        let title = format!(
            "{}\n{}",
            squash(&line(names, &trace[s])),
            e.map_or_else(
                || "still in jeopardy at the end of the run".to_string(),
                |e| format!("until: {}", squash(&line(names, &trace[e])))
            )
        );
        let _ = write!(
            o,
            "<g class=\"jeopardy\" data-job=\"{}\" data-token=\"{}\"><title>{}</title>\
             <rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"/>",
            b.job,
            b.token,
            esc(&title),
            f(x0),
            f(y),
            f(w),
            f(BAR_H)
        );
        if w >= 60.0 {
            let _ = write!(
                o,
                "<text class=\"jeop-label\" x=\"{}\" y=\"{}\">jeopardy t{}</text>",
                f(x0 + 3.0),
                f(y + BAR_H - 2.0),
                b.token
            );
        }
        o.push_str("</g>\n");
    }
}

/// A lease's tooltip: its grant, how often it was renewed, and how it ended (or is valid until).
fn lease_title(names: &Names<'_>, trace: &[Ev], sc: &Scale, l: &Lease) -> String {
    let grant = &trace[l.grant];
    let last_end = l.segs.last().map_or(grant.t, |s| s.1);
    let mut title = squash(&line(names, grant));
    if !l.renewals.is_empty() {
        let _ = write!(title, "\nrenewed {} time(s)", l.renewals.len());
    }
    match l.closed {
        Some(c) if trace[c].t <= last_end => {
            let _ = write!(
                title,
                "\nended at {} by: {}",
                secs(trace[c].t),
                squash(&line(names, &trace[c]))
            );
        }
        Some(c) => {
            let _ = write!(
                title,
                "\nexpired at {} (coordinator clock {}); later: {}",
                secs(last_end),
                secs(l.expiry_local),
                squash(&line(names, &trace[c]))
            );
        }
        None => {
            let _ = write!(
                title,
                "\nvalid until {} (coordinator clock {}){}",
                secs(last_end),
                secs(l.expiry_local),
                if last_end > sc.t_end {
                    ", past the end of the run"
                } else {
                    ""
                }
            );
        }
    }
    title
}
