//! `gmp`: the command-line front end of gpu_motion_planner.

use clap::Parser;

fn main() {
    let cli = gpu_motion_planner::cli::Cli::parse();
    match gpu_motion_planner::cli::run(cli) {
        Ok(v) => match serde_json::to_string_pretty(&v) {
            // A command that ran but did not achieve its goal (e.g. `plan` found no path)
            // reports `"success": false` on stdout and exits 1.
            Ok(s) if v["success"] == serde_json::Value::Bool(false) => {
                println!("{s}");
                eprintln!("error: {}", v["error"].as_str().unwrap_or("unsuccessful"));
                std::process::exit(1);
            }
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
