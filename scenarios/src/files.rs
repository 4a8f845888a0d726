//! Writing the files leasesim leaves behind (replay files, traces, journals, reports, failure
//! lists): each appears whole under its name, and no write goes through a link.
//!
//! A file is written to a fresh temporary file in the destination's own folder, named
//! `<name>.partial-<16 random hex digits>` and created with `create_new` (`O_EXCL`, which also
//! refuses a link planted at that name), then renamed onto its name. A rename replaces whatever
//! is at the destination, a symbolic link included, and never writes through it; a crash or a
//! kill never leaves a half-written file under the final name. The random digits come from
//! `/dev/urandom`: they name files outside every simulated world, so no run ever sees them.
//!
//! What is at the destination decides how it is written ([`write()`], [`Partial`]):
//!
//! - nothing, a regular file, or a symbolic link to a regular file or to nothing: replaced by
//!   the rename (the file a link pointed to is left as it was);
//! - a device, a pipe or a socket (`/dev/null`): written where it is, opened without following
//!   a link and without creating or truncating anything, since renaming over it would replace
//!   the device itself;
//! - a directory, or a link to a directory, a device or a pipe (`/dev/stdout` is one): refused.
//!   Replacing such a link could break a system folder, and writing through it is what this
//!   module never does.
//!
//! One file is appended to rather than replaced, GitHub's job summary (`--summary`), which a
//! CI runner hands to every step: [`append`] opens it with `O_APPEND | O_NOFOLLOW` and refuses
//! a link.
//!
//! No file is synced to disk (`fsync`) before its rename: the guarantee is against the process
//! dying (a crash, a kill, Ctrl-C), which the page cache survives, not against the machine
//! losing power. Every file here can be made again from its seed, and a sync per file would
//! cost a sweep that saves a hundred replays a visible pause on a slow disk.
//!
//! A process killed while writing (SIGKILL, a crash) leaves the `.partial-` file beside the
//! name it was meant for: for a streamed file such as a sweep's failure list it holds what was
//! written up to then. Files are created with the usual mode (0666 less the umask).
//!
//! This module must never open an existing path for writing except a special file or the file
//! [`append`] appends to, neither of them through a link, and must never truncate anything in
//! place.

