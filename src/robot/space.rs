//! The joint space a planner moves in: the active joints of a planning group, their limits,
//! wrap-around for continuous joints, distance and straight-line interpolation.
//!
//! Every component that interpolates motions (the CPU checker, the CUDA kernels, the planners,
//! the trajectory re-validation) uses the step rule defined here, so that "a motion checked at
//! resolution r" means the same set of configurations everywhere.

use std::f64::consts::PI;

/// Limits and wrap-around behaviour of the active joints of a planning group.
#[derive(Clone, Debug, PartialEq)]
pub struct JointSpace {
    /// Joint names in configuration order.
    pub names: Vec<String>,
    /// Lower position limits (rad or m); `-inf`-free: continuous joints use `-PI`.
    pub lower: Vec<f64>,
    /// Upper position limits (rad or m); continuous joints use `PI`.
    pub upper: Vec<f64>,
    /// True for continuous joints (revolute without limits): distances wrap around.
    pub continuous: Vec<bool>,
    /// Velocity limits from the URDF (rad/s or m/s), always finite and positive.
    pub max_velocity: Vec<f64>,
    /// Acceleration limits (URDF has none; filled from configuration or a default).
    pub max_acceleration: Vec<f64>,
    /// Jerk limits (rad/s³ or m/s³), `f64::INFINITY` for a joint without one (the URDF has
    /// none; a joint limits file may give them). A missing entry means none either.
    pub max_jerk: Vec<f64>,
}

/// How far outside a joint limit (rad or m) a start or goal value read from outside the engine
/// (a MotionBenchMaker / MoveIt request) may lie and still count as on the limit; see
/// [`JointSpace::snap_to_limits`]. URDFs write limits rounded (Fetch's roll joints have
/// `±3.14159`, 2.7e-6 inside `±PI`) while recorded robot states reach `±PI` itself; MoveIt
/// accepts such states by clamping them. 1e-4 covers limits rounded to four or more
/// decimals and is 200 times smaller than the default motion resolution (0.02), so the
/// snapped configuration is, for collision purposes, the requested one (and it is checked
/// again anyway).
pub const LIMIT_TOLERANCE: f64 = 1e-4;

/// Shortest signed difference `b - a` for an angle, in `[-PI, PI]`.
pub fn wrapped_difference(a: f64, b: f64) -> f64 {
    let mut d = (b - a) % (2.0 * PI);
    if d > PI {
        d -= 2.0 * PI;
    } else if d < -PI {
        d += 2.0 * PI;
    }
    d
}

impl JointSpace {
    /// Number of degrees of freedom.
    pub fn dof(&self) -> usize {
        self.names.len()
    }

    /// Per-joint difference `b - a`, wrapped for continuous joints.
    pub fn difference(&self, a: &[f64], b: &[f64], out: &mut [f64]) {
        for j in 0..self.dof() {
            out[j] = if self.continuous[j] {
                wrapped_difference(a[j], b[j])
            } else {
                b[j] - a[j]
            };
        }
    }

    /// Euclidean joint-space distance (wrap-around for continuous joints).
    pub fn distance(&self, a: &[f64], b: &[f64]) -> f64 {
        let mut s = 0.0;
        for j in 0..self.dof() {
            let d = if self.continuous[j] {
                wrapped_difference(a[j], b[j])
            } else {
                b[j] - a[j]
            };
            s += d * d;
        }
        s.sqrt()
    }

    /// Number of segments a motion from `a` to `b` is cut into at `resolution` (joint-space
    /// Euclidean distance per segment). The motion is checked at the `segments + 1` configurations
    /// `a + (b - a) * i / segments`, `i = 0..=segments`.
    pub fn segments(&self, a: &[f64], b: &[f64], resolution: f64) -> usize {
        let d = self.distance(a, b);
        if resolution.is_nan() || resolution <= 0.0 || !d.is_finite() {
            return 1;
        }
        ((d / resolution).ceil() as usize).max(1)
    }

    /// Point at fraction `t` of the straight line from `a` to `b` (continuous joints take the
    /// short way round and are wrapped back into `[-PI, PI]`).
    pub fn interpolate(&self, a: &[f64], b: &[f64], t: f64, out: &mut [f64]) {
        for j in 0..self.dof() {
            if self.continuous[j] {
                let v = a[j] + wrapped_difference(a[j], b[j]) * t;
                out[j] = wrap_angle(v);
            } else {
                out[j] = a[j] + (b[j] - a[j]) * t;
            }
        }
    }

    /// A configuration drawn uniformly within the limits, one `random_range(lower..=upper)`
    /// per joint in order.
    pub fn sample_uniform<R: rand::Rng + ?Sized>(&self, rng: &mut R) -> Vec<f64> {
        (0..self.dof())
            .map(|j| rng.random_range(self.lower[j]..=self.upper[j]))
            .collect()
    }

