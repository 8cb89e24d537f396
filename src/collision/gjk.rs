//! Conservative convex separation test (GJK distance iteration with a margin), in the
//! deterministic f32 arithmetic of [`super::detmath`]. Twin: `gmp_separated` in the kernels.
//!
//! The test answers "provably farther apart than `margin`": it returns `true` only when a
//! separating direction is found whose support gap exceeds the margin. A stall of the `f32`
//! iteration (degenerate simplex, no progress, repeated vertex, iteration cap) gets a bounded
//! retry with the simplex solved in `f64`, under the same `f32` proof test; NaN and whatever
//! the retry cannot prove answer `false` (treated as touching): errors can only err towards
//! collision.

use super::detmath::{add, cross, dot, scale, sub, Real, Xf, V3};

/// Most GJK iterations before giving up (and answering "touching").
pub const MAX_ITERATIONS: usize = 48;

/// A convex shape in world coordinates, described by its support mapping.
#[derive(Clone, Copy, Debug)]
pub enum ShapeRef<'a> {
    /// A convex polytope (vertices and CRS adjacency, global indices) posed by `xf`;
    /// support by hill climbing from the cached vertex.
    Poly {
        /// Pose.
        xf: Xf,
        /// Vertex pool.
        verts: &'a [V3],
        /// CRS row pointers over the pool.
        offsets: &'a [u32],
        /// CRS targets.
        targets: &'a [u32],
    },
    /// A box with half extents `h`, posed by `xf`.
    Box {
        /// Pose.
        xf: Xf,
        /// Half extents.
        h: V3,
    },
    /// A point (a sphere's centre; its radius goes into the margin).
    Point {
        /// The point.
        c: V3,
    },
    /// A cylinder along local z with radius `r` and half length `hz`, posed by `xf`.
    Cylinder {
        /// Pose.
        xf: Xf,
        /// Radius.
        r: f32,
        /// Half length.
        hz: f32,
    },
}

/// Hill-climbing support on a polytope in its local frame: from `*cache`, move to the best
/// neighbour while it strictly improves. On a convex polytope this reaches the maximum.
#[inline(always)]
pub fn poly_support_local(
    verts: &[V3],
    offsets: &[u32],
    targets: &[u32],
    cache: &mut u32,
    d: &V3,
) -> V3 {
    let mut best = *cache as usize;
    let mut best_v = dot(&verts[best], d);
    loop {
        let cur = best;
        let (a, b) = (offsets[cur] as usize, offsets[cur + 1] as usize);
        for &n in &targets[a..b] {
            let v = dot(&verts[n as usize], d);
            if v > best_v {
                best_v = v;
                best = n as usize;
            }
        }
        if best == cur {
            break;
        }
    }
    *cache = best as u32;
    verts[best]
}

impl ShapeRef<'_> {
    /// The point of the shape farthest along `d` (world frame).
    #[inline(always)]
    pub fn support(&self, d: &V3, cache: &mut u32) -> V3 {
        match self {
            ShapeRef::Poly {
                xf,
                verts,
                offsets,
                targets,
            } => {
                let dl = xf.rotate_inv(d);
                let p = poly_support_local(verts, offsets, targets, cache, &dl);
                xf.apply(&p)
            }
            ShapeRef::Box { xf, h } => {
                let dl = xf.rotate_inv(d);
                let p = [
                    if dl[0] >= 0.0 { h[0] } else { -h[0] },
                    if dl[1] >= 0.0 { h[1] } else { -h[1] },
                    if dl[2] >= 0.0 { h[2] } else { -h[2] },
                ];
                xf.apply(&p)
            }
            ShapeRef::Point { c } => *c,
            ShapeRef::Cylinder { xf, r, hz } => {
                let dl = xf.rotate_inv(d);
                let len = (dl[0] * dl[0] + dl[1] * dl[1]).sqrt();
                let p = if len > 0.0 {
                    [
                        *r * dl[0] / len,
                        *r * dl[1] / len,
                        if dl[2] >= 0.0 { *hz } else { -*hz },
                    ]
                } else {
                    [0.0, 0.0, if dl[2] >= 0.0 { *hz } else { -*hz }]
                };
                xf.apply(&p)
            }
        }
    }
}

/// Closest point to the origin of the simplex `s[..*n]`; reduces the simplex to the smallest
/// feature containing it. Returns `None` when the origin is inside a tetrahedron, or on
/// degenerate (NaN) arithmetic. Generic over the scalar: the iteration runs it in `f32`, the
/// stall recovery in `f64` (the kernels' `gmp_closest_on_simplex<T, V>` likewise).
#[inline(always)]
fn closest_on_simplex<S: Real>(s: &mut [[S; 3]; 4], n: &mut usize) -> Option<[S; 3]> {
    match *n {
        1 => Some(s[0]),
        2 => Some(closest_segment(s, n)),
        3 => closest_triangle(s, n),
        _ => closest_tetrahedron(s, n, false),
    }
}

