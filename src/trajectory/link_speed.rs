//! A Cartesian speed limit for one link (MoveIt's `max_cartesian_speed` with
//! `cartesian_speed_limited_link`): a tool moving near people, a camera that blurs, a glass
//! of water.
//!
//! The link's speed is measured along the trajectory as a controller follows it
//! ([`Trajectory::sample`]): at every point and at sub-steps between points (at least
//! [`SUBSTEPS`] per interval and one per [`MAX_SAMPLE_GAP`] seconds), as the length of the link
//! origin's velocity `J(q) q'`, taken from forward kinematics by a central difference along
//! `q'`; its angular speed (a Pilz `max_rot_vel`) likewise, from the rotation between the two
//! poses of the difference.
//!
//! A trajectory faster than the limit is slowed where it is too fast, when the path it was
//! timed from and how ([`Along`]) are known: each segment of the path gets a cap on its path
//! speed, the limit over the largest rate at which the link moves per unit of the segment's
//! path parameter (measured at sub-steps along the segment, [`CAP_STEP`] apart in the
//! fastest joint, with [`CAP_MARGIN`] to spare), and the path is timed again with those caps
//! under the same joint limits. Segments slow enough keep their speed, so a trajectory that is
//! fast in one place is not slowed everywhere. The retimed trajectory is checked again
//! against the path ([`super::validate_along`]) and measured.
//!
//! An acceleration limit of the link (a Pilz `max_trans_acc`) caps each segment's path
//! acceleration the same way (the limit over the link's largest rate along the segment); the
//! link's acceleration is measured along the trajectory by second differences of its position
//! [`ACC_DT`] apart, which also catches what the caps leave out (the path's curvature).
//!
//! What remains over the limit (the spline between points of a timing through the waypoints
//! can pass the caps slightly), or everything without a path, is slowed uniformly
//! ([`Trajectory::scale_time`]): every time is stretched by one factor, so the path (and its
//! collision check) is unchanged, joint velocities shrink by the factor, accelerations by its
//! square and jerks by its cube, and the link's speed everywhere by the factor. The factor
//! aims [`MARGIN`] below the limit, so that a peak between two samples stays under it (for an
//! acceleration, the square root of its excess: accelerations shrink with the factor's
//! square). If the
//! retimed trajectory ends up longer than uniform slowing alone would make it, uniform slowing
//! is used.

use crate::collision::Checker;
use crate::robot::cartesian_limits::CartesianLimits;
use crate::robot::{KinematicTree, PlanningGroup};

use super::{PathTiming, SegmentCaps, Trajectory};

/// Sub-steps measured between two trajectory points at least.
pub const SUBSTEPS: usize = 16;

/// Longest time (s) between two measurements of the link's speed.
pub const MAX_SAMPLE_GAP: f64 = 0.002;

/// Most measurements per trajectory (a very long trajectory is measured more coarsely).
pub const MAX_SAMPLES: usize = 200_000;

/// Relative margin below the limit that a slowed trajectory aims at.
pub const MARGIN: f64 = 1e-3;

/// Relative margin below the limit of the per-segment speed caps (the link's rate between
/// two sub-steps of a segment can pass the largest one measured).
pub const CAP_MARGIN: f64 = 2e-3;

/// Largest step (rad or m of the fastest joint) between two measurements of a segment's rate.
pub const CAP_STEP: f64 = 0.01;

/// The path a trajectory was timed from, to slow it segment by segment.
pub struct Along<'a> {
    /// The checker of the path's joints (its joint space times the path; its collision check
    /// re-validates the retimed trajectory).
    pub checker: &'a dyn Checker,
    /// The path's waypoints (group configurations).
    pub path: &'a [Vec<f64>],
    /// How the trajectory was timed from them.
    pub timing: PathTiming,
    /// The resolution of the re-validation.
    pub resolution: f64,
}

