//! Planning under path constraints on the bundled arm in the bundled scene: the tool kept
//! pointing down (any heading) and inside a box all the way, checked independently (the
//! tool's tilt from straight down by forward kinematics, densely between the trajectory's
//! points, and every motion re-checked for collisions by a fresh checker at a finer
//! resolution); the same request without the constraint tips the tool over; the same seed
//! gives the same path; bad requests are named.

mod common;

use std::f64::consts::PI;
use std::time::Duration;

use gpu_motion_planner::collision::{Checker, CpuChecker, MotionBatch};
use gpu_motion_planner::planners::constrained::plan_constrained;
use gpu_motion_planner::planners::{plan, PlanError, PlanRequest, PlanResult, PlannerId};
use gpu_motion_planner::robot::constraint::{
    ConstraintSet, OrientationConstraint, OrientationParameterization, PathConstraints,
    PositionConstraint,
};
use gpu_motion_planner::robot::ik::{IkOptions, IkSolver, PoseTarget};
use gpu_motion_planner::robot::wrap_angle;
use nalgebra::{Isometry3, Translation3, UnitQuaternion, Vector3};

use common::bundled::{bundled, Bundled};

/// The tool pointing straight down (its z axis along the world's -z).
fn down() -> UnitQuaternion<f64> {
    UnitQuaternion::from_axis_angle(&Vector3::x_axis(), PI)
}

/// Tilt tolerance about the target's x and y axes (rad); any heading.
const TILT: f64 = 0.1;

fn upright(b: &Bundled) -> PathConstraints {
    PathConstraints {
        joint: Vec::new(),
        orientation: vec![OrientationConstraint {
            link: b.tip,
            orientation: down(),
            tolerance: Vector3::new(TILT, TILT, PI),
            parameterization: OrientationParameterization::RotationVector,
        }],
        position: Vec::new(),
    }
}

/// A collision-free configuration with the tool at `position`, pointing down.
fn down_at(b: &Bundled, checker: &CpuChecker, position: [f64; 3]) -> Vec<f64> {
    let [x, y, z] = position;
    let pose = Isometry3::from_parts(Translation3::new(x, y, z), down());
    let solver =
        IkSolver::new(&b.robot, &b.group, &b.base, PoseTarget::pose(b.tip, pose)).expect("solver");
    solver
        .solve(None, &IkOptions::default())
        .expect("ik runs")
        .into_iter()
        .map(|s| s.config)
        .find(|q| checker.check_config(q).expect("check"))
        .expect("a free configuration pointing down there")
}

/// The angle between the tool's z axis and the world's -z at `q`.
fn tilt(b: &Bundled, q: &[f64]) -> f64 {
    let z = b.tool(q).rotation * Vector3::z();
    z.angle(&-Vector3::z())
}

/// Every configuration 10 times denser than `resolution` along the trajectory's straight
/// motions: the largest tilt and the lowest tool height. Also: the motions re-checked
/// collision free by a fresh checker at a fifth of the resolution, the points within the
/// limits.
fn recheck(b: &Bundled, out: &PlanResult, resolution: f64) -> (f64, f64) {
    let s = &b.group.space;
    let pts: Vec<Vec<f64>> = out
        .trajectory
        .points
        .iter()
        .map(|p| (0..s.dof()).map(|j| wrap(s, j, p.positions[j])).collect())
        .collect();
    let (mut worst_tilt, mut lowest) = (0.0f64, f64::INFINITY);
    let mut q = vec![0.0; s.dof()];
    let mut motions = MotionBatch::new(s.dof());
    for w in pts.windows(2) {
        assert!(s.within_limits(&w[1]), "outside the limits");
        let n = 10 * s.segments(&w[0], &w[1], resolution);
        for i in 0..=n {
            s.interpolate(&w[0], &w[1], i as f64 / n as f64, &mut q);
            worst_tilt = worst_tilt.max(tilt(b, &q));
            lowest = lowest.min(b.tool(&q).translation.z);
        }
        motions.push(&w[0], &w[1]).expect("motion");
    }
    let fresh = b.checker();
    let ok = fresh
        .check_motions(&motions, resolution / 5.0)
        .expect("check");
    assert!(ok.iter().all(|&v| v), "a trajectory motion collides");
    (worst_tilt, lowest)
}

fn wrap(s: &gpu_motion_planner::robot::JointSpace, j: usize, v: f64) -> f64 {
    if s.continuous[j] {
        wrap_angle(v)
    } else {
        v
    }
}

