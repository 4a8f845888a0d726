//! Messages: each one's life from its send to its deliveries (or its drop, release or loss),
//! which of them to draw when there are too many, and their arrows.

use super::{f, LaneGeom, Page, Scale};
use crate::escape::html as esc;
use crate::html::squash;
use crate::{line, Names};
use leasesim_protocol::{Event, Msg, MsgKind};
use leasesim_sim::{EventKind, Fate, NodeId, TraceEvent};
use std::collections::BTreeMap;
use std::fmt::Write;

type Ev = TraceEvent<Msg, Event>;

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
            MsgKind::ClaimGranted
            | MsgKind::HeartbeatRejected
            | MsgKind::Commit
            | MsgKind::CommitAccepted
            | MsgKind::CommitRejected
            | MsgKind::ToolRequest
            | MsgKind::ToolResponse
            | MsgKind::Effect
            | MsgKind::EffectAck
            | MsgKind::Operator
            | MsgKind::OperatorDone
            | MsgKind::Checkpoint
            | MsgKind::CheckpointAck
            | MsgKind::EffectStatus
            | MsgKind::EffectStatusReply
            | MsgKind::ToolStatus => 1,
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
            EventKind::Note { .. } | EventKind::Fault { .. } => {}
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

impl Page<'_> {
    /// Message arrows.
    pub(super) fn messages(&self, o: &mut String) {
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
    let cls = if r.dropped() || (r.lost.is_some() && r.delivers.is_empty()) {
        "msg dropped"
    } else if r.late() || r.delivers.is_empty() {
        "msg late"
    } else if r.duplicated() {
        "msg duplicated"
    } else {
        "msg"
    };
    let title = msg_title(names, trace, r);
    let _ = write!(
        o,
        "<g class=\"{cls}\" data-job=\"{}\" data-id=\"{}\"><title>{}</title>",
        r.job_attr(),
        r.id,
        esc(&title)
    );
    let path = msg_path(trace, sc, r, (x1, y1), y2);
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

/// A message's tooltip: its send, its release, its deliveries or its loss, and where it was
/// when the run ended.
fn msg_title(names: &Names<'_>, trace: &[Ev], r: &MsgRec) -> String {
    let send = &trace[r.send];
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
    if r.delivers.is_empty() && r.lost.is_none() && !r.dropped() {
        title.push_str(if r.late() {
            "\nheld: not delivered by the end of the run"
        } else {
            "\nstill in flight at the end of the run"
        });
    }
    title
}

/// A message's arrow from its send at `(x1, y1)` to each delivery (or loss) on the lane at
/// `y2`; a short stub for a dropped message or one still in flight.
fn msg_path(trace: &[Ev], sc: &Scale, r: &MsgRec, (x1, y1): (f64, f64), y2: f64) -> String {
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
    path
}
