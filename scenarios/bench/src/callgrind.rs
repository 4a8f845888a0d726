//! Where the instructions of a callgrind profile went, by part of leasesim: each instruction is
//! counted once (its function's own cost, not what it called), under the source file it was
//! written in, so code one part inlines into another is still counted where it was written.
//! Standard-library code (a slice index, a vector push) belongs to no part of its own: it is
//! counted with the function it was inlined into. A profile is read in callgrind's own format
//! (`valgrind --tool=callgrind`, "Callgrind Format Specification" in valgrind's manual).

use std::collections::BTreeMap;
use std::io::BufRead;

/// The parts a profile's instructions are filed under, in the order they are printed.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Part {
    Simulator,
    Director,
    Adapters,
    Machines,
    Checkers,
    Setup,
    Runs,
    Random,
    CLibrary,
    Other,
}

impl Part {
    pub const ALL: [Part; 10] = [
        Part::Simulator,
        Part::Director,
        Part::Adapters,
        Part::Machines,
        Part::Checkers,
        Part::Setup,
        Part::Runs,
        Part::Random,
        Part::CLibrary,
        Part::Other,
    ];

    pub fn label(self) -> &'static str {
        match self {
            Part::Simulator => "simulator (event queue, trace, clocks, network draws)",
            Part::Director => "fault-plan director",
            Part::Adapters => "nodes' adapters and the tool node",
            Part::Machines => "protocol machines",
            Part::Checkers => "checkers",
            Part::Setup => "scenario setup",
            Part::Runs => "runs and sweep",
            Part::Random => "random streams (ChaCha8)",
            Part::CLibrary => "C library (allocator, copies) and other shared libraries",
            Part::Other => "the command-line program and other crates",
        }
    }
}

/// The part of a source file of this workspace (`rel` relative to its root).
fn part_of_source(rel: &str) -> Part {
    if rel.starts_with("sim/src/") {
        Part::Simulator
    } else if rel.starts_with("scenarios/src/plan/") {
        Part::Director
    } else if rel == "scenarios/src/world.rs" || rel == "scenarios/src/machines.rs" {
        Part::Adapters
    } else if rel.starts_with("protocol/src/") {
        Part::Machines
    } else if rel.starts_with("scenarios/checkers/src/") {
        Part::Checkers
    } else if rel == "scenarios/src/setup.rs" || rel.starts_with("scenarios/src/scenarios/") {
        Part::Setup
    } else if rel.starts_with("scenarios/src/") {
        Part::Runs
    } else {
        Part::Other
    }
}

/// What a source file says about the part of the code in it.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Source {
    /// A part of its own.
    Part(Part),
    /// The standard library: the part of the function it was inlined into.
    Std,
}

/// Files a source path: `root` is this workspace's root directory, as the build saw it. The C
/// library is recognised by its object (`ob=`), not by its paths.
fn classify(path: &str, root: &str) -> Source {
    if let Some(rel) = path.strip_prefix(root).and_then(|r| r.strip_prefix('/')) {
        return Source::Part(part_of_source(rel));
    }
    let crate_dir = |name: &str| path.contains(&format!("/{name}-"));
    if crate_dir("rand_chacha") || crate_dir("rand_core") || crate_dir("ppv-lite86") {
        Source::Part(Part::Random)
    } else if path.starts_with("/rustc/") {
        Source::Std
    } else {
        Source::Part(Part::Other)
    }
}

/// A profile's instructions by part, indexed by [`Part`] as a number.
#[derive(Debug, Default)]
pub struct Split {
    pub by_part: [u64; Part::ALL.len()],
}

impl Split {
    /// Every instruction of the profile.
    pub fn total(&self) -> u64 {
        self.by_part.iter().sum()
    }

    /// Each part's instructions per seed: `hi`, a sweep that ran `seeds` more seeds than `lo`,
    /// minus `lo`, over `seeds`. None when the profiles found no simulator code:
    /// the program's debug information does not name this workspace's sources (its paths were
    /// remapped, or it was built elsewhere), and every instruction would look like another
    /// crate's.
    pub fn per_seed(lo: &Split, hi: &Split, seeds: u64) -> Option<Vec<(Part, f64)>> {
        (hi.by_part[Part::Simulator as usize] > 0).then(|| {
            Part::ALL
                .iter()
                .zip(lo.by_part.iter().zip(&hi.by_part))
                .map(|(&part, (&l, &h))| (part, (h as f64 - l as f64) / seeds as f64))
                .collect()
        })
    }
}

