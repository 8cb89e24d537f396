//! `gmp bench cloud`: what point clouds cost ([`crate::scene::cloud`]), on the bundled arm
//! and scene.
//!
//! The clouds are synthetic: points drawn uniformly over the surfaces of the bundled scene's
//! obstacles (the polytopes that contain them, built as for URDF bodies; the checker itself
//! treats boxes, spheres and cylinders exactly) and of the robot's collision
//! bodies at its neutral state, in the ratio of their areas, the robot's share cut out again
//! by the self filter. That is the geometry a depth camera sees of this cell (both sides of
//! every obstacle included), not a rendered depth image. Reported, from one run:
//! - per cloud size and voxel edge: the time from points to boxes (self filter included), the
//!   occupied voxels and the boxes;
//! - per voxel edge: configurations/s of the CPU checker on the same random configurations in
//!   the scene's own obstacles and in the cloud's boxes (the ratio of the two), and how often
//!   their verdicts differ each way.
//!
//! Writes `<out>/cloud_<date>.json` and `.md`. A benchmark, not a test: it asserts nothing.

use std::path::PathBuf;
use std::time::Instant;

use clap::Args;
use nalgebra::{Isometry3, Point3};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::{json, Value};

use super::CliError;
use crate::collision::{Checker, CheckerOptions, ConfigBatch, CpuChecker};
use crate::robot::geometry::Polytope;
use crate::robot::{CYLINDER_SEGMENTS, SPHERE_SUBDIVISIONS};
use crate::scene::cloud::{cloud_boxes, cloud_obstacles, CloudSettings, RobotFilter};
use crate::scene::{Obstacle, Scene, Shape};

/// `gmp bench cloud` arguments.
#[derive(Args, Debug, Clone)]
pub struct BenchCloudArgs {
    /// Cloud sizes (points).
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "10000,100000,300000,1000000"
    )]
    pub points: Vec<usize>,
    /// Voxel edges (m).
    #[arg(long, value_delimiter = ',', default_value = "0.02,0.04,0.08")]
    pub resolutions: Vec<f64>,
    /// Random configurations checked per scene.
    #[arg(long, default_value_t = 20000)]
    pub configs: usize,
    /// Seed of the points and configurations.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Results folder (nothing written without it).
    #[arg(long)]
    pub out: Option<PathBuf>,
}

/// A polytope containing an obstacle (as URDF bodies are built), in the scene frame.
fn hull(o: &Obstacle) -> Result<Polytope, CliError> {
    let local = match &o.shape {
        Shape::Box { half_extents } => Polytope::from_box(*half_extents),
        Shape::Sphere { radius } => Polytope::from_sphere(*radius, SPHERE_SUBDIVISIONS),
        Shape::Cylinder {
            radius,
            half_length,
        } => Polytope::from_cylinder(*radius, 2.0 * half_length, CYLINDER_SEGMENTS),
        Shape::ConvexMesh { polytope } => Ok(polytope.clone()),
    }
    .map_err(|e| CliError(format!("obstacle '{}': {e}", o.id)))?;
    Ok(local.transformed(&o.pose))
}

/// `n` points uniform over the surfaces of `hulls` together.
fn surface_points(hulls: &[Polytope], n: usize, rng: &mut ChaCha8Rng) -> Vec<Point3<f64>> {
    let triangles: Vec<[Point3<f64>; 3]> = hulls
        .iter()
        .flat_map(|h| h.faces.iter().map(|f| f.map(|i| h.vertices[i as usize])))
        .collect();
    let mut cumulative = Vec::with_capacity(triangles.len());
    let mut total = 0.0;
    for [a, b, c] in &triangles {
        total += (b - a).cross(&(c - a)).norm() / 2.0;
        cumulative.push(total);
    }
    (0..n)
        .filter_map(|_| {
            let pick = rng.random::<f64>() * total;
            let k = cumulative.partition_point(|&c| c < pick);
            let [a, b, c] = triangles.get(k.min(triangles.len().saturating_sub(1)))?;
            let (mut u, mut v) = (rng.random::<f64>(), rng.random::<f64>());
            if u + v > 1.0 {
                (u, v) = (1.0 - u, 1.0 - v);
            }
            Some(a + (b - a) * u + (c - a) * v)
        })
        .collect()
}

