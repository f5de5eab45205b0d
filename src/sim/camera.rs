//! The simulated camera: pinhole intrinsics, OpenCV lens distortion and a pose.
//!
//! Frames: the *board frame* has its origin at the outer corner of a1's
//! playing square (where the a-file edge meets the first-rank edge), x along
//! the ranks toward the h-file, y along the files toward rank 8, z up, in
//! millimetres. The *camera frame* is OpenCV's: x right, y down, z forward
//! along the optical axis. The pose is stored as `camera_from_board`.
//!
//! The projection is exactly OpenCV's `projectPoints` model (k1, k2, p1, p2,
//! k3), so vision code can use the truth with `cv::projectPoints` directly.

use nalgebra::{Isometry3, Point2, Point3, Rotation3, Translation3, UnitQuaternion, Vector3};
use serde::Serialize;

use super::SimError;

/// Pinhole intrinsics in pixels.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Intrinsics {
    pub fx: f64,
    pub fy: f64,
    pub cx: f64,
    pub cy: f64,
}

/// OpenCV's five-coefficient distortion model (k1, k2, p1, p2, k3).
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize)]
pub struct Distortion {
    pub k1: f64,
    pub k2: f64,
    pub p1: f64,
    pub p2: f64,
    pub k3: f64,
}

impl Distortion {
    /// The mild barrel distortion of a cheap wide webcam lens.
    /// (Typical calibrations of 60-70 degree USB webcams give k1 around -0.05 to -0.15.)
    pub const WEBCAM: Distortion = Distortion {
        k1: -0.08,
        k2: 0.03,
        p1: 0.0,
        p2: 0.0,
        k3: 0.0,
    };

    /// Coefficients in OpenCV's order.
    pub fn coefficients(&self) -> [f64; 5] {
        [self.k1, self.k2, self.p1, self.p2, self.k3]
    }

    /// Distorts normalised image coordinates (x/z, y/z).
    pub fn apply(&self, x: f64, y: f64) -> (f64, f64) {
        let r2 = x * x + y * y;
        let radial = 1.0 + r2 * (self.k1 + r2 * (self.k2 + r2 * self.k3));
        let xd = x * radial + 2.0 * self.p1 * x * y + self.p2 * (r2 + 2.0 * x * x);
        let yd = y * radial + self.p1 * (r2 + 2.0 * y * y) + 2.0 * self.p2 * x * y;
        (xd, yd)
    }

    /// Inverts [`Distortion::apply`] by fixed-point iteration (as OpenCV's
    /// `undistortPoints` does); exact to far below a pixel for webcam lenses.
    pub fn remove(&self, xd: f64, yd: f64) -> (f64, f64) {
        let (mut x, mut y) = (xd, yd);
        for _ in 0..UNDISTORT_ITERATIONS {
            let r2 = x * x + y * y;
            let radial = 1.0 + r2 * (self.k1 + r2 * (self.k2 + r2 * self.k3));
            let dx = 2.0 * self.p1 * x * y + self.p2 * (r2 + 2.0 * x * x);
            let dy = self.p1 * (r2 + 2.0 * y * y) + 2.0 * self.p2 * x * y;
            x = (xd - dx) / radial;
            y = (yd - dy) / radial;
        }
        (x, y)
    }
}

/// Fixed-point iterations for undistortion; 20 converge to < 1e-9 for |k1| <= 0.3
/// inside the image (checked by the round-trip test).
const UNDISTORT_ITERATIONS: usize = 20;

/// Where the camera is and where it looks, in the board frame, as a person
/// would describe it: position in mm, then yaw, pitch and roll in degrees.
///
/// yaw: heading of the view, counter-clockwise seen from above; 0 looks from
/// White's side toward Black (along +y). pitch: angle below the horizon; 90 is
/// straight down. roll: rotation about the optical axis, clockwise in the image.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct CameraPose {
    pub x: f64,
    pub y: f64,
    pub z: f64,
    pub yaw_deg: f64,
    pub pitch_deg: f64,
    pub roll_deg: f64,
}

