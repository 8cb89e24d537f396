//! Planning-block A* (P-BA*) and the goal wavefront: the CPU twin of `kernels/grid_pba.cu`.
//!
//! The grid is cut into square planning blocks of side `S`. Every step below has a GPU kernel
//! twin; both compute the same integer fixed points and break ties the same way, so they give
//! identical fields, directions and paths.
//!
//! * **Block field** (border-to-border step). For a block `B`, `E(u)` for a cell `u` of `B` is
//!   the cheapest cost of a path that stays inside `B` from `u` to either the goal (when it
//!   lies in `B`) or an *exit*: a passable cell `v` outside `B` next to `B`, charged
//!   `cost(v) + H(v)`, where `H` is the heuristic of `v` (Manhattan at first, raised by
//!   repair). For a border tile `t`, `E(t)` is exactly what the paper's per-border-tile local
//!   A* returns (the best exit by `g + h`); we compute all border tiles of a block at once as a
//!   reverse search from the exits, which gives the same values with block-wide parallelism.
//! * **Directions.** Each cell stores the first move (in [`MOVES`](super::astar::MOVES) order)
//!   that realises its value: a move to an in-block neighbour `w` with `E(w) + cost(w) = E(u)`
//!   or to an exit `v` with `H(v) + cost(v) = E(u)`. Following the directions from a border
//!   tile leads, inside its block, to a border tile of a neighbouring block or to the goal
//!   (`next` and `seg` below; the paper's border-to-border search result).
//! * **Chains.** Following `next` from border tile to border tile either reaches the goal
//!   or loops (or dead-ends). Every border tile gets `ok` (reaches the goal) and the chain cost.
//! * **Start-to-border.** An agent follows the directions of its own block to its first exit;
//!   it is solved when that exit's chain reaches the goal.
//! * **Repair** (loop repair, LRTA*-style). Every border tile whose chain fails has its
//!   heuristic raised to its block value, `H(t) := max(H(t), E(t))` (still admissible); the
//!   blocks that contain or border a raised tile are recomputed, and the rest is kept.
//! * **Wavefront** (our fast path and the completion of P-BA* failures). The exact distance
//!   field `D` to the goal over the whole grid; its directions give every solvable agent an
//!   optimal path. It is the fixed point of the block field with `H = D`.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use super::astar::{manhattan, neighbour};

/// An unreachable value in a field.
pub const INF: u32 = u32::MAX;
/// Direction code of the goal cell.
pub const DIR_GOAL: u8 = 4;
/// Direction code of a cell with no way on (blocked or no finite value).
pub const DIR_NONE: u8 = 255;
/// `next` of a border tile whose block path ends at the goal.
pub const NEXT_GOAL: i32 = -2;
/// `next` of a border tile with no way on.
pub const NEXT_NONE: i32 = -1;

/// Side of the tiles the wavefront relaxes at once (on the GPU: one thread block per tile).
pub const WAVE_TILE: u32 = 32;

/// Allowed planning block sides.
pub const BLOCK_SIDES: [u32; 4] = [4, 8, 16, 32];

/// How the grid is cut into planning blocks, and where the border tiles are.
#[derive(Clone, Debug)]
pub struct BlockLayout {
    /// Cells per row.
    pub width: u32,
    /// Rows.
    pub height: u32,
    /// Side of a planning block.
    pub side: u32,
    /// Blocks per row.
    pub nbx: u32,
    /// Block rows.
    pub nby: u32,
    /// Border tiles (cells of a block with a grid neighbour in another block), by cell index.
    pub border: Vec<u32>,
    /// For each cell, its index in `border`, or -1.
    pub border_of: Vec<i32>,
    /// For each block, the range of its border tiles in `border_by_block`.
    pub block_border_start: Vec<u32>,
    /// Border tile indices grouped by block (block order, then cell order).
    pub border_by_block: Vec<u32>,
}

impl BlockLayout {
    /// The layout of a `width x height` grid in blocks of `side`.
    pub fn new(width: u32, height: u32, side: u32) -> Self {
        let nbx = width.div_ceil(side);
        let nby = height.div_ceil(side);
        let n = width as usize * height as usize;
        let mut border_of = vec![-1i32; n];
        let mut border = Vec::new();
        for cell in 0..n as u32 {
            let b = block_of(cell, width, side, nbx);
            let is_border = (0..4).any(|d| {
                neighbour(cell, d, width, height)
                    .is_some_and(|v| block_of(v, width, side, nbx) != b)
            });
            if is_border {
                border_of[cell as usize] = border.len() as i32;
                border.push(cell);
            }
        }
        let nblocks = (nbx * nby) as usize;
        let mut counts = vec![0u32; nblocks + 1];
        for &c in &border {
            counts[block_of(c, width, side, nbx) as usize + 1] += 1;
        }
        for i in 0..nblocks {
            counts[i + 1] += counts[i];
        }
        let mut fill = counts.clone();
        let mut by_block = vec![0u32; border.len()];
        for (i, &c) in border.iter().enumerate() {
            let b = block_of(c, width, side, nbx) as usize;
            by_block[fill[b] as usize] = i as u32;
            fill[b] += 1;
        }
        Self {
            width,
            height,
            side,
            nbx,
            nby,
            border,
            border_of,
            block_border_start: counts,
            border_by_block: by_block,
        }
    }

