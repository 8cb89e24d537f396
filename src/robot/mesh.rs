//! Loading the vertices and triangles of mesh files (STL, OBJ, Collada).
//!
//! Link and obstacle meshes are replaced by their convex hull
//! ([`crate::robot::geometry::Polytope::from_points`]), for which only vertex positions
//! matter ([`load_mesh_points`]); normals and materials are ignored. An obstacle mesh split
//! into convex parts ([`crate::robot::decompose`]) needs its triangles too:
//! [`load_mesh_triangles`] (STL, OBJ, Collada).
//!
//! Collada (`.dae`) support: positions of every `<mesh>` (the `<source>` named by the
//! `POSITION` input of `<vertices>`), placed by the `<node>` hierarchy of the visual scenes
//! (`<matrix>`, `<translate>`, `<rotate>`, `<scale>`, applied in document order, parents
//! first) for every `<instance_geometry>`, then multiplied by `<asset><unit meter=...>`.
//! A file without a visual scene contributes every geometry untransformed (for triangles,
//! in the order of the geometry ids). Triangles come from `<triangles>`, `<polylist>`,
//! `<polygons>` (a `<ph>` polygon by its outer boundary, holes ignored), `<trifans>` and
//! `<tristrips>`, polygons fanned into triangles, through the `VERTEX` input; `<lines>` and
//! `<linestrips>` give none. Both loaders place the same points, with one traversal. Not
//! handled: `<instance_node>` / `<library_nodes>`, `<lookat>`, `<skew>`, and `<up_axis>`
//! (ROS tools disagree on it; files are taken as Z-up).

use std::collections::HashMap;
use std::io::{BufReader, Cursor};
use std::path::Path;

use nalgebra::{Matrix4, Point3, Rotation3, Unit, Vector3};

use super::geometry::GeometryError;

/// All vertex positions of the mesh at `path`, each multiplied componentwise by `scale`.
///
/// The format is chosen by the extension, case-insensitively: `stl` (ASCII or binary),
/// `obj` (every object in the file) or `dae` (Collada; see the module documentation).
/// Errors name the file: missing, unreadable, unknown extension, malformed, no vertices,
/// or a non-finite coordinate.
pub fn load_mesh_points(
    path: &Path,
    scale: Vector3<f64>,
) -> Result<Vec<Point3<f64>>, GeometryError> {
    let (extension, bytes) = read_mesh_file(path, scale)?;
    let raw = match extension.as_str() {
        "stl" => stl_points(&bytes),
        "obj" => obj_points(&bytes),
        _ => dae_points(&bytes),
    }
    .map_err(|message| GeometryError::MeshParse {
        path: path.to_path_buf(),
        message,
    })?;
    scaled(path, raw, scale)
}

/// A mesh's vertices and its triangles (indices into the vertices).
pub type TriangleMesh = (Vec<Point3<f64>>, Vec<[u32; 3]>);

/// The vertices (scaled componentwise by `scale`) and triangles of the mesh at `path`, for
/// [`crate::robot::decompose::convex_parts`], which needs the surface and not only the points.
///
/// STL, OBJ (every object, its polygons split into triangles) and Collada files (every
/// placed geometry's triangles, polygons, fans and strips split into triangles; see the
/// module documentation). The vertices of a Collada file are the points
/// [`load_mesh_points`] gives (in the order of the geometry ids when the file has no
/// visual scene). Errors name the file as [`load_mesh_points`]'s do, and also a file
/// without a triangle and, for Collada, bad primitive indices (naming the geometry).
pub fn load_mesh_triangles(
    path: &Path,
    scale: Vector3<f64>,
) -> Result<TriangleMesh, GeometryError> {
    let (extension, bytes) = read_mesh_file(path, scale)?;
    let parse_error = |message: String| GeometryError::MeshParse {
        path: path.to_path_buf(),
        message,
    };
    let (raw, triangles) = match extension.as_str() {
        "stl" => stl_triangles(&bytes),
        "obj" => obj_triangles(&bytes),
        _ => dae_triangles(&bytes),
    }
    .map_err(parse_error)?;
    if triangles.is_empty() {
        return Err(parse_error("no triangles".to_string()));
    }
    Ok((scaled(path, raw, scale)?, triangles))
}

/// Checks the extension and the scale, and reads the file: (lower-case extension, bytes).
fn read_mesh_file(path: &Path, scale: Vector3<f64>) -> Result<(String, Vec<u8>), GeometryError> {
    let extension = path
        .extension()
        .and_then(|e| e.to_str())
        .unwrap_or("")
        .to_ascii_lowercase();
    if !matches!(extension.as_str(), "stl" | "obj" | "dae") {
        return Err(GeometryError::UnknownMeshFormat {
            path: path.to_path_buf(),
            extension,
        });
    }
    if !(scale.x.is_finite() && scale.y.is_finite() && scale.z.is_finite()) {
        return Err(GeometryError::InvalidParameter {
            name: "mesh scale",
            value: format!("{scale:?} for {}", path.display()),
        });
    }
    let bytes = std::fs::read(path).map_err(|source| {
        if source.kind() == std::io::ErrorKind::NotFound {
            GeometryError::MeshNotFound {
                path: path.to_path_buf(),
            }
        } else {
            GeometryError::MeshIo {
                path: path.to_path_buf(),
                source,
            }
        }
    })?;
    Ok((extension, bytes))
}

/// `raw` scaled componentwise; an empty mesh or a non-finite result is an error naming `path`.
fn scaled(
    path: &Path,
    raw: Vec<Point3<f64>>,
    scale: Vector3<f64>,
) -> Result<Vec<Point3<f64>>, GeometryError> {
    if raw.is_empty() {
        return Err(GeometryError::EmptyMesh {
            path: path.to_path_buf(),
        });
    }
    let mut out = Vec::with_capacity(raw.len());
    for (i, p) in raw.into_iter().enumerate() {
        let q = Point3::new(p.x * scale.x, p.y * scale.y, p.z * scale.z);
        if !(q.x.is_finite() && q.y.is_finite() && q.z.is_finite()) {
            return Err(GeometryError::MeshParse {
                path: path.to_path_buf(),
                message: format!("vertex {i} has a non-finite coordinate"),
            });
        }
        out.push(q);
    }
    Ok(out)
}

/// The triangles of an STL file: its indexed vertices and faces.
fn stl_triangles(bytes: &[u8]) -> Result<TriangleMesh, String> {
    let mesh = stl_io::read_stl(&mut Cursor::new(bytes)).map_err(|e| e.to_string())?;
    let points: Vec<Point3<f64>> = mesh
        .vertices
        .iter()
        .map(|v| Point3::new(v[0] as f64, v[1] as f64, v[2] as f64))
        .collect();
    let mut triangles = Vec::with_capacity(mesh.faces.len());
    for (k, f) in mesh.faces.iter().enumerate() {
        let mut t = [0u32; 3];
        for (slot, &i) in t.iter_mut().zip(&f.vertices) {
            if i >= points.len() {
                return Err(format!(
                    "facet {k} refers to vertex {i} of {}",
                    points.len()
                ));
            }
            *slot = i as u32;
        }
        triangles.push(t);
    }
    Ok((points, triangles))
}

