"""Start planner_node with a params file and an optional robot model override.

Arguments (name:=value):
  params_file        ROS params file (default: <share>/config/planner.yaml)
  namespace          a namespace for every node started (default none), e.g. one planner
                     per robot: /<namespace>/planner_node, its joint_states and controllers
  moveit_config      a MoveIt config package (its folder or package name): the robot's URDF
                     (xacro expanded), SRDF, joint_limits.yaml and moveit_controllers.yaml,
                     each used where the arguments below give none
  robot_description  URDF text; overrides the params file when not empty
  urdf_path          URDF file; overrides the params file when not empty
  srdf_path          SRDF file; overrides the params file when not empty
  robot_description_semantic  SRDF text (MoveIt's name); wins over srdf_path when not empty
  joint_limits_path  MoveIt joint_limits.yaml; overrides the params file when not empty
  collision_shapes   polytopes | spheres | fitted; overrides the params file when not empty
  spherized_urdf_path  _spherized URDF (collision_shapes:=spheres); likewise
  controller_action  the FollowJointTrajectory action ~/execute sends goals to
                     (execution_mode action; the parameter of that name, default
                     joint_trajectory_controller/follow_joint_trajectory, a ros2_control
                     joint_trajectory_controller's action; rcl cannot remap actions)
  controllers_file   a MoveIt moveit_controllers.yaml (e.g. your MoveIt config's): ~/execute
                     sends each controller listed there the part of a trajectory for its
                     joints, instead of everything to controller_action
  controller_topic   where ~/execute publishes trajectories (execution_mode topic; default
                     /joint_trajectory_controller/joint_trajectory, the same controller's
                     command topic)
  execution_mode     action | topic; overrides the params file when not empty
  pointcloud_topic   a PointCloud2 topic (e.g. a depth camera's /camera/depth/points) whose
                     clouds become obstacles (remaps ~/points; default: the first point cloud
                     sensor of moveit_config's sensors_3d.yaml, else ~/points itself)
  mock_controller    'true' also starts the mock controller (a stand-in robot behind a
                     joint_trajectory_controller's action and topic, publishing joint_states;
                     <share>/config/mock_controller.yaml, the bundled arm's joints), so
                     ~/execute moves it, and robot_state_publisher with the robot's URDF when
                     it is installed (RViz then shows the robot moving). With a controllers
                     file (controllers_file, or moveit_config's moveit_controllers.yaml), one
                     mock per controller listed there instead (grippers as GripperCommand
                     servers), starting at moveit_config's initial_positions.yaml
  mock_controller_params  params file of the mock controller (default:
                     <share>/config/mock_controller.yaml)
  rviz               'true' also starts rviz2 with <share>/config/planner.rviz, its
                     Fixed Frame set to the params file's planning_frame
  log_level          node log level (default: info)
"""

import json
import os
import subprocess
import tempfile

import yaml
from ament_index_python.packages import (PackageNotFoundError, get_package_prefix,
                                        get_package_share_directory)
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, LogInfo, OpaqueFunction
from launch.conditions import IfCondition
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node

PACKAGE = 'gpu_motion_planner'
# The topic ~/execute publishes on in execution_mode topic (src/ros/execute.rs
# CONTROLLER_TOPIC), remapped by the controller_topic argument. The action is a parameter
# (controller_action): rcl does not remap action names.
CONTROLLER_TOPIC = 'joint_trajectory_controller/joint_trajectory'
# Arguments that override the params file when not empty, with what they are.
OVERRIDES = {
    'moveit_config': 'MoveIt config package (folder or name): URDF, SRDF, limits, controllers',
    'robot_description': 'URDF text',
    'urdf_path': 'URDF file',
    'srdf_path': 'SRDF file',
    'robot_description_semantic': 'SRDF text',
    'joint_limits_path': 'MoveIt joint_limits.yaml',
    'collision_shapes': 'polytopes, spheres or fitted',
    'spherized_urdf_path': '_spherized URDF for collision_shapes spheres',
    'execution_mode': 'action or topic: how ~/execute reaches the controller',
    'controller_action': 'the FollowJointTrajectory action ~/execute sends goals to',
    'controllers_file': "a MoveIt moveit_controllers.yaml: each controller gets its joints' part",
    'scene_path': 'scene file loaded with the robot (project format or MoveIt PlanningScene YAML)',
}