/// Reads a callgrind profile whose first event is `Ir` and files its instructions by part.
// Long: one loop over the profile's lines, one branch per kind of line, sharing the parser's state.
pub fn split(profile: impl BufRead, root: &str) -> Result<Split, String> {
    let mut files: BTreeMap<u64, Source> = BTreeMap::new();
    let mut objects: BTreeMap<u64, bool> = BTreeMap::new();
    let mut positions = 1usize;
    let mut ir_column: Option<usize> = None;
    // The function's own file, the file the next cost lines are in, and the object.
    let (mut fn_file, mut cost_file) = (Source::Part(Part::Other), Source::Part(Part::Other));
    let mut c_library = false;
    let mut call_cost_next = false;
    let mut split = Split::default();
    for (n, line) in profile.lines().enumerate() {
        let line = line.map_err(|e| format!("cannot read the profile: {e}"))?;
        let bad = || {
            format!(
                "the profile's line {} is not callgrind's format: {line}",
                n + 1
            )
        };
        let Some(first) = line.bytes().next() else {
            continue;
        };
        if first.is_ascii_digit() || matches!(first, b'+' | b'-' | b'*') {
            if std::mem::take(&mut call_cost_next) {
                // The inclusive cost of a call: counted in the callee's own lines.
                continue;
            }
            let column = ir_column.ok_or_else(|| "the profile counts no Ir event".to_string())?;
            let Some(field) = line.split_ascii_whitespace().nth(positions + column) else {
                // A cost line may leave trailing zero counts out.
                continue;
            };
            let ir: u64 = field.parse().map_err(|_| bad())?;
            let part = match (cost_file, fn_file) {
                _ if c_library => Part::CLibrary,
                (Source::Part(p), _) | (Source::Std, Source::Part(p)) => p,
                (Source::Std, Source::Std) => Part::Other,
            };
            split.by_part[part as usize] += ir;
            continue;
        }
        let Some((key, value)) = line.split_once('=') else {
            if let Some(v) = line.strip_prefix("positions:") {
                positions = v.split_ascii_whitespace().count().max(1);
            } else if let Some(v) = line.strip_prefix("events:") {
                ir_column = v.split_ascii_whitespace().position(|e| e == "Ir");
            }
            continue;
        };
        match key {
            "fl" | "fi" | "fe" | "cfi" | "cfl" => {
                let source = name(value, &mut files, |p| classify(p, root)).ok_or_else(bad)?;
                match key {
                    "fl" => (fn_file, cost_file) = (source, source),
                    "fi" | "fe" => cost_file = source,
                    _ => {}
                }
            }
            "ob" | "cob" => {
                // A shared library (the C library, the loader, valgrind's own preloads), not
                // the program.
                let libc = name(value, &mut objects, |o| {
                    let file = o.rsplit('/').next().unwrap_or(o);
                    file.contains(".so")
                })
                .ok_or_else(bad)?;
                if key == "ob" {
                    c_library = libc;
                }
            }
            // A function's lines start in the file current when it is named (callgrind goes
            // back to the function's file with `fe=` before it names the next one).
            "fn" => fn_file = cost_file,
            "calls" => call_cost_next = true,
            _ => {}
        }
    }
    if ir_column.is_none() {
        return Err("the profile counts no Ir event".into());
    }
    Ok(split)
}

/// A compressed name (`(id) name` the first time, `(id)` after) or a plain one, looked up or
/// filed with `file_it`.
fn name<T: Copy>(
    value: &str,
    table: &mut BTreeMap<u64, T>,
    file_it: impl Fn(&str) -> T,
) -> Option<T> {
    let Some(rest) = value.strip_prefix('(') else {
        return Some(file_it(value.trim()));
    };
    let (id, name) = rest.split_once(')')?;
    let id: u64 = id.parse().ok()?;
    let name = name.trim();
    if name.is_empty() {
        table.get(&id).copied()
    } else {
        let v = file_it(name);
        table.insert(id, v);
        Some(v)
    }
}

