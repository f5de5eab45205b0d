//! What changed in the picture since the last settled frame that showed
//! the believed position: evidence for moves that occupancy cannot tell
//! apart.
//!
//! Occupancy alone stalls where pieces hide squares. From a low camera the
//! back rank hides behind the pawns: after `Bd7` the squares c8, d8 and e8
//! all still look occupied, so `Bd7`, `Qd7` and `Kd7` explain the squares
//! equally well. At the angled camera a black king that stepped from e8 to
//! f8, behind the pawn on f7 on a dark square, reads empty: `Kf8`, `Ke7`
//! and "nothing changed" each have one square against them. The picture
//! tells them apart: a piece that left takes its silhouette with it, one
//! that arrived brings its own, and a piece that stayed looks the same.
//!
//! Each candidate board predicts, for points along the silhouettes of the
//! pieces it moves, what the camera's sight line meets first (the board,
//! a white piece or a black piece) before and after, from the camera pose;
//! where that differs it predicts a change (where another piece of the
//! same colour now stands in the way, it cannot say). The picture shows a change
//! where the brightness moved by more than [`CHANGE_LUMA`]. A change the
//! candidate does not predict is strong evidence against it (the picture
//! does not change by itself between two settled frames); a predicted
//! change that does not show is weak (a black piece in front of a dark
//! square changes the brightness little).

use shakmaty::{Bitboard, Board, Color, Role, Square};

use crate::vision::image::{luma, RgbImage};
use crate::vision::orientation::Side;
use crate::vision::viewpoint::Viewpoint;

/// Brightness change (0-255) that counts a sample as changed: the motion
/// detector's pixel threshold (`vision::motion::PIXEL_DIFF`), well above
/// webcam noise after the renderer's and camera's blur.
pub const CHANGE_LUMA: f32 = 30.0;

/// Piece heights in square sides: FIDE 2022 recommendations (king 9.5 cm,
/// queen 8.5, bishop 7, knight 6, rook 5.5, pawn 5) on a 5.5 cm square
/// (`../shared/reference/hardware.md`); small sets scale both alike.
pub fn role_height(role: Role) -> f64 {
    let cm = match role {
        Role::Pawn => 5.0,
        Role::Knight => 6.0,
        Role::Bishop => 7.0,
        Role::Rook => 5.5,
        Role::Queen => 8.5,
        Role::King => 9.5,
    };
    cm / 5.5
}

/// Heights along a silhouette that are sampled, as fractions of the
/// piece's height, base to top: the base is all there is to see of a piece
/// whose upper part falls where another piece stood behind it.
const SAMPLE_HEIGHTS: [f64; 8] = [0.05, 0.15, 0.25, 0.35, 0.5, 0.65, 0.8, 0.92];
/// Sideways offsets (square sides) across the silhouette, inside the
/// narrowest piece's body (a pawn's neck is about 0.25 square across).
const SAMPLE_OFFSETS: [f64; 3] = [-0.12, 0.0, 0.12];

/// Pieces are upright cylinders between two sizes: surely inside within
/// `INNER_RADIUS` of the axis and `INNER_HEIGHT` of the piece's height
/// (the sample offsets lie inside every body), surely outside beyond
/// `OUTER_RADIUS` and `OUTER_HEIGHT` (a knight's head or a king's base is
/// about 0.6 square across; sets differ from the FIDE heights by a tenth).
/// A sight line whose first meeting depends on which size is used says
/// nothing.
const INNER_RADIUS: f64 = 0.13;
const OUTER_RADIUS: f64 = 0.3;
const INNER_HEIGHT: f64 = 0.9;
const OUTER_HEIGHT: f64 = 1.1;

/// Weight of a predicted change that does not show, against 1 for a change
/// that shows where none is predicted: weaker evidence, since a piece of
/// about the brightness of what it covers (a black king's base on dark
/// green vinyl) changes little. Judging samples point by point, without
/// the neighbourhoods below, the true `Kf8` of the bench game that stalled
/// there had 16 of 46 telling samples predicted and not seen and none seen
/// unpredicted, while `Ke7` and "nothing changed" had 24 and 26 seen
/// unpredicted.
pub const MISSING_WEIGHT: f32 = 0.5;

