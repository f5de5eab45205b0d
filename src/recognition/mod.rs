//! Move recognition: from what the camera sees to legal moves.
//!
//! - [`scoring`]: every legal move (and "nothing changed") scored against
//!   per-square observations; a short search when track was lost.
//! - [`tracker`]: when a move is complete, over a stream of frames.
//! - [`watcher`]: camera frames in, game events out (vision + motion +
//!   tracker).
//!
//! Pure logic: observations come in, decisions go out.

pub mod bench;
pub mod change;
pub mod photo;
pub mod scoring;
pub mod tracker;
pub mod watcher;

pub use scoring::{score, BoardObs, Disagreement, Occupant, SquareObs, Verdict};
pub use tracker::{TrackEvent, Tracker, TrackerConfig};
pub use watcher::{BoardWatcher, FrameUse, WatchOutput, WatcherConfig};

/// What went wrong in recognition.
#[derive(Debug, thiserror::Error)]
pub enum RecognitionError {
    /// Bad input from the caller (time going backwards, an illegal move).
    #[error("{0}")]
    Input(String),
    /// Vision failed for a reason other than an unusable frame.
    #[error(transparent)]
    Vision(#[from] crate::vision::VisionError),
}
