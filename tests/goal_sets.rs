//! Goal sets (`PlanRequest::other_goals`): a plan may end at any goal of the set. RRT-Connect
//! grows its goal tree from all of them, PRM searches its roadmap for the nearest, RRT and
//! RRT* connect to all of them, the device RRT-Connect races attempts towards all of them
//! (`tests/gpu_planner.rs`); PTP (and the roadmap, constrained planning) take them in turn.

mod common;

use std::time::Duration;

use common::*;
use gpu_motion_planner::planners::prm::Prm;
use gpu_motion_planner::planners::{self, plan, PlanError, PlanRequest, PlanResult, PlannerId};

const PLANNERS: [PlannerId; 5] = [
    PlannerId::Prm,
    PlannerId::LazyPrm,
    PlannerId::Rrt,
    PlannerId::RrtStar,
    PlannerId::RrtConnect,
];

fn request(start: &[f64], goals: &[Vec<f64>], planner: PlannerId, seed: u64) -> PlanRequest {
    let mut r = PlanRequest::new(start.to_vec(), goals[0].clone(), planner);
    r.other_goals = goals[1..].to_vec();
    r.seed = seed;
    r.resolution = RES;
    r.time_limit = Duration::from_secs(60);
    r.batch_size = Some(32);
    // Bounded by iterations, not time: an unreachable goal ends after these, the same way
    // on any machine.
    r.max_iterations = Some(if planner == PlannerId::RrtStar {
        60
    } else {
        300
    });
    r
}

/// The plan starts at the start, ends exactly at the goal it names, and is free and within
/// the limits by the independent dense re-check.
fn assert_reaches(world: &BoxWorld, req: &PlanRequest, res: &PlanResult, goal: usize) {
    assert_eq!(res.reached_goal, goal, "{}", req.planner);
    let want = if goal == 0 {
        &req.goal
    } else {
        &req.other_goals[goal - 1]
    };
    assert_eq!(res.path.first(), Some(&req.start));
    assert_eq!(res.path.last(), Some(want), "{}", req.planner);
    let last = res.trajectory.points.last().map(|p| p.positions.clone());
    assert_eq!(last.as_ref(), Some(want), "{}", req.planner);
    dense_recheck(world, &res.trajectory, RES, 1.0, 1.0)
        .unwrap_or_else(|e| panic!("{}: {e}", req.planner));
}

#[test]
fn every_planner_reaches_the_free_goal_of_a_set_whose_first_goal_is_enclosed() {
    // The first goal sits inside a closed shell: alone it ends in "no path" (tests/planners).
    let (world, start, enclosed) = enclosed_goal();
    let open = vec![0.8, 0.3];
    assert!(world.exact_free(&open));
    for planner in PLANNERS {
        let req = request(&start, &[enclosed.clone(), open.clone()], planner, 3);
        let res = plan(&world, &req).unwrap_or_else(|e| panic!("{planner}: {e}"));
        assert_reaches(&world, &req, &res, 1);
        let again = plan(&world, &req).unwrap_or_else(|e| panic!("{planner}: {e}"));
        assert_eq!(again.path, res.path, "{planner}: deterministic for a seed");
        assert_eq!(again.reached_goal, 1);
    }
}

#[test]
fn the_sampling_planners_plan_to_the_whole_set_at_once_ptp_in_turn() {
    // The first goal is behind the wall, the second in straight sight of the start.
    // RRT-Connect checks the straight motions to every goal first and takes the one in sight
    // without growing a tree; PRM and lazy PRM take the shortest roadmap path to any goal, and
    // RRT* the cheapest path it found to any: the one in sight. RRT ends at the first goal it
    // connects to. PTP takes the goals in turn: the first is blocked, the second reached.
    let (world, start, behind) = wall_2d();
    let in_sight = vec![0.3, 0.5];
    for planner in PLANNERS {
        let req = request(&start, &[behind.clone(), in_sight.clone()], planner, 5);
        assert!(planners::grows_goal_sets(&req), "{planner}");
        let res = plan(&world, &req).unwrap_or_else(|e| panic!("{planner}: {e}"));
        match planner {
            PlannerId::RrtConnect => {
                assert_reaches(&world, &req, &res, 1);
                assert_eq!(res.stats.iterations, 0, "the straight motion, no tree");
                assert_eq!(res.path, vec![start.clone(), in_sight.clone()]);
            }
            PlannerId::Rrt => assert_reaches(&world, &req, &res, res.reached_goal),
            _ => assert_reaches(&world, &req, &res, 1),
        }
        let again = plan(&world, &req).expect("plans again");
        assert_eq!(
            (again.reached_goal, again.path),
            (res.reached_goal, res.path)
        );
    }
    let req = request(
        &start,
        &[behind.clone(), in_sight.clone()],
        PlannerId::Ptp,
        5,
    );
    assert!(!planners::grows_goal_sets(&req));
    let res = plan(&world, &req).expect("PTP to the goal in sight");
    assert_reaches(&world, &req, &res, 1);
    assert_eq!(res.path, vec![start.clone(), in_sight.clone()]);
}

