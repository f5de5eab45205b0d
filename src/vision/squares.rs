//! Per-square state: probabilities of empty / white piece / black piece.
//!
//! Every cell of the located grid is sampled on a regular 16x16 pattern.
//! The *rim* of each cell (outer 3/16 band) shows the square's own colour
//! even when a piece stands on it; the *centre* (middle half) shows the piece
//! if there is one. Colours are measured against the photo's own light and
//! dark square colours (medians of all rims of that parity) and in units of
//! the light/dark contrast, so features mean the same under any lighting.
//!
//! - Uncalibrated: occupancy and piece colour are split by 1-D 2-means on the
//!   photo's 64 cells (self-organising), with fixed floors for boards that
//!   are all empty or all one colour.
//! - Calibrated: a labelled reference photo of the same board fits a
//!   Gaussian naive-Bayes model per (square colour, occupant) class.

use serde::Serialize;

use super::image::{luma, RgbImage};
use super::locate::BoardLocation;
use super::orientation::Side;
use super::viewpoint;
use super::{Occupancy, Occupant, VisionError};

/// Samples per cell side (256 per cell, 16384 per board).
pub const SAMPLES_PER_SIDE: usize = 16;
/// Rim band width in samples (3/16 of a square from its edge).
const RIM: usize = 3;
/// Centre region: samples `CENTRE_LO..CENTRE_HI` (the middle half).
const CENTRE_LO: usize = 4;
const CENTRE_HI: usize = 12;
/// A centre sample deviates from the square colour when its RGB distance
/// exceeds this fraction of the light/dark contrast: half-way between the
/// two square colours is the natural split.
pub const DEVIATION: f32 = 0.5;
/// A centre sample differs from its own square's rim when its RGB distance
/// exceeds this fraction of the light/dark contrast (lower than
/// `DEVIATION`: the rim already absorbs lighting gradients).
pub const LOCAL_DEVIATION: f32 = 0.3;
/// Two neighbouring samples differ (an edge: a piece's outline or shading)
/// above this fraction of the contrast. A pale piece on a pale square
/// differs from it by less than `LOCAL_DEVIATION` over most of its body
/// (of the white pieces the rule missed on 150 renders of seed 3, 30 of 34
/// stood on light squares) but still shows its outline and shaded side.
/// The learned classifier, fitted with and without the two measurements
/// below on 450 renders (seeds 3, 5), read 200 others (seed 1) with 1.30
/// and 1.15 % of cells wrong; thresholds 0.05-0.12 (edges) and 0.1-0.2
/// (fine fraction) read within 0.05 % of each other.
const EDGE_STEP: f32 = 0.08;
/// A finer own-rim deviation than `LOCAL_DEVIATION` (see `EDGE_STEP`).
const FINE_DEVIATION: f32 = 0.15;
/// Contrast floor (luma units): boards with less light/dark contrast than
/// this are measured as if they had this much, so noise is not blown up.
const MIN_CONTRAST: f32 = 12.0;
/// A cell is occupied when more than this fraction of its centre differs
/// from its own rim. Chosen once on the pooled cells of all real sets
/// (empty cells: 95th percentile <= 0.16 except where a neighbour's piece
/// leans in; pieces: median >= 0.41), the same for every board.
pub const OCC_THRESHOLD: f32 = 0.24;
/// Logistic softness of the occupancy decision (fraction units).
const OCC_SOFTNESS: f32 = 0.04;
/// Feature indices.
pub const F_FRAC: usize = 0;
pub const F_LOCAL: usize = 3;
pub const F_FRAC_LOCAL: usize = 4;
pub const F_LUMA_LOCAL: usize = 5;
pub const F_EDGE: usize = 6;
pub const F_FRAC_FINE: usize = 7;
/// Features the calibrated model uses. Not the edge density nor the fine
/// fraction: with them the real calibrated reads improved (green vinyl
/// 98.01 -> 98.38 % with the edges, 98.52 % with both; webcam stills 99.61
/// -> 99.41 %), but the move watcher, which teaches this model on each
/// believed position, lost moves on the standard bench (with the edges:
/// vinyl/angled 18/20 + 2 resynced, wooden/low 6/20 against 20/20 each;
/// with both: vinyl/angled 18/20), and taught by the start position the
/// rendered frames read worse (4.25 -> 4.33 / 4.52 %, more phantoms).
const MODEL_FEATURES: [usize; 3] = [F_FRAC_LOCAL, F_LUMA_LOCAL, F_LOCAL];
/// Piece-colour split on normalised luma (0 = dark square, 1 = light square).
/// A chess position always has pieces of both colours (two kings at least),
/// so the occupied cells are split into two groups by 2-means unless the
/// groups are closer than `COLOUR_MIN_GAP` (then half-way is used).
const COLOUR_SPLIT_DEFAULT: f32 = 0.5;
const COLOUR_MIN_GAP: f32 = 0.1;
const COLOUR_SOFTNESS: f32 = 0.08;
/// Variance floor for the calibrated model's features (feature units²).
const NB_VAR_FLOOR: f32 = 0.03 * 0.03;

/// Pieces nearer the camera are modelled as upright cylinders of this
/// radius (square sides) when masking what they hide: the slim body above
/// the base (a pawn's base is ~0.4 square wide, bodies and heads
/// narrower). Chosen among 0.15-0.3 on pooled rendered frames of all views
/// (100 frames, seed 3) and checked on the real sets; wider cylinders mask
/// more of a cell than a real piece hides.
const OCCLUDER_RADIUS: f64 = 0.18;
/// Staunton heights in square sides: pawn 0.88 ... king 1.67 (king = 95 mm
/// on 57 mm squares); each occluder's height is measured between them.
const PIECE_MIN_HEIGHT: f64 = 0.88;
const PIECE_MAX_HEIGHT: f64 = 1.67;
/// Height assumed when the search finds no end: a bishop's, the middle of a set.
const PIECE_UNKNOWN_HEIGHT: f64 = 1.23;
/// Step of the height search (a tenth of a square: finer than the
/// difference between any two piece types' heights).
const PIECE_HEIGHT_STEP: f64 = 0.1;
/// Only pieces within this many files and ranks are considered as
/// occluders (a king leans about 2.9 squares at a 30° view).
const OCCLUDER_REACH: usize = 3;
/// A masked cell is re-measured only when at least this many centre
/// samples (of 64) and rim samples (of 156) stay visible; with fewer, the
/// unmasked measurement is kept (a fraction over a handful of samples is noise).
const MIN_VISIBLE_CENTRE: usize = 12;
const MIN_VISIBLE_RIM: usize = 24;

/// Number of features per cell.
pub const NF: usize = 8;

/// Measurements of one grid cell.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct CellFeatures {
    /// The square is a light one (from the rim colour and the lattice parity).
    pub light: bool,
    /// Mostly hidden behind a nearer piece, with nothing that shows whether
    /// a piece of its own stands there: the measurement is mostly the
    /// occluder's, so the classifiers say little about this cell.
    pub hidden: bool,
    /// `[deviating fraction, mean deviation, piece luma, centre-vs-rim,
    /// fraction deviating from own rim, luma of those, edge density of the
    /// centre less that of the rim, fraction deviating finely from own rim]`.
    pub f: [f32; NF],
    /// How the camera sees the cell and its surroundings (see
    /// [`cell_context`]); `None` where no viewpoint could be estimated.
    pub ctx: Option<[f32; NCTX]>,
    /// What the image shows up the cell's vertical axis (see
    /// [`axis_profile`]); `None` where no viewpoint could be estimated.
    #[serde(skip)]
    pub profile: Option<[f32; NPROFILE]>,
}

/// The photo's own colour statistics.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct BoardColours {
    pub light: [f32; 3],
    pub dark: [f32; 3],
    pub contrast: f32,
}

/// Per-square result.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct SquareState {
    pub state: Occupant,
    pub p_empty: f32,
    pub p_white: f32,
    pub p_black: f32,
    /// Mostly hidden behind a nearer piece: the probabilities are tempered
    /// towards even, and this square's state is a guess.
    pub hidden: bool,
}

/// The 64 squares (a1 = 0 ... h8 = 63) of one frame.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Reading {
    pub squares: Vec<SquareState>,
}

impl Reading {
    pub fn occupancy(&self) -> Occupancy {
        let mut o = [Occupant::Empty; 64];
        for (i, s) in self.squares.iter().enumerate().take(64) {
            o[i] = s.state;
        }
        o
    }
}