/// Fewest telling samples (where the candidates predict different things)
/// for [`explain_change`] to say anything.
pub const MIN_TELLING_SAMPLES: usize = 6;

fn centre(side: Side, sq: Square) -> [f64; 2] {
    let (c, r) = side.cell_of_square(sq as usize);
    [c as f64 + 0.5, r as f64 + 0.5]
}

/// What a sight line meets first: the board (or the table beyond it), or
/// a piece of a colour standing on a square.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Meets {
    Board,
    Piece(Color, Square),
}

/// What a candidate predicts for one sample.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Predicts {
    /// The sight line meets what it met before: no change.
    Same,
    /// It meets the board where it met a piece, a piece where it met the
    /// board, or a piece of the other colour: a change.
    Change,
    /// It meets another piece of the colour it met before: whether that
    /// shows hangs on the two pieces' shapes and shading, which the
    /// cylinders do not know. Standard bench (vinyl/low robot game): the
    /// played `...Nf6` uncovered the g7 pawn the g8 knight had stood in
    /// front of, 8 samples there changed, and predicting "no change" for
    /// them put `...g6` level with it.
    Either,
}

impl Predicts {
    fn of(was: Meets, now: Meets) -> Predicts {
        match (was, now) {
            (a, b) if a == b => Predicts::Same,
            (Meets::Piece(a, _), Meets::Piece(b, _)) if a == b => Predicts::Either,
            _ => Predicts::Change,
        }
    }
}

/// A board's pieces as cylinders: (axis, height, colour, square).
type Cylinders = Vec<([f64; 2], f64, Color, Square)>;

fn cylinders(side: Side, board: &Board) -> Cylinders {
    board
        .occupied()
        .into_iter()
        .filter_map(|q| {
            let piece = board.piece_at(q)?;
            Some((centre(side, q), role_height(piece.role), piece.color, q))
        })
        .collect()
}

/// What the sight line from the camera through the point `x` (grid units,
/// height last) meets first among `pieces`, with `radius` and `scale`
/// times their height, or the board.
fn first_met(view: &Viewpoint, x: [f64; 3], pieces: &Cylinders, radius: f64, scale: f64) -> Meets {
    let c = view.centre;
    let d = [x[0] - c[0], x[1] - c[1], x[2] - c[2]];
    if d[2] >= -1e-12 {
        return Meets::Board;
    }
    // Along c + t d: x is at t = 1, the board at t_ground.
    let t_ground = -c[2] / d[2];
    let a = d[0] * d[0] + d[1] * d[1];
    let mut best = (t_ground, Meets::Board);
    for &(q, h, colour, sq) in pieces {
        let (ox, oy) = (c[0] - q[0], c[1] - q[1]);
        let cc = ox * ox + oy * oy - radius * radius;
        // Where the line is within `radius` of the axis.
        let (t1, t2) = if a < 1e-12 {
            if cc > 0.0 {
                continue;
            }
            (0.0, f64::INFINITY)
        } else {
            let b = 2.0 * (ox * d[0] + oy * d[1]);
            let disc = b * b - 4.0 * a * cc;
            if disc < 0.0 {
                continue;
            }
            let r = disc.sqrt();
            ((-b - r) / (2.0 * a), (-b + r) / (2.0 * a))
        };
        // The line comes down to the piece's top at t_top.
        let t_top = (h * scale - c[2]) / d[2];
        let enter = t1.max(t_top).max(0.0);
        if enter <= t2 && enter < best.0 {
            best = (enter, Meets::Piece(colour, sq));
        }
    }
    best.1
}

