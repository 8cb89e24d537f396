//! Denavit-Hartenberg parameters derived from the URDF of a serial chain.
//!
//! Convention: **standard (distal) DH**. Frame `i` sits on the axis of joint `i + 1`;
//! `T(i-1, i) = Rz(theta_i) * Tz(d_i) * Tx(a_i) * Rx(alpha_i)`, with `theta_i = q_i +
//! theta_offset_i` for revolute joints and `d_i = q_i + d_offset_i` for prismatic ones.
//! URDF link frames need not coincide with DH frames, so the table carries a fixed `base`
//! transform (chain base link -> DH frame 0) and a fixed `tip` transform (DH frame n -> tip
//! link): `T(base link, tip link) = base * prod_i T(i-1, i) * tip`.

use nalgebra::{Isometry3, Point3, Rotation3, Translation3, UnitQuaternion, Vector3};

use super::model::{JointKind, KinematicTree};
use super::RobotError;

/// One row of the DH table.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct DhRow {
    /// URDF joint name.
    pub joint: String,
    /// `"revolute"` or `"prismatic"` (continuous joints are revolute).
    pub kind: &'static str,
    /// Constant added to the joint value for theta (revolute) — or the constant theta (prismatic).
    pub theta: f64,
    /// Constant d (revolute) — or the offset added to the joint value (prismatic).
    pub d: f64,
    /// Link length a.
    pub a: f64,
    /// Link twist alpha.
    pub alpha: f64,
}

/// The DH description of a serial chain.
#[derive(Clone, Debug)]
pub struct DhChain {
    /// Base link name.
    pub base_link: String,
    /// Tip link name.
    pub tip_link: String,
    /// Rows, one per moving joint from base to tip.
    pub rows: Vec<DhRow>,
    /// Base link frame -> DH frame 0.
    pub base: Isometry3<f64>,
    /// DH frame n -> tip link frame.
    pub tip: Isometry3<f64>,
}

/// Tolerance below which two axes count as parallel or a distance as zero.
const EPS: f64 = 1e-9;

fn frame(origin: Point3<f64>, x: Vector3<f64>, z: Vector3<f64>) -> Isometry3<f64> {
    let y = z.cross(&x);
    let r = Rotation3::from_basis_unchecked(&[x, y, z]);
    Isometry3::from_parts(
        Translation3::from(origin.coords),
        UnitQuaternion::from_rotation_matrix(&r),
    )
}

/// Any unit vector perpendicular to `z`, preferring `hint` projected off `z`.
fn perpendicular(z: &Vector3<f64>, hint: &Vector3<f64>) -> Vector3<f64> {
    let p = hint - z * z.dot(hint);
    if p.norm() > 1e-6 {
        return p.normalize();
    }
    let other = if z.x.abs() < 0.9 {
        Vector3::x()
    } else {
        Vector3::y()
    };
    (other - z * z.dot(&other)).normalize()
}

/// The DH transform of one row for joint value `q`.
pub fn dh_transform(row: &DhRow, q: f64) -> Isometry3<f64> {
    let (theta, d) = if row.kind == "prismatic" {
        (row.theta, row.d + q)
    } else {
        (row.theta + q, row.d)
    };
    Isometry3::from_parts(
        Translation3::identity(),
        UnitQuaternion::from_axis_angle(&Vector3::z_axis(), theta),
    ) * Isometry3::translation(0.0, 0.0, d)
        * Isometry3::translation(row.a, 0.0, 0.0)
        * Isometry3::from_parts(
            Translation3::identity(),
            UnitQuaternion::from_axis_angle(&Vector3::x_axis(), row.alpha),
        )
}

