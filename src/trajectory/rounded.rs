//! Timing a path through its corners without stopping: each corner is rounded by a circular
//! arc in joint space that leaves the corner by at most a tolerance (MoveIt's time-optimal
//! parameterization rounds corners the same way, its `path_tolerance`), and the whole path is
//! timed as fast as the joint velocity and acceleration limits allow (see `super::phase`).
//!
//! - **The arcs.** At a waypoint where the path turns by `α`, the arc of radius
//!   `r = ℓ / tan(α/2)` starts `ℓ` before the waypoint on the incoming segment and ends `ℓ`
//!   after it on the outgoing one, tangent to both, with `ℓ = δ sin(α/2) / (1 − cos(α/2))` for
//!   a deviation `δ` from the corner, but at most half of either segment. A corner the path
//!   turns back at (within [`REVERSAL`] of π) or given no deviation is passed at rest; a turn
//!   below [`STRAIGHT`] is no corner.
//! - **Collisions.** The straight parts lie on the path's checked segments. The arcs are
//!   checked by [`round_corners`] as chords at most [`ARC_SAGITTA`] from the arc; a corner
//!   whose arc collides gets half the deviation, up to [`ROUND_TRIES`] times, then a stop.
//!   The timed trajectory's points on an arc are no farther apart than those chords, and the
//!   caller re-validates the straight motions between the trajectory's points.
//! - **Timing.** Forward and backward passes over a grid of the arc length ([`GRID_STEP`],
//!   at least [`ARC_STEPS`] steps per arc), from rest to rest, with the joints at a share of
//!   their scaled limits ([`SHARES`]); the points are sampled every `sample_dt` seconds (and
//!   closer on arcs) and checked against the whole limits. Where no share passes, the timing
//!   fails and the caller stops at every waypoint instead. The acceleration jumps where an arc
//!   meets a straight part (as in MoveIt's); jerk limits are not followed.

use super::phase::{over_limits, speeds, step_acceleration, step_times, Grid};
use super::{
    check_waypoints, scaled_limits, SegmentCaps, Trajectory, TrajectoryError, TrajectoryPoint,
};
use crate::collision::{Checker, MotionBatch};
use crate::robot::JointSpace;

/// The node's (and `gmp demo`'s) corner deviation, rad: MoveIt's default `path_tolerance`.
pub const DEFAULT_PATH_TOLERANCE: f64 = 0.1;

/// Turns (rad) below which a waypoint is passed as if straight.
pub const STRAIGHT: f64 = 1e-6;

/// A corner that turns back within this of π (rad) is passed at rest.
pub const REVERSAL: f64 = 1e-3;

/// Largest arc-length step (rad of joint space) of the timing grid.
pub const GRID_STEP: f64 = 2e-3;

/// Fewest grid steps per arc.
pub const ARC_STEPS: usize = 32;

/// Largest distance (rad) of a chord between two trajectory points, or two checked
/// configurations, from an arc.
pub const ARC_SAGITTA: f64 = 1e-4;

/// Shares of the scaled joint limits the timing passes use, tried in turn until every point
/// is within the whole limits.
pub const SHARES: [f64; 5] = [1.0, 0.97, 0.9, 0.8, 0.6];

/// Halvings of a corner's deviation after its arc collided, before the corner becomes a stop.
pub const ROUND_TRIES: usize = 4;

/// A piece of the rounded path.
enum Piece {
    /// A straight part of segment `segment` (of the kept segments).
    Line {
        from: Vec<f64>,
        dir: Vec<f64>,
        len: f64,
        segment: usize,
    },
    /// The arc rounding the corner between kept segments `segment` and `segment + 1`.
    Arc {
        centre: Vec<f64>,
        x: Vec<f64>,
        y: Vec<f64>,
        r: f64,
        angle: f64,
        segment: usize,
    },
}

impl Piece {
    fn len(&self) -> f64 {
        match self {
            Piece::Line { len, .. } => *len,
            Piece::Arc { r, angle, .. } => r * angle,
        }
    }

