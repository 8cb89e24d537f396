//! Convex polytopes for link and obstacle geometry.
//!
//! A [`Polytope`] is a convex hull stored as its vertices, an adjacency list in compressed
//! row storage (for hill-climbing support queries, as GJK-style checkers on the GPU do) and
//! a triangle list with outward (counter-clockwise) winding.
//!
//! Hulls of point clouds are computed by parry3d in `f32`. The vertices we keep are the exact
//! `f64` input points that parry selected, and after the hull is built every input point is
//! checked against every face plane: a point may lie outside a face by at most
//! [`HULL_TOLERANCE`] times the diameter of the input (the bounding box diagonal). That bound
//! covers the `f32` rounding of parry's predicates. parry's `f32` hull can drop points of
//! crowded, nearly coplanar sets (the pieces of a mesh split into convex parts, some robot
//! link meshes): where it misses an input by more than that, parry's `f64` hull is built and
//! checked the same way, and only where that misses too is the set reported as
//! [`GeometryError::HullInaccurate`] instead of silently returning a hull that misses input.

use std::collections::HashMap;

use nalgebra::{Isometry3, Matrix3, Point3, Vector3};
use thiserror::Error;

/// Relative tolerance of [`Polytope::from_points`]: every input point lies inside the hull or
/// outside a face plane by at most `HULL_TOLERANCE * diameter`, where `diameter` is the length
/// of the input's bounding-box diagonal.
pub const HULL_TOLERANCE: f64 = 1e-5;

/// Relative thickness below which a point set counts as flat (coplanar) or collinear, measured
/// against the input's bounding-box diagonal.
pub const FLATNESS_TOLERANCE: f64 = 1e-9;

/// What went wrong while building a polytope or loading a mesh.
#[derive(Debug, Error)]
pub enum GeometryError {
    /// A convex hull needs at least four points that are not coplanar.
    #[error("convex hull needs at least 4 points, got {count}")]
    TooFewPoints {
        /// Number of points given.
        count: usize,
    },
    /// A coordinate was NaN or infinite.
    #[error("point {index} has a non-finite coordinate ({x}, {y}, {z})")]
    NonFinitePoint {
        /// Index of the offending point in the input.
        index: usize,
        /// Its x coordinate.
        x: f64,
        /// Its y coordinate.
        y: f64,
        /// Its z coordinate.
        z: f64,
    },
    /// All points coincide, lie on one line, or lie in one plane: no solid hull exists.
    #[error("points are degenerate ({kind}): they span no volume")]
    Degenerate {
        /// "coincident", "collinear" or "coplanar".
        kind: &'static str,
    },
    /// parry3d could not compute the hull.
    #[error("convex hull computation failed: {0}")]
    HullFailed(String),
    /// The `f32` hull misses an input point by more than the documented tolerance.
    #[error("convex hull misses input point {index} by {distance:e} (tolerance {tolerance:e})")]
    HullInaccurate {
        /// Index of the input point outside the hull.
        index: usize,
        /// Its distance outside the worst face plane.
        distance: f64,
        /// The allowed distance.
        tolerance: f64,
    },
    /// A size or count parameter was out of range (not finite, not positive, too small).
    #[error("invalid {name}: {value}")]
    InvalidParameter {
        /// Name of the parameter.
        name: &'static str,
        /// Its value, printed.
        value: String,
    },
    /// The mesh file does not exist.
    #[error("mesh file {path} not found")]
    MeshNotFound {
        /// The path that was looked up.
        path: std::path::PathBuf,
    },
    /// The mesh file could not be read.
    #[error("cannot read mesh file {path}: {source}")]
    MeshIo {
        /// The file.
        path: std::path::PathBuf,
        /// The underlying I/O error.
        source: std::io::Error,
    },
    /// The mesh file has an extension we do not load.
    #[error("mesh file {path}: unknown extension '{extension}' (expected stl, obj or dae)")]
    UnknownMeshFormat {
        /// The file.
        path: std::path::PathBuf,
        /// Its extension (empty when there is none).
        extension: String,
    },
    /// The mesh file is malformed.
    #[error("cannot parse mesh file {path}: {message}")]
    MeshParse {
        /// The file.
        path: std::path::PathBuf,
        /// What the parser said.
        message: String,
    },
    /// The mesh file parsed but holds no vertices.
    #[error("mesh file {path} has no vertices")]
    EmptyMesh {
        /// The file.
        path: std::path::PathBuf,
    },
}

