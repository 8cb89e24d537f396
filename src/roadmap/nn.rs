//! Nearest-neighbour search over configurations with kiddo k-d trees.
//!
//! kiddo trees have the dimension as a const generic, while our planning groups have 1 to
//! [`MAX_DOF`] joints chosen at run time. [`NearestNeighbors`] therefore keeps a boxed
//! `kiddo::KdTree<f64, K>` behind a small private trait, picked by `match` on the DOF.
//!
//! The trees measure plain Euclidean distance, but continuous joints wrap around at `±PI`.
//! Points are stored with their continuous joints wrapped into `[-PI, PI]`; a query is run on
//! the query point and, for continuous joints close enough to the `±PI` seam to matter, on its
//! images shifted by `∓2 PI`. The results are merged and re-ranked by the true
//! [`JointSpace::distance`]. The images that cannot beat the current bound are pruned, so a query
//! stays a handful of O(log n) tree descents (none extra when the group has no continuous joint).

use std::f64::consts::PI;

use kiddo::SquaredEuclidean;

use crate::robot::{wrap_angle, JointSpace};

/// Largest number of joints the neighbour search supports.
pub const MAX_DOF: usize = 12;

/// [`NearestNeighbors::nearest`] scans the stored points when there are at most this many,
/// and asks the k-d tree beyond (so a query stays O(log n) for large sets). The scan runs over
/// blocks of `SCAN_BLOCK` points side by side (AVX2 where the CPU has it) and gives the tree's
/// answer (see `scan`). Measured on the dev box, 8 joints, on sets grown like RRT trees
/// (each point a small step from an earlier one) and queried from uniform samples, mostly far
/// outside them, as RRT queries them: 0.45 / 1.4 / 5.1 / 23 us at 256 / 1,000 / 4,000 /
/// 16,000 points, against 0.79 / 3.0 / 11.6 / 47 us for kiddo's single-nearest query (the
/// k-d tree prunes little when the query is far from every point). On uniformly spread sets
/// kiddo does better at the top of the range (4 us at 16,000); the planners that query those
/// (PRM, the dynamic roadmap) call `nearest` only to attach a start or goal.
pub const SCAN_MAX: usize = 16384;

/// Points per block of the scan ([`SCAN_MAX`]): the values of one joint of this many
/// consecutive points lie side by side.
const SCAN_BLOCK: usize = 8;

/// kiddo v5 mutable trees hold at most this many items at exactly the same point.
const BUCKET: usize = 32;

/// Errors of the neighbour search.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum NnError {
    /// The planning group has a number of joints the search does not support.
    #[error("nearest-neighbour search supports 1 to {MAX_DOF} joints, the planning group has {0}")]
    UnsupportedDof(usize),
    /// A point had the wrong number of values.
    #[error("point has {got} values, the neighbour search holds {expected}-dimensional points")]
    WrongDof {
        /// Dimension of the search.
        expected: usize,
        /// Values the point had.
        got: usize,
    },
    /// A point held NaN or infinity.
    #[error("point has a non-finite value at index {0}")]
    NonFinite(usize),
    /// Too many items at exactly the same point (a kiddo v5 limit).
    #[error("more than {BUCKET} items at exactly the same point")]
    TooManyDuplicates,
}

/// One neighbour found by a query.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Neighbor {
    /// Identifier given when the point was inserted.
    pub id: usize,
    /// True joint-space distance from the query (wrap-around for continuous joints).
    pub distance: f64,
}

/// The const-generic kiddo tree seen through a dimension-free interface.
trait KdIndex: Send + Sync {
    fn add(&mut self, p: &[f64], item: u64);
    fn nearest_n(&self, p: &[f64], n: usize) -> Vec<u64>;
    /// The nearest item (kiddo's single-nearest search: no heap, no allocation); `None` when
    /// the tree is empty.
    fn nearest_one(&self, p: &[f64]) -> Option<u64>;
    fn within(&self, p: &[f64], sq_radius: f64) -> Vec<u64>;
    fn clone_box(&self) -> Box<dyn KdIndex>;
}

struct Tree<const K: usize>(kiddo::KdTree<f64, K>);

impl<const K: usize> Tree<K> {
    fn key(p: &[f64]) -> [f64; K] {
        let mut k = [0.0; K];
        for (dst, src) in k.iter_mut().zip(p) {
            *dst = *src;
        }
        k
    }
}

