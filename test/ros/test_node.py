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

import copy
import glob
import math
import os
import re
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import threading
import time

import rclpy
from rclpy.node import Node

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import independent_check as ic  # noqa: E402

from control_msgs.action import FollowJointTrajectory, GripperCommand
from geometry_msgs.msg import Point, Pose, PoseStamped, TransformStamped
from action_msgs.msg import GoalStatus
from gpu_motion_planner_interfaces.action import Move
from gpu_motion_planner_interfaces.msg import (GoalSet, JointConstraint, MotionSequenceItem,
                                               OrientationConstraint, PositionConstraint)
from gpu_motion_planner_interfaces.srv import (AllowCollisions, AttachObject, CheckState, CheckTrajectory,
                                              ComputeFk, ComputeIk, DetachObject,
                                              ExecuteTrajectory, LoadScene, PlanAgents,
                                              PlanBatch, PlanCartesian, PlanPath, PlanSequence,
                                              SaveScene)
from nav_msgs.msg import OccupancyGrid
from rclpy.action import ActionClient, ActionServer, CancelResponse, GoalResponse
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.duration import Duration
from rclpy.executors import MultiThreadedExecutor
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState, PointCloud2, PointField
from std_msgs.msg import String
from std_srvs.srv import Trigger
from tf2_msgs.msg import TFMessage
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint
from visualization_msgs.msg import (InteractiveMarkerFeedback, InteractiveMarkerUpdate, Marker,
                                   MarkerArray)
from visualization_msgs.srv import GetInteractiveMarkers

