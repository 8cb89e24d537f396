//! The node's persistent roadmap (planner `drm`) and what `~/roadmap` shows.
//!
//! The `drm` planner keeps one [`DynamicRoadmap`] across requests: it is sampled for the
//! planning group and the joints outside it (the base state) on the first `drm` request or
//! on [`PlanningService::rebuild_roadmap`], its edge labels follow every obstacle change
//! (Red-Green-Gray: valid / invalid / unknown), and each query validates only the unknown
//! edges of its candidate paths (lazy PRM). Other planners build their own structures per
//! request and leave this roadmap alone.

use std::time::Duration;

use nalgebra::Point3;

use super::{PlanningService, ServiceError};
use crate::planners::dynamic_roadmap::{
    DynamicRoadmap, DynamicRoadmapOptions, LabelCounts, UpdateStats,
};
use crate::roadmap::EdgeLabel;
use crate::robot::{PlanningGroup, RobotModel};

/// Neighbours each sampled roadmap vertex is joined to.
pub const ROADMAP_NEIGHBORS: usize = 10;

/// Largest joint-space step between two drawn points of a path (radians), so the drawn
/// end-effector curve follows the motion rather than cutting corners.
const DRAW_STEP: f64 = 0.05;

/// Where configurations of a group put its tip link.
struct TipPositions<'a> {
    robot: &'a RobotModel,
    group: &'a PlanningGroup,
    tip: usize,
    frames: Vec<nalgebra::Isometry3<f64>>,
}

impl<'a> TipPositions<'a> {
    fn new(robot: &'a RobotModel, group: &'a PlanningGroup) -> Self {
        Self {
            robot,
            group,
            tip: tip_link(robot, group),
            frames: Vec::new(),
        }
    }

    /// The tip's position for group configuration `q` over full state `base`.
    fn of(&mut self, base: &[f64], q: &[f64]) -> Point3<f64> {
        self.robot
            .tree
            .forward_kinematics_into(&self.group.full_state(base, q), &mut self.frames);
        self.frames
            .get(self.tip)
            .map(|f| Point3::from(f.translation.vector))
            .unwrap_or_else(Point3::origin)
    }
}

/// The persistent roadmap and what it was built for.
pub(super) struct Persistent {
    /// Planning group name.
    group: String,
    /// Base state with the group joints zeroed (what the sweeps depend on).
    base: Vec<f64>,
    /// Requested vertex count.
    size: usize,
    /// Edge check resolution.
    resolution: f64,
    /// The roadmap.
    drm: DynamicRoadmap,
}

impl Persistent {
    /// The roadmap, for queries.
    pub(super) fn drm_mut(&mut self) -> &mut DynamicRoadmap {
        &mut self.drm
    }
}

/// A summary of the persistent roadmap.
#[derive(Debug, Clone, PartialEq)]
pub struct RoadmapSummary {
    /// Vertices.
    pub vertices: usize,
    /// Edges.
    pub edges: usize,
    /// Edge labels for the current scene.
    pub labels: LabelCounts,
    /// Time spent building it (self-collision checks and swept-volume approximations).
    pub build_time: Duration,
}

impl std::fmt::Display for RoadmapSummary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "roadmap of {} vertices and {} edges ({} valid, {} invalid, {} unknown), built in {:.3} s",
            self.vertices,
            self.edges,
            self.labels.valid,
            self.labels.invalid,
            self.labels.unknown,
            self.build_time.as_secs_f64()
        )
    }
}

/// What `~/roadmap` draws: roadmap vertices and edges through the end effector's position,
/// edge labels, and the last planned path, all in the planning frame.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RoadmapView {
    /// The link whose origin is drawn (the end of the planning group's chain).
    pub tip_link: String,
    /// End-effector position of every roadmap vertex.
    pub vertices: Vec<Point3<f64>>,
    /// Edges as (vertex, vertex, label).
    pub edges: Vec<(usize, usize, EdgeLabel)>,
    /// End-effector positions along the last planned path (densely interpolated).
    pub path: Vec<Point3<f64>>,
}

/// The link drawn for `group`: the child link of the group joint deepest in the tree,
/// followed down through fixed joints while the chain does not branch (flange, hand).
pub fn tip_link(robot: &RobotModel, group: &PlanningGroup) -> usize {
    let tree = &robot.tree;
    let depth = |mut link: usize| {
        let mut d = 0usize;
        while let Some(j) = tree.joints.iter().position(|j| j.child == link) {
            link = tree.joints[j].parent;
            d += 1;
        }
        d
    };
    let mut tip = group
        .joints
        .iter()
        .filter_map(|&j| tree.joints.get(j).map(|jt| jt.child))
        .max_by_key(|&l| depth(l))
        .unwrap_or(0);
    loop {
        let children: Vec<&crate::robot::Joint> =
            tree.joints.iter().filter(|j| j.parent == tip).collect();
        match children.as_slice() {
            [only] if only.variable.is_none() && only.mimic.is_none() => tip = only.child,
            _ => break,
        }
    }
    tip
}

