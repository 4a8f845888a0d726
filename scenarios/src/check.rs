//! A sweep as a test: [`SweepConfig::check`] runs the sweep inside a user's `cargo test`, and
//! when a run fails it saves that run as a replay file under `target/leasesim-failures/`
//! (and a shrunk one beside it), then panics with the seed, the invariant, and the one command
//! that reruns exactly that run — the way proptest and madsim let one case be rerun:
//!
//! - `LEASESIM_REPLAY=<file>` reruns the saved replay (on the test's own machines) instead of
//!   the sweep;
//! - `LEASESIM_SEED=<scenario>:<seed>` (or just `<seed>`) runs that one seed of the sweep.
//!
//! On a CI matrix the same test runs one shard of the sweep on each node: a configuration
//! without a [`Shard`] of its own takes it from the environment ([`Shard::from_env`]:
//! `LEASESIM_SHARD=K/N`, GitLab's `CI_NODE_INDEX`/`CI_NODE_TOTAL`, or Kubernetes'
//! `JOB_COMPLETION_INDEX` with `LEASESIM_SHARD_TOTAL`), says so on standard error and in its
//! failure message, and judges the hazards of each scenario it ran at least 100 seeds of.
//!
//! ```
//! use leasesim::sweep::{SeedRange, SweepConfig};
//! use leasesim::{scenarios, Machines};
//!
//! // In a user's test: their machines over two scenarios, 20 seeds each.
//! let config = SweepConfig::new(
//!     vec![scenarios::find("w1-w2").unwrap(), scenarios::find("gc-pause-after-check").unwrap()],
//!     SeedRange { start: 0, end: 20 },
//!     Machines::reference(),
//! );
//! let report = config.check(); // panics, with the rerun command, if a seed fails
//! assert_eq!(report.runs, 40);
//! ```

use crate::replay::Replay;
use crate::run::run;
use crate::shrink;
use crate::sweep::{
    describe_ranges, sweep, Quiet, ScenarioOutcome, SeedRange, Shard, SweepConfig, SweepReport,
};
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;

/// The judgements a sweep lets be skipped in every run of scenario `d`: those `allowed` by
/// name, and those its story voids by design.
pub fn allowed(allowed: &[String], d: &crate::scenarios::ScenarioDef) -> Vec<String> {
    let mut all = allowed.to_vec();
    all.extend(d.unjudged.iter().map(|j| j.to_string()));
    all
}

/// The environment variable naming a replay file to rerun instead of the sweep.
pub use crate::replay::REPLAY_VAR;
/// The environment variable naming one seed (`<scenario>:<seed>` or `<seed>`) to run.
pub const SEED_VAR: &str = "LEASESIM_SEED";
/// Sweeps of at least this many seeds per scenario must reach every hazard it declares.
pub use crate::sweep::COVERAGE_MIN_SEEDS;

impl SweepConfig {
    /// Runs the sweep as a test and returns its report; panics when a run fails, a declared
    /// hazard is never reached, a judgement is skipped in every run of a scenario (unless
    /// [`SweepConfig::allow_skipped`] names it), or a seed is not deterministic, after saving the first failing
    /// run and printing how to rerun it (see the module's documentation).
    pub fn check(&self) -> SweepReport {
        match self.try_check() {
            Ok(report) => report,
            Err(message) => panic!("{message}"),
        }
    }

    /// [`SweepConfig::check`] without the panic: the report, or the message it would panic with.
    pub fn try_check(&self) -> Result<SweepReport, String> {
        if let Some(file) = std::env::var_os(REPLAY_VAR) {
            return self.check_replay(Path::new(&file));
        }
        let (config, one_seed) = match std::env::var(SEED_VAR) {
            Ok(one) => (self.one_seed(&one)?, true),
            Err(_) => (self.sharded_by_env()?, false),
        };
        let report = sweep(&config, &AtomicBool::new(false), &Quiet);
        let unreached = match report.coverage(&config) {
            Some(unreached) => unreached,
            None => {
                if !report.interrupted {
                    eprintln!("leasesim: hazard coverage is judged over the whole sweep, not over one shard of several");
                }
                Vec::new()
            }
        };
        // The counterexample shown is the shortest, not the first in the scenarios' order.
        if let Some(f) = report.best_failure() {
            return Err(config.explain(f.scenario, f.seed, &f.first, &report));
        }
        if !unreached.is_empty() {
            return Err(unreached_error(&config, &unreached));
        }
        let never: Vec<String> = report
            .scenarios
            .iter()
            .zip(&config.scenarios)
            .flat_map(|(o, d)| {
                o.never_judged(&allowed(&config.allow_skipped, d))
                    .into_iter()
                    .map(move |(judgement, causes)| {
                        format!("{} {judgement} ({})", d.name, causes.join("; "))
                    })
            })
            .collect();
        // One seed run again to look at a finding says nothing of what a sweep leaves unjudged.
        if !never.is_empty() && !one_seed {
            return Err(format!(
                "leasesim: the machines '{}' held, but these judgements were skipped in every run of their scenario, so the sweep proves nothing about them: {}; allow one by name with SweepConfig::allow_skipped when that is meant",
                config.machines.name(),
                never.join(", ")
            ));
        }
        if report.nondeterministic() > 0 {
            let (i, (seed, e)) = report
                .scenarios
                .iter()
                .enumerate()
                .find_map(|(i, o)| o.nondeterministic_seeds.first().map(|x| (i, x)))
                .ok_or("leasesim: a run was not deterministic")?;
            return Err(format!(
                "leasesim: {} seed {seed} is not deterministic on '{}': {e}",
                config.scenarios[i].name,
                config.machines.name()
            ));
        }
        Ok(report)
    }

