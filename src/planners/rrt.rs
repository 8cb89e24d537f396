//! RRT and RRT*, both drawing a batch of samples per iteration and checking all the
//! resulting motions in one call.
//!
//! RRT*'s near radius is `r(n) = min(gamma * (ln n / n)^(1/d), range)` with
//! `gamma = 1.1 * (2 (1 + 1/d))^(1/d) * (mu / zeta_d)^(1/d)`: the bound of Karaman & Frazzoli
//! (2011) for asymptotic optimality, with `mu` the measure of the whole joint space (an upper
//! bound on the free space's) and `zeta_d` the volume of the unit `d`-ball, times a 10 % margin.

use rand::Rng;

use crate::collision::{Checker, MotionBatch};
use crate::planners::{space_volume, Context, PlanError, PlannerId, RawSolution};
use crate::roadmap::NearestNeighbors;
use crate::robot::JointSpace;

/// A tree of configurations rooted at vertex 0, with path costs.
pub(crate) struct Tree {
    dof: usize,
    values: Vec<f64>,
    parent: Vec<usize>,
    cost: Vec<f64>,
    children: Vec<Vec<usize>>,
    pub nn: NearestNeighbors,
}

impl Tree {
    pub fn new(space: &JointSpace, root: &[f64]) -> Result<Self, PlanError> {
        let mut t = Self {
            dof: space.dof(),
            values: Vec::new(),
            parent: Vec::new(),
            cost: Vec::new(),
            children: Vec::new(),
            nn: NearestNeighbors::new(space)?,
        };
        t.push(root, 0, 0.0)?;
        Ok(t)
    }

    pub fn len(&self) -> usize {
        self.parent.len()
    }

    pub fn q(&self, v: usize) -> &[f64] {
        &self.values[v * self.dof..(v + 1) * self.dof]
    }

    pub fn cost(&self, v: usize) -> f64 {
        self.cost[v]
    }

    /// Adds `q` under `parent` (the first vertex is a root, its own parent).
    pub fn push(&mut self, q: &[f64], parent: usize, cost: f64) -> Result<usize, PlanError> {
        let v = self.parent.len();
        self.nn.insert(q, v)?;
        self.values.extend_from_slice(q);
        self.parent.push(if v == 0 { 0 } else { parent });
        self.cost.push(cost);
        self.children.push(Vec::new());
        if v != 0 {
            self.children[parent].push(v);
        }
        Ok(v)
    }

    /// Adds `q` as one more root (its own parent, cost 0): a tree grown from several
    /// configurations at once, such as the goals of a goal set.
    pub fn push_root(&mut self, q: &[f64]) -> Result<usize, PlanError> {
        let v = self.parent.len();
        self.nn.insert(q, v)?;
        self.values.extend_from_slice(q);
        self.parent.push(v);
        self.cost.push(0.0);
        self.children.push(Vec::new());
        Ok(v)
    }

    /// True when `q` is exactly a stored configuration.
    pub fn contains(&self, q: &[f64]) -> Result<bool, PlanError> {
        Ok(self.nn.nearest(q)?.is_some_and(|n| n.distance == 0.0))
    }

    /// Moves `v` under `new_parent` with cost `new_cost` and updates its subtree's costs.
    fn reparent(&mut self, v: usize, new_parent: usize, new_cost: f64) {
        let old = self.parent[v];
        self.children[old].retain(|&c| c != v);
        self.children[new_parent].push(v);
        self.parent[v] = new_parent;
        let delta = new_cost - self.cost[v];
        let mut stack = vec![v];
        while let Some(x) = stack.pop() {
            self.cost[x] += delta;
            stack.extend(self.children[x].iter().copied());
        }
    }

    /// Configurations from `v`'s root to `v`.
    pub fn path_from_root(&self, v: usize) -> Vec<Vec<f64>> {
        let mut out = vec![self.q(v).to_vec()];
        let mut x = v;
        while self.parent[x] != x && out.len() <= self.len() {
            x = self.parent[x];
            out.push(self.q(x).to_vec());
        }
        out.reverse();
        out
    }
}

/// A new configuration and its candidate parents, each with the index of its motion.
type Proposal = (Vec<f64>, Vec<(usize, usize)>);

/// RRT* gamma for `space` (see the module documentation).
pub fn rrt_star_gamma(space: &JointSpace) -> f64 {
    let d = space.dof() as f64;
    let zeta = unit_ball_volume(space.dof());
    1.1 * (2.0 * (1.0 + 1.0 / d)).powf(1.0 / d) * (space_volume(space) / zeta).powf(1.0 / d)
}

/// Volume of the unit ball in `d` dimensions.
fn unit_ball_volume(d: usize) -> f64 {
    // V_0 = 1, V_1 = 2, V_d = 2 PI / d * V_{d-2}.
    let (mut v0, mut v1) = (1.0, 2.0);
    if d == 0 {
        return v0;
    }
    for k in 2..=d {
        let v = 2.0 * std::f64::consts::PI / k as f64 * v0;
        v0 = v1;
        v1 = v;
    }
    v1
}

