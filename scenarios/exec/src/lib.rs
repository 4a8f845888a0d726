//! Machines as processes: a worker, an effect receiver or a coordinator written in any
//! language, run by leasesim as a machine of its simulator, deterministically, each on its node's
//! own clock (docs/process-protocol.md).
//!
//! The process speaks leasesim's sans-IO machine contract over JSON lines: leasesim writes each
//! input (`start` with the node's configuration, `message`, `timer`, `reset` between runs), each
//! with the node's local `now`, and the process answers with its outputs (`send`, `timer`,
//! `journal`, `busy`, `durable`, `all_terminal`) and `{"output": "done"}`. One long-lived process
//! serves a node slot (worker 0, receiver 1, ...) on a thread, run after run; a crash of the node
//! kills it, and its restart starts a new one, given what the node wrote to its durable store.
//!
//! A process that cannot be started, exits, writes what is not the protocol, stays silent past
//! its time limit or floods its output ends the run as MACHINE ERROR naming the node and the
//! command ([`leasesim::run::fail_machine`]).
//!
//! ```no_run
//! use leasesim::Machines;
//! use leasesim_exec::{Exec, ExecMachines};
//!
//! let worker = Exec::new("python3 worker.py").unwrap();
//! let m = Machines::new("my-python-worker").with_exec_worker(&worker);
//! assert_eq!(m.parts().worker, worker.part_name());
//! ```

mod process;
pub mod wire;

pub use process::{processes_started, CommandLine, LINE_MAX, OUTPUTS_MAX, VERSION};

use leasesim::run::fail_machine;
use leasesim::Machines;
use leasesim_protocol::{CoordinatorMachine, Msg, Nanos, Output, ReceiverMachine, WorkerMachine};
use process::Process;
use serde_json::{json, Map, Value};
use std::cell::RefCell;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The prefix of a process's command on the command line and in part names.
pub const PART_PREFIX: &str = "exec:";

/// How long a process may take to answer one input unless told ([`Exec::with_timeout`]).
pub const TIMEOUT_DEFAULT: Duration = Duration::from_secs(10);

/// A user's process: its command line, the hash of the files it names, its time limit.
#[derive(Clone, Debug)]
pub struct Exec {
    cmd: CommandLine,
    hash: u64,
    timeout: Duration,
}

impl Exec {
    /// The process `command` runs (split at spaces; quotes group words; no shell). Each word
    /// that names a file (the program, its script) is hashed into the part's name, so a replay
    /// knows when the file changed.
    pub fn new(command: &str) -> Result<Exec, String> {
        let cmd = CommandLine::parse(command)?;
        if !runnable(&cmd.words[0]) {
            return Err(format!(
                "exec:{}: no program '{}' {}",
                cmd.text,
                cmd.words[0],
                match cmd.words[0].contains('/') {
                    true => "there",
                    false => "on the PATH",
                }
            ));
        }
        let mut named = Vec::new();
        for w in &cmd.words {
            let p = std::path::Path::new(w);
            if p.is_file() {
                let bytes = std::fs::read(p)
                    .map_err(|e| format!("exec:{}: cannot read {w}: {e}", cmd.text))?;
                named.push((w.clone(), bytes));
            }
        }
        Ok(Exec {
            hash: leasesim_sim::stable_hash(&named),
            cmd,
            timeout: TIMEOUT_DEFAULT,
        })
    }

    /// The same process, given `timeout` to answer each input.
    pub fn with_timeout(mut self, timeout: Duration) -> Exec {
        self.timeout = timeout;
        self
    }

    /// Its command line as given.
    pub fn command(&self) -> &str {
        &self.cmd.text
    }

    /// Its part name: `exec:COMMAND@HASH`, the hash over the files the command names.
    pub fn part_name(&self) -> String {
        format!("{PART_PREFIX}{}@{:016x}", self.cmd.text, self.hash)
    }
}

/// Whether `program` names a file (with a `/`) or a program on the PATH.
fn runnable(program: &str) -> bool {
    if program.contains('/') {
        return std::path::Path::new(program).is_file();
    }
    std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join(program).is_file()))
}

/// The exchanges recorded since [`record_exchanges`], if it was called.
static LOG: Mutex<Option<Vec<String>>> = Mutex::new(None);

/// The most lines [`record_exchanges`] keeps: a transcript for reading, not a sweep's worth.
pub const LOG_LINES_MAX: usize = 1 << 20;

