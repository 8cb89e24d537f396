//! Import of MoveIt `PlanningScene` messages written as YAML (as in MotionBenchMaker).
//!
//! Read: `world.collision_objects[]` with `id`, `header.frame_id`, optional `pose`,
//! `primitives[]` (`type` as a number or name: 1/box `[x, y, z]` full sizes, 2/sphere `[r]`,
//! 3/cylinder `[height, radius]`; 4/cone is unsupported) with `primitive_poses[]`, and
//! `meshes[]` (`vertices`, whose convex hull is used, or `vertices` and `triangles`
//! (`vertex_indices`) split into convex parts where
//! [`SceneOptions::mesh_parts`](super::SceneOptions::mesh_parts) allows) with `mesh_poses[]`. When the object
//! has a `pose`, primitive and mesh poses are relative to it (MoveIt semantics since the
//! field exists); otherwise they are in the header frame. Positions may be `[x, y, z]` or
//! `{x, y, z}`, orientations `[x, y, z, w]` or `{x, y, z, w}`; an all-zero quaternion
//! (an unset message field) means identity.
//!
//! An object with several shapes becomes obstacles `id`, `id/1`, `id/2`, ... (primitives
//! first, then meshes, a split mesh's parts one after another). All objects must share one header frame (no TF here), which becomes
//! the scene frame (`world` when none is given). `planes` and any `operation` other than
//! ADD are rejected.
//!
//! `robot_state.attached_collision_objects[]` (`link_name`, `object`, `touch_links`) become the
//! scene's attached objects; their poses must be in the frame of `link_name` (as MoveIt writes
//! them; an empty frame counts as that link). The rest of the robot state is ignored.
//!
//! `allowed_collision_matrix` (`entry_names`, `entry_values` as rows of booleans or of
//! `{enabled: [...]}`, `default_entry_names` with `default_entry_values`) becomes the scene's
//! matrix entries ([`Scene::matrix_collisions`]), which whoever plans
//! in the scene applies: a pair marked allowed may touch (links, or a link and a world
//! object), a name the robot and the scene do not have is left aside, as MoveIt does
//! ([`crate::collision::allowed::known_entries`]), and a pair marked not allowed stays as the
//! robot model has it (where MoveIt would check it; `~/allow_collisions` with `allowed: false`
//! checks such a pair). MotionBenchMaker's scenes carry their robot's SRDF pairs (UR5: plus a
//! `box_link` the benchmark's URDF lacks; Fetch: links it lacks), so they plan as without the
//! matrix; the benchmark itself (`gmp bench mbm`) plans with the SRDF, as its published figures
//! do.

use std::path::Path;

use nalgebra::{Isometry3, Point3, Translation3, UnitQuaternion, Vector3};
use serde::Deserialize;

use super::yaml::quaternion_xyzw;
use super::{AllowedCollision, Obstacle, Scene, SceneError, Shape};
use crate::robot::decompose::Decomposition;
use crate::robot::AttachedObject;

#[derive(Deserialize)]
struct Doc {
    #[serde(default)]
    world: Option<World>,
    #[serde(default)]
    robot_state: Option<RobotState>,
    #[serde(default)]
    allowed_collision_matrix: Option<Matrix>,
}

/// `moveit_msgs/AllowedCollisionMatrix`.
#[derive(Deserialize, Default)]
struct Matrix {
    #[serde(default)]
    entry_names: Vec<String>,
    #[serde(default)]
    entry_values: Vec<Row>,
    #[serde(default)]
    default_entry_names: Vec<String>,
    #[serde(default)]
    default_entry_values: Vec<bool>,
}

/// A row of the matrix: a plain list (as MotionBenchMaker writes it) or the message's
/// `{enabled: [...]}`.
#[derive(Deserialize)]
#[serde(untagged)]
enum Row {
    Plain(Vec<bool>),
    Entry { enabled: Vec<bool> },
}

impl Row {
    fn values(&self) -> &[bool] {
        match self {
            Row::Plain(v) | Row::Entry { enabled: v } => v,
        }
    }
}

