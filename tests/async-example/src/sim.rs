//! The worker under test: its [`LeaseStore`] over leasesim's simulated network, and the
//! machine sets the tests sweep. Only in the `sim` build.

use crate::store::{Action, EffectResult, Lease, LeaseStore, Note, Report, Settings, ToolResult};
use crate::worker::{self, Bug};
use leasesim::Machines;
use leasesim_async::{AsyncMachines, ClaimReply, WorkerIo};
use leasesim_protocol::{
    EffectOutcome, EntityId, ErrorCode, Event, IdemKey, JobId, OpId, Outcome, Step, Token,
    ToolAnswer, WorkerConfig,
};
use std::future::Future;

/// The store, the tool and the receivers, reached through leasesim: each call is a protocol
/// message the fault plan can drop, delay, duplicate or hold.
#[derive(Clone)]
pub struct SimStore {
    io: WorkerIo,
}

/// The worker's settings from its node's configuration in the scenario.
pub fn settings(c: &WorkerConfig) -> Settings {
    Settings {
        heartbeat_ns: c.heartbeat_ns,
        drift_ppm: c.drift_ppm_max,
        stop_margin_ns: c.stop_margin_ns,
        call_timeout_ns: c.tool_timeout_ns,
        stage_deadline_ns: c.stage_deadline_ns,
        claim_poll_ns: c.claim_poll_ns,
        commit_retry_ns: c.commit_retry_ns,
        commit_attempts: c.commit_attempts_max,
        start_delay_ns: c.start_delay_ns,
    }
}

/// The worker with `bug`, among leasesim's reference coordinator and receivers.
pub fn machines(bug: Bug) -> Machines {
    let name = match bug {
        Bug::None => "async-worker",
        Bug::RenewOnToolTask => "async-worker-renew-on-tool-task",
        Bug::DeadlineWithoutDrift => "async-worker-deadline-without-drift",
    };
    let m = Machines::new(name).with_async_worker(name, move |io| {
        let s = settings(io.config());
        worker::run(SimStore { io }, s, bug)
    });
    match bug {
        Bug::None => m,
        Bug::RenewOnToolTask => m.known_bad_as("V8: renewals awaited on the tool call's task"),
        Bug::DeadlineWithoutDrift => m.known_bad_as("P6: a deadline with no drift allowance"),
    }
}

/// Everything the example's own command line (`async-leasesim`) knows: the fixed worker first
/// (the default `--variant`), then each bug, on leasesim's scenarios.
pub fn program() -> leasesim::Builder {
    leasesim::Builder::new()
        .machines(machines(Bug::None))
        .machines(machines(Bug::RenewOnToolTask))
        .machines(machines(Bug::DeadlineWithoutDrift))
}

fn actions(steps: &[Step]) -> Vec<Action> {
    steps
        .iter()
        .enumerate()
        .map(|(i, step)| match *step {
            Step::Tool => Action::CallTool { step: i as u8 },
            Step::Effect { op, receiver } => Action::Effect {
                op: u32::from(op.0),
                receiver,
            },
            Step::Checkpoint => Action::Save { step: i as u8 },
        })
        .collect()
}

/// The protocol's outcome for a report.
fn outcome(report: Report) -> Outcome {
    match report {
        Report::Success(result) => Outcome::Success { result },
        Report::Failure {
            retryable,
            deadline,
            tool_timeout,
        } => Outcome::Failure {
            error: match (deadline, tool_timeout) {
                (true, _) => ErrorCode::StageDeadline,
                (false, true) => ErrorCode::ToolTimeout,
                (false, false) => ErrorCode::ToolFailed,
            },
            retryable,
        },
    }
}

impl LeaseStore for SimStore {
    async fn claim(&self) -> Option<Lease> {
        match self.io.claim().await {
            ClaimReply::Granted(g) => {
                let plan = self.io.config().plans.get(g.class.0 as usize)?;
                Some(Lease {
                    job: g.job.0,
                    token: g.token.0,
                    lease_ns: g.lease_ns,
                    actions: actions(&plan.steps),
                    done: g.checkpoint.map_or(0, |c| c as usize + 1),
                })
            }
            ClaimReply::Empty => None,
        }
    }

