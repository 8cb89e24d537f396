//! Loading the vertices of mesh files (STL, OBJ, Collada) for convex hulls.
//!
//! Link and obstacle meshes are replaced by their convex hull
//! ([`crate::robot::geometry::Polytope::from_points`]), for which only vertex positions
//! matter; normals and materials are ignored. An obstacle mesh split into convex parts
//! ([`crate::robot::decompose`]) needs its triangles too: [`load_mesh_triangles`] (STL, OBJ).
//!
//! Collada (`.dae`) support: positions of every `<mesh>` (the `<source>` named by the
//! `POSITION` input of `<vertices>`), placed by the `<node>` hierarchy of the visual scenes
//! (`<matrix>`, `<translate>`, `<rotate>`, `<scale>`, applied in document order, parents
//! first) for every `<instance_geometry>`, then multiplied by `<asset><unit meter=...>`.
//! A file without a visual scene contributes every geometry untransformed. Not handled:
//! `<instance_node>` / `<library_nodes>`, `<lookat>`, `<skew>`, and `<up_axis>` (ROS tools
//! disagree on it; files are taken as Z-up).

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
/// STL and OBJ files (every object of an OBJ, its polygons split into triangles); Collada
/// files are refused with a message saying so. Errors name the file as
/// [`load_mesh_points`]'s do, and also a file without a triangle.
pub fn load_mesh_triangles(
    path: &Path,
    scale: Vector3<f64>,
) -> Result<TriangleMesh, GeometryError> {
    let (extension, bytes) = read_mesh_file(path, scale)?;
    let parse_error = |message: String| GeometryError::MeshParse {
        path: path.to_path_buf(),
        message,
    };
    let (raw, triangles) =
        match extension.as_str() {
            "stl" => stl_triangles(&bytes).map_err(parse_error)?,
            "obj" => obj_triangles(&bytes).map_err(parse_error)?,
            _ => return Err(parse_error(
                "the triangles of Collada (.dae) meshes are not read: convert it to STL or OBJ \
                 to split it into convex parts"
                    .to_string(),
            )),
        };
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

fn collect_instances(
    node: roxmltree::Node,
    parent: &Matrix4<f64>,
    geometries: &std::collections::HashMap<&str, Vec<Point3<f64>>>,
    out: &mut Vec<Point3<f64>>,
) -> Result<(), String> {
    let world = parent * node_transform(node)?;
    for c in node.children().filter(|c| c.is_element()) {
        match c.tag_name().name() {
            "instance_geometry" => {
                let url = c.attribute("url").unwrap_or("").trim_start_matches('#');
                let points = geometries
                    .get(url)
                    .ok_or_else(|| format!("instance_geometry refers to unknown '{url}'"))?;
                out.extend(points.iter().map(|p| world.transform_point(p)));
            }
            "node" => collect_instances(c, &world, geometries, out)?,
            _ => {}
        }
    }
    Ok(())
}

fn dae_points(bytes: &[u8]) -> Result<Vec<Point3<f64>>, String> {
    let text = std::str::from_utf8(bytes).map_err(|e| format!("not UTF-8: {e}"))?;
    let doc = roxmltree::Document::parse(text).map_err(|e| e.to_string())?;
    let root = doc.root_element();
    let meter = match child(root, "asset")
        .and_then(|a| child(a, "unit"))
        .and_then(|u| u.attribute("meter"))
    {
        Some(m) => m
            .parse::<f64>()
            .ok()
            .filter(|m| m.is_finite() && *m > 0.0)
            .ok_or_else(|| format!("bad <unit meter=\"{m}\">"))?,
        None => 1.0,
    };
    let mut geometries = std::collections::HashMap::new();
    for g in root
        .descendants()
        .filter(|n| n.is_element() && n.tag_name().name() == "geometry")
    {
        geometries.insert(g.attribute("id").unwrap_or(""), geometry_positions(g)?);
    }
    let scenes: Vec<_> = root
        .descendants()
        .filter(|n| n.is_element() && n.tag_name().name() == "visual_scene")
        .collect();
    let mut out = Vec::new();
    if scenes.is_empty() {
        for points in geometries.values() {
            out.extend_from_slice(points);
        }
        // HashMap order is arbitrary; sort for a deterministic result.
        out.sort_by(|a, b| {
            a.coords
                .as_slice()
                .partial_cmp(b.coords.as_slice())
                .unwrap_or(std::cmp::Ordering::Equal)
        });
    } else {
        for scene in scenes {
            for node in scene
                .children()
                .filter(|c| c.is_element() && c.tag_name().name() == "node")
            {
                collect_instances(node, &Matrix4::identity(), &geometries, &mut out)?;
            }
        }
    }
    for p in &mut out {
        *p = Point3::from(p.coords * meter);
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
        let dae = dir.path().join("m.dae");
        std::fs::write(&dae, "<COLLADA/>").unwrap();
        let e = load_mesh_triangles(&dae, Vector3::new(1.0, 1.0, 1.0)).unwrap_err();
        assert!(
            e.to_string().contains("m.dae") && e.to_string().contains("Collada"),
            "{e}"
        );
        let bad = dir.path().join("b.obj");
        std::fs::write(&bad, "v 0 0 0\nv 1 0 0\nf 1 2 9\n").unwrap();
        assert!(load_mesh_triangles(&bad, Vector3::new(1.0, 1.0, 1.0)).is_err());
    }
}
