//! `gmp cartesian`: a link moved along straight lines through poses
//! ([`crate::planners::cartesian`]), printed as JSON.
//!
//! Waypoints are a JSON list of poses in the robot's root frame: `[x, y, z]` keeps the link's
//! orientation at the start, `[x, y, z, qx, qy, qz, qw]` gives it. Exit status: 0 when the
//! whole path was achieved; 1 with `"success": false` and the part achieved (`fraction`,
//! `stop`, the trajectory) when it ended early; 2 for unusable input.

use std::path::PathBuf;

use clap::Args;
use nalgebra::Isometry3;
use serde_json::{json, Value};

use super::{
    load_robot, scene_attached, shapes_for, CliError, RobotArgs, ScalingArgs, SpeedLimitArgs,
};
use crate::collision::{make_scene_checker, CheckerOptions};
use crate::planners::cartesian::{plan_cartesian, CartesianOptions};
use crate::robot::ik::{default_tip_link, pose_from_parts, IkSolver, PoseTarget};
use crate::trajectory::LinkLimit;

/// `gmp cartesian` arguments.
#[derive(Args, Debug)]
pub struct CartesianArgs {
    /// Robot description.
    #[command(flatten)]
    pub robot: RobotArgs,
    /// Scene file (none: an empty world; self collisions are checked either way).
    #[arg(long)]
    pub scene: Option<PathBuf>,
    /// Planning group (default: the first SRDF group).
    #[arg(long)]
    pub group: Option<String>,
    /// Start configuration, a JSON list in group joint order or a named state of the SRDF
    /// (default: the neutral state).
    #[arg(long)]
    pub start: Option<String>,
    /// The poses of the link, a JSON list of `[x, y, z]` (the start orientation kept) or
    /// `[x, y, z, qx, qy, qz, qw]` in the root frame.
    #[arg(long)]
    pub waypoints: String,
    /// The link to move (default: the tip of the group's SRDF chain, else the child link of
    /// its last joint).
    #[arg(long)]
    pub link: Option<String>,
    /// Largest translation of one step (m).
    #[arg(long = "max-step", default_value_t = CartesianOptions::default().max_step)]
    pub max_step: f64,
    /// Largest rotation of one step (rad).
    #[arg(long = "max-rotation-step", default_value_t = CartesianOptions::default().max_rotation_step)]
    pub max_rotation_step: f64,
    /// Largest distance (m) of the link from the line halfway through a step's motion.
    #[arg(long = "max-deviation", default_value_t = CartesianOptions::default().max_deviation)]
    pub max_deviation: f64,
    /// MoveIt's relative jump threshold (0: off).
    #[arg(long = "jump-threshold", default_value_t = 0.0)]
    pub jump_threshold: f64,
    /// Collision-check resolution (joint-space distance between checked configurations).
    #[arg(long, default_value_t = CartesianOptions::default().resolution)]
    pub resolution: f64,
    /// Scaling of the joint velocity and acceleration limits.
    #[command(flatten)]
    pub scaling: ScalingArgs,
    /// A Cartesian speed limit (default link: the one moved).
    #[command(flatten)]
    pub speed: SpeedLimitArgs,
    /// Collision backend: auto, cpu, cuda or hybrid.
    #[arg(long, default_value = "auto")]
    pub backend: String,
    /// Robot geometry: polytopes, spheres (with --spherized) or fitted.
    #[arg(long, default_value = "polytopes")]
    pub shapes: String,
}

/// The waypoints of `--waypoints`; a position alone keeps `orientation`.
fn parse_waypoints(
    text: &str,
    orientation: &Isometry3<f64>,
) -> Result<Vec<Isometry3<f64>>, CliError> {
    let lists: Vec<Vec<f64>> = serde_json::from_str(text).map_err(|e| {
        CliError(format!(
            "--waypoints must be a JSON list of [x, y, z] or [x, y, z, qx, qy, qz, qw], got \
             '{text}': {e}"
        ))
    })?;
    if lists.is_empty() {
        return Err(CliError("--waypoints: give at least one waypoint".into()));
    }
    lists
        .iter()
        .enumerate()
        .map(|(i, v)| {
            let what = format!("--waypoints[{i}]");
            let pose = match v.as_slice() {
                [x, y, z] => pose_from_parts([*x, *y, *z], None, &what)
                    .map(|p| Isometry3::from_parts(p.translation, orientation.rotation)),
                [x, y, z, qx, qy, qz, qw] => {
                    pose_from_parts([*x, *y, *z], Some([*qx, *qy, *qz, *qw]), &what)
                }
                _ => {
                    return Err(CliError(format!(
                        "{what} needs 3 values (position) or 7 (position and quaternion), got {}",
                        v.len()
                    )))
                }
            };
            pose.map_err(|e| CliError(e.to_string()))
        })
        .collect()
}

