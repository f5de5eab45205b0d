//! X-corner (chessboard saddle point) detection with the ChESS response.
//!
//! A point where two light and two dark squares meet shows, on a ring of
//! samples around it, two bright and two dark sectors opposite each other.
//! ChESS (Bennett & Lasenby 2014) scores that: large for X-corners, near zero
//! for edges, blobs and flat areas, independent of the squares' size as long
//! as the ring fits inside one square.

use super::image::GrayImage;

/// Ring radius in working-image pixels; the ChESS paper's value (16 samples
/// on a radius-5 circle). Squares must be wider than about 2x this.
pub const RING_RADIUS: f64 = 5.0;
/// Non-maximum suppression half-window (pixels): two X-corners are always a
/// square apart, so anything closer than this is the same corner.
pub const NMS_RADIUS: usize = 4;
/// At most this many candidates go to the grid fit (an 8x8 board has 49
/// inner corners; the rest is clutter the fit must reject).
pub const MAX_CANDIDATES: usize = 400;
/// Candidates weaker than this fraction of the strongest are dropped.
pub const MIN_RELATIVE_RESPONSE: f32 = 0.04;

/// One detected X-corner in working-image pixels.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct XCorner {
    pub x: f64,
    pub y: f64,
    pub response: f32,
    /// Direction of the bright sectors (radians, modulo pi), or NaN when
    /// unknown. Neighbours along a lattice axis differ by ~pi/2; diagonal
    /// neighbours agree.
    pub phase: f32,
}

/// Bright-sector direction at a point: half the phase of the ring's second
/// angular harmonic.
pub fn phase_at(gray: &GrayImage, x: f64, y: f64) -> f32 {
    let (mut re, mut im) = (0.0f64, 0.0f64);
    for k in 0..16 {
        let a = k as f64 * std::f64::consts::PI / 8.0;
        let Some(v) = gray.sample(x + RING_RADIUS * a.cos(), y + RING_RADIUS * a.sin()) else {
            return f32::NAN;
        };
        re += v as f64 * (2.0 * a).cos();
        im += v as f64 * (2.0 * a).sin();
    }
    (im.atan2(re) / 2.0).rem_euclid(std::f64::consts::PI) as f32
}

/// Difference of two phases modulo pi, in [0, pi/2].
pub fn phase_diff(a: f32, b: f32) -> f32 {
    let d = (a - b).rem_euclid(std::f32::consts::PI);
    d.min(std::f32::consts::PI - d)
}

/// The ChESS response at every pixel (zero near the border).
pub fn chess_response(gray: &GrayImage) -> GrayImage {
    let (w, h) = (gray.width, gray.height);
    let mut out = GrayImage::new(w, h);
    let offsets: Vec<(isize, isize)> = (0..16)
        .map(|k| {
            let a = k as f64 * std::f64::consts::PI / 8.0;
            (
                (RING_RADIUS * a.cos()).round() as isize,
                (RING_RADIUS * a.sin()).round() as isize,
            )
        })
        .collect();
    let r = RING_RADIUS.ceil() as usize + 1;
    if w <= 2 * r || h <= 2 * r {
        return out;
    }
    let mut ring = [0f32; 16];
    for y in r..h - r {
        for x in r..w - r {
            for (k, (dx, dy)) in offsets.iter().enumerate() {
                let xx = (x as isize + dx) as usize;
                let yy = (y as isize + dy) as usize;
                ring[k] = gray.data[yy * w + xx];
            }
            let mut sum_resp = 0.0;
            for k in 0..4 {
                sum_resp += (ring[k] + ring[k + 8] - ring[k + 4] - ring[k + 12]).abs();
            }
            let mut diff_resp = 0.0;
            for k in 0..8 {
                diff_resp += (ring[k] - ring[k + 8]).abs();
            }
            let ring_mean: f32 = ring.iter().sum::<f32>() / 16.0;
            let c = &gray.data;
            let local_mean = (c[y * w + x]
                + c[y * w + x - 1]
                + c[y * w + x + 1]
                + c[(y - 1) * w + x]
                + c[(y + 1) * w + x])
                / 5.0;
            let mean_resp = (ring_mean - local_mean).abs();
            out.data[y * w + x] = sum_resp - diff_resp - 16.0 * mean_resp;
        }
    }
    out
}

