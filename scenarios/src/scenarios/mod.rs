//! Named scenarios: each a story whose timings the seed varies, declaring the hazards it exists
//! to reach (a sweep of 100 seeds or more that never reaches one of them fails).

use crate::setup::Setup;
use leasesim_checkers::Hazard;
use leasesim_protocol::Variant;
use std::borrow::Cow;
use std::sync::Arc;

pub mod story;

mod admission;
mod clock_jump;
mod clock_skew_fast_worker;
mod coordinator_outage;
mod duplicate_delivery;
mod gc_pause_after_check;
mod heartbeat_ack_lost;
mod human_handoff;
mod late_grant_reply;
mod late_tool_answer;
mod operator_takeover;
mod renewal_cap;
mod reordered_commit;
mod restart_same_name;
mod retries;
mod slow_but_healthy;
mod stages;
mod stuck_tool_live_heartbeat;
mod swarm;
mod w1_w2;

/// A named scenario: a story whose timings the seed varies, and the hazards it exists to reach.
///
/// leasesim's own are in [`ALL`]; a user's plugs in the same way, wherever a scenario is taken
/// (a sweep, [`crate::check`], the explorer, the matrix, `leasesim_cli::main_with`): built from
/// a closure ([`ScenarioDef::new`], which may use a [`story::Story`]), or from a stock scenario
/// with a changed setup ([`ScenarioDef::with_setup`]). Cheap to clone (the builder is shared).
///
/// ```
/// use leasesim::scenarios::{self, story::Story, ScenarioDef};
/// use leasesim::Hazard;
/// use leasesim_protocol::Step;
///
/// // A story of one's own: two workers, one job of one tool call, seed-drawn timings.
/// let two_workers = ScenarioDef::new(
///     "two-workers-one-job",
///     "two workers race for one job; nothing goes wrong",
///     |seed, variant| {
///         let mut s = Story::new("two-workers-one-job", seed, variant, &[1, 2], [Step::Tool], 1);
///         s.start_worker(1, 0, 10);
///         s.finish()
///     },
/// )
/// .with_hazards(&[Hazard::ConcurrentClaims]);
/// assert_eq!(two_workers.build(3, leasesim::Variant::Reference).scenario, "two-workers-one-job");
///
/// // A stock scenario with a longer lease: a new name, the same hazards.
/// let long_lease = scenarios::find("w1-w2").unwrap().with_setup("w1-w2-long-lease", |setup, _seed, _variant| {
///     for class in &mut setup.classes {
///         class.lease_ns *= 2;
///     }
/// });
/// assert_eq!(long_lease.hazards, scenarios::find("w1-w2").unwrap().hazards);
/// ```
#[derive(Clone)]
pub struct ScenarioDef {
    /// Kebab-case name: what the command line selects, and what setups and replay files record.
    pub name: Cow<'static, str>,
    /// The story in one line.
    pub story: Cow<'static, str>,
    /// The hazards it exists to reach.
    pub hazards: Cow<'static, [Hazard]>,
    /// Judgements its story voids by design in every run (a stepped clock voids
    /// `belief-within-grant`): a sweep allows them to be skipped everywhere, and still counts
    /// each skip.
    pub unjudged: Cow<'static, [&'static str]>,
    build: Build,
}

/// How a scenario builds its setup.
#[derive(Clone)]
enum Build {
    /// leasesim's own: a function.
    Stock(fn(u64, Variant) -> Setup),
    /// A user's: any closure.
    Closure(Arc<dyn Fn(u64, Variant) -> Setup + Send + Sync>),
}

impl std::fmt::Debug for ScenarioDef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScenarioDef")
            .field("name", &self.name)
            .field("hazards", &self.hazards)
            .field("unjudged", &self.unjudged)
            .finish_non_exhaustive()
    }
}

