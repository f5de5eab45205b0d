//! Synthetic evaluation: the vision pipeline on rendered frames with exact
//! ground truth (`chessbot vision eval-sim`).
//!
//! Every frame is drawn from one seed: a position (random legal plies from
//! the start, a sparse board or a crowded opening), a board style, a camera
//! view (overhead, a player's angled view, side, corner, low ~30 degrees,
//! each with jittered yaw, pitch, roll and distance) and the simulator's
//! webcam realism (light, colour temperature, noise, blur, JPEG, off-centre
//! pieces). Each frame is read with no prior knowledge (no calibration, no
//! given orientation) and scored against the renderer's truth.
//!
//! Pure scoring ([`score_frame`]) is separate from rendering
//! ([`render_frame`]); [`evaluate`] runs both over many frames.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use shakmaty::{Board, Chess, Color, Piece, Position, Role, Square};

use super::homography::Pt;
use super::image::RgbImage;
use super::orientation::{Side, ALL_SIDES};
use super::pipeline::{self, FrameReading, ReadOptions};
use super::{Occupant, VisionError};
use crate::sim::camera::{framing_distance, look_at_pose};
use crate::sim::{
    BoardSpec, BoardStyle, CameraPose, CameraSpec, FrameTruth, Realism, Scene, SceneSpec, SimError,
};

/// A frame counts as localized when every one of the four outer corners is
/// within this fraction of the local square side of its true position. The
/// square reader samples pieces in the middle half of each square
/// (`squares::CENTRE_LO..CENTRE_HI`, 0.25..0.75 of a side): with the grid
/// off by less than a quarter square that window still lies inside the
/// right square everywhere (the homography's error inside the board is not
/// larger than at its corners), so a localized frame can be read right.
pub const CORNER_TOLERANCE_SQUARES: f64 = 0.25;

/// Camera view families, reported separately.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum View {
    /// Straight down (80-90 degrees), any heading.
    Overhead,
    /// A player's view from White's or Black's side, 50-65 degrees.
    Player,
    /// From the side of the board (a file edge), 40-55 degrees.
    Side,
    /// From a corner, 40-55 degrees.
    Corner,
    /// A low view, 28-35 degrees, from any heading.
    Low,
}

pub const ALL_VIEWS: [View; 5] = [
    View::Overhead,
    View::Player,
    View::Side,
    View::Corner,
    View::Low,
];

impl View {
    pub fn name(self) -> &'static str {
        match self {
            View::Overhead => "overhead 80-90°",
            View::Player => "player's side 50-65°",
            View::Side => "side 40-55°",
            View::Corner => "corner 40-55°",
            View::Low => "low 28-35°",
        }
    }

    /// Heading (yaw, degrees) and pitch (degrees below the horizon) ranges.
    fn draw(self, rng: &mut ChaCha8Rng) -> (f64, f64) {
        let jitter = |rng: &mut ChaCha8Rng| rng.random_range(-YAW_JITTER_DEG..YAW_JITTER_DEG);
        let quarter = |rng: &mut ChaCha8Rng| 90.0 * rng.random_range(0..4) as f64;
        match self {
            View::Overhead => (rng.random_range(0.0..360.0), rng.random_range(80.0..90.0)),
            View::Player => (
                180.0 * rng.random_range(0..2) as f64 + jitter(rng),
                rng.random_range(50.0..65.0),
            ),
            View::Side => (
                90.0 + 180.0 * rng.random_range(0..2) as f64 + jitter(rng),
                rng.random_range(40.0..55.0),
            ),
            View::Corner => (
                45.0 + quarter(rng) + jitter(rng),
                rng.random_range(40.0..55.0),
            ),
            View::Low => (rng.random_range(0.0..360.0), rng.random_range(28.0..35.0)),
        }
    }
}

