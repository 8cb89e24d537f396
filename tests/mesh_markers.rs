//! Mesh markers split into convex parts through the planning service (the node's
//! `~/obstacles` with `mesh_convex_parts` above 1): an open bin sent as a `TRIANGLE_LIST`
//! marker becomes obstacles `ns/id`, `ns/id/1`, ...; the tool inside it is free with the
//! parts and in collision with the hull; the service plans into it; a republished or moved
//! marker is not split again; fewer parts or the hull remove the parts left over; DELETE
//! removes them all; meshes that cannot be split are their hull with a note; a split object
//! cannot be attached.

mod common;

use gpu_motion_planner::collision::allowed::AllowRequest;
use gpu_motion_planner::collision::{Checker, MotionBatch};
use gpu_motion_planner::robot::decompose::Decomposition;
use gpu_motion_planner::scene::Shape;
use gpu_motion_planner::service::{
    AttachRequest, MarkerAction, MarkerKind, MarkerUpdate, MeshSplitter, PlanningService,
    ServiceError, ServiceSettings, StateCheckRequest,
};
use nalgebra::{Isometry3, Point3, Vector3};

use common::bin::{test_bin, BELOW, HALF, TOOL};
use common::bundled::bundled;
use common::service::{cpu_checker, names, request, service};

fn marker(action: MarkerAction, kind: MarkerKind, at: [f64; 3]) -> MarkerUpdate {
    MarkerUpdate {
        ns: "bins".into(),
        id: 3,
        action,
        kind,
        frame_id: "world".into(),
        pose: Isometry3::translation(at[0], at[1], at[2]),
        scale: [1.0; 3],
    }
}

/// The test bin as a `TRIANGLE_LIST` marker's points, and where it goes.
fn bin_list() -> (MarkerKind, [f64; 3]) {
    let (triangles, at) = test_bin();
    let points = triangles.into_iter().flatten().collect();
    (MarkerKind::TriangleList(points), at)
}

/// The service on the bundled robot with an empty scene, mesh markers split into at most
/// `parts`.
fn split_service(parts: u32) -> PlanningService {
    let mut s = service();
    s.apply_marker(marker(MarkerAction::DeleteAll, MarkerKind::Cube, [0.0; 3]))
        .expect("delete all");
    assert_eq!(s.scene().len(), 0);
    set_parts(&mut s, parts);
    s
}

fn set_parts(s: &mut PlanningService, parts: u32) {
    let settings = ServiceSettings {
        mesh_parts: Decomposition {
            max_parts: parts,
            ..Decomposition::default()
        },
        ..s.settings().clone()
    };
    s.set_settings(settings);
}

/// The ids of the scene's obstacles.
fn ids(s: &PlanningService) -> Vec<String> {
    s.scene().iter().map(|o| o.id.clone()).collect()
}

/// Whether the ids are exactly `bins/3`, `bins/3/1`, ... `bins/3/{n-1}` (in any order).
fn are_parts(ids: &[String], n: usize) -> bool {
    let mut want: Vec<String> = (0..n)
        .map(|k| {
            if k == 0 {
                "bins/3".to_string()
            } else {
                format!("bins/3/{k}")
            }
        })
        .collect();
    let mut got = ids.to_vec();
    want.sort();
    got.sort();
    got == want
}