use std::fs::{self, File, OpenOptions};
use std::io::{self, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

/// Names tried for one temporary file before giving up: 64 random bits collide with nothing
/// in practice, so a second try already means something else is wrong.
const NAME_TRIES: usize = 4;
/// Bytes of the destination's name kept in its temporary file's name, so that the longest
/// name still fits the usual 255-byte limit with `.partial-` and the digits after it.
const NAME_KEPT_BYTES: usize = 200;

/// Writes `contents` as the whole file at `path` (see the module's documentation for what is
/// at the destination decides).
pub fn write(path: impl AsRef<Path>, contents: impl AsRef<[u8]>) -> io::Result<()> {
    let mut file = Partial::create(path.as_ref())?;
    file.write_all(contents.as_ref())?;
    file.finish()
}

/// Appends `contents` to the file at `path`, creating it if missing; refuses a symbolic link
/// at `path` (`O_NOFOLLOW`) rather than writing through it.
pub fn append(path: impl AsRef<Path>, contents: impl AsRef<[u8]>) -> io::Result<()> {
    let mut options = OpenOptions::new();
    options.append(true).create(true);
    no_follow(&mut options);
    let mut file = options.open(path.as_ref()).map_err(link_refused)?;
    file.write_all(contents.as_ref())
}

/// Whether [`write()`] (or a [`Partial`]) can write `path`, checked without touching `path`
/// itself: it is not a directory or a link to something other than a file, and a file can be
/// created in its folder (where the temporary file goes).
pub fn check_writable(path: &Path) -> io::Result<()> {
    match destination(path)? {
        Destination::Replace => probe_folder(folder(path)),
        // Opening a pipe to check it would wait for its reader; the write says what failed.
        Destination::InPlace => Ok(()),
    }
}

/// Whether [`append`] can write `path`: not a link, not a directory, and open-able for
/// appending (without creating it: a missing file is checked by a probe in its folder).
pub fn check_appendable(path: &Path) -> io::Result<()> {
    match fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => Err(a_link()),
        Ok(m) if m.is_dir() => Err(io::Error::other("it is a directory")),
        Ok(_) => {
            let mut options = OpenOptions::new();
            options.append(true);
            no_follow(&mut options);
            options.open(path).map(drop).map_err(link_refused)
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => probe_folder(folder(path)),
        Err(e) => Err(e),
    }
}

/// Proves that files can be created in `dir`: a probe file of an unpredictable name
/// (`.leasesim-probe-<digits>`), created new and removed at once.
pub fn probe_folder(dir: &Path) -> io::Result<()> {
    let (file, probe) = create_unique(dir, ".leasesim-probe-")?;
    drop(file);
    fs::remove_file(&probe)
}

/// Creates the new file `path`, readable and writable by its owner only (mode 0600), for a
/// secret or a tool's output inside a private folder: a name that exists (a planted link
/// among them) is refused, never opened.
pub fn create_private(path: &Path) -> io::Result<File> {
    let mut options = OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    options.open(path)
}

/// Creates a new folder of an unpredictable name `<prefix><digits>` in `parent`, readable by
/// its owner only: a temporary folder no one else can have prepared (a guessable name in
/// `/tmp` can be a link planted to another folder).
pub fn private_dir(parent: &Path, prefix: &str) -> io::Result<PathBuf> {
    let mut builder = fs::DirBuilder::new();
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    let mut last = None;
    for _ in 0..NAME_TRIES {
        let dir = parent.join(format!("{prefix}{}", random_hex(8)?));
        match builder.create(&dir) {
            Ok(()) => return Ok(dir),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => last = Some(e),
            Err(e) => return Err(e),
        }
    }
    Err(last.unwrap_or_else(|| io::Error::other("no free name")))
}

/// A file being written: into its temporary file (buffered), which [`Partial::finish`] renames
/// onto the destination. Dropped unfinished (an error on the way), it removes its temporary
/// file: an unfinished file never gets its name, unless its [`Publish`] handle gives it one.
pub struct Partial {
    out: BufWriter<File>,
    pending: Publish,
}

/// The temporary file of a [`Partial`] and its destination, shared with whatever must finish
/// or remove it from elsewhere (a signal handler's cleanup), once: the first to act wins.
#[derive(Clone)]
pub struct Publish(Arc<Mutex<Option<Pending>>>);

struct Pending {
    temp: PathBuf,
    dest: PathBuf,
}

impl Partial {
    /// Starts writing `dest`: a new temporary file beside it, or the special file itself.
    pub fn create(dest: &Path) -> io::Result<Partial> {
        let (file, pending) = match destination(dest)? {
            Destination::InPlace => match open_in_place(dest)? {
                Some(file) => (file, None),
                // Replaced by a regular file since it was looked at: replace that instead.
                None => Partial::temp(dest)?,
            },
            Destination::Replace => Partial::temp(dest)?,
        };
        Ok(Partial {
            out: BufWriter::new(file),
            pending: Publish(Arc::new(Mutex::new(pending))),
        })
    }

    fn temp(dest: &Path) -> io::Result<(File, Option<Pending>)> {
        let name = dest
            .file_name()
            .ok_or_else(|| io::Error::other("the path names no file"))?
            .to_string_lossy();
        let mut kept = String::new();
        for c in name.chars() {
            if kept.len() + c.len_utf8() > NAME_KEPT_BYTES {
                break;
            }
            kept.push(c);
        }
        let (file, temp) = create_unique(folder(dest), &format!("{kept}.partial-"))?;
        let dest = dest.to_path_buf();
        Ok((file, Some(Pending { temp, dest })))
    }

    /// The temporary file being written (`None` once renamed, or for a special file written
    /// where it is).
    pub fn temp_path(&self) -> Option<PathBuf> {
        self.pending.lock().as_ref().map(|p| p.temp.clone())
    }

    /// A handle that can finish ([`Publish::publish`]) or remove ([`Publish::discard`]) this
    /// file from another thread, e.g. a cleanup that runs when a signal ends the process.
    pub fn handle(&self) -> Publish {
        self.pending.clone()
    }

    /// Writes out the buffer and renames the temporary file onto the destination. On an error
    /// the temporary file is removed.
    pub fn finish(mut self) -> io::Result<()> {
        self.out.flush()?;
        self.pending.publish()
    }
}

impl Write for Partial {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.out.write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

impl Drop for Partial {
    fn drop(&mut self) {
        self.pending.discard();
    }
}

impl Publish {
    fn lock(&self) -> MutexGuard<'_, Option<Pending>> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Gives the file its name with what was written to it so far (buffered bytes not yet
    /// written out stay behind); does nothing if it already has it or was removed. On an
    /// error the temporary file is removed.
    pub fn publish(&self) -> io::Result<()> {
        let Some(p) = self.lock().take() else {
            return Ok(());
        };
        fs::rename(&p.temp, &p.dest).inspect_err(|_| {
            let _ = fs::remove_file(&p.temp);
        })
    }

    /// Removes the temporary file unless the file was already given its name.
    pub fn discard(&self) {
        if let Some(p) = self.lock().take() {
            let _ = fs::remove_file(&p.temp);
        }
    }
}

/// How a destination is written.
#[derive(Debug, PartialEq, Eq)]
enum Destination {
    /// Through a temporary file renamed onto it.
    Replace,
    /// Where it is: a special file, never a link.
    InPlace,
}

/// What is at `path` decides how it is written (see the module's documentation).
fn destination(path: &Path) -> io::Result<Destination> {
    let found = match fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Destination::Replace),
        Err(e) => return Err(e),
    };
    if found.is_file() {
        return Ok(Destination::Replace);
    }
    if found.is_dir() {
        return Err(io::Error::other("it is a directory"));
    }
    if !found.file_type().is_symlink() {
        return Ok(Destination::InPlace);
    }
    match fs::metadata(path) {
        // A link to nothing (or a loop of links): replaced like a link to a file.
        Err(_) => Ok(Destination::Replace),
        Ok(target) if target.is_file() => Ok(Destination::Replace),
        Ok(target) if target.is_dir() => Err(io::Error::other(
            "it is a symbolic link to a directory",
        )),
        Ok(_) => Err(io::Error::other(
            "it is a symbolic link to a device or a pipe; leasesim never writes through a link, so name the file itself",
        )),
    }
}

