//! Planning to a pose goal: inverse kinematics ([`crate::robot::ik`]) turns the goal into
//! group configurations, one batched check on the request's checker keeps the collision-free
//! ones, and the planner plans to the nearest [`GOAL_SET_SIZE`] of them (joint-space distance
//! from the start) as one goal set: RRT-Connect grows its goal tree from all of them at once,
//! PRM takes the shortest roadmap path to any, RRT and RRT* connect to any, the device
//! RRT-Connect races attempts towards all of them; the persistent roadmap and constrained
//! planning take them in turn, nearest first ([`super::plan_each_goal`]).
//!
//! Several goal poses (grasp candidates, say; [`plan_to_poses_with`]) are solved for alike,
//! and all their solutions make one goal set: the plan ends at whichever pose it reaches.
//!
//! A goal region (MoveIt goal constraints: a box the link must end in, an orientation cone,
//! joint bounds; [`crate::robot::constraint::ConstraintSet`]) is searched for alike: random
//! starts are projected onto the constraints instead of solved for one pose, and every
//! configuration found that satisfies them all within their tolerances is a goal.
//!
//! The returned trajectory is the planner's, re-validated as every plan is, and ends at a
//! configuration whose link pose is within the goal's tolerances (inside the goal region).

use std::time::{Duration, Instant};

use super::{plan, PlanError, PlanRequest, PlanResult};
use crate::collision::{Checker, ConfigBatch};
use crate::robot::ik::{
    GoalSolver, IkError, IkOptions, IkSearch, IkSolution, IkSolver, PoseTarget,
};
use crate::robot::{PlanningGroup, RobotModel};

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
    /// Starting configurations the search tried.
    pub tried: usize,
}

/// The most goal poses one request plans to ([`plan_to_poses_with`]): grasp candidates,
/// say. Their solutions make one goal set.
pub const MAX_GOAL_POSES: usize = 64;

/// Default share of a pose plan's time limit its inverse kinematics may use once a
/// collision-free goal configuration is known ([`PlanRequest::ik_time_share`]); without one,
/// it may go on to the whole limit (and the plan fails for want of a goal). The searches of
/// several poses take turns batch by batch ([`IkSearch`]), so each gets its share of that
/// time.
pub const IK_TIME_SHARE: f64 = 0.5;

/// Checks an inverse kinematics time share: in (0, 1]; otherwise the reason.
pub fn check_ik_time_share(share: f64) -> Result<(), String> {
    if share > 0.0 && share <= 1.0 {
        Ok(())
    } else {
        Err(format!(
            "ik_time_share must be in (0, 1] (a share of the time limit), got {share}"
        ))
    }
}

/// A plan to a pose goal, or to the first reached of several.
#[derive(Debug)]
pub struct PosePlan {
    /// The plan (its last waypoint is `goal.config`).
    pub result: PlanResult,
    /// The goal configuration it reached.
    pub goal: IkSolution,
    /// Which of the goal poses (solvers) `goal` is for: 0 for a single pose.
    pub pose: usize,
    /// What the search found, for each goal pose in order.
    pub goals: Vec<PoseGoals>,
    /// Time spent in inverse kinematics and the goals' collision checks.
    pub ik_time: Duration,
    /// True when the inverse kinematics stopped at its share of the time limit
    /// ([`PlanRequest::ik_time_share`]) or at the limit, before every pose's search had ended.
    pub ik_cut: bool,
}

impl PosePlan {
    /// Starting configurations the inverse kinematics tried, over all goal poses.
    pub fn starts_tried(&self) -> usize {
        self.goals.iter().map(|g| g.tried).sum()
    }
}

/// One solver per target of `targets` for `group` of `robot` at the full state `base`, in
/// order (what [`plan_to_poses_with`] takes).
pub fn solvers_for<'a>(
    robot: &'a RobotModel,
    group: &'a PlanningGroup,
    base: &[f64],
    targets: impl IntoIterator<Item = &'a PoseTarget>,
) -> Result<Vec<IkSolver<'a>>, IkError> {
    targets
        .into_iter()
        .map(|t| IkSolver::new(robot, group, base, t.clone()))
        .collect()
}

/// The verdicts of `checker` on freshly found solutions (one batched check): what the
/// inverse kinematics search of a pose goal asks before it ends (it goes on over more starts
/// while every solution found collides).
fn collision_free(
    checker: &dyn Checker,
) -> impl FnMut(&[IkSolution]) -> Result<Vec<bool>, PlanError> + '_ {
    move |fresh: &[IkSolution]| {
        let mut batch = ConfigBatch::with_capacity(checker.space().dof(), fresh.len());
        for s in fresh {
            batch.push(&s.config)?;
        }
        Ok(checker.check_configs(&batch)?)
    }
}

