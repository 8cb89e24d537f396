#!/usr/bin/env python3
"""Demo client of planner_node: asks ~/plan for a few motions of the bundled arm
(urdf/gmp_arm.urdf) around the bundled scene, for one to any of a goal set, for one to
whichever of three tool poses it reaches (grasp candidates) and for one to a pose of the tool,
~/plan_cartesian to lower the tool 15 cm straight down from there, then ~/plan_batch for the
RRT-Connect ones in one call, then carries a 30 cm bar on the tool (~/attach_object) through
the first motion and drops it (~/detach_object), re-checks the first trajectory against the
scene (~/check_trajectory), asks whether a state folded into the shelf is valid
(~/check_state), where the tool is at the end of the first plan (~/compute_fk) and for a
collision-free configuration that puts it there from the neutral one (~/compute_ik), then
runs the first motion on the mock controller that stands in for the robot (~/plan, then
~/execute: a FollowJointTrajectory goal, answered when the robot has arrived) and back with
one ~/move action goal (plan and execute, its feedback printed); last, sends a
point cloud of a blob where the tool passes
halfway through the first motion (~/points, as a depth camera would), plans that motion again
around the blob's boxes, clears the cloud, and prints what comes back.

Run by scripts/run_demo.sh after it started the node with planner.launch.py. Needs a
sourced ROS 2 environment with the workspace's install/setup.bash.
"""

import math
import struct
import sys
import time

import rclpy
from gpu_motion_planner_interfaces.action import Move
from gpu_motion_planner_interfaces.srv import (AttachObject, CheckState, CheckTrajectory,
                                              ComputeFk, ComputeIk, DetachObject, PlanBatch,
                                              PlanCartesian, PlanPath)
from geometry_msgs.msg import Pose, PoseStamped
from rclpy.action import ActionClient
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from visualization_msgs.msg import Marker, MarkerArray
from sensor_msgs.msg import JointState, PointCloud2, PointField
from std_srvs.srv import Trigger

NODE = 'planner_node'
ARM = ['shoulder_pan_joint', 'shoulder_lift_joint', 'elbow_joint',
       'wrist_1_joint', 'wrist_2_joint', 'wrist_3_joint']
# (planner, start, goal): a swing past the ball, and from under the shelf board out to the left.
REQUESTS = [
    ('rrt_connect', [-2.8, 0.3, 0.8, 0.0, 0.0, 0.0], [-1.2, 0.3, 0.8, 0.0, 0.0, 0.0]),
    ('rrt_connect', [-0.2, 0.3, 2.3, 0.0, -0.5, 0.0], [1.6, -0.4, 1.0, 0.0, 0.5, 0.0]),
    ('drm', [-2.8, 0.3, 0.8, 0.0, 0.0, 0.0], [-1.2, 0.3, 0.8, 0.0, 0.0, 0.0]),
    ('drm', [-0.2, 0.3, 2.3, 0.0, -0.5, 0.0], [1.6, -0.4, 1.0, 0.0, 0.5, 0.0]),
]


def state(positions):
    js = JointState()
    js.name = list(ARM)
    js.position = [float(x) for x in positions]
    return js


def plan_request(planner, start, goal):
    """A ~/plan request from `start` to `goal` with `planner` and the node's seed."""
    req = PlanPath.Request()
    req.planner_id = planner
    req.start_state = state(start)
    req.goal_state = state(goal)
    req.seed = -1
    return req


def call(node, client, request, timeout):
    future = client.call_async(request)
    rclpy.spin_until_future_complete(node, future, timeout_sec=timeout)
    return future.result() if future.done() else None