/// Starts recording every line leasesim writes to a process and every line it reads back, as
/// `ROLE INDEX > INPUT` and `ROLE INDEX < OUTPUT` (for one run's transcript: `run --exec-log`).
pub fn record_exchanges() {
    *LOG.lock().unwrap_or_else(|p| p.into_inner()) = Some(Vec::new());
    RECORDING.store(true, Ordering::SeqCst);
}

/// The lines recorded since [`record_exchanges`], which stops recording.
pub fn take_exchanges() -> Vec<String> {
    RECORDING.store(false, Ordering::SeqCst);
    LOG.lock()
        .unwrap_or_else(|p| p.into_inner())
        .take()
        .unwrap_or_default()
}

/// Whether [`record_exchanges`] is on: without it, an exchange takes no lock of the log's.
static RECORDING: AtomicBool = AtomicBool::new(false);

fn log(role: &str, index: usize, dir: &str, v: &Value) {
    if !RECORDING.load(Ordering::Relaxed) {
        return;
    }
    let who = format!("{role} {index}");
    let mut log = LOG.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(lines) = log.as_mut() {
        if lines.len() < LOG_LINES_MAX {
            lines.push(format!("{who} {dir} {v}"));
        }
    }
}

/// A slot's process, and whether a run has used it since its last reset.
struct Held {
    process: Option<Process>,
    dirty: bool,
}

type Slot = Arc<Mutex<Held>>;

thread_local! {
    /// This thread's processes, by (part name, role and slot).
    static POOL: RefCell<Vec<(String, Slot)>> = const { RefCell::new(Vec::new()) };
}

/// The bound on a thread's processes: a run that needs more has more nodes than leasesim builds.
const POOL_MAX: usize = 256;

/// A free slot of this thread for `key` (one no live machine holds), or a new one.
fn slot(key: String) -> Slot {
    POOL.with(|pool| {
        let mut pool = pool.borrow_mut();
        if let Some((_, s)) = pool
            .iter()
            .find(|(k, s)| *k == key && Arc::strong_count(s) == 1)
        {
            return s.clone();
        }
        if pool.len() >= POOL_MAX {
            pool.retain(|(_, s)| Arc::strong_count(s) > 1);
        }
        let s = Arc::new(Mutex::new(Held {
            process: None,
            dirty: false,
        }));
        pool.push((key, s.clone()));
        s
    })
}

/// What the three roles share: the process, the inputs' framing, the outputs read back.
struct Core {
    exec: Arc<Exec>,
    role: &'static str,
    index: usize,
    slot: Slot,
    config: Value,
    started: bool,
    /// Whether this machine has taken its process over from an earlier run's.
    claimed: bool,
    /// Starts so far: a restart's requests are numbered apart from an earlier life's.
    starts: u64,
    out: VecDeque<Output>,
    timer: Option<Nanos>,
    busy: bool,
    all_terminal: bool,
    durable: Map<String, Value>,
    wall: Nanos,
}

impl Core {
    fn new(exec: &Arc<Exec>, role: &'static str, index: usize, config: Value) -> Core {
        Core {
            slot: slot(format!("{}#{role}{index}", exec.part_name())),
            exec: exec.clone(),
            role,
            index,
            config,
            started: false,
            claimed: false,
            starts: 0,
            out: VecDeque::new(),
            timer: None,
            busy: false,
            all_terminal: false,
            durable: Map::new(),
            wall: 0,
        }
    }

    /// Ends the run: the process is ended too, as its state is no longer known.
    fn fail(&self, held: &mut Held, why: String) -> ! {
        held.process = None;
        fail_machine(why)
    }

