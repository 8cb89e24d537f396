//! ROS 2 entry point: runs the `planner_node` node until SIGINT/SIGTERM.
//!
//! Built only with the `ros` feature (needs a sourced ROS 2 environment). Start it with
//! `ros2 run gpu_motion_planner planner_node --ros-args --params-file config/planner.yaml`
//! or through `launch/planner.launch.py`.

use std::process::ExitCode;

fn main() -> ExitCode {
    match gpu_motion_planner::ros::run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("planner_node: {e}");
            ExitCode::FAILURE
        }
    }
}
