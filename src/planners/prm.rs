//! PRM and lazy PRM over a persistent [`Roadmap`].
//!
//! A [`Prm`] keeps its roadmap across queries for the same robot and scene (multi-query), and
//! can be saved to and loaded from disk. Each iteration samples `batch_size` configurations
//! and checks them in one call; every new vertex is joined to its `k` nearest neighbours
//! (`k = ceil(e (1 + 1/d) ln n)`, the PRM* rule, capped at [`MAX_NEIGHBORS`], unless the
//! request fixes it).
//!
//! * PRM checks all the new edges of an iteration in one motion batch, tracks connected
//!   components of valid edges with union-find, and stops as soon as start and goal are in
//!   one component; A* (heuristic: joint-space distance to the goal) then gives the path.
//! * Lazy PRM adds edges unchecked (`EdgeLabel::Unknown`), searches for the shortest path
//!   over edges not known to be invalid, checks only that path's unknown edges (one batch),
//!   labels them, and repeats; it samples more when no candidate path is left.
//!
//! The roadmap is only valid for the scene it was built in: after the scene changes, build a
//! new `Prm` (the dynamic roadmap will relabel edges instead).

use std::collections::BTreeSet;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::collision::{Checker, MotionBatch};
use crate::planners::{run, Context, PlanError, PlanRequest, PlanResult, PlannerId, RawSolution};
use crate::roadmap::{Edge, EdgeLabel, GraphPath, NearestNeighbors, Roadmap, UnionFind};
use crate::robot::JointSpace;

/// Most neighbours a vertex is joined to when the request does not fix `k`.
pub const MAX_NEIGHBORS: usize = 32;

const FILE_FORMAT: &str = "gpu_motion_planner/prm_roadmap";
const FILE_VERSION: u32 = 1;

/// Errors of saving and loading roadmaps.
#[derive(Debug, thiserror::Error)]
pub enum RoadmapFileError {
    /// Reading or writing failed.
    #[error("roadmap file {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The file is not a roadmap file of a supported version, or its contents are inconsistent.
    #[error("roadmap file {path}: {message}")]
    Format {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// The file was built for other joints.
    #[error("roadmap file {path} was built for joints [{found}], not [{expected}]")]
    WrongRobot {
        /// The file.
        path: PathBuf,
        /// Joint names of the planning group asked for.
        expected: String,
        /// Joint names in the file.
        found: String,
    },
}

/// On-disk form. Vertex values are stored as IEEE-754 bit patterns so that a loaded roadmap
/// is bit-identical to the saved one (decimal JSON floats need not round-trip exactly);
/// edge lengths are recomputed on load.
#[derive(Serialize, Deserialize)]
struct RoadmapFile {
    format: String,
    version: u32,
    joint_names: Vec<String>,
    lower: Vec<f64>,
    upper: Vec<f64>,
    continuous: Vec<bool>,
    vertex_bits: Vec<u64>,
    edges: Vec<(usize, usize, EdgeLabel)>,
}

/// Neighbours a new vertex of a roadmap of `vertices` vertices in `dof` joints is joined to:
/// the request's `prm_neighbors`, else `ceil(e (1 + 1/d) ln n)` (PRM*) capped at
/// [`MAX_NEIGHBORS`].
pub(crate) fn neighbors_wanted(req: &PlanRequest, vertices: usize, dof: usize) -> usize {
    req.prm_neighbors.unwrap_or_else(|| {
        let n = vertices.max(2) as f64;
        let d = dof as f64;
        let k = (std::f64::consts::E * (1.0 + 1.0 / d) * n.ln()).ceil();
        (k as usize).clamp(1, MAX_NEIGHBORS)
    })
}

/// A persistent probabilistic roadmap for one joint space (robot and planning group).
#[derive(Clone, Debug)]
pub struct Prm {
    space: JointSpace,
    roadmap: Roadmap,
    nn: NearestNeighbors,
    /// Components of the valid edges.
    components: UnionFind,
}

impl Prm {
    /// An empty roadmap for `space`.
    pub fn new(space: &JointSpace) -> Result<Self, PlanError> {
        Ok(Self {
            space: space.clone(),
            roadmap: Roadmap::new(space.dof()),
            nn: NearestNeighbors::new(space)?,
            components: UnionFind::new(0),
        })
    }

