//! The `gmp` command-line tool: JSON on stdout, errors on stderr with a non-zero exit.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use clap::{Args, Parser, Subcommand};
use serde_json::{json, Value};

use crate::collision::{
    Checker, CheckerOptions, ConfigBatch, CpuChecker, MotionBatch, RobotShapes,
};
use crate::robot::decompose::Decomposition;
use crate::robot::dh::DhChain;
use crate::robot::kinematics_config::KinematicsConfig;
use crate::robot::moveit_config::{is_xacro, read_description, FoundBy, MoveItConfig};
use crate::robot::ompl_planning::OmplPlanning;
use crate::robot::spherize::{fit_robot, self_contacts, spherized_urdf, SphereFit};
use crate::robot::{JointLimitsFile, LoadOptions, PlanningGroup, RobotModel};
use crate::scene::Scene;
use crate::trajectory::LinkLimit;

pub mod bench_allowed;
pub mod bench_cloud;
pub mod bench_collision;
pub mod bench_dynamic;
pub mod bench_ik;
pub mod bench_mbm;
pub mod bench_pose;
pub mod cartesian;
pub mod controllers;
pub mod demo;
pub mod picture;
pub mod plan;
pub mod pose;
pub mod scene;
pub mod sequence;
pub mod tuning;

/// Errors reported by the CLI (printed as `error: ...`).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct CliError(pub String);

macro_rules! cli_from {
    ($($t:ty),*) => {$(
        impl From<$t> for CliError {
            fn from(e: $t) -> Self {
                CliError(e.to_string())
            }
        }
    )*};
}
cli_from!(
    crate::grid::GridError,
    crate::robot::RobotError,
    crate::robot::moveit_config::MoveItConfigError,
    crate::collision::CollisionError,
    crate::scene::SceneError,
    crate::mbm::MbmError,
    crate::planners::dynamic_roadmap::DynamicError,
    crate::roadmap::RoadmapError,
    std::io::Error,
    serde_json::Error
);

/// GPU-batched motion planning engine: robot models, scenes, collision checks.
#[derive(Parser, Debug)]
#[command(name = "gmp", version, about)]
pub struct Cli {
    /// The command.
    #[command(subcommand)]
    pub command: Command,
}

/// `gmp` subcommands.
#[derive(Subcommand, Debug)]
pub enum Command {
    /// Summary of a robot: links, joints, groups, collision bodies, allowed pairs.
    Info(RobotArgs),
    /// The robot's URDF (xacro expanded) and SRDF as text, as the other commands and the
    /// node load them (e.g. for robot_state_publisher with `--moveit-config`).
    Urdf(RobotArgs),
    /// Forward kinematics: every link pose for each configuration.
    Fk(FkArgs),
    /// The DH table of a serial chain.
    Dh(DhArgs),
    /// Collision verdicts for configurations (true = collision free).
    Check(CheckArgs),
    /// Collision verdicts for straight-line motions between configuration pairs.
    CheckMotions(CheckMotionsArgs),
    /// Runs the main job on the bundled robot and scene.
    Demo(demo::DemoArgs),
    /// Classifies the start and goal of every MotionBenchMaker problem.
    MbmValidity(MbmValidityArgs),
    /// Fits a sphere model to a robot's collision geometry (every point of every collision
    /// body inside a sphere of its link) and writes it as a `_spherized` URDF.
    Spherize(SpherizeArgs),
    /// Plans one query and prints the timed trajectory (exit 1 with "success": false when
    /// no path is found).
    Plan(Box<plan::PlanArgs>),
    /// Inverse kinematics: collision-free configurations that put a link at a pose (exit 1
    /// with "success": false when there are none).
    Ik(pose::IkArgs),
    /// A link moved along straight lines through poses (exit 1 with "success": false and the
    /// part achieved when the path ends early).
    Cartesian(cartesian::CartesianArgs),
    /// Reads a scene file (the project's format, MoveIt PlanningScene YAML or MoveIt `.scene`
    /// text), prints its obstacles and carried objects, and with `--out` writes it in the
    /// project's format or as `.scene` text.
    Scene(scene::SceneArgs),
    /// Reads a MoveIt `moveit_controllers.yaml` (the node's `controllers_file`) and, with a
    /// robot, names the joints it lacks and the controllers each planning group's
    /// trajectories would go to.
    Controllers(controllers::ControllersArgs),
    /// Many-agent grid paths to one goal (A*, planning-block A*, goal wavefront).
    Grid(crate::grid::cli::GridArgs),
    /// Benchmarks (results as JSON and markdown under `results/`).
    Bench(BenchArgs),
}

/// `gmp bench` arguments: which benchmark to run.
#[derive(Args, Debug)]
pub struct BenchArgs {
    /// The benchmark.
    #[command(subcommand)]
    pub command: BenchCommand,
}

/// The benchmarks of `gmp bench` (one variant per kind; add new kinds here).
#[derive(Subcommand, Debug)]
pub enum BenchCommand {
    /// Collision-checking throughput, CPU vs CUDA: configurations/s, motions/s, kernel and
    /// transfer times.
    Collision(bench_collision::BenchCollisionArgs),
    /// Plans every MotionBenchMaker problem and reports per robot and scene.
    Mbm(bench_mbm::BenchMbmArgs),
    /// Dynamic roadmap: DRM vs RGG edge labels, update and replanning times (seed 003).
    Dynamic(bench_dynamic::BenchDynamicArgs),
    /// Reproduces the planning-block A* paper (Table I, scaling) against A*.
    Grid(crate::grid::cli::BenchGridArgs),
    /// Inverse kinematics of pose goals: solved share and time on reachable MBM robot poses.
    Ik(bench_ik::BenchIkArgs),
    /// Planning to pose goals on the MBM problems, goal sets of several sizes side by side.
    Pose(bench_pose::BenchPoseArgs),
    /// Point clouds as obstacles: points to boxes, and checks in the boxes against the
    /// scene's own obstacles (bundled arm and scene).
    Cloud(bench_cloud::BenchCloudArgs),
    /// What allowed collisions cost: checks with none, a link pair and an obstacle some links
    /// may touch, side by side per backend (bundled arm and scene).
    Allowed(bench_allowed::BenchAllowedArgs),
}

