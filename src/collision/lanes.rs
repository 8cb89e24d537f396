//! Eight configurations at a time for sphere models: the verdicts of
//! [`frames_valid`](super::frames_valid) for eight configurations computed side by side, one
//! configuration per lane of `[f32; 8]` arrays, which the compiler turns into vector
//! instructions (AVX2 registers where the CPU has them, see [`Isa`]).
//!
//! Why the verdicts are the same. Each lane computes, operation for operation, what the
//! scalar code computes for its configuration: the same `+ - * /` and `sqrt` in the same
//! order (IEEE-754 is correctly rounded whatever the vector width, and nothing is fused), the
//! same forward kinematics as [`frame_poses_fast`](super::frame_poses_fast), the same
//! polynomial sine and cosine (with a scalar fall-back for arguments where its fast floor does
//! not apply). What differs is only which tests are skipped, and a test is skipped only where
//! the scalar form ([`frames_valid_fast`](super::frames_valid_fast)) would skip it for that
//! configuration, or where every lane still being decided would.
//!
//! Which models. Only a robot made of spheres ([`RobotShapes::Spheres`]: every body a single
//! point inflated by its radius, with that sphere as its only covering sphere) in a scene
//! without convex meshes ([`eligible`]). There the verdict of a body and an
//! obstacle is exactly the bounding-sphere test (the narrow phase of a point against a box,
//! cylinder or sphere answers "in contact" at once) and that of a self pair the test of its
//! two spheres; meshes need GJK and stay on the scalar path.
//!
//! [`RobotShapes::Spheres`]: super::RobotShapes::Spheres

use super::detmath::{sincos, Xf, FRAC_2_PI, PIO2_HI, PIO2_LO, V3};
use super::fast::{BodyGroups, PairList, CULL_SLACK};
use super::model::{obstacle_kind, CollisionModel, ObstacleModel, SceneModel};
use super::sweep::{Sweep, NO_SWEEP};
use std::ops::{Add, Mul, Neg, Sub};

/// Configurations per call.
pub const LANES: usize = 8;

/// A set of lanes, bit `l` for lane `l`.
pub type Mask = u8;

/// Every lane.
pub const ALL: Mask = u8::MAX;

/// The lanes `0..count` (every lane for `count >= LANES`).
pub fn first_lanes(count: usize) -> Mask {
    if count >= LANES {
        ALL
    } else {
        (1u8 << count) - 1
    }
}

/// Eight `f32`, one per lane, with the operations the checks use, each the IEEE operation of
/// the scalar code applied lane by lane.
pub trait Lane8:
    Copy
    + Default
    + Add<Output = Self>
    + Sub<Output = Self>
    + Mul<Output = Self>
    + Neg<Output = Self>
    + Add<f32, Output = Self>
    + Sub<f32, Output = Self>
    + Mul<f32, Output = Self>
{
    /// The same value in every lane.
    fn splat(x: f32) -> Self;
    /// Lane `l` from `a[l]`.
    fn from_array(a: [f32; LANES]) -> Self;
    /// Lane `l` into element `l`.
    fn to_array(self) -> [f32; LANES];
    /// `f32::abs` per lane.
    fn abs(self) -> Self;
    /// `f32::sqrt` per lane.
    fn sqrt(self) -> Self;
    /// `x.max(0.0)` per lane (NaN gives 0).
    fn max0(self) -> Self;
    /// Lanes where `self <= b` (false where either is NaN).
    fn le(self, b: Self) -> Mask;
    /// Lanes where `self > b` is false (true where either is NaN).
    fn not_gt(self, b: Self) -> Mask;
    /// [`sincos`] per lane, bit for bit.
    fn sincos(self) -> (Self, Self);
}

/// Below this magnitude `floor` is the truncation corrected by one (see `floor_f32`).
const TRUNC_EXACT: f32 = 8_388_608.0;

/// The polynomials of [`sincos`] at `x` reduced by `k` quarter turns, before the quadrant
/// is applied, each `constant + product` of the scalar code written `product + constant`
/// (IEEE addition and multiplication are commutative: the same bits).
#[allow(clippy::excessive_precision)]
#[inline(always)]
fn sincos_poly<V: Lane8>(x: V, k: V) -> (V, V) {
    let r = (x - k * PIO2_HI) - k * PIO2_LO;
    let r2 = r * r;
    let ps = r2 * (r2 * (r2 * 2.755_732e-6 + -1.984_127e-4) + 8.333_333_3e-3) + -1.666_666_7e-1;
    let s = r + r * r2 * ps;
    let c =
        r2 * (r2 * (r2 * (r2 * 2.480_158_7e-5 + -1.388_888_9e-3) + 4.166_666_7e-2) + -0.5) + 1.0;
    (s, c)
}

/// Scalar [`sincos`] lane by lane (arguments where the fast floor does not apply).
#[inline(never)]
fn sincos_scalar<V: Lane8>(x: V) -> (V, V) {
    let xs = x.to_array();
    let mut s = [0.0; LANES];
    let mut c = [0.0; LANES];
    for l in 0..LANES {
        (s[l], c[l]) = sincos(xs[l]);
    }
    (V::from_array(s), V::from_array(c))
}

