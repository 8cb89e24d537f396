//! The controllers that execute trajectories, as MoveIt's simple controller manager knows
//! them (`moveit_controllers.yaml`): a ros2_control `joint_trajectory_controller` per set of
//! joints, reached by its `FollowJointTrajectory` action (`<name>/<action_ns>`) or its command
//! topic (`<name>/joint_trajectory`), and gripper controllers (`GripperCommand`, e.g.
//! ros2_control's `gripper_action_controller`), which take one position: where the
//! trajectory ends.
//!
//! A trajectory is executed by the fewest controllers whose joints cover its joints
//! ([`ControllerSet::select`]); each gets its part ([`ControllerSet::split`]). A trajectory
//! controller gets the trajectory for its own joints; one that also drives joints the
//! trajectory does not name gets them held where they are (their current positions, zero
//! velocity), since `joint_trajectory_controller` refuses goals that leave joints out unless
//! `allow_partial_joints_goal` is set. A gripper controller gets, as MoveIt's gripper handle
//! sends it, the last point's position of its `command_joint` (default its first joint; with
//! `parallel: true` the sum of its two joints) and its `max_effort`.
//!
//! No ROS types here: the node (`ros::execute`) sends the parts.

use std::collections::BTreeSet;
use std::fmt;
use std::path::Path;

use serde_yaml::Value;

use crate::trajectory::{Trajectory, TrajectoryPoint};

/// The most controllers a file may list (selection looks at every subset).
pub const MAX_CONTROLLERS: usize = 16;

/// The key MoveIt's `moveit_controllers.yaml` keeps its controllers under.
pub const MOVEIT_MANAGER_KEY: &str = "moveit_simple_controller_manager";

/// What a controller takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ControllerKind {
    /// `control_msgs/FollowJointTrajectory` (ros2_control's `joint_trajectory_controller`).
    FollowJointTrajectory,
    /// `control_msgs/GripperCommand`: sent where a trajectory ends.
    GripperCommand,
}

impl ControllerKind {
    /// The name MoveIt's `type:` field uses.
    pub fn name(self) -> &'static str {
        match self {
            ControllerKind::FollowJointTrajectory => "FollowJointTrajectory",
            ControllerKind::GripperCommand => "GripperCommand",
        }
    }
}

/// One controller.
#[derive(Debug, Clone, PartialEq)]
pub struct ControllerSpec {
    /// Its name (that of the ros2_control controller, relative to the node's namespace
    /// unless it starts with `/`).
    pub name: String,
    /// The action it is reached by (`<name>/<action_ns>`).
    pub action: String,
    /// The command topic of a trajectory controller (`<name>/joint_trajectory`).
    pub topic: String,
    /// What it takes.
    pub kind: ControllerKind,
    /// The joints it drives, in its order; empty: whatever joints a trajectory names (the
    /// single controller of the `controller_action` parameter).
    pub joints: Vec<String>,
    /// MoveIt's `default: true`: preferred where several sets of controllers could run a
    /// trajectory.
    pub default: bool,
    /// A gripper's settings (`None` for a trajectory controller).
    pub gripper: Option<GripperSettings>,
}

/// How a gripper controller is commanded (MoveIt's gripper controller keys).
#[derive(Debug, Clone, PartialEq)]
pub struct GripperSettings {
    /// The joint whose position is sent (`command_joint`; default the first of `joints`).
    pub command_joint: String,
    /// `parallel: true`: the position sent is the sum of the controller's two joints'.
    pub parallel: bool,
    /// `max_effort` sent with the command (default 0).
    pub max_effort: f64,
    /// `allow_stalling: true`: a gripper that stalls (closed on an object) has succeeded.
    pub allow_stalling: bool,
}

/// The command a gripper controller is sent.
#[derive(Debug, Clone, PartialEq)]
pub struct GripperGoal {
    /// Position (m or rad, the gripper's).
    pub position: f64,
    /// Largest effort.
    pub max_effort: f64,
    /// Whether stalling counts as success.
    pub allow_stalling: bool,
}

/// A controller set that could not be read: where, and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ControllerError {
    /// The file (or other origin) read.
    pub origin: String,
    /// What is wrong, naming the key.
    pub message: String,
}

impl fmt::Display for ControllerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.origin, self.message)
    }
}

