//! Rounding configuration values to f32 into the pinned staging buffers, with non-temporal
//! stores on x86-64.
//!
//! A pinned buffer is written by the host and then read by the copy engine, never read back by
//! the host. Ordinary stores first read every cache line they write (read for ownership). Per
//! 1e6 Panda configurations, that is 28 MB of extra reads on top of the 56 MB of f64 values
//! read and the 28 MB written. Non-temporal stores (`movntps`) write whole lines without
//! reading them. An `sfence` after them makes the stores visible before the copy that reads
//! them is enqueued.
//!
//! The values written are the same as `x as f32`. `cvtpd2ps` and `cvtsd2ss` (what `as f32`
//! compiles to) both round by the MXCSR mode, round to nearest even, which Rust assumes
//! everywhere. [`STREAM_ENV`]`=0` selects the plain loops, for side-by-side measurements.

use std::sync::OnceLock;

/// Environment variable: `0` stages with plain stores instead of non-temporal ones.
pub const STREAM_ENV: &str = "GMP_STAGE_STREAM";

/// Whether staging uses non-temporal stores ([`STREAM_ENV`], read once).
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
fn streaming() -> bool {
    static ON: OnceLock<bool> = OnceLock::new();
    *ON.get_or_init(|| std::env::var(STREAM_ENV).map_or(true, |v| v.trim() != "0"))
}

/// Writes `src[i] as f32` bits into `dst[i]` for `i < min(len)`; returns whether every value
/// was finite.
pub(super) fn round_f64(src: &[f64], dst: &mut [u32]) -> bool {
    #[cfg(target_arch = "x86_64")]
    if streaming() {
        return x86::round_f64(src, dst);
    }
    round_f64_plain(src, dst)
}

/// Copies the bits of `src` into `dst` (as many as both hold).
pub(super) fn copy_f32(src: &[f32], dst: &mut [u32]) {
    #[cfg(target_arch = "x86_64")]
    if streaming() {
        return x86::copy_f32(src, dst);
    }
    copy_f32_plain(src, dst)
}

/// [`copy_f32`] with plain stores (and the unaligned ends of the streaming version).
fn copy_f32_plain(src: &[f32], dst: &mut [u32]) {
    for (d, s) in dst.iter_mut().zip(src) {
        *d = s.to_bits();
    }
}

