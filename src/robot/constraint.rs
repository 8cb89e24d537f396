//! Path constraints: where a link must stay during a whole motion, not only where it ends
//! (MoveIt's `path_constraints`: carry a glass upright, keep the tool inside a box above the
//! table).
//!
//! Two kinds, any number of each, all holding at once:
//! - [`OrientationConstraint`]: the rotation from a target orientation to the link's, written
//!   as XYZ Euler angles (MoveIt's default `XYZ_EULER_ANGLES`) or as a rotation vector in the
//!   target's axes (`ROTATION_VECTOR`), has each of its three components within its
//!   tolerance ([`OrientationParameterization`]). "Upright, any heading" is a target with the
//!   tool's z up and tolerances `[0.1, 0.1, PI]`.
//! - [`PositionConstraint`]: a point fixed to the link (its origin plus an offset in the
//!   link's frame) lies inside a box, given by its centre pose and half extents.
//! - [`JointConstraint`]: a joint of the group stays within a range around a position
//!   (continuous joints the short way round).
//!
//! [`ConstraintSet`] evaluates them for one planning group and base state: whether a
//! configuration satisfies them (and which constraint it violates, by how much), whether every
//! configuration a motion check visits does ([`ConstraintSet::check_motion`]), and the
//! projection of a configuration onto them ([`ConstraintSet::project`]): damped least squares
//! on the Jacobian of the violated components, each step clamped into the joint limits,
//! aiming at `1 - PROJECTION_MARGIN` of each tolerance so that the straight motions between
//! nearby projected configurations keep within the whole tolerance.

use std::fmt;

use nalgebra::{DMatrix, DVector, Isometry3, Matrix3, UnitQuaternion, Vector3, Vector6};

use super::ik::{
    clamp_to_limits, group_poses, link_chain, point_jacobian, quaternion_rotation, wrong_length,
    ChainJoint, GoalSolver, IkSolution,
};
use super::load::RobotModel;
use super::model::KinematicTree;
use super::space::{wrap_angle, wrapped_difference, JointSpace};
use super::PlanningGroup;

/// Fraction of each tolerance a projection keeps clear of (it aims inside `1 - margin` of
/// it), so that the short straight motions between projected configurations, which bend away
/// from the constraint between their ends, stay within the whole tolerance.
pub const PROJECTION_MARGIN: f64 = 0.1;
/// Least-squares iterations of one projection at most.
pub const PROJECTION_ITERATIONS: usize = 50;
/// Largest change of one joint in one projection step (rad or m).
const MAX_STEP: f64 = 0.2;

/// How the rotation from an orientation constraint's target to the link's orientation is
/// written as the three components its tolerances bound (MoveIt's `parameterization`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum OrientationParameterization {
    /// Euler angles `(a, b, c)` with `rotation = Rx(a) Ry(b) Rz(c)` (rotations about the
    /// target's x axis, then the new y, then the new z), `b` in `[-PI/2, PI/2]`, `a` and `c`
    /// in `(-PI, PI]`: MoveIt's `XYZ_EULER_ANGLES` (0, the message's default). Where every
    /// component is below PI/2 MoveIt's values are the same magnitudes.
    #[default]
    XyzEulerAngles,
    /// The rotation vector (axis times angle, at most PI) in the target's axes: MoveIt's
    /// `ROTATION_VECTOR` (1).
    RotationVector,
}

impl OrientationParameterization {
    /// MoveIt's code for it (`moveit_msgs/OrientationConstraint`: 0 or 1).
    pub fn code(self) -> i64 {
        match self {
            Self::XyzEulerAngles => 0,
            Self::RotationVector => 1,
        }
    }

    /// The parameterization of MoveIt's code; `None` for another number.
    pub fn from_code(code: i64) -> Option<Self> {
        match code {
            0 => Some(Self::XyzEulerAngles),
            1 => Some(Self::RotationVector),
            _ => None,
        }
    }

    /// The three components of `rotation` (from the target to the link, in the target's
    /// axes).
    pub fn components(self, rotation: &UnitQuaternion<f64>) -> Vector3<f64> {
        match self {
            Self::RotationVector => rotation.scaled_axis(),
            Self::XyzEulerAngles => {
                let m = rotation.to_rotation_matrix();
                let m = m.matrix();
                // Rx(a) Ry(b) Rz(c) has sin b at (0, 2), -sin a cos b at (1, 2),
                // cos a cos b at (2, 2), -cos b sin c at (0, 1) and cos b cos c at (0, 0).
                let b = m[(0, 2)].clamp(-1.0, 1.0).asin();
                let a = (-m[(1, 2)]).atan2(m[(2, 2)]);
                let c = (-m[(0, 1)]).atan2(m[(0, 0)]);
                Vector3::new(a, b, c)
            }
        }
    }

    /// How the components change with a small rotation `w` (in the target's axes) applied
    /// on the left of the rotation whose components are `phi`: the matrix taking `w` to the
    /// change.
    fn rate(self, phi: &Vector3<f64>) -> Matrix3<f64> {
        match self {
            Self::RotationVector => left_jacobian_inv(phi),
            Self::XyzEulerAngles => {
                // The rotation rate of Rx(a) Ry(b) Rz(c) is a' x + b' Rx(a) y + c' Rx(a) Ry(b) z;
                // that map's determinant is cos b, kept away from 0 (gimbal lock), where the
                // descent only needs a direction.
                let (sa, ca) = phi.x.sin_cos();
                let sb = phi.y.sin();
                let cb = phi.y.cos();
                let cb = if cb.abs() < 1e-3 {
                    1e-3_f64.copysign(cb)
                } else {
                    cb
                };
                let e = Matrix3::new(1.0, 0.0, sb, 0.0, ca, -sa * cb, 0.0, sa, ca * cb);
                e.try_inverse().unwrap_or_else(Matrix3::identity)
            }
        }
    }
}

/// The orientation a link must keep.
#[derive(Clone, Debug, PartialEq)]
pub struct OrientationConstraint {
    /// The link (index into the kinematic tree's links).
    pub link: usize,
    /// Target orientation of the link frame in the root frame.
    pub orientation: UnitQuaternion<f64>,
    /// Largest magnitude of each component (x, y, z) of the rotation from the target to the
    /// link's orientation as `parameterization` writes it (rad), positive. A tolerance of PI
    /// or more leaves that component free.
    pub tolerance: Vector3<f64>,
    /// How the rotation is written.
    pub parameterization: OrientationParameterization,
}

/// A box a point of a link must stay in.
#[derive(Clone, Debug, PartialEq)]
pub struct PositionConstraint {
    /// The link (index into the kinematic tree's links).
    pub link: usize,
    /// The constrained point in the link's frame (MoveIt's `target_point_offset`).
    pub offset: Vector3<f64>,
    /// Pose of the box's centre and axes in the root frame.
    pub region: Isometry3<f64>,
    /// Half the box's size along each of its axes (m), positive.
    pub half_extents: Vector3<f64>,
}

