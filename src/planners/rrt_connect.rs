//! RRT-Connect (Kuffner & LaValle 2000), batched: each iteration extends one tree towards a
//! batch of samples with one motion check, then tries to connect the other tree to every new
//! vertex with a second check that holds, for each new vertex, the whole chain of
//! `range`-long steps from the other tree's nearest vertex. The valid prefix of each chain is
//! added to the other tree (what the greedy CONNECT step would have built); a fully valid
//! chain joins the trees. On the CPU backend the chains' motions are checked one at a time
//! instead and checking stops where their verdicts stop being read (after a chain's first
//! invalid motion, after the joining chain): the same result for less work.
//!
//! Three additions of VAMP's RRT-Connect (Thomason et al. 2024), each of which matters in
//! narrow spaces such as the MotionBenchMaker shelves:
//!
//! - The straight motion from start to goal is tried first (one check; with a goal set, the
//!   straight motions to every goal in one batch, and the goal tree grows from all goals).
//! - Dynamic domain sampling (Yershova et al. 2005, [`PlanRequest::dynamic_domain`]): every
//!   vertex has a radius, unbounded until an extension from it fails, then
//!   [`PlanRequest::dd_radius`] times the range (default [`default_dd_radius`]: 3 or 2 by the
//!   number of joints; VAMP: 2), shrinking by [`DD_ALPHA`] per further failure down
//!   to [`DD_MIN_RADIUS_FACTOR`] times the range and growing by it per success. A sample
//!   farther from its nearest vertex than that vertex's radius is dropped unchecked, so
//!   vertices against obstacles stop drawing the samples of the whole space towards them.
//! - Not in VAMP: with dynamic domains, a vertex whose extensions keep failing extends by
//!   shorter steps (halved per [`STEP_HALVE_AFTER`] failures since its last success, down
//!   to [`STEP_FLOOR_FACTOR`] times the range). On the MBM Fetch, goals between two shelves
//!   had trees of 3 to 9 vertices after millions of iterations: range-long motions from them
//!   almost all collide.
//! - Tree balance ([`PlanRequest::balance_trees`]): the trees take turns, except that a tree
//!   less than half the size of the other is extended again. With dynamic domains most of
//!   those iterations are samples outside the small tree's domains, dropped at the cost of a
//!   nearest-neighbour query, so the small tree (typically the goal's, deep in a shelf) gets
//!   many cheap tries. Unlike VAMP, the small tree hands one turn to the other tree after
//!   every [`STUCK_AFTER`] checked extensions that failed in a row: otherwise a tree stuck in
//!   a tight spot starves the other one for good (seen on a Fetch bookshelf problem: 38
//!   million iterations, 12 vertices in 30 s).
//!
//! [`PlanRequest::dynamic_domain`]: crate::planners::PlanRequest::dynamic_domain
//! [`PlanRequest::balance_trees`]: crate::planners::PlanRequest::balance_trees
//! [`PlanRequest::dd_radius`]: crate::planners::PlanRequest::dd_radius
//! [`default_dd_radius`]: crate::planners::default_dd_radius

use crate::collision::{Checker, ConfigBatch, MotionBatch};
use crate::planners::rrt::Tree;
use crate::planners::{Context, PlanError, RawSolution, CLOCK_EVERY};
use crate::robot::JointSpace;

/// Smallest dynamic-domain radius, in units of the range (VAMP: 1 at range 2).
pub const DD_MIN_RADIUS_FACTOR: f64 = 0.5;
/// Relative change of a bounded dynamic-domain radius per extension (VAMP's alpha).
pub const DD_ALPHA: f64 = 1e-4;

/// Shortest extension step of a vertex, in units of the range (see the module documentation).
pub const STEP_FLOOR_FACTOR: f64 = 0.125;
/// Failed extensions from a vertex (since its last success) per halving of its step.
pub const STEP_HALVE_AFTER: u32 = 20;

/// Tree balance gives the other tree one turn after every this many checked extensions of
/// the small tree that failed in a row.
pub const STUCK_AFTER: usize = 100;