impl CameraPose {
    /// The rigid transform taking board coordinates into camera coordinates.
    pub fn camera_from_board(&self) -> Isometry3<f64> {
        let (yaw, pitch, roll) = (
            self.yaw_deg.to_radians(),
            self.pitch_deg.to_radians(),
            self.roll_deg.to_radians(),
        );
        let forward = Vector3::new(
            -yaw.sin() * pitch.cos(),
            yaw.cos() * pitch.cos(),
            -pitch.sin(),
        );
        let right0 = Vector3::new(yaw.cos(), yaw.sin(), 0.0);
        let down0 = forward.cross(&right0);
        let right = right0 * roll.cos() + down0 * roll.sin();
        let down = down0 * roll.cos() - right0 * roll.sin();
        // Rows of board->camera rotation are the camera axes in board coordinates.
        let rot = Rotation3::from_matrix_unchecked(nalgebra::Matrix3::from_rows(&[
            right.transpose(),
            down.transpose(),
            forward.transpose(),
        ]));
        let position = Vector3::new(self.x, self.y, self.z);
        let t = -(rot * position);
        Isometry3::from_parts(
            Translation3::from(t),
            UnitQuaternion::from_rotation_matrix(&rot),
        )
    }
}

/// Named viewpoints. Each aims at the board centre and backs off until the
/// whole board (with its border) fits the image.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CameraPreset {
    /// Straight down, White at the bottom of the image (as most real photos).
    Overhead,
    /// From White's side, 55 degrees below the horizon (a phone held by a player).
    Angled,
    /// Low view, 30 degrees, from the a1 corner.
    Low,
}

/// How a camera is requested: a preset or an explicit pose.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum CameraSpec {
    Preset(CameraPreset),
    Pose(CameraPose),
}

impl std::str::FromStr for CameraSpec {
    type Err = SimError;

    /// `overhead`, `angled`, `low` or `x,y,z,yaw,pitch,roll` (mm, degrees).
    fn from_str(s: &str) -> Result<Self, SimError> {
        match s.trim() {
            "overhead" => return Ok(CameraSpec::Preset(CameraPreset::Overhead)),
            "angled" => return Ok(CameraSpec::Preset(CameraPreset::Angled)),
            "low" => return Ok(CameraSpec::Preset(CameraPreset::Low)),
            _ => {}
        }
        let bad = || {
            SimError::BadCamera(format!(
            "`{s}`: expected overhead, angled, low or six numbers x,y,z,yaw,pitch,roll (mm, degrees)"
        ))
        };
        let nums: Vec<f64> = s
            .split(',')
            .map(|p| p.trim().parse::<f64>())
            .collect::<Result<_, _>>()
            .map_err(|_| bad())?;
        if nums.len() != 6 || nums.iter().any(|v| !v.is_finite()) {
            return Err(bad());
        }
        Ok(CameraSpec::Pose(CameraPose {
            x: nums[0],
            y: nums[1],
            z: nums[2],
            yaw_deg: nums[3],
            pitch_deg: nums[4],
            roll_deg: nums[5],
        }))
    }
}

/// Horizontal field of view of a typical USB webcam / phone main camera (about 65 degrees).
pub const DEFAULT_HFOV_DEG: f64 = 65.0;

/// A calibrated camera: image size, intrinsics, distortion and pose.
#[derive(Debug, Clone, PartialEq)]
pub struct Camera {
    pub width: u32,
    pub height: u32,
    pub intrinsics: Intrinsics,
    pub distortion: Distortion,
    pub camera_from_board: Isometry3<f64>,
    /// The pose as given (presets fill it in too); informational.
    pub pose: CameraPose,
}

impl Camera {
    /// A camera with square pixels, the principal point at the centre and the
    /// given horizontal field of view.
    pub fn new(
        width: u32,
        height: u32,
        hfov_deg: f64,
        distortion: Distortion,
        pose: CameraPose,
    ) -> Result<Camera, SimError> {
        if width < 8 || height < 8 || width > 8192 || height > 8192 {
            return Err(SimError::BadCamera(format!(
                "image size {width}x{height}: each side must be 8..=8192 pixels"
            )));
        }
        if !(10.0..=150.0).contains(&hfov_deg) {
            return Err(SimError::BadCamera(format!(
                "field of view {hfov_deg} degrees: must be 10..=150"
            )));
        }
        let f = width as f64 / 2.0 / (hfov_deg.to_radians() / 2.0).tan();
        Ok(Camera {
            width,
            height,
            intrinsics: Intrinsics {
                fx: f,
                fy: f,
                cx: width as f64 / 2.0,
                cy: height as f64 / 2.0,
            },
            distortion,
            camera_from_board: pose.camera_from_board(),
            pose,
        })
    }

