//! `gmp plan`: one planning query from files and the command line, answered with the timed
//! trajectory as JSON; or, with `--batch FILE`, many queries in the same scene (one report with
//! a result per problem; see [`run_batch`]); or, with `--sequence FILE`, several motions one
//! after another joined into one trajectory ([`super::sequence`]).
//!
//! Exit status: 0 with `"success": true` when a trajectory was found; 1 with
//! `"success": false` on stdout (and the reason on stderr) when the planner found no path
//! within its limits; 2 with `error: ...` on stderr for unusable input (a missing file, a
//! start or goal in collision or outside the joint limits, an unknown planner). With
//! `--batch`, 0 when every problem was solved, 1 when some were not (each problem's error is
//! in its entry: no path, or a start or goal in collision or outside the limits), 2 for an
//! unusable batch file or option.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use nalgebra::{Isometry3, Vector3};
use serde_json::{json, Value};

use super::tuning::PlannerTuning;
use super::{
    limit_speed, load_robot, scene_attached, shapes_for, CliError, RobotArgs, ScalingArgs,
    SpeedLimitArgs,
};
use crate::collision::{Checker, CheckerOptions, RobotShapes};
use crate::planners::constrained::plan_constrained;
use crate::planners::ompl::{self, OmplChoice};
use crate::planners::pilz::{self, CircPoint, PilzPath};
use crate::planners::pose::{plan_to_poses_with, solvers_for, MAX_GOAL_POSES};
use crate::planners::{PlanError, PlanRequest, PlanResult, PlannerId};
use crate::robot::constraint::{ConstraintSet, ConstraintSpec, PathConstraints};
use crate::robot::ik::{IkSolver, PoseTarget};
use crate::robot::{PlanningGroup, RobotModel};
use crate::scene::Scene;
use crate::trajectory::{Along, LinkLimit};

