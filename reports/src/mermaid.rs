//! One run as Markdown for a pull request: a heading with the title and verdict, the findings
//! as a list, and a Mermaid `sequenceDiagram` with a participant per node, an arrow per
//! delivered message (dropped ones as `-x`, late ones dotted and annotated), notes for the
//! journal's key events and for faults, and the violation highlighted where it happened.
//!
//! Every text that reaches the diagram is escaped with Mermaid's entity codes, so `;`, `#`, `:`
//! and angle brackets in messages cannot break it. Same input, same bytes.

use crate::html::{messages, MsgRec};
use crate::{command, event, msg, secs, Names, RunView};
use leasesim_protocol::{Event, Msg};
use leasesim_sim::{Command, DropCause, EventKind, Fate, NodeId, TraceEvent};
use std::fmt::Write;

/// Most message arrows in the diagram; the rest are counted in a note.
pub const MAX_ARROWS: usize = 400;
/// Most journal notes in the diagram.
pub const MAX_NOTES: usize = 150;
/// Most fault notes in the diagram.
pub const MAX_FAULTS: usize = 60;
/// The diagram's size budget in characters: Mermaid refuses a text over 50,000 by default, so
/// the arrow cap is lowered until the diagram fits.
pub const MAX_CHARS: usize = 45_000;
const NOTE_WIDTH: usize = 64;

type Ev = TraceEvent<Msg, Event>;

/// Escapes text for a Mermaid sequence diagram with its entity codes (`#59;` is `;`).
pub fn escape(s: &str) -> String {
    let mut o = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            ';' => o.push_str("#59;"),
            '#' => o.push_str("#35;"),
            ':' => o.push_str("#58;"),
            '<' => o.push_str("#lt;"),
            '>' => o.push_str("#gt;"),
            '"' => o.push_str("#quot;"),
            '%' => o.push_str("#37;"),
            '{' => o.push_str("#123;"),
            '}' => o.push_str("#125;"),
            '\n' | '\r' | '\t' => o.push(' '),
            c if c.is_control() => {}
            c => o.push(c),
        }
    }
    o
}

/// Escapes a note's text and breaks it into lines of about `width` characters with `<br/>`
/// (the one markup a note keeps), so a long sentence does not make the diagram very wide.
fn wrapped(s: &str, width: usize) -> String {
    let mut lines: Vec<String> = Vec::new();
    let mut cur = String::new();
    for word in s.split_whitespace() {
        if !cur.is_empty() && cur.chars().count() + 1 + word.chars().count() > width {
            lines.push(std::mem::take(&mut cur));
        }
        if !cur.is_empty() {
            cur.push(' ');
        }
        cur.push_str(word);
    }
    if !cur.is_empty() || lines.is_empty() {
        lines.push(cur);
    }
    lines
        .iter()
        .map(|l| escape(l))
        .collect::<Vec<_>>()
        .join("<br/>")
}

/// Escapes Markdown inline text.
fn md(s: &str) -> String {
    let mut o = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if matches!(
            c,
            '\\' | '`' | '*' | '_' | '[' | ']' | '<' | '>' | '#' | '|' | '~'
        ) {
            o.push('\\');
        }
        if c == '\n' || c == '\r' {
            o.push(' ');
        } else {
            o.push(c);
        }
    }
    o
}