/// A speed limit of one link.
#[derive(Clone, Debug, PartialEq)]
pub struct LinkLimit {
    /// The link (index in the kinematic tree).
    pub link: usize,
    /// Its name, for the result.
    pub name: String,
    /// Largest speed of its origin, m/s (`f64::INFINITY`: none).
    pub linear: f64,
    /// Largest angular speed, rad/s, if any.
    pub angular: Option<f64>,
    /// Largest acceleration of its origin, m/s², if any (a Pilz `max_trans_acc`).
    pub acceleration: Option<f64>,
}

impl LinkLimit {
    /// A limit of `link`'s speed alone.
    pub fn speed(link: usize, name: &str, linear: f64) -> LinkLimit {
        LinkLimit {
            link,
            name: name.to_string(),
            linear,
            angular: None,
            acceleration: None,
        }
    }

    /// The limit of a Cartesian path that moves `link`: `requested` (a request's own limit),
    /// else none, with a robot's Pilz limits (`pilz_cartesian_limits.yaml`) scaled by the
    /// velocity and acceleration scaling where they apply, as Pilz's LIN scales them: without
    /// a request's limit they limit the moved link; with one on the moved link, its
    /// `max_rot_vel` and acceleration are added to it (the request's speed replaces
    /// `max_trans_vel`).
    pub fn for_cartesian_path(
        pilz: Option<&CartesianLimits>,
        (link, name): (usize, &str),
        (vel_scale, acc_scale): (f64, f64),
        requested: Option<LinkLimit>,
    ) -> Option<LinkLimit> {
        let Some(p) = pilz else {
            return requested;
        };
        let angular = p.max_rot_vel.map(|w| w * vel_scale);
        let acceleration = p.max_trans_acceleration().map(|a| a * acc_scale);
        match requested {
            Some(mut l) => {
                if l.link == link {
                    l.angular = l.angular.or(angular);
                    l.acceleration = l.acceleration.or(acceleration);
                }
                Some(l)
            }
            None if p.max_trans_vel.is_some() || angular.is_some() || acceleration.is_some() => {
                Some(LinkLimit {
                    link,
                    name: name.to_string(),
                    linear: p.max_trans_vel.map_or(f64::INFINITY, |v| v * vel_scale),
                    angular,
                    acceleration,
                })
            }
            None => None,
        }
    }
}

/// What limiting a link's speed did.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct LinkSpeed {
    /// The link's name.
    pub link: String,
    /// The limit, m/s (infinite: none, only an angular one).
    pub limit: f64,
    /// The link's highest measured speed before, m/s.
    pub peak_before: f64,
    /// The link's highest measured speed of the returned trajectory, m/s.
    pub peak_after: f64,
    /// The angular speed limit, rad/s, if any.
    pub angular_limit: Option<f64>,
    /// The link's highest measured angular speed before and after, rad/s.
    pub angular_peak: (f64, f64),
    /// The acceleration limit, m/s², if any.
    pub acceleration_limit: Option<f64>,
    /// The link's highest measured acceleration before and after, m/s².
    pub acceleration_peak: (f64, f64),
    /// How many times longer the returned trajectory takes (1: it was within the limit).
    pub factor: f64,
    /// Durations before and after, s.
    pub duration: (f64, f64),
    /// Whether the path was timed again with per-segment caps ([`Along`]).
    pub retimed: bool,
    /// The factor every time was stretched by uniformly (1: none).
    pub stretch: f64,
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

/// The highest rates of a link along a trajectory.
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize)]
pub struct Peaks {
    /// Speed of its origin, m/s.
    pub linear: f64,
    /// Angular speed, rad/s.
    pub angular: f64,
    /// Acceleration of its origin, m/s².
    pub acceleration: f64,
}

