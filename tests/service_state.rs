//! `PlanningService::check_state` and `check_trajectory` (the node's `~/check_state` and
//! `~/check_trajectory`) on the bundled robot, against an independent CPU checker.

mod common;

use common::service::{cpu_checker, names, request, service, GOAL, START};
use gpu_motion_planner::collision::{Checker, MotionBatch};
use gpu_motion_planner::service::{
    MarkerKind, ServiceError, StateCheckRequest, TrajectoryCheckRequest, START_TOLERANCE,
};
use rand::{Rng, SeedableRng};

fn named(s: &gpu_motion_planner::service::PlanningService, q: &[f64]) -> StateCheckRequest {
    StateCheckRequest {
        state: Some((names(s), q.to_vec())),
        group: None,
    }
}

#[test]
fn state_verdicts_match_an_independent_checker_and_name_the_contacts() {
    let mut s = service();
    let reference = cpu_checker(&s);
    let space = s.group().expect("group").space;
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(11);
    let (mut free, mut hit) = (0, 0);
    for _ in 0..300 {
        let q: Vec<f64> = (0..space.dof())
            .map(|j| rng.random_range(space.lower[j]..=space.upper[j]))
            .collect();
        let check = s.check_state(&named(&s, &q)).expect("check");
        let expected = reference.check_config(&q).expect("reference");
        assert_eq!(check.valid, expected, "{q:?}: {:?}", check.contacts);
        assert_eq!(check.contacts.is_empty(), expected, "{q:?}");
        assert!(check.out_of_limits.is_empty());
        assert_eq!(check.backend, "cpu");
        if expected {
            free += 1;
        } else {
            hit += 1;
        }
    }
    assert!(free > 20 && hit > 20, "free {free}, in collision {hit}");

    // The forearm folded down against the shelf names the shelf's back.
    let low = [0.0, 1.4, 0.4, 0.0, 0.0, 0.0];
    let check = s.check_state(&named(&s, &low)).expect("check");
    assert!(!check.valid);
    assert!(
        check
            .contacts
            .iter()
            .any(|c| c.contains("obstacle 'shelf_back'")),
        "{:?}",
        check.contacts
    );

    // An obstacle put where the tool is: named by its marker id.
    let tool = common::service::tool_pose_at(&s, &START).translation.vector;
    common::service::place(&mut s, "probe", 3, MarkerKind::Sphere, tool, 0.05);
    let check = s.check_state(&named(&s, &START)).expect("check");
    assert!(!check.valid);
    assert!(
        check
            .contacts
            .iter()
            .any(|c| c.contains("obstacle 'probe/3'")),
        "{:?}",
        check.contacts
    );
}

#[test]
fn states_past_limits_and_bad_states_are_answered_by_name() {
    let mut s = service();
    let n = names(&s);
    // Without a joint state every group joint must be named; with one, the rest is taken
    // from it.
    let err = s
        .check_state(&StateCheckRequest::default())
        .expect_err("no state");
    assert!(err.to_string().contains("no joint state"), "{err}");
    let err = s
        .check_state(&StateCheckRequest {
            state: Some((vec![n[0].clone()], vec![0.1])),
            group: None,
        })
        .expect_err("partial state");
    assert!(matches!(err, ServiceError::MissingJoint { .. }), "{err}");
    s.set_joint_state(&n, &START).expect("joint state");
    let check = s
        .check_state(&StateCheckRequest::default())
        .expect("current");
    assert!(check.valid, "{:?}", check.contacts);
    let check = s
        .check_state(&StateCheckRequest {
            state: Some((vec![n[1].clone()], vec![1.4])),
            group: None,
        })
        .expect("partial state over the joint state");
    let mut expected = START;
    expected[1] = 1.4;
    assert_eq!(
        check.valid,
        cpu_checker(&s).check_config(&expected).expect("reference")
    );

    // Past a limit: invalid, not an error, naming the joint and its limits.
    let space = s.group().expect("group").space;
    let mut far = START;
    far[2] = space.upper[2] + 0.5;
    let check = s.check_state(&named(&s, &far)).expect("check");
    assert!(!check.valid);
    assert_eq!(check.out_of_limits.len(), 1);
    assert!(
        check.out_of_limits[0].contains(&n[2]),
        "{:?}",
        check.out_of_limits
    );
    // A hair past it (as encoders read) is within.
    far[2] = space.upper[2] + 1e-6;
    let check = s.check_state(&named(&s, &far)).expect("check");
    assert!(check.out_of_limits.is_empty());

    for (names, positions, what) in [
        (
            vec!["no_such_joint".to_string()],
            vec![0.0],
            "no_such_joint",
        ),
        (vec![n[0].clone()], vec![f64::NAN], "NaN"),
        (n.clone(), vec![0.0; 2], "state"),
    ] {
        let err = s
            .check_state(&StateCheckRequest {
                state: Some((names, positions)),
                group: None,
            })
            .expect_err(what);
        assert!(err.to_string().contains(what), "{what}: {err}");
    }
}

