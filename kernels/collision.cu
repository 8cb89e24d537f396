// gpu_motion_planner: batched configuration and motion validity (twin of CpuChecker).
// Compiled at run time by NVRTC with common.cuh prepended (src/gpu/kernels.rs).
//
// Outputs: fk_frames writes 12 floats per configuration and moving frame; check_configs one
// byte per configuration (1 = collision free, 0 = in collision); check_motions_naive one status
// byte per motion (0 = valid, 1 = collides, 2 = uncertain: free at every checked configuration
// but not with the sweep margin);
// check_motions_balanced and check_motions_tiled two flag arrays the host zeroes before the launch: collided[0..n)
// (a colliding step was found) and collided[n..2n) (an uncertain step was found).

// The per-configuration tests the kernels call. A robot-specialised translation unit
// (src/gpu/specialise.rs) defines these before this file to put its generated straight-line tests
// (same arithmetic, robot constants folded in) in place of the table-driven ones, and GMP_DOF as
// a constant so that the joint values stay in registers.
#ifndef GMP_CONFIG_VALID
#define GMP_CONFIG_VALID(m, q) gmp_config_valid(m, q)
#endif
#ifndef GMP_STEP_STATUS
#define GMP_STEP_STATUS(m, q, diff, n) gmp_motion_step_status(m, q, diff, n)
#endif
#ifndef GMP_DOF
#define GMP_DOF(m) ((m).dof)
#endif
// Launch bounds of the configuration and motion kernels (a specialised unit may set them to cap
// the registers of its kernels: src/gpu/specialise.rs, Layout::Looped).
#ifndef GMP_CONFIGS_BOUNDS
#define GMP_CONFIGS_BOUNDS
#endif
#ifndef GMP_MOTIONS_BOUNDS
#define GMP_MOTIONS_BOUNDS
#endif

// The model argument of the kernels is __grid_constant__: the tests take it by reference, and
// without the qualifier taking the address of a kernel parameter makes every thread copy it
// (136 bytes) to its local memory.

// Several scenes side by side (src/gpu/hub.rs): the obstacles of every scene in one array and
// the base states of every scene in another; scene s is obstacles [lo, lo + count) and the base
// state at bases + base. A thread checking an item of scene s runs the tests on a copy of the
// model whose obstacle array and base state are those of s (the tests read nothing else of the
// scene), so the verdicts are those of a checker holding that scene alone.
struct GmpSceneRange {
    unsigned lo, count, base, pad;
};

__device__ __forceinline__ GmpModel gmp_scene_model(const GmpModel& m, const GmpSceneRange* __restrict__ scenes,
                                                    const float* __restrict__ bases, unsigned s) {
    const GmpSceneRange r = scenes[s];
    GmpModel ms = m;
    ms.obstacles = m.obstacles + r.lo;
    ms.num_obstacles = r.count;
    ms.base_state = bases + r.base;
    return ms;
}

// Verdict of configuration i of q (n x dof row-major f32): 1 = collision free.
__device__ __forceinline__ unsigned char gmp_config_row(const GmpModel& m, const float* __restrict__ q, unsigned i) {
    float qloc[GMP_MAX_DOF];
    const float* row = q + (size_t)i * GMP_DOF(m);
    for (unsigned j = 0; j < GMP_DOF(m); j++) qloc[j] = row[j];
    return GMP_CONFIG_VALID(m, qloc) ? 1 : 0;
}

// The configuration thread t checks: order[t] when the batch is checked in warp-coherent order
// (sort_keys below), else t.
__device__ __forceinline__ unsigned gmp_config_of(const unsigned* __restrict__ order, unsigned t) {
    return order != nullptr ? order[t] : t;
}

// One thread per configuration. q: n x dof row-major f32; order: null, or the order to check
// the configurations in (a permutation of 0 .. n).
extern "C" __global__ void GMP_CONFIGS_BOUNDS check_configs(const __grid_constant__ GmpModel m, const float* __restrict__ q, unsigned n,
                                         unsigned char* __restrict__ out, const unsigned* __restrict__ order) {
    const unsigned t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= n) return;
    const unsigned i = gmp_config_of(order, t);
    out[i] = gmp_config_row(m, q, i);
}

