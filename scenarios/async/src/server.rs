//! Async servers: a coordinator or an effect receiver written as async tasks that read their
//! requests from an inbox and answer them, run as sans-IO machines.
//!
//! Their stores are durable, as the machine contract says of these roles: a crash of their
//! node is an outage (no message in or out), never a loss of their tasks. They have no start of
//! their own: their start function is first polled at their first input. A receiver has no
//! timers in leasesim's model (its trait has no wake-up), so a receiver's task that sleeps waits
//! for its next message; a coordinator's timers wake it.

use leasesim_protocol::{
    ClassSpec, CoordinatorMachine, Event, JobSpec, Msg, Nanos, OpId, Output, Peer, ReceiverMachine,
};
use leasesim_tokio::sync::Notify;
use leasesim_tokio::time::Instant;
use leasesim_tokio::Executor;
use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};

/// How many requests a server may leave unread: past it, its node has stopped serving and the
/// run ends as MACHINE ERROR naming it.
pub const INBOX_MAX: usize = 4_096;

struct State {
    out: VecDeque<Output>,
    inbox: VecDeque<(u32, Msg)>,
    all_terminal: bool,
}

/// A server node's way to the world: its requests, its answers, its journal.
#[derive(Clone)]
pub struct ServerIo {
    state: Arc<Mutex<State>>,
    arrived: Arc<Notify>,
}

impl ServerIo {
    fn new() -> ServerIo {
        ServerIo {
            state: Arc::new(Mutex::new(State {
                out: VecDeque::new(),
                inbox: VecDeque::new(),
                all_terminal: false,
            })),
            arrived: Arc::new(Notify::new()),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The next request, with the host address it came from (answer it there).
    pub async fn recv(&self) -> (u32, Msg) {
        loop {
            if let Some(r) = self.lock().inbox.pop_front() {
                return r;
            }
            self.arrived.notified().await;
        }
    }

    /// Answers the node at host address `to` (the `from` of its request).
    pub fn reply(&self, to: u32, msg: Msg) {
        self.send(Peer::Addr(to), msg);
    }

    /// Sends `msg` to `to`.
    pub fn send(&self, to: Peer, msg: Msg) {
        self.lock().out.push_back(Output::Send { to, msg });
    }

    /// Writes a journal event.
    pub fn journal(&self, event: Event) {
        self.lock().out.push_back(Output::Journal(event));
    }

    /// The node's local clock in nanoseconds.
    pub fn now(&self) -> Nanos {
        Instant::now().as_nanos()
    }

    /// A coordinator says whether every job is terminal (part of the run's goal).
    pub fn set_all_terminal(&self, all: bool) {
        self.lock().all_terminal = all;
    }

    fn deliver(&self, from: u32, msg: Msg) -> Result<(), String> {
        let mut st = self.lock();
        if st.inbox.len() >= INBOX_MAX {
            return Err(format!("it left more than {INBOX_MAX} requests unread"));
        }
        st.inbox.push_back((from, msg));
        drop(st);
        self.arrived.notify_one();
        Ok(())
    }
}

/// What an async coordinator is built from (leasesim's `CoordinatorSpec`, owned).
#[derive(Clone, Debug)]
pub struct CoordinatorSetup {
    /// Job classes, with their lease lengths, attempt limits, capacities and caps.
    pub classes: Vec<ClassSpec>,
    /// The jobs, in id order.
    pub jobs: Vec<JobSpec>,
    /// A number drawn from the run's seed, for choices of its own.
    pub seed: u64,
}

/// What an async receiver is built from (leasesim's `ReceiverSpec`, owned).
#[derive(Clone, Debug)]
pub struct ReceiverSetup {
    /// Its index among receivers (`Peer::Receiver(index)` reaches it).
    pub index: u8,
    /// Whether it checks fences (P9).
    pub supports_fence: bool,
    /// Whether it answers status queries (P12 c).
    pub supports_status: bool,
    /// Operations its policy refuses (P16).
    pub refused_ops: Vec<OpId>,
}

type Task = Pin<Box<dyn Future<Output = ()> + Send>>;

/// A server's start function with what it is built from.
pub(crate) type StartServer<S> = Arc<dyn Fn(ServerIo, Arc<S>) -> Task + Send + Sync>;

pub(crate) fn start_server<S, F, Fut>(f: F) -> StartServer<S>
where
    F: Fn(ServerIo, Arc<S>) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    Arc::new(move |io, setup| Box::pin(f(io, setup)))
}

/// One server node: its executor and its way out.
struct Server {
    executor: Executor,
    io: ServerIo,
    role: &'static str,
}

impl Server {
    fn new<S>(role: &'static str, start: &StartServer<S>, setup: S) -> Server {
        let io = ServerIo::new();
        let executor = Executor::new();
        executor.spawn(start(io.clone(), Arc::new(setup)));
        Server { executor, io, role }
    }

    fn advance(&mut self, now: Nanos) {
        if let Err(why) = self.executor.advance(now) {
            panic!("async {}: {why}", self.role);
        }
    }

    fn message(&mut self, now: Nanos, from: u32, msg: Msg) {
        if let Err(why) = self.io.deliver(from, msg) {
            panic!("async {}: {why}", self.role);
        }
        self.advance(now);
    }

    fn poll_output(&mut self) -> Option<Output> {
        self.io.lock().out.pop_front()
    }
}

/// An async coordinator as a sans-IO coordinator machine.
pub struct AsyncCoordinator(Server);

impl AsyncCoordinator {
    pub(crate) fn new(start: &StartServer<CoordinatorSetup>, setup: CoordinatorSetup) -> Self {
        AsyncCoordinator(Server::new("coordinator", start, setup))
    }
}

impl CoordinatorMachine for AsyncCoordinator {
    fn handle_message(&mut self, now: Nanos, from: u32, msg: Msg) {
        self.0.message(now, from, msg);
    }
    fn poll_output(&mut self) -> Option<Output> {
        self.0.poll_output()
    }
    fn all_terminal(&self) -> bool {
        self.0.io.lock().all_terminal
    }
    fn poll_timeout(&self) -> Option<Nanos> {
        self.0.executor.next_deadline()
    }
    fn handle_timeout(&mut self, now: Nanos) {
        self.0.advance(now);
    }
}

/// An async effect receiver as a sans-IO receiver machine.
pub struct AsyncReceiver(Server);

impl AsyncReceiver {
    pub(crate) fn new(start: &StartServer<ReceiverSetup>, setup: ReceiverSetup) -> Self {
        AsyncReceiver(Server::new("receiver", start, setup))
    }
}

impl ReceiverMachine for AsyncReceiver {
    fn handle_message(&mut self, now: Nanos, from: u32, msg: Msg) {
        self.0.message(now, from, msg);
    }
    fn poll_output(&mut self) -> Option<Output> {
        self.0.poll_output()
    }
}