def main():
    rclpy.init()
    node = Node('gmp_demo_client')
    plan = node.create_client(PlanPath, f'/{NODE}/plan')
    if not plan.wait_for_service(timeout_sec=60.0):
        print('demo_client: /planner_node/plan did not appear within 60 s', file=sys.stderr)
        return 1
    failures = 0
    first = None
    rebuild = node.create_client(Trigger, f'/{NODE}/rebuild_roadmap')
    if rebuild.wait_for_service(timeout_sec=10.0):
        res = call(node, rebuild, Trigger.Request(), 300.0)
        print(f'~/rebuild_roadmap: {res.message if res else "no answer"}')
    for planner, start, goal in REQUESTS:
        res = call(node, plan, plan_request(planner, start, goal), 120.0)
        if res is None:
            print(f'{planner}: no answer within 120 s')
            failures += 1
            continue
        s = res.stats
        print(f'{planner}: success={res.success} code={res.error_code} -- {res.message}')
        if res.success:
            first = first or res.trajectory
            last = res.trajectory.points[-1]
            print(f'    {len(res.trajectory.points)} points, '
                  f'{last.time_from_start.sec + 1e-9 * last.time_from_start.nanosec:.2f} s; '
                  f'planning {s.planning_time * 1e3:.1f} ms, simplification '
                  f'{s.simplification_time * 1e3:.1f} ms, {s.collision_checks} collision checks, '
                  f'path length {s.path_length_before:.3f} -> {s.path_length_after:.3f} rad, '
                  f'backend {s.backend}')
        else:
            failures += 1
    failures += goal_set(node, plan)
    failures += grasp_candidates(node, plan)
    pose = plan_pose(node, plan)
    failures += 0 if pose else 1
    failures += plan_cartesian(node, pose)
    failures += plan_batch(node)
    failures += carry_bar(node, plan)
    failures += check_validity(node, first)
    failures += kinematics(node, first)
    failures += execute(node, plan)
    failures += point_cloud(node, plan)
    node.destroy_node()
    rclpy.shutdown()
    return 1 if failures else 0


def execute(node, plan):
    """The mock controller stands in for the robot (run_demo.sh starts it, at the first
    motion's start): plans the first motion from the robot's joint state and asks ~/execute to
    run it, a FollowJointTrajectory goal the mock follows, answered when the robot has
    arrived; then the way back to the start in one ~/move goal. Returns the failures."""
    execute_client = node.create_client(Trigger, f'/{NODE}/execute')
    if not execute_client.wait_for_service(timeout_sec=10.0):
        print('~/execute: service not available')
        return 1
    seen = []
    node.create_subscription(JointState, 'joint_states',
                             lambda m: seen.append(list(m.position))
                             if list(m.name) == ARM else None, 10)
    for _ in range(100):
        if seen:
            break
        rclpy.spin_once(node, timeout_sec=0.1)
    if not seen:
        print('~/execute: no joint_states from the mock controller within 10 s')
        return 1
    planner, start, goal = REQUESTS[0]
    req = PlanPath.Request()  # from the current joint state: where the robot is
    req.planner_id = planner
    req.goal_state = state(goal)
    res = call(node, plan, req, 120.0)
    if res is None or not res.success:
        print(f'~/execute: the first motion did not plan: {res and res.message}')
        return 1 + move(node, planner, start, seen)
    last = res.trajectory.points[-1].time_from_start
    seconds = last.sec + 1e-9 * last.nanosec
    answer = call(node, execute_client, Trigger.Request(), seconds + 30.0)
    said = 'no answer' if answer is None else f'success={answer.success} -- {answer.message}'
    arrived = arrival(node, seen, goal, f'~/execute (the first motion, {seconds:.2f} s): {said}')
    failures = 0 if answer is not None and answer.success and arrived else 1
    return failures + move(node, planner, start, seen)


def arrival(node, seen, target, line):
    """Prints `line` and where the mock robot is; whether it is at `target`."""
    # The joint states queued while the motion ran come in one per spin: read them until the
    # latest is at the target, or for 2 s (a fixed number of spins could stop at an old one).
    deadline = time.monotonic() + 2.0
    while True:
        rclpy.spin_once(node, timeout_sec=0.05)
        at = seen[-1]
        arrived = max(abs(a - b) for a, b in zip(at, target)) < 1e-6
        if arrived or time.monotonic() > deadline:
            break
    print(line)
    print(f'    the mock robot is at [{", ".join(f"{x:.3f}" for x in at)}]'
          f'{"" if arrived else " (not the goal)"}')
    return arrived


def move(node, planner, target, seen):
    """One ~/move goal: plan from where the robot is to `target` and execute it, printing the
    feedback as it comes and the result. Returns the failures."""
    client = ActionClient(node, Move, f'/{NODE}/move')
    if not client.wait_for_server(timeout_sec=10.0):
        print('~/move: action server not available')
        return 1
    goal = Move.Goal()
    goal.goal_state = state(target)
    goal.planner_id = planner
    goal.seed = -1
    sent = client.send_goal_async(
        goal, feedback_callback=lambda f: print(
            f'~/move feedback: {f.feedback.state}: {f.feedback.message}'))
    rclpy.spin_until_future_complete(node, sent, timeout_sec=10.0)
    handle = sent.result() if sent.done() else None
    if handle is None or not handle.accepted:
        print('~/move: the goal was not accepted')
        return 1
    result = handle.get_result_async()
    rclpy.spin_until_future_complete(node, result, timeout_sec=120.0)
    if not result.done():
        print('~/move (back to its start): no result within 120 s')
        return 1
    answer = result.result().result
    arrived = arrival(node, seen, target, f'~/move (back to its start): success={answer.success} '
                      f'error_code={answer.error_code} -- {answer.message}')
    return 0 if answer.success and arrived else 1