/// Start and goal on either side of the robot, the tool down above the table.
fn problem(b: &Bundled, checker: &CpuChecker) -> PlanRequest {
    let start = down_at(b, checker, [0.3, -0.4, 0.3]);
    let goal = down_at(b, checker, [0.25, 0.4, 0.35]);
    let mut req = PlanRequest::new(start, goal, PlannerId::RrtConnect);
    req.time_limit = Duration::from_secs(20);
    req.seed = 7;
    req
}

/// The most the tool can tilt while the rotation vector's x and y components stay within
/// `TILT` (any z): the tilt of a rotation by (x, y, z) is at most |(x, y)|. With XYZ Euler
/// angles (a, b, c) the tilt is acos(cos a cos b), a little less.
fn tilt_bound() -> f64 {
    (2.0 * TILT * TILT).sqrt()
}

#[test]
fn the_tool_stays_pointing_down_all_the_way() {
    let b = bundled();
    let checker = b.checker();
    let req = problem(&b, &checker);
    let set = ConstraintSet::new(&b.robot, &b.group, &b.base, upright(&b)).expect("set");
    let out = plan_constrained(&checker, &req, &set).expect("planned");
    let s = &b.group.space;
    assert!(s.distance(&out.path[0], &req.start) < 1e-12);
    assert!(s.distance(out.path.last().expect("path"), &req.goal) < 1e-12);
    let (worst, _) = recheck(&b, &out, req.resolution);
    assert!(
        worst <= tilt_bound(),
        "the tool tilted {worst} rad (bound {})",
        tilt_bound()
    );
    // Shortcutting under the constraint shortened the path and kept it.
    assert!(out.stats.path_length_after <= out.stats.path_length_before);
    // Without the constraint, the same request tips the tool over on the way.
    let free = plan(&checker, &req).expect("planned without constraints");
    let (free_worst, _) = recheck(&b, &free, req.resolution);
    assert!(
        free_worst > 2.0 * tilt_bound(),
        "without the constraint the tool tilted only {free_worst} rad"
    );
    // The same seed, the same path.
    let again = plan_constrained(&checker, &req, &set).expect("planned again");
    assert_eq!(again.path, out.path);
    // The same constraint as XYZ Euler angles (MoveIt's default) holds the same way.
    let mut euler = upright(&b);
    euler.orientation[0].parameterization = OrientationParameterization::XyzEulerAngles;
    let set = ConstraintSet::new(&b.robot, &b.group, &b.base, euler).expect("set");
    let out = plan_constrained(&checker, &req, &set).expect("planned with Euler angles");
    let (worst, _) = recheck(&b, &out, req.resolution);
    let bound = (TILT.cos() * TILT.cos()).acos();
    assert!(
        worst <= bound,
        "Euler: the tool tilted {worst} rad (bound {bound})"
    );
}

/// RRT, RRT*, PRM and lazy PRM plan under the constraint as RRT-Connect does: from the start
/// to the goal, the tool pointing down all the way (checked densely), collision free by a
/// fresh checker, the same path for the same seed. RRT* (stopped by iterations, so that it is
/// deterministic) reports a cost that only falls over time, ending at its raw path's length.
#[test]
fn every_sampling_planner_keeps_the_tool_down() {
    let b = bundled();
    let checker = b.checker();
    let set = ConstraintSet::new(&b.robot, &b.group, &b.base, upright(&b)).expect("set");
    let s = &b.group.space;
    for planner in [
        PlannerId::Rrt,
        PlannerId::RrtStar,
        PlannerId::Prm,
        PlannerId::LazyPrm,
    ] {
        let mut req = problem(&b, &checker);
        req.planner = planner;
        if planner == PlannerId::RrtStar {
            req.max_iterations = Some(1000);
            req.time_limit = Duration::from_secs(60);
        }
        let out =
            plan_constrained(&checker, &req, &set).unwrap_or_else(|e| panic!("{planner}: {e}"));
        assert!(s.distance(&out.path[0], &req.start) < 1e-12, "{planner}");
        assert!(
            s.distance(out.path.last().expect("path"), &req.goal) < 1e-12,
            "{planner}"
        );
        let (worst, _) = recheck(&b, &out, req.resolution);
        assert!(
            worst <= tilt_bound(),
            "{planner}: the tool tilted {worst} rad (bound {})",
            tilt_bound()
        );
        let again = plan_constrained(&checker, &req, &set).expect("planned again");
        assert_eq!(again.path, out.path, "{planner}: not deterministic");
        if planner == PlannerId::RrtStar {
            let costs: Vec<f64> = out.stats.cost_over_time.iter().map(|c| c.1).collect();
            assert!(costs.len() >= 2, "no improvement: {costs:?}");
            assert!(costs.windows(2).all(|w| w[1] < w[0]), "{costs:?}");
            let last = *costs.last().expect("a cost");
            assert!(
                (last - out.stats.path_length_before).abs() <= 1e-6 * last,
                "{last} against {}",
                out.stats.path_length_before
            );
        }
    }
}

