//! The robot-specialised collision kernels (`src/gpu/specialise.rs`), without a GPU.
//!
//! 1. `specialised_kernels_compile_with_nvrtc`: the generated translation units of the bundled arm
//!    and of the MotionBenchMaker Panda, UR5 and Fetch (polytope and sphere models) compiles with
//!    NVRTC, holds the three kernels and no fused multiply-add. Skips without libnvrtc
//!    (`source scripts/nvrtc_env.sh` provides it).
//! 2. `specialised_source_matches_cpu_on_the_host`: the same generated code, compiled by the host
//!    C++ compiler against a few lines that stand in for the CUDA keywords (IEEE f32 without
//!    contraction on both sides), run on random configurations and motion steps in every MBM
//!    scene (and a scene with every obstacle kind): its verdicts must equal the CPU checker's, as
//!    must those of the generic table-driven twin in `common.cuh`. This checks the generator's
//!    logic everywhere CI runs; `tests/gpu_parity.rs` checks the compiled kernels on the GPU.
//!    Skips without a C++ compiler (`c++`, or `GMP_CXX`). `GMP_SPEC_HOST_CONFIGS` and
//!    `GMP_SPEC_HOST_STEPS` scale the batches (default 3000 and 1500 per scene).
//!
//! Both run every layout (`Layout::ALL`: inline, grouped, their folded builds, looped);
//! `GMP_SPEC_TEST_LAYOUTS=looped,grouped` restricts them.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use gpu_motion_planner::collision::detmath::Xf;
use gpu_motion_planner::collision::prox::ProxGrid;
use gpu_motion_planner::collision::{
    config_valid, frame_poses, frames_valid, prepare_motions, CollisionModel, MotionBatch,
    RobotShapes, SceneModel, Sweep, DEFAULT_MARGIN, NO_SWEEP,
};
use gpu_motion_planner::gpu::kernels::{self, host_twin};
use gpu_motion_planner::gpu::specialise::{generate_with, Layout, SpecialisedSource, PROX_EH_MAX};
use gpu_motion_planner::gpu::upload;
use gpu_motion_planner::gpu::PROX_CELL;
use gpu_motion_planner::robot::{PlanningGroup, RobotModel};
use gpu_motion_planner::scene::{Obstacle, Scene, Shape};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// A robot to specialise: its model, group, the scenes to test in and anchor configurations
/// (problem starts and goals) that random samples are perturbed around.
struct Robot {
    name: String,
    model: RobotModel,
    group: PlanningGroup,
    base: Vec<f64>,
    scenes: Vec<(String, Scene)>,
    anchors: Vec<Vec<f64>>,
    spheres: bool,
}

/// A box, a sphere, a cylinder and a convex mesh around `centre` (every obstacle kind).
fn every_kind(scene: &mut Scene, centre: [f64; 3]) {
    use nalgebra::{Isometry3, Vector3};
    let at = |dx: f64, dy: f64, dz: f64| {
        Isometry3::translation(centre[0] + dx, centre[1] + dy, centre[2] + dz)
    };
    let obstacles = [
        (
            "kind_box",
            Shape::Box {
                half_extents: Vector3::new(0.08, 0.12, 0.05),
            },
            at(0.0, 0.0, 0.0),
        ),
        (
            "kind_sphere",
            Shape::Sphere { radius: 0.1 },
            at(0.0, 0.35, 0.1),
        ),
        (
            "kind_cylinder",
            Shape::Cylinder {
                radius: 0.06,
                half_length: 0.2,
            },
            at(0.0, -0.35, 0.0),
        ),
        (
            "kind_mesh",
            Shape::ConvexMesh {
                polytope: common::small_mesh(),
            },
            at(-0.2, 0.0, 0.25),
        ),
    ];
    for (id, shape, pose) in obstacles {
        scene
            .add(Obstacle {
                id: id.into(),
                shape,
                pose,
            })
            .expect("obstacle added");
    }
}

fn bundled_arm() -> Robot {
    let root = common::root();
    let model = RobotModel::from_urdf_file(
        &root.join("urdf/gmp_arm.urdf"),
        Some(&root.join("urdf/gmp_arm.srdf")),
        &Default::default(),
    )
    .expect("bundled arm loads");
    let group = model.group("arm").expect("group arm");
    let mut scene = gpu_motion_planner::scene::load_scene(&root.join("config/default_scene.yaml"))
        .expect("bundled scene");
    every_kind(&mut scene, [0.35, -0.4, 0.35]);
    Robot {
        name: "gmp_arm".into(),
        base: model.tree.neutral_state(),
        group,
        scenes: vec![("default_scene+kinds".into(), scene)],
        anchors: Vec::new(),
        model,
        spheres: false,
    }
}

