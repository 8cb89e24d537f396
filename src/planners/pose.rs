//! Planning to a pose goal: inverse kinematics ([`crate::robot::ik`]) turns the goal into
//! group configurations, one batched check on the request's checker keeps the collision-free
//! ones, and the planner plans to the nearest of them (joint-space distance from the start),
//! moving on to the next while the time limit allows when a goal cannot be reached.
//!
//! The returned trajectory is the planner's, re-validated as every plan is, and ends at a
//! configuration whose link pose is within the goal's tolerances.

use std::time::{Duration, Instant};

use super::{plan, PlanError, PlanRequest, PlanResult};
use crate::collision::{Checker, ConfigBatch};
use crate::robot::ik::{IkOptions, IkSolution, IkSolver};

/// Collision-free goal configurations tried at most, nearest first.
pub const MAX_GOALS_TRIED: usize = 3;

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
    let found = solver
        .solve(Some(start), opts)
        .map_err(|e| PlanError::InvalidGoal(e.to_string()))?;
    let space = checker.space();
    let mut batch = ConfigBatch::with_capacity(space.dof(), found.len());
    for s in &found {
        batch.push(&s.config)?;
    }
    let verdicts = if found.is_empty() {
        Vec::new()
    } else {
        checker.check_configs(&batch)?
    };
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

/// [`plan_to_pose`] with the planning of one goal configuration left to `plan_one` (the
/// node's persistent roadmap answers there for the `drm` planner).
pub fn plan_to_pose_with(
    checker: &dyn Checker,
    template: &PlanRequest,
    solver: &IkSolver,
    opts: &IkOptions,
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
    let deadline = t0 + template.time_limit;
    let mut last_err = None;
    for i in 0..goals.free.len().min(MAX_GOALS_TRIED) {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() && last_err.is_some() {
            break;
        }
        let mut req = template.clone();
        req.goal = goals.free[i].config.clone();
        req.time_limit = left.max(Duration::from_millis(1));
        match plan_one(&req) {
            Ok(result) => {
                return Ok(PosePlan {
                    result,
                    goal: goals.free[i].clone(),
                    goals,
                    ik_time,
                })
            }
            Err(e @ (PlanError::NoPath { .. } | PlanError::Blocked { .. })) => last_err = Some(e),
            Err(e) => return Err(e),
        }
    }
    Err(last_err.unwrap_or_else(|| {
        PlanError::InvalidGoal("no collision-free goal configuration was tried".into())
    }))
}
