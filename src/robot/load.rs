//! Loading a robot from URDF (+ SRDF): mesh URI resolution, collision geometry as convex
//! polytopes with covering sphere sets, optional sphere model from a `_spherized` URDF.

use std::path::{Path, PathBuf};

use nalgebra::{Isometry3, Point3, Translation3, UnitQuaternion, Vector3};

use super::decompose::convex_parts;
use super::geometry::Polytope;
use super::mesh::{load_mesh_points, load_mesh_triangles};
use super::model::KinematicTree;
use super::spheres::{Sphere, SphereSet};
use super::srdf::Srdf;
use super::{AllowedPairs, RobotError};

/// Number of facets used to build the outer polytope of a URDF cylinder.
pub const CYLINDER_SEGMENTS: usize = 16;
/// Icosphere subdivisions used to build the outer polytope of a URDF sphere.
pub const SPHERE_SUBDIVISIONS: u32 = 1;
/// Most spheres generated to cover one collision polytope.
pub const COVERING_SPHERES: usize = 6;

/// What a collision body was made from, kept so that exact oracles can rebuild it.
#[derive(Clone, Debug, PartialEq)]
pub enum BodySource {
    /// A URDF `<box>` with full sizes.
    Box {
        /// Full extents along x, y, z.
        size: Vector3<f64>,
    },
    /// A URDF `<cylinder>` along z.
    Cylinder {
        /// Radius.
        radius: f64,
        /// Length along z.
        length: f64,
    },
    /// A URDF `<sphere>`.
    Sphere {
        /// Radius.
        radius: f64,
    },
    /// A URDF `<mesh>` resolved to a file.
    Mesh {
        /// Resolved mesh file.
        path: PathBuf,
        /// Scale factors.
        scale: Vector3<f64>,
    },
    /// One convex part of a URDF `<mesh>` split into parts
    /// ([`LoadOptions::mesh_parts`]); the body's polytope is the part.
    MeshPart {
        /// Resolved mesh file.
        path: PathBuf,
        /// Scale factors.
        scale: Vector3<f64>,
        /// Which part, from 0.
        part: usize,
    },
    /// A convex polytope given by its vertices in the body frame (an attached object's
    /// convex mesh).
    Convex {
        /// The hull's vertices.
        points: Vec<Point3<f64>>,
    },
}

/// One collision element of a link, as a convex polytope in the link frame.
#[derive(Clone, Debug)]
pub struct CollisionBody {
    /// Index of the link the body belongs to.
    pub link: usize,
    /// Pose of the element in the link frame (the URDF `<origin>` of the collision element).
    pub origin: Isometry3<f64>,
    /// The element's geometry.
    pub source: BodySource,
    /// Convex polytope containing the element, in the link frame.
    pub polytope: Polytope,
    /// Spheres covering the polytope, in the link frame.
    pub covering: SphereSet,
}

/// Where to look for `package://` resources and what to load.
#[derive(Clone, Debug, Default)]
pub struct LoadOptions {
    /// Extra folders searched for `package://NAME/...`: either a folder that contains a
    /// package folder `NAME`, or the package folder itself (its name is `NAME`).
    pub search_paths: Vec<PathBuf>,
    /// Load collision geometry (meshes, polytopes, spheres). FK and DH need none of it.
    pub skip_geometry: bool,
    /// A `_spherized` URDF whose collision elements are all spheres: the sphere model.
    pub spherized_urdf: Option<PathBuf>,
    /// How the links' collision meshes become polytopes: `None` (or one part), each mesh is
    /// the convex hull of its vertices; otherwise each is split into at most
    /// `max_parts` convex parts covering its triangles
    /// ([`crate::robot::decompose::convex_parts`]), one collision body per part, so that a
    /// concave link (a gripper's palm between its fingers, a U-shaped bracket) is not
    /// filled in. A mesh that cannot be split is an error naming the link and the file.
    pub mesh_parts: Option<super::decompose::Decomposition>,
}

