//! The async worker's own `leasesim`: every command of leasesim's command line, for the worker
//! and its two bugs (`--variant async-worker`, the default, `async-worker-renew-on-tool-task`,
//! `async-worker-deadline-without-drift`).
//!
//! ```sh
//! cargo run --release -p leasesim-async-example --no-default-features --features sim \
//!     --bin async-leasesim -- sweep --variant async-worker-renew-on-tool-task
//! ```

/// How the commands it prints start it again: the binary needs the `sim` feature.
const STARTED_WITH: &str = "cargo run --release -p leasesim-async-example --no-default-features --features sim --bin async-leasesim --";

fn main() -> std::process::ExitCode {
    leasesim_cli::main_with(leasesim_async_example::sim::program().started_with(STARTED_WITH))
}
