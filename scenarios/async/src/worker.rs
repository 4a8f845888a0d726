//! The async worker: a start function and its tasks, driven as a sans-IO worker machine.

use leasesim_protocol::{
    ClassId, EffectOutcome, EntityId, Event, IdemKey, JobId, Msg, Nanos, Outcome, Output, Peer,
    Token, ToolAnswer, WorkerConfig, WorkerMachine, WorkerName,
};
use leasesim_tokio::sync::{oneshot, Notify};
use leasesim_tokio::time::Instant;
use leasesim_tokio::Executor;
use std::collections::{BTreeMap, VecDeque};
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};

/// How many messages that no request waits for (a late or duplicated reply) a worker keeps
/// for [`WorkerIo::unsolicited`]; past it the oldest is dropped, as a full socket buffer
/// would.
pub const REPLIES_KEPT_MAX: usize = 64;

/// How many entries a worker's durable store ([`WorkerIo::durable_put`]) holds at most.
pub const DURABLE_ENTRIES_MAX: usize = 1024;

/// How many bytes (keys and values) a worker's durable store holds at most: a worker that
/// writes past it is a fault of the machine, as a disk that fills would be.
pub const DURABLE_BYTES_MAX: usize = 1 << 20;

type StartFn = dyn Fn(WorkerIo) -> Pin<Box<dyn Future<Output = ()> + Send>> + Send + Sync;

/// A worker's start function, shared by every node and run it is built for.
#[derive(Clone)]
pub(crate) struct Start(Arc<StartFn>);

impl Start {
    pub(crate) fn new<F, Fut>(f: F) -> Start
    where
        F: Fn(WorkerIo) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        Start(Arc::new(move |io| Box::pin(f(io))))
    }
}

/// What the host and the worker's tasks share.
struct Io {
    out: VecDeque<Output>,
    /// Requests waiting for their reply, by request id.
    waiting: BTreeMap<u64, oneshot::Sender<Msg>>,
    /// Messages no request waited for, oldest first.
    unsolicited: VecDeque<Msg>,
    /// Request ids are the host's and never start over, not even at a restart: a reply from
    /// before a crash never answers a request made after it.
    next_req: u64,
    busy: bool,
    /// The tool call a task waits for.
    tool_call: Option<u64>,
    wall: Nanos,
    /// What the node keeps across crashes (its local disk), and its size in bytes.
    durable: BTreeMap<String, Vec<u8>>,
    durable_bytes: usize,
}

/// A worker node's way to the world, given to its start function. Cheap to clone: every task
/// of the node may hold one.
#[derive(Clone)]
pub struct WorkerIo {
    io: Arc<Mutex<Io>>,
    arrived: Arc<Notify>,
    config: Arc<WorkerConfig>,
}

/// A lease the coordinator granted.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Grant {
    /// The job.
    pub job: JobId,
    /// Its fencing token.
    pub token: Token,
    /// The lease's length, from the coordinator's answer.
    pub lease_ns: Nanos,
    /// The job's class (its plan in [`WorkerConfig::plans`]).
    pub class: ClassId,
    /// The last stage saved by an earlier holder, if any.
    pub checkpoint: Option<u8>,
}

/// The coordinator's answer to a claim.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum ClaimReply {
    /// A job, leased to this worker.
    Granted(Grant),
    /// No job to give.
    Empty,
}

/// Removes a request's waiting entry when its future is dropped before the reply (a timeout,
/// a `select!` that took another branch): a reply that comes later is unsolicited.
struct Waiting<'a> {
    io: &'a WorkerIo,
    req: u64,
    tool: bool,
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        let mut io = self.io.lock();
        io.waiting.remove(&self.req);
        if self.tool && io.tool_call == Some(self.req) {
            io.tool_call = None;
        }
    }
}

