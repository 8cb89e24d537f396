//! The node's many-agent grid planning in plain Rust types: the map received on
//! `~/occupancy_grid`, the `~/plan_agents` service (`interfaces/srv/PlanAgents.srv`) and the
//! `~/agent_paths` markers.
//!
//! [`AgentsService`] keeps the last grid received; [`AgentsService::plan`] answers one
//! `PlanAgents` request with [`crate::grid::plan_agents`]; [`agent_markers`] draws an answer.
//! The node (`crate::ros`) only converts messages to and from these types.
//!
//! Conventions:
//! - Occupancy: cells with a value above 50, and unknown cells (`-1`), are blocked, as
//!   `PlanAgents.srv` documents ([`AGENTS_COST_MODEL`]); every other cell costs 1 to enter, so a
//!   path's cost is its number of moves.
//! - Frames: points are metres in the map's frame (`header.frame_id`); z is ignored on input.
//!   The map origin may be rotated about z (a yaw); any roll or pitch is refused.
//! - Metres to cells: `cell = floor(R(-yaw) * (p - origin) / resolution)`, cell `(0, 0)` being
//!   the one whose lower-left corner is the origin; a cell's point is its centre.

use std::time::Instant;

use crate::grid::{
    plan_agents, CostModel, Failure, GridBackend, GridError, GridMap, Method, PlanParams,
};
use crate::scene::yaml::quaternion_xyzw;

/// The cost model of `PlanAgents`: values `>= occupied_threshold` are blocked in
/// [`CostModel`], so a threshold of 51 blocks exactly the cells above 50; unknown cells are
/// blocked; unit move costs.
pub const AGENTS_COST_MODEL: CostModel = CostModel {
    occupied_threshold: 51,
    unknown_passable: false,
    cost_scale: 0,
};

/// Largest roll or pitch part (x or y of the normalized quaternion) of a map origin still read
/// as a pure yaw: about 2e-6 rad, far below what a 2-D map can show.
const YAW_TOLERANCE: f64 = 1e-6;

/// Loop repair rounds of planning-block A* (the `gmp grid` default).
const DEFAULT_REPAIR_ROUNDS: u32 = 16;

/// A pose: position in metres and orientation as a quaternion `[x, y, z, w]`
/// (`geometry_msgs/Pose`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MapPose {
    /// `x, y, z` in metres.
    pub position: [f64; 3],
    /// `x, y, z, w`.
    pub orientation: [f64; 4],
}

impl Default for MapPose {
    /// The origin with the identity orientation.
    fn default() -> Self {
        Self {
            position: [0.0; 3],
            orientation: [0.0, 0.0, 0.0, 1.0],
        }
    }
}

/// A `nav_msgs/OccupancyGrid` in plain types.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct OccupancyGridData {
    /// `header.frame_id`: the frame of the origin, of requests' points and of the paths.
    pub frame_id: String,
    /// `info.resolution`: metres per cell; positive and finite.
    pub resolution: f64,
    /// `info.width`: cells per row.
    pub width: u32,
    /// `info.height`: number of rows.
    pub height: u32,
    /// `info.origin`: pose of the lower-left corner of cell `(0, 0)`; finite, and rotated about
    /// z only (an all-zero quaternion is read as the identity, as RViz does).
    pub origin: MapPose,
    /// `data`: `width * height` values, row-major, row 0 first; `-1` unknown, `0..=100`
    /// occupancy in percent.
    pub data: Vec<i8>,
}

/// A checked grid with its frame.
#[derive(Debug, Clone)]
struct LoadedGrid {
    frame_id: String,
    /// The cells, with `resolution` and `origin = [x, y, yaw]` set.
    map: GridMap,
}

impl OccupancyGridData {
    /// The grid as a [`GridMap`] with its resolution and origin `[x, y, yaw]` set, after
    /// checking every field (errors name the field, under `map`).
    pub fn to_grid_map(&self) -> Result<GridMap, AgentsError> {
        self.clone().into_loaded("map").map(|g| g.map)
    }