/// The triangles of every object of an OBJ file (polygons fanned into triangles by tobj).
fn obj_triangles(bytes: &[u8]) -> Result<TriangleMesh, String> {
    let mut reader = BufReader::new(Cursor::new(bytes));
    let options = tobj::LoadOptions {
        triangulate: true,
        single_index: true,
        ..tobj::LoadOptions::default()
    };
    let (models, _materials) = tobj::load_obj_buf(&mut reader, &options, |_| {
        Err(tobj::LoadError::OpenFileFailed)
    })
    .map_err(|e| e.to_string())?;
    let mut points = Vec::new();
    let mut triangles = Vec::new();
    for model in &models {
        let base = points.len();
        for c in model.mesh.positions.chunks_exact(3) {
            points.push(Point3::new(c[0] as f64, c[1] as f64, c[2] as f64));
        }
        let count = points.len() - base;
        for (k, t) in model.mesh.indices.chunks_exact(3).enumerate() {
            let mut out = [0u32; 3];
            for (slot, &i) in out.iter_mut().zip(t) {
                if i as usize >= count {
                    return Err(format!(
                        "object '{}' face {k} refers to vertex {i} of {count}",
                        model.name
                    ));
                }
                *slot = (base + i as usize) as u32;
            }
            triangles.push(out);
        }
    }
    Ok((points, triangles))
}

fn stl_points(bytes: &[u8]) -> Result<Vec<Point3<f64>>, String> {
    let mesh = stl_io::read_stl(&mut Cursor::new(bytes)).map_err(|e| e.to_string())?;
    Ok(mesh
        .vertices
        .iter()
        .map(|v| Point3::new(v[0] as f64, v[1] as f64, v[2] as f64))
        .collect())
}

fn obj_points(bytes: &[u8]) -> Result<Vec<Point3<f64>>, String> {
    let mut reader = BufReader::new(Cursor::new(bytes));
    // Materials are irrelevant to collision geometry: never open .mtl files.
    let (models, _materials) =
        tobj::load_obj_buf(&mut reader, &tobj::LoadOptions::default(), |_| {
            Err(tobj::LoadError::OpenFileFailed)
        })
        .map_err(|e| e.to_string())?;
    let mut out = Vec::new();
    for model in &models {
        for c in model.mesh.positions.chunks_exact(3) {
            out.push(Point3::new(c[0] as f64, c[1] as f64, c[2] as f64));
        }
    }
    Ok(out)
}

/// Parses whitespace-separated numbers of an element's text.
fn numbers(node: roxmltree::Node, what: &str) -> Result<Vec<f64>, String> {
    node.text()
        .unwrap_or("")
        .split_ascii_whitespace()
        .map(|t| {
            t.parse::<f64>().map_err(|_| {
                format!(
                    "bad number '{t}' in <{what}> at byte {}",
                    node.range().start
                )
            })
        })
        .collect()
}

fn child<'a, 'i>(node: roxmltree::Node<'a, 'i>, name: &str) -> Option<roxmltree::Node<'a, 'i>> {
    node.children()
        .find(|c| c.is_element() && c.tag_name().name() == name)
}

/// Positions of one `<geometry>`'s `<mesh>`, in the geometry's own frame.
fn geometry_positions(geometry: roxmltree::Node) -> Result<Vec<Point3<f64>>, String> {
    let Some(mesh) = child(geometry, "mesh") else {
        return Ok(Vec::new()); // splines and other non-mesh geometry: nothing to collide.
    };
    let Some(vertices) = child(mesh, "vertices") else {
        return Err(format!(
            "<mesh> of geometry '{}' has no <vertices>",
            geometry.attribute("id").unwrap_or("?")
        ));
    };
    let source_ref = vertices
        .children()
        .find(|c| {
            c.is_element()
                && c.tag_name().name() == "input"
                && c.attribute("semantic") == Some("POSITION")
        })
        .and_then(|input| input.attribute("source"))
        .ok_or_else(|| "<vertices> has no POSITION input".to_string())?;
    let source_id = source_ref.trim_start_matches('#');
    let source = mesh
        .children()
        .find(|c| {
            c.is_element()
                && c.tag_name().name() == "source"
                && c.attribute("id") == Some(source_id)
        })
        .ok_or_else(|| format!("POSITION source '{source_id}' not found"))?;
    let array = child(source, "float_array")
        .ok_or_else(|| format!("source '{source_id}' has no <float_array>"))?;
    let values = numbers(array, "float_array")?;
    let accessor = child(source, "technique_common").and_then(|t| child(t, "accessor"));
    let stride = accessor
        .and_then(|a| a.attribute("stride"))
        .map(|s| s.parse::<usize>())
        .transpose()
        .map_err(|_| format!("bad accessor stride in source '{source_id}'"))?
        .unwrap_or(3);
    let offset = accessor
        .and_then(|a| a.attribute("offset"))
        .map(|s| s.parse::<usize>())
        .transpose()
        .map_err(|_| format!("bad accessor offset in source '{source_id}'"))?
        .unwrap_or(0);
    if stride < 3 {
        return Err(format!(
            "accessor stride {stride} < 3 in source '{source_id}'"
        ));
    }
    let data = values.get(offset..).unwrap_or(&[]);
    Ok(data
        .chunks_exact(stride)
        .map(|c| Point3::new(c[0], c[1], c[2]))
        .collect())
}

/// The local transform of a `<node>`: its transform elements composed in document order.
fn node_transform(node: roxmltree::Node) -> Result<Matrix4<f64>, String> {
    let mut m = Matrix4::identity();
    for c in node.children().filter(|c| c.is_element()) {
        let name = c.tag_name().name();
        let local = match name {
            "matrix" => {
                let v = numbers(c, name)?;
                if v.len() != 16 {
                    return Err(format!("<matrix> has {} numbers, expected 16", v.len()));
                }
                // Collada matrices are written row by row.
                Matrix4::from_row_slice(&v)
            }
            "translate" => {
                let v = numbers(c, name)?;
                let [x, y, z] = v[..] else {
                    return Err(format!("<translate> has {} numbers, expected 3", v.len()));
                };
                Matrix4::new_translation(&Vector3::new(x, y, z))
            }
            "rotate" => {
                let v = numbers(c, name)?;
                let [x, y, z, deg] = v[..] else {
                    return Err(format!("<rotate> has {} numbers, expected 4", v.len()));
                };
                let axis = Vector3::new(x, y, z);
                if axis.norm() == 0.0 {
                    Matrix4::identity()
                } else {
                    Rotation3::from_axis_angle(&Unit::new_normalize(axis), deg.to_radians())
                        .to_homogeneous()
                }
            }
            "scale" => {
                let v = numbers(c, name)?;
                let [x, y, z] = v[..] else {
                    return Err(format!("<scale> has {} numbers, expected 3", v.len()));
                };
                Matrix4::new_nonuniform_scaling(&Vector3::new(x, y, z))
            }
            _ => continue,
        };
        m *= local;
    }
    Ok(m)
}