/// Headings wander this much (degrees) around the nominal side or corner.
const YAW_JITTER_DEG: f64 = 10.0;
/// Cameras are rarely level: roll within +-this many degrees.
const ROLL_JITTER_DEG: f64 = 5.0;
/// The camera stands between the tightest framing and this much farther
/// (the board fills most of the frame, as in the real photos).
const MAX_DISTANCE_FACTOR: f64 = 1.3;

/// What kind of position a frame shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PositionKind {
    /// Random legal plies (0..=100) from the start.
    Game,
    /// Two kings and up to six other pieces on random squares.
    Sparse,
    /// The start position or a few plies into the opening.
    Crowded,
}

/// Everything one frame is drawn from.
#[derive(Debug, Clone)]
pub struct FrameSpec {
    pub index: usize,
    pub seed: u64,
    pub view: View,
    pub board_style: BoardStyle,
    pub position_kind: PositionKind,
    pub position: Board,
    pub pose: CameraPose,
}

/// Draws frame `index` of the evaluation with master seed `seed`.
pub fn frame_spec(seed: u64, index: usize, width: u32, height: u32) -> Result<FrameSpec, SimError> {
    let frame_seed = seed
        .wrapping_mul(0x9E37_79B9_7F4A_7C15)
        .wrapping_add(index as u64)
        .rotate_left(17);
    let mut rng = ChaCha8Rng::seed_from_u64(frame_seed);
    // Views in turn, so every view gets the same number of frames.
    let view = ALL_VIEWS[index % ALL_VIEWS.len()];
    let board_style =
        [BoardStyle::Wooden, BoardStyle::Vinyl, BoardStyle::Printed][rng.random_range(0..3)];
    let (position_kind, position) = match rng.random_range(0..10) {
        0..=5 => (PositionKind::Game, random_game(&mut rng, 100)),
        6..=7 => (PositionKind::Sparse, sparse_board(&mut rng)),
        _ => (PositionKind::Crowded, random_game(&mut rng, 6)),
    };
    let (yaw, pitch) = view.draw(&mut rng);
    let roll = rng.random_range(-ROLL_JITTER_DEG..ROLL_JITTER_DEG);
    let spec = BoardSpec::of_style(board_style);
    let target = spec.centre();
    let d = framing_distance(width, height, target, &spec.view_points(), yaw, pitch, roll)?;
    let factor = rng.random_range(1.0..MAX_DISTANCE_FACTOR);
    let pose = CameraPose {
        roll_deg: roll,
        ..look_at_pose(target, yaw, pitch, d * factor)
    };
    Ok(FrameSpec {
        index,
        seed: frame_seed,
        view,
        board_style,
        position_kind,
        position,
        pose,
    })
}

/// The board after up to `max_plies` random legal plies from the start
/// (stops early at mate or stalemate).
fn random_game(rng: &mut ChaCha8Rng, max_plies: usize) -> Board {
    let plies = rng.random_range(0..=max_plies);
    let mut pos = Chess::default();
    for _ in 0..plies {
        let moves = pos.legal_moves();
        if moves.is_empty() {
            break;
        }
        let m = moves[rng.random_range(0..moves.len())];
        pos.play_unchecked(m);
    }
    pos.board().clone()
}

/// Two kings and 0..=6 other pieces of random colour and role on random
/// free squares (pawns off the first and last ranks).
fn sparse_board(rng: &mut ChaCha8Rng) -> Board {
    let mut b = Board::empty();
    let mut free: Vec<Square> = Square::ALL.to_vec();
    let mut put = |b: &mut Board, rng: &mut ChaCha8Rng, piece: Piece| {
        let ok: Vec<usize> = (0..free.len())
            .filter(|&i| piece.role != Role::Pawn || !matches!(u32::from(free[i].rank()), 0 | 7))
            .collect();
        let i = ok[rng.random_range(0..ok.len())];
        b.set_piece_at(free.swap_remove(i), piece);
    };
    put(&mut b, rng, Color::White.king());
    put(&mut b, rng, Color::Black.king());
    let extra = rng.random_range(0..=6);
    for _ in 0..extra {
        let color = if rng.random_bool(0.5) {
            Color::White
        } else {
            Color::Black
        };
        let role = [
            Role::Pawn,
            Role::Knight,
            Role::Bishop,
            Role::Rook,
            Role::Queen,
        ][rng.random_range(0..5)];
        put(&mut b, rng, Piece { color, role });
    }
    b
}

