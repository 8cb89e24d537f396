//! Allowed collisions edited at run time (`PlanningService::allow_collisions`): links that may
//! touch an obstacle, link pairs allowed or checked again, group names, entries that follow
//! their obstacle; bad requests change nothing.
//!
//! The reference for every verdict is independent of how the service builds its checkers: a
//! plain CPU checker of the whole world names every pair in contact, and the pairs the
//! entries allow are struck from its list.

mod common;

use common::service::{cpu_checker, names, pick_up, place, request, service, tool_pose_at, START};
use gpu_motion_planner::collision::Checker;
use gpu_motion_planner::scene::AllowedCollision;
use gpu_motion_planner::service::{
    AllowRequest, ErrorCategory, MarkerAction, MarkerKind, MarkerUpdate, PlanningService,
    StateCheckRequest,
};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// The pad's marker id.
const PAD: &str = "pad/0";

/// A 16 cm cube centred on the tool at [`START`]: the hand is inside it there.
fn add_pad(s: &mut PlanningService) {
    let at = tool_pose_at(s, &START).translation.vector;
    place(s, "pad", 0, MarkerKind::Cube, at, 0.16);
}

fn allow(s: &mut PlanningService, names: &[&str], others: &[&str], allowed: bool) {
    s.allow_collisions(&AllowRequest {
        names: names.iter().map(|n| n.to_string()).collect(),
        others: others.iter().map(|n| n.to_string()).collect(),
        allowed,
        reset: false,
    })
    .expect("allowed collisions");
}

/// The service's contacts at group configuration `q` (sorted).
fn contacts(s: &mut PlanningService, q: &[f64]) -> Vec<String> {
    let n = names(s);
    let mut c = s
        .check_state(&StateCheckRequest {
            state: Some((n, q.to_vec())),
            group: None,
        })
        .expect("check_state")
        .contacts;
    c.sort();
    c
}

/// The reference: every contact of a plain CPU checker of the whole world at `q`, less the
/// pairs `allowed` names (`(link, other)`, obstacles as the checker names them), sorted.
fn reference(s: &PlanningService, q: &[f64], allowed: &[(&str, &str)]) -> Vec<String> {
    let all = cpu_checker(s).contacts(q).expect("contacts");
    let struck = |c: &String| {
        allowed.iter().any(|(l, o)| {
            [
                format!("'{l}' with obstacle '{o}'"),
                format!("'{l}' with '{o}'"),
                format!("'{o}' with '{l}'"),
            ]
            .contains(c)
        })
    };
    let mut out: Vec<String> = all.into_iter().filter(|c| !struck(c)).collect();
    out.sort();
    out
}

/// `n` configurations around [`START`] (each joint within +-`spread` rad).
fn around_start(n: usize, spread: f64, seed: u64) -> Vec<Vec<f64>> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    (0..n)
        .map(|_| {
            START
                .iter()
                .map(|&v| v + rng.random_range(-spread..spread))
                .collect()
        })
        .collect()
}

