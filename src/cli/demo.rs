//! `gmp demo`: the main job on the bundled robot (`urdf/gmp_arm.urdf`) and scene
//! (`config/default_scene.yaml`), which are compiled into the binary so that it runs from
//! any folder.
//!
//! It times batches of random collision checks, plans a few queries around the shelf with
//! RRT-Connect and PRM (one roadmap shared by the PRM queries), reports their statistics and
//! draws a PNG: a top view (x-y) and a side view (x-z) of the obstacles, the PRM roadmap drawn
//! through the end effector's positions and the planned end-effector paths.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use clap::Args;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde_json::{json, Value};

use super::picture::{Canvas, Rgb, View};
use super::CliError;
use crate::collision::{Checker, CheckerOptions, ConfigBatch, MotionBatch};
use crate::planners::{plan, prm::Prm, PlanRequest, PlanResult, PlannerId};
use crate::roadmap::EdgeLabel;
use crate::robot::{LoadOptions, PlanningGroup, RobotModel};
use crate::scene::{Scene, Shape};

/// The bundled robot's URDF.
pub const BUNDLED_URDF: &str = include_str!("../../urdf/gmp_arm.urdf");
/// The bundled robot's SRDF.
pub const BUNDLED_SRDF: &str = include_str!("../../urdf/gmp_arm.srdf");
/// The bundled scene.
pub const BUNDLED_SCENE: &str = include_str!("../../config/default_scene.yaml");

/// `gmp demo` arguments.
#[derive(Args, Debug)]
pub struct DemoArgs {
    /// Backend: auto (hybrid with a GPU, else cpu), cpu, cuda or hybrid (small calls on the CPU, large ones on the GPU).
    #[arg(long, default_value = "auto")]
    pub backend: String,
    /// Random configurations to check.
    #[arg(long, default_value_t = 20000)]
    pub configs: usize,
    /// Random motions to check.
    #[arg(long, default_value_t = 2000)]
    pub motions: usize,
    /// Seed of the random samples and of the planners.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Where to write the picture of the roadmap and the paths.
    #[arg(long, default_value = "gmp_demo.png")]
    pub png: PathBuf,
    /// Planning time limit per query, seconds.
    #[arg(long = "time-limit", default_value_t = 5.0)]
    pub time_limit: f64,
}

/// Start/goal pairs of the demo (group `arm` joint order), chosen around the shelf of the
/// bundled scene: from under the shelf board to above it, from above the board to behind the
/// robot, and from under the board to the pillar on the left. All are collision free (the
/// tests check it).
pub const DEMO_QUERIES: [(&str, [f64; 6], [f64; 6]); 3] = [
    (
        "under_shelf_to_above_shelf",
        [0.5, 0.8, 1.9, -1.9, 1.4, -1.4],
        [-0.2, -0.3, 1.9, -1.1, 0.5, 2.1],
    ),
    (
        "above_shelf_to_behind",
        [-0.4, 1.6, -1.8, 0.1, 1.5, -0.4],
        [-0.2, -0.2, -1.7, 0.4, -1.6, -0.3],
    ),
    (
        "under_shelf_to_pillar",
        [0.5, 0.8, 1.9, -1.9, 1.4, -1.4],
        [1.1, 0.0, 2.4, -0.2, -0.7, 1.6],
    ),
];

/// The link whose positions the picture draws.
pub const END_EFFECTOR: &str = "tool0";

/// Loads the bundled robot and scene.
pub fn bundled() -> Result<(RobotModel, Scene), CliError> {
    let robot = RobotModel::from_urdf_str(
        BUNDLED_URDF,
        None,
        Some(BUNDLED_SRDF),
        &LoadOptions::default(),
    )?;
    let scene = Scene::from_yaml_str(BUNDLED_SCENE, std::path::Path::new("."))?;
    Ok((robot, scene))
}

