//! Blending consecutive motions into each other (a Pilz sequence's `blend_radius`): the robot
//! does not stop where one motion ends and the next begins, but rounds the corner within a
//! sphere around the link's position there (the corner).
//!
//! For timed motions `0..n` (each starting where the one before ends, at rest), where motion
//! `k` has a blend radius `r_k > 0` (the last has 0):
//!
//! - The sphere of radius `r_k` around the corner is entered by motion `k` at the time its link
//!   last comes within `r_k` of the corner, and left by motion `k + 1` at the time its link
//!   first gets `r_k` away (found every [`CUT_SCAN`] seconds, then by bisection to
//!   [`CUT_TOLERANCE`]). Outside the spheres each motion keeps its own points and timing, so
//!   its scalings and Cartesian limits hold there as planned. A motion must leave the sphere
//!   at its start before it enters the one at its end: spheres that overlap along a motion,
//!   or a motion that never leaves a sphere, are refused (as Pilz refuses them).
//! - Inside the sphere one of two kinds of blend takes over, the one that saves the most time
//!   among those that pass every check:
//!   - an **overlap** ([`BlendKind::Overlap`]): motion `k + 1` starts while motion `k`
//!     ends, for a time up to the shorter of their times inside the sphere (then shorter by
//!     [`OVERLAP_SHRINK`], [`OVERLAP_TRIES`] tries): every joint moves by the sum of both
//!     motions' moves, so positions, velocities and accelerations stay continuous and the
//!     overlap's time is saved;
//!   - a **curve** ([`BlendKind::Curve`]): a cubic Bézier curve in joint space from where
//!     motion `k` enters the sphere to where motion `k + 1` leaves it, leaving along the one's
//!     velocity and arriving along the other's (inner control points [`SHAPES`] times the
//!     distance to the corner's configuration), timed along the curve as fast as the joint
//!     limits allow from the one's speed to the other's.
//! - The checks: every joint within its position limits and within [`BLEND_HEADROOM`] times
//!   the larger of the motions' velocity and acceleration scalings (at most the limits
//!   themselves); the link within the sphere ([`RADIUS_TOLERANCE`] of the radius to spare for
//!   the arm's non-linear kinematics); the link under the looser of the motions' Cartesian
//!   limits where both limit that link; collision free at the resolution. A corner where no
//!   blend passes is refused, naming what stopped the last one tried. Motions timed at full
//!   scaling often leave no room to turn without stopping: lower the scaling or the radius.
//!
//! The joined trajectory (each motion's kept points and the blends' points, times running
//! on, continuous joints carried over whole turns) is re-validated as a whole: every straight
//! motion between consecutive points collision free at the resolution.

use nalgebra::Vector3;

use super::link_speed::{peak_link_speed, stretch_needed};
use super::phase::{over_limits, speeds, step_acceleration, step_times, Grid};
use super::{validate, validate_path, LinkLimit, Trajectory, TrajectoryError, TrajectoryPoint};
use crate::collision::Checker;
use crate::robot::{JointSpace, KinematicTree, PlanningGroup};

/// Longest step of a joint between points of an overlap, rad.
pub const BLEND_STEP: f64 = 0.02;

/// How far the link may leave a blend's sphere along the blend, as a share of its radius.
pub const RADIUS_TOLERANCE: f64 = 0.05;

/// Time step of the search for a cut, s.
pub const CUT_SCAN: f64 = 1e-3;

/// Accuracy of a cut's time, s.
pub const CUT_TOLERANCE: f64 = 1e-7;

/// One timed motion of a run to blend.
#[derive(Clone, Copy, Debug)]
pub struct Motion<'a> {
    /// Its trajectory (the group's joints), from where the motion before ends, at rest at both
    /// ends.
    pub trajectory: &'a Trajectory,
    /// Its velocity scaling, in `(0, 1]`.
    pub vel_scale: f64,
    /// Its acceleration scaling, in `(0, 1]`.
    pub acc_scale: f64,
    /// Its Cartesian limit, if any.
    pub limit: Option<&'a LinkLimit>,
    /// The blend radius at its end, m (0: the run ends there).
    pub radius: f64,
}

