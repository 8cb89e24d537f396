//! A proximity grid of a scene: per cell of a regular grid, the obstacles that may come within
//! a fixed distance (`reach`) of some point of the cell, as one bit per obstacle record.
//!
//! It lets a check skip, at the cost of one lookup, every test of a robot sphere against an
//! obstacle that is certainly out of reach. It never decides a verdict: a cleared bit only
//! says that a test the checks would make cannot fire, so the tests that fire, and the
//! verdicts, are those of the checks without the grid.
//!
//! What a cleared bit promises. For every point `x` (f32) that [`ProxGrid::lookup`] sends to a
//! cell, and every obstacle `o` whose bit is clear in that cell's word: the distance from `x`
//! to `o`, as the near tests define it (`sphere_near_obstacle`: the box and cylinder tests in
//! the obstacle's frame through `apply_inv`, the ball test of spheres and meshes), is larger
//! than `reach`. A point outside the grid is farther than `reach` from every obstacle it holds.
//! How it is made sure of:
//! - Each cell's word is decided at its centre, in f64 from the f32 values the tests read: the
//!   bit is set unless the centre is farther than `reach + d + PROX_SLACK`, `d` the cell's
//!   half diagonal. The distance functions move by at most the distance moved (the box and
//!   cylinder tests through a rotation whose f32 rounding scales lengths by far less than
//!   `PROX_SLACK` over the grid), so every point of the cell is farther than `reach` plus
//!   what is left of the slack.
//! - The slack (1 mm) also covers the f32 rounding of the lookup's cell index (which can put a
//!   point a few ulps over a cell boundary) and of the near tests themselves (about 1e-6 m
//!   at the scale of a robot's workspace).
//! - The grid covers every obstacle's axis-aligned box grown by `reach + d + PROX_SLACK` and
//!   one more cell each side, so a point that the f32 lookup finds outside it lies outside
//!   every grown box.
//! - Obstacles the grid does not describe (records from 32 on, non-finite or very large ones)
//!   have their bit in [`ProxGrid::always`], set in every answer; a non-finite point gets
//!   every bit.

use super::model::{obstacle_kind, ObstacleModel};
use rayon::prelude::*;

/// Distance added to every bound for the roundings (metres): see the module doc.
pub const PROX_SLACK: f64 = 1e-3;

/// Most cells of a grid (4 bytes each): the cell size grows to stay within it.
pub const PROX_MAX_CELLS: usize = 1 << 21;

/// Obstacles whose axis-aligned box is wider than this (metres) are not described by the
/// grid (they would make it coarse for everything else): their bit is always set.
pub const PROX_MAX_EXTENT: f64 = 8.0;

/// Obstacle records a grid word describes.
pub const PROX_BITS: usize = 32;

/// The grid: cells of size `1 / inv_h` from `lo`, x fastest.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ProxGrid {
    /// The corner of cell (0, 0, 0).
    pub lo: [f32; 3],
    /// Cells per metre.
    pub inv_h: f32,
    /// Cells along x, y, z.
    pub dim: [u32; 3],
    /// Per cell, bit `i`: obstacle record `i` may be within `reach` of the cell.
    pub cells: Vec<u32>,
    /// Bits set in every answer: records the grid does not describe.
    pub always: u32,
    /// The distance the grid was built for.
    pub reach: f64,
}

/// The axis-aligned box of an obstacle as the near tests see it, or `None` for a record no
/// test fires for (an empty slot).
fn obstacle_box(o: &ObstacleModel) -> Option<([f64; 3], [f64; 3])> {
    let r = o.pose.r.map(f64::from);
    let t = o.pose.t.map(f64::from);
    let p = o.params.map(f64::from);
    let half = match o.kind {
        obstacle_kind::BOX => [p[0], p[1], p[2]],
        obstacle_kind::CYLINDER => [p[0], p[0], p[1]],
        obstacle_kind::SPHERE | obstacle_kind::MESH => {
            let c = o.center.map(f64::from);
            let rad = f64::from(o.radius);
            return Some((c.map(|v| v - rad), c.map(|v| v + rad)));
        }
        _ => return None,
    };
    // The points with |R^T (x - t)| <= half: x = t + R q (R orthonormal up to its rounding,
    // which the caller's slack covers).
    let mut lo = [0.0; 3];
    let mut hi = [0.0; 3];
    for i in 0..3 {
        let e: f64 = (0..3).map(|j| r[i * 3 + j].abs() * half[j]).sum();
        lo[i] = t[i] - e;
        hi[i] = t[i] + e;
    }
    Some((lo, hi))
}

