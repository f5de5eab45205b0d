//! Which legal move a single photo shows, from a known position (and
//! optionally a photo of that position before the move).
//!
//! The photo before, labelled with the known position, teaches the square
//! classifier on this board and light; the photo after is then read with
//! it and every legal move is scored against the reading. Pure: images in,
//! verdict out.

use shakmaty::{Board, Chess, Position};

use super::scoring::{
    by_look, score, BoardObs, Disagreement, Scored, SquareObs, Verdict, DECIDE_POSTERIOR,
};
use super::RecognitionError;
use crate::vision::image::RgbImage;
use crate::vision::locate::BoardLocation;
use crate::vision::orientation::{Side, ALL_SIDES};
use crate::vision::pipeline::{self, FrameReading, ReadOptions, Reference};
use crate::vision::squares::CalibratedModel;
use crate::vision::{Occupancy, Occupant as VisionOccupant};

/// What the caller knows about the photos.
#[derive(Debug, Clone, Default)]
pub struct PhotoOptions {
    pub white_at: Option<Side>,
    /// The board's location (calibration), checked before use.
    pub location: Option<BoardLocation>,
}

/// The verdict on one photo.
#[derive(Debug, Clone)]
pub struct PhotoRecognition {
    pub scored: Scored,
    /// Squares of the photo after that contradict the position before.
    pub disagreeing: Vec<Disagreement>,
    pub reading: FrameReading,
    /// Whether a photo before taught the classifier.
    pub calibrated: bool,
    /// Squares that contradict even the recognized move (misreads common
    /// to every hypothesis), when the move was taken despite them.
    pub residual: Vec<Disagreement>,
}

/// A single photo cannot wait for a better frame: a move is taken when it
/// is clearly ahead ([`DECIDE_POSTERIOR`]) and accounts for at least this
/// many squares that differ from the position before (every move changes
/// at least two), even if other squares are misread in every hypothesis
/// alike. The misread squares are reported.
pub const PHOTO_MIN_EXPLAINED: usize = 2;

pub use crate::vision::occupancy_of;

/// The legal moves (at most `max_plies`) after which the board of `pos`
/// has exactly the occupancy `occ`: a person saying what stands on the
/// board when the camera could not tell. `None` when no line of moves
/// reaches it, or more than one final board fits (occupancy cannot tell
/// which piece went where). An empty list: the board already matches.
pub fn moves_to_occupancy(
    pos: &Chess,
    occ: &Occupancy,
    max_plies: usize,
) -> Option<Vec<shakmaty::Move>> {
    if occupancy_of(pos.board()) == *occ {
        return Some(Vec::new());
    }
    // Certain observations with no shadows: nothing is excused.
    let obs = BoardObs::new(std::array::from_fn(|i| {
        SquareObs::certain(match occ[i] {
            VisionOccupant::Empty => super::scoring::Occupant::Empty,
            VisionOccupant::White => super::scoring::Occupant::White,
            VisionOccupant::Black => super::scoring::Occupant::Black,
        })
    }));
    // One photo cannot choose among boards that differ only in which
    // piece stands where.
    let r = super::scoring::resync(pos, &obs, max_plies).filter(|r| !r.tied())?;
    let mut end = pos.clone();
    for m in &r.moves {
        end.play_unchecked(*m);
    }
    (occupancy_of(end.board()) == *occ).then_some(r.moves)
}

/// Observations from a reading (no square covered).
pub fn obs_of_reading(read: &FrameReading) -> BoardObs {
    BoardObs::new(std::array::from_fn(|i| {
        let s = &read.reading.squares[i];
        let total = (s.p_empty + s.p_white + s.p_black).max(f32::EPSILON);
        SquareObs::of_probs(s.p_empty / total, s.p_white / total, s.p_black / total)
    }))
}

/// The side of the image under which `board` best explains `read`.
pub fn best_side(read: &FrameReading, board: &Board) -> Side {
    let here = read.orientation.white_at;
    let mut cells = [[0f32; 3]; 64];
    for r in 0..8 {
        for c in 0..8 {
            let s = &read.reading.squares[here.square_of_cell(c, r)];
            cells[c + 8 * r] = [s.p_empty, s.p_white, s.p_black];
        }
    }
    let ll = |side: Side| -> f64 {
        let obs = BoardObs::new(std::array::from_fn(|sq| {
            let (c, r) = side.cell_of_square(sq);
            let [pe, pw, pb] = cells[c + 8 * r];
            SquareObs::of_probs(pe, pw, pb)
        }));
        obs.log_likelihood(board)
    };
    ALL_SIDES
        .into_iter()
        .map(|s| (s, ll(s)))
        .fold((here, ll(here)), |a, b| if b.1 > a.1 { b } else { a })
        .0
}

