//! Procedural textures: value noise, wood grain, and the board's surface
//! (squares, frame, inlay line, coordinate letters) baked into a texture.

use opencv::core::{Mat, Point, Scalar, CV_8UC1};
use opencv::imgproc;
use opencv::prelude::*;

use super::world::{BoardSpec, BoardStyle, Rgb};
use super::SimError;

/// Hash of integer lattice coordinates and a seed to 0..1.
fn hash(ix: i64, iy: i64, seed: u64) -> f32 {
    let mut h = seed
        ^ (ix as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15)
        ^ (iy as u64).wrapping_mul(0xC2B2_AE3D_27D4_EB4F);
    h ^= h >> 33;
    h = h.wrapping_mul(0xFF51_AFD7_ED55_8CCD);
    h ^= h >> 33;
    h = h.wrapping_mul(0xC4CE_B9FE_1A85_EC53);
    h ^= h >> 33;
    (h >> 40) as f32 / (1u64 << 24) as f32
}

/// Smooth value noise in -1..1 with unit lattice spacing.
pub fn value_noise(x: f32, y: f32, seed: u64) -> f32 {
    let (fx, fy) = (x.floor(), y.floor());
    let (tx, ty) = (x - fx, y - fy);
    let (ix, iy) = (fx as i64, fy as i64);
    let s = |t: f32| t * t * (3.0 - 2.0 * t);
    let (sx, sy) = (s(tx), s(ty));
    let a = hash(ix, iy, seed);
    let b = hash(ix + 1, iy, seed);
    let c = hash(ix, iy + 1, seed);
    let d = hash(ix + 1, iy + 1, seed);
    let top = a + (b - a) * sx;
    let bot = c + (d - c) * sx;
    (top + (bot - top) * sy) * 2.0 - 1.0
}

/// Wood grain in -1..1 at a point (mm), grain running along `angle` (radians).
pub fn wood(x: f32, y: f32, angle: f32, seed: u64) -> f32 {
    let (c, s) = (angle.cos(), angle.sin());
    let u = x * c + y * s;
    let v = -x * s + y * c;
    // Growth rings: stripes across v, warped by slow noise along the grain.
    let warp = 4.0 * value_noise(u * 0.012, v * 0.05, seed)
        + 1.5 * value_noise(u * 0.05, v * 0.2, seed ^ 0x51);
    let rings = ((v + warp) * 0.9).sin();
    let fibre = value_noise(u * 0.08, v * 2.0, seed ^ 0xA7);
    0.7 * rings * rings.abs() + 0.3 * fibre
}

/// A small hash-based random number in -1..1 for a tile (per-square tone).
pub fn tile_random(ix: i64, iy: i64, seed: u64) -> f32 {
    hash(ix, iy, seed ^ 0x7711) * 2.0 - 1.0
}

/// Millimetres per texel of the baked board texture (finer than a pixel at
/// 1280x720 for boards that fill the frame, which need about 0.7 mm/pixel).
pub const TEXEL_MM: f64 = 0.5;

/// The board's top surface baked into a linear-RGB texture.
#[derive(Debug, Clone)]
pub struct BoardTexture {
    pub width: usize,
    pub height: usize,
    /// Board x of texel column 0's left edge (the frame's outer edge).
    pub x0: f64,
    /// Board y of texel row 0's top edge (the frame's outer edge beyond rank 8).
    pub y0: f64,
    pub texels: Vec<Rgb>,
}

impl BoardTexture {
    /// Bakes the texture for a board; `seed` varies the wood.
    pub fn bake(board: &BoardSpec, seed: u64) -> Result<BoardTexture, SimError> {
        let s = board.square_mm;
        let b = board.border_mm;
        let size_mm = 8.0 * s + 2.0 * b;
        let n = (size_mm / TEXEL_MM).ceil() as usize;
        let (x0, y0) = (-b, 8.0 * s + b);
        let letters = letter_mask(board, n)?;
        let mut texels = Vec::with_capacity(n * n);
        let line_mm = (s * 0.03).max(1.0);
        for j in 0..n {
            let y = y0 - (j as f64 + 0.5) * TEXEL_MM;
            for i in 0..n {
                let x = x0 + (i as f64 + 0.5) * TEXEL_MM;
                let inside = (0.0..8.0 * s).contains(&x) && (0.0..8.0 * s).contains(&y);
                let mut c = if inside {
                    let (fx, fy) = ((x / s).floor() as i64, (y / s).floor() as i64);
                    let light = (fx + fy) % 2 == 1;
                    let base = if light {
                        board.light_square
                    } else {
                        board.dark_square
                    };
                    // Inlaid squares alternate grain direction; each square is its own piece of wood.
                    let angle = if (fx + fy) % 2 == 0 {
                        0.0
                    } else {
                        std::f32::consts::FRAC_PI_2
                    };
                    let tone = 1.0 + 0.06 * tile_random(fx, fy, seed) * board.grain;
                    let g = if board.grain > 0.0 {
                        board.grain * wood(x as f32, y as f32, angle, seed ^ (fx * 8 + fy) as u64)
                    } else {
                        0.0
                    };
                    shade(base, tone * (1.0 + 0.13 * g))
                } else {
                    // Frame: grain along each side.
                    let along_x = (y < 0.0 || y >= 8.0 * s) && x > y.min(8.0 * s - y);
                    let angle = if along_x {
                        0.0
                    } else {
                        std::f32::consts::FRAC_PI_2
                    };
                    let g = if board.grain > 0.0 {
                        board.grain * wood(x as f32, y as f32, angle, seed ^ 0xF7A3)
                    } else {
                        0.0
                    };
                    let mut c = shade(board.border, 1.0 + 0.10 * g);
                    // Thin dark inlay line round the playing area.
                    let dx = (-x).max(x - 8.0 * s);
                    let dy = (-y).max(y - 8.0 * s);
                    if dx.max(dy) < line_mm {
                        c = shade(board.dark_square, 0.9);
                    }
                    c
                };
                // Fine surface texture (paper fibres, vinyl pores).
                let fine = match board.style {
                    BoardStyle::Wooden => 0.0,
                    BoardStyle::Vinyl => 0.02,
                    BoardStyle::Printed => 0.015,
                } * value_noise(x as f32 * 0.7, y as f32 * 0.7, seed ^ 0x99);
                c = shade(c, 1.0 + fine);
                if letters[j * n + i] > 0 {
                    let ink = f32::from(letters[j * n + i]) / 255.0;
                    let dark = shade(board.dark_square, 0.8);
                    for k in 0..3 {
                        c[k] += (dark[k] - c[k]) * ink;
                    }
                }
                texels.push(c);
            }
        }
        Ok(BoardTexture {
            width: n,
            height: n,
            x0,
            y0,
            texels,
        })
    }

