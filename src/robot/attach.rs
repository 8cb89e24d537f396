//! Objects carried by the robot (a grasped part, a tool): each becomes a link of its own (its
//! frame the object's frame), fixed to the link that holds it, so that every collision backend checks it like any other
//! body — against the obstacles and against the robot's other links.
//!
//! Allowed pairs follow MoveIt's attached collision objects: an object may touch the link
//! that holds it and the links listed as its `touch_links` (a gripper's fingers), nothing
//! else. The rules that allow adjacent and rigidly connected links are not applied to it: a
//! long part held by the hand can hit the forearm, which is one joint away from the hand.

use nalgebra::{Isometry3, Point3};

use super::geometry::Polytope;
use super::load::{
    BodySource, CollisionBody, RobotModel, COVERING_SPHERES, CYLINDER_SEGMENTS, SPHERE_SUBDIVISIONS,
};
use super::spheres::{Sphere, SphereSet};
use super::spherize::{fit_polytope, SphereFit};
use super::{AllowedReason, RobotError};
use crate::scene::Shape;

/// An object rigidly attached to a link of the robot.
#[derive(Clone, Debug, PartialEq)]
pub struct AttachedObject {
    /// The object's name; it also names the link the object becomes (so it must differ from
    /// the robot's link names).
    pub id: String,
    /// The link that holds it.
    pub link: String,
    /// The geometry, in the object's frame (the scene's shapes).
    pub shape: Shape,
    /// The object's frame in the holding link's frame.
    pub pose: Isometry3<f64>,
    /// Links the object may touch besides the holding link (e.g. the fingers).
    pub touch_links: Vec<String>,
}

/// The joint that fixes attached object `id` to its link.
pub fn attach_joint_name(id: &str) -> String {
    format!("{id}/attach")
}

/// The object's geometry as a collision body of its own link `link`, whose frame is the
/// object's frame (polytope and covering spheres in it), with the source an exact oracle can
/// rebuild.
fn object_body(link: usize, obj: &AttachedObject) -> Result<CollisionBody, RobotError> {
    let geo = |e: super::geometry::GeometryError| RobotError::Geometry {
        link: obj.id.clone(),
        message: e.to_string(),
    };
    let (source, local) = match &obj.shape {
        Shape::Box { half_extents } => (
            BodySource::Box {
                size: half_extents * 2.0,
            },
            Polytope::from_box(*half_extents).map_err(geo)?,
        ),
        Shape::Sphere { radius } => (
            BodySource::Sphere { radius: *radius },
            Polytope::from_sphere(*radius, SPHERE_SUBDIVISIONS).map_err(geo)?,
        ),
        Shape::Cylinder {
            radius,
            half_length,
        } => (
            BodySource::Cylinder {
                radius: *radius,
                length: 2.0 * half_length,
            },
            Polytope::from_cylinder(*radius, 2.0 * half_length, CYLINDER_SEGMENTS).map_err(geo)?,
        ),
        Shape::ConvexMesh { polytope } => (
            BodySource::Convex {
                points: polytope.vertices.clone(),
            },
            polytope.clone(),
        ),
    };
    let polytope = local;
    let covering = SphereSet::covering(&polytope, COVERING_SPHERES);
    Ok(CollisionBody {
        link,
        origin: Isometry3::identity(),
        source,
        polytope,
        covering,
    })
}

impl RobotModel {
    /// Attaches `obj` to the link it names. On error (unknown link or touch link, a name
    /// already taken, a shape or pose that is not valid) the model is unchanged.
    ///
    /// When the model has a sphere model ([`RobotModel::spherized`]), the object gets spheres
    /// too: a sphere is its own, other shapes are covered by [`fit_polytope`] with the default
    /// [`SphereFit`].
    pub fn attach(&mut self, obj: &AttachedObject) -> Result<(), RobotError> {
        let named = |message: String| RobotError::Geometry {
            link: obj.id.clone(),
            message,
        };
        if obj.id.is_empty() {
            return Err(RobotError::Model("an attached object needs an id".into()));
        }
        obj.shape.validate().map_err(named)?;
        let t = obj.pose.translation.vector;
        let q = obj.pose.rotation.quaternion().norm();
        if !(t.iter().all(|v| v.is_finite()) && (q - 1.0).abs() <= 1e-6) {
            return Err(named(format!(
                "pose in link '{}' is not finite or not a rotation",
                obj.link
            )));
        }
        let parent = self.tree.link(&obj.link)?;
        let touch: Vec<usize> = obj
            .touch_links
            .iter()
            .map(|l| self.tree.link(l))
            .collect::<Result<_, _>>()?;
        let body_link = self.tree.links.len();
        let body = object_body(body_link, obj)?;
        let spheres: Vec<Sphere> = match (&self.spherized, &obj.shape) {
            (None, _) => Vec::new(),
            (Some(_), Shape::Sphere { radius }) => vec![Sphere {
                center: Point3::origin(),
                radius: *radius,
            }],
            (Some(_), _) => fit_polytope(&body.polytope, &SphereFit::default()).spheres,
        };
        // Everything that can fail has been checked; the link is added last.
        let mut tree = self.tree.clone();
        let link = tree.add_fixed_link(parent, &obj.id, &attach_joint_name(&obj.id), obj.pose)?;
        debug_assert_eq!(link, body_link);
        self.tree = tree;
        self.bodies.push(body);
        if let Some(s) = &mut self.spherized {
            s.extend(spheres.into_iter().map(|sp| (link, sp)));
        }
        self.allowed.insert(parent, link, AllowedReason::Attached);
        for l in touch {
            self.allowed.insert(l, link, AllowedReason::Attached);
        }
        self.attached.push(obj.clone());
        Ok(())
    }

