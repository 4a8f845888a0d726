//! Machines as values: one factory per role, so that the reference protocol, each of its
//! known-bad variants and a user's own coordinator, worker or receiver all plug into every run,
//! sweep, replay, shrink, matrix and report the same way.
//!
//! A [`Machines`] value has a name (what a replay file records and the command line selects with
//! `--variant`), the variant its scenarios are built with (the reference for a set made with
//! [`Machines::new`]), whether it carries a bug on purpose, and a factory for each role that
//! builds a machine from the node's configuration. Replacing a part changes that part only:
//! the name, the variant and the known-bad mark are the set's, given once.
//! The tool is not a role here: it is the outside world, the place where F7 faults are injected.
//!
//! ```
//! use leasesim::machines::Machines;
//! use leasesim::{Builder, Variant};
//! use leasesim_protocol::Worker;
//!
//! // A user's worker, here the reference one built by a closure of the user's.
//! let mine = Machines::new("mine").with_worker("my-worker", |spec| {
//!     Worker::new(spec.config.clone(), Variant::Reference.switches())
//! });
//! assert_eq!(mine.name(), "mine");
//! assert_eq!(mine.parts().worker, "my-worker");
//! assert!(!mine.is_stock() && !mine.is_known_bad());
//! let r = Builder::new().machines(mine).run("w1-w2", 1).unwrap();
//! assert_eq!(r.verdict(), leasesim::Verdict::Held);
//! ```

use leasesim_protocol::{
    ClassSpec, Coordinator, CoordinatorMachine, JobSpec, Msg, Nanos, OpId, Output, Receiver,
    ReceiverMachine, Switches, Variant, Worker, WorkerConfig, WorkerMachine,
};
use std::cell::Cell;
use std::sync::Arc;

/// What a coordinator is built from: the job table's classes and jobs.
pub struct CoordinatorSpec<'a> {
    /// Job classes, with their lease lengths (P7), attempt limits, capacities and caps.
    pub classes: &'a [ClassSpec],
    /// The jobs, in id order.
    pub jobs: &'a [JobSpec],
    /// A number drawn from the run's seed, for a coordinator that makes choices of its own
    /// (the same seed, the same choices).
    pub seed: u64,
    /// A coordinator of leasesim's own that the thread's last run left, for the stock factory
    /// to renew instead of building one (a factory of yours may ignore it).
    pub(crate) kept: Cell<Option<Box<Coordinator>>>,
}

/// What a worker is built from.
pub struct WorkerSpec<'a> {
    /// Its index among the setup's workers (two processes may share one logical name).
    pub index: usize,
    /// Its configuration: logical name, timing, drift bound, plans.
    pub config: &'a WorkerConfig,
    /// A worker of leasesim's own the thread's last run left (see [`CoordinatorSpec`]).
    pub(crate) kept: Cell<Option<Box<Worker>>>,
}

/// What an effect receiver is built from.
pub struct ReceiverSpec<'a> {
    /// Its index among receivers (`Peer::Receiver(index)` reaches it).
    pub index: u8,
    /// Whether it checks fences (P9); one that cannot relies on keys alone (I2).
    pub supports_fence: bool,
    /// Whether it answers status queries (P12 c).
    pub supports_status: bool,
    /// Operations its policy refuses (P16 commit-time authorization).
    pub refused_ops: &'a [OpId],
    /// A receiver of leasesim's own the thread's last run left (see [`CoordinatorSpec`]).
    pub(crate) kept: Cell<Option<Box<Receiver>>>,
}

