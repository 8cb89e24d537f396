//! The flat records the kernels read (`GmpFrame`, `GmpBody`, `GmpObstacle` in
//! `kernels/common.cuh`), written from the CPU model as 32-bit words, plus the kernel argument
//! block that carries the device pointers.

use crate::collision::detmath::{Xf, V3};
use crate::collision::model::{obstacle_kind, CollisionModel, ObstacleModel, SceneModel};

/// Words per `GmpFrame` record.
pub const FRAME_WORDS: usize = 20;
/// Words per `GmpBody` record.
pub const BODY_WORDS: usize = 11;
/// Words per `GmpObstacle` record (22 and two of padding: the kernels' record is 16-byte
/// aligned, so that its fields load 16 bytes at a time).
pub const OBSTACLE_WORDS: usize = 24;

fn push_f(out: &mut Vec<u32>, v: &[f32]) {
    out.extend(v.iter().map(|x| x.to_bits()));
}

fn push_xf(out: &mut Vec<u32>, x: &Xf) {
    push_f(out, &x.r);
    push_f(out, &x.t);
}

fn push_v3s(out: &mut Vec<u32>, v: &[V3]) {
    for p in v {
        push_f(out, p);
    }
}

/// Host-side words of every robot array, in the kernels' layouts.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RobotWords {
    /// `GmpFrame` records.
    pub frames: Vec<u32>,
    /// `GmpBody` records.
    pub bodies: Vec<u32>,
    /// Vertices, 3 floats each.
    pub verts: Vec<u32>,
    /// CRS row pointers.
    pub edge_offsets: Vec<u32>,
    /// CRS targets.
    pub edge_targets: Vec<u32>,
    /// Spheres, 4 floats each.
    pub spheres: Vec<u32>,
    /// Self pairs, 2 indices each.
    pub self_pairs: Vec<u32>,
    /// Base state, one float per variable.
    pub base_state: Vec<u32>,
    /// Per variable: its index in the planning group, or -1.
    pub var_group: Vec<u32>,
    /// Body reach per moving frame (bodies x frames floats).
    pub reach: Vec<u32>,
}

impl RobotWords {
    /// Flattens a collision model.
    pub fn build(m: &CollisionModel) -> Self {
        let mut w = RobotWords::default();
        for f in &m.frames {
            w.frames.push(f.parent as u32);
            w.frames.push(f.kind);
            w.frames.push(f.var);
            push_f(&mut w.frames, &[f.mult, f.offset]);
            push_f(&mut w.frames, &f.axis);
            push_xf(&mut w.frames, &f.origin);
        }
        for b in &m.bodies {
            w.bodies.extend_from_slice(&[
                b.frame as u32,
                b.link,
                b.vert_start,
                b.vert_count,
                b.sphere_start,
                b.sphere_count,
            ]);
            push_f(&mut w.bodies, &b.center);
            push_f(&mut w.bodies, &[b.radius, b.inflate]);
        }
        push_v3s(&mut w.verts, &m.verts);
        w.edge_offsets = m.edge_offsets.clone();
        w.edge_targets = m.edge_targets.clone();
        for s in &m.spheres {
            push_f(&mut w.spheres, s);
        }
        for p in &m.self_pairs {
            w.self_pairs.extend_from_slice(p);
        }
        push_f(&mut w.base_state, &m.base_state);
        w.var_group = var_group(m);
        push_f(&mut w.reach, &m.reach);
        w
    }
}

/// Per full-state variable, the planning-group index that supplies it (the last one when a
/// variable is listed twice, as `CpuChecker::fill_state` writes them in order), or -1.
pub fn var_group(m: &CollisionModel) -> Vec<u32> {
    let mut v = vec![-1i32; m.num_vars];
    for (k, &var) in m.group_vars.iter().enumerate() {
        if let Some(slot) = v.get_mut(var as usize) {
            *slot = k as i32;
        }
    }
    v.into_iter().map(|x| x as u32).collect()
}