    /// Position, first and second derivative in arc length at arc length `s` of the piece.
    fn at(&self, s: f64) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
        match self {
            Piece::Line { from, dir, .. } => (
                from.iter().zip(dir).map(|(a, d)| a + s * d).collect(),
                dir.clone(),
                vec![0.0; dir.len()],
            ),
            Piece::Arc {
                centre, x, y, r, ..
            } => {
                let th = s / r;
                let (sn, cs) = th.sin_cos();
                let n = centre.len();
                let (mut q, mut d, mut dd) = (vec![0.0; n], vec![0.0; n], vec![0.0; n]);
                for j in 0..n {
                    q[j] = centre[j] + r * (x[j] * cs + y[j] * sn);
                    d[j] = -x[j] * sn + y[j] * cs;
                    dd[j] = -(x[j] * cs + y[j] * sn) / r;
                }
                (q, d, dd)
            }
        }
    }

    /// Largest arc-length step between points of the piece that keeps chords within
    /// [`ARC_SAGITTA`] of it (infinite on a line).
    fn chord(&self) -> f64 {
        match self {
            Piece::Line { .. } => f64::INFINITY,
            Piece::Arc { r, .. } => {
                let half = (1.0 - (ARC_SAGITTA / r).min(1.0)).acos();
                2.0 * half * r
            }
        }
    }
}

