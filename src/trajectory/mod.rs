//! Trajectories: batched shortcutting of joint-space paths, time parameterization under
//! per-joint velocity and acceleration limits, and the final re-validation.
//!
//! Time parameterization moves along each straight segment of the path with a synchronised
//! trapezoidal profile: one scalar path parameter `s ∈ [0, 1]` per segment, accelerated and
//! decelerated as fast as the most limited joint allows, stopping at every waypoint. Where a
//! joint moving in a segment has a jerk limit (a joint limits file's `max_jerk`), the segment's
//! profile is an S-curve instead: the acceleration ramps at the jerk limit, so it is
//! continuous along the trajectory (zero at every waypoint) and no joint passes its jerk limit.
//! All joints
//! therefore stay exactly on the straight segment, so the collision check of the path covers
//! the trajectory, and the waypoints are trajectory points. Stopping at corners costs time but
//! is exact and simple; shortcutting first leaves few corners.

use rand::Rng;
use serde::{Deserialize, Serialize};

use crate::collision::{Checker, CollisionError, ConfigBatch, MotionBatch, MAX_REFINEMENTS};
use crate::robot::JointSpace;

pub mod blend;
pub mod link_speed;
mod phase;
pub mod rounded;
mod through;
pub use link_speed::{limit_link_speed, peak_link_speed, Along, LinkLimit, LinkSpeed};
pub use through::{time_parameterize_through, ThroughTiming};

/// How a path was timed, to time it again (under a link speed limit: [`limit_link_speed`]).
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum PathTiming {
    /// [`time_parameterize`]: a stop at every waypoint, points every `sample_dt` seconds.
    Stops {
        /// Velocity scaling.
        vel_scale: f64,
        /// Acceleration scaling.
        acc_scale: f64,
        /// Longest time between points, s.
        sample_dt: f64,
    },
    /// [`time_parameterize_through`]: through the waypoints without stopping.
    Through {
        /// Velocity scaling.
        vel_scale: f64,
        /// Acceleration scaling.
        acc_scale: f64,
    },
    /// [`rounded`]: through the corners on arcs, points every `sample_dt` seconds or closer.
    Rounded {
        /// Velocity scaling.
        vel_scale: f64,
        /// Acceleration scaling.
        acc_scale: f64,
        /// Longest time between points, s.
        sample_dt: f64,
        /// Each waypoint's largest deviation (rad; 0: passed at rest), from
        /// [`rounded::round_corners`].
        corners: Vec<f64>,
    },
}

/// Caps on the path parameter of each segment of a path (one unit per segment, from waypoint
/// `k` to `k + 1`), on top of the joint limits; infinite: none.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SegmentCaps {
    /// Largest path speed per segment, 1/s.
    pub speed: Vec<f64>,
    /// Largest path acceleration per segment, 1/s².
    pub acceleration: Vec<f64>,
}

impl SegmentCaps {
    fn cap(v: &[f64], k: usize) -> f64 {
        v.get(k).copied().unwrap_or(f64::INFINITY)
    }
}

impl PathTiming {
    /// Times `path` this way, within `caps` where given (see [`SegmentCaps`]).
    pub fn time(
        &self,
        space: &JointSpace,
        path: &[Vec<f64>],
        caps: Option<&SegmentCaps>,
    ) -> Result<Trajectory, TrajectoryError> {
        if let Some(c) = caps {
            let bad =
                |v: &[f64]| v.len() + 1 != path.len() || v.iter().any(|x| x.is_nan() || *x <= 0.0);
            if bad(&c.speed) || bad(&c.acceleration) {
                return Err(TrajectoryError::BadSpeedCaps {
                    caps: c.speed.len().min(c.acceleration.len()),
                    waypoints: path.len(),
                });
            }
        }
        match *self {
            PathTiming::Stops {
                vel_scale,
                acc_scale,
                sample_dt,
            } => {
                if !(sample_dt > 0.0 && sample_dt.is_finite()) {
                    return Err(TrajectoryError::BadSampleDt(sample_dt));
                }
                parameterize(
                    space,
                    path,
                    (vel_scale, acc_scale),
                    Sampling::Time(sample_dt),
                    caps,
                )
            }
            PathTiming::Through {
                vel_scale,
                acc_scale,
            } => Ok(
                through::time_through_capped(space, path, vel_scale, acc_scale, caps)?.trajectory,
            ),
            PathTiming::Rounded {
                vel_scale,
                acc_scale,
                sample_dt,
                ref corners,
            } => rounded::time_rounded(
                space,
                path,
                corners,
                (vel_scale, acc_scale),
                sample_dt,
                caps,
            ),
        }
    }

    /// With rounded corners: how many waypoints between the ends were passed on an arc, of
    /// how many; `None` for the other timings.
    pub fn rounded_corners(&self) -> Option<(usize, usize)> {
        match self {
            PathTiming::Rounded { corners, .. } => {
                let inner = corners
                    .get(1..corners.len().saturating_sub(1))
                    .unwrap_or_default();
                Some((inner.iter().filter(|c| **c > 0.0).count(), inner.len()))
            }
            _ => None,
        }
    }

    /// Re-validates `trajectory`, timed this way from `path`: [`validate_along`] where it lies
    /// on the path's segments, else (rounded corners) as [`validate`] does, the straight
    /// motions between consecutive points (the arcs' chords), with runs of consecutive points
    /// on one straight line checked as one motion ([`rounded::straight_runs`]): a motion found
    /// free has its whole straight line free, every piece of it included.
    pub fn validate(
        &self,
        checker: &dyn Checker,
        path: &[Vec<f64>],
        trajectory: &Trajectory,
        resolution: f64,
    ) -> Result<(), TrajectoryError> {
        match self {
            PathTiming::Rounded { .. } => validate_path(
                checker,
                &rounded::straight_runs(&trajectory.positions()),
                resolution,
            ),
            _ => validate_along(checker, path, trajectory, resolution),
        }
    }
}

/// Shortcut attempts drawn per round (checked together in one batched motion check on the GPU).
pub const SHORTCUTS_PER_ROUND: usize = 64;

/// One point of a trajectory.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TrajectoryPoint {
    /// Joint positions. Continuous joints are unwrapped (they change continuously along the
    /// trajectory instead of jumping at `±PI`).
    pub positions: Vec<f64>,
    /// Joint velocities.
    pub velocities: Vec<f64>,
    /// Joint accelerations.
    pub accelerations: Vec<f64>,
    /// Time since the start of the trajectory, seconds.
    pub time_from_start: f64,
}

/// A timed joint trajectory.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Trajectory {
    /// Joint names, in the order of the values in each point.
    pub joint_names: Vec<String>,
    /// Points in time order.
    pub points: Vec<TrajectoryPoint>,
}