    /// The joint space the roadmap lives in.
    pub fn space(&self) -> &JointSpace {
        &self.space
    }

    /// The roadmap.
    pub fn roadmap(&self) -> &Roadmap {
        &self.roadmap
    }

    /// Plans with this roadmap (growing it as needed) for `req.planner`, which must be
    /// [`PlannerId::Prm`] or [`PlannerId::LazyPrm`]. Both modes can share one roadmap.
    pub fn solve(
        &mut self,
        checker: &dyn Checker,
        req: &PlanRequest,
    ) -> Result<PlanResult, PlanError> {
        if checker.space() != &self.space {
            return Err(PlanError::RoadmapMismatch {
                roadmap: self.space.names.join(", "),
                checker: checker.space().names.join(", "),
            });
        }
        let lazy = match req.planner {
            PlannerId::Prm => false,
            PlannerId::LazyPrm => true,
            other => {
                return Err(PlanError::InvalidRequest(format!(
                    "a PRM roadmap cannot run planner '{other}'"
                )))
            }
        };
        run(checker, req, |ctx| self.search(ctx, lazy))
    }

    /// The vertex at exactly `q`, adding it when missing. Returns (vertex, was added).
    fn vertex(&mut self, q: &[f64]) -> Result<(usize, bool), PlanError> {
        if let Some(n) = self.nn.nearest(q)? {
            if n.distance == 0.0 {
                return Ok((n.id, false));
            }
        }
        let v = self.roadmap.add_vertex(q)?;
        self.nn.insert(q, v)?;
        self.components.push();
        Ok((v, true))
    }

    fn neighbors_wanted(&self, req: &PlanRequest) -> usize {
        neighbors_wanted(req, self.roadmap.num_vertices(), self.space.dof())
    }

    /// Joins each of `new` to its nearest neighbours. Eager: all new edges in one batched
    /// motion check, labelled Valid or Invalid (and unknown edges met on the way get checked
    /// too). Lazy: edges are added as Unknown.
    fn connect(
        &mut self,
        ctx: &mut Context<'_, '_>,
        new: &[usize],
        lazy: bool,
    ) -> Result<(), PlanError> {
        let k = self.neighbors_wanted(ctx.req);
        let mut pairs = BTreeSet::new();
        for &v in new {
            let Some(q) = self.roadmap.vertex(v).map(<[f64]>::to_vec) else {
                continue;
            };
            for n in self.nn.k_nearest(&q, k + 1)? {
                if n.id != v {
                    pairs.insert((v.min(n.id), v.max(n.id)));
                }
            }
        }
        let mut to_check = Vec::new();
        for (a, b) in pairs {
            match self.roadmap.find_edge(a, b) {
                Some(e) => {
                    let unknown = self
                        .roadmap
                        .edge(e)
                        .is_some_and(|x| x.label == EdgeLabel::Unknown);
                    if unknown && !lazy {
                        to_check.push(e);
                    }
                }
                None => {
                    let (Some(qa), Some(qb)) = (self.roadmap.vertex(a), self.roadmap.vertex(b))
                    else {
                        continue;
                    };
                    let length = self.space.distance(qa, qb);
                    let e = self.roadmap.add_edge(a, b, length, EdgeLabel::Unknown)?;
                    if !lazy {
                        to_check.push(e);
                    }
                }
            }
        }
        self.check_edges(ctx, &to_check)?;
        Ok(())
    }

    /// Checks `edges` in one batched motion check and labels them; returns true when all
    /// are valid.
    fn check_edges(
        &mut self,
        ctx: &mut Context<'_, '_>,
        edges: &[usize],
    ) -> Result<bool, PlanError> {
        if edges.is_empty() {
            return Ok(true);
        }
        let mut motions = MotionBatch::new(self.space.dof());
        for &e in edges {
            let edge =
                self.roadmap
                    .edge(e)
                    .copied()
                    .ok_or(crate::roadmap::RoadmapError::NoSuchEdge {
                        index: e,
                        len: self.roadmap.num_edges(),
                    })?;
            let (Some(qa), Some(qb)) = (self.roadmap.vertex(edge.a), self.roadmap.vertex(edge.b))
            else {
                continue;
            };
            motions.push(qa, qb)?;
        }
        let verdicts = ctx.checker.check_motions(&motions, ctx.req.resolution)?;
        let mut all = true;
        for (k, &e) in edges.iter().enumerate() {
            let ok = verdicts.get(k).copied().unwrap_or(false);
            all &= ok;
            self.roadmap.set_label(
                e,
                if ok {
                    EdgeLabel::Valid
                } else {
                    EdgeLabel::Invalid
                },
            )?;
            if ok {
                if let Some(edge) = self.roadmap.edge(e).copied() {
                    self.components.union(edge.a, edge.b);
                }
            }
        }
        Ok(all)
    }