#[test]
fn a_bin_marker_split_into_parts_lets_the_arm_in() {
    let b = bundled();
    let mut s = split_service(16);
    let empty = cpu_checker(&s);
    let (bin, at) = bin_list();
    let note = s
        .apply_marker(marker(MarkerAction::Add, bin.clone(), at))
        .expect("the bin marker");
    assert_eq!(note, None);
    let split = ids(&s);
    let n = split.len();
    assert!((2..=16).contains(&n), "{n} parts");
    assert!(are_parts(&split, n), "{split:?}");
    assert_eq!(s.mesh_splits(), 1);
    for o in s.scene().iter() {
        assert!(matches!(o.shape, Shape::ConvexMesh { .. }));
        assert_eq!(o.pose, Isometry3::translation(at[0], at[1], at[2]));
    }

    // Free inside the bin with the parts (a fresh checker of the service's scene, and the
    // service's own state check), in collision with the hull.
    let goals = b.down_at(TOOL, &cpu_checker(&s));
    assert!(!goals.is_empty(), "no free configuration in the bin");
    let state = |s: &mut PlanningService, q: &[f64]| {
        s.check_state(&StateCheckRequest {
            state: Some((names(s), q.to_vec())),
            group: None,
        })
        .expect("state check")
    };
    assert!(state(&mut s, &goals[0]).valid);

    // Planned into the bin from the neutral configuration; the path re-checked finely by a
    // fresh checker.
    let planned = s
        .plan(request(&s, &b.neutral(), &goals[0]))
        .expect("a plan into the bin");
    let fresh = cpu_checker(&s);
    let mut motions = MotionBatch::new(goals[0].len());
    for w in planned.path.windows(2) {
        motions.push(&w[0], &w[1]).unwrap();
    }
    let ok = fresh.check_motions(&motions, 0.002).unwrap();
    assert!(ok.iter().all(|&v| v), "a motion of the plan collides");
    let end = b.tool(planned.path.last().unwrap()).translation.vector;
    assert!((end - Vector3::from(TOOL)).norm() < 1e-3, "ends at {end:?}");

    // Republished, and moved: the same parts, not split again, all at the new pose.
    s.apply_marker(marker(MarkerAction::Modify, bin.clone(), at))
        .unwrap();
    let far = [at[0] - 0.6, at[1], at[2]];
    s.apply_marker(marker(MarkerAction::Add, bin.clone(), far))
        .unwrap();
    assert_eq!(s.mesh_splits(), 1);
    assert_eq!(ids(&s).len(), n);
    for o in s.scene().iter() {
        assert_eq!(o.pose, Isometry3::translation(far[0], far[1], far[2]));
    }
    s.apply_marker(marker(MarkerAction::Add, bin.clone(), at))
        .unwrap();

    // As its hull: one obstacle, the parts gone, the tool in the bin in collision.
    set_parts(&mut s, 1);
    s.apply_marker(marker(MarkerAction::Add, bin.clone(), at))
        .unwrap();
    assert_eq!(ids(&s), vec!["bins/3".to_string()]);
    let hull = cpu_checker(&s);
    for q in &goals {
        assert!(!hull.check_config(q).unwrap(), "the hull holds the tool");
    }
    assert!(!state(&mut s, &goals[0]).valid);

    // Fewer parts: those left over go. Then the parts again, from the kept split.
    set_parts(&mut s, 2);
    s.apply_marker(marker(MarkerAction::Add, bin.clone(), at))
        .unwrap();
    let fewer = ids(&s).len();
    assert!(fewer <= 2 && are_parts(&ids(&s), fewer), "{:?}", ids(&s));
    set_parts(&mut s, 16);
    s.apply_marker(marker(MarkerAction::Add, bin.clone(), at))
        .unwrap();
    assert_eq!(ids(&s).len(), n);
    assert_eq!(
        s.mesh_splits(),
        2,
        "the split into 16 is kept, the one into 2 made once"
    );
    assert!(state(&mut s, &goals[0]).valid);

    // A cube with the marker's id replaces all the parts.
    s.apply_marker(marker(MarkerAction::Add, MarkerKind::Cube, at))
        .unwrap();
    assert_eq!(ids(&s), vec!["bins/3".to_string()]);
    s.apply_marker(marker(MarkerAction::Add, bin.clone(), at))
        .unwrap();
    assert_eq!(ids(&s).len(), n);

    // An allowed collision with the marker covers its parts: a configuration through the
    // floor or a wall touching a part `bins/3/k` is valid once its links may touch `bins/3`.
    let [x, y, z] = TOOL;
    let through: Vec<Vec<f64>> = [[x, y, z - BELOW], [x + HALF, y, z - BELOW / 2.0]]
        .iter()
        .flat_map(|p| b.down_at(*p, &empty))
        .collect();
    let touching_a_part = through
        .iter()
        .find_map(|q| {
            let contacts = state(&mut s, q).contacts;
            contacts
                .iter()
                .any(|c| c.contains("obstacle 'bins/3/"))
                .then(|| (q.clone(), contacts))
        })
        .expect("a configuration touching a part beyond the first");
    let (q, contacts) = touching_a_part;
    let links: Vec<String> = contacts
        .iter()
        .filter_map(|c| c.split('\'').nth(1).map(str::to_string))
        .collect();
    s.allow_collisions(&AllowRequest {
        names: links,
        others: vec!["bins/3".into()],
        allowed: true,
        reset: false,
    })
    .expect("allowed");
    let after = state(&mut s, &q);
    assert!(after.valid, "{:?}", after.contacts);
    s.allow_collisions(&AllowRequest {
        reset: true,
        ..AllowRequest::default()
    })
    .expect("reset");
    assert!(!state(&mut s, &q).valid);

    // A split object cannot be attached, and nothing changes.
    let e = s
        .attach_object(AttachRequest {
            id: "bins/3".into(),
            link: None,
            touch_links: Vec::new(),
            object: None,
        })
        .unwrap_err();
    assert!(
        e.to_string().contains("bins/3") && e.to_string().contains("convex parts"),
        "{e}"
    );
    assert_eq!(ids(&s).len(), n);

    // DELETE removes every part; a second DELETE names the marker.
    s.apply_marker(marker(MarkerAction::Delete, MarkerKind::Cube, at))
        .unwrap();
    assert!(ids(&s).is_empty(), "{:?}", ids(&s));
    assert!(matches!(
        s.apply_marker(marker(MarkerAction::Delete, MarkerKind::Cube, at)),
        Err(ServiceError::UnknownMarker { marker }) if marker == "bins/3"
    ));
}

