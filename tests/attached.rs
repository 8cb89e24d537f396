//! Attached objects (`RobotModel::attach`): a carried object is checked like a link of its own.
//!
//! 1. Conservative: on the bundled arm carrying a bar (on `tool0`) and a convex mesh (on the
//!    forearm), every configuration that the exact oracle (parry3d on the original shapes,
//!    `common::exact`) finds in collision is in collision for the polytope checker and for the
//!    sphere model (fitted before the objects were attached, the objects then getting spheres
//!    of their own). The objects must matter: some configurations are free for the arm alone
//!    but collide with the objects.
//! 2. The planners carry the object around an obstacle that only the object meets, and every
//!    point of the trajectories is free for the oracle (checked densely).
//! 3. GPU parity: the MBM Panda holding a box in its hand, CUDA verdicts against the CPU for
//!    both robot models (skips without a CUDA device or the MBM data;
//!    `GMP_ATTACHED_CONFIGS` / `GMP_ATTACHED_MOTIONS` size it, default 100000 / 10000).

mod common;

use std::time::Duration;

use common::exact::ExactRobot;
use gpu_motion_planner::collision::{
    Checker, CheckerOptions, ConfigBatch, CpuChecker, MotionBatch, RobotShapes,
};
use gpu_motion_planner::planners::{plan, PlanRequest, PlanResult, PlannerId};
use gpu_motion_planner::robot::geometry::Polytope;
use gpu_motion_planner::robot::spherize::{fit_robot, SphereFit};
use gpu_motion_planner::robot::{AttachedObject, PlanningGroup, RobotModel};
use gpu_motion_planner::scene::{Obstacle, Scene, Shape};
use nalgebra::{Isometry3, Point3, UnitQuaternion, Vector3};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// The bundled arm.
fn arm() -> RobotModel {
    let root = common::root();
    RobotModel::from_urdf_file(
        &root.join("urdf/gmp_arm.urdf"),
        Some(&root.join("urdf/gmp_arm.srdf")),
        &Default::default(),
    )
    .expect("bundled arm loads")
}

/// A 30 cm bar (4 cm square) held by the tool flange along the tool's z axis, from the
/// flange's face outwards.
fn bar() -> AttachedObject {
    AttachedObject {
        id: "bar".into(),
        link: "tool0".into(),
        shape: Shape::Box {
            half_extents: Vector3::new(0.02, 0.02, 0.15),
        },
        pose: Isometry3::translation(0.0, 0.0, 0.15),
        touch_links: vec!["flange_link".into()],
    }
}

/// An irregular convex lump of eight points (about 8 x 8 x 14 cm) on the side of the forearm,
/// clear of it (the forearm is 7 cm square about its z axis, the lump starts at y 0.08),
/// turned a little about the forearm's axis.
fn lump() -> AttachedObject {
    let pts = [
        Point3::new(-0.04, 0.00, -0.07),
        Point3::new(0.04, 0.00, -0.06),
        Point3::new(-0.03, 0.08, -0.07),
        Point3::new(0.04, 0.07, -0.05),
        Point3::new(-0.04, 0.01, 0.07),
        Point3::new(0.03, 0.00, 0.06),
        Point3::new(-0.02, 0.06, 0.07),
        Point3::new(0.04, 0.08, 0.05),
    ];
    AttachedObject {
        id: "lump".into(),
        link: "forearm_link".into(),
        shape: Shape::ConvexMesh {
            polytope: Polytope::from_points(&pts).expect("convex lump"),
        },
        pose: Isometry3::from_parts(
            Vector3::new(0.0, 0.08, 0.2).into(),
            UnitQuaternion::from_euler_angles(0.0, 0.0, 0.1),
        ),
        touch_links: Vec::new(),
    }
}

fn checker(
    robot: &RobotModel,
    group: &PlanningGroup,
    scene: &Scene,
    shapes: RobotShapes,
) -> CpuChecker {
    let opts = CheckerOptions {
        shapes,
        ..Default::default()
    };
    CpuChecker::new(robot, group, &robot.tree.neutral_state(), scene, opts).expect("checker")
}

