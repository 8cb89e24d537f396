//! Point cloud files, read into `Vec<Point3<f64>>`.
//!
//! Accepted formats, picked by the file extension (case-insensitive):
//! - `.pcd` (PCL): `DATA ascii` or `DATA binary` (little endian, packed per point); the
//!   `x`, `y`, `z` fields must be `TYPE F`, `SIZE 4` or `8`, `COUNT 1`; any other fields (of
//!   any count) are skipped. `VIEWPOINT tx ty tz qw qx qy qz` is the sensor pose and is
//!   applied to the points. `binary_compressed` is refused.
//! - `.ply`: `format ascii 1.0`, `binary_little_endian 1.0` or `binary_big_endian 1.0`; the
//!   `x`, `y`, `z` properties (`float`/`float32`/`double`/`float64`) of the `vertex` element.
//!   Other vertex properties and other elements are skipped; a list property in the vertex
//!   element is refused.
//! - `.xyz`, `.txt`, `.csv`: one point per line, the first three numbers separated by
//!   whitespace or commas; blank lines and lines starting with `#` are skipped.
//!
//! Points with a non-finite coordinate (NaN or infinite, as organised depth-camera clouds
//! contain) are skipped silently. Anything else malformed (truncated data, missing header
//! lines, counts that overflow) is an error, never a panic.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use nalgebra::{Isometry3, Point3, Quaternion, Translation3, UnitQuaternion};
use thiserror::Error;

/// Why a point cloud file could not be read; every message names the file.
#[derive(Debug, Error)]
pub enum CloudFileError {
    /// The file could not be read.
    #[error("cannot read point cloud '{path}': {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The contents are malformed or use an unsupported variant of the format.
    #[error("point cloud '{path}': {reason}")]
    Format {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// The extension names no supported format.
    #[error("point cloud '{path}': unknown extension (expected .pcd, .ply, .xyz, .txt or .csv)")]
    UnknownExtension {
        /// The file.
        path: PathBuf,
    },
}

/// Reads a point cloud file, the format picked by its extension (see the module docs).
pub fn read_point_cloud(path: &Path) -> Result<Vec<Point3<f64>>, CloudFileError> {
    let ext = path.extension().and_then(|e| e.to_str());
    let parse: fn(&[u8]) -> Parsed = match ext.map(str::to_ascii_lowercase).as_deref() {
        Some("pcd") => parse_pcd,
        Some("ply") => parse_ply,
        Some("xyz" | "txt" | "csv") => |b| parse_xyz(utf8(b, "the file")?),
        _ => return Err(CloudFileError::UnknownExtension { path: path.into() }),
    };
    let bytes = std::fs::read(path).map_err(|source| CloudFileError::Io {
        path: path.into(),
        source,
    })?;
    parse(&bytes).map_err(|reason| CloudFileError::Format {
        path: path.into(),
        reason,
    })
}

/// What the `parse_*` functions return.
type Parsed = Result<Vec<Point3<f64>>, String>;

const TRUNCATED: &str = "the data is truncated";

fn utf8<'a>(b: &'a [u8], what: &str) -> Result<&'a str, String> {
    std::str::from_utf8(b).map_err(|_| format!("{what} is not UTF-8 text"))
}

/// A binary scalar type (PLY's names; PCD's `F` 4 and 8 are `F32` and `F64`).
#[derive(Debug, Clone, Copy, PartialEq)]
enum Ty {
    I8,
    U8,
    I16,
    U16,
    I32,
    U32,
    F32,
    F64,
}

impl Ty {
    fn ply(name: &str) -> Result<Ty, String> {
        Ok(match name {
            "char" | "int8" => Ty::I8,
            "uchar" | "uint8" => Ty::U8,
            "short" | "int16" => Ty::I16,
            "ushort" | "uint16" => Ty::U16,
            "int" | "int32" => Ty::I32,
            "uint" | "uint32" => Ty::U32,
            "float" | "float32" => Ty::F32,
            "double" | "float64" => Ty::F64,
            _ => return Err(format!("unknown PLY type '{name}'")),
        })
    }

