//! Small geometric value types of the dynamic roadmap, stored in flat `Vec`s of plain
//! `#[repr(C)]` structs (the layout a GPU kernel would read), and the conservative tests on
//! them: oriented boxes (separating-axis test), capsules against spheres, and a flat BVH.
//!
//! Tolerances: every "disjoint" verdict needs a gap larger than a tolerance proportional to
//! the size of the numbers involved (f32 rounding), every "overlap" verdict a penetration,
//! so rounding can only turn an answer into "don't know".

use crate::collision::detmath::V3;

/// Relative tolerance of the separating-axis test (f32 rounding of a few operations,
/// generously rounded up).
const SAT_REL_TOL: f32 = 1e-5;

/// An oriented box: centre `c`, axes the columns of the row-major rotation `r`, half extents
/// `h` along them.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Obb {
    /// Centre (world).
    pub c: V3,
    /// Row-major rotation; column `i` is axis `i` in the world.
    pub r: [f32; 9],
    /// Half extents along the axes.
    pub h: V3,
}

/// An axis-aligned box `[lo, hi]`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Aabb {
    /// Lower corner.
    pub lo: V3,
    /// Upper corner.
    pub hi: V3,
}

impl Aabb {
    /// The empty box (grows with [`Aabb::grow`]).
    pub const EMPTY: Aabb = Aabb {
        lo: [f32::INFINITY; 3],
        hi: [f32::NEG_INFINITY; 3],
    };

    /// Grows the box to hold `other`.
    pub fn grow(&mut self, other: &Aabb) {
        for k in 0..3 {
            self.lo[k] = self.lo[k].min(other.lo[k]);
            self.hi[k] = self.hi[k].max(other.hi[k]);
        }
    }

    /// True when the closed boxes share a point.
    pub fn overlaps(&self, other: &Aabb) -> bool {
        (0..3).all(|k| self.lo[k] <= other.hi[k] && other.lo[k] <= self.hi[k])
    }

    /// Centre along axis `k`.
    fn mid(&self, k: usize) -> f32 {
        0.5 * (self.lo[k] + self.hi[k])
    }
}

/// A capsule: every point within `r` of the segment `a`-`b` (a sphere when `a == b`).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Capsule {
    /// First end of the axis.
    pub a: V3,
    /// Second end of the axis.
    pub b: V3,
    /// Radius.
    pub r: f32,
}

/// A sphere `(x, y, z, r)`.
pub type Ball = [f32; 4];

#[inline(always)]
fn dot(a: &V3, b: &V3) -> f32 {
    a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
}

#[inline(always)]
fn sub(a: &V3, b: &V3) -> V3 {
    [a[0] - b[0], a[1] - b[1], a[2] - b[2]]
}

#[inline(always)]
fn cross(a: &V3, b: &V3) -> V3 {
    [
        a[1] * b[2] - a[2] * b[1],
        a[2] * b[0] - a[0] * b[2],
        a[0] * b[1] - a[1] * b[0],
    ]
}

impl Obb {
    /// Axis `i` (a unit column of `r`).
    #[inline(always)]
    pub fn axis(&self, i: usize) -> V3 {
        [self.r[i], self.r[3 + i], self.r[6 + i]]
    }

    /// The axis-aligned box `[lo, hi]` as an oriented box.
    pub fn from_aabb(b: &Aabb) -> Obb {
        Obb {
            c: [b.mid(0), b.mid(1), b.mid(2)],
            r: [1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0],
            h: [
                0.5 * (b.hi[0] - b.lo[0]),
                0.5 * (b.hi[1] - b.lo[1]),
                0.5 * (b.hi[2] - b.lo[2]),
            ],
        }
    }

    /// Half the extent of the box along direction `l` (summed left to right, as the CUDA
    /// twin `gmp_obb_reach` in `kernels/drm.cu` does).
    #[inline(always)]
    fn reach(&self, l: &V3) -> f32 {
        let s0 = self.h[0] * dot(&self.axis(0), l).abs();
        let s1 = self.h[1] * dot(&self.axis(1), l).abs();
        let s2 = self.h[2] * dot(&self.axis(2), l).abs();
        (s0 + s1) + s2
    }

    /// A world box containing this one (rounded outwards by a relative tolerance). Twin:
    /// `gmp_obb_aabb`.
    #[inline]
    pub fn aabb(&self) -> Aabb {
        let mut out = Aabb::EMPTY;
        for k in 0..3 {
            let e = (self.r[3 * k].abs() * self.h[0] + self.r[3 * k + 1].abs() * self.h[1])
                + self.r[3 * k + 2].abs() * self.h[2];
            let tol = SAT_REL_TOL * (self.c[k].abs() + e);
            out.lo[k] = self.c[k] - e - tol;
            out.hi[k] = self.c[k] + e + tol;
        }
        out
    }
}