    /// Sends `input` (starting the process, resetting it after an earlier run, and starting
    /// the node first where needed) and takes in its outputs.
    fn input(&mut self, now: Nanos, mut input: Value) {
        let slot = self.slot.clone();
        let mut held = slot.lock().unwrap_or_else(|p| p.into_inner());
        if held.process.is_none() {
            match Process::start(&self.exec.cmd, self.exec.timeout) {
                Ok(p) => {
                    let (role, i) = (self.role, self.index);
                    log(role, i, ">", &process::hello());
                    log(
                        role,
                        i,
                        "<",
                        &json!({"output": "hello", "version": VERSION}),
                    );
                    log(role, i, "<", &json!({"output": "done"}));
                    held.process = Some(p);
                }
                Err(why) => self.fail(&mut held, why),
            }
            held.dirty = false;
        }
        if !self.claimed {
            // The process served an earlier run on this thread: it forgets it first.
            if held.dirty {
                self.exchange(&mut held, &json!({"input": "reset"}));
            }
            self.claimed = true;
        }
        // Whatever process serves the slot now (a restart's new one too) has served a run.
        held.dirty = true;
        if !self.started {
            self.started = true;
            let start = json!({
                "input": "start",
                "role": self.role,
                "now": now,
                "wall": self.wall,
                "config": self.config,
                "durable": self.durable,
                "incarnation": self.starts,
            });
            self.starts += 1;
            self.take(&mut held, start);
            if input.is_null() {
                return;
            }
        }
        input["now"] = json!(now);
        if self.role == "worker" {
            input["wall"] = json!(self.wall);
        }
        self.take(&mut held, input);
    }

    fn exchange(&self, held: &mut Held, input: &Value) -> Vec<Value> {
        let (role, i) = (self.role, self.index);
        log(role, i, ">", input);
        let p = held.process.as_mut().expect("started above");
        match p.exchange(input, self.exec.timeout) {
            Ok(out) => {
                for v in &out {
                    log(role, i, "<", v);
                }
                log(role, i, "<", &json!({"output": "done"}));
                out
            }
            Err(why) => self.fail(held, why),
        }
    }

    fn take(&mut self, held: &mut Held, input: Value) {
        for v in self.exchange(held, &input) {
            if let Err(e) = self.output(&v) {
                let p = held.process.as_ref().expect("it answered");
                let why = p.failure(&format!("{e}: {}", clip(&v.to_string())));
                self.fail(held, why);
            }
        }
    }

    fn output(&mut self, v: &Value) -> Result<(), String> {
        match v["output"].as_str() {
            Some("send") => {
                let to = wire::peer(&v["to"]).map_err(|e| format!("a send's 'to' ({e})"))?;
                let msg: Msg = wire::msg(&v["msg"]).map_err(|e| format!("a send's 'msg' ({e})"))?;
                self.out.push_back(Output::Send { to, msg });
            }
            Some("journal") => {
                let e = wire::event(&v["event"]).map_err(|e| format!("a journal 'event' ({e})"))?;
                self.out.push_back(Output::Journal(e));
            }
            Some("timer") if self.role == "receiver" => {
                return Err("a timer, which a receiver has not (it answers requests only)".into())
            }
            Some("timer") => {
                self.timer = match &v["at"] {
                    Value::Null => None,
                    at => Some(at.as_u64().ok_or("a timer's 'at' is not a time in ns")?),
                };
            }
            Some("busy") if self.role == "worker" => {
                self.busy = v["busy"].as_bool().ok_or("'busy' is not true or false")?;
            }
            Some("all_terminal") if self.role == "coordinator" => {
                self.all_terminal = v["value"].as_bool().ok_or("'value' is not true or false")?;
            }
            Some("durable") if self.role == "worker" => {
                let key = v["key"]
                    .as_str()
                    .ok_or("a durable write's 'key' is not a string")?;
                match &v["value"] {
                    Value::Null => self.durable.remove(key),
                    value => self.durable.insert(key.to_string(), value.clone()),
                };
            }
            Some(other) => return Err(format!("an output '{other}' that a {} has not", self.role)),
            None => return Err("a line without 'output'".into()),
        }
        Ok(())
    }

    /// A crash: the process dies with everything it held; what it wrote to its durable store
    /// is given to the next start.
    fn crash(&mut self) {
        self.slot.lock().unwrap_or_else(|p| p.into_inner()).process = None;
        self.started = false;
        self.out.clear();
        self.timer = None;
        self.busy = false;
    }
}

fn clip(s: &str) -> String {
    s.chars().take(200).collect()
}

/// A worker node's process as a sans-IO worker machine.
pub struct ExecWorker(Core);

impl WorkerMachine for ExecWorker {
    fn start(&mut self, now: Nanos) {
        self.0.started = false;
        self.0.input(now, Value::Null);
    }
    fn crash(&mut self) {
        self.0.crash();
    }
    fn handle_message(&mut self, now: Nanos, msg: Msg) {
        self.0
            .input(now, json!({"input": "message", "msg": wire::to_wire(&msg)}));
    }
    fn handle_timeout(&mut self, now: Nanos) {
        self.0.input(now, json!({"input": "timer"}));
    }
    fn poll_output(&mut self) -> Option<Output> {
        self.0.out.pop_front()
    }
    fn poll_timeout(&self) -> Option<Nanos> {
        self.0.timer
    }
    fn is_busy(&self) -> bool {
        self.0.busy
    }
    fn observe_wall(&mut self, wall: Nanos) {
        self.0.wall = wall;
    }
}

