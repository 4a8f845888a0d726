//! Arguments: whole numbers that say what is wrong with them (a negative number is told as
//! such, not as an unknown flag), and output files checked before any work is done, so a run
//! never ends by failing to write what it found.

use super::UsageError;
use leasesim::files;
use std::path::{Path, PathBuf};

/// A whole number of type `T`: refuses a negative number, a fraction, text and a number too
/// large for `T`, each with its own message.
pub fn whole<T: TryFrom<u64>>(s: &str) -> Result<T, String> {
    let t = s.trim();
    if let Some(rest) = t.strip_prefix('-') {
        if rest.parse::<f64>().is_ok() {
            return Err(format!(
                "'{t}' is negative; expected a whole number, 0 or more"
            ));
        }
    }
    let n: u64 = t.parse().map_err(|_| {
        if t.parse::<f64>().is_ok() {
            format!("'{t}' is not a whole number")
        } else {
            format!("'{t}' is not a number")
        }
    })?;
    T::try_from(n).map_err(|_| format!("'{t}' is too large"))
}

/// The files a run may write, by flag.
#[derive(Clone, Debug, Default)]
pub struct Outputs {
    /// `--trace`.
    pub trace: Option<PathBuf>,
    /// `--journal`.
    pub journal: Option<PathBuf>,
    /// `--html`.
    pub html: Option<PathBuf>,
    /// `--markdown`.
    pub markdown: Option<PathBuf>,
    /// `--save`.
    pub save: Option<PathBuf>,
}

impl Outputs {
    /// Each output with its flag.
    pub fn named(&self) -> Vec<(&'static str, &Path)> {
        [
            ("--trace", &self.trace),
            ("--journal", &self.journal),
            ("--html", &self.html),
            ("--markdown", &self.markdown),
            ("--save", &self.save),
        ]
        .into_iter()
        .filter_map(|(flag, p)| p.as_deref().map(|p| (flag, p)))
        .collect()
    }
}

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
pub fn check_outputs(outputs: &[(&str, &Path)], inputs: &[&Path]) -> Result<(), UsageError> {
    let mut seen: Vec<(&str, PathBuf)> = inputs
        .iter()
        .map(|p| ("the input file", absolute(p)))
        .collect();
    for &(flag, path) in outputs {
        let shown = path.display();
        let abs = absolute(path);
        if let Some((other, _)) = seen.iter().find(|(_, p)| *p == abs) {
            return Err(UsageError(format!(
                "{flag} {shown} is the same file as {other}; give each output its own file"
            )));
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
/// link at `path` is replaced, never written through; see [`leasesim::files`]). `--summary`,
/// appended to, must not be a link; an existing one is opened for appending, through no link,
/// to check it.
pub fn writable(flag: &str, path: &Path) -> Result<(), UsageError> {
    let shown = path.display();
    let refuse = |why: String| UsageError(format!("{flag} {shown}: cannot write there: {why}"));
    let checked = if flag == APPENDED {
        files::check_appendable(path)
    } else {
        files::check_writable(path)
    };
    checked.map_err(|e| refuse(e.to_string()))
}

/// A folder results go to, made ready before the work: created when missing (and remembered,
/// so an unused one is removed again) and proved writable by a probe file. The folder is the
/// user's own path (a link to a folder is followed); the files in it are written by
/// [`leasesim::files`], through no link.
pub struct OutDir {
    /// The folder.
    pub path: PathBuf,
    created: bool,
}

impl OutDir {
    /// Prepares `path` for `flag`.
    pub fn prepare(flag: &str, path: &Path) -> Result<OutDir, UsageError> {
        let shown = path.display();
        let refuse = |why: String| UsageError(format!("{flag} {shown}: cannot write there: {why}"));
        if path.exists() && !path.is_dir() {
            return Err(refuse("it is not a directory".into()));
        }
        let created = !path.exists();
        std::fs::create_dir_all(path).map_err(|e| refuse(e.to_string()))?;
        // A probe of an unpredictable name: a link planted at a guessable one would be written
        // through.
        if let Err(e) = files::probe_folder(path) {
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

    #[test]
    fn whole_numbers_say_what_is_wrong() {
        assert_eq!(whole::<u64>("42"), Ok(42));
        assert!(whole::<u64>("-1").unwrap_err().contains("negative"));
        assert!(whole::<u64>("-0.5").unwrap_err().contains("negative"));
        assert!(whole::<u64>("1.5")
            .unwrap_err()
            .contains("not a whole number"));
        assert!(whole::<u64>("abc").unwrap_err().contains("not a number"));
        assert!(whole::<u32>("4294967296")
            .unwrap_err()
            .contains("too large"));
        assert!(whole::<u64>("--variant")
            .unwrap_err()
            .contains("not a number"));
    }
}
