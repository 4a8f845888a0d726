//! `merge` refuses a result file that contradicts itself. Real shards (`sweep --json --shard`,
//! `matrix --json --shard`) are written once; each test edits one field of one shard and
//! asserts, through the one helper [`check`], that the merge refuses it with exit code 2 and a
//! one-line error naming the file and the field. The unedited shards still merge.

use leasesim_tests::{cli, TempDir};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;

/// Fails every seed of w1-w2 and none of retries: a failure list and an empty one.
const BAD: &str = "receiver-ignores-fence";
/// Seeds of the sweep, cut into two shards: the edited one holds seeds 30..60.
const SEEDS: u64 = 60;
/// Shards of the matrix; the first (the reference's row and the start of the next) is edited.
const MATRIX_SHARDS: u64 = 5;

/// The shards every test starts from, as their sweeps wrote them.
struct Shards {
    sweep: Vec<Value>,
    matrix: Vec<Value>,
}

fn shards() -> &'static Shards {
    static SHARDS: OnceLock<Shards> = OnceLock::new();
    SHARDS.get_or_init(|| {
        let tmp = TempDir::new("merge-checks-shards");
        let path = |name: &str| tmp.join(name).display().to_string();
        let read = |name: &str| -> Value {
            serde_json::from_str(&std::fs::read_to_string(path(name)).unwrap()).unwrap()
        };
        let mut sweep = Vec::new();
        for k in 1..=2 {
            let file = format!("s{k}.json");
            let (code, _, err) = cli(&[
                "sweep",
                "w1-w2",
                "retries",
                "--seeds",
                &SEEDS.to_string(),
                "--variant",
                BAD,
                "--shard",
                &format!("{k}/2"),
                "--json",
                &path(&file),
                "--failures-dir",
                &path("failures"),
            ]);
            assert_eq!(code, 1, "w1-w2 fails under {BAD}: {err}");
            sweep.push(read(&file));
        }
        let mut matrix = Vec::new();
        for k in 1..=MATRIX_SHARDS {
            let file = format!("m{k}.json");
            let (code, _, err) = cli(&[
                "matrix",
                "--seeds",
                "4",
                "--shard",
                &format!("{k}/{MATRIX_SHARDS}"),
                "--json",
                &path(&file),
                "--out",
                &path("unused"),
            ]);
            assert_eq!(code, 0, "the reference's cells hold: {err}");
            matrix.push(read(&file));
        }
        Shards { sweep, matrix }
    })
}

/// How a test edits a shard.
enum Edit {
    /// The second sweep shard's fields.
    Sweep(fn(&mut Value)),
    /// The second sweep shard's text (what a JSON value cannot hold: a key given twice).
    SweepText(fn(String) -> String),
    /// The first matrix shard's fields.
    Matrix(fn(&mut Value)),
    /// The first matrix shard's text.
    MatrixText(fn(String) -> String),
}