#[derive(Deserialize, Default)]
struct RobotState {
    #[serde(default)]
    attached_collision_objects: Vec<AttachedCollisionObject>,
}

#[derive(Deserialize)]
struct AttachedCollisionObject {
    #[serde(default)]
    link_name: String,
    object: CollisionObject,
    #[serde(default)]
    touch_links: Vec<String>,
}

#[derive(Deserialize, Default)]
struct World {
    #[serde(default)]
    collision_objects: Vec<CollisionObject>,
}

#[derive(Deserialize)]
struct CollisionObject {
    #[serde(default)]
    id: String,
    #[serde(default)]
    header: Option<Header>,
    #[serde(default)]
    pose: Option<Pose>,
    #[serde(default)]
    primitives: Vec<Primitive>,
    #[serde(default)]
    primitive_poses: Vec<Pose>,
    #[serde(default)]
    meshes: Vec<Mesh>,
    #[serde(default)]
    mesh_poses: Vec<Pose>,
    #[serde(default)]
    planes: Vec<serde_yaml::Value>,
    #[serde(default)]
    operation: Option<serde_yaml::Value>,
}

#[derive(Deserialize)]
struct Header {
    #[serde(default)]
    frame_id: String,
}

#[derive(Deserialize, Clone, Copy)]
#[serde(untagged)]
enum Xyz {
    Seq([f64; 3]),
    Map {
        #[serde(default)]
        x: f64,
        #[serde(default)]
        y: f64,
        #[serde(default)]
        z: f64,
    },
}

impl Xyz {
    fn array(self) -> [f64; 3] {
        match self {
            Xyz::Seq(a) => a,
            Xyz::Map { x, y, z } => [x, y, z],
        }
    }
}

#[derive(Deserialize, Clone, Copy)]
#[serde(untagged)]
enum Xyzw {
    Seq([f64; 4]),
    Map {
        #[serde(default)]
        x: f64,
        #[serde(default)]
        y: f64,
        #[serde(default)]
        z: f64,
        #[serde(default)]
        w: f64,
    },
}

#[derive(Deserialize, Clone, Copy)]
struct Pose {
    #[serde(default)]
    position: Option<Xyz>,
    #[serde(default)]
    orientation: Option<Xyzw>,
}

#[derive(Deserialize)]
struct Primitive {
    #[serde(rename = "type")]
    kind: serde_yaml::Value,
    #[serde(default)]
    dimensions: Vec<f64>,
}

#[derive(Deserialize)]
struct Mesh {
    #[serde(default)]
    vertices: Vec<Xyz>,
    #[serde(default)]
    triangles: Vec<MeshTriangle>,
}

#[derive(Deserialize)]
struct MeshTriangle {
    #[serde(default)]
    vertex_indices: Vec<u64>,
}

/// Whether a parsed YAML document is a MoveIt planning scene (it has a `world` key).
pub(crate) fn looks_like_moveit(value: &serde_yaml::Value) -> bool {
    value.get("world").is_some()
}

fn pose_to_isometry(pose: &Pose) -> Result<Isometry3<f64>, String> {
    let p = pose.position.map(Xyz::array).unwrap_or([0.0; 3]);
    if !p.iter().all(|c| c.is_finite()) {
        return Err(format!("position {p:?} is not finite"));
    }
    let q = match pose.orientation {
        None => [0.0, 0.0, 0.0, 1.0],
        Some(Xyzw::Seq(a)) => a,
        Some(Xyzw::Map { x, y, z, w }) => [x, y, z, w],
    };
    let rotation = if q == [0.0; 4] {
        UnitQuaternion::identity()
    } else {
        quaternion_xyzw(q)?
    };
    Ok(Isometry3::from_parts(
        Translation3::from(Vector3::new(p[0], p[1], p[2])),
        rotation,
    ))
}

