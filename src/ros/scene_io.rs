//! `~/load_scene` (LoadScene), `~/save_scene` (SaveScene) and the `scene_path` parameter:
//! whole scenes in and out of [`PlanningService`] ([`PlanningService::load_scene`],
//! [`PlanningService::save_scene`]).

use std::path::Path;

use r2r::gpu_motion_planner_interfaces::srv::{LoadScene, SaveScene};

use crate::scene::{is_moveit_text, Scene, SceneOptions};
use crate::service::{PlanningService, SceneLoad};

/// Where a LoadScene request's text is said to come from in messages.
const TEXT_SOURCE: &str = "scene_yaml";

/// How the node reads scene files: MoveIt scenes' meshes split as mesh markers are
/// (`mesh_convex_parts`, `mesh_resolution`).
pub fn options(service: &PlanningService) -> SceneOptions {
    SceneOptions {
        mesh_parts: service.settings().mesh_parts,
    }
}

/// Reads scene file `path` (either format) with `options`. Errors name the file.
pub fn read_file(path: &str, options: &SceneOptions) -> Result<Scene, String> {
    Scene::from_file_with(Path::new(path), options).map_err(|e| format!("scene '{path}': {e}"))
}

/// Reads scene file `path` (either format) and loads it into `service`, replacing the
/// planning scene unless `merge`. Errors name the file.
pub fn load_file(
    service: &mut PlanningService,
    path: &str,
    merge: bool,
) -> Result<SceneLoad, String> {
    let scene = read_file(path, &options(service))?;
    apply_file(service, path, scene, merge)
}

/// Loads scene `scene`, read from file `path`, into `service` (see [`load_file`]).
pub fn apply_file(
    service: &mut PlanningService,
    path: &str,
    scene: Scene,
    merge: bool,
) -> Result<SceneLoad, String> {
    service
        .load_scene(&scene, path, !merge)
        .map_err(|e| e.to_string())
}

/// A LoadScene request's scene read with some options, before the service is taken (reading
/// splits meshes, which can take a second): the options, and the scene with where it came
/// from, or why it could not be read.
pub struct ReadScene {
    options: SceneOptions,
    scene: Result<(Scene, String), String>,
}

/// Reads the scene of a LoadScene request (its file, or its text) with `options`, without
/// the service ([`load`] applies it).
pub fn read_request(req: &LoadScene::Request, options: &SceneOptions) -> ReadScene {
    let scene = match (req.path.is_empty(), req.scene_yaml.is_empty()) {
        (true, true) => Err("give the scene: path or scene_yaml".to_string()),
        (false, false) => Err("give path or scene_yaml, not both".to_string()),
        (false, true) => read_file(&req.path, options).map(|s| (s, req.path.clone())),
        (true, false) => Scene::from_text_with(
            &req.scene_yaml,
            Path::new("."),
            Path::new(TEXT_SOURCE),
            options,
        )
        .map(|s| (s, TEXT_SOURCE.to_string()))
        .map_err(|e| format!("scene '{TEXT_SOURCE}': {e}")),
    };
    ReadScene {
        options: *options,
        scene,
    }
}

/// One line on a load: what came from where, and what the planning scene holds now.
pub fn describe(load: &SceneLoad, source: &str, merge: bool) -> String {
    let entries = match load.entries {
        0 => String::new(),
        1 => ", 1 allowed-collision entry applied".to_string(),
        n => format!(", {n} allowed-collision entries applied"),
    };
    let unknown = if load.matrix_unknown.is_empty() {
        String::new()
    } else {
        format!(
            " (names of its allowed_collision_matrix the robot does not have, left aside: {})",
            load.matrix_unknown.join(", ")
        )
    };
    format!(
        "{} from '{source}' ({}): the scene has {} obstacle(s), the robot carries \
         {}{entries}{unknown}",
        counted(load.loaded, "obstacle", load.attached, "carried object"),
        if merge {
            "merged by id"
        } else {
            "replacing the scene"
        },
        load.obstacles,
        load.carried
    )
}