impl Trajectory {
    /// Total duration in seconds (0 for an empty trajectory).
    pub fn duration(&self) -> f64 {
        self.points.last().map_or(0.0, |p| p.time_from_start)
    }

    /// The positions of every point, in order.
    pub fn positions(&self) -> Vec<Vec<f64>> {
        self.points.iter().map(|p| p.positions.clone()).collect()
    }

    /// Positions and velocities at `t` seconds, as a joint trajectory controller follows the
    /// points: a cubic in each interval matching the positions and velocities of its ends
    /// (positions linear between points without velocities). Before the first point, the
    /// first; after the last, the last with zero velocity. Needs points with one position per
    /// joint and increasing times ([`Self::check_followable`]); otherwise the nearest point
    /// before `t` is held.
    pub fn sample(&self, t: f64) -> (Vec<f64>, Vec<f64>) {
        let n = self.joint_names.len();
        let Some(first) = self.points.first() else {
            return (vec![0.0; n], vec![0.0; n]);
        };
        if t <= first.time_from_start {
            return (first.positions.clone(), vec![0.0; first.positions.len()]);
        }
        let i = self.points.partition_point(|p| p.time_from_start <= t);
        let Some(b) = self.points.get(i) else {
            let last = &self.points[self.points.len() - 1];
            return (last.positions.clone(), vec![0.0; last.positions.len()]);
        };
        let a = &self.points[i - 1];
        let h = b.time_from_start - a.time_from_start;
        if h.is_nan() || h <= 0.0 || a.positions.len() != b.positions.len() {
            return (a.positions.clone(), vec![0.0; a.positions.len()]);
        }
        let s = (t - a.time_from_start) / h;
        let with_velocities =
            a.velocities.len() == a.positions.len() && b.velocities.len() == b.positions.len();
        let mut positions = Vec::with_capacity(a.positions.len());
        let mut velocities = Vec::with_capacity(a.positions.len());
        for j in 0..a.positions.len() {
            let (p0, p1) = (a.positions[j], b.positions[j]);
            if with_velocities {
                // Hermite basis on s in [0, 1]; velocities scaled by the interval length.
                let (m0, m1) = (a.velocities[j] * h, b.velocities[j] * h);
                let (s2, s3) = (s * s, s * s * s);
                positions.push(
                    (2.0 * s3 - 3.0 * s2 + 1.0) * p0
                        + (s3 - 2.0 * s2 + s) * m0
                        + (-2.0 * s3 + 3.0 * s2) * p1
                        + (s3 - s2) * m1,
                );
                let ds = (6.0 * s2 - 6.0 * s) * p0
                    + (3.0 * s2 - 4.0 * s + 1.0) * m0
                    + (-6.0 * s2 + 6.0 * s) * p1
                    + (3.0 * s2 - 2.0 * s) * m1;
                velocities.push(ds / h);
            } else {
                positions.push(p0 + (p1 - p0) * s);
                velocities.push((p1 - p0) / h);
            }
        }
        (positions, velocities)
    }

    /// Why a controller could not follow this trajectory, if it could not: no points, a point
    /// without one finite position per joint, velocities of another length, or times that are
    /// not finite and increasing from >= 0.
    pub fn check_followable(&self) -> Result<(), String> {
        let n = self.joint_names.len();
        if self.points.is_empty() {
            return Err("the trajectory has no points".into());
        }
        let mut before = -f64::INFINITY;
        for (i, p) in self.points.iter().enumerate() {
            if p.positions.len() != n || p.positions.iter().any(|x| !x.is_finite()) {
                return Err(format!(
                    "point {i} has {} positions for {n} joints, or one not finite",
                    p.positions.len()
                ));
            }
            if !(p.velocities.is_empty()
                || p.velocities.len() == n && p.velocities.iter().all(|v| v.is_finite()))
            {
                return Err(format!(
                    "point {i} has {} velocities for {n} joints, or one not finite",
                    p.velocities.len()
                ));
            }
            let t = p.time_from_start;
            if !(t.is_finite() && t >= 0.0 && (t > before || i == 0)) {
                return Err(format!(
                    "point {i}: time_from_start {t} s is not after the point before ({before} s)"
                ));
            }
            before = t;
        }
        Ok(())
    }
}

/// Errors of shortcutting, time parameterization and validation.
#[derive(Debug, thiserror::Error)]
pub enum TrajectoryError {
    /// The path had no waypoint.
    #[error("the path has no waypoint")]
    EmptyPath,
    /// A waypoint had the wrong number of values.
    #[error("waypoint {index} has {got} values, the planning group has {expected} joints")]
    WrongDof {
        /// Index of the waypoint.
        index: usize,
        /// Joints of the planning group.
        expected: usize,
        /// Values the waypoint had.
        got: usize,
    },
    /// A waypoint was outside the joint limits or not finite.
    #[error("waypoint {index}: {reason}")]
    InvalidWaypoint {
        /// Index of the waypoint.
        index: usize,
        /// What is wrong, naming the joint.
        reason: String,
    },
    /// A scaling factor was outside `(0, 1]`.
    #[error("{name} must be in (0, 1], got {value}")]
    BadScale {
        /// Which factor.
        name: &'static str,
        /// Its value.
        value: f64,
    },
    /// The sampling period was not positive and finite.
    #[error("sample_dt must be positive and finite, got {0}")]
    BadSampleDt(f64),
    /// Speed or acceleration caps not one positive value per segment of the path.
    #[error(
        "segment caps: need one positive speed and acceleration cap per segment, got {caps} for \
         {waypoints} waypoints"
    )]
    BadSpeedCaps {
        /// Caps given.
        caps: usize,
        /// Waypoints of the path.
        waypoints: usize,
    },
    /// The resolution was not positive and finite.
    #[error("resolution must be positive and finite, got {0}")]
    BadResolution(f64),
    /// A joint limit needed for timing was not positive and finite.
    #[error("joint '{joint}': {what} limit must be positive and finite, got {value}")]
    BadLimit {
        /// The joint.
        joint: String,
        /// "velocity", "acceleration" or "jerk".
        what: &'static str,
        /// The limit.
        value: f64,
    },
    /// The motion from point `index` to point `index + 1` is in collision.
    #[error("motion from point {index} to point {} is in collision", index + 1)]
    InCollision {
        /// Index of the motion's first point.
        index: usize,
    },
    /// A single-point path is in collision.
    #[error("the only configuration of the path is in collision")]
    ConfigInCollision,
    /// A trajectory point does not lie on the path it was timed from, in order.
    #[error(
        "trajectory point {index} is not on the path's segment {segment} (nor on a later one)"
    )]
    OffPath {
        /// Index of the trajectory point.
        index: usize,
        /// The path segment (from waypoint `segment` to `segment + 1`) it was expected on.
        segment: usize,
    },
    /// The trajectory ends before the path's last waypoint.
    #[error("the trajectory ends on the path's segment {segment} of {segments}, not at its end")]
    EndsEarly {
        /// The segment its last point lies on.
        segment: usize,
        /// Segments of the path.
        segments: usize,
    },
    /// A configuration of the path, or one a motion check from waypoint `index` to the next
    /// visits, is outside the path constraints.
    #[error("the path leaves its constraints from waypoint {index}: {reason}")]
    Constraint {
        /// Index of the waypoint the motion starts from (0 also for the first waypoint).
        index: usize,
        /// Which constraint, and by how much.
        reason: String,
    },
    /// Timing with rounded corners failed (see [`rounded`]); the reason.
    #[error("rounded corners: {0}")]
    Rounding(String),
    /// The collision checker failed.
    #[error(transparent)]
    Checker(#[from] CollisionError),
}