#[test]
fn a_box_and_the_orientation_hold_together() {
    let b = bundled();
    let checker = b.checker();
    let req = problem(&b, &checker);
    let mut c = upright(&b);
    // The tool point 5 cm past tool0 along its z stays 0.15 m or more above the table, and
    // below 0.7 m.
    c.position.push(PositionConstraint {
        link: b.tip,
        offset: Vector3::new(0.0, 0.0, 0.05),
        region: Isometry3::translation(0.0, 0.0, 0.425),
        half_extents: Vector3::new(2.0, 2.0, 0.275),
    });
    let set = ConstraintSet::new(&b.robot, &b.group, &b.base, c).expect("set");
    let out = plan_constrained(&checker, &req, &set).expect("planned");
    let (worst, lowest) = recheck(&b, &out, req.resolution);
    assert!(worst <= tilt_bound(), "tilted {worst}");
    // tool0 is 5 cm above the constrained point when pointing down (within the tilt).
    assert!(
        lowest + 0.05 >= 0.15 - 1e-3,
        "the tool point went down to {}",
        lowest + 0.05
    );
}

#[test]
fn bad_requests_are_named() {
    let b = bundled();
    let checker = b.checker();
    let req = problem(&b, &checker);
    let set = ConstraintSet::new(&b.robot, &b.group, &b.base, upright(&b)).expect("set");
    // A start with the tool on its side.
    let mut tipped = req.clone();
    tipped.start[4] += 0.6;
    assert!(checker.check_config(&tipped.start).expect("check"));
    match plan_constrained(&checker, &tipped, &set) {
        Err(PlanError::StartViolatesConstraints(m)) => {
            assert!(m.contains("orientation constraint 0"), "{m}");
            assert!(m.contains("tool0"), "{m}");
        }
        other => panic!("expected an invalid start, got {other:?}"),
    }
    let mut ptp = req.clone();
    ptp.planner = PlannerId::Ptp;
    match plan_constrained(&checker, &ptp, &set) {
        Err(PlanError::InvalidRequest(m)) => {
            assert!(m.contains("ptp") && m.contains("rrt_connect"), "{m}")
        }
        other => panic!("expected an invalid request, got {other:?}"),
    }
    // A goal no path can reach under the constraint (time limit ends it): the tool must stay
    // inside a box the goal's tool position is outside of.
    let mut boxed = upright(&b);
    let p = b.tool(&req.start).translation.vector;
    boxed.position.push(PositionConstraint {
        link: b.tip,
        offset: Vector3::zeros(),
        region: Isometry3::translation(p.x, p.y, p.z),
        half_extents: Vector3::new(0.1, 0.1, 0.1),
    });
    let set = ConstraintSet::new(&b.robot, &b.group, &b.base, boxed).expect("set");
    match plan_constrained(&checker, &req, &set) {
        Err(PlanError::GoalViolatesConstraints(m)) => {
            assert!(m.contains("position constraint 0"), "{m}")
        }
        other => panic!("expected an invalid goal, got {other:?}"),
    }
}

/// The MoveIt `Constraints` YAML of "tool0 pointing down, any heading", given in `frame`
/// with the orientation `q` there, and a box for the tool's point 5 cm past tool0.
fn moveit_yaml(frame: &str, q: UnitQuaternion<f64>) -> String {
    let c = q.coords;
    format!(
        "orientation_constraints:\n\
         - header: {{frame_id: '{frame}'}}\n\
         \x20 link_name: tool0\n\
         \x20 orientation: {{x: {}, y: {}, z: {}, w: {}}}\n\
         \x20 absolute_x_axis_tolerance: {TILT}\n\
         \x20 absolute_y_axis_tolerance: {TILT}\n\
         \x20 absolute_z_axis_tolerance: 3.2\n\
         \x20 parameterization: 1\n\
         position_constraints:\n\
         - header: {{frame_id: world}}\n\
         \x20 link_name: tool0\n\
         \x20 target_point_offset: {{x: 0, y: 0, z: 0.05}}\n\
         \x20 constraint_region:\n\
         \x20   primitives: [{{type: 1, dimensions: [4, 4, 0.55]}}]\n\
         \x20   primitive_poses: [{{position: {{x: 0, y: 0, z: 0.425}}, orientation: {{x: 0, y: 0, z: 0, w: 1}}}}]\n",
        c.x, c.y, c.z, c.w
    )
}