/// "n a(s) and m b(s)", leaving out a count of zero (both zero: "nothing").
fn counted(n: usize, a: &str, m: usize, b: &str) -> String {
    let part = |k: usize, what: &str| format!("{k} {what}{}", if k == 1 { "" } else { "s" });
    match (n, m) {
        (0, 0) => "nothing".into(),
        (_, 0) => part(n, a),
        (0, _) => part(m, b),
        _ => format!("{} and {}", part(n, a), part(m, b)),
    }
}

/// Answers a LoadScene request on `service`, reading its scene now.
pub fn load(service: &mut PlanningService, req: &LoadScene::Request) -> LoadScene::Response {
    let read = read_request(req, &options(service));
    load_read(service, req, read)
}

/// Answers a LoadScene request on `service` with its scene read before
/// ([`read_request`]); where the service's split setting changed since, it is read again.
pub fn load_read(
    service: &mut PlanningService,
    req: &LoadScene::Request,
    read: ReadScene,
) -> LoadScene::Response {
    let now = options(service);
    let read = if read.options == now {
        read
    } else {
        read_request(req, &now)
    };
    let outcome = read.scene.and_then(|(scene, source)| {
        service
            .load_scene(&scene, &source, !req.merge)
            .map(|l| describe(&l, &source, req.merge))
            .map_err(|e| e.to_string())
    });
    let (success, message) = match outcome {
        Ok(m) => (true, format!("loaded {m}")),
        Err(m) => (false, m),
    };
    LoadScene::Response {
        success,
        message,
        obstacles: count(service.scene().len()),
        attached: count(service.attached_objects().len()),
    }
}