/// Runs the demo and returns its report.
pub fn run(a: &DemoArgs) -> Result<Value, CliError> {
    let (robot, scene) = bundled()?;
    let group = robot.default_group();
    let base = robot.tree.neutral_state();
    let checker = crate::collision::make_checker(
        &a.backend,
        &robot,
        &group,
        &base,
        &scene,
        CheckerOptions::default(),
    )?;
    let space = &group.space;
    let mut rng = ChaCha8Rng::seed_from_u64(a.seed);
    let sample = |rng: &mut ChaCha8Rng| space.sample_uniform(rng);
    let mut configs = ConfigBatch::with_capacity(space.dof(), a.configs);
    for _ in 0..a.configs {
        configs.push(&sample(&mut rng))?;
    }
    let t0 = Instant::now();
    let valid = checker.check_configs(&configs)?;
    let t_configs = t0.elapsed().as_secs_f64();
    let free_configs: Vec<&[f64]> = configs
        .rows()
        .zip(&valid)
        .filter(|(_, v)| **v)
        .map(|(r, _)| r)
        .collect();
    let mut motions = MotionBatch::new(space.dof());
    for i in 0..a.motions.min(free_configs.len().saturating_sub(1)) {
        motions.push(
            free_configs[i],
            free_configs[(i * 7 + 1) % free_configs.len()],
        )?;
    }
    let resolution = 0.02;
    let t1 = Instant::now();
    let mvalid = checker.check_motions(&motions, resolution)?;
    let t_motions = t1.elapsed().as_secs_f64();
    let n_valid = valid.iter().filter(|v| **v).count();
    let m_valid = mvalid.iter().filter(|v| **v).count();
    let planning = plan_queries(a, &robot, &group, &base, checker.as_ref())?;
    let picture = Picture {
        robot: &robot,
        group: &group,
        base: &base,
        scene: &scene,
    };
    let png = picture.draw(&planning.prm, &planning.results)?;
    png.write_png(&a.png).map_err(CliError)?;
    Ok(json!({
        "robot": robot.tree.name,
        "group": group.name,
        "joints": space.names,
        "obstacles": scene.iter().map(|o| o.id.clone()).collect::<Vec<_>>(),
        "backend": checker.backend().name(),
        "configurations": {"checked": configs.len(), "collision_free": n_valid, "seconds": t_configs, "per_second": configs.len() as f64 / t_configs.max(1e-9)},
        "motions": {"checked": motions.len(), "collision_free": m_valid, "resolution": resolution, "seconds": t_motions, "per_second": motions.len() as f64 / t_motions.max(1e-9)},
        "planning": planning.report,
        "picture": {"path": a.png.display().to_string(), "width": png.width(), "height": png.height()},
    }))
}

/// The demo's plans: their report, the results to draw and the PRM roadmap.
struct Planning {
    report: Value,
    /// (query index, result) of every successful plan.
    results: Vec<(usize, PlanResult)>,
    prm: Prm,
}

fn plan_queries(
    a: &DemoArgs,
    robot: &RobotModel,
    group: &PlanningGroup,
    base: &[f64],
    checker: &dyn Checker,
) -> Result<Planning, CliError> {
    if !(a.time_limit.is_finite() && a.time_limit > 0.0 && a.time_limit < 1e6) {
        return Err(CliError(format!(
            "--time-limit must be a positive number of seconds, got {}",
            a.time_limit
        )));
    }
    let tool = robot.tree.link(END_EFFECTOR)?;
    let tool_at = |q: &[f64]| {
        let p = robot.tree.forward_kinematics(&group.full_state(base, q))[tool]
            .translation
            .vector;
        [p.x, p.y, p.z]
    };
    let mut prm = Prm::new(&group.space).map_err(|e| CliError(e.to_string()))?;
    let mut report = Vec::new();
    let mut results = Vec::new();
    for (qi, (name, start, goal)) in DEMO_QUERIES.into_iter().enumerate() {
        for planner in [PlannerId::RrtConnect, PlannerId::Prm] {
            let mut req = PlanRequest::new(start.to_vec(), goal.to_vec(), planner);
            req.seed = a.seed;
            req.time_limit = Duration::from_secs_f64(a.time_limit);
            req.group = group.name.clone();
            // Corners rounded as the node rounds them.
            req.path_tolerance = crate::trajectory::rounded::DEFAULT_PATH_TOLERANCE;
            let out = match planner {
                PlannerId::Prm => prm.solve(checker, &req),
                _ => plan(checker, &req),
            };
            match out {
                Ok(res) => {
                    let st = &res.stats;
                    report.push(json!({
                        "query": name,
                        "planner": planner.as_str(),
                        "success": true,
                        "start_tool0": tool_at(&start),
                        "goal_tool0": tool_at(&goal),
                        "planning_time_s": st.planning_time.as_secs_f64(),
                        "simplification_time_s": st.simplification_time.as_secs_f64(),
                        "collision_checks": st.collision_checks,
                        "path_length_before": st.path_length_before,
                        "path_length_after": st.path_length_after,
                        "waypoints": res.path.len(),
                        "duration_s": res.trajectory.duration(),
                        "rounded_corners": res.timing.rounded_corners(),
                        "roadmap_vertices": st.roadmap_vertices,
                        "roadmap_edges": st.roadmap_edges,
                    }));
                    results.push((qi, res));
                }
                Err(e) => report.push(json!({
                    "query": name,
                    "planner": planner.as_str(),
                    "success": false,
                    "error": e.to_string(),
                })),
            }
        }
    }
    Ok(Planning {
        report: Value::Array(report),
        results,
        prm,
    })
}

