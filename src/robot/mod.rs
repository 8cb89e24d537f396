//! Robot model: URDF loading, kinematic tree, forward kinematics, DH extraction, link geometry
//! (convex polytopes, sphere sets), allowed collision pairs and planning groups.

mod acm;
mod attach;
pub mod cartesian_limits;
pub mod constraint;
pub mod decompose;
pub mod dh;
pub mod geometry;
mod group;
pub mod ik;
pub mod kinematics_config;
mod limits;
mod load;
pub mod mesh;
mod model;
pub mod moveit_config;
pub mod ompl_planning;
mod space;
pub mod spheres;
pub mod spherize;
mod srdf;

pub use acm::{AllowedPairs, AllowedReason};
pub use attach::{attach_joint_name, AttachedObject};
pub use group::{PlanningGroup, DEFAULT_ACCELERATION_FACTOR};
pub use limits::{DefaultScaling, JointLimitEntry, JointLimitsFile};
pub use load::{
    load_spherized, resolve_resource, BodySource, CollisionBody, LoadOptions, RobotModel,
    CYLINDER_SEGMENTS, SPHERE_SUBDIVISIONS,
};
pub use model::{Joint, JointKind, JointLimits, KinematicTree, Link, Mimic};
pub use space::{wrap_angle, wrapped_difference, JointSpace, LIMIT_TOLERANCE};
pub use srdf::{Srdf, SrdfGroup};

/// The text of a file, or [`RobotError::Io`] naming it.
pub fn read_text(path: &std::path::Path) -> Result<String, RobotError> {
    std::fs::read_to_string(path).map_err(|e| RobotError::Io {
        path: path.display().to_string(),
        message: e.to_string(),
    })
}

/// Errors of the robot layer; each names the file, link or joint at fault.
#[derive(Debug, thiserror::Error)]
pub enum RobotError {
    /// A file could not be read.
    #[error("cannot read {path}: {message}")]
    Io {
        /// The file.
        path: String,
        /// The OS error.
        message: String,
    },
    /// The URDF is not well-formed XML or not a URDF.
    #[error("malformed URDF {source_name}: {message}")]
    Urdf {
        /// File name or "robot_description".
        source_name: String,
        /// Parser message.
        message: String,
    },
    /// The URDF parsed but does not describe a valid kinematic tree.
    #[error("invalid robot model: {0}")]
    Model(String),
    /// A mesh URI could not be resolved to a file.
    #[error("link '{link}': mesh '{uri}' not found (tried: {tried})")]
    MeshNotFound {
        /// The link.
        link: String,
        /// The URI as written in the URDF.
        uri: String,
        /// Paths that were tried.
        tried: String,
    },
    /// Collision geometry of a link could not be built.
    #[error("link '{link}': {message}")]
    Geometry {
        /// The link.
        link: String,
        /// What went wrong.
        message: String,
    },
    /// The SRDF is malformed or names something that does not exist.
    #[error("SRDF {source_name}: {message}")]
    Srdf {
        /// File name.
        source_name: String,
        /// What went wrong.
        message: String,
    },
    /// A joint limits file is malformed, names a joint that does not exist or gives a bad
    /// limit.
    #[error("joint limits {source_name}: {message}")]
    JointLimits {
        /// File name.
        source_name: String,
        /// What went wrong (naming the joint and key).
        message: String,
    },
    /// A `kinematics.yaml` file is malformed or gives a bad setting.
    #[error("kinematics {source_name}: {message}")]
    Kinematics {
        /// File name.
        source_name: String,
        /// What went wrong (naming the group and key).
        message: String,
    },
    /// A `pilz_cartesian_limits.yaml` file is malformed or gives a bad limit.
    #[error("Cartesian limits {source_name}: {message}")]
    CartesianLimits {
        /// File name.
        source_name: String,
        /// What went wrong (naming the key).
        message: String,
    },
    /// An `ompl_planning.yaml` file is malformed or gives a bad setting.
    #[error("OMPL planning {source_name}: {message}")]
    OmplPlanning {
        /// File name.
        source_name: String,
        /// What went wrong (naming the entry and key).
        message: String,
    },
    /// A joint name that is not in the robot.
    #[error("unknown joint '{0}'")]
    UnknownJoint(String),
    /// A link name that is not in the robot.
    #[error("unknown link '{0}'")]
    UnknownLink(String),
    /// A planning group could not be formed.
    #[error("planning group: {0}")]
    Group(String),
    /// The chain cannot be written with DH parameters.
    #[error("joint '{joint}' is not DH-representable: {reason}")]
    NotDh {
        /// The joint at fault.
        joint: String,
        /// Why.
        reason: String,
    },
}
