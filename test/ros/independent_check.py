"""An independent collision re-check of trajectories for the ROS integration test.

Written separately from the planner's checker (pure Python, no shared code): forward
kinematics straight from the URDF's joints, and each collision primitive of the robot
(box, cylinder, sphere) sampled as a cloud of points on its surface and inside it; a
configuration collides when one of those points lies inside an obstacle (box, sphere or
z-axis cylinder with a position and quaternion). Sampling can miss a graze thinner than
its spacing, so this is a check that catches real penetrations, not a proof of clearance;
the test uses it to confirm that what the planner returns does not run through obstacles.
"""

import copy
import math
import xml.etree.ElementTree as ET

SPACING = 0.02  # metres between sampled points of a robot primitive


def _mat_mul(a, b):
    return [[sum(a[i][k] * b[k][j] for k in range(3)) for j in range(3)] for i in range(3)]


def _mat_vec(a, v):
    return [sum(a[i][k] * v[k] for k in range(3)) for i in range(3)]


def _rpy(r, p, y):
    cr, sr, cp, sp, cy, sy = (math.cos(r), math.sin(r), math.cos(p), math.sin(p),
                              math.cos(y), math.sin(y))
    return [[cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
            [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
            [-sp, cp * sr, cp * cr]]


def _axis_angle(axis, q):
    x, y, z = axis
    n = math.sqrt(x * x + y * y + z * z) or 1.0
    x, y, z = x / n, y / n, z / n
    c, s, t = math.cos(q), math.sin(q), 1 - math.cos(q)
    return [[t * x * x + c, t * x * y - s * z, t * x * z + s * y],
            [t * x * y + s * z, t * y * y + c, t * y * z - s * x],
            [t * x * z - s * y, t * y * z + s * x, t * z * z + c]]


def _quat(x, y, z, w):
    n = math.sqrt(x * x + y * y + z * z + w * w)
    if n == 0:
        return [[1, 0, 0], [0, 1, 0], [0, 0, 1]]
    x, y, z, w = x / n, y / n, z / n, w / n
    return [[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
            [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
            [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]]


def _origin(el):
    o = el.find('origin') if el is not None else None
    xyz = [float(v) for v in (o.get('xyz', '0 0 0') if o is not None else '0 0 0').split()]
    rpy = [float(v) for v in (o.get('rpy', '0 0 0') if o is not None else '0 0 0').split()]
    return _rpy(*rpy), xyz


def _steps(length):
    n = max(1, int(math.ceil(length / SPACING)))
    return [-length / 2 + length * i / n for i in range(n + 1)]


def _primitive_points(geometry):
    """Points on the surface and inside of a collision primitive, in its own frame."""
    box, cyl, sph = geometry.find('box'), geometry.find('cylinder'), geometry.find('sphere')
    pts = []
    if box is not None:
        sx, sy, sz = (float(v) for v in box.get('size').split())
        for x in _steps(sx):
            for y in _steps(sy):
                for z in _steps(sz):
                    pts.append((x, y, z))
    elif cyl is not None:
        r, length = float(cyl.get('radius')), float(cyl.get('length'))
        for z in _steps(length):
            for rr in _steps(2 * r):
                if rr < 0:
                    continue
                n = max(1, int(2 * math.pi * rr / SPACING))
                for k in range(n):
                    a = 2 * math.pi * k / n
                    pts.append((rr * math.cos(a), rr * math.sin(a), z))
    elif sph is not None:
        r = float(sph.get('radius'))
        for x in _steps(2 * r):
            for y in _steps(2 * r):
                for z in _steps(2 * r):
                    if x * x + y * y + z * z <= r * r:
                        pts.append((x, y, z))
    return pts


class Robot:
    """A URDF's kinematic tree and sampled collision primitives."""

    def __init__(self, urdf_path):
        root = ET.parse(urdf_path).getroot()
        self.joints = []  # (name, type, parent, child, R, t, axis), in tree order
        children = {}
        for j in root.findall('joint'):
            rot, t = _origin(j)
            axis_el = j.find('axis')
            axis = [float(v) for v in (axis_el.get('xyz') if axis_el is not None
                                       else '1 0 0').split()]
            entry = (j.get('name'), j.get('type'), j.find('parent').get('link'),
                     j.find('child').get('link'), rot, t, axis)
            children.setdefault(entry[2], []).append(entry)
        child_links = {e[3] for es in children.values() for e in es}
        roots = [link.get('name') for link in root.findall('link')
                 if link.get('name') not in child_links]
        self.root = roots[0]
        stack = [self.root]
        while stack:
            link = stack.pop()
            for e in children.get(link, []):
                self.joints.append(e)
                stack.append(e[3])
        self.points = {}  # link -> points in the link frame
        for link in root.findall('link'):
            pts = []
            for c in link.findall('collision'):
                rot, t = _origin(c)
                for p in _primitive_points(c.find('geometry')):
                    q = _mat_vec(rot, p)
                    pts.append((q[0] + t[0], q[1] + t[1], q[2] + t[2]))
            self.points[link.get('name')] = pts

    def carrying(self, link, size, offset):
        """A copy of this robot whose `link` also carries a box of full extents `size` whose
        centre is at `offset` in the link frame (an attached object)."""
        out = copy.copy(self)
        out.points = dict(self.points)
        sx, sy, sz = size
        out.points[link] = list(self.points.get(link, [])) + [
            (x + offset[0], y + offset[1], z + offset[2])
            for x in _steps(sx) for y in _steps(sy) for z in _steps(sz)]
        return out

    def link_poses(self, names, positions):
        """Pose (R, t) of every link for joint values given by name (others 0)."""
        values = dict(zip(names, positions))
        poses = {self.root: ([[1, 0, 0], [0, 1, 0], [0, 0, 1]], [0.0, 0.0, 0.0])}
        for name, kind, parent, child, rot, t, axis in self.joints:
            pr, pt = poses[parent]
            r = _mat_mul(pr, rot)
            tt = [a + b for a, b in zip(pt, _mat_vec(pr, t))]
            q = values.get(name, 0.0)
            if kind in ('revolute', 'continuous'):
                r = _mat_mul(r, _axis_angle(axis, q))
            elif kind == 'prismatic':
                d = _mat_vec(r, axis)
                tt = [a + q * b for a, b in zip(tt, d)]
            poses[child] = (r, tt)
        return poses

    def world_points(self, names, positions):
        for link, (r, t) in self.link_poses(names, positions).items():
            for p in self.points.get(link, []):
                q = _mat_vec(r, p)
                yield link, (q[0] + t[0], q[1] + t[1], q[2] + t[2])


class Obstacle:
    """A box (half extents), sphere (radius) or cylinder (radius, half length) with a pose."""

    def __init__(self, name, kind, dims, position, quaternion=(0, 0, 0, 1)):
        self.name, self.kind, self.dims = name, kind, dims
        self.position = list(position)
        r = _quat(*quaternion)
        self.inverse = [[r[j][i] for j in range(3)] for i in range(3)]

    def contains(self, p):
        d = _mat_vec(self.inverse, [p[i] - self.position[i] for i in range(3)])
        if self.kind == 'box':
            return all(abs(d[i]) <= self.dims[i] for i in range(3))
        if self.kind == 'sphere':
            return d[0] ** 2 + d[1] ** 2 + d[2] ** 2 <= self.dims[0] ** 2
        if self.kind == 'cylinder':
            return d[0] ** 2 + d[1] ** 2 <= self.dims[0] ** 2 and abs(d[2]) <= self.dims[1]
        return False


def load_scene(path):
    """Obstacles of the project's scene YAML file (box/sphere/cylinder entries)."""
    with open(path) as f:
        return load_scene_text(f.read())


def load_scene_text(text):
    """Obstacles of the project's scene YAML text (box/sphere/cylinder entries)."""
    import yaml
    doc = yaml.safe_load(text)
    out = []
    for o in doc.get('obstacles', []):
        pose = o.get('pose', {})
        pos = pose.get('position', [0, 0, 0])
        quat = pose.get('orientation', [0, 0, 0, 1])
        if 'box' in o:
            out.append(Obstacle(o['id'], 'box', [s / 2 for s in o['box']['size']], pos, quat))
        elif 'sphere' in o:
            out.append(Obstacle(o['id'], 'sphere', [o['sphere']['radius']], pos, quat))
        elif 'cylinder' in o:
            c = o['cylinder']
            out.append(Obstacle(o['id'], 'cylinder', [c['radius'], c['length'] / 2], pos, quat))
    return out


def collision(robot, obstacles, names, positions, allowed=frozenset()):
    """(link, obstacle) of the first sampled robot point inside an obstacle, or None.
    Pairs (link, obstacle name) in `allowed` may touch."""
    for link, p in robot.world_points(names, positions):
        for o in obstacles:
            if (link, o.name) not in allowed and o.contains(p):
                return link, o.name
    return None


def first_collision(robot, obstacles, trajectory, step=0.02, allowed=frozenset()):
    """Re-checks a trajectory_msgs/JointTrajectory densely (joint steps <= `step` rad).
    Returns None when free, else (time index, link, obstacle); pairs (link, obstacle name)
    in `allowed` may touch."""
    names = list(trajectory.joint_names)
    pts = [list(p.positions) for p in trajectory.points]
    for i, q in enumerate(pts):
        segment = [q]
        if i > 0:
            prev = pts[i - 1]
            n = max(1, int(math.ceil(max(abs(a - b) for a, b in zip(q, prev)) / step)))
            segment = [[a + (b - a) * k / n for a, b in zip(prev, q)] for k in range(1, n + 1)]
        for s in segment:
            hit = collision(robot, obstacles, names, s, allowed)
            if hit is not None:
                return (i, *hit)
    return None