/// The highest speed, angular speed and acceleration of `link` along `traj` (group joint
/// order, the other joints of the state at `base`), and the number of measurements. Speeds
/// come from a central difference of forward kinematics along the joint velocity; the
/// acceleration from a second difference of the link's position along the trajectory in time
/// ([`ACC_DT`] apart).
pub fn peak_link_speed(
    traj: &Trajectory,
    tree: &KinematicTree,
    group: &PlanningGroup,
    base: &[f64],
    link: usize,
) -> (Peaks, usize) {
    let times = sample_times(traj);
    let mut poses = Vec::new();
    let mut at = |q: &[f64]| {
        tree.forward_kinematics_into(&group.full_state(base, q), &mut poses);
        poses[link]
    };
    // A step of DT seconds along the velocity: small against the motion, large against
    // rounding.
    const DT: f64 = 1e-5;
    let mut peaks = Peaks::default();
    let (mut ahead, mut behind) = (Vec::new(), Vec::new());
    for &t in &times {
        let (q, v) = traj.sample(t);
        if v.iter().all(|x| *x == 0.0) {
            continue;
        }
        ahead.clear();
        ahead.extend(q.iter().zip(&v).map(|(x, d)| x + d * DT));
        behind.clear();
        behind.extend(q.iter().zip(&v).map(|(x, d)| x - d * DT));
        let (a, b) = (at(&ahead), at(&behind));
        let linear = (a.translation.vector - b.translation.vector).norm() / (2.0 * DT);
        peaks.linear = peaks.linear.max(linear);
        peaks.angular = peaks
            .angular
            .max(a.rotation.angle_to(&b.rotation) / (2.0 * DT));
        let [before, now, after] = [t - ACC_DT, t, t + ACC_DT].map(|x| {
            let q = traj.sample(x).0;
            at(&q).translation.vector
        });
        peaks.acceleration = peaks
            .acceleration
            .max((after - 2.0 * now + before).norm() / (ACC_DT * ACC_DT));
    }
    (peaks, times.len())
}

/// The uniform stretch of a trajectory with these peaks that brings each under `limit`
/// ([`MARGIN`] below it), at least 1: speeds scale with its inverse, accelerations with its
/// inverse square.
pub fn stretch_needed(p: Peaks, limit: &LinkLimit) -> f64 {
    let by =
        |peak: f64, limit: Option<f64>| limit.map_or(0.0, |limit| peak / (limit * (1.0 - MARGIN)));
    by(p.linear, Some(limit.linear))
        .max(by(p.angular, limit.angular))
        .max(by(p.acceleration, limit.acceleration).sqrt())
        .max(1.0)
}

/// Time step (s) of the second difference that measures a link's acceleration.
pub const ACC_DT: f64 = 1e-4;

/// The per-segment caps on the path parameter of `path` (infinite where the link does not
/// move) that keep `limit`'s link under its speed and acceleration limits; see the module
/// documentation.
pub fn segment_caps(
    space: &crate::robot::JointSpace,
    path: &[Vec<f64>],
    (tree, group, base): (&KinematicTree, &PlanningGroup, &[f64]),
    limit: &LinkLimit,
) -> SegmentCaps {
    const EPS: f64 = 1e-5;
    let dof = space.dof();
    let mut poses = Vec::new();
    let mut pose_at = |q: &[f64]| {
        tree.forward_kinematics_into(&group.full_state(base, q), &mut poses);
        poses[limit.link]
    };
    let (mut delta, mut ahead, mut behind) = (vec![0.0; dof], vec![0.0; dof], vec![0.0; dof]);
    let within = |x: Option<f64>| x.map_or(f64::INFINITY, |x| x * (1.0 - CAP_MARGIN));
    let (linear, angular, acceleration) = (
        within(Some(limit.linear)),
        within(limit.angular),
        within(limit.acceleration),
    );
    let cap = |limit: f64, rate: f64| {
        if rate > 0.0 {
            limit / rate
        } else {
            f64::INFINITY
        }
    };
    let mut caps = SegmentCaps::default();
    for w in path.windows(2) {
        space.difference(&w[0], &w[1], &mut delta);
        let widest = delta.iter().fold(0.0f64, |m, d| m.max(d.abs()));
        let steps = ((widest / CAP_STEP).ceil() as usize).max(2);
        let (mut rate, mut turn) = (0.0f64, 0.0f64);
        for i in 0..=steps {
            let s = i as f64 / steps as f64;
            for j in 0..dof {
                let q = w[0][j] + delta[j] * s;
                ahead[j] = q + delta[j] * EPS;
                behind[j] = q - delta[j] * EPS;
            }
            let (a, b) = (pose_at(&ahead), pose_at(&behind));
            rate = rate.max((a.translation.vector - b.translation.vector).norm() / (2.0 * EPS));
            turn = turn.max(a.rotation.angle_to(&b.rotation) / (2.0 * EPS));
        }
        caps.speed.push(cap(linear, rate).min(cap(angular, turn)));
        caps.acceleration.push(cap(acceleration, rate));
    }
    caps
}