/// A range a joint must stay in: from `position - below` to `position + above` (MoveIt's
/// `JointConstraint`; for a continuous joint the difference from `position` taken the short
/// way round).
#[derive(Clone, Debug, PartialEq)]
pub struct JointConstraint {
    /// The joint's variable (index into the robot's full state).
    pub variable: usize,
    /// The range's reference position (rad or m).
    pub position: f64,
    /// How far below `position` the joint may go (>= 0).
    pub below: f64,
    /// How far above `position` the joint may go (>= 0).
    pub above: f64,
}

/// Constraints that hold along a whole path.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PathConstraints {
    /// Orientation constraints.
    pub orientation: Vec<OrientationConstraint>,
    /// Position constraints.
    pub position: Vec<PositionConstraint>,
    /// Joint constraints.
    pub joint: Vec<JointConstraint>,
}

impl PathConstraints {
    /// These constraints and those of `other`, all to hold at once (a goal region with the
    /// path constraints, which the goal keeps too).
    pub fn and(mut self, other: &PathConstraints) -> PathConstraints {
        self.orientation.extend(other.orientation.iter().cloned());
        self.position.extend(other.position.iter().cloned());
        self.joint.extend(other.joint.iter().cloned());
        self
    }

    /// True when there is no constraint.
    pub fn is_empty(&self) -> bool {
        self.orientation.is_empty() && self.position.is_empty() && self.joint.is_empty()
    }
}

/// Why constraints cannot be used.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ConstraintError {
    /// A constraint is malformed (a link, tolerance, size or pose).
    #[error("path constraint: {0}")]
    Bad(String),
    /// No joint of the group moves the constrained link: planning cannot change whether it
    /// holds.
    #[error("path constraint: link '{link}' is not moved by any joint of group '{group}'")]
    LinkNotMoved {
        /// The link.
        link: String,
        /// The group.
        group: String,
    },
    /// A configuration of the wrong length.
    #[error("path constraint: configuration has {got} values, group '{group}' has {want} joints")]
    WrongLength {
        /// The group.
        group: String,
        /// Values given.
        got: usize,
        /// Values expected.
        want: usize,
    },
}

impl ConstraintError {
    /// The message without the leading "path constraint: ", for constraints that are not
    /// path constraints (a goal region's).
    pub fn detail(&self) -> String {
        let text = self.to_string();
        match text.strip_prefix("path constraint: ") {
            Some(rest) => rest.to_string(),
            None => text,
        }
    }
}

/// Which kind of constraint is violated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ViolationKind {
    /// An [`OrientationConstraint`] (values in rad).
    Orientation,
    /// A [`PositionConstraint`] (values in m).
    Position,
    /// A [`JointConstraint`] (values in rad or m).
    Joint,
}

/// The component of a constraint a configuration is farthest outside of (relative to its
/// tolerance).
#[derive(Clone, Debug, PartialEq)]
pub struct Violation {
    /// Orientation, position or joint.
    pub kind: ViolationKind,
    /// Index of the constraint among those of its kind.
    pub index: usize,
    /// The constrained link's name (the joint's, for a joint constraint).
    pub link: String,
    /// The axis (0: x, 1: y, 2: z) of the target's or the box's frame.
    pub axis: usize,
    /// The component's value: the Euler angle's or the rotation vector's (rad), the point's
    /// offset from the box's centre (m), or the joint's offset from the constraint's position.
    pub value: f64,
    /// Its tolerance (rad, or the box's half extent in m).
    pub tolerance: f64,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let axis = ["x", "y", "z"][self.axis.min(2)];
        match self.kind {
            ViolationKind::Orientation => write!(
                f,
                "link '{}' is turned {:.4} rad about the {axis} axis of orientation constraint \
                 {} (tolerance {:.4})",
                self.link, self.value, self.index, self.tolerance
            ),
            ViolationKind::Position => write!(
                f,
                "link '{}' is {:.4} m from the centre of position constraint {}'s box along its \
                 {axis} axis (half extent {:.4})",
                self.link, self.value, self.index, self.tolerance
            ),
            ViolationKind::Joint => write!(
                f,
                "joint '{}' is {:+.4} from the position of joint constraint {} (tolerance {} \
                 {:.4})",
                self.link,
                self.value,
                self.index,
                if self.value < 0.0 { "below" } else { "above" },
                self.tolerance
            ),
        }
    }
}

/// One constraint, ready to evaluate.
#[derive(Clone, Debug)]
struct Term {
    link: usize,
    chain: Vec<ChainJoint>,
    kind: TermKind,
}

#[derive(Clone, Debug)]
enum TermKind {
    Orientation {
        target_inv: UnitQuaternion<f64>,
        tolerance: Vector3<f64>,
        parameterization: OrientationParameterization,
        index: usize,
    },
    Position {
        region_inv: Isometry3<f64>,
        offset: Vector3<f64>,
        half: Vector3<f64>,
        index: usize,
    },
}

impl TermKind {
    fn tolerance(&self) -> &Vector3<f64> {
        match self {
            TermKind::Orientation { tolerance, .. } => tolerance,
            TermKind::Position { half, .. } => half,
        }
    }
}

/// The violated components at one configuration (tolerances scaled), with the link poses.
struct Excess {
    /// (term, axis, excess beyond the scaled tolerance, signed).
    parts: Vec<(usize, usize, f64)>,
    /// Sum of the squared excesses.
    cost: f64,
}

/// A joint constraint, ready to evaluate.
#[derive(Clone, Debug)]
struct JointTerm {
    /// Index into the group's configuration.
    k: usize,
    name: String,
    position: f64,
    below: f64,
    above: f64,
    continuous: bool,
    index: usize,
}

impl JointTerm {
    /// The joint's signed offset from the constraint's position at `q`.
    fn offset(&self, q: &[f64]) -> f64 {
        if self.continuous {
            wrapped_difference(self.position, q[self.k])
        } else {
            q[self.k] - self.position
        }
    }

    /// The violation at `q`, if the joint is outside its range.
    fn violation(&self, q: &[f64]) -> Option<Violation> {
        let d = self.offset(q);
        let tolerance = if d < 0.0 { self.below } else { self.above };
        // Rounding: a joint clamped onto the range's end reads back a few ulps past it.
        (d.abs() > tolerance + 1e-12 || d.is_nan()).then(|| Violation {
            kind: ViolationKind::Joint,
            index: self.index,
            link: self.name.clone(),
            axis: 0,
            value: d,
            tolerance,
        })
    }

    /// Moves the joint of `q` into its range.
    fn clamp(&self, q: &mut [f64]) {
        let d = self.offset(q);
        let inside = d.clamp(-self.below, self.above);
        if inside != d {
            q[self.k] = if self.continuous {
                wrap_angle(self.position + inside)
            } else {
                self.position + inside
            };
        }
    }
}

/// Path constraints of one planning group, evaluated with the other joints at a base state.
#[derive(Clone, Debug)]
pub struct ConstraintSet<'a> {
    tree: &'a KinematicTree,
    group: &'a PlanningGroup,
    base: Vec<f64>,
    terms: Vec<Term>,
    joints: Vec<JointTerm>,
}