    fn size(self) -> usize {
        match self {
            Ty::I8 | Ty::U8 => 1,
            Ty::I16 | Ty::U16 => 2,
            Ty::I32 | Ty::U32 | Ty::F32 => 4,
            Ty::F64 => 8,
        }
    }

    /// Reads one value from the start of `b`; `None` when `b` is too short.
    fn read(self, b: &[u8], big: bool) -> Option<f64> {
        let n = self.size();
        let mut a = [0u8; 8];
        a[..n].copy_from_slice(b.get(..n)?);
        if big {
            a[..n].reverse();
        }
        let [b0, b1, b2, b3, ..] = a;
        Some(match self {
            Ty::I8 => f64::from(i8::from_le_bytes([b0])),
            Ty::U8 => f64::from(b0),
            Ty::I16 => f64::from(i16::from_le_bytes([b0, b1])),
            Ty::U16 => f64::from(u16::from_le_bytes([b0, b1])),
            Ty::I32 => f64::from(i32::from_le_bytes([b0, b1, b2, b3])),
            Ty::U32 => f64::from(u32::from_le_bytes([b0, b1, b2, b3])),
            Ty::F32 => f64::from(f32::from_le_bytes([b0, b1, b2, b3])),
            Ty::F64 => f64::from_le_bytes(a),
        })
    }
}

/// Pushes the point unless a coordinate is non-finite.
fn keep(out: &mut Vec<Point3<f64>>, [x, y, z]: [f64; 3]) {
    if x.is_finite() && y.is_finite() && z.is_finite() {
        out.push(Point3::new(x, y, z));
    }
}

/// The header lines (trimmed) up to and including the first whose first word is `last`, and
/// the offset of the data after it.
fn split_header<'a>(bytes: &'a [u8], last: &str) -> Result<(Vec<&'a str>, usize), String> {
    let (mut lines, mut pos) = (Vec::new(), 0);
    while pos < bytes.len() {
        let len = bytes[pos..].iter().position(|&b| b == b'\n');
        let end = len.map_or(bytes.len(), |n| pos + n);
        let line = utf8(
            &bytes[pos..end],
            &format!("header line {}", lines.len() + 1),
        )?
        .trim();
        pos = (end + 1).min(bytes.len());
        lines.push(line);
        if line.split_whitespace().next() == Some(last) {
            return Ok((lines, pos));
        }
    }
    Err(format!("the header has no '{last}' line"))
}

/// Parses every word as a `T`, naming `key` on failure.
fn numbers<T: std::str::FromStr>(key: &str, words: &[&str]) -> Result<Vec<T>, String> {
    let parse = |w: &&str| {
        w.parse()
            .map_err(|_| format!("{key} value '{w}' is not valid"))
    };
    words.iter().map(parse).collect()
}