/// Renders the frame a spec describes, with its truth.
pub fn render_frame(
    spec: &FrameSpec,
    width: u32,
    height: u32,
) -> Result<(RgbImage, FrameTruth), SimError> {
    render_scene(&scene_of(spec, width, height)?)
}

/// The seeded scene of a frame.
fn scene_of(spec: &FrameSpec, width: u32, height: u32) -> Result<Scene, SimError> {
    SceneSpec {
        board: spec.board_style,
        set: None,
        camera: CameraSpec::Pose(spec.pose),
        width,
        height,
        realism: Realism::Webcam,
    }
    .build(&spec.position, spec.seed)
}

fn render_scene(scene: &Scene) -> Result<(RgbImage, FrameTruth), SimError> {
    let frame = crate::sim::render(&scene.world, &scene.camera, &scene.options)?;
    Ok((crate::camera::sim::rgb_from_sim(frame.image), frame.truth))
}

/// The start position in the frame's scene: the frame's camera, board,
/// table, light and sensor settings with the start position's pieces and
/// other sensor noise. (A scene built from the same seed with another
/// position would not do: each piece's placement draws from the seed's
/// stream before the light does.)
fn reference_of(spec: &FrameSpec, width: u32, height: u32) -> Result<Scene, SimError> {
    let start = FrameSpec {
        position: Board::default(),
        ..spec.clone()
    };
    let mut reference = scene_of(spec, width, height)?;
    reference.world.pieces = scene_of(&start, width, height)?.world.pieces;
    reference.options.seed ^= REFERENCE_NOISE_SALT;
    Ok(reference)
}

/// Makes the reference's sensor noise differ from the frame's.
const REFERENCE_NOISE_SALT: u64 = 0x5EED_0F5E_ED00;

/// Square-state confusions on one frame (truth -> read).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SquareErrors {
    /// Squares scored (not hidden by a hand or arm).
    pub scored: usize,
    /// A piece read as empty.
    pub missed: usize,
    /// An empty square read as holding a piece.
    pub phantom: usize,
    /// A piece read with the wrong colour.
    pub colour: usize,
    /// Squares reported hidden behind nearer pieces (a guess, tempered).
    pub hidden: usize,
    /// Of those, read wrong (already counted above).
    pub hidden_wrong: usize,
}

impl SquareErrors {
    pub fn wrong(&self) -> usize {
        self.missed + self.phantom + self.colour
    }

    fn add(&mut self, o: &SquareErrors) {
        self.scored += o.scored;
        self.missed += o.missed;
        self.phantom += o.phantom;
        self.colour += o.colour;
        self.hidden += o.hidden;
        self.hidden_wrong += o.hidden_wrong;
    }
}

/// The score of one frame.
#[derive(Debug, Clone, PartialEq)]
pub struct FrameScore {
    /// Why no board was reported, if none was.
    pub refused: Option<String>,
    /// Worst corner error in local square sides (best corner matching).
    pub corner_err_squares: Option<f64>,
    /// All four corners within [`CORNER_TOLERANCE_SQUARES`].
    pub localized: bool,
    /// The orientation found equals the true one (`None`: not localized).
    pub orientation_ok: Option<bool>,
    /// Square states (read with the true orientation, so an orientation
    /// error is counted once, above, and not as 64 square errors).
    pub squares: Option<SquareErrors>,
    /// Squares wrong under the orientation the frame decided on.
    pub squares_wrong_as_read: Option<usize>,
    /// The squares read wrong (true orientation), for tracing.
    pub misread: Vec<super::eval::Misread>,
}

