//! Rounded corners (`PlanRequest::path_tolerance`, `trajectory::rounded`) on worlds of boxes:
//! planned trajectories pass their corners without stopping, stay collision free (checked
//! densely with the exact test, between points along straight lines and along the cubic
//! splines a trajectory controller follows), within the limits and quicker than stopping; an
//! arc that would collide is narrowed, one that always would becomes a stop.

mod common;

use common::*;
use gpu_motion_planner::planners::{plan, PlanRequest, PlannerId};
use gpu_motion_planner::trajectory::rounded::round_corners;
use gpu_motion_planner::trajectory::{validate, PathTiming, Trajectory};

fn request(start: &[f64], goal: &[f64], tolerance: f64) -> PlanRequest {
    let mut r = PlanRequest::new(start.to_vec(), goal.to_vec(), PlannerId::RrtConnect);
    r.resolution = RES;
    r.seed = 7;
    r.path_tolerance = tolerance;
    r
}

/// Checks the cubic Hermite spline between consecutive points (positions and velocities, as
/// a joint trajectory controller interpolates) with the exact test, 50 samples per step.
fn splines_free(world: &BoxWorld, traj: &Trajectory) -> Result<(), String> {
    for (i, w) in traj.points.windows(2).enumerate() {
        let (a, b) = (&w[0], &w[1]);
        let h = b.time_from_start - a.time_from_start;
        for k in 0..=50 {
            let s = k as f64 / 50.0;
            let (h00, h10) = (
                2.0 * s * s * s - 3.0 * s * s + 1.0,
                s * s * s - 2.0 * s * s + s,
            );
            let (h01, h11) = (-2.0 * s * s * s + 3.0 * s * s, s * s * s - s * s);
            let q: Vec<f64> = (0..a.positions.len())
                .map(|j| {
                    h00 * a.positions[j]
                        + h10 * h * a.velocities[j]
                        + h01 * b.positions[j]
                        + h11 * h * b.velocities[j]
                })
                .collect();
            if !world.exact_free(&q) {
                return Err(format!("spline {i} at {s}: {q:?} collides"));
            }
        }
    }
    Ok(())
}

/// Around the wall (2-DOF) and through the window (3-DOF): with a tolerance the same shortcut
/// path is timed with rounded corners, quicker than stopping, never slower than 0.2 of the
/// joint-space speed limit between the ends (it does not stop), collision free by the dense
/// re-check and along the controller's splines, and the same for the same seed.
#[test]
fn planned_corners_are_rounded_free_and_quicker() {
    for (name, (world, start, goal)) in [("wall", wall_2d()), ("window", window_3d())] {
        let stopping = plan(&world, &request(&start, &goal, 0.0)).expect("planned");
        let rounded = plan(&world, &request(&start, &goal, 0.1)).expect("planned");
        assert_eq!(
            rounded.path, stopping.path,
            "{name}: the same shortcut path"
        );
        assert!(rounded.path.len() >= 3, "{name}: the path has corners");
        let PathTiming::Rounded { corners, .. } = &rounded.timing else {
            panic!("{name}: timed {:?}", rounded.timing);
        };
        assert_eq!(corners.len(), rounded.path.len());
        assert!(corners[1..corners.len() - 1].iter().any(|c| *c > 0.0));
        let (t0, t1) = (
            stopping.trajectory.duration(),
            rounded.trajectory.duration(),
        );
        assert!(t1 < t0, "{name}: rounded {t1} s, stopping {t0} s");
        dense_recheck(&world, &rounded.trajectory, RES, 1.0, 1.0)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        splines_free(&world, &rounded.trajectory).unwrap_or_else(|e| panic!("{name}: {e}"));
        validate(&world, &rounded.trajectory, RES).expect("re-validated");
        let pts = &rounded.trajectory.points;
        for p in &pts[1..pts.len() - 1] {
            let v: f64 = p.velocities.iter().map(|x| x * x).sum::<f64>().sqrt();
            assert!(v > 1e-6, "{name}: at rest at {:?}", p.positions);
        }
        let again = plan(&world, &request(&start, &goal, 0.1)).expect("planned");
        assert_eq!(
            again.trajectory, rounded.trajectory,
            "{name}: deterministic"
        );
    }
}

