//! MoveIt's plain-text scene geometry (`.scene` files: what the RViz MotionPlanning panel's
//! scene export writes and its import reads).
//!
//! Layout, as MoveIt reads it: the first line is the scene's name; then one block per object,
//! and a line `.` at the end.
//!
//! ```text
//! my_cell
//! * table                 <- "* " and the object's id (the rest of the line)
//! 0.5 0 0.2               <- object position        } only in the current format
//! 0 0 0 1                 <- object quaternion xyzw }
//! 1                       <- number of shapes
//! box                     <- shape: box x y z (full sizes), sphere r, cylinder r l, mesh
//! 1.2 0.8 0.04               (vertex and triangle counts, vertices, triangles)
//! 0 0 0                   <- shape position (relative to the object)
//! 0 0 0 1                 <- shape quaternion xyzw
//! 0 0 0 0                 <- colour rgba (not used)
//! 0                       <- number of subframes, each a name and a pose (not used) }
//! .
//! ```
//!
//! The older format (MoveIt before subframes) has neither the object pose nor the subframes;
//! as MoveIt does, it is recognised by the line after the first `*` line holding a single
//! number. Poses are in the planning frame (the file names no frame): the scene's frame is
//! empty, which the service reads as its planning frame. An object with several shapes
//! becomes obstacles `id`, `id/1`, `id/2`, ... (as MoveIt YAML objects do); a mesh is used as
//! the convex hull of its vertices, or split into convex parts covering its triangles where
//! [`SceneOptions::mesh_parts`](super::SceneOptions::mesh_parts) allows (each part one more
//! obstacle of the object). Cones and planes are refused, naming the object.
//!
//! [`Scene::to_moveit_text`] writes the current format (obstacles only: the format has no
//! carried objects).

use std::path::Path;

use nalgebra::{Isometry3, Point3, Translation3};

use super::yaml::{finite3, quaternion_xyzw};
use super::{Obstacle, Scene, SceneError, Shape};
use crate::robot::decompose::Decomposition;

/// Whether `text` is in this format rather than YAML: its last non-blank line is `.`.
pub(crate) fn looks_like_scene_text(text: &str) -> bool {
    text.lines().rev().map(str::trim).find(|l| !l.is_empty()) == Some(".")
}

/// A word of the text with its line number (1-based).
#[derive(Debug, Clone, Copy)]
enum Token<'a> {
    /// A whitespace-separated word.
    Word(usize, &'a str),
    /// An object's start: the id after `*`.
    Object(usize, &'a str),
}

/// Reads the words of the text in order.
struct Reader<'a> {
    tokens: std::vec::IntoIter<Token<'a>>,
    source: &'a Path,
    /// The line of the last token read (for errors at the end of the text).
    line: usize,
}

impl<'a> Reader<'a> {
    fn err(&self, line: usize, reason: impl Into<String>) -> SceneError {
        SceneError::Text {
            path: self.source.to_path_buf(),
            line,
            reason: reason.into(),
        }
    }