    /// Number of blocks.
    pub fn blocks(&self) -> u32 {
        self.nbx * self.nby
    }

    /// The block of a cell.
    pub fn block(&self, cell: u32) -> u32 {
        block_of(cell, self.width, self.side, self.nbx)
    }

    /// The border tile indices of a block.
    pub fn border_tiles(&self, block: u32) -> &[u32] {
        let a = self.block_border_start[block as usize] as usize;
        let b = self.block_border_start[block as usize + 1] as usize;
        &self.border_by_block[a..b]
    }

    /// The blocks whose field depends on cell `cell`: its own and those it is an exit of.
    pub fn blocks_touching(&self, cell: u32, out: &mut Vec<u32>) {
        out.push(self.block(cell));
        for d in 0..4 {
            if let Some(v) = neighbour(cell, d, self.width, self.height) {
                out.push(self.block(v));
            }
        }
    }
}

/// The block index of a cell.
#[inline]
pub fn block_of(cell: u32, width: u32, side: u32, nbx: u32) -> u32 {
    ((cell / width) / side) * nbx + (cell % width) / side
}

/// The value an in-field neighbour contributes: `val + cost`, or INF.
#[inline]
fn through(val: u32, cost: i32) -> u32 {
    if val == INF || cost < 0 {
        INF
    } else {
        val.saturating_add(cost as u32).min(INF - 1)
    }
}

/// Computes the block field of block `b` (cells of `b` only) into `field` by a multi-source
/// Dijkstra from the goal and the exits. `h` holds the heuristic of every cell (read only for
/// cells outside the block). With `side >= max(width, height)` and no exits this is the plain
/// distance field to the goal.
#[allow(clippy::too_many_arguments)]
pub fn block_field(
    costs: &[i32],
    width: u32,
    height: u32,
    side: u32,
    goal: u32,
    h: &[u32],
    b: u32,
    field: &mut [u32],
) {
    let nbx = width.div_ceil(side);
    let (bx, by) = (b % nbx, b / nbx);
    let x0 = bx * side;
    let y0 = by * side;
    let x1 = (x0 + side).min(width);
    let y1 = (y0 + side).min(height);
    let mut heap = BinaryHeap::new();
    for y in y0..y1 {
        for x in x0..x1 {
            let u = y * width + x;
            let mut e = INF;
            if costs[u as usize] >= 0 {
                if u == goal {
                    e = 0;
                } else {
                    for d in 0..4 {
                        if let Some(v) = neighbour(u, d, width, height) {
                            if block_of(v, width, side, nbx) != b {
                                e = e.min(through(h[v as usize], costs[v as usize]));
                            }
                        }
                    }
                }
            }
            field[u as usize] = e;
            if e != INF {
                heap.push(Reverse((e, u)));
            }
        }
    }
    while let Some(Reverse((e, u))) = heap.pop() {
        if e != field[u as usize] {
            continue;
        }
        let step = through(e, costs[u as usize]);
        for d in 0..4 {
            if let Some(w) = neighbour(u, d, width, height) {
                if block_of(w, width, side, nbx) == b
                    && costs[w as usize] >= 0
                    && step < field[w as usize]
                {
                    field[w as usize] = step;
                    heap.push(Reverse((step, w)));
                }
            }
        }
    }
}

/// The direction code of cell `u` in a block field (see the module docs). `h` is read for
/// neighbours outside `u`'s block; for the wavefront pass the field itself as `h`.
#[allow(clippy::too_many_arguments)]
#[inline]
pub fn direction(
    costs: &[i32],
    width: u32,
    height: u32,
    side: u32,
    goal: u32,
    field: &[u32],
    h: &[u32],
    u: u32,
) -> u8 {
    let e = field[u as usize];
    if costs[u as usize] < 0 || e == INF {
        return DIR_NONE;
    }
    if u == goal {
        return DIR_GOAL;
    }
    let nbx = width.div_ceil(side);
    let b = block_of(u, width, side, nbx);
    for d in 0..4 {
        if let Some(v) = neighbour(u, d, width, height) {
            let val = if block_of(v, width, side, nbx) == b {
                field[v as usize]
            } else {
                h[v as usize]
            };
            if through(val, costs[v as usize]) == e {
                return d as u8;
            }
        }
    }
    DIR_NONE
}