/// A receiver node's process as a sans-IO receiver machine.
pub struct ExecReceiver(Core);

impl ReceiverMachine for ExecReceiver {
    fn handle_message(&mut self, now: Nanos, from: u32, msg: Msg) {
        let input = json!({"input": "message", "from": from, "msg": wire::to_wire(&msg)});
        self.0.input(now, input);
    }
    fn poll_output(&mut self) -> Option<Output> {
        self.0.out.pop_front()
    }
}

/// The coordinator's process as a sans-IO coordinator machine.
pub struct ExecCoordinator(Core);

impl CoordinatorMachine for ExecCoordinator {
    fn handle_message(&mut self, now: Nanos, from: u32, msg: Msg) {
        let input = json!({"input": "message", "from": from, "msg": wire::to_wire(&msg)});
        self.0.input(now, input);
    }
    fn poll_output(&mut self) -> Option<Output> {
        self.0.out.pop_front()
    }
    fn all_terminal(&self) -> bool {
        self.0.all_terminal
    }
    fn poll_timeout(&self) -> Option<Nanos> {
        self.0.timer
    }
    fn handle_timeout(&mut self, now: Nanos) {
        self.0.input(now, json!({"input": "timer"}));
    }
}

/// [`Machines`] that take processes.
pub trait ExecMachines {
    /// The same machines with every worker node run by `exec`'s process.
    fn with_exec_worker(self, exec: &Exec) -> Machines;
    /// The same machines with every receiver node run by `exec`'s process.
    fn with_exec_receiver(self, exec: &Exec) -> Machines;
    /// The same machines with the coordinator run by `exec`'s process.
    fn with_exec_coordinator(self, exec: &Exec) -> Machines;
}

impl ExecMachines for Machines {
    fn with_exec_worker(self, exec: &Exec) -> Machines {
        let e = Arc::new(exec.clone());
        self.with_worker(&exec.part_name(), move |spec| {
            let mut config = wire::to_wire(spec.config);
            config["index"] = json!(spec.index);
            ExecWorker(Core::new(&e, "worker", spec.index, config))
        })
    }

    fn with_exec_receiver(self, exec: &Exec) -> Machines {
        let e = Arc::new(exec.clone());
        self.with_receiver(&exec.part_name(), move |spec| {
            let config = json!({
                "index": spec.index,
                "supports_fence": spec.supports_fence,
                "supports_status": spec.supports_status,
                "refused_ops": wire::to_wire(&spec.refused_ops),
            });
            ExecReceiver(Core::new(&e, "receiver", spec.index.into(), config))
        })
    }

    fn with_exec_coordinator(self, exec: &Exec) -> Machines {
        let e = Arc::new(exec.clone());
        self.with_coordinator(&exec.part_name(), move |spec| {
            let config = json!({
                "classes": wire::to_wire(&spec.classes),
                "jobs": wire::to_wire(&spec.jobs),
                "seed": spec.seed,
            });
            ExecCoordinator(Core::new(&e, "coordinator", 0, config))
        })
    }
}

/// What one input costs a process of `command`, in seconds: it is started and started as a
/// worker node, then given `inputs` timer inputs one after the other, and the mean time from
/// writing an input to reading its `done` is returned (the cost of the pipe and of the process's
/// own framing; `examples/round_trip.rs` prints it).
pub fn round_trip_seconds(command: &str, config: Value, inputs: u64) -> Result<f64, String> {
    let exec = Exec::new(command)?;
    let mut p = Process::start(&exec.cmd, exec.timeout)?;
    let start = json!({"input": "start", "role": "worker", "now": 0, "wall": 0, "config": config, "durable": {}, "incarnation": 0});
    p.exchange(&start, exec.timeout)?;
    #[allow(clippy::disallowed_methods)] // the benchmark's own duration
    let began = std::time::Instant::now();
    for i in 0..inputs {
        p.exchange(
            &json!({"input": "timer", "now": i + 1, "wall": 0}),
            exec.timeout,
        )?;
    }
    Ok(began.elapsed().as_secs_f64() / inputs.max(1) as f64)
}
