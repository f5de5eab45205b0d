//! Hand/arm-over-board and scene-settled detection for a fixed camera.
//!
//! Each frame is reduced to a small luminance signature per square (8x8
//! samples over the inner 80 % of each cell of the known grid). A square is
//! *moving* when its signature differs from the previous frame's, and
//! *changed* when it differs from the last settled frame's. The scene is
//! *settled* after `settle_frames` frames in a row without moving squares;
//! while not settled, every changed or moving square counts as covered and
//! must not be classified as if it were visible.

use super::image::RgbImage;
use super::locate::BoardLocation;

/// Default fraction of a square's samples that must differ for the square to
/// count as changed (a fifth of the square: a finger tip, not a shadow edge).
pub const DEFAULT_COVER_FRACTION: f32 = 0.2;
/// Default number of consecutive still frames before the scene is settled
/// (a quarter second at 20 fps: hands do not hold still that long mid-move).
pub const DEFAULT_SETTLE_FRAMES: u32 = 5;
/// A sample differs when its luminance changed by more than this (0..255):
/// well above sensor noise and compression artefacts of a webcam (~5-10).
pub const PIXEL_DIFF: f32 = 30.0;
/// Samples per cell side.
const SIG: usize = 8;

/// Per-square luminance signature of one frame (grid order `c + 8 r`).
#[derive(Debug, Clone, PartialEq)]
pub struct Signature {
    cells: Vec<[f32; SIG * SIG]>,
}

/// Computes the signature of a frame for a located board.
pub fn signature(img: &RgbImage, loc: &BoardLocation) -> Signature {
    let mut cells = Vec::with_capacity(64);
    for r in 0..8 {
        for c in 0..8 {
            let mut s = [0f32; SIG * SIG];
            for l in 0..SIG {
                for k in 0..SIG {
                    let g = [
                        c as f64 + 0.1 + 0.8 * (k as f64 + 0.5) / SIG as f64,
                        r as f64 + 0.1 + 0.8 * (l as f64 + 0.5) / SIG as f64,
                    ];
                    s[l * SIG + k] = loc
                        .to_image(g)
                        .and_then(|p| img.sample(p[0], p[1]))
                        .map(super::image::luma)
                        .unwrap_or(0.0);
                }
            }
            cells.push(s);
        }
    }
    Signature { cells }
}

/// Which cells differ between two signatures.
pub fn differing_cells(a: &Signature, b: &Signature, fraction: f32) -> [bool; 64] {
    let mut out = [false; 64];
    for (i, o) in out.iter_mut().enumerate() {
        let n = a.cells[i]
            .iter()
            .zip(&b.cells[i])
            .filter(|(x, y)| (*x - *y).abs() > PIXEL_DIFF)
            .count();
        *o = n as f32 > fraction * (SIG * SIG) as f32;
    }
    out
}

/// The detector's verdict on one frame (cells in grid order).
#[derive(Debug, Clone, PartialEq)]
pub struct MotionState {
    /// Cells that changed since the previous frame.
    pub moving: [bool; 64],
    /// Cells that differ from the last settled frame.
    pub changed: [bool; 64],
    /// The scene has been still for `settle_frames` frames.
    pub settled: bool,
    /// `true` on the frame where the scene becomes settled again after motion.
    pub just_settled: bool,
}

impl MotionState {
    /// Cells to treat as covered (hand, arm, or a piece in flight).
    pub fn covered(&self) -> [bool; 64] {
        let mut c = [false; 64];
        if !self.settled {
            for (i, v) in c.iter_mut().enumerate() {
                *v = self.moving[i] || self.changed[i];
            }
        }
        c
    }

    /// Whether anything (hand, arm) is over the board right now.
    pub fn hand_over_board(&self) -> bool {
        self.covered().iter().any(|c| *c)
    }
}

/// Frame-differencing detector for a fixed camera and a tracked board.
#[derive(Debug, Clone)]
pub struct MotionDetector {
    cover_fraction: f32,
    settle_frames: u32,
    previous: Option<Signature>,
    settled_sig: Option<Signature>,
    still_frames: u32,
    was_settled: bool,
}

impl MotionDetector {
    pub fn new(cover_fraction: f32, settle_frames: u32) -> MotionDetector {
        MotionDetector {
            cover_fraction,
            settle_frames: settle_frames.max(1),
            previous: None,
            settled_sig: None,
            still_frames: 0,
            was_settled: false,
        }
    }

    /// Feeds one frame's signature.
    pub fn update(&mut self, sig: Signature) -> MotionState {
        let moving = match &self.previous {
            Some(p) => differing_cells(p, &sig, self.cover_fraction),
            None => [false; 64],
        };
        if moving.iter().any(|m| *m) {
            self.still_frames = 0;
        } else {
            self.still_frames += 1;
        }
        let settled = self.still_frames >= self.settle_frames;
        let just_settled = settled && !self.was_settled;
        if just_settled {
            self.settled_sig = Some(sig.clone());
        }
        let changed = match &self.settled_sig {
            Some(s) => differing_cells(s, &sig, self.cover_fraction),
            None => [false; 64],
        };
        self.was_settled = settled;
        self.previous = Some(sig);
        MotionState {
            moving,
            changed,
            settled,
            just_settled,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn board_image(hand_cols: usize) -> (RgbImage, BoardLocation) {
        let mut img = RgbImage::new(160, 160);
        for y in 0..160 {
            for x in 0..160 {
                let light = ((x / 20) + (y / 20)) % 2 == 0;
                let v = if x < hand_cols * 20 {
                    150
                } else if light {
                    220
                } else {
                    60
                };
                img.put(x, y, [v, v, v]);
            }
        }
        let loc = BoardLocation::from_corners(
            [[0.0, 0.0], [160.0, 0.0], [160.0, 160.0], [0.0, 160.0]],
            (160, 160),
        )
        .unwrap();
        (img, loc)
    }

    #[test]
    fn a_hand_sweeping_in_covers_its_cells_then_the_scene_settles() {
        let mut det = MotionDetector::new(DEFAULT_COVER_FRACTION, 3);
        let (clear, loc) = board_image(0);
        for _ in 0..4 {
            det.update(signature(&clear, &loc));
        }
        let s = det.update(signature(&clear, &loc));
        assert!(s.settled && !s.hand_over_board());
        let (hand, _) = board_image(2);
        let s = det.update(signature(&hand, &loc));
        assert!(!s.settled);
        let covered = s.covered();
        for r in 0..8 {
            assert!(covered[8 * r] && covered[1 + 8 * r]);
            assert!(!covered[3 + 8 * r]);
        }
        // Hand withdrawn: still covered until settled again, then clear.
        let mut last = det.update(signature(&clear, &loc));
        for _ in 0..3 {
            last = det.update(signature(&clear, &loc));
        }
        assert!(last.settled && last.just_settled && !last.hand_over_board());
    }
}