/// The goals of a finished search: the accepted (collision-free) solutions nearest to
/// `start` first, and the counts.
fn goals_of<S: GoalSolver + ?Sized>(
    checker: &dyn Checker,
    start: &[f64],
    search: IkSearch<S>,
) -> PoseGoals {
    let tried = search.tried();
    let (found, verdicts) = search.finish();
    let space = checker.space();
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
    PoseGoals {
        in_collision: found.len() - free.len(),
        found: found.len(),
        free,
        tried,
    }
}

/// Solves `solver`'s target from `start` (the first start of the search) and keeps the
/// collision-free solutions (one batched check on `checker` per batch of starts), nearest to
/// `start` first. The search stops as [`IkSolver::solve_where`] says (`opts.deadline`
/// included).
pub fn free_goals(
    checker: &dyn Checker,
    solver: &IkSolver,
    start: &[f64],
    opts: &IkOptions,
) -> Result<PoseGoals, PlanError> {
    let mut search = IkSearch::new(solver, Some(start), opts)?;
    search.run(collision_free(checker))?;
    Ok(goals_of(checker, start, search))
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
    plan_one: impl FnMut(&PlanRequest) -> Result<PlanResult, PlanError>,
) -> Result<PosePlan, PlanError> {
    plan_to_poses_set(
        checker,
        template,
        std::slice::from_ref(solver),
        opts,
        set_size,
        plan_one,
    )
}

/// Plans from `template.start` to whichever of several goal poses (one solver each, at most
/// [`MAX_GOAL_POSES`]; grasp candidates, say) the planner reaches first: every pose is
/// solved for (with `opts`, each pose searching for its share of the set's solutions; the
/// searches take turns batch by batch and stop at [`PlanRequest::ik_time_share`] of the time
/// limit once a free solution is known, or at the limit), and the
/// collision-free solutions make one goal set, so that
/// RRT-Connect grows its goal tree from all of them at once (as for one pose). The set holds
/// each pose's nearest solution, then each one's second nearest and so on, nearest to the
/// start first within each round, [`GOAL_SET_SIZE`] or one per pose if more poses have free
/// solutions.
/// [`PosePlan::pose`] says which pose was reached. A pose without a solution, or with only
/// solutions in collision, is left out while another has a free one. Errors as
/// [`plan_to_pose`], for all poses.
pub fn plan_to_poses_with<S: GoalSolver>(
    checker: &dyn Checker,
    template: &PlanRequest,
    solvers: &[S],
    opts: &IkOptions,
    plan_one: impl FnMut(&PlanRequest) -> Result<PlanResult, PlanError>,
) -> Result<PosePlan, PlanError> {
    plan_to_poses_set(checker, template, solvers, opts, GOAL_SET_SIZE, plan_one)
}

/// [`plan_to_poses_with`] with goal sets of `set_size` configurations (at least one per
/// pose with a free solution).
pub fn plan_to_poses_set<S: GoalSolver>(
    checker: &dyn Checker,
    template: &PlanRequest,
    solvers: &[S],
    opts: &IkOptions,
    set_size: usize,
    mut plan_one: impl FnMut(&PlanRequest) -> Result<PlanResult, PlanError>,
) -> Result<PosePlan, PlanError> {
    if solvers.is_empty() || solvers.len() > MAX_GOAL_POSES {
        return Err(PlanError::InvalidGoal(format!(
            "{} goal poses: give 1 to {MAX_GOAL_POSES}",
            solvers.len()
        )));
    }
    check_ik_time_share(template.ik_time_share).map_err(PlanError::InvalidRequest)?;
    let t0 = Instant::now();
    // Several poses share the set: each searches for its share of it (at least one), so
    // that the inverse kinematics of many candidates costs about what one pose's does.
    let share = IkOptions {
        max_solutions: opts
            .max_solutions
            .min(set_size.max(1).div_ceil(solvers.len()))
            .max(1),
        ..*opts
    };
    let per_pose = if solvers.len() == 1 { opts } else { &share };
    let (goals, ik_cut) = interleaved_goals(checker, template, solvers, per_pose, t0)?;
    let ik_time = t0.elapsed();
    let found: usize = goals.iter().map(|g| g.found).sum();
    let cut_note = if ik_cut {
        "; the search stopped at the time limit"
    } else {
        ""
    };
    let region = solvers[0].is_region();
    if found == 0 && region {
        return Err(PlanError::NoIkSolution(format!(
            "no configuration within the joint limits satisfies the goal constraints ({} \
             starting configurations projected onto them{cut_note})",
            goals.iter().map(|g| g.tried).sum::<usize>()
        )));
    }
    if found == 0 {
        return Err(PlanError::NoIkSolution(if solvers.len() == 1 {
            format!(
                "no configuration within the joint limits puts the link at the goal pose within \
                 its tolerances ({} starting configurations tried{cut_note})",
                goals[0].tried
            )
        } else {
            format!(
                "no configuration within the joint limits puts the link at any of the {} goal \
                 poses within its tolerances ({} starting configurations tried in all{cut_note})",
                solvers.len(),
                goals.iter().map(|g| g.tried).sum::<usize>()
            )
        }));
    }
    let set = goal_set(&goals, template, checker, set_size);
    if set.is_empty() {
        return Err(PlanError::InvalidGoal(if region {
            format!(
                "all {found} configurations found within the goal constraints are in \
                 collision{cut_note}"
            )
        } else if solvers.len() == 1 {
            format!("all {found} configurations found for the goal pose are in collision{cut_note}")
        } else {
            format!(
                "all {found} configurations found for the {} goal poses are in \
                 collision{cut_note}",
                solvers.len()
            )
        }));
    }
    let left = template.time_limit.saturating_sub(t0.elapsed());
    let req = PlanRequest {
        goal: set[0].1.config.clone(),
        other_goals: set[1..].iter().map(|(_, g)| g.config.clone()).collect(),
        time_limit: left.max(Duration::from_millis(1)),
        ..template.clone()
    };
    let result = plan_one(&req)?;
    let (pose, goal) = set.get(result.reached_goal).unwrap_or(&set[0]).clone();
    Ok(PosePlan {
        result,
        goal,
        pose,
        goals,
        ik_time,
        ik_cut,
    })
}

