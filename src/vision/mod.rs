//! Vision: where the board is in a camera frame and what stands on each square.
//!
//! Pure algorithms on plain buffers ([`image::RgbImage`]); OpenCV is used
//! only by the thin adapters in [`io`] (decode/encode, drawing) and by
//! camera calibration.
//!
//! - [`locate`]: board localization from scratch (X-corners + lattice fit).
//! - [`squares`]: per-square empty / white / black probabilities,
//!   uncalibrated or taught by a labelled reference photo.
//! - [`orientation`]: which corner is a1.
//! - [`motion`]: hand-over-board and scene-settled detection for video.

pub mod bench;
pub mod calibrate;
pub mod eval;
pub mod eval_sim;
pub mod grid;
pub mod homography;
pub mod image;
pub mod io;
pub mod learned;
pub mod locate;
pub mod motion;
pub mod orientation;
pub mod overlay;
pub mod pipeline;

pub mod squares;
pub mod viewpoint;
pub mod xcorners;

use serde::{Deserialize, Serialize};

pub use locate::{locate_board, BoardLocation};
pub use orientation::{Orientation, Side};
pub use squares::{Reading, SquareState};

/// What went wrong while reading a frame.
#[derive(Debug, thiserror::Error)]
pub enum VisionError {
    /// The frame cannot show a board at all (too dark, no contrast, empty).
    #[error("unusable frame: {0}")]
    Unusable(String),
    /// The frame is fine but no chessboard was found in it.
    #[error("no board found: {0}")]
    BoardNotFound(String),
    /// Bad input given by the caller (FEN, option value, file).
    #[error("{0}")]
    Input(String),
    /// An OpenCV call failed (decode, encode, calibration).
    #[error("OpenCV: {0}")]
    OpenCv(String),
}

impl From<opencv::Error> for VisionError {
    fn from(e: opencv::Error) -> Self {
        VisionError::OpenCv(e.to_string())
    }
}

/// `[vision]` configuration.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct VisionConfig {
    /// Where White sits in the camera image: `auto`, `bottom`, `top`, `left`, `right`.
    pub white_at: String,
    /// Directory with the camera/board calibration files.
    pub calibration_dir: std::path::PathBuf,
    /// Fraction of a square's area that must change for it to count as covered.
    pub motion_threshold: f32,
    /// Frames the board must stay still before the scene counts as settled.
    pub settle_frames: u32,
}

impl Default for VisionConfig {
    fn default() -> Self {
        VisionConfig {
            white_at: "auto".into(),
            calibration_dir: "calibration".into(),
            motion_threshold: motion::DEFAULT_COVER_FRACTION,
            settle_frames: motion::DEFAULT_SETTLE_FRAMES,
        }
    }
}

impl VisionConfig {
    /// Checks values the types do not constrain; the message names the key.
    pub fn validate(&self) -> Result<(), String> {
        if self.white_at != "auto" && self.white_at.parse::<Side>().is_err() {
            return Err(format!(
                "vision.white_at = {:?}: must be auto, bottom, top, left or right",
                self.white_at
            ));
        }
        if !(0.0..=1.0).contains(&self.motion_threshold) || self.motion_threshold == 0.0 {
            return Err(format!(
                "vision.motion_threshold = {}: must be in (0, 1]",
                self.motion_threshold
            ));
        }
        if self.settle_frames == 0 {
            return Err("vision.settle_frames = 0: must be at least 1".into());
        }
        Ok(())
    }
}

/// What a square holds, as far as the camera can tell.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Occupant {
    Empty,
    White,
    Black,
}

impl Occupant {
    pub fn letter(self) -> char {
        match self {
            Occupant::Empty => '.',
            Occupant::White => 'W',
            Occupant::Black => 'B',
        }
    }
}

/// Occupancy of all 64 squares, indexed a1 = 0, b1 = 1, ..., h8 = 63.
pub type Occupancy = [Occupant; 64];

/// Name of square index `i` (a1 = 0 ... h8 = 63).
pub fn square_name(i: usize) -> String {
    let file = (b'a' + (i % 8) as u8) as char;
    let rank = (b'1' + (i / 8) as u8) as char;
    format!("{file}{rank}")
}

/// The occupancy of a board.
pub fn occupancy_of(board: &shakmaty::Board) -> Occupancy {
    std::array::from_fn(|i| match board.color_at(shakmaty::Square::new(i as u32)) {
        None => Occupant::Empty,
        Some(shakmaty::Color::White) => Occupant::White,
        Some(shakmaty::Color::Black) => Occupant::Black,
    })
}

