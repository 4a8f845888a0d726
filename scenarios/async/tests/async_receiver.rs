//! An effect receiver written as an async service (a task reading its requests, a table behind
//! an async lock), judged with leasesim's reference worker and coordinator; and the same service
//! without its fence check (V3 in async form), which the checkers catch as a double effect.

use leasesim::scenarios::{find, ALL};
use leasesim::{run, Machines, Verdict};
use leasesim_async::{AsyncMachines, ReceiverSetup, ServerIo};
use leasesim_protocol::{
    EffectOutcome, EffectStatus, EntityId, Event, IdemKey, Invariant, Msg, Token, Variant,
};
use leasesim_tokio::sync::Mutex;
use std::collections::BTreeMap;
use std::sync::Arc;

#[derive(Default)]
struct Table {
    /// The highest fence admitted per entity.
    marks: BTreeMap<EntityId, Token>,
    /// The first fence of every key applied.
    applied: BTreeMap<IdemKey, Token>,
}

/// Decides one effect: the fence first (P9), the policy (P16), then the key (P10).
fn admit(
    t: &mut Table,
    s: &ReceiverSetup,
    fences: bool,
    e: (EntityId, IdemKey, Token),
) -> EffectOutcome {
    let (entity, key, fence) = e;
    if fences {
        if let Some(&mark) = t.marks.get(&entity) {
            if fence < mark {
                return EffectOutcome::StaleFence { mark };
            }
        }
    }
    if s.refused_ops.contains(&key.op) {
        return EffectOutcome::Unauthorized;
    }
    let mark = t.marks.entry(entity).or_insert(fence);
    *mark = (*mark).max(fence);
    if let Some(&first_fence) = t.applied.get(&key) {
        return EffectOutcome::Duplicate { first_fence };
    }
    t.applied.insert(key, fence);
    EffectOutcome::Applied
}

async fn payments(io: ServerIo, setup: Arc<ReceiverSetup>, check_fences: bool) {
    let table = Arc::new(Mutex::new(Table::default()));
    let fences = check_fences && setup.supports_fence;
    loop {
        let (from, msg) = io.recv().await;
        let mut t = table.lock().await;
        match msg {
            Msg::Effect {
                req,
                job,
                entity,
                key,
                fence,
            } => {
                let outcome = admit(&mut t, &setup, fences, (entity, key, fence));
                io.journal(match outcome {
                    EffectOutcome::Applied => Event::EffectApplied { entity, key, fence },
                    EffectOutcome::Duplicate { .. } => {
                        Event::EffectDuplicate { entity, key, fence }
                    }
                    EffectOutcome::StaleFence { mark } => Event::EffectFenced {
                        entity,
                        key,
                        fence,
                        mark,
                    },
                    EffectOutcome::Unauthorized => Event::EffectUnauthorized { entity, key, fence },
                });
                io.reply(
                    from,
                    Msg::EffectAck {
                        req,
                        job,
                        key,
                        outcome,
                    },
                );
            }
            Msg::EffectStatus {
                req,
                job,
                key,
                fence,
            } => {
                if fences {
                    let mark = t.marks.entry(EntityId(key.job.0)).or_insert(fence);
                    *mark = (*mark).max(fence);
                }
                let status = match (setup.supports_status, t.applied.contains_key(&key)) {
                    (false, _) => EffectStatus::Unknown,
                    (true, true) => EffectStatus::Applied,
                    (true, false) => EffectStatus::NotApplied,
                };
                io.reply(
                    from,
                    Msg::EffectStatusReply {
                        req,
                        job,
                        key,
                        status,
                    },
                );
            }
            _ => {}
        }
    }
}

fn machines(check_fences: bool) -> Machines {
    let name = if check_fences {
        "async-payments"
    } else {
        "async-payments-unfenced"
    };
    Machines::new(name)
        .with_async_receiver(name, move |io, setup| payments(io, setup, check_fences))
}

#[test]
fn the_async_receiver_holds_on_every_named_scenario() {
    let m = machines(true);
    for def in ALL.iter() {
        for seed in 0..20 {
            let setup = def.build(seed, Variant::Reference);
            let r = run(&setup, seed, &m);
            assert!(
                r.findings.is_empty() && r.machine_fault.is_none(),
                "{} seed {seed}: {:?} {:?}",
                def.name,
                r.findings.first(),
                r.machine_fault
            );
        }
    }
    let w = find("w1-w2").unwrap();
    let r = run(&w.build(1, Variant::Reference), 1, &m);
    assert_eq!(r.verdict(), Verdict::Held);
}

#[test]
fn an_async_receiver_without_its_fence_check_is_caught() {
    let m = machines(false);
    let w = find("w1-w2").unwrap();
    let caught = (0..20).any(|seed| {
        let r = run(&w.build(seed, Variant::Reference), seed, &m);
        r.findings
            .iter()
            .any(|f| f.invariant == Invariant::NoDoubleEffect)
    });
    assert!(caught, "a stale fence applied is a double effect (I2)");
}
