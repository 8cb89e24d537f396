//! Planning groups: which joints a planner moves. Joints outside the group hold the values
//! of a base state (the request's start state).

use super::load::RobotModel;
use super::model::JointKind;
use super::space::JointSpace;
use super::RobotError;

/// Default acceleration limit as a multiple of the velocity limit (per second): the URDF
/// carries no acceleration limits, so this is used for joints that a joint limits file
/// ([`super::JointLimitsFile`]) gives none.
pub const DEFAULT_ACCELERATION_FACTOR: f64 = 2.0;

/// The moving, independent joints a planner controls, and how their values map into a full
/// robot state.
#[derive(Clone, Debug, PartialEq)]
pub struct PlanningGroup {
    /// Group name (`"custom"` for a joint list).
    pub name: String,
    /// Joint indices (into the kinematic tree) in configuration order.
    pub joints: Vec<usize>,
    /// Index of each joint's value in a full state.
    pub variables: Vec<usize>,
    /// Limits and wrap-around behaviour, in configuration order.
    pub space: JointSpace,
}

impl PlanningGroup {
    /// Writes a group configuration `q` into a copy of the full state `base`.
    pub fn full_state(&self, base: &[f64], q: &[f64]) -> Vec<f64> {
        let mut s = base.to_vec();
        for (k, &v) in self.variables.iter().enumerate() {
            s[v] = q[k];
        }
        s
    }

    /// Reads the group configuration out of a full state.
    pub fn config_of(&self, state: &[f64]) -> Vec<f64> {
        self.variables.iter().map(|&v| state[v]).collect()
    }
}

impl RobotModel {
    /// A planning group from an explicit list of joint names (moving, non-mimic joints).
    pub fn group_from_joints<S: AsRef<str>>(
        &self,
        names: &[S],
    ) -> Result<PlanningGroup, RobotError> {
        let mut joints = Vec::new();
        for n in names {
            let j = self.tree.joint(n.as_ref())?;
            let joint = &self.tree.joints[j];
            if joint.kind == JointKind::Fixed {
                return Err(RobotError::Group(format!(
                    "joint '{}' is fixed and cannot be planned for",
                    joint.name
                )));
            }
            if joint.mimic.is_some() {
                return Err(RobotError::Group(format!(
                    "joint '{}' mimics another joint and cannot be planned for",
                    joint.name
                )));
            }
            if joints.contains(&j) {
                return Err(RobotError::Group(format!(
                    "joint '{}' is listed twice",
                    joint.name
                )));
            }
            joints.push(j);
        }
        if joints.is_empty() {
            return Err(RobotError::Group(
                "a planning group needs at least one moving joint".into(),
            ));
        }
        Ok(self.make_group("custom", joints))
    }

    /// The SRDF group called `name` (joints, chains, links and subgroups resolved; fixed and
    /// mimic joints dropped; joints in kinematic-tree order).
    pub fn group(&self, name: &str) -> Result<PlanningGroup, RobotError> {
        let srdf = self.srdf.as_ref().ok_or_else(|| {
            RobotError::Group(format!("group '{name}' requested but no SRDF was loaded"))
        })?;
        let mut set = std::collections::BTreeSet::new();
        self.collect_group(srdf, name, &mut set, 0)?;
        let joints: Vec<usize> = set
            .into_iter()
            .filter(|&j| {
                self.tree.joints[j].kind.is_moving() && self.tree.joints[j].mimic.is_none()
            })
            .collect();
        if joints.is_empty() {
            return Err(RobotError::Group(format!(
                "SRDF group '{name}' has no moving joints"
            )));
        }
        Ok(self.make_group(name, joints))
    }