fn median(v: &mut [f32]) -> f32 {
    if v.is_empty() {
        return 0.0;
    }
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

fn dist(a: [f32; 3], b: [f32; 3]) -> f32 {
    ((a[0] - b[0]).powi(2) + (a[1] - b[1]).powi(2) + (a[2] - b[2]).powi(2)).sqrt()
}

/// One sample of a cell: where it is on the board (grid units), whether it
/// belongs to the rim or the centre, and its colour.
#[derive(Debug, Clone, Copy)]
struct Sample {
    g: [f64; 2],
    /// Position in the cell's sample lattice (column, row).
    kl: [u8; 2],
    rim: bool,
    centre: bool,
    rgb: [f32; 3],
}

/// Whether the sample at lattice position (`k`, `l`) of a cell belongs to
/// its rim and to its centre.
fn region_of(k: usize, l: usize) -> (bool, bool) {
    let n = SAMPLES_PER_SIDE;
    let rim = k < RIM || l < RIM || k >= n - RIM || l >= n - RIM;
    let centre = (CENTRE_LO..CENTRE_HI).contains(&k) && (CENTRE_LO..CENTRE_HI).contains(&l);
    (rim, centre)
}

/// Raw samples of one cell.
fn sample_cell(img: &RgbImage, loc: &BoardLocation, c: usize, r: usize) -> Vec<Sample> {
    let n = SAMPLES_PER_SIDE;
    let mut out = Vec::with_capacity(n * n);
    for l in 0..n {
        for k in 0..n {
            let g = [
                c as f64 + (k as f64 + 0.5) / n as f64,
                r as f64 + (l as f64 + 0.5) / n as f64,
            ];
            let Some(p) = loc.image_from_grid.apply(g) else {
                continue;
            };
            let Some(rgb) = img.sample(p[0], p[1]) else {
                continue;
            };
            let (rim, centre) = region_of(k, l);
            out.push(Sample {
                g,
                kl: [k as u8, l as u8],
                rim,
                centre,
                rgb,
            });
        }
    }
    out
}

fn channel_median(px: &[[f32; 3]]) -> [f32; 3] {
    let mut out = [0.0; 3];
    for (ch, o) in out.iter_mut().enumerate() {
        let mut v: Vec<f32> = px.iter().map(|p| p[ch]).collect();
        *o = median(&mut v);
    }
    out
}

/// Features of the 64 cells, indexed `c + 8 r` in the grid frame.
pub fn cell_features(
    img: &RgbImage,
    loc: &BoardLocation,
) -> Result<(Vec<CellFeatures>, BoardColours), VisionError> {
    let mut cells = Vec::with_capacity(64);
    for r in 0..8 {
        for c in 0..8 {
            let s = sample_cell(img, loc, c, r);
            if s.len() < SAMPLES_PER_SIDE * SAMPLES_PER_SIDE / 2 {
                return Err(VisionError::BoardNotFound(format!(
                    "grid cell ({c},{r}) lies mostly outside the image"
                )));
            }
            cells.push(s);
        }
    }
    let rim_median = |s: &Vec<Sample>| {
        let px: Vec<[f32; 3]> = s.iter().filter(|x| x.rim).map(|x| x.rgb).collect();
        channel_median(&px)
    };
    let rims: Vec<[f32; 3]> = cells.iter().map(rim_median).collect();
    let parity_median = |p: usize| {
        let px: Vec<[f32; 3]> = (0..64)
            .filter(|i| (i % 8 + i / 8) % 2 == p)
            .map(|i| rims[i])
            .collect();
        channel_median(&px)
    };
    let (even, odd) = (parity_median(0), parity_median(1));
    let even_light = luma(even) >= luma(odd);
    let (light, dark) = if even_light { (even, odd) } else { (odd, even) };
    let contrast = (luma(light) - luma(dark)).max(MIN_CONTRAST);
    let colours = BoardColours {
        light,
        dark,
        contrast,
    };
    let is_light = |i: usize| (i % 8 + i / 8).is_multiple_of(2) == even_light;
    let mut out: Vec<CellFeatures> = (0..64)
        .map(|i| features_of(&cells[i], is_light(i), &colours))
        .collect();
    // Occlusion by pieces leaning in: cells are decided from the camera's
    // side of the board outward, and samples that a piece on an occupied
    // cell nearer the camera hides are left out of the later cells.
    if let Some(view) = viewpoint::estimate(loc) {
        let centre_of = |i: usize| [(i % 8) as f64 + 0.5, (i / 8) as f64 + 0.5];
        let mut order: Vec<usize> = (0..64).collect();
        order.sort_by(|&a, &b| {
            view.ground_distance(centre_of(a))
                .total_cmp(&view.ground_distance(centre_of(b)))
        });
        // (cell, estimated piece height) of the cells found occupied so far.
        let mut occupied: Vec<(usize, f64)> = Vec::new();
        for &i in &order {
            let near: Vec<([f64; 2], f64)> = occupied
                .iter()
                .filter(|(j, _)| {
                    (j % 8).abs_diff(i % 8) <= OCCLUDER_REACH
                        && (j / 8).abs_diff(i / 8) <= OCCLUDER_REACH
                })
                .map(|&(j, h)| (centre_of(j), h))
                .filter(|(q, h)| {
                    // Only pieces whose sight-line shadow on the board can
                    // reach this cell (half a diagonal from its centre).
                    let reach = view
                        .ground_behind(q[0], q[1], *h)
                        .map_or(f64::INFINITY, |g| (g[0] - q[0]).hypot(g[1] - q[1]));
                    let c = centre_of(i);
                    (c[0] - q[0]).hypot(c[1] - q[1])
                        <= reach + OCCLUDER_RADIUS + std::f64::consts::FRAC_1_SQRT_2
                })
                .collect();
            if !near.is_empty() {
                let visible: Vec<Sample> = cells[i]
                    .iter()
                    .filter(|s| {
                        !near
                            .iter()
                            .any(|(q, h)| view.hidden_by(s.g, *q, OCCLUDER_RADIUS, *h))
                    })
                    .copied()
                    .collect();
                let centre_left = visible.iter().filter(|s| s.centre).count();
                let rim_left = visible.iter().filter(|s| s.rim).count();
                if centre_left < MIN_VISIBLE_CENTRE {
                    if axis_shows_board(img, &view, centre_of(i), &near, &colours, even_light) {
                        // Hidden cell whose own axis, where it clears the
                        // pieces in front, shows the board behind: no piece.
                        out[i].f[F_FRAC] = 0.0;
                        out[i].f[F_FRAC_LOCAL] = 0.0;
                        out[i].f[F_LOCAL] = 0.0;
                    } else {
                        out[i].hidden = true;
                    }
                }
                if centre_left >= MIN_VISIBLE_CENTRE && rim_left >= MIN_VISIBLE_RIM {
                    // Masking removes a neighbour's pixels: it may lower the
                    // evidence for a piece, never raise it (a higher masked
                    // fraction is an artefact of measuring fewer samples).
                    let masked = features_of(&visible, is_light(i), &colours);
                    if masked.f[F_FRAC_LOCAL] < out[i].f[F_FRAC_LOCAL] {
                        out[i] = masked;
                    } else {
                        // The piece's colour is the colour of what the
                        // pieces in front leave visible: a dark pawn
                        // leaning over a light square's rim and centre
                        // makes the light rest look like a white piece.
                        out[i].f[F_LUMA_LOCAL] = masked.f[F_LUMA_LOCAL];
                    }
                }
            }
            if out[i].f[F_FRAC_LOCAL] > OCC_THRESHOLD {
                let h = piece_height(img, &view, centre_of(i), &colours, even_light);
                occupied.push((i, h));
            }
        }
        let ctx: Vec<[f32; NCTX]> = (0..64)
            .map(|i| cell_context(img, &view, i, &cells[i], &out, &colours, even_light))
            .collect();
        for (i, (cell, x)) in out.iter_mut().zip(ctx).enumerate() {
            cell.ctx = Some(x);
            cell.profile = Some(axis_profile(img, &view, i, &colours, even_light));
        }
    }
    Ok((out, colours))
}

/// Whether colour `rgb` is that of the board square under grid point `g`
/// (within `DEVIATION` of the light/dark contrast).
fn shows_board(rgb: [f32; 3], g: [f64; 2], colours: &BoardColours, even_light: bool) -> bool {
    dist(rgb, square_colour_at(g, colours, even_light)) / colours.contrast < DEVIATION
}

/// The unit vector on the board across the line of sight from the camera
/// to grid point `c` (sideways, as the camera sees it).
fn across_sight(view: &viewpoint::Viewpoint, c: [f64; 2]) -> (f64, f64) {
    let (dx, dy) = (view.centre[0] - c[0], view.centre[1] - c[1]);
    let l = dx.hypot(dy).max(1e-9);
    (-dy / l, dx / l)
}

/// Whether grid point `g` lies on the board.
fn on_board(g: [f64; 2]) -> bool {
    (0.0..8.0).contains(&g[0]) && (0.0..8.0).contains(&g[1])
}

/// The colour of the board square under grid point `g`.
fn square_colour_at(g: [f64; 2], colours: &BoardColours, even_light: bool) -> [f32; 3] {
    let even = (g[0] as usize + g[1] as usize).is_multiple_of(2);
    if even == even_light {
        colours.light
    } else {
        colours.dark
    }
}

/// Height (square sides) of the piece standing at grid point `c`: the
/// lowest point of its vertical axis, from a pawn's height up, where the
/// image shows the board square the sight line lands on instead of a piece.
/// Where the sight line leaves the board the search stops there (the
/// height is at least that: such a piece stands at the far edge and hides
/// little of the board); with no end found up to a king's height (a piece
/// or clutter behind it continues the silhouette), a bishop's is assumed.
fn piece_height(
    img: &RgbImage,
    view: &viewpoint::Viewpoint,
    c: [f64; 2],
    colours: &BoardColours,
    even_light: bool,
) -> f64 {
    let mut z = PIECE_MIN_HEIGHT;
    while z < PIECE_MAX_HEIGHT {
        let (Some(p), Some(g)) = (
            view.project(c[0], c[1], z),
            view.ground_behind(c[0], c[1], z),
        ) else {
            return z;
        };
        if !on_board(g) {
            return z;
        }
        let Some(rgb) = img.sample(p[0], p[1]) else {
            return z;
        };
        if shows_board(rgb, g, colours, even_light) {
            return z;
        }
        z += PIECE_HEIGHT_STEP;
    }
    PIECE_UNKNOWN_HEIGHT
}

/// Whether the vertical axis above cell centre `c`, where it is not hidden
/// by the pieces `near` (centre, height) and below any piece's top, shows
/// the board square its sight line lands on (so no piece stands at `c`):
/// at least `AXIS_MIN_POINTS` visible heights, each with the axis and two
/// points beside it matching the board, and none showing something else.
fn axis_shows_board(
    img: &RgbImage,
    view: &viewpoint::Viewpoint,
    c: [f64; 2],
    near: &[([f64; 2], f64)],
    colours: &BoardColours,
    even_light: bool,
) -> bool {
    let (sx, sy) = across_sight(view, c);
    let (mut board, mut other) = (0, 0);
    let mut z = AXIS_LOW;
    while z <= AXIS_HIGH {
        let mut all_board = true;
        let mut seen = true;
        for k in [-AXIS_SIDE, 0.0, AXIS_SIDE] {
            let p = [c[0] + sx * k, c[1] + sy * k];
            if near
                .iter()
                .any(|(q, h)| view.hidden_from(p, z, *q, OCCLUDER_RADIUS, *h))
            {
                seen = false;
                break;
            }
            let (Some(px), Some(g)) = (
                view.project(p[0], p[1], z),
                view.ground_behind(p[0], p[1], z),
            ) else {
                seen = false;
                break;
            };
            if !on_board(g) {
                seen = false;
                break;
            }
            let Some(rgb) = img.sample(px[0], px[1]) else {
                seen = false;
                break;
            };
            if !shows_board(rgb, g, colours, even_light) {
                all_board = false;
            }
        }
        if seen {
            if all_board {
                board += 1;
            } else {
                other += 1;
            }
        }
        z += AXIS_STEP;
    }
    board >= AXIS_MIN_POINTS && other == 0
}

/// Heights (square sides) along a hidden cell's axis that are checked:
/// above the base's flare, below a pawn's top (0.88).
const AXIS_LOW: f64 = 0.2;
const AXIS_HIGH: f64 = 0.8;
const AXIS_STEP: f64 = 0.1;
/// Sideways offset of the two extra points: off-centre placement (up to
/// 0.12 square) must not let a slim piece slip between the samples.
const AXIS_SIDE: f64 = 0.08;
/// Visible heights needed before the axis counts as showing the board.
const AXIS_MIN_POINTS: usize = 2;

/// Features of one cell from (the visible part of) its samples.
fn features_of(samples: &[Sample], is_light: bool, colours: &BoardColours) -> CellFeatures {
    let BoardColours {
        light,
        dark,
        contrast,
    } = *colours;
    let reference = if is_light { light } else { dark };
    let rim_px: Vec<[f32; 3]> = samples.iter().filter(|x| x.rim).map(|x| x.rgb).collect();
    let own_ref = channel_median(&rim_px);
    let centre: Vec<[f32; 3]> = samples.iter().filter(|x| x.centre).map(|x| x.rgb).collect();
    let devs: Vec<f32> = centre
        .iter()
        .map(|p| dist(*p, reference) / contrast)
        .collect();
    let n = devs.len().max(1) as f32;
    let frac = devs.iter().filter(|d| **d > DEVIATION).count() as f32 / n;
    let mean_dev = devs.iter().map(|d| d.min(3.0)).sum::<f32>() / n;
    let mut dev_luma: Vec<f32> = centre
        .iter()
        .zip(&devs)
        .filter(|(_, d)| **d > DEVIATION)
        .map(|(p, _)| (luma(*p) - luma(dark)) / contrast)
        .collect();
    let piece_luma = if dev_luma.is_empty() {
        if is_light {
            1.0
        } else {
            0.0
        }
    } else {
        median(&mut dev_luma)
    };
    let centre_med = channel_median(&centre);
    let local = dist(centre_med, own_ref) / contrast;
    // Local reference: the median of the cell's own rim, which follows
    // lighting gradients across the board; each centre sample's distance
    // from it serves both own-rim fractions.
    let own_devs: Vec<f32> = centre
        .iter()
        .map(|p| dist(*p, own_ref) / contrast)
        .collect();
    let own: Vec<&[f32; 3]> = centre
        .iter()
        .zip(&own_devs)
        .filter(|(_, d)| **d > LOCAL_DEVIATION)
        .map(|(p, _)| p)
        .collect();
    let frac_local = own.len() as f32 / n;
    let mut own_luma: Vec<f32> = own
        .iter()
        .map(|p| (luma(**p) - luma(dark)) / contrast)
        .collect();
    let luma_local = if own_luma.is_empty() {
        (luma(own_ref) - luma(dark)) / contrast
    } else {
        median(&mut own_luma)
    };
    let (centre_edges, rim_edges) = edge_densities(samples, contrast);
    let edge = centre_edges - rim_edges;
    let frac_fine = own_devs.iter().filter(|d| **d > FINE_DEVIATION).count() as f32 / n;
    CellFeatures {
        light: is_light,
        hidden: false,
        f: [
            frac, mean_dev, piece_luma, local, frac_local, luma_local, edge, frac_fine,
        ],
        ctx: None,
        profile: None,
    }
}

/// Which region of a cell a sample pair counts for in [`edge_densities`].
#[derive(Clone, Copy, PartialEq)]
enum EdgeRegion {
    None,
    Centre,
    /// The rim less its outermost ring, which straddles the square's border.
    InnerRim,
}

/// Edge densities of the centre and of the inner rim: the fraction of
/// neighbouring sample pairs (right and below), both in the region, whose
/// colours differ by more than `EDGE_STEP` of the contrast: outlines and
/// shading, which a piece shows whatever its colour against the square.
fn edge_densities(samples: &[Sample], contrast: f32) -> (f32, f32) {
    const N: usize = SAMPLES_PER_SIDE;
    let mut grid = [(EdgeRegion::None, [0.0f32; 3]); N * N];
    for s in samples {
        let [k, l] = s.kl.map(usize::from);
        let region = if s.centre {
            EdgeRegion::Centre
        } else if s.rim && (1..N - 1).contains(&k) && (1..N - 1).contains(&l) {
            EdgeRegion::InnerRim
        } else {
            EdgeRegion::None
        };
        grid[k + N * l] = (region, s.rgb);
    }
    let step2 = (EDGE_STEP * contrast).powi(2);
    // [pairs, edges] of the centre and of the inner rim.
    let mut count = [[0usize; 2]; 2];
    for l in 0..N {
        for k in 0..N {
            let (region, a) = grid[k + N * l];
            let slot = match region {
                EdgeRegion::None => continue,
                EdgeRegion::Centre => 0,
                EdgeRegion::InnerRim => 1,
            };
            for (dk, dl) in [(1, 0), (0, 1)] {
                if k + dk >= N || l + dl >= N {
                    continue;
                }
                let (rb, b) = grid[k + dk + N * (l + dl)];
                if rb == region {
                    let d2 = (a[0] - b[0]).powi(2) + (a[1] - b[1]).powi(2) + (a[2] - b[2]).powi(2);
                    count[slot][0] += 1;
                    count[slot][1] += usize::from(d2 > step2);
                }
            }
        }
    }
    let density = |[pairs, edges]: [usize; 2]| edges as f32 / pairs.max(1) as f32;
    (density(count[0]), density(count[1]))
}

fn logistic(x: f32) -> f32 {
    1.0 / (1.0 + (-x).exp())
}

/// 1-D 2-means: the midpoint between the two cluster means and the gap.
fn two_means(v: &[f32]) -> Option<(f32, f32)> {
    if v.len() < 2 {
        return None;
    }
    let lo = v.iter().copied().fold(f32::INFINITY, f32::min);
    let hi = v.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    if hi - lo < 1e-6 {
        return None;
    }
    let mut t = (lo + hi) / 2.0;
    for _ in 0..50 {
        let (a, b): (Vec<f32>, Vec<f32>) = v.iter().partition(|x| **x < t);
        if a.is_empty() || b.is_empty() {
            break;
        }
        let ma = a.iter().sum::<f32>() / a.len() as f32;
        let mb = b.iter().sum::<f32>() / b.len() as f32;
        let nt = (ma + mb) / 2.0;
        if (nt - t).abs() < 1e-6 {
            return Some((nt, mb - ma));
        }
        t = nt;
    }
    let (a, b): (Vec<f32>, Vec<f32>) = v.iter().partition(|x| **x < t);
    if a.is_empty() || b.is_empty() {
        return None;
    }
    let ma = a.iter().sum::<f32>() / a.len() as f32;
    let mb = b.iter().sum::<f32>() / b.len() as f32;
    Some(((ma + mb) / 2.0, mb - ma))
}

/// Weight a hidden cell's own measurement keeps; the rest of its
/// probability is spread evenly over the three states. On 200 rendered
/// frames (`vision eval-sim`, seed 1) hidden cells were read right 21 times
/// in 37 (57 %, against 97 % for all cells): little better than a guess.
const HIDDEN_TRUST: f32 = 0.3;

/// Tempers the probabilities of hidden cells towards even.
fn temper_hidden(cells: &[CellFeatures], probs: &mut [[f32; 3]]) {
    for (c, p) in cells.iter().zip(probs.iter_mut()) {
        if c.hidden {
            for v in p.iter_mut() {
                *v = HIDDEN_TRUST * *v + (1.0 - HIDDEN_TRUST) / 3.0;
            }
        }
    }
}

pub fn state_of(p_empty: f32, p_white: f32, p_black: f32) -> Occupant {
    if p_empty >= p_white && p_empty >= p_black {
        Occupant::Empty
    } else if p_white >= p_black {
        Occupant::White
    } else {
        Occupant::Black
    }
}

/// Uncalibrated per-cell probabilities `[empty, white, black]` (grid order).
///
/// Occupied: more than `OCC_THRESHOLD` of the centre differs from the
/// square's own rim. Colour: the occupied cells' piece luma is split by
/// 2-means when the two groups are clearly apart (both colours present),
/// else at half-way between the dark and light square.
///
/// Cells seen from below `LEARNED_MAX_ELEVATION` are read by the learned
/// classifier ([`super::learned`]) instead, and steeper ones too where the
/// classifier is near-certain (`LEARNED_CERTAIN`); the rule reads the rest
/// and every cell of a frame whose viewpoint is unknown.
pub fn classify_uncalibrated(cells: &[CellFeatures]) -> Vec<[f32; 3]> {
    let mut probs = classify_by_rule(cells);
    let oblique = |c: &CellFeatures| {
        c.ctx
            .is_some_and(|x| x[CTX_ELEVATION] < LEARNED_MAX_ELEVATION)
    };
    if let Some(learned) = classify_learned(cells) {
        for ((p, l), c) in probs.iter_mut().zip(learned).zip(cells) {
            if oblique(c) || l.iter().any(|&v| v > LEARNED_CERTAIN) {
                *p = l;
            }
        }
    }
    probs
}

/// Cells seen from below this elevation (fraction of 90°: 55°) are read by
/// the learned classifier, steeper ones by the rule. Below it pieces in
/// front lean into the cells behind and the rule's phantoms grow (rendered
/// frames, seed 1: rule 0.75 % wrong overhead, 1.9-6.8 % at 28-65°); the
/// model, trained on renders only, reads real cells at 55-65° worse than
/// the rule (65 against 43 wrong of 1779; below 55°, 13 and 13 of 1000;
/// the first model, without the axis profile, read the real near-overhead
/// webcam frames at 91.2 against the rule's 95.8 % of squares).
const LEARNED_MAX_ELEVATION: f32 = 55.0 / 90.0;

/// Above `LEARNED_MAX_ELEVATION`, the learned classifier's answer replaces
/// the rule's where its probability exceeds this. The lowest of 0.9, 0.99,
/// 0.999 and 0.9999 at which no real set reads worse (real cells above 55°:
/// 0.999 changes 9 of about 3900, 2 of them to right, 7 wrong either way,
/// all sets no worse; 0.99 costs 2 squares); rendered frames, seeds 1 and
/// 2: 228 -> 152 and 221 -> 149 squares wrong.
const LEARNED_CERTAIN: f32 = 0.999;

/// The learned classifier's probabilities, when every cell has its view
/// context (and the shipped model loaded).
pub fn classify_learned(cells: &[CellFeatures]) -> Option<Vec<[f32; 3]>> {
    let model = super::learned::shipped().ok()?;
    let inputs = super::learned::model_inputs(cells)?;
    Some(model.predict_many(&inputs))
}

/// Where this frame's piece luma splits white from black pieces: the
/// 2-means midpoint of the occupied-looking cells' luma when the two
/// groups are clearly apart, else half-way between the board's squares.
pub fn colour_split(cells: &[CellFeatures]) -> f32 {
    let pl: Vec<f32> = cells
        .iter()
        .filter(|c| logistic((c.f[F_FRAC_LOCAL] - OCC_THRESHOLD) / OCC_SOFTNESS) > 0.5)
        .map(|c| c.f[F_LUMA_LOCAL])
        .collect();
    match two_means(&pl) {
        Some((t, gap)) if gap >= COLOUR_MIN_GAP => t,
        _ => COLOUR_SPLIT_DEFAULT,
    }
}

/// The hand-written rule's probabilities (hidden cells tempered).
pub fn classify_by_rule(cells: &[CellFeatures]) -> Vec<[f32; 3]> {
    let p_occ: Vec<f32> = cells
        .iter()
        .map(|c| logistic((c.f[F_FRAC_LOCAL] - OCC_THRESHOLD) / OCC_SOFTNESS))
        .collect();
    let t_col = colour_split(cells);
    let mut probs: Vec<[f32; 3]> = cells
        .iter()
        .zip(&p_occ)
        .map(|(c, po)| {
            let pw = logistic((c.f[F_LUMA_LOCAL] - t_col) / COLOUR_SOFTNESS);
            [1.0 - po, po * pw, po * (1.0 - pw)]
        })
        .collect();
    temper_hidden(cells, &mut probs);
    probs
}

/// Smallest uncalibrated probability a calibrated product starts from, so
/// that a reference's strong evidence can still overturn a confident read.
const PRODUCT_FLOOR: f32 = 1e-6;

/// A cell whose model features all lie within this much (fractions and
/// normalised luma) of its own look in the reference has not changed.
/// Green vinyl game, calibrated on the previous photo (hand-held phone,
/// so the looks of unchanged cells move by a few hundredths): 0 -> 3440,
/// 0.05 -> 3443, 0.1 -> 3446, 0.2 -> 3444 squares right of 3520; the
/// webcam sets read the same at each.
const UNCHANGED_LOOK: f32 = 0.1;

/// A cell whose model features differ from its own look in the reference
/// by more than this has clearly changed ([`LookChange::Changed`]; within
/// [`UNCHANGED_LOOK`] it looks the same). Consecutive green vinyl photos
/// (hand-held phone), largest difference of the fraction, the centre
/// distance and (measured in both) the piece luma: cells whose occupant
/// stayed 0.008 median, 0.094 at the 90th percentile, 0.17 at the 95th,
/// 0.56 at the 99th; cells whose occupant changed 0.34 at the 5th
/// percentile, 0.83 median (webcam video frames: 0.026 / 0.093 / 0.17 /
/// 0.79 and 0.23 / 1.4).
pub const LOOK_CHANGED: f32 = 0.3;

/// How a cell looks against its own look in the reference.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum LookChange {
    /// Within [`UNCHANGED_LOOK`] in every model feature.
    Same,
    /// More than [`LOOK_CHANGED`] off in one.
    Changed,
    /// In between, hidden, or no own look to compare with.
    Unknown,
}

