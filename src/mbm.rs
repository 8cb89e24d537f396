//! The MotionBenchMaker problem set (Panda, UR5, Fetch): locating the data, unpacking the
//! problem archives once into a cache, and reading MoveIt motion-plan requests.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::robot::{LoadOptions, PlanningGroup, RobotError, RobotModel, LIMIT_TOLERANCE};
use crate::scene::Scene;

/// The seven MBM scenes, in the benchmark's order.
pub const SCENES: [&str; 7] = [
    "table_pick",
    "table_under_pick",
    "box",
    "bookshelf_small",
    "bookshelf_tall",
    "bookshelf_thin",
    "cage",
];
/// The three MBM robots.
pub const ROBOTS: [&str; 3] = ["panda", "ur5", "fetch"];

/// Errors of the MBM loader.
#[derive(Debug, thiserror::Error)]
pub enum MbmError {
    /// The data folder was not found.
    #[error("MotionBenchMaker data not found (looked in: {0}); set GMP_DATA to the folder holding panda/, ur5/, fetch/")]
    NotFound(String),
    /// A file could not be read or unpacked.
    #[error("{path}: {message}")]
    Io {
        /// The file.
        path: String,
        /// What went wrong.
        message: String,
    },
    /// A request file is malformed.
    #[error("request {path}: {message}")]
    Request {
        /// The file.
        path: String,
        /// What went wrong.
        message: String,
    },
    /// The robot failed to load.
    #[error(transparent)]
    Robot(#[from] RobotError),
    /// A scene failed to load.
    #[error("scene {path}: {message}")]
    Scene {
        /// The file.
        path: String,
        /// What went wrong.
        message: String,
    },
}

/// Finds the MBM data: `$GMP_DATA` (the `mbm` folder itself or a folder containing `mbm/`),
/// then `../shared/data/mbm` next to the crate, then `../shared/data/mbm` from the working folder.
pub fn data_dir() -> Result<PathBuf, MbmError> {
    let mut tried = Vec::new();
    let mut candidates = Vec::new();
    if let Ok(d) = std::env::var("GMP_DATA") {
        candidates.push(PathBuf::from(&d));
        candidates.push(PathBuf::from(&d).join("mbm"));
    }
    candidates.push(Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/data/mbm"));
    candidates.push(PathBuf::from("../shared/data/mbm"));
    for c in candidates {
        if c.join("panda").join("panda.urdf").is_file() {
            return Ok(c);
        }
        tried.push(c.display().to_string());
    }
    Err(MbmError::NotFound(tried.join(", ")))
}

/// [`data_dir`] for the unit tests: `None`, with a SKIP line on stderr, when the data is absent.
#[cfg(test)]
pub(crate) fn data_dir_or_skip() -> Option<PathBuf> {
    match data_dir() {
        Ok(d) => Some(d),
        Err(e) => {
            eprintln!("SKIP: {e} (set GMP_DATA)");
            None
        }
    }
}

/// A planning problem: scene, start state and joint-space goal.
#[derive(Clone, Debug)]
pub struct Problem {
    /// Scene name (e.g. `bookshelf_small`).
    pub scene_name: String,
    /// Problem number within the scene (1-based as in the file names).
    pub index: usize,
    /// Obstacles.
    pub scene: Scene,
    /// Start state: every joint the request names.
    pub start_state: BTreeMap<String, f64>,
    /// Planning group named by the request.
    pub group_name: String,
    /// Goal joint values (name, value) in request order.
    pub goal: Vec<(String, f64)>,
}

/// An MBM robot with its planning group.
pub struct MbmRobot {
    /// Robot name.
    pub name: String,
    /// The loaded model.
    pub model: RobotModel,
    /// The planning group used by the problems.
    pub group: PlanningGroup,
}

/// Loads an MBM robot (URDF, SRDF and the spherized URDF for the sphere model).
pub fn load_robot(data: &Path, robot: &str) -> Result<MbmRobot, MbmError> {
    let dir = data.join(robot);
    let opts = LoadOptions {
        spherized_urdf: Some(dir.join(format!("{robot}_spherized.urdf"))),
        ..Default::default()
    };
    let model = RobotModel::from_urdf_file(
        &dir.join(format!("{robot}.urdf")),
        Some(&dir.join(format!("{robot}.srdf"))),
        &opts,
    )?;
    let group_name = match robot {
        "panda" => "panda_arm",
        "ur5" => "manipulator",
        _ => "arm_with_torso",
    };
    let group = model.group(group_name)?;
    Ok(MbmRobot {
        name: robot.to_string(),
        model,
        group,
    })
}

/// Unpacks `<robot>/problems.tar.bz2` once into a cache folder and returns the folder holding
/// `problems/`. The cache is `$GMP_CACHE` or `target/mbm-cache` next to the crate.
pub fn unpacked_problems(data: &Path, robot: &str) -> Result<PathBuf, MbmError> {
    let cache_root = std::env::var("GMP_CACHE")
        .map(PathBuf::from)
        .unwrap_or_else(|_| Path::new(env!("CARGO_MANIFEST_DIR")).join("target/mbm-cache"));
    let dest = cache_root.join(robot);
    let marker = dest.join(".complete");
    if marker.is_file() {
        return Ok(dest);
    }
    // One unpacking at a time per process: concurrent tests must not replace a cache folder that
    // another thread is already reading.
    static UNPACK_LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _guard = UNPACK_LOCK.lock().unwrap_or_else(|p| p.into_inner());
    if marker.is_file() {
        return Ok(dest);
    }
    let archive = data.join(robot).join("problems.tar.bz2");
    // Unique per process and call: tests in one process may unpack the same robot concurrently.
    static UNPACKS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let call = UNPACKS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let tmp = cache_root.join(format!("{robot}.partial-{}-{call}", std::process::id()));
    let io = |p: &Path, e: std::io::Error| MbmError::Io {
        path: p.display().to_string(),
        message: e.to_string(),
    };
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir_all(&tmp).map_err(|e| io(&tmp, e))?;
    let status = std::process::Command::new("tar")
        .arg("-xjf")
        .arg(&archive)
        .arg("-C")
        .arg(&tmp)
        .status()
        .map_err(|e| MbmError::Io {
            path: archive.display().to_string(),
            message: format!("cannot run tar: {e}"),
        })?;
    if !status.success() {
        return Err(MbmError::Io {
            path: archive.display().to_string(),
            message: format!("tar exited with {status}"),
        });
    }
    std::fs::write(tmp.join(".complete"), b"ok").map_err(|e| io(&tmp, e))?;
    // Another process may have put its copy in place meanwhile, and may be reading it: a
    // complete cache folder is never removed or replaced. Only a folder without the marker
    // (left by an interrupted older unpacking) is moved aside first.
    if !marker.is_file() && dest.exists() {
        let stale = cache_root.join(format!("{robot}.stale-{}-{call}", std::process::id()));
        if std::fs::rename(&dest, &stale).is_ok() {
            let _ = std::fs::remove_dir_all(&stale);
        }
    }
    let placed = std::fs::rename(&tmp, &dest).is_ok();
    let _ = std::fs::remove_dir_all(&tmp);
    if !placed && !marker.is_file() {
        return Err(MbmError::Io {
            path: dest.display().to_string(),
            message: "could not move the unpacked problems into place".into(),
        });
    }
    Ok(dest)
}

/// The parts of a MoveIt `MotionPlanRequest` the benchmark uses.
#[derive(Clone, Debug, PartialEq)]
pub struct Request {
    /// Start joint state (every joint named).
    pub start: BTreeMap<String, f64>,
    /// Planning group name.
    pub group: String,
    /// Joint-space goal (name, value) in request order; empty for a pose goal.
    pub goal: Vec<(String, f64)>,
    /// The pose goal of the first goal constraint's position (and orientation) constraint,
    /// when it has no joint constraints and is not a goal region (`goal_region`).
    pub pose_goal: Option<RequestPose>,
    /// The first goal constraint as a goal region, when it has no joint constraints and its
    /// position and orientation constraints are more than one pose with tolerances: a BOX
    /// region, or only orientation constraints (every constraint as
    /// [`crate::robot::constraint::ConstraintSpec::from_moveit_yaml`] reads it). A SPHERE
    /// region stays a pose goal (its radius the position tolerance). Empty otherwise.
    pub goal_region: crate::robot::constraint::ConstraintSpec,
    /// The request's `path_constraints` (empty when it has none).
    pub path_constraints: crate::robot::constraint::ConstraintSpec,
    /// The joint constraints of the further goal constraints (`goal_constraints[1..]`, any of
    /// which MoveIt may satisfy instead of the first): a goal set with `goal`. Each entry in
    /// request order; empty when there is one goal constraint, when the goal is a pose goal,
    /// and for further constraints without joint constraints (not used).
    pub other_goals: Vec<Vec<(String, f64)>>,
    /// The pose goals of the further goal constraints beside a pose goal (`pose_goal`), each
    /// with its index in `goal_constraints`: each one's first position constraint with its
    /// first orientation constraint, in request order; empty beside a joint goal (further
    /// constraints without a position constraint are not used).
    pub other_pose_goals: Vec<(usize, RequestPose)>,
}

/// A pose goal read from a MoveIt request's position and orientation constraints.
#[derive(Clone, Debug, PartialEq)]
pub struct RequestPose {
    /// The constrained link.
    pub link: String,
    /// The frame of the constraint (`header.frame_id`; may be empty).
    pub frame: String,
    /// Centre of the constraint region.
    pub position: [f64; 3],
    /// The largest distance from the centre the region allows in every direction: a sphere's
    /// radius, half the smallest side of a box (m).
    pub position_tolerance: f64,
    /// The orientation constraint's quaternion `[x, y, z, w]`, if there is one.
    pub orientation: Option<[f64; 4]>,
    /// The smallest of its three axis tolerances (rad): a rotation by at most that angle stays
    /// within each of them.
    pub orientation_tolerance: Option<f64>,
}

/// Reads `v` as three numbers `{x, y, z}` (missing entries 0).
fn xyz(v: &serde_yaml::Value) -> [f64; 3] {
    ["x", "y", "z"].map(|k| v[k].as_f64().unwrap_or(0.0))
}

/// The pose goal of a MoveIt goal constraint `c` (its first position constraint and first
/// orientation constraint), `Ok(None)` when it has no position constraint.
fn pose_constraint(c: &serde_yaml::Value) -> Result<Option<RequestPose>, String> {
    let Some(pc) = c["position_constraints"]
        .as_sequence()
        .and_then(|s| s.first())
    else {
        return Ok(None);
    };
    let link = pc["link_name"]
        .as_str()
        .ok_or("position constraint without link_name")?
        .to_string();
    if xyz(&pc["target_point_offset"]) != [0.0; 3] {
        return Err(
            "position constraint: a target_point_offset other than 0 is not supported".into(),
        );
    }
    let region = &pc["constraint_region"];
    let centre = region["primitive_poses"]
        .as_sequence()
        .and_then(|s| s.first())
        .ok_or("position constraint without constraint_region.primitive_poses")?;
    let primitive = region["primitives"]
        .as_sequence()
        .and_then(|s| s.first())
        .ok_or("position constraint without constraint_region.primitives")?;
    let dims: Vec<f64> = primitive["dimensions"]
        .as_sequence()
        .map(|d| d.iter().filter_map(|x| x.as_f64()).collect())
        .unwrap_or_default();
    // shape_msgs/SolidPrimitive: BOX = 1 (sides), SPHERE = 2 (radius).
    let position_tolerance =
        match (primitive["type"].as_i64(), dims.as_slice()) {
            (Some(1), [x, y, z]) => 0.5 * x.min(*y).min(*z),
            (Some(2), [r, ..]) => *r,
            _ => return Err(
                "position constraint: the region must be a BOX (type 1, three sides) or a SPHERE \
                 (type 2, a radius)"
                    .into(),
            ),
        };
    let frame = pc["header"]["frame_id"].as_str().unwrap_or("").to_string();
    let (mut orientation, mut orientation_tolerance) = (None, None);
    if let Some(oc) = c["orientation_constraints"]
        .as_sequence()
        .and_then(|s| s.first())
    {
        if oc["link_name"].as_str() != Some(link.as_str()) {
            return Err(format!(
                "orientation constraint: link_name must be the position constraint's '{link}'"
            ));
        }
        let q = &oc["orientation"];
        orientation = Some(["x", "y", "z", "w"].map(|k| q[k].as_f64().unwrap_or(0.0)));
        let tol = [
            "absolute_x_axis_tolerance",
            "absolute_y_axis_tolerance",
            "absolute_z_axis_tolerance",
        ]
        .map(|k| oc[k].as_f64().unwrap_or(f64::NAN));
        orientation_tolerance = Some(tol.iter().copied().fold(f64::INFINITY, f64::min));
    }
    Ok(Some(RequestPose {
        link,
        frame,
        position: xyz(&centre["position"]),
        position_tolerance,
        orientation,
        orientation_tolerance,
    }))
}

/// Reads a MoveIt `MotionPlanRequest` YAML: start joint state, group and joint goal.
pub fn read_request(path: &Path) -> Result<Request, MbmError> {
    let err = |m: String| MbmError::Request {
        path: path.display().to_string(),
        message: m,
    };
    let text = std::fs::read_to_string(path).map_err(|e| err(e.to_string()))?;
    let doc: serde_yaml::Value = serde_yaml::from_str(&text).map_err(|e| err(e.to_string()))?;
    let js = &doc["start_state"]["joint_state"];
    let names = js["name"]
        .as_sequence()
        .ok_or_else(|| err("start_state.joint_state.name missing".into()))?;
    let pos = js["position"]
        .as_sequence()
        .ok_or_else(|| err("start_state.joint_state.position missing".into()))?;
    if names.len() != pos.len() {
        return Err(err(format!(
            "start_state has {} names but {} positions",
            names.len(),
            pos.len()
        )));
    }
    let mut start = BTreeMap::new();
    for (n, p) in names.iter().zip(pos) {
        let n = n
            .as_str()
            .ok_or_else(|| err("joint name is not a string".into()))?;
        let p = p
            .as_f64()
            .ok_or_else(|| err(format!("joint '{n}' position is not a number")))?;
        start.insert(n.to_string(), p);
    }
    let group = doc["group_name"].as_str().unwrap_or("").to_string();
    let constraint = &doc["goal_constraints"][0];
    let no_joints = constraint["joint_constraints"]
        .as_sequence()
        .is_none_or(|j| j.is_empty());
    // A region the constraints readers take whole (a BOX, or orientations alone) is the goal
    // as given; a SPHERE region is read as a pose goal below.
    let goal_region = no_joints
        .then(|| crate::robot::constraint::ConstraintSpec::from_moveit_yaml(constraint).ok())
        .flatten()
        .filter(|r| !r.is_empty())
        .unwrap_or_default();
    if !goal_region.is_empty() {
        return Ok(Request {
            start,
            group,
            goal: Vec::new(),
            pose_goal: None,
            goal_region,
            path_constraints: path_constraints_of(&doc).map_err(err)?,
            other_goals: Vec::new(),
            other_pose_goals: Vec::new(),
        });
    }
    let pose_goal =
        pose_constraint(constraint).map_err(|m| err(format!("goal_constraints[0]: {m}")))?;
    let jc = match constraint["joint_constraints"].as_sequence() {
        Some(jc) => jc.as_slice(),
        None if pose_goal.is_some() => &[],
        None => {
            return Err(err(
                "goal_constraints[0] has neither joint_constraints nor position_constraints".into(),
            ))
        }
    };
    let joint_goal =
        |jc: &[serde_yaml::Value], at: usize| -> Result<Vec<(String, f64)>, MbmError> {
            let mut goal = Vec::new();
            for c in jc {
                let n = c["joint_name"].as_str().ok_or_else(|| {
                    err(format!(
                        "goal_constraints[{at}]: joint_constraints entry without joint_name"
                    ))
                })?;
                let p = c["position"].as_f64().ok_or_else(|| {
                    err(format!(
                        "goal_constraints[{at}]: joint constraint '{n}' without position"
                    ))
                })?;
                goal.push((n.to_string(), p));
            }
            Ok(goal)
        };
    let goal = joint_goal(jc, 0)?;
    // Joint constraints, when given, are the goal; a pose constraint beside them is not used.
    let pose_goal = pose_goal.filter(|_| goal.is_empty());
    // Further goal constraints: more joint goals of a goal set beside a joint goal, more pose
    // goals beside a pose goal (the others are not used).
    let mut other_goals = Vec::new();
    let mut other_pose_goals = Vec::new();
    let further = doc["goal_constraints"]
        .as_sequence()
        .map_or(&[][..], |c| c.as_slice());
    for (at, c) in further.iter().enumerate().skip(1) {
        if let Some(jc) = c["joint_constraints"].as_sequence() {
            if !goal.is_empty() && !jc.is_empty() {
                other_goals.push(joint_goal(jc, at)?);
            }
        }
        if pose_goal.is_some() {
            let pose =
                pose_constraint(c).map_err(|m| err(format!("goal_constraints[{at}]: {m}")))?;
            other_pose_goals.extend(pose.map(|p| (at, p)));
        }
    }
    let path_constraints = path_constraints_of(&doc).map_err(err)?;
    Ok(Request {
        start,
        group,
        goal,
        pose_goal,
        goal_region: Default::default(),
        path_constraints,
        other_goals,
        other_pose_goals,
    })
}

/// The `path_constraints` of a MoveIt request document; the error names them.
fn path_constraints_of(
    doc: &serde_yaml::Value,
) -> Result<crate::robot::constraint::ConstraintSpec, String> {
    crate::robot::constraint::ConstraintSpec::from_moveit_yaml(&doc["path_constraints"])
        .map_err(|m| format!("path_constraints: {m}"))
}

/// Loads every problem of one robot (7 scenes x 100), in scene then index order.
pub fn load_problems(data: &Path, robot: &str) -> Result<Vec<Problem>, MbmError> {
    load_problems_where(data, robot, |_, _| true)
}

/// Loads the problems of one robot that `keep(scene, index)` accepts, in scene then index
/// order. `keep` is asked once per problem present, in that order, before its files are parsed
/// (parsing the scenes is most of the loading time), so a counting closure can take the first
/// few of each scene.
pub fn load_problems_where(
    data: &Path,
    robot: &str,
    mut keep: impl FnMut(&str, usize) -> bool,
) -> Result<Vec<Problem>, MbmError> {
    let root = unpacked_problems(data, robot)?.join("problems");
    let mut out = Vec::new();
    for scene_name in SCENES {
        let dir = root.join(format!("{scene_name}_{robot}"));
        for index in 1..=100 {
            let req = dir.join(format!("request{index:04}.yaml"));
            let scn = dir.join(format!("scene{index:04}.yaml"));
            if !req.is_file() || !keep(scene_name, index) {
                continue;
            }
            let Request {
                start: start_state,
                group: group_name,
                goal,
                pose_goal: _,
                goal_region,
                path_constraints,
                other_goals: _,
                other_pose_goals: _,
            } = read_request(&req)?;
            if !goal_region.is_empty() {
                return Err(MbmError::Request {
                    path: req.display().to_string(),
                    message: "the benchmark plans to joint goals, this request's goal is a \
                              region of goal constraints"
                        .into(),
                });
            }
            if !path_constraints.is_empty() {
                return Err(MbmError::Request {
                    path: req.display().to_string(),
                    message: "the benchmark plans without path constraints, this request has \
                              some"
                        .into(),
                });
            }
            let scene = crate::scene::load_scene(&scn).map_err(|e| MbmError::Scene {
                path: scn.display().to_string(),
                message: e.to_string(),
            })?;
            out.push(Problem {
                scene_name: scene_name.to_string(),
                index,
                scene,
                start_state,
                group_name,
                goal,
            });
        }
    }
    Ok(out)
}

impl MbmRobot {
    /// The full robot state of a problem's start (joints it does not name stay neutral).
    pub fn start_full_state(&self, p: &Problem) -> Vec<f64> {
        let tree = &self.model.tree;
        let mut s = tree.neutral_state();
        for (i, name) in tree.variable_names.iter().enumerate() {
            if let Some(v) = p.start_state.get(name) {
                s[i] = *v;
            }
        }
        s
    }

    /// The group configurations of a problem's start and goal. Values within
    /// [`LIMIT_TOLERANCE`] outside a joint limit are moved onto it (the Fetch problems record
    /// roll joints at `±PI`, the URDF limits them to `±3.14159`); values further out are
    /// left for the planner to reject.
    pub fn start_goal(&self, p: &Problem) -> Result<(Vec<f64>, Vec<f64>), MbmError> {
        let names = &self.group.space.names;
        let mut start = Vec::with_capacity(names.len());
        let mut goal = Vec::with_capacity(names.len());
        for n in names {
            start.push(*p.start_state.get(n).ok_or_else(|| MbmError::Request {
                path: format!("{} #{}", p.scene_name, p.index),
                message: format!("start state lacks joint '{n}'"),
            })?);
            goal.push(
                p.goal
                    .iter()
                    .find(|(g, _)| g == n)
                    .map(|(_, v)| *v)
                    .ok_or_else(|| MbmError::Request {
                        path: format!("{} #{}", p.scene_name, p.index),
                        message: format!("goal lacks joint '{n}'"),
                    })?,
            );
        }
        let space = &self.group.space;
        space.snap_to_limits(&mut start, LIMIT_TOLERANCE);
        space.snap_to_limits(&mut goal, LIMIT_TOLERANCE);
        Ok((start, goal))
    }
}