/// The robot the trajectories move: the link whose position the radii measure.
#[derive(Clone, Copy)]
pub struct Kinematics<'a> {
    /// The kinematic tree.
    pub tree: &'a KinematicTree,
    /// The planning group of the trajectories.
    pub group: &'a PlanningGroup,
    /// The full state the group's joints are set in (the other joints stay there).
    pub base: &'a [f64],
    /// The link (index in the tree).
    pub link: usize,
}

/// How a blend joins two motions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum BlendKind {
    /// The second motion starts while the first ends: for `duration` seconds every joint
    /// moves by the sum of both motions' moves (velocities and accelerations add).
    Overlap,
    /// A cubic Bézier curve in joint space from the first motion's state to the second's,
    /// timed along it as fast as the joint limits allow.
    Curve,
}

/// One blend made.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct BlendReport {
    /// The motion at whose end it blends (index in the run given).
    pub motion: usize,
    /// Its radius, m.
    pub radius: f64,
    /// How it joins the motions.
    pub kind: BlendKind,
    /// How long the blend takes, s.
    pub duration: f64,
    /// The time it saves against stopping at the corner, s (negative: it takes longer).
    pub saved: f64,
    /// The link's largest distance from the corner along the blend, m.
    pub farthest: f64,
    /// The link's smallest distance from the corner along the blend, m.
    pub nearest: f64,
}

/// A run of motions blended into one trajectory.
#[derive(Clone, Debug)]
pub struct Blended {
    /// The trajectory.
    pub trajectory: Trajectory,
    /// For every motion, the index of the point where it hands over to the next (the middle
    /// of the blend; the last point for the last motion).
    pub ends: Vec<usize>,
    /// The blends, in order.
    pub blends: Vec<BlendReport>,
}

/// Why a run cannot be blended.
#[derive(Debug, thiserror::Error)]
pub enum BlendError {
    /// A radius that cannot be used with its motions.
    #[error("motion {motion}: blend_radius {radius} m: {reason}")]
    Radius {
        /// The motion whose radius it is (index in the run).
        motion: usize,
        /// The radius.
        radius: f64,
        /// What is wrong.
        reason: String,
    },
    /// The blend at the end of a motion cannot be made.
    #[error("the blend at the end of motion {motion}: {reason}")]
    Blocked {
        /// The motion at whose end it blends.
        motion: usize,
        /// Why.
        reason: String,
    },
    /// The joined trajectory failed its re-validation.
    #[error("the blended trajectory: {0}")]
    Trajectory(#[from] TrajectoryError),
}

/// Forward kinematics of the link, reusing its buffer.
struct Link<'a> {
    kin: Kinematics<'a>,
    poses: Vec<nalgebra::Isometry3<f64>>,
}

impl Link<'_> {
    fn at(&mut self, q: &[f64]) -> Vector3<f64> {
        let k = self.kin;
        k.tree
            .forward_kinematics_into(&k.group.full_state(k.base, q), &mut self.poses);
        self.poses[k.link].translation.vector
    }
}

