//! The one thread pool: runs numbered work items on a bounded number of threads, in chunks taken
//! from a shared counter, and stops early when asked. Every parallel command (sweep, matrix,
//! benchmark) goes through it, so the bound on threads and the handling of a thread that cannot
//! be started live in one place.
//!
//! A thread costs address space before it does any work: its stack, and (with glibc) a malloc
//! arena of 64 MiB reserved at its first allocation. Under an address-space limit (`ulimit -v`)
//! threads that start but cannot allocate end the process in an allocation failure, whatever
//! the caller does; so the pool starts no more threads than the room left under the limit
//! holds ([`room`]), and does with the threads that did start (at least the calling thread).

use std::ops::Range;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// Most threads any command starts: far more than a machine has cores, far fewer than would
/// exhaust memory or the process's thread limit.
pub const THREADS_MAX: usize = 1024;

/// The stack each thread is given: Rust's default, set here so that `RUST_MIN_STACK` cannot make
/// every thread reserve more (the runs recurse little; the sweep's threads never needed more).
pub const STACK_BYTES: usize = 2 << 20;
/// The address space a thread is counted to need: its stack, the malloc arena glibc reserves for
/// it (64 MiB) and room for its runs' own memory.
pub const THREAD_BYTES: u64 = 96 << 20;
/// The address space left to the calling thread for its own work (results, reports) when the
/// pool counts how many threads fit.
pub const CALLER_BYTES: u64 = 64 << 20;

/// How many threads fit in the address space this process may still take, when a limit is set
/// (`ulimit -v`, Linux's `/proc/self/limits`): the room under the limit, less
/// [`CALLER_BYTES`], over [`THREAD_BYTES`]. `None` when there is no limit or it cannot be read.
pub fn room() -> Option<usize> {
    let limits = std::fs::read_to_string("/proc/self/limits").ok()?;
    let limit: u64 = limits
        .lines()
        .find(|l| l.starts_with("Max address space"))?
        .split_whitespace()
        .nth(3)?
        .parse()
        .ok()?;
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let used_kb: u64 = status
        .lines()
        .find(|l| l.starts_with("VmSize:"))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()?;
    let room = limit
        .saturating_sub(used_kb.saturating_mul(1024))
        .saturating_sub(CALLER_BYTES);
    Some(usize::try_from(room / THREAD_BYTES).unwrap_or(usize::MAX))
}

/// The cores this machine offers (1 when it cannot say).
pub fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// How many threads to use: `requested` (every core when `None`), refused above
/// [`THREADS_MAX`] or at 0, never more than there are `chunks` of work.
pub fn threads(requested: Option<usize>, chunks: u64) -> Result<usize, String> {
    let n = match requested {
        Some(0) => return Err("--jobs must be at least 1".into()),
        Some(n) if n > THREADS_MAX => {
            return Err(format!(
                "--jobs {n} is more than {THREADS_MAX} threads; leasesim's runs are CPU-bound, so more threads than cores gain nothing"
            ))
        }
        Some(n) => n,
        None => cores(),
    };
    Ok(n.min(usize::try_from(chunks.max(1)).unwrap_or(usize::MAX)))
}

/// Work handed out in chunks of consecutive item numbers.
pub struct Chunks<'a> {
    next: AtomicU64,
    total: u64,
    chunk: u64,
    stop: &'a AtomicBool,
}

impl<'a> Chunks<'a> {
    /// Items `0..total` in chunks of `chunk` (at least 1); no chunk is handed out once `stop`
    /// is set.
    pub fn new(total: u64, chunk: u64, stop: &'a AtomicBool) -> Chunks<'a> {
        Chunks {
            next: AtomicU64::new(0),
            total,
            chunk: chunk.max(1),
            stop,
        }
    }

    /// The next chunk: its index and its items; `None` when the work is done or stopped.
    pub fn take(&self) -> Option<(u64, Range<u64>)> {
        if self.stopped() {
            return None;
        }
        let begin = self.next.fetch_add(self.chunk, Ordering::Relaxed);
        (begin < self.total).then(|| {
            (
                begin / self.chunk,
                begin..(begin + self.chunk).min(self.total),
            )
        })
    }

    /// Whether a stop was asked for: a worker checks it between items.
    pub fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    /// How many chunks there are in all.
    pub fn count(&self) -> u64 {
        self.total.div_ceil(self.chunk)
    }
}

/// Runs `worker` on `threads` threads (at least one) and returns what each returned: as many
/// results as threads ran, which the caller reports. No more threads are started than
/// [`room`] holds under an address-space limit; a thread the system refuses to start is done
/// without: the work goes to the others, and when none can be started the calling thread does
/// it all. `worker` gets the thread's number.
pub fn run<T: Send>(threads: usize, worker: impl Fn(usize) -> T + Sync) -> Vec<T> {
    let threads = match room() {
        Some(fit) => threads.min(fit),
        None => threads,
    };
    if threads <= 1 {
        // One thread is this one: no thread to start (the matrix runs a one-thread sweep per
        // cell, on the pool's own threads).
        return vec![worker(0)];
    }
    let worker = &worker;
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads.max(1))
            .map_while(|i| {
                std::thread::Builder::new()
                    .name(format!("leasesim-{i}"))
                    .stack_size(STACK_BYTES)
                    .spawn_scoped(s, move || worker(i))
                    .ok()
            })
            .collect();
        if handles.is_empty() {
            return vec![worker(0)];
        }
        handles
            .into_iter()
            .map(|h| match h.join() {
                Ok(t) => t,
                // A panic in a worker is a bug of leasesim's: carry it to the caller as is.
                Err(p) => std::panic::resume_unwind(p),
            })
            .collect()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn threads_are_bounded_by_the_limit_and_the_work() {
        assert!(threads(Some(0), 10).is_err());
        assert!(threads(Some(THREADS_MAX + 1), 10).is_err());
        assert!(threads(Some(usize::MAX), 10).is_err());
        assert_eq!(threads(Some(64), 3), Ok(3));
        assert_eq!(threads(Some(2), 0), Ok(1));
        assert_eq!(threads(Some(THREADS_MAX), u64::MAX), Ok(THREADS_MAX));
    }

    #[test]
    fn chunks_cover_the_work_once_and_stop_when_asked() {
        let stop = AtomicBool::new(false);
        let chunks = Chunks::new(10, 4, &stop);
        assert_eq!(chunks.count(), 3);
        let seen: Vec<Range<u64>> = run(3, |_| {
            let mut mine = Vec::new();
            while let Some((_, r)) = chunks.take() {
                mine.push(r);
            }
            mine
        })
        .into_iter()
        .flatten()
        .collect();
        let mut items: Vec<u64> = seen.into_iter().flatten().collect();
        items.sort_unstable();
        assert_eq!(items, (0..10).collect::<Vec<_>>());
        let stopped = Chunks::new(10, 4, &stop);
        stop.store(true, Ordering::Relaxed);
        assert!(stopped.take().is_none());
    }
}
