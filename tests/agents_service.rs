//! `AgentsService` (the node's `~/plan_agents` and `~/occupancy_grid`): hand-made grids with
//! known shortest paths, metres <-> cells, per-agent failures, refused inputs and markers; no
//! ROS.

use gpu_motion_planner::grid::{cuda_driver_present, gpu, GridMap};
use gpu_motion_planner::service::agents::{
    agent_color, agent_markers, cell_centre, world_to_cell, AgentMarkerKind, AgentsError,
    AgentsRequest, AgentsResponse, AgentsService, AgentsSettings, MapPose, OccupancyGridData,
    AGENT_PATHS_NS, AGENT_STARTS_NS, FAILED_START_COLOR,
};

/// A grid drawn as text (top row first; `#` 100, `.` 0, `?` unknown, digit `d` = `d * 10`).
fn grid(rows: &[&str], resolution: f64, origin: MapPose) -> OccupancyGridData {
    let map = GridMap::from_ascii(rows).expect("ascii grid");
    OccupancyGridData {
        frame_id: "map".into(),
        resolution,
        width: map.width(),
        height: map.height(),
        origin,
        data: map.data().to_vec(),
    }
}

fn unit_grid(rows: &[&str]) -> OccupancyGridData {
    grid(rows, 1.0, MapPose::default())
}

/// The centre of cell `(x, y)` of a unit grid at the origin.
fn at(x: u32, y: u32) -> [f64; 3] {
    [x as f64 + 0.5, y as f64 + 0.5, 0.0]
}

fn origin(x: f64, y: f64, yaw: f64) -> MapPose {
    MapPose {
        position: [x, y, 0.0],
        orientation: [0.0, 0.0, (yaw / 2.0).sin(), (yaw / 2.0).cos()],
    }
}

fn request(goal: [f64; 3], starts: Vec<[f64; 3]>) -> AgentsRequest {
    AgentsRequest {
        goal,
        starts,
        backend: "cpu".into(),
        ..Default::default()
    }
}

fn service_with(map: OccupancyGridData) -> AgentsService {
    let mut s = AgentsService::new(AgentsSettings::default());
    s.set_grid(map).expect("grid");
    s
}

/// Every path: 4-connected cell centres from the start's cell to the goal's cell, through
/// free cells (value <= 50), facing the next cell. Returns the number of moves per path.
fn check_paths(map: &GridMap, req: &AgentsRequest, resp: &AgentsResponse) -> Vec<usize> {
    assert_eq!(resp.paths.len(), req.starts.len());
    let goal = world_to_cell(map, req.goal).expect("finite goal");
    let mut moves = Vec::new();
    for (i, path) in resp.paths.iter().enumerate() {
        if path.is_empty() {
            assert!(resp.failed_agents.contains(&(i as u32)), "agent {i}");
            moves.push(usize::MAX);
            continue;
        }
        let cells: Vec<[i64; 2]> = path
            .iter()
            .map(|p| world_to_cell(map, p.position).expect("finite pose"))
            .collect();
        for (p, c) in path.iter().zip(&cells) {
            let centre = cell_centre(map, [c[0] as u32, c[1] as u32]);
            assert!(
                (p.position[0] - centre[0]).abs() < 1e-9,
                "agent {i}: not a centre"
            );
            assert!(
                (p.position[1] - centre[1]).abs() < 1e-9,
                "agent {i}: not a centre"
            );
            assert_eq!(p.position[2], 0.0);
            let value = map.get(c[0], c[1]).expect("inside the map");
            assert!(
                (0..=50).contains(&value),
                "agent {i}: cell {c:?} is {value}"
            );
        }
        assert_eq!(
            cells[0],
            world_to_cell(map, req.starts[i]).unwrap(),
            "agent {i}"
        );
        assert_eq!(*cells.last().unwrap(), goal, "agent {i}");
        for (k, w) in cells.windows(2).enumerate() {
            let step = (w[1][0] - w[0][0]).abs() + (w[1][1] - w[0][1]).abs();
            assert_eq!(step, 1, "agent {i}: {:?} -> {:?}", w[0], w[1]);
            // The pose faces the next cell: its heading is the move direction in the map frame.
            let q = path[k].orientation;
            let yaw = 2.0 * q[2].atan2(q[3]);
            let (a, b) = (path[k].position, path[k + 1].position);
            let expect = (b[1] - a[1]).atan2(b[0] - a[0]);
            let (sin, cos) = (yaw - expect).sin_cos();
            assert!(
                sin.abs() < 1e-9 && cos > 0.0,
                "agent {i}: heading {yaw} for {expect}"
            );
        }
        moves.push(cells.len() - 1);
    }
    moves
}

