//! What the robot's camera side tells the game loop: moves seen, the
//! robot's own move verified, and what the settled board shows.
//!
//! [`VisionWatcher`] is the real thing: frames rendered from the simulated
//! camera go through vision and the [`BoardWatcher`]. [`TruthWatcher`] is
//! the fast stand-in for long tests: it reads the simulated world's ground
//! truth (which piece colour stands on each square; nothing while a hand,
//! the arm or a lifted piece is over the board) and runs the same move
//! tracker on it.

use shakmaty::{Board, Chess, Move};

use crate::camera::sim::rgb_from_sim;
use crate::recognition::watcher::board_obs;
use crate::recognition::{
    BoardObs, BoardWatcher, Occupant, TrackEvent, Tracker, TrackerConfig, WatchOutput,
    WatcherConfig,
};
use crate::service::camera_task::{picture, OVERLAY_EVERY_MS};
use crate::service::camera_watch::CameraWatch;
use crate::service::core::CameraStatus;
use crate::sim::world::World;
use crate::sim::{Camera, CameraSpec, RenderOptions, Renderer};

/// A frame of the simulated world as the robot's camera side gets it.
pub struct View<'a> {
    pub world: &'a World,
    /// The arm (or a piece it holds) is over the board.
    pub arm_over_board: bool,
    pub t_ms: u64,
}

/// The camera side of the robot.
pub trait MoveWatcher {
    /// Feeds one frame; a move, verification or complaint when one is decided.
    fn push(&mut self, view: &View) -> Option<TrackEvent>;
    /// The robot is about to play `mv`.
    fn expect_robot_move(&mut self, mv: Move);
    /// The game position changed outside the camera (new game, resume, a
    /// person's correction).
    fn set_position(&mut self, pos: Chess);
    /// What each square shows, when the board can be read (nothing over it).
    fn read_squares(&mut self, view: &View) -> Option<[Occupant; 64]>;
    /// Camera frames looked at, and how many of them vision could not read.
    fn frames(&self) -> (u64, u64) {
        (0, 0)
    }
    /// What the camera side showed last, and a new picture for the page
    /// when one is due (a real camera side only).
    fn camera(&mut self) -> Option<(CameraStatus, Option<Vec<u8>>)> {
        None
    }
}

/// Ground truth as observations, through the real [`Tracker`].
pub struct TruthWatcher {
    tracker: Tracker,
}

impl TruthWatcher {
    pub fn new(pos: Chess, cfg: TrackerConfig) -> TruthWatcher {
        TruthWatcher {
            tracker: Tracker::new(pos, cfg),
        }
    }

    fn busy(view: &View) -> bool {
        view.world.hand.is_some() || view.arm_over_board
    }
}

/// The pieces standing on the board as a shakmaty board.
pub fn standing(world: &World) -> Board {
    let mut b = Board::empty();
    for (i, p) in world.occupancy().iter().enumerate() {
        if let Some(p) = p {
            b.set_piece_at(shakmaty::Square::new(i as u32), *p);
        }
    }
    b
}

impl MoveWatcher for TruthWatcher {
    fn push(&mut self, view: &View) -> Option<TrackEvent> {
        let busy = Self::busy(view);
        let obs = BoardObs::of_board(&standing(view.world));
        self.tracker.push(view.t_ms, &obs, busy)
    }

    fn expect_robot_move(&mut self, mv: Move) {
        self.tracker.expect_robot_move(mv);
    }

    fn set_position(&mut self, pos: Chess) {
        self.tracker.set_position(pos);
    }

    fn read_squares(&mut self, view: &View) -> Option<[Occupant; 64]> {
        if Self::busy(view) {
            return None;
        }
        let b = standing(view.world);
        Some(std::array::from_fn(|i| {
            Occupant::of(&b, shakmaty::Square::new(i as u32))
        }))
    }
}