/// A convex polytope: hull vertices, vertex adjacency (CRS) and outward triangles.
#[derive(Debug, Clone, PartialEq)]
pub struct Polytope {
    /// Hull vertices only (no interior points).
    pub vertices: Vec<Point3<f64>>,
    /// CRS row pointer into `edge_targets`; `vertices.len() + 1` entries.
    pub edge_offsets: Vec<u32>,
    /// Neighbours of vertex `i` are `edge_targets[edge_offsets[i]..edge_offsets[i + 1]]`,
    /// sorted ascending. Diagonals between coplanar triangles may appear.
    pub edge_targets: Vec<u32>,
    /// Hull triangles, counter-clockwise seen from outside.
    pub faces: Vec<[u32; 3]>,
}

fn check_positive(name: &'static str, value: f64) -> Result<(), GeometryError> {
    if value.is_finite() && value > 0.0 {
        Ok(())
    } else {
        Err(GeometryError::InvalidParameter {
            name,
            value: value.to_string(),
        })
    }
}

/// Centre and diagonal length of the bounding box of `points` (which must be non-empty).
pub(crate) fn aabb_of(points: &[Point3<f64>]) -> (Point3<f64>, Point3<f64>) {
    let mut lo = Point3::new(f64::INFINITY, f64::INFINITY, f64::INFINITY);
    let mut hi = Point3::new(f64::NEG_INFINITY, f64::NEG_INFINITY, f64::NEG_INFINITY);
    for p in points {
        lo = lo.inf(p);
        hi = hi.sup(p);
    }
    (lo, hi)
}

/// Rejects a point with a NaN or infinite coordinate, naming its index.
pub(crate) fn check_finite(points: &[Point3<f64>]) -> Result<(), GeometryError> {
    for (index, p) in points.iter().enumerate() {
        if !(p.x.is_finite() && p.y.is_finite() && p.z.is_finite()) {
            return Err(GeometryError::NonFinitePoint {
                index,
                x: p.x,
                y: p.y,
                z: p.z,
            });
        }
    }
    Ok(())
}

/// Rejects point sets that span no volume. Uses the classic farthest-point construction of
/// an initial simplex; `scale` is the bounding-box diagonal.
fn check_solid(points: &[Point3<f64>], scale: f64) -> Result<(), GeometryError> {
    let eps = FLATNESS_TOLERANCE * scale;
    if scale <= 0.0 {
        return Err(GeometryError::Degenerate { kind: "coincident" });
    }
    let p0 = points[0];
    let farthest = |f: &dyn Fn(&Point3<f64>) -> f64| -> (usize, f64) {
        let mut best = (0, f64::NEG_INFINITY);
        for (i, p) in points.iter().enumerate() {
            let v = f(p);
            if v > best.1 {
                best = (i, v);
            }
        }
        best
    };
    let (i1, d1) = farthest(&|p| (p - p0).norm());
    if d1 <= eps {
        return Err(GeometryError::Degenerate { kind: "coincident" });
    }
    let axis = (points[i1] - p0) / d1;
    let (i2, d2) = farthest(&|p| {
        let v = p - p0;
        (v - axis * v.dot(&axis)).norm()
    });
    if d2 <= eps {
        return Err(GeometryError::Degenerate { kind: "collinear" });
    }
    let normal = axis.cross(&(points[i2] - p0)).normalize();
    let (_, d3) = farthest(&|p| (p - p0).dot(&normal).abs());
    if d3 <= eps {
        return Err(GeometryError::Degenerate { kind: "coplanar" });
    }
    Ok(())
}

/// A hull as parry gives it: its vertices, each the exact input point it came from where one
/// matches, and its faces.
type RawHull = (Vec<Point3<f64>>, Vec<[u32; 3]>);

/// parry's f32 hull of `points` (centred on `centre` before rounding).
fn hull_f32(points: &[Point3<f64>], centre: &Point3<f64>) -> Result<RawHull, GeometryError> {
    let local: Vec<parry3d::math::Vector3> = points
        .iter()
        .map(|p| {
            let v = p - centre;
            parry3d::math::Vector3::new(v.x as f32, v.y as f32, v.z as f32)
        })
        .collect();
    let mut by_bits: HashMap<[u32; 3], usize> = HashMap::with_capacity(local.len());
    for (i, v) in local.iter().enumerate() {
        by_bits
            .entry([v.x.to_bits(), v.y.to_bits(), v.z.to_bits()])
            .or_insert(i);
    }
    let (hull_vertices, hull_faces) = parry3d::transformation::try_convex_hull(&local)
        .map_err(|e| GeometryError::HullFailed(format!("{e:?}")))?;
    let exact: Vec<Point3<f64>> = hull_vertices
        .iter()
        .map(
            |v| match by_bits.get(&[v.x.to_bits(), v.y.to_bits(), v.z.to_bits()]) {
                Some(&i) => points[i],
                None => centre + Vector3::new(v.x as f64, v.y as f64, v.z as f64),
            },
        )
        .collect();
    Ok((exact, hull_faces))
}

