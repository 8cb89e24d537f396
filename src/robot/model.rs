//! The kinematic tree loaded from a URDF: links, joints, limits, mimic relations, and the
//! variables (independent joint values) a full robot state is made of.

use std::collections::HashMap;

use nalgebra::{Isometry3, Translation3, UnitQuaternion, Vector3};

use super::RobotError;

/// The kind of motion a joint allows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JointKind {
    /// Rotation about the axis within position limits.
    Revolute,
    /// Rotation about the axis without limits.
    Continuous,
    /// Translation along the axis within position limits.
    Prismatic,
    /// No motion.
    Fixed,
}

impl JointKind {
    /// True for joints that move (have a value).
    pub fn is_moving(self) -> bool {
        self != JointKind::Fixed
    }
}

/// Position, velocity and effort limits of a joint.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct JointLimits {
    /// Lower position limit (rad or m); `-PI` for continuous joints.
    pub lower: f64,
    /// Upper position limit (rad or m); `PI` for continuous joints.
    pub upper: f64,
    /// Velocity limit (rad/s or m/s).
    pub velocity: f64,
    /// Effort limit (N m or N).
    pub effort: f64,
    /// Acceleration limit (rad/s² or m/s²) from a joint limits file
    /// ([`super::JointLimitsFile`]); the URDF has none, so `None` unless one was applied.
    pub acceleration: Option<f64>,
    /// Jerk limit (rad/s³ or m/s³) from a joint limits file; `None` (no jerk limit) unless
    /// one was applied.
    pub jerk: Option<f64>,
}

/// A mimic relation: `value = multiplier * value(joint) + offset`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Mimic {
    /// Index of the joint that is mimicked.
    pub joint: usize,
    /// Multiplier.
    pub multiplier: f64,
    /// Offset.
    pub offset: f64,
}

/// A joint of the kinematic tree.
#[derive(Clone, Debug)]
pub struct Joint {
    /// Joint name from the URDF.
    pub name: String,
    /// Kind of motion.
    pub kind: JointKind,
    /// Index of the parent link.
    pub parent: usize,
    /// Index of the child link.
    pub child: usize,
    /// Pose of the joint frame in the parent link frame.
    pub origin: Isometry3<f64>,
    /// Unit axis in the joint frame.
    pub axis: Vector3<f64>,
    /// Limits.
    pub limits: JointLimits,
    /// Mimic relation, if the joint follows another one.
    pub mimic: Option<Mimic>,
    /// Index of this joint's value in a full state (`None` for fixed and mimic joints).
    pub variable: Option<usize>,
}

impl Joint {
    /// Transform of the child link frame in the parent link frame for joint value `q`.
    pub fn transform(&self, q: f64) -> Isometry3<f64> {
        match self.kind {
            JointKind::Fixed => self.origin,
            JointKind::Revolute | JointKind::Continuous => {
                let r =
                    UnitQuaternion::from_axis_angle(&nalgebra::Unit::new_unchecked(self.axis), q);
                self.origin * Isometry3::from_parts(Translation3::identity(), r)
            }
            JointKind::Prismatic => {
                self.origin
                    * Isometry3::translation(self.axis.x * q, self.axis.y * q, self.axis.z * q)
            }
        }
    }
}

/// A link of the kinematic tree.
#[derive(Clone, Debug)]
pub struct Link {
    /// Link name from the URDF.
    pub name: String,
    /// The joint whose child this link is (`None` for the root).
    pub parent_joint: Option<usize>,
    /// Joints whose parent this link is.
    pub child_joints: Vec<usize>,
}

/// The kinematic tree of a robot.
#[derive(Clone, Debug)]
pub struct KinematicTree {
    /// Robot name.
    pub name: String,
    /// Links; index 0 need not be the root.
    pub links: Vec<Link>,
    /// Joints in topological order (a joint's parent link is reached before it).
    pub joints: Vec<Joint>,
    /// Index of the root link.
    pub root: usize,
    /// Names of the variables of a full state, in order (moving, non-mimic joints).
    pub variable_names: Vec<String>,
    /// Joint index of each variable.
    pub variable_joints: Vec<usize>,
    link_index: HashMap<String, usize>,
    joint_index: HashMap<String, usize>,
}

fn pose_from_urdf(p: &urdf_rs::Pose) -> Isometry3<f64> {
    let t = Translation3::new(p.xyz.0[0], p.xyz.0[1], p.xyz.0[2]);
    let r = UnitQuaternion::from_euler_angles(p.rpy.0[0], p.rpy.0[1], p.rpy.0[2]);
    Isometry3::from_parts(t, r)
}