/// A plan from START to GOAL: its points, and the request that checks them at the node's
/// resolution.
fn planned(
    s: &mut gpu_motion_planner::service::PlanningService,
) -> (Vec<Vec<f64>>, TrajectoryCheckRequest) {
    let plan = s.plan(request(s, &START, &GOAL)).expect("plan");
    let points: Vec<Vec<f64>> = plan.trajectory.positions();
    let req = TrajectoryCheckRequest {
        joint_names: names(s),
        points: points.clone(),
        resolution: None,
        group: None,
    };
    (points, req)
}

#[test]
fn a_planned_trajectory_is_valid_until_an_obstacle_crosses_it() {
    let mut s = service();
    let n = names(&s);
    let (points, req) = planned(&mut s);
    let check = s.check_trajectory(&req).expect("check");
    assert!(check.valid, "{check:?}");
    assert_eq!(check.points_valid.len(), points.len());
    assert_eq!(check.segments_valid.len(), points.len() - 1);
    assert_eq!(check.resolution, s.settings().resolution);

    // A box where the tool passes half way along the path.
    let mid: Vec<f64> = START
        .iter()
        .zip(&GOAL)
        .map(|(a, b)| (a + b) / 2.0)
        .collect();
    let at = common::service::tool_pose_at(&s, &mid).translation.vector;
    common::service::place(&mut s, "crossing", 0, MarkerKind::Cube, at, 0.2);
    let check = s.check_trajectory(&req).expect("check");
    assert!(!check.valid);
    assert!(check.first_invalid_segment.is_some());

    // Every verdict is the independent checker's.
    let reference = cpu_checker(&s);
    for (i, p) in points.iter().enumerate() {
        assert_eq!(
            check.points_valid[i],
            reference.check_config(p).expect("reference"),
            "point {i}"
        );
    }
    let mut motions = MotionBatch::new(n.len());
    for w in points.windows(2) {
        motions.push(&w[0], &w[1]).expect("motion");
    }
    let expected = reference
        .check_motions(&motions, check.resolution)
        .expect("reference");
    assert_eq!(check.segments_valid, expected);
    if let Some((i, why)) = &check.first_invalid_point {
        assert!(why.iter().any(|w| w.contains("crossing/0")), "{i}: {why:?}");
    }

    // A coarser resolution is used as asked; a bad one is refused by name.
    let coarse = s
        .check_trajectory(&TrajectoryCheckRequest {
            resolution: Some(0.2),
            ..req.clone()
        })
        .expect("coarse");
    assert_eq!(coarse.resolution, 0.2);
    let err = s
        .check_trajectory(&TrajectoryCheckRequest {
            resolution: Some(-1.0),
            ..req.clone()
        })
        .expect_err("negative resolution");
    assert!(err.to_string().contains("resolution"), "{err}");
}