/// Eight lanes as a plain array: portable, vectorised as far as the compiler manages.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Arr8(pub [f32; LANES]);

impl Arr8 {
    #[inline(always)]
    fn map(self, f: impl Fn(f32) -> f32) -> Self {
        Arr8(self.0.map(f))
    }

    #[inline(always)]
    fn zip(self, b: Arr8, f: impl Fn(f32, f32) -> f32) -> Self {
        Arr8(std::array::from_fn(|l| f(self.0[l], b.0[l])))
    }

    #[inline(always)]
    fn mask(self, b: Arr8, f: impl Fn(f32, f32) -> bool) -> Mask {
        let mut m = 0u8;
        for l in 0..LANES {
            m |= u8::from(f(self.0[l], b.0[l])) << l;
        }
        m
    }
}

macro_rules! arr8_ops {
    ($($tr:ident $f:ident $op:tt),*) => {$(
        impl $tr for Arr8 {
            type Output = Arr8;
            #[inline(always)]
            fn $f(self, b: Arr8) -> Arr8 {
                self.zip(b, |x, y| x $op y)
            }
        }
        impl $tr<f32> for Arr8 {
            type Output = Arr8;
            #[inline(always)]
            fn $f(self, b: f32) -> Arr8 {
                self.map(|x| x $op b)
            }
        }
    )*};
}
arr8_ops!(Add add +, Sub sub -, Mul mul *);

impl Neg for Arr8 {
    type Output = Arr8;
    #[inline(always)]
    fn neg(self) -> Arr8 {
        self.map(|x| -x)
    }
}

impl Lane8 for Arr8 {
    #[inline(always)]
    fn splat(x: f32) -> Self {
        Arr8([x; LANES])
    }
    #[inline(always)]
    fn from_array(a: [f32; LANES]) -> Self {
        Arr8(a)
    }
    #[inline(always)]
    fn to_array(self) -> [f32; LANES] {
        self.0
    }
    #[inline(always)]
    fn abs(self) -> Self {
        self.map(f32::abs)
    }
    #[inline(always)]
    fn sqrt(self) -> Self {
        self.map(f32::sqrt)
    }
    #[inline(always)]
    fn max0(self) -> Self {
        self.map(|x| if x > 0.0 { x } else { 0.0 })
    }
    #[inline(always)]
    fn le(self, b: Self) -> Mask {
        self.mask(b, |x, y| x <= y)
    }
    #[inline(always)]
    fn not_gt(self, b: Self) -> Mask {
        self.mask(b, |x, y| {
            x.partial_cmp(&y) != Some(std::cmp::Ordering::Greater)
        })
    }
    #[inline(always)]
    fn sincos(self) -> (Self, Self) {
        let y = self * FRAC_2_PI + 0.5;
        if !y.0.iter().all(|v| v.abs() < TRUNC_EXACT) {
            return sincos_scalar(self);
        }
        let mut k = [0.0; LANES];
        let mut q = [0i32; LANES];
        for l in 0..LANES {
            let t = y.0[l] as i32;
            let below = t as f32 > y.0[l];
            k[l] = if below { t as f32 - 1.0 } else { t as f32 };
            q[l] = (if below { t - 1 } else { t }) & 3;
        }
        let (s, c) = sincos_poly(self, Arr8(k));
        let mut so = [0.0; LANES];
        let mut co = [0.0; LANES];
        for l in 0..LANES {
            let (sl, cl) = (s.0[l], c.0[l]);
            (so[l], co[l]) = match q[l] {
                0 => (sl, cl),
                1 => (cl, -sl),
                2 => (-sl, -cl),
                _ => (-cl, sl),
            };
        }
        (Arr8(so), Arr8(co))
    }
}

#[cfg(target_arch = "x86_64")]
pub use avx::Avx8;

#[cfg(target_arch = "x86_64")]
mod avx {
    //! Eight lanes in an AVX register. Every function here is inlined into the
    //! `#[target_feature(enable = "avx2")]` entry points of the parent module, which run only
    //! where the CPU has AVX2.
    use super::{sincos_poly, sincos_scalar, Lane8, Mask, FRAC_2_PI, LANES, TRUNC_EXACT};
    use std::arch::x86_64::*;
    use std::ops::{Add, Mul, Neg, Sub};

    /// Eight `f32` in an AVX register.
    #[derive(Clone, Copy, Debug)]
    pub struct Avx8(__m256);

    impl Default for Avx8 {
        #[inline(always)]
        fn default() -> Self {
            Avx8::splat(0.0)
        }
    }

