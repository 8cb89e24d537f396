//! `PlanningService::compute_ik` and `compute_fk` (the node's `~/compute_ik` and
//! `~/compute_fk`) on the bundled robot, checked by the robot's own forward kinematics and
//! an independent CPU checker.

mod common;

use common::service::{cpu_checker, names, service, tool_pose_at, START};
use gpu_motion_planner::collision::Checker;
use gpu_motion_planner::service::{
    ErrorCategory, IkRequest, MarkerKind, PlanningService, ServicePoseGoal,
};
use nalgebra::{Isometry3, UnitQuaternion};
use rand::{Rng, SeedableRng};

fn goal(pose: &Isometry3<f64>) -> ServicePoseGoal {
    let q = pose.rotation.quaternion();
    ServicePoseGoal {
        frame: String::new(),
        link: None,
        position: pose.translation.vector.into(),
        orientation: Some([q.i, q.j, q.k, q.w]),
        position_tolerance: None,
        orientation_tolerance: None,
    }
}

fn ik(s: &PlanningService, pose: &Isometry3<f64>, seed_q: &[f64], avoid: bool) -> IkRequest {
    IkRequest {
        seed_state: Some((names(s), seed_q.to_vec())),
        goal: goal(pose),
        avoid_collisions: avoid,
        attempts: None,
        seed: None,
        group: None,
        timeout: None,
    }
}

fn angle(a: &Isometry3<f64>, b: &Isometry3<f64>) -> f64 {
    a.rotation.angle_to(&b.rotation)
}

#[test]
fn fk_answers_the_robots_kinematics_in_the_asked_frame() {
    let s = service();
    let n = names(&s);
    let q = [0.3, -0.8, 1.1, -0.4, 0.9, 2.0];
    let state = Some((n.clone(), q.to_vec()));
    let poses = s.compute_fk(&state, &[], "").expect("fk");
    assert_eq!(poses.len(), s.robot().tree.links.len());
    let tool = poses.iter().find(|(l, _)| l == "tool0").expect("tool0").1;
    let expected = tool_pose_at(&s, &q);
    assert!((tool.translation.vector - expected.translation.vector).norm() < 1e-12);
    assert!(angle(&tool, &expected) < 1e-12);
    // In the frame of a link: the relative pose.
    let rel = s
        .compute_fk(&state, &["tool0".into()], "wrist_1_link")
        .expect("fk in a link frame");
    let wrist = poses
        .iter()
        .find(|(l, _)| l == "wrist_1_link")
        .expect("wrist")
        .1;
    let want = wrist.inverse() * expected;
    assert!((rel[0].1.translation.vector - want.translation.vector).norm() < 1e-12);
    // The planning frame by name is the default.
    let named_frame = s
        .compute_fk(&state, &["tool0".into()], "world")
        .expect("world");
    assert_eq!(named_frame[0].1, tool);
    for (links, frame, what) in [
        (vec!["nowhere".to_string()], "", "nowhere"),
        (vec![], "elsewhere", "elsewhere"),
    ] {
        let err = s.compute_fk(&state, &links, frame).expect_err(what);
        assert!(err.to_string().contains(what), "{what}: {err}");
    }
    let err = s
        .compute_fk(&Some((vec!["elbow_joint".into()], vec![f64::NAN])), &[], "")
        .expect_err("NaN");
    assert!(err.to_string().contains("elbow_joint"), "{err}");
}

#[test]
fn ik_reaches_poses_of_free_configurations_collision_free_and_deterministically() {
    let mut s = service();
    let reference = cpu_checker(&s);
    let space = s.group().expect("group").space;
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
    let mut solved = 0;
    while solved < 12 {
        let q: Vec<f64> = (0..space.dof())
            .map(|j| rng.random_range(space.lower[j]..=space.upper[j]))
            .collect();
        if !reference.check_config(&q).expect("reference") {
            continue;
        }
        let target = tool_pose_at(&s, &q);
        // Start the search elsewhere: the neutral configuration.
        let req = ik(&s, &target, &[0.0; 6], true);
        let answer = s.compute_ik(&req).expect("ik");
        let reached = tool_pose_at(&s, &answer.positions);
        assert!((reached.translation.vector - target.translation.vector).norm() <= 1e-4 + 1e-9);
        assert!(angle(&reached, &target) <= 1e-3 + 1e-9);
        assert!(answer.errors.0 <= 1e-4 && answer.errors.1 <= 1e-3);
        assert!(
            space.within_limits(&answer.positions),
            "{:?}",
            answer.positions
        );
        assert!(reference
            .check_config(&answer.positions)
            .expect("reference"));
        assert_eq!(answer.link, "tool0");
        assert!(answer.found.0 >= 1);
        assert_eq!(s.compute_ik(&req).expect("again"), answer, "deterministic");
        solved += 1;
    }
    // A position goal: any orientation.
    let target = tool_pose_at(&s, &START);
    let mut req = ik(&s, &target, &[0.0; 6], false);
    req.goal.orientation = None;
    req.goal.position_tolerance = Some(1e-3);
    let answer = s.compute_ik(&req).expect("position goal");
    let reached = tool_pose_at(&s, &answer.positions);
    assert!((reached.translation.vector - target.translation.vector).norm() <= 1e-3 + 1e-9);
    assert_eq!(answer.errors.1, 0.0);
}

