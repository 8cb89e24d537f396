//! State and trajectory validity through the service: the node's `~/check_state` (MoveIt's
//! `check_state_validity` in spirit: is this state free, and if not, what touches what) and
//! `~/check_trajectory` (is a trajectory still free in the current scene: its points and the
//! motions between them, checked in one batch each on the node's backend).

use super::{cached_checker, PlanningService, ServiceError};
use crate::collision::{Checker, CollisionError, ConfigBatch, MotionBatch};
use crate::robot::{wrapped_difference, JointKind, PlanningGroup, LIMIT_TOLERANCE};
use crate::trajectory::ON_PATH_TOLERANCE;

/// A state validity request.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StateCheckRequest {
    /// Joint names and positions; joints not named take the current joint state. `None`:
    /// the current joint state itself.
    pub state: Option<(Vec<String>, Vec<f64>)>,
    /// The planning group whose joints must be named (with `state`) and whose limits are
    /// checked; `None` or empty: the settings' group. Collisions are checked for the whole
    /// robot either way.
    pub group: Option<String>,
}

/// Why a state is or is not valid.
#[derive(Debug, Clone, PartialEq)]
pub struct StateCheck {
    /// Within the limits and free of collisions.
    pub valid: bool,
    /// The pairs in contact ("'link' with obstacle 'id'", "'link' with 'link'"); empty when
    /// free. Attached objects are named by their ids.
    pub contacts: Vec<String>,
    /// The planning-group joints outside their limits, each with its value and limits.
    pub out_of_limits: Vec<String>,
    /// The backend that checked it.
    pub backend: String,
}

/// The first problem on what is left of a trajectory being executed
/// ([`PlanningService::check_remaining`]).
#[derive(Debug, Clone, PartialEq)]
pub struct RemainingProblem {
    /// The invalid point, or the first point of the invalid motion (an index of the whole
    /// trajectory).
    pub point: usize,
    /// Whether the motion from `point` to the next is what is invalid (else the point).
    pub motion: bool,
    /// What is wrong, naming the points and the contacts.
    pub message: String,
}

/// Which point of a trajectory the robot has passed last, `elapsed` seconds after its start:
/// the last one whose time (`times`, seconds from the start, ascending) is not after
/// `elapsed` (0 before the first).
pub fn point_at(times: &[f64], elapsed: f64) -> usize {
    times.iter().rposition(|&t| t <= elapsed).unwrap_or(0)
}

/// A trajectory validity request.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TrajectoryCheckRequest {
    /// The joints of every point. Every planning-group joint must be among them; other
    /// joints take the current state and, when named, must keep one value along the
    /// trajectory (the checker holds the joints outside the group fixed).
    pub joint_names: Vec<String>,
    /// Positions, one list per point, in the order of `joint_names`.
    pub points: Vec<Vec<f64>>,
    /// Check resolution (joint-space distance between checked configurations of a motion);
    /// `None`: the node's `resolution`, or its group's `ompl_planning.yaml` step where finer.
    pub resolution: Option<f64>,
    /// The planning group the trajectory moves. `None` or empty: the SRDF group whose joints
    /// are exactly `joint_names` where the settings' group's are not
    /// ([`PlanningService::group_of_joints`]), else the settings' group.
    pub group: Option<String>,
}

/// Which points and motions of a trajectory are valid.
#[derive(Debug, Clone, PartialEq)]
pub struct TrajectoryCheck {
    /// Every point and every motion valid, every point within the limits.
    pub valid: bool,
    /// Per point: within the limits and free.
    pub points_valid: Vec<bool>,
    /// Per motion from point `i` to point `i + 1`: every configuration along it free (the
    /// conservative swept check the planners use).
    pub segments_valid: Vec<bool>,
    /// The first invalid point, with what is wrong there (contacts or limits).
    pub first_invalid_point: Option<(usize, Vec<String>)>,
    /// The first invalid motion (between two valid points, or reaching an invalid one).
    pub first_invalid_segment: Option<usize>,
    /// The resolution used.
    pub resolution: f64,
    /// The backend that checked it.
    pub backend: String,
}

