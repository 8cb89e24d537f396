//! Grid planner tests: maps and files, A*, P-BA* (CPU twin), the wavefront, the CUDA kernels'
//! compilation, and (on a GPU machine) CPU twin == GPU.

use std::path::{Path, PathBuf};

use gpu_motion_planner::grid::astar::{validate_path, AStar};
use gpu_motion_planner::grid::bench::random_map;
use gpu_motion_planner::grid::cli::{run_bench_grid, run_grid, BenchGridArgs, GridArgs};
use gpu_motion_planner::grid::pba::{self, block_field, BlockLayout, CpuPba, INF};
use gpu_motion_planner::grid::{
    cuda_driver_present, gpu, plan_agents, AgentPaths, AgentsFile, CostModel, Failure, GridBackend,
    GridError, GridMap, Method, PathSource, PlanParams,
};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

fn params(method: Method, backend: GridBackend) -> PlanParams {
    PlanParams {
        method,
        backend,
        ..Default::default()
    }
}

fn pba(side: u32, repair_rounds: u32) -> Method {
    Method::Pba {
        side,
        repair_rounds,
    }
}

/// Every found path is valid (4-connected, passable, start to goal) and costs what it says.
fn check_valid(map: &GridMap, goal: [i64; 2], r: &AgentPaths, model: &CostModel) {
    let costs = map.costs(model);
    let g = map.index(goal[0], goal[1]).unwrap();
    for a in &r.agents {
        if let Ok(p) = &a.path {
            let s = map.index(a.start[0], a.start[1]).unwrap();
            let cells: Vec<u32> = p.cells.iter().map(|c| c[1] * map.width() + c[0]).collect();
            let cost = validate_path(&costs, map.width(), s, g, &cells)
                .unwrap_or_else(|e| panic!("agent {:?}: {e}", a.start));
            assert_eq!(cost, p.cost, "agent {:?}", a.start);
            if let Some(o) = a.optimal_cost {
                assert!(p.cost >= o);
                if p.source == PathSource::Wavefront {
                    assert_eq!(p.cost, o);
                }
            }
        }
    }
}

#[test]
fn grid_astar_known_shortest_paths() {
    // A wall with one gap: the path must go through the gap.
    let map = GridMap::from_ascii(&[
        ".....", //
        "####.", //
        ".....", //
    ])
    .unwrap();
    let costs = map.costs(&CostModel::default());
    let mut a = AStar::new(&costs, 5, 3);
    // from (0,2) top-left to (0,0) bottom-left: right 4, down 2, left 4 = 10 moves
    let p = a
        .search(map.index(0, 2).unwrap(), map.index(0, 0).unwrap())
        .unwrap();
    assert_eq!(p.cost, 10);
    assert_eq!(p.cells.len(), 11);
    assert_eq!(p.cells[5], map.index(4, 1).unwrap());
    // Open grid: Manhattan distance.
    let open = GridMap::new(7, 4, vec![0; 28]).unwrap();
    let c = open.costs(&CostModel::default());
    let mut a = AStar::new(&c, 7, 4);
    assert_eq!(a.search(0, 27).unwrap().cost, 6 + 3);
    // Walled-off goal: no path.
    let closed = GridMap::from_ascii(&["..#.", "..#."]).unwrap();
    let c = closed.costs(&CostModel::default());
    let mut a = AStar::new(&c, 4, 2);
    assert!(a.search(0, 3).is_none());
}

