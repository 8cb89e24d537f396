//! Occupancy grids with `nav_msgs/OccupancyGrid` semantics and their file formats.
//!
//! A [`GridMap`] stores one value per cell, row-major with row 0 at the bottom (the
//! `OccupancyGrid` convention): `-1` is unknown, `0..=100` is the occupancy probability in
//! percent. [`CostModel`] turns those values into integer move costs: a move *into* a cell costs
//! at least 1, and cells at or above the threshold (and unknown cells unless allowed) are
//! impassable.
//!
//! Files: PGM (P2/P5) and PNG images read as ROS `map_server` reads them (optionally through a
//! `map_server` YAML that names the image and its thresholds), and a plain YAML/JSON grid
//! `{width, height, data}` holding `OccupancyGrid` values.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::GridError;

/// Marks an impassable cell in a cost array.
pub const BLOCKED: i32 = -1;

/// How `OccupancyGrid` values become move costs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct CostModel {
    /// Cells with a value at or above this (0..=100) are impassable.
    pub occupied_threshold: i8,
    /// Whether unknown cells (`-1`) may be crossed (at the cost of a free cell).
    pub unknown_passable: bool,
    /// Extra cost per percent of occupancy: entering a cell of value `v` costs
    /// `1 + v * cost_scale / 100`. 0 gives unit costs (the paper's setting).
    pub cost_scale: u32,
}

impl Default for CostModel {
    fn default() -> Self {
        Self {
            occupied_threshold: 50,
            unknown_passable: false,
            cost_scale: 0,
        }
    }
}

impl CostModel {
    /// The cost of entering a cell of occupancy value `value`, or [`BLOCKED`].
    pub fn cost_of(&self, value: i8) -> i32 {
        if value < 0 {
            return if self.unknown_passable { 1 } else { BLOCKED };
        }
        if value >= self.occupied_threshold {
            return BLOCKED;
        }
        let extra = (value as u64 * self.cost_scale as u64 / 100).min(1_000_000) as i32;
        1 + extra
    }
}

/// A 2-D occupancy grid (row-major, row 0 at the bottom, `OccupancyGrid` values).
#[derive(Clone, Debug, PartialEq)]
pub struct GridMap {
    width: u32,
    height: u32,
    data: Vec<i8>,
    /// Metres per cell (1.0 when the source had none).
    pub resolution: f64,
    /// World position of the lower-left corner of cell (0, 0): x, y, yaw.
    pub origin: [f64; 3],
}

/// Largest number of cells accepted (cell indices must fit in an `i32` on the GPU).
pub const MAX_CELLS: u64 = 1 << 30;

impl GridMap {
    /// A grid from `OccupancyGrid` values; fails on an empty grid, a size mismatch or a value
    /// outside `-1..=100`.
    pub fn new(width: u32, height: u32, data: Vec<i8>) -> Result<Self, GridError> {
        if width == 0 || height == 0 {
            return Err(GridError::EmptyGrid { width, height });
        }
        let cells = width as u64 * height as u64;
        if cells > MAX_CELLS {
            return Err(GridError::GridTooLarge { width, height });
        }
        if data.len() as u64 != cells {
            return Err(GridError::SizeMismatch {
                width,
                height,
                len: data.len(),
            });
        }
        if let Some((index, &value)) = data
            .iter()
            .enumerate()
            .find(|(_, &v)| !(-1..=100).contains(&v))
        {
            return Err(GridError::BadCellValue { index, value });
        }
        Ok(Self {
            width,
            height,
            data,
            resolution: 1.0,
            origin: [0.0; 3],
        })
    }

    /// A grid parsed from text rows (top row first, as drawn): `#` is an obstacle (100), `.`
    /// is free (0), `?` unknown (-1), a digit `d` is occupancy `d * 10`. Handy for tests.
    pub fn from_ascii(rows: &[&str]) -> Result<Self, GridError> {
        let height = rows.len() as u32;
        let width = rows.first().map(|r| r.chars().count()).unwrap_or(0) as u32;
        let mut data = vec![0i8; width as usize * height as usize];
        for (row_index, row) in rows.iter().enumerate() {
            if row.chars().count() as u32 != width {
                return Err(GridError::Parse {
                    source_name: "ascii grid".into(),
                    message: format!(
                        "row {row_index} has {} characters, the first row has {width}",
                        row.chars().count()
                    ),
                });
            }
            let y = height as usize - 1 - row_index;
            for (x, ch) in row.chars().enumerate() {
                let value = match ch {
                    '#' => 100,
                    '.' => 0,
                    '?' => -1,
                    d if d.is_ascii_digit() => (d as u8 - b'0') as i8 * 10,
                    other => {
                        return Err(GridError::Parse {
                            source_name: "ascii grid".into(),
                            message: format!("row {row_index}: unknown cell character '{other}'"),
                        })
                    }
                };
                data[y * width as usize + x] = value;
            }
        }
        Self::new(width, height, data)
    }

