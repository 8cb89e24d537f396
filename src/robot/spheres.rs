//! Sphere sets approximating convex polytopes from outside (conservative covers, for
//! collision checks that may only err towards "in collision") and from inside.

use nalgebra::{Isometry3, Point3, Vector3};

use super::geometry::{bounding_sphere_of, Polytope};

/// A ball.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sphere {
    /// Centre.
    pub center: Point3<f64>,
    /// Radius (non-negative).
    pub radius: f64,
}

impl Sphere {
    /// Volume of the ball.
    pub fn volume(&self) -> f64 {
        4.0 / 3.0 * std::f64::consts::PI * self.radius.powi(3)
    }

    /// Whether `p` lies in the ball, allowing `tol` beyond its surface.
    pub fn contains_point(&self, p: &Point3<f64>, tol: f64) -> bool {
        (p - self.center).norm() <= self.radius + tol
    }
}

/// A set of spheres, e.g. the collision model of one link.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SphereSet {
    /// The spheres, in a deterministic order (along the principal axis for covers).
    pub spheres: Vec<Sphere>,
}

/// Relative safety margin added to cover radii so rounding cannot leave a point uncovered.
const COVER_MARGIN: f64 = 1e-9;

impl SphereSet {
    /// A conservative cover of `poly`: every point of the polytope lies in at least one sphere.
    ///
    /// The polytope is cut into `k` slabs of equal width perpendicular to its principal
    /// axis ([`Polytope::principal_axis`]). Each piece `poly ∩ slab` is convex and its vertices
    /// are among the hull vertices inside the slab and the crossings of hull edges with the
    /// two slab planes, so the bounding sphere of those points covers the piece. Every
    /// `k` in `1..=max_spheres` is tried and the cover of least total volume kept (ties go
    /// to the smaller `k`). `max_spheres == 0` is treated as 1. Deterministic.
    pub fn covering(poly: &Polytope, max_spheres: usize) -> SphereSet {
        if poly.vertices.is_empty() {
            return SphereSet::default();
        }
        let (_, _, t, tmin, tmax) = along_principal_axis(poly);
        let edges: Vec<(usize, usize)> = poly.edges().collect();
        let (_, scale) = poly.bounding_sphere();

        let mut best: Option<(f64, SphereSet)> = None;
        for k in 1..=max_spheres.max(1) {
            let width = (tmax - tmin) / k as f64;
            let mut spheres = Vec::with_capacity(k);
            for j in 0..k {
                let lo = tmin + width * j as f64;
                let hi = if j + 1 == k {
                    tmax
                } else {
                    tmin + width * (j + 1) as f64
                };
                let mut pts: Vec<Point3<f64>> = poly
                    .vertices
                    .iter()
                    .zip(&t)
                    .filter(|(_, &tv)| tv >= lo && tv <= hi)
                    .map(|(v, _)| *v)
                    .collect();
                for &(a, b) in &edges {
                    for plane in [lo, hi] {
                        let (ta, tb) = (t[a], t[b]);
                        if (ta < plane && tb > plane) || (tb < plane && ta > plane) {
                            let s = (plane - ta) / (tb - ta);
                            let pa = poly.vertices[a];
                            let pb = poly.vertices[b];
                            pts.push(pa + (pb - pa) * s);
                        }
                    }
                }
                if pts.is_empty() {
                    continue;
                }
                let (center, radius) = bounding_sphere_of(&pts);
                spheres.push(Sphere {
                    center,
                    radius: radius * (1.0 + COVER_MARGIN) + COVER_MARGIN * scale,
                });
            }
            let set = SphereSet { spheres };
            let volume = set.total_volume();
            if best.as_ref().is_none_or(|(v, _)| volume < *v) {
                best = Some((volume, set));
            }
        }
        best.map(|(_, s)| s).unwrap_or_default()
    }

    /// Up to `n` spheres lying entirely inside `poly` (the distance from each centre to every
    /// face plane is at least its radius). Centres are the midpoints of `n` equal slabs along
    /// the principal axis through the vertex mean; each radius is the largest that fits,
    /// shrunk by a relative 1e-9. Centres outside the polytope are skipped, so fewer than `n`
    /// spheres may come back.
    pub fn inner(poly: &Polytope, n: usize) -> SphereSet {
        let planes = poly.face_planes();
        if n == 0 || planes.is_empty() {
            return SphereSet::default();
        }
        let (origin, axis, _, tmin, tmax) = along_principal_axis(poly);
        let width = (tmax - tmin) / n as f64;
        let spheres = (0..n)
            .filter_map(|j| {
                let center = origin + axis * (tmin + width * (j as f64 + 0.5));
                let depth = planes
                    .iter()
                    .map(|(nrm, d)| d - nrm.dot(&center.coords))
                    .fold(f64::INFINITY, f64::min);
                (depth > 0.0).then_some(Sphere {
                    center,
                    radius: depth * (1.0 - 1e-9),
                })
            })
            .collect();
        SphereSet { spheres }
    }

