//! Timing a dense path without stopping at its waypoints (Cartesian paths: hundreds of
//! waypoints a centimetre apart, where stopping at each would crawl).
//!
//! The trajectory's points are the path's waypoints (consecutive repeats dropped). Between
//! two points a controller interpolates with the cubic (Hermite) spline through the points'
//! positions and velocities, as a ROS joint trajectory controller does. The timing keeps that
//! spline within the limits:
//!
//! - A scalar speed `ṡ` along the path (one unit of `s` per segment) is capped at each point by
//!   the joint velocity limits of its two segments and by the turn between them (the velocity
//!   change at a corner, `|d_k - d_{k-1}| ṡ²`, within the acceleration limit), then limited by
//!   forward and backward passes with the acceleration limits along each segment, from rest at
//!   the start to rest at the end.
//! - Each point's velocity is the path speed there times the mean of its two segments'
//!   steps (within the velocity limits: the speed is capped by both segments). The
//!   three-point derivative of the positions was tried first: on the bundled arm it gave a
//!   10 % longer trajectory and a spline 1.6 times farther from the straight segments (it
//!   leans the first point's velocity toward the faster second segment).
//! - Every segment's spline is then checked: its acceleration at both ends (the spline's
//!   acceleration is linear between points) and its largest velocity. Where a limit is passed,
//!   the speed caps at both ends of the segment are lowered and the passes repeated.
//!
//! If that does not settle within [`MAX_ROUNDS`] rounds, the path is timed with a stop at
//! every waypoint instead (always within the limits). The spline leaves the straight segments
//! between points by at most [`ThroughTiming::spline_deviation`] in joint space; the collision
//! checks cover the straight segments.

use super::TrajectoryPoint;
use super::{
    check_waypoints, parameterize, scaled_limits, Sampling, SegmentCaps, Trajectory,
    TrajectoryError,
};
use crate::robot::JointSpace;

/// Rounds of lowering speed caps before falling back to stopping at every waypoint.
pub const MAX_ROUNDS: usize = 200;

/// Factor applied to a violating segment's end speed caps per round.
const CAP_SHRINK: f64 = 0.9;

/// Share of the velocity limits the speed caps plan with: the spline through the points
/// overshoots the piecewise-constant profile a little where the path curves, and that
/// overshoot must stay within the rest.
const PLAN_SHARE: f64 = 0.9;

/// Share of the acceleration limits the passes give to speeding up and slowing down along the
/// path. The spline's accelerations at the points reach about 1.5 times the profile's where it
/// changes from speeding up to cruising.
const ALONG_SHARE: f64 = 0.5;

/// Share of the acceleration limits given to the turns between segments. Together with
/// [`ALONG_SHARE`] below 1, which leaves room for both at once; measured on a dense arc, this
/// split settles in one round, where larger shares took tens of rounds of lowered caps and
/// ended slower.
const TURN_SHARE: f64 = 0.3;

/// Relative slack on the limits in the spline check (rounding only).
const LIMIT_SLACK: f64 = 1e-9;

/// A path timed through its waypoints.
#[derive(Clone, Debug, PartialEq)]
pub struct ThroughTiming {
    /// The trajectory: one point per waypoint (consecutive repeats dropped).
    pub trajectory: Trajectory,
    /// A bound on the joint-space (Euclidean) distance between the cubic spline through the
    /// points and the line through each segment's two points (0 when stopped at every
    /// waypoint).
    pub spline_deviation: f64,
    /// Whether the fallback was taken: a stop at every waypoint.
    pub stopped_at_waypoints: bool,
}

/// Times `path` (group configurations) through its waypoints with the joint limits of
/// `space` scaled by `vel_scale` and `acc_scale` (see the module documentation). Positions of
/// continuous joints are unwrapped.
pub fn time_parameterize_through(
    space: &JointSpace,
    path: &[Vec<f64>],
    vel_scale: f64,
    acc_scale: f64,
) -> Result<ThroughTiming, TrajectoryError> {
    time_through_capped(space, path, vel_scale, acc_scale, None)
}

