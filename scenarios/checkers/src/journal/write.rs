//! Writing the technical journal as JSON lines (P13, P18).
//!
//! The journal is every node's journal events, in trace order, one JSON object a line, written
//! through `tracing` and `tracing-subscriber`'s JSON formatter with a subscriber scoped to the
//! call (never the global one). Each line carries the event's journal name, the true time and
//! the recording node's local clock, the node, and the ids an investigator needs: job, token,
//! the external request id, idempotency key, reason and error codes, result and payload hashes.
//! Never payload text: the protocol carries only hashes (P18). Tracing's own wall-clock
//! timestamp is left out, so the same run always gives the same bytes.
//!
//! The file starts with the format's header (name, version, the nodes and their roles: the
//! public format of docs/journal-format.md, read back by [`mod@super::read`]). [`journal_per_node`] gives
//! one file per node instead, as a real system's nodes keep their logs: each line carries its
//! node's `seq` and its own clock's reading, never true time.
//!
//! What the journal events do not carry themselves (each job's class, which node served a tool
//! request, how long a call took) comes from the run's lease history.

use crate::history::History;
use crate::node::NodeInfo;
use leasesim_protocol::{
    Connection, EffectOutcome, EntityId, ErrorCode, Event, GrantReason, IdemKey, JobId, Msg,
    OperatorAction, Outcome, RefusalReason, StoreEvent, Token,
};

use leasesim_sim::{EventKind, NodeId, TraceEvent};
use serde::Serialize;
use std::io::Write;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use tracing_subscriber::fmt::MakeWriter;

/// The `tracing` target of journal events.
pub const TARGET: &str = "leasesim::journal";

/// Journal bytes are handed to the caller's writer whenever this many have accumulated.
const FLUSH_BYTES: usize = 64 * 1024;

/// What a journal is written from: a run's nodes, its operations' names and its trace.
#[derive(Copy, Clone)]
pub struct Recorded<'a> {
    /// The nodes, by node id.
    pub nodes: &'a [NodeInfo],
    /// The tool operations' names, by op id.
    pub ops: &'a [String],
    /// The trace, in order.
    pub trace: &'a [TraceEvent<Msg, Event>],
}

fn node_name<'a>(result: &Recorded<'a>, id: NodeId) -> &'a str {
    result
        .nodes
        .get(id as usize)
        .map_or("?", |n| n.name.as_str())
}

// ---------------------------------------------------------------------------------------------
// Codes, as snake_case words.

/// `ToolTimeout` -> `tool_timeout`; snake_case stays as it is.
pub fn snake(s: &str) -> String {
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
    /// The line's number in its node's file (per-node journals only), from 1.
    seq: Option<u64>,
    /// True time: a simulated run's, in the one-file journal only (a node knows only its
    /// own clock, so a node's own file leaves it out).
    t_true_ns: Option<u64>,
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
    /// The store statement that made a coordinator's decision (`claim`, `commit`, ...).
    statement: Option<&'static str>,
    /// Its row count.
    rows: Option<u64>,
    /// How long a step of it waited on a lock, in simulated nanoseconds.
    waited_ns: Option<u64>,
}

