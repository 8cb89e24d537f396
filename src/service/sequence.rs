//! Motion sequences (MoveIt's Pilz `plan_sequence_path` in spirit): several motions planned one
//! after another, each from where the one before ends, joined into one trajectory.
//!
//! Each item is a whole planning request ([`ServicePlanRequest`]): any planner (a Pilz motion,
//! `PTP`, `LIN`, `CIRC`, or a sampling planner), a goal state, named state or pose, its own
//! scaling and speed limit. Only the first item may give a start state; every later one starts
//! where the one before ended, exactly. All items plan for one planning group. A failing item
//! fails the sequence, naming it, and nothing of the sequence is kept.
//!
//! An item's `blend_radius` (m, around the position of the group's tip link where the item
//! ends) lets the robot round that corner instead of stopping there
//! ([`crate::trajectory::blend`]): inside the sphere the two items overlap or a timed curve
//! joins them, checked against the joint limits, the sphere, both items' Cartesian limits and
//! the obstacles; outside the spheres each item keeps its own timing. The last item's radius
//! must be 0; blend spheres may not overlap along an item. Where the radius is 0 the robot
//! stops at the item's end; the runs of blended items are joined there with the times running
//! on and each joint made continuous (a continuous joint's unwrapped turns carried over).

use super::{
    cached_checker, PlanningService, ServiceError, ServicePlanRequest, ServicePlanResponse,
};
use crate::trajectory::blend::{self, BlendError, BlendReport, Blended, Kinematics, Motion};
use crate::trajectory::{LinkLimit, Trajectory};

/// One motion of a sequence.
#[derive(Debug, Clone, Default)]
pub struct ServiceSequenceItem {
    /// The motion, planned as [`PlanningService::plan`] plans it.
    pub request: ServicePlanRequest,
    /// The blend radius at its end, m (0: the robot stops there).
    pub blend_radius: f64,
}

/// A planned sequence.
#[derive(Debug, Clone, PartialEq)]
pub struct ServiceSequenceResponse {
    /// The joined trajectory (the group's joints).
    pub trajectory: Trajectory,
    /// The group planned for.
    pub group: String,
    /// Every item's own plan, in order.
    pub items: Vec<ServicePlanResponse>,
    /// For every item, the index of its last point in `trajectory` (for a blended item, the
    /// point in the middle of the blend, where the next takes over).
    pub item_ends: Vec<usize>,
    /// The blends made (`motion`: the item at whose end).
    pub blends: Vec<BlendReport>,
}

impl PlanningService {
    /// Plans `items` one after another (see the module documentation). Errors name the item
    /// at fault ([`ServiceError::SequenceItem`]).
    pub fn plan_sequence(
        &mut self,
        items: &[ServiceSequenceItem],
    ) -> Result<ServiceSequenceResponse, ServiceError> {
        if items.is_empty() {
            return Err(ServiceError::BadOption {
                name: "items",
                reason: "a sequence needs at least one motion".into(),
            });
        }
        for (index, item) in items.iter().enumerate() {
            let r = item.blend_radius;
            let reason = if !(r.is_finite() && r >= 0.0) {
                "must be finite and 0 or more"
            } else if index + 1 == items.len() && r != 0.0 {
                "the last motion ends the sequence: its blend radius must be 0"
            } else {
                continue;
            };
            return Err(item_error(
                index,
                &item.request,
                ServiceError::BadOption {
                    name: "blend_radius",
                    reason: format!("{r}: {reason}"),
                },
            ));
        }
        let mut plans: Vec<ServicePlanResponse> = Vec::with_capacity(items.len());
        for (index, item) in items.iter().enumerate() {
            let failed = |error: ServiceError| item_error(index, &item.request, error);
            let mut req = item.request.clone();
            if let Some(before) = plans.last() {
                if req.start.is_some() {
                    return Err(failed(ServiceError::BadOption {
                        name: "start_state",
                        reason: "only the first motion of a sequence gives a start state; \
                                 the others start where the one before ends"
                            .into(),
                    }));
                }
                let end = before.trajectory.points.last().map(|p| p.positions.clone());
                req.start = Some((
                    before.trajectory.joint_names.clone(),
                    end.unwrap_or_default(),
                ));
                if req.group.is_none() {
                    req.group = Some(before.group.clone());
                }
            }
            let plan = self.plan(req).map_err(failed)?;
            if let Some(first) = plans.first() {
                if plan.group != first.group {
                    return Err(failed(ServiceError::BadOption {
                        name: "group_name",
                        reason: format!(
                            "every motion of a sequence plans for one group: '{}', not '{}'",
                            first.group, plan.group
                        ),
                    }));
                }
            }
            plans.push(plan);
        }
        // Runs of items joined by blends, each timed as one; single items as planned.
        let mut runs: Vec<(Trajectory, Vec<usize>)> = Vec::new();
        let mut blends = Vec::new();
        let mut first = 0;
        while first < items.len() {
            let mut last = first;
            while items[last].blend_radius > 0.0 {
                last += 1;
            }
            if last == first {
                let t = plans[first].trajectory.clone();
                let end = t.points.len().saturating_sub(1);
                runs.push((t, vec![end]));
            } else {
                let run = self.blend_run(&items[first..=last], &plans[first..=last], first)?;
                runs.push((run.trajectory, run.ends));
                blends.extend(run.blends);
            }
            first = last + 1;
        }
        let (trajectory, item_ends) = join(&runs);
        Ok(ServiceSequenceResponse {
            trajectory,
            group: plans[0].group.clone(),
            items: plans,
            item_ends,
            blends,
        })
    }