/// An MBM robot with the first problem of each scene (plus one scene with every obstacle kind).
fn mbm_robot(data: &Path, name: &str, spheres: bool) -> Robot {
    let r = gpu_motion_planner::mbm::load_robot(data, name).expect("robot loads");
    let problems = gpu_motion_planner::mbm::load_problems(data, name).expect("problems load");
    let picked: Vec<_> = problems.iter().filter(|p| p.index == 1).collect();
    let base = r.start_full_state(picked[0]);
    let mut scenes: Vec<(String, Scene)> = picked
        .iter()
        .map(|p| (p.scene_name.clone(), p.scene.clone()))
        .collect();
    let mut kinds = picked[0].scene.clone();
    every_kind(&mut kinds, [0.45, 0.0, 0.45]);
    scenes.push((format!("{}+kinds", picked[0].scene_name), kinds));
    let anchors = picked
        .iter()
        .flat_map(|p| {
            let (a, b) = r.start_goal(p).expect("start and goal");
            [a, b]
        })
        .collect();
    Robot {
        name: name.into(),
        model: r.model,
        group: r.group,
        base,
        scenes,
        anchors,
        spheres,
    }
}

fn robots() -> Vec<Robot> {
    let mut v = vec![bundled_arm()];
    match common::mbm_or_skip("specialise (MBM robots)") {
        Some(data) => {
            for name in ["panda", "ur5", "fetch"] {
                v.push(mbm_robot(&data, name, false));
                v.push(mbm_robot(&data, name, true));
            }
        }
        None => eprintln!("specialise: MBM data missing, only the bundled arm is checked"),
    }
    v
}

fn shapes(r: &Robot) -> RobotShapes {
    if r.spheres {
        RobotShapes::Spheres
    } else {
        RobotShapes::Polytopes
    }
}

fn label(r: &Robot) -> String {
    format!("{}/{:?}", r.name, shapes(r))
}

fn collision_model(r: &Robot) -> CollisionModel {
    CollisionModel::build(&r.model, &r.group, &r.base, shapes(r), DEFAULT_MARGIN)
        .expect("collision model")
}

fn specialised(r: &Robot, model: &CollisionModel, layout: Layout) -> SpecialisedSource {
    generate_with(model, layout)
        .unwrap_or_else(|e| panic!("{} ({layout:?}): generation failed: {e}", label(r)))
}

/// Every layout, the folded and looped ones included; `GMP_SPEC_TEST_LAYOUTS` (comma-separated
/// layout names) restricts both tests to some.
fn layouts() -> Vec<Layout> {
    match std::env::var("GMP_SPEC_TEST_LAYOUTS") {
        Ok(v) if !v.trim().is_empty() => v
            .split(',')
            .map(|n| {
                Layout::parse(n)
                    .unwrap_or_else(|| panic!("GMP_SPEC_TEST_LAYOUTS: unknown layout '{n}'"))
            })
            .collect(),
        _ => Layout::ALL.to_vec(),
    }
}

#[test]
fn specialised_kernels_compile_with_nvrtc() {
    if !common::nvrtc_or_skip("specialised_kernels_compile_with_nvrtc") {
        return;
    }
    let robots = robots();
    let sources: Vec<(String, SpecialisedSource)> = robots
        .iter()
        .flat_map(|r| {
            let model = collision_model(r);
            layouts()
                .into_iter()
                .map(|l| {
                    (
                        format!("{}/{}", label(r), l.name()),
                        specialised(r, &model, l),
                    )
                })
                .collect::<Vec<_>>()
        })
        .collect();
    // NVRTC compiles one translation unit per thread; the units compile side by side.
    let results = common::par_map(&sources, |(name, src)| {
        let t0 = std::time::Instant::now();
        let r = kernels::compile(&src.source, "compute_90")
            .map(|ptx| (ptx.to_src(), t0.elapsed().as_secs_f64()));
        (name.clone(), r)
    });
    for ((name, result), (_, src)) in results.into_iter().zip(&sources) {
        let (ptx, secs) = result.unwrap_or_else(|e| panic!("{name}: {e}"));
        if let Ok(dir) = std::env::var("GMP_PTX_OUT") {
            let file = name.replace('/', "_");
            let _ = std::fs::write(format!("{dir}/spec_{file}.ptx"), &ptx);
            let _ = std::fs::write(format!("{dir}/spec_{file}.cu"), &src.source);
        }
        common::assert_exact_collision_ptx(&name, &ptx);
        // The f16 pass's kernels exist exactly where the generated code has the pass.
        let half = src.generated.contains("#define GMP_CONFIG_HALF");
        for k in kernels::HALF_KERNEL_NAMES {
            assert_eq!(
                ptx.contains(&format!(".entry {k}(")),
                half,
                "{name}: kernel {k}"
            );
        }
        eprintln!(
            "nvrtc: {name} specialised ({:?}) compiles in {secs:.1} s, {} KiB of PTX",
            src.stats,
            ptx.len() / 1024
        );
    }
}