/// Blends `motions` (see the module documentation): every motion but the last has a radius
/// above 0, the last has 0. `checker`'s joint space is the group's; blends and the joined
/// trajectory are checked at `resolution`.
pub fn blend(
    checker: &dyn Checker,
    kin: Kinematics<'_>,
    motions: &[Motion<'_>],
    resolution: f64,
) -> Result<Blended, BlendError> {
    let space = checker.space();
    check_radii(motions)?;
    let mut link = Link {
        kin,
        poses: Vec::new(),
    };
    // Where each blended corner's sphere is entered (on its motion) and left (on the next).
    let mut spheres: Vec<Option<(f64, f64)>> = vec![None; motions.len()];
    for (k, m) in motions.iter().enumerate() {
        let radius_error = |reason: String| BlendError::Radius {
            motion: k,
            radius: m.radius,
            reason,
        };
        if m.trajectory.points.len() < 2 {
            return Err(radius_error("the motion does not move".into()));
        }
        if m.radius > 0.0 {
            let entry = cut(&mut link, m.trajectory, m.radius, true).ok_or_else(|| {
                radius_error("the link stays within the radius of the motion's end".into())
            })?;
            let exit =
                cut(&mut link, motions[k + 1].trajectory, m.radius, false).ok_or_else(|| {
                    radius_error(format!(
                        "motion {} stays within the radius of its start",
                        k + 1
                    ))
                })?;
            spheres[k] = Some((entry, exit));
        }
        if let (Some((_, exit)), Some((entry, _))) =
            (k.checked_sub(1).and_then(|i| spheres[i]), spheres[k])
        {
            if exit >= entry {
                return Err(radius_error(format!(
                    "the spheres at the motion's start ({} m) and end overlap along it",
                    motions[k - 1].radius
                )));
            }
        }
    }
    let mut pieces = Vec::with_capacity(motions.len());
    for (k, sphere) in spheres.iter().enumerate() {
        let Some(sphere) = *sphere else {
            pieces.push(None);
            continue;
        };
        let piece = choose(
            checker,
            &mut link,
            (&motions[k], &motions[k + 1]),
            sphere,
            resolution,
        )
        .map_err(|reason| BlendError::Blocked { motion: k, reason })?;
        pieces.push(Some(piece));
    }

    let mut out = Trajectory {
        joint_names: motions[0].trajectory.joint_names.clone(),
        points: Vec::new(),
    };
    let mut ends = Vec::with_capacity(motions.len());
    let mut blends = Vec::new();
    // The current motion's shift (whole turns of continuous joints), where its kept span
    // starts, and the time that is in `out`.
    let mut shift = vec![0.0; space.dof()];
    let (mut from, mut t0) = (0.0, 0.0);
    for (k, (m, piece)) in motions.iter().zip(pieces).enumerate() {
        let to = piece.as_ref().map_or(m.trajectory.duration(), |p| p.leave);
        let offset = t0 - from;
        let push = |p: &TrajectoryPoint, time: f64, out: &mut Trajectory| {
            let mut p = p.clone();
            p.time_from_start += time;
            for (x, s) in p.positions.iter_mut().zip(&shift) {
                *x += s;
            }
            out.points.push(p);
        };
        if k == 0 {
            push(&state_at(m.trajectory, from), offset, &mut out);
        }
        for p in &m.trajectory.points {
            if p.time_from_start > from && p.time_from_start < to {
                push(p, offset, &mut out);
            }
        }
        push(&state_at(m.trajectory, to), offset, &mut out);
        let Some(piece) = piece else {
            ends.push(out.points.len() - 1);
            continue;
        };
        let start = out.points[out.points.len() - 1].time_from_start;
        let middle = piece.points.len() / 2;
        for (i, p) in piece.points.iter().enumerate() {
            push(p, start, &mut out);
            if i == middle {
                ends.push(out.points.len() - 1);
            }
        }
        blends.push(BlendReport {
            motion: k,
            ..piece.report
        });
        for (s, t) in shift.iter_mut().zip(&piece.turns) {
            *s += t;
        }
        from = piece.join;
        t0 = out.points[out.points.len() - 1].time_from_start;
    }
    validate(checker, &out, resolution)?;
    Ok(Blended {
        trajectory: out,
        ends,
        blends,
    })
}

/// Every radius finite and >= 0, the last one 0.
fn check_radii(motions: &[Motion<'_>]) -> Result<(), BlendError> {
    for (k, m) in motions.iter().enumerate() {
        let bad = |reason: &str| BlendError::Radius {
            motion: k,
            radius: m.radius,
            reason: reason.into(),
        };
        if !(m.radius.is_finite() && m.radius >= 0.0) {
            return Err(bad("must be finite and 0 or more"));
        }
        if k + 1 == motions.len() && m.radius != 0.0 {
            return Err(bad(
                "the last motion ends the sequence, its blend radius must be 0",
            ));
        }
    }
    Ok(())
}

/// The state of `traj` at `t`: positions and velocities as a controller interpolates them,
/// accelerations linear between the points'.
fn state_at(traj: &Trajectory, t: f64) -> TrajectoryPoint {
    let (positions, velocities) = traj.sample(t);
    let i = traj.points.partition_point(|p| p.time_from_start <= t);
    let accelerations = match (
        i.checked_sub(1).map(|a| &traj.points[a]),
        traj.points.get(i),
    ) {
        (Some(a), Some(b)) if b.time_from_start > a.time_from_start => {
            let s = (t - a.time_from_start) / (b.time_from_start - a.time_from_start);
            a.accelerations
                .iter()
                .zip(&b.accelerations)
                .map(|(x, y)| x + (y - x) * s)
                .collect()
        }
        (Some(a), _) => a.accelerations.clone(),
        (None, Some(b)) => b.accelerations.clone(),
        (None, None) => Vec::new(),
    };
    TrajectoryPoint {
        positions,
        velocities,
        accelerations,
        time_from_start: t,
    }
}

/// The time at which the link, walking `traj` back from its end (`from_end`) or on from its
/// start, first is `radius` from where it is at that end; `None` when it never is.
fn cut(link: &mut Link<'_>, traj: &Trajectory, radius: f64, from_end: bool) -> Option<f64> {
    let duration = traj.duration();
    let end = if from_end { duration } else { 0.0 };
    let corner = link.at(&traj.sample(end).0);
    let mut distance = |t: f64| (link.at(&traj.sample(t).0) - corner).norm();
    let steps = (duration / CUT_SCAN).ceil() as usize;
    let at = |i: usize| {
        let t = (i as f64 * CUT_SCAN).min(duration);
        if from_end {
            duration - t
        } else {
            t
        }
    };
    for i in 1..=steps {
        if distance(at(i)) < radius {
            continue;
        }
        // Outside at step i, inside at i - 1: bisect.
        let (mut out, mut inside) = (at(i), at(i - 1));
        while (out - inside).abs() > CUT_TOLERANCE {
            let mid = 0.5 * (out + inside);
            if distance(mid) >= radius {
                out = mid;
            } else {
                inside = mid;
            }
        }
        return Some(out);
    }
    None
}

/// The blend chosen at one corner.
struct Piece {
    /// The time on the first motion where the blend leaves it.
    leave: f64,
    /// The time on the second motion where the blend joins it.
    join: f64,
    /// The points after leaving up to joining (times from leaving; positions continued from
    /// the first motion's).
    points: Vec<TrajectoryPoint>,
    /// The whole turns (2 pi) that continue the second motion's positions from the first's.
    turns: Vec<f64>,
    /// What it is (`motion` to be set).
    report: BlendReport,
}

/// How much more of the joint limits a blend may use than the faster of its motions' scaling
/// (never more than the limits themselves): an overlap adds two motions' velocities and
/// accelerations, each within its scaled limits.
pub const BLEND_HEADROOM: f64 = 2.0;

/// Overlaps tried: the longest, then each [`OVERLAP_SHRINK`] times the one before.
pub const OVERLAP_TRIES: usize = 16;

/// Factor between consecutive overlaps tried.
pub const OVERLAP_SHRINK: f64 = 0.85;

/// The fastest blend at the corner between motions `a` and `b` that passes every check (see
/// the module documentation), given the sphere's `(entry, exit)`: the time `a` enters it and
/// the time `b` leaves it. The error says what stopped the fastest blend that was tried last.
fn choose(
    checker: &dyn Checker,
    link: &mut Link<'_>,
    (a, b): (&Motion<'_>, &Motion<'_>),
    (entry, exit): (f64, f64),
    resolution: f64,
) -> Result<Piece, String> {
    let space = checker.space();
    let end = a.trajectory.duration();
    let corner = &a.trajectory.points[a.trajectory.points.len() - 1].positions;
    let first = &b.trajectory.points[0].positions;
    let turns: Vec<f64> = corner
        .iter()
        .zip(first)
        .map(|(c, f)| ((c - f) / std::f64::consts::TAU).round() * std::f64::consts::TAU)
        .collect();
    let b_at = |t: f64| {
        let mut p = state_at(b.trajectory, t);
        for (x, s) in p.positions.iter_mut().zip(&turns) {
            *x += s;
        }
        p
    };
    let stopping = (end - entry) + exit;
    let vel_scale = (a.vel_scale.max(b.vel_scale) * BLEND_HEADROOM).min(1.0);
    let acc_scale = (a.acc_scale.max(b.acc_scale) * BLEND_HEADROOM).min(1.0);
    // Candidates with the time each saves, the most first (a curve with its timed points).
    let mut candidates: Vec<(f64, BlendKind, f64, Vec<TrajectoryPoint>)> = Vec::new();
    let longest = (end - entry).min(exit);
    for i in 0..OVERLAP_TRIES {
        let overlap = longest * OVERLAP_SHRINK.powi(i as i32);
        candidates.push((overlap, BlendKind::Overlap, overlap, Vec::new()));
    }
    let (entering, exiting) = (state_at(a.trajectory, entry), b_at(exit));
    for shape in SHAPES {
        let curve = Curve::new(&entering, &exiting, corner, shape);
        if let Some(points) = curve.timed(space, (&entering, &exiting), (vel_scale, acc_scale)) {
            let duration = points.last().map_or(0.0, |p| p.time_from_start);
            candidates.push((stopping - duration, BlendKind::Curve, duration, points));
        }
    }
    candidates.sort_by(|x, y| y.0.total_cmp(&x.0));
    let checks = Checks {
        checker,
        corner,
        radius: a.radius,
        scales: (vel_scale, acc_scale),
        limit: looser(a.limit, b.limit),
        resolution,
    };
    let mut why = String::from("no blend was tried");
    for (saved, kind, duration, curve) in candidates {
        let (leave, join, points) = match kind {
            BlendKind::Overlap => {
                let leave = end - duration;
                let n = steps(space, vel_scale, duration);
                let points = (1..=n)
                    .map(|i| {
                        let u = duration * i as f64 / n as f64;
                        let (p, q) = (state_at(a.trajectory, leave + u), b_at(u));
                        let sum = |x: &[f64], y: &[f64]| -> Vec<f64> {
                            x.iter().zip(y).map(|(x, y)| x + y).collect()
                        };
                        TrajectoryPoint {
                            positions: p
                                .positions
                                .iter()
                                .zip(&q.positions)
                                .zip(corner)
                                .map(|((x, y), c)| x + y - c)
                                .collect(),
                            velocities: sum(&p.velocities, &q.velocities),
                            accelerations: sum(&p.accelerations, &q.accelerations),
                            time_from_start: u,
                        }
                    })
                    .collect();
                (leave, duration, points)
            }
            BlendKind::Curve => (entry, exit, curve),
        };
        let from = state_at(a.trajectory, leave);
        match checks.run(link, &from, &points) {
            Ok((farthest, nearest)) => {
                return Ok(Piece {
                    leave,
                    join,
                    points,
                    turns,
                    report: BlendReport {
                        motion: 0,
                        radius: a.radius,
                        kind,
                        duration,
                        saved,
                        farthest,
                        nearest,
                    },
                })
            }
            Err(e) => why = e,
        }
    }
    Err(format!(
        "no blend keeps within the sphere, the limits and free of collisions ({why}); lower \
         the motions' scaling (a blend may use twice it) or the radius"
    ))
}

/// Points an overlap of `duration` is sampled at: a joint moving at its scaled velocity limit
/// for `duration` steps at most [`BLEND_STEP`] between them; at least 8, an even number.
fn steps(space: &JointSpace, vel_scale: f64, duration: f64) -> usize {
    let fastest = space.max_velocity.iter().fold(0.0f64, |m, v| m.max(*v)) * vel_scale;
    let n = ((fastest * duration / BLEND_STEP).ceil() as usize).clamp(8, 100_000);
    n + n % 2
}

/// What a blend must pass.
struct Checks<'a> {
    checker: &'a dyn Checker,
    /// The corner's configuration.
    corner: &'a [f64],
    radius: f64,
    /// Velocity and acceleration scaling.
    scales: (f64, f64),
    /// The link limit, if any.
    limit: Option<LinkLimit>,
    resolution: f64,
}

impl Checks<'_> {
    /// Checks the blend from `from` through `points`; the link's largest and smallest distance
    /// from the corner, or why it fails.
    fn run(
        &self,
        link: &mut Link<'_>,
        from: &TrajectoryPoint,
        points: &[TrajectoryPoint],
    ) -> Result<(f64, f64), String> {
        let space = self.checker.space();
        for p in points {
            space
                .validate(&p.positions)
                .map_err(|e| format!("it would leave the joint limits: {e}"))?;
        }
        if let Some(why) = over_limits(space, points, self.scales) {
            return Err(why);
        }
        let centre = link.at(self.corner);
        let (mut farthest, mut nearest) = (0.0f64, f64::INFINITY);
        for p in points {
            let d = (link.at(&p.positions) - centre).norm();
            farthest = farthest.max(d);
            nearest = nearest.min(d);
        }
        if farthest > self.radius * (1.0 + RADIUS_TOLERANCE) {
            return Err(format!(
                "it would take the link {farthest:.4} m from the corner, outside the sphere"
            ));
        }
        let mut path = Vec::with_capacity(points.len() + 1);
        path.push(from.positions.clone());
        path.extend(points.iter().map(|p| p.positions.clone()));
        if let Some(limit) = &self.limit {
            let mut window = Trajectory {
                joint_names: space.names.clone(),
                points: Vec::with_capacity(points.len() + 1),
            };
            window.points.push(TrajectoryPoint {
                time_from_start: 0.0,
                ..from.clone()
            });
            window.points.extend(points.iter().cloned());
            let k = link.kin;
            let (peaks, _) = peak_link_speed(&window, k.tree, k.group, k.base, limit.link);
            if stretch_needed(peaks, limit) > 1.0 {
                return Err(format!(
                    "it would move '{}' faster than both motions' limits allow",
                    limit.name
                ));
            }
        }
        validate_path(self.checker, &path, self.resolution)
            .map_err(|e| format!("it collides ({e})"))?;
        Ok((farthest, nearest))
    }
}

