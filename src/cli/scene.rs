//! `gmp scene`: reads a scene file in any of the formats [`crate::scene::load_scene`] knows,
//! prints what it holds, and writes it in the project's format or as MoveIt's `.scene` text
//! (converting between them).

use std::path::PathBuf;

use clap::Args;
use serde_json::{json, Value};

use super::CliError;
use crate::robot::decompose::Decomposition;
use crate::scene::{is_moveit_text, Scene, SceneOptions, Shape};

/// `gmp scene` arguments.
#[derive(Args, Debug)]
pub struct SceneArgs {
    /// The scene file: the project's format, a MoveIt PlanningScene YAML or MoveIt `.scene`
    /// text.
    #[arg(long)]
    pub scene: PathBuf,
    /// Where to write it: MoveIt `.scene` text for a name ending in `.scene` (obstacles
    /// only), else the project's format. Written whole or not at all.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// The meshes of a MoveIt scene: 1 keeps each its convex hull; 2 to 256 splits each into
    /// at most that many convex parts covering its triangles (obstacles `id`, `id/1`, ...),
    /// written out as `convex` obstacles. The project's format says it per mesh.
    #[arg(long, default_value_t = 1)]
    pub mesh_convex_parts: u32,
    /// Voxels along a split mesh's longest side (8 to 256).
    #[arg(long, default_value_t = 64)]
    pub mesh_resolution: u32,
}

/// A shape's kind as printed.
fn kind(shape: &Shape) -> &'static str {
    match shape {
        Shape::Box { .. } => "box",
        Shape::Sphere { .. } => "sphere",
        Shape::Cylinder { .. } => "cylinder",
        Shape::ConvexMesh { .. } => "convex",
    }
}

/// Runs `gmp scene`: a summary of the scene (frame, obstacles, carried objects) and, with
/// `--out`, what was written.
pub fn run(a: &SceneArgs) -> Result<Value, CliError> {
    let mesh_parts = Decomposition {
        max_parts: a.mesh_convex_parts,
        resolution: a.mesh_resolution,
    };
    mesh_parts
        .validate()
        .map_err(|e| CliError(format!("--mesh-convex-parts / --mesh-resolution: {e}")))?;
    let scene = Scene::from_file_with(&a.scene, &SceneOptions { mesh_parts })?;
    let obstacles: Vec<Value> = scene
        .iter()
        .map(|o| {
            let t = o.pose.translation.vector;
            json!({"id": o.id, "shape": kind(&o.shape), "position": [t.x, t.y, t.z]})
        })
        .collect();
    let attached: Vec<Value> = scene
        .attached()
        .iter()
        .map(|o| json!({"id": o.id, "link": o.link, "shape": kind(&o.shape)}))
        .collect();
    let allowed: Vec<Value> = scene
        .allowed_collisions()
        .iter()
        .map(|e| json!({"a": e.a, "b": e.b, "allowed": e.allowed}))
        .collect();
    let matrix: Vec<Value> = scene
        .matrix_collisions()
        .iter()
        .map(|e| json!({"a": e.a, "b": e.b, "allowed": e.allowed}))
        .collect();
    let mut out = json!({
        "scene": a.scene.display().to_string(),
        "frame": scene.frame(),
        "obstacles": obstacles,
        "attached": attached,
        "allowed_collisions": allowed,
        "allowed_collision_matrix": matrix,
    });
    if let Some(path) = &a.out {
        let format = if is_moveit_text(path) {
            if !scene.attached().is_empty() {
                eprintln!(
                    "gmp scene: {} carried object(s) left out of {} (MoveIt's .scene text has \
                     none)",
                    scene.attached().len(),
                    path.display()
                );
            }
            if !scene.allowed_collisions().is_empty() {
                eprintln!(
                    "gmp scene: {} allowed-collision entr(ies) left out of {} (MoveIt's .scene \
                     text has none)",
                    scene.allowed_collisions().len(),
                    path.display()
                );
            }
            "moveit_scene_text"
        } else {
            "gmp_yaml"
        };
        if !matrix.is_empty() {
            eprintln!(
                "gmp scene: the {} allowed pair(s) of the allowed_collision_matrix left out of {} \
                 (they may name links of another robot; give the ones you want as \
                 allowed_collisions)",
                matrix.len(),
                path.display()
            );
        }
        crate::report::write_atomically(path, scene.to_text_for(path).as_bytes())
            .map_err(|e| CliError(format!("cannot write {}: {e}", path.display())))?;
        out["written"] = json!({"path": path.display().to_string(), "format": format});
    }
    Ok(out)
}
