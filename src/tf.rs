//! A plain-Rust transform buffer in the spirit of tf2's `BufferCore`.
//!
//! The ROS node fills it from `/tf` and `/tf_static` (one [`TfBuffer::set_transform`] call per
//! `geometry_msgs/TransformStamped`), and the planning service asks it for the pose of a frame
//! (a camera, `map`) in the planning frame. No ROS types appear here.
//!
//! Semantics:
//! - Frames form a forest: every frame has at most one parent. A transform `parent <- child`
//!   maps points given in `child` into `parent`. A transform that would close a cycle is
//!   refused.
//! - A link is either static (holds for all time; a later static transform replaces it) or
//!   dynamic (a history of stamped samples, `cache_ns` long, measured back from its newest
//!   sample). A transform naming another parent, or of the other kind, replaces the link and
//!   its history: the newest information wins (tf2 keeps the parent per sample).
//! - Dynamic lookups interpolate between the two samples around the stamp (translation
//!   linearly, rotation by slerp along the shorter arc). A stamp at most `tolerance_ns` outside
//!   a link's kept history uses the nearest sample; further out is [`TfError::Extrapolation`].
//! - A dynamic sample older than the link's newest minus `cache_ns` is ignored (not an error),
//!   as tf2 does; after a clock jump back call [`TfBuffer::clear_dynamic`].
//! - One leading `/` in a frame name is stripped, as tf2 does.
//! - A refused transform leaves the buffer unchanged; no input makes it panic.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, RwLock};

use nalgebra::{Isometry3, Translation3, UnitQuaternion};

/// Time stamps are integer nanoseconds (ROS `builtin_interfaces/Time` sec*1e9+nanosec).
pub type StampNs = i64;

/// 10 s of history per dynamic frame, like tf2.
pub const DEFAULT_CACHE_NS: StampNs = 10_000_000_000;

/// A buffer shared between the `/tf` listeners (writers) and the planning service (reader).
pub type SharedTf = Arc<RwLock<TfBuffer>>;

/// The default lookup tolerance outside a dynamic link's history: 0.1 s.
const DEFAULT_TOLERANCE_NS: StampNs = 100_000_000;

/// Errors of the transform buffer.
///
/// `Display` and `std::error::Error` are implemented by hand: `thiserror` would take the
/// `source` field of [`TfError::NotConnected`] for an error source, and it is a frame name.
#[derive(Debug, Clone, PartialEq)]
pub enum TfError {
    /// A transform was refused (bad names, non-finite numbers, a degenerate rotation, or a
    /// cycle).
    InvalidTransform {
        /// The parent frame as given.
        parent: String,
        /// The child frame as given.
        child: String,
        /// Why it was refused.
        reason: String,
    },
    /// No transform mentions the frame.
    UnknownFrame {
        /// The frame looked up.
        frame: String,
    },
    /// Both frames are known but lie in different trees.
    NotConnected {
        /// The target frame.
        target: String,
        /// The source frame.
        source: String,
    },
    /// The stamp lies outside one link's kept history by more than the tolerance.
    Extrapolation {
        /// The child frame of the link.
        frame: String,
        /// The parent frame of the link.
        parent: String,
        /// The stamp asked for.
        stamp: StampNs,
        /// The oldest sample kept.
        oldest: StampNs,
        /// The newest sample kept.
        newest: StampNs,
    },
}

impl std::fmt::Display for TfError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TfError::InvalidTransform { parent, child, reason } => {
                write!(f, "transform from parent '{parent}' to child '{child}' refused: {reason}")
            }
            TfError::UnknownFrame { frame } => {
                write!(f, "frame '{frame}' is unknown: no transform mentions it")
            }
            TfError::NotConnected { target, source } => write!(
                f,
                "frames '{target}' and '{source}' are not connected: they lie in different transform trees"
            ),
            TfError::Extrapolation { frame, parent, stamp, oldest, newest } => write!(
                f,
                "cannot look up '{frame}' in its parent '{parent}' at {stamp} ns: that link has \
                 samples only from {oldest} ns to {newest} ns (would need extrapolation)"
            ),
        }
    }
}

