//! `~/goal_marker`: an interactive marker server (the protocol of RViz's InteractiveMarkers
//! display) with one marker, [`MARKER`], a 6-DOF handle for the planning group's tip link.
//!
//! Drag it and let go, or pick "Plan to here" from its menu: the node plans the tip link to
//! the handle's pose from the current joint state (as a `~/goal_pose` message would) and
//! publishes the plan on `~/trajectory`. "Execute the last plan" sends it to the controller
//! as `~/execute` does. "Reset to the tool" puts the handle back on the tip link where the
//! current joint state has it (also where it starts).
//!
//! Protocol (as `interactive_markers`' server speaks it): the service
//! `~/goal_marker/get_interactive_markers` answers the marker and the sequence number;
//! `~/goal_marker/update` carries every later change with the next sequence number;
//! `~/goal_marker/feedback` brings the display's events (pose updates while dragging,
//! mouse-up, menu selections).

use r2r::geometry_msgs::msg::{Pose, PoseStamped, Quaternion};
use r2r::std_msgs::msg::Header;
use r2r::visualization_msgs::msg::{
    InteractiveMarker, InteractiveMarkerControl, InteractiveMarkerFeedback, InteractiveMarkerPose,
    InteractiveMarkerUpdate, Marker, MenuEntry,
};
use r2r::visualization_msgs::srv::GetInteractiveMarkers;

/// Topic namespace of the server (RViz's "Interactive Markers Namespace").
pub const NAMESPACE: &str = "~/goal_marker";

/// The marker's name.
pub const MARKER: &str = "goal";

/// Menu entry: plan the tip link to the marker's pose.
pub const MENU_PLAN: u32 = 1;

/// Menu entry: put the marker back on the tip link.
pub const MENU_RESET: u32 = 2;

/// Menu entry: execute the last plan (as `~/execute`).
pub const MENU_EXECUTE: u32 = 3;

/// Size of the handle (m).
const SCALE: f32 = 0.2;

/// What a feedback message asks the node to do.
#[derive(Debug, Clone, PartialEq)]
pub enum Request {
    /// Plan the tip link to this pose (in the marker's frame).
    Plan(PoseStamped),
    /// Put the marker back on the tip link.
    Reset,
    /// Execute the last plan.
    Execute,
}

/// The server's state: the marker and the sequence number of the last update.
#[derive(Debug, Clone)]
pub struct GoalMarker {
    marker: InteractiveMarker,
    sequence: u64,
    /// Whether a display has moved it since it was put on the tip link.
    touched: bool,
}

/// A control turning about or moving along one axis (the x axis of `orientation`).
fn axis_control(name: &str, orientation: Quaternion, mode: u8) -> InteractiveMarkerControl {
    InteractiveMarkerControl {
        name: name.into(),
        orientation,
        orientation_mode: InteractiveMarkerControl::INHERIT as u8,
        interaction_mode: mode,
        ..Default::default()
    }
}

/// The six axis controls and the menu ball.
fn controls() -> Vec<InteractiveMarkerControl> {
    let h = std::f64::consts::FRAC_1_SQRT_2;
    // The control's x axis onto the marker's x, z and y axes.
    let axes = [
        (
            "x",
            Quaternion {
                x: 0.0,
                y: 0.0,
                z: 0.0,
                w: 1.0,
            },
        ),
        (
            "z",
            Quaternion {
                x: 0.0,
                y: h,
                z: 0.0,
                w: h,
            },
        ),
        (
            "y",
            Quaternion {
                x: 0.0,
                y: 0.0,
                z: h,
                w: h,
            },
        ),
    ];
    let mut out = Vec::with_capacity(7);
    for (axis, q) in axes {
        out.push(axis_control(
            &format!("rotate_{axis}"),
            q.clone(),
            InteractiveMarkerControl::ROTATE_AXIS as u8,
        ));
        out.push(axis_control(
            &format!("move_{axis}"),
            q,
            InteractiveMarkerControl::MOVE_AXIS as u8,
        ));
    }
    let mut ball = Marker {
        type_: Marker::SPHERE as i32,
        ..Default::default()
    };
    ball.scale.x = f64::from(SCALE) * 0.3;
    ball.scale.y = ball.scale.x;
    ball.scale.z = ball.scale.x;
    ball.color.r = 0.1;
    ball.color.g = 0.8;
    ball.color.b = 0.3;
    ball.color.a = 0.8;
    ball.pose.orientation.w = 1.0;
    out.push(InteractiveMarkerControl {
        name: "menu".into(),
        always_visible: true,
        interaction_mode: InteractiveMarkerControl::MENU as u8,
        markers: vec![ball],
        ..Default::default()
    });
    out
}

