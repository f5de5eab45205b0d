//! Hand/arm-over-board and scene-settled detection for a fixed camera.
//!
//! Each frame is reduced to a small luminance signature per square (8x8
//! samples over the inner 80 % of each cell of the known grid: its floor).
//! A few samples up each cell's vertical axis, where a piece standing on it
//! and a hand resting on that piece show at oblique views, are kept beside
//! them ([`differing_axes`]) but do not count as motion. A square is
//! *moving* when its signature differs from the previous frame's, and
//! *changed* when it differs from the last settled frame's. The scene is
//! *settled* after `settle_frames` frames in a row without moving squares;
//! while not settled, every changed or moving square counts as covered and
//! must not be classified as if it were visible.
//!
//! A hand or arm reaching over the board also crosses its *rim*, strips
//! just outside the playing area, and moves there while the hand moves
//! over the board: a hand moving slowly over a few squares, its samples
//! there all skin, can change too few of them to count, while the arm
//! sweeps across the rim ([`rim_differs`]). Not part of the detector's
//! verdict: at low views hands withdrawing behind the board cross the far
//! rim long after they let go (standard recognition bench, seed 1: two
//! quick replies merged and a robot game stalled when it counted); the
//! tracker uses it to hold lost-track searches only.

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
/// Heights (square sides) of the samples up each cell's vertical axis: from
/// a pawn's middle to a little over a king's top (1.67, see
/// `vision::squares`), where the fingertips of a hand resting on a piece
/// are. At a low view these show what the board plane does not: on the
/// standard recognition bench a hand still resting on a far queen hid
/// nothing of the board plane, and the frame it was on became the move's
/// reference (see `recognition::watcher`). Not higher: above the far rank
/// the axes show the room behind the board, where a hand withdrawing to
/// its rest kept them moving (with samples up to 2.5 squares, the frames
/// after that queen's hand had gone were never still).
const AXIS_HEIGHTS: [f64; 6] = [0.4, 0.7, 1.0, 1.3, 1.6, 1.9];
/// Sideways offsets (square sides) of the axis samples: within a piece's
/// silhouette (a king's base is about half a square wide).
const AXIS_OFFSETS: [f64; 3] = [-0.2, 0.0, 0.2];
const AXIS: usize = AXIS_HEIGHTS.len() * AXIS_OFFSETS.len();

/// The rim: strips from this far (square sides) outside the playing
/// area's edge ...
const RIM_NEAR: f64 = 0.1;
/// ... to this far: within the border of the boards rendered and of common
/// real boards (0.3-0.6 square), short of where captured pieces are put
/// down beside the board (the simulator's graveyard is 40 mm beyond the
/// border).
const RIM_FAR: f64 = 0.45;
/// Rim samples per rim cell (8 cells along each edge): along the edge,
/// and across the strip.
const RIM_ALONG: usize = 8;
const RIM_ACROSS: usize = 3;

/// Luminance samples of one cell: its floor, then up its axis.
#[derive(Debug, Clone, PartialEq)]
struct CellSig {
    floor: [f32; SIG * SIG],
    axis: Option<[f32; AXIS]>,
}

/// Per-square luminance signature of one frame (grid order `c + 8 r`).
#[derive(Debug, Clone, PartialEq)]
pub struct Signature {
    cells: Vec<CellSig>,
    /// Rim cells: 8 along each edge (y = 0, x = 8, y = 8, x = 0).
    rim: Vec<[f32; RIM_ALONG * RIM_ACROSS]>,
}