impl std::error::Error for TfError {}

/// The poses of one link (child in parent).
#[derive(Debug, Clone)]
enum LinkData {
    /// Holds for all time.
    Static(Isometry3<f64>),
    /// Samples in increasing stamp order; never empty.
    Dynamic(Vec<(StampNs, Isometry3<f64>)>),
}

/// One child's link to its parent.
#[derive(Debug, Clone)]
struct Link {
    parent: String,
    data: LinkData,
}

/// A buffer of static and time-stamped transforms between named frames; see the module docs.
#[derive(Debug, Clone)]
pub struct TfBuffer {
    /// Keyed by child frame.
    links: BTreeMap<String, Link>,
    cache_ns: StampNs,
    tolerance_ns: StampNs,
}

impl Default for TfBuffer {
    /// `TfBuffer::new(DEFAULT_CACHE_NS, 100_000_000)`: 10 s of history, 0.1 s tolerance.
    fn default() -> Self {
        TfBuffer::new(DEFAULT_CACHE_NS, DEFAULT_TOLERANCE_NS)
    }
}

/// Strips one leading '/', as tf2 does.
fn strip(frame: &str) -> &str {
    frame.strip_prefix('/').unwrap_or(frame)
}

/// Interpolates between two poses: translation linearly, rotation by slerp on the shorter arc.
fn interpolate(p0: &Isometry3<f64>, p1: &Isometry3<f64>, a: f64) -> Isometry3<f64> {
    let t = p0.translation.vector.lerp(&p1.translation.vector, a);
    let q0 = p0.rotation;
    let mut q1 = p1.rotation;
    if q0.coords.dot(&q1.coords) < 0.0 {
        q1 = UnitQuaternion::new_unchecked(-q1.into_inner());
    }
    let q = q0
        .try_slerp(&q1, a, 1e-12)
        .unwrap_or_else(|| q0.nlerp(&q1, a));
    Isometry3::from_parts(Translation3::from(t), q)
}

impl TfBuffer {
    /// An empty buffer keeping `cache_ns` of history per dynamic link and accepting lookups up
    /// to `tolerance_ns` outside a link's history (clamped to its nearest sample). Negative
    /// values are treated as 0.
    pub fn new(cache_ns: StampNs, tolerance_ns: StampNs) -> TfBuffer {
        TfBuffer {
            links: BTreeMap::new(),
            cache_ns: cache_ns.max(0),
            tolerance_ns: tolerance_ns.max(0),
        }
    }