/// A robot: kinematic tree, collision bodies, sphere model and allowed collision pairs.
#[derive(Clone, Debug)]
pub struct RobotModel {
    /// Links, joints and variables.
    pub tree: KinematicTree,
    /// Collision bodies (convex polytopes) of all links.
    pub bodies: Vec<CollisionBody>,
    /// The sphere model read from a `_spherized` URDF: `(link, sphere in link frame)`.
    pub spherized: Option<Vec<(usize, Sphere)>>,
    /// Link pairs never checked against each other.
    pub allowed: AllowedPairs,
    /// The semantic description, when one was given.
    pub srdf: Option<Srdf>,
    /// Folder the URDF came from (relative resources resolve against it).
    pub base_dir: Option<PathBuf>,
    /// Objects carried by the robot ([`RobotModel::attach`]), each a link of its own.
    pub(crate) attached: Vec<super::attach::AttachedObject>,
    /// Velocity and acceleration scaling for requests that give none, from a joint limits
    /// file ([`RobotModel::apply_joint_limits`]); none without one.
    pub default_scaling: super::DefaultScaling,
    /// Named planner configurations and per-group planning defaults from a MoveIt
    /// configuration's `ompl_planning.yaml`; empty without one.
    pub ompl: super::ompl_planning::OmplPlanning,
    /// Cartesian speed limits of Cartesian paths, from a MoveIt configuration's
    /// `pilz_cartesian_limits.yaml`; none without one.
    pub cartesian_limits: Option<super::cartesian_limits::CartesianLimits>,
    /// Inverse kinematics settings per group, from a MoveIt configuration's
    /// `kinematics.yaml`; none without one.
    pub kinematics: Option<super::kinematics_config::KinematicsConfig>,
}

fn pose_from_urdf(p: &urdf_rs::Pose) -> Isometry3<f64> {
    Isometry3::from_parts(
        Translation3::new(p.xyz.0[0], p.xyz.0[1], p.xyz.0[2]),
        UnitQuaternion::from_euler_angles(p.rpy.0[0], p.rpy.0[1], p.rpy.0[2]),
    )
}

fn parse_urdf_text(text: &str, what: &str) -> Result<urdf_rs::Robot, RobotError> {
    urdf_rs::read_from_string(text).map_err(|e| RobotError::Urdf {
        source_name: what.to_string(),
        message: e.to_string(),
    })
}

/// Resolves a mesh URI (`package://pkg/rest`, `file://path`, absolute or relative path).
///
/// `package://pkg/rest` is searched, in order, in every `AMENT_PREFIX_PATH` entry
/// (`<prefix>/share/pkg/rest`), in `ROS_PACKAGE_PATH`, in the given search paths, and last
/// relative to the URDF's folder (`<urdf dir>/pkg/rest`), which is how the MotionBenchMaker
/// robots name their meshes (`package://meshes/...`).
pub fn resolve_resource(
    uri: &str,
    base_dir: Option<&Path>,
    search_paths: &[PathBuf],
) -> Result<PathBuf, Vec<PathBuf>> {
    let mut tried = Vec::new();
    if let Some(rest) = uri.strip_prefix("package://") {
        let (pkg, rel) = rest.split_once('/').unwrap_or((rest, ""));
        let mut candidates = Vec::new();
        if let Ok(ament) = std::env::var("AMENT_PREFIX_PATH") {
            for prefix in std::env::split_paths(&ament) {
                candidates.push(prefix.join("share").join(pkg).join(rel));
            }
        }
        if let Ok(rpp) = std::env::var("ROS_PACKAGE_PATH") {
            for dir in std::env::split_paths(&rpp) {
                candidates.push(dir.join(pkg).join(rel));
            }
        }
        for dir in search_paths {
            candidates.push(dir.join(pkg).join(rel));
            if dir.file_name().and_then(|n| n.to_str()) == Some(pkg) {
                candidates.push(dir.join(rel));
            }
        }
        if let Some(b) = base_dir {
            candidates.push(b.join(pkg).join(rel));
        }
        for c in candidates {
            if c.is_file() {
                return Ok(c);
            }
            tried.push(c);
        }
        return Err(tried);
    }
    let path = if let Some(p) = uri.strip_prefix("file://") {
        PathBuf::from(p)
    } else {
        PathBuf::from(uri)
    };
    let full = if path.is_absolute() {
        path
    } else {
        base_dir.map(|b| b.join(&path)).unwrap_or(path)
    };
    if full.is_file() {
        Ok(full)
    } else {
        tried.push(full);
        Err(tried)
    }
}

