//! The node's transform listener: `tf2_msgs/TFMessage` from `/tf` and `/tf_static` into the
//! [`crate::tf::TfBuffer`] the planning service resolves unknown frames with.

use nalgebra::{Isometry3, Quaternion, Translation3, UnitQuaternion};
use r2r::builtin_interfaces::msg::Time;
use r2r::geometry_msgs::msg::TransformStamped;
use r2r::tf2_msgs::msg::TFMessage;

use crate::tf::{StampNs, TfBuffer, DEFAULT_CACHE_NS};

/// A ROS time as nanoseconds; `None` for zero (ROS: "the latest").
pub fn stamp_ns(t: &Time) -> Option<StampNs> {
    let ns = i64::from(t.sec) * 1_000_000_000 + i64::from(t.nanosec);
    (ns != 0).then_some(ns)
}

/// The pose of a transform (child in parent). A quaternion that is not of unit length is
/// normalised; one that cannot be (zero, not finite) is passed on as it is, for the buffer
/// to refuse by name.
pub fn pose_of(t: &TransformStamped) -> Isometry3<f64> {
    let tr = &t.transform.translation;
    let r = &t.transform.rotation;
    let q = Quaternion::new(r.w, r.x, r.y, r.z);
    let n = q.norm();
    let rotation = if n.is_finite() && n > 1e-9 {
        UnitQuaternion::new_normalize(q)
    } else {
        UnitQuaternion::new_unchecked(q)
    };
    Isometry3::from_parts(Translation3::new(tr.x, tr.y, tr.z), rotation)
}

/// What a listener makes of `/tf` or `/tf_static` messages: it adds them to a buffer and
/// notices a clock that jumps back (a restarted simulation or bag), after which the dynamic
/// transforms are dropped, as tf2's listener does, instead of ignoring every new sample as
/// older than the history kept.
#[derive(Debug, Default)]
pub struct Listener {
    /// The newest stamp seen on `/tf`.
    newest: Option<StampNs>,
}

/// The result of one message.
#[derive(Debug, Default, PartialEq)]
pub struct Added {
    /// The transforms refused, each naming its frames.
    pub refused: Vec<String>,
    /// The dynamic transforms were dropped first: this message's stamps lie more than the
    /// buffer's history (10 s) before the newest seen.
    pub cleared: bool,
}

impl Listener {
    /// Adds every transform of `msg` to `buffer` (`is_static` for `/tf_static`); the others are
    /// kept when some are refused.
    pub fn add(&mut self, buffer: &mut TfBuffer, msg: &TFMessage, is_static: bool) -> Added {
        let mut added = Added::default();
        for t in &msg.transforms {
            let stamp = stamp_ns(&t.header.stamp).unwrap_or(0);
            if !is_static {
                if self
                    .newest
                    .is_some_and(|n| stamp < n.saturating_sub(DEFAULT_CACHE_NS))
                {
                    buffer.clear_dynamic();
                    self.newest = None;
                    added.cleared = true;
                }
                self.newest = Some(self.newest.map_or(stamp, |n| n.max(stamp)));
            }
            if let Err(e) = buffer.set_transform(
                &t.header.frame_id,
                &t.child_frame_id,
                stamp,
                pose_of(t),
                is_static,
            ) {
                added.refused.push(e.to_string());
            }
        }
        added
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use r2r::geometry_msgs::msg::{Quaternion as Q, Transform, Vector3};
    use r2r::std_msgs::msg::Header;

    fn transform(parent: &str, child: &str, sec: i32, x: f64, q: [f64; 4]) -> TransformStamped {
        TransformStamped {
            header: Header {
                stamp: Time { sec, nanosec: 0 },
                frame_id: parent.into(),
            },
            child_frame_id: child.into(),
            transform: Transform {
                translation: Vector3 { x, y: 0.0, z: 0.0 },
                rotation: Q {
                    x: q[0],
                    y: q[1],
                    z: q[2],
                    w: q[3],
                },
            },
        }
    }

    #[test]
    fn messages_fill_the_buffer_and_bad_transforms_are_named() {
        let mut b = TfBuffer::default();
        let msg = TFMessage {
            transforms: vec![
                // Not of unit length: normalised.
                transform("world", "camera", 0, 1.0, [0.0, 0.0, 0.0, 2.0]),
                transform("camera", "optical", 0, 0.5, [0.0, 0.0, 0.0, 1.0]),
                transform("world", "bad", 0, 0.0, [0.0, 0.0, 0.0, 0.0]),
            ],
        };
        let mut listener = Listener::default();
        let refused = listener.add(&mut b, &msg, true).refused;
        assert_eq!(refused.len(), 1, "{refused:?}");
        assert!(refused[0].contains("bad"), "{refused:?}");
        let p = b.lookup("world", "optical", None).expect("chain");
        assert!((p.translation.vector.x - 1.5).abs() < 1e-12);
        assert!(p.rotation.angle() < 1e-12);
        assert_eq!(stamp_ns(&Time { sec: 0, nanosec: 0 }), None);
        assert_eq!(stamp_ns(&Time { sec: 2, nanosec: 5 }), Some(2_000_000_005));
    }
}