    /// Checks the fields and builds the grid; `which` names the grid in errors.
    fn into_loaded(self, which: &'static str) -> Result<LoadedGrid, AgentsError> {
        let bad = |field: String, reason: String| AgentsError::BadGrid {
            which,
            field,
            reason,
        };
        let resolution = self.resolution;
        if !(resolution.is_finite() && resolution > 0.0) {
            return Err(bad(
                "info.resolution".into(),
                format!("must be positive and finite, got {resolution}"),
            ));
        }
        let [x, y, _] = self.origin.position;
        if !self.origin.position.iter().all(|v| v.is_finite()) {
            return Err(bad(
                "info.origin.position".into(),
                format!("{:?} is not finite", self.origin.position),
            ));
        }
        let yaw = yaw_of(self.origin.orientation)
            .map_err(|reason| bad("info.origin.orientation".into(), reason))?;
        let mut map = GridMap::new(self.width, self.height, self.data).map_err(|e| {
            let field = match &e {
                GridError::SizeMismatch { .. } => "data".to_string(),
                GridError::BadCellValue { index, .. } => format!("data[{index}]"),
                _ => "info.width, info.height".to_string(),
            };
            let reason = match &e {
                GridError::SizeMismatch { .. } => format!("size mismatch: {e}"),
                _ => e.to_string(),
            };
            bad(field, reason)
        })?;
        map.resolution = resolution;
        map.origin = [x, y, yaw];
        Ok(LoadedGrid {
            frame_id: self.frame_id,
            map,
        })
    }
}

/// The yaw of a map origin's orientation `[x, y, z, w]`; an error when it is not finite, not
/// normalisable, or has a roll or pitch.
fn yaw_of(q: [f64; 4]) -> Result<f64, String> {
    if q == [0.0; 4] {
        return Ok(0.0);
    }
    let rotation = quaternion_xyzw(q)?;
    let unit = rotation.quaternion();
    if unit.i.abs() > YAW_TOLERANCE || unit.j.abs() > YAW_TOLERANCE {
        return Err(format!(
            "{q:?} is not a rotation about z (a 2-D map may only be rotated by a yaw)"
        ));
    }
    Ok(rotation.euler_angles().2)
}

/// The quaternion `[x, y, z, w]` of a rotation by `yaw` about z.
fn yaw_quaternion(yaw: f64) -> [f64; 4] {
    let (s, c) = (yaw / 2.0).sin_cos();
    [0.0, 0.0, s, c]
}

/// The cell `[x, y]` holding the point `p` (metres; z ignored) of `map`'s frame, using
/// `map.resolution` and `map.origin = [x, y, yaw]`; possibly outside the grid. `None` when `p`
/// is not finite.
pub fn world_to_cell(map: &GridMap, p: [f64; 3]) -> Option<[i64; 2]> {
    if !(p[0].is_finite() && p[1].is_finite()) {
        return None;
    }
    let [ox, oy, yaw] = map.origin;
    let (s, c) = yaw.sin_cos();
    let (dx, dy) = (p[0] - ox, p[1] - oy);
    // Into the grid's axes: R(-yaw) * (p - origin).
    let u = c * dx + s * dy;
    let v = -s * dx + c * dy;
    // Saturating casts: far-away points land far outside the grid.
    Some([
        (u / map.resolution).floor() as i64,
        (v / map.resolution).floor() as i64,
    ])
}

/// The centre of cell `[x, y]` of `map` in metres (z = 0): the inverse of [`world_to_cell`].
pub fn cell_centre(map: &GridMap, cell: [u32; 2]) -> [f64; 3] {
    let [ox, oy, yaw] = map.origin;
    let (s, c) = yaw.sin_cos();
    let u = (cell[0] as f64 + 0.5) * map.resolution;
    let v = (cell[1] as f64 + 0.5) * map.resolution;
    [ox + c * u - s * v, oy + s * u + c * v, 0.0]
}

/// The poses of a path of cells: cell centres (z = 0), each facing the next cell (a yaw
/// quaternion in the map frame); the last faces as the one before it, and a one-cell path
/// has the map's orientation.
fn path_poses(map: &GridMap, cells: &[[u32; 2]]) -> Vec<MapPose> {
    let map_yaw = map.origin[2];
    let mut heading = map_yaw;
    cells
        .iter()
        .enumerate()
        .map(|(k, cell)| {
            if let Some(next) = cells.get(k + 1) {
                let dx = next[0] as f64 - cell[0] as f64;
                let dy = next[1] as f64 - cell[1] as f64;
                heading = map_yaw + dy.atan2(dx);
            }
            MapPose {
                position: cell_centre(map, *cell),
                orientation: yaw_quaternion(heading),
            }
        })
        .collect()
}

