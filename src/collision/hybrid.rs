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
//! [`HybridChecker`] sends a call to its `large` checker when its work reaches a threshold,
//! and to its `small` checker otherwise. The work of a configuration batch is its size; that
//! of a motion batch the configurations the first check of its motions visits at the
//! resolution, counted only for batches of at least [`MOTION_BATCH_MIN`] motions: a CPU motion
//! check stops at the first configuration in collision, which most of a single query's
//! motions reach within their first eight, while a GPU call costs its round trip whatever it
//! holds, so a few motions stay on the CPU however long they are (on the H100 machine, MBM
//! Panda polytope planning with single long motions sent to the GPU had a median of 2.47 ms
//! against the CPU's 1.54 ms), and a roadmap's batch of connections goes to the GPU. It reports [`Backend::Hybrid`], which planners treat as
//! the CPU when they choose how to batch ([`Backend::batches`]): single queries then ask one
//! small check at a time and run at the CPU's speed, with the GPU taking the calls that are
//! large anyway.
//!
//! The large side can be started at its first call ([`HybridChecker::lazy`]): the CUDA
//! backend compiles its robot-specialised kernels when it starts (38 s for the MBM Panda
//! sphere model on the H100 machine's CPU), which a query of small checks never needs. If it
//! cannot start, every call goes to the small side (the same verdicts), and one line on
//! stderr says why.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

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

/// Motion batches of fewer motions stay on the small side (see the module documentation).
pub const MOTION_BATCH_MIN: usize = 16;

/// Builds the large side of a [`HybridChecker::lazy`] at its first call.
pub type LargeBuilder = Box<dyn FnOnce() -> Result<Box<dyn Checker>, CollisionError> + Send>;

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
    /// The large side once started (`None`: it could not start; the small side answers).
    large: OnceLock<Option<Box<dyn Checker>>>,
    /// How to start the large side, until it is started.
    build: Mutex<Option<LargeBuilder>>,
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
        same_group(small.space(), large.space())?;
        Ok(Self {
            small,
            large: OnceLock::from(Some(large)),
            build: Mutex::new(None),
            min_work: min_work.max(1),
            small_calls: AtomicU64::new(0),
            large_calls: AtomicU64::new(0),
        })
    }

    /// A checker whose large side `build` starts at the first call that goes there. Should it
    /// fail, or check another planning group than `small`, every call goes to `small` and
    /// one line on stderr says why.
    pub fn lazy(small: Box<dyn Checker>, build: LargeBuilder, min_work: u64) -> Self {
        Self {
            small,
            large: OnceLock::new(),
            build: Mutex::new(Some(build)),
            min_work: min_work.max(1),
            small_calls: AtomicU64::new(0),
            large_calls: AtomicU64::new(0),
        }
    }

    /// The large side, started if need be (`None` where it cannot start).
    fn large(&self) -> Option<&dyn Checker> {
        self.large
            .get_or_init(|| {
                let build = self.build.lock().ok().and_then(|mut b| b.take());
                let started = match build {
                    Some(build) => build().and_then(|large| {
                        same_group(self.small.space(), large.space())?;
                        Ok(large)
                    }),
                    None => Err(not_built()),
                };
                match started {
                    Ok(large) => Some(large),
                    Err(e) => {
                        eprintln!(
                            "gmp: hybrid backend: the large-batch checker could not start ({e}); every check runs on the CPU"
                        );
                        None
                    }
                }
            })
            .as_deref()
    }

    /// Whether the large side has started and answers large calls (`false` before its first
    /// call, and where it could not start).
    pub fn large_started(&self) -> bool {
        self.large.get().is_some_and(|l| l.is_some())
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
            if let Some(large) = self.large() {
                self.large_calls.fetch_add(1, Ordering::Relaxed);
                return large;
            }
        }
        self.small_calls.fetch_add(1, Ordering::Relaxed);
        self.small.as_ref()
    }
}

fn not_built() -> CollisionError {
    CollisionError::Backend {
        backend: "hybrid".into(),
        message: "no large-batch checker".into(),
    }
}

/// An error unless `a` and `b` are the same planning group (joint names and limits).
fn same_group(a: &JointSpace, b: &JointSpace) -> Result<(), CollisionError> {
    if a == b {
        return Ok(());
    }
    let what = if a.names != b.names {
        format!("joints {:?} and {:?}", a.names, b.names)
    } else {
        "the same joints with different limits".to_string()
    };
    Err(CollisionError::Backend {
        backend: "hybrid".into(),
        message: format!("its two checkers plan different groups: {what}"),
    })
}

/// The work of `motions` at `resolution` (see the module documentation): 0 for fewer than
/// [`MOTION_BATCH_MIN`] motions, else the configurations their first checks visit (segments
/// plus one per motion), summed up to `cap`. Invalid input counts nothing: the checker it
/// goes to names the error.
fn motion_work(space: &JointSpace, motions: &MotionBatch, resolution: f64, cap: u64) -> u64 {
    if motions.len() < MOTION_BATCH_MIN
        || motions.from.dof() != space.dof()
        || motions.to.dof() != space.dof()
    {
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

    fn contacts(&self, q: &[f64]) -> Option<Vec<String>> {
        self.small.contacts(q)
    }

    fn check_configs(&self, configs: &ConfigBatch) -> Result<Vec<bool>, CollisionError> {
        self.pick(configs.len() as u64).check_configs(configs)
    }

    fn check_motions_refined(
        &self,
        motions: &MotionBatch,
        resolution: f64,
        max_refinements: u32,
    ) -> Result<Vec<bool>, CollisionError> {
        let work = motion_work(self.space(), motions, resolution, self.min_work);
        self.pick(work)
            .check_motions_refined(motions, resolution, max_refinements)
    }

    fn backend(&self) -> Backend {
        Backend::Hybrid
    }

    /// What the two checkers have counted together (a side that does not count adds 0).
    fn configs_evaluated(&self) -> Option<u64> {
        let large = self.large.get().and_then(|l| l.as_ref());
        match (
            self.small.configs_evaluated(),
            large.and_then(|l| l.configs_evaluated()),
        ) {
            (None, None) => None,
            (a, b) => Some(a.unwrap_or(0) + b.unwrap_or(0)),
        }
    }

    /// The large side's (started if need be): a device planner runs on the GPU.
    fn device_planner(&self) -> Option<&dyn crate::planners::device::DevicePlanner> {
        self.large().and_then(|l| l.device_planner())
    }
}
