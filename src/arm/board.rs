//! The board in the arm frame: square centres, graveyard and reserve slots,
//! and the rigid fit that measures `arm_from_board` from touched squares.

use std::path::Path;

use nalgebra::{Isometry3, Point3, Translation3, UnitQuaternion, Vector2, Vector3};
use serde::{Deserialize, Serialize};
use shakmaty::Square;

use super::config::{ArmConfig, BoardConfig};

/// Where the board and its side areas are, in the arm frame.
#[derive(Debug, Clone, PartialEq)]
pub struct BoardGeometry {
    pub arm_from_board: Isometry3<f64>,
    pub square_m: f64,
    /// Slot centres in the board frame.
    pub graveyard: Vec<(f64, f64)>,
    pub reserve: Vec<(f64, f64)>,
}

impl BoardGeometry {
    pub fn new(board: &BoardConfig, cfg: &ArmConfig) -> BoardGeometry {
        BoardGeometry {
            arm_from_board: arm_from_board(board),
            square_m: board.square_m,
            graveyard: cfg.graveyard.centres(),
            reserve: cfg.reserve.grid.centres(),
        }
    }

    /// Board-frame point (metres) to the arm frame.
    pub fn to_arm(&self, x: f64, y: f64, z: f64) -> Point3<f64> {
        self.arm_from_board.transform_point(&Point3::new(x, y, z))
    }

    /// Centre of a square on the board surface, board frame.
    pub fn square_xy(&self, sq: Square) -> (f64, f64) {
        (
            (f64::from(u8::from(sq.file())) + 0.5) * self.square_m,
            (f64::from(u8::from(sq.rank())) + 0.5) * self.square_m,
        )
    }

    /// The board's file direction (a to h) in the arm frame, horizontal: the jaws line up with it.
    pub fn file_axis(&self) -> Vector2<f64> {
        let v = self.arm_from_board.rotation * Vector3::x();
        Vector2::new(v.x, v.y)
    }
}

/// The board frame in the arm frame from a placement.
pub fn arm_from_board(b: &BoardConfig) -> Isometry3<f64> {
    Isometry3::from_parts(
        Translation3::new(b.x_m, b.y_m, b.z_m),
        UnitQuaternion::from_euler_angles(0.0, 0.0, b.yaw_deg.to_radians()),
    )
}

/// A measured placement as stored in `calibration/arm_from_board.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BoardCalibration {
    pub board: BoardConfig,
    /// Squares touched, and each one's distance from the fitted board (mm).
    pub squares: Vec<String>,
    pub residuals_mm: Vec<f64>,
    /// Square size the touched points implied (before fixing it to the config's).
    pub measured_square_m: f64,
}

/// A board calibration could not be made or read.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum BoardFitError {
    #[error("need at least 3 touched squares not all on one line, got {0}")]
    TooFewPoints(usize),
    #[error("touched squares imply {measured_mm:.1} mm squares but the config says {configured_mm:.1} mm (more than {MAX_SQUARE_ERROR_PERCENT} % apart): wrong squares touched, or fix arm.board.square_m")]
    SquareSize {
        measured_mm: f64,
        configured_mm: f64,
    },
    #[error("square {square} is {residual_mm:.1} mm from the fitted board (limit {MAX_RESIDUAL_MM} mm): touch it again")]
    Residual { square: String, residual_mm: f64 },
    #[error("board calibration {path}: {message}")]
    File { path: String, message: String },
}

/// Largest residual accepted: placement must be good to ±2-3 mm on small boards (hardware.md).
pub const MAX_RESIDUAL_MM: f64 = 4.0;
/// Largest disagreement between measured and configured square size.
pub const MAX_SQUARE_ERROR_PERCENT: f64 = 3.0;

