//! Test helpers: a point robot in a box world that implements `Checker` exactly as the
//! contract says (honouring `JointSpace::segments` / `interpolate`), counts its calls, and has
//! an exact test for an independent dense re-check.
#![allow(dead_code)]

pub mod bin;
pub mod bundled;
pub mod exact;
pub mod service;

use std::f64::consts::PI;
use std::sync::atomic::{AtomicUsize, Ordering};

use nalgebra::{Isometry3, UnitQuaternion, Vector3};
use rand::Rng;
use rand_chacha::ChaCha8Rng;

use gpu_motion_planner::collision::{Backend, Checker, CollisionError, ConfigBatch, MotionBatch};
use gpu_motion_planner::robot::{wrap_angle, JointSpace};
use gpu_motion_planner::scene::{Obstacle, Scene, Shape};
use gpu_motion_planner::trajectory::Trajectory;

/// Resolution used by the planner tests.
pub const RES: f64 = 0.01;

/// An axis-aligned box obstacle in configuration space.
#[derive(Clone, Debug)]
pub struct Aabb {
    pub min: Vec<f64>,
    pub max: Vec<f64>,
}

/// A point robot whose configuration is its position; obstacles are boxes.
pub struct BoxWorld {
    pub space: JointSpace,
    pub obstacles: Vec<Aabb>,
    /// The checker's verdicts use boxes inflated by this much (conservative, like the real
    /// checker); the exact test does not.
    pub margin: f64,
    /// The backend the world reports: `Cpu` by default; `Cuda` makes the planners issue
    /// their work in the batches they use on a GPU (same verdicts, same results).
    pub backend: Backend,
    pub config_calls: AtomicUsize,
    pub motion_calls: AtomicUsize,
    pub configs: AtomicUsize,
    pub motions: AtomicUsize,
}

pub fn space(dof: usize, continuous: &[usize]) -> JointSpace {
    let mut s = JointSpace {
        names: (0..dof).map(|j| format!("j{j}")).collect(),
        lower: vec![0.0; dof],
        upper: vec![1.0; dof],
        continuous: vec![false; dof],
        max_velocity: (0..dof).map(|j| 1.0 + 0.5 * j as f64).collect(),
        max_acceleration: (0..dof).map(|j| 2.0 + j as f64).collect(),
        max_jerk: vec![f64::INFINITY; dof],
    };
    for &j in continuous {
        s.lower[j] = -PI;
        s.upper[j] = PI;
        s.continuous[j] = true;
    }
    s
}

impl BoxWorld {
    pub fn new(space: JointSpace, obstacles: Vec<Aabb>) -> Self {
        Self {
            space,
            obstacles,
            margin: 0.6 * RES,
            backend: Backend::Cpu,
            config_calls: AtomicUsize::new(0),
            motion_calls: AtomicUsize::new(0),
            configs: AtomicUsize::new(0),
            motions: AtomicUsize::new(0),
        }
    }

    fn free_with(&self, q: &[f64], margin: f64) -> bool {
        if q.len() != self.space.dof() {
            return false;
        }
        let mut p = q.to_vec();
        for (j, v) in p.iter_mut().enumerate() {
            if !v.is_finite() {
                return false;
            }
            if self.space.continuous[j] {
                *v = wrap_angle(*v);
            } else if *v < self.space.lower[j] || *v > self.space.upper[j] {
                return false;
            }
        }
        !self
            .obstacles
            .iter()
            .any(|b| (0..p.len()).all(|j| p[j] >= b.min[j] - margin && p[j] <= b.max[j] + margin))
    }

    /// The exact test: within limits and outside every (uninflated) box.
    pub fn exact_free(&self, q: &[f64]) -> bool {
        self.free_with(q, 0.0)
    }