/// Records every `<instance_geometry>` under `node` (and its child nodes) as
/// (geometry id, world matrix), in document order; `parent` is the matrix of the node above.
/// An instance of an id missing from `geometries` is an error.
fn collect_instances<'a, V>(
    node: roxmltree::Node<'a, '_>,
    parent: &Matrix4<f64>,
    geometries: &HashMap<&str, V>,
    out: &mut Vec<(&'a str, Option<Matrix4<f64>>)>,
) -> Result<(), String> {
    let world = parent * node_transform(node)?;
    for c in node.children().filter(|c| c.is_element()) {
        match c.tag_name().name() {
            "instance_geometry" => {
                let url = c.attribute("url").unwrap_or("").trim_start_matches('#');
                if !geometries.contains_key(url) {
                    return Err(format!("instance_geometry refers to unknown '{url}'"));
                }
                out.push((url, Some(world)));
            }
            "node" => collect_instances(c, &world, geometries, out)?,
            _ => {}
        }
    }
    Ok(())
}

/// The `<asset><unit meter=...>` factor of a Collada document (1 when absent).
fn unit_meter(root: roxmltree::Node) -> Result<f64, String> {
    match child(root, "asset")
        .and_then(|a| child(a, "unit"))
        .and_then(|u| u.attribute("meter"))
    {
        Some(m) => m
            .parse::<f64>()
            .ok()
            .filter(|m| m.is_finite() && *m > 0.0)
            .ok_or_else(|| format!("bad <unit meter=\"{m}\">")),
        None => Ok(1.0),
    }
}

/// The placed geometry of a Collada document, in the document's unit (not yet in metres).
struct DaeMesh {
    /// Positions of every placed geometry, transformed to the scene's frame.
    points: Vec<Point3<f64>>,
    /// Triangles (indices into `points`); empty unless they were asked for.
    triangles: Vec<[u32; 3]>,
    /// Whether the document has a visual scene. Without one every geometry is taken once,
    /// untransformed, in the order of the geometry ids.
    placed: bool,
    /// The `<unit meter=...>` factor.
    meter: f64,
}

/// Reads a Collada document: every geometry's positions (and its triangles when
/// `want_triangles`), placed once per `<instance_geometry>` of the visual scenes (see the
/// module documentation). The single traversal behind [`dae_points`] and [`dae_triangles`].
fn dae_mesh(bytes: &[u8], want_triangles: bool) -> Result<DaeMesh, String> {
    let text = std::str::from_utf8(bytes).map_err(|e| format!("not UTF-8: {e}"))?;
    let doc = roxmltree::Document::parse(text).map_err(|e| e.to_string())?;
    let root = doc.root_element();
    let meter = unit_meter(root)?;
    // A later geometry with an id already seen replaces the earlier one.
    let mut geometries: HashMap<&str, TriangleMesh> = HashMap::new();
    for g in root
        .descendants()
        .filter(|n| n.is_element() && n.tag_name().name() == "geometry")
    {
        let positions = geometry_positions(g)?;
        let triangles = if want_triangles {
            geometry_triangles(g, positions.len())?
        } else {
            Vec::new()
        };
        geometries.insert(g.attribute("id").unwrap_or(""), (positions, triangles));
    }
    let scenes: Vec<_> = root
        .descendants()
        .filter(|n| n.is_element() && n.tag_name().name() == "visual_scene")
        .collect();
    let placed = !scenes.is_empty();
    let mut instances = Vec::new();
    if placed {
        for scene in scenes {
            for node in scene
                .children()
                .filter(|c| c.is_element() && c.tag_name().name() == "node")
            {
                collect_instances(node, &Matrix4::identity(), &geometries, &mut instances)?;
            }
        }
    } else {
        let mut ids: Vec<&str> = geometries.keys().copied().collect();
        ids.sort_unstable();
        instances.extend(ids.into_iter().map(|id| (id, None)));
    }
    let mut points = Vec::new();
    let mut triangles = Vec::new();
    for (id, world) in instances {
        let Some((positions, local)) = geometries.get(id) else {
            continue; // collect_instances only records known ids.
        };
        let base = points.len();
        match world {
            Some(m) => points.extend(positions.iter().map(|p| m.transform_point(p))),
            None => points.extend_from_slice(positions),
        }
        for t in local {
            let mut out = [0u32; 3];
            for (slot, &i) in out.iter_mut().zip(t) {
                *slot = base
                    .checked_add(i as usize)
                    .and_then(|g| u32::try_from(g).ok())
                    .ok_or_else(|| "more than 2^32 placed vertices".to_string())?;
            }
            triangles.push(out);
        }
    }
    Ok(DaeMesh {
        points,
        triangles,
        placed,
        meter,
    })
}

/// The points of a Collada document in metres; without a visual scene they are sorted.
fn dae_points(bytes: &[u8]) -> Result<Vec<Point3<f64>>, String> {
    let mesh = dae_mesh(bytes, false)?;
    let mut out = mesh.points;
    if !mesh.placed {
        // Sorted for a result independent of how the geometries are listed.
        out.sort_by(|a, b| {
            a.coords
                .as_slice()
                .partial_cmp(b.coords.as_slice())
                .unwrap_or(std::cmp::Ordering::Equal)
        });
    }
    for p in &mut out {
        *p = Point3::from(p.coords * mesh.meter);
    }
    Ok(out)
}

/// The points (in metres) and triangles of a Collada document: the points are those of
/// [`dae_points`], in placement order (by geometry id without a visual scene).
fn dae_triangles(bytes: &[u8]) -> Result<TriangleMesh, String> {
    let mesh = dae_mesh(bytes, true)?;
    let points = mesh
        .points
        .into_iter()
        .map(|p| Point3::from(p.coords * mesh.meter))
        .collect();
    Ok((points, mesh.triangles))
}

/// The non-negative integers of a `<p>` or `<vcount>` element of geometry `id`.
fn indices(node: roxmltree::Node, id: &str) -> Result<Vec<usize>, String> {
    node.text()
        .unwrap_or("")
        .split_ascii_whitespace()
        .map(|t| {
            t.parse::<usize>().map_err(|_| {
                format!(
                    "geometry '{id}': bad index '{t}' in <{}> at byte {}",
                    node.tag_name().name(),
                    node.range().start
                )
            })
        })
        .collect()
}

/// The element children of `node` named `name`.
fn children_named<'a, 'i: 'a>(
    node: roxmltree::Node<'a, 'i>,
    name: &'a str,
) -> impl Iterator<Item = roxmltree::Node<'a, 'i>> + 'a {
    node.children()
        .filter(move |c| c.is_element() && c.tag_name().name() == name)
}

/// How the indices of a primitive element (`<triangles>`, `<polylist>`, ...) of geometry
/// `id` are read: the vertex positions of its `<p>` lists.
struct Primitive<'s> {
    /// The geometry id, for messages.
    id: &'s str,
    /// The element name, for messages.
    kind: &'s str,
    /// Indices per vertex: the largest input offset plus one.
    stride: usize,
    /// The offset of the `VERTEX` input.
    vertex_offset: usize,
    /// The number of positions of the geometry.
    count: usize,
}

