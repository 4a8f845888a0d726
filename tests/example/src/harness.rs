//! The interim way to run my machines on leasesim's scenarios.
//!
//! leasesim builds every node with its own reference machines. Until it takes machines from its
//! user, this module does what `leasesim::run::run_setup` does, with one change: after the
//! scenario's nodes are built, the coordinator, each worker and each receiver is swapped for
//! mine, made from that node's own configuration in the setup. The fault plan, the network, the
//! clocks and the checkers are leasesim's, untouched.

use crate::{Bug, Coordinator, Payments, Worker};
use leasesim::plan::PlanDirector;
use leasesim::run::{judge, RunResult, Verdict};
use leasesim::scenarios::ScenarioDef;
use leasesim::setup::Setup;
use leasesim::world::Node;
use leasesim_protocol::Variant;
use leasesim_sim::{Clock, Sim};
use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

/// Which of my machines replace the reference ones.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Cast {
    /// My worker, with this bug or none; `None` keeps the reference worker.
    pub worker: Option<Bug>,
    /// My coordinator instead of the reference one.
    pub coordinator: bool,
    /// My payments service instead of the reference receiver.
    pub receivers: bool,
}

impl Cast {
    /// My worker with `bug`, among the reference coordinator and receivers.
    pub fn worker(bug: Bug) -> Cast {
        Cast {
            worker: Some(bug),
            coordinator: false,
            receivers: false,
        }
    }

    /// All three of mine, the worker with `bug`.
    pub fn all_mine(bug: Bug) -> Cast {
        Cast {
            worker: Some(bug),
            coordinator: true,
            receivers: true,
        }
    }
}

/// The scenario's nodes, with mine in place of the reference machines `cast` names.
pub fn nodes(setup: &Setup, seed: u64, cast: Cast) -> Vec<(Node, Clock)> {
    let mut nodes = setup.build_nodes(seed);
    let mut workers = setup.workers.iter();
    let mut receivers = setup.receivers.iter();
    for (node, _clock) in &mut nodes {
        match node {
            Node::Coordinator(machine) => {
                if cast.coordinator {
                    *machine = Box::new(Coordinator::new(setup.classes.clone(), &setup.jobs));
                }
            }
            Node::Worker(machine, _addrs) => {
                let config = &workers.next().expect("one setup per worker").config;
                if let Some(bug) = cast.worker {
                    *machine = Box::new(Worker::new(config.clone(), bug));
                }
            }
            Node::Receiver(machine) => {
                let r = receivers.next().expect("one setup per receiver");
                if cast.receivers {
                    *machine = Box::new(
                        Payments::new(r.supports_fence, r.supports_status)
                            .declining(r.refused_ops.clone()),
                    );
                }
            }
            Node::Tool(_) | Node::Operator(..) => {}
        }
    }
    nodes
}

/// One run of `setup` with `seed` and my machines, judged by leasesim's checkers.
pub fn run(setup: &Setup, seed: u64, cast: Cast) -> RunResult {
    let mut sim = Sim::new(seed, nodes(setup, seed, cast), setup.net, setup.limits);
    let mut director = PlanDirector::new(
        setup.faults.clone(),
        setup.tool_node(),
        setup.operator_node(),
    );
    for c in director.initial_commands(setup.heal_at_ns) {
        sim.command(c);
    }
    let end = sim.run(&mut director);
    let (end_ns, events) = (sim.now(), sim.events());
    judge(setup, seed, sim.into_trace(), end, end_ns, events)
}

/// A seed that did not hold.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Failure {
    /// The scenario.
    pub scenario: &'static str,
    /// The seed.
    pub seed: u64,
    /// `VIOLATED`, `UNFINISHED (...)`, or why the configuration was refused.
    pub verdict: String,
    /// The invariants named by the findings, in order, without repeats.
    pub invariants: Vec<&'static str>,
    /// The first finding, in words.
    pub first: String,
}

/// Runs one seed of a named scenario (built for the reference variant) and says whether it held.
pub fn check(def: &ScenarioDef, seed: u64, cast: Cast) -> Result<(), Failure> {
    let setup = (def.build)(seed, Variant::Reference);
    if let Err(reason) = setup.validate_timing() {
        return Err(Failure {
            scenario: def.name,
            seed,
            verdict: "INVALID".into(),
            invariants: Vec::new(),
            first: reason,
        });
    }
    let r = run(&setup, seed, cast);
    let verdict = r.verdict();
    if verdict == Verdict::Held {
        return Ok(());
    }
    let mut invariants: Vec<&'static str> = Vec::new();
    for f in &r.findings {
        if !invariants.contains(&f.invariant.name()) {
            invariants.push(f.invariant.name());
        }
    }
    Err(Failure {
        scenario: def.name,
        seed,
        verdict: verdict.word(),
        invariants,
        first: r.findings.first().map_or_else(String::new, |f| {
            format!("{}: {}", f.invariant.name(), f.message)
        }),
    })
}

/// Runs `seeds` of every scenario in `defs` on `threads` threads; returns every failure, in
/// (scenario, seed) order.
pub fn sweep(
    defs: &[&'static ScenarioDef],
    seeds: Range<u64>,
    cast: Cast,
    threads: usize,
) -> Vec<Failure> {
    let per = seeds.end.saturating_sub(seeds.start);
    let total = per * defs.len() as u64;
    let next = AtomicU64::new(0);
    let failures = Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..threads.max(1) {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= total {
                    break;
                }
                let def = defs[(i / per) as usize];
                let seed = seeds.start + i % per;
                if let Err(f) = check(def, seed, cast) {
                    failures.lock().expect("no panics while locked").push(f);
                }
            });
        }
    });
    let mut failures = failures.into_inner().expect("no panics while locked");
    let order = |f: &Failure| {
        let at = defs.iter().position(|d| d.name == f.scenario);
        (at, f.seed)
    };
    failures.sort_by_key(order);
    failures
}
