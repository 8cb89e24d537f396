//! The exact-geometry oracle shared by the tests: parry3d queries on the original meshes
//! and primitives (f64 triangle tests for mesh-mesh self collision), independent of the
//! project's polytope and sphere models.

use gpu_motion_planner::robot::{BodySource, CollisionBody, RobotModel};
use gpu_motion_planner::scene::{Obstacle, Scene, Shape};
use nalgebra::{Isometry3, Point3, UnitQuaternion, Vector3};
use parry3d_f64::math::{Pose, Rotation, Vector};
use parry3d_f64::shape::{Ball, Cuboid, Cylinder, SharedShape, TriMesh};

pub fn to_pose(i: &Isometry3<f64>) -> Pose {
    let t = i.translation.vector;
    let q = i.rotation.coords;
    Pose::from_parts(
        Vector::new(t.x, t.y, t.z),
        Rotation::from_xyzw(q.x, q.y, q.z, q.w),
    )
}

/// Triangles of a mesh file (OBJ via tobj, STL via stl_io), scaled.
pub fn load_triangles(
    path: &std::path::Path,
    scale: &Vector3<f64>,
) -> (Vec<Vector>, Vec<[u32; 3]>) {
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .unwrap_or("")
        .to_lowercase();
    let mut verts = Vec::new();
    let mut tris = Vec::new();
    if ext == "obj" {
        let (models, _) = tobj::load_obj(
            path,
            &tobj::LoadOptions {
                triangulate: true,
                single_index: true,
                ..Default::default()
            },
        )
        .unwrap();
        for m in models {
            let base = verts.len() as u32;
            for p in m.mesh.positions.chunks_exact(3) {
                verts.push(Vector::new(
                    p[0] as f64 * scale.x,
                    p[1] as f64 * scale.y,
                    p[2] as f64 * scale.z,
                ));
            }
            for t in m.mesh.indices.chunks_exact(3) {
                tris.push([base + t[0], base + t[1], base + t[2]]);
            }
        }
    } else {
        let mut f = std::fs::File::open(path).unwrap();
        let mesh = stl_io::read_stl(&mut f).unwrap();
        for v in &mesh.vertices {
            verts.push(Vector::new(
                v[0] as f64 * scale.x,
                v[1] as f64 * scale.y,
                v[2] as f64 * scale.z,
            ));
        }
        for t in &mesh.faces {
            tris.push([
                t.vertices[0] as u32,
                t.vertices[1] as u32,
                t.vertices[2] as u32,
            ]);
        }
    }
    (verts, tris)
}

/// Whether a body stands for its whole URDF collision element in the oracle: every body but
/// the parts after the first of a mesh split into parts.
fn stands_for_its_element(b: &CollisionBody) -> bool {
    !matches!(b.source, BodySource::MeshPart { part, .. } if part > 0)
}

/// The exact shape of each collision body (in its own frame) plus its pose in the link frame;
/// a mesh split into parts is its whole mesh once (with its first part).
pub fn exact_bodies(robot: &RobotModel) -> Vec<(usize, Isometry3<f64>, SharedShape)> {
    robot
        .bodies
        .iter()
        .filter(|b| stands_for_its_element(b))
        .map(|b| {
            let (pose, shape) = match &b.source {
                BodySource::Box { size } => (
                    b.origin,
                    SharedShape::new(Cuboid::new(Vector::new(
                        size.x / 2.0,
                        size.y / 2.0,
                        size.z / 2.0,
                    ))),
                ),
                BodySource::Sphere { radius } => (b.origin, SharedShape::new(Ball::new(*radius))),
                BodySource::Cylinder { radius, length } => (
                    // parry's cylinders stand on y; URDF's on z.
                    b.origin
                        * UnitQuaternion::from_axis_angle(
                            &Vector3::x_axis(),
                            std::f64::consts::FRAC_PI_2,
                        ),
                    SharedShape::new(Cylinder::new(*length / 2.0, *radius)),
                ),
                BodySource::Mesh { path, scale } | BodySource::MeshPart { path, scale, .. } => {
                    let (v, t) = load_triangles(path, scale);
                    (b.origin, SharedShape::new(TriMesh::new(v, t).unwrap()))
                }
                BodySource::Convex { points } => {
                    let pts: Vec<Vector> =
                        points.iter().map(|p| Vector::new(p.x, p.y, p.z)).collect();
                    (b.origin, SharedShape::convex_hull(&pts).unwrap())
                }
            };
            (b.link, pose, shape)
        })
        .collect()
}

