//! One frame in, board reading out: localization (or a tracked location),
//! square features, classifier, orientation.

use serde::Serialize;

use super::homography::Pt;
use super::image::RgbImage;
use super::locate::{self, BoardLocation};
use super::orientation::{self, Orientation, Side};
use super::squares::{self, CalibratedModel, CellFeatures, Reading};
use super::{occupancy_string, square_name, Occupancy, VisionError};

/// A labelled reference photo of the same board (calibrated regime).
pub struct Reference {
    pub image: RgbImage,
    pub occupancy: Occupancy,
    /// Where White is in the reference photo (`None`: decided on it).
    pub white_at: Option<Side>,
}

/// What the caller knows in advance.
#[derive(Default)]
pub struct ReadOptions {
    pub white_at: Option<Side>,
    /// A location from calibration or the previous frame; checked and used
    /// instead of a full search when the board is still there.
    pub tracked: Option<BoardLocation>,
    pub model: Option<CalibratedModel>,
}

/// Everything read from one frame.
#[derive(Debug, Clone, Serialize)]
pub struct FrameReading {
    /// Outer corners of a8, h8, h1, a1 in image pixels.
    pub corners: [Pt; 4],
    pub orientation: Orientation,
    pub reading: Reading,
    #[serde(skip)]
    pub location: BoardLocation,
    /// `true` when the tracked location was reused.
    pub tracked: bool,
    /// By square (a1 = 0): how each looks against the calibrated model's
    /// reference ([`squares::CalibratedModel::look_changes`]); `None`
    /// when read without a model.
    #[serde(skip)]
    pub looks: Option<[squares::LookChange; 64]>,
}

/// Minimum light/dark alternation (fraction of the full-board value) for a
/// tracked location to be trusted: a bumped board or camera drops it to ~0.
const TRACK_MIN_ALTERNATION: f32 = 0.5;
/// Minimum light/dark luma difference (0..255) for the pattern to count:
/// below it the "board" is a blank or covered surface.
const TRACK_MIN_CONTRAST: f32 = 10.0;

/// Cheap check that the squares are still where `loc` says: the rim
/// brightness of the 64 cells must still alternate light/dark (the share of
/// cells on the right side of the light/dark midpoint, rescaled so 0 is
/// chance and 1 is every cell). With the orientation known, the light
/// cells must also be the light squares (dark-a1 rule): a board or camera
/// bumped by one square keeps the alternation but swaps the colours, and
/// must be found again.
pub fn still_tracks(img: &RgbImage, loc: &BoardLocation, white_at: Option<Side>) -> bool {
    let mut lumas = Vec::with_capacity(64);
    for r in 0..8 {
        for c in 0..8 {
            // Median of 8 rim samples (sampled straight from the colour image).
            let mut v = Vec::with_capacity(8);
            for (a, b) in [
                (0.15, 0.15),
                (0.5, 0.15),
                (0.85, 0.15),
                (0.15, 0.5),
                (0.85, 0.5),
                (0.15, 0.85),
                (0.5, 0.85),
                (0.85, 0.85),
            ] {
                let Some(p) = loc.to_image([c as f64 + a, r as f64 + b]) else {
                    return false;
                };
                let Some(rgb) = img.sample(p[0], p[1]) else {
                    return false;
                };
                v.push(super::image::luma(rgb));
            }
            v.sort_by(|a, b| a.total_cmp(b));
            lumas.push(((c + r) % 2 == 0, (v[3] + v[4]) / 2.0));
        }
    }
    let mean = |even: bool| {
        let v: Vec<f32> = lumas.iter().filter(|x| x.0 == even).map(|x| x.1).collect();
        v.iter().sum::<f32>() / v.len().max(1) as f32
    };
    let (me, mo) = (mean(true), mean(false));
    let mid = (me + mo) / 2.0;
    let agree = lumas
        .iter()
        .filter(|(even, l)| (*l > mid) == (if *even { me > mo } else { mo > me }))
        .count();
    // Cell (0, 0) is a8 or h1 (light squares) when White is at the bottom
    // or top, a1 or h8 (dark) when at the left or right.
    let parity_ok =
        white_at.is_none_or(|side| (me > mo) == matches!(side, Side::Bottom | Side::Top));
    parity_ok
        && 2.0 * agree as f32 / 64.0 - 1.0 >= TRACK_MIN_ALTERNATION
        && (me - mo).abs() > TRACK_MIN_CONTRAST
}