fn check_waypoints(space: &JointSpace, path: &[Vec<f64>]) -> Result<(), TrajectoryError> {
    if path.is_empty() {
        return Err(TrajectoryError::EmptyPath);
    }
    for (index, q) in path.iter().enumerate() {
        if q.len() != space.dof() {
            return Err(TrajectoryError::WrongDof {
                index,
                expected: space.dof(),
                got: q.len(),
            });
        }
        space
            .validate(q)
            .map_err(|reason| TrajectoryError::InvalidWaypoint { index, reason })?;
    }
    Ok(())
}

/// Joint-space length of a path (sum of segment distances, wrap-around for continuous joints).
pub fn path_length(space: &JointSpace, path: &[Vec<f64>]) -> f64 {
    path.windows(2).map(|w| space.distance(&w[0], &w[1])).sum()
}

/// Joint-space length of `path` up to each of its waypoints (0 at the first, the path's length
/// at the last).
pub fn lengths_along(space: &JointSpace, path: &[Vec<f64>]) -> Vec<f64> {
    let mut along = Vec::with_capacity(path.len());
    let mut total = 0.0;
    if !path.is_empty() {
        along.push(total);
    }
    for w in path.windows(2) {
        total += space.distance(&w[0], &w[1]);
        along.push(total);
    }
    along
}

/// A candidate shortcut: from fraction `t1` of segment `i1` to fraction `t2` of segment `i2`.
struct Candidate {
    i1: usize,
    t1: f64,
    i2: usize,
    t2: f64,
    q1: Vec<f64>,
    q2: Vec<f64>,
    saving: f64,
    /// The motions the path would gain, each to be checked as it will be traversed: the
    /// shortcut `q1 -> q2` first, then the parts of the cut segments that stay, when the
    /// shortcut starts or ends inside a segment (a part of a valid motion need not pass the
    /// check on its own: its checked configurations and sweeps are different).
    motions: Vec<(Vec<f64>, Vec<f64>)>,
}

/// A shortcut that leaves as many waypoints (stops of the timed trajectory) as it removes is
/// tried only when it saves at least this fraction of the path's length: every check costs in
/// proportion to the motion's length, whatever it saves, and the last rounds of shortcutting
/// otherwise spend most of their checks on savings of a few hundredths of a percent.
pub const MIN_SAVING_FRACTION: f64 = 1e-3;

/// Shortens a collision-free path by replacing stretches of it with straight motions.
///
/// With at least one round, the path's waypoints are first reduced greedily
/// ([`reduce_waypoints`]). Each of the `rounds` rounds draws [`SHORTCUTS_PER_ROUND`] random pairs of points along the
/// path (by arc length; a quarter of the endpoints snap to waypoints so corners can disappear
/// entirely) and, largest saving first, applies those whose new motions are all valid and
/// that overlap none applied before them; pairs that save less than [`MIN_SAVING_FRACTION`]
/// of the path without removing waypoints are not tried. On the GPU all the new motions of a round are checked in one
/// batched call; on the CPU one at a time in the order of choice, skipping the candidates
/// that overlap one already applied (the same result with less work). The result starts and
/// ends at the same configurations; each of its motions is one of the input's or was checked
/// at `resolution` exactly as it appears in the result (waypoints that fall on the straight
/// line between their neighbours are dropped only when that line is checked too).
/// Randomness comes only from `rng`.
pub fn shortcut<R: Rng + ?Sized>(
    checker: &dyn Checker,
    path: &[Vec<f64>],
    resolution: f64,
    rng: &mut R,
    rounds: usize,
) -> Result<Vec<Vec<f64>>, TrajectoryError> {
    shortcut_until(checker, path, resolution, rng, rounds, 0.0)
}

/// [`shortcut`] that also stops after a round that shortened the path by less than
/// `min_gain` times its length before the round (the later rounds of random shortcutting
/// cost as much as the first ones for ever smaller gains).
pub fn shortcut_until<R: Rng + ?Sized>(
    checker: &dyn Checker,
    path: &[Vec<f64>],
    resolution: f64,
    rng: &mut R,
    rounds: usize,
    min_gain: f64,
) -> Result<Vec<Vec<f64>>, TrajectoryError> {
    shortcut_refined(
        checker,
        path,
        resolution,
        rng,
        rounds,
        min_gain,
        MAX_REFINEMENTS,
    )
}

