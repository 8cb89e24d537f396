//! `~/plan` (PlanPath): request checking and defaults, and the answer.
//!
//! [`resolve`] turns a request into plain values with every "0/empty/negative means
//! default" rule applied and every outside value checked, so that the engine never sees
//! a malformed request. The engine is not wired in yet: [`answer`] reports that.

use r2r::gpu_motion_planner_interfaces::msg::PlanningStats;
use r2r::gpu_motion_planner_interfaces::srv::PlanPath;
use r2r::sensor_msgs::msg::JointState;

use super::params::{NodeParams, PLANNERS};

// PlanPath error codes as plain integers (r2r generates the .srv constants as enums).
const FAILURE: i32 = PlanPath::Response::FAILURE as i32;
const INVALID_GOAL_CONSTRAINTS: i32 = PlanPath::Response::INVALID_GOAL_CONSTRAINTS as i32;
const INVALID_ROBOT_STATE: i32 = PlanPath::Response::INVALID_ROBOT_STATE as i32;
const ROBOT_STATE_STALE: i32 = PlanPath::Response::ROBOT_STATE_STALE as i32;

/// Message of every `~/plan` answer until the engine is wired in.
pub const NOT_WIRED: &str = "planner not wired yet";

/// A PlanPath request with defaults applied and inputs checked.
#[derive(Debug, Clone, PartialEq)]
pub struct ResolvedRequest {
    /// Joint names, in the goal state's order.
    pub joint_names: Vec<String>,
    /// Start position of each joint in `joint_names`.
    pub start: Vec<f64>,
    /// Goal position of each joint in `joint_names`.
    pub goal: Vec<f64>,
    /// Planner to run, one of [`PLANNERS`].
    pub planner_id: String,
    /// Time budget in seconds, > 0.
    pub time_limit: f64,
    /// Random seed, >= 0.
    pub seed: u64,
    /// Velocity scaling in (0, 1].
    pub velocity_scaling: f64,
    /// Acceleration scaling in (0, 1].
    pub acceleration_scaling: f64,
}

/// Why a request was refused: a PlanPath error code and a message naming the input.
#[derive(Debug, Clone, PartialEq)]
pub struct Refusal {
    /// One of the `PlanPath::Response` error code constants.
    pub error_code: i32,
    /// What was wrong with which input.
    pub message: String,
}

fn refuse(error_code: i32, message: impl Into<String>) -> Refusal {
    Refusal {
        error_code,
        message: message.into(),
    }
}

/// Reads `name`/`position` pairs of a joint state, checking sizes, duplicates and values.
fn positions(state: &JointState, what: &str, code: i32) -> Result<Vec<(String, f64)>, Refusal> {
    if state.name.len() != state.position.len() {
        return Err(refuse(
            code,
            format!(
                "{what}: {} joint names but {} positions",
                state.name.len(),
                state.position.len()
            ),
        ));
    }
    let mut out: Vec<(String, f64)> = Vec::with_capacity(state.name.len());
    for (name, &x) in state.name.iter().zip(&state.position) {
        if !x.is_finite() {
            return Err(refuse(
                code,
                format!("{what}: joint '{name}' position is {x}"),
            ));
        }
        if out.iter().any(|(n, _)| n == name) {
            return Err(refuse(
                code,
                format!("{what}: joint '{name}' appears twice"),
            ));
        }
        out.push((name.clone(), x));
    }
    Ok(out)
}

fn scaling(requested: f64, default: f64, what: &str) -> Result<f64, Refusal> {
    if requested == 0.0 {
        Ok(default)
    } else if requested > 0.0 && requested <= 1.0 {
        Ok(requested)
    } else {
        Err(refuse(
            FAILURE,
            format!("{what} {requested} must be in (0, 1] (or 0 for the default)"),
        ))
    }
}

/// Applies the defaults of `params` to `req` and checks it. `current` is the latest
/// `joint_states` message, used when the request has no start state or a partial one.
pub fn resolve(
    req: &PlanPath::Request,
    params: &NodeParams,
    current: Option<&JointState>,
) -> Result<ResolvedRequest, Refusal> {
    let goal = positions(&req.goal_state, "goal_state", INVALID_GOAL_CONSTRAINTS)?;
    if goal.is_empty() {
        return Err(refuse(INVALID_GOAL_CONSTRAINTS, "goal_state has no joints"));
    }
    let current = match current {
        Some(js) => positions(js, "joint_states", INVALID_ROBOT_STATE)?,
        None => Vec::new(),
    };
    let given = positions(&req.start_state, "start_state", INVALID_ROBOT_STATE)?;
    if given.is_empty() && current.is_empty() {
        return Err(refuse(
            ROBOT_STATE_STALE,
            "start_state is empty and no joint_states message has been received",
        ));
    }
    let lookup =
        |list: &[(String, f64)], name: &str| list.iter().find(|(n, _)| n == name).map(|&(_, x)| x);
    let mut start = Vec::with_capacity(goal.len());
    for (name, _) in &goal {
        match lookup(&given, name).or_else(|| lookup(&current, name)) {
            Some(x) => start.push(x),
            None => {
                return Err(refuse(
                    INVALID_ROBOT_STATE,
                    format!("start: no position for joint '{name}' in start_state or joint_states"),
                ))
            }
        }
    }

    let planner_id = if req.planner_id.is_empty() {
        params.planner.clone()
    } else if PLANNERS.contains(&req.planner_id.as_str()) {
        req.planner_id.clone()
    } else {
        return Err(refuse(
            FAILURE,
            format!("planner_id '{}' is not one of {PLANNERS:?}", req.planner_id),
        ));
    };
    let t = req.allowed_planning_time;
    let time_limit = if t == 0.0 {
        params.time_limit
    } else if t > 0.0 && t.is_finite() {
        t
    } else {
        return Err(refuse(
            FAILURE,
            format!("allowed_planning_time {t} must be > 0 (or 0 for the default)"),
        ));
    };
    let seed = if req.seed < 0 { params.seed } else { req.seed };
    Ok(ResolvedRequest {
        joint_names: goal.iter().map(|(n, _)| n.clone()).collect(),
        start,
        goal: goal.iter().map(|&(_, x)| x).collect(),
        planner_id,
        time_limit,
        seed: u64::try_from(seed).unwrap_or(0),
        velocity_scaling: scaling(
            req.max_velocity_scaling_factor,
            params.velocity_scaling,
            "max_velocity_scaling_factor",
        )?,
        acceleration_scaling: scaling(
            req.max_acceleration_scaling_factor,
            params.acceleration_scaling,
            "max_acceleration_scaling_factor",
        )?,
    })
}