/// `gmp plan` arguments.
#[derive(Args, Debug, Clone)]
pub struct PlanArgs {
    /// Robot description.
    #[command(flatten)]
    pub robot: RobotArgs,
    /// Scene file (the project's YAML scene format or a MoveIt PlanningScene YAML); none =
    /// an empty world.
    #[arg(long)]
    pub scene: Option<PathBuf>,
    /// A point cloud added to the scene as boxes (see `CloudArgs`).
    #[command(flatten)]
    pub cloud: super::CloudArgs,
    /// A MoveIt MotionPlanRequest YAML giving the start state, group and goal: the joint
    /// constraints of its first goal constraint, or else its first position constraint (a box
    /// or sphere region; the tolerance is the sphere's radius or half the box's smallest side)
    /// with its first orientation constraint (the tolerance is the smallest axis tolerance) as
    /// a pose goal. Joints outside the planning group keep the request's start values.
    #[arg(long)]
    pub request: Option<PathBuf>,
    /// Start configuration as a JSON list in planning-group joint order, or a named state of
    /// the group in the SRDF such as `home` (overrides the request's).
    #[arg(long)]
    pub start: Option<String>,
    /// Goal configuration as a JSON list in planning-group joint order, or a named state of
    /// the group in the SRDF such as `home` (overrides the request's).
    #[arg(long, conflicts_with = "goal_pose")]
    pub goal: Option<String>,
    /// One more goal (repeatable), as `--goal` takes it: a goal set, the plan ending at the
    /// goal or at any of these, whichever the planner reaches (RRT-Connect grows its goal
    /// tree from all, on the device it races attempts towards all, PRM takes the shortest
    /// roadmap path to any, RRT and RRT* connect to any; PTP and planning under path
    /// constraints take them in turn). A `--request` with
    /// several goal constraints of joint constraints makes one too (its further ones come
    /// first, then these). The output's `reached_goal` says which: 0 for the goal, k for the
    /// k-th other goal.
    #[arg(long = "other-goal", conflicts_with = "goal_pose")]
    pub other_goals: Vec<String>,
    /// A pose goal instead of a goal configuration (see `gmp ik`).
    #[command(flatten)]
    pub pose: super::pose::PoseGoalArgs,
    /// One more goal pose (repeatable; grasp candidates), as `--goal-pose` takes it and with
    /// its link and tolerances: the solutions of every pose make one goal set, the plan ending
    /// at whichever pose the planner reaches. With a pose goal only (`--goal-pose`, or a
    /// `--request` whose first goal constraint is a pose: its further pose constraints come
    /// first, then these). The output's `reached_goal` says which: 0 for the goal pose, k for
    /// the k-th other one.
    #[arg(long = "other-goal-pose", conflicts_with_all = ["goal", "other_goals"])]
    pub other_goal_poses: Vec<String>,
    /// Path constraints: a YAML file holding a MoveIt `moveit_msgs/Constraints`
    /// (`orientation_constraints` with XYZ Euler angles or a rotation vector,
    /// `position_constraints` with one BOX region each, `joint_constraints`), kept by every
    /// configuration of the path (see `planners::constrained`; not with PTP, LIN, CIRC). Replaces the
    /// request's `path_constraints`. Frames: the scene's, the robot's root link or another
    /// link (at the start state).
    #[arg(long = "path-constraints")]
    pub path_constraints: Option<PathBuf>,
    /// A goal region instead of a goal configuration or pose (MoveIt's goal constraints): a
    /// YAML file holding a `moveit_msgs/Constraints` as `--path-constraints` reads it. The
    /// plan ends at a configuration satisfying every constraint (and the path constraints):
    /// the start and random configurations (seeded by `--seed`) are projected onto them, and
    /// the collision-free ones nearest to the start make one goal set. Replaces a
    /// `--request`'s goal (a request whose first goal constraint is a BOX region, or
    /// orientations alone, is read as such a region itself).
    #[arg(long = "goal-constraints", conflicts_with_all = ["goal", "other_goals", "goal_pose", "other_goal_poses"])]
    pub goal_constraints: Option<PathBuf>,
    /// Planner: prm, lazy_prm, rrt, rrt_star or rrt_connect, an OMPL id (e.g. RRTConnect), a
    /// configuration of the robot's `ompl_planning.yaml` (`--ompl-planning`, or the MoveIt
    /// config's), or a Pilz motion: PTP, LIN or CIRC (see `planners::pilz`). Default: the
    /// group's `default_planner_config` there, else rrt_connect.
    #[arg(long)]
    pub planner: Option<String>,
    /// `--planner CIRC`: the centre of the circle, `[x, y, z]` in the robot's root frame.
    #[arg(long = "circ-center", conflicts_with = "circ_interim")]
    pub circ_center: Option<String>,
    /// `--planner CIRC`: a point the arc passes through, `[x, y, z]` in the robot's root frame.
    #[arg(long = "circ-interim")]
    pub circ_interim: Option<String>,
    /// Planning group from the SRDF (default: the request's group, else the first SRDF group).
    #[arg(long)]
    pub group: Option<String>,
    /// Seed of the planner's random generator.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Planning time limit in seconds.
    #[arg(long = "time-limit", default_value_t = 5.0)]
    pub time_limit: f64,
    /// Backend: auto (hybrid with a GPU, else cpu), cpu, cuda or hybrid (small calls on the CPU, large ones on the GPU).
    #[arg(long, default_value = "auto")]
    pub backend: String,
    /// Robot geometry: polytopes (URDF collision geometry), spheres (the sphere model of
    /// --spherized) or fitted (a sphere model fitted to the collision geometry, see
    /// `gmp spherize`).
    #[arg(long, default_value = "polytopes")]
    pub shapes: String,
    /// Joint-space distance between checked configurations along a motion.
    #[arg(long, default_value_t = 0.02)]
    pub resolution: f64,
    /// Fractions of the velocity and acceleration limits the trajectory may use.
    #[command(flatten)]
    pub scaling: ScalingArgs,
    /// A Cartesian speed limit (default link: the group's tip link).
    #[command(flatten)]
    pub speed: SpeedLimitArgs,
    /// Stop RRT* after this many iterations (makes its result reproducible).
    #[arg(long = "max-iterations")]
    pub max_iterations: Option<usize>,
    /// Planner tuning (shared with `gmp bench mbm`).
    #[command(flatten)]
    pub tuning: PlannerTuning,
    /// Many problems for the same robot, scene and options: a YAML (or JSON) list of
    /// `{start: [...], goal: [...]}` (optional `name`), configurations in planning-group joint
    /// order. Prints one report with a result per problem. With `--on-device` and a GPU every
    /// problem is planned in one device launch.
    #[arg(long, conflicts_with_all = ["start", "goal", "other_goals", "request", "goal_pose", "path_constraints", "goal_constraints"])]
    pub batch: Option<PathBuf>,
    /// Several motions one after another from `--start`, joined into one trajectory, with
    /// blends where an item gives a `blend_radius`: a YAML (or JSON) file with `items:`, each
    /// a `planner`, a `goal` (configuration or named state) or `pose`, optional
    /// `blend_radius`, scalings and Cartesian speed limit (see `cli::sequence`).
    #[arg(long, conflicts_with_all = ["goal", "other_goals", "request", "goal_pose", "path_constraints", "goal_constraints", "batch", "planner"])]
    pub sequence: Option<PathBuf>,
}

/// One problem of a `--batch` file.
#[derive(Debug, Clone, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BatchItem {
    /// A name for the report (default: the problem's index).
    #[serde(default)]
    pub name: Option<String>,
    /// Start configuration (planning-group joint order).
    pub start: Vec<f64>,
    /// Goal configuration (planning-group joint order).
    pub goal: Vec<f64>,
}

