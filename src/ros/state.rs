//! `~/check_state` (CheckState) and `~/check_trajectory` (CheckTrajectory): requests →
//! [`PlanningService::check_state`] / [`PlanningService::check_trajectory`], and the answers.

use r2r::gpu_motion_planner_interfaces::srv::{CheckState, CheckTrajectory};
use r2r::sensor_msgs::msg::JointState;
use r2r::trajectory_msgs::msg::JointTrajectory;

use crate::service::{PlanningService, StateCheckRequest, TrajectoryCheckRequest};

/// Merges a `joint_states` message into the joint state kept so far: each joint it names
/// takes its position (others keep theirs), as robot_state_publisher and MoveIt's state
/// monitor do where several drivers (an arm's controller, a gripper's) publish their own
/// joints. The header is the message's. A message whose lists differ in length changes
/// nothing; a joint whose position is not finite keeps its value. `Err` says what was
/// left out.
pub fn merge_joint_state(kept: &mut JointState, msg: &JointState) -> Result<(), String> {
    if msg.name.len() != msg.position.len() {
        return Err(format!(
            "{} names but {} positions; message ignored",
            msg.name.len(),
            msg.position.len()
        ));
    }
    kept.header = msg.header.clone();
    let mut skipped = Vec::new();
    for (name, &x) in msg.name.iter().zip(&msg.position) {
        if !x.is_finite() {
            skipped.push(format!("'{name}' ({x})"));
            continue;
        }
        match kept.name.iter().position(|n| n == name) {
            Some(i) => kept.position[i] = x,
            None => {
                kept.name.push(name.clone());
                kept.position.push(x);
            }
        }
    }
    // Only names and positions are kept (the node reads nothing else).
    kept.velocity.clear();
    kept.effort.clear();
    if skipped.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "positions that are not finite left out: {}",
            skipped.join(", ")
        ))
    }
}

/// Answers a CheckState request on `service`. An empty `state.name` means the current joint
/// state.
pub fn check_state(
    service: &mut PlanningService,
    req: &CheckState::Request,
) -> CheckState::Response {
    let request = StateCheckRequest {
        state: (!req.state.name.is_empty())
            .then(|| (req.state.name.clone(), req.state.position.clone())),
        group: Some(req.group_name.clone()),
    };
    match service.check_state(&request) {
        Ok(check) => {
            let mut why: Vec<&str> = check.out_of_limits.iter().map(String::as_str).collect();
            why.extend(check.contacts.iter().map(String::as_str));
            CheckState::Response {
                success: true,
                valid: check.valid,
                message: if check.valid {
                    "valid".into()
                } else {
                    format!("invalid: {}", why.join("; "))
                },
                contacts: check.contacts,
                out_of_limits: check.out_of_limits,
                backend: check.backend,
            }
        }
        Err(e) => CheckState::Response {
            success: false,
            message: e.to_string(),
            ..Default::default()
        },
    }
}

/// Answers a CheckTrajectory request on `service`. A zero `resolution` means the node's.
pub fn check_trajectory(
    service: &mut PlanningService,
    req: &CheckTrajectory::Request,
) -> CheckTrajectory::Response {
    let request = TrajectoryCheckRequest {
        joint_names: req.trajectory.joint_names.clone(),
        points: req
            .trajectory
            .points
            .iter()
            .map(|p| p.positions.clone())
            .collect(),
        resolution: (req.resolution != 0.0).then_some(req.resolution),
        group: Some(req.group_name.clone()),
    };
    let index = |i: Option<usize>| i.map_or(-1, |i| i32::try_from(i).unwrap_or(i32::MAX));
    match service.check_trajectory(&request) {
        Ok(check) => {
            let (point, contacts) = match check.first_invalid_point {
                Some((i, why)) => (Some(i), why),
                None => (None, Vec::new()),
            };
            let message = if check.valid {
                format!(
                    "valid: {} points, {} motions",
                    check.points_valid.len(),
                    check.segments_valid.len()
                )
            } else {
                let mut parts = Vec::new();
                if let Some(i) = point {
                    parts.push(format!("point {i} is invalid: {}", contacts.join("; ")));
                }
                if let Some(s) = check.first_invalid_segment {
                    parts.push(format!(
                        "the motion from point {s} to point {} collides",
                        s + 1
                    ));
                }
                format!(
                    "invalid: {} ({} of {} points and {} of {} motions invalid)",
                    parts.join("; "),
                    check.points_valid.iter().filter(|v| !**v).count(),
                    check.points_valid.len(),
                    check.segments_valid.iter().filter(|v| !**v).count(),
                    check.segments_valid.len()
                )
            };
            CheckTrajectory::Response {
                success: true,
                valid: check.valid,
                first_invalid_point: index(point),
                first_invalid_segment: index(check.first_invalid_segment),
                points_valid: check.points_valid,
                segments_valid: check.segments_valid,
                contacts,
                resolution: check.resolution,
                backend: check.backend,
                message,
            }
        }
        Err(e) => CheckTrajectory::Response {
            success: false,
            first_invalid_point: -1,
            first_invalid_segment: -1,
            message: e.to_string(),
            ..Default::default()
        },
    }
}

