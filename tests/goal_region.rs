//! Goal regions (MoveIt's goal constraints) on the bundled arm in the bundled scene: the
//! plan ends at a configuration whose tool points down (any heading) with its origin inside
//! a box, checked independently by forward kinematics; every motion of the trajectory is
//! re-checked by a fresh checker at a finer resolution; the same seed gives the same path;
//! the path constraints hold at the goal too; bad and unreachable regions are named; the
//! service, `gmp plan --goal-constraints` and a `--request` whose goal is a box all plan to
//! the region.

mod common;

use std::f64::consts::PI;
use std::time::Duration;

use gpu_motion_planner::collision::{Checker, CheckerOptions, CpuChecker, MotionBatch};
use gpu_motion_planner::planners::constrained::plan_constrained;
use gpu_motion_planner::planners::pose::plan_to_poses_with;
use gpu_motion_planner::planners::{PlanRequest, PlannerId};
use gpu_motion_planner::robot::constraint::{
    ConstraintSet, ConstraintSpec, OrientationConstraint, OrientationParameterization,
    PathConstraints, PositionConstraint,
};
use gpu_motion_planner::robot::ik::IkOptions;
use gpu_motion_planner::robot::wrap_angle;
use gpu_motion_planner::scene::{Obstacle, Shape};
use nalgebra::{Isometry3, Vector3};

use common::bundled::{bundled, tool_down, Bundled};

/// Tilt tolerance about the target's x and y axes (rad); any heading.
const TILT: f64 = 0.1;
/// Centre and half side of the goal box (m).
const CENTRE: [f64; 3] = [0.25, 0.4, 0.35];
const HALF: f64 = 0.06;

/// The goal region: the tool down within `TILT`, its origin inside the box.
fn region(b: &Bundled) -> PathConstraints {
    let [x, y, z] = CENTRE;
    PathConstraints {
        joint: Vec::new(),
        orientation: vec![OrientationConstraint {
            link: b.tip,
            orientation: tool_down(),
            tolerance: Vector3::new(TILT, TILT, PI),
            parameterization: OrientationParameterization::RotationVector,
        }],
        position: vec![PositionConstraint {
            link: b.tip,
            offset: Vector3::zeros(),
            region: Isometry3::translation(x, y, z),
            half_extents: Vector3::repeat(HALF),
        }],
    }
}

/// The same region as a MoveIt `Constraints` YAML (XYZ Euler angles, MoveIt's default).
fn region_yaml(centre: [f64; 3]) -> String {
    let c = tool_down().coords;
    let [x, y, z] = centre;
    let side = 2.0 * HALF;
    format!(
        "orientation_constraints:\n\
         - header: {{frame_id: world}}\n\
         \x20 link_name: tool0\n\
         \x20 orientation: {{x: {}, y: {}, z: {}, w: {}}}\n\
         \x20 absolute_x_axis_tolerance: {TILT}\n\
         \x20 absolute_y_axis_tolerance: {TILT}\n\
         \x20 absolute_z_axis_tolerance: 3.2\n\
         position_constraints:\n\
         - header: {{frame_id: world}}\n\
         \x20 link_name: tool0\n\
         \x20 constraint_region:\n\
         \x20   primitives: [{{type: 1, dimensions: [{side}, {side}, {side}]}}]\n\
         \x20   primitive_poses: [{{position: {{x: {x}, y: {y}, z: {z}}}, orientation: {{x: 0, y: 0, z: 0, w: 1}}}}]\n",
        c.x, c.y, c.z, c.w
    )
}

/// The angle between the tool's z axis and the world's -z at `q`.
fn tilt(b: &Bundled, q: &[f64]) -> f64 {
    let z = b.tool(q).rotation * Vector3::z();
    z.angle(&-Vector3::z())
}

/// The most the tool can tilt while the x and y components stay within `TILT` (either
/// parameterization): |(x, y)|.
fn tilt_bound() -> f64 {
    (2.0 * TILT * TILT).sqrt()
}

/// Asserts that `q` is inside the goal region centred at `centre`, by forward kinematics.
fn assert_inside(b: &Bundled, q: &[f64], centre: [f64; 3]) {
    assert_inside_box(b, q, centre, HALF);
}

