//! Obstacle markers ([`PlanningService::apply_marker`], the node's `~/obstacles`): marker
//! geometry as obstacle shapes, and mesh markers split into convex parts.
//!
//! A `MESH_RESOURCE` or `TRIANGLE_LIST` marker is one convex obstacle, the hull of its
//! points, unless [`ServiceSettings::mesh_parts`](super::ServiceSettings::mesh_parts) allows
//! more than one part: then its triangles are split by [`convex_parts`] and the marker
//! `ns/id` becomes the obstacles `ns/id`, `ns/id/1`, ... ([`part_id`]), so that a bin or a
//! shelf keeps its hollows. The parts of a mesh are kept for the next markers with the same
//! mesh (a marker republished or moved is not split again). A mesh that cannot be split (no
//! triangles read, a `TRIANGLE_LIST` whose point count is not a multiple of 3, a failed
//! split) stays its hull, which covers more, never less, and the caller gets a note saying
//! so.

use std::collections::HashMap;

use nalgebra::{Point3, Vector3};

use super::{finite_size, MarkerAction, MarkerKind, MarkerUpdate, PlanningService, ServiceError};
use crate::robot::decompose::{convex_parts, Decomposition};
use crate::robot::geometry::{GeometryError, Polytope};
use crate::scene::{part_id, with_parts, Obstacle, SceneError, Shape};

/// Meshes whose parts are kept; the one used longest ago goes first.
const KEPT_MESHES: usize = 8;

/// One split mesh: its input and its parts.
struct SplitMesh {
    how: Decomposition,
    points: Vec<Point3<f64>>,
    triangles: Vec<[u32; 3]>,
    parts: Vec<Polytope>,
}

/// What the service keeps about marker obstacles split into parts.
#[derive(Default)]
pub(super) struct MarkerParts {
    /// Of every marker obstacle split into parts: how many parts beyond the first (which
    /// has the marker's own id).
    extra: HashMap<String, usize>,
    /// The service's own splits ([`PlanningService::apply_marker`]).
    splitter: MeshSplitter,
}

impl MarkerParts {
    /// Forgets which obstacles are marker parts (the scene was cleared or replaced).
    pub(super) fn forget(&mut self) {
        self.extra.clear();
    }

    /// How many convex parts beyond the first the obstacle `id` was split into by a marker.
    pub(super) fn extra_parts(&self, id: &str) -> usize {
        self.extra.get(id).copied().unwrap_or(0)
    }
}

/// Splits the meshes of mesh markers into convex parts and keeps the parts of the last 8
/// meshes, so that a marker republished or moved with the same mesh is not split again.
///
/// The split of a large mesh takes a while (about a second for 40,000 triangles). A caller
/// that shares the [`PlanningService`] splits with a splitter of its own first
/// ([`MeshSplitter::prepare`], without holding the service) and then applies the result
/// ([`PlanningService::apply_prepared`]), so that the service is held only to change the
/// scene.
#[derive(Default)]
pub struct MeshSplitter {
    /// The latest split meshes, the one used last at the end.
    kept: Vec<SplitMesh>,
    /// How many meshes have been split.
    splits: u64,
}

impl MeshSplitter {
    /// How many meshes this splitter has split (a mesh whose parts were kept is not split
    /// again).
    pub fn splits(&self) -> u64 {
        self.splits
    }

    /// Prepares a marker for [`PlanningService::apply_prepared`]: where it adds or changes a
    /// mesh marker and `how` allows more than one part (`how` being the service's
    /// [`ServiceSettings::mesh_parts`](super::ServiceSettings::mesh_parts)), its mesh is split
    /// now. Nothing else is done: the marker is checked when it is applied.
    pub fn prepare(&mut self, update: MarkerUpdate, how: &Decomposition) -> PreparedMarker {
        let adds = matches!(update.action, MarkerAction::Add | MarkerAction::Modify);
        let split = if adds && how.max_parts > 1 {
            surface(&update.kind).map(|s| {
                s.and_then(|(points, triangles)| {
                    self.split(points, &triangles, how)
                        .map_err(|e| e.to_string())
                })
            })
        } else {
            None
        };
        PreparedMarker {
            update,
            how: *how,
            split,
        }
    }

    /// The parts of a mesh: kept ones, or newly split.
    fn split(
        &mut self,
        points: &[Point3<f64>],
        triangles: &[[u32; 3]],
        how: &Decomposition,
    ) -> Result<Vec<Polytope>, GeometryError> {
        if let Some(k) = self
            .kept
            .iter()
            .position(|m| m.how == *how && m.points == points && m.triangles == triangles)
        {
            let mesh = self.kept.remove(k);
            let parts = mesh.parts.clone();
            self.kept.push(mesh);
            return Ok(parts);
        }
        let parts = convex_parts(points, triangles, how)?;
        self.splits += 1;
        if self.kept.len() >= KEPT_MESHES {
            self.kept.remove(0);
        }
        self.kept.push(SplitMesh {
            how: *how,
            points: points.to_vec(),
            triangles: triangles.to_vec(),
            parts: parts.clone(),
        });
        Ok(parts)
    }
}

