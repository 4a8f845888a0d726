//! `run`, `replay`, `report` and `shrink`: one run, shown as a timeline and a verdict, saved,
//! rendered or minimised. Every file a command writes is checked before the run, every file it
//! reads is bounded and checked as a replay file is.

use super::args::whole;
use super::args::{check_outputs, Outputs};
use super::pick_with;
use super::{io, scenario, sql, Format, RunFormat, UsageError};
use leasesim::journal;
use leasesim::replay::{
    self, shrunk_path, RecordedMachines, Replay, RunFile, TRACE_FORMAT, TRACE_VERSION,
};
use leasesim::report as examples;
use leasesim::run::rerun_command;
use leasesim::run::{check_same, reproduce_command_for, RunResult, Verdict};
use leasesim::scenarios::{self, ScenarioDef};
use leasesim::setup::Setup;
use leasesim::shrink;
use leasesim::story;
use leasesim::Machines;
use leasesim_protocol::Invariant;
use leasesim_reports::{self as reports, Names};
use leasesim_shell::engines::{self, Engine};
use serde_json::json;
use std::io::Write;
use std::path::{Path, PathBuf};

/// Options shared by `run` and `replay`.
pub(super) struct RunOpts {
    pub outputs: Outputs,
    /// `--journal-dir`: the journal as one file per node.
    pub journal_dir: Option<std::path::PathBuf>,
    pub check_determinism: bool,
    pub allow_unsafe_timing: bool,
    pub engine: Engine,
    pub format: RunFormat,
    /// The program's name, for headers (`leasesim`, or a user's binary).
    pub program: String,
}

pub(super) fn engine_arg(name: &str) -> Result<Engine, UsageError> {
    Ok(Engine::named(name)?)
}

fn findings_json(r: &RunResult) -> serde_json::Value {
    r.findings
        .iter()
        .map(|f| {
            json!({
                "invariant": f.invariant.name(),
                "spec": f.invariant.spec_id(),
                "t_ns": f.t_ns,
                "node": r.nodes.get(f.node as usize).map(|n| n.name.as_str()).unwrap_or("world"),
                "message": f.message,
            })
        })
        .collect()
}

pub(super) fn run_cmd(
    out: &mut dyn Write,
    name: &str,
    seed: u64,
    m: &Machines,
    opts: &RunOpts,
    scen: &[ScenarioDef],
) -> Result<i32, UsageError> {
    let def = scenario(scen, name)?;
    let setup = def.build(seed, m.setup_variant());
    m.expressible(&setup).map_err(|e| {
        UsageError(format!(
            "{name} seed {seed} is not expressible on {}: {e}",
            m.name()
        ))
    })?;
    if !opts.allow_unsafe_timing {
        setup
            .validate_timing()
            .map_err(|e| UsageError(format!("{e}; pass --allow-unsafe-timing to run it anyway")))?;
    }
    check_outputs(&opts.outputs.named(), &[])?;
    let selector = m
        .command_line()
        .map_or_else(|| format!("--variant {}", m.name()), str::to_string);
    let header = format!(
        "{} run {name} --seed {seed} {selector} ({})",
        opts.program,
        describe(m)
    );
    let (code, _) = present(
        out,
        &header,
        &setup,
        seed,
        &reproduce_command_for(m, name, seed),
        opts,
        m,
    )?;
    Ok(code)
}