    /// Adds one transform: `pose` maps points in `child` to `parent` (ROS
    /// geometry_msgs/TransformStamped semantics: header.frame_id = parent, child_frame_id =
    /// child). Static transforms hold for all time (a later static one for the same child
    /// replaces it). Dynamic ones are kept in stamp order; samples older than
    /// (newest - cache_ns) are dropped; an equal stamp replaces the sample; a new sample that is
    /// already too old is ignored (`Ok`, not stored), as tf2 does. Leading '/' in frame names
    /// is stripped (tf2 does that). The rotation is renormalized. On error nothing changes.
    pub fn set_transform(
        &mut self,
        parent: &str,
        child: &str,
        stamp: StampNs,
        pose: Isometry3<f64>,
        is_static: bool,
    ) -> Result<(), TfError> {
        let (parent, child) = (strip(parent), strip(child));
        let refuse = |reason: String| TfError::InvalidTransform {
            parent: parent.to_string(),
            child: child.to_string(),
            reason,
        };
        if parent.is_empty() || child.is_empty() {
            return Err(refuse("frame names must not be empty".into()));
        }
        if parent == child {
            return Err(refuse(format!("frame '{child}' cannot be its own parent")));
        }
        let q = pose.rotation.into_inner();
        let finite = pose.translation.vector.iter().all(|v| v.is_finite())
            && q.coords.iter().all(|v| v.is_finite());
        if !finite {
            return Err(refuse("the transform has non-finite numbers".into()));
        }
        let norm = q.norm();
        if !norm.is_finite() || norm <= 1e-9 {
            return Err(refuse(
                "the rotation quaternion has zero or non-finite norm".into(),
            ));
        }
        let pose = Isometry3::from_parts(pose.translation, UnitQuaternion::new_normalize(q));

        // A new parent or kind replaces the link and its history: the newest information
        // wins, as in tf2, where each sample carries its parent.
        let same = self.links.get(child).is_some_and(|link| {
            link.parent == parent && matches!(link.data, LinkData::Static(_)) == is_static
        });
        if !same {
            if self.ancestors(parent).iter().any(|a| a == child) {
                return Err(refuse(format!(
                    "'{child}' is already an ancestor of '{parent}'; this would make a cycle"
                )));
            }
            let data = if is_static {
                LinkData::Static(pose)
            } else {
                LinkData::Dynamic(vec![(stamp, pose)])
            };
            let parent = parent.to_string();
            self.links.insert(child.to_string(), Link { parent, data });
            return Ok(());
        }
        if let Some(link) = self.links.get_mut(child) {
            match &mut link.data {
                LinkData::Static(p) => *p = pose,
                LinkData::Dynamic(samples) => {
                    let newest = samples.last().map_or(stamp, |s| s.0);
                    if stamp < newest.saturating_sub(self.cache_ns) {
                        return Ok(()); // too old: ignored, as tf2 does
                    }
                    match samples.binary_search_by_key(&stamp, |s| s.0) {
                        Ok(i) => samples[i].1 = pose,
                        Err(i) => samples.insert(i, (stamp, pose)),
                    }
                    let newest = samples.last().map_or(stamp, |s| s.0);
                    let keep_from = newest.saturating_sub(self.cache_ns);
                    samples.retain(|s| s.0 >= keep_from);
                }
            }
        }
        Ok(())
    }

    /// Whether any transform names `frame` (as parent or child).
    pub fn has_frame(&self, frame: &str) -> bool {
        let frame = strip(frame);
        self.links.contains_key(frame) || self.links.values().any(|l| l.parent == frame)
    }

    /// The parent of `frame`, if it has one.
    pub fn parent(&self, frame: &str) -> Option<&str> {
        self.links.get(strip(frame)).map(|l| l.parent.as_str())
    }

    /// All frame names, sorted.
    pub fn frames(&self) -> Vec<String> {
        let mut all: BTreeSet<&str> = self.links.keys().map(String::as_str).collect();
        all.extend(self.links.values().map(|l| l.parent.as_str()));
        all.into_iter().map(str::to_string).collect()
    }

    /// `source`'s ancestors from its parent up to the root, nearest first (empty for a root or
    /// unknown frame). Used to find the first ancestor the planner knows (the planning frame or
    /// a robot link).
    pub fn ancestors(&self, source: &str) -> Vec<String> {
        let mut out = Vec::new();
        let mut frame = strip(source);
        // Cycles are refused on insertion; the bound only guards against a broken invariant.
        while let Some(link) = self.links.get(frame) {
            if out.len() > self.links.len() {
                break;
            }
            out.push(link.parent.clone());
            frame = &link.parent;
        }
        out
    }

    /// The pose of `child` in its parent at `stamp` (`None` = newest sample).
    fn link_pose(
        &self,
        child: &str,
        link: &Link,
        stamp: Option<StampNs>,
    ) -> Result<Isometry3<f64>, TfError> {
        let samples = match &link.data {
            LinkData::Static(p) => return Ok(*p),
            LinkData::Dynamic(samples) => samples,
        };
        let (Some(first), Some(last)) = (samples.first(), samples.last()) else {
            return Ok(Isometry3::identity()); // never stored empty
        };
        let Some(t) = stamp else {
            return Ok(last.1);
        };
        let extrapolation = || TfError::Extrapolation {
            frame: child.to_string(),
            parent: link.parent.clone(),
            stamp: t,
            oldest: first.0,
            newest: last.0,
        };
        let lo = first.0.saturating_sub(self.tolerance_ns);
        if t < lo || t > last.0.saturating_add(self.tolerance_ns) {
            return Err(extrapolation());
        }
        if t <= first.0 {
            return Ok(first.1);
        }
        if t >= last.0 {
            return Ok(last.1);
        }
        match samples.binary_search_by_key(&t, |s| s.0) {
            Ok(i) => Ok(samples[i].1),
            Err(i) => {
                // first.0 < t < last.0, so 0 < i < len.
                let ((t0, p0), (t1, p1)) = (samples[i - 1], samples[i]);
                let a = (t as i128 - t0 as i128) as f64 / (t1 as i128 - t0 as i128) as f64;
                Ok(interpolate(&p0, &p1, a))
            }
        }
    }

