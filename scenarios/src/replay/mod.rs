//! Replay files: a run's whole input as versioned JSON — scenario, variant, seed, the complete
//! configuration and the fault plan as explicit faults with their times or protocol anchors —
//! plus what the run that wrote it saw (verdict, invariants, trace hash). Because the plan is
//! explicit, a replay stays meaningful when unrelated code changes: the seed drives only what
//! the plan leaves open (latencies, tool durations).
//!
//! The file has types of its own, one module per format version (`v1` today), converted to and
//! from the run's types field by field. [`Setup`] and the fault plan derive no serde at all, and
//! the protocol's configuration types they hold are copied field by field too, so no internal
//! rename can change what a file says. Trace files (`run --trace`) hold their setup in the same
//! types.
//!
//! Reading one never panics: a malformed, truncated, future-version or inconsistent file is an
//! error with one line of explanation.

mod json;
pub(crate) mod v1;

use crate::machines::Machines;
use crate::plan::Fault;
use crate::run::{run, run_setup, RunResult, Verdict};
use crate::setup::Setup;
pub use json::read_bounded;
use json::{parse_json, too_large};
use leasesim_protocol::Invariant;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// The `format` field of every replay file.
pub const FORMAT: &str = "leasesim-replay";
/// The format version this build writes; it reads this one and none older (there is none).
pub const VERSION: u32 = 1;
/// Largest replay or trace file read (bytes): a bound, like every input. A trace file of a run
/// longer than this is reported from its replay file instead (`run --save`).
pub const MAX_BYTES: u64 = 64 << 20;

/// A run's setup as files hold it (replay format 1's shape), for documents that embed one. Fails
/// for a fault plan the format cannot state, which [`Setup::check`] refuses as well.
pub fn setup_json(setup: &Setup) -> Result<serde_json::Value, String> {
    let file = v1::Setup::try_from(setup).map_err(|e| format!("cannot encode a setup: {e}"))?;
    serde_json::to_value(file).map_err(|e| format!("cannot encode a setup: {e}"))
}

/// One fault as files hold it, for documents that show a plan (its debug form if no file could
/// hold it).
pub fn fault_json(fault: &Fault) -> serde_json::Value {
    v1::Fault::try_from(fault)
        .ok()
        .and_then(|f| serde_json::to_value(f).ok())
        .unwrap_or_else(|| format!("{fault:?}").into())
}

pub use v1::fault_line;

/// Reads a run's setup out of a document's `setup` field and checks it as a replay's: numbers in
/// range, the structure sound, the top-level `scenario` and `variant` the same as the setup's,
/// the scenario named, the timing valid (P6) unless the file says it was bypassed.
fn setup_of(doc: &serde_json::Value, what: &str) -> Result<Setup, String> {
    let value = doc
        .get("setup")
        .ok_or_else(|| format!("malformed {what}: no \"setup\""))?;
    if let Some(n) = too_large(value) {
        return Err(format!(
            "malformed {what}: the number {n} in \"setup\" is out of range (at most 2^53 in magnitude)"
        ));
    }
    let setup: Setup = serde_json::from_value::<v1::Setup>(value.clone())
        .map_err(|e| format!("malformed {what}: \"setup\": {e}"))?
        .into();
    setup
        .check()
        .map_err(|e| format!("inconsistent {what}: \"setup\": {e}"))?;
    // The scenario is a name: a program that lacks it refuses the file when it runs it
    // (a user's own scenarios are only in the user's program).
    if setup.scenario.is_empty() {
        return Err(format!("inconsistent {what}: \"setup.scenario\" is empty"));
    }
    for (field, own) in [
        ("scenario", setup.scenario.as_str()),
        ("variant", setup.variant.name()),
    ] {
        match doc.get(field).and_then(|v| v.as_str()) {
            Some(top) if top != own => {
                return Err(format!(
                    "inconsistent {what}: \"{field}\" is \"{top}\" but \"setup.{field}\" is \"{own}\"; the setup is what runs, so the file contradicts itself"
                ))
            }
            _ => {}
        }
    }
    let bypass = doc
        .get("allow_unsafe_timing")
        .and_then(|v| v.as_bool())
        .unwrap_or(false);
    // The check `run` applies: a file recorded past it says so (`run --allow-unsafe-timing
    // --save`, a sweep's or the explorer's saved failure), and one that does not is refused as
    // `run` would refuse its setup, so that a replay never runs what `advise` calls unsafe.
    if !bypass {
        setup.validate_timing().map_err(|e| {
            format!("{e}; the {what} does not say it was recorded past this check (\"allow_unsafe_timing\": true), so it is refused as `run` refuses it")
        })?;
    }
    Ok(setup)
}