/// Asserts that `q` has the tool down within the tilt bound with its origin within `half`
/// of `centre` on every axis, by forward kinematics.
fn assert_inside_box(b: &Bundled, q: &[f64], centre: [f64; 3], half: f64) {
    let t = tilt(b, q);
    assert!(t <= tilt_bound() + 1e-9, "the goal tilts {t}");
    let p = b.tool(q).translation.vector;
    for k in 0..3 {
        let off = (p[k] - centre[k]).abs();
        assert!(
            off <= half + 1e-9,
            "the goal is {off} m off the centre on axis {k}"
        );
    }
}

/// A collision-free configuration with the tool down at `position`.
fn down_at(b: &Bundled, checker: &CpuChecker, position: [f64; 3]) -> Vec<f64> {
    b.down_at(position, checker)
        .into_iter()
        .next()
        .expect("a free configuration pointing down there")
}

/// Every motion of `path` re-checked by a fresh checker at a fifth of `resolution`, and
/// within the limits.
fn assert_free(b: &Bundled, path: &[Vec<f64>], resolution: f64) {
    let s = &b.group.space;
    let mut motions = MotionBatch::new(s.dof());
    for w in path.windows(2) {
        assert!(s.within_limits(&w[1]), "outside the limits");
        motions.push(&w[0], &w[1]).expect("motion");
    }
    let ok = b
        .checker()
        .check_motions(&motions, resolution / 5.0)
        .expect("check");
    assert!(ok.iter().all(|&v| v), "a motion of the path collides");
}

fn start(b: &Bundled, checker: &CpuChecker) -> Vec<f64> {
    down_at(b, checker, [0.3, -0.4, 0.3])
}

#[test]
fn plans_end_inside_the_region_and_repeat_for_a_seed() {
    let b = bundled();
    let checker = b.checker();
    let start = start(&b, &checker);
    let state = b.group.full_state(&b.base, &start);
    let goal = ConstraintSet::new(&b.robot, &b.group, &state, region(&b)).expect("region");
    let none = ConstraintSet::new(&b.robot, &b.group, &state, PathConstraints::default())
        .expect("no constraints");
    for planner in [
        PlannerId::RrtConnect,
        PlannerId::Prm,
        PlannerId::Rrt,
        PlannerId::LazyPrm,
        PlannerId::RrtStar,
    ] {
        let mut req = PlanRequest::new(start.clone(), Vec::new(), planner);
        req.time_limit = Duration::from_secs(20);
        req.seed = 11;
        if planner == PlannerId::RrtStar {
            // Anytime: an iteration budget, not the clock, ends it (the same path for a seed).
            req.max_iterations = Some(40);
            req.time_limit = Duration::from_secs(60);
        }
        let opts = IkOptions {
            seed: 11,
            ..IkOptions::default()
        };
        let run = || {
            plan_to_poses_with(
                &checker,
                &req,
                std::slice::from_ref(&goal),
                &opts,
                |r: &PlanRequest| plan_constrained(&checker, r, &none),
            )
            .expect("planned to the region")
        };
        let pp = run();
        let path = &pp.result.path;
        assert_eq!(path[0], start, "{planner}: the path starts at the start");
        let end = path.last().expect("a goal");
        assert_inside(&b, end, CENTRE);
        assert!(goal.satisfied(end).expect("evaluates"), "{planner}");
        assert_free(&b, path, req.resolution);
        // The search found several configurations inside the region (a goal set), none
        // of them in collision here, from the start and random starts.
        assert!(pp.goals[0].found > 1, "{planner}: {}", pp.goals[0].found);
        assert!(pp.starts_tried() >= 1);
        // The same seed: the same path.
        assert_eq!(
            run().result.path,
            pp.result.path,
            "{planner}: not repeatable"
        );
    }
}

