//! Cartesian paths on the bundled arm in the bundled scene: straight lines of the tool, the
//! path ending before an obstacle or out of reach, the timing through the steps, and bad
//! input named.

mod common;

use gpu_motion_planner::collision::{Checker, CpuChecker, MotionBatch};
use gpu_motion_planner::planners::cartesian::{
    interpolate_pose, plan_cartesian, CartesianOptions, CartesianPath, CartesianStop,
};
use gpu_motion_planner::planners::PlanError;
use gpu_motion_planner::robot::ik::{IkOptions, IkSolver, PoseTarget};
use nalgebra::{Isometry3, Translation3, Vector3};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use common::bundled::{bundled, Bundled};

impl Bundled {
    fn solver(&self) -> IkSolver<'_> {
        IkSolver::new(
            &self.robot,
            &self.group,
            &self.base,
            PoseTarget::pose(self.tip, Isometry3::identity()),
        )
        .expect("solver")
    }

    /// A collision-free configuration with the tool at `position`, by position-only inverse
    /// kinematics.
    fn config_at(&self, checker: &CpuChecker, position: Vector3<f64>) -> Vec<f64> {
        let solver = IkSolver::new(
            &self.robot,
            &self.group,
            &self.base,
            PoseTarget::position(self.tip, position),
        )
        .expect("solver");
        let found = solver.solve(None, &IkOptions::default()).expect("ik runs");
        found
            .into_iter()
            .map(|s| s.config)
            .find(|q| checker.check_config(q).expect("check"))
            .expect("a free configuration at the position")
    }
}

/// The path's tool positions and orientations against the polyline through the waypoints
/// (from the start pose), checked on every straight joint motion between trajectory points
/// at 20 points each: (largest distance from the polyline, largest angle from the start's
/// orientation). Also re-checks every motion with a fresh checker at 0.002.
fn follow(
    b: &Bundled,
    start: &[f64],
    waypoints: &[Isometry3<f64>],
    out: &CartesianPath,
) -> (f64, f64) {
    let s = &b.group.space;
    let mut line = vec![b.tool(start)];
    line.extend_from_slice(waypoints);
    let pts: Vec<Vec<f64>> = out.trajectory.positions();
    assert!(s.distance(&pts[0], start) < 1e-12, "starts elsewhere");
    let mut worst = (0.0f64, 0.0f64);
    let mut q = vec![0.0; s.dof()];
    for w in pts.windows(2) {
        for i in 0..=20 {
            s.interpolate(&w[0], &w[1], i as f64 / 20.0, &mut q);
            let p = b.tool(&q);
            let d = line
                .windows(2)
                .map(|l| {
                    let (a, c) = (l[0].translation.vector, l[1].translation.vector);
                    let ab = c - a;
                    let t = if ab.norm_squared() > 0.0 {
                        ((p.translation.vector - a).dot(&ab) / ab.norm_squared()).clamp(0.0, 1.0)
                    } else {
                        0.0
                    };
                    (p.translation.vector - (a + ab * t)).norm()
                })
                .fold(f64::INFINITY, f64::min);
            worst.0 = worst.0.max(d);
            worst.1 = worst.1.max(p.rotation.angle_to(&line[0].rotation));
        }
        assert!(s.within_limits(&w[1]), "outside the limits");
    }
    let fresh = b.checker();
    let mut motions = MotionBatch::new(s.dof());
    for w in pts.windows(2) {
        let mut a = w[0].clone();
        let mut c = w[1].clone();
        // Trajectory positions of continuous joints are unwrapped; the checker takes them
        // wrapped.
        for j in 0..s.dof() {
            if s.continuous[j] {
                a[j] = gpu_motion_planner::robot::wrap_angle(a[j]);
                c[j] = gpu_motion_planner::robot::wrap_angle(c[j]);
            }
        }
        motions.push(&a, &c).expect("motion");
    }
    if !motions.from.is_empty() {
        let ok = fresh.check_motions(&motions, 0.002).expect("check");
        assert!(ok.iter().all(|&v| v), "a trajectory motion collides");
    }
    // Timing: velocities and accelerations within the limits, time increasing.
    for p in &out.trajectory.points {
        for j in 0..s.dof() {
            assert!(p.velocities[j].abs() <= s.max_velocity[j] * (1.0 + 1e-9));
            assert!(p.accelerations[j].abs() <= s.max_acceleration[j] * (1.0 + 1e-9));
        }
    }
    for w in out.trajectory.points.windows(2) {
        assert!(w[1].time_from_start > w[0].time_from_start);
    }
    worst
}