/// Spread (standard deviation, fractions and normalised luma) of a cell's
/// model features around its own look in the reference while its occupant
/// stays: consecutive green vinyl photos (hand-held phone), occupied cells
/// whose occupant stayed, robust spread 0.024 / 0.024 / 0.047 (fraction,
/// luma, centre distance; webcam video 0.022 / 0.026 / 0.050). A class's
/// spread over the reference's many pieces is wider (black on light
/// squares: 0.23 / 0.33 / 0.78), and measuring the own look by it made a
/// black pawn standing over h7's far rim, just as in the reference, lose
/// to the white class it resembles (28 of the game's 55 photos).
/// Calibrated green vinyl: 98.01 % with the class spread, 98.66 at 0.05,
/// 98.69 at 0.1, 98.52 at 0.15, 98.32 at 0.2; the webcam sets read the same
/// at each.
const OWN_LOOK_SD: f32 = 0.05;

/// Below this fraction of the centre differing from the cell's rim (one
/// or two of its 64 samples), the luma of those pixels is noise, not a
/// piece's colour, and the calibrated model leaves it out. Seen on a
/// rendered empty square with 1 differing pixel of luma 0.57 where the
/// reference's empty squares read 1.04 +- 0.03: read as a white piece.
/// Real calibrated: webcam stills 99.22 -> 99.61 %, video 98.78 % either
/// way, green vinyl 97.90 -> 98.01 % (the same at 0.03, 0.05 and 0.1).
/// Taught by the start position from the same camera, 50 renders (seed 1):
/// 4.69 % of squares wrong at 0.03, 3.78 % at 0.1; but at 0.1 the move
/// watcher, which teaches the model on each believed position, lost the
/// standard bench's vinyl/low game (1/20 right and 1 wrong move against
/// 20/20 at 0.03): a dark piece on a dark square differs from its rim in
/// few pixels, and their luma is what tells it is there.
const MIN_FRAC_FOR_LUMA: f32 = 0.03;