/// A path with its corners rounded.
struct Rounded {
    pieces: Vec<Piece>,
    /// Whether the path stops after each piece (at a corner passed at rest).
    stop_after: Vec<bool>,
    /// The kept segments' lengths and their index among the path's segments.
    segments: Vec<(f64, usize)>,
    /// The corner (index of its waypoint in the path) each arc rounds, by piece.
    corner_of: Vec<Option<usize>>,
    /// The path's first and last waypoint, unwrapped.
    ends: (Vec<f64>, Vec<f64>),
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// The path with each corner `k` (waypoint `k`) rounded to leave it by at most `corners[k]`
/// (the ends' values are not used). Positions are unwrapped from the first waypoint, and
/// segments of length 0 are dropped (a corner between them takes the smaller deviation).
fn round(space: &JointSpace, path: &[Vec<f64>], corners: &[f64]) -> Rounded {
    let dof = space.dof();
    // Kept waypoints (unwrapped) with their deviation, and the kept segments.
    let mut points: Vec<(Vec<f64>, f64)> = vec![(path[0].clone(), 0.0)];
    let mut segments = Vec::new();
    let mut delta = vec![0.0; dof];
    for (k, w) in path.windows(2).enumerate() {
        space.difference(&w[0], &w[1], &mut delta);
        let len = dot(&delta, &delta).sqrt();
        let dev = corners.get(k + 1).copied().unwrap_or(0.0);
        let Some(last) = points.last_mut() else {
            continue;
        };
        if len < 1e-12 {
            last.1 = last.1.min(dev);
            continue;
        }
        let q: Vec<f64> = last.0.iter().zip(&delta).map(|(a, d)| a + d).collect();
        points.push((q, dev));
        segments.push((len, k));
    }
    let dirs: Vec<Vec<f64>> = points
        .windows(2)
        .zip(&segments)
        .map(|(w, (len, _))| {
            w[0].0
                .iter()
                .zip(&w[1].0)
                .map(|(a, b)| (b - a) / len)
                .collect()
        })
        .collect();
    // Per kept corner (interior kept waypoint): the tangent length and the arc, or a stop.
    let m = segments.len();
    let mut tangent = vec![0.0; m + 1];
    let mut stop = vec![false; m + 1];
    let mut arcs: Vec<Option<Piece>> = (0..=m).map(|_| None).collect();
    for c in 1..m {
        let (u1, u2) = (&dirs[c - 1], &dirs[c]);
        let alpha = dot(u1, u2).clamp(-1.0, 1.0).acos();
        if alpha < STRAIGHT {
            continue;
        }
        let dev = points[c].1;
        let half = 0.5 * alpha;
        let l = if alpha > std::f64::consts::PI - REVERSAL || dev.is_nan() || dev <= 0.0 {
            0.0
        } else {
            (dev * half.sin() / (1.0 - half.cos()))
                .min(0.5 * segments[c - 1].0)
                .min(0.5 * segments[c].0)
        };
        if l.is_nan() || l <= 1e-9 {
            stop[c] = true;
            continue;
        }
        let r = l / half.tan();
        let bisector: Vec<f64> = u2.iter().zip(u1).map(|(a, b)| a - b).collect();
        let bn = dot(&bisector, &bisector).sqrt();
        let corner = &points[c].0;
        let centre: Vec<f64> = (0..dof)
            .map(|j| corner[j] + bisector[j] / bn * r / half.cos())
            .collect();
        let x: Vec<f64> = (0..dof)
            .map(|j| (corner[j] - l * u1[j] - centre[j]) / r)
            .collect();
        tangent[c] = l;
        arcs[c] = Some(Piece::Arc {
            centre,
            x,
            y: u1.clone(),
            r,
            angle: alpha,
            segment: c - 1,
        });
    }
    let (mut pieces, mut stop_after, mut corner_of) = (Vec::new(), Vec::new(), Vec::new());
    for c in 0..m {
        let (len, k) = segments[c];
        let start = tangent[c];
        let rest = len - start - tangent[c + 1];
        if rest > 1e-12 {
            pieces.push(Piece::Line {
                from: (0..dof)
                    .map(|j| points[c].0[j] + start * dirs[c][j])
                    .collect(),
                dir: dirs[c].clone(),
                len: rest,
                segment: c,
            });
            stop_after.push(stop[c + 1]);
            corner_of.push(None);
        }
        if let Some(arc) = arcs[c + 1].take() {
            pieces.push(arc);
            stop_after.push(false);
            // The waypoint that ends path segment `k`.
            corner_of.push(Some(k + 1));
        }
    }
    Rounded {
        pieces,
        stop_after,
        segments,
        corner_of,
        ends: (
            points[0].0.clone(),
            points.last().map(|p| p.0.clone()).unwrap_or_default(),
        ),
    }
}

/// Deviations for rounding every corner of `path` by up to `tolerance` (rad), lowered where
/// the arc would collide: every arc is checked in one batched motion check of its chords at
/// `resolution`; a corner whose arc collides is tried again at half its deviation, up to
/// [`ROUND_TRIES`] times, then passed at rest (deviation 0). One value per waypoint (the
/// ends' are 0), for [`super::PathTiming::Rounded`].
pub fn round_corners(
    checker: &dyn Checker,
    path: &[Vec<f64>],
    tolerance: f64,
    resolution: f64,
) -> Result<Vec<f64>, TrajectoryError> {
    let space = checker.space();
    check_waypoints(space, path)?;
    if !(resolution > 0.0 && resolution.is_finite()) {
        return Err(TrajectoryError::BadResolution(resolution));
    }
    let n = path.len();
    let mut corners = vec![0.0; n];
    if !(tolerance > 0.0 && tolerance.is_finite()) || n < 3 {
        return Ok(corners);
    }
    for c in corners.iter_mut().take(n - 1).skip(1) {
        *c = tolerance;
    }
    // Corners whose arcs are still to be checked.
    let mut open: Vec<bool> = (0..n).map(|k| k > 0 && k + 1 < n).collect();
    for round_no in 0..=ROUND_TRIES {
        let rounded = round(space, path, &corners);
        let mut motions = MotionBatch::new(space.dof());
        let mut owner = Vec::new();
        for (piece, corner) in rounded.pieces.iter().zip(&rounded.corner_of) {
            let Some(k) = *corner else { continue };
            if !open[k] {
                continue;
            }
            let steps = (piece.len() / piece.chord()).ceil().max(1.0) as usize;
            let mut prev = piece.at(0.0).0;
            for i in 1..=steps {
                let q = piece.at(piece.len() * i as f64 / steps as f64).0;
                motions.push(&prev, &q)?;
                owner.push(k);
                prev = q;
            }
        }
        if motions.is_empty() {
            break;
        }
        let verdicts = checker.check_motions(&motions, resolution)?;
        let mut hit = vec![false; n];
        for (v, &k) in verdicts.iter().zip(&owner) {
            if !v {
                hit[k] = true;
            }
        }
        for k in 0..n {
            if !open[k] {
                continue;
            }
            if hit[k] {
                corners[k] = if round_no == ROUND_TRIES {
                    0.0
                } else {
                    0.5 * corners[k]
                };
            } else {
                open[k] = false;
            }
        }
        if !hit.iter().any(|h| *h) {
            break;
        }
    }
    Ok(corners)
}

/// The first joint of `space` with a jerk limit, which rounded corners do not follow.
pub fn jerk_limited(space: &JointSpace) -> Option<usize> {
    space.max_jerk.iter().position(|x| x.is_finite())
}

/// Times `path` with its corners rounded by `corners` (one deviation per waypoint, see
/// [`round_corners`]), within `caps` per segment where given; see the module documentation.
pub(super) fn time_rounded(
    space: &JointSpace,
    path: &[Vec<f64>],
    corners: &[f64],
    scales: (f64, f64),
    sample_dt: f64,
    caps: Option<&SegmentCaps>,
) -> Result<Trajectory, TrajectoryError> {
    check_waypoints(space, path)?;
    if !(sample_dt > 0.0 && sample_dt.is_finite()) {
        return Err(TrajectoryError::BadSampleDt(sample_dt));
    }
    if corners.len() != path.len() || corners.iter().any(|c| !(*c >= 0.0 && c.is_finite())) {
        return Err(TrajectoryError::Rounding(format!(
            "need one finite, non-negative corner deviation per waypoint, got {} for {}",
            corners.len(),
            path.len()
        )));
    }
    if let Some(j) = jerk_limited(space) {
        return Err(TrajectoryError::Rounding(format!(
            "joint '{}' has a jerk limit, which rounded corners do not follow",
            space.names.get(j).cloned().unwrap_or_default()
        )));
    }
    let (vmax, amax) = scaled_limits(space, scales.0, scales.1)?;
    let rounded = round(space, path, corners);
    let dof = space.dof();
    if rounded.pieces.is_empty() {
        // Every segment has length 0: the start, at rest.
        return Ok(Trajectory {
            joint_names: space.names.clone(),
            points: vec![rest_at(rounded.ends.0, dof)],
        });
    }
    // Per piece: speed and acceleration caps in arc length.
    let seg_cap = |c: usize| -> (f64, f64) {
        let (len, k) = rounded.segments[c];
        caps.map_or((f64::INFINITY, f64::INFINITY), |caps| {
            (
                SegmentCaps::cap(&caps.speed, k) * len,
                SegmentCaps::cap(&caps.acceleration, k) * len,
            )
        })
    };
    let piece_caps: Vec<(f64, f64)> = rounded
        .pieces
        .iter()
        .map(|p| match p {
            Piece::Line { segment, .. } => seg_cap(*segment),
            Piece::Arc { segment, .. } => {
                let (a, b) = (seg_cap(*segment), seg_cap(segment + 1));
                (a.0.min(b.0), a.1.min(b.1))
            }
        })
        .collect();
    // The grid: each piece's points, its first at the previous piece's last (step 0).
    let mut grid = Grid::with_capacity(1024);
    // Per grid point: its piece and arc length in it.
    let mut at: Vec<(usize, f64)> = Vec::new();
    // Per piece: its first and last grid point.
    let mut span = Vec::with_capacity(rounded.pieces.len());
    for (p, piece) in rounded.pieces.iter().enumerate() {
        let len = piece.len();
        let min_steps = if matches!(piece, Piece::Arc { .. }) {
            ARC_STEPS
        } else {
            1
        };
        let steps = ((len / GRID_STEP).ceil() as usize).max(min_steps);
        let first = at.len();
        let stopped_before = p > 0 && rounded.stop_after[p - 1];
        for i in 0..=steps {
            let s = len * i as f64 / steps as f64;
            let (_, d, dd) = piece.at(s);
            let mut cap = piece_caps[p];
            if (i == 0 && stopped_before) || (i == steps && rounded.stop_after[p]) {
                cap.0 = 0.0;
            }
            let ds = if i == 0 { 0.0 } else { len / steps as f64 };
            grid.push(ds, d, dd, cap);
            at.push((p, s));
        }
        span.push((first, at.len() - 1));
    }
    let mut why = String::new();
    for share in SHARES {
        let v: Vec<f64> = vmax.iter().map(|x| x * share).collect();
        let a: Vec<f64> = amax.iter().map(|x| x * share).collect();
        let Some(sd) = speeds(&grid, &v, &a, (0.0, 0.0)) else {
            why = "no speed profile from rest to rest".into();
            continue;
        };
        let Some(times) = step_times(&grid, &sd) else {
            why = "the profile stands still inside a piece".into();
            continue;
        };
        let profile = Profile {
            grid: &grid,
            sd: &sd,
            times: &times,
            at: &at,
            span: &span,
        };
        let points = sample(&rounded, &profile, sample_dt);
        let bad = points.iter().position(|p| {
            p.positions.iter().any(|x| !x.is_finite()) || space.validate(&p.positions).is_err()
        });
        if let Some(i) = bad {
            why = format!("point {i} leaves the joint limits");
            continue;
        }
        if let Some(w) = over_limits(space, &points, scales) {
            why = w;
            continue;
        }
        return Ok(Trajectory {
            joint_names: space.names.clone(),
            points,
        });
    }
    Err(TrajectoryError::Rounding(why))
}

/// A timed grid: the grid, its speeds and step times, each grid point's piece and arc length
/// in it, and each piece's first and last grid point.
#[derive(Clone, Copy)]
struct Profile<'a> {
    grid: &'a Grid,
    sd: &'a [f64],
    times: &'a [f64],
    at: &'a [(usize, f64)],
    span: &'a [(usize, usize)],
}