/// A pose `dz` below (negative: above) the tool's pose at `q`, same orientation.
fn shifted(b: &Bundled, q: &[f64], d: Vector3<f64>) -> Isometry3<f64> {
    Translation3::from(d) * b.tool(q)
}

#[test]
fn a_straight_line_down_is_followed_whole_and_timed_through() {
    let b = bundled();
    let checker = b.checker();
    let start = b.config_at(&checker, Vector3::new(0.3, -0.25, 0.35));
    let goal = shifted(&b, &start, Vector3::new(0.0, 0.0, -0.15));
    let mut solver = b.solver();
    let opts = CartesianOptions::default();
    let out = plan_cartesian(&checker, &mut solver, &start, &[goal], &opts).expect("planned");
    assert_eq!(out.fraction, 1.0, "stopped: {:?}", out.stop);
    assert!(out.stop.is_none());
    assert_eq!(out.steps, 15, "15 steps of 1 cm");
    assert_eq!(out.steps_reached, 15);
    assert!(out.path.len() >= 16);
    // Ends at the goal pose within the solver's tolerances.
    let last = b.tool(&out.path[out.path.len() - 1]);
    assert!((last.translation.vector - goal.translation.vector).norm() <= 1e-4);
    assert!(last.rotation.angle_to(&goal.rotation) <= 1e-3);
    // Every step's tool pose is on the line; between them within the allowed deviation.
    let (dist, angle) = follow(&b, &start, &[goal], &out);
    assert!(dist <= opts.max_deviation, "{dist} m off the line");
    assert!(
        angle <= opts.max_rotation_deviation + 1e-3,
        "{angle} rad off"
    );
    assert!(out.stats.max_deviation <= opts.max_deviation);
    // Moving through the steps: the points between the ends are not at rest.
    let pts = &out.trajectory.points;
    assert!(!out.stops_at_steps);
    assert!(pts[1..pts.len() - 1]
        .iter()
        .all(|p| p.velocities.iter().any(|v| v.abs() > 1e-6)));
    // Deterministic.
    let mut solver2 = b.solver();
    let again = plan_cartesian(&checker, &mut solver2, &start, &[goal], &opts).expect("again");
    assert_eq!(again.path, out.path);
    assert_eq!(again.trajectory, out.trajectory);
}

#[test]
fn several_waypoints_with_a_turn_of_the_tool_pass_through_each() {
    let b = bundled();
    let checker = b.checker();
    let start = b.config_at(&checker, Vector3::new(0.3, -0.25, 0.35));
    let p0 = b.tool(&start);
    let w1 = Translation3::new(0.0, 0.0, -0.1) * p0;
    let w2 = Translation3::new(-0.08, 0.0, 0.0) * w1;
    // Turned 0.3 rad about the tool's own z axis, in place.
    let turn = nalgebra::UnitQuaternion::from_axis_angle(&Vector3::z_axis(), 0.3);
    let w3 = Isometry3::from_parts(w2.translation, w2.rotation * turn);
    let waypoints = [w1, w2, w3];
    let mut solver = b.solver();
    let opts = CartesianOptions::default();
    let out = plan_cartesian(&checker, &mut solver, &start, &waypoints, &opts).expect("planned");
    assert_eq!(out.fraction, 1.0, "stopped: {:?}", out.stop);
    // 10 + 8 steps of translation, then 6 of rotation (0.3 / 0.05).
    assert_eq!(out.steps, 24);
    for (i, w) in waypoints.iter().enumerate() {
        let near = out.path.iter().any(|q| {
            let p = b.tool(q);
            (p.translation.vector - w.translation.vector).norm() <= 1e-4
                && p.rotation.angle_to(&w.rotation) <= 1e-3
        });
        assert!(near, "waypoint {i} not passed");
    }
    // Positions stay on the polyline (the turn is in place).
    let (dist, _) = follow(&b, &start, &waypoints, &out);
    assert!(dist <= opts.max_deviation, "{dist} m off the polyline");
}

