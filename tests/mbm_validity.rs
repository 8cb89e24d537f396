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