impl DhChain {
    /// Derives the DH table of the chain from `base_link` to `tip_link`.
    ///
    /// Fails, naming the joint, when a joint of the chain mimics another one (its value is not
    /// an independent DH variable).
    pub fn from_tree(
        tree: &KinematicTree,
        base_link: &str,
        tip_link: &str,
    ) -> Result<Self, RobotError> {
        let base = tree.link(base_link)?;
        let tip = tree.link(tip_link)?;
        let chain = tree.chain(base, tip)?;
        for &j in &chain {
            let joint = &tree.joints[j];
            if joint.mimic.is_some() {
                return Err(RobotError::NotDh {
                    joint: joint.name.clone(),
                    reason:
                        "it mimics another joint, so its value is not an independent DH variable"
                            .into(),
                });
            }
        }
        let moving: Vec<usize> = chain
            .iter()
            .copied()
            .filter(|&j| tree.joints[j].kind.is_moving())
            .collect();
        if moving.is_empty() {
            return Err(RobotError::NotDh {
                joint: tree.links[tip]
                    .parent_joint
                    .map(|j| tree.joints[j].name.clone())
                    .unwrap_or_default(),
                reason: format!("no moving joint between '{base_link}' and '{tip_link}'"),
            });
        }
        // Poses at the zero configuration, in the base link frame.
        let mut pose = Isometry3::identity();
        let mut axes: Vec<(Point3<f64>, Vector3<f64>)> = Vec::new();
        for &j in &chain {
            let joint = &tree.joints[j];
            let joint_frame = pose * joint.origin;
            if joint.kind.is_moving() {
                axes.push((
                    joint_frame * Point3::origin(),
                    joint_frame.rotation * joint.axis,
                ));
            }
            pose = joint_frame;
        }
        let tip_pose = pose;
        let n = axes.len();
        // Frames 0..n: frame i has z along axis i+1 (0-based axes[i]) for i < n.
        let mut frames: Vec<Isometry3<f64>> = Vec::with_capacity(n + 1);
        // Frame 0: on axis 1, origin at the foot of the base origin, x from the base x axis.
        {
            let (p, z) = axes[0];
            let o = p + z * z.dot(&(Point3::origin() - p));
            let x = perpendicular(&z, &Vector3::x());
            frames.push(frame(o, x, z));
        }
        for i in 1..n {
            let prev = frames[i - 1];
            let o_prev = prev * Point3::origin();
            let z_prev = prev.rotation * Vector3::z();
            let x_prev = prev.rotation * Vector3::x();
            let (p, z) = axes[i];
            let c = z_prev.cross(&z);
            let (o, x) = if c.norm() > 1e-9 {
                // Common normal between the line (o_prev, z_prev) and the line (p, z).
                let w = o_prev - p;
                let b = z_prev.dot(&z);
                let dd = z_prev.dot(&w);
                let e = z.dot(&w);
                let denom = 1.0 - b * b;
                let s = (b * e - dd) / denom; // along z_prev
                let t = (e - b * dd) / denom; // along z
                let foot_prev = o_prev + z_prev * s;
                let foot = p + z * t;
                let gap = foot - foot_prev;
                let x = if gap.norm() > EPS {
                    gap.normalize()
                } else {
                    c.normalize()
                };
                (foot, x)
            } else {
                // Parallel axes: the normal through the previous origin.
                let foot = p + z * z.dot(&(o_prev - p));
                let gap = foot - o_prev;
                let x = if gap.norm() > EPS {
                    gap.normalize()
                } else {
                    x_prev
                };
                (foot, x)
            };
            frames.push(frame(o, x, z));
        }
        // Frame n: frame n-1 slid along its z to the level of the tip origin.
        {
            let prev = frames[n - 1];
            let o_prev = prev * Point3::origin();
            let z_prev = prev.rotation * Vector3::z();
            let x_prev = prev.rotation * Vector3::x();
            let tip_o = tip_pose * Point3::origin();
            let o = o_prev + z_prev * z_prev.dot(&(tip_o - o_prev));
            frames.push(frame(o, x_prev, z_prev));
        }
        let mut rows = Vec::with_capacity(n);
        for i in 1..=n {
            let rel = frames[i - 1].inverse() * frames[i];
            let o = rel.translation.vector;
            let x = rel.rotation * Vector3::x();
            let z = rel.rotation * Vector3::z();
            let theta = x.y.atan2(x.x);
            let d = o.z;
            let a = o.x * theta.cos() + o.y * theta.sin();
            let alpha = Vector3::z().cross(&z).dot(&x).atan2(z.z);
            let joint = &tree.joints[moving[i - 1]];
            let kind = if joint.kind == JointKind::Prismatic {
                "prismatic"
            } else {
                "revolute"
            };
            let row = DhRow {
                joint: joint.name.clone(),
                kind,
                theta,
                d,
                a,
                alpha,
            };
            // The construction guarantees DH form; verify it numerically.
            let back = dh_transform(&row, 0.0);
            let err = (back.translation.vector - rel.translation.vector).norm()
                + back.rotation.angle_to(&rel.rotation);
            if err > 1e-6 {
                return Err(RobotError::NotDh {
                    joint: joint.name.clone(),
                    reason: format!("frame mismatch {err:.3e} after DH fit"),
                });
            }
            rows.push(row);
        }
        Ok(DhChain {
            base_link: base_link.to_string(),
            tip_link: tip_link.to_string(),
            rows,
            base: frames[0],
            tip: frames[n].inverse() * tip_pose,
        })
    }

    /// Pose of the tip link in the base link frame for the chain's joint values (one per row).
    pub fn forward(&self, q: &[f64]) -> Isometry3<f64> {
        let mut t = self.base;
        for (row, &v) in self.rows.iter().zip(q) {
            t *= dh_transform(row, v);
        }
        t * self.tip
    }
}
