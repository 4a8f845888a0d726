//! `leasesim`: the command-line tool, for leasesim's own machines (the reference protocol and
//! its known-bad variants). A user's binary is the same three lines with its own machines.

fn main() -> std::process::ExitCode {
    leasesim_cli::main_with(leasesim::Machines::stock())
}