impl WorkerIo {
    fn new(config: WorkerConfig) -> WorkerIo {
        WorkerIo {
            io: Arc::new(Mutex::new(Io {
                out: VecDeque::new(),
                waiting: BTreeMap::new(),
                unsolicited: VecDeque::new(),
                next_req: 1,
                busy: false,
                tool_call: None,
                wall: 0,
                durable: BTreeMap::new(),
                durable_bytes: 0,
            })),
            arrived: Arc::new(Notify::new()),
            config: Arc::new(config),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Io> {
        self.io.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The worker's configuration: its logical name, its timing, the plan of each job class.
    pub fn config(&self) -> &WorkerConfig {
        &self.config
    }

    /// Its logical name.
    pub fn name(&self) -> WorkerName {
        self.config.name
    }

    /// The node's local clock in nanoseconds (as `Instant::now()` reads it).
    pub fn now(&self) -> Nanos {
        Instant::now().as_nanos()
    }

    /// The node's wall clock as last told by the host (for a worker that stamps requests with
    /// it; the protocol's judgement never rests on it).
    pub fn wall(&self) -> Nanos {
        self.lock().wall
    }

    /// Sends the message `make` builds from a fresh request id, and waits for the first
    /// message that carries that id back. A reply that never comes (the network dropped the
    /// request or its answer) is waited for forever: bound the wait with `timeout` or
    /// `select!`, as a real client must.
    pub async fn request(&self, to: Peer, make: impl FnOnce(u64) -> Msg) -> Msg {
        let (tx, rx) = oneshot::channel();
        let (req, tool) = {
            let mut io = self.lock();
            let req = io.next_req;
            io.next_req += 1;
            let msg = make(req);
            let tool = matches!(msg, Msg::ToolRequest { .. });
            if tool {
                io.tool_call = Some(req);
            }
            io.waiting.insert(req, tx);
            io.out.push_back(Output::Send { to, msg });
            (req, tool)
        };
        let _waiting = Waiting {
            io: self,
            req,
            tool,
        };
        match rx.await {
            Ok(msg) => msg,
            // The sender is dropped only with the node's volatile state (a crash), which
            // drops this task too: never seen by a task that runs on.
            Err(_) => std::future::pending().await,
        }
    }

    /// Sends the message `make` builds from a fresh request id, without waiting for a reply;
    /// returns the id.
    pub fn send(&self, to: Peer, make: impl FnOnce(u64) -> Msg) -> u64 {
        let mut io = self.lock();
        let req = io.next_req;
        io.next_req += 1;
        let msg = make(req);
        io.out.push_back(Output::Send { to, msg });
        req
    }

    /// The next message that no request waited for: a reply that came after its request gave
    /// up, a duplicate, a message from an operator.
    pub async fn unsolicited(&self) -> Msg {
        loop {
            if let Some(m) = self.lock().unsolicited.pop_front() {
                return m;
            }
            self.arrived.notified().await;
        }
    }

    /// Writes a journal event (what only the worker knows: its belief about its lease,
    /// jeopardy, a refused commit). The checkers judge what it sends either way.
    pub fn journal(&self, event: Event) {
        self.lock().out.push_back(Output::Journal(event));
    }

    /// Reads `key` from the node's durable store: what it wrote there before, in this
    /// incarnation or an earlier one (a crash loses every task and channel, never this).
    pub fn durable_get(&self, key: &str) -> Option<Vec<u8>> {
        self.lock().durable.get(key).cloned()
    }

    /// Writes `key` to the node's durable store, at once and whole (a crash right after it
    /// keeps it). More than [`DURABLE_ENTRIES_MAX`] entries or [`DURABLE_BYTES_MAX`] bytes end
    /// the run as MACHINE ERROR naming the worker.
    pub fn durable_put(&self, key: &str, value: &[u8]) {
        let name = self.name();
        let mut io = self.lock();
        let old = io.durable.get(key).map_or(0, |v| key.len() + v.len());
        let bytes = io.durable_bytes - old + key.len() + value.len();
        let entries = io.durable.len() + usize::from(!io.durable.contains_key(key));
        if bytes > DURABLE_BYTES_MAX || entries > DURABLE_ENTRIES_MAX {
            drop(io);
            panic!(
                "async worker {name}: its durable store would hold {entries} entries and {bytes} bytes, past its bound of {DURABLE_ENTRIES_MAX} and {DURABLE_BYTES_MAX}"
            );
        }
        io.durable_bytes = bytes;
        io.durable.insert(key.to_string(), value.to_vec());
    }

    /// Removes `key` from the node's durable store.
    pub fn durable_remove(&self, key: &str) {
        let mut io = self.lock();
        if let Some(v) = io.durable.remove(key) {
            io.durable_bytes -= key.len() + v.len();
        }
    }

    /// Says whether it holds (or believes it holds) a job: a run ends only when no worker is
    /// busy and every job is terminal.
    pub fn set_busy(&self, busy: bool) {
        self.lock().busy = busy;
    }

    /// Asks the coordinator for a job.
    pub async fn claim(&self) -> ClaimReply {
        let worker = self.name();
        let client_now = self.now();
        let reply = self
            .request(Peer::Coordinator, |req| Msg::Claim {
                req,
                worker,
                client_now,
            })
            .await;
        match reply {
            Msg::ClaimGranted {
                job,
                token,
                lease_ns,
                class,
                checkpoint,
                ..
            } => ClaimReply::Granted(Grant {
                job,
                token,
                lease_ns,
                class,
                checkpoint,
            }),
            _ => ClaimReply::Empty,
        }
    }

    /// Renews a lease: `Some(lease_ns)` when the coordinator renewed it, `None` when it
    /// refused (the lease is lost).
    pub async fn heartbeat(
        &self,
        job: JobId,
        token: Token,
        in_jeopardy: bool,
        effects_attempted: u16,
    ) -> Option<Nanos> {
        let worker = self.name();
        let client_now = self.now();
        let reply = self
            .request(Peer::Coordinator, |req| Msg::Heartbeat {
                req,
                job,
                worker,
                token,
                client_now,
                in_jeopardy,
                effects_attempted,
            })
            .await;
        match reply {
            Msg::HeartbeatOk { lease_ns, .. } => Some(lease_ns),
            _ => None,
        }
    }

    /// Asks the coordinator to accept an outcome under `token`: whether it did.
    pub async fn commit(&self, job: JobId, token: Token, outcome: Outcome) -> bool {
        let worker = self.name();
        let client_now = self.now();
        let reply = self
            .request(Peer::Coordinator, |req| Msg::Commit {
                req,
                job,
                worker,
                token,
                outcome,
                client_now,
            })
            .await;
        matches!(reply, Msg::CommitAccepted { .. })
    }

    /// Saves the end of stage `step` on the coordinator under `token`: whether it was saved.
    pub async fn checkpoint(&self, job: JobId, token: Token, step: u8) -> bool {
        let worker = self.name();
        let reply = self
            .request(Peer::Coordinator, |req| Msg::Checkpoint {
                req,
                job,
                worker,
                token,
                step,
            })
            .await;
        matches!(reply, Msg::CheckpointAck { saved: true, .. })
    }

    /// Calls the tool for step `step` of the job: its answer.
    pub async fn tool(&self, job: JobId, token: Token, step: u8) -> ToolAnswer {
        let reply = self
            .request(Peer::Tool, |req| Msg::ToolRequest {
                req,
                job,
                token,
                step,
            })
            .await;
        match reply {
            Msg::ToolResponse { answer, .. } => answer,
            other => wrong_answer(self.name(), "a tool request", &other),
        }
    }

    /// Asks receiver `receiver` to apply an effect on `entity` under the idempotency key `key`
    /// and the fence `fence`: its answer.
    pub async fn effect(
        &self,
        receiver: u8,
        job: JobId,
        entity: EntityId,
        key: IdemKey,
        fence: Token,
    ) -> EffectOutcome {
        let reply = self
            .request(Peer::Receiver(receiver), |req| Msg::Effect {
                req,
                job,
                entity,
                key,
                fence,
            })
            .await;
        match reply {
            Msg::EffectAck { outcome, .. } => outcome,
            other => wrong_answer(self.name(), "an effect", &other),
        }
    }

    /// Hands a message to the request that waits for it, or keeps it as unsolicited.
    fn deliver(&self, msg: Msg) {
        let mut io = self.lock();
        let msg = match io.waiting.remove(&msg.req()) {
            Some(tx) => match tx.send(msg) {
                Ok(()) => return,
                Err(msg) => msg,
            },
            None => msg,
        };
        keep(&mut io, msg);
        drop(io);
        self.arrived.notify_one();
    }

    /// Forgets the volatile state (a crash, or a start): what was to be sent, what was waited
    /// for, what was held.
    fn forget(&self) {
        let dropped = {
            let mut io = self.lock();
            io.out.clear();
            io.unsolicited.clear();
            io.busy = false;
            io.tool_call = None;
            std::mem::take(&mut io.waiting)
        };
        drop(dropped);
    }
}

/// A peer answered a request with a message of another kind: the peer broke the protocol, and
/// the run ends as MACHINE ERROR (the worker cannot go on as if it had an answer).
fn wrong_answer(worker: WorkerName, what: &str, reply: &Msg) -> ! {
    panic!(
        "async worker {worker}: {what} was answered with {:?}",
        reply.kind()
    )
}

fn keep(io: &mut Io, msg: Msg) {
    if io.unsolicited.len() >= REPLIES_KEPT_MAX {
        io.unsolicited.pop_front();
    }
    io.unsolicited.push_back(msg);
}

/// An async worker as a sans-IO worker machine (see the crate's documentation).
pub struct AsyncWorker {
    executor: Executor,
    io: WorkerIo,
    start: Start,
}

impl AsyncWorker {
    /// A worker node of `config` whose tasks begin with `start` at every start and restart.
    pub fn new<F, Fut>(config: WorkerConfig, start: F) -> AsyncWorker
    where
        F: Fn(WorkerIo) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        AsyncWorker::with_start(config, Start::new(start))
    }

    pub(crate) fn with_start(config: WorkerConfig, start: Start) -> AsyncWorker {
        AsyncWorker {
            executor: Executor::new(),
            io: WorkerIo::new(config),
            start,
        }
    }

    /// Runs the node's tasks at `now`; tasks that do not settle are a fault of the machine,
    /// which ends the run as MACHINE ERROR naming the node.
    fn advance(&mut self, now: Nanos) {
        if let Err(why) = self.executor.advance(now) {
            panic!("async worker {}: {why}", self.io.name());
        }
    }
}

impl WorkerMachine for AsyncWorker {
    fn start(&mut self, now: Nanos) {
        self.executor.clear();
        self.io.forget();
        self.executor.spawn((self.start.0)(self.io.clone()));
        self.advance(now);
    }

    fn crash(&mut self) {
        self.executor.clear();
        self.io.forget();
    }

    fn handle_message(&mut self, now: Nanos, msg: Msg) {
        self.io.deliver(msg);
        self.advance(now);
    }

    fn handle_timeout(&mut self, now: Nanos) {
        self.advance(now);
    }

    fn poll_output(&mut self) -> Option<Output> {
        self.io.lock().out.pop_front()
    }

    fn poll_timeout(&self) -> Option<Nanos> {
        self.executor.next_deadline()
    }

    fn is_busy(&self) -> bool {
        self.io.lock().busy
    }

    fn observe_wall(&mut self, wall: Nanos) {
        self.io.lock().wall = wall;
    }

    fn tool_in_flight(&self) -> Option<u64> {
        self.io.lock().tool_call
    }
}
