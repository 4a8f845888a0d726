//! A scaling table for the discrete-event simulator: workers x jobs from 1 x 1 to 100 x 10,000,
//! showing how the cost of a run grows with its size.
//!
//! Each row is the reference protocol with no faults beyond the network's ordinary latency:
//! `workers` workers compete for `jobs` short jobs (one quick tool call and one effect each).
//! The setup comes from the scenarios' [`Story`] builder; only the job shape, the poll period and
//! the limits differ. The limits grow with the size, so a run always ends by itself and a row
//! measures the simulator and the checkers, never a budget.

use leasesim::machines::Machines;
use leasesim::run::{run_swept_then, Verdict};
use leasesim::scenarios::story::Story;
use leasesim::setup::{Setup, EVENT_BUDGET_MAX};
use leasesim_protocol::{Nanos, OpId, Step, Variant, MILLI_NS, SECOND_NS};
use serde::{Deserialize, Serialize};

/// The rows of the default table.
pub const DEFAULT_GRID: &[(usize, usize)] = &[
    (1, 1),
    (1, 10),
    (10, 100),
    (10, 1_000),
    (100, 1_000),
    (100, 10_000),
];

/// The `write` operation of [`leasesim::scenarios::story::OPS`]: each job's one effect.
const WRITE: OpId = OpId(3);

/// The shortest claim poll period, per worker. Above the longest claim round trip the story's
/// network allows (two flights of at most 22 ms), so that a worker never has a second claim
/// out when its grant arrives (the extra grant would be left to expire and the job taken over
/// a lease later). Scaled with the workers, so that once the jobs are done the idle workers'
/// claims leave the wire empty now and then and the run can end: on average fewer than one
/// claim is in flight.
const POLL_PER_WORKER_MS: u64 = 50;

/// A generous bound on one job's time once a worker has claimed it (a tool call and a handful
/// of round trips: tens of milliseconds in practice), used with the poll period to scale the
/// liveness bound and the horizon with the jobs each worker runs in turn.
const JOB_NS: Nanos = 5 * SECOND_NS;

/// Events a job may take (a claim, a grant, a tool call and its timer, an effect and its
/// acknowledgement, a commit and its acceptance, the wake-ups between them: 10-13 measured).
const EVENTS_PER_JOB: u64 = 100;

/// Events a worker may take besides its jobs (claims that find nothing while the last jobs
/// finish: under 20 measured).
const EVENTS_PER_WORKER: u64 = 2_000;

/// A setup with `workers` workers competing for `jobs` jobs (reference protocol, no faults
/// apart from the network's ordinary latency), sized so the run always ends by itself: the
/// event budget, the horizon, the liveness bound and the queue bound grow with the size, so a
/// run never ends `Unfinished` for lack of budget.
///
/// Timings (lease, heartbeat, clocks, latencies) are drawn from `seed` by [`Story::new`]; each
/// job is one tool call of 1-5 ms and one effect, and a worker polls for its next job every
/// 50-100 ms times the number of workers.
///
/// Note that [`Setup::check`] bounds a setup read from a file to
/// [`leasesim::setup::WORKERS_MAX`] workers: a larger table row (100 workers) runs, but would not
/// pass that check.
///
/// # Panics
///
/// When `workers` or `jobs` is 0.
pub fn scaling_setup(workers: usize, jobs: usize, seed: u64) -> Setup {
    assert!(
        workers >= 1 && jobs >= 1,
        "a scaling row needs at least one worker and one job ({workers} x {jobs})"
    );
    let names: Vec<u32> = (1..=workers as u32).collect();
    let steps = vec![
        Step::Tool,
        Step::Effect {
            op: WRITE,
            receiver: 0,
        },
    ];
    let mut s = Story::new("scaling", seed, Variant::Reference, &names, steps, jobs);
    // Short jobs: a quick tool call, and a poll period set by the number of workers.
    s.setup.tool.default_min_ns = MILLI_NS;
    s.setup.tool.default_max_ns = 5 * MILLI_NS;
    let poll_min_ms = POLL_PER_WORKER_MS * workers as u64;
    for i in 0..workers {
        let poll = s.ms(poll_min_ms, 2 * poll_min_ms);
        s.setup.workers[i].config.claim_poll_ns = poll;
        s.start_worker(i, 0, 100);
    }
    let (workers, jobs) = (workers as u64, jobs as u64);
    // Jobs are taken in turns: each worker runs about `rounds` of them, one after another,
    // waiting a poll period after each.
    let rounds = jobs.div_ceil(workers);
    let round_ns = 2 * poll_min_ms * MILLI_NS + JOB_NS;
    let liveness_bound_ns = rounds
        .saturating_mul(round_ns)
        .saturating_add(1_800 * SECOND_NS);
    s.setup.liveness_bound_ns = Some(liveness_bound_ns);
    s.setup.limits.horizon_ns = liveness_bound_ns.saturating_mul(2);
    s.setup.limits.event_budget =
        (10_000 + EVENTS_PER_JOB * jobs + EVENTS_PER_WORKER * workers).min(EVENT_BUDGET_MAX);
    // The queue holds the messages in flight and every wake-up asked for, stale ones included
    // until their time comes (a finished job leaves its heartbeat wake-up behind): a few per job
    // and per worker.
    s.setup.limits.queue_max = 10_000 + 100 * (workers + jobs) as usize;
    s.finish()
}

