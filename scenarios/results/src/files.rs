//! The report files a sweep, a matrix or a merge writes beside its output: `--junit`,
//! `--summary` (appended to: GitHub's job summary) and `--json`.

use crate::sweep::Results;
use leasesim::files;
use std::path::PathBuf;

/// The report files a sweep, a matrix or a merge writes besides its output.
#[derive(Clone, Debug, Default)]
pub struct ReportFiles {
    /// `--junit`.
    pub junit: Option<PathBuf>,
    /// `--summary` (appended to).
    pub summary: Option<PathBuf>,
    /// `--json`.
    pub json: Option<PathBuf>,
}

impl ReportFiles {
    /// Checked before any work: each can be written, no two are the same file.
    pub fn check(&self, inputs: &[&std::path::Path]) -> Result<(), String> {
        let named: Vec<(&str, &std::path::Path)> = [
            ("--junit", &self.junit),
            ("--summary", &self.summary),
            ("--json", &self.json),
        ]
        .into_iter()
        .filter_map(|(flag, p)| p.as_deref().map(|p| (flag, p)))
        .collect();
        leasesim::files::check_outputs(&named, inputs)
    }

    /// Writes them; a file that cannot be written is an error line, never a lost verdict.
    pub fn write(&self, r: &Results) -> Vec<String> {
        let mut errors = Vec::new();
        // Each document is made only when its file was asked for: a big result's JUnit,
        // Markdown and JSON are each a copy of it.
        let mut put = |path: &Option<PathBuf>, text: &dyn Fn() -> String, append: bool| {
            let Some(path) = path else { return };
            let written = if append {
                files::append(path, text())
            } else {
                files::write(path, text())
            };
            if let Err(e) = written {
                errors.push(format!("cannot write {}: {e}", path.display()));
            }
        };
        put(&self.junit, &|| crate::junit::junit(r), false);
        put(&self.summary, &|| crate::summary::markdown(r), true);
        put(&self.json, &|| format!("{:#}\n", r.json()), false);
        errors
    }
}
