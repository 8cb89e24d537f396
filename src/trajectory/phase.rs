//! Time-optimal speeds along a geometric path under joint velocity and acceleration limits, by
//! forward and backward passes in the phase plane over a grid of the path parameter.
//!
//! The path `q(s)` is given at grid points by its first and second derivatives in `s`. At path
//! speed `ṡ` and path acceleration `s̈`, joint `j` moves at `q'_j ṡ` and accelerates at
//! `q'_j s̈ + q''_j ṡ²`. Each grid point gets the largest speed at which some `s̈` keeps every
//! joint within its limits (the velocity limits and, where the path curves, the acceleration
//! limits); a forward pass from the start speed accelerates as hard as allowed, a backward pass
//! from the end speed decelerates as hard as allowed, and the profile is the lower of the two.
//! Between grid points the path acceleration is constant (`ṡ²` linear in `s`). The grid must
//! be fine where the path curves: the limits are imposed at grid points only, so callers time
//! with a share of the limits and check the points they emit against the whole.

use super::TrajectoryPoint;
use crate::robot::JointSpace;

/// A path given at grid points, for [`speeds`].
pub(crate) struct Grid {
    /// Path parameter step from each grid point to the next (`n` steps, 0 allowed: a point
    /// where the derivatives jump, listed once for each side).
    pub ds: Vec<f64>,
    /// `dq/ds` at each of the `n + 1` grid points.
    pub d: Vec<Vec<f64>>,
    /// `d²q/ds²` at each grid point.
    pub dd: Vec<Vec<f64>>,
    /// Largest path speed at each grid point besides the joint limits (`f64::INFINITY`: none;
    /// 0: a stop).
    pub speed_cap: Vec<f64>,
    /// Largest path acceleration (either sign) at each grid point besides the joint limits.
    pub accel_cap: Vec<f64>,
}

impl Grid {
    /// An empty grid for `points` grid points.
    pub fn with_capacity(points: usize) -> Grid {
        Grid {
            ds: Vec::with_capacity(points),
            d: Vec::with_capacity(points),
            dd: Vec::with_capacity(points),
            speed_cap: Vec::with_capacity(points),
            accel_cap: Vec::with_capacity(points),
        }
    }

    /// Adds a grid point `ds` after the last one (`ds` is ignored for the first).
    pub fn push(&mut self, ds: f64, d: Vec<f64>, dd: Vec<f64>, caps: (f64, f64)) {
        if !self.d.is_empty() {
            self.ds.push(ds);
        }
        self.d.push(d);
        self.dd.push(dd);
        self.speed_cap.push(caps.0);
        self.accel_cap.push(caps.1);
    }

    /// The range of the path acceleration at grid point `i` moving at path speed `sd` (empty,
    /// `lo > hi`, where none keeps the joints within `amax`).
    fn range(&self, i: usize, sd: f64, amax: &[f64]) -> (f64, f64) {
        let cap = self.accel_cap[i];
        let (mut lo, mut hi) = (-cap, cap);
        for ((&d, &dd), &a) in self.d[i].iter().zip(&self.dd[i]).zip(amax) {
            let centripetal = dd * sd * sd;
            if d.abs() < 1e-12 {
                if centripetal.abs() > a {
                    return (1.0, -1.0);
                }
                continue;
            }
            let (x, y) = ((-a - centripetal) / d, (a - centripetal) / d);
            lo = lo.max(x.min(y));
            hi = hi.min(x.max(y));
        }
        (lo, hi)
    }

    /// The largest path speed at grid point `i` within `vmax`, the speed cap, and at which
    /// some path acceleration keeps the joints within `amax` (and the acceleration cap).
    ///
    /// At `ṡ² = x` joint `j` (moving, `q'_j ≠ 0`) allows path accelerations within
    /// `−(q''_j/q'_j) x ± a_j/|q'_j|`; two joints' ranges meet while
    /// `(q''_j/q'_j − q''_i/q'_i) x ≤ a_i/|q'_i| + a_j/|q'_j|`, and a joint that does not move
    /// along the path needs `|q''_j| x ≤ a_j`. The largest `x` meeting all of these (the
    /// acceleration cap counts as one more range, `0 ± cap`) is the answer's square.
    fn top_speed(&self, i: usize, vmax: &[f64], amax: &[f64]) -> f64 {
        let mut top = self.speed_cap[i].min(1e6);
        for (&d, &v) in self.d[i].iter().zip(vmax) {
            if d.abs() > 1e-12 {
                top = top.min(v / d.abs());
            }
        }
        // Each moving joint's range as (slope q''/q', half width a/|q'|); the cap's.
        let mut ranges: Vec<(f64, f64)> = Vec::with_capacity(amax.len() + 1);
        let mut x_max = top * top;
        for ((&d, &dd), &a) in self.d[i].iter().zip(&self.dd[i]).zip(amax) {
            if d.abs() > 1e-12 {
                ranges.push((dd / d, a / d.abs()));
            } else if dd.abs() > 0.0 {
                x_max = x_max.min(a / dd.abs());
            }
        }
        if self.accel_cap[i].is_finite() {
            ranges.push((0.0, self.accel_cap[i]));
        }
        for (k, &(si, wi)) in ranges.iter().enumerate() {
            for &(sj, wj) in &ranges[k + 1..] {
                let slope = (sj - si).abs();
                if slope > 0.0 {
                    x_max = x_max.min((wi + wj) / slope);
                }
            }
        }
        x_max.max(0.0).sqrt()
    }
}