/// Recognizes the move from `pos` shown in `after`.
pub fn recognize_photo(
    pos: &Chess,
    after: &RgbImage,
    before: Option<&RgbImage>,
    opts: &PhotoOptions,
) -> Result<PhotoRecognition, RecognitionError> {
    // Orientation: given, else decided on the photo before (it shows `pos`
    // exactly), else on the photo after (one move away from `pos`).
    let first = before.unwrap_or(after);
    let white_at = match opts.white_at {
        Some(s) => s,
        None => {
            let probe = pipeline::read_frame(
                first,
                &ReadOptions {
                    tracked: opts.location.clone(),
                    ..Default::default()
                },
            )?;
            best_side(&probe, pos.board())
        }
    };
    let model: Option<CalibratedModel> = match before {
        Some(img) => Some(pipeline::model_from_reference(&Reference {
            image: img.clone(),
            occupancy: occupancy_of(pos.board()),
            white_at: Some(white_at),
        })?),
        None => None,
    };
    let calibrated = model.is_some();
    let reading = pipeline::read_frame(
        after,
        &ReadOptions {
            white_at: Some(white_at),
            tracked: opts.location.clone(),
            model,
        },
    )?;
    let obs = obs_of_reading(&reading);
    let mut scored = score(pos, &obs);
    // A close call: which squares look as they did in the photo before.
    if let (Verdict::Uncertain, Some(looks)) = (&scored.verdict, &reading.looks) {
        if let Some(v) = by_look(pos, &scored, &obs, looks) {
            scored.verdict = v;
        }
    }
    let disagreeing = obs.disagreements(pos.board());
    let mut residual = Vec::new();
    if let (Verdict::Unexplained { .. }, Some(best)) = (&scored.verdict, scored.hypotheses.first())
    {
        if let (Some(mv), true) = (best.mv, best.posterior >= DECIDE_POSTERIOR) {
            let mut after = pos.clone();
            after.play_unchecked(mv);
            let left = obs.disagreements(after.board());
            if left.len() + PHOTO_MIN_EXPLAINED <= disagreeing.len() {
                scored.verdict = Verdict::of_move(pos, &obs, mv, best.posterior);
                residual = left;
            }
        }
    }
    Ok(PhotoRecognition {
        scored,
        disagreeing,
        reading,
        calibrated,
        residual,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use shakmaty::Square;

    fn after(pos: &Chess, moves: &[&str]) -> Chess {
        let mut p = pos.clone();
        for m in moves {
            let mv = crate::game::parse_move(&p, m).unwrap();
            p.play_unchecked(mv);
        }
        p
    }

    #[test]
    fn a_stated_board_is_reached_by_the_only_line_that_fits() {
        let pos = Chess::default();
        let target = occupancy_of(after(&pos, &["e4", "e5", "Nf3"]).board());
        let line: Vec<String> = moves_to_occupancy(&pos, &target, 4)
            .unwrap()
            .into_iter()
            .map(crate::game::uci_of)
            .collect();
        assert_eq!(line, ["e2e4", "e7e5", "g1f3"]);
        assert_eq!(
            moves_to_occupancy(&pos, &occupancy_of(pos.board()), 4),
            Some(vec![])
        );
        // A white piece from nowhere: no legal line reaches it.
        let mut odd = occupancy_of(pos.board());
        odd[Square::E4 as usize] = VisionOccupant::White;
        assert_eq!(moves_to_occupancy(&pos, &odd, 4), None);
        // Two knights out: Nc3 Nc6 Nf3 Nf6 in any order, one board.
        let four = after(&pos, &["Nc3", "Nc6", "Nf3", "Nf6"]);
        let line = moves_to_occupancy(&pos, &occupancy_of(four.board()), 4).unwrap();
        let mut end = pos.clone();
        for m in line {
            end.play_unchecked(m);
        }
        assert_eq!(end.board(), four.board());
    }
}
