//! PRM and lazy PRM under path constraints: the roadmap's vertices are projected samples
//! that keep the constraints (checked collision free in one call per batch), and an edge is
//! a chain of projected steps ([`super::steer`]) that reaches its other end.
//!
//! * PRM joins each new vertex to its k nearest neighbours (the unconstrained PRM's rule,
//!   [`crate::planners::prm`]): every chain that reaches its end is checked for collisions,
//!   all of an iteration's chains in one call; union-find says when start and goal are joined,
//!   then A* over the free edges gives the path.
//! * Lazy PRM adds the chains unchecked, searches for the shortest path over every edge not
//!   known to collide, checks only that path's unchecked chains (one call), and repeats.
//!
//! The roadmap lives for one request (its edges hold the constraints of that request).

use std::collections::BTreeSet;

use super::{bad, chains_free, steer, ConstraintSet, MAX_CHAIN};
use crate::collision::{Checker, ConfigBatch};
use crate::planners::prm::neighbors_wanted;
use crate::planners::{Context, PlanError, RawSolution};
use crate::roadmap::{Edge, EdgeLabel, GraphPath, NearestNeighbors, Roadmap, UnionFind};
use crate::robot::JointSpace;

/// A roadmap whose edges are chains.
struct ChainRoadmap {
    roadmap: Roadmap,
    nn: NearestNeighbors,
    /// Components of the free edges.
    components: UnionFind,
    /// Each edge's configurations from its `a` to its `b`, both included.
    chains: Vec<Vec<Vec<f64>>>,
    /// Vertex pairs whose chain did not reach (not tried again).
    unreachable: BTreeSet<(usize, usize)>,
}

impl ChainRoadmap {
    fn vertex(&mut self, q: &[f64]) -> Result<usize, PlanError> {
        let v = self.roadmap.add_vertex(q)?;
        self.nn.insert(q, v)?;
        self.components.push();
        Ok(v)
    }

    fn q(&self, v: usize) -> Vec<f64> {
        self.roadmap
            .vertex(v)
            .map(<[f64]>::to_vec)
            .unwrap_or_default()
    }

    /// Joins each of `new` to its nearest neighbours by chains; eagerly, all the new chains'
    /// motions are checked in one call.
    fn connect(
        &mut self,
        ctx: &Context<'_, '_>,
        set: &ConstraintSet,
        new: &[usize],
        lazy: bool,
    ) -> Result<(), PlanError> {
        let k = neighbors_wanted(ctx.req, self.roadmap.num_vertices(), ctx.space.dof());
        let mut pairs = BTreeSet::new();
        for &v in new {
            for n in self.nn.k_nearest(&self.q(v), k + 1)? {
                if n.id != v {
                    pairs.insert((v.min(n.id), v.max(n.id)));
                }
            }
        }
        let mut added = Vec::new();
        for (a, b) in pairs {
            if self.unreachable.contains(&(a, b)) || self.roadmap.find_edge(a, b).is_some() {
                continue;
            }
            let (qa, qb) = (self.q(a), self.q(b));
            let chain = steer(set, &qa, &qb, MAX_CHAIN, ctx.req.resolution)?;
            if !chain.reached {
                self.unreachable.insert((a, b));
                continue;
            }
            let mut points = vec![qa];
            points.extend(chain.steps);
            let length = crate::trajectory::path_length(&ctx.space, &points);
            let e = self.roadmap.add_edge(a, b, length, EdgeLabel::Unknown)?;
            self.chains.push(points);
            debug_assert_eq!(self.chains.len(), e + 1);
            added.push(e);
        }
        if !lazy {
            self.check_edges(ctx, &added)?;
        }
        Ok(())
    }

    /// Checks the chains of `edges` in one call and labels them.
    fn check_edges(&mut self, ctx: &Context<'_, '_>, edges: &[usize]) -> Result<(), PlanError> {
        let chains: Vec<(&[f64], &[Vec<f64>])> = edges
            .iter()
            .map(|&e| (self.chains[e][0].as_slice(), &self.chains[e][1..]))
            .collect();
        let verdicts = chains_free(ctx.checker, &chains, ctx.req.resolution)?;
        for (&e, free) in edges.iter().zip(verdicts) {
            let label = if free {
                EdgeLabel::Valid
            } else {
                EdgeLabel::Invalid
            };
            self.roadmap.set_label(e, label)?;
            if free {
                if let Some(edge) = self.roadmap.edge(e).copied() {
                    self.components.union(edge.a, edge.b);
                }
            }
        }
        Ok(())
    }

