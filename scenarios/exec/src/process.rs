//! One long-lived process of a user's, and the exchange of one input for its outputs: each
//! input a JSON line on its standard input, answered by output lines on its standard output up
//! to `{"output": "done"}`, within a time limit and bounds on what it may write. Its standard
//! error is kept (the last lines) for the report of a failure.
//!
//! The process is private to leasesim: its own process group (a Ctrl-C at the terminal reaches
//! leasesim, which stops what it runs and then ends the process), killed when it is dropped or
//! leasesim exits on a signal, and told nothing of the real world but the inputs.

use serde_json::Value;
use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::process::CommandExt;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The longest line a process may write, in bytes.
pub const LINE_MAX: usize = 1 << 20;

/// The most output lines a process may write for one input (the machine contract's bound).
pub const OUTPUTS_MAX: usize = 4096;

/// The lines of its standard error kept for a failure's report.
const STDERR_KEPT: usize = 20;

/// The process protocol's version, which `hello` names.
pub const VERSION: u64 = 1;

/// Processes started by this program so far (all threads).
static STARTED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// How many processes this program has started so far: one per node slot and thread, and one
/// more per crash of a node, never one per run.
pub fn processes_started() -> u64 {
    STARTED.load(std::sync::atomic::Ordering::Relaxed)
}

/// The first input of every process.
pub fn hello() -> Value {
    serde_json::json!({"input": "hello", "protocol": "leasesim", "version": VERSION})
}

/// A command line: the program and its arguments, split at spaces (quotes group words); no
/// shell runs it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CommandLine {
    /// As the user wrote it.
    pub text: String,
    /// Its words.
    pub words: Vec<String>,
}

impl CommandLine {
    /// Splits `text` into words: spaces separate them, `'...'` and `"..."` group them.
    pub fn parse(text: &str) -> Result<CommandLine, String> {
        let mut words = Vec::new();
        let mut word = String::new();
        let mut quote = None;
        let mut any = false;
        for c in text.chars() {
            match (quote, c) {
                (None, '\'' | '"') => {
                    quote = Some(c);
                    any = true;
                }
                (Some(q), c) if c == q => quote = None,
                (None, c) if c.is_whitespace() => {
                    if any {
                        words.push(std::mem::take(&mut word));
                        any = false;
                    }
                }
                (_, c) => {
                    word.push(c);
                    any = true;
                }
            }
        }
        if quote.is_some() {
            return Err(format!("exec:{text}: a quote is never closed"));
        }
        if any {
            words.push(word);
        }
        if words.is_empty() {
            return Err("exec: needs a command, e.g. exec:python3 worker.py".into());
        }
        Ok(CommandLine {
            text: text.trim().to_string(),
            words,
        })
    }
}

/// One input's outputs (up to `done`), or why there are none.
enum Batch {
    Outputs(Vec<Value>),
    NotJson(String),
    TooMany,
    TooLong,
    Eof,
}

/// A running process.
pub struct Process {
    child: Arc<Mutex<Child>>,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
    watch: Arc<Watch>,
    stderr: Arc<Mutex<VecDeque<String>>>,
    command: String,
    _cleanup: leasesim::interrupt::Registered,
}

/// Why an exchange failed: said in one line, with what the process wrote on its standard
/// error last.
pub type Failure = String;

impl Process {
    /// Starts `cmd` and greets it (`hello`, which it must answer with its protocol version).
    pub fn start(cmd: &CommandLine, timeout: Duration) -> Result<Process, Failure> {
        let mut child = Command::new(&cmd.words[0])
            .args(&cmd.words[1..])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            // Python's string hashes (set order) drawn at start would differ per process.
            .env("PYTHONHASHSEED", "0")
            // Nor does it write compiled files beside the user's scripts.
            .env("PYTHONDONTWRITEBYTECODE", "1")
            .process_group(0)
            .spawn()
            .map_err(|e| format!("exec:{}: cannot start it: {e}", cmd.text))?;
        STARTED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().expect("piped");
        let stderr_pipe = child.stderr.take().expect("piped");
        let watch = Arc::new(Watch::default());
        let stderr = Arc::new(Mutex::new(VecDeque::new()));
        let kept = stderr.clone();
        std::thread::spawn(move || keep_tail(stderr_pipe, kept));
        let child = Arc::new(Mutex::new(child));
        let (w, c) = (watch.clone(), child.clone());
        std::thread::spawn(move || watchdog(&w, &c));
        let on_signal = child.clone();
        let cleanup = leasesim::interrupt::while_alive(move || {
            end_group(&mut on_signal.lock().unwrap_or_else(|p| p.into_inner()));
        });
        let mut p = Process {
            child,
            stdin,
            stdout: BufReader::new(stdout),
            watch,
            stderr,
            command: cmd.text.clone(),
            _cleanup: cleanup,
        };
        let out = p.exchange(&hello(), timeout)?;
        match out.first() {
            Some(h) if h["output"] == "hello" && h["version"] == VERSION => Ok(p),
            Some(h) if h["output"] == "hello" => Err(p.failure(&format!(
                "speaks version {} of the process protocol; this leasesim speaks {VERSION}",
                h["version"]
            ))),
            _ => {
                Err(p.failure("did not answer hello with {\"output\": \"hello\", \"version\": 1}"))
            }
        }
    }

