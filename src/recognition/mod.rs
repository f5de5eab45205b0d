//! Move recognition: from what the camera sees to legal moves.
//!
//! - [`scoring`]: every legal move (and "nothing changed") scored against
//!   per-square observations; a short search when track was lost.
//! - [`tracker`]: when a move is complete, over a stream of frames.
//!
//! Pure logic: observations come in, decisions go out.

pub mod scoring;
pub mod tracker;

pub use scoring::{score, BoardObs, Disagreement, Occupant, SquareObs, Verdict};
pub use tracker::{TrackEvent, Tracker, TrackerConfig};