/// Runs every case folder given on the command line after an output tag (inputs written by
/// `write_case`, outputs `<tag>_<what>` beside them).
const HOST_MAIN: &str = r#"
static std::vector<uint32_t> load(const std::string& dir, const char* name) {
    std::vector<uint32_t> v;
    FILE* f = std::fopen((dir + "/" + name).c_str(), "rb");
    if (!f) { std::fprintf(stderr, "missing %s/%s\n", dir.c_str(), name); std::exit(2); }
    uint32_t w;
    while (std::fread(&w, 4, 1, f) == 1) v.push_back(w);
    std::fclose(f);
    if (v.empty()) v.push_back(0);
    return v;
}

static void save(const std::string& dir, const char* name, const std::vector<uint8_t>& v) {
    FILE* f = std::fopen((dir + "/" + name).c_str(), "wb");
    if (!f) std::exit(3);
    std::fwrite(v.data(), 1, v.size(), f);
    std::fclose(f);
}

template <class T> static const T* as(const std::vector<uint32_t>& v) {
    return reinterpret_cast<const T*>(v.data());
}

int main(int argc, char** argv) {
    if (argc < 2) return 4;
    const std::string tag = argv[1];
    for (int a = 2; a < argc; a++) {
        const std::string dir = argv[a];
        auto meta = load(dir, "meta");
        auto frames = load(dir, "frames"), bodies = load(dir, "bodies"), verts = load(dir, "verts");
        auto eo = load(dir, "edge_offsets"), et = load(dir, "edge_targets");
        auto spheres = load(dir, "spheres"), pairs = load(dir, "self_pairs");
        auto base = load(dir, "base_state"), vg = load(dir, "var_group"), reach = load(dir, "reach");
        auto obs = load(dir, "obstacles"), mv = load(dir, "mesh_verts");
        auto meo = load(dir, "mesh_edge_offsets"), met = load(dir, "mesh_edge_targets");
        auto q = load(dir, "configs"), sq = load(dir, "step_q"), sd = load(dir, "step_diff");
        auto sn = load(dir, "step_n");
        GmpModel m;
        m.frames = as<GmpFrame>(frames);
        m.bodies = as<GmpBody>(bodies);
        m.verts = as<float>(verts);
        m.edge_offsets = as<unsigned>(eo);
        m.edge_targets = as<unsigned>(et);
        m.spheres = as<float>(spheres);
        m.self_pairs = as<unsigned>(pairs);
        m.base_state = as<float>(base);
        m.var_group = as<int>(vg);
        m.obstacles = as<GmpObstacle>(obs);
        m.mesh_verts = as<float>(mv);
        m.mesh_edge_offsets = as<unsigned>(meo);
        m.mesh_edge_targets = as<unsigned>(met);
        m.reach = as<float>(reach);
        m.num_frames = meta[0];
        m.num_bodies = meta[1];
        m.num_self_pairs = meta[2];
        m.num_obstacles = meta[3];
        m.dof = meta[4];
        std::memcpy(&m.margin, &meta[5], 4);
        // The proximity grid (prox_meta[0] = 1), read by the configuration checks.
        auto prox = load(dir, "prox"), pm = load(dir, "prox_meta");
        m.prox = nullptr;
        if (pm[0] == 1u && pm.size() == 9) {
            m.prox = as<unsigned>(prox);
            std::memcpy(m.prox_lo, &pm[1], 12);
            std::memcpy(&m.prox_inv_h, &pm[4], 4);
            m.prox_dim[0] = pm[5];
            m.prox_dim[1] = pm[6];
            m.prox_dim[2] = pm[7];
            m.prox_always = pm[8];
        }
        const unsigned n_cfg = meta[6], n_step = meta[7], dof = meta[4];
        std::vector<uint8_t> spec_c(n_cfg), gen_c(n_cfg), spec_s(n_step), gen_s(n_step);
        for (unsigned i = 0; i < n_cfg; i++) {
            const float* row = as<float>(q) + (size_t)i * dof;
            spec_c[i] = gmp_spec_config_valid(m, row) ? 1 : 0;
            gen_c[i] = gmp_config_valid(m, row) ? 1 : 0;
        }
#ifdef GMP_CONFIG_HALF
        // The f16 pass as check_configs_half + check_configs_rest run it: its own verdicts where
        // it decides (0 free, 1 in collision), the exact code's where it does not (2).
        std::vector<uint8_t> half_c(n_cfg), pass_c(n_cfg);
        for (unsigned i = 0; i < n_cfg; i++) {
            const float* row = as<float>(q) + (size_t)i * dof;
            const unsigned h = GMP_CONFIG_HALF(m, row);
            half_c[i] = (uint8_t)h;
            pass_c[i] = h == 2u ? (gmp_spec_config_valid(m, row) ? 1 : 0) : (h == 0u ? 1 : 0);
        }
        save(dir, (tag + "_half_codes").c_str(), half_c);
        save(dir, (tag + "_half_configs").c_str(), pass_c);
#endif
        for (unsigned i = 0; i < n_step; i++) {
            const float* row = as<float>(sq) + (size_t)i * dof;
            const float* d = as<float>(sd) + (size_t)i * dof;
            spec_s[i] = (uint8_t)gmp_spec_step_status(m, row, d, sn[i]);
            gen_s[i] = (uint8_t)gmp_motion_step_status(m, row, d, sn[i]);
        }
        save(dir, (tag + "_spec_configs").c_str(), spec_c);
        save(dir, (tag + "_generic_configs").c_str(), gen_c);
        save(dir, (tag + "_spec_steps").c_str(), spec_s);
        save(dir, (tag + "_generic_steps").c_str(), gen_s);
    }
    return 0;
}
"#;

