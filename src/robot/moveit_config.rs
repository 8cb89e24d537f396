//! A MoveIt configuration package (what the MoveIt Setup Assistant writes, e.g.
//! `panda_moveit_config`) as the source of a robot: its URDF (expanded by `xacro` where it is
//! a xacro file), SRDF, `config/joint_limits.yaml` and `config/moveit_controllers.yaml`.
//!
//! The package is named by its folder or, when that is no folder, by its package name, which
//! is looked up as ROS does: `<prefix>/share/<name>` for every `AMENT_PREFIX_PATH` entry, then
//! `<dir>/<name>` for every `ROS_PACKAGE_PATH` entry.
//!
//! Where the files are, as MoveIt's `moveit_configs_utils` finds them:
//! - with a `.setup_assistant` file (its `moveit_setup_assistant_config` mapping): the URDF is
//!   `urdf.relative_path` inside the package `urdf.package` (looked up as above, and also among
//!   the folders next to the configuration package, by their `package.xml` name, so a source
//!   workspace works before it is built), expanded with `urdf.xacro_args`
//!   (`name:=value` separated by spaces); the SRDF is `srdf.relative_path` inside the
//!   configuration package. The upper-case keys `URDF` and `SRDF` of older files are read too;
//! - without one: `config/<robot>.urdf.xacro` or `config/<robot>.urdf`, and
//!   `config/<robot>.srdf` (or `.srdf.xacro`), where `<robot>` is the package's name without
//!   `_moveit_config`; failing those, the one URDF (or SRDF) file in `config/`.
//!
//! `config/joint_limits.yaml`, `config/moveit_controllers.yaml`, `config/ompl_planning.yaml`
//! ([`super::ompl_planning`]), `config/pilz_cartesian_limits.yaml`
//! ([`super::cartesian_limits`]), `config/kinematics.yaml` ([`super::kinematics_config`]),
//! `config/initial_positions.yaml` and `config/sensors_3d.yaml` are used when present.
//!
//! A file whose name ends in `.xacro` is expanded by running the `xacro` program (`GMP_XACRO`
//! names another one): ROS's `ros-<distro>-xacro`, or `pip install xacro`. Any other file is
//! read as it is. Errors name the package, the file and the key at fault.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::cartesian_limits::CartesianLimits;
use super::kinematics_config::KinematicsConfig;
use super::ompl_planning::OmplPlanning;
use super::{JointLimitsFile, LoadOptions, RobotError, RobotModel};

/// The environment variable naming the xacro program (default `xacro`).
pub const XACRO_ENV: &str = "GMP_XACRO";

/// Errors reading a MoveIt configuration package; each names the package or file at fault.
#[derive(Debug, thiserror::Error)]
pub enum MoveItConfigError {
    /// The package was not found.
    #[error("MoveIt config '{given}': no such folder or package (tried: {tried})")]
    NotFound {
        /// The folder or package name given.
        given: String,
        /// The folders tried.
        tried: String,
    },
    /// The `.setup_assistant` file is malformed or lacks a key.
    #[error("{path}: {message}")]
    SetupAssistant {
        /// The `.setup_assistant` file.
        path: String,
        /// What is wrong.
        message: String,
    },
    /// A file the package should hold is not there.
    #[error("MoveIt config {package}: {message}")]
    Missing {
        /// The configuration package's folder.
        package: String,
        /// What is missing and where it was looked for.
        message: String,
    },
    /// A xacro file could not be expanded.
    #[error("{path}: xacro: {message}")]
    Xacro {
        /// The xacro file.
        path: String,
        /// Why.
        message: String,
    },
    /// The robot the files describe could not be loaded.
    #[error(transparent)]
    Robot(#[from] RobotError),
}

/// Where a package's files were found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FoundBy {
    /// From the package's `.setup_assistant` file.
    SetupAssistant,
    /// By the file names MoveIt expects without one.
    Convention,
}