    /// Cells per row.
    pub fn width(&self) -> u32 {
        self.width
    }

    /// Number of rows.
    pub fn height(&self) -> u32 {
        self.height
    }

    /// Number of cells.
    pub fn len(&self) -> usize {
        self.data.len()
    }

    /// Always false: a grid has at least one cell.
    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    /// The `OccupancyGrid` values, row-major.
    pub fn data(&self) -> &[i8] {
        &self.data
    }

    /// The cell index of `(x, y)`, if inside the grid.
    pub fn index(&self, x: i64, y: i64) -> Option<u32> {
        if x < 0 || y < 0 || x >= self.width as i64 || y >= self.height as i64 {
            return None;
        }
        Some((y as u32) * self.width + x as u32)
    }

    /// The `(x, y)` of a cell index.
    pub fn coords(&self, cell: u32) -> (u32, u32) {
        (cell % self.width, cell / self.width)
    }

    /// The value of cell `(x, y)`, if inside the grid.
    pub fn get(&self, x: i64, y: i64) -> Option<i8> {
        self.index(x, y).map(|i| self.data[i as usize])
    }

    /// Sets cell `(x, y)` to `value`; fails when outside the grid or the value is not `-1..=100`.
    pub fn set(&mut self, x: i64, y: i64, value: i8) -> Result<(), GridError> {
        let index = self.index(x, y).ok_or(GridError::CellOutside {
            x,
            y,
            width: self.width,
            height: self.height,
        })?;
        if !(-1..=100).contains(&value) {
            return Err(GridError::BadCellValue {
                index: index as usize,
                value,
            });
        }
        self.data[index as usize] = value;
        Ok(())
    }

    /// The per-cell entering costs under `model` ([`BLOCKED`] for impassable cells).
    pub fn costs(&self, model: &CostModel) -> Vec<i32> {
        self.data.iter().map(|&v| model.cost_of(v)).collect()
    }

    /// Loads a map file chosen by extension: `.pgm`, `.png` (with `map_server` defaults),
    /// `.yaml`/`.yml` (a `map_server` YAML naming an image, or a plain grid), `.json` (a plain
    /// grid).
    pub fn load(path: &Path) -> Result<Self, GridError> {
        let ext = path
            .extension()
            .and_then(|e| e.to_str())
            .unwrap_or("")
            .to_ascii_lowercase();
        match ext.as_str() {
            "pgm" | "png" => {
                let image = read_image(path)?;
                Ok(image.to_grid(&MapServerYaml::defaults(path.to_path_buf())))
            }
            "yaml" | "yml" | "json" => {
                let text = read_text(path)?;
                Self::from_yaml_text(&text, path)
            }
            _ => Err(GridError::UnknownFormat(path.to_path_buf())),
        }
    }

    /// Parses a YAML (or JSON, which is YAML) text: a `map_server` description when it has an
    /// `image` key (resolved relative to `path`'s folder), otherwise a plain grid.
    pub fn from_yaml_text(text: &str, path: &Path) -> Result<Self, GridError> {
        let value: serde_yaml::Value =
            serde_yaml::from_str(text).map_err(|e| GridError::Parse {
                source_name: path.display().to_string(),
                message: e.to_string(),
            })?;
        let parse_err = |e: serde_yaml::Error| GridError::Parse {
            source_name: path.display().to_string(),
            message: e.to_string(),
        };
        if value.get("image").is_some() {
            let mut yaml: MapServerYaml = serde_yaml::from_value(value).map_err(parse_err)?;
            if yaml.image.is_relative() {
                if let Some(dir) = path.parent() {
                    yaml.image = dir.join(&yaml.image);
                }
            }
            let image = read_image(&yaml.image)?;
            Ok(image.to_grid(&yaml))
        } else {
            let plain: PlainGrid = serde_yaml::from_value(value).map_err(parse_err)?;
            let mut map = Self::new(plain.width, plain.height, plain.data)?;
            map.resolution = plain.resolution.unwrap_or(1.0);
            map.origin = plain.origin.unwrap_or([0.0; 3]);
            Ok(map)
        }
    }
}

/// A plain grid file: `OccupancyGrid` values row-major, row 0 at the bottom.
#[derive(Deserialize)]
struct PlainGrid {
    width: u32,
    height: u32,
    data: Vec<i8>,
    resolution: Option<f64>,
    origin: Option<[f64; 3]>,
}

/// How `map_server` turns pixels into occupancy values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum MapMode {
    /// 100 occupied, 0 free, -1 between the thresholds.
    #[default]
    Trinary,
    /// Like trinary, but values between the thresholds are scaled into 1..=99.
    Scale,
    /// The pixel's probability taken as it is (0..=100).
    Raw,
}

