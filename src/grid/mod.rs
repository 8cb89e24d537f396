//! Many-agent grid path planning: occupancy grids, sequential A*, planning-block A* (P-BA*,
//! Caggianese & Erra) on the GPU with a CPU twin, and a goal wavefront that completes every
//! agent P-BA* loses.
//!
//! The setting is the paper's: one shared goal, many agents' start cells, 4-connected moves,
//! integer entering costs, Manhattan heuristic. [`plan_agents`] is the engine entry point; it
//! returns one [`AgentResult`] per start (a path or the reason there is none) and
//! [`PlanStats`] with the time split between the steps.

pub mod astar;
pub mod bench;
pub mod cli;
pub mod gpu;
pub mod map;
pub mod pba;

use std::path::PathBuf;
use std::time::Instant;

pub use map::{AgentsFile, CostModel, GridMap};

use pba::{CpuPba, BLOCK_SIDES, INF};

/// Errors of the grid planner.
#[derive(Debug, thiserror::Error)]
pub enum GridError {
    /// A grid with no cells.
    #[error("empty grid: {width}x{height} has no cells")]
    EmptyGrid {
        /// Width given.
        width: u32,
        /// Height given.
        height: u32,
    },
    /// A grid with more cells than supported.
    #[error(
        "grid {width}x{height} is larger than supported ({} cells)",
        map::MAX_CELLS
    )]
    GridTooLarge {
        /// Width given.
        width: u32,
        /// Height given.
        height: u32,
    },
    /// `data` does not hold `width * height` values.
    #[error("grid data has {len} values but {width}x{height} needs {}", *width as u64 * *height as u64)]
    SizeMismatch {
        /// Width given.
        width: u32,
        /// Height given.
        height: u32,
        /// Values given.
        len: usize,
    },
    /// A cell value outside `-1..=100`.
    #[error("grid cell {index} has value {value}, outside -1..=100")]
    BadCellValue {
        /// Row-major index of the cell.
        index: usize,
        /// Its value.
        value: i8,
    },
    /// A cell coordinate outside the grid.
    #[error("cell ({x}, {y}) is outside the {width}x{height} grid")]
    CellOutside {
        /// Column.
        x: i64,
        /// Row.
        y: i64,
        /// Grid width.
        width: u32,
        /// Grid height.
        height: u32,
    },
    /// The goal is outside the grid.
    #[error("goal ({x}, {y}) is outside the {width}x{height} grid")]
    GoalOutside {
        /// Column.
        x: i64,
        /// Row.
        y: i64,
        /// Grid width.
        width: u32,
        /// Grid height.
        height: u32,
    },
    /// The goal is an impassable cell.
    #[error("goal ({x}, {y}) is in an obstacle (cell value {value})")]
    GoalBlocked {
        /// Column.
        x: i64,
        /// Row.
        y: i64,
        /// The cell's occupancy value.
        value: i8,
    },
    /// A planning block side that is not 4, 8, 16 or 32.
    #[error("planning block side {0} is not one of 4, 8, 16, 32")]
    BadBlockSide(u32),
    /// A file could not be read or written.
    #[error("{path}: {message}")]
    Io {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        message: String,
    },
    /// A file or text could not be parsed.
    #[error("{source_name}: {message}")]
    Parse {
        /// The file or input name.
        source_name: String,
        /// What was wrong.
        message: String,
    },
    /// A map file with an extension we cannot read.
    #[error("{0}: unknown map format (want .pgm, .png, .yaml, .yml or .json)")]
    UnknownFormat(PathBuf),
    /// A bad command-line or benchmark argument.
    #[error("bad argument {name}: {message}")]
    BadArgument {
        /// The argument.
        name: String,
        /// What was wrong.
        message: String,
    },
    /// An internal inconsistency (a bug), with what was found.
    #[error("internal grid planner error: {0}")]
    Internal(String),
    /// The CUDA backend failed or is not available.
    #[error("CUDA grid backend: {0}")]
    Cuda(String),
}