/// The distance from `x` to `o` as the near tests measure it (`sphere_near_obstacle`), in
/// f64 from the record's f32 values; infinite for a record no test fires for.
pub fn obstacle_distance(o: &ObstacleModel, x: [f64; 3]) -> f64 {
    let r = o.pose.r.map(f64::from);
    let t = o.pose.t.map(f64::from);
    let p = o.params.map(f64::from);
    let local = || {
        let d = [x[0] - t[0], x[1] - t[1], x[2] - t[2]];
        [
            d[0] * r[0] + d[1] * r[3] + d[2] * r[6],
            d[0] * r[1] + d[1] * r[4] + d[2] * r[7],
            d[0] * r[2] + d[1] * r[5] + d[2] * r[8],
        ]
    };
    match o.kind {
        obstacle_kind::BOX => {
            let q = local();
            let e = [0, 1, 2].map(|i| (q[i].abs() - p[i]).max(0.0));
            (e[0] * e[0] + e[1] * e[1] + e[2] * e[2]).sqrt()
        }
        obstacle_kind::CYLINDER => {
            let q = local();
            let er = ((q[0] * q[0] + q[1] * q[1]).sqrt() - p[0]).max(0.0);
            let ez = (q[2].abs() - p[1]).max(0.0);
            (er * er + ez * ez).sqrt()
        }
        obstacle_kind::SPHERE | obstacle_kind::MESH => {
            let c = o.center.map(f64::from);
            let d = [x[0] - c[0], x[1] - c[1], x[2] - c[2]];
            (d[0] * d[0] + d[1] * d[1] + d[2] * d[2]).sqrt() - f64::from(o.radius)
        }
        _ => f64::INFINITY,
    }
}

impl ProxGrid {
    /// The grid of `obstacles` (in the order the checks visit them: bit `i` is
    /// `obstacles[i]`) for distance `reach` (metres), with cells of `cell` metres or larger
    /// (see [`PROX_MAX_CELLS`]).
    pub fn build(obstacles: &[&ObstacleModel], reach: f64, cell: f64) -> ProxGrid {
        let reach = if reach.is_finite() {
            reach.max(0.0)
        } else {
            0.0
        };
        let mut always = 0u32;
        // The described obstacles: (bit, axis box).
        let mut boxes: Vec<(usize, [f64; 3], [f64; 3])> = Vec::new();
        for (i, o) in obstacles.iter().enumerate().take(PROX_BITS) {
            let Some((lo, hi)) = obstacle_box(o) else {
                continue;
            };
            let finite = lo.iter().chain(&hi).all(|v| v.is_finite())
                && o.pose.r.iter().all(|v| v.is_finite());
            let wide = (0..3).any(|k| hi[k] - lo[k] > PROX_MAX_EXTENT);
            if !finite || wide {
                always |= 1 << i;
            } else {
                boxes.push((i, lo, hi));
            }
        }
        let empty = ProxGrid {
            always,
            reach,
            ..ProxGrid::default()
        };
        if boxes.is_empty() {
            return empty;
        }
        // The cell size: first the asked one, then larger until the grid fits.
        let cell = if cell.is_finite() && cell > 0.0 {
            cell
        } else {
            0.02
        };
        let mut h = cell;
        let grow = |h: f64| reach + 0.5 * 3f64.sqrt() * h + 2.0 * PROX_SLACK;
        let (lo, n) = loop {
            let g = grow(h);
            let mut lo = [f64::INFINITY; 3];
            let mut hi = [f64::NEG_INFINITY; 3];
            for (_, bl, bh) in &boxes {
                for k in 0..3 {
                    lo[k] = lo[k].min(bl[k] - g);
                    hi[k] = hi[k].max(bh[k] + g);
                }
            }
            // One more cell each side.
            let lo = lo.map(|v| v - h);
            // (One more again: the f32 values below may shift the extent by rounding.)
            let n = [0, 1, 2].map(|k| ((hi[k] + h - lo[k]) / h).ceil().max(1.0) as usize + 1);
            if n[0] * n[1] * n[2] <= PROX_MAX_CELLS {
                break (lo, n);
            }
            h *= 1.25;
        };
        // The f32 values the lookup computes with, and the geometry they give.
        let lo32 = lo.map(|v| v as f32);
        let inv_h = (1.0 / h) as f32;
        let hg = 1.0 / f64::from(inv_h);
        let lo = lo32.map(f64::from);
        let dim = n.map(|v| v as u32);
        let (nx, ny, nz) = (dim[0] as usize, dim[1] as usize, dim[2] as usize);
        let mut cells = vec![0u32; nx * ny * nz];
        let bound = reach + 0.5 * 3f64.sqrt() * hg + PROX_SLACK;
        // Per described obstacle: its bit and the cells of its box grown by the bound (and the
        // slack again), beyond which every cell centre is farther than the bound.
        let g = bound + PROX_SLACK;
        let spans: Vec<(usize, [std::ops::Range<usize>; 3])> = boxes
            .iter()
            .map(|&(i, bl, bh)| {
                let span = |k: usize, len: usize| {
                    let a = (((bl[k] - g - lo[k]) / hg).floor().max(0.0) as usize).min(len);
                    let b = (((bh[k] + g - lo[k]) / hg).ceil().max(0.0) as usize + 1).min(len);
                    a..b
                };
                (i, [span(0, nx), span(1, ny), span(2, nz)])
            })
            .collect();
        // One z layer per task.
        cells
            .par_chunks_mut(nx * ny)
            .enumerate()
            .for_each(|(z, layer)| {
                let cz = lo[2] + (z as f64 + 0.5) * hg;
                for (i, [rx, ry, rz]) in &spans {
                    if !rz.contains(&z) {
                        continue;
                    }
                    let o = obstacles[*i];
                    for y in ry.clone() {
                        let cy = lo[1] + (y as f64 + 0.5) * hg;
                        for x in rx.clone() {
                            let cx = lo[0] + (x as f64 + 0.5) * hg;
                            // Not provably beyond reach (NaN included): the bit is set.
                            let d = obstacle_distance(o, [cx, cy, cz]);
                            if d.is_nan() || d <= bound {
                                layer[y * nx + x] |= 1 << i;
                            }
                        }
                    }
                }
            });
        ProxGrid {
            lo: lo32,
            inv_h,
            dim,
            cells,
            always,
            reach,
        }
    }

