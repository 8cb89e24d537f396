//! Diagnosis of the collision models on MotionBenchMaker problems (a measuring tool, not a
//! test): for random configurations of a problem (uniform in the joint limits, near the start
//! and goal, and along the straight start-goal line) it compares the verdicts of the polytope
//! model (convex hulls of the URDF collision meshes) and the sphere model (the spherized URDF,
//! VAMP's) with the exact distance of the collision *meshes* themselves (triangle meshes,
//! parry3d) to the obstacles, and names the bodies whose hull touches an obstacle that their
//! mesh keeps clear of.
//!
//! `cargo run --release --example mbm_model_diag -- ROBOT SCENE INDEX[,INDEX...] [SAMPLES]`
//! (SAMPLES 0: only the start and goal, each with its self-collision pairs; env
//! `DIAG_VERBOSE=1`: every mesh contact; `DIAG_DUMP=1`: with the vertices; `DIAG_BOXES=1`:
//! bounding boxes of each body's mesh and hull).

use std::collections::BTreeMap;
use std::error::Error;

use gpu_motion_planner::collision::{
    make_checker, CheckerOptions, ConfigBatch, CpuChecker, RobotShapes,
};
use gpu_motion_planner::mbm;
use gpu_motion_planner::robot::BodySource;
use gpu_motion_planner::scene::{Scene, Shape};
use nalgebra::Isometry3;
use parry3d::math::{Pose3, Rot3, Vec3};
use parry3d::shape::{Ball, ConvexPolyhedron, Cuboid, Cylinder, SharedShape, TriMesh};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

fn pose(iso: &Isometry3<f64>) -> Pose3 {
    let t = iso.translation.vector;
    let q = iso.rotation.quaternion();
    Pose3::from_parts(
        Vec3::new(t.x as f32, t.y as f32, t.z as f32),
        Rot3::from_xyzw(q.i as f32, q.j as f32, q.k as f32, q.w as f32),
    )
}

/// A body's exact mesh and its hull, in the link frame.
struct BodyShapes {
    link: usize,
    name: String,
    mesh: SharedShape,
    /// Pose of `mesh` in the link frame (mesh vertices are already in the link frame; a
    /// sphere element sits at its origin).
    mesh_offset: Pose3,
    hull: SharedShape,
}

fn body_shapes(r: &mbm::MbmRobot) -> Result<Vec<BodyShapes>, Box<dyn Error>> {
    let mut out = Vec::new();
    for b in &r.model.bodies {
        let name = r.model.tree.links[b.link].name.clone();
        let hull_pts: Vec<Vec3> = b
            .polytope
            .vertices
            .iter()
            .map(|p| Vec3::new(p.x as f32, p.y as f32, p.z as f32))
            .collect();
        let hull = SharedShape::new(
            ConvexPolyhedron::from_convex_hull(&hull_pts).ok_or("hull of a body failed")?,
        );
        let mesh = match &b.source {
            BodySource::Mesh { path, scale } => {
                let mut f = std::fs::File::open(path)?;
                let m = stl_io::read_stl(&mut f)?;
                let verts: Vec<Vec3> = m
                    .vertices
                    .iter()
                    .map(|v| {
                        let p = b.origin
                            * nalgebra::Point3::new(
                                v[0] as f64 * scale.x,
                                v[1] as f64 * scale.y,
                                v[2] as f64 * scale.z,
                            );
                        Vec3::new(p.x as f32, p.y as f32, p.z as f32)
                    })
                    .collect();
                let idx: Vec<[u32; 3]> = m
                    .faces
                    .iter()
                    .map(|f| {
                        [
                            f.vertices[0] as u32,
                            f.vertices[1] as u32,
                            f.vertices[2] as u32,
                        ]
                    })
                    .collect();
                SharedShape::new(TriMesh::new(verts, idx)?)
            }
            BodySource::Sphere { radius } => {
                // A sphere element: exact as a ball at the element's origin; the hull is already
                // in the link frame, so the ball gets the origin as an offset below.
                SharedShape::new(Ball::new(*radius as f32))
            }
            _ => hull.clone(),
        };
        let mesh_offset = if matches!(b.source, BodySource::Sphere { .. }) {
            pose(&b.origin)
        } else {
            Pose3::IDENTITY
        };
        out.push(BodyShapes {
            link: b.link,
            name,
            mesh,
            mesh_offset,
            hull,
        });
    }
    Ok(out)
}

