//! Concave mesh obstacles split into convex parts (`mesh: {convex_parts: N}` in a scene file):
//! the bundled arm reaches into an open bin given as an STL surface. With the convex hull
//! the tool inside the bin is in collision; with the parts it is free while the walls and
//! floor still stop the arm (a configuration through a wall is in collision), and RRT-Connect
//! plans into the bin, every motion re-checked by a fresh checker; a scene file with
//! `convex_parts` names the parts `bin`, `bin/1`, ...; bad values are named; the bin as a
//! Collada file splits into as many parts as the STL.

mod common;

use std::path::Path;
use std::time::Duration;

use gpu_motion_planner::collision::{Checker, CheckerOptions, CpuChecker, MotionBatch};
use gpu_motion_planner::planners::{plan, PlanRequest, PlannerId};
use gpu_motion_planner::robot::decompose::{convex_parts, Decomposition};
use gpu_motion_planner::robot::geometry::{Polytope, HULL_TOLERANCE};
use gpu_motion_planner::robot::mesh::load_mesh_triangles;
use gpu_motion_planner::scene::{load_scene, load_scene_with, Scene, SceneError, SceneOptions};
use nalgebra::{Point3, Vector3};

use common::bin::{bin_scene_text, bin_stl, bin_surface, ABOVE, BELOW, HALF, TOOL};
use common::bundled::{bundled, Bundled};

/// The same surface as [`bin_stl`] as a Collada file: one geometry, its triangles in one
/// `<triangles>` with only a VERTEX input, placed by a node without a transform.
fn bin_dae(half: f64, height: f64) -> String {
    let (p, quads) = bin_surface(half, height);
    let positions: Vec<String> = p.iter().map(|[x, y, z]| format!("{x} {y} {z}")).collect();
    let mut indices = Vec::new();
    for [a, b, c, d] in quads {
        for i in [a, b, c, a, c, d] {
            indices.push(i.to_string());
        }
    }
    format!(
        r##"<?xml version="1.0"?>
<COLLADA xmlns="http://www.collada.org/2005/11/COLLADASchema" version="1.4.1">
  <asset><unit meter="1"/><up_axis>Z_UP</up_axis></asset>
  <library_geometries>
    <geometry id="bin">
      <mesh>
        <source id="bin-pos">
          <float_array id="bin-arr" count="24">{}</float_array>
          <technique_common><accessor source="#bin-arr" count="8" stride="3"/></technique_common>
        </source>
        <vertices id="bin-v"><input semantic="POSITION" source="#bin-pos"/></vertices>
        <triangles count="10">
          <input semantic="VERTEX" source="#bin-v" offset="0"/>
          <p>{}</p>
        </triangles>
      </mesh>
    </geometry>
  </library_geometries>
  <library_visual_scenes>
    <visual_scene id="scene"><node id="bin"><instance_geometry url="#bin"/></node></visual_scene>
  </library_visual_scenes>
</COLLADA>
"##,
        positions.join("  "),
        indices.join(" ")
    )
}

/// A scene file in `dir` holding only the bin under the tool's place, split into at most
/// `parts` convex parts (1: the hull).
fn bin_scene(dir: &Path, parts: u32) -> Scene {
    std::fs::write(dir.join("bin.stl"), bin_stl(HALF, BELOW + ABOVE)).unwrap();
    let [x, y, z] = TOOL;
    let yaml = format!(
        "obstacles:\n  - id: bin\n    mesh: {{file: bin.stl, convex_parts: {parts}}}\n    \
         pose: {{position: [{x}, {y}, {}]}}\n",
        z - BELOW
    );
    let path = dir.join(format!("bin_{parts}.yaml"));
    std::fs::write(&path, yaml).unwrap();
    load_scene(&path).expect("the bin scene loads")
}

fn checker(b: &Bundled, scene: &Scene) -> CpuChecker {
    CpuChecker::new(
        &b.robot,
        &b.group,
        &b.base,
        scene,
        CheckerOptions::default(),
    )
    .expect("checker")
}