    /// This configuration, cut to the shard the environment names when it has none of its own
    /// (announced on standard error, which the test runner shows with the test's output).
    fn sharded_by_env(&self) -> Result<SweepConfig, String> {
        if self.shard.is_some() {
            return Ok(self.clone());
        }
        let Some((shard, source)) = Shard::from_env().map_err(|e| format!("leasesim: {e}"))? else {
            return Ok(self.clone());
        };
        let config = SweepConfig {
            shard: Some(shard),
            ..self.clone()
        };
        eprintln!("leasesim: {}", config.shard_line(&source)?);
        Ok(config)
    }

    /// `shard 2/4 (from CI_NODE_INDEX=2 CI_NODE_TOTAL=4): w1-w2 seeds 250..500, ...`.
    fn shard_line(&self, source: &str) -> Result<String, String> {
        let share = self.share()?;
        let seeds: Vec<String> = self
            .scenarios
            .iter()
            .zip(&share)
            .map(|(d, r)| format!("{} {}", d.name, describe_ranges(std::slice::from_ref(r))))
            .collect();
        Ok(format!(
            "shard {} of the sweep (from {source}): seeds {}",
            self.shard.map_or("1/1".into(), |s| s.to_string()),
            seeds.join("; ")
        ))
    }

    /// This configuration narrowed to one seed (`<scenario>:<seed>` or `<seed>`).
    fn one_seed(&self, spec: &str) -> Result<SweepConfig, String> {
        let (name, seed) = match spec.rsplit_once(':') {
            Some((name, seed)) => (Some(name), seed),
            None => (None, spec),
        };
        let seed: u64 = seed
            .trim()
            .parse()
            .map_err(|_| format!("{SEED_VAR}={spec}: expected <scenario>:<seed> or <seed>"))?;
        let scenarios: Vec<_> = match name {
            Some(name) => self
                .scenarios
                .iter()
                .filter(|d| d.name == name)
                .cloned()
                .collect(),
            None => self.scenarios.clone(),
        };
        if scenarios.is_empty() {
            return Err(format!(
                "{SEED_VAR}={spec}: this sweep has no such scenario"
            ));
        }
        Ok(SweepConfig {
            scenarios,
            seeds: SeedRange {
                start: seed,
                end: seed.saturating_add(1),
            },
            shard: None,
            ..self.clone()
        })
    }

    /// Reruns a saved replay on this configuration's machines.
    fn check_replay(&self, file: &Path) -> Result<SweepReport, String> {
        let replay = Replay::load(file)?;
        let r = replay
            .run_on(&self.machines)
            .map_err(|e| format!("{REPLAY_VAR}={}: {e}", file.display()))?;
        let verdict = r.verdict();
        if verdict != crate::Verdict::Held {
            let first = r
                .findings
                .first()
                .map_or_else(|| verdict.word(), |f| f.message.clone());
            return Err(format!(
                "leasesim: the replay {} ({} seed {}) fails again on '{}': {first}",
                file.display(),
                replay.setup.scenario,
                replay.seed,
                self.machines.name()
            ));
        }
        let mut outcome = ScenarioOutcome {
            runs: 1,
            ..ScenarioOutcome::default()
        };
        outcome.ran.push(replay.seed..replay.seed + 1);
        Ok(SweepReport {
            scenarios: vec![outcome],
            runs: 1,
            events: r.events,
            trace_events: r.trace.len() as u64,
            threads: 1,
            interrupted: false,
            budget: None,
        })
    }