/// Reads a `--batch` file: a non-empty list of [`BatchItem`]s whose configurations have the
/// group's joint count; errors name the file and the problem.
pub fn read_batch(
    path: &std::path::Path,
    group: &PlanningGroup,
) -> Result<Vec<BatchItem>, CliError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| CliError(format!("--batch {}: {e}", path.display())))?;
    let items: Vec<BatchItem> = serde_yaml::from_str(&text).map_err(|e| {
        CliError(format!(
            "--batch {}: expected a list of {{start: [...], goal: [...]}}: {e}",
            path.display()
        ))
    })?;
    if items.is_empty() {
        return Err(CliError(format!(
            "--batch {}: the list of problems is empty",
            path.display()
        )));
    }
    let dof = group.space.dof();
    for (i, it) in items.iter().enumerate() {
        for (what, q) in [("start", &it.start), ("goal", &it.goal)] {
            if q.len() != dof {
                return Err(CliError(format!(
                    "--batch {}: problem {i}{}: {what} has {} values but group '{}' has {} joints {:?}",
                    path.display(),
                    it.name.as_ref().map(|n| format!(" ({n})")).unwrap_or_default(),
                    q.len(),
                    group.name,
                    dof,
                    group.space.names
                )));
            }
        }
    }
    Ok(items)
}

/// A planning problem ready to run: the robot, its group, the base state of the joints the
/// group does not move, the scene and the start and goal configurations.
pub struct Problem {
    /// The robot (with the fitted sphere model for `--shapes fitted`).
    pub robot: RobotModel,
    /// The robot geometry `--shapes` names.
    pub shapes: RobotShapes,
    /// The planning group.
    pub group: PlanningGroup,
    /// Full robot state holding the values of the joints outside the group.
    pub base: Vec<f64>,
    /// Obstacles.
    pub scene: Scene,
    /// Start configuration (group order).
    pub start: Vec<f64>,
    /// Goal configuration (group order); empty when `pose` is set.
    pub goal: Vec<f64>,
    /// More goals of `--other-goal` (a goal set with `goal`).
    pub other_goals: Vec<Vec<f64>>,
    /// The pose goal of `--goal-pose`, which replaces the goal configuration.
    pub pose: Option<PoseTarget>,
    /// More goal poses beside `pose` (`--other-goal-pose`, a request's further pose goals).
    pub other_poses: Vec<PoseTarget>,
    /// Path constraints of `--path-constraints` or the request, in the root frame.
    pub constraints: PathConstraints,
    /// The goal region of `--goal-constraints` or the request, with the path constraints, in
    /// the root frame; it replaces the goal configuration (`goal` is empty).
    pub region: Option<PathConstraints>,
}

/// Parses a configuration given on the command line as a JSON list of numbers.
pub fn parse_config(text: &str, what: &str, group: &PlanningGroup) -> Result<Vec<f64>, CliError> {
    parse_config_or_named(text, what, group, None)
}

/// [`parse_config`], or with `robot` a named state of the group in its SRDF (`home`: text
/// that does not start with `[`).
pub fn parse_config_or_named(
    text: &str,
    what: &str,
    group: &PlanningGroup,
    robot: Option<&RobotModel>,
) -> Result<Vec<f64>, CliError> {
    if let Some(robot) = robot.filter(|_| !text.trim_start().starts_with('[')) {
        return robot
            .named_config(group, text.trim())
            .map_err(|e| CliError(format!("--{what}: {e}")));
    }
    let values: Vec<f64> = serde_json::from_str(text).map_err(|e| {
        CliError(format!(
            "--{what} must be a JSON list of numbers like [0.0, 1.2, ...], got '{text}': {e}"
        ))
    })?;
    if values.len() != group.space.dof() {
        return Err(CliError(format!(
            "--{what} has {} values but group '{}' has {} joints {:?}",
            values.len(),
            group.name,
            group.space.dof(),
            group.space.names
        )));
    }
    Ok(values)
}

/// The pose of `frame` in the robot's root frame: identity for an empty frame, the scene's
/// frame and the root link; another link of the robot where the full state `base` puts it.
fn frame_pose(
    robot: &RobotModel,
    base: &[f64],
    scene_frame: &str,
    frame: &str,
) -> Result<Isometry3<f64>, String> {
    let tree = &robot.tree;
    let root = &tree.links[tree.root].name;
    if frame.is_empty() || frame == scene_frame || frame == root {
        return Ok(Isometry3::identity());
    }
    let f = tree.link(frame).map_err(|_| {
        format!(
            "frame '{frame}' is neither the scene's frame '{scene_frame}' nor a link of the robot"
        )
    })?;
    Ok(tree.forward_kinematics(base)[f])
}