#[test]
fn links_may_touch_an_allowed_obstacle_and_no_other() {
    let mut s = service();
    add_pad(&mut s);
    let before = contacts(&mut s, &START);
    let on_pad: Vec<String> = before
        .iter()
        .filter_map(|c| {
            c.strip_suffix(&format!(" with obstacle '{PAD}'"))
                .map(|l| l.trim_matches('\'').to_string())
        })
        .collect();
    assert!(
        !on_pad.is_empty() && on_pad.len() == before.len(),
        "the hand is in the pad at START and touches nothing else: {before:?}"
    );
    assert!(
        on_pad.len() >= 2,
        "several hand links in the pad: {on_pad:?}"
    );
    // The first of them may touch the pad: the others are still in it at START, and any
    // other link that reaches the pad elsewhere.
    let first = on_pad[0].as_str();
    allow(&mut s, &[first], &[PAD], true);
    let expected: Vec<String> = before[1..].to_vec();
    assert_eq!(contacts(&mut s, &START), expected);
    let allowed = [(first, PAD)];
    let (mut changed, mut still_on_pad, mut free) = (0, 0, 0);
    for q in around_start(1500, 0.9, 3) {
        let got = contacts(&mut s, &q);
        let want = reference(&s, &q, &allowed);
        assert_eq!(got, want, "contacts at {q:?}");
        let full = reference(&s, &q, &[]);
        changed += usize::from(full != want);
        still_on_pad += usize::from(want.iter().any(|c| c.ends_with(&format!("'{PAD}'"))));
        free += usize::from(want.is_empty());
    }
    // The sample exercises all three cases: contacts the entries allow, contacts of other
    // links with the pad, and free configurations.
    assert!(changed > 20, "allowed contacts in {changed} configurations");
    assert!(
        still_on_pad > 20,
        "other links on the pad in {still_on_pad}"
    );
    assert!(free > 20, "free in {free}");
    // With the whole hand allowed, START is free.
    let hand: Vec<&str> = on_pad.iter().map(String::as_str).collect();
    allow(&mut s, &hand, &[PAD], true);
    assert_eq!(contacts(&mut s, &START), Vec::<String>::new());
    // Taking the allowance back restores every contact.
    allow(&mut s, &hand, &[PAD], false);
    assert_eq!(contacts(&mut s, &START), before);
    assert!(s.allowed_collisions().is_empty());
}

#[test]
fn a_plan_may_start_in_an_allowed_contact() {
    let mut s = service();
    add_pad(&mut s);
    let goal = common::service::GOAL;
    let refused = s
        .plan(request(&s, &START, &goal))
        .expect_err("start in the pad");
    assert_eq!(
        refused.category(),
        ErrorCategory::StartInCollision,
        "{refused}"
    );
    let hand = allow_hand_on_pad(&mut s);
    let plan = s
        .plan(request(&s, &START, &goal))
        .expect("plan with the allowance");
    assert!(plan.trajectory.points.len() >= 2);
    assert_free_but_for_the_pad(&s, &plan.trajectory, &hand);
}

/// Allows the links in the pad at [`START`] to touch it; returns them.
fn allow_hand_on_pad(s: &mut PlanningService) -> Vec<String> {
    let hand: Vec<String> = contacts(s, &START)
        .iter()
        .map(|c| c.split('\'').nth(1).unwrap_or("").to_string())
        .collect();
    let names: Vec<&str> = hand.iter().map(String::as_str).collect();
    allow(s, &names, &[PAD], true);
    hand
}

/// Every point of `trajectory` free by the reference but for `hand` touching the pad.
fn assert_free_but_for_the_pad(
    s: &PlanningService,
    trajectory: &gpu_motion_planner::trajectory::Trajectory,
    hand: &[String],
) {
    let allowed: Vec<(&str, &str)> = hand.iter().map(|l| (l.as_str(), PAD)).collect();
    for p in &trajectory.points {
        assert_eq!(reference(s, &p.positions, &allowed), Vec::<String>::new());
    }
}

#[test]
fn link_pairs_can_be_checked_again_and_allowed() {
    let mut s = service();
    // Adjacent links overlap at their joint: checking such a pair again puts every
    // configuration in collision, naming it.
    assert_eq!(contacts(&mut s, &START), Vec::<String>::new());
    let pair = ["upper_arm_link", "forearm_link"];
    let rev = s.world_revision();
    allow(&mut s, &pair[..1], &pair[1..], false);
    assert_ne!(s.world_revision(), rev);
    assert_eq!(
        s.allowed_collisions(),
        vec![AllowedCollision {
            a: "forearm_link".into(),
            b: "upper_arm_link".into(),
            allowed: false
        }]
    );
    let c = contacts(&mut s, &START);
    assert!(
        c.iter()
            .any(|l| l.contains("'upper_arm_link'") && l.contains("'forearm_link'")),
        "{c:?}"
    );
    // Allowing it again is the model's own verdict: no entry is kept.
    allow(&mut s, &pair[..1], &pair[1..], true);
    assert!(s.allowed_collisions().is_empty());
    assert_eq!(contacts(&mut s, &START), Vec::<String>::new());

    // A self collision the model checks can be allowed.
    let mut rng = ChaCha8Rng::seed_from_u64(11);
    let group = s.group().expect("group");
    let (q, c) = (0..20000)
        .find_map(|_| {
            let q: Vec<f64> = (0..group.space.dof())
                .map(|k| rng.random_range(group.space.lower[k]..group.space.upper[k]))
                .collect();
            let c = reference(&s, &q, &[]);
            (c.len() == 1 && !c[0].contains("obstacle")).then_some((q, c))
        })
        .expect("a configuration with one self collision");
    let ab: Vec<&str> = c[0].split('\'').filter(|x| !x.contains("with")).collect();
    let ab: Vec<&str> = ab.into_iter().filter(|x| !x.trim().is_empty()).collect();
    assert_eq!(ab.len(), 2, "{c:?}");
    allow(&mut s, &ab[..1], &ab[1..], true);
    assert_eq!(contacts(&mut s, &q), Vec::<String>::new(), "{c:?} allowed");
    assert_eq!(s.allowed_collisions().len(), 1);
}

