//! Camera intrinsics from checkerboard photos, and the board pose, stored in
//! `calibration/` as OpenCV FileStorage YAML (readable by OpenCV tools).

use std::path::Path;

use opencv::core::{FileStorage, Mat, Point2f, Point3f, Size, TermCriteria, Vector};
use opencv::prelude::*;
use opencv::{calib3d, core, imgproc};

use super::homography::Pt;
use super::image::RgbImage;
use super::io;
use super::locate::BoardLocation;
use super::orientation::Side;
use super::VisionError;

/// Fewer usable views than this cannot pin down focal length, principal
/// point and distortion (OpenCV's tutorial asks for at least 10; 5 is the
/// floor below which results are routinely wrong).
pub const MIN_VIEWS: usize = 5;
/// An RMS reprojection error above this (pixels) means bad detections or a
/// wrong pattern size; a good calibration is well under 1 px.
pub const MAX_RMS_PX: f64 = 2.0;
/// Views must show the pattern at different tilts: the spread of the
/// pattern's apparent aspect ratio (short/long side) across views must be at
/// least this, or the views are degenerate (all fronto-parallel or copies).
pub const MIN_TILT_SPREAD: f64 = 0.05;

/// Camera intrinsics.
#[derive(Debug, Clone, PartialEq)]
pub struct CameraCalibration {
    /// 3x3 row-major camera matrix.
    pub camera_matrix: [f64; 9],
    /// k1, k2, p1, p2, k3.
    pub dist_coeffs: Vec<f64>,
    pub image_size: (usize, usize),
    pub rms_px: f64,
    pub views: usize,
}

fn gray_mat(img: &RgbImage) -> Result<Mat, VisionError> {
    let bgr = io::bgr_mat_from_rgb(img)?;
    let mut gray = Mat::default();
    imgproc::cvt_color_def(&bgr, &mut gray, imgproc::COLOR_BGR2GRAY)?;
    Ok(gray)
}

/// Inner corners of a `cols x rows` (inner-corner count) checkerboard, sub-pixel refined.
pub fn find_pattern(
    img: &RgbImage,
    cols: usize,
    rows: usize,
) -> Result<Option<Vec<Pt>>, VisionError> {
    let gray = gray_mat(img)?;
    let mut corners = Vector::<Point2f>::new();
    let found = calib3d::find_chessboard_corners(
        &gray,
        Size::new(cols as i32, rows as i32),
        &mut corners,
        calib3d::CALIB_CB_ADAPTIVE_THRESH | calib3d::CALIB_CB_NORMALIZE_IMAGE,
    )?;
    if !found || corners.len() != cols * rows {
        return Ok(None);
    }
    let criteria = TermCriteria::new(core::TermCriteria_EPS + core::TermCriteria_COUNT, 30, 0.001)?;
    imgproc::corner_sub_pix(
        &gray,
        &mut corners,
        Size::new(5, 5),
        Size::new(-1, -1),
        criteria,
    )?;
    Ok(Some(
        corners.iter().map(|p| [p.x as f64, p.y as f64]).collect(),
    ))
}

fn aspect(c: &[Pt], cols: usize, rows: usize) -> f64 {
    let d = |a: Pt, b: Pt| (a[0] - b[0]).hypot(a[1] - b[1]);
    let top = d(c[0], c[cols - 1]) / (cols - 1) as f64;
    let left = d(c[0], c[(rows - 1) * cols]) / (rows - 1) as f64;
    top.min(left) / top.max(left).max(1e-9)
}

