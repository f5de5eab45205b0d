//! Board localization on a single frame: X-corners, lattice fit, board window.

use super::grid;
use super::homography::{Homography, Pt};
use super::image::RgbImage;
use super::xcorners;
use super::VisionError;

/// Localization works on a copy whose longer side is at most this many
/// pixels: an 8x8 board filling a third of such a frame still has squares of
/// ~30 px, well above the 2x ring radius the corner detector needs, and the
/// detector's cost stays bounded on 12-megapixel phone photos.
pub const WORK_MAX_SIDE: usize = 800;
/// A frame whose mean luminance (0..255) is below this is too dark to read
/// (a covered lens or lights off, not a board in dim light, which is ~40+).
pub const MIN_MEAN_LUMA: f32 = 20.0;
/// A frame whose luminance standard deviation is below this has no usable
/// contrast (blank wall, lens cap, saturated white).
pub const MIN_LUMA_STDDEV: f32 = 6.0;

/// Where the board is in an image.
///
/// The grid frame has the board's outer corners at (0,0), (8,0), (8,8),
/// (0,8) and square centres at half-integers; (0,0) is the corner nearest
/// the image's top-left and the order (0,0) -> (8,0) -> (8,8) -> (0,8) runs
/// clockwise on screen. Which corner is a1 is the orientation's business.
#[derive(Debug, Clone, PartialEq)]
pub struct BoardLocation {
    /// Grid units -> image pixels.
    pub image_from_grid: Homography,
    /// Image pixels -> grid units.
    pub grid_from_image: Homography,
    /// Outer corners in image pixels, grid (0,0), (8,0), (8,8), (0,8).
    pub corners: [Pt; 4],
    /// Number of inner X-corners that supported the fit (at most 49).
    pub support: usize,
    /// Size of the image this location refers to.
    pub image_size: (usize, usize),
}

impl BoardLocation {
    /// A location from four outer corners given in grid order (a manual fix).
    pub fn from_corners(
        corners: [Pt; 4],
        image_size: (usize, usize),
    ) -> Result<BoardLocation, VisionError> {
        let grid = [[0.0, 0.0], [8.0, 0.0], [8.0, 8.0], [0.0, 8.0]];
        let image_from_grid = Homography::fit(&grid, &corners).ok_or_else(|| {
            VisionError::BoardNotFound(
                "the four corners are degenerate (collinear or repeated)".into(),
            )
        })?;
        let grid_from_image = image_from_grid
            .inverse()
            .ok_or_else(|| VisionError::BoardNotFound("the corner map is singular".into()))?;
        Ok(BoardLocation {
            image_from_grid,
            grid_from_image,
            corners,
            support: 0,
            image_size,
        })
    }

    /// Image position of a grid point.
    pub fn to_image(&self, grid: Pt) -> Option<Pt> {
        self.image_from_grid.apply(grid)
    }
}

/// Rejects frames that cannot show a board (too dark, no contrast).
pub fn check_exposure(img: &RgbImage) -> Result<(), VisionError> {
    if img.width == 0 || img.height == 0 {
        return Err(VisionError::Unusable("the image is empty".into()));
    }
    let gray = img.to_gray();
    let n = gray.data.len() as f64;
    let mean = gray.data.iter().map(|v| *v as f64).sum::<f64>() / n;
    let var = gray
        .data
        .iter()
        .map(|v| (*v as f64 - mean).powi(2))
        .sum::<f64>()
        / n;
    if (mean as f32) < MIN_MEAN_LUMA {
        return Err(VisionError::Unusable(format!(
            "too dark: mean luminance {mean:.1} < {MIN_MEAN_LUMA}"
        )));
    }
    if (var.sqrt() as f32) < MIN_LUMA_STDDEV {
        return Err(VisionError::Unusable(format!(
            "no contrast: luminance std-dev {:.1} < {MIN_LUMA_STDDEV}",
            var.sqrt()
        )));
    }
    Ok(())
}

/// Finds the board in a frame, from scratch.
pub fn locate_board(img: &RgbImage) -> Result<BoardLocation, VisionError> {
    check_exposure(img)?;
    let scale = (WORK_MAX_SIDE as f64 / img.width.max(img.height) as f64).min(1.0);
    let work = if scale < 1.0 {
        img.resized(
            (img.width as f64 * scale).round() as usize,
            (img.height as f64 * scale).round() as usize,
        )
    } else {
        img.clone()
    };
    let gray = work.to_gray();
    let corners = xcorners::detect(&gray);
    let fit = grid::fit_lattice(&corners, |h, nodes| grid::checker_quality(&gray, h, nodes))
        .ok_or_else(|| {
            VisionError::BoardNotFound(format!(
                "no chessboard lattice among {} corner candidates",
                corners.len()
            ))
        })?;
    let fit = grid::core(&fit)
        .ok_or_else(|| VisionError::BoardNotFound("too few connected lattice corners".into()))?;
    let [i0, j0] = grid::board_window(&fit, &gray).ok_or_else(|| {
        VisionError::BoardNotFound("no 8x8 window of the corner lattice looks like a board".into())
    })?;
    let image_from_lattice = fit
        .lattice_from_image
        .inverse()
        .ok_or_else(|| VisionError::BoardNotFound("singular lattice map".into()))?;
    let corner_at = |u: i32, v: i32| -> Result<Pt, VisionError> {
        let p = image_from_lattice
            .apply([u as f64, v as f64])
            .ok_or_else(|| VisionError::BoardNotFound("board corner at infinity".into()))?;
        Ok([p[0] / scale, p[1] / scale])
    };
    let mut ring = [
        corner_at(i0, j0)?,
        corner_at(i0 + 8, j0)?,
        corner_at(i0 + 8, j0 + 8)?,
        corner_at(i0, j0 + 8)?,
    ];
    // Clockwise on screen (image y points down): positive cross product.
    let cross = (ring[1][0] - ring[0][0]) * (ring[3][1] - ring[0][1])
        - (ring[1][1] - ring[0][1]) * (ring[3][0] - ring[0][0]);
    if cross < 0.0 {
        ring.swap(1, 3);
    }
    let first = (0..4)
        .min_by(|&a, &b| (ring[a][0] + ring[a][1]).total_cmp(&(ring[b][0] + ring[b][1])))
        .unwrap_or(0);
    ring.rotate_left(first);
    let mut loc = BoardLocation::from_corners(ring, (img.width, img.height))?;
    loc.support = fit.inliers.len();
    Ok(loc)
}