    /// A copy of this model carrying `objects` as well (attached in order).
    pub fn with_attached(&self, objects: &[AttachedObject]) -> Result<RobotModel, RobotError> {
        let mut out = self.clone();
        for o in objects {
            out.attach(o)?;
        }
        Ok(out)
    }

    /// The objects the robot carries, in the order they were attached.
    pub fn attached(&self) -> &[AttachedObject] {
        &self.attached
    }

    /// Where each attached object is in the root frame for a full state: `(object, pose of
    /// its frame)`. The object's link has the object's frame, so a pose goal or a Cartesian
    /// path for link `id` moves the object itself.
    pub fn attached_poses(
        &self,
        state: &[f64],
    ) -> Result<Vec<(&AttachedObject, Isometry3<f64>)>, RobotError> {
        if state.len() != self.tree.num_variables() {
            return Err(RobotError::Model(format!(
                "state has {} values, the robot has {} variables",
                state.len(),
                self.tree.num_variables()
            )));
        }
        let fk = self.tree.forward_kinematics(state);
        self.attached
            .iter()
            .map(|o| Ok((o, fk[self.tree.link(&o.id)?])))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collision::{Checker, CheckerOptions, ConfigBatch, CpuChecker, RobotShapes};
    use crate::robot::LoadOptions;
    use crate::scene::{Obstacle, Scene};
    use nalgebra::Vector3;

    fn arm() -> RobotModel {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("urdf");
        RobotModel::from_urdf_file(
            &dir.join("gmp_arm.urdf"),
            Some(&dir.join("gmp_arm.srdf")),
            &LoadOptions::default(),
        )
        .expect("bundled arm")
    }

    /// A 30 cm bar held by the tool flange, along the tool's z axis.
    fn bar(touch: &[&str]) -> AttachedObject {
        AttachedObject {
            id: "bar".into(),
            link: "tool0".into(),
            shape: Shape::Box {
                half_extents: Vector3::new(0.02, 0.02, 0.15),
            },
            pose: Isometry3::translation(0.0, 0.0, 0.15),
            touch_links: touch.iter().map(|s| s.to_string()).collect(),
        }
    }

    fn free(robot: &RobotModel, scene: &Scene, shapes: RobotShapes, q: &[f64]) -> bool {
        let group = robot.group("arm").expect("group");
        let base = robot.tree.neutral_state();
        let opts = CheckerOptions {
            shapes,
            ..Default::default()
        };
        let checker = CpuChecker::new(robot, &group, &base, scene, opts).expect("checker");
        let batch = ConfigBatch::from_rows(q.len(), &[q]).expect("batch");
        checker.check_configs(&batch).expect("check")[0]
    }

    #[test]
    fn the_object_becomes_a_link_with_only_its_touch_links_allowed() {
        let base = arm();
        let robot = base
            .with_attached(&[bar(&["flange_link"])])
            .expect("attach");
        let t = &robot.tree;
        let obj = t.link("bar").expect("object link");
        assert_eq!(t.links.len(), base.tree.links.len() + 1);
        assert_eq!(t.num_variables(), base.tree.num_variables());
        assert_eq!(robot.bodies.len(), base.bodies.len() + 1);
        assert_eq!(robot.attached().len(), 1);
        let j = t.joint(&attach_joint_name("bar")).expect("joint");
        assert_eq!(t.joints[j].parent, t.link("tool0").expect("tool0"));
        // Holding link and touch link allowed; the wrist, two joints away but rigidly...
        assert!(robot
            .allowed
            .is_allowed(obj, t.link("tool0").expect("tool0")));
        assert!(robot
            .allowed
            .is_allowed(obj, t.link("flange_link").expect("flange")));
        // ... one moving joint from the flange is not: a held part can hit it.
        assert!(!robot
            .allowed
            .is_allowed(obj, t.link("wrist_2_link").expect("wrist")));
        assert!(!robot
            .allowed
            .is_allowed(obj, t.link("forearm_link").expect("forearm")));
        // The object moves with the tool.
        let q = robot.tree.neutral_state();
        let poses = robot.attached_poses(&q).expect("poses");
        let fk = robot.tree.forward_kinematics(&q);
        let tool = fk[t.link("tool0").expect("tool0")];
        assert!(
            ((tool * Isometry3::translation(0.0, 0.0, 0.15))
                .translation
                .vector
                - poses[0].1.translation.vector)
                .norm()
                < 1e-12
        );
    }

    #[test]
    fn bad_attachments_are_refused_and_change_nothing() {
        let mut robot = arm();
        let links = robot.tree.links.len();
        let mut o = bar(&[]);
        o.link = "no_such_link".into();
        assert!(robot
            .attach(&o)
            .unwrap_err()
            .to_string()
            .contains("no_such_link"));
        let mut o = bar(&["nope"]);
        o.touch_links = vec!["nope".into()];
        assert!(robot.attach(&o).unwrap_err().to_string().contains("nope"));
        let mut o = bar(&[]);
        o.id = "forearm_link".into();
        assert!(robot
            .attach(&o)
            .unwrap_err()
            .to_string()
            .contains("forearm_link"));
        let mut o = bar(&[]);
        o.shape = Shape::Sphere { radius: -1.0 };
        assert!(robot.attach(&o).unwrap_err().to_string().contains("bar"));
        assert_eq!(robot.tree.links.len(), links);
        assert_eq!(robot.bodies.len(), arm().bodies.len());
        assert!(robot.attached().is_empty());
        robot.attach(&bar(&[])).expect("attach");
        // The same id twice.
        assert!(robot.attach(&bar(&[])).is_err());
        assert_eq!(robot.attached().len(), 1);
    }

    #[test]
    fn the_object_collides_with_obstacles_and_with_the_robot() {
        let base = arm();
        let q = vec![0.0; 6];
        // At the home configuration the arm points straight up: tool0 at z 1.23, the bar
        // above it up to z 1.53. A ball at z 1.45 touches the bar only.
        let fk = base.tree.forward_kinematics(&base.tree.neutral_state());
        let tool_z = fk[base.tree.link("tool0").expect("tool0")]
            .translation
            .vector
            .z;
        let mut scene = Scene::new("world");
        scene
            .add(Obstacle {
                id: "ball".into(),
                shape: Shape::Sphere { radius: 0.05 },
                pose: Isometry3::translation(0.0, 0.0, tool_z + 0.22),
            })
            .expect("ball");
        for shapes in [RobotShapes::Polytopes, RobotShapes::Spheres] {
            let mut plain = base.clone();
            plain.spherized = Some(crate::robot::spherize::fit_robot(
                &plain,
                &Default::default(),
            ));
            assert!(free(&plain, &scene, shapes, &q), "{shapes:?}: arm alone");
            let held = plain
                .with_attached(&[bar(&["flange_link"])])
                .expect("attach");
            assert!(
                !free(&held, &scene, shapes, &q),
                "{shapes:?}: bar in the ball"
            );
            assert!(
                free(&held, &Scene::new("world"), shapes, &q),
                "{shapes:?}: bar alone"
            );
        }
        // Without the flange as a touch link the bar, which starts on the flange's face,
        // touches it in every configuration.
        let held = base.with_attached(&[bar(&[])]).expect("attach");
        assert!(!free(
            &held,
            &Scene::new("world"),
            RobotShapes::Polytopes,
            &q
        ));
        // Folding the wrist back brings a long bar into the forearm: a self collision.
        let mut long = bar(&["flange_link"]);
        long.shape = Shape::Box {
            half_extents: Vector3::new(0.02, 0.02, 0.3),
        };
        long.pose = Isometry3::translation(0.0, 0.0, 0.3);
        let held = base.with_attached(&[long]).expect("attach");
        // In an empty scene a collision of the held bar where the arm alone is free is the
        // bar against the arm: elbow and wrist folded (found by a grid search).
        let empty = Scene::new("world");
        let folded = [0.0, 0.0, 2.0, 0.0, 2.0, 0.0];
        assert!(free(&base, &empty, RobotShapes::Polytopes, &folded));
        assert!(!free(&held, &empty, RobotShapes::Polytopes, &folded));
    }
}