NODE = 'planner_node'
# The launch points the node's FollowJointTrajectory client here (controller_action:=...).
CONTROLLER_ACTION = '/fake_arm_controller/follow_joint_trajectory'
ROS2 = os.environ.get('GMP_ROS2') or 'ros2'
LOG_DIR = os.environ.get('GMP_TEST_LOG_DIR') or tempfile.mkdtemp(prefix='gmp_ros_test_')
RESULTS = []
ROOT = os.environ.get('GMP_ROOT') or os.path.abspath(
    os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..'))
ROBOT = ic.Robot(os.path.join(ROOT, 'urdf', 'gmp_arm.urdf'))
SCENE = ic.load_scene(os.path.join(ROOT, 'config', 'default_scene.yaml'))


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


def set_then_refuse(name, good, bad):
    """Sets integer parameter `name` to `good` (accepted), then to `bad`, which the node
    refuses after the fact: `ros2 param get` must still show `good`."""
    rc, out = ros2_param('set', NODE, name, good)
    check(f'ros2 param set {name} {good}', rc == 0 and 'successful' in out.lower(), out)
    ros2_param('set', NODE, name, bad)
    time.sleep(0.5)  # the node validates asynchronously, then restores the old value
    rc, out = ros2_param('get', NODE, name)
    check(f'{name} {bad} is refused (value stays {good})', rc == 0 and out.endswith(' ' + good), out)


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


def node_own_log(launch_output):
    """Text of planner_node's own rcl log file ($ROS_LOG_DIR/planner_node_<pid>_*.log),
    written by the node itself, so it does not depend on launch relaying its output."""
    m = re.search(r'\[planner_node-1\]: process started with pid \[(\d+)\]', launch_output)
    log_dir = os.environ.get('ROS_LOG_DIR')
    if not m or not log_dir:
        return ''
    texts = []
    for path in sorted(glob.glob(os.path.join(log_dir, f'planner_node_{m.group(1)}_*.log'))):
        with open(path, errors='replace') as f:
            texts.append(f.read())
    return ''.join(texts)


def stop_launch(launch):
    """Ctrl-C as a terminal sends it: SIGINT to the launch's whole process group. Returns
    True when the launch exited within 20 s. A launch still running then is asked for its
    threads' stacks (SIGUSR1, see scripts/ros2) into its log, then stopped by SIGTERM (its
    own terminate path) and, 10 s later, SIGKILL to the group."""
    os.killpg(launch.pid, signal.SIGINT)
    try:
        launch.wait(timeout=20)
        return True
    except subprocess.TimeoutExpired:
        pass
    for sig, wait in ((signal.SIGUSR1, 1), (signal.SIGTERM, 10)):
        try:
            os.kill(launch.pid, sig)
            launch.wait(timeout=wait)
            return False
        except (ProcessLookupError, subprocess.TimeoutExpired):
            pass
    os.killpg(launch.pid, signal.SIGKILL)
    launch.wait()
    return False


def main():
    launch_log_path = os.path.join(LOG_DIR, 'launch.log')
    launch_log = open(launch_log_path, 'w')
    # start_new_session: SIGINT from a terminal must not reach the launch early.
    launch = subprocess.Popen(
        [ROS2, 'launch', 'gpu_motion_planner', 'planner.launch.py',
         'urdf_path:=/nonexistent/for_test.urdf', f'controller_action:={CONTROLLER_ACTION}'],
        stdout=launch_log, stderr=subprocess.STDOUT, start_new_session=True)
    rclpy.init()
    node = Node('gmp_test_client')
    try:
        run_checks(node, launch)
    finally:
        node.destroy_node()
        rclpy.shutdown()
        stopped_in_time = launch.poll() is not None or stop_launch(launch)
        launch_log.close()
    with open(launch_log_path) as f:
        launch_output = f.read()
    own_log = node_own_log(launch_output)
    node_stopped = ('SIGINT: shutting down' in own_log
                    and re.search(r'\]: stopped\s*$', own_log, re.M) is not None)
    check('node shut down on SIGINT and logged it (its own log file)', node_stopped,
          f'see {os.environ.get("ROS_LOG_DIR")}/planner_node_<pid>_*.log')
    node_clean = 'process has finished cleanly' in launch_output
    check('planner_node exited with code 0 ("process has finished cleanly")', node_clean,
          f'see {launch_log_path}')
    # Two failures of ros2 launch itself (launch_service.py, Jazzy) after a SIGINT, each
    # seen once in CI and never on the dev box (80 + 40 start-then-SIGINT cycles):
    # - it returns 1: its run loop cancels a `_process_one_event` task that never started,
    #   the task is collected while pending, and the loop's exception handler sets code 1;
    # - it does not exit within 20 s although its node had finished cleanly (compare
    #   launch_ros#199 and launch#473, "Shutdown hangs on SIGINT").
    # Each is tolerated only with our node stopped cleanly by its own log and by launch's;
    # the check's line names it, and a hung launch's thread stacks are printed below.
    node_ok = node_stopped and node_clean
    race = (launch.returncode == 1 and 'Task was destroyed but it is pending' in launch_output
            and '_process_one_event' in launch_output)
    upstream = ''
    if node_ok and not stopped_in_time:
        upstream = ' (launch hung after its node stopped cleanly: upstream; stacks in the log)'
    elif node_ok and race:
        upstream = " (launch's own asyncio shutdown race, node clean)"
    check('SIGINT stops the launch within 20 s with exit code 0 (or a named upstream failure)',
          (stopped_in_time and launch.returncode == 0) or bool(upstream),
          f'code {launch.returncode}{upstream}')
    if upstream or not all(RESULTS):
        tail = '\n'.join(launch_output.splitlines()[-80:])
        print(f'----- last 80 lines of {launch_log_path} -----\n{tail}\n-----', flush=True)
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
        check('~/plan stats name the planner set at run time and the backend, no device time',
              res.stats.planner_id == 'rrt' and res.stats.backend == 'cpu'
              and res.stats.device_time == 0.0,
              f'planner_id={res.stats.planner_id!r} backend={res.stats.backend!r} '
              f'device_time={res.stats.device_time!r}')
    deadline = time.time() + 5.0
    while not trajectories and time.time() < deadline:
        rclpy.spin_once(node, timeout_sec=0.2)
    check('~/trajectory publishes the planned trajectory', len(trajectories) > 0)
    if res is not None and res.success:
        check_trajectory(res.trajectory, SCENE, 'rrt plan')

    # The device planner's escalation parameters: read from config/planner.yaml, settable,
    # an out-of-range value refused (the value stays).
    rc, out = ros2_param('get', NODE, 'device_escalate_after')
    check('ros2 param get device_escalate_after == 32 (from config/planner.yaml)',
          rc == 0 and out.endswith('32'), out)
    set_then_refuse('device_extra_attempts', '0', '-5')

    # Parallel attempts: 4 at once; an out-of-range count is refused.
    set_then_refuse('planning_attempts', '4', '0')
    res = call(node, plan, req, timeout=30.0)
    check('~/plan with 4 parallel attempts plans',
          res is not None and res.success and res.error_code == PlanPath.Response.SUCCESS,
          res and f'code={res.error_code} message={res.message!r}')
    if res is not None and res.success:
        check_trajectory(res.trajectory, SCENE, 'rrt plan, 4 attempts')
    req.num_planning_attempts = 300
    res = call(node, plan, req, timeout=30.0)
    check('~/plan refuses num_planning_attempts 300, naming it',
          res is not None and not res.success and res.error_code == PlanPath.Response.FAILURE
          and 'num_planning_attempts' in res.message,
          res and f'code={res.error_code} message={res.message!r}')
    req.num_planning_attempts = 2
    res = call(node, plan, req, timeout=30.0)
    check('~/plan with num_planning_attempts 2 plans',
          res is not None and res.success, res and f'code={res.error_code} message={res.message!r}')
    req.num_planning_attempts = 0

    # The robot geometry. Fitted spheres cover the bundled base from outside and reach into
    # the table 5 mm below it, so the start is refused as in collision; 'spheres' without a
    # _spherized URDF cannot load, and the node keeps the robot it has; back on the polytopes
    # it plans.
    def plan_until(predicate, timeout=30.0):
        deadline = time.time() + timeout
        res = None
        while time.time() < deadline:
            res = call(node, plan, req, timeout=30.0)
            if res is not None and predicate(res):
                break
            time.sleep(0.5)
        return res

    rc, out = ros2_param('set', NODE, 'collision_shapes', 'fitted')
    check('ros2 param set collision_shapes fitted', rc == 0 and 'successful' in out.lower(), out)
    res = plan_until(lambda r: r.error_code == PlanPath.Response.START_STATE_IN_COLLISION)
    check('~/plan with fitted spheres: the padded base touches the table (START_STATE_IN_COLLISION)',
          res is not None and not res.success
          and res.error_code == PlanPath.Response.START_STATE_IN_COLLISION,
          res and f'code={res.error_code} message={res.message!r}')
    rc, out = ros2_param('set', NODE, 'collision_shapes', 'spheres')
    time.sleep(1.0)
    res = call(node, plan, req, timeout=30.0)
    check('collision_shapes spheres without a file keeps the robot loaded before (fitted)',
          res is not None and res.error_code == PlanPath.Response.START_STATE_IN_COLLISION,
          res and f'code={res.error_code} message={res.message!r}')
    rc, out = ros2_param('set', NODE, 'collision_shapes', 'boxes')
    time.sleep(0.5)
    rc, out = ros2_param('get', NODE, 'collision_shapes')
    check('an unknown collision_shapes is refused (value stays spheres)',
          rc == 0 and out.endswith('spheres'), out)
    rc, out = ros2_param('set', NODE, 'collision_shapes', 'polytopes')
    res = plan_until(lambda r: r.success)
    check('~/plan plans again with collision_shapes polytopes',
          res is not None and res.success, res and f'code={res.error_code} message={res.message!r}')
    if res is not None and res.success:
        joint_limits_checks(plan_until, res)

    # RRT-Connect on the GPU: plans where the node has one, else a clear error naming it.
    rc, out = ros2_param('set', NODE, 'plan_on_device', 'true')
    check('ros2 param set plan_on_device true', rc == 0 and 'successful' in out.lower(), out)
    saved_planner = req.planner_id
    req.planner_id = 'rrt_connect'
    res = call(node, plan, req, timeout=30.0)
    check('~/plan with plan_on_device plans on a GPU or names on_device without one',
          res is not None and (res.success or 'on_device' in res.message),
          res and f'code={res.error_code} message={res.message!r}')
    rc, out = ros2_param('set', NODE, 'plan_on_device', 'false')
    check('ros2 param set plan_on_device false', rc == 0 and 'successful' in out.lower(), out)
    res = call(node, plan, req, timeout=30.0)
    check('~/plan with rrt_connect on the host plans', res is not None and res.success,
          res and f'code={res.error_code} message={res.message!r}')
    req.planner_id = saved_planner

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

    obstacle_checks(node, plan, obstacles, scenes)
    bad_input_checks(node, plan, obstacles)
    batch_checks(node, plan)
    named_state_checks(node, plan)
    pose_checks(node, plan)
    path_constraint_checks(node, plan)
    goal_region_checks(node, plan)
    cartesian_checks(node, obstacles, scenes)
    speed_limit_checks(node, plan)
    pilz_checks(node, plan)
    sequence_checks(node)
    attach_checks(node, plan, obstacles, scenes)
    scene_file_checks(node, scenes)
    allowed_collision_checks(node, plan, scenes)
    goal_marker_checks(node)
    state_checks(node, plan, obstacles, scenes)
    mesh_marker_checks(node, plan, obstacles, scenes)
    cloud_checks(node, plan, scenes)
    tf_checks(node, obstacles, scenes)
    kinematics_checks(node)
    agents_checks(node)
    description_topic_checks(node, plan)
    moveit_config_checks(node)
    # Last: its mock controllers publish joint_states, which the node under test hears too.
    multi_controller_checks(node)

    # Clean shutdown on Ctrl-C (the terminal sends SIGINT to the whole process group;
    # launch itself does not forward a SIGINT it received) is checked by main().


def tool_peak_speed(traj, dt=1e-3):
    """The tool's highest speed (m/s) along a JointTrajectory as a controller's cubic follows
    its points, by the independent forward kinematics (positions dt seconds apart)."""
    names = list(traj.joint_names)
    pts = [(p.time_from_start.sec + 1e-9 * p.time_from_start.nanosec, list(p.positions),
            list(p.velocities)) for p in traj.points]
    tool = []
    for (ta, qa, va), (tb, qb, vb) in zip(pts, pts[1:]):
        h = tb - ta
        steps = max(1, int(math.ceil(h / dt)))
        for k in range(steps):
            u = k / steps
            u2, u3 = u * u, u * u * u
            q = [(2 * u3 - 3 * u2 + 1) * a + (u3 - 2 * u2 + u) * h * da + (-2 * u3 + 3 * u2) * b
                 + (u3 - u2) * h * db for a, b, da, db in zip(qa, qb, va, vb)]
            tool.append((ta + u * h, ROBOT.link_poses(names, q)['tool0'][1]))
    tool.append((pts[-1][0], ROBOT.link_poses(names, pts[-1][1])['tool0'][1]))
    return max((math.dist(p, q) / (t2 - t1) for (t1, p), (t2, q) in zip(tool, tool[1:])
                if t2 > t1), default=0.0)


def speed_limit_checks(node, plan):
    """max_cartesian_speed: ~/plan's path timed again with its too-fast segments slowed until
    the tool moves no faster (by the independent kinematics), quicker than stretching every
    time; ~/plan_cartesian's moved link too; a negative speed and an unknown link refused by
    name."""
    req = PlanPath.Request()
    req.start_state = joint_state(ARM, START)
    req.goal_state = joint_state(ARM, GOAL)
    req.planner_id = 'rrt_connect'
    req.seed = 5
    free = call(node, plan, req, timeout=30.0)
    if not check('~/plan START to GOAL for the speed limit checks', free is not None
                 and free.success, free and free.message):
        return
    free_peak = tool_peak_speed(free.trajectory)
    req.max_cartesian_speed = round(free_peak / 3.0, 4)
    slow = call(node, plan, req, timeout=30.0)
    ok = slow is not None and slow.success
    peak = tool_peak_speed(slow.trajectory) if ok else None
    ends = ok and [list(slow.trajectory.points[i].positions) for i in (0, -1)] == [
        list(free.trajectory.points[i].positions) for i in (0, -1)]
    # Stretching every time would take 3 times as long; the retimed path keeps its joint
    # accelerations and takes less.
    ratio = duration(slow.trajectory) / duration(free.trajectory) if ok else None
    check('max_cartesian_speed slows ~/plan where the tool is too fast until it moves no faster '
          '(independent kinematics), quicker than stretching every time',
          ok and ends and peak <= req.max_cartesian_speed * 1.001
          and 'slowed where too fast' in slow.message and 1.2 < ratio < 3.0,
          slow and f'{slow.message!r}; peak {peak} m/s against {req.max_cartesian_speed} '
          f'(free {free_peak:.3f}); duration ratio {ratio}; same ends {ends}')
    for link, speed, want in [('tool0', -1.0, 'max_cartesian_speed'),
                              ('no_such_link', 0.1, "'no_such_link'")]:
        req.cartesian_speed_limited_link, req.max_cartesian_speed = link, speed
        bad = call(node, plan, req, timeout=30.0)
        check(f'a speed limit with {link!r} at {speed} m/s is refused by name',
              bad is not None and not bad.success and want in bad.message,
              bad and bad.message)
    client = node.create_client(PlanCartesian, f'/{NODE}/plan_cartesian')
    if not client.wait_for_service(timeout_sec=10.0):
        return
    r0, t0 = ROBOT.link_poses(ARM, START)['tool0']
    line = PlanCartesian.Request()
    line.header.frame_id = 'world'
    line.start_state = joint_state(ARM, START)
    w = Pose()
    w.position.x, w.position.y, w.position.z = t0[0], t0[1], t0[2] - 0.1
    (w.orientation.x, w.orientation.y, w.orientation.z,
     w.orientation.w) = quaternion_of(r0)
    line.waypoints = [w]
    line.max_cartesian_speed = 0.02
    res = call(node, client, line, timeout=60.0)
    ok = res is not None and res.success and res.fraction == 1.0
    peak = tool_peak_speed(res.trajectory) if ok else None
    check('max_cartesian_speed of ~/plan_cartesian: 10 cm at most 2 cm/s takes 5 s or more',
          ok and peak <= 0.02 * 1.001 and duration(res.trajectory) >= 5.0,
          res and f'{res.message!r}; peak {peak} m/s')


def pilz_checks(node, plan):
    """planner_id PTP: the straight joint motion; LIN: the tool along a straight line (by the
    independent kinematics) into the joint goal."""
    start = [-2.8, 0.3, 0.8, 0.3, 0.5, 0.2]
    goal = [-2.6, 0.4, 0.9, 0.3, 0.5, 0.2]
    for planner in ('PTP', 'LIN'):
        req = PlanPath.Request()
        req.start_state = joint_state(ARM, start)
        req.goal_state = joint_state(ARM, goal)
        req.planner_id = planner
        res = call(node, plan, req, timeout=30.0)
        ok = res is not None and res.success
        pts = [list(p.positions) for p in res.trajectory.points] if ok else []
        ends = ok and max(abs(a - b) for a, b in zip(pts[-1], goal)) < 1e-9
        a = ROBOT.link_poses(ARM, start)['tool0'][1]
        b = ROBOT.link_poses(ARM, goal)['tool0'][1]
        d = [y - x for x, y in zip(a, b)]
        n = math.sqrt(sum(x * x for x in d))
        off = 0.0
        for q in pts:
            p = [y - x for x, y in zip(a, ROBOT.link_poses(ARM, q)['tool0'][1])]
            along = sum(x * y for x, y in zip(p, d)) / n
            off = max(off, math.sqrt(max(0.0, sum(x * x for x in p) - along * along)))
        straight = off < 2e-3 if planner == 'LIN' else True
        check(f'planner_id {planner}: planned by {planner.lower()}, ending in the goal'
              + (', the tool on the straight line (independent kinematics)'
                 if planner == 'LIN' else ''),
              ok and ends and straight and f'by {planner.lower()}' in res.message,
              res and f'{res.message!r}; tool off the line {off:.5f} m')
    # CIRC through an interim point 2 cm beside the middle of the line, the point given as
    # MoveIt gives it: a position constraint of path constraints named 'interim'.
    a = ROBOT.link_poses(ARM, start)['tool0'][1]
    b = ROBOT.link_poses(ARM, goal)['tool0'][1]
    d = [y - x for x, y in zip(a, b)]
    side = [d[1], -d[0], 0.0] if abs(d[0]) + abs(d[1]) > 1e-6 else [1.0, 0.0, 0.0]
    k = 0.02 / math.sqrt(sum(x * x for x in side))
    m = [(x + y) / 2 + k * s for x, y, s in zip(a, b, side)]
    req = PlanPath.Request()
    req.start_state = joint_state(ARM, start)
    req.goal_state = joint_state(ARM, goal)
    req.planner_id = 'CIRC'
    req.path_constraints.name = 'interim'
    pc = PositionConstraint()
    pc.header.frame_id = 'world'
    pc.link_name = 'tool0'
    pc.region_pose.position.x, pc.region_pose.position.y, pc.region_pose.position.z = m
    pc.region_pose.orientation.w = 1.0
    req.path_constraints.position_constraints = [pc]
    res = call(node, plan, req, timeout=30.0)
    ok = res is not None and res.success
    pts = [list(p.positions) for p in res.trajectory.points] if ok else []
    # The circle through a, m and b: its centre solves |x - a| = |x - m| = |x - b| in their
    # plane (numpy-free: Cramer's rule on the plane's 3x3 system).
    u = [y - x for x, y in zip(a, m)]
    w = [y - x for x, y in zip(a, b)]
    n = [u[1] * w[2] - u[2] * w[1], u[2] * w[0] - u[0] * w[2], u[0] * w[1] - u[1] * w[0]]
    rows = [u, w, n]
    rhs = [sum(x * x for x in u) / 2, sum(x * x for x in w) / 2, 0.0]

    def det(r):
        return (r[0][0] * (r[1][1] * r[2][2] - r[1][2] * r[2][1])
                - r[0][1] * (r[1][0] * r[2][2] - r[1][2] * r[2][0])
                + r[0][2] * (r[1][0] * r[2][1] - r[1][1] * r[2][0]))
    full = det(rows)
    rel = [det([[rhs[i] if j == col else rows[i][j] for j in range(3)] for i in range(3)]) / full
           for col in range(3)]
    centre = [x + y for x, y in zip(a, rel)]
    radius = math.sqrt(sum(x * x for x in rel))
    off = 0.0
    for q in pts:
        p = ROBOT.link_poses(ARM, q)['tool0'][1]
        off = max(off, abs(math.sqrt(sum((x - y) ** 2 for x, y in zip(p, centre))) - radius))
    check('planner_id CIRC with an interim point (path_constraints named interim): the tool on '
          'the circle through start, interim point and goal (independent kinematics)',
          ok and 'by circ' in res.message and pts and off < 2e-3,
          res and f'{res.message!r}; off the circle by {off:.5f} m (radius {radius:.4f})')


def sequence_checks(node):
    """~/plan_sequence: PTP to a state, then LIN back to the start, joined into one
    trajectory whose times run on, each item's end at rest; a blend radius on the last motion
    is refused by name; a blended corner (blend_checks)."""
    client = node.create_client(PlanSequence, f'/{NODE}/plan_sequence')
    if not check('~/plan_sequence appears', client.wait_for_service(timeout_sec=10.0)):
        return
    start = [-2.8, 0.3, 0.8, 0.3, 0.5, 0.2]
    goal = [-2.6, 0.4, 0.9, 0.3, 0.5, 0.2]
    req = PlanSequence.Request()
    req.start_state = joint_state(ARM, start)
    there, back = MotionSequenceItem(), MotionSequenceItem()
    there.goal_state = joint_state(ARM, goal)
    there.planner_id = 'PTP'
    back.goal_state = joint_state(ARM, start)
    back.planner_id = 'LIN'
    req.items = [there, back]
    res = call(node, client, req, timeout=60.0)
    ok = res is not None and res.success
    pts = res.trajectory.points if ok else []
    times = [p.time_from_start.sec + 1e-9 * p.time_from_start.nanosec for p in pts]
    ends = list(res.item_ends) if ok else []
    at_rest = ok and len(ends) == 2 and all(
        all(v == 0.0 for v in pts[i].velocities) for i in ends)
    reached = ok and len(ends) == 2 and \
        max(abs(a - b) for a, b in zip(pts[ends[0]].positions, goal)) < 1e-9 and \
        max(abs(a - b) for a, b in zip(pts[-1].positions, start)) < 1e-9
    check('~/plan_sequence joins PTP there and LIN back into one trajectory, times running on, '
          'each motion ending at rest where the next begins',
          ok and reached and at_rest and all(b > a for a, b in zip(times, times[1:]))
          and 'ptp, lin' in res.message and len(res.stats) == 2,
          res and f'{res.message!r}; item ends {ends}')
    # A goal set on the first motion: its goal_state in collision, the goal among its
    # other_goal_states; it ends there, the LIN starts there, reached_goals says so.
    blocked = [0.0, 1.9, 0.0, 0.0, 0.0, 0.0]
    there_set = MotionSequenceItem()
    there_set.goal_state = joint_state(ARM, blocked)
    there_set.other_goal_states = [joint_state(ARM, goal)]
    there_set.planner_id = 'PTP'
    req.items = [there_set, back]
    res = call(node, client, req, timeout=60.0)
    ok = res is not None and res.success
    pts = res.trajectory.points if ok else []
    ends = list(res.item_ends) if ok else []
    reached = ok and len(ends) == 2 and \
        max(abs(a - b) for a, b in zip(pts[ends[0]].positions, goal)) < 1e-9 and \
        max(abs(a - b) for a, b in zip(pts[-1].positions, start)) < 1e-9
    bad = ic.first_collision(ROBOT, SCENE, res.trajectory) if ok else None
    check('~/plan_sequence with a goal set on a motion: it ends at the goal reached (its '
          'goal_state in collision), the next starts there, reached_goals names it',
          ok and reached and list(res.reached_goals) == [1, 0] and bad is None
          and 'item 0 ends at other_goal_states[0]' in res.message
          and ic.collision(ROBOT, SCENE, ARM, blocked) is not None,
          res and f'{res.message!r}; reached_goals {list(res.reached_goals)}; item ends {ends}; '
          f'independent {bad}')
    back.blend_radius = 0.05
    req.items = [there, back]
    res = call(node, client, req, timeout=30.0)
    check('~/plan_sequence refuses a blend radius on the last motion by name',
          res is not None and not res.success and 'item 1 (LIN): blend_radius' in res.message
          and 'last motion' in res.message,
          res and res.message)
    blend_checks(node, client)


def blend_checks(node, client):
    """~/plan_sequence with a 5 cm blend at the corner of a pan turn and an elbow fold (both
    PTP at half scaling): no stop at the corner, quicker than stopping there, the blend named
    in the message."""
    a = [-2.8, 0.3, 0.8, 0.3, 0.5, 0.2]
    b = [-2.0, 0.3, 0.8, 0.3, 0.5, 0.2]
    c = [-2.0, 0.9, 0.2, 0.3, 0.5, 0.2]

    def sequence(radius):
        req = PlanSequence.Request()
        req.start_state = joint_state(ARM, a)
        turn, fold = MotionSequenceItem(), MotionSequenceItem()
        for item, goal in ((turn, b), (fold, c)):
            item.goal_state = joint_state(ARM, goal)
            item.planner_id = 'PTP'
            item.max_velocity_scaling_factor = 0.5
            item.max_acceleration_scaling_factor = 0.5
        turn.blend_radius = radius
        req.items = [turn, fold]
        return call(node, client, req, timeout=60.0)

    stopping, blended = sequence(0.0), sequence(0.05)
    ok = stopping is not None and stopping.success and blended is not None and blended.success
    moving = ok and len(blended.item_ends) == 2 and any(
        abs(v) > 1e-3 for v in blended.trajectory.points[blended.item_ends[0]].velocities)
    check('~/plan_sequence blends a 5 cm corner: no stop there, quicker than stopping, named',
          ok and moving and duration(blended.trajectory) < duration(stopping.trajectory)
          and 'blended after item 0 within 0.05 m' in blended.message
          and max(abs(x - y) for x, y in zip(blended.trajectory.points[-1].positions, c))
          < 1e-9,
          blended and f'{blended.message!r}; stopping '
          f'{duration(stopping.trajectory) if ok else None} s')


def duration(traj):
    t = traj.points[-1].time_from_start
    return t.sec + 1e-9 * t.nanosec


def joint_limits_checks(plan_until, plain):
    """joint_limits_path: the installed config/gmp_arm_joint_limits.yaml times the same
    path under its acceleration limits at its default scaling (0.5), since velocity_scaling
    and acceleration_scaling are 0 in config/planner.yaml; a file that cannot be read keeps the
    robot loaded before; clearing the parameter restores the URDF's limits."""
    from ament_index_python.packages import get_package_share_directory
    path = os.path.join(get_package_share_directory('gpu_motion_planner'), 'config',
                        'gmp_arm_joint_limits.yaml')
    check('config/gmp_arm_joint_limits.yaml is installed', os.path.isfile(path), path)
    velocity = [2.0, 2.0, 2.5, 3.0, 3.0, 3.0]      # the URDF's (and the file's)
    acceleration = [3.0, 3.0, 4.0, 6.0, 6.0, 6.0]  # the file's
    base = duration(plain.trajectory)
    rc, out = ros2_param('set', NODE, 'joint_limits_path', path)
    check('ros2 param set joint_limits_path', rc == 0 and 'successful' in out.lower(), out)
    res = plan_until(lambda r: r.success and duration(r.trajectory) > 1.3 * base)
    ok = res is not None and res.success
    check('~/plan with the joint limits file: slower (its default scaling 0.5)',
          ok and duration(res.trajectory) > 1.3 * base,
          res and f'{duration(res.trajectory) if ok else None} s against {base} s; '
          f'{res.message!r}')
    if ok:
        peak_v = max(abs(v) / (0.5 * velocity[j]) for p in res.trajectory.points
                     for j, v in enumerate(p.velocities))
        peak_a = max(abs(a) / (0.5 * acceleration[j]) for p in res.trajectory.points
                     for j, a in enumerate(p.accelerations))
        check('its velocities and accelerations stay within half the file\'s limits, '
              'the accelerations reaching them',
              peak_v <= 1 + 1e-6 and 0.99 < peak_a <= 1 + 1e-6,
              f'peak velocity ratio {peak_v}, peak acceleration ratio {peak_a}')
    if ok:
        jerk_checks(plan_until, path, res)
    rc, out = ros2_param('set', NODE, 'joint_limits_path', '/nonexistent/limits.yaml')
    time.sleep(1.0)
    res = plan_until(lambda r: r.success)
    check('an unreadable joint limits file keeps the limits loaded before',
          res is not None and res.success and duration(res.trajectory) > 1.3 * base,
          res and f'{res.message!r}')
    rc, out = ros2_param('set', NODE, 'joint_limits_path', '')
    res = plan_until(lambda r: r.success and abs(duration(r.trajectory) - base) < 1e-6)
    check('clearing joint_limits_path restores the URDF\'s limits (the first timing)',
          res is not None and res.success and abs(duration(res.trajectory) - base) < 1e-6,
          res and f'{duration(res.trajectory) if res.success else None} s against {base} s')


def jerk_checks(plan_until, path, limited):
    """The bundled joint limits file with a jerk limit on every joint: the same plan becomes
    jerk limited (the acceleration starts and ends at zero and changes between points by at
    most the jerk limit per second, at the limit somewhere) and takes longer than `limited`,
    the plan of the file without them."""
    jerk = [12.0, 12.0, 16.0, 24.0, 24.0, 24.0]
    with open(path) as f:
        text = f.read()
    for name, j in zip(ARM, jerk):
        text = text.replace(f'  {name}:\n',
                            f'  {name}:\n    has_jerk_limits: true\n    max_jerk: {j}\n')
    jerk_path = os.path.join(LOG_DIR, 'gmp_arm_joint_limits_jerk.yaml')
    with open(jerk_path, 'w') as f:
        f.write(text)
    base = duration(limited.trajectory)
    rc, out = ros2_param('set', NODE, 'joint_limits_path', jerk_path)
    check('ros2 param set joint_limits_path (with jerk limits)',
          rc == 0 and 'successful' in out.lower(), out)
    res = plan_until(lambda r: r.success and duration(r.trajectory) > base + 1e-6)
    ok = res is not None and res.success and duration(res.trajectory) > base + 1e-6
    points = res.trajectory.points if ok else []

    def seconds(p):
        return p.time_from_start.sec + 1e-9 * p.time_from_start.nanosec

    use = max((abs(b.accelerations[j] - a.accelerations[j])
               / (jerk[j] * (seconds(b) - seconds(a)))
               for a, b in zip(points, points[1:]) for j in range(len(ARM))), default=0.0)
    ends = [abs(x) for p in points[:1] + points[-1:] for x in p.accelerations]
    check('with jerk limits in the file the plan is jerk limited: acceleration from and to '
          'zero, changing by at most the jerk limit per second, and longer',
          ok and 0.9 < use <= 1 + 1e-6 and ends and max(ends) < 1e-9,
          res and f'{duration(res.trajectory) if ok else None} s against {base} s; jerk at '
          f'{use} of the limits; end accelerations up to {max(ends) if ends else None}')


def check_trajectory(traj, obstacles, what, allowed=frozenset()):
    """Limits, monotone time and an independent collision re-check of a trajectory (pairs
    (link, obstacle) in `allowed` may touch)."""
    names = list(traj.joint_names)
    limits = {'shoulder_pan_joint': 3.1, 'shoulder_lift_joint': 2.0, 'elbow_joint': 2.6,
              'wrist_1_joint': 3.1, 'wrist_2_joint': 2.1}
    times = [p.time_from_start.sec + 1e-9 * p.time_from_start.nanosec for p in traj.points]
    check(f'{what}: time_from_start strictly increases',
          all(b > a for a, b in zip(times, times[1:])), f'{len(times)} points')
    inside = all(abs(p.positions[names.index(j)]) <= lim + 1e-9
                 for p in traj.points for j, lim in limits.items())
    check(f'{what}: positions within the URDF limits', inside)
    hit = ic.first_collision(ROBOT, obstacles, traj, allowed=allowed)
    check(f'{what}: collision free by an independent re-check', hit is None,
          f'first hit {hit}' if hit else f'{len(traj.points)} points re-checked densely')
    return hit is None


def cube_marker(ns, mid, position, size, frame='world'):
    m = Marker()
    m.header.frame_id = frame
    m.ns, m.id = ns, mid
    m.type = Marker.CUBE
    m.action = Marker.ADD
    m.pose.position.x, m.pose.position.y, m.pose.position.z = position
    m.pose.orientation.w = 1.0
    m.scale.x = m.scale.y = m.scale.z = size
    return m


def wait_for(node, predicate, timeout):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if predicate():
            return True
        rclpy.spin_once(node, timeout_sec=0.2)
    return predicate()


def publish_until(node, publisher, msg, scenes, predicate, timeout):
    """Publishes `msg` about once a second until the latest ~/scene message satisfies
    `predicate`; whether it did within `timeout` s."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        publisher.publish(msg)
        if wait_for(node, lambda: scenes and predicate(scenes[-1]), 1.0):
            return True
    return False


def edge_colours(msg):
    """(green, red, grey) counts of the roadmap_edges marker of a ~/roadmap message."""
    counts = [0, 0, 0]
    for m in msg.markers:
        if m.ns != 'roadmap_edges':
            continue
        for c in m.colors[::2]:
            if c.g > 0.7 and c.r < 0.3:
                counts[0] += 1
            elif c.r > 0.8 and c.g < 0.3:
                counts[1] += 1
            else:
                counts[2] += 1
    return tuple(counts)


def obstacle_checks(node, plan, obstacles, scenes):
    """The persistent roadmap (`drm`): rebuild, ~/roadmap, an obstacle moved across the
    path and away again, ~/goal, clear."""
    roadmaps = []
    qos = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL,
                     reliability=ReliabilityPolicy.RELIABLE)
    node.create_subscription(MarkerArray, f'/{NODE}/roadmap', roadmaps.append, qos)
    rc, out = ros2_param('set', NODE, 'roadmap_size', '300')
    check('ros2 param set roadmap_size 300', rc == 0 and 'successful' in out.lower(), out)
    rebuild = node.create_client(Trigger, f'/{NODE}/rebuild_roadmap')
    res = call(node, rebuild, Trigger.Request(), timeout=120.0)
    check('~/rebuild_roadmap builds the roadmap of roadmap_size vertices',
          res is not None and res.success and 'roadmap of 300 vertices' in res.message,
          res and res.message)
    got = wait_for(node, lambda: roadmaps and edge_colours(roadmaps[-1])[0] > 0, 10.0)
    check('~/roadmap shows the roadmap edges coloured by label', got,
          f'green/red/grey = {edge_colours(roadmaps[-1]) if roadmaps else None}')

    req = PlanPath.Request()
    req.start_state = joint_state(ARM, START)
    req.goal_state = joint_state(ARM, GOAL)
    req.planner_id = 'drm'
    req.seed = 3
    first = call(node, plan, req, timeout=120.0)
    ok = check('~/plan with planner drm uses the persistent roadmap',
               first is not None and first.success and first.stats.planner_id == 'drm'
               and first.stats.roadmap_vertices == 300,
               first and f'code={first.error_code} message={first.message!r} '
               f'vertices={first.stats.roadmap_vertices}')
    if not ok:
        return
    check_trajectory(first.trajectory, SCENE, 'drm plan')
    got = wait_for(node, lambda: any(m.ns == 'solution_path' for m in roadmaps[-1].markers), 5.0)
    check('~/roadmap highlights the solution path', got)

    # Put a cube where the tool passes halfway along the path: the next plan avoids it.
    mid = first.trajectory.points[len(first.trajectory.points) // 2]
    tool = ROBOT.link_poses(ARM, list(mid.positions))['tool0'][1]
    blocker = cube_marker('blocker', 1, tool, 0.12)
    obstacle = ic.Obstacle('blocker/1', 'box', [0.06] * 3, tool)
    hit_before = ic.first_collision(ROBOT, [obstacle], first.trajectory)
    check('the cube placed on the path really blocks the old trajectory', hit_before is not None,
          f'tool at {[round(v, 3) for v in tool]}')
    before = len(roadmaps)
    obstacles.publish(MarkerArray(markers=[blocker]))
    shown = wait_for(node, lambda: any(m.ns == 'blocker/1' for s in scenes[-1:]
                                       for m in s.markers), 10.0)
    check('the blocking cube appears on ~/scene', shown)
    relabelled = wait_for(node, lambda: len(roadmaps) > before
                          and sum(edge_colours(roadmaps[-1])[1:]) > 0, 10.0)
    check('~/roadmap relabels edges near the new obstacle (red or grey)', relabelled,
          f'green/red/grey = {edge_colours(roadmaps[-1]) if roadmaps else None}')
    second = call(node, plan, req, timeout=120.0)
    if check('~/plan (drm) after the obstacle moved in succeeds',
             second is not None and second.success,
             second and f'code={second.error_code} message={second.message!r}'):
        check_trajectory(second.trajectory, SCENE + [obstacle], 'drm plan around the cube')
        # The node's path_tolerance (0.1) rounds the detour's corners: it never stops between
        # its ends.
        waypoints = int(second.message.split(' ')[0]) if second.message[:1].isdigit() else 0
        resting = [i for i, p in enumerate(second.trajectory.points[1:-1], 1)
                   if all(abs(v) < 1e-6 for v in p.velocities)]
        check('the detour passes its corners moving, the answer naming the corners rounded',
              waypoints > 2 and 'corners rounded' in second.message and not resting,
              f'{second.message!r}; points at rest inside: {resting[:5]}')

    # Move it away: the short path comes back.
    blocker.pose.position.x, blocker.pose.position.y, blocker.pose.position.z = 5.0, 5.0, 5.0
    obstacles.publish(MarkerArray(markers=[blocker]))
    wait_for(node, lambda: any(m.ns == 'blocker/1' and m.pose.position.x == 5.0
                               for s in scenes[-1:] for m in s.markers), 10.0)
    third = call(node, plan, req, timeout=120.0)
    check('moving the cube away restores the first path',
          third is not None and third.success
          and abs(third.stats.path_length_after - first.stats.path_length_after) < 1e-9,
          third and f'lengths {first.stats.path_length_after:.4f} -> '
          f'{second.stats.path_length_after if second else float("nan"):.4f} -> '
          f'{third.stats.path_length_after:.4f}')

    # ~/goal: plan from the current joint state and publish.
    trajectories = []
    node.create_subscription(JointTrajectory, f'/{NODE}/trajectory', trajectories.append, 10)
    goal_pub = node.create_publisher(JointState, f'/{NODE}/goal', 10)
    target = [-1.5, 0.2, 0.9, 0.0, 0.3, 0.0]
    wait_for(node, lambda: goal_pub.get_subscription_count() > 0, 5.0)
    goal_pub.publish(joint_state(ARM, target))
    got = wait_for(node, lambda: any(
        all(abs(a - b) < 1e-6 for a, b in zip(t.points[-1].positions, target))
        for t in trajectories if t.points), 60.0)
    check('a JointState on ~/goal is planned from the current state and published', got)

    clear = node.create_client(Trigger, f'/{NODE}/clear_roadmap')
    res = call(node, clear, Trigger.Request())
    check('~/clear_roadmap drops the roadmap', res is not None and res.success
          and res.message == 'roadmap cleared', res and res.message)
    got = wait_for(node, lambda: roadmaps and not any(
        m.ns == 'roadmap_edges' for m in roadmaps[-1].markers), 15.0)
    check('~/roadmap is empty after ~/clear_roadmap', got)


def bad_input_checks(node, plan, obstacles):
    """Bad goals and markers get clear errors; the node keeps serving."""
    def ask(goal_positions, names=ARM, group=''):
        req = PlanPath.Request()
        req.start_state = joint_state(ARM, START)
        req.goal_state = joint_state(names, goal_positions)
        req.group_name = group
        return call(node, plan, req, timeout=60.0)

    codes = PlanPath.Response
    cases = [
        ('a NaN goal', ask([float('nan')] + GOAL[1:]), codes.INVALID_GOAL_CONSTRAINTS, 'nan'),
        ('an out-of-limits goal', ask([GOAL[0], 2.5] + GOAL[2:]),
         codes.INVALID_GOAL_CONSTRAINTS, 'outside its limits'),
        ('an unknown goal joint', ask(GOAL + [0.0], ARM + ['no_such_joint']),
         codes.INVALID_GOAL_CONSTRAINTS, 'no_such_joint'),
        ('a goal in collision', ask([0.0, 1.9, 0.0, 0.0, 0.0, 0.0]),
         codes.GOAL_IN_COLLISION, 'goal'),
        ('an unknown planning group', ask(GOAL, group='no_such_group'),
         codes.INVALID_GROUP_NAME, 'no_such_group'),
    ]
    hit = ic.collision(ROBOT, SCENE, ARM, [0.0, 1.9, 0.0, 0.0, 0.0, 0.0])
    check('the collision goal of the test collides by the independent check', hit is not None,
          str(hit))
    for what, res, code, text in cases:
        check(f'~/plan refuses {what} with error code {code}',
              res is not None and not res.success and res.error_code == code
              and text in res.message.lower(),
              res and f'code={res.error_code} message={res.message!r}')

    arrow = cube_marker('bad', 1, (0.0, 0.0, 2.0), 0.1)
    arrow.type = Marker.ARROW
    wrong_frame = cube_marker('bad', 2, (0.0, 0.0, 2.0), 0.1, frame='elsewhere')
    obstacles.publish(MarkerArray(markers=[arrow, wrong_frame]))
    time.sleep(1.0)
    with open(os.path.join(LOG_DIR, 'launch.log')) as f:
        log = f.read()
    check('an unsupported marker type is logged, naming the marker',
          "marker 'bad/1': unsupported marker type" in log)
    check('a marker in a wrong frame is logged, naming the frame',
          "marker 'bad/2': frame 'elsewhere' is neither the planning frame 'world' nor a link"
          in log and 'no transform on /tf or /tf_static names it' in log)
    # A goal set: the goal in collision, GOAL among other_goal_states; the plan ends at GOAL,
    # reached_goal names it, the independent checker finds the trajectory free. A bad other
    # goal is refused naming its index.
    req = PlanPath.Request()
    req.start_state = joint_state(ARM, START)
    req.goal_state = joint_state(ARM, [0.0, 1.9, 0.0, 0.0, 0.0, 0.0])
    req.other_goal_states = [joint_state(ARM, GOAL)]
    res = call(node, plan, req, timeout=60.0)
    ends = res and res.trajectory.points and list(res.trajectory.points[-1].positions)
    bad = ic.first_collision(ROBOT, SCENE, res.trajectory) if res and res.success else None
    check('~/plan with other_goal_states, the goal in collision, ends at the other goal and '
          'names it',
          res is not None and res.success and res.reached_goal == 1
          and max(abs(a - b) for a, b in zip(ends, GOAL)) < 1e-9 and bad is None
          and 'ends at other_goal_states[0]' in res.message,
          res and f'reached_goal {res.reached_goal}; {res.message!r}; independent {bad}')
    req.other_goal_states = [joint_state(ARM + ['no_such_joint'], GOAL + [0.0])]
    res = call(node, plan, req, timeout=60.0)
    check('~/plan refuses a bad other goal naming its index',
          res is not None and not res.success
          and res.error_code == codes.INVALID_GOAL_CONSTRAINTS
          and 'other_goal_states[0]' in res.message and 'no_such_joint' in res.message,
          res and f'code={res.error_code} message={res.message!r}')

    res = ask(GOAL)
    check('after all the bad input the node still plans', res is not None and res.success,
          res and f'code={res.error_code} message={res.message!r}')
    named = ask(GOAL, group='arm')
    check('~/plan with group_name naming the group of the planning_group parameter plans the '
          'same trajectory',
          named is not None and named.success and res is not None
          and named.trajectory.joint_names == res.trajectory.joint_names
          and len(named.trajectory.points) == len(res.trajectory.points),
          named and f'code={named.error_code} message={named.message!r}')


def named_state_checks(node, plan):
    """goal_name of ~/plan: a named state of the SRDF (the bundled arm's 'home' and
    'ready') is the goal; an unknown one is refused listing the group's names, and one given
    with goal_state too is refused."""
    req = PlanPath.Request()
    req.start_state = joint_state(ARM, START)
    req.goal_name = 'ready'
    req.seed = 4
    res = call(node, plan, req, timeout=30.0)
    end = list(res.trajectory.points[-1].positions) if res and res.success else None
    check("~/plan with goal_name 'ready' ends at the SRDF's named state",
          end is not None and max(abs(a - b) for a, b in zip(end, GOAL)) < 1e-9,
          res and f'{res.message!r}; ends at {end}')
    req.goal_name = 'home'
    res = call(node, plan, req, timeout=30.0)
    end = list(res.trajectory.points[-1].positions) if res and res.success else None
    check("~/plan with goal_name 'home' ends at the SRDF's named state",
          end is not None and max(abs(a) for a in end) < 1e-9,
          res and f'{res.message!r}; ends at {end}')
    req.goal_name = 'nowhere'
    res = call(node, plan, req, timeout=30.0)
    check('an unknown goal_name is refused with INVALID_GOAL_CONSTRAINTS listing the names',
          res is not None and not res.success
          and res.error_code == PlanPath.Response.INVALID_GOAL_CONSTRAINTS
          and "'nowhere'" in res.message and 'home, ready' in res.message,
          res and f'code={res.error_code} {res.message!r}')
    req.goal_name = 'home'
    req.goal_state = joint_state(ARM, GOAL)
    res = call(node, plan, req, timeout=30.0)
    check('goal_name with goal_state too is refused',
          res is not None and not res.success and 'give one goal' in res.message,
          res and res.message)


def batch_checks(node, plan):
    """~/plan_batch: each problem answered as ~/plan answers it, a bad one failing alone;
    lists that do not fit refused as a whole."""
    batch = node.create_client(PlanBatch, f'/{NODE}/plan_batch')
    if not check('~/plan_batch service appears', batch.wait_for_service(timeout_sec=10.0)):
        return
    in_collision = [0.0, 1.9, 0.0, 0.0, 0.0, 0.0]
    req = PlanBatch.Request()
    req.start_states = [joint_state(ARM, START) for _ in range(3)]
    req.goal_states = [joint_state(ARM, GOAL), joint_state(ARM, in_collision),
                       joint_state(ARM, mid_config())]
    req.seed = 5
    res = call(node, batch, req, timeout=60.0)
    codes = PlanBatch.Response
    check('~/plan_batch plans two of three problems, the goal in collision failing alone',
          res is not None and not res.success and res.solved == 2
          and list(res.error_codes) == [codes.SUCCESS, codes.GOAL_IN_COLLISION, codes.SUCCESS]
          and len(res.trajectories) == 3 and len(res.trajectories[1].points) == 0
          and 'collision' in res.messages[1],
          res and f'success={res.success} solved={res.solved} codes={list(res.error_codes)} '
                  f'message={res.message!r}')
    if res is None or len(res.trajectories) != 3:
        return
    for k, goal in ((0, GOAL), (2, mid_config())):
        traj = res.trajectories[k]
        check(f'~/plan_batch problem {k} ends at its goal',
              len(traj.points) >= 2
              and all(abs(a - b) < 1e-6 for a, b in zip(traj.points[-1].positions, goal)),
              f'{len(traj.points)} points')
        if len(traj.points) >= 2:
            check_trajectory(traj, SCENE, f'plan_batch problem {k}')
    one = PlanPath.Request()
    one.start_state = joint_state(ARM, START)
    one.goal_state = joint_state(ARM, GOAL)
    one.seed = 5
    alone = call(node, plan, one, timeout=60.0)
    check('~/plan_batch gives problem 0 the trajectory ~/plan gives it alone',
          alone is not None and alone.success
          and [list(p.positions) for p in alone.trajectory.points]
          == [list(p.positions) for p in res.trajectories[0].points],
          alone and f'{len(alone.trajectory.points)} against {len(res.trajectories[0].points)} points')
    # Goal sets: problem 1's goal in collision, GOAL among its other goals; it ends at GOAL,
    # free for the independent checker, and reached_goals says so.
    req.other_goals = [GoalSet(), GoalSet(states=[joint_state(ARM, GOAL)]), GoalSet()]
    res = call(node, batch, req, timeout=60.0)
    ends = (res and len(res.trajectories) == 3 and res.trajectories[1].points
            and list(res.trajectories[1].points[-1].positions))
    free = ic.first_collision(ROBOT, SCENE, res.trajectories[1]) if ends else 'no trajectory'
    check('~/plan_batch with other_goals: the problem whose goal collides ends at its other '
          'goal, reached_goals naming it',
          res is not None and res.success and list(res.reached_goals) == [0, 1, 0]
          and ends and max(abs(a - b) for a, b in zip(ends, GOAL)) < 1e-9 and free is None
          and 'ends at other_goal_states[0]' in res.messages[1],
          res and f'codes={list(res.error_codes)} reached={list(res.reached_goals)} '
                  f'{list(res.messages)!r}; independent {free}')
    bad = PlanBatch.Request()
    bad.start_states = [joint_state(ARM, START)]
    bad.goal_states = [joint_state(ARM, GOAL), joint_state(ARM, GOAL)]
    res = call(node, batch, bad, timeout=30.0)
    check('~/plan_batch refuses start_states that do not fit goal_states, naming them',
          res is not None and not res.success and len(res.error_codes) == 0
          and 'start_states' in res.message,
          res and f'message={res.message!r}')


def quaternion_of(r):
    """The unit quaternion (x, y, z, w) of a rotation matrix (rows)."""
    tr = r[0][0] + r[1][1] + r[2][2]
    if tr > 0:
        s = 2.0 * (tr + 1.0) ** 0.5
        return ((r[2][1] - r[1][2]) / s, (r[0][2] - r[2][0]) / s,
                (r[1][0] - r[0][1]) / s, 0.25 * s)
    i = max(range(3), key=lambda k: r[k][k])
    j, k = (i + 1) % 3, (i + 2) % 3
    s = 2.0 * (1.0 + r[i][i] - r[j][j] - r[k][k]) ** 0.5
    q = [0.0, 0.0, 0.0, 0.0]
    q[i] = 0.25 * s
    q[j] = (r[j][i] + r[i][j]) / s
    q[k] = (r[k][i] + r[i][k]) / s
    q[3] = (r[k][j] - r[j][k]) / s
    return tuple(q)


def rotation_angle(a, b):
    """The angle (rad) of the rotation between rotation matrices a and b."""
    c = (sum(a[i][k] * b[i][k] for i in range(3) for k in range(3)) - 1.0) / 2.0
    return math.acos(max(-1.0, min(1.0, c)))


def pose_checks(node, plan):
    """~/plan with goal_pose: the tool reaches the pose (by the independent forward
    kinematics), position-only goals, a link frame, and the errors of bad pose goals."""
    r_goal, t_goal = ROBOT.link_poses(ARM, GOAL)['tool0']

    def pose_request(position, quaternion, frame='world', position_only=False):
        req = PlanPath.Request()
        req.start_state = joint_state(ARM, START)
        req.goal_pose.header.frame_id = frame
        p = req.goal_pose.pose
        p.position.x, p.position.y, p.position.z = position
        (p.orientation.x, p.orientation.y, p.orientation.z,
         p.orientation.w) = quaternion
        req.goal_position_only = position_only
        req.seed = 5
        return req

    def tool_at_end(res):
        last = res.trajectory.points[-1]
        return ROBOT.link_poses(list(res.trajectory.joint_names), list(last.positions))['tool0']

    codes = PlanPath.Response
    res = call(node, plan, pose_request(t_goal, quaternion_of(r_goal)), timeout=60.0)
    ok = res is not None and res.success and res.error_code == codes.SUCCESS
    check('~/plan to a goal pose plans, saying how close the tool came',
          ok and "'tool0' within" in res.message,
          res and f'code={res.error_code} message={res.message!r}')
    check('a pose-goal plan reports its inverse kinematics time apart from planning_time',
          ok and res.stats.ik_time > 0.0 and res.stats.planning_time > 0.0,
          res and f'ik_time={res.stats.ik_time} planning_time={res.stats.planning_time}')
    # ik_time_share: a share outside (0, 1] is refused and the value stays; 1.0 is taken.
    rc, out = ros2_param('set', NODE, 'ik_time_share', '0.0')
    time.sleep(1.0)
    _, now = ros2_param('get', NODE, 'ik_time_share')
    check('ros2 param set ik_time_share 0.0 is refused (the value stays 0.5)',
          now.strip().endswith('0.5'), f'{out} {now}')
    rc, out = ros2_param('set', NODE, 'ik_time_share', '1.0')
    again = call(node, plan, pose_request(t_goal, quaternion_of(r_goal)), timeout=60.0)
    check('with ik_time_share 1.0 the pose goal plans as well',
          rc == 0 and 'successful' in out.lower() and again is not None and again.success,
          f'{out} {again and again.message!r}')
    ros2_param('set', NODE, 'ik_time_share', '0.5')
    if ok:
        r, t = tool_at_end(res)
        dp = math.dist(t, t_goal)
        check('the pose-goal trajectory ends with the tool at the pose (independent kinematics)',
              dp <= 1e-4 and rotation_angle(r, r_goal) <= 1e-3,
              f'{dp:.2e} m, {rotation_angle(r, r_goal):.2e} rad')
        check_trajectory(res.trajectory, SCENE, 'pose-goal plan')

    def plans_to(req, where, what):
        """~/plan answers req with a trajectory whose tool ends at position `where`."""
        res = call(node, plan, req, timeout=60.0)
        ok = res is not None and res.success
        check(f'~/plan to {what} plans', ok,
              res and f'code={res.error_code} message={res.message!r}')
        if ok:
            dp = math.dist(tool_at_end(res)[1], where)
            check(f'the trajectory to {what} ends with the tool there', dp <= 1e-4,
                  f'{dp:.2e} m')

    t_mid = ROBOT.link_poses(ARM, mid_config())['tool0'][1]
    plans_to(pose_request(t_mid, (0.0, 0.0, 0.0, 1.0), position_only=True), t_mid,
             'a position-only goal')

    # The same pose given in the frame of the base link (which sits at the world's origin).
    base_r, base_t = ROBOT.link_poses(ARM, START)['base_link']
    rel_t = [sum(base_r[k][i] * (t_goal[k] - base_t[k]) for k in range(3)) for i in range(3)]
    rel_r = [[sum(base_r[k][i] * r_goal[k][j] for k in range(3)) for j in range(3)]
             for i in range(3)]
    plans_to(pose_request(rel_t, quaternion_of(rel_r), frame='base_link'), t_goal,
             'a goal pose in a link frame')

    res = call(node, plan, pose_request(t_goal, quaternion_of(r_goal), frame='camera_link'))
    check('a goal pose in an unknown frame: INVALID_GOAL_CONSTRAINTS naming the frame',
          res is not None and not res.success
          and res.error_code == codes.INVALID_GOAL_CONSTRAINTS
          and "frame 'camera_link'" in res.message,
          res and f'code={res.error_code} message={res.message!r}')
    res = call(node, plan, pose_request((3.0, 0.0, 0.5), (0.0, 0.0, 0.0, 1.0)), timeout=60.0)
    check('a goal pose out of reach: NO_IK_SOLUTION',
          res is not None and not res.success and res.error_code == codes.NO_IK_SOLUTION,
          res and f'code={res.error_code} message={res.message!r}')
    # ~/goal_pose: the tool's pose, planned from the current joint state and published.
    trajectories = []
    node.create_subscription(JointTrajectory, f'/{NODE}/trajectory', trajectories.append, 10)
    pose_pub = node.create_publisher(PoseStamped, f'/{NODE}/goal_pose', 10)
    wait_for(node, lambda: pose_pub.get_subscription_count() > 0, 5.0)
    msg = PoseStamped()
    msg.header.frame_id = 'world'
    msg.pose.position.x, msg.pose.position.y, msg.pose.position.z = t_goal
    o = msg.pose.orientation
    o.x, o.y, o.z, o.w = quaternion_of(r_goal)
    pose_pub.publish(msg)

    def ends_at_goal(traj):
        if not traj.points:
            return False
        end = ROBOT.link_poses(list(traj.joint_names), list(traj.points[-1].positions))['tool0']
        return math.dist(end[1], t_goal) <= 1e-4 and rotation_angle(end[0], r_goal) <= 1e-3

    got = wait_for(node, lambda: any(ends_at_goal(t) for t in trajectories), 60.0)
    check('a PoseStamped on ~/goal_pose is planned from the current state and published', got,
          f'{len(trajectories)} trajectories received')

    # ~/plan_batch with goal poses: each problem planned to its pose, one out of reach.
    batch = node.create_client(PlanBatch, f'/{NODE}/plan_batch')
    breq = PlanBatch.Request()
    breq.start_states = [joint_state(ARM, START), joint_state(ARM, START)]
    far = PoseStamped()
    far.header.frame_id = 'world'
    far.pose.position.x, far.pose.position.z = 5.0, 0.5
    breq.goal_poses = [msg, far]
    breq.seed = 5
    bres = call(node, batch, breq, timeout=60.0)
    ok = (bres is not None and bres.solved == 1
          and list(bres.error_codes) == [codes.SUCCESS, codes.NO_IK_SOLUTION]
          and len(bres.trajectories) == 2 and ends_at_goal(bres.trajectories[0]))
    check('~/plan_batch with goal_poses: the reachable pose planned, the far one NO_IK_SOLUTION',
          ok, bres and f'solved={bres.solved} codes={list(bres.error_codes)} '
                       f'messages={list(bres.messages)}')

    both = pose_request(t_goal, quaternion_of(r_goal))
    both.goal_state = joint_state(ARM, GOAL)
    res = call(node, plan, both)
    check('goal_state and goal_pose together: INVALID_GOAL_CONSTRAINTS',
          res is not None and not res.success
          and res.error_code == codes.INVALID_GOAL_CONSTRAINTS and 'not both' in res.message,
          res and f'code={res.error_code} message={res.message!r}')

    # Grasp candidates: goal_pose out of reach, the first other pose inside the shelf board
    # (no free solution), the second the goal's tool pose.
    board = next(o for o in SCENE if o.name == 'shelf_board')
    candidates = pose_request((3.0, 0.0, 0.5), (0.0, 0.0, 0.0, 1.0))
    inside = PoseStamped()
    inside.header.frame_id = 'world'
    (inside.pose.position.x, inside.pose.position.y,
     inside.pose.position.z) = board.position
    inside.pose.orientation.w = 1.0
    candidates.other_goal_poses = [inside, msg]
    res = call(node, plan, candidates, timeout=60.0)
    ok = res is not None and res.success
    check('~/plan with other_goal_poses (grasp candidates): the one reachable free pose is '
          'reached, reached_goal and the message say which',
          ok and res.reached_goal == 2 and 'ends at other_goal_poses[1]' in res.message
          and ends_at_goal(res.trajectory),
          res and f'code={res.error_code} reached_goal={res.reached_goal} '
                  f'message={res.message!r}')
    if ok:
        check_trajectory(res.trajectory, SCENE, 'grasp-candidate plan')
    candidates.other_goal_poses = [inside]
    res = call(node, plan, candidates, timeout=60.0)
    check('other_goal_poses none of which can be reached free: fails with a goal error',
          res is not None and not res.success
          and res.error_code in (codes.GOAL_IN_COLLISION, codes.NO_IK_SOLUTION)
          and '2 goal poses' in res.message,
          res and f'code={res.error_code} message={res.message!r}')
    bad = PoseStamped()
    bad.header.frame_id = 'camera_link'
    bad.pose.orientation.w = 1.0
    candidates.other_goal_poses = [msg, bad]
    res = call(node, plan, candidates)
    check('a bad other goal pose: INVALID_GOAL_CONSTRAINTS naming other_goal_poses[1]',
          res is not None and not res.success
          and res.error_code == codes.INVALID_GOAL_CONSTRAINTS
          and 'other_goal_poses[1]' in res.message and 'camera_link' in res.message,
          res and f'code={res.error_code} message={res.message!r}')
    lonely = PlanPath.Request()
    lonely.start_state = joint_state(ARM, START)
    lonely.goal_state = joint_state(ARM, GOAL)
    lonely.other_goal_poses = [msg]
    res = call(node, plan, lonely)
    check('other_goal_poses beside a goal state: INVALID_GOAL_CONSTRAINTS saying they go with '
          'a goal pose',
          res is not None and not res.success
          and res.error_code == codes.INVALID_GOAL_CONSTRAINTS
          and 'other_goal_poses' in res.message and 'go with a goal pose' in res.message,
          res and f'code={res.error_code} message={res.message!r}')


# A start and goal with the tool pointing straight down, at (0.3, -0.4, 0.3) and
# (0.25, 0.4, 0.35) m in the bundled scene (solved by the planner's inverse kinematics once;
# tests/constrained.rs plans between the same poses).
DOWN_START = [-0.9272957802243058, 0.2540257627845498, 1.7951767286147184,
              -5.579238595621906e-7, 1.0923892699195807, 2.2142982246807033]
DOWN_GOAL = [1.0121971428325018, 0.13438367810283247, 1.8151667994823624,
             -6.733692031065893e-9, 1.192042175554233, -2.1293955057055123]


def tool_down(link, tol):
    """An orientation constraint in the world: `link` pointing straight down within `tol`
    about x and y, any heading."""
    oc = OrientationConstraint()
    oc.header.frame_id = 'world'
    oc.link_name = link
    o = oc.orientation
    o.x, o.y, o.z, o.w = 1.0, 0.0, 0.0, 0.0
    oc.absolute_x_axis_tolerance = oc.absolute_y_axis_tolerance = tol
    oc.absolute_z_axis_tolerance = 3.2
    return oc


def path_constraint_checks(node, plan):
    """~/plan with path_constraints: the tool kept pointing down (any heading) and a point
    5 cm past it inside a box, at and between the trajectory's points by the independent
    forward kinematics, with XYZ Euler angles (the message's default) and with a rotation
    vector; wrist_3 kept in a range by a joint constraint; a start tipped over, drm, an
    unknown link, an unknown joint and an unknown parameterization refused by name."""
    codes = PlanPath.Response
    tol = 0.1

    def request(start, link='tool0', planner='', parameterization=None):
        req = PlanPath.Request()
        req.start_state = joint_state(ARM, start)
        req.goal_state = joint_state(ARM, DOWN_GOAL)
        req.planner_id = planner
        req.seed = 3
        oc = tool_down(link, tol)
        if parameterization is not None:
            oc.parameterization = parameterization
        pc = PositionConstraint()
        pc.header.frame_id = 'world'
        pc.link_name = 'tool0'
        pc.target_point_offset.z = 0.05
        pc.region_pose.position.z = 0.425
        pc.region_pose.orientation.w = 1.0
        pc.region_size.x, pc.region_size.y, pc.region_size.z = 4.0, 4.0, 0.55
        req.path_constraints.orientation_constraints = [oc]
        req.path_constraints.position_constraints = [pc]
        return req

    for parameterization, how in [(None, 'XYZ Euler angles'),
                                  (OrientationConstraint.ROTATION_VECTOR, 'a rotation vector')]:
        res = call(node, plan, request(DOWN_START, parameterization=parameterization),
                   timeout=60.0)
        ok = res is not None and res.success and res.error_code == codes.SUCCESS
        check(f'~/plan under path constraints (tool down as {how}, its point in a box) plans',
              ok, res and f'code={res.error_code} message={res.message!r}')
        if ok:
            constrained_plan_checks(res, tol, how)
    # The other sampling planners plan under the constraints too (MoveIt's planner ids).
    for planner, name in [('PRMkConfigDefault', 'prm'), ('RRTstarkConfigDefault', 'rrt_star')]:
        req = request(DOWN_START, planner=planner)
        req.allowed_planning_time = 4.0
        res = call(node, plan, req, timeout=60.0)
        ok = (res is not None and res.success and res.error_code == codes.SUCCESS
              and res.stats.planner_id == name)
        check(f'~/plan under path constraints with {planner} plans with {name}',
              ok, res and f'code={res.error_code} message={res.message!r}')
        if ok:
            constrained_plan_checks(res, tol, f'{name}, XYZ Euler angles')
    tipped = list(DOWN_START)
    tipped[4] += 0.6
    res = call(node, plan, request(tipped), timeout=30.0)
    check('a start tipped over: START_STATE_VIOLATES_PATH_CONSTRAINTS naming the constraint',
          res is not None and not res.success
          and res.error_code == codes.START_STATE_VIOLATES_PATH_CONSTRAINTS
          and 'orientation constraint 0' in res.message,
          res and f'code={res.error_code} message={res.message!r}')
    res = call(node, plan, request(DOWN_START, planner='drm'), timeout=30.0)
    check('path constraints with drm: INVALID_GOAL_CONSTRAINTS naming path_constraints',
          res is not None and res.error_code == codes.INVALID_GOAL_CONSTRAINTS
          and 'path_constraints' in res.message and 'rrt_connect' in res.message,
          res and f'code={res.error_code} message={res.message!r}')
    res = call(node, plan, request(DOWN_START, link='gripper'), timeout=30.0)
    check('a constraint on an unknown link: INVALID_GOAL_CONSTRAINTS naming it',
          res is not None and res.error_code == codes.INVALID_GOAL_CONSTRAINTS
          and "'gripper'" in res.message,
          res and f'code={res.error_code} message={res.message!r}')
    # wrist_3 (continuous) kept between its start and goal values, 0.15 rad to spare.
    def wrapped(d):
        return (d + math.pi) % (2.0 * math.pi) - math.pi
    half = wrapped(DOWN_GOAL[5] - DOWN_START[5]) / 2.0
    mid, jtol = wrapped(DOWN_START[5] + half), abs(half) + 0.15
    req = request(DOWN_START)
    jc = JointConstraint()
    jc.joint_name, jc.position = 'wrist_3_joint', mid
    jc.tolerance_above = jc.tolerance_below = jtol
    req.path_constraints.joint_constraints = [jc]
    res = call(node, plan, req, timeout=60.0)
    worst = None
    if res is not None and res.success:
        i = list(res.trajectory.joint_names).index('wrist_3_joint')
        pts = [p.positions[i] for p in res.trajectory.points]
        worst = max(abs(wrapped(a + wrapped(b - a) * k / 10.0 - mid))
                    for a, b in zip(pts, pts[1:]) for k in range(11))
    check('~/plan with a joint constraint keeps wrist_3 in its range at and between the points',
          worst is not None and worst <= jtol + 1e-9,
          f'{res and res.message!r}; worst {worst} from {mid:.4f}, tolerance {jtol:.4f}')
    jc.joint_name = 'gripper_joint'
    res = call(node, plan, req, timeout=30.0)
    check('a joint constraint on an unknown joint: INVALID_GOAL_CONSTRAINTS naming it',
          res is not None and res.error_code == codes.INVALID_GOAL_CONSTRAINTS
          and "'gripper_joint'" in res.message,
          res and f'code={res.error_code} message={res.message!r}')
    res = call(node, plan, request(DOWN_START, parameterization=5), timeout=30.0)
    check('an unknown parameterization: INVALID_GOAL_CONSTRAINTS naming it',
          res is not None and res.error_code == codes.INVALID_GOAL_CONSTRAINTS
          and 'parameterization' in res.message,
          res and f'code={res.error_code} message={res.message!r}')


def goal_region_checks(node, plan):
    """~/plan with goal_constraints (a goal region): the tool ends pointing down within 0.1
    rad about x and y (any heading) with its origin inside a 4 cm box around DOWN_GOAL's
    tool position, by the independent forward kinematics; the trajectory is free for the
    independent checker; a goal state given as well and an unknown link are refused naming
    goal_constraints."""
    codes = PlanPath.Response
    _, target = ROBOT.link_poses(ARM, DOWN_GOAL)['tool0']
    half, tol = 0.02, 0.1

    def request(link='tool0'):
        req = PlanPath.Request()
        req.start_state = joint_state(ARM, DOWN_START)
        req.seed = 5
        oc = tool_down(link, tol)
        pc = PositionConstraint()
        pc.header.frame_id = 'world'
        pc.link_name = link
        p = pc.region_pose.position
        p.x, p.y, p.z = target
        pc.region_pose.orientation.w = 1.0
        pc.region_size.x = pc.region_size.y = pc.region_size.z = 2.0 * half
        req.goal_constraints.orientation_constraints = [oc]
        req.goal_constraints.position_constraints = [pc]
        return req

    res = call(node, plan, request(), timeout=60.0)
    ok = res is not None and res.success and res.error_code == codes.SUCCESS
    check('~/plan to goal_constraints (the tool down inside a 4 cm box) plans',
          ok, res and f'code={res.error_code} message={res.message!r}')
    if ok:
        names = list(res.trajectory.joint_names)
        r, t = ROBOT.link_poses(names, list(res.trajectory.points[-1].positions))['tool0']
        off = max(abs(a - b) for a, b in zip(t, target))
        tilt = math.acos(max(-1.0, min(1.0, -r[2][2])))
        check('the plan to goal_constraints ends with the tool inside the box, pointing down '
              '(independent kinematics)',
              off <= half + 1e-6 and tilt <= math.sqrt(2.0) * tol + 1e-6,
              f'offset {off:.4f} m (half size {half}), tilt {tilt:.4f} rad')
        check_trajectory(res.trajectory, SCENE, 'plan to goal_constraints')
    both = request()
    both.goal_state = joint_state(ARM, DOWN_GOAL)
    res = call(node, plan, both, timeout=30.0)
    check('goal_constraints with a goal_state: INVALID_GOAL_CONSTRAINTS naming goal_constraints',
          res is not None and res.error_code == codes.INVALID_GOAL_CONSTRAINTS
          and 'goal_constraints' in res.message,
          res and f'code={res.error_code} message={res.message!r}')
    res = call(node, plan, request(link='gripper'), timeout=30.0)
    check('goal_constraints on an unknown link: INVALID_GOAL_CONSTRAINTS naming it',
          res is not None and res.error_code == codes.INVALID_GOAL_CONSTRAINTS
          and 'goal_constraints' in res.message and "'gripper'" in res.message,
          res and f'code={res.error_code} message={res.message!r}')


def constrained_plan_checks(res, tol, how):
    """The tool of a constrained plan points down within `tol` about x and y and its point
    5 cm past tool0 stays in the box, at and between the points (independent kinematics)."""
    names = list(res.trajectory.joint_names)
    pts = [list(p.positions) for p in res.trajectory.points]
    worst, low, high = 0.0, math.inf, -math.inf
    for a, b in zip(pts, pts[1:]):
        for k in range(11):
            q = [x + (y - x) * k / 10.0 for x, y in zip(a, b)]
            r, t = ROBOT.link_poses(names, q)['tool0']
            # The tool's z axis is the rotation's third column; the point is 5 cm along it.
            worst = max(worst, math.acos(max(-1.0, min(1.0, -r[2][2]))))
            z = t[2] + 0.05 * r[2][2]
            low, high = min(low, z), max(high, z)
    # A rotation vector within tol about x and y tilts the z axis by at most |(tol, tol)|;
    # Euler angles (a, b) by acos(cos a cos b), less.
    bound = math.sqrt(2.0) * tol
    check(f'the constrained plan ({how}) keeps the tool pointing down at and between its '
          'points (independent kinematics)', worst <= bound,
          f'{worst:.4f} rad, bound {bound:.4f}')
    check(f'the constrained plan ({how}) keeps the tool point inside its box',
          low >= 0.15 - 1e-6 and high <= 0.70 + 1e-6, f'z in [{low:.4f}, {high:.4f}]')
    check_trajectory(res.trajectory, SCENE, f'constrained plan ({how})')


def cartesian_checks(node, obstacles, scenes):
    """~/plan_cartesian: a vertical line of the tool followed whole (every point on the line
    by the independent forward kinematics) and published, a line into a cube ending above it,
    and bad requests refused by name."""
    client = node.create_client(PlanCartesian, f'/{NODE}/plan_cartesian')
    if not check('~/plan_cartesian service appears', client.wait_for_service(timeout_sec=10.0)):
        return
    codes = PlanCartesian.Response
    r0, t0 = ROBOT.link_poses(ARM, START)['tool0']
    q0 = quaternion_of(r0)

    def line_request(depth, frame='world'):
        req = PlanCartesian.Request()
        req.header.frame_id = frame
        req.start_state = joint_state(ARM, START)
        w = Pose()
        w.position.x, w.position.y, w.position.z = t0[0], t0[1], t0[2] - depth
        w.orientation.x, w.orientation.y, w.orientation.z, w.orientation.w = q0
        req.waypoints = [w]
        return req

    def tool_poses(traj):
        names = list(traj.joint_names)
        return [ROBOT.link_poses(names, list(p.positions))['tool0'] for p in traj.points]

    trajectories = []
    node.create_subscription(JointTrajectory, f'/{NODE}/trajectory', trajectories.append, 10)
    res = call(node, client, line_request(0.1), timeout=60.0)
    ok = res is not None and res.success and res.error_code == codes.SUCCESS
    check('~/plan_cartesian follows a 10 cm vertical line of the tool whole',
          ok and res.fraction == 1.0 and res.stop_reason == '',
          res and f'code={res.error_code} fraction={res.fraction} message={res.message!r}')
    if ok and res.trajectory.points:
        poses = tool_poses(res.trajectory)
        off = max(math.hypot(t[0] - t0[0], t[1] - t0[1]) for _, t in poses)
        turn = max(rotation_angle(r, r0) for r, _ in poses)
        drop = t0[2] - poses[-1][1][2]
        check('every Cartesian trajectory point has the tool on the line, orientation kept '
              '(independent kinematics)', off <= 1e-4 and turn <= 1e-3 and abs(drop - 0.1) <= 1e-4,
              f'{len(poses)} points, {off:.2e} m off, {turn:.2e} rad, dropped {drop:.5f} m')
        moving = sum(1 for p in res.trajectory.points[1:-1]
                     if any(abs(v) > 1e-6 for v in p.velocities))
        check('the Cartesian trajectory moves through its points without stopping',
              moving == len(res.trajectory.points) - 2,
              f'{moving} of {len(res.trajectory.points) - 2} inner points moving')
        check_trajectory(res.trajectory, SCENE, 'Cartesian path')
        end = list(res.trajectory.points[-1].positions)
        got = wait_for(node, lambda: any(
            t.points and all(abs(a - b) < 1e-9 for a, b in zip(t.points[-1].positions, end))
            for t in trajectories), 10.0)
        check('a whole Cartesian path is published on ~/trajectory', got)

    # A 4 cm cube 20 cm below the tool: a 25 cm line ends above it.
    below = (t0[0], t0[1], t0[2] - 0.2)
    marker = cube_marker('cartesian_block', 1, below, 0.04)
    cube = ic.Obstacle('cartesian_block/1', 'box', [0.02] * 3, below)
    obstacles.publish(MarkerArray(markers=[marker]))
    wait_for(node, lambda: any(m.ns == 'cartesian_block/1' for s in scenes[-1:]
                               for m in s.markers), 10.0)
    res = call(node, client, line_request(0.25), timeout=60.0)
    ok = res is not None and res.success and 0.0 < res.fraction < 1.0
    check('a Cartesian line into a cube: part of it, stopped at a collision',
          ok and 'collision' in res.stop_reason,
          res and f'fraction={res.fraction} stop={res.stop_reason!r} message={res.message!r}')
    if ok:
        z_end = tool_poses(res.trajectory)[-1][1][2]
        check('the partial Cartesian path ends above the cube', z_end > below[2] + 0.02,
              f'tool z {z_end:.3f}, cube top {below[2] + 0.02:.3f}')
        check_trajectory(res.trajectory, SCENE + [cube], 'partial Cartesian path')
    marker.action = Marker.DELETE
    obstacles.publish(MarkerArray(markers=[marker]))
    wait_for(node, lambda: not any(m.ns == 'cartesian_block/1' for s in scenes[-1:]
                                   for m in s.markers), 10.0)

    empty = line_request(0.1)
    empty.waypoints = []
    res = call(node, client, empty)
    check('~/plan_cartesian without waypoints: INVALID_GOAL_CONSTRAINTS',
          res is not None and not res.success
          and res.error_code == codes.INVALID_GOAL_CONSTRAINTS and 'waypoint' in res.message,
          res and f'code={res.error_code} message={res.message!r}')
    res = call(node, client, line_request(0.1, frame='camera_link'))
    check('~/plan_cartesian in an unknown frame: INVALID_GOAL_CONSTRAINTS naming it',
          res is not None and not res.success
          and res.error_code == codes.INVALID_GOAL_CONSTRAINTS and 'camera_link' in res.message,
          res and f'code={res.error_code} message={res.message!r}')
    unknown = line_request(0.1)
    unknown.group_name = 'no_such_group'
    res = call(node, client, unknown)
    check('~/plan_cartesian for an unknown group_name: INVALID_GROUP_NAME naming it',
          res is not None and not res.success
          and res.error_code == codes.INVALID_GROUP_NAME and 'no_such_group' in res.message,
          res and f'code={res.error_code} message={res.message!r}')


def state_checks(node, plan, obstacles, scenes):
    """~/check_state and ~/check_trajectory: verdicts agree with the independent check, the
    contacts name the obstacle it finds, a trajectory blocked by a new cube and free again
    once the cube is deleted, bad requests refused by name."""
    check_state = node.create_client(CheckState, f'/{NODE}/check_state')
    check_traj = node.create_client(CheckTrajectory, f'/{NODE}/check_trajectory')
    if not check('~/check_state and ~/check_trajectory appear',
                 check_state.wait_for_service(timeout_sec=10.0)
                 and check_traj.wait_for_service(timeout_sec=10.0)):
        return

    def state(names, positions):
        req = CheckState.Request()
        req.state = joint_state(names, positions)
        return call(node, check_state, req)

    res = call(node, check_state, CheckState.Request())
    check('~/check_state of the current joint state (START): valid',
          res is not None and res.success and res.valid and not res.contacts,
          res and f'{res.valid} {res.message!r}')
    low = [0.0, 1.9, 0.0, 0.0, 0.0, 0.0]
    hit = ic.collision(ROBOT, SCENE, ARM, low)
    res = state(ARM, low)
    check('~/check_state of a state in collision: invalid, the contacts name the obstacle the '
          'independent check finds',
          hit is not None and res is not None and res.success and not res.valid
          and any(f"obstacle '{hit[1]}'" in c for c in res.contacts),
          f'independent {hit}; node {res and list(res.contacts)}')
    res = state(ARM, [GOAL[0], 2.5] + GOAL[2:])
    check('~/check_state past a limit: invalid, naming the joint',
          res is not None and res.success and not res.valid
          and any('shoulder_lift_joint' in c for c in res.out_of_limits),
          res and f'{list(res.out_of_limits)} {res.message!r}')
    res = state(ARM + ['no_such_joint'], GOAL + [0.0])
    check('~/check_state with an unknown joint is refused naming it',
          res is not None and not res.success and 'no_such_joint' in res.message,
          res and res.message)
    for group, ok in (('arm', True), ('legs', False)):
        res = call(node, check_state, CheckState.Request(group_name=group))
        check(f'~/check_state with group_name {group!r}: '
              + ('valid, as without one' if ok else 'refused naming the group'),
              res is not None and (res.success and res.valid if ok
                                   else not res.success and "'legs'" in res.message),
              res and f'{res.valid} {res.message!r}')

    req = PlanPath.Request()
    req.start_state = joint_state(ARM, START)
    req.goal_state = joint_state(ARM, GOAL)
    req.seed = 5
    planned = call(node, plan, req, timeout=60.0)
    if not check('~/plan for the trajectory checks', planned is not None and planned.success,
                 planned and planned.message):
        return
    treq = CheckTrajectory.Request()
    treq.trajectory = planned.trajectory
    res = call(node, check_traj, treq)
    n = len(planned.trajectory.points)
    check('~/check_trajectory of a fresh plan: valid, a verdict per point and motion',
          res is not None and res.success and res.valid and len(res.points_valid) == n
          and len(res.segments_valid) == n - 1 and res.first_invalid_point == -1
          and res.first_invalid_segment == -1, res and res.message)
    named = copy.deepcopy(treq)
    named.group_name = 'legs'
    res = call(node, check_traj, named)
    check('~/check_trajectory with an unknown group_name is refused naming it',
          res is not None and not res.success and "'legs'" in res.message, res and res.message)

    # A cube where the tool passes: the trajectory is now invalid, as the independent
    # re-check finds; deleted, valid again.
    mid = planned.trajectory.points[n // 2]
    tool = ROBOT.link_poses(ARM, list(mid.positions))['tool0'][1]
    cube = cube_marker('crossing', 1, tool, 0.12)
    blocked = ic.first_collision(ROBOT, [ic.Obstacle('crossing/1', 'box', [0.06] * 3, tool)],
                                 planned.trajectory)
    obstacles.publish(MarkerArray(markers=[cube]))
    wait_for(node, lambda: any(m.ns == 'crossing/1' for s in scenes[-1:] for m in s.markers),
             10.0)
    res = call(node, check_traj, treq)
    check('~/check_trajectory after a cube moved across it: invalid, naming where',
          blocked is not None and res is not None and res.success and not res.valid
          and (res.first_invalid_segment >= 0 or res.first_invalid_point >= 0)
          and 'invalid' in res.message,
          f'independent {blocked}; node {res and res.message!r}')
    cube.action = Marker.DELETE
    obstacles.publish(MarkerArray(markers=[cube]))
    wait_for(node, lambda: not any(m.ns == 'crossing/1' for s in scenes[-1:] for m in s.markers),
             10.0)
    res = call(node, check_traj, treq)
    check('~/check_trajectory once the cube is deleted: valid again',
          res is not None and res.success and res.valid, res and res.message)
    execute_checks(node, planned.trajectory, cube, obstacles, scenes)
    action_execute_checks(node, planned.trajectory)
    mock_controller_checks(node, plan, obstacles, scenes)
    topic_replanning_checks(node, plan, obstacles, scenes)

    bad = CheckTrajectory.Request()
    bad.trajectory.joint_names = ARM
    bad.trajectory.points = [planned.trajectory.points[0], type(mid)(positions=[0.0] * 5)]
    res = call(node, check_traj, bad)
    check('~/check_trajectory with a short point is refused naming it',
          res is not None and not res.success and 'point 1' in res.message,
          res and res.message)
    bad.trajectory.points = []
    res = call(node, check_traj, bad)
    check('~/check_trajectory without points is refused',
          res is not None and not res.success and 'no points' in res.message,
          res and res.message)


def open_bin_triangles(half, height):
    """The triangles (three (x, y, z) each) of an open bin about the origin: a square floor
    of half width `half` at z = 0 and four walls `height` high."""
    p = [(-half, -half, 0.0), (half, -half, 0.0), (half, half, 0.0), (-half, half, 0.0),
         (-half, -half, height), (half, -half, height), (half, half, height),
         (-half, half, height)]
    quads = [(0, 3, 2, 1), (0, 1, 5, 4), (1, 2, 6, 5), (2, 3, 7, 6), (3, 0, 4, 7)]
    return [[p[i] for i in t] for a, b, c, d in quads for t in ((a, b, c), (a, c, d))]


def mesh_marker_checks(node, plan, obstacles, scenes):
    """Mesh markers split into convex parts (mesh_convex_parts): an open bin around the
    whole arm, floor below the table and walls beyond its reach, sent as a MESH_RESOURCE
    (an STL file) and as a TRIANGLE_LIST. Split, it is obstacles bins/N, bins/N/1, ... and
    START is valid and plannable inside it; as its hull (mesh_convex_parts 1) START is in
    collision with it; DELETE removes every part."""
    check_state = node.create_client(CheckState, f'/{NODE}/check_state')
    if not check('~/check_state appears (mesh markers)',
                 check_state.wait_for_service(timeout_sec=10.0)):
        return

    def start_state():
        req = CheckState.Request()
        req.state = joint_state(ARM, START)
        return call(node, check_state, req)

    def bin_ids(ns):
        return sorted(m.ns for m in (scenes[-1].markers if scenes else [])
                      if m.ns == ns or m.ns.startswith(ns + '/'))

    res = start_state()
    if not check('mesh markers: START is valid before the bin', res is not None and res.valid,
                 res and f'{list(res.contacts)}'):
        return
    set_then_refuse('mesh_convex_parts', '16', '0')
    set_then_refuse('mesh_resolution', '64', '4')

    triangles = open_bin_triangles(1.6, 0.5)
    folder = tempfile.mkdtemp(prefix='gmp_bin_')
    stl = os.path.join(folder, 'bin.stl')
    with open(stl, 'w') as f:
        f.write('solid bin\n')
        for t in triangles:
            f.write('facet normal 0 0 0\nouter loop\n')
            for x, y, z in t:
                f.write(f'vertex {x} {y} {z}\n')
            f.write('endloop\nendfacet\n')
        f.write('endsolid bin\n')

    def bin_marker(mid, kind):
        m = Marker()
        m.header.frame_id = 'world'
        m.ns, m.id, m.type, m.action = 'bins', mid, kind, Marker.ADD
        m.pose.position.z = -0.3
        m.pose.orientation.w = 1.0
        m.scale.x = m.scale.y = m.scale.z = 1.0
        if kind == Marker.MESH_RESOURCE:
            m.mesh_resource = 'file://' + stl
        else:
            m.points = [Point(x=x, y=y, z=z) for t in triangles for x, y, z in t]
        return m

    mesh = bin_marker(1, Marker.MESH_RESOURCE)
    split = publish_until(node, obstacles, MarkerArray(markers=[mesh]), scenes,
                          lambda s: len(bin_ids('bins/1')) >= 2, 30.0)
    ids = bin_ids('bins/1')
    check('a MESH_RESOURCE bin with mesh_convex_parts 16 becomes convex parts bins/1, '
          'bins/1/1, ... on ~/scene',
          split and ids == sorted(['bins/1'] + [f'bins/1/{k}' for k in range(1, len(ids))])
          and len(ids) <= 16, f'{ids}')
    res = start_state()
    check('START inside the split bin is valid', res is not None and res.valid,
          res and f'{list(res.contacts)}')
    req = goal_request(GOAL)
    req.start_state = joint_state(ARM, START)
    res = call(node, plan, req, timeout=60.0)
    check('~/plan inside the split bin succeeds', res is not None and res.success,
          res and res.message)

    listed = bin_marker(2, Marker.TRIANGLE_LIST)
    shown = publish_until(node, obstacles, MarkerArray(markers=[listed]), scenes,
                          lambda s: len(bin_ids('bins/2')) >= 2, 30.0)
    check('the same bin as a TRIANGLE_LIST gives as many parts', shown
          and len(bin_ids('bins/2')) == len(ids), f'{bin_ids("bins/2")} against {ids}')
    listed.action = Marker.DELETE
    obstacles.publish(MarkerArray(markers=[listed]))
    wait_for(node, lambda: not bin_ids('bins/2'), 10.0)

    set_params([('mesh_convex_parts', '1')])
    hull = publish_until(node, obstacles, MarkerArray(markers=[mesh]), scenes,
                         lambda s: bin_ids('bins/1') == ['bins/1'], 30.0)
    check('with mesh_convex_parts 1 the bin is one obstacle, its parts gone', hull,
          f'{bin_ids("bins/1")}')
    res = start_state()
    check('START inside the bin\'s hull is in collision with it',
          res is not None and not res.valid
          and any("obstacle 'bins/1'" in c for c in res.contacts),
          res and f'{list(res.contacts)}')

    set_params([('mesh_convex_parts', '16')])
    publish_until(node, obstacles, MarkerArray(markers=[mesh]), scenes,
                  lambda s: len(bin_ids('bins/1')) >= 2, 30.0)
    mesh.action = Marker.DELETE
    obstacles.publish(MarkerArray(markers=[mesh]))
    gone = wait_for(node, lambda: not bin_ids('bins/1'), 10.0)
    check('DELETE of the split bin removes every part', gone, f'{bin_ids("bins/1")}')

    # The same bin as MoveIt .scene text through ~/load_scene is split too; the scene saved
    # before is loaded back after.
    save = node.create_client(SaveScene, f'/{NODE}/save_scene')
    load = node.create_client(LoadScene, f'/{NODE}/load_scene')
    kept = os.path.join(folder, 'kept.yaml')
    res = call(node, save, SaveScene.Request(path=kept))
    if check('~/save_scene before a MoveIt bin is loaded', res is not None and res.success,
             res and res.message):
        corners = sorted({p for t in triangles for p in t})
        lines = ['cell', '* bigbin', '0 0 -0.3', '0 0 0 1', '1', 'mesh',
                 f'{len(corners)} {len(triangles)}']
        lines += [f'{x} {y} {z}' for x, y, z in corners]
        lines += [' '.join(str(corners.index(p)) for p in t) for t in triangles]
        lines += ['0 0 0', '0 0 0 1', '0 0 0 0', '0', '.']
        res = call(node, load, LoadScene.Request(scene_yaml='\n'.join(lines) + '\n',
                                                 merge=True))
        shown = wait_for(node, lambda: len(bin_ids('bigbin')) >= 2, 10.0)
        check('a MoveIt .scene mesh loaded by ~/load_scene with mesh_convex_parts 16 becomes '
              'parts bigbin, bigbin/1, ...',
              res is not None and res.success and shown
              and bin_ids('bigbin') == sorted(['bigbin'] + [f'bigbin/{k}' for k in
                                                           range(1, len(bin_ids('bigbin')))]),
              f'{res and res.message!r} {bin_ids("bigbin")}')
        res = start_state()
        check('START inside the loaded split bin is valid', res is not None and res.valid,
              res and f'{list(res.contacts)}')
        res = call(node, load, LoadScene.Request(path=kept, merge=False))
        gone = wait_for(node, lambda: not bin_ids('bigbin'), 10.0)
        check('the scene saved before is loaded back', res is not None and res.success and gone,
              res and res.message)
    set_params([('mesh_convex_parts', '1')])
    res = start_state()
    check('START is valid again once the bin is deleted', res is not None and res.valid,
          res and f'{list(res.contacts)}')
    shutil.rmtree(folder, ignore_errors=True)


def point_cloud(points, frame='world', fields='xyz'):
    """A sensor_msgs/PointCloud2 of FLOAT32 points (one row), fields named by `fields`."""
    msg = PointCloud2()
    msg.header.frame_id = frame
    msg.height, msg.width = 1, len(points)
    msg.fields = [PointField(name=n, offset=4 * i, datatype=PointField.FLOAT32, count=1)
                  for i, n in enumerate(fields)]
    msg.point_step = 4 * len(fields)
    msg.row_step = msg.point_step * len(points)
    msg.data = b''.join(struct.pack('<3f', *p) for p in points)
    msg.is_dense = True
    return msg


def ball_points(centre, radius, step=0.01):
    n = int(math.ceil(radius / step))
    return [(centre[0] + i * step, centre[1] + j * step, centre[2] + k * step)
            for i in range(-n, n + 1) for j in range(-n, n + 1) for k in range(-n, n + 1)
            if (i * i + j * j + k * k) * step * step <= radius * radius]


def cloud_boxes(scene):
    """The point cloud's boxes on a ~/scene message, as independent-check obstacles."""
    return [ic.Obstacle(m.ns, 'box', [m.scale.x / 2, m.scale.y / 2, m.scale.z / 2],
                        [m.pose.position.x, m.pose.position.y, m.pose.position.z])
            for m in scene.markers if m.ns.startswith('pointcloud/')]


def cloud_checks(node, plan, scenes):
    """~/points: a blob where the tool passes halfway between START and GOAL, sent with the
    robot's own points at START, becomes boxes on ~/scene covering the blob and not the robot;
    ~/check_state finds the blob, a plan goes around it (independently re-checked against the
    boxes); bad clouds keep the scene; an empty cloud clears it."""
    check_state = node.create_client(CheckState, f'/{NODE}/check_state')
    states = node.create_publisher(JointState, 'joint_states', 10)
    clouds = node.create_publisher(PointCloud2, f'/{NODE}/points', 10)
    for _ in range(5):
        states.publish(joint_state(ARM, START))
        rclpy.spin_once(node, timeout_sec=0.1)
    mid = [(a + b) / 2 for a, b in zip(START, GOAL)]
    blob = ball_points(ROBOT.link_poses(ARM, mid)['tool0'][1], 0.06)
    own = [p for _, p in ROBOT.world_points(ARM, START)]

    def send_until(msg, predicate, timeout=15.0):
        return publish_until(node, clouds, msg, scenes, predicate, timeout)

    shown = send_until(point_cloud(blob + own), lambda s: len(cloud_boxes(s)) > 0)
    boxes = cloud_boxes(scenes[-1]) if scenes else []
    uncovered = [p for p in blob if not any(b.contains(p) for b in boxes)]
    on_robot = ic.collision(ROBOT, boxes, ARM, START)
    check('a cloud on ~/points becomes boxes on ~/scene covering every blob point, the robot '
          'cut out at its joint state',
          shown and not uncovered and on_robot is None,
          f'{len(boxes)} boxes, {len(uncovered)} blob points uncovered, robot hits {on_robot}')

    req = CheckState.Request()
    req.state = joint_state(ARM, mid)
    res = call(node, check_state, req)
    check('~/check_state halfway: invalid, touching a pointcloud box',
          res is not None and res.success and not res.valid
          and any("obstacle 'pointcloud/" in c for c in res.contacts),
          res and f'{list(res.contacts)}')
    preq = PlanPath.Request()
    preq.start_state = joint_state(ARM, START)
    preq.goal_state = joint_state(ARM, GOAL)
    preq.seed = 9
    res = call(node, plan, preq, timeout=60.0)
    hit = res and res.success and ic.first_collision(ROBOT, SCENE + boxes, res.trajectory)
    check('~/plan goes around the cloud (re-checked against its boxes and the scene)',
          res is not None and res.success and hit is None,
          res and f'{res.message!r}; independent {hit}')

    count = len(boxes)
    clouds.publish(point_cloud(blob, frame='camera_optical_frame'))
    clouds.publish(point_cloud_without_z(blob))
    wait_for(node, lambda: False, 2.0)  # time for the node to refuse both
    res = call(node, check_state, req)
    check('clouds in an unknown frame or without z are refused, the boxes kept',
          len(cloud_boxes(scenes[-1])) == count and res is not None and not res.valid,
          f'{len(cloud_boxes(scenes[-1]))} boxes (was {count})')

    set_then_refuse('pointcloud_resolution', '0.08', '0.0')
    cleared = send_until(point_cloud([]), lambda s: not cloud_boxes(s))
    res = call(node, check_state, req)
    check('an empty cloud clears the boxes; halfway is free again',
          cleared and res is not None and res.success and res.valid,
          res and f'{list(res.contacts)}')


def description_topic_checks(node, plan):
    """A URDF latched on /robot_description (as robot_state_publisher does) is loaded while no
    parameter names a robot (urdf_path was cleared at the start): ros2 param get shows it, and
    ~/plan plans on it."""
    with open(os.path.join(ROOT, 'urdf', 'gmp_arm.urdf')) as f:
        urdf = f.read().replace('<robot name="gmp_arm">', '<robot name="gmp_arm_from_topic">')
    qos = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL,
                     reliability=ReliabilityPolicy.RELIABLE)
    pub = node.create_publisher(String, '/robot_description', qos)
    pub.publish(String(data=urdf))
    deadline = time.time() + 20.0
    out = ''
    while time.time() < deadline:
        rclpy.spin_once(node, timeout_sec=0.5)
        rc, out = ros2_param('get', NODE, 'robot_description')
        if 'gmp_arm_from_topic' in out:
            break
    check('a URDF on /robot_description is loaded while no parameter names a robot',
          'gmp_arm_from_topic' in out, out[:120])
    req = PlanPath.Request()
    req.start_state = joint_state(ARM, START)
    req.goal_state = joint_state(ARM, GOAL)
    res = call(node, plan, req, timeout=30.0)
    check('~/plan plans on the robot from the topic',
          res is not None and res.success, res and f'code={res.error_code} message={res.message!r}')


def point_cloud_without_z(points):
    """A malformed cloud: x and y only."""
    msg = point_cloud([], fields='xy')
    msg.width = len(points)
    msg.row_step = msg.point_step * len(points)
    msg.data = b''.join(struct.pack('<2f', p[0], p[1]) for p in points)
    return msg


def execute_checks(node, planned, cube, obstacles, scenes):
    """~/execute sends the last planned trajectory (the plan of state_checks, from START,
    where joint_states put the robot) to /joint_trajectory_controller/joint_trajectory; a
    robot away from its start and a cube across it are refused by name, nothing sent."""
    execute = node.create_client(Trigger, f'/{NODE}/execute')
    if not check('~/execute appears', execute.wait_for_service(timeout_sec=10.0)):
        return
    rc, out = ros2_param('set', NODE, 'execution_mode', 'topic')
    check('ros2 param set execution_mode topic', rc == 0 and 'successful' in out.lower(), out)
    sent = []
    node.create_subscription(JointTrajectory, '/joint_trajectory_controller/joint_trajectory',
                             sent.append, 10)
    time.sleep(1.0)  # discovery of the new subscription
    res = call(node, execute, Trigger.Request())
    deadline = time.time() + 5.0
    while not sent and time.time() < deadline:
        rclpy.spin_once(node, timeout_sec=0.2)
    got = sent[0] if sent else None
    check('~/execute sends the last plan to /joint_trajectory_controller/joint_trajectory',
          res is not None and res.success and 'sent' in res.message and got is not None
          and list(got.joint_names) == list(planned.joint_names)
          and len(got.points) == len(planned.points)
          and list(got.points[-1].positions) == list(planned.points[-1].positions),
          f'{res and res.message!r}; {len(sent)} received')

    states = node.create_publisher(JointState, 'joint_states', 10)
    successes = []  # every ~/execute answered success from here on

    def execute_while(positions, predicate):
        deadline = time.time() + 15.0
        res = None
        while time.time() < deadline:
            states.publish(joint_state(ARM, positions))
            rclpy.spin_once(node, timeout_sec=0.2)
            res = call(node, execute, Trigger.Request())
            if res is not None and res.success:
                successes.append(res)
            if res is not None and predicate(res):
                break
        return res

    before = len(sent)
    away = list(START)
    away[0] += 0.3
    res = execute_while(away, lambda r: not r.success)
    check('~/execute with the robot away from the start is refused naming the joint',
          res is not None and not res.success and "not at the trajectory's start" in res.message
          and 'shoulder_pan_joint' in res.message and 'elbow_joint' not in res.message,
          res and res.message)
    arrival_checks(node, execute, states, planned, successes)
    res = execute_while(START, lambda r: r.success)
    check('~/execute once the robot is back at the start sends it again',
          res is not None and res.success, res and res.message)
    # Execution monitoring: the cube across the middle of the plan sent a moment ago stops it
    # (an empty trajectory, "hold", on the command topic).
    sent_at = len(sent)
    cube.action = Marker.ADD
    obstacles.publish(MarkerArray(markers=[cube]))
    wait_for(node, lambda: any(m.ns == 'crossing/1' for s in scenes[-1:] for m in s.markers),
             10.0)
    stopped = wait_for(node, lambda: any(not t.points for t in sent[sent_at:]), 5.0)
    check('execution monitoring (topic): a cube across the plan just sent stops it with an '
          'empty trajectory',
          stopped, f'{len(sent) - sent_at} trajectories since: '
          f'{[len(t.points) for t in sent[sent_at:]]}')
    res = call(node, execute, Trigger.Request())
    if res is not None and res.success:
        successes.append(res)
    check('~/execute with a cube across the plan is refused as invalid in the scene',
          res is not None and not res.success and 'not valid in the current scene' in res.message,
          res and res.message)
    cube.action = Marker.DELETE
    obstacles.publish(MarkerArray(markers=[cube]))
    wait_for(node, lambda: not any(m.ns == 'crossing/1' for s in scenes[-1:] for m in s.markers),
             10.0)
    deadline = time.time() + 3.0
    while time.time() < deadline:
        rclpy.spin_once(node, timeout_sec=0.2)
    planned_sent = [t for t in sent[before:] if t.points]
    check('the refused calls sent nothing (one trajectory per call answered success)',
          len(successes) >= 1 and len(planned_sent) == len(successes),
          f'{len(planned_sent)} received for {len(successes)} successes')


def transform(parent, child, xyz, quat, stamp=None):
    """A geometry_msgs/TransformStamped: `child` at `xyz`, rotated by `quat` (x, y, z, w), in
    `parent`."""
    t = TransformStamped()
    t.header.frame_id, t.child_frame_id = parent, child
    if stamp is not None:
        t.header.stamp = stamp
    t.transform.translation.x, t.transform.translation.y, t.transform.translation.z = xyz
    r = t.transform.rotation
    r.x, r.y, r.z, r.w = quat
    return t


def looking_down(p, xyz):
    """Point `p` of a camera frame at `xyz` turned half a turn about x (z looks down) in
    world coordinates."""
    return (xyz[0] + p[0], xyz[1] - p[1], xyz[2] - p[2])


def tf_checks(node, obstacles, scenes):
    """/tf_static and /tf: a marker and a cloud in a camera frame the robot does not know are
    placed through the transforms; a cloud stamped between two /tf samples of a moving camera
    is placed where the camera was then, not where it is last."""
    latched = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL,
                         reliability=ReliabilityPolicy.RELIABLE)
    static = node.create_publisher(TFMessage, '/tf_static', latched)
    dynamic = node.create_publisher(TFMessage, '/tf', 100)
    clouds = node.create_publisher(PointCloud2, f'/{NODE}/points', 10)
    down = (1.0, 0.0, 0.0, 0.0)
    cam = (0.5, -0.6, 1.2)
    static.publish(TFMessage(transforms=[transform('world', 'test_camera', cam, down)]))
    marker = cube_marker('tf_cube', 1, (0.1, 0.0, 0.5), 0.1, frame='test_camera')
    want = looking_down((0.1, 0.0, 0.5), cam)

    def placed(scene):
        return next((m for m in scene.markers if m.ns == 'tf_cube/1'), None)

    publish_until(node, obstacles, MarkerArray(markers=[marker]), scenes,
                  lambda scene: placed(scene) is not None, 15.0)
    m = placed(scenes[-1]) if scenes else None
    got = m and (m.pose.position.x, m.pose.position.y, m.pose.position.z)
    q = m and m.pose.orientation
    check('a marker in a camera frame of /tf_static is placed in the planning frame through it',
          m is not None and m.header.frame_id == 'world'
          and all(abs(a - b) < 1e-6 for a, b in zip(got, want)) and abs(abs(q.x) - 1.0) < 1e-6,
          f'{got} (want {want}), orientation {q}')
    marker.action = Marker.DELETE
    obstacles.publish(MarkerArray(markers=[marker]))
    wait_for(node, lambda: scenes and placed(scenes[-1]) is None, 10.0)

    def send_until(msg, predicate, timeout=15.0):
        return publish_until(node, clouds, msg, scenes, predicate, timeout)

    blob = ball_points((0.0, 0.1, 0.8), 0.04)
    in_world = [looking_down(p, cam) for p in blob]
    shown = send_until(point_cloud(blob, frame='test_camera'), lambda s: len(cloud_boxes(s)) > 0)
    boxes = cloud_boxes(scenes[-1]) if scenes else []
    uncovered = [p for p in in_world if not any(b.contains(p) for b in boxes)]
    check('a cloud in a camera frame of /tf_static becomes boxes where the transform puts it',
          shown and boxes and not uncovered, f'{len(boxes)} boxes, {len(uncovered)} uncovered')

    # A camera moving along y on /tf: at t0 at y = -0.9, at t0 + 1 s at y = -0.5.
    t0 = node.get_clock().now()
    t1 = t0 + Duration(seconds=1.0)
    half = (t0 + Duration(seconds=0.5)).to_msg()
    at = [(0.5, -0.9, 1.2), (0.5, -0.5, 1.2)]
    for _ in range(3):
        dynamic.publish(TFMessage(transforms=[
            transform('world', 'moving_camera', at[0], down, t0.to_msg()),
            transform('world', 'moving_camera', at[1], down, t1.to_msg())]))
        wait_for(node, lambda: False, 0.3)
    msg = point_cloud(blob, frame='moving_camera')
    msg.header.stamp = half
    then = [looking_down(p, (0.5, -0.7, 1.2)) for p in blob]
    latest = looking_down((0.0, 0.1, 0.8), at[1])

    def moved(scene):
        bs = cloud_boxes(scene)
        return bs and all(any(b.contains(p) for b in bs) for p in then)

    shown = send_until(msg, moved)
    boxes = cloud_boxes(scenes[-1]) if scenes else []
    check('a cloud stamped between two /tf samples is placed where the camera was at its stamp',
          shown and not any(b.contains(latest) for b in boxes),
          f'{len(boxes)} boxes; covers the latest position: '
          f'{any(b.contains(latest) for b in boxes)}')
    cleared = send_until(point_cloud([]), lambda s: not cloud_boxes(s))
    check('an empty cloud clears the transformed boxes', cleared)