impl ScenarioDef {
    /// A scenario of one's own: `build` makes its setup for a seed and the variant the machines
    /// under test are built with. Declares no hazards and voids no judgement until told
    /// ([`ScenarioDef::with_hazards`], [`ScenarioDef::with_unjudged`]). The setup it builds is
    /// named `name` whatever `build` called it.
    pub fn new(
        name: impl Into<Cow<'static, str>>,
        story: impl Into<Cow<'static, str>>,
        build: impl Fn(u64, Variant) -> Setup + Send + Sync + 'static,
    ) -> ScenarioDef {
        ScenarioDef {
            name: name.into(),
            story: story.into(),
            hazards: Cow::Borrowed(&[]),
            unjudged: Cow::Borrowed(&[]),
            build: Build::Closure(Arc::new(build)),
        }
    }

    /// The same scenario declaring these hazards: a sweep of 100 seeds or more that never
    /// reaches one of them fails ([`crate::SweepReport::unreached`]).
    pub fn with_hazards(mut self, hazards: &[Hazard]) -> ScenarioDef {
        let mut own: Vec<Hazard> = Vec::with_capacity(hazards.len());
        for h in hazards {
            if !own.contains(h) {
                own.push(*h);
            }
        }
        self.hazards = Cow::Owned(own);
        self.changed()
    }

    /// A stock scenario changed in any way is no longer leasesim's own (its name must change
    /// too: [`crate::Builder::validate`]).
    fn changed(mut self) -> ScenarioDef {
        if let Build::Stock(f) = self.build {
            self.build = Build::Closure(Arc::new(f));
        }
        self
    }

    /// The same scenario declaring judgements its story voids in every run (see
    /// [`ScenarioDef::unjudged`]).
    pub fn with_unjudged(mut self, judgements: &[&'static str]) -> ScenarioDef {
        self.unjudged = Cow::Owned(judgements.to_vec());
        self.changed()
    }

    /// The same scenario told by another one-line story (what `list` shows).
    pub fn with_story(mut self, story: impl Into<Cow<'static, str>>) -> ScenarioDef {
        self.story = story.into();
        self.changed()
    }

    /// This scenario, renamed `name`, with `change` applied to every setup it builds (given the
    /// seed and the variant): a stock scenario with a longer lease, another receiver, one fault
    /// more. Its story (until [`ScenarioDef::with_story`]), hazards and unjudged judgements are
    /// this one's.
    pub fn with_setup(
        &self,
        name: impl Into<Cow<'static, str>>,
        change: impl Fn(&mut Setup, u64, Variant) + Send + Sync + 'static,
    ) -> ScenarioDef {
        let base = self.clone();
        ScenarioDef {
            name: name.into(),
            build: Build::Closure(Arc::new(move |seed, variant| {
                let mut setup = base.build(seed, variant);
                change(&mut setup, seed, variant);
                setup
            })),
            ..self.clone()
        }
    }

    /// Builds the setup for a seed and the variant the machines under test are built with
    /// ([`crate::Machines::setup_variant`]); the setup is named after this scenario.
    pub fn build(&self, seed: u64, variant: Variant) -> Setup {
        let mut setup = match &self.build {
            Build::Stock(f) => f(seed, variant),
            Build::Closure(f) => f(seed, variant),
        };
        if setup.scenario != *self.name {
            setup.scenario = self.name.to_string();
        }
        setup
    }

    /// Whether this is one of leasesim's own scenarios (any `leasesim` binary can run it).
    pub fn is_stock(&self) -> bool {
        matches!(self.build, Build::Stock(_)) && find(&self.name).is_some()
    }
}

impl From<&ScenarioDef> for ScenarioDef {
    fn from(d: &ScenarioDef) -> ScenarioDef {
        d.clone()
    }
}

/// A stock scenario as its module declares it.
pub(crate) struct Stock {
    pub name: &'static str,
    pub story: &'static str,
    pub hazards: &'static [Hazard],
    pub unjudged: &'static [&'static str],
    pub build: fn(seed: u64, variant: Variant) -> Setup,
}

impl Stock {
    const fn def(self) -> ScenarioDef {
        ScenarioDef {
            name: Cow::Borrowed(self.name),
            story: Cow::Borrowed(self.story),
            hazards: Cow::Borrowed(self.hazards),
            unjudged: Cow::Borrowed(self.unjudged),
            build: Build::Stock(self.build),
        }
    }
}