/// The target of a MoveIt request's pose constraint: its frame is empty, the scene's frame,
/// the robot's root link or another link of the robot (taken at the full state `base`).
fn request_target(
    robot: &RobotModel,
    base: &[f64],
    scene_frame: &str,
    rp: &crate::mbm::RequestPose,
) -> Result<PoseTarget, String> {
    let link = robot.tree.link(&rp.link).map_err(|e| e.to_string())?;
    let pose = crate::robot::ik::pose_from_parts(rp.position, rp.orientation, "pose constraint")
        .map_err(|e| e.to_string())?;
    let pose = frame_pose(robot, base, scene_frame, &rp.frame)? * pose;
    Ok(PoseTarget {
        link,
        pose,
        position_tolerance: rp.position_tolerance,
        orientation_tolerance: rp.orientation_tolerance,
    })
}

/// Reads `--path-constraints` or `--goal-constraints` (`option`): a MoveIt `Constraints`
/// YAML; errors name the option and the file.
fn read_constraints(path: &std::path::Path, option: &str) -> Result<ConstraintSpec, CliError> {
    let named = |m: String| CliError(format!("{option} {}: {m}", path.display()));
    let text = std::fs::read_to_string(path).map_err(|e| named(e.to_string()))?;
    let doc: serde_yaml::Value = serde_yaml::from_str(&text).map_err(|e| named(e.to_string()))?;
    ConstraintSpec::from_moveit_yaml(&doc).map_err(named)
}

