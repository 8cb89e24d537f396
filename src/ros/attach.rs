//! `~/attach_object` (AttachObject) and `~/detach_object` (DetachObject): requests →
//! [`PlanningService::attach_object`] / [`PlanningService::detach_object`], and the answers.

use r2r::gpu_motion_planner_interfaces::srv::{AttachObject, DetachObject};

use super::markers::pose_of;
use crate::service::{AttachRequest, MarkerKind, NewObject, PlanningService};

/// The service request of an AttachObject request; a pose that is not finite is refused
/// naming the object.
pub fn attach_request(req: &AttachObject::Request) -> Result<AttachRequest, String> {
    let scale = [req.scale.x, req.scale.y, req.scale.z];
    let pose = pose_of(&req.object_id, &req.pose)
        .map_err(|e| e.replacen("marker", "attached object", 1))?;
    Ok(AttachRequest {
        id: req.object_id.clone(),
        link: (!req.link_name.is_empty()).then(|| req.link_name.clone()),
        touch_links: req.touch_links.clone(),
        object: Some(NewObject {
            kind: MarkerKind::from_ros(req.shape_type, &[], scale),
            scale,
            frame_id: req.header.frame_id.clone(),
            pose,
        }),
    })
}

/// A short description of what the robot carries.
fn carried(service: &PlanningService) -> String {
    let ids: Vec<&str> = service
        .attached_objects()
        .iter()
        .map(|o| o.id.as_str())
        .collect();
    if ids.is_empty() {
        "the robot carries nothing".into()
    } else {
        format!("the robot carries {}", ids.join(", "))
    }
}

/// Answers an AttachObject request on `service`.
pub fn attach(
    service: &mut PlanningService,
    req: &AttachObject::Request,
) -> AttachObject::Response {
    let outcome = attach_request(req).and_then(|r| {
        let from_scene = service.scene().get(&r.id).is_some();
        service
            .attach_object(r)
            .map(|()| from_scene)
            .map_err(|e| e.to_string())
    });
    match outcome {
        Ok(from_scene) => {
            let link = service
                .attached_objects()
                .iter()
                .find(|o| o.id == req.object_id)
                .map(|o| o.link.clone())
                .unwrap_or_default();
            AttachObject::Response {
                success: true,
                message: format!(
                    "attached '{}' ({}) to '{link}'; {}",
                    req.object_id,
                    if from_scene {
                        "taken from the scene"
                    } else {
                        "a new object"
                    },
                    carried(service)
                ),
            }
        }
        Err(message) => AttachObject::Response {
            success: false,
            message,
        },
    }
}

/// Answers a DetachObject request on `service`.
pub fn detach(
    service: &mut PlanningService,
    req: &DetachObject::Request,
) -> DetachObject::Response {
    match service.detach_object(&req.object_id, req.remove) {
        Ok(()) => DetachObject::Response {
            success: true,
            message: format!(
                "detached '{}' ({}); {}",
                req.object_id,
                if req.remove {
                    "removed"
                } else {
                    "back in the scene where the robot holds it"
                },
                carried(service)
            ),
        },
        Err(e) => DetachObject::Response {
            success: false,
            message: e.to_string(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bar(id: &str) -> AttachObject::Request {
        let mut req = AttachObject::Request {
            object_id: id.into(),
            link_name: "tool0".into(),
            touch_links: vec!["flange_link".into()],
            shape_type: crate::service::marker_type::CUBE,
            ..Default::default()
        };
        (req.scale.x, req.scale.y, req.scale.z) = (0.04, 0.04, 0.3);
        req.header.frame_id = "tool0".into();
        req.pose.position.z = 0.15;
        req
    }

    #[test]
    fn a_bar_is_attached_and_dropped_and_bad_requests_are_named() {
        let (robot, scene) = crate::cli::demo::bundled().expect("bundled");
        let mut service =
            PlanningService::new(robot, scene, crate::service::ServiceSettings::default());
        // An all-zero orientation (an unset message field) is the identity.
        let r = attach_request(&bar("bar")).expect("request");
        assert_eq!(r.link.as_deref(), Some("tool0"));
        let res = attach(&mut service, &bar("bar"));
        assert!(res.success, "{}", res.message);
        assert!(res.message.contains("a new object") && res.message.contains("carries bar"));
        assert_eq!(service.attached_objects().len(), 1);
        let res = attach(&mut service, &bar("bar"));
        assert!(
            !res.success && res.message.contains("already attached"),
            "{}",
            res.message
        );
        let mut nan = bar("nan");
        nan.pose.position.x = f64::NAN;
        let res = attach(&mut service, &nan);
        assert!(
            !res.success && res.message.contains("'nan'"),
            "{}",
            res.message
        );
        let res = detach(
            &mut service,
            &DetachObject::Request {
                object_id: "bar".into(),
                remove: true,
            },
        );
        assert!(
            res.success && res.message.contains("carries nothing"),
            "{}",
            res.message
        );
        let res = detach(
            &mut service,
            &DetachObject::Request {
                object_id: "bar".into(),
                remove: true,
            },
        );
        assert!(
            !res.success && res.message.contains("not attached"),
            "{}",
            res.message
        );
    }
}
