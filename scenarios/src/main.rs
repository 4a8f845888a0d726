//! `leasesim`: the command-line tool. Everything lives in the library's `cli` module so that
//! tests can drive it in-process.

fn main() -> std::process::ExitCode {
    let code = leasesim_scenarios::cli::main_with(
        std::env::args().collect(),
        &mut std::io::stdout().lock(),
        &mut std::io::stderr().lock(),
    );
    std::process::ExitCode::from(code as u8)
}
