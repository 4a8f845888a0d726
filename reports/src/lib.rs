//! Reports: turns a run (trace, verdict, findings) into something a reviewer reads: the
//! plain-text timeline (this file: one line per event with true time, the node, its local clock
//! reading and what happened), the HTML timeline ([`html`]), Markdown with a Mermaid sequence
//! diagram ([`mermaid`]), the timing advisor's text and SVG ([`advisor`]) and the variant matrix
//! ([`matrix`]). The lease history they draw comes from the checkers crate, built once.
//!
//! Architecture invariant: reports only read data; they never run or judge anything.

use leasesim_protocol::{
    EffectOutcome, Event, Finding, GrantReason, IdemKey, Msg, OperatorAction, Outcome, StoreEvent,
    ToolAnswer,
};
use leasesim_sim::{Command, DropCause, EventKind, Fate, NodeId, TraceEvent, WORLD};
use std::fmt::Write;

pub mod advisor;
pub mod escape;
pub mod html;
pub mod matrix;
pub mod mermaid;

/// What a node is, for the visual renderers ([`html`], [`mermaid`]).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum NodeKind {
    /// The coordinator: the arbiter of leases.
    Coordinator,
    /// A worker that claims jobs and holds leases.
    Worker,
    /// An effect receiver (fences and deduplicates side effects).
    Receiver,
    /// The external tool.
    Tool,
    /// The operator (F8).
    Operator,
}

/// A node as the visual renderers show it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct NodeView {
    /// Display name (`coord`, `W1`, `recv`, `tool`).
    pub name: String,
    /// What it is.
    pub kind: NodeKind,
}

/// One run as the visual renderers ([`html::render`], [`mermaid::render`]) read it.
pub struct RunView<'a> {
    /// A title, e.g. `w1-w2 seed 1 (unconditional-commit)`.
    pub title: String,
    /// A subtitle, e.g. the command that reproduces the run.
    pub subtitle: String,
    /// The verdict, e.g. `HELD` or `VIOLATED`.
    pub verdict: String,
    /// Nodes, by node id.
    pub nodes: &'a [NodeView],
    /// Operation names, by op id (for idempotency keys).
    pub ops: &'a [String],
    /// The whole trace.
    pub trace: &'a [TraceEvent<Msg, Event>],
    /// The violations found, in trace order.
    pub findings: &'a [Finding],
    /// The text of each named operation of the coordinator (name, text), for a store written
    /// as named operations (a SQL file's statements): each decision's tooltip shows the one the
    /// store journaled as making it. Empty otherwise.
    pub sources: &'a [(String, String)],
}

/// Names a renderer needs: nodes by id, operations by op id.
pub struct Names<'a> {
    /// Node display names, by node id.
    pub nodes: &'a [String],
    /// Operation names, by op id.
    pub ops: &'a [String],
}

impl Names<'_> {
    /// A node's display name.
    pub fn node(&self, id: NodeId) -> &str {
        if id == WORLD {
            return "world";
        }
        self.nodes.get(id as usize).map_or("?", String::as_str)
    }

    /// An idempotency key as the receiver sees it: `tool-job:{job}:{operation}`.
    pub fn key(&self, key: IdemKey) -> String {
        leasesim_checkers::journal::key_text(self.ops, key)
    }
}

pub use leasesim_sim::time::{dur, secs};