/// This workspace's root as the build saw it (the paths in its debug information start there).
pub fn workspace_root() -> &'static str {
    // This crate sits at scenarios/bench.
    let dir = env!("CARGO_MANIFEST_DIR");
    dir.strip_suffix("/scenarios/bench").unwrap_or(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A profile in callgrind's format, compressed names, inlined files and calls included.
    const PROFILE: &str = "# callgrind format
version: 1
positions: line
events: Ir
summary: 1000

ob=(1) /usr/lib/x86_64-linux-gnu/libc.so.6
fl=(1) ./string/../sysdeps/x86_64/multiarch/memmove-vec-unaligned-erms.S
fn=(1) __memcpy_avx_unaligned_erms
10 40

ob=(2) /w/target/release/leasesim
fl=(2) /w/sim/src/engine.rs
fn=(2) leasesim_sim::engine::Sim<P>::run_until
100 200
+1 50
fi=(3) /rustc/abc/library/core/src/slice/index.rs
-40 30
fi=(4) /w/protocol/src/worker.rs
7 100
fe=(2)
101 20
cob=(1)
cfi=(1)
cfn=(1)
calls=3 10
102 40
* 5
fl=(5) /w/scenarios/checkers/src/lib.rs
fn=(3) leasesim_checkers::check
1 300
fi=(6) /home/u/.cargo/registry/src/index/rand_chacha-0.10.0/src/guts.rs
2 60
fl=(3)
fn=(4) core::slice::sort
3 50
ob=(1)
fl=(3)
fn=(5) libc_inlined_std
4 100
";

    #[test]
    fn every_instruction_is_filed_once_under_the_file_it_was_written_in() {
        let s = split(PROFILE.as_bytes(), "/w").unwrap();
        let of = |p: Part| s.by_part[p as usize];
        // The call's inclusive cost (40) is not counted again; the memcpy's own 40 is.
        assert_eq!(
            s.total(),
            40 + 200 + 50 + 30 + 100 + 20 + 5 + 300 + 60 + 50 + 100
        );
        assert_eq!(
            of(Part::CLibrary),
            40 + 100,
            "the C library, and std code inlined into it"
        );
        // The engine's own lines, and the slice index inlined into it.
        assert_eq!(of(Part::Simulator), 200 + 50 + 30 + 20 + 5);
        assert_eq!(
            of(Part::Machines),
            100,
            "the worker's code inlined into the engine"
        );
        assert_eq!(of(Part::Checkers), 300);
        assert_eq!(of(Part::Random), 60);
        assert_eq!(of(Part::Other), 50, "std code in a function of no part");
    }

    #[test]
    fn a_part_per_seed_is_its_difference_between_the_two_sweeps() {
        let mut lo = Split::default();
        let mut hi = Split::default();
        lo.by_part[Part::Simulator as usize] = 1_000;
        hi.by_part[Part::Simulator as usize] = 5_000;
        lo.by_part[Part::Other as usize] = 700;
        hi.by_part[Part::Other as usize] = 900;
        let parts = Split::per_seed(&lo, &hi, 20).expect("simulator code was found");
        assert_eq!(parts.len(), Part::ALL.len());
        assert_eq!(parts[0], (Part::Simulator, 200.0));
        assert_eq!(parts[Part::Other as usize], (Part::Other, 10.0));
        assert_eq!(parts[Part::Checkers as usize], (Part::Checkers, 0.0));
        // No simulator code at all: the sources were not recognised, and no split is given.
        let mut elsewhere = Split::default();
        elsewhere.by_part[Part::Other as usize] = 9_000;
        assert!(Split::per_seed(&lo, &elsewhere, 20).is_none());
    }

    #[test]
    fn workspace_files_are_filed_by_part() {
        let cases = [
            ("sim/src/clock.rs", Part::Simulator),
            ("scenarios/src/plan/director.rs", Part::Director),
            ("scenarios/src/world.rs", Part::Adapters),
            ("scenarios/src/machines.rs", Part::Adapters),
            ("protocol/src/coordinator.rs", Part::Machines),
            ("scenarios/checkers/src/history.rs", Part::Checkers),
            ("scenarios/src/setup.rs", Part::Setup),
            ("scenarios/src/scenarios/w1_w2.rs", Part::Setup),
            ("scenarios/src/run.rs", Part::Runs),
            ("scenarios/cli/src/lib.rs", Part::Other),
        ];
        for (rel, part) in cases {
            assert_eq!(
                classify(&format!("/r/{rel}"), "/r"),
                Source::Part(part),
                "{rel}"
            );
        }
        assert_eq!(
            classify("/elsewhere/sim/src/engine.rs", "/r"),
            Source::Part(Part::Other)
        );
    }

    #[test]
    fn a_profile_without_instructions_or_in_another_format_is_refused() {
        assert!(split("events: Dr\nfn=(1) f\n1 2\n".as_bytes(), "/w").is_err());
        assert!(split("events: Ir\nfl=(x\n".as_bytes(), "/w").is_err());
        assert!(split("events: Ir\n1 x\n".as_bytes(), "/w").is_err());
    }
}
