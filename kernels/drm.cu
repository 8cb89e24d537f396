// gpu_motion_planner: the dynamic roadmap's kernels. Compiled at run time by NVRTC with
// common.cuh prepended (src/gpu/kernels.rs), --fmad=false --prec-div=true --prec-sqrt=true
// --ftz=false. `rgg_label` (Red-Green-Gray verdicts of every (edge, body) pair against one
// obstacle) comes first; `drm_voxel_mark`, `drm_voxel_count` and `drm_voxel_list` (the DRM voxel
// map) are at the end of the file.
//
// rgg_label is the twin of src/planners/dynamic_roadmap/geom.rs (Obb::aabb, obb_disjoint,
// capsule_near_box, capsule_hits_ball) and layout.rs (RggLayout::pair_verdict): same f32
// operations in the same order, same literals.
//
// Layout (src/planners/dynamic_roadmap/layout.rs): pair p = edge * bodies + body; per pair a
// world box, `pieces` outer boxes and a CSR range of inner capsules; per run of GMP_CAP_CHUNK
// capsules a box holding theirs. The obstacle record holds its outer box, the world box around
// it and its inner balls.
//
// Output: two bits per edge, 16 edges per word, or-ed in by the pairs of the edge:
// 0 = free (every pair outer-disjoint), 1 = near (Unknown), 3 = hit (Invalid). The host zeroes
// the words before the launch; `atomicOr` makes the result independent of thread order.

// geom.rs SAT_REL_TOL.
#define GMP_SAT_REL_TOL 1e-5f
// layout.rs CAP_CHUNK: capsules per chunk box.
#define GMP_CAP_CHUNK 8u

// geom.rs Obb: centre, row-major rotation (columns are the axes), half extents.
struct GmpObb {
    float c[3];
    float r[9];
    float h[3];
};

// geom.rs Aabb.
struct GmpAabb {
    float lo[3];
    float hi[3];
};

// geom.rs Capsule.
struct GmpCapsule {
    float a[3];
    float b[3];
    float r;
};

// The resident layout (src/gpu/rgg.rs, RggArgs).
struct GmpRggLayout {
    const GmpAabb* pair_boxes;
    const GmpObb* obbs;
    const unsigned* cap_offsets;
    const GmpCapsule* caps;
    const GmpAabb* cap_chunks;
    unsigned pairs;
    unsigned bodies;
    unsigned pieces;
    unsigned pad;
};

// The obstacle record: outer box, world box, then n_balls balls (x, y, z, r).
struct GmpRggObstacle {
    GmpObb outer;
    GmpAabb box;
};

// Aabb::overlaps
__device__ __forceinline__ bool gmp_aabb_overlaps(const GmpAabb& a, const GmpAabb& b) {
    return a.lo[0] <= b.hi[0] && b.lo[0] <= a.hi[0] && a.lo[1] <= b.hi[1] && b.lo[1] <= a.hi[1] &&
           a.lo[2] <= b.hi[2] && b.lo[2] <= a.hi[2];
}

// Obb::axis
__device__ __forceinline__ V3 gmp_obb_axis(const GmpObb& o, int i) { return v3(o.r[i], o.r[3 + i], o.r[6 + i]); }

// Obb::reach
__device__ __forceinline__ float gmp_obb_reach(const GmpObb& o, const V3& l) {
    float s0 = o.h[0] * fabsf(gmp_dot(gmp_obb_axis(o, 0), l));
    float s1 = o.h[1] * fabsf(gmp_dot(gmp_obb_axis(o, 1), l));
    float s2 = o.h[2] * fabsf(gmp_dot(gmp_obb_axis(o, 2), l));
    return (s0 + s1) + s2;
}