pub(super) fn replay_cmd(
    out: &mut dyn Write,
    file: &Path,
    cat: &[Machines],
    scen: &[ScenarioDef],
    opts: &RunOpts,
) -> Result<i32, UsageError> {
    let replay = Replay::load(file).map_err(UsageError)?;
    let m = resolve(replay.machines.as_ref(), &replay.setup, file, cat, scen)?;
    check_outputs(&opts.outputs.named(), &[file])?;
    let header = format!(
        "{} replay {}: {} seed {} variant {} (recorded by leasesim {})",
        opts.program,
        file.display(),
        replay.setup.scenario,
        replay.seed,
        m.name(),
        replay.leasesim
    );
    let opts = RunOpts {
        allow_unsafe_timing: replay.allow_unsafe_timing,
        outputs: opts.outputs.clone(),
        journal_dir: opts.journal_dir.clone(),
        program: opts.program.clone(),
        ..*opts
    };
    let (code, r) = present(
        out,
        &header,
        &replay.setup,
        replay.seed,
        &replay_reproduce(&replay, file, &m, scen),
        &opts,
        &m,
    )?;
    if opts.format != RunFormat::Json {
        let hash = format!("{:016x}", r.trace_hash());
        let line = match (&replay.expect, replay.matches(&r)) {
            (None, _) => format!(
                "replay: the file records no expected run (no \"expect\"); this run's verdict is {} with trace hash {hash}",
                r.verdict().word()
            ),
            (Some(_), Some(true)) => {
                format!("replay: identical to the recorded run (trace hash {hash})")
            }
            (Some(e), _) => format!(
                "replay: DIFFERS from the recorded run (recorded: {} with trace hash {}; now: {} with trace hash {hash}); the code or the file changed since it was recorded",
                e.verdict.word(),
                e.trace_hash,
                r.verdict().word(),
            ),
        };
        io(writeln!(out, "{line}"))?;
    }
    Ok(code)
}

/// The machines a saved run was recorded with, from `cat`, and able to express it. A run of a
/// SQL coordinator needs its file again (`--coordinator sql:FILE`), with the same content.
fn resolve(
    recorded: Option<&RecordedMachines>,
    setup: &Setup,
    file: &Path,
    cat: &[Machines],
    scen: &[ScenarioDef],
) -> Result<Machines, UsageError> {
    let m = replay::machines_in(recorded, setup, cat, Some(file)).map_err(|e| {
        let given = cat.iter().find(|m| m.command_line().is_some());
        if let Some(needs) = recorded.and_then(|r| sql::replay_needs_exec(file, r, given)) {
            return needs;
        }
        match recorded.and_then(|r| sql::recorded_sql(&r.coordinator)) {
            Some(name) => sql::replay_needs(
                file,
                name,
                cat.iter()
                    .find(|m| sql::recorded_sql(&m.parts().coordinator).is_some()),
            ),
            None => UsageError(format!("{}: {e}", file.display())),
        }
    })?;
    // The machines first: a file of machines this program lacks names the program that has
    // them, scenario and all.
    if scenarios::find_in(scen, &setup.scenario).is_none() {
        let known: Vec<&str> = scen.iter().map(|s| &*s.name).collect();
        return Err(UsageError(format!(
            "{}: recorded with scenario '{}', which this program does not have (it has: {})",
            file.display(),
            setup.scenario,
            known.join(", ")
        )));
    }
    m.expressible(setup).map_err(|e| {
        UsageError(format!(
            "{}: {} cannot express this run: {e}",
            file.display(),
            m.name()
        ))
    })?;
    Ok(m)
}

/// Whether `setup` is exactly what its scenario (one of `scen`) builds for `seed`.
fn pristine(setup: &Setup, seed: u64, scen: &[ScenarioDef]) -> bool {
    scenarios::find_in(scen, &setup.scenario)
        .is_some_and(|d| d.build(seed, setup.variant) == *setup)
}

/// The command that reproduces a replay: the plain `run` when the replay is exactly what the
/// scenario builds for that seed, `replay <file>` otherwise (a shrunk plan, an edited one).
fn replay_reproduce(replay: &Replay, file: &Path, m: &Machines, scen: &[ScenarioDef]) -> String {
    if pristine(&replay.setup, replay.seed, scen) {
        reproduce_command_for(m, &replay.setup.scenario, replay.seed)
    } else {
        rerun_command(m, &replay.setup.scenario, file)
    }
}

/// One line on what machines these are: the variant's bug, or the user's parts.
pub(super) fn describe(m: &Machines) -> String {
    match leasesim::Variant::from_name(m.name()).filter(|_| m.is_stock()) {
        Some(v) => v.summary().to_string(),
        None => {
            let p = m.parts();
            let parts = format!(
                "coordinator {}, worker {}, receiver {}",
                p.coordinator, p.worker, p.receiver
            );
            // The bug a user's known-bad set carries, as `known_bad_as` says it.
            match m.bug() {
                Some(bug) => format!("{bug} ({parts})"),
                None => parts,
            }
        }
    }
}

