//! A throwaway PostgreSQL server: `initdb` and `pg_ctl` from the operating system's
//! PostgreSQL, private to this process.
//!
//! - Its folder is made fresh with an unpredictable name and mode 0700 (`mkdtemp`'s way: a
//!   name that exists, a planted link among them, is never adopted), and given to the server's
//!   account without following a link. The server listens on a Unix socket in that folder only
//!   (mode 0700), and every connection must give a password drawn for this server alone
//!   (`scram-sha-256`), so no other local account can reach it, let alone as its superuser.
//! - A queue's SQL runs as `leasesim_run`, a role without superuser or any right outside the
//!   database `leasesim` (connect, and create its own schemas); the superuser (its own
//!   password) makes that role and is otherwise only for looking inside by hand.
//! - A watchdog process (`sh`, in a process group of its own so a terminal's Ctrl-C never
//!   reaches it) makes the folder itself (`mktemp -d`) and holds the other end of a pipe: when
//!   this process ends, however it ends (a normal exit, a signal, `kill -9`, even before it
//!   learnt the folder's name), the pipe closes and the watchdog stops the server and removes
//!   the folder. Stopping the server is closing that pipe and waiting for the watchdog.
//! - Run as root, the server's tools run as the `postgres` account (`initdb` refuses root).
//!
//! Starting is bounded (each tool has a deadline) and retried once when the first try fails;
//! a failure says what each try's tool and the server's own log said.

use postgres::{Client, NoTls};
use std::io::Write;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::{Duration, Instant};

/// The install command printed when PostgreSQL's server binaries are missing.
pub const INSTALL: &str = "apt-get install postgresql";

/// The role a queue's SQL runs as on a throwaway server.
pub const RUN_ROLE: &str = "leasesim_run";

/// The database a throwaway server's runs use.
pub const RUN_DATABASE: &str = "leasesim";

/// How long `initdb` may take, and `pg_ctl` to start the server: generous, because a busy
/// machine (builds, other servers starting) slows both by an order of magnitude.
const TOOL_LIMIT: Duration = Duration::from_secs(180);

/// Lines of a tool's output and of the server's log quoted when starting fails.
const QUOTED_LINES: usize = 6;

/// The watchdog: it makes the server's folder (fresh, mode 0700, an unpredictable name under
/// `$1`) and prints its path, then waits until leasesim's end of its standard input closes
/// (leasesim stopped the server, or ended however it ended), then stops the server at once and
/// removes the folder. Since it makes the folder, no moment of leasesim's life leaves one that
/// no watchdog will remove. `$2` is pg_ctl, `$3` the account to run it as (empty: ourselves). It
/// ignores the signals a terminal sends, and a closed output, so that nothing ends it before it
/// has cleaned up.
const WATCHDOG: &str = r#"trap '' INT HUP TERM QUIT PIPE
dir=$(mktemp -d "$1/leasesim-pg-XXXXXXXXXXXXXXXX") || exit 1
printf '%s\n' "$dir"
read -r _ignored
if [ -f "$dir/data/postmaster.pid" ]; then
  if [ -n "$3" ]; then
    runuser -u "$3" -- "$2" -D "$dir/data" -m immediate -w -t 60 stop
  else
    "$2" -D "$dir/data" -m immediate -w -t 60 stop
  fi
fi >/dev/null 2>&1
rm -rf -- "$dir"
"#;

/// A running throwaway server.
pub struct Server {
    dir: PathBuf,
    bin: PathBuf,
    /// Run its tools as this account (`None`: as ourselves).
    account: Option<Account>,
    /// `leasesim_run`'s password.
    password: String,
    /// The superuser's password (kept for [`Server::superuser_url`]; the SQL never runs as it).
    superuser: String,
    /// The watchdog, and the pipe whose closing tells it to clean up.
    watchdog: Option<(Child, ChildStdin)>,
}

/// An operating-system account by name and numbers.
#[derive(Clone, Debug)]
struct Account {
    name: String,
    uid: u32,
    gid: u32,
}

