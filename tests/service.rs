//! `PlanningService`: planning, marker obstacles and bad inputs on the bundled robot, no ROS.

mod common;

use common::service::{cpu_checker, names, place, request, service, tool_pose_at, GOAL, START};
use gpu_motion_planner::cli::demo::bundled;
use gpu_motion_planner::planners::PlanError;
use gpu_motion_planner::robot::cartesian_limits::CartesianLimits;
use gpu_motion_planner::robot::constraint::{ConstraintSpec, JointSpec, PositionSpec};
use gpu_motion_planner::robot::kinematics_config::KinematicsConfig;
use gpu_motion_planner::robot::ompl_planning::OmplPlanning;
use gpu_motion_planner::service::sequence::ServiceSequenceItem;
use gpu_motion_planner::service::{
    ErrorCategory, MarkerAction, MarkerKind, MarkerUpdate, PlanningService,
    ServiceCartesianRequest, ServiceError, ServicePlanRequest, ServicePlanResponse,
    ServicePoseGoal, ServiceSettings, SpeedLimit, StateCheckRequest, TrajectoryCheckRequest,
};
use gpu_motion_planner::trajectory;
use nalgebra::{Isometry3, Point3, Vector3};

/// Position of the tool at group configuration `q` (other joints neutral).
fn tool_at(s: &PlanningService, q: &[f64]) -> Vector3<f64> {
    tool_pose_at(s, q).translation.vector
}

fn cube(ns: &str, id: i32, at: Vector3<f64>, size: f64) -> MarkerUpdate {
    MarkerUpdate {
        ns: ns.into(),
        id,
        action: MarkerAction::Add,
        kind: MarkerKind::Cube,
        frame_id: "world".into(),
        pose: Isometry3::translation(at.x, at.y, at.z),
        scale: [size; 3],
    }
}

/// Re-checks a plan on a fresh CPU checker of the service's current scene: along its path
/// where it lies on it, else (rounded corners) motion by motion between its points.
fn assert_valid(s: &PlanningService, path: &[Vec<f64>], traj: &trajectory::Trajectory) {
    let group = s.group().expect("group");
    let checker = cpu_checker(s);
    if trajectory::follows_path(&group.space, path, traj).is_ok() {
        trajectory::validate_along(&checker, path, traj, 0.01)
    } else {
        trajectory::validate(&checker, traj, 0.01)
    }
    .expect("trajectory collision free");
    for p in &traj.points {
        assert!(group.space.within_limits(&p.positions), "{:?}", p.positions);
    }
}

fn mid() -> Vec<f64> {
    START
        .iter()
        .zip(&GOAL)
        .map(|(a, b)| (a + b) / 2.0)
        .collect()
}

#[test]
fn plans_a_valid_trajectory() {
    let mut s = service();
    let res = s.plan(request(&s, &START, &GOAL)).expect("plan");
    assert_eq!(res.trajectory.joint_names, names(&s));
    let first = &res.trajectory.points[0].positions;
    let last = &res.trajectory.points[res.trajectory.points.len() - 1].positions;
    for j in 0..6 {
        assert!((first[j] - START[j]).abs() < 1e-9);
        assert!((last[j] - GOAL[j]).abs() < 1e-9);
    }
    assert_eq!(res.backend, "cpu");
    assert_valid(&s, &res.path, &res.trajectory);
    assert_eq!(s.last_plan(), Some(res.path.as_slice()));
}

/// The node plans with the batch size suited to the planner and backend, as `gmp bench mbm`
/// does: RRT-Connect on the CPU extends one sample at a time (a batch of 64 made the MBM Panda
/// planning median about 5x longer), the PRM keeps batches of 64.
#[test]
fn the_batch_size_suits_the_planner_and_backend() {
    let mut s = service();
    let res = s.plan(request(&s, &START, &GOAL)).expect("plan");
    assert_eq!(res.planner, "rrt_connect");
    assert_eq!(res.stats.batch_size, 1);
    let prm = ServicePlanRequest {
        planner: Some("prm".into()),
        ..request(&s, &START, &GOAL)
    };
    let res = s.plan(prm).expect("prm plan");
    assert_eq!(res.planner, "prm");
    assert_eq!(res.stats.batch_size, 64);
}

#[test]
fn start_defaults_to_the_current_joint_state() {
    let mut s = service();
    let req = ServicePlanRequest {
        start: None,
        goal: (names(&s), GOAL.to_vec()),
        ..Default::default()
    };
    assert!(matches!(
        s.plan(req.clone()),
        Err(ServiceError::NoCurrentState)
    ));
    let mut js_names = names(&s);
    js_names.push("not_a_joint".into());
    let mut js = START.to_vec();
    js.push(1.0);
    s.set_joint_state(&js_names, &js).expect("joint state");
    let res = s.plan(req).expect("plan");
    assert!((res.path[0][0] - START[0]).abs() < 1e-9);
}

/// Around a cube the detour's corners are rounded by default (`path_tolerance` 0.1): the
/// answer says how many, the trajectory leaves the path's waypoints, is valid and is quicker
/// than the same path stopping at them (`path_tolerance` 0, which reports no rounding).
#[test]
fn a_detour_passes_its_corners_on_arcs_by_default() {
    let mut s = service();
    assert_eq!(s.settings().path_tolerance, 0.1);
    s.apply_marker(cube("blocks", 1, tool_at(&s, &mid()), 0.2))
        .expect("cube");
    let around = s.plan(request(&s, &START, &GOAL)).expect("plan around");
    let corners = around.path.len() - 2;
    assert!(corners >= 1);
    let (rounded, of) = around.rounded_corners.expect("rounded");
    assert_eq!(of, corners);
    assert!(rounded >= 1);
    let group = s.group().expect("group");
    assert!(trajectory::follows_path(&group.space, &around.path, &around.trajectory).is_err());
    assert_valid(&s, &around.path, &around.trajectory);
    let settings = ServiceSettings {
        path_tolerance: 0.0,
        ..s.settings().clone()
    };
    s.set_settings(settings);
    let stopping = s.plan(request(&s, &START, &GOAL)).expect("plan around");
    assert_eq!(stopping.path, around.path);
    assert_eq!(stopping.rounded_corners, None);
    assert!(stopping.trajectory.duration() > around.trajectory.duration());
    let bad = ServiceSettings {
        path_tolerance: -0.1,
        ..s.settings().clone()
    };
    s.set_settings(bad);
    let e = s.plan(request(&s, &START, &GOAL)).unwrap_err();
    assert!(e.to_string().contains("path_tolerance"), "{e}");
}

#[test]
fn a_marker_cube_changes_the_plan_and_a_goal_inside_one_is_refused() {
    let mut s = service();
    let free = s.plan(request(&s, &START, &GOAL)).expect("plan");
    assert_eq!(
        free.path.len(),
        2,
        "the straight line is free: {:?}",
        free.path
    );

    s.apply_marker(cube("blocks", 1, tool_at(&s, &mid()), 0.2))
        .expect("cube");
    assert_eq!(
        s.scene_obstacles().filter(|o| o.id == "blocks/1").count(),
        1
    );
    let around = s.plan(request(&s, &START, &GOAL)).expect("plan around");
    assert_ne!(around.path, free.path);
    assert!(around.path.len() > 2);
    assert_valid(&s, &around.path, &around.trajectory);

    s.apply_marker(cube("blocks", 2, tool_at(&s, &GOAL), 0.2))
        .expect("cube at goal");
    let e = s.plan(request(&s, &START, &GOAL)).unwrap_err();
    assert!(
        matches!(e, ServiceError::Plan(PlanError::InvalidGoal(_))),
        "{e}"
    );

    // Deleting both obstacles restores the straight plan.
    for id in [1, 2] {
        let mut m = cube("blocks", id, Vector3::zeros(), 0.2);
        m.action = MarkerAction::Delete;
        m.frame_id = String::new();
        s.apply_marker(m).expect("delete");
    }
    let again = s.plan(request(&s, &START, &GOAL)).expect("plan");
    assert_eq!(again.path, free.path);
}

#[test]
fn marker_shapes_and_delete_all() {
    let mut s = service();
    let n = s.scene().len();
    let mut sphere = cube("m", 1, Vector3::new(-1.0, -1.0, 0.5), 0.1);
    sphere.kind = MarkerKind::Sphere;
    s.apply_marker(sphere).expect("sphere");
    let mut cyl = cube("m", 2, Vector3::new(-1.0, 1.0, 0.5), 0.1);
    cyl.kind = MarkerKind::Cylinder;
    s.apply_marker(cyl).expect("cylinder");
    let mut mesh = cube("m", 3, Vector3::new(-1.0, 0.0, 0.5), 1.0);
    mesh.kind = MarkerKind::TriangleList(vec![
        Point3::new(0.0, 0.0, 0.0),
        Point3::new(0.1, 0.0, 0.0),
        Point3::new(0.0, 0.1, 0.0),
        Point3::new(0.0, 0.0, 0.1),
    ]);
    s.apply_marker(mesh).expect("mesh");
    assert_eq!(s.scene().len(), n + 3);
    let mut all = cube("", 0, Vector3::zeros(), 1.0);
    all.action = MarkerAction::DeleteAll;
    s.apply_marker(all).expect("delete all");
    assert_eq!(s.scene().len(), 0);
}

#[test]
fn bad_inputs_are_errors_naming_the_input_and_the_service_keeps_planning() {
    let mut s = service();
    let good = request(&s, &START, &GOAL);
    let err = |s: &mut PlanningService, r: ServicePlanRequest| s.plan(r).unwrap_err().to_string();

    let mut r = good.clone();
    r.goal.0[2] = "elbow_jiont".into();
    assert!(err(&mut s, r).contains("elbow_jiont"));

    let mut r = good.clone();
    r.goal.0.pop();
    r.goal.1.pop();
    assert!(err(&mut s, r).contains("wrist_3_joint"));

    let mut r = good.clone();
    r.goal.1[1] = f64::NAN;
    assert!(err(&mut s, r).contains("shoulder_lift_joint"));

    let mut r = good.clone();
    r.start = Some((names(&s), vec![0.0, 0.0, 9.0, 0.0, 0.0, 0.0]));
    assert!(err(&mut s, r).contains("elbow_joint"));

    let mut r = good.clone();
    r.planner = Some("teleport".into());
    assert!(err(&mut s, r).contains("teleport"));

    let mut r = good.clone();
    r.time_limit = Some(-1.0);
    assert!(err(&mut s, r).contains("time_limit"));

    for n in [0, -2, 257] {
        let mut r = good.clone();
        r.attempts = Some(n);
        let e = err(&mut s, r);
        assert!(
            e.contains("num_planning_attempts") && e.contains(&n.to_string()),
            "{e}"
        );
    }
    let mut r = good.clone();
    r.attempts = Some(3);
    let ok = s.plan(r).expect("3 attempts plan");
    assert!(ok.stats.attempts == 1 || ok.stats.attempts == 3);

    let bad_state = s.set_joint_state(&["elbow_joint".to_string()], &[f64::NAN]);
    assert!(bad_state.unwrap_err().to_string().contains("elbow_joint"));

    let mut m = cube("obst", 4, Vector3::new(1.0, 1.0, 1.0), 0.1);
    m.frame_id = "map".into();
    let e = s.apply_marker(m).unwrap_err().to_string();
    assert!(e.contains("map") && e.contains("obst/4"), "{e}");

    let mut m = cube("obst", 5, Vector3::new(1.0, 1.0, 1.0), 0.1);
    m.kind = MarkerKind::Other(0);
    assert!(s
        .apply_marker(m)
        .unwrap_err()
        .to_string()
        .contains("obst/5"));

    let mut m = cube("obst", 6, Vector3::new(1.0, 1.0, 1.0), 0.0);
    assert!(s
        .apply_marker(m.clone())
        .unwrap_err()
        .to_string()
        .contains("obst/6"));
    m.action = MarkerAction::Delete;
    assert!(s
        .apply_marker(m)
        .unwrap_err()
        .to_string()
        .contains("obst/6"));

    let res = s.plan(good).expect("still plans");
    assert_valid(&s, &res.path, &res.trajectory);
}

