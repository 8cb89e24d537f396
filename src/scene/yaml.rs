//! The project's own scene format.
//!
//! ```yaml
//! frame: world                  # frame of every pose (default: world)
//! obstacles:
//!   - id: table                 # unique, required
//!     box: {size: [1.0, 2.0, 0.05]}            # full extents x y z
//!     pose: {position: [0.5, 0, 0.2], orientation: [0, 0, 0, 1]}  # quaternion x y z w
//!   - id: ball
//!     sphere: {radius: 0.1}
//!     pose: {position: [0.3, 0.2, 0.6]}       # orientation defaults to identity
//!   - id: post
//!     cylinder: {radius: 0.05, length: 0.8}   # about the local z axis, centred
//!     pose: {position: [0, 0, 0.4], rpy: [0, 1.5708, 0]}  # roll pitch yaw (URDF convention)
//!   - id: rock
//!     mesh: {file: meshes/rock.stl, scale: [1, 1, 1]}  # relative to the scene file's folder
//!   - id: bin                   # a concave mesh split into convex parts: bin, bin/1, ...
//!     mesh: {file: meshes/bin.stl, convex_parts: 16, resolution: 64}
//!   - id: wedge
//!     convex: {points: [[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1]]}
//! attached:                     # objects the robot carries (see `robot::AttachedObject`)
//!   - id: part                  # unique among obstacles and attached objects
//!     link: tool0               # the link that holds it, required
//!     touch_links: [flange_link]  # links it may touch besides `link` (default none)
//!     box: {size: [0.04, 0.04, 0.3]}
//!     pose: {position: [0, 0, 0.15]}  # in the frame of `link`
//! allowed_collisions:           # names that may touch (see `service::PlanningService::allow_collisions`)
//!   - {a: base_link, b: table}  # a link and an obstacle
//!   - {a: upper_arm_link, b: forearm_link, allowed: false}  # a pair checked again
//! ```
//!
//! Each obstacle has exactly one shape key (`box`, `sphere`, `cylinder`, `mesh`, `convex`);
//! meshes and point lists are replaced by their convex hull, or a mesh with `convex_parts`
//! above 1 by at most that many convex parts covering its surface
//! ([`crate::robot::decompose`]; STL and OBJ), obstacles `id`, `id/1`, `id/2`, ... with
//! the same pose. `pose` is optional (identity);
//! it may give `orientation` (normalised on load) or `rpy`, not both. Unknown keys are errors.
//! [`Scene::to_yaml_string`] writes meshes as `convex` point lists (the hull vertices).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use nalgebra::{Isometry3, Point3, Quaternion, Translation3, UnitQuaternion, Vector3};
use serde::{Deserialize, Serialize};

use super::{Obstacle, Scene, SceneError, Shape};
use crate::robot::decompose::Decomposition;
use crate::robot::geometry::Polytope;
use crate::robot::mesh::{load_mesh_points, load_mesh_triangles};
use crate::robot::AttachedObject;

/// Name used in error messages for scenes given as text.
const STRING_SOURCE: &str = "<string>";

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawDoc {
    #[serde(default = "default_frame")]
    frame: String,
    #[serde(default)]
    obstacles: Vec<RawObstacle>,
    #[serde(default)]
    attached: Vec<RawAttached>,
    #[serde(default)]
    allowed_collisions: Vec<RawAllowed>,
}

#[derive(Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
struct RawAllowed {
    a: String,
    b: String,
    #[serde(default = "yes", skip_serializing_if = "is_true")]
    allowed: bool,
}

fn yes() -> bool {
    true
}

fn is_true(b: &bool) -> bool {
    *b
}

#[derive(Deserialize)]
struct RawAttached {
    link: Option<String>,
    #[serde(default)]
    touch_links: Vec<String>,
    #[serde(flatten)]
    body: RawObstacle,
}

fn default_frame() -> String {
    "world".to_string()
}

#[derive(Deserialize)]
struct RawObstacle {
    id: Option<String>,
    pose: Option<serde_yaml::Value>,
    #[serde(flatten)]
    shape: BTreeMap<String, serde_yaml::Value>,
}

