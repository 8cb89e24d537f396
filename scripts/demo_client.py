#!/usr/bin/env python3
"""Demo client of planner_node: asks ~/plan for a few motions of the bundled arm
(urdf/gmp_arm.urdf) around the bundled scene and prints what comes back.

Run by scripts/run_demo.sh after it started the node with planner.launch.py. Needs a
sourced ROS 2 environment with the workspace's install/setup.bash.
"""

import sys

import rclpy
from gpu_motion_planner_interfaces.srv import PlanPath
from rclpy.node import Node
from sensor_msgs.msg import JointState
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
    rebuild = node.create_client(Trigger, f'/{NODE}/rebuild_roadmap')
    if rebuild.wait_for_service(timeout_sec=10.0):
        res = call(node, rebuild, Trigger.Request(), 300.0)
        print(f'~/rebuild_roadmap: {res.message if res else "no answer"}')
    for planner, start, goal in REQUESTS:
        req = PlanPath.Request()
        req.planner_id = planner
        req.start_state = state(start)
        req.goal_state = state(goal)
        req.seed = -1
        res = call(node, plan, req, 120.0)
        if res is None:
            print(f'{planner}: no answer within 120 s')
            failures += 1
            continue
        s = res.stats
        print(f'{planner}: success={res.success} code={res.error_code} -- {res.message}')
        if res.success:
            last = res.trajectory.points[-1]
            print(f'    {len(res.trajectory.points)} points, '
                  f'{last.time_from_start.sec + 1e-9 * last.time_from_start.nanosec:.2f} s; '
                  f'planning {s.planning_time * 1e3:.1f} ms, simplification '
                  f'{s.simplification_time * 1e3:.1f} ms, {s.collision_checks} collision checks, '
                  f'path length {s.path_length_before:.3f} -> {s.path_length_after:.3f} rad, '
                  f'backend {s.backend}')
        else:
            failures += 1
    node.destroy_node()
    rclpy.shutdown()
    return 1 if failures else 0


if __name__ == '__main__':
    sys.exit(main())