/// Robot description arguments.
#[derive(Args, Debug, Clone)]
pub struct RobotArgs {
    /// URDF file (a `.xacro` one is expanded by the xacro program).
    #[arg(long, required_unless_present = "moveit_config")]
    pub urdf: Option<PathBuf>,
    /// A MoveIt configuration package (its folder, or its name looked up in
    /// `AMENT_PREFIX_PATH`): its URDF (xacro expanded), SRDF, `config/joint_limits.yaml` and
    /// `config/ompl_planning.yaml`, `config/pilz_cartesian_limits.yaml` and
    /// `config/kinematics.yaml` (see `robot::moveit_config`); `--urdf`, `--srdf`,
    /// `--joint-limits`, `--ompl-planning` and `--kinematics` replace its files.
    #[arg(long = "moveit-config")]
    pub moveit_config: Option<String>,
    /// SRDF file (groups, disabled collision pairs).
    #[arg(long)]
    pub srdf: Option<PathBuf>,
    /// A `_spherized` URDF providing the sphere model.
    #[arg(long)]
    pub spherized: Option<PathBuf>,
    /// A MoveIt `joint_limits.yaml`: velocity, acceleration and jerk limits, narrower position
    /// limits and the default scaling factors (see `robot::JointLimitsFile`).
    #[arg(long = "joint-limits")]
    pub joint_limits: Option<PathBuf>,
    /// A MoveIt `ompl_planning.yaml`: named planner configurations (type, range, goal_bias,
    /// max_nearest_neighbors), per-group default planner and longest_valid_segment_fraction
    /// (see `robot::ompl_planning`); replaces the one of `--moveit-config`.
    #[arg(long = "ompl-planning")]
    pub ompl_planning: Option<PathBuf>,
    /// A MoveIt `kinematics.yaml` (per group: the IK plugin and its settings, shown; its
    /// `position_only_ik` makes pose goals constrain the position only; see
    /// `robot::kinematics_config`); replaces the one of `--moveit-config`.
    #[arg(long = "kinematics")]
    pub kinematics: Option<PathBuf>,
    /// Extra folders to search for `package://` resources.
    #[arg(long = "package-path")]
    pub package_paths: Vec<PathBuf>,
    /// `--shapes fitted` and `gmp spherize`: how far (m) a fitted sphere may stick out of its
    /// collision body before the body gets more spheres.
    #[arg(long, default_value_t = SphereFit::default().tolerance)]
    pub sphere_tolerance: f64,
    /// `--shapes fitted` and `gmp spherize`: most spheres fitted to one collision body.
    #[arg(long, default_value_t = SphereFit::default().max_per_body)]
    pub max_spheres: usize,
    /// The links' collision meshes: 1 makes each its convex hull; 2 to 256 splits each into
    /// at most that many convex parts covering its triangles (one collision body each), so
    /// that a concave link is not filled in.
    #[arg(long, default_value_t = 1)]
    pub link_convex_parts: u32,
    /// Voxels along a split link mesh's longest side (8 to 256).
    #[arg(long, default_value_t = 64)]
    pub link_mesh_resolution: u32,
}

impl RobotArgs {
    /// The sphere fit these arguments ask for; errors name the bad option.
    pub fn sphere_fit(&self) -> Result<SphereFit, CliError> {
        sphere_fit(self.sphere_tolerance, self.max_spheres)
    }

    /// Arguments that name only a robot description (every other option at its default).
    pub fn description(
        urdf: Option<PathBuf>,
        moveit_config: Option<String>,
        srdf: Option<PathBuf>,
    ) -> Self {
        RobotArgs {
            urdf,
            moveit_config,
            srdf,
            spherized: None,
            joint_limits: None,
            ompl_planning: None,
            kinematics: None,
            package_paths: Vec::new(),
            sphere_tolerance: SphereFit::default().tolerance,
            max_spheres: SphereFit::default().max_per_body,
            link_convex_parts: 1,
            link_mesh_resolution: Decomposition::default().resolution,
        }
    }

    /// How the links' collision meshes become polytopes (`--link-convex-parts`,
    /// `--link-mesh-resolution`); errors name the options.
    pub fn link_mesh_parts(&self) -> Result<Decomposition, CliError> {
        let how = Decomposition {
            max_parts: self.link_convex_parts,
            resolution: self.link_mesh_resolution,
        };
        how.validate()
            .map_err(|e| CliError(format!("--link-convex-parts / --link-mesh-resolution: {e}")))?;
        Ok(how)
    }
}

/// The sphere fit of `--sphere-tolerance` and `--max-spheres`; errors name the bad option.
pub fn sphere_fit(tolerance: f64, max_spheres: usize) -> Result<SphereFit, CliError> {
    if !(tolerance.is_finite() && tolerance > 0.0) {
        return Err(CliError(format!(
            "--sphere-tolerance must be a positive number of metres, got {tolerance}"
        )));
    }
    if !(1..=MAX_FITTED_SPHERES).contains(&max_spheres) {
        return Err(CliError(format!(
            "--max-spheres must be in 1..={MAX_FITTED_SPHERES}, got {max_spheres}"
        )));
    }
    Ok(SphereFit {
        tolerance,
        max_per_body: max_spheres,
    })
}

/// Most spheres `--max-spheres` accepts per collision body.
pub const MAX_FITTED_SPHERES: usize = 256;

/// `gmp spherize` arguments.
#[derive(Args, Debug)]
pub struct SpherizeArgs {
    /// Robot description (its collision geometry is what gets covered).
    #[command(flatten)]
    pub robot: RobotArgs,
    /// Where to write the `_spherized` URDF (the robot's links, joints and materials with every
    /// link's collision elements replaced by its spheres); without it only the summary is
    /// printed.
    #[arg(long)]
    pub out: Option<PathBuf>,
}

/// `gmp fk` arguments.
#[derive(Args, Debug)]
pub struct FkArgs {
    /// URDF file.
    #[arg(long)]
    pub urdf: PathBuf,
    /// JSON `{"joint_names": [...], "configs": [[...], ...]}`.
    #[arg(long)]
    pub configs: PathBuf,
}

/// `gmp dh` arguments.
#[derive(Args, Debug)]
pub struct DhArgs {
    /// URDF file.
    #[arg(long)]
    pub urdf: PathBuf,
    /// Base link of the chain (default: the root link).
    #[arg(long)]
    pub base: Option<String>,
    /// Tip link of the chain (default: the deepest link of the tree).
    #[arg(long)]
    pub tip: Option<String>,
}