#[test]
fn group_names_stand_for_their_links() {
    let mut s = service();
    add_pad(&mut s);
    allow(&mut s, &["arm"], &[PAD], true);
    let entries = s.allowed_collisions();
    let links: Vec<&str> = entries.iter().map(|e| e.a.as_str()).collect();
    // The chain from base_link to tool0: the child links of its joints.
    for l in [
        "shoulder_link",
        "upper_arm_link",
        "forearm_link",
        "wrist_1_link",
        "wrist_2_link",
        "flange_link",
        "tool0",
    ] {
        assert!(links.contains(&l), "{l} in {links:?}");
    }
    assert!(!links.contains(&"base_link"), "{links:?}");
    assert!(entries.iter().all(|e| e.b == PAD && e.allowed));
    // The whole arm may touch the pad: no configuration collides with it.
    for q in around_start(200, 0.9, 5) {
        let c = contacts(&mut s, &q);
        assert!(c.iter().all(|l| !l.contains(PAD)), "{c:?}");
    }
    // reset drops every entry.
    s.allow_collisions(&AllowRequest {
        reset: true,
        ..Default::default()
    })
    .expect("reset");
    assert!(s.allowed_collisions().is_empty());
    assert!(!contacts(&mut s, &START).is_empty());
}

#[test]
fn entries_follow_their_obstacle() {
    let mut s = service();
    add_pad(&mut s);
    let n = names(&s);
    s.set_joint_state(&n, &START).expect("joint state");
    let hand: Vec<String> = contacts(&mut s, &START)
        .iter()
        .map(|c| c.split('\'').nth(1).unwrap_or("").to_string())
        .collect();
    let hand: Vec<&str> = hand.iter().map(String::as_str).collect();
    allow(&mut s, &hand, &[PAD], true);
    let entries = s.allowed_collisions();
    // Removed, the pad keeps its entries; added again, it is allowed again.
    s.apply_marker(MarkerUpdate {
        ns: "pad".into(),
        id: 0,
        action: MarkerAction::Delete,
        kind: MarkerKind::Cube,
        frame_id: String::new(),
        pose: nalgebra::Isometry3::identity(),
        scale: [1.0; 3],
    })
    .expect("delete");
    assert_eq!(s.allowed_collisions(), entries);
    add_pad(&mut s);
    assert_eq!(contacts(&mut s, &START), Vec::<String>::new());
    // Picked up by the tool, the pad is a link of the robot under the same name: the hand
    // links the entries name may still touch it.
    pick_up(&mut s, PAD);
    let c = contacts(&mut s, &START);
    assert_eq!(c, Vec::<String>::new());
    // Without the entries the held pad is in the hand's other links.
    s.allow_collisions(&AllowRequest {
        reset: true,
        ..Default::default()
    })
    .expect("reset");
    let c = contacts(&mut s, &START);
    assert!(c.iter().any(|l| l.contains(PAD)), "{c:?}");
}