#[test]
fn scene_markers_round_trip_and_errors_have_categories() {
    use gpu_motion_planner::service::ErrorCategory;
    let s = service();
    let (robot, _) = bundled().expect("bundled");
    let mut copy = PlanningService::new(
        robot,
        gpu_motion_planner::scene::Scene::new("world"),
        ServiceSettings::default(),
    );
    for m in s.scene_markers() {
        copy.apply_marker(m).expect("marker of an obstacle applies");
    }
    assert_eq!(copy.scene().len(), s.scene().len());
    for o in s.scene_obstacles() {
        let back = copy.scene().get(&format!("{}/0", o.id)).expect("obstacle");
        assert_eq!(back.shape, o.shape);
        assert_eq!(back.pose, o.pose);
    }

    assert_eq!(MarkerAction::from_ros(0), Some(MarkerAction::Add));
    assert_eq!(MarkerAction::from_ros(3), Some(MarkerAction::DeleteAll));
    assert_eq!(MarkerAction::from_ros(1), None);
    assert_eq!(
        MarkerKind::from_ros(11, &[Point3::new(1.0, 1.0, 1.0)], [2.0, 3.0, 4.0]),
        MarkerKind::TriangleList(vec![Point3::new(2.0, 3.0, 4.0)])
    );
    assert_eq!(MarkerKind::from_ros(9, &[], [1.0; 3]), MarkerKind::Other(9));

    let mut s = service();
    let mut r = request(&s, &START, &GOAL);
    r.goal.1[0] = f64::NAN;
    assert_eq!(
        s.plan(r).unwrap_err().category(),
        ErrorCategory::InvalidGoal
    );
    let r = ServicePlanRequest {
        goal: (names(&s), GOAL.to_vec()),
        ..Default::default()
    };
    assert_eq!(s.plan(r).unwrap_err().category(), ErrorCategory::StaleState);
    s.apply_marker(cube("c", 1, tool_at(&s, &START), 0.2))
        .expect("cube at start");
    let e = s.plan(request(&s, &START, &GOAL)).unwrap_err();
    assert_eq!(e.category(), ErrorCategory::StartInCollision, "{e}");
}

#[test]
fn planning_frame_and_group_come_from_the_settings() {
    let mut s = service();
    let mut settings = s.settings().clone();
    settings.planning_group = "no_such_group".into();
    s.set_settings(settings.clone());
    let e = s.plan(request_names(&START, &GOAL)).unwrap_err();
    assert!(e.to_string().contains("no_such_group"), "{e}");
    settings.planning_group = "arm".into();
    settings.planning_frame = "map".into();
    s.set_settings(settings);
    assert_eq!(s.scene().frame(), "map");
    assert!(s.scene_markers().iter().all(|m| m.frame_id == "map"));
    let mut m = cube("f", 1, Vector3::new(-1.0, -1.0, 0.3), 0.1);
    assert!(s.apply_marker(m.clone()).is_err());
    m.frame_id = "map".into();
    s.apply_marker(m).expect("marker in the new frame");
    s.plan(request_names(&START, &GOAL)).expect("plan");
}