/// Continuous joints take the short way round in the checker's motions; a trajectory point
/// to point moves them by the difference of the values (what a controller interpolates).
/// Motions are cut into pieces no continuous joint moves more than this in, so both agree.
const MAX_CONTINUOUS_STEP: f64 = 3.0;

/// How far (rad or m) a joint of the current state may be from a trajectory's first point
/// for the trajectory to be sent to a controller (MoveIt's default allowed start tolerance).
pub const START_TOLERANCE: f64 = 0.01;

impl PlanningService {
    /// Whether a robot state is valid in the current scene, carrying the attached objects:
    /// the planning-group joints within their limits and no pair of bodies within the margin
    /// (see [`Checker::contacts`]). Errors name the input at fault (unknown joints, values that
    /// are not finite, a group joint without a value).
    pub fn check_state(&mut self, req: &StateCheckRequest) -> Result<StateCheck, ServiceError> {
        let which = "state";
        let group = self.request_group(req.group.as_deref())?;
        let (state, q) = self.state_of(which, &req.state, &group)?;
        let out_of_limits = limit_violations(&group, &q);
        self.ensure_checker(&group, &state)?;
        let checker = cached_checker(&self.cached)?;
        let contacts = contacts_at(checker, &q)?;
        Ok(StateCheck {
            valid: out_of_limits.is_empty() && contacts.is_empty(),
            contacts,
            out_of_limits,
            backend: checker.backend().name().to_string(),
        })
    }

    /// Which points and motions of a trajectory are valid in the current scene: all points
    /// in one batch, all motions in another (so a long trajectory is one launch each on the
    /// GPU). Errors name the input at fault.
    pub fn check_trajectory(
        &mut self,
        req: &TrajectoryCheckRequest,
    ) -> Result<TrajectoryCheck, ServiceError> {
        let which = "trajectory";
        let bad = |message: String| ServiceError::BadJointList { which, message };
        let group = self.request_group(self.trajectory_group(req).as_deref())?;
        let resolution = req
            .resolution
            .unwrap_or_else(|| self.resolution_for(&group));
        if !(resolution > 0.0 && resolution.is_finite()) {
            return Err(ServiceError::BadOption {
                name: "resolution",
                reason: format!("must be positive and finite, got {resolution}"),
            });
        }
        let Some(first) = req.points.first() else {
            return Err(bad("the trajectory has no points".into()));
        };
        for (i, p) in req.points.iter().enumerate() {
            if p.len() != req.joint_names.len() {
                return Err(bad(format!(
                    "point {i} has {} positions for {} joint names",
                    p.len(),
                    req.joint_names.len()
                )));
            }
        }
        // The base state (joints outside the group) from the first point; group joints of
        // every point read from its own positions.
        let given = Some((req.joint_names.clone(), first.clone()));
        let (base_state, _) = self.state_of(which, &given, &group)?;
        let mut configs = Vec::with_capacity(req.points.len());
        for (i, p) in req.points.iter().enumerate() {
            let (state, given) = self.apply_named(which, &base_state, &req.joint_names, p)?;
            if let Some(v) = (0..state.len())
                .find(|&v| given[v] && !group.variables.contains(&v) && state[v] != base_state[v])
            {
                let name = self.variable_name(v);
                return Err(bad(format!(
                    "joint '{name}' is outside planning group '{}' and moves at point {i} \
                     (only the group's joints may move)",
                    group.name
                )));
            }
            configs.push(group_values(&group, &state));
        }
        self.ensure_checker(&group, &base_state)?;
        let checker = cached_checker(&self.cached)?;
        let space = &group.space;

        let failed = checker_error(checker);
        let mut batch = ConfigBatch::new(space.dof());
        for q in &configs {
            batch.push(q).map_err(&failed)?;
        }
        let free = checker.check_configs(&batch).map_err(&failed)?;
        let limits: Vec<Vec<String>> = configs
            .iter()
            .map(|q| limit_violations(&group, q))
            .collect();
        let points_valid: Vec<bool> = free
            .iter()
            .zip(&limits)
            .map(|(&f, l)| f && l.is_empty())
            .collect();

        // Motions: each maximal straight run of points checked as one motion (the planners'
        // trajectories are timed along straight path segments: a piece of a motion checked
        // on its own can fail where the whole one passed, its checked configurations and
        // their growths differ); the motions of a run that fails are then checked one by one.
        // Both verdicts are conservative, so a motion passing either is free.
        let runs = straight_runs(&configs);
        let run_ok = motions_valid(checker, &group, &configs, &runs, resolution)?;
        let mut segments_valid = vec![false; configs.len().saturating_sub(1)];
        let mut retry = Vec::new();
        for (&(a, b), &ok) in runs.iter().zip(&run_ok) {
            segments_valid[a..b].fill(ok);
            if !ok && b - a > 1 {
                retry.extend((a..b).map(|s| (s, s + 1)));
            }
        }
        let retry_ok = motions_valid(checker, &group, &configs, &retry, resolution)?;
        for (&(s, _), &ok) in retry.iter().zip(&retry_ok) {
            segments_valid[s] = ok;
        }

        let first_invalid_point = match points_valid.iter().position(|v| !v) {
            Some(i) => {
                let mut why = limits[i].clone();
                why.extend(contacts_at(checker, &configs[i])?);
                Some((i, why))
            }
            None => None,
        };
        let first_invalid_segment = segments_valid.iter().position(|v| !v);
        Ok(TrajectoryCheck {
            valid: first_invalid_point.is_none() && first_invalid_segment.is_none(),
            points_valid,
            segments_valid,
            first_invalid_point,
            first_invalid_segment,
            resolution,
            backend: checker.backend().name().to_string(),
        })
    }

