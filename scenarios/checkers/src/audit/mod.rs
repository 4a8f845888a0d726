//! The audit: the checkers over a recorded journal instead of a simulated trace, so that the
//! same invariants judge a simulation and a real system's logs (`leasesim audit`).
//!
//! A real log has no true time: each node's lines carry its own clock only. The audit therefore
//! judges each decision on the clock of the node that made it, and nothing across nodes that
//! needs true time unless the user states a clock uncertainty:
//!
//! - on the coordinator's clock, what the coordinator decided: I1 (an accepted result of a stale
//!   token or an expired lease), I3 (tokens and valid leases), I4 (extensions), I8 (takeovers
//!   with their reason and epoch). Its lines go through [`check`] as a trace of
//!   journal notes, so each finding is the sentence a simulated run prints.
//! - on each receiver's records, what it applied: I2 (a key applied twice, a fence below one it
//!   admitted), and I6 (an applied effect whose fence no grant in the coordinator's journal
//!   carried), through [`check`] the same way.
//! - on each holder's own records, I5 as far as its journal tells: an effect started in
//!   jeopardy or after it journaled the loss, a success claimed for a lease the coordinator's
//!   journal never accepted.
//! - with a clock uncertainty `U` (every node's clock within `U` of the coordinator's), I5
//!   across nodes: an effect started at a reading more than `U` past the coordinator's expiry
//!   of its lease, or more than `U` after the coordinator granted a higher token.
//!
//! What is not judged, and why, is listed in [`Audit::skipped`]; problems with the lines
//! themselves are the [`Journal`]'s. This module owns no format: [`crate::journal`] reads the
//! lines.

use crate::hazard::Hazards;
use crate::journal::{Journal, Place, Record};
use crate::node::{NodeInfo, Role};
use crate::{check, fmt_ns, Judgement, World};
use leasesim_protocol::{Event, Finding, IdemKey, Invariant, JobId, Msg, Token, WorkerName};
use leasesim_sim::{Clock, End, EventKind, NodeId, TraceEvent};
use std::collections::{BTreeMap, BTreeSet};

/// What the audit is told besides the journal.
#[derive(Copy, Clone, Debug, Default)]
pub struct Options {
    /// The largest difference between any node's clock and the coordinator's at one instant,
    /// if the user vouches for one: judgements across nodes are made within it, else skipped.
    pub clock_uncertainty_ns: Option<u64>,
}

/// One finding of the audit and the lines that prove it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AuditFinding {
    /// The finding: `t_ns` is the reading of `node`'s own clock (a node of the journal, by
    /// index), `message` the sentence a simulated run prints for it.
    pub finding: Finding,
    /// The lines that prove it: the line of the decision first, then what made it wrong.
    pub lines: Vec<Place>,
    /// How the judgement was weakened, if it was (a clock uncertainty it rests on).
    pub within: Option<String>,
}

/// The audit's verdict material.
#[derive(Clone, Debug, Default)]
pub struct Audit {
    /// Findings: the coordinator's, then the receivers', then the holders', each in its node's
    /// order.
    pub findings: Vec<AuditFinding>,
    /// What was judged, one sentence each.
    pub judged: Vec<String>,
    /// What was not judged or only weakly, and why, one sentence each.
    pub skipped: Vec<String>,
    /// Hazards reached (the checkers' counts over the lines judged).
    pub hazards: Hazards,
}

/// The invariants a coordinator's journal decides.
const COORDINATOR: [Invariant; 4] = [
    Invariant::NoStaleCommit,
    Invariant::SingleValidLease,
    Invariant::NoStaleExtension,
    Invariant::RecordedTakeover,
];