#[derive(Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
struct BoxSpec {
    size: [f64; 3],
}

#[derive(Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
struct SphereSpec {
    radius: f64,
}

#[derive(Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
struct CylinderSpec {
    radius: f64,
    length: f64,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct MeshSpec {
    file: PathBuf,
    #[serde(default = "unit_scale")]
    scale: [f64; 3],
    /// The most convex parts (absent or 1: the convex hull).
    #[serde(default)]
    convex_parts: Option<u32>,
    /// Voxels along the mesh's longest side when split into convex parts.
    #[serde(default)]
    resolution: Option<u32>,
}

fn unit_scale() -> [f64; 3] {
    [1.0, 1.0, 1.0]
}

#[derive(Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
struct ConvexSpec {
    points: Vec<[f64; 3]>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPose {
    #[serde(default)]
    position: [f64; 3],
    orientation: Option<[f64; 4]>,
    rpy: Option<[f64; 3]>,
}

#[derive(Serialize)]
struct OutDoc {
    frame: String,
    obstacles: Vec<OutObstacle>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    attached: Vec<OutAttached>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    allowed_collisions: Vec<RawAllowed>,
}

#[derive(Serialize)]
struct OutAttached {
    link: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    touch_links: Vec<String>,
    #[serde(flatten)]
    body: OutObstacle,
}

#[derive(Serialize)]
struct OutObstacle {
    id: String,
    #[serde(rename = "box", skip_serializing_if = "Option::is_none")]
    box_: Option<BoxSpec>,
    #[serde(skip_serializing_if = "Option::is_none")]
    sphere: Option<SphereSpec>,
    #[serde(skip_serializing_if = "Option::is_none")]
    cylinder: Option<CylinderSpec>,
    #[serde(skip_serializing_if = "Option::is_none")]
    convex: Option<ConvexSpec>,
    pose: OutPose,
}

#[derive(Serialize)]
struct OutPose {
    position: [f64; 3],
    orientation: [f64; 4],
}

/// Builds a unit quaternion from `[x, y, z, w]`, normalising it; errors when it is not
/// finite or has (near) zero length.
pub(crate) fn quaternion_xyzw(q: [f64; 4]) -> Result<UnitQuaternion<f64>, String> {
    let [x, y, z, w] = q;
    let quat = Quaternion::new(w, x, y, z);
    let n = quat.norm();
    if !n.is_finite() || n < 1e-6 {
        return Err(format!(
            "orientation [{x}, {y}, {z}, {w}] is not a normalisable quaternion"
        ));
    }
    Ok(UnitQuaternion::from_quaternion(quat))
}

pub(crate) fn finite3(what: &str, v: [f64; 3]) -> Result<Vector3<f64>, String> {
    if v.iter().all(|c| c.is_finite()) {
        Ok(Vector3::new(v[0], v[1], v[2]))
    } else {
        Err(format!("{what} {v:?} is not finite"))
    }
}

fn parse_pose(value: serde_yaml::Value) -> Result<Isometry3<f64>, String> {
    let raw: RawPose = serde_yaml::from_value(value).map_err(|e| format!("pose: {e}"))?;
    let position = finite3("position", raw.position)?;
    let rotation = match (raw.orientation, raw.rpy) {
        (Some(_), Some(_)) => return Err("pose gives both orientation and rpy".to_string()),
        (Some(q), None) => quaternion_xyzw(q)?,
        (None, Some(rpy)) => {
            let r = finite3("rpy", rpy)?;
            UnitQuaternion::from_euler_angles(r.x, r.y, r.z)
        }
        (None, None) => UnitQuaternion::identity(),
    };
    Ok(Isometry3::from_parts(
        Translation3::from(position),
        rotation,
    ))
}

fn spec<T: serde::de::DeserializeOwned>(key: &str, value: serde_yaml::Value) -> Result<T, String> {
    serde_yaml::from_value(value).map_err(|e| format!("{key}: {e}"))
}

/// One obstacle (or attached object) of a scene file: its id, shape and pose. `label` names
/// it in errors.
///
/// A mesh split into convex parts (`convex_parts` above 1) gives the first part as the
/// obstacle's shape and the others after it, in order.
fn parse_item(
    raw: RawObstacle,
    label: &str,
    base_dir: &Path,
    source: &Path,
) -> Result<(Obstacle, Vec<Shape>), SceneError> {
    let format_err = |reason: String| SceneError::Format {
        path: source.to_path_buf(),
        obstacle: label.to_string(),
        reason,
    };
    let id = match raw.id {
        Some(id) if !id.is_empty() => id,
        _ => return Err(format_err("missing or empty id".to_string())),
    };
    let pose = match raw.pose {
        Some(v) => parse_pose(v).map_err(format_err)?,
        None => Isometry3::identity(),
    };
    let mut entries = raw.shape.into_iter();
    let (key, value) = entries.next().ok_or_else(|| {
        format_err("no shape (expected one of box, sphere, cylinder, mesh, convex)".into())
    })?;
    if let Some((second, _)) = entries.next() {
        return Err(format_err(format!(
            "more than one shape key ('{key}' and '{second}')"
        )));
    }
    let mut more = Vec::new();
    let shape = match key.as_str() {
        "box" => {
            let s: BoxSpec = spec(&key, value).map_err(format_err)?;
            Shape::Box {
                half_extents: finite3("box size", s.size).map_err(format_err)? / 2.0,
            }
        }
        "sphere" => {
            let s: SphereSpec = spec(&key, value).map_err(format_err)?;
            Shape::Sphere { radius: s.radius }
        }
        "cylinder" => {
            let s: CylinderSpec = spec(&key, value).map_err(format_err)?;
            Shape::Cylinder {
                radius: s.radius,
                half_length: s.length / 2.0,
            }
        }
        "mesh" => {
            let s: MeshSpec = spec(&key, value).map_err(format_err)?;
            let file = base_dir.join(&s.file);
            let scale = finite3("mesh scale", s.scale).map_err(format_err)?;
            let geometry_err = |e| SceneError::Geometry {
                path: source.to_path_buf(),
                obstacle: label.to_string(),
                source: e,
            };
            let how = Decomposition {
                max_parts: s.convex_parts.unwrap_or(1),
                resolution: s.resolution.unwrap_or(Decomposition::default().resolution),
            };
            how.validate().map_err(geometry_err)?;
            // The triangles are read only where the mesh is split.
            let (points, triangles) = if how.max_parts > 1 {
                load_mesh_triangles(&file, scale).map_err(geometry_err)?
            } else {
                (
                    load_mesh_points(&file, scale).map_err(geometry_err)?,
                    Vec::new(),
                )
            };
            let mut parts = super::mesh_shapes(&points, &triangles, &how)
                .map_err(geometry_err)?
                .into_iter();
            let first = parts
                .next()
                .ok_or_else(|| format_err("the mesh gave no convex part".into()))?;
            more.extend(parts);
            first
        }
        "convex" => {
            let s: ConvexSpec = spec(&key, value).map_err(format_err)?;
            let points: Vec<Point3<f64>> = s
                .points
                .iter()
                .map(|p| Point3::new(p[0], p[1], p[2]))
                .collect();
            Shape::ConvexMesh {
                polytope: Polytope::from_points(&points).map_err(|e| SceneError::Geometry {
                    path: source.to_path_buf(),
                    obstacle: label.to_string(),
                    source: e,
                })?,
            }
        }
        other => {
            return Err(format_err(format!(
                "unknown key '{other}' (expected pose and one of box, sphere, cylinder, \
                 mesh, convex)"
            )))
        }
    };
    Ok((Obstacle { id, shape, pose }, more))
}

/// Parses the project's scene format. `base_dir` resolves relative mesh paths; `source`
/// names the text in error messages.
pub(crate) fn parse(text: &str, base_dir: &Path, source: &Path) -> Result<Scene, SceneError> {
    let doc: RawDoc = serde_yaml::from_str(text).map_err(|e| SceneError::Yaml {
        path: source.to_path_buf(),
        source: e,
    })?;
    let mut scene = Scene::new(doc.frame);
    let label = |index: usize, id: &Option<String>, what: &str| match id {
        Some(id) => format!("{what}#{index} '{id}'"),
        None => format!("{what}#{index}"),
    };
    for (index, raw) in doc.obstacles.into_iter().enumerate() {
        let label = label(index, &raw.id, "");
        let (obstacle, more) = parse_item(raw, &label, base_dir, source)?;
        for o in super::with_parts(obstacle, more) {
            scene.add(o).map_err(|e| SceneError::Format {
                path: source.to_path_buf(),
                obstacle: label.clone(),
                reason: e.to_string(),
            })?;
        }
    }
    for (index, raw) in doc.attached.into_iter().enumerate() {
        let label = label(index, &raw.body.id, "attached ");
        let format_err = |reason: String| SceneError::Format {
            path: source.to_path_buf(),
            obstacle: label.clone(),
            reason,
        };
        let link = match raw.link {
            Some(l) if !l.is_empty() => l,
            _ => {
                return Err(format_err(
                    "missing or empty link (the link that holds it)".into(),
                ))
            }
        };
        let (o, more) = parse_item(raw.body, &label, base_dir, source)?;
        if !more.is_empty() {
            return Err(format_err(
                "convex_parts splits obstacles only: an attached object is one convex body".into(),
            ));
        }
        scene
            .attach(AttachedObject {
                id: o.id,
                link,
                shape: o.shape,
                pose: o.pose,
                touch_links: raw.touch_links,
            })
            .map_err(|e| format_err(e.to_string()))?;
    }
    let mut allowed = Vec::with_capacity(doc.allowed_collisions.len());
    for (index, e) in doc.allowed_collisions.into_iter().enumerate() {
        if e.a.is_empty() || e.b.is_empty() {
            return Err(SceneError::Format {
                path: source.to_path_buf(),
                obstacle: format!("allowed_collisions #{index}"),
                reason: "a and b must both name something".into(),
            });
        }
        allowed.push(super::AllowedCollision {
            a: e.a,
            b: e.b,
            allowed: e.allowed,
        });
    }
    scene.set_allowed_collisions(allowed);
    Ok(scene)
}

/// The serialised form of one obstacle (or attached object body).
fn out_obstacle(o: &Obstacle) -> OutObstacle {
    let mut out = OutObstacle {
        id: o.id.clone(),
        box_: None,
        sphere: None,
        cylinder: None,
        convex: None,
        pose: OutPose {
            position: o.pose.translation.vector.into(),
            orientation: {
                let q = o.pose.rotation.quaternion();
                [q.i, q.j, q.k, q.w]
            },
        },
    };
    match &o.shape {
        Shape::Box { half_extents } => {
            out.box_ = Some(BoxSpec {
                size: (half_extents * 2.0).into(),
            })
        }
        Shape::Sphere { radius } => out.sphere = Some(SphereSpec { radius: *radius }),
        Shape::Cylinder {
            radius,
            half_length,
        } => {
            out.cylinder = Some(CylinderSpec {
                radius: *radius,
                length: half_length * 2.0,
            })
        }
        Shape::ConvexMesh { polytope } => {
            out.convex = Some(ConvexSpec {
                points: polytope.vertices.iter().map(|v| v.coords.into()).collect(),
            })
        }
    }
    out
}

impl Scene {
    /// Parses the project's scene format (see the [module documentation](self)); relative
    /// mesh paths are resolved against `base_dir`.
    pub fn from_yaml_str(text: &str, base_dir: &Path) -> Result<Scene, SceneError> {
        parse(text, base_dir, Path::new(STRING_SOURCE))
    }