#[test]
fn meshes_that_cannot_be_split_are_their_hull_with_a_note() {
    let mut s = split_service(8);
    let (bin, at) = bin_list();
    let MarkerKind::TriangleList(points) = bin else {
        unreachable!()
    };

    // Not whole triangles.
    let mut ragged = points.clone();
    ragged.push(Point3::new(0.0, 0.0, 0.5));
    let note = s
        .apply_marker(marker(
            MarkerAction::Add,
            MarkerKind::TriangleList(ragged),
            at,
        ))
        .unwrap()
        .expect("a note");
    assert!(
        note.contains("bins/3") && note.contains("31 points") && note.contains("hull"),
        "{note}"
    );
    assert_eq!(ids(&s), vec!["bins/3".to_string()]);

    // A mesh file whose triangles were not read.
    let note = s
        .apply_marker(marker(
            MarkerAction::Add,
            MarkerKind::Mesh {
                points: points.clone(),
                triangles: Vec::new(),
            },
            at,
        ))
        .unwrap()
        .expect("a note");
    assert!(note.contains("no triangles"), "{note}");
    assert_eq!(ids(&s), vec!["bins/3".to_string()]);
    assert_eq!(s.mesh_splits(), 0);

    // The same surface as a mesh with its triangles, its corners shared as a mesh file's
    // loader gives them, is split like the triangle list.
    s.apply_marker(marker(
        MarkerAction::Add,
        MarkerKind::TriangleList(points.clone()),
        at,
    ))
    .unwrap();
    let listed = ids(&s).len();
    assert!(listed > 1);
    let mut corners: Vec<Point3<f64>> = Vec::new();
    let mut triangles = Vec::new();
    for t in points.chunks(3) {
        let mut tri = [0u32; 3];
        for (slot, p) in tri.iter_mut().zip(t) {
            *slot = match corners.iter().position(|c| c == p) {
                Some(i) => i as u32,
                None => {
                    corners.push(*p);
                    corners.len() as u32 - 1
                }
            };
        }
        triangles.push(tri);
    }
    assert_eq!(corners.len(), 8);
    let note = s
        .apply_marker(marker(
            MarkerAction::Add,
            MarkerKind::Mesh {
                points: corners,
                triangles,
            },
            at,
        ))
        .unwrap();
    assert_eq!(note, None);
    assert_eq!(ids(&s).len(), listed);
    assert_eq!(s.mesh_splits(), 2);

    // A bad marker changes nothing: three points enclose no volume.
    let before = ids(&s);
    let flat = vec![
        Point3::origin(),
        Point3::new(1.0, 0.0, 0.0),
        Point3::new(0.0, 1.0, 0.0),
    ];
    set_parts(&mut s, 1);
    assert!(matches!(
        s.apply_marker(marker(
            MarkerAction::Add,
            MarkerKind::TriangleList(flat),
            at
        )),
        Err(ServiceError::BadMarker { .. })
    ));
    assert_eq!(ids(&s), before);
}