impl Line<'_> {
    /// Sends the line through `tracing`, at the callsite of `site`.
    fn emit(&self, site: Site) {
        match site {
            Site::Coordinator => self.emit_coordinator(),
            Site::Worker => self.emit_worker(),
            Site::Other => self.emit_other(),
        }
    }

    /// The coordinator's callsite.
    fn emit_coordinator(&self) {
        tracing::info!(
            target: TARGET,
            event = self.event,
            seq = self.seq,
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
            statement = self.statement,
            rows = self.rows,
            waited_ns = self.waited_ns,
        );
    }

    /// The workers' callsite.
    fn emit_worker(&self) {
        tracing::info!(
            target: TARGET,
            event = self.event,
            seq = self.seq,
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
        );
    }

    /// The callsite of receivers, the tool and the operator.
    fn emit_other(&self) {
        tracing::info!(
            target: TARGET,
            event = self.event,
            seq = self.seq,
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
        );
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

/// Writes the run's journal as JSON lines to `out`: one line per journal event of every node,
/// in trace order, through `tracing`'s JSON formatter under a subscriber scoped to this call.
///
/// The job's payload hash is not in the trace, so these lines carry none; see
/// [`write_journal_with_payload_hashes`].
pub fn write_journal(result: &Recorded<'_>, out: &mut dyn Write) -> Result<(), String> {
    write_journal_with_payload_hashes(result, &[], out)
}

/// [`write_journal`], with each job's payload hash (indexed by job id, as in the setup's
/// `jobs`) stamped on its `lease_granted` and `job_claimed` lines as `payload_hash` (hex). A
/// job without an entry gets none.
///
/// The first line is the format's header (`{"journal":"leasesim","nodes":[...],"version":1}`,
/// see [`mod@super::read`]); every other line is one journal event.
pub fn write_journal_with_payload_hashes(
    result: &Recorded<'_>,
    payload_hashes: &[u64],
    out: &mut dyn Write,
) -> Result<(), String> {
    let io = |e: std::io::Error| format!("cannot write the journal: {e}");
    let mut pending = header_line(result.nodes).into_bytes();
    pending.push(b'\n');
    emit(result, payload_hashes, false, &mut |_, bytes| {
        pending.extend_from_slice(bytes);
        if pending.len() >= FLUSH_BYTES {
            out.write_all(&std::mem::take(&mut pending))?;
        }
        Ok(())
    })?;
    out.write_all(&pending).map_err(io)?;
    out.flush().map_err(io)
}

/// The run's journal as one file per node, as each node would keep its own: a header naming the
/// node and its role, then its journal events in its order, each with `seq` (its line number
/// among them, from 1) and its own clock's reading only, never true time. Every node gets a
/// file, a node that journaled nothing a header alone. Returns (node, file contents) in node
/// order; [`node_file_name`] names the file.
pub fn journal_per_node(
    result: &Recorded<'_>,
    payload_hashes: &[u64],
) -> Result<Vec<(String, Vec<u8>)>, String> {
    let mut files: Vec<(String, Vec<u8>)> = result
        .nodes
        .iter()
        .map(|n| {
            let mut bytes = header_line(std::slice::from_ref(n)).into_bytes();
            bytes.push(b'\n');
            (n.name.clone(), bytes)
        })
        .collect();
    emit(result, payload_hashes, true, &mut |node, bytes| {
        if let Some((_, file)) = files.get_mut(node as usize) {
            file.extend_from_slice(bytes);
        }
        Ok(())
    })?;
    Ok(files)
}

/// The file a node's journal goes to in a journal folder: its name, a restarted process's
/// primes (`W1'`) as its life's number (`W1-2`), anything but letters, digits, `-` and `_` as
/// `_`, and `.jsonl`.
pub fn node_file_name(node: &str) -> String {
    let primes = node.chars().rev().take_while(|&c| c == '\'').count();
    let base: String = node[..node.len() - primes]
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if primes == 0 {
        format!("{base}.jsonl")
    } else {
        format!("{base}-{}.jsonl", primes + 1)
    }
}

/// The header line of a journal file of `nodes`.
fn header_line(nodes: &[NodeInfo]) -> String {
    super::read::header(nodes)
}

/// Emits every journal line of the run through `tracing`'s JSON formatter under a subscriber
/// scoped to this call, handing each line's bytes to `sink` with its node. `per_node` lines
/// carry their node's `seq` and no true time.
fn emit(
    result: &Recorded<'_>,
    payload_hashes: &[u64],
    per_node: bool,
    sink: &mut dyn FnMut(NodeId, &[u8]) -> std::io::Result<()>,
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
    let lines = Lines::new(*result, payload_hashes);
    let mut seqs = vec![0u64; result.nodes.len()];
    tracing::subscriber::with_default(subscriber, || {
        // A store's statement names the coordinator decision that follows it.
        let mut statement = None;
        for (i, e) in result.trace.iter().enumerate() {
            let EventKind::Note { note } = &e.kind else {
                continue;
            };
            let (mut line, site) = lines.line(i, note);
            if let Event::Store(StoreEvent::Ran {
                statement: st,
                rows,
            }) = *note
            {
                statement = Some((st.name(), u64::from(rows)));
            } else if let Some((st, rows)) = statement.take() {
                if site == Site::Coordinator {
                    line.statement = Some(st);
                    line.rows = Some(rows);
                }
            }
            if per_node {
                line.t_true_ns = None;
                if let Some(seq) = seqs.get_mut(e.node as usize) {
                    *seq += 1;
                    line.seq = Some(*seq);
                }
            }
            line.emit(site);
            let bytes = std::mem::take(&mut *buffer.bytes());
            if bytes.is_empty() {
                return Err(format!(
                    "the journal subscriber dropped a {} event (is `tracing` built with a static level filter below INFO?)",
                    line.event
                ));
            }
            sink(e.node, &bytes).map_err(|e| format!("cannot write the journal: {e}"))?;
        }
        Ok(())
    })
}

/// Turns journal events into lines, with what the run's history knows of them.
struct Lines<'a> {
    result: Recorded<'a>,
    history: History,
    payload_hashes: &'a [u64],
}