    /// The pose of the ancestor `top` from `frame` (maps points in `frame` to `top`).
    fn pose_in(
        &self,
        frame: &str,
        top: &str,
        stamp: Option<StampNs>,
    ) -> Result<Isometry3<f64>, TfError> {
        let mut acc = Isometry3::identity();
        let mut f = frame;
        while f != top {
            let Some(link) = self.links.get(f) else {
                break; // unreachable: `top` is an ancestor of `frame`
            };
            acc = self.link_pose(f, link, stamp)? * acc;
            f = &link.parent;
        }
        Ok(acc)
    }

    /// The pose of `source` in `target` (maps points given in `source` to `target`) at `stamp`;
    /// `None` = the latest sample of each dynamic link on the path. Dynamic links interpolate
    /// between the two samples around the stamp (translation linear, rotation slerp); a stamp
    /// within the tolerance outside a link's range uses its nearest sample; further out is
    /// [`TfError::Extrapolation`]. The path walks both frames up to their common ancestor.
    /// `target == source` gives the identity, even for a frame never seen.
    pub fn lookup(
        &self,
        target: &str,
        source: &str,
        stamp: Option<StampNs>,
    ) -> Result<Isometry3<f64>, TfError> {
        let (target, source) = (strip(target), strip(source));
        if target == source {
            return Ok(Isometry3::identity());
        }
        for frame in [target, source] {
            if !self.has_frame(frame) {
                return Err(TfError::UnknownFrame {
                    frame: frame.to_string(),
                });
            }
        }
        let mut target_chain = vec![target.to_string()];
        target_chain.extend(self.ancestors(target));
        let mut source_chain = vec![source.to_string()];
        source_chain.extend(self.ancestors(source));
        let Some(common) = source_chain.iter().find(|f| target_chain.contains(f)) else {
            return Err(TfError::NotConnected {
                target: target.to_string(),
                source: source.to_string(),
            });
        };
        let common_source = self.pose_in(source, common, stamp)?;
        let common_target = self.pose_in(target, common, stamp)?;
        Ok(common_target.inverse() * common_source)
    }