/// Where the planner runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, serde::Serialize, clap::ValueEnum)]
pub enum GridBackend {
    /// The CPU twin.
    Cpu,
    /// The GPU (fails when there is none).
    Cuda,
    /// The GPU when a driver and device are present, else the CPU (one line on stderr says which).
    #[default]
    Auto,
}

/// The planning algorithm.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub enum Method {
    /// Goal wavefront: the exact distance field to the goal, optimal paths for every solvable
    /// agent (our fast path).
    Wavefront,
    /// Planning-block A* with blocks of `side` cells and up to `repair_rounds` loop repairs.
    Pba {
        /// Planning block side: 4, 8, 16 or 32.
        side: u32,
        /// Loop repair rounds (0 reproduces the paper's single pass).
        repair_rounds: u32,
    },
}

/// Planner parameters.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct PlanParams {
    /// Algorithm.
    pub method: Method,
    /// Backend.
    pub backend: GridBackend,
    /// Cell values to costs.
    pub cost_model: CostModel,
    /// Give agents P-BA* fails a wavefront path (so every solvable agent is solved).
    pub complete_failures: bool,
    /// Compute the optimal cost of every agent (the wavefront) to report path stretch.
    pub report_optimal: bool,
    /// Build each agent's cell list (off for large benchmarks, where costs suffice).
    pub materialize_paths: bool,
}

impl Default for PlanParams {
    fn default() -> Self {
        Self {
            method: Method::Wavefront,
            backend: GridBackend::Auto,
            cost_model: CostModel::default(),
            complete_failures: true,
            report_optimal: true,
            materialize_paths: true,
        }
    }
}

/// Which algorithm produced an agent's path.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub enum PathSource {
    /// P-BA* itself.
    Pba,
    /// The goal wavefront (the fast path, or the completion of a P-BA* failure).
    Wavefront,
}

/// Why an agent has no path.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub enum Failure {
    /// The start is outside the grid.
    StartOutside,
    /// The start is an impassable cell.
    StartBlocked,
    /// No path exists (the wavefront never reaches the start).
    Unreachable,
    /// P-BA* looped or dead-ended and completion was off.
    PbaFailed,
}

/// A found path.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct FoundPath {
    /// The algorithm that produced it.
    pub source: PathSource,
    /// Sum of entering costs (equals the number of moves with unit costs).
    pub cost: u64,
    /// Cells from start to goal as `[x, y]` (empty when paths are not materialized).
    pub cells: Vec<[u32; 2]>,
}

/// One agent's answer.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct AgentResult {
    /// The start as given.
    pub start: [i64; 2],
    /// The path, or why there is none.
    pub path: Result<FoundPath, Failure>,
    /// The optimal cost (A*'s), when computed and the agent is solvable.
    pub optimal_cost: Option<u64>,
}

/// Timing and size figures of one planning call (milliseconds).
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct PlanStats {
    /// The backend that ran ("cpu" or the device name).
    pub backend: String,
    /// Host to device copies (GPU only).
    pub upload_ms: f64,
    /// P-BA* border-to-border step (block fields, directions, border segments), all rounds.
    pub border_to_border_ms: f64,
    /// P-BA* chain resolution, all rounds.
    pub chains_ms: f64,
    /// P-BA* start-to-border step, all rounds.
    pub start_to_border_ms: f64,
    /// P-BA* loop repair, all rounds.
    pub repair_ms: f64,
    /// Wavefront (distance field, directions, agent costs).
    pub wavefront_ms: f64,
    /// Device to host copies (GPU only).
    pub download_ms: f64,
    /// Building the per-agent cell lists on the host.
    pub materialize_ms: f64,
    /// Everything.
    pub total_ms: f64,
    /// Repair rounds run.
    pub repair_rounds: u32,
    /// Block recomputations over all rounds.
    pub blocks_computed: u64,
    /// Wavefront relaxation rounds (GPU) or 1 (CPU Dijkstra).
    pub wavefront_rounds: u32,
    /// Agents solved by P-BA* itself.
    pub solved_by_pba: usize,
    /// Agents solved by the wavefront.
    pub solved_by_wavefront: usize,
    /// Agents without a path.
    pub failed: usize,
    /// Device memory held by the planner (bytes; 0 on the CPU).
    pub device_bytes: u64,
}