    macro_rules! avx8_ops {
        ($($tr:ident $f:ident $intr:ident),*) => {$(
            impl $tr for Avx8 {
                type Output = Avx8;
                #[inline(always)]
                fn $f(self, b: Avx8) -> Avx8 {
                    // SAFETY: only reached where the CPU has AVX2 (see the module doc).
                    Avx8(unsafe { $intr(self.0, b.0) })
                }
            }
            impl $tr<f32> for Avx8 {
                type Output = Avx8;
                #[inline(always)]
                fn $f(self, b: f32) -> Avx8 {
                    self.$f(Avx8::splat(b))
                }
            }
        )*};
    }
    avx8_ops!(Add add _mm256_add_ps, Sub sub _mm256_sub_ps, Mul mul _mm256_mul_ps);

    impl Neg for Avx8 {
        type Output = Avx8;
        #[inline(always)]
        fn neg(self) -> Avx8 {
            // Flips the sign bit, as scalar negation does.
            // SAFETY: as above.
            Avx8(unsafe { _mm256_xor_ps(self.0, _mm256_set1_ps(-0.0)) })
        }
    }

    impl Lane8 for Avx8 {
        #[inline(always)]
        fn splat(x: f32) -> Self {
            // SAFETY: as above.
            Avx8(unsafe { _mm256_set1_ps(x) })
        }
        #[inline(always)]
        fn from_array(a: [f32; LANES]) -> Self {
            // SAFETY: as above; `a` holds eight f32.
            Avx8(unsafe { _mm256_loadu_ps(a.as_ptr()) })
        }
        #[inline(always)]
        fn to_array(self) -> [f32; LANES] {
            let mut a = [0.0; LANES];
            // SAFETY: as above; `a` holds eight f32.
            unsafe { _mm256_storeu_ps(a.as_mut_ptr(), self.0) };
            a
        }
        #[inline(always)]
        fn abs(self) -> Self {
            // Clears the sign bit, as `f32::abs` does.
            // SAFETY: as above.
            Avx8(unsafe { _mm256_andnot_ps(_mm256_set1_ps(-0.0), self.0) })
        }
        #[inline(always)]
        fn sqrt(self) -> Self {
            // SAFETY: as above.
            Avx8(unsafe { _mm256_sqrt_ps(self.0) })
        }
        #[inline(always)]
        fn max0(self) -> Self {
            // `x` where `x > 0`, else +0 (NaN included).
            // SAFETY: as above.
            Avx8(unsafe {
                _mm256_and_ps(
                    self.0,
                    _mm256_cmp_ps::<_CMP_GT_OQ>(self.0, _mm256_setzero_ps()),
                )
            })
        }
        #[inline(always)]
        fn le(self, b: Self) -> Mask {
            // SAFETY: as above.
            unsafe { _mm256_movemask_ps(_mm256_cmp_ps::<_CMP_LE_OQ>(self.0, b.0)) as Mask }
        }
        #[inline(always)]
        fn not_gt(self, b: Self) -> Mask {
            // SAFETY: as above.
            unsafe { _mm256_movemask_ps(_mm256_cmp_ps::<_CMP_NGT_UQ>(self.0, b.0)) as Mask }
        }
        #[inline(always)]
        fn sincos(self) -> (Self, Self) {
            let y = self * FRAC_2_PI + 0.5;
            // SAFETY: as above.
            unsafe {
                let small = _mm256_cmp_ps::<_CMP_LT_OQ>(y.abs().0, _mm256_set1_ps(TRUNC_EXACT));
                if _mm256_movemask_ps(small) != 0xff {
                    return sincos_scalar(self);
                }
                // floor: the truncation, one less where it lies above (|y| < 2^23: exact).
                let t = _mm256_cvttps_epi32(y.0);
                let tf = _mm256_cvtepi32_ps(t);
                let above = _mm256_cmp_ps::<_CMP_GT_OQ>(tf, y.0);
                let k = _mm256_sub_ps(tf, _mm256_and_ps(above, _mm256_set1_ps(1.0)));
                // The quadrant: (floor as i32) & 3, the mask being -1 where one was taken off.
                let q = _mm256_and_si256(
                    _mm256_add_epi32(t, _mm256_castps_si256(above)),
                    _mm256_set1_epi32(3),
                );
                let (s, c) = sincos_poly(self, Avx8(k));
                // Odd quadrants swap sine and cosine; quadrants 2 and 3 negate the sine,
                // quadrants 1 and 2 the cosine (sign-bit flips, as scalar negation).
                let one = _mm256_set1_epi32(1);
                let odd = _mm256_castsi256_ps(_mm256_cmpeq_epi32(_mm256_and_si256(q, one), one));
                let bs = _mm256_blendv_ps(s.0, c.0, odd);
                let bc = _mm256_blendv_ps(c.0, s.0, odd);
                let sign = _mm256_set1_epi32(i32::MIN);
                let neg_s = _mm256_and_si256(_mm256_slli_epi32::<30>(q), sign);
                let q1 = _mm256_add_epi32(q, one);
                let neg_c = _mm256_and_si256(_mm256_slli_epi32::<30>(q1), sign);
                (
                    Avx8(_mm256_xor_ps(bs, _mm256_castsi256_ps(neg_s))),
                    Avx8(_mm256_xor_ps(bc, _mm256_castsi256_ps(neg_c))),
                )
            }
        }
    }
}

/// A point per lane.
pub type P8<V> = [V; 3];