/// Calibrates from photos of a checkerboard with `cols x rows` inner corners
/// and `square_mm` squares. Refuses too few or degenerate views.
pub fn calibrate_camera(
    images: &[RgbImage],
    cols: usize,
    rows: usize,
    square_mm: f64,
) -> Result<CameraCalibration, VisionError> {
    if cols < 3 || rows < 3 {
        return Err(VisionError::Input(format!(
            "pattern {cols}x{rows}: need at least 3x3 inner corners"
        )));
    }
    if square_mm.partial_cmp(&0.0) != Some(std::cmp::Ordering::Greater) {
        return Err(VisionError::Input(format!(
            "square size {square_mm} mm: must be positive"
        )));
    }
    let Some(first) = images.first() else {
        return Err(VisionError::Input("no calibration images".into()));
    };
    let size = (first.width, first.height);
    let mut found = Vec::new();
    for (i, img) in images.iter().enumerate() {
        if (img.width, img.height) != size {
            return Err(VisionError::Input(format!(
                "image {i} is {}x{}, the first is {}x{}: all views must come from one camera mode",
                img.width, img.height, size.0, size.1
            )));
        }
        if let Some(c) = find_pattern(img, cols, rows)? {
            found.push(c);
        }
    }
    if found.len() < MIN_VIEWS {
        return Err(VisionError::Input(format!(
            "the {cols}x{rows} pattern was found in {} of {} images; need at least {MIN_VIEWS}",
            found.len(),
            images.len()
        )));
    }
    let aspects: Vec<f64> = found.iter().map(|c| aspect(c, cols, rows)).collect();
    let spread = aspects.iter().copied().fold(f64::NEG_INFINITY, f64::max)
        - aspects.iter().copied().fold(f64::INFINITY, f64::min);
    if spread < MIN_TILT_SPREAD {
        return Err(VisionError::Input(format!(
            "degenerate views: the pattern looks the same in all {} views (tilt spread {spread:.3} < {MIN_TILT_SPREAD}); tilt it differently",
            found.len()
        )));
    }
    let mut object_points = Vector::<Vector<Point3f>>::new();
    let mut image_points = Vector::<Vector<Point2f>>::new();
    for c in &found {
        let obj: Vector<Point3f> = (0..rows)
            .flat_map(|r| {
                (0..cols).map(move |k| {
                    Point3f::new(
                        (k as f64 * square_mm) as f32,
                        (r as f64 * square_mm) as f32,
                        0.0,
                    )
                })
            })
            .collect();
        object_points.push(obj);
        image_points.push(
            c.iter()
                .map(|p| Point2f::new(p[0] as f32, p[1] as f32))
                .collect(),
        );
    }
    let mut k = Mat::default();
    let mut dist = Mat::default();
    let mut rvecs = Vector::<Mat>::new();
    let mut tvecs = Vector::<Mat>::new();
    let criteria = TermCriteria::new(
        core::TermCriteria_EPS + core::TermCriteria_COUNT,
        30,
        f64::EPSILON,
    )?;
    let rms = calib3d::calibrate_camera(
        &object_points,
        &image_points,
        Size::new(size.0 as i32, size.1 as i32),
        &mut k,
        &mut dist,
        &mut rvecs,
        &mut tvecs,
        0,
        criteria,
    )?;
    let mut m = [0.0; 9];
    for (i, v) in m.iter_mut().enumerate() {
        *v = *k.at_2d::<f64>((i / 3) as i32, (i % 3) as i32)?;
    }
    let dist_coeffs: Vec<f64> = (0..dist.total() as i32)
        .map(|i| dist.at::<f64>(i).copied())
        .collect::<Result<_, _>>()?;
    if !rms.is_finite() || rms > MAX_RMS_PX {
        return Err(VisionError::Input(format!(
            "calibration RMS reprojection error {rms:.2} px > {MAX_RMS_PX} px: wrong pattern size or blurred views"
        )));
    }
    Ok(CameraCalibration {
        camera_matrix: m,
        dist_coeffs,
        image_size: size,
        rms_px: rms,
        views: found.len(),
    })
}

fn fs_error(path: &Path, what: &str) -> VisionError {
    VisionError::Input(format!("{}: {what}", path.display()))
}

/// Writes `camera.yml` (OpenCV FileStorage YAML).
pub fn save_camera(cal: &CameraCalibration, path: &Path) -> Result<(), VisionError> {
    let mut fs = FileStorage::new(
        path,
        core::FileStorage_WRITE | core::FileStorage_FORMAT_YAML,
        "",
    )?;
    if !fs.is_opened()? {
        return Err(fs_error(path, "cannot open for writing"));
    }
    let k = Mat::from_slice_2d(&[
        &cal.camera_matrix[0..3],
        &cal.camera_matrix[3..6],
        &cal.camera_matrix[6..9],
    ])?;
    let d = Mat::from_slice_2d(&[cal.dist_coeffs.as_slice()])?;
    core::write_i32(&mut fs, "image_width", cal.image_size.0 as i32)?;
    core::write_i32(&mut fs, "image_height", cal.image_size.1 as i32)?;
    core::write_mat(&mut fs, "camera_matrix", &k)?;
    core::write_mat(&mut fs, "distortion_coefficients", &d)?;
    core::write_f64(&mut fs, "rms_reprojection_error_px", cal.rms_px)?;
    core::write_i32(&mut fs, "views", cal.views as i32)?;
    fs.release()?;
    Ok(())
}