/// Primitive type number from a number or a (case-insensitive) name.
fn primitive_kind(value: &serde_yaml::Value) -> Result<u64, String> {
    if let Some(n) = value.as_u64() {
        return Ok(n);
    }
    match value.as_str().map(str::to_ascii_lowercase).as_deref() {
        Some("box") => Ok(1),
        Some("sphere") => Ok(2),
        Some("cylinder") => Ok(3),
        Some("cone") => Ok(4),
        _ => Err(format!("unknown primitive type {value:?}")),
    }
}

fn primitive_shape(p: &Primitive) -> Result<Shape, String> {
    let kind = primitive_kind(&p.kind)?;
    let dims = &p.dimensions;
    let need = |n: usize, name: &str| {
        if dims.len() < n {
            Err(format!("{name} needs {n} dimensions, got {}", dims.len()))
        } else {
            Ok(())
        }
    };
    match kind {
        1 => {
            need(3, "box")?;
            Ok(Shape::Box {
                half_extents: Vector3::new(dims[0], dims[1], dims[2]) / 2.0,
            })
        }
        2 => {
            need(1, "sphere")?;
            Ok(Shape::Sphere { radius: dims[0] })
        }
        3 => {
            need(2, "cylinder")?;
            Ok(Shape::Cylinder {
                radius: dims[1],
                half_length: dims[0] / 2.0,
            })
        }
        4 => Err("cone primitives are unsupported".to_string()),
        n => Err(format!("unknown primitive type {n}")),
    }
}

/// The shapes of one collision object, each with its pose (in the object's header frame),
/// named `id`, `id/1`, ... Errors name the object by `label`.
fn object_shapes(
    object: &CollisionObject,
    label: &str,
    source: &Path,
    mesh_parts: &Decomposition,
) -> Result<Vec<Obstacle>, SceneError> {
    let err = |reason: String| SceneError::Format {
        path: source.to_path_buf(),
        obstacle: label.to_string(),
        reason,
    };
    if object.id.is_empty() {
        return Err(err("missing or empty id".to_string()));
    }
    if let Some(op) = &object.operation {
        let add =
            op.as_u64() == Some(0) || op.as_str().is_some_and(|s| s.eq_ignore_ascii_case("add"));
        if !add {
            return Err(err(format!("operation {op:?} is unsupported (only ADD)")));
        }
    }
    if !object.planes.is_empty() {
        return Err(err("plane shapes are unsupported".to_string()));
    }
    if object.primitive_poses.len() < object.primitives.len() {
        return Err(err(format!(
            "{} primitives but {} primitive_poses",
            object.primitives.len(),
            object.primitive_poses.len()
        )));
    }
    if object.mesh_poses.len() < object.meshes.len() {
        return Err(err(format!(
            "{} meshes but {} mesh_poses",
            object.meshes.len(),
            object.mesh_poses.len()
        )));
    }
    let base = match &object.pose {
        Some(p) => pose_to_isometry(p).map_err(|r| err(format!("pose: {r}")))?,
        None => Isometry3::identity(),
    };
    let mut shapes: Vec<(Shape, Isometry3<f64>)> = Vec::new();
    for (k, (prim, pose)) in object
        .primitives
        .iter()
        .zip(&object.primitive_poses)
        .enumerate()
    {
        let shape = primitive_shape(prim).map_err(|r| err(format!("primitive {k}: {r}")))?;
        let local =
            pose_to_isometry(pose).map_err(|r| err(format!("primitive_poses[{k}]: {r}")))?;
        shapes.push((shape, base * local));
    }
    for (k, (mesh, pose)) in object.meshes.iter().zip(&object.mesh_poses).enumerate() {
        let points: Vec<Point3<f64>> = mesh
            .vertices
            .iter()
            .map(|v| Point3::from(v.array()))
            .collect();
        let triangles = if mesh_parts.max_parts > 1 {
            mesh_triangles(mesh, points.len()).map_err(|r| err(format!("mesh {k}: {r}")))?
        } else {
            Vec::new()
        };
        let parts = super::mesh_shapes(&points, &triangles, mesh_parts).map_err(|e| {
            SceneError::Geometry {
                path: source.to_path_buf(),
                obstacle: format!("{label} mesh {k}"),
                source: e,
            }
        })?;
        let local = pose_to_isometry(pose).map_err(|r| err(format!("mesh_poses[{k}]: {r}")))?;
        shapes.extend(parts.into_iter().map(|shape| (shape, base * local)));
    }
    Ok(shapes
        .into_iter()
        .enumerate()
        .map(|(k, (shape, pose))| Obstacle {
            id: if k == 0 {
                object.id.clone()
            } else {
                super::part_id(&object.id, k)
            },
            shape,
            pose,
        })
        .collect())
}

