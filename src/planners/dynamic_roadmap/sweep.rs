//! Swept volumes of roadmap edges: the batch precomputation behind both label methods.
//!
//! For every edge the robot is placed at exactly the configurations the checker visits
//! (the f32 interpolation of [`crate::collision::prepare_motions`]:
//! `start + diff * (i as f32 / segments as f32)`) and its frames are computed with the
//! checker's own forward kinematics ([`crate::collision::frame_poses`]), so the link
//! polytopes seen here are bit for bit the ones the checker tests. From them come, per edge:
//!
//! * per body an **outer** oriented box holding the body's polytope at every checked
//!   configuration, inflated by the checker margin plus a tolerance (RGG, green test);
//! * per body and inner sphere a chain of **inner** capsules, each lying inside the body at
//!   some checked configuration (RGG, red test);
//! * the voxel cells touched by the inflated bodies at every checked configuration (DRM).
//!
//! The work is one loop over edges with no shared state, split over threads; the outputs are
//! flat arrays concatenated in edge order. The voxel cells also have a CUDA twin
//! (`crate::gpu::voxel`, `kernels/drm.cu`) that computes the same cells with the same f32
//! arithmetic (`Grid::range`, `Grid::border`, `Grid::cell_box` and `obb_disjoint` have
//! line-by-line twins there: change them together).

use std::ops::Range;

use nalgebra::Point3;

use super::geom::{obb_disjoint, Aabb, Ball, Capsule, Obb};
use crate::collision::detmath::{Xf, V3};
use crate::collision::{body_sweep, frame_poses, CollisionModel, PreparedMotions};
use crate::robot::geometry::Polytope;
use crate::robot::spheres::SphereSet;

/// Bodies with more vertices than this are represented in the outer boxes by the eight
/// corners of their local bounding box (conservative, much cheaper for meshes).
const MAX_HULL_POINTS: usize = 24;

/// What the sweep needs to know about one collision body, in its frame.
#[derive(Clone, Debug)]
pub(crate) struct BodyLocal {
    /// Moving frame (`-1`: the root).
    pub frame: i32,
    /// Points whose convex hull contains the body.
    pub hull: Vec<V3>,
    /// Local bounding box centre.
    pub box_c: V3,
    /// Local bounding box half extents.
    pub box_h: V3,
    /// Spheres inside the body (radii already reduced by the tolerance).
    pub inner: Vec<Ball>,
}

impl BodyLocal {
    /// Local data of every body of `model`; `inner_per_body` spheres inside each.
    pub fn of_model(model: &CollisionModel, inner_per_body: usize, tol: f32) -> Vec<BodyLocal> {
        model
            .bodies
            .iter()
            .map(|b| {
                let s = b.vert_start as usize;
                let verts = &model.verts[s..s + b.vert_count as usize];
                let mut lo = [f32::INFINITY; 3];
                let mut hi = [f32::NEG_INFINITY; 3];
                for v in verts {
                    for k in 0..3 {
                        lo[k] = lo[k].min(v[k]);
                        hi[k] = hi[k].max(v[k]);
                    }
                }
                let box_c = [
                    0.5 * (lo[0] + hi[0]),
                    0.5 * (lo[1] + hi[1]),
                    0.5 * (lo[2] + hi[2]),
                ];
                // Half extents rounded up so the f32 box surely holds every vertex.
                let box_h = [0, 1, 2].map(|k| {
                    let h = 0.5 * (hi[k] - lo[k]);
                    h * (1.0 + 1e-6) + 1e-7 + b.inflate
                });
                let hull = if verts.len() <= MAX_HULL_POINTS && b.inflate == 0.0 {
                    verts.to_vec()
                } else {
                    let mut c = Vec::with_capacity(8);
                    for i in 0..8 {
                        c.push([
                            box_c[0] + if i & 1 == 0 { -box_h[0] } else { box_h[0] },
                            box_c[1] + if i & 2 == 0 { -box_h[1] } else { box_h[1] },
                            box_c[2] + if i & 4 == 0 { -box_h[2] } else { box_h[2] },
                        ]);
                    }
                    c
                };
                // Inner spheres of the hull of exactly the f32 vertices the checker uses.
                let pts: Vec<Point3<f64>> = verts
                    .iter()
                    .map(|v| Point3::new(v[0] as f64, v[1] as f64, v[2] as f64))
                    .collect();
                let inner = match Polytope::from_points(&pts) {
                    Ok(p) if b.inflate == 0.0 => SphereSet::inner(&p, inner_per_body)
                        .spheres
                        .iter()
                        .filter_map(|sp| {
                            let r = sp.radius as f32 - tol;
                            (r > 0.0).then_some([
                                sp.center.x as f32,
                                sp.center.y as f32,
                                sp.center.z as f32,
                                r,
                            ])
                        })
                        .collect(),
                    _ => Vec::new(),
                };
                BodyLocal {
                    frame: b.frame,
                    hull,
                    box_c,
                    box_h,
                    inner,
                }
            })
            .collect()
    }
}