    /// A camera for a spec. Presets aim at `target` (the board centre) and
    /// come as close as they can while every point of `keep_in_view` stays
    /// inside the image with a small margin (as a person frames a photo).
    pub fn for_spec(
        spec: CameraSpec,
        width: u32,
        height: u32,
        target: Point3<f64>,
        keep_in_view: &[Point3<f64>],
    ) -> Result<Camera, SimError> {
        let pose = match spec {
            CameraSpec::Pose(p) => p,
            CameraSpec::Preset(preset) => {
                let (yaw, pitch) = match preset {
                    CameraPreset::Overhead => (0.0, 90.0),
                    CameraPreset::Angled => (0.0, 55.0),
                    CameraPreset::Low => (-45.0, 30.0),
                };
                let d = framing_distance(width, height, target, keep_in_view, yaw, pitch, 0.0)?;
                look_at_pose(target, yaw, pitch, d)
            }
        };
        Camera::new(width, height, DEFAULT_HFOV_DEG, Distortion::WEBCAM, pose)
    }

    /// Projects a board-frame point to pixel coordinates; `None` behind the camera.
    pub fn project(&self, p_board: &Point3<f64>) -> Option<Point2<f64>> {
        let p = self.camera_from_board * p_board;
        self.project_camera(&p)
    }

    /// Projects a camera-frame point; `None` when it is not in front of the lens.
    pub fn project_camera(&self, p: &Point3<f64>) -> Option<Point2<f64>> {
        if p.z <= MIN_DEPTH_MM {
            return None;
        }
        let (xd, yd) = self.distortion.apply(p.x / p.z, p.y / p.z);
        Some(Point2::new(
            self.intrinsics.fx * xd + self.intrinsics.cx,
            self.intrinsics.fy * yd + self.intrinsics.cy,
        ))
    }

    /// The viewing ray through pixel coordinates (u, v), in the camera frame,
    /// as a direction with z = 1.
    pub fn ray_camera(&self, u: f64, v: f64) -> Vector3<f64> {
        let xd = (u - self.intrinsics.cx) / self.intrinsics.fx;
        let yd = (v - self.intrinsics.cy) / self.intrinsics.fy;
        let (x, y) = self.distortion.remove(xd, yd);
        Vector3::new(x, y, 1.0)
    }

    /// The camera centre in the board frame.
    pub fn position_board(&self) -> Point3<f64> {
        self.camera_from_board.inverse() * Point3::origin()
    }
}

/// The shortest distance from `target` at which a default webcam looking at
/// it with the given yaw, pitch and roll keeps every point of `keep_in_view`
/// inside the image with a small margin (as a person frames a photo).
pub fn framing_distance(
    width: u32,
    height: u32,
    target: Point3<f64>,
    keep_in_view: &[Point3<f64>],
    yaw: f64,
    pitch: f64,
    roll: f64,
) -> Result<f64, SimError> {
    let fits = |d: f64| -> Result<bool, SimError> {
        let pose = CameraPose {
            roll_deg: roll,
            ..look_at_pose(target, yaw, pitch, d)
        };
        let cam = Camera::new(width, height, DEFAULT_HFOV_DEG, Distortion::WEBCAM, pose)?;
        let (mx, my) = (width as f64 * FRAME_MARGIN, height as f64 * FRAME_MARGIN);
        Ok(keep_in_view.iter().all(|p| {
            cam.project(p).is_some_and(|q| {
                q.x >= mx && q.y >= my && q.x <= width as f64 - mx && q.y <= height as f64 - my
            })
        }))
    };
    // Bisect the distance: too close cuts the board off, far always fits.
    let (mut near, mut far) = (10.0, 50_000.0);
    if !fits(far)? {
        return Err(SimError::BadCamera(
            "the board does not fit the picture even from 50 m".to_owned(),
        ));
    }
    for _ in 0..50 {
        let mid = 0.5 * (near + far);
        if fits(mid)? {
            far = mid;
        } else {
            near = mid;
        }
    }
    Ok(far)
}

