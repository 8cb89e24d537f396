//! MoveIt's `pilz_cartesian_limits.yaml` (in a MoveIt configuration package's `config/`, as
//! the Setup Assistant writes it): the Cartesian speed limits of the Pilz industrial motion
//! planner's straight-line motions.
//!
//! ```yaml
//! cartesian_limits:
//!   max_trans_vel: 1.0     # m/s
//!   max_trans_acc: 2.25    # m/s^2 (not used here)
//!   max_trans_dec: -5.0    # m/s^2 (not used here)
//!   max_rot_vel: 1.57      # rad/s
//! ```
//!
//! Here they limit Cartesian paths (`gmp cartesian`, `~/plan_cartesian`), which move a link
//! along straight lines as Pilz's LIN does: the link moves no faster than `max_trans_vel`
//! and turns no faster than `max_rot_vel`, both scaled by the request's velocity scaling as
//! Pilz scales them. Errors name the file and key.

use serde_yaml::Value;

use super::RobotError;

/// The Cartesian limits of a `pilz_cartesian_limits.yaml`.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct CartesianLimits {
    /// The file read.
    pub source: String,
    /// Largest translational speed, m/s.
    pub max_trans_vel: Option<f64>,
    /// Largest rotational speed, rad/s.
    pub max_rot_vel: Option<f64>,
}

impl CartesianLimits {
    /// Reads and parses `path`; errors name it.
    pub fn read(path: &std::path::Path) -> Result<Self, RobotError> {
        Self::parse(&super::read_text(path)?, &path.display().to_string())
    }

    /// Parses the text of a `pilz_cartesian_limits.yaml`; `source` names it in errors.
    pub fn parse(text: &str, source: &str) -> Result<Self, RobotError> {
        let bad = |message: String| RobotError::CartesianLimits {
            source_name: source.to_string(),
            message,
        };
        let doc: Value =
            serde_yaml::from_str(text).map_err(|e| bad(format!("invalid YAML: {e}")))?;
        let limits = doc
            .get("cartesian_limits")
            .and_then(Value::as_mapping)
            .ok_or_else(|| bad("cartesian_limits must be a mapping".into()))?;
        let speed = |key: &str| -> Result<Option<f64>, RobotError> {
            match limits.get(key) {
                None => Ok(None),
                Some(v) => match v.as_f64() {
                    Some(x) if x.is_finite() && x > 0.0 => Ok(Some(x)),
                    _ => Err(bad(format!(
                        "cartesian_limits.{key}: {v:?} must be a positive number"
                    ))),
                },
            }
        };
        Ok(CartesianLimits {
            source: source.to_string(),
            max_trans_vel: speed("max_trans_vel")?,
            max_rot_vel: speed("max_rot_vel")?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_speeds_and_names_bad_ones() {
        let l = CartesianLimits::parse(
            "cartesian_limits:\n  max_trans_vel: 1\n  max_trans_acc: 2.25\n  \
             max_trans_dec: -5\n  max_rot_vel: 1.57\n",
            "pilz.yaml",
        )
        .unwrap();
        assert_eq!((l.max_trans_vel, l.max_rot_vel), (Some(1.0), Some(1.57)));
        for (text, want) in [
            (
                "cartesian_limits:\n  max_trans_vel: -1\n",
                "cartesian_limits.max_trans_vel",
            ),
            (
                "cartesian_limits:\n  max_rot_vel: fast\n",
                "cartesian_limits.max_rot_vel",
            ),
            ("limits: {}\n", "cartesian_limits must be a mapping"),
        ] {
            let e = CartesianLimits::parse(text, "pilz.yaml")
                .unwrap_err()
                .to_string();
            assert!(e.contains("pilz.yaml") && e.contains(want), "{e}");
        }
    }
}
