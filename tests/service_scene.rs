//! Whole scenes through `PlanningService`: the planning scene saved to a file and loaded
//! back (replacing or merging), frames, and bad files that change nothing.

mod common;

use common::service::{cpu_checker, names, pick_up, place, service, tool_pose_at, START};
use gpu_motion_planner::collision::{Checker, ConfigBatch};
use gpu_motion_planner::scene::{Scene, Shape};
use gpu_motion_planner::service::{
    ErrorCategory, MarkerAction, MarkerKind, MarkerUpdate, PlanningService,
};
use nalgebra::{Isometry3, Vector3};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::path::Path;

/// The verdicts of a fresh CPU checker of `s` on `n` random group configurations (seeded).
fn verdicts(s: &PlanningService, n: usize) -> Vec<bool> {
    let group = s.group().expect("group");
    let mut rng = ChaCha8Rng::seed_from_u64(11);
    let rows: Vec<Vec<f64>> = (0..n)
        .map(|_| {
            (0..group.space.dof())
                .map(|j| rng.random_range(group.space.lower[j]..=group.space.upper[j]))
                .collect()
        })
        .collect();
    let refs: Vec<&[f64]> = rows.iter().map(Vec::as_slice).collect();
    let batch = ConfigBatch::from_rows(group.space.dof(), &refs).expect("batch");
    cpu_checker(s).check_configs(&batch).expect("check")
}

fn delete_all(s: &mut PlanningService) {
    s.apply_marker(MarkerUpdate {
        ns: String::new(),
        id: 0,
        action: MarkerAction::DeleteAll,
        kind: MarkerKind::Cube,
        frame_id: String::new(),
        pose: Isometry3::identity(),
        scale: [1.0; 3],
    })
    .expect("delete all");
}

/// The bundled scene plus a cube marker, and a part the robot carries at [`START`].
fn busy_service() -> PlanningService {
    let mut s = service();
    let n = names(&s);
    s.set_joint_state(&n, &START).expect("joint state");
    place(
        &mut s,
        "crate",
        3,
        MarkerKind::Cube,
        Vector3::new(0.1, -0.45, 0.35),
        0.12,
    );
    let part = tool_pose_at(&s, &START) * Isometry3::translation(0.0, 0.0, 0.06);
    s.apply_marker(MarkerUpdate {
        ns: "part".into(),
        id: 0,
        action: MarkerAction::Add,
        kind: MarkerKind::Cube,
        frame_id: "world".into(),
        pose: part,
        scale: [0.05; 3],
    })
    .expect("part");
    pick_up(&mut s, "part/0");
    s
}

#[test]
fn a_saved_scene_loads_back_into_an_empty_one_with_the_same_verdicts() {
    let s = busy_service();
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("cell.yaml");
    let text = s.save_scene(&path).expect("save");
    assert_eq!(std::fs::read_to_string(&path).expect("read"), text);
    // Nothing but the file is left in the folder (no temporary file).
    assert_eq!(std::fs::read_dir(dir.path()).expect("dir").count(), 1);

    let mut t = service();
    delete_all(&mut t);
    assert!(t.scene().is_empty());
    let file = Scene::from_file(&path).expect("parse");
    let loaded = t.load_scene(&file, "cell.yaml", true).expect("load");
    assert_eq!(loaded.loaded, s.scene().len());
    assert_eq!(loaded.attached, 1);
    assert_eq!(loaded.obstacles, s.scene().len());
    assert_eq!(loaded.carried, 1);

    // Every obstacle back with its id, shape and pose, and the carried part on its link.
    let ids = |s: &PlanningService| -> Vec<String> {
        let mut ids: Vec<String> = s.scene().iter().map(|o| o.id.clone()).collect();
        ids.sort();
        ids
    };
    assert_eq!(ids(&t), ids(&s));
    for o in s.scene().iter() {
        let back = t.scene().get(&o.id).expect("obstacle back");
        assert_eq!(back.shape, o.shape, "{}", o.id);
        assert_eq!(back.pose, o.pose, "{}", o.id);
    }
    assert_eq!(t.attached_objects(), s.attached_objects());
    // The checker of the loaded scene gives the saved one's verdicts, some of each.
    let (a, b) = (verdicts(&s, 2000), verdicts(&t, 2000));
    assert_eq!(a, b);
    assert!(a.iter().any(|&v| v) && a.iter().any(|&v| !v));
}

#[test]
fn merging_adds_and_replaces_by_id_and_replacing_drops_the_rest() {
    let mut s = busy_service();
    let before = s.scene().len();
    let old_crate = s.scene().get("crate/3").expect("crate").pose;
    let file = Scene::from_yaml_str(
        "frame: world
obstacles:
  - id: crate/3
    box: {size: [0.2, 0.2, 0.2]}
    pose: {position: [0.3, -0.5, 0.3]}
  - id: post
    cylinder: {radius: 0.03, length: 0.5}
    pose: {position: [-0.4, 0.4, 0.25]}
",
        Path::new("."),
    )
    .expect("file");
    let merged = s.load_scene(&file, "<text>", false).expect("merge");
    assert_eq!(merged.loaded, 2);
    assert_eq!(merged.obstacles, before + 1);
    // The carried part stays carried.
    assert_eq!(merged.carried, 1);
    let crate_now = s.scene().get("crate/3").expect("crate");
    assert_ne!(crate_now.pose, old_crate);
    assert_eq!(
        crate_now.shape,
        Shape::Box {
            half_extents: Vector3::new(0.1, 0.1, 0.1)
        }
    );
    assert!(s.scene().get("table").is_some());

    let replaced = s.load_scene(&file, "<text>", true).expect("replace");
    assert_eq!((replaced.obstacles, replaced.carried), (2, 0));
    assert!(s.scene().get("table").is_none());
    assert!(s.attached_objects().is_empty());
    assert!(s.robot().tree.link("part/0").is_err());
}

