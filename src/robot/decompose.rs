//! Convex parts of a concave mesh: a bin, a shelf, a table with legs as one obstacle.
//!
//! The convex hull of such a mesh fills its hollows, so a robot could never reach into the
//! bin. [`convex_parts`] splits the mesh into a few convex polytopes instead, whose union
//! covers the whole surface of the mesh (and the inside of a closed one):
//!
//! 1. parry3d's VHACD voxelizes the mesh (`resolution` voxels along its longest side,
//!    the inside of closed parts filled) and cuts the voxels into at most `max_parts`
//!    nearly convex clusters; each cluster's hull is the hull of its voxels' corners.
//! 2. Nothing is taken on trust from that approximation: every triangle of the mesh is cut
//!    into pieces no longer than a voxel, and each piece goes to the cluster hull it lies in,
//!    or else to the one it sticks out of least, whose point set then takes the piece's
//!    corners. A hull of points that include a piece's three corners contains the piece, so
//!    the final hulls cover every triangle exactly, whatever VHACD did; they stick out of
//!    the surface by at most about a voxel.
//!
//! The result is deterministic for the same input.

use nalgebra::{Point3, Vector3};
use parry3d::transformation::vhacd::{VHACDParameters, VHACD};

use super::geometry::{aabb_of, check_finite, GeometryError, Polytope};

/// The most convex parts a mesh may be split into.
pub const MAX_PARTS: u32 = 256;
/// The coarsest voxel resolution accepted.
pub const MIN_RESOLUTION: u32 = 8;
/// The finest voxel resolution accepted.
pub const MAX_RESOLUTION: u32 = 256;
/// Pieces per triangle side at most when triangles are cut to voxel size; a larger triangle
/// gets longer pieces (still covered exactly, only less tightly).
const MAX_CUTS: usize = 64;

/// Two parts are merged, whatever their count, where the hull of both together is larger
/// than theirs by at most this share of the volume of the whole mesh's hull.
const MERGE_SLACK: f64 = 1e-2;

/// How a mesh is split into convex parts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Decomposition {
    /// The most parts, 1 to [`MAX_PARTS`] (1: the convex hull of the whole mesh).
    pub max_parts: u32,
    /// Voxels along the longest side of the mesh's bounding box, [`MIN_RESOLUTION`] to
    /// [`MAX_RESOLUTION`]: finer voxels follow hollows and thin walls more closely (the
    /// parts stick out of the surface by about one voxel) and take longer.
    pub resolution: u32,
}

impl Default for Decomposition {
    fn default() -> Self {
        Decomposition {
            max_parts: 16,
            resolution: 64,
        }
    }
}

impl Decomposition {
    /// One part, the mesh's convex hull (the default resolution, unused then).
    pub fn hull() -> Self {
        Decomposition {
            max_parts: 1,
            ..Decomposition::default()
        }
    }

    /// Checks the ranges of both fields; the error names the field and its value.
    pub fn validate(&self) -> Result<(), GeometryError> {
        if !(1..=MAX_PARTS).contains(&self.max_parts) {
            return Err(GeometryError::InvalidParameter {
                name: "convex parts",
                value: format!("{} (expected 1 to {MAX_PARTS})", self.max_parts),
            });
        }
        if !(MIN_RESOLUTION..=MAX_RESOLUTION).contains(&self.resolution) {
            return Err(GeometryError::InvalidParameter {
                name: "decomposition resolution",
                value: format!(
                    "{} (expected {MIN_RESOLUTION} to {MAX_RESOLUTION})",
                    self.resolution
                ),
            });
        }
        Ok(())
    }
}

/// A cluster while pieces are given to it: its points (the cluster hull's vertices, then the
/// corners of pieces sticking out of it) and the face planes of the cluster hull.
struct Part {
    points: Vec<Point3<f64>>,
    planes: Vec<(Vector3<f64>, f64)>,
}