/// Local maxima of the ChESS response, strongest first, with sub-pixel
/// positions from a quadratic fit around each maximum.
pub fn detect(gray: &GrayImage) -> Vec<XCorner> {
    let smooth = gray.blurred(1.0);
    let resp = chess_response(&smooth);
    let (w, h) = (resp.width, resp.height);
    let max = resp.data.iter().copied().fold(0.0f32, f32::max);
    if max <= 0.0 {
        return Vec::new();
    }
    let threshold = max * MIN_RELATIVE_RESPONSE;
    let n = NMS_RADIUS;
    let mut found = Vec::new();
    if w <= 2 * n + 2 || h <= 2 * n + 2 {
        return found;
    }
    for y in n + 1..h - n - 1 {
        'px: for x in n + 1..w - n - 1 {
            let v = resp.data[y * w + x];
            if v < threshold {
                continue;
            }
            for yy in y - n..=y + n {
                for xx in x - n..=x + n {
                    let o = resp.data[yy * w + xx];
                    // Ties go to the first pixel in scan order.
                    if o > v || (o == v && (yy, xx) < (y, x)) {
                        continue 'px;
                    }
                }
            }
            let at = |dx: isize, dy: isize| {
                resp.data[((y as isize + dy) as usize) * w + (x as isize + dx) as usize] as f64
            };
            let sub = |m: f64, c: f64, p: f64| {
                let d = m - 2.0 * c + p;
                if d.abs() < 1e-9 {
                    0.0
                } else {
                    (0.5 * (m - p) / d).clamp(-0.5, 0.5)
                }
            };
            let ox = sub(at(-1, 0), at(0, 0), at(1, 0));
            let oy = sub(at(0, -1), at(0, 0), at(0, 1));
            found.push(XCorner {
                x: x as f64 + ox,
                y: y as f64 + oy,
                response: v,
                phase: f32::NAN,
            });
        }
    }
    found.sort_by(|a, b| b.response.total_cmp(&a.response));
    found.truncate(MAX_CANDIDATES);
    for c in &mut found {
        c.phase = phase_at(&smooth, c.x, c.y);
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A synthetic checkerboard with `sq`-pixel squares, offset by `off`.
    pub(crate) fn checkerboard(w: usize, h: usize, sq: f64, off: f64) -> GrayImage {
        let mut g = GrayImage::new(w, h);
        for y in 0..h {
            for x in 0..w {
                let i = ((x as f64 - off) / sq).floor() as i64;
                let j = ((y as f64 - off) / sq).floor() as i64;
                g.data[y * w + x] = if (i + j).rem_euclid(2) == 0 {
                    200.0
                } else {
                    40.0
                };
            }
        }
        g
    }

    #[test]
    fn finds_the_inner_corners_of_a_checkerboard() {
        let g = checkerboard(200, 200, 30.0, 10.5);
        let corners = detect(&g);
        // Corners at 10.5 + 30 k for k = 1..=5 inside the ring margin.
        let expected: Vec<(f64, f64)> = (1..=6)
            .flat_map(|i| (1..=6).map(move |j| (10.5 + 30.0 * i as f64, 10.5 + 30.0 * j as f64)))
            .filter(|(x, y)| *x < 190.0 && *y < 190.0)
            .collect();
        for (ex, ey) in &expected {
            let hit = corners
                .iter()
                .any(|c| (c.x - ex).abs() < 1.0 && (c.y - ey).abs() < 1.0);
            assert!(hit, "no corner near ({ex}, {ey}): {corners:?}");
        }
        // Nothing strong away from the lattice.
        for c in corners
            .iter()
            .filter(|c| c.response > corners[0].response * 0.3)
        {
            let fx = ((c.x - 10.5) / 30.0 - ((c.x - 10.5) / 30.0).round()).abs();
            let fy = ((c.y - 10.5) / 30.0 - ((c.y - 10.5) / 30.0).round()).abs();
            assert!(fx < 0.05 && fy < 0.05, "stray corner {c:?}");
        }
    }

    #[test]
    fn a_flat_image_has_no_corners() {
        let g = GrayImage::new(50, 50);
        assert!(detect(&g).is_empty());
    }
}
