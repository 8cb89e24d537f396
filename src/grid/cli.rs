//! Command-line surfaces of the grid planner: `gmp grid` and `gmp bench grid` (wired into
//! `src/bin/gmp.rs` by the lead; `examples/grid_cli.rs` calls them directly).

use std::path::PathBuf;

use super::{
    plan_agents, AgentsFile, CostModel, GridBackend, GridError, GridMap, Method, PlanParams,
};

/// `gmp grid`: plan paths for many agents to one goal on an occupancy grid.
#[derive(clap::Args, Clone, Debug)]
pub struct GridArgs {
    /// Map: PGM/PNG image, map_server YAML, or a plain YAML/JSON grid (width, height, data).
    #[arg(long)]
    pub map: PathBuf,
    /// Goal cell as `x,y` (column, row; row 0 is the bottom row of the image).
    #[arg(long)]
    pub goal: String,
    /// Agents file: JSON or YAML `{"starts": [[x, y], ...]}`.
    #[arg(long)]
    pub agents: PathBuf,
    /// Algorithm: `wavefront` (optimal, fast) or `pba` (planning-block A*).
    #[arg(long, default_value = "wavefront")]
    pub method: String,
    /// Planning block side for `pba`: 4, 8, 16 or 32.
    #[arg(long, default_value_t = 8)]
    pub block: u32,
    /// Loop repair rounds for `pba`.
    #[arg(long, default_value_t = 16)]
    pub repair_rounds: u32,
    /// Leave P-BA* failures unsolved instead of completing them with the wavefront.
    #[arg(long)]
    pub no_completion: bool,
    /// Cells with occupancy at or above this (0..=100) are obstacles.
    #[arg(long, default_value_t = 50)]
    pub occupied_threshold: i8,
    /// Let agents cross unknown (-1) cells.
    #[arg(long)]
    pub unknown_passable: bool,
    /// Extra cost per percent of occupancy (0: unit costs).
    #[arg(long, default_value_t = 0)]
    pub cost_scale: u32,
    /// Backend.
    #[arg(long, value_enum, default_value_t = GridBackend::Auto)]
    pub backend: GridBackend,
}

/// Parses `x,y` into a cell coordinate.
pub fn parse_cell(text: &str, name: &str) -> Result<[i64; 2], GridError> {
    let bad = || GridError::BadArgument {
        name: name.into(),
        message: format!("'{text}' is not x,y"),
    };
    let mut parts = text.split(',').map(|p| p.trim().parse::<i64>());
    match (parts.next(), parts.next(), parts.next()) {
        (Some(Ok(x)), Some(Ok(y)), None) => Ok([x, y]),
        _ => Err(bad()),
    }
}

/// Planner parameters from the `gmp grid` options.
pub fn params_from_args(args: &GridArgs) -> Result<PlanParams, GridError> {
    let method = match args.method.as_str() {
        "wavefront" => Method::Wavefront,
        "pba" => Method::Pba {
            side: args.block,
            repair_rounds: args.repair_rounds,
        },
        other => {
            return Err(GridError::BadArgument {
                name: "--method".into(),
                message: format!("'{other}' is not wavefront or pba"),
            })
        }
    };
    if !(0..=100).contains(&args.occupied_threshold) {
        return Err(GridError::BadArgument {
            name: "--occupied-threshold".into(),
            message: format!("{} is outside 0..=100", args.occupied_threshold),
        });
    }
    Ok(PlanParams {
        method,
        backend: args.backend,
        cost_model: CostModel {
            occupied_threshold: args.occupied_threshold,
            unknown_passable: args.unknown_passable,
            cost_scale: args.cost_scale,
        },
        complete_failures: !args.no_completion,
        report_optimal: true,
        materialize_paths: true,
    })
}

/// Runs `gmp grid` and returns the JSON to print: goal, one entry per agent (path as `[x, y]`
/// cells, cost, optimal cost, source, or the failure) and the planner's figures.
pub fn run_grid(args: &GridArgs) -> Result<serde_json::Value, GridError> {
    let map = GridMap::load(&args.map)?;
    let goal = parse_cell(&args.goal, "--goal")?;
    let agents = AgentsFile::load(&args.agents)?;
    let params = params_from_args(args)?;
    let result = plan_agents(&map, goal, &agents.starts, &params)?;
    let agents_json: Vec<serde_json::Value> = result
        .agents
        .iter()
        .map(|a| match &a.path {
            Ok(p) => serde_json::json!({
                "start": a.start,
                "found": true,
                "source": p.source,
                "cost": p.cost,
                "optimal_cost": a.optimal_cost,
                "path": p.cells,
            }),
            Err(f) => serde_json::json!({
                "start": a.start,
                "found": false,
                "failure": f,
            }),
        })
        .collect();
    Ok(serde_json::json!({
        "map": {"width": map.width(), "height": map.height(), "file": args.map},
        "goal": result.goal,
        "method": params.method,
        "agents": agents_json,
        "stats": result.stats,
    }))
}

pub use super::bench::{run_bench_grid, BenchGridArgs};
