//! One node's tasks and timers, polled when the node has an input.
//!
//! The host (leasesim's adapter for async machines) calls [`Executor::advance`] with the node's
//! local time at each input: the timers due by then are woken, and the woken tasks are polled
//! in the order they were woken until none is left. [`Executor::next_deadline`] is the node's
//! next wake-up, which the host turns into the machine's `poll_timeout`.
//!
//! While it polls, the executor is this thread's current one: [`crate::spawn`],
//! [`crate::time::Instant::now`] and the timers find it there. Nothing is polled between two
//! inputs, so a node whose inputs the simulator holds back (a pause) runs nothing.

use std::cell::RefCell;
use std::collections::{BTreeMap, VecDeque};
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Wake, Waker};

/// How many polls one input may take before the node is called runaway: a task that wakes
/// itself forever, or tasks that wake each other forever, end the run with a verdict.
pub const POLLS_PER_INPUT_MAX: u64 = 100_000;

/// How many tasks a node may have at once.
pub const TASKS_MAX: usize = 10_000;

/// How many timers a node may have at once.
pub const TIMERS_MAX: usize = 100_000;

type BoxFuture = Pin<Box<dyn Future<Output = ()> + Send + 'static>>;

/// A node whose tasks did not settle: they kept waking each other past
/// [`POLLS_PER_INPUT_MAX`] polls in one input, or spawned or armed past the bounds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Runaway(pub String);

impl std::fmt::Display for Runaway {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// One node's tasks, timers and local time.
pub struct Executor {
    shared: Arc<Shared>,
}

pub(crate) struct Shared {
    state: Mutex<State>,
    /// Tasks woken, in the order they were woken (each at most once until polled).
    woken: Mutex<VecDeque<usize>>,
}

struct State {
    /// The node's local time of the input being handled, in nanoseconds.
    now: u64,
    /// The tasks by slot; a slot is `None` while its future is being polled or once it ended.
    tasks: Vec<Slot>,
    free: Vec<usize>,
    /// Armed timers by (deadline, arming order): the order timers with one deadline fire in.
    timers: BTreeMap<(u64, u64), Waker>,
    armed: u64,
    /// Bumped by [`Executor::clear`]: a waker of an older generation wakes nothing.
    generation: u64,
    /// A bound was crossed while polling: reported at the end of the input.
    overflow: Option<String>,
}

struct Slot {
    future: Option<BoxFuture>,
    waker: Option<Arc<TaskWaker>>,
    live: bool,
}

struct TaskWaker {
    shared: std::sync::Weak<Shared>,
    slot: usize,
    generation: u64,
    queued: AtomicBool,
}

impl Wake for TaskWaker {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        if self.queued.swap(true, Ordering::SeqCst) {
            return;
        }
        if let Some(shared) = self.shared.upgrade() {
            if shared.lock().generation == self.generation {
                shared.woken_queue().push_back(self.slot);
            }
        }
    }
}

