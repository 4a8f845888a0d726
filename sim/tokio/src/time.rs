//! Time on the node's own clock: [`Instant`], [`sleep`], [`sleep_until`], [`timeout`],
//! [`timeout_at`], [`interval`], as tokio's `time` module has them.
//!
//! Every reading is the node's local clock at the input being handled (it does not move while
//! the node's tasks run: their work takes no simulated time), and every deadline is on that
//! clock: a node whose clock runs fast sees its timers fire early in true time, one whose clock
//! was stepped sees them fire at the stepped time, a paused one sees them late.

use crate::executor::{self, Shared};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

pub use core::time::Duration;

/// A reading of the node's local monotonic clock, in nanoseconds since it started.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Instant(u64);

impl Instant {
    /// The node's clock now.
    pub fn now() -> Instant {
        Instant(executor::current().now())
    }

    /// The reading of `nanos` nanoseconds on the node's clock (for a host, or a test).
    pub fn from_nanos(nanos: u64) -> Instant {
        Instant(nanos)
    }

    /// Nanoseconds on the node's clock.
    pub fn as_nanos(self) -> u64 {
        self.0
    }

    /// How long since `earlier`; zero if `earlier` is later (as tokio's saturates).
    pub fn duration_since(self, earlier: Instant) -> Duration {
        self.saturating_duration_since(earlier)
    }

    /// How long since `earlier`, or `None` if it is later.
    pub fn checked_duration_since(self, earlier: Instant) -> Option<Duration> {
        self.0.checked_sub(earlier.0).map(Duration::from_nanos)
    }

    /// How long since `earlier`; zero if it is later.
    pub fn saturating_duration_since(self, earlier: Instant) -> Duration {
        Duration::from_nanos(self.0.saturating_sub(earlier.0))
    }

    /// How long since this reading, on the node's clock now.
    pub fn elapsed(self) -> Duration {
        Instant::now().saturating_duration_since(self)
    }

    /// The reading `d` later, if it fits.
    pub fn checked_add(self, d: Duration) -> Option<Instant> {
        u64::try_from(d.as_nanos())
            .ok()
            .and_then(|n| self.0.checked_add(n))
            .map(Instant)
    }

    /// The reading `d` earlier, if it is not before the clock's start.
    pub fn checked_sub(self, d: Duration) -> Option<Instant> {
        u64::try_from(d.as_nanos())
            .ok()
            .and_then(|n| self.0.checked_sub(n))
            .map(Instant)
    }

    fn plus(self, d: Duration) -> Instant {
        self.checked_add(d).unwrap_or(Instant(u64::MAX))
    }
}

impl std::ops::Add<Duration> for Instant {
    type Output = Instant;
    fn add(self, d: Duration) -> Instant {
        self.plus(d)
    }
}

impl std::ops::AddAssign<Duration> for Instant {
    fn add_assign(&mut self, d: Duration) {
        *self = self.plus(d);
    }
}

impl std::ops::Sub<Duration> for Instant {
    type Output = Instant;
    fn sub(self, d: Duration) -> Instant {
        self.checked_sub(d).unwrap_or(Instant(0))
    }
}

impl std::ops::Sub<Instant> for Instant {
    type Output = Duration;
    fn sub(self, earlier: Instant) -> Duration {
        self.saturating_duration_since(earlier)
    }
}

/// A future that completes when the node's clock reaches its deadline.
pub struct Sleep {
    deadline: Instant,
    armed: Option<(Arc<Shared>, (u64, u64))>,
}

impl Sleep {
    /// Its deadline on the node's clock.
    pub fn deadline(&self) -> Instant {
        self.deadline
    }

    /// Whether the node's clock has reached the deadline.
    pub fn is_elapsed(&self) -> bool {
        Instant::now() >= self.deadline
    }

    /// Moves the deadline (the sleep is armed again at its next poll).
    pub fn reset(mut self: Pin<&mut Self>, deadline: Instant) {
        self.disarm();
        self.deadline = deadline;
    }

    fn disarm(&mut self) {
        if let Some((shared, key)) = self.armed.take() {
            shared.disarm(key);
        }
    }
}

impl Future for Sleep {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let shared = executor::current();
        if shared.now() >= self.deadline.0 {
            self.disarm();
            return Poll::Ready(());
        }
        // The end of the clock (a sleep for `Duration::MAX`, say): it never comes, and arms
        // nothing that would wake the node.
        if self.deadline.0 == u64::MAX {
            return Poll::Pending;
        }
        let still_armed = match &self.armed {
            Some((s, key)) => s.rearm(*key, cx.waker()),
            None => false,
        };
        if !still_armed {
            let key = shared.arm(self.deadline.0, cx.waker().clone());
            self.armed = Some((shared, key));
        }
        Poll::Pending
    }
}

impl Drop for Sleep {
    fn drop(&mut self) {
        self.disarm();
    }
}

/// Waits until `duration` has passed on the node's clock.
pub fn sleep(duration: Duration) -> Sleep {
    sleep_until(Instant::now().plus(duration))
}