// check_configs over several scenes: configuration i is checked in scene scene_of[i].
extern "C" __global__ void GMP_CONFIGS_BOUNDS check_configs_multi(const __grid_constant__ GmpModel m,
                                               const GmpSceneRange* __restrict__ scenes,
                                               const float* __restrict__ bases,
                                               const unsigned* __restrict__ scene_of,
                                               const float* __restrict__ q, unsigned n,
                                               unsigned char* __restrict__ out) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const GmpModel ms = gmp_scene_model(m, scenes, bases, scene_of[i]);
    out[i] = gmp_config_row(ms, q, i);
}

#ifdef GMP_CONFIG_HALF
// A robot-specialised unit with an f16-slot pass (src/gpu/specialise.rs, Layout::LoopedHalf):
// check_configs_half runs it on every configuration and writes the verdicts it decides; the
// undecided ones (near a contact) go to a queue, rest[1 ..], their count in rest[0] (which the
// host zeroes before the launch), and check_configs_rest, launched after it on the same stream
// with any grid, runs the exact tests on them: the queue packs them into whole warps, rather
// than one undecided configuration holding up the 31 others of its warp. (A version that kept
// the queue per warp in shared memory, in one persistent launch, measured 10-20 % slower on the
// H100: results/collision/half_slots_H100_2026-11-23/.)
// (order: as in check_configs.)
extern "C" __global__ void GMP_CONFIGS_BOUNDS check_configs_half(const __grid_constant__ GmpModel m, const float* __restrict__ q, unsigned n,
                                              unsigned char* __restrict__ out, unsigned* __restrict__ rest,
                                              const unsigned* __restrict__ order) {
    const unsigned t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= n) return;
    const unsigned i = gmp_config_of(order, t);
    float qloc[GMP_MAX_DOF];
    const float* row = q + (size_t)i * GMP_DOF(m);
    for (unsigned j = 0; j < GMP_DOF(m); j++) qloc[j] = row[j];
    const unsigned r = GMP_CONFIG_HALF(m, qloc);
    if (r == 2u) {
        rest[1u + atomicAdd(rest, 1u)] = i;
    } else {
        out[i] = r == 0u ? 1 : 0;
    }
}

// The exact verdicts of the configurations check_configs_half left undecided (grid-stride).
extern "C" __global__ void GMP_CONFIGS_BOUNDS check_configs_rest(const __grid_constant__ GmpModel m, const float* __restrict__ q,
                                              unsigned char* __restrict__ out, const unsigned* __restrict__ rest) {
    const unsigned count = rest[0];
    for (unsigned k = blockIdx.x * blockDim.x + threadIdx.x; k < count; k += gridDim.x * blockDim.x) {
        const unsigned i = rest[1u + k];
        out[i] = gmp_config_row(m, q, i);
    }
}
#endif

// One warp per configuration, for small batches, where the latency of one configuration's
// tests in one thread (dependent loads, hundreds of them) is what the caller waits for: every
// lane computes the forward kinematics, runs its share of the tests (gmp_frames_valid_share,
// the table-driven tests of the generic kernel) and the warp ANDs the shares.
extern "C" __global__ void check_configs_warp(const __grid_constant__ GmpModel m, const float* __restrict__ q,
                                              unsigned n, unsigned char* __restrict__ out) {
    const unsigned w = (blockIdx.x * blockDim.x + threadIdx.x) / 32u;
    const unsigned lane = threadIdx.x % 32u;
    if (w >= n) return;  // the whole warp: blockDim.x is a multiple of 32
    float qloc[GMP_MAX_DOF];
    const float* row = q + (size_t)w * GMP_DOF(m);
    for (unsigned j = 0; j < GMP_DOF(m); j++) qloc[j] = row[j];
    Xf frames[GMP_MAX_FRAMES];
    gmp_fk(m, qloc, frames);
    const bool free = __all_sync(0xffffffffu, gmp_frames_valid_share(m, frames, nullptr, 0u, lane, 32u));
    if (lane == 0u) out[w] = free ? 1 : 0;
}

// One thread per configuration: the world pose of every moving frame (frame_poses), for
// CudaChecker::forward_kinematics. q: n x dof row-major f32; out: n x num_frames records of 12
// floats (the row-major rotation, then the translation), the frames of a configuration
// contiguous, in the model's frame order.
extern "C" __global__ void fk_frames(const GmpModel m, const float* __restrict__ q, unsigned n,
                                     float* __restrict__ out) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float qloc[GMP_MAX_DOF];
    const float* row = q + (size_t)i * GMP_DOF(m);
    for (unsigned j = 0; j < GMP_DOF(m); j++) qloc[j] = row[j];
    Xf frames[GMP_MAX_FRAMES];
    gmp_fk(m, qloc, frames);
    float* o = out + (size_t)i * m.num_frames * 12u;
    for (unsigned f = 0; f < m.num_frames; f++) {
#pragma unroll
        for (int k = 0; k < 9; k++) o[12u * f + k] = frames[f].r[k];
        o[12u * f + 9] = frames[f].t[0];
        o[12u * f + 10] = frames[f].t[1];
        o[12u * f + 11] = frames[f].t[2];
    }
}

