//! The simulator against independent references: OpenCV's own projection
//! and chessboard-corner detector check the ground truth geometrically.

use chessbot::sim::camera::{CameraPreset, CameraSpec};
use chessbot::sim::scene::add_hand_over;
use chessbot::sim::{render, BoardStyle, FrameTruth, Realism, SceneSpec};
use opencv::core::{Mat, Point2f, Point3d, Size, TermCriteria, Vector};
use opencv::prelude::*;
use opencv::{calib3d, imgproc};
use shakmaty::{Board, Square};

fn spec(board: BoardStyle, preset: CameraPreset, w: u32, h: u32, realism: Realism) -> SceneSpec {
    SceneSpec {
        board,
        set: None,
        camera: CameraSpec::Preset(preset),
        width: w,
        height: h,
        realism,
    }
}

/// OpenCV's projectPoints with the camera as the truth reports it.
fn opencv_project(truth: &FrameTruth, pts: &[[f64; 3]]) -> Vec<[f64; 2]> {
    let c = &truth.camera;
    let obj: Vector<Point3d> = pts.iter().map(|p| Point3d::new(p[0], p[1], p[2])).collect();
    let rvec = Mat::from_slice(&c.rvec).unwrap().try_clone().unwrap();
    let tvec = Mat::from_slice(&c.tvec).unwrap().try_clone().unwrap();
    let k = Mat::from_slice_2d(&[[c.fx, 0.0, c.cx], [0.0, c.fy, c.cy], [0.0, 0.0, 1.0]]).unwrap();
    let dist = Mat::from_slice(&c.distortion).unwrap().try_clone().unwrap();
    let mut out = Vector::<opencv::core::Point2d>::new();
    calib3d::project_points(
        &obj,
        &rvec,
        &tvec,
        &k,
        &dist,
        &mut out,
        &mut Mat::default(),
        0.0,
    )
    .unwrap();
    out.iter().map(|p| [p.x, p.y]).collect()
}

#[test]
fn truth_corners_and_grid_match_opencv_projection_of_the_board() {
    for (style, preset) in [
        (BoardStyle::Wooden, CameraPreset::Overhead),
        (BoardStyle::Vinyl, CameraPreset::Angled),
        (BoardStyle::Printed, CameraPreset::Low),
    ] {
        let scene = spec(style, preset, 320, 240, Realism::Webcam)
            .build(&Board::default(), 11)
            .unwrap();
        let frame = render(&scene.world, &scene.camera, &scene.options).unwrap();
        let s = scene.world.board.square_mm * 8.0;
        // The board model: grid corners a8, h8, h1, a1 on the surface.
        let model = [[0.0, s, 0.0], [s, s, 0.0], [s, 0.0, 0.0], [0.0, 0.0, 0.0]];
        let cv = opencv_project(&frame.truth, &model);
        for (got, want) in frame.truth.corners.iter().zip(&cv) {
            let got = got.expect("corner in front of the camera");
            let d = ((got[0] - want[0]).powi(2) + (got[1] - want[1]).powi(2)).sqrt();
            assert!(
                d < 1.0,
                "{style:?} {preset:?}: corner {got:?} vs OpenCV {want:?}"
            );
        }
        // Grid point 9*row+col is (col*s/8, (8-row)*s/8).
        let sq = scene.world.board.square_mm;
        let grid_model: Vec<[f64; 3]> = (0..81)
            .map(|i| [(i % 9) as f64 * sq, (8 - i / 9) as f64 * sq, 0.0])
            .collect();
        let cv = opencv_project(&frame.truth, &grid_model);
        for (got, want) in frame.truth.grid.iter().zip(&cv) {
            let got = got.unwrap();
            assert!((got[0] - want[0]).abs() < 1.0 && (got[1] - want[1]).abs() < 1.0);
        }
    }
}

/// Finds the 7x7 inner corners in a rendered empty board with OpenCV and
/// checks each lies within a pixel of the truth's grid point: the picture
/// and the truth agree, not just the truth with itself.
fn detected_corners_match_truth(style: BoardStyle, preset: CameraPreset) {
    let scene = spec(style, preset, 960, 720, Realism::Clean)
        .build(&Board::empty(), 5)
        .unwrap();
    let frame = render(&scene.world, &scene.camera, &scene.options).unwrap();
    let bgr = frame.image.to_bgr_mat().unwrap();
    let mut gray = Mat::default();
    imgproc::cvt_color_def(&bgr, &mut gray, imgproc::COLOR_BGR2GRAY).unwrap();
    let mut found = Vector::<Point2f>::new();
    let ok = calib3d::find_chessboard_corners(
        &gray,
        Size::new(7, 7),
        &mut found,
        calib3d::CALIB_CB_ADAPTIVE_THRESH | calib3d::CALIB_CB_NORMALIZE_IMAGE,
    )
    .unwrap();
    assert!(
        ok,
        "{style:?} {preset:?}: OpenCV found no chessboard in the render"
    );
    imgproc::corner_sub_pix(
        &gray,
        &mut found,
        Size::new(5, 5),
        Size::new(-1, -1),
        TermCriteria::new(3, 40, 0.01).unwrap(),
    )
    .unwrap();
    assert_eq!(found.len(), 49);
    let inner: Vec<[f64; 2]> = (0..81)
        .filter(|i| (1..8).contains(&(i % 9)) && (1..8).contains(&(i / 9)))
        .map(|i| frame.truth.grid[i].unwrap())
        .collect();
    let mut worst: f64 = 0.0;
    for p in found.iter() {
        let d = inner
            .iter()
            .map(|q| ((q[0] - p.x as f64).powi(2) + (q[1] - p.y as f64).powi(2)).sqrt())
            .fold(f64::INFINITY, f64::min);
        worst = worst.max(d);
    }
    assert!(
        worst < 1.0,
        "{style:?} {preset:?}: detected corner {worst:.2} px from the truth"
    );
}

