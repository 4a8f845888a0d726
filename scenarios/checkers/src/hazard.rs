//! Hazards: the dangerous situations a run reached. A sweep that passes because nothing
//! happened proves nothing; counting hazards shows that the runs did reach the places where
//! lease bugs live (a "sometimes" property, in the sense of model checkers).
//!
//! Most hazards are counted where they are met: a fault's by the fault tracker, an overlap or
//! an unfenced stale effect by the effect checker, a long hold by the reference table, the
//! lease replies' by the wire and the holder checker (the situations in which a holder's
//! deadline arithmetic shows: late, after a pause, duplicated, reordered, then silence). What is
//! left is here: the journal events that are a hazard by their kind ([`of_note`]) and the few
//! that need a little state of their own (`Counter`).

use crate::groups::Groups;
use crate::{Cx, Ev, Judgement};
use leasesim_protocol::{Event, GrantReason, JobId, Msg, Token};
use leasesim_sim::Command;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::collections::BTreeMap;
use std::fmt;

macro_rules! hazards {
    ($($variant:ident => $name:literal, $summary:literal;)*) => {
        /// A named dangerous situation.
        #[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
        #[serde(rename_all = "kebab-case")]
        pub enum Hazard {
            $(
                #[doc = $summary]
                $variant,
            )*
        }

        impl Hazard {
            /// Every hazard, in report order.
            pub const ALL: &'static [Hazard] = &[$(Hazard::$variant),*];

            /// The kebab-case name.
            pub fn name(self) -> &'static str {
                match self {
                    $(Hazard::$variant => $name,)*
                }
            }

            /// One line on what it is.
            pub fn summary(self) -> &'static str {
                match self {
                    $(Hazard::$variant => $summary,)*
                }
            }
        }
    };
}

hazards! {
    Takeover => "takeover", "a lease that expired was claimed by another attempt";
    OperatorAction => "operator-action", "an operator revoked, took over or cancelled a job";
    StaleCommitRejected => "stale-commit-rejected", "the coordinator refused a commit and journaled it";
    StaleFenceRejected => "stale-fence-rejected", "a receiver refused an effect for its stale fence";
    DuplicateKeyAnswered => "duplicate-key-answered", "a receiver answered a repeated key from its store";
    HeartbeatRefused => "heartbeat-refused", "the coordinator refused a heartbeat (no row)";
    JeopardyEntered => "jeopardy-entered", "a holder could not confirm its lease in time and went quiet";
    JeopardyExited => "jeopardy-exited", "a holder in jeopardy confirmed its lease again and went on";
    PauseAcrossExpiry => "pause-across-expiry", "a holder resumed from a pause after its lease had ended";
    LateAnswerAfterExpiry => "late-answer-after-expiry", "a tool answer reached a holder after its lease had ended";
    RestartSameName => "restart-same-name", "a worker came back under the same logical name";
    Crash => "crash", "a node crashed";
    ToolFault => "tool-fault", "the tool hung, answered late, failed, or lost its answer";
    StageDeadline => "stage-deadline", "a stage deadline ended an attempt (progress control, P14)";
    CoordinatorOutage => "coordinator-outage", "the coordinator was cut off, paused or slow";
    ClockFault => "clock-fault", "a clock was stepped or its rate changed";
    MessageLost => "message-lost", "a message was dropped (loss, cut or plan)";
    MessageDuplicated => "message-duplicated", "a message was delivered twice";
    MessageLate => "message-late", "a message was held or delayed by the plan";
    CommitAbandoned => "commit-abandoned", "a holder gave up asking for its commit (outcome unknown)";
    OverlapEffect => "overlap-effect", "an effect was issued while two attempts of its job overlapped";
    UnfencedStaleEffect => "unfenced-stale-effect", "a receiver without fence support applied an effect from a superseded holder";
    ActedAfterRevoke => "acted-after-revoke", "a holder acted before it learned an operator revoked its lease";
    LongHold => "long-hold", "a holder kept one lease through ten renewals or more";
    RenewalCap => "renewal-cap", "a job reached its cap on total lease time and was failed (P7)";
    ConcurrentClaims => "concurrent-claims", "two claims reached the coordinator within 5 ms of each other";
    CheckpointSaved => "checkpoint-saved", "a stage's result was persisted and the next stage got a fresh lease (P17)";
    EffectReconciled => "effect-reconciled", "a worker asked a receiver whether an earlier effect took place before going on (P17, P12 c)";
    HumanReview => "human-review", "a partial effect could not be reconciled and the job went to a human (P17)";
    StatusQuery => "status-query", "a worker asked the tool about a call whose answer never came (P12 c)";
    RetryScheduled => "retry-scheduled", "a transient failure was re-queued after a backoff (P11)";
    AdmissionDeferred => "admission-deferred", "a job waited because its class was at capacity (P16 admission)";
    AuthorizationRefused => "authorization-refused", "a receiver's policy refused a valid holder's effect (P16 commit-time authorization)";
    RequestReplayed => "request-replayed", "a repeated claim or commit got the first answer again, not a second decision";
    LateLeaseReply => "late-lease-reply", "a holder stated its deadline on a grant or renewal reply that came back later than two ordinary flights after its request";
    LeaseReplyPastMargin => "lease-reply-past-margin", "a grant or renewal reply came back so late that a deadline measured from its arrival, not from the request's send, would have passed the grant";
    LeaseReplyAfterPause => "lease-reply-after-pause", "a grant or renewal reply waited for its holder through a pause and was handled at the resume";
    LeaseReplyDuplicated => "lease-reply-duplicated", "a grant or renewal reply was delivered twice, or a repeated claim got its grant again";
    LeaseReplyReordered => "lease-reply-reordered", "a grant or renewal reply reached its holder after the reply to a later request";
    SilenceAfterLateReply => "silence-after-late-reply", "a holder whose last confirmation came in a late reply heard nothing more and reached its deadline with work left";
    OutOfBoundDeadline => "out-of-bound-deadline", "a holder whose clock had left its drift bound stated a deadline that, at its clock's rate, ran past the coordinator's grant (belief-within-grant is not judged for such a clock; this is what the clock made of it)";
    OutOfBoundEffect => "out-of-bound-effect", "a holder whose clock had left its drift bound started an effect after its grant had ended in true time (not judged for such a clock; this is what the clock made it do)";
}