impl<'s> Primitive<'s> {
    /// Reads the inputs of `element` (of geometry `id` with `count` positions).
    fn new(
        element: roxmltree::Node,
        id: &'s str,
        kind: &'s str,
        count: usize,
    ) -> Result<Self, String> {
        let mut stride = 0usize;
        let mut vertex_offset = None;
        for input in children_named(element, "input") {
            let offset = match input.attribute("offset") {
                Some(o) => o
                    .trim()
                    .parse::<usize>()
                    .map_err(|_| format!("geometry '{id}': bad input offset '{o}' in <{kind}>"))?,
                None => 0,
            };
            let after = offset
                .checked_add(1)
                .ok_or_else(|| format!("geometry '{id}': input offset {offset} too large"))?;
            stride = stride.max(after);
            if input.attribute("semantic") == Some("VERTEX") && vertex_offset.is_none() {
                vertex_offset = Some(offset);
            }
        }
        let vertex_offset = vertex_offset
            .ok_or_else(|| format!("geometry '{id}': <{kind}> has no VERTEX input"))?;
        Ok(Primitive {
            id,
            kind,
            stride,
            vertex_offset,
            count,
        })
    }

    /// The position indices of the vertices listed by `p`, each checked against the
    /// geometry's positions.
    fn vertices(&self, p: roxmltree::Node) -> Result<Vec<u32>, String> {
        let (id, kind) = (self.id, self.kind);
        let all = indices(p, id)?;
        if all.len() % self.stride != 0 {
            return Err(format!(
                "geometry '{id}': <{kind}> has a <p> of {} indices, not a multiple of {} \
                 (indices per vertex)",
                all.len(),
                self.stride
            ));
        }
        all.chunks_exact(self.stride)
            .map(|vertex| {
                let i = vertex
                    .get(self.vertex_offset)
                    .copied()
                    .unwrap_or(usize::MAX);
                if i >= self.count {
                    return Err(format!(
                        "geometry '{id}': <{kind}> refers to vertex {i} of {}",
                        self.count
                    ));
                }
                u32::try_from(i).map_err(|_| format!("geometry '{id}': vertex index {i} too large"))
            })
            .collect()
    }
}

/// Adds the triangle `t` to `out` unless two of its corners are the same vertex.
fn push_triangle(out: &mut Vec<[u32; 3]>, t: [u32; 3]) {
    let [a, b, c] = t;
    if a != b && b != c && a != c {
        out.push(t);
    }
}

/// Fans the polygon `polygon` (vertex indices) into triangles around its first vertex.
fn push_fan(out: &mut Vec<[u32; 3]>, polygon: &[u32]) {
    if let Some((&first, rest)) = polygon.split_first() {
        for pair in rest.windows(2) {
            if let [b, c] = *pair {
                push_triangle(out, [first, b, c]);
            }
        }
    }
}

