//! Whole scenes in the service: a scene file (obstacles and carried objects) loaded into the
//! planning scene ([`PlanningService::load_scene`]), and the planning scene written out as
//! one ([`PlanningService::scene_snapshot`], [`PlanningService::save_scene`]).

use std::path::Path;

use super::{PlanningService, ServiceError};
use crate::collision::allowed::known_entries;
use crate::robot::AttachedObject;
use crate::scene::{Obstacle, Scene};

/// What a scene load did.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SceneLoad {
    /// Obstacles the loaded scene brought (new, or replacing one of the same id).
    pub loaded: usize,
    /// Objects of the loaded scene now attached to the robot.
    pub attached: usize,
    /// Obstacles in the planning scene after the load.
    pub obstacles: usize,
    /// Objects the robot carries after the load.
    pub carried: usize,
    /// Allowed-collision entries of the loaded scene applied (its MoveIt matrix's, pair by
    /// pair, and its own list's).
    pub entries: usize,
    /// Names of the loaded scene's MoveIt `allowed_collision_matrix` that neither the robot
    /// nor the scene has, left aside as MoveIt does.
    pub matrix_unknown: Vec<String>,
}

impl PlanningService {
    /// Loads `file` (a scene read from `source`, named in errors) into the planning scene.
    ///
    /// Obstacles are moved from the file's frame into the planning frame as markers are (the
    /// planning frame, a robot link at the current joint state, or a frame known from
    /// `/tf`). The file's attached objects are attached to the links they name.
    ///
    /// With `replace` the planning scene becomes the file's: every obstacle and every
    /// carried object not in the file is dropped. Otherwise the file's obstacles and carried
    /// objects are added, each replacing one of the same id.
    ///
    /// The file's allowed-collision entries are applied after its obstacles and carried
    /// objects are in place ([`Self::allow_collisions`], one entry at a time, later ones
    /// winning): those of its MoveIt `allowed_collision_matrix` first (names neither the robot
    /// nor the scene has left aside, [`crate::collision::allowed::known_entries`]), then its
    /// own list; with `replace` they replace the entries set before.
    ///
    /// An id may not be both an obstacle and a carried object. On error nothing changes.
    pub fn load_scene(
        &mut self,
        file: &Scene,
        source: &str,
        replace: bool,
    ) -> Result<SceneLoad, ServiceError> {
        let bad = |reason: String| ServiceError::SceneFile {
            origin: source.to_string(),
            reason,
        };
        let mut obstacles = Vec::with_capacity(file.len());
        for o in file.iter() {
            let pose = self
                .in_planning_frame(file.frame(), o.pose, &self.current)
                .map_err(|e| bad(format!("obstacle '{}': {e}", o.id)))?;
            obstacles.push(Obstacle { pose, ..o.clone() });
        }
        let mut carried: Vec<AttachedObject> = if replace {
            Vec::new()
        } else {
            let incoming = |id: &str| file.attached().iter().any(|a| a.id == id);
            self.robot
                .attached()
                .iter()
                .filter(|a| !incoming(&a.id))
                .cloned()
                .collect()
        };
        carried.extend(file.attached().iter().cloned());

        let mut scene = self.scene.clone();
        if replace {
            scene.clear();
        }
        for o in obstacles {
            let id = o.id.clone();
            scene
                .upsert(o)
                .map_err(|e| bad(format!("obstacle '{id}': {e}")))?;
        }
        // Carried objects taken up again leave the scene as `attach_object` takes them; an
        // obstacle of the file with a carried object's id is an error.
        for a in &carried {
            if scene.get(&a.id).is_some() {
                let in_file = file.get(&a.id).is_some();
                return Err(bad(format!(
                    "'{}' is both {} and an object the robot carries{}",
                    a.id,
                    if in_file {
                        "an obstacle of the file"
                    } else {
                        "an obstacle of the scene"
                    },
                    if in_file { "" } else { " (load with replace)" }
                )));
            }
        }
        let robot = if carried == self.robot.attached() {
            None
        } else {
            Some(
                self.base_robot
                    .with_attached(&carried)
                    .map_err(|e| bad(format!("attached objects: {e}")))?,
            )
        };

        // The entries name what the loaded scene holds, so they are checked against it.
        let checked_robot = robot.as_ref().unwrap_or(&self.robot);
        let (mut entries, matrix_unknown) =
            known_entries(checked_robot, &scene, file.matrix_collisions());
        entries.extend_from_slice(file.allowed_collisions());
        let acm = self
            .allowed_after(checked_robot, &scene, &entries, replace)
            .map_err(|e| bad(e.to_string()))?;
        self.scene = scene;
        if replace {
            self.marker_parts.forget();
        }
        if let Some(robot) = robot {
            self.set_robot(robot);
        }
        self.set_acm(acm);
        Ok(SceneLoad {
            loaded: file.len(),
            attached: file.attached().len(),
            obstacles: self.scene.len(),
            carried: self.robot.attached().len(),
            entries: entries.len(),
            matrix_unknown,
        })
    }

    /// The planning scene as a scene file would hold it: its obstacles (in the planning
    /// frame), the objects the robot carries and the allowed-collision entries, which
    /// [`Self::load_scene`] takes back.
    pub fn scene_snapshot(&self) -> Scene {
        let mut snapshot = super::reframed(self.scene.clone(), &self.settings.planning_frame);
        for a in self.robot.attached() {
            // Carried ids differ from the obstacles' (attaching takes one out of the scene).
            let _ = snapshot.attach(a.clone());
        }
        snapshot.set_allowed_collisions(self.allowed_collisions());
        snapshot
    }

    /// Writes [`Self::scene_snapshot`] to `path`, whole or not at all (a temporary file
    /// renamed over `path`): in the project's scene format, or as MoveIt's `.scene` text
    /// (obstacles only, named after the file) where `path` ends in `.scene`. Returns the text
    /// written.
    pub fn save_scene(&self, path: &Path) -> Result<String, ServiceError> {
        let text = self.scene_snapshot().to_text_for(path);
        crate::report::write_atomically(path, text.as_bytes()).map_err(|e| {
            ServiceError::SceneFile {
                origin: path.display().to_string(),
                reason: format!("could not write it: {e}"),
            }
        })?;
        Ok(text)
    }
}