#[test]
fn obstacles_in_a_link_frame_are_placed_where_the_joint_state_puts_the_link() {
    let mut s = service();
    let n = names(&s);
    s.set_joint_state(&n, &START).expect("joint state");
    let file = Scene::from_yaml_str(
        "frame: tool0
obstacles:
  - id: ahead
    sphere: {radius: 0.02}
    pose: {position: [0, 0, 0.3]}
",
        Path::new("."),
    )
    .expect("file");
    s.load_scene(&file, "<text>", false).expect("load");
    let expected = tool_pose_at(&s, &START) * Isometry3::translation(0.0, 0.0, 0.3);
    let placed = s.scene().get("ahead").expect("placed").pose;
    assert!((placed.translation.vector - expected.translation.vector).norm() < 1e-12);
}

#[test]
fn bad_scenes_are_errors_naming_the_input_and_change_nothing() {
    let mut s = busy_service();
    let ids = |s: &PlanningService| -> Vec<(String, Isometry3<f64>)> {
        s.scene().iter().map(|o| (o.id.clone(), o.pose)).collect()
    };
    let (before, carried, revision) =
        (ids(&s), s.attached_objects().to_vec(), s.scene().revision());
    let cases = [
        (
            "frame: nowhere\nobstacles:\n  - id: a\n    sphere: {radius: 0.1}\n",
            false,
            "frame 'nowhere'",
        ),
        // An obstacle with the id of the carried part, merged.
        (
            "frame: world\nobstacles:\n  - id: part/0\n    sphere: {radius: 0.1}\n",
            false,
            "'part/0' is both an obstacle of the file and an object the robot carries",
        ),
        // A carried object on a link the robot does not have; the obstacle before it is
        // not added either.
        (
            "frame: world
obstacles:
  - id: b
    sphere: {radius: 0.1}
attached:
  - id: tool_x
    link: no_such_link
    sphere: {radius: 0.05}
",
            true,
            "no_such_link",
        ),
    ];
    for (text, replace, needle) in cases {
        let file = Scene::from_yaml_str(text, Path::new(".")).expect("parses");
        let e = s.load_scene(&file, "bad.yaml", replace).unwrap_err();
        let msg = e.to_string();
        assert!(msg.starts_with("scene 'bad.yaml': "), "{msg}");
        assert!(msg.contains(needle), "{msg}");
        assert_eq!(e.category(), ErrorCategory::InvalidObject);
        assert_eq!(ids(&s), before, "{text}");
        assert_eq!(s.attached_objects(), carried.as_slice());
        assert_eq!(s.scene().revision(), revision);
    }

    // An obstacle of the scene (not the file) with the id of a carried object of the file.
    let file = Scene::from_yaml_str(
        "frame: world\nattached:\n  - id: crate/3\n    link: tool0\n    sphere: {radius: 0.02}\n",
        Path::new("."),
    )
    .expect("parses");
    let msg = s.load_scene(&file, "f", false).unwrap_err().to_string();
    assert!(
        msg.contains("an obstacle of the scene") && msg.contains("replace"),
        "{msg}"
    );

    // Saving where no folder exists names the path and writes nothing.
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("missing").join("cell.yaml");
    let msg = s.save_scene(&path).unwrap_err().to_string();
    assert!(msg.contains(&path.display().to_string()), "{msg}");
    assert!(!path.exists());
    // The service still plans after all this.
    assert!(!verdicts(&s, 10).is_empty());
}

#[test]
fn scene_text_in_either_format_is_recognised() {
    let moveit = "world:
  collision_objects:
    - id: box
      header: {frame_id: world}
      primitives:
        - {type: box, dimensions: [0.1, 0.2, 0.3]}
      primitive_poses:
        - position: [0.5, 0, 0.4]
          orientation: [0, 0, 0, 1]
";
    let s = Scene::from_text(moveit, Path::new("."), Path::new("<moveit>")).expect("moveit");
    assert_eq!(s.len(), 1);
    let o = s.iter().next().expect("one");
    assert_eq!(o.id, "box");
    assert!((o.pose.translation.vector - Vector3::new(0.5, 0.0, 0.4)).norm() < 1e-12);
    let ours = "frame: world\nobstacles:\n  - id: b\n    sphere: {radius: 0.1}\n";
    assert_eq!(
        Scene::from_text(ours, Path::new("."), Path::new("<ours>"))
            .expect("ours")
            .len(),
        1
    );
    let e = Scene::from_text("frame: [", Path::new("."), Path::new("<broken>")).unwrap_err();
    assert!(e.to_string().contains("<broken>"), "{e}");
}

#[test]
fn a_scene_saved_as_moveit_text_loads_back_with_the_same_obstacles() {
    let mut s = busy_service();
    // The carried part goes back into the scene first: the format has no carried objects.
    s.detach_object("part/0", false).expect("detach");
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("cell.scene");
    let text = s.save_scene(&path).expect("save");
    assert!(text.starts_with("cell\n* "), "{text}");
    assert!(text.ends_with("\n.\n"));

    let mut t = service();
    delete_all(&mut t);
    let file = Scene::from_file(&path).expect("parse");
    let loaded = t.load_scene(&file, "cell.scene", true).expect("load");
    assert_eq!(loaded.obstacles, s.scene().len());
    for o in s.scene().iter() {
        let back = t.scene().get(&o.id).expect("obstacle back");
        assert_eq!(back.pose, o.pose, "{}", o.id);
        assert_eq!(back.shape, o.shape, "{}", o.id);
    }
    assert_eq!(verdicts(&s, 2000), verdicts(&t, 2000));
}
