//! A tiny RGB rasterizer (lines, filled rectangles, circles) and PNG output, enough to draw
//! projections of scenes, roadmaps and paths.

use std::io::{BufWriter, Write};
use std::path::Path;

/// An RGB colour.
pub type Rgb = [u8; 3];

/// An RGB image in memory, row-major, origin at the top left.
#[derive(Clone, Debug, PartialEq)]
pub struct Canvas {
    width: u32,
    height: u32,
    pixels: Vec<u8>,
    /// Drawing is limited to this rectangle (inclusive corners), when set.
    clip: Option<(i64, i64, i64, i64)>,
}

impl Canvas {
    /// A `width x height` canvas filled with `background`.
    pub fn new(width: u32, height: u32, background: Rgb) -> Self {
        let n = width as usize * height as usize;
        let mut pixels = Vec::with_capacity(n * 3);
        for _ in 0..n {
            pixels.extend_from_slice(&background);
        }
        Self {
            width,
            height,
            pixels,
            clip: None,
        }
    }

    /// Limits drawing to the rectangle from `(x0, y0)` to `(x1, y1)` (inclusive); `None`
    /// draws on the whole canvas.
    pub fn set_clip(&mut self, clip: Option<(i64, i64, i64, i64)>) {
        self.clip = clip;
    }

    /// Width in pixels.
    pub fn width(&self) -> u32 {
        self.width
    }

    /// Height in pixels.
    pub fn height(&self) -> u32 {
        self.height
    }

    /// The colour at `(x, y)`, `None` outside the canvas.
    pub fn get(&self, x: i64, y: i64) -> Option<Rgb> {
        let i = self.index(x, y)?;
        Some([self.pixels[i], self.pixels[i + 1], self.pixels[i + 2]])
    }

    fn index(&self, x: i64, y: i64) -> Option<usize> {
        if x < 0 || y < 0 || x >= i64::from(self.width) || y >= i64::from(self.height) {
            return None;
        }
        Some((y as usize * self.width as usize + x as usize) * 3)
    }

    /// Paints one pixel (ignored outside the canvas and the clip rectangle).
    pub fn set(&mut self, x: i64, y: i64, c: Rgb) {
        self.blend(x, y, c, 1.0);
    }

    /// Mixes `c` into one pixel with opacity `alpha` in `[0, 1]` (ignored outside the canvas
    /// and the clip rectangle).
    pub fn blend(&mut self, x: i64, y: i64, c: Rgb, alpha: f64) {
        if let Some((x0, y0, x1, y1)) = self.clip {
            if x < x0 || x > x1 || y < y0 || y > y1 {
                return;
            }
        }
        if let Some(i) = self.index(x, y) {
            let a = alpha.clamp(0.0, 1.0);
            for (k, &ck) in c.iter().enumerate() {
                let old = f64::from(self.pixels[i + k]);
                self.pixels[i + k] = (old + a * (f64::from(ck) - old)).round() as u8;
            }
        }
    }

    /// Fills the rectangle with corners `(x0, y0)` and `(x1, y1)` (inclusive, any order).
    pub fn fill_rect(&mut self, x0: i64, y0: i64, x1: i64, y1: i64, c: Rgb) {
        let (xa, xb) = (x0.min(x1).max(0), x0.max(x1).min(i64::from(self.width) - 1));
        let (ya, yb) = (
            y0.min(y1).max(0),
            y0.max(y1).min(i64::from(self.height) - 1),
        );
        for y in ya..=yb {
            for x in xa..=xb {
                self.set(x, y, c);
            }
        }
    }

    /// Outlines the rectangle with corners `(x0, y0)` and `(x1, y1)`.
    pub fn rect_outline(&mut self, x0: i64, y0: i64, x1: i64, y1: i64, c: Rgb) {
        self.line(x0, y0, x1, y0, c);
        self.line(x1, y0, x1, y1, c);
        self.line(x1, y1, x0, y1, c);
        self.line(x0, y1, x0, y0, c);
    }

