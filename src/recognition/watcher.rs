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

use shakmaty::{Bitboard, Board, Chess, Move, Position, Square};

use super::scoring::{BoardObs, ChangeFit, Occupant, SquareObs};
use super::tracker::{RimMotion, TrackEvent, Tracker, TrackerConfig};
use super::RecognitionError;
use crate::vision::image::RgbImage;
use crate::vision::locate::BoardLocation;
use crate::vision::motion::{self, MotionDetector};
use crate::vision::orientation::Side;
use crate::vision::pipeline::{self, FrameReading, ReadOptions};
use crate::vision::squares::{self, CalibratedModel};
use crate::vision::VisionError;

/// A re-localized board whose corners all lie within this fraction of the
/// board's mean side length of the tracked corners is the same board (a
/// hand broke the tracking check, the board did not move). Corner error of
/// localization is ~0.05-0.09 square (docs/vision.md), i.e. about 1 % of
/// the board side; a bumped board moves by far more than 0.3 square.
const SAME_BOARD_TOLERANCE: f64 = 0.3 / 8.0;

/// A board found somewhere else than the tracked one is adopted only after
/// it has been found there this long and explains the believed position
/// (nothing changed, or one legal move). A hand over the board can make
/// the lattice fit land a square off (pieces and the hand hide grid
/// lines); measured on rendered angled games, adopting such a fit at once
/// froze the game (every later board unexplained). A bumped board or
/// camera stays put, so a second of confirmation costs nothing but that
/// second.
const RELOCATE_CONFIRM_MS: u64 = 1000;

/// Frames back the watcher also compares each frame with. Consecutive
/// frames miss a smooth, uniformly coloured hand: at 600 mm/s and 30 fps
/// it moves 20 mm, 0.4 of a 50 mm square, and only its edges change (fewer
/// than the 20 % of a square's samples that count). Four frames back it
/// has moved more than a square. Measured on rendered games: without it
/// the whole reach and carry of a rook-first castling read as still.
const MOTION_LOOKBACK: usize = 4;

/// Nominal frame interval used to turn `settle_frames` into time for the
/// look-back motion (30 fps; at 20 fps the settle time is a bit shorter).
const SETTLE_FRAME_MS: u64 = 33;

/// Most hypotheses a close call may have for the change in the picture to
/// be measured: the moves the squares cannot tell apart are usually a
/// handful (`Bd7`, `Nd7`, `Qd7`, `Kd7`), but a long-range piece whose
/// destination reads empty ties with every square it can reach (held-out
/// bench, angled camera: `...Bb7` with b7 read empty tied with the
/// bishop's six other moves); many more means the squares say little,
/// and each hypothesis costs a sight-line test per sample and piece.
const MAX_CHANGE_CANDIDATES: usize = 16;

/// When the squares alone pick a move, the picture is measured for it and
/// for this many next-best hypotheses (and "nothing changed"), so that a
/// confident misread can be caught (held-out bench, printed board, angled
/// camera: after `...Rxh5` the rook's base read as White and its top as a
/// black piece on h6, `Rh6` led by 9 in log-likelihood and `Rxh5` was
/// fifth among ties).
const CONFIRM_CANDIDATES: usize = 8;

/// Posterior "nothing changed" needs for a settled frame to become the
/// reference picture of the believed position: well ahead of any move,
/// short of the 0.99 a decision needs (at the low camera a square or two
/// often stay ambiguous in every frame of a position).
const REFERENCE_POSTERIOR: f64 = 0.9;

/// How long after a decision its reference may still give way to a frame
/// the hand has left ([`ReferenceSettling`]): a hand may rest on the piece
/// it let go of for a moment, and withdrawing at 600 mm/s (the
/// simulator's relaxed pace) it clears the board's far edge in about half
/// a second; five still frames follow.
const REFERENCE_SETTLE_MS: u64 = 2000;

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
    /// [`CalibratedModel`] on that frame with the position as labels, a
    /// class of few cells topped up from the first model
    /// ([`CalibratedModel::fit_on_prior`]). Used instead of `model` once
    /// fitted.
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
    /// Signatures of the last [`MOTION_LOOKBACK`] frames.
    recent: std::collections::VecDeque<motion::Signature>,
    /// When a cell last moved against the look-back frames.
    moved_ms: Option<u64>,
    model: Option<CalibratedModel>,
    /// The first model (given or learnt), which each later one is pooled
    /// with ([`CalibratedModel::fit_on_prior`]).
    first_model: Option<CalibratedModel>,
    /// The position the model was last fitted on.
    learnt: Option<shakmaty::Board>,
    /// A board found elsewhere than the tracked one, and since when.
    candidate: Option<(BoardLocation, u64)>,
    /// The shadow map of the last location and orientation read (worked
    /// out again only when either changes).
    shadows: Option<(BoardLocation, Side, Option<[Bitboard; 64]>)>,
    /// The last settled frame that showed the believed position, where it
    /// was and which position: what a move's frames are compared with to
    /// see which piece left ([`super::change`]).
    reference: Option<Reference>,
    /// Since the frame a decision was made on: whether its reference may
    /// still give way to a later frame (see [`ReferenceSettling`]).
    settling: Option<ReferenceSettling>,
}