/// One message in words.
// Long: one arm per message kind, each its own sentence; split, each arm would be a one-line function.
pub fn msg(names: &Names<'_>, m: &Msg) -> String {
    match *m {
        Msg::Claim { req, worker, .. } => format!("claim by {worker} (req {req})"),
        Msg::ClaimGranted {
            req,
            job,
            token,
            lease_ns,
            ..
        } => format!(
            "granted {job} token {} lease {} (req {req})",
            token.0,
            dur(lease_ns)
        ),
        Msg::ClaimEmpty { req } => format!("no job (req {req})"),
        Msg::Heartbeat {
            req, job, token, ..
        } => format!("heartbeat {job} token {} (req {req})", token.0),
        Msg::HeartbeatOk {
            req, job, token, ..
        } => format!("heartbeat ok {job} token {} (req {req})", token.0),
        Msg::HeartbeatRejected { req, job, token } => {
            format!(
                "heartbeat refused: no row, {job} token {} (req {req})",
                token.0
            )
        }
        Msg::Commit {
            req,
            job,
            token,
            outcome,
            ..
        } => format!(
            "commit {} {job} token {} (req {req})",
            outcome_word(outcome),
            token.0
        ),
        Msg::CommitAccepted { req, job, token } => {
            format!("commit accepted {job} token {} (req {req})", token.0)
        }
        Msg::CommitRejected { req, job, token } => {
            format!("commit rejected {job} token {} (req {req})", token.0)
        }
        Msg::ToolRequest { req, job, step, .. } => {
            format!("tool request {job} step {step} (request {req})")
        }
        Msg::ToolResponse {
            req, job, answer, ..
        } => format!("tool answer {} {job} (request {req})", answer_word(answer)),
        Msg::Effect {
            req, key, fence, ..
        } => format!("effect {} fence {} (req {req})", names.key(key), fence.0),
        Msg::Checkpoint {
            req,
            job,
            token,
            step,
            ..
        } => format!(
            "checkpoint {job} token {} after step {step} (req {req})",
            token.0
        ),
        Msg::CheckpointAck {
            req, job, saved, ..
        } => format!(
            "checkpoint {job} {} (req {req})",
            if saved { "saved" } else { "refused" }
        ),
        Msg::EffectStatus {
            req, key, fence, ..
        } => format!(
            "status of {}? fence {} (req {req})",
            names.key(key),
            fence.0
        ),
        Msg::EffectStatusReply {
            req, key, status, ..
        } => format!("status of {}: {status:?} (req {req})", names.key(key)),
        Msg::ToolStatus {
            req, job, request, ..
        } => format!("tool status of request {request} {job}? (req {req})"),
        Msg::Operator { req, job, action } => {
            format!("operator {} {job} (req {req})", action_word(action))
        }
        Msg::OperatorDone { req, job, applied } => format!(
            "operator action on {job} {} (req {req})",
            if applied { "applied" } else { "refused" }
        ),
        Msg::EffectAck {
            req, key, outcome, ..
        } => format!(
            "effect answer {} {} (req {req})",
            names.key(key),
            effect_word(outcome)
        ),
    }
}

fn action_word(a: OperatorAction) -> String {
    match a {
        OperatorAction::Revoke => "revoke".into(),
        OperatorAction::Takeover { to } => format!("takeover to {to}"),
        OperatorAction::Cancel => "cancel".into(),
        OperatorAction::HandToHuman => "hand to a human".into(),
        OperatorAction::HumanResolves => "human resolves".into(),
    }
}

fn outcome_word(o: Outcome) -> String {
    match o {
        Outcome::Success { .. } => "success".into(),
        Outcome::Failure { error, retryable } => {
            format!(
                "failure {error:?}{}",
                if retryable { " (retryable)" } else { "" }
            )
        }
    }
}

fn answer_word(a: ToolAnswer) -> &'static str {
    match a {
        ToolAnswer::Success { .. } => "success",
        ToolAnswer::Failure { transient: true } => "transient failure",
        ToolAnswer::Failure { transient: false } => "validation error (permanent)",
        ToolAnswer::Running => "still running",
        ToolAnswer::NoRecord => "no record of the call",
    }
}

fn effect_word(o: EffectOutcome) -> String {
    match o {
        EffectOutcome::Applied => "applied".into(),
        EffectOutcome::Duplicate { first_fence } => {
            format!(
                "duplicate key, first result returned (fence {})",
                first_fence.0
            )
        }
        EffectOutcome::StaleFence { mark } => format!("refused: stale fence (mark {})", mark.0),
        EffectOutcome::Unauthorized => "refused by policy (commit-time authorization)".into(),
    }
}

/// One journal event in words, starting with its journal name.
pub fn event(names: &Names<'_>, e: &Event) -> String {
    let detail = match e {
        Event::LeaseGranted { .. }
        | Event::LeaseRevoked { .. }
        | Event::LeaseRenewed { .. }
        | Event::HeartbeatRefused { .. }
        | Event::ResultAccepted { .. }
        | Event::ResultRejected { .. } => lease_decision(e),
        Event::CheckpointSaved { .. }
        | Event::AdmissionDeferred { .. }
        | Event::RetryScheduled { .. }
        | Event::JobFailed { .. }
        | Event::RenewalCapReached { .. }
        | Event::StageDeadlineExceeded { .. }
        | Event::OperatorActed { .. } => job_decision(e),
        Event::JobClaimed { .. }
        | Event::HeartbeatOk { .. }
        | Event::HeartbeatLost { .. }
        | Event::JeopardyEntered { .. }
        | Event::JeopardyExited { .. }
        | Event::CommitSent { .. }
        | Event::SuccessClaimed { .. }
        | Event::FailureAcknowledged { .. }
        | Event::CommitRefused { .. }
        | Event::CommitAbandoned { .. } => worker_lease(e),
        Event::ToolRequestStarted { .. }
        | Event::ToolAnswered { .. }
        | Event::ToolFaulted { .. }
        | Event::ToolTimedOut { .. }
        | Event::ToolStatusQueried { .. } => tool_call(e),
        Event::EffectStarted { .. }
        | Event::EffectAnswered { .. }
        | Event::EffectReconciled { .. }
        | Event::HumanReviewRequested { .. }
        | Event::EffectApplied { .. }
        | Event::EffectDuplicate { .. }
        | Event::EffectUnauthorized { .. }
        | Event::EffectFenced { .. } => effect(names, e),
        Event::Store(_) => sql(e),
    };
    format!("{} {detail}", e.name())
}