/// What the sight line through `x` meets on `pieces`, or `None` when the
/// answer hangs on the pieces' exact size.
fn meets(view: &Viewpoint, x: [f64; 3], pieces: &Cylinders) -> Option<Meets> {
    let inner = first_met(view, x, pieces, INNER_RADIUS, INNER_HEIGHT);
    let outer = first_met(view, x, pieces, OUTER_RADIUS, OUTER_HEIGHT);
    (inner == outer).then_some(inner)
}

/// Whether a piece of `pieces` on another square than `own` may stand
/// between the camera and the point `x` (grid units, height last), at its
/// widest and tallest: what shows at `x` may then be that piece, and a
/// change there (or none) says nothing about `own`.
fn maybe_hidden(view: &Viewpoint, x: [f64; 3], pieces: &Cylinders, own: Square) -> bool {
    pieces.iter().any(|&(q, h, _, sq)| {
        sq != own && view.hidden_from([x[0], x[1]], x[2], q, OUTER_RADIUS, h * OUTER_HEIGHT)
    })
}

/// Radius (square sides) of the neighbourhood where a predicted change
/// may show: pieces stand off-centre (the scripted person leaves one in
/// four up to 0.22 square off; people do too), so a piece that arrived may
/// change the picture a little beside where its silhouette is predicted.
const NEIGHBOURHOOD: f64 = 0.2;

/// Radius (square sides) of the neighbourhood that must have changed for
/// an unpredicted change to count: most of it ([`UNPREDICTED_SHARE`]), so
/// that the sample lies inside a changed area and not at the edge of one
/// (a piece put down a little off its square, another piece's shading
/// where it now stands in front); small enough to fit inside a king's
/// neck (0.1 square across, half of which is the sample's own offset).
const CORE: f64 = 0.06;

/// See [`CORE`].
const UNPREDICTED_SHARE: f32 = 0.5;

/// The change seen around one sample: whether any point of its
/// [`NEIGHBOURHOOD`] changed, and the share of its [`CORE`] that did.
struct Seen {
    any: bool,
    share: f32,
}

/// [`Seen`] at the point `x` (grid units, height last), from the picture
/// at `x` and at points around it, across the line of sight and up, at the
/// scale of that spot. `None` when the point is outside either image.
fn seen_change(
    before: &RgbImage,
    after: &RgbImage,
    view: &Viewpoint,
    x: [f64; 3],
    across: [f64; 2],
) -> Option<Seen> {
    let centre = view.project(x[0], x[1], x[2])?;
    let side = view.project(x[0] + across[0], x[1] + across[1], x[2])?;
    let up = view.project(x[0], x[1], x[2] + 1.0)?;
    // Picture offsets of one square side across and up.
    let a = [side[0] - centre[0], side[1] - centre[1]];
    let b = [up[0] - centre[0], up[1] - centre[1]];
    let changed = |u: f64, v: f64| -> Option<bool> {
        Some((luma(before.sample(u, v)?) - luma(after.sample(u, v)?)).abs() > CHANGE_LUMA)
    };
    changed(centre[0], centre[1])?;
    let ring = |r: f64| -> (usize, usize) {
        let (mut n, mut hits) = (0, 0);
        for i in -1..=1 {
            for j in -1..=1 {
                let (fi, fj) = (f64::from(i) * r, f64::from(j) * r);
                let u = centre[0] + fi * a[0] + fj * b[0];
                let v = centre[1] + fi * a[1] + fj * b[1];
                if let Some(c) = changed(u, v) {
                    n += 1;
                    hits += usize::from(c);
                }
            }
        }
        (n, hits)
    };
    let (_, wide) = ring(NEIGHBOURHOOD);
    let (n, core) = ring(CORE);
    Some(Seen {
        any: wide > 0 || core > 0,
        share: core as f32 / n as f32,
    })
}

/// Fewest samples that must tell two candidates apart (predict a change
/// for one and not the other) for [`Fit::margin_to`] to compare them: a
/// sample or two is one offset of one piece, as easily a piece put down
/// a little off its square.
pub const MIN_PAIR_SAMPLES: usize = 4;

