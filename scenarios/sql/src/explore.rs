//! Every interleaving of a few concurrent claims: for two or three workers and one or two jobs,
//! each worker's `claim` runs on its own connection, and every order of their statements is
//! tried, not only the ones seeds happen to draw. A statement that waits on a lock lets the
//! others go on (its worker's later turns pass until it is let through); a cycle of waits is
//! broken as in a run (the step that closed it is cancelled). Each order ends with who was
//! granted which job: two workers granted the same job at once break single-valid-lease (I3).

use crate::coordinator::{job_uuid, worker_id};
use crate::db::{filled, Answer, Conn, StepResult, Value};
use crate::file::{Control, Statement};
use crate::time::format_us;
use crate::SqlQueue;
use leasesim_protocol::JobId;
use std::collections::BTreeMap;

/// Most interleavings one exploration tries.
pub const INTERLEAVINGS_MAX: u64 = 200_000;

/// What an exploration found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Exploration {
    /// Workers claiming at once.
    pub workers: usize,
    /// Jobs queued.
    pub jobs: usize,
    /// Statements of one claim.
    pub steps: usize,
    /// Orders of the statements tried (every interleaving).
    pub tried: u64,
    /// Orders that actually ran different (a waiting statement makes some orders the same).
    pub schedules: usize,
    /// Each distinct outcome, with how many orders ended in it.
    pub outcomes: BTreeMap<String, u64>,
    /// How many orders granted one job to two workers.
    pub violating: u64,
    /// The first of them (at most ten): (the order, its outcome).
    pub violations: Vec<(String, String)>,
}

/// How many interleavings of `workers` sequences of `steps` statements there are.
pub fn interleavings(workers: usize, steps: usize) -> Option<u64> {
    // (w*k)! / (k!)^w, as a product of binomials.
    let mut total: u64 = 1;
    let mut placed = 0u64;
    for _ in 0..workers {
        for i in 1..=steps as u64 {
            placed += 1;
            total = total.checked_mul(placed)? / i;
        }
    }
    Some(total)
}

/// Tries every interleaving of `workers` concurrent claims on `jobs` queued jobs.
pub fn explore(queue: &SqlQueue, workers: usize, jobs: usize) -> Result<Exploration, String> {
    if !(2..=3).contains(&workers) || !(1..=2).contains(&jobs) {
        return Err("explore takes 2 or 3 workers and 1 or 2 jobs".into());
    }
    let file = queue.file.clone();
    let claim = file.get("claim").ok_or("the file has no `claim`")?;
    let steps = claim.each_step().len();
    let total = interleavings(workers, steps)
        .filter(|&n| n <= INTERLEAVINGS_MAX)
        .ok_or_else(|| {
            format!(
                "{workers} claims of {steps} statements have more than {INTERLEAVINGS_MAX} interleavings; take fewer workers"
            )
        })?;
    let enqueue = file.get("enqueue").ok_or("the file has no `enqueue`")?;
    let rows: Vec<Vec<Value>> = (0..jobs)
        .map(|i| {
            let id = JobId(i as u32);
            enqueue
                .params
                .iter()
                .map(|(p, _)| match p.as_str() {
                    "job_id" => Value::Text(job_uuid(id)),
                    "idempotency_key" => Value::Text(format!("tool-job:{i}")),
                    _ => Value::Text(format!("{{\"class\": 0, \"hash\": \"{i:016x}\"}}")),
                })
                .collect()
        })
        .collect();
    let mut conn = queue.pool.take()?;
    conn.set_isolation(queue.isolation());
    let mut found = Exploration {
        workers,
        jobs,
        steps,
        ..Exploration::default()
    };
    let mut schedules = std::collections::BTreeSet::new();
    let mut order = Vec::with_capacity(workers * steps);
    let mut left = vec![steps; workers];
    let result = each_order(&mut order, &mut left, &mut |order| {
        conn.start_run(enqueue, &rows)?;
        let (ran, outcome, twice) = run_order(&mut conn, claim, order, workers)?;
        found.tried += 1;
        schedules.insert(ran);
        *found.outcomes.entry(outcome.clone()).or_default() += 1;
        if twice {
            found.violating += 1;
            if found.violations.len() < 10 {
                found.violations.push((name_order(order), outcome));
            }
        }
        Ok(())
    });
    conn.quiesce();
    queue.pool.give(conn);
    result?;
    debug_assert_eq!(found.tried, total);
    found.schedules = schedules.len();
    Ok(found)
}