    /// The group a trajectory check is for, by name (`None`: the settings' group): see
    /// [`TrajectoryCheckRequest::group`].
    fn trajectory_group(&self, req: &TrajectoryCheckRequest) -> Option<String> {
        match req.group.as_deref().filter(|g| !g.is_empty()) {
            Some(name) => Some(name.to_string()),
            None => self.group_of_joints(&req.joint_names),
        }
    }

    /// Execution monitoring: whether the part of a trajectory from point `from` on (the
    /// robot is on its way from point `from` to the next) is still valid in the current
    /// scene, as [`PlanningService::check_trajectory`] answers for those points and motions.
    /// `None` when it is; otherwise the first problem along the way, with indices of the
    /// whole trajectory and, where the checker names them, what touches what. The motion
    /// under way is checked whole, the part already passed included: a conservative answer.
    pub fn check_remaining(
        &mut self,
        req: &TrajectoryCheckRequest,
        from: usize,
    ) -> Result<Option<RemainingProblem>, ServiceError> {
        if from >= req.points.len() {
            return Err(ServiceError::BadOption {
                name: "from",
                reason: format!(
                    "point {from} is past the trajectory's last point ({} points)",
                    req.points.len()
                ),
            });
        }
        let rest = TrajectoryCheckRequest {
            joint_names: req.joint_names.clone(),
            points: req.points[from..].to_vec(),
            resolution: req.resolution,
            group: req.group.clone(),
        };
        let check = self.check_trajectory(&rest)?;
        let segment = check.first_invalid_segment;
        match check.first_invalid_point {
            Some((i, why)) if segment.is_none_or(|s| i <= s) => Ok(Some(RemainingProblem {
                point: from + i,
                motion: false,
                message: format!("point {} is invalid: {}", from + i, why.join("; ")),
            })),
            _ => match segment {
                None => Ok(None),
                Some(s) => {
                    let (i, j) = (from + s, from + s + 1);
                    // What touches what: on this motion, or (the swept check is conservative:
                    // its samples may all be free) the first contact further on.
                    let mut found = None;
                    let group = self.trajectory_group(req);
                    for k in s..rest.points.len() - 1 {
                        let (a, b) = (&rest.points[k], &rest.points[k + 1]);
                        let (names, group) = (&req.joint_names, group.clone());
                        if let Some(hit) =
                            self.motion_contacts(names, group, (a, b), check.resolution)?
                        {
                            found = Some((from + k, hit));
                            break;
                        }
                    }
                    let mut message = format!("the motion from point {i} to point {j} collides");
                    match found {
                        Some((k, (t, why))) if k == i => message.push_str(&format!(
                            " ({:.0} % of the way: {})",
                            t * 100.0,
                            why.join("; ")
                        )),
                        Some((k, (t, why))) => message.push_str(&format!(
                            " (within the check's margin; the first contact is {:.0} % of the \
                             way from point {k} to point {}: {})",
                            t * 100.0,
                            k + 1,
                            why.join("; ")
                        )),
                        None => {}
                    }
                    Ok(Some(RemainingProblem {
                        point: i,
                        motion: true,
                        message,
                    }))
                }
            },
        }
    }

