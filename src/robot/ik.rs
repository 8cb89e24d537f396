//! Inverse kinematics: planning-group configurations that put a link at a pose.
//!
//! A pose goal names a link of the robot, a target position and, unless the goal is for the
//! position only, a target orientation, all in the robot's root frame (the planning frame),
//! with a tolerance on each. [`IkSolver`] finds group configurations within those tolerances
//! by damped least squares (Levenberg-Marquardt) on the geometric Jacobian of the link:
//! - the joints between the root and the link that belong to the group move (mimic joints
//!   follow their leader with its multiplier); the other joints keep the base state's values;
//! - every step is clamped to the joint limits (continuous joints wrap into `[-PI, PI]`), so
//!   every solution respects the limits;
//! - it runs from several starting configurations: the caller's first (so the solution
//!   nearest to the current state is found when the descent reaches it), then random ones
//!   drawn from a generator seeded by [`IkOptions::seed`], in batches of [`START_BATCH`]
//!   solved in parallel. The solutions come back in the order of their starts, so the answer
//!   is the same for the same seed however many threads ran.
//!
//! Collision checking of the solutions is the caller's (see `planners::pose`): this module
//! knows the kinematics only.

use std::time::{Duration, Instant};

use nalgebra::{Isometry3, Matrix6, UnitQuaternion, Vector3, Vector6};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rayon::prelude::*;

use super::load::RobotModel;
use super::model::{JointKind, KinematicTree};
use super::space::{wrap_angle, JointSpace};
use super::PlanningGroup;

/// Default position tolerance of a pose goal (m).
pub const DEFAULT_POSITION_TOLERANCE: f64 = 1e-4;
/// Default orientation tolerance of a pose goal (rad, the angle of the rotation between the
/// reached and the target orientation).
pub const DEFAULT_ORIENTATION_TOLERANCE: f64 = 1e-3;
/// Starting configurations solved side by side (one batch of the parallel search).
pub const START_BATCH: usize = 16;
/// Weight of the orientation error against the position error in the least-squares steps
/// (m per rad): an error of 1 rad counts as much as one of 0.5 m. It shapes the descent only;
/// convergence is judged by the two tolerances separately.
const ORIENTATION_WEIGHT: f64 = 0.5;
/// Largest change of one joint in one step (rad or m), so that a step far from the solution
/// does not jump across the joint space.
const MAX_STEP: f64 = 0.4;

/// Where a link should be.
#[derive(Clone, Debug, PartialEq)]
pub struct PoseTarget {
    /// The link (index into the kinematic tree's links).
    pub link: usize,
    /// Target pose of the link frame in the root frame. Its rotation is ignored when
    /// `orientation_tolerance` is `None`.
    pub pose: Isometry3<f64>,
    /// Largest distance between the reached and the target position (m), positive.
    pub position_tolerance: f64,
    /// Largest angle between the reached and the target orientation (rad), positive; `None`:
    /// any orientation (a position goal).
    pub orientation_tolerance: Option<f64>,
}

impl PoseTarget {
    /// A goal for the full pose with the default tolerances.
    pub fn pose(link: usize, pose: Isometry3<f64>) -> Self {
        Self {
            link,
            pose,
            position_tolerance: DEFAULT_POSITION_TOLERANCE,
            orientation_tolerance: Some(DEFAULT_ORIENTATION_TOLERANCE),
        }
    }

    /// A goal for the position only, with the default tolerance.
    pub fn position(link: usize, position: Vector3<f64>) -> Self {
        Self {
            link,
            pose: Isometry3::translation(position.x, position.y, position.z),
            position_tolerance: DEFAULT_POSITION_TOLERANCE,
            orientation_tolerance: None,
        }
    }
}

/// How hard to search.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct IkOptions {
    /// Seed of the random starting configurations.
    pub seed: u64,
    /// Starting configurations at most (the caller's included).
    pub starts: usize,
    /// Least-squares iterations per start at most.
    pub max_iterations: usize,
    /// Stop after the batch in which this many distinct solutions have been found.
    pub max_solutions: usize,
    /// No batch of starts but the first begins after this instant (`None`: no limit); the
    /// solutions found by then are the answer.
    pub deadline: Option<Instant>,
}