    /// Samples one batch, keeps the valid configurations as vertices and connects them.
    fn grow(&mut self, ctx: &mut Context<'_, '_>, lazy: bool) -> Result<(), PlanError> {
        let samples = ctx.valid_samples(ctx.req.batch())?;
        let mut new = Vec::with_capacity(samples.len());
        for q in samples {
            let (v, added) = self.vertex(&q)?;
            if added {
                new.push(v);
            }
        }
        self.connect(ctx, &new, lazy)
    }

    fn solution(&self, path: &[usize], iterations: usize) -> RawSolution {
        RawSolution {
            path: path
                .iter()
                .filter_map(|&v| self.roadmap.vertex(v).map(<[f64]>::to_vec))
                .collect(),
            iterations,
            vertices: self.roadmap.num_vertices(),
            edges: self.roadmap.num_edges(),
            cost_over_time: Vec::new(),
        }
    }

    /// The shortest path from `s` to any of `goals` (the first of equal cost), over Valid
    /// edges between connected vertices, or with `lazy` over every edge not known Invalid.
    fn best_path(&mut self, s: usize, goals: &[usize], lazy: bool) -> Option<GraphPath> {
        let mut best: Option<GraphPath> = None;
        for &g in goals {
            if !lazy && !self.components.connected(s, g) {
                continue;
            }
            let (space, roadmap) = (&self.space, &self.roadmap);
            let Some(target) = roadmap.vertex(g) else {
                continue;
            };
            let heuristic = |v: usize| roadmap.vertex(v).map_or(0.0, |q| space.distance(q, target));
            let usable = |e: &Edge| {
                if lazy {
                    e.label != EdgeLabel::Invalid
                } else {
                    e.label == EdgeLabel::Valid
                }
            };
            if let Some(p) = roadmap.shortest_path(s, g, usable, heuristic) {
                if best.as_ref().is_none_or(|b| p.cost < b.cost) {
                    best = Some(p);
                }
            }
        }
        best
    }

    /// Grows the roadmap until a path joins the start to a goal of the request's goal set
    /// (the shortest to any of them); lazily, the unknown edges of a candidate path are
    /// checked (batched) until one has none left.
    fn search(&mut self, ctx: &mut Context<'_, '_>, lazy: bool) -> Result<RawSolution, PlanError> {
        let (s, s_new) = self.vertex(&ctx.req.start)?;
        let mut new: Vec<usize> = Vec::new();
        if s_new {
            new.push(s);
        }
        let mut goals = Vec::new();
        for q in ctx.req.goals() {
            let (g, g_new) = self.vertex(q)?;
            if g_new {
                new.push(g);
            }
            goals.push(g);
        }
        self.connect(ctx, &new, lazy)?;
        let mut iterations = 0;
        loop {
            if let Some(p) = self.best_path(s, &goals, lazy) {
                let roadmap = &self.roadmap;
                let unknown: Vec<usize> = p
                    .edges
                    .iter()
                    .copied()
                    .filter(|&e| {
                        roadmap
                            .edge(e)
                            .is_some_and(|x| x.label == EdgeLabel::Unknown)
                    })
                    .collect();
                if unknown.is_empty() {
                    return Ok(self.solution(&p.vertices, iterations));
                }
                if ctx.timed_out() {
                    break;
                }
                self.check_edges(ctx, &unknown)?;
                continue;
            }
            if ctx.must_stop(iterations) {
                break;
            }
            iterations += 1;
            self.grow(ctx, lazy)?;
        }
        Err(ctx.no_path(iterations, self.roadmap.num_vertices()))
    }