    fn next(&mut self, what: &str) -> Result<Token<'a>, SceneError> {
        let token = self
            .tokens
            .next()
            .ok_or_else(|| self.err(self.line, format!("the text ends before {what}")))?;
        self.line = match token {
            Token::Word(l, _) | Token::Object(l, _) => l,
        };
        Ok(token)
    }

    fn word(&mut self, what: &str) -> Result<(usize, &'a str), SceneError> {
        match self.next(what)? {
            Token::Word(l, w) => Ok((l, w)),
            Token::Object(l, _) => {
                Err(self.err(l, format!("an object starts where {what} was expected")))
            }
        }
    }

    fn number(&mut self, what: &str) -> Result<f64, SceneError> {
        let (line, w) = self.word(what)?;
        match w.parse::<f64>() {
            Ok(v) if v.is_finite() => Ok(v),
            _ => Err(self.err(line, format!("{what}: '{w}' is not a finite number"))),
        }
    }

    fn count(&mut self, what: &str) -> Result<usize, SceneError> {
        let (line, w) = self.word(what)?;
        w.parse::<usize>()
            .map_err(|_| self.err(line, format!("{what}: '{w}' is not a count")))
    }

    fn numbers<const N: usize>(&mut self, what: &str) -> Result<[f64; N], SceneError> {
        let mut out = [0.0; N];
        for v in &mut out {
            *v = self.number(what)?;
        }
        Ok(out)
    }

    /// A position line and a quaternion (x y z w) line.
    fn pose(&mut self, what: &str) -> Result<Isometry3<f64>, SceneError> {
        let p = self.numbers::<3>(&format!("{what} position"))?;
        let q = self.numbers::<4>(&format!("{what} orientation"))?;
        let line = self.line;
        let rotation = quaternion_xyzw(q).map_err(|e| self.err(line, format!("{what}: {e}")))?;
        let position = finite3("position", p).map_err(|e| self.err(line, e))?;
        Ok(Isometry3::from_parts(
            Translation3::from(position),
            rotation,
        ))
    }

    /// One shape: its type word and sizes; a mesh may give several (its convex parts, where
    /// `mesh_parts` allows more than one).
    fn shapes(&mut self, id: &str, mesh_parts: &Decomposition) -> Result<Vec<Shape>, SceneError> {
        let (line, kind) = self.word("a shape type")?;
        let bad = |r: &Self, reason: String| r.err(line, format!("object '{id}': {reason}"));
        let shape = match kind {
            "box" => {
                let s = self.numbers::<3>("box sizes")?;
                Shape::Box {
                    half_extents: finite3("box sizes", s).map_err(|e| bad(self, e))? / 2.0,
                }
            }
            "sphere" => Shape::Sphere {
                radius: self.number("sphere radius")?,
            },
            "cylinder" => {
                let [radius, length] = self.numbers::<2>("cylinder radius and length")?;
                Shape::Cylinder {
                    radius,
                    half_length: length / 2.0,
                }
            }
            "mesh" => {
                let vertices = self.count("mesh vertex count")?;
                let triangles = self.count("mesh triangle count")?;
                let mut points = Vec::with_capacity(vertices);
                for _ in 0..vertices {
                    let [x, y, z] = self.numbers::<3>("a mesh vertex")?;
                    points.push(Point3::new(x, y, z));
                }
                let mut faces = Vec::with_capacity(triangles.min(1 << 20));
                for _ in 0..triangles {
                    let mut face = [0u32; 3];
                    for slot in &mut face {
                        let index = self.count("a mesh triangle's vertex index")?;
                        *slot = u32::try_from(index)
                            .ok()
                            .filter(|_| index < vertices)
                            .ok_or_else(|| {
                                self.err(
                                    self.line,
                                    format!(
                                        "object '{id}': triangle vertex index {index} of \
                                         {vertices} vertices"
                                    ),
                                )
                            })?;
                    }
                    faces.push(face);
                }
                let shapes = super::mesh_shapes(&points, &faces, mesh_parts)
                    .map_err(|e| bad(self, format!("mesh: {e}")))?;
                for shape in &shapes {
                    shape.validate().map_err(|e| bad(self, e))?;
                }
                return Ok(shapes);
            }
            "cone" | "plane" => {
                return Err(bad(
                    self,
                    format!("{kind} shapes are not supported (box, sphere, cylinder, mesh)"),
                ))
            }
            other => return Err(bad(self, format!("unknown shape type '{other}'"))),
        };
        shape.validate().map_err(|e| bad(self, e))?;
        Ok(vec![shape])
    }
}

/// Splits `text` (after its name line) into tokens.
fn tokens(text: &str) -> Vec<Token<'_>> {
    let mut out = Vec::new();
    for (k, line) in text.lines().enumerate().skip(1) {
        let trimmed = line.trim();
        if let Some(id) = trimmed.strip_prefix('*') {
            out.push(Token::Object(k + 1, id.trim()));
        } else {
            out.extend(trimmed.split_whitespace().map(|w| Token::Word(k + 1, w)));
        }
    }
    out
}

