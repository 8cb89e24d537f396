//! The planning scene: obstacles (boxes, spheres, cylinders, convex meshes) with poses, kept
//! in stable slots so a device-resident copy can update only what changed.
//!
//! Scenes come from the project's own YAML format ([`yaml`]), from MoveIt `PlanningScene`
//! YAML ([`moveit`]) or from MoveIt's `.scene` text ([`moveit_text`]); [`load_scene`] picks
//! the right one.

pub mod cloud;
pub mod cloud_file;
pub mod moveit;
pub mod moveit_text;
pub mod yaml;

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use nalgebra::{Isometry3, Point3, Vector3};
use thiserror::Error;

use crate::robot::decompose::{convex_parts, Decomposition};
use crate::robot::geometry::{GeometryError, Polytope};
use crate::robot::AttachedObject;

/// Number of changes the scene remembers for [`Scene::changes_since`].
pub const CHANGE_LOG_CAPACITY: usize = 4096;

/// What went wrong with a scene, its file or one of its obstacles.
#[derive(Debug, Error)]
pub enum SceneError {
    /// An obstacle failed validation (size, pose, mesh).
    #[error("obstacle '{id}': {reason}")]
    InvalidObstacle {
        /// The obstacle id.
        id: String,
        /// What is wrong.
        reason: String,
    },
    /// An obstacle with this id is already in the scene.
    #[error("obstacle '{id}' already exists")]
    DuplicateId {
        /// The id.
        id: String,
    },
    /// No obstacle has this id.
    #[error("no obstacle '{id}' in the scene")]
    UnknownId {
        /// The id.
        id: String,
    },
    /// The scene file could not be read.
    #[error("cannot read scene file {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The file is not valid YAML or does not have the expected structure; the message
    /// carries the line and column.
    #[error("{path}: {source}")]
    Yaml {
        /// The file (or `<string>` for text given directly).
        path: PathBuf,
        /// The parser's error, with its location.
        source: serde_yaml::Error,
    },
    /// A MoveIt `.scene` text is malformed at a line.
    #[error("{path}: line {line}: {reason}")]
    Text {
        /// The file (or where the text came from).
        path: PathBuf,
        /// The line (1-based).
        line: usize,
        /// What is wrong.
        reason: String,
    },
    /// One obstacle entry of a file is malformed.
    #[error("{path}: obstacle {obstacle}: {reason}")]
    Format {
        /// The file.
        path: PathBuf,
        /// The obstacle, as `#index 'id'`.
        obstacle: String,
        /// What is wrong.
        reason: String,
    },
    /// An obstacle's mesh or point list could not be turned into a polytope.
    #[error("{path}: obstacle {obstacle}: {source}")]
    Geometry {
        /// The scene file.
        path: PathBuf,
        /// The obstacle, as `#index 'id'`.
        obstacle: String,
        /// The geometry error (names the mesh file where there is one).
        source: GeometryError,
    },
}

/// The geometry of an obstacle, in its own frame.
#[derive(Debug, Clone, PartialEq)]
pub enum Shape {
    /// Axis-aligned box `[-h, h]`.
    Box {
        /// Half of the size along each axis.
        half_extents: Vector3<f64>,
    },
    /// Ball about the origin.
    Sphere {
        /// Radius.
        radius: f64,
    },
    /// Cylinder about the z axis, centred on the origin.
    Cylinder {
        /// Radius.
        radius: f64,
        /// Half of the length along z.
        half_length: f64,
    },
    /// A convex polytope (e.g. the hull of a mesh).
    ConvexMesh {
        /// The polytope, in the obstacle frame.
        polytope: Polytope,
    },
}

fn positive(what: &str, v: f64) -> Result<(), String> {
    if v.is_finite() && v > 0.0 {
        Ok(())
    } else {
        Err(format!("{what} must be positive and finite, got {v}"))
    }
}