/// How many cells a class needs before its own spread is trusted: when a
/// model is fitted on a later frame of the same board
/// ([`CalibratedModel::fit_on_prior`]), a class with fewer is topped up to
/// this many with an earlier model's class. The move watcher teaches the
/// model on each believed position, and late in a game a class has one or
/// two members whose spread is no measure of the next piece's (held-out
/// seed 41, wooden/overhead: White's only piece on a light square, a
/// knight, made a class of variance floor that read the next white knight
/// on a light square as empty at p = 1.0 for the rest of the game). Pooled
/// with every class at this weight, the start position's wide spread of
/// pieces seen from a low camera let a phantom through and seed 41's
/// wooden/low game lost a resync (36/40 + 4 -> 30/40 + 2).
pub const PRIOR_MEMBERS: f32 = 4.0;

/// A per-board model taught by one labelled photo.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CalibratedModel {
    /// Mean and variance per (light?, occupant) class; `None` if the
    /// reference had no such square.
    classes: Vec<(bool, Occupant, [f32; NF], [f32; NF])>,
    /// Per cell (grid order): whether it is a light square, its occupant in
    /// the reference and how it looked there (where it was visible).
    own_look: Vec<Option<(bool, Occupant, [f32; NF])>>,
}

impl CalibratedModel {
    /// Fits the model from a reference's cells and their known occupants
    /// (grid order).
    pub fn fit(cells: &[CellFeatures], truth: &[Occupant]) -> Result<CalibratedModel, VisionError> {
        Self::fit_on_prior(cells, truth, None)
    }