#[test]
fn avoid_collisions_keeps_out_solutions_that_collide() {
    let mut s = service();
    let q = [0.4, -1.0, 1.3, -0.6, -1.2, 0.3];
    let target = tool_pose_at(&s, &q);
    // Without collisions asked about, the seed itself is the nearest solution.
    let plain = s.compute_ik(&ik(&s, &target, &q, false)).expect("ik");
    let d: f64 = plain
        .positions
        .iter()
        .zip(&q)
        .map(|(a, b)| (a - b).abs())
        .sum();
    assert!(d < 1e-6, "{:?}", plain.positions);
    // A ball on the elbow of q: q collides, the answer with avoid_collisions does not.
    let elbow = s
        .compute_fk(&Some((names(&s), q.to_vec())), &["forearm_link".into()], "")
        .expect("fk")[0]
        .1
        .translation
        .vector;
    common::service::place(&mut s, "elbow_ball", 0, MarkerKind::Sphere, elbow, 0.1);
    let reference = cpu_checker(&s);
    assert!(
        !reference.check_config(&q).expect("reference"),
        "the ball must hit q"
    );
    let answer = s
        .compute_ik(&ik(&s, &target, &q, true))
        .expect("a free solution");
    assert!(reference
        .check_config(&answer.positions)
        .expect("reference"));
    assert!(
        answer.found.1 >= 1,
        "q itself was found and is in collision"
    );
    let reached = tool_pose_at(&s, &answer.positions);
    assert!((reached.translation.vector - target.translation.vector).norm() <= 1e-4 + 1e-9);
    // Every solution collides once the ball fills the workspace around the tool: named so.
    let tool = target.translation.vector;
    common::service::place(&mut s, "tool_ball", 0, MarkerKind::Sphere, tool, 0.3);
    let err = s
        .compute_ik(&ik(&s, &target, &q, true))
        .expect_err("every solution collides");
    assert_eq!(err.category(), ErrorCategory::GoalInCollision, "{err}");
}