#[test]
fn a_line_into_the_shelf_board_stops_before_it() {
    let b = bundled();
    let checker = b.checker();
    // Above the board (top at z 0.465), straight down through it.
    let start = b.config_at(&checker, Vector3::new(0.5, -0.1, 0.62));
    let goal = shifted(&b, &start, Vector3::new(0.0, 0.0, -0.3));
    let mut solver = b.solver();
    let opts = CartesianOptions::default();
    let out = plan_cartesian(&checker, &mut solver, &start, &[goal], &opts).expect("planned");
    assert!(
        out.fraction > 0.0 && out.fraction < 1.0,
        "fraction {}",
        out.fraction
    );
    assert!(
        matches!(out.stop, Some(CartesianStop::Collision { .. })),
        "{:?}",
        out.stop
    );
    let Some(CartesianStop::Collision { step }) = out.stop else {
        unreachable!()
    };
    assert_eq!(
        step, out.steps_reached,
        "stops at the first step not reached"
    );
    // The tool ends above the board, and the path that is returned is free.
    let last = b.tool(&out.path[out.path.len() - 1]);
    assert!(
        last.translation.z > 0.465,
        "ends at z {}",
        last.translation.z
    );
    follow(&b, &start, &[goal], &out);
    // The next step's motion really collides.
    let mut next_solver = b.solver();
    let next = interpolate_pose(&b.tool(&start), &goal, (step + 1) as f64 / out.steps as f64);
    next_solver.set_target_pose(next).expect("finite");
    if let Some(sol) = next_solver
        .solve_from(&out.path[out.path.len() - 1], 200)
        .expect("ik")
    {
        let mut m = MotionBatch::new(b.group.space.dof());
        m.push(&out.path[out.path.len() - 1], &sol.config)
            .expect("motion");
        assert!(!checker.check_motions(&m, opts.resolution).expect("check")[0]);
    }
}

#[test]
fn a_line_out_of_reach_stops_where_the_arm_ends() {
    let b = bundled();
    let checker = b.checker();
    let start = b.config_at(&checker, Vector3::new(0.3, -0.25, 0.35));
    // Two metres sideways: far beyond the arm's reach.
    let goal = shifted(&b, &start, Vector3::new(0.0, -2.0, 0.0));
    let mut solver = b.solver();
    let out = plan_cartesian(
        &checker,
        &mut solver,
        &start,
        &[goal],
        &CartesianOptions::default(),
    )
    .expect("planned");
    assert!(out.fraction < 1.0);
    assert!(
        matches!(
            out.stop,
            Some(
                CartesianStop::NoIkSolution { .. }
                    | CartesianStop::Deviation { .. }
                    | CartesianStop::Collision { .. }
            )
        ),
        "{:?}",
        out.stop
    );
    assert_eq!(out.steps, 200);
    assert!(out.steps_reached < 200);
    follow(&b, &start, &[goal], &out);
}

