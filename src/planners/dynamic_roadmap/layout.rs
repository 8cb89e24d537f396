//! The flat layout of the RGG approximations and the verdicts of all edges against one
//! obstacle, three ways that give identical answers: a brute-force pass over every pair, a BVH
//! search that touches only candidate pairs (split over threads), and the CUDA kernel
//! `rgg_label` in `kernels/drm.cu` (see `crate::gpu::rgg`).
//!
//! # Layout
//!
//! Every array is a flat `Vec` of `#[repr(C)]` f32 records, indexed by the (edge, body) pair
//! `p = edge * bodies + body` (edge-major), the layout the kernel reads as it is:
//!
//! * `pair_boxes[p]`: a world box holding every outer box of the pair;
//! * `obbs[p * pieces + k]`: the pair's outer oriented boxes (the body swept over consecutive
//!   groups of checked configurations);
//! * `caps[cap_offsets[p]..cap_offsets[p + 1]]`: the inner capsules of the pair;
//! * `cap_chunks[c / CAP_CHUNK]`: a world box holding the bounding boxes of the capsules
//!   `c` of that chunk (chunks are fixed runs of the global capsule array and may straddle
//!   pairs), so that a pair's capsules are skipped a chunk at a time.
//!
//! # The verdict
//!
//! Of a pair against an obstacle approximation: **free** when its box misses the obstacle's
//! box or every outer box is separated from the obstacle's outer box (its world box misses the
//! obstacle's box, or the separating-axis test separates them); otherwise **hit** when one of
//! its capsules whose bounding box meets the obstacle's box overlaps one of the obstacle's
//! inner balls, else **near**. Of an edge: the strongest verdict of its pairs (free < near <
//! hit). An edge that is free is Valid for this obstacle, near is Unknown, hit is Invalid (see
//! the module docs of the dynamic roadmap for why each is conservative). The chunk boxes only
//! skip work: a chunk box is the exact f32 union of its capsules' boxes, so a capsule whose box
//! meets the obstacle's box lies in a chunk whose box does.
//!
//! # Candidates: a BVH over the outer boxes
//!
//! The BVH indexes the world boxes of the outer boxes (two or more per pair, each the body
//! swept over part of the edge, so they are tighter than the pair's box); a pair none of whose
//! outer boxes' world boxes meet the obstacle's box is free, so only the pairs the BVH returns
//! need a verdict. The boxes are large and of very different sizes (a forearm swept over half
//! an edge next to a fingertip): a uniform grid would list a box in many cells or have few
//! useful cells, and a sorted sweep prunes along one axis only; a BVH stores each box once and
//! is deterministic. One BVH per worker over a contiguous range of edges lets the workers
//! search without sharing anything. Measured on the MBM Panda (`gmp bench dynamic`): the
//! verdicts of the candidates cost far more than finding them, so the BVH saves most for
//! small obstacles at the edge of the workspace; for a large obstacle in the middle nearly a
//! quarter of the pairs are candidates and a plain pass over the flat arrays is as fast.

use std::ops::Range;

use super::geom::{
    capsule_hits_ball, capsule_near_box, obb_disjoint, Aabb, Ball, Bvh, Capsule, Obb,
};
use super::obstacle::ObstacleApprox;

/// Verdict of a pair or edge: no approximation of the obstacle can touch it.
pub(crate) const FREE: u8 = 0;
/// Verdict bit: the outer approximations may touch.
pub(crate) const NEAR: u8 = 1;
/// Verdict bits: the inner approximations overlap (includes [`NEAR`], so that the verdict of
/// an edge is the bitwise or of its pairs').
pub(crate) const HIT: u8 = 3;

/// Capsules per chunk box (`GMP_CAP_CHUNK` in `kernels/drm.cu`).
pub(crate) const CAP_CHUNK: usize = 8;

/// Fewest pairs per worker before a pass is split over threads.
const PAIRS_PER_THREAD: usize = 2048;

/// The verdicts of one obstacle: the edges whose outer approximations may touch it, ascending,
/// with `true` when the inner approximations overlap.
pub(crate) type EdgeVerdicts = Vec<(u32, bool)>;

/// Edges per word of packed verdicts (two bits each, as `rgg_label` in `kernels/drm.cu`
/// writes them).
pub(crate) const EDGES_PER_WORD: usize = 16;

