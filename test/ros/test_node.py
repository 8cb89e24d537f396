#!/usr/bin/env python3
"""Integration test of planner_node over real DDS.

Run by scripts/test_ros.sh inside a private network namespace (see there). Starts the
node through launch/planner.launch.py with `ros2 launch`, then checks from outside:
the node is discovered, ~/plan and the Trigger services answer, parameters can be read
and set with the ros2 CLI (and bad values are refused), and SIGINT stops everything
cleanly. Prints one PASS/FAIL line per check and, last, `N passed, M failed`.

Environment: ROS set up (env.sh + the workspace's install/setup.bash), GMP_TEST_LOG_DIR
(where the launch output goes; default: a temporary folder), GMP_ROS2 (the `ros2`
command to use; default: ros2 on PATH).
"""

import os
import signal
import subprocess
import sys
import tempfile
import time

import rclpy
from rclpy.node import Node

from gpu_motion_planner_interfaces.srv import PlanPath
from sensor_msgs.msg import JointState
from std_srvs.srv import Trigger

NODE = 'planner_node'
ROS2 = os.environ.get('GMP_ROS2') or 'ros2'
LOG_DIR = os.environ.get('GMP_TEST_LOG_DIR') or tempfile.mkdtemp(prefix='gmp_ros_test_')
RESULTS = []


def check(name, ok, detail=''):
    RESULTS.append(bool(ok))
    print(f"{'PASS' if ok else 'FAIL'}: {name}{' -- ' + detail if detail else ''}", flush=True)
    return ok


def ros2(*args, timeout=30):
    """Runs the ros2 CLI; returns (exit code, stdout + stderr)."""
    try:
        p = subprocess.run([ROS2, *args], capture_output=True, text=True, timeout=timeout)
        return p.returncode, (p.stdout + p.stderr).strip()
    except subprocess.TimeoutExpired as e:
        return -1, f'timed out after {timeout}s: {e.stdout or ""}{e.stderr or ""}'


def ros2_param(*args):
    """`ros2 param ...` without the daemon, retried while discovery has not yet found
    the node (the CLI creates a fresh node each time)."""
    deadline = time.time() + 20.0
    while True:
        rc, out = ros2('param', *args, '--no-daemon', '--spin-time', '2')
        if 'Node not found' not in out or time.time() > deadline:
            return rc, out


def call(node, client, request, timeout=10.0):
    future = client.call_async(request)
    rclpy.spin_until_future_complete(node, future, timeout_sec=timeout)
    return future.result() if future.done() else None


def joint_state(names, positions):
    js = JointState()
    js.name = list(names)
    js.position = [float(x) for x in positions]
    return js


def main():
    launch_log_path = os.path.join(LOG_DIR, 'launch.log')
    launch_log = open(launch_log_path, 'w')
    # start_new_session: SIGINT from a terminal must not reach the launch early.
    launch = subprocess.Popen(
        [ROS2, 'launch', 'gpu_motion_planner', 'planner.launch.py',
         'urdf_path:=/nonexistent/for_test.urdf'],
        stdout=launch_log, stderr=subprocess.STDOUT, start_new_session=True)
    rclpy.init()
    node = Node('gmp_test_client')
    try:
        run_checks(node, launch)
    finally:
        node.destroy_node()
        rclpy.shutdown()
        if launch.poll() is None:
            os.killpg(launch.pid, signal.SIGINT)
            try:
                launch.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(launch.pid, signal.SIGKILL)
                launch.wait()
        launch_log.close()
    with open(launch_log_path) as f:
        launch_output = f.read()
    check('node shut down on SIGINT and logged it',
          'SIGINT: shutting down' in launch_output and 'stopped' in launch_output,
          f'see {launch_log_path}')
    check('planner_node exited with code 0 ("process has finished cleanly")',
          'process has finished cleanly' in launch_output, f'see {launch_log_path}')
    check('launch exited with code 0', launch.returncode == 0, f'code {launch.returncode}')
    if not all(RESULTS):
        print(f'----- {launch_log_path} -----\n{launch_output}\n-----', flush=True)
    passed = sum(RESULTS)
    print(f'{passed} passed, {len(RESULTS) - passed} failed', flush=True)
    return 0 if all(RESULTS) else 1