class Spinning:
    """A node of the test's own (`self.node`, with an action server `self.server`) spun by
    an executor on a thread of its own until stop()."""

    def spin(self, threads):
        self.executor = MultiThreadedExecutor(num_threads=threads)
        self.executor.add_node(self.node)
        self.thread = threading.Thread(target=self.executor.spin, daemon=True)
        self.thread.start()

    def stop(self):
        self.executor.shutdown(timeout_sec=2.0)
        self.server.destroy()
        self.node.destroy_node()


# Longer than the node waits for a controller to answer a goal (5 s).
LATE_ANSWER = 6.5


class FakeController(Spinning):
    """A control_msgs/FollowJointTrajectory server at CONTROLLER_ACTION in a node and executor
    thread of its own. `mode`: succeed, abort (PATH_TOLERANCE_VIOLATED), reject, hold (runs
    until cancelled, at most 60 s), or late (accepts after LATE_ANSWER s, then holds). Keeps
    every goal's trajectory."""

    def __init__(self):
        self.mode = 'succeed'
        self.goals = []
        self.cancelled = 0
        self.node = Node('fake_arm_controller')
        self.server = ActionServer(
            self.node, FollowJointTrajectory, CONTROLLER_ACTION, self.execute,
            goal_callback=self.goal, cancel_callback=lambda _: CancelResponse.ACCEPT,
            callback_group=ReentrantCallbackGroup())
        self.spin(4)

    def goal(self, request):
        self.goals.append(request.trajectory)
        if self.mode == 'late':
            time.sleep(LATE_ANSWER)
        return GoalResponse.REJECT if self.mode == 'reject' else GoalResponse.ACCEPT

    def execute(self, handle):
        result = FollowJointTrajectory.Result()
        if self.mode in ('hold', 'late'):
            deadline = time.time() + 60.0
            while time.time() < deadline and not handle.is_cancel_requested:
                time.sleep(0.05)
            if handle.is_cancel_requested:
                self.cancelled += 1
                handle.canceled()
            else:
                handle.abort()
            return result
        time.sleep(0.2)
        if self.mode == 'abort':
            result.error_code = FollowJointTrajectory.Result.PATH_TOLERANCE_VIOLATED
            result.error_string = 'shoulder_pan_joint off by 0.2 rad'
            handle.abort()
        else:
            handle.succeed()
        return result