#[test]
fn the_arm_reaches_into_a_bin_split_into_convex_parts() {
    let b = bundled();
    let dir = tempfile::tempdir().unwrap();
    let parts = bin_scene(dir.path(), 16);
    let hull = bin_scene(dir.path(), 1);
    assert_eq!(hull.len(), 1);
    assert!(
        parts.len() >= 2 && parts.len() <= 16,
        "{} parts",
        parts.len()
    );
    let ids: Vec<&str> = parts.iter().map(|o| o.id.as_str()).collect();
    assert_eq!(ids[0], "bin");
    for (k, id) in ids.iter().enumerate().skip(1) {
        assert_eq!(*id, format!("bin/{k}"));
    }

    let in_parts = checker(&b, &parts);
    let in_hull = checker(&b, &hull);
    let empty = checker(&b, &Scene::new("world"));
    let goals = b.down_at(TOOL, &in_parts);
    assert!(
        !goals.is_empty(),
        "no free configuration with the tool in the bin"
    );
    for q in &goals {
        assert!(
            !in_hull.check_config(q).unwrap(),
            "the hull of the bin should hold the tool"
        );
    }

    // The walls and the floor still count: the tool through the floor, or through a wall,
    // is in collision with the parts (configurations free without the bin).
    let [x, y, z] = TOOL;
    for through in [[x, y, z - BELOW], [x + HALF, y, z - BELOW / 2.0]] {
        let qs = b.down_at(through, &empty);
        assert!(!qs.is_empty(), "no configuration reaches {through:?}");
        for q in &qs {
            assert!(
                !in_parts.check_config(q).unwrap(),
                "the tool at {through:?} passes through the bin"
            );
        }
    }

    // Plan from the neutral configuration into the bin; every motion re-checked finely.
    let start = b.neutral();
    let mut req = PlanRequest::new(start, goals[0].clone(), PlannerId::RrtConnect);
    req.time_limit = Duration::from_secs(10);
    req.seed = 7;
    let result = plan(&in_parts, &req).expect("a plan into the bin");
    let fresh = checker(&b, &parts);
    let mut motions = MotionBatch::new(b.group.space.dof());
    for w in result.path.windows(2) {
        motions.push(&w[0], &w[1]).unwrap();
    }
    let ok = fresh.check_motions(&motions, req.resolution / 5.0).unwrap();
    assert!(ok.iter().all(|&v| v), "a motion of the plan collides");
    let end = b.tool(result.path.last().unwrap()).translation.vector;
    assert!((end - Vector3::from(TOOL)).norm() < 1e-3, "ends at {end:?}");
    let again = plan(&in_parts, &req).expect("plans again");
    assert_eq!(again.path, result.path, "the same seed gives the same path");

    // The parts cover the mesh: every corner of the bin's surface is inside a part (to the
    // STL's f32 rounding of the corners: the parts are cut back to the hull of the mesh as
    // read).
    let [bx, by, bz] = [x, y, z - BELOW];
    for corner in [
        [-HALF, -HALF, 0.0],
        [HALF, HALF, 0.0],
        [HALF, -HALF, BELOW + ABOVE],
        [-HALF, HALF, BELOW + ABOVE],
    ] {
        let p = Point3::new(bx + corner[0], by + corner[1], bz + corner[2]);
        assert!(
            parts.iter().any(|o| {
                let local = o.pose.inverse_transform_point(&p);
                match &o.shape {
                    gpu_motion_planner::scene::Shape::ConvexMesh { polytope } => {
                        polytope.contains_point(&local, 1e-7)
                    }
                    _ => false,
                }
            }),
            "corner {p:?} in no part"
        );
    }
}