/// Counts of one conservativeness run.
#[derive(Debug, Default)]
struct Counts {
    total: usize,
    /// In collision for the oracle (robot with the objects).
    oracle: usize,
    /// In collision for our checker (robot with the objects).
    ours: usize,
    /// Free for the polytope checker on the arm alone, in collision for the oracle with the
    /// objects.
    object_only: usize,
    /// ... of those, the first pair the oracle finds is an object against the arm.
    object_self: usize,
    /// ... of those, the oracle's pair names the bar / the lump.
    object_only_bar: usize,
    object_only_lump: usize,
}

/// Checks `batch` in `scene` with the checker of the robot with the objects (`ours`, whose
/// verdicts must cover the oracle's) and the polytope checker of the arm alone, and tallies
/// into `c`. Returns the configurations free for the arm alone that collide with the objects.
#[allow(clippy::too_many_arguments)]
fn tally(
    c: &mut Counts,
    shapes: RobotShapes,
    exact: &ExactRobot,
    obstacles: &common::exact::ExactScene,
    group: &PlanningGroup,
    base: &[f64],
    ours: &CpuChecker,
    alone: &CpuChecker,
    batch: &ConfigBatch,
) -> Vec<Vec<f64>> {
    let v_ours = ours.check_configs(batch).expect("check");
    let v_alone = alone.check_configs(batch).expect("check");
    let mut object_only = Vec::new();
    for (i, q) in batch.rows().enumerate() {
        c.total += 1;
        c.ours += usize::from(!v_ours[i]);
        let Some(what) = exact.collides(obstacles, &group.full_state(base, q)) else {
            continue;
        };
        c.oracle += 1;
        assert!(
            !v_ours[i],
            "{shapes:?}: configuration {q:?}: {what} collide under the exact shapes but the \
             checker says free"
        );
        if v_alone[i] {
            c.object_only += 1;
            c.object_self += usize::from(!what.contains("obstacle"));
            c.object_only_bar += usize::from(what.contains("'bar'"));
            c.object_only_lump += usize::from(what.contains("'lump'"));
            object_only.push(q.to_vec());
        }
    }
    object_only
}