/// [`time_parameterize_through`] with the path speed of segment `k` (path waypoint `k` to
/// `k + 1`) within `caps` where given.
pub(super) fn time_through_capped(
    space: &JointSpace,
    path: &[Vec<f64>],
    vel_scale: f64,
    acc_scale: f64,
    caps: Option<&SegmentCaps>,
) -> Result<ThroughTiming, TrajectoryError> {
    check_waypoints(space, path)?;
    let (vmax, amax) = scaled_limits(space, vel_scale, acc_scale)?;
    let dof = space.dof();
    // Unwrapped positions without consecutive repeats, and the waypoints they came from.
    let mut delta = vec![0.0; dof];
    let mut pos: Vec<Vec<f64>> = vec![path[0].clone()];
    let mut kept: Vec<Vec<f64>> = vec![path[0].clone()];
    // The cap of every kept segment.
    let mut kept_caps = SegmentCaps::default();
    for (k, w) in path.windows(2).enumerate() {
        space.difference(&w[0], &w[1], &mut delta);
        if delta.iter().all(|d| *d == 0.0) {
            continue;
        }
        if let Some(c) = caps {
            kept_caps.speed.push(SegmentCaps::cap(&c.speed, k));
            kept_caps
                .acceleration
                .push(SegmentCaps::cap(&c.acceleration, k));
        }
        let prev = &pos[pos.len() - 1];
        let next: Vec<f64> = (0..dof)
            .map(|j| {
                if space.continuous[j] {
                    prev[j] + delta[j]
                } else {
                    w[1][j]
                }
            })
            .collect();
        pos.push(next);
        kept.push(w[1].clone());
    }
    let n = pos.len() - 1;
    if n == 0 {
        return Ok(ThroughTiming {
            trajectory: Trajectory {
                joint_names: space.names.clone(),
                points: vec![TrajectoryPoint {
                    positions: pos[0].clone(),
                    velocities: vec![0.0; dof],
                    accelerations: vec![0.0; dof],
                    time_from_start: 0.0,
                }],
            },
            spline_deviation: 0.0,
            stopped_at_waypoints: false,
        });
    }
    let d: Vec<Vec<f64>> = (0..n)
        .map(|k| (0..dof).map(|j| pos[k + 1][j] - pos[k][j]).collect())
        .collect();
    // Per segment: the largest speed (segments per second) and acceleration of `s`.
    let bound = |lim: &[f64], v: &[f64]| {
        (0..dof)
            .filter(|&j| v[j] != 0.0)
            .map(|j| lim[j] / v[j].abs())
            .fold(f64::INFINITY, f64::min)
    };
    let vplan: Vec<f64> = vmax.iter().map(|v| v * PLAN_SHARE).collect();
    let aplan: Vec<f64> = amax.iter().map(|a| a * ALONG_SHARE).collect();
    let acorner: Vec<f64> = amax.iter().map(|a| a * TURN_SHARE).collect();
    let seg_speed: Vec<f64> = d
        .iter()
        .enumerate()
        .map(|(k, dk)| bound(&vplan, dk).min(SegmentCaps::cap(&kept_caps.speed, k)))
        .collect();
    let seg_acc: Vec<f64> = d
        .iter()
        .enumerate()
        .map(|(k, dk)| bound(&aplan, dk).min(SegmentCaps::cap(&kept_caps.acceleration, k)))
        .collect();
    // Per point: the speed cap (0 at the ends).
    let mut cap = vec![0.0; n + 1];
    let mut turn = vec![0.0; dof];
    for k in 1..n {
        for j in 0..dof {
            turn[j] = d[k][j] - d[k - 1][j];
        }
        let corner = bound(&acorner, &turn).sqrt();
        cap[k] = seg_speed[k - 1].min(seg_speed[k]).min(corner);
    }
    for _ in 0..MAX_ROUNDS {
        let speeds = passes(&cap, &seg_acc);
        let times = speeds_to_times(&speeds);
        let timed = splines(&pos, &speeds, &times, &vmax, &amax);
        if timed.violating.is_empty() {
            return Ok(ThroughTiming {
                trajectory: Trajectory {
                    joint_names: space.names.clone(),
                    points: timed.points,
                },
                spline_deviation: timed.deviation,
                stopped_at_waypoints: false,
            });
        }
        for k in timed.violating {
            cap[k] *= CAP_SHRINK;
            cap[k + 1] *= CAP_SHRINK;
        }
    }
    // One step per segment: the points are the waypoints, each reached at rest.
    let trajectory = parameterize(
        space,
        &kept,
        (vel_scale, acc_scale),
        Sampling::Steps(f64::INFINITY),
        caps.map(|_| &kept_caps),
    )?;
    Ok(ThroughTiming {
        trajectory,
        spline_deviation: 0.0,
        stopped_at_waypoints: true,
    })
}