#[test]
fn bad_decomposition_settings_are_named() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("bin.stl"), bin_stl(HALF, 0.1)).unwrap();
    std::fs::write(dir.path().join("bin.dae"), bin_dae(HALF, 0.1)).unwrap();
    let load = |mesh: &str| {
        let path = dir.path().join("s.yaml");
        std::fs::write(
            &path,
            format!("obstacles:\n  - id: bin\n    mesh: {{{mesh}}}\n"),
        )
        .unwrap();
        load_scene(&path).map(|s| s.len())
    };
    let message = |mesh: &str| match load(mesh) {
        Err(e @ SceneError::Geometry { .. }) => e.to_string(),
        other => panic!("{mesh}: expected a geometry error, got {other:?}"),
    };
    assert!(message("file: bin.stl, convex_parts: 0").contains("convex parts: 0"));
    assert!(message("file: bin.stl, convex_parts: 4, resolution: 2").contains("resolution: 2"));
    assert_eq!(load("file: bin.stl, convex_parts: 1").unwrap(), 1);
    let stl_parts = load("file: bin.stl, convex_parts: 4").unwrap();
    assert!(stl_parts > 1);
    // The same bin as a Collada file splits into as many parts.
    assert_eq!(load("file: bin.dae, convex_parts: 1").unwrap(), 1);
    assert_eq!(load("file: bin.dae, convex_parts: 4").unwrap(), stl_parts);
    // An attached object stays one convex body.
    let path = dir.path().join("a.yaml");
    std::fs::write(
        &path,
        "attached:\n  - id: tray\n    link: tool0\n    mesh: {file: bin.stl, convex_parts: 4}\n",
    )
    .unwrap();
    let e = load_scene(&path).unwrap_err().to_string();
    assert!(e.contains("an attached object is one convex body"), "{e}");
}

/// The bin as a MoveIt `PlanningScene` YAML: object `bin` with a 10 cm box primitive far off
/// and the bin mesh (vertices and triangles) under the tool; the same mesh on a carried object.
fn bin_moveit_yaml(bad_index: bool) -> String {
    let (p, quads) = bin_surface(HALF, BELOW + ABOVE);
    let vertices: Vec<String> = p
        .iter()
        .map(|[x, y, z]| format!("[{x}, {y}, {z}]"))
        .collect();
    let mut triangles = Vec::new();
    for [a, b, c, d] in quads {
        for [i, j, k] in [[a, b, c], [a, c, d]] {
            triangles.push(format!("{{vertex_indices: [{i}, {j}, {k}]}}"));
        }
    }
    if bad_index {
        triangles.push("{vertex_indices: [0, 1, 8]}".into());
    }
    let mesh = format!(
        "{{vertices: [{}], triangles: [{}]}}",
        vertices.join(", "),
        triangles.join(", ")
    );
    let [x, y, z] = TOOL;
    format!(
        "world:\n  collision_objects:\n    - id: bin\n      header: {{frame_id: world}}\n      \
         primitives: [{{type: 1, dimensions: [0.1, 0.1, 0.1]}}]\n      primitive_poses: \
         [{{position: [1.5, 0, 0.05]}}]\n      meshes: [{mesh}]\n      mesh_poses: [{{position: \
         [{x}, {y}, {}], orientation: [0, 0, 0, 1]}}]\nrobot_state:\n  \
         attached_collision_objects:\n    - link_name: tool0\n      object: {{id: tray, meshes: \
         [{mesh}], mesh_poses: [{{position: [0, 0, 0.1]}}]}}\n",
        z - BELOW
    )
}

