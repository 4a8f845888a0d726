//! The technical journal as JSON lines, and the per-run metrics (P8, P13, P18).
//!
//! The journal is every node's journal events, in trace order, one JSON object a line, written
//! through `tracing` and `tracing-subscriber`'s JSON formatter with a subscriber scoped to the
//! call (never the global one). Each line carries the event's journal name, the true time and
//! the recording node's local clock, the node, and the ids an investigator needs: job, token,
//! the external request id, idempotency key, reason and error codes, result and payload hashes.
//! Never payload text: the protocol carries only hashes (P18). Tracing's own wall-clock
//! timestamp is left out, so the same run always gives the same bytes.
//!
//! The metrics are computed from the trace alone: renewal health on the coordinator's clock,
//! expired leases, failed renewals, re-claimed jobs, jeopardy, rejected results, and tool calls
//! per job class and tool provider.

use crate::run::RunResult;
use leasesim_protocol::{
    ClassId, EffectOutcome, ErrorCode, Event, GrantReason, IdemKey, JobId, Msg, OperatorAction,
    Outcome, RefusalReason, Token, WorkerName,
};
use leasesim_reports::{dur, Names};
use leasesim_sim::{EventKind, NodeId};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::io::Write;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use tracing_subscriber::fmt::MakeWriter;

/// The `tracing` target of journal events.
pub const TARGET: &str = "leasesim::journal";

/// Journal bytes are handed to the caller's writer whenever this many have accumulated.
const FLUSH_BYTES: usize = 64 * 1024;

// ---------------------------------------------------------------------------------------------
// What the trace says about jobs and tool calls, gathered before the journal and the metrics.

/// Facts the journal events do not carry themselves but the trace does: each job's class (from
/// the coordinator's grants) and which node served each tool request (from the worker's send).
struct Index {
    classes: BTreeMap<JobId, ClassId>,
    providers: BTreeMap<(NodeId, u64), NodeId>,
}