impl Account {
    fn lookup(name: &str) -> Result<Account, String> {
        let number = |flag: &str| -> Option<u32> {
            let out = Command::new("id").args([flag, name]).output().ok()?;
            out.status.success().then_some(())?;
            String::from_utf8_lossy(&out.stdout).trim().parse().ok()
        };
        match (number("-u"), number("-g")) {
            (Some(uid), Some(gid)) => Ok(Account {
                name: name.to_string(),
                uid,
                gid,
            }),
            _ => Err(format!(
                "running as root, the throwaway PostgreSQL must run as the account `{name}` (initdb refuses root), and there is no such account; create it (`useradd --system postgres`) or give --database-url"
            )),
        }
    }
}

/// Where PostgreSQL's server binaries are: `pg_config --bindir`, else the newest
/// `/usr/lib/postgresql/<version>/bin` that has `initdb`.
pub fn bindir() -> Result<PathBuf, String> {
    let from_config = Command::new("pg_config")
        .arg("--bindir")
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()))
        .filter(|d| d.join("initdb").exists() && d.join("pg_ctl").exists());
    if let Some(d) = from_config {
        return Ok(d);
    }
    let mut versions: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .map(|rd| rd.flatten().map(|e| e.path().join("bin")).collect())
        .unwrap_or_default();
    versions.retain(|d| d.join("initdb").exists() && d.join("pg_ctl").exists());
    versions.sort();
    versions.pop().ok_or_else(|| {
        format!("PostgreSQL's server binaries (initdb, pg_ctl) were not found; install them with `{INSTALL}`, or give a server with --database-url")
    })
}

/// Whether this process runs as root.
fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

/// `n` random bytes as hexadecimal, for passwords.
fn random_hex(n: usize) -> Result<String, String> {
    leasesim::files::random_hex(n).map_err(|e| e.to_string())
}

impl Server {
    /// Starts a server in a fresh private folder; a first try that fails is retried once, and
    /// a second failure says what both tries found.
    pub fn start() -> Result<Server, String> {
        let bin = bindir()?;
        let account = if is_root() {
            Some(Account::lookup("postgres")?)
        } else {
            None
        };
        match Server::start_once(&bin, &account) {
            Ok(s) => Ok(s),
            Err(first) => Server::start_once(&bin, &account).map_err(|second| {
                format!("the throwaway PostgreSQL did not start, twice: {first}; then {second}")
            }),
        }
    }

    fn start_once(bin: &Path, account: &Option<Account>) -> Result<Server, String> {
        // From here on, dropping the watchdog's pipe (an error below, or `server` dropped)
        // stops and removes everything.
        let (watchdog, dir) = Server::watch(bin, account)?;
        let server = Server {
            dir,
            bin: bin.to_path_buf(),
            account: account.clone(),
            password: random_hex(16)?,
            superuser: random_hex(16)?,
            watchdog: Some(watchdog),
        };
        server.give(&server.dir)?;
        let pwfile = server.dir.join("pwfile");
        server.write_private(&pwfile, &server.superuser)?;
        let data = server.dir.join("data");
        let initdb = server.tool(
            "initdb",
            &[
                "-D".as_ref(),
                data.as_os_str(),
                "-A".as_ref(),
                "scram-sha-256".as_ref(),
                "--pwfile".as_ref(),
                pwfile.as_os_str(),
                "-U".as_ref(),
                "postgres".as_ref(),
                "-E".as_ref(),
                "UTF8".as_ref(),
                "--no-sync".as_ref(),
                "--no-instructions".as_ref(),
            ],
        );
        let _ = std::fs::remove_file(&pwfile);
        initdb?;
        let options = format!(
            "-k {} -c listen_addresses='' -c unix_socket_permissions=0700 -F -c full_page_writes=off -c synchronous_commit=off -c max_connections=200",
            server.dir.display()
        );
        let log = server.dir.join("log");
        let limit = TOOL_LIMIT.as_secs().to_string();
        server
            .tool(
                "pg_ctl",
                &[
                    "-D".as_ref(),
                    data.as_os_str(),
                    "-o".as_ref(),
                    options.as_ref(),
                    "-l".as_ref(),
                    log.as_os_str(),
                    "-w".as_ref(),
                    "-t".as_ref(),
                    limit.as_ref(),
                    "start".as_ref(),
                ],
            )
            .map_err(|e| format!("{e}; the server's log says: {}", tail(&log)))?;
        server.make_run_role()?;
        Ok(server)
    }