fn request_names(start: &[f64], goal: &[f64]) -> ServicePlanRequest {
    let names: Vec<String> = [
        "shoulder_pan_joint",
        "shoulder_lift_joint",
        "elbow_joint",
        "wrist_1_joint",
        "wrist_2_joint",
        "wrist_3_joint",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    ServicePlanRequest {
        start: Some((names.clone(), start.to_vec())),
        goal: (names, goal.to_vec()),
        ..Default::default()
    }
}

#[test]
fn the_checker_is_rebuilt_only_when_the_scene_or_base_state_changes() {
    let mut s = service();
    s.plan(request(&s, &START, &GOAL)).expect("plan");
    s.plan(request(&s, &GOAL, &START)).expect("plan back");
    assert_eq!(s.checker_builds(), 1);
    s.apply_marker(cube("c", 1, Vector3::new(-1.0, -1.0, 0.3), 0.1))
        .expect("cube");
    s.plan(request(&s, &START, &GOAL)).expect("plan");
    assert_eq!(s.checker_builds(), 2);
    s.plan(request(&s, &START, &GOAL)).expect("plan");
    assert_eq!(s.checker_builds(), 2);
}

#[test]
fn the_drm_roadmap_persists_follows_obstacles_and_is_drawn() {
    let mut s = service();
    let mut settings = s.settings().clone();
    settings.roadmap_size = 250;
    s.set_settings(settings);
    let drm = |s: &PlanningService| ServicePlanRequest {
        planner: Some("drm".into()),
        ..request(s, &START, &GOAL)
    };
    assert!(!s.has_roadmap());
    let first = s.plan(drm(&s)).expect("drm plan");
    assert_eq!(first.planner, "drm");
    assert_eq!(first.stats.roadmap_vertices, 250);
    assert_valid(&s, &first.path, &first.trajectory);
    let built = s.roadmap_summary().expect("a roadmap after a drm plan");
    assert_eq!(built.vertices, 250);
    assert_eq!(
        built.labels.valid + built.labels.invalid + built.labels.unknown,
        built.edges
    );

    // The second query reuses the roadmap (same build) and finds the same path.
    let again = s.plan(drm(&s)).expect("second drm plan");
    assert_eq!(
        s.roadmap_summary().expect("kept").build_time,
        built.build_time
    );
    assert_eq!(again.path, first.path);

    // ~/roadmap: one drawn vertex per roadmap vertex, every edge, and the path.
    let view = s.roadmap_view().expect("view");
    assert_eq!(view.tip_link, "tool0");
    assert_eq!(view.vertices.len(), 250);
    assert_eq!(view.edges.len(), built.edges);
    assert!(view.path.len() >= first.path.len());
    let end = view.path.last().expect("path drawn");
    let goal_tool = tool_at(&s, &GOAL);
    assert!((end.coords - goal_tool).norm() < 1e-9);

    // A cube on the path: labels change, the next plan avoids it (re-checked in the new
    // scene), and removing it restores the first path.
    let blocker = tool_at(&s, &first.path[first.path.len() / 2]);
    let blocker = if first.path.len() > 2 {
        blocker
    } else {
        tool_at(&s, &mid())
    };
    s.apply_marker(cube("blocker", 1, blocker, 0.15))
        .expect("cube");
    let stats = s.update_roadmap().expect("update").expect("a roadmap");
    assert!(stats.relabelled > 0, "{stats:?}");
    let around = s.plan(drm(&s)).expect("drm plan around the cube");
    assert_valid(&s, &around.path, &around.trajectory);
    assert_ne!(around.path, first.path);
    let mut gone = cube("blocker", 1, blocker, 0.15);
    gone.action = MarkerAction::Delete;
    s.apply_marker(gone).expect("delete");
    s.update_roadmap().expect("update");
    let back = s.plan(drm(&s)).expect("drm plan after the cube left");
    assert_eq!(back.path, first.path);

    // A changed roadmap_size rebuilds on the next drm request; clear drops it.
    let mut settings = s.settings().clone();
    settings.roadmap_size = 120;
    s.set_settings(settings);
    s.plan(drm(&s)).expect("drm plan on the smaller roadmap");
    assert_eq!(s.roadmap_summary().expect("rebuilt").vertices, 120);
    assert!(s.clear_roadmap());
    assert!(!s.has_roadmap());
    assert!(s.roadmap_view().expect("view").vertices.is_empty());
    let summary = s.rebuild_roadmap().expect("rebuild");
    assert_eq!(summary.vertices, 120);
    assert!(summary.to_string().contains("roadmap of 120 vertices"));
}

/// A goal a hair past a joint limit (URDF limits are rounded, encoders read over) is planned
/// to the limit itself; one clearly past it is refused with an error naming the limits.
#[test]
fn goals_within_the_limit_tolerance_are_snapped_and_farther_ones_refused() {
    let mut s = service();
    let space = s.group().expect("group").space.clone();
    // A wrist joint with finite limits (the last one that is not continuous).
    let j = (3..6)
        .rev()
        .find(|&j| !space.continuous[j])
        .expect("a wrist joint with limits");
    let mut goal = GOAL.to_vec();
    goal[j] = space.upper[j] + 0.5 * gpu_motion_planner::robot::LIMIT_TOLERANCE;
    let res = s
        .plan(request(&s, &START, &goal))
        .expect("plan to the limit");
    let last = &res.trajectory.points[res.trajectory.points.len() - 1].positions;
    assert_eq!(last[j], space.upper[j], "the goal is moved onto the limit");
    assert_valid(&s, &res.path, &res.trajectory);
    goal[j] = space.upper[j] + 0.01;
    let err = s
        .plan(request(&s, &START, &goal))
        .expect_err("1 cm / 0.01 rad past the limit is refused");
    assert!(err.to_string().contains("limits"), "{err}");
}

/// With `backend: auto` (the node's default) the service plans on whatever the machine has:
/// the CPU without a GPU (the roadmap's GPU label engine falling back too), the hybrid backend
/// with one. RRT-Connect plans equal those of `cpu` for a seed; the roadmap planner's are
/// valid.
#[test]
fn backend_auto_plans_like_the_cpu() {
    let mut cpu = service();
    let mut auto = service();
    for s in [&mut cpu, &mut auto] {
        let mut settings = s.settings().clone();
        settings.roadmap_size = 250;
        s.set_settings(settings);
    }
    let mut settings = auto.settings().clone();
    settings.backend = "auto".into();
    auto.set_settings(settings);
    let a = auto.plan(request(&auto, &START, &GOAL)).expect("auto plan");
    let c = cpu.plan(request(&cpu, &START, &GOAL)).expect("cpu plan");
    let want = if gpu_motion_planner::gpu::gpu_available() {
        "hybrid"
    } else {
        "cpu"
    };
    assert_eq!(a.backend, want);
    assert_eq!(a.path, c.path, "the same path for the seed");
    assert_valid(&auto, &a.path, &a.trajectory);
    let drm = ServicePlanRequest {
        planner: Some("drm".into()),
        ..request(&auto, &START, &GOAL)
    };
    let d = auto.plan(drm).expect("drm plan with backend auto");
    assert_eq!(d.stats.roadmap_vertices, 250);
    assert_valid(&auto, &d.path, &d.trajectory);
}

/// `plan_batch`: every request answered in its slot, each as `plan` answers it alone (the
/// same path); a bad request fails alone; a request with other options is planned on its own;
/// the checker is built once for the requests sharing it.
#[test]
fn a_batch_answers_each_request_as_plan_does() {
    let mut s = service();
    let (_, d0, g0) = gpu_motion_planner::cli::demo::DEMO_QUERIES[0];
    let (_, d1, g1) = gpu_motion_planner::cli::demo::DEMO_QUERIES[1];
    let mut bad = request(&s, &START, &GOAL);
    bad.goal.0[0] = "no_such_joint".into();
    let mut other_seed = request(&s, &d1, &g1);
    other_seed.seed = Some(99);
    let reqs = vec![
        request(&s, &START, &GOAL),
        bad,
        request(&s, &d0, &g0),
        other_seed,
        request(&s, &d1, &g1),
    ];
    let builds = s.checker_builds();
    let answers = s.plan_batch(&reqs);
    assert_eq!(answers.len(), reqs.len());
    assert!(
        s.checker_builds() <= builds + 1,
        "one checker for the batch"
    );
    match &answers[1] {
        Err(e) => assert!(e.to_string().contains("no_such_joint"), "{e}"),
        Ok(_) => panic!("a goal with an unknown joint was planned"),
    }
    for i in [0, 2, 3, 4] {
        let got = answers[i].as_ref().expect("planned");
        assert_valid(&s, &got.path, &got.trajectory);
        let alone = s.plan(reqs[i].clone()).expect("planned alone");
        assert_eq!(got.path, alone.path, "request {i}");
        assert_eq!(got.planner, "rrt_connect");
    }
    assert!(s.plan_batch(&[]).is_empty());
}

/// With `shapes: Spheres` the service plans with the robot's sphere model, here one fitted to
/// its collision geometry (`gmp spherize`, the node's `collision_shapes: fitted`): the plan is
/// valid when re-checked with the polytopes the spheres cover. Without a sphere model the
/// request is an error, and the service keeps planning with the polytopes.
#[test]
fn plans_with_a_fitted_sphere_model() {
    use gpu_motion_planner::collision::RobotShapes;
    use gpu_motion_planner::robot::spherize::{fit_robot, SphereFit};
    let (mut robot, scene) = bundled().expect("bundled robot");
    let bare = robot.clone();
    robot.spherized = Some(fit_robot(&robot, &SphereFit::default()));
    let settings = ServiceSettings {
        time_limit: 10.0,
        seed: 7,
        shapes: RobotShapes::Spheres,
        ..ServiceSettings::default()
    };
    // The base stands 5 mm above the table; its fitted spheres, covering the flat underside
    // of its cylinder from outside, reach into the table in every configuration: the service
    // checks the spheres, not the polytopes, which plan this request.
    let mut s = PlanningService::new(robot.clone(), scene.clone(), settings.clone());
    let e = s.plan(request(&s, &START, &GOAL)).unwrap_err();
    assert!(e.to_string().contains("start"), "{e}");
    s.set_settings(ServiceSettings {
        shapes: RobotShapes::Polytopes,
        ..settings.clone()
    });
    s.plan(request(&s, &START, &GOAL))
        .expect("the polytopes clear the table");

    let mut no_table = scene.clone();
    no_table
        .remove("table")
        .expect("the demo scene has a table");
    let mut s = PlanningService::new(robot, no_table, settings.clone());
    let res = s
        .plan(request(&s, &START, &GOAL))
        .expect("plan with fitted spheres");
    assert_valid(&s, &res.path, &res.trajectory);

    let mut none = PlanningService::new(bare, scene, settings);
    let e = none.plan(request(&none, &START, &GOAL)).unwrap_err();
    assert!(e.to_string().contains("sphere model"), "{e}");
    none.set_settings(ServiceSettings {
        shapes: RobotShapes::Polytopes,
        ..none.settings().clone()
    });
    none.plan(request(&none, &START, &GOAL))
        .expect("plan with polytopes");
}

fn pose_request(s: &PlanningService, frame: &str, pose: &Isometry3<f64>) -> ServicePlanRequest {
    let (t, r) = (pose.translation.vector, pose.rotation.coords);
    ServicePlanRequest {
        start: Some((names(s), START.to_vec())),
        goal_pose: Some(ServicePoseGoal {
            frame: frame.into(),
            link: None,
            position: [t.x, t.y, t.z],
            orientation: Some([r.x, r.y, r.z, r.w]),
            position_tolerance: None,
            orientation_tolerance: None,
        }),
        ..Default::default()
    }
}

#[test]
fn plans_to_a_pose_goal_in_the_planning_frame_or_a_link_frame() {
    let mut s = service();
    let target = tool_pose_at(&s, &GOAL);
    let plan = s
        .plan(pose_request(&s, "world", &target))
        .expect("plans to the pose");
    assert_valid(&s, &plan.path, &plan.trajectory);
    let last = &plan.trajectory.points.last().expect("points").positions;
    let reached = tool_pose_at(&s, last);
    assert!((reached.translation.vector - target.translation.vector).norm() <= 1e-4);
    assert!(reached.rotation.angle_to(&target.rotation) <= 1e-3);
    let (link, dp, dr) = plan.pose_error.clone().expect("pose errors reported");
    assert_eq!(link, "tool0");
    assert!(dp <= 1e-4 && dr <= 1e-3);
    // An empty frame is the planning frame: the same plan for the same seed.
    let same = s.plan(pose_request(&s, "", &target)).expect("plans");
    assert_eq!(same.path, plan.path);
    // The answer says what the inverse kinematics did; with ik_time_share near 0 no batch of
    // starts follows the first once a free goal is known (cut short if the search had more).
    let search = plan.ik.expect("pose search reported");
    assert!(search.starts_tried >= 16);
    let settings = s.settings().clone();
    s.set_settings(ServiceSettings {
        ik_time_share: 1e-9,
        ..settings.clone()
    });
    let quick = s.plan(pose_request(&s, "", &target)).expect("plans");
    let quick_search = quick.ik.expect("pose search reported");
    assert_eq!(quick_search.starts_tried, 16);
    assert_eq!(quick_search.cut, search.starts_tried > 16);
    assert!(!search.cut);
    s.set_settings(ServiceSettings {
        ik_time_share: 0.0,
        ..settings.clone()
    });
    let e = s.plan(pose_request(&s, "", &target)).unwrap_err();
    assert!(e.to_string().contains("ik_time_share"), "{e}");
    s.set_settings(settings);

    // The same target given in the frame of a link (where the start state puts it).
    let robot = s.robot();
    let group = s.group().expect("group");
    let state = group.full_state(&robot.tree.neutral_state(), &START);
    let frame_link = "upper_arm_link";
    let f = robot.tree.link(frame_link).expect("link");
    let in_link = robot.tree.forward_kinematics(&state)[f].inverse() * target;
    let plan = s
        .plan(pose_request(&s, frame_link, &in_link))
        .expect("plans from a link frame");
    let last = &plan.trajectory.points.last().expect("points").positions;
    let reached = tool_pose_at(&s, last);
    assert!((reached.translation.vector - target.translation.vector).norm() <= 1e-4);

    // The persistent roadmap answers a pose goal too.
    let mut req = pose_request(&s, "world", &target);
    req.planner = Some("drm".into());
    let plan = s.plan(req).expect("drm plans to the pose");
    assert_eq!(plan.planner, "drm");
    assert_valid(&s, &plan.path, &plan.trajectory);
    let last = &plan.trajectory.points.last().expect("points").positions;
    assert!((tool_pose_at(&s, last).translation.vector - target.translation.vector).norm() <= 1e-4);

    // In a batch, a pose request is answered as plan answers it.
    let batch = s.plan_batch(&[
        request(&s, &START, &GOAL),
        pose_request(&s, "world", &target),
    ]);
    assert!(batch.iter().all(|r| r.is_ok()), "{batch:?}");
}

#[test]
fn bad_pose_goals_are_errors_naming_the_input() {
    let mut s = service();
    let target = tool_pose_at(&s, &GOAL);
    let category = |s: &mut PlanningService, req: ServicePlanRequest| {
        let e = s.plan(req).expect_err("refused");
        (e.category(), e.to_string())
    };
    let req = pose_request(&s, "camera", &target);
    let (c, m) = category(&mut s, req);
    assert_eq!(c, ErrorCategory::InvalidGoal);
    assert!(m.contains("frame 'camera'"), "{m}");

    let mut req = pose_request(&s, "world", &target);
    req.goal = (names(&s), GOAL.to_vec());
    let (c, m) = category(&mut s, req);
    assert_eq!(c, ErrorCategory::InvalidGoal);
    assert!(m.contains("not both"), "{m}");

    let mut req = pose_request(&s, "world", &target);
    if let Some(g) = req.goal_pose.as_mut() {
        g.orientation = Some([0.0; 4]);
    }
    let (c, m) = category(&mut s, req);
    assert_eq!(c, ErrorCategory::InvalidGoal);
    assert!(m.contains("quaternion"), "{m}");

    let mut req = pose_request(&s, "world", &target);
    if let Some(g) = req.goal_pose.as_mut() {
        g.link = Some("gripper".into());
    }
    let (c, m) = category(&mut s, req);
    assert_eq!(c, ErrorCategory::InvalidGoal);
    assert!(m.contains("no link 'gripper'"), "{m}");

    let mut req = pose_request(&s, "world", &target);
    if let Some(g) = req.goal_pose.as_mut() {
        g.position_tolerance = Some(-1.0);
    }
    let (c, m) = category(&mut s, req);
    assert_eq!(c, ErrorCategory::InvalidGoal);
    assert!(m.contains("position tolerance"), "{m}");

    // Out of reach: no inverse kinematics solution.
    let far = Isometry3::translation(3.0, 0.0, 0.5);
    let req = pose_request(&s, "world", &far);
    let (c, m) = category(&mut s, req);
    assert_eq!(c, ErrorCategory::NoIkSolution);
    assert!(m.contains("inverse kinematics"), "{m}");

    // The service keeps planning.
    assert!(s.plan(request(&s, &START, &GOAL)).is_ok());
}

fn cartesian_request(
    s: &PlanningService,
    frame: &str,
    waypoints: &[Isometry3<f64>],
) -> ServiceCartesianRequest {
    ServiceCartesianRequest {
        start: Some((names(s), START.to_vec())),
        frame: frame.into(),
        waypoints: waypoints
            .iter()
            .map(|p| {
                let (t, r) = (p.translation.vector, p.rotation.coords);
                ([t.x, t.y, t.z], [r.x, r.y, r.z, r.w])
            })
            .collect(),
        ..Default::default()
    }
}

#[test]
fn cartesian_paths_follow_lines_in_the_planning_frame_or_a_link_frame() {
    let mut s = service();
    let from = tool_pose_at(&s, &START);
    let down = nalgebra::Translation3::new(0.0, 0.0, -0.1) * from;
    let out = s
        .plan_cartesian(cartesian_request(&s, "world", &[down]))
        .expect("computed");
    assert_eq!(out.fraction, 1.0, "{:?}", out.stop);
    assert_eq!(out.stop, None);
    assert_eq!(out.link, "tool0");
    assert_eq!(out.steps, (10, 10));
    assert_eq!(out.backend, "cpu");
    assert_valid(&s, &out.path, &out.trajectory);
    for q in &out.path {
        let p = tool_pose_at(&s, q).translation.vector;
        // On the vertical line through the start.
        let off = ((p.x - from.translation.x).powi(2) + (p.y - from.translation.y).powi(2)).sqrt();
        assert!(off <= 1e-4, "{off} m off the line");
    }
    let last = tool_pose_at(&s, &out.path[out.path.len() - 1]);
    assert!((last.translation.vector - down.translation.vector).norm() <= 1e-4);
    assert!(s.last_plan().is_some_and(|p| p == out.path.as_slice()));

    // 5 cm along the tool's own z axis, given in the tool frame.
    let along = Isometry3::translation(0.0, 0.0, 0.05);
    let out = s
        .plan_cartesian(cartesian_request(&s, "tool0", &[along]))
        .expect("computed");
    assert_eq!(out.fraction, 1.0, "{:?}", out.stop);
    let last = tool_pose_at(&s, &out.path[out.path.len() - 1]);
    assert!(((from * along).translation.vector - last.translation.vector).norm() <= 1e-4);

    // From the current joint state when no start is given.
    s.set_joint_state(&names(&s), &START).expect("joint state");
    let mut req = cartesian_request(&s, "world", &[down]);
    req.start = None;
    let again = s.plan_cartesian(req).expect("computed");
    assert_eq!(again.fraction, 1.0);
    assert_eq!(again.steps, (10, 10));
}

#[test]
fn a_cartesian_path_into_an_obstacle_ends_before_it() {
    let mut s = service();
    let from = tool_pose_at(&s, &START);
    let down = nalgebra::Translation3::new(0.0, 0.0, -0.25) * from;
    // A 4 cm cube 20 cm below the tool frame.
    let below = from.translation.vector - Vector3::new(0.0, 0.0, 0.2);
    s.apply_marker(cube("blocks", 1, below, 0.04))
        .expect("marker");
    let out = s
        .plan_cartesian(cartesian_request(&s, "world", &[down]))
        .expect("computed");
    assert!(out.fraction < 1.0 && out.fraction > 0.0, "{}", out.fraction);
    let stop = out.stop.clone().expect("a reason");
    assert!(stop.contains("collision"), "{stop}");
    assert_valid(&s, &out.path, &out.trajectory);
    // The tool frame stops above the cube's top.
    let last = tool_pose_at(&s, &out.path[out.path.len() - 1]);
    assert!(
        last.translation.z > below.z + 0.02,
        "{}",
        last.translation.z
    );
}

#[test]
fn bad_cartesian_requests_are_errors_naming_the_input() {
    let mut s = service();
    let from = tool_pose_at(&s, &START);
    let down = nalgebra::Translation3::new(0.0, 0.0, -0.1) * from;
    let refused = |s: &mut PlanningService, req: ServiceCartesianRequest| {
        let e = s.plan_cartesian(req).expect_err("refused");
        (e.category(), e.to_string())
    };
    let req = cartesian_request(&s, "world", &[]);
    let (c, m) = refused(&mut s, req);
    assert_eq!(c, ErrorCategory::InvalidGoal);
    assert!(m.contains("waypoints") && m.contains("at least one"), "{m}");
    let req = cartesian_request(&s, "camera", &[down]);
    let (c, m) = refused(&mut s, req);
    assert_eq!(c, ErrorCategory::InvalidGoal);
    assert!(m.contains("frame 'camera'"), "{m}");
    let mut req = cartesian_request(&s, "world", &[down, down]);
    req.waypoints[1].1 = [0.0; 4];
    let (c, m) = refused(&mut s, req);
    assert_eq!(c, ErrorCategory::InvalidGoal);
    assert!(m.contains("waypoint 1") && m.contains("quaternion"), "{m}");
    let mut req = cartesian_request(&s, "world", &[down]);
    req.link = Some("gripper".into());
    let (_, m) = refused(&mut s, req);
    assert!(m.contains("no link 'gripper'"), "{m}");
    let mut req = cartesian_request(&s, "world", &[down]);
    req.max_step = Some(-0.01);
    let (_, m) = refused(&mut s, req);
    assert!(m.contains("max_step"), "{m}");
    let mut req = cartesian_request(&s, "world", &[down]);
    req.vel_scale = Some(2.0);
    let (_, m) = refused(&mut s, req);
    assert!(m.contains("velocity_scaling"), "{m}");
    let mut req = cartesian_request(&s, "world", &[down]);
    req.group = Some("no_such_group".into());
    let (c, m) = refused(&mut s, req);
    assert_eq!(c, ErrorCategory::InvalidGroup);
    assert!(m.contains("no_such_group"), "{m}");
    let mut req = cartesian_request(&s, "world", &[down]);
    req.start = Some((names(&s), vec![0.0; 2]));
    let (c, _) = refused(&mut s, req);
    assert_eq!(c, ErrorCategory::InvalidStart);
    // Still serving.
    let out = s
        .plan_cartesian(cartesian_request(&s, "world", &[down]))
        .expect("computed");
    assert_eq!(out.fraction, 1.0);
}

#[test]
fn the_gpu_warm_up_builds_the_cuda_side_where_the_backend_uses_a_gpu() {
    let (robot, scene) = bundled().expect("bundled robot");
    let cpu = PlanningService::new(robot.clone(), scene.clone(), ServiceSettings::default());
    assert!(
        cpu.gpu_warm_up().expect("settings").is_none(),
        "cpu: nothing to warm"
    );
    let auto = PlanningService::new(
        robot.clone(),
        scene.clone(),
        ServiceSettings {
            backend: "auto".into(),
            ..ServiceSettings::default()
        },
    );
    let job = auto
        .gpu_warm_up()
        .expect("settings")
        .expect("a job for auto");
    let cuda = PlanningService::new(
        robot,
        scene,
        ServiceSettings {
            backend: "cuda".into(),
            ..ServiceSettings::default()
        },
    );
    let cuda_job = cuda
        .gpu_warm_up()
        .expect("settings")
        .expect("a job for cuda");
    if gpu_motion_planner::gpu::device_count() == 0 {
        eprintln!("SKIP GPU part of the warm-up test: no CUDA device");
        assert_eq!(job.run().expect("auto without a GPU"), None);
        let e = cuda_job.run().expect_err("cuda without a GPU");
        assert!(e.to_string().contains("cuda"), "{e}");
    } else {
        assert!(job.run().expect("auto builds").is_some());
        assert!(cuda_job.run().expect("cuda builds").is_some());
    }
}

/// A request may name the planning group (MoveIt's `group_name`): on the MBM Fetch, whose
/// service plans for `arm` by its setting, a request for `arm_with_torso` raises the torso as
/// the arm moves, and the next one for `arm` (none named) keeps the torso where it is; the
/// roadmap view draws the last path whatever its group. An unknown group is refused by name.
#[test]
fn a_request_plans_for_the_group_it_names() {
    let Some(data) = common::mbm_or_skip("a_request_plans_for_the_group_it_names") else {
        return;
    };
    let fetch = gpu_motion_planner::mbm::load_robot(&data, "fetch").expect("fetch");
    let settings = ServiceSettings {
        planning_group: "arm".into(),
        time_limit: 10.0,
        seed: 3,
        ..ServiceSettings::default()
    };
    let scene = gpu_motion_planner::scene::Scene::new("base_link");
    let mut s = PlanningService::new(fetch.model.clone(), scene.clone(), settings);
    let arm = s.group().expect("arm");
    let torso = s.group_named("arm_with_torso").expect("arm_with_torso");
    assert_eq!(arm.space.dof(), 7);
    assert_eq!(torso.space.dof(), 8);
    let lift = torso
        .space
        .names
        .iter()
        .position(|n| n == "torso_lift_joint")
        .expect("torso_lift_joint in arm_with_torso");
    // From the neutral state: the torso up by 0.2 m, the shoulder turned by 0.8 rad.
    let neutral = fetch.model.tree.neutral_state();
    // Every joint with a variable, named, for the joint states.
    let all: Vec<String> = fetch
        .model
        .tree
        .joints
        .iter()
        .filter(|j| j.variable.is_some())
        .map(|j| j.name.clone())
        .collect();
    let named = |state: &[f64]| -> Vec<f64> {
        fetch
            .model
            .tree
            .joints
            .iter()
            .filter_map(|j| j.variable.map(|v| state[v]))
            .collect()
    };
    s.set_joint_state(&all, &named(&neutral))
        .expect("joint state");
    let mut goal: Vec<f64> = torso.variables.iter().map(|&v| neutral[v]).collect();
    goal[lift] += 0.2;
    let pan = (lift + 1..torso.space.dof())
        .find(|&k| torso.space.names[k] == "shoulder_pan_joint")
        .expect("shoulder_pan_joint");
    goal[pan] += 0.8;
    let req = ServicePlanRequest {
        goal: (torso.space.names.clone(), goal.clone()),
        group: Some("arm_with_torso".into()),
        ..Default::default()
    };
    let res = s.plan(req.clone()).expect("plan for arm_with_torso");
    assert_eq!(res.group, "arm_with_torso");
    assert_eq!(res.trajectory.joint_names, torso.space.names);
    let last = &res.trajectory.points[res.trajectory.points.len() - 1].positions;
    assert!(torso.space.distance(last, &goal) < 1e-9, "{last:?}");
    // Valid for an independent CPU checker of that group.
    let independent = |group: &gpu_motion_planner::robot::PlanningGroup, base: &[f64]| {
        gpu_motion_planner::collision::CpuChecker::new(
            &fetch.model,
            group,
            base,
            &scene,
            gpu_motion_planner::collision::CheckerOptions::default(),
        )
        .expect("checker")
    };
    let checker = independent(&torso, &neutral);
    trajectory::validate_along(&checker, &res.path, &res.trajectory, 0.01).expect("valid");
    s.roadmap_view()
        .expect("the view draws a path of another group");

    // Re-checking that trajectory (as execution does) checks it for the group whose joints
    // it has, unless a request names another; a state check names the limits of the group
    // it names.
    let positions: Vec<Vec<f64>> = res
        .trajectory
        .points
        .iter()
        .map(|p| p.positions.clone())
        .collect();
    let mut check = TrajectoryCheckRequest {
        joint_names: res.trajectory.joint_names.clone(),
        points: positions,
        resolution: None,
        group: None,
    };
    let verdict = s
        .check_trajectory(&check)
        .expect("checked for arm_with_torso");
    assert!(verdict.valid, "{verdict:?}");
    check.group = Some("arm".into());
    let e = s.check_trajectory(&check).unwrap_err().to_string();
    assert!(
        e.contains("'torso_lift_joint' is outside planning group 'arm' and moves"),
        "{e}"
    );
    let mut high = neutral.clone();
    high[torso.variables[lift]] = 5.0;
    let state = |group: Option<&str>| StateCheckRequest {
        state: Some((all.clone(), named(&high))),
        group: group.map(String::from),
    };
    let in_arm = s.check_state(&state(None)).expect("arm");
    assert!(in_arm.out_of_limits.is_empty(), "{in_arm:?}");
    let with_torso = s
        .check_state(&state(Some("arm_with_torso")))
        .expect("arm_with_torso");
    assert!(
        with_torso.out_of_limits.len() == 1
            && with_torso.out_of_limits[0].contains("torso_lift_joint")
            && !with_torso.valid,
        "{with_torso:?}"
    );
    let e = s.check_state(&state(Some("legs"))).unwrap_err();
    assert_eq!(e.category(), ErrorCategory::InvalidGroup, "{e}");

    // The setting's group, from where that plan ended: the torso holds at its new height.
    let mut state = neutral.clone();
    for (k, &v) in torso.variables.iter().enumerate() {
        state[v] = last[k];
    }
    s.set_joint_state(&all, &named(&state))
        .expect("joint state");
    let mut back: Vec<f64> = arm.variables.iter().map(|&v| state[v]).collect();
    back[0] -= 0.8;
    let res = s
        .plan(ServicePlanRequest {
            goal: (arm.space.names.clone(), back),
            ..Default::default()
        })
        .expect("plan for arm");
    assert_eq!(res.group, "arm");
    assert_eq!(res.trajectory.joint_names, arm.space.names);
    // Valid with the torso held up, where the joint state has it (it is not in `arm`).
    let checker = independent(&arm, &state);
    trajectory::validate_along(&checker, &res.path, &res.trajectory, 0.01).expect("valid");
    s.roadmap_view().expect("the view draws the arm's path");

    // IK and a Cartesian path for the group a request names: the gripper where the torso
    // plan left it, solved with the torso from the neutral state, and 5 cm up from there.
    let gripper = fetch.model.tree.link("gripper_link").expect("gripper_link");
    let at = fetch.model.tree.forward_kinematics(&state)[gripper];
    let q = at.rotation.quaternion();
    let pose_goal = ServicePoseGoal {
        frame: String::new(),
        link: Some("gripper_link".into()),
        position: at.translation.vector.into(),
        orientation: Some([q.i, q.j, q.k, q.w]),
        position_tolerance: None,
        orientation_tolerance: None,
    };
    let answer = s
        .compute_ik(&gpu_motion_planner::service::IkRequest {
            seed_state: Some((all.clone(), named(&neutral))),
            goal: pose_goal.clone(),
            avoid_collisions: true,
            attempts: None,
            seed: Some(5),
            group: Some("arm_with_torso".into()),
            timeout: None,
        })
        .expect("ik for arm_with_torso");
    assert_eq!(answer.joint_names, torso.space.names);
    assert!(
        answer.errors.0 < 1e-3 && answer.errors.1 < 1e-2,
        "{:?}",
        answer.errors
    );
    let up = nalgebra::Translation3::new(0.0, 0.0, 0.05) * at;
    let q = up.rotation.quaternion();
    let line = s
        .plan_cartesian(ServiceCartesianRequest {
            link: Some("gripper_link".into()),
            waypoints: vec![(up.translation.vector.into(), [q.i, q.j, q.k, q.w])],
            group: Some("arm_with_torso".into()),
            ..Default::default()
        })
        .expect("cartesian for arm_with_torso");
    assert_eq!(line.trajectory.joint_names, torso.space.names);
    assert!(line.fraction > 0.0, "{:?}", line.stop);

    // A trajectory's joints name its group (for replanning a given trajectory): none for
    // the setting's group, in any order.
    let mut shuffled = torso.space.names.clone();
    shuffled.reverse();
    assert_eq!(
        s.group_of_joints(&shuffled).as_deref(),
        Some("arm_with_torso")
    );
    assert_eq!(s.group_of_joints(&arm.space.names), None);
    assert_eq!(s.group_of_joints(&shuffled[..3]), None);

    let unknown = s
        .plan(ServicePlanRequest {
            group: Some("no_such_group".into()),
            ..req.clone()
        })
        .expect_err("unknown group");
    assert_eq!(unknown.category(), ErrorCategory::InvalidGroup);
    assert!(unknown.to_string().contains("no_such_group"), "{unknown}");
}

/// `drm` keeps a roadmap per planning group it plans for (the bundled arm with four more
/// groups of its joints): each plan is re-checked; the setting's group's roadmap is the one
/// summarised and drawn whatever was used last; obstacle changes relabel every roadmap;
/// a fifth group's roadmap replaces the one used longest ago; clearing drops them all.
#[test]
fn drm_keeps_a_roadmap_per_planning_group() {
    let (bundled_robot, _) = bundled().expect("bundled");
    // No obstacles but the cube put in below.
    let scene = gpu_motion_planner::scene::Scene::new("world");
    let urdf = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/urdf/gmp_arm.urdf"))
        .expect("urdf");
    let srdf = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/urdf/gmp_arm.srdf"))
        .expect("srdf");
    let joints = |names: &[&str]| -> String {
        names
            .iter()
            .map(|n| format!("<joint name=\"{n}\"/>"))
            .collect()
    };
    let groups = [
        (
            "wrist",
            vec!["wrist_1_joint", "wrist_2_joint", "wrist_3_joint"],
        ),
        (
            "elbow_wrist",
            vec!["elbow_joint", "wrist_1_joint", "wrist_2_joint"],
        ),
        (
            "shoulder",
            vec!["shoulder_pan_joint", "shoulder_lift_joint"],
        ),
        (
            "upper",
            vec!["shoulder_pan_joint", "shoulder_lift_joint", "elbow_joint"],
        ),
    ];
    let extra: String = groups
        .iter()
        .map(|(g, j)| format!("<group name=\"{g}\">{}</group>", joints(j)))
        .collect();
    let srdf = srdf.replace(
        "<group_state name=\"home\"",
        &format!("{extra}<group_state name=\"home\""),
    );
    let robot = gpu_motion_planner::robot::RobotModel::from_urdf_str(
        &urdf,
        None,
        Some(&srdf),
        &gpu_motion_planner::robot::LoadOptions::default(),
    )
    .expect("robot with more groups");
    assert_eq!(robot.tree.variable_names, bundled_robot.tree.variable_names);
    let settings = ServiceSettings {
        time_limit: 10.0,
        seed: 7,
        roadmap_size: 80,
        planner: "drm".into(),
        ..ServiceSettings::default()
    };
    let mut s = PlanningService::new(robot, scene, settings);
    let all = names(&s);
    s.set_joint_state(&all, &START).expect("joint state");
    // A goal for `group`: START with its joints moved by `by`.
    let plan_for = |s: &mut PlanningService, group: &str, by: f64| {
        let g = s.group_named(group).expect("group");
        let goal: Vec<f64> = g
            .space
            .names
            .iter()
            .map(|n| START[all.iter().position(|a| a == n).expect("joint")] + by)
            .collect();
        let res = s
            .plan(ServicePlanRequest {
                goal: (g.space.names.clone(), goal),
                group: Some(group.into()),
                ..Default::default()
            })
            .unwrap_or_else(|e| panic!("drm plan for {group}: {e}"));
        assert_eq!(res.planner, "drm");
        assert_eq!(res.group, group);
        // Re-checked for that group over START by an independent CPU checker.
        let checker = gpu_motion_planner::collision::CpuChecker::new(
            s.robot(),
            &g,
            &g.full_state(&s.robot().tree.neutral_state(), &START),
            s.scene(),
            gpu_motion_planner::collision::CheckerOptions::default(),
        )
        .expect("checker");
        trajectory::validate_along(&checker, &res.path, &res.trajectory, 0.01)
            .expect("valid for its group");
        res
    };
    plan_for(&mut s, "arm", 0.3);
    let arm_build = s.roadmap_summary().expect("arm roadmap").build_time;
    plan_for(&mut s, "wrist", 0.5);
    assert_eq!(
        s.roadmap_groups(),
        vec!["arm".to_string(), "wrist".to_string()]
    );
    // The setting's group's roadmap is summarised and drawn, though the wrist's was used last.
    assert_eq!(s.roadmap_summary().expect("shown").build_time, arm_build);
    assert_eq!(s.roadmap_view().expect("view").tip_link, "tool0");
    assert_eq!(s.roadmap_view().expect("view").vertices.len(), 80);
    // The arm's roadmap is used again as it was built.
    plan_for(&mut s, "arm", -0.2);
    assert_eq!(s.roadmap_summary().expect("kept").build_time, arm_build);
    assert_eq!(
        s.roadmap_groups(),
        vec!["wrist".to_string(), "arm".to_string()]
    );
    // An obstacle change relabels both.
    s.apply_marker(cube(
        "c",
        1,
        tool_at(&s, &START) + Vector3::new(0.0, 0.0, 0.3),
        0.1,
    ))
    .expect("cube");
    let stats = s.update_roadmap().expect("update").expect("roadmaps");
    assert!(stats.slots >= 2, "one slot per roadmap: {stats:?}");
    // Three more groups: the wrist's roadmap, used longest ago, goes.
    for g in ["elbow_wrist", "shoulder", "upper"] {
        plan_for(&mut s, g, 0.2);
    }
    assert_eq!(
        s.roadmap_groups(),
        vec![
            "arm".to_string(),
            "elbow_wrist".into(),
            "shoulder".into(),
            "upper".into()
        ]
    );
    assert_eq!(
        s.roadmap_summary().expect("arm's kept").build_time,
        arm_build
    );
    // rebuild_roadmap rebuilds the setting's group's only; clear drops them all.
    s.rebuild_roadmap().expect("rebuild");
    assert_eq!(s.roadmap_groups().len(), 4);
    assert!(s.clear_roadmap());
    assert!(!s.has_roadmap() && s.roadmap_groups().is_empty());
}

#[test]
fn plans_to_named_states_of_the_srdf() {
    let mut s = service();
    assert_eq!(s.named_states(None).unwrap(), vec!["home", "ready"]);
    for (name, at) in [("home", [0.0; 6]), ("ready", GOAL)] {
        let req = ServicePlanRequest {
            start: Some((names(&s), START.to_vec())),
            goal_name: Some(name.into()),
            ..Default::default()
        };
        let res = s.plan(req).expect("plan to a named state");
        let last = &res.trajectory.points.last().expect("points").positions;
        for j in 0..6 {
            assert!((last[j] - at[j]).abs() < 1e-9, "{name}: {last:?}");
        }
        assert_valid(&s, &res.path, &res.trajectory);
    }
    // An unknown name is refused listing the group's names; a name with another goal too.
    let unknown = ServicePlanRequest {
        start: Some((names(&s), START.to_vec())),
        goal_name: Some("nowhere".into()),
        ..Default::default()
    };
    let e = s.plan(unknown.clone()).unwrap_err();
    assert_eq!(e.category(), ErrorCategory::InvalidGoal);
    let text = e.to_string();
    assert!(
        text.contains("'nowhere'") && text.contains("home, ready"),
        "{text}"
    );
    let both = ServicePlanRequest {
        goal: (names(&s), GOAL.to_vec()),
        goal_name: Some("home".into()),
        ..unknown.clone()
    };
    let e = s.plan(both).unwrap_err();
    assert!(e.to_string().contains("give one goal"), "{e}");
    let e = s.named_states(Some("no_group")).unwrap_err();
    assert!(e.to_string().contains("no_group"), "{e}");
    // Replanning keeps the configuration reached, not the name.
    let again = unknown.replan_to(&names(&s), &GOAL);
    assert_eq!(again.goal_name, None);
    // An empty name is no name.
    let empty = ServicePlanRequest {
        goal_name: Some(String::new()),
        ..request(&s, &START, &GOAL)
    };
    assert!(s.plan(empty).is_ok());
}

/// A named state that leaves a joint of the group out has no configuration of its own.
#[test]
fn a_named_state_missing_a_joint_is_named() {
    let (mut robot, _) = bundled().expect("bundled robot");
    let srdf = robot.srdf.as_mut().expect("srdf");
    let key = ("arm".to_string(), "home".to_string());
    srdf.group_states
        .get_mut(&key)
        .expect("home")
        .remove("elbow_joint");
    let group = robot.group("arm").expect("arm");
    let e = robot.named_config(&group, "home").unwrap_err();
    assert!(e.contains("gives no value for joint 'elbow_joint'"), "{e}");
    assert_eq!(robot.named_config(&group, "ready").unwrap(), GOAL.to_vec());
}

/// Plans START to GOAL with planner id `id`.
fn plan_with(s: &mut PlanningService, id: &str) -> Result<ServicePlanResponse, ServiceError> {
    s.plan(ServicePlanRequest {
        planner: Some(id.into()),
        ..request(s, &START, &GOAL)
    })
}

/// MoveIt clients name OMPL planners (`RRTConnectkConfigDefault`, the RViz panel's list):
/// those the node has plan as its own, reported by its name; others are refused by name.
#[test]
fn ompl_planner_ids_plan_with_the_planner_of_that_kind() {
    let mut s = service();
    for (id, planner) in [
        ("RRTConnectkConfigDefault", "rrt_connect"),
        ("RRTkConfigDefault", "rrt"),
        ("PRM", "prm"),
    ] {
        let res = plan_with(&mut s, id).unwrap_or_else(|e| panic!("{id}: {e}"));
        assert_eq!(res.planner, planner, "{id}");
        assert_valid(&s, &res.path, &res.trajectory);
    }
    let e = plan_with(&mut s, "KPIECEkConfigDefault")
        .unwrap_err()
        .to_string();
    assert!(e.contains("'KPIECEkConfigDefault'"), "{e}");
}

/// A robot with an `ompl_planning.yaml` (a MoveIt config's): a request naming no planner gets
/// the group's default configuration, a planner id naming a configuration plans with it and
/// its settings, a type not planned here is refused by name, the group's segment fraction
/// checks motions more finely, and `ompl_planning: false` leaves the file aside.
#[test]
fn ompl_planning_yaml_chooses_planner_settings_and_a_finer_step() {
    let (mut robot, scene) = bundled().expect("bundled robot");
    robot.ompl = OmplPlanning::parse(
        "planner_configs:
  Roadmap: {type: geometric::PRM, max_nearest_neighbors: 5}
  Short: {type: geometric::RRTConnect, range: 0.3}
  KPIECEkConfigDefault: {type: geometric::KPIECE1}
arm:
  default_planner_config: Roadmap
  longest_valid_segment_fraction: 0.0001
",
        "ompl_planning.yaml",
    )
    .unwrap();
    let settings = ServiceSettings {
        time_limit: 10.0,
        seed: 7,
        ..ServiceSettings::default()
    };
    let mut s = PlanningService::new(robot, scene, settings.clone());
    let res = s.plan(request(&s, &START, &GOAL)).unwrap();
    assert_eq!(res.planner, "prm");
    assert_eq!(res.planner_config.as_deref(), Some("Roadmap"));
    assert_valid(&s, &res.path, &res.trajectory);
    let res = plan_with(&mut s, "Short").unwrap();
    assert_eq!(
        (res.planner.as_str(), res.planner_config.as_deref()),
        ("rrt_connect", Some("Short"))
    );
    assert_valid(&s, &res.path, &res.trajectory);
    let e = plan_with(&mut s, "KPIECEkConfigDefault")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("planner_id")
            && e.contains("geometric::KPIECE1")
            && e.contains("ompl_planning.yaml"),
        "{e}"
    );
    // The same rrt_connect request with the file and without it: the fraction's step (about
    // 0.0015 rad on this arm, against resolution 0.01) checks many more configurations.
    let rrtc = ServicePlanRequest {
        planner: Some("rrt_connect".into()),
        ..request(&s, &START, &GOAL)
    };
    let fine = s.plan(rrtc.clone()).unwrap();
    assert_eq!(fine.planner_config, None);
    // Trajectory checks (what ~/execute checks against) use that step too.
    let traj = TrajectoryCheckRequest {
        joint_names: names(&s),
        points: vec![START.to_vec(), GOAL.to_vec()],
        ..Default::default()
    };
    let step = s.check_trajectory(&traj).unwrap().resolution;
    assert!(step < 0.005, "{step}");
    s.set_settings(ServiceSettings {
        ompl_planning: false,
        ..settings
    });
    assert_eq!(s.check_trajectory(&traj).unwrap().resolution, 0.01);
    let coarse = s.plan(rrtc).unwrap();
    assert!(
        fine.stats.collision_checks > 2 * coarse.stats.collision_checks,
        "{} vs {}",
        fine.stats.collision_checks,
        coarse.stats.collision_checks
    );
    // Without the file, the `planner` setting again.
    let res = s.plan(request(&s, &START, &GOAL)).unwrap();
    assert_eq!(
        (res.planner.as_str(), res.planner_config),
        ("rrt_connect", None)
    );
}

