//! MoveIt's `kinematics.yaml` (in a MoveIt configuration package's `config/`): the inverse
//! kinematics plugin of each planning group and its settings.
//!
//! ```yaml
//! arm:                                   # a planning group of the SRDF
//!   kinematics_solver: kdl_kinematics_plugin/KDLKinematicsPlugin
//!   kinematics_solver_search_resolution: 0.005
//!   kinematics_solver_timeout: 0.005     # s
//!   position_only_ik: true               # KDL's: pose goals constrain the position only
//! ```
//!
//! The file may also be wrapped as a ROS parameter file (`/**: ros__parameters:
//! robot_description_kinematics: ...`) or under `robot_description_kinematics:` alone.
//!
//! Inverse kinematics here is the node's own batched solver ([`super::ik`]), whatever plugin
//! the file names, so of a group's settings only `position_only_ik` changes what is solved:
//! its pose goals (`~/plan`, `~/move`, `~/compute_ik`, `gmp plan --goal-pose`, `gmp ik`) put
//! the link's origin at the position and leave its orientation free, as KDL then does.
//! `kinematics_solver_timeout` (when positive) is the time limit of `~/compute_ik` requests
//! that give none (timeout 0) and of `gmp ik` without `--timeout`, as in MoveIt; pose goals of
//! plans share the plan's own time limit instead. The plugin, attempts and search resolution
//! are read and shown (`gmp info`, the node's log) but not used: the solver's own starts and
//! iterations bound its work. Errors name the file and key.

use std::collections::BTreeMap;
use std::path::Path;

use serde_yaml::Value;

use super::RobotError;

/// One planning group's entry.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct GroupKinematics {
    /// The plugin named (`kinematics_solver`), not used here.
    pub solver: Option<String>,
    /// `kinematics_solver_timeout`, s: the default time limit of `~/compute_ik` and `gmp ik`
    /// ([`KinematicsConfig::timeout`]).
    pub timeout: Option<f64>,
    /// `kinematics_solver_attempts` (not used here).
    pub attempts: Option<u64>,
    /// `kinematics_solver_search_resolution` (not used here).
    pub search_resolution: Option<f64>,
    /// `position_only_ik`: pose goals constrain the link's position only.
    pub position_only_ik: bool,
    /// The entry's other keys (plugin settings with no counterpart here), sorted.
    pub ignored: Vec<String>,
}

/// A `kinematics.yaml`: the entry of every group it names.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct KinematicsConfig {
    /// The file read.
    pub source: String,
    /// Entries by group name.
    pub groups: BTreeMap<String, GroupKinematics>,
}

impl KinematicsConfig {
    /// Reads and parses `path`; errors name it.
    pub fn read(path: &Path) -> Result<Self, RobotError> {
        Self::parse(&super::read_text(path)?, &path.display().to_string())
    }

    /// Parses the text of a `kinematics.yaml`; `source` names it in errors.
    pub fn parse(text: &str, source: &str) -> Result<Self, RobotError> {
        let bad = |message: String| RobotError::Kinematics {
            source_name: source.to_string(),
            message,
        };
        let mut doc: Value =
            serde_yaml::from_str(text).map_err(|e| bad(format!("invalid YAML: {e}")))?;
        // A ROS parameter file's wrapping.
        for key in ["/**", "ros__parameters", "robot_description_kinematics"] {
            if let Some(inner) = doc.get(key) {
                doc = inner.clone();
            }
        }
        let mut config = KinematicsConfig {
            source: source.to_string(),
            groups: BTreeMap::new(),
        };
        let Some(map) = doc.as_mapping() else {
            if doc.is_null() {
                return Ok(config);
            }
            return Err(bad("the file must be a mapping of planning groups".into()));
        };
        for (name, entry) in map {
            let name = name
                .as_str()
                .ok_or_else(|| bad(format!("group name {name:?} is not text")))?;
            let fields = entry
                .as_mapping()
                .ok_or_else(|| bad(format!("{name}: must be a mapping of settings")))?;
            let mut group = GroupKinematics::default();
            for (key, value) in fields {
                let key = key.as_str().unwrap_or_default();
                let number = |what: &str| match value.as_f64() {
                    Some(x) if x.is_finite() && x >= 0.0 => Ok(x),
                    _ => Err(bad(format!(
                        "{name}.{key}: {value:?} must be a non-negative number ({what})"
                    ))),
                };
                match key {
                    "kinematics_solver" => {
                        group.solver = Some(
                            value
                                .as_str()
                                .ok_or_else(|| bad(format!("{name}.{key}: must be text")))?
                                .to_string(),
                        )
                    }
                    "kinematics_solver_timeout" => group.timeout = Some(number("seconds")?),
                    "kinematics_solver_search_resolution" => {
                        group.search_resolution = Some(number("radians")?)
                    }
                    "kinematics_solver_attempts" => {
                        group.attempts = Some(value.as_u64().ok_or_else(|| {
                            bad(format!("{name}.{key}: {value:?} must be a whole number"))
                        })?)
                    }
                    "position_only_ik" => {
                        group.position_only_ik = value.as_bool().ok_or_else(|| {
                            bad(format!("{name}.{key}: {value:?} must be true or false"))
                        })?
                    }
                    other => group.ignored.push(other.to_string()),
                }
            }
            group.ignored.sort();
            config.groups.insert(name.to_string(), group);
        }
        Ok(config)
    }