/// The planners' trajectories, timed along straight path segments with many points on each,
/// are answered valid in the scene they were planned in (a piece of a motion checked on its
/// own can fail where the whole one passed: the check follows each straight run whole), also
/// for plans passing close to the shelf.
#[test]
fn trajectories_are_valid_in_the_scene_they_were_planned_in() {
    let mut s = service();
    let n = names(&s);
    let under_shelf = [-0.2, 0.3, 2.3, 0.0, -0.5, 0.0];
    let out_left = [1.6, -0.4, 1.0, 0.0, 0.5, 0.0];
    let mut points_checked = 0;
    for (k, (start, goal)) in [(START, GOAL), (under_shelf, out_left), (out_left, START)]
        .iter()
        .enumerate()
    {
        for planner in ["rrt_connect", "prm", "rrt"] {
            let req = gpu_motion_planner::service::ServicePlanRequest {
                planner: Some(planner.into()),
                seed: Some(k as u64 + 1),
                ..request(&s, start, goal)
            };
            let plan = s.plan(req).expect("plan");
            let points: Vec<Vec<f64>> = plan.trajectory.positions();
            points_checked += points.len();
            let check = s
                .check_trajectory(&TrajectoryCheckRequest {
                    joint_names: n.clone(),
                    points,
                    resolution: None,
                    group: None,
                })
                .expect("check");
            assert!(check.valid, "{planner} {k}: {check:?}");
        }
    }
    assert!(points_checked > 9 * 3, "{points_checked} points");
}

#[test]
fn continuous_joints_move_as_a_controller_moves_them() {
    // wrist_3 is continuous and turns the flange, a 12 x 4 cm box. From 0 to 6 rad a
    // controller turns it the long way round, through a quarter turn, where the box's end
    // reaches a small ball put 5.5 cm beside its middle; the short way (6 - 2 pi = -0.28 rad)
    // stays clear of it.
    let mut s = service();
    let n = names(&s);
    let ball = common::service::tool_pose_at(&s, &START) * nalgebra::Point3::new(0.0, 0.055, -0.04);
    common::service::place(&mut s, "ball", 0, MarkerKind::Sphere, ball.coords, 0.02);
    let check = |s: &mut gpu_motion_planner::service::PlanningService, to: f64| {
        let mut q = START;
        q[5] = to;
        s.check_trajectory(&TrajectoryCheckRequest {
            joint_names: n.clone(),
            points: vec![START.to_vec(), q.to_vec()],
            resolution: None,
            group: None,
        })
        .expect("check")
    };
    let long = check(&mut s, 6.0);
    assert_eq!(long.points_valid, vec![true, true], "{long:?}");
    assert_eq!(long.segments_valid, vec![false], "{long:?}");
    let short = check(&mut s, 6.0 - std::f64::consts::TAU);
    assert_eq!(short.points_valid, vec![true, true], "{short:?}");
    assert_eq!(short.segments_valid, vec![true], "{short:?}");
    // A quarter turn puts the box's end into the ball.
    let quarter = check(&mut s, std::f64::consts::FRAC_PI_2);
    assert_eq!(quarter.points_valid, vec![true, false], "{quarter:?}");
}

#[test]
fn bad_trajectories_are_refused_by_name() {
    let mut s = service();
    let n = names(&s);
    let cases: Vec<(TrajectoryCheckRequest, &str)> = vec![
        (
            TrajectoryCheckRequest {
                joint_names: n.clone(),
                points: Vec::new(),
                resolution: None,
                group: None,
            },
            "no points",
        ),
        (
            TrajectoryCheckRequest {
                joint_names: n.clone(),
                points: vec![START.to_vec(), vec![0.0; 5]],
                resolution: None,
                group: None,
            },
            "point 1",
        ),
        (
            TrajectoryCheckRequest {
                joint_names: n[1..].to_vec(),
                points: vec![START[1..].to_vec()],
                resolution: None,
                group: None,
            },
            &n[0],
        ),
        (
            TrajectoryCheckRequest {
                joint_names: n.clone(),
                points: vec![START.to_vec(), {
                    let mut q = GOAL.to_vec();
                    q[3] = f64::INFINITY;
                    q
                }],
                resolution: None,
                group: None,
            },
            "inf",
        ),
    ];
    for (req, what) in cases {
        let err = s.check_trajectory(&req).expect_err(what);
        assert!(err.to_string().contains(what), "{what}: {err}");
    }
}