/// A rigid transform per lane ([`Xf`] with lane entries).
#[derive(Clone, Copy, Debug, Default)]
pub struct Xf8<V> {
    /// Rotation, row-major.
    pub r: [V; 9],
    /// Translation.
    pub t: P8<V>,
}

impl<V: Lane8> Xf8<V> {
    /// The same transform in every lane.
    #[inline(always)]
    pub fn splat(x: &Xf) -> Self {
        Xf8 {
            r: x.r.map(V::splat),
            t: x.t.map(V::splat),
        }
    }

    /// [`Xf::apply`] per lane for a point of the model.
    #[inline(always)]
    pub fn apply(&self, p: &V3) -> P8<V> {
        self.apply_lanes(&p.map(V::splat))
    }

    /// [`Xf::apply`] per lane for a lane point.
    #[inline(always)]
    fn apply_lanes(&self, p: &P8<V>) -> P8<V> {
        let r = &self.r;
        [
            r[0] * p[0] + r[1] * p[1] + r[2] * p[2] + self.t[0],
            r[3] * p[0] + r[4] * p[1] + r[5] * p[2] + self.t[1],
            r[6] * p[0] + r[7] * p[1] + r[8] * p[2] + self.t[2],
        ]
    }

    /// [`Xf::mul`] per lane.
    #[inline(always)]
    fn mul(&self, b: &Xf8<V>) -> Xf8<V> {
        let a = &self.r;
        let c = &b.r;
        let mut r = [V::default(); 9];
        for i in 0..3 {
            for j in 0..3 {
                r[i * 3 + j] = a[i * 3] * c[j] + a[i * 3 + 1] * c[3 + j] + a[i * 3 + 2] * c[6 + j];
            }
        }
        Xf8 {
            r,
            t: self.apply_lanes(&b.t),
        }
    }
}

/// [`Xf::apply_inv`] of a lane point by a transform of the model (products written
/// lane-first: the same bits).
#[inline(always)]
fn apply_inv<V: Lane8>(x: &Xf, p: &P8<V>) -> P8<V> {
    let d = [p[0] - x.t[0], p[1] - x.t[1], p[2] - x.t[2]];
    let r = &x.r;
    [
        d[0] * r[0] + d[1] * r[3] + d[2] * r[6],
        d[0] * r[1] + d[1] * r[4] + d[2] * r[7],
        d[0] * r[2] + d[1] * r[5] + d[2] * r[8],
    ]
}

/// `a . a` per lane, in the order of [`super::detmath::dot`].
#[inline(always)]
fn norm2<V: Lane8>(a: &P8<V>) -> V {
    a[0] * a[0] + a[1] * a[1] + a[2] * a[2]
}

#[inline(always)]
fn sub3<V: Lane8>(a: &P8<V>, b: &P8<V>) -> P8<V> {
    [a[0] - b[0], a[1] - b[1], a[2] - b[2]]
}

/// [`frame_poses_fast`](super::frame_poses_fast) per lane, entry for entry equal to it for
/// each lane's state. `state` holds every variable of the model's full state, per lane.
#[inline(always)]
fn frame_poses8<V: Lane8>(model: &CollisionModel, state: &[V], out: &mut Vec<Xf8<V>>) {
    out.clear();
    for f in &model.frames {
        // The products of a constant and a lane value are written lane-first: the same bits.
        let q = state[f.var as usize] * f.mult + f.offset;
        let a = &f.origin.r;
        let plane = match f.axis {
            [0.0, 0.0, 1.0] => Some((0, 1, 2)),
            [1.0, 0.0, 0.0] => Some((1, 2, 0)),
            [0.0, 1.0, 0.0] => Some((2, 0, 1)),
            _ => None,
        };
        let joint = if let (0, Some((u, v, w))) = (f.kind, plane) {
            let (s, c) = q.sincos();
            let e = (V::splat(1.0) - c) + c;
            let mut r = [V::default(); 9];
            for i in 0..3 {
                r[i * 3 + u] = c * a[i * 3 + u] + s * a[i * 3 + v];
                r[i * 3 + v] = -s * a[i * 3 + u] + c * a[i * 3 + v];
                r[i * 3 + w] = e * a[i * 3 + w];
            }
            Xf8 {
                r,
                t: f.origin.t.map(V::splat),
            }
        } else if f.kind == 0 {
            Xf8::splat(&f.origin).mul(&Xf8 {
                r: axis_angle8(&f.axis, q),
                t: [V::splat(0.0); 3],
            })
        } else {
            let p = [q * f.axis[0], q * f.axis[1], q * f.axis[2]];
            Xf8 {
                r: f.origin.r.map(V::splat),
                t: Xf8::splat(&f.origin).apply_lanes(&p),
            }
        };
        let world = if f.parent < 0 {
            joint
        } else {
            out[f.parent as usize].mul(&joint)
        };
        out.push(world);
    }
}

