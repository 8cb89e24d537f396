//! A Cartesian speed limit for one link (MoveIt's `max_cartesian_speed` with
//! `cartesian_speed_limited_link`): a tool moving near people, a camera that blurs, a glass
//! of water.
//!
//! The link's speed is measured along the trajectory as a controller follows it
//! ([`Trajectory::sample`]): at every point and at sub-steps between points (at least
//! [`SUBSTEPS`] per interval and one per [`MAX_SAMPLE_GAP`] seconds), as the length of the link
//! origin's velocity `J(q) q'`, taken from forward kinematics by a central difference along
//! `q'`. A trajectory faster than the limit is slowed uniformly ([`Trajectory::scale_time`]):
//! every time is stretched by one factor, so the path (and its collision check) is unchanged,
//! joint velocities shrink by the factor, accelerations by its square and jerks by its cube,
//! and the link's speed everywhere by the factor. The factor aims [`MARGIN`] below the limit,
//! so that a peak between two samples stays under it.

use crate::robot::{KinematicTree, PlanningGroup};

use super::Trajectory;

/// Sub-steps measured between two trajectory points at least.
pub const SUBSTEPS: usize = 16;

/// Longest time (s) between two measurements of the link's speed.
pub const MAX_SAMPLE_GAP: f64 = 0.002;

/// Most measurements per trajectory (a very long trajectory is measured more coarsely).
pub const MAX_SAMPLES: usize = 200_000;

/// Relative margin below the limit that a slowed trajectory aims at.
pub const MARGIN: f64 = 1e-3;

/// What limiting a link's speed did.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct LinkSpeed {
    /// The link's name.
    pub link: String,
    /// The limit, m/s.
    pub limit: f64,
    /// The link's highest measured speed before, m/s.
    pub peak_before: f64,
    /// The link's highest measured speed of the returned trajectory, m/s.
    pub peak_after: f64,
    /// The factor every time was multiplied by (1: the trajectory was within the limit).
    pub factor: f64,
    /// Measurements taken per pass.
    pub samples: usize,
}

impl Trajectory {
    /// Stretches every time by `factor` (> 0): velocities are divided by it, accelerations by
    /// its square. The positions, and the path a controller follows through them, stay.
    pub fn scale_time(&mut self, factor: f64) {
        for p in &mut self.points {
            p.time_from_start *= factor;
            p.velocities.iter_mut().for_each(|v| *v /= factor);
            p.accelerations
                .iter_mut()
                .for_each(|a| *a /= factor * factor);
        }
    }
}

/// The times at which the link's speed is measured: every point's and sub-steps between.
fn sample_times(traj: &Trajectory) -> Vec<f64> {
    let times: Vec<f64> = traj.points.iter().map(|p| p.time_from_start).collect();
    let wanted: usize = times
        .windows(2)
        .map(|w| per_interval(w[1] - w[0], 1.0))
        .sum();
    // Fewer sub-steps for a trajectory that would need too many.
    let thin = (wanted as f64 / MAX_SAMPLES as f64).max(1.0);
    let mut out = Vec::with_capacity(wanted.min(MAX_SAMPLES) + times.len());
    for w in times.windows(2) {
        let n = per_interval(w[1] - w[0], thin);
        for k in 0..n {
            out.push(w[0] + (w[1] - w[0]) * k as f64 / n as f64);
        }
    }
    out.extend(times.last());
    out
}

fn per_interval(h: f64, thin: f64) -> usize {
    if !(h.is_finite() && h > 0.0) {
        return 1;
    }
    let n = ((h / MAX_SAMPLE_GAP).ceil() as usize).max(SUBSTEPS);
    ((n as f64 / thin).ceil() as usize).max(1)
}

/// The highest speed (m/s) of `link`'s origin along `traj` (group joint order, the other
/// joints of the state at `base`), and the number of measurements.
pub fn peak_link_speed(
    traj: &Trajectory,
    tree: &KinematicTree,
    group: &PlanningGroup,
    base: &[f64],
    link: usize,
) -> (f64, usize) {
    let times = sample_times(traj);
    let mut poses = Vec::new();
    let mut at = |q: &[f64]| {
        tree.forward_kinematics_into(&group.full_state(base, q), &mut poses);
        poses[link].translation.vector
    };
    // A step of DT seconds along the velocity: small against the motion, large against
    // rounding.
    const DT: f64 = 1e-5;
    let mut peak = 0.0f64;
    for &t in &times {
        let (q, v) = traj.sample(t);
        if v.iter().all(|x| *x == 0.0) {
            continue;
        }
        let ahead: Vec<f64> = q.iter().zip(&v).map(|(x, d)| x + d * DT).collect();
        let behind: Vec<f64> = q.iter().zip(&v).map(|(x, d)| x - d * DT).collect();
        let speed = (at(&ahead) - at(&behind)).norm() / (2.0 * DT);
        peak = peak.max(speed);
    }
    (peak, times.len())
}

