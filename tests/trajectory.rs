mod common;

use std::f64::consts::PI;

use common::*;
use gpu_motion_planner::collision::{Backend, Checker};
use gpu_motion_planner::trajectory::{
    follows_path, path_length, reduce_waypoints, shortcut, shortcut_until, time_parameterize,
    time_parameterize_steps, validate, validate_along, validate_path, Trajectory, TrajectoryError,
    ON_PATH_TOLERANCE,
};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

/// Distance from `p` to the segment `a`-`b` (plain Euclidean, bounded joints).
fn off_segment(a: &[f64], b: &[f64], p: &[f64]) -> f64 {
    let ab: Vec<f64> = a.iter().zip(b).map(|(x, y)| y - x).collect();
    let ap: Vec<f64> = a.iter().zip(p).map(|(x, y)| y - x).collect();
    let l2: f64 = ab.iter().map(|x| x * x).sum();
    let t = if l2 > 0.0 {
        (ab.iter().zip(&ap).map(|(x, y)| x * y).sum::<f64>() / l2).clamp(0.0, 1.0)
    } else {
        0.0
    };
    ab.iter()
        .zip(&ap)
        .map(|(d, q)| (q - d * t).powi(2))
        .sum::<f64>()
        .sqrt()
}

#[test]
fn timing_respects_scaled_limits_and_follows_the_segments() {
    let world = BoxWorld::new(space(3, &[]), vec![]);
    let path = vec![
        vec![0.1, 0.1, 0.1],
        vec![0.9, 0.2, 0.4],
        vec![0.9, 0.9, 0.9],
        vec![0.2, 0.5, 0.3],
    ];
    for (vs, acc) in [(1.0, 1.0), (0.5, 0.25), (0.1, 1.0)] {
        let traj = time_parameterize(&world.space, &path, vs, acc, 0.01).unwrap();
        dense_recheck(&world, &traj, RES, vs, acc).unwrap();
        let pts = &traj.points;
        assert_eq!(pts[0].positions, path[0]);
        assert_eq!(pts.last().unwrap().positions, path[3]);
        assert!(pts.last().unwrap().velocities.iter().all(|v| *v == 0.0));
        // Each waypoint is a point at rest, and every point lies on its segment.
        let mut seg = 0;
        for p in pts {
            while seg + 1 < path.len() - 1
                && off_segment(&path[seg], &path[seg + 1], &p.positions) > 1e-9
            {
                seg += 1;
            }
            assert!(off_segment(&path[seg], &path[seg + 1], &p.positions) < 1e-9);
        }
        for w in &path {
            let at = pts
                .iter()
                .find(|p| p.positions == *w)
                .expect("waypoint kept");
            assert!(at.velocities.iter().all(|v| v.abs() < 1e-12));
        }
        assert!(pts
            .windows(2)
            .all(|w| w[1].time_from_start > w[0].time_from_start));
        assert!(pts
            .windows(2)
            .all(|w| w[1].time_from_start - w[0].time_from_start <= 0.01 + 1e-12));
        // Some joint reaches its (scaled) limit: the profile is not needlessly slow.
        let peak = pts
            .iter()
            .flat_map(|p| {
                p.velocities
                    .iter()
                    .enumerate()
                    .map(|(j, v)| v.abs() / (world.space.max_velocity[j] * vs))
                    .chain(
                        p.accelerations
                            .iter()
                            .enumerate()
                            .map(|(j, a)| a.abs() / (world.space.max_acceleration[j] * acc)),
                    )
            })
            .fold(0.0, f64::max);
        assert!(peak > 0.99, "peak use of the limits {peak}");
    }
}

#[test]
fn slower_scales_take_longer() {
    let world = BoxWorld::new(space(2, &[]), vec![]);
    let path = vec![vec![0.0, 0.0], vec![1.0, 1.0]];
    let fast = time_parameterize(&world.space, &path, 1.0, 1.0, 0.05).unwrap();
    let slow = time_parameterize(&world.space, &path, 0.5, 0.5, 0.05).unwrap();
    assert!(slow.duration() > fast.duration());
    // One segment, limited by joint 0 (v = 1, a = 2): trapezoid of 0.5 + 0.5 s ramps and
    // 0.5 s cruise.
    assert!((fast.duration() - 1.5).abs() < 1e-9, "{}", fast.duration());
}

