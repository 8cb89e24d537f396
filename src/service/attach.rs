//! Attached objects in the service: a grasped part leaves the scene and moves with the link
//! that holds it ([`PlanningService::attach_object`]), and goes back into the scene where the
//! robot put it down ([`PlanningService::detach_object`]).

use nalgebra::Isometry3;

use super::{obstacle_marker, MarkerKind, MarkerUpdate, PlanningService, ServiceError};
use crate::robot::AttachedObject;
use crate::scene::Obstacle;

/// Marker namespace of the attached objects in [`PlanningService::attached_markers`].
pub const ATTACHED_NS: &str = "attached";

/// The geometry of an object that is not in the scene yet.
#[derive(Debug, Clone, PartialEq)]
pub struct NewObject {
    /// The shape, as a marker kind (CUBE, SPHERE, CYLINDER, TRIANGLE_LIST) with `scale`.
    pub kind: MarkerKind,
    /// Marker scale (ROS marker conventions, as on `~/obstacles`).
    pub scale: [f64; 3],
    /// The frame of `pose`: the planning frame (also when empty) or a link of the robot.
    pub frame_id: String,
    /// The object's pose in `frame_id`.
    pub pose: Isometry3<f64>,
}

/// What to attach.
#[derive(Debug, Clone, PartialEq)]
pub struct AttachRequest {
    /// An obstacle of the scene (its id, `ns/id` for one from a marker), which leaves the
    /// scene; or the name of a new object described by `object`.
    pub id: String,
    /// The link that holds it; `None` (or empty) is the planning group's tip link.
    pub link: Option<String>,
    /// Links it may touch besides the holding link (a gripper's fingers).
    pub touch_links: Vec<String>,
    /// The geometry of a new object; not used when `id` names an obstacle of the scene.
    pub object: Option<NewObject>,
}

impl PlanningService {
    /// Attaches an object to a link: the obstacle `req.id` of the scene (removed from the
    /// scene, held where the current joint state puts it relative to the link) or a new
    /// object (`req.object`, given in the planning frame or a link's frame). From then on
    /// every check and plan carries it: it may not hit the obstacles or any link but the
    /// holding link and `touch_links`. The collision checker and the persistent roadmap are
    /// rebuilt at the next request. On error nothing changes.
    pub fn attach_object(&mut self, req: AttachRequest) -> Result<(), ServiceError> {
        let bad = |reason: String| ServiceError::Attach {
            object: req.id.clone(),
            reason,
        };
        if req.id.is_empty() {
            return Err(bad("the object needs an id".into()));
        }
        if self.robot.attached().iter().any(|a| a.id == req.id) {
            return Err(bad("already attached".into()));
        }
        let group = self.group()?;
        let link_name = match req.link.as_deref().filter(|l| !l.is_empty()) {
            Some(l) => l.to_string(),
            None => {
                let l = self.link_or_tip(None, &group).map_err(bad)?;
                self.robot.tree.links[l].name.clone()
            }
        };
        let link = self
            .robot
            .tree
            .link(&link_name)
            .map_err(|e| bad(e.to_string()))?;
        let parts = self.marker_parts.extra_parts(&req.id) + 1;
        if parts > 1 {
            return Err(bad(format!(
                "obstacle '{}' is a mesh marker split into {parts} convex parts, and an attached \
                 object is one body: publish the marker again while mesh_convex_parts is 1 \
                 (its hull), then attach it",
                req.id
            )));
        }
        let in_scene = self.scene.get(&req.id).cloned();
        let (shape, world, frame) = match (&in_scene, &req.object) {
            (Some(o), _) => (o.shape.clone(), o.pose, String::new()),
            (None, Some(n)) => (
                Self::marker_shape(&req.id, &n.kind, n.scale)?,
                n.pose,
                n.frame_id.clone(),
            ),
            (None, None) => {
                return Err(bad(
                    "no obstacle of that id in the scene and no geometry given".into(),
                ))
            }
        };
        // The object's pose in the holding link's frame.
        let pose = if frame == link_name {
            world
        } else {
            // A bad frame is named before a missing joint state.
            let in_plan = self
                .in_planning_frame(&frame, world, &self.current)
                .map_err(bad)?;
            if !self.has_current {
                return Err(bad(format!(
                    "a pose in '{}' is made relative to link '{link_name}' at the current joint \
                     state, and no joint state has been received yet (give the pose in \
                     '{link_name}' instead)",
                    if frame.is_empty() {
                        self.settings.planning_frame.as_str()
                    } else {
                        frame.as_str()
                    }
                )));
            }
            let fk = self.robot.tree.forward_kinematics(&self.current);
            fk[link].inverse() * in_plan
        };
        let object = AttachedObject {
            id: req.id.clone(),
            link: link_name,
            shape,
            pose,
            touch_links: req.touch_links.clone(),
        };
        let robot = self
            .robot
            .with_attached(std::slice::from_ref(&object))
            .map_err(|e| bad(e.to_string()))?;
        if in_scene.is_some() {
            self.scene.remove(&req.id).map_err(|e| bad(e.to_string()))?;
        }
        self.set_robot(robot);
        Ok(())
    }