    /// Saves the failing run (and its shrunk version) and says how to rerun it.
    fn explain(&self, sc: usize, seed: u64, first: &str, report: &SweepReport) -> String {
        let def = &self.scenarios[sc];
        let m = &self.machines;
        let test = test_name();
        let pkg = std::env::var("CARGO_PKG_NAME").unwrap_or_else(|_| "<package>".into());
        let rerun_with =
            |var: &str, value: &str| format!("{var}={value} cargo test -p {pkg} {test} -- --exact");
        let mut lines = vec![format!(
            "leasesim: the machines '{}' failed {} of {} runs{}; the first is {} seed {seed}: {first}",
            m.name(),
            report.failing(),
            report.runs,
            self.shard
                .map_or(String::new(), |s| format!(" of shard {s}")),
            def.name
        )];
        let dir = failures_dir();
        let stem = format!("{}-{}-seed{seed}", sanitize(&test), def.name);
        let path = dir.join(format!("{stem}.json"));
        let setup = def.build(seed, m.setup_variant());
        let r = run(&setup, seed, m);
        let rerun = rerun_with(REPLAY_VAR, &path.display().to_string());
        let replay = Replay::record_on(&setup, seed, self.allow_unsafe_timing, &r, m, &rerun);
        let saved = std::fs::create_dir_all(&dir)
            .map_err(|e| e.to_string())
            .and_then(|()| replay.save(&path));
        match saved {
            Ok(()) => {
                lines.push(format!("  saved: {}", path.display()));
                lines.push(format!("  rerun exactly this run: {rerun}"));
                let shrunk_path = dir.join(format!("{stem}.shrunk.json"));
                if let Ok(s) = shrink::shrink_on(&replay, m) {
                    let mut shrunk = s.replay;
                    if let Some(rec) = &mut shrunk.machines {
                        rec.rerun = rerun_with(REPLAY_VAR, &shrunk_path.display().to_string());
                    }
                    if shrunk.save(&shrunk_path).is_ok() {
                        lines.push(format!(
                            "  shrunk to {} fault(s), {} still fails: {}",
                            shrunk.setup.faults.len(),
                            s.invariant.label(),
                            rerun_with(REPLAY_VAR, &shrunk_path.display().to_string())
                        ));
                    }
                }
            }
            Err(e) => lines.push(format!("  (could not save the replay: {e})")),
        }
        lines.push(format!(
            "  or this seed of the sweep: {}",
            rerun_with(SEED_VAR, &format!("{}:{seed}", def.name))
        ));
        lines.join("\n")
    }
}

/// The running test's name (libtest names each test's thread after it).
fn test_name() -> String {
    std::thread::current()
        .name()
        .filter(|n| *n != "main")
        .unwrap_or("<test name>")
        .to_string()
}

/// `tests::my_test` -> `tests-my_test`, safe in a file name.
fn sanitize(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '-'
            }
        })
        .collect()
}

/// `target/leasesim-failures/` of the build that runs the test: `CARGO_TARGET_DIR`, or the
/// `target` folder the test executable lives in, or `./target`.
fn failures_dir() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .or_else(|| {
            let exe = std::env::current_exe().ok()?;
            exe.ancestors()
                .find(|a| a.file_name().is_some_and(|n| n == "target"))
                .map(Path::to_path_buf)
        })
        .unwrap_or_else(|| PathBuf::from("target"));
    target.join("leasesim-failures")
}

/// Why a sweep that held proves little: the declared hazards (scenario, hazard) it never
/// reached, and a hint when only a journal shows some of them.
fn unreached_error(config: &SweepConfig, unreached: &[(usize, crate::Hazard)]) -> String {
    let journal_only = |h: &crate::Hazard| crate::hazard::JOURNAL_ONLY.contains(h);
    let names: Vec<String> = unreached
        .iter()
        .map(|(i, h)| {
            let only = if journal_only(h) {
                " (only a journal shows it)"
            } else {
                ""
            };
            format!("{} {}{only}", config.scenarios[*i].name, h.name())
        })
        .collect();
    let hint = if unreached.iter().any(|(_, h)| journal_only(h)) {
        "; machines that write no journal say so with Machines::without_journal()"
    } else {
        ""
    };
    format!(
        "leasesim: the machines '{}' held, but never reached these declared hazards, so the sweep proves little: {}{hint}",
        config.machines.name(),
        names.join(", ")
    )
}
