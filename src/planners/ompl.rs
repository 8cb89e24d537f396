//! A robot's `ompl_planning.yaml` ([`OmplPlanning`]) applied to planning requests, as MoveIt
//! applies it: a planner id that names one of the file's configurations plans with that
//! configuration's planner and settings; a request that names no planner gets its group's
//! `default_planner_config`; a group's `longest_valid_segment_fraction` can make the motion
//! checks finer (never coarser) than the caller's resolution.
//!
//! Of a configuration, `type` chooses the planner ([`PlannerId::from_ompl`]: `RRTConnect`,
//! `RRT`, `RRTstar`, `PRM` or `LazyPRM`), `range` sets [`PlanRequest::range`], `goal_bias`
//! [`PlanRequest::goal_bias`] and `max_nearest_neighbors` [`PlanRequest::prm_neighbors`].

use crate::robot::ompl_planning::{OmplPlannerConfig, OmplPlanning};
use crate::robot::PlanningGroup;

use super::{PlanRequest, PlannerId};

/// A configuration of the file chosen for a request.
#[derive(Clone, Debug, PartialEq)]
pub struct OmplChoice {
    /// The configuration's name in the file.
    pub name: String,
    /// The planner its type stands for.
    pub planner: PlannerId,
    /// Its settings.
    pub config: OmplPlannerConfig,
}

/// A configuration whose planner type has no planner here.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "planner config '{name}' of {source_name} is {planner_type}, which is not planned here (types \
     planned: RRTConnect, RRT, RRTstar, PRM, LazyPRM)"
)]
pub struct UnsupportedOmplPlanner {
    /// The configuration's name.
    pub name: String,
    /// Its `type`.
    pub planner_type: String,
    /// The file.
    pub source_name: String,
}

impl OmplChoice {
    /// Sets the request's planner and the settings the configuration gives.
    pub fn apply(&self, req: &mut PlanRequest) {
        req.planner = self.planner;
        if let Some(r) = self.config.range {
            req.range = Some(r);
        }
        if let Some(b) = self.config.goal_bias {
            req.goal_bias = b;
        }
        if let Some(k) = self.config.max_nearest_neighbors {
            req.prm_neighbors = Some(k);
        }
    }
}

/// The configuration of `ompl` a request for planning group `group` gets: with a planner id
/// (`id`), the configuration of that name, if the file has one; without one, the group's
/// `default_planner_config`. `Ok(None)`: none (the caller's planner applies). A configuration
/// named by `id` whose type is not planned here is an error; a group default whose type is
/// not planned here is passed over (`Ok(None)`).
pub fn choice(
    ompl: &OmplPlanning,
    group: &str,
    id: Option<&str>,
) -> Result<Option<OmplChoice>, UnsupportedOmplPlanner> {
    let (name, config, named) = match id.filter(|i| !i.is_empty()) {
        Some(id) => match ompl.config(id) {
            Some(c) => (id, c, true),
            None => return Ok(None),
        },
        None => match ompl.default_config(group) {
            Some((name, c)) => (name, c, false),
            None => return Ok(None),
        },
    };
    match PlannerId::from_ompl(&config.planner_type) {
        Some(planner) => Ok(Some(OmplChoice {
            name: name.to_string(),
            planner,
            config: config.clone(),
        })),
        None if named => Err(UnsupportedOmplPlanner {
            name: name.to_string(),
            planner_type: config.planner_type.clone(),
            source_name: ompl.source.clone(),
        }),
        None => Ok(None),
    }
}

/// The motion check step for `group`: `resolution`, or the step of the group's
/// `longest_valid_segment_fraction` where that is finer
/// ([`OmplPlanning::segment_resolution`]).
pub fn resolution(ompl: &OmplPlanning, group: &PlanningGroup, resolution: f64) -> f64 {
    match ompl.segment_resolution(&group.name, &group.space) {
        Some(step) if step < resolution => step,
        _ => resolution,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILE: &str = "
planner_configs:
  RRTConnectkConfigDefault: {type: geometric::RRTConnect}
  Wide: {type: geometric::RRTConnect, range: 2.5}
  Roadmap: {type: geometric::PRM, max_nearest_neighbors: 7}
  Biased: {type: geometric::RRT, goal_bias: 0.3}
  SBLkConfigDefault: {type: geometric::SBL}
arm:
  default_planner_config: Roadmap
  planner_configs: [Wide, Roadmap]
other:
  default_planner_config: SBLkConfigDefault
";

    #[test]
    fn a_named_configuration_or_the_group_default_sets_planner_and_settings() {
        let o = OmplPlanning::parse(FILE, "ompl.yaml").unwrap();
        let mut req = PlanRequest::new(vec![0.0], vec![1.0], PlannerId::Rrt);
        let c = choice(&o, "arm", Some("Wide")).unwrap().unwrap();
        c.apply(&mut req);
        assert_eq!((req.planner, req.range), (PlannerId::RrtConnect, Some(2.5)));
        // Without an id: the group's default.
        let mut req = PlanRequest::new(vec![0.0], vec![1.0], PlannerId::Rrt);
        let c = choice(&o, "arm", None).unwrap().unwrap();
        assert_eq!(c.name, "Roadmap");
        c.apply(&mut req);
        assert_eq!((req.planner, req.prm_neighbors), (PlannerId::Prm, Some(7)));
        let mut req = PlanRequest::new(vec![0.0], vec![1.0], PlannerId::Prm);
        choice(&o, "x", Some("Biased"))
            .unwrap()
            .unwrap()
            .apply(&mut req);
        assert_eq!((req.planner, req.goal_bias), (PlannerId::Rrt, 0.3));
        // An id the file does not name, and a group without a default: none.
        assert_eq!(choice(&o, "arm", Some("rrt_star")).unwrap(), None);
        assert_eq!(choice(&o, "nope", None).unwrap(), None);
        assert_eq!(choice(&OmplPlanning::default(), "arm", None).unwrap(), None);
    }

    #[test]
    fn unplanned_types_are_refused_when_named_and_passed_over_as_defaults() {
        let o = OmplPlanning::parse(FILE, "ompl.yaml").unwrap();
        let e = choice(&o, "arm", Some("SBLkConfigDefault")).unwrap_err();
        let msg = e.to_string();
        assert!(
            msg.contains("'SBLkConfigDefault'")
                && msg.contains("geometric::SBL")
                && msg.contains("ompl.yaml"),
            "{msg}"
        );
        assert_eq!(choice(&o, "other", None).unwrap(), None);
    }
}
