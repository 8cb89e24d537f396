//! Pilz's LIN and CIRC motions through the planning service (`planner_id` `LIN` or `CIRC` of
//! `~/plan`): the goal link moved along a straight line or an arc
//! ([`crate::planners::pilz::cartesian_motion`]), with the robot's Pilz Cartesian limits and
//! the request's speed limit.

use nalgebra::Isometry3;

use super::{PlanningService, Prepared, ServiceError, ServicePlanResponse};
use crate::collision::Checker;
use crate::planners::pilz::{self, CircPoint, PilzPath};
use crate::robot::constraint::ConstraintSpec;
use crate::robot::ik::{self, IkSolver, PoseTarget};
use crate::trajectory::{Along, LinkLimit};

impl PlanningService {
    /// The circle's point of a CIRC motion from its path constraints as MoveIt passes it: name
    /// `center` or `interim`, one position constraint whose region position (in its frame,
    /// taken where `start_state` puts the robot) is the point.
    pub(super) fn circ_point(
        &self,
        spec: &ConstraintSpec,
        start_state: &[f64],
    ) -> Result<CircPoint, ServiceError> {
        let bad = |m: String| ServiceError::BadPathConstraints(format!("CIRC: {m}"));
        let [p] = spec.position.as_slice() else {
            return Err(bad(format!(
                "give the circle's point as one position constraint named 'center' or \
                 'interim', got {} position constraints",
                spec.position.len()
            )));
        };
        if !(spec.orientation.is_empty() && spec.joint.is_empty()) {
            return Err(bad(
                "path constraints other than the circle's point are not planned".into(),
            ));
        }
        let [x, y, z] = p.position;
        let at = self
            .in_planning_frame(&p.frame, Isometry3::translation(x, y, z), start_state)
            .map_err(bad)?
            .translation
            .vector;
        match spec.name.as_str() {
            "center" | "centre" => Ok(CircPoint::Center(at)),
            "interim" => Ok(CircPoint::Interim(at)),
            other => Err(bad(format!(
                "the path constraints must be named 'center' or 'interim', got '{other}'"
            ))),
        }
    }

    /// A LIN or CIRC motion for a prepared request: to its pose goal (a position goal keeps
    /// the start's orientation) or to the pose of its goal state's tip link, which the motion
    /// must then end in.
    pub(super) fn plan_pilz_cartesian(
        &self,
        prepared: &Prepared,
        checker: &dyn Checker,
    ) -> Result<ServicePlanResponse, ServiceError> {
        let (preq, group) = (&prepared.request, &prepared.group);
        if !prepared.constraints.is_empty() {
            return Err(ServiceError::BadPathConstraints(
                "LIN and CIRC plan no path constraints (CIRC's carry only its circle's point)"
                    .into(),
            ));
        }
        let kind = match prepared.circ {
            Some(point) => PilzPath::Circ(point),
            None => PilzPath::Lin,
        };
        let tree = &self.robot.tree;
        let pilz::LinTarget {
            link,
            pose: target,
            goal,
        } = pilz::lin_target(
            (tree, group, &prepared.start_state),
            (&preq.start, &preq.goal),
            prepared.pose.as_ref(),
            ik::default_tip_link(&self.robot, group),
        )
        .map_err(|reason| ServiceError::BadOption {
            name: "planner_id",
            reason,
        })?;
        let pose_at = |q: &[f64], link: usize| {
            tree.forward_kinematics(&group.full_state(&prepared.start_state, q))[link]
        };
        let mut solver = IkSolver::new(
            &self.robot,
            group,
            &prepared.start_state,
            PoseTarget::pose(link, target),
        )
        .map_err(|e| ServiceError::BadPoseGoal(e.to_string()))?;
        let opts = pilz::options(preq);
        let mut result = pilz::cartesian_motion(
            checker,
            &mut solver,
            &preq.start,
            (&target, goal, kind),
            &opts,
        )?;
        let name = tree.links[link].name.clone();
        let speed_limit = LinkLimit::for_cartesian_path(
            self.robot.cartesian_limits.as_ref(),
            (link, &name),
            (preq.vel_scale, preq.acc_scale),
            prepared.speed_limit.clone(),
        );
        let link_speed = self.apply_speed_limit(
            &mut result.trajectory,
            (group, &prepared.start_state),
            &speed_limit,
            &Along {
                checker,
                path: &result.path,
                timing: result.timing,
                resolution: preq.resolution,
            },
        );
        let pose_error = prepared.pose.as_ref().and_then(|t| {
            let reached = pose_at(result.path.last()?, link);
            let position = (reached.translation.vector - t.pose.translation.vector).norm();
            let orientation = t
                .orientation_tolerance
                .map_or(0.0, |_| reached.rotation.angle_to(&t.pose.rotation));
            Some((name.clone(), position, orientation))
        });
        Ok(ServicePlanResponse {
            trajectory: result.trajectory,
            path: result.path,
            stats: result.stats,
            planner: result.planner.as_str().to_string(),
            backend: checker.backend().name().to_string(),
            pose_error,
            group: group.name.clone(),
            planner_config: None,
            link_speed,
            rounded_corners: None,
            reached_goal: 0,
            ik: None,
        })
    }
}