/// How many hazards there are.
const HAZARDS: usize = Hazard::ALL.len();

/// How often each hazard was reached in one run (or summed over runs): a count per hazard, by
/// its place in [`Hazard::ALL`] (counting one is an index, not a map's search and allocation).
/// Read, shown and serialized as the map of the hazards reached, in report order.
#[derive(Clone, PartialEq, Eq)]
pub struct Hazards([u64; HAZARDS]);

impl Default for Hazards {
    fn default() -> Self {
        Hazards([0; HAZARDS])
    }
}

impl Hazards {
    /// Counts one occurrence.
    #[inline]
    pub fn hit(&mut self, h: Hazard) {
        self.0[h as usize] += 1;
    }

    /// How often `h` was reached.
    pub fn count(&self, h: Hazard) -> u64 {
        self.0[h as usize]
    }

    /// Whether `h` was reached at all.
    pub fn reached(&self, h: Hazard) -> bool {
        self.count(h) > 0
    }

    /// Each hazard reached and how often, in report order.
    pub fn iter(&self) -> impl Iterator<Item = (&'static Hazard, &u64)> + '_ {
        Hazard::ALL.iter().zip(&self.0).filter(|(_, n)| **n > 0)
    }

    /// Each hazard reached, in report order.
    pub fn keys(&self) -> impl Iterator<Item = &'static Hazard> + '_ {
        self.iter().map(|(h, _)| h)
    }
}

impl fmt::Debug for Hazards {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Hazards(")?;
        f.debug_map().entries(self.iter()).finish()?;
        f.write_str(")")
    }
}

impl Serialize for Hazards {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_map(self.iter())
    }
}

impl<'de> Deserialize<'de> for Hazards {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let mut hazards = Hazards::default();
        for (h, n) in BTreeMap::<Hazard, u64>::deserialize(deserializer)? {
            hazards.0[h as usize] = n;
        }
        Ok(hazards)
    }
}