/// A marker whose mesh, where it is to be split, has been split
/// ([`MeshSplitter::prepare`]).
pub struct PreparedMarker {
    update: MarkerUpdate,
    /// The split setting it was prepared for.
    how: Decomposition,
    /// The mesh's parts, or why there are none; `None` where no split was to be made.
    split: Option<Result<Vec<Polytope>, String>>,
}

impl PreparedMarker {
    /// The marker.
    pub fn update(&self) -> &MarkerUpdate {
        &self.update
    }
}

/// A mesh marker's points and triangles.
type Surface<'a> = (&'a [Point3<f64>], Vec<[u32; 3]>);

/// The surface of a mesh marker (`None` for other kinds), or why it has none.
fn surface(kind: &MarkerKind) -> Option<Result<Surface<'_>, String>> {
    match kind {
        MarkerKind::Mesh { points, triangles } => Some(if triangles.is_empty() {
            Err("no triangles were read from its mesh file".into())
        } else {
            Ok((points.as_slice(), triangles.clone()))
        }),
        MarkerKind::TriangleList(points) => Some(if points.len() % 3 != 0 {
            Err(format!(
                "its {} points are not whole triangles (a multiple of 3)",
                points.len()
            ))
        } else {
            let mut triangles = Vec::with_capacity(points.len() / 3);
            for k in 0..points.len() / 3 {
                let Ok(first) = u32::try_from(3 * k) else {
                    return Some(Err(format!("too many points ({})", points.len())));
                };
                triangles.push([first, first + 1, first + 2]);
            }
            Ok((points.as_slice(), triangles))
        }),
        _ => None,
    }
}

impl PlanningService {
    /// Applies one marker: ADD/MODIFY add or replace obstacle `ns/id`, DELETE removes it,
    /// DELETEALL clears the scene. On error the scene is unchanged.
    ///
    /// A mesh marker is split into convex parts where
    /// [`ServiceSettings::mesh_parts`](super::ServiceSettings::mesh_parts) allows (parts of
    /// the last 8 meshes are kept): obstacles `ns/id`, `ns/id/1`, ...; parts of an earlier
    /// version of the marker that the new one lacks are removed, and DELETE removes them
    /// all. Returns a note for the log where a mesh that was to be split is its convex hull
    /// instead.
    pub fn apply_marker(&mut self, m: MarkerUpdate) -> Result<Option<String>, ServiceError> {
        let how = self.settings.mesh_parts;
        let prepared = self.marker_parts.splitter.prepare(m, &how);
        self.apply_prepared(prepared)
    }

    /// Applies a marker prepared by [`MeshSplitter::prepare`], as [`Self::apply_marker`]
    /// does, with the parts split then. Where the service's
    /// [`ServiceSettings::mesh_parts`](super::ServiceSettings::mesh_parts) changed since, the
    /// mesh is split again here with the current setting.
    pub fn apply_prepared(
        &mut self,
        prepared: PreparedMarker,
    ) -> Result<Option<String>, ServiceError> {
        let how = self.settings.mesh_parts;
        let PreparedMarker {
            update: m, split, ..
        } = if prepared.how == how {
            prepared
        } else {
            self.marker_parts.splitter.prepare(prepared.update, &how)
        };
        let marker = m.obstacle_id();
        match m.action {
            MarkerAction::DeleteAll => {
                self.scene.clear();
                self.marker_parts.forget();
                Ok(None)
            }
            MarkerAction::Delete => {
                if self.scene.get(&marker).is_none() {
                    return Err(ServiceError::UnknownMarker { marker });
                }
                let extra = self.marker_parts.extra.remove(&marker).unwrap_or(0);
                self.remove_parts(&marker, 1, extra);
                // Present, as checked above.
                let _ = self.scene.remove(&marker);
                Ok(None)
            }
            MarkerAction::Add | MarkerAction::Modify => {
                let pose = self
                    .in_planning_frame(&m.frame_id, m.pose, &self.current)
                    .map_err(|reason| ServiceError::WrongFrame {
                        marker: marker.clone(),
                        reason,
                    })?;
                let (mut shapes, note) = Self::marker_shapes(&marker, &m.kind, m.scale, split)?;
                let first = Obstacle {
                    id: marker.clone(),
                    shape: shapes.remove(0),
                    pose,
                };
                let obstacles = with_parts(first, shapes);
                let bad = |e: SceneError| ServiceError::BadMarker {
                    marker: marker.clone(),
                    reason: match e {
                        SceneError::InvalidObstacle { reason, .. } => reason,
                        other => other.to_string(),
                    },
                };
                // Everything is checked before the scene changes.
                for o in &obstacles {
                    o.validate().map_err(bad)?;
                }
                let extra = obstacles.len() - 1;
                for o in obstacles {
                    self.scene.upsert(o).map_err(bad)?;
                }
                let before = self.marker_parts.extra_parts(&marker);
                self.remove_parts(&marker, extra + 1, before);
                if extra > 0 {
                    self.marker_parts.extra.insert(marker, extra);
                } else {
                    self.marker_parts.extra.remove(&marker);
                }
                Ok(note)
            }
        }
    }

