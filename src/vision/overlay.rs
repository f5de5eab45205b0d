//! Overlay for people: the found grid, square names and states over the photo.

use opencv::core::{Mat, Point, Scalar};
use opencv::imgproc;

use super::image::RgbImage;
use super::io;
use super::locate::BoardLocation;
use super::orientation::Side;
use super::squares::Reading;
use super::{square_name, Occupant, VisionError};

/// Draws the overlay on a copy of `img` scaled so its longer side is at most
/// `max_side` pixels (keeps review PNGs small).
pub fn draw(
    img: &RgbImage,
    loc: &BoardLocation,
    reading: Option<&Reading>,
    side: Side,
    max_side: usize,
) -> Result<RgbImage, VisionError> {
    let (small, scale) = img.fit_within(max_side);
    let mut mat: Mat = io::bgr_mat_from_rgb(&small)?;
    let to_px = |g: [f64; 2]| -> Option<Point> {
        let p = loc.to_image(g)?;
        Some(Point::new(
            (p[0] * scale).round() as i32,
            (p[1] * scale).round() as i32,
        ))
    };
    let green = Scalar::new(0.0, 255.0, 0.0, 0.0);
    let red = Scalar::new(0.0, 0.0, 255.0, 0.0);
    for k in 0..=8 {
        let k = k as f64;
        for (a, b) in [([k, 0.0], [k, 8.0]), ([0.0, k], [8.0, k])] {
            if let (Some(pa), Some(pb)) = (to_px(a), to_px(b)) {
                imgproc::line(&mut mat, pa, pb, green, 1, imgproc::LINE_AA, 0)?;
            }
        }
    }
    let cell_px = {
        let a = to_px([3.5, 3.5]);
        let b = to_px([4.5, 4.5]);
        match (a, b) {
            (Some(a), Some(b)) => {
                (((a.x - b.x).pow(2) + (a.y - b.y).pow(2)) as f64).sqrt() / std::f64::consts::SQRT_2
            }
            _ => 20.0,
        }
    };
    let font = (cell_px / 90.0).clamp(0.25, 0.6);
    for r in 0..8 {
        for c in 0..8 {
            let sq = side.square_of_cell(c, r);
            let Some(tl) = to_px([c as f64 + 0.08, r as f64 + 0.3]) else {
                continue;
            };
            imgproc::put_text(
                &mut mat,
                &square_name(sq),
                tl,
                imgproc::FONT_HERSHEY_SIMPLEX,
                font,
                red,
                1,
                imgproc::LINE_AA,
                false,
            )?;
            if let (Some(reading), Some(centre)) =
                (reading, to_px([c as f64 + 0.5, r as f64 + 0.55]))
            {
                let s = reading.squares[sq];
                let radius = (cell_px * 0.18).max(3.0) as i32;
                let (fill, label) = match s.state {
                    Occupant::Empty => continue,
                    Occupant::White => (Scalar::new(255.0, 255.0, 255.0, 0.0), "W"),
                    Occupant::Black => (Scalar::new(0.0, 0.0, 0.0, 0.0), "B"),
                };
                imgproc::circle(&mut mat, centre, radius, fill, -1, imgproc::LINE_AA, 0)?;
                imgproc::circle(&mut mat, centre, radius, red, 1, imgproc::LINE_AA, 0)?;
                let _ = label;
            }
        }
    }
    // Mark a1 with a thick corner dot.
    let a1 = side.corner_indices()[3];
    let grid_corners = [[0.0, 0.0], [8.0, 0.0], [8.0, 8.0], [0.0, 8.0]];
    if let Some(p) = to_px(grid_corners[a1]) {
        imgproc::circle(&mut mat, p, 6, red, -1, imgproc::LINE_AA, 0)?;
    }
    io::rgb_from_bgr_mat(&mat)
}