const WALL_WITH_GAP: &[&str] = &[
    ".......", //
    "###.###", //
    ".......", //
];

#[test]
fn agents_known_shortest_paths_through_a_gap() {
    let map = unit_grid(WALL_WITH_GAP);
    let s = service_with(map.clone());
    // Goal top-left; starts bottom-left (3 right, 2 up, 3 left), bottom at the gap (2 up,
    // 3 left), the goal itself and top-right (6 left).
    let req = request(at(0, 2), vec![at(0, 0), at(3, 0), at(0, 2), at(6, 2)]);
    let resp = s.plan(req.clone()).expect("plan");
    assert!(resp.success, "{}", resp.message);
    assert!(resp.failed_agents.is_empty() && resp.failure_reasons.is_empty());
    assert_eq!(resp.frame_id, "map");
    assert_eq!(resp.backend, "cpu");
    assert!(resp.planning_time >= 0.0);
    assert!(
        resp.message.contains("4 agents: 4 solved, 0 failed"),
        "{}",
        resp.message
    );
    assert!(resp.message.contains("cpu"), "{}", resp.message);
    let grid_map = map.to_grid_map().expect("grid map");
    assert_eq!(check_paths(&grid_map, &req, &resp), vec![8, 5, 0, 6]);
    // The goal cell's centre is the last pose, also for the agent already there.
    assert_eq!(resp.paths[2].len(), 1);
    assert_eq!(resp.paths[0].last().unwrap().position, at(0, 2));
}

#[test]
fn agents_occupancy_above_50_and_unknown_are_blocked() {
    // The gap holds 50 (free), 60 (blocked) or unknown (blocked).
    for (gap, passable) in [("5", true), ("6", false), ("?", false)] {
        let wall = format!("###{gap}###");
        let map = unit_grid(&[".......", &wall, "......."]);
        let s = service_with(map.clone());
        let req = request(at(0, 2), vec![at(0, 0), at(3, 2)]);
        let resp = s.plan(req.clone()).expect("plan");
        let moves = check_paths(&map.to_grid_map().unwrap(), &req, &resp);
        assert_eq!(moves[1], 3, "gap {gap}");
        if passable {
            assert!(resp.success, "gap {gap}: {}", resp.message);
            assert_eq!(moves[0], 8);
        } else {
            assert_eq!(resp.failed_agents, vec![0], "gap {gap}");
            assert_eq!(resp.failure_reasons, vec!["goal unreachable"], "gap {gap}");
            assert!(!resp.success);
        }
    }
}

