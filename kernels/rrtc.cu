// gpu_motion_planner: RRT-Connect resident on the GPU (src/gpu/rrtc.rs, planners::device).
// Appended to collision.cu in the collision translation unit (generic and robot-specialised),
// so its motion checks run GMP_STEP_STATUS, the per-configuration test of the motion kernels.
//
// One block plans one attempt at a problem from start to finish: no host round trip per
// extension (the blocks take their attempts from a queue, "Scheduling" below). The block works
// bulk-synchronously, so the result depends only on the inputs and the seed, never
// on the scheduling of the warps. A problem may have a goal set: attempt a grows its goal tree
// from goal a % goals, and the race of the attempts ("Parallel attempts") picks the goal reached.
// Each iteration:
//
//   1. every warp draws a sample (a counter-based generator keyed by seed, iteration and warp),
//      finds the nearest vertex of tree `a` (a warp-wide scan, ties to the lowest index) and
//      steers towards the sample; then the block checks the warps' motions together (a motion
//      set: every thread checks one configuration per round, the lanes dealt over the motions
//      still undecided);
//   2. thread 0 applies the verdicts in warp order (dynamic-domain radii, failure counts, new
//      vertices), as planners::rrt_connect does for a batch of samples;
//   3. the warp of each new vertex of `a` finds the nearest vertex of `b` and the chain of
//      range-long steps from it; the chains' motions are then checked as motion sets, each
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

// Every block-wide barrier of the planner is gmp_block_sync() (kernels/collision.cu, the
// non-aligned barrier.sync): warps here diverge all the time (thread 0's bookkeeping, lane 0's
// steering, the lanes of a round checking configurations of different motions), and with the
// aligned __syncthreads() some lanes passed the next barrier early (measured on the H100: a
// round's verdicts were read while part of its configurations were still being checked).

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
// rrtc_plan (one scene) has no launch bounds unless GMP_RRTC_SINGLE_THREADS is defined: then
// blocks of up to that many threads, one per multiprocessor (more warps than the 8 that 255
// registers allow).
#if defined(GMP_RRTC_SINGLE_THREADS) && !defined(GMP_SPEC_REGISTER_CAP)
#define GMP_RRTC_SINGLE_BOUNDS __launch_bounds__(GMP_RRTC_SINGLE_THREADS, 1)
#else
#define GMP_RRTC_SINGLE_BOUNDS
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
    const double* goal;         // goals x dof: problem i's goal set is goal_first[i] .. goal_first[i + 1]
    const unsigned* goal_first; // problems + 1
    const double* lower;        // dof: sampling bounds (continuous joints: -pi, pi)
    const double* upper;        // dof
    double* tree_q;             // problems x 2 x cap x dof
    unsigned* tree_parent;      // problems x 2 x cap
    double* tree_radius;        // problems x 2 x cap (dynamic-domain radius, +inf: unbounded)
    unsigned* tree_fails;       // problems x 2 x cap
    double* path;               // path_pool x dof: every problem's path, each where path_used said
    unsigned* result;           // problems x GMP_RRTC_RESULT_WORDS
    unsigned* path_used;        // vertices of the pool taken (the host zeroes it)
    unsigned* best;             // GMP_RRTC_BEST_WORDS per problem, then GMP_RRTC_QUEUE_WORDS (the host zeroes them)
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
    unsigned attempts;          // main attempts per problem
    unsigned problems;
    unsigned extra;             // extra attempts per problem (0: none), attempts + extra <= 256
    unsigned escalate_after;    // iterations after which a problem's extra attempts are queued
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