    /// Whether `group`'s pose goals constrain the position only (`position_only_ik`).
    pub fn position_only(&self, group: &str) -> bool {
        self.groups.get(group).is_some_and(|g| g.position_only_ik)
    }

    /// `group`'s `kinematics_solver_timeout` when positive (0 or none: no limit).
    pub fn timeout(&self, group: &str) -> Option<f64> {
        self.groups
            .get(group)
            .and_then(|g| g.timeout)
            .filter(|t| *t > 0.0)
    }

    /// One line naming each group's plugin and settings, for logs.
    pub fn summary(&self) -> String {
        let groups: Vec<String> = self
            .groups
            .iter()
            .map(|(name, g)| {
                format!(
                    "{name}: {}{}{} (plugin and its other settings not used: the node's \
                     batched solver)",
                    g.solver.as_deref().unwrap_or("no plugin named"),
                    if g.position_only_ik {
                        ", position_only_ik: pose goals constrain the position only"
                    } else {
                        ""
                    },
                    match self.timeout(name) {
                        Some(t) => format!(", compute_ik timeout {t} s"),
                        None => String::new(),
                    }
                )
            })
            .collect();
        format!("kinematics {}: {}", self.source, groups.join("; "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_groups_plain_or_wrapped_and_names_bad_values() {
        let plain = "arm:\n  kinematics_solver: kdl_kinematics_plugin/KDLKinematicsPlugin\n  \
                     kinematics_solver_search_resolution: 0.005\n  kinematics_solver_timeout: 0.05\n  \
                     kinematics_solver_attempts: 3\n  position_only_ik: true\n  mode: global\n\
                     hand:\n  kinematics_solver: pick_ik/PickIkPlugin\n";
        let k = KinematicsConfig::parse(plain, "kinematics.yaml").unwrap();
        let arm = &k.groups["arm"];
        assert_eq!(
            arm.solver.as_deref(),
            Some("kdl_kinematics_plugin/KDLKinematicsPlugin")
        );
        assert_eq!(
            (arm.timeout, arm.attempts, arm.search_resolution),
            (Some(0.05), Some(3), Some(0.005))
        );
        assert_eq!(arm.ignored, vec!["mode".to_string()]);
        assert!(k.position_only("arm") && !k.position_only("hand") && !k.position_only("x"));
        assert!(k.summary().contains("position_only_ik"), "{}", k.summary());
        assert!(
            k.summary().contains("compute_ik timeout 0.05 s"),
            "{}",
            k.summary()
        );
        assert_eq!((k.timeout("arm"), k.timeout("hand")), (Some(0.05), None));
        let zero = KinematicsConfig::parse("arm:\n  kinematics_solver_timeout: 0\n", "k").unwrap();
        assert_eq!(zero.timeout("arm"), None, "0 means no limit");
        let wrapped = format!(
            "/**:\n  ros__parameters:\n    robot_description_kinematics:\n{}",
            plain
                .lines()
                .map(|l| format!("      {l}\n"))
                .collect::<String>()
        );
        assert_eq!(
            KinematicsConfig::parse(&wrapped, "kinematics.yaml")
                .unwrap()
                .groups,
            k.groups
        );
        for (text, want) in [
            ("arm:\n  position_only_ik: maybe\n", "arm.position_only_ik"),
            (
                "arm:\n  kinematics_solver_timeout: -1\n",
                "arm.kinematics_solver_timeout",
            ),
            ("arm: 3\n", "arm: must be a mapping"),
            ("[1, 2]\n", "must be a mapping of planning groups"),
        ] {
            let e = KinematicsConfig::parse(text, "kinematics.yaml")
                .unwrap_err()
                .to_string();
            assert!(e.contains("kinematics.yaml") && e.contains(want), "{e}");
        }
    }
}