/// A hand that lets go of a piece may rest on it, still, while the move is
/// decided, and that frame becomes the position's reference picture. At a
/// low view the hand shows only above the pieces, up the squares' axes,
/// not on the board's floor where the motion detector looks (standard
/// recognition bench, seed 1, printed/low: fingers on the queen just put
/// on c8 in the frame `Qxc8` was decided on; ten frames later the hand was
/// gone, c8's picture had changed from its reference, the queen on the far
/// light square read empty, and every later board was unexplained). So for
/// a while after a decision ([`REFERENCE_SETTLE_MS`]), while the motion
/// detector sees no motion, a frame that ends a run of still frames (floor
/// and axes, [`WatcherConfig::settle_frames`] in a row) replaces the
/// reference when fewer of its samples (floor and axes) differ from the
/// reference before the move than the reference's do: both show the move,
/// so what the later frame has less of is the hand (counted by samples,
/// not cells: the fingers on a piece that has just arrived cover a cell
/// that differs anyway). A hand coming back for the next move adds
/// samples that differ (unless, still, it happens to hide just the move's
/// own change), and its pick-up is motion.
#[derive(Debug, Clone)]
struct ReferenceSettling {
    /// Signature of the reference picture before the decision.
    prior: motion::Signature,
    /// How many samples of the reference now held differ from `prior`
    /// ([`motion::differing_samples`]).
    differing: usize,
    /// When the decision frame was taken.
    decided_ms: u64,
    /// Still frames in a row so far.
    still: u32,
}

#[derive(Debug, Clone)]
struct Reference {
    image: RgbImage,
    location: BoardLocation,
    side: Side,
    board: shakmaty::Board,
    /// What each square (a1 = 0) read likeliest on this frame.
    seen: [Occupant; 64],
}

impl Reference {
    /// Taken where `read` found the board, seen the same way round.
    fn seen_as(&self, read: &FrameReading) -> bool {
        self.location == read.location && self.side == read.orientation.white_at
    }

    /// A picture of `board` that `read`'s frame can be compared with.
    fn of(&self, board: &shakmaty::Board, read: &FrameReading) -> bool {
        self.board == *board && self.seen_as(read)
    }
}