thread_local! {
    /// The executor polling on this thread, if any.
    static CURRENT: RefCell<Option<Arc<Shared>>> = const { RefCell::new(None) };
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn woken_queue(&self) -> MutexGuard<'_, VecDeque<usize>> {
        self.woken.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The node's local time.
    pub(crate) fn now(&self) -> u64 {
        self.lock().now
    }

    /// Arms a timer; returns its key.
    pub(crate) fn arm(&self, deadline: u64, waker: Waker) -> (u64, u64) {
        let mut st = self.lock();
        st.armed += 1;
        let key = (deadline, st.armed);
        if st.timers.len() >= TIMERS_MAX {
            st.overflow
                .get_or_insert_with(|| format!("more than {TIMERS_MAX} timers armed at once"));
        }
        st.timers.insert(key, waker);
        key
    }

    /// Replaces an armed timer's waker (the task polled it with another context); `false`
    /// when the timer is no longer armed (it fired, and the clock was then stepped back).
    pub(crate) fn rearm(&self, key: (u64, u64), waker: &Waker) -> bool {
        match self.lock().timers.get_mut(&key) {
            Some(w) => {
                if !w.will_wake(waker) {
                    *w = waker.clone();
                }
                true
            }
            None => false,
        }
    }

    /// Disarms a timer (its future was dropped or fired).
    pub(crate) fn disarm(&self, key: (u64, u64)) {
        let removed = self.lock().timers.remove(&key);
        drop(removed);
    }

    /// Adds a task; returns its slot and generation (`None` past [`TASKS_MAX`]: the input
    /// then ends as runaway).
    fn spawn(self: &Arc<Self>, future: BoxFuture) -> Option<(usize, u64)> {
        let mut st = self.lock();
        let live = st.tasks.iter().filter(|t| t.live).count();
        if live >= TASKS_MAX {
            st.overflow
                .get_or_insert_with(|| format!("more than {TASKS_MAX} tasks at once"));
            return None;
        }
        let slot = match st.free.pop() {
            Some(s) => s,
            None => {
                st.tasks.push(Slot {
                    future: None,
                    waker: None,
                    live: false,
                });
                st.tasks.len() - 1
            }
        };
        let waker = Arc::new(TaskWaker {
            shared: Arc::downgrade(self),
            slot,
            generation: st.generation,
            queued: AtomicBool::new(true),
        });
        st.tasks[slot] = Slot {
            future: Some(future),
            waker: Some(waker),
            live: true,
        };
        let generation = st.generation;
        drop(st);
        self.woken_queue().push_back(slot);
        Some((slot, generation))
    }
}

/// The executor polling on this thread: what `spawn`, `Instant::now` and the timers use.
/// Outside a node's poll it is an error in the program, as tokio's "no reactor running" is.
pub(crate) fn current() -> Arc<Shared> {
    CURRENT.with(|c| c.borrow().clone()).expect(
        "leasesim-tokio: called outside a simulated node (no task of a node is being polled)",
    )
}

impl Default for Executor {
    fn default() -> Self {
        Executor::new()
    }
}

impl Executor {
    /// A node with no task, at local time zero.
    pub fn new() -> Executor {
        Executor {
            shared: Arc::new(Shared {
                state: Mutex::new(State {
                    now: 0,
                    tasks: Vec::new(),
                    free: Vec::new(),
                    timers: BTreeMap::new(),
                    armed: 0,
                    generation: 0,
                    overflow: None,
                }),
                woken: Mutex::new(VecDeque::new()),
            }),
        }
    }

