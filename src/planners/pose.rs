//! Planning to a pose goal: inverse kinematics ([`crate::robot::ik`]) turns the goal into
//! group configurations, one batched check on the request's checker keeps the collision-free
//! ones, and the planner plans to the nearest [`GOAL_SET_SIZE`] of them (joint-space distance
//! from the start) as one goal set: RRT-Connect grows its goal tree from all of them at once,
//! PRM takes the shortest roadmap path to any, RRT and RRT* connect to any, the device
//! RRT-Connect races attempts towards all of them; the persistent roadmap and constrained
//! planning take them in turn, nearest first ([`super::plan_each_goal`]).
//!
//! The returned trajectory is the planner's, re-validated as every plan is, and ends at a
//! configuration whose link pose is within the goal's tolerances.

use std::time::{Duration, Instant};

use super::{plan, PlanError, PlanRequest, PlanResult};
use crate::collision::{Checker, ConfigBatch};
use crate::robot::ik::{IkError, IkOptions, IkSolution, IkSolver};

/// Collision-free goal configurations planned to at most, nearest first: one goal set
/// ([`PlanRequest::other_goals`]). RRT-Connect grows its goal tree from all of them, PRM
/// searches its roadmap for the nearest, RRT and RRT* connect to any; the planning that takes
/// the goals in turn shares the time as [`super::GOALS_IN_TURN`] says.
pub const GOAL_SET_SIZE: usize = 8;

/// An inverse kinematics error of a pose goal (a start of the wrong length) is a goal that
/// cannot be used.
impl From<IkError> for PlanError {
    fn from(e: IkError) -> Self {
        PlanError::InvalidGoal(e.to_string())
    }
}

/// The goal configurations found for a pose goal.
#[derive(Clone, Debug, PartialEq)]
pub struct PoseGoals {
    /// Collision-free solutions, nearest to the start first (ties: the earlier start).
    pub free: Vec<IkSolution>,
    /// Distinct solutions the search found, free or not.
    pub found: usize,
    /// Of those, the ones in collision.
    pub in_collision: usize,
}

/// A plan to a pose goal.
#[derive(Debug)]
pub struct PosePlan {
    /// The plan (its last waypoint is `goal.config`).
    pub result: PlanResult,
    /// The goal configuration it reached.
    pub goal: IkSolution,
    /// What the search found.
    pub goals: PoseGoals,
    /// Time spent in inverse kinematics and the goals' collision check.
    pub ik_time: Duration,
}

/// Solves `solver`'s target from `start` (the first start of the search) and keeps the
/// collision-free solutions (one batched check on `checker`), nearest to `start` first.
pub fn free_goals(
    checker: &dyn Checker,
    solver: &IkSolver,
    start: &[f64],
    opts: &IkOptions,
) -> Result<PoseGoals, PlanError> {
    let space = checker.space();
    // The search ends only once a solution is collision free: in clutter it goes on over
    // more starts while every solution found collides.
    let check = |fresh: &[IkSolution]| -> Result<Vec<bool>, PlanError> {
        let mut batch = ConfigBatch::with_capacity(space.dof(), fresh.len());
        for s in fresh {
            batch.push(&s.config)?;
        }
        Ok(checker.check_configs(&batch)?)
    };
    let (found, verdicts) = solver.solve_where(Some(start), opts, check)?;
    let mut free: Vec<IkSolution> = found
        .iter()
        .zip(&verdicts)
        .filter(|(_, &ok)| ok)
        .map(|(s, _)| s.clone())
        .collect();
    // A stable sort: equal distances keep the order of their starts.
    free.sort_by(|a, b| {
        space
            .distance(start, &a.config)
            .total_cmp(&space.distance(start, &b.config))
    });
    Ok(PoseGoals {
        in_collision: found.len() - free.len(),
        found: found.len(),
        free,
    })
}

/// Plans from `template.start` to `solver`'s pose goal (`template.goal` is replaced). Errors:
/// [`PlanError::NoIkSolution`] when no configuration reaches the pose within the tolerances,
/// [`PlanError::InvalidGoal`] when every one found is in collision, and the planner's error
/// for the last goal tried when none could be reached in time.
pub fn plan_to_pose(
    checker: &dyn Checker,
    template: &PlanRequest,
    solver: &IkSolver,
    opts: &IkOptions,
) -> Result<PosePlan, PlanError> {
    plan_to_pose_with(checker, template, solver, opts, |req| plan(checker, req))
}

/// [`plan_to_pose`] with the planning left to `plan_one` (the node's persistent roadmap
/// answers there for the `drm` planner), which gets one request with a goal set
/// ([`PlanRequest::other_goals`]) and must honour it as [`plan`] does.
pub fn plan_to_pose_with(
    checker: &dyn Checker,
    template: &PlanRequest,
    solver: &IkSolver,
    opts: &IkOptions,
    plan_one: impl FnMut(&PlanRequest) -> Result<PlanResult, PlanError>,
) -> Result<PosePlan, PlanError> {
    plan_to_pose_set(checker, template, solver, opts, GOAL_SET_SIZE, plan_one)
}

/// [`plan_to_pose_with`] with goal sets of at most `set_size` configurations (at least 1;
/// `gmp bench pose` compares sizes).
pub fn plan_to_pose_set(
    checker: &dyn Checker,
    template: &PlanRequest,
    solver: &IkSolver,
    opts: &IkOptions,
    set_size: usize,
    mut plan_one: impl FnMut(&PlanRequest) -> Result<PlanResult, PlanError>,
) -> Result<PosePlan, PlanError> {
    let t0 = Instant::now();
    let goals = free_goals(checker, solver, &template.start, opts)?;
    let ik_time = t0.elapsed();
    if goals.found == 0 {
        return Err(PlanError::NoIkSolution(format!(
            "no configuration within the joint limits puts the link at the goal pose within \
             its tolerances ({} starting configurations tried)",
            opts.starts
        )));
    }
    if goals.free.is_empty() {
        return Err(PlanError::InvalidGoal(format!(
            "all {} configurations found for the goal pose are in collision",
            goals.found
        )));
    }
    let left = template.time_limit.saturating_sub(t0.elapsed());
    let set = &goals.free[..goals.free.len().min(set_size.max(1))];
    let req = PlanRequest {
        goal: set[0].config.clone(),
        other_goals: set[1..].iter().map(|g| g.config.clone()).collect(),
        time_limit: left.max(Duration::from_millis(1)),
        ..template.clone()
    };
    let result = plan_one(&req)?;
    let goal = set.get(result.reached_goal).unwrap_or(&set[0]).clone();
    Ok(PosePlan {
        result,
        goal,
        goals,
        ik_time,
    })
}
