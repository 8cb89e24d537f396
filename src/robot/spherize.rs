//! Fitting a sphere model to a robot's collision geometry, for robots that come without a
//! `_spherized` URDF.
//!
//! The sphere model is what the fast paths check (eight configurations per AVX2 instruction
//! on the CPU, the robot-specialised sphere kernels on the GPU), but hand-made sphere models
//! (VAMP's, cuRobo's) approximate the links and may leave parts of them out. The fit here is a
//! conservative cover instead: every point of every collision polytope lies in a sphere of
//! its link, so a configuration the sphere model calls free is free for the polytope model
//! too (DESIGN.md: approximations may only err towards "in collision").
//!
//! How. A body's polytope is cut into convex pieces by planes; each piece is the convex hull
//! of its vertices, so the smallest-found ball around those vertices covers it. The piece
//! whose ball sticks out of it the farthest is cut in two next (across one of its principal
//! axes, the cut that leaves the smaller balls), until no ball sticks out by more than the
//! tolerance or the body has its most spheres. Pieces are kept as lists of convex polygons
//! and cut by clipping each polygon against the plane (the cut face is the polygon of the
//! crossing points), so every vertex of a piece is found exactly, up to `f64` rounding, which
//! a relative 1e-9 on every radius covers.

use nalgebra::{Matrix3, Point3, Vector3};

use super::geometry::{bounding_sphere_of, Polytope};
use super::load::{BodySource, RobotModel};
use super::spheres::{Sphere, SphereSet};

/// Settings of a sphere fit.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SphereFit {
    /// Largest distance (m) a sphere may stick out of its body's polytope before its piece is
    /// cut again (measured over a set of directions, see [`fit_polytope`]).
    pub tolerance: f64,
    /// Most spheres per collision body; the cut stops there even above the tolerance.
    pub max_per_body: usize,
}

impl Default for SphereFit {
    /// 1 cm and 16 spheres per body (see `results/spheres/`).
    fn default() -> Self {
        SphereFit {
            tolerance: 0.01,
            max_per_body: 16,
        }
    }
}

/// Relative growth of every fitted radius (covers the rounding of the cuts).
const RADIUS_SLACK: f64 = 1e-9;

/// A convex piece of a polytope as its boundary polygons (vertices in cyclic order).
#[derive(Clone, Debug)]
struct Piece {
    faces: Vec<Vec<Point3<f64>>>,
}

impl Piece {
    fn from_polytope(poly: &Polytope) -> Piece {
        Piece {
            faces: poly
                .faces
                .iter()
                .map(|f| f.iter().map(|&i| poly.vertices[i as usize]).collect())
                .collect(),
        }
    }

    fn points(&self) -> impl Iterator<Item = &Point3<f64>> {
        self.faces.iter().flatten()
    }

    /// The part with `n . x <= d`, `None` when that part is empty or flat.
    fn clip(&self, n: &Vector3<f64>, d: f64, eps: f64) -> Option<Piece> {
        let mut faces = Vec::with_capacity(self.faces.len() + 1);
        let mut cut: Vec<Point3<f64>> = Vec::new();
        for poly in &self.faces {
            let mut out = Vec::with_capacity(poly.len() + 2);
            for (i, a) in poly.iter().enumerate() {
                let b = &poly[(i + 1) % poly.len()];
                let (da, db) = (n.dot(&a.coords) - d, n.dot(&b.coords) - d);
                if da <= 0.0 {
                    out.push(*a);
                    if da == 0.0 {
                        cut.push(*a);
                    }
                }
                if (da < 0.0 && db > 0.0) || (da > 0.0 && db < 0.0) {
                    let p = a + (b - a) * (da / (da - db));
                    out.push(p);
                    cut.push(p);
                }
            }
            if out.len() >= 3 {
                faces.push(out);
            }
        }
        if faces.is_empty() {
            return None;
        }
        if let Some(cap) = convex_polygon(&cut, n, eps) {
            faces.push(cap);
        }
        let piece = Piece { faces };
        // A piece thinner than `eps` across the cut adds nothing a neighbour does not cover.
        let (lo, hi) = piece
            .points()
            .map(|p| n.dot(&p.coords))
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), t| {
                (l.min(t), h.max(t))
            });
        (hi - lo > eps).then_some(piece)
    }

    /// Principal axes of the vertices (eigenvectors of their covariance), largest spread
    /// first.
    fn axes(&self) -> Vec<Vector3<f64>> {
        let pts: Vec<&Point3<f64>> = self.points().collect();
        let n = pts.len().max(1) as f64;
        let mean = pts.iter().fold(Vector3::zeros(), |s, p| s + p.coords) / n;
        let mut cov = Matrix3::zeros();
        for p in &pts {
            let d = p.coords - mean;
            cov += d * d.transpose();
        }
        let eig = cov.symmetric_eigen();
        let mut order = [0usize, 1, 2];
        order.sort_by(|&a, &b| eig.eigenvalues[b].total_cmp(&eig.eigenvalues[a]));
        order
            .iter()
            .filter_map(|&k| {
                let v: Vector3<f64> = eig.eigenvectors.column(k).into_owned();
                let norm = v.norm();
                (norm.is_finite() && norm > 0.0).then(|| v / norm)
            })
            .collect()
    }
}