/// The speed of `s` at every point: at most `cap`, reachable from rest at the start and able
/// to stop at the end with `seg_acc` along each segment (one unit of `s` long).
fn passes(cap: &[f64], seg_acc: &[f64]) -> Vec<f64> {
    let n = cap.len() - 1;
    let mut v = cap.to_vec();
    v[0] = 0.0;
    for k in 0..n {
        v[k + 1] = v[k + 1].min((v[k] * v[k] + 2.0 * seg_acc[k]).sqrt());
    }
    v[n] = 0.0;
    for k in (0..n).rev() {
        v[k] = v[k].min((v[k + 1] * v[k + 1] + 2.0 * seg_acc[k]).sqrt());
    }
    v
}

/// The time of every point when `s` changes speed uniformly along each segment.
fn speeds_to_times(v: &[f64]) -> Vec<f64> {
    let mut t = vec![0.0; v.len()];
    for k in 1..v.len() {
        // Both ends at rest only for a one-segment path with an infinite acceleration bound,
        // which finite limits exclude; guard anyway.
        let mean = 0.5 * (v[k - 1] + v[k]);
        t[k] = t[k - 1] + if mean > 0.0 { 1.0 / mean } else { 1.0 };
    }
    t
}

/// Points with velocities and accelerations for the times `t`, the segments whose spline
/// passes a limit, and the spline's largest deviation from the straight segments.
struct Splines {
    points: Vec<TrajectoryPoint>,
    violating: Vec<usize>,
    deviation: f64,
}