/// One `GmpObstacle` record.
pub fn obstacle_words(o: &ObstacleModel, out: &mut Vec<u32>) {
    out.push(o.kind);
    push_xf(out, &o.pose);
    push_f(out, &o.params);
    push_f(out, &o.center);
    push_f(out, &[o.radius]);
    out.push(o.mesh_start);
    out.push(o.mesh_count);
    out.extend([0, 0]);
}

/// The order the kernels visit the obstacle slots in: nearest first by the surface of each
/// slot's bounding sphere to the origin of the robot's frame (the root link, around which
/// the arm moves), empty slots last, ties in slot order. A configuration's verdict is "any
/// test fires", whatever the order, so the order changes only how soon a configuration in
/// collision stops: obstacles near the robot's base are the likelier to be hit. Measured on
/// the H100 (MBM Panda sphere model, results/collision/obstacle_order_2026-11-26/).
pub fn obstacle_order(s: &SceneModel) -> Vec<u32> {
    let key = |o: &ObstacleModel| -> f32 {
        if o.kind == obstacle_kind::NONE {
            return f32::INFINITY;
        }
        let c = o.center;
        let d = (c[0] * c[0] + c[1] * c[1] + c[2] * c[2]).sqrt() - o.radius;
        if d.is_nan() {
            f32::INFINITY
        } else {
            d
        }
    };
    let keys: Vec<f32> = s.obstacles.iter().map(key).collect();
    let mut order: Vec<u32> = (0..s.obstacles.len() as u32).collect();
    order.sort_by(|&a, &b| keys[a as usize].total_cmp(&keys[b as usize]));
    order
}

/// Host-side words of the scene arrays.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SceneWords {
    /// `GmpObstacle` records in [`Self::order`].
    pub obstacles: Vec<u32>,
    /// The slot of each record of [`Self::obstacles`] ([`obstacle_order`]).
    pub order: Vec<u32>,
    /// Mesh vertex pool, 3 floats each.
    pub mesh_verts: Vec<u32>,
    /// Mesh CRS row pointers.
    pub mesh_edge_offsets: Vec<u32>,
    /// Mesh CRS targets.
    pub mesh_edge_targets: Vec<u32>,
}

impl SceneWords {
    /// Flattens a scene model, the obstacle records in slot order.
    pub fn build(s: &SceneModel) -> Self {
        Self::build_in(s, (0..s.obstacles.len() as u32).collect())
    }

    /// Flattens a scene model, the obstacle records in [`obstacle_order`].
    pub fn build_ordered(s: &SceneModel) -> Self {
        Self::build_in(s, obstacle_order(s))
    }

    /// Flattens a scene model, the obstacle records in `order` (a permutation of the slots).
    fn build_in(s: &SceneModel, order: Vec<u32>) -> Self {
        let mut w = SceneWords {
            order,
            ..SceneWords::default()
        };
        for &slot in &w.order {
            let o = s
                .obstacles
                .get(slot as usize)
                .unwrap_or(&ObstacleModel::EMPTY);
            obstacle_words(o, &mut w.obstacles);
        }
        w.mesh_verts = Self::mesh_vert_words(s);
        w.mesh_edge_offsets = s.mesh_edge_offsets.clone();
        w.mesh_edge_targets = s.mesh_edge_targets.clone();
        w
    }

    /// The mesh vertex pool as words.
    pub fn mesh_vert_words(s: &SceneModel) -> Vec<u32> {
        let mut v = Vec::with_capacity(s.mesh_verts.len() * 3);
        push_v3s(&mut v, &s.mesh_verts);
        v
    }
}

