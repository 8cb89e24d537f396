//! Point clouds as obstacles: a depth camera's points become boxes of the scene.
//!
//! [`cloud_boxes`] takes the points of one cloud in its sensor frame and where that frame is
//! in the planning frame, and
//! 1. drops the points that are not finite, and those farther from the sensor than
//!    [`CloudSettings::max_range`];
//! 2. drops the points on the robot itself (the self filter, [`RobotFilter`]): those within
//!    [`CloudSettings::padding`] of a face plane of every face of one of the robot's collision
//!    bodies (attached objects included) where the joint state puts them;
//! 3. marks the voxels (cubes of [`CloudSettings::resolution`] aligned with the planning
//!    frame) that hold at least [`CloudSettings::min_points`] of what is left, except those
//!    that may overlap a grown body ([`RobotFilter::may_touch`]): a voxel of points just
//!    outside the padding still reaches up to a voxel's edge towards the robot (the table
//!    under the robot's base would otherwise touch the base in every configuration), so
//!    its points count as the robot's too;
//! 4. merges the marked voxels into as few axis-aligned boxes as a greedy sweep finds (runs
//!    along z, grown along y, then along x), each box exactly a union of marked voxels.
//!
//! Every point that is kept lies inside a box (each box is grown by a millionth of the
//! resolution against rounding), so a robot that touches a kept point is in collision.
//! When more than [`CloudSettings::max_boxes`] boxes come out, the voxels are made twice as
//! large until they fit; a coarser grid only covers more. With `min_points` above one,
//! voxels with fewer points are taken as sensor noise and left free.

use std::collections::{BTreeSet, HashMap, HashSet};

use nalgebra::{Isometry3, Point3, Translation3, UnitQuaternion, Vector3};

use super::{Obstacle, Shape};
use crate::robot::RobotModel;

/// Namespace of the obstacles made from a point cloud: `pointcloud/0`, `pointcloud/1`, ...
pub const CLOUD_NS: &str = "pointcloud";

/// Largest voxel index magnitude; points farther out (over a million kilometres at 1 mm
/// voxels) are counted as out of range.
const MAX_INDEX: f64 = (1u64 << 30) as f64;

/// How a cloud becomes boxes.
#[derive(Debug, Clone, PartialEq)]
pub struct CloudSettings {
    /// Edge of a voxel (m); > 0.
    pub resolution: f64,
    /// Points farther than this from the sensor are dropped (m); 0: none is.
    pub max_range: f64,
    /// The self filter's padding (m): points within this distance outside a robot body are
    /// dropped as the robot's own; >= 0.
    pub padding: f64,
    /// A voxel is occupied when it holds at least this many points; >= 1.
    pub min_points: usize,
    /// Most boxes one cloud may become; >= 1.
    pub max_boxes: usize,
}

impl Default for CloudSettings {
    fn default() -> Self {
        Self {
            resolution: 0.04,
            max_range: 5.0,
            padding: 0.03,
            min_points: 1,
            max_boxes: 4096,
        }
    }
}

impl CloudSettings {
    /// Checks every setting; the error names the first bad one.
    pub fn validate(&self) -> Result<(), String> {
        if !(self.resolution.is_finite() && self.resolution > 0.0) {
            return Err(format!(
                "resolution must be positive and finite, got {}",
                self.resolution
            ));
        }
        if !(self.max_range.is_finite() && self.max_range >= 0.0) {
            return Err(format!(
                "max_range must be finite and >= 0 (0: no limit), got {}",
                self.max_range
            ));
        }
        if !(self.padding.is_finite() && self.padding >= 0.0) {
            return Err(format!(
                "padding must be finite and >= 0, got {}",
                self.padding
            ));
        }
        if self.min_points == 0 {
            return Err("min_points must be at least 1".into());
        }
        if self.max_boxes == 0 {
            return Err("max_boxes must be at least 1".into());
        }
        Ok(())
    }
}

/// What became of a cloud's points.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CloudStats {
    /// Points given.
    pub points: usize,
    /// Points with a coordinate that is not finite (dropped).
    pub non_finite: usize,
    /// Points farther than `max_range` from the sensor (dropped).
    pub out_of_range: usize,
    /// Points on the robot (dropped by the self filter).
    pub on_robot: usize,
    /// Occupied voxels.
    pub voxels: usize,
    /// Boxes they were merged into.
    pub boxes: usize,
    /// The voxel edge used (the setting, or larger to fit `max_boxes`).
    pub resolution: f64,
}

/// An axis-aligned box of the planning frame, by its corners.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CloudBox {
    /// The lower corner.
    pub min: Point3<f64>,
    /// The upper corner.
    pub max: Point3<f64>,
}