/// The files of a MoveIt configuration package.
#[derive(Clone, Debug)]
pub struct MoveItConfig {
    /// The configuration package's folder.
    pub dir: PathBuf,
    /// The robot's name: the package's name without `_moveit_config`.
    pub robot_name: String,
    /// The URDF (or URDF xacro) file.
    pub urdf: PathBuf,
    /// Arguments for xacro, each `name:=value`.
    pub xacro_args: Vec<String>,
    /// The SRDF (or SRDF xacro) file.
    pub srdf: PathBuf,
    /// `config/joint_limits.yaml`, where present.
    pub joint_limits: Option<PathBuf>,
    /// `config/moveit_controllers.yaml`, where present.
    pub controllers: Option<PathBuf>,
    /// `config/initial_positions.yaml` (where mock hardware starts), where present.
    pub initial_positions: Option<PathBuf>,
    /// `config/sensors_3d.yaml` (the depth sensors of MoveIt's occupancy map), where present.
    pub sensors_3d: Option<PathBuf>,
    /// `config/ompl_planning.yaml` (planner configurations, per-group defaults), where present.
    pub ompl_planning: Option<PathBuf>,
    /// `config/pilz_cartesian_limits.yaml` (Cartesian speed limits), where present.
    pub cartesian_limits: Option<PathBuf>,
    /// `config/kinematics.yaml` (inverse kinematics per group), where present.
    pub kinematics: Option<PathBuf>,
    /// How the URDF and SRDF were found.
    pub found_by: FoundBy,
}

/// The package search path of the environment: `AMENT_PREFIX_PATH` entries' `share` folders,
/// then `ROS_PACKAGE_PATH` entries (each a folder holding package folders).
pub fn package_roots_from_env() -> Vec<PathBuf> {
    let mut roots = Vec::new();
    if let Some(ament) = std::env::var_os("AMENT_PREFIX_PATH") {
        roots.extend(std::env::split_paths(&ament).map(|p| p.join("share")));
    }
    if let Some(rpp) = std::env::var_os("ROS_PACKAGE_PATH") {
        roots.extend(std::env::split_paths(&rpp));
    }
    roots.retain(|p| !p.as_os_str().is_empty());
    roots
}

/// The `<name>` of a folder's `package.xml`, if it has a readable one.
fn package_xml_name(dir: &Path) -> Option<String> {
    let text = std::fs::read_to_string(dir.join("package.xml")).ok()?;
    let doc = roxmltree::Document::parse(&text).ok()?;
    doc.root_element()
        .children()
        .find(|n| n.has_tag_name("name"))
        .and_then(|n| n.text())
        .map(|t| t.trim().to_string())
}

/// Finds package `name`: `<root>/<name>` for each of `roots`, then a folder among `near`'s
/// children whose `package.xml` names it. `tried` collects the folders looked at.
fn find_package(
    name: &str,
    roots: &[PathBuf],
    near: Option<&Path>,
    tried: &mut Vec<PathBuf>,
) -> Option<PathBuf> {
    for root in roots {
        let dir = root.join(name);
        if dir.is_dir() {
            return Some(dir);
        }
        tried.push(dir);
    }
    let near = near?;
    let direct = near.join(name);
    if direct.is_dir() {
        return Some(direct);
    }
    let mut children: Vec<PathBuf> = std::fs::read_dir(near)
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_dir())
        .collect();
    children.sort();
    let found = children
        .into_iter()
        .find(|d| package_xml_name(d).as_deref() == Some(name));
    if found.is_none() {
        tried.push(near.join(format!("*/package.xml naming {name}")));
    }
    found
}

fn list(paths: &[PathBuf]) -> String {
    paths
        .iter()
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// A string entry of a YAML mapping under either spelling of its key.
fn entry<'a>(map: &'a serde_yaml::Value, keys: &[&str]) -> Option<&'a serde_yaml::Value> {
    keys.iter().find_map(|k| map.get(*k))
}