impl Part {
    /// How far the farthest of `corners` lies outside the hull's face planes (0 inside).
    fn outside(&self, corners: &[Point3<f64>; 3]) -> f64 {
        let mut worst = 0.0f64;
        for p in corners {
            for (n, d) in &self.planes {
                worst = worst.max(n.dot(&p.coords) - d);
            }
        }
        worst
    }
}

/// Convex parts whose union covers every triangle of the mesh (`points` indexed by
/// `triangles`), at most `how.max_parts` of them; see the module documentation.
///
/// Errors: parameters out of range, a non-finite point, a triangle naming a missing point,
/// no triangle, or a part whose hull cannot be built (a flat mesh with `max_parts` 1).
pub fn convex_parts(
    points: &[Point3<f64>],
    triangles: &[[u32; 3]],
    how: &Decomposition,
) -> Result<Vec<Polytope>, GeometryError> {
    how.validate()?;
    check_finite(points)?;
    if triangles.is_empty() {
        return Err(GeometryError::InvalidParameter {
            name: "mesh triangles",
            value: "none".to_string(),
        });
    }
    if let Some((k, t)) = triangles
        .iter()
        .enumerate()
        .find(|(_, t)| t.iter().any(|&i| i as usize >= points.len()))
    {
        return Err(GeometryError::InvalidParameter {
            name: "mesh triangle",
            value: format!("{k} refers to points {t:?} of {}", points.len()),
        });
    }
    if how.max_parts == 1 {
        return Ok(vec![Polytope::from_points(points)?]);
    }

    // VHACD runs in f32 about the centre of the bounding box.
    let (lo, hi) = aabb_of(points);
    let centre = nalgebra::center(&lo, &hi);
    let extent = (hi - lo).max();
    let local: Vec<parry3d::math::Vector> = points
        .iter()
        .map(|p| {
            let v = p - centre;
            parry3d::math::Vector::new(v.x as f32, v.y as f32, v.z as f32)
        })
        .collect();
    let params = VHACDParameters {
        resolution: how.resolution,
        max_convex_hulls: how.max_parts,
        ..VHACDParameters::default()
    };
    // VHACD is third-party code on outside data: a panic inside it becomes an error.
    let hulls = std::panic::catch_unwind(|| {
        VHACD::decompose(&params, &local, triangles, false).compute_convex_hulls(1)
    })
    .map_err(|_| GeometryError::HullFailed("the convex decomposition failed".to_string()))?;

    let mut clusters: Vec<Polytope> = Vec::new();
    for (vertices, _) in hulls {
        let cluster: Vec<Point3<f64>> = vertices
            .iter()
            .map(|v| centre + Vector3::new(v.x as f64, v.y as f64, v.z as f64))
            .collect();
        // A cluster that spans no volume is left out: its triangles go to the others.
        if let Ok(hull) = Polytope::from_points(&cluster) {
            clusters.push(hull);
        }
    }
    // Clusters whose joint hull is hardly larger are merged too (VHACD cuts flat walls
    // into several): fewer obstacles to check for the same shape.
    let slack = MERGE_SLACK * Polytope::from_points(points).map_or(0.0, |h| h.volume());
    let parts: Vec<Part> = merged(clusters, how.max_parts as usize, slack)?
        .into_iter()
        .map(|hull| Part {
            planes: hull.face_planes(),
            points: hull.vertices,
        })
        .collect();
    let mut parts = parts;
    // One part (or none): the mesh's convex hull, which covers it as tightly as one convex
    // part can (a cluster's hull sticks out of the surface by about a voxel).
    if parts.len() <= 1 {
        return Ok(vec![Polytope::from_points(points)?]);
    }

    // Every triangle, cut into pieces of about a voxel, goes piece by piece to a part.
    let voxel = if extent > 0.0 {
        extent / how.resolution as f64
    } else {
        1.0
    };
    let mut last = 0usize;
    for t in triangles {
        let [a, b, c] = t.map(|i| points[i as usize]);
        let longest = (b - a).norm().max((c - b).norm()).max((a - c).norm());
        let cuts = ((longest / voxel).ceil() as usize).clamp(1, MAX_CUTS);
        let at = |i: usize, j: usize| {
            if i == 0 && j == 0 {
                a
            } else if i == cuts {
                b
            } else if j == cuts {
                c
            } else {
                let (u, v) = (i as f64 / cuts as f64, j as f64 / cuts as f64);
                a + (b - a) * u + (c - a) * v
            }
        };
        for i in 0..cuts {
            for j in 0..cuts - i {
                let mut pieces = vec![[at(i, j), at(i + 1, j), at(i, j + 1)]];
                if i + j + 2 <= cuts {
                    pieces.push([at(i + 1, j), at(i + 1, j + 1), at(i, j + 1)]);
                }
                for piece in pieces {
                    last = give(&mut parts, piece, last);
                }
            }
        }
    }

    // Each part is cut back to the mesh's hull: the mesh (surface and inside) lies in the
    // hull, so the cut parts still cover it, and they do not stick out of the hull. A part
    // whose cut cannot be built (parry's hulls of the cut's corners miss one of them) stays
    // as it is, larger.
    let hull = Polytope::from_points(points)?;
    let scale = (hi - lo).norm();
    parts
        .iter()
        .map(|part| {
            let whole = Polytope::from_points(&part.points)?;
            Ok(within(&whole, &hull, scale).unwrap_or(whole))
        })
        .collect()
}

