//! Roadmaps: graph storage with per-edge validity labels, union-find over connected
//! components, shortest paths (Dijkstra / A*) and k-d tree neighbour search.
//!
//! The graph is plain data (row-major vertices, edge list, adjacency lists) so that it can be
//! saved, loaded and shared by the PRM family and the dynamic roadmap.

mod nn;

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use serde::{Deserialize, Serialize};

pub use nn::{NearestNeighbors, Neighbor, NnError, MAX_DOF, SCAN_MAX};

/// What is known about the motion an edge stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum EdgeLabel {
    /// Checked and collision free.
    Valid,
    /// Checked and in collision.
    Invalid,
    /// Not checked yet (lazy planners).
    Unknown,
}

/// An undirected edge: the straight-line motion between two vertices.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Edge {
    /// First vertex.
    pub a: usize,
    /// Second vertex.
    pub b: usize,
    /// Joint-space length of the motion (its cost).
    pub length: f64,
    /// What is known about the motion.
    pub label: EdgeLabel,
}

impl Edge {
    /// The endpoint of the edge that is not `v` (or `a` when `v` is neither).
    pub fn other(&self, v: usize) -> usize {
        if self.a == v {
            self.b
        } else {
            self.a
        }
    }
}

/// Errors of roadmap editing.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RoadmapError {
    /// A vertex had the wrong number of values.
    #[error("vertex has {got} values, the roadmap holds {expected}-joint configurations")]
    WrongDof {
        /// Joints per configuration in the roadmap.
        expected: usize,
        /// Values the vertex had.
        got: usize,
    },
    /// A vertex index was out of range.
    #[error("vertex {index} does not exist (the roadmap has {len} vertices)")]
    NoSuchVertex {
        /// The bad index.
        index: usize,
        /// Number of vertices.
        len: usize,
    },
    /// An edge index was out of range.
    #[error("edge {index} does not exist (the roadmap has {len} edges)")]
    NoSuchEdge {
        /// The bad index.
        index: usize,
        /// Number of edges.
        len: usize,
    },
}

/// An undirected graph of configurations with labelled edges.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Roadmap {
    dof: usize,
    vertices: Vec<f64>,
    edges: Vec<Edge>,
    adjacency: Vec<Vec<usize>>,
}

impl Roadmap {
    /// An empty roadmap of `dof`-joint configurations.
    pub fn new(dof: usize) -> Self {
        Self {
            dof,
            ..Self::default()
        }
    }

    /// Joints per configuration.
    pub fn dof(&self) -> usize {
        self.dof
    }

    /// Number of vertices.
    pub fn num_vertices(&self) -> usize {
        self.adjacency.len()
    }

    /// Number of edges (all labels).
    pub fn num_edges(&self) -> usize {
        self.edges.len()
    }

    /// All vertex values, row-major.
    pub fn vertex_values(&self) -> &[f64] {
        &self.vertices
    }

    /// Configuration of vertex `v`, or `None` when out of range.
    pub fn vertex(&self, v: usize) -> Option<&[f64]> {
        if v < self.num_vertices() {
            self.vertices.get(v * self.dof..(v + 1) * self.dof)
        } else {
            None
        }
    }

    /// All edges.
    pub fn edges(&self) -> &[Edge] {
        &self.edges
    }

    /// Edge `e`, or `None` when out of range.
    pub fn edge(&self, e: usize) -> Option<&Edge> {
        self.edges.get(e)
    }

    /// Edge ids incident to vertex `v` (empty when out of range).
    pub fn incident(&self, v: usize) -> &[usize] {
        self.adjacency.get(v).map_or(&[], |a| a.as_slice())
    }

    /// Adds a vertex and returns its index.
    pub fn add_vertex(&mut self, q: &[f64]) -> Result<usize, RoadmapError> {
        if q.len() != self.dof {
            return Err(RoadmapError::WrongDof {
                expected: self.dof,
                got: q.len(),
            });
        }
        self.vertices.extend_from_slice(q);
        self.adjacency.push(Vec::new());
        Ok(self.adjacency.len() - 1)
    }

    /// Adds an edge between `a` and `b` and returns its index.
    pub fn add_edge(
        &mut self,
        a: usize,
        b: usize,
        length: f64,
        label: EdgeLabel,
    ) -> Result<usize, RoadmapError> {
        let len = self.num_vertices();
        for index in [a, b] {
            if index >= len {
                return Err(RoadmapError::NoSuchVertex { index, len });
            }
        }
        let id = self.edges.len();
        self.edges.push(Edge {
            a,
            b,
            length,
            label,
        });
        self.adjacency[a].push(id);
        if a != b {
            self.adjacency[b].push(id);
        }
        Ok(id)
    }