/// What the run that wrote the file saw.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Expect {
    /// Its verdict.
    pub verdict: Verdict,
    /// The invariants it broke (short names), in order of first finding.
    pub invariants: Vec<String>,
    /// Its trace hash (16 hex digits).
    pub trace_hash: String,
    /// Events it processed.
    pub events: u64,
}

/// A replay: what a replay file holds, read and checked. The scenario and the variant are the
/// setup's; a file states them a second time at its top, and reading refuses a file whose two
/// copies differ.
#[derive(Clone, Debug, PartialEq)]
pub struct Replay {
    /// The leasesim version that wrote it.
    pub leasesim: String,
    /// The seed.
    pub seed: u64,
    /// Whether the configuration was run past a failed P6 validation.
    pub allow_unsafe_timing: bool,
    /// The whole configuration and explicit fault plan.
    pub setup: Setup,
    /// What the recorded run saw; a hand-written file may leave it out, and is then run and
    /// judged without a comparison.
    pub expect: Option<Expect>,
    /// One line on the bug this run exposed (regression files).
    pub note: Option<String>,
    /// The user's machines it was recorded with (`None`: leasesim's own, for the setup's
    /// variant, which any `leasesim` runs).
    pub machines: Option<RecordedMachines>,
}

/// The user's machines a replay was recorded with: their names, and the command that reruns the
/// file with them (only the program that defines them can).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecordedMachines {
    /// The name of the set.
    pub name: String,
    /// The coordinator's implementation.
    pub coordinator: String,
    /// The worker's.
    pub worker: String,
    /// The receiver's.
    pub receiver: String,
    /// How to rerun it (`<program> replay <file>`, or the test with `LEASESIM_REPLAY`).
    pub rerun: String,
}

/// The machines a saved run must run on, from a catalogue: leasesim's own for its setup's
/// variant, or the recorded user's machines if the catalogue has them. The error says who can
/// rerun it: a file of a user's machines never runs silently on the reference.
///
/// `file` is the file as the user named it: the rerun command shown names it, not the path it
/// was recorded at (the file may have moved since).
pub fn machines_in(
    recorded: Option<&RecordedMachines>,
    setup: &Setup,
    catalogue: &[Machines],
    file: Option<&Path>,
) -> Result<Machines, String> {
    match recorded {
        None => Ok(Machines::variant(setup.variant)),
        Some(rec) => catalogue.iter().find(|m| rec.are(m)).cloned().ok_or_else(|| {
            let rerun = file.map_or_else(|| rec.rerun.clone(), |f| rerun_naming(&rec.rerun, f));
            format!(
                "it was recorded with the machines '{}' (coordinator {}, worker {}, receiver {}), which this program does not have; rerun it with: {rerun}",
                rec.name, rec.coordinator, rec.worker, rec.receiver
            )
        }),
    }
}

/// The environment variable naming a replay file a test reruns instead of its sweep
/// ([`crate::check`]).
pub const REPLAY_VAR: &str = "LEASESIM_REPLAY";

/// A recorded rerun command (`<program> replay <recorded path> [--coordinator ...]`, or
/// `LEASESIM_REPLAY=<recorded path> cargo test ...`) naming `file` instead of the recorded
/// path.
pub fn rerun_naming(rerun: &str, file: &Path) -> String {
    // Absolute: a test's rerun runs from its package's folder, not the user's.
    let file = std::path::absolute(file).unwrap_or_else(|_| file.to_path_buf());
    let f = file.display();
    if let Some(rest) = rerun.strip_prefix(&format!("{REPLAY_VAR}=")) {
        if let Some((_, tail)) = rest.split_once(' ') {
            return format!("{REPLAY_VAR}={f} {tail}");
        }
    }
    if let Some((head, tail)) = rerun.split_once(" replay ") {
        // What follows the recorded path: the arguments that select the machines, if any.
        let args = tail
            .split_once(" --")
            .map_or_else(String::new, |(_, a)| format!(" --{a}"));
        return format!("{head} replay {f}{args}");
    }
    rerun.to_string()
}

