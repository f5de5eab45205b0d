//! Where the camera is relative to the board, estimated from the board's
//! homography alone, and which board points a standing piece hides.
//!
//! A homography from the board plane to the image fixes the camera's pose
//! once the intrinsics are known. With the principal point at the image
//! centre and square pixels (true of webcams and phones to a few per cent),
//! the two orthonormality constraints of the rotation's first two columns
//! give the focal length (Zhang's plane constraints with one unknown); when
//! the view is too close to straight-on for that to be determined, a typical
//! field of view is assumed (an overhead view hardly depends on it).
//!
//! Grid units throughout: the board is 8x8, heights in square sides.

use nalgebra::{Matrix3, Vector3};

use super::locate::BoardLocation;

/// Field of view assumed when the focal length cannot be estimated: the
/// horizontal FOV of a typical USB webcam or phone main camera (60-70°).
pub const DEFAULT_HFOV_DEG: f64 = 65.0;
/// Plausible horizontal fields of view; estimates outside are not trusted.
const MIN_HFOV_DEG: f64 = 20.0;
const MAX_HFOV_DEG: f64 = 120.0;

/// The camera centre in grid units: `x`, `y` on the board plane (the foot
/// of the perpendicular, possibly far outside the board) and `z`, the
/// height above the board in square sides.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Viewpoint {
    pub centre: [f64; 3],
    /// Homogeneous image vector added per unit of height: the image of
    /// grid point (x, y, z) is `image_from_grid · (x, y, 1) · sign + z · up`.
    up: [f64; 3],
    /// Sign that makes `image_from_grid` consistent with `up`.
    sign: f64,
    image_from_grid: Matrix3<f64>,
    pub focal_px: f64,
    /// The focal length came from the homography (not the default).
    pub focal_estimated: bool,
}

/// Estimates the camera centre from a board location.
pub fn estimate(loc: &BoardLocation) -> Option<Viewpoint> {
    let (w, h) = (loc.image_size.0 as f64, loc.image_size.1 as f64);
    let shift = Matrix3::new(1.0, 0.0, -w / 2.0, 0.0, 1.0, -h / 2.0, 0.0, 0.0, 1.0);
    let hm = shift * loc.image_from_grid.m;
    let (h1, h2) = (hm.column(0), hm.column(1));
    // a * (1/f²) + b = 0 for both constraints; least squares in 1/f².
    let a1 = h1[0] * h2[0] + h1[1] * h2[1];
    let b1 = h1[2] * h2[2];
    let a2 = h1[0] * h1[0] + h1[1] * h1[1] - h2[0] * h2[0] - h2[1] * h2[1];
    let b2 = h1[2] * h1[2] - h2[2] * h2[2];
    let den = a1 * a1 + a2 * a2;
    let fov_f = |deg: f64| w / 2.0 / (deg.to_radians() / 2.0).tan();
    let (f_lo, f_hi) = (fov_f(MAX_HFOV_DEG), fov_f(MIN_HFOV_DEG));
    let estimated = if den > 0.0 {
        let u = -(a1 * b1 + a2 * b2) / den;
        (u > 0.0)
            .then(|| 1.0 / u.sqrt())
            .filter(|f| (f_lo..=f_hi).contains(f))
    } else {
        None
    };
    let f = estimated.unwrap_or_else(|| fov_f(DEFAULT_HFOV_DEG));
    let kinv = Matrix3::new(1.0 / f, 0.0, 0.0, 0.0, 1.0 / f, 0.0, 0.0, 0.0, 1.0);
    let mut m = kinv * hm;
    // The board is in front of the camera.
    let sign = if m[(2, 2)] < 0.0 { -1.0 } else { 1.0 };
    m *= sign;
    let (m1, m2, m3): (Vector3<f64>, Vector3<f64>, Vector3<f64>) =
        (m.column(0).into(), m.column(1).into(), m.column(2).into());
    let lambda = (m1.norm() + m2.norm()) / 2.0;
    if lambda.is_nan() || lambda <= 1e-12 {
        return None;
    }
    let r1 = m1.normalize();
    let r2 = m2.normalize();
    let r3 = r1.cross(&r2);
    let t = m3 / lambda;
    // Up is the side of the board the camera is on.
    let r3_up = if -r3.dot(&t) >= 0.0 { r3 } else { -r3 };
    let c = [-r1.dot(&t), -r2.dot(&t), -r3_up.dot(&t)];
    let k = Matrix3::new(f, 0.0, 0.0, 0.0, f, 0.0, 0.0, 0.0, 1.0);
    let unshift = Matrix3::new(1.0, 0.0, w / 2.0, 0.0, 1.0, h / 2.0, 0.0, 0.0, 1.0);
    let up = unshift * k * (r3_up * lambda);
    c.iter().all(|v| v.is_finite()).then_some(Viewpoint {
        centre: c,
        up: [up.x, up.y, up.z],
        sign,
        image_from_grid: loc.image_from_grid.m,
        focal_px: f,
        focal_estimated: estimated.is_some(),
    })
}

