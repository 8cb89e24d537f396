#!/usr/bin/env python3
"""Integration test of planner_node over real DDS.

Run by scripts/test_ros.sh inside a private network namespace (see there). Starts the
node through launch/planner.launch.py with `ros2 launch`, then checks from outside:
the node is discovered, ~/plan answers (first without a loadable robot, then with the
bundled one after `urdf_path` is cleared), ~/trajectory, ~/obstacles and ~/scene work,
the Trigger services answer, parameters can be read and set with the ros2 CLI (and bad
values are refused), and SIGINT stops everything cleanly. Prints one PASS/FAIL line per check and, last, `N passed, M failed`.

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
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState
from std_srvs.srv import Trigger
from trajectory_msgs.msg import JointTrajectory
from visualization_msgs.msg import Marker, MarkerArray

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


ARM = ['shoulder_pan_joint', 'shoulder_lift_joint', 'elbow_joint',
       'wrist_1_joint', 'wrist_2_joint', 'wrist_3_joint']
START = [-2.8, 0.3, 0.8, 0.0, 0.0, 0.0]
GOAL = [-1.2, 0.3, 0.8, 0.0, 0.0, 0.0]


def run_checks(node, launch):
    plan = node.create_client(PlanPath, f'/{NODE}/plan')
    ready = plan.wait_for_service(timeout_sec=30.0)
    if not check('~/plan service appears (node up from the launch file)', ready,
                 f'launch running: {launch.poll() is None}'):
        return

    # The launch names a URDF that does not exist: the node stays up and says why.
    req = PlanPath.Request()
    req.start_state = joint_state(ARM, START)
    req.goal_state = joint_state(ARM, GOAL)
    res = call(node, plan, req)
    check('~/plan without a loadable robot: FAILURE naming the URDF',
          res is not None and not res.success
          and res.error_code == PlanPath.Response.FAILURE
          and 'no robot loaded' in res.message and '/nonexistent/for_test.urdf' in res.message,
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

    # Clearing urdf_path loads the bundled robot.
    rc, out = ros2_param('set', NODE, 'urdf_path', '')
    check('ros2 param set urdf_path ""', rc == 0 and 'successful' in out.lower(), out)
    trajectories = []
    node.create_subscription(JointTrajectory, f'/{NODE}/trajectory',
                             trajectories.append, 10)
    deadline = time.time() + 20.0
    res = None
    while time.time() < deadline:
        res = call(node, plan, req, timeout=30.0)
        if res is not None and res.success:
            break
        time.sleep(0.5)
    check('~/plan plans on the bundled robot once urdf_path is cleared',
          res is not None and res.success and res.error_code == PlanPath.Response.SUCCESS
          and list(res.trajectory.joint_names) == ARM and len(res.trajectory.points) >= 2,
          res and f'code={res.error_code} message={res.message!r}')
    if res is not None and res.success:
        last = res.trajectory.points[-1]
        check('the trajectory ends at the goal and takes time',
              all(abs(a - b) < 1e-6 for a, b in zip(last.positions, GOAL))
              and (last.time_from_start.sec > 0 or last.time_from_start.nanosec > 0),
              f'{list(last.positions)} at {last.time_from_start}')
        check('~/plan stats name the planner set at run time and the backend',
              res.stats.planner_id == 'rrt' and res.stats.backend == 'cpu',
              f'planner_id={res.stats.planner_id!r} backend={res.stats.backend!r}')
    deadline = time.time() + 5.0
    while not trajectories and time.time() < deadline:
        rclpy.spin_once(node, timeout_sec=0.2)
    check('~/trajectory publishes the planned trajectory', len(trajectories) > 0)

    # A goal missing a joint is refused with INVALID_GOAL_CONSTRAINTS naming it.
    bad = PlanPath.Request()
    bad.start_state = joint_state(ARM, START)
    bad.goal_state = joint_state(ARM[:5], GOAL[:5])
    res = call(node, plan, bad)
    check('~/plan refuses an incomplete goal with INVALID_GOAL_CONSTRAINTS',
          res is not None and not res.success
          and res.error_code == PlanPath.Response.INVALID_GOAL_CONSTRAINTS
          and 'wrist_3_joint' in res.message,
          res and f'code={res.error_code} message={res.message!r}')

    # ~/obstacles: a cube marker becomes an obstacle shown on ~/scene.
    scenes = []
    qos = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL,
                     reliability=ReliabilityPolicy.RELIABLE)
    node.create_subscription(MarkerArray, f'/{NODE}/scene', scenes.append, qos)
    obstacles = node.create_publisher(MarkerArray, f'/{NODE}/obstacles', 10)
    cube = Marker()
    cube.header.frame_id = 'world'
    cube.ns = 'test'
    cube.id = 1
    cube.type = Marker.CUBE
    cube.action = Marker.ADD
    cube.pose.position.x, cube.pose.position.y, cube.pose.position.z = -1.0, -1.0, 0.3
    cube.pose.orientation.w = 1.0
    cube.scale.x = cube.scale.y = cube.scale.z = 0.1
    deadline = time.time() + 10.0
    shown = False
    while time.time() < deadline and not shown:
        obstacles.publish(MarkerArray(markers=[cube]))
        rclpy.spin_once(node, timeout_sec=0.3)
        shown = any(m.ns == 'test/1' for s in scenes for m in s.markers)
    check('a cube on ~/obstacles appears on ~/scene', shown, f'{len(scenes)} scene messages')

    # joint_states: an empty start state is filled from the latest message.
    pub = node.create_publisher(JointState, 'joint_states', 10)
    empty_start = PlanPath.Request()
    empty_start.goal_state = joint_state(ARM, GOAL)
    deadline = time.time() + 20.0
    res = None
    while time.time() < deadline:
        pub.publish(joint_state(ARM, START))
        rclpy.spin_once(node, timeout_sec=0.2)
        res = call(node, plan, empty_start, timeout=30.0)
        if res is not None and res.success:
            break
    check('~/plan with an empty start state uses joint_states',
          res is not None and res.success,
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