// Parallel attempts (planners::attempt_seed and the race of planners::race, on the device),
// seeded like the CPU's attempts. An attempt that solves the problem at iteration i has the key
// (i << 8) | attempt; the smallest key wins. An attempt stops (GMP_RRTC_BEATEN) as soon as a
// key smaller than any it could still reach is known, so the winner is the attempt with the
// smallest key over full runs, whatever the timing of the blocks: the result is deterministic.
//
// Escalation (extra > 0): the `attempts` main attempts of a problem run first; a problem that
// none of them solves within escalate_after iterations gets `extra` more attempts (numbers
// attempts .. attempts + extra - 1), whose keys count their iterations from escalate_after
// (gmp_rrtc_key: as if they had started then, so a late one need not run longer than the main
// attempts to be beaten). The winner is the smallest main key if its iteration is at most
// escalate_after, else the smallest key of all the attempts. Stopping rules that keep this
// independent of the timing (gmp_rrtc_beaten): a main attempt stops when a smaller main key is
// known, or, past escalate_after iterations, when a smaller key of any attempt is; an extra
// attempt stops when a main attempt solved within escalate_after iterations or a smaller key of
// any attempt is known. The extra attempts are queued when a main attempt starts iteration
// escalate_after + 1 or ends without a path (unless a main attempt has solved within
// escalate_after iterations), so whenever the rule needs them they run.
//
// Scheduling: the grid holds about as many blocks as can be resident; each block takes work
// items (problem, attempt) until none is left: the main attempts in order (problem by
// problem), then the queued extra attempts (an extra attempt whose problem has used a quarter
// of its time limit before the main ones: gmp_rrtc_urgent). A block's trees are its own,
// reused item after item.
// Words per problem after the launch's counters: the best main key (~key, 0: none), the best key
// of any attempt, the escalation flag, and the extra-attempt queue's slot (problem + 1, 0: not
// written yet); then the queue words: next main item, slots reserved, next extra item, items
// run (GMP_RRTC_QUEUE_GAP words further on); then, 8-byte aligned, each problem's start on the
// device clock (gmp_rrtc_origins).
#define GMP_RRTC_BEST_WORDS 4u
// Words between the per-problem words and the queue's: the queue words that idle blocks poll
// sit on a cache line of their own, away from the best keys that working blocks read.
#define GMP_RRTC_QUEUE_GAP 32u
#define GMP_RRTC_EXIT 0xffffffffu
#define GMP_RRTC_QUEUE_WORDS 4u

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

// A set of motions checked by the whole block at once, each with check_motions_refined's verdict
// (cpu.rs refine_motions_up_to): the motion is prepared as prepare_motions does (f32 start, f32
// of the f64 wrapped difference, segments ceil(distance / resolution)) and every configuration
// of a level is checked with GMP_STEP_STATUS. The levels are n, 2n, ... while below 2^24, at
// most max_refinements + 1 of them. The verdict is valid exactly when some level passes its swept
// check at every configuration (CpuChecker::motion_valid explains why), so a level is given up
// at the first round that meets an uncertain configuration (it cannot pass; the next one may),
// and the motion is invalid at the first configuration in collision (it lies on every finer
// level too: step s of n and step 2s of 2n are the same f32 configuration) or at an uncertain
// configuration of the last level. Which configurations a round checks changes the work, never
// the verdict.
//
// Rounds: every thread of the block checks one configuration of one motion. The lanes are dealt
// over the motions still undecided, evenly, then what a motion cannot use to the others; so a
// long or refined motion gets the lanes of the motions already decided, and a round ends when
// its slowest configuration does. Within a level, configurations are visited in the order
// i -> (i * stride) % (n + 1), stride about (n + 1) / 32 and coprime with n + 1: the first round
// samples the whole motion.
#define GMP_RRTC_SET_MAX 64u
#define GMP_RRTC_ORDER_W 32u
// Slot states.
#define GMP_SET_ACTIVE 0u
#define GMP_SET_VALID 1u
#define GMP_SET_INVALID 2u
#define GMP_SET_DROPPED 3u  // not needed: after an invalid motion of its chain, or given up (beaten)
#define GMP_SET_NONE 4u     // no motion in the slot
#define GMP_SET_NO_CHAIN 0xffffffffu

struct GmpRrtcSet {
    unsigned count;                          // slots [0, count)
    unsigned aborted;                        // given up: a solved attempt's key is below this one's
    unsigned active;                         // undecided slots this round
    unsigned state[GMP_RRTC_SET_MAX];
    unsigned n[GMP_RRTC_SET_MAX];            // segments of the current level
    unsigned level[GMP_RRTC_SET_MAX];
    unsigned pos[GMP_RRTC_SET_MAX];          // order index of the level's next configuration
    unsigned stride[GMP_RRTC_SET_MAX];
    unsigned lane_lo[GMP_RRTC_SET_MAX + 1];  // this round: threads [lane_lo[k], lane_lo[k + 1]) check slot k
    unsigned base[GMP_RRTC_SET_MAX];         // this round: order index of slot k's first thread
    unsigned flags[GMP_RRTC_SET_MAX];        // this round: bit 0 a configuration in collision, bit 1 an uncertain one
    unsigned chain[GMP_RRTC_SET_MAX];        // the chain the motion belongs to (GMP_SET_NO_CHAIN: none), its step
    unsigned step[GMP_RRTC_SET_MAX];
    float s32[GMP_RRTC_SET_MAX][GMP_MAX_DOF];
    float d32[GMP_RRTC_SET_MAX][GMP_MAX_DOF];
};

