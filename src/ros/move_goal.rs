//! `~/move` (`gpu_motion_planner_interfaces/action/Move`): plan from the current joint state
//! and execute the plan, in one action goal, as MoveIt's MoveGroup action does.
//!
//! A goal is planned as `~/plan` plans (and published on `~/trajectory`), then, unless
//! `plan_only`, executed as `~/execute` executes the last plan ([`execute::execute`]: the
//! checks, `execution_mode`, monitoring and replanning). The goal holds the execution slot
//! from its start, so `~/execute` and `~/execute_trajectory` are refused meanwhile and a
//! second `~/move` goal is aborted (FAILURE: an execution is running). Feedback tells the stage
//! (`PLANNING`, `EXECUTING`, `WAITING` for `replan_delay` after a stop). Cancelling the goal
//! stops the execution as `~/stop` does ([`execute::stop_running`]); a cancellation during
//! planning lets the plan finish (a plan cannot be interrupted) and sends nothing. The
//! result carries a MoveIt error code: a planning code as `~/plan` answers it, or one of
//! [`execute::codes`].

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use futures::{Stream, StreamExt};
use r2r::gpu_motion_planner_interfaces::action::Move;
use r2r::gpu_motion_planner_interfaces::srv::PlanPath;
use r2r::{ActionServerCancelRequest, ActionServerGoal, ActionServerGoalRequest};

use super::execute::{self, codes, Controller, Report};
use super::{plan, plan_and_publish, LastPlan, PlanOutputs, Shared};

/// The `Move` action type.
pub type MoveAction = Move::Action;

/// The `~/plan` request a goal plans: from the current joint state, the goal's fields as
/// the fields of the same name.
pub fn plan_request(goal: &Move::Goal) -> PlanPath::Request {
    PlanPath::Request {
        start_state: Default::default(),
        goal_state: goal.goal_state.clone(),
        goal_name: goal.goal_name.clone(),
        other_goal_states: goal.other_goal_states.clone(),
        other_goal_poses: goal.other_goal_poses.clone(),
        goal_pose: goal.goal_pose.clone(),
        goal_link: goal.goal_link.clone(),
        goal_position_only: goal.goal_position_only,
        goal_position_tolerance: goal.goal_position_tolerance,
        goal_orientation_tolerance: goal.goal_orientation_tolerance,
        planner_id: goal.planner_id.clone(),
        allowed_planning_time: goal.allowed_planning_time,
        seed: goal.seed,
        max_velocity_scaling_factor: goal.max_velocity_scaling_factor,
        max_acceleration_scaling_factor: goal.max_acceleration_scaling_factor,
        num_planning_attempts: goal.num_planning_attempts,
        path_constraints: goal.path_constraints.clone(),
        goal_constraints: goal.goal_constraints.clone(),
        group_name: goal.group_name.clone(),
        cartesian_speed_limited_link: goal.cartesian_speed_limited_link.clone(),
        max_cartesian_speed: goal.max_cartesian_speed,
    }
}

/// Accepts every `~/move` goal and runs each in a task of its own.
pub async fn serve_moves(
    shared: Arc<Shared>,
    logger: String,
    with: (Controller, PlanOutputs),
    mut requests: impl Stream<Item = ActionServerGoalRequest<MoveAction>> + Unpin,
) {
    while let Some(request) = requests.next().await {
        match request.accept() {
            Ok((goal, cancels)) => {
                tokio::spawn(run_goal(
                    shared.clone(),
                    logger.clone(),
                    with.clone(),
                    goal,
                    cancels,
                ));
            }
            Err(e) => r2r::log_warn!(&logger, "~/move: could not accept a goal: {e}"),
        }
    }
}

/// How a goal ends.
struct Ended {
    result: Move::Result,
    cancelled: bool,
}