fn obstacle_shapes(scene: &Scene) -> Vec<(String, Pose3, SharedShape)> {
    let mut v = Vec::new();
    for o in scene.iter() {
        let p = pose(&o.pose);
        match &o.shape {
            Shape::Box { half_extents } => v.push((
                o.id.clone(),
                p,
                SharedShape::new(Cuboid::new(Vec3::new(
                    half_extents.x as f32,
                    half_extents.y as f32,
                    half_extents.z as f32,
                ))),
            )),
            Shape::Sphere { radius } => {
                v.push((o.id.clone(), p, SharedShape::new(Ball::new(*radius as f32))))
            }
            Shape::Cylinder {
                radius,
                half_length,
            } => {
                // parry's cylinder runs along y; ours along z.
                let turn = Pose3::from_rotation(Rot3::from_rotation_x(std::f32::consts::FRAC_PI_2));
                v.push((
                    o.id.clone(),
                    p * turn,
                    SharedShape::new(Cylinder::new(*half_length as f32, *radius as f32)),
                ))
            }
            Shape::ConvexMesh { polytope } => {
                let pts: Vec<Vec3> = polytope
                    .vertices
                    .iter()
                    .map(|q| Vec3::new(q.x as f32, q.y as f32, q.z as f32))
                    .collect();
                if let Some(c) = ConvexPolyhedron::from_convex_hull(&pts) {
                    v.push((o.id.clone(), p, SharedShape::new(c)));
                }
            }
        }
    }
    v
}

#[derive(Default)]
struct Counts {
    n: usize,
    poly_bad: usize,
    poly_self: usize,
    sph_bad: usize,
    sph_self: usize,
    mesh_obs: usize,
    /// Polytope model says collision, the meshes are clear of obstacles and the polytope
    /// model sees no self collision: a collision of a hull only.
    hull_only: usize,
    /// ... and the sphere model says free.
    hull_only_sph_free: usize,
    /// Polytope model free but a mesh touches an obstacle (would be a correctness bug).
    poly_free_mesh_hit: usize,
    /// Sphere model free but a mesh touches an obstacle (VAMP's model is not conservative).
    sph_free_mesh_hit: usize,
    /// Sphere model says collision with obstacles while meshes are clear.
    sph_only: usize,
    /// Polytope model self collision while no checked pair's meshes touch.
    self_hull_only: usize,
}

