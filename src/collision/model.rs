//! The collision model compiled to flat f32 arrays: the exact data both backends work on
//! (the CUDA backend uploads these arrays as they are).

use super::detmath::{Xf, V3};
use crate::robot::geometry::Polytope;
use crate::robot::{PlanningGroup, RobotModel};
use crate::scene::{Scene, Shape};

/// Default numeric safety margin (m). Two shapes count as touching when they come closer than
/// this; it absorbs f32 rounding so that nothing in contact is ever reported free.
pub const DEFAULT_MARGIN: f32 = 1e-4;

/// Which geometry stands for the robot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RobotShapes {
    /// Convex polytopes of the URDF collision geometry, URDF spheres as exact spheres (the
    /// default).
    Polytopes,
    /// The spheres of the `_spherized` URDF (VAMP's model).
    Spheres,
}

/// A moving joint in topological order, with the fixed joints before it folded into `origin`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct KinFrame {
    /// Parent frame index, `-1` for the root link.
    pub parent: i32,
    /// Parent frame -> joint frame at zero value.
    pub origin: Xf,
    /// Unit axis in the joint frame.
    pub axis: V3,
    /// 0 revolute/continuous, 1 prismatic.
    pub kind: u32,
    /// Full-state variable the joint value comes from.
    pub var: u32,
    /// Joint value = `mult * state[var] + offset` (mimic joints; 1 and 0 otherwise).
    pub mult: f32,
    /// See `mult`.
    pub offset: f32,
}

/// A robot collision body: a convex polytope (or a single point for spheres) inflated by
/// `inflate`, rigidly attached to a frame.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BodyModel {
    /// Frame index, `-1` for the root link.
    pub frame: i32,
    /// Link index in the robot (for reporting).
    pub link: u32,
    /// First vertex in [`CollisionModel::verts`].
    pub vert_start: u32,
    /// Number of vertices.
    pub vert_count: u32,
    /// First covering sphere in [`CollisionModel::spheres`].
    pub sphere_start: u32,
    /// Number of covering spheres.
    pub sphere_count: u32,
    /// Bounding sphere centre in the frame.
    pub center: V3,
    /// Bounding sphere radius (inflation included).
    pub radius: f32,
    /// Radius the polytope is inflated by (0 for polytopes, the radius for spheres).
    pub inflate: f32,
}

/// The robot part of the collision model.
#[derive(Clone, Debug, PartialEq)]
pub struct CollisionModel {
    /// Values in a full state.
    pub num_vars: usize,
    /// Full-state index of each planning-group joint.
    pub group_vars: Vec<u32>,
    /// Full state (f32) supplying the joints outside the group.
    pub base_state: Vec<f32>,
    /// Moving frames in topological order.
    pub frames: Vec<KinFrame>,
    /// Bodies.
    pub bodies: Vec<BodyModel>,
    /// Vertices of all bodies, in their frames.
    pub verts: Vec<V3>,
    /// CRS row pointers over `verts` (len = verts.len() + 1), global indices.
    pub edge_offsets: Vec<u32>,
    /// CRS neighbour lists (global vertex indices).
    pub edge_targets: Vec<u32>,
    /// Covering spheres of all bodies `(x, y, z, r)` in their frames.
    pub spheres: Vec<[f32; 4]>,
    /// Body pairs checked for self-collision.
    pub self_pairs: Vec<[u32; 2]>,
    /// Safety margin (m).
    pub margin: f32,
    /// Per body and moving frame (`bodies x frames`, row-major): an upper bound on how fast
    /// any point of the body moves per unit of the frame's joint value — the largest distance
    /// from the joint axis for revolute joints, 1 for prismatic ones, 0 when the joint does not
    /// move the body. Motion checks use it to bound the sweep between checked configurations.
    pub reach: Vec<f32>,
    /// [`Self::reach`] transposed (`frames x bodies`, row-major: frame `f`'s column of every
    /// body in a row), for sums over the bodies side by side ([`Sweep::set`]). [`Self::build`]
    /// makes it with `reach`; a model whose `reach` is changed afterwards must clear it (its
    /// readers then use `reach`, which they also do when the lengths differ).
    ///
    /// [`Sweep::set`]: super::Sweep::set
    pub reach_by_frame: Vec<f32>,
    /// Per full-state variable: the planning-group index that supplies it, or -1.
    pub var_group: Vec<i32>,
}