/// One telling sample as a candidate board sees it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SampleFit {
    /// What the board predicts here.
    pub predicted: Predicts,
    /// What the sample costs the board (see [`explain_change`]).
    pub cost: f32,
}

/// How well one candidate board explains what changed in the picture.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Fit {
    /// Mean cost over the telling samples: 0 is perfect.
    pub cost: f32,
    /// Per telling sample (the same samples, in the same order, for every
    /// candidate of one [`explain_change`]).
    pub samples: Vec<SampleFit>,
}

impl Fit {
    /// A fit known only by its mean cost (given, not measured here):
    /// compared with others by that cost alone.
    pub fn of_cost(cost: f32) -> Fit {
        Fit {
            cost,
            samples: Vec::new(),
        }
    }

    /// How much worse `other` explains the change than `self`: the mean
    /// difference in cost over the samples where the two predict
    /// differently. Where they predict alike they cost the same, so the
    /// comparison is not diluted by samples that only tell third
    /// candidates apart (a bishop's move whose destination reads empty
    /// ties with its six other moves: averaged over all of their samples,
    /// the true `...Bb7` of a held-out bench game led the next by only
    /// 0.084). `None` when fewer than [`MIN_PAIR_SAMPLES`] tell them
    /// apart. Fits without per-sample detail compare their mean costs.
    pub fn margin_to(&self, other: &Fit) -> Option<f32> {
        if self.samples.is_empty() || other.samples.is_empty() {
            return Some(other.cost - self.cost);
        }
        let (n, diff) = self
            .samples
            .iter()
            .zip(&other.samples)
            .filter(|(a, b)| a.predicted != b.predicted)
            .fold((0usize, 0f32), |(n, d), (a, b)| {
                (n + 1, d + b.cost - a.cost)
            });
        (n >= MIN_PAIR_SAMPLES).then(|| diff / n as f32)
    }
}

/// How well each of `candidates` (boards that may stand now) explains
/// what changed in the picture from `before` (which showed
/// `before_board`) to `after`. A telling sample costs a candidate 1 where
/// the picture changed and the candidate predicts no change, and
/// [`MISSING_WEIGHT`] where it predicts a change and none shows; a fit's
/// cost is the mean over the telling samples (0 is a perfect fit).
/// Samples are taken along the silhouettes of the tallest piece on every
/// square some candidate changes, base to top; telling samples are those
/// where the candidates do not all predict alike and no prediction hangs
/// on the pieces' exact size. `None` when fewer than
/// [`MIN_TELLING_SAMPLES`] samples tell them apart.
pub fn explain_change(
    before: &RgbImage,
    after: &RgbImage,
    view: &Viewpoint,
    side: Side,
    before_board: &Board,
    candidates: &[Board],
) -> Option<Vec<Fit>> {
    let was = cylinders(side, before_board);
    let now: Vec<Cylinders> = candidates.iter().map(|b| cylinders(side, b)).collect();
    // Squares some candidate changes, with the tallest piece they hold.
    let mut squares: Vec<(Square, f64)> = Vec::new();
    for b in candidates {
        for sq in Square::ALL {
            if b.piece_at(sq) == before_board.piece_at(sq) {
                continue;
            }
            let h = [b.role_at(sq), before_board.role_at(sq)]
                .into_iter()
                .flatten()
                .map(role_height)
                .fold(0.0, f64::max);
            match squares.iter_mut().find(|e| e.0 == sq) {
                Some(e) => e.1 = e.1.max(h),
                None => squares.push((sq, h)),
            }
        }
    }
    let mut fits = vec![Fit::default(); candidates.len()];
    for &(sq, height) in &squares {
        let (across, points) = silhouette(view, centre(side, sq), height);
        for x in points {
            let Some(was_met) = meets(view, x, &was) else {
                continue;
            };
            let predicted: Option<Vec<Predicts>> = now
                .iter()
                .map(|c| meets(view, x, c).map(|m| Predicts::of(was_met, m)))
                .collect();
            let Some(predicted) = predicted else {
                continue;
            };
            if predicted.iter().all(|&c| c == predicted[0]) {
                continue;
            }
            let Some(seen) = seen_change(before, after, view, x, across) else {
                continue;
            };
            for (fit, &p) in fits.iter_mut().zip(&predicted) {
                let cost = match p {
                    // Predicted: any change nearby will do.
                    Predicts::Change if !seen.any => MISSING_WEIGHT,
                    Predicts::Same if seen.share > UNPREDICTED_SHARE => 1.0,
                    _ => 0.0,
                };
                fit.samples.push(SampleFit { predicted: p, cost });
            }
        }
    }
    let telling = fits.first().map_or(0, |f| f.samples.len());
    if telling < MIN_TELLING_SAMPLES {
        return None;
    }
    for fit in &mut fits {
        fit.cost = fit.samples.iter().map(|s| s.cost).sum::<f32>() / telling as f32;
    }
    Some(fits)
}