    /// Sets the label of edge `e`.
    pub fn set_label(&mut self, e: usize, label: EdgeLabel) -> Result<(), RoadmapError> {
        let len = self.edges.len();
        let edge = self
            .edges
            .get_mut(e)
            .ok_or(RoadmapError::NoSuchEdge { index: e, len })?;
        edge.label = label;
        Ok(())
    }

    /// The edge between `a` and `b`, if any.
    pub fn find_edge(&self, a: usize, b: usize) -> Option<usize> {
        self.incident(a)
            .iter()
            .copied()
            .find(|&e| self.edges.get(e).is_some_and(|x| x.other(a) == b))
    }

    /// Rebuilds adjacency lists from the edge list (after deserialising); fails on edges that
    /// name missing vertices.
    pub fn rebuild_adjacency(&mut self) -> Result<(), RoadmapError> {
        if self.dof == 0 || !self.vertices.len().is_multiple_of(self.dof) {
            return Err(RoadmapError::WrongDof {
                expected: self.dof,
                got: self.vertices.len(),
            });
        }
        let n = self.vertices.len() / self.dof;
        let mut adjacency = vec![Vec::new(); n];
        for (id, e) in self.edges.iter().enumerate() {
            for index in [e.a, e.b] {
                if index >= n {
                    return Err(RoadmapError::NoSuchVertex { index, len: n });
                }
            }
            adjacency[e.a].push(id);
            if e.a != e.b {
                adjacency[e.b].push(id);
            }
        }
        self.adjacency = adjacency;
        Ok(())
    }

    /// Shortest path from `start` to `goal` over the edges `usable` accepts, by A* with the
    /// given admissible heuristic (use `|_| 0.0` for Dijkstra). Returns the vertex sequence,
    /// the edge sequence and the cost; `None` when the goal is unreachable. Ties are broken
    /// by vertex index, so the result is deterministic.
    pub fn shortest_path(
        &self,
        start: usize,
        goal: usize,
        usable: impl Fn(&Edge) -> bool,
        heuristic: impl Fn(usize) -> f64,
    ) -> Option<GraphPath> {
        let n = self.num_vertices();
        if start >= n || goal >= n {
            return None;
        }
        let mut dist = vec![f64::INFINITY; n];
        let mut via: Vec<Option<usize>> = vec![None; n];
        let mut closed = vec![false; n];
        let mut heap = BinaryHeap::new();
        dist[start] = 0.0;
        heap.push(Open {
            f: heuristic(start),
            v: start,
        });
        while let Some(Open { v, .. }) = heap.pop() {
            if closed[v] {
                continue;
            }
            closed[v] = true;
            if v == goal {
                break;
            }
            for &e in &self.adjacency[v] {
                let edge = &self.edges[e];
                if !usable(edge) {
                    continue;
                }
                let w = edge.other(v);
                let d = dist[v] + edge.length;
                if d < dist[w] {
                    dist[w] = d;
                    via[w] = Some(e);
                    heap.push(Open {
                        f: d + heuristic(w),
                        v: w,
                    });
                }
            }
        }
        if !closed[goal] {
            return None;
        }
        let mut vertices = vec![goal];
        let mut edges = Vec::new();
        let mut v = goal;
        while let Some(e) = via[v] {
            edges.push(e);
            v = self.edges[e].other(v);
            vertices.push(v);
            if edges.len() > n {
                return None;
            }
        }
        vertices.reverse();
        edges.reverse();
        Some(GraphPath {
            vertices,
            edges,
            cost: dist[goal],
        })
    }
}

/// A path through a roadmap.
#[derive(Clone, Debug, PartialEq)]
pub struct GraphPath {
    /// Vertices from start to goal.
    pub vertices: Vec<usize>,
    /// Edges from start to goal (`vertices.len() - 1` of them).
    pub edges: Vec<usize>,
    /// Sum of edge lengths.
    pub cost: f64,
}

/// A priority-queue entry: smallest `f` first, then smallest vertex index.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Open {
    f: f64,
    v: usize,
}

impl Eq for Open {}

impl Ord for Open {
    fn cmp(&self, other: &Self) -> Ordering {
        other.f.total_cmp(&self.f).then(other.v.cmp(&self.v))
    }
}