/// Appends a polytope's vertices and CRS adjacency to flat arrays; returns the first vertex.
pub(crate) fn push_polytope(
    p: &Polytope,
    verts: &mut Vec<V3>,
    offsets: &mut Vec<u32>,
    targets: &mut Vec<u32>,
) -> u32 {
    let start = verts.len() as u32;
    if offsets.is_empty() {
        offsets.push(0);
    }
    for v in &p.vertices {
        verts.push([v.x as f32, v.y as f32, v.z as f32]);
    }
    for i in 0..p.vertices.len() {
        let (a, b) = (p.edge_offsets[i] as usize, p.edge_offsets[i + 1] as usize);
        for &t in &p.edge_targets[a..b] {
            targets.push(start + t);
        }
        offsets.push(targets.len() as u32);
    }
    start
}

/// Pushes a single point (no edges) as a one-vertex polytope.
fn push_point(c: V3, verts: &mut Vec<V3>, offsets: &mut Vec<u32>, targets: &mut [u32]) -> u32 {
    let start = verts.len() as u32;
    if offsets.is_empty() {
        offsets.push(0);
    }
    verts.push(c);
    offsets.push(targets.len() as u32);
    start
}

fn bounding(verts: &[V3], inflate: f32) -> (V3, f32) {
    let mut lo = [f32::MAX; 3];
    let mut hi = [f32::MIN; 3];
    for v in verts {
        for k in 0..3 {
            lo[k] = lo[k].min(v[k]);
            hi[k] = hi[k].max(v[k]);
        }
    }
    let c = [
        (lo[0] + hi[0]) * 0.5,
        (lo[1] + hi[1]) * 0.5,
        (lo[2] + hi[2]) * 0.5,
    ];
    let mut r2 = 0.0f32;
    for v in verts {
        let d = [v[0] - c[0], v[1] - c[1], v[2] - c[2]];
        r2 = r2.max(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]);
    }
    // Grow by a relative epsilon so that rounding never leaves a vertex outside.
    let r = r2.sqrt() * (1.0 + 1e-6) + 1e-6;
    (c, r + inflate)
}

impl CollisionModel {
    /// Adds a sphere body on `frame`: a single point (centre `c` in the frame) inflated by the
    /// radius `r`, with itself as its one covering sphere.
    fn push_sphere_body(&mut self, frame: i32, link: usize, c: V3, r: f32) {
        let start = push_point(
            c,
            &mut self.verts,
            &mut self.edge_offsets,
            &mut self.edge_targets,
        );
        self.spheres.push([c[0], c[1], c[2], r]);
        self.bodies.push(BodyModel {
            frame,
            link: link as u32,
            vert_start: start,
            vert_count: 1,
            sphere_start: self.spheres.len() as u32 - 1,
            sphere_count: 1,
            center: c,
            radius: r,
            inflate: r,
        });
    }