/// A coordinator's decision on a lease: granted, renewed or refused, revoked, a result judged.
fn lease_decision(e: &Event) -> String {
    match *e {
        Event::LeaseGranted {
            job,
            holder,
            token,
            attempt,
            lease_until,
            took_over,
            reason,
        } => format!(
            "{job} to {holder} token {} attempt {attempt} until {}{}",
            token.0,
            secs(lease_until),
            match (took_over, reason) {
                (Some(t), GrantReason::Operator) => format!(", operator takeover of token {}", t.0),
                (Some(t), _) => format!(", taking over expired token {}", t.0),
                (None, _) => String::new(),
            }
        ),
        Event::LeaseRevoked {
            job,
            holder,
            token,
            epoch,
            action,
        } => format!(
            "{job} token {} of {} ended by operator {}; new epoch {}",
            token.0,
            holder.map_or("nobody".to_string(), |h| h.to_string()),
            action_word(action),
            epoch.0
        ),
        Event::LeaseRenewed {
            job,
            worker,
            token,
            lease_until,
        } => format!("{job} for {worker} token {} until {}", token.0, secs(lease_until)),
        Event::HeartbeatRefused {
            job,
            worker,
            token,
            reason,
        } => format!("{job} for {worker} token {}: {reason:?}", token.0),
        Event::ResultAccepted {
            job,
            worker,
            token,
            state,
        } => format!("{job} from {worker} token {} -> {state:?}", token.0),
        Event::ResultRejected {
            job,
            worker,
            token,
            reason,
            result_hash,
        } => format!(
            "{job} from {worker} token {}: {reason:?}; result {result_hash:#x} kept in the journal only",
            token.0
        ),
        // The other families are worded by their own functions; `event` sends none here.
        _ => format!("{e:?}"),
    }
}

/// A coordinator's decision on a job: a stage saved, admission deferred, a retry, a failure, a cap or deadline reached, an operator's action.
fn job_decision(e: &Event) -> String {
    match *e {
        Event::CheckpointSaved {
            job,
            worker,
            token,
            step,
            lease_until,
        } => format!(
            "{job} by {worker} token {} after step {step}; fresh lease until {}",
            token.0,
            secs(lease_until)
        ),
        Event::AdmissionDeferred {
            job,
            running,
            capacity,
        } => format!("{job} waits: its class runs {running} of {capacity} (admission refusal)"),
        Event::RetryScheduled {
            job,
            attempt,
            not_before,
        } => format!("{job} after attempt {attempt}, not before {}", secs(not_before)),
        Event::JobFailed {
            job,
            error,
            attempt,
        } => format!("{job} after attempt {attempt}: {error:?}"),
        Event::RenewalCapReached {
            job,
            token,
            first_claimed_at,
        } => format!(
            "{job} token {}: total lease time since the first claim at {} reached the class's cap; the job fails",
            token.0,
            secs(first_claimed_at)
        ),
        Event::StageDeadlineExceeded { job, token } => {
            format!("{job} token {}: the stage ran out of time", token.0)
        }
        Event::OperatorActed { job, action } => format!("{} {job}", action_word(action)),
        // The other families are worded by their own functions; `event` sends none here.
        _ => format!("{e:?}"),
    }
}

