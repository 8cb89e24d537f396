//! Planning under path constraints ([`crate::robot::constraint`]): every configuration of the
//! returned path, and every one a motion check of it visits, keeps the constrained links
//! within their orientation tolerances and boxes.
//!
//! The planner is RRT-Connect on the constraint manifold, by projection (Berenson's CBiRRT in
//! spirit): a tree grows toward a target in short steps of [`STEP`] in joint space, each step
//! projected back onto the constraints ([`ConstraintSet::project`]) and kept only when it
//! comes closer to the target, its straight motion keeps within the constraints at the
//! request's resolution ([`ConstraintSet::check_motion`], on the host) and the whole chain of
//! steps is collision free: the chain is computed first, then all its motions are checked in
//! one batched call of the checker, and the tree keeps the steps before the first motion in
//! collision. Samples are projected before a tree grows toward them; the other tree then
//! grows toward the new vertex until it reaches it (a path) or is stopped.
//!
//! Shortcutting tries random pairs of waypoints (and first the two ends): a projected chain
//! from one to the other that reaches it, is shorter than the path between them and keeps
//! within the constraints becomes a candidate, and each round ([`SHORTCUT_CANDIDATES`] pairs)
//! checks all its candidates' motions in one batched call, keeping the best disjoint ones,
//! until two rounds in a row shorten the path by less than `shortcut_min_gain` (random pairs
//! miss more often here than on an unconstrained path: on the bundled arm's example of the
//! README, stopping after one such round of 8 pairs left paths of 7.05 rad where this gives
//! 3.88). The path is then timed
//! through its waypoints without stopping ([`trajectory::time_parameterize_through`], as
//! Cartesian paths are: a constrained path is dense) and re-validated: every motion collision
//! free at the resolution, the trajectory's points on them, and every configuration the checks
//! visit within the constraints. Between two consecutive points (at most [`STEP`] apart in
//! joint space, usually less) a controller's spline stays close to the straight motion
//! checked (see [`trajectory::ThroughTiming::spline_deviation`]).
//!
//! RRT, RRT*, PRM and lazy PRM plan under path constraints the same way, with chains of
//! projected steps as their edges (submodules `rrt` and `roadmap`); the shortcutting, timing and
//! re-validation below are shared.
//!
//! One attempt runs (`attempts` is not used); the same request and seed give the same path.

mod roadmap;
mod rrt;

use rrt::{grow, ChainTree};

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::{
    plan, plan_each_goal, run_with, shortcut_stream, Context, CountingChecker, PlanError,
    PlanRequest, PlanResult, PlannerId, PostProcess, RawSolution,
};
use crate::collision::{Checker, MotionBatch};
use crate::robot::constraint::{ConstraintError, ConstraintSet};
use crate::robot::JointSpace;
use crate::trajectory::{self, Trajectory, TrajectoryError};

/// Joint-space distance between consecutive projected configurations of a chain.
pub const STEP: f64 = 0.1;
/// Steps of one chain at most (a connection across the joint space is a few hundred).
pub const MAX_CHAIN: usize = 1000;
/// Shortcut candidates tried per round.
pub const SHORTCUT_CANDIDATES: usize = 16;

fn bad(e: ConstraintError) -> PlanError {
    PlanError::InvalidRequest(e.to_string())
}

