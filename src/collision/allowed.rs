//! Allowed collisions by name, as MoveIt's allowed collision matrix is edited: a pair of links
//! may be allowed to touch (or, against the SRDF, be checked again), and chosen links may
//! touch an obstacle (the table the robot stands on, a part the gripper closes on before it
//! is attached).
//!
//! Entries are kept by name, so they outlive the things they name: an obstacle that is
//! removed and added again, or attached (it becomes a link of the robot under the same name),
//! keeps its entries. A namespace `ns/*` stands for every obstacle `ns/...`, now and later
//! (`pointcloud/*`: the boxes of every point cloud, as MoveIt's `<octomap>` entry).
//!
//! How the checks follow them on every backend ([`AllowedCollisions::checker`]):
//! - link pairs change the robot's allowed pairs;
//! - obstacles with allowed links leave the scene of the main checker; for each set of links
//!   allowed to touch some obstacles, one more checker of the same backend tests the robot
//!   without those links ([`RobotModel::obstacle_checks_except`]) against those obstacles,
//!   and the verdict is the conjunction ([`AllOf`]). The GPU-resident planner is not used
//!   then (it knows only one checker's world).

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};

use super::{make_checker, AllOf, Checker, CheckerOptions, CollisionError};
use crate::robot::{AllowedReason, PlanningGroup, RobotModel};
use crate::scene::cloud::CLOUD_NS;
use crate::scene::{AllowedCollision, Scene};

/// A change of the allowed collisions: every name of `names` with every name of `others`.
/// A name is a link of the robot, an attached object, an obstacle of the scene, a namespace
/// of obstacles written `ns/*` (the obstacles of markers in namespace `ns`, or
/// `pointcloud/*`, the point cloud's boxes, now and later) or an SRDF group (its links),
/// looked up in that order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AllowRequest {
    /// One side of the pairs.
    pub names: Vec<String>,
    /// The other side.
    pub others: Vec<String>,
    /// Allow them to touch (`true`) or check them (`false`).
    pub allowed: bool,
    /// Drop every earlier entry first (with no names: only that; with no names and no reset
    /// nothing changes).
    pub reset: bool,
}

/// Why an allowed-collision change cannot be made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("allowed collisions: '{name}' {reason}")]
pub struct AllowError {
    /// The name at fault (or the side of the request that is empty).
    pub name: String,
    /// What is wrong.
    pub reason: String,
}

/// The entries (see the module documentation), normalised: link pairs whose verdict differs
/// from the robot model's, and the links allowed to touch each obstacle.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AllowedCollisions {
    /// Link pairs (names in order) and whether they may touch.
    links: BTreeMap<(String, String), bool>,
    /// Obstacle id (or namespace pattern `ns/*`) to the links that may touch it.
    obstacles: BTreeMap<String, BTreeSet<String>>,
}

/// What a name of a request stands for.
enum Named {
    /// Links (one link or attached object, or a group's links).
    Links(Vec<String>),
    /// An obstacle of the scene, or a namespace of obstacles (`ns/*`).
    Obstacle(String),
}

fn ordered(a: &str, b: &str) -> (String, String) {
    if a <= b {
        (a.to_string(), b.to_string())
    } else {
        (b.to_string(), a.to_string())
    }
}

/// What `name` stands for for `robot` in `scene`; `None` when nothing has that name.
fn resolve(robot: &RobotModel, scene: &Scene, name: &str) -> Option<Named> {
    if robot.tree.link(name).is_ok() {
        return Some(Named::Links(vec![name.to_string()]));
    }
    if scene.get(name).is_some() {
        return Some(Named::Obstacle(name.to_string()));
    }
    if let Some(ns) = name.strip_suffix("/*") {
        // A namespace stands for its obstacles now and later (a marker namespace, the point
        // cloud's boxes): it must hold one now, except the point cloud's, whose boxes come
        // and go with each cloud.
        let prefix = format!("{ns}/");
        if ns == CLOUD_NS || scene.iter().any(|o| o.id.starts_with(&prefix)) {
            return Some(Named::Obstacle(name.to_string()));
        }
        return None;
    }
    let mut links = BTreeSet::new();
    group_links(robot, name, &mut links, 0).then(|| Named::Links(links.into_iter().collect()))
}