impl CloudBox {
    /// Whether `p` is inside or on the box.
    pub fn contains(&self, p: &Point3<f64>) -> bool {
        (0..3).all(|i| self.min[i] <= p[i] && p[i] <= self.max[i])
    }

    /// The box as an obstacle named `id`.
    pub fn obstacle(&self, id: String) -> Obstacle {
        let centre = nalgebra::center(&self.min, &self.max);
        Obstacle {
            id,
            shape: Shape::Box {
                half_extents: (self.max - self.min) / 2.0,
            },
            pose: Isometry3::from_parts(
                Translation3::from(centre.coords),
                UnitQuaternion::identity(),
            ),
        }
    }
}

/// One collision body of the robot placed in the planning frame: its face planes, moved out
/// by the padding, and a ball around it for a quick rejection.
struct PlacedBody {
    planes: Vec<(Vector3<f64>, f64)>,
    centre: Point3<f64>,
    radius: f64,
    /// The grown body's bounding box.
    lo: Point3<f64>,
    hi: Point3<f64>,
}

/// The robot's collision bodies (attached objects included) where a joint state puts them,
/// grown by a padding: what the self filter cuts out of a cloud.
pub struct RobotFilter {
    bodies: Vec<PlacedBody>,
}

impl RobotFilter {
    /// The bodies of `robot` at `state` (a full state of the robot's variables), grown by
    /// `padding` metres.
    pub fn new(robot: &RobotModel, state: &[f64], padding: f64) -> RobotFilter {
        let frames = robot.tree.forward_kinematics(state);
        let bodies = robot
            .bodies
            .iter()
            .filter_map(|b| {
                // The polytope is in the link frame already (its origin applied).
                let placed = b.polytope.transformed(frames.get(b.link)?);
                let (centre, radius) = placed.bounding_sphere();
                let (lo, hi) = placed.aabb();
                let grow = Vector3::repeat(padding);
                let planes = placed
                    .face_planes()
                    .into_iter()
                    .map(|(n, d)| (n, d + padding))
                    .collect();
                Some(PlacedBody {
                    planes,
                    centre,
                    radius: radius + padding,
                    lo: lo - grow,
                    hi: hi + grow,
                })
            })
            .collect();
        RobotFilter { bodies }
    }

    /// Whether box `b` may overlap a grown body: no separating axis among the body's face
    /// normals and the box's own axes. (A pair separated only along an edge-edge axis is
    /// taken as touching: the self filter errs towards cutting out more.)
    pub fn may_touch(&self, b: &CloudBox) -> bool {
        let centre = nalgebra::center(&b.min, &b.max);
        let half = (b.max - b.min) / 2.0;
        self.bodies.iter().any(|body| {
            (0..3).all(|i| b.min[i] <= body.hi[i] && body.lo[i] <= b.max[i])
                && body
                    .planes
                    .iter()
                    .all(|(n, d)| n.dot(&centre.coords) - n.abs().dot(&half) <= *d)
        })
    }

    /// Whether `p` (planning frame) is on a grown body.
    pub fn contains(&self, p: &Point3<f64>) -> bool {
        self.bodies.iter().any(|b| {
            (p - b.centre).norm_squared() <= b.radius * b.radius
                && b.planes.iter().all(|(n, d)| n.dot(&p.coords) <= *d)
        })
    }
}

/// Voxel index of a coordinate, or `None` past [`MAX_INDEX`].
fn index(v: f64, resolution: f64) -> Option<i32> {
    let i = (v / resolution).floor();
    // The bound keeps the index (and index + 1) inside i32.
    (i.abs() < MAX_INDEX).then_some(i as i32)
}