/// A voxel grid over the workspace: cell `(i, j, k)` is the closed box
/// `origin + cell * [i, i+1] x [j, j+1] x [k, k+1]`. Points outside the grid belong to the
/// nearest border cell (indices are clamped), which keeps the map conservative for geometry
/// that leaves the grid.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Grid {
    /// Lower corner.
    pub origin: V3,
    /// Edge length of a cell.
    pub cell: f32,
    /// Cells along x, y, z.
    pub dims: [u32; 3],
}

impl Grid {
    /// Number of cells.
    pub fn len(&self) -> usize {
        self.dims.iter().map(|&d| d as usize).product()
    }

    /// True when the grid has no cell.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Clamped index range `[lo, hi]` per axis of the cells a box touches (closed cells,
    /// widened by a rounding tolerance). Twin: `gmp_grid_range` in `kernels/drm.cu`.
    pub fn range(&self, b: &Aabb) -> [[u32; 2]; 3] {
        let mut r = [[0u32; 2]; 3];
        for (k, rk) in r.iter_mut().enumerate() {
            let tol = 1e-5 * (b.lo[k].abs() + b.hi[k].abs() + self.origin[k].abs()) + 1e-6;
            let max = self.dims[k].saturating_sub(1) as f32;
            let lo = ((b.lo[k] - tol - self.origin[k]) / self.cell).floor();
            let hi = ((b.hi[k] + tol - self.origin[k]) / self.cell).floor();
            // NaN clamps to the full range (conservative).
            let lo = if lo.is_nan() { 0.0 } else { lo.clamp(0.0, max) };
            let hi = if hi.is_nan() { max } else { hi.clamp(0.0, max) };
            *rk = [lo as u32, hi as u32];
        }
        r
    }

    /// Linear index of cell `(i, j, k)`.
    pub fn index(&self, i: u32, j: u32, k: u32) -> u32 {
        (k * self.dims[1] + j) * self.dims[0] + i
    }

    /// True when the cell lies on the border (it stands for everything outside, too). Twin:
    /// `gmp_grid_border`.
    fn border(&self, i: u32, j: u32, k: u32) -> bool {
        let c = [i, j, k];
        (0..3).any(|a| c[a] == 0 || c[a] + 1 >= self.dims[a])
    }

    /// The cell as a box. Twin: `gmp_grid_cell_box`.
    fn cell_box(&self, i: u32, j: u32, k: u32) -> Obb {
        let c = [i, j, k];
        let lo = [0, 1, 2].map(|a| self.origin[a] + c[a] as f32 * self.cell);
        let hi = [0, 1, 2].map(|a| self.origin[a] + (c[a] + 1) as f32 * self.cell);
        Obb::from_aabb(&Aabb { lo, hi })
    }

    /// Appends the cells that `obb` may touch: every cell of its bounding range on the
    /// border, and inner cells that the separating-axis test cannot rule out. Twin:
    /// `gmp_grid_mark` (which sets the cells' bits in a bitmap instead).
    pub fn cells_of(&self, obb: &Obb, out: &mut Vec<u32>) {
        let r = self.range(&obb.aabb());
        for k in r[2][0]..=r[2][1] {
            for j in r[1][0]..=r[1][1] {
                for i in r[0][0]..=r[0][1] {
                    if self.border(i, j, k) || !obb_disjoint(obb, &self.cell_box(i, j, k)) {
                        out.push(self.index(i, j, k));
                    }
                }
            }
        }
    }
}