/// Parses PCD bytes (see the module docs); the error is a reason, without the path.
pub fn parse_pcd(bytes: &[u8]) -> Result<Vec<Point3<f64>>, String> {
    const KEYS: &str = "VERSION FIELDS SIZE TYPE COUNT WIDTH HEIGHT VIEWPOINT POINTS DATA";
    let (header, body) = split_header(bytes, "DATA")?;
    let mut h = HashMap::new();
    for (i, line) in header.iter().enumerate() {
        let mut words = line.split_whitespace();
        match words.next() {
            Some(k) if KEYS.split(' ').any(|key| key == k) => {
                h.insert(k, words.collect::<Vec<_>>());
            }
            Some(k) if !k.starts_with('#') => {
                return Err(format!("header line {}: unknown keyword '{k}'", i + 1))
            }
            _ => {}
        }
    }
    let words = |k: &str| h.get(k).map_or(&[][..], |w| &w[..]);
    let one = |k: &str| match numbers::<usize>(k, words(k))?[..] {
        [] if !h.contains_key(k) => Ok(None),
        [n] => Ok(Some(n)),
        _ => Err(format!("{k} needs one value")),
    };
    let fields = words("FIELDS");
    let types = words("TYPE");
    let sizes: Vec<usize> = numbers("SIZE", words("SIZE"))?;
    let counts: Vec<usize> = if h.contains_key("COUNT") {
        numbers("COUNT", words("COUNT"))?
    } else {
        vec![1; fields.len()]
    };
    let n = fields.len();
    if sizes.len() != n || types.len() != n || counts.len() != n {
        let (s, t, c) = (sizes.len(), types.len(), counts.len());
        return Err(format!(
            "FIELDS, SIZE, TYPE, COUNT have {n}, {s}, {t}, {c} entries"
        ));
    }
    let wh = one("WIDTH")?.map(|w| one("HEIGHT").map(|h| w.checked_mul(h.unwrap_or(1))));
    let n_points = match (one("POINTS")?, wh.transpose()?) {
        (Some(p), Some(wh)) if wh != Some(p) => {
            return Err(format!("POINTS {p} differs from WIDTH * HEIGHT"))
        }
        (Some(p), _) => p,
        (None, Some(wh)) => wh.ok_or("WIDTH * HEIGHT overflows")?,
        (None, None) => return Err("the header has neither POINTS nor WIDTH".into()),
    };
    let pose = match numbers::<f64>("VIEWPOINT", words("VIEWPOINT"))?[..] {
        [] => Isometry3::identity(),
        [x, y, z, qw, qx, qy, qz] if [x, y, z].iter().all(|v| v.is_finite()) => {
            let q = Quaternion::new(qw, qx, qy, qz);
            if !(q.norm().is_finite() && q.norm() > 1e-9) {
                return Err("the VIEWPOINT quaternion is not a rotation".into());
            }
            Isometry3::from_parts(
                Translation3::new(x, y, z),
                UnitQuaternion::from_quaternion(q),
            )
        }
        _ => return Err("VIEWPOINT needs 7 finite values".into()),
    };
    // Byte and value offsets of each field within a point.
    let (mut step, mut n_vals, mut offsets) = (0usize, 0usize, Vec::with_capacity(n));
    for (&size, &count) in sizes.iter().zip(&counts) {
        offsets.push((step, n_vals));
        let next = size.checked_mul(count).and_then(|b| step.checked_add(b));
        step = next.ok_or("the point size overflows")?;
        n_vals = n_vals
            .checked_add(count)
            .ok_or("the value count overflows")?;
    }
    let mut xyz = [(0, 0, Ty::F32); 3];
    for (slot, name) in xyz.iter_mut().zip(["x", "y", "z"]) {
        let k = fields.iter().position(|f| *f == name);
        let k = k.ok_or_else(|| format!("FIELDS has no '{name}'"))?;
        let ty = match (types[k], sizes[k], counts[k]) {
            ("F", 4, 1) => Ty::F32,
            ("F", 8, 1) => Ty::F64,
            (t, s, c) => {
                return Err(format!(
                    "field '{name}' has TYPE {t} SIZE {s} COUNT {c}, not TYPE F SIZE 4|8 COUNT 1"
                ))
            }
        };
        *slot = (offsets[k].0, offsets[k].1, ty);
    }
    let mut out = Vec::new();
    match words("DATA") {
        ["ascii"] => {
            let mut found = 0usize;
            for (i, line) in utf8(&bytes[body..], "the ascii data")?.lines().enumerate() {
                let w: Vec<&str> = line.split_whitespace().collect();
                let ln = header.len() + i + 1;
                if w.first().is_none_or(|w| w.starts_with('#')) {
                    continue;
                } else if w.len() != n_vals {
                    return Err(format!("line {ln}: {} values, expected {n_vals}", w.len()));
                }
                let mut p = [0.0; 3];
                for (c, &(_, v, _)) in p.iter_mut().zip(&xyz) {
                    let bad = || format!("line {ln}: '{}' is not a number", w[v]);
                    *c = w[v].parse().map_err(|_| bad())?;
                }
                keep(&mut out, p);
                found += 1;
            }
            if found != n_points {
                return Err(format!(
                    "the data has {found} points, POINTS says {n_points}"
                ));
            }
        }
        ["binary"] => {
            let need = n_points
                .checked_mul(step)
                .ok_or("POINTS * point size overflows")?;
            let data = bytes[body..].get(..need).ok_or_else(|| {
                format!("{TRUNCATED}: {n_points} points of {step} bytes need {need} bytes")
            })?;
            out.reserve(n_points);
            for point in data.chunks_exact(step) {
                let mut p = [0.0; 3];
                for (c, &(b, _, ty)) in p.iter_mut().zip(&xyz) {
                    *c = point
                        .get(b..)
                        .and_then(|s| ty.read(s, false))
                        .ok_or(TRUNCATED)?;
                }
                keep(&mut out, p);
            }
        }
        ["binary_compressed"] => {
            return Err("DATA binary_compressed is not supported; save as ascii or binary".into())
        }
        other => return Err(format!("unsupported DATA {other:?}")),
    }
    out.iter_mut().for_each(|p| *p = pose * *p);
    Ok(out)
}