/// Merges the shards with one of them edited and asserts the merge refuses it: exit code 2 and
/// one line that names the edited file and holds `fragment` (the field and what is wrong).
fn check(edit: Edit, fragment: &str) {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let tmp = TempDir::new(&format!(
        "merge-check-{}",
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    let s = shards();
    let (docs, edited, prefix) = match edit {
        Edit::Sweep(_) | Edit::SweepText(_) => (&s.sweep, 1, "s"),
        Edit::Matrix(_) | Edit::MatrixText(_) => (&s.matrix, 0, "m"),
    };
    let mut files = Vec::new();
    for (i, doc) in docs.iter().enumerate() {
        let mut doc = doc.clone();
        let mut text = None;
        if i == edited {
            match &edit {
                Edit::Sweep(f) | Edit::Matrix(f) => f(&mut doc),
                Edit::SweepText(f) | Edit::MatrixText(f) => text = Some(f(doc.to_string())),
            }
        }
        let file = tmp
            .join(&format!("{prefix}{}.json", i + 1))
            .display()
            .to_string();
        std::fs::write(&file, text.unwrap_or_else(|| doc.to_string())).unwrap();
        files.push(file);
    }
    let mut args = vec!["merge"];
    args.extend(files.iter().map(String::as_str));
    let (code, out, err) = cli(&args);
    assert_eq!(code, 2, "merge took the edit ({fragment}): {out}{err}");
    assert!(
        err.starts_with("error: ") && err.lines().count() == 1,
        "one line: {err}"
    );
    assert!(
        err.contains(&format!("{}: ", files[edited])),
        "the file is named: {err}"
    );
    assert!(err.contains(fragment), "{fragment:?} not in: {err}");
}

/// A sweep shard's scenario `j` (0: w1-w2, every seed failing; 1: retries, none).
fn sc(d: &mut Value, j: usize) -> &mut Value {
    &mut d["scenarios"][j]
}

/// Adds `by` to a count.
fn bump(v: &mut Value, by: i64) {
    *v = json!(v.as_i64().unwrap() + by);
}

#[test]
fn the_unedited_shards_merge() {
    let s = shards();
    let tmp = TempDir::new("merge-checks-unedited");
    let write = |docs: &[Value], prefix: &str| -> Vec<String> {
        docs.iter()
            .enumerate()
            .map(|(i, d)| {
                let file = tmp.join(&format!("{prefix}{i}.json")).display().to_string();
                std::fs::write(&file, d.to_string()).unwrap();
                file
            })
            .collect()
    };
    let files = write(&s.sweep, "s");
    let (code, out, err) = cli(&["merge", &files[0], &files[1], "--format", "json"]);
    assert_eq!(code, 1, "the known-bad variant fails: {err}");
    let merged: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(merged["merged"]["problems"], json!([]));
    assert_eq!(merged["runs"], 2 * SEEDS);
    assert_eq!(merged["scenarios"][0]["failing"], SEEDS);
    let files = write(&s.matrix, "m");
    let mut args = vec!["merge"];
    args.extend(files.iter().map(String::as_str));
    let (code, out, err) = cli(&args);
    // Four seeds catch most variants, not all: held or failed, never refused.
    assert!(
        code == 0 || code == 1,
        "the matrix's verdict, not a refusal: {err}"
    );
    assert!(
        out.contains("matrix merged from 5 shard result(s)"),
        "{out}"
    );
}

// The totals against their scenarios.

#[test]
fn runs_are_the_sum_of_the_scenarios_runs() {
    check(
        Edit::Sweep(|d| bump(&mut d["runs"], 1)),
        "runs: 61, but its scenarios' add up to 60",
    );
}

#[test]
fn failing_is_the_sum_of_the_scenarios_failing() {
    check(
        Edit::Sweep(|d| bump(&mut d["failing"], -1)),
        "failing: 29, but its scenarios' add up to 30",
    );
}

#[test]
fn not_expressible_is_the_sum_of_the_scenarios() {
    check(
        Edit::Sweep(|d| bump(&mut d["not_expressible"], 1)),
        "not_expressible: 1, but",
    );
}

#[test]
fn nondeterministic_is_the_sum_of_the_scenarios() {
    check(
        Edit::Sweep(|d| bump(&mut d["nondeterministic"], 1)),
        "nondeterministic: 1, but",
    );
}

#[test]
fn unreached_hazards_is_the_sum_of_the_scenarios_lists() {
    check(
        Edit::Sweep(|d| bump(&mut d["unreached_hazards"], 1)),
        "unreached_hazards: 1, but",
    );
}

#[test]
fn share_runs_is_the_sum_of_the_shares() {
    check(
        Edit::Sweep(|d| bump(&mut d["share_runs"], -1)),
        "share_runs: 59, but",
    );
}

#[test]
fn events_that_wrap_when_summed_are_refused() {
    check(
        Edit::Sweep(|d| d["events"] = json!(u64::MAX)),
        "events: its 18446744073709551615 and the",
    );
}

#[test]
fn the_verdict_is_the_one_its_counts_make() {
    check(
        Edit::Sweep(|d| d["verdict"] = json!("held")),
        "verdict: \"held\", but its counts make it \"failed\"",
    );
}

// A scenario's failing against its failure list.

#[test]
fn a_scenario_lists_its_lowest_failing_seeds() {
    check(
        Edit::Sweep(|d| {
            sc(d, 0)["failures"].as_array_mut().unwrap().pop();
        }),
        "scenarios[0].failures (w1-w2): 29 failures listed, but failing is 30",
    );
}

#[test]
fn failures_listed_is_the_length_of_the_list() {
    check(
        Edit::Sweep(|d| bump(&mut sc(d, 0)["failures_listed"], -1)),
        "scenarios[0].failures_listed",
    );
}

#[test]
fn failing_is_at_most_the_seeds_judged() {
    check(
        Edit::Sweep(|d| bump(&mut sc(d, 0)["failing"], 1)),
        "scenarios[0].failing (w1-w2): 31 failing seeds among the 30",
    );
}

#[test]
fn a_failure_list_past_its_bound_is_refused_as_it_is_read() {
    check(
        Edit::Sweep(|d| {
            let first = sc(d, 0)["failures"][0].clone();
            sc(d, 0)["failures"] = (0..1001u64)
                .map(|k| {
                    let mut f = first.clone();
                    f["seed"] = json!(k);
                    f
                })
                .collect();
        }),
        "scenarios[0].failures: a list of more than 1000 items",
    );
}

#[test]
fn a_failure_seed_outside_the_shard_is_refused() {
    // Seed 0 is the first shard's, not this one's (30..60).
    check(
        Edit::Sweep(|d| sc(d, 0)["failures"][0]["seed"] = json!(0)),
        "scenarios[0].failures[0].seed (w1-w2): seed 0 is not one that ran (seeds 30..60)",
    );
}

#[test]
fn a_failure_seed_given_twice_is_refused() {
    check(
        Edit::Sweep(|d| sc(d, 0)["failures"][1]["seed"] = sc(d, 0)["failures"][0]["seed"].clone()),
        "scenarios[0].failures[1].seed (w1-w2): seed 30 after seed 30",
    );
}

#[test]
fn failures_out_of_seed_order_are_refused() {
    check(
        Edit::Sweep(|d| sc(d, 0)["failures"].as_array_mut().unwrap().swap(0, 1)),
        "scenarios[0].failures[1].seed (w1-w2): seed 30 after seed 31",
    );
}

#[test]
fn a_failure_that_held_is_refused() {
    check(
        Edit::Sweep(|d| sc(d, 0)["failures"][0]["verdict"] = json!({"verdict": "held"})),
        "scenarios[0].failures[0].verdict",
    );
}

#[test]
fn a_violation_names_its_invariants_known_sorted_and_once() {
    check(
        Edit::Sweep(|d| sc(d, 0)["failures"][0]["invariants"] = json!([])),
        "scenarios[0].failures[0].invariants",
    );
    check(
        Edit::Sweep(|d| sc(d, 0)["failures"][0]["invariants"] = json!(["no-such"])),
        "unknown invariant 'no-such'",
    );
    check(
        Edit::Sweep(|d| sc(d, 0)["failures"][0]["invariants"] = json!(["no-double-effect", "no-double-effect"])),
        "scenarios[0].failures[0].invariants (w1-w2): [\"no-double-effect\", \"no-double-effect\"]: a failure names its invariants sorted, each once",
    );
}

#[test]
fn unfinished_is_the_count_of_unfinished_failures() {
    check(
        Edit::Sweep(|d| bump(&mut sc(d, 0)["unfinished"], 1)),
        "scenarios[0].unfinished (w1-w2): 1 unfinished runs, but the failure list holds 0",
    );
    check(
        Edit::Sweep(|d| bump(&mut sc(d, 1)["unfinished"], 1)),
        "scenarios[1].unfinished (retries): 1 unfinished runs among 0 failing",
    );
}

#[test]
fn a_refusal_for_p6_in_a_sweep_that_allowed_unsafe_timing_is_refused() {
    check(
        Edit::Sweep(|d| {
            d["allow_unsafe_timing"] = json!(true);
            let f = &mut sc(d, 0)["failures"][0];
            f["verdict"] = json!({"verdict": "invalid", "reason": "x"});
            f["invariants"] = json!([]);
        }),
        "scenarios[0].failures[0].verdict (w1-w2): seed 30 refused as breaking P6",
    );
}

// Determinism differences.

#[test]
fn differences_are_counted_only_where_determinism_was_checked() {
    check(
        Edit::Sweep(|d| {
            bump(&mut sc(d, 1)["nondeterministic"], 1);
            bump(&mut d["nondeterministic"], 1);
        }),
        "scenarios[1].nondeterministic (retries): 1 seeds that differed between two runs, in a sweep that ran each seed once",
    );
}

#[test]
fn the_differences_listed_are_the_ones_counted_each_once_and_run() {
    fn differing(d: &mut Value, seeds: &[u64]) {
        d["check_determinism"] = json!(true);
        d["determinism_checked"] = json!(true);
        let list: Vec<Value> = seeds
            .iter()
            .map(|s| json!({"seed": s, "difference": "x"}))
            .collect();
        sc(d, 1)["nondeterministic"] = json!(2);
        sc(d, 1)["nondeterministic_seeds"] = json!(list);
        d["nondeterministic"] = json!(2);
    }
    check(
        Edit::Sweep(|d| differing(d, &[40])),
        "scenarios[1].nondeterministic_seeds (retries): 1 seeds listed, but nondeterministic is 2",
    );
    check(
        Edit::Sweep(|d| differing(d, &[40, 40])),
        "scenarios[1].nondeterministic_seeds[1].seed (retries): seed 40 after seed 40",
    );
    check(
        Edit::Sweep(|d| differing(d, &[40, 61])),
        "scenarios[1].nondeterministic_seeds[1].seed (retries): seed 61 is not one that ran",
    );
}

#[test]
fn determinism_checked_is_check_determinism() {
    check(
        Edit::Sweep(|d| d["determinism_checked"] = json!(true)),
        "determinism_checked: true, but check_determinism is false",
    );
}

// Seeds the machines cannot express.

#[test]
fn the_reasons_count_the_seeds_not_expressible() {
    check(Edit::Sweep(|d| sc(d, 1)["not_expressible_reasons"] = json!({"no claim statement": 3})), "scenarios[1].not_expressible_reasons (retries): its reasons count 3 seeds, but not_expressible is 0");
    check(
        Edit::Sweep(|d| {
            let reasons: serde_json::Map<String, Value> =
                (0..9).map(|k| (format!("reason {k}"), json!(1))).collect();
            sc(d, 1)["not_expressible_reasons"] = Value::Object(reasons);
        }),
        "scenarios[1].not_expressible_reasons: a table of more than 8 names",
    );
}

#[test]
fn seeds_not_expressible_are_at_most_the_runs() {
    check(
        Edit::Sweep(|d| sc(d, 1)["not_expressible"] = json!(31)),
        "scenarios[1].not_expressible (retries): 31 seeds not expressible among 30 runs",
    );
}

// Hazards and coverage.

#[test]
fn a_hazard_count_is_one_to_the_seeds_of_the_share() {
    check(
        Edit::Sweep(|d| sc(d, 0)["hazards"]["takeover"] = json!(31)),
        "scenarios[0].hazards.takeover (w1-w2): 31 seeds reached it",
    );
    check(
        Edit::Sweep(|d| sc(d, 0)["hazards"]["takeover"] = json!(0)),
        "scenarios[0].hazards.takeover (w1-w2): 0 seeds reached it",
    );
    check(
        Edit::Sweep(|d| sc(d, 0)["hazards"]["no-such"] = json!(1)),
        "scenarios[0].hazards (w1-w2): unknown hazard 'no-such'",
    );
}

#[test]
fn the_declared_hazards_are_the_scenarios() {
    check(
        Edit::Sweep(|d| sc(d, 0)["declared_hazards"] = json!(["takeover"])),
        "scenarios[0].declared_hazards (w1-w2)",
    );
}

#[test]
fn a_shard_leaves_coverage_to_the_merge() {
    check(
        Edit::Sweep(|d| sc(d, 1)["unreached_hazards"] = json!(["takeover"])),
        "scenarios[1].unreached_hazards (retries)",
    );
    check(
        Edit::Sweep(|d| d["coverage_judged"] = json!(true)),
        "coverage_judged: true, but coverage is judged only on a whole sweep",
    );
}

// The seeds that ran.

#[test]
fn the_ranges_that_ran_are_sorted_and_disjoint() {
    check(
        Edit::Sweep(|d| {
            sc(d, 0)["ran"] = json!([{"start": 30, "end": 45}, {"start": 40, "end": 60}]);
        }),
        "scenarios[0].ran[1] (w1-w2): seeds 40..60 begin before the range before them ends at 45",
    );
    check(
        Edit::Sweep(|d| sc(d, 0)["ran"][0] = json!({"start": 40, "end": 35})),
        "scenarios[0].ran[0]: 40..35 is not a range",
    );
}

#[test]
fn a_stopped_sweep_leaves_at_most_one_gap_per_thread() {
    check(
        Edit::Sweep(|d| {
            d["threads"] = json!(1);
            sc(d, 1)["ran"] = json!([{"start": 30, "end": 31}, {"start": 40, "end": 41}, {"start": 50, "end": 51}]);
        }),
        "scenarios[1].ran (retries): 3 ranges of seeds, more than the 2",
    );
}

#[test]
fn the_seeds_that_ran_are_inside_the_share() {
    check(
        Edit::Sweep(|d| sc(d, 1)["ran"][0]["start"] = json!(20)),
        "scenarios[1].ran[0] (retries): it ran seeds 20..60 of retries, outside its share",
    );
    check(Edit::Sweep(|d| sc(d, 1)["share"]["start"] = json!(20)), "scenarios[1].share (retries): its share of retries is seeds 20..60, but this shard of the sweep holds 30..60");
}

#[test]
fn a_shard_that_ran_its_whole_share_was_neither_interrupted_nor_out_of_time() {
    check(
        Edit::Sweep(|d| d["interrupted"] = json!(true)),
        "interrupted: true, but it ran all 60 runs of its share",
    );
    check(
        Edit::Sweep(|d| {
            d["budget"] =
                json!({"budget_s": 5.0, "spent": true, "overrun_s": 0.0, "slowest_seed_s": 0.1})
        }),
        "budget.spent: true, but it ran all 60 runs",
    );
    check(
        Edit::Sweep(|d| {
            d["budget"] =
                json!({"budget_s": 5.0, "spent": false, "overrun_s": 0.5, "slowest_seed_s": 0.1})
        }),
        "budget.overrun_s: 0.5s past a budget that was not spent",
    );
}

// The header: how it ran.

#[test]
fn known_bad_is_the_variants() {
    check(
        Edit::Sweep(|d| d["known_bad"] = json!(false)),
        "known_bad: false, but this leasesim's receiver-ignores-fence is a known-bad variant",
    );
}

#[test]
fn a_random_base_is_where_the_seeds_begin_and_is_never_sharded() {
    check(
        Edit::Sweep(|d| d["seeds_random_base"] = json!(7)),
        "seeds_random_base: 7, but the seeds begin at 0",
    );
    check(
        Edit::Sweep(|d| d["seeds_random_base"] = json!(0)),
        "seeds_random_base: 0 in shard 2/2",
    );
}

#[test]
fn a_sweep_ran_on_one_to_the_most_threads() {
    check(
        Edit::Sweep(|d| d["threads"] = json!(0)),
        "threads: 0, but a sweep runs on 1 to 1024",
    );
}

#[test]
fn a_merged_result_is_of_the_whole_sweep() {
    check(
        Edit::Sweep(|d| d["merged"] = json!({"files": [], "problems": []})),
        "merged: a merged result of shard 2/2",
    );
}

#[test]
fn times_are_never_negative() {
    check(
        Edit::Sweep(|d| sc(d, 0)["busy_s"] = json!(-1.0)),
        "scenarios[0].busy_s: -1 is a negative number of seconds",
    );
}

// The document itself.

#[test]
fn a_field_missing_or_of_the_wrong_type_is_named() {
    check(
        Edit::Sweep(|d| {
            d.as_object_mut().unwrap().remove("events");
        }),
        "missing field `events`",
    );
    check(
        Edit::Sweep(|d| sc(d, 1)["runs"] = json!("30")),
        "scenarios[1].runs: invalid type: string \"30\", expected u64",
    );
}

#[test]
fn a_key_given_twice_anywhere_is_refused() {
    // A field merge reads, one it skips, and a key of a table.
    check(
        Edit::SweepText(|t| t.replacen("\"failing\":", "\"failing\":0,\"failing\":", 1)),
        "duplicate key \"failing\" at the top level",
    );
    check(
        Edit::SweepText(|t| {
            t.replacen("\"seeds_per_s\":", "\"seeds_per_s\":0,\"seeds_per_s\":", 1)
        }),
        "duplicate key \"seeds_per_s\" at the top level",
    );
    check(
        Edit::SweepText(|t| {
            t.replacen(
                "\"hazards\":{",
                "\"hazards\":{\"takeover\":1,\"takeover\":1,",
                1,
            )
        }),
        "duplicate key \"takeover\" in scenarios[0].hazards",
    );
    check(
        Edit::MatrixText(|t| t.replacen("\"seeds_run\":", "\"seeds_run\":1,\"seeds_run\":", 1)),
        "duplicate key \"seeds_run\" in cells[0]",
    );
}

// Matrix shards.

/// The first cell of a known-bad row that caught its variant.
fn caught(d: &mut Value) -> &mut Value {
    d["cells"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .find(|c| !c["first_failing_seed"].is_null())
        .expect("a caught cell in the first shard")
}

#[test]
fn a_cell_is_of_its_row_and_its_column() {
    check(
        Edit::Matrix(|d| d["cells"][0]["variant"] = json!("no-jeopardy")),
        "cells[0].variant: \"no-jeopardy\", but cell 0 is in the row of reference",
    );
    check(
        Edit::Matrix(|d| d["cells"][0]["scenario"] = json!("retries")),
        "cells[0].scenario: \"retries\", but cell 0 is in the column of w1-w2",
    );
    check(
        Edit::Matrix(|d| d["cells"][0]["scenario"] = json!("no-such")),
        "cells[0].scenario: unknown scenario 'no-such'",
    );
}

#[test]
fn a_cells_counts_fit_in_its_seeds() {
    check(
        Edit::Matrix(|d| d["cells"][0]["seeds_run"] = json!(5)),
        "cells[0].seeds_run: 5, more than the matrix's 4 seeds",
    );
    check(
        Edit::Matrix(|d| d["cells"][0]["unfinished"] = json!(5)),
        "cells[0].failing: 0 failing, 5 unfinished and 0 not expressible among 4 seeds run",
    );
    check(
        Edit::Matrix(|d| d["cells"][0]["seeds_run"] = json!(3)),
        "cells[0].seeds_run: 3 of the matrix's 4 seeds",
    );
}

#[test]
fn a_first_failing_seed_is_one_that_ran_failed_and_broke_an_invariant() {
    check(
        Edit::Matrix(|d| caught(d)["first_failing_seed"] = json!(4)),
        "first_failing_seed: seed 4, but the cell ran seeds 0..",
    );
    check(
        Edit::Matrix(|d| {
            let c = &mut d["cells"][0];
            c["first_failing_seed"] = json!(1);
            c["invariants"] = json!(["no-stale-commit (I1)"]);
        }),
        "cells[0].first_failing_seed: seed 1 in a cell whose failing is 0",
    );
    check(
        Edit::Matrix(|d| caught(d)["invariants"] = json!([])),
        "invariants: [] with first_failing_seed Some(",
    );
    check(
        Edit::Matrix(|d| d["cells"][0]["invariants"] = json!(["no-stale-commit (I1)"])),
        "cells[0].invariants: [\"no-stale-commit (I1)\"] with first_failing_seed None",
    );
    check(
        Edit::Matrix(|d| caught(d)["invariants"] = json!(["no-such (I9)"])),
        "invariants: unknown invariant 'no-such (I9)'",
    );
}

#[test]
fn the_catalogue_names_this_programs_machines_once_each() {
    check(
        Edit::Matrix(|d| {
            let first = d["catalogue"][0].clone();
            d["catalogue"].as_array_mut().unwrap().insert(1, first);
        }),
        "catalogue[1].name: reference is named twice",
    );
    check(
        Edit::Matrix(|d| d["catalogue"][0]["known_bad"] = json!(true)),
        "catalogue[0].known_bad: true, but this leasesim's reference is machines expected to hold",
    );
}

#[test]
fn a_matrix_shard_holds_exactly_its_cells() {
    check(
        Edit::Matrix(|d| {
            d["cells"].as_array_mut().unwrap().remove(3);
        }),
        "cells: its cells are not the cells 0..",
    );
    check(
        Edit::Matrix(|d| d["seeds"] = json!(0)),
        "seeds: a matrix of no seeds",
    );
}
