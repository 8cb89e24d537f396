//! MoveIt's `ompl_planning.yaml` (in a MoveIt configuration package's `config/`): named
//! planner configurations and, per planning group, the default configuration and the motion
//! check step.
//!
//! The file as MoveIt 2 reads it:
//!
//! ```yaml
//! planning_plugins: [ompl_interface/OMPLPlanner]   # not a group: skipped
//! planner_configs:
//!   RRTConnectkConfigDefault:
//!     type: geometric::RRTConnect
//!     range: 0.0              # 0: the planner chooses
//!   PRMkConfigDefault:
//!     type: geometric::PRM
//!     max_nearest_neighbors: 10
//! arm:                        # a planning group of the SRDF
//!   default_planner_config: RRTConnectkConfigDefault
//!   planner_configs: [RRTConnectkConfigDefault, PRMkConfigDefault]
//!   longest_valid_segment_fraction: 0.005
//! ```
//!
//! What is read of a configuration: its `type` (kept as written, e.g. `geometric::RRT`; the
//! planners layer maps it), `range`, `goal_bias` and `max_nearest_neighbors`; its other keys
//! are listed in [`OmplPlannerConfig::ignored`]. What is read of a group:
//! `default_planner_config`, `planner_configs` and `longest_valid_segment_fraction`
//! (the others, e.g. `projection_evaluator`, are OMPL internals with no counterpart here). A
//! top-level mapping is a group when it has one of those three keys; every other top-level
//! key is skipped. Errors name the file and the key at fault; a group naming a configuration
//! the file does not define is not an error (MoveIt warns and goes on): the name is left out
//! and said in [`OmplPlanning::warnings`].

use std::collections::BTreeMap;
use std::path::Path;

use serde_yaml::Value;

use super::{JointSpace, RobotError};

/// A named planner configuration of `planner_configs:`.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct OmplPlannerConfig {
    /// The OMPL planner type as written (e.g. `geometric::RRTConnect`).
    pub planner_type: String,
    /// Longest tree extension (`range`); `None` where the file gives none or 0 (the
    /// planner's own default then).
    pub range: Option<f64>,
    /// Probability of sampling the goal (`goal_bias`), in `[0, 1]`.
    pub goal_bias: Option<f64>,
    /// Neighbours per roadmap vertex (`max_nearest_neighbors`), at least 1.
    pub max_nearest_neighbors: Option<usize>,
    /// The configuration's other keys (OMPL settings with no counterpart here), sorted.
    pub ignored: Vec<String>,
}

/// The entry of one planning group.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct OmplGroup {
    /// The configuration used when a request names no planner (`default_planner_config`).
    pub default_planner_config: Option<String>,
    /// The configurations offered for the group (`planner_configs`), in the file's order.
    pub planner_configs: Vec<String>,
    /// Longest motion step checked, as a fraction of the group's joint-space extent
    /// (`longest_valid_segment_fraction`), in `(0, 1]`.
    pub longest_valid_segment_fraction: Option<f64>,
}

/// An `ompl_planning.yaml` file; empty (the [`Default`]) where a robot has none.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct OmplPlanning {
    /// The file read (empty for none).
    pub source: String,
    /// Named planner configurations.
    pub configs: BTreeMap<String, OmplPlannerConfig>,
    /// Planning group entries, by group name.
    pub groups: BTreeMap<String, OmplGroup>,
    /// What was left out of the file, and why (e.g. a group naming a configuration the file
    /// does not define).
    pub warnings: Vec<String>,
}

/// The keys that make a top-level mapping a group entry.
const GROUP_KEYS: [&str; 3] = [
    "default_planner_config",
    "planner_configs",
    "longest_valid_segment_fraction",
];

impl OmplPlanning {
    /// Reads and parses `path`; errors name it.
    pub fn read(path: &Path) -> Result<Self, RobotError> {
        Self::parse(&super::read_text(path)?, &path.display().to_string())
    }