/// The hazard a journal event is by its kind alone, if any.
#[inline(always)]
pub fn of_note(note: &Event) -> Option<Hazard> {
    Some(match *note {
        Event::LeaseGranted {
            took_over: Some(_),
            reason: GrantReason::Expired,
            ..
        } => Hazard::Takeover,
        Event::ResultRejected { .. } => Hazard::StaleCommitRejected,
        Event::CheckpointSaved { .. } => Hazard::CheckpointSaved,
        Event::AdmissionDeferred { .. } => Hazard::AdmissionDeferred,
        Event::RetryScheduled { .. } => Hazard::RetryScheduled,
        Event::EffectReconciled { .. } => Hazard::EffectReconciled,
        Event::HumanReviewRequested { .. } => Hazard::HumanReview,
        Event::ToolStatusQueried { .. } => Hazard::StatusQuery,
        Event::EffectUnauthorized { .. } => Hazard::AuthorizationRefused,
        Event::RenewalCapReached { .. } => Hazard::RenewalCap,
        Event::HeartbeatRefused { .. } => Hazard::HeartbeatRefused,
        Event::EffectDuplicate { .. } => Hazard::DuplicateKeyAnswered,
        Event::EffectFenced { .. } => Hazard::StaleFenceRejected,
        Event::CommitAbandoned { .. } => Hazard::CommitAbandoned,
        Event::JeopardyEntered { .. } => Hazard::JeopardyEntered,
        Event::JeopardyExited { .. } => Hazard::JeopardyExited,
        Event::StageDeadlineExceeded { .. } => Hazard::StageDeadline,
        Event::ToolFaulted { .. } => Hazard::ToolFault,
        Event::OperatorActed { .. } => Hazard::OperatorAction,
        Event::LeaseGranted { .. }
        | Event::LeaseRenewed { .. }
        | Event::LeaseRevoked { .. }
        | Event::Store(_)
        | Event::JobFailed { .. }
        | Event::ResultAccepted { .. }
        | Event::JobClaimed { .. }
        | Event::HeartbeatOk { .. }
        | Event::HeartbeatLost { .. }
        | Event::ToolRequestStarted { .. }
        | Event::ToolAnswered { .. }
        | Event::ToolTimedOut { .. }
        | Event::EffectStarted { .. }
        | Event::EffectAnswered { .. }
        | Event::CommitSent { .. }
        | Event::SuccessClaimed { .. }
        | Event::FailureAcknowledged { .. }
        | Event::CommitRefused { .. }
        | Event::EffectApplied { .. } => return None,
    })
}

/// Hazards only a journal can show: nothing that crosses the network tells them (a renewal
/// refused for its cap looks like any refusal; a retry, a deferred admission, a reconciled
/// effect, a human's review, an abandoned commit, a stage's deadline and leaving jeopardy happen
/// inside a machine). Machines that declare they write no journal are not expected to reach
/// them (every other hazard is counted from the messages that show it).
pub const JOURNAL_ONLY: &[Hazard] = &[
    // A lease reply measured against the deadline the holder stated (P5), and its silence
    // after it entered jeopardy.
    Hazard::LeaseReplyPastMargin,
    Hazard::SilenceAfterLateReply,
    Hazard::RenewalCap,
    Hazard::RetryScheduled,
    Hazard::AdmissionDeferred,
    Hazard::EffectReconciled,
    Hazard::HumanReview,
    Hazard::CommitAbandoned,
    Hazard::StageDeadline,
    Hazard::JeopardyExited,
];

