#!/usr/bin/env bash
# Build the ROS packages of this repository with colcon: gpu_motion_planner_interfaces
# (interfaces/) and gpu_motion_planner (the repo root, with the `ros` cargo feature so
# that planner_node is built).
#
# The colcon workspace (build/ install/ log/) lives in $GMP_ROS_CACHE/ws, by default
# .cache/ros/ws, which git ignores; nothing is written into the source tree. Re-running
# rebuilds only what changed. Runs scripts/setup_ros.sh first unless its env file exists.
#
# The node is built with --release (planning speed); GMP_ROS_CLIPPY=1 also runs
# `cargo clippy --features ros` and the `ros` module's unit tests in the same environment
# (the lint and tests of the node's code that scripts/test.sh's plain cargo runs cannot do
# without ROS).
#
# Usage: scripts/build_ros.sh [extra colcon build arguments]
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CACHE=${GMP_ROS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/gpu_motion_planner/ros}
[[ -f "$CACHE/env.sh" ]] || "$ROOT/scripts/setup_ros.sh"
set +u; . "$CACHE/env.sh"; set -u
WS=$CACHE/ws
mkdir -p "$WS"
# The workspace's CMake and cargo caches name the checkout they were configured from: built
# from another checkout (a clone elsewhere, a moved repository), CMake refuses the new source
# directory. Start the workspace afresh when the checkout changes.
if [[ "$(cat "$WS/source_root" 2>/dev/null)" != "$ROOT" ]]; then
    [[ -f "$WS/source_root" ]] && echo "build_ros: workspace was built from $(cat "$WS/source_root"); rebuilding for $ROOT"
    rm -rf "$WS/build" "$WS/install" "$WS/log" "$WS/interfaces.sha256"
    echo "$ROOT" > "$WS/source_root"
fi
# r2r generates bindings only for these packages (and their needs); on a full ROS
# install this saves most of the build time.
export IDL_PACKAGE_FILTER=${GMP_IDL_PACKAGE_FILTER:-"gpu_motion_planner_interfaces;builtin_interfaces;geometry_msgs;nav_msgs;sensor_msgs;std_msgs;std_srvs;trajectory_msgs;visualization_msgs;service_msgs;rcl_interfaces;tf2_msgs;control_msgs;action_msgs;unique_identifier_msgs"}
cd "$WS"   # colcon-ros-cargo writes .cargo/config.toml into the current directory
# r2r generates the Rust types of the messages in its build script, which cargo does not re-run
# when a .msg/.srv file of interfaces/ changes, nor when scripts/setup_ros.sh builds other
# interface packages (its stamp in pyextra/ changes then): after such a change, drop r2r's
# generated code from both target directories (colcon's and the repository's, used by
# clippy) so it is generated again.
STAMP=$WS/interfaces.sha256
NOW=$( { (cd "$ROOT" && find interfaces -type f \( -name '*.msg' -o -name '*.srv' -o -name '*.action' \) \
    | LC_ALL=C sort | xargs sha256sum); cat "$CACHE/pyextra/.gmp-stamp" 2>/dev/null; } \
    | sha256sum | cut -d' ' -f1)
# (No stamp yet, from a build before this check existed: regenerate once to be sure.)
if [[ "$(cat "$STAMP" 2>/dev/null)" != "$NOW" ]]; then
    echo "build_ros: interfaces changed; regenerating r2r's message code"
    for dir in "$WS/build/gpu_motion_planner" "$ROOT/target"; do
        [[ -d "$dir" ]] && cargo clean --manifest-path "$ROOT/Cargo.toml" --release \
            --target-dir "$dir" -p r2r_msg_gen -p r2r >/dev/null 2>&1 || true
    done
fi
T0=$(date +%s)
# shellcheck disable=SC2086
colcon build --base-paths "$ROOT" "$ROOT/interfaces" \
    --cmake-args ${GMP_COLCON_CMAKE_ARGS:-} \
    --cargo-args --features ros --release \
    "$@" > "$WS/colcon_build.log" 2>&1 || {
        tail -60 "$WS/colcon_build.log"
        echo "build_ros: colcon build failed; full log: $WS/colcon_build.log" >&2
        exit 1
    }
grep -E "^Summary|^Finished|^Failed" "$WS/colcon_build.log" || true
echo "$NOW" > "$STAMP"
echo "build_ros: built in $(( $(date +%s) - T0 ))s; source $WS/install/setup.bash"
if [[ "${GMP_ROS_CLIPPY:-0}" == 1 ]]; then
    set +u; . "$WS/install/setup.bash"; set -u
    (cd "$ROOT" && cargo clippy --release --features ros --all-targets -- -D warnings)
    echo "build_ros: cargo clippy --features ros clean"
    # The unit tests of the node's own modules (parameters, messages), which the plain
    # `cargo test` of scripts/test.sh cannot build without ROS.
    if ! (cd "$ROOT" && cargo test --release --features ros --lib ros:: >"$WS/ros_unit_tests.log" 2>&1); then
        tail -40 "$WS/ros_unit_tests.log"
        echo "build_ros: the ros module's unit tests failed; full log: $WS/ros_unit_tests.log" >&2
        exit 1
    fi
    grep -E "^test result" "$WS/ros_unit_tests.log" | sed 's/^/build_ros: ros unit tests: /' || true
fi
