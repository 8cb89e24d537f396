//! `sensor_msgs/PointCloud2` → points: the `x`, `y`, `z` fields of every point (FLOAT32 or
//! FLOAT64, either byte order), rows of `row_step` bytes, points of `point_step`.

use nalgebra::Point3;
use r2r::sensor_msgs::msg::{PointCloud2, PointField};

/// `PointField.FLOAT32`.
const FLOAT32: u8 = 7;
/// `PointField.FLOAT64`.
const FLOAT64: u8 = 8;

/// Where one coordinate sits in a point and how wide it is.
struct Coordinate {
    offset: usize,
    wide: bool,
}

fn coordinate(fields: &[PointField], name: &str, point_step: usize) -> Result<Coordinate, String> {
    let f = fields.iter().find(|f| f.name == name).ok_or_else(|| {
        let names: Vec<&str> = fields.iter().map(|f| f.name.as_str()).collect();
        format!("no field '{name}' (fields: {names:?})")
    })?;
    let wide = match f.datatype {
        FLOAT32 => false,
        FLOAT64 => true,
        other => {
            return Err(format!(
                "field '{name}' has datatype {other}; expected 7 (FLOAT32) or 8 (FLOAT64)"
            ))
        }
    };
    let offset = usize::try_from(f.offset).map_err(|_| format!("field '{name}': bad offset"))?;
    let size = if wide { 8 } else { 4 };
    if offset.checked_add(size).is_none_or(|end| end > point_step) {
        return Err(format!(
            "field '{name}' at offset {offset} does not fit point_step {point_step}"
        ));
    }
    Ok(Coordinate { offset, wide })
}

fn read(bytes: &[u8], c: &Coordinate, big_endian: bool) -> f64 {
    let at = |n: usize| bytes.get(c.offset..c.offset + n);
    if c.wide {
        let b: [u8; 8] = at(8).and_then(|s| s.try_into().ok()).unwrap_or([0; 8]);
        if big_endian {
            f64::from_be_bytes(b)
        } else {
            f64::from_le_bytes(b)
        }
    } else {
        let b: [u8; 4] = at(4).and_then(|s| s.try_into().ok()).unwrap_or([0; 4]);
        f64::from(if big_endian {
            f32::from_be_bytes(b)
        } else {
            f32::from_le_bytes(b)
        })
    }
}

/// The points of a cloud message in its frame (not-finite ones included; the scene's cloud
/// code drops them). A message whose fields, steps or data length do not add up is an error
/// saying what.
pub fn cloud_points(msg: &PointCloud2) -> Result<Vec<Point3<f64>>, String> {
    let usize_of = |v: u32, what: &str| usize::try_from(v).map_err(|_| format!("bad {what}"));
    let (width, height) = (
        usize_of(msg.width, "width")?,
        usize_of(msg.height, "height")?,
    );
    let point_step = usize_of(msg.point_step, "point_step")?;
    let row_step = usize_of(msg.row_step, "row_step")?;
    let coords = [
        coordinate(&msg.fields, "x", point_step)?,
        coordinate(&msg.fields, "y", point_step)?,
        coordinate(&msg.fields, "z", point_step)?,
    ];
    if width.checked_mul(point_step).is_none_or(|w| w > row_step) {
        return Err(format!(
            "row_step {row_step} is less than width {width} x point_step {point_step}"
        ));
    }
    let needed = row_step
        .checked_mul(height)
        .ok_or_else(|| format!("height {height} x row_step {row_step} overflows"))?;
    if msg.data.len() < needed {
        return Err(format!(
            "data has {} bytes; height {height} x row_step {row_step} needs {needed}",
            msg.data.len()
        ));
    }
    let mut points = Vec::with_capacity(width * height);
    for row in msg.data.chunks(row_step.max(1)).take(height) {
        for point in row.chunks(point_step.max(1)).take(width) {
            let [x, y, z] = [0, 1, 2].map(|i| read(point, &coords[i], msg.is_bigendian));
            points.push(Point3::new(x, y, z));
        }
    }
    Ok(points)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn field(name: &str, offset: u32, datatype: u8) -> PointField {
        PointField {
            name: name.into(),
            offset,
            datatype,
            count: 1,
        }
    }

    /// An organized 2 x 2 cloud of x y z (FLOAT32) and an rgb float, rows padded by 4 bytes.
    fn cloud(big_endian: bool) -> (PointCloud2, Vec<[f32; 3]>) {
        let pts = vec![
            [0.5, -1.0, 2.0],
            [1.5, 0.25, -3.0],
            [f32::NAN, 0.0, 0.0],
            [4.0, 5.0, 6.0],
        ];
        let mut data = Vec::new();
        for (i, p) in pts.iter().enumerate() {
            for v in p.iter().chain([7.0f32].iter()) {
                data.extend(if big_endian {
                    v.to_be_bytes()
                } else {
                    v.to_le_bytes()
                });
            }
            if i % 2 == 1 {
                data.extend([0u8; 4]);
            }
        }
        let msg = PointCloud2 {
            height: 2,
            width: 2,
            fields: vec![
                field("x", 0, FLOAT32),
                field("y", 4, FLOAT32),
                field("z", 8, FLOAT32),
                field("rgb", 12, FLOAT32),
            ],
            is_bigendian: big_endian,
            point_step: 16,
            row_step: 36,
            data,
            ..Default::default()
        };
        (msg, pts)
    }

    #[test]
    fn points_are_read_in_either_byte_order() {
        for big in [false, true] {
            let (msg, pts) = cloud(big);
            let got = cloud_points(&msg).unwrap();
            assert_eq!(got.len(), 4);
            for (g, p) in got.iter().zip(&pts) {
                for k in 0..3 {
                    let want = f64::from(p[k]);
                    assert!(
                        g[k] == want || (want.is_nan() && g[k].is_nan()),
                        "{g} {p:?}"
                    );
                }
            }
        }
    }

    #[test]
    fn doubles_are_read() {
        let mut data = Vec::new();
        for v in [1.25f64, -2.5, 1e-3] {
            data.extend(v.to_le_bytes());
        }
        let msg = PointCloud2 {
            height: 1,
            width: 1,
            fields: vec![
                field("z", 16, FLOAT64),
                field("x", 0, FLOAT64),
                field("y", 8, FLOAT64),
            ],
            point_step: 24,
            row_step: 24,
            data,
            ..Default::default()
        };
        assert_eq!(
            cloud_points(&msg).unwrap(),
            vec![Point3::new(1.25, -2.5, 1e-3)]
        );
    }

    #[test]
    fn malformed_clouds_are_named() {
        let (good, _) = cloud(false);
        type Change = fn(&mut PointCloud2);
        let cases: [(Change, &str); 6] = [
            (|m| m.fields.retain(|f| f.name != "y"), "no field 'y'"),
            (|m| m.fields[2].datatype = 5, "datatype 5"),
            (|m| m.fields[0].offset = 14, "point_step"),
            (|m| m.row_step = 20, "row_step 20"),
            (|m| m.data.truncate(50), "needs 72"),
            (|m| m.height = u32::MAX, "needs"),
        ];
        for (change, words) in cases {
            let mut m = good.clone();
            change(&mut m);
            match cloud_points(&m) {
                Err(e) => assert!(e.contains(words), "{e} / {words}"),
                Ok(p) => panic!("accepted {} points for '{words}'", p.len()),
            }
        }
    }
}
