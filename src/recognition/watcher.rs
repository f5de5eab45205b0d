//! From camera frames to game events: vision, motion and the tracker in one
//! plain struct.
//!
//! Per frame: the board is read (reusing the tracked location while the
//! checker pattern is still there, re-localizing otherwise), the motion
//! detector marks squares under a hand or the arm as covered and the scene
//! as busy until it has been still for a few frames, the per-square
//! probabilities become a [`BoardObs`] and the [`Tracker`] decides. A frame
//! whose board cannot be found, or that is too dark, is reported as not
//! usable and never guessed at.
//!
//! Pure: frames and their timestamps come in, events go out; no clock, no
//! files, no camera.

use shakmaty::{Chess, Move, Position, Square};

use super::scoring::{BoardObs, SquareObs};
use super::tracker::{TrackEvent, Tracker, TrackerConfig};
use super::RecognitionError;
use crate::vision::image::RgbImage;
use crate::vision::locate::BoardLocation;
use crate::vision::motion::{self, MotionDetector};
use crate::vision::orientation::{Side, ALL_SIDES};
use crate::vision::pipeline::{self, FrameReading, ReadOptions};
use crate::vision::squares::{self, CalibratedModel};
use crate::vision::{Occupancy, Occupant as VisionOccupant, VisionError};

/// A re-localized board whose corners all lie within this fraction of the
/// board's mean side length of the tracked corners is the same board (a
/// hand broke the tracking check, the board did not move). Corner error of
/// localization is ~0.05-0.09 square (docs/vision.md), i.e. about 1 % of
/// the board side; a bumped board moves by far more than 0.3 square.
const SAME_BOARD_TOLERANCE: f64 = 0.3 / 8.0;

/// The ring watched for hands: strips just outside the 8x8 grid, from
/// this far out to this far out (grid units = squares). It lies on the
/// board's own frame (12-30 mm wide on the simulated boards, ~0.25-0.6
/// square), where pieces never stand and which every hand or arm reaching
/// in from outside must cross.
const RING_INNER: f64 = 0.05;
const RING_OUTER: f64 = 0.45;
/// Samples per ring region side.
const RING_SAMPLES: usize = 6;
/// A ring that differs from its baseline while nothing at all moves for
/// this long becomes the new baseline (a captured piece put down beside the
/// board, a lamp switched on). Longer than any hold of a hand in the middle
/// of a move (the scripted person holds still at most 0.25 s at a time,
/// plus slow vertical motions).
const RING_REBASE_MS: u64 = 1_500;

/// Tuning of the watcher.
#[derive(Debug, Clone)]
pub struct WatcherConfig {
    pub tracker: TrackerConfig,
    /// Where White sits in the image, when known (calibration, the user).
    /// `None`: decided on the first usable frame as the side under which
    /// the start position best explains the squares, then kept.
    pub white_at: Option<Side>,
    /// The board's location from calibration, if any (checked each frame).
    pub location: Option<BoardLocation>,
    /// A per-board classifier taught by a labelled photo, if any.
    pub model: Option<CalibratedModel>,
    /// Fraction of a square that must change for it to count as covered
    /// (`[vision] motion_threshold`).
    pub cover_fraction: f32,
    /// Still frames before the scene counts as settled (`[vision] settle_frames`).
    pub settle_frames: u32,
    /// Teach the square classifier on the board itself: whenever the scene
    /// is settled and shows the believed position (best hypothesis
    /// "nothing changed") for a position not yet learnt, fit a
    /// [`CalibratedModel`] on that frame with the position as labels. Used
    /// instead of `model` once fitted.
    pub self_calibrate: bool,
}

impl Default for WatcherConfig {
    fn default() -> Self {
        WatcherConfig {
            tracker: TrackerConfig::default(),
            white_at: None,
            location: None,
            model: None,
            cover_fraction: motion::DEFAULT_COVER_FRACTION,
            settle_frames: motion::DEFAULT_SETTLE_FRAMES,
            self_calibrate: true,
        }
    }
}

/// Whether a frame could be read.
#[derive(Debug, Clone, PartialEq)]
pub enum FrameUse {
    /// Read; `busy` tells whether a hand/arm/motion kept it from the tracker.
    Read,
    /// Too dark, blank or overexposed: nothing was read.
    Unusable(String),
    /// The board was not found in the frame.
    BoardNotFound(String),
}

/// What one frame produced.
#[derive(Debug, Clone)]
pub struct WatchOutput {
    /// What the tracker concluded, if anything.
    pub event: Option<TrackEvent>,
    pub frame: FrameUse,
    /// A hand, the arm or motion over the board: the frame was not used
    /// for a decision.
    pub busy: bool,
    /// Squares treated as covered in this frame.
    pub covered: Vec<Square>,
    /// The latest successful reading (this frame's when it was read), for
    /// overlays and diagnostics.
    pub reading: Option<FrameReading>,
}