/// Journal events worth a note: 0 for the telling ones (kept first), 1 for the milestones.
fn note_priority(e: &Event) -> Option<u8> {
    Some(match e {
        Event::JeopardyEntered { .. }
        | Event::JeopardyExited { .. }
        | Event::ResultRejected { .. }
        | Event::EffectFenced { .. }
        | Event::EffectUnauthorized { .. }
        | Event::HeartbeatLost { .. }
        | Event::HeartbeatRefused { .. }
        | Event::CommitRefused { .. }
        | Event::CommitAbandoned { .. }
        | Event::LeaseRevoked { .. }
        | Event::JobFailed { .. }
        | Event::RenewalCapReached { .. }
        | Event::HumanReviewRequested { .. }
        | Event::StageDeadlineExceeded { .. }
        | Event::ToolTimedOut { .. } => 0,
        Event::EffectStarted {
            in_jeopardy: true, ..
        } => 0,
        Event::LeaseGranted { .. }
        | Event::ResultAccepted { .. }
        | Event::CheckpointSaved { .. }
        | Event::OperatorActed { .. }
        | Event::EffectDuplicate { .. }
        | Event::EffectReconciled { .. }
        | Event::RetryScheduled { .. } => 1,
        Event::LeaseRenewed { .. }
        | Event::Store(_)
        | Event::AdmissionDeferred { .. }
        | Event::ToolStatusQueried { .. }
        | Event::ToolFaulted { .. }
        | Event::JobClaimed { .. }
        | Event::HeartbeatOk { .. }
        | Event::ToolRequestStarted { .. }
        | Event::ToolAnswered { .. }
        | Event::EffectStarted { .. }
        | Event::EffectAnswered { .. }
        | Event::CommitSent { .. }
        | Event::SuccessClaimed { .. }
        | Event::FailureAcknowledged { .. }
        | Event::EffectApplied { .. } => return None,
    })
}

fn arrow_lines(r: &MsgRec) -> usize {
    if r.dropped() {
        1
    } else {
        (r.delivers.len() + usize::from(r.lost.is_some())).max(1)
    }
}

/// Renders a run as a Markdown document with a Mermaid sequence diagram.
pub fn render(view: &RunView<'_>) -> String {
    let node_names: Vec<String> = view.nodes.iter().map(|n| n.name.clone()).collect();
    let names = Names {
        nodes: &node_names,
        ops: view.ops,
    };
    let mut o = String::with_capacity(16 * 1024);
    let _ = writeln!(o, "## {}: **{}**\n", md(&view.title), md(&view.verdict));
    if !view.subtitle.is_empty() {
        if view.subtitle.contains('`') {
            let _ = writeln!(o, "{}\n", md(&view.subtitle));
        } else {
            let _ = writeln!(o, "`{}`\n", view.subtitle.replace(['\n', '\r'], " "));
        }
    }
    if view.findings.is_empty() {
        let _ = writeln!(o, "- no invariant was violated");
    }
    for fd in view.findings {
        let _ = writeln!(
            o,
            "- **{}** at {} on {}: {}",
            md(&fd.invariant.label()),
            md(&secs(fd.t_ns)),
            md(names.node(fd.node)),
            md(&fd.message)
        );
    }
    let mut cap = MAX_ARROWS;
    let block = loop {
        let block = diagram(view, &names, cap);
        if block.len() <= MAX_CHARS || cap <= 50 {
            break block;
        }
        cap = cap * 3 / 4;
    };
    let _ = writeln!(o, "\n```mermaid\n{block}```\n");
    let _ = writeln!(
        o,
        "Arrows: `->>` delivered, `-->>` late (held by the fault plan, then released), \
         `-x` dropped or lost at a crashed node; each arrow is placed where the message \
         arrived (a dropped one where it was sent). Notes give the true time."
    );
    o
}

/// One diagram line, placed by its trace index and its order among that event's lines.
type Item = (usize, u8, String);

/// A participant's name in the diagram: `n{id}`.
fn participant(id: NodeId) -> String {
    format!("n{id}")
}