#[test]
fn step_sampling_visits_exactly_the_checked_configurations() {
    let world = BoxWorld::new(space(2, &[]), vec![]);
    let path = vec![vec![0.0, 0.0], vec![0.3, 0.1], vec![0.3, 0.6]];
    let traj = time_parameterize_steps(&world.space, &path, 1.0, 1.0, RES).unwrap();
    let mut expected = vec![path[0].clone()];
    let mut q = vec![0.0; 2];
    for w in path.windows(2) {
        let n = world.space.segments(&w[0], &w[1], RES);
        for i in 1..=n {
            if i == n {
                q.clone_from(&w[1]);
            } else {
                world
                    .space
                    .interpolate(&w[0], &w[1], i as f64 / n as f64, &mut q);
            }
            expected.push(q.clone());
        }
    }
    assert_eq!(traj.positions(), expected);
    dense_recheck(&world, &traj, RES, 1.0, 1.0).unwrap();
}

#[test]
fn continuous_joints_are_unwrapped_in_trajectories() {
    let world = BoxWorld::new(space(2, &[1]), vec![]);
    let path = vec![vec![0.1, 3.0], vec![0.2, -3.0], vec![0.3, -2.5]];
    let traj = time_parameterize(&world.space, &path, 1.0, 1.0, 0.01).unwrap();
    let thetas: Vec<f64> = traj.points.iter().map(|p| p.positions[1]).collect();
    // Crosses +PI going up instead of jumping to -PI.
    assert!(thetas.windows(2).all(|w| (w[1] - w[0]).abs() < 0.1));
    let last = *thetas.last().unwrap();
    assert!((last - (-2.5 + 2.0 * PI)).abs() < 1e-9, "{last}");
    assert!(traj.points.iter().all(|p| p.velocities[1] >= 0.0));
    validate(&world, &traj, RES).unwrap();
}

#[test]
fn bad_timing_inputs_are_named() {
    let s = space(2, &[]);
    let path = vec![vec![0.0, 0.0], vec![1.0, 1.0]];
    assert!(matches!(
        time_parameterize(&s, &path, 0.0, 1.0, 0.01),
        Err(TrajectoryError::BadScale {
            name: "vel_scale",
            ..
        })
    ));
    assert!(matches!(
        time_parameterize(&s, &path, 1.0, 1.5, 0.01),
        Err(TrajectoryError::BadScale {
            name: "acc_scale",
            ..
        })
    ));
    assert!(matches!(
        time_parameterize(&s, &path, 1.0, 1.0, f64::NAN),
        Err(TrajectoryError::BadSampleDt(_))
    ));
    assert!(matches!(
        time_parameterize(&s, &[], 1.0, 1.0, 0.01),
        Err(TrajectoryError::EmptyPath)
    ));
    assert!(matches!(
        time_parameterize(&s, &[vec![0.0]], 1.0, 1.0, 0.01),
        Err(TrajectoryError::WrongDof { index: 0, .. })
    ));
    let e = time_parameterize(&s, &[vec![0.0, 0.0], vec![2.0, 0.0]], 1.0, 1.0, 0.01).unwrap_err();
    assert!(e.to_string().contains("'j0'"), "{e}");
    let mut no_acc = s.clone();
    no_acc.max_acceleration[1] = 0.0;
    let e = time_parameterize(&no_acc, &path, 1.0, 1.0, 0.01).unwrap_err();
    assert!(e.to_string().contains("'j1'") && e.to_string().contains("acceleration"));
}

#[test]
fn shortcut_straightens_detours_in_batches() {
    let mut world = BoxWorld::new(space(2, &[]), vec![]);
    world.backend = Backend::Cuda; // one batched check per round, as on a GPU
    let zigzag: Vec<Vec<f64>> = (0..=10)
        .map(|i| vec![i as f64 / 10.0, if i % 2 == 0 { 0.2 } else { 0.8 }])
        .collect();
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    let out = shortcut(&world, &zigzag, RES, &mut rng, 10).unwrap();
    assert_eq!(out.first(), zigzag.first());
    assert_eq!(out.last(), zigzag.last());
    assert!(path_length(&world.space, &out) < 0.5 * path_length(&world.space, &zigzag));
    let (_, _, motion_calls, motions) = world.calls();
    assert!(motion_calls <= 10, "{motion_calls} calls");
    assert!(motions > 5 * motion_calls);
    // Deterministic for the seed.
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    assert_eq!(shortcut(&world, &zigzag, RES, &mut rng, 10).unwrap(), out);
}