/// parry's f64 hull of `points` (centred on `centre`), as [`hull_f32`] gives it.
fn hull_f64(points: &[Point3<f64>], centre: &Point3<f64>) -> Result<RawHull, GeometryError> {
    let local: Vec<parry3d_f64::math::Vector3> = points
        .iter()
        .map(|p| {
            let v = p - centre;
            parry3d_f64::math::Vector3::new(v.x, v.y, v.z)
        })
        .collect();
    let mut by_bits: HashMap<[u64; 3], usize> = HashMap::with_capacity(local.len());
    for (i, v) in local.iter().enumerate() {
        by_bits
            .entry([v.x.to_bits(), v.y.to_bits(), v.z.to_bits()])
            .or_insert(i);
    }
    let (hull_vertices, hull_faces) = parry3d_f64::transformation::try_convex_hull(&local)
        .map_err(|e| GeometryError::HullFailed(format!("{e:?}")))?;
    let exact: Vec<Point3<f64>> = hull_vertices
        .iter()
        .map(
            |v| match by_bits.get(&[v.x.to_bits(), v.y.to_bits(), v.z.to_bits()]) {
                Some(&i) => points[i],
                None => centre + Vector3::new(v.x, v.y, v.z),
            },
        )
        .collect();
    Ok((exact, hull_faces))
}

/// The polytope of a raw hull of `points` (`scale` their diameter): only the vertices faces
/// use, faces turned outward, and every input point checked to lie inside within
/// [`HULL_TOLERANCE`] times `scale`.
fn validated(
    points: &[Point3<f64>],
    hull_vertices: Vec<Point3<f64>>,
    hull_faces: Vec<[u32; 3]>,
    scale: f64,
) -> Result<Polytope, GeometryError> {
    // Keep only referenced vertices.
    let mut remap: Vec<Option<u32>> = vec![None; hull_vertices.len()];
    let mut vertices: Vec<Point3<f64>> = Vec::new();
    let mut faces: Vec<[u32; 3]> = Vec::with_capacity(hull_faces.len());
    for face in &hull_faces {
        let mut out = [0u32; 3];
        for (k, &hv) in face.iter().enumerate() {
            let hv = hv as usize;
            let Some(v) = hull_vertices.get(hv) else {
                return Err(GeometryError::HullFailed(format!(
                    "face refers to vertex {hv} of {}",
                    hull_vertices.len()
                )));
            };
            out[k] = match remap[hv] {
                Some(id) => id,
                None => {
                    let id = vertices.len() as u32;
                    vertices.push(*v);
                    remap[hv] = Some(id);
                    id
                }
            };
        }
        if out[0] != out[1] && out[1] != out[2] && out[0] != out[2] {
            faces.push(out);
        }
    }
    if vertices.len() < 4 || faces.len() < 4 {
        return Err(GeometryError::HullFailed(format!(
            "hull has {} vertices and {} faces",
            vertices.len(),
            faces.len()
        )));
    }

    // Orient every face outward relative to the vertex mean (an interior point).
    let inner = vertex_mean(&vertices);
    for f in &mut faces {
        let [a, b, c] = f.map(|i| vertices[i as usize]);
        let n = (b - a).cross(&(c - a));
        if n.dot(&(a - inner)) < 0.0 {
            f.swap(1, 2);
        }
    }

    let poly = Polytope::from_parts(vertices, faces);
    let tolerance = HULL_TOLERANCE * scale;
    let planes = poly.face_planes();
    for (index, p) in points.iter().enumerate() {
        let distance = planes
            .iter()
            .map(|(n, d)| n.dot(&p.coords) - d)
            .fold(f64::NEG_INFINITY, f64::max);
        if distance > tolerance {
            return Err(GeometryError::HullInaccurate {
                index,
                distance,
                tolerance,
            });
        }
    }
    Ok(poly)
}

