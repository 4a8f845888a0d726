//! The per-run metrics of P18, computed from the trace alone: renewal health on the
//! coordinator's clock, expired leases, failed renewals, re-claimed jobs, jeopardy, rejected
//! results, and tool calls per job class and tool provider.

use crate::{NodeInfo, Trace};
use leasesim_protocol::{ClassId, Event, GrantReason, JobId, Msg, Token, WorkerName};
use leasesim_sim::time::{opt_dur, signed_dur};
use leasesim_sim::{EventKind, NodeId};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

// ---------------------------------------------------------------------------------------------
// What the trace says about jobs and tool calls, gathered before the journal and the metrics.

/// Facts the journal events do not carry themselves but the trace does: each job's class (from
/// the coordinator's grants) and which node served each tool request (from the worker's send).
pub struct Index {
    classes: BTreeMap<JobId, ClassId>,
    providers: BTreeMap<(NodeId, u64), NodeId>,
}

impl Index {
    /// Gathers the facts from a trace.
    pub fn new(trace: &Trace) -> Self {
        let mut classes = BTreeMap::new();
        let mut providers = BTreeMap::new();
        for e in trace {
            if let EventKind::Send { to, msg, .. } = &e.kind {
                match *msg {
                    Msg::ClaimGranted { job, class, .. } => {
                        classes.entry(job).or_insert(class);
                    }
                    Msg::ToolRequest { req, .. } => {
                        providers.entry((e.node, req)).or_insert(*to);
                    }
                    _ => {}
                }
            }
        }
        Index { classes, providers }
    }

    /// A job's class, from its first grant.
    pub fn class(&self, job: JobId) -> Option<ClassId> {
        self.classes.get(&job).copied()
    }

    /// The node that served a worker's tool request, if the trace shows it being sent.
    pub fn provider(&self, worker: NodeId, request: u64) -> Option<NodeId> {
        self.providers.get(&(worker, request)).copied()
    }
}

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
    let index = Index::new(trace);
    let mut m = Metrics::default();
    // (job, token) -> (coordinator time of the last grant or renewal, lease_until).
    let mut leases: BTreeMap<(JobId, Token), (u64, u64)> = BTreeMap::new();
    let mut grants: BTreeMap<JobId, BTreeSet<(Token, WorkerName)>> = BTreeMap::new();
    let (mut ages, mut left) = (Acc::default(), Acc::default());
    // (worker node, request) -> the worker's clock when it started the request.
    let mut started: BTreeMap<(NodeId, u64), u64> = BTreeMap::new();
    let mut tools: BTreeMap<(Option<ClassId>, String), (ToolMetrics, Acc)> = BTreeMap::new();

    for e in trace {
        let EventKind::Note { note } = &e.kind else {
            continue;
        };
        match *note {
            Event::LeaseGranted {
                job,
                holder,
                token,
                lease_until,
                took_over,
                reason,
                ..
            } => {
                m.leases_granted += 1;
                if took_over.is_some() && reason == GrantReason::Expired {
                    m.expired_leases += 1;
                }
                grants.entry(job).or_default().insert((token, holder));
                leases.insert((job, token), (e.local, lease_until));
            }
            Event::LeaseRenewed {
                job,
                token,
                lease_until,
                ..
            } => {
                m.renewals += 1;
                if let Some(&(last, until)) = leases.get(&(job, token)) {
                    ages.add(signed(e.local.saturating_sub(last)));
                    left.add(signed(until).saturating_sub(signed(e.local)));
                }
                leases.insert((job, token), (e.local, lease_until));
            }
            Event::CheckpointSaved {
                job,
                token,
                lease_until,
                ..
            } => {
                // A fresh lease for the next stage: not a renewal, but the new baseline.
                leases.insert((job, token), (e.local, lease_until));
            }
            Event::LeaseRevoked { job, token, .. } => {
                leases.remove(&(job, token));
            }
            Event::HeartbeatRefused { .. } => m.failed_renewals += 1,
            Event::HeartbeatLost { .. } => m.lost_leases += 1,
            Event::JeopardyEntered { .. } => m.jeopardy_entries += 1,
            Event::ResultRejected { .. } => m.rejected_results += 1,
            Event::ToolRequestStarted { job, request, .. } => {
                started.insert((e.node, request), e.local);
                let provider = index.provider(e.node, request);
                tool_entry(&mut tools, nodes, index.class(job), provider)
                    .0
                    .requests += 1;
            }
            Event::ToolAnswered {
                job,
                request,
                success,
                ..
            } => {
                let provider = index.provider(e.node, request);
                let (t, latency) = tool_entry(&mut tools, nodes, index.class(job), provider);
                t.answers += 1;
                if !success {
                    t.failed_answers += 1;
                }
                if let Some(&s) = started.get(&(e.node, request)) {
                    latency.add(signed(e.local.saturating_sub(s)));
                }
            }
            Event::ToolTimedOut { job, request, .. } => {
                let provider = index.provider(e.node, request);
                tool_entry(&mut tools, nodes, index.class(job), provider)
                    .0
                    .timeouts += 1;
            }
            Event::ToolStatusQueried { job, request, .. } => {
                let provider = index.provider(e.node, request);
                tool_entry(&mut tools, nodes, index.class(job), provider)
                    .0
                    .status_queries += 1;
            }
            Event::ToolFaulted { job, .. } => {
                tool_entry(&mut tools, nodes, index.class(job), Some(e.node))
                    .0
                    .faults += 1;
            }
            _ => {}
        }
    }

    m.heartbeat_age_max_ns = unsigned(ages.max);
    m.heartbeat_age_mean_ns = unsigned(ages.mean());
    m.lease_left_min_ns = left.min;
    m.lease_left_mean_ns = left.mean();
    m.reclaimed_jobs = grants.values().filter(|g| g.len() > 1).count() as u64;
    m.tools = tools
        .into_values()
        .map(|(mut t, latency)| {
            t.latency_mean_ns = unsigned(latency.mean());
            t.latency_max_ns = unsigned(latency.max);
            t
        })
        .collect();
    m
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
