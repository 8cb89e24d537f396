//! Robot link meshes split into convex parts (`LoadOptions::mesh_parts`, `gmp
//! --link-convex-parts`, the node's `link_convex_parts`): a link shaped as an open scoop holds
//! a ball in its hollow without collision where its convex hull would collide, its walls
//! still collide, and no configuration the exact mesh puts in collision is reported free;
//! the parts are bodies of the link named by their mesh; the command line shows them and
//! names bad values.

mod common;

use std::path::Path;
use std::process::Command;

use gpu_motion_planner::collision::{Checker, CheckerOptions, ConfigBatch, CpuChecker};
use gpu_motion_planner::robot::decompose::Decomposition;
use gpu_motion_planner::robot::{BodySource, LoadOptions, RobotModel};
use gpu_motion_planner::scene::{Obstacle, Scene, Shape};
use nalgebra::Isometry3;

use common::bin::bin_stl;
use common::exact::ExactRobot;

/// Half the scoop's width and its height (m).
const HALF: f64 = 0.1;
const HEIGHT: f64 = 0.15;
/// The ball held in the scoop: its radius and its centre's height.
const BALL: f64 = 0.03;
const BALL_Z: f64 = 0.08;

/// Writes a robot whose one link, `scoop`, slides along x and whose collision mesh is an
/// open bin; returns the URDF and SRDF paths.
fn scoop_robot(dir: &Path) -> (std::path::PathBuf, std::path::PathBuf) {
    std::fs::write(dir.join("scoop.stl"), bin_stl(HALF, HEIGHT)).unwrap();
    let urdf = dir.join("scoop.urdf");
    std::fs::write(
        &urdf,
        r#"<robot name="scoop_robot">
  <link name="world"/>
  <link name="scoop">
    <collision><geometry><mesh filename="scoop.stl"/></geometry></collision>
  </link>
  <joint name="slide" type="prismatic">
    <parent link="world"/><child link="scoop"/><axis xyz="1 0 0"/>
    <limit lower="-1" upper="1" effort="1" velocity="1"/>
  </joint>
</robot>
"#,
    )
    .unwrap();
    let srdf = dir.join("scoop.srdf");
    std::fs::write(
        &srdf,
        r#"<robot name="scoop_robot"><group name="scoop"><joint name="slide"/></group></robot>"#,
    )
    .unwrap();
    (urdf, srdf)
}

fn load(urdf: &Path, srdf: &Path, parts: u32) -> RobotModel {
    let opts = LoadOptions {
        mesh_parts: Some(Decomposition {
            max_parts: parts,
            ..Decomposition::default()
        }),
        ..LoadOptions::default()
    };
    RobotModel::from_urdf_file(urdf, Some(srdf), &opts).expect("scoop robot")
}

/// A ball where the scoop's hollow is at slide 0.
fn ball_scene() -> Scene {
    let mut scene = Scene::new("world".to_string());
    scene
        .upsert(Obstacle {
            id: "ball".into(),
            shape: Shape::Sphere { radius: BALL },
            pose: Isometry3::translation(0.0, 0.0, BALL_Z),
        })
        .unwrap();
    scene
}

/// Validity (true = free) of each slide position.
fn free_at(robot: &RobotModel, scene: &Scene, slides: &[f64]) -> Vec<bool> {
    let group = robot.group("scoop").unwrap();
    let base = robot.tree.neutral_state();
    let checker = CpuChecker::new(robot, &group, &base, scene, CheckerOptions::default()).unwrap();
    let mut batch = ConfigBatch::new(1);
    for s in slides {
        batch.push(&[*s]).unwrap();
    }
    checker.check_configs(&batch).unwrap()
}