impl WatchOutput {
    pub fn usable(&self) -> bool {
        self.frame == FrameUse::Read
    }
}

/// Turns camera frames into game events.
#[derive(Debug, Clone)]
pub struct BoardWatcher {
    cfg: WatcherConfig,
    tracker: Tracker,
    location: Option<BoardLocation>,
    white_at: Option<Side>,
    motion: MotionDetector,
    last_reading: Option<FrameReading>,
    last_t_ms: Option<u64>,
    ring: RingWatch,
    model: Option<CalibratedModel>,
    /// The position the model was last fitted on.
    learnt: Option<shakmaty::Board>,
}

/// Hand-presence check on the ring around the board: motion detection
/// alone misses a hand that holds still (or moves only up and down, which
/// an overhead camera hardly sees) in the middle of a two-part move; the
/// forearm still crosses the board's edge.
#[derive(Debug, Clone, Default)]
struct RingWatch {
    baseline: Option<Vec<Vec<f32>>>,
    previous: Option<Vec<Vec<f32>>>,
    /// Since when the ring and board have been still while the ring
    /// differs from its baseline.
    still_since_ms: Option<u64>,
}

impl RingWatch {
    /// Whether something crosses the ring; `board_still` is the motion
    /// detector's verdict on the board itself.
    fn update(&mut self, sig: Vec<Vec<f32>>, t_ms: u64, board_still: bool, fraction: f32) -> bool {
        let baseline = self.baseline.get_or_insert_with(|| sig.clone());
        let differs = ring_differs(baseline, &sig, fraction);
        let moving = self
            .previous
            .as_ref()
            .is_some_and(|p| ring_differs(p, &sig, fraction));
        let mut present = differs;
        if differs && !moving && board_still {
            let since = *self.still_since_ms.get_or_insert(t_ms);
            if t_ms.saturating_sub(since) >= RING_REBASE_MS {
                *baseline = sig.clone();
                self.still_since_ms = None;
                present = false;
            }
        } else {
            self.still_since_ms = None;
        }
        self.previous = Some(sig);
        present
    }
}

/// Luminance samples of the ring regions (NaN where outside the image).
fn ring_signature(img: &RgbImage, loc: &BoardLocation) -> Vec<Vec<f32>> {
    let mut regions: Vec<[f64; 4]> = Vec::with_capacity(32);
    let depth = RING_OUTER - RING_INNER;
    for k in 0..8 {
        let k = k as f64;
        regions.push([k, -RING_OUTER, 1.0, depth]);
        regions.push([k, 8.0 + RING_INNER, 1.0, depth]);
        regions.push([-RING_OUTER, k, depth, 1.0]);
        regions.push([8.0 + RING_INNER, k, depth, 1.0]);
    }
    regions
        .iter()
        .map(|&[x, y, w, h]| {
            let mut v = Vec::with_capacity(RING_SAMPLES * RING_SAMPLES);
            for l in 0..RING_SAMPLES {
                for k in 0..RING_SAMPLES {
                    let g = [
                        x + w * (k as f64 + 0.5) / RING_SAMPLES as f64,
                        y + h * (l as f64 + 0.5) / RING_SAMPLES as f64,
                    ];
                    v.push(
                        loc.to_image(g)
                            .and_then(|p| img.sample(p[0], p[1]))
                            .map_or(f32::NAN, crate::vision::image::luma),
                    );
                }
            }
            v
        })
        .collect()
}

/// Whether any ring region differs (the motion detector's rule: more than
/// `fraction` of its visible samples changed by more than
/// [`motion::PIXEL_DIFF`]).
fn ring_differs(a: &[Vec<f32>], b: &[Vec<f32>], fraction: f32) -> bool {
    a.iter().zip(b).any(|(ra, rb)| {
        let (mut seen, mut changed) = (0usize, 0usize);
        for (x, y) in ra.iter().zip(rb) {
            if x.is_nan() || y.is_nan() {
                continue;
            }
            seen += 1;
            if (x - y).abs() > motion::PIXEL_DIFF {
                changed += 1;
            }
        }
        seen > 0 && changed as f32 > fraction * seen as f32
    })
}

impl BoardWatcher {
    pub fn new(start: Chess, cfg: WatcherConfig) -> BoardWatcher {
        BoardWatcher {
            tracker: Tracker::new(start, cfg.tracker),
            location: cfg.location.clone(),
            white_at: cfg.white_at,
            motion: MotionDetector::new(cfg.cover_fraction, cfg.settle_frames),
            last_reading: None,
            last_t_ms: None,
            ring: RingWatch::default(),
            model: cfg.model.clone(),
            learnt: None,
            cfg,
        }
    }