/// True when axis `l` separates the projections of the boxes `a` and `b` (`t` = centre of
/// `b` minus centre of `a`) by more than a rounding allowance.
///
/// `l` is not normalised: the projections of `t` and of the boxes all scale with `|l|`
/// while the allowance does not, so for `|l| <= 1` (face axes are unit and cross products
/// of unit axes shorter, up to f32 rounding) the test is only stricter than on the unit
/// axis. The allowance covers the rounding of the dot products: relative to the centre
/// distance (`scale`), the extents (`hsum`, the sum of both boxes' half extents) and the
/// projected extents (`s`), plus an absolute floor. A NaN or zero axis separates nothing.
#[inline(always)]
fn separates(a: &Obb, b: &Obb, t: &V3, scale: f32, hsum: f32, l: &V3) -> bool {
    let d = dot(t, l).abs();
    let s = a.reach(l) + b.reach(l);
    d > s + SAT_REL_TOL * ((scale + hsum) + s) + 1e-7
}

/// True when the two boxes are provably disjoint: some of the 15 candidate axes separates
/// their projections by more than a rounding allowance (see `separates`). `false` means
/// "may touch". Twin: `gmp_obb_disjoint` in `kernels/drm.cu` (same f32 operations in the same
/// order; the order in which axes are tried does not change the answer).
pub fn obb_disjoint(a: &Obb, b: &Obb) -> bool {
    let t = sub(&b.c, &a.c);
    let scale = (t[0].abs() + t[1].abs()) + t[2].abs();
    let hsum = ((a.h[0] + a.h[1]) + a.h[2]) + ((b.h[0] + b.h[1]) + b.h[2]);
    for i in 0..3 {
        if separates(a, b, &t, scale, hsum, &a.axis(i))
            || separates(a, b, &t, scale, hsum, &b.axis(i))
        {
            return true;
        }
    }
    for i in 0..3 {
        for j in 0..3 {
            if separates(a, b, &t, scale, hsum, &cross(&a.axis(i), &b.axis(j))) {
                return true;
            }
        }
    }
    false
}

/// Squared distance from `p` to the segment `a`-`b` (twin: `gmp_point_segment_dist2`).
#[inline]
pub fn point_segment_dist2(p: &V3, a: &V3, b: &V3) -> f32 {
    let ab = sub(b, a);
    let ap = sub(p, a);
    let l2 = dot(&ab, &ab);
    // `clamp` keeps a NaN (the CUDA twin writes the comparisons out to do the same).
    let t = if l2 > 0.0 {
        (dot(&ap, &ab) / l2).clamp(0.0, 1.0)
    } else {
        0.0
    };
    let q = [a[0] + ab[0] * t, a[1] + ab[1] * t, a[2] + ab[2] * t];
    let d = sub(p, &q);
    dot(&d, &d)
}

/// True when the capsule and the ball provably share a point deeper than `depth` inside
/// both (their axis-to-centre distance is below `r_cap + r_ball - depth`, with a rounding
/// tolerance taken off). Twin: `gmp_capsule_hits_ball`.
#[inline]
pub fn capsule_hits_ball(c: &Capsule, ball: &Ball, depth: f32) -> bool {
    let p = [ball[0], ball[1], ball[2]];
    let reach = c.r + ball[3] - depth;
    if reach <= 0.0 {
        return false;
    }
    let d2 = point_segment_dist2(&p, &c.a, &c.b);
    let scale = p[0].abs() + p[1].abs() + p[2].abs() + c.a[0].abs() + c.a[1].abs() + c.a[2].abs();
    let r = reach - SAT_REL_TOL * scale;
    r > 0.0 && d2 < r * r
}

/// True when the capsule's bounding box (its axis' box grown by its radius) meets `b`: the
/// cheap reject before the capsule is tested against an obstacle's inner balls. Twin:
/// `gmp_capsule_near_box`.
#[inline]
pub fn capsule_near_box(c: &Capsule, b: &Aabb) -> bool {
    (0..3).all(|k| c.a[k].min(c.b[k]) - c.r <= b.hi[k] && c.a[k].max(c.b[k]) + c.r >= b.lo[k])
}

/// A bounding-volume hierarchy over boxes, in flat arrays: node `i` has box `boxes[i]`; an
/// inner node has children `left[i]` and `right[i]`; a leaf (`count[i] > 0`) covers
/// `items[first[i]..first[i] + count[i]]`, whose boxes `item_boxes` holds in the same order
/// (a leaf reads one contiguous run). Built by median splits along the longest axis,
/// deterministic for a given input.
#[derive(Clone, Debug, Default)]
pub struct Bvh {
    boxes: Vec<Aabb>,
    left: Vec<u32>,
    right: Vec<u32>,
    first: Vec<u32>,
    count: Vec<u32>,
    items: Vec<u32>,
    item_boxes: Vec<Aabb>,
}

const LEAF_SIZE: usize = 8;