    /// The set moved by `pose`.
    pub fn transformed(&self, pose: &Isometry3<f64>) -> SphereSet {
        SphereSet {
            spheres: self
                .spheres
                .iter()
                .map(|s| Sphere {
                    center: pose * s.center,
                    radius: s.radius,
                })
                .collect(),
        }
    }

    /// A sphere containing every sphere of the set: centre of the set's bounding box and the
    /// largest `|c_i - c| + r_i`. `(origin, 0)` when empty.
    pub fn bounding_sphere(&self) -> (Point3<f64>, f64) {
        if self.spheres.is_empty() {
            return (Point3::origin(), 0.0);
        }
        let mut lo = Point3::new(f64::INFINITY, f64::INFINITY, f64::INFINITY);
        let mut hi = Point3::new(f64::NEG_INFINITY, f64::NEG_INFINITY, f64::NEG_INFINITY);
        for s in &self.spheres {
            let r = Vector3::repeat(s.radius);
            lo = lo.inf(&(s.center - r));
            hi = hi.sup(&(s.center + r));
        }
        let c = nalgebra::center(&lo, &hi);
        let r = self
            .spheres
            .iter()
            .map(|s| (s.center - c).norm() + s.radius)
            .fold(0.0, f64::max);
        (c, r)
    }

    /// Sum of the sphere volumes (overlaps counted twice).
    pub fn total_volume(&self) -> f64 {
        self.spheres.iter().map(Sphere::volume).sum()
    }

    /// Whether some sphere contains `p` within `tol`.
    pub fn contains_point(&self, p: &Point3<f64>, tol: f64) -> bool {
        self.spheres.iter().any(|s| s.contains_point(p, tol))
    }
}