def cloud_message(points):
    """A sensor_msgs/PointCloud2 of x y z FLOAT32 points in the world frame."""
    msg = PointCloud2()
    msg.header.frame_id = 'world'
    msg.height, msg.width = 1, len(points)
    msg.fields = [PointField(name=n, offset=4 * i, datatype=PointField.FLOAT32, count=1)
                  for i, n in enumerate('xyz')]
    msg.point_step, msg.row_step = 12, 12 * len(points)
    msg.data = b''.join(struct.pack('<3f', *p) for p in points)
    msg.is_dense = True
    return msg


def point_cloud(node, plan):
    """Sends on ~/points a 6 cm ball of points (1 cm apart) where the tool passes halfway
    through the first motion, waits for its boxes on ~/scene, plans the first motion again
    (the mock robot back at its start on joint_states, so the self filter knows where it
    is), then sends an empty cloud. Returns the failures."""
    fk = node.create_client(ComputeFk, f'/{NODE}/compute_fk')
    if not fk.wait_for_service(timeout_sec=10.0):
        print('~/points: ~/compute_fk not available')
        return 1
    planner, start, goal = REQUESTS[0]
    req = ComputeFk.Request()
    req.state = state([(a + b) / 2 for a, b in zip(start, goal)])
    req.link_names = ['tool0']
    res = call(node, fk, req, 30.0)
    if res is None or not res.success:
        print(f'~/points: ~/compute_fk of the halfway state failed: {res and res.message}')
        return 1
    c = res.poses[0].pose.position
    blob = [(c.x + i * 0.01, c.y + j * 0.01, c.z + k * 0.01)
            for i in range(-6, 7) for j in range(-6, 7) for k in range(-6, 7)
            if math.sqrt(i * i + j * j + k * k) <= 6]
    scenes = []
    qos = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL,
                     reliability=ReliabilityPolicy.RELIABLE)
    node.create_subscription(MarkerArray, f'/{NODE}/scene', scenes.append, qos)
    clouds = node.create_publisher(PointCloud2, f'/{NODE}/points', 10)

    def boxes():
        return [m for m in scenes[-1].markers if m.ns.startswith('pointcloud/')] if scenes else []

    def send(points, done):
        for _ in range(50):
            clouds.publish(cloud_message(points))
            for _ in range(5):
                rclpy.spin_once(node, timeout_sec=0.1)
            if done():
                return True
        return False

    shown = send(blob, lambda: len(boxes()) > 0)
    print(f'~/points ({len(blob)} points around tool0 halfway through the first motion): '
          f'{len(boxes())} boxes on ~/scene' if shown else '~/points: no boxes within 25 s')
    if not shown:
        return 1
    res = call(node, plan, plan_request(planner, start, goal), 120.0)
    ok = res is not None and res.success
    if ok:
        print(f'{planner} around the cloud: success=True -- path length '
              f'{res.stats.path_length_after:.3f} rad')
    else:
        print(f'{planner} around the cloud: {res.message if res else "no answer within 120 s"}')
    cleared = send([], lambda: not boxes())
    print(f'~/points (an empty cloud): {"boxes cleared" if cleared else "boxes still shown"}')
    return 0 if ok and cleared else 1


def carry_bar(node, plan):
    """Attaches a 30 cm bar to the tool, plans the first motion carrying it, and drops it.
    Returns the failures."""
    attach = node.create_client(AttachObject, f'/{NODE}/attach_object')
    detach = node.create_client(DetachObject, f'/{NODE}/detach_object')
    if not (attach.wait_for_service(timeout_sec=10.0) and detach.wait_for_service(timeout_sec=10.0)):
        print('~/attach_object: service not available')
        return 1
    req = AttachObject.Request()
    req.object_id, req.link_name, req.touch_links = 'bar', 'tool0', ['flange_link']
    req.shape_type = Marker.CUBE
    req.scale.x, req.scale.y, req.scale.z = 0.04, 0.04, 0.3
    req.header.frame_id = 'tool0'
    req.pose.position.z = 0.15
    req.pose.orientation.w = 1.0
    res = call(node, attach, req, 30.0)
    print(f'~/attach_object: {res.message if res else "no answer within 30 s"}')
    if res is None or not res.success:
        return 1
    planner, start, goal = REQUESTS[0]
    pres = call(node, plan, plan_request(planner, start, goal), 120.0)
    print(f'{planner} carrying the bar: '
          f'{"no answer within 120 s" if pres is None else f"success={pres.success} -- {pres.message}"}')
    dreq = DetachObject.Request()
    dreq.object_id, dreq.remove = 'bar', True
    dres = call(node, detach, dreq, 30.0)
    print(f'~/detach_object: {dres.message if dres else "no answer within 30 s"}')
    return int(pres is None or not pres.success) + int(dres is None or not dres.success)


