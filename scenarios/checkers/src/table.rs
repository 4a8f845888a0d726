//! The reference lease table: the coordinator's job table as the reference protocol keeps it,
//! advanced event by event from the coordinator's journal. The checkers judge each event against
//! the table as it stood just before it.
//!
//! The table follows the reference, not the coordinator under test: a renewal the reference
//! would refuse (I4) is not applied, so a commit made under such an extension is still judged
//! against the lease the reference would have let expire (I1). It keeps only the current
//! scalar facts of each job; what was ever granted or revoked is in the
//! [`History`](crate::history::History).
//!
//! A decision the coordinator answered without journaling it (see `wire.rs`) advances the table
//! as its journal note would have, with what the message tells: no operator's epoch, and no
//! job state after an accepted failure (re-queued or failed for good, the message does not say).

use crate::hazard::{Hazard, Hazards};
use crate::wire::Said;
use crate::{Ev, NearIds, JOBS_LAID_OUT};
use leasesim_protocol::{Event, JobId, JobState, OperatorAction, Token, WorkerName};
use leasesim_sim::Clock;
use std::collections::BTreeMap;

/// A job's row in the reference table.
#[derive(Copy, Clone, Debug)]
pub(crate) struct Row {
    /// The highest token granted (or epoch set by an operator).
    pub token: Token,
    /// The current holder, while a lease is live.
    pub holder: Option<WorkerName>,
    /// Lease expiry on the coordinator's clock while a lease is live.
    pub valid_until: Option<u64>,
    /// True time of the last grant or renewal of the current token.
    pub confirmed_t: u64,
    /// Length of the current lease, as the coordinator applied it.
    pub lease_ns: u64,
    /// The job's state, once the coordinator has said anything of it.
    pub state: Option<JobState>,
    /// Whether a result was ever accepted with state `succeeded`.
    pub succeeded: bool,
    /// Renewals the reference applied to the current token.
    pub renewals: u32,
    /// The highest token whose lease an operator ended.
    pub revoked: Option<Token>,
    /// Whether the job may have ended for good without the table knowing: the coordinator
    /// answered a failure's commit without journaling the job's state after it.
    pub maybe_ended: bool,
}

impl Row {
    /// The row of a job the table never heard of, and the one a new job starts from
    /// (`Row::default()`): a constant, so that a reader can borrow it.
    const EMPTY: Row = Row {
        token: Token(0),
        holder: None,
        valid_until: None,
        confirmed_t: 0,
        lease_ns: 0,
        state: None,
        succeeded: false,
        renewals: 0,
        revoked: None,
        maybe_ended: false,
    };
}

impl Default for Row {
    fn default() -> Row {
        Row::EMPTY
    }
}

/// Why the reference would refuse a renewal (I4).
pub(crate) enum RenewalFault {
    /// The job is not running.
    NotRunning(Option<JobState>),
    /// Another worker (or nobody) holds it.
    NotHolder(Option<WorkerName>),
    /// The token is not the current one.
    StaleToken(Token),
    /// The lease had expired by the coordinator's clock.
    Expired,
}

/// The reference table of every job. A job never named has the default row, which is what
/// the reference's table says of it too: no token, no holder, no lease, no state.
#[derive(Default)]
pub(crate) struct Table {
    /// The job ids whose row is found by position ([`NearIds`]); the rest are in `far`.
    near_ids: NearIds,
    near: Vec<Row>,
    far: BTreeMap<JobId, Row>,
    /// Every (job, token) granted, from the journal or from the grant's message alone.
    granted: std::collections::BTreeSet<(JobId, Token)>,
    /// Every commit the coordinator answered as accepted only by its message (job, token,
    /// the worker answered).
    accepted_said: std::collections::BTreeSet<(JobId, Token, WorkerName)>,
}

impl Table {
    /// Empties the table for a run of `jobs` jobs, keeping its storage for the next run. The
    /// rows of the first jobs are laid out at once (see `JOBS_LAID_OUT`), each the default row
    /// an unnamed job has.
    pub fn clear(&mut self, jobs: usize) {
        self.near_ids = NearIds::for_jobs(jobs);
        self.near.clear();
        self.near.resize(jobs.min(JOBS_LAID_OUT), Row::default());
        if !self.far.is_empty() {
            self.far.clear();
        }
        self.granted.clear();
        self.accepted_said.clear();
    }