/// Builds the problem from the arguments (robot, group, base state, scene, start, goal).
pub fn problem(a: &PlanArgs) -> Result<Problem, CliError> {
    let mut robot = load_robot(&a.robot, false)?;
    let shapes = shapes_for(&mut robot, &a.shapes, &a.robot.sphere_fit()?)?;
    let request = match &a.request {
        Some(p) => Some(crate::mbm::read_request(p)?),
        None => None,
    };
    let group_name = a.group.clone().or_else(|| {
        request
            .as_ref()
            .map(|r| r.group.clone())
            .filter(|g| !g.is_empty())
    });
    let group = match group_name {
        Some(g) => robot.group(&g)?,
        None => robot.default_group(),
    };
    let mut base = robot.tree.neutral_state();
    let mut start = None;
    let mut goal = None;
    let mut request_goals = Vec::new();
    if let (Some(req), Some(path)) = (&request, &a.request) {
        for (i, name) in robot.tree.variable_names.iter().enumerate() {
            if let (Some(v), Some(slot)) = (req.start.get(name), base.get_mut(i)) {
                *slot = *v;
            }
        }
        start = Some(group.config_of(&base));
        let mut g = Vec::with_capacity(group.space.dof());
        for n in &group.space.names {
            match req.goal.iter().find(|(j, _)| j == n) {
                Some((_, v)) => g.push(*v),
                None => {
                    // A joint the goal leaves unconstrained has no single target value.
                    let other_goal = a.goal.is_some()
                        || a.pose.goal_pose.is_some()
                        || a.goal_constraints.is_some();
                    if !other_goal && req.pose_goal.is_none() && req.goal_region.is_empty() {
                        return Err(CliError(format!(
                            "{}: the goal constraints lack joint '{n}' of group '{}'; give --goal",
                            path.display(),
                            group.name
                        )));
                    }
                }
            }
        }
        // Values just outside a limit (a limit rounded in the URDF) count as on it, as in
        // `mbm::MbmRobot::start_goal`.
        if let Some(s) = start.as_mut() {
            group.space.snap_to_limits(s, crate::robot::LIMIT_TOLERANCE);
        }
        if g.len() == group.space.dof() {
            group
                .space
                .snap_to_limits(&mut g, crate::robot::LIMIT_TOLERANCE);
            goal = Some(g);
        }
        // Further goal constraints: a goal set (unless --goal or a pose goal replaces it).
        if a.goal.is_none() && a.pose.goal_pose.is_none() {
            for (k, other) in req.other_goals.iter().enumerate() {
                let mut g = Vec::with_capacity(group.space.dof());
                for n in &group.space.names {
                    let (_, v) = other.iter().find(|(j, _)| j == n).ok_or_else(|| {
                        CliError(format!(
                            "{}: goal_constraints[{}] lacks joint '{n}' of group '{}'",
                            path.display(),
                            k + 1,
                            group.name
                        ))
                    })?;
                    g.push(*v);
                }
                group
                    .space
                    .snap_to_limits(&mut g, crate::robot::LIMIT_TOLERANCE);
                request_goals.push(g);
            }
        }
    }
    if let Some(s) = &a.start {
        start = Some(parse_config_or_named(s, "start", &group, Some(&robot))?);
    }
    if let Some(g) = &a.goal {
        goal = Some(parse_config_or_named(g, "goal", &group, Some(&robot))?);
    }
    let start = start.ok_or_else(|| CliError("no start: give --start or --request".into()))?;
    let mut scene = scene_attached(&mut robot, a.scene.as_deref())?;
    a.cloud
        .add_to(&mut scene, &robot, &group.full_state(&base, &start))?;
    let mut pose = a.pose.target(&robot, &group)?;
    let mut other_poses = Vec::new();
    if let (None, None, Some(req), Some(path)) = (&pose, &goal, &request, &a.request) {
        if let Some(rp) = &req.pose_goal {
            let target = |rp, at: usize| {
                request_target(&robot, &base, scene.frame(), rp).map_err(|e| {
                    CliError(format!("{}: goal_constraints[{at}]: {e}", path.display()))
                })
            };
            pose = Some(target(rp, 0)?);
            for (at, c) in &req.other_pose_goals {
                other_poses.push(target(c, *at)?);
            }
        }
    }
    for (i, text) in a.other_goal_poses.iter().enumerate() {
        if pose.is_none() {
            return Err(CliError(
                "--other-goal-pose goes with a pose goal (--goal-pose, or a --request whose \
                 goal is a pose); give more goal configurations with --other-goal"
                    .into(),
            ));
        }
        let option = format!("--other-goal-pose #{}", i + 1);
        other_poses.push(a.pose.target_of(text, &option, &robot, &group)?);
    }
    if 1 + other_poses.len() > MAX_GOAL_POSES {
        return Err(CliError(format!(
            "{} goal poses: at most {MAX_GOAL_POSES}",
            1 + other_poses.len()
        )));
    }
    let spec = match (&a.path_constraints, &request) {
        (Some(p), _) => read_constraints(p, "--path-constraints")?,
        (None, Some(r)) => r.path_constraints.clone(),
        (None, None) => ConstraintSpec::default(),
    };
    let state = group.full_state(&base, &start);
    let resolve = |spec: &ConstraintSpec| {
        spec.resolve(&robot.tree, |f| {
            frame_pose(&robot, &state, scene.frame(), f)
        })
    };
    let constraints = resolve(&spec).map_err(|e| CliError(e.to_string()))?;
    // The goal region: the file's, else the request's unless a goal replaces it.
    let replaced = goal.is_some() || pose.is_some();
    let region_spec = match (&a.goal_constraints, &request) {
        (Some(p), _) => Some(read_constraints(p, "--goal-constraints")?),
        (None, Some(r)) if !replaced && !r.goal_region.is_empty() => Some(r.goal_region.clone()),
        _ => None,
    };
    let region = match region_spec {
        Some(spec) if spec.is_empty() => {
            return Err(CliError(
                "--goal-constraints: the file holds no constraint (give \
                 orientation_constraints, position_constraints or joint_constraints)"
                    .into(),
            ))
        }
        Some(spec) => {
            let region = resolve(&spec)
                .map_err(|e| CliError(format!("goal constraints: {}", e.detail())))?;
            Some(region.and(&constraints))
        }
        None => None,
    };
    let mut other_goals = request_goals;
    let given = a
        .other_goals
        .iter()
        .enumerate()
        .map(|(i, g)| {
            parse_config_or_named(g, &format!("other-goal #{}", i + 1), &group, Some(&robot))
        })
        .collect::<Result<Vec<_>, _>>()?;
    other_goals.extend(given);
    let goal = match (goal, &pose) {
        _ if region.is_some() => Vec::new(),
        (_, Some(_)) => Vec::new(),
        (Some(g), None) => g,
        (None, None) => {
            return Err(CliError(
                "no goal: give --goal, --goal-pose or --request".into(),
            ))
        }
    };
    Ok(Problem {
        robot,
        shapes,
        group,
        base,
        scene,
        start,
        goal,
        other_goals,
        pose,
        other_poses,
        constraints,
        region,
    })
}

/// The Cartesian speed limit of `a` (default link: the group's tip link).
fn speed_limit(
    a: &PlanArgs,
    robot: &RobotModel,
    group: &PlanningGroup,
) -> Result<Option<crate::trajectory::LinkLimit>, CliError> {
    a.speed.resolve(robot, || {
        crate::robot::ik::default_tip_link(robot, group).ok_or_else(|| {
            CliError(format!(
                "group '{}' has no tip link; give --speed-limited-link",
                group.name
            ))
        })
    })
}