#[test]
fn the_service_plans_under_constraints_from_a_moveit_yaml() {
    use common::service::{request, service};
    use gpu_motion_planner::robot::constraint::ConstraintSpec;
    use gpu_motion_planner::service::ErrorCategory;

    let b = bundled();
    let checker = b.checker();
    let req = problem(&b, &checker);
    let mut s = service();
    // The orientation given in the frame of base_link, which the bundled arm's root link is
    // (so the same rotation).
    let yaml: serde_yaml::Value =
        serde_yaml::from_str(&moveit_yaml("base_link", down())).expect("yaml");
    let spec = ConstraintSpec::from_moveit_yaml(&yaml).expect("constraints");
    assert_eq!((spec.orientation.len(), spec.position.len()), (1, 1));
    let mut r = request(&s, &req.start, &req.goal);
    r.path_constraints = spec.clone();
    // The service's planner setting is another planner: a request with constraints and no
    // planner named is planned with rrt_connect all the same.
    let mut settings = s.settings().clone();
    settings.planner = "prm".into();
    s.set_settings(settings);
    let out = s.plan(r.clone()).expect("planned");
    assert_eq!(out.planner, "rrt_connect");
    let mut worst = 0.0f64;
    let mut q = vec![0.0; req.start.len()];
    for w in out.path.windows(2) {
        for i in 0..=20 {
            b.group
                .space
                .interpolate(&w[0], &w[1], i as f64 / 20.0, &mut q);
            worst = worst.max(tilt(&b, &q));
        }
    }
    assert!(worst <= tilt_bound(), "tilted {worst}");
    // A request naming prm (MoveIt's PRMkConfigDefault maps to it) plans with it under the
    // constraints.
    let mut with_prm = r.clone();
    with_prm.planner = Some("PRMkConfigDefault".into());
    let out = s.plan(with_prm).expect("planned with prm");
    assert_eq!(out.planner, "prm");
    for p in &out.path {
        assert!(tilt(&b, p) <= tilt_bound(), "prm: tilted {}", tilt(&b, p));
    }
    // Its start tipped over: START_STATE_VIOLATES_PATH_CONSTRAINTS.
    let mut tipped = req.start.clone();
    tipped[4] += 0.6;
    let mut bad = request(&s, &tipped, &req.goal);
    bad.path_constraints = spec.clone();
    let e = s.plan(bad).expect_err("start tipped over");
    assert_eq!(e.category(), ErrorCategory::StartViolatesConstraints, "{e}");
    // drm, an unknown link and an unknown frame are refused by name.
    let mut drm = r.clone();
    drm.planner = Some("drm".into());
    let e = s.plan(drm).expect_err("drm");
    assert_eq!(e.category(), ErrorCategory::InvalidGoal);
    assert!(e.to_string().contains("path_constraints"), "{e}");
    let mut unknown = r.clone();
    unknown.path_constraints.orientation[0].link = "gripper".into();
    let e = s.plan(unknown).expect_err("unknown link");
    assert!(e.to_string().contains("'gripper'"), "{e}");
    let mut frame = r.clone();
    frame.path_constraints.position[0].frame = "camera".into();
    let e = s.plan(frame).expect_err("unknown frame");
    assert!(e.to_string().contains("camera"), "{e}");
    // The orientation given in a camera frame of /tf (turned and tilted against the world):
    // the same constraint, the tool still kept pointing down.
    let camera = Isometry3::from_parts(
        Translation3::new(0.6, -0.4, 1.5),
        UnitQuaternion::from_euler_angles(PI, 0.2, 0.7),
    );
    let tf: gpu_motion_planner::tf::SharedTf = std::sync::Arc::new(std::sync::RwLock::new(
        gpu_motion_planner::tf::TfBuffer::default(),
    ));
    tf.write()
        .expect("tf")
        .set_transform("world", "camera", 0, camera, true)
        .expect("transform");
    s.set_transforms(tf);
    let yaml: serde_yaml::Value =
        serde_yaml::from_str(&moveit_yaml("camera", camera.rotation.inverse() * down()))
            .expect("yaml");
    let mut in_camera = r.clone();
    in_camera.path_constraints = ConstraintSpec::from_moveit_yaml(&yaml).expect("constraints");
    let out = s.plan(in_camera).expect("planned with a camera frame");
    for p in &out.path {
        assert!(tilt(&b, p) <= tilt_bound(), "tilted {}", tilt(&b, p));
    }
    // XYZ Euler angles: parameterization 0, or none given (MoveIt's default).
    for euler in [
        moveit_yaml("world", down()).replace("parameterization: 1", "parameterization: 0"),
        moveit_yaml("world", down()).replace("\n  parameterization: 1", ""),
    ] {
        let spec = ConstraintSpec::from_moveit_yaml(&serde_yaml::from_str(&euler).expect("yaml"))
            .expect("Euler angles");
        assert_eq!(spec.orientation[0].parameterization, 0);
        assert_eq!(spec.position.len(), 1);
    }
    let mut in_euler = r.clone();
    in_euler.path_constraints.orientation[0].parameterization = 0;
    let out = s.plan(in_euler).expect("planned with Euler angles");
    for p in &out.path {
        assert!(tilt(&b, p) <= tilt_bound(), "tilted {}", tilt(&b, p));
    }
    // Another parameterization and a sphere region are refused, naming them.
    let other = moveit_yaml("world", down()).replace("parameterization: 1", "parameterization: 2");
    let e = ConstraintSpec::from_moveit_yaml(&serde_yaml::from_str(&other).expect("yaml"))
        .expect_err("parameterization 2");
    assert!(
        e.contains("orientation_constraints[0]") && e.contains("parameterization"),
        "{e}"
    );
    let mut bad = r.clone();
    bad.path_constraints.orientation[0].parameterization = 7;
    let e = s.plan(bad).expect_err("parameterization 7");
    assert!(
        e.to_string().contains("orientation constraint 0")
            && e.to_string().contains("parameterization"),
        "{e}"
    );
    let sphere = moveit_yaml("world", down()).replace(
        "type: 1, dimensions: [4, 4, 0.55]",
        "type: 2, dimensions: [0.5]",
    );
    let e = ConstraintSpec::from_moveit_yaml(&serde_yaml::from_str(&sphere).expect("yaml"))
        .expect_err("sphere");
    assert!(
        e.contains("position_constraints[0]") && e.contains("BOX"),
        "{e}"
    );
}