impl std::error::Error for ControllerError {}

/// What rcl would refuse in a ROS name (`None`: nothing): empty, characters other than
/// letters, digits, `_`, `/` and a leading `~`, a token starting with a digit, `//`, or a
/// trailing `/`.
pub fn ros_name_problem(value: &str) -> Option<String> {
    let body = value.strip_prefix('~').unwrap_or(value);
    let bad = value.is_empty()
        || body.ends_with('/')
        || body.contains("//")
        || !body
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '/')
        || body
            .split('/')
            .any(|t| t.starts_with(|c: char| c.is_ascii_digit()));
    bad.then(|| format!("'{value}' is not a valid ROS name"))
}

/// What one controller is sent.
#[derive(Debug, Clone, PartialEq)]
pub enum PartGoal {
    /// A trajectory controller's: the trajectory for its joints (the times of the whole
    /// trajectory).
    Trajectory(Trajectory),
    /// A gripper controller's command.
    Gripper(GripperGoal),
}

/// One controller's part of a trajectory.
#[derive(Debug, Clone, PartialEq)]
pub struct TrajectoryPart {
    /// Index of the controller in [`ControllerSet::controllers`].
    pub controller: usize,
    /// What it is sent.
    pub goal: PartGoal,
    /// Joints it drives that the trajectory does not name, held where they are.
    pub held: Vec<String>,
}

/// The controllers a node executes through.
#[derive(Debug, Clone, PartialEq)]
pub struct ControllerSet {
    controllers: Vec<ControllerSpec>,
}

impl ControllerSet {
    /// One trajectory controller reached by `action` (and command topic `topic`) that takes
    /// whatever joints a trajectory names: the node's `controller_action` parameter.
    pub fn single(action: &str, topic: &str) -> Self {
        ControllerSet {
            controllers: vec![ControllerSpec {
                name: action
                    .rsplit_once('/')
                    .map_or(action, |(n, _)| n)
                    .to_string(),
                action: action.to_string(),
                topic: topic.to_string(),
                kind: ControllerKind::FollowJointTrajectory,
                joints: Vec::new(),
                default: true,
                gripper: None,
            }],
        }
    }