    /// Bilinear sample at a board point (clamped at the edges).
    pub fn sample(&self, x: f64, y: f64) -> Rgb {
        let fx = ((x - self.x0) / TEXEL_MM - 0.5).clamp(0.0, (self.width - 1) as f64);
        let fy = ((self.y0 - y) / TEXEL_MM - 0.5).clamp(0.0, (self.height - 1) as f64);
        let (i, j) = (fx as usize, fy as usize);
        let (i1, j1) = ((i + 1).min(self.width - 1), (j + 1).min(self.height - 1));
        let (tx, ty) = ((fx - i as f64) as f32, (fy - j as f64) as f32);
        let t = |a: usize, b: usize| self.texels[b * self.width + a];
        let (a, b, c, d) = (t(i, j), t(i1, j), t(i, j1), t(i1, j1));
        let mut out = [0.0; 3];
        for k in 0..3 {
            let top = a[k] + (b[k] - a[k]) * tx;
            let bot = c[k] + (d[k] - c[k]) * tx;
            out[k] = top + (bot - top) * ty;
        }
        out
    }
}

fn shade(c: Rgb, f: f32) -> Rgb {
    [c[0] * f, c[1] * f, c[2] * f]
}

/// Coordinate letters a-h and digits 1-8 on the frame, as an ink mask
/// drawn with OpenCV's Hershey font (upright for White).
fn letter_mask(board: &BoardSpec, n: usize) -> Result<Vec<u8>, SimError> {
    let cv = |e: opencv::Error| SimError::OpenCv(e.to_string());
    let mut mask = Mat::zeros(n as i32, n as i32, CV_8UC1)
        .map_err(cv)?
        .to_mat()
        .map_err(cv)?;
    let s = board.square_mm;
    let b = board.border_mm;
    if b < 8.0 {
        return Ok(vec![0; n * n]);
    }
    let text_mm = (b * 0.4).min(s * 0.35);
    // Hershey simplex capitals are about 22 units tall at scale 1.
    let scale = text_mm / TEXEL_MM / 22.0;
    let thickness = ((text_mm / TEXEL_MM) / 9.0).round().max(1.0) as i32;
    let to_px = |x: f64, y: f64| {
        Point::new(
            ((x + b) / TEXEL_MM) as i32,
            ((8.0 * s + b - y) / TEXEL_MM) as i32,
        )
    };
    let mut put = |text: &str, cx: f64, cy: f64| -> Result<(), SimError> {
        let mut baseline = 0;
        let size = imgproc::get_text_size(
            text,
            imgproc::FONT_HERSHEY_SIMPLEX,
            scale,
            thickness,
            &mut baseline,
        )
        .map_err(cv)?;
        let c = to_px(cx, cy);
        let org = Point::new(c.x - size.width / 2, c.y + size.height / 2);
        imgproc::put_text(
            &mut mask,
            text,
            org,
            imgproc::FONT_HERSHEY_SIMPLEX,
            scale,
            Scalar::all(255.0),
            thickness,
            imgproc::LINE_AA,
            false,
        )
        .map_err(cv)
    };
    for i in 0..8 {
        let centre = (i as f64 + 0.5) * s;
        let file = ((b'A' + i as u8) as char).to_string();
        put(&file, centre, -b / 2.0)?;
        put(&file, centre, 8.0 * s + b / 2.0)?;
        let rank = (i + 1).to_string();
        put(&rank, -b / 2.0, centre)?;
        put(&rank, 8.0 * s + b / 2.0, centre)?;
    }
    let data = mask.data_bytes().map_err(cv)?;
    Ok(data.to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn noise_is_bounded_and_seeded() {
        let mut differ = false;
        for i in 0..200 {
            let (x, y) = (i as f32 * 0.37, i as f32 * 0.11);
            let a = value_noise(x, y, 1);
            assert!((-1.0..=1.0).contains(&a));
            differ |= (a - value_noise(x, y, 2)).abs() > 1e-3;
        }
        assert!(differ);
    }

    #[test]
    fn baked_board_has_light_and_dark_squares_where_expected() {
        let board = BoardSpec::of_style(BoardStyle::Vinyl);
        let tex = BoardTexture::bake(&board, 3).unwrap();
        let lum = |c: Rgb| c[0] + c[1] + c[2];
        let a1 = board.square_centre(shakmaty::Square::A1);
        let b1 = board.square_centre(shakmaty::Square::B1);
        // a1 is a dark square, b1 a light one.
        assert!(lum(tex.sample(a1.x, a1.y)) < 0.5 * lum(tex.sample(b1.x, b1.y)));
    }
}