impl RecordedMachines {
    /// As JSON, for trace files.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "name": self.name,
            "coordinator": self.coordinator,
            "worker": self.worker,
            "receiver": self.receiver,
            "rerun": self.rerun,
        })
    }

    /// From a trace file's `machines` object.
    fn from_json(v: &serde_json::Value) -> Result<RecordedMachines, String> {
        let field = |k: &str| {
            v.get(k)
                .and_then(|x| x.as_str())
                .map(str::to_string)
                .ok_or_else(|| format!("malformed trace file: \"machines.{k}\" is not text"))
        };
        Ok(RecordedMachines {
            name: field("name")?,
            coordinator: field("coordinator")?,
            worker: field("worker")?,
            receiver: field("receiver")?,
            rerun: field("rerun")?,
        })
    }

    /// What to record for `machines` (nothing for leasesim's own), rerun by `rerun`.
    pub fn of(machines: &Machines, rerun: &str) -> Option<RecordedMachines> {
        (!machines.is_stock()).then(|| {
            let p = machines.parts();
            RecordedMachines {
                name: machines.name().to_string(),
                coordinator: p.coordinator.clone(),
                worker: p.worker.clone(),
                receiver: p.receiver.clone(),
                rerun: rerun.to_string(),
            }
        })
    }

    /// Whether `machines` are the ones recorded.
    pub fn are(&self, machines: &Machines) -> bool {
        let p = machines.parts();
        self.name == machines.name()
            && self.coordinator == p.coordinator
            && self.worker == p.worker
            && self.receiver == p.receiver
    }
}

impl Replay {
    /// A replay of `setup` run with `seed` on leasesim's own machines, recording what `result`
    /// saw.
    pub fn record(
        setup: &Setup,
        seed: u64,
        allow_unsafe_timing: bool,
        result: &RunResult,
    ) -> Replay {
        Replay::record_with(setup, seed, allow_unsafe_timing, result, None)
    }

    /// A replay of `setup` run with `seed` on `machines`, recording what `result` saw and, for a
    /// user's machines, their names and `rerun`, the command that reruns the file with them.
    pub fn record_on(
        setup: &Setup,
        seed: u64,
        allow_unsafe_timing: bool,
        result: &RunResult,
        machines: &Machines,
        rerun: &str,
    ) -> Replay {
        let recorded = RecordedMachines::of(machines, rerun);
        Replay::record_with(setup, seed, allow_unsafe_timing, result, recorded)
    }

    fn record_with(
        setup: &Setup,
        seed: u64,
        allow_unsafe_timing: bool,
        result: &RunResult,
        machines: Option<RecordedMachines>,
    ) -> Replay {
        let mut invariants: Vec<String> = Vec::new();
        for f in &result.findings {
            let name = f.invariant.name().to_string();
            if !invariants.contains(&name) {
                invariants.push(name);
            }
        }
        Replay {
            leasesim: env!("CARGO_PKG_VERSION").into(),
            seed,
            allow_unsafe_timing,
            setup: setup.clone(),
            expect: Some(Expect {
                verdict: result.verdict(),
                invariants,
                trace_hash: format!("{:016x}", result.trace_hash()),
                events: result.events,
            }),
            note: None,
            machines,
        }
    }

    /// Runs it on leasesim's own machines (for a file recorded with a user's machines, see
    /// [`Replay::run_on`]).
    pub fn run(&self) -> RunResult {
        run_setup(&self.setup, self.seed)
    }

    /// The machines this file must run on, from a catalogue (see [`machines_in`]).
    pub fn machines_in(&self, catalogue: &[Machines]) -> Result<Machines, String> {
        machines_in(self.machines.as_ref(), &self.setup, catalogue, None)
    }

    /// Runs it on `machines`, which must be the ones it was recorded with.
    pub fn run_on(&self, machines: &Machines) -> Result<RunResult, String> {
        let expected = match &self.machines {
            None => machines.is_stock() && machines.setup_variant() == self.setup.variant,
            Some(rec) => rec.are(machines),
        };
        if !expected {
            return Err(format!(
                "this replay was not recorded with the machines '{}'",
                machines.name()
            ));
        }
        Ok(run(&self.setup, self.seed, machines))
    }

    /// The file's text: pretty JSON of format [`VERSION`], ending in a newline.
    pub fn encode(&self) -> Result<String, String> {
        let file =
            v1::Replay::try_from(self).map_err(|e| format!("cannot encode a replay: {e}"))?;
        let text = serde_json::to_string_pretty(&file)
            .map_err(|e| format!("cannot encode a replay: {e}"))?;
        Ok(text + "\n")
    }