/// The looser of two limits of one link (the larger of each rate, none where either has
/// none); none when they limit different links or either motion has no limit.
fn looser(a: Option<&LinkLimit>, b: Option<&LinkLimit>) -> Option<LinkLimit> {
    let (a, b) = (a?, b?);
    if a.link != b.link {
        return None;
    }
    let larger = |x: Option<f64>, y: Option<f64>| Some(x?.max(y?));
    Some(LinkLimit {
        link: a.link,
        name: a.name.clone(),
        linear: a.linear.max(b.linear),
        angular: larger(a.angular, b.angular),
        acceleration: larger(a.acceleration, b.acceleration),
    })
}

/// A cubic Bézier curve in joint space from the entry to the exit of a blend, leaving along
/// the entry velocity and arriving along the exit velocity.
struct Curve {
    /// Control points.
    p: [Vec<f64>; 4],
}

impl Curve {
    /// The curve from `from` to `to` whose inner control points lie `shape` times the
    /// distance to `corner` along each end's velocity (toward the corner where a velocity is
    /// 0). `to`'s positions are continued from `from`'s.
    fn new(from: &TrajectoryPoint, to: &TrajectoryPoint, corner: &[f64], shape: f64) -> Curve {
        let direction = |v: &[f64], toward: Vec<f64>| -> Vec<f64> {
            let n = norm(v);
            if n > 1e-9 {
                v.iter().map(|x| x / n).collect()
            } else {
                let m = norm(&toward).max(1e-300);
                toward.iter().map(|x| x / m).collect()
            }
        };
        let (p0, p3) = (from.positions.clone(), to.positions.clone());
        let d1 = norm(&sub(corner, &p0));
        let d2 = norm(&sub(&p3, corner));
        let u0 = direction(&from.velocities, sub(corner, &p0));
        let u3 = direction(&to.velocities, sub(&p3, corner));
        let p1 = p0
            .iter()
            .zip(&u0)
            .map(|(p, u)| p + shape * d1 * u)
            .collect();
        let p2 = p3
            .iter()
            .zip(&u3)
            .map(|(p, u)| p - shape * d2 * u)
            .collect();
        Curve {
            p: [p0, p1, p2, p3],
        }
    }