/// On the CUDA and hybrid backends the answers are the CPU's: the same verdicts, the same
/// named contacts, for random states and for random trajectories (skips without a GPU).
#[test]
fn gpu_backends_answer_as_the_cpu() {
    if !common::gpu_or_skip("gpu_backends_answer_as_the_cpu") {
        return;
    }
    let mut cpu = service();
    let n = names(&cpu);
    let space = cpu.group().expect("group").space;
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(17);
    let configs: Vec<Vec<f64>> = (0..400)
        .map(|_| {
            (0..space.dof())
                .map(|j| rng.random_range(space.lower[j]..=space.upper[j]))
                .collect()
        })
        .collect();
    let trajectories: Vec<Vec<Vec<f64>>> = (0..40)
        .map(|t| {
            let a = &configs[t * 2];
            let steps = 2 + t % 5;
            let mut points = vec![a.clone()];
            for _ in 0..steps {
                let last = points.last().expect("a point").clone();
                let next: Vec<f64> = (0..space.dof())
                    .map(|j| {
                        (last[j] + rng.random_range(-0.4..0.4))
                            .clamp(space.lower[j], space.upper[j])
                    })
                    .collect();
                points.push(next);
            }
            points
        })
        .collect();
    for backend in ["cuda", "hybrid"] {
        let mut gpu = service();
        let mut settings = gpu.settings().clone();
        settings.backend = backend.into();
        gpu.set_settings(settings);
        let mut collisions = 0;
        for q in &configs {
            let a = cpu.check_state(&named(&cpu, q)).expect("cpu");
            let b = gpu.check_state(&named(&gpu, q)).expect(backend);
            assert_eq!(b.backend, backend);
            assert_eq!(
                (a.valid, &a.contacts),
                (b.valid, &b.contacts),
                "{backend} {q:?}"
            );
            collisions += usize::from(!a.valid);
        }
        assert!(collisions > 20, "{collisions}");
        let mut invalid = 0;
        for points in &trajectories {
            let req = TrajectoryCheckRequest {
                joint_names: n.clone(),
                points: points.clone(),
                resolution: None,
                group: None,
            };
            let a = cpu.check_trajectory(&req).expect("cpu");
            let b = gpu.check_trajectory(&req).expect(backend);
            assert_eq!(
                (&a.points_valid, &a.segments_valid, &a.first_invalid_point),
                (&b.points_valid, &b.segments_valid, &b.first_invalid_point),
                "{backend} {points:?}"
            );
            invalid += usize::from(!a.valid);
        }
        assert!(invalid > 5, "{invalid}");
        eprintln!(
            "{backend}: {} states ({collisions} in collision), {} trajectories ({invalid} invalid): answers identical to the CPU's",
            configs.len(),
            trajectories.len()
        );
    }
}