impl Shape {
    /// Checks that every size is positive and finite and a mesh has a solid, finite hull.
    pub fn validate(&self) -> Result<(), String> {
        match self {
            Shape::Box { half_extents: h } => {
                positive("box half extent x", h.x)?;
                positive("box half extent y", h.y)?;
                positive("box half extent z", h.z)
            }
            Shape::Sphere { radius } => positive("sphere radius", *radius),
            Shape::Cylinder {
                radius,
                half_length,
            } => {
                positive("cylinder radius", *radius)?;
                positive("cylinder half length", *half_length)
            }
            Shape::ConvexMesh { polytope } => {
                if polytope.vertices.len() < 4 || polytope.faces.len() < 4 {
                    return Err("convex mesh has fewer than 4 vertices or faces".to_string());
                }
                if polytope
                    .vertices
                    .iter()
                    .any(|v| !(v.x.is_finite() && v.y.is_finite() && v.z.is_finite()))
                {
                    return Err("convex mesh has a non-finite vertex".to_string());
                }
                let n = polytope.vertices.len();
                if polytope.edge_offsets.len() != n + 1
                    || polytope.faces.iter().flatten().any(|&i| i as usize >= n)
                    || polytope.edge_targets.iter().any(|&i| i as usize >= n)
                    || polytope.edge_offsets.last().copied()
                        != Some(polytope.edge_targets.len() as u32)
                {
                    return Err("convex mesh indices are out of range".to_string());
                }
                Ok(())
            }
        }
    }

    /// Radius of a sphere about the shape origin containing the shape.
    pub fn bounding_radius(&self) -> f64 {
        match self {
            Shape::Box { half_extents } => half_extents.norm(),
            Shape::Sphere { radius } => *radius,
            Shape::Cylinder {
                radius,
                half_length,
            } => radius.hypot(*half_length),
            Shape::ConvexMesh { polytope } => polytope
                .vertices
                .iter()
                .map(|v| v.coords.norm())
                .fold(0.0, f64::max),
        }
    }

    /// A point of the shape maximising `dir · p`, in the shape frame (exact for every
    /// variant; for a zero direction some surface point is returned). Components of `dir`
    /// that are exactly zero pick the positive side.
    pub fn support_local(&self, dir: &Vector3<f64>) -> Point3<f64> {
        let sign = |x: f64| if x < 0.0 { -1.0 } else { 1.0 };
        match self {
            Shape::Box { half_extents: h } => {
                Point3::new(sign(dir.x) * h.x, sign(dir.y) * h.y, sign(dir.z) * h.z)
            }
            Shape::Sphere { radius } => {
                let n = dir.norm();
                if n > 0.0 && n.is_finite() {
                    Point3::from(dir * (*radius / n))
                } else {
                    Point3::new(*radius, 0.0, 0.0)
                }
            }
            Shape::Cylinder {
                radius,
                half_length,
            } => {
                let radial = dir.x.hypot(dir.y);
                let (x, y) = if radial > 0.0 && radial.is_finite() {
                    (dir.x / radial * radius, dir.y / radial * radius)
                } else {
                    (*radius, 0.0)
                };
                Point3::new(x, y, sign(dir.z) * half_length)
            }
            Shape::ConvexMesh { polytope } => polytope
                .vertices
                .get(polytope.support(dir))
                .copied()
                .unwrap_or_else(Point3::origin),
        }
    }
}

/// A named obstacle placed in the scene frame.
#[derive(Debug, Clone, PartialEq)]
pub struct Obstacle {
    /// Unique name within the scene.
    pub id: String,
    /// Geometry in the obstacle frame.
    pub shape: Shape,
    /// Pose of the obstacle frame in the scene frame.
    pub pose: Isometry3<f64>,
}

/// The id of part `k` (from 1) of an obstacle split into convex parts: `id/k`.
pub fn part_id(id: &str, k: usize) -> String {
    format!("{id}/{k}")
}

/// `first` and one obstacle per shape of `more`, with `first`'s pose, named
/// [`part_id`]`(first.id, 1)`, `(first.id, 2)`, ...: an obstacle split into convex parts.
pub fn with_parts(first: Obstacle, more: Vec<Shape>) -> Vec<Obstacle> {
    let mut out = Vec::with_capacity(more.len() + 1);
    for (k, shape) in more.into_iter().enumerate() {
        out.push(Obstacle {
            id: part_id(&first.id, k + 1),
            shape,
            pose: first.pose,
        });
    }
    out.insert(0, first);
    out
}