#[test]
fn goals_taken_in_turn_go_past_the_third_while_time_is_left() {
    // Four goals behind the wall (PTP is blocked at once), the fifth in sight: the time shares
    // of the first goals are not spent, so PTP goes on to the fifth.
    let (world, start, behind) = wall_2d();
    let mut goals: Vec<Vec<f64>> = (0..4)
        .map(|k| vec![behind[0], behind[1] - 0.01 * k as f64])
        .collect();
    for g in &goals {
        assert!(world.exact_free(g), "{g:?}");
    }
    goals.push(vec![0.3, 0.5]);
    let req = request(&start, &goals, PlannerId::Ptp, 5);
    let res = plan(&world, &req).expect("PTP to the fifth goal");
    assert_reaches(&world, &req, &res, 4);
    // Without the fifth, every goal blocked: the clear "blocked" failure of the last.
    let req = request(&start, &goals[..4], PlannerId::Ptp, 5);
    let e = plan(&world, &req).expect_err("all behind the wall");
    assert!(matches!(e, PlanError::Blocked { .. }), "{e}");
}

/// RRT* keeps the cheapest path to any goal of the set: with a goal far behind the wall and
/// one near the start, both reachable, it ends at the near one, and its cost only falls.
#[test]
fn rrt_star_keeps_the_cheapest_path_to_any_goal() {
    let (world, start, _) = wall_2d();
    let far = vec![0.9, 0.1];
    let near = vec![0.2, 0.6];
    let mut req = request(&start, &[far, near], PlannerId::RrtStar, 9);
    req.max_iterations = Some(150);
    let res = plan(&world, &req).expect("plans");
    assert_reaches(&world, &req, &res, 1);
    let costs: Vec<f64> = res.stats.cost_over_time.iter().map(|&(_, c)| c).collect();
    assert!(!costs.is_empty());
    assert!(costs.windows(2).all(|w| w[1] < w[0]), "{costs:?}");
}

/// A PRM roadmap kept across queries answers a goal set with the shortest path to any goal,
/// and the same roadmap then plans to each goal alone.
#[test]
fn a_kept_prm_roadmap_takes_the_nearest_goal_of_a_set() {
    let (world, start, behind) = wall_2d();
    let near = vec![0.25, 0.45];
    let mut prm = Prm::new(&world.space).expect("roadmap");
    let req = request(&start, &[behind.clone(), near.clone()], PlannerId::Prm, 6);
    let res = prm.solve(&world, &req).expect("plans");
    assert_reaches(&world, &req, &res, 1);
    let alone = request(&start, std::slice::from_ref(&behind), PlannerId::Prm, 6);
    let res = prm
        .solve(&world, &alone)
        .expect("plans to the far goal alone");
    assert_reaches(&world, &alone, &res, 0);
}

#[test]
fn rrt_connect_grows_one_goal_tree_from_every_goal() {
    // No goal is in straight sight of the start (all three are behind the wall): the start
    // tree must meet the goal tree, grown from all three. Whichever goal the path ends at,
    // it is the one named, and the same for the same seed.
    let (world, start, _) = wall_2d();
    let goals = vec![vec![0.9, 0.05], vec![0.8, 0.2], vec![0.7, 0.5]];
    for seed in 0..4 {
        let req = request(&start, &goals, PlannerId::RrtConnect, seed);
        let res = plan(&world, &req).unwrap_or_else(|e| panic!("seed {seed}: {e}"));
        assert!(res.stats.iterations > 0, "seed {seed}: a tree was grown");
        let reached = res.reached_goal;
        assert_reaches(&world, &req, &res, reached);
        let again = plan(&world, &req).expect("plans again");
        assert_eq!((again.reached_goal, again.path), (reached, res.path));
    }
}