/// The boxes of one cloud. `points` are in the sensor frame, `sensor` is the sensor frame in
/// the planning frame, and `robot`, when given, cuts the robot out (see the module
/// documentation). The boxes come in a fixed order for the same input.
pub fn cloud_boxes(
    points: &[Point3<f64>],
    sensor: &Isometry3<f64>,
    robot: Option<&RobotFilter>,
    settings: &CloudSettings,
) -> Result<(Vec<CloudBox>, CloudStats), String> {
    settings.validate()?;
    let mut stats = CloudStats {
        points: points.len(),
        ..CloudStats::default()
    };
    let mut kept = Vec::with_capacity(points.len());
    for p in points {
        if !(p.x.is_finite() && p.y.is_finite() && p.z.is_finite()) {
            stats.non_finite += 1;
            continue;
        }
        if settings.max_range > 0.0 && p.coords.norm() > settings.max_range {
            stats.out_of_range += 1;
            continue;
        }
        let q = sensor * p;
        if robot.is_some_and(|r| r.contains(&q)) {
            stats.on_robot += 1;
            continue;
        }
        kept.push(q);
    }
    let mut resolution = settings.resolution;
    loop {
        let margin = resolution * 1e-6;
        let corner = |k: [i32; 3], shift: f64| {
            Point3::new(
                f64::from(k[0]) * resolution + shift,
                f64::from(k[1]) * resolution + shift,
                f64::from(k[2]) * resolution + shift,
            )
        };
        let voxel_box = |k: [i32; 3]| CloudBox {
            min: corner(k, -margin),
            max: corner([k[0] + 1, k[1] + 1, k[2] + 1], margin),
        };
        let (counts, far) = occupied(&kept, resolution, settings.min_points);
        // A voxel of points just outside the padding can still reach into the robot (the
        // table a robot stands on): such voxels are the robot's too.
        let mut voxels = BTreeSet::new();
        let mut in_robot = 0;
        for (k, n) in counts {
            if robot.is_some_and(|r| r.may_touch(&voxel_box(k))) {
                in_robot += n;
            } else {
                voxels.insert(k);
            }
        }
        let boxes = merge(&voxels);
        if boxes.len() <= settings.max_boxes || !(resolution * 2.0).is_finite() {
            stats.out_of_range += far;
            stats.on_robot += in_robot;
            stats.voxels = voxels.len();
            stats.boxes = boxes.len();
            stats.resolution = resolution;
            let boxes = boxes
                .into_iter()
                .map(|(lo, hi)| CloudBox {
                    min: corner(lo, -margin),
                    max: corner([hi[0] + 1, hi[1] + 1, hi[2] + 1], margin),
                })
                .collect();
            return Ok((boxes, stats));
        }
        resolution *= 2.0;
    }
}

/// The voxels holding at least `min_points` of `points` with their point counts, and how many
/// points were too far out for an index.
fn occupied(
    points: &[Point3<f64>],
    resolution: f64,
    min_points: usize,
) -> (HashMap<[i32; 3], usize>, usize) {
    let mut counts: HashMap<[i32; 3], usize> = HashMap::new();
    let mut far = 0;
    for p in points {
        match (
            index(p.x, resolution),
            index(p.y, resolution),
            index(p.z, resolution),
        ) {
            (Some(x), Some(y), Some(z)) => *counts.entry([x, y, z]).or_default() += 1,
            _ => far += 1,
        }
    }
    counts.retain(|_, n| *n >= min_points);
    (counts, far)
}

/// Greedy merge of voxels into boxes `(lowest voxel, highest voxel)`: from each voxel not yet
/// taken, in order, a run along z, grown along y while the whole run is free to take, then
/// along x while the whole rectangle is.
fn merge(voxels: &BTreeSet<[i32; 3]>) -> Vec<([i32; 3], [i32; 3])> {
    let mut taken: HashSet<[i32; 3]> = HashSet::with_capacity(voxels.len());
    let free = |k: &[i32; 3], taken: &HashSet<[i32; 3]>| voxels.contains(k) && !taken.contains(k);
    let mut boxes = Vec::new();
    for &lo in voxels {
        if taken.contains(&lo) {
            continue;
        }
        let [x, y, z] = lo;
        let mut hz = z;
        while free(&[x, y, hz + 1], &taken) {
            hz += 1;
        }
        let mut hy = y;
        while (z..=hz).all(|k| free(&[x, hy + 1, k], &taken)) {
            hy += 1;
        }
        let mut hx = x;
        while (y..=hy).all(|j| (z..=hz).all(|k| free(&[hx + 1, j, k], &taken))) {
            hx += 1;
        }
        for i in x..=hx {
            for j in y..=hy {
                for k in z..=hz {
                    taken.insert([i, j, k]);
                }
            }
        }
        boxes.push((lo, [hx, hy, hz]));
    }
    boxes
}

/// The index `n` of an obstacle id `pointcloud/n`; `None` for any other id.
pub fn cloud_index(id: &str) -> Option<usize> {
    id.strip_prefix(CLOUD_NS)?.strip_prefix('/')?.parse().ok()
}