#[test]
fn start_deviations_name_the_joints_away_from_a_trajectorys_start() {
    let mut s = service();
    let names = names(&s);
    let e = s
        .start_deviations(&names, &START, START_TOLERANCE)
        .unwrap_err();
    assert!(e.to_string().contains("no joint state"), "{e}");
    let mut here = START;
    here[5] = std::f64::consts::PI - 0.002; // wrist_3 is continuous
    s.set_joint_state(&names, &here).unwrap();
    let mut first = START;
    first[5] = -std::f64::consts::PI + 0.002; // 0.004 away the short way round
    assert!(s
        .start_deviations(&names, &first, START_TOLERANCE)
        .unwrap()
        .is_empty());
    first[1] += 0.05;
    first[2] -= 2.0 * START_TOLERANCE;
    let off = s.start_deviations(&names, &first, START_TOLERANCE).unwrap();
    assert_eq!(off.len(), 2, "{off:?}");
    assert!(
        off[0].contains(&names[1]) && off[1].contains(&names[2]),
        "{off:?}"
    );
    // Only the joints named are compared.
    assert!(s
        .start_deviations(&names[..1], &first[..1], START_TOLERANCE)
        .unwrap()
        .is_empty());
    let e = s
        .start_deviations(&["no_such_joint".to_string()], &[0.0], START_TOLERANCE)
        .unwrap_err();
    assert!(e.to_string().contains("no_such_joint"), "{e}");
}

/// Execution monitoring: what is left of a running trajectory is re-checked from the point
/// the robot has passed; an obstacle on the way ahead is found (the first problem, as the
/// independent checker sees it), one only on the part already passed is not.
#[test]
fn the_rest_of_a_running_trajectory_is_rechecked_from_where_the_robot_is() {
    use gpu_motion_planner::service::{point_at, AttachRequest};
    let mut s = service();
    let n = names(&s);
    let (points, req) = planned(&mut s);
    let last = points.len() - 1;
    assert!(last >= 4, "{} points", points.len());
    assert_eq!(s.check_remaining(&req, 0).expect("check"), None);
    assert_eq!(s.check_remaining(&req, last).expect("check"), None);

    // A cube where the tool is three quarters of the way along.
    let before = s.world_revision();
    let late = last * 3 / 4;
    let at = common::service::tool_pose_at(&s, &points[late])
        .translation
        .vector;
    common::service::place(&mut s, "monitor", 0, MarkerKind::Cube, at, 0.12);
    assert_ne!(
        s.world_revision(),
        before,
        "a new obstacle changes the world"
    );
    let reference = cpu_checker(&s);
    let resolution = s.settings().resolution;
    let point_free = |i: usize| reference.check_config(&points[i]).expect("reference");
    let motion_free = |i: usize| {
        let mut m = MotionBatch::new(n.len());
        m.push(&points[i], &points[i + 1]).expect("motion");
        reference.check_motions(&m, resolution).expect("reference")[0]
    };
    let free_from = |f: usize| (f..=last).all(point_free) && (f..last).all(motion_free);

    let problem = s
        .check_remaining(&req, 0)
        .expect("check")
        .expect("the cube is ahead");
    assert!(problem.point <= late, "{problem:?}");
    // It is the first problem along the way, and a real one.
    assert!(
        (0..problem.point).all(|i| point_free(i) && motion_free(i)),
        "{problem:?}"
    );
    if problem.motion {
        assert!(!motion_free(problem.point), "{problem:?}");
        assert!(
            problem.message.contains(&format!(
                "motion from point {} to point {}",
                problem.point,
                problem.point + 1
            )),
            "{problem:?}"
        );
    } else {
        assert!(!point_free(problem.point), "{problem:?}");
    }
    // Whatever comes first, what touches what is named.
    assert!(
        problem.message.contains("obstacle 'monitor/0'"),
        "{problem:?}"
    );
    // At the cube the point itself is named with what it touches.
    let at_cube = s
        .check_remaining(&req, late)
        .expect("check")
        .expect("the robot is in the cube there");
    assert_eq!(
        (at_cube.point, at_cube.motion),
        (late, false),
        "{at_cube:?}"
    );
    assert!(
        at_cube
            .message
            .contains(&format!("point {late} is invalid"))
            && at_cube.message.contains("obstacle 'monitor/0'"),
        "{at_cube:?}"
    );
    // Past the cube the rest is valid again; from the point before, not.
    let clear = (late..=last)
        .find(|&f| free_from(f))
        .expect("the goal is free");
    assert!(clear > late);
    assert_eq!(s.check_remaining(&req, clear).expect("check"), None);
    assert!(s.check_remaining(&req, clear - 1).expect("check").is_some());

    // Attaching and dropping objects changes the world too; a bad index is named.
    let placed = s.world_revision();
    s.set_joint_state(&n, &START).expect("joint state");
    s.attach_object(AttachRequest {
        id: "monitor/0".into(),
        link: None,
        touch_links: Vec::new(),
        object: None,
    })
    .expect("attach");
    let attached = s.world_revision();
    assert_ne!(attached, placed);
    s.detach_object("monitor/0", true).expect("drop");
    assert_ne!(
        s.world_revision(),
        attached,
        "the robot changed, the scene did not"
    );
    let err = s.check_remaining(&req, last + 1).expect_err("past the end");
    assert!(err.to_string().contains("from"), "{err}");

    // The point passed last, by time.
    let times = [0.0, 0.5, 1.0];
    assert_eq!(point_at(&times, -0.1), 0);
    assert_eq!(point_at(&times, 0.0), 0);
    assert_eq!(point_at(&times, 0.7), 1);
    assert_eq!(point_at(&times, 1.0), 2);
    assert_eq!(point_at(&times, 5.0), 2);
}