/// A tree with the dynamic-domain radius of each vertex.
struct DomainTree {
    tree: Tree,
    radius: Vec<f64>,
    /// Per vertex: failed extensions from it since its last successful one. With dynamic
    /// domains, the longest step of an extension from a vertex is the range halved per
    /// [`STEP_HALVE_AFTER`] of them, down to [`STEP_FLOOR_FACTOR`] times the range. A vertex
    /// in a pocket where range-long motions almost all collide (a Fetch goal between two
    /// shelves: 3 to 7 of 16 joint-axis motions of 0.1 rad are free there) then grows its tree
    /// by short steps instead of failing millions of times.
    fails: Vec<u32>,
    /// Checked extensions that failed since the last one that succeeded.
    failed_in_row: usize,
    /// Set at every [`STUCK_AFTER`]-th failure in a row: the tree yields its next turn.
    yield_turn: bool,
    /// Vertices whose radius is unbounded.
    unbounded: usize,
    /// At least every bounded radius (the largest any has had).
    radius_cap: f64,
    /// Per joint: the least and the greatest value of the vertices (`NaN`-free: vertices are
    /// valid configurations), and whether the joint is continuous (left out of the bound).
    lo: Vec<f64>,
    hi: Vec<f64>,
    continuous: Vec<bool>,
}

impl DomainTree {
    fn new(space: &JointSpace, root: &[f64]) -> Result<Self, PlanError> {
        Ok(Self {
            tree: Tree::new(space, root)?,
            radius: vec![f64::INFINITY],
            fails: vec![0],
            failed_in_row: 0,
            yield_turn: false,
            unbounded: 1,
            radius_cap: 0.0,
            lo: root.to_vec(),
            hi: root.to_vec(),
            continuous: space.continuous.clone(),
        })
    }

    fn push(&mut self, q: &[f64], parent: usize, cost: f64) -> Result<usize, PlanError> {
        let v = self.tree.push(q, parent, cost)?;
        self.grown(q);
        Ok(v)
    }

    /// Adds `q` as one more root (a goal of a goal set).
    fn push_root(&mut self, q: &[f64]) -> Result<usize, PlanError> {
        let v = self.tree.push_root(q)?;
        self.grown(q);
        Ok(v)
    }

    /// The per-vertex state of a vertex `q` just added: an unbounded domain, no failures, the
    /// bounding box grown to hold it.
    fn grown(&mut self, q: &[f64]) {
        self.radius.push(f64::INFINITY);
        self.fails.push(0);
        self.unbounded += 1;
        for ((lo, hi), &x) in self.lo.iter_mut().zip(&mut self.hi).zip(q) {
            *lo = lo.min(x);
            *hi = hi.max(x);
        }
    }

    /// True when `q` is surely outside the domain of its nearest vertex, without asking for
    /// that vertex: every radius is bounded, and even the box around the vertices (over the
    /// joints that do not wrap) is farther from `q` than any radius. The nearest vertex is then
    /// farther too, so the dynamic-domain test would drop `q`: skipping the query changes
    /// nothing but its cost. The bound is shrunk by a relative 1e-9, far more than the
    /// rounding of the distances compared (about 1e-15 relative).
    fn surely_outside(&self, q: &[f64]) -> bool {
        if self.unbounded > 0 {
            return false;
        }
        let mut s = 0.0;
        for (j, &x) in q.iter().enumerate() {
            if self.continuous.get(j).copied().unwrap_or(true) {
                continue;
            }
            let (Some(&lo), Some(&hi)) = (self.lo.get(j), self.hi.get(j)) else {
                continue;
            };
            let gap = (lo - x).max(x - hi).max(0.0);
            s += gap * gap;
        }
        s.sqrt() * (1.0 - 1e-9) > self.radius_cap
    }

    /// An extension from `v` failed: bound or shrink its radius (read only with dynamic
    /// domains) and count the failure.
    fn failed(&mut self, v: usize, range: f64, dd_radius: f64) {
        self.failed_in_row += 1;
        if self.failed_in_row.is_multiple_of(STUCK_AFTER) {
            self.yield_turn = true;
        }
        if let Some(r) = self.radius.get_mut(v) {
            *r = if r.is_finite() {
                (*r * (1.0 - DD_ALPHA)).max(DD_MIN_RADIUS_FACTOR * range)
            } else {
                self.unbounded = self.unbounded.saturating_sub(1);
                dd_radius * range
            };
            self.radius_cap = self.radius_cap.max(*r);
        }
        if let Some(f) = self.fails.get_mut(v) {
            *f = f.saturating_add(1);
        }
    }