/// A valid zigzag detour over the wall of `wall_2d`.
fn zigzag_over_wall(start: &[f64], goal: &[f64]) -> Vec<Vec<f64>> {
    vec![
        start.to_vec(),
        vec![0.1, 0.5],
        vec![0.2, 0.8],
        vec![0.3, 0.75],
        vec![0.4, 0.9],
        vec![0.5, 0.8],
        vec![0.6, 0.95],
        vec![0.7, 0.75],
        vec![0.9, 0.5],
        goal.to_vec(),
    ]
}

#[test]
fn shortcut_on_the_cpu_checks_less_for_the_same_result() {
    let (mut gpu, start, goal) = wall_2d();
    gpu.backend = Backend::Cuda;
    let (cpu, _, _) = wall_2d();
    let path = zigzag_over_wall(&start, &goal);
    validate_path(&cpu, &path, RES).unwrap();
    cpu.reset_counts();
    for seed in 0..5 {
        let batched = shortcut(&gpu, &path, RES, &mut ChaCha8Rng::seed_from_u64(seed), 20).unwrap();
        let one_by_one =
            shortcut(&cpu, &path, RES, &mut ChaCha8Rng::seed_from_u64(seed), 20).unwrap();
        assert_eq!(batched, one_by_one, "seed {seed}");
        validate_path(&cpu, &one_by_one, RES).unwrap();
        assert!(path_length(&cpu.space, &one_by_one) < path_length(&cpu.space, &path));
    }
    let (_, _, _, cpu_motions) = cpu.calls();
    let (_, _, _, gpu_motions) = gpu.calls();
    assert!(
        cpu_motions < gpu_motions,
        "{cpu_motions} motions checked one by one, {gpu_motions} batched"
    );
}

/// Greedy reduction over the wall of `wall_2d`: from the start, the farthest waypoint in
/// sight is the top of the wall (the three after it are hidden by the wall), and from there
/// the goal. Checked one by one on the CPU (4 motions from the start, farthest first, then 1)
/// and in one batch per kept waypoint elsewhere, with the same result.
#[test]
fn waypoint_reduction_keeps_the_farthest_waypoint_in_sight() {
    let (cpu, start, goal) = wall_2d();
    let (mut gpu, _, _) = wall_2d();
    gpu.backend = Backend::Cuda;
    let top = vec![0.5, 0.9];
    let path = vec![
        start.clone(),
        vec![0.2, 0.9],
        vec![0.35, 0.9],
        top.clone(),
        vec![0.65, 0.9],
        vec![0.8, 0.9],
        goal.clone(),
    ];
    validate_path(&cpu, &path, RES).unwrap();
    cpu.reset_counts();
    let want = vec![start.clone(), top, goal.clone()];
    assert_eq!(reduce_waypoints(&cpu, &path, RES).unwrap(), want);
    assert_eq!(cpu.calls().3, 5, "motions checked one by one");
    assert_eq!(reduce_waypoints(&gpu, &path, RES).unwrap(), want);
    let (_, _, calls, motions) = gpu.calls();
    assert_eq!(
        (calls, motions),
        (2, 5 + 2),
        "one batch per kept waypoint but the last"
    );
    // A path already free of waypoints to drop, and the shortest path there is, stay.
    assert_eq!(reduce_waypoints(&cpu, &want, RES).unwrap(), want);
    let two = vec![start, goal];
    assert_eq!(reduce_waypoints(&cpu, &two, RES).unwrap(), two);
    let e = reduce_waypoints(&cpu, &two, 0.0).unwrap_err();
    assert!(matches!(e, TrajectoryError::BadResolution(_)), "{e}");
}