pub fn obstacle_shape(o: &Obstacle) -> (Isometry3<f64>, SharedShape) {
    match &o.shape {
        Shape::Box { half_extents } => (
            o.pose,
            SharedShape::new(Cuboid::new(Vector::new(
                half_extents.x,
                half_extents.y,
                half_extents.z,
            ))),
        ),
        Shape::Sphere { radius } => (o.pose, SharedShape::new(Ball::new(*radius))),
        Shape::Cylinder {
            radius,
            half_length,
        } => (
            o.pose
                * UnitQuaternion::from_axis_angle(&Vector3::x_axis(), std::f64::consts::FRAC_PI_2),
            SharedShape::new(Cylinder::new(*half_length, *radius)),
        ),
        Shape::ConvexMesh { polytope } => {
            let pts: Vec<Vector> = polytope
                .vertices
                .iter()
                .map(|p| Vector::new(p.x, p.y, p.z))
                .collect();
            (o.pose, SharedShape::convex_hull(&pts).unwrap())
        }
    }
}

/// Exact (f64) separating-axis test between two triangles: the two normals, the nine edge
/// cross products and, for (near-)coplanar pairs, the in-plane edge normals. parry3d's
/// triangle-triangle query reports thin, nearly coplanar triangles 0.1 mm apart as
/// intersecting, so self-collision between meshes uses this instead.
pub fn triangles_intersect(a: &[Point3<f64>; 3], b: &[Point3<f64>; 3]) -> bool {
    let ea = [a[1] - a[0], a[2] - a[1], a[0] - a[2]];
    let eb = [b[1] - b[0], b[2] - b[1], b[0] - b[2]];
    let na = ea[0].cross(&ea[1]);
    let nb = eb[0].cross(&eb[1]);
    let mut axes = vec![na, nb];
    for x in &ea {
        for y in &eb {
            axes.push(x.cross(y));
        }
        axes.push(na.cross(x));
    }
    for y in &eb {
        axes.push(nb.cross(y));
    }
    for ax in axes {
        if ax.norm_squared() < 1e-30 {
            continue;
        }
        let pa = a.iter().map(|p| p.coords.dot(&ax));
        let pb = b.iter().map(|p| p.coords.dot(&ax));
        let (amin, amax) = pa.fold((f64::MAX, f64::MIN), |(lo, hi), v| (lo.min(v), hi.max(v)));
        let (bmin, bmax) = pb.fold((f64::MAX, f64::MIN), |(lo, hi), v| (lo.min(v), hi.max(v)));
        if amax < bmin || bmax < amin {
            return false;
        }
    }
    true
}

/// Triangles of a body in its link frame (f64), or `None` for primitives.
pub fn body_triangles(robot: &RobotModel) -> Vec<Option<Vec<[Point3<f64>; 3]>>> {
    robot
        .bodies
        .iter()
        .filter(|b| stands_for_its_element(b))
        .map(|b| match &b.source {
            BodySource::Mesh { path, scale } | BodySource::MeshPart { path, scale, .. } => {
                let (v, t) = load_triangles(path, scale);
                let p = |i: u32| {
                    b.origin * Point3::new(v[i as usize].x, v[i as usize].y, v[i as usize].z)
                };
                Some(
                    t.iter()
                        .map(|tri| [p(tri[0]), p(tri[1]), p(tri[2])])
                        .collect(),
                )
            }
            _ => None,
        })
        .collect()
}

pub fn meshes_intersect(
    ta: &[[Point3<f64>; 3]],
    pa: &Isometry3<f64>,
    tb: &[[Point3<f64>; 3]],
    pb: &Isometry3<f64>,
) -> bool {
    let wa: Vec<[Point3<f64>; 3]> = ta
        .iter()
        .map(|t| [pa * t[0], pa * t[1], pa * t[2]])
        .collect();
    let wb: Vec<[Point3<f64>; 3]> = tb
        .iter()
        .map(|t| [pb * t[0], pb * t[1], pb * t[2]])
        .collect();
    let bbox = |t: &[Point3<f64>; 3]| {
        (
            t[0].coords.inf(&t[1].coords).inf(&t[2].coords),
            t[0].coords.sup(&t[1].coords).sup(&t[2].coords),
        )
    };
    let ba: Vec<_> = wa.iter().map(bbox).collect();
    let bb: Vec<_> = wb.iter().map(bbox).collect();
    for (i, x) in wa.iter().enumerate() {
        for (k, y) in wb.iter().enumerate() {
            let (l1, h1) = ba[i];
            let (l2, h2) = bb[k];
            if (0..3).any(|d| h1[d] < l2[d] || h2[d] < l1[d]) {
                continue;
            }
            if triangles_intersect(x, y) {
                return true;
            }
        }
    }
    false
}