impl IkOptions {
    /// True when [`Self::deadline`] has passed.
    pub fn past_deadline(&self) -> bool {
        self.deadline.is_some_and(|d| Instant::now() >= d)
    }
}

/// The time limit of an inverse kinematics search of `group`: `requested` (seconds), else the
/// group's `kinematics_solver_timeout` ([`RobotModel::ik_timeout`]), else none. It must be
/// positive and finite (one too large for a [`Duration`] is [`Duration::MAX`]); otherwise the
/// reason, for an error naming the input.
pub fn search_time_limit(
    robot: &RobotModel,
    group: &str,
    requested: Option<f64>,
) -> Result<Option<Duration>, String> {
    match requested.or_else(|| robot.ik_timeout(group)) {
        None => Ok(None),
        Some(s) if s > 0.0 && s.is_finite() => Ok(Some(
            Duration::try_from_secs_f64(s).unwrap_or(Duration::MAX),
        )),
        Some(s) => Err(format!("must be a positive number of seconds, got {s}")),
    }
}

impl Default for IkOptions {
    fn default() -> Self {
        Self {
            seed: 0,
            starts: 128,
            max_iterations: 200,
            max_solutions: 8,
            deadline: None,
        }
    }
}

/// A configuration that reaches the target.
#[derive(Clone, Debug, PartialEq)]
pub struct IkSolution {
    /// Group configuration (group joint order), within the joint limits.
    pub config: Vec<f64>,
    /// Distance between the reached and the target position (m; 0 for a goal region, which
    /// has no target pose).
    pub position_error: f64,
    /// Angle between the reached and the target orientation (rad; 0 for a position goal and
    /// a goal region).
    pub orientation_error: f64,
    /// Which start it came from (0: the caller's configuration).
    pub start: usize,
}

/// Why a pose goal cannot be solved for at all.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum IkError {
    /// The goal is malformed (a tolerance or a coordinate).
    #[error("pose goal: {0}")]
    BadTarget(String),
    /// No joint of the group moves the link.
    #[error("pose goal: link '{link}' is not moved by any joint of group '{group}'")]
    LinkNotMoved {
        /// The link.
        link: String,
        /// The group.
        group: String,
    },
    /// A configuration of the wrong length.
    #[error("pose goal: configuration has {got} values, group '{group}' has {want} joints")]
    WrongLength {
        /// The group.
        group: String,
        /// Values given.
        got: usize,
        /// Values expected.
        want: usize,
    },
}

/// One column of the Jacobian: joint `joint` on the chain moves group variable `column` with
/// factor `factor` (1 for the joint's own variable, the multipliers for a mimic joint).
#[derive(Clone, Copy, Debug)]
pub(crate) struct ChainJoint {
    joint: usize,
    column: usize,
    factor: f64,
}

/// The joints between the root and `link` that move it through a variable of `group` (mimic
/// joints through their leader): the columns of the link's Jacobian. Empty when no group joint
/// moves the link; an error names a link index that does not exist.
pub(crate) fn link_chain(
    tree: &KinematicTree,
    group: &PlanningGroup,
    link: usize,
) -> Result<Vec<ChainJoint>, IkError> {
    if link >= tree.links.len() {
        return Err(IkError::BadTarget(format!("no link with index {link}")));
    }
    let path = tree
        .chain(tree.root, link)
        .map_err(|e| IkError::BadTarget(e.to_string()))?;
    Ok(path
        .into_iter()
        .filter(|&j| tree.joints[j].kind.is_moving())
        .filter_map(|joint| {
            let (variable, factor) = leader(tree, joint)?;
            let column = group.variables.iter().position(|&v| v == variable)?;
            Some(ChainJoint {
                joint,
                column,
                factor,
            })
        })
        .collect())
}

/// `(values given, joints of the group)` when `q` is not a configuration of `group`.
pub(crate) fn wrong_length(group: &PlanningGroup, q: &[f64]) -> Option<(usize, usize)> {
    let want = group.space.dof();
    (q.len() != want).then_some((q.len(), want))
}

/// [`IkError::WrongLength`] when `q` is not a configuration of `group`.
fn check_length(group: &PlanningGroup, q: &[f64]) -> Result<(), IkError> {
    wrong_length(group, q).map_or(Ok(()), |(got, want)| {
        Err(IkError::WrongLength {
            group: group.name.clone(),
            got,
            want,
        })
    })
}