/// The points of `pts` (on a plane with normal `n`) in cyclic order around their mean,
/// duplicates within `eps` dropped; `None` for fewer than three.
fn convex_polygon(pts: &[Point3<f64>], n: &Vector3<f64>, eps: f64) -> Option<Vec<Point3<f64>>> {
    if pts.len() < 3 {
        return None;
    }
    let mean = pts.iter().fold(Vector3::zeros(), |s, p| s + p.coords) / pts.len() as f64;
    let helper = if n.x.abs() < 0.9 {
        Vector3::x()
    } else {
        Vector3::y()
    };
    let u = n.cross(&helper).normalize();
    let v = n.cross(&u);
    let mut ang: Vec<(f64, Point3<f64>)> = pts
        .iter()
        .map(|p| {
            let d = p.coords - mean;
            (d.dot(&v).atan2(d.dot(&u)), *p)
        })
        .collect();
    ang.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut out: Vec<Point3<f64>> = Vec::with_capacity(ang.len());
    for (_, p) in ang {
        if out
            .last()
            .is_none_or(|q: &Point3<f64>| (p - q).norm() > eps)
        {
            out.push(p);
        }
    }
    (out.len() >= 3).then_some(out)
}

/// A ball around `pts`: the better of the bounding box's centre and a Badoiu-Clarkson walk
/// towards the smallest enclosing ball, with the radius to the farthest point.
fn ball_around(pts: &[Point3<f64>], scale: f64) -> Sphere {
    let (mut best, mut best_r) = bounding_sphere_of(pts);
    let mut c = best;
    for i in 0..=64 {
        // The farthest point from `c`; its distance is the radius of a ball around `c`.
        let (far, r) = pts
            .iter()
            .map(|p| (*p, (p - c).norm()))
            .max_by(|a, b| a.1.total_cmp(&b.1))
            .unwrap_or((c, 0.0));
        if r < best_r {
            best = c;
            best_r = r;
        }
        if i == 64 {
            break;
        }
        c += (far - c) / (i as f64 + 2.0);
    }
    Sphere {
        center: best,
        radius: best_r * (1.0 + RADIUS_SLACK) + RADIUS_SLACK * scale,
    }
}

/// Directions with the polytope's support in each: the 26 directions of the cube's faces,
/// edges and corners and the polytope's face normals.
struct Supports {
    dirs: Vec<(Vector3<f64>, f64)>,
}

impl Supports {
    fn of(poly: &Polytope) -> Supports {
        let mut dirs: Vec<Vector3<f64>> = Vec::new();
        for x in -1i32..=1 {
            for y in -1i32..=1 {
                for z in -1i32..=1 {
                    if (x, y, z) != (0, 0, 0) {
                        dirs.push(Vector3::new(x as f64, y as f64, z as f64).normalize());
                    }
                }
            }
        }
        dirs.extend(poly.face_planes().into_iter().map(|(n, _)| n));
        let dirs = dirs
            .into_iter()
            .filter(|d| d.iter().all(|v| v.is_finite()))
            .map(|d| {
                let h = poly
                    .vertices
                    .iter()
                    .map(|v| v.coords.dot(&d))
                    .fold(f64::NEG_INFINITY, f64::max);
                (d, h)
            })
            .collect();
        Supports { dirs }
    }