/// The highest speed of `tool0` along `traj` by positions alone (poses 0.1 ms apart).
fn tool_peak_speed(s: &PlanningService, traj: &trajectory::Trajectory) -> f64 {
    let dt = 1e-4;
    let steps = (traj.duration() / dt).ceil() as usize;
    let at = |t: f64| tool_at(s, &traj.sample(t).0);
    (0..steps)
        .map(|i| (at((i + 1) as f64 * dt) - at(i as f64 * dt)).norm() / dt)
        .fold(0.0, f64::max)
}

/// Every point within the group's joint velocity and acceleration limits (a hair of rounding).
fn within_joint_limits(s: &PlanningService, traj: &trajectory::Trajectory) {
    let space = s.group().expect("group").space;
    for p in &traj.points {
        for j in 0..space.dof() {
            assert!(
                p.velocities[j].abs() <= space.max_velocity[j] * (1.0 + 1e-9),
                "{p:?}"
            );
            assert!(
                p.accelerations[j].abs() <= space.max_acceleration[j] * (1.0 + 1e-9),
                "{p:?}"
            );
        }
    }
}

/// A Cartesian speed limit (MoveIt's `max_cartesian_speed`) slows the plan until the link
/// moves no faster, on the same path, timed again with the segment's speed capped (quicker
/// than stretching every time); plans within it are unchanged; a bad speed or link is
/// refused by name; a Cartesian path's moved link is limited too.
#[test]
fn a_cartesian_speed_limit_slows_the_link_on_the_same_path() {
    let mut s = service();
    let free = s.plan(request(&s, &START, &GOAL)).unwrap();
    let free_peak = tool_peak_speed(&s, &free.trajectory);
    assert!(free.link_speed.is_none());
    let limit = free_peak / 3.0;
    let slow = s
        .plan(ServicePlanRequest {
            speed_limit: Some(SpeedLimit {
                link: None,
                max_speed: limit,
            }),
            ..request(&s, &START, &GOAL)
        })
        .unwrap();
    let ls = slow.link_speed.clone().expect("reported");
    assert_eq!(ls.link, "tool0");
    let peak = tool_peak_speed(&s, &slow.trajectory);
    assert!(peak <= limit * (1.0 + 1e-4), "{peak} m/s over {limit}");
    assert_eq!(slow.path, free.path);
    // Timed again along the path: its accelerations stay at the joints' limits where
    // stretching every time would cut them ninefold, so it takes less than three times as
    // long.
    assert!(ls.retimed, "{ls:?}");
    assert!(ls.factor > 1.0 && ls.factor < 3.0, "{ls:?}");
    assert_eq!(
        ls.duration,
        (free.trajectory.duration(), slow.trajectory.duration())
    );
    assert!((slow.trajectory.duration() - ls.factor * free.trajectory.duration()).abs() < 1e-9);
    assert_valid(&s, &slow.path, &slow.trajectory);
    within_joint_limits(&s, &slow.trajectory);
    // A limit above the plan's speed changes nothing; another link can be named.
    let same = s
        .plan(ServicePlanRequest {
            speed_limit: Some(SpeedLimit {
                link: Some("wrist_2_link".into()),
                max_speed: 100.0,
            }),
            ..request(&s, &START, &GOAL)
        })
        .unwrap();
    assert_eq!(same.trajectory, free.trajectory);
    assert_eq!(
        same.link_speed.map(|l| (l.link, l.factor)),
        Some(("wrist_2_link".into(), 1.0))
    );
    for (limit, want) in [
        (
            SpeedLimit {
                link: None,
                max_speed: 0.0,
            },
            "max_cartesian_speed",
        ),
        (
            SpeedLimit {
                link: None,
                max_speed: f64::NAN,
            },
            "max_cartesian_speed",
        ),
        (
            SpeedLimit {
                link: Some("nope".into()),
                max_speed: 0.1,
            },
            "'nope'",
        ),
    ] {
        let e = s
            .plan(ServicePlanRequest {
                speed_limit: Some(limit),
                ..request(&s, &START, &GOAL)
            })
            .unwrap_err()
            .to_string();
        assert!(e.contains(want), "{e}");
    }
    // A Cartesian path: 10 cm down at most 2 cm/s.
    let from = tool_pose_at(&s, &START);
    let down = nalgebra::Translation3::new(0.0, 0.0, -0.1) * from;
    let mut req = cartesian_request(&s, "world", &[down]);
    req.speed_limit = Some(SpeedLimit {
        link: None,
        max_speed: 0.02,
    });
    let out = s.plan_cartesian(req).unwrap();
    assert_eq!(out.fraction, 1.0);
    let ls = out.link_speed.expect("reported");
    assert_eq!(ls.link, "tool0");
    let peak = tool_peak_speed(&s, &out.trajectory);
    assert!(peak <= 0.02 * (1.0 + 1e-4) && peak > 0.015, "{peak}");
    within_joint_limits(&s, &out.trajectory);
    // 10 cm at 2 cm/s takes at least 5 s.
    assert!(
        out.trajectory.duration() >= 5.0,
        "{}",
        out.trajectory.duration()
    );
}