// Obb::aabb
__device__ __forceinline__ GmpAabb gmp_obb_aabb(const GmpObb& o) {
    GmpAabb out;
    for (int k = 0; k < 3; k++) {
        float e = (fabsf(o.r[3 * k]) * o.h[0] + fabsf(o.r[3 * k + 1]) * o.h[1]) + fabsf(o.r[3 * k + 2]) * o.h[2];
        float tol = GMP_SAT_REL_TOL * (fabsf(o.c[k]) + e);
        out.lo[k] = o.c[k] - e - tol;
        out.hi[k] = o.c[k] + e + tol;
    }
    return out;
}

// separates: axis l (not normalised) separates the boxes by more than the rounding allowance.
__device__ __forceinline__ bool gmp_sat_separates(const GmpObb& a, const GmpObb& b, const V3& t, float scale,
                                                  float hsum, const V3& l) {
    float d = fabsf(gmp_dot(t, l));
    float s = gmp_obb_reach(a, l) + gmp_obb_reach(b, l);
    return d > s + GMP_SAT_REL_TOL * ((scale + hsum) + s) + 1e-7f;
}

// obb_disjoint
__device__ __noinline__ bool gmp_obb_disjoint(const GmpObb& a, const GmpObb& b) {
    V3 ac = v3(a.c[0], a.c[1], a.c[2]);
    V3 bc = v3(b.c[0], b.c[1], b.c[2]);
    V3 t = gmp_sub(bc, ac);
    float scale = (fabsf(t.x[0]) + fabsf(t.x[1])) + fabsf(t.x[2]);
    float hsum = ((a.h[0] + a.h[1]) + a.h[2]) + ((b.h[0] + b.h[1]) + b.h[2]);
    for (int i = 0; i < 3; i++) {
        if (gmp_sat_separates(a, b, t, scale, hsum, gmp_obb_axis(a, i)) ||
            gmp_sat_separates(a, b, t, scale, hsum, gmp_obb_axis(b, i)))
            return true;
    }
    for (int i = 0; i < 3; i++) {
        for (int j = 0; j < 3; j++) {
            if (gmp_sat_separates(a, b, t, scale, hsum, gmp_cross(gmp_obb_axis(a, i), gmp_obb_axis(b, j))))
                return true;
        }
    }
    return false;
}

// capsule_near_box (f32::min / f32::max are fminf / fmaxf: both ignore a NaN operand).
__device__ __forceinline__ bool gmp_capsule_near_box(const GmpCapsule& c, const GmpAabb& b) {
    for (int k = 0; k < 3; k++) {
        if (!(fminf(c.a[k], c.b[k]) - c.r <= b.hi[k] && fmaxf(c.a[k], c.b[k]) + c.r >= b.lo[k])) return false;
    }
    return true;
}

// point_segment_dist2 (the clamp written out: a NaN stays NaN, as f32::clamp keeps it).
__device__ __forceinline__ float gmp_point_segment_dist2(const V3& p, const V3& a, const V3& b) {
    V3 ab = gmp_sub(b, a);
    V3 ap = gmp_sub(p, a);
    float l2 = gmp_dot(ab, ab);
    float t = 0.0f;
    if (l2 > 0.0f) {
        t = gmp_dot(ap, ab) / l2;
        if (t < 0.0f) t = 0.0f;
        if (t > 1.0f) t = 1.0f;
    }
    V3 q = v3(a.x[0] + ab.x[0] * t, a.x[1] + ab.x[1] * t, a.x[2] + ab.x[2] * t);
    V3 d = gmp_sub(p, q);
    return gmp_dot(d, d);
}

// capsule_hits_ball
__device__ __forceinline__ bool gmp_capsule_hits_ball(const GmpCapsule& c, const float* ball, float depth) {
    V3 p = v3(ball[0], ball[1], ball[2]);
    float reach = c.r + ball[3] - depth;
    if (reach <= 0.0f) return false;
    V3 a = v3(c.a[0], c.a[1], c.a[2]);
    V3 b = v3(c.b[0], c.b[1], c.b[2]);
    float d2 = gmp_point_segment_dist2(p, a, b);
    float scale = fabsf(p.x[0]) + fabsf(p.x[1]) + fabsf(p.x[2]) + fabsf(c.a[0]) + fabsf(c.a[1]) + fabsf(c.a[2]);
    float r = reach - GMP_SAT_REL_TOL * scale;
    return r > 0.0f && d2 < r * r;
}