    /// The cell size (metres) of the lookup's arithmetic.
    pub fn cell_size(&self) -> f64 {
        1.0 / f64::from(self.inv_h)
    }

    /// The obstacles that may be within `reach` of the point `c`, computed as the kernels
    /// compute it (`gmp_prox` in `kernels/common.cuh`): bit `i` for record `i`, the records
    /// the grid does not describe always included, every bit for a non-finite point.
    pub fn lookup(&self, c: [f32; 3]) -> u32 {
        let f = [0, 1, 2].map(|k| (c[k] - self.lo[k]) * self.inv_h);
        let inside = (0..3).all(|k| f[k] >= 0.0 && f[k] < self.dim[k] as f32);
        if inside {
            let [x, y, z] = [0, 1, 2].map(|k| f[k] as usize);
            let (nx, ny) = (self.dim[0] as usize, self.dim[1] as usize);
            return self
                .cells
                .get((z * ny + y) * nx + x)
                .map_or(u32::MAX, |w| w | self.always);
        }
        if f.iter().all(|v| v.is_finite()) {
            self.always
        } else {
            u32::MAX
        }
    }

    /// Bytes of the cell words.
    pub fn bytes(&self) -> usize {
        self.cells.len() * 4
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collision::detmath::Xf;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    fn rotation(yaw: f64, pitch: f64) -> [f32; 9] {
        let (sy, cy) = yaw.sin_cos();
        let (sp, cp) = pitch.sin_cos();
        // Rz(yaw) * Ry(pitch), row-major.
        [cy * cp, -sy, cy * sp, sy * cp, cy, sy * sp, -sp, 0.0, cp].map(|v| v as f32)
    }

    fn obstacle(kind: u32, r: [f32; 9], t: [f32; 3], params: [f32; 3]) -> ObstacleModel {
        let radius = match kind {
            obstacle_kind::BOX => {
                (params[0].powi(2) + params[1].powi(2) + params[2].powi(2)).sqrt()
            }
            obstacle_kind::CYLINDER => (params[0].powi(2) + params[1].powi(2)).sqrt(),
            _ => params[0],
        };
        ObstacleModel {
            kind,
            pose: Xf { r, t },
            params,
            center: t,
            radius,
            mesh_start: 0,
            mesh_count: 0,
        }
    }

    fn scene() -> Vec<ObstacleModel> {
        vec![
            obstacle(
                obstacle_kind::BOX,
                rotation(0.3, 0.0),
                [0.5, 0.1, 0.4],
                [0.2, 0.05, 0.3],
            ),
            obstacle(
                obstacle_kind::CYLINDER,
                rotation(1.1, 0.7),
                [-0.3, 0.6, 0.2],
                [0.04, 0.1, 0.0],
            ),
            obstacle(
                obstacle_kind::SPHERE,
                rotation(0.0, 0.0),
                [0.1, -0.5, 0.9],
                [0.08, 0.0, 0.0],
            ),
            ObstacleModel::EMPTY,
            obstacle(
                obstacle_kind::BOX,
                rotation(0.0, 0.0),
                [0.0, 0.0, -0.5],
                [20.0, 20.0, 0.01],
            ),
        ]
    }

    /// The promise of the module doc, on random points near and inside the obstacles: a cleared
    /// bit means the exact distance is beyond reach.
    #[test]
    fn cleared_bits_are_beyond_reach() {
        let obs = scene();
        let refs: Vec<&ObstacleModel> = obs.iter().collect();
        let reach = 0.19;
        let g = ProxGrid::build(&refs, reach, 0.02);
        assert!(!g.cells.is_empty());
        // The floor is too wide to describe: always visited; the empty slot never.
        assert_eq!(g.always, 1 << 4);
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        let (mut cleared, mut near) = (0usize, 0usize);
        for _ in 0..200_000 {
            let c = [0, 1, 2].map(|_| rng.random_range(-1.2f32..1.5));
            let m = g.lookup(c);
            let x = c.map(f64::from);
            for (i, o) in obs.iter().enumerate() {
                let d = obstacle_distance(o, x);
                if m & (1 << i) == 0 {
                    cleared += 1;
                    assert!(d > reach, "obstacle {i} at {d} from {c:?}, bit clear");
                } else if d <= reach {
                    near += 1;
                }
            }
            assert_eq!(m & (1 << 3), 0, "the empty slot never needs a test");
        }
        // The grid leaves out most far pairs and keeps the near ones.
        assert!(cleared > 200_000, "only {cleared} tests left out");
        assert!(near > 1000, "{near}");
    }

    /// Points exactly on cell boundaries, just inside the reach of a face, and non-finite
    /// points.
    #[test]
    fn boundaries_and_non_finite_points() {
        let obs = scene();
        let refs: Vec<&ObstacleModel> = obs.iter().collect();
        let reach = 0.1;
        let g = ProxGrid::build(&refs, reach, 0.03);
        // On the box's +x face direction (rotated by its yaw), at reach minus a hair.
        let o = &obs[0];
        let r = o.pose.r;
        let along = 0.2 + reach as f32 - 1e-6;
        let c = [
            o.pose.t[0] + r[0] * along,
            o.pose.t[1] + r[3] * along,
            o.pose.t[2] + r[6] * along,
        ];
        assert!(obstacle_distance(o, c.map(f64::from)) <= reach);
        assert_ne!(g.lookup(c) & 1, 0);
        // Cell corners of the lookup's own arithmetic.
        let h = g.cell_size() as f32;
        for k in 0..g.dim[0] {
            let c = [g.lo[0] + k as f32 * h, 0.1, 0.4];
            for (i, o) in obs.iter().enumerate() {
                if obstacle_distance(o, c.map(f64::from)) <= reach {
                    assert_ne!(g.lookup(c) & (1 << i), 0, "corner {k}, obstacle {i}");
                }
            }
        }
        assert_eq!(g.lookup([f32::NAN, 0.0, 0.0]), u32::MAX);
        assert_eq!(g.lookup([f32::INFINITY, 0.0, 0.0]), u32::MAX);
        // Far away: only the floor.
        assert_eq!(g.lookup([50.0, 50.0, 50.0]), 1 << 4);
    }

    #[test]
    fn records_past_the_word_are_always_visited_and_large_grids_coarsen() {
        let one = obstacle(
            obstacle_kind::SPHERE,
            rotation(0.0, 0.0),
            [0.0, 0.0, 0.0],
            [0.05, 0.0, 0.0],
        );
        let many: Vec<ObstacleModel> = (0..40)
            .map(|i| {
                let mut o = one;
                o.center = [i as f32 * 0.1, 0.0, 0.0];
                o.pose.t = o.center;
                o
            })
            .collect();
        let refs: Vec<&ObstacleModel> = many.iter().collect();
        let g = ProxGrid::build(&refs, 0.2, 0.001);
        assert!(g.cells.len() <= PROX_MAX_CELLS);
        assert!(g.cell_size() > 0.001);
        // Bits 0..32 describe the first 32 spheres; nothing else is in the word.
        assert_eq!(g.always, 0);
        let m = g.lookup([0.0, 0.0, 0.0]);
        assert_ne!(m & 1, 0);
        assert_eq!(m & (1 << 31), 0, "sphere 31 is 3.1 m away");
    }
}