impl Polytope {
    /// Convex hull of `points`.
    ///
    /// Errors: fewer than 4 points, a non-finite coordinate, a set that is coincident,
    /// collinear or coplanar (no thickening is applied: a flat obstacle must be given some
    /// thickness by its author), or a hull that misses an input point by more than
    /// [`HULL_TOLERANCE`] times the input diameter.
    pub fn from_points(points: &[Point3<f64>]) -> Result<Polytope, GeometryError> {
        if points.len() < 4 {
            return Err(GeometryError::TooFewPoints {
                count: points.len(),
            });
        }
        check_finite(points)?;
        let (lo, hi) = aabb_of(points);
        let scale = (hi - lo).norm();
        check_solid(points, scale)?;

        // Centre the cloud before rounding to f32 so that far-away meshes keep precision.
        let centre = nalgebra::center(&lo, &hi);
        let fast = hull_f32(points, &centre).and_then(|(v, f)| validated(points, v, f, scale));
        match fast {
            Ok(poly) => Ok(poly),
            // parry's f32 hull can drop points of crowded, nearly coplanar sets (as the
            // pieces of a mesh split into parts are); its f64 hull is tried before giving up.
            Err(first) => hull_f64(points, &centre)
                .and_then(|(v, f)| validated(points, v, f, scale))
                .map_err(|_| first),
        }
    }

    /// Builds the adjacency from a triangle list. Faces must index into `vertices`.
    fn from_parts(vertices: Vec<Point3<f64>>, faces: Vec<[u32; 3]>) -> Polytope {
        let mut pairs: Vec<(u32, u32)> = Vec::with_capacity(faces.len() * 6);
        for f in &faces {
            for k in 0..3 {
                let (a, b) = (f[k], f[(k + 1) % 3]);
                pairs.push((a, b));
                pairs.push((b, a));
            }
        }
        pairs.sort_unstable();
        pairs.dedup();
        let mut edge_offsets = vec![0u32; vertices.len() + 1];
        for &(a, _) in &pairs {
            edge_offsets[a as usize + 1] += 1;
        }
        for i in 0..vertices.len() {
            edge_offsets[i + 1] += edge_offsets[i];
        }
        let edge_targets = pairs.into_iter().map(|(_, b)| b).collect();
        Polytope {
            vertices,
            edge_offsets,
            edge_targets,
            faces,
        }
    }

    /// The box `[-h, h]` in each axis: exactly its 8 corners.
    pub fn from_box(half_extents: Vector3<f64>) -> Result<Polytope, GeometryError> {
        check_positive("box half extent x", half_extents.x)?;
        check_positive("box half extent y", half_extents.y)?;
        check_positive("box half extent z", half_extents.z)?;
        let h = half_extents;
        let mut corners = Vec::with_capacity(8);
        for i in 0..8 {
            let sx = if i & 1 == 0 { -1.0 } else { 1.0 };
            let sy = if i & 2 == 0 { -1.0 } else { 1.0 };
            let sz = if i & 4 == 0 { -1.0 } else { 1.0 };
            corners.push(Point3::new(sx * h.x, sy * h.y, sz * h.z));
        }
        Polytope::from_points(&corners)
    }

    /// A prism containing the cylinder of `radius` and total `length` about the z axis,
    /// centred on the origin. The cross-section is the regular `segments`-gon circumscribed
    /// about the circle (vertex radius `radius / cos(pi / segments)`), so the prism contains
    /// the cylinder exactly.
    pub fn from_cylinder(
        radius: f64,
        length: f64,
        segments: usize,
    ) -> Result<Polytope, GeometryError> {
        check_positive("cylinder radius", radius)?;
        check_positive("cylinder length", length)?;
        if segments < 3 {
            return Err(GeometryError::InvalidParameter {
                name: "cylinder segments (at least 3)",
                value: segments.to_string(),
            });
        }
        let n = segments as f64;
        // Slight outward nudge so rounding in cos/sin cannot put an edge inside the circle.
        let vertex_radius = radius / (std::f64::consts::PI / n).cos() * (1.0 + 1e-12);
        let half = length / 2.0;
        let mut pts = Vec::with_capacity(2 * segments);
        for z in [-half, half] {
            for k in 0..segments {
                let a = 2.0 * std::f64::consts::PI * k as f64 / n;
                pts.push(Point3::new(
                    vertex_radius * a.cos(),
                    vertex_radius * a.sin(),
                    z,
                ));
            }
        }
        Polytope::from_points(&pts)
    }

    /// A geodesic polytope containing the sphere of `radius` about the origin: an icosahedron
    /// subdivided `subdivisions` times (each step splits every triangle in four), projected to
    /// the unit sphere and then scaled so that every face plane is at least `radius` from the
    /// centre.
    pub fn from_sphere(radius: f64, subdivisions: u32) -> Result<Polytope, GeometryError> {
        check_positive("sphere radius", radius)?;
        if subdivisions > 6 {
            return Err(GeometryError::InvalidParameter {
                name: "sphere subdivisions (at most 6)",
                value: subdivisions.to_string(),
            });
        }
        let unit = icosphere_points(subdivisions);
        let mut poly = Polytope::from_points(&unit)?;
        let min_plane = poly
            .face_planes()
            .iter()
            .map(|(_, d)| *d)
            .fold(f64::INFINITY, f64::min);
        if min_plane.is_nan() || min_plane <= 0.0 {
            return Err(GeometryError::HullFailed(
                "icosphere face passes through its centre".to_string(),
            ));
        }
        let s = radius / min_plane * (1.0 + 1e-12);
        for v in &mut poly.vertices {
            *v = Point3::from(v.coords * s);
        }
        Ok(poly)
    }