#[test]
fn bad_requests_name_the_problem_and_change_nothing() {
    let mut s = service();
    add_pad(&mut s);
    place(
        &mut s,
        "block",
        0,
        MarkerKind::Cube,
        nalgebra::Vector3::new(0.5, 0.5, 0.05),
        0.1,
    );
    allow(&mut s, &["flange_link"], &[PAD], true);
    let entries = s.allowed_collisions();
    let rev = s.world_revision();
    let cases: [(&[&str], &[&str], &str); 4] = [
        (
            &["flange_link"],
            &["no_such_thing"],
            "'no_such_thing' is neither a link",
        ),
        (&[PAD], &["block/0"], "are both obstacles"),
        (&[], &[PAD], "'names' give at least one name"),
        (&["tool0"], &[], "'others' give at least one name"),
    ];
    for (a, b, want) in cases {
        let e = s
            .allow_collisions(&AllowRequest {
                names: a.iter().map(|x| x.to_string()).collect(),
                others: b.iter().map(|x| x.to_string()).collect(),
                allowed: true,
                reset: true,
            })
            .expect_err("refused");
        assert!(e.to_string().contains(want), "{e} (wanted '{want}')");
        assert_eq!(e.category(), ErrorCategory::InvalidObject);
        assert_eq!(s.allowed_collisions(), entries);
        assert_eq!(s.world_revision(), rev);
    }
    // No names and no reset: a query, nothing changes.
    let listed = s.allow_collisions(&AllowRequest::default()).expect("query");
    assert_eq!(listed, entries);
    assert_eq!(s.world_revision(), rev);
    // The same change twice: the second changes nothing.
    allow(&mut s, &["flange_link"], &[PAD], true);
    assert_eq!(s.world_revision(), rev);
}

#[test]
fn entries_travel_with_saved_scenes() {
    let mut s = service();
    add_pad(&mut s);
    allow(&mut s, &["flange_link", "wrist_2_link"], &[PAD], true);
    allow(&mut s, &["upper_arm_link"], &["forearm_link"], false);
    let entries = s.allowed_collisions();
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("cell.yaml");
    let text = s.save_scene(&path).expect("save");
    assert!(text.contains("allowed_collisions:"), "{text}");

    // Loaded into a service without them, the file brings the entries and their verdicts.
    let file = gpu_motion_planner::scene::Scene::from_file(&path).expect("read back");
    let mut t = service();
    let load = t.load_scene(&file, "cell.yaml", true).expect("load");
    assert_eq!(load.entries, entries.len());
    assert_eq!(t.allowed_collisions(), entries);
    for q in around_start(200, 0.9, 9) {
        assert_eq!(contacts(&mut t, &q), contacts(&mut s, &q), "at {q:?}");
    }
    // A service made with the scene applies them too.
    let (robot, _) = gpu_motion_planner::cli::demo::bundled().expect("bundled");
    let u = PlanningService::new(robot, file.clone(), Default::default());
    assert_eq!(u.allowed_collisions(), entries);
    assert!(u.attach_errors().is_empty());

    // An entry naming nothing known: the load is refused naming the file and the name, and
    // nothing changes; a new service leaves it out and says why.
    let mut bad = file.clone();
    let mut list = bad.allowed_collisions().to_vec();
    list.push(AllowedCollision {
        a: "tool0".into(),
        b: "ghost".into(),
        allowed: true,
    });
    bad.set_allowed_collisions(list);
    let mut v = service();
    let (obstacles, rev) = (v.scene().len(), v.world_revision());
    let e = v.load_scene(&bad, "bad.yaml", true).expect_err("refused");
    let msg = e.to_string();
    assert!(msg.contains("bad.yaml") && msg.contains("'ghost'"), "{msg}");
    assert_eq!(v.scene().len(), obstacles);
    assert!(v.allowed_collisions().is_empty());
    assert_eq!(v.world_revision().clone(), rev);
    let (robot, _) = gpu_motion_planner::cli::demo::bundled().expect("bundled");
    let w = PlanningService::new(robot, bad, Default::default());
    assert_eq!(w.allowed_collisions(), entries);
    assert!(
        w.attach_errors().len() == 1 && w.attach_errors()[0].contains("'ghost'"),
        "{:?}",
        w.attach_errors()
    );
}