/// Builds a coordinator.
pub type CoordinatorFactory =
    Arc<dyn Fn(&CoordinatorSpec<'_>) -> Box<dyn CoordinatorMachine> + Send + Sync>;
/// Builds a worker.
pub type WorkerFactory = Arc<dyn Fn(&WorkerSpec<'_>) -> Box<dyn WorkerMachine> + Send + Sync>;
/// Builds a receiver.
pub type ReceiverFactory = Arc<dyn Fn(&ReceiverSpec<'_>) -> Box<dyn ReceiverMachine> + Send + Sync>;

/// Says whether machines can express a setup (`Err` with the reason when they cannot).
pub type ScopeCheck = Arc<dyn Fn(&crate::Setup) -> Result<(), String> + Send + Sync>;

/// The name of the implementation of each role.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Parts {
    /// The coordinator's.
    pub coordinator: String,
    /// The worker's.
    pub worker: String,
    /// The receiver's.
    pub receiver: String,
}

/// One set of machines: a factory per role, named. Cheap to clone (the factories are shared).
#[derive(Clone)]
pub struct Machines {
    name: String,
    variant: Variant,
    known_bad: bool,
    /// Whether its machines write a journal ([`Machines::without_journal`]).
    journals: bool,
    parts: Parts,
    coordinator: CoordinatorFactory,
    worker: WorkerFactory,
    receiver: ReceiverFactory,
    /// The switches of each part that is leasesim's own, which a run builds directly rather
    /// than through its factory (the same machine; see [`Part`]); `None` for a user's part.
    stock: StockParts,
    scope: Option<ScopeCheck>,
    sources: Arc<Vec<(String, String)>>,
    command_line: Option<String>,
    bug: Option<String>,
}

impl std::fmt::Debug for Machines {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Machines")
            .field("name", &self.name)
            .field("variant", &self.variant)
            .field("known_bad", &self.known_bad)
            .field("parts", &self.parts)
            .finish_non_exhaustive()
    }
}

/// The prefix of the part names of leasesim's own machines.
const STOCK: &str = "leasesim:";

impl Machines {
    /// The reference protocol, as the SPEC states it.
    pub fn reference() -> Machines {
        Machines::variant(Variant::Reference)
    }

    /// The reference protocol with one known-bad switch on (or the reference itself): leasesim's
    /// own machines, named after the variant. Scenarios are built with that variant (V12 is a
    /// configuration, not code).
    pub fn variant(v: Variant) -> Machines {
        let switches = v.switches();
        let part = format!("{STOCK}{}", v.name());
        Machines {
            name: v.name().to_string(),
            variant: v,
            known_bad: v != Variant::Reference,
            journals: true,
            parts: Parts {
                coordinator: part.clone(),
                worker: part.clone(),
                receiver: part,
            },
            // A machine a run dropped is kept by the thread and made new for the next run (see
            // `Shelves`): the same machine as a new one, without allocating its storage again.
            coordinator: Arc::new(move |s: &CoordinatorSpec<'_>| {
                stock_coordinator(s, switches).0 as Box<dyn CoordinatorMachine>
            }),
            worker: Arc::new(move |s: &WorkerSpec<'_>| {
                stock_worker(s, switches).0 as Box<dyn WorkerMachine>
            }),
            receiver: Arc::new(move |s: &ReceiverSpec<'_>| {
                stock_receiver(s, switches).0 as Box<dyn ReceiverMachine>
            }),
            stock: StockParts {
                coordinator: Some(switches),
                worker: Some(switches),
                receiver: Some(switches),
            },
            scope: None,
            sources: Arc::new(Vec::new()),
            command_line: None,
            bug: None,
        }
    }

    /// leasesim's own machines: the reference and every known-bad variant, in `list` order.
    pub fn stock() -> Vec<Machines> {
        Variant::ALL.iter().map(|&v| Machines::variant(v)).collect()
    }

    /// A set of one's own named `name`: leasesim's reference machines until a part is replaced
    /// ([`Machines::with_worker`], [`Machines::with_coordinator`], [`Machines::with_receiver`]),
    /// built on the reference's scenarios and expected to hold (unless marked
    /// [`Machines::known_bad`]).
    pub fn new(name: &str) -> Machines {
        Machines::reference().named(name)
    }

    /// The same machines with this worker, whose implementation is called `part` (reports and
    /// replay files name it). `factory` builds one from its node's configuration, once per run
    /// and per worker node; it returns the machine itself, no box needed. Only the part
    /// changes: the set's name, variant and known-bad mark stay as they were.
    pub fn with_worker<M: WorkerMachine + 'static>(
        mut self,
        part: &str,
        factory: impl Fn(&WorkerSpec<'_>) -> M + Send + Sync + 'static,
    ) -> Machines {
        self.worker =
            Arc::new(move |s: &WorkerSpec<'_>| Box::new(factory(s)) as Box<dyn WorkerMachine>);
        self.stock.worker = None;
        self.parts.worker = part.to_string();
        self
    }

    /// The same machines with this coordinator (see [`Machines::with_worker`]).
    pub fn with_coordinator<M: CoordinatorMachine + 'static>(
        mut self,
        part: &str,
        factory: impl Fn(&CoordinatorSpec<'_>) -> M + Send + Sync + 'static,
    ) -> Machines {
        self.coordinator = Arc::new(move |s: &CoordinatorSpec<'_>| {
            Box::new(factory(s)) as Box<dyn CoordinatorMachine>
        });
        self.stock.coordinator = None;
        self.parts.coordinator = part.to_string();
        self
    }

    /// The same machines with this receiver (see [`Machines::with_worker`]).
    pub fn with_receiver<M: ReceiverMachine + 'static>(
        mut self,
        part: &str,
        factory: impl Fn(&ReceiverSpec<'_>) -> M + Send + Sync + 'static,
    ) -> Machines {
        self.receiver =
            Arc::new(move |s: &ReceiverSpec<'_>| Box::new(factory(s)) as Box<dyn ReceiverMachine>);
        self.stock.receiver = None;
        self.parts.receiver = part.to_string();
        self
    }

    /// Machines that cannot express every setup (a SQL file without an operator's statement,
    /// a store without admission limits) say which they can: a sweep counts the others as "not
    /// expressible", with the reason, instead of running them; `run` and `replay` refuse them.
    pub fn with_scope(
        mut self,
        check: impl Fn(&crate::Setup) -> Result<(), String> + Send + Sync + 'static,
    ) -> Machines {
        self.scope = Some(Arc::new(check));
        self
    }

    /// Whether these machines can run `setup`, or why not.
    pub fn expressible(&self, setup: &crate::Setup) -> Result<(), String> {
        match &self.scope {
            Some(check) => check(setup),
            None => Ok(()),
        }
    }

    /// The text of each named operation of the coordinator, as (name, text): a SQL file's
    /// statements, a store's scripts. A report shows, beside each decision, the text of the
    /// operation the store journaled as making it ([`leasesim_protocol::StoreEvent`]).
    pub fn with_sources(mut self, sources: Vec<(String, String)>) -> Machines {
        self.sources = Arc::new(sources);
        self
    }

    /// The texts reports show (empty for a coordinator without named operations).
    pub fn sources(&self) -> &[(String, String)] {
        &self.sources
    }

    /// The same, shared (a run result keeps them without a copy).
    pub fn sources_shared(&self) -> Arc<Vec<(String, String)>> {
        self.sources.clone()
    }

    /// Machines `leasesim` itself selects with these arguments (`--coordinator sql:FILE`):
    /// reproduce commands name them instead of `--variant`.
    pub fn with_command_line(mut self, args: &str) -> Machines {
        self.command_line = Some(args.to_string());
        self
    }

    /// The arguments that select these machines on leasesim's own command line, if any.
    pub fn command_line(&self) -> Option<&str> {
        self.command_line.as_deref()
    }

    /// The same machines under another name.
    pub fn named(mut self, name: &str) -> Machines {
        self.name = name.to_string();
        self
    }

    /// Marks these machines as carrying a bug on purpose: a matrix expects them caught.
    pub fn known_bad(mut self) -> Machines {
        self.known_bad = true;
        self
    }

    /// Marks these machines as carrying the bug `what` on purpose (`"V2: the naive final
    /// update"`; a leading SPEC id before `:` fills the matrix's SPEC column).
    pub fn known_bad_as(mut self, what: &str) -> Machines {
        self.known_bad = true;
        self.bug = Some(what.to_string());
        self
    }

    /// Declares that these machines write no journal (a user's worker that only sends its
    /// messages, say). Their judgement is the same, made from what they send; but hazards only
    /// a journal can show ([`crate::hazard::JOURNAL_ONLY`]) are not expected of them, so a
    /// sweep's coverage check leaves those out (and says so).
    pub fn without_journal(mut self) -> Machines {
        self.journals = false;
        self
    }

    /// Whether these machines write a journal (see [`Machines::without_journal`]).
    pub fn journals(&self) -> bool {
        self.journals
    }

    /// The bug these machines carry on purpose, as said by [`Machines::known_bad_as`].
    pub fn bug(&self) -> Option<&str> {
        self.bug.as_deref()
    }

    /// The name the command line selects and replay files record.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The implementation of each role.
    pub fn parts(&self) -> &Parts {
        &self.parts
    }

    /// The variant scenarios are built with for these machines.
    pub fn setup_variant(&self) -> Variant {
        self.variant
    }

    /// Whether they carry a bug on purpose.
    pub fn is_known_bad(&self) -> bool {
        self.known_bad
    }

    /// Whether every part is leasesim's own (any `leasesim` binary can run them).
    pub fn is_stock(&self) -> bool {
        let p = &self.parts;
        [&p.coordinator, &p.worker, &p.receiver]
            .iter()
            .all(|n| n.starts_with(STOCK))
            && Machines::variant(self.variant).parts == self.parts
    }

    /// Builds the coordinator.
    pub fn coordinator(&self, spec: &CoordinatorSpec<'_>) -> Box<dyn CoordinatorMachine> {
        (self.coordinator)(spec)
    }

    /// Builds a worker.
    pub fn worker(&self, spec: &WorkerSpec<'_>) -> Box<dyn WorkerMachine> {
        (self.worker)(spec)
    }

    /// Builds a receiver.
    pub fn receiver(&self, spec: &ReceiverSpec<'_>) -> Box<dyn ReceiverMachine> {
        (self.receiver)(spec)
    }

    /// Builds the coordinator as a node holds it: leasesim's own directly, the same machine its
    /// factory builds.
    pub(crate) fn coordinator_part(&self, spec: &CoordinatorSpec<'_>) -> CoordinatorPart {
        CoordinatorPart(match self.stock.coordinator {
            Some(switches) => Part::Stock(stock_coordinator(spec, switches)),
            None => Part::Dyn(self.coordinator(spec)),
        })
    }

    /// Builds a worker as a node holds it (see [`Machines::coordinator_part`]).
    pub(crate) fn worker_part(&self, spec: &WorkerSpec<'_>) -> WorkerPart {
        WorkerPart(match self.stock.worker {
            Some(switches) => Part::Stock(stock_worker(spec, switches)),
            None => Part::Dyn(self.worker(spec)),
        })
    }

    /// Builds a receiver as a node holds it (see [`Machines::coordinator_part`]).
    pub(crate) fn receiver_part(&self, spec: &ReceiverSpec<'_>) -> ReceiverPart {
        ReceiverPart(match self.stock.receiver {
            Some(switches) => Part::Stock(stock_receiver(spec, switches)),
            None => Part::Dyn(self.receiver(spec)),
        })
    }
}

