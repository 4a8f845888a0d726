//! A lease table written as an async service (one task reading requests, one timer task per
//! lease), with leasesim's reference worker and receivers; and the same table accepting a
//! commit without checking the token (V2 in async form), which the checkers catch.

use leasesim::scenarios::find;
use leasesim::{run, Machines, Verdict};
use leasesim_async::{AsyncMachines, CoordinatorSetup, ServerIo};
use leasesim_protocol::{Event, Invariant, JobId, Msg, Outcome, RefusalReason, Token, Variant};
use leasesim_tokio::sync::Mutex;
use leasesim_tokio::time::{self, Instant};
use std::sync::Arc;

#[derive(Clone, Copy, PartialEq)]
enum State {
    Ready,
    Leased { token: Token, until: u64 },
    Done,
}

struct Table {
    jobs: Vec<State>,
    tokens: Vec<u64>,
}

fn expire(t: &mut Table, now: u64) {
    for j in t.jobs.iter_mut() {
        if let State::Leased { until, .. } = *j {
            if now >= until {
                *j = State::Ready;
            }
        }
    }
}

async fn lease_table(io: ServerIo, setup: Arc<CoordinatorSetup>, check_token: bool) {
    let table = Arc::new(Mutex::new(Table {
        jobs: vec![State::Ready; setup.jobs.len()],
        tokens: vec![0; setup.jobs.len()],
    }));
    io.set_all_terminal(setup.jobs.is_empty());
    loop {
        let (from, msg) = io.recv().await;
        let now = Instant::now().as_nanos();
        let mut t = table.lock().await;
        expire(&mut t, now);
        let lease_of = |job: usize| setup.classes[setup.jobs[job].class.0 as usize].lease_ns;
        let held = |t: &Table, job: JobId, token: Token| {
            matches!(t.jobs.get(job.0 as usize), Some(State::Leased { token: tk, until })
                if *tk == token && now < *until)
        };
        match msg {
            Msg::Claim { req, .. } => match t.jobs.iter().position(|j| *j == State::Ready) {
                Some(job) => {
                    t.tokens[job] += 1;
                    let token = Token(t.tokens[job]);
                    let lease_ns = lease_of(job);
                    t.jobs[job] = State::Leased {
                        token,
                        until: now + lease_ns,
                    };
                    io.reply(
                        from,
                        Msg::ClaimGranted {
                            req,
                            job: JobId(job as u32),
                            token,
                            lease_ns,
                            class: setup.jobs[job].class,
                            checkpoint: None,
                        },
                    );
                    // The lease's own timer: the table frees the job when it runs out.
                    let (table, io) = (table.clone(), io.clone());
                    leasesim_tokio::spawn(async move {
                        time::sleep_until(Instant::from_nanos(now + lease_ns)).await;
                        let mut t = table.lock().await;
                        expire(&mut t, Instant::now().as_nanos());
                        io.set_all_terminal(t.jobs.iter().all(|j| *j == State::Done));
                    });
                }
                None => io.reply(from, Msg::ClaimEmpty { req }),
            },
            Msg::Heartbeat {
                req,
                job,
                token,
                worker,
                ..
            } => {
                if held(&t, job, token) {
                    let lease_ns = lease_of(job.0 as usize);
                    t.jobs[job.0 as usize] = State::Leased {
                        token,
                        until: now + lease_ns,
                    };
                    io.reply(
                        from,
                        Msg::HeartbeatOk {
                            req,
                            job,
                            token,
                            lease_ns,
                        },
                    );
                } else {
                    // Every refusal is journaled with its answer (I6).
                    let reason = RefusalReason::Expired;
                    io.journal(Event::HeartbeatRefused {
                        job,
                        worker,
                        token,
                        reason,
                    });
                    io.reply(from, Msg::HeartbeatRejected { req, job, token });
                }
            }
            Msg::Commit {
                req,
                job,
                token,
                outcome,
                worker,
                ..
            } => {
                let j = job.0 as usize;
                let accept = match check_token {
                    true => held(&t, job, token),
                    // V2, the naive final update: whoever asks, whenever, even twice.
                    false => j < t.jobs.len(),
                };
                if accept {
                    t.jobs[j] = match outcome {
                        Outcome::Success { .. } => State::Done,
                        Outcome::Failure { .. } => State::Ready,
                    };
                    io.reply(from, Msg::CommitAccepted { req, job, token });
                } else {
                    let result_hash = match outcome {
                        Outcome::Success { result } => result,
                        Outcome::Failure { .. } => 0,
                    };
                    io.journal(Event::ResultRejected {
                        job,
                        worker,
                        token,
                        reason: RefusalReason::Expired,
                        result_hash,
                    });
                    io.reply(from, Msg::CommitRejected { req, job, token });
                }
            }
            Msg::Checkpoint {
                req, job, token, ..
            } => {
                let saved = held(&t, job, token);
                io.reply(
                    from,
                    Msg::CheckpointAck {
                        req,
                        job,
                        token,
                        saved,
                    },
                );
            }
            _ => {}
        }
        io.set_all_terminal(t.jobs.iter().all(|j| *j == State::Done));
    }
}

fn machines(check_token: bool) -> Machines {
    let name = if check_token {
        "async-table"
    } else {
        "async-table-unconditional"
    };
    Machines::new(name)
        .with_async_coordinator(name, move |io, setup| lease_table(io, setup, check_token))
}

#[test]
fn the_async_lease_table_holds_on_w1_w2() {
    let m = machines(true);
    let w = find("w1-w2").unwrap();
    for seed in 0..100 {
        let r = run(&w.build(seed, Variant::Reference), seed, &m);
        assert_eq!(
            r.verdict(),
            Verdict::Held,
            "seed {seed}: {:?} {:?}",
            r.findings.first(),
            r.machine_fault
        );
    }
}

#[test]
fn an_async_lease_table_that_accepts_any_commit_is_caught() {
    let m = machines(false);
    let w = find("w1-w2").unwrap();
    let caught = (0..100).any(|seed| {
        let r = run(&w.build(seed, Variant::Reference), seed, &m);
        r.findings
            .iter()
            .any(|f| f.invariant == Invariant::NoStaleCommit)
    });
    assert!(caught, "a stale commit accepted is I1");
}