/// A count as a message's `uint32`.
fn count(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// Answers a SaveScene request on `service`.
pub fn save(service: &mut PlanningService, req: &SaveScene::Request) -> SaveScene::Response {
    let what = counted(
        service.scene().len(),
        "obstacle",
        service.attached_objects().len(),
        "carried object",
    );
    if req.path.is_empty() {
        return SaveScene::Response {
            success: true,
            message: format!("not written (no path): {what}"),
            scene_yaml: service.scene_snapshot().to_yaml_string(),
        };
    }
    match service.save_scene(Path::new(&req.path)) {
        Ok(text) => {
            let path = Path::new(&req.path);
            let format = if is_moveit_text(path) {
                let mut left_out = Vec::new();
                if !service.attached_objects().is_empty() {
                    left_out.push("the carried objects");
                }
                if !service.allowed_collisions().is_empty() {
                    left_out.push("the allowed collisions");
                }
                if left_out.is_empty() {
                    " as MoveIt .scene text".to_string()
                } else {
                    format!(
                        " as MoveIt .scene text, without {} (the format has none)",
                        left_out.join(" and ")
                    )
                }
            } else {
                String::new()
            };
            SaveScene::Response {
                success: true,
                message: format!("wrote '{}'{format}: {what}", req.path),
                scene_yaml: text,
            }
        }
        Err(e) => SaveScene::Response {
            success: false,
            message: e.to_string(),
            scene_yaml: String::new(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::demo::bundled;
    use crate::service::ServiceSettings;

    fn service() -> PlanningService {
        let (robot, scene) = bundled().expect("bundled");
        PlanningService::new(robot, scene, ServiceSettings::default())
    }

    #[test]
    fn save_then_load_through_the_requests() {
        let mut s = service();
        let n = s.scene().len();
        assert!(n > 0);
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("cell.yaml").display().to_string();
        let saved = save(&mut s, &SaveScene::Request { path: path.clone() });
        assert!(saved.success, "{}", saved.message);
        assert!(saved.message.contains(&path), "{}", saved.message);
        let only_text = save(&mut s, &SaveScene::Request::default());
        assert!(only_text.success && only_text.message.starts_with("not written"));
        assert_eq!(only_text.scene_yaml, saved.scene_yaml);

        // A text with one obstacle replaces the scene; the file brings it back.
        let one = "frame: world\nobstacles:\n  - id: b\n    sphere: {radius: 0.1}\n";
        let r = load(
            &mut s,
            &LoadScene::Request {
                scene_yaml: one.into(),
                ..Default::default()
            },
        );
        assert!(r.success, "{}", r.message);
        assert_eq!((r.obstacles, r.attached), (1, 0));
        assert!(r.message.contains("replacing the scene"), "{}", r.message);
        let r = load(
            &mut s,
            &LoadScene::Request {
                path: path.clone(),
                merge: true,
                ..Default::default()
            },
        );
        assert!(r.success, "{}", r.message);
        assert_eq!(r.obstacles as usize, n + 1);
        assert!(
            r.message.starts_with(&format!(
                "loaded {n} obstacles from '{path}' (merged by id)"
            )),
            "{}",
            r.message
        );
    }

    /// An open bin 0.4 m wide and 0.3 m high as MoveIt `.scene` text: one mesh.
    fn bin_text() -> String {
        let p = [
            [-0.2, -0.2, 0.0],
            [0.2, -0.2, 0.0],
            [0.2, 0.2, 0.0],
            [-0.2, 0.2, 0.0],
            [-0.2, -0.2, 0.3],
            [0.2, -0.2, 0.3],
            [0.2, 0.2, 0.3],
            [-0.2, 0.2, 0.3],
        ];
        let quads = [
            [0, 3, 2, 1],
            [0, 1, 5, 4],
            [1, 2, 6, 5],
            [2, 3, 7, 6],
            [3, 0, 4, 7],
        ];
        let mut out = "cell\n* bin\n2 0 0\n0 0 0 1\n1\nmesh\n8 10\n".to_string();
        for [x, y, z] in p {
            out.push_str(&format!("{x} {y} {z}\n"));
        }
        for [a, b, c, d] in quads {
            out.push_str(&format!("{a} {b} {c}\n{a} {c} {d}\n"));
        }
        out.push_str("0 0 0\n0 0 0 1\n0 0 0 0\n0\n.\n");
        out
    }

    /// The node reads a LoadScene request's scene before it takes the service: a scene
    /// read with the split setting of the time is loaded as read, and one read before the
    /// setting changed is read again with the new one.
    #[test]
    fn a_scene_read_before_the_service_is_taken_follows_the_split_setting() {
        let mut s = service();
        let req = LoadScene::Request {
            scene_yaml: bin_text(),
            ..Default::default()
        };
        let hull = read_request(&req, &options(&s));
        let r = load_read(&mut s, &req, hull);
        assert!(r.success, "{}", r.message);
        assert_eq!(r.obstacles, 1, "{}", r.message);

        let mut settings = s.settings().clone();
        settings.mesh_parts.max_parts = 16;
        let hull = read_request(&req, &options(&s));
        s.set_settings(settings);
        let r = load_read(&mut s, &req, hull);
        assert!(r.success, "{}", r.message);
        let parts = r.obstacles;
        assert!(parts > 1, "{}", r.message);
        let split = read_request(&req, &options(&s));
        let r = load_read(&mut s, &req, split);
        assert_eq!(r.obstacles, parts, "{}", r.message);
        assert!(s.scene().get("bin/1").is_some());

        // A request that cannot be read answers why and changes nothing.
        let bad = LoadScene::Request::default();
        let read = read_request(&bad, &options(&s));
        let r = load_read(&mut s, &bad, read);
        assert!(!r.success && r.message.contains("path or scene_yaml"));
        assert_eq!(r.obstacles, parts);
    }

    #[test]
    fn bad_requests_name_what_is_wrong_and_change_nothing() {
        let mut s = service();
        let n = s.scene().len() as u32;
        let cases = [
            (LoadScene::Request::default(), "path or scene_yaml"),
            (
                LoadScene::Request {
                    path: "a.yaml".into(),
                    scene_yaml: "frame: world".into(),
                    ..Default::default()
                },
                "not both",
            ),
            (
                LoadScene::Request {
                    path: "/no/such/scene.yaml".into(),
                    ..Default::default()
                },
                "scene '/no/such/scene.yaml'",
            ),
            (
                LoadScene::Request {
                    scene_yaml: "obstacles: [".into(),
                    ..Default::default()
                },
                "scene 'scene_yaml'",
            ),
        ];
        for (req, needle) in cases {
            let r = load(&mut s, &req);
            assert!(!r.success);
            assert!(r.message.contains(needle), "{}", r.message);
            assert_eq!(r.obstacles, n);
        }
        let r = save(
            &mut s,
            &SaveScene::Request {
                path: "/no/such/folder/cell.yaml".into(),
            },
        );
        assert!(!r.success && r.message.contains("/no/such/folder/cell.yaml"));
        assert!(r.scene_yaml.is_empty());
    }
}
