//! Ctrl-C (SIGINT), SIGTERM and SIGHUP. A command that can stop cleanly (a sweep) enters a
//! [`Graceful`] section: the first signal only sets the stop flag, and the command prints and
//! saves what it found so far, then exits with 128 + the signal. Outside such a section, or at a
//! second signal, the process runs its cleanups and exits at once.
//!
//! Whoever ends the process (the signal's thread, or the main thread returning) does it through
//! one lock, so the cleanups (a server to stop, a file to put in place) always run to their
//! end before the process exits; other threads' panics after that point print nothing, since
//! the resources they used are being taken away on purpose.

use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, Once};

static STOP: AtomicBool = AtomicBool::new(false);
static SIGNAL: AtomicI32 = AtomicI32::new(0);
static GRACEFUL: AtomicUsize = AtomicUsize::new(0);
/// Cleanups by registration number, so that one can be forgotten again ([`Registered`]).
static CLEANUPS: Mutex<Vec<(u64, Cleanup)>> = Mutex::new(Vec::new());
static NEXT_CLEANUP: AtomicU64 = AtomicU64::new(0);
/// Held by the thread that is ending the process, from its cleanups to its exit.
static EXITING: Mutex<()> = Mutex::new(());
static INSTALL: Once = Once::new();

/// Starts listening for the signals (once per process). Only the `leasesim` binary calls it:
/// a library user's process keeps its own signal handling.
pub fn install() {
    INSTALL.call_once(|| {
        use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
        let Ok(mut signals) = signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP]) else {
            // Without a listener the signals keep their default action: the process ends.
            return;
        };
        let _ = std::thread::Builder::new()
            .name("leasesim-signals".into())
            .spawn(move || {
                for signal in signals.forever() {
                    SIGNAL.store(signal, Ordering::SeqCst);
                    let first = !STOP.swap(true, Ordering::SeqCst);
                    if !(first && GRACEFUL.load(Ordering::SeqCst) > 0) {
                        exit_now();
                    }
                }
            });
    });
}

/// Runs the registered cleanups and exits with 128 + the signal.
pub fn exit_now() -> ! {
    exit(exit_code())
}

/// Ends the process with `code` after the registered cleanups; a thread that comes here while
/// another is ending the process waits for that one, which exits.
pub fn exit(code: i32) -> ! {
    let _ending = EXITING.lock().unwrap_or_else(|p| p.into_inner());
    // From here on, a panic of another thread (a run whose server is being stopped) is noise.
    std::panic::set_hook(Box::new(|_| {}));
    run_cleanups();
    std::process::exit(code)
}

/// Whether a signal asked the process to stop.
pub fn signalled() -> bool {
    STOP.load(Ordering::SeqCst)
}

/// Runs and forgets every registered cleanup.
pub fn run_cleanups() {
    let taken = std::mem::take(&mut *cleanups());
    for (_, c) in taken.into_iter().rev() {
        c();
    }
}

type Cleanup = Box<dyn FnOnce() + Send>;

fn cleanups() -> std::sync::MutexGuard<'static, Vec<(u64, Cleanup)>> {
    CLEANUPS.lock().unwrap_or_else(|p| p.into_inner())
}

fn register(cleanup: impl FnOnce() + Send + 'static) -> u64 {
    let id = NEXT_CLEANUP.fetch_add(1, Ordering::Relaxed);
    cleanups().push((id, Box::new(cleanup)));
    id
}

/// Registers something to undo before the process exits on a signal (a temporary server, a
/// temporary directory). It also runs when [`run_cleanups`] is called on a normal exit.
pub fn on_exit(cleanup: impl FnOnce() + Send + 'static) {
    register(cleanup);
}

/// Registers a cleanup for as long as the returned value lives (a file being written, which a
/// signal must still name or remove): dropping the value forgets the cleanup unrun, so the
/// cleanups of finished files do not pile up in a process that runs many commands.
pub fn while_alive(cleanup: impl FnOnce() + Send + 'static) -> Registered {
    Registered(register(cleanup))
}

/// A cleanup registered by [`while_alive`]; dropping it forgets the cleanup.
#[must_use = "dropping it forgets the cleanup at once"]
pub struct Registered(u64);

impl Drop for Registered {
    fn drop(&mut self) {
        cleanups().retain(|(id, _)| *id != self.0);
    }
}

/// The exit code of a process stopped by the last signal: 128 + its number (130 for Ctrl-C).
pub fn exit_code() -> i32 {
    128 + match SIGNAL.load(Ordering::SeqCst) {
        0 => signal_hook::consts::SIGINT,
        s => s,
    }
}

/// A section in which the first signal asks the running command to stop instead of ending
/// the process.
pub struct Graceful(());

impl Graceful {
    /// Enters a section.
    pub fn enter() -> Graceful {
        GRACEFUL.fetch_add(1, Ordering::SeqCst);
        Graceful(())
    }

    /// The flag the first signal sets.
    pub fn stop(&self) -> &'static AtomicBool {
        &STOP
    }

    /// Whether a signal asked the command to stop.
    pub fn stopped(&self) -> bool {
        STOP.load(Ordering::SeqCst)
    }

    /// Whether an outer section holds too: then the command that entered that one decides
    /// what a signal ends, and an inner step (starting a server) only goes on to its end.
    pub fn nested(&self) -> bool {
        GRACEFUL.load(Ordering::SeqCst) > 1
    }
}

impl Drop for Graceful {
    fn drop(&mut self) {
        GRACEFUL.fetch_sub(1, Ordering::SeqCst);
    }
}