#[test]
fn unreachable_and_blocked_regions_are_named() {
    let b = bundled();
    let checker = b.checker();
    let start = start(&b, &checker);
    let state = b.group.full_state(&b.base, &start);
    let mut req = PlanRequest::new(start.clone(), Vec::new(), PlannerId::RrtConnect);
    req.time_limit = Duration::from_secs(5);
    let opts = IkOptions {
        starts: 64,
        ..IkOptions::default()
    };
    let none = ConstraintSet::new(&b.robot, &b.group, &state, PathConstraints::default())
        .expect("no constraints");
    // A box 3 m above the base: out of reach.
    let mut far = region(&b);
    far.position[0].region = Isometry3::translation(0.0, 0.0, 3.0);
    let goal = ConstraintSet::new(&b.robot, &b.group, &state, far).expect("region");
    let e = plan_to_poses_with(
        &checker,
        &req,
        std::slice::from_ref(&goal),
        &opts,
        |r: &PlanRequest| plan_constrained(&checker, r, &none),
    )
    .expect_err("out of reach");
    let text = e.to_string();
    assert!(
        text.contains("satisfies the goal constraints") && text.contains("64 starting"),
        "{text}"
    );
    // The region inside a ball obstacle (the tool's link inside it wherever the tool's
    // origin is in the box): configurations are found, all in collision.
    let mut scene = b.scene.clone();
    scene
        .add(Obstacle {
            id: "ball_around_the_goal".into(),
            shape: Shape::Sphere { radius: 0.2 },
            pose: Isometry3::translation(CENTRE[0], CENTRE[1], CENTRE[2]),
        })
        .expect("obstacle");
    let blocked = CpuChecker::new(
        &b.robot,
        &b.group,
        &b.base,
        &scene,
        CheckerOptions::default(),
    )
    .expect("checker");
    let goal = ConstraintSet::new(&b.robot, &b.group, &state, region(&b)).expect("region");
    let e = plan_to_poses_with(
        &blocked,
        &req,
        std::slice::from_ref(&goal),
        &opts,
        |r: &PlanRequest| plan_constrained(&blocked, r, &none),
    )
    .expect_err("every goal collides");
    let text = e.to_string();
    assert!(
        text.contains("found within the goal constraints are in collision"),
        "{text}"
    );
}

#[test]
fn the_service_plans_to_goal_constraints() {
    use common::service::{names, request, service};
    use gpu_motion_planner::robot::constraint::{JointSpec, OrientationSpec};
    use gpu_motion_planner::service::ErrorCategory;

    let b = bundled();
    let checker = b.checker();
    let start = start(&b, &checker);
    let mut s = service();
    let yaml: serde_yaml::Value = serde_yaml::from_str(&region_yaml(CENTRE)).expect("yaml");
    let spec = ConstraintSpec::from_moveit_yaml(&yaml).expect("constraints");
    let mut r = request(&s, &start, &[]);
    r.goal = (Vec::new(), Vec::new());
    r.goal_constraints = spec.clone();
    let out = s.plan(r.clone()).expect("planned to the region");
    let end = out.path.last().expect("a goal").clone();
    assert_inside(&b, &end, CENTRE);
    assert_free(&b, &out.path, 0.01);
    let search = out.ik.expect("the search is reported");
    assert!(search.starts_tried >= 1);
    assert_eq!(out.reached_goal, 0);
    // The trajectory's last point is the goal.
    let last = &out.trajectory.points.last().expect("points").positions;
    for (a, g) in last.iter().zip(&end) {
        assert!((wrap_angle(a - g)).abs() < 1e-9, "{last:?} against {end:?}");
    }
    // Path constraints hold at the goal too: the first joint kept within 0.3 rad of its
    // start (the region's boxes lie on either side of the base, so only goals near the start's
    // heading are allowed, and the box is moved there).
    let mut kept = r.clone();
    kept.goal_constraints = ConstraintSpec::from_moveit_yaml(
        &serde_yaml::from_str(&region_yaml([0.35, -0.3, 0.35])).expect("yaml"),
    )
    .expect("constraints");
    kept.path_constraints.joint.push(JointSpec {
        joint: names(&s)[0].clone(),
        position: start[0],
        below: 0.3,
        above: 0.3,
    });
    let out = s.plan(kept).expect("planned with a joint path constraint");
    let end = out.path.last().expect("a goal");
    assert!(
        (end[0] - start[0]).abs() <= 0.3 + 1e-9,
        "the goal leaves the joint range: {} against {}",
        end[0],
        start[0]
    );
    assert_inside(&b, end, [0.35, -0.3, 0.35]);
    // With a goal state, a pose or LIN: refused, naming goal_constraints.
    let mut both = request(&s, &start, &start);
    both.goal_constraints = spec.clone();
    let e = s.plan(both).expect_err("two goals");
    assert_eq!(e.category(), ErrorCategory::InvalidGoal, "{e}");
    assert!(e.to_string().starts_with("goal_constraints:"), "{e}");
    let mut lin = r.clone();
    lin.planner = Some("LIN".into());
    let e = s.plan(lin).expect_err("LIN");
    assert!(
        e.to_string().contains("goal_constraints") && e.to_string().contains("LIN"),
        "{e}"
    );
    // An unknown link: named, as a goal constraint (not a path constraint).
    let mut unknown = r.clone();
    unknown.goal_constraints.orientation = vec![OrientationSpec {
        link: "gripper".into(),
        ..spec.orientation[0].clone()
    }];
    let e = s.plan(unknown).expect_err("unknown link");
    let text = e.to_string();
    assert!(
        text.starts_with("goal_constraints:") && text.contains("'gripper'"),
        "{text}"
    );
    assert!(!text.contains("path constraint"), "{text}");
    // Out of reach: NO_IK_SOLUTION.
    let mut far = r.clone();
    far.goal_constraints = ConstraintSpec::from_moveit_yaml(
        &serde_yaml::from_str(&region_yaml([0.0, 0.0, 3.0])).expect("yaml"),
    )
    .expect("constraints");
    far.time_limit = Some(1.0);
    let e = s.plan(far).expect_err("out of reach");
    assert_eq!(e.category(), ErrorCategory::NoIkSolution, "{e}");
}

