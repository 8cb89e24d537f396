//! MoveIt's `pilz_cartesian_limits.yaml` (in a MoveIt configuration package's `config/`, as
//! the Setup Assistant writes it): the Cartesian speed limits of the Pilz industrial motion
//! planner's straight-line motions.
//!
//! ```yaml
//! cartesian_limits:
//!   max_trans_vel: 1.0     # m/s
//!   max_trans_acc: 2.25    # m/s^2
//!   max_trans_dec: -5.0    # m/s^2 (its size)
//!   max_rot_vel: 1.57      # rad/s
//! ```
//!
//! Here they limit Cartesian paths (`gmp cartesian`, `~/plan_cartesian`) and the LIN motions
//! of [`crate::planners::pilz`], which move a link along straight lines as Pilz's LIN does: the
//! link moves no faster than `max_trans_vel` and turns no faster than `max_rot_vel`, both
//! scaled by the request's velocity scaling, and its acceleration stays within the smaller of
//! `max_trans_acc` and the size of `max_trans_dec`, scaled by the acceleration scaling, as
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
    /// Largest translational acceleration, m/s².
    pub max_trans_acc: Option<f64>,
    /// Largest translational deceleration (its size; the file writes it negative), m/s².
    pub max_trans_dec: Option<f64>,
}

impl CartesianLimits {
    /// The acceleration bound of the link, m/s² (the smaller of `max_trans_acc` and
    /// `max_trans_dec`: one bound for speeding up and slowing down).
    pub fn max_trans_acceleration(&self) -> Option<f64> {
        match (self.max_trans_acc, self.max_trans_dec) {
            (Some(a), Some(d)) => Some(a.min(d)),
            (a, d) => a.or(d),
        }
    }
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
        // `sign`: the sign the file writes the value with (deceleration negative; its size is
        // kept). A positive deceleration is taken as its size too, as Pilz does not mind.
        let value = |key: &str, sign: f64| -> Result<Option<f64>, RobotError> {
            match limits.get(key) {
                None => Ok(None),
                Some(v) => match v.as_f64() {
                    Some(x) if x.is_finite() && x != 0.0 && (x > 0.0 || sign < 0.0) => {
                        Ok(Some(x.abs()))
                    }
                    _ => Err(bad(format!(
                        "cartesian_limits.{key}: {v:?} must be a {} number",
                        if sign < 0.0 { "non-zero" } else { "positive" }
                    ))),
                },
            }
        };
        Ok(CartesianLimits {
            source: source.to_string(),
            max_trans_vel: value("max_trans_vel", 1.0)?,
            max_rot_vel: value("max_rot_vel", 1.0)?,
            max_trans_acc: value("max_trans_acc", 1.0)?,
            max_trans_dec: value("max_trans_dec", -1.0)?,
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
        assert_eq!((l.max_trans_acc, l.max_trans_dec), (Some(2.25), Some(5.0)));
        assert_eq!(l.max_trans_acceleration(), Some(2.25));
        for (text, want) in [
            (
                "cartesian_limits:\n  max_trans_vel: -1\n",
                "cartesian_limits.max_trans_vel",
            ),
            (
                "cartesian_limits:\n  max_rot_vel: fast\n",
                "cartesian_limits.max_rot_vel",
            ),
            (
                "cartesian_limits:\n  max_trans_acc: -2\n",
                "cartesian_limits.max_trans_acc",
            ),
            (
                "cartesian_limits:\n  max_trans_dec: 0\n",
                "cartesian_limits.max_trans_dec",
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