pub(super) fn report_cmd(
    out: &mut dyn Write,
    file: &Path,
    html: Option<PathBuf>,
    markdown: Option<PathBuf>,
    cat: &[Machines],
    scen: &[ScenarioDef],
) -> Result<i32, UsageError> {
    if html.is_none() && markdown.is_none() {
        return Err(UsageError(
            "report needs --html <file> or --markdown <file>".into(),
        ));
    }
    // Both a replay file and a trace file hold the setup and the seed: the run is rebuilt from
    // them, and the recorded hash tells whether the code still produces the same run.
    let saved = RunFile::load(file).map_err(UsageError)?;
    let outputs = Outputs {
        html,
        markdown,
        ..Outputs::default()
    };
    check_outputs(&outputs.named(), &[file])?;
    let (setup, seed, recorded_hash, is_replay, recorded) = match saved {
        RunFile::Replay(r) => (
            r.setup,
            r.seed,
            r.expect.map(|e| e.trace_hash),
            true,
            r.machines,
        ),
        RunFile::Trace {
            setup,
            seed,
            trace_hash,
            machines,
        } => (setup, seed, trace_hash, false, machines),
    };
    let m = resolve(recorded.as_ref(), &setup, file, cat, scen)?;
    let r = leasesim::run::run(&setup, seed, &m);
    let reproduce = if pristine(&setup, seed, scen) {
        reproduce_command_for(&m, &setup.scenario, seed)
    } else if is_replay {
        rerun_command(&m, &setup.scenario, file)
    } else {
        format!(
            "cargo run --release -- report {} --html <file>",
            file.display()
        )
    };
    let (h, md) = examples::render(&r, &examples::title(&setup, seed), &reproduce);
    for (path, text) in [(&outputs.html, h), (&outputs.markdown, md)] {
        if let Some(path) = path {
            write_file(path, text.as_bytes())?;
            io(writeln!(out, "wrote {}", path.display()))?;
        }
    }
    let hash = format!("{:016x}", r.trace_hash());
    if recorded_hash.is_some_and(|h| h != hash) {
        io(writeln!(out, "note: the run differs from the recorded one (the code or the file changed since it was recorded); the report shows today's run"))?;
    }
    Ok(r.verdict().exit_code())
}

fn write_file(path: &Path, bytes: &[u8]) -> Result<(), UsageError> {
    leasesim::files::write(path, bytes)
        .map_err(|e| UsageError(format!("cannot write {}: {e}", path.display())))
}

fn write_json(path: &Path, doc: &serde_json::Value) -> Result<(), UsageError> {
    let text = serde_json::to_string_pretty(doc)
        .map_err(|e| UsageError(format!("cannot encode {}: {e}", path.display())))?;
    write_file(path, (text + "\n").as_bytes())
}

/// A run on the engine the options name, with the determinism check and the shell's notes.
struct EngineResult {
    result: RunResult,
    determinism: Option<Result<(), String>>,
    problems: Vec<String>,
    stats: Option<leasesim_shell::ShellStats>,
}

fn run_on_engine(
    setup: &Setup,
    seed: u64,
    opts: &RunOpts,
    m: &Machines,
) -> Result<EngineResult, UsageError> {
    if opts.engine == Engine::Sim {
        let r = leasesim::run::run(setup, seed, m);
        let determinism = opts
            .check_determinism
            .then(|| check_same(&r, &leasesim::run::run(setup, seed, m)));
        return Ok(EngineResult {
            result: r,
            determinism,
            problems: Vec::new(),
            stats: None,
        });
    }
    opts.engine.supports(setup).map_err(UsageError)?;
    let (run, determinism) = if opts.check_determinism {
        match engines::check_determinism(opts.engine, setup, seed, m) {
            Ok(run) => (run, Some(Ok(()))),
            Err(e) => (
                engines::run(opts.engine, setup, seed, m).map_err(UsageError)?,
                Some(Err(e)),
            ),
        }
    } else {
        (
            engines::run(opts.engine, setup, seed, m).map_err(UsageError)?,
            None,
        )
    };
    Ok(EngineResult {
        problems: run.problems.clone(),
        stats: run.stats,
        result: run.result,
        determinism,
    })
}