/// The hazard a message sent by `e.node` shows by itself, when its handler journaled none of
/// it: a refused heartbeat or commit, a receiver's duplicate, fenced or unauthorized answer, a
/// saved checkpoint, a status query, a heartbeat sent in jeopardy. A machine that journals
/// nothing reaches them as one that journals does.
pub(crate) fn of_message(cx: &Cx<'_>, e: &Ev, msg: &Msg) -> Option<Hazard> {
    use leasesim_protocol::EffectOutcome;
    let journaled =
        |pred: &dyn Fn(&Event) -> bool| crate::handler::journaled_here(cx.run.trace, cx.i, pred);
    let (hazard, note): (Hazard, &dyn Fn(&Event) -> bool) = match *msg {
        Msg::HeartbeatRejected { .. } => (Hazard::HeartbeatRefused, &|n| {
            matches!(
                n,
                Event::HeartbeatRefused { .. } | Event::RenewalCapReached { .. }
            )
        }),
        Msg::CommitRejected { .. } => (Hazard::StaleCommitRejected, &|n| {
            matches!(n, Event::ResultRejected { .. })
        }),
        Msg::EffectAck { outcome, .. } => match outcome {
            EffectOutcome::Duplicate { .. } => (Hazard::DuplicateKeyAnswered, &|n| {
                matches!(n, Event::EffectDuplicate { .. })
            }),
            EffectOutcome::StaleFence { .. } => (Hazard::StaleFenceRejected, &|n| {
                matches!(n, Event::EffectFenced { .. })
            }),
            EffectOutcome::Unauthorized => (Hazard::AuthorizationRefused, &|n| {
                matches!(n, Event::EffectUnauthorized { .. })
            }),
            EffectOutcome::Applied => return None,
        },
        Msg::CheckpointAck { saved: true, .. } => (Hazard::CheckpointSaved, &|n| {
            matches!(n, Event::CheckpointSaved { .. })
        }),
        Msg::ToolStatus { .. } => (Hazard::StatusQuery, &|n| {
            matches!(n, Event::ToolStatusQueried { .. })
        }),
        Msg::Heartbeat {
            job,
            token,
            in_jeopardy: true,
            ..
        } => {
            // A holder that journals its jeopardy counted it there.
            let counted = cx.history.lease(job, token).is_some_and(|l| {
                l.attempts()
                    .filter(|a| a.node() == e.node)
                    .any(|a| a.jeopardy().any(|s| s.from < cx.i))
            });
            return (!counted).then_some(Hazard::JeopardyEntered);
        }
        _ => return None,
    };
    (!journaled(note)).then_some(hazard)
}

/// The lease `node` runs a job under before the event judged: as its journal says, or, for a
/// worker that never journaled a claim, the last grant delivered to it that no refusal
/// delivered to it ended (`granted`).
fn holding(cx: &Cx<'_>, granted: &[(u32, JobId, Token)], node: u32) -> Option<(JobId, Token)> {
    if let Some(running) = cx.history.running(node, cx.i) {
        return Some(running);
    }
    if cx.history.claimants().iter().any(|&(n, _)| n == node) {
        return None;
    }
    granted
        .iter()
        .rev()
        .find(|g| g.0 == node)
        .map(|&(_, job, token)| (job, token))
}

/// The hazards that need a little state: claims close together, repeated answers, a holder
/// that resumed or got a tool's answer after its lease ended, a second process under a name.
#[derive(Default)]
pub(crate) struct Counter {
    /// When the coordinator last received a claim.
    last_claim_t: Option<u64>,
    /// The leases whose holder said it was in jeopardy in a heartbeat, by node.
    jeopardy_said: Vec<(u32, JobId, Token)>,
    /// The grants delivered to workers and not refused to them since, by node (read only for
    /// a worker that journals no claims).
    granted: Vec<(u32, JobId, Token)>,
    /// Grants and acceptances the coordinator already answered, by job: (token, is-commit).
    answered: Groups<(Token, bool)>,
}

impl Counter {
    /// Forgets the run so far, keeping the storage for the next run of `jobs` jobs.
    pub(crate) fn clear(&mut self, jobs: usize) {
        self.last_claim_t = None;
        self.jeopardy_said.clear();
        self.granted.clear();
        self.answered.clear();
        self.answered.lay_out(jobs);
    }

    /// A hazard a message showed ([`of_message`]): counted, a holder's jeopardy once a lease.
    pub(crate) fn seen(&mut self, node: u32, msg: &Msg, h: Hazard, out: &mut Judgement) {
        if let Msg::Heartbeat { job, token, .. } = *msg {
            if self.jeopardy_said.contains(&(node, job, token)) {
                return;
            }
            self.jeopardy_said.push((node, job, token));
        }
        out.hit(h);
    }

    /// A fault: a holder resumed from a pause after its lease had ended.
    pub(crate) fn command(&mut self, cx: &Cx<'_>, command: &Command, t: u64, out: &mut Judgement) {
        if let Command::Resume { node } = *command {
            if let Some((job, token)) = holding(cx, &self.granted, node) {
                if cx.lease_over(job, token, t) {
                    out.hit(Hazard::PauseAcrossExpiry);
                }
            }
        }
    }