/// On the GPU (skipped without one): the service's checkers with allowed collisions (a pad
/// the hand may touch, a self pair allowed) give the CPU's verdicts on the CUDA and the
/// hybrid backend, for configurations and motions around the pad; none offers the
/// GPU-resident planner, which would check one part's world only.
/// `GMP_ACM_CONFIGS` / `GMP_ACM_MOTIONS` size it (default 200000 / 20000).
#[test]
fn gpu_checkers_with_allowed_collisions_match_the_cpu() {
    use gpu_motion_planner::collision::{CheckerOptions, ConfigBatch, MotionBatch};
    if !common::gpu_or_skip("gpu_checkers_with_allowed_collisions_match_the_cpu") {
        return;
    }
    let mut s = service();
    add_pad(&mut s);
    allow(&mut s, &["flange_link"], &[PAD], true);
    allow(&mut s, &["base_link"], &["forearm_link"], true);
    let group = s.group().expect("group");
    let base = s.robot().tree.neutral_state();
    let (n, m) = (
        common::env_usize("GMP_ACM_CONFIGS", 200_000),
        common::env_usize("GMP_ACM_MOTIONS", 20_000),
    );
    let configs = around_start(n, 1.5, 21);
    let batch = ConfigBatch::from_rows(group.space.dof(), &configs).expect("configs");
    let ends = around_start(2 * m, 1.5, 22);
    let mut motions = MotionBatch::new(group.space.dof());
    for pair in ends.chunks(2) {
        motions.push(&pair[0], &pair[1]).expect("motion");
    }
    let resolution = s.settings().resolution;
    let cpu = s
        .world_checker("cpu", &group, &base, CheckerOptions::default())
        .expect("cpu");
    let want = cpu.check_configs(&batch).expect("cpu configs");
    let want_motions = cpu
        .check_motions(&motions, resolution)
        .expect("cpu motions");
    let free = want.iter().filter(|&&v| v).count();
    assert!(free > n / 20 && free < n - n / 20, "{free} of {n} free");
    for backend in ["cuda", "hybrid"] {
        let gpu = s
            .world_checker(backend, &group, &base, CheckerOptions::default())
            .expect(backend);
        assert!(gpu.device_planner().is_none(), "{backend}");
        let got = gpu.check_configs(&batch).expect("configs");
        let diff = got.iter().zip(&want).filter(|(a, b)| a != b).count();
        let got_motions = gpu.check_motions(&motions, resolution).expect("motions");
        let diff_motions = got_motions
            .iter()
            .zip(&want_motions)
            .filter(|(a, b)| a != b)
            .count();
        let free_motions = want_motions.iter().filter(|&&v| v).count();
        println!(
            "{backend}: {diff} of {n} configuration verdicts differ ({free} free), \
             {diff_motions} of {m} motion verdicts differ ({free_motions} free)"
        );
        assert_eq!((diff, diff_motions), (0, 0), "{backend}");
    }
}

