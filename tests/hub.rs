//! Shared launches across problems (`collision::hub`) without a GPU: the hub's dispatcher and
//! clients over the CPU executor.
//!
//! 1. Every client's verdicts equal its scene's own `CpuChecker` (MBM Panda and UR5 scenes, one
//!    client thread per scene, requests gathered into shared rounds).
//! 2. Plans through hub clients equal plans with each problem's own checker (RRT-Connect, fixed
//!    seeds, several problems in flight).
//! 3. Bad input and misuse give clear errors: a scene out of range, NaN in a batch, requests
//!    after the hub stopped.
//! 4. `SceneModel::append` keeps each scene's mesh obstacles intact (shifted indices).
//!
//! The CUDA executor's parity with the CPU runs on the GPU machine (`tests/gpu_parity.rs`,
//! `gpu_parity_shared_launches`).

mod common;

use gpu_motion_planner::collision::hub::{CpuBatch, HubOptions, LaunchHub};
use gpu_motion_planner::collision::model::obstacle_kind;
use gpu_motion_planner::collision::{
    Checker, CheckerOptions, CollisionError, ConfigBatch, CpuChecker, SceneModel,
};
use gpu_motion_planner::mbm::{MbmRobot, Problem};
use gpu_motion_planner::planners::{plan, PlanRequest, PlannerId};
use gpu_motion_planner::scene::{Obstacle, Scene, Shape};

/// The robot and its problems numbered `indices` in every scene.
fn problems(robot: &str, indices: &[usize]) -> Option<(MbmRobot, Vec<Problem>)> {
    let data = common::mbm_or_skip("hub")?;
    let r = gpu_motion_planner::mbm::load_robot(&data, robot).expect("robot loads");
    let ps = gpu_motion_planner::mbm::load_problems(&data, robot).expect("problems load");
    let picked = ps
        .into_iter()
        .filter(|p| indices.contains(&p.index))
        .collect();
    Some((r, picked))
}

fn cpu_checkers(r: &MbmRobot, ps: &[Problem]) -> Vec<CpuChecker> {
    ps.iter()
        .map(|p| {
            CpuChecker::new(
                &r.model,
                &r.group,
                &r.start_full_state(p),
                &p.scene,
                CheckerOptions::default(),
            )
            .expect("cpu checker")
        })
        .collect()
}

fn hub_verdicts_match(robot: &str, executors: usize) {
    let Some((r, ps)) = problems(robot, &[1]) else {
        return;
    };
    let cpus = cpu_checkers(&r, &ps);
    let anchors: Vec<Vec<Vec<f64>>> = ps
        .iter()
        .map(|p| {
            let (a, b) = r.start_goal(p).expect("start and goal");
            vec![a, b]
        })
        .collect();
    let execs = (0..executors)
        .map(|_| {
            Box::new(CpuBatch::new(cpus.clone()).expect("executor"))
                as Box<dyn gpu_motion_planner::collision::hub::BatchExecutor>
        })
        .collect();
    let (configs, motions, diffs, free) = common::hub_parity(execs, &cpus, &anchors, 4, 32);
    eprintln!("hub {robot}: {configs} configurations ({free} free), {motions} motions, {diffs} differences");
    assert_eq!(configs, ps.len() * 4 * 32);
    assert_eq!(motions, ps.len() * 4 * 8);
    assert!(free > 0 && free < configs, "both verdicts occur");
    assert_eq!(diffs, 0, "hub clients answer as their scenes' own checkers");
}

#[test]
fn hub_verdicts_match_own_checkers_panda() {
    hub_verdicts_match("panda", 1);
}

#[test]
fn hub_verdicts_match_own_checkers_ur5() {
    hub_verdicts_match("ur5", 1);
}

#[test]
fn two_dispatchers_answer_as_one() {
    hub_verdicts_match("panda", 2);
}