impl<'a> Lines<'a> {
    fn new(result: Recorded<'a>, payload_hashes: &'a [u64]) -> Self {
        Lines {
            result,
            history: History::new(result.trace),
            payload_hashes,
        }
    }

    fn key(&self, key: IdemKey) -> Option<String> {
        Some(super::key_text(self.result.ops, key))
    }

    fn payload(&self, job: JobId) -> Option<String> {
        self.payload_hashes.get(job.0 as usize).copied().map(hash)
    }

    fn class(&self, job: JobId) -> Option<u64> {
        self.history.class(job).map(|c| c.0.into())
    }

    /// Stamps a tool call's line, at trace event `i`, with its request, the job's class and
    /// the node that served the request.
    fn tool_call(&self, l: &mut Line<'a>, i: usize, job: JobId, token: Token, request: u64) {
        ids(l, job, token);
        l.request = Some(request);
        l.class = self.class(job);
        let worker = self.result.trace[i].node;
        l.provider = self
            .history
            .provider(worker, request)
            .map(|p| node_name(&self.result, p));
    }

    /// Stamps a receiver's line with the effect it decided.
    fn receipt(&self, l: &mut Line<'_>, entity: EntityId, key: IdemKey, fence: Token) {
        l.job = Some(key.job.0.into());
        l.key = self.key(key);
        l.entity = Some(entity.0.into());
        l.fence = Some(fence.0);
    }

    /// How long worker `node`'s `request` had run at trace event `i`, on its clock.
    fn duration(&self, node: NodeId, request: u64, i: usize) -> Option<u64> {
        let local = self.result.trace[i].local;
        self.history
            .started_before(node, request, i)
            .map(|s| local.saturating_sub(s))
    }

    /// The line of trace event `i`, a journal event, and its callsite: the fields every line
    /// has, then the event's own, stamped by the function of its family.
    fn line(&self, i: usize, note: &Event) -> (Line<'a>, Site) {
        let result = self.result;
        let e = &result.trace[i];
        let mut l = Line {
            event: note.name(),
            t_true_ns: Some(e.t),
            t_local_ns: e.local,
            node: node_name(&result, e.node),
            ..Line::default()
        };
        // Each family's function stamps its own events and says whether `note` was one.
        let site = if self.coordinator_lease(&mut l, note)
            || self.coordinator_job(&mut l, note)
            || statement(&mut l, note)
        {
            Site::Coordinator
        } else if self.worker_lease(&mut l, note)
            || self.worker_tool_call(&mut l, i, note)
            || self.worker_effect(&mut l, note)
        {
            Site::Worker
        } else {
            self.other(&mut l, note);
            Site::Other
        };
        (l, site)
    }