def check_validity(node, trajectory):
    """~/check_trajectory on the first planned trajectory (valid: the scene is as it was
    planned in) and ~/check_state of the forearm folded into the shelf (invalid, naming the
    pairs). Returns the failures."""
    check_traj = node.create_client(CheckTrajectory, f'/{NODE}/check_trajectory')
    check_state = node.create_client(CheckState, f'/{NODE}/check_state')
    if not (check_traj.wait_for_service(timeout_sec=10.0)
            and check_state.wait_for_service(timeout_sec=10.0)):
        print('~/check_trajectory, ~/check_state: service not available')
        return 1
    failures = 0
    if trajectory is None:
        print('~/check_trajectory: skipped (no trajectory was planned)')
    else:
        req = CheckTrajectory.Request()
        req.trajectory = trajectory
        res = call(node, check_traj, req, 30.0)
        print(f'~/check_trajectory (the first plan): '
              f'{"no answer within 30 s" if res is None else f"valid={res.valid} -- {res.message}"}')
        failures += int(res is None or not res.valid)
    req = CheckState.Request()
    req.state = state([0.0, 1.4, 0.4, 0.0, 0.0, 0.0])
    res = call(node, check_state, req, 30.0)
    print(f'~/check_state (the forearm folded into the shelf): '
          f'{"no answer within 30 s" if res is None else f"valid={res.valid} -- {res.message}"}')
    failures += int(res is None or not res.success or res.valid)
    return failures


def kinematics(node, trajectory):
    """~/compute_fk of the tool at the end of `trajectory`, then ~/compute_ik for that pose
    from the neutral configuration, collision free. Returns the failures."""
    fk = node.create_client(ComputeFk, f'/{NODE}/compute_fk')
    ik = node.create_client(ComputeIk, f'/{NODE}/compute_ik')
    if not (fk.wait_for_service(timeout_sec=10.0) and ik.wait_for_service(timeout_sec=10.0)):
        print('~/compute_fk, ~/compute_ik: service not available')
        return 1
    if trajectory is None:
        print('~/compute_fk: skipped (no trajectory was planned)')
        return 0
    req = ComputeFk.Request()
    req.state = state(list(trajectory.points[-1].positions))
    req.link_names = ['tool0']
    res = call(node, fk, req, 30.0)
    if res is None or not res.success:
        print(f'~/compute_fk: {"no answer within 30 s" if res is None else res.message}')
        return 1
    p = res.poses[0].pose.position
    print(f'~/compute_fk: tool0 at the end of the first plan is at '
          f'[{p.x:.3f}, {p.y:.3f}, {p.z:.3f}] in {res.poses[0].header.frame_id}')
    ireq = ComputeIk.Request()
    ireq.pose = res.poses[0]
    ireq.seed_state = state([0.0] * len(ARM))
    ireq.avoid_collisions = True
    ires = call(node, ik, ireq, 30.0)
    if ires is None:
        print('~/compute_ik: no answer within 30 s')
        return 1
    print(f'~/compute_ik (that pose, from the neutral configuration): success={ires.success} '
          f'code={ires.error_code} -- {ires.message}')
    if ires.success:
        print(f'    {[round(v, 3) for v in ires.solution.position]}')
    return 0 if ires.success else 1


def goal_set(node, plan):
    """A goal set: the forearm folded into the shelf (in collision, left out) or either end of
    the first two motions; the answer names the goal the plan ends at. Returns the failures."""
    req = plan_request('rrt_connect', REQUESTS[0][1], [0.0, 1.4, 0.4, 0.0, 0.0, 0.0])
    req.other_goal_states = [state(REQUESTS[1][2]), state(REQUESTS[0][2])]
    return reaches_another_goal(node, plan, req, 'goal set (3 goals, the first in collision)')


def reaches_another_goal(node, plan, req, what):
    """Asks ~/plan for `req` (a goal set) and prints the answer; the failures: 0 when it
    planned to one of the other goals."""
    res = call(node, plan, req, 120.0)
    if res is None:
        print(f'{what}: no answer within 120 s')
        return 1
    print(f'{what}: success={res.success} reached_goal={res.reached_goal} -- {res.message}')
    return 0 if res.success and res.reached_goal > 0 else 1