impl<const K: usize> KdIndex for Tree<K> {
    fn add(&mut self, p: &[f64], item: u64) {
        self.0.add(&Self::key(p), item);
    }
    fn nearest_n(&self, p: &[f64], n: usize) -> Vec<u64> {
        self.0
            .nearest_n::<SquaredEuclidean>(&Self::key(p), n)
            .into_iter()
            .map(|nn| nn.item)
            .collect()
    }
    fn nearest_one(&self, p: &[f64]) -> Option<u64> {
        if self.0.size() == 0 {
            return None;
        }
        Some(self.0.nearest_one::<SquaredEuclidean>(&Self::key(p)).item)
    }
    fn within(&self, p: &[f64], sq_radius: f64) -> Vec<u64> {
        self.0
            .within_unsorted::<SquaredEuclidean>(&Self::key(p), sq_radius)
            .into_iter()
            .map(|nn| nn.item)
            .collect()
    }
    fn clone_box(&self) -> Box<dyn KdIndex> {
        Box::new(Tree::<K>(self.0.clone()))
    }
}

fn new_index(dof: usize) -> Result<Box<dyn KdIndex>, NnError> {
    fn make<const K: usize>() -> Box<dyn KdIndex> {
        Box::new(Tree::<K>(kiddo::KdTree::new()))
    }
    Ok(match dof {
        1 => make::<1>(),
        2 => make::<2>(),
        3 => make::<3>(),
        4 => make::<4>(),
        5 => make::<5>(),
        6 => make::<6>(),
        7 => make::<7>(),
        8 => make::<8>(),
        9 => make::<9>(),
        10 => make::<10>(),
        11 => make::<11>(),
        12 => make::<12>(),
        d => return Err(NnError::UnsupportedDof(d)),
    })
}

/// Incremental nearest / k-nearest / radius search over configurations of one joint space.
pub struct NearestNeighbors {
    space: JointSpace,
    index: Box<dyn KdIndex>,
    /// Stored points (continuous joints wrapped), row-major, in insertion order.
    points: Vec<f64>,
    /// Caller identifiers in insertion order.
    ids: Vec<usize>,
    /// The stored points again, for the scan: block `b` holds points `b * SCAN_BLOCK ..` as
    /// `dof` rows of [`SCAN_BLOCK`] values (joint-major); the rows of a last, partial block are
    /// padded with infinity, which no distance sum beats. Kept only while at most
    /// [`SCAN_MAX`] points are stored (the scan's range); emptied when the set grows past it.
    blocks: Vec<f64>,
}

impl Clone for NearestNeighbors {
    fn clone(&self) -> Self {
        Self {
            space: self.space.clone(),
            index: self.index.clone_box(),
            points: self.points.clone(),
            ids: self.ids.clone(),
            blocks: self.blocks.clone(),
        }
    }
}

impl std::fmt::Debug for NearestNeighbors {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NearestNeighbors")
            .field("dof", &self.space.dof())
            .field("len", &self.ids.len())
            .finish()
    }
}

impl NearestNeighbors {
    /// An empty search structure for configurations of `space`.
    pub fn new(space: &JointSpace) -> Result<Self, NnError> {
        Ok(Self {
            space: space.clone(),
            index: new_index(space.dof())?,
            points: Vec::new(),
            ids: Vec::new(),
            blocks: Vec::new(),
        })
    }

    /// Number of stored points.
    pub fn len(&self) -> usize {
        self.ids.len()
    }

    /// True when no point is stored.
    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    fn dof(&self) -> usize {
        self.space.dof()
    }

    fn normalized(&self, q: &[f64]) -> Result<Vec<f64>, NnError> {
        if q.len() != self.dof() {
            return Err(NnError::WrongDof {
                expected: self.dof(),
                got: q.len(),
            });
        }
        let mut out = Vec::with_capacity(q.len());
        for (j, &v) in q.iter().enumerate() {
            if !v.is_finite() {
                return Err(NnError::NonFinite(j));
            }
            let c = self.space.continuous.get(j).copied().unwrap_or(false);
            out.push(if c { wrap_angle(v) } else { v });
        }
        Ok(out)
    }

    fn stored(&self, internal: usize) -> &[f64] {
        let d = self.dof();
        &self.points[internal * d..(internal + 1) * d]
    }