/// A namespace `ns/*` stands for its obstacles now and later: marker namespaces, and the
/// point cloud's boxes, which each cloud replaces.
#[test]
fn namespaces_stand_for_their_obstacles_now_and_later() {
    let mut s = service();
    let n = names(&s);
    s.set_joint_state(&n, &START).expect("joint state");
    let at = tool_pose_at(&s, &START).translation.vector;
    place(&mut s, "bits", 0, MarkerKind::Cube, at, 0.16);
    let hand: Vec<String> = contacts(&mut s, &START)
        .iter()
        .map(|c| c.split('\'').nth(1).unwrap_or("").to_string())
        .collect();
    let hand: Vec<&str> = hand.iter().map(String::as_str).collect();
    allow(&mut s, &hand, &["bits/*"], true);
    assert_eq!(contacts(&mut s, &START), Vec::<String>::new());
    // A later marker of the namespace is allowed too; one of another namespace is not.
    place(&mut s, "bits", 1, MarkerKind::Cube, at, 0.12);
    assert_eq!(contacts(&mut s, &START), Vec::<String>::new());
    place(&mut s, "other", 0, MarkerKind::Cube, at, 0.12);
    let c = contacts(&mut s, &START);
    assert!(
        !c.is_empty() && c.iter().all(|l| l.contains("'other/0'")),
        "{c:?}"
    );
    // An empty namespace is unknown, the point cloud's is always known.
    let e = s
        .allow_collisions(&AllowRequest {
            names: vec!["tool0".into()],
            others: vec!["nothing/*".into()],
            allowed: true,
            reset: false,
        })
        .expect_err("empty namespace");
    assert!(e.to_string().contains("'nothing/*'"), "{e}");

    // The point cloud's boxes: a blob where the tool is at GOAL (away from the robot at
    // START, so the self filter keeps it).
    let goal = common::service::GOAL;
    let blob = tool_pose_at(&s, &goal).translation.vector;
    let points = |shift: f64| -> Vec<nalgebra::Point3<f64>> {
        let mut p = Vec::new();
        for i in -4..=4 {
            for j in -4..=4 {
                for k in -4..=4 {
                    let d = nalgebra::Vector3::new(i as f64, j as f64, k as f64) * 0.01;
                    p.push(nalgebra::Point3::from(
                        blob + d + nalgebra::Vector3::new(0.0, 0.0, shift),
                    ));
                }
            }
        }
        p
    };
    s.set_point_cloud("world", &points(0.0)).expect("cloud");
    let at_goal = contacts(&mut s, &goal);
    assert!(
        at_goal.iter().any(|l| l.contains("'pointcloud/")),
        "the cloud is in the hand at GOAL: {at_goal:?}"
    );
    let touching: Vec<String> = at_goal
        .iter()
        .filter(|l| l.contains("'pointcloud/"))
        .map(|c| c.split('\'').nth(1).unwrap_or("").to_string())
        .collect();
    let touching: Vec<&str> = touching.iter().map(String::as_str).collect();
    allow(&mut s, &touching, &["pointcloud/*"], true);
    let c = contacts(&mut s, &goal);
    assert!(c.iter().all(|l| !l.contains("'pointcloud/")), "{c:?}");
    // The next cloud's boxes (other ids, other places) are allowed as well.
    s.set_point_cloud("world", &points(0.02)).expect("cloud");
    let c = contacts(&mut s, &goal);
    let full = reference(&s, &goal, &[]);
    assert!(full.iter().any(|l| l.contains("'pointcloud/")), "{full:?}");
    assert!(c.iter().all(|l| !l.contains("'pointcloud/")), "{c:?}");
    assert!(s
        .allowed_collisions()
        .iter()
        .any(|e| e.b == "pointcloud/*" && e.allowed));
}

/// The `drm` planner's roadmap honours allowed contacts with obstacles: with the hand inside
/// the pad at the start and allowed to touch it, the roadmap's edges through the pad are left
/// to the query's checks (which allow the contact), and a `drm` plan starts there; every
/// point of it is free but for the allowed contacts. Without the allowance the start is
/// refused, as for the other planners.
#[test]
fn drm_plans_through_allowed_contacts() {
    let mut s = service();
    let mut settings = s.settings().clone();
    settings.roadmap_size = 200;
    s.set_settings(settings);
    add_pad(&mut s);
    let goal = common::service::GOAL;
    let drm = |s: &PlanningService| gpu_motion_planner::service::ServicePlanRequest {
        planner: Some("drm".into()),
        ..request(s, &START, &goal)
    };
    let refused = s.plan(drm(&s)).expect_err("start in the pad");
    assert_eq!(
        refused.category(),
        ErrorCategory::StartInCollision,
        "{refused}"
    );
    let strict = s
        .rebuild_roadmap()
        .expect("roadmap without the allowance")
        .labels;
    let hand = allow_hand_on_pad(&mut s);
    let plan = s.plan(drm(&s)).expect("drm plan with the allowance");
    assert_eq!(plan.planner, "drm");
    assert_free_but_for_the_pad(&s, &plan.trajectory, &hand);
    // The same roadmap with the allowance: the edges the pad alone made invalid are unknown.
    let lenient = s.roadmap_summary().expect("roadmap").labels;
    assert!(
        lenient.invalid < strict.invalid && lenient.unknown > strict.unknown,
        "{strict:?} -> {lenient:?}"
    );
}

