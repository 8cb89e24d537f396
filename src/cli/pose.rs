//! Pose goals on the command line: `gmp plan --goal-pose ...` and `gmp ik`.
//!
//! A pose is a JSON list in the robot's root frame: `[x, y, z]` (a position goal: any
//! orientation) or `[x, y, z, qx, qy, qz, qw]` (position and orientation, the quaternion
//! normalised). The link defaults to the group's tip ([`default_tip_link`]).

use std::path::PathBuf;

use clap::Args;
use serde_json::{json, Value};

use super::{load_robot, scene_attached, shapes_for, CliError, RobotArgs};
use crate::collision::{make_scene_checker, CheckerOptions};
use crate::planners::pose::{free_goals, PoseGoals};
use crate::robot::ik::{
    default_tip_link, pose_from_parts, search_time_limit, IkOptions, IkSolver, PoseTarget,
    DEFAULT_ORIENTATION_TOLERANCE, DEFAULT_POSITION_TOLERANCE,
};
use crate::robot::{PlanningGroup, RobotModel};

/// The pose-goal options shared by `gmp plan` and `gmp ik`.
#[derive(Args, Debug, Clone)]
pub struct PoseGoalArgs {
    /// Goal pose of `--goal-link` in the robot's root frame, as a JSON list: `[x, y, z]` for a
    /// position goal or `[x, y, z, qx, qy, qz, qw]` for a full pose (instead of `--goal`).
    #[arg(long = "goal-pose")]
    pub goal_pose: Option<String>,
    /// The link the goal pose is for (default: the tip of the group's SRDF chain, else the
    /// child link of its last joint).
    #[arg(long = "goal-link")]
    pub goal_link: Option<String>,
    /// Largest distance (m) between the reached and the goal position.
    #[arg(long = "position-tolerance", default_value_t = DEFAULT_POSITION_TOLERANCE)]
    pub position_tolerance: f64,
    /// Largest angle (rad) between the reached and the goal orientation.
    #[arg(long = "orientation-tolerance", default_value_t = DEFAULT_ORIENTATION_TOLERANCE)]
    pub orientation_tolerance: f64,
    /// Starting configurations of the inverse-kinematics search at most (the start state
    /// first, then random ones from the seed).
    #[arg(long = "ik-starts", default_value_t = IkOptions::default().starts)]
    pub ik_starts: usize,
}

impl PoseGoalArgs {
    /// The target these options describe for `group` (`None` without `--goal-pose`); errors
    /// name the option at fault.
    pub fn target(
        &self,
        robot: &RobotModel,
        group: &PlanningGroup,
    ) -> Result<Option<PoseTarget>, CliError> {
        match &self.goal_pose {
            Some(text) => self.target_of(text, "--goal-pose", robot, group).map(Some),
            None => Ok(None),
        }
    }

    /// The target of the pose `text` (as `--goal-pose` takes it) with these options' link
    /// and tolerances; errors name `option` (or the option at fault).
    pub fn target_of(
        &self,
        text: &str,
        option: &str,
        robot: &RobotModel,
        group: &PlanningGroup,
    ) -> Result<PoseTarget, CliError> {
        let values: Vec<f64> = serde_json::from_str(text).map_err(|e| {
            CliError(format!(
                "{option} must be a JSON list [x, y, z] or [x, y, z, qx, qy, qz, qw], got \
                 '{text}': {e}"
            ))
        })?;
        let (position, quaternion) = match values.as_slice() {
            [x, y, z] => ([*x, *y, *z], None),
            [x, y, z, qx, qy, qz, qw] => ([*x, *y, *z], Some([*qx, *qy, *qz, *qw])),
            _ => {
                return Err(CliError(format!(
                    "{option} needs 3 values (position) or 7 (position and quaternion), got {}",
                    values.len()
                )))
            }
        };
        let pose =
            pose_from_parts(position, quaternion, option).map_err(|e| CliError(e.to_string()))?;
        let link = match &self.goal_link {
            Some(name) => robot
                .tree
                .link(name)
                .map_err(|e| CliError(format!("--goal-link: {e}")))?,
            None => default_tip_link(robot, group).ok_or_else(|| {
                CliError(format!(
                    "group '{}' has no tip link; give --goal-link",
                    group.name
                ))
            })?,
        };
        if !(self.position_tolerance > 0.0 && self.position_tolerance.is_finite()) {
            return Err(CliError(format!(
                "--position-tolerance must be a positive number of metres, got {}",
                self.position_tolerance
            )));
        }
        if !(self.orientation_tolerance > 0.0 && self.orientation_tolerance.is_finite()) {
            return Err(CliError(format!(
                "--orientation-tolerance must be a positive number of radians, got {}",
                self.orientation_tolerance
            )));
        }
        Ok(PoseTarget {
            link,
            pose,
            position_tolerance: self.position_tolerance,
            // A group whose kinematics.yaml says position_only_ik leaves orientation free.
            orientation_tolerance: quaternion
                .filter(|_| !robot.position_only_ik(&group.name))
                .map(|_| self.orientation_tolerance),
        })
    }

    /// The search options for `seed`; errors name `--ik-starts`.
    pub fn ik_options(&self, seed: u64) -> Result<IkOptions, CliError> {
        if !(1..=100_000).contains(&self.ik_starts) {
            return Err(CliError(format!(
                "--ik-starts must be in 1..=100000, got {}",
                self.ik_starts
            )));
        }
        Ok(IkOptions {
            seed,
            starts: self.ik_starts,
            ..IkOptions::default()
        })
    }
}