/// Checks that a pose is finite with a unit quaternion.
fn validate_pose(pose: &Isometry3<f64>) -> Result<(), String> {
    let t = &pose.translation.vector;
    if !(t.x.is_finite() && t.y.is_finite() && t.z.is_finite()) {
        return Err(format!("position {t:?} is not finite"));
    }
    let q = pose.rotation.quaternion();
    let norm = q.norm();
    if !norm.is_finite() || (norm - 1.0).abs() > 1e-6 {
        return Err(format!(
            "orientation quaternion has norm {norm}, expected 1"
        ));
    }
    Ok(())
}

impl Obstacle {
    /// Checks the shape and the pose; the error names the obstacle.
    pub fn validate(&self) -> Result<(), SceneError> {
        self.shape
            .validate()
            .and_then(|_| validate_pose(&self.pose))
            .map_err(|reason| SceneError::InvalidObstacle {
                id: self.id.clone(),
                reason,
            })
    }

    /// World-frame axis-aligned bounding box `(min, max)`; exact for boxes, spheres and
    /// cylinders under any rotation and for meshes (from the transformed vertices).
    pub fn aabb(&self) -> (Point3<f64>, Point3<f64>) {
        let c = Point3::from(self.pose.translation.vector);
        let r = self.pose.rotation.to_rotation_matrix();
        let m = r.matrix();
        let half = match &self.shape {
            Shape::Box { half_extents: h } => Vector3::from_fn(|i, _| {
                m[(i, 0)].abs() * h.x + m[(i, 1)].abs() * h.y + m[(i, 2)].abs() * h.z
            }),
            Shape::Sphere { radius } => Vector3::repeat(*radius),
            Shape::Cylinder {
                radius,
                half_length,
            } => Vector3::from_fn(|i, _| {
                let a = m[(i, 2)];
                a.abs() * half_length + radius * (1.0 - a * a).max(0.0).sqrt()
            }),
            Shape::ConvexMesh { polytope } => {
                let mut lo = Point3::new(f64::INFINITY, f64::INFINITY, f64::INFINITY);
                let mut hi = -lo;
                for v in &polytope.vertices {
                    let w = self.pose * v;
                    lo = lo.inf(&w);
                    hi = hi.sup(&w);
                }
                return (lo, hi);
            }
        };
        (c - half, c + half)
    }

    /// World-frame support point: `pose * shape.support_local(R^T dir)`.
    pub fn support(&self, dir: &Vector3<f64>) -> Point3<f64> {
        let local = self.pose.rotation.inverse_transform_vector(dir);
        self.pose * self.shape.support_local(&local)
    }
}

/// One change to the scene, for incremental mirrors (e.g. a GPU copy).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SceneChange {
    /// A new obstacle was stored in `slot`.
    Added {
        /// The slot.
        slot: usize,
    },
    /// The obstacle in `slot` got a new pose (same shape).
    Moved {
        /// The slot.
        slot: usize,
    },
    /// The obstacle in `slot` got a new shape and pose (by [`Scene::upsert`]).
    Replaced {
        /// The slot.
        slot: usize,
    },
    /// The obstacle in `slot` was removed; the slot is free.
    Removed {
        /// The slot.
        slot: usize,
    },
}

/// Obstacles in stable slots, with a revision counter and a bounded change log.
///
/// A slot keeps its obstacle for as long as the obstacle lives; freed slots are reused by
/// later additions. Every change bumps the revision and is logged, so a mirror at revision
/// `r` can catch up with [`Scene::changes_since`].
#[derive(Debug, Clone)]
pub struct Scene {
    frame_id: String,
    slots: Vec<Option<Obstacle>>,
    free: Vec<usize>,
    by_id: HashMap<String, usize>,
    revision: u64,
    log: Vec<(u64, SceneChange)>,
    /// Objects the robot carries (read from a scene file's `attached:` list).
    attached: Vec<AttachedObject>,
    /// Allowed-collision entries (a scene file's `allowed_collisions:` list).
    allowed: Vec<AllowedCollision>,
    /// Entries of a MoveIt `allowed_collision_matrix` (names the robot lacks are left aside).
    matrix: Vec<AllowedCollision>,
}