    fn renew(
        &self,
        job: u32,
        token: u64,
        in_jeopardy: bool,
    ) -> impl Future<Output = Option<u64>> + Send {
        self.io.heartbeat(JobId(job), Token(token), in_jeopardy, 0)
    }

    fn commit(&self, job: u32, token: u64, report: Report) -> impl Future<Output = bool> + Send {
        self.io.commit(JobId(job), Token(token), outcome(report))
    }

    fn save(&self, job: u32, token: u64, step: u8) -> impl Future<Output = bool> + Send {
        self.io.checkpoint(JobId(job), Token(token), step)
    }

    async fn call_tool(&self, job: u32, token: u64, step: u8) -> ToolResult {
        match self.io.tool(JobId(job), Token(token), step).await {
            ToolAnswer::Success { result } => ToolResult::Ok(result),
            ToolAnswer::Failure { transient } => ToolResult::Failed { transient },
            ToolAnswer::Running | ToolAnswer::NoRecord => ToolResult::Failed { transient: true },
        }
    }

    async fn effect(&self, receiver: u8, job: u32, op: u32, token: u64) -> EffectResult {
        let key = IdemKey {
            job: JobId(job),
            op: OpId(op as u8),
            salt: 0,
        };
        let answer = self
            .io
            .effect(receiver, JobId(job), EntityId(job), key, Token(token))
            .await;
        match answer {
            EffectOutcome::Applied | EffectOutcome::Duplicate { .. } => EffectResult::Done,
            EffectOutcome::StaleFence { .. } => EffectResult::Fenced,
            EffectOutcome::Unauthorized => EffectResult::Refused,
        }
    }

    // Long: one arm per note, each the journal event it is; split, it would only repeat itself.
    fn note(&self, what: Note) {
        let event = match what {
            Note::Claimed {
                job,
                token,
                deadline,
            } => {
                self.io.set_busy(true);
                Event::JobClaimed {
                    job: JobId(job),
                    token: Token(token),
                    deadline: deadline.as_nanos(),
                }
            }
            Note::Renewed {
                job,
                token,
                deadline,
            } => Event::HeartbeatOk {
                job: JobId(job),
                token: Token(token),
                deadline: deadline.as_nanos(),
            },
            Note::JeopardyEntered {
                job,
                token,
                last_confirmed,
            } => Event::JeopardyEntered {
                job: JobId(job),
                token: Token(token),
                last_confirmed: last_confirmed.as_nanos(),
                request: None,
            },
            Note::JeopardyExited { job, token } => Event::JeopardyExited {
                job: JobId(job),
                token: Token(token),
            },
            Note::Lost { job, token } => Event::HeartbeatLost {
                job: JobId(job),
                token: Token(token),
            },
            Note::Acting {
                job,
                token,
                receiver,
                op,
            } => Event::EffectStarted {
                job: JobId(job),
                token: Token(token),
                receiver,
                entity: EntityId(job),
                key: IdemKey {
                    job: JobId(job),
                    op: OpId(op as u8),
                    salt: 0,
                },
                in_jeopardy: false,
            },
            Note::Accepted {
                job,
                token,
                success: true,
            } => Event::SuccessClaimed {
                job: JobId(job),
                token: Token(token),
            },
            Note::Accepted {
                job,
                token,
                success: false,
            } => Event::FailureAcknowledged {
                job: JobId(job),
                token: Token(token),
            },
            Note::Refused { job, token } => Event::CommitRefused {
                job: JobId(job),
                token: Token(token),
            },
            Note::Reporting {
                job,
                token,
                report,
                in_jeopardy,
            } => Event::CommitSent {
                job: JobId(job),
                token: Token(token),
                outcome: outcome(report),
                in_jeopardy,
            },
            Note::Abandoned { job, token } => Event::CommitAbandoned {
                job: JobId(job),
                token: Token(token),
            },
            Note::Idle => {
                self.io.set_busy(false);
                return;
            }
        };
        self.io.journal(event);
    }
}