/// Most share of a square's samples that may change for its picture to
/// count as unchanged: between settled frames of one position the pieces'
/// silhouettes changed by at most 0.1 in 99.8 % of 15418 measured (two
/// low-view bench games), and an empty square's own pixels change less.
pub const UNCHANGED_SHARE: f32 = 0.1;

/// Which squares' pictures changed between two frames
/// ([`square_changes`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SquareChanges {
    /// At most [`UNCHANGED_SHARE`] of the square's samples changed. A
    /// misread on such a square is no news: it looked the same when the
    /// position was last seen. Only samples no piece on another square
    /// may stand in front of count: seed-71 printed/low (game seed 79),
    /// the pawn leaving g2 from behind the king and bishop, whose samples
    /// hidden behind them made g2 look unchanged (see [`square_changes`]).
    pub unchanged: Bitboard,
    /// More than that changed. Squares with too few samples in the frame
    /// are in neither.
    pub changed: Bitboard,
    /// Occupied squares whose piece hardly stood out from the bare squares
    /// of its colour on the frame before: at most [`UNCHANGED_SHARE`] of
    /// its samples differed from their median luma by more than
    /// [`CHANGE_LUMA`] and the bare squares' own spread, so its picture
    /// could count as unchanged whether it left or not, and an unchanged
    /// picture there does not show it still standing. Seed-71
    /// printed/angled (game seed 76, ply 5): the white pawn leaving c2, a
    /// white square, changed 1 of its 38 visible samples; 4 had stood out
    /// from the white squares' median by more than [`CHANGE_LUMA`], 1 by
    /// more than that and their spread (15); the square still read White
    /// (the bishop on c1 leaning into it), the pawn counted as still
    /// standing there, `c4` was left undecided until the reply came, and
    /// the game stalled for its last 36 moves.
    pub camouflaged: Bitboard,
}