/// Whether `trajectory` may be sent to a controller now: its `time_from_start` increases
/// from point to point (from 0 or later), every joint it names is within `start_tolerance`
/// (the `execution_start_tolerance` parameter, by default
/// [`crate::service::START_TOLERANCE`]) of the current
/// joint state at its first point, and it is valid in the
/// current scene, points and motions (as `~/check_trajectory` answers). `Ok` describes it
/// (points and duration); `Err` says why not.
pub fn execution_verdict(
    service: &mut PlanningService,
    trajectory: &JointTrajectory,
    start_tolerance: f64,
) -> Result<String, String> {
    let first = trajectory
        .points
        .first()
        .ok_or("the trajectory has no points")?;
    // Seconds to the nanosecond of a Duration, without trailing zeros.
    let shown = |t: f64| {
        let s = format!("{t:.9}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    };
    let mut before = 0.0;
    for (i, p) in trajectory.points.iter().enumerate() {
        let t = super::plan::seconds(&p.time_from_start);
        let increases = if i == 0 { t >= 0.0 } else { t > before };
        if !(increases && t.is_finite()) {
            let (t, before) = (shown(t), shown(before));
            return Err(if i == 0 {
                format!("point 0's time_from_start ({t} s) is before the start")
            } else {
                format!(
                    "point {i}'s time_from_start ({t} s) does not come after point {}'s ({before} \
                     s)",
                    i - 1
                )
            });
        }
        before = t;
    }
    let off = service
        .start_deviations(&trajectory.joint_names, &first.positions, start_tolerance)
        .map_err(|e| e.to_string())?;
    if !off.is_empty() {
        return Err(format!(
            "the robot is not at the trajectory's start: {}",
            off.join("; ")
        ));
    }
    let check = check_trajectory(
        service,
        &CheckTrajectory::Request {
            trajectory: trajectory.clone(),
            // The node's resolution, for the group whose joints the trajectory has.
            resolution: 0.0,
            group_name: String::new(),
        },
    );
    if !(check.success && check.valid) {
        return Err(format!("not valid in the current scene: {}", check.message));
    }
    let end = super::execute::duration_of(trajectory);
    Ok(format!("{} points, {end:.2} s,", trajectory.points.len()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::service::START_TOLERANCE;
    use r2r::trajectory_msgs::msg::JointTrajectoryPoint;

    fn service() -> PlanningService {
        let (robot, scene) = crate::cli::demo::bundled().expect("bundled");
        PlanningService::new(robot, scene, crate::service::ServiceSettings::default())
    }

    fn joint_names(service: &PlanningService) -> Vec<String> {
        service.group().expect("group").space.names
    }

    fn state(names: &[&str], positions: &[f64]) -> JointState {
        JointState {
            name: names.iter().map(|s| s.to_string()).collect(),
            position: positions.to_vec(),
            velocity: vec![0.0; positions.len()],
            ..Default::default()
        }
    }

    #[test]
    fn joint_states_from_several_publishers_are_merged() {
        let mut kept = JointState::default();
        merge_joint_state(&mut kept, &state(&["a", "b"], &[1.0, 2.0])).unwrap();
        merge_joint_state(&mut kept, &state(&["c"], &[3.0])).unwrap();
        merge_joint_state(&mut kept, &state(&["b"], &[-2.0])).unwrap();
        assert_eq!(kept.name, ["a", "b", "c"]);
        assert_eq!(kept.position, [1.0, -2.0, 3.0]);
        assert!(kept.velocity.is_empty());
        // Lists of different lengths change nothing; a NaN keeps its joint's value.
        let mut bad = state(&["a", "c"], &[9.0]);
        assert!(merge_joint_state(&mut kept, &bad).is_err());
        assert_eq!(kept.position, [1.0, -2.0, 3.0]);
        bad.position = vec![f64::NAN, 4.0];
        let e = merge_joint_state(&mut kept, &bad).unwrap_err();
        assert!(e.contains("'a'"), "{e}");
        assert_eq!(kept.position, [1.0, -2.0, 4.0]);
    }

    #[test]
    fn execution_needs_the_robot_at_the_start_and_a_valid_trajectory() {
        let mut s = service();
        let names = joint_names(&s);
        let point = |q: &[f64], t: i32| JointTrajectoryPoint {
            positions: q.to_vec(),
            time_from_start: r2r::builtin_interfaces::msg::Duration { sec: t, nanosec: 0 },
            ..Default::default()
        };
        let free = [0.0, -1.2, 1.2, -1.5, -1.5, 0.0];
        let other = [0.5, -1.2, 1.2, -1.5, -1.5, 0.0];
        let low = [0.0, 1.4, 0.4, 0.0, 0.0, 0.0];
        let trajectory = JointTrajectory {
            joint_names: names.clone(),
            points: vec![point(&free, 0), point(&other, 2)],
            ..Default::default()
        };
        let e = execution_verdict(&mut s, &trajectory, START_TOLERANCE).unwrap_err();
        assert!(e.contains("no joint state"), "{e}");
        s.set_joint_state(&names, &other).unwrap();
        let e = execution_verdict(&mut s, &trajectory, START_TOLERANCE).unwrap_err();
        assert!(
            e.contains("not at the trajectory's start") && e.contains(&names[0]),
            "{e}"
        );
        assert!(!e.contains(&names[1]), "only the joint that is off: {e}");
        // Within the tolerance of the start: sent.
        let mut near = free;
        near[0] += 0.5 * START_TOLERANCE;
        s.set_joint_state(&names, &near).unwrap();
        let ok = execution_verdict(&mut s, &trajectory, START_TOLERANCE).unwrap();
        assert!(ok.contains("2 points") && ok.contains("2.00 s"), "{ok}");
        // A larger tolerance (execution_start_tolerance) lets a farther start through.
        near[0] = free[0] + 0.05;
        s.set_joint_state(&names, &near).unwrap();
        let e = execution_verdict(&mut s, &trajectory, START_TOLERANCE).unwrap_err();
        assert!(e.contains("tolerance 0.01"), "{e}");
        execution_verdict(&mut s, &trajectory, 0.06).unwrap();
        s.set_joint_state(&names, &free).unwrap();
        // Through the shelf: refused with what collides.
        let through = JointTrajectory {
            points: vec![point(&free, 0), point(&low, 2)],
            ..trajectory
        };
        let e = execution_verdict(&mut s, &through, START_TOLERANCE).unwrap_err();
        assert!(
            e.contains("not valid in the current scene") && e.contains("shelf"),
            "{e}"
        );
        // Times that do not increase (a controller would refuse them), or start before 0.
        let mut late = JointTrajectory {
            joint_names: names.clone(),
            points: vec![point(&free, 0), point(&other, 2), point(&free, 2)],
            ..Default::default()
        };
        let e = execution_verdict(&mut s, &late, START_TOLERANCE).unwrap_err();
        assert!(e.contains("point 2's time_from_start (2 s)"), "{e}");
        late.points[0].time_from_start.sec = -1;
        let e = execution_verdict(&mut s, &late, START_TOLERANCE).unwrap_err();
        assert!(e.contains("point 0's time_from_start (-1 s)"), "{e}");
    }

    #[test]
    fn states_and_trajectories_are_answered_and_bad_requests_named() {
        let mut s = service();
        let names = joint_names(&s);
        let state = |q: &[f64]| {
            let mut req = CheckState::Request::default();
            req.state.name = names.clone();
            req.state.position = q.to_vec();
            req
        };
        let free = [0.0, -1.2, 1.2, -1.5, -1.5, 0.0];
        let res = check_state(&mut s, &state(&free));
        assert!(res.success && res.valid, "{}", res.message);
        assert!(res.contacts.is_empty() && res.out_of_limits.is_empty());
        // The forearm folded down against the shelf.
        let low = [0.0, 1.4, 0.4, 0.0, 0.0, 0.0];
        let res = check_state(&mut s, &state(&low));
        assert!(res.success && !res.valid, "{}", res.message);
        assert!(
            res.contacts
                .iter()
                .any(|c| c.contains("obstacle 'shelf_back'")),
            "{:?}",
            res.contacts
        );
        // Past a limit: invalid, the joint named.
        let mut far = free;
        far[1] = 10.0;
        let res = check_state(&mut s, &state(&far));
        assert!(res.success && !res.valid);
        assert!(
            res.out_of_limits[0].contains(&names[1]),
            "{:?}",
            res.out_of_limits
        );
        // No state and no joint state received: refused, naming why.
        let res = check_state(&mut s, &CheckState::Request::default());
        assert!(
            !res.success && res.message.contains("no joint state"),
            "{}",
            res.message
        );

        let point = |q: &[f64]| JointTrajectoryPoint {
            positions: q.to_vec(),
            ..Default::default()
        };
        let mut req = CheckTrajectory::Request::default();
        req.trajectory.joint_names = names.clone();
        req.trajectory.points = vec![point(&free), point(&low), point(&free)];
        let res = check_trajectory(&mut s, &req);
        assert!(res.success && !res.valid, "{}", res.message);
        assert_eq!(res.points_valid, vec![true, false, true]);
        assert_eq!(res.first_invalid_point, 1);
        assert!(
            res.contacts.iter().any(|c| c.contains("shelf_back")),
            "{:?}",
            res.contacts
        );
        assert_eq!(res.segments_valid, vec![false, false]);
        assert_eq!(res.first_invalid_segment, 0);
        req.trajectory.points = vec![point(&free)];
        let res = check_trajectory(&mut s, &req);
        assert!(res.success && res.valid, "{}", res.message);
        assert_eq!(res.first_invalid_point, -1);
        req.trajectory.points[0].positions.pop();
        let res = check_trajectory(&mut s, &req);
        assert!(
            !res.success && res.message.contains("point 0"),
            "{}",
            res.message
        );
    }
}