    /// Whether the coordinator's message accepted (job, token)'s commit from `worker` (one it
    /// did not journal; the history holds the journaled ones).
    pub fn accepted_by_message(&self, job: JobId, token: Token, worker: WorkerName) -> bool {
        self.accepted_said.contains(&(job, token, worker))
    }

    /// Whether (job, token) was ever granted, as the coordinator journaled it or as its
    /// message said.
    pub fn was_granted(&self, job: JobId, token: Token) -> bool {
        self.granted.contains(&(job, token))
    }

    /// A job's row, read in place: a checker reads a field or two of it, not the whole row.
    pub fn row(&self, job: JobId) -> &Row {
        match self.near.get(job.0 as usize) {
            Some(m) => m,
            None if self.near_ids.holds(job.0) => &Row::EMPTY,
            None => self.far.get(&job).unwrap_or(&Row::EMPTY),
        }
    }

    #[inline]
    fn row_mut(&mut self, job: JobId) -> &mut Row {
        // A row the run made already: found by position, without a call.
        let i = job.0 as usize;
        if i < self.near.len() {
            return &mut self.near[i];
        }
        self.new_row(job)
    }

    /// The row of a job the run named first here (or of a far job id).
    #[inline(never)]
    fn new_row(&mut self, job: JobId) -> &mut Row {
        if !self.near_ids.holds(job.0) {
            return self.far.entry(job).or_default();
        }
        let i = job.0 as usize;
        if self.near.len() <= i {
            self.near.resize(i + 1, Row::default());
        }
        &mut self.near[i]
    }

    /// Whether the lease of (job, token) is over at true time `t`: another token is current,
    /// or the current one has no live lease or expires by `t`.
    pub fn lease_over(&self, clock: &Clock, job: JobId, token: Token, t: u64) -> bool {
        let m = self.row(job);
        m.token != token || expiry_true(clock, m).is_none_or(|x| x <= t)
    }

    /// Why the reference would refuse `worker`'s renewal of (job, token) at coordinator time
    /// `local`, if it would.
    pub fn renewal_fault(
        &self,
        job: JobId,
        worker: WorkerName,
        token: Token,
        local: u64,
    ) -> Option<RenewalFault> {
        let m = self.row(job);
        if m.state != Some(JobState::Running) {
            Some(RenewalFault::NotRunning(m.state))
        } else if m.holder != Some(worker) {
            Some(RenewalFault::NotHolder(m.holder))
        } else if m.token != token {
            Some(RenewalFault::StaleToken(m.token))
        } else if m.valid_until.is_none_or(|u| u <= local) {
            Some(RenewalFault::Expired)
        } else {
            None
        }
    }

    /// Advances the table past one of the coordinator's journal events (the others leave it
    /// as it is).
    #[inline(always)]
    pub fn note(&mut self, e: &Ev, note: &Event, hazards: &mut Hazards) {
        match *note {
            Event::LeaseGranted {
                job,
                holder,
                token,
                lease_until,
                ..
            } => self.grant(job, holder, token, lease_until, e.t, e.local),
            Event::LeaseRenewed {
                job,
                worker,
                token,
                lease_until,
            }
            | Event::CheckpointSaved {
                job,
                worker,
                token,
                lease_until,
                ..
            } => self.renew(job, worker, token, lease_until, e, hazards),
            Event::LeaseRevoked {
                job,
                token,
                epoch,
                action,
                ..
            } => self.revoke(job, token, epoch, action),
            Event::ResultAccepted { job, state, .. } => self.decide(job, state),
            Event::RenewalCapReached { job, .. } => self.cap(job),
            // A refused heartbeat or commit, or a failure, changes no live lease here (the
            // coordinator's refusal is its own; a failed job's lease ended with its decision).
            Event::ResultRejected { .. }
            | Event::HeartbeatRefused { .. }
            | Event::JobFailed { .. }
            | Event::AdmissionDeferred { .. }
            | Event::RetryScheduled { .. }
            | Event::EffectReconciled { .. }
            | Event::HumanReviewRequested { .. }
            | Event::ToolStatusQueried { .. }
            | Event::EffectUnauthorized { .. }
            | Event::EffectApplied { .. }
            | Event::EffectDuplicate { .. }
            | Event::EffectFenced { .. }
            | Event::EffectStarted { .. }
            | Event::EffectAnswered { .. }
            | Event::JobClaimed { .. }
            | Event::HeartbeatOk { .. }
            | Event::HeartbeatLost { .. }
            | Event::JeopardyEntered { .. }
            | Event::JeopardyExited { .. }
            | Event::ToolRequestStarted { .. }
            | Event::ToolAnswered { .. }
            | Event::ToolTimedOut { .. }
            | Event::StageDeadlineExceeded { .. }
            | Event::ToolFaulted { .. }
            | Event::OperatorActed { .. }
            | Event::CommitSent { .. }
            | Event::SuccessClaimed { .. }
            | Event::FailureAcknowledged { .. }
            | Event::CommitRefused { .. }
            | Event::Store(_)
            | Event::CommitAbandoned { .. } => {}
        }
    }