impl GoalMarker {
    /// The marker at `pose` in `frame`; no update sent yet.
    pub fn new(frame: &str, pose: Pose) -> Self {
        let entry = |id: u32, title: &str| MenuEntry {
            id,
            parent_id: 0,
            title: title.into(),
            command: String::new(),
            command_type: MenuEntry::FEEDBACK as u8,
        };
        Self {
            marker: InteractiveMarker {
                header: Header {
                    frame_id: frame.into(),
                    ..Default::default()
                },
                pose,
                name: MARKER.into(),
                description: "goal of the planning group's tip link".into(),
                scale: SCALE,
                menu_entries: vec![
                    entry(MENU_PLAN, "Plan to here"),
                    entry(MENU_EXECUTE, "Execute the last plan"),
                    entry(MENU_RESET, "Reset to the tool"),
                ],
                controls: controls(),
            },
            sequence: 0,
            touched: false,
        }
    }

    /// Whether a display has moved the marker since it was made or last put on the tip link
    /// ([`Self::moved`]); until then the node keeps it on the tip link.
    pub fn touched(&self) -> bool {
        self.touched
    }

    /// The marker as it is now.
    pub fn marker(&self) -> &InteractiveMarker {
        &self.marker
    }

    /// The answer to `get_interactive_markers`: the marker and the last sequence number.
    pub fn full(&self) -> GetInteractiveMarkers::Response {
        GetInteractiveMarkers::Response {
            sequence_number: self.sequence,
            markers: vec![self.marker.clone()],
        }
    }

    /// Puts the marker at `pose` (in `frame`, or its own frame when empty; the tip link's
    /// pose: it is no longer [`Self::touched`]) and returns the update announcing it, with
    /// the next sequence number.
    pub fn moved(&mut self, frame: &str, pose: Pose, server_id: &str) -> InteractiveMarkerUpdate {
        if !frame.is_empty() {
            self.marker.header.frame_id = frame.into();
        }
        self.marker.pose = pose;
        self.touched = false;
        self.sequence += 1;
        InteractiveMarkerUpdate {
            server_id: server_id.into(),
            seq_num: self.sequence,
            type_: InteractiveMarkerUpdate::UPDATE as u8,
            poses: vec![InteractiveMarkerPose {
                header: self.marker.header.clone(),
                pose: self.marker.pose.clone(),
                name: MARKER.into(),
            }],
            ..Default::default()
        }
    }