#[test]
fn attached_objects_are_checked_conservatively() {
    let mut plain = arm();
    // Fit first, then attach: the objects get spheres of their own.
    plain.spherized = Some(fit_robot(&plain, &SphereFit::default()));
    let held = plain
        .with_attached(&[bar(), lump()])
        .expect("objects attach");
    let bar_link = held.tree.link("bar").expect("bar link");
    let lump_link = held.tree.link("lump").expect("lump link");
    let spheres = held.spherized.as_ref().expect("sphere model");
    let plain_spheres = plain.spherized.as_ref().expect("sphere model").len();
    let on = |l: usize| spheres.iter().filter(|(k, _)| *k == l).count();
    assert!(
        on(bar_link) > 0 && on(lump_link) > 0,
        "the objects have spheres"
    );
    assert_eq!(spheres.len(), plain_spheres + on(bar_link) + on(lump_link));
    // The spheres of an object's link cover its polytope (every vertex; both in the link frame).
    for body in held
        .bodies
        .iter()
        .filter(|b| b.link >= plain.tree.links.len())
    {
        for v in &body.polytope.vertices {
            let covered = spheres
                .iter()
                .filter(|(l, _)| *l == body.link)
                .any(|(_, s)| (s.center - v).norm() <= s.radius + 1e-9);
            assert!(
                covered,
                "vertex {v:?} of '{}' outside its spheres",
                held.tree.links[body.link].name
            );
        }
    }

    let plain_group = plain.group("arm").expect("group");
    let group = held.group("arm").expect("group");
    assert_eq!(group.space, plain_group.space, "the objects add no joint");
    let exact = ExactRobot::new(&held);
    // The checkers' base state (see `checker`).
    let base = held.tree.neutral_state();
    let (scenes, per_scene, near_per_anchor, near_scale) = (40, 200, 20, 0.05);
    let space = &group.space;
    for shapes in [RobotShapes::Polytopes, RobotShapes::Spheres] {
        let mut rng = ChaCha8Rng::seed_from_u64(0xa77a_c4ed);
        let (mut c, mut near) = (Counts::default(), Counts::default());
        for _ in 0..scenes {
            let scene = common::random_scene(&mut rng, 6);
            let obstacles = ExactRobot::scene(&scene);
            let ours = checker(&held, &group, &scene, shapes);
            // "Free for the arm alone" is the polytope model's verdict in both runs: the fitted
            // spheres of the bundled arm touch each other in most configurations
            // (results/spheres/README.md: 340 of 1000 free in an empty scene).
            let alone = checker(&plain, &plain_group, &scene, RobotShapes::Polytopes);
            let mut batch = ConfigBatch::new(space.dof());
            for _ in 0..per_scene {
                let q: Vec<f64> = (0..space.dof())
                    .map(|j| rng.random_range(space.lower[j]..=space.upper[j]))
                    .collect();
                batch.push(&q).expect("row");
            }
            let anchors = tally(
                &mut c, shapes, &exact, &obstacles, &group, &base, &ours, &alone, &batch,
            );
            // Near contact with the objects: small perturbations of the configurations where
            // only the objects collide.
            let mut batch = ConfigBatch::new(space.dof());
            for a in &anchors {
                for _ in 0..near_per_anchor {
                    let q: Vec<f64> = (0..space.dof())
                        .map(|j| {
                            (a[j] + rng.random_range(-near_scale..near_scale))
                                .clamp(space.lower[j], space.upper[j])
                        })
                        .collect();
                    batch.push(&q).expect("row");
                }
            }
            tally(
                &mut near, shapes, &exact, &obstacles, &group, &base, &ours, &alone, &batch,
            );
        }
        for (what, c) in [("uniform", &c), ("near the objects' contacts", &near)] {
            eprintln!(
                "attached conservative ({shapes:?}, {what}): {} configurations, oracle \
                 collisions {}, ours {}, free for the arm alone but colliding with the objects \
                 {} (bar {}, lump {}; {} object against the arm)",
                c.total,
                c.oracle,
                c.ours,
                c.object_only,
                c.object_only_bar,
                c.object_only_lump,
                c.object_self
            );
            // Each oracle collision was also ours (asserted per configuration in `tally`).
            assert!(c.ours >= c.oracle);
            assert!(
                c.ours < c.total,
                "{shapes:?}, {what}: {} of {} in collision: the model covers everything",
                c.ours,
                c.total
            );
        }
        assert!(c.oracle > 500, "the scenes must produce collisions");
        assert!(
            c.object_only >= 100,
            "the objects must matter: {} configurations free for the arm alone collide with them",
            c.object_only
        );
        assert!(
            c.object_only_bar > 0 && c.object_only_lump > 0,
            "both objects must matter: {c:?}"
        );
        assert!(
            c.object_self > 0,
            "some objects must hit the arm itself (self collision): {c:?}"
        );
        assert!(
            c.total - c.ours >= c.total / 10,
            "{shapes:?}: only {} of {} free",
            c.total - c.ours,
            c.total
        );
        // The perturbations cross the objects' contact boundary both ways.
        assert!(
            near.total == near_per_anchor * c.object_only
                && near.object_only > near.total / 10
                && near.oracle < near.total,
            "{shapes:?}: near contact {near:?}"
        );
    }
}

/// Start and goal of the carrying test: the forearm horizontal, the bar pointing straight out
/// from the tool, the shoulder turning from -0.6 to 0.6 rad.
const START: [f64; 6] = [-0.6, 0.0, 1.57, 0.0, 0.0, 0.0];
const GOAL: [f64; 6] = [0.6, 0.0, 1.57, 0.0, 0.0, 0.0];

/// A thin pole (2 cm across, 20 cm tall) standing where the middle of the bar passes when
/// the shoulder turns through 0 with the arm as at [`START`]: the arm itself stays 14 cm
/// short of it.
fn pole_scene(held: &RobotModel, group: &PlanningGroup) -> Scene {
    let mut mid = START;
    mid[0] = 0.0;
    let state = group.full_state(&held.tree.neutral_state(), &mid);
    let poses = held.attached_poses(&state).expect("poses");
    let centre = poses[0].1.translation.vector;
    let mut scene = Scene::new("world");
    scene
        .add(Obstacle {
            id: "pole".into(),
            shape: Shape::Cylinder {
                radius: 0.01,
                half_length: 0.1,
            },
            pose: Isometry3::translation(centre.x, centre.y, centre.z),
        })
        .expect("pole");
    scene
}

