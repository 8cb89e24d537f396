//! The bundled arm (`urdf/gmp_arm.urdf` + SRDF) in the bundled scene
//! (`config/default_scene.yaml`), with its default group, neutral state and tool link.

use std::f64::consts::PI;

use gpu_motion_planner::collision::{Checker, CheckerOptions, CpuChecker};
use gpu_motion_planner::robot::ik::{default_tip_link, IkOptions, IkSolver, PoseTarget};
use gpu_motion_planner::robot::{LoadOptions, PlanningGroup, RobotModel};
use gpu_motion_planner::scene::{load_scene, Scene};
use nalgebra::{Isometry3, Translation3, UnitQuaternion, Vector3};

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

    /// The inverse kinematics solutions that put the tool at `position` pointing straight
    /// down (its z axis along the world's -z), those `free_in` finds collision-free.
    pub fn down_at(&self, position: [f64; 3], free_in: &CpuChecker) -> Vec<Vec<f64>> {
        let [x, y, z] = position;
        let pose = Isometry3::from_parts(Translation3::new(x, y, z), tool_down());
        IkSolver::new(
            &self.robot,
            &self.group,
            &self.base,
            PoseTarget::pose(self.tip, pose),
        )
        .expect("solver")
        .solve(None, &IkOptions::default())
        .expect("ik runs")
        .into_iter()
        .map(|s| s.config)
        .filter(|q| free_in.check_config(q).expect("check"))
        .collect()
    }
}

/// The tool pointing straight down (its z axis along the world's -z).
pub fn tool_down() -> UnitQuaternion<f64> {
    UnitQuaternion::from_axis_angle(&Vector3::x_axis(), PI)
}