/// [`shortcut_until`] whose random shortcuts (and the straight lines that replace waypoints
/// on them) are checked with at most `max_refinements` refinements
/// ([`Checker::check_motions_refined`]): a shortcut whose motions pass only at a finer level
/// grazes an obstacle and is given up, which costs some length and saves the finer levels'
/// checks, the largest part of shortcutting (see
/// [`crate::planners::SHORTCUT_REFINEMENTS`]). Every motion of the result is still one of
/// the input's or passed its check at `resolution` exactly as it appears in the result. The
/// greedy waypoint reduction ([`reduce_waypoints_refined`]) checks with the same cap.
pub fn shortcut_refined<R: Rng + ?Sized>(
    checker: &dyn Checker,
    path: &[Vec<f64>],
    resolution: f64,
    rng: &mut R,
    rounds: usize,
    min_gain: f64,
    max_refinements: u32,
) -> Result<Vec<Vec<f64>>, TrajectoryError> {
    let space = checker.space().clone();
    check_waypoints(&space, path)?;
    if !(resolution > 0.0 && resolution.is_finite()) {
        return Err(TrajectoryError::BadResolution(resolution));
    }
    let mut path = dedup(&space, path.to_vec());
    let dof = space.dof();
    let mut tmp = vec![0.0; dof];
    let batched = checker.backend().batches();
    let mut one = MotionBatch::new(dof);
    let mut check_one = |from: &[f64], to: &[f64]| {
        motion_valid(checker, &mut one, from, to, resolution, max_refinements)
    };
    if rounds > 0 {
        path = reduce_waypoints_refined(checker, &path, resolution, max_refinements)?;
    }
    for _ in 0..rounds {
        if path.len() < 3 {
            break;
        }
        // Cumulative arc length at each waypoint.
        let cum = lengths_along(&space, &path);
        let total = cum.last().copied().unwrap_or(0.0);
        if total <= 0.0 {
            break;
        }
        let locate = |u: f64| -> (usize, f64) {
            // Segment i with cum[i] <= u < cum[i+1] (the last segment for u == total).
            let nseg = cum.len() - 1;
            let i = cum
                .partition_point(|&c| c <= u)
                .saturating_sub(1)
                .min(nseg - 1);
            let len = cum[i + 1] - cum[i];
            let t = if len > 0.0 {
                ((u - cum[i]) / len).clamp(0.0, 1.0)
            } else {
                0.0
            };
            (i, t)
        };
        let draw = |rng: &mut R| -> f64 {
            if rng.random_bool(0.25) {
                cum[rng.random_range(0..cum.len())]
            } else {
                rng.random_range(0.0..=total)
            }
        };
        let mut candidates = Vec::new();
        for _ in 0..SHORTCUTS_PER_ROUND {
            let (a, b) = (draw(rng), draw(rng));
            let (u1, u2) = if a <= b { (a, b) } else { (b, a) };
            let (i1, t1) = locate(u1);
            let (i2, t2) = locate(u2);
            if i1 >= i2 {
                continue; // within one segment: nothing to gain
            }
            let mut q1 = vec![0.0; dof];
            let mut q2 = vec![0.0; dof];
            point_on(&space, &path[i1], &path[i1 + 1], t1, &mut q1);
            point_on(&space, &path[i2], &path[i2 + 1], t2, &mut q2);
            // Length of the stretch replaced, measured on the actual points.
            let mut along = space.distance(&q1, &path[i1 + 1]);
            for k in i1 + 1..i2 {
                along += space.distance(&path[k], &path[k + 1]);
            }
            along += space.distance(&path[i2], &q2);
            let saving = along - space.distance(&q1, &q2);
            // Waypoints between q1 and q2 that go, against those the shortcut adds (q1 when
            // inside its segment, and q2); see the splicing below.
            let removed = if t2 >= 1.0 { i2 + 1 - i1 } else { i2 - i1 };
            let added = usize::from(t1 > 0.0) + 1;
            let fewer_stops = removed > added;
            if saving <= 1e-9 * total.max(1.0)
                || (saving < MIN_SAVING_FRACTION * total && !fewer_stops)
            {
                continue;
            }
            let mut motions = vec![(q1.clone(), q2.clone())];
            if t1 > 0.0 && t1 < 1.0 {
                motions.push((path[i1].clone(), q1.clone()));
            }
            if t2 > 0.0 && t2 < 1.0 {
                motions.push((q2.clone(), path[i2 + 1].clone()));
            }
            candidates.push(Candidate {
                i1,
                t1,
                i2,
                t2,
                q1,
                q2,
                saving,
                motions,
            });
        }
        if candidates.is_empty() {
            if min_gain > 0.0 {
                break; // no candidate saves enough: a round of no gain
            }
            continue;
        }
        // Largest saving first, equal savings in draw order; a candidate is taken when all
        // its motions are valid and it overlaps none taken before it.
        let mut order: Vec<usize> = (0..candidates.len()).collect();
        order.sort_by(|&x, &y| {
            candidates[y]
                .saving
                .total_cmp(&candidates[x].saving)
                .then(x.cmp(&y))
        });
        let overlaps = |k: usize, chosen: &[usize]| {
            let c = &candidates[k];
            chosen.iter().any(|&o| {
                let d = &candidates[o];
                !(c.i2 < d.i1 || d.i2 < c.i1)
            })
        };
        let mut chosen: Vec<usize> = Vec::new();
        if batched {
            let mut motions = MotionBatch::new(dof);
            let mut first = Vec::with_capacity(candidates.len());
            for c in &candidates {
                first.push(motions.len());
                for (a, b) in &c.motions {
                    motions.push(a, b)?;
                }
            }
            let valid = checker.check_motions_refined(&motions, resolution, max_refinements)?;
            for k in order {
                let all_valid = (first[k]..first[k] + candidates[k].motions.len())
                    .all(|m| valid.get(m).copied().unwrap_or(false));
                if all_valid && !overlaps(k, &chosen) {
                    chosen.push(k);
                }
            }
        } else {
            // On the CPU a check costs in proportion to the configurations it visits, so the
            // candidates are checked in the order of choice, each up to its first invalid
            // motion, and one that overlaps a candidate already taken is not checked at all:
            // its verdict could not change the choice.
            for k in order {
                if overlaps(k, &chosen) {
                    continue;
                }
                let mut all_valid = true;
                for (a, b) in &candidates[k].motions {
                    if !check_one(a, b)? {
                        all_valid = false;
                        break;
                    }
                }
                if all_valid {
                    chosen.push(k);
                }
            }
        }
        chosen.sort_by_key(|&k| candidates[k].i1);
        let mut next = Vec::with_capacity(path.len());
        let mut cursor = 0;
        for &k in &chosen {
            let c = &candidates[k];
            next.extend(path[cursor..=c.i1].iter().cloned());
            if c.t1 > 0.0 {
                next.push(c.q1.clone());
            }
            next.push(c.q2.clone());
            cursor = c.i2 + 1;
            if c.t2 >= 1.0 {
                cursor += 1; // q2 is path[i2 + 1] itself
            }
        }
        next.extend(path[cursor.min(path.len())..].iter().cloned());
        path = dedup(&space, next);
        if min_gain > 0.0 && total - path_length(&space, &path) < min_gain * total {
            break;
        }
    }
    // Drop waypoints that lie on the straight line between their neighbours.
    let mut i = 1;
    while i + 1 < path.len() {
        let (a, b, c) = (&path[i - 1], &path[i], &path[i + 1]);
        let direct = space.distance(a, c);
        let via = space.distance(a, b) + space.distance(b, c);
        let mut on_line = via - direct <= 1e-12 * via.max(1.0);
        if on_line {
            // Make sure b is the point of a->c, not a detour the other way round a wrap.
            let t = if via > 0.0 {
                space.distance(a, b) / via
            } else {
                0.0
            };
            space.interpolate(a, c, t, &mut tmp);
            on_line = space.distance(&tmp, b) <= 1e-9;
        }
        // The straight line replaces two checked motions: it is checked itself.
        if on_line && check_one(&path[i - 1], &path[i + 1])? {
            path.remove(i);
        } else {
            i += 1;
        }
    }
    Ok(path)
}

