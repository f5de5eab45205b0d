//! The service's eyes: camera frames through the [`BoardWatcher`], kept in
//! step with the game the [`Core`] holds.
//!
//! A plain struct with three steps per frame, so the runtime can hold the
//! core's lock only for the short ones:
//! 1. [`CameraWatch::sync`] (core locked): a move that entered the game
//!    without the camera (the robot's, one clicked on screen) is expected
//!    on the board; anything else (new game, take-back, resume) resets the
//!    watcher to the game's position.
//! 2. [`CameraWatch::look`] (no lock): vision and the move tracker.
//! 3. [`CameraWatch::apply`] (core locked): a move seen becomes a move in
//!    the game, a board that matches nothing is said aloud with the squares
//!    that disagree. An event decided on a game that changed in between is
//!    dropped; the next sync starts over from the game.

use shakmaty::{Chess, Move, Position};

use super::core::{CameraStatus, Core, Effect, Mode};
use crate::game::{fen_of, san_of, uci_of};
use crate::recognition::{
    BoardWatcher, Disagreement, FrameUse, RecognitionError, TrackEvent, WatchOutput, WatcherConfig,
};
use crate::vision::calibrate::BoardPose;
use crate::vision::image::RgbImage;
use crate::vision::pipeline::{self, ReadOptions};

/// The game as the watcher last saw it: its start and its moves.
#[derive(Debug, Clone, PartialEq, Eq)]
struct GameMark {
    start: String,
    moves: Vec<String>,
}

impl GameMark {
    fn of(core: &Core) -> Option<GameMark> {
        let g = core.session()?.game();
        Some(GameMark {
            start: fen_of(g.start()),
            moves: g.moves().iter().map(|m| m.uci.clone()).collect(),
        })
    }
}

/// The camera side of the service.
pub struct CameraWatch {
    watcher: BoardWatcher,
    mark: Option<GameMark>,
}

impl CameraWatch {
    pub fn new(cfg: WatcherConfig) -> CameraWatch {
        CameraWatch {
            watcher: BoardWatcher::new(Chess::default(), cfg),
            mark: None,
        }
    }

    /// The position the watcher believes is on the board.
    pub fn position(&self) -> &Chess {
        self.watcher.position()
    }

    /// Brings the watcher in step with the game.
    pub fn sync(&mut self, core: &Core) {
        let (Some(now), Some(session)) = (GameMark::of(core), core.session()) else {
            return;
        };
        if self.mark.as_ref() == Some(&now) {
            return;
        }
        let game = session.game();
        let one_more = self.mark.as_ref().is_some_and(|old| {
            old.start == now.start
                && now.moves.len() == old.moves.len() + 1
                && now.moves.starts_with(&old.moves)
        });
        let last = game.moves().last().map(|r| r.mv);
        match (one_more, last) {
            // Played by the arm or entered on screen: the board should
            // show it once the arm or the person has put it there.
            (true, Some(mv)) if self.watcher.position().is_legal(mv) => {
                if let Err(e) = self.watcher.expect_robot_move(mv) {
                    tracing::warn!("camera: cannot expect {}: {e}", uci_of(mv));
                    self.watcher.set_position(game.position().clone());
                }
            }
            _ => self.watcher.set_position(game.position().clone()),
        }
        self.mark = Some(now);
    }

    /// Reads one frame (vision and the move tracker).
    pub fn look(&mut self, image: &RgbImage, t_ms: u64) -> Result<WatchOutput, RecognitionError> {
        self.watcher.push(image, t_ms)
    }

    /// Finds the board afresh on `image` (the scene still, any position on
    /// it) and tracks it there from now on: the calibration step a person
    /// re-runs from the page after moving the camera or the board. White's
    /// side is kept when known (the game's orientation does not change when
    /// the camera moves a little), else decided from the pieces.
    pub fn recalibrate(
        &mut self,
        image: &RgbImage,
    ) -> Result<BoardPose, crate::vision::VisionError> {
        let opts = ReadOptions {
            white_at: self.watcher.white_at(),
            ..ReadOptions::default()
        };
        let read = pipeline::read_frame(image, &opts)?;
        self.watcher
            .set_location(read.location.clone(), read.orientation.white_at);
        Ok(BoardPose {
            grid_corners: read.location.corners,
            image_size: (image.width, image.height),
            white_at: read.orientation.white_at,
            camera_from_board: None,
        })
    }

    /// What the camera side shows the person for this frame.
    pub fn status_of(out: &WatchOutput) -> CameraStatus {
        match &out.frame {
            FrameUse::Read if out.busy => CameraStatus::Busy,
            FrameUse::Read => CameraStatus::Watching,
            FrameUse::Unusable(why) | FrameUse::BoardNotFound(why) => CameraStatus::NoBoard {
                detail: why.clone(),
            },
        }
    }