impl Bvh {
    /// Builds a hierarchy over `boxes` (item `i` is `boxes[i]`).
    pub fn build(boxes: &[Aabb]) -> Bvh {
        let mut bvh = Bvh {
            items: (0..boxes.len() as u32).collect(),
            ..Bvh::default()
        };
        if boxes.is_empty() {
            return bvh;
        }
        // Explicit stack of (node, start, end) to build without recursion.
        bvh.push_node();
        let mut stack = vec![(0usize, 0usize, boxes.len())];
        while let Some((node, start, end)) = stack.pop() {
            let mut bb = Aabb::EMPTY;
            for &it in &bvh.items[start..end] {
                bb.grow(&boxes[it as usize]);
            }
            bvh.boxes[node] = bb;
            if end - start <= LEAF_SIZE {
                bvh.first[node] = start as u32;
                bvh.count[node] = (end - start) as u32;
                continue;
            }
            let axis = (0..3)
                .max_by(|&x, &y| (bb.hi[x] - bb.lo[x]).total_cmp(&(bb.hi[y] - bb.lo[y])))
                .unwrap_or(0);
            let mid = start + (end - start) / 2;
            bvh.items[start..end].select_nth_unstable_by(mid - start, |&p, &q| {
                boxes[p as usize]
                    .mid(axis)
                    .total_cmp(&boxes[q as usize].mid(axis))
                    .then(p.cmp(&q))
            });
            let l = bvh.push_node();
            let r = bvh.push_node();
            bvh.left[node] = l as u32;
            bvh.right[node] = r as u32;
            stack.push((l, start, mid));
            stack.push((r, mid, end));
        }
        bvh.item_boxes = bvh.items.iter().map(|&i| boxes[i as usize]).collect();
        bvh
    }

    fn push_node(&mut self) -> usize {
        self.boxes.push(Aabb::EMPTY);
        self.left.push(0);
        self.right.push(0);
        self.first.push(0);
        self.count.push(0);
        self.boxes.len() - 1
    }

    /// Calls `f` for every item whose box overlaps `query` (each once, in no particular
    /// order).
    pub fn query(&self, query: &Aabb, mut f: impl FnMut(u32)) {
        if self.boxes.is_empty() {
            return;
        }
        let mut stack = Vec::with_capacity(64);
        stack.push(0u32);
        while let Some(n) = stack.pop() {
            let n = n as usize;
            if !self.boxes[n].overlaps(query) {
                continue;
            }
            if self.count[n] > 0 {
                let s = self.first[n] as usize;
                let e = s + self.count[n] as usize;
                for (b, &it) in self.item_boxes[s..e].iter().zip(&self.items[s..e]) {
                    if b.overlaps(query) {
                        f(it);
                    }
                }
            } else {
                stack.push(self.right[n]);
                stack.push(self.left[n]);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rot_z(a: f32) -> [f32; 9] {
        let (s, c) = a.sin_cos();
        [c, -s, 0.0, s, c, 0.0, 0.0, 0.0, 1.0]
    }

    #[test]
    fn sat_separates_and_keeps_touching_boxes() {
        let a = Obb {
            c: [0.0; 3],
            r: rot_z(0.0),
            h: [1.0, 1.0, 1.0],
        };
        let mut b = Obb {
            c: [2.5, 0.0, 0.0],
            r: rot_z(0.3),
            h: [1.0, 0.2, 0.2],
        };
        // Rotated by 0.3 the box reaches cos(0.3) + 0.2 sin(0.3) ~ 1.014 towards a.
        assert!(obb_disjoint(&a, &b));
        b.c[0] = 2.0;
        assert!(!obb_disjoint(&a, &b));
        b.c = [2.0 + 1e-6, 0.0, 0.0];
        b.r = rot_z(0.0);
        assert!(!obb_disjoint(&a, &b), "touching faces are not disjoint");
    }

    #[test]
    fn capsule_ball_needs_depth() {
        let c = Capsule {
            a: [0.0; 3],
            b: [1.0, 0.0, 0.0],
            r: 0.1,
        };
        assert!(capsule_hits_ball(&c, &[0.5, 0.25, 0.0, 0.2], 0.01));
        assert!(!capsule_hits_ball(&c, &[0.5, 0.3, 0.0, 0.2], 0.01));
        assert!(!capsule_hits_ball(&c, &[1.35, 0.0, 0.0, 0.2], 0.01));
    }

    #[test]
    fn bvh_finds_exactly_the_overlapping_boxes() {
        let boxes: Vec<Aabb> = (0..100)
            .map(|i| {
                let x = (i % 10) as f32;
                let y = (i / 10) as f32;
                Aabb {
                    lo: [x, y, 0.0],
                    hi: [x + 0.5, y + 0.5, 1.0],
                }
            })
            .collect();
        let bvh = Bvh::build(&boxes);
        let q = Aabb {
            lo: [2.2, 3.2, 0.5],
            hi: [4.1, 4.6, 0.6],
        };
        let mut got = Vec::new();
        bvh.query(&q, |i| got.push(i));
        got.sort_unstable();
        let want: Vec<u32> = (0..100u32)
            .filter(|&i| boxes[i as usize].overlaps(&q))
            .collect();
        assert_eq!(got, want);
        assert!(!want.is_empty());
    }
}
