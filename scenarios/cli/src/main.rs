//! `leasesim`: the command-line tool, for leasesim's own machines (the reference protocol and
//! its known-bad variants) and scenarios. A user's binary is the same three lines with its own.

fn main() -> std::process::ExitCode {
    leasesim_cli::main_with(leasesim::Builder::stock())
}