/// Every scenario, in the order `list` shows them.
pub const ALL: &[ScenarioDef] = &[
    Stock {
        name: "w1-w2",
        story: "W1 loses only the coordinator past its lease expiry; W2 takes over and completes; \
                W1 returns with a late tool success and a late second effect",
        hazards: &[
            Hazard::Takeover,
            Hazard::StaleCommitRejected,
            Hazard::StaleFenceRejected,
            Hazard::DuplicateKeyAnswered,
            Hazard::JeopardyEntered,
            Hazard::LateAnswerAfterExpiry,
            Hazard::MessageLate,
        ],
        unjudged: &[],
        build: w1_w2::build,
    }
    .def(),
    gc_pause_after_check::DEF.def(),
    late_tool_answer::DEF.def(),
    heartbeat_ack_lost::DEF.def(),
    coordinator_outage::DEF.def(),
    clock_skew_fast_worker::DEF.def(),
    clock_jump::DEF.def(),
    restart_same_name::DEF.def(),
    duplicate_delivery::DEF.def(),
    reordered_commit::DEF.def(),
    operator_takeover::DEF.def(),
    slow_but_healthy::DEF.def(),
    stuck_tool_live_heartbeat::DEF.def(),
    renewal_cap::DEF.def(),
    retries::DEF.def(),
    human_handoff::DEF.def(),
    admission::DEF.def(),
    stages::DEF.def(),
    late_grant_reply::DEF.def(),
    swarm::DEF.def(),
];

/// Looks a scenario up by name.
pub fn find(name: &str) -> Option<&'static ScenarioDef> {
    ALL.iter().find(|s| s.name == name)
}

/// Whether `defs` are exactly leasesim's own scenarios, in [`ALL`]'s order: what `leasesim`'s
/// own binary has, so that a command it prints without scenario names means the same there.
pub fn is_stock_list(defs: &[ScenarioDef]) -> bool {
    defs.len() == ALL.len()
        && defs
            .iter()
            .zip(ALL)
            .all(|(d, s)| d.is_stock() && d.name == s.name)
}

/// Looks a scenario up by name among `catalogue` (a program's scenarios).
pub fn find_in<'a>(catalogue: &'a [ScenarioDef], name: &str) -> Option<&'a ScenarioDef> {
    catalogue.iter().find(|s| s.name == name)
}

/// [`find_in`], or the one-line error a command prints for a name the program lacks.
pub fn named(catalogue: &[ScenarioDef], name: &str) -> Result<ScenarioDef, String> {
    find_in(catalogue, name).cloned().ok_or_else(|| {
        let known: Vec<&str> = catalogue.iter().map(|s| &*s.name).collect();
        format!("unknown scenario '{name}' (known: {})", known.join(", "))
    })
}

/// The named scenarios of `catalogue`, each once (all of them when none is named).
pub fn named_list(catalogue: &[ScenarioDef], names: &[String]) -> Result<Vec<ScenarioDef>, String> {
    if names.is_empty() {
        return Ok(catalogue.to_vec());
    }
    let mut defs: Vec<ScenarioDef> = Vec::with_capacity(names.len());
    for n in names {
        let d = named(catalogue, n)?;
        if defs.iter().any(|x| x.name == d.name) {
            return Err(format!(
                "scenario '{n}' is named twice; each scenario runs once"
            ));
        }
        defs.push(d);
    }
    Ok(defs)
}

/// Refuses machines whose configuration breaks P6 in any of `defs` unless `allow` (the
/// `--allow-unsafe-timing` bypass): validation is what `run` and `sweep` do first, and every
/// command that runs a variant does it the same way.
pub fn refuse_unsafe_timing(
    defs: &[ScenarioDef],
    seed: u64,
    m: &crate::Machines,
    allow: bool,
) -> Result<(), String> {
    if allow {
        return Ok(());
    }
    for d in defs {
        d.build(seed, m.setup_variant())
            .validate_timing()
            .map_err(|e| {
                format!(
                    "{}: {e}; pass --allow-unsafe-timing to run it anyway",
                    d.name
                )
            })?;
    }
    Ok(())
}