/// Slows `traj` where the link of `limit` would move, turn or accelerate faster than it allows
/// (see the module documentation): segment by segment along `along`'s path where given, else
/// (and for what remains) uniformly. Limits must be positive.
pub fn limit_link_speed(
    traj: &mut Trajectory,
    tree: &KinematicTree,
    group: &PlanningGroup,
    base: &[f64],
    limit: &LinkLimit,
    along: Option<&Along<'_>>,
) -> LinkSpeed {
    let link = limit.link;
    let peak = |t: &Trajectory| peak_link_speed(t, tree, group, base, link);
    let over = |p: Peaks| stretch_needed(p, limit);
    let (before, samples) = peak(traj);
    let uniform = over(before);
    let duration_before = traj.duration();
    let mut result = LinkSpeed {
        link: limit.name.clone(),
        limit: limit.linear,
        peak_before: before.linear,
        peak_after: before.linear,
        angular_limit: limit.angular,
        angular_peak: (before.angular, before.angular),
        acceleration_limit: limit.acceleration,
        acceleration_peak: (before.acceleration, before.acceleration),
        factor: 1.0,
        duration: (duration_before, duration_before),
        retimed: false,
        stretch: 1.0,
        samples,
    };
    if uniform <= 1.0 {
        return result;
    }
    let retimed = along.and_then(|a| {
        let space = a.checker.space();
        let caps = segment_caps(space, a.path, (tree, group, base), limit);
        let t = a.timing.time(space, a.path, Some(&caps)).ok()?;
        a.timing
            .validate(a.checker, a.path, &t, a.resolution)
            .ok()?;
        Some(t)
    });
    let mut out = match retimed {
        Some(t) => {
            result.retimed = true;
            t
        }
        None => traj.clone(),
    };
    let mut after = if result.retimed { peak(&out).0 } else { before };
    result.stretch = over(after);
    if result.retimed && out.duration() * result.stretch > duration_before * uniform {
        // Retiming gained nothing: uniform slowing alone.
        out = traj.clone();
        after = before;
        result.retimed = false;
        result.stretch = uniform;
    }
    if result.stretch > 1.0 {
        out.scale_time(result.stretch);
        after = peak(&out).0;
    }
    result.peak_after = after.linear;
    result.angular_peak.1 = after.angular;
    result.acceleration_peak.1 = after.acceleration;
    result.duration.1 = out.duration();
    result.factor = if duration_before > 0.0 {
        out.duration() / duration_before
    } else {
        1.0
    };
    *traj = out;
    result
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

    /// The highest rate of change of the link's pose along `traj` by positions alone: `change`
    /// between poses `dt` apart, over `dt`.
    fn peak_rate(
        traj: &Trajectory,
        robot: &RobotModel,
        group: &PlanningGroup,
        link: usize,
        change: impl Fn(&nalgebra::Isometry3<f64>, &nalgebra::Isometry3<f64>) -> f64,
    ) -> f64 {
        let dt = 1e-4;
        let base = robot.tree.neutral_state();
        let steps = (traj.duration() / dt).ceil() as usize;
        let at = |t: f64| {
            let q = traj.sample(t).0;
            robot.tree.forward_kinematics(&group.full_state(&base, &q))[link]
        };
        (0..steps)
            .map(|i| change(&at((i + 1) as f64 * dt), &at(i as f64 * dt)) / dt)
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
        let linear = |a: &nalgebra::Isometry3<f64>, b: &nalgebra::Isometry3<f64>| {
            (a.translation.vector - b.translation.vector).norm()
        };
        let turn = |a: &nalgebra::Isometry3<f64>, b: &nalgebra::Isometry3<f64>| {
            a.rotation.angle_to(&b.rotation)
        };
        let (peaks, samples) = peak_link_speed(&traj, &robot.tree, &group, &base, tip);
        let (peak, angular) = (peaks.linear, peaks.angular);
        let independent = peak_rate(&traj, &robot, &group, tip, linear);
        assert!(
            (peak - independent).abs() < 1e-2 * independent,
            "{peak} vs {independent}"
        );
        assert!(samples > traj.points.len());
        let limited = |linear: f64, angular: Option<f64>| {
            let mut t = traj.clone();
            let limit = LinkLimit {
                angular,
                ..LinkLimit::speed(tip, "tool", linear)
            };
            let r = limit_link_speed(&mut t, &robot.tree, &group, &base, &limit, None);
            (t, r)
        };

        let limit = peak / 2.5;
        let (slowed, r) = limited(limit, None);
        assert!((r.factor - 2.5 / (1.0 - MARGIN)).abs() < 1e-9, "{r:?}");
        assert!(r.peak_after <= limit, "{r:?}");
        let measured = peak_rate(&slowed, &robot, &group, tip, linear);
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
        // Within the limits: unchanged.
        let (same, r) = limited(peak * 2.0, Some(angular * 2.0));
        assert_eq!((r.factor, &same), (1.0, &traj));
        // An angular limit alone: the turn rate is brought under it.
        let (turned, r) = limited(f64::INFINITY, Some(angular / 4.0));
        assert!((r.factor - 4.0 / (1.0 - MARGIN)).abs() < 1e-9, "{r:?}");
        assert!(r.angular_peak.1 <= angular / 4.0, "{r:?}");
        let measured = peak_rate(&turned, &robot, &group, tip, turn);
        assert!(measured <= angular / 4.0 * (1.0 + 1e-4), "{measured}");

        // An acceleration limit: stretching by k divides accelerations by k squared.
        let independent = peak_acceleration(&traj, &robot, &group, tip);
        assert!(
            (peaks.acceleration - independent).abs() < 2e-2 * independent,
            "{} vs {independent}",
            peaks.acceleration
        );
        let mut t = traj.clone();
        let limit = LinkLimit {
            acceleration: Some(peaks.acceleration / 9.0),
            ..LinkLimit::speed(tip, "tool", f64::INFINITY)
        };
        let r = limit_link_speed(&mut t, &robot.tree, &group, &base, &limit, None);
        assert!(
            (r.stretch - 3.0 / (1.0 - MARGIN).sqrt()).abs() < 1e-9,
            "{r:?}"
        );
        assert!(r.acceleration_peak.1 <= peaks.acceleration / 9.0, "{r:?}");
        let measured = peak_acceleration(&t, &robot, &group, tip);
        assert!(measured <= peaks.acceleration / 9.0 * 1.02, "{measured}");
    }

    /// The highest acceleration of the link's origin along `traj` by positions alone: second
    /// differences 1 ms apart.
    fn peak_acceleration(
        traj: &Trajectory,
        robot: &RobotModel,
        group: &PlanningGroup,
        link: usize,
    ) -> f64 {
        let dt = 1e-3;
        let base = robot.tree.neutral_state();
        let at = |t: f64| {
            let q = traj.sample(t).0;
            robot.tree.forward_kinematics(&group.full_state(&base, &q))[link]
                .translation
                .vector
        };
        let steps = (traj.duration() / dt).ceil() as usize;
        (1..steps)
            .map(|i| {
                let t = i as f64 * dt;
                (at(t + dt) - 2.0 * at(t) + at(t - dt)).norm() / (dt * dt)
            })
            .fold(0.0, f64::max)
    }
}