    /// Adds a configuration under identifier `id`.
    pub fn insert(&mut self, q: &[f64], id: usize) -> Result<(), NnError> {
        let p = self.normalized(q)?;
        // kiddo v5 panics past BUCKET exact duplicates: refuse before that can happen.
        if self.index.within(&p, 0.0).len() + 1 >= BUCKET {
            return Err(NnError::TooManyDuplicates);
        }
        let internal = self.ids.len() as u64;
        self.index.add(&p, internal);
        if self.ids.len() < SCAN_MAX {
            let (dof, k) = (self.dof(), self.ids.len() % SCAN_BLOCK);
            if k == 0 {
                self.blocks
                    .extend(std::iter::repeat_n(f64::INFINITY, dof * SCAN_BLOCK));
            }
            let block = self.blocks.len() - dof * SCAN_BLOCK;
            for (j, &v) in p.iter().enumerate() {
                self.blocks[block + j * SCAN_BLOCK + k] = v;
            }
        } else if !self.blocks.is_empty() {
            // Past SCAN_MAX points the tree answers every query: the scan copy is dead weight.
            self.blocks = Vec::new();
        }
        self.points.extend_from_slice(&p);
        self.ids.push(id);
        Ok(())
    }

    /// Query points: `p` and its images across the `±PI` seam of continuous joints whose
    /// squared lower bound on the distance is below `sq_bound`.
    fn images(&self, p: &[f64], sq_bound: f64) -> Vec<Vec<f64>> {
        let mut seams: Vec<(usize, f64)> = Vec::new();
        for (j, &v) in p.iter().enumerate() {
            if self.space.continuous.get(j).copied().unwrap_or(false) {
                let gap = PI - v.abs();
                if gap * gap < sq_bound {
                    seams.push((j, gap * gap));
                }
            }
        }
        let mut out = vec![p.to_vec()];
        // Subsets of the seams, pruned by the summed lower bound.
        let mut partial: Vec<(Vec<f64>, f64)> = vec![(p.to_vec(), 0.0)];
        for &(j, g2) in &seams {
            let mut more = Vec::new();
            for (q, lb) in &partial {
                if lb + g2 < sq_bound {
                    let mut shifted = q.clone();
                    shifted[j] -= 2.0 * PI * q[j].signum();
                    out.push(shifted.clone());
                    more.push((shifted, lb + g2));
                }
            }
            partial.extend(more);
        }
        out
    }

    /// Dedupes tree items and sorts them by true distance from the caller's `q` (as given, so
    /// that distances equal what the caller would compute with `JointSpace::distance`).
    fn rank(&self, q: &[f64], mut internal: Vec<u64>) -> Vec<Neighbor> {
        internal.sort_unstable();
        internal.dedup();
        let mut out: Vec<Neighbor> = internal
            .into_iter()
            .filter_map(|i| {
                let i = usize::try_from(i).ok()?;
                let id = *self.ids.get(i)?;
                Some(Neighbor {
                    id,
                    distance: self.space.distance(q, self.stored(i)),
                })
            })
            .collect();
        out.sort_by(|a, b| a.distance.total_cmp(&b.distance).then(a.id.cmp(&b.id)));
        out
    }

    /// The stored point nearest to `q`, or `None` when empty: the answer of
    /// [`Self::k_nearest`]`(q, 1)`, computed without allocating. The nearest stored point to
    /// `q` and to each of its images across the `±PI` seams is the minimiser of the tree's
    /// squared Euclidean distance (a scan of the stored points up to [`SCAN_MAX`] of them, the
    /// k-d tree beyond), and those candidates are ranked by the true distance as there. The
    /// scan adds the squared differences in the tree's order and keeps the first strict
    /// minimum, so it finds the tree's answer whenever the minimum is unique (two distinct
    /// points at exactly the same f64 distance from a query could come back in another order).
    pub fn nearest(&self, q: &[f64]) -> Result<Option<Neighbor>, NnError> {
        let dof = self.dof();
        let mut buf = [0.0f64; MAX_DOF];
        let p = self.normalize_into(q, &mut buf)?;
        let Some(first) = self.nearest_stored(p) else {
            return Ok(None);
        };
        let mut best = self.neighbor(q, first);
        let bound = best.distance * best.distance;
        // The seams whose images can beat the first answer (as in `images`).
        let mut seams = [(0usize, 0.0f64); MAX_DOF];
        let mut ns = 0;
        for (j, &v) in p.iter().enumerate() {
            if self.space.continuous.get(j).copied().unwrap_or(false) {
                let gap = PI - v.abs();
                if gap * gap < bound {
                    seams[ns] = (j, gap * gap);
                    ns += 1;
                }
            }
        }
        let mut img = [0.0f64; MAX_DOF];
        for mask in 1u32..(1u32 << ns) {
            img[..dof].copy_from_slice(p);
            let mut lb = 0.0;
            let mut pruned = false;
            for (k, &(j, g2)) in seams[..ns].iter().enumerate() {
                if mask & (1 << k) == 0 {
                    continue;
                }
                if lb + g2 >= bound {
                    pruned = true;
                    break;
                }
                lb += g2;
                img[j] -= 2.0 * PI * p[j].signum();
            }
            if pruned {
                continue;
            }
            if let Some(i) = self.nearest_stored(&img[..dof]) {
                let n = self.neighbor(q, i);
                if n.distance
                    .total_cmp(&best.distance)
                    .then(n.id.cmp(&best.id))
                    == std::cmp::Ordering::Less
                {
                    best = n;
                }
            }
        }
        Ok(Some(best))
    }

