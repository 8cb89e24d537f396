//! Collision checking: the batch-first [`Checker`] trait and its CPU backend.
//!
//! A configuration is *valid* (`true`) when the robot at that configuration collides neither
//! with itself (outside the allowed pairs) nor with any obstacle of the scene. A motion is valid
//! when every configuration at the resolution along it is valid (see
//! [`crate::robot::JointSpace::segments`]).

pub mod allowed;
mod backend;
pub mod coherent;
pub mod combine;
mod conjoin;
mod cpu;
pub mod detmath;
mod fast;
pub mod gjk;
pub mod hub;
pub mod hybrid;
pub mod lanes;
pub mod model;
pub mod prox;
pub mod sweep;

pub use allowed::make_scene_checker;
pub use backend::{make_checker, warm_up};
pub use conjoin::AllOf;
pub(crate) use cpu::ContactNames;
pub use cpu::{
    bisection_order, config_valid, frame_poses, frames_valid, piece_configs, prepare_motions,
    prepare_motions_parallel, refine_motions, refine_motions_up_to, sphere_near_obstacle,
    validate_batch, Bisection, CheckerOptions, CpuChecker, MotionStatus, PreparedMotions, Scratch,
    CULL_MIN_CONFIGS, MAX_REFINEMENTS, MOTION_PIECES, REFINE_FACTOR,
};
pub use fast::{
    frame_poses_fast, frames_valid_fast, motion_travel, BodyGroups, CullScratch, FastScratch,
    PairList, CULL_SLACK,
};
pub use model::{CollisionModel, RobotShapes, SceneModel, DEFAULT_MARGIN};
pub use sweep::{body_sweep, body_sweep_below, frame_lca, Sweep, NO_SWEEP};

use crate::robot::JointSpace;

/// Errors of the collision layer.
#[derive(Clone, Debug, thiserror::Error)]
pub enum CollisionError {
    /// A configuration in a batch had the wrong number of values.
    #[error("configuration batch: row has {got} values, the planning group needs {expected}")]
    WrongDof {
        /// Values the planning group needs.
        expected: usize,
        /// Values the row had.
        got: usize,
    },
    /// A configuration held NaN or infinity.
    #[error("configuration {index}: joint '{joint}' is not a finite number")]
    NonFinite {
        /// Index of the configuration in the batch.
        index: usize,
        /// Name of the offending joint.
        joint: String,
    },
    /// The motion batch has different numbers of start and end configurations.
    #[error("motion batch: {from} start configurations but {to} end configurations")]
    MotionLengthMismatch {
        /// Start configurations.
        from: usize,
        /// End configurations.
        to: usize,
    },
    /// The resolution must be a positive finite number.
    #[error("motion resolution must be positive and finite, got {0}")]
    BadResolution(f64),
    /// The backend failed (e.g. a CUDA error), with its message.
    #[error("collision backend '{backend}': {message}")]
    Backend {
        /// Backend name.
        backend: String,
        /// What went wrong.
        message: String,
    },
}

/// A row-major batch of configurations: `len() * dof()` values, one row per configuration.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ConfigBatch {
    dof: usize,
    values: Vec<f64>,
}

impl ConfigBatch {
    /// An empty batch of configurations with `dof` values each.
    pub fn new(dof: usize) -> Self {
        Self {
            dof,
            values: Vec::new(),
        }
    }

    /// An empty batch with room for `n` configurations.
    pub fn with_capacity(dof: usize, n: usize) -> Self {
        Self {
            dof,
            values: Vec::with_capacity(dof * n),
        }
    }

    /// Builds a batch from rows, checking that each has `dof` values.
    pub fn from_rows<R: AsRef<[f64]>>(dof: usize, rows: &[R]) -> Result<Self, CollisionError> {
        let mut b = Self::with_capacity(dof, rows.len());
        for r in rows {
            b.push(r.as_ref())?;
        }
        Ok(b)
    }

    /// Wraps row-major values; their count must be a multiple of `dof`.
    pub fn from_values(dof: usize, values: Vec<f64>) -> Result<Self, CollisionError> {
        if dof == 0 || !values.len().is_multiple_of(dof) {
            return Err(CollisionError::WrongDof {
                expected: dof,
                got: values.len(),
            });
        }
        Ok(Self { dof, values })
    }

    /// Appends one configuration.
    pub fn push(&mut self, q: &[f64]) -> Result<(), CollisionError> {
        if q.len() != self.dof {
            return Err(CollisionError::WrongDof {
                expected: self.dof,
                got: q.len(),
            });
        }
        self.values.extend_from_slice(q);
        Ok(())
    }

    /// Values per configuration.
    pub fn dof(&self) -> usize {
        self.dof
    }

    /// Number of configurations.
    pub fn len(&self) -> usize {
        self.values.len().checked_div(self.dof).unwrap_or(0)
    }

    /// True when the batch holds no configuration.
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// Configuration `i`.
    pub fn row(&self, i: usize) -> &[f64] {
        &self.values[i * self.dof..(i + 1) * self.dof]
    }

