//! What the async worker costs beside leasesim's sans-IO reference worker, on w1-w2, in one
//! process: seeds per second of each, and their ratio.
//!
//! `cargo run --release -p leasesim-async-example --no-default-features --features sim
//! --example cost` runs both; `-- reference N` or `-- async N` runs N seeds of one (for
//! `valgrind --tool=callgrind` and `/usr/bin/time -v`, one kind per process).

#[cfg(feature = "sim")]
fn main() {
    use leasesim::scenarios::find;
    use leasesim::{run, Machines};
    use leasesim_async_example::sim::machines;
    use leasesim_async_example::worker::Bug;
    use leasesim_protocol::Variant;

    let args: Vec<String> = std::env::args().skip(1).collect();
    let w = find("w1-w2").expect("w1-w2");
    let sweep = |m: &Machines, seeds: u64| {
        let mut events = 0u64;
        for seed in 0..seeds {
            let r = run(&w.build(seed, Variant::Reference), seed, m);
            assert!(r.findings.is_empty(), "seed {seed} of {} failed", m.name());
            events += r.events;
        }
        events
    };
    let kinds = [
        ("reference", Machines::reference()),
        ("async", machines(Bug::None)),
    ];
    match args.as_slice() {
        [kind, n] => {
            let n: u64 = n.parse().expect("a number of seeds");
            let m = &kinds
                .iter()
                .find(|(k, _)| k == kind)
                .expect("reference or async")
                .1;
            let events = sweep(m, n);
            println!("{kind}: {n} seeds, {events} events");
        }
        _ => {
            let n = 2_000;
            let mut rates = Vec::new();
            for (kind, m) in &kinds {
                #[allow(clippy::disallowed_methods)] // the benchmark's own duration
                let started = std::time::Instant::now();
                let events = sweep(m, n);
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
            println!(
                "async / reference: {:.1}x the time per seed, {:.1}x the time per event",
                rates[0].0 / rates[1].0,
                rates[0].1 / rates[1].1
            );
        }
    }
}

#[cfg(not(feature = "sim"))]
fn main() {
    eprintln!("the cost benchmark runs the sim build: add --no-default-features --features sim");
    std::process::exit(2);
}