fn finite3(v: &Vector3<f64>) -> bool {
    v.iter().all(|x| x.is_finite())
}

fn positive3(v: &Vector3<f64>) -> bool {
    v.iter().all(|x| *x > 0.0 && x.is_finite())
}

/// `[v]x`, the matrix of the cross product with `v`.
fn skew(v: &Vector3<f64>) -> Matrix3<f64> {
    Matrix3::new(0.0, -v.z, v.y, v.z, 0.0, -v.x, -v.y, v.x, 0.0)
}

/// The inverse of SO(3)'s left Jacobian at rotation vector `phi`: how the rotation vector of
/// `exp(d) exp(phi)` changes with a small rotation `d` applied on the left.
fn left_jacobian_inv(phi: &Vector3<f64>) -> Matrix3<f64> {
    let theta = phi.norm();
    let s = skew(phi);
    let coef = if theta < 1e-6 {
        1.0 / 12.0
    } else {
        // Bounded away from PI, where the rotation vector flips and the derivative has no
        // limit; the descent only needs a direction there.
        let t = theta.min(std::f64::consts::PI - 1e-3);
        1.0 / (t * t) - (1.0 + t.cos()) / (2.0 * t * t.sin())
    };
    Matrix3::identity() - 0.5 * s + coef * s * s
}

impl<'a> ConstraintSet<'a> {
    /// Constraints on `group`'s configurations; the other joints hold the values of the full
    /// state `base`. Errors name a link that does not exist or that no group joint moves, a
    /// tolerance or half extent that is not positive and finite, and a pose that is not
    /// finite.
    pub fn new(
        robot: &'a RobotModel,
        group: &'a PlanningGroup,
        base: &[f64],
        constraints: PathConstraints,
    ) -> Result<Self, ConstraintError> {
        let tree = &robot.tree;
        if base.len() != tree.num_variables() {
            return Err(ConstraintError::Bad(format!(
                "base state has {} values, the robot has {} variables",
                base.len(),
                tree.num_variables()
            )));
        }
        let link_name = |link: usize| {
            tree.links
                .get(link)
                .map(|l| l.name.clone())
                .ok_or_else(|| ConstraintError::Bad(format!("no link with index {link}")))
        };
        let chain = |link: usize| -> Result<Vec<ChainJoint>, ConstraintError> {
            let name = link_name(link)?;
            let chain =
                link_chain(tree, group, link).map_err(|e| ConstraintError::Bad(e.to_string()))?;
            if chain.is_empty() {
                return Err(ConstraintError::LinkNotMoved {
                    link: name,
                    group: group.name.clone(),
                });
            }
            Ok(chain)
        };
        let mut terms = Vec::new();
        for (index, c) in constraints.orientation.iter().enumerate() {
            let name = link_name(c.link)?;
            if !c.orientation.coords.iter().all(|v| v.is_finite()) {
                return Err(ConstraintError::Bad(format!(
                    "orientation constraint {index} (link '{name}'): the orientation is not finite"
                )));
            }
            if !positive3(&c.tolerance) {
                return Err(ConstraintError::Bad(format!(
                    "orientation constraint {index} (link '{name}'): every axis tolerance must \
                     be positive and finite, got [{}, {}, {}]",
                    c.tolerance.x, c.tolerance.y, c.tolerance.z
                )));
            }
            terms.push(Term {
                link: c.link,
                chain: chain(c.link)?,
                kind: TermKind::Orientation {
                    target_inv: c.orientation.inverse(),
                    tolerance: c.tolerance,
                    parameterization: c.parameterization,
                    index,
                },
            });
        }
        for (index, c) in constraints.position.iter().enumerate() {
            let name = link_name(c.link)?;
            let pose_finite = finite3(&c.region.translation.vector)
                && c.region.rotation.coords.iter().all(|v| v.is_finite())
                && finite3(&c.offset);
            if !pose_finite {
                return Err(ConstraintError::Bad(format!(
                    "position constraint {index} (link '{name}'): the box pose or the offset is \
                     not finite"
                )));
            }
            if !positive3(&c.half_extents) {
                return Err(ConstraintError::Bad(format!(
                    "position constraint {index} (link '{name}'): the box's size must be \
                     positive and finite along every axis, got half extents [{}, {}, {}]",
                    c.half_extents.x, c.half_extents.y, c.half_extents.z
                )));
            }
            terms.push(Term {
                link: c.link,
                chain: chain(c.link)?,
                kind: TermKind::Position {
                    region_inv: c.region.inverse(),
                    offset: c.offset,
                    half: c.half_extents,
                    index,
                },
            });
        }
        let mut joints = Vec::new();
        for (index, c) in constraints.joint.iter().enumerate() {
            let name = tree
                .joints
                .iter()
                .find(|j| j.variable == Some(c.variable))
                .map(|j| j.name.clone())
                .ok_or_else(|| {
                    ConstraintError::Bad(format!(
                        "joint constraint {index}: no joint has variable {}",
                        c.variable
                    ))
                })?;
            let k = group
                .variables
                .iter()
                .position(|&v| v == c.variable)
                .ok_or_else(|| {
                    ConstraintError::Bad(format!(
                        "joint constraint {index}: joint '{name}' is not in planning group '{}'",
                        group.name
                    ))
                })?;
            let finite = c.position.is_finite() && c.below.is_finite() && c.above.is_finite();
            if !(finite && c.below >= 0.0 && c.above >= 0.0) {
                return Err(ConstraintError::Bad(format!(
                    "joint constraint {index} (joint '{name}'): position {} and tolerances \
                     below {} / above {} must be finite, the tolerances >= 0",
                    c.position, c.below, c.above
                )));
            }
            let space = &group.space;
            let continuous = space.continuous[k];
            if !continuous
                && (c.position - c.below > space.upper[k] || c.position + c.above < space.lower[k])
            {
                return Err(ConstraintError::Bad(format!(
                    "joint constraint {index} (joint '{name}'): the range [{}, {}] lies outside \
                     the joint's limits [{}, {}]",
                    c.position - c.below,
                    c.position + c.above,
                    space.lower[k],
                    space.upper[k]
                )));
            }
            joints.push(JointTerm {
                k,
                name,
                position: c.position,
                below: c.below,
                above: c.above,
                continuous,
                index,
            });
        }
        Ok(Self {
            tree,
            group,
            base: base.to_vec(),
            terms,
            joints,
        })
    }

    /// True when there is no constraint to keep.
    pub fn is_empty(&self) -> bool {
        self.terms.is_empty() && self.joints.is_empty()
    }

    /// `q` within the joint limits and the joint constraints' ranges.
    fn clamp(&self, q: &mut [f64]) {
        clamp_to_limits(&self.group.space, q);
        for j in &self.joints {
            j.clamp(q);
        }
    }