def _planner_node(context):
    params = [LaunchConfiguration('params_file').perform(context)]
    # Only non-empty overrides are passed, so empty arguments keep the file's values.
    overrides = {}
    for name in OVERRIDES:
        value = LaunchConfiguration(name).perform(context)
        if value:
            overrides[name] = value
    if overrides:
        params.append(overrides)
    controller = LaunchConfiguration('controller_topic').perform(context)
    cloud = LaunchConfiguration('pointcloud_topic').perform(context)
    remappings = [(CONTROLLER_TOPIC, controller)] if controller else []
    notes = []
    moveit_config = (LaunchConfiguration('moveit_config').perform(context)
                     or _parameter(params[0], 'moveit_config', ''))
    if not cloud and moveit_config:
        # The point cloud sensor of the MoveIt config's sensors_3d.yaml, as gmp reads it.
        try:
            topics = _gmp(['urdf', '--moveit-config', moveit_config])['moveit_config'][
                'point_cloud_topics']
        except (OSError, RuntimeError, ValueError, KeyError, TypeError) as e:
            topics = []
            notes.append(LogInfo(msg=f'moveit_config: no point cloud sensor read: {e}'))
        if topics:
            cloud = topics[0]
            notes.append(LogInfo(msg=f'point clouds from {cloud} (sensors_3d.yaml)' + (
                f'; not used: {", ".join(topics[1:])} (one cloud topic per node)'
                if len(topics) > 1 else '')))
    if cloud:
        remappings.append(('~/points', cloud))
    return notes + [
        Node(
            package=PACKAGE,
            executable='planner_node',
            name='planner_node',
            namespace=_namespace(context) or None,
            output='screen',
            parameters=params,
            remappings=remappings,
            arguments=['--ros-args', '--log-level',
                       LaunchConfiguration('log_level').perform(context)],
        )
    ]


def _mock_controller(context):
    actions = _mock_per_controller(context)
    if actions is None:
        params = LaunchConfiguration('mock_controller_params').perform(context)
        actions = [Node(package=PACKAGE, executable='mock_controller',
                        name='joint_trajectory_controller', namespace=_namespace(context) or None,
                        output='screen', parameters=[params])]
    try:
        get_package_share_directory('robot_state_publisher')
    except PackageNotFoundError:
        return actions + [LogInfo(msg='robot_state_publisher is not installed: the mock robot '
                                      'moves on joint_states, but RViz shows no robot model')]
    urdf = LaunchConfiguration('robot_description').perform(context)
    if not urdf:
        params_file = LaunchConfiguration('params_file').perform(context)
        # The node's order: URDF text wins over a file; arguments over the params file.
        path = (_parameter(params_file, 'robot_description', '')
                or LaunchConfiguration('urdf_path').perform(context)
                or _parameter(params_file, 'urdf_path', ''))
        moveit_config = (LaunchConfiguration('moveit_config').perform(context)
                         or _parameter(params_file, 'moveit_config', ''))
        if path.lstrip().startswith('<'):
            urdf = path
        elif path or moveit_config:
            # The node's reading of the description (xacro expanded), by its own CLI.
            args = ['--urdf', path] if path else ['--moveit-config', moveit_config]
            try:
                urdf = _gmp_description(args)
            except (OSError, RuntimeError, ValueError) as e:
                return actions + [LogInfo(msg=f'robot_state_publisher not started: {e}')]
        else:
            with open(os.path.join(get_package_share_directory(PACKAGE), 'urdf',
                                   'gmp_arm.urdf')) as f:
                urdf = f.read()
    return actions + [Node(package='robot_state_publisher', executable='robot_state_publisher',
                           name='robot_state_publisher', namespace=_namespace(context) or None,
                           output='log',
                           parameters=[{'robot_description': urdf}])]


def _namespace(context):
    """The namespace argument, without outer slashes ('' for none)."""
    return LaunchConfiguration('namespace').perform(context).strip('/')


def _gmp(args):
    """What the installed `gmp ARGS` prints, parsed (RuntimeError with its message when it
    fails). Each command line runs once per launch (the node's point cloud topic and
    robot_state_publisher's URDF both come from `gmp urdf`, which expands xacro files once)."""
    args = tuple(args)
    if args not in _GMP_RUNS:
        gmp = os.path.join(get_package_prefix(PACKAGE), 'lib', PACKAGE, 'gmp')
        done = subprocess.run([gmp, *args], capture_output=True, text=True, timeout=120)
        _GMP_RUNS[args] = done
    done = _GMP_RUNS[args]
    if done.returncode != 0:
        raise RuntimeError(done.stderr.strip() or f'gmp {args[0]} exited {done.returncode}')
    return json.loads(done.stdout)


# What each `gmp` command line printed in this launch (see _gmp).
_GMP_RUNS = {}


def _gmp_description(args):
    """The URDF text `gmp urdf ARGS` prints (xacro expanded, and checked as planner_node
    loads it)."""
    return _gmp(['urdf', *args])['urdf']


