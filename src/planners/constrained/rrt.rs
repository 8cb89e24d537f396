//! Single-tree planners under path constraints: RRT (goal-biased growth, a chain to the goal
//! once a new vertex is within range of it) and RRT* (each new vertex takes the near vertex
//! whose constrained chain reaches it at the least cost as its parent, and the near vertices
//! it can reach more cheaply are rewired to it; anytime until the time limit).
//!
//! An edge of these trees is a chain of projected steps ([`super::steer`]), so a vertex
//! keeps the steps from its parent (`via`), and the path runs through them.

use rand::Rng;

use super::{bad, chain_length, chains_free, free_prefix, steer, ConstraintSet, MAX_CHAIN, STEP};
use crate::planners::{Context, PlanError, RawSolution};
use crate::roadmap::NearestNeighbors;
use crate::robot::JointSpace;

/// A tree whose edges are chains of projected steps.
pub(super) struct ChainTree {
    pub(super) nodes: Vec<Vec<f64>>,
    parent: Vec<usize>,
    /// The steps from the parent to the vertex, the vertex itself last (empty for the root).
    via: Vec<Vec<Vec<f64>>>,
    /// Length of the path from the root.
    cost: Vec<f64>,
    children: Vec<Vec<usize>>,
    nn: NearestNeighbors,
}

impl ChainTree {
    pub(super) fn new(space: &JointSpace, root: &[f64]) -> Result<Self, PlanError> {
        let mut nn = NearestNeighbors::new(space)?;
        nn.insert(root, 0)?;
        Ok(Self {
            nodes: vec![root.to_vec()],
            parent: vec![0],
            via: vec![Vec::new()],
            cost: vec![0.0],
            children: vec![Vec::new()],
            nn,
        })
    }

    fn add(
        &mut self,
        parent: usize,
        via: Vec<Vec<f64>>,
        cost: f64,
    ) -> Result<Option<usize>, PlanError> {
        let Some(q) = via.last().cloned() else {
            return Ok(None);
        };
        let id = self.nodes.len();
        self.nn.insert(&q, id)?;
        self.nodes.push(q);
        self.parent.push(parent);
        self.via.push(via);
        self.cost.push(cost);
        self.children.push(Vec::new());
        self.children[parent].push(id);
        Ok(Some(id))
    }

    /// Every configuration from the root to vertex `v`, chains included.
    pub(super) fn path_to(&self, mut v: usize) -> Vec<Vec<f64>> {
        let mut pieces = Vec::new();
        while v != 0 {
            pieces.push(v);
            v = self.parent[v];
        }
        let mut out = vec![self.nodes[0].clone()];
        for &p in pieces.iter().rev() {
            out.extend(self.via[p].iter().cloned());
        }
        out
    }

    /// Each step of `steps` a vertex of its own, from `from` on (RRT: every step can grow
    /// the tree); the last one added.
    fn add_steps(
        &mut self,
        space: &JointSpace,
        from: usize,
        steps: Vec<Vec<f64>>,
    ) -> Result<usize, PlanError> {
        let mut last = from;
        for s in steps {
            let cost = self.cost[last] + space.distance(&self.nodes[last], &s);
            last = self.add(last, vec![s], cost)?.unwrap_or(last);
        }
        Ok(last)
    }
}

/// The grown chain from the vertex nearest `target` toward it: its vertex (new, or the
/// nearest when no step was kept) and whether that is `target`; `None` when nothing was
/// kept and the nearest is not `target`.
pub(super) fn grow(
    ctx: &Context<'_, '_>,
    set: &ConstraintSet,
    tree: &mut ChainTree,
    target: &[f64],
    max_steps: usize,
) -> Result<Option<(usize, bool)>, PlanError> {
    let Some(near) = tree.nn.nearest(target)? else {
        return Ok(None);
    };
    let from = tree.nodes[near.id].clone();
    let res = ctx.req.resolution;
    let chain = steer(set, &from, target, max_steps, res)?;
    let keep = free_prefix(ctx.checker, &from, &chain.steps, res)?;
    let reached = chain.reached && keep == chain.steps.len();
    let steps: Vec<Vec<f64>> = chain.steps.into_iter().take(keep).collect();
    let kept = !steps.is_empty();
    let last = tree.add_steps(&ctx.space, near.id, steps)?;
    Ok((kept || reached).then_some((last, reached)))
}

/// A projected sample, or the goal with the request's goal bias; `None` when the sample
/// could not be projected. The flag says whether it is the goal.
fn target(
    ctx: &mut Context<'_, '_>,
    set: &ConstraintSet,
) -> Result<Option<(Vec<f64>, bool)>, PlanError> {
    if ctx.rng.random_bool(ctx.req.goal_bias) {
        return Ok(Some((ctx.req.goal.clone(), true)));
    }
    let q = ctx.sample();
    Ok(set.project(&q).map_err(bad)?.map(|p| (p, false)))
}