    /// How far `ball` sticks out of the polytope: the largest `c . d + r - h(d)` over the
    /// directions (for a convex body the distance of a point outside it is the largest
    /// `x . d - h(d)` over all unit `d`, so this is a lower bound of the farthest any point
    /// of the ball lies from the polytope, exact where that happens along one of them).
    fn excess(&self, ball: &Sphere) -> f64 {
        self.dirs
            .iter()
            .map(|(d, h)| ball.center.coords.dot(d) + ball.radius - h)
            .fold(0.0, f64::max)
    }
}

/// A fitted piece: the piece, its ball and how far the ball sticks out.
struct Fitted {
    piece: Piece,
    ball: Sphere,
    excess: f64,
}

fn fitted(piece: Piece, scale: f64, body: &Supports) -> Fitted {
    let pts: Vec<Point3<f64>> = piece.points().copied().collect();
    let ball = ball_around(&pts, scale);
    let excess = body.excess(&ball);
    Fitted {
        piece,
        ball,
        excess,
    }
}

/// The two halves of `f` across the best of its principal axes (the cut whose halves have
/// the least summed ball volume), or `None` where no cut gives two pieces.
fn split(f: &Fitted, scale: f64, body: &Supports) -> Option<(Fitted, Fitted)> {
    let eps = 1e-9 * scale;
    let mut best: Option<(f64, Fitted, Fitted)> = None;
    for axis in f.piece.axes() {
        let (lo, hi) = f
            .piece
            .points()
            .map(|p| axis.dot(&p.coords))
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), t| {
                (l.min(t), h.max(t))
            });
        let mid = 0.5 * (lo + hi);
        let (Some(a), Some(b)) = (
            f.piece.clip(&axis, mid, eps),
            f.piece.clip(&-axis, -mid, eps),
        ) else {
            continue;
        };
        let (a, b) = (fitted(a, scale, body), fitted(b, scale, body));
        let cost = a.ball.radius.powi(3) + b.ball.radius.powi(3);
        if best.as_ref().is_none_or(|(c, _, _)| cost < *c) {
            best = Some((cost, a, b));
        }
    }
    best.map(|(_, a, b)| (a, b))
}

/// A conservative sphere cover of `poly`: every point of the polytope lies in one of the
/// spheres. Pieces are cut while a ball sticks out of its piece by more than
/// `fit.tolerance` and the body has fewer than `fit.max_per_body` spheres (at least one);
/// spheres lying inside another are dropped. Deterministic.
pub fn fit_polytope(poly: &Polytope, fit: &SphereFit) -> SphereSet {
    if poly.vertices.is_empty() || poly.faces.is_empty() {
        return SphereSet::default();
    }
    let (_, scale) = poly.bounding_sphere();
    let scale = scale.max(f64::MIN_POSITIVE);
    let body = Supports::of(poly);
    let mut pieces = vec![fitted(Piece::from_polytope(poly), scale, &body)];
    // Pieces that no cut divides any further.
    let mut whole: Vec<bool> = vec![false];
    while pieces.len() < fit.max_per_body.max(1) {
        let Some((i, _)) = pieces
            .iter()
            .enumerate()
            .filter(|(i, f)| !whole[*i] && f.excess > fit.tolerance)
            .max_by(|a, b| a.1.excess.total_cmp(&b.1.excess))
        else {
            break;
        };
        match split(&pieces[i], scale, &body) {
            Some((a, b)) => {
                pieces[i] = a;
                pieces.push(b);
                whole.push(false);
            }
            None => whole[i] = true,
        }
    }
    let balls: Vec<Sphere> = pieces.into_iter().map(|f| f.ball).collect();
    let mut kept: Vec<Sphere> = Vec::with_capacity(balls.len());
    for (i, s) in balls.iter().enumerate() {
        let inside_other = balls.iter().enumerate().any(|(j, o)| {
            j != i
                && (s.center - o.center).norm() + s.radius <= o.radius
                // Of two equal balls keep the first.
                && !(j > i && (s.center - o.center).norm() + o.radius <= s.radius)
        });
        if !inside_other {
            kept.push(*s);
        }
    }
    SphereSet { spheres: kept }
}

