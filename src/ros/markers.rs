//! `visualization_msgs/Marker` ↔ [`MarkerUpdate`]: obstacles in from `~/obstacles`, the
//! scene out on `~/scene`.

use nalgebra::{Isometry3, Point3, Quaternion, Translation3, UnitQuaternion};
use r2r::geometry_msgs::msg::{Point, Pose, Quaternion as QuaternionMsg, Vector3};
use r2r::std_msgs::msg::{ColorRGBA, Header};
use r2r::visualization_msgs::msg::{Marker, MarkerArray};

use crate::planners::dynamic_roadmap::DynamicRoadmap;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use crate::robot::mesh::{load_mesh_points, load_mesh_triangles, TriangleMesh};
use crate::robot::resolve_resource;
use crate::service::roadmap::RoadmapView;
use crate::service::{marker_type, MarkerAction, MarkerKind, MarkerUpdate};

/// ROS `Marker.DELETEALL`.
const DELETEALL: i32 = 3;

/// The pose of a marker: a finite position and a quaternion, normalized. An all-zero
/// quaternion is read as the identity, as RViz does.
pub(crate) fn pose_of(name: &str, p: &Pose) -> Result<Isometry3<f64>, String> {
    let t = &p.position;
    if !(t.x.is_finite() && t.y.is_finite() && t.z.is_finite()) {
        return Err(format!(
            "marker '{name}': position ({}, {}, {}) is not finite",
            t.x, t.y, t.z
        ));
    }
    let o = &p.orientation;
    let q = Quaternion::new(o.w, o.x, o.y, o.z);
    let norm = q.norm();
    let rotation = if norm == 0.0 {
        UnitQuaternion::identity()
    } else if norm.is_finite() {
        UnitQuaternion::from_quaternion(q)
    } else {
        return Err(format!(
            "marker '{name}': orientation ({}, {}, {}, {}) is not finite",
            o.x, o.y, o.z, o.w
        ));
    };
    Ok(Isometry3::from_parts(
        Translation3::new(t.x, t.y, t.z),
        rotation,
    ))
}

/// Mesh files kept once read for `MESH_RESOURCE` markers, so that a marker republished at a
/// rate does not read and parse its file again: up to [`MeshFiles::KEPT`] of them, each
/// read again when its size or modification time changes.
#[derive(Default)]
pub struct MeshFiles {
    /// (file, size, modification time, scale bits) and what it gave, the latest use last.
    kept: Vec<(MeshKey, TriangleMesh)>,
    /// How many times a file was read.
    reads: u64,
}

/// What a kept mesh depends on.
#[derive(PartialEq)]
struct MeshKey {
    path: PathBuf,
    len: u64,
    modified: Option<SystemTime>,
    scale: [u64; 3],
}

impl MeshFiles {
    /// How many meshes are kept.
    pub const KEPT: usize = 8;

    /// How many times a mesh file has been read.
    pub fn reads(&self) -> u64 {
        self.reads
    }

    /// The mesh at `path` scaled by `scale`: its vertices and triangles where they can be
    /// read (for a split into convex parts), else its vertices only.
    fn load(&mut self, path: &Path, scale: [f64; 3]) -> Result<TriangleMesh, String> {
        let meta = std::fs::metadata(path).ok();
        let key = MeshKey {
            path: path.to_path_buf(),
            len: meta.as_ref().map_or(0, |m| m.len()),
            modified: meta.and_then(|m| m.modified().ok()),
            scale: scale.map(f64::to_bits),
        };
        if let Some(k) = self.kept.iter().position(|(have, _)| *have == key) {
            let entry = self.kept.remove(k);
            let mesh = entry.1.clone();
            self.kept.push(entry);
            return Ok(mesh);
        }
        let s = nalgebra::Vector3::new(scale[0], scale[1], scale[2]);
        self.reads += 1;
        let mesh = match load_mesh_triangles(path, s) {
            Ok(mesh) => mesh,
            Err(_) => (
                load_mesh_points(path, s).map_err(|e| e.to_string())?,
                Vec::new(),
            ),
        };
        if self.kept.len() >= Self::KEPT {
            self.kept.remove(0);
        }
        self.kept.push((key, mesh.clone()));
        Ok(mesh)
    }
}