    fn check_row(&self, index: usize, q: &[f64]) -> Result<(), CollisionError> {
        if q.len() != self.space.dof() {
            return Err(CollisionError::WrongDof {
                expected: self.space.dof(),
                got: q.len(),
            });
        }
        if let Some(j) = q.iter().position(|v| !v.is_finite()) {
            return Err(CollisionError::NonFinite {
                index,
                joint: self.space.names[j].clone(),
            });
        }
        Ok(())
    }

    pub fn calls(&self) -> (usize, usize, usize, usize) {
        (
            self.config_calls.load(Ordering::Relaxed),
            self.configs.load(Ordering::Relaxed),
            self.motion_calls.load(Ordering::Relaxed),
            self.motions.load(Ordering::Relaxed),
        )
    }

    pub fn reset_counts(&self) {
        for c in [
            &self.config_calls,
            &self.motion_calls,
            &self.configs,
            &self.motions,
        ] {
            c.store(0, Ordering::Relaxed);
        }
    }
}

impl Checker for BoxWorld {
    fn space(&self) -> &JointSpace {
        &self.space
    }

    fn check_configs(&self, configs: &ConfigBatch) -> Result<Vec<bool>, CollisionError> {
        self.config_calls.fetch_add(1, Ordering::Relaxed);
        self.configs.fetch_add(configs.len(), Ordering::Relaxed);
        if configs.dof() != self.space.dof() {
            return Err(CollisionError::WrongDof {
                expected: self.space.dof(),
                got: configs.dof(),
            });
        }
        let mut out = Vec::with_capacity(configs.len());
        for (i, q) in configs.rows().enumerate() {
            self.check_row(i, q)?;
            out.push(self.free_with(q, self.margin));
        }
        Ok(out)
    }

    /// Exact tests against the boxes: no refinement to limit.
    fn check_motions_refined(
        &self,
        motions: &MotionBatch,
        resolution: f64,
        _max_refinements: u32,
    ) -> Result<Vec<bool>, CollisionError> {
        self.motion_calls.fetch_add(1, Ordering::Relaxed);
        self.motions.fetch_add(motions.len(), Ordering::Relaxed);
        if !(resolution > 0.0 && resolution.is_finite()) {
            return Err(CollisionError::BadResolution(resolution));
        }
        if motions.from.len() != motions.to.len() {
            return Err(CollisionError::MotionLengthMismatch {
                from: motions.from.len(),
                to: motions.to.len(),
            });
        }
        let dof = self.space.dof();
        let mut q = vec![0.0; dof];
        let mut out = Vec::with_capacity(motions.len());
        for i in 0..motions.len() {
            let (a, b) = (motions.from.row(i), motions.to.row(i));
            self.check_row(i, a)?;
            self.check_row(i, b)?;
            let n = self.space.segments(a, b, resolution);
            let mut ok = true;
            for s in 0..=n {
                self.space.interpolate(a, b, s as f64 / n as f64, &mut q);
                if !self.free_with(&q, self.margin) {
                    ok = false;
                    break;
                }
            }
            out.push(ok);
        }
        Ok(out)
    }

    fn backend(&self) -> Backend {
        self.backend
    }
}

pub fn aabb(min: &[f64], max: &[f64]) -> Aabb {
    Aabb {
        min: min.to_vec(),
        max: max.to_vec(),
    }
}

/// 2-DOF: a wall from the floor up to y = 0.7 between start and goal.
pub fn wall_2d() -> (BoxWorld, Vec<f64>, Vec<f64>) {
    let w = BoxWorld::new(space(2, &[]), vec![aabb(&[0.45, 0.0], &[0.55, 0.7])]);
    (w, vec![0.2, 0.2], vec![0.8, 0.2])
}