/// Collision-checking arguments shared by `check` and `check-motions`.
#[derive(Args, Debug, Clone)]
pub struct CheckCommon {
    /// Robot description.
    #[command(flatten)]
    pub robot: RobotArgs,
    /// Scene file (the project's YAML scene format or a MoveIt PlanningScene YAML).
    #[arg(long)]
    pub scene: Option<PathBuf>,
    /// Backend: auto (hybrid with a GPU, else cpu), cpu, cuda or hybrid (small calls on the CPU, large ones on the GPU).
    #[arg(long, default_value = "auto")]
    pub backend: String,
    /// Robot geometry: polytopes (URDF collision geometry), spheres (the sphere model of
    /// --spherized) or fitted (a sphere model fitted to the collision geometry, see
    /// `gmp spherize`).
    #[arg(long, default_value = "polytopes")]
    pub shapes: String,
    /// Planning group from the SRDF (default: the joints named in the input file).
    #[arg(long)]
    pub group: Option<String>,
}

/// `gmp check` arguments.
#[derive(Args, Debug)]
pub struct CheckArgs {
    /// Common options.
    #[command(flatten)]
    pub common: CheckCommon,
    /// JSON `{"joint_names": [...], "configs": [[...], ...], "fixed": {"joint": value}}`.
    #[arg(long)]
    pub configs: PathBuf,
}

/// `gmp check-motions` arguments.
#[derive(Args, Debug)]
pub struct CheckMotionsArgs {
    /// Common options.
    #[command(flatten)]
    pub common: CheckCommon,
    /// JSON `{"joint_names": [...], "motions": [[[from...], [to...]], ...], "fixed": {...}}`.
    #[arg(long)]
    pub motions: PathBuf,
    /// Joint-space distance between checked configurations along a motion.
    #[arg(long, default_value_t = 0.01)]
    pub resolution: f64,
}

/// `gmp mbm-validity` arguments.
#[derive(Args, Debug)]
pub struct MbmValidityArgs {
    /// Robots to classify.
    #[arg(long, value_delimiter = ',', default_value = "panda,ur5,fetch")]
    pub robots: Vec<String>,
    /// Robot geometry: polytopes, spheres (the spherized URDFs) or fitted (sphere models
    /// fitted to the collision meshes, `gmp spherize`).
    #[arg(long, default_value = "polytopes")]
    pub shapes: String,
    /// `--shapes fitted`: how far (m) a fitted sphere may stick out of its collision body.
    #[arg(long, default_value_t = SphereFit::default().tolerance)]
    pub sphere_tolerance: f64,
    /// `--shapes fitted`: most spheres per collision body.
    #[arg(long, default_value_t = SphereFit::default().max_per_body)]
    pub max_spheres: usize,
    /// Safety margin in metres (closer counts as touching).
    #[arg(long, default_value_t = crate::collision::DEFAULT_MARGIN)]
    pub margin: f32,
}

/// Runs a parsed command and returns the JSON to print.
pub fn run(cli: Cli) -> Result<Value, CliError> {
    match cli.command {
        Command::Info(a) => info(&a),
        Command::Urdf(a) => description(&a),
        Command::Fk(a) => fk(&a),
        Command::Dh(a) => dh(&a),
        Command::Check(a) => check(&a),
        Command::CheckMotions(a) => check_motions(&a),
        Command::Demo(a) => demo::run(&a),
        Command::MbmValidity(a) => mbm_validity(&a),
        Command::Spherize(a) => spherize(&a),
        Command::Plan(a) => plan::run(&a),
        Command::Ik(a) => pose::run_ik(&a),
        Command::Cartesian(a) => cartesian::run(&a),
        Command::Scene(a) => scene::run(&a),
        Command::Controllers(a) => controllers::run(&a),
        Command::Grid(a) => Ok(crate::grid::cli::run_grid(&a)?),
        Command::Bench(b) => match b.command {
            BenchCommand::Collision(a) => bench_collision::run(&a),
            BenchCommand::Mbm(a) => bench_mbm::run(&a),
            BenchCommand::Dynamic(a) => bench_dynamic::run(&a),
            BenchCommand::Grid(a) => Ok(crate::grid::cli::run_bench_grid(&a)?),
            BenchCommand::Ik(a) => bench_ik::run(&a),
            BenchCommand::Pose(a) => bench_pose::run(&a),
            BenchCommand::Cloud(a) => bench_cloud::run(&a),
            BenchCommand::Allowed(a) => bench_allowed::run(&a),
        },
    }
}

fn read_json(path: &Path) -> Result<Value, CliError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| CliError(format!("cannot read {}: {e}", path.display())))?;
    serde_json::from_str(&text)
        .map_err(|e| CliError(format!("{}: invalid JSON: {e}", path.display())))
}

/// `gmp urdf`: `{"urdf": text, "urdf_file": path, "srdf": text or null, "srdf_file": ...,
/// "moveit_config": what `gmp info` says of `--moveit-config` or null}`, each description read
/// (and expanded) once and loaded as a robot (without collision geometry) first, so that only
/// a description the other commands accept is printed.
fn description(a: &RobotArgs) -> Result<Value, CliError> {
    let cfg = moveit_config(a)?;
    let (urdf, urdf_file) = urdf_text(a, cfg.as_ref())?;
    let (srdf, srdf_file) = match (&a.srdf, &cfg) {
        (Some(p), _) => (Some(read_description(p, &[])?), Some(p.clone())),
        (None, Some(c)) => (Some(c.srdf_text()?), Some(c.srdf.clone())),
        (None, None) => (None, None),
    };
    let srdf_name = srdf_file.as_ref().map(|p| p.display().to_string());
    let opts = LoadOptions {
        skip_geometry: true,
        ..LoadOptions::default()
    };
    RobotModel::from_urdf_str_named(
        &urdf,
        &urdf_file.display().to_string(),
        urdf_file.parent(),
        srdf.as_deref().zip(srdf_name.as_deref()),
        &opts,
    )?;
    Ok(json!({
        "urdf": urdf,
        "urdf_file": urdf_file.display().to_string(),
        "srdf": srdf,
        "srdf_file": srdf_file.map(|p| p.display().to_string()),
        "moveit_config": cfg.as_ref().map(moveit_config_json).transpose()?,
    }))
}

/// The MoveIt configuration package of `--moveit-config`, if given.
pub fn moveit_config(a: &RobotArgs) -> Result<Option<MoveItConfig>, CliError> {
    Ok(a.moveit_config
        .as_deref()
        .map(MoveItConfig::locate)
        .transpose()?)
}