/// Reads one frame.
pub fn read_frame(img: &RgbImage, opts: &ReadOptions) -> Result<FrameReading, VisionError> {
    locate::check_exposure(img)?;
    let (location, tracked) = match &opts.tracked {
        Some(loc)
            if loc.image_size == (img.width, img.height)
                && still_tracks(img, loc, opts.white_at) =>
        {
            (loc.clone(), true)
        }
        _ => (locate::locate_board(img)?, false),
    };
    let (cells, _) = squares::cell_features(img, &location)?;
    let probs = match &opts.model {
        Some(m) => m.classify(&cells),
        None => squares::classify_uncalibrated(&cells),
    };
    let light: Vec<bool> = cells.iter().map(|c| c.light).collect();
    let orientation = orientation::decide(&probs, &light, opts.white_at);
    let mut reading = squares::reading_from_cells(&probs, orientation.white_at);
    squares::mark_hidden(&mut reading, &cells, orientation.white_at);
    let looks = opts
        .model
        .as_ref()
        .and_then(|m| squares::by_square(&m.look_changes(&cells), orientation.white_at));
    let idx = orientation.white_at.corner_indices();
    let corners = idx.map(|k| location.corners[k]);
    Ok(FrameReading {
        corners,
        orientation,
        reading,
        location,
        tracked,
        looks,
    })
}

/// Features of a reference photo and the model taught by it.
pub fn model_from_reference(reference: &Reference) -> Result<CalibratedModel, VisionError> {
    let loc = locate::locate_board(&reference.image)?;
    let (cells, _): (Vec<CellFeatures>, _) = squares::cell_features(&reference.image, &loc)?;
    let side = match reference.white_at {
        Some(s) => s,
        None => {
            let probs = squares::classify_uncalibrated(&cells);
            let light: Vec<bool> = cells.iter().map(|c| c.light).collect();
            orientation::decide(&probs, &light, None).white_at
        }
    };
    CalibratedModel::fit(
        &cells,
        &squares::cells_from_occupancy(&reference.occupancy, side),
    )
}

/// The JSON document `chessbot vision read` prints.
pub fn to_json(fr: &FrameReading) -> serde_json::Value {
    let mut squares = serde_json::Map::new();
    for (i, s) in fr.reading.squares.iter().enumerate() {
        let state = match s.state {
            super::Occupant::Empty => "empty",
            super::Occupant::White => "white",
            super::Occupant::Black => "black",
        };
        squares.insert(
            square_name(i),
            serde_json::json!({
                "state": state,
                "p_empty": round3(s.p_empty),
                "p_white": round3(s.p_white),
                "p_black": round3(s.p_black),
                "hidden": s.hidden,
            }),
        );
    }
    let names = ["a8", "h8", "h1", "a1"];
    let corners: serde_json::Map<String, serde_json::Value> = names
        .iter()
        .zip(fr.corners.iter())
        .map(|(n, p)| {
            (
                (*n).to_owned(),
                serde_json::json!([round1(p[0]), round1(p[1])]),
            )
        })
        .collect();
    serde_json::json!({
        "corners": corners,
        "orientation": {"white_at": fr.orientation.white_at.to_string(), "source": fr.orientation.source},
        "squares": squares,
        "occupancy": occupancy_string(&fr.reading.occupancy()),
        "tracked": fr.tracked,
        "support": fr.location.support,
    })
}

fn round3(v: f32) -> f64 {
    (v as f64 * 1000.0).round() / 1000.0
}

fn round1(v: f64) -> f64 {
    (v * 10.0).round() / 10.0
}