    /// Starts the watchdog (see [`WATCHDOG`]) and reads the folder it made in the temporary
    /// folder: a new folder of ours, not a link.
    fn watch(
        bin: &Path,
        account: &Option<Account>,
    ) -> Result<((Child, ChildStdin), PathBuf), String> {
        let tmp = std::env::temp_dir();
        let user = account.as_ref().map_or("", |a| a.name.as_str());
        let mut child = Command::new("/bin/sh")
            .arg("-c")
            .arg(WATCHDOG)
            .arg("leasesim-pg-watchdog")
            .arg(&tmp)
            .arg(bin.join("pg_ctl"))
            .arg(user)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()
            .map_err(|e| format!("cannot start /bin/sh to watch the throwaway PostgreSQL: {e}"))?;
        let stdin = child
            .stdin
            .take()
            .ok_or("the watchdog has no standard input")?;
        let out = child.stdout.take().ok_or("the watchdog has no output")?;
        // One line, then the watchdog writes nothing more (bounded: it ends or it prints).
        let mut line = String::new();
        let read = std::io::BufRead::read_line(&mut std::io::BufReader::new(out), &mut line);
        let dir = PathBuf::from(line.trim_end_matches('\n'));
        let made = read.is_ok()
            && dir.parent() == Some(tmp.as_path())
            && std::fs::symlink_metadata(&dir).is_ok_and(|m| m.is_dir());
        if !made {
            drop(stdin);
            let _ = child.wait();
            return Err(format!(
                "cannot create a folder in {} (mktemp -d failed)",
                tmp.display()
            ));
        }
        Ok(((child, stdin), dir))
    }

    /// Gives `path` to the server's account (when there is one), never through a link.
    fn give(&self, path: &Path) -> Result<(), String> {
        let Some(a) = &self.account else {
            return Ok(());
        };
        std::os::unix::fs::lchown(path, Some(a.uid), Some(a.gid)).map_err(|e| {
            format!(
                "cannot give {} to the account `{}`: {e}",
                path.display(),
                a.name
            )
        })
    }

    /// Writes `text` to a new file (mode 0600) that no one else can have made first.
    fn write_private(&self, path: &Path, text: &str) -> Result<(), String> {
        let written =
            leasesim::files::create_private(path).and_then(|mut f| f.write_all(text.as_bytes()));
        written.map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        self.give(path)
    }

    /// Makes the role the SQL runs as, and its database, as the superuser; takes every right
    /// on anything else away from everyone.
    fn make_run_role(&self) -> Result<(), String> {
        let admin = |db: &str| {
            Client::connect(&self.superuser_url(db), NoTls).map_err(|e| {
                // The client's own words are terse ("error connecting to server"): its cause
                // says what went wrong.
                let cause = std::error::Error::source(&e)
                    .map_or(String::new(), |c| format!(" ({c})"));
                format!(
                    "cannot connect to the throwaway PostgreSQL: {e}{cause}; the server's log says: {}",
                    tail(&self.dir.join("log"))
                )
            })
        };
        let sql = |c: &mut Client, text: &str| {
            c.batch_execute(text).map_err(|e| {
                format!(
                    "cannot prepare the throwaway PostgreSQL: {}",
                    crate::db::describe(&e, "", 0, None)
                )
            })
        };
        let mut c = admin("postgres")?;
        // One statement at a time: `CREATE DATABASE` runs outside a transaction.
        for text in [
            format!(
                "CREATE ROLE {RUN_ROLE} LOGIN PASSWORD '{}' NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS",
                self.password
            ),
            format!("CREATE DATABASE {RUN_DATABASE}"),
            format!("REVOKE ALL ON DATABASE {RUN_DATABASE}, postgres, template1 FROM PUBLIC"),
            format!("GRANT CONNECT, CREATE ON DATABASE {RUN_DATABASE} TO {RUN_ROLE}"),
        ] {
            sql(&mut c, &text)?;
        }
        let mut c = admin(RUN_DATABASE)?;
        sql(&mut c, "REVOKE ALL ON SCHEMA public FROM PUBLIC;")?;
        // What `sql check` cannot see (a clock reading built at run time, in a function's
        // `execute`) the server refuses: the run's role may not call the real clock's or
        // randomness's functions, and such a call ends the run as a store error naming the
        // statement. (`now()` is the run schema's own, which comes first on its search path.)
        let names = crate::file::CLOCK_FUNCTIONS
            .iter()
            .chain(crate::file::RANDOM_FUNCTIONS)
            .chain(&["now"])
            // leasesim reads a connection's process id itself (to see who waits for whom).
            .filter(|f| **f != "pg_backend_pid")
            .map(|f| format!("'{f}'"))
            .collect::<Vec<_>>()
            .join(", ");
        sql(
            &mut c,
            &format!(
                "DO $revoke$ DECLARE f regprocedure; BEGIN
                   FOR f IN SELECT p.oid::regprocedure FROM pg_catalog.pg_proc p
                            WHERE p.pronamespace = 'pg_catalog'::regnamespace
                              AND p.proname IN ({names}) LOOP
                     EXECUTE format('REVOKE EXECUTE ON FUNCTION %s FROM PUBLIC', f);
                   END LOOP;
                 END $revoke$;"
            ),
        )
    }