/// A sphere model of `robot`: every collision body's [`fit_polytope`] cover (a URDF sphere
/// is its own sphere), as `(link, sphere in the link frame)` in body order, the form of
/// [`RobotModel::spherized`].
pub fn fit_robot(robot: &RobotModel, fit: &SphereFit) -> Vec<(usize, Sphere)> {
    let mut out = Vec::new();
    for body in &robot.bodies {
        if let BodySource::Sphere { radius } = body.source {
            out.push((
                body.link,
                Sphere {
                    center: body.origin * Point3::origin(),
                    radius,
                },
            ));
            continue;
        }
        for s in fit_polytope(&body.polytope, fit).spheres {
            out.push((body.link, s));
        }
    }
    out
}

/// Link pairs whose spheres of `spheres` overlap at the full joint state `state` although
/// the pair is checked (not allowed): `(link a, link b, deepest overlap in m)`, by link
/// index. Where the polytopes of the same state are free of self collision, these are the
/// pairs a fit inflated into each other (`gmp spherize` counts them over random states).
pub fn self_contacts(
    robot: &RobotModel,
    spheres: &[(usize, Sphere)],
    state: &[f64],
) -> Vec<(usize, usize, f64)> {
    let poses = robot.tree.forward_kinematics(state);
    let world: Vec<(usize, Point3<f64>, f64)> = spheres
        .iter()
        .filter_map(|(l, s)| poses.get(*l).map(|p| (*l, p * s.center, s.radius)))
        .collect();
    let mut deepest: std::collections::BTreeMap<(usize, usize), f64> = Default::default();
    for (i, (la, ca, ra)) in world.iter().enumerate() {
        for (lb, cb, rb) in &world[i + 1..] {
            if la == lb || robot.allowed.is_allowed(*la, *lb) {
                continue;
            }
            let overlap = ra + rb - (ca - cb).norm();
            if overlap > 0.0 {
                let e = deepest
                    .entry(((*la).min(*lb), (*la).max(*lb)))
                    .or_insert(0.0);
                *e = e.max(overlap);
            }
        }
    }
    deepest.into_iter().map(|((a, b), d)| (a, b, d)).collect()
}