/// How each square's picture changed from `before` to `after`: the
/// middle of the square on the board and the silhouette of the piece
/// `board` has there (of a king on an empty square: whatever arrived
/// would show in it), sampled as in [`explain_change`] where no piece of
/// `board` on another square may stand in front (at its widest and
/// tallest: what shows there may be that piece); and which of `board`'s
/// pieces hardly stood out on `before` ([`SquareChanges::camouflaged`]).
/// Seed-71 printed/low (game seed 79): the pawn stepping from g2 to g3
/// behind the king and the bishop; counted over all of g2's samples, most
/// hidden behind them, its picture looked unchanged while g2 still read
/// White (the pawn on g3 behind it), `g3` paid for emptying a square whose
/// piece still showed, and the game stalled on its first move.
pub fn square_changes(
    before: &RgbImage,
    after: &RgbImage,
    view: &Viewpoint,
    side: Side,
    board: &Board,
) -> SquareChanges {
    /// Points across the middle of a square (fractions of its side).
    const GRID: [f64; 4] = [0.2, 0.4, 0.6, 0.8];
    /// Luma on the frames before and after at each point both show.
    type Lumas = Vec<(f32, f32)>;
    let mut out = SquareChanges::default();
    let pieces = cylinders(side, board);
    // Only the points no other piece may stand in front of: where one
    // does, what shows is that piece.
    let lumas_at = |sq: Square, points: Vec<[f64; 3]>| -> Lumas {
        points
            .into_iter()
            .filter(|&x| !maybe_hidden(view, x, &pieces, sq))
            .filter_map(|x| {
                let [u, v] = view.project(x[0], x[1], x[2])?;
                Some((luma(before.sample(u, v)?), luma(after.sample(u, v)?)))
            })
            .collect()
    };
    // Per square, the samples of its floor and of its piece's silhouette.
    let sampled: Vec<(Square, Lumas, Lumas)> = Square::ALL
        .into_iter()
        .map(|sq| {
            let (c, r) = side.cell_of_square(sq as usize);
            let floor = GRID
                .iter()
                .flat_map(|&u| GRID.iter().map(move |&v| [c as f64 + u, r as f64 + v, 0.0]))
                .collect();
            // The piece there, or on an empty square the tallest that could
            // have arrived (a piece behind a pawn shows only above it).
            let height = role_height(board.role_at(sq).unwrap_or(Role::King));
            let piece = silhouette(view, centre(side, sq), height).1;
            (sq, lumas_at(sq, floor), lumas_at(sq, piece))
        })
        .collect();
    // The bare squares on `before`, dark then light (the floor samples of
    // the squares `board` leaves empty): their median luma, and how far
    // from it all but the outlying tenth of them lie (shading across the
    // board; the printed board's white squares of game seed 76: 15).
    let bare: [Option<(f32, f32)>; 2] = [false, true].map(|light| {
        let mut l: Vec<f32> = sampled
            .iter()
            .filter(|(sq, _, _)| sq.is_light() == light && board.piece_at(*sq).is_none())
            .flat_map(|(_, floor, _)| floor.iter().map(|s| s.0))
            .collect();
        l.sort_by(f32::total_cmp);
        let median = *l.get(l.len() / 2)?;
        let mut off: Vec<f32> = l.iter().map(|x| (x - median).abs()).collect();
        off.sort_by(f32::total_cmp);
        Some((median, off[off.len() * 9 / 10]))
    });
    for (sq, floor, piece) in &sampled {
        let lumas: Vec<&(f32, f32)> = floor.iter().chain(piece).collect();
        let n = lumas.len();
        if n < GRID.len() * GRID.len() / 2 {
            continue;
        }
        // At most `UNCHANGED_SHARE` of the samples.
        let few = |k: usize| k as f32 <= UNCHANGED_SHARE * n as f32;
        let changed = lumas
            .iter()
            .filter(|(a, b)| (a - b).abs() > CHANGE_LUMA)
            .count();
        if few(changed) {
            out.unchanged.add(*sq);
        } else {
            out.changed.add(*sq);
        }
        // How much of the piece stood out from the bare squares of its
        // colour on the frame before, by more than they stray themselves:
        // only there is its leaving sure to change the picture (c2 of game
        // seed 76: 4 of 38 samples stood out by more than CHANGE_LUMA, 1
        // by more than that and the white squares' spread, 1 changed).
        let floor_luma = bare[usize::from(sq.is_light())];
        if let (true, Some((bare, spread))) = (board.occupied().contains(*sq), floor_luma) {
            let shown = lumas
                .iter()
                .filter(|(a, _)| (a - bare).abs() > CHANGE_LUMA + spread)
                .count();
            if few(shown) {
                out.camouflaged.add(*sq);
            }
        }
    }
    out
}