/// The request for `a` (planner, limits and options) for planning group `group` from
/// `start` to `goal`, with the robot's `ompl_planning.yaml` applied
/// ([`crate::planners::ompl`]; the command's options win over a configuration's settings).
pub fn request(
    a: &PlanArgs,
    robot: &RobotModel,
    group: &PlanningGroup,
    start: Vec<f64>,
    goal: Vec<f64>,
) -> Result<(PlanRequest, Option<OmplChoice>), CliError> {
    let chosen = ompl::choice(&robot.ompl, &group.name, a.planner.as_deref())
        .map_err(|e| CliError(format!("--planner: {e}")))?;
    let planner: PlannerId = match (&chosen, &a.planner) {
        (Some(c), _) => c.planner,
        (None, Some(p)) => p.parse().map_err(|e| CliError(format!("{e}")))?,
        (None, None) => PlannerId::RrtConnect,
    };
    if !(a.time_limit.is_finite() && a.time_limit > 0.0) {
        return Err(CliError(format!(
            "--time-limit must be a positive number of seconds, got {}",
            a.time_limit
        )));
    }
    let mut req = PlanRequest::new(start, goal, planner);
    req.group = group.name.clone();
    req.seed = a.seed;
    req.time_limit = Duration::from_secs_f64(a.time_limit.min(1e9));
    req.resolution = ompl::resolution(&robot.ompl, group, a.resolution);
    (req.vel_scale, req.acc_scale) = a.scaling.resolve(robot)?;
    req.max_iterations = a.max_iterations;
    if let Some(c) = &chosen {
        c.apply(&mut req);
    }
    a.tuning.apply(&mut req);
    Ok((req, chosen))
}

/// The JSON report of a successful plan.
pub fn result_json(res: &PlanResult, checker: &dyn Checker, group: &str) -> Value {
    let st = &res.stats;
    json!({
        "success": true,
        "planner": res.planner.as_str(),
        "backend": checker.backend().name(),
        "group": group,
        "joint_names": res.trajectory.joint_names,
        "points": res.trajectory.points,
        "duration": res.trajectory.duration(),
        "path": res.path,
        "reached_goal": res.reached_goal,
        "timing": res.timing,
        "stats": {
            "planning_time_s": st.planning_time.as_secs_f64(),
            "simplification_time_s": st.simplification_time.as_secs_f64(),
            "collision_checks": st.collision_checks,
            "configs_checked": st.configs_checked,
            "motions_checked": st.motions_checked,
            "path_length_before": st.path_length_before,
            "path_length_after": st.path_length_after,
            "waypoints_before": res.raw_path.len(),
            "waypoints_after": res.path.len(),
            "roadmap_vertices": st.roadmap_vertices,
            "roadmap_edges": st.roadmap_edges,
            "iterations": st.iterations,
            "attempts": st.attempts,
            "winning_attempt": st.winning_attempt,
            "batch_size": st.batch_size,
            "device_time_s": st.device_time.map(|d| d.as_secs_f64()),
        },
    })
}

/// The circle's point of `--planner CIRC` (`--circ-center` or `--circ-interim`).
fn circ_point(a: &PlanArgs) -> Result<CircPoint, CliError> {
    let parse = |flag: &str, text: &str| -> Result<Vector3<f64>, CliError> {
        let v: [f64; 3] = serde_json::from_str(text).map_err(|e| {
            CliError(format!(
                "{flag} must be a JSON list [x, y, z], got '{text}': {e}"
            ))
        })?;
        if v.iter().all(|x| x.is_finite()) {
            Ok(Vector3::from(v))
        } else {
            Err(CliError(format!("{flag}: {text} is not finite")))
        }
    };
    match (&a.circ_center, &a.circ_interim) {
        (Some(c), _) => Ok(CircPoint::Center(parse("--circ-center", c)?)),
        (None, Some(i)) => Ok(CircPoint::Interim(parse("--circ-interim", i)?)),
        (None, None) => Err(CliError(
            "--planner CIRC needs the circle's point: --circ-center or --circ-interim".into(),
        )),
    }
}

/// `gmp plan --planner LIN` or `CIRC` (see [`crate::planners::pilz`]): the group's tip (or the
/// pose goal's link) along a straight line or an arc, with the robot's Pilz limits.
fn pilz_cartesian(
    kind: PilzPath,
    p: &Problem,
    checker: &dyn Checker,
    req: &PlanRequest,
    speed: Option<LinkLimit>,
) -> Result<Value, CliError> {
    if !p.constraints.is_empty() {
        return Err(CliError(
            "--path-constraints: LIN and CIRC plan no path constraints".into(),
        ));
    }
    let tree = &p.robot.tree;
    let pilz::LinTarget {
        link,
        pose: target,
        goal,
    } = pilz::lin_target(
        (tree, &p.group, &p.base),
        (&req.start, &req.goal),
        p.pose.as_ref(),
        crate::robot::ik::default_tip_link(&p.robot, &p.group),
    )
    .map_err(CliError)?;
    let mut solver = IkSolver::new(&p.robot, &p.group, &p.base, PoseTarget::pose(link, target))
        .map_err(|e| CliError(e.to_string()))?;
    let opts = pilz::options(req);
    let motion = pilz::cartesian_motion(
        checker,
        &mut solver,
        &req.start,
        (&target, goal, kind),
        &opts,
    );
    let mut res = match motion {
        Ok(res) => res,
        Err(e @ (PlanError::Blocked { .. } | PlanError::NoIkSolution(_))) => {
            return Ok(
                json!({"success": false, "error": e.to_string(), "planner": req.planner.as_str()}),
            )
        }
        Err(e) => return Err(CliError(e.to_string())),
    };
    let speed = LinkLimit::for_cartesian_path(
        p.robot.cartesian_limits.as_ref(),
        (link, &tree.links[link].name),
        (req.vel_scale, req.acc_scale),
        speed,
    );
    Ok(limited_json(&mut res, p, checker, &speed, req.resolution))
}

