//! `gmp plan --sequence FILE --start ...`: several motions planned one after another, each from
//! where the one before ends, joined into one trajectory, blends included
//! ([`crate::service::sequence`], as the node's `~/plan_sequence`).
//!
//! The file is YAML (or JSON): `items:`, a list of motions, each with
//!
//! - `planner`: any `--planner` value (a Pilz motion `PTP`, `LIN`, `CIRC`, or a sampling
//!   planner; default: the group's default);
//! - a goal: `goal` (a configuration in planning-group joint order, or a named state of the
//!   SRDF) or `pose` (`position: [x, y, z]`, optional `orientation: [x, y, z, w]`, `frame`,
//!   `link`, `position_tolerance`, `orientation_tolerance`);
//! - optional `other_goals` (a list of goals as `goal` takes them) beside `goal`, or
//!   `other_poses` (a list of poses as `pose` takes them: grasp candidates) beside `pose`: a
//!   goal set, the motion ending at whichever goal its planner reaches (the output's
//!   `reached_goal` of the item: 0 for the goal, k for the k-th other one) and the next one
//!   starting there;
//! - for `CIRC`: `circ_center` or `circ_interim` (`[x, y, z]` in the planning frame);
//! - optional `blend_radius` (m, default 0: stop there), `velocity_scaling`,
//!   `acceleration_scaling`, `max_cartesian_speed` with `speed_limited_link`.
//!
//! Exit status: 0 with `"success": true`; 1 with `"success": false` and the error (naming the
//! item) when a motion or blend could not be planned; 2 for an unusable file or option.

use std::path::Path;

use serde::Deserialize;
use serde_json::{json, Value};

use super::plan::{parse_config_or_named, PlanArgs};
use super::{load_robot, scene_attached, shapes_for, CliError};
use crate::robot::constraint::{ConstraintSpec, PositionSpec};
use crate::service::sequence::ServiceSequenceItem;
use crate::service::{
    ErrorCategory, PlanningService, ServiceError, ServicePlanRequest, ServicePoseGoal,
    ServiceSettings, SpeedLimit,
};

/// A sequence file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SequenceFile {
    items: Vec<ItemSpec>,
}

/// One motion of a sequence file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ItemSpec {
    #[serde(default)]
    planner: Option<String>,
    #[serde(default)]
    goal: Option<GoalSpec>,
    #[serde(default)]
    pose: Option<PoseSpec>,
    #[serde(default)]
    other_goals: Vec<GoalSpec>,
    #[serde(default)]
    other_poses: Vec<PoseSpec>,
    #[serde(default)]
    circ_center: Option<[f64; 3]>,
    #[serde(default)]
    circ_interim: Option<[f64; 3]>,
    #[serde(default)]
    blend_radius: f64,
    #[serde(default)]
    velocity_scaling: Option<f64>,
    #[serde(default)]
    acceleration_scaling: Option<f64>,
    #[serde(default)]
    max_cartesian_speed: Option<f64>,
    #[serde(default)]
    speed_limited_link: Option<String>,
}

/// A goal configuration or named state.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum GoalSpec {
    Joints(Vec<f64>),
    Named(String),
}

/// A pose goal.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct PoseSpec {
    #[serde(default)]
    frame: String,
    #[serde(default)]
    link: Option<String>,
    position: [f64; 3],
    #[serde(default)]
    orientation: Option<[f64; 4]>,
    #[serde(default)]
    position_tolerance: Option<f64>,
    #[serde(default)]
    orientation_tolerance: Option<f64>,
}

impl PoseSpec {
    /// The service's pose goal of this pose.
    fn goal(&self) -> ServicePoseGoal {
        ServicePoseGoal {
            frame: self.frame.clone(),
            link: self.link.clone(),
            position: self.position,
            orientation: self.orientation,
            position_tolerance: self.position_tolerance,
            orientation_tolerance: self.orientation_tolerance,
        }
    }
}

