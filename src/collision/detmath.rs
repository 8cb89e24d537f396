//! Deterministic f32 arithmetic shared, operation for operation, with the CUDA kernels
//! (`kernels/common.cuh`). Only `+ - * /`, `sqrt` and `floor` are used — IEEE-754 correctly
//! rounded on both sides — never fused multiply-add (Rust never fuses; the kernels are built
//! with `--fmad=false`) and never the platform `sin`/`cos`, whose results differ between libm
//! and CUDA. Every expression here is written in the same order in the `.cuh` twin.

// The polynomial coefficients are written exactly as in the kernels (the same literal rounds to
// the same f32 in both compilers).
#![allow(clippy::excessive_precision)]

/// A rigid transform as a row-major 3x3 rotation `r` and a translation `t`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Xf {
    /// Rotation, row-major.
    pub r: [f32; 9],
    /// Translation.
    pub t: [f32; 3],
}

/// A 3-vector.
pub type V3 = [f32; 3];

impl Xf {
    /// The identity transform.
    pub const IDENTITY: Xf = Xf {
        r: [1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0],
        t: [0.0; 3],
    };

    /// Converts an f64 isometry (rounding each entry once).
    pub fn from_isometry(iso: &nalgebra::Isometry3<f64>) -> Self {
        let m = iso.rotation.to_rotation_matrix();
        let mut r = [0.0f32; 9];
        for i in 0..3 {
            for j in 0..3 {
                r[i * 3 + j] = m[(i, j)] as f32;
            }
        }
        let v = iso.translation.vector;
        Xf {
            r,
            t: [v.x as f32, v.y as f32, v.z as f32],
        }
    }

    /// `self * p` for a point.
    #[inline(always)]
    pub fn apply(&self, p: &V3) -> V3 {
        let r = &self.r;
        [
            r[0] * p[0] + r[1] * p[1] + r[2] * p[2] + self.t[0],
            r[3] * p[0] + r[4] * p[1] + r[5] * p[2] + self.t[1],
            r[6] * p[0] + r[7] * p[1] + r[8] * p[2] + self.t[2],
        ]
    }

    /// `R * v` for a direction.
    #[inline(always)]
    pub fn rotate(&self, v: &V3) -> V3 {
        let r = &self.r;
        [
            r[0] * v[0] + r[1] * v[1] + r[2] * v[2],
            r[3] * v[0] + r[4] * v[1] + r[5] * v[2],
            r[6] * v[0] + r[7] * v[1] + r[8] * v[2],
        ]
    }

    /// `R^T * v` (a world direction expressed in this frame).
    #[inline(always)]
    pub fn rotate_inv(&self, v: &V3) -> V3 {
        let r = &self.r;
        [
            r[0] * v[0] + r[3] * v[1] + r[6] * v[2],
            r[1] * v[0] + r[4] * v[1] + r[7] * v[2],
            r[2] * v[0] + r[5] * v[1] + r[8] * v[2],
        ]
    }

    /// `R^T * (p - t)` (a world point expressed in this frame).
    #[inline(always)]
    pub fn apply_inv(&self, p: &V3) -> V3 {
        let d = [p[0] - self.t[0], p[1] - self.t[1], p[2] - self.t[2]];
        self.rotate_inv(&d)
    }

    /// Composition `self * b`.
    #[inline(always)]
    pub fn mul(&self, b: &Xf) -> Xf {
        let a = &self.r;
        let c = &b.r;
        let mut r = [0.0f32; 9];
        for i in 0..3 {
            for j in 0..3 {
                r[i * 3 + j] = a[i * 3] * c[j] + a[i * 3 + 1] * c[3 + j] + a[i * 3 + 2] * c[6 + j];
            }
        }
        Xf {
            r,
            t: self.apply(&b.t),
        }
    }
}

