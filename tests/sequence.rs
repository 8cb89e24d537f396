//! Motion sequences whose items blend into each other (`plan_sequence` with `blend_radius`)
//! on the bundled arm, checked independently: the joined trajectory collision free and within
//! the joint limits, not stopping at a blended corner, the tool passing near the corner within
//! the radius and on the LIN's line outside the spheres, quicker than stopping.

mod common;

use common::service::{cpu_checker, names, place, request, service, tool_pose_at};
use gpu_motion_planner::service::sequence::{ServiceSequenceItem, ServiceSequenceResponse};
use gpu_motion_planner::service::{
    ErrorCategory, MarkerKind, PlanningService, ServicePlanRequest, ServicePoseGoal,
};
use gpu_motion_planner::trajectory::{self, Trajectory};
use nalgebra::{Isometry3, Translation3, Vector3};

const FIRST: [f64; 6] = [-2.8, 0.3, 0.8, 0.3, 0.5, 0.2];
const MIDDLE: [f64; 6] = [-2.6, 0.4, 0.9, 0.3, 0.5, 0.2];
/// The items' velocity and acceleration scaling (a blend may use up to twice it).
const SCALING: f64 = 0.5;
/// How far the LIN item moves the tool up, m.
const DROP: f64 = 0.1;

fn tool_at(s: &PlanningService, q: &[f64]) -> Vector3<f64> {
    tool_pose_at(s, q).translation.vector
}

/// Where the LIN item ends: `DROP` above the tool at `MIDDLE`.
fn below(s: &PlanningService) -> Isometry3<f64> {
    Translation3::new(0.0, 0.0, DROP) * tool_pose_at(s, &MIDDLE)
}

/// PTP from `FIRST` to `MIDDLE` (blend `r[0]`), LIN down (blend `r[1]`), PTP back to `FIRST`
/// (blend `r[2]`).
fn items(s: &PlanningService, r: [f64; 3]) -> Vec<ServiceSequenceItem> {
    let pose = below(s);
    let (t, q) = (pose.translation.vector, pose.rotation.coords);
    let requests = [
        ServicePlanRequest {
            planner: Some("PTP".into()),
            ..request(s, &FIRST, &MIDDLE)
        },
        ServicePlanRequest {
            planner: Some("LIN".into()),
            goal_pose: Some(ServicePoseGoal {
                frame: "world".into(),
                link: None,
                position: [t.x, t.y, t.z],
                orientation: Some([q.x, q.y, q.z, q.w]),
                position_tolerance: None,
                orientation_tolerance: None,
            }),
            ..Default::default()
        },
        ServicePlanRequest {
            planner: Some("PTP".into()),
            goal: (names(s), FIRST.to_vec()),
            ..Default::default()
        },
    ];
    requests
        .into_iter()
        .zip(r)
        .map(|(request, blend_radius)| ServiceSequenceItem {
            request: ServicePlanRequest {
                vel_scale: Some(SCALING),
                acc_scale: Some(SCALING),
                ..request
            },
            blend_radius,
        })
        .collect()
}

/// The tool's position every millisecond of `traj`, with the time.
fn tool_samples(s: &PlanningService, traj: &Trajectory) -> Vec<(f64, Vector3<f64>)> {
    let steps = (traj.duration() / 1e-3).ceil() as usize;
    (0..=steps)
        .map(|i| {
            let t = (i as f64 * 1e-3).min(traj.duration());
            (t, tool_at(s, &traj.sample(t).0))
        })
        .collect()
}

/// Checks what every plan of a sequence must be: collision free by a fresh checker, within
/// the joint position, velocity and acceleration limits, times increasing, ending at rest.
fn assert_sound(s: &PlanningService, seq: &ServiceSequenceResponse) {
    let traj = &seq.trajectory;
    trajectory::validate(&cpu_checker(s), traj, 0.01).expect("the joined trajectory is free");
    let space = s.group().expect("group").space;
    for p in &traj.points {
        assert!(space.within_limits(&p.positions), "{p:?}");
        for j in 0..space.dof() {
            assert!(p.velocities[j].abs() <= space.max_velocity[j] * (1.0 + 1e-9));
            assert!(p.accelerations[j].abs() <= space.max_acceleration[j] * (1.0 + 1e-9));
        }
    }
    for w in traj.points.windows(2) {
        assert!(w[1].time_from_start > w[0].time_from_start);
    }
    let last = traj.points.last().expect("points");
    assert!(last.velocities.iter().all(|v| *v == 0.0));
    assert_eq!(seq.item_ends.last(), Some(&(traj.points.len() - 1)));
}