/// Adds the links of SRDF group `name` to `out` as MoveIt counts them (its links, the child
/// links of its joints and of its chains' joints, its subgroups' links); false when there is
/// no such group.
fn group_links(robot: &RobotModel, name: &str, out: &mut BTreeSet<String>, depth: usize) -> bool {
    let tree = &robot.tree;
    let Some(g) = robot
        .srdf
        .as_ref()
        .and_then(|s| s.groups.iter().find(|g| g.name == name))
    else {
        return false;
    };
    out.extend(g.links.iter().filter(|l| tree.link(l).is_ok()).cloned());
    let mut joints: Vec<usize> = g.joints.iter().filter_map(|j| tree.joint(j).ok()).collect();
    for (base, tip) in &g.chains {
        if let (Ok(b), Ok(t)) = (tree.link(base), tree.link(tip)) {
            joints.extend(tree.chain(b, t).unwrap_or_default());
        }
    }
    out.extend(
        joints
            .iter()
            .map(|&j| tree.links[tree.joints[j].child].name.clone()),
    );
    if depth < 8 {
        for s in &g.subgroups {
            group_links(robot, s, out, depth + 1);
        }
    }
    true
}

impl AllowedCollisions {
    /// Whether there is no entry.
    pub fn is_empty(&self) -> bool {
        self.links.is_empty() && self.obstacles.is_empty()
    }

    /// Applies `req` for `robot` in `scene`. Pairs of the same link are skipped; a link pair
    /// set to the robot model's own verdict drops its entry. With no names at all only
    /// `reset` acts (without it nothing changes: a query). Two obstacles, one empty side or
    /// an unknown name are errors naming it, and then nothing changes.
    pub fn apply(
        &mut self,
        robot: &RobotModel,
        scene: &Scene,
        req: &AllowRequest,
    ) -> Result<(), AllowError> {
        let bad = |name: &str, reason: String| AllowError {
            name: name.to_string(),
            reason,
        };
        if !(req.names.is_empty() && req.others.is_empty()) {
            for (side, list) in [("names", &req.names), ("others", &req.others)] {
                if list.is_empty() {
                    return Err(bad(side, "give at least one name on each side".into()));
                }
            }
        }
        let lookup = |n: &String| {
            resolve(robot, scene, n).ok_or_else(|| {
                bad(
                    n,
                    "is neither a link of the robot, an attached object, an obstacle of the \
                     scene, a namespace of obstacles (ns/*) nor a planning group"
                        .into(),
                )
            })
        };
        let names = req
            .names
            .iter()
            .map(lookup)
            .collect::<Result<Vec<_>, _>>()?;
        let others = req
            .others
            .iter()
            .map(lookup)
            .collect::<Result<Vec<_>, _>>()?;
        let mut out = if req.reset {
            AllowedCollisions::default()
        } else {
            self.clone()
        };
        for (x, nx) in names.iter().zip(&req.names) {
            for (y, ny) in others.iter().zip(&req.others) {
                match (x, y) {
                    (Named::Obstacle(_), Named::Obstacle(_)) => {
                        return Err(bad(
                            nx,
                            format!(
                                "and '{ny}' are both obstacles, which are never checked against \
                                 each other"
                            ),
                        ))
                    }
                    (Named::Links(ls), Named::Obstacle(o))
                    | (Named::Obstacle(o), Named::Links(ls)) => {
                        let entry = out.obstacles.entry(o.clone()).or_default();
                        for l in ls {
                            if req.allowed {
                                entry.insert(l.clone());
                            } else {
                                entry.remove(l);
                            }
                        }
                        if entry.is_empty() {
                            out.obstacles.remove(o);
                        }
                    }
                    (Named::Links(la), Named::Links(lb)) => {
                        for (a, b) in la.iter().flat_map(|a| lb.iter().map(move |b| (a, b))) {
                            if a == b {
                                continue;
                            }
                            let model = match (robot.tree.link(a), robot.tree.link(b)) {
                                (Ok(a), Ok(b)) => Some(robot.allowed.is_allowed(a, b)),
                                _ => None,
                            };
                            let key = ordered(a, b);
                            if model == Some(req.allowed) {
                                out.links.remove(&key);
                            } else {
                                out.links.insert(key, req.allowed);
                            }
                        }
                    }
                }
            }
        }
        *self = out;
        Ok(())
    }