    /// `q` with its continuous joints wrapped, in `buf` (the checks of `normalized`).
    fn normalize_into<'b>(
        &self,
        q: &[f64],
        buf: &'b mut [f64; MAX_DOF],
    ) -> Result<&'b [f64], NnError> {
        let dof = self.dof();
        if q.len() != dof || dof > MAX_DOF {
            return Err(NnError::WrongDof {
                expected: dof,
                got: q.len(),
            });
        }
        for (j, (&v, out)) in q.iter().zip(buf.iter_mut()).enumerate() {
            if !v.is_finite() {
                return Err(NnError::NonFinite(j));
            }
            let c = self.space.continuous.get(j).copied().unwrap_or(false);
            *out = if c { wrap_angle(v) } else { v };
        }
        Ok(&buf[..dof])
    }

    /// Stored point `internal` as a neighbour of the caller's `q` (true distance).
    fn neighbor(&self, q: &[f64], internal: usize) -> Neighbor {
        Neighbor {
            id: self.ids[internal],
            distance: self.space.distance(q, self.stored(internal)),
        }
    }

    /// Internal index of the stored point nearest to the normalised `p` in the tree's squared
    /// Euclidean distance, or `None` when empty.
    fn nearest_stored(&self, p: &[f64]) -> Option<usize> {
        if self.is_empty() {
            return None;
        }
        if self.len() > SCAN_MAX {
            let i = self.index.nearest_one(p)?;
            return usize::try_from(i).ok().filter(|&i| i < self.len());
        }
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU has AVX2 (checked just above).
            return Some(unsafe { scan_avx2(&self.blocks, p, self.len()) });
        }
        Some(scan(&self.blocks, p, self.len()))
    }

    /// The `k` stored points nearest to `q`, closest first (ties by identifier).
    pub fn k_nearest(&self, q: &[f64], k: usize) -> Result<Vec<Neighbor>, NnError> {
        let p = self.normalized(q)?;
        if k == 0 || self.is_empty() {
            return Ok(Vec::new());
        }
        let base = self.rank(q, self.index.nearest_n(&p, k));
        let bound = if base.len() < k {
            f64::INFINITY
        } else {
            base.last()
                .map_or(f64::INFINITY, |n| n.distance * n.distance)
        };
        let images = self.images(&p, bound);
        if images.len() == 1 {
            return Ok(base);
        }
        let mut all = Vec::new();
        for img in &images {
            all.extend(self.index.nearest_n(img, k));
        }
        let mut ranked = self.rank(q, all);
        ranked.truncate(k);
        Ok(ranked)
    }

    /// All stored points within `radius` of `q`, closest first (ties by identifier).
    pub fn within(&self, q: &[f64], radius: f64) -> Result<Vec<Neighbor>, NnError> {
        let p = self.normalized(q)?;
        if self.is_empty() || radius.is_nan() || radius < 0.0 {
            return Ok(Vec::new());
        }
        let sq = radius * radius;
        // A hair of slack so rounding in kiddo's sums never drops a point on the boundary;
        // the exact filter below decides.
        let query_sq = sq * (1.0 + 1e-9) + 1e-300;
        let mut all = Vec::new();
        for img in self.images(&p, query_sq) {
            all.extend(self.index.within(&img, query_sq));
        }
        let mut ranked = self.rank(q, all);
        ranked.retain(|n| n.distance <= radius);
        Ok(ranked)
    }
}

/// Index of the first of the `len` points in `blocks` (the layout of
/// [`NearestNeighbors::blocks`]) with the least squared Euclidean distance to `p`, summed as
/// kiddo's `SquaredEuclidean` does: `0 + (p0 - s0)^2 + (p1 - s1)^2 + ...` in joint order, in
/// `f64`. The [`SCAN_BLOCK`] points of a block are summed side by side, each in that order, so
/// every sum is the one a point-by-point loop makes; the first strict minimum in index order
/// wins, so the answer is kiddo's whenever the minimum is unique. Every sum is taken whole: no
/// branch per joint.
#[inline(always)]
fn scan(blocks: &[f64], p: &[f64], len: usize) -> usize {
    let stride = p.len() * SCAN_BLOCK;
    let mut best = f64::INFINITY;
    let mut arg = 0;
    if stride == 0 {
        return 0;
    }
    for (b, block) in blocks.chunks_exact(stride).enumerate() {
        let mut acc = [0.0f64; SCAN_BLOCK];
        for (row, &x) in block.chunks_exact(SCAN_BLOCK).zip(p) {
            for (a, &s) in acc.iter_mut().zip(row) {
                let d = x - s;
                *a += d * d;
            }
        }
        for (k, &d) in acc.iter().enumerate() {
            if d < best && b * SCAN_BLOCK + k < len {
                best = d;
                arg = b * SCAN_BLOCK + k;
            }
        }
    }
    arg
}