    /// Writes it as pretty JSON, whole and through no link ([`crate::files::write`]).
    pub fn save(&self, path: &Path) -> Result<(), String> {
        crate::files::write(path, self.encode()?)
            .map_err(|e| format!("cannot write {}: {e}", path.display()))
    }

    /// Reads and checks a replay file.
    pub fn load(path: &Path) -> Result<Replay, String> {
        let bytes = read_bounded(path, MAX_BYTES, "replay file")?;
        Replay::parse(&bytes).map_err(|e| format!("{}: {e}", path.display()))
    }

    /// Parses and checks replay bytes. Never panics.
    pub fn parse(bytes: &[u8]) -> Result<Replay, String> {
        let value = parse_json(bytes, "replay file")?;
        if value.get("format").and_then(|f| f.as_str()) != Some(FORMAT) {
            return Err(format!(
                "not a replay file: its \"format\" is not \"{FORMAT}\""
            ));
        }
        let version = value
            .get("version")
            .and_then(|v| v.as_u64())
            .ok_or_else(|| "malformed replay file: no numeric \"version\"".to_string())?;
        if version > VERSION as u64 {
            return Err(format!(
                "written by a newer leasesim (replay format {version}; this build reads up to {VERSION})"
            ));
        }
        if version < VERSION as u64 {
            return Err(format!(
                "replay format {version} is no longer read (this build reads {VERSION})"
            ));
        }
        if let Some(n) = too_large(&value) {
            return Err(format!(
                "malformed replay file: the number {n} is out of range (at most 2^53 in magnitude)"
            ));
        }
        // The setup alone first, so that a contradiction is named by its field.
        setup_of(&value, "replay file")?;
        let file: v1::Replay =
            serde_json::from_value(value).map_err(|e| format!("malformed replay file: {e}"))?;
        let replay = Replay::from(file);
        if let Some(expect) = &replay.expect {
            expect
                .check()
                .map_err(|e| format!("inconsistent replay file: \"expect\": {e}"))?;
        }
        Ok(replay)
    }

    /// Whether `result` is the run this file recorded: `None` when the file records none.
    pub fn matches(&self, result: &RunResult) -> Option<bool> {
        self.expect.as_ref().map(|e| {
            e.trace_hash == format!("{:016x}", result.trace_hash()) && e.verdict == result.verdict()
        })
    }
}

impl TryFrom<&Replay> for v1::Replay {
    type Error = String;

    fn try_from(r: &Replay) -> Result<Self, String> {
        Ok(v1::Replay {
            format: FORMAT.into(),
            version: 1,
            leasesim: r.leasesim.clone(),
            scenario: r.setup.scenario.clone(),
            variant: r.setup.variant.into(),
            seed: r.seed,
            allow_unsafe_timing: r.allow_unsafe_timing,
            setup: (&r.setup).try_into()?,
            expect: r.expect.as_ref().map(|e| v1::Expect {
                verdict: (&e.verdict).into(),
                invariants: e.invariants.clone(),
                trace_hash: e.trace_hash.clone(),
                events: e.events,
            }),
            note: r.note.clone(),
            machines: r.machines.as_ref().map(|m| v1::RecordedMachines {
                name: m.name.clone(),
                coordinator: m.coordinator.clone(),
                worker: m.worker.clone(),
                receiver: m.receiver.clone(),
                rerun: m.rerun.clone(),
            }),
        })
    }
}

/// The top-level `scenario` and `variant` are dropped here: [`setup_of`] has already refused a
/// file where they differ from the setup's.
impl From<v1::Replay> for Replay {
    fn from(f: v1::Replay) -> Self {
        Replay {
            leasesim: f.leasesim,
            seed: f.seed,
            allow_unsafe_timing: f.allow_unsafe_timing,
            setup: f.setup.into(),
            expect: f.expect.map(|e| Expect {
                verdict: e.verdict.into(),
                invariants: e.invariants,
                trace_hash: e.trace_hash,
                events: e.events,
            }),
            note: f.note,
            machines: f.machines.map(|m| RecordedMachines {
                name: m.name,
                coordinator: m.coordinator,
                worker: m.worker,
                receiver: m.receiver,
                rerun: m.rerun,
            }),
        }
    }
}