/// Slows `traj` uniformly where `link` would move faster than `limit` m/s (see the module
/// documentation); `link_name` names it in the result. `limit` must be positive and finite.
pub fn limit_link_speed(
    traj: &mut Trajectory,
    tree: &KinematicTree,
    group: &PlanningGroup,
    base: &[f64],
    (link, link_name): (usize, &str),
    limit: f64,
) -> LinkSpeed {
    let (peak_before, samples) = peak_link_speed(traj, tree, group, base, link);
    let target = limit * (1.0 - MARGIN);
    let factor = if peak_before > target {
        peak_before / target
    } else {
        1.0
    };
    let peak_after = if factor > 1.0 {
        traj.scale_time(factor);
        peak_link_speed(traj, tree, group, base, link).0
    } else {
        peak_before
    };
    LinkSpeed {
        link: link_name.to_string(),
        limit,
        peak_before,
        peak_after,
        factor,
        samples,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::robot::{LoadOptions, RobotModel};
    use crate::trajectory::time_parameterize;

    fn arm() -> RobotModel {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        RobotModel::from_urdf_file(
            &root.join("urdf/gmp_arm.urdf"),
            Some(&root.join("urdf/gmp_arm.srdf")),
            &LoadOptions {
                skip_geometry: true,
                ..LoadOptions::default()
            },
        )
        .unwrap()
    }

    /// The tool's speed by positions alone: distance between poses `dt` apart over `dt`.
    fn peak_by_positions(
        traj: &Trajectory,
        robot: &RobotModel,
        group: &PlanningGroup,
        base: &[f64],
        link: usize,
    ) -> f64 {
        let dt = 1e-4;
        let steps = (traj.duration() / dt).ceil() as usize;
        let at = |t: f64| {
            let q = traj.sample(t).0;
            robot.tree.forward_kinematics(&group.full_state(base, &q))[link]
                .translation
                .vector
        };
        (0..steps)
            .map(|i| (at((i + 1) as f64 * dt) - at(i as f64 * dt)).norm() / dt)
            .fold(0.0, f64::max)
    }

    #[test]
    fn a_fast_trajectory_is_slowed_to_the_limit_on_the_same_path() {
        let robot = arm();
        let group = robot.default_group();
        let base = robot.tree.neutral_state();
        let tip = crate::robot::ik::default_tip_link(&robot, &group).unwrap();
        let n = group.space.dof();
        let path = vec![vec![0.0; n], vec![1.2; n], vec![-0.4; n]];
        let traj = time_parameterize(&group.space, &path, 1.0, 1.0, 0.01).unwrap();
        let (peak, samples) = peak_link_speed(&traj, &robot.tree, &group, &base, tip);
        let independent = peak_by_positions(&traj, &robot, &group, &base, tip);
        assert!(
            (peak - independent).abs() < 1e-2 * independent,
            "{peak} vs {independent}"
        );
        assert!(samples > traj.points.len());

        let limit = peak / 2.5;
        let mut slowed = traj.clone();
        let r = limit_link_speed(
            &mut slowed,
            &robot.tree,
            &group,
            &base,
            (tip, "tool"),
            limit,
        );
        assert!((r.factor - 2.5 / (1.0 - MARGIN)).abs() < 1e-9, "{r:?}");
        assert!(r.peak_after <= limit, "{r:?}");
        let measured = peak_by_positions(&slowed, &robot, &group, &base, tip);
        assert!(measured <= limit * (1.0 + 1e-4), "{measured} > {limit}");
        assert!((slowed.duration() - traj.duration() * r.factor).abs() < 1e-9);
        // The same path: the slowed trajectory at k t is the original at t.
        for i in 0..=20 {
            let t = traj.duration() * i as f64 / 20.0;
            let (a, _) = traj.sample(t);
            let (b, _) = slowed.sample(t * r.factor);
            for (x, y) in a.iter().zip(&b) {
                assert!((x - y).abs() < 1e-9, "t {t}: {a:?} vs {b:?}");
            }
        }
        // Within the limit: unchanged.
        let mut same = traj.clone();
        let r = limit_link_speed(
            &mut same,
            &robot.tree,
            &group,
            &base,
            (tip, "tool"),
            peak * 2.0,
        );
        assert_eq!((r.factor, &same), (1.0, &traj));
    }
}