/// [`super::detmath::axis_angle`] per lane.
#[inline(always)]
fn axis_angle8<V: Lane8>(axis: &V3, angle: V) -> [V; 9] {
    let (s, c) = angle.sincos();
    let t = V::splat(1.0) - c;
    let (x, y, z) = (axis[0], axis[1], axis[2]);
    [
        t * x * x + c,
        t * x * y - s * z,
        t * x * z + s * y,
        t * x * y + s * z,
        t * y * y + c,
        t * y * z - s * x,
        t * x * z - s * y,
        t * y * z + s * x,
        t * z * z + c,
    ]
}

/// [`super::sphere_near_obstacle`] per lane: the lanes whose sphere `(c, r)` is not farther
/// than `margin` from the obstacle (none for a kind that test does not know).
#[inline(always)]
fn near8<V: Lane8>(c: &P8<V>, r: f32, o: &ObstacleModel, margin: f32) -> Mask {
    let reach = r + margin;
    let rr = V::splat(reach * reach);
    match o.kind {
        obstacle_kind::BOX => {
            let q = apply_inv(&o.pose, c);
            let ex = (q[0].abs() - o.params[0]).max0();
            let ey = (q[1].abs() - o.params[1]).max0();
            let ez = (q[2].abs() - o.params[2]).max0();
            (ex * ex + ey * ey + ez * ez).le(rr)
        }
        obstacle_kind::CYLINDER => {
            let q = apply_inv(&o.pose, c);
            let rad = (q[0] * q[0] + q[1] * q[1]).sqrt();
            let er = (rad - o.params[0]).max0();
            let ez = (q[2].abs() - o.params[1]).max0();
            (er * er + ez * ez).le(rr)
        }
        obstacle_kind::SPHERE => {
            let d = [c[0] - o.center[0], c[1] - o.center[1], c[2] - o.center[2]];
            let rs = reach + o.radius;
            norm2(&d).le(V::splat(rs * rs))
        }
        _ => 0,
    }
}

/// Whether the eight-lane checks give the verdicts of `frames_valid` for `model` in `scene`:
/// every body a sphere (one vertex, its own and only covering sphere) and no obstacle a
/// convex mesh.
pub fn eligible(model: &CollisionModel, scene: &SceneModel) -> bool {
    let spheres = model.bodies.iter().all(|b| {
        b.vert_count == 1
            && b.sphere_count == 1
            && model
                .spheres
                .get(b.sphere_start as usize)
                .is_some_and(|s| s[..3] == b.center[..] && s[3] == b.radius)
    });
    spheres
        && scene
            .obstacles
            .iter()
            .all(|o| o.kind != obstacle_kind::MESH)
}

/// The instructions to check `model` in `scene` with, eight configurations at a time
/// ([`Isa::best`]), or `None` where they are not [`eligible`].
pub fn best_for(model: &CollisionModel, scene: &SceneModel) -> Option<Isa> {
    eligible(model, scene).then(Isa::best)
}

/// Working space of the checks for one lane type.
#[derive(Clone, Debug, Default)]
struct Work<V> {
    /// Per variable of the full state: its value per lane.
    state: Vec<V>,
    /// The frames per lane.
    frames: Vec<Xf8<V>>,
    /// Per body: its centre per lane (valid for groups with `done`).
    centers: Vec<P8<V>>,
    /// Per group: its bodies' centres are computed.
    done: Vec<bool>,
    /// Per group: its sphere's centre per lane and grown radius (infinite: never left out).
    groups: Vec<(P8<V>, f32)>,
}

/// Scratch space of [`Lanes`] checks (no allocation once grown).
#[derive(Clone, Debug, Default)]
pub struct LaneScratch {
    /// Per variable of the full state: its value per lane.
    state: Vec<[f32; LANES]>,
    portable: Work<Arr8>,
    #[cfg(target_arch = "x86_64")]
    avx: Work<Avx8>,
}

/// The instruction set the lanes are computed with. Every choice gives the same bits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Isa {
    /// Plain arrays ([`Arr8`]), vectorised by the compiler for the baseline target.
    Portable,
    /// AVX2 registers ([`Avx8`]); only where the CPU has AVX2.
    #[cfg(target_arch = "x86_64")]
    Avx2,
}

impl Isa {
    /// The fastest the CPU supports (detected at run time).
    pub fn best() -> Isa {
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx2") {
            return Isa::Avx2;
        }
        Isa::Portable
    }

    /// Its name in reports.
    pub fn name(self) -> &'static str {
        match self {
            Isa::Portable => "portable",
            #[cfg(target_arch = "x86_64")]
            Isa::Avx2 => "avx2",
        }
    }
}

/// What the eight-lane checks of one robot in one scene read.
#[derive(Clone, Copy)]
pub struct Lanes<'a> {
    /// The robot, [`eligible`] with the scene.
    pub model: &'a CollisionModel,
    /// The obstacles.
    pub scene: &'a SceneModel,
    /// [`BodyGroups::new`] of the model.
    pub groups: &'a BodyGroups,
    /// [`BodyGroups::growth`] of no growth.
    pub rest_growth: &'a [f32],
    /// The instructions to compute with.
    pub isa: Isa,
}