    /// Runs one of PostgreSQL's tools as the server's account, within [`TOOL_LIMIT`]; its
    /// last lines of output when it fails.
    fn tool(&self, name: &str, args: &[&std::ffi::OsStr]) -> Result<(), String> {
        let exe = self.bin.join(name);
        let mut cmd = match &self.account {
            Some(a) => {
                let mut c = Command::new("runuser");
                c.args(["-u", &a.name, "--"]).arg(&exe);
                c
            }
            None => Command::new(&exe),
        };
        // Its output goes to a file of the server's folder: a pipe that no one reads while
        // the tool waits would stall it.
        let out_path = self.dir.join(format!("{name}.out"));
        let out = leasesim::files::create_private(&out_path)
            .map_err(|e| format!("cannot write {}: {e}", out_path.display()))?;
        let err = out
            .try_clone()
            .map_err(|e| format!("cannot write {}: {e}", out_path.display()))?;
        let mut child = cmd
            .args(args)
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            // Apart from the terminal's process group: a Ctrl-C is leasesim's to handle.
            .process_group(0)
            .spawn()
            .map_err(|e| format!("cannot run {}: {e}", exe.display()))?;
        #[allow(clippy::disallowed_methods)] // a bound on a real tool's time, not simulated time
        let started = Instant::now();
        let status = loop {
            match child.try_wait() {
                Ok(Some(status)) => break Ok(status),
                Ok(None) if started.elapsed() > TOOL_LIMIT => {
                    let _ = child.kill();
                    let _ = child.wait();
                    break Err(format!("did not finish within {} s", TOOL_LIMIT.as_secs()));
                }
                Ok(None) => std::thread::sleep(Duration::from_millis(20)),
                Err(e) => break Err(e.to_string()),
            }
        };
        let said = tail(&out_path);
        let _ = std::fs::remove_file(&out_path);
        match status {
            Ok(s) if s.success() => Ok(()),
            Ok(s) => Err(format!("{name} failed ({s}): {said}")),
            Err(why) => Err(format!("{name} {why}: {said}")),
        }
    }

    /// The connection string of the role a queue's SQL runs as, over the Unix socket.
    pub fn url(&self) -> String {
        format!(
            "host={} user={RUN_ROLE} dbname={RUN_DATABASE} password={} connect_timeout=60",
            self.dir.display(),
            self.password
        )
    }

    /// The connection string of the server's superuser, to database `db`: for looking inside
    /// the server by hand or from a test, never for a queue's SQL.
    pub fn superuser_url(&self, db: &str) -> String {
        format!(
            "host={} user=postgres dbname={db} password={} connect_timeout=60",
            self.dir.display(),
            self.superuser
        )
    }

    /// The folder it lives in (removed when it stops).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Stops the server at once and removes its folder: closes the watchdog's pipe and waits
    /// for the watchdog to finish (its `pg_ctl stop` is bounded).
    pub fn stop(&mut self) {
        if let Some((mut child, stdin)) = self.watchdog.take() {
            drop(stdin);
            let _ = child.wait();
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The last lines of a file, joined with ` | ` (or why it cannot be read).
fn tail(path: &Path) -> String {
    match std::fs::read(path) {
        Ok(bytes) => {
            let text = String::from_utf8_lossy(&bytes);
            let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
            let from = lines.len().saturating_sub(QUOTED_LINES);
            match lines[from..].join(" | ") {
                s if s.is_empty() => "no output".into(),
                s => s,
            }
        }
        Err(e) => format!("{} cannot be read: {e}", path.display()),
    }
}