impl PlanningService {
    /// The base state of `base` with the joints of `group` zeroed: two base states that
    /// differ only in group joints give the same checks.
    pub(super) fn masked_base(group: &PlanningGroup, base: &[f64]) -> Vec<f64> {
        let mut b = base.to_vec();
        for &v in &group.variables {
            if let Some(x) = b.get_mut(v) {
                *x = 0.0;
            }
        }
        b
    }

    /// Whether a persistent roadmap exists.
    pub fn has_roadmap(&self) -> bool {
        self.roadmap.is_some()
    }

    /// Drops the persistent roadmap; returns whether there was one.
    pub fn clear_roadmap(&mut self) -> bool {
        self.roadmap.take().is_some()
    }

    /// Builds the persistent roadmap now (replacing any), for the current planning group,
    /// joint state, `roadmap_size` and resolution, labelled for the current scene.
    pub fn rebuild_roadmap(&mut self) -> Result<RoadmapSummary, ServiceError> {
        self.roadmap = None;
        let group = self.group()?;
        let base = self.current.clone();
        self.ensure_roadmap(&group, &base)?;
        self.roadmap_summary()
            .ok_or_else(|| ServiceError::BadOption {
                name: "roadmap_size",
                reason: "no roadmap was built".into(),
            })
    }

    /// The persistent roadmap's summary, when there is one.
    pub fn roadmap_summary(&self) -> Option<RoadmapSummary> {
        self.roadmap.as_ref().map(|p| {
            let (vertices, edges) = (p.drm.roadmap().num_vertices(), p.drm.roadmap().num_edges());
            RoadmapSummary {
                vertices,
                edges,
                labels: p.drm.effective_counts(),
                build_time: p.drm.precompute_time(),
            }
        })
    }

    /// Brings the persistent roadmap's labels up to date with the scene (call after
    /// obstacle changes); `None` when there is no roadmap.
    pub fn update_roadmap(&mut self) -> Result<Option<UpdateStats>, ServiceError> {
        match self.roadmap.as_mut() {
            Some(p) => Ok(Some(p.drm.update(&self.scene)?)),
            None => Ok(None),
        }
    }

    /// Makes sure the persistent roadmap exists for `group` and base state `base` with the
    /// current settings (rebuilding it when one of them changed) and is labelled for the
    /// current scene.
    pub(super) fn ensure_roadmap(
        &mut self,
        group: &PlanningGroup,
        base: &[f64],
    ) -> Result<(), ServiceError> {
        let masked = Self::masked_base(group, base);
        let size = self.settings.roadmap_size;
        if size == 0 {
            return Err(ServiceError::BadOption {
                name: "roadmap_size",
                reason: "must be > 0".into(),
            });
        }
        let resolution = self.settings.resolution;
        let fits = self.roadmap.as_ref().is_some_and(|p| {
            p.group == group.name
                && p.base == masked
                && p.size == size
                && p.resolution == resolution
        });
        if !fits {
            self.roadmap = None;
            let opts = DynamicRoadmapOptions {
                resolution,
                // The voxel map only serves the DRM comparison; queries use RGG labels.
                drm_cell_size: None,
                // Build checks and label updates on the GPU unless the CPU is asked for
                // (without a GPU this falls back to the CPU with one log line).
                gpu: self.settings.backend != "cpu",
                ..DynamicRoadmapOptions::default()
            };
            let drm = DynamicRoadmap::sample(
                &self.checked_robot(),
                group,
                &masked,
                size,
                ROADMAP_NEIGHBORS,
                self.settings.seed,
                opts,
            )?;
            self.roadmap = Some(Persistent {
                group: group.name.clone(),
                base: masked,
                size,
                resolution,
                drm,
            });
        }
        self.update_roadmap()?;
        Ok(())
    }

    /// What `~/roadmap` shows now: the persistent roadmap (if any) and the last planned
    /// path, through the end effector's position (the tip of the group each was made for).
    pub fn roadmap_view(&self) -> Result<RoadmapView, ServiceError> {
        let group = self.group()?;
        let tip = tip_link(&self.robot, &group);
        let mut view = RoadmapView {
            tip_link: self
                .robot
                .tree
                .links
                .get(tip)
                .map(|l| l.name.clone())
                .unwrap_or_default(),
            ..RoadmapView::default()
        };
        if let Some(p) = &self.roadmap {
            let mut at = TipPositions::new(&self.robot, &group);
            let rm = p.drm.roadmap();
            view.vertices = (0..rm.num_vertices())
                .filter_map(|v| rm.vertex(v))
                .map(|q| at.of(&p.base, q))
                .collect();
            view.edges = p.drm.export_labels();
        }
        if let Some((name, path)) = &self.last_path {
            let group = self.group_named(name)?;
            let mut at = TipPositions::new(&self.robot, &group);
            let base = &self.current;
            let mut mid = vec![0.0; group.space.dof()];
            for (i, q) in path.iter().enumerate() {
                if i > 0 {
                    let prev = &path[i - 1];
                    let len = group.space.distance(prev, q);
                    let steps = (len / DRAW_STEP).ceil().max(1.0) as usize;
                    for s in 1..steps {
                        let t = s as f64 / steps as f64;
                        group.space.interpolate(prev, q, t, &mut mid);
                        view.path.push(at.of(base, &mid));
                    }
                }
                view.path.push(at.of(base, q));
            }
        }
        Ok(view)
    }
}