/// `urdf_text` with every link's collision elements replaced by its spheres of `spheres`
/// (`(link index of robot, sphere in the link frame)`): the `_spherized` URDF that
/// [`super::load_spherized`] reads back. Links (their visual and inertial elements), joints and
/// materials are written as urdf-rs reads them; elements it does not model (transmissions,
/// Gazebo tags) are left out.
/// Errors name the link of `spheres` that the URDF does not have.
pub fn spherized_urdf(
    urdf_text: &str,
    robot: &RobotModel,
    spheres: &[(usize, Sphere)],
) -> Result<String, String> {
    let mut urdf = urdf_rs::read_from_string(urdf_text).map_err(|e| format!("URDF: {e}"))?;
    for l in &mut urdf.links {
        l.collision.clear();
    }
    for (k, (link, s)) in spheres.iter().enumerate() {
        let name = robot
            .tree
            .links
            .get(*link)
            .map(|l| l.name.clone())
            .ok_or_else(|| format!("sphere {k}: link index {link} is not in the robot"))?;
        let target = urdf
            .links
            .iter_mut()
            .find(|l| l.name == name)
            .ok_or_else(|| format!("sphere {k}: link '{name}' is not in the URDF"))?;
        let n = target.collision.len();
        target.collision.push(urdf_rs::Collision {
            name: Some(format!("{name}_sphere_{n}")),
            origin: urdf_rs::Pose {
                xyz: urdf_rs::Vec3([s.center.x, s.center.y, s.center.z]),
                rpy: urdf_rs::Vec3([0.0, 0.0, 0.0]),
            },
            geometry: urdf_rs::Geometry::Sphere { radius: s.radius },
        });
    }
    urdf_rs::write_to_string(&urdf).map_err(|e| format!("writing the URDF: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use nalgebra::{Isometry3, Vector3};
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    fn shapes() -> Vec<Polytope> {
        let mut rng = ChaCha8Rng::seed_from_u64(5);
        let cloud: Vec<Point3<f64>> = (0..200)
            .map(|_| {
                Point3::new(
                    rng.random_range(-0.04..0.04),
                    rng.random_range(-0.1..0.1),
                    rng.random_range(0.0..0.3),
                )
            })
            .collect();
        let pose = Isometry3::new(Vector3::new(0.2, -0.1, 0.4), Vector3::new(0.3, -0.8, 0.5));
        vec![
            Polytope::from_box(Vector3::new(0.3, 0.2, 0.01)).unwrap(),
            Polytope::from_cylinder(0.05, 0.4, 16).unwrap(),
            Polytope::from_points(&cloud).unwrap().transformed(&pose),
        ]
    }

    /// Random points of the polytope: convex combinations of its vertices, its vertices and
    /// points on its edges.
    fn samples(poly: &Polytope, rng: &mut ChaCha8Rng) -> Vec<Point3<f64>> {
        let mut pts = poly.vertices.clone();
        for (a, b) in poly.edges() {
            let t: f64 = rng.random_range(0.0..1.0);
            pts.push(poly.vertices[a] + (poly.vertices[b] - poly.vertices[a]) * t);
        }
        for _ in 0..3000 {
            let w: Vec<f64> = (0..4).map(|_| rng.random_range(0.0..1.0)).collect();
            let idx: Vec<usize> = (0..4)
                .map(|_| rng.random_range(0..poly.vertices.len()))
                .collect();
            let sum: f64 = w.iter().sum();
            let mut p = Vector3::zeros();
            for (wi, &i) in w.iter().zip(&idx) {
                p += poly.vertices[i].coords * (*wi / sum);
            }
            pts.push(Point3::from(p));
        }
        pts
    }

    #[test]
    fn fitted_spheres_cover_every_point_of_the_polytope() {
        let mut rng = ChaCha8Rng::seed_from_u64(9);
        for poly in shapes() {
            for fit in [
                SphereFit::default(),
                SphereFit {
                    tolerance: 0.002,
                    max_per_body: 40,
                },
                SphereFit {
                    tolerance: 1.0,
                    max_per_body: 1,
                },
            ] {
                let set = fit_polytope(&poly, &fit);
                assert!(!set.spheres.is_empty() && set.spheres.len() <= fit.max_per_body);
                for p in samples(&poly, &mut rng) {
                    assert!(set.contains_point(&p, 0.0), "{p} not covered ({fit:?})");
                }
            }
        }
    }

    #[test]
    fn a_smaller_tolerance_fits_tighter() {
        // A thin plate: one ball sticks out by about half its diagonal.
        let plate = Polytope::from_box(Vector3::new(0.3, 0.2, 0.01)).unwrap();
        let loose = fit_polytope(
            &plate,
            &SphereFit {
                tolerance: 1.0,
                max_per_body: 64,
            },
        );
        let tight = fit_polytope(
            &plate,
            &SphereFit {
                tolerance: 0.05,
                max_per_body: 64,
            },
        );
        assert_eq!(loose.spheres.len(), 1);
        assert!(tight.spheres.len() > 4, "{}", tight.spheres.len());
        assert!(tight.total_volume() < 0.25 * loose.total_volume());
        // Every ball of the tight fit stays within the tolerance of the plate along its
        // normal (the largest gap of a plate's cover).
        for s in &tight.spheres {
            assert!(s.center.z.abs() + s.radius <= 0.01 + 0.05 + 1e-9, "{s:?}");
        }
    }

    #[test]
    fn the_fit_is_deterministic() {
        for poly in shapes() {
            let fit = SphereFit::default();
            assert_eq!(fit_polytope(&poly, &fit), fit_polytope(&poly, &fit));
        }
    }
}