    /// The first configuration in contact on the straight motion from `a` to `b` (positions
    /// of `names`), sampled at `resolution`: how far along (0..1) and what touches what.
    /// `None` when no sample is in contact (the swept check is conservative: it can refuse
    /// a motion whose samples are all free).
    fn motion_contacts(
        &mut self,
        names: &[String],
        group: Option<String>,
        (a, b): (&[f64], &[f64]),
        resolution: f64,
    ) -> Result<Option<(f64, Vec<String>)>, ServiceError> {
        let longest = a
            .iter()
            .zip(b)
            .map(|(x, y)| (y - x).abs())
            .fold(0.0, f64::max);
        // Bounded: a long motion at a fine resolution is named at 1000 samples at most.
        let steps = ((longest / resolution).ceil() as usize).clamp(1, 1000);
        for k in 0..=steps {
            let t = k as f64 / steps as f64;
            let q: Vec<f64> = a.iter().zip(b).map(|(x, y)| x + (y - x) * t).collect();
            let state = self.check_state(&StateCheckRequest {
                state: Some((names.to_vec(), q)),
                group: group.clone(),
            })?;
            if !state.contacts.is_empty() {
                return Ok(Some((t, state.contacts)));
            }
        }
        Ok(None)
    }

    /// Execution monitoring by the joint state: the first point of the motion, among a
    /// trajectory's motions `0..=upto` (the one from point `i` to point `i + 1`), that lies
    /// nearest to where the current joint state has the trajectory's joints `names`; the
    /// earliest of equally near ones. Continuous joints are compared the short way round from
    /// the motion's start. `None` without a joint state, for fewer than two points, or for a
    /// name the robot lacks or a point of another length.
    pub fn passed_point(
        &self,
        names: &[String],
        points: &[Vec<f64>],
        upto: usize,
    ) -> Option<usize> {
        if !self.has_current || points.len() < 2 {
            return None;
        }
        // The current value of every named joint, and whether it is continuous.
        let mut now = Vec::with_capacity(names.len());
        for name in names {
            let joint = self.robot.tree.joints.iter().find(|j| &j.name == name)?;
            let v = joint.variable?;
            now.push((self.current[v], joint.kind == JointKind::Continuous));
        }
        if points.iter().any(|p| p.len() != names.len()) {
            return None;
        }
        let mut best = (f64::INFINITY, 0);
        for i in 0..=upto.min(points.len() - 2) {
            let (a, b) = (&points[i], &points[i + 1]);
            // The motion's step d and the state's offset e from its start.
            let (mut dd, mut de) = (0.0, 0.0);
            let offsets: Vec<(f64, f64)> = now
                .iter()
                .zip(a.iter().zip(b))
                .map(|(&(x, continuous), (&a, &b))| {
                    let e = if continuous {
                        wrapped_difference(a, x)
                    } else {
                        x - a
                    };
                    (b - a, e)
                })
                .collect();
            for &(d, e) in &offsets {
                dd += d * d;
                de += d * e;
            }
            let t = if dd > 0.0 {
                (de / dd).clamp(0.0, 1.0)
            } else {
                0.0
            };
            let gap: f64 = offsets.iter().map(|&(d, e)| (e - t * d).powi(2)).sum();
            if gap < best.0 {
                best = (gap, i);
            }
        }
        Some(best.1)
    }