/// Reads `camera.yml`.
pub fn load_camera(path: &Path) -> Result<CameraCalibration, VisionError> {
    let fs = FileStorage::new(path, core::FileStorage_READ, "")?;
    if !fs.is_opened()? {
        return Err(fs_error(path, "cannot open camera calibration"));
    }
    let k = fs.get("camera_matrix")?.mat()?;
    let d = fs.get("distortion_coefficients")?.mat()?;
    if k.rows() != 3 || k.cols() != 3 {
        return Err(fs_error(path, "camera_matrix must be 3x3"));
    }
    let mut m = [0.0; 9];
    for (i, v) in m.iter_mut().enumerate() {
        *v = *k.at_2d::<f64>((i / 3) as i32, (i % 3) as i32)?;
    }
    let dist_coeffs: Vec<f64> = (0..d.total() as i32)
        .map(|i| d.at::<f64>(i).copied())
        .collect::<Result<_, _>>()?;
    Ok(CameraCalibration {
        camera_matrix: m,
        dist_coeffs,
        image_size: (
            fs.get("image_width")?.to_i32()? as usize,
            fs.get("image_height")?.to_i32()? as usize,
        ),
        rms_px: fs.get("rms_reprojection_error_px")?.real()?,
        views: fs.get("views")?.to_i32()? as usize,
    })
}

/// Where the board is in the fixed camera's image, and which side White is.
#[derive(Debug, Clone, PartialEq)]
pub struct BoardPose {
    /// Outer corners in grid order ((0,0), (8,0), (8,8), (0,8) of the grid frame).
    pub grid_corners: [Pt; 4],
    pub image_size: (usize, usize),
    pub white_at: Side,
    /// Rotation (Rodrigues) and translation (mm) of the board in the camera
    /// frame, when intrinsics were available.
    pub camera_from_board: Option<([f64; 3], [f64; 3])>,
}

impl BoardPose {
    pub fn location(&self) -> Result<BoardLocation, VisionError> {
        BoardLocation::from_corners(self.grid_corners, self.image_size)
    }
}

/// Solves the board's 3D pose from its four outer corners (grid order),
/// with the board's square size in mm; the board frame has x along grid u,
/// y along grid v, z = 0 on the playing surface.
pub fn solve_board_pose(
    cal: &CameraCalibration,
    grid_corners: &[Pt; 4],
    square_mm: f64,
) -> Result<([f64; 3], [f64; 3]), VisionError> {
    let s = (8.0 * square_mm) as f32;
    let obj: Vector<Point3f> = [[0.0, 0.0], [s, 0.0], [s, s], [0.0, s]]
        .iter()
        .map(|p| Point3f::new(p[0], p[1], 0.0))
        .collect();
    let img: Vector<Point2f> = grid_corners
        .iter()
        .map(|p| Point2f::new(p[0] as f32, p[1] as f32))
        .collect();
    let m = &cal.camera_matrix;
    let k = Mat::from_slice_2d(&[&m[0..3], &m[3..6], &m[6..9]])?;
    let d = Mat::from_slice_2d(&[cal.dist_coeffs.as_slice()])?;
    let mut rvec = Mat::default();
    let mut tvec = Mat::default();
    let ok = calib3d::solve_pnp(
        &obj,
        &img,
        &k,
        &d,
        &mut rvec,
        &mut tvec,
        false,
        calib3d::SOLVEPNP_IPPE,
    )?;
    if !ok {
        return Err(VisionError::BoardNotFound(
            "solvePnP found no board pose".into(),
        ));
    }
    let get = |v: &Mat| -> Result<[f64; 3], VisionError> {
        Ok([*v.at::<f64>(0)?, *v.at::<f64>(1)?, *v.at::<f64>(2)?])
    };
    Ok((get(&rvec)?, get(&tvec)?))
}

/// Writes `board.yml`.
pub fn save_board_pose(pose: &BoardPose, path: &Path) -> Result<(), VisionError> {
    let mut fs = FileStorage::new(
        path,
        core::FileStorage_WRITE | core::FileStorage_FORMAT_YAML,
        "",
    )?;
    if !fs.is_opened()? {
        return Err(fs_error(path, "cannot open for writing"));
    }
    let rows: Vec<[f64; 2]> = pose.grid_corners.to_vec();
    let c = Mat::from_slice_2d(&rows)?;
    core::write_i32(&mut fs, "image_width", pose.image_size.0 as i32)?;
    core::write_i32(&mut fs, "image_height", pose.image_size.1 as i32)?;
    core::write_mat(&mut fs, "grid_corners", &c)?;
    core::write_str(&mut fs, "white_at", &pose.white_at.to_string())?;
    if let Some((r, t)) = &pose.camera_from_board {
        core::write_mat(&mut fs, "rvec", &Mat::from_slice_2d(&[r.as_slice()])?)?;
        core::write_mat(&mut fs, "tvec_mm", &Mat::from_slice_2d(&[t.as_slice()])?)?;
    }
    fs.release()?;
    Ok(())
}