/// Follows directions from `start` while inside `start`'s block. Returns where it ended
/// (`NEXT_GOAL`, `NEXT_NONE` or the border index of the first cell outside the block) and the
/// cost of the walk.
pub fn walk_to_exit(layout: &BlockLayout, costs: &[i32], dir: &[u8], start: u32) -> (i32, u32) {
    let b = layout.block(start);
    let mut cur = start;
    let mut cost = 0u32;
    let limit = layout.side * layout.side + 1;
    for _ in 0..limit {
        let d = dir[cur as usize];
        if d == DIR_GOAL {
            return (NEXT_GOAL, cost);
        }
        if d as usize >= 4 {
            return (NEXT_NONE, cost);
        }
        let Some(v) = neighbour(cur, d as usize, layout.width, layout.height) else {
            return (NEXT_NONE, cost);
        };
        cost = cost.saturating_add(costs[v as usize].max(0) as u32);
        if layout.block(v) != b {
            return (layout.border_of[v as usize], cost);
        }
        cur = v;
    }
    (NEXT_NONE, cost)
}

/// The exact distance field to `goal` (`D`, entering costs) by Dijkstra: the CPU twin of the
/// GPU wavefront.
pub fn distance_field(costs: &[i32], width: u32, height: u32, goal: u32) -> Vec<u32> {
    let mut field = vec![INF; costs.len()];
    let side = width.max(height);
    block_field(
        costs,
        width,
        height,
        side,
        goal,
        &field.clone(),
        0,
        &mut field,
    );
    field
}

/// Direction codes of a whole distance field (the wavefront's shortest-path tree).
pub fn field_directions(
    costs: &[i32],
    width: u32,
    height: u32,
    goal: u32,
    field: &[u32],
) -> Vec<u8> {
    (0..costs.len() as u32)
        .map(|u| direction(costs, width, height, WAVE_TILE, goal, field, field, u))
        .collect()
}

/// Follows direction codes from `start` to the goal, returning the cells and cost, or `None`
/// when the walk dead-ends or exceeds `max_steps` (a loop).
pub fn follow(
    costs: &[i32],
    width: u32,
    height: u32,
    dir: &[u8],
    start: u32,
    max_steps: usize,
) -> Option<(Vec<u32>, u64)> {
    let mut cells = vec![start];
    let mut cur = start;
    let mut cost = 0u64;
    for _ in 0..=max_steps {
        let d = *dir.get(cur as usize)?;
        if d == DIR_GOAL {
            return Some((cells, cost));
        }
        if d as usize >= 4 {
            return None;
        }
        cur = neighbour(cur, d as usize, width, height)?;
        cost += costs[cur as usize].max(0) as u64;
        cells.push(cur);
    }
    None
}

/// The state of P-BA* on the CPU (the twin of the GPU buffers).
pub struct CpuPba {
    /// Block layout.
    pub layout: BlockLayout,
    /// Entering costs.
    pub costs: Vec<i32>,
    /// Goal cell.
    pub goal: u32,
    /// Heuristic per cell (border tiles may be raised by repair).
    pub h: Vec<u32>,
    /// Block field per cell.
    pub field: Vec<u32>,
    /// Direction per cell.
    pub dir: Vec<u8>,
    /// Per border tile: the next border tile, `NEXT_GOAL` or `NEXT_NONE`.
    pub next: Vec<i32>,
    /// Per border tile: cost of the walk to `next`.
    pub seg: Vec<u32>,
    /// Per border tile: 1 when its chain reaches the goal.
    pub ok: Vec<u8>,
    /// Per border tile: chain cost to the goal (valid when `ok`).
    pub chain: Vec<u32>,
}

impl CpuPba {
    /// Fresh state: Manhattan heuristic, nothing computed.
    pub fn new(costs: Vec<i32>, width: u32, height: u32, side: u32, goal: u32) -> Self {
        let layout = BlockLayout::new(width, height, side);
        let n = costs.len();
        let nb = layout.border.len();
        let h = (0..n as u32).map(|c| manhattan(c, goal, width)).collect();
        Self {
            layout,
            costs,
            goal,
            h,
            field: vec![INF; n],
            dir: vec![DIR_NONE; n],
            next: vec![NEXT_NONE; nb],
            seg: vec![0; nb],
            ok: vec![0; nb],
            chain: vec![INF; nb],
        }
    }