/// The link poses (root frame) of the full state of `base` with `group`'s joints at `q`.
pub(crate) fn group_poses(
    tree: &KinematicTree,
    group: &PlanningGroup,
    base: &[f64],
    q: &[f64],
    out: &mut Vec<Isometry3<f64>>,
) {
    let state = group.full_state(base, q);
    tree.forward_kinematics_into(&state, out);
}

/// Puts `q` inside the joint limits of `space` (continuous joints wrapped into `[-PI, PI]`).
pub(crate) fn clamp_to_limits(space: &JointSpace, q: &mut [f64]) {
    for (k, v) in q.iter_mut().enumerate() {
        *v = if space.continuous[k] {
            wrap_angle(*v)
        } else {
            v.clamp(space.lower[k], space.upper[k])
        };
    }
}

/// The geometric Jacobian of the point `point` (root frame) carried by the last link of
/// `chain`, at the link poses `poses`: per group variable, the point's linear velocity and
/// (times `angular_weight`) the link's angular velocity, both in the root frame, for a unit
/// rate of the variable. `cols` has one entry per group variable.
pub(crate) fn point_jacobian(
    tree: &KinematicTree,
    chain: &[ChainJoint],
    poses: &[Isometry3<f64>],
    point: &Vector3<f64>,
    angular_weight: f64,
    cols: &mut [Vector6<f64>],
) {
    cols.iter_mut().for_each(|c| *c = Vector6::zeros());
    for cj in chain {
        let joint = &tree.joints[cj.joint];
        let frame = poses[joint.parent] * joint.origin;
        let axis = frame.rotation * joint.axis;
        let col = match joint.kind {
            JointKind::Prismatic => Vector6::new(axis.x, axis.y, axis.z, 0.0, 0.0, 0.0),
            _ => {
                let lin = axis.cross(&(point - frame.translation.vector));
                let w = angular_weight;
                Vector6::new(lin.x, lin.y, lin.z, w * axis.x, w * axis.y, w * axis.z)
            }
        };
        cols[cj.column] += col * cj.factor;
    }
}

/// Inverse kinematics of one link for one planning group and base state.
#[derive(Clone, Debug)]
pub struct IkSolver<'a> {
    tree: &'a KinematicTree,
    group: &'a PlanningGroup,
    base: Vec<f64>,
    target: PoseTarget,
    chain: Vec<ChainJoint>,
}

/// The group variable a joint's value follows and the factor, through mimic relations.
fn leader(tree: &KinematicTree, joint: usize) -> Option<(usize, f64)> {
    let j = &tree.joints[joint];
    if let Some(v) = j.variable {
        return Some((v, 1.0));
    }
    let m = j.mimic?;
    // A mimic chain is acyclic (the tree checks it at load); its length is bounded by the
    // number of joints.
    leader(tree, m.joint).map(|(v, f)| (v, f * m.multiplier))
}

impl<'a> IkSolver<'a> {
    /// A solver for `target` moving `group`'s joints; the other joints hold the values of the
    /// full state `base`.
    pub fn new(
        robot: &'a RobotModel,
        group: &'a PlanningGroup,
        base: &[f64],
        target: PoseTarget,
    ) -> Result<Self, IkError> {
        let tree = &robot.tree;
        if base.len() != tree.num_variables() {
            return Err(IkError::BadTarget(format!(
                "base state has {} values, the robot has {} variables",
                base.len(),
                tree.num_variables()
            )));
        }
        let link_name = tree
            .links
            .get(target.link)
            .map(|l| l.name.clone())
            .ok_or_else(|| IkError::BadTarget(format!("no link with index {}", target.link)))?;
        let t = target.pose.translation.vector;
        let r = target.pose.rotation.coords;
        if !(t.iter().all(|v| v.is_finite()) && r.iter().all(|v| v.is_finite())) {
            return Err(IkError::BadTarget(format!(
                "target pose of link '{link_name}' is not finite"
            )));
        }
        if !(target.position_tolerance > 0.0 && target.position_tolerance.is_finite()) {
            return Err(IkError::BadTarget(format!(
                "position tolerance must be positive and finite, got {}",
                target.position_tolerance
            )));
        }
        if let Some(o) = target.orientation_tolerance {
            if !(o > 0.0 && o.is_finite()) {
                return Err(IkError::BadTarget(format!(
                    "orientation tolerance must be positive and finite, got {o}"
                )));
            }
        }
        let chain = link_chain(tree, group, target.link)?;
        if chain.is_empty() {
            return Err(IkError::LinkNotMoved {
                link: link_name,
                group: group.name.clone(),
            });
        }
        Ok(Self {
            tree,
            group,
            base: base.to_vec(),
            target,
            chain,
        })
    }