    /// The joint constraint `q` is farthest outside of (relative to its tolerance; a zero
    /// tolerance counts as the farthest).
    fn joint_violation(&self, q: &[f64]) -> Option<Violation> {
        let ratio = |v: &Violation| {
            if v.tolerance > 0.0 {
                v.value.abs() / v.tolerance
            } else {
                f64::INFINITY
            }
        };
        self.joints
            .iter()
            .filter_map(|j| j.violation(q))
            .max_by(|a, b| ratio(a).total_cmp(&ratio(b)))
    }

    /// The joint space of the planning group.
    pub fn space(&self) -> &JointSpace {
        &self.group.space
    }

    fn check_len(&self, q: &[f64]) -> Result<(), ConstraintError> {
        wrong_length(self.group, q).map_or(Ok(()), |(got, want)| {
            Err(ConstraintError::WrongLength {
                group: self.group.name.clone(),
                got,
                want,
            })
        })
    }

    fn poses(&self, q: &[f64], out: &mut Vec<Isometry3<f64>>) {
        group_poses(self.tree, self.group, &self.base, q, out);
    }

    /// The constrained point of a position term in the root frame.
    fn point(&self, term: &Term, poses: &[Isometry3<f64>]) -> Vector3<f64> {
        match &term.kind {
            TermKind::Position { offset, .. } => {
                poses[term.link].transform_point(&(*offset).into()).coords
            }
            TermKind::Orientation { .. } => poses[term.link].translation.vector,
        }
    }

    /// The term's three constrained components at the link poses `poses`.
    fn residual(&self, term: &Term, poses: &[Isometry3<f64>]) -> Vector3<f64> {
        match &term.kind {
            TermKind::Orientation {
                target_inv,
                parameterization,
                ..
            } => parameterization.components(&(target_inv * poses[term.link].rotation)),
            TermKind::Position { region_inv, .. } => {
                region_inv
                    .transform_point(&self.point(term, poses).into())
                    .coords
            }
        }
    }

    /// The components outside `scale` times their tolerances.
    fn excess(&self, poses: &[Isometry3<f64>], scale: f64) -> Excess {
        let mut parts = Vec::new();
        let mut cost = 0.0;
        for (t, term) in self.terms.iter().enumerate() {
            let r = self.residual(term, poses);
            let tol = term.kind.tolerance();
            for k in 0..3 {
                let bound = tol[k] * scale;
                let e = r[k] - r[k].clamp(-bound, bound);
                if e != 0.0 || r[k].is_nan() {
                    let e = if e.is_nan() { f64::INFINITY } else { e };
                    parts.push((t, k, e));
                    cost += e * e;
                }
            }
        }
        Excess { parts, cost }
    }

    fn violation_at(&self, poses: &[Isometry3<f64>]) -> Option<Violation> {
        let mut worst: Option<(f64, Violation)> = None;
        for term in &self.terms {
            let r = self.residual(term, poses);
            let tol = term.kind.tolerance();
            for k in 0..3 {
                let ratio = r[k].abs() / tol[k];
                let outside = ratio > 1.0 || r[k].is_nan();
                if outside && worst.as_ref().is_none_or(|(w, _)| ratio > *w) {
                    let (kind, index) = match term.kind {
                        TermKind::Orientation { index, .. } => (ViolationKind::Orientation, index),
                        TermKind::Position { index, .. } => (ViolationKind::Position, index),
                    };
                    let v = Violation {
                        kind,
                        index,
                        link: self.tree.links[term.link].name.clone(),
                        axis: k,
                        value: r[k],
                        tolerance: tol[k],
                    };
                    worst = Some((if ratio.is_nan() { f64::INFINITY } else { ratio }, v));
                }
            }
        }
        worst.map(|(_, v)| v)
    }

    /// The component that `q` is farthest outside of, relative to its tolerance; `None` when
    /// every constraint holds.
    pub fn violation(&self, q: &[f64]) -> Result<Option<Violation>, ConstraintError> {
        self.check_len(q)?;
        if let Some(v) = self.joint_violation(q) {
            return Ok(Some(v));
        }
        let mut poses = Vec::new();
        self.poses(q, &mut poses);
        Ok(self.violation_at(&poses))
    }

    /// Whether every constraint holds at `q`.
    pub fn satisfied(&self, q: &[f64]) -> Result<bool, ConstraintError> {
        Ok(self.violation(q)?.is_none())
    }

    /// Checks the configurations a motion check of the straight motion from `a` to `b` at
    /// `resolution` visits ([`JointSpace::segments`]), `a` excluded: the first step (1 ..=
    /// segments) at which a constraint does not hold, and what it violates; `None` when they
    /// all hold.
    pub fn check_motion(
        &self,
        a: &[f64],
        b: &[f64],
        resolution: f64,
    ) -> Result<Option<(usize, Violation)>, ConstraintError> {
        self.check_len(a)?;
        self.check_len(b)?;
        let space = &self.group.space;
        let n = space.segments(a, b, resolution);
        let mut q = vec![0.0; a.len()];
        let mut poses = Vec::new();
        for i in 1..=n {
            space.interpolate(a, b, i as f64 / n as f64, &mut q);
            if let Some(v) = self.joint_violation(&q) {
                return Ok(Some((i, v)));
            }
            self.poses(&q, &mut poses);
            if let Some(v) = self.violation_at(&poses) {
                return Ok(Some((i, v)));
            }
        }
        Ok(None)
    }

    /// Jacobian rows (one per violated component of `ex`) at the link poses `poses`.
    fn jacobian_rows(
        &self,
        poses: &[Isometry3<f64>],
        ex: &Excess,
        cols: &mut [Vector6<f64>],
    ) -> DMatrix<f64> {
        let n = self.group.space.dof();
        let mut jac = DMatrix::zeros(ex.parts.len(), n);
        let mut last_term = usize::MAX;
        let mut block = vec![Vector3::zeros(); n];
        for (row, &(t, k, _)) in ex.parts.iter().enumerate() {
            if t != last_term {
                let term = &self.terms[t];
                let point = self.point(term, poses);
                point_jacobian(self.tree, &term.chain, poses, &point, 1.0, cols);
                match &term.kind {
                    TermKind::Orientation {
                        target_inv,
                        parameterization,
                        ..
                    } => {
                        let phi = self.residual(term, poses);
                        let m =
                            parameterization.rate(&phi) * target_inv.to_rotation_matrix().matrix();
                        for (b, c) in block.iter_mut().zip(cols.iter()) {
                            *b = m * Vector3::new(c[3], c[4], c[5]);
                        }
                    }
                    TermKind::Position { region_inv, .. } => {
                        for (b, c) in block.iter_mut().zip(cols.iter()) {
                            *b = region_inv.rotation * Vector3::new(c[0], c[1], c[2]);
                        }
                    }
                }
                last_term = t;
            }
            for (j, b) in block.iter().enumerate() {
                jac[(row, j)] = b[k];
            }
        }
        jac
    }