__device__ __forceinline__ unsigned long long gmp_gcd(unsigned long long a, unsigned long long b) {
    while (b != 0ull) {
        const unsigned long long t = a % b;
        a = b;
        b = t;
    }
    return a;
}

// The visiting stride of a level of `count` configurations (count >= 2): ceil(count / 32), or
// the next number coprime with count (count - 1 is, so the search ends).
__device__ unsigned gmp_rrtc_stride(unsigned long long count) {
    unsigned long long s = (count + GMP_RRTC_ORDER_W - 1ull) / GMP_RRTC_ORDER_W;
    if (s < 1ull) s = 1ull;
    while (gmp_gcd(s, count) != 1ull) s++;
    return (unsigned)s;
}

// Puts the motion a -> b (f64 configurations) into slot k (one thread).
__device__ void gmp_rrtc_set_put(GmpRrtcSet& set, unsigned k, const GmpRrtcParams& p, unsigned dof, const double* a,
                                 const double* b, unsigned chain, unsigned step) {
    double dist2 = 0.0;
    for (unsigned j = 0; j < dof; j++) {
        const double d = gmp_joint_diff(p.continuous, j, a[j], b[j]);
        dist2 += d * d;
        set.s32[k][j] = (float)a[j];
        set.d32[k][j] = (float)d;
    }
    const double dist = sqrt(dist2);
    // space.rs segments, then u32::try_from(..).unwrap_or(u32::MAX).
    unsigned n = 1u;
    if (!(isnan(p.resolution) || p.resolution <= 0.0) && isfinite(dist)) {
        const double c = ceil(dist / p.resolution);
        n = c >= 4294967295.0 ? 0xffffffffu : (c < 1.0 ? 1u : (unsigned)c);
    }
    set.n[k] = n;
    set.level[k] = 0u;
    set.pos[k] = 0u;
    set.stride[k] = gmp_rrtc_stride((unsigned long long)n + 1ull);
    set.flags[k] = 0u;
    set.chain[k] = chain;
    set.step[k] = step;
    set.state[k] = GMP_SET_ACTIVE;
}

// One attempt's view of the race of its problem's attempts (see "Escalation" above).
struct GmpRrtcRace {
    volatile unsigned* main_best;  // ~ smallest key of a main attempt (0: none yet)
    volatile unsigned* all_best;   // ~ smallest key of any attempt
    unsigned main;                 // 1: a main attempt, 0: an extra one
    unsigned after;                // escalate_after when the problem may get extra attempts, else 0
};

// The key of solving at iteration `it`: an extra attempt counts its iterations from
// escalate_after, as if it had started when the main attempts had run that many.
__device__ __forceinline__ unsigned gmp_rrtc_key(const GmpRrtcRace& r, unsigned it, unsigned attempt) {
    const unsigned long long i = (unsigned long long)it + (r.main ? 0u : r.after);
    return ((unsigned)min(i, 0xffffffull) << 8) | attempt;
}

// True when the attempt cannot win any more: `key` is the least key it could still get.
__device__ __forceinline__ bool gmp_rrtc_beaten(const GmpRrtcRace& r, unsigned key) {
    const unsigned bm = *r.main_best;
    if (r.main) {
        if (bm != 0u && ~bm < key) return true;
        if (r.after == 0u || (key >> 8) <= r.after) return false;
    } else if (bm != 0u && (~bm >> 8) <= r.after) {
        return true;
    }
    const unsigned ba = *r.all_best;
    return ba != 0u && ~ba < key;
}

