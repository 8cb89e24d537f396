//! `~/goal_marker`: an interactive marker server (the protocol of RViz's InteractiveMarkers
//! display) with one marker, [`MARKER`], a 6-DOF handle for a planning group's tip link (the
//! `planning_group` parameter's at first).
//!
//! Drag it and let go, or pick "Plan to here" from its menu: the node plans the tip link to
//! the handle's pose from the current joint state (as a `~/goal_pose` message would, for the
//! handle's group) and publishes the plan on `~/trajectory`. "Execute the last plan" sends it
//! to the controller as `~/execute` does. "Reset to the tool" puts the handle back on the tip
//! link where the current joint state has it (also where it starts). Where the robot has
//! several groups a pose goal can move, the "Planning group" submenu moves the handle to
//! another group's tip link, and its plans are for that group.
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

/// Menu entry: the "Planning group" submenu (shown with two groups or more).
pub const MENU_GROUPS: u32 = 4;

/// Menu entry of the first group of the submenu; the k-th group's entry is this plus k.
pub const MENU_GROUP_FIRST: u32 = 100;

/// Menu entry: the "Plan to named state" submenu (shown where the handle's group has named
/// states in the SRDF).
pub const MENU_NAMED: u32 = 5;

/// Menu entry of the first named state of that submenu; the k-th state's entry is this plus
/// k.
pub const MENU_NAMED_FIRST: u32 = 200;

/// The most entries of one submenu (their ids must not run into the next range).
const MENU_MAX_ENTRIES: usize = 100;

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
    /// Move the handle to this planning group's tip link and plan for that group.
    Group(String),
    /// Plan the handle's group to this named state of the SRDF.
    Named(String),
}

/// The server's state: the marker and the sequence number of the last update.
#[derive(Debug, Clone)]
pub struct GoalMarker {
    marker: InteractiveMarker,
    sequence: u64,
    /// Whether a display has moved it since it was put on the tip link.
    touched: bool,
    /// The groups of the submenu (none: no submenu) and the one the handle serves.
    groups: Vec<String>,
    group: Option<String>,
    /// The named states of the handle's group (the "Plan to named state" submenu).
    states: Vec<String>,
}

/// A menu entry that sends feedback.
fn entry(id: u32, parent_id: u32, title: &str) -> MenuEntry {
    MenuEntry {
        id,
        parent_id,
        title: title.into(),
        command: String::new(),
        command_type: MenuEntry::FEEDBACK as u8,
    }
}