fn splines(pos: &[Vec<f64>], speed: &[f64], t: &[f64], vmax: &[f64], amax: &[f64]) -> Splines {
    let n = pos.len() - 1;
    let dof = vmax.len();
    let tau: Vec<f64> = (0..n).map(|k| t[k + 1] - t[k]).collect();
    let chord = |k: usize, j: usize| (pos[k + 1][j] - pos[k][j]) / tau[k];
    // The path speed times the mean of the two segments' directions inside, rest at both
    // ends.
    let mut vel = vec![vec![0.0; dof]; n + 1];
    for k in 1..n {
        for (j, v) in vel[k].iter_mut().enumerate() {
            *v = speed[k] * 0.5 * (pos[k + 1][j] - pos[k - 1][j]);
        }
    }
    let mut acc_in = vec![vec![0.0; dof]; n + 1];
    let mut acc_out = vec![vec![0.0; dof]; n + 1];
    let mut violating = Vec::new();
    let mut deviation = 0.0f64;
    let mut dir = vec![0.0; dof];
    for k in 0..n {
        let mut bad = false;
        let len = (0..dof).map(|j| chord(k, j).powi(2)).sum::<f64>().sqrt();
        for (j, d) in dir.iter_mut().enumerate() {
            *d = if len > 0.0 { chord(k, j) / len } else { 0.0 };
        }
        // Off the segment's line: the spline minus the uniform motion along the chord is
        // h (s(1-s)^2 (v0 - c) - s^2(1-s) (v1 - c)); both basis functions peak at 4/27, and
        // only the parts of v0 - c and v1 - c across the chord leave the line.
        let across = |v: &[f64]| {
            let along: f64 = (0..dof).map(|j| (v[j] - chord(k, j)) * dir[j]).sum();
            (0..dof)
                .map(|j| (v[j] - chord(k, j) - along * dir[j]).powi(2))
                .sum::<f64>()
                .sqrt()
        };
        deviation = deviation.max(tau[k] * 4.0 / 27.0 * (across(&vel[k]) + across(&vel[k + 1])));
        for j in 0..dof {
            let (c, v0, v1, h) = (chord(k, j), vel[k][j], vel[k + 1][j], tau[k]);
            let a0 = (6.0 * c - 4.0 * v0 - 2.0 * v1) / h;
            let a1 = (-6.0 * c + 2.0 * v0 + 4.0 * v1) / h;
            acc_out[k][j] = a0;
            acc_in[k + 1][j] = a1;
            let alim = amax[j] * (1.0 + LIMIT_SLACK);
            bad |= a0.abs() > alim || a1.abs() > alim;
            // The velocity is quadratic in the segment's fraction u: its extremum inside.
            let den = 12.0 * c - 6.0 * v0 - 6.0 * v1;
            if den != 0.0 {
                let u = (6.0 * c - 4.0 * v0 - 2.0 * v1) / den;
                if u > 0.0 && u < 1.0 {
                    let vu = c * 6.0 * u * (1.0 - u)
                        + v0 * (1.0 - 4.0 * u + 3.0 * u * u)
                        + v1 * (3.0 * u * u - 2.0 * u);
                    bad |= vu.abs() > vmax[j] * (1.0 + LIMIT_SLACK);
                }
            }
        }
        if bad {
            violating.push(k);
        }
    }
    let points = (0..=n)
        .map(|k| TrajectoryPoint {
            positions: pos[k].clone(),
            velocities: vel[k].clone(),
            accelerations: (0..dof)
                .map(|j| match k {
                    0 => acc_out[0][j],
                    _ if k == n => acc_in[n][j],
                    _ => 0.5 * (acc_in[k][j] + acc_out[k][j]),
                })
                .collect(),
            time_from_start: t[k],
        })
        .collect();
    Splines {
        points,
        violating,
        deviation,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trajectory::follows_path;

    fn space(continuous: bool) -> JointSpace {
        JointSpace {
            names: vec!["a".into(), "b".into()],
            lower: vec![-3.0, -3.0],
            upper: vec![3.0, 3.0],
            continuous: vec![false, continuous],
            max_velocity: vec![1.0, 2.0],
            max_acceleration: vec![2.0, 3.0],
            max_jerk: vec![f64::INFINITY; 2],
        }
    }

    /// The spline between consecutive points: (max |velocity|, max |acceleration|) per joint,
    /// sampled finely, for an independent check of the limits.
    fn sampled_extremes(traj: &Trajectory, dof: usize) -> (Vec<f64>, Vec<f64>) {
        let mut vm = vec![0.0f64; dof];
        let mut am = vec![0.0f64; dof];
        for w in traj.points.windows(2) {
            let h = w[1].time_from_start - w[0].time_from_start;
            for j in 0..dof {
                let (p0, p1) = (w[0].positions[j], w[1].positions[j]);
                let (m0, m1) = (w[0].velocities[j] * h, w[1].velocities[j] * h);
                for i in 0..=50 {
                    let u = i as f64 / 50.0;
                    // Derivatives of the Hermite basis in u, divided by h (h^2).
                    let dv = (6.0 * u * u - 6.0 * u) * p0
                        + (3.0 * u * u - 4.0 * u + 1.0) * m0
                        + (-6.0 * u * u + 6.0 * u) * p1
                        + (3.0 * u * u - 2.0 * u) * m1;
                    let da = (12.0 * u - 6.0) * p0
                        + (6.0 * u - 4.0) * m0
                        + (-12.0 * u + 6.0) * p1
                        + (6.0 * u - 2.0) * m1;
                    vm[j] = vm[j].max((dv / h).abs());
                    am[j] = am[j].max((da / (h * h)).abs());
                }
            }
        }
        (vm, am)
    }

    fn arc(points: usize, radius: f64, sweep: f64) -> Vec<Vec<f64>> {
        (0..points)
            .map(|i| {
                let t = sweep * i as f64 / (points - 1) as f64;
                vec![radius * t.cos() - radius, radius * t.sin()]
            })
            .collect()
    }

    #[test]
    fn a_dense_arc_is_timed_through_its_points_within_the_limits() {
        let s = space(false);
        let path = arc(200, 1.0, 2.0);
        let timed = time_parameterize_through(&s, &path, 1.0, 1.0).expect("timed");
        assert!(!timed.stopped_at_waypoints);
        let traj = &timed.trajectory;
        assert_eq!(traj.points.len(), path.len());
        follows_path(&s, &path, traj).expect("on the path");
        // Moving through: interior points are not at rest.
        let moving = traj.points[1..traj.points.len() - 1]
            .iter()
            .filter(|p| p.velocities.iter().any(|v| v.abs() > 1e-6))
            .count();
        assert_eq!(moving, path.len() - 2);
        let first = &traj.points[0];
        let last = &traj.points[traj.points.len() - 1];
        assert!(first
            .velocities
            .iter()
            .chain(&last.velocities)
            .all(|v| *v == 0.0));
        let (vm, am) = sampled_extremes(traj, 2);
        for j in 0..2 {
            assert!(
                vm[j] <= s.max_velocity[j] * (1.0 + 1e-6),
                "joint {j} velocity {}",
                vm[j]
            );
            assert!(
                am[j] <= s.max_acceleration[j] * (1.0 + 1e-6),
                "joint {j} acc {}",
                am[j]
            );
            for p in &traj.points {
                assert!(p.velocities[j].abs() <= s.max_velocity[j] * (1.0 + 1e-9));
                assert!(p.accelerations[j].abs() <= s.max_acceleration[j] * (1.0 + 1e-9));
            }
        }
        // Far faster than stopping at each of the 199 corners.
        let stopped = parameterize(&s, &path, (1.0, 1.0), Sampling::Steps(f64::INFINITY), None)
            .expect("stopped");
        assert!(
            traj.duration() < 0.5 * stopped.duration(),
            "{} vs {}",
            traj.duration(),
            stopped.duration()
        );
        assert!(timed.spline_deviation < 1e-3, "{}", timed.spline_deviation);
    }

    #[test]
    fn scaling_slows_the_trajectory_and_keeps_the_scaled_limits() {
        let s = space(false);
        let path = arc(60, 0.5, 1.5);
        let full = time_parameterize_through(&s, &path, 1.0, 1.0).expect("full");
        let slow = time_parameterize_through(&s, &path, 0.25, 0.25).expect("slow");
        assert!(slow.trajectory.duration() > 1.9 * full.trajectory.duration());
        let (vm, am) = sampled_extremes(&slow.trajectory, 2);
        for j in 0..2 {
            assert!(vm[j] <= 0.25 * s.max_velocity[j] * (1.0 + 1e-6));
            assert!(am[j] <= 0.25 * s.max_acceleration[j] * (1.0 + 1e-6));
        }
    }

    #[test]
    fn continuous_joints_are_unwrapped_and_repeats_dropped() {
        let s = space(true);
        // Joint b crosses +PI to -PI; one waypoint repeated.
        let mut path: Vec<Vec<f64>> = (0..20)
            .map(|i| {
                let b = 3.0 + 0.02 * i as f64;
                vec![0.01 * i as f64, crate::robot::wrap_angle(b)]
            })
            .collect();
        path.insert(5, path[4].clone());
        let timed = time_parameterize_through(&s, &path, 1.0, 1.0).expect("timed");
        let pts = &timed.trajectory.points;
        assert_eq!(pts.len(), 20);
        for w in pts.windows(2) {
            assert!((w[1].positions[1] - w[0].positions[1] - 0.02).abs() < 1e-9);
            assert!(w[1].time_from_start > w[0].time_from_start);
        }
        follows_path(&s, &path, &timed.trajectory).expect("on the path");
    }

    #[test]
    fn a_single_configuration_is_one_point_at_rest_and_bad_scales_are_named() {
        let s = space(false);
        let timed = time_parameterize_through(&s, &[vec![0.1, 0.2], vec![0.1, 0.2]], 1.0, 1.0)
            .expect("timed");
        assert_eq!(timed.trajectory.points.len(), 1);
        assert_eq!(timed.trajectory.duration(), 0.0);
        let err = time_parameterize_through(&s, &[vec![0.0, 0.0]], 0.0, 1.0).unwrap_err();
        assert!(err.to_string().contains("vel_scale"), "{err}");
        let err = time_parameterize_through(&s, &[], 1.0, 1.0).unwrap_err();
        assert!(matches!(err, TrajectoryError::EmptyPath));
    }

    #[test]
    fn a_sharp_reversal_is_still_within_the_limits() {
        // Back and forth: the turn caps the speed at the reversal to zero-ish.
        let s = space(false);
        let mut path: Vec<Vec<f64>> = (0..30).map(|i| vec![0.02 * i as f64, 0.0]).collect();
        path.extend((0..30).rev().map(|i| vec![0.02 * i as f64, 0.01]));
        let timed = time_parameterize_through(&s, &path, 1.0, 1.0).expect("timed");
        let (vm, am) = sampled_extremes(&timed.trajectory, 2);
        for j in 0..2 {
            assert!(vm[j] <= s.max_velocity[j] * (1.0 + 1e-6), "v {j} {}", vm[j]);
            assert!(
                am[j] <= s.max_acceleration[j] * (1.0 + 1e-6),
                "a {j} {}",
                am[j]
            );
        }
        follows_path(&s, &path, &timed.trajectory).expect("on the path");
    }
}