/// A MoveIt `PlanningScene` YAML with an `allowed_collision_matrix` of `names` (true where
/// `allowed` says) and a 16 cm box `pad` on the tool at [`START`].
fn moveit_scene_with_matrix(
    s: &PlanningService,
    names: &[&str],
    allowed: impl Fn(&str, &str) -> bool,
) -> String {
    let at = tool_pose_at(s, &START).translation.vector;
    let rows: Vec<String> = names
        .iter()
        .map(|a| {
            let row: Vec<String> = names
                .iter()
                .map(|b| (a != b && allowed(a, b)).to_string())
                .collect();
            format!("    - [{}]", row.join(", "))
        })
        .collect();
    format!(
        "allowed_collision_matrix:\n  entry_names: [{}]\n  entry_values:\n{}\nworld:\n  \
         collision_objects:\n    - id: pad\n      header: {{frame_id: world}}\n      \
         primitives: [{{type: box, dimensions: [0.16, 0.16, 0.16]}}]\n      primitive_poses: \
         [{{position: [{}, {}, {}]}}]\n",
        names.join(", "),
        rows.join("\n"),
        at.x,
        at.y,
        at.z
    )
}

#[test]
fn a_moveit_scenes_allowed_collision_matrix_is_applied_with_unknown_names_left_aside() {
    // Which links the pad holds at START, from the scene without a matrix.
    let bare = {
        let s = service();
        moveit_scene_with_matrix(&s, &[], |_, _| false)
    };
    let file = gpu_motion_planner::scene::Scene::from_moveit_yaml_str(&bare).expect("scene");
    let mut plain = service();
    plain.load_scene(&file, "bare.yaml", true).expect("load");
    let hand: Vec<String> = contacts(&mut plain, &START)
        .iter()
        .filter(|c| c.contains("'pad'"))
        .map(|c| c.split('\'').nth(1).unwrap_or("").to_string())
        .collect();
    assert!(!hand.is_empty(), "the pad holds the hand at START");

    // The matrix: the hand with the pad allowed, and a link the robot lacks; every other
    // pair not allowed, among them two adjacent arm links, which stay as the robot model has
    // them (allowed).
    let mut names: Vec<&str> = hand.iter().map(String::as_str).collect();
    names.extend(["upper_arm_link", "forearm_link", "pad", "ghost_link"]);
    let is_hand = |n: &str| hand.iter().any(|h| h == n);
    let may_touch_pad = |n: &str| is_hand(n) || n == "ghost_link";
    let text = moveit_scene_with_matrix(&plain, &names, |a, b| {
        (may_touch_pad(a) && b == "pad") || (a == "pad" && may_touch_pad(b))
    });
    let file = gpu_motion_planner::scene::Scene::from_moveit_yaml_str(&text).expect("scene");
    let mut s = service();
    let load = s.load_scene(&file, "cell.yaml", true).expect("load");
    assert_eq!(load.matrix_unknown, vec!["ghost_link".to_string()]);

    // The same as the entries made one by one through the service.
    let mut t = service();
    t.load_scene(
        &gpu_motion_planner::scene::Scene::from_moveit_yaml_str(&bare).expect("scene"),
        "bare.yaml",
        true,
    )
    .expect("load");
    let hand_names: Vec<&str> = hand.iter().map(String::as_str).collect();
    allow(&mut t, &hand_names, &["pad"], true);
    assert_eq!(s.allowed_collisions(), t.allowed_collisions());
    assert_eq!(contacts(&mut s, &START), Vec::<String>::new());
    for q in around_start(100, 0.9, 12) {
        assert_eq!(contacts(&mut s, &q), contacts(&mut t, &q), "at {q:?}");
    }

    // A service made with the scene applies the matrix too, and names what it left aside.
    let (robot, _) = gpu_motion_planner::cli::demo::bundled().expect("bundled");
    let u = PlanningService::new(robot, file, Default::default());
    assert_eq!(u.allowed_collisions(), t.allowed_collisions());
    assert!(
        u.attach_errors().len() == 1 && u.attach_errors()[0].contains("ghost_link"),
        "{:?}",
        u.attach_errors()
    );
}