impl KinematicTree {
    /// Builds the tree from a parsed URDF, checking that it is a tree with one root and that
    /// every joint is supported and well formed.
    pub fn from_urdf(robot: &urdf_rs::Robot) -> Result<Self, RobotError> {
        let mut link_index = HashMap::new();
        let mut links = Vec::with_capacity(robot.links.len());
        for l in &robot.links {
            if link_index.insert(l.name.clone(), links.len()).is_some() {
                return Err(RobotError::Model(format!(
                    "link '{}' is defined twice",
                    l.name
                )));
            }
            links.push(Link {
                name: l.name.clone(),
                parent_joint: None,
                child_joints: Vec::new(),
            });
        }
        if links.is_empty() {
            return Err(RobotError::Model("the URDF has no links".into()));
        }
        // Parse joints in file order first, then sort topologically.
        struct Raw {
            joint: Joint,
            mimic: Option<(String, f64, f64)>,
        }
        let mut raw: Vec<Raw> = Vec::with_capacity(robot.joints.len());
        let mut seen = HashMap::new();
        for j in &robot.joints {
            if seen.insert(j.name.clone(), ()).is_some() {
                return Err(RobotError::Model(format!(
                    "joint '{}' is defined twice",
                    j.name
                )));
            }
            let parent = *link_index.get(&j.parent.link).ok_or_else(|| {
                RobotError::Model(format!(
                    "joint '{}': parent link '{}' does not exist",
                    j.name, j.parent.link
                ))
            })?;
            let child = *link_index.get(&j.child.link).ok_or_else(|| {
                RobotError::Model(format!(
                    "joint '{}': child link '{}' does not exist",
                    j.name, j.child.link
                ))
            })?;
            let kind = match j.joint_type {
                urdf_rs::JointType::Revolute => JointKind::Revolute,
                urdf_rs::JointType::Continuous => JointKind::Continuous,
                urdf_rs::JointType::Prismatic => JointKind::Prismatic,
                urdf_rs::JointType::Fixed => JointKind::Fixed,
                ref other => {
                    return Err(RobotError::Model(format!(
                        "joint '{}': type {:?} is not supported (revolute, continuous, prismatic, fixed)",
                        j.name, other
                    )))
                }
            };
            let a = Vector3::new(j.axis.xyz.0[0], j.axis.xyz.0[1], j.axis.xyz.0[2]);
            let norm = a.norm();
            if kind.is_moving() && !(norm.is_finite() && norm > 1e-9) {
                return Err(RobotError::Model(format!(
                    "joint '{}': axis {:?} is not a valid direction",
                    j.name, j.axis.xyz.0
                )));
            }
            let axis = if norm > 1e-9 { a / norm } else { Vector3::x() };
            let origin = pose_from_urdf(&j.origin);
            if !origin.translation.vector.iter().all(|v| v.is_finite())
                || !origin.rotation.coords.iter().all(|v| v.is_finite())
            {
                return Err(RobotError::Model(format!(
                    "joint '{}': origin is not finite",
                    j.name
                )));
            }
            let (lower, upper) = match kind {
                JointKind::Continuous => (-std::f64::consts::PI, std::f64::consts::PI),
                JointKind::Fixed => (0.0, 0.0),
                _ => (j.limit.lower, j.limit.upper),
            };
            if kind.is_moving() && (!lower.is_finite() || !upper.is_finite() || lower > upper) {
                return Err(RobotError::Model(format!(
                    "joint '{}': position limits [{lower}, {upper}] are invalid",
                    j.name
                )));
            }
            let velocity = if j.limit.velocity.is_finite() && j.limit.velocity > 0.0 {
                j.limit.velocity
            } else {
                1.0
            };
            let mimic = j.mimic.as_ref().map(|m| {
                (
                    m.joint.clone(),
                    m.multiplier.unwrap_or(1.0),
                    m.offset.unwrap_or(0.0),
                )
            });
            raw.push(Raw {
                joint: Joint {
                    name: j.name.clone(),
                    kind,
                    parent,
                    child,
                    origin,
                    axis,
                    limits: JointLimits {
                        lower,
                        upper,
                        velocity,
                        effort: j.limit.effort,
                        acceleration: None,
                        jerk: None,
                    },
                    mimic: None,
                    variable: None,
                },
                mimic,
            });
        }
        // Each link has at most one parent joint.
        let mut parent_of: Vec<Option<usize>> = vec![None; links.len()];
        for (ji, r) in raw.iter().enumerate() {
            if let Some(prev) = parent_of[r.joint.child] {
                return Err(RobotError::Model(format!(
                    "link '{}' is the child of two joints ('{}' and '{}'): not a tree",
                    links[r.joint.child].name, raw[prev].joint.name, r.joint.name
                )));
            }
            parent_of[r.joint.child] = Some(ji);
        }
        let roots: Vec<usize> = (0..links.len())
            .filter(|&l| parent_of[l].is_none())
            .collect();
        if roots.len() != 1 {
            let names: Vec<&str> = roots.iter().map(|&l| links[l].name.as_str()).collect();
            return Err(RobotError::Model(format!(
                "the URDF must have exactly one root link, found {}: {}",
                roots.len(),
                names.join(", ")
            )));
        }
        let root = roots[0];
        // Topological order: breadth-first from the root, children in file order.
        let mut children: Vec<Vec<usize>> = vec![Vec::new(); links.len()];
        for (ji, r) in raw.iter().enumerate() {
            children[r.joint.parent].push(ji);
        }
        let mut order = Vec::with_capacity(raw.len());
        let mut queue = std::collections::VecDeque::from([root]);
        while let Some(l) = queue.pop_front() {
            for &ji in &children[l] {
                order.push(ji);
                queue.push_back(raw[ji].joint.child);
            }
        }
        if order.len() != raw.len() {
            return Err(RobotError::Model(
                "the joints form a cycle: not a tree".into(),
            ));
        }
        let mut new_index = vec![0usize; raw.len()];
        for (new, &old) in order.iter().enumerate() {
            new_index[old] = new;
        }
        let mut raw_opt: Vec<Option<Raw>> = raw.into_iter().map(Some).collect();
        let mut joints = Vec::with_capacity(order.len());
        let mut mimics = Vec::with_capacity(order.len());
        for &old in &order {
            let r = raw_opt[old]
                .take()
                .ok_or_else(|| RobotError::Model("internal: joint ordered twice".into()))?;
            joints.push(r.joint);
            mimics.push(r.mimic);
        }
        let joint_index: HashMap<String, usize> = joints
            .iter()
            .enumerate()
            .map(|(i, j)| (j.name.clone(), i))
            .collect();
        for (i, m) in mimics.iter().enumerate() {
            if let Some((name, multiplier, offset)) = m {
                if !joints[i].kind.is_moving() {
                    continue;
                }
                let target = *joint_index.get(name).ok_or_else(|| {
                    RobotError::Model(format!(
                        "joint '{}' mimics '{}', which does not exist",
                        joints[i].name, name
                    ))
                })?;
                if !multiplier.is_finite() || !offset.is_finite() {
                    return Err(RobotError::Model(format!(
                        "joint '{}': mimic multiplier/offset not finite",
                        joints[i].name
                    )));
                }
                joints[i].mimic = Some(Mimic {
                    joint: target,
                    multiplier: *multiplier,
                    offset: *offset,
                });
            }
        }
        // Mimic chains must end at an independent moving joint.
        for i in 0..joints.len() {
            let mut j = i;
            let mut hops = 0;
            while let Some(m) = joints[j].mimic {
                j = m.joint;
                hops += 1;
                if hops > joints.len() {
                    return Err(RobotError::Model(format!(
                        "joint '{}': mimic relations form a cycle",
                        joints[i].name
                    )));
                }
            }
            if joints[i].mimic.is_some() && !joints[j].kind.is_moving() {
                return Err(RobotError::Model(format!(
                    "joint '{}' mimics a fixed joint",
                    joints[i].name
                )));
            }
        }
        let mut variable_names = Vec::new();
        let mut variable_joints = Vec::new();
        for (i, j) in joints.iter_mut().enumerate() {
            if j.kind.is_moving() && j.mimic.is_none() {
                j.variable = Some(variable_names.len());
                variable_names.push(j.name.clone());
                variable_joints.push(i);
            }
        }
        for (i, j) in joints.iter().enumerate() {
            links[j.child].parent_joint = Some(i);
            links[j.parent].child_joints.push(i);
        }
        Ok(Self {
            name: robot.name.clone(),
            links,
            joints,
            root,
            variable_names,
            variable_joints,
            link_index,
            joint_index,
        })
    }