/// Parses a `.scene` text; errors name `source` and the line; meshes are split as `options`
/// say.
pub(crate) fn parse(
    text: &str,
    source: &Path,
    options: &super::SceneOptions,
) -> Result<Scene, SceneError> {
    // The current format has an object pose after each `*` line: several numbers on the
    // line that follows, where the older format has the shape count alone.
    let current = text
        .lines()
        .skip_while(|l| !l.trim_start().starts_with('*'))
        .nth(1)
        .is_some_and(|l| l.split_whitespace().count() > 1);
    let mut reader = Reader {
        tokens: tokens(text).into_iter(),
        source,
        line: 1,
    };
    let mut scene = Scene::new("");
    loop {
        let (line, id) = match reader.next("the end marker '.'")? {
            Token::Word(_, ".") => break,
            Token::Word(l, w) => {
                return Err(reader.err(
                    l,
                    format!("'{w}' where an object ('* id') or '.' was expected"),
                ))
            }
            Token::Object(l, id) => (l, id),
        };
        if id.is_empty() {
            return Err(reader.err(line, "an object without an id"));
        }
        let object_pose = if current {
            reader.pose(&format!("object '{id}'"))?
        } else {
            Isometry3::identity()
        };
        let n = reader.count(&format!("object '{id}': the shape count"))?;
        // Obstacles of the object so far (a mesh split into parts gives several).
        let mut made = 0usize;
        for k in 0..n {
            let shapes = reader.shapes(id, &options.mesh_parts)?;
            let pose = reader.pose(&format!("object '{id}' shape {k}"))?;
            reader.numbers::<4>(&format!("object '{id}' shape {k} colour"))?;
            for shape in shapes {
                let name = if made == 0 {
                    id.to_string()
                } else {
                    super::part_id(id, made)
                };
                made += 1;
                scene
                    .add(Obstacle {
                        id: name.clone(),
                        shape,
                        pose: object_pose * pose,
                    })
                    .map_err(|e| reader.err(line, format!("object '{name}': {e}")))?;
            }
        }
        if current {
            let subframes = reader.count(&format!("object '{id}': the subframe count"))?;
            for _ in 0..subframes {
                let (_, name) = reader.word("a subframe name")?;
                reader.pose(&format!("object '{id}' subframe '{name}'"))?;
            }
        }
    }
    if let Some(Token::Word(l, w) | Token::Object(l, w)) = reader.tokens.next() {
        return Err(reader.err(l, format!("'{w}' after the end marker '.'")));
    }
    Ok(scene)
}

/// A pose as the format's two lines.
fn pose_lines(out: &mut String, pose: &Isometry3<f64>) {
    let t = pose.translation.vector;
    let q = pose.rotation.quaternion();
    out.push_str(&format!(
        "{} {} {}\n{} {} {} {}\n",
        t.x, t.y, t.z, q.i, q.j, q.k, q.w
    ));
}

impl Scene {
    /// Parses MoveIt's `.scene` text (see the [module documentation](self)); errors name
    /// `source` and the line.
    pub fn from_moveit_text(text: &str, source: &Path) -> Result<Scene, SceneError> {
        parse(text, source, &super::SceneOptions::default())
    }