/// The JSON of a plan, after slowing it to `speed` along its path (checked at `resolution`).
fn limited_json(
    res: &mut PlanResult,
    p: &Problem,
    checker: &dyn Checker,
    speed: &Option<LinkLimit>,
    resolution: f64,
) -> Value {
    let along = Along {
        checker,
        path: &res.path,
        timing: res.timing.clone(),
        resolution,
    };
    let link_speed = limit_speed(
        &mut res.trajectory,
        &p.robot,
        (&p.group, &p.base),
        speed,
        &along,
    );
    let mut v = result_json(res, checker, &p.group.name);
    v["link_speed"] = link_speed;
    v["resolution"] = json!(resolution);
    v
}

/// Runs `gmp plan`. Input errors are `Err`; "no path" is `Ok` with `"success": false`.
pub fn run(a: &PlanArgs) -> Result<Value, CliError> {
    if let Some(path) = &a.batch {
        return run_batch(a, path);
    }
    if let Some(path) = &a.sequence {
        return super::sequence::run_sequence(a, path);
    }
    let p = problem(a)?;
    let opts = CheckerOptions {
        shapes: p.shapes,
        ..Default::default()
    };
    let checker = crate::collision::make_scene_checker(
        &a.backend, &p.robot, &p.group, &p.base, &p.scene, opts,
    )?;
    let (mut req, chosen) = request(a, &p.robot, &p.group, p.start.clone(), p.goal.clone())?;
    req.other_goals = p.other_goals.clone();
    let speed = speed_limit(a, &p.robot, &p.group)?;
    let kind = match req.planner {
        PlannerId::Lin => Some(PilzPath::Lin),
        PlannerId::Circ => Some(PilzPath::Circ(circ_point(a)?)),
        _ => None,
    };
    if let Some(kind) = kind {
        if p.region.is_some() {
            return Err(CliError(format!(
                "--goal-constraints: {} moves to one goal pose, not to a goal region",
                req.planner
            )));
        }
        if !p.other_poses.is_empty() {
            return Err(CliError(format!(
                "--other-goal-pose: {} moves to one goal, not a goal set",
                req.planner
            )));
        }
        if !req.other_goals.is_empty() {
            return Err(CliError(format!(
                "--other-goal: {} moves to one goal, not a goal set",
                req.planner
            )));
        }
        return pilz_cartesian(kind, &p, checker.as_ref(), &req, speed);
    }
    let set = ConstraintSet::new(
        &p.robot,
        &p.group,
        &p.group.full_state(&p.base, &req.start),
        p.constraints.clone(),
    )
    .map_err(|e| CliError(e.to_string()))?;
    let plan_one = |r: &PlanRequest| plan_constrained(checker.as_ref(), r, &set);
    let outcome = match (&p.pose, &p.region) {
        (None, None) => plan_one(&req).map(|r| (r, None)),
        (None, Some(region)) => {
            let state = p.group.full_state(&p.base, &req.start);
            let goal = ConstraintSet::new(&p.robot, &p.group, &state, region.clone())
                .map_err(|e| CliError(format!("goal constraints: {}", e.detail())))?;
            let opts = a.pose.ik_options(a.seed)?;
            let solvers = std::slice::from_ref(&goal);
            plan_to_poses_with(checker.as_ref(), &req, solvers, &opts, plan_one).map(|pp| {
                let goal = json!({
                    "configurations_found": pp.goals[0].found,
                    "in_collision": pp.goals[0].in_collision,
                    "search_time_s": pp.ik_time.as_secs_f64(),
                    "starts_tried": pp.starts_tried(),
                    "cut_at_time_share": pp.ik_cut,
                });
                (pp.result, Some(("goal_region", goal)))
            })
        }
        (Some(first), _) => {
            let targets: Vec<&PoseTarget> = std::iter::once(first).chain(&p.other_poses).collect();
            let solvers = solvers_for(&p.robot, &p.group, &p.base, targets.iter().copied())
                .map_err(|e| CliError(e.to_string()))?;
            let opts = a.pose.ik_options(a.seed)?;
            plan_to_poses_with(checker.as_ref(), &req, &solvers, &opts, plan_one).map(|pp| {
                let (dp, dr) = (pp.goal.position_error, pp.goal.orientation_error);
                let target = targets[pp.pose];
                let starts_tried = pp.starts_tried();
                let mut result = pp.result;
                // The goal reached is the pose's (its solutions are the tool's own set).
                result.reached_goal = pp.pose;
                let goal = json!({
                    "target": super::pose::target_json(&p.robot, target),
                    "position_error": dp,
                    "orientation_error": dr,
                    "configurations_found": pp.goals[pp.pose].found,
                    "in_collision": pp.goals[pp.pose].in_collision,
                    "ik_time_s": pp.ik_time.as_secs_f64(),
                    "ik_starts_tried": starts_tried,
                    "ik_cut_at_time_share": pp.ik_cut,
                });
                (result, Some(("goal_pose", goal)))
            })
        }
    };
    match outcome {
        Ok((mut res, goal)) => {
            let mut v = limited_json(&mut res, &p, checker.as_ref(), &speed, req.resolution);
            if let Some((key, g)) = goal {
                v[key] = g;
            }
            v["planner_config"] = json!(chosen.map(|c| c.name));
            Ok(v)
        }
        Err(
            e @ (PlanError::NoPath { .. } | PlanError::NoIkSolution(_) | PlanError::Blocked { .. }),
        ) => Ok(json!({
            "success": false,
            "planner": req.planner.as_str(),
            "group": p.group.name,
            "joint_names": p.group.space.names,
            "error": e.to_string(),
        })),
        Err(e) => Err(CliError(e.to_string())),
    }
}