/// The menu: plan, execute, reset, with two groups or more the "Planning group" submenu
/// (`current` marked), and with named states the "Plan to named state" submenu.
fn menu(groups: &[String], current: Option<&str>, states: &[String]) -> Vec<MenuEntry> {
    let mut out = vec![
        entry(MENU_PLAN, 0, "Plan to here"),
        entry(MENU_EXECUTE, 0, "Execute the last plan"),
        entry(MENU_RESET, 0, "Reset to the tool"),
    ];
    if groups.len() > 1 {
        out.push(entry(MENU_GROUPS, 0, "Planning group"));
        for (k, g) in groups.iter().enumerate() {
            let title = if Some(g.as_str()) == current {
                format!("{g} (current)")
            } else {
                g.clone()
            };
            out.push(entry(MENU_GROUP_FIRST + k as u32, MENU_GROUPS, &title));
        }
    }
    if !states.is_empty() {
        out.push(entry(MENU_NAMED, 0, "Plan to named state"));
        for (k, name) in states.iter().enumerate() {
            out.push(entry(MENU_NAMED_FIRST + k as u32, MENU_NAMED, name));
        }
    }
    out
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
                menu_entries: menu(&[], None, &[]),
                controls: controls(),
            },
            sequence: 0,
            touched: false,
            groups: Vec::new(),
            group: None,
            states: Vec::new(),
        }
    }

    /// Offers `groups` in the "Planning group" submenu (shown with two or more), marking
    /// `current` (the node's `planning_group`, which the handle keeps serving until another
    /// group is picked).
    /// `states`: the named states of `current` (the "Plan to named state" submenu); each
    /// list is cut at 100 entries.
    pub fn with_groups(mut self, groups: Vec<String>, current: &str, states: Vec<String>) -> Self {
        self.set_menus(groups, current, states);
        self
    }

    /// As [`Self::with_groups`] on a marker in use (a robot loaded or reloaded since): a
    /// group picked before that is no longer offered is forgotten (the handle serves
    /// `current` again). Whether the menu changed (then displays need the whole marker:
    /// [`Self::moved_whole`]).
    pub fn set_menus(&mut self, groups: Vec<String>, current: &str, states: Vec<String>) -> bool {
        let groups: Vec<String> = groups.into_iter().take(MENU_MAX_ENTRIES).collect();
        if self.group.as_ref().is_some_and(|g| !groups.contains(g)) {
            self.group = None;
        }
        let shown = self.group.clone().unwrap_or_else(|| current.to_string());
        self.states = states.into_iter().take(MENU_MAX_ENTRIES).collect();
        let entries = menu(&groups, Some(&shown), &self.states);
        self.groups = groups;
        let changed = entries != self.marker.menu_entries;
        self.marker.menu_entries = entries;
        changed
    }

    /// The planning group picked from the menu (`None`: the node's `planning_group`).
    pub fn group(&self) -> Option<&str> {
        self.group.as_deref()
    }

    /// Makes the handle serve `group` (whose named states are `states`) with its tip link at
    /// `pose` (in `frame`), and returns the update carrying the whole marker (its menu marks
    /// the new group and offers its named states), with the next sequence number.
    pub fn retargeted(
        &mut self,
        (group, states): (&str, Vec<String>),
        frame: &str,
        pose: Pose,
        server_id: &str,
    ) -> InteractiveMarkerUpdate {
        self.group = Some(group.to_string());
        self.states = states.into_iter().take(MENU_MAX_ENTRIES).collect();
        self.marker.menu_entries = menu(&self.groups, Some(group), &self.states);
        self.marker.description = format!("goal of {group}'s tip link");
        self.moved_whole(frame, pose, server_id)
    }

    /// As [`Self::moved`], but the update carries the whole marker (a display takes a new
    /// menu only that way).
    pub fn moved_whole(
        &mut self,
        frame: &str,
        pose: Pose,
        server_id: &str,
    ) -> InteractiveMarkerUpdate {
        let mut update = self.moved(frame, pose, server_id);
        update.poses.clear();
        update.markers = vec![self.marker.clone()];
        update
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
                id if id >= MENU_NAMED_FIRST => self
                    .states
                    .get((id - MENU_NAMED_FIRST) as usize)
                    .map(|n| Request::Named(n.clone())),
                id => id
                    .checked_sub(MENU_GROUP_FIRST)
                    .and_then(|k| self.groups.get(k as usize))
                    .map(|g| Request::Group(g.clone())),
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

    #[test]
    fn a_group_submenu_moves_the_handle_to_another_group() {
        let groups = vec!["arm".to_string(), "arm_with_torso".to_string()];
        // One group: no submenu.
        let one =
            GoalMarker::new("world", at(0.3)).with_groups(groups[..1].to_vec(), "arm", Vec::new());
        assert_eq!(one.marker().menu_entries.len(), 3);
        assert_eq!(one.group(), None);
        let mut m =
            GoalMarker::new("world", at(0.3)).with_groups(groups.clone(), "arm", Vec::new());
        // Until a group is picked the handle serves the node's planning_group.
        assert_eq!(m.group(), None);
        let entries = &m.marker().menu_entries;
        let sub: Vec<(u32, u32, &str)> = entries
            .iter()
            .filter(|e| e.parent_id == MENU_GROUPS)
            .map(|e| (e.id, e.parent_id, e.title.as_str()))
            .collect();
        assert_eq!(
            sub,
            [
                (MENU_GROUP_FIRST, MENU_GROUPS, "arm (current)"),
                (MENU_GROUP_FIRST + 1, MENU_GROUPS, "arm_with_torso")
            ]
        );
        assert!(entries
            .iter()
            .any(|e| e.id == MENU_GROUPS && e.parent_id == 0 && e.title == "Planning group"));
        // Picking the second group asks for it; an id past the list asks for nothing.
        let mut pick = event(InteractiveMarkerFeedback::MENU_SELECT as u8, at(0.3));
        pick.menu_entry_id = MENU_GROUP_FIRST + 1;
        assert_eq!(
            m.feedback(&pick),
            Some(Request::Group("arm_with_torso".into()))
        );
        pick.menu_entry_id = MENU_GROUP_FIRST + 2;
        assert_eq!(m.feedback(&pick), None);
        pick.menu_entry_id = MENU_GROUPS;
        assert_eq!(m.feedback(&pick), None);
        // Retargeted: the whole marker goes out with the next sequence number, the menu
        // marking the new group, the handle on its tip and no longer touched.
        let before = m.full().sequence_number;
        let update = m.retargeted(("arm_with_torso", Vec::new()), "world", at(0.9), "node");
        assert_eq!(update.seq_num, before + 1);
        assert_eq!(update.markers.len(), 1);
        let sent = &update.markers[0];
        assert_eq!(sent.pose.position.x, 0.9);
        assert!(sent
            .menu_entries
            .iter()
            .any(|e| e.title == "arm_with_torso (current)"));
        assert!(sent.menu_entries.iter().any(|e| e.title == "arm"));
        assert_eq!(m.group(), Some("arm_with_torso"));
        assert!(!m.touched());
        assert_eq!(m.full().markers[0], *sent);
    }

    #[test]
    fn a_named_state_submenu_plans_to_the_groups_states() {
        let states = vec!["home".to_string(), "ready".to_string()];
        let mut m = GoalMarker::new("world", at(0.3)).with_groups(
            vec!["arm".into()],
            "arm",
            states.clone(),
        );
        let sub: Vec<(u32, &str)> = m
            .marker()
            .menu_entries
            .iter()
            .filter(|e| e.parent_id == MENU_NAMED)
            .map(|e| (e.id, e.title.as_str()))
            .collect();
        assert_eq!(
            sub,
            [(MENU_NAMED_FIRST, "home"), (MENU_NAMED_FIRST + 1, "ready")]
        );
        assert!(m
            .marker()
            .menu_entries
            .iter()
            .any(|e| e.id == MENU_NAMED && e.parent_id == 0 && e.title == "Plan to named state"));
        let mut pick = event(InteractiveMarkerFeedback::MENU_SELECT as u8, at(0.3));
        pick.menu_entry_id = MENU_NAMED_FIRST + 1;
        assert_eq!(m.feedback(&pick), Some(Request::Named("ready".into())));
        pick.menu_entry_id = MENU_NAMED_FIRST + 2;
        assert_eq!(m.feedback(&pick), None);
        // A reloaded robot: the same menus change nothing; new states do, and a picked
        // group no longer offered is forgotten.
        assert!(!m.set_menus(vec!["arm".into()], "arm", states.clone()));
        assert!(m.set_menus(vec!["arm".into()], "arm", vec!["home".into()]));
        let whole = m.moved_whole("", at(0.1), "node");
        assert!(whole.poses.is_empty() && whole.markers.len() == 1);
        assert!(!whole.markers[0]
            .menu_entries
            .iter()
            .any(|e| e.title == "ready"));
        m.set_menus(vec!["arm".into()], "arm", states.clone());
        // Another group brings its own states; none, no submenu.
        let update = m.retargeted(("gripper", Vec::new()), "world", at(0.5), "node");
        assert!(!update.markers[0]
            .menu_entries
            .iter()
            .any(|e| e.id == MENU_NAMED || e.parent_id == MENU_NAMED));
        pick.menu_entry_id = MENU_NAMED_FIRST;
        assert_eq!(m.feedback(&pick), None);
        assert_eq!(m.group(), Some("gripper"));
        m.set_menus(vec!["arm".into()], "arm", Vec::new());
        assert_eq!(m.group(), None);
    }
}