/// Side length (pixels) of the squares meeting at outer corner `k`
/// (a8, h8, h1, a1) of the truth grid: the mean of its two grid edges.
fn local_square_px(truth: &FrameTruth, k: usize) -> Option<f64> {
    let (r, c) = [(0, 0), (0, 8), (8, 8), (8, 0)][k];
    let at = |r: usize, c: usize| truth.grid.get(9 * r + c).copied().flatten();
    let p = at(r, c)?;
    let a = at(r, if c == 0 { 1 } else { 7 })?;
    let b = at(if r == 0 { 1 } else { 7 }, c)?;
    let d = |q: [f64; 2]| (q[0] - p[0]).hypot(q[1] - p[1]);
    Some((d(a) + d(b)) / 2.0)
}

/// The side White truly sits at in the found grid, and the worst corner
/// error (in local square sides) under that matching.
pub fn true_side(found_grid_corners: &[Pt; 4], truth: &FrameTruth) -> Option<(Side, f64)> {
    let mut best: Option<(Side, f64)> = None;
    for side in ALL_SIDES {
        let idx = side.corner_indices();
        let mut worst: f64 = 0.0;
        for k in 0..4 {
            let t = truth.corners.get(k).copied().flatten()?;
            let sq = local_square_px(truth, k)?;
            let f = found_grid_corners[idx[k]];
            worst = worst.max((f[0] - t[0]).hypot(f[1] - t[1]) / sq);
        }
        if best.is_none_or(|(_, w)| worst < w) {
            best = Some((side, worst));
        }
    }
    best
}

fn occupant_of(piece: Option<char>) -> Occupant {
    match piece {
        Some(c) if c.is_ascii_uppercase() => Occupant::White,
        Some(_) => Occupant::Black,
        None => Occupant::Empty,
    }
}

/// Scores one frame's reading against its truth.
pub fn score_frame(read: &Result<FrameReading, VisionError>, truth: &FrameTruth) -> FrameScore {
    let fr = match read {
        Ok(fr) => fr,
        Err(e) => {
            return FrameScore {
                refused: Some(e.to_string()),
                corner_err_squares: None,
                localized: false,
                orientation_ok: None,
                squares: None,
                squares_wrong_as_read: None,
                misread: Vec::new(),
            }
        }
    };
    let Some((side, err)) = true_side(&fr.location.corners, truth) else {
        return FrameScore {
            refused: Some("truth corners outside the picture".into()),
            corner_err_squares: None,
            localized: false,
            orientation_ok: None,
            squares: None,
            squares_wrong_as_read: None,
            misread: Vec::new(),
        };
    };
    let localized = err <= CORNER_TOLERANCE_SQUARES;
    let mut score = FrameScore {
        refused: None,
        corner_err_squares: Some(err),
        localized,
        orientation_ok: None,
        squares: None,
        squares_wrong_as_read: None,
        misread: Vec::new(),
    };
    if !localized {
        return score;
    }
    let decided = fr.orientation.white_at;
    score.orientation_ok = Some(decided == side);
    let mut errs = SquareErrors::default();
    let mut wrong_as_read = 0;
    for (i, sq) in Square::ALL.iter().enumerate() {
        let Some(t) = truth.squares.get(&sq.to_string()) else {
            continue;
        };
        if t.occluded {
            continue;
        }
        let want = occupant_of(t.piece);
        let (c, r) = side.cell_of_square(i);
        let read_sq = fr.reading.squares[decided.square_of_cell(c, r)];
        let got = read_sq.state;
        errs.scored += 1;
        errs.hidden += read_sq.hidden as usize;
        errs.hidden_wrong += (read_sq.hidden && got != want) as usize;
        if got != want {
            score.misread.push(super::eval::Misread {
                square: i,
                truth: want,
                read: got,
            });
        }
        match (want, got) {
            (a, b) if a == b => {}
            (Occupant::Empty, _) => errs.phantom += 1,
            (_, Occupant::Empty) => errs.missed += 1,
            _ => errs.colour += 1,
        }
        if fr.reading.squares[i].state != want {
            wrong_as_read += 1;
        }
    }
    score.squares = Some(errs);
    score.squares_wrong_as_read = Some(wrong_as_read);
    score
}