const BACKGROUND: Rgb = [255, 255, 255];
const FRAME: Rgb = [90, 90, 90];
const GRID: Rgb = [232, 232, 232];
const OBSTACLE: Rgb = [70, 100, 160];
/// Obstacles are see-through so that overlapping ones (a shelf on a table) stay visible.
const OBSTACLE_ALPHA: f64 = 0.3;
const ROADMAP: Rgb = [215, 215, 215];
const ROBOT_BASE: Rgb = [60, 60, 60];
const START: Rgb = [0, 160, 0];
const GOAL: Rgb = [220, 0, 0];
/// Path colours: RRT-Connect in warm colours, PRM in cool ones, one per query.
const RRT_CONNECT_COLOURS: [Rgb; 3] = [[230, 90, 0], [200, 0, 120], [170, 120, 0]];
const PRM_COLOURS: [Rgb; 3] = [[0, 90, 220], [0, 150, 150], [110, 40, 200]];

fn path_colour(query: usize, planner: PlannerId) -> Rgb {
    let palette = if planner == PlannerId::Prm {
        PRM_COLOURS
    } else {
        RRT_CONNECT_COLOURS
    };
    palette[query % palette.len()]
}

/// What the picture shows.
struct Picture<'a> {
    robot: &'a RobotModel,
    group: &'a PlanningGroup,
    base: &'a [f64],
    scene: &'a Scene,
}