/// Fits the board frame to tool points touched on square centres.
///
/// A 2-D similarity fit first measures the square size (checked against the
/// configured one); the placement is then the rigid fit (rotation about the
/// vertical plus translation) with the configured square size, and the
/// board height is the mean touched height.
pub fn fit_board(
    touched: &[(Square, Point3<f64>)],
    square_m: f64,
) -> Result<BoardCalibration, BoardFitError> {
    if touched.len() < 3 {
        return Err(BoardFitError::TooFewPoints(touched.len()));
    }
    let geo = |sq: Square| {
        Vector2::new(
            (f64::from(u8::from(sq.file())) + 0.5) * square_m,
            (f64::from(u8::from(sq.rank())) + 0.5) * square_m,
        )
    };
    let n = touched.len() as f64;
    let b: Vec<Vector2<f64>> = touched.iter().map(|(s, _)| geo(*s)).collect();
    let a: Vec<Vector2<f64>> = touched
        .iter()
        .map(|(_, p)| Vector2::new(p.x, p.y))
        .collect();
    let bc = b.iter().sum::<Vector2<f64>>() / n;
    let ac = a.iter().sum::<Vector2<f64>>() / n;
    let (mut dot, mut cross, mut var_b) = (0.0, 0.0, 0.0);
    for (bi, ai) in b.iter().zip(&a) {
        let (db, da) = (bi - bc, ai - ac);
        dot += db.dot(&da);
        cross += db.x * da.y - db.y * da.x;
        var_b += db.norm_squared();
    }
    // Collinear points leave the rotation undetermined.
    let spread_ok = {
        let mut cov = nalgebra::Matrix2::zeros();
        for bi in &b {
            let d = bi - bc;
            cov += d * d.transpose();
        }
        cov.determinant() > (square_m * square_m).powi(2) * 1e-3
    };
    if var_b <= 0.0 || !spread_ok {
        return Err(BoardFitError::TooFewPoints(touched.len()));
    }
    let yaw = cross.atan2(dot);
    let scale = (dot * dot + cross * cross).sqrt() / var_b;
    let measured_square_m = scale * square_m;
    if ((scale - 1.0) * 100.0).abs() > MAX_SQUARE_ERROR_PERCENT {
        return Err(BoardFitError::SquareSize {
            measured_mm: measured_square_m * 1000.0,
            configured_mm: square_m * 1000.0,
        });
    }
    let rot = nalgebra::Rotation2::new(yaw);
    let t = ac - rot * bc;
    let z = touched.iter().map(|(_, p)| p.z).sum::<f64>() / n;
    let board = BoardConfig {
        square_m,
        x_m: t.x,
        y_m: t.y,
        z_m: z,
        yaw_deg: yaw.to_degrees(),
    };
    let frame = arm_from_board(&board);
    let mut residuals_mm = Vec::with_capacity(touched.len());
    for ((sq, p), bi) in touched.iter().zip(&b) {
        let predicted = frame.transform_point(&Point3::new(bi.x, bi.y, 0.0));
        let r = (predicted - p).norm() * 1000.0;
        if r > MAX_RESIDUAL_MM {
            return Err(BoardFitError::Residual {
                square: sq.to_string(),
                residual_mm: r,
            });
        }
        residuals_mm.push(r);
    }
    Ok(BoardCalibration {
        board,
        squares: touched.iter().map(|(s, _)| s.to_string()).collect(),
        residuals_mm,
        measured_square_m,
    })
}