impl Viewpoint {
    /// Image pixel of the point `z` square sides above grid point (x, y).
    pub fn project(&self, x: f64, y: f64, z: f64) -> Option<[f64; 2]> {
        let v = self.image_from_grid * Vector3::new(x, y, 1.0) * self.sign
            + Vector3::new(self.up[0], self.up[1], self.up[2]) * z;
        (v.z > 1e-12).then(|| [v.x / v.z, v.y / v.z])
    }

    /// Where the sight line through the point `z` above grid point (x, y)
    /// meets the board behind it (grid units); `None` at or above the camera.
    pub fn ground_behind(&self, x: f64, y: f64, z: f64) -> Option<[f64; 2]> {
        let cz = self.centre[2];
        (z < cz - 1e-9).then(|| {
            let k = cz / (cz - z);
            [
                self.centre[0] + (x - self.centre[0]) * k,
                self.centre[1] + (y - self.centre[1]) * k,
            ]
        })
    }

    /// Horizontal distance from a board point to the camera's foot point.
    pub fn ground_distance(&self, p: [f64; 2]) -> f64 {
        (self.centre[0] - p[0]).hypot(self.centre[1] - p[1])
    }

    /// Whether the line of sight from board point `p` to the camera passes
    /// through an upright cylinder of `radius` and `height` standing at `q`.
    pub fn hidden_by(&self, p: [f64; 2], q: [f64; 2], radius: f64, height: f64) -> bool {
        self.hidden_from(p, 0.0, q, radius, height)
    }

    /// As [`Viewpoint::hidden_by`], for the point `z0` above board point `p`.
    pub fn hidden_from(&self, p: [f64; 2], z0: f64, q: [f64; 2], radius: f64, height: f64) -> bool {
        let (dx, dy) = (self.centre[0] - p[0], self.centre[1] - p[1]);
        let l = dx.hypot(dy);
        if l < 1e-9 {
            return false; // looking straight down at p
        }
        let (ux, uy) = (dx / l, dy / l);
        let (qx, qy) = (q[0] - p[0], q[1] - p[1]);
        let along = qx * ux + qy * uy;
        let perp = (qx * uy - qy * ux).abs();
        if perp >= radius {
            return false;
        }
        let half_chord = (radius * radius - perp * perp).sqrt();
        if along + half_chord <= 0.0 {
            return false; // the cylinder stands behind p
        }
        let entry = (along - half_chord).max(0.0);
        if entry >= l {
            return false;
        }
        // The sight line rises linearly from the point to the camera.
        z0 + (self.centre[2] - z0) * entry / l < height
    }
}