/// Joint-space step of the dense re-check (Euclidean norm over the six joints). No point of the
/// arm or the bar is farther than 1.6 m from a joint axis, so a step moves no point more than
/// 1.6 * sqrt(6) * 0.001 = 3.9 mm (the pole is 20 mm across, the bar 40 mm).
const DENSE_STEP: f64 = 0.001;

/// Every point along `points` (the joint space's straight motions between consecutive ones,
/// continuous joints the short way round, as the checker and the trajectory interpolate them)
/// at [`DENSE_STEP`]: how many configurations were checked, and the first one the oracle finds
/// in collision, with what.
fn dense_oracle(
    exact: &ExactRobot,
    obstacles: &common::exact::ExactScene,
    group: &PlanningGroup,
    base: &[f64],
    points: &[Vec<f64>],
) -> (usize, Option<(Vec<f64>, String)>) {
    let space = &group.space;
    let mut q = vec![0.0; space.dof()];
    let mut checked = 0;
    for w in points.windows(2) {
        let (a, b) = (&w[0], &w[1]);
        let n = ((space.distance(a, b) / DENSE_STEP).ceil() as usize).max(1);
        for k in 0..=n {
            space.interpolate(a, b, k as f64 / n as f64, &mut q);
            checked += 1;
            if let Some(what) = exact.collides(obstacles, &group.full_state(base, &q)) {
                return (checked, Some((q, what)));
            }
        }
    }
    (checked, None)
}

fn carry_request(planner: PlannerId) -> PlanRequest {
    let mut r = PlanRequest::new(START.to_vec(), GOAL.to_vec(), planner);
    r.seed = 17;
    r.resolution = 0.02;
    r.time_limit = Duration::from_secs(30);
    r
}

#[test]
fn planners_carry_the_object_around_obstacles() {
    let plain = arm();
    let held = plain.with_attached(&[bar()]).expect("bar attaches");
    let group = held.group("arm").expect("group");
    let plain_group = plain.group("arm").expect("group");
    let scene = pole_scene(&held, &group);
    let base = held.tree.neutral_state();
    let with_bar = checker(&held, &group, &scene, RobotShapes::Polytopes);
    let alone = checker(&plain, &plain_group, &scene, RobotShapes::Polytopes);

    // The set-up: start and goal free with the bar, the straight motion blocked by the pole
    // for the bar only.
    for q in [&START, &GOAL] {
        assert!(with_bar.check_config(q).expect("check"), "{q:?} free");
    }
    let mut straight = MotionBatch::new(6);
    straight.push(&START, &GOAL).expect("motion");
    assert_eq!(
        alone.check_motions(&straight, 0.02).expect("check"),
        vec![true],
        "the arm alone passes the pole"
    );
    assert_eq!(
        with_bar.check_motions(&straight, 0.02).expect("check"),
        vec![false],
        "the bar hits the pole"
    );
    let exact = ExactRobot::new(&held);
    let obstacles = ExactRobot::scene(&scene);
    let (_, hit) = dense_oracle(
        &exact,
        &obstacles,
        &group,
        &base,
        &[START.to_vec(), GOAL.to_vec()],
    );
    let (_, what) = hit.expect("the oracle finds the bar in the pole on the straight motion");
    assert!(what.contains("'bar'"), "{what}");
    let exact_alone = ExactRobot::new(&plain);
    let (_, hit) = dense_oracle(
        &exact_alone,
        &obstacles,
        &plain_group,
        &plain.tree.neutral_state(),
        &[START.to_vec(), GOAL.to_vec()],
    );
    assert!(hit.is_none(), "the arm alone passes: {hit:?}");

    for planner in [PlannerId::RrtConnect, PlannerId::Prm] {
        let req = carry_request(planner);
        let res: PlanResult = plan(&with_bar, &req).unwrap_or_else(|e| panic!("{planner}: {e}"));
        assert_eq!(res.path.first(), Some(&START.to_vec()));
        assert_eq!(res.path.last(), Some(&GOAL.to_vec()));
        assert!(
            res.path.len() > 2,
            "{planner}: the straight motion is blocked, the path needs a detour"
        );
        let traj: Vec<Vec<f64>> = res.trajectory.positions();
        assert_eq!(traj.first(), Some(&START.to_vec()));
        let last = traj.last().expect("trajectory points");
        assert!(common::same_config(&group.space, last, &GOAL), "{last:?}");
        // Dense oracle re-check of every trajectory segment and of the path itself.
        let (n_traj, hit) = dense_oracle(&exact, &obstacles, &group, &base, &traj);
        assert!(
            hit.is_none(),
            "{planner}: trajectory point in collision: {hit:?}"
        );
        let (n_path, hit) = dense_oracle(&exact, &obstacles, &group, &base, &res.path);
        assert!(hit.is_none(), "{planner}: path point in collision: {hit:?}");
        // Same seed, same path.
        let again = plan(&with_bar, &req).unwrap_or_else(|e| panic!("{planner} again: {e}"));
        assert_eq!(again.raw_path, res.raw_path, "{planner}: raw path");
        assert_eq!(again.path, res.path, "{planner}: path");
        assert_eq!(again.trajectory, res.trajectory, "{planner}: trajectory");
        eprintln!(
            "attached carry ({planner}): {} waypoints, length {:.3} (straight {:.3}), {} \
             trajectory points, {} + {} configurations re-checked by the oracle, all free",
            res.path.len(),
            res.stats.path_length_after,
            group.space.distance(&START, &GOAL),
            traj.len(),
            n_traj,
            n_path
        );
    }
}