/// Reads a marker message. `MESH_RESOURCE` markers have their mesh loaded (and scaled) here
/// through `files`, with its triangles where they can be read (for a split into convex
/// parts), else its vertices only; unknown actions and unreadable meshes are errors naming
/// the marker.
pub fn marker_update(m: &Marker, files: &mut MeshFiles) -> Result<MarkerUpdate, String> {
    let name = format!("{}/{}", m.ns, m.id);
    let action = MarkerAction::from_ros(m.action).ok_or_else(|| {
        format!(
            "marker '{name}': unknown action {} (expected 0 ADD/MODIFY, 2 DELETE, 3 DELETEALL)",
            m.action
        )
    })?;
    let scale = [m.scale.x, m.scale.y, m.scale.z];
    let adding = action == MarkerAction::Add;
    let pose = if adding {
        pose_of(&name, &m.pose)?
    } else {
        Isometry3::identity()
    };
    let kind = if adding && m.type_ == marker_type::MESH_RESOURCE {
        let path = resolve_resource(&m.mesh_resource, None, &[]).map_err(|tried| {
            format!(
                "marker '{name}': mesh '{}' not found (tried {tried:?})",
                m.mesh_resource
            )
        })?;
        let (points, triangles) = files
            .load(&path, scale)
            .map_err(|e| format!("marker '{name}': {e}"))?;
        MarkerKind::Mesh { points, triangles }
    } else {
        let points: Vec<Point3<f64>> = m
            .points
            .iter()
            .map(|p| Point3::new(p.x, p.y, p.z))
            .collect();
        MarkerKind::from_ros(m.type_, &points, scale)
    };
    Ok(MarkerUpdate {
        ns: m.ns.clone(),
        id: m.id,
        action,
        kind,
        frame_id: m.header.frame_id.clone(),
        pose,
        scale,
    })
}

pub(crate) fn pose_msg(pose: &Isometry3<f64>) -> Pose {
    let t = &pose.translation.vector;
    let q = pose.rotation.quaternion();
    Pose {
        position: Point {
            x: t.x,
            y: t.y,
            z: t.z,
        },
        orientation: QuaternionMsg {
            x: q.i,
            y: q.j,
            z: q.k,
            w: q.w,
        },
    }
}

/// The marker message drawing one obstacle marker (grey, half transparent).
pub fn marker_msg(u: &MarkerUpdate) -> Marker {
    let points = match &u.kind {
        MarkerKind::Mesh { points, triangles } if !triangles.is_empty() => triangles
            .iter()
            .flatten()
            .filter_map(|&i| points.get(i as usize))
            .map(|p| Point {
                x: p.x,
                y: p.y,
                z: p.z,
            })
            .collect(),
        MarkerKind::Mesh { points, .. } | MarkerKind::TriangleList(points) => points
            .iter()
            .map(|p| Point {
                x: p.x,
                y: p.y,
                z: p.z,
            })
            .collect(),
        _ => Vec::new(),
    };
    Marker {
        header: Header {
            frame_id: u.frame_id.clone(),
            ..Default::default()
        },
        ns: u.ns.clone(),
        id: u.id,
        // A mesh is drawn by its triangles.
        type_: match u.kind {
            MarkerKind::Mesh { .. } => marker_type::TRIANGLE_LIST,
            _ => u.kind.ros_type(),
        },
        action: 0,
        pose: pose_msg(&u.pose),
        scale: Vector3 {
            x: u.scale[0],
            y: u.scale[1],
            z: u.scale[2],
        },
        color: ColorRGBA {
            r: 0.6,
            g: 0.6,
            b: 0.65,
            a: 0.6,
        },
        points,
        ..Default::default()
    }
}