def action_execute_checks(node, planned):
    """~/execute with execution_mode action: the last plan goes to the FollowJointTrajectory
    server the launch's controller_action names, and the answer is the controller's result
    (success, an abort's code and text, a rejection); one execution at a time; ~/stop cancels
    it; a goal running past its allowed time is cancelled; no server is refused by name.
    Also ~/stop in topic mode (left by execute_checks) sends an empty trajectory."""
    execute = node.create_client(Trigger, f'/{NODE}/execute')
    stop = node.create_client(Trigger, f'/{NODE}/stop')
    if not check('~/stop appears', stop.wait_for_service(timeout_sec=10.0)):
        return
    sent = []
    node.create_subscription(JointTrajectory, '/joint_trajectory_controller/joint_trajectory',
                             sent.append, 10)
    time.sleep(1.0)  # discovery of the new subscription
    res = call(node, stop, Trigger.Request())
    wait_for(node, lambda: sent, 5.0)
    check('~/stop in topic mode sends an empty trajectory to the controller topic',
          res is not None and res.success and sent and len(sent[-1].points) == 0,
          f'{res and res.message!r}; {len(sent)} received')

    rc, out = ros2_param('set', NODE, 'execution_mode', 'action')
    check('ros2 param set execution_mode action', rc == 0 and 'successful' in out.lower(), out)
    rc, out = ros2_param('get', NODE, 'controller_action')
    check('launch argument controller_action reaches the node', rc == 0 and
          out.endswith(CONTROLLER_ACTION), out)
    ros2_param('set', NODE, 'controller_action', '/elsewhere/follow_joint_trajectory')
    time.sleep(0.5)
    rc, out = ros2_param('get', NODE, 'controller_action')
    check('controller_action cannot change while the node runs (the value stays)',
          rc == 0 and out.endswith(CONTROLLER_ACTION), out)
    res = call(node, execute, Trigger.Request(), timeout=20.0)
    check('~/execute with no FollowJointTrajectory server is refused saying so',
          res is not None and not res.success
          and 'no FollowJointTrajectory action server' in res.message
          and CONTROLLER_ACTION in res.message, res and res.message)

    fake = FakeController()
    try:
        res = None
        deadline = time.time() + 20.0
        while time.time() < deadline:  # until the node discovers the server
            res = call(node, execute, Trigger.Request(), timeout=20.0)
            if res is not None and 'no FollowJointTrajectory action server' not in res.message:
                break
        got = fake.goals[-1] if fake.goals else None
        check('~/execute sends the last plan as a FollowJointTrajectory goal to the action '
              "the launch names and answers with the controller's SUCCESSFUL",
              res is not None and res.success and 'SUCCESSFUL' in res.message and got is not None
              and list(got.joint_names) == list(planned.joint_names)
              and len(got.points) == len(planned.points)
              and list(got.points[-1].positions) == list(planned.points[-1].positions),
              f'{res and res.message!r}; {len(fake.goals)} goals')

        fake.mode = 'abort'
        res = call(node, execute, Trigger.Request(), timeout=20.0)
        check("an aborted goal fails naming the controller's code and text",
              res is not None and not res.success and 'PATH_TOLERANCE_VIOLATED' in res.message
              and 'shoulder_pan_joint off by 0.2 rad' in res.message, res and res.message)

        fake.mode = 'reject'
        res = call(node, execute, Trigger.Request(), timeout=20.0)
        check('a rejected goal fails saying so',
              res is not None and not res.success and 'rejected' in res.message,
              res and res.message)

        fake.mode = 'hold'
        goals = len(fake.goals)
        running = execute.call_async(Trigger.Request())
        wait_for(node, lambda: len(fake.goals) > goals, 10.0)
        wait_for(node, lambda: False, 0.5)
        second = call(node, execute, Trigger.Request())
        check('a second ~/execute while one runs is refused at once',
              second is not None and not second.success
              and 'an execution is running' in second.message, second and second.message)
        stopped = call(node, stop, Trigger.Request())
        rclpy.spin_until_future_complete(node, running, timeout_sec=10.0)
        first = running.result() if running.done() else None
        check('~/stop cancels the running goal, and ~/execute answers that it was cancelled',
              stopped is not None and stopped.success and fake.cancelled == 1
              and first is not None and not first.success and 'cancelled' in first.message,
              f'stop: {stopped and stopped.message!r}; execute: {first and first.message!r}')
        res = call(node, stop, Trigger.Request())
        check('~/stop with nothing running says so',
              res is not None and not res.success and 'nothing to stop' in res.message,
              res and res.message)

        fake.mode = 'late'
        cancelled = fake.cancelled
        res = call(node, execute, Trigger.Request(), timeout=20.0)
        # The goal is accepted 1.5 s after the node stopped waiting; the node then cancels it.
        wait_for(node, lambda: fake.cancelled > cancelled, 10.0)
        check('a controller answering a goal too late: ~/execute fails saying so, and the goal '
              'it accepts afterwards is cancelled (the robot does not move unwatched)',
              res is not None and not res.success and 'did not answer the goal' in res.message
              and fake.cancelled == cancelled + 1,
              f'{res and res.message!r}; {fake.cancelled - cancelled} cancelled')
        fake.mode = 'hold'

        ros2_param('set', NODE, 'execution_duration_scaling', '0.5')
        time.sleep(0.5)
        rc, out = ros2_param('get', NODE, 'execution_duration_scaling')
        check('execution_duration_scaling 0.5 is refused (stays 1.2)',
              rc == 0 and out.endswith('1.2'), out)
        for name, value in (('execution_duration_scaling', '1.0'),
                            ('execution_goal_margin', '0.0')):
            rc, out = ros2_param('set', NODE, name, value)
            check(f'ros2 param set {name} {value}', rc == 0 and 'successful' in out.lower(), out)
        seconds = duration(planned)
        started = time.time()
        res = call(node, execute, Trigger.Request(), timeout=seconds + 15.0)
        took = time.time() - started
        # The server sees the cancellation on its next poll, after it accepted the request.
        wait_for(node, lambda: fake.cancelled == cancelled + 2, 3.0)
        check('a goal still running after its duration x scaling + margin is cancelled and '
              'reported',
              res is not None and not res.success and 'did not finish within' in res.message
              and 'the goal was cancelled' in res.message and fake.cancelled == cancelled + 2
              and took >= seconds,
              f'{res and res.message!r} after {took:.2f} s (duration {seconds:.2f} s)')
        for name, value in (('execution_duration_scaling', '1.2'),
                            ('execution_goal_margin', '0.5')):
            ros2_param('set', NODE, name, value)
    finally:
        fake.stop()