/// Plans `req` so that every configuration of the path keeps `constraints`; without any
/// constraint, plans as [`plan`] does. RRT-Connect, RRT, RRT*, PRM and lazy PRM plan under
/// constraints, on the host: PTP, LIN and CIRC, or `on_device`, are refused by name. A start or goal outside the
/// constraints is [`PlanError::StartViolatesConstraints`] /
/// [`PlanError::GoalViolatesConstraints`] naming the
/// constraint, the axis and by how much.
pub fn plan_constrained(
    checker: &dyn Checker,
    req: &PlanRequest,
    constraints: &ConstraintSet,
) -> Result<PlanResult, PlanError> {
    if constraints.is_empty() {
        return plan(checker, req);
    }
    if !req.other_goals.is_empty() {
        // A goal set: its goals one after another.
        return plan_each_goal(checker.space(), req, |one| {
            plan_constrained(checker, one, constraints)
        });
    }
    let planner = req.planner;
    if !matches!(
        planner,
        PlannerId::RrtConnect
            | PlannerId::Rrt
            | PlannerId::RrtStar
            | PlannerId::Prm
            | PlannerId::LazyPrm
    ) {
        return Err(PlanError::InvalidRequest(format!(
            "path constraints: {planner} does not plan under path constraints; use \
             rrt_connect, rrt, rrt_star, prm or lazy_prm"
        )));
    }
    if req.on_device {
        return Err(PlanError::InvalidRequest(
            "path constraints: planning under path constraints runs on the host, not on_device"
                .into(),
        ));
    }
    if constraints.space().names != checker.space().names {
        return Err(PlanError::InvalidRequest(format!(
            "path constraints: set for joints [{}] but the checker plans for [{}]",
            constraints.space().names.join(", "),
            checker.space().names.join(", ")
        )));
    }
    let dof = checker.space().dof();
    for (which, q) in [("start", &req.start), ("goal", &req.goal)] {
        // A configuration of the wrong length is named by the request checks of `run_with`.
        if q.len() != dof || q.iter().any(|v| !v.is_finite()) {
            continue;
        }
        if let Some(v) = constraints.violation(q).map_err(bad)? {
            let msg = format!("the {which} configuration violates the path constraints: {v}");
            return Err(if which == "start" {
                PlanError::StartViolatesConstraints(msg)
            } else {
                PlanError::GoalViolatesConstraints(msg)
            });
        }
    }
    let post = Constrained { set: constraints };
    run_with(checker, req, &post, |ctx| match planner {
        PlannerId::Rrt => rrt::solve_rrt(ctx, constraints),
        PlannerId::RrtStar => rrt::solve_rrt_star(ctx, constraints),
        PlannerId::Prm => roadmap::solve_prm(ctx, constraints, false),
        PlannerId::LazyPrm => roadmap::solve_prm(ctx, constraints, true),
        _ => solve(ctx, constraints),
    })
}

/// A chain of projected steps from one configuration toward another (collisions not yet
/// checked).
struct Chain {
    steps: Vec<Vec<f64>>,
    /// The last step is the target itself.
    reached: bool,
}

/// Steps from `from` toward `to` (which keeps the constraints), at most `max_steps`: each
/// step [`STEP`] along the straight line, projected, kept while it comes closer to `to`, does
/// not jump (at most twice [`STEP`] from the previous one) and its motion keeps within the
/// constraints at `resolution`. The last step is `to` itself once it is within [`STEP`].
fn steer(
    set: &ConstraintSet,
    from: &[f64],
    to: &[f64],
    max_steps: usize,
    resolution: f64,
) -> Result<Chain, PlanError> {
    let space = set.space();
    let mut steps: Vec<Vec<f64>> = Vec::new();
    let mut q = from.to_vec();
    let mut s = vec![0.0; q.len()];
    for _ in 0..max_steps {
        let d = space.distance(&q, to);
        if d == 0.0 {
            return Ok(Chain {
                steps,
                reached: true,
            });
        }
        let (next, at_target) = if d <= STEP {
            (to.to_vec(), true)
        } else {
            space.interpolate(&q, to, STEP / d, &mut s);
            match set.project(&s).map_err(bad)? {
                Some(p) => (p, false),
                None => break,
            }
        };
        if !at_target
            && (space.distance(&next, to) >= d - 1e-3 * STEP
                || space.distance(&q, &next) > 2.0 * STEP)
        {
            break;
        }
        if set
            .check_motion(&q, &next, resolution)
            .map_err(bad)?
            .is_some()
        {
            break;
        }
        q.clone_from(&next);
        steps.push(next);
        if at_target {
            return Ok(Chain {
                steps,
                reached: true,
            });
        }
    }
    Ok(Chain {
        steps,
        reached: false,
    })
}