    /// Takes a feedback message: the pose it carries becomes the marker's, and a mouse-up
    /// or a menu selection becomes a request. Feedback for another marker, or whose pose is
    /// not finite, is ignored.
    pub fn feedback(&mut self, fb: &InteractiveMarkerFeedback) -> Option<Request> {
        if fb.marker_name != MARKER {
            return None;
        }
        let p = &fb.pose;
        let finite = [
            p.position.x,
            p.position.y,
            p.position.z,
            p.orientation.x,
            p.orientation.y,
            p.orientation.z,
            p.orientation.w,
        ]
        .iter()
        .all(|v| v.is_finite());
        let event = fb.event_type;
        let carries_pose = event == InteractiveMarkerFeedback::POSE_UPDATE as u8
            || event == InteractiveMarkerFeedback::MOUSE_UP as u8;
        if carries_pose && finite {
            self.touched = true;
            self.marker.pose = fb.pose.clone();
            if !fb.header.frame_id.is_empty() {
                self.marker.header.frame_id = fb.header.frame_id.clone();
            }
        }
        let here = || PoseStamped {
            header: Header {
                frame_id: self.marker.header.frame_id.clone(),
                ..Default::default()
            },
            pose: self.marker.pose.clone(),
        };
        if event == InteractiveMarkerFeedback::MOUSE_UP as u8 && finite {
            return Some(Request::Plan(here()));
        }
        if event == InteractiveMarkerFeedback::MENU_SELECT as u8 {
            return match fb.menu_entry_id {
                MENU_PLAN => Some(Request::Plan(here())),
                MENU_RESET => Some(Request::Reset),
                MENU_EXECUTE => Some(Request::Execute),
                _ => None,
            };
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(x: f64) -> Pose {
        let mut p = Pose::default();
        p.position.x = x;
        p.orientation.w = 1.0;
        p
    }

    fn event(kind: u8, pose: Pose) -> InteractiveMarkerFeedback {
        InteractiveMarkerFeedback {
            marker_name: MARKER.into(),
            event_type: kind,
            pose,
            ..Default::default()
        }
    }

    #[test]
    fn the_marker_has_six_axes_and_a_menu() {
        let m = GoalMarker::new("world", at(0.3));
        let full = m.full();
        assert_eq!(full.sequence_number, 0);
        let marker = &full.markers[0];
        assert_eq!(
            (marker.name.as_str(), marker.header.frame_id.as_str()),
            (MARKER, "world")
        );
        let modes: Vec<u8> = marker.controls.iter().map(|c| c.interaction_mode).collect();
        let count = |mode: u8| modes.iter().filter(|&&m| m == mode).count();
        assert_eq!(count(InteractiveMarkerControl::MOVE_AXIS as u8), 3);
        assert_eq!(count(InteractiveMarkerControl::ROTATE_AXIS as u8), 3);
        assert_eq!(count(InteractiveMarkerControl::MENU as u8), 1);
        for c in &marker.controls {
            let q = &c.orientation;
            let norm = (q.x * q.x + q.y * q.y + q.z * q.z + q.w * q.w).sqrt();
            assert!((norm - 1.0).abs() < 1e-12, "{}", c.name);
        }
        let ids: Vec<u32> = marker.menu_entries.iter().map(|e| e.id).collect();
        assert_eq!(ids, [MENU_PLAN, MENU_EXECUTE, MENU_RESET]);
    }

    #[test]
    fn feedback_moves_the_marker_and_asks_for_plans() {
        let mut m = GoalMarker::new("world", at(0.3));
        let (drag, up) = (
            InteractiveMarkerFeedback::POSE_UPDATE as u8,
            InteractiveMarkerFeedback::MOUSE_UP as u8,
        );
        assert!(!m.touched());
        assert_eq!(m.feedback(&event(drag, at(0.5))), None);
        assert_eq!(m.marker().pose.position.x, 0.5);
        assert!(m.touched());
        match m.feedback(&event(up, at(0.6))) {
            Some(Request::Plan(p)) => {
                assert_eq!(p.pose.position.x, 0.6);
                assert_eq!(p.header.frame_id, "world");
            }
            other => panic!("{other:?}"),
        }
        let mut menu = event(InteractiveMarkerFeedback::MENU_SELECT as u8, at(9.0));
        menu.menu_entry_id = MENU_RESET;
        assert_eq!(m.feedback(&menu), Some(Request::Reset));
        // A menu selection does not move the marker.
        assert_eq!(m.marker().pose.position.x, 0.6);
        menu.menu_entry_id = MENU_PLAN;
        assert!(matches!(m.feedback(&menu), Some(Request::Plan(_))));
        menu.menu_entry_id = MENU_EXECUTE;
        assert_eq!(m.feedback(&menu), Some(Request::Execute));
        menu.menu_entry_id = 77;
        assert_eq!(m.feedback(&menu), None);
        // Not finite, or another marker: ignored.
        let mut bad = at(f64::NAN);
        bad.orientation.w = 1.0;
        assert_eq!(m.feedback(&event(up, bad)), None);
        assert_eq!(m.marker().pose.position.x, 0.6);
        let mut other = event(up, at(1.0));
        other.marker_name = "else".into();
        assert_eq!(m.feedback(&other), None);

        let update = m.moved("", at(0.1), "planner_node");
        assert!(!m.touched());
        assert_eq!(update.seq_num, 1);
        assert_eq!(update.poses[0].pose.position.x, 0.1);
        assert_eq!(update.poses[0].header.frame_id, "world");
        assert_eq!(m.full().sequence_number, 1);
        assert_eq!(m.moved("", at(0.2), "planner_node").seq_num, 2);
    }
}