    /// Position, first and second derivative in `s` of joint `j` at `s`.
    fn at(&self, j: usize, s: f64) -> (f64, f64, f64) {
        let [a, b, c, d] = [self.p[0][j], self.p[1][j], self.p[2][j], self.p[3][j]];
        let t = 1.0 - s;
        let x = t * t * t * a + 3.0 * t * t * s * b + 3.0 * t * s * s * c + s * s * s * d;
        let dx = 3.0 * (t * t * (b - a) + 2.0 * t * s * (c - b) + s * s * (d - c));
        let ddx = 6.0 * (t * (c - 2.0 * b + a) + s * (d - 2.0 * c + b));
        (x, dx, ddx)
    }

    /// The curve timed as fast as the scaled joint limits allow ([`TOPP_SHARE`] of them),
    /// from the path speed that matches `from`'s velocity to the one that matches `to`'s:
    /// forward and backward passes over [`TOPP_STEPS`] steps of `s` under the largest path
    /// speed at which the accelerations stay feasible. Its points after the start (times from
    /// it), or `None` where the ends' speeds cannot be met.
    fn timed(
        &self,
        space: &JointSpace,
        (from, to): (&TrajectoryPoint, &TrajectoryPoint),
        (vel_scale, acc_scale): (f64, f64),
    ) -> Option<Vec<TrajectoryPoint>> {
        let dof = space.dof();
        let n = TOPP_STEPS;
        let ds = 1.0 / n as f64;
        let mut grid = Grid::with_capacity(n + 1);
        let mut at: Vec<Vec<f64>> = Vec::with_capacity(n + 1);
        for i in 0..=n {
            let (mut x, mut d, mut dd) = (vec![0.0; dof], vec![0.0; dof], vec![0.0; dof]);
            for j in 0..dof {
                (x[j], d[j], dd[j]) = self.at(j, i as f64 * ds);
            }
            at.push(x);
            grid.push(ds, d, dd, (f64::INFINITY, f64::INFINITY));
        }
        let vmax: Vec<f64> = space
            .max_velocity
            .iter()
            .map(|v| v * vel_scale * TOPP_SHARE)
            .collect();
        let amax: Vec<f64> = space
            .max_acceleration
            .iter()
            .map(|a| a * acc_scale * TOPP_SHARE)
            .collect();
        // The path speeds that match the end velocities.
        let speed_of = |v: &[f64], i: usize| norm(v) / norm(&grid.d[i]).max(1e-300);
        let (sd0, sd1) = (speed_of(&from.velocities, 0), speed_of(&to.velocities, n));
        let sd = speeds(&grid, &vmax, &amax, (sd0, sd1))?;
        let times = step_times(&grid, &sd)?;
        let mut points = Vec::with_capacity(n);
        let mut t = 0.0;
        for i in 1..=n {
            t += times[i - 1];
            // The path acceleration of the step into this point.
            let sdd = step_acceleration(&grid, &sd, i - 1);
            let mut p = TrajectoryPoint {
                positions: at[i].clone(),
                velocities: Vec::with_capacity(dof),
                accelerations: Vec::with_capacity(dof),
                time_from_start: t,
            };
            for (&d, &dd) in grid.d[i].iter().zip(&grid.dd[i]) {
                p.velocities.push(d * sd[i]);
                p.accelerations.push(d * sdd + dd * sd[i] * sd[i]);
            }
            points.push(p);
        }
        // The ends exactly where the motions are.
        if let Some(last) = points.last_mut() {
            last.positions.clone_from(&to.positions);
            last.velocities.clone_from(&to.velocities);
        }
        Some(points)
    }
}

