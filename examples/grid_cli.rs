//! Manual runs of the grid planner surfaces until the lead wires them into `gmp`:
//! `cargo run --release --example grid_cli -- grid --map M --goal x,y --agents A.json`
//! `cargo run --release --example grid_cli -- bench --quick`

use clap::Parser;
use gpu_motion_planner::grid::cli::{run_bench_grid, run_grid, BenchGridArgs, GridArgs};

/// The grid planner's command-line surfaces.
#[derive(Parser)]
enum Command {
    /// Plan paths for many agents to one goal and print them as JSON.
    Grid(GridArgs),
    /// Run the grid benchmark (Table I reproduction and scale runs).
    Bench(BenchGridArgs),
}

fn main() {
    let result = match Command::parse() {
        Command::Grid(args) => run_grid(&args),
        Command::Bench(args) => run_bench_grid(&args),
    };
    match result {
        Ok(v) => println!("{}", serde_json::to_string_pretty(&v).unwrap_or_default()),
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(1);
        }
    }
}
