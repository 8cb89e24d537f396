#![warn(missing_docs)]
//! `gpu_motion_planner`: GPU-batched sampling-based motion planning.
//!
//! The engine is a plain library (robot model, scene, collision checking, roadmaps, planners,
//! trajectories, many-agent grid planning); the `gmp` command-line tool and the ROS 2 node are
//! thin shells around it.

pub mod cli;
pub mod collision;
pub mod controllers;
pub mod gpu;
pub mod grid;
pub mod mbm;
pub mod planners;
pub mod report;
pub mod roadmap;
pub mod robot;
#[cfg(feature = "ros")]
pub mod ros;
pub mod scene;
pub mod service;
pub mod tf;
pub mod trajectory;