/// Runs `gmp bench cloud`.
pub fn run(a: &BenchCloudArgs) -> Result<Value, CliError> {
    if a.points.is_empty() || a.resolutions.is_empty() || a.configs == 0 {
        return Err(CliError(
            "--points, --resolutions and --configs need at least one value each".into(),
        ));
    }
    let (robot, scene) = super::demo::bundled()?;
    let group = robot.default_group();
    let base = robot.tree.neutral_state();
    let mut rng = ChaCha8Rng::seed_from_u64(a.seed);
    let obstacles: Vec<Polytope> = scene.iter().map(hull).collect::<Result<_, _>>()?;
    let frames = robot.tree.forward_kinematics(&base);
    let bodies: Vec<Polytope> = robot
        .bodies
        .iter()
        .filter_map(|b| Some(b.polytope.transformed(frames.get(b.link)?)))
        .collect();
    let mut both = obstacles.clone();
    both.extend(bodies);
    let filter = RobotFilter::new(&robot, &base, CloudSettings::default().padding);
    let biggest = a.points.iter().copied().max().unwrap_or(0);
    let all_points = surface_points(&both, biggest, &mut rng);
    let boxes_of = |points: &[Point3<f64>], resolution: f64| {
        let settings = CloudSettings {
            resolution,
            max_range: 0.0,
            ..CloudSettings::default()
        };
        cloud_boxes(points, &Isometry3::identity(), Some(&filter), &settings)
            .map_err(|e| CliError(format!("--resolutions {resolution}: {e}")))
    };

    let mut md = String::from(
        "| points | voxel (m) | points to boxes (ms) | on the robot | voxels | boxes |\n|---|---|---|---|---|---|\n",
    );
    let mut processing = Vec::new();
    for &n in &a.points {
        let points = &all_points[..n.min(all_points.len())];
        for &resolution in &a.resolutions {
            let t = Instant::now();
            let (_, stats) = boxes_of(points, resolution)?;
            let ms = t.elapsed().as_secs_f64() * 1e3;
            md.push_str(&format!(
                "| {n} | {resolution} | {ms:.1} | {} | {} | {} |\n",
                stats.on_robot, stats.voxels, stats.boxes
            ));
            processing.push(json!({
                "points": n, "resolution": resolution, "ms": ms,
                "on_robot": stats.on_robot, "voxels": stats.voxels, "boxes": stats.boxes,
            }));
        }
    }

    // Checks: the scene's own obstacles against the boxes of the biggest cloud.
    let space = &group.space;
    let dof = space.dof();
    let mut values = Vec::with_capacity(a.configs * dof);
    for _ in 0..a.configs {
        values.extend((0..dof).map(|j| rng.random_range(space.lower[j]..=space.upper[j])));
    }
    let batch = ConfigBatch::from_values(dof, values)?;
    let timed = |scene: &Scene| -> Result<(Vec<bool>, f64), CliError> {
        let checker = CpuChecker::new(&robot, &group, &base, scene, CheckerOptions::default())?;
        checker.check_configs(&batch)?; // warm-up
        let t = Instant::now();
        let verdicts = checker.check_configs(&batch)?;
        Ok((verdicts, a.configs as f64 / t.elapsed().as_secs_f64()))
    };
    let (reference, reference_rate) = timed(&scene)?;
    md.push_str(&format!(
        "\n| scene | obstacles | configurations/s (CPU, {} threads) | rate against the scene's own | valid here, invalid in the scene's own | invalid here, valid in the scene's own |\n|---|---|---|---|---|---|\n| the scene's own obstacles | {} | {reference_rate:.0} | 1 | - | - |\n",
        rayon::current_num_threads(),
        scene.len()
    ));
    let mut checks = vec![json!({
        "scene": "own obstacles", "obstacles": scene.len(), "configs_per_s": reference_rate,
    })];
    for &resolution in &a.resolutions {
        let (boxes, _) = boxes_of(&all_points, resolution)?;
        let mut cloud_scene = Scene::new(scene.frame());
        for o in cloud_obstacles(&boxes) {
            cloud_scene.add(o)?;
        }
        let (verdicts, rate) = timed(&cloud_scene)?;
        let freer = verdicts
            .iter()
            .zip(&reference)
            .filter(|(c, r)| **c && !**r)
            .count();
        let stricter = verdicts
            .iter()
            .zip(&reference)
            .filter(|(c, r)| !**c && **r)
            .count();
        md.push_str(&format!(
            "| cloud of {} points, {resolution} m voxels | {} | {rate:.0} | {:.3} | {freer} | {stricter} |\n",
            all_points.len(),
            boxes.len(),
            rate / reference_rate
        ));
        checks.push(json!({
            "scene": "cloud boxes", "points": all_points.len(), "resolution": resolution,
            "obstacles": boxes.len(), "configs_per_s": rate, "ratio": rate / reference_rate,
            "valid_here_invalid_in_own": freer, "invalid_here_valid_in_own": stricter,
        }));
    }
    let date = crate::report::today();
    let v = json!({
        "benchmark": "cloud",
        "date": date,
        "machine": crate::report::machine_info(),
        "threads": rayon::current_num_threads(),
        "seed": a.seed,
        "configs": a.configs,
        "cloud": "points uniform over the surfaces of the bundled scene's obstacle hulls and the robot's collision bodies at the neutral state",
        "processing": processing,
        "checks": checks,
    });
    if let Some(dir) = &a.out {
        super::write_bench_results(dir, &format!("cloud_{date}"), &v, &md)?;
    }
    Ok(v)
}