/// Opens a special file for writing where it is, never through a link (`O_NOFOLLOW`), never
/// creating or truncating it; `None` if it is a regular file by the time it is opened.
fn open_in_place(path: &Path) -> io::Result<Option<File>> {
    let mut options = OpenOptions::new();
    options.write(true);
    no_follow(&mut options);
    let file = options.open(path).map_err(link_refused)?;
    Ok((!file.metadata()?.is_file()).then_some(file))
}

/// A new file `<prefix><16 random hex digits>` in `dir`, created with `create_new`.
fn create_unique(dir: &Path, prefix: &str) -> io::Result<(File, PathBuf)> {
    let mut last = None;
    for _ in 0..NAME_TRIES {
        let path = dir.join(format!("{prefix}{}", random_hex(8)?));
        match OpenOptions::new().write(true).create_new(true).open(&path) {
            Ok(file) => return Ok((file, path)),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => last = Some(e),
            Err(e) => return Err(e),
        }
    }
    Err(last.unwrap_or_else(|| io::Error::other("no free name")))
}

/// `n` bytes of the system's randomness as hex digits: names and passwords no one can guess
/// ahead. Nothing of a run draws from it.
pub fn random_hex(n: usize) -> io::Result<String> {
    let mut bytes = vec![0u8; n];
    File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut bytes))
        .map_err(|e| io::Error::new(e.kind(), format!("cannot read /dev/urandom: {e}")))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// The folder a path's file is in (`.` for a bare name).