/// A worker's view of its lease and its commit: claimed, confirmed, lost, in and out of jeopardy, the commit sent and answered.
fn worker_lease(e: &Event) -> String {
    match *e {
        Event::JobClaimed {
            job,
            token,
            deadline,
        } => format!("{job} token {} local deadline {}", token.0, secs(deadline)),
        Event::HeartbeatOk {
            job,
            token,
            deadline,
        } => format!("{job} token {} local deadline {}", token.0, secs(deadline)),
        Event::HeartbeatLost { job, token } => {
            format!("{job} token {} reason=zero_rows: stop acting", token.0)
        }
        Event::JeopardyEntered {
            job,
            token,
            last_confirmed,
            request,
        } => format!(
            "{job} token {} last confirmed at {}{}",
            token.0,
            secs(last_confirmed),
            request.map_or(String::new(), |r| format!(", request {r} in flight"))
        ),
        Event::JeopardyExited { job, token } => format!("{job} token {}", token.0),
        Event::CommitSent {
            job,
            token,
            outcome,
            in_jeopardy,
        } => format!(
            "{job} token {} {}{}",
            token.0,
            outcome_word(outcome),
            if in_jeopardy {
                " (in jeopardy: conditional, the coordinator decides)"
            } else {
                ""
            }
        ),
        Event::SuccessClaimed { job, token }
        | Event::FailureAcknowledged { job, token }
        | Event::CommitRefused { job, token }
        | Event::CommitAbandoned { job, token } => format!("{job} token {}", token.0),
        // The other families are worded by their own functions; `event` sends none here.
        _ => format!("{e:?}"),
    }
}

/// An external tool call: started, answered, faulted, timed out, asked about.
fn tool_call(e: &Event) -> String {
    match *e {
        Event::ToolStatusQueried {
            job,
            token,
            request,
        } => format!(
            "{job} token {} request {request}: outcome unknown, asking",
            token.0
        ),
        Event::ToolFaulted {
            job,
            request,
            fault,
        } => format!("{job} request {request}: {fault:?}"),
        Event::ToolRequestStarted {
            job,
            token,
            request,
            step,
        } => format!("{job} token {} request {request} step {step}", token.0),
        Event::ToolAnswered {
            job,
            token,
            request,
            success,
        } => format!(
            "{job} token {} request {request} {}",
            token.0,
            if success { "success" } else { "failure" }
        ),
        Event::ToolTimedOut {
            job,
            token,
            request,
        } => format!("{job} token {} request {request}: outcome unknown", token.0),
        // The other families are worded by their own functions; `event` sends none here.
        _ => format!("{e:?}"),
    }
}

/// A side effect, from the worker that starts it to the receiver that applies, deduplicates or refuses it.
fn effect(names: &Names<'_>, e: &Event) -> String {
    match *e {
        Event::EffectReconciled {
            key, status, token, ..
        } => format!("{} by token {}: {status:?}", names.key(key), token.0),
        Event::HumanReviewRequested { job, token, key } => format!(
            "{job} token {}: {} cannot be reconciled; a human must look",
            token.0,
            names.key(key)
        ),
        Event::EffectUnauthorized { key, fence, .. } => format!(
            "{} fence {} refused by policy (authorization refusal)",
            names.key(key),
            fence.0
        ),
        Event::EffectStarted {
            key,
            token,
            in_jeopardy,
            ..
        } => format!(
            "{} fence {}{}",
            names.key(key),
            token.0,
            if in_jeopardy { " IN JEOPARDY" } else { "" }
        ),
        Event::EffectAnswered { key, outcome, .. } => {
            format!("{} {}", names.key(key), effect_word(outcome))
        }
        Event::EffectApplied { key, fence, .. } | Event::EffectDuplicate { key, fence, .. } => {
            format!("{} fence {}", names.key(key), fence.0)
        }
        Event::EffectFenced {
            key, fence, mark, ..
        } => format!("{} fence {} below mark {}", names.key(key), fence.0, mark.0),
        // The other families are worded by their own functions; `event` sends none here.
        _ => format!("{e:?}"),
    }
}

/// A statement of a coordinator written as SQL: run, waited on a lock, one step sent, failed.
fn sql(e: &Event) -> String {
    match *e {
        Event::Store(StoreEvent::Ran { statement, rows }) => format!(
            "`{}` -> {rows} row{}",
            statement.name(),
            if rows == 1 { "" } else { "s" }
        ),
        Event::Store(StoreEvent::Waited {
            statement,
            step,
            waited,
        }) => format!(
            "`{}` step {} waited {} on a lock",
            statement.name(),
            step + 1,
            secs(waited)
        ),
        Event::Store(StoreEvent::Step {
            statement,
            step,
            steps,
            connection,
            issued,
        }) => format!(
            "`{}` statement {} of {} on {}'s connection, sent at {}",
            statement.name(),
            step + 1,
            steps,
            match connection {
                leasesim_protocol::Connection::Worker(_) => connection.to_string(),
                leasesim_protocol::Connection::Operator => "the operator".to_string(),
            },
            secs(issued)
        ),
        Event::Store(StoreEvent::Failed {
            statement,
            step,
            failure,
        }) => format!(
            "`{}` step {} aborted: {}",
            statement.name(),
            step + 1,
            failure.describe()
        ),
        // The other families are worded by their own functions; `event` sends none here.
        _ => format!("{e:?}"),
    }
}

