// Planning-block A* (P-BA*) and the goal wavefront on the GPU.
// Twin of src/grid/pba.rs: same integer fixed points, same move order (+x, -x, +y, -y),
// same tie-breaking, so the CPU and the GPU give identical fields, directions and paths.
// Cells are row-major (cell = y * width + x). cost[c] < 0 marks an impassable cell,
// otherwise it is the cost of moving into c (>= 1). Fields hold 0xFFFFFFFF for "unreachable".

#define INF 0xFFFFFFFFu
#define DIR_GOAL 4
#define DIR_NONE 255
#define NEXT_GOAL (-2)
#define NEXT_NONE (-1)

__constant__ int MOVE_X[4] = {1, -1, 0, 0};
__constant__ int MOVE_Y[4] = {0, 0, 1, -1};

// val + cost, saturating below INF; INF when val is INF or the cell is blocked.
__device__ __forceinline__ unsigned through(unsigned val, int cost) {
    if (val == INF || cost < 0) return INF;
    unsigned long long s = (unsigned long long)val + (unsigned)cost;
    return s >= (unsigned long long)(INF - 1) ? INF - 1 : (unsigned)s;
}

__device__ __forceinline__ int block_of(int x, int y, int side, int nbx) {
    return (y / side) * nbx + x / side;
}

// Border-to-border step, part 1 (and each round of the wavefront).
// One thread block per planning block (blocks[blockIdx.x]), one thread per cell
// (blockDim.x = side * side). The block field E lives in shared memory and is relaxed until
// no cell of the block changes. Exits read their heuristic from hsrc (for the wavefront
// hsrc == field: the neighbouring tiles' current distances).
// reinit = 1 recomputes from scratch (P-BA*: heuristics may have risen); 0 keeps the old
// values as upper bounds (wavefront: values only fall). write_dir = 1 also writes the
// direction of every cell of the block. changed (may be a dummy) gets 1 when a cell changed.
// Non-aligned block barriers: each thread arrives on its own. __syncthreads() and
// __syncthreads_or() are aligned (bar.sync, bar.red), which lets the hardware count a warp as
// arrived whole; a warp reaching one with lanes still in a divergent branch could let those
// lanes pass the next barrier early (kernels/rrtc.cu met that on an H100).
__device__ __forceinline__ void gmp_block_sync() { asm volatile("barrier.sync 0;" ::: "memory"); }
__device__ __forceinline__ bool gmp_block_sync_or(bool v) {
    unsigned r;
    asm volatile(
        "{\n\t.reg .pred p, q;\n\tsetp.ne.u32 p, %1, 0;\n\tbarrier.red.or.pred q, 0, p;\n\tselp.u32 %0, 1, 0, q;\n\t}"
        : "=r"(r)
        : "r"((unsigned)v)
        : "memory");
    return r != 0u;
}

