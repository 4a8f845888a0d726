//! The one entry point: name the machines, the scenarios and the seeds once, then run one seed,
//! sweep, check inside `cargo test`, explore fault placements, or compare in a matrix. The
//! command line of a user's own binary is the same builder (`leasesim_cli::main_with`).
//!
//! ```
//! use leasesim::{Builder, Machines, Verdict};
//! use leasesim_protocol::{Variant, Worker};
//!
//! // A set of one's own: here the "user's" worker is the reference one, to keep it short. The
//! // factory returns the machine itself; no box, no cast.
//! let mine = Machines::new("mine").with_worker("my-worker", |spec| {
//!     Worker::new(spec.config.clone(), Variant::Reference.switches())
//! });
//! let testbed = Builder::new().machines(mine).seeds(0..3).without("swarm");
//!
//! // One seed of one scenario: the seed is given once, the variant comes from the machines.
//! let result = testbed.run("w1-w2", 7).unwrap();
//! assert_eq!(result.verdict(), Verdict::Held, "{:?}", result.findings);
//!
//! // Every seed of every scenario, as a test: panics with the rerun command on a failure.
//! let report = testbed.check();
//! assert_eq!(report.failing(), 0);
//! ```

use crate::explore::{self, ExploreConfig, Explored};
use crate::machines::Machines;
use crate::matrix::{self, Matrix};
use crate::run::{run, RunResult};
use crate::scenarios::{self, ScenarioDef};
use crate::sweep::{sweep, Quiet, SeedRange, SweepConfig, SweepReport};
use std::ops::Range;
use std::sync::atomic::AtomicBool;

/// Seeds per scenario a builder sweeps unless told ([`Builder::seeds`]).
pub const DEFAULT_SEEDS: Range<u64> = 0..100;

/// Machines, scenarios and seeds: what every action of leasesim runs on (see the module's
/// documentation). Cheap to clone.
#[derive(Clone, Debug)]
pub struct Builder {
    machines: Vec<Machines>,
    scenarios: Vec<ScenarioDef>,
    seeds: Range<u64>,
    threads: Option<usize>,
    allow_skipped: Vec<String>,
    started_with: Option<String>,
    check_determinism: bool,
}

impl Default for Builder {
    fn default() -> Self {
        Builder::new()
    }
}

impl Builder {
    /// Every stock scenario ([`scenarios::ALL`]), seeds 0..100, no machines yet (leasesim's
    /// reference runs until some are given).
    pub fn new() -> Builder {
        Builder {
            machines: Vec::new(),
            scenarios: scenarios::ALL.to_vec(),
            seeds: DEFAULT_SEEDS,
            threads: None,
            allow_skipped: Vec::new(),
            started_with: None,
            check_determinism: false,
        }
    }

    /// leasesim's own: the reference and every known-bad variant ([`Machines::stock`]) on every
    /// stock scenario; what the `leasesim` binary runs.
    pub fn stock() -> Builder {
        Machines::stock()
            .into_iter()
            .fold(Builder::new(), Builder::machines)
    }

    /// Adds a set of machines. The first added is the one [`Builder::run`], [`Builder::sweep`],
    /// [`Builder::check`] and [`Builder::explore`] run (and the command line's default); every
    /// set is a row of [`Builder::matrix`] and a `--variant` of the command line.
    pub fn machines(mut self, machines: Machines) -> Builder {
        self.machines.push(machines);
        self
    }

    /// Adds a scenario of one's own after those already there (see [`ScenarioDef::new`] and
    /// [`ScenarioDef::with_setup`]).
    pub fn scenario(mut self, scenario: ScenarioDef) -> Builder {
        self.scenarios.push(scenario);
        self
    }

    /// Replaces the scenarios with these, in this order (`Vec::new()` and then
    /// [`Builder::scenario`] for only one's own).
    pub fn scenarios(mut self, scenarios: impl IntoIterator<Item = ScenarioDef>) -> Builder {
        self.scenarios = scenarios.into_iter().collect();
        self
    }

