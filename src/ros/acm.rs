//! `~/allow_collisions` (AllowCollisions): the allowed collisions of
//! [`PlanningService::allow_collisions`], edited as MoveIt's allowed collision matrix is.

use r2r::gpu_motion_planner_interfaces::srv::AllowCollisions;

use crate::scene::AllowedCollision;
use crate::service::{AllowRequest, PlanningService};

/// Entries named in a response's message; the rest are counted.
const LISTED: usize = 8;

/// One entry as the message names it.
fn entry_text(e: &AllowedCollision) -> String {
    if e.allowed {
        format!("'{}' may touch '{}'", e.a, e.b)
    } else {
        format!("'{}' and '{}' are checked", e.a, e.b)
    }
}

/// What the entries are, for a message: none, or the first [`LISTED`] and a count.
pub fn describe(entries: &[AllowedCollision]) -> String {
    if entries.is_empty() {
        return "no allowed-collision entries".into();
    }
    let mut text: Vec<String> = entries.iter().take(LISTED).map(entry_text).collect();
    if entries.len() > LISTED {
        text.push(format!("{} more", entries.len() - LISTED));
    }
    format!(
        "{} entr{}: {}",
        entries.len(),
        if entries.len() == 1 { "y" } else { "ies" },
        text.join(", ")
    )
}

/// Answers an AllowCollisions request on `service`; the response lists every entry after
/// it (also when it is refused and nothing changed).
pub fn answer(
    service: &mut PlanningService,
    req: &AllowCollisions::Request,
) -> AllowCollisions::Response {
    let request = AllowRequest {
        names: req.names.clone(),
        others: req.others.clone(),
        allowed: req.allowed,
        reset: req.reset,
    };
    let (success, message, entries) = match service.allow_collisions(&request) {
        Ok(entries) => (true, describe(&entries), entries),
        Err(e) => (
            false,
            format!("{e}; nothing changed"),
            service.allowed_collisions(),
        ),
    };
    AllowCollisions::Response {
        success,
        message,
        entry_a: entries.iter().map(|e| e.a.clone()).collect(),
        entry_b: entries.iter().map(|e| e.b.clone()).collect(),
        entry_allowed: entries.iter().map(|e| e.allowed).collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::demo::bundled;
    use crate::service::ServiceSettings;

    fn service() -> PlanningService {
        let (robot, scene) = bundled().expect("bundled");
        PlanningService::new(robot, scene, ServiceSettings::default())
    }

    fn request(names: &[&str], others: &[&str], allowed: bool) -> AllowCollisions::Request {
        AllowCollisions::Request {
            names: names.iter().map(|n| n.to_string()).collect(),
            others: others.iter().map(|n| n.to_string()).collect(),
            allowed,
            reset: false,
        }
    }

    #[test]
    fn entries_come_back_in_the_response() {
        let mut s = service();
        let obstacle = s.scene().iter().next().expect("an obstacle").id.clone();
        let r = answer(
            &mut s,
            &request(&["flange_link", "tool0"], &[&obstacle], true),
        );
        assert!(r.success, "{}", r.message);
        assert_eq!(r.entry_a, vec!["flange_link", "tool0"]);
        assert_eq!(r.entry_b, vec![obstacle.clone(), obstacle.clone()]);
        assert_eq!(r.entry_allowed, vec![true, true]);
        assert!(
            r.message
                .starts_with(&format!("2 entries: 'flange_link' may touch '{obstacle}'")),
            "{}",
            r.message
        );
        let r = answer(
            &mut s,
            &request(&["upper_arm_link"], &["forearm_link"], false),
        );
        assert!(r.success, "{}", r.message);
        assert_eq!(r.entry_a[0], "forearm_link");
        assert!(!r.entry_allowed[0]);
        assert!(
            r.message
                .contains("'forearm_link' and 'upper_arm_link' are checked"),
            "{}",
            r.message
        );
        // A refusal changes nothing and still lists the entries.
        let r = answer(&mut s, &request(&["nothing"], &["tool0"], true));
        assert!(!r.success);
        assert!(
            r.message.contains("'nothing' is neither") && r.message.ends_with("nothing changed"),
            "{}",
            r.message
        );
        assert_eq!(r.entry_a.len(), 3);
        let r = answer(
            &mut s,
            &AllowCollisions::Request {
                reset: true,
                ..Default::default()
            },
        );
        assert!(r.success && r.entry_a.is_empty(), "{}", r.message);
        assert_eq!(r.message, "no allowed-collision entries");
    }
}