/// The marker message drawing an attached object: in the holding link's frame and locked to
/// it (a viewer moves it with the link's transform), orange.
pub fn attached_msg(u: &MarkerUpdate) -> Marker {
    Marker {
        frame_locked: true,
        color: ColorRGBA {
            r: 0.95,
            g: 0.55,
            b: 0.1,
            a: 0.8,
        },
        ..marker_msg(u)
    }
}

/// The `~/scene` message: a DELETEALL (so removed obstacles disappear) and then one marker
/// per obstacle.
pub fn scene_array(markers: &[MarkerUpdate], frame_id: &str) -> MarkerArray {
    let mut out = Vec::with_capacity(markers.len() + 1);
    out.push(Marker {
        header: Header {
            frame_id: frame_id.to_string(),
            ..Default::default()
        },
        action: DELETEALL,
        ..Default::default()
    });
    out.extend(markers.iter().map(marker_msg));
    MarkerArray { markers: out }
}

/// ROS `Marker.LINE_STRIP`, `LINE_LIST` and `POINTS`.
const LINE_STRIP: i32 = 4;
const LINE_LIST: i32 = 5;
const POINTS: i32 = 8;

fn point_msg(p: &Point3<f64>) -> Point {
    Point {
        x: p.x,
        y: p.y,
        z: p.z,
    }
}

fn color(c: [f32; 4]) -> ColorRGBA {
    ColorRGBA {
        r: c[0],
        g: c[1],
        b: c[2],
        a: c[3],
    }
}

/// A marker of `type_` in namespace `ns` with the identity pose.
fn drawing(frame_id: &str, ns: &str, type_: i32, width: f64) -> Marker {
    Marker {
        header: Header {
            frame_id: frame_id.to_string(),
            ..Default::default()
        },
        ns: ns.into(),
        id: 0,
        type_,
        action: 0,
        pose: pose_msg(&Isometry3::identity()),
        scale: Vector3 {
            x: width,
            y: width,
            z: width,
        },
        ..Default::default()
    }
}