/// The obstacles of a cloud's boxes, named `pointcloud/0`, `pointcloud/1`, ... in order.
pub fn cloud_obstacles(boxes: &[CloudBox]) -> Vec<Obstacle> {
    boxes
        .iter()
        .enumerate()
        .map(|(i, b)| b.obstacle(format!("{CLOUD_NS}/{i}")))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(resolution: f64) -> CloudSettings {
        CloudSettings {
            resolution,
            max_range: 0.0,
            ..CloudSettings::default()
        }
    }

    #[test]
    fn a_plane_of_points_becomes_one_box_holding_every_point() {
        let mut points = Vec::new();
        for i in 0..50 {
            for j in 0..30 {
                points.push(Point3::new(
                    0.5 + 0.01 * f64::from(i),
                    -0.2 + 0.01 * f64::from(j),
                    0.3,
                ));
            }
        }
        let (boxes, stats) =
            cloud_boxes(&points, &Isometry3::identity(), None, &settings(0.05)).unwrap();
        assert_eq!(boxes.len(), 1, "{boxes:?}");
        assert_eq!(stats.voxels, 10 * 6);
        assert!(points.iter().all(|p| boxes[0].contains(p)));
        // One voxel thick in z.
        assert!((boxes[0].max.z - boxes[0].min.z - 0.05).abs() < 1e-6);
    }

    #[test]
    fn every_point_is_covered_and_boxes_do_not_overlap() {
        // An L of points with a hole: the union is not one box.
        let mut points = Vec::new();
        let mut state = 12345u64;
        let mut next = || {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (state >> 11) as f64 / (1u64 << 53) as f64
        };
        for _ in 0..4000 {
            let p = Point3::new(next() * 0.6 - 0.3, next() * 0.6 - 0.3, next() * 0.2);
            if !(p.x > 0.0 && p.y > 0.0) {
                points.push(p);
            }
        }
        let sensor = Isometry3::from_parts(
            Translation3::new(1.0, 2.0, 0.5),
            UnitQuaternion::from_euler_angles(0.3, -0.2, 1.0),
        );
        let (boxes, stats) = cloud_boxes(&points, &sensor, None, &settings(0.05)).unwrap();
        assert!(boxes.len() > 1 && boxes.len() < stats.voxels);
        for p in &points {
            let q = sensor * p;
            assert!(boxes.iter().any(|b| b.contains(&q)), "{q} not covered");
        }
        for (a, b) in boxes
            .iter()
            .enumerate()
            .flat_map(|(i, a)| boxes[i + 1..].iter().map(move |b| (a, b)))
        {
            let overlap = (0..3).all(|k| a.min[k] + 1e-5 < b.max[k] && b.min[k] + 1e-5 < a.max[k]);
            assert!(!overlap, "{a:?} overlaps {b:?}");
        }
        let volume: f64 = boxes.iter().map(|b| (b.max - b.min).product()).sum();
        let voxel = 0.05f64.powi(3);
        assert!((volume / voxel - stats.voxels as f64).abs() < 1e-3 * stats.voxels as f64);
    }

    #[test]
    fn range_non_finite_and_sparse_voxels_are_dropped() {
        let points = [
            Point3::new(1.0, 0.0, 0.0),
            Point3::new(1.001, 0.0, 0.0),
            Point3::new(f64::NAN, 0.0, 0.0),
            Point3::new(0.0, 9.0, 0.0),
            Point3::new(-1.0, -1.0, -1.0),
        ];
        let s = CloudSettings {
            resolution: 0.1,
            max_range: 5.0,
            min_points: 2,
            ..CloudSettings::default()
        };
        let (boxes, stats) = cloud_boxes(&points, &Isometry3::identity(), None, &s).unwrap();
        assert_eq!((stats.non_finite, stats.out_of_range), (1, 1));
        // The lone point at (-1, -1, -1) is taken as noise.
        assert_eq!(boxes.len(), 1);
        assert!(boxes[0].contains(&points[0]) && boxes[0].contains(&points[1]));
    }

    #[test]
    fn too_many_boxes_coarsen_the_grid_and_still_cover() {
        let points: Vec<Point3<f64>> = (0..200)
            .map(|i| Point3::new(0.1 * f64::from(i), 0.07 * f64::from(i % 7), 0.0))
            .collect();
        let s = CloudSettings {
            max_boxes: 10,
            ..settings(0.01)
        };
        let (boxes, stats) = cloud_boxes(&points, &Isometry3::identity(), None, &s).unwrap();
        assert!(boxes.len() <= 10 && stats.resolution > 0.01);
        assert!(points.iter().all(|p| boxes.iter().any(|b| b.contains(p))));
    }

    #[test]
    fn bad_settings_are_named() {
        for (s, word) in [
            (
                CloudSettings {
                    resolution: 0.0,
                    ..CloudSettings::default()
                },
                "resolution",
            ),
            (
                CloudSettings {
                    max_range: -1.0,
                    ..CloudSettings::default()
                },
                "max_range",
            ),
            (
                CloudSettings {
                    padding: f64::NAN,
                    ..CloudSettings::default()
                },
                "padding",
            ),
            (
                CloudSettings {
                    min_points: 0,
                    ..CloudSettings::default()
                },
                "min_points",
            ),
            (
                CloudSettings {
                    max_boxes: 0,
                    ..CloudSettings::default()
                },
                "max_boxes",
            ),
        ] {
            let e = cloud_boxes(&[], &Isometry3::identity(), None, &s).unwrap_err();
            assert!(e.contains(word), "{e}");
        }
    }
}
