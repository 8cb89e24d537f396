//! The coherent order of a configuration batch: its configurations sorted by a coarse cell of
//! joint space, so that the ones checked side by side (the eight lanes of the CPU's sphere
//! checks, the 32 threads of a GPU warp) lie close together, fire the same culling bounds and so
//! need mostly the same tests. Seed 004 lists this among its load-balancing options
//! ("warp-level packets of similar configurations").
//!
//! A configuration's verdict does not depend on where it is checked, so an order changes the
//! time of a batch check, never its verdicts. Measured: `results/collision/warp_sort_H100_2026-11-25/`.

use crate::robot::JointSpace;

/// Key bits in all (the GPU's counting sort has `2^KEY_BITS` cells).
pub const KEY_BITS: u32 = 16;

/// Environment variable: the smallest batch (or pipelined piece) of configurations the CUDA
/// backend checks in coherent order, `off` for none; read at each batch (default: one device
/// wave). The CPU backend checks in the caller's order: on its eight-lane sphere checks the
/// order saved about 10 % of the instructions (callgrind, Panda, bookshelf_thin, 20,000
/// configurations), and sorting cost as much; wall times on the 2-core dev box were level.
pub const MIN_ENV: &str = "GMP_SORT_MIN";

/// The cell key of a joint space: per joint its lower limit, cells per unit (both f32) and
/// bits. The first joint is the most significant.
#[derive(Clone, Debug, PartialEq)]
pub struct CellKey {
    joints: Vec<(f32, f32, u32)>,
}

/// Whether joint `j` of `space` has a finite, non-empty range (only such joints get bits).
fn ranged(space: &JointSpace, j: usize) -> bool {
    let (lo, hi) = (space.lower[j], space.upper[j]);
    lo.is_finite() && hi.is_finite() && hi > lo
}

impl CellKey {
    /// The [`KEY_BITS`] shared out evenly over the joints with a finite range, the joints
    /// nearest the base taking the remainder (they move the most of the robot). Measured on
    /// the H100 against five other shares for the Panda: all within 3 %.
    pub fn even(space: &JointSpace) -> Self {
        let dof = space.dof();
        let count = (0..dof).filter(|&j| ranged(space, j)).count() as u32;
        let mut rank = 0u32;
        let bits: Vec<u32> = (0..dof)
            .map(|j| {
                if !ranged(space, j) || count == 0 {
                    return 0;
                }
                let b = KEY_BITS / count + u32::from(rank < KEY_BITS % count);
                rank += 1;
                b
            })
            .collect();
        Self::build(space, &bits)
    }

    /// A key with `bits[j]` bits for joint `j`: one count per joint, at most [`KEY_BITS`] in
    /// all, none for a joint without a finite range. The error says which rule `bits` breaks.
    pub fn with_bits(space: &JointSpace, bits: &[u32]) -> Result<Self, String> {
        if bits.len() != space.dof() {
            return Err(format!(
                "{} bit counts for {} joints",
                bits.len(),
                space.dof()
            ));
        }
        if bits.iter().sum::<u32>() > KEY_BITS {
            return Err(format!("more than {KEY_BITS} bits in all"));
        }
        if let Some(j) = (0..bits.len()).find(|&j| bits[j] > 0 && !ranged(space, j)) {
            return Err(format!("joint {} has no finite range", space.names[j]));
        }
        Ok(Self::build(space, bits))
    }

    fn build(space: &JointSpace, bits: &[u32]) -> Self {
        let joints = bits
            .iter()
            .enumerate()
            .map(|(j, &b)| {
                if b == 0 {
                    return (0.0, 0.0, 0);
                }
                let (lo, hi) = (space.lower[j], space.upper[j]);
                (lo as f32, (f64::from(1u32 << b) / (hi - lo)) as f32, b)
            })
            .collect();
        Self { joints }
    }

    /// The bits of each joint.
    pub fn bits(&self) -> Vec<u32> {
        self.joints.iter().map(|j| j.2).collect()
    }

    /// Per joint its lower limit and cells per unit (f32 bits), then its bits: what the GPU's
    /// `sort_keys` kernel reads.
    pub fn words(&self) -> Vec<u32> {
        self.joints
            .iter()
            .flat_map(|&(lo, scale, b)| [lo.to_bits(), scale.to_bits(), b])
            .collect()
    }

    /// The cell of configuration `row` (one value per joint; as `sort_keys` computes it: a
    /// value outside the range, or NaN, goes to the nearest end cell).
    pub fn cell(&self, row: &[f32]) -> u32 {
        self.joints
            .iter()
            .zip(row)
            .fold(0u32, |k, (&(lo, scale, b), &q)| {
                if b == 0 {
                    return k;
                }
                let top = ((1u32 << b) - 1) as f32;
                let c = ((q - lo) * scale).max(0.0).min(top);
                (k << b) | c as u32
            })
    }