/// Parameters of the sweep.
#[derive(Clone, Copy, Debug)]
pub(crate) struct SweepParams {
    /// Added to every outer box: checker margin plus tolerance.
    pub inflate: f32,
    /// Capsules may be as thin as this fraction of their sphere's radius.
    pub min_radius_ratio: f32,
    /// Most checked configurations one capsule spans.
    pub max_span: usize,
    /// Compute the RGG outer boxes and inner capsules.
    pub rgg: bool,
    /// Outer boxes per body and edge: the checked configurations are split into this many
    /// consecutive groups, one box each (a chain of boxes follows a curved sweep).
    pub boxes_per_body: usize,
}

/// Output of the sweep of a range of edges, in edge order.
#[derive(Clone, Debug, Default)]
pub(crate) struct SweepOut {
    /// Outer boxes, `bodies * boxes_per_body` per edge, body-major (RGG).
    pub obbs: Vec<Obb>,
    /// Bounding box of each edge's outer boxes.
    pub aabbs: Vec<Aabb>,
    /// Capsules per (edge, body) pair, edge-major (counts; RGG).
    pub cap_counts: Vec<u32>,
    /// Inner capsules, in (edge, body) order.
    pub caps: Vec<Capsule>,
    /// Voxel cells per edge (counts; DRM).
    pub cell_counts: Vec<u32>,
    /// Sorted, distinct cells of each edge.
    pub cells: Vec<u32>,
}

/// Shared read-only inputs of the sweep.
pub(crate) struct Sweep<'a> {
    pub model: &'a CollisionModel,
    pub bodies: &'a [BodyLocal],
    pub motions: &'a PreparedMotions,
    pub params: SweepParams,
    /// The DRM grid, when cells are wanted.
    pub grid: Option<Grid>,
}

#[inline(always)]
fn frame_of(frames: &[Xf], f: i32) -> Xf {
    if f < 0 {
        Xf::IDENTITY
    } else {
        frames[f as usize]
    }
}