/// A single-tree planner's start: the space, the goal, the tree at the start, the range and
/// the chain steps of one extension.
fn setup(
    ctx: &Context<'_, '_>,
) -> Result<(JointSpace, Vec<f64>, ChainTree, f64, usize), PlanError> {
    let space = ctx.space.clone();
    let tree = ChainTree::new(&space, &ctx.req.start)?;
    let range = ctx.range();
    let extend_steps = ((range / STEP).ceil() as usize).max(1);
    Ok((space, ctx.req.goal.clone(), tree, range, extend_steps))
}

/// Constrained RRT from the request's start to its goal.
pub(super) fn solve_rrt(
    ctx: &mut Context<'_, '_>,
    set: &ConstraintSet,
) -> Result<RawSolution, PlanError> {
    let (space, goal, mut tree, range, extend_steps) = setup(ctx)?;
    let mut iterations = 0usize;
    loop {
        if ctx.must_stop(iterations) {
            return Err(ctx.no_path(iterations, tree.nodes.len()));
        }
        iterations += 1;
        let Some((sample, is_goal)) = target(ctx, set)? else {
            continue;
        };
        let Some((new, reached)) = grow(ctx, set, &mut tree, &sample, extend_steps)? else {
            continue;
        };
        let mut end = (is_goal && reached).then_some(new);
        if end.is_none() && space.distance(&tree.nodes[new], &goal) <= range {
            if let Some((met, true)) = grow(ctx, set, &mut tree, &goal, MAX_CHAIN)? {
                end = Some(met);
            }
        }
        if let Some(v) = end {
            let vertices = tree.nodes.len();
            return Ok(RawSolution {
                path: tree.path_to(v),
                iterations,
                vertices,
                edges: vertices - 1,
                cost_over_time: Vec::new(),
            });
        }
    }
}

/// RRT*'s near radius for `n` vertices: `gamma (ln n / n)^(1/d)` (`gamma` the unconstrained
/// RRT*'s, [`crate::planners::rrt::rrt_star_gamma`]), never above the range and at
/// least two chain steps.
fn near_radius(space: &JointSpace, gamma: f64, n: usize, range: f64) -> f64 {
    let n = n.max(2) as f64;
    let d = space.dof().max(1) as f64;
    (gamma * (n.ln() / n).powf(1.0 / d))
        .min(range)
        .max(2.0 * STEP)
}

/// A chain's steps (its end last) and its length.
type FreeChain = (Vec<Vec<f64>>, f64);

/// For each `(from, to)` of `pairs`, the chain from `from` that reaches `to` when it is
/// collision free (all the chains checked in one call), else `None`.
fn free_chains(
    ctx: &Context<'_, '_>,
    set: &ConstraintSet,
    pairs: &[(&[f64], &[f64])],
) -> Result<Vec<Option<FreeChain>>, PlanError> {
    let res = ctx.req.resolution;
    let mut reaching = Vec::with_capacity(pairs.len());
    for (from, to) in pairs {
        let chain = steer(set, from, to, MAX_CHAIN, res)?;
        reaching.push((chain.reached && !chain.steps.is_empty()).then_some(chain.steps));
    }
    let chains: Vec<(&[f64], &[Vec<f64>])> = pairs
        .iter()
        .zip(&reaching)
        .filter_map(|((from, _), steps)| steps.as_ref().map(|s| (*from, s.as_slice())))
        .collect();
    let mut verdicts = chains_free(ctx.checker, &chains, res)?.into_iter();
    Ok(pairs
        .iter()
        .zip(reaching)
        .map(|((from, _), steps)| {
            let steps = steps?;
            verdicts.next().filter(|ok| *ok)?;
            let len = chain_length(&ctx.space, from, &steps);
            Some((steps, len))
        })
        .collect())
}

