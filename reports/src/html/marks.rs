//! Journal marks: a dot per journal event (styled by what it is), and a diamond per effect a
//! receiver decided, with its label in the first free row above the lane.

use super::{f, LaneGeom, Page, EFFECT_LABEL_ROW, EFFECT_LABEL_ROWS, MAX_MARKS, PAD_L, PAD_R};
use crate::escape::html as esc;
use crate::html::{event_job, squash};
use crate::line;
use leasesim_protocol::{Event, IdemKey, Msg, StoreEvent, StoreStatement, Token};
use leasesim_sim::{EventKind, TraceEvent};
use std::fmt::Write;

/// Where a mark stands and the job it belongs to (`u32::MAX` for none).
#[derive(Copy, Clone)]
struct Spot {
    x: f64,
    job: u32,
}

/// An effect a receiver decided, as its diamond shows it.
pub(super) struct EffectMark {
    /// Its CSS classes after `effect`.
    cls: &'static str,
    fence: Token,
    key: IdemKey,
    /// Refused (fenced or unauthorized) rather than applied or answered from the store.
    rejected: bool,
}

/// The effect a journal event records at a receiver, if it is one.
pub(super) fn effect_mark(e: &Event) -> Option<EffectMark> {
    let (cls, fence, key, rejected) = match *e {
        Event::EffectApplied { key, fence, .. } => ("applied", fence, key, false),
        Event::EffectDuplicate { key, fence, .. } => ("duplicate", fence, key, false),
        Event::EffectFenced { key, fence, .. } => ("rejected fenced", fence, key, true),
        Event::EffectUnauthorized { key, fence, .. } => ("rejected unauthorized", fence, key, true),
        Event::LeaseGranted { .. }
        | Event::CheckpointSaved { .. }
        | Event::AdmissionDeferred { .. }
        | Event::RetryScheduled { .. }
        | Event::JobFailed { .. }
        | Event::RenewalCapReached { .. }
        | Event::LeaseRevoked { .. }
        | Event::LeaseRenewed { .. }
        | Event::HeartbeatRefused { .. }
        | Event::ResultAccepted { .. }
        | Event::ResultRejected { .. }
        | Event::JobClaimed { .. }
        | Event::HeartbeatOk { .. }
        | Event::HeartbeatLost { .. }
        | Event::JeopardyEntered { .. }
        | Event::JeopardyExited { .. }
        | Event::ToolRequestStarted { .. }
        | Event::ToolAnswered { .. }
        | Event::StageDeadlineExceeded { .. }
        | Event::ToolFaulted { .. }
        | Event::OperatorActed { .. }
        | Event::ToolTimedOut { .. }
        | Event::EffectStarted { .. }
        | Event::EffectReconciled { .. }
        | Event::ToolStatusQueried { .. }
        | Event::HumanReviewRequested { .. }
        | Event::EffectAnswered { .. }
        | Event::CommitSent { .. }
        | Event::SuccessClaimed { .. }
        | Event::FailureAcknowledged { .. }
        | Event::CommitRefused { .. }
        | Event::Store(_)
        | Event::CommitAbandoned { .. } => return None,
    };
    Some(EffectMark {
        cls,
        fence,
        key,
        rejected,
    })
}

/// An effect a receiver decided.
pub(super) fn is_effect(e: &Event) -> bool {
    effect_mark(e).is_some()
}

/// The style of a journal event's dot: empty for a routine one.
pub(super) fn note_class(e: &Event) -> &'static str {
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
        Event::AdmissionDeferred { .. }
        | Event::RetryScheduled { .. }
        | Event::ToolRequestStarted { .. }
        | Event::ToolAnswered { .. }
        | Event::ToolFaulted { .. }
        | Event::OperatorActed { .. }
        | Event::EffectReconciled { .. }
        | Event::ToolStatusQueried { .. }
        | Event::EffectAnswered { .. }
        | Event::FailureAcknowledged { .. }
        | Event::EffectApplied { .. }
        | Event::EffectDuplicate { .. }
        | Event::EffectUnauthorized { .. }
        | Event::Store(_)
        | Event::EffectFenced { .. } => "",
    }
}

/// Whether a coordinator decision is labelled with the statement that made it (a renewal is
/// not: there are many; its tooltip still names the statement).
fn labels_statement(e: &Event) -> bool {
    matches!(
        e,
        Event::LeaseGranted { .. }
            | Event::ResultAccepted { .. }
            | Event::ResultRejected { .. }
            | Event::HeartbeatRefused { .. }
            | Event::LeaseRevoked { .. }
            | Event::CheckpointSaved { .. }
    )
}