#[test]
fn the_relative_jump_threshold_cuts_the_path() {
    let b = bundled();
    let checker = b.checker();
    let start = b.config_at(&checker, Vector3::new(0.3, -0.25, 0.35));
    let goal = shifted(&b, &start, Vector3::new(0.0, 0.0, -0.15));
    // A threshold below 1 always cuts: some step is at least as long as the mean.
    let opts = CartesianOptions {
        jump_threshold: 0.5,
        ..CartesianOptions::default()
    };
    let mut solver = b.solver();
    let out = plan_cartesian(&checker, &mut solver, &start, &[goal], &opts).expect("planned");
    let Some(CartesianStop::Jump { step, length, mean }) = out.stop else {
        panic!("expected a jump, got {:?}", out.stop)
    };
    assert!(length > 0.5 * mean);
    assert_eq!(out.steps_reached, step);
    assert!(out.fraction < 1.0);
    // The ordinary threshold of MoveIt's examples (0 here means off) keeps the whole line.
    let opts = CartesianOptions {
        jump_threshold: 5.0,
        ..CartesianOptions::default()
    };
    let mut solver = b.solver();
    let out = plan_cartesian(&checker, &mut solver, &start, &[goal], &opts).expect("planned");
    assert_eq!(out.fraction, 1.0, "{:?}", out.stop);
}

#[test]
fn bad_input_is_named() {
    let b = bundled();
    let checker = b.checker();
    let start = b.config_at(&checker, Vector3::new(0.3, -0.25, 0.35));
    let goal = shifted(&b, &start, Vector3::new(0.0, 0.0, -0.1));
    let mut solver = b.solver();
    let err = |r: Result<CartesianPath, PlanError>| r.expect_err("refused").to_string();
    let e = err(plan_cartesian(
        &checker,
        &mut solver,
        &start,
        &[],
        &CartesianOptions::default(),
    ));
    assert!(e.contains("at least one waypoint"), "{e}");
    let nan = Isometry3::translation(f64::NAN, 0.0, 0.0);
    let e = err(plan_cartesian(
        &checker,
        &mut solver,
        &start,
        &[goal, nan],
        &CartesianOptions::default(),
    ));
    assert!(e.contains("waypoint 1"), "{e}");
    for (name, opts) in [
        (
            "max_step",
            CartesianOptions {
                max_step: 0.0,
                ..Default::default()
            },
        ),
        (
            "max_rotation_step",
            CartesianOptions {
                max_rotation_step: -1.0,
                ..Default::default()
            },
        ),
        (
            "max_deviation",
            CartesianOptions {
                max_deviation: f64::NAN,
                ..Default::default()
            },
        ),
        (
            "jump_threshold",
            CartesianOptions {
                jump_threshold: -1.0,
                ..Default::default()
            },
        ),
        (
            "vel_scale",
            CartesianOptions {
                vel_scale: 1.5,
                ..Default::default()
            },
        ),
        (
            "resolution",
            CartesianOptions {
                resolution: 0.0,
                ..Default::default()
            },
        ),
    ] {
        let e = err(plan_cartesian(
            &checker,
            &mut solver,
            &start,
            &[goal],
            &opts,
        ));
        assert!(e.contains(name), "{name}: {e}");
    }
    let e = err(plan_cartesian(
        &checker,
        &mut solver,
        &start[1..],
        &[goal],
        &CartesianOptions::default(),
    ));
    assert!(e.contains("invalid start"), "{e}");
    // A start in collision (the first colliding random configuration).
    let mut rng = ChaCha8Rng::seed_from_u64(5);
    let colliding = loop {
        let q = b.group.space.sample_uniform(&mut rng);
        if !checker.check_config(&q).expect("check") {
            break q;
        }
    };
    let e = err(plan_cartesian(
        &checker,
        &mut solver,
        &colliding,
        &[goal],
        &CartesianOptions::default(),
    ));
    assert!(e.contains("in collision"), "{e}");
}

/// One retreat: the problem index, the path, the fraction and the stop.
type Retreat = (usize, Vec<Vec<f64>>, f64, Option<CartesianStop>);