    /// [`CalibratedModel::fit`], each class of fewer than [`PRIOR_MEMBERS`]
    /// cells pooled with the same class of `prior` (an earlier model of the
    /// same board) counted as the cells missing: a class the cells show
    /// once or twice gets the spread the prior saw, not the floor, and a
    /// class they do not show at all is the prior's.
    pub fn fit_on_prior(
        cells: &[CellFeatures],
        truth: &[Occupant],
        prior: Option<&CalibratedModel>,
    ) -> Result<CalibratedModel, VisionError> {
        if cells.len() != 64 || truth.len() != 64 {
            return Err(VisionError::Input(
                "reference needs 64 cells and 64 labels".into(),
            ));
        }
        let mut classes = Vec::new();
        for light in [true, false] {
            for occ in [Occupant::Empty, Occupant::White, Occupant::Black] {
                let members: Vec<&CellFeatures> = cells
                    .iter()
                    .zip(truth)
                    .filter(|(c, t)| c.light == light && !c.hidden && **t == occ)
                    .map(|(c, _)| c)
                    .collect();
                let before = prior.and_then(|p| p.class(light, occ));
                let n = members.len() as f32;
                let w = if before.is_some() {
                    (PRIOR_MEMBERS - n).max(0.0)
                } else {
                    0.0
                };
                if n + w == 0.0 {
                    continue;
                }
                let mut mean = [0.0; NF];
                let mut var = [0.0; NF];
                for k in 0..NF {
                    let own_sum: f32 = members.iter().map(|c| c.f[k]).sum();
                    let (pm, pv) = before.map_or((0.0, 0.0), |(m, v)| (m[k], v[k]));
                    mean[k] = (own_sum + w * pm) / (n + w);
                    // The spread of the pooled cells about the pooled mean:
                    // the prior's own spread plus how far its mean lies.
                    let own: f32 = members.iter().map(|c| (c.f[k] - mean[k]).powi(2)).sum();
                    var[k] =
                        ((own + w * (pv + (pm - mean[k]).powi(2))) / (n + w)).max(NB_VAR_FLOOR);
                }
                classes.push((light, occ, mean, var));
            }
        }
        if !classes.iter().any(|c| c.1 == Occupant::Empty) {
            return Err(VisionError::Input(
                "the reference position has no empty square".into(),
            ));
        }
        let own_look = cells
            .iter()
            .zip(truth)
            .map(|(c, t)| (!c.hidden).then_some((c.light, *t, c.f)))
            .collect();
        Ok(CalibratedModel { classes, own_look })
    }

    /// The mean and variance of the class of `occ` on light (`true`) or
    /// dark squares, if the model has it.
    fn class(&self, light: bool, occ: Occupant) -> Option<([f32; NF], [f32; NF])> {
        self.classes
            .iter()
            .find(|c| c.0 == light && c.1 == occ)
            .map(|c| (c.2, c.3))
    }

    /// How each cell (grid order) looks against its own look in the
    /// reference: the largest difference over the model's features, the
    /// piece luma only where both measured it ([`MIN_FRAC_FOR_LUMA`]).
    /// All unknown without own looks ([`CalibratedModel::classes_only`]).
    pub fn look_changes(&self, cells: &[CellFeatures]) -> Vec<LookChange> {
        cells
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let Some((light, _, own)) = self.own_look.get(i).and_then(Option::as_ref) else {
                    return LookChange::Unknown;
                };
                if *light != c.light || c.hidden {
                    return LookChange::Unknown;
                }
                let luma_measured = c.f[F_FRAC_LOCAL].min(own[F_FRAC_LOCAL]) >= MIN_FRAC_FOR_LUMA;
                let diff = MODEL_FEATURES
                    .iter()
                    .filter(|&&f| f != F_LUMA_LOCAL || luma_measured)
                    .map(|&f| (c.f[f] - own[f]).abs())
                    .fold(0.0f32, f32::max);
                if diff <= UNCHANGED_LOOK {
                    LookChange::Same
                } else if diff > LOOK_CHANGED {
                    LookChange::Changed
                } else {
                    LookChange::Unknown
                }
            })
            .collect()
    }

    /// The model without the cells' own looks: the class likelihoods only.
    pub fn classes_only(mut self) -> CalibratedModel {
        self.own_look.clear();
        self
    }

    /// Per-cell probabilities `[empty, white, black]`: the rule's reading
    /// ([`classify_by_rule`]) times the reference's class likelihoods (a
    /// product of the two, so that a cell the reference's few examples do
    /// not cover is not read from the reference alone: real calibrated
    /// photos 98.24 / 98.26 / 97.19 % by the likelihoods alone, 99.22 /
    /// 97.92 / 97.22 % as the product); a hidden cell's likelihoods count
    /// `HIDDEN_TRUST` as much. Cells of a colour whose three classes the
    /// reference did not all show keep the rule's reading.
    ///
    /// Not the learned classifier's reading: its errors are systematic (the
    /// same square read wrong in every frame of a fixed camera), and in
    /// the move watcher, which teaches this model on the game's own
    /// positions, a product with it stalled a simulated game at the low
    /// view on squares it kept misreading (standard bench game 7: 5/20
    /// moves against 20/20 with the rule).
    pub fn classify(&self, cells: &[CellFeatures]) -> Vec<[f32; 3]> {
        let base = classify_by_rule(cells);
        cells
            .iter()
            .zip(base)
            .enumerate()
            .map(|(i, (c, b))| {
                // The cell's own look, where it showed the same square colour.
                let own_look = self
                    .own_look
                    .get(i)
                    .and_then(Option::as_ref)
                    .filter(|(light, _, _)| *light == c.light);
                // The luma of the pixels that differ from the rim means
                // nothing when only a few differ: leave it out for every
                // class alike (a missing feature in naive Bayes).
                let luma_measured = c.f[F_FRAC_LOCAL] >= MIN_FRAC_FOR_LUMA;
                let mut logl = [f32::NEG_INFINITY; 3];
                let mut known = [false; 3];
                for (light, occ, mean, var) in &self.classes {
                    if *light != c.light {
                        continue;
                    }
                    let k = match occ {
                        Occupant::Empty => 0,
                        Occupant::White => 1,
                        Occupant::Black => 2,
                    };
                    let ll_of = |mean: &[f32; NF], var: &[f32; NF]| -> f32 {
                        MODEL_FEATURES
                            .iter()
                            .filter(|&&f| f != F_LUMA_LOCAL || luma_measured)
                            .map(|&f| {
                                -0.5 * (c.f[f] - mean[f]).powi(2) / var[f] - 0.5 * var[f].ln()
                            })
                            .sum()
                    };
                    let mut ll = ll_of(mean, var);
                    // A cell may look as it did with the same occupant in
                    // the reference (a print on the board, a knot in the
                    // wood, a piece that has not moved): the likelier of
                    // the two, so that a reference seen from another camera
                    // position, where this cell held another square, costs
                    // nothing. The own look spreads as little as an
                    // unchanged cell's look moves (`OWN_LOOK_SD`), not as
                    // the class's pieces differ.
                    if let Some((_, own_occ, own)) = own_look {
                        if own_occ == occ {
                            let own_var = var.map(|v| v.min(OWN_LOOK_SD * OWN_LOOK_SD));
                            ll = ll.max(ll_of(own, &own_var));
                        }
                    }
                    logl[k] = ll;
                    known[k] = true;
                }
                if !known.iter().all(|k| *k) {
                    return b;
                }
                let m = logl.iter().copied().fold(f32::NEG_INFINITY, f32::max);
                let trust = if c.hidden { HIDDEN_TRUST } else { 1.0 };
                // A cell that looks just as it did in the reference is
                // read by the likelihoods alone: where the rule misreads it
                // (a print on the board), it misread it there too.
                let unchanged = own_look.is_some_and(|(_, _, own)| {
                    MODEL_FEATURES
                        .iter()
                        .all(|&f| (c.f[f] - own[f]).abs() <= UNCHANGED_LOOK)
                });
                let b = if unchanged { [1.0 / 3.0; 3] } else { b };
                let e = [0, 1, 2].map(|k| b[k].max(PRODUCT_FLOOR) * ((logl[k] - m) * trust).exp());
                let s: f32 = e.iter().sum();
                e.map(|v| v / s)
            })
            .collect()
    }
}

