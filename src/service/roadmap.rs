//! The node's persistent roadmaps (planner `drm`) and what `~/roadmap` shows.
//!
//! The `drm` planner keeps a [`DynamicRoadmap`] per planning group across requests (at most
//! [`MAX_ROADMAPS`] groups): it is sampled for the group and the joints outside it (the base
//! state) on the group's first `drm` request or on [`PlanningService::rebuild_roadmap`], its
//! edge labels follow every obstacle change (Red-Green-Gray: valid / invalid / unknown), and
//! each query validates only the unknown edges of its candidate paths (lazy PRM). Other
//! planners build their own structures per request and leave these roadmaps alone.

use std::time::Duration;

use nalgebra::Point3;

use super::{PlanningService, ServiceError, MAX_ROADMAPS};
use crate::planners::dynamic_roadmap::{
    DynamicRoadmap, DynamicRoadmapOptions, LabelCounts, UpdateStats,
};
use crate::roadmap::EdgeLabel;
use crate::robot::{PlanningGroup, RobotModel};
use crate::scene::Obstacle;

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
        !self.roadmaps.is_empty()
    }

    /// Drops the persistent roadmaps (of every planning group); returns whether there was
    /// one.
    pub fn clear_roadmap(&mut self) -> bool {
        let had = !self.roadmaps.is_empty();
        self.roadmaps.clear();
        had
    }

    /// Builds the persistent roadmap of the current planning group now (replacing it), for
    /// the joint state, `roadmap_size` and resolution, labelled for the current scene.
    pub fn rebuild_roadmap(&mut self) -> Result<RoadmapSummary, ServiceError> {
        let group = self.group()?;
        self.roadmaps.retain(|p| p.group != group.name);
        let base = self.current.clone();
        self.ensure_roadmap(&group, &base)?;
        self.roadmap_summary()
            .ok_or_else(|| ServiceError::BadOption {
                name: "roadmap_size",
                reason: "no roadmap was built".into(),
            })
    }

    /// The roadmap `~/roadmap` shows and [`Self::roadmap_summary`] describes: the planning
    /// group setting's, else the one used last.
    fn shown_roadmap(&self) -> Option<&Persistent> {
        let default = self.group().ok().map(|g| g.name);
        self.roadmaps
            .iter()
            .find(|p| Some(&p.group) == default.as_ref())
            .or_else(|| self.roadmaps.last())
    }

    /// The summary of the roadmap shown (`Self::shown_roadmap`), when there is one.
    pub fn roadmap_summary(&self) -> Option<RoadmapSummary> {
        self.shown_roadmap().map(|p| {
            let (vertices, edges) = (p.drm.roadmap().num_vertices(), p.drm.roadmap().num_edges());
            RoadmapSummary {
                vertices,
                edges,
                labels: p.drm.effective_counts(),
                build_time: p.drm.precompute_time(),
            }
        })
    }

    /// The planning groups that have a persistent roadmap, the one used last at the end.
    pub fn roadmap_groups(&self) -> Vec<String> {
        self.roadmaps.iter().map(|p| p.group.clone()).collect()
    }

    /// Brings every persistent roadmap's labels up to date with the scene (call after
    /// obstacle changes): their stats added up; `None` when there is no roadmap.
    pub fn update_roadmap(&mut self) -> Result<Option<UpdateStats>, ServiceError> {
        let mut total: Option<UpdateStats> = None;
        let acm = &self.acm;
        let may_touch = |o: &Obstacle| !acm.links_for(&o.id).is_empty();
        for p in &mut self.roadmaps {
            let stats = p.drm.update_with(&self.scene, &may_touch)?;
            total.get_or_insert_with(UpdateStats::default).add(&stats);
        }
        Ok(total)
    }

    /// Makes sure the persistent roadmap of `group` exists for base state `base` with the
    /// current settings (rebuilding it when one of them changed), is the one used last, and
    /// is labelled for the current scene. A new group's roadmap beyond [`MAX_ROADMAPS`]
    /// replaces the one used longest ago.
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
        // The queries' step, so that the roadmap's labels hold at it.
        let resolution = self.resolution_for(group);
        let found = self.roadmaps.iter().position(|p| p.group == group.name);
        let fits = found.is_some_and(|i| {
            let p = &self.roadmaps[i];
            p.base == masked && p.size == size && p.resolution == resolution
        });
        if let Some(i) = found {
            let p = self.roadmaps.remove(i);
            if fits {
                // Used now: to the end, where the planner takes it.
                self.roadmaps.push(p);
                self.update_roadmap()?;
                return Ok(());
            }
        }
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
        if self.roadmaps.len() >= MAX_ROADMAPS {
            self.roadmaps.remove(0);
        }
        self.roadmaps.push(Persistent {
            group: group.name.clone(),
            base: masked,
            size,
            resolution,
            drm,
        });
        self.update_roadmap()?;
        Ok(())
    }

    /// What `~/roadmap` shows now: the persistent roadmap shown (`Self::shown_roadmap`, if
    /// any) and the last planned path, through the end effector's position (the tip of the
    /// group each was made for).
    pub fn roadmap_view(&self) -> Result<RoadmapView, ServiceError> {
        let shown = self.shown_roadmap();
        let group = match shown {
            Some(p) => self.group_named(&p.group)?,
            None => self.group()?,
        };
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
        if let Some(p) = shown {
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