/// Waits until the node's clock reads `deadline`.
pub fn sleep_until(deadline: Instant) -> Sleep {
    Sleep {
        deadline,
        armed: None,
    }
}

/// Errors of this module.
pub mod error {
    /// A [`super::timeout`] whose deadline came first.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub struct Elapsed(pub(super) ());

    impl std::fmt::Display for Elapsed {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("deadline has elapsed")
        }
    }

    impl std::error::Error for Elapsed {}
}

/// A future with a deadline: its value, or [`error::Elapsed`] once the node's clock reaches
/// the deadline first.
pub struct Timeout<F> {
    future: Pin<Box<F>>,
    sleep: Sleep,
}

impl<F> Timeout<F> {
    /// The future it waits for.
    pub fn get_ref(&self) -> &F {
        &self.future
    }
}

impl<F: Future> Future for Timeout<F> {
    type Output = Result<F::Output, error::Elapsed>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        // The future first, as tokio does: a value ready at the deadline is not lost.
        if let Poll::Ready(v) = self.future.as_mut().poll(cx) {
            return Poll::Ready(Ok(v));
        }
        match Pin::new(&mut self.sleep).poll(cx) {
            Poll::Ready(()) => Poll::Ready(Err(error::Elapsed(()))),
            Poll::Pending => Poll::Pending,
        }
    }
}

/// Waits for `future` for at most `duration` on the node's clock.
pub fn timeout<F: Future>(duration: Duration, future: F) -> Timeout<F> {
    Timeout {
        future: Box::pin(future),
        sleep: sleep(duration),
    }
}

/// Waits for `future` until the node's clock reads `deadline`.
pub fn timeout_at<F: Future>(deadline: Instant, future: F) -> Timeout<F> {
    Timeout {
        future: Box::pin(future),
        sleep: sleep_until(deadline),
    }
}

/// What an [`Interval`] does with ticks it missed (the node was paused, or busy).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Default)]
pub enum MissedTickBehavior {
    /// Fires the missed ticks at once, one after the other (tokio's default).
    #[default]
    Burst,
    /// Fires one tick now, and the next a period after it.
    Delay,
    /// Fires one tick now, and the next at the next multiple of the period from the start.
    Skip,
}

/// Ticks every period on the node's clock.
pub struct Interval {
    next: Instant,
    period: Duration,
    missed: MissedTickBehavior,
    sleep: Option<Sleep>,
}

/// An interval whose first tick is at once, then every `period` (as tokio's).
pub fn interval(period: Duration) -> Interval {
    interval_at(Instant::now(), period)
}

/// An interval whose first tick is at `start`, then every `period`.
pub fn interval_at(start: Instant, period: Duration) -> Interval {
    assert!(period > Duration::ZERO, "`period` must be non-zero.");
    Interval {
        next: start,
        period,
        missed: MissedTickBehavior::Burst,
        sleep: None,
    }
}

impl Interval {
    /// Waits for the next tick; gives the tick's scheduled reading.
    pub async fn tick(&mut self) -> Instant {
        std::future::poll_fn(|cx| self.poll_tick(cx)).await
    }

    /// Polls for the next tick.
    pub fn poll_tick(&mut self, cx: &mut Context<'_>) -> Poll<Instant> {
        let now = Instant::now();
        if now < self.next {
            let next = self.next;
            let sleep = self.sleep.get_or_insert_with(|| sleep_until(next));
            if sleep.deadline() != next {
                *sleep = sleep_until(next);
            }
            return match Pin::new(sleep).poll(cx) {
                Poll::Ready(()) => self.fire(Instant::now()),
                Poll::Pending => Poll::Pending,
            };
        }
        self.fire(now)
    }

    fn fire(&mut self, now: Instant) -> Poll<Instant> {
        self.sleep = None;
        let tick = self.next;
        self.next = match self.missed {
            MissedTickBehavior::Burst => tick.plus(self.period),
            MissedTickBehavior::Delay => now.plus(self.period),
            MissedTickBehavior::Skip => {
                let p = self.period.as_nanos().max(1);
                let behind = u128::from(now.0.saturating_sub(tick.0));
                let periods = behind / p + 1;
                let step = u64::try_from(periods * p).unwrap_or(u64::MAX);
                Instant(tick.0.saturating_add(step))
            }
        };
        Poll::Ready(tick)
    }

    /// Starts the period over from now: the next tick is a period away.
    pub fn reset(&mut self) {
        self.sleep = None;
        self.next = Instant::now().plus(self.period);
    }

    /// Its period.
    pub fn period(&self) -> Duration {
        self.period
    }

    /// What it does with missed ticks.
    pub fn missed_tick_behavior(&self) -> MissedTickBehavior {
        self.missed
    }

    /// Sets what it does with missed ticks.
    pub fn set_missed_tick_behavior(&mut self, behavior: MissedTickBehavior) {
        self.missed = behavior;
    }
}