impl MoveItConfig {
    /// Finds the configuration package `given` (a folder, else a package name) with the
    /// environment's package search path ([`package_roots_from_env`]) and reads where its
    /// files are.
    pub fn locate(given: &str) -> Result<Self, MoveItConfigError> {
        Self::locate_in(given, &package_roots_from_env())
    }

    /// [`Self::locate`] with the package search path given: folders holding package folders.
    pub fn locate_in(given: &str, roots: &[PathBuf]) -> Result<Self, MoveItConfigError> {
        let given_trim = given.trim();
        let as_path = Path::new(given_trim);
        let mut tried = Vec::new();
        let dir = if as_path.is_dir() {
            as_path.to_path_buf()
        } else {
            tried.push(as_path.to_path_buf());
            let is_name = !given_trim.is_empty()
                && !given_trim.contains(std::path::MAIN_SEPARATOR)
                && !given_trim.contains('/');
            let found = if is_name {
                find_package(given_trim, roots, None, &mut tried)
            } else {
                None
            };
            found.ok_or_else(|| MoveItConfigError::NotFound {
                given: given.to_string(),
                tried: list(&tried),
            })?
        };
        let package_name = package_xml_name(&dir).unwrap_or_else(|| {
            dir.canonicalize()
                .ok()
                .as_deref()
                .unwrap_or(&dir)
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default()
        });
        let robot_name = package_name
            .strip_suffix("_moveit_config")
            .unwrap_or(&package_name)
            .to_string();
        let setup = dir.join(".setup_assistant");
        let (urdf, xacro_args, srdf, found_by) = if setup.is_file() {
            Self::from_setup_assistant(&dir, &setup, roots)?
        } else {
            let (urdf, srdf) = Self::by_convention(&dir, &robot_name)?;
            (urdf, Vec::new(), srdf, FoundBy::Convention)
        };
        let optional = |name: &str| {
            let p = dir.join("config").join(name);
            p.is_file().then_some(p)
        };
        Ok(Self {
            joint_limits: optional("joint_limits.yaml"),
            controllers: optional("moveit_controllers.yaml"),
            initial_positions: optional("initial_positions.yaml"),
            sensors_3d: optional("sensors_3d.yaml"),
            ompl_planning: optional("ompl_planning.yaml"),
            cartesian_limits: optional("pilz_cartesian_limits.yaml"),
            kinematics: optional("kinematics.yaml"),
            dir,
            robot_name,
            urdf,
            xacro_args,
            srdf,
            found_by,
        })
    }

