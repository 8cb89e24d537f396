//! The CUDA executor of shared launches ([`crate::collision::hub`]): the configurations and
//! motions of many problems, each in its own scene, checked in one launch.
//!
//! The robot is resident once. The scenes are resident side by side: their obstacles in one
//! array (each scene a range of it, [`SceneModel::append`]) and their base states in another.
//! Each item carries its scene, and `check_configs_multi` / `check_motions_balanced_multi` run
//! the usual tests on a copy of the model argument whose obstacle range and base state are the
//! item's scene's (`gmp_scene_model` in `kernels/collision.cu`), so an item's verdict is the one
//! a [`CudaChecker`](super::CudaChecker) holding that scene alone gives, which is the CPU's.

use cudarc::driver::{CudaSlice, PushKernelArg};

use super::{
    backend_err, drv, launch_cfg, upload, within_kernel_limits, DevTimes, DeviceState, GpuTimings,
    KernelVariant, OrderTable,
};
use super::{specialised_source, CudaOptions, MotionKernel};
use crate::collision::hub::BatchExecutor;
use crate::collision::model::{CollisionModel, SceneModel};
use crate::collision::{Backend, CheckerOptions, CollisionError, MotionStatus, PreparedMotions};
use crate::robot::{PlanningGroup, RobotModel};
use crate::scene::Scene;

/// The scene table on the device: per scene `{first obstacle, obstacle count, offset of its
/// base state, 0}` (`GmpSceneRange`), and the base states (`num_vars` f32 each).
pub(super) struct DeviceScenes {
    pub(super) ranges: CudaSlice<u32>,
    pub(super) bases: CudaSlice<u32>,
}

/// A [`BatchExecutor`] on one CUDA device (see the module documentation).
pub struct CudaBatch {
    dev: DeviceState,
    scenes: DeviceScenes,
    count: usize,
    dof: usize,
    variant: KernelVariant,
    order: OrderTable,
    device: String,
    timings: GpuTimings,
}

impl std::fmt::Debug for CudaBatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CudaBatch")
            .field("device", &self.device)
            .field("scenes", &self.count)
            .field("variant", &self.variant)
            .finish()
    }
}

impl CudaBatch {
    /// Puts the robot (`group` of `robot`) and every scene of `problems` (each a full base
    /// state and a scene) on device `ordinal`, with the kernels `cuda` chooses.
    ///
    /// Fails when the problems' base states give different collision models apart from the
    /// base state itself (a prismatic joint outside the group whose value changes the bodies'
    /// reach): one resident robot must serve every scene.
    pub fn new(
        robot: &RobotModel,
        group: &PlanningGroup,
        problems: &[(Vec<f64>, &Scene)],
        opts: CheckerOptions,
        cuda: CudaOptions,
        ordinal: usize,
    ) -> Result<Self, CollisionError> {
        let Some((base0, _)) = problems.first() else {
            return Err(backend_err(
                "a shared-launch executor needs at least one scene",
            ));
        };
        let build = |base: &[f64]| {
            CollisionModel::build(robot, group, base, opts.shapes, opts.margin).map_err(backend_err)
        };
        let model = build(base0)?;
        within_kernel_limits(&model)?;
        // Only prismatic joints' values shape the model beyond its base state (their reach).
        let prismatic = model.frames.iter().any(|f| f.kind == 1);
        let mut merged = SceneModel::default();
        let (mut ranges, mut bases) = (Vec::new(), Vec::new());
        for (k, (base, scene)) in problems.iter().enumerate() {
            if base.len() != model.num_vars {
                return Err(backend_err(format!(
                    "problem {k}: base state has {} values, the robot has {} variables",
                    base.len(),
                    model.num_vars
                )));
            }
            if prismatic && k > 0 {
                let mut other = build(base)?;
                other.base_state.clone_from(&model.base_state);
                if other != model {
                    return Err(backend_err(format!(
                        "problem {k}: its base state changes the collision model (a prismatic \
                         joint's reach); plan it with its own checker"
                    )));
                }
            }
            let mut sm = SceneModel::build(scene);
            // Within its range, each problem's obstacles nearest the robot's origin first, as a
            // single checker uploads them (upload::obstacle_order; the verdicts do not depend
            // on the order). Its slots are not addressed one by one: the scenes never change.
            let order = super::upload::obstacle_order(&sm);
            sm.obstacles = order
                .iter()
                .filter_map(|&i| sm.obstacles.get(i as usize).copied())
                .collect();
            let lo = merged.append(&sm);
            ranges.extend([lo as u32, sm.obstacles.len() as u32, bases.len() as u32, 0]);
            bases.extend(base.iter().map(|&v| (v as f32).to_bits()));
        }
        let generated = specialised_source(&model, &cuda);
        let spec = generated
            .as_ref()
            .ok()
            .map(|g| (g.source.as_str(), cuda.spec_maxrreg));
        // The hub checks its items through check_configs_multi, in the callers' order.
        // Uploaded as merged (each problem's range already ordered above): the shared launches
        // address each problem's obstacles as a range of slots.
        let (dev, spec_error) = DeviceState::new(ordinal, &model, &merged, spec, &[], false)?;
        let variant = match (&generated, &spec_error) {
            (Ok(_), None) => KernelVariant::Specialised,
            _ => KernelVariant::Generic,
        };
        if let Some(why) = generated.err().or(spec_error) {
            eprintln!(
                "gmp: shared launches: generic kernels (no specialised kernels: {})",
                why.lines().next().unwrap_or("")
            );
        }
        let scenes = DeviceScenes {
            ranges: upload(&dev.stream, &ranges)?,
            bases: upload(&dev.stream, &bases)?,
        };
        dev.stream.synchronize().map_err(drv("scene upload"))?;
        Ok(Self {
            dev,
            scenes,
            count: problems.len(),
            dof: model.dof(),
            variant,
            order: OrderTable::default(),
            device: super::device_module(ordinal)?.name.clone(),
            timings: GpuTimings::default(),
        })
    }