/// Radius (square sides) of the widest part of a piece as seen from the
/// side, for telling which squares a piece can make look occupied: a
/// knight's head or a king's base is about 0.6 square across (Staunton
/// set, 57 mm squares); deliberately the widest, not the typical, piece.
pub const SHADOW_RADIUS: f64 = 0.3;
/// Tallest piece (king, 95 mm on 57 mm squares), square sides.
pub const SHADOW_HEIGHT: f64 = 1.67;
/// A cell is in a piece's shadow when the piece can hide at least this
/// share of the cell's centre (the middle half that vision reads):
/// vision calls a cell occupied from about a quarter of its centre
/// differing from its rim (`squares::OCC_THRESHOLD`).
pub const SHADOW_MIN_SHARE: f64 = 0.2;

impl Viewpoint {
    /// For each grid cell `c + 8 r`, the cells (bit `c' + 8 r'`) whose
    /// piece, standing up to a king's height, can cover enough of the
    /// cell's centre to make it look occupied when it is empty.
    pub fn shadow_sources(&self) -> [u64; 64] {
        /// Centre samples per side (the middle half of the cell).
        const N: usize = 4;
        let mut out = [0u64; 64];
        for (x, bits) in out.iter_mut().enumerate() {
            let (xc, xr) = ((x % 8) as f64, (x / 8) as f64);
            let points: Vec<[f64; 2]> = (0..N * N)
                .map(|k| {
                    [
                        xc + 0.25 + 0.5 * ((k % N) as f64 + 0.5) / N as f64,
                        xr + 0.25 + 0.5 * ((k / N) as f64 + 0.5) / N as f64,
                    ]
                })
                .collect();
            for q in 0..64 {
                // A king leans at most ~3.6 squares at the lowest usable
                // view (25°): farther cells cannot shadow this one.
                if q == x || (q % 8).abs_diff(x % 8) > 4 || (q / 8).abs_diff(x / 8) > 4 {
                    continue;
                }
                let qc = [(q % 8) as f64 + 0.5, (q / 8) as f64 + 0.5];
                let hidden = points
                    .iter()
                    .filter(|p| self.hidden_by(**p, qc, SHADOW_RADIUS, SHADOW_HEIGHT))
                    .count();
                if hidden as f64 >= SHADOW_MIN_SHARE * points.len() as f64 {
                    *bits |= 1 << q;
                }
            }
        }
        out
    }
}