/// Presets keep the board this share of the image size away from the edges.
const FRAME_MARGIN: f64 = 0.03;
/// Points nearer than this to the lens plane are not projected.
pub const MIN_DEPTH_MM: f64 = 1.0;

/// A pose at `distance` from `target`, looking at it with the given yaw and pitch.
pub fn look_at_pose(
    target: Point3<f64>,
    yaw_deg: f64,
    pitch_deg: f64,
    distance: f64,
) -> CameraPose {
    let (yaw, pitch) = (yaw_deg.to_radians(), pitch_deg.to_radians());
    let forward = Vector3::new(
        -yaw.sin() * pitch.cos(),
        yaw.cos() * pitch.cos(),
        -pitch.sin(),
    );
    let pos = target - forward * distance;
    CameraPose {
        x: pos.x,
        y: pos.y,
        z: pos.z,
        yaw_deg,
        pitch_deg,
        roll_deg: 0.0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overhead_pose_looks_down_with_rank_eight_up() {
        let pose = look_at_pose(Point3::new(200.0, 200.0, 0.0), 0.0, 90.0, 800.0);
        let cam = Camera::new(640, 480, 60.0, Distortion::default(), pose).unwrap();
        let centre = cam.project(&Point3::new(200.0, 200.0, 0.0)).unwrap();
        assert!((centre.x - 320.0).abs() < 1e-6 && (centre.y - 240.0).abs() < 1e-6);
        // A point toward rank 8 (+y) is higher in the image (smaller v);
        // a point toward the h-file (+x) is to the right.
        let up = cam.project(&Point3::new(200.0, 300.0, 0.0)).unwrap();
        let right = cam.project(&Point3::new(300.0, 200.0, 0.0)).unwrap();
        assert!(up.y < 240.0 - 10.0, "{up:?}");
        assert!(right.x > 320.0 + 10.0, "{right:?}");
    }

    #[test]
    fn undistortion_inverts_distortion() {
        let d = Distortion {
            k1: -0.2,
            k2: 0.05,
            p1: 0.001,
            p2: -0.002,
            k3: 0.0,
        };
        for &(x, y) in &[(0.0, 0.0), (0.3, -0.2), (-0.5, 0.4), (0.6, 0.3)] {
            let (xd, yd) = d.apply(x, y);
            let (xu, yu) = d.remove(xd, yd);
            assert!(
                (xu - x).abs() < 1e-9 && (yu - y).abs() < 1e-9,
                "{x},{y} -> {xu},{yu}"
            );
        }
    }

    #[test]
    fn ray_through_projection_hits_the_point() {
        let pose = look_at_pose(Point3::new(200.0, 200.0, 0.0), -45.0, 30.0, 900.0);
        let cam = Camera::new(1280, 720, 65.0, Distortion::WEBCAM, pose).unwrap();
        let p = Point3::new(50.0, 370.0, 40.0);
        let px = cam.project(&p).unwrap();
        let ray = cam.ray_camera(px.x, px.y);
        let pc = cam.camera_from_board * p;
        let expected = pc.coords / pc.z;
        assert!((ray - expected).norm() < 1e-6, "{ray:?} vs {expected:?}");
    }

    #[test]
    fn camera_spec_parses_presets_and_poses_and_rejects_junk() {
        assert_eq!(
            "low".parse::<CameraSpec>().unwrap(),
            CameraSpec::Preset(CameraPreset::Low)
        );
        let CameraSpec::Pose(p) = "1,2,3,4,5,6".parse::<CameraSpec>().unwrap() else {
            panic!("expected a pose");
        };
        assert_eq!((p.x, p.roll_deg), (1.0, 6.0));
        assert!("1,2,3".parse::<CameraSpec>().is_err());
        assert!("sideways".parse::<CameraSpec>().is_err());
        assert!(Camera::new(0, 10, 60.0, Distortion::default(), p).is_err());
    }
}