/// The answer of [`plan_agents`].
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct AgentPaths {
    /// Goal `[x, y]`.
    pub goal: [u32; 2],
    /// One result per start, in order.
    pub agents: Vec<AgentResult>,
    /// Figures.
    pub stats: PlanStats,
}

/// The steps of P-BA* and the wavefront, implemented by the CPU twin and the GPU.
pub(crate) trait PlannerOps {
    /// Border-to-border step for these blocks.
    fn border_to_border(&mut self, blocks: &[u32]) -> Result<(), GridError>;
    /// Resolves all border tiles' chains.
    fn chains(&mut self) -> Result<(), GridError>;
    /// Start-to-border step: per start its P-BA* cost or INF.
    fn start_to_border(&mut self, starts: &[u32]) -> Result<Vec<u32>, GridError>;
    /// Loop repair: the blocks to recompute.
    fn repair(&mut self) -> Result<Vec<u32>, GridError>;
    /// The P-BA* direction field.
    fn pba_directions(&mut self) -> Result<Vec<u8>, GridError>;
    /// The wavefront: per start its optimal cost or INF, and the direction field.
    fn wavefront(&mut self, starts: &[u32]) -> Result<(Vec<u32>, Vec<u8>), GridError>;
    /// Figures collected so far.
    fn stats(&mut self) -> &mut PlanStats;
}

/// CPU twin of the planner steps.
pub(crate) struct CpuOps {
    pba: CpuPba,
    stats: PlanStats,
}

impl CpuOps {
    pub(crate) fn new(costs: Vec<i32>, width: u32, height: u32, side: u32, goal: u32) -> Self {
        Self {
            pba: CpuPba::new(costs, width, height, side, goal),
            stats: PlanStats {
                backend: "cpu".into(),
                ..Default::default()
            },
        }
    }
}

fn ms(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1e3
}

impl PlannerOps for CpuOps {
    fn border_to_border(&mut self, blocks: &[u32]) -> Result<(), GridError> {
        let t = Instant::now();
        self.pba.border_to_border(blocks);
        self.stats.blocks_computed += blocks.len() as u64;
        self.stats.border_to_border_ms += ms(t);
        Ok(())
    }
    fn chains(&mut self) -> Result<(), GridError> {
        let t = Instant::now();
        self.pba.chains();
        self.stats.chains_ms += ms(t);
        Ok(())
    }
    fn start_to_border(&mut self, starts: &[u32]) -> Result<Vec<u32>, GridError> {
        let t = Instant::now();
        let r = self.pba.start_to_border(starts);
        self.stats.start_to_border_ms += ms(t);
        Ok(r)
    }
    fn repair(&mut self) -> Result<Vec<u32>, GridError> {
        let t = Instant::now();
        let r = self.pba.repair();
        self.stats.repair_ms += ms(t);
        Ok(r)
    }
    fn pba_directions(&mut self) -> Result<Vec<u8>, GridError> {
        Ok(self.pba.dir.clone())
    }
    fn wavefront(&mut self, starts: &[u32]) -> Result<(Vec<u32>, Vec<u8>), GridError> {
        let t = Instant::now();
        let l = &self.pba.layout;
        let d = pba::distance_field(&self.pba.costs, l.width, l.height, self.pba.goal);
        let dir = pba::field_directions(&self.pba.costs, l.width, l.height, self.pba.goal, &d);
        let costs = starts.iter().map(|&s| d[s as usize]).collect();
        self.stats.wavefront_rounds = 1;
        self.stats.wavefront_ms += ms(t);
        Ok((costs, dir))
    }
    fn stats(&mut self) -> &mut PlanStats {
        &mut self.stats
    }
}

