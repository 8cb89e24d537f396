//! The planner options that `gmp plan` and `gmp bench mbm` share (flattened into both), and
//! how they fill a [`PlanRequest`].

use clap::Args;
use serde_json::{json, Value};

use crate::planners::PlanRequest;

/// Planner tuning options of the command line (each a [`PlanRequest`] field; unset ones keep
/// the request's defaults).
#[derive(Args, Debug, Clone)]
pub struct PlannerTuning {
    /// Parallel attempts per problem (RRT and RRT-Connect, `PlanRequest::attempts`, 1-256):
    /// that many seeded attempts plan at once (on CPU threads sharing the checker, or with
    /// --on-device as blocks on the GPU); the one that finds a path with the least work wins,
    /// so the result is the same for a seed. 1 = one attempt on one core, as the published
    /// single-core figures.
    #[arg(long, default_value_t = 1)]
    pub attempts: usize,
    /// RRT-Connect planned whole on the GPU, one launch per problem (`PlanRequest::on_device`,
    /// `planners::device`; needs `--backend cuda`, `hybrid` or `auto` with a GPU).
    #[arg(long = "on-device")]
    pub on_device: bool,
    /// With --on-device: extra attempts for a problem that no attempt solves within
    /// --device-escalate-after iterations (0: none; default 3 per attempt, or GMP_RRTC_EXTRA).
    #[arg(long = "device-extra-attempts")]
    pub device_extra_attempts: Option<u32>,
    /// With --on-device: iterations without a path after which the extra attempts join
    /// (default 32, or GMP_RRTC_ESCALATE).
    #[arg(long = "device-escalate-after")]
    pub device_escalate_after: Option<u32>,
    /// Samples per planner iteration; default: suited to the planner and backend
    /// (`planners::suited_batch_size`: 1 for RRT-Connect on the CPU, 64 otherwise). The path
    /// depends on it.
    #[arg(long = "batch-size")]
    pub batch_size: Option<usize>,
    /// Longest RRT-family extension (joint-space distance); default 0.2 times the joint-space
    /// diagonal, for RRT-Connect at most 1 (`planners::default_range`).
    #[arg(long)]
    pub range: Option<f64>,
    /// RRT-Connect: a vertex's dynamic-domain radius at its first failed extension, in units
    /// of the range; default 3 for groups of up to 7 joints, 2 above
    /// (`planners::default_dd_radius`).
    #[arg(long = "dd-radius")]
    pub dd_radius: Option<f64>,
    /// Refinements of a shortcut's uncertain motions before it is given up (at most 6, which
    /// checks them as the planner's own motions are; `PlanRequest::shortcut_refinements`).
    #[arg(long = "shortcut-refinements", default_value_t = crate::planners::SHORTCUT_REFINEMENTS)]
    pub shortcut_refinements: u32,
    /// RRT-Connect without dynamic domain sampling and its shorter steps from failing vertices
    /// (`PlanRequest::dynamic_domain` off).
    #[arg(long = "no-dynamic-domain")]
    pub no_dynamic_domain: bool,
    /// RRT-Connect with the trees strictly taking turns (`PlanRequest::balance_trees` off).
    #[arg(long = "no-balance")]
    pub no_balance: bool,
    /// Round the shortcut path's corners instead of stopping at them, leaving each waypoint
    /// by at most this much (rad, joint space; MoveIt's `path_tolerance`;
    /// `PlanRequest::path_tolerance`). 0: stop at every waypoint.
    #[arg(long = "path-tolerance", default_value_t = 0.0)]
    pub path_tolerance: f64,
    /// Pose goals: the share of the time limit, in (0, 1], past which no new batch of inverse
    /// kinematics starts begins once a collision-free goal configuration is known
    /// (`PlanRequest::ik_time_share`).
    #[arg(long = "ik-time-share", default_value_t = crate::planners::pose::IK_TIME_SHARE)]
    pub ik_time_share: f64,
}