fn write_words(dir: &Path, name: &str, words: &[u32]) {
    let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
    std::fs::write(dir.join(name), bytes).expect("write case file");
}

fn f32_words(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}

/// The expected verdicts of one case, from the CPU reference.
struct Expected {
    configs: Vec<u8>,
    steps: Vec<u8>,
}

/// Random group configurations: uniform in the limits, or perturbations of the anchors.
fn sample(r: &Robot, rng: &mut ChaCha8Rng) -> Vec<f64> {
    let s = &r.group.space;
    if r.anchors.is_empty() || rng.random_bool(0.4) {
        return (0..s.dof())
            .map(|j| rng.random_range(s.lower[j]..=s.upper[j]))
            .collect();
    }
    let a = &r.anchors[rng.random_range(0..r.anchors.len())];
    let scale = [0.02, 0.1, 0.3, 0.8][rng.random_range(0..4)];
    (0..s.dof())
        .map(|j| {
            let n: f64 = (0..4).map(|_| rng.random_range(-1.0..1.0)).sum::<f64>() * 0.5;
            (a[j] + n * scale).clamp(s.lower[j], s.upper[j])
        })
        .collect()
}

/// The CPU's full f32 state for group values `q`.
fn full_state(model: &CollisionModel, q: &[f32]) -> Vec<f32> {
    let mut s = model.base_state.clone();
    for (k, &v) in q.iter().enumerate() {
        s[model.group_vars[k] as usize] = v;
    }
    s
}