/// An allowed-collision entry, by name: `a` and `b` (links, carried objects, obstacles or
/// planning groups) may touch (`allowed`), or are checked although the robot model lets them
/// touch (`!allowed`). See [`crate::service::PlanningService::allow_collisions`].
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct AllowedCollision {
    /// One name.
    pub a: String,
    /// The other.
    pub b: String,
    /// Whether they may touch.
    pub allowed: bool,
}

impl Default for Scene {
    fn default() -> Self {
        Scene::new("world")
    }
}

impl Scene {
    /// An empty scene whose obstacles are expressed in `frame`.
    pub fn new(frame: impl Into<String>) -> Scene {
        Scene {
            frame_id: frame.into(),
            slots: Vec::new(),
            free: Vec::new(),
            by_id: HashMap::new(),
            revision: 0,
            log: Vec::new(),
            attached: Vec::new(),
            allowed: Vec::new(),
            matrix: Vec::new(),
        }
    }

    /// The frame obstacle poses are expressed in.
    pub fn frame(&self) -> &str {
        &self.frame_id
    }

    fn record(&mut self, change: SceneChange) {
        self.revision += 1;
        self.log.push((self.revision, change));
        // Trim in bulk so the amortised cost per change stays O(1).
        if self.log.len() >= 2 * CHANGE_LOG_CAPACITY {
            self.log.drain(..self.log.len() - CHANGE_LOG_CAPACITY);
        }
    }

    /// Adds a validated obstacle and returns its slot (a freed slot is reused).
    /// Errors: invalid shape or pose, or an id already present.
    pub fn add(&mut self, obstacle: Obstacle) -> Result<usize, SceneError> {
        obstacle.validate()?;
        if self.by_id.contains_key(&obstacle.id) {
            return Err(SceneError::DuplicateId { id: obstacle.id });
        }
        let slot = match self.free.pop() {
            Some(s) => s,
            None => {
                self.slots.push(None);
                self.slots.len() - 1
            }
        };
        self.by_id.insert(obstacle.id.clone(), slot);
        self.slots[slot] = Some(obstacle);
        self.record(SceneChange::Added { slot });
        Ok(slot)
    }

    /// Moves the obstacle `id` to `pose`. Errors: unknown id or an invalid pose.
    pub fn set_pose(&mut self, id: &str, pose: Isometry3<f64>) -> Result<(), SceneError> {
        let slot = self
            .slot_of(id)
            .ok_or_else(|| SceneError::UnknownId { id: id.into() })?;
        validate_pose(&pose).map_err(|reason| SceneError::InvalidObstacle {
            id: id.into(),
            reason,
        })?;
        if let Some(Some(o)) = self.slots.get_mut(slot) {
            o.pose = pose;
        }
        self.record(SceneChange::Moved { slot });
        Ok(())
    }

    /// Removes and returns the obstacle `id`; its slot becomes free.
    pub fn remove(&mut self, id: &str) -> Result<Obstacle, SceneError> {
        let slot = self
            .by_id
            .remove(id)
            .ok_or_else(|| SceneError::UnknownId { id: id.into() })?;
        let obstacle = self
            .slots
            .get_mut(slot)
            .and_then(Option::take)
            .ok_or_else(|| SceneError::UnknownId { id: id.into() })?;
        self.free.push(slot);
        self.record(SceneChange::Removed { slot });
        Ok(obstacle)
    }

    /// Adds the obstacle, or replaces the shape and pose of the one with the same id (same
    /// slot). Returns the slot.
    pub fn upsert(&mut self, obstacle: Obstacle) -> Result<usize, SceneError> {
        let Some(slot) = self.slot_of(&obstacle.id) else {
            return self.add(obstacle);
        };
        obstacle.validate()?;
        self.slots[slot] = Some(obstacle);
        self.record(SceneChange::Replaced { slot });
        Ok(slot)
    }

    /// Removes every obstacle, logging one removal per occupied slot, and forgets the slots.
    pub fn clear(&mut self) {
        let occupied: Vec<usize> = (0..self.slots.len())
            .filter(|&s| self.slots[s].is_some())
            .collect();
        for slot in occupied {
            self.record(SceneChange::Removed { slot });
        }
        self.slots.clear();
        self.free.clear();
        self.by_id.clear();
    }

