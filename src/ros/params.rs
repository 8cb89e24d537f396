//! The node's ROS parameters: names, defaults, declaration and validation.
//!
//! The defaults here match `config/planner.yaml`; values given on the command line or in
//! a params file win over them. r2r keeps parameters in a shared map that the
//! parameter services (`ros2 param get/set/list`) read and write; [`NodeParams`] is the
//! typed, validated copy the node works from.

use std::path::Path;

use r2r::{Parameter, ParameterValue};

use crate::cli::MAX_FITTED_SPHERES;
use crate::collision::RobotShapes;
use crate::planners::device::{DEFAULT_ESCALATE_AFTER, MAX_DEVICE_ATTEMPTS};
use crate::planners::MAX_ATTEMPTS;
use crate::robot::decompose::Decomposition;
use crate::robot::moveit_config::{read_description, MoveItConfig};
use crate::robot::spherize::{fit_robot, SphereFit};
use crate::robot::{load_spherized, JointLimitsFile, LoadOptions, RobotModel};
use crate::scene::cloud::CloudSettings;
use crate::scene::Scene;
use crate::service::ServiceSettings;

/// Planners the node accepts in the `planner` parameter and in `PlanPath.planner_id`.
pub const PLANNERS: &[&str] = &["prm", "lazy_prm", "rrt", "rrt_star", "rrt_connect", "drm"];

/// Collision backends the node accepts in the `backend` parameter.
pub const BACKENDS: &[&str] = &["auto", "cpu", "cuda", "hybrid"];

/// Robot geometries the node accepts in the `collision_shapes` parameter.
pub const SHAPES: &[&str] = &["polytopes", "spheres", "fitted"];

/// The default of the `controller_action` parameter: a ros2_control
/// `joint_trajectory_controller` named `joint_trajectory_controller` (relative to the node's
/// namespace).
pub const DEFAULT_CONTROLLER_ACTION: &str = "joint_trajectory_controller/follow_joint_trajectory";

/// Refuses a ROS name rcl would refuse ([`crate::controllers::ros_name_problem`]).
fn valid_name(name: &str, value: &str) -> Result<(), ParamError> {
    match crate::controllers::ros_name_problem(value) {
        Some(problem) => Err(err(name, problem)),
        None => Ok(()),
    }
}

/// The largest `execution_start_tolerance` (rad or m): a trajectory starting farther from
/// the robot would make the controller jump.
pub const MAX_START_TOLERANCE: f64 = 1.0;

/// The parameters read only when the node starts (its action clients are made once).
const START_ONLY: [&str; 2] = ["controller_action", "controllers_file"];

/// How `~/execute` reaches the controller (the `execution_mode` parameter).
pub const EXECUTION_MODES: &[&str] = &["action", "topic"];

/// Most replanning attempts per `~/execute` (`replan_attempts`).
pub const MAX_REPLAN_ATTEMPTS: i64 = 100;

/// Longest wait (s) before a replanning attempt (`replan_delay`).
pub const MAX_REPLAN_DELAY: f64 = 60.0;

/// Typed copy of the node's parameters (see `config/planner.yaml` for their meaning).
#[derive(Debug, Clone, PartialEq)]
pub struct NodeParams {
    /// Default planner, one of [`PLANNERS`].
    pub planner: String,
    /// Whether the `moveit_config`'s `ompl_planning.yaml` applies
    /// ([`ServiceSettings::ompl_planning`]).
    pub ompl_planning: bool,
    /// Collision backend, one of [`BACKENDS`].
    pub backend: String,
    /// Joint-space step (radians) at which motions are collision checked; > 0.
    pub resolution: f64,
    /// Default planning time budget in seconds; > 0.
    pub time_limit: f64,
    /// Default random seed; >= 0.
    pub seed: i64,
    /// Number of roadmap vertices the roadmap planners build; > 0.
    pub roadmap_size: i64,
    /// RRT / RRT-Connect attempts planned at once on CPU threads; 1 ..= 256.
    pub planning_attempts: i64,
    /// RRT-Connect requests plan whole on the GPU (`PlanRequest::on_device`).
    pub plan_on_device: bool,
    /// On the device: extra attempts for a request no attempt solves within
    /// `device_escalate_after` iterations; -1: 3 per attempt, 0: none, else at most 255.
    pub device_extra_attempts: i64,
    /// On the device: iterations without a path before the extra attempts join; >= 1.
    pub device_escalate_after: i64,
    /// Default velocity scaling in (0, 1]; 0: the joint limits file's
    /// `default_velocity_scaling_factor`, 1 without one.
    pub velocity_scaling: f64,
    /// Default acceleration scaling in (0, 1]; 0: the joint limits file's
    /// `default_acceleration_scaling_factor`, 1 without one.
    pub acceleration_scaling: f64,
    /// Largest joint-space deviation (rad) from a waypoint where planned trajectories round
    /// the corner instead of stopping ([`ServiceSettings::path_tolerance`]); 0: stop; >= 0.
    pub path_tolerance: f64,
    /// Pose goals: share of the time limit, in (0, 1], after which no new batch of inverse
    /// kinematics starts begins once a free goal configuration is known
    /// ([`ServiceSettings::ik_time_share`]).
    pub ik_time_share: f64,
    /// Mesh markers on `~/obstacles`: most convex parts a mesh is split into
    /// ([`ServiceSettings::mesh_parts`]); 1: its convex hull; 1 ..= 256.
    pub mesh_convex_parts: i64,
    /// Voxels along the longest side of a mesh marker split into parts; 8 ..= 256.
    pub mesh_resolution: i64,
    /// SRDF planning group to plan for (empty: all actuated joints).
    pub planning_group: String,
    /// Frame of the trajectories and markers the node publishes.
    pub planning_frame: String,
    /// Voxel edge (m) of the boxes `~/points` clouds become; > 0.
    pub pointcloud_resolution: f64,
    /// Cloud points farther from the sensor are dropped (m); 0: none; >= 0.
    pub pointcloud_max_range: f64,
    /// Self filter padding (m) around the robot's bodies; >= 0.
    pub pointcloud_padding: f64,
    /// Points a voxel needs to be occupied; >= 1.
    pub pointcloud_min_points: i64,
    /// Most boxes per cloud (larger voxels beyond); >= 1.
    pub pointcloud_max_boxes: i64,
    /// How `~/execute` reaches the controller, one of [`EXECUTION_MODES`]: a
    /// `FollowJointTrajectory` goal whose result it waits for, or its command topic.
    pub execution_mode: String,
    /// An action execution may take its trajectory's duration times this (>= 1) ...
    pub execution_duration_scaling: f64,
    /// ... plus this many seconds (>= 0) before it is cancelled.
    pub execution_goal_margin: f64,
    /// Topic mode: 0 answers `~/execute` once the trajectory is sent; above 0, once every
    /// joint of the joint state is within this (rad or m) of the trajectory's end, within
    /// the time an action goal is allowed.
    pub topic_arrival_tolerance: f64,
    /// Whether a running execution is stopped when a scene change makes the rest of its
    /// trajectory invalid (MoveIt's execution monitoring).
    pub monitor_execution: bool,
    /// How many times (0 ..= [`MAX_REPLAN_ATTEMPTS`]) an execution that monitoring
    /// stopped plans again from where the robot holds to where it was going and goes on;
    /// 0: never (the stop is the answer).
    pub replan_attempts: i64,
    /// Seconds (0 ..= [`MAX_REPLAN_DELAY`]) between a stop and each replanning attempt: the
    /// robot comes to rest, and a passing obstacle may move on.
    pub replan_delay: f64,
    /// How far (rad or m, in (0, [`MAX_START_TOLERANCE`]]) each joint of the current joint
    /// state may be from a trajectory's first point for `~/execute` to send it (MoveIt's
    /// `trajectory_execution.allowed_start_tolerance`, default 0.01).
    pub execution_start_tolerance: f64,
    /// The `FollowJointTrajectory` action `~/execute` sends goals to (read when the node
    /// starts: rcl cannot remap action names, and the client is made once).
    pub controller_action: String,
    /// A MoveIt `moveit_controllers.yaml` listing the controllers `~/execute` sends
    /// trajectories to, each the part for its joints (read when the node starts; empty: one
    /// controller at `controller_action` taking every joint). See [`crate::controllers`].
    pub controllers_file: String,
    /// A scene file (the project's format or a MoveIt `PlanningScene` YAML) loaded when the
    /// robot is, replacing the planning scene; set while the node runs, it is loaded then
    /// (empty: none; the bundled robot brings its own scene).
    pub scene_path: String,
    /// A MoveIt configuration package (its folder, or its name looked up in
    /// `AMENT_PREFIX_PATH`): the URDF (xacro expanded), SRDF, joint limits and controllers
    /// that `robot_description` / `urdf_path`, `robot_description_semantic` / `srdf_path`,
    /// `joint_limits_path` and `controllers_file` do not give (see
    /// [`crate::robot::moveit_config`]). Its controllers are read when the node starts.
    pub moveit_config: String,
    /// Path of the robot's URDF file (used when `robot_description` is empty; a `.xacro`
    /// file is expanded by the xacro program).
    pub urdf_path: String,
    /// Path of the robot's SRDF file (empty: no disabled collision pairs).
    pub srdf_path: String,
    /// Path of a MoveIt `joint_limits.yaml` (empty: the URDF's limits and the default
    /// acceleration limits).
    pub joint_limits_path: String,
    /// URDF text of the robot; wins over `urdf_path` when not empty.
    pub robot_description: String,
    /// SRDF text of the robot (MoveIt's parameter name); wins over `srdf_path` when not
    /// empty.
    pub robot_description_semantic: String,
    /// Robot geometry, one of [`SHAPES`]: the collision polytopes, the sphere model of
    /// `spherized_urdf_path`, or a sphere model fitted to the polytopes at load.
    pub collision_shapes: String,
    /// A `_spherized` URDF with the sphere model (`collision_shapes: spheres`).
    pub spherized_urdf_path: String,
    /// `collision_shapes: fitted`: how far (m) a sphere may stick out of its body; > 0.
    pub sphere_tolerance: f64,
    /// `collision_shapes: fitted`: most spheres per collision body; 1 ..= 256.
    pub max_spheres_per_body: i64,
    /// The links' collision meshes: most convex parts each is split into
    /// ([`LoadOptions::mesh_parts`]); 1: its convex hull; 1 ..= 256.
    pub link_convex_parts: i64,
    /// Voxels along the longest side of a link mesh split into parts; 8 ..= 256.
    pub link_mesh_resolution: i64,
}