#[test]
fn opencv_finds_the_rendered_grid_where_the_truth_says_overhead() {
    detected_corners_match_truth(BoardStyle::Printed, CameraPreset::Overhead);
}

#[test]
fn opencv_finds_the_rendered_grid_where_the_truth_says_angled() {
    detected_corners_match_truth(BoardStyle::Vinyl, CameraPreset::Angled);
}

#[test]
fn same_seed_same_bytes_different_seed_different_picture() {
    let s = spec(
        BoardStyle::Wooden,
        CameraPreset::Angled,
        160,
        120,
        Realism::Webcam,
    );
    let board = Board::default();
    let a = s.build(&board, 1).unwrap();
    let b = s.build(&board, 1).unwrap();
    let c = s.build(&board, 2).unwrap();
    let fa = render(&a.world, &a.camera, &a.options).unwrap();
    let fb = render(&b.world, &b.camera, &b.options).unwrap();
    let fc = render(&c.world, &c.camera, &c.options).unwrap();
    assert_eq!(fa.image.data, fb.image.data);
    assert_eq!(
        fa.image.encode_png().unwrap(),
        fb.image.encode_png().unwrap()
    );
    let differing = fa
        .image
        .data
        .iter()
        .zip(&fc.image.data)
        .filter(|(x, y)| x.abs_diff(**y) > 8)
        .count();
    assert!(
        differing > fa.image.data.len() / 10,
        "only {differing} bytes differ clearly between seeds 1 and 2"
    );
}

#[test]
fn hand_over_a_square_is_reported_as_occluding_it() {
    let mut scene = spec(
        BoardStyle::Vinyl,
        CameraPreset::Overhead,
        320,
        240,
        Realism::Clean,
    )
    .build(&Board::default(), 3)
    .unwrap();
    let bare = render(&scene.world, &scene.camera, &scene.options).unwrap();
    assert!(!bare.truth.hand_visible);
    assert!(bare.truth.occluded_squares().is_empty());
    add_hand_over(&mut scene.world, Square::E2, 3);
    let f = render(&scene.world, &scene.camera, &scene.options).unwrap();
    assert!(f.truth.hand_visible);
    let hidden = f.truth.occluded_squares();
    assert!(
        hidden.contains(&"e2".to_owned()),
        "{hidden:?}, e2 {:?}",
        f.truth.squares["e2"]
    );
    assert!(!hidden.contains(&"e7".to_owned()), "{hidden:?}");
    // Content truth is the position, hand or not.
    assert_eq!(f.truth.squares["e2"].piece, Some('P'));
    assert_eq!(f.truth.squares["e4"].piece, None);
    assert_eq!(
        f.truth.board_fen,
        "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR"
    );
}

#[test]
fn a_recorded_game_has_one_truth_line_per_frame_file() {
    use chessbot::sim::opponent::{parse_moves, OpponentStyle, ScriptedGame};
    use chessbot::sim::record::{record_game, FrameFormat};
    use chessbot::sim::Renderer;
    use shakmaty::{Chess, Position};

    let start = Chess::default();
    let moves = parse_moves(&start, "1. e4").unwrap();
    let scene = spec(
        BoardStyle::Vinyl,
        CameraPreset::Overhead,
        96,
        72,
        Realism::Webcam,
    )
    .build(start.board(), 8)
    .unwrap();
    let game = ScriptedGame::new(scene.world, start, &moves, OpponentStyle::default(), 8).unwrap();
    let expected = game.frame_count();
    let dir = tempfile::tempdir().unwrap();
    let mut renderer = Renderer::new(scene.camera);
    let mut seen = 0;
    let n = record_game(
        game,
        &mut renderer,
        &scene.options,
        FrameFormat::Jpeg(80),
        30.0,
        dir.path(),
        |k| seen = k,
    )
    .unwrap();
    assert_eq!((n, seen), (expected, expected));
    let text = std::fs::read_to_string(dir.path().join("truth.jsonl")).unwrap();
    let lines: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len() as u64, n);
    for l in &lines {
        assert!(dir.path().join(l["file"].as_str().unwrap()).is_file());
    }
    let last = lines.last().unwrap();
    assert_eq!(
        last["board_fen"],
        "rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR"
    );
    assert!(lines.iter().any(|l| l["hand_visible"] == true));
    let cam: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("camera.json")).unwrap())
            .unwrap();
    assert_eq!(cam["corners"].as_array().unwrap().len(), 4);
}

#[test]
fn the_robot_arm_silhouette_is_seen_and_hides_the_square_it_is_over() {
    use chessbot::sim::scene::add_arm_over;
    let mut scene = spec(
        BoardStyle::Wooden,
        CameraPreset::Overhead,
        320,
        240,
        Realism::Clean,
    )
    .build(&Board::default(), 4)
    .unwrap();
    add_arm_over(&mut scene.world, Square::D5, 60.0);
    let f = render(&scene.world, &scene.camera, &scene.options).unwrap();
    assert!(f.truth.arm_visible && !f.truth.hand_visible);
    let hidden = f.truth.occluded_squares();
    assert!(hidden.contains(&"d5".to_owned()), "{hidden:?}");
    assert!(!hidden.contains(&"a1".to_owned()), "{hidden:?}");
}