    /// Where the current joint state is farther than `tolerance` from a trajectory's first
    /// point (`names`, `first`): one line per such joint, naming it with both values
    /// (continuous joints compared the short way round); empty when the trajectory may start
    /// here. No joint state yet, an unknown joint or a malformed point is an error naming it.
    pub fn start_deviations(
        &self,
        names: &[String],
        first: &[f64],
        tolerance: f64,
    ) -> Result<Vec<String>, ServiceError> {
        let which = "trajectory start";
        if !self.has_current {
            return Err(ServiceError::BadJointList {
                which,
                message: "no joint state received yet: where the robot is is unknown".into(),
            });
        }
        let (state, given) = self.apply_named(which, &self.current, names, first)?;
        let mut out = Vec::new();
        for joint in &self.robot.tree.joints {
            let Some(v) = joint.variable.filter(|&v| given.get(v) == Some(&true)) else {
                continue;
            };
            let (now, x) = (self.current[v], state[v]);
            let gap = if joint.kind == JointKind::Continuous {
                wrapped_difference(now, x).abs()
            } else {
                (x - now).abs()
            };
            if gap > tolerance {
                out.push(format!(
                    "joint '{}' is at {now:.4}, the trajectory starts at {x:.4} \
                     ({gap:.4} apart, tolerance {tolerance})",
                    joint.name
                ));
            }
        }
        Ok(out)
    }

    /// The full state of `given` (joints not named: the current state) and its group
    /// configuration (limits not checked); `None` is the current state. Without a joint
    /// state every group joint must be named.
    pub(super) fn state_of(
        &self,
        which: &'static str,
        given: &Option<(Vec<String>, Vec<f64>)>,
        group: &PlanningGroup,
    ) -> Result<(Vec<f64>, Vec<f64>), ServiceError> {
        let (state, named) = match given {
            Some((names, positions)) => self.apply_named(which, &self.current, names, positions)?,
            None if self.has_current => (self.current.clone(), vec![true; self.current.len()]),
            None => {
                return Err(ServiceError::BadJointList {
                    which,
                    message: "no joint positions given and no joint state received yet".into(),
                })
            }
        };
        if !self.has_current {
            if let Some(k) = group
                .variables
                .iter()
                .position(|&v| !named.get(v).copied().unwrap_or(false))
            {
                return Err(ServiceError::MissingJoint {
                    which,
                    joint: group.space.names.get(k).cloned().unwrap_or_default(),
                });
            }
        }
        let q = group_values(group, &state);
        Ok((state, q))
    }

    /// The name of the joint that sets state variable `v`.
    fn variable_name(&self, v: usize) -> String {
        self.robot
            .tree
            .joints
            .iter()
            .find(|j| j.variable == Some(v))
            .map_or_else(|| format!("variable {v}"), |j| j.name.clone())
    }
}

/// Maximal runs of consecutive points on one straight line: `(first, last)` point indices,
/// each point of a run within [`ON_PATH_TOLERANCE`] of the line from its first to its last
/// point and in order along it (values as given, as a controller interpolates them). Every
/// motion between consecutive points belongs to exactly one run.
fn straight_runs(points: &[Vec<f64>]) -> Vec<(usize, usize)> {
    let mut runs = Vec::new();
    let mut a = 0;
    while a + 1 < points.len() {
        let mut b = a + 1;
        while b + 1 < points.len() && on_line(&points[a..=b + 1]) {
            b += 1;
        }
        runs.push((a, b));
        a = b;
    }
    runs
}

/// Whether the inner points of `run` lie in order on the segment from its first point to
/// its last.
fn on_line(run: &[Vec<f64>]) -> bool {
    let (Some(first), Some(last)) = (run.first(), run.last()) else {
        return true;
    };
    let d: Vec<f64> = last.iter().zip(first).map(|(b, a)| b - a).collect();
    let dd: f64 = d.iter().map(|x| x * x).sum();
    if dd == 0.0 {
        return false;
    }
    let tol = ON_PATH_TOLERANCE / dd.sqrt();
    let mut previous = 0.0;
    for q in &run[1..run.len() - 1] {
        let e: Vec<f64> = q.iter().zip(first).map(|(x, a)| x - a).collect();
        let t = d.iter().zip(&e).map(|(x, y)| x * y).sum::<f64>() / dd;
        let off = e
            .iter()
            .zip(&d)
            .any(|(e, d)| (e - t * d).abs() > ON_PATH_TOLERANCE);
        if off || t < previous - tol || t > 1.0 + tol {
            return false;
        }
        previous = t;
    }
    true
}