    /// Reads a scene file in the project's format; meshes resolve relative to its folder.
    pub fn from_yaml_file(path: &Path) -> Result<Scene, SceneError> {
        let text = std::fs::read_to_string(path).map_err(|source| SceneError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        parse(&text, path.parent().unwrap_or(Path::new(".")), path)
    }

    /// Writes the scene in the project's format, obstacles in slot order. Convex meshes are
    /// written as `convex` point lists. Numbers are written so that they read back exactly.
    pub fn to_yaml_string(&self) -> String {
        let obstacles = self.iter().map(out_obstacle).collect();
        let attached = self
            .attached()
            .iter()
            .map(|a| OutAttached {
                link: a.link.clone(),
                touch_links: a.touch_links.clone(),
                body: out_obstacle(&Obstacle {
                    id: a.id.clone(),
                    shape: a.shape.clone(),
                    pose: a.pose,
                }),
            })
            .collect();
        let allowed_collisions = self
            .allowed_collisions()
            .iter()
            .map(|e| RawAllowed {
                a: e.a.clone(),
                b: e.b.clone(),
                allowed: e.allowed,
            })
            .collect();
        let doc = OutDoc {
            frame: self.frame().to_string(),
            obstacles,
            attached,
            allowed_collisions,
        };
        // Plain data structs of strings and floats always serialise.
        serde_yaml::to_string(&doc).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const EXAMPLE: &str = "
frame: world
obstacles:
  - id: table
    box: {size: [1.0, 2.0, 0.05]}
    pose: {position: [0.5, 0, 0.2], orientation: [0, 0, 0, 2]}
  - id: ball
    sphere: {radius: 0.1}
    pose: {position: [0.3, 0.2, 0.6]}
  - id: post
    cylinder: {radius: 0.05, length: 0.8}
    pose: {position: [0, 0, 0.4], rpy: [0, 1.5707963267948966, 0]}
  - id: wedge
    convex: {points: [[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1], [0.1, 0.1, 0.1]]}
";

    #[test]
    fn parses_every_shape() {
        let s = Scene::from_yaml_str(EXAMPLE, Path::new(".")).unwrap();
        assert_eq!(s.frame(), "world");
        assert_eq!(s.len(), 4);
        let table = s.get("table").unwrap();
        assert_eq!(
            table.shape,
            Shape::Box {
                half_extents: Vector3::new(0.5, 1.0, 0.025)
            }
        );
        assert_eq!(table.pose.translation.vector, Vector3::new(0.5, 0.0, 0.2));
        assert_eq!(table.pose.rotation, UnitQuaternion::identity());
        let post = s.get("post").unwrap();
        assert_eq!(
            post.shape,
            Shape::Cylinder {
                radius: 0.05,
                half_length: 0.4
            }
        );
        // Pitch by 90 degrees turns the cylinder axis (z) onto x.
        let axis = post.pose.rotation * Vector3::z();
        assert!((axis - Vector3::new(1.0, 0.0, 0.0)).norm() < 1e-12);
        match &s.get("wedge").unwrap().shape {
            Shape::ConvexMesh { polytope } => assert_eq!(polytope.vertices.len(), 4),
            other => panic!("wedge is {other:?}"),
        }
        assert_eq!(s.slot_of("ball"), Some(1));
    }

    #[test]
    fn round_trips_through_text() {
        let s = Scene::from_yaml_str(EXAMPLE, Path::new(".")).unwrap();
        let text = s.to_yaml_string();
        let back = Scene::from_yaml_str(&text, Path::new(".")).unwrap();
        assert_eq!(back.frame(), s.frame());
        let a: Vec<_> = s.iter().collect();
        let b: Vec<_> = back.iter().collect();
        assert_eq!(a.len(), b.len());
        for (x, y) in a.iter().zip(&b) {
            assert_eq!(x.id, y.id);
            assert!((x.pose.translation.vector - y.pose.translation.vector).norm() < 1e-15);
            assert!(x.pose.rotation.angle_to(&y.pose.rotation) < 1e-7);
            match (&x.shape, &y.shape) {
                (Shape::ConvexMesh { polytope: p }, Shape::ConvexMesh { polytope: q }) => {
                    let mut pv = p.vertices.clone();
                    let mut qv = q.vertices.clone();
                    let key = |v: &Point3<f64>| (v.x, v.y, v.z);
                    pv.sort_by(|m, n| key(m).partial_cmp(&key(n)).unwrap());
                    qv.sort_by(|m, n| key(m).partial_cmp(&key(n)).unwrap());
                    assert_eq!(pv, qv);
                }
                (p, q) => assert_eq!(p, q),
            }
        }
    }

    #[test]
    fn mesh_paths_resolve_against_the_scene_folder() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("meshes")).unwrap();
        std::fs::write(
            dir.path().join("meshes/t.obj"),
            "v 0 0 0\nv 1 0 0\nv 0 1 0\nv 0 0 1\nf 1 2 3\nf 1 2 4\n",
        )
        .unwrap();
        let scene_path = dir.path().join("scene.yaml");
        std::fs::write(
            &scene_path,
            "obstacles:\n  - id: rock\n    mesh: {file: meshes/t.obj, scale: [2, 2, 2]}\n",
        )
        .unwrap();
        let s = Scene::from_yaml_file(&scene_path).unwrap();
        let (_, hi) = s.get("rock").unwrap().aabb();
        assert_eq!(hi, Point3::new(2.0, 2.0, 2.0));
        // The generic entry point picks the same parser.
        let t = super::super::load_scene(&scene_path).unwrap();
        assert_eq!(t.get("rock"), s.get("rock"));

        std::fs::write(
            &scene_path,
            "obstacles:\n  - id: rock\n    mesh: {file: meshes/missing.stl}\n",
        )
        .unwrap();
        let e = Scene::from_yaml_file(&scene_path).unwrap_err().to_string();
        assert!(
            e.contains("scene.yaml") && e.contains("'rock'") && e.contains("missing.stl"),
            "{e}"
        );
    }