/// Runs a setup and prints it as `run` does: the timeline, the verdict, the findings, the
/// hazards and the trace hash; then writes the files asked for. Returns the exit code and the
/// result.
fn present(
    out: &mut dyn Write,
    header: &str,
    setup: &Setup,
    seed: u64,
    reproduce: &str,
    opts: &RunOpts,
    m: &Machines,
) -> Result<(i32, RunResult), UsageError> {
    if opts.engine != Engine::Sim && opts.outputs.save.is_some() {
        return Err(UsageError(format!(
            "--save records a simulator run (replay re-runs on the simulator); run without --engine {} to save one",
            opts.engine.name()
        )));
    }
    let e = run_on_engine(setup, seed, opts, m)?;
    let r = &e.result;
    let verdict = r.verdict();
    let metrics = journal::metrics(r);
    let deterministic = !matches!(e.determinism, Some(Err(_)));
    let code = if deterministic && e.problems.is_empty() {
        verdict.exit_code()
    } else {
        1
    };
    if opts.format == RunFormat::Story {
        io(writeln!(out, "{header}"))?;
        io(out.write_all(story::story(setup, r)?.as_bytes()))?;
        if verdict != Verdict::Held {
            io(writeln!(out, "reproduce: {reproduce}"))?;
        }
    } else if opts.format == RunFormat::Json {
        let doc = run_json(setup, seed, &e, &metrics, reproduce, opts);
        io(writeln!(out, "{doc:#}"))?;
    } else {
        print_text(out, header, &e, &metrics, reproduce, opts)?;
    }
    write_outputs(setup, seed, r, reproduce, opts, m)?;
    Ok((code, e.result))
}

/// `run --format json`'s document: the run, its verdict, findings, hazards and metrics, and
/// what the engine and the determinism check said.
fn run_json(
    setup: &Setup,
    seed: u64,
    e: &EngineResult,
    metrics: &journal::Metrics,
    reproduce: &str,
    opts: &RunOpts,
) -> serde_json::Value {
    let r = &e.result;
    let verdict = r.verdict();
    json!({
        "scenario": setup.scenario,
        "variant": setup.variant.name(),
        "seed": seed,
        "verdict": verdict,
        "end": r.end,
        "end_ns": r.end_ns,
        "events": r.events,
        "trace_hash": format!("{:016x}", r.trace_hash()),
        "findings": findings_json(r),
        "skipped": r.skipped.iter().map(ToString::to_string).collect::<Vec<_>>(),
        "machine_error": r.machine_fault,
        "unfinished": r.unfinished,
        "hazards": r.hazards.iter().map(|(h, n)| (h.name().to_string(), json!(n))).collect::<serde_json::Map<_, _>>(),
        "metrics": metrics.to_json(),
        "deterministic": e.determinism.as_ref().map(|d| d.is_ok()),
        "determinism_error": e.determinism.as_ref().and_then(|d| d.as_ref().err()),
        "engine_problems": e.problems,
        "reproduce": reproduce,
        "engine": opts.engine.name(),
        "shell": e.stats,
    })
}

/// The files `run` and `replay` write, after the run was shown.
fn write_outputs(
    setup: &Setup,
    seed: u64,
    r: &RunResult,
    reproduce: &str,
    opts: &RunOpts,
    m: &Machines,
) -> Result<(), UsageError> {
    let o = &opts.outputs;
    if let Some(path) = &o.trace {
        let doc = json!({
            "format": TRACE_FORMAT,
            "version": TRACE_VERSION,
            "leasesim": env!("CARGO_PKG_VERSION"),
            "scenario": setup.scenario,
            "variant": setup.variant.name(),
            "seed": seed,
            "allow_unsafe_timing": opts.allow_unsafe_timing,
            "setup": replay::setup_json(setup).map_err(UsageError)?,
            "nodes": &*r.nodes,
            "verdict": r.verdict(),
            "findings": findings_json(r),
            "trace_hash": format!("{:016x}", r.trace_hash()),
            "machines": RecordedMachines::of(m, &rerun_command(m, &setup.scenario, path)).map(|rec| rec.to_json()),
            "events": r.trace,
        });
        write_json(path, &doc)?;
    }
    if let Some(path) = &o.journal {
        let cannot = |e: String| UsageError(format!("cannot write {}: {e}", path.display()));
        let mut file = leasesim::files::Partial::create(path).map_err(|e| cannot(e.to_string()))?;
        // A signal while the journal is written leaves no journal rather than a cut one, which
        // would read as a run that stopped there.
        let partial = file.handle();
        let _on_signal = leasesim::interrupt::while_alive(move || partial.discard());
        let hashes: Vec<u64> = setup.jobs.iter().map(|j| j.payload_hash).collect();
        journal::write_journal_with_payload_hashes(r, &hashes, &mut file).map_err(cannot)?;
        file.finish().map_err(|e| cannot(e.to_string()))?;
    }
    if let Some(dir) = &opts.journal_dir {
        let hashes: Vec<u64> = setup.jobs.iter().map(|j| j.payload_hash).collect();
        journal::write_journal_dir(r, &hashes, dir).map_err(UsageError)?;
    }
    if o.html.is_some() || o.markdown.is_some() {
        let (html, md) = examples::render(r, &examples::title(setup, seed), reproduce);
        for (path, text) in [(&o.html, html), (&o.markdown, md)] {
            if let Some(path) = path {
                write_file(path, text.as_bytes())?;
            }
        }
    }
    if let Some(path) = &o.save {
        Replay::record_on(
            setup,
            seed,
            opts.allow_unsafe_timing,
            r,
            m,
            &rerun_command(m, &setup.scenario, path),
        )
        .save(path)
        .map_err(UsageError)?;
    }
    Ok(())
}