/// The URDF of the arguments as `(text, name)`: `--urdf` (xacro expanded), else the one of
/// `--moveit-config`.
pub fn urdf_text(a: &RobotArgs, cfg: Option<&MoveItConfig>) -> Result<(String, PathBuf), CliError> {
    match (&a.urdf, cfg) {
        (Some(path), _) => Ok((read_description(path, &[])?, path.clone())),
        (None, Some(c)) => Ok((c.urdf_text()?, c.urdf.clone())),
        (None, None) => Err(no_robot()),
    }
}

/// The error of a command given neither `--urdf` nor `--moveit-config`.
fn no_robot() -> CliError {
    CliError("a robot is needed: --urdf FILE or --moveit-config PACKAGE".into())
}

/// Loads a robot from CLI arguments: `--urdf`, `--srdf` and `--joint-limits`, each taken from
/// `--moveit-config` where not given.
pub fn load_robot(a: &RobotArgs, skip_geometry: bool) -> Result<RobotModel, CliError> {
    let cfg = moveit_config(a)?;
    let mut opts = LoadOptions {
        search_paths: a.package_paths.clone(),
        skip_geometry,
        spherized_urdf: a.spherized.clone(),
        mesh_parts: Some(a.link_mesh_parts()?),
    };
    let srdf: Option<(String, String)> = match (&a.srdf, &cfg) {
        (Some(path), _) => Some((read_description(path, &[])?, path.display().to_string())),
        (None, Some(c)) => Some((c.srdf_text()?, c.srdf.display().to_string())),
        (None, None) => None,
    };
    let srdf = srdf.as_ref().map(|(t, n)| (t.as_str(), n.as_str()));
    let mut robot = match (&a.urdf, &cfg) {
        (Some(path), _) => {
            if let Some(c) = &cfg {
                opts.search_paths.extend(c.search_paths());
            }
            if is_xacro(path) {
                RobotModel::from_urdf_str_named(
                    &read_description(path, &[])?,
                    &path.display().to_string(),
                    path.parent(),
                    srdf,
                    &opts,
                )?
            } else {
                RobotModel::from_urdf_file_with_srdf(path, srdf, &opts)?
            }
        }
        (None, Some(c)) => c.robot_from_text(&c.urdf_text()?, srdf, &opts)?,
        (None, None) => return Err(no_robot()),
    };
    let limits = a
        .joint_limits
        .clone()
        .or_else(|| cfg.as_ref().and_then(|c| c.joint_limits.clone()));
    if let Some(path) = &limits {
        let file = JointLimitsFile::read(path)?;
        robot.apply_joint_limits(&file, &path.display().to_string())?;
    }
    // --ompl-planning replaces the package's file, which is then not read.
    match (&a.ompl_planning, &cfg) {
        (Some(path), _) => robot.ompl = OmplPlanning::read(path)?,
        (None, Some(c)) => robot.ompl = c.ompl_planning()?,
        (None, None) => {}
    }
    if let Some(c) = &cfg {
        robot.cartesian_limits = c.cartesian_limits()?;
    }
    match (&a.kinematics, &cfg) {
        (Some(path), _) => robot.kinematics = Some(KinematicsConfig::read(path)?),
        (None, Some(c)) => robot.kinematics = c.kinematics()?,
        (None, None) => {}
    }
    Ok(robot)
}

/// `--max-cartesian-speed` and `--speed-limited-link` of the commands that time
/// trajectories: a Cartesian speed limit for one link ([`crate::trajectory::link_speed`]).
#[derive(Args, Debug, Clone, Default)]
pub struct SpeedLimitArgs {
    /// Largest speed of a link's origin (m/s, MoveIt's `max_cartesian_speed`): the trajectory
    /// is slowed uniformly until the link moves no faster, on the same path.
    #[arg(long = "max-cartesian-speed")]
    pub max_cartesian_speed: Option<f64>,
    /// The link `--max-cartesian-speed` limits (default: the link moved, else the group's
    /// tip link).
    #[arg(long = "speed-limited-link", requires = "max_cartesian_speed")]
    pub speed_limited_link: Option<String>,
}

impl SpeedLimitArgs {
    /// The limit, on the link `default_link` gives when none is named; errors name the
    /// option.
    pub fn resolve(
        &self,
        robot: &RobotModel,
        default_link: impl FnOnce() -> Result<usize, CliError>,
    ) -> Result<Option<LinkLimit>, CliError> {
        let Some(max) = self.max_cartesian_speed else {
            return Ok(None);
        };
        if !(max.is_finite() && max > 0.0) {
            return Err(CliError(format!(
                "--max-cartesian-speed must be a positive speed (m/s), got {max}"
            )));
        }
        let link = match &self.speed_limited_link {
            Some(name) => robot
                .tree
                .link(name)
                .map_err(|e| CliError(format!("--speed-limited-link: {e}")))?,
            None => default_link()?,
        };
        Ok(Some(LinkLimit::speed(
            link,
            &robot.tree.links[link].name,
            max,
        )))
    }
}

/// Slows `traj` (of `group`, the other joints at `base`) to a limit of
/// [`SpeedLimitArgs::resolve`] where it is too fast along the path it was timed from; what it
/// did, as JSON (`null` without a limit).
pub fn limit_speed(
    traj: &mut crate::trajectory::Trajectory,
    robot: &RobotModel,
    (group, base): (&crate::robot::PlanningGroup, &[f64]),
    limit: &Option<LinkLimit>,
    along: &crate::trajectory::Along<'_>,
) -> Value {
    match limit {
        Some(limit) => json!(crate::trajectory::limit_link_speed(
            traj,
            &robot.tree,
            group,
            base,
            limit,
            Some(along),
        )),
        None => Value::Null,
    }
}

/// `--velocity-scaling` and `--acceleration-scaling` of the commands that time trajectories.
#[derive(Args, Debug, Clone, Default)]
pub struct ScalingArgs {
    /// Fraction of the velocity limits the trajectory may use, in (0, 1] (default: the
    /// joint limits file's `default_velocity_scaling_factor`, else 1).
    #[arg(long = "velocity-scaling")]
    pub velocity_scaling: Option<f64>,
    /// Fraction of the acceleration limits the trajectory may use, in (0, 1] (default: the
    /// joint limits file's `default_acceleration_scaling_factor`, else 1).
    #[arg(long = "acceleration-scaling")]
    pub acceleration_scaling: Option<f64>,
}