    /// Reads a `moveit_controllers.yaml` file ([`Self::from_yaml`]); errors name the file.
    pub fn load(path: &Path) -> Result<Self, ControllerError> {
        let origin = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| ControllerError {
            origin: origin.clone(),
            message: format!("cannot read it: {e}"),
        })?;
        Self::from_yaml(&text, &origin)
    }

    /// The controllers of MoveIt's `moveit_controllers.yaml`: `controller_names` and one
    /// mapping per name with `type` (`FollowJointTrajectory` or `GripperCommand`),
    /// `action_ns`, `joints` and optionally `default`; under
    /// `moveit_simple_controller_manager:` as MoveIt writes it, or at the top level. Other
    /// keys (`moveit_controller_manager`, `trajectory_execution`) are ignored. Errors name
    /// `origin` and the key.
    pub fn from_yaml(text: &str, origin: &str) -> Result<Self, ControllerError> {
        let fail = |message: String| ControllerError {
            origin: origin.to_string(),
            message,
        };
        let root: Value = serde_yaml::from_str(text).map_err(|e| fail(format!("not YAML: {e}")))?;
        let manager = root.get(MOVEIT_MANAGER_KEY).unwrap_or(&root);
        let prefix = if root.get(MOVEIT_MANAGER_KEY).is_some() {
            format!("{MOVEIT_MANAGER_KEY}.")
        } else {
            String::new()
        };
        let names = manager.get("controller_names").ok_or_else(|| {
            fail(format!(
                "no '{prefix}controller_names' (MoveIt's moveit_controllers.yaml lists the \
                 controllers under '{MOVEIT_MANAGER_KEY}: controller_names:')"
            ))
        })?;
        let names = strings(names).ok_or_else(|| {
            fail(format!(
                "'{prefix}controller_names' must be a list of names"
            ))
        })?;
        if names.is_empty() {
            return Err(fail(format!("'{prefix}controller_names' is empty")));
        }
        let mut controllers = Vec::with_capacity(names.len());
        for (i, name) in names.iter().enumerate() {
            let key = format!("{prefix}{name}");
            if names[..i].contains(name) {
                return Err(fail(format!(
                    "'{prefix}controller_names' names '{name}' twice"
                )));
            }
            if let Some(problem) = ros_name_problem(name) {
                return Err(fail(format!("'{prefix}controller_names': {problem}")));
            }
            let entry = manager
                .get(name.as_str())
                .filter(|v| v.is_mapping())
                .ok_or_else(|| {
                    fail(format!(
                        "'{key}' is missing (the controller's type, action_ns and joints)"
                    ))
                })?;
            let text_of = |field: &str| -> Result<Option<String>, ControllerError> {
                match entry.get(field) {
                    None => Ok(None),
                    Some(Value::String(s)) => Ok(Some(s.clone())),
                    Some(_) => Err(fail(format!("'{key}.{field}' must be a string"))),
                }
            };
            let kind = match text_of("type")?.as_deref() {
                Some("FollowJointTrajectory") => ControllerKind::FollowJointTrajectory,
                Some("GripperCommand") => ControllerKind::GripperCommand,
                Some(other) => {
                    return Err(fail(format!(
                        "'{key}.type' is '{other}': FollowJointTrajectory or GripperCommand"
                    )))
                }
                None => {
                    return Err(fail(format!(
                        "'{key}.type' is missing: FollowJointTrajectory or GripperCommand"
                    )))
                }
            };
            let action_ns = text_of("action_ns")?
                .ok_or_else(|| fail(format!("'{key}.action_ns' is missing")))?;
            let action_ns = action_ns.trim_matches('/');
            let action = format!("{name}/{action_ns}");
            if let Some(problem) = ros_name_problem(&action) {
                return Err(fail(format!("'{key}.action_ns': {problem}")));
            }
            let joints = entry
                .get("joints")
                .ok_or_else(|| fail(format!("'{key}.joints' is missing")))?;
            let joints = strings(joints)
                .ok_or_else(|| fail(format!("'{key}.joints' must be a list of joint names")))?;
            if joints.is_empty() {
                return Err(fail(format!("'{key}.joints' is empty")));
            }
            if let Some(j) = joints
                .iter()
                .enumerate()
                .find_map(|(i, j)| joints[..i].contains(j).then_some(j))
            {
                return Err(fail(format!("'{key}.joints' names '{j}' twice")));
            }
            let flag = |field: &str| match entry.get(field) {
                None => Ok(false),
                Some(Value::Bool(b)) => Ok(*b),
                Some(_) => Err(fail(format!("'{key}.{field}' must be true or false"))),
            };
            let default = flag("default")?;
            let gripper = match kind {
                ControllerKind::FollowJointTrajectory => None,
                ControllerKind::GripperCommand => {
                    let parallel = flag("parallel")?;
                    if parallel && joints.len() != 2 {
                        return Err(fail(format!(
                            "'{key}.parallel' needs two joints, '{key}.joints' has {}",
                            joints.len()
                        )));
                    }
                    let command_joint =
                        text_of("command_joint")?.unwrap_or_else(|| joints[0].clone());
                    if !joints.contains(&command_joint) {
                        return Err(fail(format!(
                            "'{key}.command_joint' '{command_joint}' is not one of its joints"
                        )));
                    }
                    let max_effort = match entry.get("max_effort") {
                        None => 0.0,
                        Some(v) => v
                            .as_f64()
                            .filter(|x| x.is_finite() && *x >= 0.0)
                            .ok_or_else(|| {
                                fail(format!("'{key}.max_effort' must be a number >= 0"))
                            })?,
                    };
                    Some(GripperSettings {
                        command_joint,
                        parallel,
                        max_effort,
                        allow_stalling: flag("allow_stalling")?,
                    })
                }
            };
            controllers.push(ControllerSpec {
                name: name.clone(),
                topic: format!("{name}/joint_trajectory"),
                action,
                kind,
                joints,
                default,
                gripper,
            });
        }
        if controllers.len() > MAX_CONTROLLERS {
            return Err(fail(format!(
                "{} controllers: at most {MAX_CONTROLLERS}",
                controllers.len()
            )));
        }
        Ok(ControllerSet { controllers })
    }

    /// Every controller, in the file's order.
    pub fn controllers(&self) -> &[ControllerSpec] {
        &self.controllers
    }

    /// The joints of the controllers that `known` does not know (a robot's joint names):
    /// one line per controller, for a warning when the node starts.
    pub fn unknown_joints(&self, known: impl Fn(&str) -> bool) -> Vec<String> {
        self.controllers
            .iter()
            .filter_map(|c| {
                let unknown: Vec<&str> = c
                    .joints
                    .iter()
                    .map(String::as_str)
                    .filter(|j| !known(j))
                    .collect();
                (!unknown.is_empty()).then(|| {
                    format!(
                        "controller '{}' drives joints the robot does not have: {}",
                        c.name,
                        unknown.join(", ")
                    )
                })
            })
            .collect()
    }

    /// The controllers that run a trajectory of `joints`: the fewest whose joints cover
    /// them; among those, the fewest joints driven by two of them, then the most `default`
    /// ones, then the fewest joints not in the trajectory (held), then the file's order.
    /// Returns indices into [`Self::controllers`] in the file's order; the error names the
    /// joints no controller drives.
    pub fn select(&self, joints: &[String]) -> Result<Vec<usize>, String> {
        if joints.is_empty() {
            return Err("the trajectory names no joints".into());
        }
        let candidates: Vec<usize> = (0..self.controllers.len()).collect();
        if let Some(&any) = candidates
            .iter()
            .find(|&&i| self.controllers[i].joints.is_empty())
        {
            return Ok(vec![any]);
        }
        let wanted: BTreeSet<&str> = joints.iter().map(String::as_str).collect();
        let uncovered: Vec<String> = wanted
            .iter()
            .filter(|j| {
                !self
                    .controllers
                    .iter()
                    .any(|c| c.joints.iter().any(|n| n == *j))
            })
            .map(|j| format!("'{j}'"))
            .collect();
        if !uncovered.is_empty() {
            return Err(format!(
                "no controller drives joint {}",
                uncovered.join(", ")
            ));
        }
        // Every subset of the candidates, scored; the key's order is the preference.
        let mut best: Option<Preference> = None;
        for mask in 1u32..(1u32 << candidates.len()) {
            let chosen: Vec<usize> = (0..candidates.len())
                .filter(|b| mask & (1 << b) != 0)
                .map(|b| candidates[b])
                .collect();
            let mut driven: Vec<&str> = Vec::new();
            let mut twice = 0;
            for &i in &chosen {
                for j in &self.controllers[i].joints {
                    if driven.contains(&j.as_str()) {
                        twice += 1;
                    } else {
                        driven.push(j);
                    }
                }
            }
            if !wanted.iter().all(|j| driven.contains(j)) {
                continue;
            }
            let defaults = chosen
                .iter()
                .filter(|&&i| self.controllers[i].default)
                .count();
            let held = driven.iter().filter(|j| !wanted.contains(*j)).count();
            let key = (
                mask.count_ones(),
                twice,
                usize::MAX - defaults,
                held,
                chosen,
            );
            if best.as_ref().is_none_or(|k| key < *k) {
                best = Some(key);
            }
        }
        best.map(|(.., chosen)| chosen)
            .ok_or_else(|| "no set of controllers drives every joint".into())
    }

    /// Each selected controller's part of `trajectory` ([`Self::select`]). A trajectory
    /// controller's: its joints in its order, from the trajectory where it names them, else
    /// held at `hold(joint)` (zero velocity and acceleration where the trajectory gives
    /// those). A gripper controller's: its command joint's position at the last point (or
    /// `hold`'s), or the sum of its two joints' with `parallel`. A joint driven by two of them
    /// goes to both. The error names what cannot be sent: joints no controller drives, a held
    /// joint whose position `hold` does not know, or a malformed point.
    pub fn split(
        &self,
        trajectory: &Trajectory,
        hold: impl Fn(&str) -> Option<f64>,
    ) -> Result<Vec<TrajectoryPart>, String> {
        let n = trajectory.joint_names.len();
        for (k, p) in trajectory.points.iter().enumerate() {
            let bad = |len: usize| len != 0 && len != n;
            if p.positions.len() != n || bad(p.velocities.len()) || bad(p.accelerations.len()) {
                return Err(format!(
                    "point {k} has {} positions, {} velocities and {} accelerations for {n} \
                     joints",
                    p.positions.len(),
                    p.velocities.len(),
                    p.accelerations.len()
                ));
            }
        }
        let chosen = self.select(&trajectory.joint_names)?;
        let mut parts = Vec::with_capacity(chosen.len());
        for i in chosen {
            let spec = &self.controllers[i];
            if spec.joints.is_empty() {
                parts.push(TrajectoryPart {
                    controller: i,
                    goal: PartGoal::Trajectory(trajectory.clone()),
                    held: Vec::new(),
                });
                continue;
            }
            // For each of its joints: the trajectory's column, or the position it holds.
            let mut columns: Vec<Result<usize, f64>> = Vec::with_capacity(spec.joints.len());
            let mut held = Vec::new();
            for joint in &spec.joints {
                match trajectory.joint_names.iter().position(|j| j == joint) {
                    Some(c) => columns.push(Ok(c)),
                    None => {
                        let x = hold(joint).filter(|x| x.is_finite()).ok_or_else(|| {
                            format!(
                                "controller '{}' also drives joint '{joint}', which the \
                                 trajectory leaves out and whose position is unknown (no joint \
                                 state names it)",
                                spec.name
                            )
                        })?;
                        columns.push(Err(x));
                        held.push(joint.clone());
                    }
                }
            }
            if let Some(g) = &spec.gripper {
                let last = trajectory
                    .points
                    .last()
                    .ok_or_else(|| "the trajectory has no points".to_string())?;
                let at = |joint: &str| -> f64 {
                    let k = spec.joints.iter().position(|j| j == joint).unwrap_or(0);
                    match columns[k] {
                        Ok(c) => last.positions[c],
                        Err(x) => x,
                    }
                };
                let position = if g.parallel {
                    spec.joints.iter().map(|j| at(j)).sum()
                } else {
                    at(&g.command_joint)
                };
                parts.push(TrajectoryPart {
                    controller: i,
                    goal: PartGoal::Gripper(GripperGoal {
                        position,
                        max_effort: g.max_effort,
                        allow_stalling: g.allow_stalling,
                    }),
                    held,
                });
                continue;
            }
            let pick = |values: &[f64], still: f64| -> Vec<f64> {
                if values.is_empty() {
                    return Vec::new();
                }
                columns
                    .iter()
                    .map(|c| match *c {
                        Ok(c) => values[c],
                        Err(_) => still,
                    })
                    .collect()
            };
            let points = trajectory
                .points
                .iter()
                .map(|p| TrajectoryPoint {
                    positions: columns
                        .iter()
                        .map(|c| match *c {
                            Ok(c) => p.positions[c],
                            Err(x) => x,
                        })
                        .collect(),
                    velocities: pick(&p.velocities, 0.0),
                    accelerations: pick(&p.accelerations, 0.0),
                    time_from_start: p.time_from_start,
                })
                .collect();
            parts.push(TrajectoryPart {
                controller: i,
                goal: PartGoal::Trajectory(Trajectory {
                    joint_names: spec.joints.clone(),
                    points,
                }),
                held,
            });
        }
        Ok(parts)
    }
}

