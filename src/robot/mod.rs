//! Robot model: URDF loading, kinematic tree, forward kinematics, DH extraction, link geometry,
//! allowed collision pairs and planning groups.

pub mod geometry;
pub mod mesh;
mod space;
pub mod spheres;

pub use space::{wrap_angle, wrapped_difference, JointSpace};