/// [`scan`] built for AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn scan_avx2(blocks: &[f64], p: &[f64], len: usize) -> usize {
    scan(blocks, p, len)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    /// The blocked scan finds the first strict minimum of the point-by-point sums (the sum
    /// kiddo makes), with ties, partial last blocks and every dimension; the AVX2 build gives
    /// the same index.
    #[test]
    fn blocked_scan_is_the_point_by_point_minimum() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        for dof in 1..=MAX_DOF {
            for len in [1usize, 2, 7, 8, 9, 16, 31, 100] {
                let mut blocks = Vec::new();
                let mut points: Vec<Vec<f64>> = Vec::new();
                for i in 0..len {
                    // Coarse values, so that equal sums (ties) occur.
                    let p: Vec<f64> = (0..dof)
                        .map(|_| f64::from(rng.random_range(-2..=2)))
                        .collect();
                    if i % SCAN_BLOCK == 0 {
                        blocks.extend(std::iter::repeat_n(f64::INFINITY, dof * SCAN_BLOCK));
                    }
                    let base = blocks.len() - dof * SCAN_BLOCK;
                    for (j, &v) in p.iter().enumerate() {
                        blocks[base + j * SCAN_BLOCK + i % SCAN_BLOCK] = v;
                    }
                    points.push(p);
                }
                for _ in 0..20 {
                    let q: Vec<f64> = (0..dof).map(|_| rng.random_range(-2.5..2.5)).collect();
                    let sums: Vec<f64> = points
                        .iter()
                        .map(|s| q.iter().zip(s).fold(0.0, |d, (a, b)| d + (a - b) * (a - b)))
                        .collect();
                    let least = sums.iter().copied().fold(f64::INFINITY, f64::min);
                    let want = sums.iter().position(|&d| d == least).unwrap();
                    assert_eq!(scan(&blocks, &q, len), want, "dof {dof} len {len}");
                    #[cfg(target_arch = "x86_64")]
                    if std::arch::is_x86_feature_detected!("avx2") {
                        // SAFETY: the CPU has AVX2 (checked just above).
                        assert_eq!(unsafe { scan_avx2(&blocks, &q, len) }, want);
                    }
                }
            }
        }
    }

    /// The scan copy holds the points while the scan answers (up to `SCAN_MAX` of them) and is
    /// given up once the tree answers every query; answers stay the nearest stored point.
    #[test]
    fn scan_copy_is_dropped_past_the_scan_range() {
        let space = JointSpace {
            names: vec!["a".into(), "b".into()],
            lower: vec![-1.0; 2],
            upper: vec![1.0; 2],
            continuous: vec![false; 2],
            max_velocity: vec![1.0; 2],
            max_acceleration: vec![1.0; 2],
            max_jerk: vec![f64::INFINITY; 2],
        };
        let mut nn = NearestNeighbors::new(&space).unwrap();
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
        for id in 0..SCAN_MAX + 3 {
            let q = [rng.random_range(-1.0..1.0), rng.random_range(-1.0..1.0)];
            nn.insert(&q, id).unwrap();
            let blocks = (id + 1).min(SCAN_MAX).div_ceil(SCAN_BLOCK) * 2 * SCAN_BLOCK;
            let want = if id < SCAN_MAX { blocks } else { 0 };
            if id + 2 >= SCAN_MAX || id % 997 == 0 {
                assert_eq!(nn.blocks.len(), want, "after {} points", id + 1);
            }
        }
        let q = [0.25, -0.5];
        let got = nn.nearest(&q).unwrap().unwrap();
        let sq = |i: usize| {
            let p = nn.stored(i);
            (p[0] - q[0]).powi(2) + (p[1] - q[1]).powi(2)
        };
        let best = (0..nn.len())
            .min_by(|&a, &b| sq(a).total_cmp(&sq(b)))
            .unwrap();
        assert_eq!(got.id, nn.ids[best]);
    }
}