    /// The entries `entries` (a scene file's list) applied one at a time for `robot` in
    /// `scene`, later ones winning; the first that cannot be applied is the error.
    pub fn from_entries(
        robot: &RobotModel,
        scene: &Scene,
        entries: &[AllowedCollision],
    ) -> Result<Self, AllowError> {
        let mut out = AllowedCollisions::default();
        out.apply_entries(robot, scene, entries)?;
        Ok(out)
    }

    /// Applies `entries` one at a time for `robot` in `scene`, later ones winning; the first
    /// that cannot be applied is the error, and then nothing changes.
    pub fn apply_entries(
        &mut self,
        robot: &RobotModel,
        scene: &Scene,
        entries: &[AllowedCollision],
    ) -> Result<(), AllowError> {
        let mut out = self.clone();
        for e in entries {
            out.apply(
                robot,
                scene,
                &AllowRequest {
                    names: vec![e.a.clone()],
                    others: vec![e.b.clone()],
                    allowed: e.allowed,
                    reset: false,
                },
            )?;
        }
        *self = out;
        Ok(())
    }

    /// Every entry, link pairs first, each pair in name order; obstacle entries as
    /// `(link, obstacle, true)`.
    pub fn entries(&self) -> Vec<AllowedCollision> {
        let mut out: Vec<AllowedCollision> = self
            .links
            .iter()
            .map(|((a, b), &allowed)| AllowedCollision {
                a: a.clone(),
                b: b.clone(),
                allowed,
            })
            .collect();
        for (o, links) in &self.obstacles {
            out.extend(links.iter().map(|l| AllowedCollision {
                a: l.clone(),
                b: o.clone(),
                allowed: true,
            }));
        }
        out
    }

    /// The links that may touch obstacle `id`: its own entries, its namespace's (`ns/*` for
    /// an id `ns/...`), and for a convex part `object/k` (k a number,
    /// [`crate::scene::part_id`]: a mesh split into parts, a MoveIt object's further
    /// shapes) its object's.
    pub fn links_for(&self, id: &str) -> BTreeSet<&str> {
        let mut out: BTreeSet<&str> = BTreeSet::new();
        if let Some(ls) = self.obstacles.get(id) {
            out.extend(ls.iter().map(String::as_str));
        }
        if let Some((ns, last)) = id.rsplit_once('/') {
            if let Some(ls) = self.obstacles.get(&format!("{ns}/*")) {
                out.extend(ls.iter().map(String::as_str));
            }
            if !last.is_empty() && last.bytes().all(|b| b.is_ascii_digit()) {
                if let Some(ls) = self.obstacles.get(ns) {
                    out.extend(ls.iter().map(String::as_str));
                }
            }
        }
        out
    }