#[inline(always)]
fn closest_segment<S: Real>(s: &mut [[S; 3]; 4], n: &mut usize) -> [S; 3] {
    let a = s[0];
    let b = s[1];
    let ab = sub(&b, &a);
    let denom = dot(&ab, &ab);
    let t = -dot(&a, &ab);
    if t <= S::ZERO {
        *n = 1;
        return a;
    }
    if t >= denom {
        s[0] = b;
        *n = 1;
        return b;
    }
    add(&a, &scale(&ab, t / denom))
}

/// Ericson's closest point on a triangle to the origin (Voronoi regions).
#[inline(always)]
fn closest_triangle<S: Real>(s: &mut [[S; 3]; 4], n: &mut usize) -> Option<[S; 3]> {
    let a = s[0];
    let b = s[1];
    let c = s[2];
    let ab = sub(&b, &a);
    let ac = sub(&c, &a);
    let ap = [-a[0], -a[1], -a[2]];
    let d1 = dot(&ab, &ap);
    let d2 = dot(&ac, &ap);
    if d1 <= S::ZERO && d2 <= S::ZERO {
        *n = 1;
        return Some(a);
    }
    let bp = [-b[0], -b[1], -b[2]];
    let d3 = dot(&ab, &bp);
    let d4 = dot(&ac, &bp);
    if d3 >= S::ZERO && d4 <= d3 {
        s[0] = b;
        *n = 1;
        return Some(b);
    }
    let vc = d1 * d4 - d3 * d2;
    if vc <= S::ZERO && d1 >= S::ZERO && d3 <= S::ZERO {
        let v = d1 / (d1 - d3);
        *n = 2;
        return Some(add(&a, &scale(&ab, v)));
    }
    let cp = [-c[0], -c[1], -c[2]];
    let d5 = dot(&ab, &cp);
    let d6 = dot(&ac, &cp);
    if d6 >= S::ZERO && d5 <= d6 {
        s[0] = c;
        *n = 1;
        return Some(c);
    }
    let vb = d5 * d2 - d1 * d6;
    if vb <= S::ZERO && d2 >= S::ZERO && d6 <= S::ZERO {
        let w = d2 / (d2 - d6);
        s[1] = c;
        *n = 2;
        return Some(add(&a, &scale(&ac, w)));
    }
    let va = d3 * d6 - d5 * d4;
    if va <= S::ZERO && (d4 - d3) >= S::ZERO && (d5 - d6) >= S::ZERO {
        let w = (d4 - d3) / ((d4 - d3) + (d5 - d6));
        s[0] = b;
        s[1] = c;
        *n = 2;
        return Some(add(&b, &scale(&sub(&c, &b), w)));
    }
    let sum = va + vb + vc;
    if sum.is_nan() || sum <= S::ZERO {
        return None;
    }
    let v = vb / sum;
    let w = vc / sum;
    Some(add(&add(&a, &scale(&ab, v)), &scale(&ac, w)))
}

/// A simplex face: its vertices (`tn` of them), and its closest point `p` with `|p|^2`.
type Face<S> = (S, [[S; 3]; 4], usize, [S; 3]);

/// Closest point on a tetrahedron; `None` when the origin is inside (or degenerate). With
/// `flat`, every face is a candidate (a flat tetrahedron has no inside: the closest of its
/// faces), and `None` only on a degenerate face.
#[inline(always)]
fn closest_tetrahedron<S: Real>(s: &mut [[S; 3]; 4], n: &mut usize, flat: bool) -> Option<[S; 3]> {
    // Faces as (three vertex indices, opposite vertex).
    const FACES: [[usize; 4]; 4] = [[0, 1, 2, 3], [0, 2, 3, 1], [0, 3, 1, 2], [1, 3, 2, 0]];
    let mut best: Option<Face<S>> = None;
    let mut outside_any = false;
    for f in FACES {
        let a = s[f[0]];
        let b = s[f[1]];
        let c = s[f[2]];
        let d = s[f[3]];
        let nrm = cross(&sub(&b, &a), &sub(&c, &a));
        let side_o = -dot(&a, &nrm);
        let side_d = dot(&sub(&d, &a), &nrm);
        if flat || side_o * side_d < S::ZERO {
            outside_any = true;
            let mut t = [a, b, c, [S::ZERO; 3]];
            let mut tn = 3usize;
            let p = closest_triangle(&mut t, &mut tn)?;
            let dd = dot(&p, &p);
            let better = match &best {
                None => true,
                Some((bd, _, _, _)) => dd < *bd,
            };
            if better {
                best = Some((dd, t, tn, p));
            }
        }
    }
    if !outside_any {
        return None;
    }
    let (_, t, tn, p) = best?;
    *s = t;
    *n = tn;
    Some(p)
}