    /// True when every value is finite and inside the limits (continuous joints: any finite value).
    pub fn within_limits(&self, q: &[f64]) -> bool {
        q.len() == self.dof()
            && (0..self.dof()).all(|j| {
                q[j].is_finite()
                    && (self.continuous[j] || (q[j] >= self.lower[j] && q[j] <= self.upper[j]))
            })
    }

    /// Moves every finite value that lies outside its joint's limits by at most `tolerance`
    /// onto the limit (continuous joints have none). Values further out, and non-finite ones,
    /// are left as they are, for [`Self::validate`] to reject with a message naming the joint.
    /// Returns how many values were moved.
    pub fn snap_to_limits(&self, q: &mut [f64], tolerance: f64) -> usize {
        let mut moved = 0;
        for (j, v) in q.iter_mut().enumerate().take(self.dof()) {
            if self.continuous[j] || !v.is_finite() {
                continue;
            }
            let (lo, hi) = (self.lower[j], self.upper[j]);
            if *v < lo && *v >= lo - tolerance {
                *v = lo;
                moved += 1;
            } else if *v > hi && *v <= hi + tolerance {
                *v = hi;
                moved += 1;
            }
        }
        moved
    }

    /// Describes the first problem with `q` (wrong length, NaN, outside limits), naming the joint.
    pub fn validate(&self, q: &[f64]) -> Result<(), String> {
        if q.len() != self.dof() {
            return Err(format!(
                "configuration has {} values but the planning group has {} joints ({})",
                q.len(),
                self.dof(),
                self.names.join(", ")
            ));
        }
        for (j, &v) in q.iter().enumerate() {
            if !v.is_finite() {
                return Err(format!(
                    "joint '{}' has a non-finite value {v}",
                    self.names[j]
                ));
            }
            if !self.continuous[j] && (v < self.lower[j] || v > self.upper[j]) {
                return Err(format!(
                    "joint '{}' value {v} is outside its limits [{}, {}]",
                    self.names[j], self.lower[j], self.upper[j]
                ));
            }
        }
        Ok(())
    }
}

/// Wraps an angle into `[-PI, PI]`.
pub fn wrap_angle(v: f64) -> f64 {
    let mut w = v % (2.0 * PI);
    if w > PI {
        w -= 2.0 * PI;
    } else if w < -PI {
        w += 2.0 * PI;
    }
    w
}

#[cfg(test)]
mod tests {
    use super::*;

    fn space() -> JointSpace {
        JointSpace {
            names: vec!["a".into(), "b".into()],
            lower: vec![-1.0, -PI],
            upper: vec![1.0, PI],
            continuous: vec![false, true],
            max_velocity: vec![1.0, 1.0],
            max_acceleration: vec![1.0, 1.0],
            max_jerk: vec![f64::INFINITY; 2],
        }
    }

    #[test]
    fn continuous_joint_takes_short_way() {
        let s = space();
        let a = [0.0, 3.0];
        let b = [0.0, -3.0];
        let d = s.distance(&a, &b);
        assert!((d - (2.0 * PI - 6.0)).abs() < 1e-12);
        let mut mid = [0.0; 2];
        s.interpolate(&a, &b, 0.5, &mut mid);
        assert!(
            (mid[1].abs() - PI).abs() < 1e-12,
            "midpoint {mid:?} must be at +-PI"
        );
    }

    #[test]
    fn segments_follow_resolution() {
        let s = space();
        assert_eq!(s.segments(&[0.0, 0.0], &[1.0, 0.0], 0.1), 10);
        assert_eq!(s.segments(&[0.0, 0.0], &[0.0, 0.0], 0.1), 1);
    }

    #[test]
    fn snap_moves_only_values_just_outside() {
        let s = space();
        let mut q = [1.0 + 5e-5, 3.5];
        assert_eq!(s.snap_to_limits(&mut q, LIMIT_TOLERANCE), 1);
        assert_eq!(q, [1.0, 3.5], "continuous joints are not snapped");
        let mut q = [-1.0 - 1e-3, 0.0];
        assert_eq!(s.snap_to_limits(&mut q, LIMIT_TOLERANCE), 0);
        assert_eq!(
            q[0],
            -1.0 - 1e-3,
            "far outside stays, for validate to reject"
        );
    }

    #[test]
    fn validate_names_the_joint() {
        let s = space();
        let e = s.validate(&[2.0, 0.0]).unwrap_err();
        assert!(e.contains("'a'") && e.contains("outside"), "{e}");
        let e = s.validate(&[f64::NAN, 0.0]).unwrap_err();
        assert!(e.contains("non-finite"), "{e}");
    }
}