/// 3-DOF: a slab with a single window, plus a pillar.
pub fn window_3d() -> (BoxWorld, Vec<f64>, Vec<f64>) {
    let w = BoxWorld::new(
        space(3, &[]),
        vec![
            // slab x in [0.45, 0.55] with a window y,z in [0.6, 0.85]
            aabb(&[0.45, 0.0, 0.0], &[0.55, 0.6, 1.0]),
            aabb(&[0.45, 0.85, 0.0], &[0.55, 1.0, 1.0]),
            aabb(&[0.45, 0.6, 0.0], &[0.55, 0.85, 0.6]),
            aabb(&[0.45, 0.6, 0.85], &[0.55, 0.85, 1.0]),
            aabb(&[0.2, 0.3, 0.3], &[0.3, 0.5, 0.6]),
        ],
    );
    (w, vec![0.1, 0.2, 0.2], vec![0.9, 0.2, 0.2])
}

/// 2-DOF with a continuous second joint: a block over theta in [-2, 2] for x in [0.3, 0.7],
/// so the way from theta = 2.5 to theta = -2.5 goes across the ±PI seam.
pub fn continuous_2d() -> (BoxWorld, Vec<f64>, Vec<f64>) {
    let w = BoxWorld::new(space(2, &[1]), vec![aabb(&[0.3, -2.0], &[0.7, 2.0])]);
    (w, vec![0.1, 2.5], vec![0.9, -2.5])
}

/// 2-DOF: the goal sits inside a closed shell of boxes.
pub fn enclosed_goal() -> (BoxWorld, Vec<f64>, Vec<f64>) {
    let w = BoxWorld::new(
        space(2, &[]),
        vec![
            aabb(&[0.6, 0.6], &[1.0, 0.65]),
            aabb(&[0.6, 0.95], &[1.0, 1.0]),
            aabb(&[0.6, 0.6], &[0.65, 1.0]),
            aabb(&[0.95, 0.6], &[1.0, 1.0]),
        ],
    );
    (w, vec![0.2, 0.2], vec![0.8, 0.8])
}

/// Independent dense re-check of a trajectory: every consecutive pair of points is sampled
/// at a tenth of `resolution` by plain linear interpolation of the (unwrapped) positions and
/// tested with the world's exact test; positions, velocities and accelerations must respect
/// the limits (times the scales).
pub fn dense_recheck(
    world: &BoxWorld,
    traj: &Trajectory,
    resolution: f64,
    vel_scale: f64,
    acc_scale: f64,
) -> Result<(), String> {
    let s = &world.space;
    let step = resolution / 10.0;
    if traj.points.is_empty() {
        return Err("empty trajectory".into());
    }
    if traj.joint_names != s.names {
        return Err("joint names differ".into());
    }
    for (i, p) in traj.points.iter().enumerate() {
        for j in 0..s.dof() {
            if p.velocities[j].abs() > s.max_velocity[j] * vel_scale * (1.0 + 1e-9) + 1e-12 {
                return Err(format!("point {i}: joint {j} velocity {}", p.velocities[j]));
            }
            if p.accelerations[j].abs() > s.max_acceleration[j] * acc_scale * (1.0 + 1e-9) + 1e-12 {
                return Err(format!(
                    "point {i}: joint {j} acceleration {}",
                    p.accelerations[j]
                ));
            }
        }
        if i > 0 && p.time_from_start < traj.points[i - 1].time_from_start {
            return Err(format!("point {i}: time goes backwards"));
        }
    }
    for (i, w) in traj.points.windows(2).enumerate() {
        let (a, b) = (&w[0].positions, &w[1].positions);
        let d: f64 = a
            .iter()
            .zip(b)
            .map(|(x, y)| (y - x) * (y - x))
            .sum::<f64>()
            .sqrt();
        let n = ((d / step).ceil() as usize).max(1);
        for k in 0..=n {
            let t = k as f64 / n as f64;
            let q: Vec<f64> = a.iter().zip(b).map(|(x, y)| x + (y - x) * t).collect();
            if !world.exact_free(&q) {
                return Err(format!("between points {i} and {}: {q:?} collides", i + 1));
            }
        }
    }
    Ok(())
}