    /// The indices of the configurations of `values` (row-major, one value per joint) in key
    /// order, each once; within a cell in their own order.
    pub fn order(&self, values: &[f32]) -> Vec<u32> {
        let dof = self.joints.len().max(1);
        let cells: Vec<u32> = values.chunks_exact(dof).map(|r| self.cell(r)).collect();
        let mut order: Vec<u32> = (0..cells.len() as u32).collect();
        // Stable: within a cell, the configurations' own order.
        order.sort_by_key(|&i| cells[i as usize]);
        order
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn space(lower: &[f64], upper: &[f64]) -> JointSpace {
        let n = lower.len();
        JointSpace {
            names: (0..n).map(|j| format!("j{j}")).collect(),
            lower: lower.to_vec(),
            upper: upper.to_vec(),
            continuous: vec![false; n],
            max_velocity: vec![1.0; n],
            max_acceleration: vec![1.0; n],
            max_jerk: vec![f64::INFINITY; n],
        }
    }

    #[test]
    fn even_share_gives_the_remainder_to_the_first_joints() {
        let panda = space(&[-2.9; 7], &[2.9; 7]);
        assert_eq!(CellKey::even(&panda).bits(), [3, 3, 2, 2, 2, 2, 2]);
        let mut odd = space(&[-1.0, 0.0, -3.0], &[1.0, 0.0, 3.0]);
        odd.upper[1] = f64::INFINITY;
        assert_eq!(CellKey::even(&odd).bits(), [8, 0, 8]);
        assert_eq!(
            CellKey::even(&space(&[0.0, 1.0], &[0.0, 1.0])).bits(),
            [0, 0]
        );
        let twenty: u32 = CellKey::even(&space(&[-1.0; 20], &[1.0; 20]))
            .bits()
            .iter()
            .sum();
        assert_eq!(twenty, KEY_BITS);
        let w = CellKey::even(&panda).words();
        assert_eq!(f32::from_bits(w[0]), -2.9f32);
        assert!((f32::from_bits(w[1]) - (8.0 / 5.8) as f32).abs() < 1e-6);
        assert_eq!(w[2], 3);
    }

    #[test]
    fn given_bits_are_checked() {
        let s = space(&[-1.0, -1.0], &[1.0, 1.0]);
        assert_eq!(CellKey::with_bits(&s, &[4, 12]).unwrap().bits(), [4, 12]);
        assert!(CellKey::with_bits(&s, &[4])
            .unwrap_err()
            .contains("1 bit counts"));
        assert!(CellKey::with_bits(&s, &[9, 8])
            .unwrap_err()
            .contains("16 bits"));
        let mut t = s.clone();
        t.lower[1] = f64::NEG_INFINITY;
        assert!(CellKey::with_bits(&t, &[4, 4]).unwrap_err().contains("j1"));
    }

    #[test]
    fn cells_split_each_range_and_clamp_outside_it() {
        let s = space(&[0.0, -1.0], &[4.0, 1.0]);
        let k = CellKey::with_bits(&s, &[2, 1]).unwrap();
        // Joint 0: four cells of width 1 (the high two bits); joint 1: two cells (the low bit).
        assert_eq!(k.cell(&[0.5, -0.5]), 0b000);
        assert_eq!(k.cell(&[1.5, 0.5]), 0b011);
        assert_eq!(k.cell(&[3.99, -0.99]), 0b110);
        assert_eq!(k.cell(&[9.0, 7.0]), 0b111);
        assert_eq!(k.cell(&[-9.0, f32::NAN]), 0b000);
    }

    #[test]
    fn order_is_a_permutation_sorted_by_cell() {
        let s = space(&[-1.0; 3], &[1.0; 3]);
        let k = CellKey::even(&s);
        let mut x = 0x2545_f491u32;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            (x as f32 / u32::MAX as f32) * 2.0 - 1.0
        };
        // Fewer and more configurations than cells.
        for n in [1usize, 100, 70_000] {
            let values: Vec<f32> = (0..3 * n).map(|_| next()).collect();
            let order = k.order(&values);
            let mut seen = vec![false; n];
            for &i in &order {
                assert!(!std::mem::replace(&mut seen[i as usize], true), "{i} twice");
            }
            assert!(seen.iter().all(|&s| s), "every configuration once");
            let cells: Vec<u32> = order
                .iter()
                .map(|&i| k.cell(&values[3 * i as usize..3 * i as usize + 3]))
                .collect();
            assert!(
                cells.windows(2).all(|w| w[0] <= w[1]),
                "n {n}: not in cell order"
            );
        }
    }
}