/// The scalars the vector helpers below work on: `f32` (everything the kernels share) and
/// `f64` (the GJK stall recovery in [`super::gjk`], `gmp_separated_finish` in the kernels).
/// Both are IEEE-754 with correctly rounded `+ - * /`, so each helper gives the same bits as
/// its kernel twin for either type.
pub trait Real:
    Copy
    + PartialOrd
    + std::ops::Add<Output = Self>
    + std::ops::Sub<Output = Self>
    + std::ops::Mul<Output = Self>
    + std::ops::Div<Output = Self>
    + std::ops::Neg<Output = Self>
{
    /// Zero.
    const ZERO: Self;
    /// NaN test.
    fn is_nan(self) -> bool;
}

impl Real for f32 {
    const ZERO: f32 = 0.0;
    #[inline(always)]
    fn is_nan(self) -> bool {
        f32::is_nan(self)
    }
}

impl Real for f64 {
    const ZERO: f64 = 0.0;
    #[inline(always)]
    fn is_nan(self) -> bool {
        f64::is_nan(self)
    }
}

/// `a . b`.
#[inline(always)]
pub fn dot<S: Real>(a: &[S; 3], b: &[S; 3]) -> S {
    a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
}

/// `a - b`.
#[inline(always)]
pub fn sub<S: Real>(a: &[S; 3], b: &[S; 3]) -> [S; 3] {
    [a[0] - b[0], a[1] - b[1], a[2] - b[2]]
}

/// `a + b`.
#[inline(always)]
pub fn add<S: Real>(a: &[S; 3], b: &[S; 3]) -> [S; 3] {
    [a[0] + b[0], a[1] + b[1], a[2] + b[2]]
}

/// `a * s`.
#[inline(always)]
pub fn scale<S: Real>(a: &[S; 3], s: S) -> [S; 3] {
    [a[0] * s, a[1] * s, a[2] * s]
}

/// `a x b`.
#[inline(always)]
pub fn cross<S: Real>(a: &[S; 3], b: &[S; 3]) -> [S; 3] {
    [
        a[1] * b[2] - a[2] * b[1],
        a[2] * b[0] - a[0] * b[2],
        a[0] * b[1] - a[1] * b[0],
    ]
}

pub(super) const FRAC_2_PI: f32 = std::f32::consts::FRAC_2_PI;
// pi/2 split so that k * PIO2_HI is exact for |k| < 2^16 (PIO2_HI has 8 significant bits);
// PIO2_LO is the f32 nearest to pi/2 - PIO2_HI (residual 2.6e-12).
pub(super) const PIO2_HI: f32 = 1.570_312_5;
pub(super) const PIO2_LO: f32 = 4.838_267_9e-4;

/// `x.floor()`, computed inline (without SSE4.1 `f32::floor` is a call into libm, a
/// noticeable part of the forward kinematics). Bit for bit `x.floor()` for every input but
/// `-0.0` (answered `+0.0`; `sincos` never floors a zero of either sign: `y + 0.5` is never
/// `-0.0`).
#[inline(always)]
pub fn floor_f32(x: f32) -> f32 {
    // Below 2^23 in magnitude the truncation fits an i32 and is exact; above, every f32 is
    // an integer (and NaN or infinity go to `floor` as well).
    if x.abs() < 8_388_608.0 {
        let t = x as i32 as f32;
        if t > x {
            t - 1.0
        } else {
            t
        }
    } else {
        x.floor()
    }
}

/// Sine and cosine with explicit range reduction and Taylor polynomials (|error| < 2e-6 for
/// |x| < 1000). Identical, bit for bit, to `gmp_sincos` in the kernels.
#[inline(always)]
pub fn sincos(x: f32) -> (f32, f32) {
    let k = floor_f32(x * FRAC_2_PI + 0.5);
    let r = (x - k * PIO2_HI) - k * PIO2_LO;
    let r2 = r * r;
    // sin r = r - r^3/3! + r^5/5! - r^7/7! + r^9/9!
    let s = r + r
        * r2
        * (-1.666_666_7e-1 + r2 * (8.333_333_3e-3 + r2 * (-1.984_127e-4 + r2 * 2.755_732e-6)));
    // cos r = 1 - r^2/2! + r^4/4! - r^6/6! + r^8/8!
    let c =
        1.0 + r2 * (-0.5 + r2 * (4.166_666_7e-2 + r2 * (-1.388_888_9e-3 + r2 * 2.480_158_7e-5)));
    let q = (k as i32) & 3;
    match q {
        0 => (s, c),
        1 => (c, -s),
        2 => (-s, -c),
        _ => (-c, s),
    }
}

