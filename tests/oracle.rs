//! The polytope checker against an exact oracle: parry3d triangle-mesh queries on the
//! original meshes. No configuration that the oracle finds in collision may be reported free.

mod common;

use gpu_motion_planner::collision::{Checker, CheckerOptions, ConfigBatch, CpuChecker};
use gpu_motion_planner::robot::{BodySource, RobotModel};
use gpu_motion_planner::scene::{Obstacle, Scene, Shape};
use nalgebra::{Isometry3, Point3, UnitQuaternion, Vector3};
use parry3d::math::{Pose, Rotation, Vector};
use parry3d::shape::{Ball, Cuboid, Cylinder, SharedShape, TriMesh};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

fn to_pose(i: &Isometry3<f64>) -> Pose {
    let t = i.translation.vector;
    let q = i.rotation.coords;
    Pose::from_parts(
        Vector::new(t.x as f32, t.y as f32, t.z as f32),
        Rotation::from_xyzw(q.x as f32, q.y as f32, q.z as f32, q.w as f32),
    )
}

/// Triangles of a mesh file (OBJ via tobj, STL via stl_io), scaled.
fn load_triangles(path: &std::path::Path, scale: &Vector3<f64>) -> (Vec<Vector>, Vec<[u32; 3]>) {
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
                    p[0] * scale.x as f32,
                    p[1] * scale.y as f32,
                    p[2] * scale.z as f32,
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
                v[0] * scale.x as f32,
                v[1] * scale.y as f32,
                v[2] * scale.z as f32,
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

/// The exact shape of each collision body (in its own frame) plus its pose in the link frame.
fn exact_bodies(robot: &RobotModel) -> Vec<(usize, Isometry3<f64>, SharedShape)> {
    robot
        .bodies
        .iter()
        .map(|b| {
            let (pose, shape) = match &b.source {
                BodySource::Box { size } => (
                    b.origin,
                    SharedShape::new(Cuboid::new(Vector::new(
                        size.x as f32 / 2.0,
                        size.y as f32 / 2.0,
                        size.z as f32 / 2.0,
                    ))),
                ),
                BodySource::Sphere { radius } => {
                    (b.origin, SharedShape::new(Ball::new(*radius as f32)))
                }
                BodySource::Cylinder { radius, length } => (
                    // parry's cylinders stand on y; URDF's on z.
                    b.origin
                        * UnitQuaternion::from_axis_angle(
                            &Vector3::x_axis(),
                            std::f64::consts::FRAC_PI_2,
                        ),
                    SharedShape::new(Cylinder::new(*length as f32 / 2.0, *radius as f32)),
                ),
                BodySource::Mesh { path, scale } => {
                    let (v, t) = load_triangles(path, scale);
                    (b.origin, SharedShape::new(TriMesh::new(v, t).unwrap()))
                }
            };
            (b.link, pose, shape)
        })
        .collect()
}

fn obstacle_shape(o: &Obstacle) -> (Isometry3<f64>, SharedShape) {
    match &o.shape {
        Shape::Box { half_extents } => (
            o.pose,
            SharedShape::new(Cuboid::new(Vector::new(
                half_extents.x as f32,
                half_extents.y as f32,
                half_extents.z as f32,
            ))),
        ),
        Shape::Sphere { radius } => (o.pose, SharedShape::new(Ball::new(*radius as f32))),
        Shape::Cylinder {
            radius,
            half_length,
        } => (
            o.pose
                * UnitQuaternion::from_axis_angle(&Vector3::x_axis(), std::f64::consts::FRAC_PI_2),
            SharedShape::new(Cylinder::new(*half_length as f32, *radius as f32)),
        ),
        Shape::ConvexMesh { polytope } => {
            let pts: Vec<Vector> = polytope
                .vertices
                .iter()
                .map(|p| Vector::new(p.x as f32, p.y as f32, p.z as f32))
                .collect();
            (o.pose, SharedShape::convex_hull(&pts).unwrap())
        }
    }
}

/// Exact (f64) separating-axis test between two triangles: the two normals, the nine edge
/// cross products and, for (near-)coplanar pairs, the in-plane edge normals. parry3d's f32
/// triangle-triangle query reports thin, nearly coplanar triangles 0.1 mm apart as
/// intersecting, so self-collision between meshes uses this instead.
fn triangles_intersect(a: &[Point3<f64>; 3], b: &[Point3<f64>; 3]) -> bool {
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
fn body_triangles(robot: &RobotModel) -> Vec<Option<Vec<[Point3<f64>; 3]>>> {
    robot
        .bodies
        .iter()
        .map(|b| match &b.source {
            BodySource::Mesh { path, scale } => {
                let (v, t) = load_triangles(path, scale);
                let p = |i: u32| {
                    b.origin
                        * Point3::new(
                            v[i as usize].x as f64,
                            v[i as usize].y as f64,
                            v[i as usize].z as f64,
                        )
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

fn meshes_intersect(
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

fn intersects(
    p1: &Isometry3<f64>,
    s1: &SharedShape,
    p2: &Isometry3<f64>,
    s2: &SharedShape,
) -> bool {
    parry3d::query::intersection_test(&to_pose(p1), s1.as_ref(), &to_pose(p2), s2.as_ref())
        .expect("parry supports the pair")
        .intersecting
}

/// Oracle verdict for a full state: true = in collision.
fn oracle_collides(
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

fn random_scene(rng: &mut ChaCha8Rng, n: usize) -> Scene {
    let mut scene = Scene::new("world");
    for i in 0..n {
        let pose = Isometry3::from_parts(
            Vector3::new(
                rng.random_range(-0.8..0.8),
                rng.random_range(-0.8..0.8),
                rng.random_range(0.0..1.2),
            )
            .into(),
            UnitQuaternion::from_euler_angles(
                rng.random_range(-3.0..3.0),
                rng.random_range(-3.0..3.0),
                rng.random_range(-3.0..3.0),
            ),
        );
        let shape = match i % 3 {
            0 => Shape::Box {
                half_extents: Vector3::new(
                    rng.random_range(0.02..0.2),
                    rng.random_range(0.02..0.2),
                    rng.random_range(0.02..0.2),
                ),
            },
            1 => Shape::Sphere {
                radius: rng.random_range(0.02..0.15),
            },
            _ => Shape::Cylinder {
                radius: rng.random_range(0.02..0.1),
                half_length: rng.random_range(0.05..0.3),
            },
        };
        scene
            .add(Obstacle {
                id: format!("o{i}"),
                shape,
                pose,
            })
            .unwrap();
    }
    scene
}

fn run_oracle(
    robot: &RobotModel,
    group_name: &str,
    seed: u64,
    scenes: usize,
    configs_per_scene: usize,
) -> (usize, usize, usize) {
    let group = robot.group(group_name).unwrap();
    let bodies = exact_bodies(robot);
    let tris = body_triangles(robot);
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let (mut oracle_hits, mut ours_hits, mut total) = (0, 0, 0);
    for _ in 0..scenes {
        let scene = random_scene(&mut rng, 6);
        let obstacles: Vec<_> = scene.iter().map(obstacle_shape).collect();
        let base = robot.tree.neutral_state();
        let checker =
            CpuChecker::new(robot, &group, &base, &scene, CheckerOptions::default()).unwrap();
        let space = &group.space;
        let mut batch = ConfigBatch::new(space.dof());
        for _ in 0..configs_per_scene {
            let q: Vec<f64> = (0..space.dof())
                .map(|j| rng.random_range(space.lower[j]..=space.upper[j]))
                .collect();
            batch.push(&q).unwrap();
        }
        let ours = checker.check_configs(&batch).unwrap();
        for (i, q) in batch.rows().enumerate() {
            let state = group.full_state(&base, q);
            let oracle = oracle_collides(robot, &bodies, &tris, &obstacles, &state);
            total += 1;
            if let Some(pair) = oracle {
                oracle_hits += 1;
                assert!(!ours[i], "configuration {q:?}: {pair} collide under the exact meshes but the polytope checker says free");
            }
            if !ours[i] {
                ours_hits += 1;
            }
        }
    }
    (oracle_hits, ours_hits, total)
}

#[test]
fn polytope_checker_is_conservative_on_bundled_arm() {
    let robot = RobotModel::from_urdf_file(
        &common::root().join("urdf/gmp_arm.urdf"),
        Some(&common::root().join("urdf/gmp_arm.srdf")),
        &Default::default(),
    )
    .unwrap();
    let (oracle, ours, total) = run_oracle(&robot, "arm", 11, 20, 100);
    eprintln!("gmp_arm: oracle collisions {oracle}, polytope collisions {ours}, of {total}");
    assert!(
        oracle > 100,
        "the random scenes must produce collisions to make the test meaningful"
    );
    assert!(ours >= oracle);
}

#[test]
fn polytope_checker_is_conservative_on_panda_meshes() {
    let Some(data) = common::mbm_or_skip("polytope_checker_is_conservative_on_panda_meshes") else {
        return;
    };
    let robot = RobotModel::from_urdf_file(
        &data.join("panda/panda.urdf"),
        Some(&data.join("panda/panda.srdf")),
        &Default::default(),
    )
    .unwrap();
    let (oracle, ours, total) = run_oracle(&robot, "panda_arm", 12, 10, 100);
    eprintln!("panda: oracle collisions {oracle}, polytope collisions {ours}, of {total}");
    assert!(
        oracle > 50,
        "the random scenes must produce collisions to make the test meaningful"
    );
    // The hull model may only add collisions; it should not add absurdly many.
    assert!(ours >= oracle);
}

#[test]
fn polytope_checker_is_conservative_on_ur5_and_fetch_meshes() {
    let Some(data) =
        common::mbm_or_skip("polytope_checker_is_conservative_on_ur5_and_fetch_meshes")
    else {
        return;
    };
    for (name, group) in [("ur5", "manipulator"), ("fetch", "arm_with_torso")] {
        let robot = RobotModel::from_urdf_file(
            &data.join(format!("{name}/{name}.urdf")),
            Some(&data.join(format!("{name}/{name}.srdf"))),
            &Default::default(),
        )
        .unwrap();
        let (oracle, ours, total) = run_oracle(&robot, group, 13, 5, 60);
        eprintln!("{name}: oracle collisions {oracle}, polytope collisions {ours}, of {total}");
        assert!(oracle > 20);
    }
}

#[test]
fn touching_and_separated_boxes_near_the_margin() {
    // A box obstacle placed exactly against link2 of test_arm3 is in collision; moved 1 mm away
    // it is free.
    let robot = RobotModel::from_urdf_file(
        &common::root().join("urdf/test_arm3.urdf"),
        None,
        &Default::default(),
    )
    .unwrap();
    let group = robot
        .group_from_joints(&["joint1", "joint2", "joint3"])
        .unwrap();
    // link2's box spans z in [0.37, 0.43] at q = 0; place a slab on top of it.
    for (gap, expect_free) in [(0.0, false), (-0.001, false), (0.001, true)] {
        let mut scene = Scene::new("world");
        let top = 0.43 + gap + 0.01;
        scene
            .add(Obstacle {
                id: "slab".into(),
                shape: Shape::Box {
                    half_extents: Vector3::new(0.05, 0.05, 0.01),
                },
                pose: Isometry3::translation(0.2, 0.0, top),
            })
            .unwrap();
        let checker = CpuChecker::new(
            &robot,
            &group,
            &robot.tree.neutral_state(),
            &scene,
            CheckerOptions::default(),
        )
        .unwrap();
        let v = checker.check_config(&[0.0, 0.0, 0.0]).unwrap();
        assert_eq!(v, expect_free, "gap {gap}");
    }
    let _ = Point3::<f64>::origin();
}

#[test]
fn a_thin_pole_between_two_checked_configurations_is_found() {
    // Joint 1 of test_arm3 sweeps link3 (radius 0.4..0.7 from the z axis, height 0.4) from
    // 0.6 to 1.1 rad past a thin pole at 0.85 rad. At resolution 0.5 the motion has a single
    // segment: both checked configurations are far from the pole, so a discrete check would
    // call the motion free; the sweep bound must not.
    let robot = RobotModel::from_urdf_file(
        &common::root().join("urdf/test_arm3.urdf"),
        None,
        &Default::default(),
    )
    .unwrap();
    let group = robot
        .group_from_joints(&["joint1", "joint2", "joint3"])
        .unwrap();
    let mut scene = Scene::new("world");
    let a: f64 = 0.85;
    scene
        .add(Obstacle {
            id: "pole".into(),
            shape: Shape::Cylinder {
                radius: 0.005,
                half_length: 0.1,
            },
            pose: Isometry3::translation(0.55 * a.cos(), 0.55 * a.sin(), 0.4),
        })
        .unwrap();
    let checker = CpuChecker::new(
        &robot,
        &group,
        &robot.tree.neutral_state(),
        &scene,
        CheckerOptions::default(),
    )
    .unwrap();
    assert!(checker.check_config(&[0.6, 0.0, 0.0]).unwrap());
    assert!(checker.check_config(&[1.1, 0.0, 0.0]).unwrap());
    assert!(
        !checker.check_config(&[0.85, 0.0, 0.0]).unwrap(),
        "the pole is in link3's way"
    );
    let mut m = gpu_motion_planner::collision::MotionBatch::new(3);
    m.push(&[0.6, 0.0, 0.0], &[1.1, 0.0, 0.0]).unwrap();
    // Same joints, swept away from the pole: free, proven after refinement.
    m.push(&[-0.6, 0.0, 0.0], &[-1.1, 0.0, 0.0]).unwrap();
    assert_eq!(checker.check_motions(&m, 0.5).unwrap(), vec![false, true]);
}