    /// A configuration near `q` that satisfies every constraint with [`PROJECTION_MARGIN`]
    /// to spare (joint constraints exactly), inside the joint limits (continuous joints
    /// wrapped): `q` itself (clamped) when it already does; `None` when the descent stalls or
    /// does not get there within [`PROJECTION_ITERATIONS`] steps.
    pub fn project(&self, q: &[f64]) -> Result<Option<Vec<f64>>, ConstraintError> {
        self.check_len(q)?;
        let space = &self.group.space;
        let n = space.dof();
        let scale = 1.0 - PROJECTION_MARGIN;
        let mut q = q.to_vec();
        self.clamp(&mut q);
        if q.iter().any(|v| !v.is_finite()) {
            return Ok(None);
        }
        let (mut poses, mut trial_poses) = (Vec::new(), Vec::new());
        let mut cols = vec![Vector6::zeros(); n];
        let mut trial = vec![0.0; n];
        self.poses(&q, &mut poses);
        let mut ex = self.excess(&poses, scale);
        let mut lambda = 1e-3;
        for _ in 0..PROJECTION_ITERATIONS {
            if ex.parts.is_empty() {
                return Ok(Some(q));
            }
            let jac = self.jacobian_rows(&poses, &ex, &mut cols);
            let e = DVector::from_iterator(ex.parts.len(), ex.parts.iter().map(|p| p.2));
            let jjt = &jac * jac.transpose();
            let mut improved = false;
            for _ in 0..10 {
                let a = &jjt + DMatrix::identity(jjt.nrows(), jjt.ncols()) * (lambda * lambda);
                let Some(y) = a.cholesky().map(|c| c.solve(&e)) else {
                    lambda *= 10.0;
                    continue;
                };
                let mut dq = -(jac.transpose() * y);
                let big = dq.amax();
                if big > MAX_STEP {
                    dq *= MAX_STEP / big;
                }
                for k in 0..n {
                    trial[k] = q[k] + dq[k];
                }
                self.clamp(&mut trial);
                self.poses(&trial, &mut trial_poses);
                let tex = self.excess(&trial_poses, scale);
                if tex.cost < ex.cost {
                    q.copy_from_slice(&trial);
                    std::mem::swap(&mut poses, &mut trial_poses);
                    ex = tex;
                    lambda = (lambda * 0.3).max(1e-6);
                    improved = true;
                    break;
                }
                lambda *= 5.0;
            }
            if !improved {
                break;
            }
        }
        Ok(ex.parts.is_empty().then_some(q))
    }
}

/// A goal region: the configurations that satisfy the constraints (MoveIt's goal
/// constraints), reached from a start by [`ConstraintSet::project`] (so with
/// [`PROJECTION_MARGIN`] of each tolerance to spare) and searched for from many starts as a
/// pose goal is ([`IkSearch`](super::ik::IkSearch)).
impl GoalSolver for ConstraintSet<'_> {
    fn goal_group(&self) -> &PlanningGroup {
        self.group
    }

    fn reach(&self, q0: &[f64], _max_iterations: usize, start: usize) -> Option<IkSolution> {
        let config = self.project(q0).ok().flatten()?;
        // The projection ends inside the scaled tolerances; the check with the whole ones is
        // what a goal is held to.
        self.satisfied(&config).ok()?.then_some(IkSolution {
            config,
            position_error: 0.0,
            orientation_error: 0.0,
            start,
        })
    }

    fn is_region(&self) -> bool {
        true
    }
}

/// An orientation constraint as a user gives it: links and frames by name.
#[derive(Clone, Debug, PartialEq)]
pub struct OrientationSpec {
    /// The frame of `orientation` (empty: the planning frame).
    pub frame: String,
    /// The constrained link.
    pub link: String,
    /// Target orientation `[x, y, z, w]` in `frame` (normalised when resolved).
    pub orientation: [f64; 4],
    /// Axis tolerances (rad), see [`OrientationConstraint::tolerance`].
    pub tolerance: [f64; 3],
    /// MoveIt's parameterization code: 0 XYZ Euler angles (its default), 1 rotation vector
    /// ([`OrientationParameterization::code`]); another number is refused when resolved.
    pub parameterization: i64,
}

/// A position constraint as a user gives it: links and frames by name.
#[derive(Clone, Debug, PartialEq)]
pub struct PositionSpec {
    /// The frame of the box's pose (empty: the planning frame).
    pub frame: String,
    /// The constrained link.
    pub link: String,
    /// The constrained point in the link's frame.
    pub offset: [f64; 3],
    /// Centre of the box in `frame`.
    pub position: [f64; 3],
    /// Orientation of the box's axes `[x, y, z, w]` in `frame`.
    pub orientation: [f64; 4],
    /// The box's sides (m): twice [`PositionConstraint::half_extents`].
    pub size: [f64; 3],
}

/// A joint constraint as a user gives it: the joint by name.
#[derive(Clone, Debug, PartialEq)]
pub struct JointSpec {
    /// The joint.
    pub joint: String,
    /// See [`JointConstraint::position`].
    pub position: f64,
    /// See [`JointConstraint::below`].
    pub below: f64,
    /// See [`JointConstraint::above`].
    pub above: f64,
}

/// Path constraints as a user gives them (a file, a request, a ROS message), to be resolved
/// against a robot and its frames ([`ConstraintSpec::resolve`]).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ConstraintSpec {
    /// The name (MoveIt's `Constraints.name`): `center` or `interim` for the circle point of a
    /// Pilz CIRC motion ([`crate::planners::pilz::CircPoint`]); otherwise not used.
    pub name: String,
    /// Orientation constraints.
    pub orientation: Vec<OrientationSpec>,
    /// Position constraints.
    pub position: Vec<PositionSpec>,
    /// Joint constraints.
    pub joint: Vec<JointSpec>,
}

/// Reads `v` as three numbers `{x, y, z}` (missing entries 0), naming `what` when an entry is
/// not a number.
fn yaml_xyz(v: &serde_yaml::Value, what: &str) -> Result<[f64; 3], String> {
    let mut out = [0.0; 3];
    for (slot, k) in out.iter_mut().zip(["x", "y", "z"]) {
        match &v[k] {
            serde_yaml::Value::Null => {}
            x => *slot = x.as_f64().ok_or(format!("{what}.{k} is not a number"))?,
        }
    }
    Ok(out)
}

/// Reads a quaternion `{x, y, z, w}` (all four required).
fn yaml_quat(v: &serde_yaml::Value, what: &str) -> Result<[f64; 4], String> {
    let mut out = [0.0; 4];
    for (slot, k) in out.iter_mut().zip(["x", "y", "z", "w"]) {
        *slot = v[k]
            .as_f64()
            .ok_or(format!("{what}.{k} is missing or not a number"))?;
    }
    Ok(out)
}

/// Why the parameterization `got` of constraint `what` is refused.
fn bad_parameterization(what: &str, got: impl fmt::Display) -> String {
    format!(
        "{what}: parameterization must be 0 (XYZ_EULER_ANGLES) or 1 (ROTATION_VECTOR), got {got}"
    )
}

/// A quaternion `[x, y, z, w]` as a rotation; errors name `what` when it is zero or not
/// finite.
fn rotation_of(q: [f64; 4], what: &str) -> Result<UnitQuaternion<f64>, ConstraintError> {
    quaternion_rotation(q, what).map_err(ConstraintError::Bad)
}