/// Settings of the agents service; the node fills them from its parameters.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentsSettings {
    /// Backend used when a request leaves `backend` empty: `cpu`, `cuda` or `auto`.
    pub backend: String,
    /// Loop repair rounds of planning-block A* (requests with a `block_size`).
    pub repair_rounds: u32,
}

impl Default for AgentsSettings {
    /// The CPU backend (the node's default `backend`), 16 repair rounds.
    fn default() -> Self {
        Self {
            backend: "cpu".into(),
            repair_rounds: DEFAULT_REPAIR_ROUNDS,
        }
    }
}

/// A `PlanAgents` request.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AgentsRequest {
    /// The grid to plan on, for this request only; `None` = the last grid received on
    /// `~/occupancy_grid` (the node passes `None` for a request whose `map.data` is empty).
    pub map: Option<OccupancyGridData>,
    /// The goal shared by every agent, metres in the map frame (z ignored).
    pub goal: [f64; 3],
    /// One start per agent, metres in the map frame (z ignored); the index is the agent id.
    pub starts: Vec<[f64; 3]>,
    /// `cpu`, `cuda` or `auto` (the GPU when there is one, else the CPU); empty = the
    /// settings' backend.
    pub backend: String,
    /// `<= 0`: the goal wavefront (optimal paths). Otherwise planning-block A* with square
    /// blocks of this side (4, 8, 16 or 32), on either backend (the CPU runs its twin); agents
    /// it fails are completed by the wavefront.
    pub block_size: i32,
}

/// The answer to a `PlanAgents` request.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentsResponse {
    /// True when every agent got a path (`failed_agents` is empty).
    pub success: bool,
    /// One line: agents, solved, failed, backend, milliseconds.
    pub message: String,
    /// The map's frame: the frame of every pose (each path's `header.frame_id`).
    pub frame_id: String,
    /// One path per start, same order, from the start cell's centre to the goal cell's
    /// centre (4-connected cell centres, z = 0, each pose facing the next one); empty for a
    /// failed agent.
    pub paths: Vec<Vec<MapPose>>,
    /// Indices into the starts of agents without a path, ascending.
    pub failed_agents: Vec<u32>,
    /// One reason per entry of `failed_agents`: "start outside the map", "start is
    /// blocked", "start is not finite", "goal unreachable" or "planning-block A* found no
    /// path".
    pub failure_reasons: Vec<String>,
    /// Wall-clock seconds spent planning (the grid planner call).
    pub planning_time: f64,
    /// The backend that ran: `cpu` or `cuda`.
    pub backend: String,
    /// The starts as requested (for [`agent_markers`]).
    pub starts: Vec<[f64; 3]>,
    /// The map's resolution, metres per cell (for [`agent_markers`]).
    pub resolution: f64,
}

/// Why an agents request or grid was refused; every variant names the input at fault.
#[derive(Debug, thiserror::Error)]
pub enum AgentsError {
    /// The request has no map and none was received.
    #[error("map: the request has no map and none was received on ~/occupancy_grid yet")]
    NoGrid,
    /// A field of an occupancy grid is unusable.
    #[error("{which}.{field}: {reason}")]
    BadGrid {
        /// `map` (the request's) or `occupancy_grid` (the topic's).
        which: &'static str,
        /// The field, as named in `nav_msgs/OccupancyGrid` (`info.resolution`, `data`, ...).
        field: String,
        /// What is wrong.
        reason: String,
    },
    /// The goal is not finite, outside the map or in a blocked cell.
    #[error("goal ({}, {}): {reason}", goal[0], goal[1])]
    BadGoal {
        /// The goal as requested.
        goal: [f64; 3],
        /// What is wrong.
        reason: String,
    },
    /// A request option or setting is unusable.
    #[error("{name}: {reason}")]
    BadOption {
        /// `backend` or `block_size`.
        name: &'static str,
        /// What is wrong.
        reason: String,
    },
    /// The backend failed (e.g. `cuda` on a machine without a GPU).
    #[error("backend '{backend}': {source}")]
    Backend {
        /// The backend asked for.
        backend: String,
        /// Why.
        source: GridError,
    },
    /// The grid planner failed otherwise.
    #[error("grid planner: {0}")]
    Grid(GridError),
}