/// Greedy waypoint reduction of a collision-free path: from the first waypoint, the straight
/// motion to the farthest later waypoint it reaches collision-free at `resolution` (the next
/// waypoint is always kept reachable: its motion is the path's own), then on from there.
/// [`shortcut_until`] runs it before its random rounds: raw RRT paths have a waypoint per
/// extension, and most of them go in a few checks. The result depends only on the verdicts:
/// on the CPU backend the motions from one waypoint are checked one at a time, farthest first,
/// up to the first valid one; on the others all of them in one batch.
pub fn reduce_waypoints(
    checker: &dyn Checker,
    path: &[Vec<f64>],
    resolution: f64,
) -> Result<Vec<Vec<f64>>, TrajectoryError> {
    reduce_waypoints_refined(checker, path, resolution, MAX_REFINEMENTS)
}

/// [`reduce_waypoints`] checking its straight motions with at most `max_refinements`
/// refinements ([`Checker::check_motions_refined`]; the path's own motions keep the
/// waypoints reachable whatever the verdicts).
pub fn reduce_waypoints_refined(
    checker: &dyn Checker,
    path: &[Vec<f64>],
    resolution: f64,
    max_refinements: u32,
) -> Result<Vec<Vec<f64>>, TrajectoryError> {
    let space = checker.space();
    check_waypoints(space, path)?;
    if !(resolution > 0.0 && resolution.is_finite()) {
        return Err(TrajectoryError::BadResolution(resolution));
    }
    let batched = checker.backend().batches();
    let dof = space.dof();
    let n = path.len();
    let mut out = Vec::with_capacity(n);
    let Some(first) = path.first() else {
        return Ok(Vec::new());
    };
    out.push(first.clone());
    let mut i = 0;
    while i + 1 < n {
        let mut reach = i + 1;
        if i + 2 < n {
            if batched {
                let mut motions = MotionBatch::new(dof);
                for j in i + 2..n {
                    motions.push(&path[i], &path[j])?;
                }
                let valid = checker.check_motions_refined(&motions, resolution, max_refinements)?;
                if let Some(k) = (0..n - i - 2)
                    .rev()
                    .find(|&k| valid.get(k).copied() == Some(true))
                {
                    reach = i + 2 + k;
                }
            } else {
                let mut one = MotionBatch::new(dof);
                for j in (i + 2..n).rev() {
                    if motion_valid(
                        checker,
                        &mut one,
                        &path[i],
                        &path[j],
                        resolution,
                        max_refinements,
                    )? {
                        reach = j;
                        break;
                    }
                }
            }
        }
        out.push(path[reach].clone());
        i = reach;
    }
    Ok(out)
}

/// Whether the motion `from -> to` is valid at `resolution` with at most `max_refinements`
/// refinements, checked alone (in `one`, a batch reused between calls).
fn motion_valid(
    checker: &dyn Checker,
    one: &mut MotionBatch,
    from: &[f64],
    to: &[f64],
    resolution: f64,
    max_refinements: u32,
) -> Result<bool, TrajectoryError> {
    let dof = checker.space().dof();
    one.from = ConfigBatch::from_rows(dof, &[from])?;
    one.to = ConfigBatch::from_rows(dof, &[to])?;
    Ok(checker
        .check_motions_refined(one, resolution, max_refinements)?
        .first()
        .copied()
        .unwrap_or(false))
}

/// The point at fraction `t` of a segment, exactly an endpoint for `t` of 0 or 1.
fn point_on(space: &JointSpace, a: &[f64], b: &[f64], t: f64, out: &mut [f64]) {
    if t <= 0.0 {
        out.copy_from_slice(a);
    } else if t >= 1.0 {
        out.copy_from_slice(b);
    } else {
        space.interpolate(a, b, t, out);
    }
}

fn dedup(space: &JointSpace, path: Vec<Vec<f64>>) -> Vec<Vec<f64>> {
    let mut out: Vec<Vec<f64>> = Vec::with_capacity(path.len());
    let n = path.len();
    for (k, q) in path.into_iter().enumerate() {
        let same = out.last().is_some_and(|p| space.distance(p, &q) == 0.0);
        if same {
            if k + 1 == n {
                // Keep the exact final configuration.
                out.pop();
                out.push(q);
            }
        } else {
            out.push(q);
        }
    }
    out
}

/// One straight segment timed with a synchronised trapezoidal profile of `s ∈ [0, 1]`.
#[derive(Clone, Copy, Debug)]
struct SegmentProfile {
    /// Peak speed of `s`.
    v: f64,
    /// Acceleration of `s`.
    a: f64,
    /// Acceleration (and deceleration) duration.
    ta: f64,
    /// Cruise duration.
    tc: f64,
}

impl SegmentProfile {
    fn new(v_max: f64, a_max: f64) -> Self {
        // Reaching v_max needs distance v^2/a over accelerate + decelerate.
        if v_max * v_max / a_max >= 1.0 {
            let ta = (1.0 / a_max).sqrt();
            Self {
                v: a_max * ta,
                a: a_max,
                ta,
                tc: 0.0,
            }
        } else {
            let ta = v_max / a_max;
            let sa = 0.5 * a_max * ta * ta;
            Self {
                v: v_max,
                a: a_max,
                ta,
                tc: (1.0 - 2.0 * sa) / v_max,
            }
        }
    }

    fn duration(&self) -> f64 {
        2.0 * self.ta + self.tc
    }

    /// (s, ds/dt, d2s/dt2) at time `t`; the acceleration at a phase switch is that of the
    /// phase that starts there, except at the very end.
    fn eval(&self, t: f64) -> (f64, f64, f64) {
        let total = self.duration();
        let t = t.clamp(0.0, total);
        let sa = 0.5 * self.a * self.ta * self.ta;
        if t < self.ta {
            (0.5 * self.a * t * t, self.a * t, self.a)
        } else if t < self.ta + self.tc {
            (sa + self.v * (t - self.ta), self.v, 0.0)
        } else if t < total {
            let r = total - t;
            (1.0 - 0.5 * self.a * r * r, self.a * r, -self.a)
        } else {
            (1.0, 0.0, -self.a)
        }
    }
}

/// Time of the profile at which `s` is reached.
impl SegmentProfile {
    fn time_at(&self, s: f64) -> f64 {
        let s = s.clamp(0.0, 1.0);
        let sa = 0.5 * self.a * self.ta * self.ta;
        if s < sa {
            (2.0 * s / self.a).sqrt()
        } else if s <= 1.0 - sa {
            self.ta + (s - sa) / self.v
        } else {
            self.duration() - (2.0 * (1.0 - s) / self.a).sqrt()
        }
    }
}

/// One straight segment timed with a synchronised jerk-limited ("S-curve") profile of
/// `s ∈ [0, 1]`, from rest to rest: the acceleration ramps up at the jerk limit, holds (where
/// the acceleration limit is reached), ramps down to cruise, and the deceleration mirrors it.
/// Position, velocity and acceleration are continuous; the jerk is piecewise constant.
#[derive(Clone, Copy, Debug)]
struct SCurve {
    /// Jerk of the ramps.
    j: f64,
    /// Duration of one ramp.
    tj: f64,
    /// Duration of the acceleration phase (two ramps and the hold between).
    ta: f64,
    /// Peak acceleration (the limit, or less where it is not reached).
    ap: f64,
    /// Peak (cruise) speed.
    v: f64,
    /// Cruise duration.
    tv: f64,
}