// RggLayout::pair_verdict: 0 free, 1 near, 3 hit.
__device__ __forceinline__ unsigned gmp_rgg_pair_verdict(const GmpRggLayout& L, unsigned p,
                                                          const GmpRggObstacle& o, const float* balls,
                                                          unsigned n_balls) {
    if (!gmp_aabb_overlaps(L.pair_boxes[p], o.box)) return 0u;
    bool near = false;
    for (unsigned k = 0; k < L.pieces; k++) {
        const GmpObb& piece = L.obbs[(size_t)p * L.pieces + k];
        if (gmp_aabb_overlaps(gmp_obb_aabb(piece), o.box) && !gmp_obb_disjoint(piece, o.outer)) {
            near = true;
            break;
        }
    }
    if (!near) return 0u;
    unsigned c0 = L.cap_offsets[p], c1 = L.cap_offsets[p + 1];
    if (c1 > c0) {
        for (unsigned k = c0 / GMP_CAP_CHUNK; k <= (c1 - 1) / GMP_CAP_CHUNK; k++) {
            if (!gmp_aabb_overlaps(L.cap_chunks[k], o.box)) continue;
            unsigned lo = max(k * GMP_CAP_CHUNK, c0), hi = min((k + 1) * GMP_CAP_CHUNK, c1);
            for (unsigned c = lo; c < hi; c++) {
                const GmpCapsule& cap = L.caps[c];
                if (!gmp_capsule_near_box(cap, o.box)) continue;
                for (unsigned b = 0; b < n_balls; b++) {
                    if (gmp_capsule_hits_ball(cap, balls + 4 * b, 0.0f)) return 3u;
                }
            }
        }
    }
    return 1u;
}

// One thread per (edge, body) pair. obstacle: a GmpRggObstacle followed by 4 * n_balls floats.
extern "C" __global__ void rgg_label(const GmpRggLayout L, const float* __restrict__ obstacle, unsigned n_balls,
                                     unsigned* __restrict__ out) {
    unsigned p = blockIdx.x * blockDim.x + threadIdx.x;
    if (p >= L.pairs) return;
    const GmpRggObstacle& o = *reinterpret_cast<const GmpRggObstacle*>(obstacle);
    const float* balls = obstacle + sizeof(GmpRggObstacle) / sizeof(float);
    unsigned v = gmp_rgg_pair_verdict(L, p, o, balls, n_balls);
    if (v != 0u) {
        unsigned e = p / L.bodies;
        atomicOr(out + (e >> 4), v << ((e & 15u) * 2u));
    }
}

// ---- The DRM voxel map ----
//
// The twin of the cell part of src/planners/dynamic_roadmap/sweep.rs (`Sweep::run` with a grid:
// every body at every checked configuration of an edge, as an oriented box grown by
// `inflate + body_sweep`, rasterised by `Grid::cells_of`). The cell set of an edge is a union, so
// the order in which cells are found does not matter; each (box, cell) decision is the CPU's:
// the same frames (gmp_interpolate, gmp_fk, gmp_body_sweep), the same box and the same
// Grid::range / Grid::border / Grid::cell_box / obb_disjoint arithmetic. Driven by
// src/gpu/voxel.rs, one chunk of edges at a time:
//
//   drm_voxel_mark   one thread per (checked configuration, body): sets the bits of the cells the
//                    body's box touches in its edge's row of a bitmap (edges x grid.words words,
//                    zeroed by the host); a cell whose bit is already set is not tested again;
//   drm_voxel_count  one thread per edge: the number of set bits of its row;
//   drm_voxel_list   one thread per edge: its cells in ascending order (sorted, distinct: what
//                    the CPU's sort + dedup gives) at offsets[e] (the host's prefix sum of counts).