    /// Moves the target to `pose` (same link and tolerances), for a sequence of nearby
    /// targets solved one from the other. Errors when the pose is not finite.
    pub fn set_target_pose(&mut self, pose: Isometry3<f64>) -> Result<(), IkError> {
        let t = pose.translation.vector;
        let r = pose.rotation.coords;
        if !(t.iter().all(|v| v.is_finite()) && r.iter().all(|v| v.is_finite())) {
            return Err(IkError::BadTarget("target pose is not finite".into()));
        }
        self.target.pose = pose;
        Ok(())
    }

    /// The pose of the target's link at group configuration `q`.
    pub fn link_pose(&self, q: &[f64]) -> Result<Isometry3<f64>, IkError> {
        self.check_len(q)?;
        let mut poses = Vec::new();
        self.poses(q, &mut poses);
        Ok(poses[self.target.link])
    }

    fn check_len(&self, q: &[f64]) -> Result<(), IkError> {
        check_length(self.group, q)
    }

    fn poses(&self, q: &[f64], out: &mut Vec<Isometry3<f64>>) {
        group_poses(self.tree, self.group, &self.base, q, out);
    }

    /// Position error (target minus reached) and orientation error (the rotation vector
    /// taking the reached orientation to the target, root frame; zero for a position goal).
    fn error_vectors(&self, pose: &Isometry3<f64>) -> (Vector3<f64>, Vector3<f64>) {
        let p = self.target.pose.translation.vector - pose.translation.vector;
        let r = if self.target.orientation_tolerance.is_some() {
            (self.target.pose.rotation * pose.rotation.inverse()).scaled_axis()
        } else {
            Vector3::zeros()
        };
        (p, r)
    }

    fn converged(&self, p: &Vector3<f64>, r: &Vector3<f64>) -> bool {
        p.norm() <= self.target.position_tolerance
            && self
                .target
                .orientation_tolerance
                .is_none_or(|tol| r.norm() <= tol)
    }

    /// The weighted error vector the steps minimise.
    fn weighted(&self, p: &Vector3<f64>, r: &Vector3<f64>) -> Vector6<f64> {
        let w = ORIENTATION_WEIGHT;
        Vector6::new(p.x, p.y, p.z, w * r.x, w * r.y, w * r.z)
    }

    /// The weighted geometric Jacobian at the link poses `poses`: one column per group joint.
    fn jacobian(&self, poses: &[Isometry3<f64>], cols: &mut [Vector6<f64>]) {
        let tip = poses[self.target.link].translation.vector;
        let w = if self.target.orientation_tolerance.is_some() {
            ORIENTATION_WEIGHT
        } else {
            0.0
        };
        point_jacobian(self.tree, &self.chain, poses, &tip, w, cols);
    }

    /// Puts `q` inside the joint limits (continuous joints wrapped).
    fn clamp(&self, q: &mut [f64]) {
        clamp_to_limits(&self.group.space, q);
    }

    /// Descends from `q0` (clamped into the limits first); the solution when it converges
    /// within the iteration budget, `None` when it stalls or runs out.
    pub fn solve_from(
        &self,
        q0: &[f64],
        max_iterations: usize,
    ) -> Result<Option<IkSolution>, IkError> {
        self.check_len(q0)?;
        Ok(self.descend(q0, max_iterations, 0))
    }