    /// All values, row-major.
    pub fn values(&self) -> &[f64] {
        &self.values
    }

    /// Iterates over the configurations.
    pub fn rows(&self) -> impl Iterator<Item = &[f64]> {
        self.values.chunks_exact(self.dof.max(1))
    }
}

/// A batch of straight-line motions: `from.row(i)` to `to.row(i)`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MotionBatch {
    /// Start configurations.
    pub from: ConfigBatch,
    /// End configurations.
    pub to: ConfigBatch,
}

impl MotionBatch {
    /// An empty batch of motions.
    pub fn new(dof: usize) -> Self {
        Self {
            from: ConfigBatch::new(dof),
            to: ConfigBatch::new(dof),
        }
    }

    /// Appends one motion.
    pub fn push(&mut self, from: &[f64], to: &[f64]) -> Result<(), CollisionError> {
        self.from.push(from)?;
        if let Err(e) = self.to.push(to) {
            self.from
                .values
                .truncate(self.from.values.len() - self.from.dof);
            return Err(e);
        }
        Ok(())
    }

    /// Number of motions.
    pub fn len(&self) -> usize {
        self.from.len()
    }

    /// True when the batch holds no motion.
    pub fn is_empty(&self) -> bool {
        self.from.is_empty()
    }
}

/// Which implementation runs the collision checks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    /// The CPU reference backend.
    Cpu,
    /// The CUDA backend.
    Cuda,
    /// Small calls on the CPU, large ones on the GPU ([`hybrid::HybridChecker`]).
    Hybrid,
}

impl Backend {
    /// The backend's name as reports and messages give it: `cpu`, `cuda` or `hybrid`.
    pub fn name(self) -> &'static str {
        match self {
            Backend::Cpu => "cpu",
            Backend::Cuda => "cuda",
            Backend::Hybrid => "hybrid",
        }
    }

    /// Whether callers should gather their checks into large batches: on the CUDA backend
    /// every call pays a round trip, so planners check many samples and motions per call; on
    /// the CPU (and the hybrid backend, whose small calls go to the CPU) a check costs in
    /// proportion to the configurations it visits, so they check one at a time and skip the
    /// checks whose verdicts they would not read.
    pub fn batches(self) -> bool {
        self == Backend::Cuda
    }
}

/// Batch-first collision checking. A single query is a batch of one.
pub trait Checker: Send + Sync {
    /// The joint space of the planning group the configurations are expressed in.
    fn space(&self) -> &JointSpace;

    /// One verdict per configuration: `true` = collision free.
    fn check_configs(&self, configs: &ConfigBatch) -> Result<Vec<bool>, CollisionError>;

    /// One verdict per motion: `true` when every configuration along it at `resolution` is
    /// collision free ([`Self::check_motions_refined`] with [`MAX_REFINEMENTS`]).
    fn check_motions(
        &self,
        motions: &MotionBatch,
        resolution: f64,
    ) -> Result<Vec<bool>, CollisionError> {
        self.check_motions_refined(motions, resolution, MAX_REFINEMENTS)
    }

    /// [`Self::check_motions`] with uncertain motions refined at most `max_refinements`
    /// times (at most [`MAX_REFINEMENTS`]; see [`refine_motions_up_to`]): a motion still
    /// uncertain then is reported invalid. Fewer refinements can only turn valid verdicts
    /// into invalid ones (a motion valid with fewer is valid with more), never the reverse,
    /// so callers that may drop a valid motion (shortcutting) pay less for motions grazing an
    /// obstacle. Every backend gives the same verdicts for the same `max_refinements`.
    fn check_motions_refined(
        &self,
        motions: &MotionBatch,
        resolution: f64,
        max_refinements: u32,
    ) -> Result<Vec<bool>, CollisionError>;

    /// The backend that runs the checks.
    fn backend(&self) -> Backend;

    /// Configurations whose validity this checker has computed so far, over all calls and
    /// threads, where the backend counts them (`None` otherwise). A motion check visits
    /// fewer configurations than it has when it stops early, and more when it refines.
    fn configs_evaluated(&self) -> Option<u64> {
        None
    }

    /// The checker's planner resident on its device (the CUDA backend, and the hybrid backend's
    /// GPU side), `None` where it has none. See [`crate::planners::device`].
    fn device_planner(&self) -> Option<&dyn crate::planners::device::DevicePlanner> {
        None
    }

    /// What collides at group configuration `q`, one line per pair of names ("'link' with
    /// obstacle 'id'", "'link' with 'link'"), for error messages; empty when `q` is free.
    /// `None` where the backend cannot name the pairs (the CPU reference and the CUDA backend
    /// name them from the reference's tests; the hybrid backend asks its CPU side).
    fn contacts(&self, _q: &[f64]) -> Option<Vec<String>> {
        None
    }

    /// Convenience: one configuration.
    fn check_config(&self, q: &[f64]) -> Result<bool, CollisionError> {
        let b = ConfigBatch::from_rows(self.space().dof(), &[q])?;
        Ok(self.check_configs(&b)?.first().copied().unwrap_or(false))
    }
}