/// The intersection of convex polytopes `a` and `b` (`scale` about their size; `b` the one
/// whose vertices are exact, a mesh's hull), or `None`
/// where it spans no volume or its hull cannot be built. A point within `1e-6 * scale` of
/// the other polytope counts as inside it, so the result errs on the large side (the hulls
/// of rounded points leave such slivers; a mesh corner on a part's face stays in it).
fn within(a: &Polytope, b: &Polytope, scale: f64) -> Option<Polytope> {
    let eps = 1e-6 * scale;
    let (pa, pb) = (a.face_planes(), b.face_planes());
    let inside = |planes: &[(Vector3<f64>, f64)], x: &Point3<f64>| {
        planes.iter().all(|(n, d)| n.dot(&x.coords) - d <= eps)
    };
    // The vertices of the intersection: each polytope's vertices inside the other, and
    // where each one's edges cross the other's faces. `b`'s first: where points nearly
    // coincide, the hull keeps the first (a mesh's own corner rather than a crossing a
    // rounding away from it).
    let mut corners: Vec<Point3<f64>> = Vec::new();
    corners.extend(b.vertices.iter().filter(|v| inside(&pa, v)));
    corners.extend(a.vertices.iter().filter(|v| inside(&pb, v)));
    for (p, planes) in [(a, &pb), (b, &pa)] {
        for (i, from) in p.vertices.iter().enumerate() {
            let targets =
                &p.edge_targets[p.edge_offsets[i] as usize..p.edge_offsets[i + 1] as usize];
            for to in targets.iter().filter(|&&j| j as usize > i) {
                let to = p.vertices[*to as usize];
                for (n, d) in planes.iter() {
                    let (df, dt) = (n.dot(&from.coords) - d, n.dot(&to.coords) - d);
                    if (df < 0.0) != (dt < 0.0) && df != dt {
                        let x = from + (to - from) * (df / (df - dt));
                        if inside(&pa, &x) && inside(&pb, &x) {
                            corners.push(x);
                        }
                    }
                }
            }
        }
    }
    Polytope::from_points(&corners).ok()
}

/// The hull of `a` and `b` together.
fn joint_hull(a: &Polytope, b: &Polytope) -> Result<Polytope, GeometryError> {
    let both: Vec<Point3<f64>> = a.vertices.iter().chain(&b.vertices).copied().collect();
    Polytope::from_points(&both)
}