fn folder(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

/// Makes `options` refuse a symbolic link as the last part of the path.
fn no_follow(options: &mut OpenOptions) {
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::custom_flags(options, libc::O_NOFOLLOW);
    #[cfg(not(unix))]
    let _ = options;
}

/// The refusal of a symbolic link.
fn a_link() -> io::Error {
    io::Error::other("it is a symbolic link; leasesim never writes through a link")
}

/// The error of an open refused because the path is a link (`ELOOP` under `O_NOFOLLOW`), said
/// as such.
fn link_refused(e: io::Error) -> io::Error {
    #[cfg(unix)]
    if e.raw_os_error() == Some(libc::ELOOP) {
        return a_link();
    }
    e
}

// ---------------------------------------------------------------------------------------------
// Output files and folders, checked before the work that fills them.

/// A path made absolute without needing the file itself to exist, so two spellings of one file
/// compare equal.
fn absolute(path: &Path) -> PathBuf {
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let parent = parent
        .canonicalize()
        .unwrap_or_else(|_| parent.to_path_buf());
    match path.file_name() {
        Some(name) => parent.join(name),
        None => parent,
    }
}

/// Checks that every output can be written, before the work that fills them: no two outputs
/// (and no output and input) are the same file, no output is a directory, and each can be
/// written ([`writable`]). Nothing is created or written at an output's path.
pub fn check_outputs(outputs: &[(&str, &Path)], inputs: &[&Path]) -> Result<(), String> {
    let mut seen: Vec<(&str, PathBuf)> = inputs
        .iter()
        .map(|p| ("the input file", absolute(p)))
        .collect();
    for &(flag, path) in outputs {
        let shown = path.display();
        let abs = absolute(path);
        if let Some((other, _)) = seen.iter().find(|(_, p)| *p == abs) {
            return Err(format!(
                "{flag} {shown} is the same file as {other}; give each output its own file"
            ));
        }
        seen.push((flag, abs));
        writable(flag, path)?;
    }
    Ok(())
}

/// The one output appended to rather than replaced: GitHub's job summary file, which a CI
/// runner hands to every step of a job.
const APPENDED: &str = "--summary";

/// Whether `path` can be written, checked without writing to it: not a directory, and a file can
/// be created in its folder, where the output is written before it is renamed onto `path` (a
/// link at `path` is replaced, never written through; see [`crate::files`]). `--summary`,
/// appended to, must not be a link; an existing one is opened for appending, through no link,
/// to check it.
pub fn writable(flag: &str, path: &Path) -> Result<(), String> {
    let shown = path.display();
    let refuse = |why: String| format!("{flag} {shown}: cannot write there: {why}");
    let checked = if flag == APPENDED {
        check_appendable(path)
    } else {
        check_writable(path)
    };
    checked.map_err(|e| refuse(e.to_string()))
}

/// A folder results go to, made ready before the work: created when missing (and remembered,
/// so an unused one is removed again) and proved writable by a probe file. The folder is the
/// user's own path (a link to a folder is followed); the files in it are written by
/// [`crate::files`], through no link.
pub struct OutDir {
    /// The folder.
    pub path: PathBuf,
    created: bool,
}

impl OutDir {
    /// Prepares `path` for `flag`.
    pub fn prepare(flag: &str, path: &Path) -> Result<OutDir, String> {
        let shown = path.display();
        let refuse = |why: String| format!("{flag} {shown}: cannot write there: {why}");
        if path.exists() && !path.is_dir() {
            return Err(refuse("it is not a directory".into()));
        }
        let created = !path.exists();
        std::fs::create_dir_all(path).map_err(|e| refuse(e.to_string()))?;
        // A probe of an unpredictable name: a link planted at a guessable one would be written
        // through.
        if let Err(e) = probe_folder(path) {
            if created {
                let _ = std::fs::remove_dir(path);
            }
            return Err(refuse(e.to_string()));
        }
        Ok(OutDir {
            path: path.to_path_buf(),
            created,
        })
    }

    /// Removes the folder again if this command created it and left nothing in it.
    pub fn remove_if_unused(&self) {
        if self.created {
            let _ = std::fs::remove_dir(&self.path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fresh folder for one test.
    fn scratch(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("leasesim-files-{name}-{}", random_hex(8).unwrap()));
        fs::create_dir(&dir).unwrap();
        dir
    }

    fn names(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> = fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    #[cfg(unix)]
    #[test]
    fn a_link_at_the_destination_is_replaced_and_its_target_left_alone() {
        let dir = scratch("link");
        let victim = dir.join("victim");
        fs::write(&victim, "keep").unwrap();
        let dest = dir.join("out.json");
        std::os::unix::fs::symlink(&victim, &dest).unwrap();
        write(&dest, "new").unwrap();
        assert_eq!(fs::read_to_string(&victim).unwrap(), "keep");
        assert!(fs::symlink_metadata(&dest).unwrap().is_file());
        assert_eq!(fs::read_to_string(&dest).unwrap(), "new");
        assert_eq!(
            names(&dir),
            ["out.json", "victim"],
            "no temporary file is left"
        );
        // Appending refuses the link instead.
        std::os::unix::fs::symlink(&victim, dir.join("summary.md")).unwrap();
        let e = append(dir.join("summary.md"), "x").unwrap_err();
        assert!(e.to_string().contains("symbolic link"), "{e}");
        assert!(check_appendable(&dir.join("summary.md")).is_err());
        assert_eq!(fs::read_to_string(&victim).unwrap(), "keep");
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_partial_file_has_no_name_until_finished_and_none_when_dropped() {
        let dir = scratch("partial");
        let dest = dir.join("list.txt");
        let mut p = Partial::create(&dest).unwrap();
        p.write_all(b"one\n").unwrap();
        p.flush().unwrap();
        let temp = p.temp_path().unwrap();
        assert!(temp
            .file_name()
            .unwrap()
            .to_string_lossy()
            .starts_with("list.txt.partial-"));
        assert!(!dest.exists());
        assert_eq!(fs::read_to_string(&temp).unwrap(), "one\n");
        p.finish().unwrap();
        assert_eq!(fs::read_to_string(&dest).unwrap(), "one\n");
        assert!(!temp.exists());
        let p = Partial::create(&dir.join("dropped.txt")).unwrap();
        drop(p);
        assert_eq!(names(&dir), ["list.txt"]);
        // A handle publishes from elsewhere, once.
        let mut p = Partial::create(&dir.join("stopped.txt")).unwrap();
        p.write_all(b"two\n").unwrap();
        p.flush().unwrap();
        p.handle().publish().unwrap();
        drop(p);
        assert_eq!(
            fs::read_to_string(dir.join("stopped.txt")).unwrap(),
            "two\n"
        );
        fs::remove_dir_all(&dir).unwrap();
    }

    #[cfg(unix)]
    #[test]
    fn a_special_file_is_written_where_it_is_and_a_link_to_one_is_refused() {
        let dir = scratch("special");
        write("/dev/null", "nothing").unwrap();
        let null = fs::symlink_metadata("/dev/null").unwrap().file_type();
        assert!(std::os::unix::fs::FileTypeExt::is_char_device(&null));
        let link = dir.join("out");
        std::os::unix::fs::symlink("/dev/null", &link).unwrap();
        assert!(write(&link, "x").is_err());
        assert!(check_writable(&link).is_err());
        assert!(fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
        assert!(check_writable(&dir).is_err(), "a directory");
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn private_folders_and_probes_have_unpredictable_names() {
        let dir = scratch("private");
        let a = private_dir(&dir, "x-").unwrap();
        let b = private_dir(&dir, "x-").unwrap();
        assert_ne!(a, b);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            assert_eq!(
                fs::metadata(&a).unwrap().permissions().mode() & 0o777,
                0o700
            );
        }
        probe_folder(&dir).unwrap();
        assert_eq!(names(&dir).len(), 2, "the probe is removed");
        fs::remove_dir_all(&dir).unwrap();
    }
}
