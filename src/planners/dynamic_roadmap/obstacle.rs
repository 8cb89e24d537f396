//! Obstacle approximations for the label tests: an outer oriented box (exact for boxes) and
//! inner balls (lying inside the obstacle by at least the tolerance).

use nalgebra::{Point3, Vector3};

use super::geom::{Aabb, Ball, Obb};
use crate::collision::detmath::Xf;
use crate::robot::spheres::SphereSet;
use crate::scene::{Obstacle, Shape};

/// A ball in the obstacle frame: centre and radius.
type LocalBall = (Point3<f64>, f64);

/// Both approximations of one obstacle, in the world.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct ObstacleApprox {
    /// Outer box (contains the obstacle).
    pub outer: Obb,
    /// World box containing `outer`.
    pub aabb: Aabb,
    /// Balls inside the obstacle.
    pub inner: Vec<Ball>,
}

/// Approximates `o`. `tol` is taken off every inner radius; `per_axis` caps the inner balls
/// of a box along each axis.
pub(crate) fn approximate(o: &Obstacle, tol: f32, per_axis: usize) -> ObstacleApprox {
    let per_axis = per_axis.max(1);
    let (local_c, local_h, inner_local): (Vector3<f64>, Vector3<f64>, Vec<LocalBall>) =
        match &o.shape {
            Shape::Box { half_extents: h } => {
                let r = h.x.min(h.y).min(h.z);
                let mut balls = Vec::new();
                let counts = [h.x, h.y, h.z].map(|hk| {
                    // Ball spacing at most r along the axis.
                    let n = (2.0 * (hk - r) / r).ceil().max(0.0) as usize + 1;
                    n.min(per_axis)
                });
                let pos = |hk: f64, n: usize, i: usize| -> f64 {
                    if n <= 1 {
                        0.0
                    } else {
                        -(hk - r) + 2.0 * (hk - r) * i as f64 / (n - 1) as f64
                    }
                };
                for i in 0..counts[0] {
                    for j in 0..counts[1] {
                        for k in 0..counts[2] {
                            balls.push((
                                Point3::new(
                                    pos(h.x, counts[0], i),
                                    pos(h.y, counts[1], j),
                                    pos(h.z, counts[2], k),
                                ),
                                r,
                            ));
                        }
                    }
                }
                (Vector3::zeros(), *h, balls)
            }
            Shape::Sphere { radius } => (
                Vector3::zeros(),
                Vector3::repeat(*radius),
                vec![(Point3::origin(), *radius)],
            ),
            Shape::Cylinder {
                radius,
                half_length,
            } => {
                let r = radius.min(*half_length);
                let n = ((2.0 * (half_length - r) / r).ceil().max(0.0) as usize + 1).min(per_axis);
                let balls = (0..n)
                    .map(|i| {
                        let z = if n <= 1 {
                            0.0
                        } else {
                            -(half_length - r) + 2.0 * (half_length - r) * i as f64 / (n - 1) as f64
                        };
                        (Point3::new(0.0, 0.0, z), r)
                    })
                    .collect();
                (
                    Vector3::zeros(),
                    Vector3::new(*radius, *radius, *half_length),
                    balls,
                )
            }
            Shape::ConvexMesh { polytope } => {
                let (lo, hi) = polytope.aabb();
                let balls = SphereSet::inner(polytope, per_axis)
                    .spheres
                    .iter()
                    .map(|s| (s.center, s.radius))
                    .collect();
                (
                    (lo.coords + hi.coords) * 0.5,
                    (hi.coords - lo.coords) * 0.5,
                    balls,
                )
            }
        };
    let xf = Xf::from_isometry(&o.pose);
    let c = o.pose * Point3::from(local_c);
    let outer = Obb {
        c: [c.x as f32, c.y as f32, c.z as f32],
        r: xf.r,
        h: [local_h.x, local_h.y, local_h.z].map(|v| (v * (1.0 + 1e-6)) as f32 + 1e-7),
    };
    let inner = inner_local
        .into_iter()
        .filter_map(|(p, r)| {
            let w = o.pose * p;
            let r = (r * (1.0 - 1e-6)) as f32 - tol;
            (r > 0.0).then_some([w.x as f32, w.y as f32, w.z as f32, r])
        })
        .collect();
    ObstacleApprox {
        aabb: outer.aabb(),
        outer,
        inner,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nalgebra::{Isometry3, UnitQuaternion};

    #[test]
    fn inner_balls_lie_inside_a_rotated_box() {
        let o = Obstacle {
            id: "b".into(),
            shape: Shape::Box {
                half_extents: Vector3::new(0.1, 0.2, 0.5),
            },
            pose: Isometry3::from_parts(
                Vector3::new(0.3, -0.2, 0.8).into(),
                UnitQuaternion::from_euler_angles(0.4, -0.7, 1.1),
            ),
        };
        let a = approximate(&o, 1e-4, 8);
        assert!(a.inner.len() >= 3);
        let inv = o.pose.inverse();
        for b in &a.inner {
            let p = inv * Point3::new(b[0] as f64, b[1] as f64, b[2] as f64);
            let r = b[3] as f64;
            assert!(p.x.abs() + r <= 0.1 && p.y.abs() + r <= 0.2 && p.z.abs() + r <= 0.5);
        }
        let (lo, hi) = o.aabb();
        for k in 0..3 {
            assert!(a.aabb.lo[k] as f64 <= lo[k] && a.aabb.hi[k] as f64 >= hi[k]);
        }
    }
}