/// Writes one case folder (robot, scene, inputs) and returns the CPU's verdicts for it.
#[allow(clippy::too_many_arguments)]
fn write_case(
    dir: &Path,
    r: &Robot,
    model: &CollisionModel,
    scene: &Scene,
    rng: &mut ChaCha8Rng,
    n_cfg: usize,
    n_step: usize,
    prox_reach: Option<f64>,
) -> Expected {
    std::fs::create_dir_all(dir).expect("case folder");
    let sm = SceneModel::build(scene);
    let rw = upload::RobotWords::build(model);
    let sw = upload::SceneWords::build(&sm);
    // The scene's proximity grid for the reach the kernels ask for (records in slot order, as
    // `SceneWords::build` writes them); the twins' configuration checks read it.
    let (grid, grid_meta) = match prox_reach {
        Some(reach) => {
            let refs: Vec<_> = sm.obstacles.iter().collect();
            let g = ProxGrid::build(&refs, reach, PROX_CELL);
            let mut meta = vec![1u32];
            meta.extend(g.lo.map(f32::to_bits));
            meta.push(g.inv_h.to_bits());
            meta.extend(g.dim);
            meta.push(g.always);
            (g.cells, meta)
        }
        None => (Vec::new(), vec![0u32]),
    };
    write_words(dir, "prox", &grid);
    write_words(dir, "prox_meta", &grid_meta);
    for (name, words) in [
        ("frames", &rw.frames),
        ("bodies", &rw.bodies),
        ("verts", &rw.verts),
        ("edge_offsets", &rw.edge_offsets),
        ("edge_targets", &rw.edge_targets),
        ("spheres", &rw.spheres),
        ("self_pairs", &rw.self_pairs),
        ("base_state", &rw.base_state),
        ("var_group", &rw.var_group),
        ("reach", &rw.reach),
        ("obstacles", &sw.obstacles),
        ("mesh_verts", &sw.mesh_verts),
        ("mesh_edge_offsets", &sw.mesh_edge_offsets),
        ("mesh_edge_targets", &sw.mesh_edge_targets),
    ] {
        write_words(dir, name, words);
    }
    let dof = model.dof();
    let mut frames: Vec<Xf> = Vec::new();
    // Configurations.
    let mut q = Vec::with_capacity(n_cfg * dof);
    let mut exp = Expected {
        configs: Vec::with_capacity(n_cfg),
        steps: Vec::with_capacity(n_step),
    };
    for i in 0..n_cfg {
        let mut c: Vec<f32> = sample(r, rng).iter().map(|&v| v as f32).collect();
        // A few joint values far outside the limits, beyond the range the folded builds handle
        // themselves (|qv| <= 1e4): they take the unfolded fallback there.
        if i % 500 == 7 {
            c[(i / 500) % dof] = [2.0e4, -3.5e4, 1.0e6, 1.00001e4][(i / 500) % 4];
        }
        let state = full_state(model, &c);
        exp.configs
            .push(u8::from(config_valid(model, &sm, &state, &mut frames)));
        q.extend_from_slice(&c);
    }
    // Motion steps: a few checked configurations of random motions at resolution 0.03, with the
    // motion's sweep (CpuChecker::motion_status, one step).
    let mut motions = MotionBatch::new(dof);
    let per_motion = 4;
    for _ in 0..n_step.div_ceil(per_motion) {
        let a = sample(r, rng);
        let b = sample(r, rng);
        motions.push(&a, &b).expect("motion");
    }
    // Every other motion at a fine resolution: growths of a few millimetres, within which the
    // sweep checks of the f16-pass builds read the proximity grid (PROX_EH_MAX).
    let coarse = prepare_motions(&r.group.space, &motions, 0.03).expect("prepared motions");
    let fine = prepare_motions(&r.group.space, &motions, 0.002).expect("prepared motions");
    let (mut sq, mut sd, mut sn) = (Vec::new(), Vec::new(), Vec::new());
    let mut small_growth = 0usize;
    'motions: for i in 0..coarse.segments.len() {
        let p = if i % 2 == 0 { &coarse } else { &fine };
        let n = p.segments[i];
        let start = &p.start[i * dof..(i + 1) * dof];
        let diff = &p.diff[i * dof..(i + 1) * dof];
        let sweep = Sweep::of_motion(model, diff, n);
        for _ in 0..per_motion {
            if sn.len() == n_step {
                break 'motions;
            }
            let step = rng.random_range(0..=n);
            let t = step as f32 / n as f32;
            let c: Vec<f32> = (0..dof).map(|j| start[j] + diff[j] * t).collect();
            frame_poses(model, &full_state(model, &c), &mut frames);
            let status = if frames_valid(model, &sm, &frames, &sweep) {
                0
            } else if !frames_valid(model, &sm, &frames, &NO_SWEEP) {
                1
            } else {
                2
            };
            exp.steps.push(status);
            let widest = (0..model.bodies.len())
                .map(|b| sweep.body(b))
                .fold(0.0f32, f32::max);
            small_growth += usize::from(widest <= 0.5 * PROX_EH_MAX);
            sq.extend_from_slice(&c);
            sd.extend_from_slice(diff);
            sn.push(n);
        }
    }
    assert!(
        small_growth * 4 >= sn.len(),
        "{}: only {small_growth} of {} motion steps grow every body by at most half of PROX_EH_MAX",
        r.name,
        sn.len()
    );
    write_words(dir, "configs", &f32_words(&q));
    write_words(dir, "step_q", &f32_words(&sq));
    write_words(dir, "step_diff", &f32_words(&sd));
    write_words(dir, "step_n", &sn);
    write_words(
        dir,
        "meta",
        &[
            model.frames.len() as u32,
            model.bodies.len() as u32,
            model.self_pairs.len() as u32,
            sm.obstacles.len() as u32,
            dof as u32,
            model.margin.to_bits(),
            exp.configs.len() as u32,
            exp.steps.len() as u32,
        ],
    );
    exp
}