/// Rotation by `angle` about the unit `axis` (Rodrigues), row-major.
#[inline(always)]
pub fn axis_angle(axis: &V3, angle: f32) -> [f32; 9] {
    let (s, c) = sincos(angle);
    let t = 1.0 - c;
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sincos_is_accurate() {
        let mut x = -40.0f32;
        while x < 40.0 {
            let (s, c) = sincos(x);
            let (es, ec) = (x as f64).sin_cos();
            assert!(
                (s as f64 - es).abs() < 2e-6,
                "sin({x}) = {s}, expected {es}"
            );
            assert!(
                (c as f64 - ec).abs() < 2e-6,
                "cos({x}) = {c}, expected {ec}"
            );
            x += 0.0137;
        }
    }

    #[test]
    fn inline_floor_is_floor() {
        let mut specials = vec![
            0.0f32,
            0.5,
            -0.5,
            1.0,
            -1.0,
            0.999_999_94,
            -0.999_999_94,
            1.000_000_1,
            -1.000_000_1,
            8_388_607.5,
            -8_388_607.5,
            8_388_608.0,
            -8_388_608.0,
            1e9,
            -1e9,
            f32::MAX,
            f32::MIN,
            f32::MIN_POSITIVE,
            -f32::MIN_POSITIVE,
            f32::INFINITY,
            f32::NEG_INFINITY,
        ];
        // Every f32 step around the integers up to a few hundred.
        for k in (-300..300).filter(|&k| k != 0) {
            let mut x = k as f32 - 0.01;
            while x < k as f32 + 0.01 {
                specials.push(x);
                x = f32::from_bits(if x >= 0.0 {
                    x.to_bits() + 97
                } else {
                    x.to_bits() - 97
                });
            }
        }
        for x in specials {
            assert_eq!(floor_f32(x).to_bits(), x.floor().to_bits(), "floor({x})");
        }
        assert!(floor_f32(f32::NAN).is_nan());
        assert_eq!(floor_f32(-0.0), 0.0);
    }

    #[test]
    fn compose_matches_nalgebra() {
        use nalgebra::{Isometry3, Vector3};
        let a = Isometry3::new(Vector3::new(0.1, -0.2, 0.3), Vector3::new(0.3, 0.2, -0.5));
        let b = Isometry3::new(Vector3::new(-0.4, 0.5, 0.25), Vector3::new(-0.1, 0.7, 0.2));
        let c = Xf::from_isometry(&a).mul(&Xf::from_isometry(&b));
        let e = Xf::from_isometry(&(a * b));
        for i in 0..9 {
            assert!((c.r[i] - e.r[i]).abs() < 1e-6);
        }
        for i in 0..3 {
            assert!((c.t[i] - e.t[i]).abs() < 1e-6);
        }
        let p = [0.3f32, -0.7, 1.1];
        let back = c.apply_inv(&c.apply(&p));
        for i in 0..3 {
            assert!((back[i] - p[i]).abs() < 1e-5);
        }
    }

    #[test]
    fn axis_angle_rotates_x_to_y() {
        let r = axis_angle(&[0.0, 0.0, 1.0], std::f32::consts::FRAC_PI_2);
        let xf = Xf { r, t: [0.0; 3] };
        let v = xf.rotate(&[1.0, 0.0, 0.0]);
        assert!(v[0].abs() < 1e-6 && (v[1] - 1.0).abs() < 1e-6);
    }
}