    /// Drops the scenario named `name` (an unknown name drops nothing; the builder's
    /// [`Builder::validate`] does not see it).
    pub fn without(mut self, name: &str) -> Builder {
        self.scenarios.retain(|s| s.name != name);
        self
    }

    /// The seeds every scenario is swept over.
    pub fn seeds(mut self, seeds: Range<u64>) -> Builder {
        self.seeds = seeds;
        self
    }

    /// Threads to sweep on (every core unless told).
    pub fn threads(mut self, threads: usize) -> Builder {
        self.threads = Some(threads);
        self
    }

    /// Runs every seed twice and compares the traces ([`SweepConfig::check_determinism`]): a
    /// seed whose two runs differ is reported with the first event where they diverge.
    pub fn check_determinism(mut self) -> Builder {
        self.check_determinism = true;
        self
    }

    /// Lets [`Builder::check`] pass when `judgement` (a judgement's name, its invariant's, or
    /// an id like `I5`) is skipped in every run of a scenario (see
    /// [`SweepConfig::allow_skipped`]).
    pub fn allow_skipped(mut self, judgement: &str) -> Builder {
        self.allow_skipped.push(judgement.to_string());
        self
    }

    /// How the commands this program prints start it again, when the default (`cargo run
    /// --release -p PACKAGE --bin NAME --`, from the binary's name) is not enough: a binary
    /// behind a cargo feature says so here, e.g. `cargo run --release -p my-worker
    /// --no-default-features --features sim --bin my-leasesim --`. Used by
    /// `leasesim_cli::main_with`.
    pub fn started_with(mut self, command: impl Into<String>) -> Builder {
        self.started_with = Some(command.into());
        self
    }

    /// The command given by [`Builder::started_with`], if any.
    pub fn start_command(&self) -> Option<&str> {
        self.started_with.as_deref()
    }

    /// The judgements allowed to be skipped everywhere ([`Builder::allow_skipped`]): `check()`
    /// and the command line's `sweep` both allow them.
    pub fn allowed_skips(&self) -> &[String] {
        &self.allow_skipped
    }

    /// The machine sets, in the order given (leasesim's reference alone when none was).
    pub fn machine_sets(&self) -> Vec<Machines> {
        if self.machines.is_empty() {
            vec![Machines::reference()]
        } else {
            self.machines.clone()
        }
    }

    /// The scenarios, in order.
    pub fn scenario_defs(&self) -> &[ScenarioDef] {
        &self.scenarios
    }

    /// The seeds.
    pub fn seed_range(&self) -> Range<u64> {
        self.seeds.clone()
    }

    /// The machines the single-set actions run: the first given.
    pub fn default_machines(&self) -> Machines {
        self.machines
            .first()
            .cloned()
            .unwrap_or_else(Machines::reference)
    }

    /// The scenario named `name`, or an error listing those there are.
    pub fn find(&self, name: &str) -> Result<&ScenarioDef, String> {
        scenarios::find_in(&self.scenarios, name).ok_or_else(|| {
            let known: Vec<&str> = self.scenarios.iter().map(|s| &*s.name).collect();
            format!("unknown scenario '{name}' (known: {})", known.join(", "))
        })
    }