/// Judges a journal.
pub fn audit(j: &Journal, o: &Options) -> Audit {
    let mut a = Audit::default();
    let coordinators: Vec<usize> = (0..j.nodes.len())
        .filter(|&n| j.nodes[n].role == Role::Coordinator)
        .collect();
    let coordinator = coordinators.first().copied();
    let receivers: Vec<usize> = (0..j.nodes.len())
        .filter(|&n| matches!(j.nodes[n].role, Role::Receiver { .. }))
        .collect();
    if coordinators.len() > 1 {
        a.skipped.push(format!(
            "{} nodes journal as the coordinator ({}): only {} is judged as the arbiter",
            coordinators.len(),
            coordinators
                .iter()
                .map(|&n| j.nodes[n].name.as_str())
                .collect::<Vec<_>>()
                .join(", "),
            j.nodes[coordinators[0]].name
        ));
    }
    judge_logs(j, coordinator, &receivers, &mut a);
    holders(j, coordinator, o, &mut a);
    missing(j, coordinator, &receivers, &mut a);
    a
}

/// The records of one node, in its order (a journal's records are grouped by node).
fn of(j: &Journal, node: usize) -> impl Iterator<Item = &Record> {
    let from = j.records.partition_point(|r| r.node < node);
    j.records[from..].iter().take_while(move |r| r.node == node)
}

/// Whether the audit reads an event, so a journal read for judgement alone keeps it
/// ([`crate::journal::Keep::Judged`]): every decision of the coordinator and every receipt of a
/// receiver (the checkers walk them all), and the acts of a holder that I5 judges.
pub fn reads(e: &Event) -> bool {
    match e {
        Event::LeaseGranted { .. }
        | Event::LeaseRenewed { .. }
        | Event::LeaseRevoked { .. }
        | Event::CheckpointSaved { .. }
        | Event::RenewalCapReached { .. }
        | Event::HeartbeatRefused { .. }
        | Event::ResultAccepted { .. }
        | Event::ResultRejected { .. }
        | Event::JobFailed { .. } => true,
        Event::HeartbeatLost { .. }
        | Event::CommitRefused { .. }
        | Event::JeopardyEntered { .. }
        | Event::JeopardyExited { .. }
        | Event::EffectStarted { .. }
        | Event::SuccessClaimed { .. } => true,
        e => is_receipt(e),
    }
}

/// The coordinator's and receivers' records through the checkers: one trace of journal notes,
/// the coordinator's first (every grant precedes every receiver's record, so "a fence no
/// grant carried" means none in the whole journal), each node's in its own order, the trace's
/// time being the record's position (so that a finding names its line) and its local time the
/// node's reading.
fn judge_logs(j: &Journal, coordinator: Option<usize>, receivers: &[usize], a: &mut Audit) {
    let mut order: Vec<&Record> = Vec::new();
    if let Some(c) = coordinator {
        order.extend(of(j, c));
    }
    for &r in receivers {
        order.extend(of(j, r).filter(|r| is_receipt(&r.event)));
    }
    let judged = check_records(j, &order);
    a.hazards = judged.hazards;
    for f in judged.findings {
        let Some(r) = order.get(f.t_ns as usize) else {
            continue;
        };
        if !kept(j, coordinator, &f, r) {
            continue;
        }
        let mut lines = vec![r.at];
        lines.extend(proof(&order[..f.t_ns as usize], r));
        a.findings.push(AuditFinding {
            finding: Finding {
                t_ns: r.local_ns,
                node: r.node as NodeId,
                ..f
            },
            lines,
            within: None,
        });
    }
    logs_judged(j, coordinator, receivers, a);
}

/// The checkers' judgement of `order`, the records as one trace of journal notes.
fn check_records(j: &Journal, order: &[&Record]) -> Judgement {
    let trace: Vec<TraceEvent<Msg, Event>> = order
        .iter()
        .enumerate()
        .map(|(i, r)| TraceEvent {
            t: i as u64,
            node: r.node as NodeId,
            local: r.local_ns,
            kind: EventKind::Note { note: r.event },
        })
        .collect();
    let jobs: BTreeSet<JobId> = order.iter().filter_map(|r| job_of(&r.event)).collect();
    let world = World {
        nodes: &j.nodes,
        coordinator_clock: Clock::new(0, 0),
        clocks: &[],
        op_names: &j.ops,
        jobs: jobs.len(),
        latency_max_ns: 0,
        liveness_deadline_ns: None,
        end: End::Idle,
        end_ns: trace.len() as u64,
        messages: false,
    };
    // One judgement per audit: its storage is not kept for another.
    check(&world, &trace, &mut crate::Scratch::default())
}

