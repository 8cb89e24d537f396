// gpu_motion_planner: RRT-Connect resident on the GPU (src/gpu/rrtc.rs, planners::device).
// Appended to collision.cu in the collision translation unit (generic and robot-specialised),
// so its motion checks run GMP_STEP_STATUS, the per-configuration test of the motion kernels.
//
// One block plans one problem from start to finish: no host round trip per extension. The
// block works bulk-synchronously, so the result depends only on the inputs and the seed, never
// on the scheduling of the warps:
//
//   1. every warp draws a sample (a counter-based generator keyed by seed, iteration and warp),
//      finds the nearest vertex of tree `a` (a warp-wide scan, ties to the lowest index), steers
//      towards the sample and checks the motion, its configurations dealt over the lanes;
//   2. thread 0 applies the verdicts in warp order (dynamic-domain radii, failure counts, new
//      vertices), as planners::rrt_connect does for a batch of samples;
//   3. the warp of each new vertex of `a` finds the nearest vertex of `b` and the chain of
//      range-long steps from it; the chains' motions are then dealt over all warps, each
//      chain's motions needed up to its first invalid one;
//   4. thread 0 adds the valid prefixes to `b` in warp order; a fully valid chain joins the
//      trees and the path is written out;
//   5. tree balance and turns, as on the CPU.
//
// A motion's verdict is check_motions_refined's (cpu.rs refine_motions_up_to): the motion is
// prepared as prepare_motions does (f32 start, f32 of the f64 wrapped difference, segments
// ceil(distance / resolution)), every configuration of a level is checked with GMP_STEP_STATUS;
// any 1 (in collision) makes it invalid, all 0 valid, otherwise the next level has twice the
// segments, up to max_refinements more levels. Joint-space arithmetic (distances, steering,
// interpolation, wrap-around) is the f64 arithmetic of robot/space.rs, operation for operation.

#ifndef GMP_RRTC_MAX_WARPS
#define GMP_RRTC_MAX_WARPS 32
#endif

// Launch bounds of rrtc_plan_multi (many problems in one launch): blocks of at most
// GMP_RRTC_THREADS threads, at least GMP_RRTC_MIN_BLOCKS of them resident per multiprocessor,
// which caps the registers per thread (65536 / (threads x blocks)). Without a cap the kernel
// takes 255 registers and one block of 8 warps fills a multiprocessor, its warps waiting on
// dependent arithmetic with nothing else to run: with 3 blocks (80 registers) all MBM Panda
// problems take 23 % less time in one launch, UR5 34 % less (H100, 8 attempts each). One
// problem alone is about 10 % slower with the cap (spills), so rrtc_plan, whose launches hold
// few blocks, has none. A unit compiled with a register cap (GMP_SPEC_REGISTER_CAP) keeps that
// cap instead.
#ifndef GMP_RRTC_THREADS
#define GMP_RRTC_THREADS 256
#endif
#ifndef GMP_RRTC_MIN_BLOCKS
#define GMP_RRTC_MIN_BLOCKS 3
#endif
#if defined(GMP_SPEC_REGISTER_CAP) || GMP_RRTC_MIN_BLOCKS == 0
#define GMP_RRTC_MULTI_BOUNDS
#else
#define GMP_RRTC_MULTI_BOUNDS __launch_bounds__(GMP_RRTC_THREADS, GMP_RRTC_MIN_BLOCKS)
#endif

// The planner's inputs and buffers (twin: RrtcParams in src/gpu/rrtc.rs; field order and
// sizes must match).
struct GmpRrtcParams {
    const double* start;        // problems x dof
    const double* goal;         // problems x dof
    const double* lower;        // dof: sampling bounds (continuous joints: -pi, pi)
    const double* upper;        // dof
    double* tree_q;             // problems x 2 x cap x dof
    unsigned* tree_parent;      // problems x 2 x cap
    double* tree_radius;        // problems x 2 x cap (dynamic-domain radius, +inf: unbounded)
    unsigned* tree_fails;       // problems x 2 x cap
    double* path;               // path_pool x dof: every problem's path, each where path_used said
    unsigned* result;           // problems x GMP_RRTC_RESULT_WORDS
    unsigned* path_used;        // vertices of the pool taken (the host zeroes it)
    unsigned* best;             // per problem: ~key of the best solved attempt (0: none yet)
    double range;
    double resolution;
    double dd_radius;           // radius of a vertex's domain at its first failure, x range
    double dd_alpha;            // relative radius change per extension
    double dd_min_factor;       // smallest radius, x range
    double step_floor_factor;   // shortest step, x range
    unsigned long long seed;
    unsigned long long time_limit_ns;  // 0: none
    unsigned continuous;        // bit j: joint j wraps around
    unsigned cap;               // vertices per tree
    unsigned max_iterations;
    unsigned max_refinements;
    unsigned flags;             // bit 0: dynamic domains, bit 1: tree balance
    unsigned stuck_after;       // failures in a row after which a tree yields a turn
    unsigned step_halve_after;  // failures from a vertex per halving of its step
    unsigned path_pool;         // vertices the path pool holds
    unsigned attempts;          // blocks (independent attempts) per problem, 1 to 256
    unsigned pad;
};

