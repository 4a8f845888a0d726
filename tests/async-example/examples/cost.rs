//! What the async worker costs beside leasesim's sans-IO reference worker, on w1-w2, in one
//! process: seeds per second of each, and their ratio; in the madsim build, the same async
//! worker on the madsim engine too.
//!
//! `cargo run --release -p leasesim-async-example --no-default-features --features sim
//! --example cost` runs both; `-- reference N`, `-- async N` (or `-- madsim N` in the madsim
//! build) runs N seeds of one (for `valgrind --tool=callgrind` and `/usr/bin/time -v`, one kind
//! per process). The madsim build: `cargo --config 'build.rustflags=["--cfg", "madsim", "-D", "warnings"]' run
//! --release --target-dir target/madsim -p leasesim-async-example --no-default-features
//! --features sim --example cost`.

#[cfg(feature = "sim")]
mod cost {
    use leasesim::scenarios::find;
    use leasesim::{run, Machines};
    use leasesim_async_example::sim::machines;
    use leasesim_async_example::worker::Bug;
    use leasesim_protocol::Variant;
    use leasesim_shell::engines::{self, Engine};

    /// Runs seeds 0..`seeds` of w1-w2 on `m` on `engine`; the events they took.
    fn sweep(engine: Engine, m: &Machines, seeds: u64) -> u64 {
        let w = find("w1-w2").expect("w1-w2");
        let mut events = 0u64;
        for seed in 0..seeds {
            let setup = w.build(seed, Variant::Reference);
            let r = match engine {
                Engine::Sim => run(&setup, seed, m),
                _ => {
                    engines::run(engine, &setup, seed, m)
                        .expect("the engine runs w1-w2")
                        .result
                }
            };
            assert!(r.findings.is_empty(), "seed {seed} of {} failed", m.name());
            events += r.events;
        }
        events
    }

    /// What is measured: each kind's name, engine and machines.
    fn kinds() -> Vec<(&'static str, Engine, Machines)> {
        #[allow(unused_mut)]
        let mut kinds = vec![
            ("reference", Engine::Sim, Machines::reference()),
            ("async", Engine::Sim, machines(Bug::None)),
        ];
        // The same async worker, each node a madsim node (its timers still on its node's clock).
        #[cfg(madsim)]
        kinds.push(("madsim", Engine::Madsim, machines(Bug::None)));
        kinds
    }

    /// `N` seeds of one kind, for callgrind and `/usr/bin/time -v`.
    pub fn one(kind: &str, n: &str) {
        let n: u64 = n.parse().expect("a number of seeds");
        let (_, engine, m) = kinds()
            .into_iter()
            .find(|(k, _, _)| *k == kind)
            .expect("reference, async or (in the madsim build) madsim");
        let events = sweep(engine, &m, n);
        println!("{kind}: {n} seeds, {events} events");
    }

    /// Every kind in turn, timed, and each one's cost beside the reference's.
    pub fn side_by_side() {
        let kinds = kinds();
        let mut rates = Vec::new();
        for (kind, engine, m) in &kinds {
            // Fewer seeds on madsim, whose runs cost more.
            let n = if *engine == Engine::Sim { 2_000 } else { 500 };
            #[allow(clippy::disallowed_methods)] // the benchmark's own duration
            let started = std::time::Instant::now();
            let events = sweep(*engine, m, n);
            let secs = started.elapsed().as_secs_f64();
            println!(
                "{kind:>9}: {n} w1-w2 seeds in {secs:.3}s, {:.0} seeds/s, {:.1} events/seed, {:.2}M events/s",
                n as f64 / secs,
                events as f64 / n as f64,
                events as f64 / secs / 1e6
            );
            rates.push((n as f64 / secs, events as f64 / secs));
        }
        // Per seed, and per simulated event: the async worker's runs are longer (it renews
        // while a held effect is awaited, where the reference's run ends sooner).
        for (i, (kind, _, _)) in kinds.iter().enumerate().skip(1) {
            println!(
                "{kind} / reference: {:.1}x the time per seed, {:.1}x the time per event",
                rates[0].0 / rates[i].0,
                rates[0].1 / rates[i].1
            );
        }
    }
}

#[cfg(feature = "sim")]
fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.as_slice() {
        [kind, n] => cost::one(kind, n),
        _ => cost::side_by_side(),
    }
}

#[cfg(not(feature = "sim"))]
fn main() {
    eprintln!("the cost benchmark runs the sim build: add --no-default-features --features sim");
    std::process::exit(2);
}