/// Two blends (3 cm at the PTP's end, 2 cm at the LIN's): the robot does not stop at either
/// corner, the tool passes within the radius of each corner but not through it, follows the
/// LIN's line outside the spheres, and the sequence takes less time than stopping at every
/// corner.
#[test]
fn blended_items_round_their_corners_within_the_radius() {
    let mut s = service();
    let stopping = s
        .plan_sequence(&items(&s, [0.0; 3]))
        .expect("stopping sequence");
    assert!(stopping.blends.is_empty());
    assert_sound(&s, &stopping);
    let radii = [0.03, 0.02, 0.0];
    let seq = s
        .plan_sequence(&items(&s, radii))
        .expect("blended sequence");
    assert_sound(&s, &seq);
    let traj = &seq.trajectory;
    assert!(
        traj.duration() < stopping.trajectory.duration(),
        "blended {} s, stopping {} s",
        traj.duration(),
        stopping.trajectory.duration()
    );
    assert_eq!(seq.blends.len(), 2);
    let corners = [tool_at(&s, &MIDDLE), below(&s).translation.vector];
    let samples = tool_samples(&s, traj);
    for (k, corner) in corners.iter().enumerate() {
        let end = &traj.points[seq.item_ends[k]];
        let speed: f64 = end.velocities.iter().map(|v| v * v).sum::<f64>().sqrt();
        assert!(speed > 1e-2, "item {k} hands over moving: {end:?}");
        let nearest = samples
            .iter()
            .map(|(_, p)| (p - corner).norm())
            .fold(f64::INFINITY, f64::min);
        assert!(
            nearest > 1e-3 && nearest < radii[k],
            "corner {k}: nearest {nearest} m"
        );
        let report = &seq.blends[k];
        assert_eq!((report.motion, report.radius), (k, radii[k]));
        assert!(
            (report.nearest - nearest).abs() < 2e-3,
            "{report:?} {nearest}"
        );
        assert!(report.farthest <= radii[k] * 1.05, "{report:?}");
    }
    // Between the two spheres the tool is on the LIN's line.
    let (a, b) = (corners[0], corners[1]);
    let dir = (b - a).normalize();
    let (t0, t1) = (
        traj.points[seq.item_ends[0]].time_from_start,
        traj.points[seq.item_ends[1]].time_from_start,
    );
    let mut on_line = 0;
    for (t, p) in &samples {
        if *t < t0
            || *t > t1
            || (p - a).norm() < radii[0] * 1.05
            || (p - b).norm() < radii[1] * 1.05
        {
            continue;
        }
        let off = p - a;
        let off = (off - dir * off.dot(&dir)).norm();
        assert!(off < 2e-3, "t {t}: {off} m off the line");
        on_line += 1;
    }
    assert!(on_line > 10, "{on_line} samples on the line");
}

/// A Cartesian speed limit on the LIN item holds over its part of the blended trajectory,
/// while the PTP items around it stay faster.
#[test]
fn a_blended_item_keeps_its_speed_limit() {
    let mut s = service();
    let mut list = items(&s, [0.03, 0.02, 0.0]);
    let limit = 0.05;
    list[1].request.speed_limit = Some(gpu_motion_planner::service::SpeedLimit {
        link: None,
        max_speed: limit,
    });
    let seq = s.plan_sequence(&list).expect("blended sequence");
    assert_sound(&s, &seq);
    let corners = [tool_at(&s, &MIDDLE), below(&s).translation.vector];
    let samples = tool_samples(&s, &seq.trajectory);
    let mut peak_line = 0.0f64;
    let mut peak_all = 0.0f64;
    for w in samples.windows(2) {
        let v = (w[1].1 - w[0].1).norm() / (w[1].0 - w[0].0).max(1e-12);
        peak_all = peak_all.max(v);
        let p = w[0].1;
        if (p - corners[0]).norm() > 0.03 && (p - corners[1]).norm() > 0.02 {
            let t = w[0].0;
            let (t0, t1) = (
                seq.trajectory.points[seq.item_ends[0]].time_from_start,
                seq.trajectory.points[seq.item_ends[1]].time_from_start,
            );
            if t > t0 && t < t1 {
                peak_line = peak_line.max(v);
            }
        }
    }
    assert!(peak_line <= limit * 1.01, "LIN part at {peak_line} m/s");
    assert!(
        peak_all > 2.0 * limit,
        "the PTP items run at {peak_all} m/s"
    );
}