impl ConstraintSpec {
    /// True when there is no constraint.
    pub fn is_empty(&self) -> bool {
        self.orientation.is_empty() && self.position.is_empty() && self.joint.is_empty()
    }

    /// Reads a MoveIt `moveit_msgs/Constraints` mapping (`orientation_constraints`,
    /// `position_constraints`, `joint_constraints` (their `weight` is not used); visibility
    /// constraints are refused). An orientation
    /// constraint's `parameterization` is 0 (XYZ Euler angles, also when left out, as in
    /// MoveIt) or 1 (rotation vector); a position constraint's region must be one BOX. Errors
    /// name the entry and the field.
    pub fn from_moveit_yaml(v: &serde_yaml::Value) -> Result<Self, String> {
        let mut spec = ConstraintSpec {
            name: v["name"].as_str().unwrap_or_default().to_string(),
            ..ConstraintSpec::default()
        };
        if !(v.is_mapping() || v.is_null()) {
            return Err(
                "path constraints must be a mapping with orientation_constraints and \
                        position_constraints"
                    .into(),
            );
        }
        if v["visibility_constraints"]
            .as_sequence()
            .is_some_and(|s| !s.is_empty())
        {
            return Err(
                "visibility_constraints are not supported as path constraints \
                 (orientation_constraints, position_constraints and joint_constraints are)"
                    .into(),
            );
        }
        let list = |key: &str| -> Result<Vec<serde_yaml::Value>, String> {
            match &v[key] {
                serde_yaml::Value::Null => Ok(Vec::new()),
                serde_yaml::Value::Sequence(s) => Ok(s.clone()),
                _ => Err(format!("{key} must be a list")),
            }
        };
        for (i, oc) in list("orientation_constraints")?.iter().enumerate() {
            let what = format!("orientation_constraints[{i}]");
            let link = oc["link_name"]
                .as_str()
                .ok_or(format!("{what}: link_name is missing"))?
                .to_string();
            let parameterization = match &oc["parameterization"] {
                serde_yaml::Value::Null => 0,
                p => p
                    .as_i64()
                    .filter(|&p| OrientationParameterization::from_code(p).is_some())
                    .ok_or_else(|| {
                        bad_parameterization(
                            &what,
                            serde_yaml::to_string(p).unwrap_or_default().trim(),
                        )
                    })?,
            };
            let mut tolerance = [0.0; 3];
            for (slot, k) in tolerance.iter_mut().zip([
                "absolute_x_axis_tolerance",
                "absolute_y_axis_tolerance",
                "absolute_z_axis_tolerance",
            ]) {
                *slot = oc[k]
                    .as_f64()
                    .ok_or(format!("{what}: {k} is missing or not a number"))?;
            }
            spec.orientation.push(OrientationSpec {
                frame: oc["header"]["frame_id"].as_str().unwrap_or("").to_string(),
                link,
                orientation: yaml_quat(&oc["orientation"], &format!("{what}.orientation"))?,
                tolerance,
                parameterization,
            });
        }
        for (i, jc) in list("joint_constraints")?.iter().enumerate() {
            let what = format!("joint_constraints[{i}]");
            let joint = jc["joint_name"]
                .as_str()
                .ok_or(format!("{what}: joint_name is missing"))?
                .to_string();
            let number = |k: &str| {
                jc[k]
                    .as_f64()
                    .ok_or(format!("{what}: {k} is missing or not a number"))
            };
            spec.joint.push(JointSpec {
                joint,
                position: number("position")?,
                below: number("tolerance_below")?,
                above: number("tolerance_above")?,
            });
        }
        for (i, pc) in list("position_constraints")?.iter().enumerate() {
            let what = format!("position_constraints[{i}]");
            let link = pc["link_name"]
                .as_str()
                .ok_or(format!("{what}: link_name is missing"))?
                .to_string();
            let region = &pc["constraint_region"];
            let prims = region["primitives"].as_sequence().map_or(&[][..], |s| s);
            let poses = region["primitive_poses"]
                .as_sequence()
                .map_or(&[][..], |s| s);
            if prims.len() != 1 || poses.len() != 1 {
                return Err(format!(
                    "{what}: constraint_region must hold exactly one primitive and one \
                     primitive pose, got {} and {}",
                    prims.len(),
                    poses.len()
                ));
            }
            let dims: Vec<f64> = prims[0]["dimensions"]
                .as_sequence()
                .map(|d| d.iter().filter_map(|x| x.as_f64()).collect())
                .unwrap_or_default();
            // shape_msgs/SolidPrimitive BOX = 1, with its three sides.
            let size = match (prims[0]["type"].as_i64(), dims.as_slice()) {
                (Some(1), [x, y, z]) => [*x, *y, *z],
                _ => {
                    return Err(format!(
                        "{what}: the region must be a BOX (type 1, dimensions [x, y, z])"
                    ))
                }
            };
            let pose = &poses[0];
            spec.position.push(PositionSpec {
                frame: pc["header"]["frame_id"].as_str().unwrap_or("").to_string(),
                link,
                offset: yaml_xyz(
                    &pc["target_point_offset"],
                    &format!("{what}.target_point_offset"),
                )?,
                position: yaml_xyz(&pose["position"], &format!("{what}.position"))?,
                orientation: match &pose["orientation"] {
                    serde_yaml::Value::Null => [0.0, 0.0, 0.0, 1.0],
                    o => yaml_quat(o, &format!("{what}.orientation"))?,
                },
                size,
            });
        }
        Ok(spec)
    }