    fn descend(&self, q0: &[f64], max_iterations: usize, start: usize) -> Option<IkSolution> {
        let n = q0.len();
        let mut q = q0.to_vec();
        self.clamp(&mut q);
        if q.iter().any(|v| !v.is_finite()) {
            return None;
        }
        // The link poses of `q` and of the step being tried, swapped when the step is taken.
        let (mut poses, mut trial_poses) = (Vec::new(), Vec::new());
        let mut cols = vec![Vector6::zeros(); n];
        let mut trial = vec![0.0; n];
        self.poses(&q, &mut poses);
        let (mut p, mut r) = self.error_vectors(&poses[self.target.link]);
        let mut lambda = 1e-2;
        for _ in 0..max_iterations {
            if self.converged(&p, &r) {
                break;
            }
            let e = self.weighted(&p, &r);
            let cost = e.norm_squared();
            self.jacobian(&poses, &mut cols);
            let mut jjt = Matrix6::zeros();
            for c in &cols {
                jjt += c * c.transpose();
            }
            let mut improved = false;
            // Raise the damping until a step lowers the error (or give up: a local minimum
            // or a limit the descent leans against).
            for _ in 0..10 {
                let a = jjt + Matrix6::identity() * (lambda * lambda);
                let Some(y) = a.cholesky().map(|c| c.solve(&e)) else {
                    lambda *= 10.0;
                    continue;
                };
                let mut dx: Vec<f64> = cols.iter().map(|c| c.dot(&y)).collect();
                let big = dx.iter().fold(0.0f64, |m, v| m.max(v.abs()));
                if big > MAX_STEP {
                    dx.iter_mut().for_each(|v| *v *= MAX_STEP / big);
                }
                for k in 0..n {
                    trial[k] = q[k] + dx[k];
                }
                self.clamp(&mut trial);
                self.poses(&trial, &mut trial_poses);
                let (tp, tr) = self.error_vectors(&trial_poses[self.target.link]);
                if self.weighted(&tp, &tr).norm_squared() < cost {
                    q.copy_from_slice(&trial);
                    std::mem::swap(&mut poses, &mut trial_poses);
                    (p, r) = (tp, tr);
                    lambda = (lambda * 0.3).max(1e-6);
                    improved = true;
                    break;
                }
                lambda *= 5.0;
            }
            if !improved {
                break;
            }
        }
        self.converged(&p, &r).then(|| IkSolution {
            config: q,
            position_error: p.norm(),
            orientation_error: r.norm(),
            start,
        })
    }

    /// Distinct solutions (no two within 1e-3 of each other in joint space), from `first`
    /// (the caller's configuration, usually the current state) and then random starts, in the
    /// order of their starts. Empty when none converged.
    pub fn solve(
        &self,
        first: Option<&[f64]>,
        opts: &IkOptions,
    ) -> Result<Vec<IkSolution>, IkError> {
        let all = |fresh: &[IkSolution]| Ok::<_, IkError>(vec![true; fresh.len()]);
        Ok(self.solve_where(first, opts, all)?.0)
    }

    /// [`Self::solve`], where the search ends only once `keep` has accepted one of the
    /// solutions: it stops after the batch of starts in which `opts.max_solutions` distinct
    /// solutions have been found with at least one accepted, when the starts run out (a
    /// pose goal in clutter keeps looking for a collision-free solution), or at
    /// `opts.deadline` (the first batch always runs). `keep` is asked once per batch with that
    /// batch's new distinct solutions, in order, and answers one verdict each. Returns every
    /// distinct solution found and its verdict.
    pub fn solve_where<E: From<IkError>>(
        &self,
        first: Option<&[f64]>,
        opts: &IkOptions,
        mut keep: impl FnMut(&[IkSolution]) -> Result<Vec<bool>, E>,
    ) -> Result<(Vec<IkSolution>, Vec<bool>), E> {
        let mut search = IkSearch::new(self, first, opts)?;
        search.run(&mut keep)?;
        Ok(search.finish())
    }
}

/// A goal that a descent from a starting configuration can reach, searched for from many
/// starts by [`IkSearch`]: a pose of a link ([`IkSolver`]) or a goal region, every
/// configuration that satisfies a set of constraints
/// ([`crate::robot::constraint::ConstraintSet`]: MoveIt's goal constraints).
pub trait GoalSolver: Sync {
    /// The planning group whose configurations solve it.
    fn goal_group(&self) -> &PlanningGroup;
    /// A solution reached from `q0` (start number `start`) in at most `max_iterations`
    /// steps, within the joint limits; `None` when the descent does not get there.
    fn reach(&self, q0: &[f64], max_iterations: usize, start: usize) -> Option<IkSolution>;
    /// True for a goal region (the messages of a failed search speak of constraints, not of
    /// a pose).
    fn is_region(&self) -> bool {
        false
    }
}