/// The kernel argument block (`GmpModel` in `kernels/common.cuh`): device pointers and counts.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ModelArgs {
    /// `GmpFrame*`.
    pub frames: u64,
    /// `GmpBody*`.
    pub bodies: u64,
    /// `float*` vertices.
    pub verts: u64,
    /// CRS row pointers.
    pub edge_offsets: u64,
    /// CRS targets.
    pub edge_targets: u64,
    /// `float*` spheres.
    pub spheres: u64,
    /// Self pairs.
    pub self_pairs: u64,
    /// Base state.
    pub base_state: u64,
    /// Variable -> group index.
    pub var_group: u64,
    /// `GmpObstacle*`.
    pub obstacles: u64,
    /// Mesh vertex pool.
    pub mesh_verts: u64,
    /// Mesh CRS row pointers.
    pub mesh_edge_offsets: u64,
    /// Mesh CRS targets.
    pub mesh_edge_targets: u64,
    /// `float*` body reach (bodies x frames).
    pub reach: u64,
    /// Moving frames.
    pub num_frames: u32,
    /// Bodies.
    pub num_bodies: u32,
    /// Self pairs.
    pub num_self_pairs: u32,
    /// Obstacle slots.
    pub num_obstacles: u32,
    /// Planning-group joints.
    pub dof: u32,
    /// Safety margin.
    pub margin: f32,
    /// `unsigned*` proximity grid cells ([`crate::collision::prox::ProxGrid`]; 0: none).
    pub prox: u64,
    /// [`ProxGrid::lo`](crate::collision::prox::ProxGrid::lo).
    pub prox_lo: [f32; 3],
    /// [`ProxGrid::inv_h`](crate::collision::prox::ProxGrid::inv_h).
    pub prox_inv_h: f32,
    /// [`ProxGrid::dim`](crate::collision::prox::ProxGrid::dim).
    pub prox_dim: [u32; 3],
    /// [`ProxGrid::always`](crate::collision::prox::ProxGrid::always).
    pub prox_always: u32,
}

// SAFETY: plain #[repr(C)] data of u64/u32/f32 fields, laid out exactly as `GmpModel`.
unsafe impl cudarc::driver::DeviceRepr for ModelArgs {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn record_sizes_match_the_kernel_structs() {
        let o = ObstacleModel::EMPTY;
        let mut w = Vec::new();
        obstacle_words(&o, &mut w);
        assert_eq!(w.len(), OBSTACLE_WORDS);
        // 14 pointers + 6 four-byte fields, the grid's pointer + 8 four-byte fields.
        assert_eq!(std::mem::size_of::<ModelArgs>(), 14 * 8 + 6 * 4 + 8 + 8 * 4);
    }

    fn ball(center: V3, radius: f32) -> ObstacleModel {
        ObstacleModel {
            kind: obstacle_kind::SPHERE,
            center,
            radius,
            ..ObstacleModel::EMPTY
        }
    }

    #[test]
    fn obstacles_go_nearest_first_and_empty_slots_last() {
        let scene = SceneModel {
            obstacles: vec![
                ball([2.0, 0.0, 0.0], 0.5),  // surface 1.5 from the origin
                ObstacleModel::EMPTY,        // a removed obstacle's slot
                ball([0.0, 0.6, 0.0], 0.1),  // 0.5
                ball([0.0, 0.0, -3.0], 2.0), // 1.0
                ball([0.0, 0.0, 0.5], 0.0),  // 0.5, after slot 2 (ties in slot order)
            ],
            ..SceneModel::default()
        };
        assert_eq!(obstacle_order(&scene), vec![2, 4, 3, 0, 1]);
        let ordered = SceneWords::build_ordered(&scene);
        assert_eq!(ordered.order, vec![2, 4, 3, 0, 1]);
        // Record i is slot order[i]'s.
        for (i, &slot) in ordered.order.iter().enumerate() {
            let mut want = Vec::new();
            obstacle_words(&scene.obstacles[slot as usize], &mut want);
            assert_eq!(
                ordered.obstacles[i * OBSTACLE_WORDS..(i + 1) * OBSTACLE_WORDS],
                want[..],
                "record {i}"
            );
        }
        // In slot order (the shared launches' layout) nothing moves.
        let plain = SceneWords::build(&scene);
        assert_eq!(plain.order, vec![0, 1, 2, 3, 4]);
        let mut want = Vec::new();
        for o in &scene.obstacles {
            obstacle_words(o, &mut want);
        }
        assert_eq!(plain.obstacles, want);
    }
}