    /// Compiles the robot for a planning group. `base_state` is the full state that supplies
    /// the joints outside the group.
    pub fn build(
        robot: &RobotModel,
        group: &PlanningGroup,
        base_state: &[f64],
        shapes: RobotShapes,
        margin: f32,
    ) -> Result<Self, String> {
        let tree = &robot.tree;
        if base_state.len() != tree.num_variables() {
            return Err(format!(
                "base state has {} values, the robot has {} variables",
                base_state.len(),
                tree.num_variables()
            ));
        }
        // Frame of each link: the nearest moving joint above it (or root), with the fixed offset.
        let mut link_frame: Vec<(i32, nalgebra::Isometry3<f64>)> =
            vec![(-1, nalgebra::Isometry3::identity()); tree.links.len()];
        let mut frames = Vec::new();
        // Per frame: length of its fixed offset from the parent frame, and the largest
        // displacement of a prismatic joint (0 for revolute joints).
        let mut offset_len: Vec<f64> = Vec::new();
        let mut extent: Vec<f64> = Vec::new();
        for j in &tree.joints {
            let (pf, poff) = link_frame[j.parent];
            if j.kind.is_moving() {
                // Resolve mimic chains down to an independent variable.
                let (mut mult, mut offset, mut src) = (1.0f64, 0.0f64, j);
                while let Some(m) = src.mimic {
                    offset += mult * m.offset;
                    mult *= m.multiplier;
                    src = &tree.joints[m.joint];
                }
                let var = src
                    .variable
                    .ok_or_else(|| format!("joint '{}' has no variable", j.name))?;
                let a = j.axis;
                offset_len.push((poff * j.origin).translation.vector.norm());
                extent.push(if j.kind == crate::robot::JointKind::Prismatic {
                    let l = tree.joints[tree.variable_joints[var]].limits;
                    let base = base_state.get(var).copied().unwrap_or(0.0);
                    [l.lower, l.upper, base]
                        .iter()
                        .map(|&v| (mult * v + offset).abs())
                        .fold(0.0, f64::max)
                } else {
                    0.0
                });
                frames.push(KinFrame {
                    parent: pf,
                    origin: Xf::from_isometry(&(poff * j.origin)),
                    axis: [a.x as f32, a.y as f32, a.z as f32],
                    kind: if j.kind == crate::robot::JointKind::Prismatic {
                        1
                    } else {
                        0
                    },
                    var: var as u32,
                    mult: mult as f32,
                    offset: offset as f32,
                });
                link_frame[j.child] = (frames.len() as i32 - 1, nalgebra::Isometry3::identity());
            } else {
                link_frame[j.child] = (pf, poff * j.origin);
            }
        }
        let mut m = CollisionModel {
            num_vars: tree.num_variables(),
            group_vars: group.variables.iter().map(|&v| v as u32).collect(),
            base_state: base_state.iter().map(|&v| v as f32).collect(),
            frames,
            bodies: Vec::new(),
            verts: Vec::new(),
            edge_offsets: vec![0],
            edge_targets: Vec::new(),
            spheres: Vec::new(),
            self_pairs: Vec::new(),
            margin,
            reach: Vec::new(),
            reach_by_frame: Vec::new(),
            var_group: Vec::new(),
        };
        match shapes {
            RobotShapes::Polytopes => {
                for b in &robot.bodies {
                    let (frame, off) = link_frame[b.link];
                    if let crate::robot::BodySource::Sphere { radius } = b.source {
                        // A URDF sphere is modelled exactly, as the sphere model does: a point
                        // inflated by the radius. Its polytope (a geodesic polyhedron around it)
                        // is up to 7.5 % larger, which on the MBM Fetch (head and torso spheres)
                        // turned configurations whose spheres keep 1 to 7 mm clear into self
                        // collisions (results/mbm/NOTES.md).
                        let c = off * (b.origin * nalgebra::Point3::origin());
                        let c = [c.x as f32, c.y as f32, c.z as f32];
                        m.push_sphere_body(frame, b.link, c, radius as f32);
                        continue;
                    }
                    let poly = b.polytope.transformed(&off);
                    let start = push_polytope(
                        &poly,
                        &mut m.verts,
                        &mut m.edge_offsets,
                        &mut m.edge_targets,
                    );
                    let count = poly.vertices.len() as u32;
                    let (center, radius) = bounding(&m.verts[start as usize..], 0.0);
                    let sphere_start = m.spheres.len() as u32;
                    for s in &b.covering.spheres {
                        let c = off * s.center;
                        m.spheres.push([
                            c.x as f32,
                            c.y as f32,
                            c.z as f32,
                            (s.radius as f32) * (1.0 + 1e-6) + 1e-6,
                        ]);
                    }
                    m.bodies.push(BodyModel {
                        frame,
                        link: b.link as u32,
                        vert_start: start,
                        vert_count: count,
                        sphere_start,
                        sphere_count: m.spheres.len() as u32 - sphere_start,
                        center,
                        radius,
                        inflate: 0.0,
                    });
                }
            }
            RobotShapes::Spheres => {
                let spheres = robot
                    .spherized
                    .as_ref()
                    .ok_or("the sphere model needs a spherized URDF")?;
                for (link, s) in spheres {
                    let (frame, off) = link_frame[*link];
                    let c = off * s.center;
                    let c = [c.x as f32, c.y as f32, c.z as f32];
                    m.push_sphere_body(frame, *link, c, s.radius as f32);
                }
            }
        }
        // Self pairs: bodies on links that are not allowed to touch. Bodies of links that are
        // rigidly attached to the base and never move relative to each other are skipped by the
        // allowed pairs already.
        let moving_link = |l: usize| -> bool { link_frame[l].0 >= 0 };
        for i in 0..m.bodies.len() {
            for k in i + 1..m.bodies.len() {
                let (la, lb) = (m.bodies[i].link as usize, m.bodies[k].link as usize);
                if robot.allowed.is_allowed(la, lb) {
                    continue;
                }
                if !moving_link(la) && !moving_link(lb) {
                    continue;
                }
                m.self_pairs.push([i as u32, k as u32]);
            }
        }
        m.var_group = vec![-1; m.num_vars];
        for (k, &var) in m.group_vars.iter().enumerate() {
            if let Some(slot) = m.var_group.get_mut(var as usize) {
                *slot = k as i32;
            }
        }
        m.reach = body_reach(&m, &offset_len, &extent);
        let (nb, nf) = (m.bodies.len(), m.frames.len());
        m.reach_by_frame = (0..nf * nb)
            .map(|k| m.reach[(k % nb) * nf + k / nb])
            .collect();
        Ok(m)
    }

