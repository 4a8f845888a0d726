//! The per-run metrics of P18, read off the lease [`History`]: renewal health on the
//! coordinator's clock, expired leases, failed renewals, re-claimed jobs, jeopardy, rejected
//! results, and tool calls per job class and tool provider.

use crate::history::{History, Issued, Learned, Lease, ToolStep, Verdict};
use crate::{NodeInfo, Trace};
use leasesim_protocol::{ClassId, GrantReason};
use leasesim_sim::time::{opt_dur, signed_dur};
use leasesim_sim::NodeId;
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

/// Tool calls of one job class at one tool provider (P18).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ToolMetrics {
    /// The job class whose plan made the calls (`None` if the trace never shows its grant).
    pub class: Option<ClassId>,
    /// The node that served the calls (`tool`), or `?` if the request was never seen sent.
    pub provider: String,
    /// Tool requests started by workers.
    pub requests: u64,
    /// Answers workers received (successes and failures).
    pub answers: u64,
    /// Of those, failures.
    pub failed_answers: u64,
    /// Calls that hit the worker's client timeout (P12 c).
    pub timeouts: u64,
    /// Status queries about calls whose answer never came (P12 c).
    pub status_queries: u64,
    /// Faults the tool itself injected (F7).
    pub faults: u64,
    /// Mean time from a request's start to its answer, on the worker's clock.
    pub latency_mean_ns: Option<u64>,
    /// Longest time from a request's start to its answer, on the worker's clock.
    pub latency_max_ns: Option<u64>,
}

/// Per-run metrics (P18), computed from the trace.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Metrics {
    /// Leases granted (`lease_granted`), takeovers included.
    pub leases_granted: u64,
    /// Successful renewals (`lease_renewed`).
    pub renewals: u64,
    /// At each renewal, the age of the last successful grant or renewal of the same
    /// (job, token), on the coordinator's clock: the largest.
    pub heartbeat_age_max_ns: Option<u64>,
    /// The same, the mean.
    pub heartbeat_age_mean_ns: Option<u64>,
    /// At each renewal, the lease time that was left (the previous `lease_until` minus the
    /// renewal time, on the coordinator's clock; negative if an expired lease was extended):
    /// the smallest.
    pub lease_left_min_ns: Option<i64>,
    /// The same, the mean.
    pub lease_left_mean_ns: Option<i64>,
    /// Takeovers of an expired lease (`lease_granted` with `took_over` and reason `expired`).
    pub expired_leases: u64,
    /// Refused renewals (`heartbeat_refused`).
    pub failed_renewals: u64,
    /// Leases a holder learned it had lost (`heartbeat_lost`).
    pub lost_leases: u64,
    /// Jobs granted more than once (distinct token and holder).
    pub reclaimed_jobs: u64,
    /// Entries into jeopardy (`jeopardy_entered`).
    pub jeopardy_entries: u64,
    /// Results the coordinator refused (`result_rejected`).
    pub rejected_results: u64,
    /// A lease store's statement steps that waited on a lock (`statement_waited`).
    #[serde(skip_serializing_if = "is_zero")]
    pub store_waits: u64,
    /// Their simulated waiting time, summed.
    #[serde(skip_serializing_if = "is_zero")]
    pub store_waited_ns: u64,
    /// Transactions the store aborted (`statement_failed`: deadlock, serialization failure).
    #[serde(skip_serializing_if = "is_zero")]
    pub store_aborts: u64,
    /// Tool calls per job class and provider, ordered by class then provider.
    pub tools: Vec<ToolMetrics>,
}

#[derive(Default)]
struct Acc {
    n: u64,
    sum: i128,
    min: Option<i64>,
    max: Option<i64>,
}

impl Acc {
    fn add(&mut self, v: i64) {
        self.n += 1;
        self.sum += i128::from(v);
        self.min = Some(self.min.map_or(v, |m| m.min(v)));
        self.max = Some(self.max.map_or(v, |m| m.max(v)));
    }

    fn mean(&self) -> Option<i64> {
        (self.n > 0).then(|| (self.sum / i128::from(self.n)) as i64)
    }
}