impl Index {
    fn new(result: &RunResult) -> Self {
        let mut classes = BTreeMap::new();
        let mut providers = BTreeMap::new();
        for e in &result.trace {
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

    fn class(&self, job: JobId) -> Option<ClassId> {
        self.classes.get(&job).copied()
    }

    /// The node that served a worker's tool request, if the trace shows it being sent.
    fn provider(&self, worker: NodeId, request: u64) -> Option<NodeId> {
        self.providers.get(&(worker, request)).copied()
    }
}

fn node_name(result: &RunResult, id: NodeId) -> &str {
    result
        .nodes
        .get(id as usize)
        .map_or("?", |n| n.name.as_str())
}

// ---------------------------------------------------------------------------------------------
// Codes, as snake_case words.

/// `ToolTimeout` -> `tool_timeout`; snake_case stays as it is.
fn snake(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 4);
    for (i, c) in s.chars().enumerate() {
        if c.is_ascii_uppercase() {
            if i > 0 {
                out.push('_');
            }
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

/// The snake_case name of an enum's variant, from its serde form: a unit variant is a string, a
/// variant with data an object with one key (externally tagged) or a tag field (`tag`).
fn word<T: Serialize>(x: &T, tag: Option<&str>) -> String {
    match serde_json::to_value(x) {
        Ok(serde_json::Value::String(s)) => snake(&s),
        Ok(serde_json::Value::Object(m)) => match tag.and_then(|t| m.get(t)) {
            Some(serde_json::Value::String(s)) => snake(s),
            _ if m.len() == 1 => m.keys().next().map_or_else(String::new, |k| snake(k)),
            _ => "?".to_string(),
        },
        _ => "?".to_string(),
    }
}

fn code<T: Serialize>(x: &T) -> Option<String> {
    Some(word(x, None))
}

/// An operator action's word (`takeover`, `hand_to_human`, ...) and its target, if any.
fn action(a: OperatorAction) -> (Option<String>, Option<String>) {
    let to = match a {
        OperatorAction::Takeover { to } => Some(to.to_string()),
        _ => None,
    };
    (Some(word(&a, Some("action"))), to)
}

fn hash(h: u64) -> String {
    format!("{h:#x}")
}

fn class_name(c: Option<ClassId>) -> String {
    c.map_or_else(|| "class?".to_string(), |c| c.to_string())
}

// ---------------------------------------------------------------------------------------------
// The journal.

/// Which `tracing` callsite a line goes through. A callsite holds at most 32 fields, so the
/// coordinator's events, the workers' and everyone else's (receivers, tool, operator) have one
/// each.
#[derive(Copy, Clone, PartialEq, Eq)]
enum Site {
    Coordinator,
    Worker,
    Other,
}

/// One journal line before it goes through `tracing`. Absent fields are left out of the line.
#[derive(Default)]
struct Line<'a> {
    event: &'static str,
    t_true_ns: u64,
    t_local_ns: u64,
    node: &'a str,
    job: Option<u64>,
    token: Option<u64>,
    request: Option<u64>,
    step: Option<u64>,
    key: Option<String>,
    class: Option<u64>,
    provider: Option<&'a str>,
    holder: Option<String>,
    worker: Option<String>,
    attempt: Option<u64>,
    lease_until_ns: Option<u64>,
    took_over: Option<u64>,
    epoch: Option<u64>,
    action: Option<String>,
    to: Option<String>,
    state: Option<String>,
    first_claimed_at_ns: Option<u64>,
    not_before_ns: Option<u64>,
    running: Option<u64>,
    capacity: Option<u64>,
    deadline_ns: Option<u64>,
    last_confirmed_ns: Option<u64>,
    success: Option<bool>,
    duration_ns: Option<u64>,
    fault: Option<String>,
    receiver: Option<u64>,
    entity: Option<u64>,
    outcome: Option<String>,
    status: Option<String>,
    retryable: Option<bool>,
    in_jeopardy: Option<bool>,
    fence: Option<u64>,
    mark: Option<u64>,
    first_fence: Option<u64>,
    reason: Option<String>,
    error: Option<String>,
    result_hash: Option<String>,
    payload_hash: Option<String>,
}

impl Line<'_> {
    /// Sends the line through `tracing`, at the callsite of `site`.
    fn emit(&self, site: Site) {
        match site {
            Site::Coordinator => tracing::info!(
                target: TARGET,
                event = self.event,
                t_true_ns = self.t_true_ns,
                t_local_ns = self.t_local_ns,
                node = self.node,
                job = self.job,
                token = self.token,
                class = self.class,
                holder = self.holder.as_deref(),
                worker = self.worker.as_deref(),
                attempt = self.attempt,
                step = self.step,
                lease_until_ns = self.lease_until_ns,
                took_over = self.took_over,
                epoch = self.epoch,
                action = self.action.as_deref(),
                to = self.to.as_deref(),
                state = self.state.as_deref(),
                first_claimed_at_ns = self.first_claimed_at_ns,
                not_before_ns = self.not_before_ns,
                running = self.running,
                capacity = self.capacity,
                reason = self.reason.as_deref(),
                error = self.error.as_deref(),
                result_hash = self.result_hash.as_deref(),
                payload_hash = self.payload_hash.as_deref(),
            ),
            Site::Worker => tracing::info!(
                target: TARGET,
                event = self.event,
                t_true_ns = self.t_true_ns,
                t_local_ns = self.t_local_ns,
                node = self.node,
                job = self.job,
                token = self.token,
                request = self.request,
                step = self.step,
                key = self.key.as_deref(),
                class = self.class,
                provider = self.provider,
                deadline_ns = self.deadline_ns,
                last_confirmed_ns = self.last_confirmed_ns,
                success = self.success,
                duration_ns = self.duration_ns,
                receiver = self.receiver,
                entity = self.entity,
                outcome = self.outcome.as_deref(),
                status = self.status.as_deref(),
                retryable = self.retryable,
                in_jeopardy = self.in_jeopardy,
                mark = self.mark,
                first_fence = self.first_fence,
                reason = self.reason.as_deref(),
                error = self.error.as_deref(),
                result_hash = self.result_hash.as_deref(),
                payload_hash = self.payload_hash.as_deref(),
            ),
            Site::Other => tracing::info!(
                target: TARGET,
                event = self.event,
                t_true_ns = self.t_true_ns,
                t_local_ns = self.t_local_ns,
                node = self.node,
                job = self.job,
                token = self.token,
                request = self.request,
                step = self.step,
                key = self.key.as_deref(),
                class = self.class,
                provider = self.provider,
                fault = self.fault.as_deref(),
                action = self.action.as_deref(),
                to = self.to.as_deref(),
                entity = self.entity,
                fence = self.fence,
                mark = self.mark,
                reason = self.reason.as_deref(),
                error = self.error.as_deref(),
            ),
        }
    }
}

/// The in-memory writer of the scoped subscriber; the caller's writer gets its bytes.
#[derive(Clone, Default)]
struct Buffer(Arc<Mutex<Vec<u8>>>);

impl Buffer {
    fn bytes(&self) -> MutexGuard<'_, Vec<u8>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// One event's write into the buffer.
struct BufferWriter<'a>(MutexGuard<'a, Vec<u8>>);

impl Write for BufferWriter<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> MakeWriter<'a> for Buffer {
    type Writer = BufferWriter<'a>;

    fn make_writer(&'a self) -> Self::Writer {
        BufferWriter(self.bytes())
    }
}

/// Stamps a line with its job and token.
fn ids(l: &mut Line<'_>, job: JobId, token: Token) {
    l.job = Some(job.0.into());
    l.token = Some(token.0);
}

/// A number field of an event's serde form, for events this module does not know by name.
fn number(v: &serde_json::Value, field: &str) -> Option<u64> {
    v.get(field).and_then(serde_json::Value::as_u64)
}

/// Writes the run's journal as JSON lines to `out`: one line per journal event of every node,
/// in trace order, through `tracing`'s JSON formatter under a subscriber scoped to this call.
///
/// The job's payload hash is not in the trace, so these lines carry none; see
/// [`write_journal_with_payload_hashes`].
pub fn write_journal(result: &RunResult, out: &mut dyn Write) -> Result<(), String> {
    write_journal_with_payload_hashes(result, &[], out)
}

/// [`write_journal`], with each job's payload hash (indexed by job id, as in the setup's
/// `jobs`) stamped on its `lease_granted` and `job_claimed` lines as `payload_hash` (hex). A
/// job without an entry gets none.
pub fn write_journal_with_payload_hashes(
    result: &RunResult,
    payload_hashes: &[u64],
    out: &mut dyn Write,
) -> Result<(), String> {
    let buffer = Buffer::default();
    let subscriber = tracing_subscriber::fmt()
        .json()
        .flatten_event(true)
        .with_current_span(false)
        .with_span_list(false)
        .without_time()
        .with_level(false)
        .with_target(false)
        .with_max_level(tracing::Level::INFO)
        .with_writer(buffer.clone())
        .finish();
    let take = || std::mem::take(&mut *buffer.bytes());
    let len = || buffer.bytes().len();
    let io = |e: std::io::Error| format!("cannot write the journal: {e}");

    let mut lines = Lines::new(result, payload_hashes);
    tracing::subscriber::with_default(subscriber, || -> Result<(), String> {
        for (i, e) in result.trace.iter().enumerate() {
            let EventKind::Note { note } = &e.kind else {
                continue;
            };
            let (line, site) = lines.line(i, note);
            let before = len();
            line.emit(site);
            if len() == before {
                return Err(format!(
                    "the journal subscriber dropped a {} event (is `tracing` built with a static level filter below INFO?)",
                    line.event
                ));
            }
            if len() >= FLUSH_BYTES {
                out.write_all(&take()).map_err(io)?;
            }
        }
        Ok(())
    })?;
    out.write_all(&take()).map_err(io)?;
    out.flush().map_err(io)
}

/// Turns journal events into lines, remembering when each tool request started.
struct Lines<'a> {
    result: &'a RunResult,
    index: Index,
    node_names: Vec<String>,
    payload_hashes: &'a [u64],
    /// (worker node, request) -> the worker's clock when it started the request.
    started: BTreeMap<(NodeId, u64), u64>,
}

