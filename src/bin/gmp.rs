//! `gmp`: the command-line front end of gpu_motion_planner.

use std::io::Write;

use clap::Parser;

/// Writes the report to stdout. A reader that went away (`gmp ... | head`) is not an error
/// worth a panic: the output is simply cut short.
fn print_report(text: &str) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{text}").and_then(|_| out.flush());
}

fn main() {
    let cli = gpu_motion_planner::cli::Cli::parse();
    match gpu_motion_planner::cli::run(cli) {
        Ok(v) => match serde_json::to_string_pretty(&v) {
            // A command that ran but did not achieve its goal (e.g. `plan` found no path)
            // reports `"success": false` on stdout and exits 1.
            Ok(s) if v["success"] == serde_json::Value::Bool(false) => {
                print_report(&s);
                eprintln!("error: {}", v["error"].as_str().unwrap_or("unsuccessful"));
                std::process::exit(1);
            }
            Ok(s) => print_report(&s),
            Err(e) => {
                eprintln!("error: cannot serialize the result: {e}");
                std::process::exit(1);
            }
        },
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(2);
        }
    }
}