/// Radii that cannot be blended are refused naming the item: the last item's, a negative one,
/// one larger than the item moves, spheres overlapping along the LIN; a blend into an
/// obstacle fails as a planning failure, and the same items without the blend still plan.
#[test]
fn bad_blend_radii_and_blocked_blends_are_refused_naming_the_item() {
    let mut s = service();
    let refused = |s: &mut PlanningService, r: [f64; 3], prefix: &str, text: &str| {
        let list = items(s, r);
        let e = s.plan_sequence(&list).expect_err("refused");
        let m = e.to_string();
        assert!(m.starts_with(prefix) && m.contains(text), "{r:?}: {m}");
        e
    };
    refused(
        &mut s,
        [0.0, 0.0, 0.01],
        "item 2 (PTP): blend_radius",
        "last motion",
    );
    refused(
        &mut s,
        [-0.01, 0.0, 0.0],
        "item 0 (PTP): blend_radius",
        "0 or more",
    );
    refused(
        &mut s,
        [f64::NAN, 0.0, 0.0],
        "item 0 (PTP): blend_radius",
        "finite",
    );
    refused(
        &mut s,
        [0.0, 0.5, 0.0],
        "item 1 (LIN): blend_radius",
        "stays within",
    );
    refused(
        &mut s,
        [0.06, 0.06, 0.0],
        "item 1 (LIN): blend_radius",
        "overlap",
    );

    // A small box that the fastest blend hits but the motions with stops miss, near the
    // tool where it hands over, at a corner of a pan turn and an elbow fold.
    let corner = |s: &PlanningService, r: f64| {
        let (a, b, c) = (
            [-2.8, 0.3, 0.8, 0.3, 0.5, 0.2],
            [-2.0, 0.3, 0.8, 0.3, 0.5, 0.2],
            [-2.0, 0.9, 0.2, 0.3, 0.5, 0.2],
        );
        let ptp = |request: ServicePlanRequest, blend_radius: f64| ServiceSequenceItem {
            request: ServicePlanRequest {
                planner: Some("PTP".into()),
                vel_scale: Some(SCALING),
                acc_scale: Some(SCALING),
                ..request
            },
            blend_radius,
        };
        vec![
            ptp(request(s, &a, &b), r),
            ptp(
                ServicePlanRequest {
                    goal: (names(s), c.to_vec()),
                    ..Default::default()
                },
                0.0,
            ),
        ]
    };
    let blended = s.plan_sequence(&corner(&s, 0.05)).expect("blended");
    let stopping = s.plan_sequence(&corner(&s, 0.0)).expect("stopping");
    assert!(blended.trajectory.duration() < stopping.trajectory.duration());
    let handover = tool_pose_at(
        &s,
        &blended.trajectory.points[blended.item_ends[0]].positions,
    );
    let mut placed = None;
    'search: for x in [-0.06, -0.03, 0.0, 0.03, 0.06] {
        for y in [-0.06, -0.03, 0.0, 0.03, 0.06] {
            let at = (handover * nalgebra::Point3::new(x, y, 0.0)).coords;
            place(&mut s, "box", 0, MarkerKind::Cube, at, 0.01);
            let checker = cpu_checker(&s);
            if trajectory::validate(&checker, &stopping.trajectory, 0.01).is_ok()
                && trajectory::validate(&checker, &blended.trajectory, 0.01).is_err()
            {
                placed = Some((x, y));
                break 'search;
            }
        }
    }
    assert!(placed.is_some(), "no box hits only the blend");
    // Another blend that misses it, or a refusal naming the collision; never one through it.
    match s.plan_sequence(&corner(&s, 0.05)) {
        Ok(other) => {
            assert_ne!(other.trajectory, blended.trajectory);
            assert_sound(&s, &other);
        }
        Err(e) => {
            let m = e.to_string();
            assert!(
                m.starts_with("item 0 (PTP): blend_radius") && m.contains("collides"),
                "{m}"
            );
            assert_eq!(e.category(), ErrorCategory::PlanningFailed);
        }
    }
}

/// An item may have a goal set (`other_goals`): it ends at the goal its planner reaches, the
/// item's plan says which, and the next item starts there.
#[test]
fn an_item_with_a_goal_set_ends_at_the_goal_reached_and_the_next_starts_there() {
    let mut s = service();
    // The first goal of item 0 with the tool inside a cube: left out, MIDDLE reached.
    let blocked = [-1.6, 0.3, 0.8, 0.0, 0.0, 0.0];
    let at = tool_at(&s, &blocked);
    place(&mut s, "blocks", 1, MarkerKind::Cube, at, 0.2);
    let items = vec![
        ServiceSequenceItem {
            request: ServicePlanRequest {
                planner: Some("PTP".into()),
                other_goals: vec![(names(&s), MIDDLE.to_vec())],
                ..request(&s, &FIRST, &blocked)
            },
            blend_radius: 0.0,
        },
        ServiceSequenceItem {
            request: ServicePlanRequest {
                planner: Some("PTP".into()),
                goal: (names(&s), FIRST.to_vec()),
                ..Default::default()
            },
            blend_radius: 0.0,
        },
    ];
    let seq = s.plan_sequence(&items).expect("plans");
    assert_eq!(seq.items[0].reached_goal, 1);
    assert_eq!(seq.items[1].reached_goal, 0);
    let at = |i: usize| seq.trajectory.points[seq.item_ends[i]].positions.clone();
    assert_eq!(at(0), MIDDLE.to_vec());
    assert_eq!(at(1), FIRST.to_vec());
    assert_eq!(
        seq.items[1].path.first().map(Vec::as_slice),
        Some(&MIDDLE[..])
    );
    assert_sound(&s, &seq);
    // A LIN item cannot take a goal set: refused naming the item and the field.
    let mut lin = items;
    lin[0].request.planner = Some("LIN".into());
    let e = s.plan_sequence(&lin).unwrap_err();
    let text = e.to_string();
    assert!(
        text.contains("item 0") && text.contains("other_goal_states"),
        "{text}"
    );
    assert_eq!(e.category(), ErrorCategory::InvalidGoal);
}