/// One row of the table: `seeds` seeds of one size, run as a sweep runs them ([`leasesim::run::run_swept`]), and
/// what they cost.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ScaleRow {
    /// Workers.
    pub workers: usize,
    /// Jobs.
    pub jobs: usize,
    /// Seeds run (seed 1 to `seeds`).
    pub seeds: u64,
    /// Wall-clock seconds for all the seeds: building, simulating and judging.
    pub seconds: f64,
    /// Simulator events processed, summed over the seeds.
    pub events: u64,
    /// Trace events recorded, summed over the seeds.
    pub trace_events: u64,
    /// Seeds per wall-clock second.
    pub seeds_per_s: f64,
    /// Simulator events per wall-clock second.
    pub events_per_s: f64,
    /// Wall-clock nanoseconds per simulator event.
    pub ns_per_event: f64,
    /// Simulator events of the row's first run (seed 0, not among the seeds above), the
    /// process's first: it grows every table and vector from nothing, which the seeds after it
    /// reuse, as a sweep's later seeds do. 0 when no seed ran.
    pub first_events: u64,
    /// Wall-clock nanoseconds per simulator event of that first run.
    pub first_ns_per_event: f64,
    /// Whether every seed's verdict was [`Verdict::Held`], the first run's too.
    pub held: bool,
}

/// Runs seeds 1 to `seeds` of the `workers` x `jobs` setup ([`scaling_setup`]) one after
/// another on this thread and measures them, after a first run of seed 0 measured on its own
/// (`first_events`, `first_ns_per_event`). With `seeds` = 0 nothing runs and every figure is 0.
#[allow(clippy::disallowed_methods)] // benchmark timing, outside the simulated world
pub fn measure(workers: usize, jobs: usize, seeds: u64) -> ScaleRow {
    // As a sweep runs a seed: judged as it goes, its storage handed to the next seed.
    let run = |seed: u64| {
        let setup = scaling_setup(workers, jobs, seed);
        run_swept_then(&setup, seed, &Machines::variant(setup.variant), |swept| {
            (
                swept.result.events,
                swept.recorded() as u64,
                swept.result.verdict() == Verdict::Held,
            )
        })
    };
    let (mut first_events, mut first_ns_per_event, mut held) = (0, 0.0, true);
    if seeds > 0 {
        let started = std::time::Instant::now();
        (first_events, _, held) = run(0);
        first_ns_per_event = started.elapsed().as_secs_f64() * 1e9 / first_events.max(1) as f64;
    }
    let (mut events, mut trace_events) = (0u64, 0u64);
    let started = std::time::Instant::now();
    for seed in 1..=seeds {
        let (e, t, h) = run(seed);
        events += e;
        trace_events += t;
        held &= h;
    }
    let seconds = started.elapsed().as_secs_f64();
    let per_s = |n: f64| if seconds > 0.0 { n / seconds } else { 0.0 };
    ScaleRow {
        workers,
        jobs,
        seeds,
        seconds,
        events,
        trace_events,
        seeds_per_s: per_s(seeds as f64),
        events_per_s: per_s(events as f64),
        ns_per_event: if events > 0 {
            seconds * 1e9 / events as f64
        } else {
            0.0
        },
        first_events,
        first_ns_per_event,
        held,
    }
}

/// The peak resident set of this process in KiB (`VmHWM` from `/proc/self/status`), `None`
/// where unavailable (not Linux, or the line is missing).
pub fn peak_rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    parse_vm_hwm(&status)
}

/// The `VmHWM:   1234 kB` line of a `/proc/<pid>/status` text, in KiB.
pub fn parse_vm_hwm(status: &str) -> Option<u64> {
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let mut parts = line["VmHWM:".len()..].split_whitespace();
    let kib = parts.next()?.parse().ok()?;
    (parts.next() == Some("kB")).then_some(kib)
}