/// Whether a finding at record `r` stands on a journal: an invariant judged at its node's
/// kind, and not a fence a snapshot's latest token may account for.
fn kept(j: &Journal, coordinator: Option<usize>, f: &Finding, r: &Record) -> bool {
    let from_coordinator = Some(r.node) == coordinator;
    let kept = if from_coordinator {
        COORDINATOR.contains(&f.invariant)
    } else {
        matches!(
            f.invariant,
            Invariant::NoDoubleEffect | Invariant::NothingLost
        )
    };
    if !kept {
        return false;
    }
    // A snapshot lists each job's latest token only; the earlier ones were granted too.
    if let (Some(c), Event::EffectApplied { key, fence, .. }) = (coordinator, r.event) {
        if f.invariant == Invariant::NothingLost
            && j.snapshot[c]
            && latest_token(j, c, key.job).is_some_and(|t| fence <= t)
        {
            return false;
        }
    }
    true
}

/// What the judgement of the coordinator's and receivers' records covered, and what it could
/// not.
fn logs_judged(j: &Journal, coordinator: Option<usize>, receivers: &[usize], a: &mut Audit) {
    if let Some(c) = coordinator.filter(|&c| j.snapshot[c]) {
        a.skipped.push(format!(
            "{}'s journal is a snapshot (each job's latest grant only): {} traces a fence to any token up to the job's latest (tokens rise by one a grant); the coordinator's earlier decisions are not judged",
            j.nodes[c].name,
            Invariant::NothingLost.label()
        ));
    }
    if let Some(c) = coordinator {
        a.judged.push(format!(
            "{}: on {}'s clock, over its {} lines",
            COORDINATOR.map(Invariant::label).join(", "),
            j.nodes[c].name,
            of(j, c).count()
        ));
    }
    for &r in receivers {
        let n = &j.nodes[r];
        a.judged.push(format!(
            "{}: on {}'s records, over its {} lines{}",
            Invariant::NoDoubleEffect.label(),
            n.name,
            of(j, r).count(),
            if coordinator.is_some() {
                format!(
                    "; {}: every effect it applied against the grants in the coordinator's journal",
                    Invariant::NothingLost.label()
                )
            } else {
                String::new()
            }
        ));
        if let Role::Receiver {
            supports_fence: false,
            ..
        } = n.role
        {
            a.skipped.push(format!(
                "{} fence check at {}: not judged as a violation, as its journal does not say it checks fences (no header declaring `fences`, no effect_fenced line); a lower fence it applied is counted as a hazard",
                Invariant::NoDoubleEffect.label(),
                n.name
            ));
        }
    }
}

/// The highest token the coordinator's journal grants for a job.
fn latest_token(j: &Journal, coordinator: usize, job: JobId) -> Option<Token> {
    of(j, coordinator)
        .filter_map(|r| match r.event {
            Event::LeaseGranted { job: g, token, .. } if g == job => Some(token),
            _ => None,
        })
        .max()
}

fn is_receipt(e: &Event) -> bool {
    matches!(
        e,
        Event::EffectApplied { .. }
            | Event::EffectDuplicate { .. }
            | Event::EffectUnauthorized { .. }
            | Event::EffectFenced { .. }
    )
}