    /// Detaches object `id`. With `remove` it is dropped; otherwise it goes back into the
    /// scene as obstacle `id` where the current joint state holds it (which needs a joint
    /// state). On error nothing changes.
    pub fn detach_object(&mut self, id: &str, remove: bool) -> Result<(), ServiceError> {
        let bad = |reason: String| ServiceError::Attach {
            object: id.to_string(),
            reason,
        };
        let attached = self.robot.attached();
        let Some(index) = attached.iter().position(|a| a.id == id) else {
            let names: Vec<&str> = attached.iter().map(|a| a.id.as_str()).collect();
            return Err(bad(format!(
                "not attached (attached: {})",
                if names.is_empty() {
                    "none".to_string()
                } else {
                    names.join(", ")
                }
            )));
        };
        let obstacle = if remove {
            None
        } else {
            if !self.has_current {
                return Err(bad(
                    "putting it back into the scene needs the current joint state, and none \
                     has been received yet (or detach with remove)"
                        .into(),
                ));
            }
            let poses = self
                .robot
                .attached_poses(&self.current)
                .map_err(|e| bad(e.to_string()))?;
            let (o, pose) = &poses[index];
            if self.scene.get(id).is_some() {
                return Err(bad(format!(
                    "the scene already has an obstacle '{id}'; detach with remove or delete it first"
                )));
            }
            Some(Obstacle {
                id: o.id.clone(),
                shape: o.shape.clone(),
                pose: *pose,
            })
        };
        let rest: Vec<AttachedObject> = attached.iter().filter(|a| a.id != id).cloned().collect();
        let robot = self
            .base_robot
            .with_attached(&rest)
            .map_err(|e| bad(e.to_string()))?;
        if let Some(o) = obstacle {
            self.scene.add(o).map_err(|e| bad(e.to_string()))?;
        }
        self.set_robot(robot);
        Ok(())
    }

    /// The objects the robot carries.
    pub fn attached_objects(&self) -> &[AttachedObject] {
        self.robot.attached()
    }

    /// One marker per attached object, in the frame of the link that holds it (so that a
    /// viewer following the robot's transforms draws it where the robot carries it), in
    /// namespace [`ATTACHED_NS`] with ids in attach order.
    pub fn attached_markers(&self) -> Vec<MarkerUpdate> {
        self.robot
            .attached()
            .iter()
            .enumerate()
            .map(|(k, o)| {
                let mut m = obstacle_marker(
                    &Obstacle {
                        id: o.id.clone(),
                        shape: o.shape.clone(),
                        pose: o.pose,
                    },
                    &o.link,
                );
                m.ns = ATTACHED_NS.to_string();
                m.id = k as i32;
                m
            })
            .collect()
    }

    /// Replaces the robot (same links, different attached objects): the cached checker and
    /// the persistent roadmap belong to the old one.
    pub(super) fn set_robot(&mut self, robot: crate::robot::RobotModel) {
        self.robot = robot;
        self.robot_changes += 1;
        self.cached = None;
        self.roadmaps.clear();
    }
}