// One thread per motion; steps in the CPU's bisection order (order table: for a motion with n
// segments, order[order_off[n] .. order_off[n] + n + 1] is bisection_order(n)).
extern "C" __global__ void GMP_MOTIONS_BOUNDS check_motions_naive(const __grid_constant__ GmpModel m, const float* __restrict__ start,
                                               const float* __restrict__ diff,
                                               const unsigned* __restrict__ segments, unsigned n_motions,
                                               const unsigned* __restrict__ order_off,
                                               const unsigned* __restrict__ order,
                                               unsigned char* __restrict__ out) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n_motions) return;
    unsigned n = segments[i];
    unsigned off = order_off[n];
    const float* s = start + (size_t)i * GMP_DOF(m);
    const float* d = diff + (size_t)i * GMP_DOF(m);
    float qloc[GMP_MAX_DOF];
    unsigned char status = 0;
    for (unsigned k = 0; k <= n; k++) {
        gmp_interpolate(s, d, GMP_DOF(m), order[off + k], n, qloc);
        unsigned st = GMP_STEP_STATUS(m, qloc, d, n);
        if (st == 1u) {
            status = 1;
            break;
        }
        if (st == 2u) status = 2;
    }
    out[i] = status;
}

// One thread per (motion, rank) item. Items are laid out rank-major so that the first ranks of
// every motion's bisection order (its ends, then its midpoint, ...) run before any later rank:
// motions are sorted by length (longest first, `perm`), and rank r covers sorted motions
// 0 .. count_r where rank_off[r] = sum of count_0 .. count_{r-1} (rank_off has max_rank + 2
// entries). A per-motion flag stops the remaining items of a motion once one collides.
// MULTI: motion mi is checked in scene scene_of[mi] (see gmp_scene_model).
// The parameters both balanced kernels take after the scene arguments, and their names.
#define GMP_BALANCED_PARAMS                                                                      \
    const float* __restrict__ start, const float* __restrict__ diff,                             \
        const unsigned* __restrict__ segments, const unsigned* __restrict__ perm,                \
        const unsigned* __restrict__ rank_off, unsigned n_ranks, unsigned total_items,           \
        const unsigned* __restrict__ order_off, const unsigned* __restrict__ order,              \
        unsigned n_motions, volatile unsigned char* collided
#define GMP_BALANCED_ARGS \
    start, diff, segments, perm, rank_off, n_ranks, total_items, order_off, order, n_motions, collided