/// `shortcut_until` stops after the first round that gains less than `min_gain`: its result
/// is `shortcut`'s after some k rounds, k below the cap, round k gained less than the
/// threshold and every round before it gained at least that much.
#[test]
fn shortcut_stops_once_a_round_gains_little() {
    let (world, start, goal) = wall_2d();
    let path = zigzag_over_wall(&start, &goal);
    let len = |p: &[Vec<f64>]| path_length(&world.space, p);
    let (cap, min_gain) = (30, 0.01);
    let mut stopped_early = 0;
    for seed in 0..5 {
        let rng = || ChaCha8Rng::seed_from_u64(seed);
        let until = shortcut_until(&world, &path, RES, &mut rng(), cap, min_gain).unwrap();
        validate_path(&world, &until, RES).unwrap();
        let by_rounds: Vec<Vec<Vec<f64>>> = (0..=cap)
            .map(|k| shortcut(&world, &path, RES, &mut rng(), k).unwrap())
            .collect();
        let k = (1..=cap)
            .find(|&k| {
                len(&by_rounds[k - 1]) - len(&by_rounds[k]) < min_gain * len(&by_rounds[k - 1])
            })
            .unwrap_or(cap);
        assert_eq!(until, by_rounds[k], "seed {seed}: stops after round {k}");
        if k < cap {
            stopped_early += 1;
        }
    }
    assert!(stopped_early > 0, "no run stopped before {cap} rounds");
}

#[test]
fn shortcut_keeps_paths_valid_around_obstacles() {
    let (world, start, goal) = wall_2d();
    // A valid detour over the wall, with slack to remove.
    let path = vec![
        start.clone(),
        vec![0.1, 0.5],
        vec![0.3, 0.9],
        vec![0.5, 0.95],
        vec![0.7, 0.9],
        vec![0.9, 0.5],
        goal.clone(),
    ];
    validate_path(&world, &path, RES).unwrap();
    let mut rng = ChaCha8Rng::seed_from_u64(4);
    let out = shortcut(&world, &path, RES, &mut rng, 30).unwrap();
    assert!(path_length(&world.space, &out) < path_length(&world.space, &path));
    validate_path(&world, &out, RES).unwrap();
    let traj = time_parameterize(&world.space, &out, 1.0, 1.0, 0.02).unwrap();
    if validate(&world, &traj, RES).is_ok() {
        dense_recheck(&world, &traj, RES, 1.0, 1.0).unwrap();
    }
    let steps = time_parameterize_steps(&world.space, &out, 1.0, 1.0, RES).unwrap();
    validate(&world, &steps, RES).unwrap();
    dense_recheck(&world, &steps, RES, 1.0, 1.0).unwrap();
}

#[test]
fn validation_names_the_colliding_motion() {
    let (world, start, goal) = wall_2d();
    let path = vec![start.clone(), vec![0.3, 0.3], goal.clone()];
    match validate_path(&world, &path, RES) {
        Err(TrajectoryError::InCollision { index: 1 }) => {}
        other => panic!("expected motion 1 in collision, got {other:?}"),
    }
    match validate_path(&world, &[vec![0.5, 0.5]], RES) {
        Err(TrajectoryError::ConfigInCollision) => {}
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        validate_path(&world, &path, 0.0),
        Err(TrajectoryError::BadResolution(_))
    ));
    assert!(world.check_config(&start).unwrap());
}

