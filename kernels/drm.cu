// gpu_motion_planner: Red-Green-Gray verdicts of every (edge, body) pair of a dynamic roadmap
// against one obstacle. The twin of src/planners/dynamic_roadmap/geom.rs (Obb::aabb,
// obb_disjoint, capsule_near_box, capsule_hits_ball) and layout.rs (RggLayout::pair_verdict):
// same f32 operations in the same order, same literals. Compiled at run time by NVRTC with
// common.cuh prepended (src/gpu/kernels.rs), --fmad=false --prec-div=true --prec-sqrt=true
// --ftz=false.
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