/// An L-shaped path (up, then right) with a box inside the corner: the polyline misses it,
/// the arc at 0.1 from the corner crosses it, the arc at 0.05 passes it. `round_corners`
/// halves the corner once; without the box it keeps 0.1; with a box filling the corner every
/// halving collides and the corner becomes a stop.
#[test]
fn an_arc_that_collides_is_narrowed_then_dropped() {
    let path = vec![vec![0.2, 0.2], vec![0.2, 0.8], vec![0.8, 0.8]];
    let inside = aabb(&[0.25, 0.70], &[0.30, 0.75]);
    // From 2 mm off both straight parts (with the world's margin) to 0.1 along the bisector.
    let filling = aabb(&[0.208, 0.70], &[0.30, 0.792]);
    for (obstacles, want) in [
        (vec![], 0.1),
        (vec![inside.clone()], 0.05),
        (vec![filling], 0.0),
    ] {
        let world = BoxWorld::new(space(2, &[]), obstacles.clone());
        validate(
            &world,
            &gpu_motion_planner::trajectory::time_parameterize(&world.space, &path, 1.0, 1.0, 0.02)
                .expect("timed"),
            RES,
        )
        .expect("the polyline is free");
        let corners = round_corners(&world, &path, 0.1, RES).expect("checked");
        assert_eq!(corners, vec![0.0, want, 0.0], "{obstacles:?}");
        let timing = PathTiming::Rounded {
            vel_scale: 1.0,
            acc_scale: 1.0,
            sample_dt: 0.02,
            corners,
        };
        let traj = timing.time(&world.space, &path, None).expect("timed");
        dense_recheck(&world, &traj, RES, 1.0, 1.0).expect("free");
        splines_free(&world, &traj).expect("splines free");
    }
    // Untouched by the narrowing: the timing at 0.1 does cross the box.
    let world = BoxWorld::new(space(2, &[]), vec![inside]);
    let wide = PathTiming::Rounded {
        vel_scale: 1.0,
        acc_scale: 1.0,
        sample_dt: 0.02,
        corners: vec![0.0, 0.1, 0.0],
    }
    .time(&world.space, &path, None)
    .expect("timed");
    assert!(dense_recheck(&world, &wide, RES, 1.0, 1.0).is_err());
    assert!(validate(&world, &wide, RES).is_err());
}

/// Where rounding gains nothing the plan stops at its waypoints as without a tolerance: a
/// straight path (no corner), and a robot with jerk limits (rounded corners do not follow
/// them; its segments are S-curves).
#[test]
fn plans_without_corners_or_with_jerk_limits_stop_at_waypoints() {
    let world = BoxWorld::new(space(2, &[]), vec![]);
    let res = plan(&world, &request(&[0.2, 0.2], &[0.8, 0.6], 0.1)).expect("planned");
    assert_eq!(res.path.len(), 2);
    assert!(
        matches!(res.timing, PathTiming::Stops { .. }),
        "{:?}",
        res.timing
    );
    let (mut jerky, start, goal) = wall_2d();
    jerky.space.max_jerk = vec![20.0, 30.0];
    let res = plan(&jerky, &request(&start, &goal, 0.1)).expect("planned");
    assert!(res.path.len() >= 3);
    assert!(
        matches!(res.timing, PathTiming::Stops { .. }),
        "{:?}",
        res.timing
    );
    let stopping = plan(&jerky, &request(&start, &goal, 0.0)).expect("planned");
    assert_eq!(res.trajectory, stopping.trajectory);
}