/// How a set of controllers ranks (smaller is better): controllers, joints driven twice,
/// `usize::MAX` less the defaults, held joints, then the controllers' indices.
type Preference = (u32, usize, usize, usize, Vec<usize>);

/// The strings of a YAML sequence; `None` when it is not a sequence of strings.
fn strings(value: &Value) -> Option<Vec<String>> {
    value
        .as_sequence()?
        .iter()
        .map(|v| v.as_str().map(str::to_string))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const FETCH: &str = r#"
moveit_controller_manager: moveit_simple_controller_manager/MoveItSimpleControllerManager
moveit_simple_controller_manager:
  controller_names:
    - arm_controller
    - arm_with_torso_controller
    - torso_controller
    - gripper_controller
  arm_controller:
    type: FollowJointTrajectory
    action_ns: follow_joint_trajectory
    default: true
    joints: [shoulder_pan_joint, shoulder_lift_joint, upperarm_roll_joint, elbow_flex_joint,
             forearm_roll_joint, wrist_flex_joint, wrist_roll_joint]
  arm_with_torso_controller:
    type: FollowJointTrajectory
    action_ns: follow_joint_trajectory
    joints: [torso_lift_joint, shoulder_pan_joint, shoulder_lift_joint, upperarm_roll_joint,
             elbow_flex_joint, forearm_roll_joint, wrist_flex_joint, wrist_roll_joint]
  torso_controller:
    type: FollowJointTrajectory
    action_ns: /follow_joint_trajectory/
    default: true
    joints: [torso_lift_joint]
  gripper_controller:
    type: GripperCommand
    action_ns: gripper_action
    default: true
    joints: [l_gripper_finger_joint, r_gripper_finger_joint]
"#;

    fn traj_of(part: &TrajectoryPart) -> &Trajectory {
        match &part.goal {
            PartGoal::Trajectory(t) => t,
            PartGoal::Gripper(g) => panic!("a gripper part: {g:?}"),
        }
    }

    fn names(s: &[&str]) -> Vec<String> {
        s.iter().map(|s| s.to_string()).collect()
    }

    fn arm() -> Vec<String> {
        names(&[
            "shoulder_pan_joint",
            "shoulder_lift_joint",
            "upperarm_roll_joint",
            "elbow_flex_joint",
            "forearm_roll_joint",
            "wrist_flex_joint",
            "wrist_roll_joint",
        ])
    }

    fn fetch() -> ControllerSet {
        ControllerSet::from_yaml(FETCH, "fetch.yaml").unwrap()
    }

    fn line(joints: &[String], velocities: bool) -> Trajectory {
        let n = joints.len();
        let point = |k: usize| TrajectoryPoint {
            positions: (0..n).map(|j| (k * 10 + j) as f64).collect(),
            velocities: if velocities { vec![0.5; n] } else { Vec::new() },
            accelerations: Vec::new(),
            time_from_start: k as f64,
        };
        Trajectory {
            joint_names: joints.to_vec(),
            points: (0..3).map(point).collect(),
        }
    }

    #[test]
    fn moveit_files_are_read_with_actions_topics_and_kinds() {
        let set = fetch();
        let c = set.controllers();
        assert_eq!(c.len(), 4);
        assert_eq!(c[0].action, "arm_controller/follow_joint_trajectory");
        assert_eq!(c[0].topic, "arm_controller/joint_trajectory");
        assert_eq!(c[2].action, "torso_controller/follow_joint_trajectory");
        assert_eq!(c[3].kind, ControllerKind::GripperCommand);
        assert_eq!(c[3].action, "gripper_controller/gripper_action");
        assert!(c[0].default && !c[1].default);
        assert_eq!(c[1].joints.len(), 8);
        // The same without MoveIt's outer key.
        let top = FETCH
            .lines()
            .filter(|l| !l.starts_with("moveit"))
            .map(|l| l.strip_prefix("  ").unwrap_or(l))
            .collect::<Vec<_>>()
            .join("\n");
        assert_eq!(ControllerSet::from_yaml(&top, "t").unwrap(), set);
    }

    #[test]
    fn bad_files_are_refused_naming_the_file_and_key() {
        let cases: [(&str, &str); 9] = [
            ("a: [", "not YAML"),
            ("other: 1", "controller_names"),
            ("controller_names: []", "is empty"),
            ("controller_names: [a]", "'a' is missing"),
            (
                "controller_names: [a]\na: {type: Velocity, action_ns: x, joints: [j]}",
                "'a.type' is 'Velocity'",
            ),
            (
                "controller_names: [a]\na: {type: FollowJointTrajectory, joints: [j]}",
                "'a.action_ns' is missing",
            ),
            (
                "controller_names: [a]\na: {type: FollowJointTrajectory, action_ns: x, joints: [j, j]}",
                "names 'j' twice",
            ),
            (
                "controller_names: [a, a]\na: {type: FollowJointTrajectory, action_ns: x, joints: [j]}",
                "names 'a' twice",
            ),
            (
                "controller_names: [2a]\n2a: {type: FollowJointTrajectory, action_ns: x, joints: [j]}",
                "not a valid ROS name",
            ),
        ];
        for (text, expected) in cases {
            let e = ControllerSet::from_yaml(text, "c.yaml").unwrap_err();
            assert_eq!(e.origin, "c.yaml");
            assert!(e.to_string().contains(expected), "{text}: {e}");
        }
        let e = ControllerSet::load(Path::new("/nonexistent/c.yaml")).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("/nonexistent/c.yaml: cannot read it"),
            "{e}"
        );
    }

    #[test]
    fn the_fewest_controllers_preferring_defaults_and_fewest_held_joints() {
        let set = fetch();
        // The arm alone: arm_controller (default, nothing held), not the torso one.
        assert_eq!(set.select(&arm()).unwrap(), vec![0]);
        // Torso and arm: one controller (arm_with_torso) beats two defaults.
        let mut with_torso = arm();
        with_torso.push("torso_lift_joint".into());
        assert_eq!(set.select(&with_torso).unwrap(), vec![1]);
        // The torso alone: its own controller.
        assert_eq!(set.select(&names(&["torso_lift_joint"])).unwrap(), vec![2]);
        // One joint of the arm: arm_controller, the rest held.
        assert_eq!(set.select(&names(&["wrist_roll_joint"])).unwrap(), vec![0]);
        // A gripper joint with an arm joint: the arm's controller and the gripper's.
        let both = names(&["l_gripper_finger_joint", "wrist_roll_joint"]);
        assert_eq!(set.select(&both).unwrap(), vec![0, 3]);
        let e = set.select(&names(&["head_pan_joint"])).unwrap_err();
        assert!(
            e.contains("no controller drives joint 'head_pan_joint'"),
            "{e}"
        );
        assert!(set.select(&[]).is_err());
    }

    #[test]
    fn two_disjoint_controllers_share_a_trajectory() {
        let text = "controller_names: [left, right]\n\
            left: {type: FollowJointTrajectory, action_ns: follow, joints: [a, b]}\n\
            right: {type: FollowJointTrajectory, action_ns: follow, joints: [c]}";
        let set = ControllerSet::from_yaml(text, "t").unwrap();
        let traj = line(&names(&["c", "a", "b"]), true);
        let parts = set.split(&traj, |_| None).unwrap();
        assert_eq!(parts.len(), 2);
        assert_eq!(parts[0].controller, 0);
        assert_eq!(traj_of(&parts[0]).joint_names, names(&["a", "b"]));
        assert_eq!(traj_of(&parts[1]).joint_names, names(&["c"]));
        for (k, p) in traj.points.iter().enumerate() {
            assert_eq!(
                traj_of(&parts[0]).points[k].positions,
                vec![p.positions[1], p.positions[2]]
            );
            assert_eq!(traj_of(&parts[1]).points[k].positions, vec![p.positions[0]]);
            assert_eq!(
                traj_of(&parts[1]).points[k].time_from_start,
                p.time_from_start
            );
            assert_eq!(traj_of(&parts[1]).points[k].velocities, vec![0.5]);
            assert!(traj_of(&parts[1]).points[k].accelerations.is_empty());
        }
        assert!(parts.iter().all(|p| p.held.is_empty()));
    }

    #[test]
    fn joints_a_controller_drives_beyond_the_trajectory_are_held() {
        let set = fetch();
        let traj = line(&names(&["wrist_roll_joint", "shoulder_pan_joint"]), true);
        let hold = |j: &str| (j != "elbow_flex_joint").then_some(0.25);
        let e = set.split(&traj, hold).unwrap_err();
        assert!(
            e.contains("'arm_controller' also drives joint 'elbow_flex_joint'"),
            "{e}"
        );
        let parts = set.split(&traj, |_| Some(0.25)).unwrap();
        assert_eq!(parts.len(), 1);
        let part = &parts[0];
        assert_eq!(traj_of(part).joint_names, arm());
        assert_eq!(part.held.len(), 5);
        for (k, p) in traj_of(part).points.iter().enumerate() {
            assert_eq!(p.positions[0], traj.points[k].positions[1]);
            assert_eq!(p.positions[6], traj.points[k].positions[0]);
            assert_eq!(&p.positions[1..6], &[0.25; 5]);
            assert_eq!(p.velocities, vec![0.5, 0.0, 0.0, 0.0, 0.0, 0.0, 0.5]);
        }
        let mut bad = traj.clone();
        bad.points[1].positions.pop();
        assert!(set
            .split(&bad, |_| Some(0.0))
            .unwrap_err()
            .contains("point 1"));
    }

    #[test]
    fn the_single_controller_takes_any_joints_unchanged() {
        let set = ControllerSet::single("/arm/follow_joint_trajectory", "arm/joint_trajectory");
        assert_eq!(set.controllers()[0].name, "/arm");
        let traj = line(&names(&["x", "y"]), false);
        let parts = set.split(&traj, |_| None).unwrap();
        assert_eq!(parts.len(), 1);
        assert_eq!(traj_of(&parts[0]), &traj);
        assert!(set.unknown_joints(|_| false).is_empty());
        assert_eq!(fetch().unknown_joints(|j| j != "torso_lift_joint").len(), 2);
    }

    #[test]
    fn a_gripper_controller_is_sent_where_the_trajectory_ends() {
        let text = "controller_names: [arm, hand]\n\
            arm: {type: FollowJointTrajectory, action_ns: follow, joints: [a, b]}\n\
            hand: {type: GripperCommand, action_ns: gripper_cmd, joints: [f1, f2], \
                   parallel: true, max_effort: 20, allow_stalling: true}";
        let set = ControllerSet::from_yaml(text, "t").unwrap();
        let spec = &set.controllers()[1];
        let g = spec.gripper.as_ref().unwrap();
        assert_eq!(
            (
                g.command_joint.as_str(),
                g.parallel,
                g.max_effort,
                g.allow_stalling
            ),
            ("f1", true, 20.0, true)
        );
        // The hand alone: its command is the sum of the two fingers at the last point.
        let fingers = line(&names(&["f1", "f2"]), false);
        let parts = set.split(&fingers, |_| None).unwrap();
        assert_eq!(parts.len(), 1);
        let last = &fingers.points[2].positions;
        assert_eq!(
            parts[0].goal,
            PartGoal::Gripper(GripperGoal {
                position: last[0] + last[1],
                max_effort: 20.0,
                allow_stalling: true
            })
        );
        // Arm and one finger: both controllers, the other finger held where it is.
        let mixed = line(&names(&["a", "b", "f1"]), true);
        let parts = set.split(&mixed, |j| (j == "f2").then_some(0.5)).unwrap();
        assert_eq!(
            parts.iter().map(|p| p.controller).collect::<Vec<_>>(),
            [0, 1]
        );
        assert_eq!(parts[1].held, ["f2"]);
        match &parts[1].goal {
            PartGoal::Gripper(g) => assert_eq!(g.position, mixed.points[2].positions[2] + 0.5),
            other => panic!("{other:?}"),
        }
        // Without a known position for the held finger, nothing is split.
        let e = set.split(&mixed, |_| None).unwrap_err();
        assert!(e.contains("'hand' also drives joint 'f2'"), "{e}");
        // command_joint picks the joint sent; defaults are 0 effort, no stalling.
        let one = "controller_names: [hand]\n\
            hand: {type: GripperCommand, action_ns: g, joints: [f1, f2], command_joint: f2}";
        let set = ControllerSet::from_yaml(one, "t").unwrap();
        let parts = set.split(&fingers, |_| None).unwrap();
        match &parts[0].goal {
            PartGoal::Gripper(g) => {
                assert_eq!(
                    (g.position, g.max_effort, g.allow_stalling),
                    (last[1], 0.0, false)
                )
            }
            other => panic!("{other:?}"),
        }
        for (bad, expected) in [
            ("parallel: true, joints: [f1]", "needs two joints"),
            (
                "command_joint: x, joints: [f1]",
                "'x' is not one of its joints",
            ),
            ("max_effort: -1, joints: [f1]", "max_effort"),
            ("allow_stalling: 1, joints: [f1]", "allow_stalling"),
        ] {
            let text = format!(
                "controller_names: [hand]\nhand: {{type: GripperCommand, action_ns: g, {bad}}}"
            );
            let e = ControllerSet::from_yaml(&text, "t").unwrap_err();
            assert!(e.to_string().contains(expected), "{bad}: {e}");
        }
    }

    #[test]
    fn ros_names() {
        for good in ["a", "/a/b_1", "~/x"] {
            assert!(ros_name_problem(good).is_none(), "{good}");
        }
        for bad in ["", "a//b", "arm/", "2arm/x", "arm controller", "arm/x-y"] {
            assert!(ros_name_problem(bad).is_some(), "{bad}");
        }
    }
}