/// One fault in words.
pub fn command(names: &Names<'_>, c: &Command) -> String {
    match *c {
        Command::Cut { from, to } => {
            format!("fault: link {} -> {} cut", names.node(from), names.node(to))
        }
        Command::Heal { from, to } => {
            format!(
                "fault: link {} -> {} healed",
                names.node(from),
                names.node(to)
            )
        }
        Command::Pause { node, frozen } => format!(
            "fault: {} paused ({})",
            names.node(node),
            if frozen {
                "clock frozen"
            } else {
                "clock runs on"
            }
        ),
        Command::Resume { node } => format!("fault: {} resumed", names.node(node)),
        Command::Crash { node } => format!("fault: {} crashed", names.node(node)),
        Command::Restart { node } => format!("fault: {} restarted", names.node(node)),
        Command::ClockStep { node, delta_ns } => format!(
            "fault: {} monotonic clock jumped by {}{}",
            names.node(node),
            if delta_ns < 0 { "-" } else { "+" },
            dur(delta_ns.unsigned_abs())
        ),
        Command::WallStep { node, delta_ns } => format!(
            "fault: {} wall clock stepped by {}{}",
            names.node(node),
            if delta_ns < 0 { "-" } else { "+" },
            dur(delta_ns.unsigned_abs())
        ),
        Command::SetSlow { node, extra_ns: 0 } => {
            format!("fault: {} no longer slow", names.node(node))
        }
        Command::SetSlow { node, extra_ns } => format!(
            "fault: every message of {} now takes {} longer",
            names.node(node),
            dur(extra_ns)
        ),
        Command::SetNetwork { drop_ppm, dup_ppm } => format!(
            "fault: network now loses {drop_ppm} and duplicates {dup_ppm} messages per million"
        ),
        Command::Signal { node, tag } => format!("signal {tag} to {}", names.node(node)),
        Command::SetDrift { node, drift_ppm } => {
            format!(
                "fault: {} clock drift now {drift_ppm} ppm",
                names.node(node)
            )
        }
        Command::Release { id } => format!("held message #{id} released"),
        Command::Alarm { tag, .. } => format!("alarm {tag}"),
    }
}

/// One trace event as one timeline line.
pub fn line(names: &Names<'_>, e: &TraceEvent<Msg, Event>) -> String {
    let local = if e.node == WORLD {
        " ".repeat(14)
    } else {
        format!("@{:>13}", secs(e.local))
    };
    let what = match &e.kind {
        EventKind::Send {
            id,
            to,
            msg: m,
            fate,
        } => {
            let fate = match fate {
                Fate::Deliver { .. } => String::new(),
                Fate::Duplicate { .. } => "  [DUPLICATED]".into(),
                Fate::Drop {
                    cause: DropCause::Partition,
                } => "  [DROPPED: link cut]".into(),
                Fate::Drop {
                    cause: DropCause::Loss,
                } => "  [DROPPED: lost]".into(),
                Fate::Drop {
                    cause: DropCause::Plan,
                } => "  [DROPPED: fault plan]".into(),
                Fate::Hold => "  [HELD by the fault plan]".into(),
            };
            format!("-> {:<6} #{id} {}{fate}", names.node(*to), msg(names, m))
        }
        EventKind::Deliver { id, from, msg: m } => {
            format!("<- {:<6} #{id} {}", names.node(*from), msg(names, m))
        }
        EventKind::Lost { id } => format!("message #{id} lost: the node is down"),
        EventKind::Release { id, delay_ns } => {
            format!("held message #{id} released, arrives in {}", dur(*delay_ns))
        }
        EventKind::Note { note } => format!("** {}", event(names, note)),
        EventKind::Fault { command: c } => format!("!! {}", command(names, c)),
    };
    format!(
        "{:>14}  {:<6} {local}  {what}",
        secs(e.t),
        names.node(e.node)
    )
}

/// The whole timeline, one line per event (timer wake-ups are not recorded).
pub fn timeline(names: &Names<'_>, trace: &[TraceEvent<Msg, Event>]) -> String {
    let mut s = String::with_capacity(trace.len() * 96);
    let _ = writeln!(
        s,
        "{:>14}  {:<6} {:>14}  event",
        "true time", "node", "local clock"
    );
    for e in trace {
        s.push_str(&line(names, e));
        s.push('\n');
    }
    s
}

/// A finding in one line: `no-stale-commit (I1) at 45.1s on coord: ...`.
pub fn finding(names: &Names<'_>, f: &Finding) -> String {
    format!(
        "{} at {} on {}: {}",
        f.invariant.label(),
        secs(f.t_ns),
        names.node(f.node),
        f.message
    )
}