/// The triangles of one `<geometry>`'s `<mesh>` (indices into its `count` positions, the
/// ones [`geometry_positions`] reads), from `<triangles>`, `<polylist>`, `<polygons>`,
/// `<trifans>` and `<tristrips>`; lines give none. Triangles with a repeated vertex are
/// dropped. Bad indices, inputs or counts are errors naming the geometry.
fn geometry_triangles(geometry: roxmltree::Node, count: usize) -> Result<Vec<[u32; 3]>, String> {
    let Some(mesh) = child(geometry, "mesh") else {
        return Ok(Vec::new());
    };
    let id = geometry.attribute("id").unwrap_or("?");
    let mut out = Vec::new();
    for element in mesh.children().filter(|c| c.is_element()) {
        let kind = element.tag_name().name();
        if !matches!(
            kind,
            "triangles" | "polylist" | "polygons" | "trifans" | "tristrips"
        ) {
            continue;
        }
        let primitive = Primitive::new(element, id, kind, count)?;
        match kind {
            "triangles" => {
                for p in children_named(element, "p") {
                    let v = primitive.vertices(p)?;
                    if v.len() % 3 != 0 {
                        return Err(format!(
                            "geometry '{id}': <triangles> lists {} vertices, not a multiple of 3",
                            v.len()
                        ));
                    }
                    for t in v.chunks_exact(3) {
                        if let [a, b, c] = *t {
                            push_triangle(&mut out, [a, b, c]);
                        }
                    }
                }
            }
            "polylist" => {
                let mut v = Vec::new();
                for p in children_named(element, "p") {
                    v.extend(primitive.vertices(p)?);
                }
                let mut counts = Vec::new();
                for vc in children_named(element, "vcount") {
                    counts.extend(indices(vc, id)?);
                }
                let mut rest = v.as_slice();
                for &n in &counts {
                    let Some((polygon, tail)) = rest.split_at_checked(n) else {
                        return Err(format!(
                            "geometry '{id}': <polylist> <vcount> adds up to more than the {} \
                             vertices of its <p>",
                            v.len()
                        ));
                    };
                    push_fan(&mut out, polygon);
                    rest = tail;
                }
                if !rest.is_empty() {
                    return Err(format!(
                        "geometry '{id}': <polylist> <vcount> adds up to {} of the {} vertices \
                         of its <p>",
                        v.len() - rest.len(),
                        v.len()
                    ));
                }
            }
            "polygons" => {
                for c in element.children().filter(|c| c.is_element()) {
                    // A polygon with holes: its outer boundary covers the holes.
                    let outer = match c.tag_name().name() {
                        "p" => c,
                        "ph" => match child(c, "p") {
                            Some(p) => p,
                            None => continue,
                        },
                        _ => continue,
                    };
                    push_fan(&mut out, &primitive.vertices(outer)?);
                }
            }
            "trifans" => {
                for p in children_named(element, "p") {
                    push_fan(&mut out, &primitive.vertices(p)?);
                }
            }
            _ => {
                // tristrips: every three consecutive vertices, every other one reversed to
                // keep the orientation.
                for p in children_named(element, "p") {
                    for (k, t) in primitive.vertices(p)?.windows(3).enumerate() {
                        if let [a, b, c] = *t {
                            push_triangle(&mut out, if k % 2 == 0 { [a, b, c] } else { [b, a, c] });
                        }
                    }
                }
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::robot::geometry::Polytope;
    use std::path::PathBuf;

    fn mesh_files(dir: &Path, out: &mut Vec<PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        let mut entries: Vec<_> = entries.filter_map(|e| e.ok()).map(|e| e.path()).collect();
        entries.sort();
        for p in entries {
            if p.is_dir() {
                mesh_files(&p, out);
            } else {
                out.push(p);
            }
        }
    }

    #[test]
    fn loads_every_benchmark_mesh() {
        let Some(data) = crate::mbm::data_dir_or_skip() else {
            return;
        };
        for robot in ["panda", "ur5", "fetch"] {
            let mut files = Vec::new();
            mesh_files(&data.join(robot).join("meshes"), &mut files);
            assert!(!files.is_empty(), "no meshes for {robot}");
            for f in files {
                let pts = load_mesh_points(&f, Vector3::new(1.0, 1.0, 1.0)).unwrap();
                assert!(pts.len() >= 4, "{}", f.display());
                let poly = Polytope::from_points(&pts).unwrap();
                let (lo, hi) = poly.aabb();
                let size = (hi - lo).norm();
                // Robot links are centimetres to a metre across.
                assert!(size > 0.01 && size < 2.0, "{}: size {size}", f.display());
                for p in &pts {
                    assert!(poly.contains_point(p, 1e-5 * size), "{}", f.display());
                }
                // The link-geometry pipeline works on real hulls: hill climbing finds the
                // support vertex and the sphere cover holds every mesh vertex.
                for k in 0..64 {
                    let a = k as f64 * 0.7;
                    let dir = Vector3::new(a.cos(), a.sin(), (k as f64 * 0.3).sin());
                    let brute = poly.vertices[poly.support(&dir)];
                    let climb =
                        poly.vertices[poly.support_hill_climb(&dir, k % poly.vertices.len())];
                    assert!(dir.dot(&(brute - climb)).abs() < 1e-12, "{}", f.display());
                }
                let cover = crate::robot::spheres::SphereSet::covering(&poly, 6);
                for p in &pts {
                    assert!(cover.contains_point(p, 1e-5 * size), "{}", f.display());
                }
            }
        }
    }

    #[test]
    fn scale_multiplies_componentwise() {
        let Some(data) = crate::mbm::data_dir_or_skip() else {
            return;
        };
        let f = data.join("panda/meshes/collision/link0.obj");
        let a = load_mesh_points(&f, Vector3::new(1.0, 1.0, 1.0)).unwrap();
        let b = load_mesh_points(&f, Vector3::new(2.0, -1.0, 0.5)).unwrap();
        assert_eq!(a.len(), b.len());
        for (p, q) in a.iter().zip(&b) {
            assert_eq!(q.x, 2.0 * p.x);
            assert_eq!(q.y, -p.y);
            assert_eq!(q.z, 0.5 * p.z);
        }
    }

    const TETRA_ASCII_STL: &str = "solid t
facet normal 0 0 -1
 outer loop
  vertex 0 0 0
  vertex 0 1 0
  vertex 1 0 0
 endloop
endfacet
facet normal 0 -1 0
 outer loop
  vertex 0 0 0
  vertex 1 0 0
  vertex 0 0 1
 endloop
endfacet
facet normal -1 0 0
 outer loop
  vertex 0 0 0
  vertex 0 0 1
  vertex 0 1 0
 endloop
endfacet
facet normal 1 1 1
 outer loop
  vertex 1 0 0
  vertex 0 1 0
  vertex 0 0 1
 endloop
endfacet
endsolid t
";

    fn sorted(mut v: Vec<Point3<f64>>) -> Vec<Point3<f64>> {
        v.sort_by(|a, b| {
            a.coords
                .as_slice()
                .partial_cmp(b.coords.as_slice())
                .unwrap()
        });
        v.dedup();
        v
    }

    fn unit_tetra() -> Vec<Point3<f64>> {
        sorted(vec![
            Point3::new(0.0, 0.0, 0.0),
            Point3::new(1.0, 0.0, 0.0),
            Point3::new(0.0, 1.0, 0.0),
            Point3::new(0.0, 0.0, 1.0),
        ])
    }

    #[test]
    fn ascii_and_binary_stl() {
        let dir = tempfile::tempdir().unwrap();
        let ascii = dir.path().join("t.STL");
        std::fs::write(&ascii, TETRA_ASCII_STL).unwrap();
        let one = Vector3::new(1.0, 1.0, 1.0);
        assert_eq!(sorted(load_mesh_points(&ascii, one).unwrap()), unit_tetra());

        // Binary STL written by hand: 80-byte header, count, 50 bytes per triangle.
        let tris = [
            [[0., 0., 0.], [0., 1., 0.], [1., 0., 0.]],
            [[0., 0., 0.], [1., 0., 0.], [0., 0., 1.]],
            [[0., 0., 0.], [0., 0., 1.], [0., 1., 0.]],
            [[1., 0., 0.], [0., 1., 0.], [0., 0., 1.]],
        ];
        let mut bin = vec![0u8; 80];
        bin.extend_from_slice(&(tris.len() as u32).to_le_bytes());
        for t in &tris {
            for _ in 0..3 {
                bin.extend_from_slice(&0f32.to_le_bytes());
            }
            for v in t {
                for c in v {
                    bin.extend_from_slice(&(*c as f32).to_le_bytes());
                }
            }
            bin.extend_from_slice(&[0, 0]);
        }
        let binary = dir.path().join("b.stl");
        std::fs::write(&binary, bin).unwrap();
        assert_eq!(
            sorted(load_mesh_points(&binary, one).unwrap()),
            unit_tetra()
        );
    }

    #[test]
    fn obj_with_two_objects() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("two.Obj");
        std::fs::write(
            &path,
            "mtllib missing.mtl\no a\nv 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\n\
             o b\nv 0 0 1\nv 0 0 2\nv 1 1 1\nf 4 5 6\n",
        )
        .unwrap();
        let pts = load_mesh_points(&path, Vector3::new(1.0, 1.0, 1.0)).unwrap();
        assert_eq!(pts.len(), 6);
        assert!(pts.contains(&Point3::new(0.0, 0.0, 2.0)));
    }

    #[test]
    fn collada_nodes_and_units() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m.DAE");
        let dae = r##"<?xml version="1.0"?>
<COLLADA xmlns="http://www.collada.org/2005/11/COLLADASchema" version="1.4.1">
  <asset><unit meter="0.01" name="centimeter"/><up_axis>Z_UP</up_axis></asset>
  <library_geometries>
    <geometry id="g">
      <mesh>
        <source id="g-pos">
          <float_array id="g-arr" count="6">1 0 0 0 2 0</float_array>
          <technique_common><accessor source="#g-arr" count="2" stride="3"/></technique_common>
        </source>
        <source id="g-nrm"><float_array id="n" count="3">9 9 9</float_array></source>
        <vertices id="g-v"><input semantic="POSITION" source="#g-pos"/></vertices>
      </mesh>
    </geometry>
  </library_geometries>
  <library_visual_scenes>
    <visual_scene id="s">
      <node id="parent">
        <translate>100 0 0</translate>
        <node id="child">
          <rotate>0 0 1 90</rotate>
          <scale>2 2 2</scale>
          <instance_geometry url="#g"/>
        </node>
      </node>
      <node id="other">
        <matrix>1 0 0 0  0 1 0 0  0 0 1 50  0 0 0 1</matrix>
        <instance_geometry url="#g"/>
      </node>
    </visual_scene>
  </library_visual_scenes>
</COLLADA>"##;
        std::fs::write(&path, dae).unwrap();
        let pts = load_mesh_points(&path, Vector3::new(1.0, 1.0, 1.0)).unwrap();
        // child: scale 2, rotate 90 deg about z, translate x by 100, then centimetres.
        let expected = [
            Point3::new(1.0, 0.02, 0.0),
            Point3::new(1.0 - 0.04, 0.0, 0.0),
            Point3::new(0.01, 0.0, 0.5),
            Point3::new(0.0, 0.02, 0.5),
        ];
        assert_eq!(pts.len(), expected.len());
        for (p, e) in pts.iter().zip(&expected) {
            assert!((p - e).norm() < 1e-12, "{p} vs {e}");
        }
    }

    #[test]
    fn errors_name_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let one = Vector3::new(1.0, 1.0, 1.0);
        let missing = dir.path().join("nope.stl");
        let e = load_mesh_points(&missing, one).unwrap_err();
        assert!(matches!(e, GeometryError::MeshNotFound { .. }));
        assert!(e.to_string().contains("nope.stl"));

        let ply = dir.path().join("x.ply");
        std::fs::write(&ply, "ply").unwrap();
        let e = load_mesh_points(&ply, one).unwrap_err();
        assert!(
            matches!(e, GeometryError::UnknownMeshFormat { ref extension, .. } if extension == "ply")
        );

        let empty = dir.path().join("empty.obj");
        std::fs::write(&empty, "# nothing\n").unwrap();
        let e = load_mesh_points(&empty, one).unwrap_err();
        assert!(matches!(e, GeometryError::EmptyMesh { .. }), "{e}");
        assert!(e.to_string().contains("empty.obj"));

        let bad = dir.path().join("bad.dae");
        std::fs::write(&bad, "<COLLADA><unclosed></COLLADA>").unwrap();
        let e = load_mesh_points(&bad, one).unwrap_err();
        assert!(matches!(e, GeometryError::MeshParse { .. }));
        assert!(e.to_string().contains("bad.dae"));

        let garbage = dir.path().join("g.stl");
        std::fs::write(&garbage, [1u8, 2, 3]).unwrap();
        let e = load_mesh_points(&garbage, one).unwrap_err();
        assert!(e.to_string().contains("g.stl"), "{e}");
    }

    /// A Collada document with one geometry `crate_geom` of three positions and no visual
    /// scene, its `<mesh>` ending with `primitive`.
    fn small_dae(primitive: &str) -> String {
        format!(
            r##"<?xml version="1.0"?>
<COLLADA xmlns="http://www.collada.org/2005/11/COLLADASchema" version="1.4.1">
  <library_geometries>
    <geometry id="crate_geom">
      <mesh>
        <source id="p"><float_array id="pa" count="9">0 0 0 1 0 0 0 1 0</float_array>
          <technique_common><accessor source="#pa" count="3" stride="3"/></technique_common>
        </source>
        <vertices id="v"><input semantic="POSITION" source="#p"/></vertices>
        {primitive}
      </mesh>
    </geometry>
  </library_geometries>
</COLLADA>"##
        )
    }

    /// Points sorted by their coordinates' total order, duplicates kept.
    fn sorted_all(mut v: Vec<Point3<f64>>) -> Vec<Point3<f64>> {
        v.sort_by(|a, b| {
            a.coords
                .iter()
                .zip(b.coords.iter())
                .map(|(x, y)| x.total_cmp(y))
                .find(|o| o.is_ne())
                .unwrap_or(std::cmp::Ordering::Equal)
        });
        v
    }

    /// Loads the triangles of the Collada file `path` and checks them against
    /// [`load_mesh_points`]: at least one triangle, every index in range, and exactly the
    /// same points (the same multiset; the same sequence when the file has a visual scene).
    fn check_collada_triangles(path: &Path) -> TriangleMesh {
        let one = Vector3::new(1.0, 1.0, 1.0);
        let (points, triangles) =
            load_mesh_triangles(path, one).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert!(!triangles.is_empty(), "{}", path.display());
        for t in &triangles {
            assert!(
                t.iter().all(|&i| (i as usize) < points.len()),
                "{}: {t:?} of {}",
                path.display(),
                points.len()
            );
        }
        let hull_points = load_mesh_points(path, one).unwrap();
        assert_eq!(
            sorted_all(points.clone()),
            sorted_all(hull_points),
            "{}",
            path.display()
        );
        (points, triangles)
    }

    #[test]
    fn collada_triangles_nodes_and_units() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tri.dae");
        // Positions 0..4: the unit square's corners at z = 0, then (0, 0, 1). <triangles>:
        // VERTEX offset 0, NORMAL offset 1 (stride 2), the third triangle degenerate.
        // <polylist>: NORMAL offset 0, VERTEX offset 1, a quad (fanned) and a triangle.
        let dae = r##"<?xml version="1.0"?>
<COLLADA xmlns="http://www.collada.org/2005/11/COLLADASchema" version="1.4.1">
  <asset><unit meter="0.01" name="centimeter"/></asset>
  <library_geometries>
    <geometry id="g">
      <mesh>
        <source id="g-pos">
          <float_array id="g-arr" count="15">0 0 0  1 0 0  1 1 0  0 1 0  0 0 1</float_array>
          <technique_common><accessor source="#g-arr" count="5" stride="3"/></technique_common>
        </source>
        <source id="g-nrm"><float_array id="g-n" count="3">0 0 1</float_array></source>
        <vertices id="g-v"><input semantic="POSITION" source="#g-pos"/></vertices>
        <triangles count="3">
          <input semantic="VERTEX" source="#g-v" offset="0"/>
          <input semantic="NORMAL" source="#g-nrm" offset="1"/>
          <p>0 0 1 0 4 0  1 0 2 0 4 0  2 0 2 0 3 0</p>
        </triangles>
        <polylist count="2">
          <input semantic="NORMAL" source="#g-nrm" offset="0"/>
          <input semantic="VERTEX" source="#g-v" offset="1"/>
          <vcount>4 3</vcount>
          <p>0 0 0 1 0 2 0 3  0 3 0 2 0 4</p>
        </polylist>
      </mesh>
    </geometry>
  </library_geometries>
  <library_visual_scenes>
    <visual_scene id="s">
      <node id="placed">
        <translate>100 0 0</translate>
        <scale>2 2 2</scale>
        <instance_geometry url="#g"/>
      </node>
      <node id="plain"><instance_geometry url="#g"/></node>
    </visual_scene>
  </library_visual_scenes>
</COLLADA>"##;
        std::fs::write(&path, dae).unwrap();
        let (points, triangles) = check_collada_triangles(&path);
        // "placed": 2 p + (100, 0, 0) cm; "plain": p cm.
        let expected = [
            [1.0, 0.0, 0.0],
            [1.02, 0.0, 0.0],
            [1.02, 0.02, 0.0],
            [1.0, 0.02, 0.0],
            [1.0, 0.0, 0.02],
            [0.0, 0.0, 0.0],
            [0.01, 0.0, 0.0],
            [0.01, 0.01, 0.0],
            [0.0, 0.01, 0.0],
            [0.0, 0.0, 0.01],
        ];
        assert_eq!(points.len(), expected.len());
        for (p, e) in points.iter().zip(&expected) {
            assert!((p - Point3::from(*e)).norm() < 1e-12, "{p} vs {e:?}");
        }
        let local = [[0, 1, 4], [1, 2, 4], [0, 1, 2], [0, 2, 3], [3, 2, 4]];
        let mut expected_triangles = local.to_vec();
        expected_triangles.extend(local.iter().map(|t| t.map(|i| i + 5)));
        assert_eq!(triangles, expected_triangles);
        // With a visual scene both loaders give the same sequence.
        assert_eq!(
            load_mesh_points(&path, Vector3::new(1.0, 1.0, 1.0)).unwrap(),
            points
        );
        // The loader's scale applies after the unit.
        let (scaled_points, _) = load_mesh_triangles(&path, Vector3::new(1.0, 3.0, 1.0)).unwrap();
        assert!((scaled_points[2] - Point3::new(1.02, 0.06, 0.0)).norm() < 1e-12);
    }

    #[test]
    fn collada_fans_strips_and_polygons() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("fans.dae");
        // No visual scene: geometry "a" comes before "b" although written after it.
        let dae = r##"<COLLADA>
  <library_geometries>
    <geometry id="b">
      <mesh>
        <source id="b-pos"><float_array id="b-arr">0 0 0  1 0 0  1 1 0  0 1 0  2 0 0  2 1 0</float_array></source>
        <vertices id="b-v"><input semantic="POSITION" source="#b-pos"/></vertices>
        <trifans count="1"><input semantic="VERTEX" source="#b-v" offset="0"/><p>0 1 2 3</p></trifans>
        <tristrips count="1"><input semantic="VERTEX" source="#b-v" offset="0"/><p>1 4 2 5</p></tristrips>
        <lines count="1"><input semantic="VERTEX" source="#b-v" offset="0"/><p>0 5</p></lines>
        <linestrips count="1"><input semantic="VERTEX" source="#b-v" offset="0"/><p>0 5 3</p></linestrips>
      </mesh>
    </geometry>
    <geometry id="a">
      <mesh>
        <source id="a-pos"><float_array id="a-arr">0 0 5  1 0 5  1 1 5  0 1 5  0.5 0.5 5</float_array></source>
        <source id="a-n"><float_array id="a-narr">0 0 1</float_array></source>
        <vertices id="a-v"><input semantic="POSITION" source="#a-pos"/></vertices>
        <polygons count="2">
          <input semantic="VERTEX" source="#a-v" offset="0"/>
          <input semantic="NORMAL" source="#a-n" offset="1"/>
          <p>0 0 1 0 2 0</p>
          <ph><p>0 0 1 0 2 0 3 0</p><h>4 0 4 0 4 0</h></ph>
        </polygons>
      </mesh>
    </geometry>
  </library_geometries>