#[test]
fn gmp_plan_reads_path_constraints_from_a_file() {
    let b = bundled();
    let checker = b.checker();
    let req = problem(&b, &checker);
    let dir = std::env::temp_dir().join(format!("gmp_constraints_{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let file = dir.join("upright.yaml");
    std::fs::write(&file, moveit_yaml("world", down())).expect("write");
    let root = common::root();
    let run = |start: &[f64]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_gmp"))
            .args(["plan", "--backend", "cpu", "--seed", "3"])
            .arg("--urdf")
            .arg(root.join("urdf/gmp_arm.urdf"))
            .arg("--srdf")
            .arg(root.join("urdf/gmp_arm.srdf"))
            .arg("--scene")
            .arg(root.join("config/default_scene.yaml"))
            .arg("--start")
            .arg(serde_json::to_string(start).expect("json"))
            .arg("--goal")
            .arg(serde_json::to_string(&req.goal).expect("json"))
            .arg("--path-constraints")
            .arg(&file)
            .output()
            .expect("gmp runs")
    };
    let out = run(&req.start);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    let points = v["points"].as_array().expect("points");
    assert!(points.len() > 2);
    let s = &b.group.space;
    for p in points {
        let q: Vec<f64> = p["positions"]
            .as_array()
            .expect("positions")
            .iter()
            .enumerate()
            .map(|(j, x)| wrap(s, j, x.as_f64().expect("number")))
            .collect();
        assert!(
            tilt(&b, &q) <= tilt_bound(),
            "a point tilts {}",
            tilt(&b, &q)
        );
        let point = b.tool(&q) * nalgebra::Point3::new(0.0, 0.0, 0.05);
        assert!(
            point.z >= 0.15 - 1e-9 && point.z <= 0.7 + 1e-9,
            "{}",
            point.z
        );
    }
    // A start with the tool tipped over: exit 2 naming the constraint.
    let mut tipped = req.start.clone();
    tipped[4] += 0.6;
    let out = run(&tipped);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("violates the path constraints"), "{err}");
    std::fs::remove_dir_all(&dir).ok();
}

