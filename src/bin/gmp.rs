//! `gmp`: the command-line front end of gpu_motion_planner.

use clap::Parser;

fn main() {
    let cli = gpu_motion_planner::cli::Cli::parse();
    match gpu_motion_planner::cli::run(cli) {
        Ok(v) => match serde_json::to_string_pretty(&v) {
            Ok(s) => println!("{s}"),
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
