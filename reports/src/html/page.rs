//! The page's frame: the head (verdict, title, violation boxes, job filter, counts), the column
//! of lane names, the lanes and the time axis, and the violation markers.

use super::clocks::clock_summary;
use super::style::{CSS, CSS_VIOLATION, DEFS};
use super::{
    f, kind_word, nice_step, tick_label, LaneGeom, Page, AXIS_H, BAR_H, CLOCK_H, LABEL_W,
    LEASE_ROW, MAX_ARROWS, MAX_MARKS, PAD_L,
};
use crate::escape::html as esc;
use crate::{secs, NodeView};
use leasesim_sim::{EventKind, NodeId};
use std::fmt::Write;

impl Page<'_> {
    /// The verdict, title and subtitle, the violation boxes, the job filter and the counts.
    pub(super) fn head(&self, o: &mut String) {
        let Page { view, names, .. } = self;
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
        self.controls(o);
    }

    /// The job filter, the counts, and what was left out of a crowded page.
    fn controls(&self, o: &mut String) {
        let Page { an, recs, .. } = self;
        let trace = self.trace;
        let n = self.n;
        let t_last = self.t_last;
        let drawn = self.drawn;
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
    pub(super) fn label_column(&self, o: &mut String) {
        let Page { view, geoms, .. } = self;
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
            self.lane_label(o, l, v, g);
        }
        o.push_str("</svg>\n");
    }

    /// Lane `l`'s label: the node's name and kind, its rows' names and its clock's summary.
    fn lane_label(&self, o: &mut String, l: usize, v: &NodeView, g: &LaneGeom) {
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
            if self.tx_lane == Some(l) && r >= self.tx_row0 {
                // A SQL connection's row: its transactions.
                let who = self.tx_conns[r - self.tx_row0].to_string();
                let _ = write!(
                    o,
                    "<text class=\"sub-label\" x=\"{}\" y=\"{}\">{}\u{2019}s connection</text>",
                    f(LABEL_W - 8.0),
                    f(ry + 3.0 + BAR_H + 6.0),
                    esc(&who)
                );
                continue;
            }
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
            esc(&clock_summary(self.clocks.of(l as NodeId)))
        );
    }

    /// Opens the scrolling timeline.
    pub(super) fn timeline_open(&self, o: &mut String) {
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
    pub(super) fn lanes_and_axis(&self, o: &mut String) {
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

    /// The violation markers.
    pub(super) fn violations(&self, o: &mut String) {
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
}