/// The triangles of a mesh of `count` vertices; a triangle without three indices, or with one
/// past the vertices, is an error.
fn mesh_triangles(mesh: &Mesh, count: usize) -> Result<Vec<[u32; 3]>, String> {
    mesh.triangles
        .iter()
        .enumerate()
        .map(|(k, t)| {
            let [a, b, c] = t.vertex_indices[..] else {
                return Err(format!(
                    "triangle {k} has {} vertex_indices, expected 3",
                    t.vertex_indices.len()
                ));
            };
            let mut out = [0u32; 3];
            for (slot, i) in out.iter_mut().zip([a, b, c]) {
                *slot = u32::try_from(i)
                    .ok()
                    .filter(|&i| (i as usize) < count)
                    .ok_or_else(|| format!("triangle {k} refers to vertex {i} of {count}"))?;
            }
            Ok(out)
        })
        .collect()
}

/// Parses a MoveIt planning scene; `source` names the text in error messages; meshes of world
/// objects are split as `options` say.
pub(crate) fn parse(
    text: &str,
    source: &Path,
    options: &super::SceneOptions,
) -> Result<Scene, SceneError> {
    let doc: Doc = serde_yaml::from_str(text).map_err(|e| SceneError::Yaml {
        path: source.to_path_buf(),
        source: e,
    })?;
    let objects = doc.world.unwrap_or_default().collision_objects;
    let frame = objects
        .iter()
        .filter_map(|o| o.header.as_ref())
        .map(|h| h.frame_id.as_str())
        .find(|f| !f.is_empty())
        .unwrap_or("world")
        .to_string();
    let mut scene = Scene::new(frame.clone());
    // Each object's obstacle ids (an object of several shapes is several obstacles).
    let mut object_ids: Vec<(String, Vec<String>)> = Vec::new();
    for (index, object) in objects.iter().enumerate() {
        let label = format!("#{index} '{}'", object.id);
        let err = |reason: String| SceneError::Format {
            path: source.to_path_buf(),
            obstacle: label.clone(),
            reason,
        };
        if let Some(h) = &object.header {
            if !h.frame_id.is_empty() && h.frame_id != frame {
                return Err(err(format!(
                    "frame '{}' differs from the scene frame '{frame}'",
                    h.frame_id
                )));
            }
        }
        let mut ids = Vec::new();
        for o in object_shapes(object, &label, source, &options.mesh_parts)? {
            ids.push(o.id.clone());
            scene.add(o).map_err(|e| err(e.to_string()))?;
        }
        object_ids.push((object.id.clone(), ids));
    }
    let attached = doc
        .robot_state
        .unwrap_or_default()
        .attached_collision_objects;
    for (index, a) in attached.iter().enumerate() {
        let label = format!("attached #{index} '{}'", a.object.id);
        let err = |reason: String| SceneError::Format {
            path: source.to_path_buf(),
            obstacle: label.clone(),
            reason,
        };
        if a.link_name.is_empty() {
            return Err(err("missing or empty link_name".to_string()));
        }
        // MoveIt writes an attached object's poses in the frame of the link holding it; a
        // pose in another frame would need the robot state's kinematics.
        if let Some(h) = &a.object.header {
            if !h.frame_id.is_empty() && h.frame_id != a.link_name {
                return Err(err(format!(
                    "frame '{}' is not its link '{}' (attached objects are read in the frame \
                     of the link that holds them)",
                    h.frame_id, a.link_name
                )));
            }
        }
        // A carried object's meshes stay hulls.
        for o in object_shapes(&a.object, &label, source, &Decomposition::hull())? {
            scene
                .attach(AttachedObject {
                    id: o.id,
                    link: a.link_name.clone(),
                    shape: o.shape,
                    pose: o.pose,
                    touch_links: a.touch_links.clone(),
                })
                .map_err(|e| err(e.to_string()))?;
        }
    }
    if let Some(m) = &doc.allowed_collision_matrix {
        let entries = matrix_entries(m, &object_ids).map_err(|reason| SceneError::Format {
            path: source.to_path_buf(),
            obstacle: "allowed_collision_matrix".into(),
            reason,
        })?;
        scene.set_matrix_collisions(entries);
    }
    Ok(scene)
}