/// Which verdicts a [`Lanes::check`] must decide.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Need {
    /// Every lane's, grown and (for the lanes failing grown) ungrown.
    Every,
    /// As far as a motion check needs them: whether some lane fails with no growth. The
    /// checks stop at the first test that shows one does (a test of the grown pass that also
    /// fires with the growth taken away, or any test of the ungrown pass), so the verdicts are
    /// [`Need::Every`]'s only in this sense:
    /// - `unswept` is nonzero exactly when [`Need::Every`]'s is, and then holds some of its
    ///   lanes (at least one), and `swept` some of the lanes failing grown;
    /// - where `unswept` is 0, `swept` is [`Need::Every`]'s.
    AnyUngrown,
}

/// The verdicts of one call of [`Lanes::check`], as lane masks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LaneVerdicts {
    /// Lanes whose configuration fails with the bodies grown.
    pub swept: Mask,
    /// Of those, the lanes that also fail with no growth (when the call grew the bodies;
    /// otherwise equal to `swept`).
    pub unswept: Mask,
}

impl Lanes<'_> {
    /// Checks the configurations `state(j, l)` (group joint `j` of lane `l`; the joints
    /// outside the group from the model's base state) of the lanes in `active` against
    /// `frames_valid`: with the bodies grown by `sweep` (`group_growth` its
    /// [`BodyGroups::growth`] of [`Sweep::bodies`]) and, for the lanes that fail grown, again with no growth
    /// (both on the same frames). `pairs` are the pairs visited, as in
    /// [`frames_valid_fast`](super::frames_valid_fast): a [`PairList::all`], or a
    /// [`PairList::for_motion_with`] of the motion every lane's configuration lies on, culled
    /// with growths at least `sweep`. `state` is asked only for the lanes of `active`.
    /// `need` says which verdicts the caller reads ([`Need`]).
    #[allow(clippy::too_many_arguments)]
    pub fn check(
        &self,
        state: impl Fn(usize, usize) -> f32,
        pairs: &PairList,
        sweep: &Sweep,
        group_growth: &[f32],
        active: Mask,
        need: Need,
        s: &mut LaneScratch,
    ) -> LaneVerdicts {
        if active == 0 {
            return LaneVerdicts::default();
        }
        self.fill_active(state, active, s);
        match need {
            Need::Every => self.dispatch::<false>(pairs, sweep, group_growth, active, s),
            Need::AnyUngrown => self.dispatch::<true>(pairs, sweep, group_growth, active, s),
        }
    }

    /// [`Self::run`] on the lane type of `self.isa`, `s.state` filled.
    fn dispatch<const ANY: bool>(
        &self,
        pairs: &PairList,
        sweep: &Sweep,
        group_growth: &[f32],
        active: Mask,
        s: &mut LaneScratch,
    ) -> LaneVerdicts {
        match self.isa {
            Isa::Portable => self.run::<Arr8, ANY>(
                &s.state,
                pairs,
                sweep,
                group_growth,
                active,
                &mut s.portable,
            ),
            #[cfg(target_arch = "x86_64")]
            // SAFETY: `Isa::Avx2` is chosen only where the CPU has AVX2 (`Isa::best`).
            Isa::Avx2 => unsafe {
                self.run_avx2::<ANY>(&s.state, pairs, sweep, group_growth, active, &mut s.avx)
            },
        }
    }

    /// The frames of the configurations `state(j, l)` (as in [`Self::check`]), lane by lane:
    /// what the checks compute them as, for tests against
    /// [`frame_poses_fast`](super::frame_poses_fast).
    pub fn frames(
        &self,
        state: impl Fn(usize, usize) -> f32,
        s: &mut LaneScratch,
    ) -> Vec<[Xf; LANES]> {
        self.fill_state(state, s);
        let to_xf = |x: &Xf8<[f32; LANES]>, l: usize| Xf {
            r: x.r.map(|v| v[l]),
            t: x.t.map(|v| v[l]),
        };
        let lanes = |frames: Vec<Xf8<[f32; LANES]>>| -> Vec<[Xf; LANES]> {
            frames
                .iter()
                .map(|x| std::array::from_fn(|l| to_xf(x, l)))
                .collect()
        };
        match self.isa {
            Isa::Portable => lanes(frames_as_arrays(self.model, &s.state, &mut s.portable)),
            #[cfg(target_arch = "x86_64")]
            // SAFETY: `Isa::Avx2` is chosen only where the CPU has AVX2 (`Isa::best`).
            Isa::Avx2 => lanes(unsafe { frames_as_arrays_avx2(self.model, &s.state, &mut s.avx) }),
        }
    }

    /// `s.state`: the base state in every lane with group joint `j` of lane `l` set to
    /// `state(j, l)`.
    fn fill_state(&self, state: impl Fn(usize, usize) -> f32, s: &mut LaneScratch) {
        self.fill_active(state, ALL, s)
    }

    /// [`Self::fill_state`] asking `state` only for the lanes of `active` (at least one);
    /// the other lanes repeat the first active lane's configuration (not reported).
    fn fill_active(&self, state: impl Fn(usize, usize) -> f32, active: Mask, s: &mut LaneScratch) {
        let first = active.trailing_zeros().min(LANES as u32 - 1) as usize;
        let lane = |l: usize| if active & (1 << l) != 0 { l } else { first };
        s.state.clear();
        s.state
            .extend(self.model.base_state.iter().map(|&v| [v; LANES]));
        for (j, &var) in self.model.group_vars.iter().enumerate() {
            if let Some(lanes) = s.state.get_mut(var as usize) {
                for (l, x) in lanes.iter_mut().enumerate() {
                    *x = state(j, lane(l));
                }
            }
        }
    }

    /// [`Self::run`] built for AVX2.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    fn run_avx2<const ANY: bool>(
        &self,
        state: &[[f32; LANES]],
        pairs: &PairList,
        sweep: &Sweep,
        group_growth: &[f32],
        active: Mask,
        w: &mut Work<Avx8>,
    ) -> LaneVerdicts {
        self.run::<Avx8, ANY>(state, pairs, sweep, group_growth, active, w)
    }

    /// The checks of [`Self::check`] for [`Need::Every`] (`ANY` false) or [`Need::AnyUngrown`]
    /// (`ANY` true).
    #[inline(always)]
    fn run<V: Lane8, const ANY: bool>(
        &self,
        state: &[[f32; LANES]],
        pairs: &PairList,
        sweep: &Sweep,
        group_growth: &[f32],
        active: Mask,
        w: &mut Work<V>,
    ) -> LaneVerdicts {
        pose(self.model, state, w);
        let mut hard = 0;
        let swept = self.in_collision::<V, ANY>(pairs, sweep, group_growth, active, w, &mut hard);
        if ANY && hard != 0 {
            return LaneVerdicts {
                swept,
                unswept: hard,
            };
        }
        let unswept = if swept != 0 && !sweep.is_empty() {
            // With no growth every test that fires is one of `hard`'s: with ANY the pass
            // stops at the first.
            self.in_collision::<V, ANY>(pairs, &NO_SWEEP, self.rest_growth, swept, w, &mut hard)
        } else {
            swept
        };
        LaneVerdicts { swept, unswept }
    }

    /// The lanes of `active` whose configuration (the frames in `w`, bodies grown by
    /// `sweep`) fails `frames_valid`, visiting `pairs` as
    /// [`frames_valid_fast`](super::frames_valid_fast) does and skipping a test only where
    /// that function would skip it for every lane still undecided.
    ///
    /// With `ANY`, a test that fires is made again with the bodies' growths taken away (the
    /// test of the ungrown pass over the same list: the same distance, the radii summed in
    /// the same order, `+ 0.0` for the growths being exact); where that fires too, its lanes
    /// go to `hard` and the pass ends there, returning the lanes found failing so far.
    #[inline(always)]
    fn in_collision<V: Lane8, const ANY: bool>(
        &self,
        pairs: &PairList,
        sweep: &Sweep,
        group_growth: &[f32],
        active: Mask,
        w: &mut Work<V>,
        hard: &mut Mask,
    ) -> Mask {
        let (model, groups) = (self.model, self.groups);
        let m = model.margin;
        w.centers.resize(model.bodies.len(), Default::default());
        w.done.clear();
        w.done.resize(groups.len(), false);
        w.groups.clear();
        for g in 0..groups.len() {
            let (frame, center, radius) = groups.sphere(g);
            let r = radius + group_growth.get(g).copied().unwrap_or(f32::INFINITY);
            if !groups.worth_testing(g) || r.is_nan() || r == f32::INFINITY {
                w.groups.push((Default::default(), f32::INFINITY));
            } else {
                w.groups.push((frame8(&w.frames, frame).apply(&center), r));
            }
        }
        // Lanes still undecided: a lane found in collision is not looked at again.
        let mut open = active;
        let mut from = 0usize;
        for &(g, slot, end) in &pairs.obstacle_blocks {
            let block = &pairs.obstacle[from..end as usize];
            from = end as usize;
            let (g, slot) = (g as usize, slot as usize);
            let (Some(&(gc, gr)), Some(o)) = (w.groups.get(g), self.scene.obstacles.get(slot))
            else {
                continue;
            };
            if gr < f32::INFINITY {
                // First the obstacle's bounding sphere (a few operations, leaves out about two
                // thirds of the blocks on the MBM scenes), with CULL_SLACK for the rounding:
                // a lane it leaves out has every point of the group's sphere farther than the
                // margin from the obstacle, so the test below would leave it out too.
                let rr = gr + o.radius + m + CULL_SLACK;
                if rr.is_finite()
                    && norm2(&sub3(&gc, &o.center.map(V::splat))).le(V::splat(rr * rr)) & open == 0
                {
                    continue;
                }
                if near8(&gc, gr, o, m) & open == 0 {
                    continue;
                }
            }
            group_centers8(model, groups, g, w);
            for &(bi, _) in block {
                let bi = bi as usize;
                let Some(b) = model.bodies.get(bi) else {
                    continue;
                };
                let e = sweep.body(bi);
                let hit = near8(&w.centers[bi], b.radius + e, o, m) & open;
                if ANY && hit != 0 {
                    // The ungrown pass's radius: `b.radius + 0.0`.
                    let h = near8(&w.centers[bi], b.radius, o, m) & hit;
                    if h != 0 {
                        *hard = h;
                        return (active & !open) | hit;
                    }
                }
                open &= !hit;
                if open == 0 {
                    return active;
                }
            }
        }
        let mut runs_from = 0usize;
        for &(ga, gb, runs_end) in &pairs.self_blocks {
            let runs = &pairs.self_runs[runs_from..runs_end as usize];
            let mut from = pairs.self_runs[..runs_from]
                .last()
                .map_or(0, |r| r.1 as usize);
            runs_from = runs_end as usize;
            let (ga, gb) = (ga as usize, gb as usize);
            let (Some(&(ca, ra)), Some(&(cb, rb))) = (w.groups.get(ga), w.groups.get(gb)) else {
                continue;
            };
            let rr = ra + rb + m;
            if rr < f32::INFINITY && norm2(&sub3(&ca, &cb)).not_gt(V::splat(rr * rr)) & open == 0 {
                continue;
            }
            group_centers8(model, groups, ga, w);
            group_centers8(model, groups, gb, w);
            // Every pair of the block is between these two groups' frames: one column of growths.
            let col = sweep.column(groups.sphere(ga).0, groups.sphere(gb).0);
            for &(ia, end) in runs {
                let partners = &pairs.self_partners[from..end as usize];
                from = end as usize;
                let ia = ia as usize;
                let Some(ba) = model.bodies.get(ia) else {
                    continue;
                };
                // Grown by its whole sweep: no less than in any of its self pairs.
                let ea = sweep.body(ia);
                let ca = w.centers[ia];
                let rr = ba.radius + ea + rb + m;
                if rr < f32::INFINITY
                    && ea >= 0.0
                    && norm2(&sub3(&ca, &cb)).not_gt(V::splat(rr * rr)) & open == 0
                {
                    continue;
                }
                // Its growth in its pairs with this block (the same for every partner).
                let ea = sweep.side(ia, col);
                for &ib in partners {
                    let ib = ib as usize;
                    let Some(bb) = model.bodies.get(ib) else {
                        continue;
                    };
                    let eb = sweep.side(ib, col);
                    let r0 = ba.radius + bb.radius + m;
                    let rr = r0 + ea + eb;
                    let d2 = norm2(&sub3(&ca, &w.centers[ib]));
                    let hit = d2.le(V::splat(rr * rr)) & open;
                    if ANY && hit != 0 {
                        // The ungrown pass's reach: `r0 + 0.0 + 0.0`.
                        let h = d2.le(V::splat(r0 * r0)) & hit;
                        if h != 0 {
                            *hard = h;
                            return (active & !open) | hit;
                        }
                    }
                    open &= !hit;
                    if open == 0 {
                        return active;
                    }
                }
            }
        }
        active & !open
    }
}

