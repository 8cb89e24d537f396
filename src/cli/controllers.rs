//! `gmp controllers`: reads a MoveIt `moveit_controllers.yaml` as the node's
//! `controllers_file` does and says what `~/execute` would do with it: every controller,
//! and with a robot, the joints it names that the robot lacks and which controllers would
//! run a trajectory of each planning group (what a set-up mistake looks like before the
//! node runs).

use std::path::PathBuf;

use clap::Args;
use serde_json::{json, Value};

use super::CliError;
use super::RobotArgs;
use crate::controllers::{ControllerKind, ControllerSet};
use crate::robot::moveit_config::MoveItConfig;

/// `gmp controllers` arguments.
#[derive(Args, Debug)]
pub struct ControllersArgs {
    /// The controllers file (MoveIt's `moveit_controllers.yaml`; default: the one of
    /// `--moveit-config`).
    #[arg(long, required_unless_present = "moveit_config")]
    pub file: Option<PathBuf>,
    /// The robot's URDF: checks the joints and, per planning group, the controllers chosen.
    #[arg(long)]
    pub urdf: Option<PathBuf>,
    /// The robot's SRDF (its planning groups; without it, the default group only).
    #[arg(long, requires = "urdf")]
    pub srdf: Option<PathBuf>,
    /// A MoveIt configuration package (folder or package name): its
    /// `config/moveit_controllers.yaml` and robot (URDF, SRDF), unless `--file` / `--urdf`
    /// give others.
    #[arg(long = "moveit-config")]
    pub moveit_config: Option<String>,
}

/// Runs `gmp controllers`: the controllers, and with `--urdf` the unknown joints and each
/// group's controllers (or why none can run it).
pub fn run(a: &ControllersArgs) -> Result<Value, CliError> {
    let cfg = a
        .moveit_config
        .as_deref()
        .map(MoveItConfig::locate)
        .transpose()?;
    let file = match (&a.file, &cfg) {
        (Some(f), _) => f.clone(),
        (None, Some(c)) => c.controllers.clone().ok_or_else(|| {
            CliError(format!(
                "MoveIt config {} has no config/moveit_controllers.yaml; give --file",
                c.dir.display()
            ))
        })?,
        (None, None) => return Err(CliError("--file or --moveit-config is needed".into())),
    };
    let set = ControllerSet::load(&file).map_err(|e| CliError(e.to_string()))?;
    let controllers: Vec<Value> = set
        .controllers()
        .iter()
        .map(|c| {
            let mut v = json!({
                "name": c.name,
                "type": c.kind.name(),
                "action": c.action,
                "action_ns": c.action.strip_prefix(&format!("{}/", c.name)).unwrap_or(&c.action),
                "joints": c.joints,
                "default": c.default,
            });
            if c.kind == ControllerKind::FollowJointTrajectory {
                v["topic"] = json!(c.topic);
            }
            if let Some(g) = &c.gripper {
                v["gripper"] = json!({
                    "command_joint": g.command_joint,
                    "parallel": g.parallel,
                    "max_effort": g.max_effort,
                    "allow_stalling": g.allow_stalling,
                });
            }
            v
        })
        .collect();
    let mut out = json!({
        "file": file.display().to_string(),
        "controllers": controllers,
    });
    if let Some(c) = &cfg {
        out["moveit_config"] = super::moveit_config_json(c)?;
    }
    if a.urdf.is_none() && cfg.is_none() {
        return Ok(out);
    }
    // As every command loads a robot (the package's files where --urdf / --srdf give none).
    let robot = super::load_robot(
        &RobotArgs::description(a.urdf.clone(), a.moveit_config.clone(), a.srdf.clone()),
        true,
    )?;
    out["unknown_joints"] = json!(set.unknown_joints(|j| robot.tree.joint(j).is_ok()));
    // Where mock controllers of these controllers start: the MoveIt config's
    // initial_positions.yaml, else 0 brought within the joint's limits.
    let given = match &cfg {
        Some(c) => c.initial_positions()?,
        None => Vec::new(),
    };
    for (i, c) in set.controllers().iter().enumerate() {
        let at: Vec<Value> = c
            .joints
            .iter()
            .map(|j| {
                let from_file = given.iter().find(|(n, _)| n == j).map(|(_, x)| *x);
                let limits = robot
                    .tree
                    .joint(j)
                    .ok()
                    .map(|k| &robot.tree.joints[k].limits);
                let x = from_file.unwrap_or_else(|| match limits {
                    Some(l) if l.lower.is_finite() && l.upper.is_finite() => {
                        0.0_f64.clamp(l.lower, l.upper)
                    }
                    _ => 0.0,
                });
                json!(x)
            })
            .collect();
        out["controllers"][i]["initial_positions"] = json!(at);
    }
    let names: Vec<String> = match &robot.srdf {
        Some(srdf) if !srdf.groups.is_empty() => {
            srdf.groups.iter().map(|g| g.name.clone()).collect()
        }
        _ => vec![robot.default_group().name],
    };
    let groups: Vec<Value> = names
        .iter()
        .map(|name| {
            let group = if robot.srdf.is_some() {
                robot.group(name)
            } else {
                Ok(robot.default_group())
            };
            let g = match group {
                Ok(g) => g,
                Err(e) => return json!({"group": name, "error": e.to_string()}),
            };
            let mut v = json!({"group": g.name, "joints": g.space.names});
            match set.select(&g.space.names) {
                Ok(chosen) => {
                    let names: Vec<&str> = chosen
                        .iter()
                        .map(|&i| set.controllers()[i].name.as_str())
                        .collect();
                    v["controllers"] = json!(names);
                }
                Err(e) => v["error"] = json!(e),
            }
            v
        })
        .collect();
    out["groups"] = json!(groups);
    Ok(out)
}