impl SCurve {
    /// The fastest rest-to-rest profile over one unit of `s` with speed, acceleration and
    /// jerk of `s` within `v_max`, `a_max` and `j_max` (all positive and finite).
    fn new(v_max: f64, a_max: f64, j_max: f64) -> Self {
        // The acceleration phase to a speed v: ramps of a_max / j_max around a hold where v
        // is high enough to reach a_max, else two ramps to a lower peak.
        let phase = |v: f64| {
            if v * j_max >= a_max * a_max {
                let tj = a_max / j_max;
                (tj, tj + v / a_max, a_max)
            } else {
                let tj = (v / j_max).sqrt();
                (tj, 2.0 * tj, j_max * tj)
            }
        };
        // Accelerating to v and back takes v * ta of distance (the phase is point-symmetric).
        let (tj, ta, ap) = phase(v_max);
        if v_max * ta <= 1.0 {
            return Self {
                j: j_max,
                tj,
                ta,
                ap,
                v: v_max,
                tv: (1.0 - v_max * ta) / v_max,
            };
        }
        // No cruise: the speed whose acceleration and deceleration cover exactly 1, with
        // a_max reached (v^2 + v a^2 / j - a = 0) or not (2 v sqrt(v / j) = 1).
        let r = a_max * a_max / j_max;
        let with_hold = 0.5 * (-r + (r * r + 4.0 * a_max).sqrt());
        let v = if with_hold * j_max >= a_max * a_max {
            with_hold
        } else {
            (0.25 * j_max).cbrt()
        };
        let (tj, ta, ap) = phase(v);
        Self {
            j: j_max,
            tj,
            ta,
            ap,
            v,
            tv: 0.0,
        }
    }

    fn duration(&self) -> f64 {
        2.0 * self.ta + self.tv
    }

    /// (s, ds/dt, d2s/dt2) of the acceleration phase at `t ∈ [0, ta]`.
    fn accelerating(&self, t: f64) -> (f64, f64, f64) {
        let (j, tj) = (self.j, self.tj);
        if t < tj {
            (j * t * t * t / 6.0, 0.5 * j * t * t, j * t)
        } else if t < self.ta - tj {
            let (s1, v1) = (j * tj * tj * tj / 6.0, 0.5 * j * tj * tj);
            let u = t - tj;
            (
                s1 + v1 * u + 0.5 * self.ap * u * u,
                v1 + self.ap * u,
                self.ap,
            )
        } else {
            // The last ramp, from its end backwards: r before reaching v.
            let r = (self.ta - t).max(0.0);
            let sa = 0.5 * self.v * self.ta;
            (
                sa - self.v * r + j * r * r * r / 6.0,
                self.v - 0.5 * j * r * r,
                j * r,
            )
        }
    }

    /// (s, ds/dt, d2s/dt2) at time `t`.
    fn eval(&self, t: f64) -> (f64, f64, f64) {
        let total = self.duration();
        let t = t.clamp(0.0, total);
        if t <= self.ta {
            self.accelerating(t)
        } else if t <= self.ta + self.tv {
            (0.5 * self.v * self.ta + self.v * (t - self.ta), self.v, 0.0)
        } else {
            let (s, v, a) = self.accelerating(total - t);
            (1.0 - s, v, -a)
        }
    }
}

/// How one segment is timed: trapezoidal, or jerk limited where any of its moving joints has
/// a jerk limit.
#[derive(Clone, Copy, Debug)]
enum Profile {
    Trapezoid(SegmentProfile),
    SCurve(SCurve),
}

impl Profile {
    fn new(v_max: f64, a_max: f64, j_max: f64) -> Self {
        if j_max.is_finite() {
            Self::SCurve(SCurve::new(v_max, a_max, j_max))
        } else {
            Self::Trapezoid(SegmentProfile::new(v_max, a_max))
        }
    }

    fn duration(&self) -> f64 {
        match self {
            Self::Trapezoid(p) => p.duration(),
            Self::SCurve(p) => p.duration(),
        }
    }

    fn eval(&self, t: f64) -> (f64, f64, f64) {
        match self {
            Self::Trapezoid(p) => p.eval(t),
            Self::SCurve(p) => p.eval(t),
        }
    }

    /// Time at which `s` is reached (the first, where the profile rests there).
    fn time_at(&self, s: f64) -> f64 {
        match self {
            Self::Trapezoid(p) => p.time_at(s),
            Self::SCurve(p) => {
                // s(t) increases: bisection to well below a nanosecond. Near the ends s(t)
                // rounds to 0 or 1 over a few microseconds, so the ends are the ends.
                if s >= 1.0 {
                    return p.duration();
                }
                if s <= 0.0 {
                    return 0.0;
                }
                let (mut lo, mut hi) = (0.0, p.duration());
                for _ in 0..80 {
                    let mid = 0.5 * (lo + hi);
                    if p.eval(mid).0 < s {
                        lo = mid;
                    } else {
                        hi = mid;
                    }
                }
                hi
            }
        }
    }

    /// Acceleration of `s` as the segment starts.
    fn start_acceleration(&self) -> f64 {
        match self {
            Self::Trapezoid(p) => p.a,
            // The ramp starts from zero.
            Self::SCurve(_) => 0.0,
        }
    }
}

/// Where the points of each segment go.
#[derive(Clone, Copy)]
enum Sampling {
    /// Equal time steps of at most this many seconds.
    Time(f64),
    /// Exactly the configurations a motion check at this resolution visits.
    Steps(f64),
}

/// Times a path: straight-line motion between consecutive waypoints, with every joint within
/// `max_velocity * vel_scale` and `max_acceleration * acc_scale` of the joint space, sampled
/// every `sample_dt` seconds or finer (each segment is cut into equal time steps) plus every
/// waypoint. The robot stops at each waypoint. Positions of continuous joints are unwrapped.
/// A segment in which a joint with a jerk limit (`max_jerk` of the joint space, not scaled)
/// moves is timed with a jerk-limited S-curve, its acceleration continuous and starting and
/// ending at zero.
///
/// All joints of a point share the segment's path parameter, so positions, velocities and
/// accelerations are proportional to the segment's direction: any per-joint spline through
/// the points (as trajectory controllers use) stays on the straight segment.
pub fn time_parameterize(
    space: &JointSpace,
    path: &[Vec<f64>],
    vel_scale: f64,
    acc_scale: f64,
    sample_dt: f64,
) -> Result<Trajectory, TrajectoryError> {
    PathTiming::Stops {
        vel_scale,
        acc_scale,
        sample_dt,
    }
    .time(space, path, None)
}

