//! `bench --instructions`: the cost of one seed counted in machine instructions, which do not
//! drift with the machine's load the way seconds do. This program is run twice under
//! `valgrind --tool=callgrind`, sweeping `N` and `3N` seeds of one scenario on one thread; the
//! difference of the two counts, divided by `2N`, is the cost of a seed with the program's
//! start-up and the sweep's fixed costs taken out.

use crate::{callgrind, Error, Format};
use serde_json::json;
use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

/// What to count.
pub struct InstructionArgs<'a> {
    /// The scenario, by name.
    pub scenario: &'a str,
    /// The machines, by name.
    pub machines: &'a str,
    /// Passed on to the counted sweeps.
    pub allow_unsafe_timing: bool,
    /// `N`: the two sweeps run `N` and `3N` seeds.
    pub seeds: u64,
    /// How the figures are printed.
    pub format: Format,
}

/// One sweep under callgrind: instructions executed, events simulated, and where the
/// instructions went.
struct Count {
    instructions: u64,
    events: u64,
    split: callgrind::Split,
}

/// Runs the two counted sweeps and prints the figures per seed and per event.
pub fn instructions(out: &mut dyn Write, a: &InstructionArgs<'_>) -> Result<i32, Error> {
    ready(a)?;
    // A fresh folder of an unpredictable name: callgrind writes its profiles into it, and a
    // guessable name in the shared temporary folder could be a link planted to another.
    let tmp = std::env::temp_dir();
    let dir = leasesim::files::private_dir(&tmp, "leasesim-instructions-")
        .map_err(|e| Error(format!("cannot create a folder in {}: {e}", tmp.display())))?;
    let counted = count(&dir, a, a.seeds).and_then(|lo| Ok((lo, count(&dir, a, 3 * a.seeds)?)));
    let _ = std::fs::remove_dir_all(&dir);
    let (lo, hi) = counted.map_err(Error)?;
    let seeds = 2 * a.seeds;
    let instructions = hi.instructions.saturating_sub(lo.instructions);
    let events = hi.events.saturating_sub(lo.events);
    let per_seed = instructions as f64 / seeds as f64;
    let per_event = (events > 0).then(|| instructions as f64 / events as f64);
    // Each part's share of a seed: the same difference, part by part.
    let parts = callgrind::Split::per_seed(&lo.split, &hi.split, seeds);
    match a.format {
        Format::Json => {
            let doc = json!({
                "scenario": a.scenario,
                "variant": a.machines,
                "seeds": [a.seeds, 3 * a.seeds],
                "instructions": [lo.instructions, hi.instructions],
                "events": [lo.events, hi.events],
                "instructions_per_seed": per_seed.round(),
                "events_per_seed": events as f64 / seeds as f64,
                "instructions_per_event": per_event.map(f64::round),
                "per_seed_by_part": parts.as_ref().map(|parts| parts
                    .iter()
                    .map(|&(part, n)| json!({"part": part.label(), "instructions": n.round()}))
                    .collect::<Vec<_>>()),
            });
            crate::io(writeln!(out, "{doc:#}"))?;
        }
        Format::Text => text(out, a, (&lo, &hi), per_seed, per_event, parts.as_deref())?,
    }
    Ok(0)
}

/// What `instructions` needs before it counts: seeds in range and valgrind installed.
fn ready(a: &InstructionArgs<'_>) -> Result<(), Error> {
    if a.seeds == 0 || a.seeds > 1_000_000 {
        return Err(Error(format!(
            "--instruction-seeds {} is out of range: 1 to 1,000,000",
            a.seeds
        )));
    }
    let found = Command::new("valgrind")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
    if !found.is_ok_and(|s| s.success()) {
        return Err(Error(
            "bench --instructions counts with valgrind, which is not installed (Debian: apt-get install valgrind)".into(),
        ));
    }
    Ok(())
}