/// Under a link speed limit, a path is timed again with each segment's speed capped: a
/// segment that swings the tool is slowed, one that only turns the wrist keeps its timing,
/// and the whole takes less than stretching every time would.
#[test]
fn only_the_segments_too_fast_for_a_link_speed_limit_are_slowed() {
    let s = service();
    let robot = s.robot();
    let group = s.group().expect("group");
    let base = robot.tree.neutral_state();
    let checker = cpu_checker(&s);
    let tool = robot.tree.link("tool0").unwrap();
    let mut swung = START.to_vec();
    swung[0] += 1.0;
    let mut turned = swung.clone();
    turned[5] += 1.5;
    let path = vec![START.to_vec(), swung.clone(), turned];
    let timing = trajectory::PathTiming::Stops {
        vel_scale: 1.0,
        acc_scale: 1.0,
        sample_dt: 0.01,
    };
    let free = timing.time(&group.space, &path, None).unwrap();
    trajectory::validate_along(&checker, &path, &free, 0.01).expect("free path");
    // When each trajectory reaches the middle waypoint, and how long it then takes.
    let at_middle = |t: &trajectory::Trajectory| {
        let p = t
            .points
            .iter()
            .find(|p| p.positions == swung)
            .expect("reaches it");
        (p.time_from_start, t.duration() - p.time_from_start)
    };
    let free_peak = tool_peak_speed(&s, &free);
    let limit = free_peak / 2.0;
    let tool_limit = trajectory::LinkLimit::speed(tool, "tool0", limit);
    let mut slow = free.clone();
    let along = trajectory::Along {
        checker: &checker,
        path: &path,
        timing,
        resolution: 0.01,
    };
    let ls = trajectory::limit_link_speed(
        &mut slow,
        &robot.tree,
        &group,
        &base,
        &tool_limit,
        Some(&along),
    );
    // At most a hair of uniform stretch for what passes the caps between their sub-steps.
    assert!(ls.retimed && ls.stretch < 1.001, "{ls:?}");
    let ((swing, turn), (slow_swing, slow_turn)) = (at_middle(&free), at_middle(&slow));
    assert!(slow_swing > swing * 1.2, "{swing} -> {slow_swing}");
    assert!(
        (slow_turn - turn * ls.stretch).abs() < 1e-9,
        "{turn} -> {slow_turn}"
    );
    assert!(ls.factor < 2.0, "{ls:?}");
    let peak = tool_peak_speed(&s, &slow);
    assert!(peak <= limit * (1.0 + 1e-4), "{peak} m/s over {limit}");
    trajectory::validate_along(&checker, &path, &slow, 0.01).expect("valid");
    within_joint_limits(&s, &slow);
    // Without the path, every time is stretched: the turn too.
    let mut uniform = free.clone();
    let lu =
        trajectory::limit_link_speed(&mut uniform, &robot.tree, &group, &base, &tool_limit, None);
    assert!(
        !lu.retimed && lu.stretch > 2.0 && lu.factor == lu.stretch,
        "{lu:?}"
    );
    assert!(uniform.duration() > slow.duration());
    assert!(at_middle(&uniform).1 > turn * 2.0);
}