    /// Border-to-border step for `blocks`: block fields, directions, and every border tile's
    /// next tile and segment cost.
    pub fn border_to_border(&mut self, blocks: &[u32]) {
        let l = &self.layout;
        let (w, hgt, s) = (l.width, l.height, l.side);
        for &b in blocks {
            block_field(
                &self.costs,
                w,
                hgt,
                s,
                self.goal,
                &self.h,
                b,
                &mut self.field,
            );
        }
        for &b in blocks {
            let (x0, y0) = ((b % l.nbx) * s, (b / l.nbx) * s);
            for y in y0..(y0 + s).min(hgt) {
                for x in x0..(x0 + s).min(w) {
                    let u = y * w + x;
                    self.dir[u as usize] =
                        direction(&self.costs, w, hgt, s, self.goal, &self.field, &self.h, u);
                }
            }
        }
        for &b in blocks {
            for &t in l.border_tiles(b) {
                let (next, seg) = walk_to_exit(l, &self.costs, &self.dir, l.border[t as usize]);
                self.next[t as usize] = next;
                self.seg[t as usize] = seg;
            }
        }
    }

    /// Resolves every border tile's chain: reaches the goal (`ok`, with its cost) or not.
    pub fn chains(&mut self) {
        let nb = self.next.len();
        // 0 unvisited, 1 on the current walk, 2 resolved
        let mut state = vec![0u8; nb];
        let mut stack = Vec::new();
        for t0 in 0..nb {
            if state[t0] == 2 {
                continue;
            }
            let mut t = t0 as i32;
            // result of the chain after the walk: (ok, cost)
            let mut tail = loop {
                if t < 0 {
                    break (t == NEXT_GOAL, 0u32);
                }
                let ti = t as usize;
                match state[ti] {
                    2 => break (self.ok[ti] == 1, self.chain[ti]),
                    1 => break (false, INF),
                    _ => {
                        state[ti] = 1;
                        stack.push(ti);
                        t = self.next[ti];
                    }
                }
            };
            while let Some(ti) = stack.pop() {
                state[ti] = 2;
                if tail.0 {
                    tail.1 = tail.1.saturating_add(self.seg[ti]);
                    self.ok[ti] = 1;
                    self.chain[ti] = tail.1;
                } else {
                    self.ok[ti] = 0;
                    self.chain[ti] = INF;
                }
            }
        }
    }

    /// Start-to-border step: for each start cell, its total P-BA* cost (INF when it fails).
    pub fn start_to_border(&self, starts: &[u32]) -> Vec<u32> {
        starts
            .iter()
            .map(|&s| {
                if s as usize >= self.costs.len() || self.costs[s as usize] < 0 {
                    return INF;
                }
                let (exit, local) = walk_to_exit(&self.layout, &self.costs, &self.dir, s);
                match exit {
                    NEXT_GOAL => local,
                    e if e >= 0 && self.ok[e as usize] == 1 => {
                        local.saturating_add(self.chain[e as usize])
                    }
                    _ => INF,
                }
            })
            .collect()
    }

    /// Loop repair: raises the heuristic of every failing border tile to its block value and
    /// returns the blocks to recompute (sorted, unique).
    pub fn repair(&mut self) -> Vec<u32> {
        let mut dirty = vec![false; self.layout.blocks() as usize];
        let mut touched = Vec::new();
        for (t, &cell) in self.layout.border.iter().enumerate() {
            let e = self.field[cell as usize];
            if self.ok[t] == 0 && self.costs[cell as usize] >= 0 && e > self.h[cell as usize] {
                self.h[cell as usize] = e;
                touched.clear();
                self.layout.blocks_touching(cell, &mut touched);
                for &b in &touched {
                    dirty[b as usize] = true;
                }
            }
        }
        (0..dirty.len() as u32)
            .filter(|&b| dirty[b as usize])
            .collect()
    }

    /// Replaces cell costs (map changes) and returns the blocks to recompute: the blocks that
    /// contain a changed cell or have it as an exit. Learned heuristics are kept (they only
    /// steer P-BA*; the wavefront completion keeps every solvable agent solved).
    pub fn update_costs(&mut self, changed: &[(u32, i32)]) -> Vec<u32> {
        let mut dirty = vec![false; self.layout.blocks() as usize];
        let mut touched = Vec::new();
        for &(cell, cost) in changed {
            if let Some(c) = self.costs.get_mut(cell as usize) {
                *c = cost;
                touched.clear();
                self.layout.blocks_touching(cell, &mut touched);
                for &b in &touched {
                    dirty[b as usize] = true;
                }
            }
        }
        (0..dirty.len() as u32)
            .filter(|&b| dirty[b as usize])
            .collect()
    }
}