impl PlannerTuning {
    /// Sets the request's fields these options stand for (`range` only where given, so that
    /// an `ompl_planning.yaml` configuration's range stays otherwise).
    pub fn apply(&self, req: &mut PlanRequest) {
        req.attempts = self.attempts;
        req.on_device = self.on_device;
        req.device_extra_attempts = self.device_extra_attempts;
        req.device_escalate_after = self.device_escalate_after;
        req.batch_size = self.batch_size;
        if self.range.is_some() {
            req.range = self.range;
        }
        req.dd_radius = self.dd_radius;
        req.shortcut_refinements = self.shortcut_refinements;
        req.dynamic_domain = !self.no_dynamic_domain;
        req.balance_trees = !self.no_balance;
        req.path_tolerance = self.path_tolerance;
        req.ik_time_share = self.ik_time_share;
    }

    /// The options as report fields (`null` where the planner's default applies).
    pub fn report(&self) -> Value {
        json!({
            "attempts": self.attempts,
            "on_device": self.on_device,
            "device_extra_attempts": self.device_extra_attempts,
            "device_escalate_after": self.device_escalate_after,
            "range": self.range,
            "dd_radius": self.dd_radius,
            "shortcut_refinements": self.shortcut_refinements,
            "dynamic_domain": !self.no_dynamic_domain,
            "balance_trees": !self.no_balance,
            "path_tolerance": self.path_tolerance,
            "ik_time_share": self.ik_time_share,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::planners::PlannerId;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        tuning: PlannerTuning,
    }

    fn parsed(args: &[&str]) -> PlanRequest {
        let cli = Cli::try_parse_from(std::iter::once("gmp").chain(args.iter().copied()))
            .expect("options parse");
        let mut req = PlanRequest::new(vec![0.0], vec![1.0], PlannerId::RrtConnect);
        cli.tuning.apply(&mut req);
        req
    }

    #[test]
    fn no_options_keep_the_request_defaults() {
        let def = PlanRequest::new(vec![0.0], vec![1.0], PlannerId::RrtConnect);
        let req = parsed(&[]);
        assert_eq!(req.attempts, def.attempts);
        assert_eq!(req.on_device, def.on_device);
        assert_eq!(req.device_extra_attempts, def.device_extra_attempts);
        assert_eq!(req.device_escalate_after, def.device_escalate_after);
        assert_eq!(req.batch_size, def.batch_size);
        assert_eq!(req.range, def.range);
        assert_eq!(req.dd_radius, def.dd_radius);
        assert_eq!(req.shortcut_refinements, def.shortcut_refinements);
        assert_eq!(req.dynamic_domain, def.dynamic_domain);
        assert_eq!(req.balance_trees, def.balance_trees);
        assert_eq!(req.path_tolerance, def.path_tolerance);
    }

    #[test]
    fn every_option_reaches_its_request_field() {
        let req = parsed(&[
            "--attempts",
            "4",
            "--on-device",
            "--device-extra-attempts",
            "7",
            "--device-escalate-after",
            "9",
            "--batch-size",
            "16",
            "--range",
            "0.5",
            "--dd-radius",
            "2.5",
            "--shortcut-refinements",
            "1",
            "--no-dynamic-domain",
            "--no-balance",
            "--path-tolerance",
            "0.1",
        ]);
        assert_eq!(req.attempts, 4);
        assert!(req.on_device);
        assert_eq!(req.device_extra_attempts, Some(7));
        assert_eq!(req.device_escalate_after, Some(9));
        assert_eq!(req.batch_size, Some(16));
        assert_eq!(req.range, Some(0.5));
        assert_eq!(req.dd_radius, Some(2.5));
        assert_eq!(req.shortcut_refinements, 1);
        assert!(!req.dynamic_domain);
        assert!(!req.balance_trees);
        assert_eq!(req.path_tolerance, 0.1);
    }
}