// Checks every ACTIVE slot of `set` to its verdict (VALID or INVALID; DROPPED when not needed
// any more). Every thread of the block calls it, with the slots written and the block
// synchronised. `evaluated` (the thread's own) grows by the configurations it checked. With
// `key` != 0 the set is given up (aborted, every undecided slot DROPPED) as soon as the attempt
// is beaten (gmp_rrtc_beaten) for `key`, the key it would get for solving in the iteration
// under way: nothing it finds from then on can win.
__device__ void gmp_rrtc_set_check(const GmpModel& m, const GmpRrtcParams& p, GmpRrtcSet& set,
                                   unsigned long long* evaluated, const GmpRrtcRace& race, unsigned key) {
    const unsigned t = threadIdx.x;
    const unsigned lanes = blockDim.x;
    const unsigned dof = GMP_DOF(m);
    for (;;) {
        if (t == 0u) {
            if (key != 0u) {
                if (gmp_rrtc_beaten(race, key)) {
                    set.aborted = 1u;
                    for (unsigned k = 0; k < set.count; k++) {
                        if (set.state[k] == GMP_SET_ACTIVE) set.state[k] = GMP_SET_DROPPED;
                    }
                }
            }
            // The lanes: an even share each, then the rest in slot order.
            unsigned active = 0u;
            for (unsigned k = 0; k < set.count; k++) active += set.state[k] == GMP_SET_ACTIVE ? 1u : 0u;
            set.active = active;
            unsigned left = lanes;
            const unsigned share = active > 0u ? lanes / active : 0u;
            for (unsigned k = 0; k < set.count; k++) {
                unsigned g = 0u;
                if (set.state[k] == GMP_SET_ACTIVE) {
                    const unsigned long long rem = (unsigned long long)set.n[k] + 1ull - set.pos[k];
                    g = (unsigned)min(rem, (unsigned long long)share);
                    left -= g;
                }
                set.base[k] = g;
            }
            for (unsigned k = 0; k < set.count && left > 0u; k++) {
                if (set.state[k] != GMP_SET_ACTIVE) continue;
                const unsigned long long rem = (unsigned long long)set.n[k] + 1ull - set.pos[k] - set.base[k];
                const unsigned e = (unsigned)min(rem, (unsigned long long)left);
                set.base[k] += e;
                left -= e;
            }
            unsigned lo = 0u;
            for (unsigned k = 0; k < set.count; k++) {
                const unsigned g = set.base[k];
                set.lane_lo[k] = lo;
                set.base[k] = set.pos[k];
                set.pos[k] += g;
                lo += g;
            }
            set.lane_lo[set.count] = lo;
        }
        gmp_block_sync();
        if (set.active == 0u) break;
        if (t < set.lane_lo[set.count]) {
            unsigned k = 0u;
            while (set.lane_lo[k + 1u] <= t) k++;
            const unsigned n = set.n[k];
            const unsigned long long count = (unsigned long long)n + 1ull;
            const unsigned long long i = (unsigned long long)set.base[k] + (t - set.lane_lo[k]);
            const unsigned s = (unsigned)((i * set.stride[k]) % count);
            float q[GMP_MAX_DOF];
            gmp_interpolate(set.s32[k], set.d32[k], dof, s, n, q);
            const unsigned st = GMP_STEP_STATUS(m, q, set.d32[k], n);
            *evaluated += 1ull;
            if (st == 1u) {
                atomicOr(&set.flags[k], 1u);
            } else if (st == 2u) {
                atomicOr(&set.flags[k], 2u);
            }
        }
        gmp_block_sync();
        if (t == 0u) {
            for (unsigned k = 0; k < set.count; k++) {
                if (set.state[k] != GMP_SET_ACTIVE) continue;
                const unsigned f = set.flags[k];
                set.flags[k] = 0u;
                if ((f & 1u) != 0u) {
                    set.state[k] = GMP_SET_INVALID;
                } else if ((f & 2u) != 0u) {
                    const bool last = set.level[k] >= p.max_refinements || set.n[k] >= (1u << 23);
                    if (last) {
                        set.state[k] = GMP_SET_INVALID;
                    } else {
                        set.level[k] += 1u;
                        set.n[k] *= 2u;  // refine_motions_up_to: REFINE_FACTOR
                        set.pos[k] = 0u;
                        set.stride[k] = gmp_rrtc_stride((unsigned long long)set.n[k] + 1ull);
                    }
                } else if ((unsigned long long)set.pos[k] >= (unsigned long long)set.n[k] + 1ull) {
                    set.state[k] = GMP_SET_VALID;
                }
                if (set.state[k] == GMP_SET_INVALID && set.chain[k] != GMP_SET_NO_CHAIN) {
                    // The chain's later motions are not needed (its first invalid one decides).
                    for (unsigned k2 = 0; k2 < set.count; k2++) {
                        if (set.chain[k2] == set.chain[k] && set.step[k2] > set.step[k] &&
                            set.state[k2] == GMP_SET_ACTIVE) {
                            set.state[k2] = GMP_SET_DROPPED;
                        }
                    }
                }
            }
        }
        gmp_block_sync();
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
    unsigned aborted;    // a motion set of this iteration was given up (beaten)
    unsigned joined_a;   // vertex of tree a and tip of tree b of the joining chain
    unsigned joined_b;
    unsigned n_added;
    unsigned added[GMP_RRTC_MAX_WARPS];
    // Proposals of phase 1: parent (0xffffffff: none), verdict, the new configuration.
    unsigned prop_parent[GMP_RRTC_MAX_WARPS];
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

// The per-problem words (see "Scheduling" above), one array of `problems` words each.
#define GMP_RRTC_MAIN_BEST 0u  // ~ smallest key of a main attempt (0: none yet)
#define GMP_RRTC_ALL_BEST 1u   // ~ smallest key of any attempt
#define GMP_RRTC_ESCALATED 2u  // 1: the extra attempts are queued
#define GMP_RRTC_SLOTS 3u      // the extra-attempt queue's slots: problem + 1 (0: not written yet)
__device__ __forceinline__ unsigned* gmp_rrtc_words(const GmpRrtcParams& p, unsigned which) {
    return p.best + which * p.problems;
}

// The queue words (see "Scheduling" above): next main item, slots reserved, next extra item,
// items run; GMP_RRTC_QUEUE_GAP words after the per-problem words.
__device__ __forceinline__ unsigned* gmp_rrtc_queue(const GmpRrtcParams& p) {
    return p.best + GMP_RRTC_BEST_WORDS * p.problems + GMP_RRTC_QUEUE_GAP;
}

// Per problem: the device time its first attempt started (0: none yet), 8-byte aligned after
// the queue words.
__device__ __forceinline__ unsigned long long* gmp_rrtc_origins(const GmpRrtcParams& p) {
    const unsigned* after = gmp_rrtc_queue(p) + GMP_RRTC_QUEUE_WORDS;
    return (unsigned long long*)(((unsigned long long)after + 7ull) & ~7ull);
}

// Queues the extra attempts of problem `prob` (thread 0 of a main attempt, `race` its view;
// see "Escalation" above), unless they are queued already, there are none, or a main attempt
// has won.
__device__ void gmp_rrtc_escalate(const GmpRrtcParams& p, const GmpRrtcRace& race, unsigned prob) {
    if (p.extra == 0u) return;
    const unsigned bm = *race.main_best;
    if (bm != 0u && (~bm >> 8) <= p.escalate_after) return;
    if (atomicCAS(gmp_rrtc_words(p, GMP_RRTC_ESCALATED) + prob, 0u, 1u) != 0u) return;
    const unsigned slot = atomicAdd(&gmp_rrtc_queue(p)[1], 1u);
    atomicExch(gmp_rrtc_words(p, GMP_RRTC_SLOTS) + slot, prob + 1u);
}

// Attempt `attempt` at problem `prob` by the whole block, its trees the block's own.
__device__ void gmp_rrtc_attempt(const GmpModel& m, const GmpRrtcParams& p, unsigned prob, unsigned attempt) {
    __shared__ GmpRrtcShared sh;
    __shared__ GmpRrtcSet set;
    const unsigned long long seed =
        attempt == 0u ? p.seed : p.seed ^ ((unsigned long long)attempt * 0x9E3779B97F4A7C15ull);
    GmpRrtcRace race;
    race.main_best = gmp_rrtc_words(p, GMP_RRTC_MAIN_BEST) + prob;
    race.all_best = gmp_rrtc_words(p, GMP_RRTC_ALL_BEST) + prob;
    race.main = attempt < p.attempts ? 1u : 0u;
    race.after = p.extra > 0u ? p.escalate_after : 0u;
    bool queued = false;  // thread 0: this main attempt has asked for the extra attempts
    const unsigned lane = threadIdx.x % 32u;
    const unsigned warp = threadIdx.x / 32u;
    const unsigned warps = min(blockDim.x / 32u, (unsigned)GMP_RRTC_MAX_WARPS);
    const unsigned dof = GMP_DOF(m);
    const unsigned cont = p.continuous;
    const unsigned cap = p.cap;
    const bool dd = (p.flags & 1u) != 0u;
    const bool balance = (p.flags & 2u) != 0u;
    const double* start = p.start + (size_t)prob * dof;
    // Attempt a heads for goal a % goals of the problem's goal set (the host gives every goal
    // an attempt at least).
    const unsigned goal0 = p.goal_first[prob];
    const unsigned goals = max(p.goal_first[prob + 1u] - goal0, 1u);
    const double* goal = p.goal + (size_t)(goal0 + attempt % goals) * dof;
    GmpRrtcTree trees[2];
    for (unsigned t = 0; t < 2u; t++) {
        const size_t base = ((size_t)blockIdx.x * 2u + t) * cap;
        trees[t].q = p.tree_q + base * dof;
        trees[t].parent = p.tree_parent + base;
        trees[t].radius = p.tree_radius + base;
        trees[t].fails = p.tree_fails + base;
    }
    unsigned* res = p.result + ((size_t)prob * (p.attempts + p.extra) + attempt) * GMP_RRTC_RESULT_WORDS;
    const unsigned long long t0 = gmp_globaltimer();
    // The time limit counts from the problem's first attempt (thread 0): an extra attempt
    // queued late gets only what is left.
    unsigned long long since = t0;
    if (threadIdx.x == 0u) {
        const unsigned long long o = atomicCAS(gmp_rrtc_origins(p) + prob, 0ull, t0);
        if (o != 0ull && o < t0) since = o;
    }
    unsigned long long evaluated = 0;  // configurations this thread checked
    unsigned long long motions = 0;    // thread 0: motions checked

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
    gmp_block_sync();
    // The straight motion first (planners::rrt_connect; of parallel attempts only the first
    // for each goal, a main attempt), by the whole block: it is often long, and nothing else is
    // to be done meanwhile.
    if (sh.stop == 0u && attempt < goals && race.main) {
        if (threadIdx.x == 0u) {
            set.count = 1u;
            set.aborted = 0u;
            gmp_rrtc_set_put(set, 0u, p, dof, start, goal, GMP_SET_NO_CHAIN, 0u);
        }
        gmp_block_sync();
        gmp_rrtc_set_check(m, p, set, &evaluated, race, 0u);
        if (threadIdx.x == 0u) {
            motions++;
            if (set.state[0] == GMP_SET_VALID) {
                sh.stop = 1u + GMP_RRTC_SOLVED;
                sh.joined_a = 0xffffffffu;  // the direct path
                // Iteration 0 (key: the attempt, a main one).
                const unsigned won = ~gmp_rrtc_key(race, 0u, attempt);
                atomicMax((unsigned*)race.main_best, won);
                atomicMax((unsigned*)race.all_best, won);
            }
        }
    }
    gmp_block_sync();
    unsigned iterations = 0;
    for (;;) {
        // (sh.stop is read only after a barrier: thread 0 may set it here.)
        if (threadIdx.x == 0u && sh.stop == 0u) {
            if (iterations >= p.max_iterations ||
                (p.time_limit_ns > 0ull && gmp_globaltimer() - since > p.time_limit_ns)) {
                sh.stop = 1u + GMP_RRTC_LIMIT;
            }
            // A main attempt past escalate_after iterations asks for the extra attempts.
            if (race.main && race.after != 0u && iterations >= race.after && !queued) {
                gmp_rrtc_escalate(p, race, prob);
                queued = true;
            }
            // Beaten: a solved attempt's key is below the least this one could still reach.
            if (gmp_rrtc_beaten(race, gmp_rrtc_key(race, iterations + 1u, attempt))) sh.stop = 1u + GMP_RRTC_BEATEN;
        }
        gmp_block_sync();
        if (sh.stop != 0u) break;
        iterations++;
        const unsigned key = gmp_rrtc_key(race, iterations, attempt);
        const unsigned ta = sh.a;
        const unsigned tb = 1u - ta;
        const GmpRrtcTree& A = trees[ta];
        const GmpRrtcTree& B = trees[tb];
        // 1. One sample per warp, steered; the motions checked together.
        if (threadIdx.x == 0u) {
            set.count = warps;
            set.aborted = 0u;
        }
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
                set.state[warp] = GMP_SET_NONE;
            }
            __syncwarp();
            bool go = !(dd && gmp_rrtc_surely_outside(sh, ta, dof, cont, target));
            double nd = 0.0;
            unsigned ni = 0xffffffffu;
            if (go) {
                gmp_rrtc_nearest(A, sh.size[ta], dof, cont, target, lane, &nd, &ni);
                go = ni != 0xffffffffu && !(dd && A.radius[ni] < nd);
            }
            if (go && lane == 0u) {
                const double* from = A.q + (size_t)ni * dof;
                double step = p.range;
                if (dd) {
                    const unsigned halvings = min(A.fails[ni] / p.step_halve_after, 16u);
                    step = fmax(ldexp(p.range, -(int)halvings), p.step_floor_factor * p.range);
                }
                // Context::steer.
                const double d = gmp_space_distance(cont, dof, from, target);
                for (unsigned j = 0; j < dof; j++) {
                    nq[j] = d <= step ? target[j] : gmp_space_lerp(cont, j, from[j], target[j], step / d);
                }
                if (gmp_space_distance(cont, dof, from, nq) > 0.0) {
                    sh.prop_parent[warp] = ni;
                    gmp_rrtc_set_put(set, warp, p, dof, from, nq, GMP_SET_NO_CHAIN, 0u);
                }
            }
        }
        gmp_block_sync();
        gmp_rrtc_set_check(m, p, set, &evaluated, race, key);
        // 2. The verdicts in warp order (none once beaten).
        if (threadIdx.x == 0u) {
            sh.n_added = 0u;
            for (unsigned w = 0; w < warps; w++) motions += set.state[w] != GMP_SET_NONE ? 1u : 0u;
            if (set.aborted) sh.stop = 1u + GMP_RRTC_BEATEN;
            for (unsigned w = 0; w < warps && sh.stop == 0u; w++) {
                const unsigned par = sh.prop_parent[w];
                if (par == 0xffffffffu) continue;
                if (set.state[w] != GMP_SET_VALID) {
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
        gmp_block_sync();
        if (sh.stop != 0u) break;
        // 3. Chains from tree b towards each new vertex of a: the nearest vertex of b and the
        // chain's steps by the warp of each new vertex, then the chains' motions checked together,
        // step by step, at most GMP_RRTC_SET_MAX at a time. chain_valid[k] ends as the number of
        // valid motions before the chain's first invalid one: a motion is left out (or dropped)
        // only once one before it is known to be invalid, so every motion before the first
        // invalid one is checked.
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
        gmp_block_sync();
        if (sh.n_added > 0u) {
            unsigned longest = 0;
            for (unsigned k = 0; k < sh.n_added; k++) longest = max(longest, sh.chain_steps[k]);
            const unsigned items = sh.n_added * longest;
            for (unsigned g0 = 0; g0 < items; g0 += GMP_RRTC_SET_MAX) {
                const unsigned batch = min(items - g0, GMP_RRTC_SET_MAX);
                if (threadIdx.x == 0u) {
                    set.count = batch;
                    set.aborted = 0u;
                }
                if (threadIdx.x < batch) {
                    // Item g: chain g % n_added, step g / n_added + 1 (steps in order).
                    const unsigned jslot = threadIdx.x;
                    const unsigned g = g0 + jslot;
                    const unsigned k = g % sh.n_added;
                    const unsigned st = g / sh.n_added + 1u;
                    const unsigned steps = sh.chain_steps[k];
                    if (st > steps || st - 1u >= sh.chain_valid[k]) {
                        set.state[jslot] = GMP_SET_NONE;
                    } else {
                        const double* from = B.q + (size_t)sh.chain_near[k] * dof;
                        const double* target = A.q + (size_t)sh.added[k] * dof;
                        double prev[GMP_MAX_DOF], next[GMP_MAX_DOF];
                        for (unsigned j = 0; j < dof; j++) {
                            prev[j] = st == 1u ? from[j]
                                               : gmp_space_lerp(cont, j, from[j], target[j], (double)(st - 1u) / (double)steps);
                            next[j] = st == steps ? target[j]
                                                  : gmp_space_lerp(cont, j, from[j], target[j], (double)st / (double)steps);
                        }
                        gmp_rrtc_set_put(set, jslot, p, dof, prev, next, k, st);
                    }
                }
                gmp_block_sync();
                gmp_rrtc_set_check(m, p, set, &evaluated, race, key);
                if (threadIdx.x == 0u) {
                    for (unsigned jslot = 0; jslot < batch; jslot++) {
                        const unsigned stt = set.state[jslot];
                        if (stt == GMP_SET_NONE) continue;
                        motions++;
                        if (stt == GMP_SET_INVALID) {
                            const unsigned k = set.chain[jslot];
                            sh.chain_valid[k] = min(sh.chain_valid[k], set.step[jslot] - 1u);
                        }
                    }
                    if (set.aborted) sh.aborted = 1u;
                }
                gmp_block_sync();
                if (sh.aborted) break;
            }
        }
        gmp_block_sync();
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
                    const unsigned won = ~gmp_rrtc_key(race, iterations, attempt);
                    if (race.main) atomicMax((unsigned*)race.main_best, won);
                    atomicMax((unsigned*)race.all_best, won);
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
        gmp_block_sync();
    }
    // Counters, then the path (thread 0).
    if (motions != 0ull) atomicAdd(&sh.motions, motions);
    if (evaluated != 0ull) atomicAdd(&sh.configs, evaluated);
    gmp_block_sync();
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
    res[9] = 1u;  // the attempt ran
    // A main attempt that ends without a path asks for the extra attempts.
    if (race.main && (status == GMP_RRTC_LIMIT || status == GMP_RRTC_FULL)) gmp_rrtc_escalate(p, race, prob);
}

// True when extra item `h` (of `queued`) is written and its problem started more than a
// quarter of the time limit ago (thread 0, while taking items).
__device__ bool gmp_rrtc_urgent(const GmpRrtcParams& p, const volatile unsigned* slots, unsigned h,
                                unsigned long long queued) {
    if (p.time_limit_ns == 0ull || (unsigned long long)h >= queued) return false;
    const unsigned v = slots[h / p.extra];
    if (v == 0u) return false;
    const unsigned long long o = ((volatile unsigned long long*)gmp_rrtc_origins(p))[v - 1u];
    return o != 0ull && gmp_globaltimer() - o > p.time_limit_ns / 4ull;
}

// The block takes work items (problem, attempt) until none is left (see "Scheduling" above).
template <bool MULTI>
__device__ void gmp_rrtc(const GmpModel& m0, const GmpSceneRange* __restrict__ scenes, const float* __restrict__ bases,
                         const unsigned* __restrict__ scene_of, const GmpRrtcParams& p) {
    __shared__ unsigned item[2];  // problem (GMP_RRTC_EXIT: nothing left), attempt
    unsigned* q = gmp_rrtc_queue(p);
    volatile unsigned* vq = q;
    const volatile unsigned* slots = gmp_rrtc_words(p, GMP_RRTC_SLOTS);
    const unsigned mains = p.problems * p.attempts;
    for (;;) {
        if (threadIdx.x == 0u) {
            unsigned prob = GMP_RRTC_EXIT;
            unsigned attempt = 0u;
            for (;;) {
                // Done when every item queued has been run: an item queues extra attempts only
                // while it runs, before it counts as run (so `done` is read first).
                const unsigned done = vq[3];
                const unsigned long long queued = (unsigned long long)vq[1] * p.extra;
                if ((unsigned long long)done >= (unsigned long long)mains + queued) break;
                const unsigned h = vq[2];  // the next extra item
                // The main attempts first, in order: extra attempts fill the blocks that the
                // main ones leave idle (taking them first made launches of many problems, most
                // of them escalated, slower: results/mbm/device_escalation_H100_2026-11-27/),
                // unless the next one's problem has used a quarter of its time limit: in a
                // long launch it would otherwise start past the limit and never run
                // (gmp_rrtc_urgent).
                if (vq[0] < mains && !gmp_rrtc_urgent(p, slots, h, queued)) {
                    const unsigned m = atomicAdd(&q[0], 1u);
                    if (m < mains) {
                        prob = m / p.attempts;
                        attempt = m % p.attempts;
                        break;
                    }
                    continue;
                }
                if ((unsigned long long)h < queued) {
                    if (atomicCAS(&q[2], h, h + 1u) == h) {
                        unsigned v;
                        while ((v = slots[h / p.extra]) == 0u) {
                        }
                        prob = v - 1u;
                        attempt = p.attempts + h % p.extra;
                        break;
                    }
                    continue;
                }
                // Nothing to take yet: a running item may still queue extra attempts.
                __nanosleep(1000u);
            }
            item[0] = prob;
            item[1] = attempt;
        }
        gmp_block_sync();
        const unsigned prob = item[0];
        const unsigned attempt = item[1];
        gmp_block_sync();
        if (prob == GMP_RRTC_EXIT) return;
        const GmpModel m = MULTI ? gmp_scene_model(m0, scenes, bases, scene_of[prob]) : m0;
        gmp_rrtc_attempt(m, p, prob, attempt);
        if (threadIdx.x == 0u) {
            __threadfence();
            atomicAdd(&q[3], 1u);
        }
    }
}

// Every problem in the model's scene.
extern "C" __global__ void GMP_RRTC_SINGLE_BOUNDS rrtc_plan(const __grid_constant__ GmpModel m, const __grid_constant__ GmpRrtcParams p) {
    gmp_rrtc<false>(m, nullptr, nullptr, nullptr, p);
}

// Problem i in scene scene_of[i] (src/gpu/hub.rs).
extern "C" __global__ void GMP_RRTC_MULTI_BOUNDS rrtc_plan_multi(const __grid_constant__ GmpModel m, const GmpSceneRange* __restrict__ scenes,
                                           const float* __restrict__ bases, const unsigned* __restrict__ scene_of,
                                           const __grid_constant__ GmpRrtcParams p) {
    gmp_rrtc<true>(m, scenes, bases, scene_of, p);
}
