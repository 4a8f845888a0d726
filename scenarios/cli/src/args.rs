//! Arguments: whole numbers that say what is wrong with them (a negative number is told as
//! such, not as an unknown flag), and a run's output files, checked before any work is done
//! ([`check_outputs`]), so a run never ends by failing to write what it found.

use std::path::{Path, PathBuf};

pub use leasesim::files::{check_outputs, OutDir};

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
