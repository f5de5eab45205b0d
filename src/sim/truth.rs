//! Ground truth of a frame: where the board is in the image, the true
//! camera, and what stands on each square and whether a hand hides it.

use std::collections::BTreeMap;

use nalgebra::Point3;
use serde::Serialize;
use shakmaty::Square;

use super::camera::{Camera, CameraPose};
use super::world::World;
use super::SimError;

/// Ids in the renderer's object buffer.
pub struct ObjectIds;

impl ObjectIds {
    /// Board, table, wall.
    pub const SCENE: u16 = 0;
    pub const HAND: u16 = u16::MAX - 1;
    pub const ARM: u16 = u16::MAX - 2;
    /// Piece `i` of `World::pieces`.
    pub fn piece(i: usize) -> u16 {
        (i as u16).saturating_add(1).min(u16::MAX - 3)
    }
}

/// A square counts as hidden by the hand (or arm) when at least this share
/// of its sample points is covered in the image: a quarter hidden already
/// defeats a per-square classifier's view of a piece's base.
pub const OCCLUDED_FRACTION: f64 = 0.25;
/// Sample points per square side for the occlusion share.
const OCCLUSION_SAMPLES: usize = 5;

/// Truth about one square.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SquareTruth {
    /// FEN letter of the piece standing there (`P`, `n`, ...), or null.
    pub piece: Option<char>,
    /// Whether the hand or arm hides it (see [`OCCLUDED_FRACTION`]).
    pub occluded: bool,
    /// Share of the square hidden by the hand or arm, 0..1.
    pub occluded_fraction: f64,
}

/// The true camera, in OpenCV's conventions.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CameraTruth {
    pub width: u32,
    pub height: u32,
    pub fx: f64,
    pub fy: f64,
    pub cx: f64,
    pub cy: f64,
    /// k1, k2, p1, p2, k3.
    pub distortion: [f64; 5],
    /// Rotation board -> camera, row-major.
    pub rotation: [[f64; 3]; 3],
    /// Rodrigues vector of `rotation` (OpenCV's rvec).
    pub rvec: [f64; 3],
    /// Translation board -> camera in mm (OpenCV's tvec).
    pub tvec: [f64; 3],
    /// Camera centre in the board frame, mm.
    pub position: [f64; 3],
    pub pose: CameraPose,
}

impl CameraTruth {
    pub fn of(camera: &Camera) -> CameraTruth {
        let iso = camera.camera_from_board;
        let m = iso.rotation.to_rotation_matrix();
        let m = m.matrix();
        let rv = iso.rotation.scaled_axis();
        let pos = camera.position_board();
        CameraTruth {
            width: camera.width,
            height: camera.height,
            fx: camera.intrinsics.fx,
            fy: camera.intrinsics.fy,
            cx: camera.intrinsics.cx,
            cy: camera.intrinsics.cy,
            distortion: camera.distortion.coefficients(),
            rotation: [
                [m[(0, 0)], m[(0, 1)], m[(0, 2)]],
                [m[(1, 0)], m[(1, 1)], m[(1, 2)]],
                [m[(2, 0)], m[(2, 1)], m[(2, 2)]],
            ],
            rvec: [rv.x, rv.y, rv.z],
            tvec: [
                iso.translation.vector.x,
                iso.translation.vector.y,
                iso.translation.vector.z,
            ],
            position: [pos.x, pos.y, pos.z],
            pose: camera.pose,
        }
    }
}

/// Everything true about one frame.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FrameTruth {
    /// Outer corners of the 8x8 grid in pixels, in a8, h8, h1, a1 order
    /// (`null` for a corner behind the camera).
    pub corners: Vec<Option<[f64; 2]>>,
    /// The 81 grid points, row 0 = the rank-8 edge from a to h (see
    /// [`super::world::BoardSpec::grid_points`]).
    pub grid: Vec<Option<[f64; 2]>>,
    /// Per square (`"a1"` ... `"h8"`).
    pub squares: BTreeMap<String, SquareTruth>,
    /// Placement part of the FEN of the pieces standing on the board.
    pub board_fen: String,
    /// Whether any of the hand is in the picture.
    pub hand_visible: bool,
    /// Whether any of the robot arm is in the picture.
    pub arm_visible: bool,
    pub camera: CameraTruth,
}

impl FrameTruth {
    /// Truth from the world, the camera and the renderer's object buffer
    /// (`ids`, one per pixel, row-major).
    pub fn compute(world: &World, camera: &Camera, ids: &[u16]) -> Result<FrameTruth, SimError> {
        let (w, h) = (camera.width as usize, camera.height as usize);
        if ids.len() != w * h {
            return Err(SimError::BadOptions(format!(
                "object buffer of {} ids for a {w}x{h} image",
                ids.len()
            )));
        }
        let px = |p: &Point3<f64>| camera.project(p).map(|q| [q.x, q.y]);
        let corners = world.board.corners().iter().map(px).collect();
        let grid = world.board.grid_points().iter().map(px).collect();
        let occ = world.occupancy();
        let s = world.board.square_mm;
        let mut squares = BTreeMap::new();
        for sq in Square::ALL {
            let origin = (
                f64::from(u32::from(sq.file())) * s,
                f64::from(u32::from(sq.rank())) * s,
            );
            let mut hidden = 0;
            for a in 0..OCCLUSION_SAMPLES {
                for b in 0..OCCLUSION_SAMPLES {
                    let p = Point3::new(
                        origin.0 + (a as f64 + 0.5) / OCCLUSION_SAMPLES as f64 * s,
                        origin.1 + (b as f64 + 0.5) / OCCLUSION_SAMPLES as f64 * s,
                        0.0,
                    );
                    let Some(q) = camera.project(&p) else {
                        continue;
                    };
                    if q.x < 0.0 || q.y < 0.0 || q.x >= w as f64 || q.y >= h as f64 {
                        continue;
                    }
                    let id = ids[q.y as usize * w + q.x as usize];
                    if id == ObjectIds::HAND || id == ObjectIds::ARM {
                        hidden += 1;
                    }
                }
            }
            let fraction = hidden as f64 / (OCCLUSION_SAMPLES * OCCLUSION_SAMPLES) as f64;
            squares.insert(
                sq.to_string(),
                SquareTruth {
                    piece: occ[usize::from(sq)].map(|p| p.char()),
                    occluded: fraction >= OCCLUDED_FRACTION,
                    occluded_fraction: fraction,
                },
            );
        }
        Ok(FrameTruth {
            corners,
            grid,
            squares,
            board_fen: world.board_fen(),
            hand_visible: ids.contains(&ObjectIds::HAND),
            arm_visible: ids.contains(&ObjectIds::ARM),
            camera: CameraTruth::of(camera),
        })
    }

    /// Squares hidden by the hand or arm, in a1..h8 order.
    pub fn occluded_squares(&self) -> Vec<String> {
        let mut v: Vec<(usize, String)> = self
            .squares
            .iter()
            .filter(|(_, t)| t.occluded)
            .filter_map(|(k, _)| {
                k.parse::<Square>()
                    .ok()
                    .map(|s| (usize::from(s), k.clone()))
            })
            .collect();
        v.sort();
        v.into_iter().map(|(_, k)| k).collect()
    }
}
