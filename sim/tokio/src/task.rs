//! Tasks: [`spawn`], [`JoinHandle`], [`yield_now`], as tokio's `task` module has them.

use crate::executor::{self, Shared};
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};

/// Why a task's handle has no value: the task was aborted (or its node crashed).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JoinError(());

impl JoinError {
    /// Whether the task was cancelled (aborted, or dropped with its node): always, here.
    pub fn is_cancelled(&self) -> bool {
        true
    }

    /// Whether the task panicked. A panic in a simulated task ends the run instead, so this
    /// is never true; it is here so that code written for tokio compiles unchanged.
    pub fn is_panic(&self) -> bool {
        false
    }
}

impl std::fmt::Display for JoinError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("task was cancelled")
    }
}

impl std::error::Error for JoinError {}

struct Join<T> {
    value: Option<Result<T, JoinError>>,
    waiter: Option<Waker>,
    done: bool,
}

/// Fills the handle's slot when the task ends, or with a cancellation when it is dropped
/// before (aborted, or its node crashed).
struct Completer<T> {
    join: Arc<Mutex<Join<T>>>,
}

impl<T> Completer<T> {
    fn complete(&self, value: Result<T, JoinError>) {
        let waiter = {
            let mut j = self.join.lock().unwrap_or_else(|p| p.into_inner());
            if j.done {
                return;
            }
            j.done = true;
            j.value = Some(value);
            j.waiter.take()
        };
        if let Some(w) = waiter {
            w.wake();
        }
    }
}

impl<T> Drop for Completer<T> {
    fn drop(&mut self) {
        self.complete(Err(JoinError(())));
    }
}

/// A spawned task's handle: awaiting it gives the task's value; dropping it detaches the task,
/// which runs on.
pub struct JoinHandle<T> {
    join: Arc<Mutex<Join<T>>>,
    task: Option<(Arc<Shared>, usize, u64)>,
}

impl<T> JoinHandle<T> {
    /// Cancels the task: it is dropped at its next await point (at once if it is not being
    /// polled), and the handle gives a cancelled [`JoinError`].
    pub fn abort(&self) {
        if self.is_finished() {
            return;
        }
        if let Some((shared, slot, generation)) = &self.task {
            executor::abort(shared, *slot, *generation);
        }
    }

    /// Whether the task has ended (or was cancelled).
    pub fn is_finished(&self) -> bool {
        self.join.lock().unwrap_or_else(|p| p.into_inner()).done
    }
}

impl<T> Future for JoinHandle<T> {
    type Output = Result<T, JoinError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut j = self.join.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(v) = j.value.take() {
            return Poll::Ready(v);
        }
        if j.done {
            // Taken by an earlier poll: a handle polled after it completed, as tokio's panics.
            return Poll::Ready(Err(JoinError(())));
        }
        j.waiter = Some(cx.waker().clone());
        Poll::Pending
    }
}

/// Spawns a task on the current node, as `tokio::spawn` does: it runs beside the caller and
/// is polled whenever it is woken; it ends with the node (a crash).
pub fn spawn<F>(future: F) -> JoinHandle<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    let join = Arc::new(Mutex::new(Join {
        value: None,
        waiter: None,
        done: false,
    }));
    let completer = Completer { join: join.clone() };
    let (shared, at) = executor::spawn_tracked(Box::pin(async move {
        let value = future.await;
        completer.complete(Ok(value));
    }));
    JoinHandle {
        join,
        task: at.map(|(slot, generation)| (shared, slot, generation)),
    }
}

/// Yields to the node's other woken tasks once, as `tokio::task::yield_now` does.
pub async fn yield_now() {
    struct YieldNow(bool);
    impl Future for YieldNow {
        type Output = ();
        fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
            if self.0 {
                return Poll::Ready(());
            }
            self.0 = true;
            cx.waker().wake_by_ref();
            Poll::Pending
        }
    }
    YieldNow(false).await
}