def grasp_candidates(node, plan):
    """Grasp candidates: the tool pointing down at one of three poses, the first inside the
    shelf board (no free solution), the others above the table; the answer names the pose the
    plan ends at. Returns the failures."""
    req = PlanPath.Request()
    req.start_state = state(REQUESTS[1][1])
    poses = []
    for x, y, z in ((0.58, 0.0, 0.45), (0.3, -0.45, 0.35), (0.35, 0.3, 0.4)):
        ps = PoseStamped()
        ps.header.frame_id = 'world'
        ps.pose.position.x, ps.pose.position.y, ps.pose.position.z = x, y, z
        ps.pose.orientation.x = 1.0
        ps.pose.orientation.w = 0.0
        poses.append(ps)
    req.goal_pose = poses[0]
    req.other_goal_poses = poses[1:]
    req.seed = -1
    return reaches_another_goal(node, plan, req,
                                'grasp candidates (3 tool poses, the first inside the shelf board)')


def plan_pose(node, plan):
    """A pose goal: the tool 0.35 m above the table in front of the shelf, pointing down.
    Returns the response when it succeeded, else None."""
    req = PlanPath.Request()
    req.start_state = state(REQUESTS[1][1])
    req.goal_pose.header.frame_id = 'world'
    p = req.goal_pose.pose
    p.position.x, p.position.y, p.position.z = 0.3, -0.45, 0.35
    p.orientation.x, p.orientation.y, p.orientation.z, p.orientation.w = 1.0, 0.0, 0.0, 0.0
    req.seed = -1
    res = call(node, plan, req, 120.0)
    if res is None:
        print('goal pose: no answer within 120 s')
        return None
    print(f'goal pose (tool0 at [0.3, -0.45, 0.35], pointing down): success={res.success} '
          f'code={res.error_code} -- {res.message}')
    return res if res.success else None


def plan_cartesian(node, pose):
    """From the end of the pose-goal plan, the tool lowered 15 cm straight down (still
    pointing down) with ~/plan_cartesian. Returns the failures; a skip counts none, the pose
    goal's failure is counted already."""
    if pose is None:
        print('~/plan_cartesian: skipped (the pose goal was not planned)')
        return 0
    if not pose.trajectory.points:
        print('~/plan_cartesian: skipped (the pose goal answered with no trajectory points)')
        return 1
    client = node.create_client(PlanCartesian, f'/{NODE}/plan_cartesian')
    if not client.wait_for_service(timeout_sec=10.0):
        print('~/plan_cartesian: service not available')
        return 1
    req = PlanCartesian.Request()
    req.header.frame_id = 'world'
    req.start_state = state(list(pose.trajectory.points[-1].positions))
    req.start_state.name = list(pose.trajectory.joint_names)
    w = Pose()
    w.position.x, w.position.y, w.position.z = 0.3, -0.45, 0.2
    w.orientation.x, w.orientation.y, w.orientation.z, w.orientation.w = 1.0, 0.0, 0.0, 0.0
    req.waypoints = [w]
    res = call(node, client, req, 120.0)
    if res is None:
        print('~/plan_cartesian: no answer within 120 s')
        return 1
    print(f'~/plan_cartesian (tool0 down to z 0.2): success={res.success} '
          f'fraction={res.fraction:.2f} code={res.error_code} -- {res.message}')
    return 0 if res.success and res.fraction == 1.0 else 1


def plan_batch(node):
    """The RRT-Connect requests again, in one ~/plan_batch call. Returns the failures."""
    batch = node.create_client(PlanBatch, f'/{NODE}/plan_batch')
    if not batch.wait_for_service(timeout_sec=10.0):
        print('~/plan_batch: service not available')
        return 1
    req = PlanBatch.Request()
    pairs = [(start, goal) for planner, start, goal in REQUESTS if planner == 'rrt_connect']
    req.planner_id = 'rrt_connect'
    req.start_states = [state(start) for start, _ in pairs]
    req.goal_states = [state(goal) for _, goal in pairs]
    req.seed = -1
    res = call(node, batch, req, 120.0)
    if res is None:
        print('~/plan_batch: no answer within 120 s')
        return 1
    print(f'~/plan_batch: success={res.success} -- {res.message}')
    for k, (code, message) in enumerate(zip(res.error_codes, res.messages)):
        print(f'    problem {k}: code={code} -- {message}')
    return 0 if res.success else 1


if __name__ == '__main__':
    sys.exit(main())
