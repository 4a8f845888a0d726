//! A SQL coordinator's transactions: each operation whose statement is several SQL statements
//! drawn as one bar on its connection's row in the coordinator's lane, from its first
//! statement to its last, a tick where each statement ended, a wait on a lock in red and an
//! aborted one marked, so a race between two connections reads at a glance.

use super::{f, Ev, Page, LEASE_ROW};
use crate::escape::html as esc;
use leasesim_protocol::{Connection, Event, StoreEvent, StoreFailure, StoreStatement};
use leasesim_sim::EventKind;
use std::fmt::Write;

/// One operation's statements on one connection.
pub(super) struct Bar {
    /// Row among the connections (in order of first use).
    row: usize,
    statement: StoreStatement,
    start: u64,
    end: u64,
    /// (sent, done, step) of each statement.
    steps: Vec<(u64, u64, u8)>,
    failed: Option<StoreFailure>,
    of: u8,
}

/// The connections (in order of first use) and the bars on them.
pub(super) fn bars(trace: &[Ev]) -> (Vec<Connection>, Vec<Bar>) {
    let mut conns: Vec<Connection> = Vec::new();
    let mut bars: Vec<Bar> = Vec::new();
    // The open bar of each connection row.
    let mut open: Vec<Option<usize>> = Vec::new();
    let mut last_row: Option<usize> = None;
    for e in trace {
        let EventKind::Note { note } = &e.kind else {
            continue;
        };
        match *note {
            Event::Store(StoreEvent::Step {
                statement,
                step,
                steps,
                connection,
                issued,
            }) => {
                // `issued` is on the coordinator's clock: back to true time by how long ago
                // it was on that clock (its rate is one within a step's milliseconds).
                let issued = e.t.saturating_sub(e.local.saturating_sub(issued));
                let row = match conns.iter().position(|c| *c == connection) {
                    Some(r) => r,
                    None => {
                        conns.push(connection);
                        open.push(None);
                        conns.len() - 1
                    }
                };
                let k = match open[row] {
                    Some(k) if step > 0 => k,
                    _ => {
                        bars.push(Bar {
                            row,
                            statement,
                            start: issued,
                            end: e.t,
                            steps: Vec::new(),
                            failed: None,
                            of: steps,
                        });
                        bars.len() - 1
                    }
                };
                let bar = &mut bars[k];
                bar.end = e.t;
                bar.steps.push((issued, e.t, step));
                open[row] = (step + 1 < steps).then_some(k);
                last_row = Some(row);
            }
            Event::Store(StoreEvent::Failed { failure, .. }) => {
                // The step before it failed: its operation ends here.
                if let Some(row) = last_row {
                    if let Some(bar) = bars.iter_mut().rev().find(|b| b.row == row) {
                        bar.failed = Some(failure);
                    }
                    open[row] = None;
                }
            }
            _ => {}
        }
    }
    (conns, bars)
}

impl Page<'_> {
    /// The transaction bars, on the rows below the coordinator's leases.
    pub(super) fn transactions(&self, o: &mut String) {
        let Some(lane) = self.tx_lane else {
            return;
        };
        let g = &self.geoms[lane];
        let row_y = |row: usize| g.lease_y + (self.tx_row0 + row) as f64 * LEASE_ROW;
        o.push_str("<g class=\"transactions\">\n");
        for b in &self.tx_bars {
            let y = row_y(b.row) + 12.0;
            let x0 = self.sc.x(b.start);
            let x1 = self.sc.x(b.end).max(x0 + 2.0);
            let title = self.tx_title(b);
            let _ = writeln!(
                o,
                "<g class=\"tx{}\"><title>{}</title><rect class=\"txbar\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"8\"/>",
                if b.failed.is_some() { " aborted" } else { "" },
                esc(&title),
                f(x0),
                f(y),
                f(x1 - x0)
            );
            for &(sent, done, step) in &b.steps {
                if done > sent {
                    let _ = writeln!(
                        o,
                        "<rect class=\"txwait\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"8\"/>",
                        f(self.sc.x(sent)),
                        f(y),
                        f((self.sc.x(done) - self.sc.x(sent)).max(1.5))
                    );
                }
                let _ = writeln!(
                    o,
                    "<line class=\"txstep\" x1=\"{0}\" x2=\"{0}\" y1=\"{1}\" y2=\"{2}\"/><text class=\"txn\" x=\"{0}\" y=\"{3}\">{4}</text>",
                    f(self.sc.x(done)),
                    f(y - 2.0),
                    f(y + 10.0),
                    f(y - 3.0),
                    step + 1
                );
            }
            if b.failed.is_some() {
                let _ = writeln!(
                    o,
                    "<text class=\"txfail\" x=\"{}\" y=\"{}\">aborted</text>",
                    f(x1 + 3.0),
                    f(y + 8.0)
                );
            }
            o.push_str("</g>\n");
        }
        o.push_str("</g>\n");
    }

    /// A transaction's tooltip: its statement, its steps and time, its waits on locks, why it
    /// aborted, and the statement's SQL.
    fn tx_title(&self, b: &Bar) -> String {
        let mut title = format!(
            "`{}`: {} of {} statement(s) from {} to {}",
            b.statement.name(),
            b.steps.len(),
            b.of,
            crate::secs(b.start),
            crate::secs(b.end)
        );
        let waited: u64 = b.steps.iter().map(|(s, d, _)| d - s).sum();
        if waited > 0 {
            let _ = write!(title, "; waited {} on locks", crate::secs(waited));
        }
        if let Some(why) = b.failed {
            let _ = write!(title, "; aborted: {}", why.describe());
        }
        if let Some((_, sql)) = self
            .view
            .sources
            .iter()
            .find(|(n, _)| n == b.statement.name())
        {
            let _ = write!(title, "\n{sql}");
        }
        title
    }
}