extern "C" __global__ void block_field(const int* __restrict__ cost, unsigned* field,
                                       const unsigned* hsrc, const int* __restrict__ blocks,
                                       int width, int height, int side, int goal, int reinit,
                                       int write_dir, unsigned char* dir, int* changed) {
    extern __shared__ unsigned shared_mem[];
    const int n = side * side;
    unsigned* E = shared_mem;
    int* C = (int*)(shared_mem + n);
    const int nbx = (width + side - 1) / side;
    const int b = blocks[blockIdx.x];
    const int bx = b % nbx, by = b / nbx;
    const int t = threadIdx.x;
    const int tx = t % side, ty = t / side;
    const int x = bx * side + tx, y = by * side + ty;
    const bool inside = t < n && x < width && y < height;
    const int cell = inside ? y * width + x : 0;
    const int c = inside ? cost[cell] : -1;
    unsigned e = INF, old = INF;
    if (inside) old = field[cell];
    if (c >= 0) {
        unsigned ex = INF;
        if (cell == goal) {
            ex = 0;
        } else {
            for (int d = 0; d < 4; ++d) {
                int vx = x + MOVE_X[d], vy = y + MOVE_Y[d];
                if (vx < 0 || vy < 0 || vx >= width || vy >= height) continue;
                if (block_of(vx, vy, side, nbx) == b) continue;
                int v = vy * width + vx;
                unsigned hv = hsrc[v];
                unsigned cand = through(hv, cost[v]);
                ex = cand < ex ? cand : ex;
            }
        }
        e = reinit ? ex : (old < ex ? old : ex);
    }
    if (t < n) {
        E[t] = e;
        C[t] = c;
    }
    gmp_block_sync();
    for (;;) {
        unsigned best = e;
        if (c >= 0) {
            for (int d = 0; d < 4; ++d) {
                int wx = tx + MOVE_X[d], wy = ty + MOVE_Y[d];
                if (wx < 0 || wy < 0 || wx >= side || wy >= side) continue;
                int j = wy * side + wx;
                unsigned cand = through(E[j], C[j]);
                best = cand < best ? cand : best;
            }
        }
        gmp_block_sync();
        int moved = best < e;
        e = best;
        if (t < n) E[t] = e;
        if (!gmp_block_sync_or(moved)) break;
    }
    if (inside && e != old) {
        field[cell] = e;
        atomicOr(changed, 1);
    }
    if (write_dir && inside) {
        unsigned char dd = DIR_NONE;
        if (c >= 0 && e != INF) {
            if (cell == goal) {
                dd = DIR_GOAL;
            } else {
                for (int d = 0; d < 4; ++d) {
                    int vx = x + MOVE_X[d], vy = y + MOVE_Y[d];
                    if (vx < 0 || vy < 0 || vx >= width || vy >= height) continue;
                    int v = vy * width + vx;
                    unsigned val;
                    int cv;
                    if (block_of(vx, vy, side, nbx) == b) {
                        int j = (ty + MOVE_Y[d]) * side + (tx + MOVE_X[d]);
                        val = E[j];
                        cv = C[j];
                    } else {
                        val = hsrc[v];
                        cv = cost[v];
                    }
                    if (through(val, cv) == e) {
                        dd = (unsigned char)d;
                        break;
                    }
                }
            }
        }
        dir[cell] = dd;
    }
}

// Walks directions from cell `start` while inside its block. Returns NEXT_GOAL, NEXT_NONE or
// the border index of the first cell outside the block; *walk_cost gets the walk's cost.
__device__ int walk_to_exit(const int* __restrict__ cost, const unsigned char* __restrict__ dir,
                            const int* __restrict__ border_of, int width, int height, int side,
                            int start, unsigned* walk_cost) {
    const int nbx = (width + side - 1) / side;
    int x = start % width, y = start / width;
    const int b = block_of(x, y, side, nbx);
    unsigned acc = 0;
    int cur = start;
    const int limit = side * side + 1;
    for (int i = 0; i < limit; ++i) {
        unsigned char d = dir[cur];
        if (d == DIR_GOAL) {
            *walk_cost = acc;
            return NEXT_GOAL;
        }
        if (d >= 4) break;
        x += MOVE_X[d];
        y += MOVE_Y[d];
        if (x < 0 || y < 0 || x >= width || y >= height) break;
        cur = y * width + x;
        int cv = cost[cur];
        unsigned long long s = (unsigned long long)acc + (unsigned)(cv > 0 ? cv : 0);
        acc = s > 0xFFFFFFFFull ? INF : (unsigned)s;
        if (block_of(x, y, side, nbx) != b) {
            *walk_cost = acc;
            return border_of[cur];
        }
    }
    *walk_cost = acc;
    return NEXT_NONE;
}

// Border-to-border step, part 2: one thread per border tile of the recomputed blocks; each
// search ends at a border tile of a neighbouring block or at the goal.
extern "C" __global__ void border_next(const int* __restrict__ cost,
                                       const unsigned char* __restrict__ dir,
                                       const int* __restrict__ border_cells,
                                       const int* __restrict__ border_of,
                                       const int* __restrict__ tiles, int ntiles, int width,
                                       int height, int side, int* next, unsigned* seg) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= ntiles) return;
    int t = tiles[i];
    unsigned c = 0;
    int nx = walk_to_exit(cost, dir, border_of, width, height, side, border_cells[t], &c);
    next[t] = nx;
    seg[t] = c;
}

// Chains, start: jump = next, acc = seg.
extern "C" __global__ void chain_init(const int* __restrict__ next,
                                      const unsigned* __restrict__ seg, int* jump,
                                      unsigned* acc, int nb) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= nb) return;
    jump[t] = next[t];
    acc[t] = seg[t];
}

