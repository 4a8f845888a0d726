//! What one handler of a node did, read back from the trace: the notes it journaled and the
//! delivery that started it. The checkers of messages and of journals both ask.

use crate::Window;
use leasesim_protocol::{Event, Msg};
use leasesim_sim::{EventKind, NodeId};

/// Most trace events looked through for the rest of one handler: a handler journals a few
/// notes and sends a few messages, and the director's commands come between them.
pub(crate) const HANDLER_EVENTS_MAX: usize = 64;

/// Whether the node of trace event `i` journaled a note matching `pred` in the handler that
/// produced the event: among its own notes and sends just before it at the same instant, back to
/// the delivery that started the handler. The director's commands may come between them.
/// Inlined where a decision is judged: the note is nearly always the event just before, and the
/// call cost more than the walk back.
#[inline(always)]
pub(crate) fn journaled_here(trace: Window<'_>, i: usize, pred: impl Fn(&Event) -> bool) -> bool {
    let e = trace.at(i);
    for p in trace.before(i).iter().rev().take(HANDLER_EVENTS_MAX) {
        if p.t != e.t {
            break;
        }
        if p.node != e.node {
            continue;
        }
        match &p.kind {
            EventKind::Note { note } => {
                if pred(note) {
                    return true;
                }
            }
            EventKind::Send { .. } | EventKind::Fault { .. } | EventKind::Release { .. } => {}
            EventKind::Deliver { .. } | EventKind::Lost { .. } => break,
        }
    }
    false
}

/// The message whose delivery started the handler that produced trace event `i`, with its
/// sender; `None` for a handler a timer started.
pub(crate) fn delivered_here(trace: Window<'_>, i: usize) -> Option<(NodeId, Msg)> {
    let e = trace.at(i);
    for p in trace.before(i).iter().rev().take(HANDLER_EVENTS_MAX) {
        if p.t != e.t {
            break;
        }
        if p.node != e.node {
            continue;
        }
        match &p.kind {
            EventKind::Deliver { from, msg, .. } => return Some((*from, *msg)),
            EventKind::Lost { .. } => break,
            EventKind::Note { .. }
            | EventKind::Send { .. }
            | EventKind::Fault { .. }
            | EventKind::Release { .. } => {}
        }
    }
    None
}
