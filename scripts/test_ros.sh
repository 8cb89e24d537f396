#!/usr/bin/env bash
# ROS 2 integration tests: set-up (scripts/setup_ros.sh), build (scripts/build_ros.sh),
# then test/ros/test_node.py against the node started from launch/planner.launch.py.
#
# The test runs in a private network namespace (`unshare -n`) with multicast enabled on
# its loopback, so DDS discovery works and no traffic leaves the machine; the ROS domain
# id is distinct too (GMP_ROS_DOMAIN_ID, default 77). Where namespaces are not allowed it
# falls back to ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST.
#
# Ends with `N passed, M failed`; exits non-zero on any failure.
# GMP_SKIP_ROS=1 skips everything (exit 0).
set -uo pipefail
if [[ "${GMP_SKIP_ROS:-0}" == 1 ]]; then
    echo "test_ros: skipped because GMP_SKIP_ROS=1"
    exit 0
fi
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CACHE=${GMP_ROS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/gpu_motion_planner/ros}
T0=$(date +%s)
fail_early() { echo "test_ros: $1"; echo "0 passed, 1 failed"; exit 1; }

"$ROOT/scripts/setup_ros.sh" || fail_early "set-up failed"
echo "test_ros: set-up done after $(( $(date +%s) - T0 ))s"
GMP_ROS_CLIPPY=1 "$ROOT/scripts/build_ros.sh" || fail_early "build or clippy (feature ros) failed"
echo "test_ros: build done after $(( $(date +%s) - T0 ))s"

LOG_DIR=$CACHE/test_logs
rm -rf "$LOG_DIR"; mkdir -p "$LOG_DIR"
export GMP_TEST_LOG_DIR=$LOG_DIR ROS_LOG_DIR=$LOG_DIR/ros GMP_ROOT=$ROOT GMP_ROS_CACHE=$CACHE
export ROS_DOMAIN_ID=${GMP_ROS_DOMAIN_ID:-77}

# The test body, run in the namespace: loopback up with multicast, then the test.
read -r -d '' BODY <<'EOS'
if [[ "${GMP_NETNS:-0}" == 1 ]]; then
    ip link set lo up && ip link set lo multicast on \
        && { ip route add 224.0.0.0/4 dev lo 2>/dev/null || true; } \
        || { echo "test_ros: could not set up loopback multicast"; exit 1; }
fi
set +u
. "$GMP_ROS_CACHE/env.sh"
. "$GMP_ROS_CACHE/ws/install/setup.bash"
set -u
# The whole e2e run (about 300 checks, each `ros2 param` call some 4 s) within 12 minutes.
exec timeout 900 python3 "$GMP_ROOT/test/ros/test_node.py"
EOS

OUT=$LOG_DIR/test_node.out
if unshare -n true 2>/dev/null; then
    GMP_NETNS=1 unshare -n bash -c "$BODY" 2>&1 | tee "$OUT"
else
    echo "test_ros: warning: cannot create a network namespace; using localhost-only discovery"
    ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST GMP_NETNS=0 bash -c "$BODY" 2>&1 | tee "$OUT"
fi
RC=${PIPESTATUS[0]}
echo "test_ros: finished in $(( $(date +%s) - T0 ))s (exit code $RC; logs: $LOG_DIR)"
# The count line comes last; a test that crashed before counting counts as one failure.
COUNT=$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$OUT" | tail -1)
if [[ -z "$COUNT" ]]; then
    COUNT="0 passed, 1 failed"
    RC=1
elif [[ $RC -eq 0 && ! "$COUNT" =~ \ 0\ failed$ ]]; then
    RC=1
fi
echo "$COUNT"
exit $RC