    /// Writes `input` and reads its outputs up to `done` (which is not returned).
    pub fn exchange(&mut self, input: &Value, timeout: Duration) -> Result<Vec<Value>, Failure> {
        let mut line = input.to_string();
        line.push('\n');
        // The limit covers the write too: a process that reads nothing blocks it.
        self.watch.arm(timeout);
        let written = match self.stdin.as_mut() {
            Some(w) => w.write_all(line.as_bytes()).and_then(|_| w.flush()),
            None => Err(std::io::Error::other("its input is closed")),
        };
        if let Err(e) = written {
            self.watch.disarm();
            return Err(self.failure(&format!("cannot be written to ({e}): it has exited")));
        }
        let batch = read_batch(&mut self.stdout);
        self.watch.disarm();
        match batch {
            Batch::Outputs(out) => Ok(out),
            Batch::NotJson(text) => Err(self.failure(&format!(
                "wrote a line that is not a JSON object: {}",
                clip(&text)
            ))),
            Batch::TooMany => Err(self.failure(&format!(
                "wrote more than {OUTPUTS_MAX} outputs for one input"
            ))),
            Batch::TooLong => {
                Err(self.failure(&format!("wrote a line longer than {LINE_MAX} bytes")))
            }
            Batch::Eof if self.watch.fired.load(Ordering::SeqCst) => Err(self.failure(&format!(
                "wrote nothing for {:.1}s after the input {} (it was ended)",
                timeout.as_secs_f64(),
                input_name(input)
            ))),
            Batch::Eof => Err(self.failure(&format!("exited {}", self.exit_status()))),
        }
    }