/// The `map_server` YAML description of an image map.
#[derive(Clone, Debug, Deserialize)]
pub struct MapServerYaml {
    /// The image file (relative paths are relative to the YAML file).
    pub image: PathBuf,
    /// Metres per pixel.
    #[serde(default = "one")]
    pub resolution: f64,
    /// Lower-left corner pose (x, y, yaw).
    #[serde(default)]
    pub origin: [f64; 3],
    /// 1 when white means occupied.
    #[serde(default)]
    pub negate: u8,
    /// Probability above which a pixel is occupied.
    #[serde(default = "default_occupied")]
    pub occupied_thresh: f64,
    /// Probability below which a pixel is free.
    #[serde(default = "default_free")]
    pub free_thresh: f64,
    /// Interpretation mode.
    #[serde(default)]
    pub mode: MapMode,
}

fn one() -> f64 {
    1.0
}
fn default_occupied() -> f64 {
    0.65
}
fn default_free() -> f64 {
    0.196
}

impl MapServerYaml {
    /// `map_server`'s defaults for a bare image.
    pub fn defaults(image: PathBuf) -> Self {
        Self {
            image,
            resolution: 1.0,
            origin: [0.0; 3],
            negate: 0,
            occupied_thresh: default_occupied(),
            free_thresh: default_free(),
            mode: MapMode::Trinary,
        }
    }
}

/// A decoded grey image: top row first, with an optional alpha per pixel.
struct GreyImage {
    width: u32,
    height: u32,
    grey: Vec<u8>,
    alpha: Option<Vec<u8>>,
}

impl GreyImage {
    fn to_grid(&self, yaml: &MapServerYaml) -> GridMap {
        let w = self.width as usize;
        let h = self.height as usize;
        let mut data = vec![0i8; w * h];
        for row in 0..h {
            let y = h - 1 - row;
            for x in 0..w {
                let i = row * w + x;
                if let Some(alpha) = &self.alpha {
                    if alpha[i] == 0 {
                        data[y * w + x] = -1;
                        continue;
                    }
                }
                let pixel = self.grey[i] as f64;
                let p = if yaml.negate != 0 {
                    pixel / 255.0
                } else {
                    (255.0 - pixel) / 255.0
                };
                data[y * w + x] = match yaml.mode {
                    MapMode::Raw => (p * 100.0).round().clamp(0.0, 100.0) as i8,
                    _ if p > yaml.occupied_thresh => 100,
                    _ if p < yaml.free_thresh => 0,
                    MapMode::Trinary => -1,
                    MapMode::Scale => {
                        let span = (yaml.occupied_thresh - yaml.free_thresh).max(1e-9);
                        (1.0 + 98.0 * (p - yaml.free_thresh) / span)
                            .round()
                            .clamp(1.0, 99.0) as i8
                    }
                };
            }
        }
        GridMap {
            width: self.width,
            height: self.height,
            data,
            resolution: yaml.resolution,
            origin: yaml.origin,
        }
    }
}

fn read_text(path: &Path) -> Result<String, GridError> {
    std::fs::read_to_string(path).map_err(|e| GridError::Io {
        path: path.to_path_buf(),
        message: e.to_string(),
    })
}

fn read_image(path: &Path) -> Result<GreyImage, GridError> {
    let bytes = std::fs::read(path).map_err(|e| GridError::Io {
        path: path.to_path_buf(),
        message: e.to_string(),
    })?;
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .unwrap_or("")
        .to_ascii_lowercase();
    let image = if ext == "png" {
        parse_png(&bytes, path)?
    } else {
        parse_pgm(&bytes, path)?
    };
    if image.width == 0 || image.height == 0 {
        return Err(GridError::EmptyGrid {
            width: image.width,
            height: image.height,
        });
    }
    if image.width as u64 * image.height as u64 > MAX_CELLS {
        return Err(GridError::GridTooLarge {
            width: image.width,
            height: image.height,
        });
    }
    Ok(image)
}