    /// The position the watcher believes is on the board.
    pub fn position(&self) -> &Chess {
        self.tracker.position()
    }

    /// Sets the position (new game, take-back, correction by a person).
    pub fn set_position(&mut self, pos: Chess) {
        self.tracker.set_position(pos);
    }

    /// The robot is about to play `mv`: the next settled board should show it.
    pub fn expect_robot_move(&mut self, mv: Move) -> Result<(), RecognitionError> {
        if !self.tracker.position().is_legal(mv) {
            return Err(RecognitionError::Input(format!(
                "robot move {mv} is not legal in the watched position"
            )));
        }
        self.tracker.expect_robot_move(mv);
        Ok(())
    }

    /// Where White sits in the image (once known).
    pub fn white_at(&self) -> Option<Side> {
        self.white_at
    }

    /// The tracked board location (once known).
    pub fn location(&self) -> Option<&BoardLocation> {
        self.location.as_ref()
    }

    /// Feeds one frame taken at `t_ms` (milliseconds, non-decreasing).
    pub fn push(&mut self, image: &RgbImage, t_ms: u64) -> Result<WatchOutput, RecognitionError> {
        if let Some(last) = self.last_t_ms {
            if t_ms < last {
                return Err(RecognitionError::Input(format!(
                    "frame time {t_ms} ms is before the previous frame's {last} ms"
                )));
            }
        }
        self.last_t_ms = Some(t_ms);
        let opts = ReadOptions {
            white_at: self.white_at,
            tracked: self.location.clone(),
            model: self.model.clone(),
        };
        let read = match pipeline::read_frame(image, &opts) {
            Ok(r) => r,
            Err(VisionError::Unusable(m)) => return Ok(self.unread(t_ms, FrameUse::Unusable(m))),
            Err(VisionError::BoardNotFound(m)) => {
                return Ok(self.unread(t_ms, FrameUse::BoardNotFound(m)))
            }
            Err(e) => return Err(RecognitionError::Vision(e)),
        };
        self.adopt_location(&read);
        let mut read = read;
        if self.white_at.is_none() {
            let side = best_side(&read, self.tracker.position());
            self.white_at = Some(side);
            if side != read.orientation.white_at {
                let opts = ReadOptions {
                    white_at: Some(side),
                    tracked: self.location.clone(),
                    model: self.model.clone(),
                };
                if let Ok(r) = pipeline::read_frame(image, &opts) {
                    read = r;
                }
            }
        }
        let loc = self.location.as_ref().unwrap_or(&read.location);
        let state = self.motion.update(motion::signature(image, loc));
        let side = read.orientation.white_at;
        let cells = state.covered();
        let mut occluded = [false; 64];
        for (i, &c) in cells.iter().enumerate() {
            if c {
                occluded[side.square_of_cell(i % 8, i / 8)] = true;
            }
        }
        let obs = board_obs(&read, &occluded);
        let hand_at_edge = self.ring.update(
            ring_signature(image, loc),
            t_ms,
            state.settled,
            self.cfg.cover_fraction,
        );
        let busy = !state.settled || hand_at_edge;
        if !busy && self.cfg.self_calibrate {
            self.learn(image, &read, &obs);
        }
        let event = self.tracker.push(t_ms, &obs, busy);
        let covered = Square::ALL
            .into_iter()
            .filter(|s| occluded[*s as usize])
            .collect();
        self.last_reading = Some(read.clone());
        Ok(WatchOutput {
            event,
            frame: FrameUse::Read,
            busy,
            covered,
            reading: Some(read),
        })
    }

    /// Fits the classifier on a settled frame that shows the believed
    /// position, once per position.
    fn learn(&mut self, image: &RgbImage, read: &FrameReading, obs: &BoardObs) {
        let pos = self.tracker.position();
        if self.learnt.as_ref() == Some(pos.board()) || obs.any_occluded() {
            return;
        }
        let scored = super::scoring::score(pos, obs);
        if scored.hypotheses.first().is_none_or(|h| h.mv.is_some()) {
            return;
        }
        let Ok((cells, _)) = squares::cell_features(image, &read.location) else {
            return;
        };
        let occ: Occupancy =
            std::array::from_fn(|i| match pos.board().color_at(Square::new(i as u32)) {
                None => VisionOccupant::Empty,
                Some(shakmaty::Color::White) => VisionOccupant::White,
                Some(shakmaty::Color::Black) => VisionOccupant::Black,
            });
        let truth = squares::cells_from_occupancy(&occ, read.orientation.white_at);
        if let Ok(m) = CalibratedModel::fit(&cells, &truth) {
            self.model = Some(m);
            self.learnt = Some(pos.board().clone());
        }
    }