/// Errors naming the first numeric flag out of range.
fn check_flags(a: &CartesianArgs) -> Result<(), CliError> {
    for (flag, v) in [
        ("--max-step", a.max_step),
        ("--max-rotation-step", a.max_rotation_step),
        ("--max-deviation", a.max_deviation),
        ("--resolution", a.resolution),
    ] {
        if !(v > 0.0 && v.is_finite()) {
            return Err(CliError(format!(
                "{flag} must be positive and finite, got {v}"
            )));
        }
    }
    if !(a.jump_threshold >= 0.0 && a.jump_threshold.is_finite()) {
        return Err(CliError(format!(
            "--jump-threshold must be 0 (off) or positive, got {}",
            a.jump_threshold
        )));
    }
    Ok(())
}

/// Runs `gmp cartesian`.
pub fn run(a: &CartesianArgs) -> Result<Value, CliError> {
    check_flags(a)?;
    let mut robot = load_robot(&a.robot, false)?;
    let (vel_scale, acc_scale) = a.scaling.resolve(&robot)?;
    let shapes = shapes_for(&mut robot, &a.shapes, &a.robot.sphere_fit()?)?;
    let scene = scene_attached(&mut robot, a.scene.as_deref())?;
    let group = match &a.group {
        Some(g) => robot.group(g)?,
        None => robot.default_group(),
    };
    let link = match &a.link {
        Some(name) => robot
            .tree
            .link(name)
            .map_err(|e| CliError(format!("--link: {e}")))?,
        None => default_tip_link(&robot, &group).ok_or_else(|| {
            CliError(format!(
                "group '{}' has no tip link; give --link",
                group.name
            ))
        })?,
    };
    let speed = a.speed.resolve(&robot, || Ok(link))?;
    let base = robot.tree.neutral_state();
    let start = match &a.start {
        Some(s) => super::plan::parse_config_or_named(s, "start", &group, Some(&robot))?,
        None => group.config_of(&base),
    };
    let mut solver = IkSolver::new(
        &robot,
        &group,
        &base,
        PoseTarget::pose(link, Isometry3::identity()),
    )
    .map_err(|e| CliError(e.to_string()))?;
    let start_pose = solver
        .link_pose(&start)
        .map_err(|e| CliError(format!("--start: {e}")))?;
    let waypoints = parse_waypoints(&a.waypoints, &start_pose)?;
    let checker_opts = CheckerOptions {
        shapes,
        ..Default::default()
    };
    let checker = make_scene_checker(&a.backend, &robot, &group, &base, &scene, checker_opts)?;
    let opts = CartesianOptions {
        max_step: a.max_step,
        max_rotation_step: a.max_rotation_step,
        max_deviation: a.max_deviation,
        jump_threshold: a.jump_threshold,
        resolution: a.resolution,
        vel_scale,
        acc_scale,
        ..CartesianOptions::default()
    };
    let mut out = plan_cartesian(checker.as_ref(), &mut solver, &start, &waypoints, &opts)
        .map_err(|e| CliError(e.to_string()))?;
    let speed = LinkLimit::for_cartesian_path(
        robot.cartesian_limits.as_ref(),
        (link, &robot.tree.links[link].name),
        (vel_scale, acc_scale),
        speed,
    );
    let along = crate::trajectory::Along {
        checker: checker.as_ref(),
        path: &out.path,
        timing: crate::trajectory::PathTiming::Through {
            vel_scale,
            acc_scale,
        },
        resolution: a.resolution,
    };
    let link_speed =
        super::limit_speed(&mut out.trajectory, &robot, (&group, &base), &speed, &along);
    let st = &out.stats;
    let mut v = json!({
        "success": out.fraction >= 1.0,
        "fraction": out.fraction,
        "steps": out.steps,
        "steps_reached": out.steps_reached,
        "stop": out.stop,
        "link": robot.tree.links[link].name,
        "backend": checker.backend().name(),
        "group": group.name,
        "joint_names": out.trajectory.joint_names,
        "points": out.trajectory.points,
        "duration": out.trajectory.duration(),
        "path": out.path,
        "stops_at_steps": out.stops_at_steps,
        "spline_deviation": out.spline_deviation,
        "link_speed": link_speed,
        "stats": {
            "ik_time_s": st.ik_time.as_secs_f64(),
            "check_time_s": st.check_time.as_secs_f64(),
            "timing_time_s": st.timing_time.as_secs_f64(),
            "collision_checks": st.collision_checks,
            "halvings": st.halvings,
            "max_deviation": st.max_deviation,
            "max_rotation_deviation": st.max_rotation_deviation,
        },
    });
    if let Some(stop) = &out.stop {
        v["error"] = json!(format!(
            "the path ends at {:.1} % ({stop})",
            100.0 * out.fraction
        ));
    }
    Ok(v)
}