/// One evaluated frame.
#[derive(Debug, Clone)]
pub struct FrameResult {
    pub spec: FrameSpec,
    pub score: FrameScore,
    /// Time to read the frame (localization from scratch + squares), seconds.
    pub read_s: f64,
}

/// What a frame is read with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Regime {
    /// Nothing known: localization from scratch, no orientation, the
    /// uncalibrated classifier.
    Cold,
    /// Calibrated: a reference frame of the start position from the same
    /// camera, board and light teaches the classifier and gives the board's
    /// location and orientation (what a game starts from).
    Calibrated,
}

/// The board found in a rendered frame from scratch, where White truly
/// sits in it and its cells' features; `None` when it is not localized
/// (within [`CORNER_TOLERANCE_SQUARES`]).
fn localized_cells(
    img: &RgbImage,
    truth: &FrameTruth,
) -> Option<(
    super::locate::BoardLocation,
    Side,
    Vec<super::squares::CellFeatures>,
)> {
    let loc = super::locate::locate_board(img).ok()?;
    let (side, err) = true_side(&loc.corners, truth)?;
    if err > CORNER_TOLERANCE_SQUARES {
        return None;
    }
    let (cells, _) = super::squares::cell_features(img, &loc).ok()?;
    Some((loc, side, cells))
}

/// What [`Regime::Calibrated`] reads a frame with: the reference (start
/// position, same scene) localized, oriented by the truth and taught.
fn calibrated_options(
    spec: &FrameSpec,
    width: u32,
    height: u32,
) -> Result<Option<ReadOptions>, SimError> {
    let (img, truth) = render_scene(&reference_of(spec, width, height)?)?;
    let Some((loc, side, cells)) = localized_cells(&img, &truth) else {
        return Ok(None);
    };
    let truth_cells =
        super::squares::cells_from_occupancy(&super::occupancy_of(&Board::default()), side);
    let Ok(model) = super::squares::CalibratedModel::fit(&cells, &truth_cells) else {
        return Ok(None);
    };
    Ok(Some(ReadOptions {
        white_at: Some(side),
        tracked: Some(loc),
        model: Some(model),
    }))
}

/// What a frame is read with under a regime (calibrated frames whose
/// reference could not be localized are read cold).
pub fn read_options(
    spec: &FrameSpec,
    width: u32,
    height: u32,
    regime: Regime,
) -> Result<ReadOptions, SimError> {
    Ok(match regime {
        Regime::Cold => None,
        Regime::Calibrated => calibrated_options(spec, width, height)?,
    }
    .unwrap_or_default())
}

/// Renders, reads and scores the frames with the given indices (each is the
/// same frame whatever else is asked: see [`frame_spec`]); `progress` is told
/// about each frame as it is done. Calibrated frames whose reference could
/// not be localized are read cold.
pub fn evaluate(
    indices: impl IntoIterator<Item = usize>,
    seed: u64,
    width: u32,
    height: u32,
    regime: Regime,
    mut progress: impl FnMut(&FrameResult),
) -> Result<Vec<FrameResult>, SimError> {
    let mut out = Vec::new();
    for index in indices {
        let spec = frame_spec(seed, index, width, height)?;
        let opts = read_options(&spec, width, height, regime)?;
        let (img, truth) = render_frame(&spec, width, height)?;
        let t0 = std::time::Instant::now();
        let read = pipeline::read_frame(&img, &opts);
        let read_s = t0.elapsed().as_secs_f64();
        let r = FrameResult {
            spec,
            score: score_frame(&read, &truth),
            read_s,
        };
        progress(&r);
        out.push(r);
    }
    Ok(out)
}