/// The service on the bundled robot given the Pilz Cartesian limits `yaml`, seed 7.
fn pilz_service(yaml: &str) -> PlanningService {
    let (mut robot, scene) = bundled().expect("bundled robot");
    robot.cartesian_limits =
        Some(CartesianLimits::parse(yaml, "pilz_cartesian_limits.yaml").unwrap());
    PlanningService::new(
        robot,
        scene,
        ServiceSettings {
            seed: 7,
            ..ServiceSettings::default()
        },
    )
}

/// A robot with Pilz Cartesian limits (a MoveIt config's `pilz_cartesian_limits.yaml`): its
/// Cartesian paths keep them, scaled by the velocity scaling, the angular one too; its
/// joint-space plans do not.
#[test]
fn pilz_cartesian_limits_bound_cartesian_paths() {
    let mut s = pilz_service("cartesian_limits:\n  max_trans_vel: 0.04\n  max_rot_vel: 0.2\n");
    let from = tool_pose_at(&s, &START);
    let down = nalgebra::Translation3::new(0.0, 0.0, -0.1) * from;
    let mut req = cartesian_request(&s, "world", &[down]);
    req.vel_scale = Some(0.5);
    let out = s.plan_cartesian(req.clone()).unwrap();
    let ls = out.link_speed.clone().expect("limited");
    assert_eq!(
        (ls.link.as_str(), ls.limit, ls.angular_limit),
        ("tool0", 0.02, Some(0.1))
    );
    let peak = tool_peak_speed(&s, &out.trajectory);
    assert!(peak <= 0.02 * (1.0 + 1e-4) && peak > 0.015, "{peak}");
    within_joint_limits(&s, &out.trajectory);
    // A turn about the tool's own axis: the angular limit binds (0.5 rad at 0.1 rad/s).
    let turn = Isometry3::from_parts(
        nalgebra::Translation3::identity(),
        nalgebra::UnitQuaternion::from_euler_angles(0.0, 0.0, 0.5),
    );
    let mut req = cartesian_request(&s, "tool0", &[turn]);
    req.vel_scale = Some(0.5);
    let out = s.plan_cartesian(req).unwrap();
    assert_eq!(out.fraction, 1.0, "{:?}", out.stop);
    let ls = out.link_speed.expect("limited");
    assert!(ls.angular_peak.1 <= 0.1 && ls.factor > 1.0, "{ls:?}");
    assert!(
        out.trajectory.duration() >= 5.0,
        "{}",
        out.trajectory.duration()
    );
    // A request's own speed replaces max_trans_vel; plans in joint space are not limited.
    let mut req = cartesian_request(&s, "world", &[down]);
    req.speed_limit = Some(SpeedLimit {
        link: None,
        max_speed: 0.01,
    });
    let ls = s.plan_cartesian(req).unwrap().link_speed.expect("limited");
    assert_eq!((ls.limit, ls.angular_limit), (0.01, Some(0.2)));
    assert!(s
        .plan(request(&s, &START, &GOAL))
        .unwrap()
        .link_speed
        .is_none());
}

/// The tool's largest distance from the straight line `a`-`b` along `traj`, sampled every
/// millisecond.
fn tool_off_line(
    s: &PlanningService,
    traj: &trajectory::Trajectory,
    a: &Vector3<f64>,
    b: &Vector3<f64>,
) -> f64 {
    let dir = (b - a).normalize();
    let steps = (traj.duration() / 1e-3).ceil() as usize;
    (0..=steps)
        .map(|i| {
            let p = tool_at(s, &traj.sample(i as f64 * 1e-3).0) - a;
            (p - dir * p.dot(&dir)).norm()
        })
        .fold(0.0, f64::max)
}

