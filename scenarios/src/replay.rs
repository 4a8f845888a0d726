//! Replay files: a run's whole input as versioned JSON — scenario, variant, seed, the complete
//! configuration and the fault plan as explicit faults with their times or protocol anchors —
//! plus what the run that wrote it saw (verdict, invariants, trace hash). Because the plan is
//! explicit, a replay stays meaningful when unrelated code changes: the seed drives only what
//! the plan leaves open (latencies, tool durations).
//!
//! Reading one never panics: a malformed, truncated, future-version or inconsistent file is an
//! error with one line of explanation.

use crate::run::{run_setup, RunResult, Verdict};
use crate::scenarios;
use crate::setup::Setup;
use leasesim_protocol::{Invariant, Variant};
use serde::de::{Deserializer, Error as _, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;
use std::io::Read;
use std::path::Path;

/// The `format` field of every replay file.
pub const FORMAT: &str = "leasesim-replay";
/// The format version this build writes and reads.
pub const VERSION: u32 = 1;
/// Largest replay or trace file read (bytes): a bound, like every input. A trace file of a run
/// longer than this is reported from its replay file instead (`run --save`).
pub const MAX_BYTES: u64 = 64 << 20;

/// Every number in a replay is at most 2^53 in magnitude (104 days in nanoseconds), so no sum
/// of a few of them can overflow: the first one that is not.
fn too_large(v: &serde_json::Value) -> Option<String> {
    const LIMIT: u64 = 1 << 53;
    match v {
        serde_json::Value::Number(n) => {
            let ok = n
                .as_u64()
                .map(|x| x <= LIMIT)
                .or(n.as_i64().map(|x| x.unsigned_abs() <= LIMIT));
            (!ok.unwrap_or(false)).then(|| n.to_string())
        }
        serde_json::Value::Array(a) => a.iter().find_map(too_large),
        serde_json::Value::Object(o) => o
            .iter()
            .filter(|(k, _)| {
                k.as_str() != "seed" && k.as_str() != "payload_hash" && k.as_str() != "result"
            })
            .find_map(|(_, v)| too_large(v)),
        _ => None,
    }
}

/// Reads a file of at most `max` bytes, counting the bytes actually read (a special file such as
/// `/dev/zero` reports a length of 0 and never ends). Only regular files are read: a FIFO, a
/// device or a directory is refused before it is opened, so nothing blocks.
pub fn read_bounded(path: &Path, max: u64, what: &str) -> Result<Vec<u8>, String> {
    let shown = path.display();
    let meta = std::fs::metadata(path).map_err(|e| format!("cannot read {shown}: {e}"))?;
    if !meta.is_file() {
        return Err(format!(
            "cannot read {shown}: not a regular file (a {what} is a regular file)"
        ));
    }
    let file = std::fs::File::open(path).map_err(|e| format!("cannot read {shown}: {e}"))?;
    let mut bytes = Vec::new();
    file.take(max + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot read {shown}: {e}"))?;
    if bytes.len() as u64 > max {
        return Err(format!(
            "{shown} is larger than {max} bytes, the most a {what} may be"
        ));
    }
    Ok(bytes)
}

/// A JSON document walked only to refuse a key that appears twice in one object: serde_json
/// keeps the last of them silently, so an edited file could say two things at once.
struct NoDuplicateKeys;

impl<'de> Deserialize<'de> for NoDuplicateKeys {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(NoDuplicateKeys)
    }
}

impl<'de> Visitor<'de> for NoDuplicateKeys {
    type Value = NoDuplicateKeys;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut seen = BTreeSet::new();
        while let Some(key) = map.next_key::<String>()? {
            if !seen.insert(key.clone()) {
                return Err(A::Error::custom(format!(
                    "the key \"{key}\" appears twice in one object"
                )));
            }
            map.next_value::<NoDuplicateKeys>()?;
        }
        Ok(NoDuplicateKeys)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        while seq.next_element::<NoDuplicateKeys>()?.is_some() {}
        Ok(NoDuplicateKeys)
    }

    fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
        Ok(NoDuplicateKeys)
    }
    fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
        Ok(NoDuplicateKeys)
    }
    fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
        Ok(NoDuplicateKeys)
    }
    fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
        Ok(NoDuplicateKeys)
    }
    fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
        Ok(NoDuplicateKeys)
    }
    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(NoDuplicateKeys)
    }
}