/// Totals over a group of frames.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Summary {
    pub frames: usize,
    pub localized: usize,
    pub refused: usize,
    pub orientation_scored: usize,
    pub orientation_wrong: usize,
    pub squares: SquareErrors,
    /// Localized frames with all scored squares right.
    pub frames_all_right: usize,
    pub mean_corner_err: f64,
}

impl Summary {
    pub fn of<'a>(results: impl IntoIterator<Item = &'a FrameResult>) -> Summary {
        let mut s = Summary::default();
        let mut err_sum = 0.0;
        let mut err_n = 0;
        for r in results {
            s.frames += 1;
            s.refused += r.score.refused.is_some() as usize;
            if let Some(e) = r.score.corner_err_squares {
                err_sum += e;
                err_n += 1;
            }
            if r.score.localized {
                s.localized += 1;
            }
            if let Some(ok) = r.score.orientation_ok {
                s.orientation_scored += 1;
                s.orientation_wrong += (!ok) as usize;
            }
            if let Some(e) = &r.score.squares {
                s.squares.add(e);
                s.frames_all_right += (e.wrong() == 0) as usize;
            }
        }
        s.mean_corner_err = if err_n > 0 {
            err_sum / err_n as f64
        } else {
            f64::NAN
        };
        s
    }

    pub fn localization_rate(&self) -> f64 {
        self.localized as f64 / self.frames.max(1) as f64
    }

    pub fn square_error_rate(&self) -> f64 {
        self.squares.wrong() as f64 / self.squares.scored.max(1) as f64
    }
}

/// The Markdown table by camera view (and a total row), then by board.
pub fn report(results: &[FrameResult]) -> String {
    let mut s = String::new();
    s.push_str("| camera view | frames | localized | not found | corner err mean (squares) | square errors | missed / phantom / colour | hidden (wrong) | frames all right | orientation wrong |\n");
    s.push_str("|---|---|---|---|---|---|---|---|---|---|\n");
    let row = |name: &str, sm: &Summary| {
        format!(
            "| {name} | {} | {:.1} % ({}/{}) | {} | {:.3} | {:.3} % ({}/{}) | {} / {} / {} | {} ({}) | {}/{} | {}/{} |\n",
            sm.frames,
            100.0 * sm.localization_rate(),
            sm.localized,
            sm.frames,
            sm.refused,
            sm.mean_corner_err,
            100.0 * sm.square_error_rate(),
            sm.squares.wrong(),
            sm.squares.scored,
            sm.squares.missed,
            sm.squares.phantom,
            sm.squares.colour,
            sm.squares.hidden,
            sm.squares.hidden_wrong,
            sm.frames_all_right,
            sm.localized,
            sm.orientation_wrong,
            sm.orientation_scored,
        )
    };
    for v in ALL_VIEWS {
        let sm = Summary::of(results.iter().filter(|r| r.spec.view == v));
        if sm.frames > 0 {
            s.push_str(&row(v.name(), &sm));
        }
    }
    s.push_str(&row("**all**", &Summary::of(results)));
    s.push('\n');
    s.push_str("| board | frames | localized | square errors | orientation wrong |\n|---|---|---|---|---|\n");
    for (name, style) in [
        ("wooden", BoardStyle::Wooden),
        ("vinyl", BoardStyle::Vinyl),
        ("printed", BoardStyle::Printed),
    ] {
        let sm = Summary::of(results.iter().filter(|r| r.spec.board_style == style));
        s.push_str(&format!(
            "| {name} | {} | {:.1} % | {:.3} % ({}/{}) | {}/{} |\n",
            sm.frames,
            100.0 * sm.localization_rate(),
            100.0 * sm.square_error_rate(),
            sm.squares.wrong(),
            sm.squares.scored,
            sm.orientation_wrong,
            sm.orientation_scored
        ));
    }
    s
}