/// The tool's largest acceleration along `traj`: second differences of its position 1 ms
/// apart.
fn tool_peak_acceleration(s: &PlanningService, traj: &trajectory::Trajectory) -> f64 {
    let dt = 1e-3;
    let at = |t: f64| tool_at(s, &traj.sample(t).0);
    let steps = (traj.duration() / dt).ceil() as usize;
    (1..steps)
        .map(|i| {
            let t = i as f64 * dt;
            (at(t + dt) - 2.0 * at(t) + at(t - dt)).norm() / (dt * dt)
        })
        .fold(0.0, f64::max)
}

/// Pilz's PTP (`planner_id` "PTP"): the straight joint motion, or a refusal naming the
/// collision where a sampling planner goes around.
#[test]
fn ptp_moves_straight_in_joint_space_or_refuses() {
    let mut s = service();
    let base = request(&s, &START, &GOAL);
    let with = |planner: &str| ServicePlanRequest {
        planner: Some(planner.into()),
        ..base.clone()
    };
    let ptp = s.plan(with("PTP")).unwrap();
    assert_eq!(ptp.planner, "ptp");
    assert_eq!(ptp.path, vec![START.to_vec(), GOAL.to_vec()]);
    assert_valid(&s, &ptp.path, &ptp.trajectory);
    within_joint_limits(&s, &ptp.trajectory);
    // An obstacle where the tool passes halfway.
    let middle: Vec<f64> = START
        .iter()
        .zip(&GOAL)
        .map(|(a, b)| 0.5 * (a + b))
        .collect();
    let halfway = tool_at(&s, &middle);
    place(&mut s, "wall", 0, MarkerKind::Cube, halfway, 0.2);
    let e = s.plan(with("PTP")).unwrap_err();
    assert!(
        e.to_string()
            .contains("ptp: the straight joint motion from start to goal collides"),
        "{e}"
    );
    assert_eq!(e.category(), ErrorCategory::PlanningFailed);
    let around = s.plan(with("rrt_connect")).expect("a detour");
    assert!(around.path.len() > 2);
    // CIRC needs its circle's point.
    let e = s.plan(with("CIRC")).unwrap_err().to_string();
    assert!(e.contains("CIRC: give the circle's point"), "{e}");
}

/// Pilz's LIN (`planner_id` "LIN"): the tool along a straight line to a pose goal, or to a
/// joint goal's pose when the line ends in that configuration; the robot's Pilz limits bound
/// its speed and acceleration; a blocked line is refused.
#[test]
fn lin_moves_the_tool_along_a_straight_line() {
    let mut s = pilz_service(
        "cartesian_limits:\n  max_trans_vel: 0.2\n  max_trans_acc: 0.5\n  \
         max_trans_dec: -1.0\n  max_rot_vel: 1.0\n",
    );
    let from = tool_pose_at(&s, &START);
    let to = nalgebra::Translation3::new(0.05, 0.0, -0.15) * from;
    let lin = s
        .plan(ServicePlanRequest {
            planner: Some("LIN".into()),
            ..pose_request(&s, "world", &to)
        })
        .unwrap();
    assert_eq!(lin.planner, "lin");
    let (a, b) = (from.translation.vector, to.translation.vector);
    let off = tool_off_line(&s, &lin.trajectory, &a, &b);
    assert!(off < 2e-3, "{off} m off the line");
    let end = lin.path.last().unwrap().clone();
    assert!((tool_at(&s, &end) - b).norm() < 1e-3);
    assert_valid(&s, &lin.path, &lin.trajectory);
    within_joint_limits(&s, &lin.trajectory);
    // The Pilz limits: 0.2 m/s and 0.5 m/s² (the smaller of acceleration and deceleration).
    let ls = lin.link_speed.clone().expect("limited");
    assert_eq!(
        (ls.limit, ls.acceleration_limit),
        (0.2, Some(0.5)),
        "{ls:?}"
    );
    let peak = tool_peak_speed(&s, &lin.trajectory);
    assert!(peak <= 0.2 * (1.0 + 1e-3), "{peak} m/s");
    let acc = tool_peak_acceleration(&s, &lin.trajectory);
    assert!(acc <= 0.5 * 1.05, "{acc} m/s²");
    // 15.8 cm from rest to rest at 0.5 m/s² takes at least 2 sqrt(d / a).
    let d = (b - a).norm();
    assert!(lin.trajectory.duration() >= 2.0 * (d / 0.5).sqrt());

    // A joint goal: the line to its pose, ending in it.
    let joint = s
        .plan(ServicePlanRequest {
            planner: Some("LIN".into()),
            ..request(&s, &START, &end)
        })
        .unwrap();
    let last = joint.path.last().unwrap();
    assert!(last.iter().zip(&end).all(|(x, y)| (x - y).abs() < 1e-3));
    assert!(tool_off_line(&s, &joint.trajectory, &a, &b) < 2e-3);

    // A box on the line: refused, where a sampling planner goes around.
    place(&mut s, "box", 0, MarkerKind::Cube, a.lerp(&b, 0.8), 0.02);
    let e = s
        .plan(ServicePlanRequest {
            planner: Some("LIN".into()),
            ..pose_request(&s, "world", &to)
        })
        .unwrap_err();
    assert!(
        e.to_string().contains("lin: the straight line stops at"),
        "{e}"
    );
    assert_eq!(e.category(), ErrorCategory::PlanningFailed);
}

/// Path constraints that carry a CIRC motion's circle point, as MoveIt passes it.
fn circ_constraints(name: &str, point: Vector3<f64>) -> ConstraintSpec {
    ConstraintSpec {
        name: name.into(),
        position: vec![PositionSpec {
            frame: "world".into(),
            link: "tool0".into(),
            offset: [0.0; 3],
            position: point.into(),
            orientation: [0.0, 0.0, 0.0, 1.0],
            size: [1e-3; 3],
        }],
        ..ConstraintSpec::default()
    }
}

/// Pilz's CIRC (`planner_id` "CIRC", the circle's point a path constraint named `interim` or
/// `center`): the tool along a quarter circle, on the circle all the way by the test's own
/// kinematics; bad circle points are refused by name.
#[test]
fn circ_moves_the_tool_along_an_arc() {
    let mut s = service();
    let from = tool_pose_at(&s, &START);
    let a = from.translation.vector;
    // A quarter circle of radius 8 cm in the vertical plane through the tool, centre below it.
    let r = 0.08;
    let c = a - Vector3::z() * r;
    let at = |t: f64| c + (Vector3::z() * t.cos() + Vector3::x() * t.sin()) * r;
    let to = Isometry3::from_parts(
        nalgebra::Translation3::from(at(std::f64::consts::FRAC_PI_2)),
        from.rotation,
    );
    let interim = at(std::f64::consts::FRAC_PI_4);
    for (name, point) in [("interim", interim), ("center", c)] {
        let out = s
            .plan(ServicePlanRequest {
                planner: Some("CIRC".into()),
                path_constraints: circ_constraints(name, point),
                ..pose_request(&s, "world", &to)
            })
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(out.planner, "circ");
        let traj = &out.trajectory;
        let steps = (traj.duration() / 1e-3).ceil() as usize;
        let (mut off, mut nearest) = (0.0f64, f64::INFINITY);
        for i in 0..=steps {
            let p = tool_at(&s, &traj.sample(i as f64 * 1e-3).0);
            off = off.max(((p - c).norm() - r).abs());
            nearest = nearest.min((p - interim).norm());
        }
        assert!(off < 2e-3, "{name}: {off} m off the circle");
        assert!(nearest < 2e-3, "{name}: {nearest} m from the interim point");
        assert!((tool_at(&s, out.path.last().unwrap()) - to.translation.vector).norm() < 1e-3);
        assert_valid(&s, &out.path, traj);
        within_joint_limits(&s, traj);
    }
    for (spec, want) in [
        (
            circ_constraints("middle", interim),
            "named 'center' or 'interim'",
        ),
        (
            ConstraintSpec {
                name: "interim".into(),
                ..ConstraintSpec::default()
            },
            "got 0 position constraints",
        ),
        (
            circ_constraints("interim", a.lerp(&to.translation.vector, 0.5)),
            "on one line",
        ),
        (
            circ_constraints("center", c + Vector3::x() * 0.02),
            "from the centre",
        ),
    ] {
        let e = s
            .plan(ServicePlanRequest {
                planner: Some("CIRC".into()),
                path_constraints: spec,
                ..pose_request(&s, "world", &to)
            })
            .unwrap_err()
            .to_string();
        assert!(e.contains(want), "{e}");
    }
}

/// A group's `position_only_ik` in the robot's `kinematics.yaml` leaves the orientation of
/// its pose goals free: `~/compute_ik` puts the tool at the position, its orientation where
/// the solution nearest the seed leaves it, where without it the orientation is reached too.
#[test]
fn position_only_ik_of_kinematics_yaml_leaves_the_orientation_free() {
    let solve = |position_only: bool| {
        let (mut robot, scene) = bundled().expect("bundled robot");
        if position_only {
            robot.kinematics = Some(
                KinematicsConfig::parse("arm:\n  position_only_ik: true\n", "kinematics.yaml")
                    .unwrap(),
            );
        }
        let mut s = PlanningService::new(robot, scene, ServiceSettings::default());
        let at = tool_pose_at(&s, &GOAL);
        let turned = at.rotation * nalgebra::UnitQuaternion::from_euler_angles(0.0, 0.0, 1.2);
        let q = turned.quaternion();
        let answer = s
            .compute_ik(&gpu_motion_planner::service::IkRequest {
                seed_state: Some((names(&s), GOAL.to_vec())),
                goal: ServicePoseGoal {
                    frame: "world".into(),
                    link: None,
                    position: at.translation.vector.into(),
                    orientation: Some([q.i, q.j, q.k, q.w]),
                    position_tolerance: None,
                    orientation_tolerance: None,
                },
                avoid_collisions: true,
                attempts: None,
                seed: Some(5),
                group: None,
                timeout: None,
            })
            .expect("a solution");
        let reached = tool_pose_at(&s, &answer.positions);
        assert!((reached.translation.vector - at.translation.vector).norm() < 1e-3);
        (answer.errors.1, reached.rotation.angle_to(&turned))
    };
    let (error, off) = solve(false);
    assert!(error < 1e-2 && off < 1e-2, "{error} {off}");
    let (error, off) = solve(true);
    // The seed itself is at the position: it stays, its orientation 1.2 rad from the goal's.
    assert_eq!(error, 0.0);
    assert!((off - 1.2).abs() < 1e-2, "{off}");
}