/// A timed trajectory follows the path it was timed from (continuous joints unwrapped, a
/// repeated waypoint, either sampling); moved, reordered, corner-cutting or truncated points
/// are named.
#[test]
fn trajectories_follow_their_paths_and_departures_are_named() {
    let s = space(3, &[2]);
    let path = vec![
        vec![0.1, 0.1, 3.0],
        vec![0.9, 0.2, -3.0],
        vec![0.9, 0.2, -3.0],
        vec![0.9, 0.9, -2.0],
        vec![0.2, 0.5, 2.5],
    ];
    let traj = time_parameterize(&s, &path, 1.0, 1.0, 0.01).unwrap();
    assert!(traj.points.len() > 50);
    follows_path(&s, &path, &traj).unwrap();
    let steps = time_parameterize_steps(&s, &path, 1.0, 1.0, RES).unwrap();
    follows_path(&s, &path, &steps).unwrap();
    // A point of the first segment's middle, moved off the line by ten times the tolerance.
    let k = traj
        .points
        .iter()
        .position(|p| (p.positions[0] - 0.5).abs() < 0.02)
        .expect("a point near the middle of the first segment");
    let mut moved = traj.clone();
    moved.points[k].positions[1] += 10.0 * ON_PATH_TOLERANCE;
    match follows_path(&s, &path, &moved) {
        Err(TrajectoryError::OffPath { index, segment: 0 }) if index == k => {}
        other => panic!("expected point {k} off segment 0, got {other:?}"),
    }
    // Within the tolerance it still follows.
    let mut close = traj.clone();
    close.points[k].positions[1] += 0.5 * ON_PATH_TOLERANCE;
    follows_path(&s, &path, &close).unwrap();
    // Two points swapped: the second goes back along the segment.
    let mut swapped = traj.clone();
    swapped.points.swap(k, k + 1);
    match follows_path(&s, &path, &swapped) {
        Err(TrajectoryError::OffPath { index, .. }) if index == k + 1 => {}
        other => panic!("expected point {} named, got {other:?}", k + 1),
    }
    // Without the waypoint at the first corner the motion across it cuts the corner.
    let corner = traj
        .points
        .iter()
        .position(|p| p.positions == vec![0.9, 0.2, -3.0 + 2.0 * PI])
        .expect("the first corner is a point");
    let mut cut = traj.clone();
    cut.points.remove(corner);
    assert!(matches!(
        follows_path(&s, &path, &cut),
        Err(TrajectoryError::OffPath { segment: 0, .. })
    ));
    // Stopping short of the goal, or starting elsewhere.
    let mut short = traj.clone();
    short.points.truncate(traj.points.len() - 3);
    assert!(matches!(
        follows_path(&s, &path, &short),
        Err(TrajectoryError::EndsEarly { segments: 4, .. })
    ));
    let mut late = traj.clone();
    late.points.remove(0);
    assert!(matches!(
        follows_path(&s, &path, &late),
        Err(TrajectoryError::OffPath {
            index: 0,
            segment: 0
        })
    ));
    // The trajectory of another path.
    let other = time_parameterize(&s, &path[..3], 1.0, 1.0, 0.01).unwrap();
    assert!(matches!(
        follows_path(&s, &path, &other),
        Err(TrajectoryError::EndsEarly { .. })
    ));
}

/// `validate_along` checks the path's motions with the checker and the points against the
/// path: a path through the wall is named by its motion, a trajectory of a valid path passes,
/// and the same trajectory against another (valid) path does not.
#[test]
fn validation_along_the_path_checks_both_the_motions_and_the_points() {
    let (world, start, goal) = wall_2d();
    let detour = zigzag_over_wall(&start, &goal);
    let traj = time_parameterize(&world.space, &detour, 1.0, 1.0, 0.02).unwrap();
    validate_along(&world, &detour, &traj, RES).unwrap();
    dense_recheck(&world, &traj, RES, 1.0, 1.0).unwrap();
    let through = vec![start.clone(), vec![0.5, 0.3], goal.clone()];
    let straight = time_parameterize(&world.space, &through, 1.0, 1.0, 0.02).unwrap();
    match validate_along(&world, &through, &straight, RES) {
        Err(TrajectoryError::InCollision { index: 0 }) => {}
        other => panic!("expected motion 0 in collision, got {other:?}"),
    }
    let mut above = detour.clone();
    above[1][1] += 0.05;
    validate_path(&world, &above, RES).unwrap();
    assert!(matches!(
        validate_along(&world, &above, &traj, RES),
        Err(TrajectoryError::OffPath { .. })
    ));
}