    /// The coordinator's lease events: grants, renewals, checkpoints, revocations, the cap.
    fn coordinator_lease(&self, l: &mut Line<'a>, note: &Event) -> bool {
        match *note {
            Event::LeaseGranted {
                job,
                holder,
                token,
                attempt,
                lease_until,
                took_over,
                reason,
            } => {
                ids(l, job, token);
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
                ids(l, job, token);
                l.worker = Some(worker.to_string());
                l.step = Some(step.into());
                l.lease_until_ns = Some(lease_until);
            }
            Event::RenewalCapReached {
                job,
                token,
                first_claimed_at,
            } => {
                ids(l, job, token);
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
                ids(l, job, token);
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
                ids(l, job, token);
                l.worker = Some(worker.to_string());
                l.lease_until_ns = Some(lease_until);
            }
            _ => return false,
        }
        true
    }

    /// The coordinator's job events (admission, retries, failures) and its answers to heartbeats
    /// and results.
    fn coordinator_job(&self, l: &mut Line<'a>, note: &Event) -> bool {
        match *note {
            Event::AdmissionDeferred {
                job,
                running,
                capacity,
            } => {
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
                l.job = Some(job.0.into());
                l.attempt = Some(attempt.into());
                l.not_before_ns = Some(not_before);
            }
            Event::JobFailed {
                job,
                error,
                attempt,
            } => {
                l.job = Some(job.0.into());
                l.attempt = Some(attempt.into());
                l.error = code(&error);
            }
            Event::HeartbeatRefused {
                job,
                worker,
                token,
                reason,
            } => {
                ids(l, job, token);
                l.worker = Some(worker.to_string());
                l.reason = code(&reason);
            }
            Event::ResultAccepted {
                job,
                worker,
                token,
                state,
            } => {
                ids(l, job, token);
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
                ids(l, job, token);
                l.worker = Some(worker.to_string());
                l.reason = code(&reason);
                l.result_hash = Some(hash(result_hash));
            }
            _ => return false,
        }
        true
    }

    /// A worker's lease events: claims, heartbeats, jeopardy, stage deadlines and commits.
    fn worker_lease(&self, l: &mut Line<'a>, note: &Event) -> bool {
        match *note {
            Event::JobClaimed {
                job,
                token,
                deadline,
            } => {
                ids(l, job, token);
                l.class = self.class(job);
                l.deadline_ns = Some(deadline);
                l.payload_hash = self.payload(job);
            }
            Event::HeartbeatOk {
                job,
                token,
                deadline,
            } => {
                ids(l, job, token);
                l.deadline_ns = Some(deadline);
            }
            Event::HeartbeatLost { job, token } => {
                ids(l, job, token);
                l.reason = Some("zero_rows".to_string());
            }
            Event::JeopardyEntered {
                job,
                token,
                last_confirmed,
                request,
            } => {
                ids(l, job, token);
                l.last_confirmed_ns = Some(last_confirmed);
                l.request = request;
            }
            Event::JeopardyExited { job, token }
            | Event::SuccessClaimed { job, token }
            | Event::FailureAcknowledged { job, token }
            | Event::CommitRefused { job, token }
            | Event::CommitAbandoned { job, token } => ids(l, job, token),
            Event::StageDeadlineExceeded { job, token } => {
                ids(l, job, token);
                l.error = code(&ErrorCode::StageDeadline);
            }
            Event::CommitSent {
                job,
                token,
                outcome,
                in_jeopardy,
            } => {
                ids(l, job, token);
                l.in_jeopardy = Some(in_jeopardy);
                commit_outcome(l, outcome);
            }
            _ => return false,
        }
        true
    }

    /// A worker's tool calls: started, answered, timed out, asked after.
    fn worker_tool_call(&self, l: &mut Line<'a>, i: usize, note: &Event) -> bool {
        let worker = self.result.trace[i].node;
        match *note {
            Event::ToolRequestStarted {
                job,
                token,
                request,
                step,
            } => {
                self.tool_call(l, i, job, token, request);
                l.step = Some(step.into());
            }
            Event::ToolAnswered {
                job,
                token,
                request,
                success,
            } => {
                self.tool_call(l, i, job, token, request);
                l.success = Some(success);
                l.duration_ns = self.duration(worker, request, i);
            }
            Event::ToolTimedOut {
                job,
                token,
                request,
            } => {
                self.tool_call(l, i, job, token, request);
                l.duration_ns = self.duration(worker, request, i);
                l.error = code(&ErrorCode::ToolTimeout);
            }
            Event::ToolStatusQueried {
                job,
                token,
                request,
            } => self.tool_call(l, i, job, token, request),
            _ => return false,
        }
        true
    }