/// A 640x480 oblique view for tests: the board as a trapezoid, grid y = 0
/// (the far edge) narrow and high in the picture, the camera beyond grid
/// y = 8; its location and estimated viewpoint.
#[cfg(test)]
pub(crate) fn oblique_test_view() -> (BoardLocation, Viewpoint) {
    let corners = [
        [220.0, 150.0],
        [420.0, 150.0],
        [560.0, 400.0],
        [80.0, 400.0],
    ];
    let loc = BoardLocation::from_corners(corners, (640, 480)).unwrap();
    let view = estimate(&loc).expect("an oblique view");
    (loc, view)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vision::homography::Homography;

    /// A board location seen by a pinhole camera at `c` (grid units)
    /// looking at the board centre.
    fn location_from_camera(c: Vector3<f64>, f: f64, size: (usize, usize)) -> BoardLocation {
        let target = Vector3::new(4.0, 4.0, 0.0);
        let fwd = (target - c).normalize();
        let right = fwd.cross(&Vector3::z()).normalize();
        let down = fwd.cross(&right);
        let project = |p: Vector3<f64>| {
            let v = p - c;
            let (x, y, z) = (v.dot(&right), v.dot(&down), v.dot(&fwd));
            [
                f * x / z + size.0 as f64 / 2.0,
                f * y / z + size.1 as f64 / 2.0,
            ]
        };
        let grid: Vec<[f64; 2]> = (0..=8)
            .flat_map(|r| (0..=8).map(move |c| [c as f64, r as f64]))
            .collect();
        let img: Vec<[f64; 2]> = grid
            .iter()
            .map(|g| project(Vector3::new(g[0], g[1], 0.0)))
            .collect();
        let h = Homography::fit(&grid, &img).unwrap();
        BoardLocation {
            image_from_grid: h,
            grid_from_image: h.inverse().unwrap(),
            corners: [img[0], img[8], img[80], img[72]],
            support: 49,
            image_size: size,
        }
    }

    #[test]
    fn recovers_an_oblique_camera() {
        let c = Vector3::new(-3.0, 14.0, 9.0);
        let loc = location_from_camera(c, 900.0, (1280, 720));
        let v = estimate(&loc).unwrap();
        assert!(v.focal_estimated);
        // A point 1.5 squares above c3's centre, projected both ways.
        let f_true = 900.0;
        let target = Vector3::new(4.0, 4.0, 0.0);
        let fwd = (target - c).normalize();
        let right = fwd.cross(&Vector3::z()).normalize();
        let down = fwd.cross(&right);
        let d = Vector3::new(2.5, 5.5, 1.5) - c;
        let want = [
            f_true * d.dot(&right) / d.dot(&fwd) + 640.0,
            f_true * d.dot(&down) / d.dot(&fwd) + 360.0,
        ];
        let got = v.project(2.5, 5.5, 1.5).unwrap();
        assert!(
            (got[0] - want[0]).abs() < 0.5 && (got[1] - want[1]).abs() < 0.5,
            "{got:?} vs {want:?}"
        );
        // Seen from behind c3, its sight line continues to the board.
        let g = v.ground_behind(2.5, 5.5, 1.5).unwrap();
        let k = c.z / (c.z - 1.5);
        assert!((g[0] - (c.x + (2.5 - c.x) * k)).abs() < 0.02, "{g:?}");
        assert!((v.focal_px - 900.0).abs() < 1.0, "{v:?}");
        for k in 0..3 {
            assert!((v.centre[k] - c[k]).abs() < 0.01, "{v:?}");
        }
    }

    #[test]
    fn a_tall_piece_in_front_hides_the_square_behind() {
        // Camera low in front of the board at y = -10 (grid units), 6 up.
        let v = Viewpoint {
            centre: [4.0, -10.0, 6.0],
            up: [0.0, 0.0, 0.0],
            sign: 1.0,
            image_from_grid: Matrix3::identity(),
            focal_px: 1000.0,
            focal_estimated: true,
        };
        // A piece on the square in front (centre y = 3.5) hides y = 4.5
        // when tall, not when flat; a piece behind never hides it.
        assert!(v.hidden_by([4.0, 4.5], [4.0, 3.5], 0.3, 1.0));
        assert!(!v.hidden_by([4.0, 4.5], [4.0, 3.5], 0.3, 0.1));
        assert!(!v.hidden_by([4.0, 4.5], [4.0, 5.5], 0.3, 2.0));
        assert!(!v.hidden_by([4.0, 4.5], [5.0, 3.5], 0.3, 2.0));
    }

    #[test]
    fn shadows_fall_away_from_the_camera() {
        // Camera low in front of the board (y = -6, 5 up): cell (3, 4)
        // is shadowed by the cell in front, (3, 3), not by the one
        // behind, (3, 5), nor by a far one, (3, 0).
        let c = Vector3::new(4.0, -6.0, 5.0);
        let v = estimate(&location_from_camera(c, 900.0, (1280, 720))).unwrap();
        let s = v.shadow_sources();
        let cell = |c: usize, r: usize| c + 8 * r;
        assert_ne!(s[cell(3, 4)] & (1 << cell(3, 3)), 0);
        assert_eq!(s[cell(3, 4)] & (1 << cell(3, 5)), 0);
        assert_eq!(s[cell(3, 4)] & (1 << cell(3, 0)), 0);
        // Overhead, nothing casts a shadow.
        let top = Vector3::new(4.0, 4.01, 30.0);
        let v = estimate(&location_from_camera(top, 900.0, (1280, 720))).unwrap();
        assert!(v.shadow_sources().iter().all(|b| *b == 0));
    }
}
