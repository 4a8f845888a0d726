//! One run as a single self-contained HTML page: inline CSS and SVG, a few lines of inline
//! JavaScript for the job filter, nothing fetched from anywhere.
//!
//! The page shows a lane per node on one true-time axis: the coordinator's authoritative lease
//! of each (job, token) beside the interval its holder believed it had (both converted to true
//! time through the node's own clock readings in the trace), jeopardy spans, fault bands, every
//! message as an arrow from its send to its delivery (dropped, duplicated and late ones styled
//! apart), the effects each receiver applied or refused, each node's clock offset, and the
//! violation, if any, marked where it happened. Every mark carries its trace line as a tooltip.
//! Same input, same bytes.

mod clocks;
mod faults;
mod leases;
mod marks;
mod messages;
mod page;
mod style;
mod transactions;

use crate::{Names, NodeKind, RunView};
use clocks::Clocks;
use faults::Band;
use leases::RowItem;
use leases::{Belief, Lease};
use leasesim_checkers::history::History;
use leasesim_protocol::{Event, Msg};
use leasesim_sim::{EventKind, NodeId, TraceEvent};
use marks::is_effect;
use messages::select;
pub(crate) use messages::{messages, MsgRec};
use std::collections::{BTreeMap, BTreeSet};
use style::{LEGEND, LEGEND_END, LEGEND_VIOLATION, SCRIPT, SCRIPT_END, SCRIPT_VIOLATION};

/// Most messages drawn as arrows; beyond it the routine ones (claims, heartbeats) are left out
/// first and a visible note says how many.
pub const MAX_ARROWS: usize = 3000;
/// Most journal marks drawn; beyond it the routine ones (without a style of their own) are
/// left out, in trace order, and a visible note says how many.
pub const MAX_MARKS: usize = 20_000;
/// The narrowest plot, in pixels.
pub const MIN_WIDTH: f64 = 1200.0;
/// The widest plot, in pixels; between the two the width is proportional to the duration.
pub const MAX_WIDTH: f64 = 6000.0;
const PX_PER_SEC: f64 = 32.0;

const LABEL_W: f64 = 126.0;
const PAD_L: f64 = 10.0;
const PAD_R: f64 = 30.0;
const AXIS_H: f64 = 30.0;
const NET_H: f64 = 18.0;
const LANE_PAD: f64 = 6.0;
const EFFECT_LABEL_ROW: f64 = 11.0;
const EFFECT_LABEL_ROWS: usize = 3;
const EVENT_ROW: f64 = 22.0;
const LEASE_ROW: f64 = 28.0;
const BAR_H: f64 = 10.0;
const CLOCK_H: f64 = 16.0;
const BOTTOM_AXIS_H: f64 = 22.0;

type Ev = TraceEvent<Msg, Event>;

