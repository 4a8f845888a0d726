//! The worker: claim, then for each job a heartbeat task beside the work, the work itself in a
//! stage deadline, and a conditional commit.
//!
//! Each job is an `Attempt`: the lease, what the worker believes about it (its deadline on
//! its own clock, shared by a `watch` channel), and the tasks that keep that belief: the
//! heartbeat, each renewal under way (awaited however late its answer comes, so no refusal
//! goes unseen), and a watcher that notes jeopardy. All of them end with the attempt.

use crate::store::{Action, EffectResult, Lease, LeaseStore, Note, Report, Settings, ToolResult};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;
use tokio::time::{self, Duration, Instant};

/// The bugs this worker can carry, for the tests that show leasesim catching them.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Bug {
    /// None: the worker as it should be.
    None,
    /// Renews between actions on the work's own task instead of on a task of its own, so a
    /// long tool call starves the renewals.
    RenewOnToolTask,
    /// Takes its deadline as `sent + lease - margin` on its own clock, with no allowance for
    /// that clock running slow.
    DeadlineWithoutDrift,
}

fn nanos(n: u64) -> Duration {
    Duration::from_nanos(n)
}

/// The latest instant on the worker's clock at which it may still act on a lease of
/// `lease_ns` asked for at `sent`: the lease shrunk by the clock's possible drift, less the
/// time it needs to stop.
fn deadline(s: &Settings, bug: Bug, sent: Instant, lease_ns: u64) -> Instant {
    let window = match bug {
        Bug::DeadlineWithoutDrift => lease_ns,
        _ => {
            let rho = u128::from(s.drift_ppm);
            (u128::from(lease_ns) * (1_000_000 - rho) / (1_000_000 + rho)) as u64
        }
    };
    let end = sent + nanos(window);
    end.checked_sub(nanos(s.stop_margin_ns)).unwrap_or(sent)
}

/// The deadline as the worker believes it: `None` once the store said the lease is gone.
type Belief = watch::Receiver<Option<Instant>>;

fn may_act(belief: &Belief) -> bool {
    matches!(*belief.borrow(), Some(d) if Instant::now() < d)
}

/// Resolves when the store has said the lease is gone.
async fn lease_gone(mut belief: Belief) {
    while belief.borrow_and_update().is_some() {
        if belief.changed().await.is_err() {
            return;
        }
    }
}

/// Waits until the worker may act: at once, or once a renewal confirms the lease again after
/// its deadline passed (jeopardy: it starts nothing meanwhile). `false` when the lease is gone.
async fn ready_to_act(mut belief: Belief) -> bool {
    loop {
        if may_act(&belief) {
            return true;
        }
        if belief.borrow_and_update().is_none() {
            return false;
        }
        if belief.changed().await.is_err() {
            return false;
        }
    }
}

/// One job, from its lease to its report: what its tasks share.
#[derive(Clone)]
struct Attempt<S> {
    store: S,
    s: Settings,
    bug: Bug,
    lease: Lease,
    /// The belief, told by the renewals.
    tell: watch::Sender<Option<Instant>>,
    /// When the last confirmed renewal (or the claim) went out.
    confirmed: watch::Sender<Instant>,
    /// Set when the report goes out: from then on its answer decides, not a renewal's.
    committing: watch::Sender<bool>,
    /// Whether it noted jeopardy and has not noted its end yet.
    jeopardy: Arc<AtomicBool>,
    /// The tasks of the attempt, ended with it.
    tasks: Arc<Mutex<Vec<JoinHandle<()>>>>,
}

impl<S: LeaseStore> Attempt<S> {
    fn belief(&self) -> Belief {
        self.tell.subscribe()
    }

    fn job(&self) -> (u32, u64) {
        (self.lease.job, self.lease.token)
    }

    /// Runs `task` as a task of the attempt.
    fn spawn(&self, task: impl std::future::Future<Output = ()> + Send + 'static) {
        let mut tasks = self.tasks.lock().unwrap_or_else(|p| p.into_inner());
        tasks.retain(|t| !t.is_finished());
        tasks.push(tokio::spawn(task));
    }

    /// The store said the lease is gone (a refused renewal or save, a fenced effect).
    fn lost(&self) {
        let (job, token) = self.job();
        self.store.note(Note::Lost { job, token });
        self.tell.send_replace(None);
    }