/// The `~/roadmap` message: a DELETEALL, then the roadmap vertices (`roadmap_vertices`,
/// points), its edges coloured by label (`roadmap_edges`, one line list: valid green,
/// invalid red, unknown grey) and the last planned path (`solution_path`, a thick blue
/// line strip), all drawn through the end effector's position.
pub fn roadmap_array(view: &RoadmapView, frame_id: &str) -> MarkerArray {
    let mut out = vec![Marker {
        header: Header {
            frame_id: frame_id.to_string(),
            ..Default::default()
        },
        action: DELETEALL,
        ..Default::default()
    }];
    if !view.vertices.is_empty() {
        let mut m = drawing(frame_id, "roadmap_vertices", POINTS, 0.01);
        m.color = color([0.9, 0.9, 0.9, 0.8]);
        m.points = view.vertices.iter().map(point_msg).collect();
        out.push(m);
    }
    if !view.edges.is_empty() {
        let mut m = drawing(frame_id, "roadmap_edges", LINE_LIST, 0.002);
        m.color = color([1.0, 1.0, 1.0, 1.0]);
        for &(a, b, label) in &view.edges {
            let (Some(pa), Some(pb)) = (view.vertices.get(a), view.vertices.get(b)) else {
                continue;
            };
            let c = color(DynamicRoadmap::label_color(label));
            m.points.push(point_msg(pa));
            m.points.push(point_msg(pb));
            m.colors.push(c.clone());
            m.colors.push(c);
        }
        out.push(m);
    }
    if view.path.len() >= 2 {
        let mut m = drawing(frame_id, "solution_path", LINE_STRIP, 0.01);
        m.color = color([0.1, 0.4, 1.0, 1.0]);
        m.points = view.path.iter().map(point_msg).collect();
        out.push(m);
    }
    MarkerArray { markers: out }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cube_marker_reads_and_writes_back() {
        let m = Marker {
            header: Header {
                frame_id: "world".into(),
                ..Default::default()
            },
            ns: "box".into(),
            id: 4,
            type_: marker_type::CUBE,
            action: 0,
            pose: Pose {
                position: Point {
                    x: 1.0,
                    y: 2.0,
                    z: 3.0,
                },
                orientation: QuaternionMsg::default(),
            },
            scale: Vector3 {
                x: 0.1,
                y: 0.2,
                z: 0.3,
            },
            ..Default::default()
        };
        let mut files = MeshFiles::default();
        let u = marker_update(&m, &mut files).expect("cube");
        assert_eq!(u.kind, MarkerKind::Cube);
        assert_eq!(u.obstacle_id(), "box/4");
        let back = marker_msg(&u);
        assert_eq!(back.type_, marker_type::CUBE);
        assert_eq!(back.pose.position.y, 2.0);
        assert_eq!(back.pose.orientation.w, 1.0);
        let mut bad = m.clone();
        bad.action = 7;
        assert!(marker_update(&bad, &mut files)
            .unwrap_err()
            .contains("box/4"));
    }

    /// A MESH_RESOURCE marker's file is read once while it is unchanged, again when it
    /// changes or is asked for at another scale; its triangles come with it.
    #[test]
    fn mesh_files_are_read_once_while_unchanged() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tetra.stl");
        let tetra = |top: f64| {
            let p = [
                [0.0, 0.0, 0.0],
                [1.0, 0.0, 0.0],
                [0.0, 1.0, 0.0],
                [0.0, 0.0, top],
            ];
            let mut out = String::from("solid t\n");
            for [a, b, c] in [[0, 2, 1], [0, 1, 3], [1, 2, 3], [2, 0, 3]] {
                out.push_str("facet normal 0 0 0\nouter loop\n");
                for i in [a, b, c] {
                    let [x, y, z]: [f64; 3] = p[i];
                    out.push_str(&format!("vertex {x} {y} {z}\n"));
                }
                out.push_str("endloop\nendfacet\n");
            }
            out + "endsolid t\n"
        };
        std::fs::write(&path, tetra(1.0)).unwrap();
        let marker = |scale: f64| Marker {
            ns: "mesh".into(),
            type_: marker_type::MESH_RESOURCE,
            mesh_resource: format!("file://{}", path.display()),
            pose: Pose {
                orientation: QuaternionMsg {
                    w: 1.0,
                    ..Default::default()
                },
                ..Default::default()
            },
            scale: Vector3 {
                x: scale,
                y: scale,
                z: scale,
            },
            ..Default::default()
        };
        let mut files = MeshFiles::default();
        let top = |u: &MarkerUpdate| match &u.kind {
            MarkerKind::Mesh { points, triangles } => {
                assert_eq!(triangles.len(), 4);
                points.iter().map(|p| p.z).fold(0.0, f64::max)
            }
            other => panic!("not a mesh: {other:?}"),
        };
        for _ in 0..3 {
            assert_eq!(top(&marker_update(&marker(1.0), &mut files).unwrap()), 1.0);
        }
        assert_eq!(files.reads(), 1);
        assert_eq!(top(&marker_update(&marker(2.0), &mut files).unwrap()), 2.0);
        assert_eq!(files.reads(), 2);
        // A changed file (another size) is read again.
        std::fs::write(&path, tetra(1.25)).unwrap();
        assert_eq!(top(&marker_update(&marker(1.0), &mut files).unwrap()), 1.25);
        assert_eq!(files.reads(), 3);
        std::fs::remove_file(&path).unwrap();
        let e = marker_update(&marker(1.0), &mut files).unwrap_err();
        assert!(e.contains("mesh/0") && e.contains("tetra.stl"), "{e}");
    }
}