/// Which parts of a [`Machines`] are leasesim's own, with the switches they were built with (a
/// user's part set beside them leaves the others as they were).
#[derive(Clone, Copy, Debug)]
struct StockParts {
    coordinator: Option<Switches>,
    worker: Option<Switches>,
    receiver: Option<Switches>,
}

/// leasesim's own coordinator: the one the spec carries, rebuilt, or a new one.
fn stock_coordinator(s: &CoordinatorSpec<'_>, switches: Switches) -> Reused<Coordinator> {
    let coordinator = match s.kept.take() {
        Some(mut c) => {
            c.rebuild(s.classes, s.jobs, switches);
            c
        }
        None => Box::new(Coordinator::new(s.classes.to_vec(), s.jobs, switches)),
    };
    Reused(coordinator)
}

/// leasesim's own worker (see [`stock_coordinator`]).
fn stock_worker(s: &WorkerSpec<'_>, switches: Switches) -> Reused<Worker> {
    let worker = match s.kept.take() {
        Some(mut w) => {
            w.rebuild(s.config, switches);
            w
        }
        None => Box::new(Worker::new(s.config.clone(), switches)),
    };
    Reused(worker)
}

/// leasesim's own receiver (see [`stock_coordinator`]).
fn stock_receiver(s: &ReceiverSpec<'_>, switches: Switches) -> Reused<Receiver> {
    let receiver = match s.kept.take() {
        Some(mut r) => {
            r.rebuild(s.supports_fence, switches);
            r
        }
        None => Box::new(Receiver::new(s.supports_fence, switches)),
    };
    // A new or rebuilt receiver answers status queries and refuses nothing: only one that must
    // differ is moved through its builder methods.
    let receiver = if s.supports_status && s.refused_ops.is_empty() {
        receiver
    } else {
        Box::new(
            (*receiver)
                .with_status(s.supports_status)
                .with_refused_ops(s.refused_ops.to_vec()),
        )
    };
    Reused(receiver)
}