    /// The polytope moved by `pose` (rotation then translation). Topology is unchanged.
    pub fn transformed(&self, pose: &Isometry3<f64>) -> Polytope {
        Polytope {
            vertices: self.vertices.iter().map(|v| pose * v).collect(),
            edge_offsets: self.edge_offsets.clone(),
            edge_targets: self.edge_targets.clone(),
            faces: self.faces.clone(),
        }
    }

    /// A sphere containing every vertex: the bounding-box centre and the largest vertex
    /// distance from it. Deterministic, not minimal.
    pub fn bounding_sphere(&self) -> (Point3<f64>, f64) {
        bounding_sphere_of(&self.vertices)
    }

    /// Axis-aligned bounding box `(min, max)` of the vertices.
    pub fn aabb(&self) -> (Point3<f64>, Point3<f64>) {
        aabb_of(&self.vertices)
    }

    /// Index of a vertex maximising `dir · v` by brute force; ties go to the lowest index.
    pub fn support(&self, dir: &Vector3<f64>) -> usize {
        let mut best = 0;
        let mut best_dot = f64::NEG_INFINITY;
        for (i, v) in self.vertices.iter().enumerate() {
            let d = dir.dot(&v.coords);
            if d > best_dot {
                best = i;
                best_dot = d;
            }
        }
        best
    }

    /// Neighbours of vertex `i` in the adjacency list.
    pub fn neighbours(&self, i: usize) -> &[u32] {
        let lo = self.edge_offsets.get(i).copied().unwrap_or(0) as usize;
        let hi = self.edge_offsets.get(i + 1).copied().unwrap_or(0) as usize;
        self.edge_targets.get(lo..hi).unwrap_or(&[])
    }

    /// Support vertex found by walking the adjacency from `start` to a vertex none of whose
    /// neighbours is strictly better. On a convex polytope a local maximum is global, so this
    /// agrees with [`Polytope::support`] up to ties. An out-of-range `start` begins at 0.
    pub fn support_hill_climb(&self, dir: &Vector3<f64>, start: usize) -> usize {
        if self.vertices.is_empty() {
            return 0;
        }
        let mut current = if start < self.vertices.len() {
            start
        } else {
            0
        };
        let mut current_dot = dir.dot(&self.vertices[current].coords);
        loop {
            let mut moved = false;
            for &n in self.neighbours(current) {
                let n = n as usize;
                let d = dir.dot(&self.vertices[n].coords);
                if d > current_dot {
                    current = n;
                    current_dot = d;
                    moved = true;
                }
            }
            if !moved {
                return current;
            }
        }
    }

    /// Outward unit normal `n` and offset `d` of every face: inside points satisfy
    /// `n · x <= d`. Degenerate (zero-area) faces are skipped.
    pub fn face_planes(&self) -> Vec<(Vector3<f64>, f64)> {
        self.faces
            .iter()
            .filter_map(|f| {
                let [a, b, c] = f.map(|i| self.vertices[i as usize]);
                let n = (b - a).cross(&(c - a));
                let len = n.norm();
                if len > 0.0 && len.is_finite() {
                    let n = n / len;
                    Some((n, n.dot(&a.coords)))
                } else {
                    None
                }
            })
            .collect()
    }

    /// Whether `p` is inside or within `tol` of every face plane.
    pub fn contains_point(&self, p: &Point3<f64>, tol: f64) -> bool {
        self.face_planes()
            .iter()
            .all(|(n, d)| n.dot(&p.coords) - d <= tol)
    }

    /// Enclosed volume (sum of tetrahedra from the vertex mean).
    pub fn volume(&self) -> f64 {
        let o = vertex_mean(&self.vertices);
        self.faces
            .iter()
            .map(|f| {
                let [a, b, c] = f.map(|i| self.vertices[i as usize] - o);
                a.dot(&b.cross(&c)) / 6.0
            })
            .sum()
    }

