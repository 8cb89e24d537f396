//! `gpu_motion_planner`: GPU-batched sampling-based motion planning.
//!
//! The engine is a plain library (robot model, scene, collision checking, planners); the
//! `gmp` command-line tool and the ROS 2 node are thin shells around it.

pub mod collision;
pub mod robot;
#[cfg(feature = "ros")]
pub mod ros;