/// How many seeds a row runs by default, so that each row takes a similar, short time: about
/// 30,000 jobs' worth of runs per row (the cost of a run grows with its jobs and workers; tens
/// of milliseconds, long enough that a burst of the machine's load moves a row's figure little),
/// at least 1 seed and at most 1,000 (1 x 1 and 1 x 10); 2 for 100 x 10,000.
pub fn default_seeds(workers: usize, jobs: usize) -> u64 {
    let size = (workers as u64).saturating_add(jobs as u64).max(1);
    (30_000 / size).clamp(1, 1_000)
}

#[cfg(test)]
mod tests {
    use super::*;
    use leasesim::run::{run_setup, RunResult};
    use leasesim::setup::WORKERS_MAX;
    use leasesim_protocol::{Event, JobState};
    use leasesim_sim::EventKind;
    use std::collections::BTreeSet;

    /// Jobs whose result was accepted with the job succeeded, according to the trace.
    fn succeeded(r: &RunResult) -> BTreeSet<u32> {
        r.trace
            .iter()
            .filter_map(|e| match e.kind {
                EventKind::Note {
                    note:
                        Event::ResultAccepted {
                            job,
                            state: JobState::Succeeded,
                            ..
                        },
                } => Some(job.0),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn small_sizes_hold_and_finish_every_job() {
        for (workers, jobs) in [(1, 1), (10, 100)] {
            for seed in [1, 2] {
                let setup = scaling_setup(workers, jobs, seed);
                let r = run_setup(&setup, seed);
                assert_eq!(
                    r.verdict(),
                    Verdict::Held,
                    "{workers} x {jobs} seed {seed}: {:?}",
                    r.findings
                );
                let done = succeeded(&r);
                assert_eq!(
                    done,
                    (0..jobs as u32).collect::<BTreeSet<_>>(),
                    "{workers} x {jobs} seed {seed}: every job succeeds once"
                );
                // Several workers share the jobs: more than one of them commits.
                if workers > 1 {
                    let committers: BTreeSet<_> = r
                        .trace
                        .iter()
                        .filter_map(|e| match e.kind {
                            EventKind::Note {
                                note: Event::ResultAccepted { worker, .. },
                            } => Some(worker),
                            _ => None,
                        })
                        .collect();
                    assert!(committers.len() > 1, "one worker did every job");
                }
            }
        }
    }

    #[test]
    fn events_grow_with_jobs() {
        let small = run_setup(&scaling_setup(1, 10, 1), 1);
        let large = run_setup(&scaling_setup(10, 100, 1), 1);
        assert_eq!(small.verdict(), Verdict::Held);
        assert_eq!(large.verdict(), Verdict::Held);
        assert!(small.events > 0);
        assert!(
            large.events > small.events,
            "10 x 100 took {} events, 1 x 10 took {}",
            large.events,
            small.events
        );
        // Roughly in proportion to the jobs, not a constant cost.
        assert!(large.events > 5 * small.events);
    }

    /// A long run judged as it goes ([`run_swept`]) keeps a bounded part of its trace and is
    /// judged as the whole run is: a held run keeps only its last events (the same ones), and a
    /// run that did not hold comes back whole, for its report. Every variant, so that runs with
    /// findings are compared too.
    #[test]
    fn a_long_run_judged_as_it_goes_keeps_a_bounded_trace() {
        use leasesim::checkers::LOOK_BACK_EVENTS;
        use leasesim::run::JUDGE_EVERY_EVENTS;
        let (mut held, mut failed) = (0, 0);
        for &variant in Variant::ALL {
            let mut setup = scaling_setup(20, 6_000, 2);
            setup.variant = variant;
            let machines = Machines::variant(variant);
            let whole = leasesim::run::run(&setup, 2, &machines);
            let swept = leasesim::run::run_swept(&setup, 2, &machines);
            let what = |r: &RunResult| {
                format!(
                    "{:?} {} {}\n{:?}\n{:?}\n{:?}",
                    r.end, r.end_ns, r.events, r.findings, r.hazards, r.skipped
                )
            };
            assert_eq!(what(&swept.result), what(&whole), "{}", variant.name());
            assert_eq!(swept.recorded(), whole.trace.len());
            assert!(
                swept.result.trace[..] == whole.trace[swept.trace_from..],
                "{}: the kept events are the trace's last ones",
                variant.name()
            );
            if whole.verdict() == Verdict::Held {
                held += 1;
                assert!(
                    swept.trace_from > 0
                        && swept.result.trace.len()
                            <= LOOK_BACK_EVENTS + 4 * JUDGE_EVERY_EVENTS as usize,
                    "{}: {} of {} trace events kept",
                    variant.name(),
                    swept.result.trace.len(),
                    whole.trace.len()
                );
            } else {
                failed += 1;
                assert_eq!(swept.trace_from, 0, "{}", variant.name());
            }
        }
        assert!(held > 0 && failed > 0, "{held} held, {failed} did not");
    }

    #[test]
    fn same_seed_same_trace() {
        let a = scaling_setup(10, 100, 7);
        assert_eq!(a, scaling_setup(10, 100, 7));
        let (ra, rb) = (run_setup(&a, 7), run_setup(&a, 7));
        assert_eq!(ra.events, rb.events);
        assert_eq!(ra.trace_hash(), rb.trace_hash());
        // The hash tells runs apart: another seed draws other timings.
        let rc = run_setup(&scaling_setup(10, 100, 8), 8);
        assert_ne!(ra.trace_hash(), rc.trace_hash());
    }

    #[test]
    fn grid_setups_are_valid_and_limits_scale() {
        let mut budget = 0;
        for &(workers, jobs) in DEFAULT_GRID {
            let setup = scaling_setup(workers, jobs, 3);
            assert_eq!((setup.workers.len(), setup.jobs.len()), (workers, jobs));
            assert!(setup.faults.is_empty());
            assert_eq!(setup.variant, Variant::Reference);
            setup.validate_timing().expect("P6-valid timings");
            if workers <= WORKERS_MAX {
                setup.check().expect("a valid setup");
            } else {
                // Only the worker count is beyond what a file may ask for.
                let err = setup.check().expect_err("above WORKERS_MAX");
                assert!(err.contains("workers"), "{err}");
                let mut fewer = setup.clone();
                fewer.workers.truncate(WORKERS_MAX);
                fewer.check().expect("valid apart from the worker count");
            }
            assert!(setup.limits.event_budget > budget, "the budget grows");
            assert!(setup.limits.event_budget <= EVENT_BUDGET_MAX);
            budget = setup.limits.event_budget;
        }
    }

    #[test]
    fn no_workers_is_refused() {
        let refused = std::panic::catch_unwind(|| scaling_setup(0, 1, 1)).unwrap_err();
        let message = refused
            .downcast_ref::<String>()
            .cloned()
            .unwrap_or_default();
        assert!(message.contains("at least one worker"), "{message}");
    }

    #[test]
    fn measure_sums_over_seeds() {
        let row = measure(1, 10, 3);
        assert_eq!((row.workers, row.jobs, row.seeds), (1, 10, 3));
        assert!(row.held);
        let one: u64 = (1..=3)
            .map(|seed| run_setup(&scaling_setup(1, 10, seed), seed).events)
            .sum();
        assert_eq!(row.events, one);
        assert!(row.trace_events > 0 && row.seconds > 0.0 && row.events_per_s > 0.0);
        // The first run is seed 0's, measured apart from the seeds.
        let first = run_setup(&scaling_setup(1, 10, 0), 0).events;
        assert_eq!(row.first_events, first);
        assert!(row.first_ns_per_event > 0.0);
        let empty = measure(1, 1, 0);
        assert_eq!(
            (
                empty.events,
                empty.seeds_per_s,
                empty.ns_per_event,
                empty.first_events,
                empty.first_ns_per_event
            ),
            (0, 0.0, 0.0, 0, 0.0)
        );
    }

    #[test]
    fn default_seeds_shrink_with_size() {
        let seeds: Vec<u64> = DEFAULT_GRID
            .iter()
            .map(|&(w, j)| default_seeds(w, j))
            .collect();
        assert_eq!(seeds.first(), Some(&1_000));
        assert_eq!(seeds.last(), Some(&2));
        assert_eq!(default_seeds(1_000, 100_000), 1);
        assert!(seeds.windows(2).all(|p| p[0] >= p[1]), "{seeds:?}");
    }

    #[test]
    fn peak_rss_reads_vm_hwm() {
        let status = "Name:\tx\nVmPeak:\t 9 kB\nVmHWM:\t    1234 kB\nVmRSS:\t 10 kB\n";
        assert_eq!(parse_vm_hwm(status), Some(1234));
        assert_eq!(parse_vm_hwm("VmRSS:\t 10 kB\n"), None);
        assert_eq!(parse_vm_hwm("VmHWM:\t 12 MB\n"), None);
        if cfg!(target_os = "linux") {
            assert!(peak_rss_kib().is_some_and(|k| k > 0));
        }
    }
}