    /// The obstacle with this id.
    pub fn get(&self, id: &str) -> Option<&Obstacle> {
        self.slot_of(id)
            .and_then(|s| self.slots.get(s))
            .and_then(Option::as_ref)
    }

    /// The slot of the obstacle with this id.
    pub fn slot_of(&self, id: &str) -> Option<usize> {
        self.by_id.get(id).copied()
    }

    /// All slots, `None` where free. Indices are stable while an obstacle lives.
    pub fn slots(&self) -> &[Option<Obstacle>] {
        &self.slots
    }

    /// Live obstacles in slot order.
    pub fn iter(&self) -> impl Iterator<Item = &Obstacle> {
        self.slots.iter().flatten()
    }

    /// Number of live obstacles.
    pub fn len(&self) -> usize {
        self.by_id.len()
    }

    /// Whether the scene has no obstacles.
    pub fn is_empty(&self) -> bool {
        self.by_id.is_empty()
    }

    /// Records an object the robot carries (applied to the robot with
    /// [`RobotModel::with_attached`](crate::robot::RobotModel::with_attached) by whoever plans
    /// in this scene). Errors: an id already used by an obstacle or another attached object,
    /// or an invalid shape or pose (the pose is in the holding link's frame).
    pub fn attach(&mut self, object: AttachedObject) -> Result<(), SceneError> {
        Obstacle {
            id: object.id.clone(),
            shape: object.shape.clone(),
            pose: object.pose,
        }
        .validate()?;
        if self.by_id.contains_key(&object.id) || self.attached.iter().any(|a| a.id == object.id) {
            return Err(SceneError::DuplicateId { id: object.id });
        }
        self.attached.push(object);
        Ok(())
    }

    /// The objects the robot carries, in the order they were attached.
    pub fn attached(&self) -> &[AttachedObject] {
        &self.attached
    }

    /// Takes the attached objects out of the scene (leaving none).
    pub fn take_attached(&mut self) -> Vec<AttachedObject> {
        std::mem::take(&mut self.attached)
    }

    /// The allowed-collision entries the scene carries, in order (later entries win).
    pub fn allowed_collisions(&self) -> &[AllowedCollision] {
        &self.allowed
    }

    /// Replaces the allowed-collision entries (obstacles are not touched and the revision
    /// stays: the entries are applied by whoever plans in this scene).
    pub fn set_allowed_collisions(&mut self, entries: Vec<AllowedCollision>) {
        self.allowed = entries;
    }

    /// The entries of the MoveIt `allowed_collision_matrix` the scene was read with, pair by
    /// pair (see [`moveit`]): applied before [`Self::allowed_collisions`], and unlike those,
    /// an entry naming what neither the robot nor the scene has is left aside, as MoveIt
    /// does ([`crate::collision::allowed::known_entries`]).
    pub fn matrix_collisions(&self) -> &[AllowedCollision] {
        &self.matrix
    }

    /// Replaces the matrix entries (see [`Self::matrix_collisions`]).
    pub fn set_matrix_collisions(&mut self, entries: Vec<AllowedCollision>) {
        self.matrix = entries;
    }

    /// Counter bumped by every change (starts at 0).
    pub fn revision(&self) -> u64 {
        self.revision
    }

    /// The changes made after revision `rev`, oldest first, each with the revision it
    /// produced. `None` when some of them have been dropped from the bounded log (the mirror
    /// must resynchronise from [`Scene::slots`]) or `rev` is in the future.
    pub fn changes_since(&self, rev: u64) -> Option<&[(u64, SceneChange)]> {
        if rev > self.revision {
            return None;
        }
        if rev == self.revision {
            return Some(&[]);
        }
        let first = self.log.first()?.0;
        if rev + 1 < first {
            return None;
        }
        let start = self.log.partition_point(|(r, _)| *r <= rev);
        Some(&self.log[start..])
    }
}

/// Whether `path` names a MoveIt `.scene` file (ends in `.scene`): written in that format.
pub fn is_moveit_text(path: &Path) -> bool {
    path.extension().is_some_and(|e| e == "scene")
}