    fn err(text: &str) -> String {
        Scene::from_yaml_str(text, Path::new("."))
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn errors_name_the_obstacle_and_the_problem() {
        let e = err("obstacles:\n  - id: c\n    cone: {radius: 1}\n");
        assert!(
            e.contains("#0 'c'") && e.contains("unknown key 'cone'"),
            "{e}"
        );
        let e = err(
            "obstacles:\n  - id: a\n    sphere: {radius: 1}\n  - id: b\n    box: {size: [1, 2]}\n",
        );
        assert!(e.contains("#1 'b'") && e.contains("box"), "{e}");
        let e = err("obstacles:\n  - id: a\n    sphere: {radius: -1}\n");
        assert!(e.contains("'a'") && e.contains("radius"), "{e}");
        let e = err("obstacles:\n  - sphere: {radius: 1}\n");
        assert!(e.contains("#0") && e.contains("id"), "{e}");
        let e = err("obstacles:\n  - id: a\n    sphere: {radius: 1}\n    box: {size: [1, 1, 1]}\n");
        assert!(e.contains("more than one shape"), "{e}");
        let e = err(
            "obstacles:\n  - id: a\n    sphere: {radius: 1}\n  - id: a\n    sphere: {radius: 1}\n",
        );
        assert!(e.contains("#1 'a'") && e.contains("already exists"), "{e}");
        let e = err("obstacles:\n  - id: a\n    sphere: {radius: 1}\n    pose: {orientation: [0, 0, 0, 0]}\n");
        assert!(e.contains("quaternion"), "{e}");
        let e = err("obstacles:\n  - id: a\n    sphere: {radius: 1}\n    pose: {rpy: [0, 0, 0], orientation: [0, 0, 0, 1]}\n");
        assert!(e.contains("both"), "{e}");
        let e = err("obstacles:\n  - id: a\n    convex: {points: [[0, 0, 0], [1, 0, 0], [0, 1, 0], [1, 1, 0]]}\n");
        assert!(e.contains("'a'") && e.contains("coplanar"), "{e}");
        // Syntax and structure errors keep serde_yaml's line numbers.
        let e = err("frame: world\nobstacles:\n  - id: a\n    sphere: {radius: 1\n");
        assert!(e.contains("<string>") && e.contains("line"), "{e}");
        let e = err("frame: world\ncolour: red\n");
        assert!(e.contains("colour") && e.contains("line 2"), "{e}");
    }

    #[test]
    fn attached_objects_read_and_write_back() {
        let text = "
frame: world
obstacles:
  - id: table
    box: {size: [1, 1, 0.1]}
attached:
  - id: part
    link: panda_hand
    touch_links: [panda_leftfinger, panda_rightfinger]
    cylinder: {radius: 0.02, length: 0.2}
    pose: {position: [0, 0, 0.1]}
  - id: tag
    link: panda_link7
    sphere: {radius: 0.01}
";
        let s = Scene::from_yaml_str(text, Path::new(".")).unwrap();
        assert_eq!(s.len(), 1);
        let a = s.attached();
        assert_eq!(a.len(), 2);
        assert_eq!(a[0].id, "part");
        assert_eq!(a[0].link, "panda_hand");
        assert_eq!(a[0].touch_links, ["panda_leftfinger", "panda_rightfinger"]);
        assert_eq!(
            a[0].shape,
            Shape::Cylinder {
                radius: 0.02,
                half_length: 0.1
            }
        );
        assert_eq!(a[0].pose.translation.vector.z, 0.1);
        assert!(a[1].touch_links.is_empty());
        let back = Scene::from_yaml_str(&s.to_yaml_string(), Path::new(".")).unwrap();
        assert_eq!(back.attached(), s.attached());
        // Without attached objects the written file has no `attached` key.
        let plain = Scene::from_yaml_str("obstacles: []\n", Path::new(".")).unwrap();
        assert!(!plain.to_yaml_string().contains("attached"));
    }

    #[test]
    fn allowed_collisions_read_and_write_back() {
        let text = "
obstacles:
  - id: table
    box: {size: [1, 1, 0.1]}
allowed_collisions:
  - {a: base_link, b: table}
  - {a: upper_arm_link, b: forearm_link, allowed: false}
";
        let s = Scene::from_yaml_str(text, Path::new(".")).unwrap();
        let entry = |a: &str, b: &str, allowed| super::super::AllowedCollision {
            a: a.into(),
            b: b.into(),
            allowed,
        };
        assert_eq!(
            s.allowed_collisions(),
            [
                entry("base_link", "table", true),
                entry("upper_arm_link", "forearm_link", false)
            ]
        );
        let written = s.to_yaml_string();
        let back = Scene::from_yaml_str(&written, Path::new(".")).unwrap();
        assert_eq!(back.allowed_collisions(), s.allowed_collisions());
        // `allowed: true` is the default and not written; no entries, no key.
        assert_eq!(written.matches("allowed: false").count(), 1, "{written}");
        assert!(!written.contains("allowed: true"), "{written}");
        let plain = Scene::from_yaml_str("obstacles: []\n", Path::new(".")).unwrap();
        assert!(!plain.to_yaml_string().contains("allowed_collisions"));
        // Bad entries are named.
        let err = |t: &str| {
            Scene::from_yaml_str(t, Path::new("."))
                .unwrap_err()
                .to_string()
        };
        let e = err("allowed_collisions:\n  - {a: base_link, b: ''}\n");
        assert!(
            e.contains("allowed_collisions #0") && e.contains("name"),
            "{e}"
        );
        let e = err("allowed_collisions:\n  - {a: base_link, b: table, when: never}\n");
        assert!(e.contains("when"), "{e}");
        let e = err("allowed_collisions:\n  - {a: base_link}\n");
        assert!(e.contains("missing field `b`"), "{e}");
    }

    #[test]
    fn bad_attached_objects_are_named() {
        let err = |t: &str| {
            Scene::from_yaml_str(t, Path::new("."))
                .unwrap_err()
                .to_string()
        };
        let e = err("attached:\n  - id: part\n    sphere: {radius: 0.1}\n");
        assert!(
            e.contains("attached #0 'part'") && e.contains("link"),
            "{e}"
        );
        let e = err("obstacles:\n  - id: part\n    sphere: {radius: 1}\nattached:\n  - id: part\n    link: l\n    sphere: {radius: 0.1}\n");
        assert!(e.contains("'part'") && e.contains("already exists"), "{e}");
        let e = err("attached:\n  - id: part\n    link: l\n    sphere: {radius: -0.1}\n");
        assert!(e.contains("'part'") && e.contains("radius"), "{e}");
        let e = err(
            "attached:\n  - id: part\n    link: l\n    touch: [a]\n    sphere: {radius: 0.1}\n",
        );
        assert!(e.contains("touch"), "{e}");
    }
}