/// Steps of the path parameter of a timed blend curve.
pub const TOPP_STEPS: usize = 128;

/// Share of the scaled joint limits a blend curve is timed with (its points are checked
/// against the whole).
pub const TOPP_SHARE: f64 = 0.95;

/// The Bézier shapes tried (see `Curve::new`).
pub const SHAPES: [f64; 5] = [0.9, 0.75, 0.6, 0.45, 0.3];

fn norm(v: &[f64]) -> f64 {
    v.iter().map(|x| x * x).sum::<f64>().sqrt()
}

fn sub(a: &[f64], b: &[f64]) -> Vec<f64> {
    a.iter().zip(b).map(|(x, y)| x - y).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plane() -> JointSpace {
        JointSpace {
            names: vec!["x".into(), "y".into()],
            lower: vec![-1.0; 2],
            upper: vec![1.0; 2],
            continuous: vec![false; 2],
            max_velocity: vec![1.0, 2.0],
            max_acceleration: vec![2.0, 3.0],
            max_jerk: vec![f64::INFINITY; 2],
        }
    }

    fn state(positions: [f64; 2], velocities: [f64; 2]) -> TrajectoryPoint {
        TrajectoryPoint {
            positions: positions.to_vec(),
            velocities: velocities.to_vec(),
            accelerations: vec![0.0; 2],
            time_from_start: 0.0,
        }
    }

    /// A curve around the corner (0.3, 0) from moving along x to moving along y, timed: it
    /// starts and ends in the given states, its velocities are the positions' rates (the mean
    /// of two points' velocities is the step over the time between them), every point within
    /// the velocity limits and within the acceleration limits but for the discretisation, and
    /// it is quicker than stopping at the corner (for the shapes that can be timed: a flat
    /// curve bends too sharply at its ends for the speed there). A start too fast for a
    /// curve's bend is refused.
    #[test]
    fn a_timed_curve_meets_its_ends_within_the_limits() {
        let space = plane();
        let (from, to) = (state([0.0, 0.0], [0.8, 0.0]), state([0.3, 0.3], [0.0, 1.0]));
        let corner = [0.3, 0.0];
        let mut timed = 0;
        for shape in SHAPES {
            let curve = Curve::new(&from, &to, &corner, shape);
            let Some(points) = curve.timed(&space, (&from, &to), (1.0, 1.0)) else {
                continue;
            };
            timed += 1;
            assert_eq!(points.len(), TOPP_STEPS);
            let last = &points[points.len() - 1];
            assert_eq!(
                (&last.positions, &last.velocities),
                (&to.positions, &to.velocities)
            );
            let mut before = &from;
            let mut t = 0.0;
            for p in &points {
                assert!(p.time_from_start > t);
                let dt = p.time_from_start - t;
                for j in 0..2 {
                    let rate = (p.positions[j] - before.positions[j]) / dt;
                    let mean = 0.5 * (p.velocities[j] + before.velocities[j]);
                    assert!(
                        (rate - mean).abs() < 2e-2 * space.max_velocity[j],
                        "{shape}: {rate} vs {mean}"
                    );
                    assert!(
                        p.velocities[j].abs() <= space.max_velocity[j] * TOPP_SHARE * (1.0 + 1e-9)
                    );
                    assert!(
                        p.accelerations[j].abs() <= space.max_acceleration[j] * 1.05,
                        "{shape}: {p:?}"
                    );
                }
                t = p.time_from_start;
                before = p;
            }
            // Stopping at the corner: along x at 0.8 until braking at 2 stops it there, then up
            // y from rest at 3 until moving at 1, and on at 1.
            let brake = (0.3 - 0.8 * 0.8 / 4.0) / 0.8 + 0.8 / 2.0;
            let up = 1.0 / 3.0 + (0.3 - 0.5 * 3.0 * (1.0f64 / 3.0).powi(2)) / 1.0;
            assert!(t < brake + up, "{shape}: {t} s against {} s", brake + up);
        }
        assert!(timed >= 2, "{timed} shapes timed");
        let fast = state([0.0, 0.0], [0.9, 0.0]);
        let sharp = Curve::new(&fast, &to, &corner, 0.05);
        assert!(sharp.timed(&space, (&fast, &to), (1.0, 1.0)).is_none());
    }
}