/// A machine as a node holds it: leasesim's own by its type, so that the node's calls to it
/// are direct and inline into the node's adapter (its outputs are then handed over without a
/// call each), or any other behind its trait. Both are the same machine: the factory of a
/// stock part builds it the same way.
pub(crate) enum Part<S, D: ?Sized> {
    /// leasesim's own machine.
    Stock(S),
    /// A user's machine (or leasesim's, handed over by a factory).
    Dyn(Box<D>),
}

/// Calls `$body` with `$m` bound to the machine of a [`Part`] (by the reference `$part` is
/// given as): once for leasesim's own machine, called directly, and once for any other.
macro_rules! on_part {
    ($part:expr, $m:ident => $body:expr) => {
        match $part {
            $crate::machines::Part::Stock($m) => $body,
            $crate::machines::Part::Dyn($m) => $body,
        }
    };
}
pub(crate) use on_part;

/// A coordinator as its node holds it.
pub struct CoordinatorPart(pub(crate) Part<Reused<Coordinator>, dyn CoordinatorMachine>);

/// A worker as its node holds it.
pub struct WorkerPart(pub(crate) Part<Reused<Worker>, dyn WorkerMachine>);

/// An effect receiver as its node holds it.
pub struct ReceiverPart(pub(crate) Part<Reused<Receiver>, dyn ReceiverMachine>);