/// The `sequenceDiagram` with at most `max_arrows` arrows.
fn diagram(view: &RunView<'_>, names: &Names<'_>, max_arrows: usize) -> String {
    let d = Diagram { view, names };
    let mut items: Vec<Item> = Vec::new();
    let (shown_msgs, total_msgs) = d.arrows(&mut items, max_arrows);
    let (shown_notes, total_notes) = d.notes(&mut items);
    let total_faults = d.faults(&mut items);
    d.findings(&mut items);
    items.sort_by_key(|a| (a.0, a.1));

    let n = view.nodes.len();
    let mut o = String::with_capacity(16 * 1024);
    let _ = writeln!(o, "sequenceDiagram");
    for (i, v) in view.nodes.iter().enumerate() {
        let _ = writeln!(o, "    participant n{i} as {}", escape(&v.name));
    }
    let left = (
        total_msgs - shown_msgs,
        total_notes - shown_notes,
        total_faults.saturating_sub(MAX_FAULTS),
    );
    if left != (0, 0, 0) && n > 0 {
        let _ = writeln!(
            o,
            "    Note over {}: {}",
            d.all(),
            wrapped(
                &format!(
                    "left out to keep the diagram readable: {} of {} messages (routine claims \
                     and heartbeats first), {} of {} journal notes, {} of {} faults",
                    left.0, total_msgs, left.1, total_notes, left.2, total_faults
                ),
                NOTE_WIDTH * 2
            )
        );
    }
    for (_, _, l) in &items {
        let _ = writeln!(o, "    {l}");
    }
    o
}

/// The run a diagram draws, and the names it draws it with.
struct Diagram<'a> {
    view: &'a RunView<'a>,
    names: &'a Names<'a>,
}

impl Diagram<'_> {
    /// Whether a node is one of the diagram's participants.
    fn known(&self, id: NodeId) -> bool {
        (id as usize) < self.view.nodes.len()
    }

    /// A note over every participant: `n0,n{last}`.
    fn all(&self) -> String {
        let n = self.view.nodes.len();
        if n > 1 {
            format!("n0,n{}", n - 1)
        } else {
            "n0".to_string()
        }
    }

    /// Arrows, the telling ones first when there are too many; returns how many messages were
    /// drawn, and of how many.
    fn arrows(&self, items: &mut Vec<Item>, max_arrows: usize) -> (usize, usize) {
        let trace = self.view.trace;
        let recs = messages(trace);
        let mut order: Vec<usize> = (0..recs.len())
            .filter(|&k| self.known(recs[k].from) && self.known(recs[k].to))
            .collect();
        let total_msgs = order.len();
        order.sort_by_key(|&k| (recs[k].priority(), k));
        let mut budget = max_arrows;
        let mut shown_msgs = 0;
        for &k in &order {
            let r = &recs[k];
            let lines = arrow_lines(r);
            if lines > budget {
                continue;
            }
            budget -= lines;
            shown_msgs += 1;
            push_arrows(items, self.names, trace, r, &participant);
        }
        (shown_msgs, total_msgs)
    }

    /// Key journal events, the most telling first, at most [`MAX_NOTES`]; returns how many were
    /// drawn, and of how many.
    fn notes(&self, items: &mut Vec<Item>) -> (usize, usize) {
        let trace = self.view.trace;
        let mut notes: Vec<(u8, usize)> = trace
            .iter()
            .enumerate()
            .filter(|(_, e)| self.known(e.node))
            .filter_map(|(i, e)| match &e.kind {
                EventKind::Note { note } => note_priority(note).map(|pr| (pr, i)),
                _ => None,
            })
            .collect();
        let total_notes = notes.len();
        notes.sort();
        notes.truncate(MAX_NOTES);
        for &(_, i) in &notes {
            let e = &trace[i];
            if let EventKind::Note { note } = &e.kind {
                items.push((
                    i,
                    0,
                    format!(
                        "Note over {}: {}",
                        participant(e.node),
                        wrapped(
                            &format!("{} {}", secs(e.t), event(self.names, note)),
                            NOTE_WIDTH
                        )
                    ),
                ));
            }
        }
        (notes.len(), total_notes)
    }

    /// The faults, at most [`MAX_FAULTS`]; returns how many there are.
    fn faults(&self, items: &mut Vec<Item>) -> usize {
        let trace = self.view.trace;
        let faults: Vec<usize> = trace
            .iter()
            .enumerate()
            .filter(|(_, e)| matches!(e.kind, EventKind::Fault { .. }))
            .map(|(i, _)| i)
            .collect();
        let total_faults = faults.len();
        for &i in faults.iter().take(MAX_FAULTS) {
            let e = &trace[i];
            let EventKind::Fault { command: c } = &e.kind else {
                continue;
            };
            let over = match *c {
                Command::Cut { from, to } | Command::Heal { from, to }
                    if self.known(from) && self.known(to) && from != to =>
                {
                    format!("{},{}", participant(from), participant(to))
                }
                _ if self.known(e.node) => participant(e.node),
                _ => self.all(),
            };
            items.push((
                i,
                0,
                format!(
                    "Note over {over}: {}",
                    wrapped(
                        &format!("{} {}", secs(e.t), command(self.names, c)),
                        NOTE_WIDTH
                    )
                ),
            ));
        }
        total_faults
    }

    /// Findings, highlighted right after the event that broke the invariant.
    fn findings(&self, items: &mut Vec<Item>) {
        let trace = self.view.trace;
        for fd in self.view.findings {
            let at = trace.partition_point(|e| e.t <= fd.t_ns).saturating_sub(1);
            let over = if self.known(fd.node) {
                participant(fd.node)
            } else {
                self.all()
            };
            items.push((
                at,
                9,
                format!(
                    "rect rgb(255, 215, 215)\n    Note over {over}: {}\n    end",
                    wrapped(
                        &format!(
                            "VIOLATION {} at {} on {}: {}",
                            fd.invariant.label(),
                            secs(fd.t_ns),
                            self.names.node(fd.node),
                            fd.message
                        ),
                        NOTE_WIDTH
                    )
                ),
            ));
        }
    }
}