impl Default for NodeParams {
    /// The service's default settings and no robot override (the bundled robot).
    fn default() -> Self {
        let s = ServiceSettings::default();
        Self {
            planner: s.planner,
            ompl_planning: s.ompl_planning,
            backend: s.backend,
            resolution: s.resolution,
            time_limit: s.time_limit,
            seed: i64::try_from(s.seed).unwrap_or(0),
            roadmap_size: i64::try_from(s.roadmap_size).unwrap_or(i64::MAX),
            planning_attempts: i64::try_from(s.planning_attempts).unwrap_or(1),
            plan_on_device: s.plan_on_device,
            device_extra_attempts: s.device_extra_attempts.map_or(-1, i64::from),
            device_escalate_after: i64::from(s.device_escalate_after),
            velocity_scaling: s.velocity_scaling,
            acceleration_scaling: s.acceleration_scaling,
            path_tolerance: s.path_tolerance,
            ik_time_share: s.ik_time_share,
            mesh_convex_parts: i64::from(s.mesh_parts.max_parts),
            mesh_resolution: i64::from(s.mesh_parts.resolution),
            planning_group: s.planning_group,
            planning_frame: s.planning_frame,
            pointcloud_resolution: s.cloud.resolution,
            pointcloud_max_range: s.cloud.max_range,
            pointcloud_padding: s.cloud.padding,
            pointcloud_min_points: i64::try_from(s.cloud.min_points).unwrap_or(1),
            pointcloud_max_boxes: i64::try_from(s.cloud.max_boxes).unwrap_or(i64::MAX),
            execution_mode: "action".into(),
            execution_duration_scaling: 1.2,
            execution_goal_margin: 0.5,
            topic_arrival_tolerance: 0.0,
            monitor_execution: true,
            replan_attempts: 0,
            replan_delay: 0.5,
            execution_start_tolerance: crate::service::START_TOLERANCE,
            controller_action: DEFAULT_CONTROLLER_ACTION.into(),
            controllers_file: String::new(),
            scene_path: String::new(),
            moveit_config: String::new(),
            urdf_path: String::new(),
            srdf_path: String::new(),
            joint_limits_path: String::new(),
            robot_description: String::new(),
            robot_description_semantic: String::new(),
            collision_shapes: "polytopes".into(),
            spherized_urdf_path: String::new(),
            sphere_tolerance: SphereFit::default().tolerance,
            max_spheres_per_body: i64::try_from(SphereFit::default().max_per_body).unwrap_or(16),
            link_convex_parts: 1,
            link_mesh_resolution: i64::from(Decomposition::default().resolution),
        }
    }
}

/// A parameter value the node refuses, with the reason.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("parameter '{name}': {reason}")]
pub struct ParamError {
    /// Parameter name.
    pub name: String,
    /// What is wrong with the value.
    pub reason: String,
}

fn err(name: &str, reason: impl Into<String>) -> ParamError {
    ParamError {
        name: name.to_owned(),
        reason: reason.into(),
    }
}

fn as_string(name: &str, v: &ParameterValue) -> Result<String, ParamError> {
    match v {
        ParameterValue::String(s) => Ok(s.clone()),
        other => Err(err(name, format!("expected a string, got {other:?}"))),
    }
}

fn as_f64(name: &str, v: &ParameterValue) -> Result<f64, ParamError> {
    match v {
        ParameterValue::Double(x) if x.is_finite() => Ok(*x),
        // YAML writes `5` for 5.0 often enough; accept integers for double parameters.
        ParameterValue::Integer(i) => Ok(*i as f64),
        other => Err(err(
            name,
            format!("expected a finite number, got {other:?}"),
        )),
    }
}

fn as_i64(name: &str, v: &ParameterValue) -> Result<i64, ParamError> {
    match v {
        ParameterValue::Integer(i) => Ok(*i),
        other => Err(err(name, format!("expected an integer, got {other:?}"))),
    }
}

/// A count of convex parts a mesh may be split into (`mesh_convex_parts`,
/// `link_convex_parts`): 1 ..= [`crate::robot::decompose::MAX_PARTS`].
fn part_count(name: &str, v: &ParameterValue) -> Result<i64, ParamError> {
    let n = as_i64(name, v)?;
    let most = i64::from(crate::robot::decompose::MAX_PARTS);
    if !(1..=most).contains(&n) {
        return Err(err(name, format!("{n} must be in 1..={most}")));
    }
    Ok(n)
}

/// Voxels along a split mesh's longest side (`mesh_resolution`, `link_mesh_resolution`).
fn voxels(name: &str, v: &ParameterValue) -> Result<i64, ParamError> {
    let n = as_i64(name, v)?;
    let (low, high) = (
        i64::from(crate::robot::decompose::MIN_RESOLUTION),
        i64::from(crate::robot::decompose::MAX_RESOLUTION),
    );
    if !(low..=high).contains(&n) {
        return Err(err(name, format!("{n} must be in {low}..={high}")));
    }
    Ok(n)
}

/// The split of a parts count and a resolution as the parameters hold them (checked when
/// set).
fn decomposition(parts: i64, resolution: i64) -> Decomposition {
    Decomposition {
        max_parts: u32::try_from(parts).unwrap_or(1),
        resolution: u32::try_from(resolution).unwrap_or(Decomposition::default().resolution),
    }
}

fn as_bool(name: &str, v: &ParameterValue) -> Result<bool, ParamError> {
    match v {
        ParameterValue::Bool(b) => Ok(*b),
        other => Err(err(name, format!("expected true or false, got {other:?}"))),
    }
}

fn one_of(name: &str, value: String, allowed: &[&str]) -> Result<String, ParamError> {
    if allowed.contains(&value.as_str()) {
        Ok(value)
    } else {
        Err(err(name, format!("'{value}' is not one of {allowed:?}")))
    }
}

fn positive(name: &str, x: f64) -> Result<f64, ParamError> {
    if x > 0.0 {
        Ok(x)
    } else {
        Err(err(name, format!("{x} must be > 0")))
    }
}

fn non_negative(name: &str, x: f64) -> Result<f64, ParamError> {
    if x >= 0.0 {
        Ok(x)
    } else {
        Err(err(name, format!("{x} must be >= 0")))
    }
}

fn at_least_one(name: &str, v: &ParameterValue) -> Result<i64, ParamError> {
    let n = as_i64(name, v)?;
    if n >= 1 {
        Ok(n)
    } else {
        Err(err(name, format!("{n} must be >= 1")))
    }
}

/// A scaling factor: in (0, 1], or 0 for the joint limits file's default.
fn scale(name: &str, x: f64) -> Result<f64, ParamError> {
    if (0.0..=1.0).contains(&x) {
        Ok(x)
    } else {
        Err(err(
            name,
            format!("{x} must be in (0, 1], or 0 for the joint limits file's default"),
        ))
    }
}

/// The index of `name` in `names` (evaluated at compile time: a missing name fails the build).
const fn position_of(names: &[&str], name: &str) -> usize {
    let mut i = 0;
    while i < names.len() {
        if names[i].len() == name.len() {
            let (a, b) = (names[i].as_bytes(), name.as_bytes());
            let mut k = 0;
            while k < a.len() && a[k] == b[k] {
                k += 1;
            }
            if k == a.len() {
                return i;
            }
        }
        i += 1;
    }
    panic!("no such parameter name")
}