    /// A frame with nothing to decide on: the tracker's count of agreeing
    /// reads starts over after the gap.
    fn unread(&mut self, t_ms: u64, frame: FrameUse) -> WatchOutput {
        let obs = BoardObs(std::array::from_fn(|_| SquareObs::occluded()));
        let event = self.tracker.push(t_ms, &obs, true);
        WatchOutput {
            event,
            frame,
            busy: true,
            covered: Vec::new(),
            reading: self.last_reading.clone(),
        }
    }

    /// Keeps the tracked location while the board has not moved (a hand
    /// over the board can fail the tracking check and make vision
    /// re-localize); adopts a new one, and restarts motion detection on
    /// it, when the board or camera moved.
    fn adopt_location(&mut self, read: &FrameReading) {
        match &self.location {
            Some(old) if read.tracked || same_board(old, &read.location) => {}
            _ => {
                self.location = Some(read.location.clone());
                self.motion = MotionDetector::new(self.cfg.cover_fraction, self.cfg.settle_frames);
                self.ring = RingWatch::default();
            }
        }
    }
}

/// The observations of a reading with the covered squares marked.
pub fn board_obs(read: &FrameReading, occluded: &[bool; 64]) -> BoardObs {
    BoardObs(std::array::from_fn(|i| {
        if occluded[i] {
            return SquareObs::occluded();
        }
        let s = &read.reading.squares[i];
        let total = (s.p_empty + s.p_white + s.p_black).max(f32::EPSILON);
        SquareObs {
            p_empty: s.p_empty / total,
            p_white: s.p_white / total,
            p_black: s.p_black / total,
            occluded: false,
        }
    }))
}

/// The side of the image under which `pos` best explains the reading.
fn best_side(read: &FrameReading, pos: &Chess) -> Side {
    let here = read.orientation.white_at;
    // Back to grid cells, then forward under each candidate side.
    let mut cells = [[0f32; 3]; 64];
    for r in 0..8 {
        for c in 0..8 {
            let s = &read.reading.squares[here.square_of_cell(c, r)];
            cells[c + 8 * r] = [s.p_empty, s.p_white, s.p_black];
        }
    }
    let ll = |side: Side| -> f64 {
        let obs = BoardObs(std::array::from_fn(|sq| {
            let (c, r) = side.cell_of_square(sq);
            let [pe, pw, pb] = cells[c + 8 * r];
            SquareObs {
                p_empty: pe,
                p_white: pw,
                p_black: pb,
                occluded: false,
            }
        }));
        obs.log_likelihood(pos.board())
    };
    ALL_SIDES
        .into_iter()
        .map(|s| (s, ll(s)))
        .fold((here, ll(here)), |a, b| if b.1 > a.1 { b } else { a })
        .0
}

fn same_board(a: &BoardLocation, b: &BoardLocation) -> bool {
    let side = |l: &BoardLocation| {
        (0..4)
            .map(|k| {
                let (p, q) = (l.corners[k], l.corners[(k + 1) % 4]);
                ((p[0] - q[0]).powi(2) + (p[1] - q[1]).powi(2)).sqrt()
            })
            .sum::<f64>()
            / 4.0
    };
    let tol = SAME_BOARD_TOLERANCE * side(a);
    a.image_size == b.image_size
        && a.corners
            .iter()
            .zip(&b.corners)
            .all(|(p, q)| ((p[0] - q[0]).powi(2) + (p[1] - q[1]).powi(2)).sqrt() <= tol)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn loc(dx: f64) -> BoardLocation {
        BoardLocation::from_corners(
            [
                [100.0 + dx, 100.0],
                [500.0 + dx, 100.0],
                [500.0 + dx, 500.0],
                [100.0 + dx, 500.0],
            ],
            (640, 640),
        )
        .unwrap()
    }

    #[test]
    fn a_relocalized_board_is_the_same_within_a_fraction_of_a_square() {
        // Side 400 px, a square 50 px: 10 px is the same board, 40 px is not.
        assert!(same_board(&loc(0.0), &loc(10.0)));
        assert!(!same_board(&loc(0.0), &loc(40.0)));
    }

    #[test]
    fn going_back_in_time_is_an_error_not_a_panic() {
        let mut w = BoardWatcher::new(Chess::default(), WatcherConfig::default());
        let dark = RgbImage::new(64, 48);
        let out = w.push(&dark, 100).unwrap();
        assert!(matches!(out.frame, FrameUse::Unusable(_)));
        assert!(out.busy && out.event.is_none());
        assert!(w.push(&dark, 50).is_err());
    }
}
