//! Joint limits from a MoveIt `joint_limits.yaml`: velocity and acceleration limits for time
//! parameterization (the URDF has no acceleration limits), narrower position limits, and the
//! default velocity / acceleration scaling factors.
//!
//! The file is the one a MoveIt configuration package carries (`config/joint_limits.yaml`):
//!
//! ```yaml
//! default_velocity_scaling_factor: 0.1
//! default_acceleration_scaling_factor: 0.1
//! joint_limits:
//!   shoulder:
//!     has_velocity_limits: true
//!     max_velocity: 1.5
//!     has_acceleration_limits: true
//!     max_acceleration: 3.0
//!     has_position_limits: true      # narrows the URDF's limits
//!     min_position: -1.0
//!     max_position: 1.0
//! ```
//!
//! The top level may also be wrapped in `robot_description_planning:` (as MoveIt's launch files
//! load it). `has_jerk_limits` / `max_jerk` make the time parameterization of the segments
//! between waypoints jerk limited (see [`crate::trajectory::time_parameterize`]). Effort and
//! deceleration keys (and `angle_wraparound`) are accepted and not used. Every other key is an
//! error naming it, so that a misspelt limit is not silently ignored.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;

use super::load::RobotModel;
use super::model::JointKind;
use super::RobotError;

/// One joint's entry of a joint limits file (MoveIt's keys).
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JointLimitEntry {
    /// Whether `min_position` / `max_position` apply.
    #[serde(default)]
    pub has_position_limits: Option<bool>,
    /// Lower position limit (rad or m).
    #[serde(default)]
    pub min_position: Option<f64>,
    /// Upper position limit (rad or m).
    #[serde(default)]
    pub max_position: Option<f64>,
    /// Whether `max_velocity` applies.
    #[serde(default)]
    pub has_velocity_limits: Option<bool>,
    /// Velocity limit (rad/s or m/s).
    #[serde(default)]
    pub max_velocity: Option<f64>,
    /// Whether `max_acceleration` applies.
    #[serde(default)]
    pub has_acceleration_limits: Option<bool>,
    /// Acceleration limit (rad/s² or m/s²).
    #[serde(default)]
    pub max_acceleration: Option<f64>,
    /// Accepted, not used (no deceleration limit of its own here).
    #[serde(default)]
    pub has_deceleration_limits: Option<bool>,
    /// Accepted, not used.
    #[serde(default)]
    pub max_deceleration: Option<f64>,
    /// Whether `max_jerk` applies.
    #[serde(default)]
    pub has_jerk_limits: Option<bool>,
    /// Jerk limit (rad/s³ or m/s³): the time parameterization limits jerk where it is given.
    #[serde(default)]
    pub max_jerk: Option<f64>,
    /// Accepted, not used.
    #[serde(default)]
    pub has_effort_limits: Option<bool>,
    /// Accepted, not used.
    #[serde(default)]
    pub max_effort: Option<f64>,
    /// Accepted, not used: whether a joint wraps around follows from the URDF (continuous).
    #[serde(default)]
    pub angle_wraparound: Option<bool>,
}

/// The contents of a joint limits file.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JointLimitsFile {
    /// Velocity scaling used when a request gives none, in (0, 1].
    #[serde(default)]
    pub default_velocity_scaling_factor: Option<f64>,
    /// Acceleration scaling used when a request gives none, in (0, 1].
    #[serde(default)]
    pub default_acceleration_scaling_factor: Option<f64>,
    /// Limits per joint name.
    #[serde(default)]
    pub joint_limits: BTreeMap<String, JointLimitEntry>,
}

/// The scaling factors a robot's joint limits file gives for requests that give none.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct DefaultScaling {
    /// Velocity scaling in (0, 1]; `None`: the file gives none (1).
    pub velocity: Option<f64>,
    /// Acceleration scaling in (0, 1]; `None`: the file gives none (1).
    pub acceleration: Option<f64>,
}