/// The count in words: both sweeps, the difference per seed and per event, and each part's share.
fn text(
    out: &mut dyn Write,
    a: &InstructionArgs<'_>,
    (lo, hi): (&Count, &Count),
    per_seed: f64,
    per_event: Option<f64>,
    parts: Option<&[(callgrind::Part, f64)]>,
) -> Result<(), Error> {
    let seeds = 2 * a.seeds;
    let events = hi.events.saturating_sub(lo.events);
    crate::io(writeln!(
        out,
        "{} --variant {}, one thread, counted by callgrind:\n  {:>8} seeds: {:>15} instructions, {:>10} events\n  {:>8} seeds: {:>15} instructions, {:>10} events\n  per seed: {:.0} instructions ({:.1} events); per event: {}",
        a.scenario,
        a.machines,
        a.seeds,
        lo.instructions,
        lo.events,
        3 * a.seeds,
        hi.instructions,
        hi.events,
        per_seed,
        events as f64 / seeds as f64,
        per_event.map_or("n/a".into(), |p| format!("{p:.0} instructions")),
    ))?;
    let Some(parts) = parts else {
        crate::io(writeln!(
            out,
            "  (no split by part: this build's debug information does not name the sources under {})",
            callgrind::workspace_root()
        ))?;
        return Ok(());
    };
    crate::io(writeln!(
        out,
        "  a seed's instructions by the part of leasesim whose source they were compiled from:"
    ))?;
    for (part, n) in parts {
        crate::io(writeln!(
            out,
            "    {n:>10.0}  {:>5.1}%  {}",
            if per_seed > 0.0 {
                100.0 * n / per_seed
            } else {
                0.0
            },
            part.label()
        ))?;
    }
    Ok(())
}

/// Sweeps `seeds` seeds under callgrind in `dir`.
fn count(dir: &Path, a: &InstructionArgs<'_>, seeds: u64) -> Result<Count, String> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot find this program: {e}"))?;
    let profile = dir.join(format!("callgrind.{seeds}"));
    let summary = dir.join(format!("sweep.{seeds}.json"));
    let mut cmd = Command::new("valgrind");
    cmd.arg("--tool=callgrind")
        .arg(format!("--callgrind-out-file={}", profile.display()))
        .arg(&exe)
        .args(["sweep", a.scenario, "--jobs", "1", "--variant", a.machines])
        .arg("--seeds")
        .arg(seeds.to_string())
        .arg("--json")
        .arg(&summary)
        .stdin(Stdio::null())
        .stdout(Stdio::null());
    if a.allow_unsafe_timing {
        cmd.arg("--allow-unsafe-timing");
    }
    // A failing seed is a finding, not a counting error: the sweep exits 1 and still counts.
    let run = cmd
        .output()
        .map_err(|e| format!("cannot start valgrind: {e}"))?;
    let stderr = String::from_utf8_lossy(&run.stderr);
    let instructions = stderr
        .lines()
        .find_map(|l| {
            l.split_once("refs:")
                .map(|(_, n)| n.trim().replace(',', ""))
        })
        .and_then(|n| n.parse().ok())
        .ok_or_else(|| {
            format!(
                "valgrind gave no instruction count for {seeds} seeds: {}",
                stderr.lines().last().unwrap_or("no message")
            )
        })?;
    let split = std::fs::File::open(&profile)
        .map_err(|e| format!("callgrind wrote no profile for {seeds} seeds: {e}"))
        .and_then(|f| callgrind::split(std::io::BufReader::new(f), callgrind::workspace_root()))?;
    if split.total() != instructions {
        return Err(format!(
            "the profile of {seeds} seeds adds up to {} instructions, not the {instructions} valgrind counted",
            split.total()
        ));
    }
    let doc: serde_json::Value = std::fs::read(&summary)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .ok_or_else(|| format!("the counted sweep of {seeds} seeds wrote no summary"))?;
    let events = doc["events"]
        .as_u64()
        .ok_or_else(|| format!("the counted sweep of {seeds} seeds counted no events"))?;
    Ok(Count {
        instructions,
        events,
        split,
    })
}