/// `run`'s text: the header, the async shell's counts, the timeline, the verdict with its
/// findings, the hazards, the metrics and the trace hash, then what the engine and the
/// determinism check said.
fn print_text(
    out: &mut dyn Write,
    header: &str,
    e: &EngineResult,
    metrics: &journal::Metrics,
    reproduce: &str,
    opts: &RunOpts,
) -> Result<(), UsageError> {
    let r = &e.result;
    let verdict = r.verdict();
    let node_names: Vec<String> = r.nodes.iter().map(|n| n.name.clone()).collect();
    let names = Names {
        nodes: &node_names,
        ops: &r.op_names,
    };
    io(writeln!(out, "{header}"))?;
    if let Some(s) = e.stats {
        shell_line(out, opts, s)?;
    }
    io(out.write_all(reports::timeline(&names, &r.trace).as_bytes()))?;
    io(writeln!(out))?;
    io(writeln!(
        out,
        "verdict: {} ({} invariants checked over {} events; the run ended ({:?}) at {})",
        verdict.word(),
        Invariant::ALL.len(),
        r.events,
        r.end,
        reports::secs(r.end_ns)
    ))?;
    if let Some(fault) = &r.machine_fault {
        io(writeln!(out, "  machine error: {fault}"))?;
    } else if let Some(why) = &r.unfinished {
        io(writeln!(out, "  unfinished: {why}"))?;
    }
    for f in &r.findings {
        io(writeln!(out, "  {}", reports::finding(&names, f)))?;
    }
    for s in &r.skipped {
        io(writeln!(out, "skipped: {s}"))?;
    }
    let reached: Vec<String> = r
        .hazards
        .iter()
        .map(|(h, n)| format!("{} {n}", h.name()))
        .collect();
    io(writeln!(
        out,
        "hazards reached: {}",
        if reached.is_empty() {
            "none".to_string()
        } else {
            reached.join(", ")
        }
    ))?;
    io(writeln!(out, "{metrics}"))?;
    io(writeln!(out, "trace hash: {:016x}", r.trace_hash()))?;
    if verdict != Verdict::Held {
        io(writeln!(out, "reproduce: {reproduce}"))?;
    }
    engine_checks(out, e, opts)
}

/// What the async shell did beyond the trace.
fn shell_line(
    out: &mut dyn Write,
    opts: &RunOpts,
    s: leasesim_shell::ShellStats,
) -> Result<(), UsageError> {
    io(writeln!(
        out,
        "engine: {} (async shell: {} tool calls, {} answered, {} cancelled by lease loss, {} by client timeout, {} otherwise; {} heartbeat-task wakes)",
        opts.engine.name(),
        s.tool_calls,
        s.tool_answered,
        s.cancelled_lease_lost,
        s.cancelled_timed_out,
        s.cancelled_other,
        s.heartbeat_task_wakes
    ))
}