/// The JSON description of a pose target: link, position, quaternion (`null` for a position
/// goal) and tolerances.
pub fn target_json(robot: &RobotModel, t: &PoseTarget) -> Value {
    let p = t.pose.translation.vector;
    let q = t.pose.rotation.coords;
    json!({
        "link": robot.tree.links[t.link].name,
        "position": [p.x, p.y, p.z],
        "orientation": t.orientation_tolerance.map(|_| [q.x, q.y, q.z, q.w]),
        "position_tolerance": t.position_tolerance,
        "orientation_tolerance": t.orientation_tolerance,
    })
}

/// `gmp ik` arguments.
#[derive(Args, Debug)]
pub struct IkArgs {
    /// Robot description.
    #[command(flatten)]
    pub robot: RobotArgs,
    /// The goal (`--goal-pose` is required).
    #[command(flatten)]
    pub pose: PoseGoalArgs,
    /// Scene file whose obstacles the solutions are checked against (none: an empty world;
    /// self collisions are checked either way).
    #[arg(long)]
    pub scene: Option<PathBuf>,
    /// Planning group (default: the first SRDF group).
    #[arg(long)]
    pub group: Option<String>,
    /// The first starting configuration, a JSON list in group joint order or a named state
    /// of the SRDF (default: the neutral state); the solutions are sorted by their distance
    /// from it.
    #[arg(long)]
    pub start: Option<String>,
    /// Seed of the random starting configurations.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Distinct solutions to look for (the search stops after the batch of starts that
    /// reaches this many).
    #[arg(long, default_value_t = IkOptions::default().max_solutions)]
    pub solutions: usize,
    /// Backend of the collision check of the solutions: auto, cpu, cuda or hybrid.
    #[arg(long, default_value = "auto")]
    pub backend: String,
    /// Robot geometry: polytopes, spheres (with --spherized) or fitted.
    #[arg(long, default_value = "polytopes")]
    pub shapes: String,
    /// Seconds the search may take (no batch of 16 starts but the first begins after it);
    /// none: the group's kinematics_solver_timeout (--kinematics), else no limit but
    /// --ik-starts.
    #[arg(long)]
    pub timeout: Option<f64>,
}

/// Runs `gmp ik`: the solutions, nearest to the start first, each with its errors and its
/// collision verdict; `"success": false` when none is collision free.
pub fn run_ik(a: &IkArgs) -> Result<Value, CliError> {
    let mut robot = load_robot(&a.robot, false)?;
    let shapes = shapes_for(&mut robot, &a.shapes, &a.robot.sphere_fit()?)?;
    let group = match &a.group {
        Some(g) => robot.group(g)?,
        None => robot.default_group(),
    };
    let target = a
        .pose
        .target(&robot, &group)?
        .ok_or_else(|| CliError("gmp ik needs --goal-pose".into()))?;
    if a.solutions == 0 {
        return Err(CliError("--solutions must be at least 1".into()));
    }
    let mut opts = a.pose.ik_options(a.seed)?;
    opts.max_solutions = a.solutions;
    // No --timeout: the group's kinematics.yaml `kinematics_solver_timeout`, else none.
    let timeout = search_time_limit(&robot, &group.name, a.timeout)
        .map_err(|e| CliError(format!("--timeout {e}")))?;
    let base = robot.tree.neutral_state();
    let start = match &a.start {
        Some(s) => super::plan::parse_config_or_named(s, "start", &group, Some(&robot))?,
        None => group.config_of(&base),
    };
    let scene = scene_attached(&mut robot, a.scene.as_deref())?;
    let checker_opts = CheckerOptions {
        shapes,
        ..Default::default()
    };
    let checker = make_scene_checker(&a.backend, &robot, &group, &base, &scene, checker_opts)?;
    let solver = IkSolver::new(&robot, &group, &base, target.clone())
        .map_err(|e| CliError(e.to_string()))?;
    let t = std::time::Instant::now();
    // The clock starts with the search (the checker's set-up is not the search's).
    opts.deadline = timeout.and_then(|d| t.checked_add(d));
    let goals: PoseGoals = free_goals(checker.as_ref(), &solver, &start, &opts)
        .map_err(|e| CliError(e.to_string()))?;
    let time = t.elapsed().as_secs_f64();
    let solutions: Vec<Value> = goals
        .free
        .iter()
        .map(|s| {
            json!({
                "config": s.config,
                "position_error": s.position_error,
                "orientation_error": s.orientation_error,
                "distance_from_start": group.space.distance(&start, &s.config),
                "from_start": s.start,
            })
        })
        .collect();
    let mut out = json!({
        "success": !goals.free.is_empty(),
        "group": group.name,
        "joint_names": group.space.names,
        "target": target_json(&robot, &target),
        "backend": checker.backend().name(),
        "found": goals.found,
        "starts_tried": goals.tried,
        "in_collision": goals.in_collision,
        "solutions": solutions,
        "time_s": time,
    });
    if goals.free.is_empty() {
        out["error"] = json!(if goals.found == 0 {
            format!(
                "no configuration reaches the pose within the tolerances ({} starts tried)",
                opts.starts
            )
        } else {
            format!(
                "all {} configurations that reach the pose are in collision",
                goals.found
            )
        });
    }
    Ok(out)
}