/// Runs RRT (`req.planner == Rrt`) or RRT* (`RrtStar`).
pub(crate) fn solve(ctx: &mut Context<'_, '_>) -> Result<RawSolution, PlanError> {
    let star = ctx.req.planner == PlannerId::RrtStar;
    let space = ctx.space.clone();
    let dof = space.dof();
    // The goal set: the goal, then the request's other goals.
    let goals: Vec<Vec<f64>> = ctx.req.goals().cloned().collect();
    let range = ctx.range();
    let gamma = rrt_star_gamma(&space);
    let mut tree = Tree::new(&space, &ctx.req.start)?;
    let mut iterations = 0;
    // (vertex, goal) pairs with a checked motion from the vertex to the goal.
    let mut goal_links: Vec<(usize, usize)> = Vec::new();
    let mut best: Option<(f64, usize, usize)> = None;
    let mut cost_over_time = Vec::new();
    while !ctx.must_stop(iterations) {
        iterations += 1;
        // 1. Sample and steer.
        let n = tree.len() as f64 + 1.0;
        let radius = (gamma * (n.ln() / n).powf(1.0 / dof as f64)).min(range);
        let mut motions = MotionBatch::new(dof);
        let mut proposals: Vec<Proposal> = Vec::new();
        for _ in 0..ctx.req.batch() {
            let target = if ctx.rng.random_bool(ctx.req.goal_bias) {
                // One goal of the set (a single goal draws nothing more).
                let k = if goals.len() > 1 {
                    ctx.rng.random_range(0..goals.len())
                } else {
                    0
                };
                goals[k].clone()
            } else {
                ctx.sample()
            };
            let Some(nearest) = tree.nn.nearest(&target)? else {
                continue;
            };
            let new = ctx.steer(tree.q(nearest.id), &target, range);
            if space.distance(tree.q(nearest.id), &new) <= 0.0 {
                continue;
            }
            let mut parents = Vec::new();
            if star {
                let mut near = tree.nn.within(&new, radius)?;
                if !near.iter().any(|x| x.id == nearest.id) {
                    near.push(nearest);
                }
                for x in near {
                    parents.push((x.id, motions.len()));
                    motions.push(tree.q(x.id), &new)?;
                }
            } else {
                parents.push((nearest.id, motions.len()));
                motions.push(tree.q(nearest.id), &new)?;
            }
            proposals.push((new, parents));
        }
        if motions.is_empty() {
            continue;
        }
        let verdicts = ctx.checker.check_motions(&motions, ctx.req.resolution)?;
        let ok = |m: usize| verdicts.get(m).copied().unwrap_or(false);
        // 2. Insert, choosing the best parent and rewiring (RRT*).
        let mut goal_motions = MotionBatch::new(dof);
        let mut goal_candidates = Vec::new();
        for (new, parents) in proposals {
            let valid: Vec<usize> = parents
                .iter()
                .filter(|(_, m)| ok(*m))
                .map(|(p, _)| *p)
                .collect();
            let Some(parent) = valid.iter().copied().min_by(|&a, &b| {
                let ca = tree.cost(a) + space.distance(tree.q(a), &new);
                let cb = tree.cost(b) + space.distance(tree.q(b), &new);
                ca.total_cmp(&cb).then(a.cmp(&b))
            }) else {
                continue;
            };
            if tree.contains(&new)? {
                continue;
            }
            let cost = tree.cost(parent) + space.distance(tree.q(parent), &new);
            let v = tree.push(&new, parent, cost)?;
            if star {
                for &x in &valid {
                    if x == parent {
                        continue;
                    }
                    let c = cost + space.distance(&new, tree.q(x));
                    if c < tree.cost(x) - 1e-12 {
                        tree.reparent(x, v, c);
                    }
                }
            }
            for (k, goal) in goals.iter().enumerate() {
                if space.distance(&new, goal) <= range.max(radius) {
                    goal_candidates.push((v, k));
                    goal_motions.push(&new, goal)?;
                }
            }
        }
        // 3. Try to reach the goal from the new vertices near it, in one batch.
        if !goal_motions.is_empty() {
            let verdicts = ctx
                .checker
                .check_motions(&goal_motions, ctx.req.resolution)?;
            for (m, &link) in goal_candidates.iter().enumerate() {
                if verdicts.get(m).copied().unwrap_or(false) {
                    goal_links.push(link);
                }
            }
        }
        // 4. Best solution so far (rewiring may have lowered old links' costs).
        let current = goal_links
            .iter()
            .map(|&(v, k)| (tree.cost(v) + space.distance(tree.q(v), &goals[k]), v, k))
            .min_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)).then(a.2.cmp(&b.2)));
        if let Some((c, v, k)) = current {
            if best.is_none_or(|(b, _, _)| c < b - 1e-12) {
                cost_over_time.push((ctx.elapsed_secs(), c));
            }
            best = Some((c, v, k));
            if !star {
                break;
            }
        }
    }
    let Some((_, v, k)) = best else {
        return Err(ctx.no_path(iterations, tree.len()));
    };
    let mut path = tree.path_from_root(v);
    if space.distance(tree.q(v), &goals[k]) > 0.0 {
        path.push(goals[k].clone());
    }
    Ok(RawSolution {
        path,
        iterations,
        vertices: tree.len(),
        edges: tree.len().saturating_sub(1),
        cost_over_time: if star { cost_over_time } else { Vec::new() },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unit_ball_volumes() {
        let pi = std::f64::consts::PI;
        assert!((unit_ball_volume(2) - pi).abs() < 1e-12);
        assert!((unit_ball_volume(3) - 4.0 / 3.0 * pi).abs() < 1e-12);
        assert!((unit_ball_volume(4) - pi * pi / 2.0).abs() < 1e-12);
    }
}
