//! What the robot's camera side tells the game loop: moves seen, the
//! robot's own move verified, and what the settled board shows.
//!
//! [`TruthWatcher`] is the stand-in used until the vision-based watcher is
//! wired in: it reads the simulated world's ground truth (which piece
//! colour stands on each square; nothing while a hand, the arm or a lifted
//! piece is over the board) and runs the real move tracker on it.

use shakmaty::{Board, Chess, Move};

use crate::recognition::{BoardObs, Occupant, TrackEvent, Tracker, TrackerConfig};
use crate::sim::world::World;

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