/// The fastest path speeds at the grid points of `grid`, from `sd0` at the first to `sd1` at
/// the last, with the joints within `vmax` and `amax` at the grid points; `None` where an end
/// speed is above what the limits allow there or the profile cannot meet it.
pub(crate) fn speeds(
    grid: &Grid,
    vmax: &[f64],
    amax: &[f64],
    (sd0, sd1): (f64, f64),
) -> Option<Vec<f64>> {
    let n = grid.ds.len();
    if grid.d.len() != n + 1 {
        return None;
    }
    let limit: Vec<f64> = (0..=n).map(|i| grid.top_speed(i, vmax, amax)).collect();
    if sd0 > limit[0] * (1.0 + 1e-9) || sd1 > limit[n] * (1.0 + 1e-9) {
        return None;
    }
    let mut forward = vec![0.0; n + 1];
    forward[0] = sd0.min(limit[0]);
    for i in 0..n {
        let (_, hi) = grid.range(i, forward[i], amax);
        let sq = forward[i] * forward[i] + 2.0 * hi * grid.ds[i];
        forward[i + 1] = sq.max(0.0).sqrt().min(limit[i + 1]);
    }
    let mut backward = vec![0.0; n + 1];
    backward[n] = sd1.min(limit[n]);
    for i in (1..=n).rev() {
        let (lo, _) = grid.range(i, backward[i], amax);
        let sq = backward[i] * backward[i] - 2.0 * lo * grid.ds[i - 1];
        backward[i - 1] = sq.max(0.0).sqrt().min(limit[i - 1]);
    }
    let sd: Vec<f64> = forward
        .iter()
        .zip(&backward)
        .map(|(f, b)| f.min(*b))
        .collect();
    if (sd[0] - sd0).abs() > 1e-9 * sd0.max(1.0) || (sd[n] - sd1).abs() > 1e-9 * sd1.max(1.0) {
        return None;
    }
    Some(sd)
}

/// The path acceleration of step `i` of a profile (constant along it; 0 for a step of length 0).
pub(crate) fn step_acceleration(grid: &Grid, sd: &[f64], i: usize) -> f64 {
    let ds = grid.ds[i];
    if ds > 0.0 {
        (sd[i + 1] * sd[i + 1] - sd[i] * sd[i]) / (2.0 * ds)
    } else {
        0.0
    }
}

/// The time of each step of a profile (`None` where a step of positive length is crossed at
/// speed 0 at both ends).
pub(crate) fn step_times(grid: &Grid, sd: &[f64]) -> Option<Vec<f64>> {
    grid.ds
        .iter()
        .enumerate()
        .map(|(i, &ds)| {
            if ds <= 0.0 {
                return Some(0.0);
            }
            let mean = 0.5 * (sd[i] + sd[i + 1]);
            (mean > 0.0).then(|| ds / mean)
        })
        .collect()
}

/// Why the first point of `points` past the joint velocity or acceleration limits (times
/// `scales`, with a relative slack for rounding) fails, if one does.
pub(crate) fn over_limits(
    space: &JointSpace,
    points: &[TrajectoryPoint],
    (vel_scale, acc_scale): (f64, f64),
) -> Option<String> {
    const SLACK: f64 = 1e-9;
    for p in points {
        for j in 0..space.dof() {
            if p.velocities[j].abs() > space.max_velocity[j] * vel_scale * (1.0 + SLACK) {
                return Some(format!(
                    "joint '{}' would move at {:.3} rad/s, over its limit",
                    space.names[j], p.velocities[j]
                ));
            }
            if p.accelerations[j].abs() > space.max_acceleration[j] * acc_scale * (1.0 + SLACK) {
                return Some(format!(
                    "joint '{}' would accelerate at {:.3} rad/s², over its limit",
                    space.names[j], p.accelerations[j]
                ));
            }
        }
    }
    None
}