    /// A one-pixel line from `(x0, y0)` to `(x1, y1)` (Bresenham); the part outside the canvas
    /// is skipped. Absurdly long lines are clipped to a box around the canvas first.
    pub fn line(&mut self, x0: i64, y0: i64, x1: i64, y1: i64, c: Rgb) {
        let lim = 4 * i64::from(self.width.max(self.height)) + 16;
        if [x0, y0, x1, y1].iter().any(|v| v.abs() > lim) {
            return;
        }
        let (dx, dy) = ((x1 - x0).abs(), -(y1 - y0).abs());
        let (sx, sy) = (if x0 < x1 { 1 } else { -1 }, if y0 < y1 { 1 } else { -1 });
        let (mut x, mut y, mut err) = (x0, y0, dx + dy);
        loop {
            self.set(x, y, c);
            if x == x1 && y == y1 {
                break;
            }
            let e2 = 2 * err;
            if e2 >= dy {
                err += dy;
                x += sx;
            }
            if e2 <= dx {
                err += dx;
                y += sy;
            }
        }
    }

    /// A line `width` pixels thick (a square brush along the line).
    pub fn thick_line(&mut self, x0: i64, y0: i64, x1: i64, y1: i64, width: i64, c: Rgb) {
        let r = (width.max(1) - 1) / 2;
        for ox in -r..=r {
            for oy in -r..=r {
                self.line(x0 + ox, y0 + oy, x1 + ox, y1 + oy, c);
            }
        }
    }

    /// A filled disc of radius `r` pixels about `(cx, cy)` with opacity `alpha`.
    pub fn fill_circle(&mut self, cx: i64, cy: i64, r: i64, c: Rgb, alpha: f64) {
        let r = r.clamp(0, 4 * i64::from(self.width.max(self.height)));
        for y in -r..=r {
            for x in -r..=r {
                if x * x + y * y <= r * r {
                    self.blend(cx + x, cy + y, c, alpha);
                }
            }
        }
    }

    /// Fills the convex hull of `points` (pixel coordinates, any order) with opacity `alpha`.
    pub fn fill_convex(&mut self, points: &[(f64, f64)], c: Rgb, alpha: f64) {
        let hull = convex_hull(points);
        if hull.len() < 3 {
            for w in hull.windows(2) {
                let (a, b) = (w[0], w[1]);
                self.line(a.0 as i64, a.1 as i64, b.0 as i64, b.1 as i64, c);
            }
            if let Some(p) = hull.first() {
                self.set(p.0.round() as i64, p.1.round() as i64, c);
            }
            return;
        }
        let lim = 4.0 * f64::from(self.width.max(self.height));
        let fold = |f: fn(f64, f64) -> f64, init: f64, k: usize| {
            hull.iter()
                .map(|p| if k == 0 { p.0 } else { p.1 })
                .fold(init, f)
                .clamp(-lim, lim)
        };
        let (x0, x1) = (
            fold(f64::min, f64::INFINITY, 0),
            fold(f64::max, f64::NEG_INFINITY, 0),
        );
        let (y0, y1) = (
            fold(f64::min, f64::INFINITY, 1),
            fold(f64::max, f64::NEG_INFINITY, 1),
        );
        let xa = (x0.floor() as i64).max(0);
        let xb = (x1.ceil() as i64).min(i64::from(self.width) - 1);
        let ya = (y0.floor() as i64).max(0);
        let yb = (y1.ceil() as i64).min(i64::from(self.height) - 1);
        for y in ya..=yb {
            for x in xa..=xb {
                let (px, py) = (x as f64, y as f64);
                // The hull is counter-clockwise: inside is left of (or on) every edge.
                let inside = (0..hull.len()).all(|i| {
                    let a = hull[i];
                    let b = hull[(i + 1) % hull.len()];
                    (b.0 - a.0) * (py - a.1) - (b.1 - a.1) * (px - a.0) >= -0.5
                });
                if inside {
                    self.blend(x, y, c, alpha);
                }
            }
        }
    }