/// The verdicts of one obstacle packed two bits per edge (edge `e` at bits `2 (e % 16)` of
/// word `e / 16`: [`FREE`], [`NEAR`] or [`HIT`]); words past the end are free, so an empty
/// vector is "touches nothing". Updates compare two obstacle states word by word.
pub(crate) type VerdictBits = Vec<u32>;

/// `list` (ascending, edges below `edges`) packed as [`VerdictBits`].
pub(crate) fn pack_verdicts(edges: usize, list: &EdgeVerdicts) -> VerdictBits {
    let mut bits = vec![0u32; edges.div_ceil(EDGES_PER_WORD)];
    for &(e, hit) in list {
        let e = e as usize;
        if let Some(w) = bits.get_mut(e / EDGES_PER_WORD) {
            let v = if hit { HIT } else { NEAR } as u32;
            *w |= v << (2 * (e % EDGES_PER_WORD));
        }
    }
    bits
}

/// The listed edges of packed verdicts, ascending (the inverse of [`pack_verdicts`]); fields
/// of edges at or past `edges` are ignored.
pub(crate) fn unpack_verdicts(edges: usize, bits: &[u32]) -> EdgeVerdicts {
    let mut out = Vec::new();
    for (w, &word) in bits.iter().enumerate() {
        let mut rest = word;
        while rest != 0 {
            let k = (rest.trailing_zeros() & !1) as usize;
            rest &= !(3 << k);
            let e = w * EDGES_PER_WORD + k / 2;
            if e < edges {
                out.push((e as u32, (word >> k) & 3 == HIT as u32));
            }
        }
    }
    out
}

/// Edges with a verdict other than free in packed verdicts.
pub(crate) fn count_listed(bits: &[u32]) -> usize {
    bits.iter()
        .map(|&w| ((w | (w >> 1)) & 0x5555_5555).count_ones() as usize)
        .sum()
}

/// One worker's share: a contiguous range of pairs (whole edges) and a BVH over the world
/// boxes of their outer boxes (item `i` is outer box `pairs.start * pieces + i`).
#[derive(Clone, Debug)]
struct Part {
    pairs: Range<usize>,
    bvh: Bvh,
}

/// The RGG approximations of every (edge, body) pair in flat arrays, with the BVHs that find
/// the candidate pairs of an obstacle. See the module docs.
#[derive(Clone, Debug)]
pub(crate) struct RggLayout {
    /// Bodies per edge.
    pub bodies: usize,
    /// Outer boxes per pair.
    pub pieces: usize,
    /// Edges.
    pub edges: usize,
    /// Per pair: a box holding its outer boxes.
    pub pair_boxes: Vec<Aabb>,
    /// Per pair: `pieces` outer boxes.
    pub obbs: Vec<Obb>,
    /// Per pair: the start of its capsules in `caps` (one more entry than pairs).
    pub cap_offsets: Vec<u32>,
    /// Inner capsules in pair order.
    pub caps: Vec<Capsule>,
    /// Per run of [`CAP_CHUNK`] capsules: the union of their bounding boxes.
    pub cap_chunks: Vec<Aabb>,
    parts: Vec<Part>,
}

/// The bounding box of a capsule, as [`capsule_near_box`] tests it.
fn capsule_box(c: &Capsule) -> Aabb {
    let mut b = Aabb::EMPTY;
    for k in 0..3 {
        b.lo[k] = c.a[k].min(c.b[k]) - c.r;
        b.hi[k] = c.a[k].max(c.b[k]) + c.r;
    }
    b
}

/// Splits `0..n` into `workers` contiguous ranges and maps each on its own thread (the first
/// on this one), returning the results in range order.
fn on_workers<T: Send>(n: usize, workers: usize, f: impl Fn(Range<usize>) -> T + Sync) -> Vec<T> {
    let workers = workers.clamp(1, 64).min(n.max(1));
    let per = n.div_ceil(workers).max(1);
    let ranges: Vec<Range<usize>> = (0..workers)
        .map(|w| (w * per).min(n)..((w + 1) * per).min(n))
        .filter(|r| !r.is_empty())
        .collect();
    match ranges.as_slice() {
        [] => Vec::new(),
        [one] => vec![f(one.clone())],
        [first, rest @ ..] => std::thread::scope(|sc| {
            let f = &f;
            let handles: Vec<_> = rest
                .iter()
                .map(|r| (r.clone(), sc.spawn(move || f(r.clone()))))
                .collect();
            let mut all = vec![f(first.clone())];
            for (r, h) in handles {
                // A worker that panicked is redone here (it cannot, short of a bug).
                all.push(h.join().unwrap_or_else(|_| f(r)));
            }
            all
        }),
    }
}