#[test]
fn plans_through_the_hub_equal_plans_with_own_checkers() {
    let Some((r, ps)) = problems("panda", &[2]) else {
        return;
    };
    let ps: Vec<Problem> = ps.into_iter().filter(|p| p.scene_name != "cage").collect();
    let cpus = cpu_checkers(&r, &ps);
    let request = |p: &Problem| {
        let (start, goal) = r.start_goal(p).expect("start and goal");
        let mut req = PlanRequest::new(start, goal, PlannerId::RrtConnect);
        req.seed = 7;
        req.batch_size = Some(1);
        req.time_limit = std::time::Duration::from_secs(20);
        req.group = r.group.name.clone();
        req
    };
    let own: Vec<_> = ps
        .iter()
        .zip(&cpus)
        .map(|(p, c)| plan(c, &request(p)).expect("plans with its own checker"))
        .collect();
    let exec = CpuBatch::new(cpus.clone()).expect("executor");
    let hub =
        LaunchHub::new(Box::new(exec), r.group.space.clone(), HubOptions::default()).expect("hub");
    let shared: Vec<_> = std::thread::scope(|sc| {
        let handles: Vec<_> = ps
            .iter()
            .enumerate()
            .map(|(k, p)| {
                let client = hub.client(k).expect("client");
                let req = request(p);
                sc.spawn(move || plan(&client, &req).expect("plans through the hub"))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("planner thread"))
            .collect()
    });
    assert_eq!(own.len(), shared.len());
    for ((p, a), b) in ps.iter().zip(&own).zip(&shared) {
        let what = format!("{} {}", p.scene_name, p.index);
        assert_eq!(
            a.stats.collision_checks, b.stats.collision_checks,
            "{what}: checks"
        );
        assert_eq!(
            a.stats.path_length_after.to_bits(),
            b.stats.path_length_after.to_bits(),
            "{what}: path length"
        );
        assert_eq!(
            a.trajectory.points.len(),
            b.trajectory.points.len(),
            "{what}: points"
        );
        for (x, y) in a.trajectory.points.iter().zip(&b.trajectory.points) {
            assert_eq!(x.positions, y.positions, "{what}: positions");
        }
    }
    let st = hub.stats();
    assert!(st.rounds > 0 && st.requests >= st.rounds, "{st:?}");
}

#[test]
fn hub_rejects_bad_input_and_answers_after_stop_with_an_error() {
    let Some((r, ps)) = problems("panda", &[1]) else {
        return;
    };
    let ps = &ps[..2];
    let cpus = cpu_checkers(&r, ps);
    let dof = r.group.space.dof();
    let exec = CpuBatch::new(cpus).expect("executor");
    let hub =
        LaunchHub::new(Box::new(exec), r.group.space.clone(), HubOptions::default()).expect("hub");
    let err = hub.client(2).expect_err("scene 2 of 2");
    assert!(err.to_string().contains("scene 2 out of range"), "{err}");
    let c = hub.client(1).expect("client");
    let mut q = vec![0.0; dof];
    q[3] = f64::NAN;
    let b = ConfigBatch::from_rows(dof, &[&q]).expect("batch");
    match c.check_configs(&b) {
        Err(CollisionError::NonFinite { index: 0, joint }) => {
            assert_eq!(joint, r.group.space.names[3])
        }
        other => panic!("expected a NonFinite error, got {other:?}"),
    }
    // The client still works after the error.
    let (start, _) = r.start_goal(&ps[1]).expect("start");
    let ok = ConfigBatch::from_rows(dof, &[&start]).expect("batch");
    assert_eq!(c.check_configs(&ok).expect("verdict"), vec![true]);
    drop(hub);
    let err = c.check_configs(&ok).expect_err("the hub stopped");
    assert!(err.to_string().contains("stopped"), "{err}");
}

#[test]
fn appended_scenes_keep_their_meshes() {
    let mesh = common::small_mesh();
    let mut a = Scene::new("world");
    a.add(Obstacle {
        id: "box".into(),
        shape: Shape::Box {
            half_extents: nalgebra::Vector3::new(0.1, 0.2, 0.3),
        },
        pose: nalgebra::Isometry3::translation(0.5, 0.0, 0.0),
    })
    .expect("box");
    a.add(Obstacle {
        id: "mesh a".into(),
        shape: Shape::ConvexMesh {
            polytope: mesh.clone(),
        },
        pose: nalgebra::Isometry3::translation(0.0, 0.5, 0.0),
    })
    .expect("mesh");
    let mut b = Scene::new("world");
    b.add(Obstacle {
        id: "mesh b".into(),
        shape: Shape::ConvexMesh { polytope: mesh },
        pose: nalgebra::Isometry3::translation(0.0, 0.0, 0.5),
    })
    .expect("mesh");
    let (ma, mb) = (SceneModel::build(&a), SceneModel::build(&b));
    let mut merged = SceneModel::default();
    assert_eq!(merged.append(&ma), 0);
    assert_eq!(merged.append(&mb), ma.obstacles.len());
    assert_eq!(
        merged.obstacles.len(),
        ma.obstacles.len() + mb.obstacles.len()
    );
    // Each scene's obstacles, with their mesh vertices and edges, as in their own models.
    for (own, at) in [(&ma, 0), (&mb, ma.obstacles.len())] {
        for (k, o) in own.obstacles.iter().enumerate() {
            let m = merged.obstacles[at + k];
            assert_eq!((m.kind, m.pose, m.radius), (o.kind, o.pose, o.radius));
            if o.kind != obstacle_kind::MESH {
                continue;
            }
            let (s0, s1) = (o.mesh_start as usize, m.mesh_start as usize);
            for v in 0..o.mesh_count as usize {
                assert_eq!(own.mesh_verts[s0 + v], merged.mesh_verts[s1 + v]);
                let edges = |sm: &SceneModel, i: usize| -> Vec<u32> {
                    let (lo, hi) = (
                        sm.mesh_edge_offsets[i] as usize,
                        sm.mesh_edge_offsets[i + 1] as usize,
                    );
                    sm.mesh_edge_targets[lo..hi].to_vec()
                };
                let shift = m.mesh_start - o.mesh_start;
                let want: Vec<u32> = edges(own, s0 + v).iter().map(|t| t + shift).collect();
                assert_eq!(edges(&merged, s1 + v), want, "edges of vertex {v}");
            }
        }
    }
    assert!(merged.obstacles[ma.obstacles.len()].mesh_start > 0);
}