/// Compiles the host twin of `src` as `<dir>/twin_<tag>`; returns the executable.
fn build_host_twin(
    cxx: &str,
    dir: &Path,
    tag: &str,
    src: &SpecialisedSource,
) -> Result<PathBuf, String> {
    let mut text = String::from(host_twin::PRELUDE);
    text.push_str(kernels::COMMON_CUH);
    text.push('\n');
    text.push_str(&src.generated);
    text.push_str(HOST_MAIN);
    host_twin::compile(cxx, dir, &format!("twin_{tag}"), &text)
}

fn read_bytes(dir: &Path, name: &str) -> Vec<u8> {
    std::fs::read(dir.join(name)).unwrap_or_else(|e| panic!("{}/{name}: {e}", dir.display()))
}

#[test]
fn specialised_source_matches_cpu_on_the_host() {
    let Some(cxx) = host_twin::compiler() else {
        eprintln!(
            "SKIP specialised_source_matches_cpu_on_the_host: no C++ compiler (c++ or GMP_CXX)"
        );
        return;
    };
    let n_cfg = common::env_usize("GMP_SPEC_HOST_CONFIGS", 3000);
    let n_step = common::env_usize("GMP_SPEC_HOST_STEPS", 1500);
    let tmp = tempfile::tempdir().expect("temporary folder");
    let robots = robots();
    // Write the cases and compute the CPU verdicts per robot; generate each layout's code.
    let mut work = Vec::new();
    let mut twins = Vec::new();
    for (ri, r) in robots.iter().enumerate() {
        let model = collision_model(r);
        let rdir = tmp.path().join(format!("r{ri}"));
        let mut rng = ChaCha8Rng::seed_from_u64(0x5bec_0000 + ri as u64);
        let sources: Vec<_> = layouts()
            .into_iter()
            .map(|l| (l, specialised(r, &model, l)))
            .collect();
        // One grid per scene for every layout: the largest reach any of them asks for (a grid
        // of a larger reach only leaves out fewer obstacles).
        let reach = sources
            .iter()
            .filter_map(|(_, s)| s.prox_reach)
            .reduce(f64::max);
        let mut cases = Vec::new();
        for (si, (scene_name, scene)) in r.scenes.iter().enumerate() {
            let cdir = rdir.join(format!("s{si}"));
            let exp = write_case(&cdir, r, &model, scene, &mut rng, n_cfg, n_step, reach);
            cases.push((scene_name.clone(), cdir, exp));
        }
        for (layout, src) in sources {
            twins.push((ri, layout, src));
        }
        work.push((label(r), rdir, cases));
    }
    // Build the twins side by side.
    let built = common::par_map(&twins, |(ri, layout, src)| {
        build_host_twin(&cxx, &work[*ri].1, layout.name(), src)
    });
    let mut failures = Vec::new();
    for ((ri, layout, src), exe) in twins.iter().zip(built) {
        let (robot, _, cases) = &work[*ri];
        let name = format!("{robot}/{}", layout.name());
        let exe = exe.unwrap_or_else(|e| panic!("{name}: {e}"));
        let tag = layout.name();
        let status = Command::new(&exe)
            .arg(tag)
            .args(cases.iter().map(|(_, d, _)| d))
            .status()
            .expect("run the host twin");
        assert!(status.success(), "{name}: host twin failed ({status})");
        let (mut configs, mut steps, mut free, mut uncertain) = (0, 0, 0, 0);
        // The f16 pass's codes (free, collision, undecided) by the CPU's verdict.
        let mut half_codes = [[0usize; 2]; 3];
        for (scene, dir, exp) in cases {
            for (what, file, want) in [
                ("specialised config", "spec_configs", &exp.configs),
                ("generic config", "generic_configs", &exp.configs),
                ("specialised step", "spec_steps", &exp.steps),
                ("generic step", "generic_steps", &exp.steps),
            ] {
                let got = read_bytes(dir, &format!("{tag}_{file}"));
                assert_eq!(got.len(), want.len(), "{name}/{scene}: {file} length");
                let bad: Vec<usize> = (0..got.len()).filter(|&i| got[i] != want[i]).collect();
                if let Some(&i) = bad.first() {
                    failures.push(format!(
                        "{name}/{scene}: {} {what} verdicts differ from the CPU (first: #{i}, \
                         cpu {} twin {})",
                        bad.len(),
                        want[i],
                        got[i]
                    ));
                }
            }
            if layout.half() && src.generated.contains("#define GMP_CONFIG_HALF") {
                let got = read_bytes(dir, &format!("{tag}_half_configs"));
                let codes = read_bytes(dir, &format!("{tag}_half_codes"));
                assert_eq!(got.len(), exp.configs.len(), "{name}/{scene}: half length");
                for (i, (&g, &c)) in got.iter().zip(&codes).enumerate() {
                    if g != exp.configs[i] || c > 2 || (c < 2 && c == exp.configs[i]) {
                        failures.push(format!(
                            "{name}/{scene}: f16 pass on configuration #{i}: code {c}, \
                             verdict {g}, cpu {}",
                            exp.configs[i]
                        ));
                        break;
                    }
                }
                for (i, &c) in codes.iter().enumerate() {
                    half_codes[c.min(2) as usize][usize::from(exp.configs[i])] += 1;
                }
            }
            configs += exp.configs.len();
            steps += exp.steps.len();
            free += exp.configs.iter().filter(|&&v| v == 1).count();
            uncertain += exp.steps.iter().filter(|&&v| v == 2).count();
        }
        eprintln!(
            "host twin: {name}: {configs} configurations ({:.1}% free), {steps} motion steps \
             ({uncertain} uncertain) in {} scenes; specialised {:?}",
            100.0 * free as f64 / configs.max(1) as f64,
            cases.len(),
            src.stats
        );
        let decided = |code: usize| half_codes[code][0] + half_codes[code][1];
        if decided(0) + decided(1) + decided(2) > 0 {
            eprintln!(
                "host twin: {name}: f16 pass: {} free, {} in collision, {} undecided \
                 ({} of them free)",
                decided(0),
                decided(1),
                decided(2),
                half_codes[2][1]
            );
            // The pass must decide both ways, and leave few to the exact code: only
            // configurations within about a millimetre of a contact (or near a mesh obstacle).
            if free > 0 && decided(0) == 0 || configs > free && decided(1) == 0 {
                failures.push(format!("{name}: the f16 pass decides only one way"));
            }
            if decided(2) * 10 > configs {
                failures.push(format!(
                    "{name}: the f16 pass leaves {} of {configs} configurations undecided",
                    decided(2)
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

/// `looped-half` on the MBM sphere models: the f16 pass (6-byte slots, every test grown and
/// shrunk by the rounding bound) is there beside the exact `looped-compact-fold` code, with the
/// same tables, and the configuration verdicts of small batches stay the exact code's.
#[test]
fn half_layout_passes_first_on_sphere_models() {
    let Some(data) = common::mbm_or_skip("half_layout_passes_first_on_sphere_models") else {
        return;
    };
    let pass = "if (gmp_spec_valid<false, true>(m, q, nullptr, 0u, &und)) return 0u;";
    let exact_entry = "return gmp_spec_valid<false>(m, q, nullptr, 0u);";
    for name in ["panda", "ur5", "fetch"] {
        let r = mbm_robot(&data, name, true);
        let m = collision_model(&r);
        let half = specialised(&r, &m, Layout::LoopedHalf);
        let exact = specialised(&r, &m, Layout::LoopedCompactFold);
        assert!(half.generated.contains(pass), "{name}");
        assert!(half
            .generated
            .contains("struct GmpLpSlotH { unsigned short x, y, z; };"));
        // Grown tests with the configuration's largest bound, then (where they fire) the centres'
        // own, then the shrunk tests: bodies against obstacles, sphere pairs.
        assert!(half
            .generated
            .contains("const float eh = HALF ? gmp_lp_eh(hmx) : 0.0f;"));
        assert!(half
            .generated
            .contains("const float rr = gmp_lp_f32(P.rab) + eh2;"));
        assert!(half
            .generated
            .contains("(SWEEP || HALF) ? b.r + gmp_lp_eg(s, eh) : b.r, o)) continue;"));
        assert!(half
            .generated
            .contains("if (!gmp_lp_near<K>(gmp_lp_c(s), b.r + gmp_lp_e(s), o)) continue;"));
        assert!(half
            .generated
            .contains("const float rg = rab + gmp_lp_e(a) + gmp_lp_e(b);"));
        assert!(half.generated.contains("if (HALF && !hok) {"));
        assert!(half
            .generated
            .contains("const float rs = b.r - gmp_lp_e(s);"));
        assert!(half
            .generated
            .contains("const float rs = rab - gmp_lp_e(a) - gmp_lp_e(b);"));
        assert!(half
            .generated
            .contains("#define GMP_CONFIG_HALF(m, q) gmp_spec_config_half(m, q)"));
        assert!(half.generated.contains(exact_entry), "{name}");
        assert!(exact.generated.contains(exact_entry), "{name}");
        assert!(!exact.generated.contains("GMP_CONFIG_HALF"), "{name}");
        // The shrunk tests need a reach that stays >= 0 with the radius: with a negative margin
        // the exact code runs alone.
        let negative = CollisionModel::build(&r.model, &r.group, &r.base, shapes(&r), -1e-3)
            .expect("collision model");
        let negative = specialised(&r, &negative, Layout::LoopedHalf);
        assert!(!negative.generated.contains("GMP_CONFIG_HALF"), "{name}");
        assert!(!negative.generated.contains("GmpLpSlotH"), "{name}");
        assert!(!exact.generated.contains("GmpLpSlotH"), "{name}");
        assert!(!exact.generated.contains(pass), "{name}");
        assert_eq!(half.stats.slots, exact.stats.slots, "{name}");
        assert_eq!(half.stats.sphere_pairs, exact.stats.sphere_pairs, "{name}");
        assert_eq!(
            half.generated.matches("// pair ").count(),
            exact.generated.matches("// pair ").count(),
            "{name}"
        );
    }
}

/// The f16 pass's configuration-wide growth (`gmp_lp_eh` of the largest |coordinate| that
/// `gmp_lp_put` tracks) is the largest of its centres' own growths (`gmp_lp_e` of each rounded
/// centre): the grown tests use it in place of each centre's, which is sound only if it is never
/// smaller. Host twin of the generated helpers, on centres from 1e-9 m (f16 subnormals and zero)
/// to 6e4 m, both signs, many per configuration.
#[test]
fn half_pass_largest_bound_is_its_centres_largest() {
    let Some(data) = common::mbm_or_skip("half_pass_largest_bound_is_its_centres_largest") else {
        return;
    };
    let Some(cxx) = host_twin::compiler() else {
        eprintln!("SKIP half_pass_largest_bound_is_its_centres_largest: no C++ compiler");
        return;
    };
    let r = mbm_robot(&data, "panda", true);
    let m = collision_model(&r);
    let half = specialised(&r, &m, Layout::LoopedHalf);
    let main = r#"
#include <cstdio>
#include <random>
int main() {
    std::mt19937_64 rng(7);
    std::uniform_real_distribution<double> u(0.0, 1.0);
    unsigned long long checked = 0, equal = 0;
    for (int t = 0; t < 200000; t++) {
        // One configuration: 1-80 centres at a common scale 10^[-9, 4.78], each coordinate
        // scaled again by 10^[-3, 0] and signed.
        const int n = 1 + (int)(u(rng) * 80.0);
        const double scale = pow(10.0, -9.0 + u(rng) * 13.78);
        GmpLpSlotH S[80];
        bool ok = true;
        float mx = 0.0f;
        for (int i = 0; i < n; i++) {
            float c[3];
            for (int k = 0; k < 3; k++) {
                const double x = scale * pow(10.0, -3.0 * u(rng)) * (u(rng) < 0.5 ? -1.0 : 1.0);
                c[k] = (float)fmin(fmax(x, -65504.0), 65504.0);
            }
            gmp_lp_put(S, (unsigned)i, v3(c[0], c[1], c[2]), 0.0f, ok, mx);
        }
        if (!ok) { printf("centre out of range at %d\n", t); return 2; }
        float largest = 0.0f;
        for (int i = 0; i < n; i++) largest = fmaxf(largest, gmp_lp_e(S[i]));
        const float eh = gmp_lp_eh(mx);
        checked++;
        if (eh < largest) { printf("smaller: eh %a < %a at %d\n", eh, largest, t); return 1; }
        if (eh == largest) equal++;
    }
    printf("checked %llu equal %llu\n", checked, equal);
    return 0;
}
"#;
    let mut text = String::from(host_twin::PRELUDE);
    text.push_str(kernels::COMMON_CUH);
    text.push('\n');
    text.push_str(&half.generated);
    text.push_str(main);
    let tmp = tempfile::tempdir().expect("temporary folder");
    let exe = host_twin::compile(&cxx, tmp.path(), "half_bound", &text).expect("twin compiles");
    let out = Command::new(&exe).output().expect("twin runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    // Not only never smaller: the same value (rounding is monotone and odd), every time.
    assert_eq!(stdout.trim(), "checked 200000 equal 200000", "{stdout}");
}