/// Collapses the column padding of a timeline line into single spaces.
pub(crate) fn squash(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The job a journal event is about (none for a store's statement, which the decision after
/// it names).
pub(crate) fn event_job(e: &Event) -> Option<u32> {
    use Event::*;
    Some(match *e {
        LeaseGranted { job, .. }
        | CheckpointSaved { job, .. }
        | AdmissionDeferred { job, .. }
        | RetryScheduled { job, .. }
        | JobFailed { job, .. }
        | RenewalCapReached { job, .. }
        | LeaseRevoked { job, .. }
        | LeaseRenewed { job, .. }
        | HeartbeatRefused { job, .. }
        | ResultAccepted { job, .. }
        | ResultRejected { job, .. }
        | JobClaimed { job, .. }
        | HeartbeatOk { job, .. }
        | HeartbeatLost { job, .. }
        | JeopardyEntered { job, .. }
        | JeopardyExited { job, .. }
        | ToolRequestStarted { job, .. }
        | ToolAnswered { job, .. }
        | StageDeadlineExceeded { job, .. }
        | ToolFaulted { job, .. }
        | OperatorActed { job, .. }
        | ToolTimedOut { job, .. }
        | EffectStarted { job, .. }
        | EffectReconciled { job, .. }
        | ToolStatusQueried { job, .. }
        | HumanReviewRequested { job, .. }
        | EffectAnswered { job, .. }
        | CommitSent { job, .. }
        | SuccessClaimed { job, .. }
        | FailureAcknowledged { job, .. }
        | CommitRefused { job, .. }
        | CommitAbandoned { job, .. } => job.0,
        EffectApplied { key, .. }
        | EffectDuplicate { key, .. }
        | EffectUnauthorized { key, .. }
        | EffectFenced { key, .. } => key.job.0,
        Store(_) => return None,
    })
}

/// What the page draws, read off the trace and its lease history.
struct Analysis {
    leases: Vec<Lease>,
    beliefs: Vec<Belief>,
    bands: Vec<Band>,
    instants: Vec<(usize, usize)>,
    jobs: BTreeSet<u32>,
}

fn analyse(view: &RunView<'_>, names: &Names<'_>, clocks: &Clocks, t_end: u64) -> Analysis {
    let trace = view.trace;
    let history = History::new(trace);
    let (bands, instants) = faults::bands(trace, names, view.nodes.len(), t_end);
    Analysis {
        leases: leases::leases(&history, trace, clocks),
        beliefs: leases::beliefs(&history, trace, clocks),
        bands,
        instants,
        jobs: jobs(trace),
    }
}

/// Every job the trace names, for the job filter.
fn jobs(trace: &[Ev]) -> BTreeSet<u32> {
    let mut jobs = BTreeSet::new();
    for e in trace {
        match &e.kind {
            EventKind::Send { msg, .. } | EventKind::Deliver { msg, .. } => {
                if let Some(j) = msg.job() {
                    jobs.insert(j.0);
                }
            }
            EventKind::Note { note } => {
                jobs.extend(event_job(note));
            }
            EventKind::Fault { .. } | EventKind::Release { .. } | EventKind::Lost { .. } => {}
        }
    }
    jobs
}

// ---------------------------------------------------------------------------------------------
// Layout.

struct LaneGeom {
    y: f64,
    h: f64,
    ev_y: f64,
    label_y: f64,
    lease_y: f64,
    rows: usize,
    clock_y: f64,
}

struct Scale {
    t_end: u64,
    width: f64,
}

impl Scale {
    fn x(&self, t: u64) -> f64 {
        PAD_L + t.min(self.t_end) as f64 * self.width / self.t_end as f64
    }
    fn ns_per_px(&self) -> f64 {
        self.t_end as f64 / self.width
    }
}

fn f(v: f64) -> String {
    let r = (v * 10.0).round() / 10.0;
    if r == r.trunc() {
        format!("{}", r as i64)
    } else {
        format!("{r:.1}")
    }
}

fn nice_step(raw_ns: f64) -> u64 {
    let mut p: u64 = 1;
    loop {
        for m in [1u64, 2, 5] {
            let s = p.saturating_mul(m);
            if s as f64 >= raw_ns || s >= u64::MAX / 10 {
                return s.max(1);
            }
        }
        p = p.saturating_mul(10);
    }
}

fn tick_label(t: u64, step: u64) -> String {
    const S: u64 = 1_000_000_000;
    if step >= 60 * S {
        let (h, m, s) = (t / 3600 / S, (t / 60 / S) % 60, (t / S) % 60);
        return match (h, s) {
            (0, 0) => format!("{m}m"),
            (0, _) => format!("{m}m{s:02}s"),
            (_, 0) => format!("{h}h{m:02}m"),
            _ => format!("{h}h{m:02}m{s:02}s"),
        };
    }
    let mut decimals = 0;
    let mut unit = S;
    while step % unit != 0 && decimals < 9 {
        unit /= 10;
        decimals += 1;
    }
    if decimals == 0 {
        format!("{}s", t / S)
    } else {
        format!("{}.{:0w$}s", t / S, (t % S) / unit, w = decimals as usize)
    }
}

// ---------------------------------------------------------------------------------------------
// The page.

/// Renders a run as one self-contained HTML page (inline SVG, CSS and a few lines of JS; no
/// network, no console output). The same view gives the same bytes.
pub fn render(view: &RunView<'_>) -> String {
    let node_names: Vec<String> = view.nodes.iter().map(|n| n.name.clone()).collect();
    let names = Names {
        nodes: &node_names,
        ops: view.ops,
    };
    let page = Page::new(view, &names);
    let mut o = String::with_capacity(64 * 1024 + view.trace.len() * 300);
    page.head(&mut o);
    page.label_column(&mut o);
    page.timeline(&mut o);
    let violated = !view.findings.is_empty();
    o.push_str(LEGEND);
    if violated {
        o.push_str(LEGEND_VIOLATION);
    }
    o.push_str(LEGEND_END);
    o.push_str(SCRIPT);
    if violated {
        o.push_str(SCRIPT_VIOLATION);
    }
    o.push_str(SCRIPT_END);
    o.push_str("</body>\n</html>\n");
    o
}

/// Everything the page draws, analysed and laid out once.
struct Page<'p> {
    /// The coordinator's lane when it drew SQL transactions, their first row, the
    /// connections and the bars.
    tx_lane: Option<usize>,
    tx_row0: usize,
    tx_conns: Vec<leasesim_protocol::Connection>,
    tx_bars: Vec<transactions::Bar>,
    view: &'p RunView<'p>,
    names: &'p Names<'p>,
    trace: &'p [Ev],
    n: usize,
    t_last: u64,
    width: f64,
    sc: Scale,
    clocks: Clocks,
    an: Analysis,
    recs: Vec<MsgRec>,
    keep: Vec<bool>,
    drawn: usize,
    /// How many routine journal marks (no special class) are drawn; the rest are counted.
    plain_marks: usize,
    plain_total: usize,
    items: BTreeMap<(usize, u32, u64), RowItem>,
    geoms: Vec<LaneGeom>,
    net_h: f64,
    lanes_bottom: f64,
    total_h: f64,
    svg_w: f64,
}

impl<'p> Page<'p> {
    fn new(view: &'p RunView<'p>, names: &'p Names<'p>) -> Page<'p> {
        let trace = view.trace;
        let n = view.nodes.len();
        let t_last = trace.iter().map(|e| e.t).max().unwrap_or(0);
        let t_find = view.findings.iter().map(|f| f.t_ns).max().unwrap_or(0);
        let t_end = t_last.max(t_find).max(1_000_000);
        let width = (t_end as f64 / 1e9 * PX_PER_SEC).clamp(MIN_WIDTH, MAX_WIDTH);
        let sc = Scale { t_end, width };
        let clocks = Clocks::new(trace, n);
        let an = analyse(view, names, &clocks, t_end);
        let recs = messages(trace);
        let keep = select(&recs, MAX_ARROWS);
        let drawn = keep.iter().filter(|&&k| k).count();
        let (plain_marks, plain_total) = marks::budget(trace);
        let (items, mut rows) = leases::rows(view.nodes, &an.leases, &an.beliefs, trace, &sc);
        // A SQL coordinator's connections get rows of their own below its leases.
        let (tx_conns, tx_bars) = transactions::bars(trace);
        let tx_lane = (!tx_conns.is_empty())
            .then(|| {
                view.nodes
                    .iter()
                    .position(|v| v.kind == NodeKind::Coordinator)
            })
            .flatten()
            .filter(|&l| l < rows.len());
        let tx_row0 = tx_lane.map_or(0, |l| rows[l]);
        if let Some(l) = tx_lane {
            rows[l] += tx_conns.len();
        }
        let net_h = if an.bands.iter().any(|b| b.lane.is_none()) {
            NET_H
        } else {
            0.0
        };
        let geoms = lane_geoms(trace, &rows, net_h);
        let y = geoms.last().map_or(AXIS_H + net_h, |g| g.y + g.h);
        let lanes_bottom = y;
        let total_h = lanes_bottom + BOTTOM_AXIS_H;
        let svg_w = PAD_L + width + PAD_R;

        Page {
            tx_lane,
            tx_row0,
            tx_conns,
            tx_bars,
            view,
            names,
            trace,
            n,
            t_last,
            width,
            sc,
            clocks,
            an,
            recs,
            keep,
            drawn,
            plain_marks,
            plain_total,
            items,
            geoms,
            net_h,
            lanes_bottom,
            total_h,
            svg_w,
        }
    }

    fn lane_of(&self, id: NodeId) -> Option<usize> {
        ((id as usize) < self.n).then_some(id as usize)
    }

    /// The timeline: lanes, faults, clocks, leases, messages, marks and violations.
    fn timeline(&self, o: &mut String) {
        self.timeline_open(o);
        self.lanes_and_axis(o);
        self.faults(o);
        self.clock_offsets(o);
        self.leases(o);
        self.transactions(o);
        self.messages(o);
        self.marks(o);
        self.violations(o);
        o.push_str("</svg>\n</div>\n</div>\n");
    }
}

