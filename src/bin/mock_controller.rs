//! ROS 2 entry point of the mock controller (see `gpu_motion_planner::ros::mock_controller`):
//! a robot behind a joint_trajectory_controller's interfaces, for demos and tests.
//!
//! Built only with the `ros` feature. Start it with
//! `ros2 run gpu_motion_planner mock_controller --ros-args --params-file config/mock_controller.yaml`
//! or through `launch/planner.launch.py mock_controller:=true`.

use std::process::ExitCode;

fn main() -> ExitCode {
    match gpu_motion_planner::ros::mock_controller::run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("mock_controller: {e}");
            ExitCode::FAILURE
        }
    }
}