/// What outside code may do with a part: read or drive its machine through the role's trait,
/// and make a part of any boxed machine (a node built by hand).
macro_rules! part_access {
    ($part:ident, $machine:ident) => {
        impl $part {
            /// The machine.
            pub fn get(&self) -> &dyn $machine {
                match &self.0 {
                    Part::Stock(m) => m,
                    Part::Dyn(m) => &**m,
                }
            }

            /// The machine, to drive.
            pub fn get_mut(&mut self) -> &mut dyn $machine {
                match &mut self.0 {
                    Part::Stock(m) => m,
                    Part::Dyn(m) => &mut **m,
                }
            }
        }

        impl From<Box<dyn $machine>> for $part {
            fn from(m: Box<dyn $machine>) -> Self {
                $part(Part::Dyn(m))
            }
        }
    };
}

part_access!(CoordinatorPart, CoordinatorMachine);
part_access!(WorkerPart, WorkerMachine);
part_access!(ReceiverPart, ReceiverMachine);

/// leasesim's own machines kept for a thread's next run, at most this many per role: a run
/// needs a handful, and a thread that once ran a large setup does not keep hundreds.
const REUSED_MAX: usize = 16;

/// leasesim's own machines a thread's last run dropped, by role, each in the box it is handed
/// out in again, so that the next run makes it new (`rebuild`) instead of building another: a
/// sweep's run then allocates nothing for it, except a receiver's list of refused operations,
/// when it has one. The machine stays in its own box from run to run, so that handing it out
/// and taking it back moves a pointer, not the machine.
#[derive(Default)]
#[allow(clippy::vec_box)] // the boxes are the point: a kept machine is never moved
pub(crate) struct Shelves {
    coordinators: Vec<Box<Coordinator>>,
    workers: Vec<Box<Worker>>,
    receivers: Vec<Box<Receiver>>,
}

/// Puts `machine` on `shelf` when it has room.
#[allow(clippy::vec_box)]
fn shelve<T>(shelf: &mut Vec<Box<T>>, machine: Box<T>) {
    if shelf.len() < REUSED_MAX {
        shelf.push(machine);
    }
}