</COLLADA>"##;
        std::fs::write(&path, dae).unwrap();
        let (points, triangles) = check_collada_triangles(&path);
        let expected = [
            [0.0, 0.0, 5.0],
            [1.0, 0.0, 5.0],
            [1.0, 1.0, 5.0],
            [0.0, 1.0, 5.0],
            [0.5, 0.5, 5.0],
            [0.0, 0.0, 0.0],
            [1.0, 0.0, 0.0],
            [1.0, 1.0, 0.0],
            [0.0, 1.0, 0.0],
            [2.0, 0.0, 0.0],
            [2.0, 1.0, 0.0],
        ]
        .map(Point3::from);
        assert_eq!(points, expected.to_vec());
        // "a": a triangle and the outer quad of the polygon with a hole (fanned); "b" from
        // 5 on: the fan 0 1 2 3, then the strip 1 4 2 5 (its second triangle reversed).
        assert_eq!(
            triangles,
            vec![
                [0, 1, 2],
                [0, 1, 2],
                [0, 2, 3],
                [5, 6, 7],
                [5, 7, 8],
                [6, 9, 7],
                [7, 9, 10]
            ]
        );
    }

    #[test]
    fn collada_triangle_errors_name_the_file_and_geometry() {
        let dir = tempfile::tempdir().unwrap();
        let one = Vector3::new(1.0, 1.0, 1.0);
        let cases = [
            (
                r##"<triangles><input semantic="VERTEX" source="#v" offset="0"/><p>0 1 3</p></triangles>"##,
                "refers to vertex 3 of 3",
            ),
            (
                r##"<triangles><input semantic="NORMAL" source="#n" offset="0"/><p>0 1 2</p></triangles>"##,
                "no VERTEX input",
            ),
            (
                r##"<triangles><input semantic="VERTEX" source="#v" offset="0"/><input semantic="NORMAL" source="#n" offset="1"/><p>0 0 1 0 2</p></triangles>"##,
                "not a multiple of 2",
            ),
            (
                r##"<triangles><input semantic="VERTEX" source="#v" offset="0"/><p>0 1 2 0</p></triangles>"##,
                "not a multiple of 3",
            ),
            (
                r##"<triangles><input semantic="VERTEX" source="#v" offset="0"/><p>0 1 -2</p></triangles>"##,
                "bad index '-2'",
            ),
            (
                r##"<polylist><input semantic="VERTEX" source="#v" offset="0"/><vcount>4</vcount><p>0 1 2</p></polylist>"##,
                "vcount",
            ),
            (
                r##"<polylist><input semantic="VERTEX" source="#v" offset="0"/><vcount>3</vcount><p>0 1 2 2 1 0</p></polylist>"##,
                "adds up to 3 of the 6",
            ),
            (
                r##"<tristrips><input semantic="VERTEX" source="#v" offset="0"/><p>0 1 2 7</p></tristrips>"##,
                "refers to vertex 7 of 3",
            ),
        ];
        for (k, (primitive, expected)) in cases.iter().enumerate() {
            let name = format!("bad{k}.dae");
            let path = dir.path().join(&name);
            std::fs::write(&path, small_dae(primitive)).unwrap();
            let e = load_mesh_triangles(&path, one).unwrap_err();
            assert!(matches!(e, GeometryError::MeshParse { .. }), "{e}");
            let text = e.to_string();
            assert!(
                text.contains(&name) && text.contains("crate_geom") && text.contains(expected),
                "{primitive}: {text}"
            );
            // The points of the file are still read for a convex hull.
            assert_eq!(load_mesh_points(&path, one).unwrap().len(), 3);
        }
        // Lines only: points, but no triangles.
        let lines = dir.path().join("lines.dae");
        std::fs::write(
            &lines,
            small_dae(
                r##"<lines><input semantic="VERTEX" source="#v" offset="0"/><p>0 1 1 2</p></lines>"##,
            ),
        )
        .unwrap();
        assert_eq!(load_mesh_points(&lines, one).unwrap().len(), 3);
        let e = load_mesh_triangles(&lines, one).unwrap_err();
        assert!(matches!(e, GeometryError::MeshParse { .. }), "{e}");
        assert!(
            e.to_string().contains("lines.dae") && e.to_string().contains("no triangles"),
            "{e}"
        );
    }

    /// Writes `points` and `triangles` as a Collada file placed by a node (translate and
    /// rotate, unit 0.5 m): the first half of the triangles as `<triangles>` (VERTEX offset
    /// 0, NORMAL offset 1), the rest as a `<polylist>` (VERTEX offset 1).
    fn write_collada(path: &Path, points: &[Point3<f64>], triangles: &[[u32; 3]]) {
        let positions: Vec<String> = points
            .iter()
            .map(|p| format!("{} {} {}", p.x, p.y, p.z))
            .collect();
        let (first, second) = triangles.split_at(triangles.len() / 2);
        let with_normal = |ts: &[[u32; 3]], vertex_first: bool| -> String {
            ts.iter()
                .flatten()
                .map(|i| {
                    if vertex_first {
                        format!("{i} 0")
                    } else {
                        format!("0 {i}")
                    }
                })
                .collect::<Vec<_>>()
                .join(" ")
        };
        let dae = format!(
            r##"<COLLADA>
  <asset><unit meter="0.5"/></asset>
  <library_geometries>
    <geometry id="m">
      <mesh>
        <source id="m-pos"><float_array id="m-arr">{}</float_array></source>
        <source id="m-n"><float_array id="m-narr">0 0 1</float_array></source>
        <vertices id="m-v"><input semantic="POSITION" source="#m-pos"/></vertices>
        <triangles><input semantic="VERTEX" source="#m-v" offset="0"/><input semantic="NORMAL" source="#m-n" offset="1"/><p>{}</p></triangles>
        <polylist><input semantic="NORMAL" source="#m-n" offset="0"/><input semantic="VERTEX" source="#m-v" offset="1"/><vcount>{}</vcount><p>{}</p></polylist>
      </mesh>
    </geometry>
  </library_geometries>
  <library_visual_scenes>
    <visual_scene id="s">
      <node><translate>0.1 -0.2 0.3</translate><rotate>1 2 3 40</rotate><instance_geometry url="#m"/></node>
    </visual_scene>
  </library_visual_scenes>
</COLLADA>"##,
            positions.join(" "),
            with_normal(first, true),
            vec!["3"; second.len()].join(" "),
            with_normal(second, false),
        );
        std::fs::write(path, dae).unwrap();
    }

    #[test]
    fn benchmark_meshes_give_collada_triangles() {
        let Some(data) = crate::mbm::data_dir_or_skip() else {
            return;
        };
        let dir = tempfile::tempdir().unwrap();
        let one = Vector3::new(1.0, 1.0, 1.0);
        let (mut daes, mut converted) = (0, 0);
        for robot in ["panda", "ur5", "fetch"] {
            let mut files = Vec::new();
            mesh_files(&data.join(robot).join("meshes"), &mut files);
            for f in files {
                let extension = f
                    .extension()
                    .and_then(|e| e.to_str())
                    .unwrap_or("")
                    .to_ascii_lowercase();
                if extension == "dae" {
                    // The benchmark's own Collada meshes (if any).
                    check_collada_triangles(&f);
                    daes += 1;
                    continue;
                }
                // Every other mesh written as Collada gives back its (non-degenerate)
                // triangles, placed as the node and unit say.
                let (points, triangles) = load_mesh_triangles(&f, one).unwrap();
                let copy = dir.path().join(format!("{converted}.dae"));
                write_collada(&copy, &points, &triangles);
                let (placed, read) = check_collada_triangles(&copy);
                let kept: Vec<[u32; 3]> = triangles
                    .iter()
                    .copied()
                    .filter(|[a, b, c]| a != b && b != c && a != c)
                    .collect();
                assert_eq!(read, kept, "{}", f.display());
                let rotation = Rotation3::from_axis_angle(
                    &Unit::new_normalize(Vector3::new(1.0, 2.0, 3.0)),
                    40f64.to_radians(),
                );
                assert_eq!(placed.len(), points.len());
                for (p, q) in points.iter().zip(&placed) {
                    let expected = (rotation * p + Vector3::new(0.1, -0.2, 0.3)) * 0.5;
                    assert!((q - expected).norm() < 1e-12, "{}: {q}", f.display());
                }
                converted += 1;
            }
        }
        eprintln!("{daes} Collada meshes, {converted} meshes converted to Collada");
        assert!(converted > 0);
    }

    #[test]
    fn triangles_of_obj_and_stl_files() {
        let dir = tempfile::tempdir().unwrap();
        // A unit square as one quad (fanned into two triangles) and a triangle, two objects.
        let obj = dir.path().join("q.obj");
        std::fs::write(
            &obj,
            "o quad\nv 0 0 0\nv 1 0 0\nv 1 1 0\nv 0 1 0\nf 1 2 3 4\n\
             o tri\nv 0 0 1\nv 1 0 1\nv 0 1 1\nf 5 6 7\n",
        )
        .unwrap();
        let (points, triangles) = load_mesh_triangles(&obj, Vector3::new(2.0, 2.0, 2.0)).unwrap();
        assert_eq!(triangles.len(), 3);
        assert_eq!(points.len(), 7);
        let area: f64 = triangles
            .iter()
            .map(|t| {
                let [a, b, c] = t.map(|i| points[i as usize]);
                (b - a).cross(&(c - a)).norm() / 2.0
            })
            .sum();
        assert!((area - 6.0).abs() < 1e-9, "area {area}"); // 4 + 2 after scaling by 2
        let stl = dir.path().join("t.stl");
        std::fs::write(
            &stl,
            "solid t\nfacet normal 0 0 1\nouter loop\nvertex 0 0 0\nvertex 1 0 0\n\
             vertex 0 1 0\nendloop\nendfacet\nendsolid t\n",
        )
        .unwrap();
        let (points, triangles) = load_mesh_triangles(&stl, Vector3::new(1.0, 1.0, 1.0)).unwrap();
        assert_eq!((points.len(), triangles.len()), (3, 1));
        // Collada files give their triangles too (one triangle, no visual scene).
        let dae = dir.path().join("m.dae");
        std::fs::write(&dae, small_dae(r##"<triangles count="1"><input semantic="VERTEX" source="#v" offset="0"/><p>0 1 2</p></triangles>"##)).unwrap();
        let (points, triangles) = load_mesh_triangles(&dae, Vector3::new(1.0, 1.0, 1.0)).unwrap();
        assert_eq!(triangles, vec![[0, 1, 2]]);
        assert_eq!(points.len(), 3);
        let empty = dir.path().join("e.dae");
        std::fs::write(&empty, "<COLLADA/>").unwrap();
        let e = load_mesh_triangles(&empty, Vector3::new(1.0, 1.0, 1.0)).unwrap_err();
        assert!(
            e.to_string().contains("e.dae") && e.to_string().contains("no triangles"),
            "{e}"
        );
        let bad = dir.path().join("b.obj");
        std::fs::write(&bad, "v 0 0 0\nv 1 0 0\nf 1 2 9\n").unwrap();
        assert!(load_mesh_triangles(&bad, Vector3::new(1.0, 1.0, 1.0)).is_err());
    }
}