impl<'a> Lines<'a> {
    fn new(result: &'a RunResult, payload_hashes: &'a [u64]) -> Self {
        Lines {
            result,
            index: Index::new(result),
            node_names: result.nodes.iter().map(|n| n.name.clone()).collect(),
            payload_hashes,
            started: BTreeMap::new(),
        }
    }

    fn key(&self, key: IdemKey) -> Option<String> {
        let names = Names {
            nodes: &self.node_names,
            ops: &self.result.op_names,
        };
        Some(names.key(key))
    }

    fn payload(&self, job: JobId) -> Option<String> {
        self.payload_hashes.get(job.0 as usize).copied().map(hash)
    }

    fn class(&self, job: JobId) -> Option<u64> {
        self.index.class(job).map(|c| c.0.into())
    }

    /// The line of trace event `i`, a journal event, and its callsite.
    fn line(&mut self, i: usize, note: &Event) -> (Line<'a>, Site) {
        let result = self.result;
        let e = &result.trace[i];
        let mut l = Line {
            event: note.name(),
            t_true_ns: e.t,
            t_local_ns: e.local,
            node: node_name(result, e.node),
            ..Line::default()
        };
        let index = &self.index;
        let provider = |request: u64| {
            index
                .provider(e.node, request)
                .map(|p| node_name(result, p))
        };
        let mut site = Site::Worker;
        match *note {
            // ---- coordinator ----
            Event::LeaseGranted {
                job,
                holder,
                token,
                attempt,
                lease_until,
                took_over,
                reason,
            } => {
                site = Site::Coordinator;
                ids(&mut l, job, token);
                l.class = self.class(job);
                l.holder = Some(holder.to_string());
                l.attempt = Some(attempt.into());
                l.lease_until_ns = Some(lease_until);
                l.took_over = took_over.map(|t| t.0);
                l.reason = code(&reason);
                l.payload_hash = self.payload(job);
            }
            Event::CheckpointSaved {
                job,
                worker,
                token,
                step,
                lease_until,
            } => {
                site = Site::Coordinator;
                ids(&mut l, job, token);
                l.worker = Some(worker.to_string());
                l.step = Some(step.into());
                l.lease_until_ns = Some(lease_until);
            }
            Event::AdmissionDeferred {
                job,
                running,
                capacity,
            } => {
                site = Site::Coordinator;
                l.job = Some(job.0.into());
                l.class = self.class(job);
                l.running = Some(running.into());
                l.capacity = Some(capacity.into());
            }
            Event::RetryScheduled {
                job,
                attempt,
                not_before,
            } => {
                site = Site::Coordinator;
                l.job = Some(job.0.into());
                l.attempt = Some(attempt.into());
                l.not_before_ns = Some(not_before);
            }
            Event::JobFailed {
                job,
                error,
                attempt,
            } => {
                site = Site::Coordinator;
                l.job = Some(job.0.into());
                l.attempt = Some(attempt.into());
                l.error = code(&error);
            }
            Event::RenewalCapReached {
                job,
                token,
                first_claimed_at,
            } => {
                site = Site::Coordinator;
                ids(&mut l, job, token);
                l.first_claimed_at_ns = Some(first_claimed_at);
                l.reason = code(&RefusalReason::RenewalCap);
            }
            Event::LeaseRevoked {
                job,
                holder,
                token,
                epoch,
                action: a,
            } => {
                site = Site::Coordinator;
                ids(&mut l, job, token);
                l.holder = holder.map(|h| h.to_string());
                l.epoch = Some(epoch.0);
                (l.action, l.to) = action(a);
                l.reason = code(&GrantReason::Operator);
            }
            Event::LeaseRenewed {
                job,
                worker,
                token,
                lease_until,
            } => {
                site = Site::Coordinator;
                ids(&mut l, job, token);
                l.worker = Some(worker.to_string());
                l.lease_until_ns = Some(lease_until);
            }
            Event::HeartbeatRefused {
                job,
                worker,
                token,
                reason,
            } => {
                site = Site::Coordinator;
                ids(&mut l, job, token);
                l.worker = Some(worker.to_string());
                l.reason = code(&reason);
            }
            Event::ResultAccepted {
                job,
                worker,
                token,
                state,
            } => {
                site = Site::Coordinator;
                ids(&mut l, job, token);
                l.worker = Some(worker.to_string());
                l.state = code(&state);
            }
            Event::ResultRejected {
                job,
                worker,
                token,
                reason,
                result_hash,
            } => {
                site = Site::Coordinator;
                ids(&mut l, job, token);
                l.worker = Some(worker.to_string());
                l.reason = code(&reason);
                l.result_hash = Some(hash(result_hash));
            }
            // ---- worker ----
            Event::JobClaimed {
                job,
                token,
                deadline,
            } => {
                ids(&mut l, job, token);
                l.class = self.class(job);
                l.deadline_ns = Some(deadline);
                l.payload_hash = self.payload(job);
            }
            Event::HeartbeatOk {
                job,
                token,
                deadline,
            } => {
                ids(&mut l, job, token);
                l.deadline_ns = Some(deadline);
            }
            Event::HeartbeatLost { job, token } => {
                ids(&mut l, job, token);
                l.reason = Some("zero_rows".to_string());
            }
            Event::JeopardyEntered {
                job,
                token,
                last_confirmed,
                request,
            } => {
                ids(&mut l, job, token);
                l.last_confirmed_ns = Some(last_confirmed);
                l.request = request;
            }
            Event::JeopardyExited { job, token }
            | Event::SuccessClaimed { job, token }
            | Event::FailureAcknowledged { job, token }
            | Event::CommitRefused { job, token }
            | Event::CommitAbandoned { job, token } => ids(&mut l, job, token),
            Event::ToolRequestStarted {
                job,
                token,
                request,
                step,
            } => {
                self.started.insert((e.node, request), e.local);
                ids(&mut l, job, token);
                l.request = Some(request);
                l.step = Some(step.into());
                l.class = self.class(job);
                l.provider = provider(request);
            }
            Event::ToolAnswered {
                job,
                token,
                request,
                success,
            } => {
                ids(&mut l, job, token);
                l.request = Some(request);
                l.class = self.class(job);
                l.provider = provider(request);
                l.success = Some(success);
                l.duration_ns = self
                    .started
                    .get(&(e.node, request))
                    .map(|&s| e.local.saturating_sub(s));
            }
            Event::ToolTimedOut {
                job,
                token,
                request,
            } => {
                ids(&mut l, job, token);
                l.request = Some(request);
                l.class = self.class(job);
                l.provider = provider(request);
                l.duration_ns = self
                    .started
                    .get(&(e.node, request))
                    .map(|&s| e.local.saturating_sub(s));
                l.error = code(&ErrorCode::ToolTimeout);
            }
            Event::ToolStatusQueried {
                job,
                token,
                request,
            } => {
                ids(&mut l, job, token);
                l.request = Some(request);
                l.class = self.class(job);
                l.provider = provider(request);
            }
            Event::StageDeadlineExceeded { job, token } => {
                ids(&mut l, job, token);
                l.error = code(&ErrorCode::StageDeadline);
            }
            Event::EffectStarted {
                job,
                token,
                receiver,
                entity,
                key,
                in_jeopardy,
            } => {
                ids(&mut l, job, token);
                l.key = self.key(key);
                l.receiver = Some(receiver.into());
                l.entity = Some(entity.0.into());
                l.in_jeopardy = Some(in_jeopardy);
            }
            Event::EffectAnswered {
                job,
                token,
                key,
                outcome,
            } => {
                ids(&mut l, job, token);
                l.key = self.key(key);
                l.outcome = code(&outcome);
                match outcome {
                    EffectOutcome::Duplicate { first_fence } => l.first_fence = Some(first_fence.0),
                    EffectOutcome::StaleFence { mark } => {
                        l.mark = Some(mark.0);
                        l.reason = l.outcome.clone();
                    }
                    _ => {}
                }
            }
            Event::EffectReconciled {
                job,
                token,
                key,
                status,
            } => {
                ids(&mut l, job, token);
                l.key = self.key(key);
                l.status = code(&status);
            }
            Event::HumanReviewRequested { job, token, key } => {
                ids(&mut l, job, token);
                l.key = self.key(key);
            }
            Event::CommitSent {
                job,
                token,
                outcome,
                in_jeopardy,
            } => {
                ids(&mut l, job, token);
                l.in_jeopardy = Some(in_jeopardy);
                l.outcome = code(&outcome);
                match outcome {
                    Outcome::Success { result } => l.result_hash = Some(hash(result)),
                    Outcome::Failure { error, retryable } => {
                        l.error = code(&error);
                        l.retryable = Some(retryable);
                    }
                }
            }
            // ---- tool, operator, receivers ----
            Event::ToolFaulted {
                job,
                request,
                fault,
            } => {
                site = Site::Other;
                l.job = Some(job.0.into());
                l.request = Some(request);
                l.class = self.class(job);
                l.provider = Some(l.node);
                l.fault = code(&fault);
            }
            Event::OperatorActed { job, action: a } => {
                site = Site::Other;
                l.job = Some(job.0.into());
                (l.action, l.to) = action(a);
            }
            Event::EffectApplied { entity, key, fence }
            | Event::EffectDuplicate { entity, key, fence } => {
                site = Site::Other;
                l.job = Some(key.job.0.into());
                l.key = self.key(key);
                l.entity = Some(entity.0.into());
                l.fence = Some(fence.0);
            }
            Event::EffectUnauthorized { entity, key, fence } => {
                site = Site::Other;
                l.job = Some(key.job.0.into());
                l.key = self.key(key);
                l.entity = Some(entity.0.into());
                l.fence = Some(fence.0);
                l.reason = code(&EffectOutcome::Unauthorized);
            }
            Event::EffectFenced {
                entity,
                key,
                fence,
                mark,
            } => {
                site = Site::Other;
                l.job = Some(key.job.0.into());
                l.key = self.key(key);
                l.entity = Some(entity.0.into());
                l.fence = Some(fence.0);
                l.mark = Some(mark.0);
                l.reason = code(&EffectOutcome::StaleFence { mark });
            }
            // An event added to the protocol after this module: its name, times, node and the
            // ids its serde form carries, so that it is never missing from the journal (I6).
            #[allow(unreachable_patterns)]
            _ => {
                site = Site::Other;
                let v = serde_json::to_value(note).unwrap_or_default();
                l.job = number(&v, "job");
                l.token = number(&v, "token");
                l.request = number(&v, "request");
                l.step = number(&v, "step");
            }
        }
        (l, site)
    }
}