/// Calls `f` with every sequence that holds worker `w` `left[w]` times.
fn each_order(
    order: &mut Vec<usize>,
    left: &mut [usize],
    f: &mut dyn FnMut(&[usize]) -> Result<(), String>,
) -> Result<(), String> {
    if left.iter().all(|&n| n == 0) {
        return f(order);
    }
    for w in 0..left.len() {
        if left[w] > 0 {
            left[w] -= 1;
            order.push(w);
            each_order(order, left, f)?;
            order.pop();
            left[w] += 1;
        }
    }
    Ok(())
}

fn name_order(order: &[usize]) -> String {
    let mut seen = [0; 4];
    order
        .iter()
        .map(|&w| {
            seen[w] += 1;
            format!("W{}.{}", w + 1, seen[w])
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// One worker's claim, step by step.
#[derive(Default)]
struct Claim {
    next: usize,
    /// Blocked by the open transaction of this worker's connection: its step is sent again
    /// after the next step anywhere ends.
    blocked_on: Option<usize>,
    waiting: bool,
    done: bool,
    carried: Vec<(String, Option<String>)>,
    answer: Answer,
    aborted: Option<String>,
}

/// Runs the claims in `order` (worker indices); returns the statements as they ran, the
/// outcome, and whether two workers got the same job.
fn run_order(
    conn: &mut Conn,
    claim: &Statement,
    order: &[usize],
    workers: usize,
) -> Result<(String, String, bool), String> {
    let mut claims: Vec<Claim> = (0..workers).map(|_| Claim::default()).collect();
    let mut ran = Vec::new();
    let mut turns: Vec<usize> = order.to_vec();
    // Turns a waiting worker passed are taken at the end, in order.
    let mut bound = 0;
    while let Some(w) = (!turns.is_empty()).then(|| turns.remove(0)) {
        bound += 1;
        if bound > 10_000 {
            return Err("an interleaving did not end".into());
        }
        if claims[w].done {
            continue;
        }
        if claims[w].waiting {
            turns.push(w);
            continue;
        }
        step(conn, claim, w, &mut claims, &mut ran)?;
        if turns.is_empty() {
            // Whoever still has steps (a turn passed while waiting) goes on, in order.
            turns.extend((0..workers).filter(|&w| !claims[w].done));
            if !turns.is_empty() && turns.iter().all(|&w| claims[w].waiting) {
                // Everyone left is blocked: send them again, in order.
                retry(conn, claim, &mut claims, &mut ran)?;
                if turns.iter().all(|&w| claims[w].waiting && !claims[w].done) {
                    return Err("every claim waits and none can go on".into());
                }
            }
        }
    }
    let mut holders: BTreeMap<String, usize> = BTreeMap::new();
    let outcome = claims
        .iter()
        .enumerate()
        .map(|(w, c)| {
            let who = format!("W{}", w + 1);
            match (
                &c.aborted,
                c.answer.get(0, "id"),
                c.answer.get(0, "fencing_token"),
            ) {
                (Some(why), _, _) => format!("{who} aborted ({why})"),
                (None, Some(id), token) => {
                    let job = crate::coordinator::job_of(id)
                        .map_or_else(|| id.to_string(), |j| j.to_string());
                    *holders.entry(job.clone()).or_default() += 1;
                    format!("{who} {job} token {}", token.unwrap_or("?"))
                }
                (None, None, _) => format!("{who} nothing"),
            }
        })
        .collect::<Vec<_>>()
        .join(", ");
    let twice = holders.values().any(|&n| n > 1);
    Ok((ran.join(" "), outcome, twice))
}

/// Sends worker `w`'s next step and follows it: it finishes, or waits (then a cycle of waits is
/// broken), and what it lets through finishes too.
fn step(
    conn: &mut Conn,
    claim: &Statement,
    w: usize,
    claims: &mut [Claim],
    ran: &mut Vec<String>,
) -> Result<(), String> {
    let st = &claim.each_step()[claims[w].next];
    let in_tx = conn.session(w)?.in_transaction;
    let (sql, which) = match st.control() {
        Control::Begin => (
            format!(
                "{}\n;\nSET LOCAL leasesim.now = '{}'",
                st.text.trim().trim_end_matches(';'),
                format_us(0)
            ),
            0,
        ),
        Control::Commit | Control::Rollback => {
            (st.text.trim().trim_end_matches(';').to_string(), 0)
        }
        Control::Data => {
            let mut values = Vec::new();
            for (p, line) in &st.params {
                let v = match p.as_str() {
                    "worker_id" => Some(Value::Text(worker_id(leasesim_protocol::WorkerName(
                        w as u32 + 1,
                    )))),
                    "client_now" => Some(Value::Text(format_us(0))),
                    _ => match claims[w].carried.iter().find(|(n, _)| n == p) {
                        Some((_, Some(v))) => Some(Value::Text(v.clone())),
                        Some((_, None)) => None,
                        None => {
                            return Err(format!(
                                "line {line}: `claim` uses `:{p}`, which neither leasesim nor an earlier statement gives"
                            ))
                        }
                    },
                };
                match v {
                    Some(v) => values.push(v),
                    None => {
                        // An earlier step found no job: this claim ends with none.
                        let s = conn.session(w)?;
                        if s.in_transaction {
                            s.run("COMMIT").map_err(|e| e.message)?;
                            s.in_transaction = false;
                        }
                        claims[w].answer = Answer::default();
                        claims[w].done = true;
                        ran.push(format!("W{}.end", w + 1));
                        return retry(conn, claim, claims, ran);
                    }
                }
            }
            let text = filled(st, &values);
            if in_tx {
                (format!("SAVEPOINT leasesim_step;\n{text}"), 1)
            } else {
                (
                    format!(
                        "BEGIN;\nSET LOCAL leasesim.now = '{}';\n{text}\n;\nCOMMIT",
                        format_us(0)
                    ),
                    2,
                )
            }
        }
    };
    conn.session(w)?.send(sql, which);
    ran.push(format!("W{}.{}", w + 1, claims[w].next + 1));
    match settle(conn, w)? {
        Some(r) => {
            claims[w].waiting = false;
            done(conn, claim, w, r, claims)?;
            retry(conn, claim, claims, ran)
        }
        None => blocked(conn, claim, w, in_tx, claims, ran),
    }
}

/// `w`'s step waits on a lock: it is cancelled and undone (as in a run, so that two statements
/// never run at once), marked blocked, and a cycle of blocked claims aborts `w`.
fn blocked(
    conn: &mut Conn,
    claim: &Statement,
    w: usize,
    in_tx: bool,
    claims: &mut [Claim],
    ran: &mut Vec<String>,
) -> Result<(), String> {
    let pids: Vec<i32> = conn
        .sessions()
        .iter()
        .map(crate::db::Session::pid)
        .collect();
    let by = conn
        .blocked_by(pids[w])?
        .iter()
        .find_map(|b| pids.iter().position(|p| p == b))
        .ok_or("a claim waits on a session outside the exploration")?;
    conn.cancel(pids[w])?;
    let s = conn.session(w)?;
    let limit = s.limit();
    let r = s.answer(limit).ok_or_else(|| {
        format!(
            "a cancelled statement gave no answer within {} s",
            limit.as_secs()
        )
    })?;
    if r.is_ok() {
        done(conn, claim, w, r, claims)?;
        return retry(conn, claim, claims, ran);
    }
    let undo = if in_tx {
        "ROLLBACK TO SAVEPOINT leasesim_step"
    } else {
        "ROLLBACK"
    };
    s.run(undo).map_err(|e| e.message)?;
    if !claims[w].waiting {
        ran.push(format!("(W{} waits)", w + 1));
    }
    claims[w].waiting = true;
    claims[w].blocked_on = Some(by);
    let mut at = by;
    for _ in 0..=claims.len() {
        if at == w {
            // A cycle: `w` closed it and is aborted.
            let s = conn.session(w)?;
            let _ = s.run("ROLLBACK");
            s.in_transaction = false;
            claims[w].waiting = false;
            claims[w].blocked_on = None;
            done(
                conn,
                claim,
                w,
                Err(crate::db::StepError {
                    code: "40P01".into(),
                    message: "deadlock".into(),
                }),
                claims,
            )?;
            return retry(conn, claim, claims, ran);
        }
        match claims[at].blocked_on {
            Some(next) => at = next,
            None => break,
        }
    }
    Ok(())
}

/// Sends again, one at a time in worker order, the steps blocked on a lock, until none goes
/// on.
fn retry(
    conn: &mut Conn,
    claim: &Statement,
    claims: &mut [Claim],
    ran: &mut Vec<String>,
) -> Result<(), String> {
    for w in 0..claims.len() {
        if claims[w].blocked_on.take().is_some() {
            let before = claims[w].next;
            step(conn, claim, w, claims, ran)?;
            if claims[w].next != before || claims[w].done {
                // It went on (and `step` retried the rest after it).
                return Ok(());
            }
        }
    }
    Ok(())
}

/// The answer of `w`'s step, or `None` when it waits on a lock.
fn settle(conn: &mut Conn, w: usize) -> Result<Option<StepResult>, String> {
    #[allow(clippy::disallowed_methods)] // a bound on a real database's time, not a simulated one
    let started = std::time::Instant::now();
    loop {
        let s = conn.session(w)?;
        if let Some(r) = s.answer(std::time::Duration::from_millis(2)) {
            // A statement the server cancelled after its timeout: no deadlock of leasesim's.
            if let Err(e) = &r {
                if e.code == "57014" && started.elapsed() >= s.timeout() {
                    return Err(format!(
                        "`claim` ran longer than the statement timeout ({}) and the server cancelled it ({})",
                        leasesim_sim::time::dur(s.timeout().as_nanos() as u64),
                        e.message
                    ));
                }
            }
            return Ok(Some(r));
        }
        let (pid, limit) = (s.pid(), s.limit());
        if !conn.blocked_by(pid)?.is_empty() {
            return Ok(None);
        }
        if started.elapsed() > limit {
            return Err(format!(
                "a statement ran {} s neither finishing nor waiting, and the server did not cancel it",
                limit.as_secs()
            ));
        }
    }
}

/// A step's answer.
fn done(
    conn: &mut Conn,
    claim: &Statement,
    w: usize,
    r: StepResult,
    claims: &mut [Claim],
) -> Result<(), String> {
    let steps = claim.each_step();
    let st = &steps[claims[w].next];
    let s = conn.session(w)?;
    match r {
        Ok(answer) => {
            match st.control() {
                Control::Begin => s.in_transaction = true,
                Control::Commit | Control::Rollback => s.in_transaction = false,
                Control::Data => {
                    let c = &mut claims[w];
                    for (i, col) in answer.columns.iter().enumerate() {
                        let v = answer
                            .rows
                            .first()
                            .and_then(|r| r.get(i).cloned().flatten());
                        match c.carried.iter_mut().find(|(n, _)| n == col) {
                            Some(slot) => slot.1 = v,
                            None => c.carried.push((col.clone(), v)),
                        }
                    }
                    if std::ptr::eq(st, claim.answering()) {
                        c.answer = answer;
                    }
                }
            }
            claims[w].next += 1;
            if claims[w].next == steps.len() {
                claims[w].done = true;
            }
        }
        Err(e) => {
            let _ = s.run("ROLLBACK");
            s.in_transaction = false;
            let why = match e.code.as_str() {
                "40P01" | "57014" => "deadlock",
                "40001" => "serialization failure",
                _ => return Err(format!("`claim` failed: {}", e.message)),
            };
            claims[w].aborted = Some(why.into());
            claims[w].answer = Answer::default();
            claims[w].done = true;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interleavings_are_counted_as_multinomials() {
        assert_eq!(interleavings(2, 2), Some(6));
        assert_eq!(interleavings(2, 4), Some(70));
        assert_eq!(interleavings(3, 4), Some(34_650));
        assert_eq!(interleavings(3, 1), Some(6));
    }
}
