//! My own `leasesim`: every command of leasesim's command line, for my machines.
//!
//! ```sh
//! cargo run -p leasesim-example --bin payments-leasesim -- sweep --variant payments-worker
//! cargo run -p leasesim-example --bin payments-leasesim -- matrix --seeds 500 --out /tmp/m
//! ```

fn main() -> std::process::ExitCode {
    leasesim_cli::main_with(leasesim_example::machines::program())
}