    /// `robot` with the link-pair entries applied, and the entries of obstacles that are
    /// attached objects now (links of the robot under the same name). Entries naming a link
    /// the robot does not have (a detached object) are left out.
    pub fn checked_robot<'a>(&self, robot: &'a RobotModel) -> Cow<'a, RobotModel> {
        let held: Vec<(&str, &str)> = robot
            .attached()
            .iter()
            .flat_map(|o| {
                self.links_for(&o.id)
                    .into_iter()
                    .map(move |l| (l, o.id.as_str()))
            })
            .collect();
        if self.links.is_empty() && held.is_empty() {
            return Cow::Borrowed(robot);
        }
        let mut out = robot.clone();
        let pairs = self
            .links
            .iter()
            .map(|((a, b), &on)| (a.as_str(), b.as_str(), on));
        let held = held.into_iter().map(|(l, o)| (l, o, true));
        for (a, b, allowed) in pairs.chain(held) {
            if let (Ok(a), Ok(b)) = (out.tree.link(a), out.tree.link(b)) {
                if allowed {
                    out.allowed.insert(a, b, AllowedReason::User);
                } else {
                    out.allowed.remove(a, b);
                }
            }
        }
        Cow::Owned(out)
    }

    /// A checker of `backend` for `group` of `robot` over full state `base` in `scene` with
    /// the entries applied (see the module documentation): a plain checker when no obstacle
    /// of `scene` has allowed links, else an [`AllOf`].
    pub fn checker(
        &self,
        backend: &str,
        robot: &RobotModel,
        group: &PlanningGroup,
        base: &[f64],
        scene: &Scene,
        opts: CheckerOptions,
    ) -> Result<Box<dyn Checker>, CollisionError> {
        let robot = self.checked_robot(robot);
        let failed = |e: crate::scene::SceneError| CollisionError::Backend {
            backend: backend.to_string(),
            message: format!("allowed collisions: {e}"),
        };
        // Obstacles of the scene with allowed links, grouped by the set of those links.
        let mut rest = scene.clone();
        let mut parts: BTreeMap<BTreeSet<usize>, Scene> = BTreeMap::new();
        if !self.obstacles.is_empty() {
            for o in scene.iter() {
                let links: BTreeSet<usize> = self
                    .links_for(&o.id)
                    .into_iter()
                    .filter_map(|l| robot.tree.link(l).ok())
                    .collect();
                if links.is_empty() {
                    continue;
                }
                parts
                    .entry(links)
                    .or_insert_with(|| Scene::new(scene.frame()))
                    .add(o.clone())
                    .map_err(failed)?;
                rest.remove(&o.id).map_err(failed)?;
            }
        }
        let main = make_checker(backend, &robot, group, base, &rest, opts)?;
        if parts.is_empty() {
            return Ok(main);
        }
        let mut checkers = vec![main];
        for (links, part) in parts {
            let others = robot.obstacle_checks_except(&links);
            let has_shapes = !others.bodies.is_empty()
                || others.spherized.as_ref().is_some_and(|s| !s.is_empty());
            if has_shapes {
                checkers.push(make_checker(backend, &others, group, base, &part, opts)?);
            }
        }
        Ok(Box::new(AllOf::new(checkers)?))
    }
}

/// The entries of `entries` (a MoveIt allowed collision matrix's, [`Scene::matrix_collisions`])
/// whose two names `robot` or `scene` has, and the names left aside (each once, in order):
/// MoveIt leaves a matrix's unknown names aside, and a benchmark's matrix often names links
/// of another version of the robot.
pub fn known_entries(
    robot: &RobotModel,
    scene: &Scene,
    entries: &[AllowedCollision],
) -> (Vec<AllowedCollision>, Vec<String>) {
    let mut unknown: Vec<String> = Vec::new();
    let mut known = |name: &str| {
        let ok = resolve(robot, scene, name).is_some();
        if !ok && !unknown.iter().any(|u| u == name) {
            unknown.push(name.to_string());
        }
        ok
    };
    let kept = entries
        .iter()
        .filter(|e| {
            let (a, b) = (known(&e.a), known(&e.b));
            a && b
        })
        .cloned()
        .collect();
    (kept, unknown)
}

/// The allowed-collision entries `scene` brings for `robot`: its matrix's known ones
/// ([`known_entries`]) and then its own list ([`Scene::allowed_collisions`]), with the names
/// of the matrix left aside.
pub fn scene_entries(robot: &RobotModel, scene: &Scene) -> (Vec<AllowedCollision>, Vec<String>) {
    let (mut entries, unknown) = known_entries(robot, scene, scene.matrix_collisions());
    entries.extend_from_slice(scene.allowed_collisions());
    (entries, unknown)
}

/// [`make_checker`] for `robot` in `scene` with the scene's allowed-collision entries
/// ([`scene_entries`]) applied; an entry of the scene's own list naming nothing known is an
/// error.
pub fn make_scene_checker(
    backend: &str,
    robot: &RobotModel,
    group: &PlanningGroup,
    base: &[f64],
    scene: &Scene,
    opts: CheckerOptions,
) -> Result<Box<dyn Checker>, CollisionError> {
    let (entries, _) = scene_entries(robot, scene);
    let acm = AllowedCollisions::from_entries(robot, scene, &entries).map_err(|e| {
        CollisionError::Backend {
            backend: backend.to_string(),
            message: e.to_string(),
        }
    })?;
    acm.checker(backend, robot, group, base, scene, opts)
}