/// `gmp plan --batch FILE`: every problem of the file with the options of `a`
/// ([`crate::planners::plan_many`]), one report: `"success"` when every problem was solved,
/// the counts, the wall time of the whole call, and per problem its name and either the report
/// of a single plan or `"success": false` with the error.
pub fn run_batch(a: &PlanArgs, path: &std::path::Path) -> Result<Value, CliError> {
    let mut robot = load_robot(&a.robot, false)?;
    let shapes = shapes_for(&mut robot, &a.shapes, &a.robot.sphere_fit()?)?;
    let group = match &a.group {
        Some(g) => robot.group(g)?,
        None => robot.default_group(),
    };
    let items = read_batch(path, &group)?;
    let base = robot.tree.neutral_state();
    let scene = scene_attached(&mut robot, a.scene.as_deref())?;
    let opts = CheckerOptions {
        shapes,
        ..Default::default()
    };
    let checker =
        crate::collision::make_scene_checker(&a.backend, &robot, &group, &base, &scene, opts)?;
    let (template, chosen) = request(a, &robot, &group, Vec::new(), Vec::new())?;
    let speed = speed_limit(a, &robot, &group)?;
    // The options are checked once, before any problem runs (one error rather than one per
    // problem).
    crate::planners::check_request(&template).map_err(|e| CliError(e.to_string()))?;
    let ends: Vec<(Vec<f64>, Vec<f64>)> = items
        .iter()
        .map(|it| (it.start.clone(), it.goal.clone()))
        .collect();
    let device_launch = crate::planners::batch::one_launch(checker.as_ref(), &template);
    let t = std::time::Instant::now();
    let results = crate::planners::plan_many(checker.as_ref(), &template, &ends);
    let wall = t.elapsed().as_secs_f64();
    let solved = results.iter().filter(|r| r.is_ok()).count();
    let problems = results.len();
    let entries: Vec<Value> = items
        .iter()
        .zip(results)
        .enumerate()
        .map(|(i, (it, r))| {
            let mut v = match r {
                Ok(mut res) => {
                    let along = Along {
                        checker: checker.as_ref(),
                        path: &res.path,
                        timing: res.timing.clone(),
                        resolution: template.resolution,
                    };
                    let link_speed =
                        limit_speed(&mut res.trajectory, &robot, (&group, &base), &speed, &along);
                    let mut v = result_json(&res, checker.as_ref(), &group.name);
                    v["link_speed"] = link_speed;
                    v
                }
                Err(e) => json!({"success": false, "error": e.to_string()}),
            };
            v["name"] = json!(it.name.clone().unwrap_or_else(|| i.to_string()));
            v
        })
        .collect();
    let mut out = json!({
        "success": solved == problems,
        "planner": template.planner.as_str(),
        "planner_config": chosen.map(|c| c.name),
        "resolution": template.resolution,
        "backend": checker.backend().name(),
        "group": group.name,
        "joint_names": group.space.names,
        "problems": problems,
        "solved": solved,
        "one_device_launch": device_launch,
        "wall_time_s": wall,
        "results": entries,
    });
    if solved < problems {
        out["error"] = json!(format!(
            "{} of {problems} problems were not solved (see each result's error)",
            problems - solved,
        ));
    }
    Ok(out)
}
