mod common;

use common::space;
use gpu_motion_planner::roadmap::{NearestNeighbors, Neighbor, NnError};
use gpu_motion_planner::robot::JointSpace;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

fn random_point(s: &JointSpace, rng: &mut ChaCha8Rng) -> Vec<f64> {
    (0..s.dof())
        .map(|j| rng.random_range(s.lower[j]..=s.upper[j]))
        .collect()
}

fn brute(s: &JointSpace, pts: &[Vec<f64>], q: &[f64]) -> Vec<Neighbor> {
    let mut all: Vec<Neighbor> = pts
        .iter()
        .enumerate()
        .map(|(id, p)| Neighbor {
            id,
            distance: s.distance(q, p),
        })
        .collect();
    all.sort_by(|a, b| a.distance.total_cmp(&b.distance).then(a.id.cmp(&b.id)));
    all
}

#[test]
fn queries_match_brute_force_with_wrap_around() {
    for (dof, cont) in [
        (2, vec![]),
        (2, vec![1]),
        (3, vec![0, 2]),
        (7, vec![6]),
        (9, vec![]),
    ] {
        let s = space(dof, &cont);
        let mut rng = ChaCha8Rng::seed_from_u64(dof as u64);
        let mut nn = NearestNeighbors::new(&s).unwrap();
        let mut pts = Vec::new();
        for id in 0..600 {
            let p = random_point(&s, &mut rng);
            nn.insert(&p, id).unwrap();
            pts.push(p);
        }
        assert_eq!(nn.len(), 600);
        for _ in 0..50 {
            let mut q = random_point(&s, &mut rng);
            // Continuous joints may be given outside [-PI, PI].
            for &j in &cont {
                q[j] += 2.0 * std::f64::consts::PI;
            }
            let truth = brute(&s, &pts, &q);
            let near = nn.nearest(&q).unwrap().unwrap();
            assert_eq!(near.id, truth[0].id, "dof {dof} cont {cont:?}");
            let k = nn.k_nearest(&q, 10).unwrap();
            let ids: Vec<usize> = k.iter().map(|n| n.id).collect();
            let want: Vec<usize> = truth[..10].iter().map(|n| n.id).collect();
            assert_eq!(ids, want);
            let r = truth[25].distance;
            let within = nn.within(&q, r).unwrap();
            let want: Vec<usize> = truth
                .iter()
                .filter(|n| n.distance <= r)
                .map(|n| n.id)
                .collect();
            assert_eq!(within.iter().map(|n| n.id).collect::<Vec<_>>(), want);
        }
    }
}

/// `nearest` (a blocked scan of the points up to `SCAN_MAX` of them, images across the seams
/// enumerated without allocating) answers exactly what the k-d tree's `k_nearest(q, 1)`
/// answers: at every size up to 300 uniform points, then on a set grown like an RRT tree at
/// every size around the scan limit, with several continuous joints and queries at the
/// seams.
#[test]
fn nearest_is_k_nearest_one_at_every_size() {
    use gpu_motion_planner::roadmap::SCAN_MAX;
    for (dof, cont) in [(7, vec![]), (7, vec![1, 3, 5]), (8, vec![0, 2, 4, 6, 7])] {
        let s = space(dof, &cont);
        let mut rng = ChaCha8Rng::seed_from_u64(100 + dof as u64);
        let mut nn = NearestNeighbors::new(&s).unwrap();
        let mut points: Vec<Vec<f64>> = Vec::new();
        for id in 0..SCAN_MAX + 200 {
            // Uniform points, and from the 300th on, points a small step from an earlier one
            // (as an RRT tree grows). Queried at every size up to 300 and around the cut-off
            // between the scan and the k-d tree.
            let p = if id < 300 {
                random_point(&s, &mut rng)
            } else {
                let from = nn.k_nearest(&random_point(&s, &mut rng), 1).unwrap()[0].id;
                let mut p = points[from].clone();
                for (j, x) in p.iter_mut().enumerate() {
                    *x = (*x + rng.random_range(-0.05..0.05)).clamp(s.lower[j], s.upper[j]);
                }
                p
            };
            nn.insert(&p, id).unwrap();
            points.push(p);
            if id >= 300 && id + 100 < SCAN_MAX {
                continue;
            }
            for _ in 0..3 {
                let mut q = random_point(&s, &mut rng);
                if rng.random_bool(0.5) {
                    for &j in &cont {
                        q[j] = std::f64::consts::PI * rng.random_range(0.9..=1.1);
                        if rng.random_bool(0.5) {
                            q[j] = -q[j];
                        }
                    }
                }
                let a = nn.nearest(&q).unwrap().unwrap();
                let b = nn.k_nearest(&q, 1).unwrap()[0];
                assert_eq!(a.id, b.id, "dof {dof} cont {cont:?} size {}", id + 1);
                assert_eq!(a.distance.to_bits(), b.distance.to_bits());
            }
        }
    }
}

#[test]
fn neighbour_search_reports_bad_input() {
    let s = space(2, &[]);
    let mut nn = NearestNeighbors::new(&s).unwrap();
    assert!(nn.nearest(&[0.5, 0.5]).unwrap().is_none());
    assert!(nn.k_nearest(&[0.5, 0.5], 3).unwrap().is_empty());
    assert_eq!(
        nn.insert(&[0.5], 0),
        Err(NnError::WrongDof {
            expected: 2,
            got: 1
        })
    );
    assert_eq!(nn.insert(&[0.5, f64::NAN], 0), Err(NnError::NonFinite(1)));
    // Exact duplicates are refused before kiddo's bucket limit could panic.
    let mut refused = false;
    for id in 0..100 {
        if nn.insert(&[0.25, 0.25], id) == Err(NnError::TooManyDuplicates) {
            refused = true;
            break;
        }
    }
    assert!(refused);
    assert!(matches!(
        NearestNeighbors::new(&space(13, &[])),
        Err(NnError::UnsupportedDof(13))
    ));
}