    /// The URDF, its xacro arguments and the SRDF named by a `.setup_assistant` file.
    fn from_setup_assistant(
        dir: &Path,
        setup: &Path,
        roots: &[PathBuf],
    ) -> Result<(PathBuf, Vec<String>, PathBuf, FoundBy), MoveItConfigError> {
        let bad = |message: String| MoveItConfigError::SetupAssistant {
            path: setup.display().to_string(),
            message,
        };
        let text = std::fs::read_to_string(setup).map_err(|e| bad(e.to_string()))?;
        let doc: serde_yaml::Value =
            serde_yaml::from_str(&text).map_err(|e| bad(format!("invalid YAML: {e}")))?;
        let cfg = doc
            .get("moveit_setup_assistant_config")
            .ok_or_else(|| bad("no moveit_setup_assistant_config mapping".into()))?;
        let text_of =
            |section: &serde_yaml::Value, section_name: &str, key: &str| match section.get(key) {
                Some(serde_yaml::Value::String(s)) if !s.trim().is_empty() => {
                    Ok(Some(s.trim().to_string()))
                }
                None | Some(serde_yaml::Value::Null) => Ok(None),
                Some(serde_yaml::Value::String(_)) => Ok(None),
                Some(other) => Err(bad(format!(
                    "{section_name}.{key} must be a string, got {other:?}"
                ))),
            };
        let urdf_sec = entry(cfg, &["urdf", "URDF"])
            .ok_or_else(|| bad("no urdf entry under moveit_setup_assistant_config".into()))?;
        let pkg = text_of(urdf_sec, "urdf", "package")?
            .ok_or_else(|| bad("urdf.package is missing".into()))?;
        let rel = text_of(urdf_sec, "urdf", "relative_path")?
            .ok_or_else(|| bad("urdf.relative_path is missing".into()))?;
        let args_text = text_of(urdf_sec, "urdf", "xacro_args")?.unwrap_or_default();
        let mut xacro_args = Vec::new();
        for arg in args_text.split_whitespace() {
            match arg.split_once(":=") {
                Some((name, _)) if !name.is_empty() => xacro_args.push(arg.to_string()),
                _ => return Err(bad(format!("urdf.xacro_args: '{arg}' is not name:=value"))),
            }
        }
        let srdf_sec = entry(cfg, &["srdf", "SRDF"])
            .ok_or_else(|| bad("no srdf entry under moveit_setup_assistant_config".into()))?;
        let srdf_rel = text_of(srdf_sec, "srdf", "relative_path")?
            .ok_or_else(|| bad("srdf.relative_path is missing".into()))?;

        let mut tried = Vec::new();
        // The configuration package's own name is its folder here, whatever the roots hold.
        let own = package_xml_name(dir).as_deref() == Some(pkg.as_str());
        let pkg_dir = if own {
            Some(dir.to_path_buf())
        } else {
            find_package(&pkg, roots, dir.parent(), &mut tried)
        };
        let pkg_dir = pkg_dir.ok_or_else(|| {
            bad(format!(
                "urdf.package '{pkg}' not found (tried: {}; is its workspace sourced?)",
                list(&tried)
            ))
        })?;
        let urdf = pkg_dir.join(&rel);
        if !urdf.is_file() {
            return Err(bad(format!(
                "urdf.relative_path '{rel}': no file {}",
                urdf.display()
            )));
        }
        let srdf = dir.join(&srdf_rel);
        if !srdf.is_file() {
            return Err(bad(format!(
                "srdf.relative_path '{srdf_rel}': no file {}",
                srdf.display()
            )));
        }
        Ok((urdf, xacro_args, srdf, FoundBy::SetupAssistant))
    }