    /// The longest step of an extension from `v` (see [`Self::fails`]).
    fn step(&self, v: usize, range: f64) -> f64 {
        let halvings = self.fails.get(v).map_or(0, |f| f / STEP_HALVE_AFTER);
        (range * 0.5f64.powi(halvings.min(16) as i32)).max(STEP_FLOOR_FACTOR * range)
    }

    /// An extension from `v` succeeded: grow its radius when bounded, reset the count.
    fn extended(&mut self, v: usize) {
        self.failed_in_row = 0;
        if let Some(r) = self.radius.get_mut(v) {
            if r.is_finite() {
                *r *= 1.0 + DD_ALPHA;
                self.radius_cap = self.radius_cap.max(*r);
            }
        }
        if let Some(f) = self.fails.get_mut(v) {
            *f = 0;
        }
    }
}

pub(crate) fn solve(ctx: &mut Context<'_, '_>) -> Result<RawSolution, PlanError> {
    let space = ctx.space.clone();
    let dof = space.dof();
    let range = ctx.range();
    let dynamic_domain = ctx.req.dynamic_domain;
    let dd_radius = ctx.dd_radius();
    // The straight motion first (to every goal of a goal set, the first valid one taken):
    // many problems need no tree at all. Of parallel attempts only the first checks it: its
    // path (iteration 0) would win over any other attempt's.
    let goals: Vec<&Vec<f64>> = ctx.req.goals().collect();
    let first_attempt = ctx.race.is_none_or(|(_, attempt)| attempt == 0);
    if first_attempt {
        let mut direct = MotionBatch::new(dof);
        for goal in &goals {
            direct.push(&ctx.req.start, goal)?;
        }
        let verdicts = ctx.checker.check_motions(&direct, ctx.req.resolution)?;
        if let Some(k) = verdicts.iter().position(|&free| free) {
            return Ok(RawSolution {
                path: vec![ctx.req.start.clone(), goals[k].clone()],
                iterations: 0,
                vertices: 1 + goals.len(),
                edges: 1,
                cost_over_time: Vec::new(),
            });
        }
    }
    let mut a = DomainTree::new(&space, &ctx.req.start)?;
    // The goal tree grows from every goal of the set at once.
    let mut b = DomainTree::new(&space, &ctx.req.goal)?;
    for goal in &ctx.req.other_goals {
        if !b.tree.contains(goal)? {
            b.push_root(goal)?;
        }
    }
    let mut a_is_start = true;
    let mut iterations = 0;
    let mut target = Vec::with_capacity(dof);
    // The clock is read after every iteration that checked a motion and every CLOCK_EVERY
    // iterations otherwise (most iterations of a stuck tree drop their sample unchecked).
    let mut clock_due = true;
    while !ctx.must_stop_lazily(iterations, clock_due || iterations % CLOCK_EVERY == 0) {
        iterations += 1;
        clock_due = false;
        // 1. Extend tree `a` towards a batch of samples.
        let mut motions = MotionBatch::new(dof);
        let mut proposals = Vec::new();
        for _ in 0..ctx.req.batch() {
            ctx.sample_into(&mut target);
            if dynamic_domain && a.surely_outside(&target) {
                continue; // outside every domain: dropped without a nearest-neighbour query
            }
            let Some(nearest) = a.tree.nn.nearest(&target)? else {
                continue;
            };
            if dynamic_domain
                && a.radius
                    .get(nearest.id)
                    .is_some_and(|&r| r < nearest.distance)
            {
                continue; // outside the nearest vertex's domain: dropped unchecked
            }
            let step = if dynamic_domain {
                a.step(nearest.id, range)
            } else {
                range
            };
            let new = ctx.steer(a.tree.q(nearest.id), &target, step);
            if space.distance(a.tree.q(nearest.id), &new) <= 0.0 {
                continue;
            }
            motions.push(a.tree.q(nearest.id), &new)?;
            proposals.push((nearest.id, new));
        }
        let mut added = Vec::new();
        if !motions.is_empty() {
            clock_due = true;
            let verdicts = ctx.checker.check_motions(&motions, ctx.req.resolution)?;
            for (k, (parent, new)) in proposals.into_iter().enumerate() {
                if !verdicts.get(k).copied().unwrap_or(false) {
                    a.failed(parent, range, dd_radius);
                    continue;
                }
                a.extended(parent);
                if a.tree.contains(&new)? {
                    continue;
                }
                let cost = a.tree.cost(parent) + space.distance(a.tree.q(parent), &new);
                added.push(a.push(&new, parent, cost)?);
            }
        }
        // 2. Connect tree `b` to each new vertex of `a`: chains of range-long steps.
        let mut chains = MotionBatch::new(dof);
        // (vertex of a, nearest vertex of b, chain points, index of the chain's first motion)
        let mut plans: Vec<(usize, usize, Vec<Vec<f64>>, usize)> = Vec::new();
        for &v in &added {
            let target = a.tree.q(v).to_vec();
            let Some(nearest) = b.tree.nn.nearest(&target)? else {
                continue;
            };
            let from = b.tree.q(nearest.id).to_vec();
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
                    space.interpolate(
                        b.tree.q(nearest.id),
                        &target,
                        s as f64 / steps as f64,
                        &mut p,
                    );
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
            let batched = ctx.checker.backend().batches();
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
                    if b.tree.contains(&p)? {
                        joined = false;
                        break;
                    }
                    let cost = b.tree.cost(tip) + space.distance(b.tree.q(tip), &p);
                    tip = b.push(&p, tip, cost)?;
                }
                if joined {
                    let from_a = a.tree.path_from_root(v);
                    let mut from_b = b.tree.path_from_root(tip);
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
                    let vertices = a.tree.len() + b.tree.len();
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
        // 3. The trees take turns; with balancing, a tree less than half the size of the
        // other is extended again, except for one turn after every STUCK_AFTER failures in a
        // row (a tree stuck in a tight spot must not starve the other one).
        let yielded = std::mem::take(&mut a.yield_turn);
        let keep = ctx.req.balance_trees && !yielded && 2 * a.tree.len() <= b.tree.len();
        if !keep {
            std::mem::swap(&mut a, &mut b);
            a_is_start = !a_is_start;
        }
    }
    Err(ctx.no_path(iterations, a.tree.len() + b.tree.len()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::robot::JointSpace;

    fn space() -> JointSpace {
        JointSpace {
            names: vec!["a".into(), "b".into()],
            lower: vec![0.0, 0.0],
            upper: vec![1.0, 1.0],
            continuous: vec![false, false],
            max_velocity: vec![1.0, 1.0],
            max_acceleration: vec![1.0, 1.0],
            max_jerk: vec![f64::INFINITY; 2],
        }
    }

    /// A dynamic-domain radius factor for the tests.
    const DD: f64 = 3.0;

    #[test]
    fn domain_radius_is_bounded_at_the_first_failure_then_shrinks_to_its_floor() {
        let range = 0.3;
        let mut t = DomainTree::new(&space(), &[0.5, 0.5]).expect("tree");
        assert!(t.radius[0].is_infinite());
        t.extended(0);
        assert!(
            t.radius[0].is_infinite(),
            "successes leave an unbounded radius alone"
        );
        t.failed(0, range, DD);
        assert_eq!(t.radius[0], DD * range);
        t.failed(0, range, DD);
        assert!(t.radius[0] < DD * range);
        let shrunk = t.radius[0];
        t.extended(0);
        assert!(t.radius[0] > shrunk, "a success grows a bounded radius");
        for _ in 0..100_000 {
            t.failed(0, range, DD);
        }
        assert_eq!(t.radius[0], DD_MIN_RADIUS_FACTOR * range);
        let v = t.push(&[0.6, 0.5], 0, 0.1).expect("push");
        assert!(t.radius[v].is_infinite(), "new vertices start unbounded");
    }

    #[test]
    fn extension_step_halves_with_failures_down_to_its_floor_and_resets_on_success() {
        let range = 0.4;
        let mut t = DomainTree::new(&space(), &[0.5, 0.5]).expect("tree");
        assert_eq!(t.step(0, range), range);
        for _ in 0..STEP_HALVE_AFTER - 1 {
            t.failed(0, range, DD);
        }
        assert_eq!(t.step(0, range), range, "fewer failures than a halving");
        t.failed(0, range, DD);
        assert_eq!(t.step(0, range), 0.5 * range);
        for _ in 0..100 * STEP_HALVE_AFTER {
            t.failed(0, range, DD);
        }
        assert_eq!(t.step(0, range), STEP_FLOOR_FACTOR * range);
        let v = t.push(&[0.6, 0.5], 0, 0.1).expect("push");
        assert_eq!(t.step(v, range), range, "a new vertex takes full steps");
        t.extended(0);
        assert_eq!(t.step(0, range), range, "a success restores full steps");
    }

    #[test]
    fn a_tree_yields_a_turn_after_every_run_of_failures() {
        let mut t = DomainTree::new(&space(), &[0.5, 0.5]).expect("tree");
        for k in 1..=3 * STUCK_AFTER {
            t.failed(0, 0.3, DD);
            let yielded = std::mem::take(&mut t.yield_turn);
            assert_eq!(yielded, k % STUCK_AFTER == 0, "failure {k}");
        }
        for _ in 0..STUCK_AFTER - 1 {
            t.failed(0, 0.3, DD);
        }
        t.extended(0);
        t.failed(0, 0.3, DD);
        assert!(!t.yield_turn, "a success starts the count again");
        assert_eq!(t.failed_in_row, 1);
    }

    /// `surely_outside` never drops a sample the dynamic-domain test would keep: on random
    /// trees (a continuous joint among them), wherever it answers true the nearest vertex is
    /// farther than its radius. It answers only once every radius is bounded, and then does
    /// answer for far samples.
    #[test]
    fn surely_outside_implies_outside_the_nearest_domain() {
        use rand::{Rng, SeedableRng};
        let space = JointSpace {
            names: vec!["a".into(), "b".into(), "c".into()],
            lower: vec![-3.0, -3.0, -3.0],
            upper: vec![3.0, 3.0, 3.0],
            continuous: vec![false, true, false],
            max_velocity: vec![1.0; 3],
            max_acceleration: vec![1.0; 3],
            max_jerk: vec![f64::INFINITY; 3],
        };
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
        let mut sure = 0;
        for round in 0..40 {
            let range = 0.1 + 0.05 * (round % 5) as f64;
            let root: Vec<f64> = (0..3).map(|_| rng.random_range(-1.0..1.0)).collect();
            let mut t = DomainTree::new(&space, &root).expect("tree");
            for _ in 0..rng.random_range(0..20) {
                let parent = rng.random_range(0..t.tree.len());
                let q: Vec<f64> = t
                    .tree
                    .q(parent)
                    .iter()
                    .map(|x| (x + rng.random_range(-0.3..0.3)).clamp(-3.0, 3.0))
                    .collect();
                t.push(&q, parent, 0.0).expect("push");
            }
            // Every vertex fails once or more, some succeed afterwards.
            for v in 0..t.tree.len() {
                assert!(
                    !t.surely_outside(&[9.0, 0.0, 9.0]),
                    "an unbounded vertex is left"
                );
                for _ in 0..rng.random_range(1..4) {
                    t.failed(v, range, DD);
                }
                if rng.random_bool(0.3) {
                    t.extended(v);
                }
            }
            for _ in 0..500 {
                let q: Vec<f64> = (0..3).map(|_| rng.random_range(-3.0..3.0)).collect();
                if t.surely_outside(&q) {
                    sure += 1;
                    let n = t.tree.nn.nearest(&q).expect("query").expect("nearest");
                    assert!(t.radius[n.id] < n.distance, "round {round}: {q:?} kept");
                }
            }
        }
        assert!(sure > 1000, "{sure} samples dropped without a query");
    }
}