// result words: status (0 solved, 1 iteration or time limit, 2 a tree is full, 3 the path pool
// is full), path length, iterations, vertices, motions checked, configurations checked (low and
// high word), microseconds on the device, the path's first vertex in the pool.
#define GMP_RRTC_RESULT_WORDS 10u
#define GMP_RRTC_SOLVED 0u
#define GMP_RRTC_LIMIT 1u
#define GMP_RRTC_FULL 2u
#define GMP_RRTC_POOL_FULL 3u
#define GMP_RRTC_BEATEN 4u

// Parallel attempts (planners::attempt_seed and the race of planners::race, on the device):
// block b plans problem b / attempts with attempt b % attempts, seeded like the CPU's attempts.
// An attempt that solves the problem at iteration i has the key (i << 8) | attempt; the
// smallest key wins. An attempt stops (GMP_RRTC_BEATEN) as soon as a key smaller than any it
// could still reach is known, so the winner is the attempt with the smallest key over full
// runs, whatever the timing of the blocks: the result is deterministic.

#define GMP_RRTC_PI 3.141592653589793
#define GMP_RRTC_TAU 6.283185307179586

// space.rs wrapped_difference.
__device__ __forceinline__ double gmp_wrapped_difference(double a, double b) {
    double d = fmod(b - a, GMP_RRTC_TAU);
    if (d > GMP_RRTC_PI) {
        d -= GMP_RRTC_TAU;
    } else if (d < -GMP_RRTC_PI) {
        d += GMP_RRTC_TAU;
    }
    return d;
}

// space.rs wrap_angle.
__device__ __forceinline__ double gmp_wrap_angle(double v) {
    double w = fmod(v, GMP_RRTC_TAU);
    if (w > GMP_RRTC_PI) {
        w -= GMP_RRTC_TAU;
    } else if (w < -GMP_RRTC_PI) {
        w += GMP_RRTC_TAU;
    }
    return w;
}

// space.rs difference, joint j.
__device__ __forceinline__ double gmp_joint_diff(unsigned cont, unsigned j, double a, double b) {
    return ((cont >> j) & 1u) ? gmp_wrapped_difference(a, b) : b - a;
}

// space.rs distance.
__device__ __forceinline__ double gmp_space_distance(unsigned cont, unsigned dof, const double* a, const double* b) {
    double s = 0.0;
    for (unsigned j = 0; j < dof; j++) {
        const double d = gmp_joint_diff(cont, j, a[j], b[j]);
        s += d * d;
    }
    return sqrt(s);
}

// space.rs interpolate, joint j.
__device__ __forceinline__ double gmp_space_lerp(unsigned cont, unsigned j, double a, double b, double t) {
    if ((cont >> j) & 1u) return gmp_wrap_angle(a + gmp_wrapped_difference(a, b) * t);
    return a + (b - a) * t;
}

// A uniform double in [0, 1) from a 64-bit key (splitmix64 finaliser; 53 bits).
__device__ __forceinline__ double gmp_rrtc_uniform(unsigned long long x) {
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    x ^= x >> 31;
    return (double)(x >> 11) * (1.0 / 9007199254740992.0);
}

