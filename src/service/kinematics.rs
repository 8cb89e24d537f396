//! Kinematics through the service: the node's `~/compute_ik` (a configuration that puts a
//! link at a pose, collision free on request; MoveIt's `compute_ik` in spirit) and
//! `~/compute_fk` (link poses of a state; MoveIt's `compute_fk`).

use std::time::Instant;

use nalgebra::Isometry3;

use super::{cached_checker, PlanningService, ServiceError, ServicePoseGoal};
use crate::planners::pose::free_goals;
use crate::planners::PlanError;
use crate::robot::ik::{search_time_limit, IkError, IkOptions, IkSearch, IkSolution, IkSolver};

/// An inverse-kinematics request.
#[derive(Debug, Clone, PartialEq)]
pub struct IkRequest {
    /// The state the search starts from (its first starting configuration) and that holds
    /// the joints outside the planning group: joint names and positions over the current
    /// joint state; `None`: the current joint state.
    pub seed_state: Option<(Vec<String>, Vec<f64>)>,
    /// Where the link should be (its frame is taken at the seed state).
    pub goal: ServicePoseGoal,
    /// Only collision-free solutions (in the current scene, carrying the attached objects).
    pub avoid_collisions: bool,
    /// Starting configurations at most, 1 ..= [`MAX_IK_ATTEMPTS`]; `None`: [`IkOptions`]'s
    /// default.
    pub attempts: Option<i64>,
    /// Seed of the random starting configurations; `None`: the node's seed.
    pub seed: Option<u64>,
    /// The planning group to solve for (`None`: the `planning_group` setting).
    pub group: Option<String>,
    /// Seconds the search may run at most (no batch of starts but the first begins later;
    /// the solutions found by then are the answer); `None`: the group's
    /// `kinematics_solver_timeout` from the robot's kinematics.yaml, else no limit but
    /// `attempts`.
    pub timeout: Option<f64>,
}

/// A solution of [`PlanningService::compute_ik`].
#[derive(Debug, Clone, PartialEq)]
pub struct IkAnswer {
    /// Group joint names.
    pub joint_names: Vec<String>,
    /// The solution, nearest to the seed state of those found, in group joint order.
    pub positions: Vec<f64>,
    /// The link placed.
    pub link: String,
    /// Position error (m) and orientation error (rad; 0 for a position goal).
    pub errors: (f64, f64),
    /// Distinct solutions found, and of those, in collision (0 when collisions were not
    /// asked about).
    pub found: (usize, usize),
}

/// Most starting configurations one request may ask for.
pub const MAX_IK_ATTEMPTS: usize = 10_000;

impl PlanningService {
    /// A configuration of the planning group that puts a link at a pose, the nearest to the
    /// seed state of the distinct solutions found (collision free with `avoid_collisions`).
    /// Errors: the input at fault by name; [`PlanError::NoIkSolution`] when no configuration
    /// within the limits reaches the pose; [`PlanError::InvalidGoal`] when every one found is
    /// in collision.
    pub fn compute_ik(&mut self, req: &IkRequest) -> Result<IkAnswer, ServiceError> {
        let group = self.request_group(req.group.as_deref())?;
        let (seed_state, seed_q) = self.state_of("seed_state", &req.seed_state, &group)?;
        // The pose goal's checks, answered about ComputeIk's `pose`.
        let ik_pose = |e: ServiceError| match e {
            ServiceError::BadPoseGoal(m) => ServiceError::BadPose(m),
            other => other,
        };
        let target = self
            .pose_target(&req.goal, &group, &seed_state)
            .map_err(ik_pose)?;
        let link = self.robot.tree.links[target.link].name.clone();
        let defaults = IkOptions::default();
        let starts = match req.attempts {
            None => defaults.starts,
            Some(n) => usize::try_from(n)
                .ok()
                .filter(|n| (1..=MAX_IK_ATTEMPTS).contains(n))
                .ok_or_else(|| ServiceError::BadOption {
                    name: "attempts",
                    reason: format!("must be in 1..={MAX_IK_ATTEMPTS}, got {n}"),
                })?,
        };
        // No timeout in the request: the group's kinematics.yaml `kinematics_solver_timeout`
        // (as MoveIt's compute_ik), else none.
        let deadline = search_time_limit(&self.robot, &group.name, req.timeout)
            .map_err(|reason| ServiceError::BadOption {
                name: "timeout",
                reason,
            })?
            .and_then(|d| Instant::now().checked_add(d));
        let opts = IkOptions {
            seed: req.seed.unwrap_or(self.settings.seed),
            starts,
            deadline,
            ..defaults
        };
        if req.avoid_collisions {
            self.ensure_checker(&group, &seed_state)?;
        }
        let (best, found, in_collision, tried) = {
            let solver = IkSolver::new(&self.robot, &group, &seed_state, target)
                .map_err(|e| ServiceError::BadPose(e.to_string()))?;
            if req.avoid_collisions {
                let checker = cached_checker(&self.cached)?;
                let goals = free_goals(checker, &solver, &seed_q, &opts)?;
                (
                    goals.free.into_iter().next(),
                    goals.found,
                    goals.in_collision,
                    goals.tried,
                )
            } else {
                let bad_pose = |e: IkError| ServiceError::BadPose(e.to_string());
                let mut search = IkSearch::new(&solver, Some(&seed_q), &opts).map_err(bad_pose)?;
                search
                    .run(|f: &[IkSolution]| Ok::<_, IkError>(vec![true; f.len()]))
                    .map_err(bad_pose)?;
                let tried = search.tried();
                let found = search.finish().0;
                let n = found.len();
                let space = &group.space;
                let nearest = found.into_iter().min_by(|a: &IkSolution, b| {
                    space
                        .distance(&seed_q, &a.config)
                        .total_cmp(&space.distance(&seed_q, &b.config))
                });
                (nearest, n, 0, tried)
            }
        };
        let Some(best) = best else {
            return Err(ServiceError::Plan(if found == 0 {
                PlanError::NoIkSolution(format!(
                    "no configuration within the joint limits puts '{link}' at the pose within \
                     its tolerances ({tried} starting configurations tried{})",
                    if tried < starts {
                        "; the search stopped at the timeout"
                    } else {
                        ""
                    }
                ))
            } else {
                PlanError::InvalidGoal(format!(
                    "all {found} configurations found that put '{link}' at the pose are in \
                     collision"
                ))
            }));
        };
        Ok(IkAnswer {
            joint_names: group.space.names.clone(),
            positions: best.config,
            link,
            errors: (best.position_error, best.orientation_error),
            found: (found, in_collision),
        })
    }