impl RggLayout {
    /// Assembles the layout from the sweep's output (`obbs`: `pieces` per pair; `cap_counts`:
    /// capsules per pair) and builds one BVH per worker of `threads`.
    pub fn new(
        bodies: usize,
        pieces: usize,
        edges: usize,
        obbs: Vec<Obb>,
        cap_counts: &[u32],
        caps: Vec<Capsule>,
        threads: usize,
    ) -> Self {
        let pieces = pieces.max(1);
        let pairs = edges * bodies;
        let piece_boxes: Vec<Aabb> = obbs.iter().map(Obb::aabb).collect();
        let pair_boxes: Vec<Aabb> = (0..pairs)
            .map(|p| {
                let mut b = Aabb::EMPTY;
                for x in piece_boxes.get(p * pieces..(p + 1) * pieces).unwrap_or(&[]) {
                    b.grow(x);
                }
                b
            })
            .collect();
        let mut cap_offsets = Vec::with_capacity(pairs + 1);
        let mut acc = 0u32;
        cap_offsets.push(0);
        for p in 0..pairs {
            acc = acc.saturating_add(cap_counts.get(p).copied().unwrap_or(0));
            cap_offsets.push(acc);
        }
        let cap_chunks = caps
            .chunks(CAP_CHUNK)
            .map(|run| {
                let mut b = Aabb::EMPTY;
                for c in run {
                    b.grow(&capsule_box(c));
                }
                b
            })
            .collect();
        let workers = threads.min(pairs / PAIRS_PER_THREAD).max(1);
        let boxes = &piece_boxes;
        let parts = on_workers(edges, workers, |r| {
            let pr = r.start * bodies..r.end * bodies;
            Part {
                bvh: Bvh::build(&boxes[pr.start * pieces..pr.end * pieces]),
                pairs: pr,
            }
        });
        RggLayout {
            bodies,
            pieces,
            edges,
            pair_boxes,
            obbs,
            cap_offsets,
            caps,
            cap_chunks,
            parts,
        }
    }

    /// Number of (edge, body) pairs.
    pub fn pairs(&self) -> usize {
        self.edges * self.bodies
    }

    /// The verdict of pair `p` against `o` (see the module docs). Twin: `gmp_rgg_pair_verdict`
    /// in `kernels/drm.cu`.
    pub fn pair_verdict(&self, p: usize, o: &ObstacleApprox) -> u8 {
        if !self.pair_boxes[p].overlaps(&o.aabb) {
            return FREE;
        }
        let boxes = &self.obbs[p * self.pieces..(p + 1) * self.pieces];
        let near = boxes
            .iter()
            .any(|b| b.aabb().overlaps(&o.aabb) && !obb_disjoint(b, &o.outer));
        if !near {
            return FREE;
        }
        let (c0, c1) = (
            self.cap_offsets[p] as usize,
            self.cap_offsets[p + 1] as usize,
        );
        if c1 > c0 {
            for k in c0 / CAP_CHUNK..=(c1 - 1) / CAP_CHUNK {
                if !self.cap_chunks[k].overlaps(&o.aabb) {
                    continue;
                }
                let run = (k * CAP_CHUNK).max(c0)..((k + 1) * CAP_CHUNK).min(c1);
                if self.caps[run]
                    .iter()
                    .any(|c| capsule_hits_any(c, &o.aabb, &o.inner))
                {
                    return HIT;
                }
            }
        }
        NEAR
    }

    /// The strongest verdict of the given pairs of one edge (stops at the first hit).
    fn edge_verdict(&self, pairs: Range<usize>, o: &ObstacleApprox) -> u8 {
        let mut v = FREE;
        for p in pairs {
            v |= self.pair_verdict(p, o);
            if v == HIT {
                break;
            }
        }
        v
    }

    /// Verdicts by testing every pair (the reference the BVH and the kernel are held to),
    /// split over `threads` workers.
    pub fn verdicts_brute_force(&self, o: &ObstacleApprox, threads: usize) -> EdgeVerdicts {
        let workers = threads.min(self.pairs() / PAIRS_PER_THREAD).max(1);
        on_workers(self.edges, workers, |r| {
            let mut out = Vec::new();
            for e in r {
                let v = self.edge_verdict(e * self.bodies..(e + 1) * self.bodies, o);
                if v != FREE {
                    out.push((e as u32, v == HIT));
                }
            }
            out
        })
        .concat()
    }