/// The wrist's last joint (continuous) kept between its start and goal values (plus a
/// margin) on top of the upright tool: every configuration, densely between the points,
/// keeps the range the short way round; the upright-only plan of the same request leaves it.
#[test]
fn joint_constraints_hold_with_the_orientation() {
    use gpu_motion_planner::robot::constraint::{ConstraintSpec, JointConstraint};
    use gpu_motion_planner::robot::wrapped_difference;
    let b = bundled();
    let checker = b.checker();
    let req = problem(&b, &checker);
    let (s5, g5) = (req.start[5], req.goal[5]);
    let half = wrapped_difference(s5, g5) / 2.0;
    let mid = wrap_angle(s5 + half);
    let margin = 0.15;
    let tol = half.abs() + margin;
    let variable = b.group.variables[5];
    let mut c = upright(&b);
    c.joint.push(JointConstraint {
        variable,
        position: mid,
        below: tol,
        above: tol,
    });
    let set = ConstraintSet::new(&b.robot, &b.group, &b.base, c).expect("set");
    let out = plan_constrained(&checker, &req, &set).expect("planned");
    let worst_offset = |path: &[Vec<f64>]| {
        let mut worst = 0.0f64;
        let mut q = vec![0.0; req.start.len()];
        for w in path.windows(2) {
            for i in 0..=20 {
                b.group
                    .space
                    .interpolate(&w[0], &w[1], i as f64 / 20.0, &mut q);
                worst = worst.max(wrapped_difference(mid, q[5]).abs());
            }
        }
        worst
    };
    let worst = worst_offset(&out.path);
    assert!(
        worst <= tol + 1e-9,
        "wrist_3 went {worst} from {mid} (tolerance {tol})"
    );
    let (tilt_worst, _) = recheck(&b, &out, req.resolution);
    assert!(tilt_worst <= tilt_bound(), "tilted {tilt_worst}");
    let set = ConstraintSet::new(&b.robot, &b.group, &b.base, upright(&b)).expect("set");
    let free = plan_constrained(&checker, &req, &set).expect("planned upright only");
    let free_worst = worst_offset(&free.path);
    eprintln!("wrist_3: constrained {worst:.3}, upright only {free_worst:.3}, tolerance {tol:.3}");
    assert!(
        free_worst > tol,
        "upright only, wrist_3 stayed within {free_worst}"
    );

    // The same from a MoveIt YAML; a start outside the range is named; bad joints named.
    let yaml = format!(
        "joint_constraints:\n\
         - {{joint_name: wrist_3_joint, position: {mid}, tolerance_above: {tol}, \
         tolerance_below: {tol}, weight: 1.0}}\n"
    );
    let spec = ConstraintSpec::from_moveit_yaml(&serde_yaml::from_str(&yaml).expect("yaml"))
        .expect("read");
    let resolved = spec
        .resolve(&b.robot.tree, |_| Ok(Isometry3::identity()))
        .expect("resolve");
    assert_eq!(
        resolved.joint,
        vec![JointConstraint {
            variable,
            position: mid,
            below: tol,
            above: tol
        }]
    );
    let set = ConstraintSet::new(&b.robot, &b.group, &b.base, resolved).expect("set");
    let mut away = req.clone();
    away.start[5] = wrap_angle(mid + tol + 0.3);
    match plan_constrained(&checker, &away, &set) {
        Err(PlanError::StartViolatesConstraints(m)) => {
            assert!(
                m.contains("joint constraint 0") && m.contains("wrist_3_joint"),
                "{m}"
            )
        }
        other => panic!("expected an invalid start, got {other:?}"),
    }
    let unknown = yaml.replace("wrist_3_joint", "gripper_joint");
    let e = ConstraintSpec::from_moveit_yaml(&serde_yaml::from_str(&unknown).expect("yaml"))
        .expect("read")
        .resolve(&b.robot.tree, |_| Ok(Isometry3::identity()))
        .expect_err("unknown joint");
    assert!(e.to_string().contains("'gripper_joint'"), "{e}");
    let missing = yaml.replace("tolerance_below", "tolerance_low");
    let e = ConstraintSpec::from_moveit_yaml(&serde_yaml::from_str(&missing).expect("yaml"))
        .expect_err("no tolerance_below");
    assert!(
        e.contains("joint_constraints[0]") && e.contains("tolerance_below"),
        "{e}"
    );
}