#[test]
fn a_stopped_plan_is_replanned_from_where_the_robot_holds_to_where_it_was_going() {
    use gpu_motion_planner::service::{ServicePlanRequest, ServicePoseGoal};
    let mut s = service();
    let n = names(&s);
    // The tool where GOAL puts it, asked in the frame of the forearm (placed where START puts
    // it), as a user might ask for "there, relative to the arm as it is now".
    let forearm = {
        let robot = s.robot();
        let group = s.group().expect("group");
        let state = group.full_state(&robot.tree.neutral_state(), &START);
        robot.tree.forward_kinematics(&state)[robot.tree.link("forearm_link").expect("forearm")]
    };
    let target = forearm.inverse() * common::service::tool_pose_at(&s, &GOAL);
    let (t, r) = (target.translation.vector, target.rotation.coords);
    let original = ServicePlanRequest {
        start: Some((n.clone(), START.to_vec())),
        goal_pose: Some(ServicePoseGoal {
            frame: "forearm_link".into(),
            link: None,
            position: [t.x, t.y, t.z],
            orientation: Some([r.x, r.y, r.z, r.w]),
            position_tolerance: None,
            orientation_tolerance: None,
        }),
        seed: Some(11),
        time_limit: Some(5.0),
        ..Default::default()
    };
    let first = s.plan(original.clone()).expect("plan to the pose");
    let points: Vec<Vec<f64>> = first.trajectory.positions();
    let end = points.last().expect("points").clone();
    let last = points.len() - 1;
    assert!(last >= 4, "{} points", points.len());

    // The robot was stopped 30 % of the way along because a cube appeared at 60 %.
    let stop = last * 3 / 10;
    let held = points[stop].clone();
    s.set_joint_state(&n, &held).expect("joint state");
    let at = common::service::tool_pose_at(&s, &points[last * 6 / 10])
        .translation
        .vector;
    common::service::place(&mut s, "replan", 0, MarkerKind::Cube, at, 0.12);
    let rest = TrajectoryCheckRequest {
        joint_names: n.clone(),
        points: points.clone(),
        resolution: None,
        group: None,
    };
    assert!(
        s.check_remaining(&rest, stop).expect("check").is_some(),
        "the cube blocks the rest of the first plan"
    );

    let again = original.replan_to(&n, &end);
    assert_eq!(again.start, None, "from the current state");
    let from_a_set = ServicePlanRequest {
        other_goals: vec![(n.clone(), points[stop].clone())],
        ..original.clone()
    };
    assert!(
        from_a_set.replan_to(&n, &end).other_goals.is_empty(),
        "a goal set replans to the goal the plan was reaching"
    );
    assert_eq!(again.goal_pose, None);
    assert_eq!(again.goal, (n.clone(), end.clone()));
    assert_eq!(
        (again.seed, again.time_limit, &again.path_constraints),
        (
            original.seed,
            original.time_limit,
            &original.path_constraints
        )
    );
    let second = s.plan(again).expect("replan around the cube");
    let replanned: Vec<Vec<f64>> = second.trajectory.positions();
    let close = |a: &[f64], b: &[f64]| a.iter().zip(b).all(|(x, y)| (x - y).abs() < 1e-9);
    assert!(close(&replanned[0], &held), "starts where the robot holds");
    assert!(
        close(replanned.last().expect("points"), &end),
        "ends where the first plan was going"
    );
    // Valid around the cube for the independent checker, points and motions.
    let reference = cpu_checker(&s);
    let resolution = s.settings().resolution;
    let mut motions = MotionBatch::new(n.len());
    for (i, q) in replanned.iter().enumerate() {
        assert!(reference.check_config(q).expect("reference"), "point {i}");
        if let Some(next) = replanned.get(i + 1) {
            motions.push(q, next).expect("motion");
        }
    }
    let free = reference
        .check_motions(&motions, resolution)
        .expect("reference");
    assert!(free.iter().all(|&f| f), "{free:?}");

    // Asking for the pose again from there would re-place the forearm frame where the held
    // state puts it, and send the tool somewhere else (or nowhere).
    let naive = s.plan(ServicePlanRequest {
        start: None,
        ..original.clone()
    });
    if let Ok(naive) = naive {
        let q = &naive.trajectory.points.last().expect("points").positions;
        let (a, b) = (
            common::service::tool_pose_at(&s, q).translation.vector,
            common::service::tool_pose_at(&s, &end).translation.vector,
        );
        assert!((a - b).norm() > 0.01, "{a:?} vs {b:?}");
    }
}