    /// Verdicts of the pairs of one worker's BVH: the candidate pairs (one of whose outer
    /// boxes has a world box meeting the obstacle's box) are marked in a bitmap, which is then
    /// read in pair order, so that the pairs of an edge come together.
    fn part_verdicts(&self, part: &Part, o: &ObstacleApprox) -> (EdgeVerdicts, usize) {
        let base = part.pairs.start;
        let mut marks = vec![0u64; part.pairs.len().div_ceil(64)];
        part.bvh.query(&o.aabb, |i| {
            let p = i as usize / self.pieces;
            marks[p / 64] |= 1 << (p % 64);
        });
        let mut out = Vec::new();
        let mut tested = 0usize;
        let mut edge = usize::MAX;
        let mut v = FREE;
        for (w, &word) in marks.iter().enumerate() {
            let mut bits = word;
            while bits != 0 {
                let p = base + w * 64 + bits.trailing_zeros() as usize;
                bits &= bits - 1;
                let e = p / self.bodies;
                if e != edge {
                    if v != FREE {
                        out.push((edge as u32, v == HIT));
                    }
                    edge = e;
                    v = FREE;
                }
                if v != HIT {
                    v |= self.pair_verdict(p, o);
                    tested += 1;
                }
            }
        }
        if v != FREE {
            out.push((edge as u32, v == HIT));
        }
        (out, tested)
    }

    /// Verdicts through the BVHs, one worker thread per part, and the number of pairs whose
    /// verdict was computed. Identical to [`RggLayout::verdicts_brute_force`]: a pair the BVH
    /// does not return has no outer box whose world box meets the obstacle's box, so its
    /// verdict is free.
    pub fn verdicts(&self, o: &ObstacleApprox) -> (EdgeVerdicts, usize) {
        let results = on_workers(self.parts.len(), self.parts.len(), |r| {
            r.map(|k| self.part_verdicts(&self.parts[k], o))
                .collect::<Vec<_>>()
        });
        let mut out = Vec::new();
        let mut tested = 0;
        for (v, n) in results.into_iter().flatten() {
            out.extend(v);
            tested += n;
        }
        (out, tested)
    }
}

/// True when capsule `c` is near the obstacle box `b` and overlaps one of `balls`.
#[inline]
fn capsule_hits_any(c: &Capsule, b: &Aabb, balls: &[Ball]) -> bool {
    capsule_near_box(c, b) && balls.iter().any(|ball| capsule_hits_ball(c, ball, 0.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packed_verdicts_round_trip() {
        let list: EdgeVerdicts = vec![(0, false), (3, true), (15, true), (16, false), (40, false)];
        let bits = pack_verdicts(41, &list);
        assert_eq!(bits.len(), 3);
        assert_eq!(bits[0] & 3, NEAR as u32);
        assert_eq!((bits[0] >> 6) & 3, HIT as u32);
        assert_eq!(unpack_verdicts(41, &bits), list);
        assert_eq!(count_listed(&bits), 5);
        // Fields past the edge count are not edges.
        assert_eq!(unpack_verdicts(40, &bits).len(), 4);
        assert_eq!(count_listed(&[]), 0);
        assert!(unpack_verdicts(10, &[]).is_empty());
    }

    #[test]
    fn workers_cover_the_range_in_order() {
        for (n, w) in [(0, 3), (1, 4), (10, 3), (10, 1), (7, 64)] {
            let got: Vec<usize> = on_workers(n, w, |r| r.collect::<Vec<_>>()).concat();
            assert_eq!(got, (0..n).collect::<Vec<_>>(), "n {n} workers {w}");
        }
    }

    #[test]
    fn a_chunk_box_holds_its_capsules_boxes() {
        let caps: Vec<Capsule> = (0..20)
            .map(|i| {
                let x = i as f32 * 0.1;
                Capsule {
                    a: [x, -x, 0.5],
                    b: [x + 0.05, x, 0.4],
                    r: 0.01 * (i % 3) as f32,
                }
            })
            .collect();
        let l = RggLayout::new(1, 1, 1, vec![Obb::default()], &[20], caps.clone(), 1);
        assert_eq!(l.cap_chunks.len(), 3);
        for (i, c) in caps.iter().enumerate() {
            let b = capsule_box(c);
            let k = &l.cap_chunks[i / CAP_CHUNK];
            assert!((0..3).all(|a| k.lo[a] <= b.lo[a] && k.hi[a] >= b.hi[a]));
        }
    }
}