/// Where PLY values come from: ascii words, or binary bytes with their endianness.
enum Values<'a> {
    Text(std::str::SplitWhitespace<'a>),
    Binary(&'a [u8], bool),
}

impl Values<'_> {
    /// The next value, of type `ty` in binary data.
    fn next(&mut self, ty: Ty) -> Result<f64, String> {
        match self {
            Values::Text(words) => {
                let w = words.next().ok_or(TRUNCATED)?;
                w.parse().map_err(|_| format!("'{w}' is not a number"))
            }
            Values::Binary(data, big) => {
                let (head, rest) = data.split_at_checked(ty.size()).ok_or(TRUNCATED)?;
                *data = rest;
                ty.read(head, *big).ok_or_else(|| TRUNCATED.into())
            }
        }
    }
}

/// A PLY property: name, list length type (for a list) and value type.
type Property<'a> = (&'a str, Option<Ty>, Ty);

/// Parses PLY bytes (see the module docs); the error is a reason, without the path.
pub fn parse_ply(bytes: &[u8]) -> Result<Vec<Point3<f64>>, String> {
    let (header, body) = split_header(bytes, "end_header")?;
    if header.first() != Some(&"ply") {
        return Err("not a PLY file (the first line is not 'ply')".into());
    }
    let mut big = None;
    let mut elems: Vec<(&str, usize, Vec<Property>)> = Vec::new();
    for (i, line) in header.iter().enumerate().skip(1) {
        let at = |e: String| format!("header line {}: {e}", i + 1);
        let words: Vec<&str> = line.split_whitespace().collect();
        let prop = match words[..] {
            [] | ["comment" | "obj_info", ..] | ["end_header"] => None,
            ["format", f, "1.0"] => {
                big = Some(match f {
                    "ascii" => None,
                    "binary_little_endian" => Some(false),
                    "binary_big_endian" => Some(true),
                    _ => return Err(at(format!("unknown format '{f}'"))),
                });
                None
            }
            ["property", "list", c, t, name] => {
                Some((name, Some(Ty::ply(c).map_err(at)?), Ty::ply(t).map_err(at)?))
            }
            ["property", t, name] => Some((name, None, Ty::ply(t).map_err(at)?)),
            ["element", name, count] => {
                let bad = || at(format!("element count '{count}' is not valid"));
                elems.push((name, count.parse().map_err(|_| bad())?, Vec::new()));
                None
            }
            _ => return Err(at(format!("unexpected '{line}'"))),
        };
        if let Some(p) = prop {
            let e = elems
                .last_mut()
                .ok_or_else(|| at("property before any element".into()))?;
            e.2.push(p);
        }
    }
    let big = big.ok_or("the header has no 'format ... 1.0' line")?;
    let vi = elems.iter().position(|e| e.0 == "vertex");
    let vi = vi.ok_or("the header has no 'vertex' element")?;
    let (_, n_vertices, props) = &elems[vi];
    if let Some(p) = props.iter().find(|p| p.1.is_some()) {
        return Err(format!(
            "vertex property '{}' is a list, which is not supported",
            p.0
        ));
    }
    let mut xyz = [0usize; 3];
    for (slot, name) in xyz.iter_mut().zip(["x", "y", "z"]) {
        let k = props
            .iter()
            .position(|p| p.0 == name && matches!(p.2, Ty::F32 | Ty::F64));
        *slot = k.ok_or_else(|| format!("the vertex element has no float or double '{name}'"))?;
    }
    let mut values = match big {
        None => Values::Text(utf8(&bytes[body..], "the ascii data")?.split_whitespace()),
        Some(big) => Values::Binary(&bytes[body..], big),
    };
    // Elements before the vertices are skipped (each value read consumes data, so a huge
    // count fails when the data runs out); elements after them are never read.
    for (name, count, props) in elems[..vi].iter().filter(|e| !e.2.is_empty()) {
        for _ in 0..*count {
            for &(prop, list, ty) in props {
                let n = match list {
                    Some(t) => values.next(t)?,
                    None => 1.0,
                };
                if !(n >= 0.0 && n.fract() == 0.0) {
                    return Err(format!("element '{name}': list '{prop}' has length {n}"));
                }
                for _ in 0..n as u64 {
                    values.next(ty)?;
                }
            }
        }
    }
    // Every vertex takes at least 6 bytes (3 one-digit words), so this bounds the reservation.
    let mut out = Vec::with_capacity((*n_vertices).min(bytes.len() / 6));
    for _ in 0..*n_vertices {
        let mut p = [0.0; 3];
        for (k, &(_, _, ty)) in props.iter().enumerate() {
            let v = values.next(ty)?;
            if let Some(a) = xyz.iter().position(|&j| j == k) {
                p[a] = v;
            }
        }
        keep(&mut out, p);
    }
    Ok(out)
}

