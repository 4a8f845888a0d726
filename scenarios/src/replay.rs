//! Replay files: a run's whole input as versioned JSON — scenario, variant, seed, the complete
//! configuration and the fault plan as explicit faults with their times or protocol anchors —
//! plus what the run that wrote it saw (verdict, invariants, trace hash). Because the plan is
//! explicit, a replay stays meaningful when unrelated code changes: the seed drives only what
//! the plan leaves open (latencies, tool durations).
//!
//! Reading one never panics: a malformed, truncated, future-version or inconsistent file is an
//! error with one line of explanation.

use crate::run::{run_setup, RunResult, Verdict};
use crate::setup::Setup;
use leasesim_protocol::Variant;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// The `format` field of every replay file.
pub const FORMAT: &str = "leasesim-replay";
/// The format version this build writes and reads.
pub const VERSION: u32 = 1;
/// Largest replay file read (bytes): a bound, like every input.
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

/// What the run that wrote the file saw.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
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
    /// What the recorded run saw.
    pub expect: Expect,
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
            expect: Expect {
                verdict: result.verdict(),
                invariants,
                trace_hash: format!("{:016x}", result.trace_hash()),
                events: result.events,
            },
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
        let meta =
            std::fs::metadata(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        if meta.len() > MAX_BYTES {
            return Err(format!(
                "{} is {} bytes; a replay file is at most {MAX_BYTES}",
                path.display(),
                meta.len()
            ));
        }
        let bytes =
            std::fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        Replay::parse(&bytes).map_err(|e| format!("{}: {e}", path.display()))
    }

    /// Parses and checks replay bytes. Never panics.
    pub fn parse(bytes: &[u8]) -> Result<Replay, String> {
        let text = std::str::from_utf8(bytes)
            .map_err(|_| "not a replay file: not UTF-8 text".to_string())?;
        let value: serde_json::Value = serde_json::from_str(text)
            .map_err(|e| format!("not a replay file: malformed JSON ({e})"))?;
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
        let replay: Replay =
            serde_json::from_value(value).map_err(|e| format!("malformed replay file: {e}"))?;
        replay
            .setup
            .check()
            .map_err(|e| format!("inconsistent replay file: {e}"))?;
        if !replay.allow_unsafe_timing {
            replay.setup.validate_timing()?;
        }
        Ok(replay)
    }
}