/// What a frame's board location means for the tracked one.
enum Adoption {
    /// The tracked board (or the first one found): read the frame.
    Read,
    /// Somewhere else, not confirmed yet: nothing is decided on this frame.
    Pending,
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
            recent: std::collections::VecDeque::new(),
            moved_ms: None,
            model: cfg.model.clone(),
            first_model: cfg.model.clone().map(CalibratedModel::classes_only),
            learnt: None,
            candidate: None,
            shadows: None,
            reference: None,
            settling: None,
            cfg,
        }
    }

    /// The player's side the latest hand came from, where seen
    /// ([`Tracker::hand_side`]).
    pub fn hand_side(&self) -> Option<shakmaty::Color> {
        self.tracker.hand_side()
    }

    /// The position the watcher believes is on the board.
    pub fn position(&self) -> &Chess {
        self.tracker.position()
    }

    /// The picture the believed position was last seen in, with which a
    /// move's frames are compared (see [`super::change`]); `None` until one
    /// was taken for it.
    pub fn reference_image(&self) -> Option<&RgbImage> {
        let r = self.reference.as_ref()?;
        (r.board == *self.tracker.position().board()).then_some(&r.image)
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

    /// Sets where the board is (a calibration made now): used from the next
    /// frame on, with motion detection started afresh there.
    pub fn set_location(&mut self, location: BoardLocation, white_at: Side) {
        self.white_at = Some(white_at);
        self.set_location_inner(location);
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
        if let Adoption::Pending = self.adopt_location(&read, t_ms) {
            return Ok(self.unread(
                t_ms,
                FrameUse::BoardNotFound(
                    "the board was found elsewhere than before; confirming it moved".into(),
                ),
            ));
        }
        let mut read = read;
        if self.white_at.is_none() {
            let side = super::photo::best_side(&read, self.tracker.position().board());
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
        let sig = motion::signature(image, loc);
        let camera = crate::vision::viewpoint::estimate(loc).map(|v| [v.centre[0], v.centre[1]]);
        let mut cells = [false; 64];
        // Motion across the board's rim, against the previous and the
        // look-back frames: an arm sweeping slowly over the edge while its
        // hand, over the squares, changes too little of them (held-out
        // seed 51, vinyl/overhead, game seed 52: the hand carrying a
        // captured bishop off a6 over a7 and a8, its arm across the
        // a-file's edge, read as pieces there on frames called still, and
        // a wrong line was resynced). It holds the tracker's lost-track
        // search only, and tells whose hand it was
        // ([`Tracker::set_rim_motion`]).
        let mut rim_edges = [false; 4];
        for old in &self.recent {
            for (e, d) in rim_edges.iter_mut().zip(motion::rim_edges_differ(
                old,
                &sig,
                self.cfg.cover_fraction,
            )) {
                *e |= d;
            }
            for (c, d) in
                cells
                    .iter_mut()
                    .zip(motion::differing_cells(old, &sig, self.cfg.cover_fraction))
            {
                *c |= d;
            }
        }
        // Still up the squares' axes too (the floor is the motion
        // detector's; see `ReferenceSettling`).
        let axes_still = self.recent.back().is_some_and(|prev| {
            !motion::differing_axes(prev, &sig, self.cfg.cover_fraction)
                .iter()
                .any(|d| *d)
        });
        if self.recent.len() >= MOTION_LOOKBACK {
            self.recent.pop_front();
        }
        self.recent.push_back(sig.clone());
        let state = self.motion.update(sig);
        let still = axes_still && !state.moving.iter().any(|m| *m);
        let slow_motion = cells.iter().any(|c| *c);
        if slow_motion {
            self.moved_ms = Some(t_ms);
        }
        for (c, d) in cells.iter_mut().zip(state.covered()) {
            *c |= d;
        }
        let side = read.orientation.white_at;
        let mut occluded = [false; 64];
        for (i, &c) in cells.iter().enumerate() {
            if c {
                occluded[side.square_of_cell(i % 8, i / 8)] = true;
            }
        }
        let shadows = self.shadows_of(&read);
        let mut obs = board_obs_shadowed(&read, &occluded, shadows.as_ref());
        // Still for as long as the motion detector needs to call the
        // scene settled, counted from the last look-back motion too.
        let settle_ms = u64::from(self.cfg.settle_frames) * SETTLE_FRAME_MS;
        let busy = !state.settled
            || self
                .moved_ms
                .is_some_and(|m| t_ms.saturating_sub(m) < settle_ms);
        if !busy && self.cfg.self_calibrate {
            self.learn(image, &read, &obs);
        }
        if !busy {
            self.compare_with_reference(image, &read, &mut obs);
        }
        let rm = rim_motion(rim_edges, read.orientation.white_at, camera);
        if rm.moving() {
            tracing::debug!(t_ms, edges = ?rim_edges, camera = ?camera, side = ?rm.side(), busy, "rim motion");
        }
        self.tracker.set_rim_motion(rm);
        let event = self.tracker.push(t_ms, &obs, busy);
        // The frame a decision was made on shows the position now believed
        // (misreads and all, at low views often never "nothing changed"
        // with the margin a reference otherwise needs).
        if !busy
            && matches!(
                event,
                Some(
                    TrackEvent::Move { .. }
                        | TrackEvent::Resynced { .. }
                        | TrackEvent::RobotMoveVerified {
                            with_reply: false,
                            ..
                        }
                        | TrackEvent::Restored { .. }
                        | TrackEvent::Amended { .. }
                )
            )
        {
            // The picture of the position before, to tell later frames
            // with less of a hand in them (where it was taken here).
            let prior = self
                .reference
                .as_ref()
                .filter(|r| r.seen_as(&read))
                .map(|r| motion::signature(&r.image, &read.location));
            self.take_reference(image, &read);
            self.settling = prior.zip(self.recent.back()).map(|(prior, sig)| {
                let differing = motion::differing_samples(&prior, sig);
                ReferenceSettling {
                    prior,
                    differing,
                    decided_ms: t_ms,
                    still: 0,
                }
            });
        } else {
            self.settle_reference(image, &read, still, busy);
        }
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

    /// On a settled frame: when the squares leave a close call between
    /// hypotheses, measures how well each explains what changed in the
    /// picture since the reference frame of the believed position (when
    /// there is one, taken at the same board location); and makes this
    /// frame the reference when it shows the believed position.
    fn compare_with_reference(
        &mut self,
        image: &RgbImage,
        read: &FrameReading,
        obs: &mut BoardObs,
    ) {
        let pos = self.tracker.position();
        let board = pos.board().clone();
        let side = read.orientation.white_at;
        let sc = super::score(pos, obs);
        let close_call = matches!(
            sc.verdict,
            super::Verdict::Uncertain | super::Verdict::Unexplained { .. }
        );
        let to_confirm = matches!(sc.verdict, super::Verdict::Move { .. });
        let reference = self.reference.as_ref().filter(|r| r.of(&board, read));
        if let (true, Some(r)) = (close_call || to_confirm, reference) {
            let measure = if to_confirm {
                1 + CONFIRM_CANDIDATES
            } else {
                super::scoring::contenders(&sc.hypotheses).len()
            };
            let mut boards: Vec<Board> = sc
                .hypotheses
                .iter()
                .take(measure)
                .map(|h| super::scoring::board_after(pos, h.mv))
                .collect();
            if boards.len() > MAX_CHANGE_CANDIDATES {
                boards.clear();
            }
            let view = crate::vision::viewpoint::estimate(&read.location);
            let changes = view
                .as_ref()
                .map(|view| super::change::square_changes(&r.image, image, view, side, &board));
            // Which squares' pictures changed, known before the lines to
            // measure are drawn up: the search that picks among them
            // later weighs a misread on an unchanged picture as no news
            // and moves no piece for it, and the lines it weighs must be
            // the ones measured.
            // The squares' verdict once the picture's square changes are
            // known (`None` when not measured).
            let mut rescored_verdict = None;
            if let Some(c) = &changes {
                obs.unchanged = c.unchanged;
                obs.camouflaged = c.camouflaged;
                obs.changed = c.changed;
                obs.reference_occupied = Some(board.occupied());
                obs.reads_as_before = Square::ALL
                    .into_iter()
                    .filter(|&sq| {
                        let o = obs.get(sq);
                        !o.occluded && o.best().0 == r.seen[sq as usize]
                    })
                    .collect();
                // The contenders once the squares' changes are known, too:
                // an unchanged picture can rank the moves differently.
                // Seed-61 printed/low (game seed 69, ply 10): read alone,
                // the squares' contenders were `...Nge7` only (d8's queen
                // still read, emptying it unlikely); with d8's picture known
                // to have changed, `...Qe7` led `...Nce7` and `...Nge7`
                // (0.41 / 0.29 / 0.29), and, never measured against the
                // picture, was never picked by it: the game stalled there.
                let rescored = super::score(pos, obs);
                let more = super::scoring::contenders(&rescored.hypotheses);
                rescored_verdict = Some(rescored.verdict.clone());
                if more.len() <= MAX_CHANGE_CANDIDATES {
                    for h in more {
                        let b = super::scoring::board_after(pos, h.mv);
                        if !boards.contains(&b) {
                            boards.push(b);
                        }
                    }
                }
                // And the moves the picture's changes name, however the
                // squares rank them (`scoring::named_by_picture`).
                if close_call {
                    for mv in super::scoring::named_by_picture(pos, obs) {
                        let b = super::scoring::board_after(pos, Some(mv));
                        if !boards.contains(&b) {
                            boards.push(b);
                        }
                    }
                }
            }
            let mut extra = Vec::new();
            let mut held = None;
            // Unexplained by the squares alone, or once the picture's
            // square changes are known: the tracker's verdict, whose
            // lost-track search weighs the boards measured here. Held-out
            // seed 41, printed/low (game seed 49, ply 24): the squares
            // alone left `...Ng2` uncertain, the tracker found no move,
            // and `...Nxf3+ Nxf3`, the search's best, was never measured.
            let unexplained = |v: &super::Verdict| matches!(v, super::Verdict::Unexplained { .. });
            if unexplained(&sc.verdict) || rescored_verdict.as_ref().is_some_and(unexplained) {
                obs.changed_in_picture = changes.map_or(Bitboard::EMPTY, |c| !c.unchanged);
                // The lines the tracker will search (against the robot,
                // the person's one reply).
                extra = super::scoring::resync_boards(pos, obs, self.tracker.resync_plies());
                held = self.tracker.held_move();
            }
            // The replies that may have followed a move whose arriving
            // piece read the other colour: one held on arrival (for its
            // colour, or its piece reading empty in the open) until a
            // hand came (`Tracker::held_line`), and any measured here, whose
            // colour may be the reply's, already on the board (a capture on
            // the square just moved to), for the tracker to weigh before it
            // takes the move alone (`Tracker::move_and_reply`).
            let misread = sc
                .hypotheses
                .iter()
                .take(measure)
                .filter_map(|h| h.mv)
                .filter(|&mv| super::scoring::arrival_colour_misread(pos, obs, mv));
            let replied: Vec<Move> = held.into_iter().chain(misread).collect();
            for mv in replied {
                extra.extend(
                    super::scoring::held_reply_boards(pos, mv, obs)
                        .into_iter()
                        .map(|(_, b)| b),
                );
            }
            // The position before ("nothing changed") is always measured:
            // a lone move is told from it by the samples where they differ.
            extra.push(board.clone());
            for b in extra {
                if !boards.contains(&b) {
                    boards.push(b);
                }
            }
            if let (true, Some(view)) = (boards.len() > 1, view) {
                let costs =
                    super::change::explain_change(&r.image, image, &view, side, &board, &boards);
                obs.change = costs
                    .into_iter()
                    .flatten()
                    .zip(boards)
                    .map(|(fit, board)| ChangeFit { board, fit })
                    .collect();
                // Scored again with the picture measured: a move the
                // picture picked, and the squares had not, must also beat
                // every other legal move in the picture.
                let with_picture = super::score(pos, obs);
                let picked = match (&with_picture.verdict, &sc.verdict) {
                    (
                        super::Verdict::Move { mv, .. },
                        super::Verdict::Move { mv: by_squares, .. },
                    ) if mv == by_squares => None,
                    (super::Verdict::Move { mv, .. }, _) => Some(*mv),
                    _ => None,
                };
                if let Some(mv) = picked {
                    let rivals = super::scoring::rival_boards(pos, obs, mv);
                    if rivals.len() > 1 {
                        let fits = super::change::explain_change(
                            &r.image, image, &view, side, &board, &rivals,
                        );
                        obs.picture_rivals = Some(
                            fits.into_iter()
                                .flatten()
                                .zip(rivals)
                                .map(|(fit, board)| ChangeFit { board, fit })
                                .collect(),
                        );
                    }
                }
                if tracing::enabled!(tracing::Level::DEBUG) {
                    // The verdict the tracker gets, not the squares' alone.
                    let decided = super::score(pos, obs);
                    trace_close_call(self.last_t_ms.unwrap_or(0), &decided, pos, obs);
                }
            }
        }
        // "Nothing changed" explains this frame well (at low views often
        // without the margin a decision needs: a square or two stay
        // ambiguous, and they are ambiguous in the reference alike), but
        // not merely as well as a move (after `Rh7` at the angled camera
        // the rook in front of h8 made "nothing changed" and `Rh7` tie,
        // and the frame after the move became the reference of the
        // position before it).
        //
        // Only where there is no reference of the believed position yet:
        // the frame a decision was made on is one, and a later frame read
        // as "nothing changed" by misreads must not replace it. Seed-31
        // wooden/low (game seed 37, to 12 plies): after `...gxh4` one frame
        // read h4 White and g5 still occupied, became the reference, and
        // from then on "nothing changed" fitted the picture perfectly
        // (cost 0.000 against 0.333 for `gxh4`, which had led with 0.000
        // the frame before): the capture was never committed and every
        // later move was missed.
        let shows_position = reference.is_none()
            && sc
                .hypotheses
                .first()
                .is_some_and(|h| h.mv.is_none() && h.posterior >= REFERENCE_POSTERIOR)
            && !matches!(sc.verdict, super::Verdict::Unexplained { .. });
        if shows_position {
            self.take_reference(image, read);
        }
    }

    /// One frame on from a decision (see [`ReferenceSettling`]): `still`
    /// tells whether this frame's floor and axes match the previous
    /// frame's, `busy` whether the motion detector saw motion.
    fn settle_reference(&mut self, image: &RgbImage, read: &FrameReading, still: bool, busy: bool) {
        let Some(s) = self.settling.as_mut() else {
            return;
        };
        let same_place = self
            .reference
            .as_ref()
            .is_some_and(|r| r.of(self.tracker.position().board(), read));
        let t_ms = self.last_t_ms.unwrap_or(0);
        if busy || !same_place || t_ms.saturating_sub(s.decided_ms) > REFERENCE_SETTLE_MS {
            self.settling = None;
            return;
        }
        if !still {
            s.still = 0;
            return;
        }
        s.still += 1;
        if s.still < self.cfg.settle_frames {
            return;
        }
        let Some(sig) = self.recent.back() else {
            return;
        };
        let differing = motion::differing_samples(&s.prior, sig);
        if differing < s.differing {
            tracing::debug!(
                t_ms,
                from = s.differing,
                to = differing,
                "reference moved on to a frame with less of a hand"
            );
            s.differing = differing;
            self.take_reference(image, read);
        }
    }

    /// Makes `image` the reference picture of the believed position.
    fn take_reference(&mut self, image: &RgbImage, read: &FrameReading) {
        let obs = super::photo::obs_of_reading(read);
        self.reference = Some(Reference {
            image: image.clone(),
            location: read.location.clone(),
            side: read.orientation.white_at,
            board: self.tracker.position().board().clone(),
            seen: obs.squares.map(|s| s.best().0),
        });
    }

    /// [`shadow_map`] of a reading, cached while the board stays put.
    fn shadows_of(&mut self, read: &FrameReading) -> Option<[Bitboard; 64]> {
        let side = read.orientation.white_at;
        match &self.shadows {
            Some((loc, s, map)) if *loc == read.location && *s == side => *map,
            _ => {
                let map = shadow_map(&read.location, side);
                self.shadows = Some((read.location.clone(), side, map));
                map
            }
        }
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
        let occ = super::photo::occupancy_of(pos.board());
        let truth = squares::cells_from_occupancy(&occ, read.orientation.white_at);
        if let Ok(m) = CalibratedModel::fit_on_prior(&cells, &truth, self.first_model.as_ref()) {
            // Without the cells' own looks: with them, a cell taught on one
            // believed position kept reading as it did there, and the
            // standard bench's vinyl/angled game resynced two moves
            // (18/20 + 2 against 20/20).
            let m = m.classes_only();
            if self.first_model.is_none() {
                self.first_model = Some(m.clone());
            }
            self.model = Some(m);
            self.learnt = Some(pos.board().clone());
        }
    }

    /// A frame with nothing to decide on: the tracker's count of agreeing
    /// reads starts over after the gap.
    fn unread(&mut self, t_ms: u64, frame: FrameUse) -> WatchOutput {
        let obs = BoardObs::new(std::array::from_fn(|_| SquareObs::occluded()));
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
    /// it, once the board or camera has really moved: found in the same
    /// new place for [`RELOCATE_CONFIRM_MS`], showing the believed
    /// position or one legal move from it.
    fn adopt_location(&mut self, read: &FrameReading, t_ms: u64) -> Adoption {
        let Some(old) = &self.location else {
            self.set_location_inner(read.location.clone());
            return Adoption::Read;
        };
        if read.tracked || same_board(old, &read.location) {
            self.candidate = None;
            return Adoption::Read;
        }
        let since = match &self.candidate {
            Some((c, since)) if same_board(c, &read.location) => *since,
            _ => {
                self.candidate = Some((read.location.clone(), t_ms));
                t_ms
            }
        };
        if t_ms.saturating_sub(since) < RELOCATE_CONFIRM_MS {
            return Adoption::Pending;
        }
        let shadows = self.shadows_of(read);
        let obs = board_obs_shadowed(read, &[false; 64], shadows.as_ref());
        let verdict = super::scoring::score(self.tracker.position(), &obs).verdict;
        if matches!(
            verdict,
            super::Verdict::NoChange { .. } | super::Verdict::Move { .. }
        ) {
            self.set_location_inner(read.location.clone());
            Adoption::Read
        } else {
            Adoption::Pending
        }
    }

    fn set_location_inner(&mut self, location: BoardLocation) {
        self.location = Some(location);
        self.candidate = None;
        self.motion = MotionDetector::new(self.cfg.cover_fraction, self.cfg.settle_frames);
        self.recent.clear();
        self.settling = None;
    }
}

/// Logs (at debug level, `RUST_LOG=chessbot::recognition=debug`) what a
/// close call weighed: the verdict with the picture measured (`sc`, scored
/// after [`BoardObs::change`] was filled in), the best hypotheses by the
/// squares, each measured
/// board's fit to the change in the picture (named by the squares it
/// changes), the nearest rivals of a move the picture picked
/// ([`BoardObs::picture_rivals`], with their margins behind it), and the
/// squares whose picture changed. This is how the
/// held-out bench's stalls and wrong commits are traced.
fn trace_close_call(t_ms: u64, sc: &super::scoring::Scored, pos: &Chess, obs: &BoardObs) {
    let before = pos.board();
    let hypotheses: Vec<String> = sc
        .hypotheses
        .iter()
        .take(6)
        .map(|h| {
            let mv = h.mv.map_or("none".to_string(), crate::game::uci_of);
            format!("{mv} {:.2} ({:.3})", h.log_likelihood, h.posterior)
        })
        .collect();
    // A board named by the squares where it differs from `before`.
    let named = |board: &Board| {
        let squares: Vec<String> = super::scoring::squares_changed(before, board)
            .map(|s| s.to_string())
            .collect();
        format!("[{}]", squares.join(" "))
    };
    // Each measured board against the one that fits best: the samples
    // where the two differ tallied for it, then for the best ([`tally`]).
    let best = obs
        .change
        .iter()
        .min_by(|a, b| a.fit.cost.total_cmp(&b.fit.cost));
    let changes: Vec<String> = obs
        .change
        .iter()
        .map(|c| {
            let against = best
                .filter(|b| b.board != c.board)
                .map_or(String::new(), |b| {
                    format!(" {}/{}", tally(&c.fit, &b.fit), tally(&b.fit, &c.fit))
                });
            format!("{} {:.3}{against}", named(&c.board), c.fit.cost)
        })
        .collect();
    let moved: Vec<String> = Square::ALL
        .into_iter()
        .filter(|s| obs.changed.contains(*s))
        .map(|s| s.to_string())
        .collect();
    let covered: Vec<String> = Square::ALL
        .into_iter()
        .filter(|s| obs.get(*s).occluded)
        .map(|s| s.to_string())
        .collect();
    // The rivals of a move the picture picked, nearest first: the squares
    // each changes and its margin behind the pick.
    let mut rivals: Vec<(f32, String)> = Vec::new();
    if let Some((picked, others)) = obs.picture_rivals.as_deref().and_then(|r| r.split_first()) {
        for r in others {
            let m = picked.fit.margin_to(&r.fit).unwrap_or(f32::NAN);
            let ll = sc
                .hypotheses
                .iter()
                .find(|h| super::scoring::board_after(pos, h.mv) == r.board)
                .map_or(f64::NAN, |h| h.log_likelihood);
            let apart = picked
                .fit
                .samples
                .iter()
                .zip(&r.fit.samples)
                .filter(|(a, b)| a.predicted != b.predicted)
                .count();
            rivals.push((
                m,
                format!(
                    "{} {m:.3} on {apart} ({ll:.2}) pick {} rival {}",
                    named(&r.board),
                    tally(&picked.fit, &r.fit),
                    tally(&r.fit, &picked.fit)
                ),
            ));
        }
    }
    // Those the picture cannot tell from the pick (NaN) last.
    rivals.sort_by(|a, b| a.0.total_cmp(&b.0));
    let rivals: Vec<String> = rivals.into_iter().take(4).map(|r| r.1).collect();
    tracing::debug!(
        t_ms,
        verdict = ?sc.verdict,
        rivals = %rivals.join(", "),
        hypotheses = %hypotheses.join(", "),
        change = %changes.join(", "),
        picture_changed = %moved.join(" "),
        covered = %covered.join(" "),
        "close call"
    );
}

/// How `f` fares on the samples where it and `g` predict differently:
/// `{n}p{m}m{u}u`, n changes predicted and m of them not seen, u changes
/// seen where it predicted none (see [`super::change::explain_change`]).
fn tally(f: &super::change::Fit, g: &super::change::Fit) -> String {
    use super::change::Predicts;
    let (mut pred, mut missing, mut unpred) = (0, 0, 0);
    for (a, _) in f
        .samples
        .iter()
        .zip(&g.samples)
        .filter(|(a, b)| a.predicted != b.predicted)
    {
        match a.predicted {
            Predicts::Change => {
                pred += 1;
                missing += usize::from(a.cost > 0.0);
            }
            Predicts::Same => unpred += usize::from(a.cost > 0.0),
            Predicts::Either => {}
        }
    }
    format!("{pred}p{missing}m{unpred}u")
}

/// Per square (a1 = 0), the squares whose piece can make it look occupied
/// ([`SquareObs::bleed_from`]), from the camera pose estimated from the
/// board's `location` seen with White at `side`; `None` when the pose
/// cannot be estimated.
pub fn shadow_map(location: &BoardLocation, side: Side) -> Option<[Bitboard; 64]> {
    let view = crate::vision::viewpoint::estimate(location)?;
    let cells = view.shadow_sources();
    let mut out = [Bitboard::EMPTY; 64];
    for (cell, bits) in cells.iter().enumerate() {
        let from = &mut out[side.square_of_cell(cell % 8, cell / 8)];
        for q in (0..64).filter(|q| bits & (1 << q) != 0) {
            from.add(Square::new(side.square_of_cell(q % 8, q / 8) as u32));
        }
    }
    Some(out)
}

/// What moved across the board's rim, by grid edge (y = 0, x = 8, y = 8,
/// x = 0; `vision::motion::rim_edges_differ`), told by player's edge, with
/// White at `white_at` and the camera's foot on the board plane at
/// `camera` (grid coordinates) where known: the player nearer the camera
/// is the one whose edge the camera stands beyond.
pub fn rim_motion(edges: [bool; 4], white_at: Side, camera: Option<[f64; 2]>) -> RimMotion {
    // A cell beside each edge, and how far beyond the edge the camera is.
    let beside = [(3, 0), (7, 3), (3, 7), (0, 3)];
    let beyond = |e: usize, c: [f64; 2]| match e {
        0 => -c[1],
        1 => c[0] - 8.0,
        2 => c[1] - 8.0,
        _ => -c[0],
    };
    let mut rim = RimMotion::default();
    for (e, &(c, r)) in beside.iter().enumerate() {
        let colour = match white_at.square_of_cell(c, r) / 8 {
            0 => shakmaty::Color::White,
            7 => shakmaty::Color::Black,
            _ => {
                rim.lateral |= edges[e];
                continue;
            }
        };
        rim.players[usize::from(colour == shakmaty::Color::Black)] |= edges[e];
        if camera.is_some_and(|cam| beyond(e, cam) > 0.0) {
            rim.near = Some(colour);
        }
    }
    rim
}

/// The observations of a reading with the covered squares marked, and
/// each square's shadows from the pose the reading's location gives.
pub fn board_obs(read: &FrameReading, occluded: &[bool; 64]) -> BoardObs {
    let shadows = shadow_map(&read.location, read.orientation.white_at);
    board_obs_shadowed(read, occluded, shadows.as_ref())
}

/// [`board_obs`] with the shadows already worked out.
fn board_obs_shadowed(
    read: &FrameReading,
    occluded: &[bool; 64],
    shadows: Option<&[Bitboard; 64]>,
) -> BoardObs {
    let mut obs = super::photo::obs_of_reading(read);
    if let Some(shadows) = shadows {
        for (o, from) in obs.squares.iter_mut().zip(shadows) {
            o.bleed_from = *from;
        }
    }
    for (o, &c) in obs.squares.iter_mut().zip(occluded) {
        if c {
            *o = SquareObs::occluded();
        }
    }
    obs
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

    #[test]
    fn the_rim_is_told_by_players_edges_and_the_near_player() {
        use shakmaty::Color::{Black, White};
        let edges = |e: &[usize]| {
            let mut m = [false; 4];
            for &i in e {
                m[i] = true;
            }
            m
        };
        // White at the bottom of the picture: grid edge y = 8 is White's,
        // y = 0 Black's; the camera stands beyond White's edge.
        let low = Some([4.0, 14.0]);
        let r = rim_motion(edges(&[0, 3]), Side::Bottom, low);
        assert_eq!(
            (r.players, r.lateral, r.near),
            ([false, true], true, Some(White))
        );
        let r = rim_motion(edges(&[2]), Side::Bottom, Some([4.0, 4.5]));
        assert_eq!((r.players, r.lateral, r.near), ([true, false], false, None));
        assert_eq!(rim_motion(edges(&[0, 2]), Side::Bottom, None).near, None);
        assert!(!rim_motion(edges(&[]), Side::Bottom, low).moving());
        // Whose hand: the near player's where their edge moved, else the
        // one player's edge with nothing across the files' edges.
        let side = |e: &[usize], cam| rim_motion(edges(e), Side::Bottom, cam).side();
        assert_eq!(side(&[0, 2], low), Some(White));
        assert_eq!(side(&[2, 3], low), Some(White));
        assert_eq!(side(&[0], low), Some(Black));
        assert_eq!(side(&[0, 3], low), None);
        let overhead = Some([4.0, 4.5]);
        assert_eq!(side(&[2], overhead), Some(White));
        assert_eq!(side(&[0, 2], overhead), None);
        assert_eq!(side(&[1], overhead), None);
        // White on the left (grid x = 0), the camera beyond Black's edge.
        let r = rim_motion(edges(&[0, 3]), Side::Left, Some([12.0, 4.0]));
        assert_eq!(
            (r.players, r.lateral, r.near),
            ([true, false], true, Some(Black))
        );
    }

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