    /// A grant at true time `t`, coordinator time `local`.
    fn grant(
        &mut self,
        job: JobId,
        holder: WorkerName,
        token: Token,
        lease_until: u64,
        t: u64,
        local: u64,
    ) {
        self.granted.insert((job, token));
        let m = self.row_mut(job);
        if token > m.token {
            m.token = token;
            m.renewals = 0;
        }
        m.holder = Some(holder);
        m.valid_until = Some(lease_until);
        m.confirmed_t = t;
        m.lease_ns = lease_until.saturating_sub(local);
        m.state = Some(JobState::Running);
        m.maybe_ended = false;
    }

    /// A decision the coordinator answered without journaling it: applied as its note would be.
    pub fn said(&mut self, e: &Ev, said: &Said, hazards: &mut Hazards) {
        match *said {
            Said::Grant {
                job,
                token,
                holder,
                lease_until,
            } => self.grant(job, holder, token, lease_until, e.t, e.local),
            Said::Renewal {
                job,
                token,
                worker,
                lease_until,
            } => self.renew(job, worker, token, lease_until, e, hazards),
            Said::Accepted {
                job,
                token,
                worker,
                success,
            } => {
                self.accepted_said.insert((job, token, worker));
                if success == Some(true) {
                    self.decide(job, JobState::Succeeded);
                } else {
                    // Re-queued or failed for good: the answer does not say. Taken as
                    // re-queued (a later grant is no violation), and possibly ended (no
                    // liveness finding for a job that may have failed).
                    self.decide(job, JobState::Queued);
                    self.row_mut(job).maybe_ended = true;
                }
            }
            Said::Operated {
                job,
                action: OperatorAction::HumanResolves,
            } => self.decide(job, JobState::Succeeded),
            Said::Operated { job, action } => {
                // The new epoch is not in the answer: the lease ends, its token stays current
                // until the next grant.
                let token = self.row(job).token;
                self.revoke(job, token, token, action);
            }
            Said::Admitted { .. } | Said::Effect { .. } => {}
        }
    }

    /// A renewal or checkpoint; applied only if the reference would have made it. A holder
    /// that keeps one lease through ten renewals is a hazard reached.
    fn renew(
        &mut self,
        job: JobId,
        worker: WorkerName,
        token: Token,
        lease_until: u64,
        e: &Ev,
        hazards: &mut Hazards,
    ) {
        if self.renewal_fault(job, worker, token, e.local).is_some() {
            return;
        }
        let m = self.row_mut(job);
        m.valid_until = Some(lease_until);
        m.confirmed_t = e.t;
        m.renewals += 1;
        if m.renewals == 10 {
            hazards.hit(Hazard::LongHold);
        }
    }