__device__ __forceinline__ unsigned long long gmp_globaltimer() {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

// check_motions_refined of the motion a -> b (f64 configurations), by one warp (BLOCK false:
// `lane` is the lane) or by the whole block (BLOCK true: every thread calls it, `lane` is
// threadIdx.x): 1 = valid, 0 = invalid. `evaluated` (lane 0's) grows by the configurations
// checked. Warp mode only: 2 = given up, because a solved attempt's key (`best`) is below `key`,
// the key this attempt would get for solving in the iteration under way, so nothing it finds from
// now on can win (key 0: never given up).
#define GMP_RRTC_ABORTED 2
template <bool BLOCK>
__device__ int gmp_rrtc_motion_valid(const GmpModel& m, const GmpRrtcParams& p, const double* a, const double* b,
                                     unsigned lane, unsigned long long* evaluated, const volatile unsigned* best,
                                     unsigned key) {
    const unsigned lanes = BLOCK ? blockDim.x : 32u;
    const unsigned dof = GMP_DOF(m);
    float s32[GMP_MAX_DOF], d32[GMP_MAX_DOF];
    double dist2 = 0.0;
    for (unsigned j = 0; j < dof; j++) {
        const double d = gmp_joint_diff(p.continuous, j, a[j], b[j]);
        dist2 += d * d;
        s32[j] = (float)a[j];
        d32[j] = (float)d;
    }
    const double dist = sqrt(dist2);
    // space.rs segments, then u32::try_from(..).unwrap_or(u32::MAX).
    unsigned n = 1u;
    if (!(isnan(p.resolution) || p.resolution <= 0.0) && isfinite(dist)) {
        const double c = ceil(dist / p.resolution);
        n = c >= 4294967295.0 ? 0xffffffffu : (c < 1.0 ? 1u : (unsigned)c);
    }
    // The levels refine_motions_up_to visits: n, 2n, ... while below 2^24, at most
    // max_refinements + 1 of them. The verdict is valid exactly when some level passes its swept
    // check at every configuration (CpuChecker::motion_valid explains why), so a level is given
    // up at its first round with an uncertain configuration (it cannot pass; the next one may),
    // and the motion is invalid at the first configuration in collision (it lies on every finer
    // level too: step s of n and step 2s of 2n are the same f32 configuration) or at an uncertain
    // configuration of the last level.
    for (unsigned level = 0;; level++) {
        const bool last = level >= p.max_refinements || n >= (1u << 23);
        // A level: configurations 0 ..= n; in round r lane l checks l * rounds + r, so that the
        // first round already samples the whole motion every 1/lanes of it.
        const unsigned count = n + 1u;
        const unsigned rounds = (count + lanes - 1u) / lanes;
        bool passed = true;
        for (unsigned r = 0; r < rounds; r++) {
            if (!BLOCK && key != 0u) {
                unsigned beaten = 0u;
                if (lane == 0u) {
                    const unsigned bw = *best;
                    beaten = (bw != 0u && ~bw < key) ? 1u : 0u;
                }
                if (__shfl_sync(0xffffffffu, beaten, 0) != 0u) return GMP_RRTC_ABORTED;
            }
            const unsigned s = lane * rounds + r;
            unsigned st = 0u;
            if (s < count) {
                float q[GMP_MAX_DOF];
                gmp_interpolate(s32, d32, dof, s, n, q);
                st = GMP_STEP_STATUS(m, q, d32, n);
            }
            const unsigned checked = BLOCK ? (unsigned)__syncthreads_count(s < count)
                                           : __popc(__ballot_sync(0xffffffffu, s < count));
            if (lane == 0u) *evaluated += checked;
            if (BLOCK ? __syncthreads_or(st == 1u) : __any_sync(0xffffffffu, st == 1u)) return 0;
            if (BLOCK ? __syncthreads_or(st == 2u) : __any_sync(0xffffffffu, st == 2u)) {
                passed = false;
                break;
            }
        }
        if (passed) return 1;
        if (last) return 0;
        n *= 2u;  // refine_motions_up_to: REFINE_FACTOR
    }
}

// One tree of a problem in global memory, with its block-shared bookkeeping.
struct GmpRrtcTree {
    double* q;
    unsigned* parent;
    double* radius;
    unsigned* fails;
};

// Nearest vertex of the first `size` vertices of `t` to x, by one warp: (distance, index),
// ties to the lowest index.
__device__ __forceinline__ void gmp_rrtc_nearest(const GmpRrtcTree& t, unsigned size, unsigned dof, unsigned cont,
                                                 const double* x, unsigned lane, double* best_d, unsigned* best_i) {
    double bd = __longlong_as_double(0x7ff0000000000000ll);
    unsigned bi = 0xffffffffu;
    for (unsigned v = lane; v < size; v += 32u) {
        const double d = gmp_space_distance(cont, dof, t.q + (size_t)v * dof, x);
        if (d < bd) {
            bd = d;
            bi = v;
        }
    }
    for (int off = 16; off > 0; off >>= 1) {
        const double od = __shfl_down_sync(0xffffffffu, bd, off);
        const unsigned oi = __shfl_down_sync(0xffffffffu, bi, off);
        if (od < bd || (od == bd && oi < bi)) {
            bd = od;
            bi = oi;
        }
    }
    *best_d = __shfl_sync(0xffffffffu, bd, 0);
    *best_i = __shfl_sync(0xffffffffu, bi, 0);
}

// Block-shared state of a problem.
struct GmpRrtcShared {
    unsigned size[2];
    unsigned unbounded[2];
    unsigned failed_in_row[2];
    unsigned yield_turn[2];
    double radius_cap[2];
    double lo[2][GMP_MAX_DOF];
    double hi[2][GMP_MAX_DOF];
    unsigned a;          // the tree extended this iteration (0: the start's)
    unsigned stop;       // 1 + status once decided
    unsigned aborted;    // a motion check of this iteration was given up (GMP_RRTC_ABORTED)
    unsigned joined_a;   // vertex of tree a and tip of tree b of the joining chain
    unsigned joined_b;
    unsigned n_added;
    unsigned added[GMP_RRTC_MAX_WARPS];
    // Proposals of phase 1: parent (0xffffffff: none), verdict, the new configuration.
    unsigned prop_parent[GMP_RRTC_MAX_WARPS];
    unsigned prop_ok[GMP_RRTC_MAX_WARPS];
    double prop_q[GMP_RRTC_MAX_WARPS][GMP_MAX_DOF];
    // Chains of phase 3: nearest vertex of b, steps, valid motions.
    unsigned chain_near[GMP_RRTC_MAX_WARPS];
    unsigned chain_steps[GMP_RRTC_MAX_WARPS];
    unsigned chain_valid[GMP_RRTC_MAX_WARPS];
    double scratch[GMP_RRTC_MAX_WARPS][2][GMP_MAX_DOF];
    unsigned long long motions;
    unsigned long long configs;
};

// DomainTree::push (thread 0). False when the tree is full.
__device__ bool gmp_rrtc_push(GmpRrtcShared& sh, const GmpRrtcTree& t, unsigned ti, unsigned cap, unsigned dof,
                              const double* q, unsigned parent, unsigned* index) {
    const unsigned v = sh.size[ti];
    if (v >= cap) return false;
    for (unsigned j = 0; j < dof; j++) {
        t.q[(size_t)v * dof + j] = q[j];
        sh.lo[ti][j] = fmin(sh.lo[ti][j], q[j]);
        sh.hi[ti][j] = fmax(sh.hi[ti][j], q[j]);
    }
    t.parent[v] = parent;
    t.radius[v] = __longlong_as_double(0x7ff0000000000000ll);
    t.fails[v] = 0u;
    sh.unbounded[ti] += 1u;
    sh.size[ti] = v + 1u;
    *index = v;
    return true;
}

// DomainTree::failed (thread 0).
__device__ void gmp_rrtc_failed(GmpRrtcShared& sh, const GmpRrtcTree& t, unsigned ti, const GmpRrtcParams& p,
                                unsigned v) {
    sh.failed_in_row[ti] += 1u;
    if (sh.failed_in_row[ti] % p.stuck_after == 0u) sh.yield_turn[ti] = 1u;
    double r = t.radius[v];
    if (isfinite(r)) {
        r = fmax(r * (1.0 - p.dd_alpha), p.dd_min_factor * p.range);
    } else {
        sh.unbounded[ti] = sh.unbounded[ti] > 0u ? sh.unbounded[ti] - 1u : 0u;
        r = p.dd_radius * p.range;
    }
    t.radius[v] = r;
    sh.radius_cap[ti] = fmax(sh.radius_cap[ti], r);
    if (t.fails[v] != 0xffffffffu) t.fails[v] += 1u;
}

// DomainTree::extended (thread 0).
__device__ void gmp_rrtc_extended(GmpRrtcShared& sh, const GmpRrtcTree& t, unsigned ti, const GmpRrtcParams& p,
                                  unsigned v) {
    sh.failed_in_row[ti] = 0u;
    const double r = t.radius[v];
    if (isfinite(r)) {
        t.radius[v] = r * (1.0 + p.dd_alpha);
        sh.radius_cap[ti] = fmax(sh.radius_cap[ti], t.radius[v]);
    }
    t.fails[v] = 0u;
}

// DomainTree::surely_outside.
__device__ bool gmp_rrtc_surely_outside(const GmpRrtcShared& sh, unsigned ti, unsigned dof, unsigned cont,
                                        const double* q) {
    if (sh.unbounded[ti] > 0u) return false;
    double s = 0.0;
    for (unsigned j = 0; j < dof; j++) {
        if ((cont >> j) & 1u) continue;
        const double gap = fmax(fmax(sh.lo[ti][j] - q[j], q[j] - sh.hi[ti][j]), 0.0);
        s += gap * gap;
    }
    return sqrt(s) * (1.0 - 1e-9) > sh.radius_cap[ti];
}

// Vertices from v up to the root of tree t, both included.
__device__ unsigned gmp_rrtc_chain_len(const GmpRrtcTree& t, unsigned v) {
    unsigned n = 1u;
    while (t.parent[v] != 0xffffffffu) {
        v = t.parent[v];
        n++;
    }
    return n;
}

template <bool MULTI>
__device__ void gmp_rrtc(const GmpModel& m0, const GmpSceneRange* __restrict__ scenes, const float* __restrict__ bases,
                         const unsigned* __restrict__ scene_of, const GmpRrtcParams& p) {
    __shared__ GmpRrtcShared sh;
    const unsigned prob = blockIdx.x / p.attempts;
    const unsigned attempt = blockIdx.x % p.attempts;
    const unsigned long long seed =
        attempt == 0u ? p.seed : p.seed ^ ((unsigned long long)attempt * 0x9E3779B97F4A7C15ull);
    volatile unsigned* best = p.best + prob;
    const unsigned lane = threadIdx.x % 32u;
    const unsigned warp = threadIdx.x / 32u;
    const unsigned warps = min(blockDim.x / 32u, (unsigned)GMP_RRTC_MAX_WARPS);
    const GmpModel m = MULTI ? gmp_scene_model(m0, scenes, bases, scene_of[prob]) : m0;
    const unsigned dof = GMP_DOF(m);
    const unsigned cont = p.continuous;
    const unsigned cap = p.cap;
    const bool dd = (p.flags & 1u) != 0u;
    const bool balance = (p.flags & 2u) != 0u;
    const double* start = p.start + (size_t)prob * dof;
    const double* goal = p.goal + (size_t)prob * dof;
    GmpRrtcTree trees[2];
    for (unsigned t = 0; t < 2u; t++) {
        const size_t base = ((size_t)blockIdx.x * 2u + t) * cap;
        trees[t].q = p.tree_q + base * dof;
        trees[t].parent = p.tree_parent + base;
        trees[t].radius = p.tree_radius + base;
        trees[t].fails = p.tree_fails + base;
    }
    unsigned* res = p.result + (size_t)blockIdx.x * GMP_RRTC_RESULT_WORDS;
    const unsigned long long t0 = gmp_globaltimer();
    unsigned long long evaluated = 0;  // lane 0 of each warp: configurations it checked
    unsigned long long motions = 0;    // lane 0 of each warp: motions it checked

    if (threadIdx.x == 0u) {
        sh.stop = 0u;
        sh.aborted = 0u;
        sh.a = 0u;
        sh.motions = 0ull;
        sh.configs = 0ull;
        for (unsigned t = 0; t < 2u; t++) {
            sh.size[t] = 0u;
            sh.unbounded[t] = 0u;
            sh.failed_in_row[t] = 0u;
            sh.yield_turn[t] = 0u;
            sh.radius_cap[t] = 0.0;
            const double* root = t == 0u ? start : goal;
            for (unsigned j = 0; j < dof; j++) {
                sh.lo[t][j] = root[j];
                sh.hi[t][j] = root[j];
            }
            unsigned v;
            gmp_rrtc_push(sh, trees[t], t, cap, dof, root, 0xffffffffu, &v);
            trees[t].parent[0] = 0xffffffffu;
        }
        if (cap == 0u) sh.stop = 1u + GMP_RRTC_FULL;
    }
    __syncthreads();
    // The straight motion first (planners::rrt_connect; of parallel attempts only the first),
    // by the whole block: it is often long, and nothing else is to be done meanwhile.
    if (sh.stop == 0u && attempt == 0u) {
        const bool ok = gmp_rrtc_motion_valid<true>(m, p, start, goal, threadIdx.x, &evaluated, best, 0u) == 1;
        if (threadIdx.x == 0u) {
            motions++;
            if (ok) {
                sh.stop = 1u + GMP_RRTC_SOLVED;
                sh.joined_a = 0xffffffffu;  // the direct path
                atomicMax((unsigned*)best, ~0u);  // key 0: iteration 0, attempt 0
            }
        }
    }
    __syncthreads();
    unsigned iterations = 0;
    while (sh.stop == 0u) {
        if (threadIdx.x == 0u) {
            if (iterations >= p.max_iterations ||
                (p.time_limit_ns > 0ull && gmp_globaltimer() - t0 > p.time_limit_ns)) {
                sh.stop = 1u + GMP_RRTC_LIMIT;
            }
            // Beaten: a solved attempt's key is below the least this one could still reach.
            const unsigned b = *best;
            if (b != 0u && ~b < ((min(iterations + 1u, 0xffffffu) << 8) | attempt)) sh.stop = 1u + GMP_RRTC_BEATEN;
        }
        __syncthreads();
        if (sh.stop != 0u) break;
        iterations++;
        const unsigned key = (min(iterations, 0xffffffu) << 8) | attempt;
        const unsigned ta = sh.a;
        const unsigned tb = 1u - ta;
        const GmpRrtcTree& A = trees[ta];
        const GmpRrtcTree& B = trees[tb];
        // 1. One sample per warp, steered and checked.
        if (warp < warps) {
            double* target = sh.scratch[warp][0];
            double* nq = sh.prop_q[warp];
            if (lane == 0u) {
                const unsigned long long key =
                    seed * 0x9E3779B97F4A7C15ull ^
                    ((unsigned long long)iterations << 8) ^ (unsigned long long)warp;
                for (unsigned j = 0; j < dof; j++) {
                    const double u = gmp_rrtc_uniform(key * 0xD1B54A32D192ED03ull + j);
                    target[j] = p.lower[j] + (p.upper[j] - p.lower[j]) * u;
                }
                sh.prop_parent[warp] = 0xffffffffu;
            }
            __syncwarp();
            bool go = !(dd && gmp_rrtc_surely_outside(sh, ta, dof, cont, target));
            double nd = 0.0;
            unsigned ni = 0xffffffffu;
            if (go) {
                gmp_rrtc_nearest(A, sh.size[ta], dof, cont, target, lane, &nd, &ni);
                go = ni != 0xffffffffu && !(dd && A.radius[ni] < nd);
            }
            if (go) {
                const double* from = A.q + (size_t)ni * dof;
                double step = p.range;
                if (dd) {
                    const unsigned halvings = min(A.fails[ni] / p.step_halve_after, 16u);
                    step = fmax(ldexp(p.range, -(int)halvings), p.step_floor_factor * p.range);
                }
                if (lane == 0u) {
                    // Context::steer.
                    const double d = gmp_space_distance(cont, dof, from, target);
                    for (unsigned j = 0; j < dof; j++) {
                        nq[j] = d <= step ? target[j] : gmp_space_lerp(cont, j, from[j], target[j], step / d);
                    }
                }
                __syncwarp();
                go = gmp_space_distance(cont, dof, from, nq) > 0.0;
                if (go) {
                    const int r = gmp_rrtc_motion_valid<false>(m, p, from, nq, lane, &evaluated, best, key);
                    if (lane == 0u) {
                        motions++;
                        if (r == GMP_RRTC_ABORTED) sh.aborted = 1u;
                        sh.prop_parent[warp] = ni;
                        sh.prop_ok[warp] = r == 1 ? 1u : 0u;
                    }
                }
            }
        }
        __syncthreads();
        // 2. The verdicts in warp order (none once beaten).
        if (threadIdx.x == 0u) {
            sh.n_added = 0u;
            if (sh.aborted) sh.stop = 1u + GMP_RRTC_BEATEN;
            for (unsigned w = 0; w < warps && sh.stop == 0u; w++) {
                const unsigned par = sh.prop_parent[w];
                if (par == 0xffffffffu) continue;
                if (!sh.prop_ok[w]) {
                    gmp_rrtc_failed(sh, A, ta, p, par);
                    continue;
                }
                gmp_rrtc_extended(sh, A, ta, p, par);
                unsigned v;
                if (!gmp_rrtc_push(sh, A, ta, cap, dof, sh.prop_q[w], par, &v)) {
                    sh.stop = 1u + GMP_RRTC_FULL;
                    break;
                }
                sh.added[sh.n_added++] = v;
            }
        }
        __syncthreads();
        if (sh.stop != 0u) break;
        // 3. Chains from tree b towards each new vertex of a: the nearest vertex of b and the
        // chain's steps by the warp of each new vertex, then the chains' motions dealt over all
        // warps, step by step. chain_valid[k] ends as the number of valid motions before the
        // chain's first invalid one: a motion is skipped only once one before it is known to be
        // invalid, so every motion before the first invalid one is checked, whatever the order
        // the warps run in. (Which motions after it get checked, and so the counts of work done,
        // may vary from run to run; the plan does not.)
        if (warp < sh.n_added) {
            const double* target = A.q + (size_t)sh.added[warp] * dof;
            double nd;
            unsigned ni;
            gmp_rrtc_nearest(B, sh.size[tb], dof, cont, target, lane, &nd, &ni);
            const double d = gmp_space_distance(cont, dof, B.q + (size_t)ni * dof, target);
            const double cs = ceil(d / p.range);
            if (lane == 0u) {
                const unsigned steps = cs < 1.0 ? 1u : (cs > 1e6 ? 1000000u : (unsigned)cs);
                sh.chain_near[warp] = ni;
                sh.chain_steps[warp] = steps;
                sh.chain_valid[warp] = steps;
            }
        }
        __syncthreads();
        if (warp < warps && sh.n_added > 0u) {
            unsigned longest = 0;
            for (unsigned k = 0; k < sh.n_added; k++) longest = max(longest, sh.chain_steps[k]);
            const unsigned items = sh.n_added * longest;
            double* prev = sh.scratch[warp][0];
            double* next = sh.scratch[warp][1];
            for (unsigned g = warp; g < items; g += warps) {
                const unsigned k = g % sh.n_added;
                const unsigned st = g / sh.n_added + 1u;
                const unsigned steps = sh.chain_steps[k];
                // Uniform over the warp: one read of the shared word.
                const unsigned known = __shfl_sync(0xffffffffu, *(volatile unsigned*)&sh.chain_valid[k], 0);
                if (__shfl_sync(0xffffffffu, *(volatile unsigned*)&sh.aborted, 0) != 0u) break;
                if (st > steps || st - 1u >= known) continue;
                const double* from = B.q + (size_t)sh.chain_near[k] * dof;
                const double* target = A.q + (size_t)sh.added[k] * dof;
                if (lane == 0u) {
                    for (unsigned j = 0; j < dof; j++) {
                        prev[j] = st == 1u ? from[j]
                                           : gmp_space_lerp(cont, j, from[j], target[j], (double)(st - 1u) / (double)steps);
                        next[j] = st == steps ? target[j]
                                              : gmp_space_lerp(cont, j, from[j], target[j], (double)st / (double)steps);
                    }
                }
                __syncwarp();
                const int r = gmp_rrtc_motion_valid<false>(m, p, prev, next, lane, &evaluated, best, key);
                if (lane == 0u) {
                    motions++;
                    if (r == GMP_RRTC_ABORTED) sh.aborted = 1u;
                    if (r != 1) atomicMin(&sh.chain_valid[k], st - 1u);
                }
                __syncwarp();
            }
        }
        __syncthreads();
        // 4. Valid prefixes into b, in warp order; a whole chain joins the trees (none once
        // beaten).
        if (threadIdx.x == 0u) {
            double* pt = sh.scratch[0][0];
            if (sh.aborted) sh.stop = 1u + GMP_RRTC_BEATEN;
            for (unsigned k = 0; k < sh.n_added && sh.stop == 0u; k++) {
                const unsigned steps = sh.chain_steps[k];
                const unsigned valid = sh.chain_valid[k];
                const unsigned near = sh.chain_near[k];
                const double* from = B.q + (size_t)near * dof;
                const double* target = A.q + (size_t)sh.added[k] * dof;
                unsigned tip = near;
                const unsigned pushes = min(valid, steps - 1u);
                for (unsigned s = 1; s <= pushes; s++) {
                    for (unsigned j = 0; j < dof; j++) {
                        pt[j] = gmp_space_lerp(cont, j, from[j], target[j], (double)s / (double)steps);
                    }
                    unsigned v;
                    if (!gmp_rrtc_push(sh, B, tb, cap, dof, pt, tip, &v)) {
                        sh.stop = 1u + GMP_RRTC_FULL;
                        break;
                    }
                    tip = v;
                }
                if (sh.stop == 0u && valid == steps) {
                    sh.stop = 1u + GMP_RRTC_SOLVED;
                    atomicMax((unsigned*)best, ~((min(iterations, 0xffffffu) << 8) | attempt));
                    sh.joined_a = sh.added[k];
                    sh.joined_b = tip;
                }
            }
            if (sh.stop == 0u) {
                // 5. Turns: a tree less than half the other's size goes again, unless it yields.
                const unsigned yielded = sh.yield_turn[ta];
                sh.yield_turn[ta] = 0u;
                const bool keep = balance && !yielded && 2u * sh.size[ta] <= sh.size[tb];
                if (!keep) sh.a = tb;
            }
        }
        __syncthreads();
    }
    // Counters, then the path (thread 0).
    if (lane == 0u) {
        atomicAdd(&sh.motions, motions);
        atomicAdd(&sh.configs, evaluated);
    }
    __syncthreads();
    if (threadIdx.x != 0u) return;
    unsigned status = sh.stop - 1u;
    unsigned len = 0;
    unsigned offset = 0;
    if (status == GMP_RRTC_SOLVED) {
        unsigned vs = 0, vg = 0, ls = 1, lg = 1;
        if (sh.joined_a != 0xffffffffu) {
            // The start tree's chain from its root, then the goal tree's from the tip.
            vs = sh.a == 0u ? sh.joined_a : sh.joined_b;
            vg = sh.a == 0u ? sh.joined_b : sh.joined_a;
            ls = gmp_rrtc_chain_len(trees[0], vs);
            lg = gmp_rrtc_chain_len(trees[1], vg);
        }
        len = ls + lg;
        offset = atomicAdd(p.path_used, len);
        if (offset > p.path_pool || p.path_pool - offset < len) {
            status = GMP_RRTC_POOL_FULL;
            len = 0;
        } else {
            double* out = p.path + (size_t)offset * dof;
            unsigned v = vs;
            for (unsigned k = 0; k < ls; k++) {
                const unsigned at = ls - 1u - k;
                for (unsigned j = 0; j < dof; j++) out[(size_t)at * dof + j] = trees[0].q[(size_t)v * dof + j];
                v = trees[0].parent[v];
            }
            v = vg;
            for (unsigned k = 0; k < lg; k++) {
                for (unsigned j = 0; j < dof; j++) out[(size_t)(ls + k) * dof + j] = trees[1].q[(size_t)v * dof + j];
                v = trees[1].parent[v];
            }
        }
    }
    res[0] = status;
    res[1] = len;
    res[2] = iterations;
    res[3] = sh.size[0] + sh.size[1];
    res[4] = (unsigned)min(sh.motions, 0xffffffffull);
    res[5] = (unsigned)(sh.configs & 0xffffffffull);
    res[6] = (unsigned)(sh.configs >> 32);
    res[7] = (unsigned)(((gmp_globaltimer() - t0) / 1000ull) & 0xffffffffull);
    res[8] = offset;
    res[9] = 0u;
}

// One block per problem, every problem in the model's scene.
extern "C" __global__ void rrtc_plan(const __grid_constant__ GmpModel m, const __grid_constant__ GmpRrtcParams p) {
    gmp_rrtc<false>(m, nullptr, nullptr, nullptr, p);
}

// One block per problem, problem i in scene scene_of[i] (src/gpu/hub.rs).
extern "C" __global__ void GMP_RRTC_MULTI_BOUNDS rrtc_plan_multi(const __grid_constant__ GmpModel m, const GmpSceneRange* __restrict__ scenes,
                                           const float* __restrict__ bases, const unsigned* __restrict__ scene_of,
                                           const __grid_constant__ GmpRrtcParams p) {
    gmp_rrtc<true>(m, scenes, bases, scene_of, p);
}