    /// Number of planning-group joints.
    pub fn dof(&self) -> usize {
        self.group_vars.len()
    }

    /// Replaces the full state that supplies the joints outside the group.
    pub fn set_base_state(&mut self, base_state: &[f64]) -> Result<(), super::CollisionError> {
        if base_state.len() != self.num_vars {
            return Err(super::CollisionError::WrongDof {
                expected: self.num_vars,
                got: base_state.len(),
            });
        }
        self.base_state = base_state.iter().map(|&v| v as f32).collect();
        Ok(())
    }
}

/// Upper bounds on the speed of every body point per unit joint value (see
/// [`CollisionModel::reach`]): walking from a body's frame up to the root, the distance from
/// each joint origin grows by the fixed offsets and prismatic extents passed on the way.
fn body_reach(m: &CollisionModel, offset_len: &[f64], extent: &[f64]) -> Vec<f32> {
    let nf = m.frames.len();
    let mut reach = vec![0.0f32; m.bodies.len() * nf];
    let up = |d: f64| (d as f32) * (1.0 + 1e-6) + 1e-6;
    for (bi, b) in m.bodies.iter().enumerate() {
        if b.frame < 0 {
            continue;
        }
        let verts = &m.verts[b.vert_start as usize..(b.vert_start + b.vert_count) as usize];
        let far = verts
            .iter()
            .map(|v| ((v[0] as f64).powi(2) + (v[1] as f64).powi(2) + (v[2] as f64).powi(2)).sqrt())
            .fold(0.0, f64::max)
            + b.inflate as f64;
        let mut f = b.frame as usize;
        let mut dist = far + extent[f];
        loop {
            reach[bi * nf + f] = if m.frames[f].kind == 1 { 1.0 } else { up(dist) };
            let p = m.frames[f].parent;
            if p < 0 {
                break;
            }
            dist += offset_len[f] + extent[p as usize];
            f = p as usize;
        }
    }
    reach
}

/// Obstacle kinds in the flat scene model.
pub mod obstacle_kind {
    /// Box with half extents `params[0..3]`.
    pub const BOX: u32 = 0;
    /// Sphere with radius `params[0]` (a point inflated by the radius).
    pub const SPHERE: u32 = 1;
    /// Cylinder along z with radius `params[0]` and half length `params[1]`.
    pub const CYLINDER: u32 = 2;
    /// Convex mesh: vertices `mesh_start..mesh_start + mesh_count` of the mesh pool.
    pub const MESH: u32 = 3;
    /// An empty slot.
    pub const NONE: u32 = 255;
}

/// One obstacle slot in the flat scene model.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ObstacleModel {
    /// See [`obstacle_kind`].
    pub kind: u32,
    /// World pose.
    pub pose: Xf,
    /// Shape parameters (see [`obstacle_kind`]).
    pub params: [f32; 3],
    /// Bounding sphere centre (world).
    pub center: V3,
    /// Bounding sphere radius.
    pub radius: f32,
    /// First vertex in the mesh pool (meshes only).
    pub mesh_start: u32,
    /// Vertex count (meshes only).
    pub mesh_count: u32,
}