/// Plans one goal and (unless `plan_only`) executes it; ends the goal with the result.
async fn run_goal(
    shared: Arc<Shared>,
    logger: String,
    with: (Controller, PlanOutputs),
    mut goal: ActionServerGoal<MoveAction>,
    cancels: impl Stream<Item = ActionServerCancelRequest> + Unpin + Send + 'static,
) {
    let id = goal.uuid;
    let (report, mut stages) = tokio::sync::mpsc::unbounded_channel::<(&'static str, String)>();
    // Stages become feedback in order, until the goal ends (the sender dropped).
    let feedback = tokio::spawn({
        let (goal, logger) = (goal.clone(), logger.clone());
        async move {
            while let Some((state, message)) = stages.recv().await {
                let msg = Move::Feedback {
                    state: state.into(),
                    message,
                };
                if let Err(e) = goal.publish_feedback(msg) {
                    r2r::log_warn!(&logger, "~/move: feedback of goal {id}: {e}");
                }
            }
        }
    });
    let cancelled = Arc::new(AtomicBool::new(false));
    let ended = move_goal(
        &shared,
        &logger,
        with,
        (&goal.goal, cancels),
        (&report, &cancelled),
    )
    .await;
    drop(report);
    // The feedback sent before the result goes out first.
    let _ = feedback.await;
    let Ended { result, cancelled } = ended;
    let text = format!(
        "~/move goal {id}: {} (error code {})",
        result.message, result.error_code
    );
    if result.success {
        r2r::log_info!(&logger, "{text}");
    } else {
        r2r::log_warn!(&logger, "{text}");
    }
    // After an accepted cancellation r2r only ends a goal as cancelled.
    let ending = if cancelled {
        goal.cancel(result)
    } else if result.success {
        goal.succeed(result)
    } else {
        goal.abort(result)
    };
    if let Err(e) = ending {
        r2r::log_warn!(&logger, "~/move: could not end goal {id}: {e}");
    }
}

/// The work of one goal: the slot, the plan, the execution.
async fn move_goal(
    shared: &Arc<Shared>,
    logger: &str,
    (controller, outputs): (Controller, PlanOutputs),
    (goal, cancels): (
        &Move::Goal,
        impl Stream<Item = ActionServerCancelRequest> + Unpin + Send + 'static,
    ),
    (report, cancelled): (&Report, &Arc<AtomicBool>),
) -> Ended {
    let failed = |code: i32, message: String| Move::Result {
        success: false,
        error_code: code,
        message,
        ..Default::default()
    };
    let slot = if goal.plan_only {
        None
    } else {
        match shared.execution.claim() {
            Some(slot) => Some(slot),
            None => {
                return Ended {
                    result: failed(codes::FAILURE, execute::BUSY.into()),
                    cancelled: false,
                }
            }
        }
    };
    let stops = shared.execution.stops();
    // Cancellations are accepted at once; one of a goal that executes stops it as ~/stop.
    let watcher = tokio::spawn({
        let (shared, logger, cancelled) = (shared.clone(), logger.to_string(), cancelled.clone());
        let executes = slot.is_some();
        let mut cancels = cancels;
        async move {
            while let Some(request) = cancels.next().await {
                request.accept();
                cancelled.store(true, Ordering::SeqCst);
                if executes {
                    let stopped = execute::stop_running(&shared.execution).await;
                    r2r::log_info!(&logger, "~/move: cancelled: {}", stopped.message);
                }
            }
        }
    });
    let request = plan::service_request(&plan_request(goal));
    let _ = report.send(("PLANNING", "planning from the current joint state".into()));
    let planned = plan_and_publish(shared, logger, &outputs, &request, None);
    let plan_message = planned.message.clone();
    let mut result = Move::Result {
        success: planned.success,
        error_code: planned.error_code,
        message: plan_message.clone(),
        planned_trajectory: planned.trajectory.clone(),
        executed_trajectory: Default::default(),
        planning_stats: planned.stats,
        reached_goal: planned.reached_goal,
    };
    let was_cancelled = || cancelled.load(Ordering::SeqCst);
    if result.success && was_cancelled() {
        result.success = false;
        result.error_code = codes::PREEMPTED;
        result.message = format!("{plan_message}; cancelled while planning: nothing was sent");
    } else if result.success && !goal.plan_only {
        let plan = LastPlan {
            trajectory: planned.trajectory,
            request: Some(request),
        };
        let with = (controller, outputs);
        let done = execute::execute(shared, logger, with, plan, stops, Some(report)).await;
        result.success = done.success();
        result.error_code = done.code;
        result.message = format!("planned: {plan_message}; {}", done.message);
        result.executed_trajectory = done.sent.unwrap_or_default();
    }
    drop(slot);
    watcher.abort();
    Ended {
        result,
        cancelled: was_cancelled(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_action_declares_the_execution_codes() {
        assert_eq!(Move::Result::SUCCESS as i32, codes::SUCCESS);
        assert_eq!(Move::Result::FAILURE as i32, codes::FAILURE);
        assert_eq!(
            Move::Result::INVALID_MOTION_PLAN as i32,
            codes::INVALID_MOTION_PLAN
        );
        assert_eq!(
            Move::Result::MOTION_PLAN_INVALIDATED_BY_ENVIRONMENT_CHANGE as i32,
            codes::MOTION_PLAN_INVALIDATED_BY_ENVIRONMENT_CHANGE
        );
        assert_eq!(Move::Result::CONTROL_FAILED as i32, codes::CONTROL_FAILED);
        assert_eq!(Move::Result::TIMED_OUT as i32, codes::TIMED_OUT);
        assert_eq!(Move::Result::PREEMPTED as i32, codes::PREEMPTED);
        // The planning codes are PlanPath's.
        assert_eq!(PlanPath::Response::SUCCESS as i32, codes::SUCCESS);
        assert_eq!(PlanPath::Response::FAILURE as i32, codes::FAILURE);
    }

    #[test]
    fn a_goal_plans_from_the_current_state_with_its_fields() {
        let mut goal = Move::Goal {
            planner_id: "rrt".into(),
            allowed_planning_time: 2.5,
            seed: 7,
            num_planning_attempts: 3,
            ..Default::default()
        };
        goal.goal_state.name = vec!["a".into()];
        goal.goal_state.position = vec![0.5];
        let request = plan::service_request(&plan_request(&goal));
        assert!(request.start.is_none());
        assert_eq!(request.goal, (vec!["a".to_string()], vec![0.5]));
        assert_eq!(request.planner.as_deref(), Some("rrt"));
        assert_eq!(request.time_limit, Some(2.5));
        assert_eq!(request.seed, Some(7));
        assert_eq!(request.attempts, Some(3));
        assert!(request.goal_pose.is_none());
        assert!(request.group.is_none(), "empty: the node's planning_group");
        assert!(request.other_goals.is_empty());
        let mut other = goal.goal_state.clone();
        other.position = vec![0.7];
        goal.other_goal_states = vec![other];
        let request = plan::service_request(&plan_request(&goal));
        assert_eq!(
            request.other_goals,
            vec![(vec!["a".to_string()], vec![0.7])]
        );
        // A negative seed is the node's parameter.
        goal.seed = -1;
        goal.group_name = "arm_with_torso".into();
        let request = plan::service_request(&plan_request(&goal));
        assert_eq!(request.seed, None);
        assert_eq!(request.group.as_deref(), Some("arm_with_torso"));
    }
}