impl Sweep<'_> {
    /// Frames of every checked configuration of edge `e`, row after row.
    fn edge_frames(&self, e: usize, state: &mut Vec<f32>, scratch: &mut Vec<Xf>) -> Vec<Xf> {
        let dof = self.model.dof();
        let start = &self.motions.start[e * dof..(e + 1) * dof];
        let diff = &self.motions.diff[e * dof..(e + 1) * dof];
        let n = self.motions.segments[e];
        let nf = self.model.frames.len();
        let mut out = Vec::with_capacity((n as usize + 1) * nf);
        for step in 0..=n {
            // Exactly the checker's arithmetic (CpuChecker::motion_valid).
            let t = step as f32 / n as f32;
            state.clear();
            state.extend_from_slice(&self.model.base_state);
            for j in 0..dof {
                state[self.model.group_vars[j] as usize] = start[j] + diff[j] * t;
            }
            frame_poses(self.model, state, scratch);
            out.extend_from_slice(scratch);
        }
        out
    }

    /// Sweeps the edges in `range`.
    pub fn run(&self, range: Range<usize>) -> SweepOut {
        let mut out = SweepOut::default();
        let mut state = Vec::new();
        let mut scratch = Vec::new();
        let nf = self.model.frames.len().max(1);
        let mut cells = Vec::new();
        for e in range {
            let frames = self.edge_frames(e, &mut state, &mut scratch);
            let configs = if self.model.frames.is_empty() {
                1
            } else {
                frames.len() / nf
            };
            let fr = |k: usize, f: i32| -> Xf {
                if self.model.frames.is_empty() {
                    Xf::IDENTITY
                } else {
                    frame_of(&frames[k * nf..(k + 1) * nf], f)
                }
            };
            let mut edge_box = Aabb::EMPTY;
            let pieces = self.params.boxes_per_body.max(1);
            // How far each body may stray between checked configurations: the checker grows
            // the bodies by this when it proves a motion free, so the outer boxes must too.
            let dof = self.model.dof();
            let diff = &self.motions.diff[e * dof..(e + 1) * dof];
            let grow: Vec<f32> = (0..self.bodies.len())
                .map(|b| body_sweep(self.model, b, diff, self.motions.segments[e]))
                .collect();
            for (bi, body) in self.bodies.iter().enumerate() {
                for p in 0..pieces {
                    // Configurations [lo, hi) of piece p; an empty piece repeats a neighbour.
                    let lo = (p * configs / pieces).min(configs - 1);
                    let hi = ((p + 1) * configs / pieces).max(lo + 1);
                    let obb = self.outer_box(body, lo..hi, &fr, grow[bi]);
                    edge_box.grow(&obb.aabb());
                    if self.params.rgg {
                        out.obbs.push(obb);
                    }
                }
                if self.params.rgg {
                    let before = out.caps.len();
                    for s in &body.inner {
                        let pts: Vec<V3> = (0..configs)
                            .map(|k| fr(k, body.frame).apply(&[s[0], s[1], s[2]]))
                            .collect();
                        simplify(&pts, s[3], &self.params, &mut out.caps);
                    }
                    out.cap_counts.push((out.caps.len() - before) as u32);
                }
            }
            out.aabbs.push(edge_box);
            if let Some(grid) = &self.grid {
                cells.clear();
                for k in 0..configs {
                    for (bi, body) in self.bodies.iter().enumerate() {
                        let xf = fr(k, body.frame);
                        let h = self.params.inflate + grow[bi];
                        let obb = Obb {
                            c: xf.apply(&body.box_c),
                            r: xf.r,
                            h: [body.box_h[0] + h, body.box_h[1] + h, body.box_h[2] + h],
                        };
                        grid.cells_of(&obb, &mut cells);
                    }
                }
                cells.sort_unstable();
                cells.dedup();
                out.cell_counts.push(cells.len() as u32);
                out.cells.extend_from_slice(&cells);
            }
        }
        out
    }

    /// The outer box of `body` over the configurations `range`: axes of the body frame at
    /// the middle configuration, extents from the hull points at every configuration,
    /// inflated.
    fn outer_box(
        &self,
        body: &BodyLocal,
        range: Range<usize>,
        fr: &impl Fn(usize, i32) -> Xf,
        grow: f32,
    ) -> Obb {
        let mid = fr((range.start + range.end) / 2, body.frame);
        let axes: [V3; 3] = [0, 1, 2].map(|i| [mid.r[i], mid.r[3 + i], mid.r[6 + i]]);
        let mut lo = [f64::INFINITY; 3];
        let mut hi = [f64::NEG_INFINITY; 3];
        for k in range {
            let xf = fr(k, body.frame);
            for p in &body.hull {
                let w = xf.apply(p);
                for i in 0..3 {
                    let d = axes[i][0] as f64 * w[0] as f64
                        + axes[i][1] as f64 * w[1] as f64
                        + axes[i][2] as f64 * w[2] as f64;
                    lo[i] = lo[i].min(d);
                    hi[i] = hi[i].max(d);
                }
            }
        }
        let mut c = [0.0f64; 3];
        let mut h = [0.0f32; 3];
        for i in 0..3 {
            let m = 0.5 * (lo[i] + hi[i]);
            for (k, ck) in c.iter_mut().enumerate() {
                *ck += axes[i][k] as f64 * m;
            }
            let half = 0.5 * (hi[i] - lo[i]);
            // The f32 axes are unit only up to rounding; the relative term covers that.
            h[i] =
                (half * (1.0 + 1e-5) + 1e-6 * (m.abs() + 1.0)) as f32 + self.params.inflate + grow;
        }
        Obb {
            c: c.map(|v| v as f32),
            r: mid.r,
            h,
        }
    }
}