#[test]
fn grid_weighted_costs_prefer_cheap_cells() {
    // Middle row is costly (value 40 -> cost 1 + 40*10/100 = 5); a detour is cheaper.
    let map = GridMap::from_ascii(&[
        ".....", //
        ".444.", //
        ".....", //
    ])
    .unwrap();
    let model = CostModel {
        cost_scale: 10,
        ..Default::default()
    };
    let costs = map.costs(&model);
    assert_eq!(costs[map.index(2, 1).unwrap() as usize], 5);
    let mut a = AStar::new(&costs, 5, 3);
    let s = map.index(0, 1).unwrap();
    let g = map.index(4, 1).unwrap();
    let p = a.search(s, g).unwrap();
    assert_eq!(p.cost, 6); // up, 4 right, down
    let r = plan_agents(
        &map,
        [4, 1],
        &[[0, 1]],
        &PlanParams {
            cost_model: model,
            backend: GridBackend::Cpu,
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(r.agents[0].path.as_ref().unwrap().cost, 6);
    check_valid(&map, [4, 1], &r, &model);
}

#[test]
fn grid_wavefront_matches_astar_on_random_maps() {
    let mut rng = ChaCha8Rng::seed_from_u64(3);
    for (side, rate) in [(16u32, 10u32), (33, 20), (40, 25)] {
        let goal = [side / 2, side / 3];
        let map = random_map(side, rate, &[goal], &mut rng).unwrap();
        let costs = map.costs(&CostModel::default());
        let starts: Vec<[i64; 2]> = (0..60)
            .map(|_| {
                [
                    rng.random_range(0..side) as i64,
                    rng.random_range(0..side) as i64,
                ]
            })
            .collect();
        let g = [goal[0] as i64, goal[1] as i64];
        let r = plan_agents(
            &map,
            g,
            &starts,
            &params(Method::Wavefront, GridBackend::Cpu),
        )
        .unwrap();
        check_valid(&map, g, &r, &CostModel::default());
        let mut a = AStar::new(&costs, side, side);
        let gc = map.index(g[0], g[1]).unwrap();
        for (s, res) in starts.iter().zip(&r.agents) {
            let sc = map.index(s[0], s[1]).unwrap();
            let want = a.search(sc, gc).map(|p| p.cost);
            match &res.path {
                Ok(p) => assert_eq!(Some(p.cost), want),
                Err(Failure::StartBlocked) => assert!(costs[sc as usize] < 0),
                Err(Failure::Unreachable) => assert_eq!(want, None),
                Err(f) => panic!("unexpected failure {f:?}"),
            }
            assert_eq!(
                res.optimal_cost,
                if costs[sc as usize] < 0 { None } else { want }
            );
        }
    }
}

#[test]
fn grid_pba_paths_valid_and_completion_solves_every_solvable_agent() {
    let mut rng = ChaCha8Rng::seed_from_u64(11);
    for side_block in [4u32, 8, 16, 32] {
        for rate in [10u32, 25] {
            let side = 45u32; // not a multiple of the block side: partial blocks at the edges
            let goal = [side - 3, 2];
            let map = random_map(side, rate, &[goal], &mut rng).unwrap();
            let starts: Vec<[i64; 2]> = (0..80)
                .map(|_| {
                    [
                        rng.random_range(0..side) as i64,
                        rng.random_range(0..side) as i64,
                    ]
                })
                .collect();
            let g = [goal[0] as i64, goal[1] as i64];
            let paper = PlanParams {
                complete_failures: false,
                ..params(pba(side_block, 0), GridBackend::Cpu)
            };
            let r0 = plan_agents(&map, g, &starts, &paper).unwrap();
            check_valid(&map, g, &r0, &CostModel::default());
            let full = params(pba(side_block, 8), GridBackend::Cpu);
            let r = plan_agents(&map, g, &starts, &full).unwrap();
            check_valid(&map, g, &r, &CostModel::default());
            for (a, a0) in r.agents.iter().zip(&r0.agents) {
                // every solvable agent is solved; unsolvable ones are reported, not dropped
                match (&a.path, a.optimal_cost) {
                    (Ok(_), Some(_)) => {}
                    (Err(Failure::Unreachable), None) => {}
                    (Err(Failure::StartBlocked), None) => {}
                    other => panic!("agent {:?}: {other:?}", a.start),
                }
                // paper mode reports its failures as such
                if let Err(f) = &a0.path {
                    assert!(matches!(
                        f,
                        Failure::PbaFailed | Failure::StartBlocked | Failure::Unreachable
                    ));
                }
            }
            assert_eq!(r.agents.len(), starts.len());
        }
    }
}

#[test]
fn grid_block_field_equals_per_border_tile_search() {
    // The paper runs one local search per border tile; our block field must give each border
    // tile the same value: min over exits v of (in-block distance + cost(v) + H(v)).
    let mut rng = ChaCha8Rng::seed_from_u64(5);
    let side = 24u32;
    let map = random_map(side, 20, &[[20, 20]], &mut rng).unwrap();
    let costs = map.costs(&CostModel::default());
    let goal = map.index(20, 20).unwrap();
    for bs in [4u32, 8] {
        let layout = BlockLayout::new(side, side, bs);
        let h: Vec<u32> = (0..costs.len() as u32)
            .map(|c| gpu_motion_planner::grid::astar::manhattan(c, goal, side) + (c % 3))
            .collect();
        let mut field = vec![INF; costs.len()];
        for b in 0..layout.blocks() {
            block_field(&costs, side, side, bs, goal, &h, b, &mut field);
        }
        for &t in &layout.border {
            if costs[t as usize] < 0 {
                assert_eq!(field[t as usize], INF);
                continue;
            }
            // brute force: Dijkstra from t inside its block
            let b = layout.block(t);
            let mut dist = vec![u64::MAX; costs.len()];
            dist[t as usize] = 0;
            let mut heap = std::collections::BinaryHeap::new();
            heap.push(std::cmp::Reverse((0u64, t)));
            let mut best = u64::MAX;
            while let Some(std::cmp::Reverse((d, u))) = heap.pop() {
                if d != dist[u as usize] {
                    continue;
                }
                if u == goal {
                    best = best.min(d);
                }
                for k in 0..4 {
                    let Some(v) = gpu_motion_planner::grid::astar::neighbour(u, k, side, side)
                    else {
                        continue;
                    };
                    if costs[v as usize] < 0 {
                        continue;
                    }
                    let nd = d + costs[v as usize] as u64;
                    if layout.block(v) != b {
                        best = best.min(nd + h[v as usize] as u64);
                    } else if nd < dist[v as usize] {
                        dist[v as usize] = nd;
                        heap.push(std::cmp::Reverse((nd, v)));
                    }
                }
            }
            let want = if best == u64::MAX { INF } else { best as u32 };
            assert_eq!(field[t as usize], want, "border tile {t} block side {bs}");
        }
    }
}

#[test]
fn grid_pba_loop_is_detected_and_repaired() {
    // A cul-de-sac facing the goal: Manhattan-greedy block searches walk into it and loop.
    let map = GridMap::from_ascii(&[
        "................", //
        "................", //
        "..############..", //
        "..#..........#..", //
        "..#..........#..", //
        "..#..........#..", //
        "..#..........#..", //
        "..#..........#..", //
        "..#..........#..", //
        "..#..........#..", //
        "..#..........#..", //
        "..#..........#..", //
        "..#..........#..", //
        "..#..........#..", //
        "................", //
        "................", //
    ])
    .unwrap();
    // goal above the cup, start inside it: must leave through the open bottom
    let goal = [8i64, 15];
    let start = [[8i64, 4]];
    let paper = PlanParams {
        complete_failures: false,
        report_optimal: false,
        ..params(pba(4, 0), GridBackend::Cpu)
    };
    let r0 = plan_agents(&map, goal, &start, &paper).unwrap();
    assert_eq!(r0.agents[0].path, Err(Failure::PbaFailed));
    let repaired = PlanParams {
        complete_failures: false,
        ..params(pba(4, 64), GridBackend::Cpu)
    };
    let r = plan_agents(&map, goal, &start, &repaired).unwrap();
    assert!(r.stats.repair_rounds > 0);
    let p = r.agents[0].path.as_ref().expect("repair finds the way out");
    assert_eq!(p.source, PathSource::Pba);
    check_valid(&map, goal, &r, &CostModel::default());
    assert!(p.cost >= r.agents[0].optimal_cost.unwrap());
    // and with completion but no repair the wavefront solves it optimally
    let r = plan_agents(&map, goal, &start, &params(pba(4, 0), GridBackend::Cpu)).unwrap();
    let p = r.agents[0].path.as_ref().unwrap();
    assert_eq!(p.source, PathSource::Wavefront);
    assert_eq!(Some(p.cost), r.agents[0].optimal_cost);
}

#[test]
fn grid_unsolvable_and_bad_starts_are_reported() {
    let map = GridMap::from_ascii(&[
        ".....#...", //
        ".....#.#.", //
        ".....#...", //
    ])
    .unwrap();
    // goal on the left; (7,1) is an obstacle, the right part is cut off
    let starts = [[0i64, 0], [6, 1], [7, 1], [20, 0], [-1, 2]];
    for method in [Method::Wavefront, pba(4, 4)] {
        let r = plan_agents(&map, [1, 1], &starts, &params(method, GridBackend::Cpu)).unwrap();
        assert_eq!(r.agents.len(), 5);
        assert!(r.agents[0].path.is_ok());
        assert_eq!(r.agents[1].path, Err(Failure::Unreachable));
        assert_eq!(r.agents[2].path, Err(Failure::StartBlocked));
        assert_eq!(r.agents[3].path, Err(Failure::StartOutside));
        assert_eq!(r.agents[4].path, Err(Failure::StartOutside));
        assert_eq!(r.stats.failed, 4);
    }
    // the goal as a start: a zero-length path
    let r = plan_agents(
        &map,
        [1, 1],
        &[[1, 1]],
        &params(pba(8, 0), GridBackend::Cpu),
    )
    .unwrap();
    let p = r.agents[0].path.as_ref().unwrap();
    assert_eq!(p.cost, 0);
    assert_eq!(p.cells, vec![[1, 1]]);
}

#[test]
fn grid_bad_grids_give_clear_errors() {
    assert!(matches!(
        GridMap::new(3, 3, vec![0; 8]),
        Err(GridError::SizeMismatch {
            width: 3,
            height: 3,
            len: 8
        })
    ));
    assert!(matches!(
        GridMap::new(0, 5, vec![]),
        Err(GridError::EmptyGrid { .. })
    ));
    assert!(matches!(
        GridMap::new(2, 1, vec![0, 101]),
        Err(GridError::BadCellValue {
            index: 1,
            value: 101
        })
    ));
    let map = GridMap::from_ascii(&["..#"]).unwrap();
    let e = plan_agents(&map, [2, 0], &[[0, 0]], &PlanParams::default()).unwrap_err();
    assert!(matches!(
        e,
        GridError::GoalBlocked {
            x: 2,
            y: 0,
            value: 100
        }
    ));
    assert!(e.to_string().contains("obstacle"));
    let e = plan_agents(&map, [3, 0], &[[0, 0]], &PlanParams::default()).unwrap_err();
    assert!(matches!(e, GridError::GoalOutside { .. }));
    let e = plan_agents(
        &map,
        [0, 0],
        &[[1, 0]],
        &params(pba(5, 0), GridBackend::Cpu),
    )
    .unwrap_err();
    assert!(matches!(e, GridError::BadBlockSide(5)));
    // unknown cells are obstacles unless allowed
    let map = GridMap::from_ascii(&[".?."]).unwrap();
    let r = plan_agents(
        &map,
        [2, 0],
        &[[0, 0]],
        &params(Method::Wavefront, GridBackend::Cpu),
    )
    .unwrap();
    assert_eq!(r.agents[0].path, Err(Failure::Unreachable));
    let mut p = params(Method::Wavefront, GridBackend::Cpu);
    p.cost_model.unknown_passable = true;
    let r = plan_agents(&map, [2, 0], &[[0, 0]], &p).unwrap();
    assert_eq!(r.agents[0].path.as_ref().unwrap().cost, 2);
}

#[test]
fn grid_incremental_update_recomputes_only_affected_blocks() {
    let mut rng = ChaCha8Rng::seed_from_u64(9);
    let side = 64u32;
    let map = random_map(side, 15, &[[60, 60]], &mut rng).unwrap();
    let costs = map.costs(&CostModel::default());
    let goal = map.index(60, 60).unwrap();
    let mut state = CpuPba::new(costs.clone(), side, side, 8, goal);
    let all: Vec<u32> = (0..state.layout.blocks()).collect();
    state.border_to_border(&all);
    state.chains();
    // close a cell and open another
    let a = map.index(10, 10).unwrap();
    let b = map.index(33, 47).unwrap();
    let dirty = state.update_costs(&[(a, -1), (b, 1)]);
    assert!(
        !dirty.is_empty() && dirty.len() < all.len() / 4,
        "dirty {}",
        dirty.len()
    );
    state.border_to_border(&dirty);
    state.chains();
    let mut changed = costs.clone();
    changed[a as usize] = -1;
    changed[b as usize] = 1;
    let mut fresh = CpuPba::new(changed, side, side, 8, goal);
    fresh.border_to_border(&all);
    fresh.chains();
    assert_eq!(state.field, fresh.field);
    assert_eq!(state.dir, fresh.dir);
    assert_eq!(state.next, fresh.next);
    assert_eq!(state.ok, fresh.ok);
    let starts: Vec<u32> = (0..(side * side)).step_by(37).collect();
    assert_eq!(
        state.start_to_border(&starts),
        fresh.start_to_border(&starts)
    );
}

fn tmp() -> tempfile::TempDir {
    tempfile::tempdir().unwrap()
}

#[test]
fn grid_map_files_pgm_png_yaml_json() {
    let dir = tmp();
    // 3x2 image, top row first: white, black, grey(mid) / black, white, white
    let pixels: [u8; 6] = [255, 0, 128, 0, 255, 255];
    let expect = [100i8, 0, 0, 0, 100, -1]; // bottom row first
                                            // P5
    let mut p5 = b"P5\n# a comment\n3 2\n255\n".to_vec();
    p5.extend_from_slice(&pixels);
    let p5_path = dir.path().join("m.pgm");
    std::fs::write(&p5_path, &p5).unwrap();
    let m = GridMap::load(&p5_path).unwrap();
    assert_eq!((m.width(), m.height()), (3, 2));
    assert_eq!(m.data(), &expect[..]);
    // P2
    let p2_path = dir.path().join("a.pgm");
    std::fs::write(&p2_path, "P2\n3 2\n255\n255 0 128\n0 255 255\n").unwrap();
    assert_eq!(GridMap::load(&p2_path).unwrap().data(), &expect[..]);
    // PNG
    let png_path = dir.path().join("m.png");
    {
        let f = std::fs::File::create(&png_path).unwrap();
        let mut enc = png::Encoder::new(std::io::BufWriter::new(f), 3, 2);
        enc.set_color(png::ColorType::Grayscale);
        enc.set_depth(png::BitDepth::Eight);
        let mut w = enc.write_header().unwrap();
        w.write_image_data(&pixels).unwrap();
    }
    assert_eq!(GridMap::load(&png_path).unwrap().data(), &expect[..]);
    // map_server YAML with negate and a resolution
    let yaml_path = dir.path().join("map.yaml");
    std::fs::write(
        &yaml_path,
        "image: m.png\nresolution: 0.05\norigin: [1.0, 2.0, 0.0]\nnegate: 1\noccupied_thresh: 0.65\nfree_thresh: 0.196\n",
    )
    .unwrap();
    let m = GridMap::load(&yaml_path).unwrap();
    assert_eq!(m.data(), &[0, 100, 100, 100, 0, -1][..]);
    assert_eq!(m.resolution, 0.05);
    assert_eq!(m.origin, [1.0, 2.0, 0.0]);
    // plain grids
    let json_path = dir.path().join("g.json");
    std::fs::write(
        &json_path,
        r#"{"width": 2, "height": 2, "data": [0, 100, -1, 0]}"#,
    )
    .unwrap();
    assert_eq!(
        GridMap::load(&json_path).unwrap().data(),
        &[0, 100, -1, 0][..]
    );
    let bad = dir.path().join("bad.yaml");
    std::fs::write(&bad, "width: 2\nheight: 2\ndata: [0, 0, 0]\n").unwrap();
    assert!(matches!(
        GridMap::load(&bad),
        Err(GridError::SizeMismatch { len: 3, .. })
    ));
    let trunc = dir.path().join("t.pgm");
    std::fs::write(&trunc, b"P5 4 4 255\n\x00\x00").unwrap();
    let e = GridMap::load(&trunc).unwrap_err();
    assert!(e.to_string().contains("t.pgm"), "{e}");
    assert!(matches!(
        GridMap::load(Path::new("x.bmp")),
        Err(GridError::UnknownFormat(_))
    ));
    // agents files
    let agents = dir.path().join("agents.yaml");
    std::fs::write(&agents, "starts:\n  - [1, 2]\n  - [3, 4]\n").unwrap();
    assert_eq!(
        AgentsFile::load(&agents).unwrap().starts,
        vec![[1, 2], [3, 4]]
    );
}

#[test]
fn grid_cli_prints_paths_as_json() {
    let dir = tmp();
    let map = dir.path().join("g.json");
    std::fs::write(
        &map,
        r#"{"width": 4, "height": 3, "data": [0,0,0,0, 0,100,100,0, 0,0,0,0]}"#,
    )
    .unwrap();
    let agents = dir.path().join("a.json");
    std::fs::write(&agents, r#"{"starts": [[0, 0], [1, 1], [3, 2]]}"#).unwrap();
    for method in ["wavefront", "pba"] {
        let args = GridArgs {
            map: map.clone(),
            goal: "3,0".into(),
            agents: agents.clone(),
            method: method.into(),
            block: 4,
            repair_rounds: 4,
            no_completion: false,
            occupied_threshold: 50,
            unknown_passable: false,
            cost_scale: 0,
            backend: GridBackend::Cpu,
        };
        let v = run_grid(&args).unwrap();
        let a = v["agents"].as_array().unwrap();
        assert_eq!(a.len(), 3);
        assert_eq!(a[0]["cost"], 3);
        assert_eq!(a[0]["path"][0], serde_json::json!([0, 0]));
        assert_eq!(a[1]["found"], false);
        assert_eq!(a[1]["failure"], "StartBlocked");
        assert_eq!(a[2]["cost"], 2);
    }
    let args = GridArgs {
        map: map.clone(),
        goal: "3;0".into(),
        agents,
        method: "wavefront".into(),
        block: 4,
        repair_rounds: 0,
        no_completion: false,
        occupied_threshold: 50,
        unknown_passable: false,
        cost_scale: 0,
        backend: GridBackend::Cpu,
    };
    assert!(matches!(
        run_grid(&args),
        Err(GridError::BadArgument { .. })
    ));
}

#[test]
fn grid_bench_quick_writes_json_and_markdown() {
    let dir = tmp();
    let args = BenchGridArgs {
        out: dir.path().to_path_buf(),
        quick: true,
        parts: "table1,scale".into(),
        sizes: Some("32".into()),
        rates: "10,25".into(),
        maps: Some(3),
        scale_sizes: Some("64".into()),
        agents: Some("50".into()),
        scale_rate: 10,
        astar_sample: 20,
        block: 8,
        table1_repair_rounds: 2,
        repair_rounds: 4,
        backend: GridBackend::Cpu,
        seed: 1,
    };
    let v = run_bench_grid(&args).unwrap();
    assert_eq!(v["device"], "cpu-only");
    let t1 = v["table1"].as_array().unwrap();
    assert_eq!(t1.len(), 2);
    for row in t1 {
        assert_eq!(row["every_astar_path_found"], true);
    }
    let sc = &v["scale"][0];
    assert_eq!(sc["every_solvable_solved"], true);
    assert_eq!(sc["astar_cost_mismatches"], 0);
    let files: Vec<PathBuf> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert!(files
        .iter()
        .any(|p| p.extension().is_some_and(|e| e == "json")));
    let md = files
        .iter()
        .find(|p| p.extension().is_some_and(|e| e == "md"))
        .unwrap();
    let text = std::fs::read_to_string(md).unwrap();
    assert!(text.contains("cpu-only") && text.contains("Table I"));
}

/// Finds libnvrtc on the loader path (cudarc panics when it cannot load it).
fn nvrtc_present() -> bool {
    let mut dirs: Vec<PathBuf> = std::env::var("LD_LIBRARY_PATH")
        .unwrap_or_default()
        .split(':')
        .filter(|s| !s.is_empty())
        .map(PathBuf::from)
        .collect();
    dirs.extend(
        [
            "/usr/lib/x86_64-linux-gnu",
            "/usr/local/cuda/lib64",
            "/usr/lib64",
            "/usr/lib",
        ]
        .map(PathBuf::from),
    );
    dirs.iter().any(|d| {
        std::fs::read_dir(d).is_ok_and(|rd| {
            rd.flatten()
                .any(|e| e.file_name().to_string_lossy().starts_with("libnvrtc.so"))
        })
    })
}

#[test]
fn grid_kernels_compile_with_nvrtc() {
    if !nvrtc_present() {
        eprintln!(
            "SKIP grid_kernels_compile_with_nvrtc: libnvrtc not found on LD_LIBRARY_PATH \
             (pip install nvidia-cuda-nvrtc==13.0.88 and add its nvidia/cu13/lib folder)"
        );
        return;
    }
    let ptx = cudarc::nvrtc::compile_ptx_with_opts(
        gpu::KERNEL_SOURCE,
        gpu::compile_options("compute_90"),
    )
    .unwrap_or_else(|e| panic!("kernels/grid_pba.cu does not compile: {e:?}"));
    let text = ptx.to_src();
    for name in gpu::KERNEL_NAMES {
        assert!(
            text.contains(&format!(".entry {name}")),
            "kernel {name} missing from the PTX"
        );
    }
}

fn gpu_available(test: &str) -> bool {
    if !cuda_driver_present() {
        eprintln!("SKIP {test}: no CUDA driver on this machine");
        return false;
    }
    if let Err(e) = gpu::GpuGrid::shared() {
        eprintln!("SKIP {test}: no usable CUDA device ({e})");
        return false;
    }
    true
}

#[test]
fn grid_gpu_and_cpu_twin_give_identical_paths() {
    if !gpu_available("grid_gpu_and_cpu_twin_give_identical_paths") {
        return;
    }
    let mut rng = ChaCha8Rng::seed_from_u64(21);
    for (side, rate) in [(45u32, 10u32), (64, 20), (100, 25), (130, 15)] {
        let goal = [side / 2, side / 2 + 1];
        let map = random_map(side, rate, &[goal], &mut rng).unwrap();
        let starts: Vec<[i64; 2]> = (0..300)
            .map(|_| {
                [
                    rng.random_range(0..side) as i64,
                    rng.random_range(0..side) as i64,
                ]
            })
            .collect();
        let g = [goal[0] as i64, goal[1] as i64];
        let mut methods = vec![Method::Wavefront];
        for bs in [4u32, 8, 16, 32] {
            methods.push(pba(bs, 0));
            methods.push(pba(bs, 12));
        }
        for m in methods {
            let cpu = plan_agents(&map, g, &starts, &params(m, GridBackend::Cpu)).unwrap();
            let gpu = plan_agents(&map, g, &starts, &params(m, GridBackend::Cuda)).unwrap();
            assert_ne!(gpu.stats.backend, "cpu");
            assert_eq!(
                cpu.agents, gpu.agents,
                "map {side} rate {rate} method {m:?}"
            );
            assert_eq!(cpu.stats.repair_rounds, gpu.stats.repair_rounds);
            assert_eq!(cpu.stats.blocks_computed, gpu.stats.blocks_computed);
            check_valid(&map, g, &gpu, &CostModel::default());
        }
    }
}

#[test]
fn grid_gpu_weighted_costs_and_large_map() {
    if !gpu_available("grid_gpu_weighted_costs_and_large_map") {
        return;
    }
    let mut rng = ChaCha8Rng::seed_from_u64(4);
    let side = 300u32;
    let n = (side * side) as usize;
    let data: Vec<i8> = (0..n)
        .map(|_| match rng.random_range(0..100) {
            0..=14 => 100,
            15..=40 => rng.random_range(1..49),
            _ => 0,
        })
        .collect();
    let map = GridMap::new(side, side, data).unwrap();
    let mut map = map;
    map.set(150, 150, 0).unwrap();
    let model = CostModel {
        cost_scale: 200,
        ..Default::default()
    };
    let starts: Vec<[i64; 2]> = (0..2000)
        .map(|_| {
            [
                rng.random_range(0..side) as i64,
                rng.random_range(0..side) as i64,
            ]
        })
        .collect();
    for m in [Method::Wavefront, pba(8, 16), pba(32, 4)] {
        let p = |b| PlanParams {
            cost_model: model,
            ..params(m, b)
        };
        let cpu = plan_agents(&map, [150, 150], &starts, &p(GridBackend::Cpu)).unwrap();
        let gpu = plan_agents(&map, [150, 150], &starts, &p(GridBackend::Cuda)).unwrap();
        assert_eq!(cpu.agents, gpu.agents, "method {m:?}");
        check_valid(&map, [150, 150], &gpu, &model);
    }
    // distance field twin
    let costs = map.costs(&model);
    let d = pba::distance_field(&costs, side, side, map.index(150, 150).unwrap());
    assert_eq!(d[map.index(150, 150).unwrap() as usize], 0);
}
