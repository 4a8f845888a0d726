//! A throwaway PostgreSQL server: `initdb` and `pg_ctl` from the operating system's
//! PostgreSQL, in a temporary directory, listening on a Unix socket only, started as an
//! unprivileged user when leasesim runs as root (`initdb` refuses root), and stopped and removed
//! when the value is dropped (the command line also removes it on Ctrl-C and on a failure).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The install command printed when PostgreSQL's server binaries are missing.
pub const INSTALL: &str = "apt-get install postgresql";

/// A running throwaway server.
pub struct Server {
    dir: PathBuf,
    bin: PathBuf,
    /// Run its tools as this user (`None`: as ourselves).
    user: Option<String>,
    stopped: bool,
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

impl Server {
    /// Starts a server in a fresh temporary directory.
    pub fn start() -> Result<Server, String> {
        let bin = bindir()?;
        let user = is_root().then(|| "postgres".to_string());
        // A fresh folder of an unpredictable name, its owner's only: it is handed to the
        // server's user below, and a guessable name in the shared temporary folder could be a
        // link planted to a folder that would be handed over instead.
        let tmp = std::env::temp_dir();
        let dir = leasesim::files::private_dir(&tmp, "leasesim-pg-")
            .map_err(|e| format!("cannot create a folder in {}: {e}", tmp.display()))?;
        let server = Server {
            dir,
            bin,
            user,
            stopped: false,
        };
        if let Some(u) = &server.user {
            let chown = Command::new("chown")
                .arg(format!("{u}:"))
                .arg(&server.dir)
                .status();
            if !chown.is_ok_and(|s| s.success()) {
                return Err(format!(
                    "running as root, the throwaway PostgreSQL must run as the user `{u}` (initdb refuses root), and {} could not be given to it; create the user or give --database-url",
                    server.dir.display()
                ));
            }
        }
        let data = server.dir.join("data");
        server.tool(
            "initdb",
            &[
                "-D".as_ref(),
                data.as_os_str(),
                "-A".as_ref(),
                "trust".as_ref(),
                "-U".as_ref(),
                "postgres".as_ref(),
                "-E".as_ref(),
                "UTF8".as_ref(),
                "--no-sync".as_ref(),
            ],
        )?;
        let options = format!(
            "-k {} -c listen_addresses='' -F -c full_page_writes=off -c synchronous_commit=off -c max_connections=200",
            server.dir.display()
        );
        let log = server.dir.join("log");
        server.tool(
            "pg_ctl",
            &[
                "-D".as_ref(),
                data.as_os_str(),
                "-o".as_ref(),
                options.as_ref(),
                "-l".as_ref(),
                log.as_os_str(),
                "-w".as_ref(),
                "start".as_ref(),
            ],
        )?;
        Ok(server)
    }

    /// The connection string for the `postgres` database over its Unix socket.
    pub fn url(&self) -> String {
        format!("host={} user=postgres dbname=postgres", self.dir.display())
    }

    /// The directory it lives in (removed when it stops).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Runs one of PostgreSQL's tools, as the server's user.
    fn tool(&self, name: &str, args: &[&std::ffi::OsStr]) -> Result<(), String> {
        let exe = self.bin.join(name);
        let mut cmd = match &self.user {
            Some(u) => {
                let mut c = Command::new("runuser");
                c.args(["-u", u, "--"]).arg(&exe);
                c
            }
            None => Command::new(&exe),
        };
        let out = cmd
            .args(args)
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("cannot run {}: {e}", exe.display()))?;
        if out.status.success() {
            return Ok(());
        }
        let text = String::from_utf8_lossy(&out.stderr);
        Err(format!(
            "{name} failed: {}",
            text.lines()
                .rev()
                .find(|l| !l.trim().is_empty())
                .unwrap_or("no message")
        ))
    }

    /// Stops the server at once and removes its directory.
    pub fn stop(&mut self) {
        if self.stopped {
            return;
        }
        self.stopped = true;
        let data = self.dir.join("data");
        let _ = self.tool(
            "pg_ctl",
            &[
                "-D".as_ref(),
                data.as_os_str(),
                "-m".as_ref(),
                "immediate".as_ref(),
                "-w".as_ref(),
                "stop".as_ref(),
            ],
        );
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop();
    }
}