/// `clusters` merged two at a time, the pair whose joint hull adds the least volume first
/// (the lowest indices on a tie), until at most `max` remain and no pair's joint hull adds
/// more than `slack` (a volume) to theirs.
fn merged(
    mut clusters: Vec<Polytope>,
    max: usize,
    slack: f64,
) -> Result<Vec<Polytope>, GeometryError> {
    let n = clusters.len();
    if n <= 1 {
        return Ok(clusters);
    }
    let mut volumes: Vec<f64> = clusters.iter().map(Polytope::volume).collect();
    // The volume the joint hull of clusters i and j adds to theirs (infinite where that
    // hull cannot be built).
    let added = |clusters: &[Polytope], volumes: &[f64], i: usize, j: usize| {
        joint_hull(&clusters[i], &clusters[j])
            .map_or(f64::INFINITY, |h| h.volume() - volumes[i] - volumes[j])
    };
    let mut cost: Vec<Vec<f64>> = (0..n)
        .map(|i| {
            (0..n)
                .map(|j| {
                    if j > i {
                        added(&clusters, &volumes, i, j)
                    } else {
                        f64::INFINITY
                    }
                })
                .collect()
        })
        .collect();
    let mut alive: Vec<bool> = vec![true; n];
    let mut count = n;
    while count > 1 {
        let mut best = (f64::INFINITY, usize::MAX, usize::MAX);
        for i in (0..n).filter(|&i| alive[i]) {
            for j in (i + 1..n).filter(|&j| alive[j]) {
                if cost[i][j] < best.0 || best.1 == usize::MAX {
                    best = (cost[i][j], i, j);
                }
            }
        }
        let (least, i, j) = best;
        if count <= max && (least > slack || least.is_nan()) {
            break;
        }
        clusters[i] = joint_hull(&clusters[i], &clusters[j])?;
        volumes[i] = clusters[i].volume();
        alive[j] = false;
        count -= 1;
        for k in (0..n).filter(|&k| alive[k] && k != i) {
            let c = added(&clusters, &volumes, i, k);
            if k < i {
                cost[k][i] = c;
            } else {
                cost[i][k] = c;
            }
        }
    }
    Ok(clusters
        .into_iter()
        .zip(alive)
        .filter_map(|(c, keep)| keep.then_some(c))
        .collect())
}