/// Reads `board.yml` from a calibration directory.
pub fn load_board_pose(dir: &Path) -> Result<BoardPose, VisionError> {
    let path = dir.join("board.yml");
    if !path.is_file() {
        return Err(fs_error(
            &path,
            "no board pose; run `chessbot calibrate board` first",
        ));
    }
    let fs = FileStorage::new(&path, core::FileStorage_READ, "")?;
    if !fs.is_opened()? {
        return Err(fs_error(&path, "cannot open board pose"));
    }
    let c = fs.get("grid_corners")?.mat()?;
    if c.rows() != 4 || c.cols() != 2 {
        return Err(fs_error(&path, "grid_corners must be 4x2"));
    }
    let mut grid_corners = [[0.0; 2]; 4];
    for (i, gc) in grid_corners.iter_mut().enumerate() {
        *gc = [*c.at_2d::<f64>(i as i32, 0)?, *c.at_2d::<f64>(i as i32, 1)?];
    }
    let white_at: Side = fs
        .get("white_at")?
        .to_string()?
        .parse()
        .map_err(|e: String| fs_error(&path, &format!("white_at {e}")))?;
    Ok(BoardPose {
        grid_corners,
        image_size: (
            fs.get("image_width")?.to_i32()? as usize,
            fs.get("image_height")?.to_i32()? as usize,
        ),
        white_at,
        camera_from_board: None,
    })
}

/// Parses `--corners "x,y x,y x,y x,y"` (a8, h8, h1, a1 in image pixels).
pub fn parse_corners(text: &str) -> Result<[Pt; 4], VisionError> {
    let pts: Vec<&str> = text.split_whitespace().collect();
    if pts.len() != 4 {
        return Err(VisionError::Input(format!(
            "--corners {text:?}: expected four x,y pairs (a8 h8 h1 a1)"
        )));
    }
    let mut out = [[0.0; 2]; 4];
    for (o, p) in out.iter_mut().zip(pts) {
        let xy: Vec<f64> = p
            .split(',')
            .map(|v| v.trim().parse::<f64>())
            .collect::<Result<_, _>>()
            .map_err(|_| VisionError::Input(format!("--corners: {p:?} is not x,y")))?;
        if xy.len() != 2 {
            return Err(VisionError::Input(format!("--corners: {p:?} is not x,y")));
        }
        *o = [xy[0], xy[1]];
    }
    Ok(out)
}