/// Whether the engine did what its trace says, and whether a second run was identical.
fn engine_checks(out: &mut dyn Write, e: &EngineResult, opts: &RunOpts) -> Result<(), UsageError> {
    if !e.problems.is_empty() {
        io(writeln!(
            out,
            "engine: the {} engine did not do what its trace says: {}",
            opts.engine.name(),
            e.problems.join("; ")
        ))?;
    }
    match &e.determinism {
        Some(Ok(())) => io(writeln!(out, "determinism: ran twice, identical traces"))?,
        Some(Err(e)) => io(writeln!(out, "determinism: NOT DETERMINISTIC: {e}"))?,
        None => {}
    }
    Ok(())
}

pub(super) fn shrink_cmd(
    out: &mut dyn Write,
    file: &Path,
    dest: Option<PathBuf>,
    format: Format,
    cat: &[Machines],
    scen: &[ScenarioDef],
    graceful: &leasesim::interrupt::Graceful,
) -> Result<i32, UsageError> {
    let replay = Replay::load(file).map_err(UsageError)?;
    // A Ctrl-C ends the shrinking after the candidate run under way; the smallest failing plan
    // found so far is saved and shown, and the command exits as a signal's. The caller's
    // section started before any SQL server (from `--coordinator`, or the replay's recorded
    // machines, resolved here).
    let m = resolve(replay.machines.as_ref(), &replay.setup, file, cat, scen)?;
    let dest = dest.unwrap_or_else(|| shrunk_path(file));
    check_outputs(&[("--out", &dest)], &[file])?;
    #[allow(clippy::disallowed_methods)] // the shrinker's own duration, never the simulated world
    let started = std::time::Instant::now();
    let shrunk = shrink::shrink_until(&replay, &m, graceful.stop())
        .map_err(|e| UsageError(format!("{}: {e}", file.display())))?;
    let elapsed = started.elapsed().as_secs_f64();
    let mut shrunk = shrunk;
    if let Some(rec) = &mut shrunk.replay.machines {
        rec.rerun = rerun_command(&m, &shrunk.replay.setup.scenario, &dest);
    }
    shrunk.replay.save(&dest).map_err(UsageError)?;
    let verdict = shrunk
        .replay
        .expect
        .as_ref()
        .map_or(Verdict::Held, |e| e.verdict.clone());
    let code = match shrunk.stopped {
        true => leasesim::interrupt::exit_code(),
        false => verdict.exit_code(),
    };
    if format == Format::Json {
        let doc = shrink_json(&shrunk, elapsed, &dest, &verdict);
        io(writeln!(out, "{doc:#}"))?;
        return Ok(code);
    }
    if shrunk.stopped {
        io(writeln!(
            out,
            "stopped by a signal: what follows is the smallest failing plan found so far"
        ))?;
    }
    io(writeln!(
        out,
        "shrunk {} ({} seed {} variant {}) in {elapsed:.3}s over {} runs: {} fault(s) -> {}, {} worker(s), {} job(s); {} still fails",
        file.display(),
        replay.setup.scenario,
        replay.seed,
        m.name(),
        shrunk.runs,
        shrunk.faults_before,
        shrunk.replay.setup.faults.len(),
        shrunk.replay.setup.workers.len(),
        shrunk.replay.setup.jobs.len(),
        shrunk.invariant.label(),
    ))?;
    minimal_plan(out, &shrunk.replay.setup)?;
    io(writeln!(
        out,
        "written to {}; see it with: {}",
        dest.display(),
        rerun_command(&m, &shrunk.replay.setup.scenario, &dest)
    ))?;
    Ok(code)
}

/// `shrink --format json`'s document: what was shrunk to what, in how many runs.
fn shrink_json(
    shrunk: &shrink::Shrunk,
    elapsed: f64,
    dest: &Path,
    verdict: &Verdict,
) -> serde_json::Value {
    json!({
        "stopped": shrunk.stopped,
        "invariant": shrunk.invariant.name(),
        "spec": shrunk.invariant.spec_id(),
        "faults_before": shrunk.faults_before,
        "faults_after": shrunk.replay.setup.faults.len(),
        "workers": shrunk.replay.setup.workers.len(),
        "jobs": shrunk.replay.setup.jobs.len(),
        "faults": shrunk.replay.setup.faults.iter().map(replay::fault_json).collect::<Vec<_>>(),
        "runs": shrunk.runs,
        "elapsed_s": elapsed,
        "shrunk": dest.display().to_string(),
        "verdict": verdict,
    })
}