fn signed(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

fn unsigned(v: Option<i64>) -> Option<u64> {
    v.map(|v| u64::try_from(v).unwrap_or(0))
}

/// The tool counters of one class and provider, created on first use.
fn tool_entry<'m>(
    tools: &'m mut BTreeMap<(Option<ClassId>, String), (ToolMetrics, Acc)>,
    nodes: &[NodeInfo],
    class: Option<ClassId>,
    provider: Option<NodeId>,
) -> &'m mut (ToolMetrics, Acc) {
    let provider = provider
        .and_then(|p| nodes.get(p as usize))
        .map_or("?", |n| n.name.as_str())
        .to_string();
    tools.entry((class, provider.clone())).or_insert_with(|| {
        (
            ToolMetrics {
                class,
                provider,
                ..ToolMetrics::default()
            },
            Acc::default(),
        )
    })
}

/// Computes the run's metrics from its trace.
pub fn metrics(nodes: &[NodeInfo], trace: &Trace) -> Metrics {
    of_history(nodes, &History::new(trace))
}

/// Computes the run's metrics from its lease history.
pub fn of_history(nodes: &[NodeInfo], history: &History) -> Metrics {
    let mut m = Metrics::default();
    let (mut ages, mut left) = (Acc::default(), Acc::default());
    for lease in history.leases() {
        lease_metrics(&mut m, &lease, &mut ages, &mut left);
    }
    m.heartbeat_age_max_ns = unsigned(ages.max);
    m.heartbeat_age_mean_ns = unsigned(ages.mean());
    m.lease_left_min_ns = left.min;
    m.lease_left_mean_ns = left.mean();
    m.reclaimed_jobs = history
        .jobs()
        .filter(|j| {
            let holders: BTreeSet<_> = j
                .leases()
                .flat_map(|l| l.grants().map(move |g| (l.token(), g.holder())))
                .collect();
            holders.len() > 1
        })
        .count() as u64;
    m.tools = tool_metrics(nodes, history);
    let store = history.store();
    m.store_waits = store.waits;
    m.store_waited_ns = store.waited_ns;
    m.store_aborts = store.aborts;
    m
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// One lease's counts, and at each renewal the age of the last grant, renewal or checkpoint
/// before it (unless an operator revoked the lease since) and the lease time that was left.
fn lease_metrics(m: &mut Metrics, lease: &Lease<'_>, ages: &mut Acc, left: &mut Acc) {
    // (coordinator time of the last grant, renewal or checkpoint, its lease_until).
    let mut base: Option<(u64, u64)> = None;
    let mut revocations = lease.revocations().peekable();
    for issue in lease.issues() {
        // An operator's revocation since the last issue leaves no baseline.
        while revocations
            .next_if(|r| r.at.index < issue.at.index)
            .is_some()
        {
            base = None;
        }
        let local = issue.at.local_ns;
        match issue.kind {
            Issued::Grant {
                took_over, reason, ..
            } => {
                m.leases_granted += 1;
                if took_over.is_some() && reason == GrantReason::Expired {
                    m.expired_leases += 1;
                }
            }
            Issued::Renewal { .. } => {
                m.renewals += 1;
                if let Some((last, until)) = base {
                    ages.add(signed(local.saturating_sub(last)));
                    left.add(signed(until).saturating_sub(signed(local)));
                }
            }
            // A fresh lease for the next stage: not a renewal, but the new baseline.
            Issued::Checkpoint { .. } => {}
        }
        base = Some((local, issue.lease_until));
    }
    m.failed_renewals += lease.refusals().count() as u64;
    m.lost_leases += lease.told().filter(|t| t.what == Learned::Lost).count() as u64;
    m.rejected_results += lease
        .decisions()
        .filter(|d| matches!(d.verdict, Verdict::Rejected(_)))
        .count() as u64;
    m.jeopardy_entries += lease
        .attempts()
        .flat_map(|a| a.jeopardy())
        .map(|s| u64::from(s.entries))
        .sum::<u64>();
}

/// Tool calls per job class and provider: requests, answers (and failed ones), timeouts,
/// status queries and the tool's own faults, and the latency from a request's start to its
/// answer on the worker's clock.
fn tool_metrics(nodes: &[NodeInfo], history: &History) -> Vec<ToolMetrics> {
    let mut tools: BTreeMap<(Option<ClassId>, String), (ToolMetrics, Acc)> = BTreeMap::new();
    for r in history.tool_records() {
        let class = history.class(r.job);
        let provider = match r.step {
            // The tool journals its own faults.
            ToolStep::Faulted(_) => Some(r.node),
            ToolStep::Started { .. }
            | ToolStep::Answered { .. }
            | ToolStep::TimedOut
            | ToolStep::StatusQueried => history.provider(r.node, r.request),
        };
        let (t, latency) = tool_entry(&mut tools, nodes, class, provider);
        match r.step {
            ToolStep::Started { .. } => t.requests += 1,
            ToolStep::Answered { success } => {
                t.answers += 1;
                if !success {
                    t.failed_answers += 1;
                }
                if let Some(s) = history.started_before(r.node, r.request, r.at.index) {
                    latency.add(signed(r.at.local_ns.saturating_sub(s)));
                }
            }
            ToolStep::TimedOut => t.timeouts += 1,
            ToolStep::StatusQueried => t.status_queries += 1,
            ToolStep::Faulted(_) => t.faults += 1,
        }
    }
    tools
        .into_values()
        .map(|(mut t, latency)| {
            t.latency_mean_ns = unsigned(latency.mean());
            t.latency_max_ns = unsigned(latency.max);
            t
        })
        .collect()
}

fn plural(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

impl Metrics {
    /// The metrics as a JSON object (durations in nanoseconds; absent ones are `null`).
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::to_value(self).unwrap_or_default()
    }
}

impl fmt::Display for Metrics {
    /// A compact block headed `metrics:`, without a final newline.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut lines = vec![
            "metrics:".to_string(),
            format!(
                "  leases: {} granted, {}, {} (taken over), {}, {}",
                self.leases_granted,
                plural(self.renewals, "renewal", "renewals"),
                plural(self.expired_leases, "expired", "expired"),
                plural(self.failed_renewals, "failed renewal", "failed renewals"),
                plural(self.reclaimed_jobs, "re-claimed job", "re-claimed jobs"),
            ),
        ];
        lines.push(match (self.lease_left_min_ns, self.lease_left_mean_ns) {
            (Some(min), Some(mean)) => format!(
                "  at renewal: heartbeat age max {} mean {}; lease left min {} mean {}",
                opt_dur(self.heartbeat_age_max_ns),
                opt_dur(self.heartbeat_age_mean_ns),
                signed_dur(min),
                signed_dur(mean),
            ),
            _ => "  at renewal: no renewal of a known lease".to_string(),
        });
        lines.push(format!(
            "  holders: {}, {}; coordinator: {}",
            plural(self.jeopardy_entries, "jeopardy entry", "jeopardy entries"),
            plural(self.lost_leases, "lost lease", "lost leases"),
            plural(self.rejected_results, "rejected result", "rejected results"),
        ));
        if self.store_waits > 0 || self.store_aborts > 0 {
            lines.push(format!(
                "  store: {} (waited {} in all), {}",
                plural(
                    self.store_waits,
                    "statement waited on a lock",
                    "statements waited on a lock"
                ),
                opt_dur(Some(self.store_waited_ns)),
                plural(
                    self.store_aborts,
                    "transaction aborted",
                    "transactions aborted"
                ),
            ));
        }
        if self.tools.is_empty() {
            lines.push("  tools: no calls".to_string());
        }
        for t in &self.tools {
            lines.push(format!(
                "  tool {} @ {}: {}, {} ({} failed), {}, {}, {}, latency mean {} max {}",
                class_name(t.class),
                t.provider,
                plural(t.requests, "request", "requests"),
                plural(t.answers, "answer", "answers"),
                t.failed_answers,
                plural(t.timeouts, "timeout", "timeouts"),
                plural(t.status_queries, "status query", "status queries"),
                plural(t.faults, "fault", "faults"),
                opt_dur(t.latency_mean_ns),
                opt_dur(t.latency_max_ns),
            ));
        }
        f.write_str(&lines.join("\n"))
    }
}

fn class_name(c: Option<ClassId>) -> String {
    c.map_or_else(|| "class?".to_string(), |c| c.to_string())
}