impl GoalSolver for IkSolver<'_> {
    fn goal_group(&self) -> &PlanningGroup {
        self.group
    }

    fn reach(&self, q0: &[f64], max_iterations: usize, start: usize) -> Option<IkSolution> {
        self.descend(q0, max_iterations, start)
    }
}

/// An inverse kinematics search in progress, one batch of [`START_BATCH`] starts at a time
/// ([`IkSolver::solve_where`] runs one to the end): the searches of several goal poses take
/// turns with it, so that a pose without a solution cannot use up the time of the others.
/// The batches are those of [`IkSolver::solve_where`], so each search finds the same
/// solutions however the turns fall.
pub struct IkSearch<'s, S: GoalSolver + ?Sized> {
    solver: &'s S,
    first: Option<Vec<f64>>,
    opts: IkOptions,
    rng: ChaCha8Rng,
    found: Vec<IkSolution>,
    kept: Vec<bool>,
    accepted: usize,
    next: usize,
}

impl<'s, S: GoalSolver + ?Sized> IkSearch<'s, S> {
    /// A search for `solver`'s target from `first` (then random starts) with `opts`; nothing
    /// is solved yet. Errors when `first` is not a group configuration.
    pub fn new(solver: &'s S, first: Option<&[f64]>, opts: &IkOptions) -> Result<Self, IkError> {
        if let Some(f) = first {
            check_length(solver.goal_group(), f)?;
        }
        Ok(Self {
            solver,
            first: first.map(<[f64]>::to_vec),
            opts: *opts,
            rng: ChaCha8Rng::seed_from_u64(opts.seed),
            found: Vec::new(),
            kept: Vec::new(),
            accepted: 0,
            next: 0,
        })
    }

    /// True once the starts have run out or `max_solutions` distinct solutions have been found
    /// with one accepted (the deadline is the caller's to watch).
    pub fn done(&self) -> bool {
        self.next >= self.opts.starts
            || (self.accepted > 0 && self.found.len() >= self.opts.max_solutions.max(1))
    }

    /// Starting configurations tried so far.
    pub fn tried(&self) -> usize {
        self.next
    }

    /// Solutions accepted so far.
    pub fn accepted(&self) -> usize {
        self.accepted
    }

    /// Runs the next batch of starts (nothing when [`Self::done`]) and asks `keep` about its
    /// new distinct solutions.
    pub fn step<E: From<IkError>>(
        &mut self,
        mut keep: impl FnMut(&[IkSolution]) -> Result<Vec<bool>, E>,
    ) -> Result<(), E> {
        if self.done() {
            return Ok(());
        }
        let space = &self.solver.goal_group().space;
        let next = self.next;
        let count = START_BATCH.min(self.opts.starts - next);
        let starts: Vec<Vec<f64>> = (next..next + count)
            .map(|i| match (i, &self.first) {
                (0, Some(f)) => f.clone(),
                _ => space.sample_uniform(&mut self.rng),
            })
            .collect();
        let solver = self.solver;
        let max_iterations = self.opts.max_iterations;
        let solved: Vec<Option<IkSolution>> = starts
            .par_iter()
            .enumerate()
            .map(|(i, q0)| solver.reach(q0, max_iterations, next + i))
            .collect();
        let mut fresh: Vec<IkSolution> = Vec::new();
        for s in solved.into_iter().flatten() {
            let near = |f: &IkSolution| space.distance(&f.config, &s.config) < 1e-3;
            if !self.found.iter().any(near) && !fresh.iter().any(near) {
                fresh.push(s);
            }
        }
        if !fresh.is_empty() {
            let verdicts = keep(&fresh)?;
            for (k, s) in fresh.into_iter().enumerate() {
                let ok = verdicts.get(k).copied().unwrap_or(false);
                self.accepted += usize::from(ok);
                self.found.push(s);
                self.kept.push(ok);
            }
        }
        self.next += count;
        Ok(())
    }

    /// Runs batches until [`Self::done`] or, once one batch has run, the options' deadline.
    pub fn run<E: From<IkError>>(
        &mut self,
        mut keep: impl FnMut(&[IkSolution]) -> Result<Vec<bool>, E>,
    ) -> Result<(), E> {
        while !self.done() && (self.next == 0 || !self.opts.past_deadline()) {
            self.step(&mut keep)?;
        }
        Ok(())
    }