impl Scene {
    /// The scene as file `path` holds it: MoveIt `.scene` text named after the file where
    /// `path` ends in `.scene` (obstacles only, see [`Scene::to_moveit_text`]), else the
    /// project's format ([`Scene::to_yaml_string`]).
    pub fn to_text_for(&self, path: &Path) -> String {
        if is_moveit_text(path) {
            let name = path.file_stem().unwrap_or_default().to_string_lossy();
            self.to_moveit_text(&name)
        } else {
            self.to_yaml_string()
        }
    }
}

/// Loads a scene file in any of the three formats: MoveIt's `.scene` text (its last line
/// `.`; poses in the planning frame, see [`moveit_text`]), MoveIt `PlanningScene` YAML (a
/// top-level `world` key) or the project's own format (see [`yaml`]). MoveIt's meshes are
/// their convex hulls ([`load_scene_with`] splits them).
pub fn load_scene(path: &Path) -> Result<Scene, SceneError> {
    Scene::from_file(path)
}

/// [`load_scene`] with `options`.
pub fn load_scene_with(path: &Path, options: &SceneOptions) -> Result<Scene, SceneError> {
    Scene::from_file_with(path, options)
}

/// How scene files are read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SceneOptions {
    /// What the meshes of MoveIt scenes (`PlanningScene` YAML, `.scene` text), which say
    /// nothing about it themselves, become: with `max_parts` 1 (the default) the convex hull
    /// of the vertices; above 1 at most that many convex parts covering the mesh's triangles
    /// ([`crate::robot::decompose::convex_parts`]), each a further shape of its object
    /// (obstacles `id`, `id/1`, ... in order). Meshes of carried objects stay hulls, and the
    /// project's format says it per mesh (`convex_parts`).
    pub mesh_parts: Decomposition,
}

impl Default for SceneOptions {
    fn default() -> Self {
        SceneOptions {
            mesh_parts: Decomposition::hull(),
        }
    }
}

/// A mesh as obstacle shapes: the convex hull of `points` where `how` allows one part or no
/// triangle is given, else convex parts covering `triangles` (indices into `points`).
pub(crate) fn mesh_shapes(
    points: &[Point3<f64>],
    triangles: &[[u32; 3]],
    how: &Decomposition,
) -> Result<Vec<Shape>, GeometryError> {
    let parts = if how.max_parts > 1 && !triangles.is_empty() {
        convex_parts(points, triangles, how)?
    } else {
        vec![Polytope::from_points(points)?]
    };
    Ok(parts
        .into_iter()
        .map(|polytope| Shape::ConvexMesh { polytope })
        .collect())
}

impl Scene {
    /// See [`load_scene`].
    pub fn from_file(path: &Path) -> Result<Scene, SceneError> {
        Self::from_file_with(path, &SceneOptions::default())
    }