    /// Renews once, waiting for the answer up to `wait` (`None`: until it comes): moves the
    /// deadline (only later: answers may come out of order); `false` when the lease is gone.
    async fn renew(&self, wait: Option<Duration>) -> bool {
        let (job, token) = self.job();
        let sent = Instant::now();
        let ask = self.store.renew(job, token, !may_act(&self.belief()));
        let answer = match wait {
            Some(wait) => time::timeout(wait, ask).await.ok(),
            None => Some(ask.await),
        };
        match answer {
            Some(Some(lease_ns)) => {
                let d = deadline(&self.s, self.bug, sent, lease_ns);
                self.store.note(Note::Renewed {
                    job,
                    token,
                    deadline: d,
                });
                // Out of jeopardy before anything can act on the new deadline.
                if d > Instant::now() && self.jeopardy.swap(false, Ordering::SeqCst) {
                    self.store.note(Note::JeopardyExited { job, token });
                }
                self.confirmed.send_modify(|c| *c = (*c).max(sent));
                self.tell.send_modify(|belief| {
                    if let Some(old) = belief {
                        *old = (*old).max(d);
                    }
                });
                true
            }
            // Once the report is out, its answer decides: a refused renewal is no news.
            Some(None) if *self.committing.borrow() => false,
            Some(None) => {
                self.lost();
                false
            }
            // No answer in time: the deadline stands.
            None => true,
        }
    }

    /// Every period, a renewal on a task of its own (an answer may take longer than a period),
    /// until `stop` or the lease is gone.
    async fn heartbeat(self, mut stop: watch::Receiver<bool>) {
        loop {
            tokio::select! {
                _ = stop.changed() => return,
                _ = time::sleep(nanos(self.s.heartbeat_ns)) => {}
            }
            if self.tell.borrow().is_none() {
                return;
            }
            let renewal = self.clone();
            self.spawn(async move {
                renewal.renew(None).await;
            });
        }
    }

    /// Notes when the deadline passes unconfirmed (jeopardy); the renewal that confirms the
    /// lease again notes its end.
    async fn watch_jeopardy(self) {
        let (job, token) = self.job();
        let mut belief = self.belief();
        loop {
            let Some(d) = *belief.borrow_and_update() else {
                return;
            };
            if Instant::now() >= d && !self.jeopardy.swap(true, Ordering::SeqCst) {
                let last_confirmed = *self.confirmed.borrow();
                self.store.note(Note::JeopardyEntered {
                    job,
                    token,
                    last_confirmed,
                });
            }
            let inside = self.jeopardy.load(Ordering::SeqCst);
            let wake = async {
                match inside {
                    true => std::future::pending().await,
                    false => time::sleep_until(d).await,
                }
            };
            tokio::select! {
                changed = belief.changed() => {
                    if changed.is_err() {
                        return;
                    }
                }
                _ = wake => {}
            }
        }
    }

    /// Calls the tool, while the lease is not known gone: its result, or the report to make.
    async fn call_tool(&self, step: u8) -> Result<u64, Option<Report>> {
        let (job, token) = self.job();
        let call = time::timeout(
            nanos(self.s.call_timeout_ns),
            self.store.call_tool(job, token, step),
        );
        let failure = |retryable, tool_timeout| {
            Err(Some(Report::Failure {
                retryable,
                deadline: false,
                tool_timeout,
            }))
        };
        tokio::select! {
            answer = call => match answer {
                Ok(ToolResult::Ok(r)) => Ok(r),
                Ok(ToolResult::Failed { transient }) => failure(transient, false),
                Err(_) => failure(true, true),
            },
            _ = lease_gone(self.belief()) => Err(None),
        }
    }

    /// Applies an effect, asked again under the same key until it answers (the receiver
    /// applies it once whatever the number of asks); each ask only while the lease is sure.
    async fn effect(&self, op: u32, receiver: u8) -> bool {
        let (job, token) = self.job();
        loop {
            if !ready_to_act(self.belief()).await {
                return false;
            }
            self.store.note(Note::Acting {
                job,
                token,
                receiver,
                op,
            });
            let ask = time::timeout(
                nanos(self.s.call_timeout_ns),
                self.store.effect(receiver, job, op, token),
            );
            let answer = tokio::select! {
                answer = ask => answer,
                _ = lease_gone(self.belief()) => return false,
            };
            match answer {
                Ok(EffectResult::Fenced) => {
                    // A newer holder's token was seen: the lease is gone.
                    self.lost();
                    return false;
                }
                Ok(_) => return true,
                Err(_) => {}
            }
        }
    }

    /// Saves progress, asked again until it answers, while the lease lasts.
    async fn save(&self, step: u8) -> bool {
        let (job, token) = self.job();
        loop {
            let ask = time::timeout(
                nanos(self.s.heartbeat_ns),
                self.store.save(job, token, step),
            );
            let answer = tokio::select! {
                answer = ask => answer,
                _ = lease_gone(self.belief()) => return false,
            };
            match answer {
                Ok(true) => return true,
                // The store refused to save under this lease: it is gone.
                Ok(false) => {
                    self.lost();
                    return false;
                }
                // No answer: asked again once the lease is sure again.
                Err(_) => {
                    if !ready_to_act(self.belief()).await {
                        return false;
                    }
                }
            }
        }
    }