    /// One batch of projected samples, the collision-free ones added and joined.
    fn grow(
        &mut self,
        ctx: &mut Context<'_, '_>,
        set: &ConstraintSet,
        lazy: bool,
    ) -> Result<(), PlanError> {
        let dof = ctx.space.dof();
        let n = ctx.req.batch();
        let mut batch = ConfigBatch::with_capacity(dof, n);
        let mut samples = Vec::with_capacity(n);
        for _ in 0..n {
            let q = ctx.sample();
            if let Some(p) = set.project(&q).map_err(bad)? {
                batch.push(&p)?;
                samples.push(p);
            }
        }
        if samples.is_empty() {
            return Ok(());
        }
        let verdicts = ctx.checker.check_configs(&batch)?;
        let mut new = Vec::new();
        for (q, ok) in samples.into_iter().zip(verdicts) {
            if ok {
                new.push(self.vertex(&q)?);
            }
        }
        self.connect(ctx, set, &new, lazy)
    }

    /// The shortest path from `s` to `g` over free edges (lazily: edges not known to
    /// collide).
    fn best_path(
        &mut self,
        space: &JointSpace,
        s: usize,
        g: usize,
        lazy: bool,
    ) -> Option<GraphPath> {
        if !lazy && !self.components.connected(s, g) {
            return None;
        }
        let roadmap = &self.roadmap;
        let target = roadmap.vertex(g)?.to_vec();
        let heuristic = |v: usize| {
            roadmap
                .vertex(v)
                .map_or(0.0, |q| space.distance(q, &target))
        };
        let usable = |e: &Edge| {
            if lazy {
                e.label != EdgeLabel::Invalid
            } else {
                e.label == EdgeLabel::Valid
            }
        };
        roadmap.shortest_path(s, g, usable, heuristic)
    }

    /// The configurations of `path`, chains included, from its first vertex on.
    fn expand(&self, path: &GraphPath) -> Vec<Vec<f64>> {
        let mut out = vec![self.q(path.vertices[0])];
        for (i, &e) in path.edges.iter().enumerate() {
            let chain = &self.chains[e];
            let forward = self
                .roadmap
                .edge(e)
                .is_some_and(|x| x.a == path.vertices[i]);
            if forward {
                out.extend(chain.iter().skip(1).cloned());
            } else {
                out.extend(chain.iter().rev().skip(1).cloned());
            }
        }
        out
    }
}

/// Constrained PRM (or lazy PRM) from the request's start to its goal.
pub(super) fn solve_prm(
    ctx: &mut Context<'_, '_>,
    set: &ConstraintSet,
    lazy: bool,
) -> Result<RawSolution, PlanError> {
    let space = ctx.space.clone();
    let mut map = ChainRoadmap {
        roadmap: Roadmap::new(space.dof()),
        nn: NearestNeighbors::new(&space)?,
        components: UnionFind::new(0),
        chains: Vec::new(),
        unreachable: BTreeSet::new(),
    };
    let s = map.vertex(&ctx.req.start)?;
    let g = map.vertex(&ctx.req.goal)?;
    map.connect(ctx, set, &[s, g], lazy)?;
    let mut iterations = 0;
    loop {
        if let Some(p) = map.best_path(&space, s, g, lazy) {
            let unknown: Vec<usize> = p
                .edges
                .iter()
                .copied()
                .filter(|&e| {
                    map.roadmap
                        .edge(e)
                        .is_some_and(|x| x.label == EdgeLabel::Unknown)
                })
                .collect();
            if unknown.is_empty() {
                return Ok(RawSolution {
                    path: map.expand(&p),
                    iterations,
                    vertices: map.roadmap.num_vertices(),
                    edges: map.roadmap.num_edges(),
                    cost_over_time: Vec::new(),
                });
            }
            if ctx.timed_out() {
                break;
            }
            map.check_edges(ctx, &unknown)?;
            continue;
        }
        if ctx.must_stop(iterations) {
            break;
        }
        iterations += 1;
        map.grow(ctx, set, lazy)?;
    }
    Err(ctx.no_path(iterations, map.roadmap.num_vertices()))
}
