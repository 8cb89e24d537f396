//! Messages of the many-agent grid planner: `nav_msgs/OccupancyGrid` in (`~/occupancy_grid`
//! and `PlanAgents.map`), `PlanAgents` requests and responses, and the `~/agent_paths`
//! markers. The planning itself is [`crate::service::agents`].

use r2r::geometry_msgs::msg::{Point, Pose, PoseStamped, Quaternion};
use r2r::gpu_motion_planner_interfaces::srv::PlanAgents;
use r2r::nav_msgs::msg::{OccupancyGrid, Path};
use r2r::std_msgs::msg::{ColorRGBA, Header};
use r2r::visualization_msgs::msg::{Marker, MarkerArray};

use crate::service::agents::{
    agent_markers, AgentMarker, AgentsRequest, AgentsResponse, MapPose, OccupancyGridData, Rgba,
};

/// ROS `Marker.DELETEALL`.
const DELETEALL: i32 = 3;

/// The plain grid of an `OccupancyGrid` message.
pub fn grid_data(msg: &OccupancyGrid) -> OccupancyGridData {
    let o = &msg.info.origin;
    OccupancyGridData {
        frame_id: msg.header.frame_id.clone(),
        resolution: msg.info.resolution as f64,
        width: msg.info.width,
        height: msg.info.height,
        origin: MapPose {
            position: [o.position.x, o.position.y, o.position.z],
            orientation: [
                o.orientation.x,
                o.orientation.y,
                o.orientation.z,
                o.orientation.w,
            ],
        },
        data: msg.data.clone(),
    }
}

fn xyz(p: &Point) -> [f64; 3] {
    [p.x, p.y, p.z]
}

fn point(p: &[f64; 3]) -> Point {
    Point {
        x: p[0],
        y: p[1],
        z: p[2],
    }
}

/// The plain request of a `PlanAgents` request (an empty `map.data` = the last grid
/// received on `~/occupancy_grid`).
pub fn request(msg: &PlanAgents::Request) -> AgentsRequest {
    AgentsRequest {
        map: (!msg.map.data.is_empty()).then(|| grid_data(&msg.map)),
        goal: xyz(&msg.goal),
        starts: msg.starts.iter().map(xyz).collect(),
        backend: msg.backend.clone(),
        block_size: msg.block_size,
    }
}

/// The `PlanAgents` response of an answer or of an error.
pub fn response<E: std::fmt::Display>(outcome: &Result<AgentsResponse, E>) -> PlanAgents::Response {
    match outcome {
        Ok(r) => PlanAgents::Response {
            success: r.success,
            message: r.message.clone(),
            paths: r
                .paths
                .iter()
                .map(|poses| {
                    let header = Header {
                        frame_id: r.frame_id.clone(),
                        ..Default::default()
                    };
                    Path {
                        header: header.clone(),
                        poses: poses
                            .iter()
                            .map(|p| PoseStamped {
                                header: header.clone(),
                                pose: Pose {
                                    position: point(&p.position),
                                    orientation: Quaternion {
                                        x: p.orientation[0],
                                        y: p.orientation[1],
                                        z: p.orientation[2],
                                        w: p.orientation[3],
                                    },
                                },
                            })
                            .collect(),
                    }
                })
                .collect(),
            failed_agents: r.failed_agents.clone(),
            failure_reasons: r.failure_reasons.clone(),
            planning_time: r.planning_time,
        },
        Err(e) => PlanAgents::Response {
            success: false,
            message: e.to_string(),
            ..Default::default()
        },
    }
}

fn color(c: &Rgba) -> ColorRGBA {
    ColorRGBA {
        r: c.r,
        g: c.g,
        b: c.b,
        a: c.a,
    }
}

fn marker(m: &AgentMarker) -> Marker {
    Marker {
        header: Header {
            frame_id: m.frame_id.clone(),
            ..Default::default()
        },
        ns: m.ns.clone(),
        id: m.id,
        type_: m.kind.ros_type(),
        action: 0,
        pose: Pose {
            orientation: Quaternion {
                w: 1.0,
                ..Default::default()
            },
            ..Default::default()
        },
        scale: r2r::geometry_msgs::msg::Vector3 {
            x: m.scale[0],
            y: m.scale[1],
            z: m.scale[2],
        },
        color: color(&m.color),
        points: m.points.iter().map(point).collect(),
        colors: m.colors.iter().map(color).collect(),
        ..Default::default()
    }
}

/// The `~/agent_paths` message of an answer: a DELETEALL, then one line strip per solved
/// agent and the starts (failed ones red).
pub fn paths_array(r: &AgentsResponse) -> MarkerArray {
    let mut markers = vec![Marker {
        header: Header {
            frame_id: r.frame_id.clone(),
            ..Default::default()
        },
        action: DELETEALL,
        ..Default::default()
    }];
    markers.extend(agent_markers(r).iter().map(marker));
    MarkerArray { markers }
}