    /// A worker's effects: started, answered, reconciled, handed to a person.
    fn worker_effect(&self, l: &mut Line<'a>, note: &Event) -> bool {
        match *note {
            Event::EffectStarted {
                job,
                token,
                receiver,
                entity,
                key,
                in_jeopardy,
            } => {
                ids(l, job, token);
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
                ids(l, job, token);
                l.key = self.key(key);
                effect_outcome(l, outcome);
            }
            Event::EffectReconciled {
                job,
                token,
                key,
                status,
            } => {
                ids(l, job, token);
                l.key = self.key(key);
                l.status = code(&status);
            }
            Event::HumanReviewRequested { job, token, key } => {
                ids(l, job, token);
                l.key = self.key(key);
            }
            _ => return false,
        }
        true
    }

    /// Everyone else's events: the tool's faults, the operator's actions and the receivers'
    /// receipts. Every event of the other families has been stamped before this is called.
    fn other(&self, l: &mut Line<'a>, note: &Event) {
        match *note {
            Event::ToolFaulted {
                job,
                request,
                fault,
            } => {
                l.job = Some(job.0.into());
                l.request = Some(request);
                l.class = self.class(job);
                l.provider = Some(l.node);
                l.fault = code(&fault);
            }
            Event::OperatorActed { job, action: a } => {
                l.job = Some(job.0.into());
                (l.action, l.to) = action(a);
            }
            Event::EffectApplied { entity, key, fence }
            | Event::EffectDuplicate { entity, key, fence } => {
                self.receipt(l, entity, key, fence);
            }
            Event::EffectUnauthorized { entity, key, fence } => {
                self.receipt(l, entity, key, fence);
                l.reason = code(&EffectOutcome::Unauthorized);
            }
            Event::EffectFenced {
                entity,
                key,
                fence,
                mark,
            } => {
                self.receipt(l, entity, key, fence);
                l.mark = Some(mark.0);
                l.reason = code(&EffectOutcome::StaleFence { mark });
            }
            _ => {}
        }
    }
}

/// A store's statements, which the coordinator journals: ran, waited, failed, and each step.
fn statement(l: &mut Line<'_>, note: &Event) -> bool {
    match *note {
        Event::Store(StoreEvent::Ran { statement, rows }) => {
            l.statement = Some(statement.name());
            l.rows = Some(rows.into());
        }
        Event::Store(StoreEvent::Waited {
            statement, waited, ..
        }) => {
            l.statement = Some(statement.name());
            l.waited_ns = Some(waited);
        }
        Event::Store(StoreEvent::Step {
            statement,
            step,
            connection,
            ..
        }) => {
            l.statement = Some(statement.name());
            l.step = Some(step.into());
            l.worker = match connection {
                Connection::Worker(_) => Some(connection.to_string()),
                Connection::Operator => None,
            };
        }
        Event::Store(StoreEvent::Failed {
            statement, failure, ..
        }) => {
            l.statement = Some(statement.name());
            l.reason = code(&failure);
        }
        _ => return false,
    }
    true
}

/// Stamps a line with a receiver's answer to an effect.
fn effect_outcome(l: &mut Line<'_>, outcome: EffectOutcome) {
    l.outcome = code(&outcome);
    match outcome {
        EffectOutcome::Duplicate { first_fence } => l.first_fence = Some(first_fence.0),
        EffectOutcome::StaleFence { mark } => {
            l.mark = Some(mark.0);
            l.reason = l.outcome.clone();
        }
        EffectOutcome::Applied | EffectOutcome::Unauthorized => {}
    }
}

/// Stamps a line with what a holder reported in its commit.
fn commit_outcome(l: &mut Line<'_>, outcome: Outcome) {
    l.outcome = code(&outcome);
    match outcome {
        Outcome::Success { result } => l.result_hash = Some(hash(result)),
        Outcome::Failure { error, retryable } => {
            l.error = code(&error);
            l.retryable = Some(retryable);
        }
    }
}
