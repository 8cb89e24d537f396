//! An open bin (a floor and four walls, no lid) as a triangle surface, for the concave mesh
//! tests; and where the bundled arm's tool goes into it.

use nalgebra::Point3;

/// Where the tool goes, pointing down, inside the bin.
pub const TOOL: [f64; 3] = [0.3, 0.3, 0.2];
/// The bin: inner half width, floor below the tool, wall tops above the tool (m).
pub const HALF: f64 = 0.13;
pub const BELOW: f64 = 0.08;
pub const ABOVE: f64 = 0.03;

/// An open bin's surface about the origin (a square floor of half width `half` at z = 0 and
/// four walls `height` high): its corners, and its five faces as quads of corner indices.
pub fn bin_surface(half: f64, height: f64) -> ([[f64; 3]; 8], [[usize; 4]; 5]) {
    let s = half;
    let p = [
        [-s, -s, 0.0],
        [s, -s, 0.0],
        [s, s, 0.0],
        [-s, s, 0.0],
        [-s, -s, height],
        [s, -s, height],
        [s, s, height],
        [-s, s, height],
    ];
    let quads = [
        [0, 3, 2, 1],
        [0, 1, 5, 4],
        [1, 2, 6, 5],
        [2, 3, 7, 6],
        [3, 0, 4, 7],
    ];
    (p, quads)
}

/// An ASCII STL of the bin's surface ([`bin_surface`]).
pub fn bin_stl(half: f64, height: f64) -> String {
    let (p, quads) = bin_surface(half, height);
    let mut out = String::from("solid bin\n");
    for [a, b, c, d] in quads {
        for t in [[a, b, c], [a, c, d]] {
            out.push_str("facet normal 0 0 0\nouter loop\n");
            for i in t {
                let [x, y, z] = p[i];
                out.push_str(&format!("vertex {x} {y} {z}\n"));
            }
            out.push_str("endloop\nendfacet\n");
        }
    }
    out.push_str("endsolid bin\n");
    out
}

/// The triangles of [`bin_surface`], two per face.
pub fn open_bin(half: f64, height: f64) -> Vec<[Point3<f64>; 3]> {
    let (p, quads) = bin_surface(half, height);
    let p = p.map(Point3::from);
    quads
        .iter()
        .flat_map(|&[a, b, c, d]| [[p[a], p[b], p[c]], [p[a], p[c], p[d]]])
        .collect()
}

/// The bin of the tests ([`HALF`], [`BELOW`] + [`ABOVE`] high): its triangles, and the
/// position of its floor's centre so that [`TOOL`] is inside it.
pub fn test_bin() -> (Vec<[Point3<f64>; 3]>, [f64; 3]) {
    let [x, y, z] = TOOL;
    (open_bin(HALF, BELOW + ABOVE), [x, y, z - BELOW])
}

/// The bin as MoveIt `.scene` text (one mesh object under the tool).
pub fn bin_scene_text() -> String {
    let (p, quads) = bin_surface(HALF, BELOW + ABOVE);
    let [x, y, z] = TOOL;
    let mut out = format!(
        "cell\n* bin\n{x} {y} {}\n0 0 0 1\n1\nmesh\n8 10\n",
        z - BELOW
    );
    for [a, b, c] in p {
        out.push_str(&format!("{a} {b} {c}\n"));
    }
    for [a, b, c, d] in quads {
        out.push_str(&format!("{a} {b} {c}\n{a} {c} {d}\n"));
    }
    out.push_str("0 0 0\n0 0 0 1\n0 0 0 0\n0\n.\n");
    out
}