// The rank of item g: the last r with rank_off[r] <= g (binary search over n_ranks + 1 offsets).
__device__ __forceinline__ unsigned gmp_rank_of(const unsigned* __restrict__ rank_off, unsigned n_ranks, unsigned g) {
    unsigned lo = 0, hi = n_ranks;
    while (hi - lo > 1) {
        unsigned mid = (lo + hi) >> 1;
        if (rank_off[mid] <= g) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    return lo;
}

// Rank r of motion mi (its configuration order[order_off[n] + r]) unless the motion has collided
// already; sets the motion's flags. The balanced and the tiled kernels differ only in how they
// map a thread to (mi, r).
template <bool MULTI>
__device__ __forceinline__ void gmp_motion_rank(const GmpModel& m, const GmpSceneRange* __restrict__ scenes,
                                                const float* __restrict__ bases,
                                                const unsigned* __restrict__ scene_of, unsigned mi, unsigned r,
                                                const float* __restrict__ start, const float* __restrict__ diff,
                                                const unsigned* __restrict__ segments,
                                                const unsigned* __restrict__ order_off,
                                                const unsigned* __restrict__ order, unsigned n_motions,
                                                volatile unsigned char* collided) {
    if (collided[mi]) return;
    unsigned n = segments[mi];
    unsigned step = order[order_off[n] + r];
    float qloc[GMP_MAX_DOF];
    const float* d = diff + (size_t)mi * GMP_DOF(m);
    gmp_interpolate(start + (size_t)mi * GMP_DOF(m), d, GMP_DOF(m), step, n, qloc);
    unsigned st;
    if (MULTI) {
        const GmpModel ms = gmp_scene_model(m, scenes, bases, scene_of[mi]);
        st = GMP_STEP_STATUS(ms, qloc, d, n);
    } else {
        st = GMP_STEP_STATUS(m, qloc, d, n);
    }
    if (st == 1u) collided[mi] = 1;
    if (st == 2u) collided[n_motions + mi] = 1;
}

template <bool MULTI>
__device__ __forceinline__ void gmp_balanced_item(const GmpModel& m, const GmpSceneRange* __restrict__ scenes,
                                                  const float* __restrict__ bases,
                                                  const unsigned* __restrict__ scene_of, GMP_BALANCED_PARAMS) {
    unsigned g = blockIdx.x * blockDim.x + threadIdx.x;
    if (g >= total_items) return;
    const unsigned r = gmp_rank_of(rank_off, n_ranks, g);
    gmp_motion_rank<MULTI>(m, scenes, bases, scene_of, perm[g - rank_off[r]], r, start, diff, segments, order_off,
                           order, n_motions, collided);
}

extern "C" __global__ void GMP_MOTIONS_BOUNDS check_motions_balanced(const __grid_constant__ GmpModel m,
                                                                     GMP_BALANCED_PARAMS) {
    gmp_balanced_item<false>(m, nullptr, nullptr, nullptr, GMP_BALANCED_ARGS);
}

// check_motions_balanced over several scenes: motion mi is checked in scene scene_of[mi].
extern "C" __global__ void GMP_MOTIONS_BOUNDS check_motions_balanced_multi(const __grid_constant__ GmpModel m,
                                                                           const GmpSceneRange* __restrict__ scenes,
                                                                           const float* __restrict__ bases,
                                                                           const unsigned* __restrict__ scene_of,
                                                                           GMP_BALANCED_PARAMS) {
    gmp_balanced_item<true>(m, scenes, bases, scene_of, GMP_BALANCED_ARGS);
}

// One thread per (motion, rank) item, items laid out in tiles of GMP_MOTION_TILE ranks: tile b
// holds ranks [T b, T (b + 1)) of every motion that has more than T b configurations, motion
// by motion, so that the lanes of a warp check neighbouring ranks of one motion (configurations
// of one stretch of joint space: the same tests fire, little divergence) where the balanced
// layout gives them one rank of 32 different motions. Tiles run in order, so the first ranks of
// every motion's bisection order (ends, midpoint, ... a coarse sampling of the whole motion)
// still come first, and the per-motion flag stops the later tiles of a colliding motion.
// Motions are sorted longest first (perm); in tile b the first full_b sorted motions have T
// items each, then motions full_b .. alive_b (the ones that end inside the tile) have
// len - T b items each, starting at part_off[k] after the full ones. tiles holds the tiles'
// first items (n_tiles + 1 offsets, each tile padded to a whole number of warps), then full_b,
// then alive_b (n_tiles each).
#define GMP_MOTION_TILE 32u
extern "C" __global__ void GMP_MOTIONS_BOUNDS check_motions_tiled(
    const __grid_constant__ GmpModel m, const float* __restrict__ start, const float* __restrict__ diff,
    const unsigned* __restrict__ segments, const unsigned* __restrict__ perm, const unsigned* __restrict__ part_off,
    const unsigned* __restrict__ tiles, unsigned n_tiles, unsigned total_items, const unsigned* __restrict__ order_off,
    const unsigned* __restrict__ order, unsigned n_motions, volatile unsigned char* collided) {
    const unsigned g = blockIdx.x * blockDim.x + threadIdx.x;
    if (g >= total_items) return;
    const unsigned b = gmp_rank_of(tiles, n_tiles, g);
    const unsigned full = tiles[n_tiles + 1u + b];
    const unsigned alive = tiles[2u * n_tiles + 1u + b];
    unsigned local = g - tiles[b];
    unsigned k, r;
    if (local < GMP_MOTION_TILE * full) {
        k = local / GMP_MOTION_TILE;
        r = GMP_MOTION_TILE * b + local % GMP_MOTION_TILE;
    } else {
        if (full >= alive) return;  // padding of a tile without partial motions
        local -= GMP_MOTION_TILE * full;
        unsigned lo = full, hi = alive;
        while (hi - lo > 1) {
            const unsigned mid = (lo + hi) >> 1;
            if (part_off[mid] <= local) {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        k = lo;
        r = GMP_MOTION_TILE * b + (local - part_off[k]);
        if (r > segments[perm[k]]) return;  // padding at the end of the tile
    }
    gmp_motion_rank<false>(m, nullptr, nullptr, nullptr, perm[k], r, start, diff, segments, order_off, order, n_motions,
                           collided);
}

// check_motions_balanced with one warp per (motion, rank) item (small batches; see
// check_configs_warp): gmp_motion_step_status with each test run by one lane of the warp.
extern "C" __global__ void check_motions_balanced_warp(const __grid_constant__ GmpModel m, GMP_BALANCED_PARAMS) {
    const unsigned g = (blockIdx.x * blockDim.x + threadIdx.x) / 32u;
    const unsigned lane = threadIdx.x % 32u;
    if (g >= total_items) return;  // the whole warp
    const unsigned r = gmp_rank_of(rank_off, n_ranks, g);
    const unsigned mi = perm[g - rank_off[r]];
    // One read of the flag for the warp: another warp may set it meanwhile.
    const int done = __shfl_sync(0xffffffffu, lane == 0u ? (int)collided[mi] : 0, 0);
    if (done) return;
    const unsigned n = segments[mi];
    const unsigned step = order[order_off[n] + r];
    float qloc[GMP_MAX_DOF];
    const float* d = diff + (size_t)mi * GMP_DOF(m);
    gmp_interpolate(start + (size_t)mi * GMP_DOF(m), d, GMP_DOF(m), step, n, qloc);
    Xf frames[GMP_MAX_FRAMES];
    gmp_fk(m, qloc, frames);
    // gmp_motion_step_status: 0 free with the sweep margin, 1 in collision, 2 free without it.
    if (__all_sync(0xffffffffu, gmp_frames_valid_share(m, frames, d, n, lane, 32u))) return;
    const bool plain = __all_sync(0xffffffffu, gmp_frames_valid_share(m, frames, nullptr, 0u, lane, 32u));
    if (lane == 0u) {
        if (plain) {
            collided[n_motions + mi] = 1;
        } else {
            collided[mi] = 1;
        }
    }
}

// ---- Warp-coherent order of large configuration batches (seed 004: packets of similar
// configurations per warp) ----
//
// A warp runs the union of the tests its 32 configurations need: where uniform random
// configurations share a warp, a culling bound that fires for one of them runs its tests for
// all. Sorting a batch by a coarse key of its joint values (a grid cell in joint space, the
// first joints most significant) puts configurations whose bodies lie close together in the
// same warp. A configuration's verdict does not depend on the thread that computes it, so the
// order changes only the time: sort_keys, sort_scan and sort_place write the order (a counting
// sort over at most GMP_SORT_BINS cells), and check_configs / check_configs_half take it as
// their order argument, reading each row where it is and writing each verdict to its own
// index. (Within a cell the order follows the atomics and may differ from run to run; the
// verdicts do not.)
#define GMP_SORT_BINS 65536u

// The cell of configuration i (spec: per joint its lower limit and cells per unit as f32 bits,
// then its key bits; 0 bits leave the joint out; at most 16 bits in all) into keys[i], its rank
// among the configurations of its cell into ranks[i] (hist, zeroed by the host, counts them).
extern "C" __global__ void sort_keys(const float* __restrict__ q, unsigned n, unsigned dof,
                                     const unsigned* __restrict__ spec, unsigned* __restrict__ keys,
                                     unsigned* __restrict__ ranks, unsigned* __restrict__ hist) {
    const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const float* row = q + (size_t)i * dof;
    unsigned k = 0u;
    for (unsigned j = 0; j < dof; j++) {
        const unsigned bits = spec[3u * j + 2u];
        if (bits == 0u) continue;
        const float top = (float)((1u << bits) - 1u);
        // fmaxf/fminf also send a NaN to a cell (staging lets none through).
        const float c = fminf(fmaxf((row[j] - __uint_as_float(spec[3u * j])) * __uint_as_float(spec[3u * j + 1u]), 0.0f), top);
        k = (k << bits) | (unsigned)c;
    }
    k &= GMP_SORT_BINS - 1u;
    keys[i] = k;
    ranks[i] = atomicAdd(hist + k, 1u);
}

// Exclusive prefix sums of hist[0 .. GMP_SORT_BINS) in place, by GMP_SORT_TILES blocks of
// GMP_SORT_SCAN_THREADS threads, each block one tile of GMP_SORT_TILE cells (4 per thread,
// one 16-byte load). A block publishes its tile's total as soon as it has it and adds up the
// totals of the tiles before its own (decoupled look-back without the chained prefixes: the
// tiles are few). The words after the cells (zeroed with them by the host) hold the tile
// counter, which hands out tiles in the order blocks start, so a block only ever waits for
// blocks that are already running, and the published totals (top bit set when present; a
// piece has fewer than 2^31 configurations). (The version before, one block with 64 cells
// per thread, took 29 us per piece of 1e6 on an H200: results/collision/scan_rest_2026-11-26/.)
#define GMP_SORT_TILE 1024u
#define GMP_SORT_TILES (GMP_SORT_BINS / GMP_SORT_TILE)
#define GMP_SORT_SCAN_THREADS (GMP_SORT_TILE / 4u)
// The non-aligned block barrier: each thread arrives on its own. __syncthreads() is the aligned
// bar.sync, which lets the hardware count a warp as arrived whole: a warp arriving with a lane
// still in a divergent branch (here warp 0's spin on the earlier tiles below, lane 0's write)
// could let that lane pass the next barrier early; kernels/rrtc.cu (appended to this unit, and
// using it for every barrier) met that on an H100.
__device__ __forceinline__ void gmp_block_sync() { asm volatile("barrier.sync 0;" ::: "memory"); }

extern "C" __global__ void __launch_bounds__(GMP_SORT_SCAN_THREADS) sort_scan(unsigned* __restrict__ hist) {
    __shared__ unsigned warp_sums[GMP_SORT_SCAN_THREADS / 32u];
    __shared__ unsigned tile_s, before_s;
    volatile unsigned* ctrl = hist + GMP_SORT_BINS;  // [0]: tile counter; [1 + t]: tile t's total
    const unsigned t = threadIdx.x, lane = t % 32u, warp = t / 32u;
    if (t == 0u) tile_s = atomicAdd(const_cast<unsigned*>(ctrl), 1u);
    gmp_block_sync();
    const unsigned tile = tile_s;
    uint4* cells = reinterpret_cast<uint4*>(hist + tile * GMP_SORT_TILE) + t;
    const uint4 v = *cells;
    const unsigned s = v.x + v.y + v.z + v.w;
    unsigned inc = s;
#pragma unroll
    for (unsigned d = 1u; d < 32u; d <<= 1) {
        const unsigned o = __shfl_up_sync(0xffffffffu, inc, d);
        if (lane >= d) inc += o;
    }
    if (lane == 31u) warp_sums[warp] = inc;
    gmp_block_sync();
    if (warp == 0u) {
        unsigned w = lane < GMP_SORT_SCAN_THREADS / 32u ? warp_sums[lane] : 0u;
#pragma unroll
        for (unsigned d = 1u; d < 32u; d <<= 1) {
            const unsigned o = __shfl_up_sync(0xffffffffu, w, d);
            if (lane >= d) w += o;
        }
        if (lane < GMP_SORT_SCAN_THREADS / 32u) warp_sums[lane] = w;
        // Publish this tile's total, then add up the earlier tiles' (lane l: tiles l, l + 32).
        if (lane == GMP_SORT_SCAN_THREADS / 32u - 1u) {
            __threadfence();
            ctrl[1u + tile] = 0x80000000u | w;
        }
        unsigned before = 0u;
        for (unsigned p = lane; p < tile; p += 32u) {
            unsigned x;
            do {
                x = ctrl[1u + p];
            } while ((x & 0x80000000u) == 0u);
            before += x & 0x7fffffffu;
        }
#pragma unroll
        for (unsigned d = 16u; d > 0u; d >>= 1) before += __shfl_xor_sync(0xffffffffu, before, d);
        if (lane == 0u) before_s = before;
    }
    gmp_block_sync();
    unsigned run = before_s + inc - s + (warp > 0u ? warp_sums[warp - 1u] : 0u);  // cells before this thread's
    uint4 o;
    o.x = run; run += v.x;
    o.y = run; run += v.y;
    o.z = run; run += v.z;
    o.w = run;
    *cells = o;
}

// Configuration i's place in key order: order[first of its cell + its rank] = i.
extern "C" __global__ void sort_place(unsigned n, const unsigned* __restrict__ keys, const unsigned* __restrict__ ranks,
                                      const unsigned* __restrict__ hist, unsigned* __restrict__ order) {
    const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    order[hist[keys[i]] + ranks[i]] = i;
}