/// Like [`time_parameterize`], but the points of each segment are exactly the configurations
/// that a motion check of the segment at `resolution` visits (see
/// [`JointSpace::segments`]), so checking the trajectory's consecutive points checks the
/// same configurations as checking the path. Time steps are then uneven.
pub fn time_parameterize_steps(
    space: &JointSpace,
    path: &[Vec<f64>],
    vel_scale: f64,
    acc_scale: f64,
    resolution: f64,
) -> Result<Trajectory, TrajectoryError> {
    if !(resolution > 0.0 && resolution.is_finite()) {
        return Err(TrajectoryError::BadResolution(resolution));
    }
    parameterize(
        space,
        path,
        (vel_scale, acc_scale),
        Sampling::Steps(resolution),
        None,
    )
}

/// Each joint's velocity and acceleration limit times `vel_scale` and `acc_scale`; errors name
/// a scale outside `(0, 1]` or a joint whose limit is not positive and finite.
fn scaled_limits(
    space: &JointSpace,
    vel_scale: f64,
    acc_scale: f64,
) -> Result<(Vec<f64>, Vec<f64>), TrajectoryError> {
    for (name, value) in [("vel_scale", vel_scale), ("acc_scale", acc_scale)] {
        if !(value > 0.0 && value <= 1.0) {
            return Err(TrajectoryError::BadScale { name, value });
        }
    }
    let dof = space.dof();
    let mut vmax = Vec::with_capacity(dof);
    let mut amax = Vec::with_capacity(dof);
    for j in 0..dof {
        let name = space.names.get(j).cloned().unwrap_or_default();
        let v = space.max_velocity.get(j).copied().unwrap_or(f64::NAN);
        let a = space.max_acceleration.get(j).copied().unwrap_or(f64::NAN);
        if !(v > 0.0 && v.is_finite()) {
            return Err(TrajectoryError::BadLimit {
                joint: name,
                what: "velocity",
                value: v,
            });
        }
        if !(a > 0.0 && a.is_finite()) {
            return Err(TrajectoryError::BadLimit {
                joint: name,
                what: "acceleration",
                value: a,
            });
        }
        vmax.push(v * vel_scale);
        amax.push(a * acc_scale);
    }
    Ok((vmax, amax))
}

/// Each joint's jerk limit (`f64::INFINITY`: none); errors name a joint whose limit is not
/// positive (or NaN). Jerk limits are not scaled: MoveIt's scaling factors scale velocity and
/// acceleration, and a lower acceleration already asks less of the jerk.
fn jerk_limits(space: &JointSpace) -> Result<Vec<f64>, TrajectoryError> {
    (0..space.dof())
        .map(|j| {
            let x = space.max_jerk.get(j).copied().unwrap_or(f64::INFINITY);
            if x > 0.0 {
                Ok(x)
            } else {
                Err(TrajectoryError::BadLimit {
                    joint: space.names.get(j).cloned().unwrap_or_default(),
                    what: "jerk",
                    value: x,
                })
            }
        })
        .collect()
}

/// The stop-at-every-waypoint timing, within `caps` where given.
fn parameterize(
    space: &JointSpace,
    path: &[Vec<f64>],
    (vel_scale, acc_scale): (f64, f64),
    sampling: Sampling,
    caps: Option<&SegmentCaps>,
) -> Result<Trajectory, TrajectoryError> {
    check_waypoints(space, path)?;
    let (vmax, amax) = scaled_limits(space, vel_scale, acc_scale)?;
    let jmax = jerk_limits(space)?;
    let dof = space.dof();
    let mut points = vec![TrajectoryPoint {
        positions: path[0].clone(),
        velocities: vec![0.0; dof],
        accelerations: vec![0.0; dof],
        time_from_start: 0.0,
    }];
    // Multiples of 2 PI added to continuous joints so that positions change continuously.
    let mut offset = vec![0.0; dof];
    let mut t0 = 0.0;
    let mut delta = vec![0.0; dof];
    let mut first_acc: Option<Vec<f64>> = None;
    for (k, w) in path.windows(2).enumerate() {
        let (a, b) = (&w[0], &w[1]);
        space.difference(a, b, &mut delta);
        // Offset that makes `b` continue from `a + delta`.
        let mut next_offset = offset.clone();
        for j in 0..dof {
            if space.continuous.get(j).copied().unwrap_or(false) {
                next_offset[j] = offset[j] + (a[j] + delta[j] - b[j]);
                next_offset[j] = (next_offset[j] / (2.0 * std::f64::consts::PI)).round()
                    * 2.0
                    * std::f64::consts::PI;
            }
        }
        let mut v_s = f64::INFINITY;
        let mut a_s = f64::INFINITY;
        let mut j_s = f64::INFINITY;
        for j in 0..dof {
            let d = delta[j].abs();
            if d > 0.0 {
                v_s = v_s.min(vmax[j] / d);
                a_s = a_s.min(amax[j] / d);
                j_s = j_s.min(jmax[j] / d);
            }
        }
        if !v_s.is_finite() || !a_s.is_finite() {
            offset = next_offset;
            continue; // zero-length segment
        }
        if let Some(c) = caps {
            v_s = v_s.min(SegmentCaps::cap(&c.speed, k));
            a_s = a_s.min(SegmentCaps::cap(&c.acceleration, k));
        }
        let profile = Profile::new(v_s, a_s, j_s);
        if first_acc.is_none() {
            first_acc = Some(
                delta
                    .iter()
                    .map(|d| d * profile.start_acceleration())
                    .collect(),
            );
        }
        let duration = profile.duration();
        let steps = match sampling {
            Sampling::Time(dt) => ((duration / dt).ceil() as usize).max(1),
            Sampling::Steps(res) => space.segments(a, b, res),
        };
        for k in 1..=steps {
            let frac = k as f64 / steps as f64;
            let (t, s) = match sampling {
                Sampling::Time(_) => (duration * frac, profile.eval(duration * frac).0),
                Sampling::Steps(_) => (profile.time_at(frac), frac),
            };
            let (_, sd, sdd) = profile.eval(t);
            let positions = if k == steps {
                (0..dof).map(|j| b[j] + next_offset[j]).collect()
            } else {
                // The same expression as `JointSpace::interpolate` for bounded joints.
                (0..dof)
                    .map(|j| {
                        if space.continuous.get(j).copied().unwrap_or(false) {
                            a[j] + offset[j] + delta[j] * s
                        } else {
                            a[j] + (b[j] - a[j]) * s
                        }
                    })
                    .collect()
            };
            points.push(TrajectoryPoint {
                positions,
                velocities: (0..dof).map(|j| delta[j] * sd).collect(),
                accelerations: (0..dof).map(|j| delta[j] * sdd).collect(),
                time_from_start: t0 + t,
            });
        }
        offset = next_offset;
        t0 += duration;
    }
    if let (Some(first), Some(acc)) = (points.first_mut(), first_acc) {
        // The first motion starts by accelerating.
        first.accelerations = acc;
    }
    Ok(Trajectory {
        joint_names: space.names.clone(),
        points,
    })
}