#[test]
fn unreachable_poses_and_bad_requests_are_answered_by_name() {
    let mut s = service();
    let far = Isometry3::from_parts(
        nalgebra::Translation3::new(0.0, 0.0, 5.0),
        UnitQuaternion::identity(),
    );
    let err = s
        .compute_ik(&ik(&s, &far, &START, false))
        .expect_err("too far");
    assert_eq!(err.category(), ErrorCategory::NoIkSolution, "{err}");
    assert!(err.to_string().contains("(128 starting"), "{err}");
    // A timeout ends the search of an unreachable pose after its first batch of starts
    // (with or without collision checks), however many attempts were allowed.
    for avoid in [false, true] {
        let err = s
            .compute_ik(&IkRequest {
                attempts: Some(10_000),
                timeout: Some(1e-9),
                ..ik(&s, &far, &START, avoid)
            })
            .expect_err("too far");
        assert_eq!(err.category(), ErrorCategory::NoIkSolution, "{err}");
        let text = err.to_string();
        assert!(
            text.contains("(16 starting configurations tried; the search stopped at the timeout)"),
            "{text}"
        );
    }
    // Without a timeout in the request, the group's kinematics_solver_timeout is the limit.
    let (mut robot, scene) = gpu_motion_planner::cli::demo::bundled().expect("bundled robot");
    robot.kinematics = Some(
        gpu_motion_planner::robot::kinematics_config::KinematicsConfig::parse(
            "arm:\n  kinematics_solver_timeout: 0.000000001\n",
            "kinematics.yaml",
        )
        .expect("kinematics.yaml"),
    );
    let mut timed = PlanningService::new(robot, scene, Default::default());
    let err = timed
        .compute_ik(&IkRequest {
            attempts: Some(10_000),
            ..ik(&timed, &far, &START, false)
        })
        .expect_err("too far");
    assert!(
        err.to_string()
            .contains("(16 starting configurations tried; the search stopped at the timeout)"),
        "{err}"
    );
    let target = tool_pose_at(&s, &START);
    let base = ik(&s, &target, &START, false);
    let cases: Vec<(IkRequest, &str)> = vec![
        (
            IkRequest {
                goal: ServicePoseGoal {
                    link: Some("gripper".into()),
                    ..base.goal.clone()
                },
                ..base.clone()
            },
            "gripper",
        ),
        (
            IkRequest {
                goal: ServicePoseGoal {
                    frame: "elsewhere".into(),
                    ..base.goal.clone()
                },
                ..base.clone()
            },
            "elsewhere",
        ),
        (
            IkRequest {
                goal: ServicePoseGoal {
                    position: [f64::NAN, 0.0, 0.0],
                    ..base.goal.clone()
                },
                ..base.clone()
            },
            "NaN",
        ),
        (
            IkRequest {
                attempts: Some(0),
                ..base.clone()
            },
            "attempts",
        ),
        (
            IkRequest {
                group: Some("no_such_group".into()),
                ..base.clone()
            },
            "no_such_group",
        ),
        (
            IkRequest {
                attempts: Some(-3),
                ..base.clone()
            },
            "got -3",
        ),
        (
            IkRequest {
                timeout: Some(-0.5),
                ..base.clone()
            },
            "timeout",
        ),
        (
            IkRequest {
                timeout: Some(f64::NAN),
                ..base.clone()
            },
            "timeout",
        ),
        (
            IkRequest {
                seed_state: Some((vec!["no_such_joint".into()], vec![0.0])),
                ..base.clone()
            },
            "no_such_joint",
        ),
    ];
    for (k, (req, what)) in cases.into_iter().enumerate() {
        let err = s.compute_ik(&req).expect_err(what);
        assert!(err.to_string().contains(what), "{what}: {err}");
        if k < 3 {
            // The pose's own faults name ComputeIk's field, not the planner's goal_pose.
            assert!(err.to_string().starts_with("pose: "), "{err}");
        }
    }
    // Without a joint state the seed must name every group joint.
    let err = s
        .compute_ik(&IkRequest {
            seed_state: None,
            ..base
        })
        .expect_err("no joint state");
    assert!(err.to_string().contains("no joint state"), "{err}");
}

/// The tip link's pose (the goal marker's home): the group's tip at the current joint state,
/// the neutral state before one arrives.
#[test]
fn the_tip_pose_follows_the_joint_state() {
    let mut s = service();
    let neutral = vec![0.0; names(&s).len()];
    let (link, pose) = s.tip_pose().expect("tip");
    assert_eq!(link, "tool0");
    let expected = tool_pose_at(&s, &neutral);
    assert!((pose.translation.vector - expected.translation.vector).norm() < 1e-12);
    let n = names(&s);
    s.set_joint_state(&n, &START).expect("joint state");
    let (_, pose) = s.tip_pose().expect("tip");
    let expected = tool_pose_at(&s, &START);
    assert!((pose.translation.vector - expected.translation.vector).norm() < 1e-12);
    assert!(pose.rotation.angle_to(&expected.rotation) < 1e-12);
}

/// The goal marker's groups: those a pose goal can move, the settings' group first; each has
/// a tip pose at the current joint state.
#[test]
fn pose_goal_groups_and_their_tips() {
    let s = service();
    assert_eq!(s.pose_goal_groups(), ["arm"]);
    let (link, _) = s.tip_pose_of(Some("arm")).expect("arm tip");
    assert_eq!(link, "tool0");
    let e = s.tip_pose_of(Some("legs")).expect_err("no such group");
    assert!(e.to_string().contains("legs"), "{e}");

    let Some(data) = common::mbm_or_skip("pose_goal_groups_and_their_tips") else {
        return;
    };
    let fetch = gpu_motion_planner::mbm::load_robot(&data, "fetch").expect("fetch");
    let settings = gpu_motion_planner::service::ServiceSettings {
        planning_group: "arm".into(),
        ..Default::default()
    };
    let f = PlanningService::new(fetch.model, Default::default(), settings);
    // The gripper (two fingers) and the head (pan and tilt) are left out.
    assert_eq!(f.pose_goal_groups(), ["arm", "arm_with_torso"]);
    let (arm_tip, arm_pose) = f.tip_pose_of(Some("arm")).expect("arm");
    let (torso_tip, torso_pose) = f.tip_pose_of(Some("arm_with_torso")).expect("torso");
    // Both chains end at the same link, so their tips are one pose.
    assert_eq!(arm_tip, torso_tip);
    assert!((arm_pose.translation.vector - torso_pose.translation.vector).norm() < 1e-12);
    assert_eq!(f.tip_pose().expect("settings' tip").0, arm_tip);
}