impl BoardCalibration {
    pub fn load(path: &Path) -> Result<BoardCalibration, BoardFitError> {
        let bad = |message: String| BoardFitError::File {
            path: path.display().to_string(),
            message,
        };
        let text = std::fs::read_to_string(path).map_err(|e| bad(e.to_string()))?;
        let cal: BoardCalibration = serde_json::from_str(&text).map_err(|e| bad(e.to_string()))?;
        let b = cal.board;
        if ![b.square_m, b.x_m, b.y_m, b.z_m, b.yaw_deg]
            .iter()
            .all(|v| v.is_finite())
            || b.square_m <= 0.0
        {
            return Err(bad(
                "placement numbers must be finite and the square size positive".into(),
            ));
        }
        Ok(cal)
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_else(|_| "{}".to_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn placement() -> BoardConfig {
        BoardConfig {
            square_m: 0.0375,
            x_m: -0.14,
            y_m: -0.37,
            z_m: 0.004,
            yaw_deg: 3.0,
        }
    }

    fn touch(squares: &[Square], noise: &[(f64, f64)]) -> Vec<(Square, Point3<f64>)> {
        let frame = arm_from_board(&placement());
        squares
            .iter()
            .zip(noise.iter().cycle())
            .map(|(s, (nx, ny))| {
                let x = (f64::from(u8::from(s.file())) + 0.5) * 0.0375;
                let y = (f64::from(u8::from(s.rank())) + 0.5) * 0.0375;
                let p = frame.transform_point(&Point3::new(x, y, 0.0));
                (*s, Point3::new(p.x + nx, p.y + ny, p.z))
            })
            .collect()
    }

    #[test]
    fn four_corners_recover_the_placement() {
        let pts = touch(
            &[Square::A1, Square::H1, Square::H8, Square::A8],
            &[(0.0, 0.0)],
        );
        let cal = fit_board(&pts, 0.0375).unwrap();
        let want = placement();
        assert!((cal.board.x_m - want.x_m).abs() < 1e-9);
        assert!((cal.board.y_m - want.y_m).abs() < 1e-9);
        assert!((cal.board.z_m - want.z_m).abs() < 1e-9);
        assert!((cal.board.yaw_deg - want.yaw_deg).abs() < 1e-7);
        assert!(cal.residuals_mm.iter().all(|r| *r < 1e-6));
    }

    #[test]
    fn noisy_touches_give_small_residuals() {
        let noise = [
            (0.001, -0.0005),
            (-0.0008, 0.001),
            (0.0004, 0.0002),
            (-0.001, -0.0007),
        ];
        let pts = touch(
            &[Square::A1, Square::H1, Square::H8, Square::A8, Square::D4],
            &noise,
        );
        let cal = fit_board(&pts, 0.0375).unwrap();
        assert!(
            cal.residuals_mm.iter().all(|r| *r < 2.5),
            "{:?}",
            cal.residuals_mm
        );
        assert!((cal.board.yaw_deg - 3.0).abs() < 0.5);
    }

    #[test]
    fn wrong_square_is_rejected() {
        // The tool was put on b1 while the program asked for a1.
        let mut pts = touch(
            &[Square::B1, Square::H1, Square::H8, Square::A8],
            &[(0.0, 0.0)],
        );
        pts[0].0 = Square::A1;
        let err = fit_board(&pts, 0.0375).unwrap_err();
        assert!(
            matches!(
                err,
                BoardFitError::Residual { .. } | BoardFitError::SquareSize { .. }
            ),
            "{err}"
        );
    }

    #[test]
    fn wrong_square_size_is_named() {
        let pts = touch(
            &[Square::A1, Square::H1, Square::H8, Square::A8],
            &[(0.0, 0.0)],
        );
        let err = fit_board(&pts, 0.05).unwrap_err();
        assert!(matches!(err, BoardFitError::SquareSize { .. }), "{err}");
    }

    #[test]
    fn collinear_points_are_refused() {
        let pts = touch(&[Square::A1, Square::B1, Square::C1], &[(0.0, 0.0)]);
        assert!(matches!(
            fit_board(&pts, 0.0375),
            Err(BoardFitError::TooFewPoints(3))
        ));
    }

    #[test]
    fn square_centres_land_in_the_arm_frame() {
        let cfg = ArmConfig::default();
        let g = BoardGeometry::new(&cfg.board, &cfg);
        let (x, y) = g.square_xy(Square::A1);
        let p = g.to_arm(x, y, 0.0);
        assert!((p.x - (-0.15 + 0.01875)).abs() < 1e-12);
        assert!((p.y - (-0.42 + 0.01875)).abs() < 1e-12);
        assert_eq!(g.graveyard.len(), 16);
    }
}