/// Execution monitoring's progress by the joint state: the motion nearest to where the robot
/// is, bounded by the motion the time allows, and nothing without a joint state.
#[test]
fn the_passed_point_follows_the_joint_state() {
    let mut s = service();
    let n = names(&s);
    // Five points along a line from START to GOAL.
    let points: Vec<Vec<f64>> = (0..5)
        .map(|k| {
            let t = k as f64 / 4.0;
            START
                .iter()
                .zip(GOAL)
                .map(|(a, b)| a + (b - a) * t)
                .collect()
        })
        .collect();
    assert_eq!(s.passed_point(&n, &points, 3), None, "no joint state yet");
    // Between points 2 and 3, a little off the line.
    let mut q: Vec<f64> = points[2]
        .iter()
        .zip(&points[3])
        .map(|(a, b)| 0.4 * a + 0.6 * b)
        .collect();
    q[4] += 0.01;
    s.set_joint_state(&n, &q).expect("joint state");
    assert_eq!(s.passed_point(&n, &points, 3), Some(2));
    assert_eq!(s.passed_point(&n, &points, 99), Some(2));
    // The time allows only motion 1: the nearest of motions 0 and 1.
    assert_eq!(s.passed_point(&n, &points, 1), Some(1));
    // At the start.
    s.set_joint_state(&n, &START).expect("joint state");
    assert_eq!(s.passed_point(&n, &points, 3), Some(0));
    // A path that comes back: the earliest motion through the state wins.
    let back = vec![points[0].clone(), points[2].clone(), points[0].clone()];
    s.set_joint_state(&n, &points[1]).expect("joint state");
    assert_eq!(s.passed_point(&n, &back, 1), Some(0));
    // Names the robot lacks, or points of another length.
    let mut odd = n.clone();
    odd[0] = "no_such_joint".into();
    assert_eq!(s.passed_point(&odd, &points, 3), None);
    assert_eq!(
        s.passed_point(&n, &[points[0].clone(), vec![0.0; 2]], 3),
        None
    );
}
