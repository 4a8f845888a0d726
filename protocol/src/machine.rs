//! The machine traits: how a host (the simulator's adapter, the async shell, a user's own
//! harness) drives a coordinator, a worker or an effect receiver. The reference machines of this
//! crate implement them, and so can a user's own (issue: "Test your own implementation").
//!
//! The contract, for every trait (sans-IO, in the style of quinn-proto's `Connection`):
//! - every input carries the node's own `now` (its local clock, nanoseconds); a machine reads no
//!   clock, draws no random number, spawns no thread and does no I/O;
//! - after every input the host drains [`Output`]s with `poll_output` until it returns `None`,
//!   then reads `poll_timeout` and calls `handle_timeout` when that time comes (a spurious or
//!   early call must be harmless);
//! - `from` is the host address of the sender; a reply is sent to [`crate::Peer::Addr`] of it.

use crate::{Coordinator, Msg, Nanos, Output, Receiver, Worker};

/// A coordinator implementation as the adapter sees it.
pub trait CoordinatorMachine: Send {
    /// Handles a request from host address `from`.
    fn handle_message(&mut self, now: Nanos, from: u32, msg: Msg);
    /// The next output.
    fn poll_output(&mut self) -> Option<Output>;
    /// Whether every job is terminal (the run's goal).
    fn all_terminal(&self) -> bool;
    /// The next wake-up, if the coordinator has timers at all.
    fn poll_timeout(&self) -> Option<Nanos> {
        None
    }
    /// Handles due timers.
    fn handle_timeout(&mut self, _now: Nanos) {}
}

impl CoordinatorMachine for Coordinator {
    fn handle_message(&mut self, now: Nanos, from: u32, msg: Msg) {
        Coordinator::handle_message(self, now, from, msg)
    }
    fn poll_output(&mut self) -> Option<Output> {
        Coordinator::poll_output(self)
    }
    fn all_terminal(&self) -> bool {
        Coordinator::all_terminal(self)
    }
    fn poll_timeout(&self) -> Option<Nanos> {
        Coordinator::poll_timeout(self)
    }
    fn handle_timeout(&mut self, now: Nanos) {
        Coordinator::handle_timeout(self, now)
    }
}

/// A worker implementation as the adapter sees it.
pub trait WorkerMachine: Send {
    /// Starts or restarts the process.
    fn start(&mut self, now: Nanos);
    /// Loses volatile state.
    fn crash(&mut self);
    /// Handles a reply.
    fn handle_message(&mut self, now: Nanos, msg: Msg);
    /// Handles due timers.
    fn handle_timeout(&mut self, now: Nanos);
    /// The next output.
    fn poll_output(&mut self) -> Option<Output>;
    /// The next wake-up.
    fn poll_timeout(&self) -> Option<Nanos>;
    /// Whether it holds (or believes it holds) a job right now.
    fn is_busy(&self) -> bool;
    /// The wall clock's reading, told before each input.
    fn observe_wall(&mut self, _wall: Nanos) {}
    /// The tool call it waits for, if any (an async shell cancels its call when this changes).
    fn tool_in_flight(&self) -> Option<u64> {
        None
    }
}

impl WorkerMachine for Worker {
    fn start(&mut self, now: Nanos) {
        Worker::start(self, now)
    }
    fn crash(&mut self) {
        Worker::crash(self)
    }
    fn handle_message(&mut self, now: Nanos, msg: Msg) {
        Worker::handle_message(self, now, msg)
    }
    fn handle_timeout(&mut self, now: Nanos) {
        Worker::handle_timeout(self, now)
    }
    fn poll_output(&mut self) -> Option<Output> {
        Worker::poll_output(self)
    }
    fn poll_timeout(&self) -> Option<Nanos> {
        Worker::poll_timeout(self)
    }
    fn is_busy(&self) -> bool {
        self.holding().is_some()
    }
    fn observe_wall(&mut self, wall: Nanos) {
        Worker::observe_wall(self, wall)
    }
    fn tool_in_flight(&self) -> Option<u64> {
        Worker::tool_in_flight(self)
    }
}

/// An effect receiver implementation as the adapter sees it.
pub trait ReceiverMachine: Send {
    /// Handles an effect from host address `from`.
    fn handle_message(&mut self, now: Nanos, from: u32, msg: Msg);
    /// The next output.
    fn poll_output(&mut self) -> Option<Output>;
}

impl ReceiverMachine for Receiver {
    fn handle_message(&mut self, now: Nanos, from: u32, msg: Msg) {
        Receiver::handle_message(self, now, from, msg)
    }
    fn poll_output(&mut self) -> Option<Output> {
        Receiver::poll_output(self)
    }
}