impl ScalingArgs {
    /// The velocity and acceleration scaling to use with `robot`: the options where given,
    /// else the robot's joint limits file defaults, else 1; an error names a bad option.
    pub fn resolve(&self, robot: &RobotModel) -> Result<(f64, f64), CliError> {
        let d = robot.default_scaling;
        let pick = |flag: &str, given: Option<f64>, file: Option<f64>| match given {
            Some(v) if !(v > 0.0 && v <= 1.0) => {
                Err(CliError(format!("{flag} must be in (0, 1], got {v}")))
            }
            _ => Ok(given.or(file).unwrap_or(1.0)),
        };
        Ok((
            pick("--velocity-scaling", self.velocity_scaling, d.velocity)?,
            pick(
                "--acceleration-scaling",
                self.acceleration_scaling,
                d.acceleration,
            )?,
        ))
    }
}

fn string_list(v: &Value, what: &str, file: &Path) -> Result<Vec<String>, CliError> {
    v.as_array()
        .ok_or_else(|| {
            CliError(format!(
                "{}: '{what}' must be a list of strings",
                file.display()
            ))
        })?
        .iter()
        .map(|s| {
            s.as_str().map(str::to_string).ok_or_else(|| {
                CliError(format!(
                    "{}: '{what}' must be a list of strings",
                    file.display()
                ))
            })
        })
        .collect()
}

fn number_row(v: &Value, n: usize, what: &str, file: &Path) -> Result<Vec<f64>, CliError> {
    let arr = v.as_array().ok_or_else(|| {
        CliError(format!(
            "{}: {what} must be a list of numbers",
            file.display()
        ))
    })?;
    if arr.len() != n {
        return Err(CliError(format!(
            "{}: {what} has {} values, expected {n} (one per joint name)",
            file.display(),
            arr.len()
        )));
    }
    arr.iter()
        .map(|x| match x {
            Value::Number(num) => num
                .as_f64()
                .ok_or_else(|| CliError(format!("{}: {what}: bad number", file.display()))),
            // JSON has no NaN; accept the strings "nan"/"inf" so that they are rejected with a
            // clear message downstream instead of a parse error.
            Value::String(s) => s.parse::<f64>().map_err(|_| {
                CliError(format!("{}: {what}: '{s}' is not a number", file.display()))
            }),
            _ => Err(CliError(format!(
                "{}: {what}: {x} is not a number",
                file.display()
            ))),
        })
        .collect()
}

/// Maps named joint values into a full state that starts neutral.
fn full_state_from_names(
    robot: &RobotModel,
    names: &[String],
    values: &[f64],
    out: &mut [f64],
) -> Result<(), CliError> {
    for (n, v) in names.iter().zip(values) {
        let j = robot.tree.joint(n)?;
        let var = robot.tree.joints[j].variable.ok_or_else(|| {
            CliError(format!(
                "joint '{n}' is fixed or a mimic joint and has no value of its own"
            ))
        })?;
        out[var] = *v;
    }
    Ok(())
}

/// The kinematic tree of a bare URDF (no SRDF, no collision geometry) for `fk` and `dh`.
fn load_kinematics(urdf: &Path) -> Result<RobotModel, CliError> {
    load_robot(
        &RobotArgs::description(Some(urdf.to_path_buf()), None, None),
        true,
    )
}

fn fk(a: &FkArgs) -> Result<Value, CliError> {
    let robot = load_kinematics(&a.urdf)?;
    let doc = read_json(&a.configs)?;
    let names = string_list(&doc["joint_names"], "joint_names", &a.configs)?;
    let rows = doc["configs"]
        .as_array()
        .ok_or_else(|| CliError(format!("{}: 'configs' must be a list", a.configs.display())))?;
    let tree = &robot.tree;
    let mut links: BTreeMap<String, Vec<[f64; 7]>> = BTreeMap::new();
    for (i, r) in rows.iter().enumerate() {
        let values = number_row(r, names.len(), &format!("configs[{i}]"), &a.configs)?;
        if let Some((k, _)) = values.iter().enumerate().find(|(_, v)| !v.is_finite()) {
            return Err(CliError(format!(
                "{}: configs[{i}]: joint '{}' is not a finite number",
                a.configs.display(),
                names[k]
            )));
        }
        let mut state = tree.neutral_state();
        full_state_from_names(&robot, &names, &values, &mut state)?;
        for (li, pose) in tree.forward_kinematics(&state).iter().enumerate() {
            let t = pose.translation.vector;
            let q = pose.rotation.coords;
            links
                .entry(tree.links[li].name.clone())
                .or_default()
                .push([t.x, t.y, t.z, q.x, q.y, q.z, q.w]);
        }
    }
    Ok(json!({ "links": links }))
}

fn deepest_link(robot: &RobotModel) -> usize {
    let tree = &robot.tree;
    let depth = |mut l: usize| {
        let mut d = 0;
        while let Some(j) = tree.links[l].parent_joint {
            if tree.joints[j].kind.is_moving() {
                d += 1;
            }
            l = tree.joints[j].parent;
        }
        d
    };
    (0..tree.links.len())
        .max_by_key(|&l| (depth(l), std::cmp::Reverse(l)))
        .unwrap_or(tree.root)
}

fn dh(a: &DhArgs) -> Result<Value, CliError> {
    let robot = load_kinematics(&a.urdf)?;
    let tree = &robot.tree;
    let base = a
        .base
        .clone()
        .unwrap_or_else(|| tree.links[tree.root].name.clone());
    let tip = a
        .tip
        .clone()
        .unwrap_or_else(|| tree.links[deepest_link(&robot)].name.clone());
    let chain = DhChain::from_tree(tree, &base, &tip)?;
    let iso = |i: &nalgebra::Isometry3<f64>| {
        let t = i.translation.vector;
        let q = i.rotation.coords;
        json!([t.x, t.y, t.z, q.x, q.y, q.z, q.w])
    };
    Ok(json!({
        "convention": "standard (distal) DH: T(i-1,i) = Rz(theta) Tz(d) Tx(a) Rx(alpha); revolute: theta = q + theta, prismatic: d = q + d",
        "base_link": chain.base_link,
        "tip_link": chain.tip_link,
        "base_transform": iso(&chain.base),
        "tip_transform": iso(&chain.tip),
        "rows": chain.rows,
    }))
}

/// A point cloud file whose points become boxes of the scene (`crate::scene::cloud`).
#[derive(Args, Debug, Clone)]
pub struct CloudArgs {
    /// Point cloud file (.pcd, .ply, or .xyz/.txt/.csv text) with points in the scene's frame.
    /// Its points become boxes of the scene (`pointcloud/0`, ...); points within
    /// --cloud-padding of the robot at the start state are dropped as the robot's own.
    #[arg(long)]
    pub cloud: Option<PathBuf>,
    /// Edge (m) of the voxels the cloud is cut into.
    #[arg(long = "cloud-resolution", default_value_t = 0.04)]
    pub cloud_resolution: f64,
    /// Self filter padding (m) around the robot's collision bodies.
    #[arg(long = "cloud-padding", default_value_t = 0.03)]
    pub cloud_padding: f64,
    /// Points a voxel needs to be occupied (more drops sparse noise).
    #[arg(long = "cloud-min-points", default_value_t = 1)]
    pub cloud_min_points: usize,
}

