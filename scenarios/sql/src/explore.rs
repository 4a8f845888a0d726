//! Every interleaving of a few concurrent claims: for two or three workers and one or two jobs,
//! each worker's `claim` runs on its own connection, and every order of their statements is
//! tried, not only the ones seeds happen to draw. A statement that waits on a lock lets the
//! others go on (its worker's later turns pass until it is let through); a cycle of waits is
//! broken as in a run (the step that closed it is cancelled). Each order ends with who was
//! granted which job: two workers granted the same job at once break single-valid-lease (I3).

use crate::coordinator::{job_uuid, worker_id};
use crate::db::{Conn, Value};
use crate::file::Statement;
use crate::steps::{self, Cursor, Stepped};
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
struct Claim {
    /// Its steps so far: the next one, the columns carried, the answer.
    cursor: Cursor,
    /// Blocked by the open transaction of this worker's connection: its step is sent again
    /// after the next step anywhere ends.
    blocked_on: Option<usize>,
    waiting: bool,
    done: bool,
    aborted: Option<String>,
}

impl Default for Claim {
    fn default() -> Claim {
        Claim {
            cursor: Cursor::new(true),
            blocked_on: None,
            waiting: false,
            done: false,
            aborted: None,
        }
    }
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
                c.cursor.answer().get(0, "id"),
                c.cursor.answer().get(0, "fencing_token"),
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

/// The parameters leasesim gives worker `w`'s claim: its id, and the time (0: every claim of
/// an exploration runs at one instant).
fn values(w: usize) -> [(String, Value); 2] {
    [
        (
            "worker_id".into(),
            Value::Text(worker_id(leasesim_protocol::WorkerName(w as u32 + 1))),
        ),
        ("client_now".into(), Value::Text(format_us(0))),
    ]
}

/// Sends worker `w`'s next step (the step engine's [`steps::send`]) and follows it: it
/// finishes, or waits (then a cycle of waits is broken), and what it lets through finishes
/// too.
fn step(
    conn: &mut Conn,
    claim: &Statement,
    w: usize,
    claims: &mut [Claim],
    ran: &mut Vec<String>,
) -> Result<(), String> {
    let next = claims[w].cursor.step();
    let stepped = steps::send(conn, w, &mut claims[w].cursor, claim, &values(w), 0)?;
    match stepped {
        Stepped::Stopped(failure) => {
            // An earlier step found no job: this claim ends with none.
            ran.push(format!("W{}.end", w + 1));
            claims[w].aborted = failure.map(|f| f.describe().to_string());
            claims[w].done = true;
            retry(conn, claim, claims, ran)
        }
        Stepped::Blocked(by) => {
            ran.push(format!("W{}.{}", w + 1, next + 1));
            blocked(conn, claim, w, by, claims, ran)
        }
        answered => {
            ran.push(format!("W{}.{}", w + 1, next + 1));
            claims[w].waiting = false;
            done(w, answered, claims);
            retry(conn, claim, claims, ran)
        }
    }
}

/// `w`'s step waited on a lock held by `by`'s connection, and was cancelled and undone (as in
/// a run, so that two statements never run at once): it is marked blocked, and a cycle of
/// blocked claims aborts `w`.
fn blocked(
    conn: &mut Conn,
    claim: &Statement,
    w: usize,
    by: usize,
    claims: &mut [Claim],
    ran: &mut Vec<String>,
) -> Result<(), String> {
    if !claims[w].waiting {
        ran.push(format!("(W{} waits)", w + 1));
    }
    claims[w].waiting = true;
    claims[w].blocked_on = Some(by);
    if !steps::closes_cycle(w, by, claims.len(), |at| {
        claims.get(at).and_then(|c| c.blocked_on)
    }) {
        return Ok(());
    }
    // A cycle: `w` closed it and is aborted.
    let s = conn.session(w)?;
    let aborted = claims[w].cursor.abort(claim, s)?;
    claims[w].waiting = false;
    claims[w].blocked_on = None;
    done(w, aborted, claims);
    retry(conn, claim, claims, ran)
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
            let before = claims[w].cursor.step();
            step(conn, claim, w, claims, ran)?;
            if claims[w].cursor.step() != before || claims[w].done {
                // It went on (and `step` retried the rest after it).
                return Ok(());
            }
        }
    }
    Ok(())
}

/// What `w`'s step did, when it answered: the claim goes on, is done, or was aborted.
fn done(w: usize, stepped: Stepped, claims: &mut [Claim]) {
    let c = &mut claims[w];
    match stepped {
        Stepped::Done => c.done = true,
        Stepped::Aborted(failure) => {
            c.aborted = Some(failure.describe().into());
            c.done = true;
        }
        Stepped::Ran | Stepped::Blocked(_) | Stepped::Stopped(_) => {}
    }
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