/// The many-agent planning state of the node: the settings and the last grid received.
#[derive(Debug, Clone, Default)]
pub struct AgentsService {
    settings: AgentsSettings,
    grid: Option<LoadedGrid>,
}

impl AgentsService {
    /// A service without a grid.
    pub fn new(settings: AgentsSettings) -> Self {
        Self {
            settings,
            grid: None,
        }
    }

    /// The current settings.
    pub fn settings(&self) -> &AgentsSettings {
        &self.settings
    }

    /// Replaces the settings (checked when the next plan runs).
    pub fn set_settings(&mut self, settings: AgentsSettings) {
        self.settings = settings;
    }

    /// Takes a grid received on `~/occupancy_grid` as the one requests without a map plan
    /// on. On error (naming the field, under `occupancy_grid`) the previous grid is kept.
    pub fn set_grid(&mut self, grid: OccupancyGridData) -> Result<(), AgentsError> {
        self.grid = Some(grid.into_loaded("occupancy_grid")?);
        Ok(())
    }

    /// The last grid received (resolution and origin `[x, y, yaw]` set), if any.
    pub fn grid(&self) -> Option<&GridMap> {
        self.grid.as_ref().map(|g| &g.map)
    }

    /// The frame of the last grid received, if any.
    pub fn grid_frame(&self) -> Option<&str> {
        self.grid.as_ref().map(|g| g.frame_id.as_str())
    }

    /// Plans a path from every start to the goal. A bad map, goal or option is an error; a
    /// start outside the map, blocked, not finite or cut off from the goal is a failure of
    /// that agent only.
    pub fn plan(&self, request: AgentsRequest) -> Result<AgentsResponse, AgentsError> {
        let backend_name = if request.backend.is_empty() {
            self.settings.backend.as_str()
        } else {
            request.backend.as_str()
        };
        let backend = parse_backend(backend_name)?;
        let method = method_of(request.block_size, self.settings.repair_rounds)?;
        let requested;
        let grid = match request.map {
            Some(map) => {
                requested = map.into_loaded("map")?;
                &requested
            }
            None => self.grid.as_ref().ok_or(AgentsError::NoGrid)?,
        };
        let map = &grid.map;
        let goal = request.goal;
        let goal_cell = world_to_cell(map, goal).ok_or_else(|| AgentsError::BadGoal {
            goal,
            reason: "is not finite".into(),
        })?;
        // A non-finite start is given a cell outside the grid; its reason is fixed below.
        let start_cells: Vec<[i64; 2]> = request
            .starts
            .iter()
            .map(|&s| world_to_cell(map, s).unwrap_or([-1, -1]))
            .collect();
        let params = PlanParams {
            method,
            backend,
            cost_model: AGENTS_COST_MODEL,
            complete_failures: true,
            report_optimal: false,
            materialize_paths: true,
        };
        let t = Instant::now();
        let result = plan_agents(map, goal_cell, &start_cells, &params)
            .map_err(|e| planner_error(e, goal, backend_name))?;
        let planning_time = t.elapsed().as_secs_f64();

        let mut paths = Vec::with_capacity(result.agents.len());
        let mut failed_agents = Vec::new();
        let mut failure_reasons = Vec::new();
        for (i, agent) in result.agents.iter().enumerate() {
            match &agent.path {
                Ok(found) => paths.push(path_poses(map, &found.cells)),
                Err(failure) => {
                    paths.push(Vec::new());
                    failed_agents.push(i as u32);
                    let finite = request
                        .starts
                        .get(i)
                        .is_some_and(|s| s[0].is_finite() && s[1].is_finite());
                    failure_reasons.push(if finite {
                        failure_reason(*failure).to_string()
                    } else {
                        "start is not finite".to_string()
                    });
                }
            }
        }
        let (backend_used, device) = if result.stats.backend == "cpu" {
            ("cpu", String::new())
        } else {
            ("cuda", format!(" ({})", result.stats.backend))
        };
        let agents = request.starts.len();
        let message = format!(
            "{agents} agents: {} solved, {} failed; backend {backend_used}{device}; {:.1} ms",
            agents - failed_agents.len(),
            failed_agents.len(),
            planning_time * 1e3
        );
        Ok(AgentsResponse {
            success: failed_agents.is_empty(),
            message,
            frame_id: grid.frame_id.clone(),
            paths,
            failed_agents,
            failure_reasons,
            planning_time,
            backend: backend_used.into(),
            starts: request.starts,
            resolution: map.resolution,
        })
    }
}