/// `gmp plan` with `--goal-constraints FILE`, and with a MoveIt request whose goal constraint
/// is the same BOX region: both plans end inside it.
#[test]
fn gmp_plan_reads_goal_constraints() {
    let b = bundled();
    let checker = b.checker();
    let start = start(&b, &checker);
    let dir = std::env::temp_dir().join(format!("gmp_goal_region_{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let file = dir.join("region.yaml");
    std::fs::write(&file, region_yaml(CENTRE)).expect("write");
    // The request: the region indented under goal_constraints.
    let indented: String = region_yaml(CENTRE)
        .lines()
        .enumerate()
        .map(|(i, l)| {
            if i == 0 {
                format!("- {l}\n")
            } else {
                format!("  {l}\n")
            }
        })
        .collect();
    let state = b.group.full_state(&b.base, &start);
    let names = &b.robot.tree.variable_names;
    let request = dir.join("request.yaml");
    std::fs::write(
        &request,
        format!(
            "group_name: {}\nstart_state:\n  joint_state:\n    name: {}\n    position: {}\n\
             goal_constraints:\n{indented}",
            b.group.name,
            serde_json::to_string(names).expect("json"),
            serde_json::to_string(&state).expect("json"),
        ),
    )
    .expect("write");
    let root = common::root();
    let run = |extra: &[&std::ffi::OsStr]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_gmp"))
            .args(["plan", "--backend", "cpu", "--seed", "5"])
            .arg("--urdf")
            .arg(root.join("urdf/gmp_arm.urdf"))
            .arg("--srdf")
            .arg(root.join("urdf/gmp_arm.srdf"))
            .arg("--scene")
            .arg(root.join("config/default_scene.yaml"))
            .args(extra)
            .output()
            .expect("gmp runs")
    };
    let start_json = serde_json::to_string(&start).expect("json");
    let with_file = run(&[
        "--start".as_ref(),
        start_json.as_ref(),
        "--goal-constraints".as_ref(),
        file.as_os_str(),
    ]);
    let with_request = run(&["--request".as_ref(), request.as_os_str()]);
    // The shipped example: a 4 cm box around the same centre.
    let shipped = root.join("config/tool_down_region.yaml");
    let with_shipped = run(&[
        "--start".as_ref(),
        start_json.as_ref(),
        "--goal-constraints".as_ref(),
        shipped.as_os_str(),
    ]);
    for (out, half) in [
        (with_file, HALF),
        (with_request, HALF),
        (with_shipped, 0.02),
    ] {
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
        assert!(
            v["goal_region"]["configurations_found"]
                .as_u64()
                .is_some_and(|n| n >= 1),
            "{v}"
        );
        let last: Vec<f64> = v["points"]
            .as_array()
            .and_then(|p| p.last())
            .and_then(|p| p["positions"].as_array())
            .expect("points")
            .iter()
            .map(|x| x.as_f64().expect("number"))
            .collect();
        assert_inside_box(&b, &last, CENTRE, half);
    }
    // With --goal: refused by the argument parser (exit 2).
    let out = run(&[
        "--start".as_ref(),
        start_json.as_ref(),
        "--goal".as_ref(),
        start_json.as_ref(),
        "--goal-constraints".as_ref(),
        file.as_os_str(),
    ]);
    assert_eq!(out.status.code(), Some(2));
    std::fs::remove_dir_all(&dir).ok();
}