    /// Adds a task (the node's start function, say); it is first polled at the next
    /// [`Executor::advance`].
    pub fn spawn<F: Future<Output = ()> + Send + 'static>(&self, future: F) {
        let _ = self.shared.spawn(Box::pin(future));
    }

    /// The node's local time as of the last input.
    pub fn now(&self) -> u64 {
        self.shared.now()
    }

    /// Handles an input at `now` on the node's clock: wakes the timers due by then and polls
    /// the woken tasks, in the order they were woken, until none is left. A clock read earlier
    /// than the last one (a step backwards) is the node's time from then on; timers keep their
    /// deadlines on that clock.
    pub fn advance(&self, now: u64) -> Result<(), Runaway> {
        let due: Vec<Waker> = {
            let mut st = self.shared.lock();
            st.now = now;
            let later = st.timers.split_off(&(now.saturating_add(1), 0));
            let due = std::mem::replace(&mut st.timers, later);
            due.into_values().collect()
        };
        for w in due {
            w.wake();
        }
        self.run()
    }

    /// Polls woken tasks until none is left, with this executor current on the thread.
    fn run(&self) -> Result<(), Runaway> {
        let _current = Entered::enter(&self.shared);
        self.poll_woken()
    }

    fn poll_woken(&self) -> Result<(), Runaway> {
        let mut polls = 0u64;
        loop {
            let Some(slot) = self.shared.woken_queue().pop_front() else {
                break;
            };
            let taken = {
                let mut st = self.shared.lock();
                match st.tasks.get_mut(slot) {
                    Some(s) if s.live => s.future.take().zip(s.waker.clone()),
                    _ => None,
                }
            };
            let Some((mut future, waker)) = taken else {
                continue;
            };
            polls += 1;
            if polls > POLLS_PER_INPUT_MAX {
                return Err(Runaway(format!(
                    "its tasks kept waking each other: more than {POLLS_PER_INPUT_MAX} polls in one input"
                )));
            }
            waker.queued.store(false, Ordering::SeqCst);
            let as_waker = Waker::from(waker);
            let done = future
                .as_mut()
                .poll(&mut Context::from_waker(&as_waker))
                .is_ready();
            let mut st = self.shared.lock();
            if done {
                st.tasks[slot] = Slot {
                    future: None,
                    waker: None,
                    live: false,
                };
                st.free.push(slot);
                drop(st);
                drop(future);
            } else if st.tasks[slot].live {
                st.tasks[slot].future = Some(future);
            } else {
                // Aborted while it was polled.
                st.free.push(slot);
                drop(st);
                drop(future);
            }
        }
        match self.shared.lock().overflow.take() {
            Some(why) => Err(Runaway(why)),
            None => Ok(()),
        }
    }

    /// The earliest armed timer's deadline on the node's clock, if any.
    pub fn next_deadline(&self) -> Option<u64> {
        self.shared.lock().timers.keys().next().map(|k| k.0)
    }

    /// Whether the node has a task that has not ended.
    pub fn has_tasks(&self) -> bool {
        self.shared.lock().tasks.iter().any(|t| t.live)
    }

    /// Drops every task and timer (a crash): nothing of the node's volatile state is left, and
    /// a waker kept from before wakes nothing. The local time stays.
    pub fn clear(&self) {
        let (futures, timers) = {
            let mut st = self.shared.lock();
            st.generation += 1;
            st.free.clear();
            let tasks = std::mem::take(&mut st.tasks);
            let timers = std::mem::take(&mut st.timers);
            (tasks, timers)
        };
        self.shared.woken_queue().clear();
        // Dropped with the executor current and no lock held: a future's drop may disarm its
        // timers or wake another task (of the old generation: nothing happens).
        let current = Entered::enter(&self.shared);
        drop(futures);
        drop(timers);
        drop(current);
    }
}

/// This thread's current executor for as long as it lives; the one before is current again
/// after, even when a task panicked.
struct Entered(Option<Arc<Shared>>);

impl Entered {
    fn enter(shared: &Arc<Shared>) -> Entered {
        Entered(CURRENT.with(|c| c.replace(Some(shared.clone()))))
    }
}

impl Drop for Entered {
    fn drop(&mut self) {
        let previous = self.0.take();
        CURRENT.with(|c| *c.borrow_mut() = previous);
    }
}

impl Drop for Executor {
    fn drop(&mut self) {
        self.clear();
    }
}

/// Aborts the task in `slot` if it is still of `generation` (a [`crate::task::JoinHandle`]'s
/// `abort`): its future is dropped at once, or after its poll if it is being polled.
pub(crate) fn abort(shared: &Arc<Shared>, slot: usize, generation: u64) {
    let future = {
        let mut st = shared.lock();
        if st.generation != generation {
            return;
        }
        match st.tasks.get_mut(slot) {
            Some(s) if s.live => {
                s.live = false;
                s.waker = None;
                let f = s.future.take();
                if f.is_some() {
                    st.free.push(slot);
                }
                f
            }
            _ => None,
        }
    };
    drop(future);
}

/// Spawns `future` on the current node; returns what a handle needs to abort it later.
pub(crate) fn spawn_tracked(future: BoxFuture) -> (Arc<Shared>, Option<(usize, u64)>) {
    let shared = current();
    let at = shared.spawn(future);
    (shared, at)
}