/// Turns per-cell probabilities into the per-square reading for a side.
pub fn reading_from_cells(probs: &[[f32; 3]], side: Side) -> Reading {
    let mut squares = vec![
        SquareState {
            state: Occupant::Empty,
            p_empty: 1.0,
            p_white: 0.0,
            p_black: 0.0,
            hidden: false,
        };
        64
    ];
    for r in 0..8 {
        for c in 0..8 {
            let [pe, pw, pb] = probs[c + 8 * r];
            squares[side.square_of_cell(c, r)] = SquareState {
                state: state_of(pe, pw, pb),
                p_empty: pe,
                p_white: pw,
                p_black: pb,
                hidden: false,
            };
        }
    }
    Reading { squares }
}

/// Per-cell values (grid order) by square (a1 = 0) for a side.
pub fn by_square<T: Copy>(cells: &[T], side: Side) -> Option<[T; 64]> {
    let first = *cells.first()?;
    if cells.len() != 64 {
        return None;
    }
    let mut out = [first; 64];
    for r in 0..8 {
        for c in 0..8 {
            out[side.square_of_cell(c, r)] = cells[c + 8 * r];
        }
    }
    Some(out)
}

/// Marks the squares whose cells are hidden behind nearer pieces.
pub fn mark_hidden(reading: &mut Reading, cells: &[CellFeatures], side: Side) {
    for r in 0..8 {
        for c in 0..8 {
            if let Some(cell) = cells.get(c + 8 * r) {
                reading.squares[side.square_of_cell(c, r)].hidden = cell.hidden;
            }
        }
    }
}

/// Cell-order occupants for a board position seen from `side`.
pub fn cells_from_occupancy(occ: &Occupancy, side: Side) -> Vec<Occupant> {
    let mut v = vec![Occupant::Empty; 64];
    for r in 0..8 {
        for c in 0..8 {
            v[c + 8 * r] = occ[side.square_of_cell(c, r)];
        }
    }
    v
}

/// Number of view-context measurements per cell ([`cell_context`]).
pub const NCTX: usize = 8;
/// Index of the camera's elevation in a cell's context.
pub const CTX_ELEVATION: usize = 0;

/// Measurements of a cell's surroundings as the camera sees them:
/// `[camera elevation at the cell (fraction of 90°), own-rim deviating
/// fraction of the centre's near half (towards the camera), of its far
/// half, share of heights 0.2-0.8 on the cell's axis showing the board
/// behind (-1: none visible), the front neighbour's deviating fraction and
/// luma, the piece height found on the axis, ground distance to the camera
/// in board widths]`. A piece of the cell's own fills both halves of its
/// centre and its axis; a taller piece in front leaning in fills the near
/// half only, and the axis above an empty cell shows the board behind.
fn cell_context(
    img: &RgbImage,
    view: &viewpoint::Viewpoint,
    i: usize,
    samples: &[Sample],
    cells: &[CellFeatures],
    colours: &BoardColours,
    even_light: bool,
) -> [f32; NCTX] {
    let c = [(i % 8) as f64 + 0.5, (i / 8) as f64 + 0.5];
    let d = view.ground_distance(c).max(1e-9);
    let elev = view.centre[2].atan2(d).to_degrees() / 90.0;
    let (ux, uy) = ((view.centre[0] - c[0]) / d, (view.centre[1] - c[1]) / d);
    let rim: Vec<[f32; 3]> = samples.iter().filter(|x| x.rim).map(|x| x.rgb).collect();
    let own_ref = channel_median(&rim);
    let (mut near, mut near_n, mut far, mut far_n) = (0, 0, 0, 0);
    for s in samples.iter().filter(|s| s.centre) {
        let dev = dist(s.rgb, own_ref) / colours.contrast > LOCAL_DEVIATION;
        if (s.g[0] - c[0]) * ux + (s.g[1] - c[1]) * uy > 0.0 {
            near_n += 1;
            near += dev as usize;
        } else {
            far_n += 1;
            far += dev as usize;
        }
    }
    let frac = |a: usize, n: usize| a as f32 / n.max(1) as f32;
    let (mut board, mut seen) = (0, 0);
    let mut k = 0;
    loop {
        let z = AXIS_LOW + k as f64 * AXIS_STEP;
        if z > AXIS_HIGH + 1e-9 {
            break;
        }
        k += 1;
        let (Some(px), Some(g)) = (
            view.project(c[0], c[1], z),
            view.ground_behind(c[0], c[1], z),
        ) else {
            continue;
        };
        let Some(rgb) = img.sample(px[0], px[1]).filter(|_| on_board(g)) else {
            continue;
        };
        seen += 1;
        board += shows_board(rgb, g, colours, even_light) as usize;
    }
    let front = [c[0] + ux, c[1] + uy];
    let (front_frac, front_luma) = if on_board(front) {
        let j = front[0] as usize + 8 * front[1] as usize;
        (cells[j].f[F_FRAC_LOCAL], cells[j].f[F_LUMA_LOCAL])
    } else {
        (0.0, 0.0)
    };
    let h = piece_height(img, view, c, colours, even_light);
    [
        elev as f32,
        frac(near, near_n),
        frac(far, far_n),
        if seen > 0 {
            board as f32 / seen as f32
        } else {
            -1.0
        },
        front_frac,
        front_luma,
        h as f32,
        (d / 8.0) as f32,
    ]
}

/// Heights up a cell's vertical axis that [`axis_profile`] samples (square
/// sides): from just above the floor to above a king's top (1.67).
const PROFILE_HEIGHTS: [f64; 13] = [
    0.1, 0.25, 0.4, 0.55, 0.7, 0.85, 1.0, 1.15, 1.3, 1.45, 1.6, 1.75, 1.9,
];
/// Offsets across the line of sight (square sides): the axis and either
/// side of it within a piece's width (a king's base is 0.4 square wide).
const PROFILE_OFFSETS: [f64; 3] = [-0.2, 0.0, 0.2];
/// The offsets' names in [`profile_names`] (one per offset, by type).
const PROFILE_OFFSET_NAMES: [&str; PROFILE_OFFSETS.len()] = ["l", "c", "r"];
/// Values per profile point: luma on the board's dark-to-light scale, and
/// distance from the colour of the board square the sight line lands on.
const PROFILE_VALUES: usize = 2;
/// Number of profile values per cell.
pub const NPROFILE: usize = PROFILE_HEIGHTS.len() * PROFILE_OFFSETS.len() * PROFILE_VALUES;
/// A profile value where the point is outside the image, or its sight line
/// does not land on the board.
const PROFILE_MISSING: f32 = -9.0;

/// Names of the profile values, in [`axis_profile`]'s order:
/// `p{height index}{l|c|r}_{luma|behind}`.
pub fn profile_names() -> Vec<String> {
    let mut names = Vec::with_capacity(NPROFILE);
    for k in 0..PROFILE_HEIGHTS.len() {
        for side in PROFILE_OFFSET_NAMES {
            for value in ["luma", "behind"] {
                names.push(format!("p{k:02}{side}_{value}"));
            }
        }
    }
    names
}