/// Converts a8, h8, h1, a1 corners into grid order for White at `side`.
pub fn grid_corners_from_named(named: [Pt; 4], side: Side) -> [Pt; 4] {
    let idx = side.corner_indices();
    let mut g = [[0.0; 2]; 4];
    for (k, &i) in idx.iter().enumerate() {
        g[i] = named[k];
    }
    g
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vision::homography::Homography;
    use nalgebra::{Matrix3, Rotation3, Vector3};

    /// Renders a checkerboard (`cols+1` x `rows+1` squares of `sq` mm, white
    /// margin) seen by camera `k` at rotation `rot`, translation `t`.
    fn render(
        k: &Matrix3<f64>,
        rot: Rotation3<f64>,
        t: Vector3<f64>,
        cols: usize,
        rows: usize,
        sq: f64,
    ) -> RgbImage {
        let r = rot.matrix();
        let h = k * Matrix3::from_columns(&[r.column(0).into(), r.column(1).into(), t]);
        let board_from_image = Homography { m: h }.inverse().unwrap();
        let (w, hgt) = (640, 480);
        let mut img = RgbImage::new(w, hgt);
        for y in 0..hgt {
            for x in 0..w {
                let p = board_from_image
                    .apply([x as f64 + 0.5, y as f64 + 0.5])
                    .unwrap();
                // Squares start one square before the first inner corner.
                let (i, j) = (
                    (p[0] / sq + 1.0).floor() as i64,
                    (p[1] / sq + 1.0).floor() as i64,
                );
                let inside = i >= 0 && j >= 0 && i <= cols as i64 && j <= rows as i64;
                let v = if inside && (i + j) % 2 == 0 { 20 } else { 235 };
                img.put(x, y, [v, v, v]);
            }
        }
        img
    }

    #[test]
    fn calibration_recovers_the_focal_length_of_rendered_views() {
        let k = Matrix3::new(600.0, 0.0, 320.0, 0.0, 600.0, 240.0, 0.0, 0.0, 1.0);
        let (cols, rows, sq) = (6, 5, 25.0);
        let centre = Vector3::new(-3.5 * sq, -3.0 * sq, 0.0);
        let views: Vec<RgbImage> = [
            (0.0, 0.0),
            (0.3, 0.0),
            (-0.3, 0.1),
            (0.0, 0.35),
            (0.1, -0.3),
            (0.25, 0.25),
        ]
        .iter()
        .map(|(ax, ay)| {
            let rot = Rotation3::from_euler_angles(*ax, *ay, 0.05);
            let t = rot * centre + Vector3::new(0.0, 0.0, 450.0);
            render(&k, rot, t, cols, rows, sq)
        })
        .collect();
        let cal = calibrate_camera(&views, cols, rows, sq).expect("calibration");
        assert_eq!(cal.views, 6);
        assert!(cal.rms_px < 0.5, "rms {}", cal.rms_px);
        assert!(
            (cal.camera_matrix[0] - 600.0).abs() < 18.0,
            "fx {}",
            cal.camera_matrix[0]
        );
        assert!(
            (cal.camera_matrix[4] - 600.0).abs() < 18.0,
            "fy {}",
            cal.camera_matrix[4]
        );
        // Round trip through FileStorage YAML.
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("camera.yml");
        save_camera(&cal, &p).unwrap();
        let back = load_camera(&p).unwrap();
        assert_eq!(back.views, cal.views);
        assert!((back.camera_matrix[0] - cal.camera_matrix[0]).abs() < 1e-9);
        // The board pose from the 4 outer corners of a known view.
        let rot = Rotation3::from_euler_angles(0.2, 0.1, 0.0);
        let t = Vector3::new(-100.0, -100.0, 500.0);
        let proj = |x: f64, y: f64| {
            let v = k * (rot * Vector3::new(x, y, 0.0) + t);
            [v.x / v.z, v.y / v.z]
        };
        let s = 8.0 * 30.0;
        let grid = [proj(0.0, 0.0), proj(s, 0.0), proj(s, s), proj(0.0, s)];
        let perfect = CameraCalibration {
            camera_matrix: [600.0, 0.0, 320.0, 0.0, 600.0, 240.0, 0.0, 0.0, 1.0],
            dist_coeffs: vec![0.0; 5],
            ..cal
        };
        let (_, tv) = solve_board_pose(&perfect, &grid, 30.0).unwrap();
        assert!((tv[2] - 500.0).abs() < 2.0, "{tv:?}");
    }

    #[test]
    fn identical_views_are_refused_as_degenerate() {
        let k = Matrix3::new(600.0, 0.0, 320.0, 0.0, 600.0, 240.0, 0.0, 0.0, 1.0);
        let rot = Rotation3::from_euler_angles(0.0, 0.0, 0.0);
        let img = render(&k, rot, Vector3::new(-90.0, -70.0, 450.0), 6, 5, 25.0);
        let views = vec![img; 6];
        let err = calibrate_camera(&views, 6, 5, 25.0).unwrap_err();
        assert!(err.to_string().contains("degenerate"), "{err}");
        let err = calibrate_camera(&views[..2], 6, 5, 25.0).unwrap_err();
        assert!(err.to_string().contains("at least 5"), "{err}");
    }

    #[test]
    fn board_pose_round_trips_and_corners_parse() {
        let named = parse_corners("10,20 110,22 108,120 12,118").unwrap();
        let grid = grid_corners_from_named(named, Side::Right);
        let pose = BoardPose {
            grid_corners: grid,
            image_size: (200, 150),
            white_at: Side::Right,
            camera_from_board: None,
        };
        let dir = tempfile::tempdir().unwrap();
        save_board_pose(&pose, &dir.path().join("board.yml")).unwrap();
        let back = load_board_pose(dir.path()).unwrap();
        assert_eq!(back, pose);
        assert!(parse_corners("1,2 3,4").is_err());
        assert!(parse_corners("1,2 3,4 5,x 7,8").is_err());
    }
}