/// Random configurations: uniform in the limits (40 %) or perturbations of the anchors (the
/// problem's start and goal) at a few scales, clamped into the limits, so that many land near
/// contact.
struct Sampler<'a> {
    lower: &'a [f64],
    upper: &'a [f64],
    anchors: Vec<Vec<f64>>,
    rng: ChaCha8Rng,
}

impl Sampler<'_> {
    fn uniform(&mut self) -> Vec<f64> {
        (0..self.lower.len())
            .map(|j| self.rng.random_range(self.lower[j]..=self.upper[j]))
            .collect()
    }

    fn perturb(&mut self, base: &[f64], scale: f64) -> Vec<f64> {
        (0..base.len())
            .map(|j| {
                let n = self.rng.random_range(-1.0..1.0) + self.rng.random_range(-1.0..1.0);
                (base[j] + n * scale).clamp(self.lower[j], self.upper[j])
            })
            .collect()
    }

    fn config(&mut self) -> Vec<f64> {
        if self.rng.random_bool(0.4) {
            return self.uniform();
        }
        let a = self.anchors[self.rng.random_range(0..self.anchors.len())].clone();
        let scale = [0.02, 0.1, 0.3, 0.8][self.rng.random_range(0..4)];
        self.perturb(&a, scale)
    }
}