/// Upper bound of the distance from any point of the segment `pts[i]`-`pts[j]` to the
/// nearest of `pts[i..=j]`: with `t` the positions along the segment of the points that
/// project into it (the two ends are among them), every segment point is within half the
/// largest gap between consecutive positions along the segment and within the largest
/// perpendicular offset across it of one of them.
fn deviation(pts: &[V3], i: usize, j: usize, ts: &mut Vec<f64>) -> f64 {
    let a = pts[i].map(|v| v as f64);
    let b = pts[j].map(|v| v as f64);
    let ab = [b[0] - a[0], b[1] - a[1], b[2] - a[2]];
    let l2 = ab[0] * ab[0] + ab[1] * ab[1] + ab[2] * ab[2];
    if l2 <= 0.0 {
        // Degenerate segment: its single point is a checked one.
        return 0.0;
    }
    let l = l2.sqrt();
    ts.clear();
    let mut hmax = 0.0f64;
    for p in &pts[i..=j] {
        let ap = [p[0] as f64 - a[0], p[1] as f64 - a[1], p[2] as f64 - a[2]];
        let t = (ap[0] * ab[0] + ap[1] * ab[1] + ap[2] * ab[2]) / l;
        if !(0.0..=l).contains(&t) {
            continue;
        }
        let h2 = (ap[0] * ap[0] + ap[1] * ap[1] + ap[2] * ap[2] - t * t).max(0.0);
        hmax = hmax.max(h2.sqrt());
        ts.push(t);
    }
    ts.push(0.0);
    ts.push(l);
    ts.sort_by(f64::total_cmp);
    let gap = ts.windows(2).map(|w| w[1] - w[0]).fold(0.0, f64::max);
    // Rounding of the f64 arithmetic on f32 inputs, rounded up generously.
    ((0.5 * gap).powi(2) + hmax * hmax).sqrt() * (1.0 + 1e-9) + 1e-9 * (l + 1.0)
}

/// Simplifies the polyline of an inner sphere's centres (radius `r`) into capsules, greedily
/// taking the longest shortcut whose deviation bound keeps the radius above
/// `min_radius_ratio * r`. Each capsule gets radius `r - deviation`, so every point of it is
/// within `r` of the centre at a checked configuration: inside the body there.
fn simplify(pts: &[V3], r: f32, p: &SweepParams, out: &mut Vec<Capsule>) {
    if pts.is_empty() || r <= 0.0 {
        return;
    }
    let n = pts.len() - 1;
    let r64 = r as f64;
    let floor = p.min_radius_ratio as f64 * r64;
    let mut ts = Vec::new();
    let mut i = 0;
    let mut last_covered = false;
    while i < n {
        let mut best: Option<(usize, f64)> = None;
        for j in i + 1..=n.min(i + p.max_span.max(1)) {
            let dev = deviation(pts, i, j, &mut ts);
            if r64 - dev >= floor {
                best = Some((j, dev));
            } else {
                break;
            }
        }
        match best {
            Some((j, dev)) => {
                out.push(Capsule {
                    a: pts[i],
                    b: pts[j],
                    // Rounded down to f32.
                    r: ((r64 - dev) * (1.0 - 1e-6)) as f32,
                });
                i = j;
                last_covered = true;
            }
            None => {
                out.push(Capsule {
                    a: pts[i],
                    b: pts[i],
                    r,
                });
                i += 1;
                last_covered = false;
            }
        }
    }
    if !last_covered {
        out.push(Capsule {
            a: pts[n],
            b: pts[n],
            r,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capsules_stay_within_the_checked_spheres() {
        // A curved polyline; densely sample each capsule and check every sample point
        // (moved outwards by the capsule radius in several directions) lies within r of some
        // polyline point.
        let pts: Vec<V3> = (0..40)
            .map(|k| {
                let a = k as f32 * 0.05;
                [a.cos(), a.sin(), 0.1 * a]
            })
            .collect();
        let r = 0.2;
        let params = SweepParams {
            inflate: 0.0,
            min_radius_ratio: 0.5,
            max_span: 32,
            rgg: true,
            boxes_per_body: 1,
        };
        let mut caps = Vec::new();
        simplify(&pts, r, &params, &mut caps);
        assert!(caps.len() < pts.len() / 2, "{} capsules", caps.len());
        for c in &caps {
            for s in 0..=50 {
                let t = s as f32 / 50.0;
                let q = [0, 1, 2].map(|k| c.a[k] + (c.b[k] - c.a[k]) * t);
                for d in [
                    [1.0, 0.0, 0.0],
                    [0.0, 1.0, 0.0],
                    [0.0, 0.0, 1.0],
                    [-0.6, 0.8, 0.0],
                ] {
                    let x = [0, 1, 2].map(|k| q[k] + d[k] * c.r);
                    let best = pts
                        .iter()
                        .map(|p| ((0..3).map(|k| (p[k] - x[k]).powi(2)).sum::<f32>()).sqrt())
                        .fold(f32::INFINITY, f32::min);
                    assert!(
                        best <= r * 1.0001,
                        "point {x:?} is {best} from the polyline"
                    );
                }
            }
        }
    }
}