/// [`frame_poses8`] of `state` (per variable, per lane) into `w.frames`.
#[inline(always)]
fn pose<V: Lane8>(model: &CollisionModel, state: &[[f32; LANES]], w: &mut Work<V>) {
    w.state.clear();
    w.state.extend(state.iter().map(|a| V::from_array(*a)));
    frame_poses8(model, &w.state, &mut w.frames);
}

/// [`frame_poses8`] into `w.frames`, returned as arrays per lane.
fn frames_as_arrays<V: Lane8>(
    model: &CollisionModel,
    state: &[[f32; LANES]],
    w: &mut Work<V>,
) -> Vec<Xf8<[f32; LANES]>> {
    pose(model, state, w);
    w.frames
        .iter()
        .map(|x| Xf8 {
            r: x.r.map(V::to_array),
            t: x.t.map(V::to_array),
        })
        .collect()
}

/// [`frames_as_arrays`] built for AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn frames_as_arrays_avx2(
    model: &CollisionModel,
    state: &[[f32; LANES]],
    w: &mut Work<Avx8>,
) -> Vec<Xf8<[f32; LANES]>> {
    frames_as_arrays(model, state, w)
}

/// Computes the centres of group `g`'s bodies per lane (once per check).
#[inline(always)]
fn group_centers8<V: Lane8>(
    model: &CollisionModel,
    groups: &BodyGroups,
    g: usize,
    w: &mut Work<V>,
) {
    if w.done[g] {
        return;
    }
    let xf = frame8(&w.frames, groups.sphere(g).0);
    for &bi in groups.bodies(g) {
        if let Some(b) = model.bodies.get(bi as usize) {
            w.centers[bi as usize] = xf.apply(&b.center);
        }
    }
    w.done[g] = true;
}

#[inline(always)]
fn frame8<V: Lane8>(frames: &[Xf8<V>], f: i32) -> Xf8<V> {
    if f < 0 {
        Xf8::splat(&Xf::IDENTITY)
    } else {
        frames[f as usize]
    }
}