    /// The constraints in the robot's root frame: links by name, each frame through
    /// `frame_pose` (the pose of a frame in the root frame; the caller decides which frames
    /// it knows). Errors name the constraint and what is wrong.
    pub fn resolve(
        &self,
        tree: &KinematicTree,
        mut frame_pose: impl FnMut(&str) -> Result<Isometry3<f64>, String>,
    ) -> Result<PathConstraints, ConstraintError> {
        let link = |name: &str, what: &str| {
            tree.link(name).map_err(|_| {
                ConstraintError::Bad(format!(
                    "{what}: link_name '{name}' is not a link of the robot"
                ))
            })
        };
        let mut out = PathConstraints::default();
        for (i, o) in self.orientation.iter().enumerate() {
            let what = format!("orientation constraint {i}");
            let link = link(&o.link, &what)?;
            let frame =
                frame_pose(&o.frame).map_err(|e| ConstraintError::Bad(format!("{what}: {e}")))?;
            let [x, y, z] = o.tolerance;
            let parameterization = OrientationParameterization::from_code(o.parameterization)
                .ok_or_else(|| {
                    ConstraintError::Bad(bad_parameterization(&what, o.parameterization))
                })?;
            out.orientation.push(OrientationConstraint {
                link,
                orientation: frame.rotation * rotation_of(o.orientation, &what)?,
                tolerance: Vector3::new(x, y, z),
                parameterization,
            });
        }
        for (i, p) in self.position.iter().enumerate() {
            let what = format!("position constraint {i}");
            let link = link(&p.link, &what)?;
            let frame =
                frame_pose(&p.frame).map_err(|e| ConstraintError::Bad(format!("{what}: {e}")))?;
            let [x, y, z] = p.position;
            let box_pose = Isometry3::from_parts(
                nalgebra::Translation3::new(x, y, z),
                rotation_of(p.orientation, &what)?,
            );
            let [ox, oy, oz] = p.offset;
            let [sx, sy, sz] = p.size;
            out.position.push(PositionConstraint {
                link,
                offset: Vector3::new(ox, oy, oz),
                region: frame * box_pose,
                half_extents: Vector3::new(sx, sy, sz) * 0.5,
            });
        }
        for (i, j) in self.joint.iter().enumerate() {
            let what = format!("joint constraint {i}");
            let variable = tree
                .joints
                .iter()
                .find(|x| x.name == j.joint)
                .ok_or_else(|| {
                    ConstraintError::Bad(format!(
                        "{what}: joint_name '{}' is not a joint of the robot",
                        j.joint
                    ))
                })?
                .variable
                .ok_or_else(|| {
                    ConstraintError::Bad(format!(
                        "{what}: joint '{}' does not move (fixed or a mimic joint)",
                        j.joint
                    ))
                })?;
            out.joint.push(JointConstraint {
                variable,
                position: j.position,
                below: j.below,
                above: j.above,
            });
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::robot::ik::tests::bundled;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    fn arm() -> (RobotModel, PlanningGroup) {
        let robot = bundled();
        let group = robot.default_group();
        (robot, group)
    }

    fn upright(robot: &RobotModel, group: &PlanningGroup, q: &[f64]) -> OrientationConstraint {
        let link = robot.tree.link("tool0").expect("tool0");
        let state = group.full_state(&robot.tree.neutral_state(), q);
        let pose = robot.tree.forward_kinematics(&state)[link];
        OrientationConstraint {
            link,
            orientation: pose.rotation,
            tolerance: Vector3::new(0.1, 0.1, std::f64::consts::PI),
            parameterization: OrientationParameterization::RotationVector,
        }
    }

    #[test]
    fn projection_lands_inside_the_tolerances() {
        let (robot, group) = arm();
        let base = robot.tree.neutral_state();
        let start = vec![0.3, -0.4, 0.9, 0.2, 0.4, 0.1];
        for parameterization in [
            OrientationParameterization::RotationVector,
            OrientationParameterization::XyzEulerAngles,
        ] {
            let c = PathConstraints {
                joint: Vec::new(),
                orientation: vec![OrientationConstraint {
                    parameterization,
                    ..upright(&robot, &group, &start)
                }],
                position: Vec::new(),
            };
            let set = ConstraintSet::new(&robot, &group, &base, c).expect("set");
            assert_eq!(set.violation(&start).expect("len"), None);
            let mut rng = ChaCha8Rng::seed_from_u64(3);
            let (mut projected, mut tried) = (0, 0);
            for _ in 0..200 {
                let q = group.space.sample_uniform(&mut rng);
                tried += 1;
                if let Some(p) = set.project(&q).expect("len") {
                    projected += 1;
                    assert!(group.space.within_limits(&p));
                    let v = set.violation(&p).expect("len");
                    assert_eq!(v, None, "{parameterization:?}: projected {p:?} violates");
                }
            }
            // Random configurations of a 6-joint arm can be brought upright from most places.
            assert!(
                projected * 2 > tried,
                "{parameterization:?}: {projected} of {tried} projected"
            );
        }
    }

    /// XYZ Euler angles: the angles a rotation is built from are read back (middle angle
    /// within +-PI/2, the others within +-PI), and the rate matrix matches finite differences
    /// of small rotations applied on the left.
    #[test]
    fn euler_angles_are_read_back_and_their_rates_match_differences() {
        use rand::Rng;
        let euler = OrientationParameterization::XyzEulerAngles;
        let build = |a: f64, b: f64, c: f64| {
            UnitQuaternion::from_axis_angle(&Vector3::x_axis(), a)
                * UnitQuaternion::from_axis_angle(&Vector3::y_axis(), b)
                * UnitQuaternion::from_axis_angle(&Vector3::z_axis(), c)
        };
        let mut rng = ChaCha8Rng::seed_from_u64(9);
        let pi = std::f64::consts::PI;
        for _ in 0..500 {
            let (a, b, c) = (
                rng.random_range(-pi + 1e-3..pi),
                rng.random_range(-1.5..1.5),
                rng.random_range(-pi + 1e-3..pi),
            );
            let got = euler.components(&build(a, b, c));
            assert!(
                (got - Vector3::new(a, b, c)).amax() < 1e-9,
                "{a} {b} {c} -> {got}"
            );
            // Rates: components of exp(h w) R against R, for each axis w.
            let r = build(a, b, c);
            let rate = euler.rate(&got);
            let h = 1e-6;
            for k in 0..3 {
                let mut w = Vector3::zeros();
                w[k] = h;
                let moved = euler.components(&(UnitQuaternion::from_scaled_axis(w) * r));
                let numeric = (moved - got) / h;
                let analytic = rate.column(k).into_owned();
                assert!(
                    (numeric - analytic).amax() < 1e-4 * (1.0 + analytic.amax()),
                    "axis {k} at {got}: {numeric} vs {analytic}"
                );
            }
        }
        // Upright within 0.1 about x and y: a turn of 0.12 about the target's x is out, and
        // named on x; a turn of 2 rad about z is free.
        let rv = OrientationParameterization::RotationVector;
        assert_eq!(rv.code(), 1);
        assert_eq!(OrientationParameterization::from_code(0), Some(euler));
        assert_eq!(OrientationParameterization::from_code(2), None);
        let tipped = euler.components(&build(0.12, 0.0, 2.0));
        assert!((tipped.x - 0.12).abs() < 1e-12 && tipped.y.abs() < 1e-12);
        // Small rotations give (nearly) the same components either way.
        let small = build(0.03, -0.02, 0.04);
        assert!((euler.components(&small) - rv.components(&small)).amax() < 2e-3);
    }

    #[test]
    fn violations_name_the_constraint_and_axis() {
        let (robot, group) = arm();
        let base = robot.tree.neutral_state();
        let start = vec![0.3, -0.4, 0.9, 0.2, 0.4, 0.1];
        let link = robot.tree.link("tool0").expect("tool0");
        let c = PathConstraints {
            joint: Vec::new(),
            orientation: vec![upright(&robot, &group, &start)],
            position: vec![PositionConstraint {
                link,
                offset: Vector3::zeros(),
                region: Isometry3::identity(),
                half_extents: Vector3::new(10.0, 10.0, 10.0),
            }],
        };
        let set = ConstraintSet::new(&robot, &group, &base, c).expect("set");
        // Turning the last wrist joint turns the tool about its own z: free.
        let mut q = start.clone();
        q[5] += 1.0;
        assert_eq!(set.violation(&q).expect("len"), None);
        // The wrist's pitch tips it over.
        let mut q = start.clone();
        q[4] += 0.5;
        let v = set.violation(&q).expect("len").expect("tipped over");
        assert_eq!(v.kind, ViolationKind::Orientation);
        assert_eq!(v.link, "tool0");
        assert!(v.value.abs() > 0.1 && v.axis < 2, "{v:?}");
        assert!(v.to_string().contains("orientation constraint 0"), "{v}");
        // A motion through it fails at a step, the motion back to the start holds.
        let hit = set.check_motion(&start, &q, 0.02).expect("len");
        assert!(hit.is_some());
        assert_eq!(set.check_motion(&start, &start, 0.02).expect("len"), None);
        // A small box around the start's tool point.
        let state = group.full_state(&base, &start);
        let p = robot.tree.forward_kinematics(&state)[link]
            .translation
            .vector;
        let c = PathConstraints {
            joint: Vec::new(),
            orientation: Vec::new(),
            position: vec![PositionConstraint {
                link,
                offset: Vector3::zeros(),
                region: Isometry3::translation(p.x, p.y, p.z + 0.05),
                half_extents: Vector3::new(0.5, 0.5, 0.1),
            }],
        };
        let set = ConstraintSet::new(&robot, &group, &base, c).expect("set");
        assert_eq!(set.violation(&start).expect("len"), None);
        let mut rng = ChaCha8Rng::seed_from_u64(5);
        let mut projected = 0;
        for _ in 0..50 {
            let q = group.space.sample_uniform(&mut rng);
            if let Some(p) = set.project(&q).expect("len") {
                projected += 1;
                assert_eq!(set.violation(&p).expect("len"), None);
            }
        }
        assert!(projected > 25, "{projected} of 50");
    }

    /// A joint range: named when left, projection clamps into it (also with the orientation),
    /// a continuous joint's range wraps; a joint outside the group, a negative tolerance and a
    /// range beyond the limits are refused by name.
    #[test]
    fn joint_ranges_are_named_and_projected_into() {
        let (robot, group) = arm();
        let base = robot.tree.neutral_state();
        let start = vec![0.3, -0.4, 0.9, 0.2, 0.4, 0.1];
        let elbow = JointConstraint {
            variable: group.variables[2],
            position: 0.9,
            below: 0.2,
            above: 0.1,
        };
        // wrist_3 is continuous: its range crosses PI.
        let wrist = JointConstraint {
            variable: group.variables[5],
            position: 3.0,
            below: 0.2,
            above: 0.4,
        };
        let c = PathConstraints {
            orientation: vec![upright(&robot, &group, &start)],
            position: Vec::new(),
            joint: vec![elbow.clone(), wrist.clone()],
        };
        let set = ConstraintSet::new(&robot, &group, &base, c).expect("set");
        let mut q = start.clone();
        q[5] = -3.0; // 0.28 past PI from 3.0: inside the wrapped range
        assert_eq!(set.violation(&q).expect("len"), None);
        q[2] = 1.2;
        let v = set.violation(&q).expect("len").expect("elbow above");
        assert_eq!(
            (v.kind, v.link.as_str(), v.index),
            (ViolationKind::Joint, "elbow_joint", 0)
        );
        assert!((v.value - 0.3).abs() < 1e-12 && v.tolerance == 0.1, "{v:?}");
        assert!(v.to_string().contains("joint constraint 0"), "{v}");
        let mut rng = ChaCha8Rng::seed_from_u64(4);
        let mut projected = 0;
        for _ in 0..100 {
            let q = group.space.sample_uniform(&mut rng);
            if let Some(p) = set.project(&q).expect("len") {
                projected += 1;
                assert_eq!(set.violation(&p).expect("len"), None, "{p:?}");
                assert!((0.7..=1.0).contains(&p[2]), "{p:?}");
                assert!(wrapped_difference(3.0, p[5]) >= -0.2 - 1e-12, "{p:?}");
                assert!(wrapped_difference(3.0, p[5]) <= 0.4 + 1e-12, "{p:?}");
            }
        }
        assert!(projected > 30, "{projected} of 100");
        let refused = |j: JointConstraint| {
            let c = PathConstraints {
                joint: vec![j],
                ..PathConstraints::default()
            };
            ConstraintSet::new(&robot, &group, &base, c)
                .expect_err("refused")
                .to_string()
        };
        let outside = robot
            .tree
            .joints
            .iter()
            .filter_map(|j| j.variable)
            .find(|v| !group.variables.contains(v));
        if let Some(variable) = outside {
            let e = refused(JointConstraint {
                variable,
                ..elbow.clone()
            });
            assert!(e.contains("not in planning group"), "{e}");
        }
        let e = refused(JointConstraint {
            below: -0.1,
            ..elbow.clone()
        });
        assert!(
            e.contains("joint constraint 0") && e.contains(">= 0"),
            "{e}"
        );
        let e = refused(JointConstraint {
            position: 5.0,
            ..elbow
        });
        assert!(e.contains("outside the joint's limits"), "{e}");
    }

    #[test]
    fn bad_constraints_are_refused_by_name() {
        let (robot, group) = arm();
        let base = robot.tree.neutral_state();
        let link = robot.tree.link("tool0").expect("tool0");
        let bad_tol = PathConstraints {
            joint: Vec::new(),
            orientation: vec![OrientationConstraint {
                link,
                orientation: UnitQuaternion::identity(),
                tolerance: Vector3::new(0.1, 0.0, 0.1),
                parameterization: OrientationParameterization::default(),
            }],
            position: Vec::new(),
        };
        let e = ConstraintSet::new(&robot, &group, &base, bad_tol).expect_err("zero tolerance");
        assert!(e.to_string().contains("tolerance"), "{e}");
        let root = robot.tree.root;
        let unmoved = PathConstraints {
            joint: Vec::new(),
            orientation: vec![OrientationConstraint {
                link: root,
                orientation: UnitQuaternion::identity(),
                tolerance: Vector3::new(0.1, 0.1, 0.1),
                parameterization: OrientationParameterization::default(),
            }],
            position: Vec::new(),
        };
        let e = ConstraintSet::new(&robot, &group, &base, unmoved).expect_err("root link");
        assert!(matches!(e, ConstraintError::LinkNotMoved { .. }), "{e}");
        let flat = PathConstraints {
            joint: Vec::new(),
            orientation: Vec::new(),
            position: vec![PositionConstraint {
                link,
                offset: Vector3::zeros(),
                region: Isometry3::identity(),
                half_extents: Vector3::new(0.1, f64::NAN, 0.1),
            }],
        };
        let e = ConstraintSet::new(&robot, &group, &base, flat).expect_err("NaN size");
        assert!(e.to_string().contains("half extents"), "{e}");
        let set = ConstraintSet::new(&robot, &group, &base, PathConstraints::default())
            .expect("no constraint");
        assert!(matches!(
            set.violation(&[0.0; 3]),
            Err(ConstraintError::WrongLength { got: 3, .. })
        ));
    }
}
