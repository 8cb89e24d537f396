//! Motion sequences (MoveIt's Pilz `plan_sequence_path` in spirit): several motions planned one
//! after another, each from where the one before ends, joined into one trajectory.
//!
//! Each item is a whole planning request ([`ServicePlanRequest`]): any planner (a Pilz motion,
//! `PTP`, `LIN`, `CIRC`, or a sampling planner), a goal state, named state or pose, its own
//! scaling and speed limit. Only the first item may give a start state; every later one starts
//! where the one before ended, exactly. All items plan for one planning group. The robot stops
//! at each item's end (Pilz's `blend_radius` 0); blending the motions into each other is not
//! planned. The joined trajectory holds every item's points in order, the times running on
//! and each joint between items made continuous (a continuous joint's unwrapped turns carried
//! over); every item was validated on its own and ends at rest, where the next begins. A
//! failing item fails the sequence, naming it, and nothing of the sequence is kept.

use super::{PlanningService, ServiceError, ServicePlanRequest, ServicePlanResponse};
use crate::trajectory::Trajectory;

/// A planned sequence.
#[derive(Debug, Clone, PartialEq)]
pub struct ServiceSequenceResponse {
    /// The joined trajectory (the group's joints).
    pub trajectory: Trajectory,
    /// The group planned for.
    pub group: String,
    /// Every item's own plan, in order.
    pub items: Vec<ServicePlanResponse>,
    /// For every item, the index of its last point in `trajectory`.
    pub item_ends: Vec<usize>,
}

impl PlanningService {
    /// Plans `items` one after another (see the module documentation). Errors name the item
    /// at fault ([`ServiceError::SequenceItem`]).
    pub fn plan_sequence(
        &mut self,
        items: &[ServicePlanRequest],
    ) -> Result<ServiceSequenceResponse, ServiceError> {
        if items.is_empty() {
            return Err(ServiceError::BadOption {
                name: "items",
                reason: "a sequence needs at least one motion".into(),
            });
        }
        let mut plans: Vec<ServicePlanResponse> = Vec::with_capacity(items.len());
        for (index, item) in items.iter().enumerate() {
            let failed = |error: ServiceError| ServiceError::SequenceItem {
                index,
                planner: item.planner.clone().unwrap_or_else(|| "default".into()),
                error: Box::new(error),
            };
            let mut req = item.clone();
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
        let (trajectory, item_ends) = join(&plans);
        Ok(ServiceSequenceResponse {
            trajectory,
            group: plans[0].group.clone(),
            items: plans,
            item_ends,
        })
    }
}

/// The trajectories of `plans` joined: times running on, the first point of every later one
/// (its start, where the one before ended) left out, and each joint of a later one shifted
/// by the whole turns (2 pi) that make it continue from the one before.
fn join(plans: &[ServicePlanResponse]) -> (Trajectory, Vec<usize>) {
    let mut out = Trajectory {
        joint_names: plans[0].trajectory.joint_names.clone(),
        points: Vec::new(),
    };
    let mut ends = Vec::with_capacity(plans.len());
    for plan in plans {
        let points = &plan.trajectory.points;
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
        for p in points.iter().skip(skip) {
            let mut p = p.clone();
            p.time_from_start += t0;
            for (x, s) in p.positions.iter_mut().zip(&shift) {
                *x += s;
            }
            out.points.push(p);
        }
        ends.push(out.points.len().saturating_sub(1));
    }
    (out, ends)
}