    fn collect_group(
        &self,
        srdf: &super::Srdf,
        name: &str,
        set: &mut std::collections::BTreeSet<usize>,
        depth: usize,
    ) -> Result<(), RobotError> {
        if depth > 32 {
            return Err(RobotError::Group(format!(
                "SRDF group '{name}': subgroups nest too deep (a cycle?)"
            )));
        }
        let g = srdf.group(name).ok_or_else(|| {
            let names: Vec<&str> = srdf.groups.iter().map(|g| g.name.as_str()).collect();
            RobotError::Group(format!(
                "no SRDF group '{name}' (groups: {})",
                names.join(", ")
            ))
        })?;
        for j in &g.joints {
            set.insert(self.tree.joint(j)?);
        }
        for l in &g.links {
            if let Some(j) = self.tree.links[self.tree.link(l)?].parent_joint {
                set.insert(j);
            }
        }
        for (base, tip) in &g.chains {
            for j in self
                .tree
                .chain(self.tree.link(base)?, self.tree.link(tip)?)?
            {
                set.insert(j);
            }
        }
        for s in &g.subgroups {
            self.collect_group(srdf, s, set, depth + 1)?;
        }
        Ok(())
    }

    /// The names of group `group`'s named states (SRDF `group_state`s), sorted.
    pub fn named_states(&self, group: &str) -> Vec<String> {
        self.srdf
            .iter()
            .flat_map(|srdf| srdf.group_states.keys())
            .filter(|(g, _)| g == group)
            .map(|(_, name)| name.clone())
            .collect()
    }

    /// The joint names and values of group `group`'s named state `name` (an SRDF
    /// `group_state`, MoveIt's named target); an unknown name is an error listing the
    /// group's named states.
    pub fn named_state(&self, group: &str, name: &str) -> Result<(Vec<String>, Vec<f64>), String> {
        let key = (group.to_string(), name.to_string());
        match self.srdf.as_ref().and_then(|s| s.group_states.get(&key)) {
            Some(values) => Ok(values.iter().map(|(j, &x)| (j.clone(), x)).unzip()),
            None => {
                let known = self.named_states(group);
                Err(format!(
                    "no named state '{name}' for planning group '{group}' in the SRDF (its named \
                     states: {})",
                    if known.is_empty() {
                        "none".to_string()
                    } else {
                        known.join(", ")
                    }
                ))
            }
        }
    }

    /// The configuration of `group` (in its joint order) at its named state `name`; an
    /// unknown name, or a state that leaves a joint of the group out, is an error naming it.
    pub fn named_config(&self, group: &PlanningGroup, name: &str) -> Result<Vec<f64>, String> {
        let (names, values) = self.named_state(&group.name, name)?;
        group
            .space
            .names
            .iter()
            .map(|joint| {
                names
                    .iter()
                    .position(|n| n == joint)
                    .map(|i| values[i])
                    .ok_or_else(|| {
                        format!(
                            "named state '{name}' of planning group '{}' gives no value for \
                             joint '{joint}'",
                            group.name
                        )
                    })
            })
            .collect()
    }

    /// The default group: the first SRDF group with moving joints, else every variable.
    pub fn default_group(&self) -> PlanningGroup {
        if let Some(srdf) = &self.srdf {
            for g in &srdf.groups {
                if let Ok(pg) = self.group(&g.name) {
                    return pg;
                }
            }
        }
        self.make_group("all", self.tree.variable_joints.clone())
    }

    fn make_group(&self, name: &str, joints: Vec<usize>) -> PlanningGroup {
        let tree = &self.tree;
        let variables = joints
            .iter()
            .map(|&j| tree.joints[j].variable.unwrap_or(0))
            .collect();
        let space = JointSpace {
            names: joints
                .iter()
                .map(|&j| tree.joints[j].name.clone())
                .collect(),
            lower: joints
                .iter()
                .map(|&j| tree.joints[j].limits.lower)
                .collect(),
            upper: joints
                .iter()
                .map(|&j| tree.joints[j].limits.upper)
                .collect(),
            continuous: joints
                .iter()
                .map(|&j| tree.joints[j].kind == JointKind::Continuous)
                .collect(),
            max_velocity: joints
                .iter()
                .map(|&j| tree.joints[j].limits.velocity)
                .collect(),
            max_acceleration: joints
                .iter()
                .map(|&j| {
                    let l = &tree.joints[j].limits;
                    l.acceleration
                        .unwrap_or(l.velocity * DEFAULT_ACCELERATION_FACTOR)
                })
                .collect(),
            max_jerk: joints
                .iter()
                .map(|&j| tree.joints[j].limits.jerk.unwrap_or(f64::INFINITY))
                .collect(),
        };
        PlanningGroup {
            name: name.to_string(),
            joints,
            variables,
            space,
        }
    }
}