impl Shelves {
    /// A kept coordinator for a spec to carry, if any.
    pub(crate) fn coordinator(&mut self) -> Cell<Option<Box<Coordinator>>> {
        Cell::new(self.coordinators.pop())
    }

    /// A kept worker for a spec to carry, if any.
    pub(crate) fn worker(&mut self) -> Cell<Option<Box<Worker>>> {
        Cell::new(self.workers.pop())
    }

    /// A kept receiver for a spec to carry, if any.
    pub(crate) fn receiver(&mut self) -> Cell<Option<Box<Receiver>>> {
        Cell::new(self.receivers.pop())
    }

    /// Takes back what a spec still carries once its factory ran (a user's factory takes none).
    pub(crate) fn unused_coordinator(&mut self, kept: Cell<Option<Box<Coordinator>>>) {
        if let Some(c) = kept.into_inner() {
            shelve(&mut self.coordinators, c);
        }
    }

    /// See [`Shelves::unused_coordinator`].
    pub(crate) fn unused_worker(&mut self, kept: Cell<Option<Box<Worker>>>) {
        if let Some(w) = kept.into_inner() {
            shelve(&mut self.workers, w);
        }
    }

    /// See [`Shelves::unused_coordinator`].
    pub(crate) fn unused_receiver(&mut self, kept: Cell<Option<Box<Receiver>>>) {
        if let Some(r) = kept.into_inner() {
            shelve(&mut self.receivers, r);
        }
    }

    /// Keeps a finished run's coordinator when it is leasesim's own, held by type; any other
    /// is dropped.
    pub(crate) fn keep_coordinator(&mut self, part: CoordinatorPart) {
        if let Part::Stock(Reused(c)) = part.0 {
            shelve(&mut self.coordinators, c);
        }
    }

    /// See [`Shelves::keep_coordinator`].
    pub(crate) fn keep_worker(&mut self, part: WorkerPart) {
        if let Part::Stock(Reused(w)) = part.0 {
            shelve(&mut self.workers, w);
        }
    }

    /// See [`Shelves::keep_coordinator`].
    pub(crate) fn keep_receiver(&mut self, part: ReceiverPart) {
        if let Part::Stock(Reused(r)) = part.0 {
            shelve(&mut self.receivers, r);
        }
    }
}

/// One of leasesim's own machines as a node holds it, by type, in the box it is kept in
/// between runs ([`Shelves`]).
pub(crate) struct Reused<T>(Box<T>);

impl<T> Reused<T> {
    #[inline]
    fn get(&self) -> &T {
        &self.0
    }

    #[inline]
    fn get_mut(&mut self) -> &mut T {
        &mut self.0
    }
}

// Every method of each trait is passed on, the provided ones too, so that a kept machine
// behaves exactly as the machine itself.
impl CoordinatorMachine for Reused<Coordinator> {
    #[inline]
    fn handle_message(&mut self, now: Nanos, from: u32, msg: Msg) {
        CoordinatorMachine::handle_message(self.get_mut(), now, from, msg)
    }
    #[inline]
    fn poll_output(&mut self) -> Option<Output> {
        CoordinatorMachine::poll_output(self.get_mut())
    }
    #[inline]
    fn all_terminal(&self) -> bool {
        CoordinatorMachine::all_terminal(self.get())
    }
    #[inline]
    fn poll_timeout(&self) -> Option<Nanos> {
        CoordinatorMachine::poll_timeout(self.get())
    }
    #[inline]
    fn handle_timeout(&mut self, now: Nanos) {
        CoordinatorMachine::handle_timeout(self.get_mut(), now)
    }
}