/// Computes the signature of a frame for a located board. The axis samples
/// need the camera's viewpoint; where it cannot be estimated from the
/// board's homography, only the floor is sampled.
pub fn signature(img: &RgbImage, loc: &BoardLocation) -> Signature {
    let view = super::viewpoint::estimate(loc);
    let luma_at = |p: Option<[f64; 2]>| {
        p.and_then(|p| img.sample(p[0], p[1]))
            .map(super::image::luma)
            .unwrap_or(0.0)
    };
    let mut cells = Vec::with_capacity(64);
    for r in 0..8 {
        for c in 0..8 {
            let mut floor = [0f32; SIG * SIG];
            for l in 0..SIG {
                for k in 0..SIG {
                    let g = [
                        c as f64 + 0.1 + 0.8 * (k as f64 + 0.5) / SIG as f64,
                        r as f64 + 0.1 + 0.8 * (l as f64 + 0.5) / SIG as f64,
                    ];
                    floor[l * SIG + k] = luma_at(loc.to_image(g));
                }
            }
            let axis = view.as_ref().map(|v| {
                let mut axis = [0f32; AXIS];
                let (x, y) = (c as f64 + 0.5, r as f64 + 0.5);
                // Sideways in the image: across the line of sight.
                let (dx, dy) = (v.centre[0] - x, v.centre[1] - y);
                let n = dx.hypot(dy).max(1e-9);
                for (i, &z) in AXIS_HEIGHTS.iter().enumerate() {
                    for (j, &o) in AXIS_OFFSETS.iter().enumerate() {
                        let (sx, sy) = (x - dy / n * o, y + dx / n * o);
                        axis[i * AXIS_OFFSETS.len() + j] = luma_at(v.project(sx, sy, z));
                    }
                }
                axis
            });
            cells.push(CellSig { floor, axis });
        }
    }
    let mut rim = Vec::with_capacity(32);
    for edge in 0..4 {
        for i in 0..8 {
            let mut cell = [0f32; RIM_ALONG * RIM_ACROSS];
            for a in 0..RIM_ALONG {
                for b in 0..RIM_ACROSS {
                    let along = i as f64 + (a as f64 + 0.5) / RIM_ALONG as f64;
                    let out =
                        RIM_NEAR + (RIM_FAR - RIM_NEAR) * (b as f64 + 0.5) / RIM_ACROSS as f64;
                    let g = match edge {
                        0 => [along, -out],
                        1 => [8.0 + out, along],
                        2 => [along, 8.0 + out],
                        _ => [-out, along],
                    };
                    cell[a * RIM_ACROSS + b] = luma_at(loc.to_image(g));
                }
            }
            rim.push(cell);
        }
    }
    Signature { cells, rim }
}

/// Whether some rim cell differs between two signatures (by more than
/// `fraction` of its samples): something moved across the board's edge.
pub fn rim_differs(a: &Signature, b: &Signature, fraction: f32) -> bool {
    rim_edges_differ(a, b, fraction).iter().any(|d| *d)
}

/// By edge of the grid (y = 0, x = 8, y = 8, x = 0: the order of
/// [`Signature`]'s rim), whether some rim cell along it differs between
/// two signatures: which edges something moved across.
pub fn rim_edges_differ(a: &Signature, b: &Signature, fraction: f32) -> [bool; 4] {
    let mut edges = [false; 4];
    for (i, (x, y)) in a.rim.iter().zip(&b.rim).enumerate() {
        edges[(i / 8).min(3)] |= differ(x, y, fraction);
    }
    edges
}

/// How many samples of two sample sets differ (by more than `PIXEL_DIFF`).
fn count_differing(a: &[f32], b: &[f32]) -> usize {
    a.iter()
        .zip(b)
        .filter(|(x, y)| (*x - *y).abs() > PIXEL_DIFF)
        .count()
}

/// Whether more than `fraction` of two sample sets differ.
fn differ(a: &[f32], b: &[f32], fraction: f32) -> bool {
    count_differing(a, b) as f32 > fraction * a.len() as f32
}

/// Which cells' floors differ between two signatures: what the motion
/// detector and the covered squares go by.
pub fn differing_cells(a: &Signature, b: &Signature, fraction: f32) -> [bool; 64] {
    let mut out = [false; 64];
    for (o, (x, y)) in out.iter_mut().zip(a.cells.iter().zip(&b.cells)) {
        *o = differ(&x.floor, &y.floor, fraction);
    }
    out
}

/// How many samples (floor and axis, every cell) differ between two
/// signatures: finer than whole cells where something covers part of a
/// cell that differs anyway (a hand on a piece that has just arrived).
pub fn differing_samples(a: &Signature, b: &Signature) -> usize {
    a.cells
        .iter()
        .zip(&b.cells)
        .map(|(x, y)| {
            let axis = match (&x.axis, &y.axis) {
                (Some(p), Some(q)) => count_differing(p, q),
                _ => 0,
            };
            axis + count_differing(&x.floor, &y.floor)
        })
        .sum()
}