/// Relative tolerance on the direction of two steps for [`straight_runs`] to join them.
pub const STRAIGHT_RUN: f64 = 1e-9;

/// `points` with every point dropped whose step from the one before goes the way of the run
/// that point ends (within [`STRAIGHT_RUN`] per unit direction, which keeps every dropped
/// point within nanometres of the joined motion): the straight parts of a rounded trajectory
/// become one motion each, its arcs stay chord by chord.
pub fn straight_runs(points: &[Vec<f64>]) -> Vec<Vec<f64>> {
    let unit = |a: &[f64], b: &[f64]| -> Option<Vec<f64>> {
        let d: Vec<f64> = a.iter().zip(b).map(|(x, y)| y - x).collect();
        let n = dot(&d, &d).sqrt();
        (n > 0.0).then(|| d.iter().map(|x| x / n).collect())
    };
    let mut out: Vec<Vec<f64>> = Vec::with_capacity(points.len());
    // The direction of the last run (from the last kept point but one to the last).
    let mut run: Option<Vec<f64>> = None;
    for p in points {
        let n = out.len();
        if n >= 2 {
            if let (Some(dir), Some(d)) = (&run, unit(&out[n - 1], p)) {
                if d.iter()
                    .zip(dir)
                    .all(|(a, b)| (a - b).abs() <= STRAIGHT_RUN)
                {
                    // Same line, same way: the run now ends at `p`.
                    out[n - 1].clone_from(p);
                    continue;
                }
            }
        }
        run = out.last().and_then(|last| unit(last, p));
        out.push(p.clone());
    }
    out
}