/// How many motions of the chain from `from` through `steps` are collision free, counted
/// from the start (one batched check).
fn free_prefix(
    checker: &dyn Checker,
    from: &[f64],
    steps: &[Vec<f64>],
    resolution: f64,
) -> Result<usize, PlanError> {
    if steps.is_empty() {
        return Ok(0);
    }
    let mut motions = MotionBatch::new(from.len());
    let mut prev = from;
    for s in steps {
        motions.push(prev, s)?;
        prev = s;
    }
    let verdicts = checker.check_motions(&motions, resolution)?;
    Ok(verdicts.iter().position(|ok| !ok).unwrap_or(steps.len()))
}

/// For each chain (its first configuration and its steps), whether all its motions are
/// collision free, every chain's motions checked in one call (a chain without steps is).
fn chains_free(
    checker: &dyn Checker,
    chains: &[(&[f64], &[Vec<f64>])],
    resolution: f64,
) -> Result<Vec<bool>, PlanError> {
    let mut motions = MotionBatch::new(checker.space().dof());
    for (from, steps) in chains {
        let mut prev = *from;
        for s in *steps {
            motions.push(prev, s)?;
            prev = s;
        }
    }
    let verdicts = if motions.is_empty() {
        Vec::new()
    } else {
        checker.check_motions(&motions, resolution)?
    };
    let mut offset = 0;
    Ok(chains
        .iter()
        .map(|(_, steps)| {
            let free = verdicts[offset..offset + steps.len()].iter().all(|ok| *ok);
            offset += steps.len();
            free
        })
        .collect())
}

/// Joint-space length of the chain from `from` through `steps`.
fn chain_length(space: &JointSpace, from: &[f64], steps: &[Vec<f64>]) -> f64 {
    steps.first().map_or(0.0, |s| space.distance(from, s)) + trajectory::path_length(space, steps)
}

/// Constrained RRT-Connect from the request's start to its goal (both checked before).
fn solve(ctx: &mut Context<'_, '_>, set: &ConstraintSet) -> Result<RawSolution, PlanError> {
    let space = ctx.space.clone();
    let mut trees = [
        ChainTree::new(&space, &ctx.req.start)?,
        ChainTree::new(&space, &ctx.req.goal)?,
    ];
    let range = ctx.range();
    let extend_steps = ((range / STEP).ceil() as usize).max(1);
    let mut a = 0usize;
    let mut iterations = 0usize;
    loop {
        let vertices = trees[0].nodes.len() + trees[1].nodes.len();
        if ctx.must_stop(iterations) {
            return Err(ctx.no_path(iterations, vertices));
        }
        iterations += 1;
        // The smaller tree grows (ties: the trees take turns).
        a = match trees[0].nodes.len().cmp(&trees[1].nodes.len()) {
            std::cmp::Ordering::Less => 0,
            std::cmp::Ordering::Greater => 1,
            std::cmp::Ordering::Equal => 1 - a,
        };
        let sample = if ctx.rng.random_bool(ctx.req.goal_bias) {
            trees[1 - a].nodes[0].clone()
        } else {
            match set.project(&ctx.sample()).map_err(bad)? {
                Some(p) => p,
                None => continue,
            }
        };
        let Some((new, _)) = grow(ctx, set, &mut trees[a], &sample, extend_steps)? else {
            continue;
        };
        let target = trees[a].nodes[new].clone();
        let Some((met, true)) = grow(ctx, set, &mut trees[1 - a], &target, MAX_CHAIN)? else {
            continue;
        };
        let (s, g) = if a == 0 { (new, met) } else { (met, new) };
        let mut path = trees[0].path_to(s);
        let mut back = trees[1].path_to(g);
        back.reverse();
        // The meeting configuration ends the first half and starts the second.
        path.extend(back.into_iter().skip(1));
        let vertices = trees[0].nodes.len() + trees[1].nodes.len();
        return Ok(RawSolution {
            path,
            iterations,
            vertices,
            edges: vertices - 2,
            cost_over_time: Vec::new(),
        });
    }
}

/// Shortcutting, timing and re-validation under the constraints.
struct Constrained<'s, 'a> {
    set: &'s ConstraintSet<'a>,
}