/// True when `a` and `b` are the same configuration (continuous joints modulo 2 PI).
pub fn same_config(space: &JointSpace, a: &[f64], b: &[f64]) -> bool {
    a.len() == b.len() && space.distance(a, b) < 1e-9
}

/// The crate root.
pub fn root() -> std::path::PathBuf {
    std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The MotionBenchMaker data folder, or `None` with a printed skip message.
pub fn mbm_or_skip(test: &str) -> Option<std::path::PathBuf> {
    match gpu_motion_planner::mbm::data_dir() {
        Ok(d) => Some(d),
        Err(e) => {
            eprintln!("SKIP {test}: {e}");
            None
        }
    }
}

/// A random obstacle pose: position uniform in the box `lo..hi`, orientation from random Euler
/// angles (dynamic-roadmap tests).
pub fn random_pose(rng: &mut ChaCha8Rng, lo: [f64; 3], hi: [f64; 3]) -> Isometry3<f64> {
    let t = Vector3::new(
        rng.random_range(lo[0]..hi[0]),
        rng.random_range(lo[1]..hi[1]),
        rng.random_range(lo[2]..hi[2]),
    );
    let q = UnitQuaternion::from_euler_angles(
        rng.random_range(-PI..PI),
        rng.random_range(-PI..PI),
        rng.random_range(-PI..PI),
    );
    Isometry3::from_parts(t.into(), q)
}

/// A random obstacle shape, sizes scaled by `s` (1 for a 1.6 m arm): one in six a sphere, one
/// in six a cylinder, the rest boxes of 6 cm to 70 cm sides.
pub fn random_shape(rng: &mut ChaCha8Rng, s: f64) -> Shape {
    match rng.random_range(0..6) {
        0 => Shape::Sphere {
            radius: s * rng.random_range(0.05..0.3),
        },
        1 => Shape::Cylinder {
            radius: s * rng.random_range(0.03..0.2),
            half_length: s * rng.random_range(0.05..0.4),
        },
        _ => Shape::Box {
            half_extents: Vector3::new(
                s * rng.random_range(0.03..0.35),
                s * rng.random_range(0.03..0.35),
                s * rng.random_range(0.03..0.35),
            ),
        },
    }
}

/// An environment variable as a number, or `default`.
pub fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// True when a CUDA device is usable; otherwise prints why `test` is skipped (the GPU tests
/// run on the GPU machine).
pub fn gpu_or_skip(test: &str) -> bool {
    if gpu_motion_planner::gpu::gpu_available() {
        return true;
    }
    eprintln!("SKIP {test}: no CUDA device (libcuda missing or no GPU visible)");
    false
}

/// True when libnvrtc can be loaded; otherwise prints why `test` is skipped.
pub fn nvrtc_or_skip(test: &str) -> bool {
    if gpu_motion_planner::gpu::kernels::nvrtc_available() {
        return true;
    }
    eprintln!(
        "SKIP {test}: libnvrtc not found (GMP_NVRTC_LIB={:?}); run `source scripts/nvrtc_env.sh` first",
        std::env::var("GMP_NVRTC_LIB").ok()
    );
    false
}

/// Asserts that the PTX of a collision module holds every collision kernel and no fused
/// multiply-add (the kernels must agree bit for bit with the CPU).
pub fn assert_exact_collision_ptx(what: &str, ptx: &str) {
    for k in gpu_motion_planner::gpu::kernels::KERNEL_NAMES {
        assert!(
            ptx.contains(&format!(".entry {k}(")),
            "{what}: kernel {k} missing from the PTX"
        );
    }
    assert!(
        !ptx.contains("fma.rn.f32"),
        "{what}: the PTX contains fma.rn.f32; the kernels must be built with --fmad=false"
    );
}

/// A small convex mesh (the hull of five points within 20 cm) for scene tests.
pub fn small_mesh() -> gpu_motion_planner::robot::geometry::Polytope {
    use nalgebra::Point3;
    let pts = [
        Point3::new(0.0, 0.0, 0.0),
        Point3::new(0.2, 0.0, 0.0),
        Point3::new(0.0, 0.2, 0.0),
        Point3::new(0.0, 0.0, 0.2),
        Point3::new(0.1, 0.1, 0.15),
    ];
    gpu_motion_planner::robot::geometry::Polytope::from_points(&pts).expect("convex mesh")
}

/// `f` applied to every item on as many threads as there are cores, results in item order.
pub fn par_map<T: Sync, R: Send>(items: &[T], f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let threads = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .min(items.len().max(1));
    let next = AtomicUsize::new(0);
    let mut out: Vec<(usize, R)> = std::thread::scope(|sc| {
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                sc.spawn(|| {
                    let mut done = Vec::new();
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some(item) = items.get(i) else {
                            return done;
                        };
                        done.push((i, f(item)));
                    }
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|w| w.join().expect("worker thread"))
            .collect()
    });
    out.sort_by_key(|(i, _)| *i);
    out.into_iter().map(|(_, r)| r).collect()
}

/// Shared launches against per-scene CPU checkers: one [`LaunchHub`] over `execs` (each holds
/// the scenes of `cpus`, scene `k` = `cpus[k]`; one dispatcher per executor), one client thread per scene, each asking for
/// `rounds` batches of `batch` random configurations and `batch / 4` random motions (uniform in
/// the limits, or perturbations of the scene's `anchors`, so that many land near contact),
/// every verdict compared with the scene's own checker. Returns (configurations, motions,
/// differences, free configurations).
///
/// [`LaunchHub`]: gpu_motion_planner::collision::hub::LaunchHub
pub fn hub_parity(
    execs: Vec<Box<dyn gpu_motion_planner::collision::hub::BatchExecutor>>,
    cpus: &[gpu_motion_planner::collision::CpuChecker],
    anchors: &[Vec<Vec<f64>>],
    rounds: usize,
    batch: usize,
) -> (usize, usize, usize, usize) {
    use gpu_motion_planner::collision::hub::{HubOptions, LaunchHub};
    use rand::SeedableRng;
    let space = cpus[0].space().clone();
    let hub =
        LaunchHub::with_executors(execs, space.clone(), HubOptions::default()).expect("hub starts");
    let counts = AtomicUsize::new(0);
    let (configs, motions, diffs, free) = (
        AtomicUsize::new(0),
        AtomicUsize::new(0),
        AtomicUsize::new(0),
        AtomicUsize::new(0),
    );
    std::thread::scope(|sc| {
        for (k, cpu) in cpus.iter().enumerate() {
            let client = hub.client(k).expect("client");
            let (hub_space, counts) = (&space, &counts);
            let (configs, motions, diffs, free) = (&configs, &motions, &diffs, &free);
            sc.spawn(move || {
                let mut rng = ChaCha8Rng::seed_from_u64(0x6875_6200 + k as u64);
                let sample = |rng: &mut ChaCha8Rng| -> Vec<f64> {
                    let (lo, hi) = (&hub_space.lower, &hub_space.upper);
                    let a = &anchors[k];
                    if a.is_empty() || rng.random_bool(0.3) {
                        return (0..lo.len())
                            .map(|j| rng.random_range(lo[j]..=hi[j]))
                            .collect();
                    }
                    let base = &a[rng.random_range(0..a.len())];
                    let scale = [0.02, 0.1, 0.4][rng.random_range(0..3)];
                    (0..lo.len())
                        .map(|j| (base[j] + rng.random_range(-scale..=scale)).clamp(lo[j], hi[j]))
                        .collect()
                };
                for _ in 0..rounds {
                    let rows: Vec<Vec<f64>> = (0..batch).map(|_| sample(&mut rng)).collect();
                    let refs: Vec<&[f64]> = rows.iter().map(|r| r.as_slice()).collect();
                    let b = ConfigBatch::from_rows(hub_space.dof(), &refs).expect("batch");
                    let got = client.check_configs(&b).expect("hub configs");
                    let want = cpu.check_configs(&b).expect("cpu configs");
                    configs.fetch_add(want.len(), Ordering::Relaxed);
                    free.fetch_add(want.iter().filter(|v| **v).count(), Ordering::Relaxed);
                    diffs.fetch_add(
                        got.iter().zip(&want).filter(|(g, w)| g != w).count(),
                        Ordering::Relaxed,
                    );
                    let mut m = MotionBatch::new(hub_space.dof());
                    for _ in 0..(batch / 4).max(1) {
                        let (a, b) = (sample(&mut rng), sample(&mut rng));
                        m.push(&a, &b).expect("motion");
                    }
                    let got = client.check_motions(&m, 0.02).expect("hub motions");
                    let want = cpu.check_motions(&m, 0.02).expect("cpu motions");
                    motions.fetch_add(want.len(), Ordering::Relaxed);
                    diffs.fetch_add(
                        got.iter().zip(&want).filter(|(g, w)| g != w).count(),
                        Ordering::Relaxed,
                    );
                }
                counts.fetch_add(1, Ordering::Relaxed);
            });
        }
    });
    assert_eq!(
        counts.load(Ordering::Relaxed),
        cpus.len(),
        "every client thread finished"
    );
    let st = hub.stats();
    eprintln!(
        "hub parity: {} rounds, {} requests, {:.1} requests per round",
        st.rounds,
        st.requests,
        st.requests as f64 / st.rounds.max(1) as f64
    );
    (
        configs.into_inner(),
        motions.into_inner(),
        diffs.into_inner(),
        free.into_inner(),
    )
}

/// A one-thread CPU checker of `robot` in problem `p`'s scene and start state.
pub fn one_thread_checker(
    r: &gpu_motion_planner::mbm::MbmRobot,
    p: &gpu_motion_planner::mbm::Problem,
    shapes: gpu_motion_planner::collision::RobotShapes,
) -> gpu_motion_planner::collision::CpuChecker {
    gpu_motion_planner::collision::CpuChecker::new(
        &r.model,
        &r.group,
        &r.start_full_state(p),
        &p.scene,
        gpu_motion_planner::collision::CheckerOptions {
            shapes,
            threads: 1,
            ..Default::default()
        },
    )
    .expect("checker builds")
}

/// `n` random obstacles (boxes, spheres, cylinders in turn) around the origin, for the
/// exact-oracle tests.
pub fn random_scene(rng: &mut ChaCha8Rng, n: usize) -> Scene {
    let mut scene = Scene::new("world");
    for i in 0..n {
        let pose = Isometry3::from_parts(
            Vector3::new(
                rng.random_range(-0.8..0.8),
                rng.random_range(-0.8..0.8),
                rng.random_range(0.0..1.2),
            )
            .into(),
            UnitQuaternion::from_euler_angles(
                rng.random_range(-3.0..3.0),
                rng.random_range(-3.0..3.0),
                rng.random_range(-3.0..3.0),
            ),
        );
        let shape = match i % 3 {
            0 => Shape::Box {
                half_extents: Vector3::new(
                    rng.random_range(0.02..0.2),
                    rng.random_range(0.02..0.2),
                    rng.random_range(0.02..0.2),
                ),
            },
            1 => Shape::Sphere {
                radius: rng.random_range(0.02..0.15),
            },
            _ => Shape::Cylinder {
                radius: rng.random_range(0.02..0.1),
                half_length: rng.random_range(0.05..0.3),
            },
        };
        scene
            .add(Obstacle {
                id: format!("o{i}"),
                shape,
                pose,
            })
            .unwrap();
    }
    scene
}