    /// The settings' planning group's tip link (the link pose goals move when they name
    /// none) and its pose in the planning frame at the current joint state (the neutral state
    /// before one is received).
    pub fn tip_pose(&self) -> Result<(String, Isometry3<f64>), ServiceError> {
        self.tip_pose_of(None)
    }

    /// [`Self::tip_pose`] for planning group `group` (`None`: the settings' group).
    pub fn tip_pose_of(
        &self,
        group: Option<&str>,
    ) -> Result<(String, Isometry3<f64>), ServiceError> {
        let group = self.request_group(group)?;
        let tip = self
            .link_or_tip(None, &group)
            .map_err(|reason| ServiceError::BadOption {
                name: "group_name",
                reason,
            })?;
        let poses = self.robot.tree.forward_kinematics(&self.current);
        Ok((self.robot.tree.links[tip].name.clone(), poses[tip]))
    }

    /// The planning groups a pose goal can move: the SRDF's groups that form a planning
    /// group of at least three joints (a gripper's or a pan-tilt head's cannot reach a pose)
    /// and have a tip link, the settings' group first whatever its size.
    pub fn pose_goal_groups(&self) -> Vec<String> {
        let mut names: Vec<String> = match &self.robot.srdf {
            Some(srdf) => srdf.groups.iter().map(|g| g.name.clone()).collect(),
            None => Vec::new(),
        };
        let settings = self.group().map(|g| g.name).unwrap_or_default();
        if !settings.is_empty() {
            names.retain(|n| *n != settings);
            names.insert(0, settings.clone());
        }
        names
            .into_iter()
            .filter(|n| {
                self.group_named(n).is_ok_and(|g| {
                    let joints = g.space.names.len();
                    (joints >= 3 || (*n == settings && joints > 0))
                        && self.link_or_tip(None, &g).is_ok()
                })
            })
            .collect()
    }

    /// Poses of links at a state (joints not named: the current joint state), in `frame`:
    /// the planning frame (also when empty), a link of the robot at that state, or a frame
    /// of the transforms ([`PlanningService::set_transforms`]). `links`
    /// empty: every link. Errors name the input at fault.
    pub fn compute_fk(
        &self,
        state: &Option<(Vec<String>, Vec<f64>)>,
        links: &[String],
        frame: &str,
    ) -> Result<Vec<(String, Isometry3<f64>)>, ServiceError> {
        let group = self.group()?;
        let (full, _) = self.state_of("state", state, &group)?;
        let tree = &self.robot.tree;
        let poses = tree.forward_kinematics(&full);
        // The frame's pose in the planning frame (a robot link at `full`), inverted.
        let reference = self
            .in_planning_frame(frame, Isometry3::identity(), &full)
            .map_err(|reason| ServiceError::BadOption {
                name: "frame",
                reason,
            })?
            .inverse();
        let wanted: Vec<usize> = if links.is_empty() {
            (0..tree.links.len()).collect()
        } else {
            links
                .iter()
                .map(|name| {
                    tree.link(name).map_err(|_| ServiceError::BadOption {
                        name: "link_names",
                        reason: format!("the robot has no link '{name}'"),
                    })
                })
                .collect::<Result<_, _>>()?
        };
        Ok(wanted
            .into_iter()
            .map(|l| (tree.links[l].name.clone(), reference * poses[l]))
            .collect())
    }
}
