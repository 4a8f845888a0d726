//! `leasesim`: the command-line tool. Everything lives in the library's `cli` module so that
//! tests can drive it in-process; this file only connects it to the process: the signals, and
//! output streams that neither deadlock against the progress bar nor fail on a closed pipe.

use std::io::Write;

/// An output stream that ends quietly when its reader has gone (`leasesim run ... | head -1`):
/// the rest of the output is dropped, and the command still ends with its own exit code.
struct QuietPipe<W: Write> {
    inner: W,
    closed: bool,
}

impl<W: Write> QuietPipe<W> {
    fn absorb(&mut self, r: std::io::Result<()>) -> std::io::Result<()> {
        match r {
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {
                self.closed = true;
                Ok(())
            }
            r => r,
        }
    }
}

impl<W: Write> Write for QuietPipe<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if !self.closed {
            let r = self.inner.write_all(buf);
            self.absorb(r)?;
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        if self.closed {
            return Ok(());
        }
        let r = self.inner.flush();
        self.absorb(r)
    }
}

fn main() -> std::process::ExitCode {
    leasesim_cli::interrupt::install();
    // Neither stream is locked for the whole run: the progress bar draws on standard error from
    // the sweep's threads, and a lock held here would deadlock it.
    let mut out = QuietPipe {
        inner: std::io::stdout(),
        closed: false,
    };
    let mut err = QuietPipe {
        inner: std::io::stderr(),
        closed: false,
    };
    let code = leasesim_cli::main_with(std::env::args().collect(), &mut out, &mut err);
    let _ = out.flush();
    leasesim_cli::interrupt::run_cleanups();
    std::process::ExitCode::from(u8::try_from(code).unwrap_or(1))
}