/// The grid backend of a name: `cpu`, `cuda` or `auto` (case-insensitive). `hybrid`, the
/// collision backend of that name (the node's `backend` parameter serves both), is `auto`
/// here: a grid search of many agents is one large batch, which the GPU takes when present.
pub fn parse_backend(name: &str) -> Result<GridBackend, AgentsError> {
    if name.trim().eq_ignore_ascii_case("hybrid") {
        return Ok(GridBackend::Auto);
    }
    <GridBackend as clap::ValueEnum>::from_str(name.trim(), true).map_err(|_| {
        AgentsError::BadOption {
            name: "backend",
            reason: format!("'{name}' is not cpu, cuda or auto"),
        }
    })
}

/// The method of a request's `block_size`: the wavefront when `<= 0`, else planning-block A*
/// with that side (4, 8, 16 or 32).
fn method_of(block_size: i32, repair_rounds: u32) -> Result<Method, AgentsError> {
    if block_size <= 0 {
        return Ok(Method::Wavefront);
    }
    let side = block_size as u32;
    if !crate::grid::pba::BLOCK_SIDES.contains(&side) {
        return Err(AgentsError::BadOption {
            name: "block_size",
            reason: format!("{block_size} is not 4, 8, 16 or 32 (or <= 0 for the default)"),
        });
    }
    Ok(Method::Pba {
        side,
        repair_rounds,
    })
}

/// The error of a failed planner call, naming the goal or the backend where they are at fault.
fn planner_error(e: GridError, goal: [f64; 3], backend: &str) -> AgentsError {
    let bad_goal = |reason: String| AgentsError::BadGoal { goal, reason };
    match e {
        GridError::GoalOutside {
            x,
            y,
            width,
            height,
        } => bad_goal(format!(
            "is outside the map (cell ({x}, {y}) of a {width}x{height} grid)"
        )),
        GridError::GoalBlocked { x, y, value } => bad_goal(format!(
            "is blocked (cell ({x}, {y}) has occupancy {value}; cells above 50 and unknown \
             cells are blocked)"
        )),
        GridError::BadBlockSide(side) => AgentsError::BadOption {
            name: "block_size",
            reason: format!("{side} is not 4, 8, 16 or 32"),
        },
        source @ GridError::Cuda(_) => AgentsError::Backend {
            backend: backend.to_string(),
            source,
        },
        other => AgentsError::Grid(other),
    }
}

/// The `failure_reasons` text of a failure.
pub fn failure_reason(failure: Failure) -> &'static str {
    match failure {
        Failure::StartOutside => "start outside the map",
        Failure::StartBlocked => "start is blocked",
        Failure::Unreachable => "goal unreachable",
        Failure::PbaFailed => "planning-block A* found no path",
    }
}

/// An RGBA colour, components in `0..=1` (`std_msgs/ColorRGBA`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rgba {
    /// Red.
    pub r: f32,
    /// Green.
    pub g: f32,
    /// Blue.
    pub b: f32,
    /// Opacity.
    pub a: f32,
}

const fn rgb(r: f32, g: f32, b: f32) -> Rgba {
    Rgba { r, g, b, a: 1.0 }
}

/// Path colours, agent `i` taking `AGENT_PALETTE[i % 8]` (no red: red marks failed starts).
pub const AGENT_PALETTE: [Rgba; 8] = [
    rgb(0.12, 0.47, 0.71),
    rgb(1.0, 0.5, 0.05),
    rgb(0.17, 0.63, 0.17),
    rgb(0.58, 0.4, 0.74),
    rgb(0.55, 0.34, 0.29),
    rgb(0.89, 0.47, 0.76),
    rgb(0.74, 0.74, 0.13),
    rgb(0.09, 0.75, 0.81),
];