/// Verdicts of the straight motions `configs[a] -> configs[b]` of `pairs`, in one batch;
/// continuous joints move by the difference of their values, the motions cut into pieces
/// no continuous joint turns more than [`MAX_CONTINUOUS_STEP`] in (the checker takes the
/// short way round within a piece).
fn motions_valid(
    checker: &dyn Checker,
    group: &PlanningGroup,
    configs: &[Vec<f64>],
    pairs: &[(usize, usize)],
    resolution: f64,
) -> Result<Vec<bool>, ServiceError> {
    let space = &group.space;
    let failed = checker_error(checker);
    let mut motions = MotionBatch::new(space.dof());
    let mut owner = Vec::new();
    for (m, &(ia, ib)) in pairs.iter().enumerate() {
        let (a, b) = (&configs[ia], &configs[ib]);
        let pieces = (0..space.dof())
            .filter(|&j| space.continuous[j])
            .map(|j| ((b[j] - a[j]).abs() / MAX_CONTINUOUS_STEP).ceil() as usize)
            .max()
            .unwrap_or(1)
            .max(1);
        let at = |t: f64| -> Vec<f64> { a.iter().zip(b).map(|(x, y)| x + (y - x) * t).collect() };
        for k in 0..pieces {
            let from = if k == 0 {
                a.clone()
            } else {
                at(k as f64 / pieces as f64)
            };
            let to = if k + 1 == pieces {
                b.clone()
            } else {
                at((k + 1) as f64 / pieces as f64)
            };
            motions.push(&from, &to).map_err(&failed)?;
            owner.push(m);
        }
    }
    let mut valid = vec![true; pairs.len()];
    if !motions.is_empty() {
        let verdicts = checker
            .check_motions(&motions, resolution)
            .map_err(&failed)?;
        for (ok, &m) in verdicts.iter().zip(&owner) {
            if !ok {
                valid[m] = false;
            }
        }
    }
    Ok(valid)
}

/// The group configuration of a full state.
fn group_values(group: &PlanningGroup, state: &[f64]) -> Vec<f64> {
    group
        .variables
        .iter()
        .map(|&v| state.get(v).copied().unwrap_or(f64::NAN))
        .collect()
}

/// The group joints of `q` outside their limits (by more than [`LIMIT_TOLERANCE`], as the
/// planner's requests are judged), each as "joint 'name' position x is outside [lo, hi]".
fn limit_violations(group: &PlanningGroup, q: &[f64]) -> Vec<String> {
    let space = &group.space;
    (0..space.dof())
        .filter(|&k| {
            !space.continuous[k]
                && (q[k] < space.lower[k] - LIMIT_TOLERANCE
                    || q[k] > space.upper[k] + LIMIT_TOLERANCE)
        })
        .map(|k| {
            format!(
                "joint '{}' position {} is outside its limits [{}, {}]",
                space.names[k], q[k], space.lower[k], space.upper[k]
            )
        })
        .collect()
}

/// What collides at `q`: the backend's named pairs, or one line saying that it collides
/// where the backend cannot name them (the verdict is the backend's either way).
fn contacts_at(checker: &dyn Checker, q: &[f64]) -> Result<Vec<String>, ServiceError> {
    match checker.contacts(q) {
        Some(named) => Ok(named),
        None if checker.check_config(q).map_err(checker_error(checker))? => Ok(Vec::new()),
        None => Ok(vec![format!(
            "in collision (the {} backend does not name the pairs)",
            checker.backend().name()
        )]),
    }
}

/// A failed check of `checker` as the service's error.
fn checker_error(checker: &dyn Checker) -> impl Fn(CollisionError) -> ServiceError + '_ {
    move |source| ServiceError::Checker {
        backend: checker.backend().name().to_string(),
        source,
    }
}