/// Parses JSON text, refusing a key repeated within one object.
fn parse_json(bytes: &[u8], what: &str) -> Result<serde_json::Value, String> {
    let text = std::str::from_utf8(bytes).map_err(|_| format!("not a {what}: not UTF-8 text"))?;
    serde_json::from_str::<NoDuplicateKeys>(text)
        .map_err(|e| format!("not a {what}: malformed JSON ({e})"))?;
    serde_json::from_str(text).map_err(|e| format!("not a {what}: malformed JSON ({e})"))
}

/// Reads a run's setup out of a document's `setup` field and checks it as a replay's: numbers in
/// range, the structure sound, the top-level `scenario` and `variant` the same as the setup's,
/// the scenario one leasesim knows, the timing valid (P6) unless the file says it was bypassed.
fn setup_of(doc: &serde_json::Value, what: &str) -> Result<Setup, String> {
    let value = doc
        .get("setup")
        .ok_or_else(|| format!("malformed {what}: no \"setup\""))?;
    if let Some(n) = too_large(value) {
        return Err(format!(
            "malformed {what}: the number {n} in \"setup\" is out of range (at most 2^53 in magnitude)"
        ));
    }
    let setup: Setup = serde_json::from_value(value.clone())
        .map_err(|e| format!("malformed {what}: \"setup\": {e}"))?;
    setup
        .check()
        .map_err(|e| format!("inconsistent {what}: \"setup\": {e}"))?;
    if scenarios::find(&setup.scenario).is_none() {
        return Err(format!(
            "inconsistent {what}: \"setup.scenario\" is \"{}\", which leasesim does not know (see leasesim list)",
            setup.scenario
        ));
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
    if !bypass {
        setup.validate_timing()?;
    }
    Ok(setup)
}

/// What the run that wrote the file saw.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
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

/// A replay file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Replay {
    /// Always [`FORMAT`].
    pub format: String,
    /// The format version.
    pub version: u32,
    /// The leasesim version that wrote it.
    pub leasesim: String,
    /// Scenario name (informational; the setup is what runs).
    pub scenario: String,
    /// The protocol variant.
    pub variant: Variant,
    /// The seed.
    pub seed: u64,
    /// Whether the configuration was run past a failed P6 validation.
    #[serde(default)]
    pub allow_unsafe_timing: bool,
    /// The whole configuration and explicit fault plan.
    pub setup: Setup,
    /// What the recorded run saw; a hand-written file may leave it out, and is then run and
    /// judged without a comparison.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expect: Option<Expect>,
    /// One line on the bug this run exposed (regression files).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

impl Replay {
    /// A replay of `setup` run with `seed`, recording what `result` saw.
    pub fn record(
        setup: &Setup,
        seed: u64,
        allow_unsafe_timing: bool,
        result: &RunResult,
    ) -> Replay {
        let mut invariants: Vec<String> = Vec::new();
        for f in &result.findings {
            let name = f.invariant.name().to_string();
            if !invariants.contains(&name) {
                invariants.push(name);
            }
        }
        Replay {
            format: FORMAT.into(),
            version: VERSION,
            leasesim: env!("CARGO_PKG_VERSION").into(),
            scenario: setup.scenario.clone(),
            variant: setup.variant,
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
        }
    }

    /// Runs it.
    pub fn run(&self) -> RunResult {
        run_setup(&self.setup, self.seed)
    }

    /// Writes it as pretty JSON.
    pub fn save(&self, path: &Path) -> Result<(), String> {
        let text = serde_json::to_string_pretty(self)
            .map_err(|e| format!("cannot encode a replay: {e}"))?;
        std::fs::write(path, text + "\n")
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
        setup_of(&value, "replay file")?;
        let replay: Replay =
            serde_json::from_value(value).map_err(|e| format!("malformed replay file: {e}"))?;
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
    },
}

/// The `format` field of a trace file.
pub const TRACE_FORMAT: &str = "leasesim-trace";

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
                if version != Some(1) {
                    return Err(format!(
                        "{shown}: trace format {} is not read by this build (it reads 1)",
                        version.map_or_else(|| "(none)".to_string(), |v| v.to_string())
                    ));
                }
                let setup = setup_of(&value, "trace file").map_err(|e| format!("{shown}: {e}"))?;
                let seed = value
                    .get("seed")
                    .and_then(|s| s.as_u64())
                    .ok_or_else(|| format!("{shown}: malformed trace file: no numeric \"seed\""))?;
                let trace_hash = value.get("trace_hash").and_then(|h| h.as_str()).map(str::to_string);
                Ok(RunFile::Trace {
                    setup,
                    seed,
                    trace_hash,
                })
            }
            _ => Err(format!(
                "{shown}: neither a replay file nor a trace file (its \"format\" is not \"{FORMAT}\" or \"{TRACE_FORMAT}\")"
            )),
        }
    }
}