impl WorkerMachine for Reused<Worker> {
    #[inline]
    fn start(&mut self, now: Nanos) {
        WorkerMachine::start(self.get_mut(), now)
    }
    #[inline]
    fn crash(&mut self) {
        WorkerMachine::crash(self.get_mut())
    }
    #[inline]
    fn handle_message(&mut self, now: Nanos, msg: Msg) {
        WorkerMachine::handle_message(self.get_mut(), now, msg)
    }
    #[inline]
    fn handle_timeout(&mut self, now: Nanos) {
        WorkerMachine::handle_timeout(self.get_mut(), now)
    }
    #[inline]
    fn poll_output(&mut self) -> Option<Output> {
        WorkerMachine::poll_output(self.get_mut())
    }
    #[inline]
    fn poll_timeout(&self) -> Option<Nanos> {
        WorkerMachine::poll_timeout(self.get())
    }
    #[inline]
    fn is_busy(&self) -> bool {
        WorkerMachine::is_busy(self.get())
    }
    #[inline]
    fn observe_wall(&mut self, wall: Nanos) {
        WorkerMachine::observe_wall(self.get_mut(), wall)
    }
    #[inline]
    fn tool_in_flight(&self) -> Option<u64> {
        WorkerMachine::tool_in_flight(self.get())
    }
}

impl ReceiverMachine for Reused<Receiver> {
    #[inline]
    fn handle_message(&mut self, now: Nanos, from: u32, msg: Msg) {
        ReceiverMachine::handle_message(self.get_mut(), now, from, msg)
    }
    #[inline]
    fn poll_output(&mut self) -> Option<Output> {
        ReceiverMachine::poll_output(self.get_mut())
    }
}

/// Finds machines by name in a catalogue.
pub fn find<'a>(catalogue: &'a [Machines], name: &str) -> Option<&'a Machines> {
    catalogue.iter().find(|m| m.name == name)
}

