//! Point clouds into the scene: the boxes of the latest cloud (see [`crate::scene::cloud`])
//! replace those of the one before.

use nalgebra::{Isometry3, Point3};

use super::{PlanningService, ServiceError};
use crate::scene::cloud::{cloud_boxes, cloud_index, cloud_obstacles, CloudStats, RobotFilter};
use crate::tf::StampNs;

impl PlanningService {
    /// Makes `points` (in `frame`: the planning frame, also when empty, a link of the robot,
    /// such as a camera's, taken where the current joint state puts it, or a frame of the
    /// transforms at their latest, see [`PlanningService::set_transforms`]) the scene's point
    /// cloud: its boxes (settings [`super::ServiceSettings::cloud`]) become the obstacles
    /// `pointcloud/0`, `pointcloud/1`, ... and those of the previous cloud that are left over
    /// are removed. The robot (attached objects included) is cut out where the current joint
    /// state puts it, so one is needed. An empty cloud clears them. On error the scene is
    /// unchanged.
    pub fn set_point_cloud(
        &mut self,
        frame: &str,
        points: &[Point3<f64>],
    ) -> Result<CloudStats, ServiceError> {
        self.set_point_cloud_at(frame, None, points)
    }

    /// [`Self::set_point_cloud`] for a cloud taken at `stamp`: a frame that only the
    /// transforms know ([`PlanningService::set_transforms`], e.g. a camera's) is placed as
    /// they were then (`None`: their latest). Robot links are placed at the current joint
    /// state.
    pub fn set_point_cloud_at(
        &mut self,
        frame: &str,
        stamp: Option<StampNs>,
        points: &[Point3<f64>],
    ) -> Result<CloudStats, ServiceError> {
        let bad = |m: String| ServiceError::BadCloud(m);
        if !self.has_current {
            return Err(bad(
                "no joint state received yet: the robot cannot be cut out of the cloud".into(),
            ));
        }
        let sensor = self
            .in_planning_frame_at(frame, Isometry3::identity(), &self.current, stamp)
            .map_err(bad)?;
        let settings = &self.settings.cloud;
        let filter = RobotFilter::new(&self.robot, &self.current, settings.padding);
        let (boxes, stats) = cloud_boxes(points, &sensor, Some(&filter), settings).map_err(bad)?;
        let obstacles = cloud_obstacles(&boxes);
        // Validate everything before the scene changes.
        for o in &obstacles {
            o.validate().map_err(|e| bad(e.to_string()))?;
        }
        let stale: Vec<String> = self
            .scene
            .iter()
            .filter(|o| cloud_index(&o.id).is_some_and(|n| n >= obstacles.len()))
            .map(|o| o.id.clone())
            .collect();
        for o in obstacles {
            self.scene.upsert(o).map_err(|e| bad(e.to_string()))?;
        }
        for id in stale {
            self.scene.remove(&id).map_err(|e| bad(e.to_string()))?;
        }
        Ok(stats)
    }

    /// How many obstacles of the scene came from a point cloud.
    pub fn cloud_obstacle_count(&self) -> usize {
        self.scene
            .iter()
            .filter(|o| cloud_index(&o.id).is_some())
            .count()
    }
}