    /// A claim: a second process claiming under a name another one already claimed under.
    pub(crate) fn claimed(&mut self, cx: &Cx<'_>, e: &Ev, out: &mut Judgement) {
        let Some(name) = cx.worker_name(e.node) else {
            return;
        };
        let claimants = cx.history.claimants();
        // A node's first claim files it last among the claimants, at this very event.
        let new_here = claimants.last() == Some(&(e.node, cx.i));
        if new_here
            && claimants
                .iter()
                .any(|&(n, at)| n != e.node && at < cx.i && cx.worker_name(n) == Some(name))
        {
            out.hit(Hazard::RestartSameName);
        }
    }

    /// A message the coordinator sent: a grant or an acceptance it had given before. The kind
    /// is told inline, where the walk has the message at hand; only an answer pays for a call.
    #[inline(always)]
    pub(crate) fn answered(&mut self, msg: &Msg, out: &mut Judgement) {
        let (job, answer) = match *msg {
            Msg::ClaimGranted { job, token, .. } => (job, (token, false)),
            Msg::CommitAccepted { job, token, .. } => (job, (token, true)),
            Msg::Claim { .. }
            | Msg::ClaimEmpty { .. }
            | Msg::Heartbeat { .. }
            | Msg::HeartbeatOk { .. }
            | Msg::HeartbeatRejected { .. }
            | Msg::Commit { .. }
            | Msg::CommitRejected { .. }
            | Msg::ToolRequest { .. }
            | Msg::ToolResponse { .. }
            | Msg::Effect { .. }
            | Msg::Checkpoint { .. }
            | Msg::CheckpointAck { .. }
            | Msg::EffectStatus { .. }
            | Msg::EffectStatusReply { .. }
            | Msg::ToolStatus { .. }
            | Msg::Operator { .. }
            | Msg::OperatorDone { .. }
            | Msg::EffectAck { .. } => return,
        };
        self.answer(job, answer, out);
    }

    /// The coordinator answered `job` with a grant (`false`) or an acceptance (`true`) of a token.
    #[inline(never)]
    fn answer(&mut self, job: JobId, answer: (Token, bool), out: &mut Judgement) {
        if self.answered.find(job.0, |&a| a == answer).is_some() {
            out.hit(Hazard::RequestReplayed);
        } else {
            self.answered.push(job.0, answer);
        }
    }

    /// A claim reached the coordinator at true time `t`: claims close together.
    #[inline(always)]
    pub(crate) fn claim_arrived(&mut self, t: u64, hazards: &mut Hazards) {
        if self.last_claim_t.is_some_and(|last| t - last <= 5_000_000) {
            hazards.hit(Hazard::ConcurrentClaims);
        }
        self.last_claim_t = Some(t);
    }

    /// A delivery: claims close together, or a tool's answer after the holder's lease ended.
    #[inline(always)]
    pub(crate) fn delivered<'a>(
        &mut self,
        cx: &impl Fn() -> Cx<'a>,
        e: &Ev,
        msg: &Msg,
        out: &mut Judgement,
    ) {
        match *msg {
            Msg::Claim { .. } => self.claim_arrived(e.t, &mut out.hazards),
            Msg::ClaimGranted { job, token, .. } => {
                // Bounded by the run's grants: one entry per worker node at most.
                self.granted.retain(|g| g.0 != e.node);
                self.granted.push((e.node, job, token));
            }
            Msg::HeartbeatRejected { job, token, .. } | Msg::CommitRejected { job, token, .. } => {
                self.granted
                    .retain(|g| !(g.0 == e.node && g.1 == job && g.2 == token));
            }
            Msg::ToolResponse { job, .. } => {
                let cx = cx();
                if let Some((j, token)) = holding(&cx, &self.granted, e.node) {
                    if j == job && cx.lease_over(job, token, e.t) {
                        out.hit(Hazard::LateAnswerAfterExpiry);
                    }
                }
            }
            Msg::ClaimEmpty { .. }
            | Msg::Heartbeat { .. }
            | Msg::HeartbeatOk { .. }
            | Msg::Commit { .. }
            | Msg::CommitAccepted { .. }
            | Msg::ToolRequest { .. }
            | Msg::Effect { .. }
            | Msg::Checkpoint { .. }
            | Msg::CheckpointAck { .. }
            | Msg::EffectStatus { .. }
            | Msg::EffectStatusReply { .. }
            | Msg::ToolStatus { .. }
            | Msg::Operator { .. }
            | Msg::OperatorDone { .. }
            | Msg::EffectAck { .. } => {}
        }
    }
}