impl PostProcess for Constrained<'_, '_> {
    fn shortcut(
        &self,
        counting: &CountingChecker<'_>,
        req: &PlanRequest,
        raw: &[Vec<f64>],
    ) -> Result<Vec<Vec<f64>>, PlanError> {
        let space = counting.space();
        let mut rng = ChaCha8Rng::seed_from_u64(shortcut_stream(req.seed));
        let mut path = raw.to_vec();
        let mut idle = 0;
        for round in 0..req.shortcut_rounds {
            let n = path.len();
            if n < 3 {
                break;
            }
            let before = trajectory::path_length(space, &path);
            let mut pairs = Vec::with_capacity(SHORTCUT_CANDIDATES);
            if round == 0 {
                pairs.push((0, n - 1));
            }
            while pairs.len() < SHORTCUT_CANDIDATES {
                let i = rng.random_range(0..n - 2);
                let j = rng.random_range(i + 2..n);
                pairs.push((i, j));
            }
            // Chains that reach their end and are shorter than the path between the two.
            let mut candidates = Vec::new();
            for (i, j) in pairs {
                let chain = steer(self.set, &path[i], &path[j], MAX_CHAIN, req.resolution)?;
                if !chain.reached {
                    continue;
                }
                let old = trajectory::path_length(space, &path[i..=j]);
                let new = chain_length(space, &path[i], &chain.steps);
                if new < old * (1.0 - 1e-6) {
                    candidates.push((old - new, i, j, chain.steps));
                }
            }
            // All candidates' motions in one check.
            let verdicts = {
                let chains: Vec<(&[f64], &[Vec<f64>])> = candidates
                    .iter()
                    .map(|(_, i, _, steps)| (path[*i].as_slice(), steps.as_slice()))
                    .collect();
                chains_free(counting, &chains, req.resolution)?
            };
            let mut free: Vec<_> = candidates
                .into_iter()
                .zip(verdicts)
                .filter_map(|(c, ok)| ok.then_some(c))
                .collect();
            // The best disjoint ones, applied from the end of the path backwards.
            free.sort_by(|x, y| y.0.total_cmp(&x.0).then((x.1, x.2).cmp(&(y.1, y.2))));
            let mut chosen: Vec<(usize, usize, Vec<Vec<f64>>)> = Vec::new();
            for (_, i, j, steps) in free {
                if chosen.iter().all(|(ci, cj, _)| j <= *ci || i >= *cj) {
                    chosen.push((i, j, steps));
                }
            }
            chosen.sort_by_key(|c| std::cmp::Reverse(c.0));
            for (i, j, steps) in chosen {
                // The chain ends at `path[j]`, which it replaces with itself.
                path.splice(i + 1..=j, steps);
            }
            let after = trajectory::path_length(space, &path);
            // Random pairs miss often on a constrained path: stop after two rounds in a row
            // that gained too little.
            if before <= 0.0 || (before - after) / before < req.shortcut_min_gain {
                idle += 1;
                if idle >= 2 {
                    break;
                }
            } else {
                idle = 0;
            }
        }
        Ok(path)
    }

    fn finish(
        &self,
        counting: &CountingChecker<'_>,
        req: &PlanRequest,
        path: &[Vec<f64>],
    ) -> Result<(Trajectory, trajectory::PathTiming), TrajectoryError> {
        let timing = trajectory::PathTiming::Through {
            vel_scale: req.vel_scale,
            acc_scale: req.acc_scale,
        };
        let timed = timing.time(counting.space(), path, None)?;
        trajectory::validate_along(counting, path, &timed, req.resolution)?;
        let constraint =
            |index: usize, reason: String| TrajectoryError::Constraint { index, reason };
        if let Some(first) = path.first() {
            if let Some(v) = self
                .set
                .violation(first)
                .map_err(|e| constraint(0, e.to_string()))?
            {
                return Err(constraint(0, v.to_string()));
            }
        }
        for (index, w) in path.windows(2).enumerate() {
            let hit = self
                .set
                .check_motion(&w[0], &w[1], req.resolution)
                .map_err(|e| constraint(index, e.to_string()))?;
            if let Some((_, v)) = hit {
                return Err(constraint(index, v.to_string()));
            }
        }
        Ok((timed, timing))
    }
}