/// The collision bodies of one URDF collision element: one, or one per convex part of a mesh
/// split into parts ([`LoadOptions::mesh_parts`]).
fn geometry_bodies(
    link_index: usize,
    link_name: &str,
    c: &urdf_rs::Collision,
    base_dir: Option<&Path>,
    opts: &LoadOptions,
) -> Result<Vec<CollisionBody>, RobotError> {
    let origin = pose_from_urdf(&c.origin);
    let geo_err = |e: super::geometry::GeometryError| RobotError::Geometry {
        link: link_name.to_string(),
        message: e.to_string(),
    };
    let positive = |v: f64, what: &str| -> Result<f64, RobotError> {
        if v.is_finite() && v > 0.0 {
            Ok(v)
        } else {
            Err(RobotError::Geometry {
                link: link_name.to_string(),
                message: format!("{what} must be positive, got {v}"),
            })
        }
    };
    let (source, local) = match &c.geometry {
        urdf_rs::Geometry::Box { size } => {
            let s = Vector3::new(
                positive(size.0[0], "box size x")?,
                positive(size.0[1], "box size y")?,
                positive(size.0[2], "box size z")?,
            );
            (
                BodySource::Box { size: s },
                Polytope::from_box(s * 0.5).map_err(geo_err)?,
            )
        }
        urdf_rs::Geometry::Cylinder { radius, length } => {
            let r = positive(*radius, "cylinder radius")?;
            let l = positive(*length, "cylinder length")?;
            (
                BodySource::Cylinder {
                    radius: r,
                    length: l,
                },
                Polytope::from_cylinder(r, l, CYLINDER_SEGMENTS).map_err(geo_err)?,
            )
        }
        urdf_rs::Geometry::Capsule { radius, length } => {
            // A capsule is contained in the cylinder of the same radius and length + 2 radius.
            let r = positive(*radius, "capsule radius")?;
            let l = positive(*length, "capsule length")?;
            (
                BodySource::Cylinder {
                    radius: r,
                    length: l + 2.0 * r,
                },
                Polytope::from_cylinder(r, l + 2.0 * r, CYLINDER_SEGMENTS).map_err(geo_err)?,
            )
        }
        urdf_rs::Geometry::Sphere { radius } => {
            let r = positive(*radius, "sphere radius")?;
            (
                BodySource::Sphere { radius: r },
                Polytope::from_sphere(r, SPHERE_SUBDIVISIONS).map_err(geo_err)?,
            )
        }
        urdf_rs::Geometry::Mesh { filename, scale } => {
            let path =
                resolve_resource(filename, base_dir, &opts.search_paths).map_err(|tried| {
                    RobotError::MeshNotFound {
                        link: link_name.to_string(),
                        uri: filename.clone(),
                        tried: tried
                            .iter()
                            .map(|p| p.display().to_string())
                            .collect::<Vec<_>>()
                            .join(", "),
                    }
                })?;
            let s = scale
                .as_ref()
                .map(|s| Vector3::new(s.0[0], s.0[1], s.0[2]))
                .unwrap_or(Vector3::new(1.0, 1.0, 1.0));
            if let Some(how) = opts.mesh_parts.filter(|h| h.max_parts > 1) {
                let split_err = |why: String| RobotError::Geometry {
                    link: link_name.to_string(),
                    message: format!(
                        "mesh {} cannot be split into convex parts ({why}); load it as its \
                         convex hull (one part) instead",
                        path.display()
                    ),
                };
                let (points, triangles) =
                    load_mesh_triangles(&path, s).map_err(|e| split_err(e.to_string()))?;
                let parts = convex_parts(&points, &triangles, &how)
                    .map_err(|e| split_err(e.to_string()))?;
                if parts.is_empty() {
                    return Err(split_err("the split gave no part".into()));
                }
                let bodies = parts.into_iter().enumerate().map(|(part, local)| {
                    let source = BodySource::MeshPart {
                        path: path.clone(),
                        scale: s,
                        part,
                    };
                    body(link_index, origin, source, &local)
                });
                return Ok(bodies.collect());
            }
            let points = load_mesh_points(&path, s).map_err(geo_err)?;
            let poly = Polytope::from_points(&points).map_err(geo_err)?;
            (BodySource::Mesh { path, scale: s }, poly)
        }
    };
    Ok(vec![body(link_index, origin, source, &local)])
}

/// A collision body of link `link` from a polytope in the element's frame, placed at the
/// element's `origin` in the link frame.
fn body(
    link: usize,
    origin: Isometry3<f64>,
    source: BodySource,
    local: &Polytope,
) -> CollisionBody {
    let polytope = local.transformed(&origin);
    let covering = SphereSet::covering(&polytope, COVERING_SPHERES);
    CollisionBody {
        link,
        origin,
        source,
        polytope,
        covering,
    }
}

impl RobotModel {
    /// Whether pose goals of `group` constrain the position only: its `position_only_ik` in
    /// the robot's `kinematics.yaml`.
    pub fn position_only_ik(&self, group: &str) -> bool {
        self.kinematics
            .as_ref()
            .is_some_and(|k| k.position_only(group))
    }

    /// The inverse kinematics time limit of `group` (s): its `kinematics_solver_timeout` in the
    /// robot's `kinematics.yaml`, when positive. `~/compute_ik` and `gmp ik` use it when the
    /// request gives none, as MoveIt's compute_ik does.
    pub fn ik_timeout(&self, group: &str) -> Option<f64> {
        self.kinematics.as_ref().and_then(|k| k.timeout(group))
    }

