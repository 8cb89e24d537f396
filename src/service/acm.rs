//! Allowed collisions edited at run time (see [`crate::collision::allowed`]): the service
//! keeps one [`AllowedCollisions`] for its robot and scene, and builds its checkers with it.
//!
//! The `drm` planner's persistent roadmaps apply link-pair entries; an obstacle with entries
//! leaves the edges it alone would make invalid unknown, for the query's checks (which know
//! the entries) to decide ([`crate::planners::dynamic_roadmap::DynamicRoadmap::update_with`]).

use std::borrow::Cow;

use super::{PlanningService, ServiceError};
use crate::collision::allowed::{AllowError, AllowRequest, AllowedCollisions};
use crate::collision::{Checker, CheckerOptions, CollisionError};
use crate::robot::{PlanningGroup, RobotModel};
use crate::scene::{AllowedCollision, Scene};

impl PlanningService {
    /// Changes the allowed collisions (see [`AllowRequest`]) and returns every entry after
    /// the change. Pairs of the same link are skipped; a request without names changes
    /// nothing unless it resets. Two obstacles, one empty side or an unknown name are errors
    /// naming it, and then nothing changes. The cached
    /// checker and the persistent roadmap are rebuilt at the next request, and the
    /// [`super::WorldRevision`] changes (execution monitoring checks the rest of a running
    /// trajectory again).
    pub fn allow_collisions(
        &mut self,
        req: &AllowRequest,
    ) -> Result<Vec<AllowedCollision>, ServiceError> {
        let mut acm = self.acm.clone();
        acm.apply(&self.robot, &self.scene, req)?;
        self.set_acm(acm);
        Ok(self.allowed_collisions())
    }

    /// Applies `entries` one at a time (after dropping every earlier entry when `reset`); on
    /// error the entries are as before.
    pub(super) fn apply_allowed(
        &mut self,
        entries: &[AllowedCollision],
        reset: bool,
    ) -> Result<(), ServiceError> {
        let acm = self.allowed_after(&self.robot, &self.scene, entries, reset)?;
        self.set_acm(acm);
        Ok(())
    }

    /// The entries after `entries` are applied one at a time for `robot` in `scene` (to
    /// none when `reset`, else to the current ones); the service is not changed.
    pub(super) fn allowed_after(
        &self,
        robot: &RobotModel,
        scene: &Scene,
        entries: &[AllowedCollision],
        reset: bool,
    ) -> Result<AllowedCollisions, AllowError> {
        let mut acm = if reset {
            AllowedCollisions::default()
        } else {
            self.acm.clone()
        };
        acm.apply_entries(robot, scene, entries)?;
        Ok(acm)
    }

    /// Makes `acm` the entries; when they changed, the checker and the roadmap are rebuilt
    /// at the next request and the world revision changes.
    pub(super) fn set_acm(&mut self, acm: AllowedCollisions) {
        if acm != self.acm {
            self.acm = acm;
            self.robot_changes += 1;
            self.cached = None;
            self.roadmaps.clear();
        }
    }

    /// The allowed-collision entries, link pairs first, each pair in name order.
    pub fn allowed_collisions(&self) -> Vec<AllowedCollision> {
        self.acm.entries()
    }

    /// The robot with the link-pair entries applied (what the `drm` roadmap is built for).
    pub(super) fn checked_robot(&self) -> Cow<'_, RobotModel> {
        self.acm.checked_robot(&self.robot)
    }

    /// A new checker of `backend` for `group` over full state `base` in the current world:
    /// the robot with its attached objects, the scene, and the allowed collisions applied
    /// ([`AllowedCollisions::checker`]). Requests use a cached one; this is for callers that
    /// want their own (a benchmark, a batch of checks on another backend).
    pub fn world_checker(
        &self,
        backend: &str,
        group: &PlanningGroup,
        base: &[f64],
        opts: CheckerOptions,
    ) -> Result<Box<dyn Checker>, CollisionError> {
        self.acm
            .checker(backend, &self.robot, group, base, &self.scene, opts)
    }
}