/// The entries of an allowed collision matrix, pair by pair (each pair once, in the order of
/// `entry_names`): a pair allowed both ways may touch (two world objects are never checked
/// against each other, so they give none). A pair marked not allowed gives no entry: it stays
/// as the robot model has it, since the model's own allowed pairs (adjacent and rigidly joined
/// links, the SRDF's) are what its collision geometry needs (MotionBenchMaker's UR5 matrix
/// leaves adjacent links out, and its Fetch matrix marks one pair the SRDF disables, whose
/// spheres overlap in 32 of its goals). A world object's name stands for each of its obstacles
/// (`object_ids`). A name of `default_entry_names` whose value is true may touch every other
/// name of the matrix and every world object, except where the matrix has the pair.
fn matrix_entries(
    m: &Matrix,
    object_ids: &[(String, Vec<String>)],
) -> Result<Vec<AllowedCollision>, String> {
    let n = m.entry_names.len();
    if m.entry_values.len() != n {
        return Err(format!(
            "{} entry_names but {} rows of entry_values",
            n,
            m.entry_values.len()
        ));
    }
    if let Some((k, r)) = m
        .entry_values
        .iter()
        .enumerate()
        .find(|(_, r)| r.values().len() != n)
    {
        return Err(format!(
            "row {k} of entry_values has {} values, entry_names {n}",
            r.values().len()
        ));
    }
    if m.default_entry_values.len() != m.default_entry_names.len() {
        return Err(format!(
            "{} default_entry_names but {} default_entry_values",
            m.default_entry_names.len(),
            m.default_entry_values.len()
        ));
    }
    let obstacles_of = |name: &str| -> Option<&Vec<String>> {
        object_ids
            .iter()
            .find(|(id, _)| id == name)
            .map(|(_, ids)| ids)
    };
    // One name of the matrix as the names of entries: an object's obstacles, else itself.
    let expand = |name: &str| -> Vec<String> {
        obstacles_of(name)
            .cloned()
            .unwrap_or_else(|| vec![name.to_string()])
    };
    let mut out = Vec::new();
    // The entries allowing `a` and `b` to touch.
    let allow = |a: &str, b: &str, out: &mut Vec<AllowedCollision>| {
        if a == b || (obstacles_of(a).is_some() && obstacles_of(b).is_some()) {
            return;
        }
        for x in expand(a) {
            for y in expand(b) {
                out.push(AllowedCollision {
                    a: x.clone(),
                    b: y,
                    allowed: true,
                });
            }
        }
    };
    let mut listed = std::collections::BTreeSet::new();
    for i in 0..n {
        for j in i + 1..n {
            let (a, b) = (&m.entry_names[i], &m.entry_names[j]);
            if m.entry_values[i].values()[j] && m.entry_values[j].values()[i] {
                allow(a, b, &mut out);
            }
            listed.insert((a.clone(), b.clone()));
            listed.insert((b.clone(), a.clone()));
        }
    }
    let everyone: Vec<&String> = m
        .entry_names
        .iter()
        .chain(object_ids.iter().map(|(id, _)| id))
        .collect();
    for (name, _) in m
        .default_entry_names
        .iter()
        .zip(&m.default_entry_values)
        .filter(|(_, &v)| v)
    {
        for other in &everyone {
            if !listed.contains(&(name.clone(), (*other).clone())) {
                allow(name, other, &mut out);
                listed.insert((name.clone(), (*other).clone()));
                listed.insert(((*other).clone(), name.clone()));
            }
        }
    }
    Ok(out)
}

