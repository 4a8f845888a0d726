//! What a thread's runs keep from one run to the next, in one place: the simulator's buffers,
//! the fault plan's director, the checkers' state, the nodes' machines and lists, the clocks
//! and names the checkers read, and the storage of the last setup. Once the first runs grew
//! them, a sweep's run allocates almost nothing.
//!
//! The modules a run is built from (the setup, the adapter, the machines, the plan, the
//! checkers) keep nothing of their own: each is handed the part of a `Workspace` it fills and
//! empties. The entry points ([`crate::run()`], [`crate::run::judge`], a scenario's build) take
//! this thread's workspace for the call and give it back after; a run started from inside
//! another (a machine's factory that runs a setup) finds it taken and works in a new one.

use crate::plan::PlanDirector;
use crate::setup::{NodeInfo, Setup, Spare};
use crate::world::Kept;
use leasesim_checkers::Scratch;
use leasesim_protocol::{Event, Msg};
use leasesim_sim::{Buffers, Clock};
use std::cell::Cell;
use std::sync::Arc;

/// A run's node list and operation names.
pub(crate) type Names = (Arc<[NodeInfo]>, Arc<[String]>);

/// Everything a thread's runs keep between runs.
#[derive(Default)]
pub(crate) struct Workspace {
    /// The simulator's storage: its queue, its messages, its trace.
    pub(crate) sim: Buffers<Msg, Event>,
    /// The fault plan's director, reset for each run.
    pub(crate) director: PlanDirector,
    /// The checkers' state.
    pub(crate) checkers: Scratch,
    /// The machines, the tool node and the workers' lists of receivers the last run dropped.
    pub(crate) nodes: Kept,
    /// The node list and operation names of the last run: a sweep's runs of one scenario share
    /// them, so a run's result holds them without building them again.
    pub(crate) names: Option<Names>,
    /// The clocks the checkers read.
    pub(crate) clocks: Vec<Clock>,
    /// The storage of the last setup recycled, if not taken since.
    pub(crate) setup: Option<Spare>,
}

thread_local! {
    /// This thread's workspace, while no call of the thread holds it.
    static THREAD: Cell<Option<Box<Workspace>>> = const { Cell::new(None) };
}

/// This thread's workspace, for a call to hold until it gives it back ([`give`]); a new one
/// when a call of this thread holds it already, or the thread is exiting.
pub(crate) fn take() -> Box<Workspace> {
    THREAD
        .try_with(Cell::take)
        .ok()
        .flatten()
        .unwrap_or_default()
}

/// Gives a workspace back to this thread (a nested call's is dropped when the thread holds its
/// own again; one given back while the thread exits is simply dropped).
pub(crate) fn give(ws: Box<Workspace>) {
    let _ = THREAD.try_with(|t| {
        let spare = t.take();
        t.set(Some(spare.unwrap_or(ws)));
    });
}

/// Calls `f` with this thread's workspace.
pub(crate) fn with<R>(f: impl FnOnce(&mut Workspace) -> R) -> R {
    let mut ws = take();
    let out = f(&mut ws);
    give(ws);
    out
}

/// The storage of the setup this thread recycled last, or empty vectors: a scenario builds its
/// next setup in it.
pub(crate) fn spare() -> Spare {
    with(|ws| ws.setup.take()).unwrap_or_default()
}

/// Leaves `setup`'s vectors to the next setup this thread builds ([`Setup::into_spare`]),
/// unless it holds a setup's storage already.
pub(crate) fn recycle_setup(setup: Setup) {
    with(|ws| {
        if ws.setup.is_none() {
            ws.setup = Some(setup.into_spare());
        }
    })
}

/// Runs `f` with this thread's runs judged without the checkers' shortcuts
/// ([`Scratch::set_shortcuts`]): the judgement must be the same, only slower.
pub fn without_shortcuts<R>(f: impl FnOnce() -> R) -> R {
    struct Restore(bool);
    impl Drop for Restore {
        fn drop(&mut self) {
            let on = self.0;
            with(|ws| ws.checkers.set_shortcuts(on));
        }
    }
    let _restore = Restore(with(|ws| {
        let was = ws.checkers.shortcuts();
        ws.checkers.set_shortcuts(false);
        was
    }));
    f()
}