/// MoveIt scenes' meshes are hulls by default and convex parts with
/// `SceneOptions::mesh_parts`: as many as the project's format gives the same bin, named after
/// the object's other shapes; the tool in the bin is free with them; a carried object's mesh
/// stays one hull; a bad triangle index is named when the triangles are used.
#[test]
fn moveit_scene_meshes_split_with_the_option() {
    let b = bundled();
    let dir = tempfile::tempdir().unwrap();
    let reference = bin_scene(dir.path(), 16).len();
    let yaml = dir.path().join("bin.yaml");
    let text = dir.path().join("bin.scene");
    std::fs::write(&yaml, bin_moveit_yaml(false)).unwrap();
    std::fs::write(&text, bin_scene_text()).unwrap();
    let split = SceneOptions {
        mesh_parts: Decomposition {
            max_parts: 16,
            ..Decomposition::default()
        },
    };
    let ids = |s: &Scene| s.iter().map(|o| o.id.clone()).collect::<Vec<_>>();
    let numbered = |n: usize| {
        (0..n)
            .map(|k| {
                if k == 0 {
                    "bin".to_string()
                } else {
                    format!("bin/{k}")
                }
            })
            .collect::<Vec<_>>()
    };

    // As hulls: the box and the mesh's hull; the text's one mesh.
    let hull_yaml = load_scene(&yaml).unwrap();
    assert_eq!(ids(&hull_yaml), numbered(2));
    let hull_text = load_scene(&text).unwrap();
    assert_eq!(ids(&hull_text), numbered(1));

    // Split: the box first, then the parts.
    let parts_yaml = load_scene_with(&yaml, &split).unwrap();
    assert_eq!(ids(&parts_yaml), numbered(reference + 1));
    assert!(matches!(
        parts_yaml.get("bin").unwrap().shape,
        gpu_motion_planner::scene::Shape::Box { .. }
    ));
    let parts_text = load_scene_with(&text, &split).unwrap();
    assert_eq!(ids(&parts_text), numbered(reference));
    assert_eq!(
        parts_yaml.attached().len(),
        1,
        "the carried tray is one body"
    );

    let goals = b.down_at(TOOL, &checker(&b, &parts_text));
    assert!(!goals.is_empty(), "no free configuration in the bin");
    let (in_yaml, in_hull) = (checker(&b, &parts_yaml), checker(&b, &hull_text));
    for q in &goals {
        assert!(in_yaml.check_config(q).unwrap());
        assert!(!in_hull.check_config(q).unwrap());
    }

    // A triangle naming a ninth vertex of eight: named where the triangles are read.
    std::fs::write(&yaml, bin_moveit_yaml(true)).unwrap();
    assert_eq!(load_scene(&yaml).unwrap().len(), 2);
    let e = load_scene_with(&yaml, &split).unwrap_err().to_string();
    assert!(
        e.contains("'bin'") && e.contains("mesh 0") && e.contains("vertex 8 of 8"),
        "{e}"
    );
}

/// Every collision mesh of the MBM robots splits into convex parts (parry's f32 hull drops
/// points of some of the parts' crowded point sets; the f64 hull takes over there), and the
/// parts cover each mesh's vertices.
#[test]
fn every_mbm_collision_mesh_splits_into_covering_parts() {
    let Some(data) = common::mbm_or_skip("every_mbm_collision_mesh_splits_into_covering_parts")
    else {
        return;
    };
    fn meshes(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
        for e in std::fs::read_dir(dir).unwrap().flatten() {
            let p = e.path();
            let ext = p
                .extension()
                .map(|x| x.to_string_lossy().to_lowercase())
                .unwrap_or_default();
            if p.is_dir() {
                meshes(&p, out);
            } else if (ext == "stl" || ext == "obj") && p.to_string_lossy().contains("collision") {
                out.push(p);
            }
        }
    }
    let mut files = Vec::new();
    for robot in ["panda", "ur5", "fetch"] {
        meshes(&data.join(robot).join("meshes"), &mut files);
    }
    files.sort();
    assert!(files.len() >= 20, "{} collision meshes", files.len());
    let how = Decomposition {
        max_parts: 8,
        resolution: 32,
    };
    let mut split = 0;
    for f in &files {
        let (points, triangles) =
            load_mesh_triangles(f, Vector3::new(1.0, 1.0, 1.0)).expect("mesh triangles");
        let parts = convex_parts(&points, &triangles, &how)
            .unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        if parts.len() > 1 {
            split += 1;
        }
        let hull = Polytope::from_points(&points).unwrap();
        // Hulls are exact to HULL_TOLERANCE of their diameter (`Polytope::from_points`).
        let (lo, hi) = hull.aabb();
        let tol = HULL_TOLERANCE * (hi - lo).norm();
        for v in &points {
            assert!(
                parts.iter().any(|p| p.contains_point(v, tol)),
                "{}: vertex {v:?} in no part",
                f.display()
            );
        }
    }
    assert!(split >= 3, "only {split} meshes gave several parts");
}