fn main() -> Result<(), Box<dyn Error>> {
    let args: Vec<String> = std::env::args().collect();
    let robot = args.get(1).map_or("fetch", |s| s.as_str());
    let scene_name = args.get(2).map_or("bookshelf_thin", |s| s.as_str());
    let indices: Vec<usize> = args
        .get(3)
        .map_or("1", |s| s.as_str())
        .split(',')
        .filter_map(|x| x.parse().ok())
        .collect();
    let samples: usize = args.get(4).and_then(|s| s.parse().ok()).unwrap_or(1000);
    let data = mbm::data_dir()?;
    let r = mbm::load_robot(&data, robot)?;
    let problems = mbm::load_problems(&data, robot)?;
    if std::env::var("DIAG_BOXES").is_ok() {
        return compare_boxes(&r);
    }
    let bodies = body_shapes(&r)?;
    let space = r.group.space.clone();
    let dof = space.dof();
    let mut culprits: BTreeMap<String, usize> = BTreeMap::new();
    let mut sphere_culprit_links: BTreeMap<String, usize> = BTreeMap::new();
    let mut self_culprits: BTreeMap<String, usize> = BTreeMap::new();
    let mut self_mesh_pairs: BTreeMap<String, usize> = BTreeMap::new();
    for p in problems
        .iter()
        .filter(|p| p.scene_name == scene_name && indices.contains(&p.index))
    {
        let base = r.start_full_state(p);
        let (start, goal) = r.start_goal(p)?;
        let empty = Scene::new(p.scene.frame());
        let opts = |shapes| CheckerOptions {
            shapes,
            threads: 1,
            ..Default::default()
        };
        let poly = make_checker(
            "cpu",
            &r.model,
            &r.group,
            &base,
            &p.scene,
            opts(RobotShapes::Polytopes),
        )?;
        let poly_e = make_checker(
            "cpu",
            &r.model,
            &r.group,
            &base,
            &empty,
            opts(RobotShapes::Polytopes),
        )?;
        let sph = make_checker(
            "cpu",
            &r.model,
            &r.group,
            &base,
            &p.scene,
            opts(RobotShapes::Spheres),
        )?;
        let sph_e = make_checker(
            "cpu",
            &r.model,
            &r.group,
            &base,
            &empty,
            opts(RobotShapes::Spheres),
        )?;
        let obstacles = obstacle_shapes(&p.scene);
        let self_pairs: Vec<[u32; 2]> = CpuChecker::new(
            &r.model,
            &r.group,
            &base,
            &empty,
            opts(RobotShapes::Polytopes),
        )?
        .model()
        .self_pairs
        .clone();
        let mut rng = ChaCha8Rng::seed_from_u64(p.index as u64);
        let mut qs: Vec<Vec<f64>> = Vec::new();
        for k in 0..samples {
            let q: Vec<f64> = match k % 3 {
                0 => (0..dof)
                    .map(|j| rng.random_range(space.lower[j]..=space.upper[j]))
                    .collect(),
                1 | 2 => {
                    let c = if k % 3 == 1 { &start } else { &goal };
                    (0..dof)
                        .map(|j| {
                            let v = c[j] + rng.random_range(-0.4..=0.4);
                            v.clamp(space.lower[j], space.upper[j])
                        })
                        .collect()
                }
                _ => unreachable!(),
            };
            qs.push(q);
        }
        let ends_only = samples == 0;
        if ends_only {
            qs.push(start.clone());
            qs.push(goal.clone());
        } else {
            for k in 0..=100 {
                let mut q = vec![0.0; dof];
                space.interpolate(&start, &goal, k as f64 / 100.0, &mut q);
                qs.push(q);
            }
        }
        let batch = ConfigBatch::from_rows(dof, &qs)?;
        let vp = poly.check_configs(&batch)?;
        let vpe = poly_e.check_configs(&batch)?;
        let vs = sph.check_configs(&batch)?;
        let vse = sph_e.check_configs(&batch)?;
        let mut c = Counts::default();
        let mut min_clear_poly_bad = f32::INFINITY;
        let mut max_clear_poly_bad = 0.0f32;
        for (i, q) in qs.iter().enumerate() {
            c.n += 1;
            let state = r.group.full_state(&base, q);
            let links = r.model.tree.forward_kinematics(&state);
            let mut mesh_min = f32::INFINITY;
            let mut hull_hits = Vec::new();
            for b in &bodies {
                let lp = pose(&links[b.link]);
                let mp = lp * b.mesh_offset;
                for (oid, op, os) in &obstacles {
                    let dm = parry3d::query::distance(&mp, b.mesh.as_ref(), op, os.as_ref())
                        .map_or(0.0, |d| d.distance);
                    mesh_min = mesh_min.min(dm);
                    let dh = parry3d::query::distance(&lp, b.hull.as_ref(), op, os.as_ref())
                        .map_or(0.0, |d| d.distance);
                    if std::env::var("DIAG_VERBOSE").is_ok() && dm <= 1e-4 {
                        let tri_min = b
                            .mesh
                            .as_trimesh()
                            .map(|t| {
                                t.triangles()
                                    .map(|tr| {
                                        parry3d::query::distance(&mp, &tr, op, os.as_ref())
                                            .map_or(-1.0, |d| d.distance)
                                    })
                                    .fold(f32::INFINITY, f32::min)
                            })
                            .unwrap_or(f32::NAN);
                        println!(
                            "    config {i}: {} x {oid}: mesh {dm:e} hull {dh:e} (min over triangles {tri_min:e})",
                            b.name
                        );
                        if std::env::var("DIAG_DUMP").is_ok() {
                            let body = r.model.bodies.iter().find(|x| x.link == b.link);
                            if let (Some(body), Some(o)) =
                                (body, p.scene.iter().find(|o| &o.id == oid))
                            {
                                let w: Vec<[f64; 3]> = body
                                    .polytope
                                    .vertices
                                    .iter()
                                    .map(|v| {
                                        let x = links[b.link] * v;
                                        [x.x, x.y, x.z]
                                    })
                                    .collect();
                                let inv: Vec<[f64; 3]> = body
                                    .polytope
                                    .vertices
                                    .iter()
                                    .map(|v| {
                                        let x = o.pose.inverse() * (links[b.link] * v);
                                        [x.x, x.y, x.z]
                                    })
                                    .collect();
                                println!("    DUMP world verts {w:?}");
                                println!("    DUMP verts in obstacle frame {inv:?}");
                                println!("    DUMP obstacle {:?}", o.shape);
                            }
                        }
                    }
                    if dh <= 1e-4 && dm > 1e-4 {
                        hull_hits.push(format!("{} x {oid} (mesh clear by {dm:.4})", b.name));
                    }
                }
            }
            let mesh_hit = mesh_min <= 1e-4;
            let mut self_report = String::new();
            if !vpe[i] {
                // The polytope model sees a self collision: do the meshes of a checked pair touch?
                let mut self_min = f32::INFINITY;
                let mut hull_pairs = Vec::new();
                for pr in &self_pairs {
                    let (ba, bb) = (&bodies[pr[0] as usize], &bodies[pr[1] as usize]);
                    let (pa, pb) = (pose(&links[ba.link]), pose(&links[bb.link]));
                    let dh = parry3d::query::distance(&pa, ba.hull.as_ref(), &pb, bb.hull.as_ref())
                        .map_or(0.0, |d| d.distance);
                    if dh > 1e-4 {
                        continue;
                    }
                    let (ma, mb) = (pa * ba.mesh_offset, pb * bb.mesh_offset);
                    let dm = parry3d::query::distance(&ma, ba.mesh.as_ref(), &mb, bb.mesh.as_ref())
                        .map_or(0.0, |d| d.distance);
                    self_min = self_min.min(dm);
                    if dm <= 1e-4 {
                        *self_mesh_pairs
                            .entry(format!("{} x {}", ba.name, bb.name))
                            .or_default() += 1;
                    }
                    let depth = if dm <= 0.0 {
                        parry3d::query::contact(&ma, ba.mesh.as_ref(), &mb, bb.mesh.as_ref(), 0.0)
                            .ok()
                            .flatten()
                            .map_or(f32::NAN, |c| c.dist)
                    } else {
                        dm
                    };
                    self_report.push_str(&format!(
                        " [{} x {}: hull {dh:.5} mesh {dm:.5} signed {depth:.5}]",
                        ba.name, bb.name
                    ));
                    if dm > 1e-4 {
                        hull_pairs.push(format!("{} x {} ({dm:.4})", ba.name, bb.name));
                    }
                }
                if self_min > 1e-4 {
                    c.self_hull_only += 1;
                    for h in hull_pairs {
                        *self_culprits
                            .entry(h.split(" (").next().unwrap_or("").to_string())
                            .or_default() += 1;
                    }
                }
            }
            c.poly_bad += usize::from(!vp[i]);
            c.poly_self += usize::from(!vpe[i]);
            c.sph_bad += usize::from(!vs[i]);
            c.sph_self += usize::from(!vse[i]);
            c.mesh_obs += usize::from(mesh_hit);
            if !vp[i] && vpe[i] && !mesh_hit {
                c.hull_only += 1;
                c.hull_only_sph_free += usize::from(vs[i]);
                min_clear_poly_bad = min_clear_poly_bad.min(mesh_min);
                max_clear_poly_bad = max_clear_poly_bad.max(mesh_min);
                for h in &hull_hits {
                    let body = h.split(" x ").next().unwrap_or("").to_string();
                    *culprits.entry(body).or_default() += 1;
                }
            }
            if ends_only || (vp[i] && mesh_hit) {
                println!(
                    "  {} {} config {i}: polytopes {} (self {}), spheres {} (self {}), mesh-obstacle distance {mesh_min:.6}; obstacle contacts of hulls only: {hull_hits:?}; self:{self_report}",
                    p.scene_name,
                    p.index,
                    if vp[i] { "free" } else { "collide" },
                    if vpe[i] { "free" } else { "collide" },
                    if vs[i] { "free" } else { "collide" },
                    if vse[i] { "free" } else { "collide" },
                );
            }
            if vp[i] && mesh_hit {
                c.poly_free_mesh_hit += 1;
            }
            if vs[i] && mesh_hit {
                c.sph_free_mesh_hit += 1;
            }
            if !vs[i] && vse[i] && !mesh_hit {
                c.sph_only += 1;
            }
            if !vse[i] && vpe[i] {
                *sphere_culprit_links
                    .entry("sphere self, polytope self free".into())
                    .or_default() += 1;
            }
        }
        println!(
            "{} {}: n {} | poly collide {} (self {}) | spheres collide {} (self {}) | meshes hit obstacles {} | hull-only {} (spheres free on {}; mesh clearance {:.4}..{:.4}) | poly free but mesh hits {} | spheres free but mesh hits {} | spheres-only obstacle {} | self hull-only {}",
            p.scene_name,
            p.index,
            c.n,
            c.poly_bad,
            c.poly_self,
            c.sph_bad,
            c.sph_self,
            c.mesh_obs,
            c.hull_only,
            c.hull_only_sph_free,
            min_clear_poly_bad,
            max_clear_poly_bad,
            c.poly_free_mesh_hit,
            c.sph_free_mesh_hit,
            c.sph_only,
            c.self_hull_only,
        );
    }
    println!(
        "bodies whose hull touches while their mesh is clear (hull-only samples): {culprits:?}"
    );
    println!("{sphere_culprit_links:?}");
    println!("self pairs whose hulls touch while their meshes are clear: {self_culprits:?}");
    println!("self pairs whose meshes touch (polytope self collisions): {self_mesh_pairs:?}");
    Ok(())
}