    /// The PNG encoding of the canvas (8-bit RGB).
    pub fn encode_png<W: Write>(&self, out: W) -> Result<(), png::EncodingError> {
        let mut enc = png::Encoder::new(out, self.width, self.height);
        enc.set_color(png::ColorType::Rgb);
        enc.set_depth(png::BitDepth::Eight);
        let mut w = enc.write_header()?;
        w.write_image_data(&self.pixels)?;
        w.finish()
    }

    /// Writes the canvas as a PNG file: to a temporary file next to `path`, then renamed, so
    /// that a reader never sees half a picture.
    pub fn write_png(&self, path: &Path) -> Result<(), String> {
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "picture.png".into());
        let tmp = path.with_file_name(format!(".{name}.tmp-{}", std::process::id()));
        let result = (|| {
            let file = std::fs::File::create(&tmp).map_err(|e| e.to_string())?;
            let mut w = BufWriter::new(file);
            self.encode_png(&mut w).map_err(|e| e.to_string())?;
            w.flush().map_err(|e| e.to_string())?;
            std::fs::rename(&tmp, path).map_err(|e| e.to_string())
        })();
        if result.is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
        result.map_err(|e| format!("cannot write {}: {e}", path.display()))
    }
}

/// Convex hull of finite points (Andrew's monotone chain), counter-clockwise in a frame
/// with y up (clockwise on screen); collinear points dropped.
pub fn convex_hull(points: &[(f64, f64)]) -> Vec<(f64, f64)> {
    let mut p: Vec<(f64, f64)> = points
        .iter()
        .copied()
        .filter(|q| q.0.is_finite() && q.1.is_finite())
        .collect();
    p.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.total_cmp(&b.1)));
    p.dedup();
    if p.len() < 3 {
        return p;
    }
    let cross = |o: (f64, f64), a: (f64, f64), b: (f64, f64)| {
        (a.0 - o.0) * (b.1 - o.1) - (a.1 - o.1) * (b.0 - o.0)
    };
    let mut hull: Vec<(f64, f64)> = Vec::with_capacity(2 * p.len());
    for pass in 0..2 {
        let start = hull.len();
        let iter: Box<dyn Iterator<Item = &(f64, f64)>> = if pass == 0 {
            Box::new(p.iter())
        } else {
            Box::new(p.iter().rev())
        };
        for &q in iter {
            while hull.len() >= start + 2
                && cross(hull[hull.len() - 2], hull[hull.len() - 1], q) <= 0.0
            {
                hull.pop();
            }
            hull.push(q);
        }
        hull.pop();
    }
    hull
}

/// A panel of a canvas showing the world rectangle `[u_min, u_max] x [v_min, v_max]` with one
/// scale on both axes (u to the right, v up).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct View {
    /// Left pixel of the panel.
    pub x0: i64,
    /// Top pixel of the panel.
    pub y0: i64,
    /// Panel width in pixels.
    pub width: i64,
    /// Panel height in pixels.
    pub height: i64,
    /// Smallest world u shown.
    pub u_min: f64,
    /// Smallest world v shown.
    pub v_min: f64,
    /// Pixels per world unit.
    pub scale: f64,
}

impl View {
    /// A view of the world rectangle fitted (centred, equal scale) into the panel.
    pub fn fit(x0: i64, y0: i64, width: i64, height: i64, u: (f64, f64), v: (f64, f64)) -> Self {
        let du = (u.1 - u.0).max(1e-9);
        let dv = (v.1 - v.0).max(1e-9);
        let scale = (width as f64 / du).min(height as f64 / dv);
        // Centre the world rectangle in the panel.
        let u_min = u.0 - (width as f64 / scale - du) / 2.0;
        let v_min = v.0 - (height as f64 / scale - dv) / 2.0;
        Self {
            x0,
            y0,
            width,
            height,
            u_min,
            v_min,
            scale,
        }
    }