impl CloudArgs {
    /// Adds the boxes of `--cloud` to `scene`, the robot at `state` cut out; nothing without
    /// the option. Errors name the file or the option.
    pub fn add_to(
        &self,
        scene: &mut Scene,
        robot: &RobotModel,
        state: &[f64],
    ) -> Result<(), CliError> {
        use crate::scene::cloud::{cloud_boxes, cloud_obstacles, CloudSettings, RobotFilter};
        let Some(path) = &self.cloud else {
            return Ok(());
        };
        let settings = CloudSettings {
            resolution: self.cloud_resolution,
            max_range: 0.0,
            padding: self.cloud_padding,
            min_points: self.cloud_min_points,
            ..CloudSettings::default()
        };
        let points = crate::scene::cloud_file::read_point_cloud(path)
            .map_err(|e| CliError(e.to_string()))?;
        let filter = RobotFilter::new(robot, state, settings.padding);
        let (boxes, _) = cloud_boxes(
            &points,
            &nalgebra::Isometry3::identity(),
            Some(&filter),
            &settings,
        )
        .map_err(|e| CliError(format!("--cloud {}: {e}", path.display())))?;
        for o in cloud_obstacles(&boxes) {
            scene.add(o)?;
        }
        Ok(())
    }
}

/// Writes a benchmark's results as `<dir>/<stem>.json` and `<dir>/<stem>.md` (the folder
/// made if missing), each file whole or not at all; errors name the path.
pub(crate) fn write_bench_results(
    dir: &Path,
    stem: &str,
    v: &Value,
    md: &str,
) -> Result<(), CliError> {
    std::fs::create_dir_all(dir)
        .map_err(|e| CliError(format!("cannot create {}: {e}", dir.display())))?;
    for (ext, text) in [
        ("json", serde_json::to_string_pretty(v)?),
        ("md", md.to_string()),
    ] {
        let path = dir.join(format!("{stem}.{ext}"));
        crate::report::write_atomically(&path, text.as_bytes())
            .map_err(|e| CliError(format!("cannot write {}: {e}", path.display())))?;
    }
    Ok(())
}

/// The scene of a `--scene` file, or an empty world without one.
pub fn scene_or_empty(path: Option<&Path>) -> Result<Scene, CliError> {
    match path {
        Some(p) => Ok(crate::scene::load_scene(p)?),
        None => Ok(Scene::new("world")),
    }
}

/// The scene of a `--scene` file (or an empty world), with the objects of its `attached:`
/// list attached to `robot` (the errors name the object).
pub fn scene_attached(robot: &mut RobotModel, path: Option<&Path>) -> Result<Scene, CliError> {
    let scene = scene_or_empty(path)?;
    for o in scene.attached() {
        robot
            .attach(o)
            .map_err(|e| CliError(format!("attached object '{}': {e}", o.id)))?;
    }
    // Names of a MoveIt allowed_collision_matrix that the robot and scene lack are left
    // aside, as MoveIt does; say so (the node logs the same).
    let (_, unknown) = crate::collision::allowed::scene_entries(robot, &scene);
    if let (Some(path), false) = (path, unknown.is_empty()) {
        eprintln!(
            "scene {}: allowed_collision_matrix names {} that neither the robot nor the scene \
             has; left aside",
            path.display(),
            unknown.join(", ")
        );
    }
    Ok(scene)
}

pub(crate) fn parse_shapes(s: &str) -> Result<RobotShapes, CliError> {
    match s {
        "polytopes" => Ok(RobotShapes::Polytopes),
        "spheres" | "fitted" => Ok(RobotShapes::Spheres),
        other => Err(CliError(format!(
            "--shapes must be 'polytopes', 'spheres' or 'fitted', got '{other}'"
        ))),
    }
}

/// The robot geometry `--shapes` names for `robot`: `polytopes`, `spheres` (the sphere model of
/// `--spherized`) or `fitted` (a sphere model fitted to the collision geometry with `fit`,
/// which replaces any `--spherized` one in `robot`).
pub(crate) fn shapes_for(
    robot: &mut RobotModel,
    shapes: &str,
    fit: &SphereFit,
) -> Result<RobotShapes, CliError> {
    let parsed = parse_shapes(shapes)?;
    if shapes == "fitted" {
        robot.spherized = Some(fit_robot(robot, fit));
    } else if parsed == RobotShapes::Spheres && robot.spherized.is_none() {
        return Err(CliError(
            "--shapes spheres needs a sphere model: give --spherized FILE, or use --shapes fitted"
                .into(),
        ));
    }
    Ok(parsed)
}

/// `gmp spherize`: fits the sphere model, writes it (whole or not at all) and summarises it.
fn spherize(a: &SpherizeArgs) -> Result<Value, CliError> {
    let fit = a.robot.sphere_fit()?;
    let mut robot = load_robot(&a.robot, false)?;
    let spheres = fit_robot(&robot, &fit);
    let mut per_link: BTreeMap<String, usize> = BTreeMap::new();
    for (link, _) in &spheres {
        if let Some(l) = robot.tree.links.get(*link) {
            *per_link.entry(l.name.clone()).or_default() += 1;
        }
    }
    if let Some(out) = &a.out {
        let cfg = moveit_config(&a.robot)?;
        let (text, name) = urdf_text(&a.robot, cfg.as_ref())?;
        let urdf = spherized_urdf(&text, &robot, &spheres)
            .map_err(|e| CliError(format!("{}: {e}", name.display())))?;
        crate::report::write_atomically(out, urdf.as_bytes())
            .map_err(|e| CliError(format!("cannot write {}: {e}", out.display())))?;
    }
    robot.spherized = Some(spheres);
    let self_check = self_collision_loss(&robot)?;
    let spheres = robot.spherized.as_deref().unwrap_or_default();
    if self_check.1 < self_check.0 * 9 / 10 {
        eprintln!(
            "gmp spherize: of {SELF_CHECK_SAMPLES} random configurations, {} are free of self \
             collision with the polytopes and only {} with these spheres (see \
             \"self_check\"); a smaller --sphere-tolerance or more --max-spheres may help",
            self_check.0, self_check.1
        );
    }
    let pairs: Vec<Value> = self_check
        .2
        .iter()
        .map(|((a, b), n)| {
            let name = |l: usize| robot.tree.links.get(l).map(|x| x.name.clone());
            json!({"links": [name(*a), name(*b)], "configurations": n})
        })
        .collect();
    Ok(json!({
        "spheres": spheres.len(),
        "bodies": robot.bodies.len(),
        "self_check": {
            "configurations": SELF_CHECK_SAMPLES,
            "free_with_polytopes": self_check.0,
            "free_with_spheres": self_check.1,
            "pairs_touching_only_with_spheres": pairs,
        },
        "tolerance": fit.tolerance,
        "max_spheres": fit.max_per_body,
        "per_link": per_link,
        "out": a.out.as_ref().map(|p| p.display().to_string()),
    }))
}