    /// Blends the planned `items` (indices from `offset` in the sequence) into one trajectory,
    /// the blends' items numbered in the sequence.
    fn blend_run(
        &mut self,
        items: &[ServiceSequenceItem],
        plans: &[ServicePlanResponse],
        offset: usize,
    ) -> Result<Blended, ServiceError> {
        // Each item's scalings and limit, as its plan read them.
        let mut prepared = Vec::with_capacity(items.len());
        for (k, (item, plan)) in items.iter().zip(plans).enumerate() {
            let mut req = item.request.clone();
            let start = plan.trajectory.points.first().map(|p| p.positions.clone());
            req.start = Some((
                plan.trajectory.joint_names.clone(),
                start.unwrap_or_default(),
            ));
            req.group = Some(plan.group.clone());
            let p = self
                .prepare(&req)
                .map_err(|e| item_error(offset + k, &item.request, e))?;
            prepared.push(p);
        }
        let first = &prepared[0];
        let (group, start_state) = (first.group.clone(), first.start_state.clone());
        let resolution = first.request.resolution;
        let tip = self.link_or_tip(None, &group).map_err(|reason| {
            item_error(
                offset,
                &items[0].request,
                ServiceError::BadOption {
                    name: "blend_radius",
                    reason,
                },
            )
        })?;
        self.ensure_checker(&group, &start_state)?;
        let checker = cached_checker(&self.cached)?;
        let limits: Vec<Option<LinkLimit>> =
            prepared.iter().map(|p| p.speed_limit.clone()).collect();
        let motions: Vec<Motion<'_>> = plans
            .iter()
            .zip(&prepared)
            .zip(items)
            .zip(&limits)
            .map(|(((plan, p), item), limit)| Motion {
                trajectory: &plan.trajectory,
                vel_scale: p.request.vel_scale,
                acc_scale: p.request.acc_scale,
                limit: limit.as_ref(),
                radius: item.blend_radius,
            })
            .collect();
        let kin = Kinematics {
            tree: &self.robot.tree,
            group: &group,
            base: &start_state,
            link: tip,
        };
        let blended = blend::blend(checker, kin, &motions, resolution).map_err(|e| {
            let (k, error) = match e {
                BlendError::Radius { motion, .. } => (
                    motion,
                    ServiceError::BadOption {
                        name: "blend_radius",
                        reason: e.to_string(),
                    },
                ),
                BlendError::Blocked { motion, .. } => (motion, ServiceError::Blend(e.to_string())),
                BlendError::Trajectory(_) => (0, ServiceError::Blend(e.to_string())),
            };
            item_error(offset + k, &items[k].request, error)
        })?;
        Ok(Blended {
            blends: blended
                .blends
                .into_iter()
                .map(|b| BlendReport {
                    motion: b.motion + offset,
                    ..b
                })
                .collect(),
            ..blended
        })
    }
}

/// The error of item `index` (asking for `req`'s planner).
fn item_error(index: usize, req: &ServicePlanRequest, error: ServiceError) -> ServiceError {
    ServiceError::SequenceItem {
        index,
        planner: req.planner.clone().unwrap_or_else(|| "default".into()),
        error: Box::new(error),
    }
}

/// The trajectories of `runs` joined (each with the indices of its items' ends): times running
/// on, the first point of every later one (its start, where the one before ended) left out,
/// and each joint of a later one shifted by the whole turns (2 pi) that make it continue from
/// the one before. The items' ends, as indices in the joined trajectory.
fn join(runs: &[(Trajectory, Vec<usize>)]) -> (Trajectory, Vec<usize>) {
    let mut out = Trajectory {
        joint_names: runs[0].0.joint_names.clone(),
        points: Vec::new(),
    };
    let mut ends = Vec::with_capacity(runs.len());
    for (trajectory, run_ends) in runs {
        let points = &trajectory.points;
        let (skip, t0, shift) = match (out.points.last(), points.first()) {
            (Some(last), Some(first)) => {
                let turns: Vec<f64> = last
                    .positions
                    .iter()
                    .zip(&first.positions)
                    .map(|(a, b)| ((a - b) / std::f64::consts::TAU).round() * std::f64::consts::TAU)
                    .collect();
                (1, last.time_from_start, turns)
            }
            _ => (0, 0.0, vec![0.0; out.joint_names.len()]),
        };
        // Index in `out` of the run's point 0 (left out when skipped: the last one before).
        let base = out.points.len().saturating_sub(skip);
        for p in points.iter().skip(skip) {
            let mut p = p.clone();
            p.time_from_start += t0;
            for (x, s) in p.positions.iter_mut().zip(&shift) {
                *x += s;
            }
            out.points.push(p);
        }
        ends.extend(run_ends.iter().map(|e| base + e));
    }
    (out, ends)
}