/// Occupancy from the piece-placement part of a FEN (rank 8 first).
pub fn occupancy_from_fen(fen: &str) -> Result<Occupancy, VisionError> {
    let board = fen.split_whitespace().next().unwrap_or("");
    let ranks: Vec<&str> = board.split('/').collect();
    if ranks.len() != 8 {
        return Err(VisionError::Input(format!(
            "FEN board {board:?}: expected 8 ranks separated by '/', found {}",
            ranks.len()
        )));
    }
    let mut occ = [Occupant::Empty; 64];
    for (k, rank_text) in ranks.iter().enumerate() {
        let rank = 7 - k;
        let mut file = 0usize;
        for ch in rank_text.chars() {
            if let Some(d) = ch.to_digit(10) {
                if d == 0 || d > 8 {
                    return Err(VisionError::Input(format!(
                        "FEN board {board:?}: bad digit {ch}"
                    )));
                }
                file += d as usize;
            } else if "PNBRQK".contains(ch) || "pnbrqk".contains(ch) {
                if file >= 8 {
                    return Err(VisionError::Input(format!(
                        "FEN board {board:?}: rank {} has more than 8 squares",
                        rank + 1
                    )));
                }
                occ[rank * 8 + file] = if ch.is_ascii_uppercase() {
                    Occupant::White
                } else {
                    Occupant::Black
                };
                file += 1;
            } else {
                return Err(VisionError::Input(format!(
                    "FEN board {board:?}: unexpected character {ch:?}"
                )));
            }
        }
        if file != 8 {
            return Err(VisionError::Input(format!(
                "FEN board {board:?}: rank {} has {file} squares, not 8",
                rank + 1
            )));
        }
    }
    Ok(occ)
}

/// Eight rank strings (rank 8 first) of `W`, `B`, `.`, joined by `/`.
pub fn occupancy_string(occ: &Occupancy) -> String {
    (0..8)
        .rev()
        .map(|rank| {
            (0..8)
                .map(|f| occ[rank * 8 + f].letter())
                .collect::<String>()
        })
        .collect::<Vec<_>>()
        .join("/")
}

/// Parses [`occupancy_string`]'s format: eight ranks (rank 8 first) of
/// eight `W`, `B` or `.` (also `w`, `b`, `-`), separated by `/`.
pub fn parse_occupancy_string(text: &str) -> Result<Occupancy, VisionError> {
    let ranks: Vec<&str> = text.trim().split('/').collect();
    if ranks.len() != 8 {
        return Err(VisionError::Input(format!(
            "occupancy {text:?}: expected 8 ranks separated by '/', found {}",
            ranks.len()
        )));
    }
    let mut occ = [Occupant::Empty; 64];
    for (k, rank_text) in ranks.iter().enumerate() {
        let rank = 7 - k;
        let squares: Vec<char> = rank_text.chars().collect();
        if squares.len() != 8 {
            return Err(VisionError::Input(format!(
                "occupancy {text:?}: rank {} has {} squares, not 8",
                rank + 1,
                squares.len()
            )));
        }
        for (file, ch) in squares.into_iter().enumerate() {
            occ[rank * 8 + file] = match ch {
                'W' | 'w' => Occupant::White,
                'B' | 'b' => Occupant::Black,
                '.' | '-' => Occupant::Empty,
                other => {
                    return Err(VisionError::Input(format!(
                        "occupancy {text:?}: {other:?} on rank {} (use W, B or .)",
                        rank + 1
                    )))
                }
            };
        }
    }
    Ok(occ)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn occupancy_strings_round_trip_and_bad_ones_say_why() {
        let occ = occupancy_from_fen("rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR").unwrap();
        let text = occupancy_string(&occ);
        assert_eq!(parse_occupancy_string(&text).unwrap(), occ);
        assert_eq!(&text[36..44], "....W...");
        for (bad, why) in [
            ("WWWWWWWW", "expected 8 ranks"),
            (
                "BBBBBBBB/BBBBBBBB/8/8/8/8/WWWWWWWW/WWWWWWWW",
                "rank 6 has 1 squares",
            ),
            (
                "BBBBBBBX/BBBBBBBB/......../......../......../......../WWWWWWWW/WWWWWWWW",
                "'X' on rank 8",
            ),
        ] {
            let e = parse_occupancy_string(bad).unwrap_err().to_string();
            assert!(e.contains(why), "{bad}: {e}");
        }
    }

    #[test]
    fn fen_occupancy_round_trip() {
        let occ = occupancy_from_fen("rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR").unwrap();
        assert_eq!(occ[4 + 8 * 3], Occupant::White); // e4
        assert_eq!(occ[4 + 8], Occupant::Empty); // e2
        assert_eq!(occ[63], Occupant::Black); // h8
        assert_eq!(
            occupancy_string(&occ),
            "BBBBBBBB/BBBBBBBB/......../......../....W.../......../WWWW.WWW/WWWWWWWW"
        );
        assert_eq!(square_name(0), "a1");
        assert_eq!(square_name(63), "h8");
    }

    #[test]
    fn bad_fen_is_explained() {
        assert!(occupancy_from_fen("8/8/8")
            .unwrap_err()
            .to_string()
            .contains("8 ranks"));
        assert!(occupancy_from_fen("9/8/8/8/8/8/8/8").is_err());
        assert!(occupancy_from_fen("ppppppppp/8/8/8/8/8/8/8").is_err());
        assert!(occupancy_from_fen("x7/8/8/8/8/8/8/8").is_err());
    }

    #[test]
    fn config_validation_names_the_key() {
        let c = VisionConfig {
            white_at: "north".into(),
            ..VisionConfig::default()
        };
        assert!(c.validate().unwrap_err().contains("vision.white_at"));
        assert!(VisionConfig::default().validate().is_ok());
    }
}