/// Gives `piece` to the part it lies in (the part `hint` first), else to the part it sticks
/// out of least, whose points take its corners; returns the part chosen.
fn give(parts: &mut [Part], piece: [Point3<f64>; 3], hint: usize) -> usize {
    let at_hint = parts[hint].outside(&piece);
    if at_hint <= 0.0 {
        return hint;
    }
    // The least outside, the lowest index on a tie.
    let mut best = (at_hint, hint);
    for (k, part) in parts.iter().enumerate().filter(|&(k, _)| k != hint) {
        let out = part.outside(&piece);
        if out <= 0.0 {
            return k;
        }
        if out < best.0 || (out == best.0 && k < best.1) {
            best = (out, k);
        }
    }
    let part = &mut parts[best.1];
    part.points.extend_from_slice(&piece);
    best.1
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An open-topped bin: a floor `w` x `w` at z = 0 and four walls `h` high, as a surface.
    pub(crate) fn bin(w: f64, h: f64) -> (Vec<Point3<f64>>, Vec<[u32; 3]>) {
        let s = w / 2.0;
        let points = vec![
            Point3::new(-s, -s, 0.0),
            Point3::new(s, -s, 0.0),
            Point3::new(s, s, 0.0),
            Point3::new(-s, s, 0.0),
            Point3::new(-s, -s, h),
            Point3::new(s, -s, h),
            Point3::new(s, s, h),
            Point3::new(-s, s, h),
        ];
        let quads = [
            [0, 1, 2, 3],
            [0, 1, 5, 4],
            [1, 2, 6, 5],
            [2, 3, 7, 6],
            [3, 0, 4, 7],
        ];
        let triangles = quads
            .iter()
            .flat_map(|[a, b, c, d]| [[*a, *b, *c], [*a, *c, *d]])
            .collect();
        (points, triangles)
    }

    /// Points spread over every triangle, corners and edges included.
    fn surface_samples(points: &[Point3<f64>], triangles: &[[u32; 3]]) -> Vec<Point3<f64>> {
        let n = 12;
        let mut out = Vec::new();
        for t in triangles {
            let [a, b, c] = t.map(|i| points[i as usize]);
            for i in 0..=n {
                for j in 0..=n - i {
                    let (u, v) = (i as f64 / n as f64, j as f64 / n as f64);
                    out.push(a + (b - a) * u + (c - a) * v);
                }
            }
        }
        out
    }

    /// Whether `p` is in a part, to 1 um: the parts are cut back to the mesh's hull, whose
    /// faces pass through the mesh's corners only to parry's f32 rounding (1e-7 m measured
    /// on the 14 m mesh below), far inside the checker's 0.1 mm margin.
    fn covered(parts: &[Polytope], p: &Point3<f64>) -> bool {
        parts.iter().any(|q| q.contains_point(p, 1e-6))
    }

    #[test]
    fn a_bin_splits_into_parts_that_cover_its_surface_and_leave_its_hollow() {
        let (points, triangles) = bin(0.4, 0.3);
        let parts = convex_parts(&points, &triangles, &Decomposition::default()).unwrap();
        assert!(
            (2..=16).contains(&parts.len()),
            "{} parts for a bin",
            parts.len()
        );
        for p in surface_samples(&points, &triangles) {
            assert!(covered(&parts, &p), "surface point {p:?} is in no part");
        }
        // The hull fills the bin; the parts leave its inside free, 3 cm from every wall.
        let hull = Polytope::from_points(&points).unwrap();
        for inside in [
            Point3::new(0.0, 0.0, 0.15),
            Point3::new(0.17, 0.17, 0.03),
            Point3::new(-0.17, 0.0, 0.29),
        ] {
            assert!(hull.contains_point(&inside, 0.0));
            assert!(!covered(&parts, &inside), "{inside:?} is inside a part");
        }
        // Each part is near the surface: no part reaches 5 cm into the hollow. No part
        // sticks out of the mesh's hull (the parts are cut back to it).
        for part in &parts {
            for v in &part.vertices {
                let from_wall = (0.2 - v.x.abs()).min(0.2 - v.y.abs()).min(v.z);
                assert!(from_wall < 0.05, "vertex {v:?} far into the bin");
                assert!(
                    hull.contains_point(v, 1e-9),
                    "vertex {v:?} outside the hull"
                );
            }
        }
    }

    /// A closed, nearly convex mesh (an L-shaped block's outline thickened) split into
    /// parts: the parts stay inside its hull and cover its surface and its inside.
    #[test]
    fn parts_are_cut_back_to_the_hull_and_cover_a_closed_mesh() {
        // An L-shaped prism: the L in the xy plane, 0.1 thick.
        let l = [
            (0.0, 0.0),
            (0.4, 0.0),
            (0.4, 0.1),
            (0.1, 0.1),
            (0.1, 0.4),
            (0.0, 0.4),
        ];
        let mut points: Vec<Point3<f64>> = l.iter().map(|&(x, y)| Point3::new(x, y, 0.0)).collect();
        points.extend(l.iter().map(|&(x, y)| Point3::new(x, y, 0.1)));
        let mut triangles: Vec<[u32; 3]> = Vec::new();
        // Sides.
        for i in 0..6u32 {
            let j = (i + 1) % 6;
            triangles.push([i, j, j + 6]);
            triangles.push([i, j + 6, i + 6]);
        }
        // Bottom and top as two rectangles each: (0,1,2,3,4,5) = [0,1,2,3] + [0,3,4,5].
        for base in [0u32, 6] {
            for [a, b, c, d] in [[0, 1, 2, 3], [0, 3, 4, 5]] {
                triangles.push([base + a, base + b, base + c]);
                triangles.push([base + a, base + c, base + d]);
            }
        }
        let parts = convex_parts(&points, &triangles, &Decomposition::default()).unwrap();
        assert!(parts.len() >= 2, "{} parts for an L", parts.len());
        let hull = Polytope::from_points(&points).unwrap();
        for part in &parts {
            for v in &part.vertices {
                assert!(
                    hull.contains_point(v, 1e-9),
                    "vertex {v:?} outside the hull"
                );
            }
        }
        for p in surface_samples(&points, &triangles) {
            assert!(covered(&parts, &p), "surface point {p:?} is in no part");
        }
        // Inside the L's arms (closed mesh: the inside is covered too), and the corner the
        // L leaves free is free.
        for inside in [Point3::new(0.3, 0.05, 0.05), Point3::new(0.05, 0.3, 0.05)] {
            assert!(
                covered(&parts, &inside),
                "{inside:?} inside the L is in no part"
            );
        }
        assert!(!covered(&parts, &Point3::new(0.3, 0.3, 0.05)));
    }

    #[test]
    fn the_same_mesh_gives_the_same_parts() {
        let (points, triangles) = bin(0.5, 0.2);
        let how = Decomposition {
            max_parts: 8,
            resolution: 32,
        };
        let a = convex_parts(&points, &triangles, &how).unwrap();
        let b = convex_parts(&points, &triangles, &how).unwrap();
        assert_eq!(a, b);
        assert!(a.len() <= 8);
    }

    #[test]
    fn a_long_triangle_is_covered_even_where_cut_into_few_pieces() {
        // An L of two thin slabs whose long faces are single triangles far longer than
        // MAX_CUTS voxels.
        let mut points = Vec::new();
        let mut triangles = Vec::new();
        let mut slab = |lo: [f64; 3], hi: [f64; 3]| {
            let base = points.len() as u32;
            for k in 0..8 {
                points.push(Point3::new(
                    if k & 1 == 0 { lo[0] } else { hi[0] },
                    if k & 2 == 0 { lo[1] } else { hi[1] },
                    if k & 4 == 0 { lo[2] } else { hi[2] },
                ));
            }
            for [a, b, c, d] in [
                [0, 1, 3, 2],
                [4, 5, 7, 6],
                [0, 1, 5, 4],
                [2, 3, 7, 6],
                [0, 2, 6, 4],
                [1, 3, 7, 5],
            ] {
                triangles.push([base + a, base + b, base + c]);
                triangles.push([base + a, base + c, base + d]);
            }
        };
        slab([0.0, 0.0, 0.0], [10.0, 0.1, 0.1]);
        slab([0.0, 0.0, 0.0], [0.1, 10.0, 0.1]);
        let how = Decomposition {
            max_parts: 8,
            resolution: 256,
        };
        let parts = convex_parts(&points, &triangles, &how).unwrap();
        for p in surface_samples(&points, &triangles) {
            assert!(covered(&parts, &p), "surface point {p:?} is in no part");
        }
        assert!(!covered(&parts, &Point3::new(5.0, 5.0, 0.05)));
    }

    #[test]
    fn one_part_is_the_convex_hull() {
        let (points, triangles) = bin(0.4, 0.3);
        let how = Decomposition {
            max_parts: 1,
            resolution: 64,
        };
        let parts = convex_parts(&points, &triangles, &how).unwrap();
        assert_eq!(parts, vec![Polytope::from_points(&points).unwrap()]);
    }

    #[test]
    fn bad_input_is_refused_naming_it() {
        let (points, triangles) = bin(0.4, 0.3);
        let err = |p: &[Point3<f64>], t: &[[u32; 3]], parts: u32, res: u32| {
            let how = Decomposition {
                max_parts: parts,
                resolution: res,
            };
            convex_parts(p, t, &how).unwrap_err().to_string()
        };
        assert!(err(&points, &triangles, 0, 64).contains("convex parts: 0"));
        assert!(err(&points, &triangles, 300, 64).contains("convex parts: 300"));
        assert!(err(&points, &triangles, 8, 4).contains("resolution: 4"));
        assert!(err(&points, &[], 8, 64).contains("mesh triangles"));
        assert!(err(&points, &[[0, 1, 9]], 8, 64).contains("refers to points [0, 1, 9] of 8"));
        let mut nan = points.clone();
        nan[3].y = f64::NAN;
        assert!(err(&nan, &triangles, 8, 64).contains("point 3"));
    }
}