impl Scene {
    /// Parses a MoveIt `PlanningScene` YAML text (see the [module documentation](self)).
    pub fn from_moveit_yaml_str(text: &str) -> Result<Scene, SceneError> {
        parse(text, Path::new("<string>"), &super::SceneOptions::default())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    /// Extracts a robot's problems into a temporary folder with the system `tar`.
    fn extract(data: &Path, robot: &str) -> Option<tempfile::TempDir> {
        let archive = data.join(robot).join("problems.tar.bz2");
        let dir = tempfile::tempdir().ok()?;
        let ok = Command::new("tar")
            .arg("xjf")
            .arg(&archive)
            .arg("-C")
            .arg(dir.path())
            .status()
            .map(|s| s.success())
            .unwrap_or(false);
        if ok {
            Some(dir)
        } else {
            eprintln!("SKIP: cannot extract {} with tar", archive.display());
            None
        }
    }

    #[test]
    fn every_benchmark_scene_parses() {
        let Some(data) = crate::mbm::data_dir_or_skip() else {
            return;
        };
        for robot in ["panda", "ur5", "fetch"] {
            let Some(dir) = extract(&data, robot) else {
                return;
            };
            let mut count = 0;
            let problems = dir.path().join("problems");
            let mut folders: Vec<_> = std::fs::read_dir(&problems)
                .unwrap()
                .map(|e| e.unwrap().path())
                .collect();
            folders.sort();
            for folder in folders {
                for entry in std::fs::read_dir(&folder).unwrap() {
                    let path = entry.unwrap().path();
                    let name = path.file_name().unwrap().to_string_lossy().to_string();
                    if !name.starts_with("scene") {
                        continue;
                    }
                    let scene = crate::scene::load_scene(&path)
                        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
                    assert!(!scene.is_empty(), "{}", path.display());
                    count += 1;
                }
            }
            assert_eq!(count, 700, "{robot}");
        }
    }

    #[test]
    fn spot_check_box_scene() {
        let Some(data) = crate::mbm::data_dir_or_skip() else {
            return;
        };
        let Some(dir) = extract(&data, "panda") else {
            return;
        };
        let path = dir.path().join("problems/box_panda/scene0001.yaml");
        let scene = crate::scene::load_scene(&path).unwrap();
        // This file gives no header, so the scene frame defaults to `world`.
        assert_eq!(scene.frame(), "world");
        // From the file: Can1, cylinder dimensions [0.14, 0.03] (height, radius).
        let can = scene.get("Can1").unwrap();
        assert_eq!(
            can.shape,
            Shape::Cylinder {
                radius: 0.03,
                half_length: 0.07
            }
        );
        let t = can.pose.translation.vector;
        assert_eq!(
            t,
            Vector3::new(0.5408380884576693, 0.3580155146897772, -0.3762264457751537)
        );
        let q = can.pose.rotation.quaternion();
        assert!(
            (q.k - 0.07406844364750122).abs() < 1e-12 && (q.w - 0.9972531602635496).abs() < 1e-12
        );
        // base: box [0.7, 0.7, 0.04].
        assert_eq!(
            scene.get("base").unwrap().shape,
            Shape::Box {
                half_extents: Vector3::new(0.35, 0.35, 0.02)
            }
        );
    }

    const WITH_OBJECT_POSE: &str = "
world:
  collision_objects:
    - id: shelf
      header: {frame_id: base_link}
      pose:
        position: [1, 0, 0]
        orientation: [0, 0, 0.7071067811865476, 0.7071067811865476]
      primitives:
        - type: 1
          dimensions: [0.2, 0.4, 0.6]
        - {type: sphere, dimensions: [0.1]}
      primitive_poses:
        - position: [0.5, 0, 0]
          orientation: [0, 0, 0, 1]
        - position: {x: 0, y: 0, z: 1}
          orientation: {x: 0, y: 0, z: 0, w: 0}
      meshes:
        - vertices: [[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1]]
          triangles: [{vertex_indices: [0, 1, 2]}]
      mesh_poses:
        - position: [0, 0, 0]
";

    #[test]
    fn object_pose_composes_with_shape_poses() {
        let scene = Scene::from_moveit_yaml_str(WITH_OBJECT_POSE).unwrap();
        assert_eq!(scene.frame(), "base_link");
        assert_eq!(scene.len(), 3);
        // Object rotated 90 deg about z: local +x offset 0.5 becomes world +y.
        let b = scene.get("shelf").unwrap();
        assert!((b.pose.translation.vector - Vector3::new(1.0, 0.5, 0.0)).norm() < 1e-12);
        let s = scene.get("shelf/1").unwrap();
        assert_eq!(s.shape, Shape::Sphere { radius: 0.1 });
        assert!((s.pose.translation.vector - Vector3::new(1.0, 0.0, 1.0)).norm() < 1e-12);
        let m = scene.get("shelf/2").unwrap();
        assert!(matches!(m.shape, Shape::ConvexMesh { .. }));
        let (lo, _) = m.aabb();
        assert!((lo - Point3::new(0.0, 0.0, 0.0)).norm() < 1e-12);
    }

    #[test]
    fn unsupported_and_malformed_objects_are_named() {
        let cone = "world:\n  collision_objects:\n    - id: c\n      primitives: [{type: 4, dimensions: [1, 1]}]\n      primitive_poses: [{position: [0, 0, 0]}]\n";
        let e = Scene::from_moveit_yaml_str(cone).unwrap_err().to_string();
        assert!(e.contains("'c'") && e.contains("unsupported"), "{e}");
        let missing = "world:\n  collision_objects:\n    - id: m\n      primitives: [{type: box, dimensions: [1, 1, 1]}]\n";
        let e = Scene::from_moveit_yaml_str(missing)
            .unwrap_err()
            .to_string();
        assert!(e.contains("'m'") && e.contains("primitive_poses"), "{e}");
        let short = "world:\n  collision_objects:\n    - id: s\n      primitives: [{type: box, dimensions: [1, 1]}]\n      primitive_poses: [{position: [0, 0, 0]}]\n";
        let e = Scene::from_moveit_yaml_str(short).unwrap_err().to_string();
        assert!(e.contains("'s'") && e.contains("3 dimensions"), "{e}");
        let frames = "world:\n  collision_objects:\n    - id: a\n      header: {frame_id: x}\n    - id: b\n      header: {frame_id: y}\n";
        let e = Scene::from_moveit_yaml_str(frames).unwrap_err().to_string();
        assert!(e.contains("'b'") && e.contains("frame"), "{e}");
        let neg = "world:\n  collision_objects:\n    - id: n\n      primitives: [{type: 2, dimensions: [-1]}]\n      primitive_poses: [{position: [0, 0, 0]}]\n";
        let e = Scene::from_moveit_yaml_str(neg).unwrap_err().to_string();
        assert!(e.contains("'n'") && e.contains("radius"), "{e}");
    }

    #[test]
    fn attached_collision_objects_are_read_in_their_link_frame() {
        let text = "
world:
  collision_objects:
    - id: table
      primitives: [{type: box, dimensions: [1, 1, 0.1]}]
      primitive_poses: [{position: [0, 0, 0]}]
robot_state:
  attached_collision_objects:
    - link_name: panda_hand
      touch_links: [panda_leftfinger, panda_rightfinger]
      object:
        id: can
        header: {frame_id: panda_hand}
        pose: {position: [0, 0, 0.1], orientation: [0, 0, 0, 1]}
        primitives: [{type: cylinder, dimensions: [0.12, 0.03]}, {type: sphere, dimensions: [0.02]}]
        primitive_poses: [{position: [0, 0, 0]}, {position: [0, 0, 0.08]}]
";
        let scene = Scene::from_moveit_yaml_str(text).unwrap();
        assert_eq!(scene.len(), 1);
        let a = scene.attached();
        assert_eq!(a.len(), 2);
        assert_eq!((a[0].id.as_str(), a[1].id.as_str()), ("can", "can/1"));
        assert!(a
            .iter()
            .all(|o| o.link == "panda_hand" && o.touch_links.len() == 2));
        assert_eq!(
            a[0].shape,
            Shape::Cylinder {
                radius: 0.03,
                half_length: 0.06
            }
        );
        // Shape poses compose with the object pose, in the hand's frame.
        assert!((a[1].pose.translation.vector - Vector3::new(0.0, 0.0, 0.18)).norm() < 1e-12);
        let world_frame = text.replace(
            "header: {frame_id: panda_hand}",
            "header: {frame_id: world}",
        );
        let e = Scene::from_moveit_yaml_str(&world_frame)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("'can'") && e.contains("'world'") && e.contains("panda_hand"),
            "{e}"
        );
        let no_link = text.replace("link_name: panda_hand", "link_name: ''");
        let e = Scene::from_moveit_yaml_str(&no_link)
            .unwrap_err()
            .to_string();
        assert!(e.contains("link_name"), "{e}");
    }