    /// Parses the text of an `ompl_planning.yaml`; `source` names it in errors.
    pub fn parse(text: &str, source: &str) -> Result<Self, RobotError> {
        let bad = |message: String| RobotError::OmplPlanning {
            source_name: source.to_string(),
            message,
        };
        let doc: Value =
            serde_yaml::from_str(text).map_err(|e| bad(format!("invalid YAML: {e}")))?;
        let mut out = OmplPlanning {
            source: source.to_string(),
            ..OmplPlanning::default()
        };
        let top = match &doc {
            Value::Null => return Ok(out),
            Value::Mapping(m) => m,
            _ => return Err(bad("the file must be a mapping".into())),
        };
        if let Some(configs) = top.get("planner_configs") {
            let configs = configs
                .as_mapping()
                .ok_or_else(|| bad("planner_configs must map names to settings".into()))?;
            for (k, v) in configs {
                let name = key_name(k)
                    .ok_or_else(|| bad(format!("planner_configs: key {k:?} is not a name")))?;
                let config =
                    parse_config(v).map_err(|m| bad(format!("planner_configs.{name}: {m}")))?;
                out.configs.insert(name, config);
            }
        }
        for (k, v) in top {
            let Some(name) = key_name(k) else { continue };
            if name == "planner_configs" {
                continue;
            }
            let Some(entry) = v.as_mapping() else {
                continue;
            };
            if !GROUP_KEYS.iter().any(|key| entry.contains_key(*key)) {
                continue;
            }
            let mut warnings = Vec::new();
            let group = parse_group(v, &out.configs, &mut warnings)
                .map_err(|m| bad(format!("{name}.{m}")))?;
            out.warnings
                .extend(warnings.into_iter().map(|w| format!("{name}.{w}")));
            out.groups.insert(name, group);
        }
        Ok(out)
    }

    /// Whether the file gave nothing (no configurations, no groups).
    pub fn is_empty(&self) -> bool {
        self.configs.is_empty() && self.groups.is_empty()
    }

    /// The named configuration `name`, if the file has one.
    pub fn config(&self, name: &str) -> Option<&OmplPlannerConfig> {
        self.configs.get(name)
    }

    /// The default configuration of `group` as `(name, configuration)`, if its entry names
    /// one.
    pub fn default_config(&self, group: &str) -> Option<(&str, &OmplPlannerConfig)> {
        let name = self.groups.get(group)?.default_planner_config.as_deref()?;
        self.configs.get(name).map(|c| (name, c))
    }

    /// The motion check step (Euclidean joint-space distance, as the planners measure it)
    /// that checks `group`'s motions at least as finely as MoveIt does with the group's
    /// `longest_valid_segment_fraction`; `None` without one.
    ///
    /// MoveIt cuts a motion into segments of at most `fraction * extent` in its own joint
    /// distance, which adds the joints' distances (an L1 norm), where `extent` adds the
    /// joints' ranges (pi for a continuous joint). An L1 length is at most `sqrt(n)` times
    /// the Euclidean one for `n` joints, so Euclidean steps of `fraction * extent / sqrt(n)`
    /// are never longer in MoveIt's measure.
    pub fn segment_resolution(&self, group: &str, space: &JointSpace) -> Option<f64> {
        let fraction = self.groups.get(group)?.longest_valid_segment_fraction?;
        let n = space.dof();
        if n == 0 {
            return None;
        }
        let extent: f64 = (0..n)
            .map(|j| {
                if space.continuous[j] {
                    std::f64::consts::PI
                } else {
                    space.upper[j] - space.lower[j]
                }
            })
            .sum();
        let step = fraction * extent / (n as f64).sqrt();
        (step.is_finite() && step > 0.0).then_some(step)
    }

    /// One line on what was read: configurations, groups with their defaults and fractions.
    pub fn summary(&self) -> String {
        if self.is_empty() {
            return format!("{}: no planner configurations or groups", self.source);
        }
        let groups: Vec<String> = self
            .groups
            .iter()
            .map(|(name, g)| {
                let mut parts = Vec::new();
                if let Some(d) = &g.default_planner_config {
                    parts.push(format!("default {d}"));
                }
                if let Some(f) = g.longest_valid_segment_fraction {
                    parts.push(format!("segment fraction {f}"));
                }
                if parts.is_empty() {
                    name.clone()
                } else {
                    format!("{name} ({})", parts.join(", "))
                }
            })
            .collect();
        format!(
            "{}: {} planner configurations; groups: {}{}",
            self.source,
            self.configs.len(),
            if groups.is_empty() {
                "none".to_string()
            } else {
                groups.join(", ")
            },
            if self.warnings.is_empty() {
                String::new()
            } else {
                format!("; {}", self.warnings.join("; "))
            }
        )
    }
}