/// The vertices of every obstacle of the scene, by id (sorted).
fn obstacle_vertices(s: &PlanningService) -> Vec<(String, Vec<Point3<f64>>)> {
    let mut v: Vec<(String, Vec<Point3<f64>>)> = s
        .scene()
        .iter()
        .map(|o| {
            let vertices = match &o.shape {
                Shape::ConvexMesh { polytope } => polytope.vertices.clone(),
                other => panic!("{}: not a convex mesh: {other:?}", o.id),
            };
            (o.id.clone(), vertices)
        })
        .collect();
    v.sort_by(|a, b| a.0.cmp(&b.0));
    v
}

/// The node splits meshes before it takes the service (`MeshSplitter::prepare`) and applies
/// them after (`apply_prepared`): the scene is the one `apply_marker` makes, the service
/// splits nothing itself, and a marker prepared for another split setting is made with the
/// service's current one.
#[test]
fn meshes_split_outside_the_service_give_the_same_scene() {
    let (bin, at) = bin_list();
    let mut direct = split_service(16);
    direct
        .apply_marker(marker(MarkerAction::Add, bin.clone(), at))
        .unwrap();
    let want = obstacle_vertices(&direct);
    assert!(want.len() > 1, "{want:?}");

    let mut s = split_service(16);
    let mut splitter = MeshSplitter::default();
    let how = s.settings().mesh_parts;
    let prepared = splitter.prepare(marker(MarkerAction::Add, bin.clone(), at), &how);
    assert_eq!(prepared.update().obstacle_id(), "bins/3");
    assert_eq!(splitter.splits(), 1);
    assert_eq!(s.apply_prepared(prepared).unwrap(), None);
    assert_eq!(s.mesh_splits(), 0, "the service split the mesh again");
    assert_eq!(obstacle_vertices(&s), want);

    // Moved: the splitter keeps the parts, and the service still splits nothing.
    let moved = [at[0] + 0.1, at[1], at[2]];
    let prepared = splitter.prepare(marker(MarkerAction::Modify, bin.clone(), moved), &how);
    s.apply_prepared(prepared).unwrap();
    assert_eq!((splitter.splits(), s.mesh_splits()), (1, 0));
    assert!(are_parts(&ids(&s), want.len()));

    // Prepared as a hull while the service splits: the service splits it itself.
    let hull = Decomposition::hull();
    let prepared = splitter.prepare(marker(MarkerAction::Add, bin.clone(), at), &hull);
    assert_eq!(splitter.splits(), 1);
    s.apply_prepared(prepared).unwrap();
    assert_eq!(s.mesh_splits(), 1);
    assert_eq!(obstacle_vertices(&s), want);

    // Prepared split while the service has since been set to hulls: one hull, the parts
    // removed.
    let prepared = splitter.prepare(marker(MarkerAction::Add, bin.clone(), at), &how);
    set_parts(&mut s, 1);
    s.apply_prepared(prepared).unwrap();
    assert_eq!(ids(&s), vec!["bins/3".to_string()]);
    let hull_vertices = obstacle_vertices(&s);
    assert_eq!(hull_vertices[0].1.len(), 8, "{hull_vertices:?}");

    // A prepared DELETE removes every part; a bad prepared marker is an error naming it and
    // changes nothing.
    set_parts(&mut s, 16);
    let prepared = splitter.prepare(marker(MarkerAction::Add, bin.clone(), at), &how);
    s.apply_prepared(prepared).unwrap();
    assert!(are_parts(&ids(&s), want.len()));
    let bad = splitter.prepare(
        marker(
            MarkerAction::Add,
            MarkerKind::TriangleList(vec![Point3::origin(); 3]),
            at,
        ),
        &how,
    );
    let e = s.apply_prepared(bad).unwrap_err();
    assert!(e.to_string().contains("bins/3"), "{e}");
    assert!(are_parts(&ids(&s), want.len()));
    let prepared = splitter.prepare(marker(MarkerAction::Delete, bin, at), &how);
    s.apply_prepared(prepared).unwrap();
    assert!(ids(&s).is_empty());
}