/// A motion sequence: PTP to a state, LIN down 5 cm, rrt_connect back to the start, joined
/// into one trajectory that runs on through every item's end (at rest); a later item giving
/// a start, or a failing item (a line out of reach), fails the sequence naming it.
#[test]
fn a_motion_sequence_joins_its_items_into_one_trajectory() {
    let mut s = service();
    let first = [-2.8, 0.3, 0.8, 0.3, 0.5, 0.2];
    let middle = [-2.6, 0.4, 0.9, 0.3, 0.5, 0.2];
    let below = nalgebra::Translation3::new(0.0, 0.0, -0.05) * tool_pose_at(&s, &middle);
    let items = vec![
        ServicePlanRequest {
            planner: Some("PTP".into()),
            ..request(&s, &first, &middle)
        },
        ServicePlanRequest {
            start: None,
            planner: Some("LIN".into()),
            ..pose_request(&s, "world", &below)
        },
        ServicePlanRequest {
            goal: (names(&s), first.to_vec()),
            planner: Some("rrt_connect".into()),
            ..Default::default()
        },
    ];
    let items: Vec<ServiceSequenceItem> = items
        .into_iter()
        .map(|request| ServiceSequenceItem {
            request,
            blend_radius: 0.0,
        })
        .collect();
    let seq = s.plan_sequence(&items).unwrap();
    assert_eq!(
        seq.items
            .iter()
            .map(|p| p.planner.as_str())
            .collect::<Vec<_>>(),
        ["ptp", "lin", "rrt_connect"]
    );
    let traj = &seq.trajectory;
    let total: usize = seq.items.iter().map(|p| p.trajectory.points.len()).sum();
    assert_eq!(traj.points.len(), total - 2);
    assert_eq!(seq.item_ends.len(), 3);
    let at = |i: usize| &traj.points[seq.item_ends[i]];
    assert_eq!(at(0).positions, middle.to_vec());
    assert!((tool_at(&s, &at(1).positions) - below.translation.vector).norm() < 1e-3);
    assert_eq!(at(2).positions, first.to_vec());
    assert_eq!(seq.item_ends[2], traj.points.len() - 1);
    for i in 0..3 {
        assert!(
            at(i).velocities.iter().all(|v| *v == 0.0),
            "item {i} ends at rest"
        );
    }
    // Each item's own trajectory, later in time.
    let t1 = at(0).time_from_start;
    let own = &seq.items[1].trajectory.points;
    for (k, p) in own.iter().enumerate().skip(1) {
        let q = &traj.points[seq.item_ends[0] + k];
        assert_eq!(q.positions, p.positions);
        assert!((q.time_from_start - (t1 + p.time_from_start)).abs() < 1e-12);
    }
    for w in traj.points.windows(2) {
        assert!(w[1].time_from_start > w[0].time_from_start);
    }
    trajectory::validate(&cpu_checker(&s), traj, 0.01).expect("the joined trajectory is free");

    // A later item with its own start, and a blocked PTP, fail naming the item.
    let mut bad = items.clone();
    bad[1].request.start = Some((names(&s), first.to_vec()));
    let e = s.plan_sequence(&bad).unwrap_err().to_string();
    assert!(
        e.starts_with("item 1 (LIN): ") && e.contains("only the first motion"),
        "{e}"
    );
    // A line out of the arm's reach.
    let mut back = items.clone();
    back[2].request = ServicePlanRequest {
        start: None,
        planner: Some("LIN".into()),
        ..pose_request(
            &s,
            "world",
            &(nalgebra::Translation3::new(0.0, 0.0, 2.0) * below),
        )
    };
    let e = s.plan_sequence(&back).unwrap_err();
    assert!(
        e.to_string()
            .starts_with("item 2 (LIN): lin: the straight line stops at"),
        "{e}"
    );
    assert_eq!(e.category(), ErrorCategory::PlanningFailed);
    assert!(s.plan_sequence(&[]).is_err());
}

/// A plan under path constraints is timed through its waypoints; a speed limit times it again
/// the same way, with the too-fast segments capped: the same points, later, the tool under
/// the limit. In a batch, PTP problems share the batch and LIN ones are planned alone.
#[test]
fn speed_limits_retime_constrained_plans_and_batches_take_pilz_motions() {
    let mut s = service();
    let constraints = ConstraintSpec {
        joint: vec![JointSpec {
            joint: "wrist_3_joint".into(),
            position: 0.0,
            below: 0.5,
            above: 0.5,
        }],
        ..ConstraintSpec::default()
    };
    let base = request(&s, &START, &GOAL);
    let constrained = |speed: Option<f64>| ServicePlanRequest {
        path_constraints: constraints.clone(),
        speed_limit: speed.map(|max_speed| SpeedLimit {
            link: None,
            max_speed,
        }),
        ..base.clone()
    };
    let free = s.plan(constrained(None)).unwrap();
    let peak = tool_peak_speed(&s, &free.trajectory);
    let slow = s.plan(constrained(Some(peak / 3.0))).unwrap();
    let ls = slow.link_speed.clone().expect("limited");
    assert!(ls.retimed && ls.factor > 1.0, "{ls:?}");
    assert_eq!(slow.path, free.path);
    assert_eq!(slow.trajectory.positions(), free.trajectory.positions());
    let limited = tool_peak_speed(&s, &slow.trajectory);
    assert!(
        limited <= peak / 3.0 * (1.0 + 1e-3),
        "{limited} over {}",
        peak / 3.0
    );
    within_joint_limits(&s, &slow.trajectory);
    for p in &slow.trajectory.points {
        assert!(p.positions[5].abs() <= 0.5 + 1e-9);
    }

    let (first, middle) = (
        [-2.8, 0.3, 0.8, 0.3, 0.5, 0.2],
        [-2.6, 0.4, 0.9, 0.3, 0.5, 0.2],
    );
    let reqs: Vec<ServicePlanRequest> = [
        ("PTP", &START, &GOAL),
        ("LIN", &first, &middle),
        ("PTP", &first, &middle),
    ]
    .into_iter()
    .map(|(planner, from, to)| ServicePlanRequest {
        planner: Some(planner.into()),
        ..request(&s, from, to)
    })
    .collect();
    let answers = s.plan_batch(&reqs);
    let planned: Vec<(String, usize)> = answers
        .into_iter()
        .map(|a| a.map(|p| (p.planner, p.path.len())).unwrap())
        .collect();
    assert_eq!(planned[0], ("ptp".to_string(), 2));
    assert_eq!(planned[1].0, "lin");
    assert!(planned[1].1 > 2);
    assert_eq!(planned[2], ("ptp".to_string(), 2));
}

/// Other goal states make a goal set: with the goal inside a cube, the plan ends at the other
/// goal and says so, for RRT-Connect, the persistent roadmap (`drm`) and a batch; bad other
/// goals are refused naming their index, a goal set with a pose goal or LIN by name.
#[test]
fn other_goal_states_make_a_goal_set() {
    let mut s = service();
    s.apply_marker(cube("blocks", 1, tool_at(&s, &GOAL), 0.2))
        .expect("cube at the goal");
    let other = [-1.6, 0.3, 0.8, 0.0, 0.0, 0.0];
    let set = |s: &PlanningService, planner: Option<&str>| ServicePlanRequest {
        other_goals: vec![(names(s), other.to_vec())],
        planner: planner.map(str::to_string),
        ..request(s, &START, &GOAL)
    };
    for planner in [None, Some("drm"), Some("prm")] {
        let res = s.plan(set(&s, planner)).expect("plans to the other goal");
        assert_eq!(res.reached_goal, 1, "{planner:?}");
        assert_eq!(res.path.last().map(Vec::as_slice), Some(&other[..]));
        assert_valid(&s, &res.path, &res.trajectory);
    }
    // Alone, the goal is refused as in collision; in a batch the set is planned alone.
    let e = s.plan(request(&s, &START, &GOAL)).unwrap_err();
    assert!(
        matches!(e, ServiceError::Plan(PlanError::InvalidGoal(_))),
        "{e}"
    );
    let batch = s.plan_batch(&[set(&s, None), request(&s, &START, &other)]);
    assert_eq!(batch[0].as_ref().expect("set").reached_goal, 1);
    assert_eq!(batch[1].as_ref().expect("single").reached_goal, 0);

    // A joint the robot lacks, in the second other goal: named with its index.
    let mut bad = set(&s, None);
    let mut wrong = names(&s);
    wrong[2] = "no_such_joint".into();
    bad.other_goals.push((wrong, other.to_vec()));
    let e = s.plan(bad).unwrap_err();
    let text = e.to_string();
    assert!(
        text.contains("other_goal_states[1]") && text.contains("no_such_joint"),
        "{text}"
    );
    assert_eq!(
        e.category(),
        gpu_motion_planner::service::ErrorCategory::InvalidGoal
    );
    // With LIN, or with a pose goal: refused naming the field.
    // Both are goals that cannot be planned as asked (MoveIt's INVALID_GOAL_CONSTRAINTS).
    let e = s.plan(set(&s, Some("LIN"))).unwrap_err();
    assert!(e.to_string().contains("other_goal_states"), "{e}");
    assert_eq!(
        e.category(),
        gpu_motion_planner::service::ErrorCategory::InvalidGoal
    );
    let pose = ServicePlanRequest {
        other_goals: vec![(names(&s), other.to_vec())],
        ..pose_request(&s, "", &tool_pose_at(&s, &other))
    };
    let e = s.plan(pose).unwrap_err();
    assert!(e.to_string().contains("other_goal_states"), "{e}");
    assert_eq!(
        e.category(),
        gpu_motion_planner::service::ErrorCategory::InvalidGoal
    );
}

/// The pose goal of `pose_request` for `pose`, as another goal pose.
fn pose_goal_of(s: &PlanningService, pose: &Isometry3<f64>) -> ServicePoseGoal {
    pose_request(s, "world", pose)
        .goal_pose
        .expect("a pose goal")
}

#[test]
fn other_goal_poses_make_one_goal_set_with_the_goal_pose() {
    let mut s = service();
    let far = Isometry3::translation(3.0, 0.0, 0.5);
    let target = tool_pose_at(&s, &GOAL);
    // A cube around the tool's pose at `blocked`: every solution of that pose collides.
    let blocked = [-1.6, 0.3, 0.8, 0.0, 0.0, 0.0];
    let inside = tool_pose_at(&s, &blocked);
    s.apply_marker(cube("blocks", 1, inside.translation.vector, 0.2))
        .expect("cube");
    let candidates = |s: &PlanningService, others: &[Isometry3<f64>]| ServicePlanRequest {
        other_goal_poses: others.iter().map(|p| pose_goal_of(s, p)).collect(),
        ..pose_request(s, "world", &far)
    };
    // The goal pose is out of reach and the first other one blocked: the second is reached.
    for planner in [None, Some("drm"), Some("prm")] {
        let req = ServicePlanRequest {
            planner: planner.map(str::to_string),
            ..candidates(&s, &[inside, target])
        };
        let res = s.plan(req).expect("plans to the free pose");
        assert_eq!(res.reached_goal, 2, "{planner:?}");
        assert_valid(&s, &res.path, &res.trajectory);
        let last = &res.trajectory.points.last().expect("points").positions;
        let reached = tool_pose_at(&s, last);
        assert!((reached.translation.vector - target.translation.vector).norm() <= 1e-4);
        assert!(reached.rotation.angle_to(&target.rotation) <= 1e-3);
        let (_, dp, _) = res.pose_error.expect("pose error of the reached pose");
        assert!(dp <= 1e-4);
    }
    // The same request plans the same path again (seeded).
    let a = s.plan(candidates(&s, &[inside, target])).expect("plans");
    let b = s.plan(candidates(&s, &[inside, target])).expect("plans");
    assert_eq!(a.path, b.path);
    // In a batch it is planned alone, as plan plans it.
    let batch = s.plan_batch(&[
        candidates(&s, &[inside, target]),
        request(&s, &START, &GOAL),
    ]);
    assert_eq!(batch[0].as_ref().expect("candidates").path, a.path);
    assert_eq!(batch[0].as_ref().expect("candidates").reached_goal, 2);

    // None reachable and free: the error speaks of all the poses.
    let e = s.plan(candidates(&s, &[inside])).unwrap_err();
    assert!(e.to_string().contains("2 goal poses"), "{e}");
    assert!(
        matches!(
            e.category(),
            ErrorCategory::GoalInCollision | ErrorCategory::NoIkSolution
        ),
        "{e}"
    );

    // Refusals name the field: a bad pose (with its index), no goal pose, LIN, too many.
    let mut bad = candidates(&s, &[target, target]);
    bad.other_goal_poses[1].frame = "camera".into();
    let e = s.plan(bad).unwrap_err();
    let text = e.to_string();
    assert!(
        text.contains("other_goal_poses[1]") && text.contains("frame 'camera'"),
        "{text}"
    );
    assert_eq!(e.category(), ErrorCategory::InvalidGoal);
    let lonely = ServicePlanRequest {
        other_goal_poses: vec![pose_goal_of(&s, &target)],
        ..request(&s, &START, &GOAL)
    };
    let e = s.plan(lonely).unwrap_err();
    assert!(e.to_string().contains("go with a goal pose"), "{e}");
    assert_eq!(e.category(), ErrorCategory::InvalidGoal);
    let lin = ServicePlanRequest {
        planner: Some("LIN".into()),
        ..candidates(&s, &[target])
    };
    let e = s.plan(lin).unwrap_err();
    assert!(e.to_string().contains("other_goal_poses"), "{e}");
    assert_eq!(e.category(), ErrorCategory::InvalidGoal);
    let many = candidates(&s, &vec![target; 64]);
    let e = s.plan(many).unwrap_err();
    assert!(e.to_string().contains("at most 63"), "{e}");
    // The service keeps planning.
    assert!(s.plan(request(&s, &START, &GOAL)).is_ok());
}
