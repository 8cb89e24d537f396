//! RRT-Connect (Kuffner & LaValle 2000), batched: each iteration extends one tree towards a
//! batch of samples with one motion check, then tries to connect the other tree to every new
//! vertex with a second check that holds, for each new vertex, the whole chain of
//! `range`-long steps from the other tree's nearest vertex. The valid prefix of each chain is
//! added to the other tree (what the greedy CONNECT step would have built); a fully valid
//! chain joins the trees. The trees then swap roles. On the CPU backend the chains' motions
//! are checked one at a time instead and checking stops where their verdicts stop being read
//! (after a chain's first invalid motion, after the joining chain): the same result for less
//! work.

use crate::collision::{Backend, Checker, ConfigBatch, MotionBatch};
use crate::planners::rrt::Tree;
use crate::planners::{Context, PlanError, RawSolution};

pub(crate) fn solve(ctx: &mut Context<'_, '_>) -> Result<RawSolution, PlanError> {
    let space = ctx.space.clone();
    let dof = space.dof();
    let range = ctx.range();
    let mut a = Tree::new(&space, &ctx.req.start)?;
    let mut b = Tree::new(&space, &ctx.req.goal)?;
    let mut a_is_start = true;
    let mut iterations = 0;
    while !ctx.must_stop(iterations) {
        iterations += 1;
        // 1. Extend tree `a` towards a batch of samples.
        let mut motions = MotionBatch::new(dof);
        let mut proposals = Vec::new();
        for _ in 0..ctx.req.batch_size {
            let target = ctx.sample();
            let Some(nearest) = a.nn.nearest(&target)? else {
                continue;
            };
            let new = ctx.steer(a.q(nearest.id), &target, range);
            if space.distance(a.q(nearest.id), &new) <= 0.0 {
                continue;
            }
            motions.push(a.q(nearest.id), &new)?;
            proposals.push((nearest.id, new));
        }
        let mut added = Vec::new();
        if !motions.is_empty() {
            let verdicts = ctx.checker.check_motions(&motions, ctx.req.resolution)?;
            for (k, (parent, new)) in proposals.into_iter().enumerate() {
                if !verdicts.get(k).copied().unwrap_or(false) || a.contains(&new)? {
                    continue;
                }
                let cost = a.cost(parent) + space.distance(a.q(parent), &new);
                added.push(a.push(&new, parent, cost)?);
            }
        }
        // 2. Connect tree `b` to each new vertex of `a`: chains of range-long steps.
        let mut chains = MotionBatch::new(dof);
        // (vertex of a, nearest vertex of b, chain points, index of the chain's first motion)
        let mut plans: Vec<(usize, usize, Vec<Vec<f64>>, usize)> = Vec::new();
        for &v in &added {
            let target = a.q(v).to_vec();
            let Some(nearest) = b.nn.nearest(&target)? else {
                continue;
            };
            let from = b.q(nearest.id).to_vec();
            let d = space.distance(&from, &target);
            let steps = ((d / range).ceil() as usize).max(1);
            let mut points = Vec::with_capacity(steps);
            let mut prev = from;
            let first = chains.len();
            for s in 1..=steps {
                let mut p = vec![0.0; dof];
                if s == steps {
                    p.clone_from(&target);
                } else {
                    space.interpolate(b.q(nearest.id), &target, s as f64 / steps as f64, &mut p);
                }
                chains.push(&prev, &p)?;
                prev.clone_from(&p);
                points.push(p);
            }
            plans.push((v, nearest.id, points, first));
        }
        if !chains.is_empty() {
            // On the GPU every chain is checked in one batch. On the CPU a check costs in
            // proportion to the configurations it visits, and the verdicts of a chain after
            // its first invalid motion, and of the chains after the one that joins the
            // trees, are never read: there the motions are checked one at a time, in the
            // order they are read, and checking stops where reading stops. Same result.
            let batched = ctx.checker.backend() != Backend::Cpu;
            let verdicts = if batched {
                ctx.checker.check_motions(&chains, ctx.req.resolution)?
            } else {
                Vec::new()
            };
            let mut one = MotionBatch::new(dof);
            for (v, nearest, points, first) in plans {
                let mut tip = nearest;
                let mut joined = true;
                let n = points.len();
                for (k, p) in points.into_iter().enumerate() {
                    let valid = if batched {
                        verdicts.get(first + k).copied().unwrap_or(false)
                    } else {
                        let m = first + k;
                        one.from = ConfigBatch::from_rows(dof, &[chains.from.row(m)])?;
                        one.to = ConfigBatch::from_rows(dof, &[chains.to.row(m)])?;
                        ctx.checker
                            .check_motions(&one, ctx.req.resolution)?
                            .first()
                            .copied()
                            .unwrap_or(false)
                    };
                    if !valid {
                        joined = false;
                        break;
                    }
                    if k + 1 == n {
                        break; // the last point is `v` itself, already in tree `a`
                    }
                    if b.contains(&p)? {
                        joined = false;
                        break;
                    }
                    let cost = b.cost(tip) + space.distance(b.q(tip), &p);
                    tip = b.push(&p, tip, cost)?;
                }
                if joined {
                    let from_a = a.path_from_root(v);
                    let mut from_b = b.path_from_root(tip);
                    let mut path;
                    if a_is_start {
                        path = from_a;
                        from_b.reverse();
                        path.extend(from_b);
                    } else {
                        path = from_b;
                        let mut rest = from_a;
                        rest.reverse();
                        path.extend(rest);
                    }
                    let vertices = a.len() + b.len();
                    return Ok(RawSolution {
                        path,
                        iterations,
                        vertices,
                        edges: vertices.saturating_sub(2),
                        cost_over_time: Vec::new(),
                    });
                }
            }
        }
        std::mem::swap(&mut a, &mut b);
        a_is_start = !a_is_start;
    }
    Err(ctx.no_path(iterations, a.len() + b.len()))
}