fn rest_at(positions: Vec<f64>, dof: usize) -> TrajectoryPoint {
    TrajectoryPoint {
        positions,
        velocities: vec![0.0; dof],
        accelerations: vec![0.0; dof],
        time_from_start: 0.0,
    }
}

/// The trajectory's points: per piece, equal time steps of at most `sample_dt` (on an arc also
/// at most its chord length apart), each piece's end included, from the start at rest.
fn sample(rounded: &Rounded, profile: &Profile<'_>, sample_dt: f64) -> Vec<TrajectoryPoint> {
    let Profile {
        grid,
        sd,
        times,
        at,
        span,
    } = *profile;
    let dof = rounded.ends.0.len();
    // The time of every grid point.
    let mut clock = Vec::with_capacity(at.len());
    clock.push(0.0);
    for t in times {
        let last = clock.last().copied().unwrap_or(0.0);
        clock.push(last + t);
    }
    let mut first = rest_at(rounded.ends.0.clone(), dof);
    if !grid.ds.is_empty() {
        let sdd = step_acceleration(grid, sd, 0);
        first.accelerations = grid.d[0].iter().map(|d| d * sdd).collect();
    }
    let mut points = vec![first];
    for (p, piece) in rounded.pieces.iter().enumerate() {
        let (a, b) = span[p];
        let (t0, t1) = (clock[a], clock[b]);
        let mut n = ((t1 - t0) / sample_dt).ceil().max(1.0) as usize;
        let chord = piece.chord();
        if chord.is_finite() {
            n = n.max((piece.len() / chord).ceil() as usize);
        }
        let mut g = a;
        for i in 1..=n {
            let t = if i == n {
                t1
            } else {
                t0 + (t1 - t0) * i as f64 / n as f64
            };
            // The grid step holding `t`.
            while g + 1 < b && clock[g + 1] < t {
                g += 1;
            }
            let sdd = step_acceleration(grid, sd, g);
            let tau = (t - clock[g]).max(0.0);
            let (s0, s1) = (at[g].1, at[g + 1].1);
            let (s, speed) = if i == n {
                (at[b].1, sd[b])
            } else {
                (
                    (s0 + sd[g] * tau + 0.5 * sdd * tau * tau).clamp(s0, s1),
                    (sd[g] + sdd * tau).max(0.0),
                )
            };
            let (q, d, dd) = piece.at(s);
            points.push(TrajectoryPoint {
                positions: q,
                velocities: d.iter().map(|x| x * speed).collect(),
                accelerations: d
                    .iter()
                    .zip(&dd)
                    .map(|(x, y)| x * sdd + y * speed * speed)
                    .collect(),
                time_from_start: t,
            });
        }
    }
    if let Some(last) = points.last_mut() {
        // The path's end exactly, at rest.
        last.positions.clone_from(&rounded.ends.1);
        last.velocities = vec![0.0; dof];
    }
    points
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trajectory::time_parameterize;

    fn plane(continuous: bool) -> JointSpace {
        JointSpace {
            names: vec!["x".into(), "y".into()],
            lower: vec![-1.0; 2],
            upper: vec![1.0; 2],
            continuous: vec![continuous, false],
            max_velocity: vec![1.0, 2.0],
            max_acceleration: vec![2.0, 3.0],
            max_jerk: vec![f64::INFINITY; 2],
        }
    }

    fn speed(p: &TrajectoryPoint) -> f64 {
        dot(&p.velocities, &p.velocities).sqrt()
    }

    /// Distance of `q` from the polyline `path`.
    fn off_path(path: &[Vec<f64>], q: &[f64]) -> f64 {
        path.windows(2)
            .map(|w| {
                let d: Vec<f64> = w[1].iter().zip(&w[0]).map(|(b, a)| b - a).collect();
                let e: Vec<f64> = q.iter().zip(&w[0]).map(|(x, a)| x - a).collect();
                let t = (dot(&d, &e) / dot(&d, &d)).clamp(0.0, 1.0);
                let r: Vec<f64> = e.iter().zip(&d).map(|(x, y)| x - t * y).collect();
                dot(&r, &r).sqrt()
            })
            .fold(f64::INFINITY, f64::min)
    }

    /// Checks what every rounded trajectory must be: from the path's start to its end at rest,
    /// times rising, within the velocity and acceleration limits, each velocity the rate of the
    /// positions (the mean of two points' velocities times the time between them is their
    /// step, but for a jump of the acceleration inside the step), and never farther from the
    /// path than `tolerance`.
    fn check(space: &JointSpace, path: &[Vec<f64>], traj: &Trajectory, tolerance: f64) {
        let pts = &traj.points;
        assert_eq!(pts[0].positions, path[0]);
        assert_eq!(pts.last().map(|p| &p.positions), path.last());
        assert_eq!(speed(&pts[0]), 0.0);
        assert_eq!(pts.last().map(speed), Some(0.0));
        assert!(over_limits(space, pts, (1.0, 1.0)).is_none());
        for w in pts.windows(2) {
            let dt = w[1].time_from_start - w[0].time_from_start;
            assert!(dt > 0.0, "times rise");
            assert!(dt <= 0.02 + 1e-12, "sampled every 20 ms or closer");
            for j in 0..space.dof() {
                let step = w[1].positions[j] - w[0].positions[j];
                let mean = 0.5 * (w[0].velocities[j] + w[1].velocities[j]) * dt;
                // Exact for a constant acceleration; where the acceleration jumps by up to
                // twice its limit inside the step, off by up to a quarter of limit x dt².
                let bound = 0.25 * space.max_acceleration[j] * dt * dt + 1e-9;
                assert!(
                    (step - mean).abs() <= bound,
                    "joint {j}: {step} against {mean}"
                );
            }
        }
        for p in pts {
            assert!(off_path(path, &p.positions) <= tolerance + 1e-9);
        }
    }

    /// An L-shaped path (x, then y): rounded at 0.1 it passes the corner moving (its slowest
    /// point near the corner well above rest), comes no nearer than its arc allows, and takes
    /// less time than stopping there. Without a tolerance the corner is passed at rest.
    #[test]
    fn a_rounded_corner_is_passed_moving_within_the_tolerance() {
        let space = plane(false);
        let path = vec![vec![-0.6, -0.6], vec![0.4, -0.6], vec![0.4, 0.6]];
        let corners = vec![0.0, 0.1, 0.0];
        let traj = time_rounded(&space, &path, &corners, (1.0, 1.0), 0.02, None).expect("timed");
        check(&space, &path, &traj, 0.1);
        let stopping = time_parameterize(&space, &path, 1.0, 1.0, 0.02).expect("timed");
        assert!(traj.duration() < 0.9 * stopping.duration());
        // The point nearest the corner: on the arc's middle, 0.1 from it, still moving.
        let corner = &path[1];
        let (nearest, p) = traj
            .points
            .iter()
            .map(|p| {
                let d: Vec<f64> = p.positions.iter().zip(corner).map(|(a, b)| a - b).collect();
                (dot(&d, &d).sqrt(), p)
            })
            .fold((f64::INFINITY, &traj.points[0]), |a, b| {
                if b.0 < a.0 {
                    b
                } else {
                    a
                }
            });
        assert!((nearest - 0.1).abs() < 2e-3, "nearest {nearest}");
        assert!(speed(p) > 0.2, "moving at the corner: {}", speed(p));
        // With no deviation the corner is a stop, timed as the stopping trajectory.
        let flat = time_rounded(&space, &path, &[0.0; 3], (1.0, 1.0), 0.02, None).expect("timed");
        check(&space, &path, &flat, 0.0);
        assert!((flat.duration() - stopping.duration()).abs() < 1e-3 * stopping.duration());
        let at_corner = flat
            .points
            .iter()
            .find(|p| {
                p.positions
                    .iter()
                    .zip(corner)
                    .all(|(a, b)| (a - b).abs() < 1e-12)
            })
            .expect("a point at the corner");
        assert!(speed(at_corner) < 1e-9);
    }

    /// A path that turns back on itself stops where it turns, whatever the tolerance; a turn of
    /// a few degrees is passed nearly at full speed.
    #[test]
    fn reversals_stop_and_slight_turns_barely_slow() {
        let space = plane(false);
        let back = vec![vec![-0.5, 0.0], vec![0.5, 0.0], vec![0.0, 0.0]];
        let traj =
            time_rounded(&space, &back, &[0.0, 0.2, 0.0], (1.0, 1.0), 0.02, None).expect("timed");
        check(&space, &back, &traj, 0.0);
        let turn = traj
            .points
            .iter()
            .find(|p| (p.positions[0] - 0.5).abs() < 1e-12)
            .expect("a point where it turns");
        assert!(speed(turn) < 1e-9);
        let bend = vec![vec![-0.8, 0.0], vec![0.0, 0.0], vec![0.8, 0.05]];
        let traj =
            time_rounded(&space, &bend, &[0.0, 0.05, 0.0], (1.0, 1.0), 0.02, None).expect("timed");
        check(&space, &bend, &traj, 0.05);
        let slowest_inside = traj.points[1..traj.points.len() - 1]
            .iter()
            .filter(|p| p.positions[0].abs() < 0.1)
            .map(speed)
            .fold(f64::INFINITY, f64::min);
        assert!(slowest_inside > 0.9, "{slowest_inside}");
    }

    /// A continuous joint's path across ±π is timed the short way, its positions unwrapped.
    #[test]
    fn continuous_joints_are_unwrapped() {
        let mut space = plane(true);
        space.lower[0] = -std::f64::consts::PI;
        space.upper[0] = std::f64::consts::PI;
        let path = vec![vec![2.9, 0.0], vec![-2.9, 0.3], vec![-2.9, 0.6]];
        let traj =
            time_rounded(&space, &path, &[0.0, 0.1, 0.0], (1.0, 1.0), 0.02, None).expect("timed");
        let last = traj.points.last().expect("points");
        assert!((last.positions[0] - (2.0 * std::f64::consts::PI - 2.9)).abs() < 1e-9);
        for w in traj.points.windows(2) {
            assert!((w[1].positions[0] - w[0].positions[0]).abs() < 0.05);
        }
    }

    /// Speed caps per segment hold on the segment's line and on both arcs next to it.
    #[test]
    fn segment_caps_slow_their_segment() {
        let space = plane(false);
        let path = vec![vec![-0.6, -0.6], vec![0.4, -0.6], vec![0.4, 0.6]];
        let corners = [0.0, 0.1, 0.0];
        let free = time_rounded(&space, &path, &corners, (1.0, 1.0), 0.02, None).expect("timed");
        let caps = SegmentCaps {
            speed: vec![f64::INFINITY, 0.25],
            acceleration: vec![f64::INFINITY; 2],
        };
        let capped =
            time_rounded(&space, &path, &corners, (1.0, 1.0), 0.02, Some(&caps)).expect("timed");
        assert!(capped.duration() > free.duration());
        // 0.25 of segment 1 (1.2 long) per second: 0.3 rad/s along y.
        for p in &capped.points {
            if p.positions[1] > -0.6 + 1e-9 {
                assert!(speed(p) <= 0.3 * (1.0 + 1e-9), "{}", speed(p));
            }
        }
    }

    /// Points along one line in one direction join into one motion; a turn, a step back
    /// along the line and an arc's chords do not.
    #[test]
    fn straight_runs_join_only_collinear_steps_forward() {
        let p = |x: f64, y: f64| vec![x, y];
        let pts = vec![
            p(0.0, 0.0),
            p(0.1, 0.0),
            p(0.3, 0.0),
            p(0.35, 0.0),
            p(0.35, 0.1),
            p(0.35, 0.05),
            p(0.4, 0.1),
            p(0.5, 0.15),
        ];
        let runs = straight_runs(&pts);
        assert_eq!(
            runs,
            vec![
                p(0.0, 0.0),
                p(0.35, 0.0),
                p(0.35, 0.1),
                p(0.35, 0.05),
                p(0.4, 0.1),
                p(0.5, 0.15)
            ]
        );
        // A rounded trajectory: its lines become one motion each.
        let space = plane(false);
        let path = vec![vec![-0.6, -0.6], vec![0.4, -0.6], vec![0.4, 0.6]];
        let traj =
            time_rounded(&space, &path, &[0.0, 0.1, 0.0], (1.0, 1.0), 0.02, None).expect("timed");
        let runs = straight_runs(&traj.positions());
        assert!(runs.len() < traj.points.len() / 2);
        assert_eq!(runs.first(), traj.positions().first());
        assert_eq!(runs.last(), traj.positions().last());
    }

    /// Unusable input is refused by name: corners not one per waypoint, a negative one, and
    /// joints with jerk limits (rounded corners do not follow them).
    #[test]
    fn unusable_corners_and_jerk_limits_are_refused() {
        let space = plane(false);
        let path = vec![vec![0.0, 0.0], vec![0.5, 0.0], vec![0.5, 0.5]];
        for corners in [vec![0.1], vec![0.0, -0.1, 0.0], vec![0.0, f64::NAN, 0.0]] {
            let e =
                time_rounded(&space, &path, &corners, (1.0, 1.0), 0.02, None).expect_err("refused");
            assert!(
                e.to_string().contains("corner deviation per waypoint"),
                "{e}"
            );
        }
        let mut jerky = plane(false);
        jerky.max_jerk[1] = 50.0;
        let e = time_rounded(&jerky, &path, &[0.0, 0.1, 0.0], (1.0, 1.0), 0.02, None)
            .expect_err("refused");
        assert!(e.to_string().contains("joint 'y' has a jerk limit"), "{e}");
    }
}