/// Each lane's geometry, top to bottom: a row of effect labels on a lane that has effects,
/// its journal marks, a row per lease row, and its clock.
fn lane_geoms(trace: &[Ev], rows: &[usize], net_h: f64) -> Vec<LaneGeom> {
    let n = rows.len();
    let mut has_effects = vec![false; n];
    for e in trace {
        if let EventKind::Note { note } = &e.kind {
            if (e.node as usize) < n && is_effect(note) {
                has_effects[e.node as usize] = true;
            }
        }
    }
    let mut geoms = Vec::with_capacity(n);
    let mut y = AXIS_H + net_h;
    for (l, &rows) in rows.iter().enumerate() {
        let labels = if has_effects[l] {
            EFFECT_LABEL_ROW * EFFECT_LABEL_ROWS as f64
        } else {
            0.0
        };
        let label_y = y + LANE_PAD;
        let ev_y = label_y + labels + EVENT_ROW / 2.0;
        let lease_y = label_y + labels + EVENT_ROW;
        let clock_y = lease_y + rows as f64 * LEASE_ROW + 2.0;
        let h = clock_y + CLOCK_H + LANE_PAD - y;
        geoms.push(LaneGeom {
            y,
            h,
            ev_y,
            label_y,
            lease_y,
            rows,
            clock_y,
        });
        y += h;
    }
    geoms
}

fn kind_word(k: NodeKind) -> &'static str {
    match k {
        NodeKind::Coordinator => "coordinator",
        NodeKind::Worker => "worker",
        NodeKind::Receiver => "receiver",
        NodeKind::Tool => "tool",
        NodeKind::Operator => "operator",
    }
}