    /// All undirected edges `(i, j)` with `i < j`.
    pub fn edges(&self) -> impl Iterator<Item = (usize, usize)> + '_ {
        (0..self.vertices.len()).flat_map(move |i| {
            self.neighbours(i)
                .iter()
                .map(|&j| j as usize)
                .filter(move |&j| j > i)
                .map(move |j| (i, j))
        })
    }

    /// Mean of the vertices and the major principal axis (unit vector) of their covariance.
    /// Falls back to the longest bounding-box axis when the covariance is degenerate.
    pub fn principal_axis(&self) -> (Point3<f64>, Vector3<f64>) {
        let mean = vertex_mean(&self.vertices);
        let mut cov = Matrix3::zeros();
        for v in &self.vertices {
            let d = v - mean;
            cov += d * d.transpose();
        }
        let eig = cov.symmetric_eigen();
        let mut best = 0;
        for k in 1..3 {
            if eig.eigenvalues[k] > eig.eigenvalues[best] {
                best = k;
            }
        }
        let mut axis: Vector3<f64> = eig.eigenvectors.column(best).into_owned();
        let norm = axis.norm();
        if !(norm.is_finite() && norm > 0.0) {
            let (lo, hi) = self.aabb();
            let e = hi - lo;
            axis = if e.x >= e.y && e.x >= e.z {
                Vector3::x()
            } else if e.y >= e.z {
                Vector3::y()
            } else {
                Vector3::z()
            };
        } else {
            axis /= norm;
        }
        // Fix the sign so the result does not depend on the eigen solver's choice.
        let largest = axis.iamax();
        if axis[largest] < 0.0 {
            axis = -axis;
        }
        (mean, axis)
    }
}

/// Mean of a set of points (origin when empty).
fn vertex_mean(points: &[Point3<f64>]) -> Point3<f64> {
    if points.is_empty() {
        return Point3::origin();
    }
    let sum: Vector3<f64> = points.iter().map(|p| p.coords).sum();
    Point3::from(sum / points.len() as f64)
}

/// Bounding-box centre and largest distance from it; `(origin, 0)` for no points.
pub(crate) fn bounding_sphere_of(points: &[Point3<f64>]) -> (Point3<f64>, f64) {
    if points.is_empty() {
        return (Point3::origin(), 0.0);
    }
    let (lo, hi) = aabb_of(points);
    let c = nalgebra::center(&lo, &hi);
    let r = points.iter().map(|p| (p - c).norm()).fold(0.0, f64::max);
    (c, r)
}