/// Checks the goal against the map and returns its cell index.
pub fn goal_cell(map: &GridMap, goal: [i64; 2], model: &CostModel) -> Result<u32, GridError> {
    let cell = map.index(goal[0], goal[1]).ok_or(GridError::GoalOutside {
        x: goal[0],
        y: goal[1],
        width: map.width(),
        height: map.height(),
    })?;
    let value = map.data()[cell as usize];
    if model.cost_of(value) < 0 {
        return Err(GridError::GoalBlocked {
            x: goal[0],
            y: goal[1],
            value,
        });
    }
    Ok(cell)
}

/// Whether a CUDA driver library can be loaded on this machine.
pub fn cuda_driver_present() -> bool {
    // SAFETY: only tries to open the driver library; no CUDA call is made.
    unsafe { cudarc::driver::sys::is_culib_present() }
}

/// Plans paths from every start to the shared goal.
///
/// Fails only on a bad goal, bad parameters or a failing GPU backend; a bad start gives that
/// agent a [`Failure`]. With [`GridBackend::Auto`] the GPU is used when present, else the CPU
/// twin (one line on stderr says which).
pub fn plan_agents(
    map: &GridMap,
    goal: [i64; 2],
    starts: &[[i64; 2]],
    params: &PlanParams,
) -> Result<AgentPaths, GridError> {
    let goal_cell = goal_cell(map, goal, &params.cost_model)?;
    let side = match params.method {
        Method::Pba { side, .. } => {
            if !BLOCK_SIDES.contains(&side) {
                return Err(GridError::BadBlockSide(side));
            }
            side
        }
        Method::Wavefront => pba::WAVE_TILE,
    };
    let costs = map.costs(&params.cost_model);
    let use_gpu = match params.backend {
        GridBackend::Cpu => false,
        GridBackend::Cuda => true,
        GridBackend::Auto => {
            let gpu = gpu::GpuGrid::shared().is_ok();
            if gpu {
                eprintln!("gmp grid: using the CUDA backend");
            } else {
                eprintln!("gmp grid: no usable CUDA device, using the CPU twin");
            }
            gpu
        }
    };
    let mut ops: Box<dyn PlannerOps> = if use_gpu {
        Box::new(gpu::GpuOps::new(
            gpu::GpuGrid::shared()?,
            &costs,
            map.width(),
            map.height(),
            side,
            goal_cell,
        )?)
    } else {
        Box::new(CpuOps::new(
            costs.clone(),
            map.width(),
            map.height(),
            side,
            goal_cell,
        ))
    };
    run_plan(map, goal_cell, starts, params, &costs, ops.as_mut())
}

