//! The hybrid backend: each call on the checker that answers it sooner. Every backend gives
//! the same verdicts (the CUDA kernels are operation-for-operation twins of the CPU checker,
//! held to it by the parity tests), so which one checks a batch changes only when the answer
//! comes. A GPU call costs a round trip of tens of microseconds before any work is done
//! (about 100 us for 1,000 Panda configurations on an H100, `results/collision/
//! small_batches_2026-11-22/`), while the CPU's eight-lane checks take about 0.1 us per
//! configuration: the small batches of a single planning query (one RRT-Connect extension, one
//! shortcut) are answered sooner by the CPU, the large ones (roadmap construction, bulk
//! checks, benchmarks) by the GPU.
//!
//! [`HybridChecker`] sends a call to its `large` checker when its work (configurations, or for
//! motions the configurations their first check visits at the resolution) reaches a
//! threshold, and to its `small` checker otherwise. It reports [`Backend::Hybrid`], which
//! planners treat as the CPU when they choose how to batch ([`Backend::batches`]): single
//! queries then ask one small check at a time and run at the CPU's speed, with the GPU
//! taking the calls that are large anyway.

use std::sync::atomic::{AtomicU64, Ordering};

use super::{Backend, Checker, CollisionError, ConfigBatch, MotionBatch};
use crate::robot::JointSpace;

/// Environment variable: the work (configurations) from which a hybrid checker built by
/// [`super::make_checker`] sends a call to the GPU, instead of its default.
pub const HYBRID_MIN_WORK_ENV: &str = "GMP_HYBRID_MIN";

/// The default threshold for sphere models, which the CPU checks eight configurations at a
/// time (about 0.1 us each on one core of the dev box): a GPU round trip of about 100 us is
/// worth it from a few thousand configurations.
pub const HYBRID_MIN_WORK_SPHERES: u64 = 4096;

/// The default threshold for polytope models, whose GJK tests cost the CPU about ten times
/// more per configuration.
pub const HYBRID_MIN_WORK_POLYTOPES: u64 = 512;

/// Calls answered by each side of a [`HybridChecker`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Routed {
    /// Calls sent to the small-batch checker.
    pub small: u64,
    /// Calls sent to the large-batch checker.
    pub large: u64,
}

/// Sends each call to one of two checkers of the same robot and scene by its size (see the
/// module documentation).
pub struct HybridChecker {
    small: Box<dyn Checker>,
    large: Box<dyn Checker>,
    min_work: u64,
    small_calls: AtomicU64,
    large_calls: AtomicU64,
}

impl HybridChecker {
    /// A checker that sends calls of at least `min_work` configurations to `large` and the
    /// others to `small`. Both must check the same planning group (the same joint names and
    /// limits), or the verdicts of a call would depend on its size: that is an error naming
    /// the first difference.
    pub fn new(
        small: Box<dyn Checker>,
        large: Box<dyn Checker>,
        min_work: u64,
    ) -> Result<Self, CollisionError> {
        let (a, b) = (small.space(), large.space());
        if a != b {
            let what = if a.names != b.names {
                format!("joints {:?} and {:?}", a.names, b.names)
            } else {
                "the same joints with different limits".to_string()
            };
            return Err(CollisionError::Backend {
                backend: "hybrid".into(),
                message: format!("its two checkers plan different groups: {what}"),
            });
        }
        Ok(Self {
            small,
            large,
            min_work: min_work.max(1),
            small_calls: AtomicU64::new(0),
            large_calls: AtomicU64::new(0),
        })
    }

    /// The work from which a call goes to the large-batch checker.
    pub fn min_work(&self) -> u64 {
        self.min_work
    }

    /// Calls answered by each checker so far.
    pub fn routed(&self) -> Routed {
        Routed {
            small: self.small_calls.load(Ordering::Relaxed),
            large: self.large_calls.load(Ordering::Relaxed),
        }
    }

    /// The checker for a call of `work` configurations, counted.
    fn pick(&self, work: u64) -> &dyn Checker {
        if work >= self.min_work {
            self.large_calls.fetch_add(1, Ordering::Relaxed);
            self.large.as_ref()
        } else {
            self.small_calls.fetch_add(1, Ordering::Relaxed);
            self.small.as_ref()
        }
    }
}

/// The configurations the first check of `motions` visits at `resolution` (each motion's
/// segments plus one), counted up to `cap`. Invalid input counts nothing: the checker it goes
/// to names the error.
fn motion_work(space: &JointSpace, motions: &MotionBatch, resolution: f64, cap: u64) -> u64 {
    if motions.from.dof() != space.dof() || motions.to.dof() != space.dof() {
        return 0;
    }
    let mut work = 0u64;
    for (a, b) in motions.from.rows().zip(motions.to.rows()) {
        let segments = space.segments(a, b, resolution) as u64;
        work = work.saturating_add(segments.saturating_add(1));
        if work >= cap {
            break;
        }
    }
    work
}

impl Checker for HybridChecker {
    fn space(&self) -> &JointSpace {
        self.small.space()
    }

    fn check_configs(&self, configs: &ConfigBatch) -> Result<Vec<bool>, CollisionError> {
        self.pick(configs.len() as u64).check_configs(configs)
    }

    fn check_motions(
        &self,
        motions: &MotionBatch,
        resolution: f64,
    ) -> Result<Vec<bool>, CollisionError> {
        let work = motion_work(self.space(), motions, resolution, self.min_work);
        self.pick(work).check_motions(motions, resolution)
    }

    fn backend(&self) -> Backend {
        Backend::Hybrid
    }

    /// What the two checkers have counted together (a side that does not count adds 0).
    fn configs_evaluated(&self) -> Option<u64> {
        match (
            self.small.configs_evaluated(),
            self.large.configs_evaluated(),
        ) {
            (None, None) => None,
            (a, b) => Some(a.unwrap_or(0) + b.unwrap_or(0)),
        }
    }
}