/// [`find`], or the one-line error a command prints for a name the program lacks.
pub fn named(catalogue: &[Machines], name: &str) -> Result<Machines, String> {
    find(catalogue, name).cloned().ok_or_else(|| {
        let known: Vec<&str> = catalogue.iter().map(Machines::name).collect();
        format!("unknown variant '{name}' (known: {})", known.join(", "))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stock_machines_are_named_after_their_variant() {
        let stock = Machines::stock();
        assert_eq!(stock.len(), Variant::ALL.len());
        assert!(stock.iter().all(Machines::is_stock));
        assert_eq!(stock[0].name(), "reference");
        assert!(!stock[0].is_known_bad());
        assert!(stock[1..].iter().all(Machines::is_known_bad));
        let mixed = Machines::variant(Variant::UnconditionalCommit).with_receiver("mine", |s| {
            Box::new(Receiver::new(
                s.supports_fence,
                Variant::Reference.switches(),
            ))
        });
        assert!(!mixed.is_stock());
        // Only the part changed: the set keeps its name, its variant and its mark.
        assert_eq!(mixed.name(), "unconditional-commit");
        assert_eq!(mixed.setup_variant(), Variant::UnconditionalCommit);
        assert!(mixed.is_known_bad());
        assert_eq!(mixed.parts().worker, "leasesim:unconditional-commit");
        assert_eq!(mixed.parts().receiver, "mine");
    }

    /// A node holds leasesim's own machines by their type and a user's behind their traits: the
    /// same machines, handed over by the stock factories as a user's would be, run every
    /// scenario to the same trace and judgement, for every variant.
    #[test]
    fn stock_parts_held_by_type_run_as_behind_their_traits() {
        for &v in Variant::ALL {
            let stock = Machines::variant(v);
            let (c, w, r) = (stock.clone(), stock.clone(), stock.clone());
            let behind = Machines::variant(v)
                .with_coordinator("c", move |s| c.coordinator(s))
                .with_worker("w", move |s| w.worker(s))
                .with_receiver("r", move |s| r.receiver(s));
            let setup = crate::scenarios::find("w1-w2").unwrap().build(1, v);
            let spec = WorkerSpec {
                index: 0,
                config: &setup.workers[0].config,
                kept: Cell::new(None),
            };
            assert!(matches!(stock.worker_part(&spec).0, Part::Stock(_)));
            assert!(matches!(behind.worker_part(&spec).0, Part::Dyn(_)));
            for def in crate::scenarios::ALL {
                for seed in 0..3 {
                    let setup = def.build(seed, v);
                    let (a, b) = (
                        crate::run(&setup, seed, &stock),
                        crate::run(&setup, seed, &behind),
                    );
                    let what = format!("{} {} seed {seed}", def.name, v.name());
                    assert_eq!(a.trace_hash(), b.trace_hash(), "{what}");
                    assert_eq!(a.verdict(), b.verdict(), "{what}");
                    assert_eq!(a.findings, b.findings, "{what}");
                }
            }
        }
    }

    /// A part made by hand from a boxed machine, and driven through `get_mut`, is that machine:
    /// it answers as the stock part does.
    #[test]
    fn a_part_made_from_a_boxed_machine_is_driven_through_its_trait() {
        let v = Variant::Reference;
        let machines = Machines::variant(v);
        let setup = crate::scenarios::find("w1-w2").unwrap().build(1, v);
        let spec = WorkerSpec {
            index: 0,
            config: &setup.workers[0].config,
            kept: Cell::new(None),
        };
        let mut stock = machines.worker_part(&spec);
        let mut boxed = WorkerPart::from(machines.worker(&spec));
        assert!(matches!(stock.0, Part::Stock(_)));
        assert!(matches!(boxed.0, Part::Dyn(_)));
        let mut answers = Vec::new();
        for part in [&mut stock, &mut boxed] {
            let m = part.get_mut();
            m.start(1_000);
            let poll = m
                .poll_timeout()
                .expect("a started worker sets its poll timer");
            m.handle_timeout(poll);
            let mut out = Vec::new();
            while let Some(o) = m.poll_output() {
                out.push(o);
            }
            answers.push((out, part.get().poll_timeout(), part.get().is_busy()));
        }
        assert!(!answers[0].0.is_empty(), "a started worker asks for a job");
        assert_eq!(answers[0], answers[1]);
    }

    /// What a factory hands out after a run used and gave back this thread's machines is what
    /// each machine's constructor makes for the same spec.
    #[test]
    fn a_handed_out_machine_is_a_new_one() {
        let v = Variant::UnconditionalCommit;
        let (machines, switches) = (Machines::variant(v), v.switches());
        let setups = ["w1-w2", "swarm", "admission-and-authorization"]
            .map(|name| crate::scenarios::find(name).unwrap().build(5, v));
        for setup in &setups {
            let _ = crate::run(setup, 5, &machines);
            // The machines the run left, as its thread's next run finds them.
            let mut shelves = crate::workspace::with(|ws| std::mem::take(&mut ws.nodes.machines));
            let spec = CoordinatorSpec {
                classes: &setup.classes,
                jobs: &setup.jobs,
                seed: 11,
                kept: shelves.coordinator(),
            };
            let had = spec.kept.take();
            assert!(had.is_some(), "the run left its coordinator");
            spec.kept.set(had);
            let renewed = stock_coordinator(&spec, switches);
            assert!(
                spec.kept.take().is_none(),
                "the kept coordinator was renewed"
            );
            let new = Coordinator::new(setup.classes.clone(), &setup.jobs, switches);
            assert_eq!(format!("{:?}", renewed.get()), format!("{new:?}"));
            for (index, w) in setup.workers.iter().enumerate().take(REUSED_MAX) {
                let spec = WorkerSpec {
                    index,
                    config: &w.config,
                    kept: shelves.worker(),
                };
                let had = spec.kept.take();
                assert!(had.is_some(), "the run left its workers");
                spec.kept.set(had);
                let renewed = stock_worker(&spec, switches);
                let new = Worker::new(w.config.clone(), switches);
                assert_eq!(format!("{:?}", renewed.get()), format!("{new:?}"));
            }
            for (status, refused) in [(true, vec![]), (false, vec![OpId(2)]), (true, vec![])] {
                let spec = ReceiverSpec {
                    index: 0,
                    supports_fence: !status,
                    supports_status: status,
                    refused_ops: &refused,
                    kept: shelves.receiver(),
                };
                let renewed = stock_receiver(&spec, switches);
                let new = Receiver::new(!status, switches)
                    .with_status(status)
                    .with_refused_ops(refused.clone());
                assert_eq!(format!("{:?}", renewed.get()), format!("{new:?}"));
                shelves.keep_receiver(ReceiverPart(Part::Stock(renewed)));
            }
        }
    }
}