// Chains, one pointer-jumping round (double-buffered, so the result does not depend on
// thread order).
extern "C" __global__ void chain_jump(const int* __restrict__ jump_in,
                                      const unsigned* __restrict__ acc_in, int* jump_out,
                                      unsigned* acc_out, int nb) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= nb) return;
    int j = jump_in[t];
    if (j >= 0) {
        jump_out[t] = jump_in[j];
        unsigned long long s = (unsigned long long)acc_in[t] + acc_in[j];
        acc_out[t] = s >= 0xFFFFFFFFull ? INF : (unsigned)s;
    } else {
        jump_out[t] = j;
        acc_out[t] = acc_in[t];
    }
}

// Chains, end: a tile is ok when its chain reached the goal; chain = its cost.
extern "C" __global__ void chain_finish(const int* __restrict__ jump,
                                        const unsigned* __restrict__ acc, unsigned char* ok,
                                        unsigned* chain, int nb) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= nb) return;
    int good = jump[t] == NEXT_GOAL;
    ok[t] = (unsigned char)good;
    chain[t] = good ? acc[t] : INF;
}

// Start-to-border step: one thread per agent; out[i] = P-BA* cost of agent i or INF.
extern "C" __global__ void start_to_border(const int* __restrict__ cost,
                                           const unsigned char* __restrict__ dir,
                                           const int* __restrict__ border_of,
                                           const unsigned char* __restrict__ ok,
                                           const unsigned* __restrict__ chain,
                                           const int* __restrict__ starts, int nstarts,
                                           int width, int height, int side, unsigned* out) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= nstarts) return;
    int s = starts[i];
    unsigned local = 0;
    unsigned result = INF;
    if (cost[s] >= 0) {
        int ex = walk_to_exit(cost, dir, border_of, width, height, side, s, &local);
        if (ex == NEXT_GOAL) {
            result = local;
        } else if (ex >= 0 && ok[ex]) {
            unsigned long long sum = (unsigned long long)local + chain[ex];
            result = sum >= 0xFFFFFFFFull ? INF : (unsigned)sum;
        }
    }
    out[i] = result;
}

// Loop repair: one thread per border tile. A failing tile's heuristic rises to its block
// value; the blocks that contain it or have it as an exit are flagged for recomputation.
extern "C" __global__ void repair(const int* __restrict__ cost, const unsigned* __restrict__ field,
                                  unsigned* h, const int* __restrict__ border_cells,
                                  const unsigned char* __restrict__ ok, int nb, int width,
                                  int height, int side, unsigned char* dirty) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= nb || ok[t]) return;
    int cell = border_cells[t];
    if (cost[cell] < 0) return;
    unsigned e = field[cell];
    if (e <= h[cell]) return;
    h[cell] = e;
    const int nbx = (width + side - 1) / side;
    int x = cell % width, y = cell / width;
    dirty[block_of(x, y, side, nbx)] = 1;
    for (int d = 0; d < 4; ++d) {
        int vx = x + MOVE_X[d], vy = y + MOVE_Y[d];
        if (vx < 0 || vy < 0 || vx >= width || vy >= height) continue;
        dirty[block_of(vx, vy, side, nbx)] = 1;
    }
}

// Wavefront start: every cell unreachable except the goal.
extern "C" __global__ void fill_field(unsigned* field, int n, int goal) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    field[i] = i == goal ? 0u : INF;
}

// Directions of a whole distance field (the wavefront's shortest-path tree): one thread per
// cell, the first move in +x, -x, +y, -y order that realises the cell's distance.
extern "C" __global__ void field_directions(const int* __restrict__ cost,
                                            const unsigned* __restrict__ field, int width,
                                            int height, int goal, unsigned char* dir) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= width * height) return;
    unsigned e = field[i];
    unsigned char dd = DIR_NONE;
    if (cost[i] >= 0 && e != INF) {
        if (i == goal) {
            dd = DIR_GOAL;
        } else {
            int x = i % width, y = i / width;
            for (int d = 0; d < 4; ++d) {
                int vx = x + MOVE_X[d], vy = y + MOVE_Y[d];
                if (vx < 0 || vy < 0 || vx >= width || vy >= height) continue;
                int v = vy * width + vx;
                if (through(field[v], cost[v]) == e) {
                    dd = (unsigned char)d;
                    break;
                }
            }
        }
    }
    dir[i] = dd;
}

// out[i] = field[starts[i]].
extern "C" __global__ void gather(const unsigned* __restrict__ field,
                                  const int* __restrict__ starts, int n, unsigned* out) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    out[i] = field[starts[i]];
}