/// One line per frame that was not read perfectly (for diagnosis).
pub fn failures(results: &[FrameResult]) -> Vec<String> {
    results
        .iter()
        .filter(|r| {
            !r.score.localized
                || r.score.orientation_ok == Some(false)
                || r.score.squares.is_some_and(|e| e.wrong() > 0)
        })
        .map(|r| {
            let p = &r.spec.pose;
            format!(
                "frame {} ({:?}, {:?}, {:?}, yaw {:.0} pitch {:.0} roll {:.0}, fen {}): {}",
                r.spec.index,
                r.spec.view,
                r.spec.board_style,
                r.spec.position_kind,
                p.yaw_deg,
                p.pitch_deg,
                p.roll_deg,
                r.spec.position.board_fen(),
                match (&r.score.refused, r.score.localized) {
                    (Some(e), _) => format!("not found: {e}"),
                    (None, false) => format!(
                        "corners off by {:.2} squares",
                        r.score.corner_err_squares.unwrap_or(f64::NAN)
                    ),
                    (None, true) => {
                        let e = r.score.squares.unwrap_or_default();
                        let squares: Vec<String> =
                            r.score.misread.iter().map(ToString::to_string).collect();
                        format!(
                            "{} missed, {} phantom, {} colour{} [{}]",
                            e.missed,
                            e.phantom,
                            e.colour,
                            if r.score.orientation_ok == Some(false) {
                                ", orientation wrong"
                            } else {
                                ""
                            },
                            squares.join(", ")
                        )
                    }
                }
            )
        })
        .collect()
}