/// Vertices of an icosahedron subdivided `subdivisions` times, on the unit sphere.
fn icosphere_points(subdivisions: u32) -> Vec<Point3<f64>> {
    let t = (1.0 + 5f64.sqrt()) / 2.0;
    let mut verts: Vec<Vector3<f64>> = [
        [-1.0, t, 0.0],
        [1.0, t, 0.0],
        [-1.0, -t, 0.0],
        [1.0, -t, 0.0],
        [0.0, -1.0, t],
        [0.0, 1.0, t],
        [0.0, -1.0, -t],
        [0.0, 1.0, -t],
        [t, 0.0, -1.0],
        [t, 0.0, 1.0],
        [-t, 0.0, -1.0],
        [-t, 0.0, 1.0],
    ]
    .iter()
    .map(|c| Vector3::new(c[0], c[1], c[2]).normalize())
    .collect();
    let mut tris: Vec<[usize; 3]> = vec![
        [0, 11, 5],
        [0, 5, 1],
        [0, 1, 7],
        [0, 7, 10],
        [0, 10, 11],
        [1, 5, 9],
        [5, 11, 4],
        [11, 10, 2],
        [10, 7, 6],
        [7, 1, 8],
        [3, 9, 4],
        [3, 4, 2],
        [3, 2, 6],
        [3, 6, 8],
        [3, 8, 9],
        [4, 9, 5],
        [2, 4, 11],
        [6, 2, 10],
        [8, 6, 7],
        [9, 8, 1],
    ];
    for _ in 0..subdivisions {
        let mut midpoint: HashMap<(usize, usize), usize> = HashMap::new();
        let mut mid = |a: usize, b: usize, verts: &mut Vec<Vector3<f64>>| -> usize {
            let key = (a.min(b), a.max(b));
            *midpoint.entry(key).or_insert_with(|| {
                verts.push(((verts[a] + verts[b]) / 2.0).normalize());
                verts.len() - 1
            })
        };
        let mut next = Vec::with_capacity(tris.len() * 4);
        for [a, b, c] in tris {
            let ab = mid(a, b, &mut verts);
            let bc = mid(b, c, &mut verts);
            let ca = mid(c, a, &mut verts);
            next.push([a, ab, ca]);
            next.push([b, bc, ab]);
            next.push([c, ca, bc]);
            next.push([ab, bc, ca]);
        }
        tris = next;
    }
    verts.into_iter().map(Point3::from).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    fn random_dir(rng: &mut ChaCha8Rng) -> Vector3<f64> {
        loop {
            let v = Vector3::new(
                rng.random_range(-1.0..1.0),
                rng.random_range(-1.0..1.0),
                rng.random_range(-1.0..1.0),
            );
            let n = v.norm();
            if n > 1e-3 && n <= 1.0 {
                return v / n;
            }
        }
    }

    fn random_cloud(rng: &mut ChaCha8Rng, n: usize) -> Vec<Point3<f64>> {
        (0..n)
            .map(|_| {
                Point3::new(
                    rng.random_range(-1.0..2.0),
                    rng.random_range(-0.5..0.5),
                    rng.random_range(0.0..0.3),
                )
            })
            .collect()
    }

    #[test]
    fn hull_of_cloud_contains_every_input_and_is_closed() {
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        for _ in 0..20 {
            let pts = random_cloud(&mut rng, 200);
            let poly = Polytope::from_points(&pts).unwrap();
            assert!(poly.vertices.len() < pts.len());
            for p in &pts {
                assert!(poly.contains_point(p, 1e-9), "{p} outside");
            }
            // Euler characteristic of a closed triangulated sphere: V - E + F = 2.
            let e = poly.edges().count();
            assert_eq!(
                poly.vertices.len() as i64 - e as i64 + poly.faces.len() as i64,
                2
            );
            // Every vertex of the hull is an input point, exactly.
            for v in &poly.vertices {
                assert!(pts.contains(v));
            }
            // Closed surface: every directed edge appears once, with its reverse.
            let mut directed = Vec::new();
            for f in &poly.faces {
                for k in 0..3 {
                    directed.push((f[k], f[(k + 1) % 3]));
                }
            }
            directed.sort();
            let before = directed.len();
            directed.dedup();
            assert_eq!(before, directed.len());
            for &(a, b) in &directed {
                assert!(directed.binary_search(&(b, a)).is_ok());
            }
        }
    }

    #[test]
    fn faces_wind_counter_clockwise_from_outside() {
        let poly = Polytope::from_box(Vector3::new(1.0, 2.0, 3.0)).unwrap();
        let centre = Point3::origin();
        for f in &poly.faces {
            let [a, b, c] = f.map(|i| poly.vertices[i as usize]);
            let n = (b - a).cross(&(c - a));
            assert!(n.dot(&(a - centre)) > 0.0);
        }
        assert!((poly.volume() - 48.0).abs() < 1e-9);
    }

    #[test]
    fn box_is_exact() {
        let poly = Polytope::from_box(Vector3::new(0.5, 1.0, 2.0)).unwrap();
        assert_eq!(poly.vertices.len(), 8);
        assert_eq!(poly.faces.len(), 12);
        let (lo, hi) = poly.aabb();
        assert_eq!(lo, Point3::new(-0.5, -1.0, -2.0));
        assert_eq!(hi, Point3::new(0.5, 1.0, 2.0));
        assert!(poly.contains_point(&Point3::new(0.49, -0.99, 1.99), 0.0));
        assert!(!poly.contains_point(&Point3::new(0.51, 0.0, 0.0), 1e-6));
        // Edge list: 12 box edges plus one diagonal per square face.
        assert_eq!(poly.edges().count(), 18);
        for i in 0..poly.vertices.len() {
            let n = poly.neighbours(i);
            assert!(n.windows(2).all(|w| w[0] < w[1]));
        }
    }

    #[test]
    fn cylinder_prism_contains_the_cylinder() {
        let (r, l) = (0.3, 1.2);
        let poly = Polytope::from_cylinder(r, l, 8).unwrap();
        assert_eq!(poly.vertices.len(), 16);
        for k in 0..360 {
            let a = (k as f64).to_radians();
            for z in [-l / 2.0, 0.0, l / 2.0] {
                let p = Point3::new(r * a.cos(), r * a.sin(), z);
                assert!(poly.contains_point(&p, 0.0), "{p}");
            }
        }
        // Circumscribed, not grossly oversized: the face midpoints touch the circle.
        let planes = poly.face_planes();
        let min_side = planes
            .iter()
            .filter(|(n, _)| n.z.abs() < 1e-9)
            .map(|(_, d)| *d)
            .fold(f64::INFINITY, f64::min);
        assert!((min_side - r).abs() < 1e-9);
    }

    #[test]
    fn sphere_polytope_contains_the_sphere() {
        let r = 0.25;
        let poly = Polytope::from_sphere(r, 2).unwrap();
        assert_eq!(poly.vertices.len(), 162);
        for (n, d) in poly.face_planes() {
            assert!(d >= r, "face plane at {d} cuts the sphere");
            let _ = n;
        }
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        for _ in 0..1000 {
            let p = Point3::from(random_dir(&mut rng) * r);
            assert!(poly.contains_point(&p, 0.0));
        }
        // Not much larger than the sphere.
        let (_, br) = poly.bounding_sphere();
        assert!(br < r * 1.1);
    }

    #[test]
    fn hill_climb_agrees_with_brute_force() {
        let mut rng = ChaCha8Rng::seed_from_u64(42);
        let shapes = vec![
            Polytope::from_points(&random_cloud(&mut rng, 500)).unwrap(),
            Polytope::from_sphere(1.0, 3).unwrap(),
            Polytope::from_cylinder(0.2, 2.0, 32).unwrap(),
        ];
        for poly in &shapes {
            for _ in 0..2000 {
                let dir = random_dir(&mut rng);
                let start = rng.random_range(0..poly.vertices.len());
                let brute = poly.support(&dir);
                let climb = poly.support_hill_climb(&dir, start);
                let db = dir.dot(&poly.vertices[brute].coords);
                let dc = dir.dot(&poly.vertices[climb].coords);
                assert!((db - dc).abs() <= 1e-12, "brute {db} climb {dc}");
            }
        }
    }

    #[test]
    fn support_ties_go_to_lowest_index() {
        let poly = Polytope::from_box(Vector3::new(1.0, 1.0, 1.0)).unwrap();
        let s = poly.support(&Vector3::z());
        for (i, v) in poly.vertices.iter().enumerate() {
            if v.z == 1.0 {
                assert!(s <= i);
            }
        }
        assert_eq!(poly.vertices[s].z, 1.0);
    }

    #[test]
    fn transform_moves_vertices_and_keeps_topology() {
        let poly = Polytope::from_box(Vector3::new(1.0, 1.0, 1.0)).unwrap();
        let pose = Isometry3::new(Vector3::new(5.0, 0.0, 0.0), Vector3::new(0.0, 0.0, 0.3));
        let moved = poly.transformed(&pose);
        assert_eq!(moved.faces, poly.faces);
        assert!(moved.contains_point(&Point3::new(5.0, 0.0, 0.0), 0.0));
        assert!(!moved.contains_point(&Point3::origin(), 1e-6));
        assert!((moved.volume() - poly.volume()).abs() < 1e-9);
        let (c, r) = moved.bounding_sphere();
        for v in &moved.vertices {
            assert!((v - c).norm() <= r + 1e-12);
        }
    }

    #[test]
    fn far_away_cloud_keeps_precision() {
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        let offset = Vector3::new(1.0e4, -2.0e4, 3.0e3);
        let pts: Vec<_> = random_cloud(&mut rng, 100)
            .into_iter()
            .map(|p| p + offset)
            .collect();
        let poly = Polytope::from_points(&pts).unwrap();
        for p in &pts {
            assert!(poly.contains_point(p, 1e-9));
        }
    }

    #[test]
    fn degenerate_inputs_are_errors() {
        let p = |x, y, z| Point3::new(x, y, z);
        assert!(matches!(
            Polytope::from_points(&[p(0., 0., 0.), p(1., 0., 0.), p(0., 1., 0.)]),
            Err(GeometryError::TooFewPoints { count: 3 })
        ));
        let flat = [p(0., 0., 0.), p(1., 0., 0.), p(0., 1., 0.), p(1., 1., 0.)];
        assert!(matches!(
            Polytope::from_points(&flat),
            Err(GeometryError::Degenerate { kind: "coplanar" })
        ));
        let line = [p(0., 0., 0.), p(1., 0., 0.), p(2., 0., 0.), p(3., 0., 0.)];
        assert!(matches!(
            Polytope::from_points(&line),
            Err(GeometryError::Degenerate { kind: "collinear" })
        ));
        let same = [p(1., 1., 1.); 5];
        assert!(matches!(
            Polytope::from_points(&same),
            Err(GeometryError::Degenerate { kind: "coincident" })
        ));
        let nan = [
            p(0., 0., 0.),
            p(1., 0., 0.),
            p(0., f64::NAN, 0.),
            p(0., 0., 1.),
        ];
        assert!(matches!(
            Polytope::from_points(&nan),
            Err(GeometryError::NonFinitePoint { index: 2, .. })
        ));
        assert!(Polytope::from_box(Vector3::new(1.0, 0.0, 1.0)).is_err());
        assert!(Polytope::from_cylinder(1.0, 1.0, 2).is_err());
        assert!(Polytope::from_sphere(-1.0, 1).is_err());
    }
}
