//! The machine traits: how a host (leasesim's simulator, its async shell, a user's own harness)
//! drives a coordinator, a worker or an effect receiver. The reference machines of this crate
//! implement them, and so can a user's own: leasesim then runs, sweeps, replays, shrinks and
//! judges the user's machines exactly as it does its own (`leasesim::Machines`).
//!
//! # The contract
//!
//! **Sans-IO.** A machine reads no clock, draws no random number, spawns no thread, does no
//! I/O and iterates no hash-ordered collection: every input carries the node's own `now` (its
//! local monotonic clock in nanoseconds, which drifts and may jump; only the coordinator's clock
//! is the arbiter of lease time), and the same inputs must give the same outputs. That is what
//! makes a run a pure function of its seed, so that a failing seed reproduces.
//!
//! **Call order.** The host calls one input method (`start`, `handle_message`,
//! `handle_timeout`), then drains [`Output`]s with `poll_output` until it returns `None` (at
//! most 4,096 per input: a machine that never drains ends the run with a process fault naming
//! it), then reads `poll_timeout` and calls `handle_timeout` when its local clock reaches that
//! time. A spurious or early `handle_timeout` must do nothing. Nothing is sent or journaled
//! except through `poll_output`.
//!
//! **Addresses.** `from` is the host address (node id) of the sender. A server (coordinator,
//! receiver) answers with [`crate::Peer::Addr`]`(from)`: it has no other way to name a worker, and two
//! processes may share one logical worker name after a restart. A worker names its peers by
//! role ([`crate::Peer::Coordinator`], [`crate::Peer::Tool`], [`crate::Peer::Receiver`]`(i)` for `i` below the
//! number of receivers). Addressing a node or receiver that does not exist ends the run with a
//! process fault naming the machine, never a panic.
//!
//! **Crashes and restarts.** A worker's `crash` loses its volatile state; `start` is called
//! again when it restarts under the same logical name. A coordinator's table and a receiver's
//! store are durable: their crashes are outages (no messages in or out), not `crash` calls.
//!
//! **When a run ends.** A run's goal is reached when the coordinator says
//! [`CoordinatorMachine::all_terminal`] and no worker [`WorkerMachine::is_busy`] (holds, or
//! believes it holds, a job), and nothing is still on the wire. A worker that stays busy forever
//! keeps the run going until its liveness bound (I7) or its limits end it.
//!
//! # What the checkers judge, and what they need from each role
//!
//! leasesim judges **behaviour**: what crossed the network and what the trusted parties
//! answered. An effect is the [`Msg::Effect`] a worker sent (with its fence) and the receiver's
//! answer; a commit is the [`Msg::Commit`] and the coordinator's reply; a grant is the
//! coordinator's [`Msg::ClaimGranted`] or [`Msg::HeartbeatOk`] (a lease of `lease_ns` from the
//! coordinator's clock at its answer). A machine's **journal** ([`Output::Journal`],
//! [`crate::Event`]) adds what only it knows, and is judged when present; a machine that
//! journals less is judged less, never wrongly passed on what it did:
//!
//! | role | journal events | what they let the checkers judge |
//! |---|---|---|
//! | coordinator | `lease_granted` (reason, epoch, taken-over token), `lease_renewed`, `heartbeat_refused`, `result_accepted`, `result_rejected`, `lease_revoked`, `checkpoint_saved`, `job_failed`, `renewal_cap_reached` | I8 (every takeover has a reason and a higher epoch), I6 (every refused commit and heartbeat is journaled), a checkpoint's fresh lease |
//! | worker | `job_claimed` and `heartbeat_ok` with its conservative deadline on its own clock, `jeopardy_entered`/`jeopardy_exited`, `heartbeat_lost`, `commit_refused`, `success_claimed`, `effect_started` | I5: its belief stays within the grant (judged when formed), nothing is started in jeopardy; I6: every loss it was told of is journaled |
//! | receiver | `effect_applied`, `effect_duplicate`, `effect_fenced`, `effect_unauthorized` | I2 from its own store's point of view |
//!
//! The reference machines of this crate emit all of them; `leasesim list` and the guide's
//! chapter on your own implementation (docs/your-implementation.md) show a user's machines that do too.