/// A tetrahedron whose volume is zero up to f64 rounding: 36 vol^2 <= 1e-18 |ab|^2 |ac|^2 |ad|^2.
#[inline(always)]
fn is_flat(t: &[[f64; 3]; 4]) -> bool {
    let ab = sub(&t[1], &t[0]);
    let ac = sub(&t[2], &t[0]);
    let ad = sub(&t[3], &t[0]);
    let vol6 = dot(&cross(&ab, &ac), &ad);
    vol6 * vol6 <= 1e-18 * (dot(&ab, &ab) * dot(&ac, &ac) * dot(&ad, &ad))
}

/// Most extra iterations after a stall ([`separated`]), run with the `f64` simplex.
pub const RECOVERY_ITERATIONS: usize = 16;

/// True when shapes `a` and `b` are provably farther apart than `margin` (> 0).
/// `dir` is any initial direction (e.g. from b's centre to a's centre); `ca`, `cb` cache
/// hill-climbing start vertices.
///
/// The iteration runs in `f32`. When it stalls (a repeated support point, no progress, a
/// degenerate simplex or the iteration cap), the `f32` closest point of the simplex may be
/// off by ~1e-7 m, which tilts `v` by 1e-7 / |v| and, against a face ~1 m wide, moves the
/// support in `-v` to the far side when the gap is ~1 mm or less. The stall is then handed to
/// `separated_finish`, which continues from the same simplex (its vertices are exact
/// support points) with the closest point computed in `f64`. Cases that do not stall are
/// unchanged, and every `true` still comes from the `f32` test below on a fresh support point.
pub fn separated(
    a: &ShapeRef,
    b: &ShapeRef,
    margin: f32,
    dir: V3,
    ca: &mut u32,
    cb: &mut u32,
) -> bool {
    separated_with::<true>(a, b, margin, dir, ca, cb)
}

/// [`separated`]; `RECOVER = false` answers every stall `false` (the behaviour before the
/// stall recovery, kept for the tests).
#[inline(always)]
fn separated_with<const RECOVER: bool>(
    a: &ShapeRef,
    b: &ShapeRef,
    margin: f32,
    dir: V3,
    ca: &mut u32,
    cb: &mut u32,
) -> bool {
    let d0 = if dot(&dir, &dir) > 0.0 {
        dir
    } else {
        [1.0, 0.0, 0.0]
    };
    let nd0 = [-d0[0], -d0[1], -d0[2]];
    // Minkowski difference C = A - B: support_C(d) = sA(d) - sB(-d).
    let mut v = sub(&a.support(&nd0, ca), &b.support(&d0, cb));
    let mut s = [v, [0.0; 3], [0.0; 3], [0.0; 3]];
    let mut n = 1usize;
    let m2 = margin * margin;
    for _ in 0..MAX_ITERATIONS {
        let vv = dot(&v, &v);
        if vv.is_nan() || vv <= m2 {
            return false; // within the margin (or NaN)
        }
        let nv = [-v[0], -v[1], -v[2]];
        let w = sub(&a.support(&nv, ca), &b.support(&v, cb));
        let vw = dot(&v, &w);
        // Every point x of C has x.v >= w.v, so the distance is at least w.v / |v|.
        if vw > 0.0 && vw * vw > m2 * vv {
            return true;
        }
        // No progress possible in f32: the gap is not provably above the margin yet.
        if vv - vw <= vv * 1e-6 || s[..n].contains(&w) {
            return RECOVER && separated_finish(a, b, m2, &s, n, ca, cb);
        }
        s[n] = w;
        n += 1;
        match closest_on_simplex(&mut s, &mut n) {
            Some(p) => v = p,
            None => return RECOVER && separated_finish(a, b, m2, &s, n, ca, cb),
        }
    }
    RECOVER && separated_finish(a, b, m2, &s, n, ca, cb)
}