#[test]
fn sampling_follows_the_points_as_a_controller_would() {
    let world = BoxWorld::new(space(3, &[]), vec![]);
    let path = vec![
        vec![0.1, 0.1, 0.1],
        vec![0.9, 0.2, 0.4],
        vec![0.2, 0.5, 0.3],
    ];
    let traj = time_parameterize(&world.space, &path, 1.0, 1.0, 0.05).expect("timing");
    traj.check_followable().expect("followable");
    // At every point: its positions and velocities.
    for p in &traj.points {
        let (q, v) = traj.sample(p.time_from_start);
        for j in 0..3 {
            assert!(
                (q[j] - p.positions[j]).abs() < 1e-9,
                "{q:?} vs {:?}",
                p.positions
            );
            if p.time_from_start > 0.0 && p.time_from_start < traj.duration() {
                assert!(
                    (v[j] - p.velocities[j]).abs() < 1e-9,
                    "{v:?} vs {:?}",
                    p.velocities
                );
            }
        }
    }
    // Between points: continuous, and the velocity is the derivative of the positions.
    let dt = 1e-6;
    let steps = 500;
    let mut last = traj.sample(0.0).0;
    for k in 1..steps {
        let t = traj.duration() * f64::from(k) / f64::from(steps);
        let (q, v) = traj.sample(t);
        let (q2, _) = traj.sample(t + dt);
        for j in 0..3 {
            assert!((q[j] - last[j]).abs() < 0.02, "jump at {t}");
            assert!(((q2[j] - q[j]) / dt - v[j]).abs() < 1e-3, "velocity at {t}");
        }
        last = q;
    }
    // Before the start and after the end: held, at rest.
    assert_eq!(traj.sample(-1.0), (path[0].clone(), vec![0.0; 3]));
    let (end, v) = traj.sample(traj.duration() + 1.0);
    assert!(end.iter().zip(&path[2]).all(|(a, b)| (a - b).abs() < 1e-12));
    assert_eq!(v, vec![0.0; 3]);

    // Without velocities: linear between points.
    let mut linear = traj.clone();
    linear.points.truncate(2);
    for p in &mut linear.points {
        p.velocities.clear();
    }
    let (a, b) = (&linear.points[0], &linear.points[1]);
    let mid = (a.time_from_start + b.time_from_start) / 2.0;
    let (q, _) = linear.sample(mid);
    for (j, qj) in q.iter().enumerate() {
        assert!((qj - (a.positions[j] + b.positions[j]) / 2.0).abs() < 1e-12);
    }
}

#[test]
fn trajectories_a_controller_cannot_follow_are_named() {
    let world = BoxWorld::new(space(2, &[]), vec![]);
    let path = vec![vec![0.1, 0.1], vec![0.5, 0.5], vec![0.9, 0.1]];
    let good = time_parameterize(&world.space, &path, 1.0, 1.0, 0.05).expect("timing");
    let mut t = good.clone();
    t.points.clear();
    assert!(t.check_followable().unwrap_err().contains("no points"));
    let mut t = good.clone();
    t.points[1].positions.pop();
    assert!(t.check_followable().unwrap_err().contains("point 1"));
    let mut t = good.clone();
    t.points[2].positions[0] = f64::NAN;
    assert!(t.check_followable().unwrap_err().contains("point 2"));
    let mut t = good.clone();
    t.points[1].velocities = vec![0.0];
    assert!(t.check_followable().unwrap_err().contains("velocities"));
    let mut t = good.clone();
    t.points[2].time_from_start = t.points[1].time_from_start;
    assert!(t
        .check_followable()
        .unwrap_err()
        .contains("time_from_start"));
}

/// Largest change of a joint's acceleration per second between consecutive points, over its
/// jerk limit (1: at the limit), and whether the positions agree with the velocities and
/// accelerations (each step's displacement against the one they integrate to).
fn jerk_use(traj: &Trajectory, jmax: &[f64]) -> (f64, f64) {
    let mut use_ = 0.0f64;
    let mut mismatch = 0.0f64;
    for w in traj.points.windows(2) {
        let dt = w[1].time_from_start - w[0].time_from_start;
        for (j, &limit) in jmax.iter().enumerate() {
            let da = w[1].accelerations[j] - w[0].accelerations[j];
            if limit.is_finite() {
                use_ = use_.max(da.abs() / (limit * dt));
            }
            // Constant jerk over the step: x1 = x0 + v0 dt + a0 dt^2 / 2 + da dt^2 / 6.
            let predicted = w[0].positions[j]
                + w[0].velocities[j] * dt
                + (0.5 * w[0].accelerations[j] + da / 6.0) * dt * dt;
            mismatch = mismatch.max((w[1].positions[j] - predicted).abs());
        }
    }
    (use_, mismatch)
}