// sweep.rs Grid, plus the bitmap words of one edge's row (ceil(cells / 32)).
struct GmpGrid {
    float origin[3];
    float cell;
    unsigned dims[3];
    unsigned words;
};

// One chunk of edges (src/gpu/voxel.rs, VoxelArgs).
struct GmpVoxelJob {
    const float* start;        // edges x dof: PreparedMotions::start
    const float* diff;         // edges x dof: PreparedMotions::diff
    const unsigned* segments;  // edges
    const unsigned* cfg_off;   // edges + 1: first checked configuration of each edge
    const float* boxes;        // bodies x 6: the body's local box centre, then half extents
    unsigned* bitmap;          // edges x grid.words
    unsigned edges;
    unsigned items;            // cfg_off[edges] * bodies
    float inflate;             // checker margin + tolerance
    unsigned pad;
    GmpGrid grid;
};

// Grid::range: the clamped cell index range [lo, hi] per axis of a box (f32::clamp written out;
// a NaN bound clamps to the full range).
__device__ __forceinline__ void gmp_grid_range(const GmpGrid& g, const GmpAabb& b, unsigned* lo_out,
                                               unsigned* hi_out) {
    for (int k = 0; k < 3; k++) {
        float tol = 1e-5f * (fabsf(b.lo[k]) + fabsf(b.hi[k]) + fabsf(g.origin[k])) + 1e-6f;
        float last = (float)(g.dims[k] == 0u ? 0u : g.dims[k] - 1u);
        float lo = floorf((b.lo[k] - tol - g.origin[k]) / g.cell);
        float hi = floorf((b.hi[k] + tol - g.origin[k]) / g.cell);
        if (isnan(lo)) {
            lo = 0.0f;
        } else {
            if (lo < 0.0f) lo = 0.0f;
            if (lo > last) lo = last;
        }
        if (isnan(hi)) {
            hi = last;
        } else {
            if (hi < 0.0f) hi = 0.0f;
            if (hi > last) hi = last;
        }
        lo_out[k] = (unsigned)lo;
        hi_out[k] = (unsigned)hi;
    }
}

// Grid::border
__device__ __forceinline__ bool gmp_grid_border(const GmpGrid& g, unsigned i, unsigned j, unsigned k) {
    return i == 0u || i + 1u >= g.dims[0] || j == 0u || j + 1u >= g.dims[1] || k == 0u || k + 1u >= g.dims[2];
}

// Grid::cell_box, then Obb::from_aabb
__device__ __forceinline__ GmpObb gmp_grid_cell_box(const GmpGrid& g, unsigned i, unsigned j, unsigned k) {
    unsigned c[3] = {i, j, k};
    GmpObb o;
    for (int a = 0; a < 3; a++) {
        float lo = g.origin[a] + (float)c[a] * g.cell;
        float hi = g.origin[a] + (float)(c[a] + 1u) * g.cell;
        o.c[a] = 0.5f * (lo + hi);
        o.h[a] = 0.5f * (hi - lo);
    }
    o.r[0] = 1.0f; o.r[1] = 0.0f; o.r[2] = 0.0f;
    o.r[3] = 0.0f; o.r[4] = 1.0f; o.r[5] = 0.0f;
    o.r[6] = 0.0f; o.r[7] = 0.0f; o.r[8] = 1.0f;
    return o;
}

// Grid::cells_of, into a bitmap row: every cell of the box's range on the border, and the inner
// cells the separating-axis test cannot rule out (obb_disjoint(box, cell), in that order).
__device__ void gmp_grid_mark(const GmpGrid& g, const GmpObb& obb, unsigned* row) {
    unsigned lo[3], hi[3];
    gmp_grid_range(g, gmp_obb_aabb(obb), lo, hi);
    for (unsigned k = lo[2]; k <= hi[2]; k++) {
        for (unsigned j = lo[1]; j <= hi[1]; j++) {
            for (unsigned i = lo[0]; i <= hi[0]; i++) {
                // Grid::index
                unsigned idx = (k * g.dims[1] + j) * g.dims[0] + i;
                unsigned bit = 1u << (idx & 31u);
                unsigned* word = row + (idx >> 5);
                // Bits are only ever set while the kernel runs: a set bit is final (a stale zero
                // only repeats the test).
                if (*(volatile unsigned*)word & bit) continue;
                if (gmp_grid_border(g, i, j, k) || !gmp_obb_disjoint(obb, gmp_grid_cell_box(g, i, j, k))) {
                    atomicOr(word, bit);
                }
            }
        }
    }
}