    /// An operator ended the lease of (job, `token`) with `epoch`.
    fn revoke(&mut self, job: JobId, token: Token, epoch: Token, action: OperatorAction) {
        let m = self.row_mut(job);
        m.revoked = Some(m.revoked.map_or(token, |r| r.max(token)));
        if !matches!(
            action,
            OperatorAction::Takeover { .. } | OperatorAction::HandToHuman
        ) && epoch > m.token
        {
            // A takeover's (or a handoff's) new epoch arrives with the grant that follows.
            m.token = epoch;
            m.renewals = 0;
        }
        m.valid_until = None;
        m.holder = None;
        m.state = Some(match action {
            OperatorAction::Revoke => JobState::Queued,
            OperatorAction::Cancel => JobState::Cancelled,
            // The grant that follows sets the holder and the lease.
            OperatorAction::Takeover { .. } | OperatorAction::HandToHuman => JobState::Queued,
            OperatorAction::HumanResolves => JobState::Running,
        });
    }

    /// The coordinator accepted a result; the job is now in `state`.
    fn decide(&mut self, job: JobId, state: JobState) {
        let m = self.row_mut(job);
        m.maybe_ended = false;
        m.valid_until = None;
        m.state = Some(state);
        if state == JobState::Succeeded {
            m.succeeded = true;
        }
        if state == JobState::Queued {
            m.holder = None;
        }
    }

    /// The job reached its renewal cap and failed (P7).
    fn cap(&mut self, job: JobId) {
        let m = self.row_mut(job);
        m.valid_until = None;
        m.state = Some(JobState::Failed);
    }
}

/// True expiry of a job's current lease, if it has one.
pub(crate) fn expiry_true(clock: &Clock, m: &Row) -> Option<u64> {
    m.valid_until.map(|until| coordinator_true(clock, until))
}

/// The first true time at which the coordinator's clock reads `local`: `Clock::true_at(local,
/// 0)`, without its 128-bit division for the clock every setup gives the arbiter (an offset
/// from true time 0, rate 1), which the checkers ask about at every effect and grant.
pub(crate) fn coordinator_true(clock: &Clock, local: u64) -> u64 {
    if clock.drift_ppm == 0 && clock.anchor_true == 0 {
        local.saturating_sub(clock.anchor_local)
    } else {
        clock.true_at(local, 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A job's row is the same whether it is found by position or through the map: ids on
    /// both sides of the bound ([`crate::NearIds`]) for a run of 10 jobs, then of 100,000.
    #[test]
    fn rows_by_position_and_through_the_map_agree() {
        let ids = [0u32, 9, 4_095, 4_096, 70_000, u32::MAX];
        let mut table = Table::default();
        for jobs in [10, 100_000] {
            table.clear(jobs);
            for &id in &ids {
                table.row_mut(JobId(id)).token = Token(u64::from(id) + 1);
            }
            for &id in &ids {
                assert_eq!(
                    table.row(JobId(id)).token,
                    Token(u64::from(id) + 1),
                    "{jobs} jobs"
                );
            }
            for unnamed in [1u32, 4_097, 80_000, u32::MAX - 1] {
                assert_eq!(
                    table.row(JobId(unnamed)).token,
                    Token::default(),
                    "{jobs} jobs"
                );
            }
        }
        // Emptied for the next run: no row is left.
        table.clear(10);
        assert!(ids
            .iter()
            .all(|&id| table.row(JobId(id)).token == Token::default()));
    }

    /// The row a job the table never heard of reads is the row a new job starts from.
    #[test]
    fn the_empty_row_is_the_default() {
        let table = Table::default();
        assert_eq!(
            format!("{:?}", table.row(JobId(7))),
            format!("{:?}", Row::default())
        );
    }

    #[test]
    fn the_coordinator_fast_path_is_true_at() {
        // A small deterministic generator: offsets, readings before and after them, rates.
        let mut x: u64 = 0x2545_f491_4f6c_dd1d;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for i in 0..100_000u64 {
            let drift = [0, 0, 0, 1, -1, 500, -500][(i % 7) as usize];
            let clock = Clock::new(next() % (1 << 40), drift);
            let local = match i % 3 {
                0 => next() % (1 << 41),
                1 => clock.anchor_local.saturating_sub(next() % 1000),
                _ => clock.anchor_local + next() % 1000,
            };
            assert_eq!(
                coordinator_true(&clock, local),
                clock.true_at(local, 0),
                "{clock:?} reading {local}"
            );
        }
    }
}