#[test]
fn a_scoop_split_into_parts_holds_a_ball_its_hull_would_hit() {
    let dir = tempfile::tempdir().unwrap();
    let (urdf, srdf) = scoop_robot(dir.path());
    let hull = load(&urdf, &srdf, 1);
    let split = load(&urdf, &srdf, 16);

    // The hull is one body from the mesh; the parts are bodies of the same link, numbered
    // from 0, naming the mesh.
    assert_eq!(hull.bodies.len(), 1);
    assert!(matches!(hull.bodies[0].source, BodySource::Mesh { .. }));
    let n = split.bodies.len();
    assert!((2..=16).contains(&n), "{n} parts");
    for (k, b) in split.bodies.iter().enumerate() {
        assert_eq!(b.link, split.bodies[0].link);
        match &b.source {
            BodySource::MeshPart { path, part, .. } => {
                assert_eq!(*part, k);
                assert!(path.ends_with("scoop.stl"), "{}", path.display());
            }
            other => panic!("body {k}: {other:?}"),
        }
    }
    // No load option: the hull, as before.
    let plain = RobotModel::from_urdf_file(&urdf, Some(&srdf), &LoadOptions::default()).unwrap();
    assert_eq!(plain.bodies.len(), 1);
    assert_eq!(plain.bodies[0].polytope, hull.bodies[0].polytope);

    // Slide 0: the ball sits in the hollow. 0.1: the wall at x = -0.1 passes through the
    // ball's centre. 0.5: the ball is outside.
    let scene = ball_scene();
    assert_eq!(
        free_at(&hull, &scene, &[0.0, 0.1, 0.5]),
        [false, false, true]
    );
    assert_eq!(
        free_at(&split, &scene, &[0.0, 0.1, 0.5]),
        [true, false, true]
    );

    // Against the exact mesh, across the whole slide: nothing the mesh hits is free, and
    // the hollow is free for the parts over a stretch of positions.
    let exact = ExactRobot::new(&split);
    let obstacles = ExactRobot::scene(&scene);
    let slides: Vec<f64> = (0..=200).map(|i| -0.25 + 0.0025 * i as f64).collect();
    let verdicts = free_at(&split, &scene, &slides);
    let hull_verdicts = free_at(&hull, &scene, &slides);
    let (mut mesh_hits, mut free_inside) = (0, 0);
    for ((s, free), hull_free) in slides.iter().zip(&verdicts).zip(&hull_verdicts) {
        let hit = exact.collides(&obstacles, &[*s]);
        if let Some(what) = &hit {
            mesh_hits += 1;
            assert!(
                !free,
                "slide {s}: {what} under the exact mesh, but the parts say free"
            );
        }
        if *free && s.abs() < HALF - BALL - 0.01 {
            free_inside += 1;
        }
        // The parts cover less than the hull, never more here.
        assert!(
            *free || !hull_free,
            "slide {s}: hull free, parts in collision"
        );
    }
    assert!(mesh_hits > 20, "{mesh_hits}");
    assert!(free_inside > 10, "{free_inside}");
}

#[test]
fn a_mesh_that_cannot_be_split_is_an_error_naming_the_link_and_file() {
    let dir = tempfile::tempdir().unwrap();
    let (urdf, srdf) = scoop_robot(dir.path());
    // A mesh file with no triangles: points are enough for a hull, not for parts.
    std::fs::write(
        dir.path().join("scoop.stl"),
        "solid empty\nendsolid empty\n",
    )
    .unwrap();
    let opts = LoadOptions {
        mesh_parts: Some(Decomposition::default()),
        ..LoadOptions::default()
    };
    let e = RobotModel::from_urdf_file(&urdf, Some(&srdf), &opts)
        .unwrap_err()
        .to_string();
    assert!(e.contains("scoop") && e.contains("scoop.stl"), "{e}");
    assert!(e.contains("convex parts"), "{e}");
}

fn gmp(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_gmp"))
        .args(args)
        .output()
        .expect("gmp runs")
}

#[test]
fn the_command_line_splits_link_meshes_on_request() {
    let dir = tempfile::tempdir().unwrap();
    let (urdf, srdf) = scoop_robot(dir.path());
    let (urdf, srdf) = (urdf.to_str().unwrap(), srdf.to_str().unwrap());
    let bodies = |extra: &[&str]| {
        let mut args = vec!["info", "--urdf", urdf, "--srdf", srdf];
        args.extend_from_slice(extra);
        let out = gmp(&args);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        v["collision_bodies"].as_array().unwrap().len()
    };
    assert_eq!(bodies(&[]), 1);
    let split = bodies(&["--link-convex-parts", "16", "--link-mesh-resolution", "48"]);
    assert!(split > 1, "{split}");
    for bad in [
        ["--link-convex-parts", "0"],
        ["--link-convex-parts", "300"],
        ["--link-mesh-resolution", "4"],
    ] {
        let mut args = vec!["info", "--urdf", urdf, "--srdf", srdf];
        args.extend_from_slice(&bad);
        let out = gmp(&args);
        assert!(!out.status.success());
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("--link-convex-parts"), "{err}");
    }
}