/// Bounding boxes of each body's mesh (as read here) and hull (as the engine built it).
#[allow(dead_code)]
fn compare_boxes(r: &mbm::MbmRobot) -> Result<(), Box<dyn Error>> {
    for b in &r.model.bodies {
        if let BodySource::Mesh { path, scale } = &b.source {
            let mut f = std::fs::File::open(path)?;
            let m = stl_io::read_stl(&mut f)?;
            let mut lo = [f64::INFINITY; 3];
            let mut hi = [f64::NEG_INFINITY; 3];
            for v in &m.vertices {
                let p = b.origin
                    * nalgebra::Point3::new(
                        v[0] as f64 * scale.x,
                        v[1] as f64 * scale.y,
                        v[2] as f64 * scale.z,
                    );
                for k in 0..3 {
                    lo[k] = lo[k].min(p[k]);
                    hi[k] = hi[k].max(p[k]);
                }
            }
            let mut hlo = [f64::INFINITY; 3];
            let mut hhi = [f64::NEG_INFINITY; 3];
            for p in &b.polytope.vertices {
                for k in 0..3 {
                    hlo[k] = hlo[k].min(p[k]);
                    hhi[k] = hhi[k].max(p[k]);
                }
            }
            println!(
                "{}: mesh {} verts {} tris box {lo:.4?}..{hi:.4?} | hull {} verts box {hlo:.4?}..{hhi:.4?}",
                r.model.tree.links[b.link].name,
                m.vertices.len(),
                m.faces.len(),
                b.polytope.vertices.len()
            );
        }
    }
    Ok(())
}