    /// Index of a link by name.
    pub fn link(&self, name: &str) -> Result<usize, RobotError> {
        self.link_index
            .get(name)
            .copied()
            .ok_or_else(|| RobotError::UnknownLink(name.to_string()))
    }

    /// Index of a joint by name.
    pub fn joint(&self, name: &str) -> Result<usize, RobotError> {
        self.joint_index
            .get(name)
            .copied()
            .ok_or_else(|| RobotError::UnknownJoint(name.to_string()))
    }

    /// Number of variables in a full state.
    pub fn num_variables(&self) -> usize {
        self.variable_names.len()
    }

    /// The value of joint `j` in a full state (resolving mimic relations; 0 for fixed joints).
    pub fn joint_value(&self, state: &[f64], j: usize) -> f64 {
        let joint = &self.joints[j];
        if let Some(v) = joint.variable {
            return state[v];
        }
        if let Some(m) = joint.mimic {
            return m.multiplier * self.joint_value(state, m.joint) + m.offset;
        }
        0.0
    }

    /// A full state with every variable at the middle of its limits (0 where 0 is inside).
    pub fn neutral_state(&self) -> Vec<f64> {
        self.variable_joints
            .iter()
            .map(|&j| {
                let l = &self.joints[j].limits;
                if l.lower <= 0.0 && l.upper >= 0.0 {
                    0.0
                } else {
                    0.5 * (l.lower + l.upper)
                }
            })
            .collect()
    }