/// Whether the squares show `board` (colours only, as a camera sees it).
pub fn shows(squares: &[Occupant; 64], board: &Board) -> bool {
    shakmaty::Square::ALL
        .iter()
        .all(|&sq| squares[usize::from(sq)] == Occupant::of(board, sq))
}

/// The robot's real camera side: each frame of the world is rendered from
/// the simulated camera and read by vision through the [`BoardWatcher`].
pub struct VisionWatcher {
    watcher: BoardWatcher,
    /// Make pictures for a page (live view); off headless.
    pictures: bool,
    next_picture_ms: u64,
    last: Option<(CameraStatus, Option<Vec<u8>>)>,
    renderer: Renderer,
    options: RenderOptions,
    /// Frames vision could not read (board not found, unusable, errors).
    pub unread_frames: u64,
    pub frames: u64,
}

impl VisionWatcher {
    /// A camera of `spec` looking at `world`'s board, frames of `width` x `height`.
    pub fn new(
        pos: Chess,
        world: &World,
        spec: CameraSpec,
        width: u32,
        height: u32,
        options: RenderOptions,
        tracker: TrackerConfig,
    ) -> Result<VisionWatcher, crate::sim::SimError> {
        let camera = Camera::for_spec(
            spec,
            width,
            height,
            world.board.centre(),
            &world.board.view_points(),
        )?;
        Ok(VisionWatcher {
            watcher: BoardWatcher::new(
                pos,
                WatcherConfig {
                    tracker,
                    ..WatcherConfig::default()
                },
            ),
            renderer: Renderer::new(camera),
            options,
            unread_frames: 0,
            frames: 0,
            pictures: false,
            next_picture_ms: 0,
            last: None,
        })
    }

    /// Makes pictures with the grid drawn for a page watching the game.
    pub fn with_pictures(mut self) -> VisionWatcher {
        self.pictures = true;
        self
    }

    fn look(&mut self, view: &View) -> Option<WatchOutput> {
        self.frames += 1;
        let frame = match self.renderer.render(view.world, &self.options) {
            Ok(f) => f,
            Err(e) => {
                tracing::warn!("render: {e}");
                self.unread_frames += 1;
                return None;
            }
        };
        let image = rgb_from_sim(frame.image);
        match self.watcher.push(&image, view.t_ms) {
            Ok(out) => {
                if !out.usable() {
                    self.unread_frames += 1;
                }
                let status = CameraWatch::status_of(&out);
                let jpeg = (self.pictures && view.t_ms >= self.next_picture_ms)
                    .then(|| {
                        self.next_picture_ms = view.t_ms + OVERLAY_EVERY_MS;
                        picture(&image, &out).ok()
                    })
                    .flatten();
                self.last = Some((status, jpeg));
                Some(out)
            }
            Err(e) => {
                tracing::warn!("vision: {e}");
                self.unread_frames += 1;
                None
            }
        }
    }
}

impl MoveWatcher for VisionWatcher {
    fn frames(&self) -> (u64, u64) {
        (self.frames, self.unread_frames)
    }

    fn camera(&mut self) -> Option<(CameraStatus, Option<Vec<u8>>)> {
        self.last.take()
    }

    fn push(&mut self, view: &View) -> Option<TrackEvent> {
        self.look(view)?.event
    }

    fn expect_robot_move(&mut self, mv: Move) {
        if let Err(e) = self.watcher.expect_robot_move(mv) {
            tracing::warn!("watcher refused the robot's move: {e}");
        }
    }

    fn set_position(&mut self, pos: Chess) {
        self.watcher.set_position(pos);
    }

    fn read_squares(&mut self, view: &View) -> Option<[Occupant; 64]> {
        let out = self.look(view)?;
        if out.busy || !out.usable() || !out.covered.is_empty() {
            return None;
        }
        let reading = out.reading?;
        let obs = board_obs(&reading, &[false; 64]);
        Some(std::array::from_fn(|i| obs.squares[i].best().0))
    }
}