#[test]
fn gpu_matches_cpu_with_attached_objects() {
    use gpu_motion_planner::gpu::{self, CudaChecker, KernelVariant, MotionKernel};
    let test = "gpu_matches_cpu_with_attached_objects";
    if !common::gpu_or_skip(test) {
        return;
    }
    let Some(data) = common::mbm_or_skip(test) else {
        return;
    };
    let n_cfg = common::env_usize("GMP_ATTACHED_CONFIGS", 100_000);
    let n_mot = common::env_usize("GMP_ATTACHED_MOTIONS", 10_000);
    let r = gpu_motion_planner::mbm::load_robot(&data, "panda").expect("panda");
    let problems = gpu_motion_planner::mbm::load_problems(&data, "panda").expect("problems");
    let p = problems
        .iter()
        .find(|p| p.scene_name == "bookshelf_small")
        .expect("a bookshelf_small problem");
    let boxed = AttachedObject {
        id: "held_box".into(),
        link: "panda_hand".into(),
        shape: Shape::Box {
            half_extents: Vector3::new(0.03, 0.03, 0.05),
        },
        pose: Isometry3::translation(0.0, 0.0, 0.1),
        touch_links: vec!["panda_leftfinger".into(), "panda_rightfinger".into()],
    };
    let held = r.model.with_attached(&[boxed]).expect("box attaches");
    let group = held.group(&p.group_name).expect("group");
    assert_eq!(group.space, r.group.space);
    let base = r.start_full_state(p);
    let (a, b) = r.start_goal(p).expect("start and goal");
    let mut s = Sampler {
        lower: &group.space.lower,
        upper: &group.space.upper,
        anchors: vec![a, b],
        rng: ChaCha8Rng::seed_from_u64(0xa77a_0001),
    };
    let dof = group.space.dof();
    let mut configs = ConfigBatch::with_capacity(dof, n_cfg);
    for _ in 0..n_cfg {
        configs.push(&s.config()).expect("row");
    }
    let mut motions = MotionBatch::new(dof);
    for _ in 0..n_mot {
        let from = s.config();
        let to = if s.rng.random_bool(0.5) {
            s.uniform()
        } else {
            s.perturb(&from, 0.4)
        };
        motions.push(&from, &to).expect("motion");
    }
    let resolution = 0.03;
    let mut diffs = 0;
    let mut examples = Vec::new();
    let mut summary = Vec::new();
    for shapes in [RobotShapes::Polytopes, RobotShapes::Spheres] {
        let opts = CheckerOptions {
            shapes,
            ..Default::default()
        };
        let cpu = CpuChecker::new(&held, &group, &base, &p.scene, opts).expect("cpu checker");
        let alone = CpuChecker::new(&r.model, &r.group, &base, &p.scene, opts).expect("cpu");
        let vc = cpu.check_configs(&configs).expect("cpu configs");
        let mc = cpu
            .check_motions(&motions, resolution)
            .expect("cpu motions");
        let va = alone.check_configs(&configs).expect("cpu configs (no box)");
        let by_box = vc.iter().zip(&va).filter(|(h, a)| !**h && **a).count();
        assert!(
            by_box > 0,
            "{shapes:?}: the box must put some configurations in collision"
        );
        assert!(
            vc.iter().zip(&va).all(|(h, a)| !*h || *a),
            "{shapes:?}: free with the box but not without it"
        );
        let mut cuda =
            CudaChecker::new(&held, &group, &base, &p.scene, opts).expect("cuda checker");
        let mut variants = vec![KernelVariant::Generic];
        let generic_only = std::env::var(gpu::KERNEL_ENV).is_ok_and(|v| v.trim() == "generic");
        if !generic_only {
            assert!(
                cuda.specialisation().is_some(),
                "{shapes:?}: the specialised kernels are missing for the robot with the box: {}",
                cuda.specialisation_unavailable().unwrap_or("?")
            );
            variants.push(KernelVariant::Specialised);
        }
        for v in variants {
            cuda.set_kernel_variant(v).expect("variant");
            let vg = cuda.check_configs(&configs).expect("cuda configs");
            let dc: Vec<usize> = (0..vc.len()).filter(|&i| vc[i] != vg[i]).collect();
            diffs += dc.len();
            for &i in dc.iter().take(3) {
                examples.push(format!(
                    "{shapes:?} {}: config {:?} cpu {} cuda {}",
                    v.name(),
                    configs.row(i),
                    vc[i],
                    vg[i]
                ));
            }
            let mut line = format!("{shapes:?}/{}: config diffs {}", v.name(), dc.len());
            for kernel in MotionKernel::ALL {
                cuda.set_motion_kernel(kernel);
                let mg = cuda
                    .check_motions(&motions, resolution)
                    .expect("cuda motions");
                let dm: Vec<usize> = (0..mc.len()).filter(|&i| mc[i] != mg[i]).collect();
                diffs += dm.len();
                for &i in dm.iter().take(3) {
                    examples.push(format!(
                        "{shapes:?} {} {}: motion {:?} -> {:?} cpu {} cuda {}",
                        v.name(),
                        kernel.name(),
                        motions.from.row(i),
                        motions.to.row(i),
                        mc[i],
                        mg[i]
                    ));
                }
                line += &format!(", {} motion diffs {}", kernel.name(), dm.len());
            }
            cuda.set_motion_kernel(MotionKernel::DEFAULT);
            summary.push(line);
        }
        summary.push(format!(
            "{shapes:?}: free configs {:.1}%, free motions {:.1}%, in collision only because of the box {}",
            100.0 * vc.iter().filter(|v| **v).count() as f64 / vc.len().max(1) as f64,
            100.0 * mc.iter().filter(|v| **v).count() as f64 / mc.len().max(1) as f64,
            by_box
        ));
    }
    eprintln!(
        "attached gpu parity: panda + box in {}#{}, {n_cfg} configs, {n_mot} motions: {} differences ({})",
        p.scene_name,
        p.index,
        diffs,
        summary.join("; ")
    );
    assert_eq!(diffs, 0, "CUDA verdicts differ from the CPU: {examples:#?}");
}
