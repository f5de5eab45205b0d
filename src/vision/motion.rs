//! Hand/arm-over-board and scene-settled detection for video frames.

/// Default fraction of a square's samples that must differ from the last
/// settled frame for the square to count as covered.
pub const DEFAULT_COVER_FRACTION: f32 = 0.2;
/// Default number of consecutive still frames before the scene is settled.
pub const DEFAULT_SETTLE_FRAMES: u32 = 5;