/// Two shapes touch or overlap (within a micrometre), in f64. (The f32 build of parry3d
/// answered "intersecting", and a distance of 0, for Panda's hand and link7 against a can
/// 0.6-1.3 mm away on bookshelf_tall #2, hence f64, and positives confirmed by the distance
/// query.)
pub fn intersects(
    p1: &Isometry3<f64>,
    s1: &SharedShape,
    p2: &Isometry3<f64>,
    s2: &SharedShape,
) -> bool {
    let (a, b) = (to_pose(p1), to_pose(p2));
    parry3d_f64::query::intersection_test(&a, s1.as_ref(), &b, s2.as_ref())
        .expect("parry supports the pair")
        .intersecting
        && parry3d_f64::query::distance(&a, s1.as_ref(), &b, s2.as_ref())
            .expect("parry supports the pair")
            .distance
            <= 1e-6
}

/// Oracle verdict for a full state: true = in collision.
pub fn oracle_collides(
    robot: &RobotModel,
    bodies: &[(usize, Isometry3<f64>, SharedShape)],
    tris: &[Option<Vec<[Point3<f64>; 3]>>],
    obstacles: &[(Isometry3<f64>, SharedShape)],
    state: &[f64],
) -> Option<String> {
    let poses = robot.tree.forward_kinematics(state);
    let world: Vec<Isometry3<f64>> = bodies.iter().map(|(l, o, _)| poses[*l] * o).collect();
    for (i, (_, _, s)) in bodies.iter().enumerate() {
        for (k, (op, os)) in obstacles.iter().enumerate() {
            if intersects(&world[i], s, op, os) {
                return Some(format!(
                    "link '{}' with obstacle {k}",
                    robot.tree.links[bodies[i].0].name
                ));
            }
        }
    }
    for i in 0..bodies.len() {
        for k in i + 1..bodies.len() {
            if robot.allowed.is_allowed(bodies[i].0, bodies[k].0) {
                continue;
            }
            let hit = match (&tris[i], &tris[k]) {
                (Some(a), Some(b)) => {
                    intersects(&world[i], &bodies[i].2, &world[k], &bodies[k].2)
                        && meshes_intersect(a, &poses[bodies[i].0], b, &poses[bodies[k].0])
                }
                _ => intersects(&world[i], &bodies[i].2, &world[k], &bodies[k].2),
            };
            if hit {
                return Some(format!(
                    "links '{}' and '{}'",
                    robot.tree.links[bodies[i].0].name, robot.tree.links[bodies[k].0].name
                ));
            }
        }
    }
    None
}

/// Obstacles in exact geometry.
pub type ExactScene = Vec<(Isometry3<f64>, SharedShape)>;

/// A robot in exact geometry, ready for repeated queries.
pub struct ExactRobot<'a> {
    robot: &'a RobotModel,
    bodies: Vec<(usize, Isometry3<f64>, SharedShape)>,
    tris: Vec<Option<Vec<[Point3<f64>; 3]>>>,
}

impl<'a> ExactRobot<'a> {
    /// Loads the robot's meshes.
    pub fn new(robot: &'a RobotModel) -> Self {
        ExactRobot {
            robot,
            bodies: exact_bodies(robot),
            tris: body_triangles(robot),
        }
    }

    /// The scene's obstacles in exact geometry.
    pub fn scene(scene: &Scene) -> ExactScene {
        scene.iter().map(obstacle_shape).collect()
    }

    /// What collides at the full joint state `state`, or `None` when it is free.
    pub fn collides(&self, obstacles: &ExactScene, state: &[f64]) -> Option<String> {
        oracle_collides(self.robot, &self.bodies, &self.tris, obstacles, state)
    }
}