/// The sample points of the silhouette of a piece `height` tall standing
/// at grid point `p` ([`SAMPLE_HEIGHTS`] x [`SAMPLE_OFFSETS`]), with the
/// horizontal direction across the line of sight they are offset along
/// (any direction when looking straight down on `p`).
fn silhouette(view: &Viewpoint, p: [f64; 2], height: f64) -> ([f64; 2], Vec<[f64; 3]>) {
    let (dx, dy) = (view.centre[0] - p[0], view.centre[1] - p[1]);
    let l = dx.hypot(dy);
    let across = if l > 1e-9 {
        [-dy / l, dx / l]
    } else {
        [1.0, 0.0]
    };
    let points = SAMPLE_HEIGHTS
        .iter()
        .flat_map(|&f| {
            SAMPLE_OFFSETS
                .iter()
                .map(move |&o| [p[0] + across[0] * o, p[1] + across[1] * o, f * height])
        })
        .collect();
    (across, points)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fit(samples: &[(bool, f32)]) -> Fit {
        let samples: Vec<SampleFit> = samples
            .iter()
            .map(|&(change, cost)| SampleFit {
                predicted: if change {
                    Predicts::Change
                } else {
                    Predicts::Same
                },
                cost,
            })
            .collect();
        let cost = samples.iter().map(|s| s.cost).sum::<f32>() / samples.len() as f32;
        Fit { cost, samples }
    }

    #[test]
    fn margins_are_taken_where_two_candidates_differ() {
        // Four samples tell a and b apart (b costs 1 on three, 0.5 on one
        // more than a); eight more only told third candidates apart.
        let mut a = vec![(true, 0.0); 3];
        a.push((false, 0.0));
        let mut b = vec![(false, 1.0); 3];
        b.push((true, 0.5));
        for _ in 0..8 {
            a.push((false, 0.0));
            b.push((false, 0.0));
        }
        let (a, b) = (fit(&a), fit(&b));
        assert!((a.margin_to(&b).unwrap() - 0.875).abs() < 1e-6);
        assert!((b.margin_to(&a).unwrap() + 0.875).abs() < 1e-6);
        // The means alone would say 0.29.
        assert!((b.cost - a.cost - 3.5 / 12.0).abs() < 1e-6);
        // Too few samples tell them apart: no comparison.
        let c = fit(&[(true, 0.0), (false, 0.0), (false, 0.0), (false, 0.0)]);
        let d = fit(&[(false, 1.0), (false, 0.0), (false, 0.0), (false, 0.0)]);
        assert_eq!(c.margin_to(&d), None);
        // Given costs compare as they are.
        assert_eq!(Fit::of_cost(0.1).margin_to(&Fit::of_cost(0.5)), Some(0.4));
    }

    #[test]
    fn only_a_piece_nearer_the_camera_hides_a_point() {
        // The camera stands above grid y = 8, 4.4 squares up: a pawn on
        // the cell in front (nearer the camera) hides the floor and the
        // foot of the silhouette on the cell behind it, not its top at a
        // king's height; a pawn behind hides nothing, nor does the piece
        // on the point's own square.
        let (_, view) = crate::vision::viewpoint::oblique_test_view();
        let pawn = |cell: [f64; 2], sq: Square| (cell, role_height(Role::Pawn), Color::White, sq);
        let in_front = vec![pawn([3.5, 4.5], Square::D4)];
        let behind = vec![pawn([3.5, 2.5], Square::D6)];
        let floor = [3.5, 3.5, 0.0];
        assert!(maybe_hidden(&view, floor, &in_front, Square::D5));
        assert!(maybe_hidden(&view, [3.5, 3.5, 0.2], &in_front, Square::D5));
        assert!(!maybe_hidden(&view, [3.5, 3.5, 1.6], &in_front, Square::D5));
        assert!(!maybe_hidden(&view, floor, &in_front, Square::D4));
        assert!(!maybe_hidden(&view, floor, &behind, Square::D5));
    }

    #[test]
    fn heights_follow_the_fide_recommendation() {
        assert!((role_height(Role::King) - 1.727).abs() < 1e-3);
        assert!((role_height(Role::Rook) - 1.0).abs() < 1e-12);
        assert!(role_height(Role::Queen) > role_height(Role::Bishop));
        assert!(role_height(Role::Bishop) > role_height(Role::Knight));
        assert!(role_height(Role::Knight) > role_height(Role::Pawn));
    }
}