/// The job an event is about.
fn job_of(e: &Event) -> Option<JobId> {
    Some(match *e {
        Event::LeaseGranted { job, .. }
        | Event::LeaseRenewed { job, .. }
        | Event::LeaseRevoked { job, .. }
        | Event::CheckpointSaved { job, .. }
        | Event::RenewalCapReached { job, .. }
        | Event::HeartbeatRefused { job, .. }
        | Event::ResultAccepted { job, .. }
        | Event::ResultRejected { job, .. }
        | Event::JobFailed { job, .. } => job,
        Event::EffectApplied { key, .. }
        | Event::EffectDuplicate { key, .. }
        | Event::EffectUnauthorized { key, .. }
        | Event::EffectFenced { key, .. } => key.job,
        _ => return None,
    })
}

/// The earlier lines that make a decision wrong: for a coordinator's, the two latest grants,
/// revocations or acceptances of its job; for a receiver's, the latest admission of a higher
/// fence for the entity and the first application of the key.
fn proof(before: &[&Record], r: &Record) -> Vec<Place> {
    let mut out = Vec::new();
    match r.event {
        Event::EffectApplied { entity, key, fence }
        | Event::EffectDuplicate { entity, key, fence }
        | Event::EffectUnauthorized { entity, key, fence }
        | Event::EffectFenced {
            entity, key, fence, ..
        } => {
            let mine = || before.iter().filter(|b| b.node == r.node);
            if let Some(b) = mine()
                .rfind(|b| receipt(&b.event).is_some_and(|(e, _, f)| e == entity && f > fence))
            {
                out.push(b.at);
            }
            if let Some(b) = mine().find(|b| {
                matches!(b.event, Event::EffectApplied { key: k, .. } if k.job == key.job && k.op == key.op)
            }) {
                if !out.contains(&b.at) {
                    out.push(b.at);
                }
            }
        }
        _ => {
            if let Some(job) = job_of(&r.event) {
                out.extend(
                    before
                        .iter()
                        .rev()
                        .filter(|b| b.node == r.node && job_of(&b.event) == Some(job))
                        .filter(|b| {
                            matches!(
                                b.event,
                                Event::LeaseGranted { .. }
                                    | Event::LeaseRevoked { .. }
                                    | Event::ResultAccepted { .. }
                            )
                        })
                        .take(2)
                        .map(|b| b.at),
                );
            }
        }
    }
    out
}

fn receipt(e: &Event) -> Option<(leasesim_protocol::EntityId, IdemKey, Token)> {
    match *e {
        Event::EffectApplied { entity, key, fence }
        | Event::EffectDuplicate { entity, key, fence }
        | Event::EffectUnauthorized { entity, key, fence }
        | Event::EffectFenced {
            entity, key, fence, ..
        } => Some((entity, key, fence)),
        _ => None,
    }
}

/// A key as the checkers print it.
fn key_text(ops: &[String], key: IdemKey) -> String {
    match ops.get(key.op.0 as usize) {
        Some(op) if key.salt == 0 => format!("tool-job:{}:{op}", key.job.0),
        Some(op) => format!("tool-job:{}:{op}:{}", key.job.0, key.salt),
        None => key.to_string(),
    }
}

/// What the coordinator's journal says of one lease (job, token).
#[derive(Default)]
struct Lease {
    /// Each expiry it set for the token: (coordinator reading when set, expiry).
    expiries: Vec<(u64, u64)>,
    /// Holders whose result it accepted.
    accepted: BTreeSet<WorkerName>,
}

/// What the coordinator's journal says of every lease, read once for all the holders.
#[derive(Default)]
struct Granted {
    /// Each lease (job, token).
    leases: BTreeMap<(JobId, Token), Lease>,
    /// Per job: (coordinator reading, token, line) of each grant.
    grants: BTreeMap<JobId, Vec<(u64, Token, Place)>>,
    /// Per job: (coordinator reading, token) of each revocation.
    revoked: BTreeMap<JobId, Vec<(u64, Token)>>,
}