def arrival_checks(node, execute, states, planned, sent_by):
    """Topic mode with topic_arrival_tolerance 0.01: ~/execute answers once the joint state
    (published by the test: at the start until the trajectory is sent, then at its end)
    arrives, and TIMED_OUT, naming a joint, when the robot stays at the start. Every answer
    that sent a trajectory goes to sent_by."""
    rc, out = ros2_param('set', NODE, 'topic_arrival_tolerance', '0.01')
    check('ros2 param set topic_arrival_tolerance 0.01', rc == 0 and 'successful' in out.lower(),
          out)
    end = list(planned.points[-1].positions)

    def execute_then(positions, timeout):
        # Until the node has the robot back at the start (it refuses to send before).
        for _ in range(20):
            for _ in range(5):
                states.publish(joint_state(ARM, START))
                rclpy.spin_once(node, timeout_sec=0.1)
            future = execute.call_async(Trigger.Request())
            started = time.time()
            while not future.done() and time.time() - started < timeout:
                moved = time.time() - started > 0.5
                states.publish(joint_state(ARM, positions if moved else START))
                rclpy.spin_once(node, timeout_sec=0.05)
            res = future.result() if future.done() else None
            if res is not None and "not at the trajectory's start" in res.message:
                continue
            if res is not None and res.message.startswith('sent'):
                sent_by.append(res)
            return res, time.time() - started
        return None, 0.0

    res, took = execute_then(end, 20.0)
    check('topic mode with topic_arrival_tolerance: ~/execute answers once the robot arrives',
          res is not None and res.success and 'arrived' in res.message and took >= 0.5,
          f'{res and res.message!r} after {took:.2f} s')
    seconds = duration(planned)
    res, took = execute_then(START, seconds * 1.2 + 10.0)
    check('topic mode with topic_arrival_tolerance: TIMED_OUT naming a joint when the robot '
          'stays at the start',
          res is not None and not res.success and 'not arrived within' in res.message
          and '_joint' in res.message and took >= seconds,
          f'{res and res.message!r} after {took:.2f} s (duration {seconds:.2f} s)')
    ros2_param('set', NODE, 'topic_arrival_tolerance', '0.0')


def execute_when_discovered(node, execute, seconds, before=lambda: None):
    """~/execute, called again (for up to 30 s) while the node answers that it has not yet
    discovered a controller's action server, or that the server did not answer the goal (a
    request sent just as the server is discovered can be lost; a late acceptance is cancelled
    by the node, checked in action_execute_checks); `before` runs before each call. The last
    answer and how long it took."""
    deadline = time.time() + 30.0
    while True:
        before()
        started = time.time()
        done = call(node, execute, Trigger.Request(), timeout=seconds + 15.0)
        took = time.time() - started
        if done is None or time.time() > deadline or (
                'action server at' not in done.message
                and 'did not answer the goal' not in done.message):
            return done, took


