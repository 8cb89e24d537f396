//! Robot model: URDF loading, kinematic tree, forward kinematics, DH extraction, link geometry,
//! allowed collision pairs and planning groups.

pub mod geometry;
mod space;

pub use space::{wrap_angle, wrapped_difference, JointSpace};