impl ObstacleModel {
    /// The empty slot.
    pub const EMPTY: ObstacleModel = ObstacleModel {
        kind: obstacle_kind::NONE,
        pose: Xf::IDENTITY,
        params: [0.0; 3],
        center: [0.0; 3],
        radius: 0.0,
        mesh_start: 0,
        mesh_count: 0,
    };
}

/// The scene compiled to flat arrays, one entry per scene slot.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SceneModel {
    /// Obstacles by scene slot.
    pub obstacles: Vec<ObstacleModel>,
    /// Vertices of mesh obstacles in their own frames.
    pub mesh_verts: Vec<V3>,
    /// CRS row pointers over `mesh_verts`.
    pub mesh_edge_offsets: Vec<u32>,
    /// CRS neighbour lists.
    pub mesh_edge_targets: Vec<u32>,
    /// Scene revision this model reflects.
    pub revision: u64,
}

impl SceneModel {
    /// Compiles a whole scene.
    pub fn build(scene: &Scene) -> Self {
        let mut m = SceneModel {
            mesh_edge_offsets: vec![0],
            ..Default::default()
        };
        m.rebuild(scene);
        m
    }

    /// Recompiles every slot (used after a truncated change log).
    pub fn rebuild(&mut self, scene: &Scene) {
        self.obstacles.clear();
        self.mesh_verts.clear();
        self.mesh_edge_offsets.clear();
        self.mesh_edge_offsets.push(0);
        self.mesh_edge_targets.clear();
        for slot in 0..scene.slots().len() {
            self.update_slot(scene, slot);
        }
        self.revision = scene.revision();
    }

    /// Brings the model up to date with `scene`, touching only the slots that changed since the
    /// last sync. Returns the slots that were rewritten.
    pub fn sync(&mut self, scene: &Scene) -> Vec<usize> {
        if scene.revision() == self.revision {
            return Vec::new();
        }
        let changed: Option<Vec<usize>> = scene.changes_since(self.revision).map(|log| {
            let mut v: Vec<usize> = log
                .iter()
                .map(|(_, c)| match c {
                    crate::scene::SceneChange::Added { slot }
                    | crate::scene::SceneChange::Moved { slot }
                    | crate::scene::SceneChange::Replaced { slot }
                    | crate::scene::SceneChange::Removed { slot } => *slot,
                })
                .collect();
            v.sort_unstable();
            v.dedup();
            v
        });
        match changed {
            Some(slots) => {
                for &s in &slots {
                    self.update_slot(scene, s);
                }
                // Meshes replaced in place leave dead vertices in the pool; compact when it is
                // mostly garbage.
                let live: usize = self
                    .obstacles
                    .iter()
                    .filter(|o| o.kind == obstacle_kind::MESH)
                    .map(|o| o.mesh_count as usize)
                    .sum();
                if self.mesh_verts.len() > 1024 && live * 2 < self.mesh_verts.len() {
                    self.rebuild(scene);
                    return (0..self.obstacles.len()).collect();
                }
                self.revision = scene.revision();
                slots
            }
            None => {
                self.rebuild(scene);
                (0..self.obstacles.len()).collect()
            }
        }
    }

    /// Appends the obstacles of `other` after this model's (their mesh vertices and edge lists
    /// after this model's pool, indices shifted to match). Returns the slot of `other`'s first
    /// obstacle. Used to hold several scenes in one model, each a range of slots
    /// (`collision::hub`).
    pub fn append(&mut self, other: &SceneModel) -> usize {
        let first = self.obstacles.len();
        let verts = self.mesh_verts.len() as u32;
        let targets = self.mesh_edge_targets.len() as u32;
        if self.mesh_edge_offsets.is_empty() {
            self.mesh_edge_offsets.push(0);
        }
        self.obstacles.extend(other.obstacles.iter().map(|o| {
            let mut o = *o;
            if o.kind == obstacle_kind::MESH {
                o.mesh_start += verts;
            }
            o
        }));
        self.mesh_verts.extend_from_slice(&other.mesh_verts);
        self.mesh_edge_offsets
            .extend(other.mesh_edge_offsets.iter().skip(1).map(|&k| k + targets));
        self.mesh_edge_targets
            .extend(other.mesh_edge_targets.iter().map(|&t| t + verts));
        first
    }

