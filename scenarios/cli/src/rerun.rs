//! The command that reruns a saved file: leasesim's own binary when it has the machines and the
//! scenario, the user's program otherwise.

use leasesim::run::command_prefix;
use leasesim::Machines;
use std::path::Path;

/// The command that replays `file` with this program's machines `m`.
pub(super) fn rerun_command(m: &Machines, scenario: &str, file: &Path) -> String {
    // leasesim's own binary has its own machines (and a SQL file's) and scenarios, and no
    // others.
    let prefix = command_prefix(
        (m.is_stock() || m.command_line().is_some())
            && leasesim::scenarios::find(scenario).is_some(),
    );
    match m.command_line() {
        Some(args) => format!("{prefix} replay {} {args}", file.display()),
        None => format!("{prefix} replay {}", file.display()),
    }
}
