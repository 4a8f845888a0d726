//! Model-based tests (sled style): random operation sequences drive the real machine and a tiny
//! reference model side by side; every reply and every row must agree.

use leasesim_protocol::{
    ClassId, ClassSpec, Coordinator, EffectOutcome, EntityId, IdemKey, JobId, JobSpec, JobState,
    Msg, OpId, Outcome, Output, Receiver, Switches, Token, WorkerName,
};
use proptest::prelude::*;
use std::collections::BTreeMap;

const L: u64 = 1_000;

#[derive(Clone, Debug)]
enum Op {
    Claim(u32),
    Heartbeat(u32, u64, u64),
    Commit(u32, u64, u64, bool),
    Advance(u64),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        (0..3u32).prop_map(Op::Claim),
        (0..3u32, 0..2u64, 0..5u64).prop_map(|(w, j, t)| Op::Heartbeat(w, j, t)),
        (0..3u32, 0..2u64, 0..5u64, any::<bool>())
            .prop_map(|(w, j, t, ok)| Op::Commit(w, j, t, ok)),
        (0..(2 * L)).prop_map(Op::Advance),
    ]
}

#[derive(Clone, Debug, Default)]
struct Row {
    state: Option<JobState>,
    owner: Option<u32>,
    token: u64,
    until: Option<u64>,
    attempt: u32,
}

/// The reference model of P3, P4, P8 and P11, written as plainly as possible.
struct Model {
    rows: Vec<Row>,
}

impl Model {
    fn holder_ok(&self, now: u64, j: usize, w: u32, t: u64) -> bool {
        let r = &self.rows[j];
        r.state == Some(JobState::Running)
            && r.owner == Some(w)
            && r.token == t
            && r.until.is_some_and(|u| u > now)
    }
}

fn reply(c: &mut Coordinator) -> Msg {
    let mut found = None;
    while let Some(o) = c.poll_output() {
        if let Output::Send { msg, .. } = o {
            assert!(found.is_none(), "one reply per request");
            found = Some(msg);
        }
    }
    found.expect("every request gets a reply")
}