/// [`round_f64`] with plain stores (and the unaligned ends of the streaming version).
fn round_f64_plain(src: &[f64], dst: &mut [u32]) -> bool {
    let mut finite = true;
    for (d, x) in dst.iter_mut().zip(src) {
        finite &= x.is_finite();
        *d = (*x as f32).to_bits();
    }
    finite
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use core::arch::x86_64::{
        __m128d, _mm_and_pd, _mm_castsi128_pd, _mm_cmplt_pd, _mm_cvtpd_ps, _mm_loadu_pd,
        _mm_loadu_ps, _mm_movelh_ps, _mm_movemask_pd, _mm_set1_epi64x, _mm_set1_pd, _mm_sfence,
        _mm_stream_ps,
    };

    /// Values before the first 16-byte aligned element of `dst` (at most 3), capped at `n`.
    fn head(dst: &[u32], n: usize) -> usize {
        let misalign = (dst.as_ptr() as usize / 4) % 4;
        ((4 - misalign) % 4).min(n)
    }

    pub(super) fn round_f64(src: &[f64], dst: &mut [u32]) -> bool {
        let n = src.len().min(dst.len());
        let (src, dst) = (&src[..n], &mut dst[..n]);
        let h = head(dst, n);
        let mut finite = super::round_f64_plain(&src[..h], &mut dst[..h]);
        let body = (n - h) / 4 * 4;
        // SAFETY: SSE2 is part of x86-64. Every load reads src[i..i + 4] and every store writes
        // dst[i..i + 4] with h <= i and i + 4 <= h + body <= n; dst + h is 16-byte aligned (u32
        // elements, `head`), so every store address is.
        unsafe {
            let abs = _mm_castsi128_pd(_mm_set1_epi64x(0x7fff_ffff_ffff_ffff));
            let inf = _mm_set1_pd(f64::INFINITY);
            let mut ok: __m128d = _mm_castsi128_pd(_mm_set1_epi64x(-1));
            let (s, d) = (src.as_ptr(), dst.as_mut_ptr());
            let mut i = h;
            while i < h + body {
                let a = _mm_loadu_pd(s.add(i));
                let b = _mm_loadu_pd(s.add(i + 2));
                // |x| < inf: false for infinities and NaN.
                ok = _mm_and_pd(ok, _mm_cmplt_pd(_mm_and_pd(a, abs), inf));
                ok = _mm_and_pd(ok, _mm_cmplt_pd(_mm_and_pd(b, abs), inf));
                let f = _mm_movelh_ps(_mm_cvtpd_ps(a), _mm_cvtpd_ps(b));
                _mm_stream_ps(d.add(i) as *mut f32, f);
                i += 4;
            }
            _mm_sfence();
            finite &= _mm_movemask_pd(ok) == 3;
        }
        let t = h + body;
        finite &= super::round_f64_plain(&src[t..], &mut dst[t..]);
        finite
    }

    pub(super) fn copy_f32(src: &[f32], dst: &mut [u32]) {
        let n = src.len().min(dst.len());
        let (src, dst) = (&src[..n], &mut dst[..n]);
        let h = head(dst, n);
        let body = (n - h) / 4 * 4;
        super::copy_f32_plain(&src[..h], &mut dst[..h]);
        // SAFETY: as in `round_f64`.
        unsafe {
            let (s, d) = (src.as_ptr(), dst.as_mut_ptr());
            let mut i = h;
            while i < h + body {
                _mm_stream_ps(d.add(i) as *mut f32, _mm_loadu_ps(s.add(i)));
                i += 4;
            }
            _mm_sfence();
        }
        let t = h + body;
        super::copy_f32_plain(&src[t..], &mut dst[t..]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    /// Both versions write `x as f32` for every value, at every alignment and length, and find
    /// every kind of non-finite value.
    #[test]
    fn streaming_staging_writes_what_plain_staging_writes() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        let mut src: Vec<f64> = (0..1000)
            .map(|i| match i % 7 {
                0 => rng.random_range(-4.0..4.0),
                1 => rng.random_range(-1e300..1e300), // overflows f32: infinity, still finite
                2 => f64::from_bits(rng.random::<u64>() & 0x800f_ffff_ffff_ffff), // subnormal
                3 => -0.0,
                4 => rng.random_range(-1e-40..1e-40), // f32 subnormal range
                5 => 1.0 + f64::EPSILON * rng.random_range(0.0..1e9), // ties and near ties
                _ => rng.random::<f64>() * 1e6,
            })
            .collect();
        let mut want = vec![0u32; src.len()];
        let mut got = vec![0u32; src.len() + 8];
        assert!(round_f64_plain(&src, &mut want));
        for off in 0..4 {
            for len in [0, 1, 3, 4, 5, 17, 999, 1000] {
                let d = &mut got[off..off + len];
                #[cfg(target_arch = "x86_64")]
                assert!(x86::round_f64(&src[..len], d));
                #[cfg(not(target_arch = "x86_64"))]
                assert!(round_f64(&src[..len], d));
                assert_eq!(&got[off..off + len], &want[..len], "offset {off}, {len}");
            }
        }
        let f32s: Vec<f32> = src.iter().map(|&x| x as f32).collect();
        for off in 0..4 {
            let d = &mut got[off..off + 997];
            copy_f32(&f32s[..997], d);
            assert_eq!(&got[off..off + 997], &want[..997]);
        }
        for bad in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
            for at in [0, 2, 5, 998, 999] {
                let keep = src[at];
                src[at] = bad;
                for off in 0..4 {
                    let d = &mut got[off..off + 1000];
                    assert!(!round_f64(&src, d), "{bad} at {at}, offset {off}");
                    #[cfg(target_arch = "x86_64")]
                    assert!(!x86::round_f64(&src, &mut got[off..off + 1000]));
                }
                src[at] = keep;
            }
        }
    }
}