    #[test]
    fn the_allowed_collision_matrix_becomes_entries_pair_by_pair() {
        let text = "
allowed_collision_matrix:
  entry_names: [hand, finger, shelf, arm]
  entry_values:
    - [false, true, true, false]
    - {enabled: [true, false, false, true]}
    - [true, false, false, false]
    - [false, false, false, false]
  default_entry_names: [pad]
  default_entry_values: [true]
world:
  collision_objects:
    - id: shelf
      primitives: [{type: box, dimensions: [1, 1, 1]}, {type: sphere, dimensions: [0.1]}]
      primitive_poses: [{position: [0, 0, 0]}, {position: [0, 0, 1]}]
    - id: bin
      primitives: [{type: sphere, dimensions: [0.2]}]
      primitive_poses: [{position: [2, 0, 0]}]
";
        let scene = Scene::from_moveit_yaml_str(text).unwrap();
        let got: Vec<(&str, &str, bool)> = scene
            .matrix_collisions()
            .iter()
            .map(|e| (e.a.as_str(), e.b.as_str(), e.allowed))
            .collect();
        assert_eq!(
            got,
            vec![
                ("hand", "finger", true),
                // The object stands for each of its obstacles.
                ("hand", "shelf", true),
                ("hand", "shelf/1", true),
                // Pairs not allowed, and allowed one way only, add nothing: they stay as the
                // robot model has them. The default entry: with every matrix name and every object.
                ("pad", "hand", true),
                ("pad", "finger", true),
                ("pad", "shelf", true),
                ("pad", "shelf/1", true),
                ("pad", "arm", true),
                ("pad", "bin", true),
            ]
        );
        assert!(scene.allowed_collisions().is_empty());
        let short = text.replace("    - [false, false, false, false]\n", "");
        let e = Scene::from_moveit_yaml_str(&short).unwrap_err().to_string();
        assert!(
            e.contains("allowed_collision_matrix") && e.contains("4 entry_names but 3 rows"),
            "{e}"
        );
        let ragged = text.replace("[true, false, false, false]", "[true, false]");
        let e = Scene::from_moveit_yaml_str(&ragged)
            .unwrap_err()
            .to_string();
        assert!(e.contains("row 2 of entry_values has 2 values"), "{e}");
        let defaults = text.replace("default_entry_values: [true]", "default_entry_values: []");
        let e = Scene::from_moveit_yaml_str(&defaults)
            .unwrap_err()
            .to_string();
        assert!(e.contains("1 default_entry_names but 0"), "{e}");
    }
}