    fn update_slot(&mut self, scene: &Scene, slot: usize) {
        if self.obstacles.len() <= slot {
            self.obstacles.resize(slot + 1, ObstacleModel::EMPTY);
        }
        let Some(Some(o)) = scene.slots().get(slot) else {
            self.obstacles[slot] = ObstacleModel::EMPTY;
            return;
        };
        let pose = Xf::from_isometry(&o.pose);
        let mut om = ObstacleModel {
            pose,
            ..ObstacleModel::EMPTY
        };
        match &o.shape {
            Shape::Box { half_extents } => {
                om.kind = obstacle_kind::BOX;
                om.params = [
                    half_extents.x as f32,
                    half_extents.y as f32,
                    half_extents.z as f32,
                ];
                om.center = pose.t;
                om.radius = (half_extents.norm() as f32) * (1.0 + 1e-6);
            }
            Shape::Sphere { radius } => {
                om.kind = obstacle_kind::SPHERE;
                om.params = [*radius as f32, 0.0, 0.0];
                om.center = pose.t;
                om.radius = *radius as f32;
            }
            Shape::Cylinder {
                radius,
                half_length,
            } => {
                om.kind = obstacle_kind::CYLINDER;
                om.params = [*radius as f32, *half_length as f32, 0.0];
                om.center = pose.t;
                om.radius =
                    ((radius * radius + half_length * half_length).sqrt() as f32) * (1.0 + 1e-6);
            }
            Shape::ConvexMesh { polytope } => {
                om.kind = obstacle_kind::MESH;
                let start = push_polytope(
                    polytope,
                    &mut self.mesh_verts,
                    &mut self.mesh_edge_offsets,
                    &mut self.mesh_edge_targets,
                );
                om.mesh_start = start;
                om.mesh_count = polytope.vertices.len() as u32;
                let (c, r) = bounding(&self.mesh_verts[start as usize..], 0.0);
                om.center = pose.apply(&c);
                om.radius = r;
            }
        }
        self.obstacles[slot] = om;
    }
}

/// The padded bounding sphere (centre, radius) of the bounding spheres of `bodies` (not
/// empty, all on one frame), and their box (low and high corners, f64): centred on the middle
/// of the box, with a radius computed in f64, padded by 1e-4 of itself (+ 1e-4 m) and rounded
/// up to f32, so every body's sphere lies inside it. The culling bounds of the specialised
/// kernels (`gpu::specialise`) and the body groups of the CPU fast path use it.
pub(crate) fn bound_of(m: &CollisionModel, bodies: &[usize]) -> (V3, f32, [f64; 3], [f64; 3]) {
    let c = |bi: usize| m.bodies[bi].center.map(f64::from);
    let mut lo = [f64::INFINITY; 3];
    let mut hi = [f64::NEG_INFINITY; 3];
    for &bi in bodies {
        let r = f64::from(m.bodies[bi].radius);
        for k in 0..3 {
            lo[k] = lo[k].min(c(bi)[k] - r);
            hi[k] = hi[k].max(c(bi)[k] + r);
        }
    }
    let centre: [f64; 3] = std::array::from_fn(|k| 0.5 * (lo[k] + hi[k]));
    let centre32 = centre.map(|x| x as f32);
    let radius = bodies
        .iter()
        .map(|&bi| {
            let d: f64 = (0..3)
                .map(|k| (c(bi)[k] - f64::from(centre32[k])).powi(2))
                .sum::<f64>()
                .sqrt();
            d + f64::from(m.bodies[bi].radius)
        })
        .fold(0.0f64, f64::max);
    let padded = radius + 1e-4 * (radius + 1.0);
    let mut r32 = padded as f32;
    if f64::from(r32) < padded {
        r32 = f32::from_bits(r32.to_bits() + 1);
    }
    (centre32, r32, lo, hi)
}