def mock_controller_checks(node, plan, obstacles, scenes):
    """The mock controller, run as fake_arm_controller (the node's controller_action is
    there), stands in for the robot: ~/execute moves it along a plan from its joint state
    (its joint_states pass between start and goal and end at the goal) and answers when it
    arrives; the same plan again is refused (the robot is no longer at its start); execution
    monitoring stops it where a cube appears ahead on its way and lets it go on past a cube
    away from it; with replan_attempts it goes around such a cube to where it was going, or
    names each failed attempt; ~/execute_trajectory runs trajectories of a ~/plan_batch answer
    and refuses bad ones; ~/stop halfway through the way back leaves it held between the two; SIGINT
    stops it."""
    log_path = os.path.join(LOG_DIR, 'mock_controller.log')
    log = open(log_path, 'w')
    mock = subprocess.Popen(
        [ROS2, 'run', 'gpu_motion_planner', 'mock_controller', '--ros-args',
         '-r', '__node:=fake_arm_controller', '-p', f'joints:=[{",".join(ARM)}]',
         '-p', f'initial_positions:={START}'],
        stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    execute = node.create_client(Trigger, f'/{NODE}/execute')
    stop = node.create_client(Trigger, f'/{NODE}/stop')
    seen = []
    node.create_subscription(JointState, 'joint_states',
                             lambda m: seen.append(list(m.position))
                             if list(m.name) == ARM and len(m.velocity) == len(ARM) else None,
                             100)
    try:
        up = wait_for(node, lambda: seen and max(abs(a - b) for a, b in zip(seen[-1], START))
                      < 1e-9, 20.0)
        if not check('the mock controller publishes joint_states at its initial positions', up,
                     f'{len(seen)} messages; see {log_path}'):
            return
        req = PlanPath.Request()  # from the current state (the mock's)
        req.goal_state = joint_state(ARM, GOAL)
        req.seed = 3
        res = call(node, plan, req, timeout=60.0)
        if not check('~/plan from the mock robot\'s joint state', res is not None and res.success,
                     res and res.message):
            return
        seconds = duration(res.trajectory)
        done, took = execute_when_discovered(node, execute, seconds, lambda: seen.clear())
        wait_for(node, lambda: False, 0.3)
        between = [q for q in seen if GOAL[0] + 0.1 < q[0] < START[0] - 0.1
                   or START[0] + 0.1 < q[0] < GOAL[0] - 0.1]
        end = seen[-1] if seen else None
        check('~/execute moves the mock robot along the plan and answers when it has arrived',
              done is not None and done.success and 'SUCCESSFUL' in done.message
              and len(between) >= 5 and took >= seconds * 0.9
              and end is not None and max(abs(a - b) for a, b in zip(end, GOAL)) < 1e-6,
              f'{done and done.message!r}; {len(between)} states on the way, '
              f'{took:.2f} s for {seconds:.2f} s, ends at {end}')
        again = call(node, execute, Trigger.Request(), timeout=10.0)
        check('the same plan again is refused: the robot is no longer at its start',
              again is not None and not again.success
              and "not at the trajectory's start" in again.message, again and again.message)
        monitoring_checks(node, plan, execute, seen, obstacles, scenes)
        replanning_checks(node, plan, (execute, stop), seen, obstacles, scenes)
        execute_trajectory_checks(node, seen)
        move_checks(node, seen, obstacles, scenes)

        req.goal_state = joint_state(ARM, START)
        res = call(node, plan, req, timeout=60.0)
        if not check('~/plan back from the goal', res is not None and res.success,
                     res and res.message):
            return
        seconds = duration(res.trajectory)
        running = execute.call_async(Trigger.Request())
        wait_for(node, lambda: False, seconds / 2)
        stopped = call(node, stop, Trigger.Request())
        rclpy.spin_until_future_complete(node, running, timeout_sec=10.0)
        first = running.result() if running.done() else None
        wait_for(node, lambda: False, 0.5)
        held = seen[-1] if seen else None
        wait_for(node, lambda: False, 0.5)
        still = seen[-1] if seen else None
        check('~/stop halfway: the mock robot holds between goal and start, and ~/execute '
              'answers that the goal was cancelled',
              stopped is not None and stopped.success and first is not None
              and not first.success and 'cancelled' in first.message
              and held is not None and min(GOAL[0], START[0]) + 0.05 < held[0]
              < max(GOAL[0], START[0]) - 0.05 and held == still,
              f'{stopped and stopped.message!r}; {first and first.message!r}; at {held}')
    finally:
        code = stop_process(mock, log)
        check('the mock controller stops on SIGINT with exit code 0', code == 0,
              f'code {code}; see {log_path}')


MULTI = 'planner_multi'
# The arm's joints split over two trajectory controllers, its last joint standing in for a
# gripper driven by a GripperCommand controller.
ARM_JOINTS, WRIST_JOINTS, GRIPPER_JOINT = ARM[:3], ARM[3:5], ARM[5]
# A goal that moves joints of both controllers (free in the bundled scene, as START is).
MULTI_GOAL = [-1.2, 0.3, 0.8, 0.4, 0.3, -0.5]
CONTROLLERS_YAML = f"""
moveit_controller_manager: moveit_simple_controller_manager/MoveItSimpleControllerManager
moveit_simple_controller_manager:
  controller_names: [arm_controller, wrist_controller, gripper_controller]
  arm_controller:
    type: FollowJointTrajectory
    action_ns: follow_joint_trajectory
    default: true
    joints: [{', '.join(ARM_JOINTS)}]
  wrist_controller:
    type: FollowJointTrajectory
    action_ns: follow_joint_trajectory
    default: true
    joints: [{', '.join(WRIST_JOINTS)}]
  gripper_controller:
    type: GripperCommand
    action_ns: gripper_cmd
    default: true
    max_effort: 12.5
    joints: [{GRIPPER_JOINT}]
"""


class FakeGripper(Spinning):
    """A control_msgs/GripperCommand server at /gripper_controller/gripper_cmd in a node and
    executor thread of its own: it takes the commanded position at once, answers
    reached_goal, and publishes its joint on joint_states at 20 Hz. Keeps every command."""

    def __init__(self, joint, position):
        self.joint, self.position, self.commands = joint, position, []
        self.node = Node('gripper_controller')
        self.server = ActionServer(self.node, GripperCommand, '/gripper_controller/gripper_cmd',
                                   self.execute, callback_group=ReentrantCallbackGroup())
        self.states = self.node.create_publisher(JointState, '/joint_states', 10)
        self.timer = self.node.create_timer(0.05, self.publish)
        self.spin(2)

    def publish(self):
        self.states.publish(joint_state([self.joint], [self.position]))

    def execute(self, handle):
        command = handle.request.command
        self.commands.append((command.position, command.max_effort))
        self.position = command.position
        handle.succeed()
        result = GripperCommand.Result()
        result.position, result.reached_goal = command.position, True
        return result


def stop_process(proc, log):
    """SIGINT to a process group; its exit code (SIGKILL after 10 s: -9)."""
    os.killpg(proc.pid, signal.SIGINT)
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    log.close()
    return proc.returncode


MOVEIT_NS = 'moveit_test'
# The point cloud topic of the test package's sensors_3d.yaml.
MOVEIT_CLOUD = '/moveit_test_cell_camera/points'
# A description package's URDF as xacro: the bundled arm's URDF, included through
# $(find gpu_motion_planner) (the ament index) and named by a xacro argument.
ARM_XACRO = """<?xml version="1.0"?>
<robot xmlns:xacro="http://www.ros.org/wiki/xacro" name="gmp_arm">
  <xacro:arg name="arm_file" default="missing.urdf"/>
  <xacro:include filename="$(find gpu_motion_planner)/urdf/$(arg arm_file)"/>
</robot>
"""
SETUP_ASSISTANT = """moveit_setup_assistant_config:
  urdf:
    package: gmp_test_description
    relative_path: urdf/arm.urdf.xacro
    xacro_args: "arm_file:=gmp_arm.urdf"
  srdf:
    relative_path: config/gmp_arm.srdf
"""


def moveit_config_package(ws):
    """A MoveIt config package for the bundled arm in `ws` as the Setup Assistant leaves one
    (.setup_assistant, SRDF, joint_limits.yaml, moveit_controllers.yaml with the arm split
    over two trajectory controllers and a gripper, initial_positions.yaml at START), its URDF
    a xacro file in a description package beside it. Returns the package's folder."""
    desc = os.path.join(ws, 'gmp_test_description')
    cfg = os.path.join(ws, 'gmp_arm_moveit_config')
    os.makedirs(os.path.join(desc, 'urdf'))
    os.makedirs(os.path.join(cfg, 'config'))
    with open(os.path.join(desc, 'package.xml'), 'w') as f:
        f.write('<?xml version="1.0"?>\n<package format="3"><name>gmp_test_description</name>'
                '<version>0.0.1</version><description>test</description>'
                '<maintainer email="a@b.c">a</maintainer><license>Apache-2.0</license>'
                '</package>\n')
    with open(os.path.join(desc, 'urdf', 'arm.urdf.xacro'), 'w') as f:
        f.write(ARM_XACRO)
    with open(os.path.join(cfg, '.setup_assistant'), 'w') as f:
        f.write(SETUP_ASSISTANT)
    shutil.copy(os.path.join(ROOT, 'urdf', 'gmp_arm.srdf'), os.path.join(cfg, 'config'))
    shutil.copy(os.path.join(ROOT, 'config', 'gmp_arm_joint_limits.yaml'),
                os.path.join(cfg, 'config', 'joint_limits.yaml'))
    with open(os.path.join(cfg, 'config', 'moveit_controllers.yaml'), 'w') as f:
        f.write(CONTROLLERS_YAML)
    with open(os.path.join(cfg, 'config', 'initial_positions.yaml'), 'w') as f:
        f.write('initial_positions:\n' + ''.join(f'  {j}: {x}\n' for j, x in zip(ARM, START)))
    with open(os.path.join(cfg, 'config', 'kinematics.yaml'), 'w') as f:
        f.write('arm:\n  kinematics_solver: kdl_kinematics_plugin/KDLKinematicsPlugin\n')
    with open(os.path.join(cfg, 'config', 'ros2_controllers.yaml'), 'w') as f:
        f.write('controller_manager:\n  ros__parameters:\n    update_rate: 100\n')
    with open(os.path.join(cfg, 'config', 'ompl_planning.yaml'), 'w') as f:
        f.write('planning_plugins: [ompl_interface/OMPLPlanner]\nplanner_configs:\n'
                '  RRTConnectkConfigDefault: {type: geometric::RRTConnect, range: 0.0}\n'
                '  GmpRoadmap: {type: geometric::PRM, max_nearest_neighbors: 8}\n'
                'arm:\n  default_planner_config: GmpRoadmap\n'
                '  planner_configs: [RRTConnectkConfigDefault, GmpRoadmap]\n')
    with open(os.path.join(cfg, 'config', 'sensors_3d.yaml'), 'w') as f:
        f.write(f'sensors: [cell_camera]\ncell_camera:\n  sensor_plugin: '
                f'occupancy_map_monitor/PointCloudOctomapUpdater\n  point_cloud_topic: '
                f'{MOVEIT_CLOUD}\n  max_range: 3.0\n')
    return cfg


def moveit_config_checks(node):
    """The launch file with moveit_config (a MoveIt config package whose URDF is a xacro file
    in a description package beside it), mock_controller:=true and a namespace: the real
    xacro expands the URDF; one mock per controller of the package's moveit_controllers.yaml
    (a gripper among them) starts at its initial_positions.yaml; its SRDF's named states plan;
    its joint limits file's default scaling (0.5) times the trajectory; its sensors_3d.yaml's
    camera topic is subscribed to; ~/execute moves the three mocks to the goal; a package
    that is not there is refused and the robot kept."""
    ws = tempfile.mkdtemp(prefix='gmp_moveit_ws_')
    cfg = moveit_config_package(ws)
    name = f'/{MOVEIT_NS}/planner_node'
    log_path = os.path.join(LOG_DIR, 'moveit_launch.log')
    log = open(log_path, 'w')
    proc = subprocess.Popen([ROS2, 'launch', 'gpu_motion_planner', 'planner.launch.py',
                             f'namespace:={MOVEIT_NS}', f'moveit_config:={cfg}',
                             'mock_controller:=true'],
                            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    states = {}

    def heard(m):
        states.update(zip(m.name, m.position))

    node.create_subscription(JointState, f'/{MOVEIT_NS}/joint_states', heard, 100)

    def robot():
        return [states[j] for j in ARM] if all(j in states for j in ARM) else None

    def at(q, timeout):
        return wait_for(node, lambda: robot() is not None
                        and max(abs(a - b) for a, b in zip(robot(), q)) < 1e-6, timeout)

    def log_text():
        with open(log_path) as f:
            return f.read()

    try:
        plan = node.create_client(PlanPath, f'{name}/plan')
        execute = node.create_client(Trigger, f'{name}/execute')
        up = plan.wait_for_service(timeout_sec=40.0) and at(START, 20.0)
        if not check('the launch file with moveit_config and mock_controller: the node and one '
                     "mock per controller (in the namespace) come up at initial_positions.yaml",
                     up, f'robot at {robot()}; see {log_path}'):
            return
        req = PlanPath.Request()  # from the mocks' joint states
        req.goal_name = 'ready'
        req.seed = 4
        res = None
        deadline = time.time() + 60.0
        # The robot may load after the services appear, and a response sent before the
        # middleware matched the new client can be lost (the node then logs "could not send
        # the response: RCL_RET_TIMEOUT", seen once in CI): ask again.
        while time.time() < deadline:
            res = call(node, plan, req, timeout=10.0)
            if res is not None and res.success:
                break
            time.sleep(0.5)
        end = list(res.trajectory.points[-1].positions) if res and res.success else None
        check("the MoveIt config's robot (xacro expanded) plans to its SRDF's state 'ready'",
              end is not None and max(abs(a - b) for a, b in zip(end, GOAL)) < 1e-9,
              res and f'{res.message!r}; ends at {end}; see {log_path}')
        if end is None:
            return
        scaled = duration(res.trajectory)
        req.max_velocity_scaling_factor = 1.0
        req.max_acceleration_scaling_factor = 1.0
        full = call(node, plan, req, timeout=30.0)
        check("its joint_limits.yaml's default scaling (0.5) slows a request that gives none",
              full is not None and full.success and scaled > 1.3 * duration(full.trajectory),
              full and f'{scaled:.3f} s at the default, {duration(full.trajectory):.3f} s at 1')
        check("its moveit_controllers.yaml is the node's controllers file",
              'controllers from ' + os.path.join(cfg, 'config', 'moveit_controllers.yaml')
              in log_text(), f'see {log_path}')
        check("the node logs the package's files it uses and those it does not read, and "
              "its kinematics.yaml's plugin (not used: the node's solver)",
              'MoveIt config ' in log_text() and 'not read: ros2_controllers.yaml' in log_text()
              and 'arm: kdl_kinematics_plugin/KDLKinematicsPlugin (plugin and its other '
              'settings not used' in log_text(),
              f'see {log_path}')
        check("a request naming no planner plans with its ompl_planning.yaml's group default",
              'planned by prm (OMPL config GmpRoadmap)' in res.message
              and 'OMPL planning ' in log_text() and 'arm (default GmpRoadmap)' in log_text(),
              f'{res.message!r}; see {log_path}')
        named = PlanPath.Request()
        named.goal_name = 'home'
        named.planner_id = 'RRTConnectkConfigDefault'
        named.seed = 4
        res_named = call(node, plan, named, timeout=30.0)
        check("a planner_id naming one of its configurations plans with it",
              res_named is not None and res_named.success
              and 'planned by rrt_connect (OMPL config RRTConnectkConfigDefault)'
              in res_named.message, res_named and res_named.message)
        check("the node takes point clouds from its sensors_3d.yaml's camera topic",
              wait_for(node, lambda: node.count_subscribers(MOVEIT_CLOUD) >= 1, 10.0),
              f'{node.count_subscribers(MOVEIT_CLOUD)} subscribers; see {log_path}')
        goal = PlanPath.Request()
        goal.goal_state = joint_state(ARM, MULTI_GOAL)
        goal.seed = 3
        res = call(node, plan, goal, timeout=30.0)
        if check('~/plan to a goal for all three controllers', res is not None and res.success,
                 res and res.message):
            seconds = duration(res.trajectory)
            done, took = execute_when_discovered(node, execute, seconds)
            check('~/execute moves the three mocks (two trajectory controllers and a '
                  'GripperCommand mock) to the goal',
                  done is not None and done.success and "(gripper_controller's part)"
                  in done.message and at(MULTI_GOAL, 5.0),
                  f'{done and done.message!r}; at {robot()}')
            # Topic mode: the gripper's goal is not waited for, but ~/stop cancels it with
            # the trajectories, and the gripper mock (1 s a command) holds where it is.
            stop = node.create_client(Trigger, f'{name}/stop')
            rc, out = ros2_param('set', name, 'execution_mode', 'topic')
            back = PlanPath.Request()
            back.goal_state = joint_state(ARM, START)
            back.seed = 3
            res = call(node, plan, back, timeout=30.0)
            sent = call(node, execute, Trigger.Request(), timeout=15.0) if res and res.success else None
            wait_for(node, lambda: False, 0.3)
            stopped = call(node, stop, Trigger.Request(), timeout=15.0)
            wait_for(node, lambda: False, 1.5)
            grip = robot()[5] if robot() else None
            check('topic mode: ~/stop cancels the gripper goal sent with the trajectories; the '
                  'gripper mock holds between',
                  sent is not None and sent.success and stopped is not None
                  and 'gripper goal(s) cancelled' in stopped.message
                  and grip is not None and MULTI_GOAL[5] < grip < START[5],
                  f'{sent and sent.message!r}; {stopped and stopped.message!r}; {out}; '
                  f'at {robot()}')
            ros2_param('set', name, 'execution_mode', 'action')
        # A robot reloaded while the node runs: a copy of the package whose SRDF has one
        # more named state; the goal marker's "Plan to named state" menu takes it.
        cfg2 = os.path.join(ws, 'gmp_arm2_moveit_config')
        shutil.copytree(cfg, cfg2)
        srdf2 = os.path.join(cfg2, 'config', 'gmp_arm.srdf')
        with open(srdf2) as f:
            text = f.read()
        tucked = ''.join(f'    <joint name="{j}" value="0.1"/>\n' for j in ARM)
        with open(srdf2, 'w') as f:
            f.write(text.replace('</robot>', f'  <group_state name="tucked" group="arm">\n'
                                             f'{tucked}  </group_state>\n</robot>'))
        markers = node.create_client(GetInteractiveMarkers,
                                     f'{name}/goal_marker/get_interactive_markers')
        rc, out = ros2_param('set', name, 'moveit_config', cfg2)

        def menu():
            r = call(node, markers, GetInteractiveMarkers.Request(), timeout=5.0)
            return [e.title for e in r.markers[0].menu_entries] if r and r.markers else []

        titles = []
        for _ in range(20):
            titles = menu()
            if 'tucked' in titles:
                break
            time.sleep(0.5)
        check('a robot reloaded while the node runs (moveit_config set to another package): '
              "the goal marker's menu takes its SRDF's named states",
              'tucked' in titles, f'{out}; menu {titles}; see {log_path}')
        rc, out = ros2_param('set', name, 'moveit_config', '/no/such_moveit_config')
        time.sleep(1.0)
        res = call(node, plan, req, timeout=30.0)
        text = log_text()
        check('a moveit_config that is not there is refused naming it; the robot is kept',
              'such_moveit_config' in text and 'keeping the robot loaded before' in text
              and res is not None and res.success,
              f'{out}; {res and res.message!r}; see {log_path}')
    finally:
        stop_process(proc, log)
        shutil.rmtree(ws, ignore_errors=True)


def multi_controller_checks(node):
    """A second planner node with controllers_file (a MoveIt moveit_controllers.yaml: an arm
    controller for the first three joints, a wrist controller for the next two, a
    GripperCommand controller for the last), two mock controllers and a fake gripper standing
    in for them: ~/execute sends each its part at once (the gripper where the trajectory
    ends, with the file's max_effort) and answers when all have arrived; topic mode
    publishes the parts on both command topics and sends the gripper its goal;
    ~/execute_trajectory with two joints holds the others where they are; with the wrist
    controller gone nothing is sent and the answer names its action; SIGINT stops them."""
    path = os.path.join(LOG_DIR, 'moveit_controllers.yaml')
    with open(path, 'w') as f:
        f.write(CONTROLLERS_YAML)
    procs = {}

    def start(name, args):
        log = open(os.path.join(LOG_DIR, f'{name}.log'), 'w')
        procs[name] = (subprocess.Popen([ROS2, 'run', 'gpu_motion_planner', *args],
                                        stdout=log, stderr=subprocess.STDOUT,
                                        start_new_session=True), log)

    gripper = FakeGripper(GRIPPER_JOINT, START[5])
    for name, joints, at in (('arm_controller', ARM_JOINTS, START[:3]),
                             ('wrist_controller', WRIST_JOINTS, START[3:5])):
        start(name, ['mock_controller', '--ros-args', '-r', f'__node:={name}',
                     '-p', f'joints:=[{",".join(joints)}]', '-p', f'initial_positions:={at}'])
    start(MULTI, ['planner_node', '--ros-args', '-r', f'__node:={MULTI}',
                  '-p', f'urdf_path:={os.path.join(ROOT, "urdf", "gmp_arm.urdf")}',
                  '-p', f'srdf_path:={os.path.join(ROOT, "urdf", "gmp_arm.srdf")}',
                  '-p', f'scene_path:={os.path.join(ROOT, "config", "default_scene.yaml")}',
                  '-p', f'controllers_file:={path}', '-p', 'backend:=cpu'])
    states = {}

    def heard(m):
        key = tuple(m.name)
        if key in (tuple(ARM_JOINTS), tuple(WRIST_JOINTS), (GRIPPER_JOINT,)):
            states[key] = list(m.position)

    node.create_subscription(JointState, 'joint_states', heard, 100)

    def robot():
        parts = [states.get(k) for k in (tuple(ARM_JOINTS), tuple(WRIST_JOINTS), (GRIPPER_JOINT,))]
        return parts[0] + parts[1] + parts[2] if all(parts) else None

    def at(q, timeout=2.0):
        return wait_for(node, lambda: robot() is not None
                        and max(abs(a - b) for a, b in zip(robot(), q)) < 1e-6, timeout)

    try:
        plan = node.create_client(PlanPath, f'/{MULTI}/plan')
        execute = node.create_client(Trigger, f'/{MULTI}/execute')
        given = node.create_client(ExecuteTrajectory, f'/{MULTI}/execute_trajectory')
        up = plan.wait_for_service(timeout_sec=30.0) and at(START, 20.0)
        if not check('a planner node with controllers_file and two mock controllers come up',
                     up, f'robot at {robot()}; see {LOG_DIR}/{MULTI}.log'):
            return
        rc, out = ros2_param('get', MULTI, 'controllers_file')
        check('controllers_file reaches the node', rc == 0 and out.endswith(path), out)

        def plan_to(goal):
            req = PlanPath.Request()  # from the mocks' joint states
            req.goal_state = joint_state(ARM, goal)
            req.seed = 3
            return call(node, plan, req, timeout=60.0)

        res = plan_to(MULTI_GOAL)
        if not check('~/plan from the two controllers\' joint states', res is not None
                     and res.success, res and res.message):
            return
        seconds = duration(res.trajectory)
        done, took = execute_when_discovered(node, execute, seconds)
        check('~/execute sends each controller its part at once and answers when all have '
              'arrived (each mock refuses joints it does not own; the gripper gets the last '
              "point's position and the file's max_effort)",
              done is not None and done.success and done.message.count('SUCCESSFUL') == 2
              and "(arm_controller's part)" in done.message
              and "(wrist_controller's part)" in done.message
              and "(gripper_controller's part)" in done.message and 'goal reached' in done.message
              and gripper.commands[-1:] == [(MULTI_GOAL[5], 12.5)]
              and took >= seconds * 0.9 and took < 2 * seconds + 5.0 and at(MULTI_GOAL),
              f'{done and done.message!r}; {took:.2f} s for {seconds:.2f} s; at {robot()}; '
              f'gripper commands {gripper.commands}')

        # Two joints given: each controller gets its three, the others held.
        there = JointTrajectory()
        there.joint_names = ['wrist_2_joint', 'shoulder_pan_joint']
        q0 = MULTI_GOAL[:]
        for k, t in enumerate((0.0, 1.0)):
            p = JointTrajectoryPoint()
            p.positions = [q0[4] - 0.2 * k, q0[0] + 0.2 * k]
            p.velocities = [0.0, 0.0]
            p.time_from_start = Duration(seconds=t).to_msg()
            there.points.append(p)
        r = ExecuteTrajectory.Request()
        r.trajectory = there
        done = call(node, given, r, timeout=20.0)
        moved = q0[:]
        moved[0] += 0.2
        moved[4] -= 0.2
        check('~/execute_trajectory naming two joints: both controllers move theirs and hold '
              'the others where they are',
              done is not None and done.success and at(moved), f'{done and done.message!r}; '
              f'at {robot()}, expected {moved}')
        rc, out = ros2_param('set', MULTI, 'execution_mode', 'topic')
        res = plan_to(START)
        done = call(node, execute, Trigger.Request(), timeout=10.0)
        arrived = res is not None and res.success and at(START, duration(res.trajectory) + 5.0)
        check('topic mode: the parts go to both controllers\' command topics, the gripper gets '
              'its goal, and the robot arrives',
              rc == 0 and done is not None and done.success
              and 'arm_controller/joint_trajectory' in done.message
              and 'wrist_controller/joint_trajectory' in done.message
              and 'gripper_controller/gripper_cmd' in done.message and arrived,
              f'{out}; {done and done.message!r}; at {robot()}')

        ros2_param('set', MULTI, 'execution_mode', 'action')
        code = stop_process(*procs.pop('wrist_controller'))
        res = plan_to(MULTI_GOAL)
        done = call(node, execute, Trigger.Request(), timeout=30.0)
        check('with the wrist controller gone ~/execute sends nothing and names its action',
              code == 0 and res is not None and res.success and done is not None
              and not done.success and 'wrist_controller/follow_joint_trajectory' in done.message
              and 'arm_controller/follow_joint_trajectory' not in done.message
              and not wait_for(node, lambda: max(abs(a - b) for a, b in zip(
                  states[tuple(ARM_JOINTS)], START[:3])) > 1e-6, 1.0)
              and max(abs(a - b) for a, b in zip(states[tuple(ARM_JOINTS)], START[:3])) < 1e-6,
              f'mock exit {code}; {done and done.message!r}; arm at {states.get(tuple(ARM_JOINTS))}')
    finally:
        gripper.stop()
        codes = {name: stop_process(*p) for name, p in procs.items()}
        check('the second planner node and the mock controllers stop on SIGINT with code 0',
              all(c == 0 for c in codes.values()), str(codes))


def sample_at(traj, t):
    """Positions of a trajectory at `t` s, straight between its points."""
    pts = traj.points
    times = [p.time_from_start.sec + 1e-9 * p.time_from_start.nanosec for p in pts]
    for i in range(1, len(pts)):
        if t <= times[i]:
            f = (t - times[i - 1]) / max(times[i] - times[i - 1], 1e-12)
            f = min(max(f, 0.0), 1.0)
            return [a + (b - a) * f for a, b in zip(pts[i - 1].positions, pts[i].positions)]
    return list(pts[-1].positions)


def on_scene(node, scenes, ns, present):
    """Waits until ~/scene shows (or no longer shows) markers of namespace `ns`."""
    return wait_for(node, lambda: scenes and any(m.ns == ns for m in scenes[-1].markers)
                    == present, 10.0)


def delete_marker(node, obstacles, scenes, marker):
    """Deletes an obstacle marker and waits until ~/scene no longer shows it."""
    marker.action = Marker.DELETE
    obstacles.publish(MarkerArray(markers=[marker]))
    on_scene(node, scenes, marker.ns, False)


def execute_meanwhile(node, execute, obstacles, marker, after, timeout):
    """Calls ~/execute, publishes `marker` `after` s later and waits up to `timeout` s for the
    answer: (the answer or None, seconds from the call to the answer)."""
    started = time.time()
    running = execute.call_async(Trigger.Request())
    wait_for(node, lambda: False, after)
    obstacles.publish(MarkerArray(markers=[marker]))
    rclpy.spin_until_future_complete(node, running, timeout_sec=timeout)
    return (running.result() if running.done() else None), time.time() - started


def cube_ahead(trajectory, fraction, ns, mid):
    """A 12 cm cube marker `ns`/`mid` where `trajectory` puts the tool at `fraction` of its
    duration, and the same cube for the independent checker."""
    at = ROBOT.link_poses(ARM, sample_at(trajectory, fraction * duration(trajectory)))
    at = at['tool0'][1]
    return cube_marker(ns, mid, at, 0.12), [ic.Obstacle(f'{ns}/{mid}', 'box', [0.06] * 3, at)]


def set_params(settings):
    """Sets each (name, value) with `ros2 param set`, checked; whether all were set."""
    for name, value in settings:
        rc, out = ros2_param('set', NODE, name, value)
        if not check(f'ros2 param set {name} {value}', rc == 0 and 'successful' in out.lower(),
                     out):
            return False
    return True


def goal_request(goal, seed=5):
    """A ~/plan request from the current joint state to `goal` (ARM positions)."""
    req = PlanPath.Request()
    req.goal_state = joint_state(ARM, goal)
    req.seed = seed
    return req


def planned(node, plan, req, what):
    """~/plan's answer to `req`, checked as `what`; None when it did not plan."""
    res = call(node, plan, req, timeout=60.0)
    return res if check(what, res is not None and res.success, res and res.message) else None


def monitoring_checks(node, plan, execute, seen, obstacles, scenes):
    """Execution monitoring with the mock robot at GOAL: a cube put where the tool will be at
    80 % of a running plan stops it early (~/execute names the cube; the robot holds short of
    it); a cube away from the path, put while the next plan runs, is re-checked and the
    robot arrives."""

    req = goal_request(START)  # from the mock's joint state
    res = planned(node, plan, req, '~/plan for execution monitoring')
    if res is None:
        return
    seconds = duration(res.trajectory)
    cube, box = cube_ahead(res.trajectory, 0.8, 'monitor', 1)
    blocked = ic.first_collision(ROBOT, box, res.trajectory)
    del seen[:]
    answer, took = execute_meanwhile(node, execute, obstacles, cube, 0.25 * seconds,
                                     seconds + 10.0)
    wait_for(node, lambda: False, 0.5)
    held = seen[-1] if seen else None
    wait_for(node, lambda: False, 0.5)
    still = seen[-1] if seen else None
    # How far along the plan the robot stopped: the point of the plan nearest to it.
    stop_t = None
    if held is not None:
        ts = [seconds * k / 200 for k in range(201)]
        stop_t = min(ts, key=lambda t: sum((a - b) ** 2 for a, b in
                                           zip(sample_at(res.trajectory, t), held)))
    check('execution monitoring: a cube appearing ahead of the running plan stops it short of '
          'the cube, ~/execute naming it',
          blocked is not None and answer is not None and not answer.success
          and 'stopped' in answer.message and 'no longer valid' in answer.message
          and 'monitor/1' in answer.message and took < 0.8 * seconds
          and held is not None and held == still and stop_t is not None
          and 0.2 * seconds <= stop_t < 0.75 * seconds,
          f'independent {blocked}; {answer and answer.message!r}; answered after {took:.2f} s '
          f'of {seconds:.2f} s; held at {held} ({stop_t} s along the plan)')
    delete_marker(node, obstacles, scenes, cube)

    # Back to GOAL from where it holds; a cube far above the arm appears meanwhile.
    req.goal_state = joint_state(ARM, GOAL)
    res = planned(node, plan, req, '~/plan on from where the monitor stopped it')
    if res is None:
        return
    seconds = duration(res.trajectory)
    far_at = [0.0, 0.0, 2.5]
    far = cube_marker('monitor', 2, far_at, 0.12)
    clear = ic.first_collision(ROBOT, [ic.Obstacle('monitor/2', 'box', [0.06] * 3, far_at)],
                               res.trajectory)
    answer, _ = execute_meanwhile(node, execute, obstacles, far, 0.25 * seconds, seconds + 10.0)
    shown = on_scene(node, scenes, 'monitor/2', True)
    wait_for(node, lambda: False, 0.3)
    end = seen[-1] if seen else None
    check('execution monitoring: a cube away from the path, added while the plan runs, lets '
          'it arrive',
          clear is None and shown and answer is not None and answer.success
          and 'SUCCESSFUL' in answer.message and end is not None
          and max(abs(a - b) for a, b in zip(end, GOAL)) < 1e-6,
          f'independent {clear}; shown {shown}; {answer and answer.message!r}; ends at {end}')
    delete_marker(node, obstacles, scenes, far)


def replanning_checks(node, plan, clients, seen, obstacles, scenes):
    """Replanning (replan_attempts 2, replan_delay 0.2) with the mock robot at GOAL: a cube
    appearing ahead of the running plan stops it; the node plans again from where the robot
    holds to where it was going, sends that and answers SUCCESSFUL once the robot has
    arrived. The new plan on ~/trajectory starts where the robot held and is free of the cube
    for the independent checker, and no joint state the robot passed touches it. A cube over
    the goal instead makes both attempts fail, each named in the answer. A ~/stop while the
    node waits to replan (replan_delay 2) ends the execution: nothing more is planned or
    sent."""
    execute, stop = clients
    trajectories = []
    node.create_subscription(JointTrajectory, f'/{NODE}/trajectory', trajectories.append, 10)
    if not set_params((('replan_attempts', '2'), ('replan_delay', '0.2'))):
        return
    try:
        req = goal_request(START)  # from the mock's joint state
        res = planned(node, plan, req, '~/plan for replanning')
        if res is None:
            return
        seconds = duration(res.trajectory)
        cube, box = cube_ahead(res.trajectory, 0.6, 'replan', 1)
        blocked = ic.first_collision(ROBOT, box, res.trajectory)
        del seen[:]
        del trajectories[:]
        answer, took = execute_meanwhile(node, execute, obstacles, cube, 0.25 * seconds,
                                         3 * seconds + 30.0)
        wait_for(node, lambda: False, 0.3)
        end = seen[-1] if seen else None
        new = trajectories[-1] if trajectories else None
        again = new and ic.first_collision(ROBOT, box, new)
        touched = [q for q in seen if ic.collision(ROBOT, box, ARM, q)]
        # The new plan starts where the robot held: one of the states it passed, short of
        # both ends.
        first = list(new.points[0].positions) if new else None
        held_there = first is not None and any(
            max(abs(a - b) for a, b in zip(q, first)) < 1e-6 for q in seen)
        check('replanning: a cube appearing ahead stops the plan; the node plans around it from '
              'where the robot holds and it arrives where it was going',
              blocked is not None and answer is not None and answer.success
              and 'SUCCESSFUL' in answer.message and 'replanned (attempt 1)' in answer.message
              and 'replan/1' in answer.message and len(trajectories) == 1
              and again is None and not touched and held_there
              and abs(first[0] - GOAL[0]) > 0.05 and abs(first[0] - START[0]) > 0.05
              and end is not None and max(abs(a - b) for a, b in zip(end, START)) < 1e-6,
              f'independent {blocked} before, {again} after; {answer and answer.message!r} '
              f'after {took:.2f} s; {len(trajectories)} new plans from {first} '
              f'(held there: {held_there}); {len(touched)} states in the cube; ends at {end}')
        delete_marker(node, obstacles, scenes, cube)

        # A cube over the goal: the rest is invalid and so is every plan to it.
        req.goal_state = joint_state(ARM, GOAL)
        res = planned(node, plan, req, '~/plan for failed replanning')
        if res is None:
            return
        seconds = duration(res.trajectory)
        over = ROBOT.link_poses(ARM, GOAL)['tool0'][1]
        cube = cube_marker('replan', 2, over, 0.12)
        answer, took = execute_meanwhile(node, execute, obstacles, cube, 0.25 * seconds,
                                         seconds + 30.0)
        message = answer.message if answer else ''
        check('replanning: with a cube over the goal both attempts fail and ~/execute names '
              'each',
              answer is not None and not answer.success and 'stopped' in message
              and 'replanning attempt 1 failed' in message
              and 'replanning attempt 2 failed' in message
              and 'no replanning attempt left (replan_attempts 2)' in message
              and message.count('replan/2') >= 3 and took >= 0.4,
              f'{message!r} after {took:.2f} s')
        delete_marker(node, obstacles, scenes, cube)

        # ~/stop while the node waits to replan.
        ros2_param('set', NODE, 'replan_delay', '2.0')
        res = planned(node, plan, req, '~/plan for a stop before replanning')
        if res is None:
            return
        seconds = duration(res.trajectory)
        cube, _ = cube_ahead(res.trajectory, 0.6, 'replan', 3)
        del trajectories[:]
        started = time.time()
        running = execute.call_async(Trigger.Request())
        wait_for(node, lambda: False, 0.25 * seconds)
        obstacles.publish(MarkerArray(markers=[cube]))
        wait_for(node, lambda: False, 0.8)
        stopped = call(node, stop, Trigger.Request())
        rclpy.spin_until_future_complete(node, running, timeout_sec=15.0)
        took = time.time() - started
        answer = running.result() if running.done() else None
        wait_for(node, lambda: False, 0.5)
        check('replanning: ~/stop while the node waits to replan ends the execution, nothing '
              'more planned or sent',
              stopped is not None and stopped.success and 'no goal was running' in stopped.message
              and answer is not None and not answer.success
              and '~/stop came before replanning' in answer.message
              and 'replan/3' in answer.message and not trajectories and took >= 2.0,
              f'{stopped and stopped.message!r}; {answer and answer.message!r} after {took:.2f} '
              f's; {len(trajectories)} plans published')
        delete_marker(node, obstacles, scenes, cube)
    finally:
        for name, value in (('replan_attempts', '0'), ('replan_delay', '0.5')):
            ros2_param('set', NODE, name, value)
    # On to GOAL from where it holds, for the checks that follow.
    res = call(node, plan, req, timeout=60.0)
    done = res is not None and res.success and call(node, execute, Trigger.Request(),
                                                   timeout=duration(res.trajectory) + 15.0)
    check('~/plan and ~/execute on to the goal after the failed replanning',
          done and done.success, done and done.message)


def topic_replanning_checks(node, plan, obstacles, scenes):
    """Replanning in topic mode (replan_attempts 1, replan_delay 0.2), the robot's joint state
    at START from the test: a cube appearing ahead of the plan just sent makes the node send
    an empty trajectory, then a new plan from the joint state to the same goal, free of the
    cube for the independent checker."""
    sent = []
    node.create_subscription(JointTrajectory, '/joint_trajectory_controller/joint_trajectory',
                             sent.append, 10)
    states = node.create_publisher(JointState, 'joint_states', 10)
    execute = node.create_client(Trigger, f'/{NODE}/execute')
    settings = (('execution_mode', 'topic', 'action'), ('replan_attempts', '1', '0'),
                ('replan_delay', '0.2', '0.5'))
    if not set_params([(name, value) for name, value, _ in settings]):
        return
    try:
        for _ in range(5):
            states.publish(joint_state(ARM, START))
            wait_for(node, lambda: False, 0.1)
        req = goal_request(GOAL)  # from the joint state just published
        res = planned(node, plan, req, '~/plan for replanning in topic mode')
        if res is None:
            return
        seconds = duration(res.trajectory)
        cube, box = cube_ahead(res.trajectory, 0.6, 'replan', 4)
        wait_for(node, lambda: False, 1.0)  # discovery of the controller topic subscription
        del sent[:]
        answer, _ = execute_meanwhile(node, execute, obstacles, cube, 0.25 * seconds, 10.0)
        wait_for(node, lambda: len(sent) >= 3, 10.0)
        kinds = [len(t.points) for t in sent]
        new = sent[2] if len(sent) >= 3 and not sent[1].points and sent[2].points else None
        first = list(new.points[0].positions) if new else None
        last = list(new.points[-1].positions) if new else None
        check('replanning (topic): a cube ahead of the plan just sent makes the node send an '
              'empty trajectory, then a plan from the joint state around it to the same goal',
              answer is not None and answer.success and new is not None
              and ic.first_collision(ROBOT, box, res.trajectory) is not None
              and ic.first_collision(ROBOT, box, new) is None
              and max(abs(a - b) for a, b in zip(first, START)) < 1e-6
              and max(abs(a - b) for a, b in zip(last, GOAL)) < 1e-6,
              f'{answer and answer.message!r}; points of what was sent: {kinds}; the new plan '
              f'from {first} to {last}')
        delete_marker(node, obstacles, scenes, cube)
    finally:
        for name, _, value in settings:
            ros2_param('set', NODE, name, value)


def execute_trajectory_checks(node, seen):
    """~/execute_trajectory with the mock robot at GOAL: the two trajectories of one
    ~/plan_batch answer (GOAL to the middle and back, neither published nor kept by the node)
    move the robot there and back; one whose times do not increase, and one that does not
    start where the robot is, are refused by name and the robot stays."""
    batch = node.create_client(PlanBatch, f'/{NODE}/plan_batch')
    given = node.create_client(ExecuteTrajectory, f'/{NODE}/execute_trajectory')
    if not check('~/execute_trajectory appears', given.wait_for_service(timeout_sec=10.0)):
        return
    req = PlanBatch.Request()
    req.start_states = [joint_state(ARM, GOAL), joint_state(ARM, mid_config())]
    req.goal_states = [joint_state(ARM, mid_config()), joint_state(ARM, GOAL)]
    req.seed = 5
    res = call(node, batch, req, timeout=60.0)
    if not check('~/plan_batch there and back', res is not None and res.solved == 2,
                 res and res.message):
        return
    there, back = res.trajectories

    def send(trajectory):
        r = ExecuteTrajectory.Request()
        r.trajectory = trajectory
        return call(node, given, r, timeout=duration(trajectory) + 15.0)

    def at(q):
        wait_for(node, lambda: False, 0.3)
        return bool(seen) and max(abs(a - b) for a, b in zip(seen[-1], q)) < 1e-6

    done = send(there)
    check('~/execute_trajectory moves the mock robot along a trajectory of a ~/plan_batch '
          'answer and answers when it has arrived',
          done is not None and done.success and 'SUCCESSFUL' in done.message
          and at(mid_config()), f'{done and done.message!r}; at {seen[-1] if seen else None}')
    again = send(there)
    check('~/execute_trajectory refuses a trajectory that does not start where the robot is',
          again is not None and not again.success
          and "not at the trajectory's start" in again.message and at(mid_config()),
          again and again.message)
    late = copy.deepcopy(back)
    late.points[-1].time_from_start = late.points[-2].time_from_start
    refused = send(late)
    check('~/execute_trajectory refuses times that do not increase, naming the point; the '
          'robot stays',
          refused is not None and not refused.success
          and f"point {len(late.points) - 1}'s time_from_start" in refused.message
          and at(mid_config()), refused and refused.message)
    done = send(back)
    check('~/execute_trajectory brings it back',
          done is not None and done.success and at(GOAL), done and done.message)



class MoveGoal:
    """One ~/move goal sent from the test node: its feedback states and messages, as they
    came, and its result."""

    def __init__(self, node, client, goal):
        self.node = node
        self.feedback = []
        self.started = time.time()
        sent = client.send_goal_async(
            goal, feedback_callback=lambda f: self.feedback.append(
                (f.feedback.state, f.feedback.message)))
        rclpy.spin_until_future_complete(node, sent, timeout_sec=10.0)
        self.handle = sent.result() if sent.done() else None
        self.result_future = self.handle.get_result_async() if self.handle else None
        self.took = None

    def states(self):
        return [state for state, _ in self.feedback]

    def result(self, timeout):
        """(status, result), or (None, None) when it did not end within `timeout` s."""
        if self.result_future is None:
            return None, None
        rclpy.spin_until_future_complete(self.node, self.result_future, timeout_sec=timeout)
        if not self.result_future.done():
            return None, None
        self.took = time.time() - self.started
        wait_for(self.node, lambda: False, 0.1)  # feedback still on its way
        got = self.result_future.result()
        return got.status, got.result

    def cancel(self):
        done = self.handle.cancel_goal_async()
        rclpy.spin_until_future_complete(self.node, done, timeout_sec=10.0)
        return done.result() if done.done() else None


def move_goal(positions, seed=5, plan_only=False):
    goal = Move.Goal()
    goal.goal_state = joint_state(ARM, positions)
    goal.seed = seed
    goal.plan_only = plan_only
    return goal


def move_checks(node, seen, obstacles, scenes):
    """~/move (plan and execute in one action goal) with the mock robot at GOAL: plan_only
    plans and publishes without moving it; a goal plans from its joint state and moves it
    there, reporting PLANNING then EXECUTING, while ~/execute and a second goal are refused;
    cancelling a goal halfway leaves the robot held between the two (PREEMPTED); a cube
    appearing ahead stops it (MOTION_PLAN_INVALIDATED_BY_ENVIRONMENT_CHANGE, naming the cube)
    and, with replan_attempts, it goes around the cube, executed_trajectory the new plan; a
    goal with an unknown joint is aborted by name, nothing sent; the goal marker's "Execute
    the last plan" runs a plan of ~/plan. Ends with the robot at GOAL."""
    client = ActionClient(node, Move, f'/{NODE}/move')
    execute = node.create_client(Trigger, f'/{NODE}/execute')
    trajectories = []
    node.create_subscription(JointTrajectory, f'/{NODE}/trajectory', trajectories.append, 10)
    if not check('~/move appears', client.wait_for_server(timeout_sec=10.0)):
        return

    def at(q):
        wait_for(node, lambda: False, 0.3)
        return bool(seen) and max(abs(a - b) for a, b in zip(seen[-1], q)) < 1e-6

    def executing(goal):
        """The plan of a goal that executes, once both its EXECUTING feedback and its plan on
        ~/trajectory came (either may be handled first); None (the goal cancelled) if not."""
        if wait_for(node, lambda: 'EXECUTING' in goal.states() and trajectories, 60.0):
            return trajectories[-1]
        goal.cancel()
        goal.result(15.0)
        return None

    mid = mid_config()
    del trajectories[:]
    goal = MoveGoal(node, client, move_goal(mid, plan_only=True))
    status, result = goal.result(60.0)
    wait_for(node, lambda: bool(trajectories), 2.0)
    check('~/move plan_only plans from the joint state and publishes, the robot staying',
          status == GoalStatus.STATUS_SUCCEEDED and result.success
          and result.error_code == Move.Result.SUCCESS and result.planned_trajectory.points
          and not result.executed_trajectory.points and goal.states() == ['PLANNING']
          and len(trajectories) == 1
          and len(trajectories[0].points) == len(result.planned_trajectory.points)
          and max(abs(a - b) for a, b in
                  zip(result.planned_trajectory.points[0].positions, GOAL)) < 1e-6
          and at(GOAL),
          f'status {status}; {result and result.message!r}; feedback {goal.feedback}; '
          f'{len(trajectories)} published')

    named = Move.Goal()
    named.goal_name = 'home'
    named.plan_only = True
    status, result = MoveGoal(node, client, named).result(60.0)
    end = list(result.planned_trajectory.points[-1].positions) if result and result.success \
        else None
    check("~/move plan_only with goal_name 'home' plans to the SRDF's named state",
          status == GoalStatus.STATUS_SUCCEEDED and end is not None
          and max(abs(a) for a in end) < 1e-9 and at(GOAL),
          f'status {status}; {result and result.message!r}; ends at {end}')

    del trajectories[:]
    goal = MoveGoal(node, client, move_goal(mid))
    executing(goal)
    busy = call(node, execute, Trigger.Request(), timeout=10.0)
    second = MoveGoal(node, client, move_goal(GOAL))
    second_status, second_result = second.result(10.0)
    status, result = goal.result(60.0)
    check('~/move plans and moves the mock robot there, feedback PLANNING then EXECUTING',
          status == GoalStatus.STATUS_SUCCEEDED and result.success
          and result.error_code == Move.Result.SUCCESS and 'SUCCESSFUL' in result.message
          and goal.states() == ['PLANNING', 'EXECUTING']
          and len(result.executed_trajectory.points) == len(result.planned_trajectory.points)
          and at(mid),
          f'status {status}; {result and result.message!r}; feedback {goal.feedback}; '
          f'at {seen[-1] if seen else None}')
    check('while a ~/move goal executes, ~/execute and a second goal are refused',
          busy is not None and not busy.success and 'an execution is running' in busy.message
          and second_status == GoalStatus.STATUS_ABORTED
          and second_result.error_code == Move.Result.FAILURE
          and 'an execution is running' in second_result.message
          and not second_result.planned_trajectory.points,
          f'{busy and busy.message!r}; second: status {second_status}, '
          f'{second_result and second_result.message!r}')

    # Cancelled halfway back to GOAL.
    del trajectories[:]
    goal = MoveGoal(node, client, move_goal(GOAL))
    first = executing(goal)
    if not check('~/move published the plan it executes', first is not None):
        return
    wait_for(node, lambda: False, duration(first) / 2)
    cancelling = goal.cancel()
    status, result = goal.result(15.0)
    wait_for(node, lambda: False, 0.5)
    held = seen[-1] if seen else None
    wait_for(node, lambda: False, 0.5)
    still = seen[-1] if seen else None
    check('cancelling a ~/move goal halfway stops the robot between the two (PREEMPTED)',
          cancelling is not None and len(cancelling.goals_canceling) == 1
          and status == GoalStatus.STATUS_CANCELED and not result.success
          and result.error_code == Move.Result.PREEMPTED and 'cancelled' in result.message
          and held is not None and held == still
          and min(GOAL[0], mid[0]) + 0.02 < held[0] < max(GOAL[0], mid[0]) - 0.02,
          f'status {status}; {result and result.message!r}; held at {held}')

    # A cube ahead stops it; replanning takes it around.
    for attempts in (0, 1):
        if not set_params((('replan_attempts', str(attempts)), ('replan_delay', '0.2'))):
            return
        if attempts == 1:
            # From START, so the way to GOAL is long enough for a cube at 60 % of it to leave
            # GOAL free (from where the stop before held the robot it may be short).
            back = MoveGoal(node, client, move_goal(START))
            back_status, _ = back.result(60.0)
            if not check('~/move back to START before the replanning check',
                         back_status == GoalStatus.STATUS_SUCCEEDED and at(START),
                         f'status {back_status}; at {seen[-1] if seen else None}'):
                return
        del trajectories[:]
        target = START if attempts == 0 else GOAL
        # At a third of the speed limits: a short trajectory at full speed leaves the node
        # too little time on a loaded machine to stop before the cube (it once held inside
        # it, 0.02 s short, and replanning then started in collision).
        slow = move_goal(target)
        slow.max_velocity_scaling_factor = 0.3
        slow.max_acceleration_scaling_factor = 0.3
        goal = MoveGoal(node, client, slow)
        first = executing(goal)
        if not check('~/move published the plan it executes', first is not None):
            return
        cube, box = cube_ahead(first, 0.6, 'move', attempts + 1)
        wait_for(node, lambda: False, 0.2 * duration(first))
        obstacles.publish(MarkerArray(markers=[cube]))
        status, result = goal.result(3 * duration(first) + 30.0)
        end = seen[-1] if seen else None
        name = f'move/{attempts + 1}'
        if attempts == 0:
            check('~/move: a cube appearing ahead stops the robot, '
                  'MOTION_PLAN_INVALIDATED_BY_ENVIRONMENT_CHANGE naming the cube',
                  status == GoalStatus.STATUS_ABORTED and not result.success
                  and result.error_code
                  == Move.Result.MOTION_PLAN_INVALIDATED_BY_ENVIRONMENT_CHANGE
                  and name in result.message and ic.first_collision(ROBOT, box, first)
                  and goal.states() == ['PLANNING', 'EXECUTING'] and end is not None
                  and max(abs(a - b) for a, b in zip(end, START)) > 0.05,
                  f'status {status}; {result and result.message!r}; feedback {goal.states()}; '
                  f'held at {end}')
        else:
            new = result.executed_trajectory if result else None
            check('~/move with replan_attempts: stopped by a cube, replanned around it to the '
                  'goal; executed_trajectory is the new plan, free of the cube',
                  status == GoalStatus.STATUS_SUCCEEDED and result.success
                  and goal.states() == ['PLANNING', 'EXECUTING', 'WAITING', 'PLANNING',
                                        'EXECUTING']
                  and len(result.planned_trajectory.points) == len(first.points)
                  and new.points and ic.first_collision(ROBOT, box, new) is None
                  and ic.first_collision(ROBOT, box, first) is not None
                  and max(abs(a - b) for a, b in zip(new.points[-1].positions, GOAL)) < 1e-6
                  and end is not None and max(abs(a - b) for a, b in zip(end, GOAL)) < 1e-6,
                  f'status {status}; {result and result.message!r}; feedback {goal.states()}; '
                  f'ends at {end}')
        delete_marker(node, obstacles, scenes, cube)
    for name, value in (('replan_attempts', '0'), ('replan_delay', '0.5')):
        ros2_param('set', NODE, name, value)

    bad = move_goal(mid)
    bad.goal_state = joint_state(ARM + ['no_such_joint'], mid + [0.0])
    del trajectories[:]
    goal = MoveGoal(node, client, bad)
    status, result = goal.result(30.0)
    check('~/move with an unknown joint is aborted naming it, nothing planned or sent',
          status == GoalStatus.STATUS_ABORTED and not result.success
          and result.error_code == PlanPath.Response.INVALID_GOAL_CONSTRAINTS
          and 'no_such_joint' in result.message and not result.executed_trajectory.points
          and not trajectories and at(GOAL),
          f'status {status}; error code {result and result.error_code}; '
          f'{result and result.message!r}')

    # The goal marker's "Execute the last plan" sends the plan ~/plan just published to the
    # controller, as ~/execute does; a ~/move goal brings the robot back.
    plan = node.create_client(PlanPath, f'/{NODE}/plan')
    marker = node.create_publisher(InteractiveMarkerFeedback, f'/{NODE}/goal_marker/feedback',
                                   100)
    res = call(node, plan, goal_request(mid), timeout=60.0)
    wait_for(node, lambda: marker.get_subscription_count() > 0, 10.0)
    marker.publish(InteractiveMarkerFeedback(
        client_id='test', marker_name='goal', menu_entry_id=3,
        event_type=InteractiveMarkerFeedback.MENU_SELECT))
    arrived = wait_for(node, lambda: bool(seen)
                       and max(abs(a - b) for a, b in zip(seen[-1], mid)) < 1e-6, 30.0)
    check('the goal marker\'s "Execute the last plan" moves the robot along the plan',
          res is not None and res.success and arrived,
          f'{res and res.message!r}; at {seen[-1] if seen else None}')
    # The robot reaches the plan's end a moment before the controller's result reaches the
    # node; until then the node rightly refuses a new motion, so ask again for a few seconds.
    deadline = time.monotonic() + 15.0
    while True:
        status, result = MoveGoal(node, client, move_goal(GOAL)).result(60.0)
        busy = (status == GoalStatus.STATUS_ABORTED and result is not None
                and 'an execution is running' in result.message)
        if not busy or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    check('~/move back to GOAL', status == GoalStatus.STATUS_SUCCEEDED and at(GOAL),
          f'status {status}; {result and result.message!r}')


def kinematics_checks(node):
    """~/compute_fk against the test's own forward kinematics, ~/compute_ik reaching an FK
    pose collision free (checked by the same kinematics and the independent checker),
    NO_IK_SOLUTION out of reach, bad requests refused by name."""
    fk = node.create_client(ComputeFk, f'/{NODE}/compute_fk')
    ik = node.create_client(ComputeIk, f'/{NODE}/compute_ik')
    if not check('~/compute_fk and ~/compute_ik appear',
                 fk.wait_for_service(timeout_sec=10.0) and ik.wait_for_service(timeout_sec=10.0)):
        return
    q = [0.4, -1.0, 1.3, -0.6, -1.2, 0.3]
    req = ComputeFk.Request()
    req.state = joint_state(ARM, q)
    req.link_names = ['tool0', 'forearm_link']
    res = call(node, fk, req)
    r, t = ROBOT.link_poses(ARM, q)['tool0']

    def close(pose, r, t, tol):
        p, o = pose.position, pose.orientation
        m = ic._quat(o.x, o.y, o.z, o.w)
        return (max(abs(a - b) for a, b in zip([p.x, p.y, p.z], t)) < tol
                and max(abs(m[i][j] - r[i][j]) for i in range(3) for j in range(3)) < 10 * tol)

    ok = check('~/compute_fk gives the tool pose of the test\'s own kinematics',
               res is not None and res.success and list(res.link_names) == req.link_names
               and res.poses[0].header.frame_id == 'world' and close(res.poses[0].pose, r, t, 1e-9),
               res and f'{res.message!r} {res.poses[0].pose if res.poses else None}')
    if not ok:
        return
    ireq = ComputeIk.Request()
    ireq.pose = res.poses[0]
    ireq.seed_state = joint_state(ARM, [0.0] * 6)
    ireq.avoid_collisions = True
    ires = call(node, ik, ireq, timeout=30.0)
    if check('~/compute_ik reaches the pose from another seed',
             ires is not None and ires.success and ires.error_code == 1
             and list(ires.solution.name) == ARM,
             ires and f'code={ires.error_code} {ires.message!r}'):
        sol = list(ires.solution.position)
        r2, t2 = ROBOT.link_poses(ARM, sol)['tool0']
        check('the IK solution puts the tool at the pose (test\'s own kinematics)',
              max(abs(a - b) for a, b in zip(t, t2)) < 2e-4
              and max(abs(r[i][j] - r2[i][j]) for i in range(3) for j in range(3)) < 3e-3,
              f'{t} vs {t2}')
        check('the IK solution is collision free (independent check)',
              ic.collision(ROBOT, SCENE, ARM, sol) is None)
    ireq.pose.pose.position.z = 5.0
    ires = call(node, ik, ireq, timeout=30.0)
    check('~/compute_ik out of reach: NO_IK_SOLUTION',
          ires is not None and not ires.success and ires.error_code == -31,
          ires and f'code={ires.error_code} {ires.message!r}')
    ireq.attempts, ireq.timeout = 10000, 1e-9
    ires = call(node, ik, ireq, timeout=30.0)
    check('~/compute_ik out of reach with a timeout stops after its first batch of starts',
          ires is not None and not ires.success and ires.error_code == -31
          and '16 starting configurations tried; the search stopped at the timeout'
          in ires.message, ires and f'code={ires.error_code} {ires.message!r}')
    ireq.timeout = -1.0
    ires = call(node, ik, ireq, timeout=30.0)
    check('~/compute_ik with a negative timeout is refused naming it',
          ires is not None and not ires.success and 'timeout' in ires.message,
          ires and f'code={ires.error_code} {ires.message!r}')
    ireq.attempts, ireq.timeout = 0, 0.0
    ireq.link_name = 'gripper'
    ires = call(node, ik, ireq, timeout=30.0)
    check('~/compute_ik for an unknown link is refused naming it',
          ires is not None and not ires.success and 'gripper' in ires.message,
          ires and ires.message)
    ireq.link_name = ''
    ireq.group_name = 'no_such_group'
    ires = call(node, ik, ireq, timeout=30.0)
    check('~/compute_ik for an unknown group_name: INVALID_GROUP_NAME naming it',
          ires is not None and not ires.success and ires.error_code == -15
          and 'no_such_group' in ires.message, ires and f'code={ires.error_code} {ires.message!r}')
    req.link_names = ['nowhere']
    res = call(node, fk, req)
    check('~/compute_fk of an unknown link is refused naming it',
          res is not None and not res.success and 'nowhere' in res.message, res and res.message)


def attach_checks(node, plan, obstacles, scenes):
    """~/attach_object and ~/detach_object: a bar held by the tool is carried by every plan
    (independently re-checked with the bar), shown on ~/scene locked to the tool, keeps a
    goal out where only the bar would hit; an obstacle of the scene picked up and dropped;
    a bar put back into the scene; bad requests refused by name."""
    attach = node.create_client(AttachObject, f'/{NODE}/attach_object')
    detach = node.create_client(DetachObject, f'/{NODE}/detach_object')
    if not check('~/attach_object and ~/detach_object appear',
                 attach.wait_for_service(timeout_sec=10.0)
                 and detach.wait_for_service(timeout_sec=10.0)):
        return
    # The latest joint state (START, published earlier) holds the objects.
    bar_size, bar_offset = (0.04, 0.04, 0.3), (0.0, 0.0, 0.15)

    def attach_request(object_id, link='tool0', frame='tool0', touch=('flange_link',)):
        req = AttachObject.Request()
        req.object_id, req.link_name = object_id, link
        req.touch_links = list(touch)
        req.shape_type = Marker.CUBE
        req.scale.x, req.scale.y, req.scale.z = bar_size
        req.header.frame_id = frame
        req.pose.position.z = bar_offset[2]
        req.pose.orientation.w = 1.0
        return req

    res = call(node, attach, attach_request('carried/1'))
    check('~/attach_object attaches a new 30 cm bar to the tool',
          res is not None and res.success and 'carried/1' in res.message
          and 'tool0' in res.message, res and f'{res.success} {res.message!r}')
    shown = wait_for(node, lambda: any(
        m.ns == 'attached' and m.header.frame_id == 'tool0' and m.frame_locked
        for s in scenes[-1:] for m in s.markers), 10.0)
    check('~/scene shows the carried bar locked to the tool frame', shown)

    carrying = ROBOT.carrying('tool0', bar_size, bar_offset)
    req = PlanPath.Request()
    req.start_state = joint_state(ARM, START)
    req.goal_state = joint_state(ARM, GOAL)
    req.seed = 3
    res = call(node, plan, req, timeout=60.0)
    check('~/plan carrying the bar plans',
          res is not None and res.success, res and f'code={res.error_code} message={res.message!r}')
    if res is not None and res.success:
        hit = ic.first_collision(carrying, SCENE, res.trajectory)
        check('the plan is collision free with the bar (independent re-check)', hit is None,
              f'first hit {hit}' if hit else f'{len(res.trajectory.points)} points')

    # A ball where only the bar is at the goal: the goal is in collision while it is carried.
    r, t = ROBOT.link_poses(ARM, GOAL)['tool0']
    tip = [t[i] + r[i][2] * 0.25 for i in range(3)]
    ball = cube_marker('bar_blocker', 1, tip, 0.06)
    ball.type = Marker.SPHERE
    obstacles.publish(MarkerArray(markers=[ball]))
    wait_for(node, lambda: any(m.ns == 'bar_blocker/1' for s in scenes[-1:]
                               for m in s.markers), 10.0)
    blocked = [ic.Obstacle('bar_blocker/1', 'sphere', [0.03], tip)]
    check('the ball touches the carried bar at the goal but not the arm (independent check)',
          ic.collision(carrying, blocked, ARM, GOAL) is not None
          and ic.collision(ROBOT, blocked, ARM, GOAL) is None)
    res = call(node, plan, req, timeout=60.0)
    check('~/plan to a goal where only the carried bar hits: GOAL_IN_COLLISION',
          res is not None and not res.success
          and res.error_code == PlanPath.Response.GOAL_IN_COLLISION,
          res and f'code={res.error_code} message={res.message!r}')

    # Put the bar down at the start (the latest joint state): it joins the scene there.
    dreq = DetachObject.Request()
    dreq.object_id = 'carried/1'
    res = call(node, detach, dreq)
    check('~/detach_object puts the bar back into the scene',
          res is not None and res.success and 'back in the scene' in res.message,
          res and f'{res.success} {res.message!r}')
    check('~/scene shows the bar as an obstacle, nothing attached',
          wait_for(node, lambda: any(m.ns == 'carried/1' for s in scenes[-1:] for m in s.markers)
                   and not any(m.ns == 'attached' for s in scenes[-1:] for m in s.markers), 10.0))
    res = call(node, plan, req, timeout=60.0)
    check('~/plan with the bar in the scene where the tool holds it: START_STATE_IN_COLLISION',
          res is not None and res.error_code == PlanPath.Response.START_STATE_IN_COLLISION,
          res and f'code={res.error_code} message={res.message!r}')
    placed = cube_marker('carried', 1, (0, 0, 0), 0.1)
    for marker in (ball, placed):
        marker.action = Marker.DELETE
    obstacles.publish(MarkerArray(markers=[ball, placed]))
    wait_for(node, lambda: not any(m.ns in ('carried/1', 'bar_blocker/1')
                                   for s in scenes[-1:] for m in s.markers), 10.0)

    # An obstacle of the scene picked up, then dropped.
    r, t = ROBOT.link_poses(ARM, START)['tool0']
    front = [t[i] + r[i][2] * 0.06 for i in range(3)]
    obstacles.publish(MarkerArray(markers=[cube_marker('pick', 1, front, 0.05)]))
    wait_for(node, lambda: any(m.ns == 'pick/1' for s in scenes[-1:] for m in s.markers), 10.0)
    res = call(node, attach, attach_request('pick/1', link='', frame=''))
    check('~/attach_object picks an obstacle of the scene up with the group tip',
          res is not None and res.success and 'taken from the scene' in res.message
          and 'tool0' in res.message, res and f'{res.success} {res.message!r}')
    check('the picked obstacle leaves ~/scene and is shown attached',
          wait_for(node, lambda: not any(m.ns == 'pick/1' for s in scenes[-1:] for m in s.markers)
                   and any(m.ns == 'attached' for s in scenes[-1:] for m in s.markers), 10.0))
    dreq.object_id, dreq.remove = 'pick/1', True
    res = call(node, detach, dreq)
    check('~/detach_object with remove drops it',
          res is not None and res.success and 'removed' in res.message
          and 'carries nothing' in res.message, res and f'{res.success} {res.message!r}')
    check('nothing attached and no pick/1 on ~/scene after the drop',
          wait_for(node, lambda: not any(m.ns in ('attached', 'pick/1')
                                         for s in scenes[-1:] for m in s.markers), 10.0))

    res = call(node, attach, attach_request('x/1', link='gripper_link'))
    check('~/attach_object to an unknown link is refused naming it',
          res is not None and not res.success and 'gripper_link' in res.message,
          res and f'{res.success} {res.message!r}')
    res = call(node, attach, attach_request('y/1', touch=('finger_link',)))
    check('~/attach_object with an unknown touch link is refused naming it',
          res is not None and not res.success and 'finger_link' in res.message,
          res and f'{res.success} {res.message!r}')
    dreq.object_id, dreq.remove = 'ghost/1', False
    res = call(node, detach, dreq)
    check('~/detach_object of an object not attached is refused naming it',
          res is not None and not res.success and 'ghost/1' in res.message
          and 'not attached' in res.message, res and f'{res.success} {res.message!r}')
    res = call(node, plan, req, timeout=60.0)
    check('~/plan plans again after the attach requests',
          res is not None and res.success, res and f'code={res.error_code} message={res.message!r}')


def scene_file_checks(node, scenes):
    """~/save_scene, ~/load_scene and the scene_path parameter: the planning scene written to
    a file (the independent checker reads it back) and returned as text; replaced by a scene
    text whose box holds the tool (~/check_state finds the contact the independent check
    finds), joined by a MoveIt PlanningScene YAML, restored from the file; scene_path loads a
    file at run time and a missing one is refused; bad requests change nothing."""
    save = node.create_client(SaveScene, f'/{NODE}/save_scene')
    load = node.create_client(LoadScene, f'/{NODE}/load_scene')
    check_state = node.create_client(CheckState, f'/{NODE}/check_state')
    if not check('~/save_scene and ~/load_scene appear',
                 save.wait_for_service(timeout_sec=10.0)
                 and load.wait_for_service(timeout_sec=10.0)
                 and check_state.wait_for_service(timeout_sec=10.0)):
        return

    def shown():
        # (The DELETEALL marker that opens each message has no namespace.)
        return sorted({m.ns for m in scenes[-1].markers} - {'attached', ''}) if scenes else []

    def current_state():
        # The latest joint state is START (published earlier).
        return call(node, check_state, CheckState.Request())

    before = shown()
    folder = tempfile.mkdtemp(prefix='gmp_scene_')
    path = os.path.join(folder, 'cell.yaml')
    res = call(node, save, SaveScene.Request(path=path))
    text = open(path).read() if os.path.exists(path) else ''
    saved = ic.load_scene(path) if text else []
    check('~/save_scene writes the planning scene: the obstacles ~/scene shows, the text '
          'returned as written',
          res is not None and res.success and path in res.message and text == res.scene_yaml
          and sorted(o.name for o in saved) == before and 'table' in before,
          res and f'{res.message!r}; file {sorted(o.name for o in saved)}; scene {before}')
    res = call(node, save, SaveScene.Request())
    check('~/save_scene without a path returns the same text and writes nothing',
          res is not None and res.success and res.scene_yaml == text
          and 'not written' in res.message and os.listdir(folder) == ['cell.yaml'],
          res and f'{res.message!r} {os.listdir(folder)}')

    tool = ROBOT.link_poses(ARM, START)['tool0'][1]
    box = [ic.Obstacle('holder', 'box', [0.06] * 3, tool)]
    hit = ic.collision(ROBOT, box, ARM, START)
    holder = ('frame: world\nobstacles:\n  - id: holder\n    box: {size: [0.12, 0.12, 0.12]}\n'
              f'    pose: {{position: [{tool[0]!r}, {tool[1]!r}, {tool[2]!r}]}}\n')
    res = call(node, load, LoadScene.Request(scene_yaml=holder))
    check('~/load_scene of a scene text replaces the planning scene',
          res is not None and res.success and res.obstacles == 1 and res.attached == 0
          and 'replacing the scene' in res.message, res and res.message)
    check('~/scene shows only the loaded box', wait_for(node, lambda: shown() == ['holder'], 10.0),
          f'{shown()}')
    res = current_state()
    check('~/check_state at START: the loaded box holds the tool, as the independent check '
          'finds', hit is not None and res is not None and res.success and not res.valid
          and any("obstacle 'holder'" in c for c in res.contacts),
          f'independent {hit}; node {res and list(res.contacts)}')

    moveit = ('world:\n  collision_objects:\n    - id: post\n      header: {frame_id: world}\n'
              '      primitives:\n        - {type: cylinder, dimensions: [0.5, 0.03]}\n'
              '      primitive_poses:\n        - position: [-0.6, 0.6, 0.25]\n')
    res = call(node, load, LoadScene.Request(scene_yaml=moveit, merge=True))
    check('~/load_scene merges a MoveIt PlanningScene YAML',
          res is not None and res.success and res.obstacles == 2 and 'merged by id' in res.message
          and wait_for(node, lambda: shown() == ['holder', 'post'], 10.0),
          res and f'{res.message!r} {shown()}')

    for req, needle, what in (
            (LoadScene.Request(path='/nonexistent/cell.yaml'), '/nonexistent/cell.yaml',
             'a missing file'),
            (LoadScene.Request(path=path, scene_yaml=holder), 'not both', 'path and text'),
            (LoadScene.Request(scene_yaml=holder.replace('frame: world', 'frame: nowhere')),
             "frame 'nowhere'", 'an unknown frame')):
        res = call(node, load, req)
        check(f'~/load_scene of {what} is refused naming it; the scene is kept',
              res is not None and not res.success and needle in res.message
              and res.obstacles == 2, res and f'{res.message!r} {res.obstacles}')

    res = call(node, load, LoadScene.Request(path=path))
    check('~/load_scene of the saved file restores the planning scene',
          res is not None and res.success and res.obstacles == len(before)
          and wait_for(node, lambda: shown() == before, 10.0),
          res and f'{res.message!r} {shown()}')
    res = current_state()
    check('~/check_state at START: valid again', res is not None and res.success and res.valid,
          res and f'{list(res.contacts)} {res.message!r}')

    # MoveIt's .scene text (what the RViz MotionPlanning panel exports and imports).
    moveit_path = os.path.join(folder, 'cell.scene')
    res = call(node, save, SaveScene.Request(path=moveit_path))
    text = open(moveit_path).read() if os.path.exists(moveit_path) else ''
    check('~/save_scene to a .scene path writes MoveIt .scene text, one object per obstacle',
          res is not None and res.success and 'MoveIt .scene' in res.message
          and text.startswith('cell\n') and text.rstrip().endswith('\n.')
          and sorted(line[2:] for line in text.splitlines() if line.startswith('* ')) == before,
          res and res.message)
    call(node, load, LoadScene.Request(scene_yaml=holder))
    res = call(node, load, LoadScene.Request(path=moveit_path))
    check('~/load_scene of that .scene file restores the planning scene',
          res is not None and res.success and res.obstacles == len(before)
          and wait_for(node, lambda: shown() == before, 10.0),
          res and f'{res.message!r} {shown()}')

    # The scene_path parameter: a file loaded when set; a missing one refused.
    holder_path = os.path.join(folder, 'holder.yaml')
    with open(holder_path, 'w') as f:
        f.write(holder)
    rc, out = ros2_param('set', NODE, 'scene_path', holder_path)
    check('ros2 param set scene_path loads the file (~/scene shows its box)',
          rc == 0 and 'successful' in out.lower()
          and wait_for(node, lambda: shown() == ['holder'], 10.0), f'{out} {shown()}')
    rc, out = ros2_param('set', NODE, 'scene_path', '/nonexistent/scene.yaml')
    time.sleep(1.0)
    rc, out = ros2_param('get', NODE, 'scene_path')
    check('a scene_path that cannot be loaded is refused (value and scene stay)',
          rc == 0 and out.endswith(holder_path) and shown() == ['holder'], f'{out} {shown()}')
    rc, out = ros2_param('set', NODE, 'scene_path', path)
    check('scene_path set to the saved file restores the planning scene',
          rc == 0 and wait_for(node, lambda: shown() == before, 10.0), f'{out} {shown()}')


def allowed_collision_checks(node, plan, scenes):
    """~/allow_collisions: a box around the tool at START puts the hand in collision; allowed
    to touch it, the hand's links make START valid and a plan from there succeeds whose
    trajectory the independent check finds free but for the allowed contacts; taken back,
    START is in collision again; a link pair the model allows can be checked again; an
    unknown name is refused naming it, with the entries kept; reset drops them all."""
    allow = node.create_client(AllowCollisions, f'/{NODE}/allow_collisions')
    load = node.create_client(LoadScene, f'/{NODE}/load_scene')
    save = node.create_client(SaveScene, f'/{NODE}/save_scene')
    check_state = node.create_client(CheckState, f'/{NODE}/check_state')
    if not check('~/allow_collisions appears', allow.wait_for_service(timeout_sec=10.0)):
        return
    saved = call(node, save, SaveScene.Request())
    if not check('~/save_scene keeps the scene to restore', saved is not None and saved.success):
        return
    tool = ROBOT.link_poses(ARM, START)['tool0'][1]
    holder = ('frame: world\nobstacles:\n  - id: holder\n    box: {size: [0.12, 0.12, 0.12]}\n'
              f'    pose: {{position: [{tool[0]!r}, {tool[1]!r}, {tool[2]!r}]}}\n')
    res = call(node, load, LoadScene.Request(scene_yaml=holder, merge=True))
    check('~/load_scene merges a box around the tool', res is not None and res.success,
          res and res.message)
    res = call(node, check_state, CheckState.Request())
    hand = sorted({c.split("'")[1] for c in res.contacts}) if res else []
    check('~/check_state at START: the hand is in the box',
          res is not None and not res.valid and hand
          and all("obstacle 'holder'" in c for c in res.contacts),
          res and f'{list(res.contacts)}')

    res = call(node, allow, AllowCollisions.Request(names=hand, others=['holder'], allowed=True))
    check('~/allow_collisions lets the hand touch the box and lists the entries',
          res is not None and res.success and list(res.entry_a) == hand
          and list(res.entry_b) == ['holder'] * len(hand) and all(res.entry_allowed),
          res and f'{res.message!r} {list(res.entry_a)} {list(res.entry_b)}')
    res = call(node, check_state, CheckState.Request())
    check('~/check_state at START: valid with the allowed contacts',
          res is not None and res.success and res.valid, res and f'{list(res.contacts)}')
    obstacles = ic.load_scene_text(saved.scene_yaml) + [
        ic.Obstacle('holder', 'box', [0.06] * 3, tool)]
    allowed = frozenset((link, 'holder') for link in hand)
    res = call(node, plan, goal_request(GOAL), timeout=60.0)
    if check('~/plan from START in the box succeeds with the allowed contacts',
             res is not None and res.success, res and f'{res.error_code} {res.message!r}'):
        check_trajectory(res.trajectory, obstacles, 'the plan out of the box', allowed)

    res = call(node, allow, AllowCollisions.Request(names=hand, others=['holder'], allowed=False))
    check('~/allow_collisions takes the contacts back (no entries left)',
          res is not None and res.success and not res.entry_a, res and res.message)
    res = call(node, check_state, CheckState.Request())
    check('~/check_state at START: in collision again',
          res is not None and not res.valid, res and f'{list(res.contacts)}')

    res = call(node, allow, AllowCollisions.Request(
        names=['upper_arm_link'], others=['forearm_link'], allowed=False))
    state = call(node, check_state, CheckState.Request())
    check('~/allow_collisions checks an adjacent pair again: it is named in collision',
          res is not None and res.success and list(res.entry_allowed) == [False]
          and state is not None
          and any("'upper_arm_link'" in c and "'forearm_link'" in c for c in state.contacts),
          f'{res and res.message!r} {state and list(state.contacts)}')
    res = call(node, allow, AllowCollisions.Request(
        names=['no_such_link'], others=['holder'], allowed=True))
    check('~/allow_collisions with an unknown name is refused naming it; the entries stay',
          res is not None and not res.success and "'no_such_link'" in res.message
          and list(res.entry_a) == ['forearm_link'], res and res.message)
    res = call(node, allow, AllowCollisions.Request())
    check('~/allow_collisions without names lists the entries and changes nothing',
          res is not None and res.success and list(res.entry_a) == ['forearm_link']
          and list(res.entry_b) == ['upper_arm_link'], res and res.message)
    res = call(node, allow, AllowCollisions.Request(
        names=['flange_link'], others=['pointcloud/*'], allowed=True))
    check('~/allow_collisions takes the point cloud namespace (no cloud yet)',
          res is not None and res.success and 'pointcloud/*' in list(res.entry_b),
          res and res.message)
    res = call(node, allow, AllowCollisions.Request(
        names=['flange_link'], others=['nothing/*'], allowed=True))
    check('~/allow_collisions refuses a namespace without obstacles, naming it',
          res is not None and not res.success and "'nothing/*'" in res.message,
          res and res.message)
    res = call(node, allow, AllowCollisions.Request(reset=True))
    check('~/allow_collisions reset drops every entry',
          res is not None and res.success and not res.entry_a, res and res.message)
    res = call(node, load, LoadScene.Request(scene_yaml=saved.scene_yaml))
    state = call(node, check_state, CheckState.Request())
    check('the scene is restored and START is valid again',
          res is not None and res.success and state is not None and state.valid,
          f'{res and res.message!r} {state and list(state.contacts)}')


def goal_marker_checks(node):
    """~/goal_marker, the interactive marker server: its marker sits on the tool where the
    joint state (START) has it; let go at the tool's pose at GOAL, the node plans there (the
    trajectory published, its tool at the end where the marker was by the test's own forward
    kinematics), and the marker stays there; "Reset to the tool" puts it back with an update
    of the next sequence number."""
    client = node.create_client(GetInteractiveMarkers,
                                f'/{NODE}/goal_marker/get_interactive_markers')
    if not check('~/goal_marker/get_interactive_markers appears',
                 client.wait_for_service(timeout_sec=10.0)):
        return
    updates, trajectories = [], []
    node.create_subscription(InteractiveMarkerUpdate, f'/{NODE}/goal_marker/update',
                             updates.append, 100)
    node.create_subscription(JointTrajectory, f'/{NODE}/trajectory', trajectories.append, 10)
    feedback = node.create_publisher(InteractiveMarkerFeedback,
                                     f'/{NODE}/goal_marker/feedback', 100)
    res = call(node, client, GetInteractiveMarkers.Request())
    marker = res.markers[0] if res is not None and len(res.markers) == 1 else None
    r_start, t_start = ROBOT.link_poses(ARM, START)['tool0']

    def position(pose):
        return (pose.position.x, pose.position.y, pose.position.z)

    check('the goal marker sits on the tool at the joint state, six axes and a menu',
          marker is not None and marker.name == 'goal' and marker.header.frame_id == 'world'
          and math.dist(position(marker.pose), t_start) < 1e-6 and len(marker.controls) == 7
          and [e.title for e in marker.menu_entries]
          == ['Plan to here', 'Execute the last plan', 'Reset to the tool',
              'Plan to named state', 'home', 'ready']
          and [e.parent_id for e in marker.menu_entries[4:]] == [5, 5],
          marker and f'{position(marker.pose)} against {t_start}; {len(marker.controls)} '
          f'controls')
    if marker is None:
        return

    r_goal, t_goal = ROBOT.link_poses(ARM, GOAL)['tool0']
    event = InteractiveMarkerFeedback()
    event.header.frame_id = 'world'
    event.client_id = 'test'
    event.marker_name = 'goal'
    event.pose.position.x, event.pose.position.y, event.pose.position.z = t_goal
    q = quaternion_of(r_goal)
    (event.pose.orientation.x, event.pose.orientation.y, event.pose.orientation.z,
     event.pose.orientation.w) = q
    before = len(trajectories)
    wait_for(node, lambda: feedback.get_subscription_count() > 0, 10.0)
    for kind in (InteractiveMarkerFeedback.MOUSE_DOWN, InteractiveMarkerFeedback.POSE_UPDATE,
                 InteractiveMarkerFeedback.MOUSE_UP):
        event.event_type = kind
        feedback.publish(event)
    got = wait_for(node, lambda: len(trajectories) > before, 30.0)
    end = None
    if got:
        last = trajectories[-1]
        end = ROBOT.link_poses(list(last.joint_names), list(last.points[-1].positions))['tool0']
    check('let go at the tool pose of GOAL, the node plans the tool there and publishes it',
          end is not None and math.dist(end[1], t_goal) < 1e-4
          and rotation_angle(end[0], r_goal) < 1e-3,
          end and f'{math.dist(end[1], t_goal):.2e} m, {rotation_angle(end[0], r_goal):.2e} rad')
    res = call(node, client, GetInteractiveMarkers.Request())
    check('the marker stays where it was let go',
          res is not None and math.dist(position(res.markers[0].pose), t_goal) < 1e-9,
          res and f'{position(res.markers[0].pose)}')

    sequence = res.sequence_number if res is not None else 0
    event.event_type = InteractiveMarkerFeedback.MENU_SELECT
    event.menu_entry_id = 2  # "Reset to the tool"
    feedback.publish(event)
    back = wait_for(node, lambda: any(u.seq_num == sequence + 1 for u in updates), 10.0)
    update = next((u for u in updates if u.seq_num == sequence + 1), None)
    check('"Reset to the tool" puts the marker back on the tool with the next update',
          back and update is not None and len(update.poses) == 1
          and math.dist(position(update.poses[0].pose), t_start) < 1e-6,
          update and f'seq {update.seq_num}: {[position(p.pose) for p in update.poses]}')

    before = len(trajectories)
    event.menu_entry_id = 201  # "Plan to named state" > "ready"
    feedback.publish(event)
    got = wait_for(node, lambda: len(trajectories) > before, 30.0)
    end = list(trajectories[-1].points[-1].positions) if got else None
    check('"Plan to named state" > "ready" plans to the SRDF state and publishes it',
          end is not None and max(abs(a - b) for a, b in zip(end, GOAL)) < 1e-9, f'ends at {end}')


def mid_config():
    return [(a + b) / 2.0 for a, b in zip(START, GOAL)]


def agents_checks(node):
    """~/occupancy_grid + ~/plan_agents + ~/agent_paths on a 10 x 6 map with a wall."""
    width, height, res = 10, 6, 0.5
    origin = (-1.0, 2.0)
    # A wall at x = 5 with a gap at y = 5 (the top row); cell (0, 0) at the origin.
    data = [0] * (width * height)
    for y in range(height - 1):
        data[y * width + 5] = 100
    grid = OccupancyGrid()
    grid.header.frame_id = 'map'
    grid.info.resolution = res
    grid.info.width, grid.info.height = width, height
    grid.info.origin.position.x, grid.info.origin.position.y = origin
    grid.info.origin.orientation.w = 1.0
    grid.data = data
    qos = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL,
                     reliability=ReliabilityPolicy.RELIABLE)
    grid_pub = node.create_publisher(OccupancyGrid, f'/{NODE}/occupancy_grid', qos)
    grid_pub.publish(grid)
    markers = []
    node.create_subscription(MarkerArray, f'/{NODE}/agent_paths', markers.append, qos)
    client = node.create_client(PlanAgents, f'/{NODE}/plan_agents')
    if not check('~/plan_agents appears', client.wait_for_service(timeout_sec=10.0)):
        return

    def centre(cx, cy):
        return Point(x=origin[0] + (cx + 0.5) * res, y=origin[1] + (cy + 0.5) * res, z=0.0)

    def cell(p):
        return (int((p.x - origin[0]) // res), int((p.y - origin[1]) // res))

    req = PlanAgents.Request()
    req.goal = centre(9, 0)
    req.starts = [centre(0, 0), centre(5, 2), centre(2, 3), Point(x=100.0, y=0.0, z=0.0)]
    req.backend = 'cpu'
    res_ = None
    deadline = time.time() + 10.0
    while time.time() < deadline:
        res_ = call(node, client, req)
        if res_ is not None and 'no map' not in res_.message and 'none was received' not in \
                res_.message:
            break
        time.sleep(0.3)
    ok = check('~/plan_agents answers on the map from ~/occupancy_grid',
               res_ is not None and len(res_.paths) == 4, res_ and res_.message)
    if not ok:
        return
    # Shortest path from (0,0) to (9,0) through the gap at (5,5): 5 up, 9 across, 5 down.
    lengths = [len(p.poses) - 1 if p.poses else None for p in res_.paths]
    check('agent 0 gets the shortest 4-connected path through the gap (19 moves)',
          lengths[0] == 19, f'moves per agent {lengths}')
    valid = True
    for path in (res_.paths[0], res_.paths[2]):
        cells = [cell(ps.pose.position) for ps in path.poses]
        valid &= path.header.frame_id == 'map' and cells[-1] == (9, 0)
        valid &= all(abs(a[0] - b[0]) + abs(a[1] - b[1]) == 1 for a, b in zip(cells, cells[1:]))
        valid &= all(data[y * width + x] == 0 for x, y in cells)
    check('paths are 4-connected, on free cells, in the map frame, ending at the goal', valid)
    check('a blocked start and a start outside the map are reported, not dropped',
          not res_.success and list(res_.failed_agents) == [1, 3]
          and list(res_.failure_reasons) == ['start is blocked', 'start outside the map'],
          f'failed {list(res_.failed_agents)} {list(res_.failure_reasons)}')
    got = wait_for(node, lambda: markers and sum(
        1 for m in markers[-1].markers if m.ns == 'agent_paths') == 2, 5.0)
    check('~/agent_paths draws the two solved agents', got)
    bad = PlanAgents.Request()
    bad.map = grid
    bad.map.data = data[:-1]
    bad.goal = centre(9, 0)
    bad.starts = [centre(0, 0)]
    res_ = call(node, client, bad)
    check('a map whose data does not match its size is refused, naming map.data',
          res_ is not None and not res_.success and 'map.data' in res_.message,
          res_ and res_.message)


if __name__ == '__main__':
    sys.exit(main())