    /// Loads a robot from a URDF file, with an optional SRDF file.
    pub fn from_urdf_file(
        urdf: &Path,
        srdf: Option<&Path>,
        opts: &LoadOptions,
    ) -> Result<Self, RobotError> {
        let srdf_text = match srdf {
            Some(p) => Some((super::read_text(p)?, p.display().to_string())),
            None => None,
        };
        Self::from_urdf_file_with_srdf(
            urdf,
            srdf_text.as_ref().map(|(t, n)| (t.as_str(), n.as_str())),
            opts,
        )
    }

    /// Loads a robot from a URDF file with an SRDF given as text (e.g. the
    /// `robot_description_semantic` parameter), `(text, name)`: the name is what SRDF errors
    /// call it.
    pub fn from_urdf_file_with_srdf(
        urdf: &Path,
        srdf: Option<(&str, &str)>,
        opts: &LoadOptions,
    ) -> Result<Self, RobotError> {
        let text = super::read_text(urdf)?;
        let base = urdf.parent().map(|p| {
            if p.as_os_str().is_empty() {
                Path::new(".")
            } else {
                p
            }
        });
        Self::from_urdf_str_named(&text, &urdf.display().to_string(), base, srdf, opts)
    }

    /// Loads a robot from URDF text (e.g. the `robot_description` parameter). Relative resources
    /// resolve against `base_dir`.
    pub fn from_urdf_str(
        urdf: &str,
        base_dir: Option<&Path>,
        srdf: Option<&str>,
        opts: &LoadOptions,
    ) -> Result<Self, RobotError> {
        Self::from_urdf_str_named(
            urdf,
            "robot_description",
            base_dir,
            srdf.map(|s| (s, "semantic description")),
            opts,
        )
    }

    /// Loads a robot from URDF text named `name` in errors, with an SRDF as `(text, name)`.
    /// Relative resources resolve against `base_dir`.
    pub fn from_urdf_str_named(
        urdf: &str,
        name: &str,
        base_dir: Option<&Path>,
        srdf: Option<(&str, &str)>,
        opts: &LoadOptions,
    ) -> Result<Self, RobotError> {
        let robot = parse_urdf_text(urdf, name)?;
        let tree = KinematicTree::from_urdf(&robot)?;
        let mut bodies = Vec::new();
        if !opts.skip_geometry {
            for l in &robot.links {
                let li = tree.link(&l.name)?;
                for c in &l.collision {
                    bodies.extend(geometry_bodies(li, &l.name, c, base_dir, opts)?);
                }
            }
        }
        let srdf = match srdf {
            Some((text, sname)) => Some(Srdf::parse(text, sname, &tree)?),
            None => None,
        };
        let spherized = match &opts.spherized_urdf {
            Some(p) => Some(load_spherized(p, &tree)?),
            None => None,
        };
        let mut model = RobotModel {
            tree,
            bodies,
            spherized,
            allowed: AllowedPairs::default(),
            srdf,
            base_dir: base_dir.map(Path::to_path_buf),
            attached: Vec::new(),
            default_scaling: super::DefaultScaling::default(),
            ompl: super::ompl_planning::OmplPlanning::default(),
            cartesian_limits: None,
            kinematics: None,
        };
        model.allowed = AllowedPairs::compute(&model);
        Ok(model)
    }

    /// Indices of the links that carry at least one collision body.
    pub fn collision_links(&self) -> Vec<usize> {
        let mut v: Vec<usize> = self.bodies.iter().map(|b| b.link).collect();
        v.dedup();
        v.sort_unstable();
        v.dedup();
        v
    }
}

/// Reads the sphere model of a `_spherized` URDF: every collision element must be a sphere,
/// and link names must match the robot's.
pub fn load_spherized(
    path: &Path,
    tree: &KinematicTree,
) -> Result<Vec<(usize, Sphere)>, RobotError> {
    let text = super::read_text(path)?;
    let robot = parse_urdf_text(&text, &path.display().to_string())?;
    let mut out = Vec::new();
    for l in &robot.links {
        if l.collision.is_empty() {
            continue;
        }
        let li = tree.link(&l.name).map_err(|_| {
            RobotError::Model(format!(
                "spherized URDF {}: link '{}' is not in the robot",
                path.display(),
                l.name
            ))
        })?;
        for c in &l.collision {
            match c.geometry {
                urdf_rs::Geometry::Sphere { radius } if radius.is_finite() && radius > 0.0 => {
                    let o = pose_from_urdf(&c.origin);
                    out.push((li, Sphere { center: o * Point3::origin(), radius }));
                }
                _ => {
                    return Err(RobotError::Geometry {
                        link: l.name.clone(),
                        message: format!("spherized URDF {}: collision geometry must be spheres with positive radius", path.display()),
                    })
                }
            }
        }
    }
    Ok(out)
}