    fn exit_status(&self) -> String {
        let mut child = self.child.lock().unwrap_or_else(|p| p.into_inner());
        // The pipe closed: it has exited or is about to.
        for _ in 0..50 {
            if let Ok(Some(s)) = child.try_wait() {
                return format!("({s})");
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        "(its output closed)".into()
    }

    /// `what`, naming the command, with the last lines of its standard error.
    pub fn failure(&self, what: &str) -> Failure {
        // The reader keeps up with a process that is still writing; give it a moment.
        std::thread::sleep(Duration::from_millis(5));
        let tail = self.stderr.lock().unwrap_or_else(|p| p.into_inner());
        let mut s = format!("exec:{}: {what}", self.command);
        if !tail.is_empty() {
            let lines: Vec<&str> = tail.iter().map(String::as_str).collect();
            s.push_str(&format!(
                "; its standard error ended with: {}",
                lines.join(" | ")
            ));
        }
        s
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        self.watch.gone.store(true, Ordering::SeqCst);
        // Closing its input asks it to end; it is killed in any case.
        self.stdin.take();
        let mut child = self.child.lock().unwrap_or_else(|p| p.into_inner());
        end_group(&mut child);
        let _ = child.wait();
    }
}

fn input_name(input: &Value) -> String {
    match (&input["input"], &input["now"]) {
        (Value::String(kind), Value::Number(now)) => format!("'{kind}' at local {now} ns"),
        (Value::String(kind), _) => format!("'{kind}'"),
        _ => "(unnamed)".into(),
    }
}

fn clip(s: &str) -> String {
    let mut cut: String = s.chars().take(200).collect();
    if cut.len() < s.len() {
        cut.push_str("...");
    }
    cut
}

/// The time limit of the exchange under way, kept by a thread of the process's own that ends a
/// process that stays silent past it (the run reads the process's output itself, one read per
/// line, with no hand-over between threads).
struct Watch {
    epoch: std::time::Instant,
    /// When the exchange under way must be answered by, in ns since `epoch`; 0 when idle.
    deadline: AtomicU64,
    fired: AtomicBool,
    gone: AtomicBool,
}

impl Default for Watch {
    fn default() -> Watch {
        Watch {
            #[allow(clippy::disallowed_methods)] // a real-time limit on a real process
            epoch: std::time::Instant::now(),
            deadline: AtomicU64::new(0),
            fired: AtomicBool::new(false),
            gone: AtomicBool::new(false),
        }
    }
}

impl Watch {
    fn now(&self) -> u64 {
        self.epoch.elapsed().as_nanos() as u64
    }
    fn arm(&self, timeout: Duration) {
        let at = self.now().saturating_add(timeout.as_nanos() as u64).max(1);
        self.deadline.store(at, Ordering::SeqCst);
    }
    fn disarm(&self) {
        self.deadline.store(0, Ordering::SeqCst);
    }
}

/// Ends the process and everything it started (its process group is its own): a wrapper such
/// as `uv run` or `npx` would otherwise leave the real worker holding the pipe open. The group
/// is ended with the system's `kill` (leasesim has no unsafe code to call `killpg` itself),
/// then the child directly, in case `kill` is missing.
fn end_group(child: &mut Child) {
    if let Ok(None) = child.try_wait() {
        let group = format!("-{}", child.id());
        let _ = Command::new("kill")
            .args(["-KILL", "--", &group])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
    let _ = child.kill();
}

/// How often the watchdog looks at the time limit.
const WATCH_EVERY: Duration = Duration::from_millis(20);

fn watchdog(w: &Watch, child: &Mutex<Child>) {
    // Bounded: it ends with its process (dropped, or ended here).
    while !w.gone.load(Ordering::SeqCst) {
        std::thread::sleep(WATCH_EVERY);
        let d = w.deadline.load(Ordering::SeqCst);
        if d != 0 && w.now() > d {
            w.fired.store(true, Ordering::SeqCst);
            end_group(&mut child.lock().unwrap_or_else(|p| p.into_inner()));
            return;
        }
    }
}

/// Reads one input's answer: the lines up to `done`.
fn read_batch(r: &mut BufReader<ChildStdout>) -> Batch {
    let mut out = Vec::new();
    // Bounded: each line is at most LINE_MAX bytes, the batch OUTPUTS_MAX lines; a silent
    // process is ended by its watchdog, which ends this read.
    loop {
        let mut buf = Vec::new();
        match r
            .by_ref()
            .take(LINE_MAX as u64 + 1)
            .read_until(b'\n', &mut buf)
        {
            Ok(0) | Err(_) => return Batch::Eof,
            Ok(_) if buf.len() > LINE_MAX => return Batch::TooLong,
            Ok(_) if buf.iter().all(u8::is_ascii_whitespace) => continue,
            Ok(_) => match serde_json::from_slice::<Value>(&buf) {
                Ok(v) if v["output"] == "done" => return Batch::Outputs(out),
                Ok(v @ Value::Object(_)) if out.len() < OUTPUTS_MAX => out.push(v),
                Ok(Value::Object(_)) => return Batch::TooMany,
                _ => return Batch::NotJson(String::from_utf8_lossy(&buf).trim_end().to_string()),
            },
        }
    }
}

/// Keeps the last lines of the process's standard error (each cut to a length), and drains the
/// rest, so that a process that writes much there never blocks on it.
fn keep_tail(stderr: impl Read, kept: Arc<Mutex<VecDeque<String>>>) {
    let mut r = BufReader::new(stderr);
    // Bounded: each read is at most a line of LINE_MAX bytes; the loop ends with the pipe.
    loop {
        let mut buf = Vec::new();
        match r.by_ref().take(LINE_MAX as u64).read_until(b'\n', &mut buf) {
            Ok(0) | Err(_) => return,
            Ok(_) => {
                let line = String::from_utf8_lossy(&buf).trim_end().to_string();
                let mut k = kept.lock().unwrap_or_else(|p| p.into_inner());
                if k.len() >= STDERR_KEPT {
                    k.pop_front();
                }
                k.push_back(clip(&line));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::CommandLine;

    #[test]
    fn a_command_line_splits_at_spaces_and_quotes_group_words() {
        let c = CommandLine::parse(r#"python3 "my worker.py" --x 'a b'"#).unwrap();
        assert_eq!(c.words, ["python3", "my worker.py", "--x", "a b"]);
        assert!(CommandLine::parse("  ").is_err());
        assert!(CommandLine::parse("python3 'oops").is_err());
    }
}