def _mock_per_controller(context):
    """With a controllers file (controllers_file, else the moveit_config package's
    moveit_controllers.yaml), one mock controller per controller listed: its joints, type
    (FollowJointTrajectory or GripperCommand), action_ns and start positions (the package's
    initial_positions.yaml, else 0 within the joint's limits), as `gmp controllers` reads
    them. None without such a file: the one mock of mock_controller_params."""
    params_file = LaunchConfiguration('params_file').perform(context)

    def setting(name):
        return LaunchConfiguration(name).perform(context) or _parameter(params_file, name, '')

    controllers_file, moveit_config = setting('controllers_file'), setting('moveit_config')
    if not controllers_file and not moveit_config:
        return None
    args = ['controllers']
    if controllers_file:
        args += ['--file', controllers_file]
    if moveit_config:
        args += ['--moveit-config', moveit_config]
    urdf_path, srdf_path = setting('urdf_path'), setting('srdf_path')
    if urdf_path:
        args += ['--urdf', urdf_path] + (['--srdf', srdf_path] if srdf_path else [])
    try:
        listed = _gmp(args)['controllers']
    except (OSError, RuntimeError, ValueError, KeyError) as e:
        if controllers_file:
            return [LogInfo(msg=f'no mock controllers: {e}')]
        return None  # a MoveIt config without moveit_controllers.yaml: the one mock
    mocks = []
    for c in listed:
        namespace, _, name = c['name'].strip('/').rpartition('/')
        joints = c['joints']
        at = c.get('initial_positions') or [0.0] * len(joints)
        mocks.append(Node(
            package=PACKAGE, executable='mock_controller', name=name,
            namespace='/'.join(p for p in (_namespace(context), namespace) if p) or None,
            output='screen',
            parameters=[{'joints': joints, 'initial_positions': [float(x) for x in at],
                         'type': c['type'], 'action_ns': c['action_ns'],
                         'parallel': bool((c.get('gripper') or {}).get('parallel', False))}]))
    return mocks


def _parameter(params_file, name, default):
    """planner_node's parameter `name` from a params file (`default` when absent or
    unreadable)."""
    try:
        with open(params_file) as f:
            data = yaml.safe_load(f) or {}
    except (OSError, yaml.YAMLError):
        return default
    for key in ('planner_node', '/planner_node', '/**'):
        value = (data.get(key) or {}).get('ros__parameters', {}).get(name)
        if value:
            return str(value)
    return default


def _planning_frame(params_file):
    """planning_frame from a params file ('world' when absent or unreadable)."""
    return _parameter(params_file, 'planning_frame', 'world')


def _rviz(context):
    share = get_package_share_directory(PACKAGE)
    frame = _planning_frame(LaunchConfiguration('params_file').perform(context))
    with open(os.path.join(share, 'config', 'planner.rviz')) as f:
        config = f.read().replace('Fixed Frame: world', f'Fixed Frame: {frame}')
    cloud = LaunchConfiguration('pointcloud_topic').perform(context)
    if cloud:  # the node reads its clouds there: show that topic
        config = config.replace('Value: /planner_node/points', f'Value: {cloud}')
    namespace = _namespace(context)
    if namespace:  # the node and robot_state_publisher are in it
        config = (config.replace(' /planner_node/', f' /{namespace}/planner_node/')
                  .replace('Value: /robot_description', f'Value: /{namespace}/robot_description'))
    out = tempfile.NamedTemporaryFile('w', prefix='planner_', suffix='.rviz', delete=False)
    with out:
        out.write(config)
    return [Node(package='rviz2', executable='rviz2', name='rviz2', output='log',
                 arguments=['-d', out.name])]


def generate_launch_description():
    share = get_package_share_directory(PACKAGE)
    return LaunchDescription([
        DeclareLaunchArgument(
            'params_file', default_value=os.path.join(share, 'config', 'planner.yaml'),
            description='ROS params file for planner_node'),
        *[DeclareLaunchArgument(
            name, default_value='',
            description=f'{what} (overrides the params file when not empty)')
          for name, what in OVERRIDES.items()],
        DeclareLaunchArgument(
            'namespace', default_value='',
            description='namespace of every node started (e.g. one planner per robot)'),
        DeclareLaunchArgument(
            'controller_topic', default_value='',
            description='where ~/execute publishes trajectories in execution_mode topic '
                        '(empty: /joint_trajectory_controller/joint_trajectory)'),
        DeclareLaunchArgument(
            'pointcloud_topic', default_value='',
            description='PointCloud2 topic whose clouds become obstacles (empty: ~/points)'),
        DeclareLaunchArgument(
            'mock_controller', default_value='false',
            description='also start the mock controller (a stand-in robot)'),
        DeclareLaunchArgument(
            'mock_controller_params',
            default_value=os.path.join(share, 'config', 'mock_controller.yaml'),
            description='params file of the mock controller'),
        DeclareLaunchArgument(
            'rviz', default_value='false', description='also start rviz2'),
        DeclareLaunchArgument(
            'log_level', default_value='info', description='planner_node log level'),
        OpaqueFunction(function=_planner_node),
        OpaqueFunction(function=_mock_controller,
                       condition=IfCondition(LaunchConfiguration('mock_controller'))),
        OpaqueFunction(function=_rviz, condition=IfCondition(LaunchConfiguration('rviz'))),
    ])