/// Constrained RRT*: grows as [`solve_rrt`] (but the steps of a chain are not vertices of
/// their own: a new vertex is the end of its chain), picks each new vertex's parent among the vertices within
/// the near radius by the cost of their chains to it (all checked in one call), rewires the
/// near vertices it reaches more cheaply (one call), and keeps improving the best path to
/// the goal until the time limit (or `max_iterations`); the cost over time is reported.
pub(super) fn solve_rrt_star(
    ctx: &mut Context<'_, '_>,
    set: &ConstraintSet,
) -> Result<RawSolution, PlanError> {
    let (space, goal, mut tree, range, extend_steps) = setup(ctx)?;
    let mut iterations = 0usize;
    let mut best: Option<usize> = None;
    let mut cost_over_time = Vec::new();
    let gamma = crate::planners::rrt::rrt_star_gamma(&space);
    loop {
        if ctx.must_stop(iterations) {
            break;
        }
        iterations += 1;
        let Some((sample, _)) = target(ctx, set)? else {
            continue;
        };
        // A chain toward the sample from the nearest vertex: its free part's end is the new
        // configuration.
        let Some(near) = tree.nn.nearest(&sample)? else {
            continue;
        };
        let res = ctx.req.resolution;
        let from = tree.nodes[near.id].clone();
        let chain = steer(set, &from, &sample, extend_steps, res)?;
        let keep = free_prefix(ctx.checker, &from, &chain.steps, res)?;
        let Some(q_new) = chain.steps.get(keep.wrapping_sub(1)).cloned() else {
            continue;
        };
        let mut parent = near.id;
        let mut via: Vec<Vec<f64>> = chain.steps[..keep].to_vec();
        let mut cost = tree.cost[near.id] + chain_length(&space, &from, &via);
        // The cheapest parent among the near vertices.
        let radius = near_radius(&space, gamma, tree.nodes.len() + 1, range);
        let near_ids: Vec<usize> = tree
            .nn
            .within(&q_new, radius)?
            .into_iter()
            .map(|n| n.id)
            .filter(|&id| id != near.id)
            .collect();
        let pairs: Vec<(&[f64], &[f64])> = near_ids
            .iter()
            .map(|&id| (tree.nodes[id].as_slice(), q_new.as_slice()))
            .collect();
        for (&id, c) in near_ids.iter().zip(free_chains(ctx, set, &pairs)?) {
            if let Some((steps, len)) = c {
                if tree.cost[id] + len < cost {
                    (parent, via, cost) = (id, steps, tree.cost[id] + len);
                }
            }
        }
        let Some(new) = tree.add(parent, via, cost)? else {
            continue;
        };
        // Rewire the near vertices the new one reaches more cheaply.
        let ids: Vec<usize> = near_ids.into_iter().filter(|&id| id != parent).collect();
        let pairs: Vec<(&[f64], &[f64])> = ids
            .iter()
            .map(|&id| (q_new.as_slice(), tree.nodes[id].as_slice()))
            .collect();
        let reach = free_chains(ctx, set, &pairs)?;
        for (&id, c) in ids.iter().zip(reach) {
            let Some((steps, len)) = c else { continue };
            let through = cost + len;
            if through < tree.cost[id] && !descends_from(&tree, new, id) {
                let old = tree.parent[id];
                tree.children[old].retain(|&c| c != id);
                tree.children[new].push(id);
                tree.parent[id] = new;
                tree.via[id] = steps;
                let drop = tree.cost[id] - through;
                lower_costs(&mut tree, id, drop);
            }
        }
        // The goal: reached by a chain from the new vertex when within range.
        if space.distance(&q_new, &goal) <= range {
            let pair = [(q_new.as_slice(), goal.as_slice())];
            let reach = if space.distance(&q_new, &goal) == 0.0 {
                Some((Vec::new(), 0.0))
            } else {
                free_chains(ctx, set, &pair)?.pop().flatten()
            };
            if let Some((steps, len)) = reach {
                let total = cost + len;
                let better = best.is_none_or(|b| total < tree.cost[b]);
                if better {
                    best = if steps.is_empty() {
                        Some(new)
                    } else {
                        tree.add(new, steps, total)?
                    };
                }
            }
        }
        if let Some(b) = best {
            let c = tree.cost[b];
            if cost_over_time.last().is_none_or(|&(_, last)| c < last) {
                cost_over_time.push((ctx.elapsed_secs(), c));
            }
        }
    }
    let Some(b) = best else {
        return Err(ctx.no_path(iterations, tree.nodes.len()));
    };
    let vertices = tree.nodes.len();
    Ok(RawSolution {
        path: tree.path_to(b),
        iterations,
        vertices,
        edges: vertices - 1,
        cost_over_time,
    })
}

/// Whether `v` is `ancestor` or lies below it.
fn descends_from(tree: &ChainTree, mut v: usize, ancestor: usize) -> bool {
    loop {
        if v == ancestor {
            return true;
        }
        if v == 0 {
            return false;
        }
        v = tree.parent[v];
    }
}

/// Lowers the cost of `root` and everything below it by `drop`.
fn lower_costs(tree: &mut ChainTree, root: usize, drop: f64) {
    let mut stack = vec![root];
    while let Some(v) = stack.pop() {
        tree.cost[v] -= drop;
        stack.extend(tree.children[v].iter().copied());
    }
}