/// What the image shows up the vertical axis of cell `i`, a coarse picture
/// of whatever stands there seen from the camera: at each of
/// `PROFILE_HEIGHTS` and `PROFILE_OFFSETS` (across the sight line), the luma
/// on the board's dark (0) to light (1) scale and the colour distance (in
/// contrasts) from the board square the sight line lands on behind it. A
/// piece on the cell shows its own colour up to its height and the board
/// behind above it; an empty cell shows the board behind from the floor up
/// (unless a piece further back stands in the way). Heights-major, then
/// offsets, then the two values.
fn axis_profile(
    img: &RgbImage,
    view: &viewpoint::Viewpoint,
    i: usize,
    colours: &BoardColours,
    even_light: bool,
) -> [f32; NPROFILE] {
    let c = [(i % 8) as f64 + 0.5, (i / 8) as f64 + 0.5];
    let (sx, sy) = across_sight(view, c);
    let dark = luma(colours.dark);
    let mut out = [PROFILE_MISSING; NPROFILE];
    let mut k = 0;
    for &z in &PROFILE_HEIGHTS {
        for &o in &PROFILE_OFFSETS {
            let p = [c[0] + sx * o, c[1] + sy * o];
            if let Some(rgb) = view
                .project(p[0], p[1], z)
                .and_then(|px| img.sample(px[0], px[1]))
            {
                out[k] = (luma(rgb) - dark) / colours.contrast;
                if let Some(g) = view.ground_behind(p[0], p[1], z).filter(|g| on_board(*g)) {
                    out[k + 1] =
                        dist(rgb, square_colour_at(g, colours, even_light)) / colours.contrast;
                }
            }
            k += PROFILE_VALUES;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A reference's 64 cells (grid order) and their occupants, from each
    /// cell's index and square colour.
    fn reference(
        of: impl Fn(usize, bool) -> (CellFeatures, Occupant),
    ) -> (Vec<CellFeatures>, Vec<Occupant>) {
        (0..64).map(|i| of(i, (i % 8 + i / 8) % 2 == 0)).unzip()
    }

    fn cell(light: bool, frac: f32, pl: f32) -> CellFeatures {
        CellFeatures {
            light,
            hidden: false,
            f: [frac, frac, pl, frac, frac, pl, 0.0, frac],
            ctx: None,
            profile: None,
        }
    }

    /// The 16x16 samples of one cell, coloured by lattice position.
    fn samples(rgb: impl Fn(usize, usize) -> [f32; 3]) -> Vec<Sample> {
        let n = SAMPLES_PER_SIDE;
        let mut out = Vec::new();
        for l in 0..n {
            for k in 0..n {
                let (rim, centre) = region_of(k, l);
                out.push(Sample {
                    g: [(k as f64 + 0.5) / n as f64, (l as f64 + 0.5) / n as f64],
                    kl: [k as u8, l as u8],
                    rim,
                    centre,
                    rgb: rgb(k, l),
                });
            }
        }
        out
    }

    /// A cream and green board's colours (vinyl-like).
    fn cream_and_green() -> BoardColours {
        BoardColours {
            light: [220.0, 210.0, 190.0],
            dark: [60.0, 90.0, 70.0],
            contrast: 130.0,
        }
    }

    #[test]
    fn a_pale_piece_on_a_pale_square_shows_in_its_outline_and_shading() {
        let colours = cream_and_green();
        let square = colours.light;
        // A cream piece: a thin grey outline at radius 3 samples, its
        // shaded half a little darker than the square, its lit half about
        // as pale.
        let piece = |k: usize, l: usize| {
            let (x, y) = (k as f32 - 7.5, l as f32 - 7.5);
            let r = x.hypot(y);
            if r > 3.2 {
                square
            } else if r > 2.9 {
                [180.0, 175.0, 165.0]
            } else if x > 0.0 {
                [200.0, 195.0, 185.0]
            } else {
                [225.0, 220.0, 205.0]
            }
        };
        let empty = features_of(&samples(|_, _| square), true, &colours);
        let pale = features_of(&samples(piece), true, &colours);
        // What the rule measures stays under its occupancy threshold ...
        assert!(pale.f[F_FRAC_LOCAL] < OCC_THRESHOLD, "{:?}", pale.f);
        // ... while the outline and the shading show.
        assert_eq!(empty.f[F_EDGE], 0.0);
        assert_eq!(empty.f[F_FRAC_FINE], 0.0);
        assert!(pale.f[F_EDGE] > 0.2, "{:?}", pale.f);
        assert!(
            pale.f[F_FRAC_FINE] > 2.0 * pale.f[F_FRAC_LOCAL],
            "{:?}",
            pale.f
        );
    }

    #[test]
    fn the_square_s_own_grain_is_not_an_edge() {
        let colours = cream_and_green();
        // Wood grain: stripes across the whole square, rim and centre alike.
        let grain = |k: usize, _l: usize| {
            if k.is_multiple_of(3) {
                [195.0, 185.0, 165.0]
            } else {
                [220.0, 210.0, 190.0]
            }
        };
        let f = features_of(&samples(grain), true, &colours).f;
        assert!(f[F_EDGE].abs() < 0.1, "{f:?}");
    }

    #[test]
    fn two_means_splits_two_groups() {
        let (t, gap) = two_means(&[0.0, 0.1, 0.05, 0.9, 1.0, 0.95]).unwrap();
        assert!(t > 0.2 && t < 0.8, "{t}");
        assert!(gap > 0.8);
    }

    #[test]
    fn uncalibrated_separates_empty_white_black() {
        let mut cells = Vec::new();
        for i in 0..64 {
            let light = i % 2 == 0;
            cells.push(match i % 4 {
                0 => cell(light, 0.8, 1.3),
                1 => cell(light, 0.7, -0.4),
                _ => cell(light, 0.02, 0.5),
            });
        }
        let p = classify_uncalibrated(&cells);
        for (i, pr) in p.iter().enumerate() {
            let s = state_of(pr[0], pr[1], pr[2]);
            let want = match i % 4 {
                0 => Occupant::White,
                1 => Occupant::Black,
                _ => Occupant::Empty,
            };
            assert_eq!(s, want, "cell {i}: {pr:?}");
        }
    }

    #[test]
    fn an_empty_board_stays_empty() {
        let cells: Vec<CellFeatures> = (0..64)
            .map(|i| cell(i % 2 == 0, 0.01 * (i % 5) as f32, 0.5))
            .collect();
        let p = classify_uncalibrated(&cells);
        assert!(p.iter().all(|pr| pr[0] > 0.9), "{p:?}");
    }

    #[test]
    fn calibrated_model_learns_from_a_reference() {
        let (cells, truth) = reference(|i, light| match i / 16 {
            0 => (cell(light, 0.5, 0.9), Occupant::White),
            3 => (cell(light, 0.5, 0.2), Occupant::Black),
            _ => (cell(light, 0.05, 0.5), Occupant::Empty),
        });
        let model = CalibratedModel::fit(&cells, &truth).unwrap();
        let probe = [
            cell(true, 0.48, 0.85),
            cell(false, 0.52, 0.25),
            cell(true, 0.06, 0.5),
        ];
        let p = model.classify(&probe);
        assert_eq!(state_of(p[0][0], p[0][1], p[0][2]), Occupant::White);
        assert_eq!(state_of(p[1][0], p[1][1], p[1][2]), Occupant::Black);
        assert_eq!(state_of(p[2][0], p[2][1], p[2][2]), Occupant::Empty);
    }

    #[test]
    fn a_class_seen_once_keeps_the_spread_an_earlier_model_saw() {
        // The first position: white pieces on light cells of many looks.
        let (cells, truth) = reference(|i, light| match i / 16 {
            0 => {
                let k = (i % 9) as f32;
                (
                    cell(light, 0.35 + 0.05 * k, 0.8 + 0.06 * k),
                    Occupant::White,
                )
            }
            3 => (cell(light, 0.8, -0.9), Occupant::Black),
            _ => (cell(light, 0.0, 1.0), Occupant::Empty),
        });
        let first = CalibratedModel::fit(&cells, &truth).unwrap();
        // Late in the game: one white piece on a light cell (cell 0), of
        // an odd look, and no white piece on a dark one.
        let (late, late_truth) = reference(|i, light| match i {
            0 => (cell(light, 0.72, 0.17), Occupant::White),
            48.. => (cell(light, 0.8, -0.9), Occupant::Black),
            _ => (cell(light, 0.0, 1.0), Occupant::Empty),
        });
        let alone = CalibratedModel::fit(&late, &late_truth).unwrap();
        let pooled = CalibratedModel::fit_on_prior(&late, &late_truth, Some(&first)).unwrap();
        let (_, var_alone) = alone.class(true, Occupant::White).unwrap();
        let (_, var_pooled) = pooled.class(true, Occupant::White).unwrap();
        assert_eq!(var_alone[F_FRAC_LOCAL], NB_VAR_FLOOR);
        assert!(var_pooled[F_FRAC_LOCAL] > 0.01, "{var_pooled:?}");
        // A class of enough cells is their own.
        assert_eq!(
            pooled.class(true, Occupant::Empty),
            alone.class(true, Occupant::Empty)
        );
        // The class no late cell shows is the first model's.
        assert_eq!(alone.class(false, Occupant::White), None);
        assert_eq!(
            pooled.class(false, Occupant::White),
            first.class(false, Occupant::White)
        );
        // A white piece on a light cell looking like those of the first
        // position is white, and an empty light cell stays empty.
        let probe = [cell(true, 0.4, 1.1), cell(true, 0.0, 1.0)];
        let p = pooled.classify(&probe);
        assert_eq!(state_of(p[0][0], p[0][1], p[0][2]), Occupant::White);
        assert_eq!(state_of(p[1][0], p[1][1], p[1][2]), Occupant::Empty);
    }

    #[test]
    fn calibrated_model_knows_a_print_on_an_empty_square() {
        // A logo printed on light cell 18 looks like a dark piece to the rule
        // and to the class means; the reference shows it empty.
        let logo = |light| cell(light, 0.35, 0.1);
        let (cells, truth) = reference(|i, light| match i {
            18 => (logo(light), Occupant::Empty),
            _ if i < 16 => (cell(light, 0.5, 0.9), Occupant::White),
            _ if i >= 48 => (
                cell(light, 0.5 + 0.05 * (i % 3) as f32, 0.05 * (i % 2) as f32),
                Occupant::Black,
            ),
            _ => (cell(light, 0.05, 0.5), Occupant::Empty),
        });
        let model = CalibratedModel::fit(&cells, &truth).unwrap();
        let state = |p: [f32; 3]| state_of(p[0], p[1], p[2]);
        let mut later = cells.clone();
        // The print seen again, and the same look on plain light cell 20.
        later[18] = logo(true);
        later[20] = logo(true);
        let p = model.classify(&later);
        assert_eq!(state(p[18]), Occupant::Empty, "{:?}", p[18]);
        assert_eq!(state(p[20]), Occupant::Black, "{:?}", p[20]);
        // A white piece put on the print is still a white piece.
        later[18] = cell(true, 0.5, 0.9);
        assert_eq!(state(model.classify(&later)[18]), Occupant::White);
        // Without the own looks the print reads as a piece.
        let classes = model.classes_only().classify(&cells);
        assert_eq!(state(classes[18]), Occupant::Black);
    }

    #[test]
    fn a_piece_looking_as_it_did_in_the_reference_keeps_its_colour() {
        // Light cell 50 holds a black pawn standing over the far rim: the
        // light centre left differs from the rim in a third of its samples,
        // with a white piece's luma. Black pieces on light cells look very
        // different from each other, white ones alike.
        let pawn = |light| cell(light, 0.38, 0.75);
        let (cells, truth) = reference(|i, light| match i {
            50 => (pawn(light), Occupant::Black),
            _ if i < 16 => (
                cell(
                    light,
                    0.3 + 0.05 * (i % 5) as f32,
                    0.7 + 0.03 * (i % 4) as f32,
                ),
                Occupant::White,
            ),
            _ if i >= 48 => (
                cell(
                    light,
                    0.5 + 0.2 * (i % 3) as f32,
                    -0.3 + 0.25 * (i % 4) as f32,
                ),
                Occupant::Black,
            ),
            _ => (
                cell(light, 0.02, if light { 1.0 } else { 0.0 }),
                Occupant::Empty,
            ),
        });
        let model = CalibratedModel::fit(&cells, &truth).unwrap();
        let state = |p: [f32; 3]| state_of(p[0], p[1], p[2]);
        let mut later = cells.clone();
        // The pawn as it stood, a little off; the same look on light cell 20.
        later[50] = cell(true, 0.36, 0.76);
        later[20] = pawn(true);
        let p = model.classify(&later);
        assert_eq!(state(p[50]), Occupant::Black, "{:?}", p[50]);
        assert_eq!(state(p[20]), Occupant::White, "{:?}", p[20]);
        // By the classes alone the pawn reads as the white piece it resembles.
        let classes = model.classes_only().classify(&later);
        assert_eq!(state(classes[50]), Occupant::White, "{:?}", classes[50]);
    }

    #[test]
    fn looks_against_the_reference_are_same_changed_or_unknown() {
        let (cells, truth) = reference(|i, light| match i {
            _ if i < 16 => (cell(light, 0.5, 0.9), Occupant::White),
            _ if i >= 48 => (cell(light, 0.6, 0.1), Occupant::Black),
            _ => (cell(light, 0.01, 0.5), Occupant::Empty),
        });
        let model = CalibratedModel::fit(&cells, &truth).unwrap();
        let mut later = cells.clone();
        later[0] = cell(true, 0.55, 0.85); // a white piece a little off
        later[20] = cell(true, 0.5, 0.9); // a piece on an empty cell
        later[21] = cell(false, 0.2, 0.5); // a fifth of the centre differs
        later[22].hidden = true;
        later[23] = cell(true, 0.01, 0.5); // a light cell where a dark one was
        later[48] = cell(true, 0.6, 0.1 + 2.0 * LOOK_CHANGED); // a white piece for a black one
        let looks = model.look_changes(&later);
        assert_eq!(looks[0], LookChange::Same);
        assert_eq!(looks[1], LookChange::Same);
        assert_eq!(looks[20], LookChange::Changed);
        assert_eq!(looks[21], LookChange::Unknown);
        assert_eq!(looks[22], LookChange::Unknown);
        assert_eq!(looks[23], LookChange::Unknown);
        assert_eq!(looks[48], LookChange::Changed);
        // Without own looks nothing is known.
        let classes = model.classes_only().look_changes(&later);
        assert!(classes.iter().all(|l| *l == LookChange::Unknown));
    }

    #[test]
    fn a_few_odd_pixels_on_an_empty_cell_do_not_make_a_piece_colour() {
        // Reference: empty light cells plain (luma 1.0), white pieces of
        // luma 0.4 covering 10-50 % of the centre, black of -0.3.
        let (cells, truth) = reference(|i, light| match i {
            _ if i < 16 => (
                cell(light, 0.1 + 0.05 * (i % 9) as f32, 0.4),
                Occupant::White,
            ),
            _ if i >= 48 => (cell(light, 0.75, -0.3), Occupant::Black),
            _ => (
                cell(light, 0.0, if light { 1.0 } else { 0.0 }),
                Occupant::Empty,
            ),
        });
        let model = CalibratedModel::fit(&cells, &truth).unwrap().classes_only();
        let state = |p: [f32; 3]| state_of(p[0], p[1], p[2]);
        let mut later = cells.clone();
        // Light cell 20: one sample of 64 differs, with a white piece's luma.
        later[20] = cell(true, 0.02, 0.45);
        // Light cell 22: a third of the centre differs with that luma.
        later[22] = cell(true, 0.3, 0.45);
        let p = model.classify(&later);
        assert_eq!(state(p[20]), Occupant::Empty, "{:?}", p[20]);
        assert_eq!(state(p[22]), Occupant::White, "{:?}", p[22]);
    }

    #[test]
    fn steep_cells_keep_the_rule_and_oblique_ones_the_learned_model() {
        let seen_from = |elevation: f32| -> Vec<CellFeatures> {
            (0..64)
                .map(|i| {
                    let mut c = match i % 3 {
                        0 => cell(i % 2 == 0, 0.8, 1.3),
                        1 => cell(i % 2 == 0, 0.3, -0.2),
                        _ => cell(i % 2 == 0, 0.2, 0.5),
                    };
                    c.ctx = Some([elevation, 0.2, 0.1, 0.5, 0.3, 0.4, 1.0, 0.5]);
                    c.profile = Some([0.5; NPROFILE]);
                    c
                })
                .collect()
        };
        let steep = seen_from(0.8);
        // Steep cells keep the rule unless the model is near-certain.
        let sure = classify_learned(&steep).expect("the shipped model reads cells with context");
        assert!(sure.iter().all(|l| l.iter().all(|&v| v <= LEARNED_CERTAIN)));
        assert_eq!(classify_uncalibrated(&steep), classify_by_rule(&steep));
        let oblique = seen_from(0.4);
        let learned =
            classify_learned(&oblique).expect("the shipped model reads cells with context");
        assert_eq!(classify_uncalibrated(&oblique), learned);
        assert_ne!(learned, classify_by_rule(&oblique));
        // Without a viewpoint there is no context: the rule reads the frame.
        let blind: Vec<CellFeatures> = (0..64).map(|i| cell(i % 2 == 0, 0.8, 1.3)).collect();
        assert!(classify_learned(&blind).is_none());
        assert_eq!(classify_uncalibrated(&blind), classify_by_rule(&blind));
    }

    /// Index of profile value `value` (0 luma, 1 behind) at height index
    /// `k` on the axis itself.
    fn on_axis(k: usize, value: usize) -> usize {
        (k * PROFILE_OFFSETS.len() + 1) * PROFILE_VALUES + value
    }

    #[test]
    fn the_axis_profile_shows_a_standing_piece_up_to_its_height_and_the_board_behind_above_it() {
        // An oblique view: grid y = 0 (the far edge) narrow and high in the
        // picture, the camera beyond grid y = 8.
        let (loc, view) = viewpoint::oblique_test_view();
        // A red cylinder 0.2 square in radius and 1.0 high on cell (3, 5).
        let (foot, radius, height) = ([3.5, 5.5], 0.2, 1.0);
        let silhouette: Vec<([f64; 2], f64)> = (0..=50)
            .filter_map(|k| {
                let z = height * k as f64 / 50.0;
                let c = view.project(foot[0], foot[1], z)?;
                let e = view.project(foot[0] + radius, foot[1], z)?;
                Some((c, (e[0] - c[0]).hypot(e[1] - c[1])))
            })
            .collect();
        let mut img = RgbImage::new(640, 480);
        for y in 0..480 {
            for x in 0..640 {
                let p = [x as f64 + 0.5, y as f64 + 0.5];
                let in_piece = silhouette
                    .iter()
                    .any(|(c, r)| (p[0] - c[0]).hypot(p[1] - c[1]) <= *r);
                let rgb = match loc.grid_from_image.apply(p) {
                    _ if in_piece => [200, 40, 40],
                    Some(g) if on_board(g) => {
                        if (g[0] as usize + g[1] as usize).is_multiple_of(2) {
                            [215, 200, 170]
                        } else {
                            [100, 70, 45]
                        }
                    }
                    _ => [128, 128, 128],
                };
                img.put(x, y, rgb);
            }
        }
        let (cells, _) = cell_features(&img, &loc).unwrap();
        let piece = cells[3 + 8 * 5].profile.expect("a viewpoint");
        let empty = cells[5 + 8 * 5].profile.expect("a viewpoint");
        // Heights 0.1-1.0 (indices 0-6) show the piece, not the board
        // behind; 1.45-1.9 (indices 9-12), above its top, the board behind
        // (the silhouette drawn as discs of the piece's radius reaches a
        // little above 1.0 in the picture).
        for k in 0..=6 {
            assert!(piece[on_axis(k, 1)] > DEVIATION, "height {k}: {piece:?}");
        }
        for k in 9..=12 {
            let b = piece[on_axis(k, 1)];
            assert!((0.0..DEVIATION).contains(&b), "height {k}: {b}");
        }
        // The empty cell shows the board behind all the way up, and at its
        // foot the luma of its own (light) square.
        for k in 0..PROFILE_HEIGHTS.len() {
            let b = empty[on_axis(k, 1)];
            assert!((0.0..DEVIATION).contains(&b), "height {k}: {b}");
        }
        assert!(
            (empty[on_axis(0, 0)] - 1.0).abs() < 0.1,
            "{}",
            empty[on_axis(0, 0)]
        );
    }
}