/// Random configurations `gmp spherize` checks for self collision.
const SELF_CHECK_SAMPLES: usize = 1000;

/// What `robot`'s sphere model costs in self-collision-free space: of [`SELF_CHECK_SAMPLES`]
/// configurations of the default group drawn uniformly within its limits (seeded), how many are
/// free of self collision with the polytopes and with the spheres, and per checked link pair
/// (by index) in how many of those free with the polytopes its spheres overlap, most first.
#[allow(clippy::type_complexity)]
fn self_collision_loss(
    robot: &RobotModel,
) -> Result<(usize, usize, Vec<((usize, usize), usize)>), CliError> {
    let spheres = robot.spherized.as_deref().unwrap_or_default();
    use rand::SeedableRng;
    let group = robot.default_group();
    let base = robot.tree.neutral_state();
    let scene = Scene::new("world");
    let one = CheckerOptions {
        threads: 1,
        ..Default::default()
    };
    let polytopes = CpuChecker::new(robot, &group, &base, &scene, one)?;
    let balls = CpuChecker::new(
        robot,
        &group,
        &base,
        &scene,
        CheckerOptions {
            shapes: RobotShapes::Spheres,
            ..one
        },
    )?;
    let space = &group.space;
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(0);
    let mut batch = ConfigBatch::new(space.dof());
    for _ in 0..SELF_CHECK_SAMPLES {
        batch.push(&space.sample_uniform(&mut rng))?;
    }
    let free_p = polytopes.check_configs(&batch)?;
    let free_s = balls.check_configs(&batch)?;
    let mut pairs: BTreeMap<(usize, usize), usize> = BTreeMap::new();
    for (i, q) in batch.rows().enumerate() {
        if free_p[i] && !free_s[i] {
            let state = group.full_state(&base, q);
            for (a, b, _) in self_contacts(robot, spheres, &state) {
                *pairs.entry((a, b)).or_default() += 1;
            }
        }
    }
    let mut pairs: Vec<((usize, usize), usize)> = pairs.into_iter().collect();
    pairs.sort_by(|x, y| y.1.cmp(&x.1).then(x.0.cmp(&y.0)));
    let count = |v: &[bool]| v.iter().filter(|&&x| x).count();
    Ok((count(&free_p), count(&free_s), pairs))
}

/// Builds the checker for `check`/`check-motions`: robot, group (from --group or the joint
/// names), base state (neutral plus `fixed` values), scene, backend.
fn build_checker(
    c: &CheckCommon,
    names: &[String],
    fixed: &Value,
    file: &Path,
) -> Result<(Box<dyn Checker>, PlanningGroup), CliError> {
    let mut robot = load_robot(&c.robot, false)?;
    let shapes = shapes_for(&mut robot, &c.shapes, &c.robot.sphere_fit()?)?;
    let group = match &c.group {
        Some(g) => robot.group(g)?,
        None => robot.group_from_joints(names)?,
    };
    if group.space.names != names {
        return Err(CliError(format!(
            "{}: joint_names {:?} do not match group '{}' joints {:?}",
            file.display(),
            names,
            group.name,
            group.space.names
        )));
    }
    let mut base = robot.tree.neutral_state();
    if let Some(obj) = fixed.as_object() {
        let fnames: Vec<String> = obj.keys().cloned().collect();
        let fvalues: Vec<f64> = obj
            .values()
            .map(|v| {
                v.as_f64().ok_or_else(|| {
                    CliError(format!(
                        "{}: 'fixed' values must be numbers",
                        file.display()
                    ))
                })
            })
            .collect::<Result<_, _>>()?;
        full_state_from_names(&robot, &fnames, &fvalues, &mut base)?;
    }
    let scene = scene_attached(&mut robot, c.scene.as_deref())?;
    let opts = CheckerOptions {
        shapes,
        ..Default::default()
    };
    let checker =
        crate::collision::make_scene_checker(&c.backend, &robot, &group, &base, &scene, opts)?;
    Ok((checker, group))
}

fn check(a: &CheckArgs) -> Result<Value, CliError> {
    let doc = read_json(&a.configs)?;
    let names = string_list(&doc["joint_names"], "joint_names", &a.configs)?;
    let rows = doc["configs"]
        .as_array()
        .ok_or_else(|| CliError(format!("{}: 'configs' must be a list", a.configs.display())))?;
    let (checker, _) = build_checker(&a.common, &names, &doc["fixed"], &a.configs)?;
    let mut batch = ConfigBatch::with_capacity(names.len(), rows.len());
    for (i, r) in rows.iter().enumerate() {
        batch.push(&number_row(
            r,
            names.len(),
            &format!("configs[{i}]"),
            &a.configs,
        )?)?;
    }
    let valid = checker.check_configs(&batch)?;
    Ok(json!({ "valid": valid }))
}

fn check_motions(a: &CheckMotionsArgs) -> Result<Value, CliError> {
    let doc = read_json(&a.motions)?;
    let names = string_list(&doc["joint_names"], "joint_names", &a.motions)?;
    let rows = doc["motions"].as_array().ok_or_else(|| {
        CliError(format!(
            "{}: 'motions' must be a list of [from, to] pairs",
            a.motions.display()
        ))
    })?;
    let (checker, _) = build_checker(&a.common, &names, &doc["fixed"], &a.motions)?;
    let mut batch = MotionBatch::new(names.len());
    for (i, r) in rows.iter().enumerate() {
        let pair = r.as_array().filter(|p| p.len() == 2).ok_or_else(|| {
            CliError(format!(
                "{}: motions[{i}] must be [from, to]",
                a.motions.display()
            ))
        })?;
        let from = number_row(
            &pair[0],
            names.len(),
            &format!("motions[{i}][0]"),
            &a.motions,
        )?;
        let to = number_row(
            &pair[1],
            names.len(),
            &format!("motions[{i}][1]"),
            &a.motions,
        )?;
        batch.push(&from, &to)?;
    }
    let valid = checker.check_motions(&batch, a.resolution)?;
    Ok(json!({ "valid": valid, "resolution": a.resolution }))
}