impl Granted {
    /// The leases of coordinator `c`'s journal.
    fn read(j: &Journal, c: usize) -> Granted {
        let mut g = Granted::default();
        for r in of(j, c) {
            match r.event {
                Event::LeaseGranted {
                    job,
                    token,
                    lease_until,
                    ..
                } => {
                    g.lease(job, token).expiries.push((r.local_ns, lease_until));
                    g.grants
                        .entry(job)
                        .or_default()
                        .push((r.local_ns, token, r.at));
                }
                Event::LeaseRenewed {
                    job,
                    token,
                    lease_until,
                    ..
                }
                | Event::CheckpointSaved {
                    job,
                    token,
                    lease_until,
                    ..
                } => g.lease(job, token).expiries.push((r.local_ns, lease_until)),
                Event::ResultAccepted {
                    job, worker, token, ..
                } => {
                    g.lease(job, token).accepted.insert(worker);
                }
                Event::LeaseRevoked { job, token, .. } => {
                    g.revoked.entry(job).or_default().push((r.local_ns, token))
                }
                _ => {}
            }
        }
        g
    }

    fn lease(&mut self, job: JobId, token: Token) -> &mut Lease {
        self.leases.entry((job, token)).or_default()
    }

    /// I5 across nodes for an effect `what` (its holder and key) that a holder started under
    /// (job, token) at `t` on its clock, on clocks within `u` of the coordinator's: the finding
    /// and the grant's line when a higher token had surely been granted, or the lease had
    /// surely expired, and no revocation may explain it.
    fn past_lease(
        &self,
        what: &str,
        (job, token): (JobId, Token),
        t: u64,
        u: u64,
    ) -> Option<(String, Vec<Place>)> {
        // Surely before the effect: set at a coordinator reading below t - U.
        let surely = |c: u64| c.saturating_add(u) < t;
        let was_revoked = |tok: Token| {
            self.revoked.get(&job).is_some_and(|v| {
                v.iter()
                    .any(|&(c, rt)| rt >= tok && c <= t.saturating_add(u))
            })
        };
        let higher = self.grants.get(&job).and_then(|g| {
            g.iter()
                .filter(|&&(c, tok, _)| tok > token && surely(c))
                .max_by_key(|&&(_, tok, _)| tok)
        });
        if let Some(&(_, newer, at)) = higher {
            return (!was_revoked(token)).then(|| {
                (
                    format!("{what} believing it held token {token} while token {newer} had been granted"),
                    vec![at],
                )
            });
        }
        let l = self.leases.get(&(job, token))?;
        // Every expiry the coordinator may have set before the effect.
        let until = l
            .expiries
            .iter()
            .filter(|&&(c, _)| c <= t.saturating_add(u))
            .map(|&(_, until)| until)
            .max()?;
        if !surely(until) || was_revoked(token) {
            return None;
        }
        let at = self
            .grants
            .get(&job)
            .and_then(|g| g.iter().find(|g| g.1 == token))
            .map(|g| g.2);
        Some((
            format!("{what} with token {token} after the coordinator's lease had expired"),
            at.into_iter().collect(),
        ))
    }
}

/// I5 from each holder's own records, and across nodes within a clock uncertainty.
fn holders(j: &Journal, coordinator: Option<usize>, o: &Options, a: &mut Audit) {
    let granted = coordinator.map_or_else(Granted::default, |c| Granted::read(j, c));
    let workers: Vec<usize> = (0..j.nodes.len())
        .filter(|&n| matches!(j.nodes[n].role, Role::Worker { .. }))
        .collect();
    for &w in &workers {
        holder(j, w, coordinator, o, &granted, a);
    }
    if !workers.is_empty() {
        holders_judged(j, coordinator, o, a);
    }
    a.skipped.push(format!(
        "{}: a refusal the coordinator sent without journaling it, and a loss a worker was told of but did not journal, are not judged: a journal holds no messages",
        Invariant::NothingLost.label()
    ));
    a.skipped.push(format!(
        "{}: an effect issued while another attempt of its job ran (a key stable across attempts) is not judged: it needs the workers' order in true time",
        Invariant::NoDoubleEffect.label()
    ));
    a.skipped.push(format!(
        "{}: not judged, as it needs true time and when the faults healed",
        Invariant::Liveness.label()
    ));
}