/// The file wrapped in `robot_description_planning:`, as MoveIt's launch files load it.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Wrapped {
    robot_description_planning: JointLimitsFile,
}

fn bad(source: &str, message: impl Into<String>) -> RobotError {
    RobotError::JointLimits {
        source_name: source.to_string(),
        message: message.into(),
    }
}

impl JointLimitsFile {
    /// Parses a joint limits file's text; `source` names it in errors.
    pub fn parse(text: &str, source: &str) -> Result<Self, RobotError> {
        let value: serde_yaml::Value =
            serde_yaml::from_str(text).map_err(|e| bad(source, e.to_string()))?;
        if value.is_null() {
            // An empty file (or one of comments only) sets nothing.
            return Ok(Self::default());
        }
        let wrapped = value
            .as_mapping()
            .is_some_and(|m| m.contains_key("robot_description_planning"));
        // Parsed from the text (not the value) so that serde's messages give the key's path.
        let file = if wrapped {
            serde_yaml::from_str::<Wrapped>(text).map(|w| w.robot_description_planning)
        } else {
            serde_yaml::from_str::<JointLimitsFile>(text)
        }
        .map_err(|e| bad(source, e.to_string()))?;
        for (key, f) in [
            (
                "default_velocity_scaling_factor",
                file.default_velocity_scaling_factor,
            ),
            (
                "default_acceleration_scaling_factor",
                file.default_acceleration_scaling_factor,
            ),
        ] {
            if let Some(x) = f {
                if !(x > 0.0 && x <= 1.0) {
                    return Err(bad(source, format!("{key}: {x} must be in (0, 1]")));
                }
            }
        }
        Ok(file)
    }

    /// Reads and parses a joint limits file.
    pub fn read(path: &Path) -> Result<Self, RobotError> {
        Self::parse(&super::read_text(path)?, &path.display().to_string())
    }

    /// The default scaling factors the file gives.
    pub fn default_scaling(&self) -> DefaultScaling {
        DefaultScaling {
            velocity: self.default_velocity_scaling_factor,
            acceleration: self.default_acceleration_scaling_factor,
        }
    }
}

/// A limit value that must be finite and positive.
fn positive(source: &str, joint: &str, key: &str, x: Option<f64>) -> Result<f64, RobotError> {
    match x {
        Some(x) if x.is_finite() && x > 0.0 => Ok(x),
        Some(x) => Err(bad(
            source,
            format!("joint '{joint}': {key} {x} must be positive and finite"),
        )),
        None => Err(bad(
            source,
            format!(
                "joint '{joint}': has_{}_limits is true but {key} is missing",
                key.trim_start_matches("max_")
            ),
        )),
    }
}