// ---------------------------------------------------------------------------------------------
// Metrics.

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
    result: &RunResult,
    class: Option<ClassId>,
    provider: Option<NodeId>,
) -> &'m mut (ToolMetrics, Acc) {
    let provider = provider.map_or("?", |p| node_name(result, p)).to_string();
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
pub fn metrics(result: &RunResult) -> Metrics {
    let index = Index::new(result);
    let mut m = Metrics::default();
    // (job, token) -> (coordinator time of the last grant or renewal, lease_until).
    let mut leases: BTreeMap<(JobId, Token), (u64, u64)> = BTreeMap::new();
    let mut grants: BTreeMap<JobId, BTreeSet<(Token, WorkerName)>> = BTreeMap::new();
    let (mut ages, mut left) = (Acc::default(), Acc::default());
    // (worker node, request) -> the worker's clock when it started the request.
    let mut started: BTreeMap<(NodeId, u64), u64> = BTreeMap::new();
    let mut tools: BTreeMap<(Option<ClassId>, String), (ToolMetrics, Acc)> = BTreeMap::new();

    for e in &result.trace {
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
                tool_entry(&mut tools, result, index.class(job), provider)
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
                let (t, latency) = tool_entry(&mut tools, result, index.class(job), provider);
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
                tool_entry(&mut tools, result, index.class(job), provider)
                    .0
                    .timeouts += 1;
            }
            Event::ToolStatusQueried { job, request, .. } => {
                let provider = index.provider(e.node, request);
                tool_entry(&mut tools, result, index.class(job), provider)
                    .0
                    .status_queries += 1;
            }
            Event::ToolFaulted { job, .. } => {
                tool_entry(&mut tools, result, index.class(job), Some(e.node))
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

/// A signed duration in the unit that reads best.
fn signed_dur(ns: i64) -> String {
    if ns < 0 {
        format!("-{}", dur(ns.unsigned_abs()))
    } else {
        dur(ns.unsigned_abs())
    }
}

fn opt_dur(ns: Option<u64>) -> String {
    ns.map_or_else(|| "-".to_string(), dur)
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