/// The stall recovery of [`separated`]: at most [`RECOVERY_ITERATIONS`] more GJK iterations
/// from the simplex `s[..n]`, with the closest point of the simplex computed in `f64` (the
/// vertices are `f32` support points, exact in `f64`) and rounded to `f32` as the direction of
/// the next support query. The proof is the `f32` test of the main loop on that direction and
/// its support point. Any stall here (degenerate simplex, within the margin, no progress, a
/// repeated vertex, the cap) answers `false`. Twin: `gmp_separated_finish` in the kernels.
#[cold]
#[inline(never)]
fn separated_finish(
    a: &ShapeRef,
    b: &ShapeRef,
    m2: f32,
    s: &[V3; 4],
    n: usize,
    ca: &mut u32,
    cb: &mut u32,
) -> bool {
    let widen = |p: &V3| [p[0] as f64, p[1] as f64, p[2] as f64];
    let mut t = [[0.0f64; 3]; 4];
    for (tk, sk) in t.iter_mut().zip(&s[..n]) {
        *tk = widen(sk);
    }
    let mut n = n;
    let m2d = m2 as f64;
    for _ in 0..RECOVERY_ITERATIONS {
        let vd = match closest_on_simplex(&mut t, &mut n) {
            Some(p) => p,
            // Coplanar support points (as between parallel faces) make a flat tetrahedron,
            // which the origin cannot be inside whatever its side tests say: go on from the
            // closest of its faces. Otherwise the origin is inside (overlap) or the arithmetic
            // broke down.
            None if n == 4 && is_flat(&t) => match closest_tetrahedron(&mut t, &mut n, true) {
                Some(p) => p,
                None => return false,
            },
            None => return false,
        };
        let vvd = dot(&vd, &vd);
        if vvd.is_nan() || vvd <= m2d {
            return false;
        }
        let v = [vd[0] as f32, vd[1] as f32, vd[2] as f32];
        let vv = dot(&v, &v);
        let nv = [-v[0], -v[1], -v[2]];
        let w = sub(&a.support(&nv, ca), &b.support(&v, cb));
        let vw = dot(&v, &w);
        if vw > 0.0 && vw * vw > m2 * vv {
            return true;
        }
        let wd = widen(&w);
        let vwd = dot(&vd, &wd);
        if vvd - vwd <= vvd * 1e-6 || t[..n].contains(&wd) {
            return false;
        }
        t[n] = wd;
        n += 1;
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    fn boxed(t: V3, h: V3) -> ShapeRef<'static> {
        ShapeRef::Box {
            xf: Xf {
                r: Xf::IDENTITY.r,
                t,
            },
            h,
        }
    }

    #[test]
    fn boxes_apart_and_touching() {
        let a = boxed([0.0, 0.0, 0.0], [0.5, 0.5, 0.5]);
        let (mut ca, mut cb) = (0, 0);
        let far = boxed([1.2, 0.3, 0.0], [0.5, 0.5, 0.5]);
        assert!(separated(&a, &far, 1e-4, [1.0, 0.0, 0.0], &mut ca, &mut cb));
        let touching = boxed([1.0, 0.3, 0.0], [0.5, 0.5, 0.5]);
        assert!(!separated(
            &a,
            &touching,
            1e-4,
            [1.0, 0.0, 0.0],
            &mut ca,
            &mut cb
        ));
        let overlapping = boxed([0.7, 0.3, 0.2], [0.5, 0.5, 0.5]);
        assert!(!separated(
            &a,
            &overlapping,
            1e-4,
            [1.0, 0.0, 0.0],
            &mut ca,
            &mut cb
        ));
        // Gap of 0.5 mm with a margin of 0.1 mm: provably separated.
        let near = boxed([1.0005, 0.3, 0.0], [0.5, 0.5, 0.5]);
        assert!(separated(
            &a,
            &near,
            1e-4,
            [1.0, 0.0, 0.0],
            &mut ca,
            &mut cb
        ));
    }

    #[test]
    fn point_against_cylinder_uses_margin_as_radius() {
        let cyl = ShapeRef::Cylinder {
            xf: Xf::IDENTITY,
            r: 0.2,
            hz: 0.5,
        };
        let p = ShapeRef::Point {
            c: [0.45, 0.0, 0.0],
        };
        let (mut ca, mut cb) = (0, 0);
        // Sphere of radius 0.2 at distance 0.25 from the cylinder surface: free.
        assert!(separated(&p, &cyl, 0.2, [1.0, 0.0, 0.0], &mut ca, &mut cb));
        // Radius 0.3: overlaps.
        assert!(!separated(&p, &cyl, 0.3, [1.0, 0.0, 0.0], &mut ca, &mut cb));
    }

    #[test]
    fn rotated_boxes_diagonal_gap() {
        // A box rotated 45 degrees about z next to an axis-aligned one.
        let r = super::super::detmath::axis_angle(&[0.0, 0.0, 1.0], std::f32::consts::FRAC_PI_4);
        let a = ShapeRef::Box {
            xf: Xf {
                r,
                t: [0.0, 0.0, 0.0],
            },
            h: [0.5, 0.5, 0.5],
        };
        let half_diag = 0.5f32 * std::f32::consts::SQRT_2;
        let (mut ca, mut cb) = (0, 0);
        let b = boxed([half_diag + 0.5 + 0.01, 0.0, 0.0], [0.5, 0.5, 0.5]);
        assert!(separated(&a, &b, 1e-4, [1.0, 0.0, 0.0], &mut ca, &mut cb));
        let c = boxed([half_diag + 0.5 - 0.01, 0.0, 0.0], [0.5, 0.5, 0.5]);
        assert!(!separated(&a, &c, 1e-4, [1.0, 0.0, 0.0], &mut ca, &mut cb));
    }
}

#[cfg(test)]
mod stall_tests {
    //! The stall recovery against an exact reference: parry3d in f64 on the same point sets
    //! (the `f32` world vertices the support functions return).
    use super::*;
    use crate::robot::geometry::Polytope;
    use nalgebra::{Isometry3, Point3, Translation3, Unit, UnitQuaternion, Vector3};
    use parry3d_f64::math::{Pose, Rotation, Vector};
    use parry3d_f64::shape::ConvexPolyhedron;
    use rand::{Rng, SeedableRng};

    const MARGIN: f32 = 1e-4;

    struct PolyData {
        verts: Vec<V3>,
        offsets: Vec<u32>,
        targets: Vec<u32>,
    }