    /// Whether the builder is consistent: no two scenarios or machine sets share a name, a
    /// scenario of one's own does not take a stock scenario's name (a replay file or a rerun
    /// command names it, and would run the stock one elsewhere), and the seeds are not empty.
    pub fn validate(&self) -> Result<(), String> {
        if self.scenarios.is_empty() {
            return Err("no scenarios to run".into());
        }
        if self.seeds.is_empty() {
            return Err(format!(
                "the seed range {}..{} is empty",
                self.seeds.start, self.seeds.end
            ));
        }
        for (i, s) in self.scenarios.iter().enumerate() {
            let kebab = !s.name.is_empty()
                && !s.name.starts_with('-')
                && s.name
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
            if !kebab {
                return Err(format!(
                    "scenario name {:?} is not kebab-case (lowercase letters, digits and '-'): files and commands carry it",
                    s.name
                ));
            }
            if !s.is_stock() && scenarios::find(&s.name).is_some() {
                return Err(format!(
                    "scenario '{}' of one's own takes the name of a stock scenario; name it otherwise (ScenarioDef::with_setup takes a new name)",
                    s.name
                ));
            }
            if self.scenarios[..i].iter().any(|o| o.name == s.name) {
                return Err(format!("two scenarios are named '{}'", s.name));
            }
        }
        for (i, m) in self.machines.iter().enumerate() {
            if m.name().is_empty() || m.name().chars().any(char::is_whitespace) {
                return Err(format!(
                    "machine set name {:?} is empty or has spaces: --variant and files carry it",
                    m.name()
                ));
            }
            if self.machines[..i].iter().any(|o| o.name() == m.name()) {
                return Err(format!(
                    "two machine sets are named '{}' (name yours with Machines::new or Machines::named)",
                    m.name()
                ));
            }
        }
        Ok(())
    }

    /// The sweep [`Builder::sweep`] and [`Builder::check`] run, to adjust further (a shard, a
    /// time budget, determinism checks).
    pub fn sweep_config(&self) -> Result<SweepConfig, String> {
        self.validate()?;
        let mut config = SweepConfig::new(
            self.scenarios.clone(),
            SeedRange {
                start: self.seeds.start,
                end: self.seeds.end,
            },
            self.default_machines(),
        );
        if let Some(t) = self.threads {
            config.threads = t;
        }
        config.allow_skipped = self.allow_skipped.clone();
        config.check_determinism = self.check_determinism;
        Ok(config)
    }

    /// One seed of the scenario `name` on the first machines: the setup built for that seed
    /// with the machines' variant, run with the same seed.
    pub fn run(&self, name: &str, seed: u64) -> Result<RunResult, String> {
        self.validate()?;
        let m = self.default_machines();
        let setup = self.find(name)?.build(seed, m.setup_variant());
        m.expressible(&setup)
            .map_err(|e| format!("{} cannot express {name} seed {seed}: {e}", m.name()))?;
        Ok(run(&setup, seed, &m))
    }

    /// Every seed of every scenario on the first machines, on every core, quietly: the report,
    /// whatever it says (see [`Builder::check`] for the test that fails).
    pub fn sweep(&self) -> Result<SweepReport, String> {
        Ok(sweep(
            &self.sweep_config()?,
            &AtomicBool::new(false),
            &Quiet,
        ))
    }

    /// The sweep as a test ([`SweepConfig::check`]): panics when a run fails (after saving it,
    /// shrunk, and printing the command that reruns it), a declared hazard is never reached or
    /// a judgement is skipped in every run of a scenario; `LEASESIM_REPLAY` and `LEASESIM_SEED`
    /// rerun one run instead ([`crate::check`]). Panics on an inconsistent builder too.
    pub fn check(&self) -> SweepReport {
        match self.sweep_config() {
            Ok(config) => config.check(),
            Err(e) => panic!("leasesim: {e}"),
        }
    }

    /// Every placement of up to `faults_max` faults at the protocol events of one seed of the
    /// scenario `name`, on the first machines ([`crate::explore`]).
    pub fn explore(&self, name: &str, seed: u64, faults_max: usize) -> Result<Explored, String> {
        self.validate()?;
        let mut config = ExploreConfig::new(
            self.find(name)?.clone(),
            seed,
            self.default_machines(),
            faults_max,
        );
        config.threads = self.threads;
        explore::explore(&config, &AtomicBool::new(false), &explore::Silent)
    }

    /// Every machine set against every scenario, at most as many seeds per scenario as the
    /// builder's range holds from 0 ([`crate::matrix`]): sets expected to hold must hold
    /// everywhere, known-bad ones must be caught.
    pub fn matrix(&self) -> Result<Matrix, String> {
        self.validate()?;
        let threads = crate::pool::threads(self.threads, u64::MAX)?;
        Ok(matrix::compare(
            &self.machine_sets(),
            &self.scenarios,
            self.seeds.end,
            threads,
        ))
    }
}
