//! The bundled arm (`urdf/gmp_arm.urdf` + SRDF) in the bundled scene
//! (`config/default_scene.yaml`), with its default group, neutral state and tool link.

use gpu_motion_planner::collision::{CheckerOptions, CpuChecker};
use gpu_motion_planner::robot::ik::default_tip_link;
use gpu_motion_planner::robot::{LoadOptions, PlanningGroup, RobotModel};
use gpu_motion_planner::scene::{load_scene, Scene};
use nalgebra::Isometry3;

/// The bundled robot and scene.
pub struct Bundled {
    pub robot: RobotModel,
    pub scene: Scene,
    pub group: PlanningGroup,
    pub base: Vec<f64>,
    pub tip: usize,
}

/// Loads the bundled robot and scene.
pub fn bundled() -> Bundled {
    let root = super::root();
    let robot = RobotModel::from_urdf_file(
        &root.join("urdf/gmp_arm.urdf"),
        Some(&root.join("urdf/gmp_arm.srdf")),
        &LoadOptions::default(),
    )
    .expect("bundled robot loads");
    let scene = load_scene(&root.join("config/default_scene.yaml")).expect("scene loads");
    let group = robot.default_group();
    let base = robot.tree.neutral_state();
    let tip = default_tip_link(&robot, &group).expect("tip");
    Bundled {
        robot,
        scene,
        group,
        base,
        tip,
    }
}

impl Bundled {
    /// A CPU checker of the scene with the neutral base state.
    pub fn checker(&self) -> CpuChecker {
        CpuChecker::new(
            &self.robot,
            &self.group,
            &self.base,
            &self.scene,
            CheckerOptions::default(),
        )
        .expect("checker")
    }

    /// The neutral configuration of the group.
    pub fn neutral(&self) -> Vec<f64> {
        self.group.config_of(&self.base)
    }

    /// The tool link's pose at group configuration `q`.
    pub fn tool(&self, q: &[f64]) -> Isometry3<f64> {
        self.robot
            .tree
            .forward_kinematics(&self.group.full_state(&self.base, q))[self.tip]
    }
}