/// Re-validates a path: every waypoint within limits and every straight motion between
/// consecutive waypoints collision free at `resolution`, in one batched motion check.
pub fn validate_path(
    checker: &dyn Checker,
    path: &[Vec<f64>],
    resolution: f64,
) -> Result<(), TrajectoryError> {
    let space = checker.space();
    check_waypoints(space, path)?;
    if !(resolution > 0.0 && resolution.is_finite()) {
        return Err(TrajectoryError::BadResolution(resolution));
    }
    if path.len() == 1 {
        return if checker.check_config(&path[0])? {
            Ok(())
        } else {
            Err(TrajectoryError::ConfigInCollision)
        };
    }
    let mut motions = MotionBatch::new(space.dof());
    for w in path.windows(2) {
        motions.push(&w[0], &w[1])?;
    }
    let verdicts = checker.check_motions(&motions, resolution)?;
    for index in 0..motions.len() {
        if !verdicts.get(index).copied().unwrap_or(false) {
            return Err(TrajectoryError::InCollision { index });
        }
    }
    Ok(())
}

/// Largest distance, per joint, of a trajectory point from the straight segment of the path
/// it lies on, for [`follows_path`]: trajectory points are computed on the segment in `f64`
/// (a few units in the last place off it, about 1e-15), and 1e-9 rad moves no point of a
/// robot by more than nanometres, far inside the checker's margin.
pub const ON_PATH_TOLERANCE: f64 = 1e-9;

/// Checks that `trajectory` runs along `path`: it starts at the path's first waypoint and its
/// points, in order, lie on the path's straight segments (each segment from its start to its
/// end, never back), ending at the last waypoint. Then every straight motion between two
/// consecutive points is part of one of the path's motions, and a check of the path's
/// motions ([`validate_path`]) covers the whole trajectory: a motion check that answers
/// "free" proves its whole straight line free (bodies grown by their sweep between the
/// checked configurations), so every piece of it is free too. Continuous joints may be
/// unwrapped in the trajectory (compared the short way round).
pub fn follows_path(
    space: &JointSpace,
    path: &[Vec<f64>],
    trajectory: &Trajectory,
) -> Result<(), TrajectoryError> {
    check_waypoints(space, path)?;
    let dof = space.dof();
    let segments = path.len() - 1;
    let mut d = vec![0.0; dof];
    let mut e = vec![0.0; dof];
    // The segment the last point lay on and its parameter there.
    let mut seg = 0;
    let mut s_prev = 0.0;
    for (index, point) in trajectory.points.iter().enumerate() {
        let q = &point.positions;
        if q.len() != dof || q.iter().any(|x| !x.is_finite()) {
            return Err(TrajectoryError::OffPath {
                index,
                segment: seg,
            });
        }
        if index == 0 {
            // The start itself.
            space.difference(&path[0], q, &mut e);
            if e.iter().any(|x| x.abs() > ON_PATH_TOLERANCE) {
                return Err(TrajectoryError::OffPath { index, segment: 0 });
            }
        }
        loop {
            let a = &path[seg];
            let Some(b) = path.get(seg + 1) else {
                // Past the last segment: only the last waypoint itself.
                space.difference(a, q, &mut e);
                if e.iter().all(|x| x.abs() <= ON_PATH_TOLERANCE) {
                    break;
                }
                return Err(TrajectoryError::OffPath {
                    index,
                    segment: seg,
                });
            };
            space.difference(a, b, &mut d);
            space.difference(a, q, &mut e);
            let dd: f64 = d.iter().map(|x| x * x).sum();
            let s = if dd > 0.0 {
                d.iter().zip(&e).map(|(x, y)| x * y).sum::<f64>() / dd
            } else {
                0.0
            };
            let on_line = (0..dof).all(|j| (e[j] - s * d[j]).abs() <= ON_PATH_TOLERANCE);
            let s_tol = if dd > 0.0 {
                ON_PATH_TOLERANCE / dd.sqrt()
            } else {
                0.0
            };
            if on_line && s >= s_prev - s_tol && s <= 1.0 + s_tol {
                if s >= 1.0 - s_tol {
                    // At the segment's end: the next point goes on along the next segment.
                    seg += 1;
                    s_prev = 0.0;
                } else {
                    s_prev = s;
                }
                break;
            }
            // Not on this segment: only a point at a later segment's start may follow, and
            // only where nothing of this segment is left uncovered (a zero-length one).
            if dd == 0.0 {
                seg += 1;
                s_prev = 0.0;
                continue;
            }
            return Err(TrajectoryError::OffPath {
                index,
                segment: seg,
            });
        }
    }
    // Zero-length segments at the end are covered by the last waypoint.
    while seg < segments && space.distance(&path[seg], &path[seg + 1]) == 0.0 {
        seg += 1;
    }
    if seg < segments || trajectory.points.is_empty() {
        return Err(TrajectoryError::EndsEarly {
            segment: seg.min(segments.saturating_sub(1)),
            segments,
        });
    }
    Ok(())
}

/// Re-validates a trajectory timed from `path` ([`time_parameterize`]): every straight motion
/// of the path collision free at `resolution` ([`validate_path`], one batched check) and the
/// trajectory's points on those motions, in order ([`follows_path`]), which makes every motion
/// between consecutive trajectory points part of a checked one. Cheaper than [`validate`],
/// whose many short motions (one per pair of points) fill few of the CPU's eight lanes per
/// call, and it never rejects a trajectory whose path passed: [`validate`] checks other
/// configurations with other growths, and a short motion grazing an obstacle can fail where
/// the whole segment passed.
pub fn validate_along(
    checker: &dyn Checker,
    path: &[Vec<f64>],
    trajectory: &Trajectory,
    resolution: f64,
) -> Result<(), TrajectoryError> {
    validate_path(checker, path, resolution)?;
    follows_path(checker.space(), path, trajectory)?;
    for (index, p) in trajectory.points.iter().enumerate() {
        checker
            .space()
            .validate(&p.positions)
            .map_err(|reason| TrajectoryError::InvalidWaypoint { index, reason })?;
    }
    Ok(())
}

/// Re-validates a trajectory: its points within limits and the straight motions between
/// consecutive points collision free at `resolution` (one batched check).
pub fn validate(
    checker: &dyn Checker,
    trajectory: &Trajectory,
    resolution: f64,
) -> Result<(), TrajectoryError> {
    validate_path(checker, &trajectory.positions(), resolution)
}