    /// Runs the job's actions while the lease allows: the report to make, or `None` when it
    /// had to stop (the lease is gone).
    async fn work(&self) -> Option<Report> {
        let mut result = 0u64;
        for action in self.lease.actions.iter().skip(self.lease.done) {
            if self.bug == Bug::RenewOnToolTask
                && !self.renew(Some(nanos(self.s.heartbeat_ns))).await
            {
                return None;
            }
            if !ready_to_act(self.belief()).await {
                return None;
            }
            match *action {
                Action::CallTool { step } => match self.call_tool(step).await {
                    Ok(r) => result ^= r,
                    Err(report) => return report,
                },
                Action::Effect { op, receiver } => {
                    if !self.effect(op, receiver).await {
                        return None;
                    }
                }
                Action::Save { step } => {
                    if !self.save(step).await {
                        return None;
                    }
                }
            }
        }
        Some(Report::Success(result))
    }

    /// Reports the outcome, asking again when no answer comes; each request is awaited on a
    /// task of its own, so whichever answer comes first, however late, is the one noted. No
    /// answer at all: it gives up asking, and says so.
    async fn commit(&self, report: Report) {
        let (job, token) = self.job();
        let attempts = self.s.commit_attempts.max(1);
        let (answered, mut answers) = mpsc::channel::<()>(attempts as usize);
        let decided = Arc::new(AtomicBool::new(false));
        self.committing.send_replace(true);
        for _ in 0..attempts {
            if self.tell.borrow().is_none() {
                break;
            }
            self.store.note(Note::Reporting {
                job,
                token,
                report,
                in_jeopardy: !may_act(&self.belief()),
            });
            let (store, decided, answered) =
                (self.store.clone(), decided.clone(), answered.clone());
            self.spawn(async move {
                let accepted = store.commit(job, token, report).await;
                if !decided.swap(true, Ordering::SeqCst) {
                    store.note(match accepted {
                        true => Note::Accepted {
                            job,
                            token,
                            success: matches!(report, Report::Success(_)),
                        },
                        false => Note::Refused { job, token },
                    });
                }
                let _ = answered.try_send(());
            });
            tokio::select! {
                _ = answers.recv() => return,
                _ = time::sleep(nanos(self.s.commit_retry_ns)) => {}
            }
        }
        if !decided.swap(true, Ordering::SeqCst) {
            self.store.note(Note::Abandoned { job, token });
        }
    }

    /// Ends every task of the attempt: it is over, and said so; what they would still learn
    /// is no news.
    fn end(&self) {
        for t in self
            .tasks
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .drain(..)
        {
            t.abort();
        }
    }
}

/// One job, from its lease to its report.
async fn run_job<S: LeaseStore>(store: &S, s: &Settings, bug: Bug, lease: Lease, sent: Instant) {
    let first = deadline(s, bug, sent, lease.lease_ns);
    store.note(Note::Claimed {
        job: lease.job,
        token: lease.token,
        deadline: first,
    });
    let a = Attempt {
        store: store.clone(),
        s: s.clone(),
        bug,
        lease,
        tell: watch::channel(Some(first)).0,
        confirmed: watch::channel(sent).0,
        committing: watch::channel(false).0,
        jeopardy: Arc::default(),
        tasks: Arc::default(),
    };
    a.spawn(a.clone().watch_jeopardy());
    let (stop, stopped) = watch::channel(false);
    if bug != Bug::RenewOnToolTask {
        a.spawn(a.clone().heartbeat(stopped));
    }
    let stage = time::timeout(nanos(s.stage_deadline_ns), a.work()).await;
    // Renewals stop with the work: a worker that renewed while its report is held on the wire
    // would keep the job from everyone else forever.
    stop.send_replace(true);
    let report = stage.unwrap_or(Some(Report::Failure {
        retryable: true,
        deadline: true,
        tool_timeout: false,
    }));
    if let Some(report) = report {
        a.commit(report).await;
    }
    a.end();
}

/// The worker: claims jobs one after the other, forever.
pub async fn run<S: LeaseStore>(store: S, s: Settings, bug: Bug) {
    time::sleep(nanos(s.start_delay_ns)).await;
    loop {
        let sent = Instant::now();
        match time::timeout(nanos(s.claim_poll_ns), store.claim()).await {
            Ok(Some(lease)) => {
                run_job(&store, &s, bug, lease, sent).await;
                store.note(Note::Idle);
            }
            _ => time::sleep(nanos(s.claim_poll_ns)).await,
        }
    }
}