    /// The URDF and SRDF of a package without `.setup_assistant`.
    fn by_convention(dir: &Path, robot: &str) -> Result<(PathBuf, PathBuf), MoveItConfigError> {
        let config = dir.join("config");
        let mut files: Vec<String> = std::fs::read_dir(&config)
            .map(|rd| {
                rd.filter_map(|e| e.ok())
                    .filter(|e| e.path().is_file())
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default();
        files.sort();
        let pick = |what: &str, suffixes: &[&str]| -> Result<PathBuf, MoveItConfigError> {
            for s in suffixes {
                let p = config.join(format!("{robot}{s}"));
                if p.is_file() {
                    return Ok(p);
                }
            }
            let any: Vec<&String> = files
                .iter()
                .filter(|f| suffixes.iter().any(|s| f.ends_with(s)))
                .collect();
            match any.as_slice() {
                [one] => Ok(config.join(one)),
                [] => Err(MoveItConfigError::Missing {
                    package: dir.display().to_string(),
                    message: format!(
                        "no .setup_assistant and no {what} in {} (looked for {robot}{})",
                        config.display(),
                        suffixes.join(format!(", {robot}").as_str())
                    ),
                }),
                many => Err(MoveItConfigError::Missing {
                    package: dir.display().to_string(),
                    message: format!(
                        "no .setup_assistant, no {robot}{} and several {what} files in {}: {}",
                        suffixes[0],
                        config.display(),
                        many.iter()
                            .map(|s| s.as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                }),
            }
        };
        let urdf = pick("URDF", &[".urdf.xacro", ".urdf"])?;
        let srdf = pick("SRDF", &[".srdf", ".srdf.xacro"])?;
        Ok((urdf, srdf))
    }

    /// The files of the package's `config/` folder that nothing here reads (e.g.
    /// `ros2_controllers.yaml`, `moveit.rviz`), by name, sorted.
    pub fn unread_files(&self) -> Vec<String> {
        let used: Vec<&Path> = [
            Some(self.urdf.as_path()),
            Some(self.srdf.as_path()),
            self.joint_limits.as_deref(),
            self.controllers.as_deref(),
            self.initial_positions.as_deref(),
            self.sensors_3d.as_deref(),
            self.ompl_planning.as_deref(),
            self.cartesian_limits.as_deref(),
            self.kinematics.as_deref(),
        ]
        .into_iter()
        .flatten()
        .collect();
        let mut names: Vec<String> = std::fs::read_dir(self.dir.join("config"))
            .map(|rd| {
                rd.filter_map(|e| e.ok())
                    .map(|e| e.path())
                    .filter(|p| p.is_file() && !used.contains(&p.as_path()))
                    .filter_map(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
                    .collect()
            })
            .unwrap_or_default();
        names.sort();
        names
    }

    /// One line saying which files of the package are used, and which of `config/` are not.
    pub fn summary(&self) -> String {
        let or_none = |p: &Option<PathBuf>| {
            p.as_ref()
                .map_or_else(|| "none".to_string(), |p| p.display().to_string())
        };
        let args = if self.xacro_args.is_empty() {
            String::new()
        } else {
            format!(" ({})", self.xacro_args.join(" "))
        };
        let unread = self.unread_files();
        format!(
            "MoveIt config {}: URDF {}{args}, SRDF {}, joint limits {}, controllers {}, OMPL \
             planning {}, Cartesian limits {}, kinematics {}{}",
            self.dir.display(),
            self.urdf.display(),
            self.srdf.display(),
            or_none(&self.joint_limits),
            or_none(&self.controllers),
            or_none(&self.ompl_planning),
            or_none(&self.cartesian_limits),
            or_none(&self.kinematics),
            if unread.is_empty() {
                String::new()
            } else {
                format!("; not read: {}", unread.join(", "))
            }
        )
    }

    /// An error about one of the package's files.
    fn file_error(&self, path: &Path, message: String) -> MoveItConfigError {
        MoveItConfigError::Missing {
            package: self.dir.display().to_string(),
            message: format!("{}: {message}", path.display()),
        }
    }

    /// One of the package's YAML files, parsed.
    fn read_yaml(&self, path: &Path) -> Result<serde_yaml::Value, MoveItConfigError> {
        let text =
            std::fs::read_to_string(path).map_err(|e| self.file_error(path, e.to_string()))?;
        serde_yaml::from_str(&text).map_err(|e| self.file_error(path, format!("invalid YAML: {e}")))
    }

    /// The joint positions of `config/initial_positions.yaml` (its `initial_positions`
    /// mapping of joint names to numbers; none without the file). Errors name the file and
    /// joint.
    pub fn initial_positions(&self) -> Result<Vec<(String, f64)>, MoveItConfigError> {
        let Some(path) = &self.initial_positions else {
            return Ok(Vec::new());
        };
        let bad = |message: String| self.file_error(path, message);
        let doc = self.read_yaml(path)?;
        let Some(map) = doc.get("initial_positions") else {
            return Ok(Vec::new());
        };
        let map = map
            .as_mapping()
            .ok_or_else(|| bad("initial_positions must map joint names to numbers".into()))?;
        let mut out = Vec::new();
        for (k, v) in map {
            let name = k
                .as_str()
                .ok_or_else(|| bad(format!("initial_positions: key {k:?} is not a joint name")))?;
            let x = v
                .as_f64()
                .filter(|x| x.is_finite())
                .ok_or_else(|| bad(format!("initial_positions.{name}: {v:?} is not a number")))?;
            out.push((name.to_string(), x));
        }
        Ok(out)
    }

    /// The `point_cloud_topic` of every point cloud sensor of `config/sensors_3d.yaml`
    /// (`sensor_plugin` `occupancy_map_monitor/PointCloudOctomapUpdater`), in the file's
    /// order; `sensors` lists them by name (each a top-level mapping) or as mappings. None
    /// without the file; depth image sensors are left out. Errors name the file and key.
    pub fn point_cloud_topics(&self) -> Result<Vec<String>, MoveItConfigError> {
        let Some(path) = &self.sensors_3d else {
            return Ok(Vec::new());
        };
        let bad = |message: String| self.file_error(path, message);
        let doc = self.read_yaml(path)?;
        let Some(sensors) = doc.get("sensors") else {
            return Ok(Vec::new());
        };
        let sensors = sensors
            .as_sequence()
            .ok_or_else(|| bad("sensors must be a list".into()))?;
        let mut topics = Vec::new();
        for entry in sensors {
            let (name, sensor) = match entry {
                serde_yaml::Value::String(name) => (
                    name.clone(),
                    doc.get(name.as_str()).ok_or_else(|| {
                        bad(format!("sensors names '{name}', which has no entry"))
                    })?,
                ),
                serde_yaml::Value::Mapping(_) => ("sensors[]".to_string(), entry),
                other => {
                    return Err(bad(format!(
                        "sensors: {other:?} is neither a name nor a mapping"
                    )))
                }
            };
            let plugin = sensor
                .get("sensor_plugin")
                .and_then(|p| p.as_str())
                .unwrap_or("");
            if !plugin.ends_with("PointCloudOctomapUpdater") {
                continue;
            }
            let topic = sensor
                .get("point_cloud_topic")
                .and_then(|t| t.as_str())
                .filter(|t| !t.trim().is_empty())
                .ok_or_else(|| bad(format!("{name}.point_cloud_topic is missing")))?;
            topics.push(topic.trim().to_string());
        }
        Ok(topics)
    }

    /// The URDF's text, expanded by xacro where it is a xacro file.
    pub fn urdf_text(&self) -> Result<String, MoveItConfigError> {
        read_description(&self.urdf, &self.xacro_args)
    }

    /// The SRDF's text, expanded by xacro where it is a xacro file.
    pub fn srdf_text(&self) -> Result<String, MoveItConfigError> {
        read_description(&self.srdf, &[])
    }

    /// Folders to search for `package://` resources of the URDF in a source workspace: the
    /// folder holding the configuration package, and the one holding the URDF's package.
    pub fn search_paths(&self) -> Vec<PathBuf> {
        let mut paths: Vec<PathBuf> = Vec::new();
        for p in [self.dir.parent(), self.urdf.parent().and_then(Path::parent)]
            .into_iter()
            .flatten()
        {
            if !p.as_os_str().is_empty() && !paths.iter().any(|q| q == p) {
                paths.push(p.to_path_buf());
            }
        }
        paths
    }

    /// Loads the robot: the URDF with the SRDF and, where the package has them, its joint
    /// limits file and `ompl_planning.yaml`. `opts.search_paths` gains
    /// [`Self::search_paths`].
    pub fn load_robot(&self, opts: &LoadOptions) -> Result<RobotModel, MoveItConfigError> {
        let urdf = self.urdf_text()?;
        let srdf = self.srdf_text()?;
        let mut robot =
            self.robot_from_text(&urdf, Some((&srdf, &self.srdf.display().to_string())), opts)?;
        if let Some(path) = &self.joint_limits {
            let file = JointLimitsFile::read(path)?;
            robot.apply_joint_limits(&file, &path.display().to_string())?;
        }
        self.apply_planning_files(&mut robot)?;
        Ok(robot)
    }

    /// Gives `robot` the package's `ompl_planning.yaml`, `pilz_cartesian_limits.yaml` and
    /// `kinematics.yaml` (none where the package has none). Errors name the file and key.
    pub fn apply_planning_files(&self, robot: &mut RobotModel) -> Result<(), MoveItConfigError> {
        robot.ompl = self.ompl_planning()?;
        robot.cartesian_limits = self.cartesian_limits()?;
        robot.kinematics = self.kinematics()?;
        Ok(())
    }

    /// The package's `config/kinematics.yaml`, read; none without one. Errors name the file
    /// and key.
    pub fn kinematics(&self) -> Result<Option<KinematicsConfig>, MoveItConfigError> {
        Ok(self
            .kinematics
            .as_deref()
            .map(KinematicsConfig::read)
            .transpose()?)
    }

    /// The package's `config/pilz_cartesian_limits.yaml`, read; none without one. Errors
    /// name the file and key.
    pub fn cartesian_limits(&self) -> Result<Option<CartesianLimits>, MoveItConfigError> {
        Ok(self
            .cartesian_limits
            .as_deref()
            .map(CartesianLimits::read)
            .transpose()?)
    }

    /// The package's `config/ompl_planning.yaml`, read; empty without one. Errors name the
    /// file and key.
    pub fn ompl_planning(&self) -> Result<OmplPlanning, MoveItConfigError> {
        match &self.ompl_planning {
            Some(path) => Ok(OmplPlanning::read(path)?),
            None => Ok(OmplPlanning::default()),
        }
    }

    /// The robot of URDF text that came from this package (its resources resolve next to
    /// [`Self::urdf`] and in [`Self::search_paths`]) with an SRDF as `(text, name)`; no joint
    /// limits file is applied.
    pub fn robot_from_text(
        &self,
        urdf: &str,
        srdf: Option<(&str, &str)>,
        opts: &LoadOptions,
    ) -> Result<RobotModel, MoveItConfigError> {
        let mut opts = opts.clone();
        opts.search_paths.extend(self.search_paths());
        Ok(RobotModel::from_urdf_str_named(
            urdf,
            &self.urdf.display().to_string(),
            self.urdf.parent(),
            srdf,
            &opts,
        )?)
    }
}

/// Whether `path` is a xacro file (its name ends in `.xacro`).
pub fn is_xacro(path: &Path) -> bool {
    path.file_name()
        .map(|n| n.to_string_lossy().ends_with(".xacro"))
        .unwrap_or(false)
}

/// A description file's text: run through xacro (with `args`, each `name:=value`) where it is
/// a xacro file, else read as it is.
pub fn read_description(path: &Path, args: &[String]) -> Result<String, MoveItConfigError> {
    if is_xacro(path) {
        expand_xacro(path, args)
    } else {
        Ok(super::read_text(path)?)
    }
}

/// Runs the xacro program (`GMP_XACRO`, else `xacro` on `PATH`) on `path` with `args` and
/// returns what it printed.
pub fn expand_xacro(path: &Path, args: &[String]) -> Result<String, MoveItConfigError> {
    let program = std::env::var_os(XACRO_ENV)
        .filter(|p| !p.is_empty())
        .unwrap_or_else(|| "xacro".into());
    expand_xacro_with(Path::new(&program), path, args)
}

/// [`expand_xacro`] with the xacro program given.
pub fn expand_xacro_with(
    program: &Path,
    path: &Path,
    args: &[String],
) -> Result<String, MoveItConfigError> {
    let program = program.as_os_str();
    let err = |message: String| MoveItConfigError::Xacro {
        path: path.display().to_string(),
        message,
    };
    let out = Command::new(program)
        .arg(path)
        .args(args)
        .output()
        .map_err(|e| {
            err(format!(
                "cannot run '{}' ({e}); install xacro (ros-<distro>-xacro, or pip install \
                 xacro) or give the expanded URDF instead",
                program.to_string_lossy()
            ))
        })?;
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        let tail: Vec<&str> = stderr.lines().rev().take(6).collect();
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        return Err(err(format!(
            "'{}' failed ({}): {}",
            program.to_string_lossy(),
            out.status,
            tail.join(" | ")
        )));
    }
    let text = String::from_utf8(out.stdout).map_err(|_| err("output is not UTF-8".into()))?;
    if text.trim().is_empty() {
        return Err(err("printed nothing".into()));
    }
    Ok(text)
}
