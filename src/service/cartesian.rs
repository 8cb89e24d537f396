//! Cartesian paths through the service ([`PlanningService::plan_cartesian`]): the node's
//! `~/plan_cartesian`, MoveIt's `compute_cartesian_path` in spirit.

use super::{cached_checker, ik, PlanningService, ServiceError, SpeedLimit};
use crate::planners::cartesian::{plan_cartesian, CartesianOptions, CartesianStats};
use crate::robot::ik::{IkSolver, PoseTarget};
use crate::trajectory::{Along, LinkLimit, LinkSpeed, PathTiming, Trajectory};

/// A Cartesian path request: a link moved along straight lines through poses.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ServiceCartesianRequest {
    /// Start joint names and positions; `None` = the current joint state (as for `~/plan`).
    pub start: Option<(Vec<String>, Vec<f64>)>,
    /// The frame of the waypoints: the planning frame (also when empty) or a robot link,
    /// taken where the start state puts it.
    pub frame: String,
    /// The link to move; `None` = the planning group's tip link.
    pub link: Option<String>,
    /// Poses of the link: position (m) and quaternion `[x, y, z, w]` (normalised here).
    pub waypoints: Vec<([f64; 3], [f64; 4])>,
    /// Largest translation of one step (m); `None` = 0.01.
    pub max_step: Option<f64>,
    /// MoveIt's relative jump threshold; `None` or 0 = off.
    pub jump_threshold: Option<f64>,
    /// Velocity scaling override, in (0, 1].
    pub vel_scale: Option<f64>,
    /// Acceleration scaling override, in (0, 1].
    pub acc_scale: Option<f64>,
    /// The planning group to move (`None`: the `planning_group` setting).
    pub group: Option<String>,
    /// A Cartesian speed limit; its link `None` (or empty) means the link moved.
    pub speed_limit: Option<SpeedLimit>,
}

/// A Cartesian path computed (possibly only part of the way: see `fraction`).
#[derive(Debug, Clone, PartialEq)]
pub struct ServiceCartesianResponse {
    /// The timed trajectory along the part achieved (one point at the start when none was).
    pub trajectory: Trajectory,
    /// Group configurations from the start, one per step reached.
    pub path: Vec<Vec<f64>>,
    /// Share of the path achieved, in `[0, 1]`.
    pub fraction: f64,
    /// Why the path ends early; `None` when `fraction` is 1.
    pub stop: Option<String>,
    /// The link moved.
    pub link: String,
    /// Steps of the whole path and steps reached.
    pub steps: (usize, usize),
    /// Counters and timings.
    pub stats: CartesianStats,
    /// The backend that checked collisions.
    pub backend: String,
    /// What the request's speed limit did, if it gave one.
    pub link_speed: Option<LinkSpeed>,
}

impl PlanningService {
    /// Moves a link from the request's start (or the current state) along straight lines
    /// through the waypoints ([`plan_cartesian`]) in the current scene, with the node's
    /// resolution and scaling. A path that ends early is a response with `fraction < 1` and
    /// the reason; errors name the input at fault.
    pub fn plan_cartesian(
        &mut self,
        req: ServiceCartesianRequest,
    ) -> Result<ServiceCartesianResponse, ServiceError> {
        let bad = |m: String| ServiceError::BadWaypoints(m);
        let group = self.request_group(req.group.as_deref())?;
        let (start_state, start) = self.start_of(&req.start, &group)?;
        let link = self.link_or_tip(req.link.as_deref(), &group).map_err(bad)?;
        let link_name = self.robot.tree.links[link].name.clone();
        let requested = self.speed_limit(req.speed_limit.as_ref(), &group, Some(link))?;
        if req.waypoints.is_empty() {
            return Err(bad("give at least one waypoint".into()));
        }
        let mut poses = Vec::with_capacity(req.waypoints.len());
        for (i, (p, q)) in req.waypoints.iter().enumerate() {
            let pose = ik::pose_from_parts(*p, Some(*q), &format!("waypoint {i}"))
                .map_err(|e| bad(e.to_string()))?;
            poses.push(
                self.in_planning_frame(&req.frame, pose, &start_state)
                    .map_err(bad)?,
            );
        }
        let (vel_scale, acc_scale) = self.scalings(req.vel_scale, req.acc_scale)?;
        // The robot's Pilz Cartesian limits apply to Cartesian paths (as to Pilz's LIN).
        let speed_limit = LinkLimit::for_cartesian_path(
            self.robot.cartesian_limits.as_ref(),
            (link, &link_name),
            (vel_scale, acc_scale),
            requested,
        );
        let opts = CartesianOptions {
            max_step: req.max_step.unwrap_or(CartesianOptions::default().max_step),
            jump_threshold: req.jump_threshold.unwrap_or(0.0),
            resolution: self.resolution_for(&group),
            vel_scale,
            acc_scale,
            ..CartesianOptions::default()
        };
        self.ensure_checker(&group, &start_state)?;
        let checker = cached_checker(&self.cached)?;
        let backend = checker.backend().name().to_string();
        let mut solver = IkSolver::new(
            &self.robot,
            &group,
            &start_state,
            PoseTarget::pose(link, poses[0]),
        )
        .map_err(|e| bad(e.to_string()))?;
        let out = plan_cartesian(checker, &mut solver, &start, &poses, &opts)?;
        if out.path.len() > 1 {
            self.last_path = Some((group.name.clone(), out.path.clone()));
        }
        let mut trajectory = out.trajectory;
        let link_speed = self.apply_speed_limit(
            &mut trajectory,
            (&group, &start_state),
            &speed_limit,
            &Along {
                checker,
                path: &out.path,
                timing: PathTiming::Through {
                    vel_scale,
                    acc_scale,
                },
                resolution: opts.resolution,
            },
        );
        Ok(ServiceCartesianResponse {
            trajectory,
            path: out.path,
            fraction: out.fraction,
            stop: out.stop.map(|s| s.to_string()),
            link: link_name,
            steps: (out.steps, out.steps_reached),
            stats: out.stats,
            backend,
            link_speed,
        })
    }
}