/// How many routine journal marks (no style of their own) are drawn, and how many there are:
/// every telling mark is drawn, and routine ones while the page stays within `MAX_MARKS`.
pub(super) fn budget(trace: &[TraceEvent<Msg, Event>]) -> (usize, usize) {
    let (mut routine, mut notes) = (0, 0);
    for e in trace {
        if let EventKind::Note { note } = &e.kind {
            if matches!(
                note,
                Event::Store(StoreEvent::Ran { .. } | StoreEvent::Step { .. })
            ) {
                // Not drawn as marks: the decision after it names the statement, and the
                // steps are the transaction bars.
                continue;
            }
            notes += 1;
            if !is_effect(note) && note_class(note).is_empty() {
                routine += 1;
            }
        }
    }
    let telling = notes - routine;
    (routine.min(MAX_MARKS.saturating_sub(telling)), routine)
}

impl Page<'_> {
    /// Journal events and effects.
    pub(super) fn marks(&self, o: &mut String) {
        o.push_str("<g class=\"marks\">\n");
        let mut label_ends: Vec<[f64; EFFECT_LABEL_ROWS]> =
            vec![[f64::MIN; EFFECT_LABEL_ROWS]; self.n];
        let mut plain_left = self.plain_marks;
        // The statement that made the coordinator's next decision (a SQL coordinator journals
        // it first): named beside the decision, its text in the decision's tooltip.
        let mut statement: Option<(StoreStatement, u32)> = None;
        for e in self.trace {
            let EventKind::Note { note } = &e.kind else {
                continue;
            };
            if let Event::Store(StoreEvent::Ran {
                statement: st,
                rows,
            }) = *note
            {
                statement = Some((st, rows));
                continue;
            }
            if matches!(note, Event::Store(StoreEvent::Step { .. })) {
                continue;
            }
            let decided_by = statement.take();
            let Some(l) = self.lane_of(e.node) else {
                continue;
            };
            let effect = effect_mark(note);
            if effect.is_none() && note_class(note).is_empty() {
                if plain_left == 0 {
                    continue;
                }
                plain_left -= 1;
            }
            let g = &self.geoms[l];
            let x = self.sc.x(e.t);
            let job = event_job(note).unwrap_or(u32::MAX);
            let text = self.tooltip(o, e, note, l, decided_by);
            match effect {
                Some(m) => self.effect(o, &m, g, &mut label_ends[l], Spot { x, job }, &text),
                None => {
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
        }
        o.push_str("</g>\n");
    }

    /// A mark's tooltip: the event's timeline line and, for a SQL coordinator's decision, the
    /// statement that made it (named beside the decision in lane `l` when it labels one).
    fn tooltip(
        &self,
        o: &mut String,
        e: &TraceEvent<Msg, Event>,
        note: &Event,
        l: usize,
        decided_by: Option<(StoreStatement, u32)>,
    ) -> String {
        let mut text = esc(&squash(&line(self.names, e)));
        if let Some((st, rows)) = decided_by {
            let said = format!(
                "`{}` -> {rows} row{}",
                st.name(),
                if rows == 1 { "" } else { "s" }
            );
            let _ = write!(text, "\n{}", esc(&format!("decided by {said}")));
            if let Some((_, sql)) = self.view.sources.iter().find(|(n, _)| n == st.name()) {
                let _ = write!(text, ":\n{}", esc(sql));
            }
            if labels_statement(note) {
                let _ = writeln!(
                    o,
                    "<text class=\"stmt\" x=\"{}\" y=\"{}\"><title>{text}</title>{}</text>",
                    f(self.sc.x(e.t) + 4.0),
                    f(self.geoms[l].ev_y + 11.0),
                    esc(&said)
                );
            }
        }
        text
    }

    /// One effect's diamond at `x`, with its label in the first free row of the lane (`ends`:
    /// where each row's last label ends). When every row is taken the label is left to the
    /// tooltip, except for a refusal, which is always written out.
    fn effect(
        &self,
        o: &mut String,
        m: &EffectMark,
        g: &LaneGeom,
        ends: &mut [f64; EFFECT_LABEL_ROWS],
        Spot { x, job }: Spot,
        text: &str,
    ) {
        let EffectMark {
            cls,
            fence,
            key,
            rejected,
        } = *m;
        let prefix = if rejected {
            if cls.ends_with("fenced") {
                "FENCED "
            } else {
                "REFUSED "
            }
        } else if cls == "duplicate" {
            "dup "
        } else {
            ""
        };
        let label = format!("{prefix}fence {} {}", fence.0, self.names.key(key));
        let lw = label.chars().count() as f64 * if rejected { 5.3 } else { 4.9 };
        let lx = (x + 1.5)
            .min(PAD_L + self.width + PAD_R - lw - 2.0)
            .max(0.0);
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
    }
}