impl Expect {
    /// The expectation must be one a run could have written: a trace hash of 16 hex digits,
    /// invariants leasesim knows, each named once, and a verdict that agrees with them.
    fn check(&self) -> Result<(), String> {
        let h = &self.trace_hash;
        if h.len() != 16
            || !h
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        {
            return Err(format!(
                "\"trace_hash\" is \"{h}\", not 16 lowercase hex digits (leave \"expect\" out of a hand-written file)"
            ));
        }
        let mut seen = BTreeSet::new();
        for name in &self.invariants {
            if !Invariant::ALL.iter().any(|i| i.name() == name) {
                return Err(format!(
                    "\"invariants\" names \"{name}\", which is not an invariant (see leasesim list)"
                ));
            }
            if !seen.insert(name) {
                return Err(format!("\"invariants\" names \"{name}\" twice"));
            }
        }
        match (&self.verdict, self.invariants.is_empty()) {
            (Verdict::Violated, true) => {
                Err("the verdict is \"violated\" but no invariant is named".into())
            }
            (Verdict::Held | Verdict::Unfinished { .. }, false) => Err(format!(
                "the verdict is {} but invariants are named; a run with a finding is violated",
                self.verdict.word()
            )),
            _ => Ok(()),
        }
    }
}

/// A saved run as `report` reads it: a replay file, or a trace file written by `run --trace`.
pub enum RunFile {
    /// A replay file.
    Replay(Replay),
    /// A trace file: its setup and seed (the run is rebuilt from them) and the trace hash it
    /// recorded.
    Trace {
        /// The setup.
        setup: Setup,
        /// The seed.
        seed: u64,
        /// The recorded trace hash.
        trace_hash: Option<String>,
        /// The user's machines it was made with (`None`: leasesim's own).
        machines: Option<RecordedMachines>,
    },
}

/// The `format` field of a trace file.
pub const TRACE_FORMAT: &str = "leasesim-trace";
/// The trace file version this build writes and reads; its `setup` has replay format 1's shape.
pub const TRACE_VERSION: u32 = 1;

impl RunFile {
    /// Reads a replay or trace file with the same checks `replay` makes.
    pub fn load(path: &Path) -> Result<RunFile, String> {
        let bytes = read_bounded(path, MAX_BYTES, "replay or trace file")?;
        let shown = path.display();
        let value =
            parse_json(&bytes, "replay or trace file").map_err(|e| format!("{shown}: {e}"))?;
        match value.get("format").and_then(|f| f.as_str()) {
            Some(FORMAT) => Replay::parse(&bytes)
                .map(RunFile::Replay)
                .map_err(|e| format!("{shown}: {e}")),
            Some(TRACE_FORMAT) => {
                let version = value.get("version").and_then(|v| v.as_u64());
                if version != Some(TRACE_VERSION as u64) {
                    return Err(format!(
                        "{shown}: trace format {} is not read by this build (it reads {TRACE_VERSION})",
                        version.map_or_else(|| "(none)".to_string(), |v| v.to_string())
                    ));
                }
                let setup = setup_of(&value, "trace file").map_err(|e| format!("{shown}: {e}"))?;
                let seed = value
                    .get("seed")
                    .and_then(|s| s.as_u64())
                    .ok_or_else(|| format!("{shown}: malformed trace file: no numeric \"seed\""))?;
                let trace_hash = value.get("trace_hash").and_then(|h| h.as_str()).map(str::to_string);
                let machines = match value.get("machines") {
                    None | Some(serde_json::Value::Null) => None,
                    Some(m) => {
                        Some(RecordedMachines::from_json(m).map_err(|e| format!("{shown}: {e}"))?)
                    }
                };
                Ok(RunFile::Trace {
                    setup,
                    seed,
                    trace_hash,
                    machines,
                })
            }
            _ => Err(format!(
                "{shown}: neither a replay file nor a trace file (its \"format\" is not \"{FORMAT}\" or \"{TRACE_FORMAT}\")"
            )),
        }
    }
}

/// `x.json` -> `x.shrunk.json`: where a replay file's shrunk run is saved.
pub fn shrunk_path(file: &Path) -> PathBuf {
    let stem = file
        .file_name()
        .map(|n| n.to_string_lossy().trim_end_matches(".json").to_string())
        .unwrap_or_else(|| "replay".into());
    file.with_file_name(format!("{stem}.shrunk.json"))
}