    /// Pixel of world point `(u, v)`.
    pub fn px(&self, u: f64, v: f64) -> (i64, i64) {
        let x = self.x0 as f64 + (u - self.u_min) * self.scale;
        let y = self.y0 as f64 + self.height as f64 - (v - self.v_min) * self.scale;
        let clamp = |t: f64| {
            if t.is_finite() {
                t.round().clamp(-1e7, 1e7) as i64
            } else {
                -10_000_000
            }
        };
        (clamp(x), clamp(y))
    }

    /// A world length in pixels.
    pub fn len(&self, d: f64) -> i64 {
        (d * self.scale).round().clamp(0.0, 1e7) as i64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_paint_the_expected_pixels() {
        let mut c = Canvas::new(20, 10, [255; 3]);
        c.line(0, 0, 19, 9, [0; 3]);
        assert_eq!(c.get(0, 0), Some([0; 3]));
        assert_eq!(c.get(19, 9), Some([0; 3]));
        assert_eq!(c.get(19, 0), Some([255; 3]));
        c.fill_rect(2, 2, 4, 4, [1, 2, 3]);
        assert_eq!(c.get(3, 3), Some([1, 2, 3]));
        assert_eq!(c.get(5, 5), Some([255; 3]));
        c.fill_circle(15, 3, 2, [9; 3], 1.0);
        assert_eq!(c.get(15, 1), Some([9; 3]));
        assert_eq!(c.get(13, 1), Some([255; 3]));
        c.blend(0, 9, [0; 3], 0.5);
        assert_eq!(c.get(0, 9), Some([128; 3]));
        c.set_clip(Some((0, 0, 9, 9)));
        c.set(12, 2, [0; 3]);
        assert_eq!(c.get(12, 2), Some([255; 3]));
        c.set_clip(None);
        // Off-canvas drawing is ignored, not a panic.
        c.line(-50, -50, 100, 100, [7; 3]);
        c.fill_rect(-5, -5, 100, 100, [8; 3]);
        assert_eq!(c.get(20, 0), None);
    }

    #[test]
    fn convex_fill_covers_the_inside_only() {
        let mut c = Canvas::new(20, 20, [255; 3]);
        // A square given with an interior point and in scrambled order.
        c.fill_convex(
            &[
                (15.0, 5.0),
                (5.0, 5.0),
                (10.0, 10.0),
                (5.0, 15.0),
                (15.0, 15.0),
            ],
            [0; 3],
            1.0,
        );
        assert_eq!(c.get(10, 10), Some([0; 3]));
        assert_eq!(c.get(5, 5), Some([0; 3]));
        assert_eq!(c.get(15, 15), Some([0; 3]));
        assert_eq!(c.get(3, 10), Some([255; 3]));
        assert_eq!(c.get(17, 10), Some([255; 3]));
        assert_eq!(convex_hull(&[(0.0, 0.0), (1.0, 0.0), (2.0, 0.0)]).len(), 2);
    }

    #[test]
    fn view_maps_v_up_and_keeps_the_scale_equal() {
        let v = View::fit(0, 0, 200, 100, (0.0, 2.0), (0.0, 1.0));
        assert_eq!(v.px(0.0, 0.0), (0, 100));
        assert_eq!(v.px(2.0, 1.0), (200, 0));
        assert_eq!(v.len(1.0), 100);
    }

    #[test]
    fn png_has_signature_and_size() {
        let c = Canvas::new(7, 5, [10, 20, 30]);
        let mut bytes = Vec::new();
        c.encode_png(&mut bytes).unwrap();
        assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n");
        assert_eq!(&bytes[16..24], &[0, 0, 0, 7, 0, 0, 0, 5]);
    }
}