/// What a holder's own records said of its leases so far.
#[derive(Default)]
struct Told {
    /// (job, token) -> the line that journaled the loss.
    lost: BTreeMap<(JobId, Token), Place>,
    /// (job, token) -> the line that entered jeopardy, while in it.
    jeopardy: BTreeMap<(JobId, Token), Place>,
}

impl Told {
    /// Takes in the holder's record `r`: a loss it learned, jeopardy entered or left.
    fn note(&mut self, r: &Record) {
        match r.event {
            Event::HeartbeatLost { job, token } | Event::CommitRefused { job, token } => {
                self.lost.entry((job, token)).or_insert(r.at);
            }
            Event::JeopardyEntered { job, token, .. } => {
                self.jeopardy.insert((job, token), r.at);
            }
            Event::JeopardyExited { job, token } => {
                self.jeopardy.remove(&(job, token));
            }
            _ => {}
        }
    }

    /// An effect `what` (its holder and key) started under `lease` while in jeopardy, or after
    /// the holder journaled the lease's loss: the finding and the line that shows it.
    fn effect(
        &self,
        what: &str,
        lease: (JobId, Token),
        in_jeopardy: bool,
    ) -> Option<(String, Vec<Place>)> {
        let token = lease.1;
        if in_jeopardy {
            let why = self.jeopardy.get(&lease).copied().into_iter().collect();
            return Some((format!("{what} with token {token} while in jeopardy"), why));
        }
        let &at = self.lost.get(&lease)?;
        Some((
            format!("{what} with token {token} after it learned the lease was lost"),
            vec![at],
        ))
    }
}

/// I5 on worker `w`'s own records: an effect started in jeopardy, after it journaled the loss,
/// or (within a clock uncertainty) past its lease; a success the coordinator never accepted.
fn holder(
    j: &Journal,
    w: usize,
    coordinator: Option<usize>,
    o: &Options,
    granted: &Granted,
    a: &mut Audit,
) {
    let NodeInfo {
        name: node_name,
        role: Role::Worker { name, .. },
    } = &j.nodes[w]
    else {
        return;
    };
    let mut told = Told::default();
    for r in of(j, w) {
        told.note(r);
        let found = match r.event {
            Event::EffectStarted {
                job,
                token,
                key,
                in_jeopardy,
                ..
            } => {
                let what = format!("{node_name} started {}", key_text(&j.ops, key));
                let lease = (job, token);
                let here = told.effect(&what, lease, in_jeopardy);
                here.map(|(message, lines)| (message, lines, None))
                    .or_else(|| {
                        let u = o.clock_uncertainty_ns.filter(|_| coordinator.is_some())?;
                        let within =
                            format!("judged on clocks within {} of the coordinator's", fmt_ns(u));
                        granted
                            .past_lease(&what, lease, r.local_ns, u)
                            .map(|(message, lines)| (message, lines, Some(within)))
                    })
            }
            // A snapshot lists no acceptance: it cannot say one was never made.
            Event::SuccessClaimed { job, token } if coordinator.is_some_and(|c| !j.snapshot[c]) => {
                let accepted = granted
                    .leases
                    .get(&(job, token))
                    .is_some_and(|l| l.accepted.contains(name));
                (!accepted).then(|| {
                    (
                        format!("{node_name} claimed success for {job} with token {token} that the coordinator never accepted"),
                        Vec::new(),
                        None,
                    )
                })
            }
            _ => None,
        };
        if let Some(found) = found {
            a.quiescent(w, r, found);
        }
    }
}