impl PartialOrd for Open {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// Disjoint sets over `0..n` with union by rank and path compression.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct UnionFind {
    parent: Vec<usize>,
    rank: Vec<u8>,
}

impl UnionFind {
    /// `n` singleton sets.
    pub fn new(n: usize) -> Self {
        Self {
            parent: (0..n).collect(),
            rank: vec![0; n],
        }
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.parent.len()
    }

    /// True when there is no element.
    pub fn is_empty(&self) -> bool {
        self.parent.is_empty()
    }

    /// Adds a new singleton set and returns its element.
    pub fn push(&mut self) -> usize {
        self.parent.push(self.parent.len());
        self.rank.push(0);
        self.parent.len() - 1
    }

    /// Representative of the set holding `x` (`x` itself when out of range).
    pub fn find(&mut self, x: usize) -> usize {
        if x >= self.parent.len() {
            return x;
        }
        let mut root = x;
        while self.parent[root] != root {
            root = self.parent[root];
        }
        let mut y = x;
        while self.parent[y] != root {
            let next = self.parent[y];
            self.parent[y] = root;
            y = next;
        }
        root
    }

    /// Merges the sets holding `a` and `b`; returns true when they were different.
    pub fn union(&mut self, a: usize, b: usize) -> bool {
        let (ra, rb) = (self.find(a), self.find(b));
        if ra == rb || ra >= self.parent.len() || rb >= self.parent.len() {
            return false;
        }
        match self.rank[ra].cmp(&self.rank[rb]) {
            Ordering::Less => self.parent[ra] = rb,
            Ordering::Greater => self.parent[rb] = ra,
            Ordering::Equal => {
                self.parent[rb] = ra;
                self.rank[ra] = self.rank[ra].saturating_add(1);
            }
        }
        true
    }

    /// True when `a` and `b` are in the same set.
    pub fn connected(&mut self, a: usize, b: usize) -> bool {
        self.find(a) == self.find(b)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line_graph() -> Roadmap {
        let mut r = Roadmap::new(1);
        for x in [0.0, 1.0, 2.0, 3.0] {
            r.add_vertex(&[x]).unwrap();
        }
        r.add_edge(0, 1, 1.0, EdgeLabel::Valid).unwrap();
        r.add_edge(1, 2, 1.0, EdgeLabel::Valid).unwrap();
        r.add_edge(2, 3, 1.0, EdgeLabel::Unknown).unwrap();
        r.add_edge(0, 3, 5.0, EdgeLabel::Valid).unwrap();
        r
    }

    #[test]
    fn dijkstra_and_astar_agree_and_respect_labels() {
        let r = line_graph();
        let all = r.shortest_path(0, 3, |_| true, |_| 0.0).unwrap();
        assert_eq!(all.vertices, vec![0, 1, 2, 3]);
        assert!((all.cost - 3.0).abs() < 1e-12);
        let astar = r
            .shortest_path(0, 3, |_| true, |v| (3.0 - r.vertex(v).unwrap()[0]).abs())
            .unwrap();
        assert_eq!(astar.vertices, all.vertices);
        let valid = r
            .shortest_path(0, 3, |e| e.label == EdgeLabel::Valid, |_| 0.0)
            .unwrap();
        assert_eq!(valid.vertices, vec![0, 3]);
        assert_eq!(valid.edges, vec![3]);
        assert!(r.shortest_path(0, 3, |_| false, |_| 0.0).is_none());
        assert!(r.shortest_path(0, 9, |_| true, |_| 0.0).is_none());
    }

    #[test]
    fn edges_name_missing_vertices() {
        let mut r = line_graph();
        assert_eq!(
            r.add_edge(0, 7, 1.0, EdgeLabel::Valid),
            Err(RoadmapError::NoSuchVertex { index: 7, len: 4 })
        );
        assert!(r.add_vertex(&[1.0, 2.0]).is_err());
        assert_eq!(r.find_edge(2, 1), Some(1));
        assert_eq!(r.find_edge(1, 3), None);
    }

    #[test]
    fn union_find_tracks_components() {
        let mut uf = UnionFind::new(4);
        assert!(!uf.connected(0, 3));
        assert!(uf.union(0, 1));
        assert!(uf.union(2, 3));
        assert!(!uf.union(1, 0));
        assert!(!uf.connected(1, 2));
        assert!(uf.union(1, 3));
        assert!(uf.connected(0, 2));
        let e = uf.push();
        assert!(!uf.connected(e, 0));
    }
}