    /// Drops every dynamic (non-static) transform, e.g. when the clock jumps back (a simulation
    /// restarts); static ones stay.
    pub fn clear_dynamic(&mut self) {
        self.links
            .retain(|_, l| matches!(l.data, LinkData::Static(_)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nalgebra::Quaternion;
    use std::f64::consts::FRAC_PI_2;

    const S: StampNs = 1_000_000_000;

    fn iso(x: f64, y: f64, z: f64, roll: f64, pitch: f64, yaw: f64) -> Isometry3<f64> {
        Isometry3::from_parts(
            Translation3::new(x, y, z),
            UnitQuaternion::from_euler_angles(roll, pitch, yaw),
        )
    }

    fn x(v: f64) -> Isometry3<f64> {
        iso(v, 0.0, 0.0, 0.0, 0.0, 0.0)
    }

    fn at(tf: &TfBuffer, target: &str, source: &str, stamp: Option<StampNs>) -> Isometry3<f64> {
        tf.lookup(target, source, stamp).unwrap()
    }

    fn assert_close(a: &Isometry3<f64>, b: &Isometry3<f64>, tol: f64) {
        let d = (a.to_homogeneous() - b.to_homogeneous()).abs().max();
        assert!(d <= tol, "{a} vs {b}: max difference {d}");
    }

    /// map -(static)-> odom -(dynamic)-> base -(static)-> camera, base -(static)-> laser.
    fn chain() -> (TfBuffer, [Isometry3<f64>; 4]) {
        let m_o = iso(1.0, 2.0, 0.0, 0.0, 0.0, 0.3);
        let o_b = iso(0.5, -0.2, 0.1, 0.0, 0.0, -1.1);
        let b_c = iso(0.1, 0.0, 0.8, -FRAC_PI_2, 0.2, -FRAC_PI_2);
        let b_l = iso(0.2, 0.1, 0.3, 0.0, 0.0, 3.0);
        let mut tf = TfBuffer::default();
        tf.set_transform("map", "odom", 0, m_o, true).unwrap();
        tf.set_transform("odom", "base", 5 * S, o_b, false).unwrap();
        tf.set_transform("base", "camera", 0, b_c, true).unwrap();
        tf.set_transform("base", "laser", 0, b_l, true).unwrap();
        (tf, [m_o, o_b, b_c, b_l])
    }

    #[test]
    fn chain_inverse_and_sibling_lookups() {
        let (tf, [m_o, o_b, b_c, b_l]) = chain();
        let m_c = m_o * o_b * b_c;
        assert_close(&at(&tf, "map", "camera", Some(5 * S)), &m_c, 1e-12);
        assert_close(&at(&tf, "camera", "map", None), &m_c.inverse(), 1e-12);
        assert_close(
            &at(&tf, "camera", "laser", None),
            &(b_c.inverse() * b_l),
            1e-12,
        );
        assert_close(&at(&tf, "odom", "camera", None), &(o_b * b_c), 1e-12);
    }

    #[test]
    fn same_frame_is_identity_even_if_unknown() {
        let (tf, _) = chain();
        assert_eq!(
            tf.lookup("nowhere", "/nowhere", None),
            Ok(Isometry3::identity())
        );
    }

    #[test]
    fn interpolation_clamping_and_extrapolation() {
        let mut tf = TfBuffer::default();
        tf.set_transform("odom", "base", 0, Isometry3::identity(), false)
            .unwrap();
        // The second sample's quaternion with flipped sign: the shorter arc must still be used.
        let q = UnitQuaternion::from_euler_angles(0.0, 0.0, FRAC_PI_2).into_inner();
        let p1 = Isometry3::from_parts(
            Translation3::new(2.0, 0.0, 0.0),
            UnitQuaternion::new_unchecked(-q),
        );
        tf.set_transform("odom", "base", 2 * S, p1, false).unwrap();
        let mid = iso(1.0, 0.0, 0.0, 0.0, 0.0, FRAC_PI_2 / 2.0);
        assert_close(&at(&tf, "odom", "base", Some(S)), &mid, 1e-12);
        let early = at(&tf, "odom", "base", Some(-50_000_000));
        assert_close(&early, &Isometry3::identity(), 1e-12);
        assert_close(
            &at(&tf, "odom", "base", Some(2 * S + 100_000_000)),
            &p1,
            1e-12,
        );
        let expected = TfError::Extrapolation {
            frame: "base".into(),
            parent: "odom".into(),
            stamp: 2 * S + 100_000_001,
            oldest: 0,
            newest: 2 * S,
        };
        assert_eq!(
            tf.lookup("base", "odom", Some(2 * S + 100_000_001)),
            Err(expected)
        );
        assert!(matches!(
            tf.lookup("odom", "base", Some(-200_000_000)),
            Err(TfError::Extrapolation {
                stamp: -200_000_000,
                oldest: 0,
                ..
            })
        ));
        let strict = TfBuffer {
            tolerance_ns: 0,
            ..tf.clone()
        };
        assert!(strict.lookup("odom", "base", Some(-1)).is_err());
        assert_eq!(TfBuffer::new(-5, -5).tolerance_ns, 0);
    }

    #[test]
    fn latest_uses_newest_sample() {
        let mut tf = TfBuffer::default();
        let (a, b) = (x(1.0), iso(3.0, 1.0, 0.0, 0.0, 0.0, 0.5));
        tf.set_transform("odom", "base", 2 * S, b, false).unwrap();
        tf.set_transform("odom", "base", S, a, false).unwrap();
        assert_close(&at(&tf, "odom", "base", None), &b, 1e-12);
        assert_close(&at(&tf, "odom", "base", Some(S)), &a, 1e-12);
    }

    #[test]
    fn static_ignores_stamp_and_is_replaced() {
        let mut tf = TfBuffer::default();
        let (a, b) = (
            iso(1.0, 0.0, 0.0, 0.1, 0.0, 0.0),
            iso(0.0, 2.0, 0.0, 0.0, 0.4, 0.0),
        );
        tf.set_transform("base", "camera", 7 * S, a, true).unwrap();
        assert_close(&at(&tf, "base", "camera", Some(-1000 * S)), &a, 1e-12);
        assert_close(&at(&tf, "base", "camera", Some(1000 * S)), &a, 1e-12);
        tf.set_transform("base", "camera", 0, b, true).unwrap();
        assert_close(&at(&tf, "base", "camera", Some(7 * S)), &b, 1e-12);
    }

    #[test]
    fn cache_trims_old_samples_and_ignores_too_old_ones() {
        let mut tf = TfBuffer::new(S, 0);
        for (t, v) in [(0, 0.0), (S / 2, 1.0), (3 * S / 2, 2.0)] {
            tf.set_transform("odom", "base", t, x(v), false).unwrap();
        }
        assert!(matches!(
            tf.lookup("odom", "base", Some(0)),
            Err(TfError::Extrapolation { oldest, newest, .. }) if oldest == S / 2 && newest == 3 * S / 2
        ));
        assert_close(&at(&tf, "odom", "base", Some(S / 2)), &x(1.0), 1e-12);
        // A sample older than newest - cache is ignored without error.
        tf.set_transform("odom", "base", S / 5, x(9.0), false)
            .unwrap();
        assert!(tf.lookup("odom", "base", Some(S / 5)).is_err());
        // An equal stamp replaces the sample.
        tf.set_transform("odom", "base", 3 * S / 2, x(5.0), false)
            .unwrap();
        assert_close(&at(&tf, "odom", "base", None), &x(5.0), 1e-12);
    }

    #[test]
    fn unknown_and_not_connected() {
        let (mut tf, _) = chain();
        let unknown = TfError::UnknownFrame {
            frame: "ghost".into(),
        };
        assert_eq!(tf.lookup("map", "ghost", None), Err(unknown.clone()));
        assert_eq!(tf.lookup("ghost", "map", None), Err(unknown));
        tf.set_transform("world", "table", 0, Isometry3::identity(), true)
            .unwrap();
        let err = tf.lookup("camera", "table", None).unwrap_err();
        assert_eq!(
            err,
            TfError::NotConnected {
                target: "camera".into(),
                source: "table".into()
            }
        );
        assert!(err.to_string().contains("'camera'") && err.to_string().contains("'table'"));
    }

    #[test]
    fn refusals_leave_buffer_unchanged() {
        let (mut tf, _) = chain();
        let frames = tf.frames();
        let before = tf.lookup("map", "camera", None).unwrap();
        let nan = iso(f64::NAN, 0.0, 0.0, 0.0, 0.0, 0.0);
        let zero_q = Isometry3::from_parts(
            Translation3::new(0.0, 0.0, 0.0),
            UnitQuaternion::new_unchecked(Quaternion::new(0.0, 0.0, 0.0, 0.0)),
        );
        let nan_q = Isometry3::from_parts(
            Translation3::new(0.0, 0.0, 0.0),
            UnitQuaternion::new_unchecked(Quaternion::new(f64::NAN, 0.0, 0.0, 0.0)),
        );
        let id = Isometry3::identity();
        let cases: [(&str, &str, Isometry3<f64>, bool); 8] = [
            ("camera", "map", id, true),  // cycle
            ("base", "odom", id, false),  // cycle (and re-parent)
            ("camera", "odom", id, true), // cycle through two links
            ("x", "x", id, true),         // parent == child
            ("", "x", id, true),          // empty name
            ("map", "new", nan, false),   // NaN translation
            ("map", "new", zero_q, true), // zero quaternion
            ("map", "new", nan_q, true),  // NaN quaternion
        ];
        for (parent, child, pose, is_static) in cases {
            let err = tf
                .set_transform(parent, child, 6 * S, pose, is_static)
                .unwrap_err();
            assert!(
                matches!(err, TfError::InvalidTransform { .. }),
                "{parent}->{child}"
            );
            assert_eq!(tf.frames(), frames, "{parent}->{child}");
            assert_eq!(tf.lookup("map", "camera", None), Ok(before));
        }
        let err = tf
            .set_transform("camera", "map", 0, id, true)
            .unwrap_err()
            .to_string();
        assert!(err.contains("cycle"), "{err}");
    }

    #[test]
    fn a_new_parent_or_kind_replaces_the_link() {
        let (mut tf, [m_o, _, b_c, _]) = chain();
        // base re-parented from odom (dynamic) to map (dynamic): the old history is gone.
        let m_b = iso(3.0, 0.0, 0.0, 0.0, 0.0, 0.5);
        tf.set_transform("map", "base", 7 * S, m_b, false).unwrap();
        assert_eq!(tf.parent("base"), Some("map"));
        assert_close(&at(&tf, "map", "camera", None), &(m_b * b_c), 1e-12);
        assert!(matches!(
            tf.lookup("map", "base", Some(5 * S)),
            Err(TfError::Extrapolation { .. })
        ));
        // odom: static -> dynamic -> static again, each replacing the last.
        let o2 = iso(0.0, 1.0, 0.0, 0.0, 0.0, 0.0);
        tf.set_transform("map", "odom", 8 * S, o2, false).unwrap();
        assert_close(&at(&tf, "map", "odom", Some(8 * S)), &o2, 1e-12);
        tf.set_transform("map", "odom", 0, m_o, true).unwrap();
        assert_close(&at(&tf, "map", "odom", Some(100 * S)), &m_o, 1e-12);
        // camera moved from base to odom (static): found through odom now.
        tf.set_transform("odom", "camera", 0, b_c, true).unwrap();
        assert_eq!(tf.ancestors("camera"), vec!["odom", "map"]);
        assert_close(&at(&tf, "map", "camera", None), &(m_o * b_c), 1e-12);
    }

    #[test]
    fn leading_slash_is_stripped() {
        let mut tf = TfBuffer::default();
        let p = iso(1.0, 2.0, 3.0, 0.0, 0.0, 0.2);
        tf.set_transform("/map", "/odom", 0, p, true).unwrap();
        assert_eq!(tf.frames(), vec!["map".to_string(), "odom".to_string()]);
        assert_eq!(tf.parent("odom"), Some("map"));
        assert!(tf.has_frame("/map") && tf.has_frame("odom") && !tf.has_frame("base"));
        assert_close(&at(&tf, "map", "/odom", None), &p, 1e-12);
    }

    #[test]
    fn ancestors_nearest_first() {
        let (tf, _) = chain();
        assert_eq!(tf.ancestors("camera"), vec!["base", "odom", "map"]);
        assert!(tf.ancestors("map").is_empty() && tf.ancestors("ghost").is_empty());
        assert_eq!(tf.parent("map"), None);
    }

    #[test]
    fn clear_dynamic_keeps_statics() {
        let (mut tf, [m_o, _, b_c, _]) = chain();
        tf.clear_dynamic();
        assert_eq!(tf.parent("base"), None);
        assert_close(&at(&tf, "map", "odom", None), &m_o, 1e-12);
        assert_close(&at(&tf, "base", "camera", None), &b_c, 1e-12);
        assert!(matches!(
            tf.lookup("map", "camera", None),
            Err(TfError::NotConnected { .. })
        ));
        // The dynamic link may now come back, even under a new parent.
        tf.set_transform("map", "base", 0, Isometry3::identity(), false)
            .unwrap();
        assert_eq!(tf.ancestors("camera"), vec!["base", "map"]);
    }
}