/// The shared orchestration of both backends (same steps in the same order).
pub(crate) fn run_plan(
    map: &GridMap,
    goal_cell: u32,
    starts: &[[i64; 2]],
    params: &PlanParams,
    costs: &[i32],
    ops: &mut dyn PlannerOps,
) -> Result<AgentPaths, GridError> {
    let t_total = Instant::now();
    let (w, h) = (map.width(), map.height());
    // Start cells, or the failure of a bad start.
    let start_cells: Vec<Result<u32, Failure>> = starts
        .iter()
        .map(|s| match map.index(s[0], s[1]) {
            None => Err(Failure::StartOutside),
            Some(c) if costs[c as usize] < 0 => Err(Failure::StartBlocked),
            Some(c) => Ok(c),
        })
        .collect();
    let valid: Vec<u32> = start_cells.iter().filter_map(|c| c.ok()).collect();

    let mut pba_cost: Option<Vec<u32>> = None;
    let mut pba_dir: Option<Vec<u8>> = None;
    if let Method::Pba { repair_rounds, .. } = params.method {
        let layout_blocks = {
            let side = match params.method {
                Method::Pba { side, .. } => side,
                Method::Wavefront => pba::WAVE_TILE,
            };
            w.div_ceil(side) * h.div_ceil(side)
        };
        let mut dirty: Vec<u32> = (0..layout_blocks).collect();
        let mut rounds = 0;
        let result = loop {
            ops.border_to_border(&dirty)?;
            ops.chains()?;
            let result = ops.start_to_border(&valid)?;
            let failing = result.contains(&INF);
            if !failing || rounds >= repair_rounds {
                break result;
            }
            dirty = ops.repair()?;
            if dirty.is_empty() {
                break result;
            }
            rounds += 1;
        };
        ops.stats().repair_rounds = rounds;
        pba_dir = Some(ops.pba_directions()?);
        pba_cost = Some(result);
    }
    let need_wave = match params.method {
        Method::Wavefront => true,
        Method::Pba { .. } => {
            params.report_optimal
                || (params.complete_failures && pba_cost.as_ref().is_some_and(|c| c.contains(&INF)))
        }
    };
    let (wave_cost, wave_dir) = if need_wave {
        let (c, d) = ops.wavefront(&valid)?;
        (Some(c), Some(d))
    } else {
        (None, None)
    };

    let t_mat = Instant::now();
    let max_steps = costs.len();
    let mut agents = Vec::with_capacity(starts.len());
    let mut k = 0usize;
    let (mut by_pba, mut by_wave, mut failed) = (0, 0, 0);
    for (i, sc) in start_cells.iter().enumerate() {
        let start = starts[i];
        let cell = match sc {
            Err(f) => {
                failed += 1;
                agents.push(AgentResult {
                    start,
                    path: Err(*f),
                    optimal_cost: None,
                });
                continue;
            }
            Ok(c) => *c,
        };
        let optimal = wave_cost
            .as_ref()
            .map(|c| c[k])
            .filter(|&c| c != INF)
            .map(u64::from);
        let pba_c = pba_cost.as_ref().map(|c| c[k]);
        k += 1;
        let (source, cost, dir) = match (pba_c, &pba_dir) {
            (Some(c), Some(d)) if c != INF => (PathSource::Pba, c as u64, d),
            _ => {
                let completing =
                    matches!(params.method, Method::Wavefront) || params.complete_failures;
                match (&wave_dir, optimal) {
                    (Some(d), Some(o)) if completing => (PathSource::Wavefront, o, d),
                    _ => {
                        failed += 1;
                        let why = if wave_dir.is_some() && optimal.is_none() {
                            Failure::Unreachable
                        } else {
                            Failure::PbaFailed
                        };
                        agents.push(AgentResult {
                            start,
                            path: Err(why),
                            optimal_cost: optimal,
                        });
                        continue;
                    }
                }
            }
        };
        match source {
            PathSource::Pba => by_pba += 1,
            PathSource::Wavefront => by_wave += 1,
        }
        let cells = if params.materialize_paths {
            match pba::follow(costs, w, h, dir, cell, max_steps) {
                Some((cells, c)) if c == cost => cells.iter().map(|&c| [c % w, c / w]).collect(),
                other => {
                    return Err(GridError::Internal(format!(
                    "direction field of agent {i} does not give its path (cost {cost}, walk {:?})",
                    other.map(|o| o.1)
                )))
                }
            }
        } else {
            Vec::new()
        };
        agents.push(AgentResult {
            start,
            path: Ok(FoundPath {
                source,
                cost,
                cells,
            }),
            optimal_cost: optimal,
        });
    }
    let stats = ops.stats();
    stats.materialize_ms = ms(t_mat);
    stats.solved_by_pba = by_pba;
    stats.solved_by_wavefront = by_wave;
    stats.failed = failed;
    stats.total_ms = ms(t_total);
    let stats = stats.clone();
    let (gx, gy) = map.coords(goal_cell);
    Ok(AgentPaths {
        goal: [gx, gy],
        agents,
        stats,
    })
}