impl Audit {
    /// A finding of I5 on worker `w`'s record `r`: its message, the lines that show it after
    /// `r`'s own, and the bound it was judged within, if any.
    fn quiescent(
        &mut self,
        w: usize,
        r: &Record,
        (message, mut lines, within): (String, Vec<Place>, Option<String>),
    ) {
        lines.insert(0, r.at);
        self.findings.push(AuditFinding {
            finding: Finding {
                invariant: Invariant::QuiescentHolder,
                t_ns: r.local_ns,
                node: w as NodeId,
                message,
            },
            lines,
            within,
        });
    }
}

/// What the holders' judgement covered, and what it could not.
fn holders_judged(j: &Journal, coordinator: Option<usize>, o: &Options, a: &mut Audit) {
    a.judged.push(format!(
        "{}: on each holder's own records (an effect started in jeopardy or after it journaled the loss{})",
        Invariant::QuiescentHolder.label(),
        if coordinator.is_some_and(|c| !j.snapshot[c]) {
            "; a success claimed that the coordinator's journal never accepted"
        } else {
            ""
        }
    ));
    match (o.clock_uncertainty_ns, coordinator) {
        (Some(u), Some(_)) => a.skipped.push(format!(
            "{} across nodes: weakened, judged only where the order holds for every clock within {} of the coordinator's (an effect more than that past the lease's expiry, or after a higher grant); a simulated run judges it in true time",
            Invariant::QuiescentHolder.label(),
            fmt_ns(u)
        )),
        _ => a.skipped.push(format!(
            "{} across nodes: not judged, as a holder's acts and the coordinator's grants are read on different clocks (give --clock-uncertainty to judge them within a bound)",
            Invariant::QuiescentHolder.label()
        )),
    }
    a.skipped.push(format!(
        "{} belief-within-grant: not judged, as a holder's stated deadline is held against the grant in true time, through its clock's offset and rate, which a log does not give",
        Invariant::QuiescentHolder.label()
    ));
}

/// Nodes the journal names but whose lines are not there.
fn missing(j: &Journal, coordinator: Option<usize>, receivers: &[usize], a: &mut Audit) {
    if coordinator.is_none() {
        a.skipped.push(format!(
            "no coordinator's journal: {} and the tracing of effects to leases ({}) are not judged",
            COORDINATOR.map(Invariant::label).join(", "),
            Invariant::NothingLost.label()
        ));
    }
    if receivers.is_empty() {
        a.skipped.push(format!(
            "no receiver's journal: {} is not judged",
            Invariant::NoDoubleEffect.label()
        ));
    }
    let journaled: BTreeSet<WorkerName> = j
        .nodes
        .iter()
        .filter_map(|n| match n.role {
            Role::Worker { name, .. } => Some(name),
            _ => None,
        })
        .collect();
    let mut named: BTreeMap<WorkerName, Place> = BTreeMap::new();
    if let Some(c) = coordinator {
        for r in of(j, c) {
            if let Event::LeaseGranted { holder, .. } = r.event {
                if holder != leasesim_protocol::HUMAN {
                    named.entry(holder).or_insert(r.at);
                }
            }
        }
    }
    for (w, at) in named {
        if !journaled.contains(&w) {
            a.skipped.push(format!(
                "no journal of {w} (granted a lease at {}): its acts are not judged",
                j.place(at)
            ));
        }
    }
    let indexes: BTreeSet<u8> = receivers
        .iter()
        .filter_map(|&r| match j.nodes[r].role {
            Role::Receiver { index, .. } => Some(index),
            _ => None,
        })
        .collect();
    let mut asked: BTreeMap<u8, Place> = BTreeMap::new();
    for r in &j.records {
        if let Event::EffectStarted { receiver, .. } = r.event {
            asked.entry(receiver).or_insert(r.at);
        }
    }
    // Receivers' indexes are known only where headers declared every receiver.
    let all_declared = receivers.iter().all(|&r| j.declared[r]);
    for (i, at) in asked {
        if all_declared && !indexes.contains(&i) {
            a.skipped.push(format!(
                "no journal of receiver {i} (sent an effect at {}): what it applied is not judged",
                j.place(at)
            ));
        }
    }
}