def run_checks(node, launch):
    plan = node.create_client(PlanPath, f'/{NODE}/plan')
    ready = plan.wait_for_service(timeout_sec=30.0)
    if not check('~/plan service appears (node up from the launch file)', ready,
                 f'launch running: {launch.poll() is None}'):
        return

    # ~/plan with an explicit start state: well formed, so the stub answer.
    req = PlanPath.Request()
    req.start_state = joint_state(['j1', 'j2'], [0.0, 0.0])
    req.goal_state = joint_state(['j1', 'j2'], [0.5, -0.5])
    res = call(node, plan, req)
    check('~/plan answers', res is not None)
    if res is not None:
        check('~/plan stub answer: success=false, "planner not wired yet"',
              (not res.success) and res.message == 'planner not wired yet'
              and res.error_code == PlanPath.Response.FAILURE,
              f'success={res.success} code={res.error_code} message={res.message!r}')
        check('~/plan stats name the default planner and backend',
              res.stats.planner_id == 'rrt_connect' and res.stats.backend == 'cpu',
              f'planner_id={res.stats.planner_id!r} backend={res.stats.backend!r}')

    # A malformed request gets an error code, and the node stays up.
    bad = PlanPath.Request()
    bad.start_state = joint_state(['j1'], [0.0])
    bad.goal_state = joint_state(['j1', 'j2'], [1.0])
    res = call(node, plan, bad)
    check('~/plan refuses a malformed goal with INVALID_GOAL_CONSTRAINTS',
          res is not None and not res.success
          and res.error_code == PlanPath.Response.INVALID_GOAL_CONSTRAINTS,
          res and f'code={res.error_code} message={res.message!r}')

    for name in ('clear_roadmap', 'rebuild_roadmap'):
        client = node.create_client(Trigger, f'/{NODE}/{name}')
        ok = client.wait_for_service(timeout_sec=10.0)
        res = call(node, client, Trigger.Request()) if ok else None
        check(f'~/{name} answers', res is not None, res and f'{res.success} {res.message!r}')

    # Parameters through the ros2 CLI.
    rc, out = ros2_param('get', NODE, 'planner')
    check('ros2 param get planner == rrt_connect (from config/planner.yaml)',
          rc == 0 and 'rrt_connect' in out, out)
    rc, out = ros2_param('get', NODE, 'urdf_path')
    check('launch argument urdf_path reaches the node',
          rc == 0 and '/nonexistent/for_test.urdf' in out, out)
    rc, out = ros2_param('set', NODE, 'planner', 'rrt')
    check('ros2 param set planner rrt', rc == 0 and 'successful' in out.lower(), out)
    rc, out = ros2_param('get', NODE, 'planner')
    check('ros2 param get planner == rrt', rc == 0 and out.endswith('rrt'), out)
    rc, out = ros2_param('set', NODE, 'planner', 'teleport')
    time.sleep(0.5)  # the node validates asynchronously, then restores the old value
    rc, out = ros2_param('get', NODE, 'planner')
    check('an invalid planner is refused (value stays rrt)', rc == 0 and out.endswith('rrt'), out)

    # The new default planner is used by ~/plan.
    res = call(node, plan, req)
    check('~/plan uses the planner set at run time',
          res is not None and res.stats.planner_id == 'rrt',
          res and f'planner_id={res.stats.planner_id!r}')

    # joint_states: an empty start state is filled from the latest message.
    pub = node.create_publisher(JointState, 'joint_states', 10)
    empty_start = PlanPath.Request()
    empty_start.goal_state = joint_state(['j1', 'j2'], [0.5, -0.5])
    deadline = time.time() + 10.0
    res = None
    while time.time() < deadline:
        pub.publish(joint_state(['j1', 'j2'], [0.1, 0.2]))
        rclpy.spin_once(node, timeout_sec=0.2)
        res = call(node, plan, empty_start)
        if res is not None and res.message == 'planner not wired yet':
            break
    check('~/plan with an empty start state uses joint_states',
          res is not None and res.message == 'planner not wired yet',
          res and f'code={res.error_code} message={res.message!r}')

    # Clean shutdown on Ctrl-C: the terminal sends SIGINT to the whole process group
    # (launch itself does not forward a SIGINT it received).
    os.killpg(launch.pid, signal.SIGINT)
    try:
        launch.wait(timeout=20)
    except subprocess.TimeoutExpired:
        pass
    check('SIGINT stops the launch within 20 s', launch.poll() is not None)


if __name__ == '__main__':
    sys.exit(main())