/// The shrunk plan's faults, one a line.
fn minimal_plan(out: &mut dyn Write, setup: &Setup) -> Result<(), UsageError> {
    io(writeln!(out, "minimal plan:"))?;
    if setup.faults.is_empty() {
        io(writeln!(out, "  (no fault: the variant fails on its own)"))?;
    }
    for f in &setup.faults {
        io(writeln!(out, "  {}", shrink::describe(f)))?;
    }
    Ok(())
}

/// `leasesim run`'s arguments.
#[derive(clap::Args, Debug)]
pub(crate) struct RunCli {
    /// Scenario name (see `list`).
    pub scenario: String,
    /// The seed.
    #[arg(long, allow_hyphen_values = true, value_parser = whole::<u64>)]
    pub seed: u64,
    /// The machines to run: a variant of the reference, or a user's machines (see `list`);
    /// the program's first by default.
    #[arg(long, visible_alias = "machines")]
    pub variant: Option<String>,
    /// Writes the whole trace as JSON to this file.
    #[arg(long)]
    pub trace: Option<PathBuf>,
    /// Runs a configuration that breaks the P6 timing rule instead of refusing it.
    #[arg(long)]
    pub allow_unsafe_timing: bool,
    /// Writes a replay file of this run.
    #[arg(long)]
    pub save: Option<PathBuf>,
    /// Writes the journal (JSON lines, P18) to this file.
    #[arg(long)]
    pub journal: Option<PathBuf>,
    /// Writes the journal as one file per node into this folder (`coord.jsonl`,
    /// `W1.jsonl`, `recv.jsonl`, ...), each with its node's own clock only: what
    /// `leasesim audit` reads from a real system.
    #[arg(long)]
    pub journal_dir: Option<PathBuf>,
    /// Writes the run as a self-contained HTML timeline.
    #[arg(long)]
    pub html: Option<PathBuf>,
    /// Writes the run as Markdown with a Mermaid sequence diagram.
    #[arg(long)]
    pub markdown: Option<PathBuf>,
    /// Runs the seed twice and compares the traces (on madsim: madsim's own check too).
    #[arg(long)]
    pub check_determinism: bool,
    /// The engine: `sim` (the simulator), `madsim` (the async shell on madsim, in the madsim
    /// build) or `tokio` (the async shell on real tokio, in the normal build).
    #[arg(long, default_value = "sim")]
    pub engine: String,
    /// Output format.
    #[arg(long, value_enum, default_value_t = RunFormat::Text)]
    pub format: RunFormat,
    /// Writes every line exchanged with the run's processes (`--worker exec:...`) to this
    /// file: `worker 0 > INPUT`, `worker 0 < OUTPUT`.
    #[arg(long, value_name = "FILE")]
    pub exec_log: Option<PathBuf>,
    #[command(flatten)]
    pub sql: sql::SqlArgs,
}

/// `leasesim run`, from its arguments.
pub(super) fn run_cli(
    out: &mut dyn Write,
    a: RunCli,
    cat: &[Machines],
    scen: &[ScenarioDef],
    program: &str,
) -> Result<i32, UsageError> {
    let RunCli {
        scenario: name,
        seed,
        variant: v,
        trace,
        allow_unsafe_timing,
        save,
        journal,
        journal_dir,
        html,
        markdown,
        check_determinism,
        engine,
        format,
        exec_log,
        sql,
    } = a;
    if exec_log.is_some() {
        if !sql.any_exec() {
            return Err(UsageError(
                "--exec-log records a process's exchanges: name it with --worker, --receiver or --coordinator exec:COMMAND".into(),
            ));
        }
        leasesim_exec::record_exchanges();
    }
    let code = run_cmd(
        out,
        &name,
        seed,
        &pick_with(cat, v.as_deref(), &sql, "run")?,
        &RunOpts {
            outputs: Outputs {
                trace,
                journal,
                html,
                markdown,
                save,
            },
            journal_dir,
            check_determinism,
            allow_unsafe_timing,
            engine: engine_arg(&engine)?,
            format,
            program: program.to_string(),
        },
        scen,
    );
    if let Some(path) = exec_log {
        let mut text = leasesim_exec::take_exchanges().join("\n");
        text.push('\n');
        leasesim::files::write(&path, text)
            .map_err(|e| UsageError(format!("cannot write {}: {e}", path.display())))?;
    }
    code
}