/// Parses XYZ text (see the module docs); the error names the 1-based line.
pub fn parse_xyz(text: &str) -> Result<Vec<Point3<f64>>, String> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let mut words = line
            .split(|c: char| c == ',' || c.is_whitespace())
            .filter(|w| !w.is_empty());
        let mut p = [0.0; 3];
        for (k, c) in p.iter_mut().enumerate() {
            let w = words
                .next()
                .ok_or_else(|| format!("line {}: {k} numbers, expected 3", i + 1))?;
            *c = w
                .parse()
                .map_err(|_| format!("line {}: '{w}' is not a number", i + 1))?;
        }
        keep(&mut out, p);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    type Parser = fn(&[u8]) -> Parsed;

    fn pcd(spec: &str, n: usize, data: &str) -> Vec<u8> {
        format!("# .PCD v0.7\nVERSION 0.7\n{spec}\nWIDTH {n}\nHEIGHT 1\nPOINTS {n}\nDATA {data}\n")
            .into_bytes()
    }

    fn pts(v: &[[f64; 3]]) -> Vec<Point3<f64>> {
        v.iter().map(|&[x, y, z]| Point3::new(x, y, z)).collect()
    }

    const BIN_SPEC: &str =
        "FIELDS x y z rgb normal\nSIZE 4 4 8 4 4\nTYPE F F F U F\nCOUNT 1 1 1 1 3";

    /// Binary points of `BIN_SPEC` (32 bytes each).
    fn bin_points(v: &[[f64; 3]]) -> Vec<u8> {
        let mut b = Vec::new();
        for &[x, y, z] in v {
            b.extend((x as f32).to_le_bytes());
            b.extend((y as f32).to_le_bytes());
            b.extend(z.to_le_bytes());
            b.extend(0x00ff_8040u32.to_le_bytes());
            for k in 0..3 {
                b.extend((k as f32 + 0.5).to_le_bytes());
            }
        }
        b
    }

    #[test]
    fn pcd_ascii_skips_extra_fields_and_nan_points() {
        let mut b = pcd(
            "FIELDS x rgb y desc z\nSIZE 4 4 4 4 4\nTYPE F F F F F\nCOUNT 1 1 1 3 1",
            3,
            "ascii",
        );
        b.extend(b"1 4.2e6 2 9 9 9 3\nnan 0 nan 1 2 3 nan\r\n-1 7 0.5 0 0 0 2.5\n");
        assert_eq!(
            parse_pcd(&b).unwrap(),
            pts(&[[1.0, 2.0, 3.0], [-1.0, 0.5, 2.5]])
        );
        // A value missing on a line is named by its line number.
        let mut b = pcd("FIELDS x y z\nSIZE 4 4 4\nTYPE F F F", 2, "ascii");
        b.extend(b"1 2 3\n4 5\n");
        assert!(parse_pcd(&b).unwrap_err().contains("line 11"));
    }

    #[test]
    fn pcd_binary_with_extra_fields_and_non_finite_points() {
        let v = [
            [1.5, -2.25, 3.125],
            [f64::NAN, 0.0, 0.0],
            [0.5, 0.25, -8.0],
            [0.0, 0.0, f64::INFINITY],
        ];
        let mut b = pcd(BIN_SPEC, 4, "binary");
        b.extend(bin_points(&v));
        assert_eq!(parse_pcd(&b).unwrap(), pts(&[v[0], v[2]]));
    }

    #[test]
    fn pcd_viewpoint_is_applied() {
        let h = std::f64::consts::FRAC_1_SQRT_2;
        let spec = format!("FIELDS x y z\nSIZE 4 4 4\nTYPE F F F\nVIEWPOINT 1 2 3 {h} 0 0 {h}");
        let mut b = pcd(&spec, 2, "ascii");
        b.extend(b"1 0 0\n0 0 1\n");
        let p = parse_pcd(&b).unwrap();
        // 90 degrees about z, then the translation.
        for (got, want) in p.iter().zip(pts(&[[1.0, 3.0, 3.0], [1.0, 2.0, 4.0]])) {
            assert!((got - want).norm() < 1e-9, "{got} vs {want}");
        }
    }

    #[test]
    fn pcd_malformed_input_is_an_error() {
        let err = |b: &[u8]| parse_pcd(b).unwrap_err();
        assert!(err(&pcd(BIN_SPEC, 1, "binary_compressed")).contains("binary_compressed"));
        let mut b = pcd(BIN_SPEC, 3, "binary");
        b.extend(&bin_points(&[[1.0; 3]; 3])[..90]);
        assert!(err(&b).contains("truncated"));
        // Huge and overflowing counts are refused before any allocation.
        assert!(err(&pcd(BIN_SPEC, 1_000_000_000_000_000, "binary")).contains("truncated"));
        assert!(err(&pcd(BIN_SPEC, usize::MAX, "binary")).contains("overflows"));
        assert!(err(b"FIELDS x y z\nSIZE 4 4 4\nTYPE F F F\nPOINTS 1\n").contains("DATA"));
        assert!(err(&pcd("FIELDS x y\nSIZE 4 4\nTYPE F F", 0, "ascii")).contains("'z'"));
        assert!(err(&pcd("FIELDS x y z\nSIZE 4 4 2\nTYPE F F I", 0, "ascii")).contains("'z'"));
        assert!(err(&pcd("FIELDS x y z\nSIZE 4 4 4\nTYPE F F F", 0, "zip")).contains("zip"));
        assert!(err(b"FIELDS x\nSIZE 4\nTYPE F\nWIDTH many\nDATA ascii\n").contains("many"));
        assert!(err(b"FIELDS x \xff\nDATA ascii\n").contains("UTF-8"));
    }

    /// A binary PLY file: header lines then the data.
    fn ply(format: &str, body: &str, data: &[u8]) -> Vec<u8> {
        let mut b =
            format!("ply\nformat {format} 1.0\ncomment test\n{body}end_header\n").into_bytes();
        b.extend(data);
        b
    }

    #[test]
    fn ply_ascii_skips_other_elements_and_properties() {
        let head = "element material 2\nproperty list uchar int ids\nproperty float shine\n\
            element vertex 3\nproperty float x\nproperty uchar red\nproperty float y\nproperty double z\n\
            element face 1\nproperty list uchar int vertex_indices\n";
        let data = b"3 1 2 3 0.5\n0 0.5\n1 255 2 3\nnan 0 0 0\n-1 0 -2 -3.5\n3 0 1 2\n";
        let want = pts(&[[1.0, 2.0, 3.0], [-1.0, -2.0, -3.5]]);
        assert_eq!(parse_ply(&ply("ascii", head, data)).unwrap(), want);
        let cut = &data[..data.len() - 14];
        assert!(parse_ply(&ply("ascii", head, cut))
            .unwrap_err()
            .contains("truncated"));
    }

    #[test]
    fn ply_binary_little_endian_with_uchar_property() {
        let head = "element camera 1\nproperty float k\nproperty uchar id\n\
            element vertex 2\nproperty float x\nproperty float y\nproperty float z\nproperty uchar red\n\
            element face 1\nproperty list uchar int vertex_indices\n";
        let mut data = 2.5f32.to_le_bytes().to_vec();
        data.push(7);
        for (v, red) in [([1.5f32, -2.0, 0.25], 200u8), ([4.0, 5.0, 6.0], 1)] {
            v.iter().for_each(|c| data.extend(c.to_le_bytes()));
            data.push(red);
        }
        let want = pts(&[[1.5, -2.0, 0.25], [4.0, 5.0, 6.0]]);
        assert_eq!(
            parse_ply(&ply("binary_little_endian", head, &data)).unwrap(),
            want
        );
        let err = parse_ply(&ply("binary_little_endian", head, &data[..20])).unwrap_err();
        assert!(err.contains("truncated"), "{err}");
        let huge = head.replace("vertex 2", "vertex 1000000000000000");
        assert!(parse_ply(&ply("binary_little_endian", &huge, &data)).is_err());
    }

    #[test]
    fn ply_binary_big_endian_double_after_a_list_element() {
        let head = "element tag 2\nproperty list uchar short idx\n\
            element vertex 2\nproperty double x\nproperty double y\nproperty double z\nproperty short i\n";
        let mut data = vec![2, 0, 1, 0, 2, 0];
        for v in [[0.1f64, 0.2, 0.3], [f64::NAN, 1.0, 1.0]] {
            v.iter().for_each(|c| data.extend(c.to_be_bytes()));
            data.extend((-5i16).to_be_bytes());
        }
        let got = parse_ply(&ply("binary_big_endian", head, &data)).unwrap();
        assert_eq!(got, pts(&[[0.1, 0.2, 0.3]]));
    }

    #[test]
    fn ply_malformed_input_is_an_error() {
        let err = |head: &str| parse_ply(&ply("binary_little_endian", head, &[0; 64])).unwrap_err();
        let list = "element vertex 1\nproperty float x\nproperty float y\nproperty float z\n\
            property list uchar int n\n";
        assert!(err(list).contains("list"));
        assert!(err("element vertex 1\nproperty float x\nproperty float y\n").contains("'z'"));
        assert!(err("element vertex 1\nproperty half x\n").contains("half"));
        assert!(err("element face 1\n").contains("vertex"));
        assert!(parse_ply(b"ply\nformat ascii 1.0\nelement vertex 1\n")
            .unwrap_err()
            .contains("end_header"));
        assert!(parse_ply(b"solid\nend_header\n")
            .unwrap_err()
            .contains("PLY"));
    }

    #[test]
    fn xyz_commas_comments_and_bad_lines() {
        let text = "# x y z\n\n1,2,3\n 4 5 6 7\n7.5, -1 ,2e1\nnan 1 2\n";
        let want = pts(&[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.5, -1.0, 20.0]]);
        assert_eq!(parse_xyz(text).unwrap(), want);
        assert!(parse_xyz("1 2 3\n\n1 2\n")
            .unwrap_err()
            .starts_with("line 3:"));
        let e = parse_xyz("1 2 3\n1 2 x\n").unwrap_err();
        assert!(e.starts_with("line 2:") && e.contains("'x'"), "{e}");
    }

    #[test]
    fn read_point_cloud_picks_the_format_and_names_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let good = dir.path().join("cloud.XYZ");
        std::fs::write(&good, "1 2 3\n").unwrap();
        assert_eq!(read_point_cloud(&good).unwrap(), pts(&[[1.0, 2.0, 3.0]]));
        let bad = dir.path().join("bad.pcd");
        std::fs::write(&bad, "garbage\n").unwrap();
        let e = read_point_cloud(&bad).unwrap_err();
        assert!(matches!(e, CloudFileError::Format { .. }));
        assert!(e.to_string().contains(&bad.display().to_string()), "{e}");
        let missing = dir.path().join("none.ply");
        let e = read_point_cloud(&missing).unwrap_err();
        assert!(matches!(e, CloudFileError::Io { .. }) && e.to_string().contains("none.ply"));
        let e = read_point_cloud(&dir.path().join("mesh.obj")).unwrap_err();
        assert!(matches!(e, CloudFileError::UnknownExtension { .. }));
        assert!(e.to_string().contains("mesh.obj") && e.to_string().contains(".pcd"));
    }

    #[test]
    fn truncated_or_damaged_inputs_never_panic() {
        let mut pcd_bin = pcd(BIN_SPEC, 2, "binary");
        pcd_bin.extend(bin_points(&[[1.0, 2.0, 3.0]; 2]));
        let mut pcd_txt = pcd(
            "FIELDS x y z n\nSIZE 4 4 4 4\nTYPE F F F F\nCOUNT 1 1 1 2",
            1,
            "ascii",
        );
        pcd_txt.extend(b"1 2 3 4 5\n");
        let head = "element t 1\nproperty list uchar int i\nelement vertex 1\n\
            property float x\nproperty float y\nproperty float z\n";
        let ply_bin = ply(
            "binary_big_endian",
            head,
            &[1, 0, 0, 0, 9, 63, 128, 0, 0, 64, 0, 0, 0, 64, 64, 0, 0],
        );
        let ply_txt = ply("ascii", head, b"2 7 8\n1 2 3\n");
        let inputs: [(_, Parser, _); 4] = [
            (pcd_bin, parse_pcd, 2),
            (pcd_txt, parse_pcd, 1),
            (ply_bin, parse_ply, 1),
            (ply_txt, parse_ply, 1),
        ];
        for (input, parse, n) in inputs {
            assert_eq!(parse(&input).unwrap().len(), n);
            for cut in 0..input.len() {
                let _ = parse(&input[..cut]);
                for byte in [0, b' ', b'\n', b'9', b'-', 0xff] {
                    let mut damaged = input.clone();
                    damaged[cut] = byte;
                    let _ = parse(&damaged);
                }
            }
        }
    }
}
