//! Sequential A* on the CPU: the optimality and found-rate baseline.
//!
//! 4-connected moves, the cost of a move is the entering cost of the target cell (at least 1),
//! and the heuristic is the Manhattan distance (admissible because every move costs at least 1).
//! Ties in the open list are broken by smaller `f`, then smaller `h`, then smaller cell index,
//! so the search is deterministic.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// The four moves in their fixed order: +x, -x, +y, -y. Direction codes index this table.
pub const MOVES: [(i32, i32); 4] = [(1, 0), (-1, 0), (0, 1), (0, -1)];

/// The neighbour of `cell` in direction `d` (index into [`MOVES`]), if inside the grid.
#[inline]
pub fn neighbour(cell: u32, d: usize, width: u32, height: u32) -> Option<u32> {
    let x = (cell % width) as i64 + MOVES[d].0 as i64;
    let y = (cell / width) as i64 + MOVES[d].1 as i64;
    if x < 0 || y < 0 || x >= width as i64 || y >= height as i64 {
        None
    } else {
        Some(y as u32 * width + x as u32)
    }
}

/// Manhattan distance between two cells.
#[inline]
pub fn manhattan(a: u32, b: u32, width: u32) -> u32 {
    let (ax, ay) = ((a % width) as i64, (a / width) as i64);
    let (bx, by) = ((b % width) as i64, (b / width) as i64);
    ((ax - bx).abs() + (ay - by).abs()) as u32
}

/// A path found by A*.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AStarPath {
    /// Cell indices from start to goal, both included.
    pub cells: Vec<u32>,
    /// Sum of the entering costs of every cell after the start.
    pub cost: u64,
    /// Nodes expanded by the search.
    pub expanded: u64,
}

/// A reusable A* search over one cost grid (buffers are kept between searches).
pub struct AStar<'a> {
    costs: &'a [i32],
    width: u32,
    height: u32,
    g: Vec<u64>,
    parent: Vec<u32>,
    stamp: Vec<u32>,
    closed: Vec<u32>,
    round: u32,
}

impl<'a> AStar<'a> {
    /// A search over `costs` (row-major, `width * height` entering costs, negative = blocked).
    pub fn new(costs: &'a [i32], width: u32, height: u32) -> Self {
        let n = costs.len();
        Self {
            costs,
            width,
            height,
            g: vec![0; n],
            parent: vec![0; n],
            stamp: vec![0; n],
            closed: vec![0; n],
            round: 0,
        }
    }

    /// The cheapest path from `start` to `goal`, or `None` when the goal cannot be reached
    /// (or either cell is outside the grid or blocked).
    pub fn search(&mut self, start: u32, goal: u32) -> Option<AStarPath> {
        let n = self.costs.len();
        if start as usize >= n || goal as usize >= n {
            return None;
        }
        if self.costs[start as usize] < 0 || self.costs[goal as usize] < 0 {
            return None;
        }
        self.round = self.round.wrapping_add(1);
        if self.round == 0 {
            self.stamp.iter_mut().for_each(|s| *s = 0);
            self.closed.iter_mut().for_each(|s| *s = 0);
            self.round = 1;
        }
        let round = self.round;
        let w = self.width;
        let mut open = BinaryHeap::new();
        self.g[start as usize] = 0;
        self.stamp[start as usize] = round;
        self.parent[start as usize] = start;
        let h0 = manhattan(start, goal, w) as u64;
        open.push(Reverse((h0, h0, start)));
        let mut expanded = 0u64;
        while let Some(Reverse((_f, _h, cell))) = open.pop() {
            let ci = cell as usize;
            if self.closed[ci] == round {
                continue;
            }
            self.closed[ci] = round;
            expanded += 1;
            if cell == goal {
                let mut cells = vec![goal];
                let mut c = goal;
                while c != start {
                    c = self.parent[c as usize];
                    cells.push(c);
                }
                cells.reverse();
                return Some(AStarPath {
                    cells,
                    cost: self.g[ci],
                    expanded,
                });
            }
            let g = self.g[ci];
            for d in 0..4 {
                let Some(nb) = neighbour(cell, d, w, self.height) else {
                    continue;
                };
                let ni = nb as usize;
                let c = self.costs[ni];
                if c < 0 || self.closed[ni] == round {
                    continue;
                }
                let ng = g + c as u64;
                if self.stamp[ni] != round || ng < self.g[ni] {
                    self.stamp[ni] = round;
                    self.g[ni] = ng;
                    self.parent[ni] = cell;
                    let h = manhattan(nb, goal, w) as u64;
                    open.push(Reverse((ng + h, h, nb)));
                }
            }
        }
        None
    }
}

/// Checks that `cells` is a valid 4-connected path over passable cells from `start` to `goal`
/// and returns its cost, or a description of the first defect.
pub fn validate_path(
    costs: &[i32],
    width: u32,
    start: u32,
    goal: u32,
    cells: &[u32],
) -> Result<u64, String> {
    let (Some(&first), Some(&last)) = (cells.first(), cells.last()) else {
        return Err("empty path".into());
    };
    if first != start {
        return Err(format!(
            "path starts at cell {first}, not the start {start}"
        ));
    }
    if last != goal {
        return Err(format!("path ends at cell {last}, not the goal {goal}"));
    }
    let mut cost = 0u64;
    for (i, &c) in cells.iter().enumerate() {
        match costs.get(c as usize) {
            None => return Err(format!("step {i}: cell {c} outside the grid")),
            Some(&v) if v < 0 => return Err(format!("step {i}: cell {c} is blocked")),
            Some(&v) => {
                if i > 0 {
                    cost += v as u64;
                }
            }
        }
        if i > 0 && manhattan(cells[i - 1], c, width) != 1 {
            return Err(format!(
                "step {i}: cells {} and {c} are not 4-neighbours",
                cells[i - 1]
            ));
        }
    }
    Ok(cost)
}