/// Parses a binary (P5) or ASCII (P2) PGM image into grey levels scaled to 0..=255.
fn parse_pgm(bytes: &[u8], path: &Path) -> Result<GreyImage, GridError> {
    let err = |message: String| GridError::Parse {
        source_name: path.display().to_string(),
        message,
    };
    let mut pos = 0usize;
    // Reads one whitespace-separated header token, skipping `#` comments.
    let token = |pos: &mut usize| -> Option<String> {
        loop {
            while *pos < bytes.len() && bytes[*pos].is_ascii_whitespace() {
                *pos += 1;
            }
            if *pos < bytes.len() && bytes[*pos] == b'#' {
                while *pos < bytes.len() && bytes[*pos] != b'\n' {
                    *pos += 1;
                }
                continue;
            }
            break;
        }
        let start = *pos;
        while *pos < bytes.len() && !bytes[*pos].is_ascii_whitespace() && bytes[*pos] != b'#' {
            *pos += 1;
        }
        (start < *pos).then(|| String::from_utf8_lossy(&bytes[start..*pos]).into_owned())
    };
    let magic = token(&mut pos).ok_or_else(|| err("empty file".into()))?;
    if magic != "P2" && magic != "P5" {
        return Err(err(format!(
            "not a PGM image (magic '{magic}', want P2 or P5)"
        )));
    }
    let number = |what: &str, pos: &mut usize| -> Result<u32, GridError> {
        let t = token(pos).ok_or_else(|| err(format!("missing {what}")))?;
        t.parse::<u32>()
            .map_err(|_| err(format!("{what} '{t}' is not a number")))
    };
    let width = number("width", &mut pos)?;
    let height = number("height", &mut pos)?;
    let maxval = number("maxval", &mut pos)?;
    if maxval == 0 || maxval > 65535 {
        return Err(err(format!("maxval {maxval} outside 1..=65535")));
    }
    let n = width as u64 * height as u64;
    if n > MAX_CELLS {
        return Err(GridError::GridTooLarge { width, height });
    }
    let n = n as usize;
    let scale = |v: u32| ((v.min(maxval) as u64 * 255 + maxval as u64 / 2) / maxval as u64) as u8;
    let mut grey = Vec::with_capacity(n);
    if magic == "P5" {
        pos += 1; // the single whitespace byte after maxval
        let bpp = if maxval > 255 { 2 } else { 1 };
        let body = bytes.get(pos..).unwrap_or(&[]);
        if body.len() < n * bpp {
            return Err(err(format!(
                "pixel data has {} bytes, {width}x{height} needs {}",
                body.len(),
                n * bpp
            )));
        }
        for i in 0..n {
            let v = if bpp == 2 {
                (body[2 * i] as u32) << 8 | body[2 * i + 1] as u32
            } else {
                body[i] as u32
            };
            grey.push(scale(v));
        }
    } else {
        for i in 0..n {
            let v = number(&format!("pixel {i}"), &mut pos)?;
            grey.push(scale(v));
        }
    }
    Ok(GreyImage {
        width,
        height,
        grey,
        alpha: None,
    })
}

/// Decodes a PNG into grey levels (the mean of the colour channels, as `map_server` does).
fn parse_png(bytes: &[u8], path: &Path) -> Result<GreyImage, GridError> {
    let err = |message: String| GridError::Parse {
        source_name: path.display().to_string(),
        message,
    };
    let mut decoder = png::Decoder::new(std::io::Cursor::new(bytes));
    decoder.set_transformations(png::Transformations::EXPAND | png::Transformations::STRIP_16);
    let mut reader = decoder.read_info().map_err(|e| err(e.to_string()))?;
    let size = reader
        .output_buffer_size()
        .ok_or_else(|| err("image too large".into()))?;
    let mut buf = vec![0u8; size];
    let info = reader
        .next_frame(&mut buf)
        .map_err(|e| err(e.to_string()))?;
    let (width, height) = (info.width, info.height);
    let channels = info.color_type.samples();
    let n = width as usize * height as usize;
    let mut grey = Vec::with_capacity(n);
    let has_alpha = matches!(
        info.color_type,
        png::ColorType::GrayscaleAlpha | png::ColorType::Rgba
    );
    let mut alpha = has_alpha.then(|| Vec::with_capacity(n));
    let colour = if has_alpha { channels - 1 } else { channels };
    for row in 0..height as usize {
        let line = buf
            .get(row * info.line_size..(row + 1) * info.line_size)
            .ok_or_else(|| err("truncated image".into()))?;
        for x in 0..width as usize {
            let px = line
                .get(x * channels..(x + 1) * channels)
                .ok_or_else(|| err("truncated row".into()))?;
            let sum: u32 = px[..colour].iter().map(|&v| v as u32).sum();
            grey.push((sum / colour.max(1) as u32) as u8);
            if let Some(a) = alpha.as_mut() {
                a.push(px[channels - 1]);
            }
        }
    }
    Ok(GreyImage {
        width,
        height,
        grey,
        alpha,
    })
}

/// Agents file: JSON or YAML `{"starts": [[x, y], ...]}`.
#[derive(Clone, Debug, Deserialize, serde::Serialize, PartialEq)]
pub struct AgentsFile {
    /// Start cells as `[x, y]`.
    pub starts: Vec<[i64; 2]>,
}

impl AgentsFile {
    /// Reads an agents file (JSON or YAML).
    pub fn load(path: &Path) -> Result<Self, GridError> {
        let text = read_text(path)?;
        serde_yaml::from_str(&text).map_err(|e| GridError::Parse {
            source_name: path.display().to_string(),
            message: e.to_string(),
        })
    }
}