    /// See [`load_scene_with`].
    pub fn from_file_with(path: &Path, options: &SceneOptions) -> Result<Scene, SceneError> {
        let text = std::fs::read_to_string(path).map_err(|source| SceneError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        Self::from_text_with(
            &text,
            path.parent().unwrap_or(Path::new(".")),
            path,
            options,
        )
    }

    /// A scene in either format (as [`load_scene`]) from `text`; relative mesh paths of the
    /// project's format resolve against `base_dir`, and errors name `source`.
    pub fn from_text(text: &str, base_dir: &Path, source: &Path) -> Result<Scene, SceneError> {
        Self::from_text_with(text, base_dir, source, &SceneOptions::default())
    }

    /// [`Scene::from_text`] with `options`.
    pub fn from_text_with(
        text: &str,
        base_dir: &Path,
        source: &Path,
        options: &SceneOptions,
    ) -> Result<Scene, SceneError> {
        if moveit_text::looks_like_scene_text(text) {
            return moveit_text::parse(text, source, options);
        }
        // Detect the format on a generic parse, then parse again typed, so that errors
        // keep their line numbers.
        let value: serde_yaml::Value =
            serde_yaml::from_str(text).map_err(|e| SceneError::Yaml {
                path: source.to_path_buf(),
                source: e,
            })?;
        if moveit::looks_like_moveit(&value) {
            moveit::parse(text, source, options)
        } else {
            yaml::parse(text, base_dir, source)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nalgebra::UnitQuaternion;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    fn ball(id: &str, x: f64) -> Obstacle {
        Obstacle {
            id: id.into(),
            shape: Shape::Sphere { radius: 0.1 },
            pose: Isometry3::translation(x, 0.0, 0.0),
        }
    }

    #[test]
    fn slots_are_stable_and_reused() {
        let mut s = Scene::new("base");
        assert_eq!(s.frame(), "base");
        assert_eq!(s.add(ball("a", 0.0)).unwrap(), 0);
        assert_eq!(s.add(ball("b", 1.0)).unwrap(), 1);
        assert_eq!(s.add(ball("c", 2.0)).unwrap(), 2);
        assert!(matches!(s.add(ball("b", 5.0)), Err(SceneError::DuplicateId { id }) if id == "b"));
        let removed = s.remove("b").unwrap();
        assert_eq!(removed.id, "b");
        assert!(s.slots()[1].is_none());
        assert_eq!(s.slot_of("c"), Some(2));
        assert_eq!(s.add(ball("d", 3.0)).unwrap(), 1);
        assert_eq!(s.len(), 3);
        let ids: Vec<_> = s.iter().map(|o| o.id.as_str()).collect();
        assert_eq!(ids, ["a", "d", "c"]);
        assert!(matches!(s.remove("zz"), Err(SceneError::UnknownId { .. })));
        assert!(matches!(
            s.set_pose("zz", Isometry3::identity()),
            Err(SceneError::UnknownId { .. })
        ));
        s.set_pose("c", Isometry3::translation(0.0, 9.0, 0.0))
            .unwrap();
        assert_eq!(s.get("c").unwrap().pose.translation.y, 9.0);
        // upsert replaces in place.
        let mut big = ball("c", 0.0);
        big.shape = Shape::Box {
            half_extents: Vector3::new(1.0, 1.0, 1.0),
        };
        assert_eq!(s.upsert(big.clone()).unwrap(), 2);
        assert_eq!(s.get("c"), Some(&big));
        assert_eq!(s.upsert(ball("e", 0.0)).unwrap(), 3);
        s.clear();
        assert!(s.is_empty());
        assert!(s.slots().is_empty());
    }

    #[test]
    fn change_log_tracks_revisions() {
        let mut s = Scene::default();
        assert_eq!(s.revision(), 0);
        assert_eq!(s.changes_since(0), Some(&[][..]));
        s.add(ball("a", 0.0)).unwrap();
        s.add(ball("b", 0.0)).unwrap();
        let r = s.revision();
        s.set_pose("a", Isometry3::translation(1.0, 0.0, 0.0))
            .unwrap();
        s.remove("b").unwrap();
        assert_eq!(s.revision(), 4);
        assert_eq!(
            s.changes_since(r).unwrap(),
            &[
                (3, SceneChange::Moved { slot: 0 }),
                (4, SceneChange::Removed { slot: 1 })
            ]
        );
        assert_eq!(s.changes_since(0).unwrap().len(), 4);
        assert_eq!(s.changes_since(99), None);
        // Failed operations change nothing.
        assert!(s.add(ball("a", 0.0)).is_err());
        assert_eq!(s.revision(), 4);
        // The log is bounded: very old revisions report truncation.
        for k in 0..3 * CHANGE_LOG_CAPACITY {
            s.set_pose("a", Isometry3::translation(k as f64, 0.0, 0.0))
                .unwrap();
        }
        assert_eq!(s.changes_since(0), None);
        let recent = s.changes_since(s.revision() - 10).unwrap();
        assert_eq!(recent.len(), 10);
        assert!(s.log.len() < 2 * CHANGE_LOG_CAPACITY);
    }

    #[test]
    fn invalid_obstacles_are_rejected_by_id() {
        let mut s = Scene::default();
        let mut o = ball("bad", 0.0);
        o.shape = Shape::Cylinder {
            radius: 0.1,
            half_length: f64::NAN,
        };
        let e = s.add(o).unwrap_err();
        assert!(e.to_string().contains("'bad'"), "{e}");
        let mut o = ball("neg", 0.0);
        o.shape = Shape::Box {
            half_extents: Vector3::new(1.0, -1.0, 1.0),
        };
        assert!(matches!(s.add(o), Err(SceneError::InvalidObstacle { id, .. }) if id == "neg"));
        let mut o = ball("far", 0.0);
        o.pose.translation.vector.x = f64::INFINITY;
        assert!(s.add(o).is_err());
        let mut o = ball("q", 0.0);
        o.pose.rotation =
            UnitQuaternion::new_unchecked(nalgebra::Quaternion::new(2.0, 0.0, 0.0, 0.0));
        assert!(s.add(o).is_err());
        assert!(s.is_empty());
        assert_eq!(s.revision(), 0);
    }

    fn random_pose(rng: &mut ChaCha8Rng) -> Isometry3<f64> {
        Isometry3::new(
            Vector3::new(
                rng.random_range(-1.0..1.0),
                rng.random_range(-1.0..1.0),
                0.5,
            ),
            Vector3::new(
                rng.random_range(-3.0..3.0),
                rng.random_range(-3.0..3.0),
                rng.random_range(-3.0..3.0),
            ),
        )
    }

    #[test]
    fn aabb_and_support_match_dense_sampling() {
        let mut rng = ChaCha8Rng::seed_from_u64(2);
        let shapes = [
            Shape::Box {
                half_extents: Vector3::new(0.3, 0.1, 0.05),
            },
            Shape::Sphere { radius: 0.2 },
            Shape::Cylinder {
                radius: 0.1,
                half_length: 0.4,
            },
            Shape::ConvexMesh {
                polytope: Polytope::from_sphere(0.2, 1).unwrap(),
            },
        ];
        for shape in shapes {
            for _ in 0..20 {
                let o = Obstacle {
                    id: "x".into(),
                    shape: shape.clone(),
                    pose: random_pose(&mut rng),
                };
                let (lo, hi) = o.aabb();
                // The support points along +-axes realise the AABB exactly.
                for k in 0..3 {
                    let mut d = Vector3::zeros();
                    d[k] = 1.0;
                    assert!((o.support(&d)[k] - hi[k]).abs() < 1e-12);
                    assert!((o.support(&-d)[k] - lo[k]).abs() < 1e-12);
                }
                // Support is a max over sampled surface points of the exact shape.
                let dir = Vector3::new(
                    rng.random_range(-1.0..1.0),
                    rng.random_range(-1.0..1.0),
                    rng.random_range(-1.0..1.0),
                );
                let best = dir.dot(&o.support(&dir).coords);
                for p in surface_samples(&o.shape, &mut rng) {
                    let w = o.pose * p;
                    assert!(dir.dot(&w.coords) <= best + 1e-12);
                    for k in 0..3 {
                        assert!(w[k] >= lo[k] - 1e-12 && w[k] <= hi[k] + 1e-12);
                    }
                }
                assert!(
                    o.shape.bounding_radius() >= o.shape.support_local(&dir).coords.norm() - 1e-12
                );
            }
        }
    }

    fn surface_samples(shape: &Shape, rng: &mut ChaCha8Rng) -> Vec<Point3<f64>> {
        let mut out = Vec::new();
        for _ in 0..200 {
            let u = Vector3::new(
                rng.random_range(-1.0..1.0),
                rng.random_range(-1.0..1.0),
                rng.random_range(-1.0..1.0),
            );
            let p = match shape {
                Shape::Box { half_extents: h } => Point3::from(u.component_mul(h)),
                Shape::Sphere { radius } => Point3::from(u.normalize() * *radius),
                Shape::Cylinder {
                    radius,
                    half_length,
                } => {
                    let a: f64 = rng.random_range(0.0..std::f64::consts::TAU);
                    Point3::new(radius * a.cos(), radius * a.sin(), u.z * half_length)
                }
                Shape::ConvexMesh { polytope } => {
                    polytope.vertices[rng.random_range(0..polytope.vertices.len())]
                }
            };
            out.push(p);
        }
        out
    }
}