/// Answers a PlanPath request. Until the engine is wired in, a well-formed request is
/// answered with `success = false` and [`NOT_WIRED`]; a malformed one with its refusal.
pub fn answer(
    req: &PlanPath::Request,
    params: &NodeParams,
    current: Option<&JointState>,
) -> PlanPath::Response {
    let mut stats = PlanningStats {
        backend: params.backend.clone(),
        ..Default::default()
    };
    match resolve(req, params, current) {
        Ok(resolved) => {
            stats.planner_id = resolved.planner_id;
            PlanPath::Response {
                success: false,
                error_code: FAILURE,
                message: NOT_WIRED.into(),
                stats,
                ..Default::default()
            }
        }
        Err(refusal) => PlanPath::Response {
            success: false,
            error_code: refusal.error_code,
            message: refusal.message,
            stats,
            ..Default::default()
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn js(names: &[&str], pos: &[f64]) -> JointState {
        JointState {
            name: names.iter().map(|s| s.to_string()).collect(),
            position: pos.to_vec(),
            ..Default::default()
        }
    }

    fn request(start: JointState, goal: JointState) -> PlanPath::Request {
        PlanPath::Request {
            start_state: start,
            goal_state: goal,
            ..Default::default()
        }
    }

    #[test]
    fn defaults_come_from_the_parameters() {
        let p = NodeParams::default();
        let req = request(js(&["a", "b"], &[0.0, 1.0]), js(&["a", "b"], &[1.0, 2.0]));
        let r = resolve(&req, &p, None).unwrap();
        assert_eq!(r.planner_id, p.planner);
        assert_eq!(r.time_limit, p.time_limit);
        assert_eq!(r.seed, p.seed as u64);
        assert_eq!(r.velocity_scaling, p.velocity_scaling);
        assert_eq!(r.start, vec![0.0, 1.0]);
    }

    #[test]
    fn empty_start_uses_joint_states_in_goal_order() {
        let p = NodeParams::default();
        let req = request(JointState::default(), js(&["b", "a"], &[1.0, 2.0]));
        let current = js(&["a", "b", "c"], &[0.1, 0.2, 0.3]);
        let r = resolve(&req, &p, Some(&current)).unwrap();
        assert_eq!(r.joint_names, vec!["b", "a"]);
        assert_eq!(r.start, vec![0.2, 0.1]);
        let e = resolve(&req, &p, None).unwrap_err();
        assert_eq!(e.error_code, ROBOT_STATE_STALE);
    }

    #[test]
    fn malformed_requests_are_refused_with_a_code() {
        let p = NodeParams::default();
        let bad_goal = request(js(&["a"], &[0.0]), js(&["a"], &[]));
        assert_eq!(
            resolve(&bad_goal, &p, None).unwrap_err().error_code,
            INVALID_GOAL_CONSTRAINTS
        );
        let nan_start = request(js(&["a"], &[f64::NAN]), js(&["a"], &[1.0]));
        assert_eq!(
            resolve(&nan_start, &p, None).unwrap_err().error_code,
            INVALID_ROBOT_STATE
        );
        let mut bad_planner = request(js(&["a"], &[0.0]), js(&["a"], &[1.0]));
        bad_planner.planner_id = "teleport".into();
        assert!(resolve(&bad_planner, &p, None)
            .unwrap_err()
            .message
            .contains("teleport"));
        let mut bad_scaling = request(js(&["a"], &[0.0]), js(&["a"], &[1.0]));
        bad_scaling.max_velocity_scaling_factor = 2.0;
        assert!(resolve(&bad_scaling, &p, None).is_err());
    }

    #[test]
    fn answer_says_not_wired_for_good_requests() {
        let p = NodeParams::default();
        let req = request(js(&["a"], &[0.0]), js(&["a"], &[1.0]));
        let res = answer(&req, &p, None);
        assert!(!res.success);
        assert_eq!(res.message, NOT_WIRED);
        assert_eq!(res.stats.planner_id, p.planner);
        assert_eq!(res.stats.backend, p.backend);
    }
}