    /// Saves the roadmap and the joint space's names and limits as JSON. The data goes to a
    /// temporary file in the same folder that is then renamed over `path`, so a crash never
    /// leaves a half-written roadmap.
    pub fn save(&self, path: &Path) -> Result<(), RoadmapFileError> {
        let io = |source| RoadmapFileError::Io {
            path: path.to_path_buf(),
            source,
        };
        let file = RoadmapFile {
            format: FILE_FORMAT.to_string(),
            version: FILE_VERSION,
            joint_names: self.space.names.clone(),
            lower: self.space.lower.clone(),
            upper: self.space.upper.clone(),
            continuous: self.space.continuous.clone(),
            vertex_bits: self
                .roadmap
                .vertex_values()
                .iter()
                .map(|v| v.to_bits())
                .collect(),
            edges: self
                .roadmap
                .edges()
                .iter()
                .map(|e| (e.a, e.b, e.label))
                .collect(),
        };
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "roadmap".into());
        let tmp = path.with_file_name(format!(".{name}.tmp{}", std::process::id()));
        let result = (|| {
            let mut f = std::io::BufWriter::new(std::fs::File::create(&tmp)?);
            serde_json::to_writer(&mut f, &file).map_err(std::io::Error::other)?;
            f.flush()?;
            f.get_ref().sync_all()?;
            drop(f);
            std::fs::rename(&tmp, path)
        })();
        if result.is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
        result.map_err(io)
    }

    /// Loads a roadmap saved by [`Prm::save`] for `space`; refuses a file built for other
    /// joints (names, order or limits).
    pub fn load(path: &Path, space: &JointSpace) -> Result<Self, RoadmapFileError> {
        let format = |message: String| RoadmapFileError::Format {
            path: path.to_path_buf(),
            message,
        };
        let text = std::fs::read_to_string(path).map_err(|source| RoadmapFileError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        let file: RoadmapFile =
            serde_json::from_str(&text).map_err(|e| format(format!("not a roadmap file: {e}")))?;
        if file.format != FILE_FORMAT || file.version != FILE_VERSION {
            return Err(format(format!(
                "format '{}' version {} is not '{FILE_FORMAT}' version {FILE_VERSION}",
                file.format, file.version
            )));
        }
        if file.joint_names != space.names
            || file.lower != space.lower
            || file.upper != space.upper
            || file.continuous != space.continuous
        {
            return Err(RoadmapFileError::WrongRobot {
                path: path.to_path_buf(),
                expected: space.names.join(", "),
                found: file.joint_names.join(", "),
            });
        }
        let dof = space.dof();
        if dof == 0 || !file.vertex_bits.len().is_multiple_of(dof) {
            return Err(format(format!(
                "{} vertex values are not a whole number of {dof}-joint configurations",
                file.vertex_bits.len()
            )));
        }
        let mut roadmap = Roadmap::new(dof);
        let mut nn = NearestNeighbors::new(space).map_err(|e| format(e.to_string()))?;
        for (v, bits) in file.vertex_bits.chunks_exact(dof).enumerate() {
            let q: Vec<f64> = bits.iter().map(|b| f64::from_bits(*b)).collect();
            space
                .validate(&q)
                .map_err(|e| format(format!("vertex {v}: {e}")))?;
            roadmap
                .add_vertex(&q)
                .map_err(|e| format(format!("vertex {v}: {e}")))?;
            nn.insert(&q, v)
                .map_err(|e| format(format!("vertex {v}: {e}")))?;
        }
        let mut components = UnionFind::new(roadmap.num_vertices());
        for (i, &(a, b, label)) in file.edges.iter().enumerate() {
            let (Some(qa), Some(qb)) = (roadmap.vertex(a), roadmap.vertex(b)) else {
                return Err(format(format!(
                    "edge {i} joins vertices {a} and {b}, the roadmap has {}",
                    roadmap.num_vertices()
                )));
            };
            let length = space.distance(qa, qb);
            roadmap
                .add_edge(a, b, length, label)
                .map_err(|e| format(format!("edge {i}: {e}")))?;
            if label == EdgeLabel::Valid {
                components.union(a, b);
            }
        }
        Ok(Self {
            space: space.clone(),
            roadmap,
            nn,
            components,
        })
    }
}