    /// Carries what the frame decided into the game. Returns the effects
    /// for the runtime, and whether the status shown changed.
    pub fn apply(
        &mut self,
        core: &mut Core,
        out: &WatchOutput,
        now_ms: i64,
    ) -> (Vec<Effect>, bool) {
        let mut changed = core.set_camera(Self::status_of(out));
        let Some(event) = &out.event else {
            return (Vec::new(), changed);
        };
        if GameMark::of(core) != self.mark {
            // The game changed while this frame was read: decide again
            // from the game as it is now.
            tracing::debug!("camera: event {event:?} dropped, the game changed meanwhile");
            return (Vec::new(), changed);
        }
        let mut effects = Vec::new();
        match event {
            TrackEvent::Move {
                mv,
                promotion_unverified,
                ..
            } => {
                let played = self.board_moves(core, &[*mv], now_ms, &mut effects);
                if played == 1 && *promotion_unverified {
                    effects.extend(core.notify(
                        "Promotion to a queen assumed. If it is another piece, take the move back and enter it on screen."
                            .into(),
                    ));
                }
            }
            TrackEvent::Resynced { moves, .. } => {
                let played = self.board_moves(core, moves, now_ms, &mut effects);
                if played > 1 {
                    effects.extend(core.notify(format!(
                        "I lost track of the board for a while and recovered {played} moves."
                    )));
                }
            }
            TrackEvent::Unexplained { disagreeing, .. } => {
                effects.extend(core.notify(format!(
                    "The board does not match a legal move: {}. Please put it right.",
                    Disagreement::describe_all(disagreeing)
                )));
            }
            TrackEvent::Amended { was, now, .. } => {
                let last = core
                    .session()
                    .and_then(|s| s.game().moves().last().map(|m| m.mv));
                // Recording: the move is replaced. Playing: the engine may
                // already be answering the move as it was, so the person
                // is asked to finish it as recorded or take it back.
                if last == Some(*was) && core.mode() == Mode::Record && core.take_back().is_ok() {
                    if let Some(m) = &mut self.mark {
                        m.moves.pop();
                    }
                    let san_was = core
                        .session()
                        .map(|s| san_of(s.game().position(), *was))
                        .unwrap_or_default();
                    if self.board_moves(core, &[*now], now_ms, &mut effects) == 1 {
                        let san_now = core
                            .session()
                            .and_then(|s| s.game().moves().last().map(|m| m.san.clone()))
                            .unwrap_or_default();
                        effects.extend(core.notify(format!(
                            "The piece went on after {san_was} looked finished: recorded {san_now} instead."
                        )));
                    }
                } else {
                    let game = core.session().map(|s| {
                        let last = s.game().moves().last().map(|m| m.san.clone());
                        (s.game().position().clone(), last.unwrap_or_default())
                    });
                    if let Some((pos, san)) = game {
                        effects.extend(core.notify(format!(
                            "The board no longer shows {san} as played. Please put the piece where it was played, or take the move back."
                        )));
                        self.watcher.set_position(pos);
                    }
                    self.mark = GameMark::of(core);
                }
            }
            TrackEvent::Unsure { candidates, .. } => {
                let sans: Option<Vec<String>> = core.session().map(|s| {
                    let pos = s.game().position();
                    candidates.iter().map(|m| san_of(pos, *m)).collect()
                });
                if let Some(sans) = sans {
                    effects.extend(core.notify(format!(
                        "I cannot tell which move was played: {}. Please enter it on screen.",
                        one_of(&sans)
                    )));
                }
            }
            TrackEvent::Restored { .. } => {
                effects.extend(core.notify("The board matches the game again.".into()));
            }
            TrackEvent::RobotMoveVerified { .. } => {
                tracing::info!("camera: the move is on the board as planned");
            }
            TrackEvent::RobotMoveMismatch { disagreeing, .. } => {
                let last = core
                    .session()
                    .and_then(|s| s.game().moves().last().map(|m| m.san.clone()))
                    .unwrap_or_default();
                effects.extend(core.notify(format!(
                    "The move {last} is not on the board as planned: {}. Please put the pieces right.",
                    Disagreement::describe_all(disagreeing)
                )));
            }
        }
        changed |= !effects.is_empty();
        (effects, changed)
    }

    /// Moves seen on the board go into the game in order; the first one
    /// refused stops the rest and is said, and the watcher goes back to
    /// the game's position (the move is seen again once it may be played).
    fn board_moves(
        &mut self,
        core: &mut Core,
        moves: &[Move],
        now_ms: i64,
        effects: &mut Vec<Effect>,
    ) -> usize {
        let mut played = 0;
        for &mv in moves {
            let Some(pos) = core.session().map(|s| s.game().position().clone()) else {
                break;
            };
            let san = san_of(&pos, mv);
            match core.board_move(mv, now_ms) {
                Ok(e) => {
                    effects.extend(e);
                    played += 1;
                    if let Some(m) = &mut self.mark {
                        m.moves.push(uci_of(mv));
                    }
                }
                Err(e) => {
                    let said = core.notify(format!("I saw {san} on the board, but {e}."));
                    if !said.is_empty() {
                        tracing::warn!("camera: {san} seen on the board but refused: {e}");
                    }
                    effects.extend(said);
                    self.watcher.set_position(pos);
                    self.mark = GameMark::of(core);
                    break;
                }
            }
        }
        played
    }
}

/// "a", "a or b", "a, b or c".
fn one_of(items: &[String]) -> String {
    match items.split_last() {
        None => String::new(),
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
    }
}