#[test]
fn jerk_limited_segments_match_the_s_curve_durations() {
    // One joint, v = 1, a = 2 (space(1)), one unit of motion.
    let mut s = space(1, &[]);
    let path = vec![vec![0.0], vec![1.0]];
    // j = 4: ramps of 0.5 s reach a = 2 and then v = 1 exactly as the distance is covered
    // (no hold, no cruise): 2 s, against the trapezoid's 1.5 s.
    s.max_jerk = vec![4.0];
    let t = time_parameterize(&s, &path, 1.0, 1.0, 0.001).unwrap();
    assert!((t.duration() - 2.0).abs() < 1e-9, "{}", t.duration());
    // j = 1: a = 2 is never reached; the peak speed is (j / 4)^(1/3) and the duration four
    // ramps of (1/4)^(1/6) s.
    s.max_jerk = vec![1.0];
    let t = time_parameterize(&s, &path, 1.0, 1.0, 0.001).unwrap();
    let expected = 4.0 * 0.25f64.powf(1.0 / 6.0);
    assert!((t.duration() - expected).abs() < 1e-9, "{}", t.duration());
    let peak = t.points.iter().map(|p| p.velocities[0]).fold(0.0, f64::max);
    assert!((peak - 0.25f64.cbrt()).abs() < 1e-3, "{peak}");
    // A jerk limit so high that the ramps vanish: the trapezoid's time.
    s.max_jerk = vec![1e9];
    let t = time_parameterize(&s, &path, 1.0, 1.0, 0.001).unwrap();
    assert!((t.duration() - 1.5).abs() < 1e-3, "{}", t.duration());
    // A jerk limit that is not positive is named.
    s.max_jerk = vec![0.0];
    let e = time_parameterize(&s, &path, 1.0, 1.0, 0.001).unwrap_err();
    assert!(e.to_string().contains("jerk"), "{e}");
}

#[test]
fn jerk_limits_keep_every_joint_within_its_limits_with_continuous_acceleration() {
    let mut world = BoxWorld::new(space(3, &[]), vec![]);
    // Joint 2 has no jerk limit: it moves with the others on each straight segment.
    world.space.max_jerk = vec![6.0, 20.0, f64::INFINITY];
    let path = vec![
        vec![0.1, 0.1, 0.1],
        vec![0.9, 0.2, 0.4],
        vec![0.9, 0.9, 0.9],
        vec![0.2, 0.5, 0.3],
    ];
    let plain = {
        let mut s = world.space.clone();
        s.max_jerk = vec![f64::INFINITY; 3];
        s
    };
    for (vs, acc) in [(1.0, 1.0), (0.5, 0.25)] {
        let traj = time_parameterize(&world.space, &path, vs, acc, 0.002).unwrap();
        dense_recheck(&world, &traj, RES, vs, acc).unwrap();
        follows_path(&world.space, &path, &traj).unwrap();
        let (use_, mismatch) = jerk_use(&traj, &world.space.max_jerk);
        assert!(use_ <= 1.0 + 1e-6, "jerk at {use_} of the limit");
        // Not needlessly slow: some segment ramps at the limit.
        assert!(use_ > 0.99, "jerk at most {use_} of the limit");
        assert!(
            mismatch < 1e-6,
            "positions off their derivatives by {mismatch}"
        );
        // Every waypoint is at rest with no acceleration (the ramps start and end at zero).
        for w in &path {
            let at = traj
                .points
                .iter()
                .find(|p| p.positions == *w)
                .expect("waypoint kept");
            assert!(at.velocities.iter().all(|v| v.abs() < 1e-12));
            assert!(at.accelerations.iter().all(|a| a.abs() < 1e-9), "{at:?}");
        }
        // Without jerk limits the same path is quicker, and its acceleration jumps.
        let fast = time_parameterize(&plain, &path, vs, acc, 0.002).unwrap();
        assert!(fast.duration() < traj.duration());
        assert!(jerk_use(&fast, &world.space.max_jerk).0 > 10.0);
    }
    // Steps sampling (the checked configurations) gets the same profile.
    let steps = time_parameterize_steps(&world.space, &path, 1.0, 1.0, RES).unwrap();
    let timed = time_parameterize(&world.space, &path, 1.0, 1.0, 0.002).unwrap();
    assert!((steps.duration() - timed.duration()).abs() < 1e-9);
    dense_recheck(&world, &steps, RES, 1.0, 1.0).unwrap();
    follows_path(&world.space, &path, &steps).unwrap();
}