/// The retreats of [`panda_retreats_straight_up_from_mbm_grasps`] with the checker
/// `backend` builds: per valid table_pick grasp (problems 1 to 8), the problem index, the
/// path and the result; each path checked on the line and free on a fresh CPU check.
fn panda_retreats(data: &std::path::Path, backend: &str) -> Vec<Retreat> {
    use gpu_motion_planner::collision::{make_checker, CheckerOptions};
    let panda = gpu_motion_planner::mbm::load_robot(data, "panda").expect("panda loads");
    let (robot, group) = (&panda.model, &panda.group);
    let tip = gpu_motion_planner::robot::ik::default_tip_link(robot, group).expect("tip");
    let problems = gpu_motion_planner::mbm::load_problems_where(data, "panda", |scene, index| {
        scene == "table_pick" && index <= 8
    })
    .expect("problems load");
    let mut results = Vec::new();
    for prob in &problems {
        let base = panda.start_full_state(prob);
        let Ok((_, grasp)) = panda.start_goal(prob) else {
            continue;
        };
        let cpu = CpuChecker::new(robot, group, &base, &prob.scene, CheckerOptions::default())
            .expect("checker");
        if !cpu.check_config(&grasp).expect("check") {
            continue;
        }
        let checker = make_checker(
            backend,
            robot,
            group,
            &base,
            &prob.scene,
            CheckerOptions::default(),
        )
        .expect("checker");
        let hand = |q: &[f64]| robot.tree.forward_kinematics(&group.full_state(&base, q))[tip];
        let from = hand(&grasp);
        let up = Translation3::new(0.0, 0.0, 0.1) * from;
        let mut solver =
            IkSolver::new(robot, group, &base, PoseTarget::pose(tip, up)).expect("solver");
        let opts = CartesianOptions::default();
        let out = plan_cartesian(checker.as_ref(), &mut solver, &grasp, &[up], &opts)
            .unwrap_or_else(|e| panic!("table_pick {}: {e}", prob.index));
        // Every point on the vertical line through the grasp, the hand's orientation kept,
        // and every motion free on a fresh CPU check at a finer resolution.
        let pts: Vec<Vec<f64>> = out.trajectory.positions();
        for q in &pts {
            let p = hand(q);
            let off = ((p.translation.x - from.translation.x).powi(2)
                + (p.translation.y - from.translation.y).powi(2))
            .sqrt();
            assert!(off <= 1e-4, "table_pick {}: {off} m off", prob.index);
            assert!(p.rotation.angle_to(&from.rotation) <= 1e-3);
            assert!(group.space.within_limits(q));
        }
        let mut motions = MotionBatch::new(group.space.dof());
        for w in pts.windows(2) {
            motions.push(&w[0], &w[1]).expect("motion");
        }
        if !motions.from.is_empty() {
            let ok = cpu.check_motions(&motions, 0.005).expect("check");
            assert!(
                ok.iter().all(|&v| v),
                "table_pick {}: a motion collides",
                prob.index
            );
        }
        eprintln!(
            "{backend} table_pick {}: fraction {:.2} ({:?})",
            prob.index, out.fraction, out.stop
        );
        results.push((prob.index, out.path, out.fraction, out.stop));
    }
    results
}

#[test]
fn panda_retreats_straight_up_from_mbm_grasps() {
    let Some(data) = common::mbm_or_skip("panda_retreats_straight_up_from_mbm_grasps") else {
        return;
    };
    let results = panda_retreats(&data, "cpu");
    let whole = results.iter().filter(|r| r.2 == 1.0).count();
    assert!(results.len() >= 6, "only {} valid grasps", results.len());
    assert!(
        whole * 2 >= results.len(),
        "{whole} of {} retreats whole",
        results.len()
    );
}

#[test]
fn gpu_panda_retreats_match_the_cpu() {
    let Some(data) = common::mbm_or_skip("gpu_panda_retreats_match_the_cpu") else {
        return;
    };
    if gpu_motion_planner::gpu::device_count() == 0 {
        eprintln!("SKIP gpu_panda_retreats_match_the_cpu: no CUDA device");
        return;
    }
    let cpu = panda_retreats(&data, "cpu");
    let cuda = panda_retreats(&data, "cuda");
    assert_eq!(cpu.len(), cuda.len());
    for (a, b) in cpu.iter().zip(&cuda) {
        assert_eq!(a, b, "table_pick {}: the backends differ", a.0);
    }
}
