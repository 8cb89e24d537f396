//! Every start and goal of the 2100 MotionBenchMaker problems classified by the checker.
//!
//! Published (VAMP, sphere model): valid problems Panda 699/700, UR5 608/700 (VAMP README) or
//! 689/700 (re-measured on this machine kind, see ../shared/data/mbm/README.md), Fetch
//! 679/700. The counts we get, and why they differ, are recorded in README.md.

mod common;

use gpu_motion_planner::cli::{mbm_validity, MbmValidityArgs};

fn counts(shapes: &str) -> Option<serde_json::Value> {
    common::mbm_or_skip("mbm_validity")?;
    let v = mbm_validity(&MbmValidityArgs {
        robots: vec!["panda".into(), "ur5".into(), "fetch".into()],
        shapes: shapes.into(),
        sphere_tolerance: 0.01,
        max_spheres: 16,
        margin: gpu_motion_planner::collision::DEFAULT_MARGIN,
    })
    .expect("all problems load and check");
    for r in ["panda", "ur5", "fetch"] {
        eprintln!(
            "{shapes} {r}: {}/{} valid; per scene {}",
            v[r]["valid"], v[r]["total"], v[r]["per_scene"]
        );
        assert_eq!(v[r]["total"], 700, "{r}: every problem must load");
    }
    Some(v)
}

#[test]
fn mbm_problems_classified_with_sphere_model() {
    let Some(v) = counts("spheres") else { return };
    let got = |r: &str| v[r]["valid"].as_u64().unwrap();
    // With VAMP's own sphere model we reproduce VAMP's counts for Panda and UR5 exactly; for
    // Fetch we find one invalid problem more than VAMP's 679 (see README: 7 of our 22 invalid
    // Fetch problems are self-collisions of the sphere model, 5 of them the tucked start state
    // shared by table_under_pick problems).
    assert_eq!(got("panda"), 699);
    assert_eq!(got("ur5"), 689);
    assert_eq!(got("fetch"), 678);
}

#[test]
fn mbm_problems_classified_with_polytope_model() {
    let Some(v) = counts("polytopes") else { return };
    let got = |r: &str| v[r]["valid"].as_u64().unwrap();
    // Recorded in README.md; a change here means the collision model changed.
    eprintln!(
        "polytope model: panda {} ur5 {} fetch {}",
        got("panda"),
        got("ur5"),
        got("fetch")
    );
    assert!(got("panda") > 0 && got("ur5") > 0 && got("fetch") > 0);
}

/// The scenes' own allowed collision matrices (their robot's SRDF pairs, with names of links
/// the benchmark's URDFs lack) change no start or goal verdict when applied as a scene's
/// matrix is (`make_scene_checker`: what `gmp plan --scene` and the node do), and the names
/// they cannot use are left aside instead of refusing the scene.
#[test]
fn mbm_scene_matrices_leave_every_verdict_as_the_srdf_has_it() {
    use gpu_motion_planner::collision::{
        allowed::scene_entries, make_checker, make_scene_checker, CheckerOptions, ConfigBatch,
        RobotShapes,
    };
    let Some(data) = common::mbm_or_skip("mbm_validity") else {
        return;
    };
    for name in ["panda", "ur5", "fetch"] {
        let r = gpu_motion_planner::mbm::load_robot(&data, name).expect("robot");
        let problems = gpu_motion_planner::mbm::load_problems(&data, name).expect("problems");
        let mut unknown = std::collections::BTreeSet::new();
        let mut with_entries = 0;
        for shapes in [RobotShapes::Spheres, RobotShapes::Polytopes] {
            for p in &problems {
                let (start, goal) = r.start_goal(p).expect("start and goal");
                let base = r.start_full_state(p);
                let opts = CheckerOptions {
                    shapes,
                    threads: 1,
                    ..Default::default()
                };
                let srdf = make_checker("cpu", &r.model, &r.group, &base, &p.scene, opts)
                    .expect("checker");
                let own = make_scene_checker("cpu", &r.model, &r.group, &base, &p.scene, opts)
                    .expect("checker with the scene's matrix");
                let (entries, left_aside) = scene_entries(&r.model, &p.scene);
                with_entries += usize::from(!entries.is_empty());
                unknown.extend(left_aside);
                let batch = ConfigBatch::from_rows(start.len(), &[start, goal]).expect("batch");
                assert_eq!(
                    srdf.check_configs(&batch).expect("check"),
                    own.check_configs(&batch).expect("check"),
                    "{name} {} {}",
                    p.scene_name,
                    p.index
                );
            }
        }
        assert!(with_entries > 0, "{name}: the matrices give entries");
        eprintln!("{name}: names left aside {unknown:?}");
        if name == "ur5" {
            assert!(unknown.contains("box_link"), "{unknown:?}");
        }
    }
}