    impl PolyData {
        fn new(p: &Polytope) -> Self {
            PolyData {
                verts: p
                    .vertices
                    .iter()
                    .map(|v| [v.x as f32, v.y as f32, v.z as f32])
                    .collect(),
                offsets: p.edge_offsets.clone(),
                targets: p.edge_targets.clone(),
            }
        }

        fn shape(&self, xf: Xf) -> ShapeRef<'_> {
            ShapeRef::Poly {
                xf,
                verts: &self.verts,
                offsets: &self.offsets,
                targets: &self.targets,
            }
        }
    }

    /// The points whose hull the support functions describe (f32, world frame).
    fn world_points(s: &ShapeRef) -> Vec<V3> {
        match s {
            ShapeRef::Poly { xf, verts, .. } => verts.iter().map(|v| xf.apply(v)).collect(),
            ShapeRef::Box { xf, h } => (0..8)
                .map(|i| {
                    xf.apply(&[
                        if i & 1 == 0 { -h[0] } else { h[0] },
                        if i & 2 == 0 { -h[1] } else { h[1] },
                        if i & 4 == 0 { -h[2] } else { h[2] },
                    ])
                })
                .collect(),
            _ => unreachable!("polytopes and boxes only"),
        }
    }

    /// Exact distance between the hulls of `a` and `b` (0 when they overlap), in f64 about
    /// `a`'s first point.
    fn exact_distance(a: &ShapeRef, b: &ShapeRef) -> f64 {
        let (pa, pb) = (world_points(a), world_points(b));
        let o = pa[0];
        let hull = |pts: &[V3]| {
            let v: Vec<Vector> = pts
                .iter()
                .map(|p| {
                    Vector::new(
                        p[0] as f64 - o[0] as f64,
                        p[1] as f64 - o[1] as f64,
                        p[2] as f64 - o[2] as f64,
                    )
                })
                .collect();
            ConvexPolyhedron::from_convex_hull(&v).expect("hull")
        };
        let id = Pose::from_parts(
            Vector::new(0.0, 0.0, 0.0),
            Rotation::from_xyzw(0.0, 0.0, 0.0, 1.0),
        );
        parry3d_f64::query::distance(&id, &hull(&pa), &id, &hull(&pb))
            .expect("distance")
            .distance
    }

    fn centre(s: &ShapeRef) -> V3 {
        match s {
            ShapeRef::Poly { xf, .. } | ShapeRef::Box { xf, .. } => xf.t,
            _ => unreachable!("polytopes and boxes only"),
        }
    }

    /// (old verdict, new verdict) with the initial direction from `b`'s centre to `a`'s.
    fn verdicts(a: &ShapeRef, b: &ShapeRef) -> (bool, bool) {
        let dir = sub(&centre(a), &centre(b));
        let (mut ca, mut cb) = (0, 0);
        let old = separated_with::<false>(a, b, MARGIN, dir, &mut ca, &mut cb);
        let (mut ca, mut cb) = (0, 0);
        let new = separated(a, b, MARGIN, dir, &mut ca, &mut cb);
        (old, new)
    }

    /// A box (0.04 x 0.03 x 0.05 half extents, as a polytope) lying 1 mm above a shelf
    /// (0.6 x 0.5 x 0.02 half extents, rotated about z) about 1.1 m from the origin, its
    /// bottom face tilted by about 0.012 rad: the f32 iteration stalls (at 1.00002 mm).
    fn shelf_case(dz: f32) -> (PolyData, Xf, ShapeRef<'static>) {
        let pd = PolyData::new(&Polytope::from_box(Vector3::new(0.04, 0.03, 0.05)).unwrap());
        let xf = Xf {
            r: [
                -0.11208335,
                -0.01204102,
                -0.9936259,
                -0.9936972,
                0.0031425548,
                0.11205332,
                0.0017732874,
                0.9999226,
                -0.012317357,
            ],
            t: [1.3449284, -0.9650491, 0.46158907 + dz],
        };
        let shelf = ShapeRef::Box {
            xf: Xf {
                r: [
                    -0.022587141,
                    -0.9997449,
                    0.0,
                    0.9997449,
                    -0.022587141,
                    0.0,
                    0.0,
                    0.0,
                    1.0,
                ],
                t: [0.98814774, -0.56084985, 0.40990457],
            },
            h: [0.6, 0.5, 0.02],
        };
        (pd, xf, shelf)
    }

    #[test]
    fn stall_at_one_millimetre_is_recovered() {
        let (pd, xf, shelf) = shelf_case(0.0);
        let body = pd.shape(xf);
        let d = exact_distance(&body, &shelf);
        assert!((d - 1e-3).abs() < 2e-6, "reference distance {d}");
        let (old, new) = verdicts(&body, &shelf);
        assert!(!old, "the f32 iteration alone should stall here");
        assert!(new, "the stall should be recovered at {d} m");
        // Lowered by 0.95 mm (0.05 mm apart) and 1.05 mm (overlapping): still touching.
        for (dz, lo, hi) in [(-0.95e-3f32, 3e-5, 7e-5), (-1.05e-3, 0.0, 0.0)] {
            let (pd, xf, shelf) = shelf_case(dz);
            let body = pd.shape(xf);
            let d = exact_distance(&body, &shelf);
            assert!(d >= lo && d <= hi, "reference distance {d} at dz {dz}");
            assert_eq!(verdicts(&body, &shelf), (false, false), "dz {dz}");
            assert_eq!(verdicts(&shelf, &body), (false, false), "dz {dz}, swapped");
        }
    }

    /// One shape of a generated pair: a polytope of [`Cases::polys`] or a box (`h`).
    struct Spec {
        poly: Option<usize>,
        xf: Xf,
        h: V3,
    }

    /// Generated pairs of shapes and the polytopes they use.
    struct Cases {
        polys: Vec<PolyData>,
        pairs: Vec<[Spec; 2]>,
    }

    impl Cases {
        fn shape(&self, s: &Spec) -> ShapeRef<'_> {
            match s.poly {
                Some(i) => self.polys[i].shape(s.xf),
                None => ShapeRef::Box { xf: s.xf, h: s.h },
            }
        }

        /// Random boxes and polytopes near a large thin box: mostly with a face close to
        /// parallel to its top face (tilts 1e-7 to 0.1 rad), at gaps from 1 mm of overlap to
        /// 3 mm (log-uniform from 0.01 mm), about 1 m from the origin; either argument order.
        fn near_contact(n: usize, seed: u64) -> Cases {
            let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
            let ellipsoid: Vec<Point3<f64>> = (0..300)
                .map(|i| {
                    let a = i as f64 * 2.399963;
                    let z = 1.0 - 2.0 * (i as f64 + 0.5) / 300.0;
                    let r = (1.0 - z * z).sqrt();
                    Point3::new(0.05 * r * a.cos(), 0.04 * r * a.sin(), 0.08 * z)
                })
                .collect();
            let mut polys: Vec<PolyData> = [
                Polytope::from_box(Vector3::new(0.04, 0.03, 0.05)).unwrap(),
                Polytope::from_box(Vector3::new(0.3, 0.2, 0.05)).unwrap(),
                Polytope::from_cylinder(0.045, 0.12, 24).unwrap(),
                Polytope::from_sphere(0.06, 3).unwrap(),
                Polytope::from_points(&ellipsoid).unwrap(),
            ]
            .iter()
            .map(PolyData::new)
            .collect();
            let small_kinds = polys.len();
            let mut pairs = Vec::with_capacity(n);
            for case in 0..n {
                // The large box (every fifth one as a polytope).
                let h = [
                    rng.random_range(0.2..0.7),
                    rng.random_range(0.2..0.6),
                    rng.random_range(0.005..0.05),
                ];
                let big_rot = UnitQuaternion::from_axis_angle(
                    &Unit::new_normalize(Vector3::new(
                        rng.random_range(-1.0..1.0),
                        rng.random_range(-1.0..1.0),
                        rng.random_range(-1.0..1.0),
                    )),
                    if case % 2 == 0 {
                        rng.random_range(-0.02..0.02)
                    } else {
                        rng.random_range(-3.1..3.1)
                    },
                ) * UnitQuaternion::from_axis_angle(
                    &Vector3::z_axis(),
                    rng.random_range(-3.1..3.1),
                );
                let big_t = Vector3::new(
                    rng.random_range(0.3..1.2),
                    rng.random_range(-0.8..0.8),
                    rng.random_range(0.2..1.2),
                );
                let big_iso = Isometry3::from_parts(Translation3::from(big_t), big_rot);
                let big = Spec {
                    poly: (case % 5 == 4).then(|| {
                        polys.push(PolyData::new(
                            &Polytope::from_box(Vector3::new(h[0], h[1], h[2])).unwrap(),
                        ));
                        polys.len() - 1
                    }),
                    xf: Xf::from_isometry(&big_iso),
                    h: h.map(|x: f64| x as f32),
                };
                // The small shape: a face close to parallel to the top face, or any
                // orientation.
                let kind = rng.random_range(0..small_kinds);
                let base = match rng.random_range(0..3) {
                    0 => UnitQuaternion::identity(),
                    1 => UnitQuaternion::from_axis_angle(
                        &Vector3::x_axis(),
                        std::f64::consts::FRAC_PI_2,
                    ),
                    _ => UnitQuaternion::from_euler_angles(
                        rng.random_range(-3.1..3.1),
                        rng.random_range(-3.1..3.1),
                        rng.random_range(-3.1..3.1),
                    ),
                };
                let ax: f64 = rng.random_range(0.0..std::f64::consts::TAU);
                let tilt = 10f64.powf(rng.random_range(-7.0..-1.0));
                let rot = big_rot
                    * UnitQuaternion::from_axis_angle(
                        &Unit::new_normalize(Vector3::new(ax.cos(), ax.sin(), 0.0)),
                        tilt,
                    )
                    * UnitQuaternion::from_axis_angle(
                        &Vector3::z_axis(),
                        rng.random_range(-3.1..3.1),
                    )
                    * base;
                let (px, py) = (rng.random_range(-h[0]..h[0]), rng.random_range(-h[1]..h[1]));
                let up = big_rot * Vector3::z();
                let top = big_iso * Point3::new(px, py, h[2]);
                let mut iso = Isometry3::from_parts(Translation3::from(top.coords + up * 0.2), rot);
                let xf = Xf::from_isometry(&iso);
                let lowest = polys[kind]
                    .verts
                    .iter()
                    .map(|v| {
                        let p = xf.apply(v);
                        (Vector3::new(p[0] as f64, p[1] as f64, p[2] as f64) - top.coords).dot(&up)
                    })
                    .fold(f64::INFINITY, f64::min);
                let gap = if rng.random_range(0..8) == 0 {
                    -10f64.powf(rng.random_range(-6.0..-3.0))
                } else {
                    10f64.powf(rng.random_range(-5.0..-2.5))
                };
                iso.translation.vector -= up * (lowest - gap);
                let small = Spec {
                    poly: Some(kind),
                    xf: Xf::from_isometry(&iso),
                    h: [0.0; 3],
                };
                pairs.push(if case % 3 == 0 {
                    [big, small]
                } else {
                    [small, big]
                });
            }
            Cases { polys, pairs }
        }
    }

    fn env_cases() -> usize {
        std::env::var("GMP_GJK_CASES")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(20_000)
    }

    /// The pairs of [`Cases::near_contact`] against the exact distance: `true` only beyond the
    /// margin, never a `true` turned `false`, and the f32 stalls recovered.
    #[test]
    fn recovery_stays_conservative() {
        let cases = Cases::near_contact(env_cases(), 0x6a6b_0007);
        let (mut stalls, mut recovered, mut free, mut new_true) = (0, 0, 0, 0);
        let mut unresolved = Vec::new();
        let (mut band, mut recovered_all) = (0, 0);
        for (case, [sa, sb]) in cases.pairs.iter().enumerate() {
            let (a, b) = (cases.shape(sa), cases.shape(sb));
            let d = exact_distance(&a, &b);
            let (old, new) = verdicts(&a, &b);
            // The common path is unchanged: a `true` stays `true`.
            assert!(!old || new, "case {case}: true turned false (d {d})");
            // Conservative: `true` only beyond the margin (up to the f32 rounding of the
            // final test, about 1e-7 m, and the reference's tolerance).
            assert!(
                !new || d > MARGIN as f64 - 1e-6,
                "case {case}: separated at reference distance {d}"
            );
            if new && d <= MARGIN as f64 {
                band += 1;
            }
            if d > MARGIN as f64 {
                free += 1;
            }
            new_true += usize::from(new);
            recovered_all += usize::from(new && !old);
            if !old && d > 2.0 * MARGIN as f64 {
                stalls += 1;
                if new {
                    recovered += 1;
                } else {
                    unresolved.push(d);
                }
            }
        }
        unresolved.sort_by(f64::total_cmp);
        eprintln!(
            "gjk stall recovery: {} cases, {free} beyond the margin, {new_true} proven \
             separated ({band} within 1e-6 below the margin), {recovered_all} of them by the stall \
             recovery; {stalls} f32 stalls beyond twice the margin, {recovered} recovered; \
             unrecovered distances {:?}",
            cases.pairs.len(),
            &unresolved[..unresolved.len().min(20)]
        );
        assert!(stalls > 0, "the generator should produce f32 stalls");
        assert!(
            recovered * 100 >= stalls * 99,
            "only {recovered} of {stalls} stalls recovered"
        );
    }

    /// Reads the cases written by [`kernel_twin_matches_on_stalls`], runs `gmp_separated` on
    /// each, writes (verdict, ca, cb) per case.
    const TWIN_MAIN: &str = r#"