    /// Every distinct solution found, in the order of their starts, and its verdict.
    pub fn finish(self) -> (Vec<IkSolution>, Vec<bool>) {
        (self.found, self.kept)
    }
}

/// The link a pose goal of `group` moves by default: the tip of the group's last SRDF chain,
/// else the child link of the group's last joint.
pub fn default_tip_link(robot: &RobotModel, group: &PlanningGroup) -> Option<usize> {
    let chain_tip = robot.srdf.as_ref().and_then(|s| {
        s.group(&group.name)
            .and_then(|g| g.chains.last())
            .and_then(|(_, tip)| robot.tree.link(tip).ok())
    });
    chain_tip.or_else(|| group.joints.last().map(|&j| robot.tree.joints[j].child))
}

/// A pose from a position and an optional quaternion `[x, y, z, w]` (normalised; `None` =
/// the identity rotation). Errors name `what` when the quaternion is zero or not finite.
pub fn pose_from_parts(
    position: [f64; 3],
    quaternion: Option<[f64; 4]>,
    what: &str,
) -> Result<Isometry3<f64>, IkError> {
    if position.iter().any(|v| !v.is_finite()) {
        return Err(IkError::BadTarget(format!(
            "{what}: position {position:?} is not finite"
        )));
    }
    let rotation = match quaternion {
        None => UnitQuaternion::identity(),
        Some(q) => quaternion_rotation(q, what).map_err(IkError::BadTarget)?,
    };
    Ok(Isometry3::from_parts(
        nalgebra::Translation3::new(position[0], position[1], position[2]),
        rotation,
    ))
}