impl Picture<'_> {
    fn tool_positions(&self, configs: &[Vec<f64>]) -> Result<Vec<[f64; 3]>, CliError> {
        let tool = self.robot.tree.link(END_EFFECTOR)?;
        let mut frames = Vec::new();
        Ok(configs
            .iter()
            .map(|q| {
                self.robot
                    .tree
                    .forward_kinematics_into(&self.group.full_state(self.base, q), &mut frames);
                frames
                    .get(tool)
                    .map(|f| [f.translation.x, f.translation.y, f.translation.z])
                    .unwrap_or([f64::NAN; 3])
            })
            .collect())
    }

    /// Points on the surface of an obstacle, in the world frame (enough for the convex hull
    /// of its projection), or a sphere's centre and radius.
    fn obstacle_points(shape: &Shape) -> Vec<nalgebra::Point3<f64>> {
        use nalgebra::Point3;
        match shape {
            Shape::Box { half_extents: h } => (0..8)
                .map(|i| {
                    Point3::new(
                        if i & 1 == 0 { -h.x } else { h.x },
                        if i & 2 == 0 { -h.y } else { h.y },
                        if i & 4 == 0 { -h.z } else { h.z },
                    )
                })
                .collect(),
            Shape::Cylinder {
                radius,
                half_length,
            } => (0..64)
                .map(|i| {
                    let t = (i % 32) as f64 * std::f64::consts::TAU / 32.0;
                    let z = if i < 32 { -half_length } else { *half_length };
                    Point3::new(radius * t.cos(), radius * t.sin(), z)
                })
                .collect(),
            Shape::ConvexMesh { polytope } => polytope.vertices.clone(),
            Shape::Sphere { .. } => Vec::new(),
        }
    }

    fn draw(&self, prm: &Prm, results: &[(usize, PlanResult)]) -> Result<Canvas, CliError> {
        let (w, h) = (1200u32, 620u32);
        let mut c = Canvas::new(w, h, BACKGROUND);
        // Panel 0: top view (x right, y up); panel 1: side view (x right, z up).
        let views = [
            (
                View::fit(20, 20, 570, 580, (-1.0, 1.0), (-1.0, 1.0)),
                1usize,
            ),
            (
                View::fit(610, 20, 570, 580, (-1.0, 1.0), (-0.2, 1.4)),
                2usize,
            ),
        ];
        let roadmap = prm.roadmap();
        let vertices: Vec<Vec<f64>> = (0..roadmap.num_vertices())
            .filter_map(|v| roadmap.vertex(v).map(<[f64]>::to_vec))
            .collect();
        let vertex_tools = self.tool_positions(&vertices)?;
        let paths: Vec<(Rgb, Vec<[f64; 3]>)> = results
            .iter()
            .map(|(qi, r)| {
                Ok((
                    path_colour(*qi, r.planner),
                    self.tool_positions(&r.trajectory.positions())?,
                ))
            })
            .collect::<Result<_, CliError>>()?;
        for (view, axis) in views {
            let proj = |p: &[f64; 3]| view.px(p[0], p[axis]);
            c.set_clip(Some((
                view.x0,
                view.y0,
                view.x0 + view.width,
                view.y0 + view.height,
            )));
            // Grid every 0.25 m.
            for k in -8..=8 {
                let t = f64::from(k) * 0.25;
                let (x, _) = view.px(t, 0.0);
                let (_, y) = view.px(0.0, t);
                c.line(x, view.y0, x, view.y0 + view.height, GRID);
                c.line(view.x0, y, view.x0 + view.width, y, GRID);
            }
            for e in roadmap.edges() {
                if e.label != EdgeLabel::Valid {
                    continue;
                }
                if let (Some(a), Some(b)) = (vertex_tools.get(e.a), vertex_tools.get(e.b)) {
                    let (pa, pb) = (proj(a), proj(b));
                    c.line(pa.0, pa.1, pb.0, pb.1, ROADMAP);
                }
            }
            // Obstacles after the roadmap, see-through, so that both stay visible.
            for o in self.scene.iter() {
                if let Shape::Sphere { radius } = o.shape {
                    let t = o.pose.translation.vector;
                    let (x, y) = proj(&[t.x, t.y, t.z]);
                    c.fill_circle(x, y, view.len(radius), OBSTACLE, OBSTACLE_ALPHA);
                    continue;
                }
                let pts: Vec<(f64, f64)> = Self::obstacle_points(&o.shape)
                    .iter()
                    .map(|p| {
                        let q = o.pose * p;
                        let (x, y) = proj(&[q.x, q.y, q.z]);
                        (x as f64, y as f64)
                    })
                    .collect();
                c.fill_convex(&pts, OBSTACLE, OBSTACLE_ALPHA);
            }
            let (bx, by) = proj(&[0.0, 0.0, 0.0]);
            c.fill_circle(bx, by, 5, ROBOT_BASE, 1.0);
            for (colour, path) in &paths {
                let colour = *colour;
                for s in path.windows(2) {
                    let (pa, pb) = (proj(&s[0]), proj(&s[1]));
                    c.thick_line(pa.0, pa.1, pb.0, pb.1, 3, colour);
                }
            }
            for (_, path) in &paths {
                if let (Some(s), Some(g)) = (path.first(), path.last()) {
                    let (sx, sy) = proj(s);
                    let (gx, gy) = proj(g);
                    c.fill_circle(sx, sy, 5, START, 1.0);
                    c.fill_circle(gx, gy, 5, GOAL, 1.0);
                }
            }
            c.set_clip(None);
            c.rect_outline(
                view.x0,
                view.y0,
                view.x0 + view.width,
                view.y0 + view.height,
                FRAME,
            );
        }
        Ok(c)
    }
}