    /// Poses of every link in the root frame for one full state (`state.len() ==
    /// num_variables()`), f64. Writes into `out` (resized to the number of links).
    pub fn forward_kinematics_into(&self, state: &[f64], out: &mut Vec<Isometry3<f64>>) {
        out.clear();
        out.resize(self.links.len(), Isometry3::identity());
        for (ji, j) in self.joints.iter().enumerate() {
            let q = self.joint_value(state, ji);
            out[j.child] = out[j.parent] * j.transform(q);
        }
    }

    /// Poses of every link for one full state.
    pub fn forward_kinematics(&self, state: &[f64]) -> Vec<Isometry3<f64>> {
        let mut out = Vec::new();
        self.forward_kinematics_into(state, &mut out);
        out
    }

    /// Forward kinematics for a batch of full states (row-major, `num_variables()` values per
    /// row): one vector of link poses per state.
    pub fn forward_kinematics_batch(&self, states: &[f64]) -> Vec<Vec<Isometry3<f64>>> {
        let n = self.num_variables().max(1);
        states
            .chunks_exact(n)
            .map(|s| self.forward_kinematics(s))
            .collect()
    }

    /// Adds a link `name` below link `parent`, joined by a fixed joint `joint_name` whose
    /// origin is `origin` (the new link's frame in the parent's). The new joint goes last, which
    /// keeps the topological order; no variable is added. Fails, changing nothing, when either
    /// name is taken or `parent` is not a link.
    pub fn add_fixed_link(
        &mut self,
        parent: usize,
        name: &str,
        joint_name: &str,
        origin: Isometry3<f64>,
    ) -> Result<usize, RobotError> {
        if parent >= self.links.len() {
            return Err(RobotError::Model(format!(
                "no link with index {parent} to attach '{name}' to"
            )));
        }
        if self.link_index.contains_key(name) {
            return Err(RobotError::Model(format!("link '{name}' already exists")));
        }
        if self.joint_index.contains_key(joint_name) {
            return Err(RobotError::Model(format!(
                "joint '{joint_name}' already exists"
            )));
        }
        let link = self.links.len();
        let joint = self.joints.len();
        self.links.push(Link {
            name: name.to_string(),
            parent_joint: Some(joint),
            child_joints: Vec::new(),
        });
        self.links[parent].child_joints.push(joint);
        self.joints.push(Joint {
            name: joint_name.to_string(),
            kind: JointKind::Fixed,
            parent,
            child: link,
            origin,
            axis: Vector3::z(),
            limits: JointLimits {
                lower: 0.0,
                upper: 0.0,
                velocity: 0.0,
                effort: 0.0,
                acceleration: None,
                jerk: None,
            },
            mimic: None,
            variable: None,
        });
        self.link_index.insert(name.to_string(), link);
        self.joint_index.insert(joint_name.to_string(), joint);
        Ok(link)
    }

    /// Joints on the path from `base` link down to `tip` link, in order from base to tip.
    pub fn chain(&self, base: usize, tip: usize) -> Result<Vec<usize>, RobotError> {
        let mut path = Vec::new();
        let mut l = tip;
        while l != base {
            let j = self.links[l].parent_joint.ok_or_else(|| {
                RobotError::Model(format!(
                    "link '{}' is not below link '{}'",
                    self.links[tip].name, self.links[base].name
                ))
            })?;
            path.push(j);
            l = self.joints[j].parent;
        }
        path.reverse();
        Ok(path)
    }
}