    /// How many meshes of markers have been split into convex parts (a mesh whose parts
    /// were kept from an earlier marker is not split again).
    pub fn mesh_splits(&self) -> u64 {
        self.marker_parts.splitter.splits()
    }

    /// Removes the parts `from..=to` of marker obstacle `marker` (those in the scene).
    fn remove_parts(&mut self, marker: &str, from: usize, to: usize) {
        for k in from..=to {
            // A part already gone (the scene replaced or cleared since) is no error.
            let _ = self.scene.remove(&part_id(marker, k));
        }
    }

    /// The obstacle shapes of a marker: its convex parts where its mesh was split
    /// (`split`), else its one shape ([`Self::marker_shape`]); and a note where a mesh to
    /// split is its hull.
    fn marker_shapes(
        marker: &str,
        kind: &MarkerKind,
        scale: [f64; 3],
        split: Option<Result<Vec<Polytope>, String>>,
    ) -> Result<(Vec<Shape>, Option<String>), ServiceError> {
        let note = match split {
            Some(Ok(parts)) if !parts.is_empty() => {
                let shapes = parts
                    .into_iter()
                    .map(|polytope| Shape::ConvexMesh { polytope })
                    .collect();
                return Ok((shapes, None));
            }
            Some(Ok(_)) => Some("the split gave no part".to_string()),
            Some(Err(why)) => Some(why),
            None => None,
        };
        let note = note.map(|why| {
            format!(
                "marker '{marker}': not split into convex parts ({why}); its convex hull is the \
                 obstacle"
            )
        });
        Ok((vec![Self::marker_shape(marker, kind, scale)?], note))
    }

    /// The obstacle shape of a marker (ROS marker scale conventions); a mesh is its hull.
    pub(super) fn marker_shape(
        marker: &str,
        kind: &MarkerKind,
        scale: [f64; 3],
    ) -> Result<Shape, ServiceError> {
        let [sx, sy, sz] = scale;
        match kind {
            MarkerKind::Cube => Ok(Shape::Box {
                half_extents: Vector3::new(
                    finite_size(marker, "scale.x", sx)? / 2.0,
                    finite_size(marker, "scale.y", sy)? / 2.0,
                    finite_size(marker, "scale.z", sz)? / 2.0,
                ),
            }),
            MarkerKind::Sphere => {
                let d = finite_size(marker, "scale.x", sx)?;
                // An ellipsoid marker is covered by the ball of its largest diameter.
                let d = d.max(if sy.is_finite() { sy } else { d });
                let d = d.max(if sz.is_finite() { sz } else { d });
                Ok(Shape::Sphere { radius: d / 2.0 })
            }
            MarkerKind::Cylinder => {
                let d = finite_size(marker, "scale.x", sx)?;
                let d = d.max(if sy.is_finite() { sy } else { d });
                let h = finite_size(marker, "scale.z", sz)?;
                Ok(Shape::Cylinder {
                    radius: d / 2.0,
                    half_length: h / 2.0,
                })
            }
            MarkerKind::Mesh { points, .. } | MarkerKind::TriangleList(points) => {
                if points.len() < 4 {
                    return Err(ServiceError::BadMarker {
                        marker: marker.into(),
                        reason: format!(
                            "{} points cannot enclose a volume (need at least 4)",
                            points.len()
                        ),
                    });
                }
                let polytope =
                    Polytope::from_points(points).map_err(|e| ServiceError::BadMarker {
                        marker: marker.into(),
                        reason: e.to_string(),
                    })?;
                Ok(Shape::ConvexMesh { polytope })
            }
            MarkerKind::Other(t) => Err(ServiceError::UnsupportedMarker {
                marker: marker.into(),
                kind: format!(
                    "{t} (supported: CUBE 1, SPHERE 2, CYLINDER 3, TRIANGLE_LIST 11, MESH_RESOURCE 10)"
                ),
            }),
        }
    }
}
