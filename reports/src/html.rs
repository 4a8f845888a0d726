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

use crate::{dur, line, secs, Names, NodeKind, RunView};
use leasesim_protocol::{Event, Msg, MsgKind};
use leasesim_sim::{Command, EventKind, Fate, NodeId, TraceEvent};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;

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

// ---------------------------------------------------------------------------------------------
// Shared helpers (the Mermaid renderer uses them too).

/// Escapes text for HTML and SVG, in content and in attribute values.
pub(crate) fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            c if c.is_control() && c != '\n' && c != '\t' => {}
            c => o.push(c),
        }
    }
    o
}

/// Collapses the column padding of a timeline line into single spaces.
pub(crate) fn squash(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The job a journal event is about.
pub(crate) fn event_job(e: &Event) -> u32 {
    use Event::*;
    match *e {
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
    }
}

/// One message's life: its send, the fate the network gave it, and what became of it.
pub(crate) struct MsgRec {
    /// Message id.
    pub id: u64,
    /// Sender.
    pub from: NodeId,
    /// Receiver.
    pub to: NodeId,
    /// Payload.
    pub msg: Msg,
    /// The fate decided at send time.
    pub fate: Fate,
    /// Trace index of the send.
    pub send: usize,
    /// Trace indices of its deliveries (two for a duplicate).
    pub delivers: Vec<usize>,
    /// Trace index of its release, for a held message.
    pub release: Option<usize>,
    /// Trace index of its loss at a crashed receiver.
    pub lost: Option<usize>,
}

impl MsgRec {
    /// Held by the fault plan (it arrives late, if ever).
    pub fn late(&self) -> bool {
        matches!(self.fate, Fate::Hold) || self.release.is_some()
    }
    /// Dropped at send time.
    pub fn dropped(&self) -> bool {
        matches!(self.fate, Fate::Drop { .. })
    }
    /// Delivered twice.
    pub fn duplicated(&self) -> bool {
        matches!(self.fate, Fate::Duplicate { .. }) || self.delivers.len() > 1
    }
    /// 0 for the unusual (kept first when arrows are capped), 3 for routine polling.
    pub fn priority(&self) -> u8 {
        if self.dropped()
            || self.late()
            || self.duplicated()
            || self.lost.is_some()
            || self.delivers.is_empty()
        {
            return 0;
        }
        match self.msg.kind() {
            MsgKind::Heartbeat | MsgKind::HeartbeatOk => 2,
            MsgKind::Claim | MsgKind::ClaimEmpty => 3,
            _ => 1,
        }
    }
    /// The job for the filter (`none` for claims that name no job).
    pub fn job_attr(&self) -> String {
        self.msg
            .job()
            .map_or_else(|| "none".to_string(), |j| j.0.to_string())
    }
}

/// Every message of the trace, in send order.
pub(crate) fn messages(trace: &[Ev]) -> Vec<MsgRec> {
    let mut recs: Vec<MsgRec> = Vec::new();
    let mut by_id: BTreeMap<u64, usize> = BTreeMap::new();
    for (i, e) in trace.iter().enumerate() {
        match &e.kind {
            EventKind::Send { id, to, msg, fate } => {
                by_id.insert(*id, recs.len());
                recs.push(MsgRec {
                    id: *id,
                    from: e.node,
                    to: *to,
                    msg: *msg,
                    fate: *fate,
                    send: i,
                    delivers: Vec::new(),
                    release: None,
                    lost: None,
                });
            }
            EventKind::Deliver { id, .. } => {
                if let Some(&k) = by_id.get(id) {
                    recs[k].delivers.push(i);
                }
            }
            EventKind::Release { id, .. } => {
                if let Some(&k) = by_id.get(id) {
                    recs[k].release.get_or_insert(i);
                }
            }
            EventKind::Lost { id } => {
                if let Some(&k) = by_id.get(id) {
                    recs[k].lost.get_or_insert(i);
                }
            }
            _ => {}
        }
    }
    recs
}

/// Which messages to draw: all when there are at most `cap`, else the `cap` most telling ones
/// (dropped, late, duplicated first; routine polling last), ties by send order.
pub(crate) fn select(recs: &[MsgRec], cap: usize) -> Vec<bool> {
    if recs.len() <= cap {
        return vec![true; recs.len()];
    }
    let mut order: Vec<usize> = (0..recs.len()).collect();
    order.sort_by_key(|&k| (recs[k].priority(), k));
    let mut keep = vec![false; recs.len()];
    for &k in order.iter().take(cap) {
        keep[k] = true;
    }
    keep
}

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

// ---------------------------------------------------------------------------------------------
// What the page draws, computed from the trace.

/// The coordinator's lease of one (job, token).
struct Lease {
    job: u32,
    token: u64,
    holder: String,
    grant: usize,
    segs: Vec<(u64, u64)>,
    renewals: Vec<usize>,
    closed: Option<usize>,
    expiry_local: u64,
}

/// What the holder of one (job, token) believed.
struct Belief {
    node: NodeId,
    job: u32,
    token: u64,
    claim: Option<usize>,
    segs: Vec<(u64, u64)>,
    oks: Vec<usize>,
    ended: Option<usize>,
    deadline_local: u64,
    jeopardy: Vec<(usize, Option<usize>)>,
}

impl Belief {
    fn end_at(&mut self, t: u64, i: usize, trace: &[Ev]) {
        if self.ended.is_some() {
            return;
        }
        self.ended = Some(i);
        if let Some(last) = self.segs.last_mut() {
            last.1 = last.1.min(t).max(last.0);
        }
        for j in &mut self.jeopardy {
            if j.1.is_none() && trace[j.0].t <= t {
                j.1 = Some(i);
            }
        }
    }
}

struct Band {
    lane: Option<usize>,
    start: u64,
    end: u64,
    kind: &'static str,
    labels: Vec<String>,
    titles: Vec<String>,
}

/// A fault interval before merging: (lane, start index, end index, kind, label).
type RawBand = (Option<usize>, usize, Option<usize>, &'static str, String);

struct Analysis {
    leases: Vec<Lease>,
    beliefs: Vec<Belief>,
    bands: Vec<Band>,
    instants: Vec<(usize, usize)>,
    jobs: BTreeSet<u32>,
}

fn analyse(view: &RunView<'_>, names: &Names<'_>, clocks: &Clocks, t_end: u64) -> Analysis {
    let trace = view.trace;
    let n = view.nodes.len();
    let lane = |id: NodeId| -> Option<usize> { ((id as usize) < n).then_some(id as usize) };
    let mut leases: Vec<Lease> = Vec::new();
    let mut lease_ix: BTreeMap<(u32, u64), usize> = BTreeMap::new();
    let mut beliefs: Vec<Belief> = Vec::new();
    let mut belief_ix: BTreeMap<(NodeId, u32, u64), usize> = BTreeMap::new();
    let mut jobs = BTreeSet::new();
    let mut bands: Vec<Band> = Vec::new();
    let mut instants = Vec::new();
    let mut cuts: BTreeMap<(NodeId, NodeId), usize> = BTreeMap::new();
    let mut pauses: BTreeMap<NodeId, usize> = BTreeMap::new();
    let mut crashes: BTreeMap<NodeId, usize> = BTreeMap::new();
    let mut slow: BTreeMap<NodeId, usize> = BTreeMap::new();
    let mut network: Option<usize> = None;
    let title = |i: usize| squash(&line(names, &trace[i]));
    let mut raw_bands: Vec<RawBand> = Vec::new();

    for (i, e) in trace.iter().enumerate() {
        let t = e.t;
        match &e.kind {
            EventKind::Send { msg, .. } | EventKind::Deliver { msg, .. } => {
                if let Some(j) = msg.job() {
                    jobs.insert(j.0);
                }
            }
            EventKind::Note { note } => {
                jobs.insert(event_job(note));
                note_effects(
                    note,
                    e,
                    i,
                    trace,
                    clocks,
                    &mut leases,
                    &mut lease_ix,
                    &mut beliefs,
                    &mut belief_ix,
                );
            }
            EventKind::Fault { command } => match *command {
                Command::Cut { from, to } => {
                    cuts.entry((from, to)).or_insert(i);
                }
                Command::Heal { from, to } => {
                    if let Some(s) = cuts.remove(&(from, to)) {
                        let label =
                            format!("link {}\u{2192}{} cut", names.node(from), names.node(to));
                        raw_bands.push((lane(from), s, Some(i), "cut", label.clone()));
                        raw_bands.push((lane(to), s, Some(i), "cut", label));
                    }
                }
                Command::Pause { node, .. } => {
                    pauses.entry(node).or_insert(i);
                }
                Command::Resume { node } => {
                    if let Some(s) = pauses.remove(&node) {
                        let label = pause_label(trace, s);
                        raw_bands.push((lane(node), s, Some(i), "pause", label));
                    }
                }
                Command::Crash { node } => {
                    crashes.entry(node).or_insert(i);
                    if let Some(s) = pauses.remove(&node) {
                        let label = pause_label(trace, s);
                        raw_bands.push((lane(node), s, Some(i), "pause", label));
                    }
                    for b in beliefs.iter_mut().filter(|b| b.node == node) {
                        b.end_at(t, i, trace);
                    }
                }
                Command::Restart { node } => {
                    if let Some(s) = crashes.remove(&node) {
                        raw_bands.push((lane(node), s, Some(i), "crash", "crashed".into()));
                    }
                }
                Command::SetSlow { node, extra_ns } => {
                    if let Some(s) = slow.remove(&node) {
                        raw_bands.push((lane(node), s, Some(i), "slow", slow_label(trace, s)));
                    }
                    if extra_ns > 0 {
                        slow.insert(node, i);
                    }
                }
                Command::SetNetwork { drop_ppm, dup_ppm } => {
                    if let Some(s) = network.take() {
                        raw_bands.push((None, s, Some(i), "network", net_label(trace, s)));
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
            },
            _ => {}
        }
    }
    // Faults that never ended run to the end of the plot.
    for ((from, to), s) in cuts {
        let label = format!("link {}\u{2192}{} cut", names.node(from), names.node(to));
        raw_bands.push((lane(from), s, None, "cut", label.clone()));
        raw_bands.push((lane(to), s, None, "cut", label));
    }
    for (node, s) in pauses {
        raw_bands.push((lane(node), s, None, "pause", pause_label(trace, s)));
    }
    for (node, s) in crashes {
        raw_bands.push((lane(node), s, None, "crash", "crashed".into()));
    }
    for (node, s) in slow {
        raw_bands.push((lane(node), s, None, "slow", slow_label(trace, s)));
    }
    if let Some(s) = network {
        raw_bands.push((None, s, None, "network", net_label(trace, s)));
    }
    raw_bands.sort_by_key(|b| (b.1, b.2.unwrap_or(usize::MAX), b.0, b.3));
    let mut merged: BTreeMap<(Option<usize>, u64, u64, &'static str), usize> = BTreeMap::new();
    for (l, s, e, kind, label) in raw_bands {
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
    Analysis {
        leases,
        beliefs,
        bands,
        instants,
        jobs,
    }
}

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

#[allow(clippy::too_many_arguments)]
fn note_effects(
    note: &Event,
    e: &Ev,
    i: usize,
    trace: &[Ev],
    clocks: &Clocks,
    leases: &mut Vec<Lease>,
    lease_ix: &mut BTreeMap<(u32, u64), usize>,
    beliefs: &mut Vec<Belief>,
    belief_ix: &mut BTreeMap<(NodeId, u32, u64), usize>,
) {
    let t = e.t;
    let renew = |l: &mut Lease, until: u64, i: usize| {
        l.renewals.push(i);
        if l.closed.is_some() {
            return;
        }
        let exp = clocks.to_true(e.node, t, until).max(t);
        l.expiry_local = until;
        match l.segs.last_mut() {
            Some(last) if t <= last.1 => last.1 = exp,
            _ => l.segs.push((t, exp)),
        }
    };
    let close = |l: &mut Lease, i: usize| {
        if l.closed.is_none() {
            l.closed = Some(i);
            if let Some(last) = l.segs.last_mut() {
                last.1 = last.1.min(t).max(last.0);
            }
        }
    };
    match *note {
        Event::LeaseGranted {
            job,
            holder,
            token,
            lease_until,
            ..
        } => {
            for (&(_, tok), &k) in lease_ix.range((job.0, 0)..=(job.0, u64::MAX)) {
                if tok != token.0 {
                    close(&mut leases[k], i);
                }
            }
            if let Some(&k) = lease_ix.get(&(job.0, token.0)) {
                renew(&mut leases[k], lease_until, i);
            } else {
                let exp = clocks.to_true(e.node, t, lease_until).max(t);
                lease_ix.insert((job.0, token.0), leases.len());
                leases.push(Lease {
                    job: job.0,
                    token: token.0,
                    holder: holder.to_string(),
                    grant: i,
                    segs: vec![(t, exp)],
                    renewals: Vec::new(),
                    closed: None,
                    expiry_local: lease_until,
                });
            }
        }
        Event::LeaseRenewed {
            job,
            worker: holder,
            token,
            lease_until,
        }
        | Event::CheckpointSaved {
            job,
            worker: holder,
            token,
            lease_until,
            ..
        } => {
            if let Some(&k) = lease_ix.get(&(job.0, token.0)) {
                renew(&mut leases[k], lease_until, i);
            } else {
                let exp = clocks.to_true(e.node, t, lease_until).max(t);
                lease_ix.insert((job.0, token.0), leases.len());
                leases.push(Lease {
                    job: job.0,
                    token: token.0,
                    holder: holder.to_string(),
                    grant: i,
                    segs: vec![(t, exp)],
                    renewals: Vec::new(),
                    closed: None,
                    expiry_local: lease_until,
                });
            }
        }
        Event::ResultAccepted { job, token, .. }
        | Event::LeaseRevoked { job, token, .. }
        | Event::RenewalCapReached { job, token, .. } => {
            if let Some(&k) = lease_ix.get(&(job.0, token.0)) {
                close(&mut leases[k], i);
            }
        }
        Event::JobFailed { job, .. } => {
            for (_, &k) in lease_ix.range((job.0, 0)..=(job.0, u64::MAX)) {
                close(&mut leases[k], i);
            }
        }
        Event::JobClaimed {
            job,
            token,
            deadline,
        }
        | Event::HeartbeatOk {
            job,
            token,
            deadline,
        } => {
            let key = (e.node, job.0, token.0);
            let dl = clocks.to_true(e.node, t, deadline).max(t);
            let claim = matches!(note, Event::JobClaimed { .. });
            match belief_ix.get(&key) {
                Some(&k) if beliefs[k].ended.is_none() => {
                    let b = &mut beliefs[k];
                    if claim {
                        b.claim.get_or_insert(i);
                    } else {
                        b.oks.push(i);
                    }
                    b.deadline_local = deadline;
                    match b.segs.last_mut() {
                        Some(last) if t <= last.1 => last.1 = last.1.max(dl),
                        _ => b.segs.push((t, dl)),
                    }
                }
                _ => {
                    belief_ix.insert(key, beliefs.len());
                    beliefs.push(Belief {
                        node: e.node,
                        job: job.0,
                        token: token.0,
                        claim: claim.then_some(i),
                        segs: vec![(t, dl)],
                        oks: if claim { Vec::new() } else { vec![i] },
                        ended: None,
                        deadline_local: deadline,
                        jeopardy: Vec::new(),
                    });
                }
            }
        }
        Event::JeopardyEntered { job, token, .. } => {
            let key = (e.node, job.0, token.0);
            let k = match belief_ix.get(&key) {
                Some(&k) => k,
                None => {
                    belief_ix.insert(key, beliefs.len());
                    beliefs.push(Belief {
                        node: e.node,
                        job: job.0,
                        token: token.0,
                        claim: None,
                        segs: Vec::new(),
                        oks: Vec::new(),
                        ended: None,
                        deadline_local: 0,
                        jeopardy: Vec::new(),
                    });
                    beliefs.len() - 1
                }
            };
            let b = &mut beliefs[k];
            if !b.jeopardy.iter().any(|j| j.1.is_none()) {
                b.jeopardy.push((i, None));
            }
        }
        Event::JeopardyExited { job, token } => {
            if let Some(&k) = belief_ix.get(&(e.node, job.0, token.0)) {
                for j in &mut beliefs[k].jeopardy {
                    if j.1.is_none() {
                        j.1 = Some(i);
                    }
                }
            }
        }
        Event::HeartbeatLost { job, token }
        | Event::SuccessClaimed { job, token }
        | Event::FailureAcknowledged { job, token }
        | Event::CommitRefused { job, token }
        | Event::CommitAbandoned { job, token } => {
            if let Some(&k) = belief_ix.get(&(e.node, job.0, token.0)) {
                beliefs[k].end_at(t, i, trace);
            }
        }
        _ => {}
    }
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

/// One row of a lane: a (job, token) with its coordinator lease and its holder's belief.
struct RowItem {
    lane: usize,
    row: usize,
    lease: Option<usize>,
    beliefs: Vec<usize>,
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
        let lane_of = |id: NodeId| -> Option<usize> { ((id as usize) < n).then_some(id as usize) };
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
        let routine = trace
            .iter()
            .filter(|e| match &e.kind {
                EventKind::Note { note } => !is_effect(note) && note_class(note).is_empty(),
                _ => false,
            })
            .count();
        let telling = trace
            .iter()
            .filter(|e| matches!(e.kind, EventKind::Note { .. }))
            .count()
            - routine;
        let plain_total = routine;
        let plain_marks = routine.min(MAX_MARKS.saturating_sub(telling));
        let coord_lane = view
            .nodes
            .iter()
            .position(|v| v.kind == NodeKind::Coordinator);

        // Which lane each (job, token) is drawn on: its holder's, found by who journaled the claim,
        // else by the holder's name, else the coordinator's.
        let mut holder_node: BTreeMap<(u32, u64), NodeId> = BTreeMap::new();
        for b in &an.beliefs {
            if b.claim.is_some() {
                holder_node.entry((b.job, b.token)).or_insert(b.node);
            }
        }
        let mut items: BTreeMap<(usize, u32, u64), RowItem> = BTreeMap::new();
        for (k, l) in an.leases.iter().enumerate() {
            let lane = holder_node
                .get(&(l.job, l.token))
                .and_then(|&nd| lane_of(nd))
                .or_else(|| view.nodes.iter().position(|v| v.name == l.holder))
                .or(coord_lane);
            let Some(lane) = lane else {
                continue;
            };
            items
                .entry((lane, l.job, l.token))
                .or_insert_with(|| RowItem {
                    lane,
                    row: 0,
                    lease: None,
                    beliefs: Vec::new(),
                })
                .lease = Some(k);
        }
        for (k, b) in an.beliefs.iter().enumerate() {
            let Some(lane) = lane_of(b.node) else {
                continue;
            };
            items
                .entry((lane, b.job, b.token))
                .or_insert_with(|| RowItem {
                    lane,
                    row: 0,
                    lease: None,
                    beliefs: Vec::new(),
                })
                .beliefs
                .push(k);
        }
        // Pack rows per lane: an item goes to the first row whose last item ended before it began.
        let span = |it: &RowItem| -> (u64, u64) {
            let mut lo = u64::MAX;
            let mut hi = 0;
            let mut add = |s: u64, e: u64| {
                lo = lo.min(s);
                hi = hi.max(e);
            };
            if let Some(l) = it.lease {
                for &(s, e) in &an.leases[l].segs {
                    add(s, e);
                }
            }
            for &b in &it.beliefs {
                let b = &an.beliefs[b];
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
        };
        let mut order: Vec<(usize, u64, u32, u64)> = items
            .iter()
            .map(|(&(lane, job, token), it)| (lane, span(it).0, job, token))
            .collect();
        order.sort();
        let gap_ns = (90.0 * sc.ns_per_px()) as u64;
        let mut row_ends: Vec<Vec<u64>> = vec![Vec::new(); n];
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

        // Effects per lane, for the label rows of receivers.
        let mut has_effects = vec![false; n];
        for e in trace {
            if let (EventKind::Note { note }, Some(l)) = (&e.kind, lane_of(e.node)) {
                if is_effect(note) {
                    has_effects[l] = true;
                }
            }
        }

        let net_h = if an.bands.iter().any(|b| b.lane.is_none()) {
            NET_H
        } else {
            0.0
        };
        let mut geoms = Vec::with_capacity(n);
        let mut y = AXIS_H + net_h;
        for l in 0..n {
            let labels = if has_effects[l] {
                EFFECT_LABEL_ROW * EFFECT_LABEL_ROWS as f64
            } else {
                0.0
            };
            let rows = row_ends[l].len();
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
        let lanes_bottom = y;
        let total_h = lanes_bottom + BOTTOM_AXIS_H;
        let svg_w = PAD_L + width + PAD_R;

        Page {
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

    /// The verdict, title and subtitle, the violation boxes, the job filter and the counts.
    fn head(&self, o: &mut String) {
        let Page {
            view,
            names,
            an,
            recs,
            ..
        } = self;
        let trace = self.trace;
        let n = self.n;
        let t_last = self.t_last;
        let drawn = self.drawn;
        // ---- head ----
        let verdict_class = match view.verdict.split_whitespace().next().unwrap_or("") {
            "HELD" => "verdict-held",
            "VIOLATED" => "verdict-violated",
            _ => "verdict-other",
        };
        let _ = write!(
            o,
            "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
             <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
             <title>{} \u{2014} {}</title>\n<style>\n{CSS}{}</style>\n</head>\n<body>\n",
            esc(&view.verdict),
            esc(&view.title),
            if view.findings.is_empty() {
                ""
            } else {
                CSS_VIOLATION
            }
        );
        let _ = writeln!(
            o,
            "<header>\n<h1><span class=\"verdict {verdict_class}\">{}</span>{}</h1>\n\
             <p class=\"subtitle\"><code>{}</code></p>\n</header>",
            esc(&view.verdict),
            esc(&view.title),
            esc(&view.subtitle)
        );
        for fd in view.findings {
            let _ = writeln!(
                o,
                "<div class=\"violation-box\"><div><span class=\"inv\">{}</span> \
                 <span class=\"where\">at {} on {}</span></div><div class=\"sentence\">{}</div>\
                 <div class=\"demand\">{}</div></div>",
                esc(&fd.invariant.label()),
                esc(&secs(fd.t_ns)),
                esc(names.node(fd.node)),
                esc(&fd.message),
                esc(&format!("The invariant: {}.", fd.invariant.summary()))
            );
        }
        // ---- controls ----
        let _ = write!(
            o,
            "<div class=\"controls\"><label>job <select id=\"job-filter\">\
             <option value=\"all\">all jobs</option>"
        );
        for j in &an.jobs {
            let _ = write!(o, "<option value=\"{j}\">job{j}</option>");
        }
        let notes = trace
            .iter()
            .filter(|e| matches!(e.kind, EventKind::Note { .. }))
            .count();
        let _ = writeln!(
            o,
            "</select></label><span class=\"stats\">{} nodes \u{b7} {} trace events \u{b7} {} \
             messages \u{b7} {} journal events \u{b7} {} lease{} \u{b7} run length {} \u{b7} hover \
             any mark for its trace line</span></div>",
            n,
            trace.len(),
            recs.len(),
            notes,
            an.leases.len(),
            if an.leases.len() == 1 { "" } else { "s" },
            esc(&secs(t_last))
        );
        if drawn < recs.len() {
            let _ = writeln!(
                o,
                "<p class=\"elided\">{} of {} messages are not drawn (at most {MAX_ARROWS} arrows; \
                 routine claims and heartbeats were left out first, every dropped, late or \
                 duplicated message is kept while there is room).</p>",
                recs.len() - drawn,
                recs.len()
            );
        }
        if self.plain_marks < self.plain_total {
            let _ = writeln!(
                o,
                "<p class=\"elided\">{} of {} routine journal marks are not drawn (at most \
                 {MAX_MARKS} marks; grants, claims, renewals, refusals, jeopardy, commits and \
                 effects are all kept).</p>",
                self.plain_total - self.plain_marks,
                self.plain_total
            );
        }
    }

    /// The fixed column of lane names, kinds and clock summaries.
    fn label_column(&self, o: &mut String) {
        let Page {
            view,
            clocks,
            geoms,
            ..
        } = self;
        let net_h = self.net_h;
        let total_h = self.total_h;
        // ---- the label column ----
        let _ = write!(
            o,
            "<div class=\"chart\">\n<svg class=\"labels\" \
             width=\"{}\" height=\"{}\" viewBox=\"0 0 {} {}\">\n",
            f(LABEL_W),
            f(total_h),
            f(LABEL_W),
            f(total_h)
        );
        let _ = writeln!(
            o,
            "<text class=\"axis-title\" x=\"8\" y=\"{}\">true time \u{2192}</text>",
            f(AXIS_H - 10.0)
        );
        if net_h > 0.0 {
            let _ = writeln!(
                o,
                "<text class=\"sub-label\" x=\"8\" y=\"{}\">network</text>",
                f(AXIS_H + net_h / 2.0 + 3.0)
            );
        }
        for (l, (v, g)) in view.nodes.iter().zip(geoms.iter()).enumerate() {
            let alt = if l % 2 == 1 { " alt" } else { "" };
            let _ = writeln!(
                o,
                "<g class=\"lane-label\" data-node=\"{}\"><rect class=\"lane-bg{alt}\" x=\"0\" y=\"{}\" \
                 width=\"{}\" height=\"{}\"/><line class=\"lane-sep\" x1=\"0\" x2=\"{}\" y1=\"{}\" y2=\"{}\"/>\
                 <text class=\"node-name\" x=\"8\" y=\"{}\">{}</text><text class=\"node-kind\" x=\"{}\" y=\"{}\">{}</text>",
                esc(&v.name),
                f(g.y),
                f(LABEL_W),
                f(g.h),
                f(LABEL_W),
                f(g.y + g.h),
                f(g.y + g.h),
                f(g.ev_y + 4.0),
                esc(&v.name),
                f(16.0 + v.name.chars().count() as f64 * 10.0),
                f(g.ev_y + 4.0),
                kind_word(v.kind)
            );
            for r in 0..g.rows {
                let ry = g.lease_y + r as f64 * LEASE_ROW;
                let _ = write!(
                    o,
                    "<text class=\"sub-label\" x=\"{}\" y=\"{}\">coordinator\u{2019}s grant</text>\
                     <text class=\"sub-label\" x=\"{}\" y=\"{}\">holder\u{2019}s belief</text>",
                    f(LABEL_W - 8.0),
                    f(ry + 3.0 + BAR_H - 2.0),
                    f(LABEL_W - 8.0),
                    f(ry + 3.0 + BAR_H + 1.0 + BAR_H - 2.0)
                );
            }
            let _ = writeln!(
                o,
                "<text class=\"sub-label\" x=\"{}\" y=\"{}\">{}</text></g>",
                f(LABEL_W - 8.0),
                f(g.clock_y + CLOCK_H - 4.0),
                esc(&clock_summary(clocks.of(l as NodeId)))
            );
        }
        o.push_str("</svg>\n");
    }

    /// Opens the scrolling timeline.
    fn timeline_open(&self, o: &mut String) {
        let total_h = self.total_h;
        let svg_w = self.svg_w;
        // ---- the timeline ----
        let _ = write!(
            o,
            "<div class=\"scroll\">\n<svg class=\"timeline\" \
             width=\"{}\" height=\"{}\" viewBox=\"0 0 {} {}\">\n{DEFS}",
            f(svg_w),
            f(total_h),
            f(svg_w),
            f(total_h)
        );
    }

    /// Lane backgrounds, the grid and the tick labels.
    fn lanes_and_axis(&self, o: &mut String) {
        let Page {
            view, sc, geoms, ..
        } = self;
        let width = self.width;
        let lanes_bottom = self.lanes_bottom;
        let svg_w = self.svg_w;
        let t_end = self.sc.t_end;
        // lane backgrounds
        for (l, (v, g)) in view.nodes.iter().zip(geoms.iter()).enumerate() {
            let alt = if l % 2 == 1 { " alt" } else { "" };
            let _ = writeln!(
                o,
                "<g class=\"lane\" data-node=\"{}\"><rect class=\"lane-bg{alt}\" x=\"0\" y=\"{}\" \
                 width=\"{}\" height=\"{}\"/><line class=\"lane-sep\" x1=\"0\" x2=\"{}\" y1=\"{}\" \
                 y2=\"{}\"/><rect class=\"clock-band\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"/></g>",
                esc(&v.name),
                f(g.y),
                f(svg_w),
                f(g.h),
                f(svg_w),
                f(g.y + g.h),
                f(g.y + g.h),
                f(PAD_L),
                f(g.clock_y),
                f(width),
                f(CLOCK_H)
            );
        }
        // grid and axis
        let step = nice_step(t_end as f64 * 110.0 / width);
        o.push_str("<g class=\"axis\">");
        let mut tk = 0u64;
        while tk <= t_end {
            let x = sc.x(tk);
            let label = tick_label(tk, step);
            let _ = write!(
                o,
                "<line class=\"grid\" x1=\"{x}\" x2=\"{x}\" y1=\"{}\" y2=\"{}\"/>\
                 <text class=\"tick\" x=\"{x}\" y=\"{}\">{label}</text>\
                 <text class=\"tick\" x=\"{x}\" y=\"{}\">{label}</text>",
                f(AXIS_H - 6.0),
                f(lanes_bottom),
                f(AXIS_H - 10.0),
                f(lanes_bottom + 15.0),
                x = f(x),
            );
            match tk.checked_add(step) {
                Some(v) => tk = v,
                None => break,
            }
        }
        o.push_str("</g>\n");
    }

    /// Fault bands and instant clock faults.
    fn faults(&self, o: &mut String) {
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

    /// Each node's local clock minus true time.
    fn clock_offsets(&self, o: &mut String) {
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

    /// The coordinator's grants and the holders' beliefs, with jeopardy.
    fn leases(&self, o: &mut String) {
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

    /// Message arrows.
    fn messages(&self, o: &mut String) {
        let Page {
            names,
            sc,
            recs,
            keep,
            geoms,
            ..
        } = self;
        let trace = self.trace;
        let n = self.n;
        // messages
        o.push_str("<g class=\"msgs\">\n");
        for (k, r) in recs.iter().enumerate() {
            if !keep[k] {
                continue;
            }
            write_msg(o, names, trace, sc, geoms, n, r);
        }
        o.push_str("</g>\n");
    }

    /// Journal events and effects.
    fn marks(&self, o: &mut String) {
        let Page {
            names, sc, geoms, ..
        } = self;
        let trace = self.trace;
        let n = self.n;
        let width = self.width;
        // journal marks and effects
        o.push_str("<g class=\"marks\">\n");
        let mut label_ends: Vec<[f64; EFFECT_LABEL_ROWS]> = vec![[f64::MIN; EFFECT_LABEL_ROWS]; n];
        let mut plain_left = self.plain_marks;
        for e in trace {
            let EventKind::Note { note } = &e.kind else {
                continue;
            };
            let Some(l) = self.lane_of(e.node) else {
                continue;
            };
            if !is_effect(note) && note_class(note).is_empty() {
                if plain_left == 0 {
                    continue;
                }
                plain_left -= 1;
            }
            let g = &geoms[l];
            let x = sc.x(e.t);
            let job = event_job(note);
            let text = esc(&squash(&line(names, e)));
            if is_effect(note) {
                let (cls, fence, key, rejected) = match *note {
                    Event::EffectApplied { key, fence, .. } => ("applied", fence, key, false),
                    Event::EffectDuplicate { key, fence, .. } => ("duplicate", fence, key, false),
                    Event::EffectFenced { key, fence, .. } => ("rejected fenced", fence, key, true),
                    Event::EffectUnauthorized { key, fence, .. } => {
                        ("rejected unauthorized", fence, key, true)
                    }
                    _ => continue,
                };
                let label = format!(
                    "{}fence {} {}",
                    if rejected {
                        if cls.ends_with("fenced") {
                            "FENCED "
                        } else {
                            "REFUSED "
                        }
                    } else if cls == "duplicate" {
                        "dup "
                    } else {
                        ""
                    },
                    fence.0,
                    names.key(key)
                );
                // A label goes to the first free row; when every row is taken the label is left
                // to the tooltip, except for a refusal, which is always written out.
                let lw = label.chars().count() as f64 * if rejected { 5.3 } else { 4.9 };
                let lx = (x + 1.5).min(PAD_L + width + PAD_R - lw - 2.0).max(0.0);
                let ends = &mut label_ends[l];
                let free = (0..EFFECT_LABEL_ROWS).find(|&r| ends[r] + 4.0 <= lx);
                let row = free.unwrap_or_else(|| {
                    (0..EFFECT_LABEL_ROWS)
                        .min_by(|&a, &b| ends[a].total_cmp(&ends[b]))
                        .unwrap_or(0)
                });
                let show = free.is_some() || rejected;
                if show {
                    ends[row] = ends[row].max(lx + lw);
                }
                let ly = g.label_y + (row + 1) as f64 * EFFECT_LABEL_ROW - 2.0;
                let cy = g.ev_y;
                let _ = write!(
                    o,
                    "<g class=\"effect {cls}\" data-job=\"{job}\"><title>{text}</title>"
                );
                if show {
                    let _ = write!(
                        o,
                        "<line class=\"stem\" x1=\"{x}\" x2=\"{x}\" y1=\"{}\" y2=\"{}\"/>",
                        f(ly + 1.0),
                        f(cy - 5.0),
                        x = f(x)
                    );
                }
                let _ = write!(
                    o,
                    "<path class=\"d\" d=\"M{},{} l5,5 -5,5 -5,-5z\"/>",
                    f(x),
                    f(cy - 5.0)
                );
                if rejected {
                    let _ = write!(
                        o,
                        "<path class=\"x\" d=\"M{},{} l6,6 M{},{} l-6,6\"/>",
                        f(x - 3.0),
                        f(cy - 3.0),
                        f(x + 3.0),
                        f(cy - 3.0)
                    );
                }
                if show {
                    let _ = write!(
                        o,
                        "<text x=\"{}\" y=\"{}\">{}</text>",
                        f(lx),
                        f(ly),
                        esc(&label)
                    );
                }
                o.push_str("</g>\n");
            } else {
                let cls = note_class(note);
                let r = if cls.is_empty() { 2.6 } else { 3.6 };
                let _ = writeln!(
                    o,
                    "<circle class=\"note{}{cls}\" data-job=\"{job}\" cx=\"{}\" cy=\"{}\" r=\"{r}\"><title>{text}</title></circle>",
                    if cls.is_empty() { "" } else { " " },
                    f(x),
                    f(g.ev_y),
                );
            }
        }
        o.push_str("</g>\n");
    }

    /// The violation markers.
    fn violations(&self, o: &mut String) {
        let Page {
            view,
            names,
            sc,
            geoms,
            ..
        } = self;
        let width = self.width;
        let lanes_bottom = self.lanes_bottom;
        // violations
        for (k, fd) in view.findings.iter().enumerate() {
            let x = sc.x(fd.t_ns);
            let cy = self.lane_of(fd.node).map_or(AXIS_H, |l| geoms[l].ev_y);
            let right = x > width - 160.0;
            let _ = writeln!(
                o,
                "<g class=\"violation\" id=\"violation-{k}\" data-x=\"{}\"><title>{}</title>\
                 <line class=\"vline\" x1=\"{x}\" x2=\"{x}\" y1=\"{}\" y2=\"{}\"/>\
                 <circle cx=\"{x}\" cy=\"{}\" r=\"9\"/><text x=\"{}\" y=\"{}\"{}>{} {}</text></g>",
                f(x),
                esc(&format!("VIOLATION {}", crate::finding(names, fd))),
                f(AXIS_H - 4.0),
                f(lanes_bottom),
                f(cy),
                f(if right { x - 12.0 } else { x + 12.0 }),
                f(cy - 8.0),
                if right { " text-anchor=\"end\"" } else { "" },
                esc(fd.invariant.spec_id()),
                esc(fd.invariant.name()),
                x = f(x)
            );
        }
    }

    /// The timeline: lanes, faults, clocks, leases, messages, marks and violations.
    fn timeline(&self, o: &mut String) {
        self.timeline_open(o);
        self.lanes_and_axis(o);
        self.faults(o);
        self.clock_offsets(o);
        self.leases(o);
        self.messages(o);
        self.marks(o);
        self.violations(o);
        o.push_str("</svg>\n</div>\n</div>\n");
    }
}

/// An effect a receiver decided.
fn is_effect(e: &Event) -> bool {
    matches!(
        e,
        Event::EffectApplied { .. }
            | Event::EffectDuplicate { .. }
            | Event::EffectFenced { .. }
            | Event::EffectUnauthorized { .. }
    )
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

fn clock_summary(s: &[(u64, u64)]) -> String {
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

fn note_class(e: &Event) -> &'static str {
    match e {
        Event::LeaseGranted { .. } | Event::CheckpointSaved { .. } => "grant",
        Event::LeaseRenewed { .. } | Event::HeartbeatOk { .. } => "renew",
        Event::JobClaimed { .. } => "claim",
        Event::ResultAccepted { .. } | Event::SuccessClaimed { .. } => "ok",
        Event::ResultRejected { .. }
        | Event::HeartbeatRefused { .. }
        | Event::HeartbeatLost { .. }
        | Event::CommitRefused { .. }
        | Event::LeaseRevoked { .. }
        | Event::JobFailed { .. }
        | Event::RenewalCapReached { .. }
        | Event::StageDeadlineExceeded { .. }
        | Event::HumanReviewRequested { .. }
        | Event::CommitAbandoned { .. }
        | Event::ToolTimedOut { .. } => "bad",
        Event::EffectStarted {
            in_jeopardy: true, ..
        } => "bad",
        Event::JeopardyEntered { .. } | Event::JeopardyExited { .. } => "jeop",
        Event::CommitSent { .. } => "commit",
        Event::EffectStarted { .. } => "send-effect",
        _ => "",
    }
}

fn write_lease(o: &mut String, names: &Names<'_>, trace: &[Ev], sc: &Scale, l: &Lease, y: f64) {
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
    let title = esc(&title);
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

fn write_msg(
    o: &mut String,
    names: &Names<'_>,
    trace: &[Ev],
    sc: &Scale,
    geoms: &[LaneGeom],
    n: usize,
    r: &MsgRec,
) {
    let lane_of = |id: NodeId| ((id as usize) < n).then_some(id as usize);
    let (Some(lf), Some(lt)) = (lane_of(r.from), lane_of(r.to)) else {
        return;
    };
    let send = &trace[r.send];
    let (x1, y1) = (sc.x(send.t), geoms[lf].ev_y);
    let y2 = geoms[lt].ev_y;
    let mut title = squash(&line(names, send));
    if let Some(rel) = r.release {
        title.push('\n');
        title.push_str(&squash(&line(names, &trace[rel])));
    }
    for &d in &r.delivers {
        title.push('\n');
        title.push_str(&squash(&line(names, &trace[d])));
    }
    if let Some(lost) = r.lost {
        title.push('\n');
        title.push_str(&squash(&line(names, &trace[lost])));
    }
    let cls = if r.dropped() || (r.lost.is_some() && r.delivers.is_empty()) {
        "msg dropped"
    } else if r.late() || r.delivers.is_empty() {
        "msg late"
    } else if r.duplicated() {
        "msg duplicated"
    } else {
        "msg"
    };
    if r.delivers.is_empty() && r.lost.is_none() && !r.dropped() {
        title.push_str(if r.late() {
            "\nheld: not delivered by the end of the run"
        } else {
            "\nstill in flight at the end of the run"
        });
    }
    let _ = write!(
        o,
        "<g class=\"{cls}\" data-job=\"{}\" data-id=\"{}\"><title>{}</title>",
        r.job_attr(),
        r.id,
        esc(&title)
    );
    let mut path = String::new();
    if r.dropped() {
        let _ = write!(
            path,
            "M{},{} L{},{}",
            f(x1),
            f(y1),
            f(x1 + 10.0),
            f(y1 + ((y2 - y1) * 0.35).clamp(-34.0, 34.0))
        );
    } else {
        for &d in &r.delivers {
            let _ = write!(
                path,
                "M{},{} L{},{} ",
                f(x1),
                f(y1),
                f(sc.x(trace[d].t)),
                f(y2)
            );
        }
        if let Some(lost) = r.lost {
            let _ = write!(
                path,
                "M{},{} L{},{} ",
                f(x1),
                f(y1),
                f(sc.x(trace[lost].t)),
                f(y2)
            );
        }
        if path.is_empty() {
            let _ = write!(
                path,
                "M{},{} L{},{}",
                f(x1),
                f(y1),
                f(x1 + 14.0),
                f(y1 + ((y2 - y1) * 0.3).clamp(-40.0, 40.0))
            );
        }
    }
    let path = path.trim_end();
    let _ = write!(
        o,
        "<path class=\"hit\" d=\"{path}\"/><path class=\"v\" d=\"{path}\"/>"
    );
    if let Some(rel) = r.release {
        let _ = write!(
            o,
            "<circle class=\"release\" cx=\"{}\" cy=\"{}\" r=\"3\"/>",
            f(sc.x(trace[rel].t)),
            f(y1)
        );
    }
    o.push_str("</g>\n");
}

const CSS: &str = r#"body{font:13px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:12px 14px;color:#1a202c;background:#fff}
h1{font-size:19px;margin:0 0 4px;font-weight:600}
.verdict{display:inline-block;padding:1px 9px;border-radius:4px;color:#fff;font-weight:700;margin-right:10px;letter-spacing:.03em}
.verdict-held{background:#2f855a}.verdict-violated{background:#c53030}.verdict-other{background:#b7791f}
.subtitle{margin:0 0 10px;color:#4a5568}
.subtitle code{background:#f7fafc;border:1px solid #e2e8f0;padding:1px 5px;border-radius:3px;font-size:12px}
.controls{margin:8px 0;display:flex;gap:18px;align-items:center;flex-wrap:wrap}
.controls select{font:inherit;padding:1px 4px}
.stats{color:#4a5568;font-size:12px}
.elided{color:#7b341e;background:#fffaf0;border:1px solid #fbd38d;padding:4px 8px;border-radius:4px;max-width:1100px}
.chart{display:flex;border:1px solid #cbd5e0;border-radius:6px;overflow:hidden;align-items:flex-start}
.labels{flex:none;border-right:1px solid #cbd5e0}
.scroll{overflow-x:auto;flex:1 1 auto}
svg{display:block}
svg text{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif}
.lane-bg{fill:#fff}.lane-bg.alt{fill:#f8fafc}
.lane-sep{stroke:#e2e8f0}
.node-name{font-size:14px;font-weight:700;fill:#1a202c}
.node-kind{font-size:10px;fill:#718096}
.sub-label{font-size:9px;fill:#718096;text-anchor:end}
.axis-title{font-size:10px;fill:#718096}
.grid{stroke:#edf2f7}
.tick{font-size:10px;fill:#718096;text-anchor:middle}
.clock-band{fill:#f1f5f9}
.clock{fill:none;stroke:#4a5568;stroke-width:1.3}
.lease-coord rect{fill:#90cdf4;stroke:#2b6cb0;stroke-width:1}
.lease-holder rect{fill:#9ae6b4;stroke:#2f855a;stroke-width:1}
.tickmark{stroke:#1a365d;stroke-width:1;opacity:.6}
.bar-label{font-size:8.5px;fill:#1a202c;pointer-events:none}
.bar-note{font-size:8.5px;font-style:italic;fill:#2b6cb0;pointer-events:none}
.jeopardy rect{fill:url(#hatch);stroke:#dd6b20;stroke-width:1.2}
.jeop-label{font-size:8.5px;font-weight:700;fill:#7b341e;pointer-events:none}
.fault rect{fill:#e53e3e;fill-opacity:.07;stroke:#e53e3e;stroke-opacity:.45;stroke-dasharray:4 3}
.fault.pause rect{fill:#805ad5;stroke:#805ad5}
.fault.crash rect{fill:#1a202c;fill-opacity:.12;stroke:#1a202c}
.fault.slow rect{fill:#d69e2e;stroke:#b7791f}
.fault.network rect{fill:#e53e3e;fill-opacity:.12}
.fault-label{font-size:9px;fill:#9b2c2c;pointer-events:none}
.fault.instant line{stroke:#c53030;stroke-width:2}
.msg path.v{stroke:#718096;stroke-width:1.1;fill:none;marker-end:url(#ah)}
.msg path.hit{stroke:transparent;stroke-width:7;fill:none}
.msg.dropped path.v{stroke:#c53030;marker-end:url(#xx)}
.msg.duplicated path.v{stroke:#6b46c1;marker-end:url(#ah-dup)}
.msg.late path.v{stroke:#b7791f;stroke-width:1.6;stroke-dasharray:6 3;marker-end:url(#ah-late)}
.msg .release{fill:#fff;stroke:#b7791f;stroke-width:1.5}
.msg:hover path.v{stroke-width:2.6}
.note{fill:#a0aec0;stroke:#fff;stroke-width:.8}
.note.grant{fill:#2b6cb0}.note.renew{fill:#63b3ed}.note.claim{fill:#38a169}.note.ok{fill:#276749}
.note.bad{fill:#e53e3e}.note.jeop{fill:#dd6b20}.note.commit{fill:#553c9a}.note.send-effect{fill:#319795}
.effect .d{stroke:#1a202c;stroke-width:.8}
.effect.applied .d{fill:#48bb78}.effect.duplicate .d{fill:#b794f4}.effect.rejected .d{fill:#feb2b2;stroke:#c53030}
.effect .x{stroke:#c53030;stroke-width:1.8}
.effect .stem{stroke:#a0aec0;stroke-width:.6}
.effect text{font-size:8.5px;fill:#2d3748}
.effect.rejected text{fill:#c53030;font-weight:700}
.off{display:none}
.legend{margin-top:12px;display:flex;flex-wrap:wrap;gap:6px 18px;font-size:12px;color:#2d3748;max-width:1300px}
.legend span{display:inline-flex;align-items:center;gap:6px}
.legend svg{display:inline-block}
.lg-coord{fill:#90cdf4;stroke:#2b6cb0}.lg-holder{fill:#9ae6b4;stroke:#2f855a}
.lg-jeop{fill:url(#hatch);stroke:#dd6b20}.lg-fault{fill:#e53e3e;fill-opacity:.1;stroke:#e53e3e;stroke-dasharray:4 3}
.lg-msg{stroke:#718096;stroke-width:1.3;marker-end:url(#ah)}
.lg-dropped{stroke:#c53030;stroke-width:1.3;marker-end:url(#xx)}
.lg-dup{stroke:#6b46c1;stroke-width:1.3;marker-end:url(#ah-dup)}
.lg-late{stroke:#b7791f;stroke-width:1.6;stroke-dasharray:6 3;marker-end:url(#ah-late)}
.lg-applied{fill:#48bb78;stroke:#1a202c}.lg-dupe{fill:#b794f4;stroke:#1a202c}.lg-rejected{fill:#feb2b2;stroke:#c53030}
.lg-clock{fill:none;stroke:#4a5568;stroke-width:1.3}
"#;

/// The violation's styles, only on a page that has one (a page of a run that held never
/// mentions the word).
const CSS_VIOLATION: &str = r#".violation-box{border:2px solid #e53e3e;background:#fff5f5;padding:8px 12px;border-radius:6px;margin:8px 0;max-width:1100px}
.violation-box .inv{font-weight:700;color:#c53030;font-size:15px}
.violation-box .where{color:#742a2a}
.violation-box .sentence{margin-top:2px}
.violation-box .demand{color:#4a5568;font-size:12px;margin-top:2px}
.violation .vline{stroke:#e53e3e;stroke-width:2;stroke-dasharray:7 4}
.violation circle{fill:#fff5f5;fill-opacity:.6;stroke:#e53e3e;stroke-width:3}
.violation text{font-size:12px;font-weight:700;fill:#c53030;paint-order:stroke;stroke:#fff;stroke-width:3px}
.lg-viol{fill:#fff5f5;stroke:#e53e3e;stroke-width:3}
"#;

/// Scrolls the timeline to the first violation when it is off screen.
const SCRIPT_VIOLATION: &str = r#"var m=document.querySelector('svg.timeline .violation'),sc=document.querySelector('.scroll');
if(m&&sc){var x=parseFloat(m.getAttribute('data-x'));if(x>sc.clientWidth-80){sc.scrollLeft=x-sc.clientWidth*0.7;}}
"#;

const DEFS: &str = r##"<defs>
<marker id="ah" viewBox="0 0 8 8" refX="7.5" refY="4" markerWidth="7" markerHeight="7" orient="auto"><path d="M0,0 L8,4 L0,8 z" fill="#718096"/></marker>
<marker id="ah-late" viewBox="0 0 8 8" refX="7.5" refY="4" markerWidth="6" markerHeight="6" orient="auto"><path d="M0,0 L8,4 L0,8 z" fill="#b7791f"/></marker>
<marker id="ah-dup" viewBox="0 0 8 8" refX="7.5" refY="4" markerWidth="7" markerHeight="7" orient="auto"><path d="M0,0 L8,4 L0,8 z" fill="#6b46c1"/></marker>
<marker id="xx" viewBox="0 0 10 10" refX="5" refY="5" markerWidth="9" markerHeight="9" orient="auto"><path d="M1,1 L9,9 M9,1 L1,9" stroke="#c53030" stroke-width="2.2"/></marker>
<pattern id="hatch" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(45)"><rect width="6" height="6" fill="#feebc8"/><line x1="0" y1="0" x2="0" y2="6" stroke="#ed8936" stroke-width="2.5"/></pattern>
</defs>
"##;

const LEGEND: &str = r#"<div class="legend">
<span><svg width="34" height="12"><rect class="lg-coord" x="1" y="1" width="32" height="10"/></svg>coordinator&#8217;s grant: the authoritative lease (its clock, shown in true time), ticks at renewals</span>
<span><svg width="34" height="12"><rect class="lg-holder" x="1" y="1" width="32" height="10"/></svg>what the holder believed it had (deadline on its own clock), ticks at acknowledged heartbeats</span>
<span><svg width="34" height="12"><rect class="lg-jeop" x="1" y="1" width="32" height="10"/></svg>jeopardy: the holder cannot confirm its lease and must not act</span>
<span><svg width="34" height="14"><rect class="lg-fault" x="1" y="1" width="32" height="12"/></svg>fault: cut link, pause, crash, slowness, lossy network; a red line: a clock step or drift change</span>
<span><svg width="40" height="12"><line class="lg-msg" x1="2" y1="6" x2="36" y2="6"/></svg>message, from send to delivery</span>
<span><svg width="40" height="12"><line class="lg-dropped" x1="2" y1="6" x2="30" y2="6"/></svg>dropped (cut, lost, fault plan) or lost at a crashed node</span>
<span><svg width="40" height="12"><line class="lg-dup" x1="2" y1="6" x2="36" y2="6"/></svg>duplicated (two deliveries)</span>
<span><svg width="40" height="12"><line class="lg-late" x1="2" y1="6" x2="36" y2="6"/></svg>late: held by the fault plan, released at the ring</span>
<span><svg width="14" height="12"><path class="lg-applied" d="M7,1 l5,5 -5,5 -5,-5z"/></svg>effect applied</span>
<span><svg width="14" height="12"><path class="lg-dupe" d="M7,1 l5,5 -5,5 -5,-5z"/></svg>effect duplicate (first result returned)</span>
<span><svg width="14" height="12"><path class="lg-rejected" d="M7,1 l5,5 -5,5 -5,-5z"/></svg>effect rejected: fenced (stale token) or unauthorized</span>
"#;

/// The legend's entry for a violation, only on a page that has one.
const LEGEND_VIOLATION: &str = r#"<span><svg width="20" height="20"><circle class="lg-viol" cx="10" cy="10" r="7"/></svg>violation: where and when the invariant broke</span>
"#;

/// The end of the legend.
const LEGEND_END: &str = r#"<span><svg width="34" height="12"><polyline class="lg-clock" points="1,9 12,9 12,3 33,5"/></svg>local clock &#8722; true time (offset, drift, steps)</span>
<span>dots: journal events (blue grant, green claim/accepted, orange jeopardy, red refusal); hover any mark for its trace line</span>
</div>
"#;

/// The job filter: hides every mark whose `data-job` is not the chosen job.
const SCRIPT: &str = r#"<script>
(function(){
var s=document.getElementById('job-filter');
if(s){s.addEventListener('change',function(){
var v=s.value,es=document.querySelectorAll('svg.timeline [data-job]');
for(var i=0;i<es.length;i++){var e=es[i];e.classList.toggle('off',v!=='all'&&e.getAttribute('data-job')!==v);}
});}
"#;

/// The end of the script.
const SCRIPT_END: &str = "})();\n</script>\n";