use crate::{Coordinator, Msg, Nanos, Output, Receiver, Worker};

/// A coordinator: the job table, the only arbiter of lease time (see the module's contract).
///
/// A minimal one: it answers nothing, and its jobs are never done. Three methods are required;
/// a coordinator with timers (lease expiry it acts on by itself) adds the other two.
///
/// ```
/// use leasesim_protocol::{CoordinatorMachine, Msg, Nanos, Output};
///
/// struct Mute;
///
/// impl CoordinatorMachine for Mute {
///     fn handle_message(&mut self, _now: Nanos, _from: u32, _msg: Msg) {}
///     fn poll_output(&mut self) -> Option<Output> {
///         None
///     }
///     fn all_terminal(&self) -> bool {
///         false
///     }
/// }
///
/// let mut c = Mute;
/// assert!(c.poll_output().is_none() && c.poll_timeout().is_none());
/// ```
pub trait CoordinatorMachine: Send {
    /// Handles a request (`Claim`, `Heartbeat`, `Commit`, `Checkpoint`, an operator's action)
    /// from host address `from`, at `now` on the coordinator's clock. Answers go to
    /// `Peer::Addr(from)`.
    fn handle_message(&mut self, now: Nanos, from: u32, msg: Msg);
    /// The next output; drained until `None` after every input.
    fn poll_output(&mut self) -> Option<Output>;
    /// Whether every job is terminal: part of the run's goal.
    fn all_terminal(&self) -> bool;
    /// The next wake-up on the coordinator's clock, if it has timers at all.
    fn poll_timeout(&self) -> Option<Nanos> {
        None
    }
    /// Handles due timers; a spurious call does nothing.
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

/// A worker: claims jobs, renews its lease apart from its tool calls, runs the job's plan and
/// commits conditionally (see the module's contract).
///
/// A minimal one: it asks the coordinator for work once at start and holds nothing. Seven
/// methods are required; `observe_wall` is an input too (the node's wall clock, for a worker
/// that stamps its requests with it), and `tool_in_flight` tells the async shell which tool
/// call it still waits for, so that the shell cancels the call's wait when it stops waiting.
///
/// ```
/// use leasesim_protocol::{Msg, Nanos, Output, Peer, WorkerMachine, WorkerName};
/// use std::collections::VecDeque;
///
/// #[derive(Default)]
/// struct Asker {
///     out: VecDeque<Output>,
/// }
///
/// impl WorkerMachine for Asker {
///     fn start(&mut self, _now: Nanos) {
///         self.out.push_back(Output::Send {
///             to: Peer::Coordinator,
///             msg: Msg::Claim { req: 1, worker: WorkerName(1), client_now: 0 },
///         });
///     }
///     fn crash(&mut self) {
///         self.out.clear();
///     }
///     fn handle_message(&mut self, _now: Nanos, _msg: Msg) {}
///     fn handle_timeout(&mut self, _now: Nanos) {}
///     fn poll_output(&mut self) -> Option<Output> {
///         self.out.pop_front()
///     }
///     fn poll_timeout(&self) -> Option<Nanos> {
///         None
///     }
///     fn is_busy(&self) -> bool {
///         false
///     }
/// }
///
/// let mut w = Asker::default();
/// w.start(0);
/// assert!(matches!(w.poll_output(), Some(Output::Send { to: Peer::Coordinator, .. })));
/// assert!(w.poll_output().is_none() && w.tool_in_flight().is_none());
/// ```
pub trait WorkerMachine: Send {
    /// Starts, or restarts after a crash under the same logical name, at `now` on its clock.
    fn start(&mut self, now: Nanos);
    /// Loses its volatile state (F5); `start` follows when it restarts.
    fn crash(&mut self);
    /// Handles a reply (from the coordinator, the tool or a receiver) at `now` on its clock.
    fn handle_message(&mut self, now: Nanos, msg: Msg);
    /// Handles due timers (renewals, the jeopardy deadline, timeouts); a spurious call does
    /// nothing.
    fn handle_timeout(&mut self, now: Nanos);
    /// The next output; drained until `None` after every input.
    fn poll_output(&mut self) -> Option<Output>;
    /// The next wake-up on its own clock.
    fn poll_timeout(&self) -> Option<Nanos>;
    /// Whether it holds (or believes it holds) a job right now: a run ends only when no worker
    /// is busy and every job is terminal.
    fn is_busy(&self) -> bool;
    /// Its wall clock's reading, told before each input (only a known-bad variant uses it).
    fn observe_wall(&mut self, _wall: Nanos) {}
    /// The tool call it waits for, if any: the async shell cancels a call's wait when this
    /// changes (the heartbeat was refused, the call timed out).
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

/// An effect receiver: an external system (payments, tickets) that fences by token and
/// deduplicates by idempotency key (see the module's contract).
///
/// A minimal one: it answers nothing (a worker then never learns whether its effect took
/// place). Both methods are required.
///
/// ```
/// use leasesim_protocol::{Msg, Nanos, Output, ReceiverMachine};
///
/// struct Silent;
///
/// impl ReceiverMachine for Silent {
///     fn handle_message(&mut self, _now: Nanos, _from: u32, _msg: Msg) {}
///     fn poll_output(&mut self) -> Option<Output> {
///         None
///     }
/// }
///
/// assert!(Silent.poll_output().is_none());
/// ```
pub trait ReceiverMachine: Send {
    /// Handles an `Effect` or an `EffectStatus` query from host address `from`; answers go to
    /// `Peer::Addr(from)`.
    fn handle_message(&mut self, now: Nanos, from: u32, msg: Msg);
    /// The next output; drained until `None` after every input.
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

/// A boxed machine is a machine (a factory may return `Box<dyn WorkerMachine>` or a box of its
/// own type); every method forwards, the provided ones included.
impl<T: CoordinatorMachine + ?Sized> CoordinatorMachine for Box<T> {
    fn handle_message(&mut self, now: Nanos, from: u32, msg: Msg) {
        (**self).handle_message(now, from, msg)
    }
    fn poll_output(&mut self) -> Option<Output> {
        (**self).poll_output()
    }
    fn all_terminal(&self) -> bool {
        (**self).all_terminal()
    }
    fn poll_timeout(&self) -> Option<Nanos> {
        (**self).poll_timeout()
    }
    fn handle_timeout(&mut self, now: Nanos) {
        (**self).handle_timeout(now)
    }
}

/// See the coordinator's.
impl<T: WorkerMachine + ?Sized> WorkerMachine for Box<T> {
    fn start(&mut self, now: Nanos) {
        (**self).start(now)
    }
    fn crash(&mut self) {
        (**self).crash()
    }
    fn handle_message(&mut self, now: Nanos, msg: Msg) {
        (**self).handle_message(now, msg)
    }
    fn handle_timeout(&mut self, now: Nanos) {
        (**self).handle_timeout(now)
    }
    fn poll_output(&mut self) -> Option<Output> {
        (**self).poll_output()
    }
    fn poll_timeout(&self) -> Option<Nanos> {
        (**self).poll_timeout()
    }
    fn is_busy(&self) -> bool {
        (**self).is_busy()
    }
    fn observe_wall(&mut self, wall: Nanos) {
        (**self).observe_wall(wall)
    }
    fn tool_in_flight(&self) -> Option<u64> {
        (**self).tool_in_flight()
    }
}

/// See the coordinator's.
impl<T: ReceiverMachine + ?Sized> ReceiverMachine for Box<T> {
    fn handle_message(&mut self, now: Nanos, from: u32, msg: Msg) {
        (**self).handle_message(now, from, msg)
    }
    fn poll_output(&mut self) -> Option<Output> {
        (**self).poll_output()
    }
}