/// Which cells' vertical axes differ between two signatures (none where
/// either has no axis samples). Not part of the motion detector's verdict:
/// at low views the axes of the far rank show what stands behind the board,
/// and counting their motion kept hands "over the board" long after they
/// had let go (standard recognition bench, seed 1: median latency 200 ->
/// 233 ms, and a quick reply merged with the move before it).
pub fn differing_axes(a: &Signature, b: &Signature, fraction: f32) -> [bool; 64] {
    let mut out = [false; 64];
    for (o, (x, y)) in out.iter_mut().zip(a.cells.iter().zip(&b.cells)) {
        if let (Some(p), Some(q)) = (&x.axis, &y.axis) {
            *o = differ(p, q, fraction);
        }
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

    /// An arm across the board's edge, its hand over the a-file: moving
    /// along the edge by 0.3 of a square it changes too few samples of any
    /// square to count, but the rim's.
    #[test]
    fn an_arm_moving_across_the_rim_changes_the_rim_where_the_squares_barely_change() {
        let frame = |arm_top: usize| {
            let mut img = RgbImage::new(240, 240);
            for y in 0..240 {
                for x in 0..240 {
                    let on_board = (40..200).contains(&x) && (40..200).contains(&y);
                    let border = (28..212).contains(&x) && (28..212).contains(&y);
                    let v = if x < 50 && (arm_top..arm_top + 20).contains(&y) {
                        150
                    } else if on_board {
                        if ((x - 40) / 20 + (y - 40) / 20) % 2 == 0 {
                            220
                        } else {
                            60
                        }
                    } else if border {
                        200
                    } else {
                        90
                    };
                    img.put(x, y, [v, v, v]);
                }
            }
            img
        };
        let loc = BoardLocation::from_corners(
            [[40.0, 40.0], [200.0, 40.0], [200.0, 200.0], [40.0, 200.0]],
            (240, 240),
        )
        .unwrap();
        let f = DEFAULT_COVER_FRACTION;
        let (a, b) = (signature(&frame(100), &loc), signature(&frame(106), &loc));
        assert!(!differing_cells(&a, &b, f).iter().any(|d| *d));
        assert!(rim_differs(&a, &b, f) && !rim_differs(&a, &a, f));
        // Across the edge it came over (x = 0) only.
        assert_eq!(rim_edges_differ(&a, &b, f), [false, false, false, true]);
        let mut det = MotionDetector::new(f, 3);
        for _ in 0..5 {
            det.update(a.clone());
        }
        // The detector's own verdict goes by the squares alone.
        let s = det.update(b);
        assert!(s.settled && !s.moving.iter().any(|m| *m));
    }

    /// A low view: a hand resting on a piece on the far rank shows above
    /// the board's far edge, up the cell's axis, and nowhere on the floor.
    #[test]
    fn a_hand_above_a_far_piece_differs_up_the_axis_not_on_the_floor() {
        // Grid y = 0 (the far edge) narrow and high in the picture.
        let (loc, view) = crate::vision::viewpoint::oblique_test_view();
        let mut img = RgbImage::new(640, 480);
        for y in 0..480 {
            for x in 0..640 {
                img.put(x, y, [120, 120, 120]);
            }
        }
        let before = signature(&img, &loc);
        assert_eq!(differing_samples(&before, &before), 0);
        let p = view.project(3.5, 0.5, 1.6).unwrap();
        assert!(
            p[1] < 145.0,
            "the axis point {p:?} is not above the far edge"
        );
        for y in 0..480usize {
            for x in 0..640usize {
                if (x as f64 - p[0]).hypot(y as f64 - p[1]) < 14.0 {
                    img.put(x, y, [230, 200, 180]);
                }
            }
        }
        let after = signature(&img, &loc);
        let f = DEFAULT_COVER_FRACTION;
        assert!(!differing_cells(&before, &after, f).iter().any(|d| *d));
        assert!(differing_axes(&before, &after, f)[3]);
        assert!(differing_samples(&before, &after) >= 4);
    }
}