/// The goals of every pose of `solvers` from `template.start`, their searches taking turns
/// one batch of starts at a time (each search's first batch always runs): no new batch
/// begins past `t0` + the time limit (or `opts.deadline`), nor past
/// [`PlanRequest::ik_time_share`] of the limit once some pose has a collision-free solution. Also says whether a search was
/// cut short.
fn interleaved_goals<S: GoalSolver>(
    checker: &dyn Checker,
    template: &PlanRequest,
    solvers: &[S],
    opts: &IkOptions,
    t0: Instant,
) -> Result<(Vec<PoseGoals>, bool), PlanError> {
    // A time limit past what an instant can hold is no limit.
    let limit = t0.checked_add(template.time_limit);
    let hard = match (limit, opts.deadline) {
        (Some(l), Some(d)) => Some(l.min(d)),
        (l, d) => l.or(d),
    };
    let soft = t0
        .checked_add(template.time_limit.mul_f64(template.ik_time_share))
        .map(|s| hard.map_or(s, |h| s.min(h)));
    let past = |t: Option<Instant>, now: Instant| t.is_some_and(|t| now >= t);
    let mut searches = solvers
        .iter()
        .map(|s| IkSearch::new(s, Some(&template.start), opts))
        .collect::<Result<Vec<_>, _>>()?;
    let mut check = collision_free(checker);
    let mut cut = false;
    loop {
        let have_goal = searches.iter().any(|s| s.accepted() > 0);
        let mut ran = false;
        for search in searches.iter_mut().filter(|s| !s.done()) {
            let now = Instant::now();
            if search.tried() > 0 && (past(hard, now) || (have_goal && past(soft, now))) {
                cut = true;
                continue;
            }
            search.step(&mut check)?;
            ran = true;
        }
        if !ran {
            break;
        }
    }
    let goals = searches
        .into_iter()
        .map(|s| goals_of(checker, &template.start, s))
        .collect();
    Ok((goals, cut))
}

/// The goal set of the free solutions `goals` (each pose's, nearest first), each with its
/// pose: round after round, every pose's next solution, the round ordered nearest to
/// `template.start` first, until `set_size` (at least one per pose with a free solution) are
/// taken.
fn goal_set(
    goals: &[PoseGoals],
    template: &PlanRequest,
    checker: &dyn Checker,
    set_size: usize,
) -> Vec<(usize, IkSolution)> {
    let with_free = goals.iter().filter(|g| !g.free.is_empty()).count();
    let size = set_size.max(1).max(with_free);
    let space = checker.space();
    let mut set = Vec::with_capacity(size);
    for round in 0.. {
        let mut next: Vec<(usize, &IkSolution)> = goals
            .iter()
            .enumerate()
            .filter_map(|(pose, g)| g.free.get(round).map(|s| (pose, s)))
            .collect();
        if next.is_empty() {
            break;
        }
        // A stable sort: equal distances keep the poses' order.
        next.sort_by(|a, b| {
            space
                .distance(&template.start, &a.1.config)
                .total_cmp(&space.distance(&template.start, &b.1.config))
        });
        set.extend(next.into_iter().map(|(pose, s)| (pose, s.clone())));
        if set.len() >= size {
            set.truncate(size);
            break;
        }
    }
    set
}