#[test]
fn agents_metres_cells_round_trip() {
    for yaw in [0.0, 0.7, -2.5] {
        let data = grid(
            &[".........."; 8],
            0.05,
            MapPose {
                position: [-3.2, 1.7, 0.4],
                ..origin(-3.2, 1.7, yaw)
            },
        );
        let map = data.to_grid_map().expect("grid");
        assert_eq!(map.resolution, 0.05);
        assert_eq!(map.origin[..2], [-3.2, 1.7]);
        assert!((map.origin[2] - yaw).abs() < 1e-12, "yaw {yaw}");
        for y in 0..8u32 {
            for x in 0..10u32 {
                let c = cell_centre(&map, [x, y]);
                assert_eq!(
                    world_to_cell(&map, c),
                    Some([x as i64, y as i64]),
                    "yaw {yaw}"
                );
                // A point a little off the centre stays in the cell.
                let near = [c[0] + 0.02, c[1] - 0.02, 5.0];
                if yaw == 0.0 {
                    assert_eq!(world_to_cell(&map, near), Some([x as i64, y as i64]));
                }
            }
        }
        // Cell (0, 0)'s centre is half a cell along both grid axes from the origin.
        let (s, c) = f64::sin_cos(yaw);
        let c00 = cell_centre(&map, [0, 0]);
        assert!((c00[0] - (-3.2 + 0.025 * c - 0.025 * s)).abs() < 1e-12);
        assert!((c00[1] - (1.7 + 0.025 * s + 0.025 * c)).abs() < 1e-12);
        // Just before the origin along the grid's x axis is outside (column -1).
        let before = [
            -3.2 - 0.001 * c + 0.01 * -s,
            1.7 - 0.001 * s + 0.01 * c,
            0.0,
        ];
        assert_eq!(world_to_cell(&map, before), Some([-1, 0]), "yaw {yaw}");
        assert_eq!(world_to_cell(&map, [f64::NAN, 0.0, 0.0]), None);
    }
    // Without yaw: plain floor((p - origin) / resolution).
    let map = grid(&[".........."; 8], 0.05, origin(-3.2, 1.7, 0.0))
        .to_grid_map()
        .unwrap();
    assert_eq!(world_to_cell(&map, [-3.2, 1.7, 0.0]), Some([0, 0]));
    assert_eq!(
        world_to_cell(&map, [-3.2 + 0.449, 1.7 + 0.351, 0.0]),
        Some([8, 7])
    );
    assert_eq!(world_to_cell(&map, [-3.31, 1.61, 0.0]), Some([-3, -2]));
}

#[test]
fn agents_plan_in_metres_on_a_rotated_offset_map() {
    let yaw = std::f64::consts::FRAC_PI_2;
    let data = grid(WALL_WITH_GAP, 0.05, origin(2.0, -1.0, yaw));
    let map = data.to_grid_map().unwrap();
    let s = service_with(data);
    let req = request(
        cell_centre(&map, [0, 2]),
        vec![cell_centre(&map, [0, 0]), cell_centre(&map, [6, 2])],
    );
    let resp = s.plan(req.clone()).expect("plan");
    assert!(resp.success, "{}", resp.message);
    assert_eq!(check_paths(&map, &req, &resp), vec![8, 6]);
    // With a yaw of 90 degrees the grid's x axis is the frame's y axis: cell (1, 0) lies
    // 0.05 m along +y of cell (0, 0).
    let p0 = resp.paths[0][0].position;
    let p1 = resp.paths[0][1].position;
    assert!((p1[0] - p0[0]).abs() < 1e-12 && (p1[1] - p0[1] - 0.05).abs() < 1e-12);
    assert!((p0[0] - (2.0 - 0.025)).abs() < 1e-12 && (p0[1] - (-1.0 + 0.025)).abs() < 1e-12);
}

#[test]
fn agents_bad_starts_fail_alone() {
    let map = unit_grid(WALL_WITH_GAP);
    let s = service_with(map.clone());
    let starts = vec![
        at(0, 0),                  // fine
        at(1, 1),                  // in the wall
        [-0.5, 1.5, 0.0],          // left of the map
        [3.5, 3.0, 0.0],           // above the map
        [f64::NAN, 1.0, 0.0],      // not a point
        [f64::INFINITY, 1.0, 0.0], // not a point
        at(6, 0),                  // fine
    ];
    let req = request(at(0, 2), starts);
    let resp = s.plan(req.clone()).expect("bad starts are not errors");
    assert!(!resp.success);
    assert_eq!(resp.failed_agents, vec![1, 2, 3, 4, 5]);
    assert_eq!(
        resp.failure_reasons,
        vec![
            "start is blocked",
            "start outside the map",
            "start outside the map",
            "start is not finite",
            "start is not finite",
        ]
    );
    let moves = check_paths(&map.to_grid_map().unwrap(), &req, &resp);
    assert_eq!(moves[0], 8);
    assert_eq!(moves[6], 8);
    assert!(
        resp.message.contains("7 agents: 2 solved, 5 failed"),
        "{}",
        resp.message
    );
}