/// The polytope's principal axis ([`Polytope::principal_axis`]: origin and unit direction),
/// each vertex's coordinate along it, and the smallest and largest coordinate.
fn along_principal_axis(poly: &Polytope) -> (Point3<f64>, Vector3<f64>, Vec<f64>, f64, f64) {
    let (origin, axis) = poly.principal_axis();
    let t: Vec<f64> = poly
        .vertices
        .iter()
        .map(|v| (v - origin).dot(&axis))
        .collect();
    let tmin = t.iter().copied().fold(f64::INFINITY, f64::min);
    let tmax = t.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    (origin, axis, t, tmin, tmax)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    fn shapes() -> Vec<Polytope> {
        let mut rng = ChaCha8Rng::seed_from_u64(11);
        let cloud: Vec<Point3<f64>> = (0..300)
            .map(|_| {
                Point3::new(
                    rng.random_range(-0.1..0.1),
                    rng.random_range(-0.05..0.05),
                    rng.random_range(0.0..0.6),
                )
            })
            .collect();
        let tilted = Isometry3::new(Vector3::new(0.3, -0.2, 1.0), Vector3::new(0.4, 0.7, -0.2));
        vec![
            Polytope::from_points(&cloud).unwrap(),
            Polytope::from_box(Vector3::new(0.5, 0.05, 0.1))
                .unwrap()
                .transformed(&tilted),
            Polytope::from_cylinder(0.04, 0.5, 12).unwrap(),
            Polytope::from_sphere(0.2, 1).unwrap(),
        ]
    }

    /// Random points of the polytope: convex combinations of vertices, points on faces,
    /// and the vertices themselves.
    fn sample_points(poly: &Polytope, rng: &mut ChaCha8Rng) -> Vec<Point3<f64>> {
        let mut out = poly.vertices.clone();
        for _ in 0..3000 {
            let k = rng.random_range(2..6);
            let mut w: Vec<f64> = (0..k).map(|_| rng.random_range(0.0..1.0)).collect();
            let sum: f64 = w.iter().sum();
            w.iter_mut().for_each(|x| *x /= sum);
            let mut p = Vector3::zeros();
            for wi in &w {
                p += poly.vertices[rng.random_range(0..poly.vertices.len())].coords * *wi;
            }
            out.push(Point3::from(p));
        }
        for f in &poly.faces {
            for _ in 0..20 {
                let (mut a, mut b) = (rng.random_range(0.0..1.0), rng.random_range(0.0..1.0));
                if a + b > 1.0 {
                    a = 1.0 - a;
                    b = 1.0 - b;
                }
                let [p, q, r] = f.map(|i| poly.vertices[i as usize]);
                out.push(p + (q - p) * a + (r - p) * b);
            }
            // Edge points too: they are where slab pieces are tightest.
            let [p, q, _] = f.map(|i| poly.vertices[i as usize]);
            out.push(p + (q - p) * rng.random_range(0.0..1.0));
        }
        out
    }

    #[test]
    fn cover_contains_every_point_of_the_polytope() {
        let mut rng = ChaCha8Rng::seed_from_u64(5);
        for poly in shapes() {
            for max in [1, 2, 4, 8] {
                let cover = SphereSet::covering(&poly, max);
                assert!(!cover.spheres.is_empty() && cover.spheres.len() <= max);
                for p in sample_points(&poly, &mut rng) {
                    assert!(cover.contains_point(&p, 0.0), "{p} not covered (max {max})");
                }
            }
        }
    }

    #[test]
    fn more_spheres_never_cost_more_volume_than_one_bounding_sphere() {
        for poly in shapes() {
            let (_, r) = poly.bounding_sphere();
            let single = Sphere {
                center: Point3::origin(),
                radius: r,
            }
            .volume();
            let one = SphereSet::covering(&poly, 1).total_volume();
            let eight = SphereSet::covering(&poly, 8).total_volume();
            assert!(eight <= one * (1.0 + 1e-9));
            assert!(one <= single * (1.0 + 1e-6));
        }
        // An elongated box gains a lot from several spheres.
        let rod = Polytope::from_box(Vector3::new(0.5, 0.05, 0.05)).unwrap();
        let one = SphereSet::covering(&rod, 1).total_volume();
        let eight = SphereSet::covering(&rod, 8);
        assert!(eight.spheres.len() > 1);
        assert!(eight.total_volume() < one / 5.0);
    }

    #[test]
    fn cover_is_deterministic() {
        for poly in shapes() {
            assert_eq!(SphereSet::covering(&poly, 6), SphereSet::covering(&poly, 6));
        }
    }

    #[test]
    fn inner_spheres_are_inside() {
        let mut rng = ChaCha8Rng::seed_from_u64(9);
        for poly in shapes() {
            let inner = SphereSet::inner(&poly, 5);
            assert!(!inner.spheres.is_empty());
            let planes = poly.face_planes();
            for s in &inner.spheres {
                assert!(s.radius > 0.0);
                for (n, d) in &planes {
                    assert!(d - n.dot(&s.center.coords) >= s.radius);
                }
                // Points on the sphere are in the polytope.
                for _ in 0..50 {
                    let v = Vector3::new(
                        rng.random_range(-1.0..1.0),
                        rng.random_range(-1.0..1.0),
                        rng.random_range(-1.0..1.0),
                    );
                    if v.norm() > 1e-3 {
                        let p = s.center + v.normalize() * s.radius;
                        assert!(poly.contains_point(&p, 1e-12));
                    }
                }
            }
        }
        // A unit cube's single inner sphere is the inscribed ball.
        let cube = Polytope::from_box(Vector3::new(1.0, 1.0, 1.0)).unwrap();
        let inner = SphereSet::inner(&cube, 1);
        assert_eq!(inner.spheres.len(), 1);
        assert!((inner.spheres[0].radius - 1.0).abs() < 1e-6);
    }

    #[test]
    fn transform_and_bounding_sphere() {
        let poly = Polytope::from_box(Vector3::new(0.5, 0.1, 0.1)).unwrap();
        let set = SphereSet::covering(&poly, 4);
        let pose = Isometry3::new(Vector3::new(1.0, 2.0, 3.0), Vector3::new(0.0, 0.0, 1.0));
        let moved = set.transformed(&pose);
        let moved_poly = poly.transformed(&pose);
        for v in &moved_poly.vertices {
            assert!(moved.contains_point(v, 1e-12));
        }
        let (c, r) = moved.bounding_sphere();
        for s in &moved.spheres {
            assert!((s.center - c).norm() + s.radius <= r + 1e-12);
        }
        assert_eq!(SphereSet::default().bounding_sphere().1, 0.0);
    }
}