impl RobotModel {
    /// Applies a joint limits file (`source` names it in errors): velocity limits replace the
    /// URDF's, acceleration limits replace the default of
    /// [`super::DEFAULT_ACCELERATION_FACTOR`] times the velocity limit, jerk limits are set
    /// (the URDF has none), position limits
    /// narrow the URDF's (a continuous joint given position limits becomes a bounded revolute
    /// joint, as in MoveIt), and the file's default scaling factors are kept in
    /// [`RobotModel::default_scaling`]. A `has_*` key that is false (or absent) leaves that
    /// limit as the URDF gives it. Every entry is checked before any is applied, so an error
    /// (naming the joint and key) leaves the robot unchanged.
    pub fn apply_joint_limits(
        &mut self,
        file: &JointLimitsFile,
        source: &str,
    ) -> Result<(), RobotError> {
        let mut changes = Vec::with_capacity(file.joint_limits.len());
        for (name, entry) in &file.joint_limits {
            let j = self
                .tree
                .joint(name)
                .map_err(|_| bad(source, format!("unknown joint '{name}'")))?;
            let joint = &self.tree.joints[j];
            if joint.kind == JointKind::Fixed {
                return Err(bad(
                    source,
                    format!("joint '{name}' is fixed and has no limits"),
                ));
            }
            let mut limits = joint.limits;
            let mut kind = joint.kind;
            if entry.has_velocity_limits == Some(true) {
                limits.velocity = positive(source, name, "max_velocity", entry.max_velocity)?;
            }
            if entry.has_acceleration_limits == Some(true) {
                limits.acceleration = Some(positive(
                    source,
                    name,
                    "max_acceleration",
                    entry.max_acceleration,
                )?);
            }
            if entry.has_jerk_limits == Some(true) {
                limits.jerk = Some(positive(source, name, "max_jerk", entry.max_jerk)?);
            }
            if entry.has_position_limits == Some(true) {
                let (Some(lo), Some(hi)) = (entry.min_position, entry.max_position) else {
                    return Err(bad(
                        source,
                        format!(
                            "joint '{name}': has_position_limits is true but min_position \
                             or max_position is missing"
                        ),
                    ));
                };
                if !(lo.is_finite() && hi.is_finite() && lo < hi) {
                    return Err(bad(
                        source,
                        format!(
                            "joint '{name}': position limits [{lo}, {hi}] must be finite with \
                             min_position < max_position"
                        ),
                    ));
                }
                if joint.kind == JointKind::Continuous {
                    kind = JointKind::Revolute;
                } else if lo < joint.limits.lower || hi > joint.limits.upper {
                    return Err(bad(
                        source,
                        format!(
                            "joint '{name}': position limits [{lo}, {hi}] reach outside the \
                             URDF's [{}, {}]; a joint limits file may only narrow them",
                            joint.limits.lower, joint.limits.upper
                        ),
                    ));
                }
                limits.lower = lo;
                limits.upper = hi;
            }
            changes.push((j, kind, limits));
        }
        for (j, kind, limits) in changes {
            self.tree.joints[j].kind = kind;
            self.tree.joints[j].limits = limits;
        }
        self.default_scaling = file.default_scaling();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn moveit_layouts_parse_and_unknown_keys_are_named() {
        let plain = "default_velocity_scaling_factor: 0.1\njoint_limits:\n  a:\n    \
                     has_velocity_limits: true\n    max_velocity: 2\n    \
                     has_acceleration_limits: false\n    max_acceleration: 0\n";
        let f = JointLimitsFile::parse(plain, "f.yaml").unwrap();
        assert_eq!(f.default_velocity_scaling_factor, Some(0.1));
        assert_eq!(f.joint_limits["a"].max_velocity, Some(2.0));
        let wrapped = format!(
            "robot_description_planning:\n{}",
            plain
                .lines()
                .map(|l| format!("  {l}\n"))
                .collect::<String>()
        );
        assert_eq!(JointLimitsFile::parse(&wrapped, "w.yaml").unwrap(), f);

        let typo = "joint_limits:\n  a:\n    max_velocty: 2\n";
        let e = JointLimitsFile::parse(typo, "t.yaml")
            .unwrap_err()
            .to_string();
        assert!(e.contains("t.yaml") && e.contains("max_velocty"), "{e}");
        let typo_wrapped = "robot_description_planning:\n  joint_limit: {}\n";
        let e = JointLimitsFile::parse(typo_wrapped, "w.yaml")
            .unwrap_err()
            .to_string();
        assert!(e.contains("joint_limit"), "{e}");
        let scale = "default_acceleration_scaling_factor: 1.5\n";
        let e = JointLimitsFile::parse(scale, "s.yaml")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("default_acceleration_scaling_factor") && e.contains("1.5"),
            "{e}"
        );
        assert_eq!(
            JointLimitsFile::parse("# nothing yet\n", "empty.yaml").unwrap(),
            JointLimitsFile::default()
        );
        let e = JointLimitsFile::parse("[1, 2", "b.yaml")
            .unwrap_err()
            .to_string();
        assert!(e.contains("b.yaml"), "{e}");
    }
}