/// The colour of a failed agent's start.
pub const FAILED_START_COLOR: Rgba = rgb(1.0, 0.0, 0.0);

/// The colour of agent `agent`'s path and start.
pub fn agent_color(agent: usize) -> Rgba {
    AGENT_PALETTE[agent % AGENT_PALETTE.len()]
}

/// The kind of an agent marker (`visualization_msgs/Marker` types).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AgentMarkerKind {
    /// `LINE_STRIP` (4): `scale[0]` is the line width.
    LineStrip,
    /// `SPHERE_LIST` (7): `scale` is the spheres' diameters.
    SphereList,
}

impl AgentMarkerKind {
    /// The ROS marker type number.
    pub fn ros_type(self) -> i32 {
        match self {
            AgentMarkerKind::LineStrip => 4,
            AgentMarkerKind::SphereList => 7,
        }
    }
}

/// One marker (action ADD, identity pose) of the `~/agent_paths` `MarkerArray`.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentMarker {
    /// Namespace: [`AGENT_PATHS_NS`] or [`AGENT_STARTS_NS`].
    pub ns: String,
    /// Id within the namespace: the agent index for a path, 0 for the starts.
    pub id: i32,
    /// Marker type.
    pub kind: AgentMarkerKind,
    /// `header.frame_id`: the map's frame.
    pub frame_id: String,
    /// `scale` (x, y, z), metres.
    pub scale: [f64; 3],
    /// `color`: the marker's colour (grey for the starts, whose `colors` say it per point).
    pub color: Rgba,
    /// `points`, metres in `frame_id`.
    pub points: Vec<[f64; 3]>,
    /// `colors`: one per point (empty when the marker has one colour).
    pub colors: Vec<Rgba>,
}

/// Namespace of the path line strips.
pub const AGENT_PATHS_NS: &str = "agent_paths";
/// Namespace of the start spheres.
pub const AGENT_STARTS_NS: &str = "agent_starts";

/// The markers drawing an answer: one `LINE_STRIP` per solved agent with at least two poses
/// (id = agent index, the agent's palette colour, a line a third of a cell wide), then one
/// `SPHERE_LIST` of the finite starts (spheres 0.8 cell wide, each in its agent's colour, or
/// red when the agent failed). Marker ids depend on the agents, so the node publishes a
/// `DELETEALL` before them (as `scene_array` does) to clear a previous answer's markers.
pub fn agent_markers(response: &AgentsResponse) -> Vec<AgentMarker> {
    let cell = response.resolution;
    let mut markers: Vec<AgentMarker> = response
        .paths
        .iter()
        .enumerate()
        .filter(|(_, path)| path.len() >= 2)
        .map(|(i, path)| AgentMarker {
            ns: AGENT_PATHS_NS.into(),
            id: i32::try_from(i).unwrap_or(i32::MAX),
            kind: AgentMarkerKind::LineStrip,
            frame_id: response.frame_id.clone(),
            scale: [cell / 3.0, 0.0, 0.0],
            color: agent_color(i),
            points: path.iter().map(|p| p.position).collect(),
            colors: Vec::new(),
        })
        .collect();
    let (points, colors): (Vec<[f64; 3]>, Vec<Rgba>) = response
        .starts
        .iter()
        .enumerate()
        .filter(|(_, s)| s[0].is_finite() && s[1].is_finite())
        .map(|(i, s)| {
            let failed = response.paths.get(i).is_none_or(|p| p.is_empty());
            let color = if failed {
                FAILED_START_COLOR
            } else {
                agent_color(i)
            };
            ([s[0], s[1], 0.0], color)
        })
        .unzip();
    if !points.is_empty() {
        markers.push(AgentMarker {
            ns: AGENT_STARTS_NS.into(),
            id: 0,
            kind: AgentMarkerKind::SphereList,
            frame_id: response.frame_id.clone(),
            scale: [0.8 * cell; 3],
            color: rgb(0.5, 0.5, 0.5),
            points,
            colors,
        });
    }
    markers
}