static std::vector<uint32_t> W;
static size_t P = 0;
static uint32_t u() { return W[P++]; }
static float f() { uint32_t x = u(); float y; std::memcpy(&y, &x, 4); return y; }
int main(int argc, char** argv) {
    if (argc != 3) return 2;
    FILE* in = std::fopen(argv[1], "rb");
    if (!in) return 3;
    uint32_t w;
    while (std::fread(&w, 4, 1, in) == 1) W.push_back(w);
    std::fclose(in);
    uint32_t np = u();
    std::vector<std::vector<float>> verts(np);
    std::vector<std::vector<unsigned>> offs(np), tgts(np);
    for (uint32_t i = 0; i < np; i++) {
        uint32_t k = u();
        for (uint32_t j = 0; j < k; j++) verts[i].push_back(f());
        k = u();
        for (uint32_t j = 0; j < k; j++) offs[i].push_back(u());
        k = u();
        for (uint32_t j = 0; j < k; j++) tgts[i].push_back(u());
    }
    uint32_t nc = u();
    std::vector<uint32_t> out;
    for (uint32_t c = 0; c < nc; c++) {
        GmpShape sh[2];
        for (int j = 0; j < 2; j++) {
            uint32_t poly = u();
            for (int k = 0; k < 9; k++) sh[j].xf.r[k] = f();
            for (int k = 0; k < 3; k++) sh[j].xf.t[k] = f();
            for (int k = 0; k < 3; k++) sh[j].p[k] = f();
            if (poly == 0xffffffffu) {
                sh[j].kind = GMP_SHAPE_BOX;
                sh[j].verts = nullptr;
                sh[j].offsets = nullptr;
                sh[j].targets = nullptr;
            } else {
                sh[j].kind = GMP_SHAPE_POLY;
                sh[j].verts = verts[poly].data();
                sh[j].offsets = offs[poly].data();
                sh[j].targets = tgts[poly].data();
            }
        }
        V3 dir;
        for (int k = 0; k < 3; k++) dir.x[k] = f();
        float margin = f();
        unsigned ca = 0, cb = 0;
        bool r = gmp_separated(sh[0], sh[1], margin, dir, &ca, &cb);
        out.push_back(r ? 1u : 0u);
        out.push_back(ca);
        out.push_back(cb);
    }
    FILE* o = std::fopen(argv[2], "wb");
    if (!o) return 4;
    std::fwrite(out.data(), 4, out.size(), o);
    std::fclose(o);
    return 0;
}
"#;

    /// `gmp_separated` of the kernels, compiled as C++ (the host twin: no contraction, no fast
    /// math), gives the verdicts and hill-climbing caches of [`separated`] on the pairs of
    /// [`Cases::near_contact`], f64 stall recoveries included.
    #[test]
    fn kernel_twin_matches_on_stalls() {
        use crate::gpu::kernels::{host_twin, COMMON_CUH};
        let Some(cxx) = host_twin::compiler() else {
            eprintln!("SKIP kernel_twin_matches_on_stalls: no C++ compiler (c++ or GMP_CXX)");
            return;
        };
        let cases = Cases::near_contact(env_cases(), 0x6a6b_0008);
        let mut words: Vec<u32> = vec![cases.polys.len() as u32];
        for p in &cases.polys {
            words.push(3 * p.verts.len() as u32);
            words.extend(p.verts.iter().flatten().map(|x| x.to_bits()));
            words.push(p.offsets.len() as u32);
            words.extend(&p.offsets);
            words.push(p.targets.len() as u32);
            words.extend(&p.targets);
        }
        words.push(cases.pairs.len() as u32);
        let mut want = Vec::new();
        let mut recovered = 0;
        for pair in &cases.pairs {
            for s in pair {
                words.push(s.poly.map_or(u32::MAX, |i| i as u32));
                words.extend(
                    s.xf.r
                        .iter()
                        .chain(&s.xf.t)
                        .chain(&s.h)
                        .map(|x| x.to_bits()),
                );
            }
            let (a, b) = (cases.shape(&pair[0]), cases.shape(&pair[1]));
            let dir = sub(&centre(&a), &centre(&b));
            words.extend(dir.iter().map(|x| x.to_bits()));
            words.push(MARGIN.to_bits());
            let (mut ca, mut cb) = (0, 0);
            let new = separated(&a, &b, MARGIN, dir, &mut ca, &mut cb);
            want.extend([u32::from(new), ca, cb]);
            let (old, _) = verdicts(&a, &b);
            recovered += usize::from(new && !old);
        }
        let dir = tempfile::tempdir().expect("temporary folder");
        let input = dir.path().join("cases.bin");
        let output = dir.path().join("verdicts.bin");
        let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
        std::fs::write(&input, bytes).unwrap();
        let mut text = String::from(host_twin::PRELUDE);
        text.push_str(COMMON_CUH);
        text.push_str(TWIN_MAIN);
        let exe = host_twin::compile(&cxx, dir.path(), "gjk_twin", &text).unwrap();
        let status = std::process::Command::new(exe)
            .arg(&input)
            .arg(&output)
            .status()
            .expect("run the host twin");
        assert!(status.success(), "host twin failed ({status})");
        let got: Vec<u32> = std::fs::read(&output)
            .unwrap()
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        assert_eq!(got.len(), want.len());
        let bad: Vec<usize> = (0..cases.pairs.len())
            .filter(|&i| got[3 * i..3 * i + 3] != want[3 * i..3 * i + 3])
            .collect();
        eprintln!(
            "gjk host twin: {} pairs ({recovered} recovered stalls), {} differ",
            cases.pairs.len(),
            bad.len()
        );
        assert!(
            recovered > 0,
            "the cases should exercise the stall recovery"
        );
        assert!(
            bad.is_empty(),
            "{} pairs differ from the CPU (first #{}: cpu {:?}, twin {:?})",
            bad.len(),
            bad[0],
            &want[3 * bad[0]..3 * bad[0] + 3],
            &got[3 * bad[0]..3 * bad[0] + 3]
        );
    }
}
