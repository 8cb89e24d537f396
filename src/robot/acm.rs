//! Allowed collision pairs: link pairs the checker never tests against each other.

use std::collections::BTreeSet;

use super::load::RobotModel;
use super::model::KinematicTree;

/// Why a link pair is allowed to touch.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum AllowedReason {
    /// Connected by exactly one moving joint (possibly with fixed joints around it).
    Adjacent,
    /// Rigidly connected (no moving joint between them): their relative pose never changes,
    /// so they either always or never touch; either way checking them is pointless.
    Rigid,
    /// Listed in the SRDF's `disable_collisions`.
    Srdf,
    /// An attached object and the link holding it or one of its touch links.
    Attached,
    /// Allowed by the user at run time (the planning service's allowed collisions).
    User,
}

/// A symmetric set of allowed link pairs, stored with the smaller index first.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct AllowedPairs {
    pairs: BTreeSet<(usize, usize)>,
    reasons: Vec<((usize, usize), AllowedReason)>,
}

fn key(a: usize, b: usize) -> (usize, usize) {
    if a <= b {
        (a, b)
    } else {
        (b, a)
    }
}

/// Number of moving joints on the tree path between two links.
fn moving_joints_between(tree: &KinematicTree, a: usize, b: usize) -> usize {
    // Collect a's ancestors with the count of moving joints from a up to them.
    let mut up_a = Vec::new();
    let mut l = a;
    let mut count = 0;
    up_a.push((l, 0));
    while let Some(j) = tree.links[l].parent_joint {
        if tree.joints[j].kind.is_moving() {
            count += 1;
        }
        l = tree.joints[j].parent;
        up_a.push((l, count));
    }
    let mut l = b;
    let mut count_b = 0;
    loop {
        if let Some(&(_, ca)) = up_a.iter().find(|(x, _)| *x == l) {
            return ca + count_b;
        }
        match tree.links[l].parent_joint {
            Some(j) => {
                if tree.joints[j].kind.is_moving() {
                    count_b += 1;
                }
                l = tree.joints[j].parent;
            }
            None => return usize::MAX,
        }
    }
}

impl AllowedPairs {
    /// Allowed pairs of a robot: adjacent and rigidly connected links among those with
    /// collision geometry, plus the SRDF's `disable_collisions`.
    ///
    /// Pairs separated by two or more moving joints are only allowed when the SRDF says so:
    /// MoveIt's setup assistant finds "never in collision" pairs by sampling, which is not a
    /// proof, so we take them from the SRDF as the user's decision but never invent them.
    pub fn compute(model: &RobotModel) -> Self {
        let mut out = AllowedPairs::default();
        let links = model.collision_links();
        for (i, &a) in links.iter().enumerate() {
            for &b in &links[i + 1..] {
                match moving_joints_between(&model.tree, a, b) {
                    0 => out.insert(a, b, AllowedReason::Rigid),
                    1 => out.insert(a, b, AllowedReason::Adjacent),
                    _ => {}
                }
            }
        }
        if let Some(srdf) = &model.srdf {
            for (a, b) in &srdf.disabled {
                if let (Ok(a), Ok(b)) = (model.tree.link(a), model.tree.link(b)) {
                    out.insert(a, b, AllowedReason::Srdf);
                }
            }
        }
        out
    }

    /// Marks a pair as allowed.
    pub fn insert(&mut self, a: usize, b: usize, reason: AllowedReason) {
        if self.pairs.insert(key(a, b)) {
            self.reasons.push((key(a, b), reason));
        }
    }

    /// Every pair of `model`'s collision links: a model with these checks no self pairs.
    pub fn every_pair(model: &RobotModel) -> Self {
        let mut out = AllowedPairs::default();
        let mut links = model.collision_links();
        if let Some(s) = &model.spherized {
            links.extend(s.iter().map(|(l, _)| *l));
            links.sort_unstable();
            links.dedup();
        }
        for (i, &a) in links.iter().enumerate() {
            for &b in &links[i + 1..] {
                out.insert(a, b, AllowedReason::User);
            }
        }
        out
    }

    /// Marks a pair as checked again (whatever allowed it); false when it was not allowed.
    pub fn remove(&mut self, a: usize, b: usize) -> bool {
        let k = key(a, b);
        self.reasons.retain(|(p, _)| *p != k);
        self.pairs.remove(&k)
    }

    /// True when links `a` and `b` are never checked against each other (always for `a == b`).
    pub fn is_allowed(&self, a: usize, b: usize) -> bool {
        a == b || self.pairs.contains(&key(a, b))
    }

    /// Number of allowed pairs.
    pub fn len(&self) -> usize {
        self.pairs.len()
    }

    /// True when no pair is allowed.
    pub fn is_empty(&self) -> bool {
        self.pairs.is_empty()
    }

    /// Each allowed pair with the first reason it was allowed for.
    pub fn reasons(&self) -> &[((usize, usize), AllowedReason)] {
        &self.reasons
    }
}

impl RobotModel {
    /// A copy for checking the robot against obstacles that `links` may touch: the bodies
    /// (and spheres) of `links` are gone and no self pair is checked, so a checker built on it
    /// tests only the other links against its scene. The planning service joins such a
    /// checker to the one for the rest of the scene ([`crate::collision::AllOf`]).
    pub fn obstacle_checks_except(&self, links: &BTreeSet<usize>) -> RobotModel {
        let mut out = self.clone();
        out.bodies.retain(|b| !links.contains(&b.link));
        if let Some(s) = &mut out.spherized {
            s.retain(|(l, _)| !links.contains(l));
        }
        out.allowed = AllowedPairs::every_pair(&out);
        out
    }
}