/// The CSV header of [`feature_rows`].
pub fn feature_header() -> String {
    let mut h: Vec<String> = ["frame", "view", "board", "cell"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    h.extend(super::learned::input_names());
    h.extend(["rule".to_string(), "truth".to_string()]);
    h.join(",")
}

/// Every cell's model inputs, the rule's answer and the true occupant
/// (0 empty, 1 white, 2 black) of one frame, as CSV rows; none when the
/// board is not localized or has no view context. Training rows for
/// `models/train_square_classifier.py`.
pub fn feature_rows(spec: &FrameSpec, img: &RgbImage, truth: &FrameTruth) -> Vec<String> {
    let Some((_, side, cells)) = localized_cells(img, truth) else {
        return Vec::new();
    };
    cell_rows(
        &spec.index.to_string(),
        &format!("{:?}", spec.view),
        &format!("{:?}", spec.board_style),
        &cells,
        |i| {
            let sq = Square::ALL[side.square_of_cell(i % 8, i / 8)];
            let t = truth.squares.get(&sq.to_string())?;
            (!t.occluded).then(|| occupant_of(t.piece))
        },
    )
}

/// The rows of [`feature_header`] for one frame's cells (grid order), with
/// each cell's true occupant (`None`: leave the cell out); none when the
/// cells have no view context.
pub fn cell_rows(
    frame: &str,
    view: &str,
    board: &str,
    cells: &[super::squares::CellFeatures],
    truth: impl Fn(usize) -> Option<Occupant>,
) -> Vec<String> {
    let Some(inputs) = super::learned::model_inputs(cells) else {
        return Vec::new();
    };
    let rule = super::squares::classify_by_rule(cells);
    let class = |o: Occupant| match o {
        Occupant::Empty => 0,
        Occupant::White => 1,
        Occupant::Black => 2,
    };
    let mut rows = Vec::new();
    for (i, (x, p)) in inputs.iter().zip(&rule).enumerate() {
        let Some(t) = truth(i) else {
            continue;
        };
        let got = super::squares::state_of(p[0], p[1], p[2]);
        let x: Vec<String> = x.iter().map(|v| format!("{v:.4}")).collect();
        rows.push(format!(
            "{frame},{view},{board},{i},{},{},{}",
            x.join(","),
            class(got),
            class(t)
        ));
    }
    rows
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frame_specs_are_reproducible_and_cycle_views() {
        let a = frame_spec(7, 3, 640, 480).unwrap();
        let b = frame_spec(7, 3, 640, 480).unwrap();
        assert_eq!(a.pose, b.pose);
        assert_eq!(a.position, b.position);
        assert_eq!(a.view, View::Corner);
        assert_eq!(frame_spec(7, 4, 640, 480).unwrap().view, View::Low);
        assert!((28.0..35.0).contains(&frame_spec(7, 4, 640, 480).unwrap().pose.pitch_deg));
    }

    #[test]
    fn sparse_boards_have_both_kings_and_no_back_rank_pawns() {
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        for _ in 0..50 {
            let b = sparse_board(&mut rng);
            assert_eq!(b.kings().count(), 2);
            assert!(b.occupied().count() <= 8);
            let back = shakmaty::Bitboard::from(shakmaty::Rank::First)
                | shakmaty::Bitboard::from(shakmaty::Rank::Eighth);
            assert!((b.pawns() & back).is_empty());
        }
    }

    #[test]
    fn the_reference_is_the_start_position_under_the_frames_light() {
        // Frame 0: a middle game with fewer than 32 pieces.
        let spec = frame_spec(1, 0, 640, 480).unwrap();
        let frame = scene_of(&spec, 640, 480).unwrap();
        let reference = reference_of(&spec, 640, 480).unwrap();
        assert_eq!(reference.world.pieces.len(), 32);
        assert_ne!(frame.world.pieces.len(), 32);
        assert_eq!(reference.world.lighting, frame.world.lighting);
        assert_eq!(reference.world.table, frame.world.table);
        assert_eq!(reference.world.texture_seed, frame.world.texture_seed);
        assert_eq!(reference.camera, frame.camera);
        assert_eq!(reference.options.exposure, frame.options.exposure);
        assert_ne!(reference.options.seed, frame.options.seed);
        // Built from the seed alone, the start position would get another
        // light: its placements draw from the stream first.
        let start = FrameSpec {
            position: Board::default(),
            ..spec.clone()
        };
        assert_ne!(
            scene_of(&start, 640, 480).unwrap().world.lighting,
            frame.world.lighting
        );
    }

    #[test]
    fn a_calibrated_read_is_taught_by_the_start_position_from_the_same_camera() {
        // Frame 0 is an overhead view: its reference localizes.
        let spec = frame_spec(1, 0, 640, 480).unwrap();
        let opts = calibrated_options(&spec, 640, 480)
            .unwrap()
            .expect("the start position from overhead is localized");
        let model = opts
            .model
            .as_ref()
            .expect("a model taught by the reference");
        let (img, truth) = render_frame(&spec, 640, 480).unwrap();
        let read = pipeline::read_frame(&img, &opts).unwrap();
        assert!(read.tracked, "the reference's location is reused");
        let (side, err) = true_side(&read.location.corners, &truth).unwrap();
        assert!(err <= CORNER_TOLERANCE_SQUARES);
        assert_eq!(opts.white_at, Some(side));
        assert_eq!(read.orientation.white_at, side);
        // The cells of a steep view are read by the rule times the
        // reference's likelihoods: not the cold probabilities.
        let (cells, _) = super::super::squares::cell_features(&img, &read.location).unwrap();
        assert_ne!(
            model.classify(&cells),
            super::super::squares::classify_uncalibrated(&cells)
        );
        let score = score_frame(&Ok(read), &truth);
        let errs = score.squares.unwrap();
        assert!(errs.scored > 0);
        // Every square counted wrong is listed, with what it held and what
        // was read.
        assert_eq!(score.misread.len(), errs.wrong());
        for m in &score.misread {
            assert_ne!(m.truth, m.read);
            let t = truth.squares[&super::super::square_name(m.square)].piece;
            assert_eq!(occupant_of(t), m.truth);
        }
    }
}