#[test]
fn goals_in_collision_are_left_out_and_bad_goals_are_named() {
    let (world, start, goal) = wall_2d();
    let in_wall = vec![0.5, 0.3];
    for planner in PLANNERS {
        // The first goal in collision: the plan ends at the free one, named by its index.
        let req = request(&start, &[in_wall.clone(), goal.clone()], planner, 1);
        let res = plan(&world, &req).unwrap_or_else(|e| panic!("{planner}: {e}"));
        assert_reaches(&world, &req, &res, 1);

        // Every goal in collision: refused as an invalid goal, the set counted.
        let req = request(&start, &[in_wall.clone(), vec![0.5, 0.1]], planner, 1);
        match plan(&world, &req) {
            Err(PlanError::InvalidGoal(msg)) => {
                assert!(msg.contains("collision"), "{planner}: {msg}");
            }
            other => panic!("{planner}: expected an invalid goal, got {other:?}"),
        }

        // A goal outside the joint limits: refused naming it, nothing planned.
        let req = request(&start, &[goal.clone(), vec![0.8, 1.5]], planner, 1);
        match plan(&world, &req) {
            Err(PlanError::InvalidGoal(msg)) => {
                assert!(msg.contains("other_goals[0]"), "{planner}: {msg}");
            }
            other => panic!("{planner}: expected an invalid goal, got {other:?}"),
        }
        let req = request(&start, &[goal.clone(), vec![0.8]], planner, 1);
        assert!(
            matches!(plan(&world, &req), Err(PlanError::InvalidGoal(m)) if m.contains("other_goals[0]")),
            "{planner}: a goal of the wrong length is named"
        );
    }
}

#[test]
fn a_start_already_at_a_goal_of_the_set_is_a_plan_to_it() {
    let (world, start, goal) = wall_2d();
    for planner in PLANNERS {
        let req = request(&start, &[goal.clone(), start.clone()], planner, 2);
        let res = plan(&world, &req).unwrap_or_else(|e| panic!("{planner}: {e}"));
        assert_reaches(&world, &req, &res, 1);
        assert!(res.trajectory.points.len() <= 2, "{planner}: no motion");
    }
}

/// A path that reached one goal of the set is cut where a straight motion to a nearer goal of
/// the set leaves it (`planners::retarget`): with a far goal and a near one both in straight
/// sight of the start, every planner ends at the near one, straight from the start (PRM and
/// RRT* find it anyway; RRT-Connect's straight motion and RRT's first connection may reach
/// the far one first).
#[test]
fn a_goal_set_path_ends_at_the_nearer_goal_in_sight_along_the_way() {
    let world = BoxWorld::new(space(2, &[]), vec![aabb(&[0.45, 0.6], &[0.55, 1.0])]);
    let start = vec![0.1, 0.1];
    let far = vec![0.9, 0.3];
    let near = vec![0.3, 0.1];
    for planner in PLANNERS {
        let req = request(&start, &[far.clone(), near.clone()], planner, 9);
        let res = plan(&world, &req).unwrap_or_else(|e| panic!("{planner}: {e}"));
        assert_reaches(&world, &req, &res, 1);
        assert_eq!(res.path, vec![start.clone(), near.clone()], "{planner}");
    }
    // A goal behind the end of the wall: whichever goal the plan ends at, every motion of it
    // (the straight one to a retargeted goal included) passes the dense re-check, and the same
    // seed gives the same plan.
    let hidden = vec![0.62, 0.9];
    assert!(world.exact_free(&hidden));
    for planner in PLANNERS {
        let req = request(&start, &[far.clone(), hidden.clone()], planner, 9);
        let res = plan(&world, &req).unwrap_or_else(|e| panic!("{planner}: {e}"));
        assert_reaches(&world, &req, &res, res.reached_goal);
        let again = plan(&world, &req).expect("plans again");
        assert_eq!(
            (again.reached_goal, again.path),
            (res.reached_goal, res.path)
        );
    }
}
