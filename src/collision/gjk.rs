//! Conservative convex separation test (GJK distance iteration with a margin), in the
//! deterministic f32 arithmetic of [`super::detmath`]. Twin: `gmp_separated` in the kernels.
//!
//! The test answers "provably farther apart than `margin`": it returns `true` only when a
//! separating direction is found whose support gap exceeds the margin. Degenerate simplices,
//! NaN, stalls and the iteration cap all answer `false` (treated as touching): errors can only
//! err towards collision.

use super::detmath::{add, cross, dot, scale, sub, Xf, V3};

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
/// degenerate (NaN) arithmetic.
#[inline(always)]
fn closest_on_simplex(s: &mut [V3; 4], n: &mut usize) -> Option<V3> {
    match *n {
        1 => Some(s[0]),
        2 => Some(closest_segment(s, n)),
        3 => closest_triangle(s, n),
        _ => closest_tetrahedron(s, n),
    }
}

#[inline(always)]
fn closest_segment(s: &mut [V3; 4], n: &mut usize) -> V3 {
    let a = s[0];
    let b = s[1];
    let ab = sub(&b, &a);
    let denom = dot(&ab, &ab);
    let t = -dot(&a, &ab);
    if t <= 0.0 {
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
fn closest_triangle(s: &mut [V3; 4], n: &mut usize) -> Option<V3> {
    let a = s[0];
    let b = s[1];
    let c = s[2];
    let ab = sub(&b, &a);
    let ac = sub(&c, &a);
    let ap = [-a[0], -a[1], -a[2]];
    let d1 = dot(&ab, &ap);
    let d2 = dot(&ac, &ap);
    if d1 <= 0.0 && d2 <= 0.0 {
        *n = 1;
        return Some(a);
    }
    let bp = [-b[0], -b[1], -b[2]];
    let d3 = dot(&ab, &bp);
    let d4 = dot(&ac, &bp);
    if d3 >= 0.0 && d4 <= d3 {
        s[0] = b;
        *n = 1;
        return Some(b);
    }
    let vc = d1 * d4 - d3 * d2;
    if vc <= 0.0 && d1 >= 0.0 && d3 <= 0.0 {
        let v = d1 / (d1 - d3);
        *n = 2;
        return Some(add(&a, &scale(&ab, v)));
    }
    let cp = [-c[0], -c[1], -c[2]];
    let d5 = dot(&ab, &cp);
    let d6 = dot(&ac, &cp);
    if d6 >= 0.0 && d5 <= d6 {
        s[0] = c;
        *n = 1;
        return Some(c);
    }
    let vb = d5 * d2 - d1 * d6;
    if vb <= 0.0 && d2 >= 0.0 && d6 <= 0.0 {
        let w = d2 / (d2 - d6);
        s[1] = c;
        *n = 2;
        return Some(add(&a, &scale(&ac, w)));
    }
    let va = d3 * d6 - d5 * d4;
    if va <= 0.0 && (d4 - d3) >= 0.0 && (d5 - d6) >= 0.0 {
        let w = (d4 - d3) / ((d4 - d3) + (d5 - d6));
        s[0] = b;
        s[1] = c;
        *n = 2;
        return Some(add(&b, &scale(&sub(&c, &b), w)));
    }
    let sum = va + vb + vc;
    if sum.is_nan() || sum <= 0.0 {
        return None;
    }
    let v = vb / sum;
    let w = vc / sum;
    Some(add(&add(&a, &scale(&ab, v)), &scale(&ac, w)))
}

/// Closest point on a tetrahedron; `None` when the origin is inside (or degenerate).
#[inline(always)]
fn closest_tetrahedron(s: &mut [V3; 4], n: &mut usize) -> Option<V3> {
    // Faces as (three vertex indices, opposite vertex).
    const FACES: [[usize; 4]; 4] = [[0, 1, 2, 3], [0, 2, 3, 1], [0, 3, 1, 2], [1, 3, 2, 0]];
    let mut best: Option<(f32, [V3; 4], usize, V3)> = None;
    let mut outside_any = false;
    for f in FACES {
        let a = s[f[0]];
        let b = s[f[1]];
        let c = s[f[2]];
        let d = s[f[3]];
        let nrm = cross(&sub(&b, &a), &sub(&c, &a));
        let side_o = -dot(&a, &nrm);
        let side_d = dot(&sub(&d, &a), &nrm);
        if side_o * side_d < 0.0 {
            outside_any = true;
            let mut t = [a, b, c, [0.0; 3]];
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

/// True when shapes `a` and `b` are provably farther apart than `margin` (> 0).
/// `dir` is any initial direction (e.g. from b's centre to a's centre); `ca`, `cb` cache
/// hill-climbing start vertices.
pub fn separated(
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
        // No progress possible: the gap is not provably above the margin.
        if vv - vw <= vv * 1e-6 {
            return false;
        }
        if s[..n].contains(&w) {
            return false;
        }
        s[n] = w;
        n += 1;
        match closest_on_simplex(&mut s, &mut n) {
            Some(p) => v = p,
            None => return false,
        }
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