    /// The scene's obstacles as MoveIt's `.scene` text (current format) named `name`: one
    /// object per obstacle, its pose the obstacle's, one shape at the object's origin; a
    /// convex mesh as its hull's vertices and triangles. Numbers read back exactly. Carried
    /// objects are not written (the format has none).
    pub fn to_moveit_text(&self, name: &str) -> String {
        let mut out = format!("{}\n", name.lines().next().unwrap_or_default());
        for o in self.iter() {
            out.push_str(&format!("* {}\n", o.id));
            pose_lines(&mut out, &o.pose);
            out.push_str("1\n");
            match &o.shape {
                Shape::Box { half_extents: h } => {
                    out.push_str(&format!("box\n{} {} {}\n", 2.0 * h.x, 2.0 * h.y, 2.0 * h.z))
                }
                Shape::Sphere { radius } => out.push_str(&format!("sphere\n{radius}\n")),
                Shape::Cylinder {
                    radius,
                    half_length,
                } => out.push_str(&format!("cylinder\n{radius} {}\n", 2.0 * half_length)),
                Shape::ConvexMesh { polytope } => {
                    out.push_str(&format!(
                        "mesh\n{} {}\n",
                        polytope.vertices.len(),
                        polytope.faces.len()
                    ));
                    for v in &polytope.vertices {
                        out.push_str(&format!("{} {} {}\n", v.x, v.y, v.z));
                    }
                    for f in &polytope.faces {
                        out.push_str(&format!("{} {} {}\n", f[0], f[1], f[2]));
                    }
                }
            }
            pose_lines(&mut out, &Isometry3::identity());
            out.push_str("0 0 0 0\n0\n");
        }
        out.push_str(".\n");
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::robot::geometry::Polytope;
    use crate::scene::SceneOptions;
    use nalgebra::Vector3;

    /// The text parsed with the default options (meshes as hulls).
    fn parse(text: &str, source: &Path) -> Result<Scene, SceneError> {
        super::parse(text, source, &SceneOptions::default())
    }

    const CURRENT: &str = "cell
* table
0.5 0 0.2
0 0 0 1
1
box
1.2 0.8 0.04
0 0 0
0 0 0 1
0.5 0.5 0.5 1
0
* post
0 0 0
0 0 0.7071067811865476 0.7071067811865476
2
cylinder
0.05 0.6
0.3 0 0.3
0 0 0 1
0 0 0 0
sphere
0.1
0.3 0 0.7
0 0 0 1
0 0 0 0
1
top
0 0 0.8
0 0 0 1
.
";

    #[test]
    fn reads_the_current_format() {
        let s = parse(CURRENT, Path::new("cell.scene")).unwrap();
        assert_eq!(s.frame(), "");
        assert_eq!(s.len(), 3);
        let table = s.get("table").unwrap();
        assert_eq!(
            table.shape,
            Shape::Box {
                half_extents: Vector3::new(0.6, 0.4, 0.02)
            }
        );
        assert_eq!(table.pose.translation.vector, Vector3::new(0.5, 0.0, 0.2));
        let post = s.get("post").unwrap();
        assert_eq!(
            post.shape,
            Shape::Cylinder {
                radius: 0.05,
                half_length: 0.3
            }
        );
        // The object turned 90 degrees about z carries its shape's offset along x onto y.
        assert!((post.pose.translation.vector - Vector3::new(0.0, 0.3, 0.3)).norm() < 1e-12);
        let ball = s.get("post/1").unwrap();
        assert!((ball.pose.translation.vector - Vector3::new(0.0, 0.3, 0.7)).norm() < 1e-12);
    }

    #[test]
    fn reads_the_older_format_without_object_poses() {
        let old = "old\n* ball\n1\nsphere\n0.2\n1 2 3\n0 0 0 1\n0 0 0 0\n.\n";
        let s = parse(old, Path::new("old.scene")).unwrap();
        let ball = s.get("ball").unwrap();
        assert_eq!(ball.shape, Shape::Sphere { radius: 0.2 });
        assert_eq!(ball.pose.translation.vector, Vector3::new(1.0, 2.0, 3.0));
        assert!(parse("empty\n.\n", Path::new("e")).unwrap().is_empty());
    }

    #[test]
    fn writes_text_that_reads_back_exactly() {
        let mut s = parse(CURRENT, Path::new("cell.scene")).unwrap();
        let hull = Polytope::from_points(&[
            Point3::new(0.0, 0.0, 0.0),
            Point3::new(0.1, 0.0, 0.0),
            Point3::new(0.0, 0.1, 0.0),
            Point3::new(0.0, 0.0, 0.1),
        ])
        .unwrap();
        s.add(Obstacle {
            id: "wedge".into(),
            shape: Shape::ConvexMesh { polytope: hull },
            pose: Isometry3::translation(0.1, 0.2, 0.3),
        })
        .unwrap();
        let text = s.to_moveit_text("copy");
        assert!(looks_like_scene_text(&text));
        let back = parse(&text, Path::new("copy.scene")).unwrap();
        assert_eq!(back.len(), s.len());
        for o in s.iter() {
            let b = back.get(&o.id).unwrap();
            assert_eq!(b.pose, o.pose, "{}", o.id);
            match (&b.shape, &o.shape) {
                (Shape::ConvexMesh { polytope: p }, Shape::ConvexMesh { polytope: q }) => {
                    assert_eq!(p.vertices.len(), q.vertices.len())
                }
                (a, b) => assert_eq!(a, b, "{}", o.id),
            }
        }
    }

    #[test]
    fn errors_name_the_file_line_and_object() {
        let cases = [
            (
                "s\n* a\n1\ncone\n0.1 0.2\n0 0 0\n0 0 0 1\n0 0 0 0\n.\n",
                "line 4",
                "cone",
            ),
            (
                "s\n* a\n1\nbox\n1 x 1\n0 0 0\n0 0 0 1\n0 0 0 0\n.\n",
                "line 5",
                "'x'",
            ),
            (
                "s\n* a\n1\nsphere\n-1\n0 0 0\n0 0 0 1\n0 0 0 0\n.\n",
                "line 4",
                "radius",
            ),
            (
                "s\n* a\n1\nsphere\n0.1\n0 0 0\n0 0 0 0\n0 0 0 0\n.\n",
                "line 7",
                "quaternion",
            ),
            ("s\n* a\n1\nsphere\n0.1\n0 0 0\n", "line 6", "ends before"),
            (
                "s\n* a\n1\nsphere\n0.1\n0 0 0\n0 0 0 1\n0 0 0 0\n.\nmore\n",
                "line 10",
                "after",
            ),
            ("s\n*\n1\n.\n", "line 2", "without an id"),
            (
                "s\n* a\n1\nmesh\n3 1\n0 0 0\n1 0 0\n0 1 0\n0 1 5\n0 0 0\n0 0 0 1\n0 0 0 0\n.\n",
                "line 9",
                "index 5",
            ),
        ];
        for (text, line, needle) in cases {
            let e = parse(text, Path::new("bad.scene")).unwrap_err().to_string();
            assert!(e.starts_with(&format!("bad.scene: {line}: ")), "{e}");
            assert!(e.contains(needle), "{e}");
        }
    }
}