proptest! {
    // 256 cases each: a few hundred milliseconds in the dev profile. Failures are kept next to
    // this file (tests/tests/model.proptest-regressions), committed, and replayed first.
    #![proptest_config(ProptestConfig {
        cases: 256,
        failure_persistence: Some(Box::new(
            proptest::test_runner::FileFailurePersistence::WithSource("proptest-regressions"),
        )),
        ..ProptestConfig::default()
    })]

    #[test]
    fn coordinator_agrees_with_its_model(ops in proptest::collection::vec(op(), 1..80)) {
        let mut c = Coordinator::new(
            vec![ClassSpec { lease_ns: L, max_attempts: 2, renewal_cap_ns: 1_000 * L, capacity: None, retry_backoff_ns: 0 }],
            &[JobSpec { class: ClassId(0), payload_hash: 1, payload_lease_ns: None }, JobSpec { class: ClassId(0), payload_hash: 2, payload_lease_ns: None }],
            Switches::default(),
        );
        let mut m = Model { rows: vec![Row { state: Some(JobState::Queued), ..Row::default() }; 2] };
        let mut now = 0u64;
        // Accepted commits: a repeated one gets its first answer again.
        let mut accepted: Vec<(u64, u32, u64, bool)> = Vec::new();
        for (req, op) in ops.into_iter().enumerate() {
            // Every request has its own number, as a worker sends them.
            let req = req as u64 + 1;
            match op {
                Op::Advance(dt) => now += dt,
                Op::Claim(w) => {
                    c.handle_message(now, w, Msg::Claim { req, worker: WorkerName(w), client_now: 0 });
                    let got = reply(&mut c);
                    let pick = m.rows.iter().position(|r| r.state == Some(JobState::Queued)
                        || (r.state == Some(JobState::Running) && r.until.is_some_and(|u| u < now)));
                    match (pick, got) {
                        (Some(j), Msg::ClaimGranted { job, token, lease_ns, .. }) => {
                            let r = &mut m.rows[j];
                            r.state = Some(JobState::Running);
                            r.owner = Some(w);
                            r.token += 1;
                            r.until = Some(now + L);
                            r.attempt += 1;
                            prop_assert_eq!(job, JobId(j as u32));
                            prop_assert_eq!(token, Token(r.token));
                            prop_assert_eq!(lease_ns, L);
                        }
                        (None, Msg::ClaimEmpty { .. }) => {}
                        (pick, got) => prop_assert!(false, "model picked {:?}, machine said {:?}", pick, got),
                    }
                }
                Op::Heartbeat(w, j, t) => {
                    c.handle_message(now, w, Msg::Heartbeat { req, job: JobId(j as u32), worker: WorkerName(w), token: Token(t), client_now: 0, in_jeopardy: false, effects_attempted: 0 });
                    let got = reply(&mut c);
                    let ok = m.holder_ok(now, j as usize, w, t);
                    if ok { m.rows[j as usize].until = Some(now + L); }
                    prop_assert_eq!(matches!(got, Msg::HeartbeatOk { .. }), ok, "{:?}", got);
                }
                Op::Commit(w, j, t, success) => {
                    let outcome = if success { Outcome::Success { result: 5 } } else {
                        Outcome::Failure { error: leasesim_protocol::ErrorCode::ToolFailed, retryable: true }
                    };
                    c.handle_message(now, w, Msg::Commit { req, job: JobId(j as u32), worker: WorkerName(w), token: Token(t), outcome, client_now: 0 });
                    let got = reply(&mut c);
                    let replay = accepted.contains(&(j, w, t, success));
                    let ok = replay || m.holder_ok(now, j as usize, w, t);
                    if ok && !replay {
                        accepted.push((j, w, t, success));
                        let r = &mut m.rows[j as usize];
                        r.until = None;
                        r.state = Some(if success { JobState::Succeeded }
                            else if r.attempt < 2 { JobState::Queued } else { JobState::Failed });
                        if r.state == Some(JobState::Queued) { r.owner = None; }
                    }
                    prop_assert_eq!(matches!(got, Msg::CommitAccepted { .. }), ok, "{:?}", got);
                }
            }
            for (j, row) in c.jobs().iter().enumerate() {
                let r = &m.rows[j];
                prop_assert_eq!(Some(row.state), r.state);
                prop_assert_eq!(row.token, Token(r.token));
                prop_assert_eq!(row.lease_until, r.until);
                prop_assert_eq!(row.owner, r.owner.map(WorkerName));
                prop_assert_eq!(row.attempt, r.attempt);
            }
            // One lease record per grant, tokens increasing per job (P2, P3).
            let grants: usize = m.rows.iter().map(|r| r.attempt as usize).sum();
            prop_assert_eq!(c.leases().len(), grants);
        }
    }

    #[test]
    fn receiver_agrees_with_its_model(
        ops in proptest::collection::vec((0..2u32, 0..3u8, 1..6u64), 1..60),
        supports_fence in any::<bool>(),
    ) {
        let mut r = Receiver::new(supports_fence, Switches::default());
        let mut marks: BTreeMap<u32, u64> = BTreeMap::new();
        let mut applied: BTreeMap<(u32, u8), u64> = BTreeMap::new();
        for (entity, op, fence) in ops {
            let key = IdemKey { job: JobId(entity), op: OpId(op), salt: 0 };
            r.handle_message(0, 1, Msg::Effect { req: 1, job: JobId(entity), entity: EntityId(entity), key, fence: Token(fence) });
            let got = std::iter::from_fn(|| r.poll_output()).find_map(|o| match o {
                Output::Send { msg: Msg::EffectAck { outcome, .. }, .. } => Some(outcome),
                _ => None,
            }).expect("an answer");
            let mark = marks.get(&entity).copied();
            let expected = if supports_fence && mark.is_some_and(|m| fence < m) {
                EffectOutcome::StaleFence { mark: Token(mark.unwrap()) }
            } else {
                let m = marks.entry(entity).or_insert(fence);
                *m = (*m).max(fence);
                match applied.get(&(entity, op)) {
                    Some(first) => EffectOutcome::Duplicate { first_fence: Token(*first) },
                    None => {
                        applied.insert((entity, op), fence);
                        EffectOutcome::Applied
                    }
                }
            };
            prop_assert_eq!(got, expected);
            prop_assert_eq!(r.mark(EntityId(entity)).map(|t| t.0), marks.get(&entity).copied());
        }
    }
}