/// A quaternion `[x, y, z, w]` as a rotation (normalised); the error names `what` when it is
/// zero or not finite.
pub fn quaternion_rotation(q: [f64; 4], what: &str) -> Result<UnitQuaternion<f64>, String> {
    let [x, y, z, w] = q;
    let quat = nalgebra::Quaternion::new(w, x, y, z);
    let n = quat.norm();
    if !(n.is_finite() && n > 1e-9) {
        return Err(format!(
            "{what}: quaternion [x, y, z, w] = {q:?} is not a rotation (zero or not finite)"
        ));
    }
    Ok(UnitQuaternion::from_quaternion(quat))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::robot::RobotModel;

    /// The bundled arm with its SRDF.
    pub(crate) fn bundled() -> RobotModel {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("urdf");
        RobotModel::from_urdf_file(
            &dir.join("gmp_arm.urdf"),
            Some(&dir.join("gmp_arm.srdf")),
            &crate::robot::LoadOptions::default(),
        )
        .expect("bundled robot loads")
    }

    /// The bundled arm, its default group, neutral state and tool link.
    struct Arm {
        robot: RobotModel,
        group: PlanningGroup,
        base: Vec<f64>,
        tip: usize,
    }

    fn arm() -> Arm {
        let robot = bundled();
        let group = robot.default_group();
        let base = robot.tree.neutral_state();
        let tip = default_tip_link(&robot, &group).expect("a tip");
        Arm {
            robot,
            group,
            base,
            tip,
        }
    }

    impl Arm {
        /// A random configuration and the tool pose it gives.
        fn random_pose(&self, seed: u64) -> (Vec<f64>, Isometry3<f64>) {
            let q = random_configs(&self.group, 1, seed).remove(0);
            let pose = self
                .robot
                .tree
                .forward_kinematics(&self.group.full_state(&self.base, &q))[self.tip];
            (q, pose)
        }

        /// [`Self::random_pose`] and a solver for the full pose.
        fn pose_solver(&self, seed: u64) -> (Vec<f64>, Isometry3<f64>, IkSolver<'_>) {
            let (q, pose) = self.random_pose(seed);
            let target = PoseTarget::pose(self.tip, pose);
            let solver = IkSolver::new(&self.robot, &self.group, &self.base, target);
            (q, pose, solver.expect("solver"))
        }
    }

    fn random_configs(group: &PlanningGroup, n: usize, seed: u64) -> Vec<Vec<f64>> {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        (0..n)
            .map(|_| group.space.sample_uniform(&mut rng))
            .collect()
    }

    #[test]
    fn reaches_poses_the_arm_can_reach() {
        let a = arm();
        let (robot, group, base, tip) = (&a.robot, &a.group, &a.base, a.tip);
        assert_eq!(robot.tree.links[tip].name, "tool0");
        let mut solved = 0;
        let targets = random_configs(group, 20, 7);
        for q in &targets {
            let pose = robot.tree.forward_kinematics(&group.full_state(base, q))[tip];
            let solver =
                IkSolver::new(robot, group, base, PoseTarget::pose(tip, pose)).expect("solver");
            let sols = solver
                .solve(Some(&group.config_of(base)), &IkOptions::default())
                .expect("solve");
            if let Some(s) = sols.first() {
                solved += 1;
                // The solution is what it claims, checked by forward kinematics anew.
                let reached = robot
                    .tree
                    .forward_kinematics(&group.full_state(base, &s.config))[tip];
                let dp = (reached.translation.vector - pose.translation.vector).norm();
                let dr = reached.rotation.angle_to(&pose.rotation);
                assert!(dp <= DEFAULT_POSITION_TOLERANCE, "position off by {dp}");
                assert!(
                    dr <= DEFAULT_ORIENTATION_TOLERANCE,
                    "orientation off by {dr}"
                );
                assert!(group.space.within_limits(&s.config));
            }
        }
        // Every target was reached by some configuration, so a good search finds nearly all.
        assert!(solved >= 18, "only {solved} of 20 reachable poses solved");
    }

    #[test]
    fn the_callers_start_gives_the_nearest_solution() {
        let a = arm();
        let (q, _, solver) = a.pose_solver(3);
        let group = &a.group;
        // Starting a little off the configuration, the descent comes back to it.
        let near: Vec<f64> = q.iter().map(|v| v + 0.02).collect();
        let s = solver
            .solve_from(&near, 200)
            .expect("length")
            .expect("converges");
        assert!(group.space.distance(&s.config, &q) < 1e-2);
    }

    #[test]
    fn unreachable_poses_have_no_solution_and_position_goals_ignore_orientation() {
        let a = arm();
        let (robot, group, base, tip) = (&a.robot, &a.group, &a.base, a.tip);
        let far = PoseTarget::position(tip, Vector3::new(5.0, 0.0, 0.5));
        let solver = IkSolver::new(robot, group, base, far).expect("solver");
        let opts = IkOptions {
            starts: 32,
            ..IkOptions::default()
        };
        assert!(solver.solve(None, &opts).expect("solve").is_empty());

        // A reachable position with an arbitrary orientation target: solved for the position.
        let q = random_configs(group, 1, 11).remove(0);
        let p = robot.tree.forward_kinematics(&group.full_state(base, &q))[tip]
            .translation
            .vector;
        let solver =
            IkSolver::new(robot, group, base, PoseTarget::position(tip, p)).expect("solver");
        let sols = solver.solve(None, &opts).expect("solve");
        let s = sols.first().expect("a solution");
        assert!(s.position_error <= DEFAULT_POSITION_TOLERANCE);
        assert_eq!(s.orientation_error, 0.0);
    }

    #[test]
    fn deterministic_and_bad_targets_named() {
        let a = arm();
        let (_, pose, solver) = a.pose_solver(5);
        let (group, base, tip) = (&a.group, &a.base, a.tip);
        let opts = IkOptions {
            seed: 9,
            ..IkOptions::default()
        };
        let first = solver.solve(None, &opts).expect("solve");
        let again = solver.solve(None, &opts).expect("solve");
        assert!(!first.is_empty());
        assert_eq!(first, again);

        let mut bad = PoseTarget::pose(tip, pose);
        bad.position_tolerance = 0.0;
        let e = IkSolver::new(&a.robot, group, base, bad).expect_err("refused");
        assert!(e.to_string().contains("position tolerance"), "{e}");
        let root = a.robot.tree.root;
        let e = IkSolver::new(&a.robot, group, base, PoseTarget::pose(root, pose))
            .expect_err("the root does not move");
        assert!(e.to_string().contains("is not moved"), "{e}");
        assert!(pose_from_parts([0.0; 3], Some([0.0; 4]), "goal_pose").is_err());
        assert!(pose_from_parts([f64::NAN, 0.0, 0.0], None, "goal_pose").is_err());
        assert!(solver.solve_from(&[0.0], 10).is_err());
    }
}