impl NodeParams {
    /// Parameters that choose the robot, the tail of [`Self::NAMES`] from `moveit_config`
    /// on: changing one reloads it.
    pub const ROBOT: &'static [&'static str] = Self::NAMES
        .split_at(position_of(&Self::NAMES, "moveit_config"))
        .1;

    /// Whether a URDF published on the `robot_description` topic (as robot_state_publisher
    /// does) should become the robot: MoveIt's order, where the parameters win. It does while
    /// neither the `robot_description` parameter (unless it holds what the topic sent before,
    /// `from_topic`) nor `urdf_path` nor `moveit_config` names a robot, and the text is not
    /// the one loaded.
    pub fn takes_topic_description(&self, text: &str, from_topic: bool) -> bool {
        !text.trim().is_empty()
            && self.urdf_path.is_empty()
            && self.moveit_config.is_empty()
            && (self.robot_description.is_empty() || from_topic)
            && self.robot_description != text
    }

    /// The planning service's settings from these parameters.
    pub fn service_settings(&self) -> ServiceSettings {
        ServiceSettings {
            planner: self.planner.clone(),
            ompl_planning: self.ompl_planning,
            backend: self.backend.clone(),
            shapes: if self.collision_shapes == "polytopes" {
                RobotShapes::Polytopes
            } else {
                RobotShapes::Spheres
            },
            resolution: self.resolution,
            time_limit: self.time_limit,
            seed: u64::try_from(self.seed).unwrap_or(0),
            velocity_scaling: self.velocity_scaling,
            acceleration_scaling: self.acceleration_scaling,
            path_tolerance: self.path_tolerance,
            ik_time_share: self.ik_time_share,
            mesh_parts: decomposition(self.mesh_convex_parts, self.mesh_resolution),
            planning_group: self.planning_group.clone(),
            planning_frame: self.planning_frame.clone(),
            roadmap_size: usize::try_from(self.roadmap_size).unwrap_or(1).max(1),
            planning_attempts: usize::try_from(self.planning_attempts)
                .unwrap_or(1)
                .clamp(1, MAX_ATTEMPTS),
            plan_on_device: self.plan_on_device,
            device_extra_attempts: u32::try_from(self.device_extra_attempts).ok(),
            device_escalate_after: u32::try_from(self.device_escalate_after)
                .unwrap_or(DEFAULT_ESCALATE_AFTER)
                .max(1),
            cloud: CloudSettings {
                resolution: self.pointcloud_resolution,
                max_range: self.pointcloud_max_range,
                padding: self.pointcloud_padding,
                min_points: usize::try_from(self.pointcloud_min_points)
                    .unwrap_or(1)
                    .max(1),
                max_boxes: usize::try_from(self.pointcloud_max_boxes)
                    .unwrap_or(1)
                    .max(1),
            },
        }
    }

    /// The MoveIt configuration package of `moveit_config`, if set; errors name it.
    pub fn moveit_config(&self) -> Result<Option<MoveItConfig>, String> {
        if self.moveit_config.is_empty() {
            return Ok(None);
        }
        MoveItConfig::locate(&self.moveit_config)
            .map(Some)
            .map_err(|e| format!("moveit_config: {e}"))
    }

    /// The controllers file `~/execute` uses: `controllers_file`, else the
    /// `config/moveit_controllers.yaml` of `moveit_config` where it has one, else none (one
    /// controller at `controller_action`). Errors name the parameter.
    pub fn controllers_source(&self) -> Result<Option<String>, String> {
        if !self.controllers_file.is_empty() {
            return Ok(Some(self.controllers_file.clone()));
        }
        Ok(self
            .moveit_config()?
            .and_then(|c| c.controllers)
            .map(|p| p.display().to_string()))
    }

    /// Loads the robot named by `robot_description` (URDF text), `urdf_path` or
    /// `moveit_config`, in that order, with the SRDF of `robot_description_semantic` (text),
    /// `srdf_path` or `moveit_config` if set; with none of them, the bundled robot and its
    /// demo scene. Another robot starts with an empty scene. The `joint_limits_path` file's
    /// limits (else those of `moveit_config`'s package) are applied to it. With
    /// `collision_shapes` `spheres` the robot gets the sphere model of `spherized_urdf_path`,
    /// with `fitted` one fitted to its collision geometry. Errors name the file or parameter.
    pub fn load_robot(&self) -> Result<(RobotModel, Scene), String> {
        let cfg = self.moveit_config()?;
        let (mut robot, scene) = self.load_geometry(cfg.as_ref())?;
        if !self.joint_limits_path.is_empty() {
            let path = Path::new(&self.joint_limits_path);
            JointLimitsFile::read(path)
                .and_then(|f| robot.apply_joint_limits(&f, &self.joint_limits_path))
                .map_err(|e| format!("joint_limits_path: {e}"))?;
        } else if let Some(path) = cfg.as_ref().and_then(|c| c.joint_limits.as_ref()) {
            let name = path.display().to_string();
            JointLimitsFile::read(path)
                .and_then(|f| robot.apply_joint_limits(&f, &name))
                .map_err(|e| format!("moveit_config: {e}"))?;
        }
        if let Some(c) = &cfg {
            c.apply_planning_files(&mut robot)
                .map_err(|e| format!("moveit_config: {e}"))?;
        }
        match self.collision_shapes.as_str() {
            "spheres" => {
                if self.spherized_urdf_path.is_empty() {
                    return Err("collision_shapes 'spheres' needs spherized_urdf_path (a _spherized URDF); 'fitted' fits spheres to the collision geometry instead".into());
                }
                let path = Path::new(&self.spherized_urdf_path);
                robot.spherized = Some(
                    load_spherized(path, &robot.tree)
                        .map_err(|e| format!("spherized_urdf_path '{}': {e}", path.display()))?,
                );
            }
            "fitted" => {
                let fit = SphereFit {
                    tolerance: self.sphere_tolerance,
                    max_per_body: usize::try_from(self.max_spheres_per_body).unwrap_or(1),
                };
                robot.spherized = Some(fit_robot(&robot, &fit));
            }
            _ => {}
        }
        Ok((robot, scene))
    }

    /// The robot and scene of [`Self::load_robot`] before the joint limits and sphere model.
    fn load_geometry(&self, cfg: Option<&MoveItConfig>) -> Result<(RobotModel, Scene), String> {
        let mut opts = LoadOptions {
            mesh_parts: Some(decomposition(
                self.link_convex_parts,
                self.link_mesh_resolution,
            )),
            ..LoadOptions::default()
        };
        if let Some(c) = cfg {
            opts.search_paths.extend(c.search_paths());
        }
        // The SRDF as (text, name in errors): robot_description_semantic, else srdf_path,
        // else the MoveIt config's.
        let srdf: Option<(String, String)> = if !self.robot_description_semantic.is_empty() {
            Some((
                self.robot_description_semantic.clone(),
                "robot_description_semantic".into(),
            ))
        } else if !self.srdf_path.is_empty() {
            let text = read_description(Path::new(&self.srdf_path), &[])
                .map_err(|e| format!("srdf_path '{}': {e}", self.srdf_path))?;
            Some((text, format!("srdf_path '{}'", self.srdf_path)))
        } else if let Some(c) = cfg {
            let text = c.srdf_text().map_err(|e| format!("moveit_config: {e}"))?;
            Some((text, c.srdf.display().to_string()))
        } else {
            None
        };
        let srdf = srdf.as_ref().map(|(t, n)| (t.as_str(), n.as_str()));
        let empty = || Scene::new(self.planning_frame.clone());
        if !self.robot_description.is_empty() {
            let robot = RobotModel::from_urdf_str_named(
                &self.robot_description,
                "robot_description",
                None,
                srdf,
                &opts,
            )
            .map_err(|e| format!("robot_description: {e}"))?;
            Ok((robot, empty()))
        } else if !self.urdf_path.is_empty() {
            let path = Path::new(&self.urdf_path);
            let text = read_description(path, &[])
                .map_err(|e| format!("urdf_path '{}': {e}", self.urdf_path))?;
            let robot =
                RobotModel::from_urdf_str_named(&text, &self.urdf_path, path.parent(), srdf, &opts)
                    .map_err(|e| format!("urdf_path '{}': {e}", self.urdf_path))?;
            Ok((robot, empty()))
        } else if let Some(c) = cfg {
            let text = c.urdf_text().map_err(|e| format!("moveit_config: {e}"))?;
            let robot = c
                .robot_from_text(&text, srdf, &opts)
                .map_err(|e| format!("moveit_config: {e}"))?;
            Ok((robot, empty()))
        } else {
            crate::cli::demo::bundled().map_err(|e| format!("bundled robot: {}", e.0))
        }
    }

    /// Parameter names, in declaration order; the robot's ([`Self::ROBOT`]) last.
    pub const NAMES: [&'static str; 47] = [
        "planner",
        "ompl_planning",
        "backend",
        "resolution",
        "time_limit",
        "seed",
        "roadmap_size",
        "planning_attempts",
        "plan_on_device",
        "device_extra_attempts",
        "device_escalate_after",
        "velocity_scaling",
        "acceleration_scaling",
        "path_tolerance",
        "ik_time_share",
        "mesh_convex_parts",
        "mesh_resolution",
        "planning_group",
        "planning_frame",
        "pointcloud_resolution",
        "pointcloud_max_range",
        "pointcloud_padding",
        "pointcloud_min_points",
        "pointcloud_max_boxes",
        "execution_mode",
        "execution_duration_scaling",
        "execution_goal_margin",
        "topic_arrival_tolerance",
        "monitor_execution",
        "replan_attempts",
        "replan_delay",
        "execution_start_tolerance",
        "controller_action",
        "controllers_file",
        "scene_path",
        "moveit_config",
        "urdf_path",
        "srdf_path",
        "joint_limits_path",
        "robot_description",
        "robot_description_semantic",
        "collision_shapes",
        "spherized_urdf_path",
        "sphere_tolerance",
        "max_spheres_per_body",
        "link_convex_parts",
        "link_mesh_resolution",
    ];

    /// One-line description of a parameter, shown by `ros2 param describe`.
    pub fn description(name: &str) -> &'static str {
        match name {
            "planner" => "default planner: prm, lazy_prm, rrt, rrt_star, rrt_connect or drm",
            "ompl_planning" => {
                "use the moveit_config's ompl_planning.yaml: planner ids naming its configurations, each group's default_planner_config (before planner), longest_valid_segment_fraction where finer than resolution"
            }
            "backend" => "collision backend: auto (hybrid with a GPU, else cpu), cpu, cuda or hybrid",
            "resolution" => "joint-space step (rad) at which motions are collision checked",
            "time_limit" => "default planning time budget in seconds",
            "seed" => "default random seed (same seed, same path)",
            "roadmap_size" => "number of roadmap vertices built by the roadmap planners",
            "planning_attempts" => {
                "rrt / rrt_connect attempts planned at once on CPU threads (1-256); the one whose path took the least work wins"
            }
            "plan_on_device" => {
                "rrt_connect plans whole on the GPU, one launch per request (needs backend cuda, hybrid or auto with a GPU)"
            }
            "device_extra_attempts" => {
                "with plan_on_device: extra attempts for a request no attempt solves within device_escalate_after iterations (-1: 3 per attempt, 0: none, at most 255)"
            }
            "device_escalate_after" => {
                "with plan_on_device: iterations without a path before the extra attempts join (>= 1)"
            }
            "velocity_scaling" => {
                "default joint velocity limit scaling in (0, 1]; 0: the joint limits file's default_velocity_scaling_factor, else 1"
            }
            "acceleration_scaling" => {
                "default joint acceleration limit scaling in (0, 1]; 0: the joint limits file's default_acceleration_scaling_factor, else 1"
            }
            "path_tolerance" => {
                "largest joint-space deviation (rad) from a waypoint where a planned trajectory rounds the corner instead of stopping (MoveIt's path_tolerance); 0: stop at every waypoint"
            }
            "ik_time_share" => {
                "pose goals: share of the time limit in (0, 1] past which no new batch of inverse kinematics starts begins once a collision-free goal configuration is known; the planner gets the rest"
            }
            "mesh_convex_parts" => {
                "~/obstacles mesh markers (MESH_RESOURCE, TRIANGLE_LIST): most convex parts a mesh is split into so that bins and shelves keep their hollows (obstacles ns/id, ns/id/1, ...); 1: its convex hull (1-256)"
            }
            "mesh_resolution" => {
                "mesh markers split into parts: voxels along the mesh's longest side (8-256); finer follows thin walls more closely and takes longer"
            }
            "planning_group" => "SRDF planning group (empty: all actuated joints)",
            "planning_frame" => "frame of published trajectories and markers",
            "pointcloud_resolution" => {
                "edge (m) of the voxels ~/points clouds are cut into; occupied voxels become boxes of the scene"
            }
            "pointcloud_max_range" => {
                "~/points: points farther than this (m) from the sensor are dropped (0: none)"
            }
            "pointcloud_padding" => {
                "~/points self filter: points within this distance (m) of the robot's collision bodies at the current joint state are dropped"
            }
            "pointcloud_min_points" => {
                "~/points: points a voxel needs to be occupied (>= 1; more drops sparse noise)"
            }
            "pointcloud_max_boxes" => {
                "~/points: most boxes per cloud (>= 1); beyond, the voxels are doubled in size until they fit"
            }
            "execution_mode" => {
                "how ~/execute reaches the controller: action (a control_msgs/FollowJointTrajectory goal, answered with the controller's result) or topic (published on its command topic, fire and forget)"
            }
            "execution_duration_scaling" => {
                "action execution: a goal may run this many times its trajectory's duration (>= 1) plus execution_goal_margin before it is cancelled"
            }
            "execution_goal_margin" => {
                "action execution: seconds (>= 0) a goal may run past its scaled duration before it is cancelled"
            }
            "topic_arrival_tolerance" => {
                "topic execution: 0 answers ~/execute once sent; above 0, once every joint of the joint state is within this of the trajectory's end (TIMED_OUT after the scaled duration plus execution_goal_margin)"
            }
            "monitor_execution" => {
                "stop a running ~/execute when a scene change (obstacle, cloud, attached object) makes the rest of its trajectory invalid: the goal is cancelled (action) or an empty trajectory sent (topic)"
            }
            "replan_attempts" => {
                "an execution stopped by monitor_execution: times to plan again from where the robot holds to where it was going and go on (0-100; 0: never, the stop is the answer)"
            }
            "replan_delay" => {
                "seconds (0-60) between such a stop and each replanning attempt (the robot comes to rest; a passing obstacle may move on)"
            }
            "execution_start_tolerance" => {
                "how far (rad or m, over 0 and at most 1) each joint may be from a trajectory's first point for ~/execute to send it (MoveIt's allowed_start_tolerance)"
            }
            "controller_action" => {
                "the control_msgs/FollowJointTrajectory action ~/execute sends goals to (read when the node starts)"
            }
            "controllers_file" => {
                "a MoveIt moveit_controllers.yaml: ~/execute sends each controller the part of a trajectory for its joints (read when the node starts; empty: one controller at controller_action)"
            }
            "scene_path" => {
                "scene file (the project's format or a MoveIt PlanningScene YAML) loaded with the robot, replacing the planning scene; set at run time, loaded then (empty: none)"
            }
            "moveit_config" => {
                "a MoveIt config package (folder or package name): its URDF (xacro expanded), SRDF, joint_limits.yaml and moveit_controllers.yaml where the other parameters give none (its controllers read when the node starts)"
            }
            "urdf_path" => "URDF file (.xacro expanded), used when robot_description is empty",
            "srdf_path" => "SRDF file (empty: no disabled collision pairs)",
            "joint_limits_path" => {
                "MoveIt joint_limits.yaml: velocity, acceleration and narrower position limits, default scaling (empty: the URDF's limits)"
            }
            "robot_description" => "URDF text; wins over urdf_path when not empty",
            "robot_description_semantic" => "SRDF text; wins over srdf_path when not empty",
            "collision_shapes" => {
                "robot geometry: polytopes (the URDF collision geometry, exact), spheres (the sphere model of spherized_urdf_path) or fitted (spheres fitted around the polytopes at load, conservative); drm keeps the polytopes"
            }
            "spherized_urdf_path" => "_spherized URDF with the sphere model (collision_shapes: spheres)",
            "sphere_tolerance" => {
                "collision_shapes fitted: how far (m) a fitted sphere may stick out of its collision body"
            }
            "max_spheres_per_body" => "collision_shapes fitted: most spheres per collision body (1-256)",
            "link_convex_parts" => {
                "the robot links' collision meshes: most convex parts each is split into, so that a concave link is not filled in (one collision body per part); 1: its convex hull (1-256)"
            }
            "link_mesh_resolution" => {
                "link meshes split into parts: voxels along the mesh's longest side (8-256)"
            }
            _ => "",
        }
    }

    /// The current value of a parameter as a ROS parameter value.
    pub fn value(&self, name: &str) -> ParameterValue {
        use ParameterValue as V;
        match name {
            "planner" => V::String(self.planner.clone()),
            "ompl_planning" => V::Bool(self.ompl_planning),
            "backend" => V::String(self.backend.clone()),
            "resolution" => V::Double(self.resolution),
            "time_limit" => V::Double(self.time_limit),
            "seed" => V::Integer(self.seed),
            "roadmap_size" => V::Integer(self.roadmap_size),
            "planning_attempts" => V::Integer(self.planning_attempts),
            "plan_on_device" => V::Bool(self.plan_on_device),
            "device_extra_attempts" => V::Integer(self.device_extra_attempts),
            "device_escalate_after" => V::Integer(self.device_escalate_after),
            "velocity_scaling" => V::Double(self.velocity_scaling),
            "acceleration_scaling" => V::Double(self.acceleration_scaling),
            "path_tolerance" => V::Double(self.path_tolerance),
            "ik_time_share" => V::Double(self.ik_time_share),
            "mesh_convex_parts" => V::Integer(self.mesh_convex_parts),
            "mesh_resolution" => V::Integer(self.mesh_resolution),
            "planning_group" => V::String(self.planning_group.clone()),
            "planning_frame" => V::String(self.planning_frame.clone()),
            "pointcloud_resolution" => V::Double(self.pointcloud_resolution),
            "pointcloud_max_range" => V::Double(self.pointcloud_max_range),
            "pointcloud_padding" => V::Double(self.pointcloud_padding),
            "pointcloud_min_points" => V::Integer(self.pointcloud_min_points),
            "pointcloud_max_boxes" => V::Integer(self.pointcloud_max_boxes),
            "execution_mode" => V::String(self.execution_mode.clone()),
            "execution_duration_scaling" => V::Double(self.execution_duration_scaling),
            "execution_goal_margin" => V::Double(self.execution_goal_margin),
            "topic_arrival_tolerance" => V::Double(self.topic_arrival_tolerance),
            "monitor_execution" => V::Bool(self.monitor_execution),
            "replan_attempts" => V::Integer(self.replan_attempts),
            "replan_delay" => V::Double(self.replan_delay),
            "execution_start_tolerance" => V::Double(self.execution_start_tolerance),
            "controller_action" => V::String(self.controller_action.clone()),
            "controllers_file" => V::String(self.controllers_file.clone()),
            "scene_path" => V::String(self.scene_path.clone()),
            "moveit_config" => V::String(self.moveit_config.clone()),
            "urdf_path" => V::String(self.urdf_path.clone()),
            "srdf_path" => V::String(self.srdf_path.clone()),
            "joint_limits_path" => V::String(self.joint_limits_path.clone()),
            "robot_description" => V::String(self.robot_description.clone()),
            "robot_description_semantic" => V::String(self.robot_description_semantic.clone()),
            "collision_shapes" => V::String(self.collision_shapes.clone()),
            "spherized_urdf_path" => V::String(self.spherized_urdf_path.clone()),
            "sphere_tolerance" => V::Double(self.sphere_tolerance),
            "max_spheres_per_body" => V::Integer(self.max_spheres_per_body),
            "link_convex_parts" => V::Integer(self.link_convex_parts),
            "link_mesh_resolution" => V::Integer(self.link_mesh_resolution),
            _ => V::NotSet,
        }
    }

    /// Validates `value` and stores it in the named field. On error nothing changes.
    pub fn set(&mut self, name: &str, value: &ParameterValue) -> Result<(), ParamError> {
        match name {
            "planner" => self.planner = one_of(name, as_string(name, value)?, PLANNERS)?,
            "ompl_planning" => self.ompl_planning = as_bool(name, value)?,
            "backend" => self.backend = one_of(name, as_string(name, value)?, BACKENDS)?,
            "resolution" => self.resolution = positive(name, as_f64(name, value)?)?,
            "time_limit" => self.time_limit = positive(name, as_f64(name, value)?)?,
            "seed" => {
                let seed = as_i64(name, value)?;
                if seed < 0 {
                    return Err(err(name, format!("{seed} must be >= 0")));
                }
                self.seed = seed;
            }
            "roadmap_size" => {
                let n = as_i64(name, value)?;
                if n <= 0 {
                    return Err(err(name, format!("{n} must be > 0")));
                }
                self.roadmap_size = n;
            }
            "planning_attempts" => {
                let n = as_i64(name, value)?;
                if !(1..=MAX_ATTEMPTS as i64).contains(&n) {
                    return Err(err(name, format!("{n} must be in 1..={MAX_ATTEMPTS}")));
                }
                self.planning_attempts = n;
            }
            "plan_on_device" => self.plan_on_device = as_bool(name, value)?,
            "device_extra_attempts" => {
                let n = as_i64(name, value)?;
                let most = i64::from(MAX_DEVICE_ATTEMPTS) - 1;
                if !(-1..=most).contains(&n) {
                    return Err(err(
                        name,
                        format!("{n} must be -1 (3 per attempt), 0 (none) or up to {most}"),
                    ));
                }
                self.device_extra_attempts = n;
            }
            "device_escalate_after" => {
                let n = as_i64(name, value)?;
                if !(1..=i64::from(u32::MAX)).contains(&n) {
                    return Err(err(name, format!("{n} must be >= 1")));
                }
                self.device_escalate_after = n;
            }
            "velocity_scaling" => self.velocity_scaling = scale(name, as_f64(name, value)?)?,
            "acceleration_scaling" => {
                self.acceleration_scaling = scale(name, as_f64(name, value)?)?
            }
            "path_tolerance" => {
                let v = non_negative(name, as_f64(name, value)?)?;
                if !v.is_finite() {
                    return Err(err(name, format!("{v} must be finite")));
                }
                self.path_tolerance = v;
            }
            "ik_time_share" => {
                let v = as_f64(name, value)?;
                crate::planners::pose::check_ik_time_share(v).map_err(|e| err(name, e))?;
                self.ik_time_share = v;
            }
            "mesh_convex_parts" => self.mesh_convex_parts = part_count(name, value)?,
            "mesh_resolution" => self.mesh_resolution = voxels(name, value)?,
            "planning_group" => self.planning_group = as_string(name, value)?,
            "planning_frame" => self.planning_frame = as_string(name, value)?,
            "pointcloud_resolution" => {
                self.pointcloud_resolution = positive(name, as_f64(name, value)?)?
            }
            "pointcloud_max_range" => {
                self.pointcloud_max_range = non_negative(name, as_f64(name, value)?)?
            }
            "pointcloud_padding" => {
                self.pointcloud_padding = non_negative(name, as_f64(name, value)?)?
            }
            "pointcloud_min_points" => self.pointcloud_min_points = at_least_one(name, value)?,
            "pointcloud_max_boxes" => self.pointcloud_max_boxes = at_least_one(name, value)?,
            "execution_mode" => {
                self.execution_mode = one_of(name, as_string(name, value)?, EXECUTION_MODES)?
            }
            "execution_duration_scaling" => {
                let v = as_f64(name, value)?;
                if !(v >= 1.0 && v.is_finite()) {
                    return Err(err(name, format!("{v} must be finite and >= 1")));
                }
                self.execution_duration_scaling = v;
            }
            "execution_goal_margin" => {
                let v = non_negative(name, as_f64(name, value)?)?;
                if !v.is_finite() {
                    return Err(err(name, format!("{v} must be finite")));
                }
                self.execution_goal_margin = v;
            }
            "topic_arrival_tolerance" => {
                let v = non_negative(name, as_f64(name, value)?)?;
                if !v.is_finite() {
                    return Err(err(name, format!("{v} must be finite")));
                }
                self.topic_arrival_tolerance = v;
            }
            "monitor_execution" => self.monitor_execution = as_bool(name, value)?,
            "replan_attempts" => {
                let n = as_i64(name, value)?;
                if !(0..=MAX_REPLAN_ATTEMPTS).contains(&n) {
                    return Err(err(
                        name,
                        format!("{n} must be in 0..={MAX_REPLAN_ATTEMPTS} (0: no replanning)"),
                    ));
                }
                self.replan_attempts = n;
            }
            "execution_start_tolerance" => {
                let v = as_f64(name, value)?;
                if !(v > 0.0 && v <= MAX_START_TOLERANCE) {
                    return Err(err(
                        name,
                        format!("{v} must be over 0 and at most {MAX_START_TOLERANCE}"),
                    ));
                }
                self.execution_start_tolerance = v;
            }
            "replan_delay" => {
                let v = as_f64(name, value)?;
                if !(0.0..=MAX_REPLAN_DELAY).contains(&v) {
                    return Err(err(
                        name,
                        format!("{v} must be in 0..={MAX_REPLAN_DELAY} seconds"),
                    ));
                }
                self.replan_delay = v;
            }
            "controller_action" => {
                let action = as_string(name, value)?;
                valid_name(name, &action)?;
                self.controller_action = action;
            }
            "controllers_file" => self.controllers_file = as_string(name, value)?,
            "scene_path" => self.scene_path = as_string(name, value)?,
            "moveit_config" => self.moveit_config = as_string(name, value)?,
            "urdf_path" => self.urdf_path = as_string(name, value)?,
            "srdf_path" => self.srdf_path = as_string(name, value)?,
            "joint_limits_path" => self.joint_limits_path = as_string(name, value)?,
            "robot_description" => self.robot_description = as_string(name, value)?,
            "robot_description_semantic" => {
                self.robot_description_semantic = as_string(name, value)?
            }
            "collision_shapes" => {
                self.collision_shapes = one_of(name, as_string(name, value)?, SHAPES)?
            }
            "spherized_urdf_path" => self.spherized_urdf_path = as_string(name, value)?,
            "sphere_tolerance" => self.sphere_tolerance = positive(name, as_f64(name, value)?)?,
            "max_spheres_per_body" => {
                let n = as_i64(name, value)?;
                if !(1..=MAX_FITTED_SPHERES as i64).contains(&n) {
                    return Err(err(
                        name,
                        format!("{n} must be in 1..={MAX_FITTED_SPHERES}"),
                    ));
                }
                self.max_spheres_per_body = n;
            }
            "link_convex_parts" => self.link_convex_parts = part_count(name, value)?,
            "link_mesh_resolution" => self.link_mesh_resolution = voxels(name, value)?,
            _ => return Err(err(name, "unknown parameter")),
        }
        Ok(())
    }

    /// [`Self::set`] for a change while the node runs: `controller_action` and
    /// `controllers_file` are refused (the node makes its action clients once, when it
    /// starts).
    pub fn set_at_run_time(
        &mut self,
        name: &str,
        value: &ParameterValue,
    ) -> Result<(), ParamError> {
        if START_ONLY.contains(&name) && *value != self.value(name) {
            return Err(err(
                name,
                "is read when the node starts; restart the node (or set it in the launch) to use other controllers",
            ));
        }
        self.set(name, value)
    }

    /// Declares every parameter in r2r's parameter map: values already there (from a
    /// params file or `-p name:=value`) are validated and adopted, missing ones get their
    /// default. A refused value is replaced by the default in the map too, so that
    /// `ros2 param get` shows what the node uses. Returns the refusals for logging.
    pub fn declare(
        &mut self,
        map: &mut r2r::indexmap::IndexMap<String, Parameter>,
    ) -> Vec<ParamError> {
        let mut refused = Vec::new();
        for name in Self::NAMES {
            if let Some(p) = map.get(name) {
                if p.value != ParameterValue::NotSet {
                    if let Err(e) = self.set(name, &p.value) {
                        refused.push(e);
                    }
                }
            }
            let mut p = Parameter::new(self.value(name));
            p.description = Self::description(name);
            map.insert(name.to_owned(), p);
        }
        refused
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_has_a_value_and_a_description() {
        let p = NodeParams::default();
        for name in NodeParams::NAMES {
            assert_ne!(p.value(name), ParameterValue::NotSet, "{name}");
            assert!(!NodeParams::description(name).is_empty(), "{name}");
        }
    }

    #[test]
    fn set_validates_and_keeps_old_value_on_error() {
        let mut p = NodeParams::default();
        p.set("planner", &ParameterValue::String("rrt".into()))
            .unwrap();
        assert_eq!(p.planner, "rrt");
        assert!(p
            .set("planner", &ParameterValue::String("nope".into()))
            .is_err());
        assert!(p.set("planner", &ParameterValue::Integer(3)).is_err());
        assert_eq!(p.planner, "rrt");
        p.set("time_limit", &ParameterValue::Integer(2)).unwrap();
        assert_eq!(p.time_limit, 2.0);
        assert!(p.set("time_limit", &ParameterValue::Double(0.0)).is_err());
        assert!(p
            .set("velocity_scaling", &ParameterValue::Double(1.5))
            .is_err());
        assert!(p.set("seed", &ParameterValue::Integer(-1)).is_err());
        assert!(p.set("no_such", &ParameterValue::Integer(1)).is_err());
        p.set("plan_on_device", &ParameterValue::Bool(true))
            .unwrap();
        assert!(p.plan_on_device && p.service_settings().plan_on_device);
        assert!(p
            .set("plan_on_device", &ParameterValue::Integer(1))
            .is_err());
        assert!(p.plan_on_device);
    }

    #[test]
    fn device_escalation_parameters_reach_the_service_settings() {
        let mut p = NodeParams::default();
        // The defaults: 3 extra attempts per attempt (None), after 32 iterations.
        assert_eq!(p.device_extra_attempts, -1);
        assert_eq!(p.service_settings().device_extra_attempts, None);
        assert_eq!(p.service_settings().device_escalate_after, 32);
        p.set("device_extra_attempts", &ParameterValue::Integer(0))
            .unwrap();
        assert_eq!(p.service_settings().device_extra_attempts, Some(0));
        p.set("device_extra_attempts", &ParameterValue::Integer(24))
            .unwrap();
        p.set("device_escalate_after", &ParameterValue::Integer(64))
            .unwrap();
        let s = p.service_settings();
        assert_eq!(
            (s.device_extra_attempts, s.device_escalate_after),
            (Some(24), 64)
        );
        for bad in [-2, 256] {
            let e = p
                .set("device_extra_attempts", &ParameterValue::Integer(bad))
                .unwrap_err();
            assert_eq!(e.name, "device_extra_attempts");
        }
        assert!(p
            .set("device_escalate_after", &ParameterValue::Integer(0))
            .is_err());
        assert!(p
            .set("device_escalate_after", &ParameterValue::Double(3.0))
            .is_err());
        // Refused values leave the last good ones.
        assert_eq!((p.device_extra_attempts, p.device_escalate_after), (24, 64));
        assert_eq!(
            p.value("device_extra_attempts"),
            ParameterValue::Integer(24)
        );
    }

    #[test]
    fn the_controller_action_is_a_valid_name_set_at_start_only() {
        let mut p = NodeParams::default();
        assert_eq!(p.controller_action, DEFAULT_CONTROLLER_ACTION);
        let v = |s: &str| ParameterValue::String(s.into());
        p.set(
            "controller_action",
            &v("/arm_controller/follow_joint_trajectory"),
        )
        .unwrap();
        for bad in ["", "a//b", "arm/", "2arm/x", "arm controller", "arm/x-y"] {
            let e = p.set("controller_action", &v(bad)).unwrap_err();
            assert_eq!(e.name, "controller_action", "{bad}");
        }
        let e = p
            .set_at_run_time("controller_action", &v("other/follow"))
            .unwrap_err();
        assert!(e.reason.contains("restart"), "{e}");
        assert_eq!(
            p.controller_action,
            "/arm_controller/follow_joint_trajectory"
        );
        // The same value again, and other parameters, pass.
        p.set_at_run_time(
            "controller_action",
            &v("/arm_controller/follow_joint_trajectory"),
        )
        .unwrap();
        p.set_at_run_time("execution_mode", &v("topic")).unwrap();
        assert_eq!(p.execution_mode, "topic");
        // The controllers file likewise.
        p.set("controllers_file", &v("/a/moveit_controllers.yaml"))
            .unwrap();
        let e = p
            .set_at_run_time("controllers_file", &v("/b.yaml"))
            .unwrap_err();
        assert!(e.reason.contains("restart"), "{e}");
        assert_eq!(p.controllers_file, "/a/moveit_controllers.yaml");
    }

    #[test]
    fn execution_parameters_are_validated() {
        let mut p = NodeParams::default();
        assert_eq!(p.execution_mode, "action");
        // Monitoring is on unless turned off; it takes booleans only.
        assert!(p.monitor_execution);
        p.set("monitor_execution", &ParameterValue::Bool(false))
            .unwrap();
        assert!(!p.monitor_execution);
        let e = p
            .set("monitor_execution", &ParameterValue::String("yes".into()))
            .unwrap_err();
        assert_eq!(e.name, "monitor_execution");
        assert!(!p.monitor_execution);
        assert_eq!(
            (p.execution_duration_scaling, p.execution_goal_margin),
            (1.2, 0.5)
        );
        p.set("execution_mode", &ParameterValue::String("topic".into()))
            .unwrap();
        p.set("execution_duration_scaling", &ParameterValue::Integer(2))
            .unwrap();
        p.set("execution_goal_margin", &ParameterValue::Double(0.0))
            .unwrap();
        assert_eq!(p.topic_arrival_tolerance, 0.0);
        p.set("topic_arrival_tolerance", &ParameterValue::Double(0.01))
            .unwrap();
        // Corners rounded by 0.1 rad as MoveIt's default; 0 stops at every waypoint.
        assert_eq!(p.service_settings().path_tolerance, 0.1);
        p.set("path_tolerance", &ParameterValue::Double(0.0))
            .unwrap();
        assert_eq!(p.service_settings().path_tolerance, 0.0);
        p.set("path_tolerance", &ParameterValue::Double(0.25))
            .unwrap();
        // Pose goals' inverse kinematics may use half the time limit by default.
        assert_eq!(p.service_settings().ik_time_share, 0.5);
        p.set("ik_time_share", &ParameterValue::Double(1.0))
            .unwrap();
        assert_eq!(p.service_settings().ik_time_share, 1.0);
        // Mesh markers are hulls unless split is asked for.
        assert_eq!(p.service_settings().mesh_parts.max_parts, 1);
        p.set("mesh_convex_parts", &ParameterValue::Integer(12))
            .unwrap();
        p.set("mesh_resolution", &ParameterValue::Integer(96))
            .unwrap();
        assert_eq!(
            p.service_settings().mesh_parts,
            Decomposition {
                max_parts: 12,
                resolution: 96
            }
        );
        for (name, bad) in [
            ("mesh_convex_parts", ParameterValue::Integer(0)),
            ("mesh_convex_parts", ParameterValue::Integer(257)),
            ("mesh_convex_parts", ParameterValue::Double(4.0)),
            ("mesh_resolution", ParameterValue::Integer(7)),
            ("mesh_resolution", ParameterValue::Integer(300)),
            ("ik_time_share", ParameterValue::Double(0.0)),
            ("ik_time_share", ParameterValue::Double(1.5)),
            ("ik_time_share", ParameterValue::Double(f64::NAN)),
            ("execution_mode", ParameterValue::String("teleport".into())),
            ("execution_mode", ParameterValue::Integer(1)),
            ("execution_duration_scaling", ParameterValue::Double(0.99)),
            (
                "execution_duration_scaling",
                ParameterValue::Double(f64::INFINITY),
            ),
            ("execution_goal_margin", ParameterValue::Double(-0.1)),
            ("execution_goal_margin", ParameterValue::Double(f64::NAN)),
            ("topic_arrival_tolerance", ParameterValue::Double(-0.01)),
            ("path_tolerance", ParameterValue::Double(-0.01)),
            ("path_tolerance", ParameterValue::Double(f64::NAN)),
            ("path_tolerance", ParameterValue::Double(f64::INFINITY)),
            (
                "topic_arrival_tolerance",
                ParameterValue::Double(f64::INFINITY),
            ),
            ("replan_attempts", ParameterValue::Integer(-1)),
            ("replan_attempts", ParameterValue::Integer(101)),
            ("replan_attempts", ParameterValue::Double(2.0)),
            ("replan_delay", ParameterValue::Double(-0.1)),
            ("replan_delay", ParameterValue::Double(f64::NAN)),
            ("replan_delay", ParameterValue::Double(61.0)),
            ("execution_start_tolerance", ParameterValue::Double(0.0)),
            ("execution_start_tolerance", ParameterValue::Double(1.5)),
            (
                "execution_start_tolerance",
                ParameterValue::Double(f64::NAN),
            ),
        ] {
            let e = p.set(name, &bad).unwrap_err();
            assert_eq!(e.name, name);
        }
        assert_eq!(p.execution_mode, "topic");
        assert_eq!(
            (p.execution_duration_scaling, p.execution_goal_margin),
            (2.0, 0.0)
        );
        assert_eq!(p.topic_arrival_tolerance, 0.01);
        assert_eq!(p.service_settings().path_tolerance, 0.25);
        assert_eq!(
            (p.mesh_convex_parts, p.mesh_resolution),
            (12, 96),
            "refused mesh settings are not taken"
        );
        // No replanning unless asked for; the refused values above left the defaults.
        assert_eq!((p.replan_attempts, p.replan_delay), (0, 0.5));
        p.set("replan_attempts", &ParameterValue::Integer(3))
            .unwrap();
        p.set("replan_delay", &ParameterValue::Integer(0)).unwrap();
        assert_eq!((p.replan_attempts, p.replan_delay), (3, 0.0));
        // MoveIt's allowed_start_tolerance, 0.01 unless set.
        assert_eq!(p.execution_start_tolerance, 0.01);
        p.set("execution_start_tolerance", &ParameterValue::Double(0.05))
            .unwrap();
        assert_eq!(p.execution_start_tolerance, 0.05);
        assert_eq!(p.value("replan_attempts"), ParameterValue::Integer(3));
    }

    #[test]
    fn pointcloud_parameters_reach_the_service_settings() {
        let mut p = NodeParams::default();
        assert_eq!(p.service_settings().cloud, CloudSettings::default());
        p.set("pointcloud_resolution", &ParameterValue::Double(0.1))
            .unwrap();
        p.set("pointcloud_max_range", &ParameterValue::Integer(0))
            .unwrap();
        p.set("pointcloud_min_points", &ParameterValue::Integer(3))
            .unwrap();
        let c = p.service_settings().cloud;
        assert_eq!((c.resolution, c.max_range, c.min_points), (0.1, 0.0, 3));
        for (name, bad) in [
            ("pointcloud_resolution", ParameterValue::Double(0.0)),
            ("pointcloud_max_range", ParameterValue::Double(-1.0)),
            ("pointcloud_padding", ParameterValue::Double(f64::NAN)),
            ("pointcloud_min_points", ParameterValue::Integer(0)),
            ("pointcloud_max_boxes", ParameterValue::Double(10.0)),
        ] {
            assert_eq!(p.set(name, &bad).unwrap_err().name, name);
        }
        assert_eq!(p.service_settings().cloud, c);
        assert!(p.service_settings().cloud.validate().is_ok());
    }

    #[test]
    fn the_robot_description_topic_yields_to_the_parameters() {
        let mut p = NodeParams::default();
        assert!(p.takes_topic_description("<robot name='a'/>", false));
        assert!(!p.takes_topic_description("  ", false));
        p.robot_description = "<robot name='a'/>".into();
        // Set by a user: kept; sent by the topic before: a new text replaces it, the same not.
        assert!(!p.takes_topic_description("<robot name='b'/>", false));
        assert!(p.takes_topic_description("<robot name='b'/>", true));
        assert!(!p.takes_topic_description("<robot name='a'/>", true));
        p.robot_description.clear();
        p.urdf_path = "/some/robot.urdf".into();
        assert!(!p.takes_topic_description("<robot name='b'/>", true));
    }

    #[test]
    fn the_robot_parameters_are_the_tail_of_the_names() {
        assert_eq!(NodeParams::ROBOT.first(), Some(&"moveit_config"));
        assert_eq!(NodeParams::ROBOT.last(), Some(&"link_mesh_resolution"));
        assert_eq!(NodeParams::ROBOT.len(), 12);
    }

    /// `link_convex_parts` splits the robot's link meshes (here the MBM Panda's, where
    /// present) into more collision bodies; bad values are refused by name.
    #[test]
    fn link_convex_parts_split_the_robot_link_meshes() {
        let mut p = NodeParams::default();
        for (name, bad) in [
            ("link_convex_parts", ParameterValue::Integer(0)),
            ("link_convex_parts", ParameterValue::Integer(257)),
            ("link_convex_parts", ParameterValue::Double(4.0)),
            ("link_mesh_resolution", ParameterValue::Integer(7)),
            ("link_mesh_resolution", ParameterValue::Integer(300)),
        ] {
            assert_eq!(p.set(name, &bad).unwrap_err().name, name);
        }
        assert_eq!((p.link_convex_parts, p.link_mesh_resolution), (1, 64));
        let panda = concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/data/mbm/panda");
        if !Path::new(panda).exists() {
            eprintln!("skipped the Panda part: no MBM data at {panda}");
            return;
        }
        p.set(
            "urdf_path",
            &ParameterValue::String(format!("{panda}/panda.urdf")),
        )
        .unwrap();
        p.set(
            "srdf_path",
            &ParameterValue::String(format!("{panda}/panda.srdf")),
        )
        .unwrap();
        let (hull, _) = p.load_robot().expect("the Panda");
        p.set("link_convex_parts", &ParameterValue::Integer(8))
            .unwrap();
        p.set("link_mesh_resolution", &ParameterValue::Integer(32))
            .unwrap();
        let (split, _) = p.load_robot().expect("the Panda with split links");
        assert!(
            split.bodies.len() > hull.bodies.len(),
            "{} bodies against {}",
            split.bodies.len(),
            hull.bodies.len()
        );
    }

    #[test]
    fn collision_shapes_parameters_choose_the_robot_geometry() {
        let mut p = NodeParams::default();
        assert_eq!(p.service_settings().shapes, RobotShapes::Polytopes);
        let (robot, _) = p.load_robot().expect("bundled robot");
        assert!(robot.spherized.is_none());
        p.set("collision_shapes", &ParameterValue::String("fitted".into()))
            .unwrap();
        assert_eq!(p.service_settings().shapes, RobotShapes::Spheres);
        let (robot, _) = p.load_robot().expect("bundled robot with fitted spheres");
        let fitted = robot.spherized.map(|s| s.len()).unwrap_or(0);
        assert!(fitted >= robot.bodies.len(), "{fitted}");
        p.set(
            "collision_shapes",
            &ParameterValue::String("spheres".into()),
        )
        .unwrap();
        let e = p.load_robot().unwrap_err();
        assert!(e.contains("spherized_urdf_path"), "{e}");
        p.set(
            "spherized_urdf_path",
            &ParameterValue::String("/no/such.urdf".into()),
        )
        .unwrap();
        let e = p.load_robot().unwrap_err();
        assert!(e.contains("/no/such.urdf"), "{e}");
        for (name, bad) in [
            ("collision_shapes", ParameterValue::String("boxes".into())),
            ("sphere_tolerance", ParameterValue::Double(0.0)),
            ("max_spheres_per_body", ParameterValue::Integer(0)),
            ("max_spheres_per_body", ParameterValue::Integer(1000)),
        ] {
            assert_eq!(p.set(name, &bad).unwrap_err().name, name);
        }
        assert_eq!(p.collision_shapes, "spheres");
    }

    #[test]
    fn joint_limits_path_limits_the_robot_and_a_bad_file_is_named() {
        let mut p = NodeParams::default();
        assert_eq!((p.velocity_scaling, p.acceleration_scaling), (0.0, 0.0));
        let file = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/config/gmp_arm_joint_limits.yaml"
        );
        p.set("joint_limits_path", &ParameterValue::String(file.into()))
            .unwrap();
        let (robot, _) = p.load_robot().expect("bundled robot with its limits");
        let space = robot.default_group().space;
        assert_eq!(space.max_acceleration, vec![3.0, 3.0, 4.0, 6.0, 6.0, 6.0]);
        assert_eq!(robot.default_scaling.velocity, Some(0.5));
        p.set(
            "joint_limits_path",
            &ParameterValue::String("/no/such/limits.yaml".into()),
        )
        .unwrap();
        let e = p.load_robot().unwrap_err();
        assert!(
            e.contains("joint_limits_path") && e.contains("/no/such/limits.yaml"),
            "{e}"
        );
        for good in [0.0, 0.25, 1.0] {
            p.set("velocity_scaling", &ParameterValue::Double(good))
                .unwrap();
        }
        for bad in [-0.1, 1.5, f64::NAN] {
            let e = p
                .set("acceleration_scaling", &ParameterValue::Double(bad))
                .unwrap_err();
            assert_eq!(e.name, "acceleration_scaling");
        }
        assert_eq!(p.acceleration_scaling, 0.0);
    }

    #[test]
    fn moveit_config_gives_what_the_other_robot_parameters_do_not() {
        let root = env!("CARGO_MANIFEST_DIR");
        let dir = tempfile::tempdir().unwrap();
        let cfg = dir.path().join("gmp_arm_moveit_config");
        std::fs::create_dir_all(cfg.join("config")).unwrap();
        for (from, to) in [
            ("urdf/gmp_arm.urdf", "config/gmp_arm.urdf"),
            ("urdf/gmp_arm.srdf", "config/gmp_arm.srdf"),
            (
                "config/gmp_arm_joint_limits.yaml",
                "config/joint_limits.yaml",
            ),
        ] {
            std::fs::copy(format!("{root}/{from}"), cfg.join(to)).unwrap();
        }
        let mut p = NodeParams::default();
        let set = |p: &mut NodeParams, name: &str, v: String| {
            p.set(name, &ParameterValue::String(v)).unwrap();
        };
        set(&mut p, "moveit_config", cfg.display().to_string());
        let (robot, scene) = p.load_robot().expect("the MoveIt config's robot");
        assert!(robot.srdf.as_ref().is_some_and(|s| !s.groups.is_empty()));
        assert_eq!(robot.default_scaling.velocity, Some(0.5));
        assert!(
            scene.is_empty(),
            "another robot than the bundled one starts with no scene"
        );
        // No moveit_controllers.yaml: the single controller; with one, that file.
        assert_eq!(p.controllers_source(), Ok(None));
        std::fs::write(cfg.join("config/moveit_controllers.yaml"), "x: 1\n").unwrap();
        let from_cfg = cfg
            .join("config/moveit_controllers.yaml")
            .display()
            .to_string();
        assert_eq!(p.controllers_source(), Ok(Some(from_cfg)));
        set(&mut p, "controllers_file", "/mine.yaml".into());
        assert_eq!(p.controllers_source(), Ok(Some("/mine.yaml".into())));
        // joint_limits_path wins over the package's file; srdf_path over its SRDF.
        set(
            &mut p,
            "joint_limits_path",
            format!("{root}/config/gmp_arm_joint_limits.yaml"),
        );
        set(&mut p, "srdf_path", "/no/such.srdf".into());
        let e = p.load_robot().unwrap_err();
        assert!(e.contains("srdf_path '/no/such.srdf'"), "{e}");
        set(&mut p, "srdf_path", String::new());
        assert!(p.load_robot().is_ok());
        // Its ompl_planning.yaml comes with the robot; the parameter chooses whether it is
        // used; a bad one is named.
        let ompl = cfg.join("config/ompl_planning.yaml");
        std::fs::write(
            &ompl,
            "planner_configs:\n  R: {type: geometric::RRT}\narm:\n  default_planner_config: R\n",
        )
        .unwrap();
        let (robot, _) = p.load_robot().unwrap();
        assert_eq!(robot.ompl.default_config("arm").map(|(n, _)| n), Some("R"));
        assert!(p.service_settings().ompl_planning);
        p.set("ompl_planning", &ParameterValue::Bool(false))
            .unwrap();
        assert!(!p.service_settings().ompl_planning);
        std::fs::write(&ompl, "arm:\n  longest_valid_segment_fraction: 2\n").unwrap();
        let e = p.load_robot().unwrap_err();
        assert!(
            e.contains("ompl_planning.yaml") && e.contains("arm.longest_valid_segment_fraction"),
            "{e}"
        );
        std::fs::remove_file(&ompl).unwrap();
        // The robot_description topic yields to it.
        assert!(!p.takes_topic_description("<robot name='b'/>", false));
        // A package that is not there is named.
        set(&mut p, "moveit_config", "no_such_moveit_config".into());
        let e = p.load_robot().unwrap_err();
        assert!(
            e.starts_with("moveit_config:") && e.contains("no_such_moveit_config"),
            "{e}"
        );
        assert!(
            p.controllers_source().is_ok(),
            "controllers_file still wins"
        );
        set(&mut p, "controllers_file", String::new());
        assert!(p.controllers_source().is_err());
    }

    #[test]
    fn robot_description_semantic_wins_over_srdf_path() {
        let root = env!("CARGO_MANIFEST_DIR");
        let mut p = NodeParams::default();
        let set = |p: &mut NodeParams, name: &str, v: String| {
            p.set(name, &ParameterValue::String(v)).unwrap();
        };
        set(&mut p, "urdf_path", format!("{root}/urdf/gmp_arm.urdf"));
        let (robot, _) = p.load_robot().expect("URDF alone");
        assert!(robot.srdf.is_none());
        let srdf = std::fs::read_to_string(format!("{root}/urdf/gmp_arm.srdf")).unwrap();
        set(&mut p, "robot_description_semantic", srdf.clone());
        set(&mut p, "srdf_path", "/no/such.srdf".into());
        let (robot, _) = p.load_robot().expect("URDF file with SRDF text");
        assert!(robot.srdf.is_some_and(|s| !s.groups.is_empty()));
        let urdf = std::fs::read_to_string(format!("{root}/urdf/gmp_arm.urdf")).unwrap();
        set(&mut p, "robot_description", urdf);
        let (robot, _) = p.load_robot().expect("URDF text with SRDF text");
        assert!(robot.srdf.is_some_and(|s| !s.groups.is_empty()));
        set(
            &mut p,
            "robot_description_semantic",
            srdf.replace(
                "<robot",
                "<robot><group name=\"g\"><joint name=\"nope\"/></group",
            ),
        );
        let e = p.load_robot().unwrap_err();
        assert!(e.contains("robot_description_semantic"), "{e}");
        set(&mut p, "robot_description_semantic", String::new());
        let e = p.load_robot().unwrap_err();
        assert!(e.contains("/no/such.srdf"), "{e}");
    }

    #[test]
    fn declare_adopts_valid_overrides_and_replaces_bad_ones() {
        let mut map = r2r::indexmap::IndexMap::new();
        map.insert(
            "planner".to_owned(),
            Parameter::new(ParameterValue::String("prm".into())),
        );
        map.insert(
            "backend".to_owned(),
            Parameter::new(ParameterValue::String("gpu?".into())),
        );
        let mut p = NodeParams::default();
        let refused = p.declare(&mut map);
        assert_eq!(refused.len(), 1);
        assert_eq!(refused[0].name, "backend");
        assert_eq!(p.planner, "prm");
        assert_eq!(
            map.get("backend").map(|x| x.value.clone()),
            Some(ParameterValue::String("cpu".into()))
        );
        assert_eq!(map.len(), NodeParams::NAMES.len());
    }
}