/// `gmp plan --sequence FILE` (see the module documentation).
pub fn run_sequence(a: &PlanArgs, path: &Path) -> Result<Value, CliError> {
    let file = |m: String| CliError(format!("--sequence {}: {m}", path.display()));
    let text = std::fs::read_to_string(path).map_err(|e| file(e.to_string()))?;
    let spec: SequenceFile = serde_yaml::from_str(&text)
        .map_err(|e| file(format!("expected `items:`, a list of motions: {e}")))?;
    if spec.items.is_empty() {
        return Err(file("the list of motions is empty".into()));
    }
    let mut robot = load_robot(&a.robot, false)?;
    let shapes = shapes_for(&mut robot, &a.shapes, &a.robot.sphere_fit()?)?;
    let group = match &a.group {
        Some(g) => robot.group(g)?,
        None => robot.default_group(),
    };
    let start = match &a.start {
        Some(s) => parse_config_or_named(s, "start", &group, Some(&robot))?,
        None => return Err(CliError("--sequence needs --start".into())),
    };
    let names = group.space.names.clone();
    let mut items = Vec::with_capacity(spec.items.len());
    for (i, it) in spec.items.iter().enumerate() {
        let item = |m: String| file(format!("item {i}: {m}"));
        let config = |g: &GoalSpec, what: &str| match g {
            GoalSpec::Joints(q) => {
                let text = serde_json::to_string(q).map_err(|e| item(e.to_string()))?;
                parse_config_or_named(&text, what, &group, Some(&robot)).map_err(|e| item(e.0))
            }
            GoalSpec::Named(n) => {
                parse_config_or_named(n, what, &group, Some(&robot)).map_err(|e| item(e.0))
            }
        };
        let goal = match &it.goal {
            Some(g) => config(g, "goal")?,
            None => Vec::new(),
        };
        let other_goals = it
            .other_goals
            .iter()
            .enumerate()
            .map(|(k, g)| config(g, &format!("other_goals[{k}]")).map(|q| (names.clone(), q)))
            .collect::<Result<Vec<_>, _>>()?;
        if goal.is_empty() == it.pose.is_none() {
            return Err(item("give one goal: `goal` or `pose`".into()));
        }
        let path_constraints = match (it.circ_center, it.circ_interim) {
            (Some(_), Some(_)) => {
                return Err(item(
                    "give `circ_center` or `circ_interim`, not both".into(),
                ))
            }
            (Some(p), None) | (None, Some(p)) => ConstraintSpec {
                name: if it.circ_center.is_some() {
                    "center"
                } else {
                    "interim"
                }
                .into(),
                position: vec![PositionSpec {
                    frame: String::new(),
                    link: String::new(),
                    offset: [0.0; 3],
                    position: p,
                    orientation: [0.0, 0.0, 0.0, 1.0],
                    size: [0.0; 3],
                }],
                ..ConstraintSpec::default()
            },
            (None, None) => ConstraintSpec::default(),
        };
        let request = ServicePlanRequest {
            start: (i == 0).then(|| (names.clone(), start.clone())),
            goal: if goal.is_empty() {
                (Vec::new(), Vec::new())
            } else {
                (names.clone(), goal)
            },
            goal_pose: it.pose.as_ref().map(PoseSpec::goal),
            other_goals,
            other_goal_poses: it.other_poses.iter().map(PoseSpec::goal).collect(),
            planner: it.planner.clone(),
            vel_scale: it.velocity_scaling,
            acc_scale: it.acceleration_scaling,
            speed_limit: it.max_cartesian_speed.map(|max_speed| SpeedLimit {
                link: it.speed_limited_link.clone(),
                max_speed,
            }),
            path_constraints,
            group: Some(group.name.clone()),
            ..Default::default()
        };
        items.push(ServiceSequenceItem {
            request,
            blend_radius: it.blend_radius,
        });
    }
    let (velocity_scaling, acceleration_scaling) = a.scaling.resolve(&robot)?;
    let scene = scene_attached(&mut robot, a.scene.as_deref())?;
    let settings = ServiceSettings {
        backend: a.backend.clone(),
        shapes,
        resolution: a.resolution,
        time_limit: a.time_limit,
        seed: a.seed,
        velocity_scaling,
        acceleration_scaling,
        planning_group: group.name.clone(),
        planning_frame: scene.frame().to_string(),
        path_tolerance: a.tuning.path_tolerance,
        ik_time_share: a.tuning.ik_time_share,
        ..ServiceSettings::default()
    };
    let mut service = PlanningService::new(robot, scene, settings);
    match service.plan_sequence(&items) {
        Ok(seq) => Ok(json!({
            "success": true,
            "group": seq.group,
            "joint_names": seq.trajectory.joint_names,
            "points": seq.trajectory.points,
            "duration_s": seq.trajectory.duration(),
            "item_ends": seq.item_ends,
            "blends": seq.blends,
            "items": seq.items.iter().map(|p| json!({
                "planner": p.planner,
                "backend": p.backend,
                "duration_s": p.trajectory.duration(),
                "stats": p.stats,
                "link_speed": p.link_speed,
                "reached_goal": p.reached_goal,
            })).collect::<Vec<_>>(),
        })),
        Err(e) if failed_to_plan(&e) => Ok(json!({
            "success": false,
            "group": group.name,
            "error": e.to_string(),
        })),
        Err(e) => Err(file(e.to_string())),
    }
}

/// Whether a sequence error is a failure to plan (exit 1) rather than unusable input.
fn failed_to_plan(e: &ServiceError) -> bool {
    matches!(
        e.category(),
        ErrorCategory::PlanningFailed | ErrorCategory::NoIkSolution
    )
}