fn err_text(r: Result<impl std::fmt::Debug, AgentsError>) -> String {
    match r {
        Ok(v) => panic!("expected an error, got {v:?}"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn agents_bad_goal_is_an_error_naming_it() {
    let s = service_with(unit_grid(WALL_WITH_GAP));
    let text = err_text(s.plan(request(at(1, 1), vec![at(0, 0)])));
    assert!(
        text.starts_with("goal (1.5, 1.5)") && text.contains("blocked"),
        "{text}"
    );
    let text = err_text(s.plan(request([7.5, 0.5, 0.0], vec![at(0, 0)])));
    assert!(
        text.starts_with("goal (7.5, 0.5)") && text.contains("outside"),
        "{text}"
    );
    let text = err_text(s.plan(request([0.5, -0.01, 0.0], vec![at(0, 0)])));
    assert!(
        text.starts_with("goal") && text.contains("outside"),
        "{text}"
    );
    let text = err_text(s.plan(request([f64::NAN, 0.5, 0.0], vec![at(0, 0)])));
    assert!(
        text.starts_with("goal") && text.contains("not finite"),
        "{text}"
    );
    assert!(matches!(
        s.plan(request(at(1, 1), vec![])),
        Err(AgentsError::BadGoal { .. })
    ));
}

#[test]
fn agents_bad_grids_are_errors_naming_the_field() {
    let good = unit_grid(WALL_WITH_GAP);
    let cases: Vec<(OccupancyGridData, &str, &str)> = vec![
        (
            OccupancyGridData {
                data: vec![0; 20],
                ..good.clone()
            },
            "data",
            "size mismatch",
        ),
        (
            OccupancyGridData {
                width: 0,
                height: 0,
                data: vec![],
                ..good.clone()
            },
            "info.width",
            "empty grid",
        ),
        (
            OccupancyGridData {
                width: 7,
                height: 0,
                data: vec![],
                ..good.clone()
            },
            "info.height",
            "empty grid",
        ),
        (
            OccupancyGridData {
                resolution: 0.0,
                ..good.clone()
            },
            "info.resolution",
            "positive",
        ),
        (
            OccupancyGridData {
                resolution: -0.05,
                ..good.clone()
            },
            "info.resolution",
            "positive",
        ),
        (
            OccupancyGridData {
                resolution: f64::NAN,
                ..good.clone()
            },
            "info.resolution",
            "finite",
        ),
        (
            OccupancyGridData {
                origin: MapPose {
                    position: [0.0, f64::INFINITY, 0.0],
                    ..MapPose::default()
                },
                ..good.clone()
            },
            "info.origin.position",
            "not finite",
        ),
        (
            OccupancyGridData {
                // A roll of about 74 degrees.
                origin: MapPose {
                    orientation: [0.6, 0.0, 0.0, 0.8],
                    ..MapPose::default()
                },
                ..good.clone()
            },
            "info.origin.orientation",
            "rotation about z",
        ),
        (
            OccupancyGridData {
                origin: MapPose {
                    orientation: [0.0, 0.0, f64::NAN, 1.0],
                    ..MapPose::default()
                },
                ..good.clone()
            },
            "info.origin.orientation",
            "quaternion",
        ),
        (
            OccupancyGridData {
                data: {
                    let mut d = good.data.clone();
                    d[4] = 101;
                    d
                },
                ..good.clone()
            },
            "data[4]",
            "101",
        ),
    ];
    for (bad, field, words) in cases {
        // On the topic: refused, the previous grid kept.
        let mut s = service_with(good.clone());
        let text = err_text(s.set_grid(bad.clone()));
        assert!(
            text.starts_with("occupancy_grid.") && text.contains(field) && text.contains(words),
            "{field}: {text}"
        );
        assert!(s.plan(request(at(0, 2), vec![at(0, 0)])).is_ok(), "{field}");
        // In a request: refused, naming the request's map.
        let req = AgentsRequest {
            map: Some(bad),
            ..request(at(0, 2), vec![at(0, 0)])
        };
        let text = err_text(s.plan(req));
        assert!(
            text.starts_with("map.") && text.contains(field) && text.contains(words),
            "{field}: {text}"
        );
    }
    // An all-zero quaternion is the identity, as RViz reads it.
    let zero = OccupancyGridData {
        origin: MapPose {
            position: [1.0, 2.0, 0.0],
            orientation: [0.0; 4],
        },
        ..good
    };
    assert_eq!(zero.to_grid_map().unwrap().origin, [1.0, 2.0, 0.0]);
}

#[test]
fn agents_no_grid_received_is_an_error() {
    let s = AgentsService::new(AgentsSettings::default());
    assert!(s.grid().is_none() && s.grid_frame().is_none());
    let r = s.plan(request(at(0, 2), vec![at(0, 0)]));
    assert!(matches!(r, Err(AgentsError::NoGrid)));
    let text = err_text(r);
    assert!(
        text.starts_with("map:") && text.contains("~/occupancy_grid"),
        "{text}"
    );
}

#[test]
fn agents_request_map_is_used_once_and_the_topic_grid_kept() {
    let mut s = service_with(unit_grid(&["...", "...", "..."]));
    // The request's map has a wall the topic's grid does not.
    let req = AgentsRequest {
        map: Some(OccupancyGridData {
            frame_id: "odom".into(),
            ..unit_grid(WALL_WITH_GAP)
        }),
        ..request(at(0, 2), vec![at(0, 0)])
    };
    let resp = s.plan(req).expect("plan");
    assert_eq!(resp.frame_id, "odom");
    assert_eq!(resp.paths[0].len(), 9);
    assert_eq!(s.grid().map(|g| g.width()), Some(3));
    assert_eq!(s.grid_frame(), Some("map"));
    let resp = s.plan(request(at(0, 2), vec![at(0, 0)])).expect("plan");
    assert_eq!((resp.frame_id.as_str(), resp.paths[0].len()), ("map", 3));
    // A new grid on the topic replaces the old one.
    s.set_grid(unit_grid(WALL_WITH_GAP)).unwrap();
    let resp = s.plan(request(at(0, 2), vec![at(0, 0)])).expect("plan");
    assert_eq!(resp.paths[0].len(), 9);
}

#[test]
fn agents_planning_blocks_match_the_wavefront_on_an_open_grid() {
    let rows = vec!["........................................"; 37];
    let data = grid(&rows, 0.05, origin(-1.0, -1.0, 0.0));
    let map = data.to_grid_map().unwrap();
    let s = service_with(data);
    let goal = cell_centre(&map, [21, 17]);
    let starts: Vec<[f64; 3]> = [[0, 0], [39, 36], [3, 30], [38, 2], [21, 17], [20, 20]]
        .iter()
        .map(|&c| cell_centre(&map, c))
        .collect();
    let wave_req = request(goal, starts.clone());
    let wave = s.plan(wave_req.clone()).expect("wavefront");
    let wave_moves = check_paths(&map, &wave_req, &wave);
    let manhattan: Vec<usize> = [[0, 0], [39, 36], [3, 30], [38, 2], [21, 17], [20, 20]]
        .iter()
        .map(|c: &[i32; 2]| ((c[0] - 21).abs() + (c[1] - 17).abs()) as usize)
        .collect();
    assert_eq!(wave_moves, manhattan);
    for side in [4, 8, 16, 32] {
        let req = AgentsRequest {
            block_size: side,
            ..request(goal, starts.clone())
        };
        let resp = s.plan(req.clone()).expect("planning blocks");
        assert!(resp.success, "side {side}: {}", resp.message);
        assert_eq!(check_paths(&map, &req, &resp), manhattan, "side {side}");
    }
}

#[test]
fn agents_bad_options_are_errors_naming_them() {
    let s = service_with(unit_grid(WALL_WITH_GAP));
    for bad in [5, 2, 64, 1] {
        let req = AgentsRequest {
            block_size: bad,
            ..request(at(0, 2), vec![at(0, 0)])
        };
        let text = err_text(s.plan(req));
        assert!(text.starts_with("block_size:"), "{text}");
    }
    for good in [0, -3] {
        let req = AgentsRequest {
            block_size: good,
            ..request(at(0, 2), vec![at(0, 0)])
        };
        assert!(s.plan(req).is_ok(), "block_size {good}");
    }
    let req = AgentsRequest {
        backend: "gpu".into(),
        ..request(at(0, 2), vec![at(0, 0)])
    };
    let text = err_text(s.plan(req));
    assert!(
        text.starts_with("backend:") && text.contains("'gpu'"),
        "{text}"
    );
    // An empty backend is the settings' one, checked when used.
    let mut s = service_with(unit_grid(WALL_WITH_GAP));
    let req = AgentsRequest {
        backend: String::new(),
        ..request(at(0, 2), vec![at(0, 0)])
    };
    assert_eq!(s.plan(req.clone()).expect("default").backend, "cpu");
    s.set_settings(AgentsSettings {
        backend: "opencl".into(),
        ..AgentsSettings::default()
    });
    let text = err_text(s.plan(req));
    assert!(text.contains("'opencl'"), "{text}");
}

#[test]
fn agents_cuda_backend_without_a_gpu_is_a_clear_error() {
    let s = service_with(unit_grid(WALL_WITH_GAP));
    let cuda = AgentsRequest {
        backend: "cuda".into(),
        ..request(at(0, 2), vec![at(0, 0)])
    };
    let auto = AgentsRequest {
        backend: "auto".into(),
        ..cuda.clone()
    };
    // `auto` answers on either machine, with the backend it used; so does `hybrid` (the
    // collision backend's name, `auto` for grids).
    let hybrid = AgentsRequest {
        backend: "Hybrid".into(),
        ..cuda.clone()
    };
    let resp = s.plan(auto).expect("auto");
    assert!(resp.backend == "cpu" || resp.backend == "cuda");
    assert_eq!(resp.paths[0].len(), 9);
    let by_hybrid = s.plan(hybrid).expect("hybrid");
    assert_eq!(by_hybrid.backend, resp.backend);
    assert_eq!(by_hybrid.paths, resp.paths);
    if cuda_driver_present() && gpu::GpuGrid::shared().is_ok() {
        let resp = s.plan(cuda).expect("cuda on a GPU machine");
        assert_eq!(resp.backend, "cuda");
        assert!(resp.message.contains("backend cuda ("), "{}", resp.message);
        assert_eq!(resp.paths[0].len(), 9);
    } else {
        let text = err_text(s.plan(cuda));
        assert!(
            text.starts_with("backend 'cuda':") && text.contains("CUDA"),
            "{text}"
        );
    }
}

#[test]
fn agents_markers_draw_paths_and_starts() {
    let s = service_with(grid(WALL_WITH_GAP, 0.3, MapPose::default()));
    let m = |x: u32, y: u32| [(x as f64 + 0.5) * 0.3, (y as f64 + 0.5) * 0.3, 0.0];
    let starts = vec![m(0, 0), m(1, 1), m(6, 2), m(0, 2), [f64::NAN, 0.0, 0.0]];
    let resp = s.plan(request(m(0, 2), starts)).expect("plan");
    assert_eq!(resp.failed_agents, vec![1, 4]);
    let markers = agent_markers(&resp);
    // Agents 0 and 2 have paths; agent 3 is at the goal (one pose, nothing to draw).
    let lines: Vec<_> = markers
        .iter()
        .filter(|k| k.kind == AgentMarkerKind::LineStrip)
        .collect();
    assert_eq!(lines.iter().map(|l| l.id).collect::<Vec<_>>(), vec![0, 2]);
    for l in &lines {
        let agent = l.id as usize;
        assert_eq!(l.ns, AGENT_PATHS_NS);
        assert_eq!(l.frame_id, "map");
        assert_eq!(l.kind.ros_type(), 4);
        assert_eq!(l.color, agent_color(agent));
        assert!(l.scale[0] > 0.0 && l.scale[0] < 0.3);
        let expect: Vec<[f64; 3]> = resp.paths[agent].iter().map(|p| p.position).collect();
        assert_eq!(l.points, expect);
    }
    assert_ne!(agent_color(0), agent_color(2));
    let spheres: Vec<_> = markers
        .iter()
        .filter(|k| k.kind == AgentMarkerKind::SphereList)
        .collect();
    assert_eq!(spheres.len(), 1);
    let sp = spheres[0];
    assert_eq!((sp.ns.as_str(), sp.kind.ros_type()), (AGENT_STARTS_NS, 7));
    // The non-finite start is not drawn; the blocked one is red.
    assert_eq!(sp.points, vec![m(0, 0), m(1, 1), m(6, 2), m(0, 2)]);
    assert_eq!(
        sp.colors,
        vec![
            agent_color(0),
            FAILED_START_COLOR,
            agent_color(2),
            agent_color(3)
        ]
    );
}