/// A message's arrows: one where it was dropped, one per copy delivered, one where it was
/// lost at a crashed node, or one still in flight at the end.
// Long: one case per fate of a message, each writing its arrow's note from the same send.
fn push_arrows(
    items: &mut Vec<Item>,
    names: &Names<'_>,
    trace: &[Ev],
    r: &MsgRec,
    p: &dyn Fn(NodeId) -> String,
) {
    let text = format!("#{} {}", r.id, msg(names, &r.msg));
    let (from, to) = (p(r.from), p(r.to));
    let sent = trace[r.send].t;
    if let Fate::Drop { cause } = r.fate {
        let why = match cause {
            DropCause::Partition => "link cut",
            DropCause::Loss => "lost",
            DropCause::Plan => "fault plan",
        };
        items.push((
            r.send,
            0,
            format!(
                "{from}-x{to}: {}",
                escape(&format!("{text} (DROPPED: {why}, at {})", secs(sent)))
            ),
        ));
        return;
    }
    let late = r.late();
    for (k, &d) in r.delivers.iter().enumerate() {
        let mut note = String::new();
        if late {
            let _ = write!(note, " (LATE: sent at {}, held", secs(sent));
            if let Some(rel) = r.release {
                let _ = write!(note, ", released at {}", secs(trace[rel].t));
            }
            let _ = write!(note, ", delivered at {})", secs(trace[d].t));
        }
        if k > 0 {
            note.push_str(" (DUPLICATE copy)");
        } else if r.duplicated() {
            note.push_str(" (duplicated)");
        }
        let arrow = if late { "-->>" } else { "->>" };
        items.push((
            d,
            0,
            format!("{from}{arrow}{to}: {}", escape(&format!("{text}{note}"))),
        ));
    }
    if let Some(lost) = r.lost {
        items.push((
            lost,
            0,
            format!(
                "{from}-x{to}: {}",
                escape(&format!(
                    "{text} (LOST: {} was down, at {})",
                    names.node(r.to),
                    secs(trace[lost].t)
                ))
            ),
        ));
    }
    if r.delivers.is_empty() && r.lost.is_none() {
        let why = if late {
            "held, never delivered"
        } else {
            "still in flight at the end"
        };
        items.push((
            r.send,
            0,
            format!("{from}--x{to}: {}", escape(&format!("{text} ({why})"))),
        ));
    }
}