/// A mapping key as a name (strings, and numbers written as names).
fn key_name(k: &Value) -> Option<String> {
    match k {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// A number of the file (YAML numbers; OMPL settings written as strings, e.g. `"0.05"`, too).
fn number(v: &Value) -> Option<f64> {
    match v {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
    .filter(|x: &f64| x.is_finite())
}

fn parse_config(v: &Value) -> Result<OmplPlannerConfig, String> {
    let m = v
        .as_mapping()
        .ok_or_else(|| "must be a mapping with a type".to_string())?;
    let planner_type = m
        .get("type")
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .ok_or_else(|| "type is missing (e.g. type: geometric::RRTConnect)".to_string())?
        .to_string();
    let num = |key: &str| -> Result<Option<f64>, String> {
        m.get(key)
            .map(|x| number(x).ok_or_else(|| format!("{key}: {x:?} is not a number")))
            .transpose()
    };
    let range = match num("range")? {
        Some(r) if r < 0.0 => return Err(format!("range: {r} must not be negative")),
        Some(r) if r > 0.0 => Some(r),
        _ => None,
    };
    let goal_bias = match num("goal_bias")? {
        Some(b) if !(0.0..=1.0).contains(&b) => {
            return Err(format!("goal_bias: {b} must be in [0, 1]"))
        }
        b => b,
    };
    let max_nearest_neighbors = match num("max_nearest_neighbors")? {
        Some(k) if k >= 1.0 && k.fract() == 0.0 && k <= 1.0e6 => Some(k as usize),
        Some(k) => {
            return Err(format!(
                "max_nearest_neighbors: {k} must be a whole number from 1 to 1000000"
            ))
        }
        None => None,
    };
    let mut ignored: Vec<String> = m
        .keys()
        .filter_map(key_name)
        .filter(|k| !["type", "range", "goal_bias", "max_nearest_neighbors"].contains(&k.as_str()))
        .collect();
    ignored.sort();
    Ok(OmplPlannerConfig {
        planner_type,
        range,
        goal_bias,
        max_nearest_neighbors,
        ignored,
    })
}

/// A group entry; names of configurations the file does not define are left out, each with a
/// warning in `warnings` (as MoveIt warns and goes on), so that a stale name does not keep the
/// robot from loading.
fn parse_group(
    v: &Value,
    configs: &BTreeMap<String, OmplPlannerConfig>,
    warnings: &mut Vec<String>,
) -> Result<OmplGroup, String> {
    let mut known = |name: &str, key: &str| -> bool {
        let ok = configs.contains_key(name);
        if !ok {
            warnings.push(format!(
                "{key}: '{name}' is not one of planner_configs ({}); left out",
                configs.keys().cloned().collect::<Vec<_>>().join(", ")
            ));
        }
        ok
    };
    let mut g = OmplGroup::default();
    if let Some(d) = v.get("default_planner_config") {
        let name = d
            .as_str()
            .map(str::trim)
            .filter(|n| !n.is_empty())
            .ok_or_else(|| format!("default_planner_config: {d:?} is not a name"))?;
        if known(name, "default_planner_config") {
            g.default_planner_config = Some(name.to_string());
        }
    }
    if let Some(list) = v.get("planner_configs") {
        let list = list
            .as_sequence()
            .ok_or_else(|| "planner_configs must be a list of names".to_string())?;
        for item in list {
            let name = item
                .as_str()
                .ok_or_else(|| format!("planner_configs: {item:?} is not a name"))?;
            if known(name, "planner_configs") {
                g.planner_configs.push(name.to_string());
            }
        }
    }
    if let Some(f) = v.get("longest_valid_segment_fraction") {
        let x = number(f)
            .filter(|x| *x > 0.0 && *x <= 1.0)
            .ok_or_else(|| format!("longest_valid_segment_fraction: {f:?} must be in (0, 1]"))?;
        g.longest_valid_segment_fraction = Some(x);
    }
    Ok(g)
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILE: &str = "
planning_plugins: [ompl_interface/OMPLPlanner]
request_adapters: [default_planning_request_adapters/ResolveConstraintFrames]
planner_configs:
  RRTConnectkConfigDefault:
    type: geometric::RRTConnect
    range: 0.0
  FastRRT:
    type: geometric::RRT
    range: 0.5
    goal_bias: '0.2'
  PRMkConfigDefault:
    type: geometric::PRM
    max_nearest_neighbors: 12
  SBLkConfigDefault:
    type: geometric::SBL
    range: 0.0
    projection: joints
arm:
  default_planner_config: FastRRT
  planner_configs: [RRTConnectkConfigDefault, FastRRT, SBLkConfigDefault]
  projection_evaluator: joints(j1,j2)
  longest_valid_segment_fraction: 0.01
gripper:
  planner_configs: [PRMkConfigDefault]
";

    #[test]
    fn reads_configurations_and_groups_and_skips_other_keys() {
        let o = OmplPlanning::parse(FILE, "ompl.yaml").unwrap();
        assert_eq!(o.configs.len(), 4);
        let fast = o.config("FastRRT").unwrap();
        assert_eq!(fast.planner_type, "geometric::RRT");
        assert_eq!((fast.range, fast.goal_bias), (Some(0.5), Some(0.2)));
        // range 0 means "the planner's default".
        assert_eq!(o.config("RRTConnectkConfigDefault").unwrap().range, None);
        assert_eq!(
            o.config("PRMkConfigDefault").unwrap().max_nearest_neighbors,
            Some(12)
        );
        assert_eq!(
            o.config("SBLkConfigDefault").unwrap().ignored,
            vec!["projection"]
        );
        assert_eq!(o.groups.len(), 2, "{:?}", o.groups.keys());
        let (name, c) = o.default_config("arm").unwrap();
        assert_eq!((name, c.range), ("FastRRT", Some(0.5)));
        assert!(o.default_config("gripper").is_none());
        assert_eq!(o.groups["arm"].planner_configs.len(), 3);
        assert!(o
            .summary()
            .contains("arm (default FastRRT, segment fraction 0.01)"));
    }

    #[test]
    fn segment_resolution_is_never_coarser_than_moveits() {
        let o = OmplPlanning::parse(FILE, "ompl.yaml").unwrap();
        let space = JointSpace {
            names: vec!["a".into(), "b".into(), "c".into(), "d".into()],
            lower: vec![-1.0, -2.0, -std::f64::consts::PI, 0.0],
            upper: vec![1.0, 2.0, std::f64::consts::PI, 0.5],
            continuous: vec![false, false, true, false],
            max_velocity: vec![1.0; 4],
            max_acceleration: vec![1.0; 4],
            max_jerk: vec![f64::INFINITY; 4],
        };
        let step = o.segment_resolution("arm", &space).unwrap();
        let extent = 2.0 + 4.0 + std::f64::consts::PI + 0.5;
        assert!((step - 0.01 * extent / 2.0).abs() < 1e-12, "{step}");
        // A Euclidean step of that length, spread over all joints, has an L1 length of at most
        // MoveIt's longest segment.
        let l1 = step / 2.0 * 4.0;
        assert!(l1 <= 0.01 * extent + 1e-12);
        assert!(o.segment_resolution("gripper", &space).is_none());
        assert!(o.segment_resolution("nope", &space).is_none());
    }

    #[test]
    fn bad_entries_are_named() {
        let cases = [
            (
                "planner_configs:\n  X: {range: 1}\n",
                "planner_configs.X: type is missing",
            ),
            (
                "planner_configs:\n  X: {type: geometric::RRT, goal_bias: 2}\n",
                "goal_bias: 2 must be in [0, 1]",
            ),
            (
                "planner_configs:\n  X: {type: geometric::PRM, max_nearest_neighbors: 2.5}\n",
                "max_nearest_neighbors: 2.5",
            ),
            (
                "arm:\n  longest_valid_segment_fraction: 0\n",
                "arm.longest_valid_segment_fraction",
            ),
            ("- a\n- b\n", "must be a mapping"),
            ("a: [\n", "invalid YAML"),
        ];
        for (text, want) in cases {
            let e = OmplPlanning::parse(text, "my_ompl.yaml")
                .unwrap_err()
                .to_string();
            assert!(
                e.contains("my_ompl.yaml") && e.contains(want),
                "{text}: {e}"
            );
        }
        assert!(OmplPlanning::parse("", "e.yaml").unwrap().is_empty());
        // A group naming configurations the file lacks: left out, with a warning each.
        let o = OmplPlanning::parse(
            "planner_configs:\n  X: {type: geometric::RRT}\narm:\n  default_planner_config: Y\n  \
             planner_configs: [X, Z]\n",
            "o.yaml",
        )
        .unwrap();
        assert_eq!(o.groups["arm"].default_planner_config, None);
        assert_eq!(o.groups["arm"].planner_configs, vec!["X"]);
        assert_eq!(o.warnings.len(), 2, "{:?}", o.warnings);
        assert!(o.warnings[0].starts_with("arm.default_planner_config: 'Y'"));
        assert!(o
            .summary()
            .contains("'Z' is not one of planner_configs (X); left out"));
    }
}