    /// The kernels the checks run on.
    pub fn kernel_variant(&self) -> KernelVariant {
        self.variant
    }

    /// The device's name.
    pub fn device_name(&self) -> &str {
        &self.device
    }

    /// Summed device timings of every batch so far.
    pub fn timings(&self) -> GpuTimings {
        self.timings
    }

    /// Plans problem `i` of `problems` in scene `scene_of[i]`, every problem in one launch of
    /// the device RRT-Connect ([`crate::planners::device`]): the plans are
    /// those a [`CudaChecker`](super::CudaChecker) holding that scene alone makes.
    pub fn rrt_connect(
        &mut self,
        space: &crate::robot::JointSpace,
        problems: &[(&[f64], &[f64])],
        scene_of: &[u32],
        settings: &crate::planners::device::DeviceRrtcSettings,
    ) -> Result<Vec<crate::planners::device::DeviceOutcome>, CollisionError> {
        self.check_scenes(scene_of)?;
        if space.dof() != self.dof {
            return Err(CollisionError::WrongDof {
                expected: self.dof,
                got: space.dof(),
            });
        }
        let func = self.dev.kernels(self.variant).rrtc[1].clone();
        let problems: Vec<crate::planners::device::DeviceProblem<'_>> = problems
            .iter()
            .map(|&(s, g)| crate::planners::device::DeviceProblem::new(s, g))
            .collect();
        super::rrtc::plan(
            &mut self.dev,
            &func,
            Some((&self.scenes, scene_of)),
            space,
            &problems,
            settings,
        )
    }

    /// The device planner kernel's registers, local memory and blocks per multiprocessor at
    /// `warps` warps per block (for reports).
    pub fn rrt_connect_resources(&self, warps: u32) -> String {
        super::rrtc::resources(&self.dev.kernels(self.variant).rrtc[1], warps)
    }

    fn check_scenes(&self, scene_of: &[u32]) -> Result<(), CollisionError> {
        match scene_of.iter().find(|&&s| s as usize >= self.count) {
            Some(s) => Err(backend_err(format!(
                "scene {s} out of range: the executor holds {} scenes",
                self.count
            ))),
            None => Ok(()),
        }
    }

    fn add_times(&mut self, t: DevTimes) {
        self.timings.htod_ms += t.htod;
        self.timings.kernel_ms += t.kernel;
        self.timings.dtoh_ms += t.dtoh;
        self.timings.launches += t.launches;
    }
}

impl BatchExecutor for CudaBatch {
    fn scenes(&self) -> usize {
        self.count
    }

    fn check_configs(
        &mut self,
        values: &[f32],
        scene_of: &[u32],
    ) -> Result<Vec<bool>, CollisionError> {
        let n = scene_of.len();
        if values.len() != n * self.dof {
            return Err(CollisionError::WrongDof {
                expected: n * self.dof,
                got: values.len(),
            });
        }
        self.check_scenes(scene_of)?;
        if n == 0 {
            return Ok(Vec::new());
        }
        let nv = values.len();
        let dev = &mut self.dev;
        dev.ensure_buffers(nv + n, n)?;
        {
            let stg = dev.staging.as_mut_slice().map_err(drv("pinned buffer"))?;
            for (d, v) in stg.iter_mut().zip(values) {
                *d = v.to_bits();
            }
            stg[nv..nv + n].copy_from_slice(scene_of);
        }
        let f = dev.kernels(self.variant).configs_multi.clone();
        let scenes = &self.scenes;
        let mut times = DevTimes::default();
        dev.round(nv + n, n, &mut times, |s| {
            let q = s.input.slice(0..nv);
            let sc = s.input.slice(nv..nv + n);
            let n32 = n as u32;
            let mut out = s.out.slice_mut(0..n);
            let mut b = s.stream.launch_builder(&f);
            b.arg(&s.args)
                .arg(&scenes.ranges)
                .arg(&scenes.bases)
                .arg(&sc)
                .arg(&q)
                .arg(&n32)
                .arg(&mut out);
            unsafe { b.launch(launch_cfg(n)) }.map_err(drv("launching check_configs_multi"))?;
            Ok(())
        })?;
        let host = dev.out_host.as_slice().map_err(drv("pinned buffer"))?;
        let out = host[..n].iter().map(|&h| h != 0).collect();
        self.add_times(times);
        Ok(out)
    }

    fn motion_statuses(
        &mut self,
        p: &PreparedMotions,
        scene_of: &[u32],
    ) -> Result<Vec<MotionStatus>, CollisionError> {
        let n = p.segments.len();
        if scene_of.len() != n || p.start.len() != n * self.dof || p.diff.len() != n * self.dof {
            return Err(CollisionError::WrongDof {
                expected: n * self.dof,
                got: p.start.len().min(p.diff.len()),
            });
        }
        self.check_scenes(scene_of)?;
        if n == 0 {
            return Ok(Vec::new());
        }
        self.order.ensure(&p.segments)?;
        let mut out = vec![MotionStatus::Valid; n];
        let mut times = DevTimes::default();
        self.dev.motions(
            p,
            0..n,
            (MotionKernel::Balanced, self.variant),
            &self.order,
            Some((scene_of, &self.scenes)),
            &mut out,
            &mut times,
        )?;
        self.add_times(times);
        Ok(out)
    }

    fn backend(&self) -> Backend {
        Backend::Cuda
    }

    fn device_ms(&self) -> f64 {
        self.timings.htod_ms + self.timings.kernel_ms + self.timings.dtoh_ms
    }
}