// One thread per (checked configuration, body) item of the chunk: item g is configuration
// g / bodies (of the edge whose cfg_off range holds it) and body g % bodies.
extern "C" __global__ void drm_voxel_mark(const GmpModel m, const GmpVoxelJob job) {
    unsigned g = blockIdx.x * blockDim.x + threadIdx.x;
    if (g >= job.items || m.num_bodies == 0u) return;
    unsigned c = g / m.num_bodies;
    unsigned b = g - c * m.num_bodies;
    // Edge: the last e with cfg_off[e] <= c (cfg_off strictly increases).
    unsigned lo = 0, hi = job.edges;
    while (hi - lo > 1u) {
        unsigned mid = (lo + hi) >> 1;
        if (job.cfg_off[mid] <= c) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    unsigned e = lo;
    unsigned n = job.segments[e];
    const float* d = job.diff + (size_t)e * m.dof;
    float q[GMP_MAX_DOF];
    gmp_interpolate(job.start + (size_t)e * m.dof, d, m.dof, c - job.cfg_off[e], n, q);
    Xf frames[GMP_MAX_FRAMES];
    gmp_fk(m, q, frames);
    const GmpBody& body = m.bodies[b];
    Xf xf = gmp_frame_of(frames, body.frame);
    // Sweep::run: h = inflate + grow[b]; the box centre moved by the frame, the frame's axes, the
    // half extents grown by h.
    float h = job.inflate + gmp_body_sweep(m, b, d, n);
    const float* bx = job.boxes + 6u * b;
    V3 center = xf_apply(xf, v3(bx[0], bx[1], bx[2]));
    GmpObb obb;
#pragma unroll
    for (int k = 0; k < 3; k++) obb.c[k] = center.x[k];
#pragma unroll
    for (int k = 0; k < 9; k++) obb.r[k] = xf.r[k];
    obb.h[0] = bx[3] + h;
    obb.h[1] = bx[4] + h;
    obb.h[2] = bx[5] + h;
    gmp_grid_mark(job.grid, obb, job.bitmap + (size_t)e * job.grid.words);
}

// One thread per edge: the cells of its row.
extern "C" __global__ void drm_voxel_count(const unsigned* __restrict__ bitmap, unsigned words, unsigned edges,
                                           unsigned* __restrict__ counts) {
    unsigned e = blockIdx.x * blockDim.x + threadIdx.x;
    if (e >= edges) return;
    const unsigned* row = bitmap + (size_t)e * words;
    unsigned n = 0;
    for (unsigned w = 0; w < words; w++) n += __popc(row[w]);
    counts[e] = n;
}

// One thread per edge: its cells, ascending, at cells[offsets[e]..].
extern "C" __global__ void drm_voxel_list(const unsigned* __restrict__ bitmap, unsigned words, unsigned edges,
                                          const unsigned* __restrict__ offsets, unsigned* __restrict__ cells) {
    unsigned e = blockIdx.x * blockDim.x + threadIdx.x;
    if (e >= edges) return;
    const unsigned* row = bitmap + (size_t)e * words;
    unsigned* out = cells + offsets[e];
    for (unsigned w = 0; w < words; w++) {
        unsigned bits = row[w];
        while (bits != 0u) {
            unsigned b = (unsigned)(__ffs((int)bits) - 1);
            *out++ = w * 32u + b;
            bits &= bits - 1u;
        }
    }
}