fn info(a: &RobotArgs) -> Result<Value, CliError> {
    let robot = load_robot(a, false)?;
    let tree = &robot.tree;
    let groups: Vec<Value> = robot
        .srdf
        .as_ref()
        .map(|s| s.groups.iter().map(|g| json!({"name": g.name, "joints": robot.group(&g.name).map(|pg| pg.space.names).unwrap_or_default()})).collect())
        .unwrap_or_default();
    let bodies: Vec<Value> = robot
        .bodies
        .iter()
        .map(|b| json!({"link": tree.links[b.link].name, "vertices": b.polytope.vertices.len(), "covering_spheres": b.covering.spheres.len()}))
        .collect();
    Ok(json!({
        "name": tree.name,
        "links": tree.links.len(),
        "joints": tree.joints.iter().map(|j| json!({"name": j.name, "kind": format!("{:?}", j.kind).to_lowercase(), "lower": j.limits.lower, "upper": j.limits.upper, "velocity": j.limits.velocity, "acceleration": j.limits.acceleration, "jerk": j.limits.jerk, "mimic": j.mimic.map(|m| tree.joints[m.joint].name.clone())})).collect::<Vec<_>>(),
        "variables": tree.variable_names,
        "groups": groups,
        "collision_bodies": bodies,
        "allowed_pairs": robot.allowed.len(),
        "spherized_spheres": robot.spherized.as_ref().map(|s| s.len()),
        "default_scaling": {
            "velocity": robot.default_scaling.velocity,
            "acceleration": robot.default_scaling.acceleration,
        },
        "ompl_planning": (!robot.ompl.is_empty()).then(|| json!(robot.ompl)),
        "cartesian_limits": robot.cartesian_limits,
        "kinematics": robot.kinematics,
        "moveit_config": moveit_config(a)?.map(|c| moveit_config_json(&c)).transpose()?,
    }))
}

/// What `gmp info` and `gmp controllers` say of a MoveIt configuration package: its folder,
/// the files used and the point cloud topics of its `sensors_3d.yaml`.
pub fn moveit_config_json(c: &MoveItConfig) -> Result<Value, CliError> {
    let path = |p: &Option<PathBuf>| p.as_ref().map(|p| p.display().to_string());
    Ok(json!({
        "dir": c.dir.display().to_string(),
        "robot_name": c.robot_name,
        "found_by": match c.found_by {
            FoundBy::SetupAssistant => ".setup_assistant",
            FoundBy::Convention => "file names",
        },
        "urdf": c.urdf.display().to_string(),
        "xacro_args": c.xacro_args,
        "srdf": c.srdf.display().to_string(),
        "joint_limits": path(&c.joint_limits),
        "controllers": path(&c.controllers),
        "initial_positions": path(&c.initial_positions),
        "sensors_3d": path(&c.sensors_3d),
        "ompl_planning": path(&c.ompl_planning),
        "cartesian_limits": path(&c.cartesian_limits),
        "kinematics": path(&c.kinematics),
        "point_cloud_topics": c.point_cloud_topics()?,
        "not_read": c.unread_files(),
    }))
}

/// A checker of `backend` (as `make_checker` takes it) for MBM problem `p`'s scene, the
/// robot's other joints at the problem's start (`threads`: CPU checker threads, 0 for all).
pub(crate) fn mbm_backend_checker(
    backend: &str,
    r: &crate::mbm::MbmRobot,
    p: &crate::mbm::Problem,
    shapes: RobotShapes,
    threads: usize,
) -> Result<Box<dyn Checker>, CliError> {
    Ok(crate::collision::make_checker(
        backend,
        &r.model,
        &r.group,
        &r.start_full_state(p),
        &p.scene,
        CheckerOptions {
            shapes,
            threads,
            ..Default::default()
        },
    )?)
}

/// A one-thread CPU checker of MBM problem `p`'s scene (the robot's other joints at the
/// problem's start), and whether its start and goal configurations are collision free.
pub(crate) fn mbm_problem_checker(
    r: &crate::mbm::MbmRobot,
    p: &crate::mbm::Problem,
    shapes: RobotShapes,
) -> Result<(Box<dyn Checker>, [bool; 2]), CliError> {
    let (start, goal) = r.start_goal(p)?;
    let checker = mbm_backend_checker("cpu", r, p, shapes, 1)?;
    let v = checker.check_configs(&ConfigBatch::from_rows(start.len(), &[start, goal])?)?;
    let free = |k: usize| v.get(k).copied().unwrap_or(false);
    Ok((checker, [free(0), free(1)]))
}

/// Start/goal validity of every MBM problem, per robot and scene.
pub fn mbm_validity(a: &MbmValidityArgs) -> Result<Value, CliError> {
    let data = crate::mbm::data_dir()?;
    let fit = sphere_fit(a.sphere_tolerance, a.max_spheres)?;
    let mut out = serde_json::Map::new();
    for name in &a.robots {
        let mut r = crate::mbm::load_robot(&data, name)?;
        let shapes = shapes_for(&mut r.model, &a.shapes, &fit)?;
        let problems = crate::mbm::load_problems(&data, name)?;
        let mut per_scene: BTreeMap<String, (usize, usize)> = BTreeMap::new();
        let mut invalid = Vec::new();
        for p in &problems {
            let (_, v) = mbm_problem_checker(&r, p, shapes)?;
            let e = per_scene.entry(p.scene_name.clone()).or_default();
            e.1 += 1;
            if v[0] && v[1] {
                e.0 += 1;
            } else {
                invalid.push(json!({"scene": p.scene_name, "index": p.index, "start_valid": v[0], "goal_valid": v[1]}));
            }
        }
        let valid: usize = per_scene.values().map(|x| x.0).sum();
        out.insert(name.clone(), json!({
            "valid": valid,
            "total": problems.len(),
            "per_scene": per_scene.iter().map(|(k, v)| (k.clone(), json!({"valid": v.0, "total": v.1}))).collect::<serde_json::Map<_, _>>(),
            "invalid": invalid,
        }));
    }
    Ok(Value::Object(out))
}
