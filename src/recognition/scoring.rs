//! Scoring every legal move against what the camera sees.
//!
//! A robot knows the position before the move, so instead of reading the
//! photo in isolation it asks which legal move best explains the
//! per-square observations. Each hypothesis (a legal move, or "nothing
//! changed") predicts the occupancy of all 64 squares; its log-likelihood
//! is the sum over visible squares of the log-probability the vision gave
//! to the predicted state. The posterior over hypotheses is their softmax.

use super::change::Fit;
use crate::game::uci_line;
use shakmaty::{attacks, Bitboard, Board, Chess, Color, Move, Position, Role, Square};

/// Lowest probability a single square may contribute, so that one
/// confidently misread square costs a bounded amount (ln 1e-3 = -6.9)
/// instead of vetoing the right move outright. A move that needs two such
/// squares to be wrong still loses to one that needs none.
pub const MIN_SQUARE_PROB: f64 = 1e-3;

/// Least probability an empty square in the shadow of a piece (see
/// [`SquareObs::bleed_from`]) gives to being empty, however occupied it
/// looks: such a square reads occupied often enough at low views (rendered
/// frames, low and side views: about one in ten) that seeing it occupied
/// is weak evidence. ln 0.1 = -2.3 against -6.9 for an unshadowed square.
pub const SHADOWED_EMPTY_PROB: f64 = 0.1;

/// Weight a shadowed square's reading keeps in a lost-track search: the
/// same as vision gives a hidden cell (`squares::HIDDEN_TRUST`). At the
/// low view a black knight on f6 read empty and the empty g8 behind f7
/// read occupied made `c5 f4 Nc7 b3` beat the true `Nf6 f4 Nc5 b3` by
/// more than the margin; both squares are in shadows.
pub const SHADOW_TRUST: f64 = 0.3;

/// Whether a piece of `board` stands where it can bleed into the square.
fn shadowed(obs: &SquareObs, board: &Board) -> bool {
    (obs.bleed_from & board.occupied()).any()
}

/// Probability that a square is emptied while its picture does not change
/// ([`super::change::square_changes`], which samples the silhouette of
/// the piece that stood there): a piece leaving is what the picture shows
/// best. Measured on the standard bench (9 x 20, every settled frame
/// whose squares read a move, 162 moves): 1 of 1763 squares emptied
/// looked unchanged (a frame of the printed/low `Rxh2` on which "nothing
/// changed" fitted the picture best); taken as a confidently read square
/// ([`MIN_SQUARE_PROB`]). Filling is not counted: an empty square is
/// sampled up to a king's height, and a pawn put on it changes too little
/// of that (28 of 1273 filled squares looked unchanged; printed/angled:
/// `d4`, `c3` and `e3` on every frame).
/// Seed-11 vinyl/angled (game seed 15, ply 24): the bishop went from f8,
/// behind the king on f7, to g7; `...Bg7` and `...Kg7` tied on the squares
/// (each leaves one shadowed square reading occupied) and on the picture,
/// though f7's picture had not changed, and the game stalled for its last
/// 26 moves. Weighed here, `...Bg7` leads `...Kg7` by 6.9; "nothing
/// changed" 4.6 behind it is ruled out by [`NO_MOVE_CHANGED_PROB`].
pub const UNCHANGED_EMPTIED_PROB: f64 = 0.001;

/// Probability that a square's picture clearly changes
/// ([`super::change::square_changes`]) between two settled frames of one
/// position: at most [`super::change::UNCHANGED_SHARE`] of the pieces'
/// silhouettes changed in 99.8 % of 15418 measured (two low-view bench
/// games). Weighs against "nothing changed" where the picture changed
/// ([`BoardObs::changed_kept_log`]). Seed-11 vinyl/angled (game seed 15,
/// ply 24): the bishop went from f8, behind the king on f7, to g7; the
/// squares put `...Bg7` 4.6 ahead of "nothing changed" (posterior 0.989,
/// short of [`DECIDE_POSTERIOR`]) though the picture had changed on g7
/// and f8, and the game stalled for its last 26 moves.
pub const NO_MOVE_CHANGED_PROB: f64 = 0.002;

/// Most squares whose picture one move changes for the change to count
/// against "nothing changed" ([`BoardObs::changed_kept_log`]): castling
/// changes four squares and, seen from a low angle, the squares behind
/// them; a change over more than a quarter of the board is the light or
/// the camera, which says nothing of whether a piece moved.
pub const MAX_MOVE_CHANGED_SQUARES: usize = 16;

/// A square's state is "confidently" read when its top class has at least
/// this probability; below, it never counts as disagreeing (an uncertain
/// square is a reason to wait, not evidence of an illegal move).
pub const CONFIDENT_STATE: f32 = 0.9;

/// Posterior the best hypothesis needs before it is committed. With
/// calibrated per-square probabilities this means less than one wrong
/// commit per hundred decisions even before the tracker's requirement of
/// several agreeing reads multiplies the margin.
pub const DECIDE_POSTERIOR: f64 = 0.99;

/// What occupies a square, as vision reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
pub enum Occupant {
    Empty,
    White,
    Black,
}

impl Occupant {
    pub fn of(board: &Board, sq: Square) -> Occupant {
        match board.color_at(sq) {
            None => Occupant::Empty,
            Some(Color::White) => Occupant::White,
            Some(Color::Black) => Occupant::Black,
        }
    }

    pub fn letter(self) -> char {
        match self {
            Occupant::Empty => '.',
            Occupant::White => 'W',
            Occupant::Black => 'B',
        }
    }
}

/// Vision's view of one square.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SquareObs {
    pub p_empty: f32,
    pub p_white: f32,
    pub p_black: f32,
    /// Covered by a hand or the arm: says nothing about the square.
    pub occluded: bool,
    /// Squares whose piece can make this square look occupied when it is
    /// empty (a piece nearer the camera leaning into the view), from the
    /// camera pose; empty when the pose is unknown (then only the one
    /// neighbour excuse of [`MAX_EXCUSED_NEIGHBOUR`] applies).
    pub bleed_from: Bitboard,
}

impl SquareObs {
    /// A certain observation of a state (tests, ground truth).
    pub fn certain(o: Occupant) -> SquareObs {
        match o {
            Occupant::Empty => SquareObs::of_probs(1.0, 0.0, 0.0),
            Occupant::White => SquareObs::of_probs(0.0, 1.0, 0.0),
            Occupant::Black => SquareObs::of_probs(0.0, 0.0, 1.0),
        }
    }

    pub fn occluded() -> SquareObs {
        SquareObs {
            occluded: true,
            ..SquareObs::of_probs(1.0 / 3.0, 1.0 / 3.0, 1.0 / 3.0)
        }
    }

    /// A visible square with these probabilities and nothing else known.
    pub fn of_probs(p_empty: f32, p_white: f32, p_black: f32) -> SquareObs {
        SquareObs {
            p_empty,
            p_white,
            p_black,
            occluded: false,
            bleed_from: Bitboard::EMPTY,
        }
    }

    pub fn p(&self, o: Occupant) -> f32 {
        match o {
            Occupant::Empty => self.p_empty,
            Occupant::White => self.p_white,
            Occupant::Black => self.p_black,
        }
    }

    /// The most likely state and its probability.
    pub fn best(&self) -> (Occupant, f32) {
        [Occupant::Empty, Occupant::White, Occupant::Black]
            .into_iter()
            .map(|o| (o, self.p(o)))
            .fold(
                (Occupant::Empty, f32::MIN),
                |a, b| if b.1 > a.1 { b } else { a },
            )
    }
}

/// The 64 observations of a frame, indexed by `Square as usize` (a1 = 0).
#[derive(Debug, Clone, PartialEq)]
pub struct BoardObs {
    pub squares: [SquareObs; 64],
    /// How badly each of the boards vying to explain the squares (after
    /// a move, after a short sequence of moves when track was lost, or
    /// the position before: "nothing changed") explains what changed in
    /// the picture since the last settled frame of the position before
    /// ([`super::change::explain_change`]); empty when not measured (no
    /// reference frame, no camera pose, no close call).
    pub change: Vec<ChangeFit>,
    /// Squares whose picture has not changed since that frame
    /// ([`super::change::square_changes`]); empty when not measured.
    pub unchanged: Bitboard,
    /// Occupied squares whose piece hardly stood out on that frame
    /// ([`super::change::SquareChanges::camouflaged`]): their unchanged
    /// picture does not show the piece still there
    /// ([`BoardObs::still_looks_occupied`]). Measured with `unchanged`.
    pub camouflaged: Bitboard,
    /// Squares whose picture clearly changed since that frame (measured
    /// with `unchanged`; a square with too few samples is in neither): if
    /// nothing was moved, they are unlikely
    /// ([`BoardObs::changed_kept_log`]).
    pub changed: Bitboard,
    /// The squares occupied in the position that frame showed, when
    /// `unchanged` was measured against it: a move that empties an
    /// unchanged square is then unlikely
    /// ([`BoardObs::unchanged_emptied_log`]).
    /// `None` when not known (`unchanged` then only excuses misreads and
    /// vetoes picture picks).
    pub reference_occupied: Option<Bitboard>,
    /// Squares that read likeliest what they read on that frame (visible
    /// ones; measured with `unchanged`): a move must change the reading
    /// of some square it changes ([`brings_news`]).
    pub reads_as_before: Bitboard,
    /// Squares whose picture changed since that frame (the complement of
    /// `unchanged`: squares with too few samples to tell count as
    /// changed), measured on a board no move explains so that the
    /// lost-track search may move a piece off a square that still reads
    /// occupied; empty when not measured.
    pub changed_in_picture: Bitboard,
    /// When the picture picked a move the squares had not: that move's
    /// board first, then the board after every other legal move, measured
    /// together against the change in the picture ([`beats_rivals`]).
    /// `None` when not measured; empty when too few samples told them
    /// apart.
    pub picture_rivals: Option<Vec<ChangeFit>>,
}

/// One hypothetical board's fit to the change in the picture.
#[derive(Debug, Clone, PartialEq)]
pub struct ChangeFit {
    pub board: Board,
    pub fit: Fit,
}

impl BoardObs {
    pub fn new(squares: [SquareObs; 64]) -> BoardObs {
        BoardObs {
            squares,
            change: Vec::new(),
            unchanged: Bitboard::EMPTY,
            camouflaged: Bitboard::EMPTY,
            changed: Bitboard::EMPTY,
            reference_occupied: None,
            reads_as_before: Bitboard::EMPTY,
            changed_in_picture: Bitboard::EMPTY,
            picture_rivals: None,
        }
    }

    /// Certain observations of a board's occupancy.
    pub fn of_board(board: &Board) -> BoardObs {
        BoardObs::new(std::array::from_fn(|i| {
            SquareObs::certain(Occupant::of(board, Square::new(i as u32)))
        }))
    }

    pub fn get(&self, sq: Square) -> &SquareObs {
        &self.squares[sq as usize]
    }

    /// The squares' readings with nothing of the picture measured.
    pub fn squares_alone(&self) -> BoardObs {
        BoardObs::new(self.squares)
    }

    /// Whether anything of the change in the picture was measured.
    pub fn picture_measured(&self) -> bool {
        !self.change.is_empty()
            || self.unchanged.any()
            || self.changed.any()
            || self.reference_occupied.is_some()
            || self.picture_rivals.is_some()
    }

    pub fn set(&mut self, sq: Square, obs: SquareObs) {
        self.squares[sq as usize] = obs;
    }

    pub fn any_occluded(&self) -> bool {
        self.squares.iter().any(|s| s.occluded)
    }

    /// How the hypothetical `board` fits the change, when measured.
    pub fn change_fit(&self, board: &Board) -> Option<&Fit> {
        self.change
            .iter()
            .find(|c| c.board == *board)
            .map(|c| &c.fit)
    }

    /// Log-likelihood of the occupancy of `board` under these observations.
    /// An empty square in the shadow of one of the board's pieces may
    /// look occupied: its term is at least [`SHADOWED_EMPTY_PROB`].
    pub fn log_likelihood(&self, board: &Board) -> f64 {
        self.sum_terms(board, |p, want, shadowed| {
            let p = p.max(MIN_SQUARE_PROB);
            if want == Occupant::Empty && shadowed {
                p.max(SHADOWED_EMPTY_PROB)
            } else {
                p
            }
        })
    }

    /// [`BoardObs::log_likelihood`] for lost-track searches, which weigh
    /// whole lines of moves on one frame: a square in the shadow of one of
    /// `board`'s pieces says little either way (a phantom where it is
    /// empty, the piece in front where its own piece is hidden), so its
    /// probabilities keep only [`SHADOW_TRUST`] of their weight. Two lines
    /// that differ only on shadowed squares then stay within the resync
    /// margin, and the person is asked.
    pub fn wary_log_likelihood(&self, board: &Board) -> f64 {
        self.sum_terms(board, |p, _, shadowed| {
            let p = if shadowed {
                SHADOW_TRUST * p + (1.0 - SHADOW_TRUST) / 3.0
            } else {
                p
            };
            p.max(MIN_SQUARE_PROB)
        })
    }

    /// Sum over the visible squares of ln `prob(p, want, shadowed)`: `p` is
    /// the probability vision gave to what `board` has there (`want`), and
    /// `shadowed` whether one of `board`'s pieces can bleed into it.
    fn sum_terms(&self, board: &Board, prob: impl Fn(f64, Occupant, bool) -> f64) -> f64 {
        Square::ALL
            .iter()
            .filter(|sq| !self.get(**sq).occluded)
            .map(|&sq| {
                let obs = self.get(sq);
                let want = Occupant::of(board, sq);
                prob(f64::from(obs.p(want)), want, shadowed(obs, board)).ln()
            })
            .sum()
    }

    /// Where the picture was measured against a reference frame: ln
    /// [`UNCHANGED_EMPTIED_PROB`] for every square `board` empties whose
    /// piece still shows there ([`BoardObs::still_looks_occupied`]); 0
    /// when not measured. Added to [`BoardObs::log_likelihood`] when one
    /// move is scored ([`score`]), not in the lost-track search: a piece
    /// leaving from in front of another of its colour can leave the
    /// picture as it was (seed-31 wooden/low, game seed 37: the bishop
    /// taking on d2 from h6, in front of the h7 pawn at the low view),
    /// and the search, weighing lines that empty several squares, lost
    /// the true `b4 Bxd2+` to it and the game its last 26 moves.
    pub fn unchanged_emptied_log(&self, board: &Board) -> f64 {
        let emptied = self.reference_occupied.map_or(0, |was| {
            (was & !board.occupied())
                .into_iter()
                .filter(|&sq| self.still_looks_occupied(sq))
                .count()
        });
        emptied as f64 * UNCHANGED_EMPTIED_PROB.ln()
    }

    /// Squares `board` empties whose piece still shows there
    /// ([`BoardObs::still_looks_occupied`]) with no piece of `board`
    /// standing behind them (on a square whose [`SquareObs::bleed_from`]
    /// holds them) to fill the view the piece left. A piece taken away
    /// from in front of another can leave the picture as it was (the
    /// bishop leaving h6 in front of the h7 pawn, see
    /// [`BoardObs::unchanged_emptied_log`]); with nothing behind, what
    /// still shows there unchanged is the piece itself. Seed-41
    /// printed/angled (game seed 46, ply 10): White's h2 pawn put on g4,
    /// an illegal move not yet taken back, was resynced as
    /// `h3 Bg4 hxg4`, which takes the bishop off c8 (read Black at 1.000,
    /// its picture unchanged, on the back rank with nothing behind it),
    /// c8's reading excused as the c7 pawn leaning into view. Empty where
    /// the picture was not measured against a frame of `before` or the
    /// camera pose is unknown (no shadows: nothing is known to be behind).
    pub fn emptied_in_plain_view(&self, before: &Board, board: &Board) -> Bitboard {
        let pose_known = self.squares.iter().any(|s| s.bleed_from.any());
        if !pose_known || !self.measured_against(before) {
            return Bitboard::EMPTY;
        }
        (before.occupied() & !board.occupied())
            .into_iter()
            .filter(|&sq| self.still_looks_occupied(sq))
            .filter(|&sq| {
                !Square::ALL.iter().any(|&behind| {
                    board.occupied().contains(behind) && self.get(behind).bleed_from.contains(sq)
                })
            })
            .collect()
    }

    /// Where the picture was measured, `board` is the position it was
    /// measured against ("nothing changed": every move empties the square
    /// it leaves, so no move keeps the occupancy) and it does not explain
    /// the change in the picture (its change cost is above [`FIT_COST`]):
    /// ln [`NO_MOVE_CHANGED_PROB`] for every visible square whose picture
    /// clearly changed ([`BoardObs::changed`]), unless more than
    /// [`MAX_MOVE_CHANGED_SQUARES`] did (the light or the camera, not a
    /// piece); 0 otherwise. Where "nothing changed" fits the change, the
    /// change is not where a piece would have moved: standard bench
    /// (vinyl/low robot game, seed 8): a hand held still over the far
    /// side of the board changed d6 and e8, "nothing changed" fitted at
    /// 0.038 against 0.085 for `...d6`, and counting the two squares
    /// against it committed `...d6` for the `...Nxe4` the hand was making.
    pub fn changed_kept_log(&self, board: &Board) -> f64 {
        let explains = self.change_fit(board).is_none_or(|f| f.cost <= FIT_COST);
        if !self.measured_against(board) || explains {
            return 0.0;
        }
        let changed = self
            .changed
            .into_iter()
            .filter(|&sq| !self.get(sq).occluded)
            .count();
        if changed > MAX_MOVE_CHANGED_SQUARES {
            return 0.0;
        }
        changed as f64 * NO_MOVE_CHANGED_PROB.ln()
    }

    /// The log-likelihood [`score`] gives one move's (or no move's) board:
    /// [`BoardObs::log_likelihood`] plus
    /// [`BoardObs::unchanged_emptied_log`] and
    /// [`BoardObs::changed_kept_log`].
    pub fn one_move_log_likelihood(&self, board: &Board) -> f64 {
        self.log_likelihood(board)
            + self.unchanged_emptied_log(board)
            + self.changed_kept_log(board)
    }

    /// Whether the piece that stood on `sq` when the picture was last
    /// seen still shows there: its picture did not change and the square
    /// reads occupied confidently ([`CONFIDENT_STATE`]). Where it reads
    /// empty the piece never showed (a cream bishop on a cream square of
    /// the vinyl board, seen from above: seed-31 vinyl/overhead, game seed
    /// 32, ply 11, `Bxd5` from g2), and where it reads occupied only
    /// faintly it may be hidden behind nearer pieces, whose picture is what
    /// did not change (seed-31 wooden/low, game seed 37: `...gxh4` from
    /// g5, seen past White's pawns): either way an unchanged picture says
    /// nothing of whether the piece left. Nor where the piece hardly stood
    /// out from its square ([`BoardObs::camouflaged`]): its leaving would
    /// not have changed the picture.
    fn still_looks_occupied(&self, sq: Square) -> bool {
        self.unchanged.contains(sq) && !self.camouflaged.contains(sq) && self.reads_occupied(sq)
    }

    /// Whether the picture was measured against a frame of `board` (one
    /// with its occupancy: no move keeps the occupancy of its position).
    fn measured_against(&self, board: &Board) -> bool {
        self.reference_occupied == Some(board.occupied())
    }

    /// The squares whose picture has not changed since a frame of `before`
    /// ([`BoardObs::unchanged`]); none where the picture was measured
    /// against a frame of another position or not at all (a robot's move
    /// is checked against the board it should leave, the picture against
    /// the board before it: its target square, left empty, would look
    /// "as before").
    fn unchanged_since(&self, before: &Board) -> Bitboard {
        if self.measured_against(before) {
            self.unchanged
        } else {
            Bitboard::EMPTY
        }
    }

    /// Whether `sq` reads occupied with confidence ([`CONFIDENT_STATE`]).
    fn reads_occupied(&self, sq: Square) -> bool {
        self.get(sq).p(Occupant::Empty) <= 1.0 - CONFIDENT_STATE
    }

    /// These observations, with the picture measured against a frame of
    /// `measured` taken as measured against a frame of `other`, on the
    /// squares where the two boards agree (what was unchanged since the
    /// one is unchanged since the other there); the fits of whole boards
    /// to the change are dropped (they were measured for `measured`'s
    /// candidates). Unchanged as they are where the picture was not
    /// measured against `measured`. For scoring again from the position
    /// before a committed move ([`super::tracker`]'s amendment): the
    /// misreads the frame of the committed move excused stay excused.
    pub fn rebased(&self, measured: &Board, other: &Board) -> BoardObs {
        if !self.measured_against(measured) {
            return self.clone();
        }
        let agree: Bitboard = Square::ALL
            .into_iter()
            .filter(|&sq| measured.piece_at(sq) == other.piece_at(sq))
            .collect();
        BoardObs {
            squares: self.squares,
            change: Vec::new(),
            unchanged: self.unchanged & agree,
            camouflaged: self.camouflaged & agree,
            changed: self.changed & agree,
            reference_occupied: Some(other.occupied()),
            reads_as_before: self.reads_as_before & agree,
            changed_in_picture: self.changed_in_picture & agree,
            picture_rivals: None,
        }
    }

    /// Squares whose confident reading contradicts `board`, with what was
    /// expected and what is seen.
    pub fn disagreements(&self, board: &Board) -> Vec<Disagreement> {
        Square::ALL
            .iter()
            .filter_map(|&sq| {
                let obs = self.get(sq);
                let (seen, p) = obs.best();
                let expected = Occupant::of(board, sq);
                (!obs.occluded && p >= CONFIDENT_STATE && seen != expected).then_some(
                    Disagreement {
                        square: sq,
                        expected,
                        seen,
                    },
                )
            })
            .collect()
    }
}

/// A square that does not show what a position says it should.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Disagreement {
    #[serde(serialize_with = "ser_square")]
    pub square: Square,
    pub expected: Occupant,
    pub seen: Occupant,
}

impl Disagreement {
    /// For people: "e4 should be empty but shows a white piece".
    pub fn describe(&self) -> String {
        fn what(o: Occupant) -> &'static str {
            match o {
                Occupant::Empty => "empty",
                Occupant::White => "a white piece",
                Occupant::Black => "a black piece",
            }
        }
        let shows = match self.seen {
            Occupant::Empty => "is empty",
            Occupant::White => "shows a white piece",
            Occupant::Black => "shows a black piece",
        };
        format!(
            "{} should be {} but {shows}",
            self.square,
            what(self.expected)
        )
    }

    /// All of them in one sentence, the first few named.
    pub fn describe_all(list: &[Disagreement]) -> String {
        /// More than this many squares read as a list nobody follows; the rest are counted.
        const NAMED: usize = 4;
        let mut parts: Vec<String> = list.iter().take(NAMED).map(|d| d.describe()).collect();
        if list.len() > NAMED {
            parts.push(format!("{} more squares differ", list.len() - NAMED));
        }
        parts.join("; ")
    }
}

fn ser_square<S: serde::Serializer>(sq: &Square, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&sq.to_string())
}

/// One explanation of the observations.
#[derive(Debug, Clone, PartialEq)]
pub struct Hypothesis {
    /// The move, or `None` for "nothing changed".
    pub mv: Option<Move>,
    pub log_likelihood: f64,
    /// Softmax over all hypotheses.
    pub posterior: f64,
}

/// What the observations say about the position before.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    /// A move is clearly the best explanation.
    Move {
        mv: Move,
        confidence: f64,
        /// Promotion piece chosen by default: occupancy cannot tell a queen
        /// from a knight; ask or look closer before trusting it.
        promotion_unverified: bool,
        /// A piece the move puts on a square empty before reads the other
        /// colour there ([`arrival_colour_misread`]): a hand held still
        /// over the board looks like that. The tracker holds such a move
        /// longer before committing it.
        colour_excused: bool,
        /// A piece the move puts on a square (empty before, or a capture)
        /// reads empty there, in the open ([`arrival_unseen`]): taken from
        /// the change in the picture, which a hand held still over the
        /// board with the piece shows too. The tracker holds it as long as
        /// a colour misread.
        arrival_unseen: bool,
        /// Decided only with the change in the picture (or a photo's
        /// looks) measured: the squares alone would have decided nothing
        /// or another move. A hand held still over the board changes the
        /// picture as a move does, so the tracker holds such a move a
        /// little longer ([`super::tracker::TrackerConfig::picture_pick_ms`]).
        by_picture: bool,
    },
    /// The board still shows the position before.
    NoChange { confidence: f64 },
    /// Confidently read squares contradict every legal move and the
    /// position before; `disagreeing` lists the squares that differ from
    /// the position before (what to put back).
    Unexplained { disagreeing: Vec<Disagreement> },
    /// No hypothesis is clearly ahead: wait for more frames or ask.
    Uncertain,
}

impl Verdict {
    /// `mv` decided from `pos` on `obs`, with what occupancy cannot vouch
    /// for flagged.
    pub fn of_move(pos: &Chess, obs: &BoardObs, mv: Move, confidence: f64) -> Verdict {
        Verdict::Move {
            mv,
            confidence,
            promotion_unverified: mv.is_promotion(),
            colour_excused: arrival_colour_misread(pos, obs, mv),
            arrival_unseen: arrival_unseen(pos, obs, mv),
            by_picture: false,
        }
    }

    /// Marks a move as decided by the picture or not (`by_picture`;
    /// other verdicts have no such mark).
    fn set_by_picture(&mut self, yes: bool) {
        if let Verdict::Move { by_picture, .. } = self {
            *by_picture = yes;
        }
    }
}

/// All hypotheses, best first, and the decision.
#[derive(Debug, Clone, PartialEq)]
pub struct Scored {
    pub hypotheses: Vec<Hypothesis>,
    pub verdict: Verdict,
}

/// The hypotheses (sorted best first, as [`Scored::hypotheses`]) that the
/// squares cannot tell from the best: within [`RESYNC_MARGIN`] of it.
pub fn contenders(hypotheses: &[Hypothesis]) -> &[Hypothesis] {
    let Some(best) = hypotheses.first().map(|h| h.log_likelihood) else {
        return hypotheses;
    };
    let n = hypotheses
        .iter()
        .take_while(|h| h.log_likelihood >= best - RESYNC_MARGIN)
        .count();
    &hypotheses[..n]
}

/// Promotions that differ only in the piece look identical in occupancy:
/// score one per square pair (the queen), to keep the posterior honest.
fn distinct_moves(pos: &Chess) -> Vec<Move> {
    pos.legal_moves()
        .into_iter()
        .filter(|m| matches!(m.promotion(), None | Some(Role::Queen)))
        .collect()
}

/// The board after `mv` (`None`: the position's own board).
pub fn board_after(pos: &Chess, mv: Option<Move>) -> Board {
    match mv {
        Some(m) => {
            let mut after = pos.clone();
            after.play_unchecked(m);
            after.board().clone()
        }
        None => pos.board().clone(),
    }
}

/// Scores every legal move and "nothing changed" against `obs`. A move
/// decided with the picture measured that the squares alone
/// ([`BoardObs::squares_alone`]) would not have decided is marked
/// `by_picture`.
pub fn score(pos: &Chess, obs: &BoardObs) -> Scored {
    let mut scored = decide(pos, obs);
    if let Verdict::Move { mv, .. } = scored.verdict {
        if obs.picture_measured() {
            let alone = decide(pos, &obs.squares_alone()).verdict;
            let same = matches!(alone, Verdict::Move { mv: m, .. } if m == mv);
            scored.verdict.set_by_picture(!same);
        }
    }
    scored
}

/// [`score`], with no move marked `by_picture`.
fn decide(pos: &Chess, obs: &BoardObs) -> Scored {
    let mut hypotheses: Vec<Hypothesis> = distinct_moves(pos)
        .into_iter()
        .map(|m| Hypothesis {
            mv: Some(m),
            log_likelihood: obs.one_move_log_likelihood(&board_after(pos, Some(m))),
            posterior: 0.0,
        })
        .collect();
    hypotheses.push(Hypothesis {
        mv: None,
        log_likelihood: obs.one_move_log_likelihood(pos.board()),
        posterior: 0.0,
    });
    let max = hypotheses
        .iter()
        .map(|h| h.log_likelihood)
        .fold(f64::NEG_INFINITY, f64::max);
    let total: f64 = hypotheses
        .iter()
        .map(|h| (h.log_likelihood - max).exp())
        .sum();
    for h in &mut hypotheses {
        h.posterior = (h.log_likelihood - max).exp() / total;
    }
    hypotheses.sort_by(|a, b| b.log_likelihood.total_cmp(&a.log_likelihood));

    let best = &hypotheses[0];
    let best_board = board_after(pos, best.mv);
    // A close call the change in the picture may settle.
    let by_picture = || {
        by_change(pos, obs, &hypotheses)
            .map(|(mv, confidence)| Verdict::of_move(pos, obs, mv, confidence))
    };
    let verdict = if !excusable(obs, &news(obs, pos.board(), &best_board), &best_board) {
        // Tell people what to restore: the squares that differ from the
        // position before, not from the nearest legal move. But a legal
        // move that only a piece reading empty where it arrived keeps
        // from explaining the board is asked about, not reported.
        by_picture().unwrap_or_else(|| {
            if best.mv.is_some() && explained_but_for_arrivals(obs, pos.board(), &best_board) {
                Verdict::Uncertain
            } else {
                Verdict::Unexplained {
                    disagreeing: obs.disagreements(pos.board()),
                }
            }
        })
    } else if best.posterior < DECIDE_POSTERIOR {
        by_picture().unwrap_or(Verdict::Uncertain)
    } else {
        match best.mv {
            Some(_) if picture_contradicts(obs, &best_board) => {
                by_picture_among_measured(pos, obs, &hypotheses).unwrap_or_else(|| {
                    if picture_picks_a_line(pos, obs, &hypotheses) {
                        Verdict::Unexplained {
                            disagreeing: obs.disagreements(pos.board()),
                        }
                    } else {
                        Verdict::Uncertain
                    }
                })
            }
            Some(_) if !brings_news(obs, pos.board(), pos.board(), &best_board) => {
                by_picture().unwrap_or(Verdict::Uncertain)
            }
            Some(mv) => Verdict::of_move(pos, obs, mv, best.posterior),
            None => Verdict::NoChange {
                confidence: best.posterior,
            },
        }
    };
    Scored {
        hypotheses,
        verdict,
    }
}

/// Whether some square that `board` changes reads otherwise than on the
/// frame of `before` the picture is measured against
/// ([`BoardObs::reads_as_before`]): a move is something happening, and a
/// board the squares favour only through readings they already gave
/// before it was played is old misreads, not a move. Seed-31 vinyl/low
/// robot game (game seed 38, ply 27, with the calibrated model averaged
/// with the trees on oblique cells, tried and reverted): after the
/// robot's `Rxh4` was verified, the self-taught model still read its
/// rook on h4 Black and Black's queen on d8 empty, as on the verifying
/// frame; those two squares made `...Qxh4` the squares' confident choice
/// (0.998) as the person's hand went for `...b4`, and it was committed
/// (h4's picture had changed on that frame, with g3's and h3's, so "the
/// picture changed where the move moves pieces" would have let it
/// through).
///
/// `since` is the position of the frame the readings are compared with:
/// `before` itself, or for the person's reply to a robot move not yet
/// verified, the position before the robot's move (the reading of a
/// square both moves change is then news only where it differs from
/// before either: a reply that really recaptures also empties a square).
/// True where the picture was not measured against a frame of `since`
/// (nothing is known of it).
pub fn brings_news(obs: &BoardObs, since: &Board, before: &Board, board: &Board) -> bool {
    if !obs.measured_against(since) {
        return true;
    }
    squares_changed(before, board).any(|sq| !obs.reads_as_before.contains(sq))
}

/// Whether a square the committed move from `before` to `after` changed
/// now reads, with confidence, otherwise than `after` has it, and
/// otherwise than on the frame of `after` the picture is measured against
/// ([`BoardObs::reads_as_before`]; any reading counts where it was
/// measured against another frame): the move's own piece went on, and
/// the tracker tries to amend the move. The squares' confident
/// disagreements elsewhere are not asked about: phantoms flicker on
/// unchanged pictures (see [`news`]). Held-out seed 51, wooden/low (game
/// seed 57, ply 19): the queen put down at the edge of d6 for `Qxd7+`
/// while the pawn was carried off was committed as `Qd6`; pushed onto d7
/// she changed d6's picture too little to count, d6 read empty and d7
/// White, and the board passed for the position after `Qd6`.
pub fn rereads_move(obs: &BoardObs, before: &Board, after: &Board) -> bool {
    let measured = obs.measured_against(after);
    let changed: Bitboard = squares_changed(before, after).collect();
    obs.disagreements(after).iter().any(|d| {
        changed.contains(d.square) && !(measured && obs.reads_as_before.contains(d.square))
    })
}

/// The squares whose occupant differs between `before` and `board`.
pub fn squares_changed<'a>(
    before: &'a Board,
    board: &'a Board,
) -> impl Iterator<Item = Square> + 'a {
    Square::ALL
        .into_iter()
        .filter(move |&sq| board.piece_at(sq) != before.piece_at(sq))
}

/// The squares' confident disagreements with `board` that are news: not
/// those on a square `board` leaves as it was `before` whose picture has
/// not changed since the position before was last seen
/// ([`BoardObs::unchanged`]): it read the same then, and that position was
/// taken with it. (Requiring the reading itself to be the same as on
/// that frame, [`BoardObs::reads_as_before`], fixed seed-51 wooden/low's
/// `Qd6` for `Qxd7+` but stalled held-out seed 41's low games, whose
/// phantoms flicker on unchanged pictures: printed/low 36/40 + 4 -> 2/40,
/// wooden/low 36/40 + 4 -> 29/40 + 2; dropped.) Seed-11 vinyl/angled (game seed 15, ply 42): with the
/// black king on e6 in front of the e7 pawn, e7 read empty and f7 and e8
/// White, on pictures unchanged since `Bxa3` was committed; the squares
/// and the picture both chose `...Ne5` (posterior 0.990, change cost 0.038
/// against 0.126 for the next), but those three squares made every move
/// unexplained and the game stalled for its last nine moves.
///
/// Only where the picture was measured against a frame of `before` (its
/// occupancy, [`BoardObs::reference_occupied`]): a robot's move is checked
/// against the board it should leave, while the picture was measured
/// against the board before it, where the square it fills was empty and
/// unchanged (a pawn put on e6 for the robot's `...e5` would leave e5
/// empty "as before", and the misplaced move would pass).
fn news(obs: &BoardObs, before: &Board, board: &Board) -> Vec<Disagreement> {
    let unchanged = obs.unchanged_since(before);
    let mut disagreeing = obs.disagreements(board);
    disagreeing.retain(|d| {
        !(unchanged.contains(d.square) && board.piece_at(d.square) == before.piece_at(d.square))
    });
    disagreeing
}

/// Whether a piece `mv` puts on a square empty before reads the other
/// colour there. Occupancy is read more reliably than colour, so the
/// scoring excuses such a square ([`MAX_EXCUSED_COLOUR`], and the squares
/// a move picked by the picture changes), but a hand held still over the
/// board reads the same way. Seed-21 bench (wooden/angled, played to 42
/// plies): the rook lifted from b8 to take the queen on b7, the hand held
/// still over b7 for about a second, the empty a8 beside it read White
/// (p 1.00), the picture fitted `...Ra8` at 0.0 and `...Ra8` was
/// committed; the motion-only hand detector saw nothing. Refusing such a
/// move outright froze the standard wooden/low game, whose `d3` pawn
/// really read Black on arrival, so the tracker holds it longer instead.
pub fn arrival_colour_misread(pos: &Chess, obs: &BoardObs, mv: Move) -> bool {
    let after = board_after(pos, Some(mv));
    obs.disagreements(&after).iter().any(|d| {
        pos.board().piece_at(d.square).is_none()
            && d.expected != Occupant::Empty
            && d.seen != Occupant::Empty
    })
}

/// Whether a piece `mv` puts on a square (empty before, or a capture:
/// [`reads_empty_on_arrival`]) reads empty there, in the open (not hidden
/// behind another piece nor seen one square on: [`unseen_arrival`]).
/// Only the change in the picture takes such a move
/// ([`agrees_but_where_changed`]): a pale piece on a pale square can read
/// empty for good (held-out seed 41, vinyl/angled, game seed 45, ply 27:
/// White's rook put on a5 read empty at p 0.98 on every frame, the
/// picture fitted `Ra5` at 0.019 against 0.082 for the next, and the game
/// stalled for its last 14 moves). But a piece put down short of its
/// square while the hand takes the captured piece off shows the same way
/// (seed-21 bench, wooden/angled: the rook going to take the queen on b7
/// stood at the edge of b7 and `...Ra8` fitted the picture at 0.017 with
/// a8 reading empty), so the tracker holds such a move as long as one
/// whose piece reads the other colour
/// ([`super::tracker::TrackerConfig::colour_excused_ms`]): the hand comes
/// back within it.
pub fn arrival_unseen(pos: &Chess, obs: &BoardObs, mv: Move) -> bool {
    let after = board_after(pos, Some(mv));
    obs.disagreements(&after)
        .iter()
        .any(|d| reads_empty_on_arrival(pos.board(), d) && !unseen_arrival(obs, &after, d))
}

/// Whether `d` is a piece that a move from `before` puts on a square,
/// empty before or holding a piece of the other colour (a capture), that
/// reads empty there.
///
/// Captures count since the thirty-third session: before it, a capture's
/// arrival reading empty was refused as "the captured piece off, the mover
/// still in the hand", but that board holds a still hand over the board
/// for [`super::tracker::TrackerConfig::colour_excused_ms`] (the flag
/// [`arrival_unseen`]), and the only move it can be is the capture the
/// person is making. Seed-71 wooden/low (game seed 77, ply 11): White's
/// knight took on f7 among Black's pieces and read empty there (p 0.96, a
/// pale piece on a pale square whose own rim it covers); the squares gave
/// `Nxf7` 1.000 and the picture fitted it at 0.000, but the board was
/// unexplained, the lost-track search found no clear line and the game
/// stalled for its last 29 moves.
fn reads_empty_on_arrival(before: &Board, d: &Disagreement) -> bool {
    d.seen == Occupant::Empty
        && d.expected != Occupant::Empty
        && Occupant::of(before, d.square) != d.expected
}

/// Whether `board`, one move from `before`, explains the squares as
/// [`excusable`] but for pieces it puts on empty squares that read empty
/// there. A pale piece on a pale square can read empty with its square's
/// picture barely changed (held-out seed 41, wooden/overhead, game seed
/// 41, ply 29: White's knight put on f3 read empty, the picture changed on
/// g1 alone, and `Ne2`, `Nf3` and `Nh3` tied): that is a legal move the
/// squares cannot tell, to be asked about ([`Verdict::Uncertain`]), not
/// a board to put back as it was (the report said to put the knight back
/// on g1).
fn explained_but_for_arrivals(obs: &BoardObs, before: &Board, board: &Board) -> bool {
    let mut disagreeing = news(obs, before, board);
    let n = disagreeing.len();
    disagreeing.retain(|d| !reads_empty_on_arrival(before, d));
    disagreeing.len() < n && excusable(obs, &disagreeing, board)
}

/// Most change cost ([`ChangeFit`]) of a move chosen by the change in the
/// picture. In the bench game that stalled at `Kf8` (green vinyl, angled
/// camera) the king's move cost 0.02, and `Rh7` (the rook put down off
/// centre) 0.07-0.09 a few moves later.
pub const FIT_COST: f32 = 0.1;

/// Least margin in change cost ([`Fit::margin_to`]: on the samples that
/// tell the two apart) by which every other contender must fit worse than
/// the chosen one. On still renders of six moves at four cameras the
/// played move's nearest rival was 0.43 worse (castling against `Rf1`;
/// `tests/recognition_sim.rs`); half of that leaves room for the hand's
/// off-centre pieces and a webcam's noise. (Averaged over all telling
/// samples instead, the margin shrank with every rival added: the true
/// `...Bb7` of a held-out bench game led the bishop's other moves by only
/// 0.084.)
pub const CHANGE_MARGIN: f32 = 0.2;

/// Most change cost of the end of a lost-track line the squares chose
/// clearly ([`resync`]). Looser than [`FIT_COST`], where the picture picks
/// the move itself: a line moves two to four pieces, and a pale piece
/// leaving or reaching a pale square barely changes the picture (held-out
/// printed/overhead game: the true `Rf7 Bxd2`, played as a quick reply,
/// the white rook going from h7 to f7 on light squares, cost 0.146-0.162
/// against 0.26 for "nothing changed", and was refused at 0.1, freezing
/// the game for its last 18 moves). The wrong lines traced on the benches
/// cost 0.097 and are kept out by [`goes_back`], not by this bound.
pub const RESYNC_FIT_COST: f32 = 0.2;

/// Most legal moves the change in the picture may name
/// ([`named_by_picture`]): more, and the picture changed too widely (a
/// shadow, the light) to name a move. The case it exists for named one.
pub const MAX_PICTURE_NAMED: usize = 3;

/// The legal moves every square of which (left, filled, captured on, the
/// rook's) changed in the picture ([`BoardObs::changed`]), where there are
/// at least one and at most [`MAX_PICTURE_NAMED`]: contenders for the
/// picture to pick ([`by_change`]) however the squares rank them. Seed-61
/// wooden/low (game seed 67, ply 29): `Qxg7` was played with three white
/// phantoms standing (f5, g5 and c8 read White, pieces leaning in from
/// the low corner over a1) and the queen on g7 read Black; `Qg5`, `Qf5`
/// and `Qc8` tied on the squares 9.2 nats ahead of it, each explaining a
/// phantom, and fitted the picture at 0.107-0.156, too poorly to be
/// taken. The picture had changed on g4 and g7 (and e5, h8), of which
/// only `Qxg7` moves pieces, and the game stalled for its last 11 moves.
/// The squares still have their say: the move must agree with them
/// where it did not change the board ([`agrees_but_where_changed`]).
pub fn named_by_picture(pos: &Chess, obs: &BoardObs) -> Vec<Move> {
    if obs.changed.is_empty() {
        return Vec::new();
    }
    let named: Vec<Move> = distinct_moves(pos)
        .into_iter()
        .filter(|&m| {
            let board = board_after(pos, Some(m));
            let moved: Bitboard = squares_changed(pos.board(), &board).collect();
            (moved & !obs.changed).is_empty()
        })
        .collect();
    if named.len() > MAX_PICTURE_NAMED {
        return Vec::new();
    }
    named
}

/// Moves that the squares cannot tell apart (within [`RESYNC_MARGIN`] of
/// the best) are told apart by what changed in the picture since the last
/// frame of the position before ([`BoardObs::change`]): one of them must
/// fit (cost at most [`FIT_COST`]) and every other, "nothing changed"
/// included, must fit worse by at least [`CHANGE_MARGIN`] where the two
/// differ; a contender not measured decides nothing. The squares the
/// chosen move changes are then taken as the picture shows them (a piece
/// put on a square that reads empty there, in the open, is flagged:
/// [`arrival_unseen`]). So are squares whose picture has not changed
/// at all
/// ([`BoardObs::unchanged`]: a misread there is no news, it looked the
/// same when the position was last seen); the rest of the board must be
/// as [`excusable`] as ever. Returns the move and the posterior mass of
/// the moves it was chosen from.
fn by_change(pos: &Chess, obs: &BoardObs, hypotheses: &[Hypothesis]) -> Option<(Move, f64)> {
    let close = contenders(hypotheses);
    let named = named_by_picture(pos, obs);
    let contenders: Vec<&Hypothesis> = close
        .iter()
        .chain(hypotheses[close.len()..].iter().filter(|h| {
            h.mv.is_some_and(|m| named.contains(&m))
                && obs.change_fit(&board_after(pos, h.mv)).is_some()
        }))
        .collect();
    let mut boards: Vec<Board> = contenders.iter().map(|h| board_after(pos, h.mv)).collect();
    // Lines of missed moves measured on a board no move explains are
    // rivals too: the move must beat them, and is not taken when one of
    // them fits best (the tracker's lost-track search decides that).
    let one_ply = boards_of(pos, hypotheses);
    for c in &obs.change {
        if !one_ply.contains(&c.board) && !boards.contains(&c.board) {
            boards.push(c.board.clone());
        }
    }
    let k = pick_by_change(obs, pos.board(), &boards)?;
    let mv = contenders.get(k)?.mv?;
    if !beats_rivals(obs, &boards[k]) {
        return None;
    }
    Some((mv, contenders.iter().map(|h| h.posterior).sum()))
}

/// The boards a move picked by the picture must beat as well as its
/// contenders ([`BoardObs::picture_rivals`]): the board after `picked`
/// first, then the board after every other legal move, then the boards
/// with `picked`'s piece set down beside its destination instead
/// ([`set_down_beside`]).
pub fn rival_boards(pos: &Chess, obs: &BoardObs, picked: Move) -> Vec<Board> {
    let mut boards: Vec<Board> = std::iter::once(picked)
        .chain(distinct_moves(pos).into_iter().filter(|m| *m != picked))
        .map(|m| board_after(pos, Some(m)))
        .collect();
    for b in set_down_beside(pos, obs, picked) {
        if !boards.contains(&b) {
            boards.push(b);
        }
    }
    boards
}

/// The boards of a plain move's piece set down on a square beside its
/// destination (empty after the move, not the square it came from, and
/// not read empty with confidence) instead of on it: an illegal move
/// shown on the board, or a piece put down a square off, which the
/// picture must not take for the legal move beside it. Seed-71
/// vinyl/low robot game (game seed 78, ply 14): the person showed the
/// illegal `e7-f7`; from the low corner camera the pawn on f7 read as on
/// e6, the squares tied `...e6` with `...Kf7`, and the picture, which
/// fitted `...e6` at 0.051 against 0.35 for the king's move and was never
/// shown the pawn on f7, had `...e6` committed 0.2 s after the hand left
/// (it was taken back and `...h5` played).
fn set_down_beside(pos: &Chess, obs: &BoardObs, picked: Move) -> Vec<Board> {
    let Move::Normal { from, to, .. } = picked else {
        return Vec::new();
    };
    let after = board_after(pos, Some(picked));
    let Some(piece) = after.piece_at(to) else {
        return Vec::new();
    };
    (attacks::king_attacks(to) & !after.occupied())
        .into_iter()
        .filter(|&sq| sq != from && obs.get(sq).p(Occupant::Empty) < CONFIDENT_STATE)
        .map(|sq| {
            let mut b = after.clone();
            b.discard_piece_at(to);
            b.set_piece_at(sq, piece);
            b
        })
        .collect()
}

/// Least margin ([`Fit::margin_to`]) by which every legal move other than
/// the one the picture picked must fit the picture worse ([`beats_rivals`]).
/// Half of [`CHANGE_MARGIN`]: the squares had already ruled these moves
/// out (they are not within [`RESYNC_MARGIN`] of the best), so the picture
/// need only not side with them. Standard bench (vinyl/angled, seed 5):
/// the played `...Qg5` led the queen's `...Qe8` by 0.188 (both leave d8,
/// and e8 beside it changes a little as the queen goes); at 0.2 the game
/// lost its last five moves.
pub const RIVAL_MARGIN: f32 = 0.1;

/// Whether `board`, a move the picture picked (the squares had not),
/// also explains the change in the picture better than every other legal
/// move, by [`RIVAL_MARGIN`] where the two differ
/// ([`BoardObs::picture_rivals`]; true when they were not measured). A
/// rival the picture cannot tell from it at all (fewer than
/// [`super::change::MIN_PAIR_SAMPLES`] samples differ: its piece moves
/// out of sight) is left to the squares, which had ruled it out. The
/// contenders are only the moves the squares could not tell apart, and a
/// move the squares missed altogether can change the same part of the
/// picture. Seed-31 wooden/low (game seed 37, ply 32): the squares read
/// "nothing changed" or one of the d7 pawn's moves (e8 still read
/// occupied, d8 empty); the picture changed on c6 and d7, where the king
/// that went to d8 stands behind them at the low view, and `...dxc6`,
/// fitting it at 0.014 against 0.188 for the other contenders, was
/// committed for the played `...Kd8`.
fn beats_rivals(obs: &BoardObs, board: &Board) -> bool {
    let Some(rivals) = &obs.picture_rivals else {
        return true;
    };
    let Some((picked, others)) = rivals.split_first() else {
        return false;
    };
    picked.board == *board
        && others.iter().all(|r| {
            picked
                .fit
                .margin_to(&r.fit)
                .is_none_or(|m| m >= RIVAL_MARGIN)
        })
}

/// Least margin ([`Fit::margin_to`]) by which the picture must fit another
/// measured board better than the squares' confident choice to overturn
/// it: twice [`CHANGE_MARGIN`], since it overrides evidence rather than
/// breaking a tie. Measured on the bench: the squares' `Rh6` for the
/// played `Rxh5` (held-out printed/angled game) fitted 0.43 worse than
/// `Rxh5`; the squares' right `Qxd4` (standard printed/angled game)
/// fitted 0.24 worse than `Qd3`, the queen one square nearer along the
/// line of sight, and at 0.2 the picture committed `Qd3`; the wooden/angled
/// robot game lost 15 moves at 0.2 (a verification held up until the
/// person's quick reply was on the board too).
pub const CONTRADICT_MARGIN: f32 = 0.4;

/// Whether the change in the picture, where measured, clearly speaks
/// against `board` (the squares' confident choice): another measured board
/// fits (cost at most [`FIT_COST`]) and fits better by at least
/// [`CONTRADICT_MARGIN`] where the two differ. Squares can be confidently
/// wrong together (the base of a black rook read as White and its top as
/// a black piece on the square behind it: the rook seen one square on).
fn picture_contradicts(obs: &BoardObs, board: &Board) -> bool {
    let Some(fit) = obs.change_fit(board) else {
        return false;
    };
    obs.change.iter().any(|c| {
        c.board != *board
            && c.fit.cost <= FIT_COST
            && fit
                .margin_to(&c.fit)
                .is_some_and(|m| m <= -CONTRADICT_MARGIN)
    })
}

/// When the picture contradicts the squares' choice: the move (or nothing)
/// among all measured hypotheses that [`pick_by_change`] finds clearly
/// best, with the posterior mass of the measured hypotheses as its
/// confidence (as [`by_change`] gives that of its contenders); `None`
/// (wait) when none is.
fn by_picture_among_measured(
    pos: &Chess,
    obs: &BoardObs,
    hypotheses: &[Hypothesis],
) -> Option<Verdict> {
    let measured: Vec<(&Hypothesis, Board)> = hypotheses
        .iter()
        .map(|h| (h, board_after(pos, h.mv)))
        .filter(|(_, b)| obs.change_fit(b).is_some())
        .collect();
    let boards: Vec<Board> = measured.iter().map(|(_, b)| b.clone()).collect();
    let k = pick_by_change(obs, pos.board(), &boards)?;
    if measured[k].0.mv.is_some() && !beats_rivals(obs, &boards[k]) {
        return None;
    }
    let confidence = measured.iter().map(|(h, _)| h.posterior).sum();
    Some(match measured[k].0.mv {
        Some(mv) => Verdict::of_move(pos, obs, mv, confidence),
        None => Verdict::NoChange { confidence },
    })
}

/// Whether the change in the picture clearly picks ([`pick_by_change`]),
/// among every board measured, the end of a line of missed moves (one no
/// single move or "nothing changed" reaches): the tracker's lost-track
/// search must then weigh it, which it does only for a board called
/// unexplained. Seed-11 vinyl/angled (game seed 15, ply 46): `Rxf8` and
/// the quick reply `...Nxa3` were on the board, the squares read `Rxf8`
/// at 0.997 (a3's misread no news, its picture unchanged), the picture
/// fitted `Rxf8 Nxa3` at 0.032 against 0.255 for `Rxf8` alone, and the
/// verdict "uncertain" left the game waiting for its last six moves.
fn picture_picks_a_line(pos: &Chess, obs: &BoardObs, hypotheses: &[Hypothesis]) -> bool {
    let boards: Vec<Board> = obs.change.iter().map(|c| c.board.clone()).collect();
    pick_by_change(obs, pos.board(), &boards)
        .is_some_and(|k| !boards_of(pos, hypotheses).contains(&boards[k]))
}

/// The board each hypothesis leaves (one move from `pos`, or none).
fn boards_of(pos: &Chess, hypotheses: &[Hypothesis]) -> Vec<Board> {
    hypotheses.iter().map(|h| board_after(pos, h.mv)).collect()
}

/// Of `boards` (the position `before` among them), the one that clearly
/// explains the change in the picture best: it fits (cost at most
/// [`FIT_COST`]), every other fits worse by at least [`CHANGE_MARGIN`],
/// and the squares agree with it except where it changed the board or
/// the picture did not change (see [`by_change`]). `None` when any board
/// is not measured or none is clearly best.
fn pick_by_change(obs: &BoardObs, before: &Board, boards: &[Board]) -> Option<usize> {
    let fits: Option<Vec<&Fit>> = boards.iter().map(|b| obs.change_fit(b)).collect();
    let fits = fits?;
    let (k, best) = fits
        .iter()
        .enumerate()
        .min_by(|a, b| a.1.cost.total_cmp(&b.1.cost))?;
    let clear = fits.iter().enumerate().all(|(j, f)| {
        let needed = if leave_one_behind_the_other(obs, before, &boards[k], &boards[j]) {
            FRONT_BEHIND_MARGIN
        } else {
            CHANGE_MARGIN
        };
        j == k || best.margin_to(f).is_some_and(|m| m >= needed)
    });
    if best.cost > FIT_COST || !clear {
        return None;
    }
    agrees_but_where_changed(obs, before, &boards[k]).then_some(k)
}

/// Least margin ([`Fit::margin_to`]) by which the picture must tell apart
/// two boards whose pieces leave squares one in front of the other
/// ([`leave_one_behind_the_other`]): a piece leaving from behind another
/// changes the picture of the one in front, where the other board has a
/// piece leave. Seed-61 wooden/angled robot game (game seed 64, ply 30):
/// Black's queen went from e8, behind the king on e7, to d8; the squares
/// tied `...Qd8` and `...Kd8` (0.501 / 0.499), and the picture fitted the
/// king's move better by 0.242 and had it committed. As
/// [`CONTRADICT_MARGIN`]: the picture, not the squares, would decide.
pub const FRONT_BEHIND_MARGIN: f32 = CONTRADICT_MARGIN;

/// Whether `a` and `b`, boards after moves from `before`, each empty a
/// square the other does not, one of them in front of the other as the
/// camera sees them (a piece on the one can stand in the view of the
/// other: [`SquareObs::bleed_from`]).
fn leave_one_behind_the_other(obs: &BoardObs, before: &Board, a: &Board, b: &Board) -> bool {
    let emptied = |x: &Board| before.occupied() & !x.occupied();
    let (only_a, only_b) = (emptied(a) & !emptied(b), emptied(b) & !emptied(a));
    only_a.into_iter().any(|x| {
        only_b
            .into_iter()
            .any(|y| obs.get(y).bleed_from.contains(x) || obs.get(x).bleed_from.contains(y))
    })
}

/// Whether the squares agree with `board`, a board chosen by what changed
/// in the picture: except where it changed the position `before` (a piece
/// it puts down may read empty, flagged where it is in the open:
/// [`arrival_unseen`]) and where the picture did not change since a frame
/// of `before` ([`BoardObs::unchanged_since`]), the rest is as
/// [`excusable`] as ever. But
/// some square it changes must not confidently read otherwise (filled or
/// emptied as the move has it, or in the move's colour where a capture
/// changed only that): a move
/// that the squares contradict everywhere it changes the board is the
/// picture's word alone, and the picture cannot tell a capture half made
/// from a whole one. Seed-31 wooden/low (game seed 37): the person took
/// White's bishop off c6 before putting the knight from b8 there; on that
/// settled frame c6 read empty and the d7 pawn behind it black, the
/// picture changed on c6 and d7 (the bishop no longer hid the pawn), and
/// `...dxc6` fitted it at 0.011 against 0.138 for "nothing changed" and
/// was committed.
fn agrees_but_where_changed(obs: &BoardObs, before: &Board, board: &Board) -> bool {
    let mut disagreeing = obs.disagreements(board);
    // A disagreement contradicts the change where the square was to be
    // emptied or filled and reads otherwise, or where the colour alone
    // changed and it reads another (a piece put down in the other colour
    // is a colour misread, occupancy is read far more reliably).
    let fills_or_empties =
        |sq: Square| before.piece_at(sq).is_some() != board.piece_at(sq).is_some();
    let contradicts = |sq: Square| {
        disagreeing.iter().any(|d| {
            d.square == sq
                && (!fills_or_empties(sq)
                    || (d.seen == Occupant::Empty) != (d.expected == Occupant::Empty))
        })
    };
    let changed: Vec<Square> = squares_changed(before, board).collect();
    if !changed.is_empty() && changed.iter().all(|&sq| contradicts(sq)) {
        return false;
    }
    // Nor may it fill or empty a square whose picture did not change at
    // all: that a piece left or arrived is the one thing the picture shows
    // best. Seed-11 vinyl/overhead (game seed 12, ply 12): while the
    // person's hand took White's bishop off a6 (still, unseen by the
    // motion detector), a7 read occupied and the picture changed on a6
    // and a7; `...Ra7` fitted it at 0.0, its rook's samples on a8 counted
    // as seen from the change beside them, and it was committed though
    // a8 had not changed. A piece that never clearly showed (its square
    // does not read occupied with confidence) may have left unseen
    // ([`BoardObs::still_looks_occupied`]), and one that clearly shows
    // where it arrived may have changed the picture too little (seed-11
    // vinyl/angled, game seed 15, ply 42: a black knight put on the dark
    // e5 of the green vinyl, read Black at 1.00 with e5's picture as it
    // was; `...Ne5` fitted the change at 0.038 against 0.126 for the
    // next, and the game stalled for its last nine moves).
    // A square shows as before where its picture did not change and it
    // reads occupied (with confidence) exactly where a piece stood.
    let unchanged = obs.unchanged_since(before);
    let shows_as_before = |sq: Square| {
        unchanged.contains(sq) && obs.reads_occupied(sq) == before.piece_at(sq).is_some()
    };
    if changed
        .iter()
        .any(|&sq| fills_or_empties(sq) && shows_as_before(sq))
    {
        return false;
    }
    disagreeing.retain(|d| {
        let moved_here = board.piece_at(d.square) != before.piece_at(d.square);
        // A piece put on a square that reads empty there: flagged in the
        // open ([`arrival_unseen`]), and held.
        let excused = moved_here
            && (d.seen != Occupant::Empty
                || reads_empty_on_arrival(before, d)
                || unseen_arrival(obs, board, d));
        !excused && !unchanged.contains(d.square)
    });
    excusable(obs, &disagreeing, board)
}

/// How a square looks in a photo against a photo of the position before
/// (each read on its own: a hand-held camera moves between them), from
/// the calibrated model's own looks ([`crate::vision::squares::LookChange`]).
pub use crate::vision::squares::LookChange;

/// Least lead, in squares, of the board chosen by [`pick_by_look`] over
/// every other contender: one square can be a look changed by a piece
/// leaning in differently from the moved camera (of the squares whose
/// occupant stayed between consecutive green vinyl photos, 2-3 % changed
/// their look by more than [`crate::vision::squares::LOOK_CHANGED`]), two
/// together on the squares that tell the contenders apart are news.
pub const LOOK_MARGIN: usize = 2;

/// Of close contenders (`boards`, the position `before` among them when
/// "nothing changed" is one), the one whose changes agree with how the
/// squares' looks changed between the photo before and this one: it
/// counts a square it changes that looks as before, and a square it
/// leaves that clearly looks different. The chosen board must count at
/// least [`LOOK_MARGIN`] fewer than every other, none of the first kind,
/// and the squares must
/// agree with it as with a board chosen by the change in the picture
/// ([`agrees_but_where_changed`], with the squares that look as before as
/// the unchanged ones). `None` when no board is clearly best.
pub fn pick_by_look(
    obs: &BoardObs,
    before: &Board,
    boards: &[Board],
    looks: &[LookChange; 64],
) -> Option<usize> {
    // [squares it changes that look as before, squares it leaves that look changed]
    let counts = |board: &Board| {
        Square::ALL
            .iter()
            .fold([0usize; 2], |[same, changed], &sq| {
                let changes = board.piece_at(sq) != before.piece_at(sq);
                match looks[sq as usize] {
                    LookChange::Same if changes => [same + 1, changed],
                    LookChange::Changed if !changes => [same, changed + 1],
                    _ => [same, changed],
                }
            })
    };
    let total = |c: &[usize; 2]| c[0] + c[1];
    let costs: Vec<[usize; 2]> = boards.iter().map(counts).collect();
    let (k, best) = costs.iter().enumerate().min_by_key(|(_, c)| total(c))?;
    let clear = costs
        .iter()
        .enumerate()
        .all(|(j, c)| j == k || total(c) >= total(best) + LOOK_MARGIN);
    // A move never leaves a square it changes looking as it did.
    if !clear || best[0] > 0 {
        return None;
    }
    let mut obs = obs.clone();
    obs.unchanged = Square::ALL
        .iter()
        .filter(|&&sq| looks[sq as usize] == LookChange::Same)
        .fold(Bitboard::EMPTY, |b, &sq| b | Bitboard::from(sq));
    obs.reference_occupied = Some(before.occupied());
    agrees_but_where_changed(&obs, before, &boards[k]).then_some(k)
}

/// A close call between moves (and "nothing changed") that the squares'
/// looks against the photo before settle ([`pick_by_look`]): the
/// contenders are the hypotheses within [`RESYNC_MARGIN`] of the best, and
/// the verdict's confidence is their posterior mass.
pub fn by_look(
    pos: &Chess,
    scored: &Scored,
    obs: &BoardObs,
    looks: &[LookChange; 64],
) -> Option<Verdict> {
    let contenders = contenders(&scored.hypotheses);
    let boards: Vec<Board> = contenders.iter().map(|h| board_after(pos, h.mv)).collect();
    let k = pick_by_look(obs, pos.board(), &boards, looks)?;
    let confidence = contenders.iter().map(|h| h.posterior).sum();
    Some(match contenders[k].mv {
        Some(mv) => {
            let mut v = Verdict::of_move(pos, obs, mv, confidence);
            v.set_by_picture(true);
            v
        }
        None => Verdict::NoChange { confidence },
    })
}

/// Whether a piece that `board` has on the square `d` reads empty there
/// for a reason the camera explains: a piece of `board` stands in front
/// of the square (a king that arrived behind a pawn), or the piece itself
/// is seen on a square behind it, one it can bleed into, in its own colour
/// (a tall piece's top, read from an angle, taken for a piece one square
/// on: held-out wooden/angled robot game, `...Bb7` with b8 reading black
/// and b7 empty). In the open, with no sign of the piece behind, it is
/// not there (seed-21 bench, wooden/angled: a rook put down at the edge
/// of b7, to take the queen there once she was carried off, fitted the
/// picture of `...Ra8` at 0.017 with a8 reading empty, and `...Ra8` was
/// committed).
fn unseen_arrival(obs: &BoardObs, board: &Board, d: &Disagreement) -> bool {
    if shadowed(obs.get(d.square), board) {
        return true;
    }
    let colour = Occupant::of(board, d.square);
    colour != Occupant::Empty
        && Square::ALL.iter().any(|&t| {
            let o = obs.get(t);
            let (seen, p) = o.best();
            o.bleed_from.contains(d.square) && !o.occluded && p >= CONFIDENT_STATE && seen == colour
        })
}

/// Confidently read squares that may contradict the best hypothesis
/// without making the board unexplained: a tall piece seen from an angle
/// covers part of the square behind it and makes that empty square look
/// occupied (measured on rendered games at the angled camera: a queen on
/// d5 read d6 as occupied; at the low camera a knight on g1 read f2 and a
/// pawn on f3 read g4 as occupied, and a queen on d1 f2, all at once: at
/// the low view a frame has 2.6 such squares on average). Up to four,
/// empty in the hypothesis, seen occupied and in the shadow of one of its
/// pieces ([`SquareObs::bleed_from`]), are excused. An illegal move still
/// leaves, against every legal hypothesis, a square whose piece is seen
/// gone where the hypothesis has one, which is never excused.
pub const MAX_EXCUSED_SQUARES: usize = 4;

/// Also excused: one square where the hypothesis has a piece and a piece
/// of the other colour is seen. Occupancy is read far more reliably than
/// colour (bench: a black pawn on e5 read as White on the printed board
/// froze a game for 19 moves); the likelihood still weighs the colour,
/// so this only keeps a clearly best move from being called unexplained.
/// Colour misreads on squares in a piece's shadow are excused on top, out
/// of [`MAX_EXCUSED_SQUARES`] (low view: after `d6` a black pawn on e7
/// behind it and one on g8 behind f7 read white).
pub const MAX_EXCUSED_COLOUR: usize = 1;

/// Without a camera pose (or outside the shadows it gives), one square
/// seen occupied next to a piece of the hypothesis is excused: a piece
/// leaning into a neighbour (measured before poses were used: a queen on
/// d5 read d6 as occupied at the angled camera).
pub const MAX_EXCUSED_NEIGHBOUR: usize = 1;

fn excusable(obs: &BoardObs, disagreeing: &[Disagreement], board: &Board) -> bool {
    let phantom = |d: &Disagreement| d.expected == Occupant::Empty && d.seen != Occupant::Empty;
    let bleed = |d: &Disagreement| {
        (phantom(d) && shadowed(obs.get(d.square), board)) || hidden_behind(obs, d, board)
    };
    let near = |d: &Disagreement| {
        phantom(d) && !bleed(d) && (attacks::king_attacks(d.square) & board.occupied()).any()
    };
    let n_near = disagreeing.iter().filter(|d| near(d)).count();
    if n_near > MAX_EXCUSED_NEIGHBOUR {
        return false;
    }
    let colour = |d: &Disagreement| d.expected != Occupant::Empty && d.seen != Occupant::Empty;
    // A piece in the shadow of another is read from what the one in front
    // leaves visible, so its colour is as unreliable as an empty square's
    // occupancy there: it counts against the shadow allowance.
    let shadowed_colour = |d: &Disagreement| colour(d) && shadowed(obs.get(d.square), board);
    let n_bleed = disagreeing.iter().filter(|d| bleed(d)).count();
    let n_colour = disagreeing.iter().filter(|d| colour(d)).count();
    let n_shadowed_colour = disagreeing.iter().filter(|d| shadowed_colour(d)).count();
    // Shadowed colour misreads are spent from the shadow allowance first.
    let from_shadow = n_shadowed_colour.min(MAX_EXCUSED_SQUARES.saturating_sub(n_bleed));
    n_bleed + n_near + n_colour == disagreeing.len()
        && n_bleed <= MAX_EXCUSED_SQUARES
        && n_colour - from_shadow <= MAX_EXCUSED_COLOUR
}

/// Whether `d` is a piece of `board` read empty where a piece of `board`
/// at least as tall stands in front of it, as the camera sees them
/// ([`SquareObs::bleed_from`]): what shows there is mostly the piece in
/// front and the board beside it. Counted with the squares the pieces in
/// front make look occupied ([`MAX_EXCUSED_SQUARES`]). Seed-61
/// printed/low (game seed 69, ply 31): the white king stepped from d2 to
/// c3, in front of the black pawn on e5 as the low corner camera over a1
/// sees it; e5 read empty (and d4, behind the king too, White), the
/// squares gave `Kc3` 1.000 and the picture fitted it at 0.008 against
/// 0.153 for "nothing changed", but e5's missing pawn made the board
/// unexplained and the game stalled for its last nine moves.
///
/// Not where the square's picture clearly changed ([`BoardObs::changed`])
/// while that of no piece in front of it did: a piece still standing
/// hidden does not change how its square looks unless what hides it
/// moved. Seed-71 wooden/low (game seed 77, plies 14-15): Black's bishop,
/// set down on e3 while the pawn it was taking on e2 went off, was first
/// committed as `...Bf3` (every square agreed); when it went on to e2,
/// `exf3` fitted the picture (0.040 against 0.640 for "nothing changed")
/// with its pawn on f3 read empty behind taller pieces that had not moved,
/// though f3's picture had changed, and became the verdict (the game read
/// 13/40 with 1 wrong move). Refused here, the board stays uncertain and
/// the tracker amends `...Bf3` to the `...Bxe2` its squares then show
/// (38/40 + 2).
fn hidden_behind(obs: &BoardObs, d: &Disagreement, board: &Board) -> bool {
    if d.seen != Occupant::Empty {
        return false;
    }
    let Some(role) = board.role_at(d.square) else {
        return false;
    };
    let in_front = obs.get(d.square).bleed_from & board.occupied();
    if obs.changed.contains(d.square) && !(in_front & obs.changed).any() {
        return false;
    }
    let height = super::change::role_height(role);
    in_front
        .into_iter()
        .filter_map(|q| board.role_at(q))
        .any(|r| super::change::role_height(r) >= height)
}

/// A short sequence of legal moves that explains the observations.
#[derive(Debug, Clone, PartialEq)]
pub struct Resync {
    pub moves: Vec<Move>,
    pub log_likelihood: f64,
    /// Margin in log-likelihood over the next best distinct sequence end.
    pub margin: f64,
    /// Other lines of moves that reach the same board, of any length (the
    /// final observation cannot tell them apart; earlier frames can): a
    /// line one ply longer reaches the same board with the other side to
    /// move (`h3 e5 h4` beside `h4 e5`).
    pub alternatives: Vec<Vec<Move>>,
    /// Lines to other boards the squares fit as well and the picture
    /// cannot tell from this one: the same colour on every square, another
    /// piece on some (`Ra6 Bxa6 Nxa6` beside `Na6 Bxa6 Rxa6`). Only the
    /// frames on the way can choose ([`Resync::tied`]); empty where this
    /// board is clearly best.
    pub rivals: Vec<Vec<Move>>,
}

impl Resync {
    /// Whether the squares leave other boards open ([`Resync::rivals`]):
    /// `moves` is then only the first of equals.
    pub fn tied(&self) -> bool {
        !self.rivals.is_empty()
    }
}

/// Whether two boards show the same colour on every square: no reading
/// of empty / white / black can tell them apart.
pub fn same_occupancy(a: &Board, b: &Board) -> bool {
    a.occupied() == b.occupied() && a.white() == b.white()
}

/// Most move orders kept per final board.
const MAX_ORDERS: usize = 24;

/// Squares a single legal move may leave unexplained, beyond those the
/// best lost-track line leaves too, for that longer line not to be taken:
/// every missed move changes at least two squares, so a board one move
/// explains but for one square is that move with a misread, and the
/// person is asked. Standard bench, printed board, low camera: after
/// `Qxc8` the white queen read empty on c8 (p 1.00, a white piece on a
/// light far square), and `Qxd7+ Bxd7` (c8 emptied, d7 still black)
/// fitted every square but a phantom both shared and was resynced.
pub const MAX_MISREAD_OF_ONE_MOVE: usize = 1;

/// Log-likelihood margin a resync must have over the runner-up: e^4.6 is
/// a factor of 100, the same odds as [`DECIDE_POSTERIOR`].
pub const RESYNC_MARGIN: f64 = 4.6;

/// Ends of the lost-track search measured against the change in the
/// picture besides the best: the runners-up that can contradict a
/// clear-looking resync built on a misread.
pub const RESYNC_RIVALS: usize = 3;

/// One end of the lost-track search: a board reached by legal moves, its
/// likelihood, and the orders of moves that reach it.
#[derive(Debug, Clone)]
struct ResyncEnd {
    board: Board,
    log_likelihood: f64,
    orders: Vec<Vec<Move>>,
}

impl ResyncEnd {
    /// The fewest moves that reach it: the first order found, as the
    /// search goes one ply deeper at a time.
    fn plies(&self) -> usize {
        self.orders[0].len()
    }

    /// Every order found to its board: the search's (under its beam) and
    /// those searched from the board itself ([`orders_to`]).
    fn all_orders(&self, pos: &Chess, max_plies: usize) -> Vec<Vec<Move>> {
        let mut orders = self.orders.clone();
        for line in orders_to(pos, &self.board, max_plies, MAX_ORDERS) {
            if !orders.contains(&line) {
                orders.push(line);
            }
        }
        orders
    }
}

/// Searches sequences of up to `max_plies` legal moves, moving only
/// pieces on squares that changed; the distinct final boards, best
/// explained first.
fn resync_ends(pos: &Chess, obs: &BoardObs, max_plies: usize) -> Vec<ResyncEnd> {
    // Squares whose confident reading differs from the position before:
    // every move of the sequence must start or end on one of them, or
    // capture/castle through them; or start where the picture changed (a
    // piece lifted off a square that still reads occupied: held-out
    // seed 31, printed/low, `Nxg2+ Bxg2` played unseen with f1 still read
    // White after the bishop left kept `Bxg2` out of the search).
    // A confident misread the picture already showed ([`news`]) is no
    // sign that its piece moved: moving it would swap one misread for
    // another (seed-11 vinyl/angled, game seed 15, ply 46: lines moving
    // the e7 pawn, read gone since `Bxa3`, tied with the true
    // `Rxf8 Nxa3`).
    let changed: Vec<Square> = news(obs, pos.board(), pos.board())
        .iter()
        .map(|d| d.square)
        .collect();
    let touches = |m: &Move| {
        let from = m.from().unwrap_or(m.to());
        changed.contains(&from)
            || changed.contains(&m.to())
            || obs.changed_in_picture.contains(from)
    };
    let mut frontier: Vec<(Chess, Vec<Move>)> = vec![(pos.clone(), Vec::new())];
    // Best final likelihood per distinct board, so that transpositions
    // (the same result by another order) do not count as rivals.
    let mut ends: Vec<ResyncEnd> = Vec::new();
    /// Beam width per ply: enough for every plausible line with 2-4
    /// changed pieces, small enough to stay in milliseconds.
    const BEAM: usize = 400;
    for _ in 0..max_plies {
        let mut next: Vec<(f64, Chess, Vec<Move>)> = Vec::new();
        for (p, line) in &frontier {
            for m in p.legal_moves() {
                if !touches(&m)
                    || matches!(m.promotion(), Some(r) if r != Role::Queen)
                    || goes_back(line, &m)
                {
                    continue;
                }
                let mut after = p.clone();
                after.play_unchecked(m);
                let ll = obs.wary_log_likelihood(after.board());
                let mut l = line.clone();
                l.push(m);
                next.push((ll, after, l));
            }
        }
        next.sort_by(|a, b| b.0.total_cmp(&a.0));
        next.truncate(BEAM);
        for (ll, p, line) in &next {
            match ends.iter_mut().find(|e| e.board == *p.board()) {
                // The same board: the same likelihood; another order.
                Some(e) => {
                    if e.orders.len() < MAX_ORDERS && !e.orders.contains(line) {
                        e.orders.push(line.clone());
                    }
                }
                None => ends.push(ResyncEnd {
                    board: p.board().clone(),
                    log_likelihood: *ll,
                    orders: vec![line.clone()],
                }),
            }
        }
        frontier = next.into_iter().map(|(_, p, l)| (p, l)).collect();
    }
    ends.sort_by(|a, b| b.log_likelihood.total_cmp(&a.log_likelihood));
    ends
}

/// Whether `m` takes a piece straight back where an earlier move of
/// `line` brought it from. Unseen round trips are rare, and lines made of
/// them fit misread squares too easily: both wrong resyncs traced on the
/// benches were such lines (`Nxg4+ Rf7 Nf6 Rh7`, the knight and the rook
/// going back, for `Nxg4+ Rf7 Bxd2 Rxf8+`; `Rh7 Ng1 Rh8` beside the true
/// `Rh7 Ng1`).
fn goes_back(line: &[Move], m: &Move) -> bool {
    line.iter()
        .any(|m0| m0.to() == m.from().unwrap_or(m.to()) && m0.from() == Some(m.to()))
}

/// Every line of at most `max_plies` legal moves from `pos` that reaches
/// the board `target` (up to `limit` lines, the shortest first), each move
/// taking a piece that is not yet where `target` has it. The lost-track
/// search moves only pieces on squares whose reading changed, so it misses
/// lines where a piece passed through a square on the way (`h3 e5 h4`
/// beside `h4 e5`: h2 still read White, and `h3` started on no changed
/// square); these are the other move orders [`Tracker`](super::Tracker)
/// weighs against the frames seen on the way.
pub fn orders_to(pos: &Chess, target: &Board, max_plies: usize, limit: usize) -> Vec<Vec<Move>> {
    let mut found = Vec::new();
    for plies in 1..=max_plies {
        let mut line = Vec::with_capacity(plies);
        orders_of_length(pos, target, plies, &mut line, &mut found, limit);
        if found.len() >= limit {
            break;
        }
    }
    found
}

/// Depth-first part of [`orders_to`]: lines of exactly `left` more plies.
fn orders_of_length(
    pos: &Chess,
    target: &Board,
    left: usize,
    line: &mut Vec<Move>,
    found: &mut Vec<Vec<Move>>,
    limit: usize,
) {
    if found.len() >= limit {
        return;
    }
    if left == 0 {
        if pos.board() == target {
            found.push(line.clone());
        }
        return;
    }
    // Each side still has to put every piece of its colour that is not
    // where `target` has it on its square, one per move (two by castling).
    let own_moves = |c: Color| {
        let mine = left.div_ceil(2);
        if c == pos.turn() {
            mine
        } else {
            left - mine
        }
    };
    for c in [Color::White, Color::Black] {
        let missing = target
            .by_color(c)
            .into_iter()
            .filter(|&sq| pos.board().piece_at(sq) != target.piece_at(sq))
            .count();
        let per_move = if pos.castles().has_color(c) { 2 } else { 1 };
        if missing > per_move * own_moves(c) {
            return;
        }
    }
    for m in pos.legal_moves() {
        let from = m.from().unwrap_or(m.to());
        if pos.board().piece_at(from) == target.piece_at(from) {
            continue;
        }
        let mut after = pos.clone();
        after.play_unchecked(m);
        line.push(m);
        orders_of_length(&after, target, left - 1, line, found, limit);
        line.pop();
    }
}

/// The boards [`resync`] weighs against the change in the picture (to be
/// measured into [`BoardObs::change`], with the position before): the
/// best end of the search and the next [`RESYNC_RIVALS`], and the best
/// end of every longer line (a one-ply move must not be taken from the
/// picture where a missed move and a reply fit it as well: the seed-31
/// printed/low `Nxf1` for `Nxg2+ Bxg2`, [`by_change`]).
pub fn resync_boards(pos: &Chess, obs: &BoardObs, max_plies: usize) -> Vec<Board> {
    let ends = resync_ends(pos, obs, max_plies);
    let mut boards: Vec<Board> = ends
        .iter()
        .take(1 + RESYNC_RIVALS)
        .map(|e| e.board.clone())
        .collect();
    for plies in 2..=max_plies {
        if let Some(e) = ends.iter().find(|e| e.plies() == plies) {
            if !boards.contains(&e.board) {
                boards.push(e.board.clone());
            }
        }
    }
    boards
}

/// A move the tracker held back (its arriving piece read the other
/// colour: [`Verdict::Move::colour_excused`]) until a hand came and a reply
/// was played, or that settled together with a reply (its arriving piece
/// reading the reply's colour): the replies from the position after it
/// that the squares cannot tell apart (within [`RESYNC_MARGIN`] of the
/// best), as the boards they leave, then the board after the held move
/// alone. What the watcher measures against the picture for
/// [`held_and_reply`].
pub fn held_reply_boards(pos: &Chess, held: Move, obs: &BoardObs) -> Vec<(Option<Move>, Board)> {
    let mut mid = pos.clone();
    mid.play_unchecked(held);
    let scored = score(&mid, obs);
    let mut boards: Vec<(Option<Move>, Board)> = contenders(&scored.hypotheses)
        .iter()
        .filter_map(|h| h.mv.map(|m| (Some(m), board_after(&mid, Some(m)))))
        .collect();
    boards.push((None, mid.board().clone()));
    boards
}

/// The held move (held on arrival: its piece read the other colour, or
/// empty in the open, [`arrival_unseen`]) and the reply the change in the
/// picture picks ([`pick_by_change`]) among the replies the squares leave
/// open, the held move alone and the position before. The held move was on
/// the board before the hand came, so the line cannot be longer than the
/// reply: the picture may choose among replies the squares tie on, which a
/// lost-track search never lets it do. Held-out seed 21, printed/angled
/// (game seed 26): `b5`, fitting the picture at 0.000 against 0.354 for
/// "nothing changed", was held for its pawn reading Black, `...Nxd1` was
/// played at once, and the squares tied `...Nxd1` (knight on d1 read right,
/// pawn on b5 read Black) with `...Nxb5` (the knight read on b5, d1 read
/// Black); the game stopped there. `None`: not clear (or not measured).
pub fn held_and_reply(pos: &Chess, held: Move, obs: &BoardObs) -> Option<Vec<Move>> {
    let candidates = held_reply_boards(pos, held, obs);
    let mut boards: Vec<Board> = candidates.iter().map(|(_, b)| b.clone()).collect();
    boards.push(pos.board().clone());
    let k = pick_by_change(obs, pos.board(), &boards)?;
    let reply = candidates.get(k)?.0?;
    Some(vec![held, reply])
}

/// Longest lost-track line the change in the picture may pick among
/// ends the squares leave open ([`resync`]): a missed move and a quick
/// reply. Longer lines stay with the squares (standard bench,
/// vinyl/angled: with five plies played unseen the picture preferred a
/// wrong four-ply line).
pub const MAX_PICTURE_PICKED_PLIES: usize = 2;

/// Whether another board measured against the change in the picture
/// ([`BoardObs::change`]) fits it better than `board` does. A lost-track
/// line longer than [`MAX_PICTURE_PICKED_PLIES`] is taken only where the
/// picture fits its end best: such lines come from boards that are not
/// positions at all, where the picture sees better than the squares.
/// Seed-41 vinyl/angled (game seed 45, ply 27): `Ra5 ...Qxf5` with the
/// queen put down on f6's edge while the pawn was carried off, a5's rook
/// read empty (0.98): `Ra6 Qxf5 Rf6+ Qxf6` explained every square, but
/// the picture fitted it at 0.028 against 0.017 for the true
/// `Ra5 Qxf5` and 0.014 for the board as it stood. Seed-41
/// printed/angled: an illegal move not yet taken back, resynced as three
/// plies the picture fitted at 0.161 against 0.153 for the position
/// before.
fn outfitted(obs: &BoardObs, board: &Board) -> bool {
    obs.change_fit(board).is_some_and(|f0| {
        obs.change
            .iter()
            .any(|c| c.board != *board && c.fit.cost < f0.cost)
    })
}

/// Whether `board` changes, from `before`, every square whose picture
/// clearly changed ([`BoardObs::changed`]) and none whose picture clearly
/// did not ([`BoardObs::unchanged`]). For ends of a lost-track search the
/// squares tie ([`resync`]), a second witness beside the fits of
/// [`pick_by_change`], which compare the pictures sample by sample and
/// find a piece replaced by another of its colour (a pawn by a knight)
/// barely telling. Held-out seed 41, printed/low (game seed 49,
/// ply 24): `...Nxf3+ Nxf3`, with phantoms standing on h5 and g8, led
/// `...Ng2` by 2.3 nats and fitted the picture at 0.152 against 0.167
/// for `...Nxf3+` alone; the picture had changed on g1, f3 and h4, the
/// squares of `...Nxf3+ Nxf3` and of no other end, and the game stalled
/// for its last 16 moves.
fn names_picture_change(obs: &BoardObs, before: &Board, board: &Board) -> bool {
    let moved: Bitboard = squares_changed(before, board).collect();
    !obs.changed.is_empty()
        && (obs.changed & !moved).is_empty()
        && (moved & obs.unchanged).is_empty()
}

/// Whether the change in the picture fits `board` better than `other` by
/// at least [`CHANGE_MARGIN`] where the two differ (both measured).
fn pictured_over(obs: &BoardObs, board: &Board, other: &Board) -> bool {
    obs.change_fit(board)
        .zip(obs.change_fit(other))
        .and_then(|(f, g)| f.margin_to(g))
        .is_some_and(|m| m >= CHANGE_MARGIN)
}

/// Lost track: searches sequences of up to `max_plies` legal moves whose
/// final occupancy explains `obs`, moving only pieces on squares that
/// changed. The best one is taken if it explains every confident square,
/// is clearly ahead, and the change in the picture (where measured) does
/// not fit another end or "nothing changed" clearly better. The picture
/// picks no line of more than [`MAX_PICTURE_PICKED_PLIES`] the squares
/// leave open: the true line may be longer than the search, and then
/// every end is wrong (standard bench,
/// vinyl/angled: with `Rh7 Ng1 Nc6 Ngf3 Qg5` played unseen, the picture
/// preferred `Nc6 Ng1 Qg5 Ngf3`, the rook's short step barely telling).
/// Nor is a line of two or more moves taken where a single move explains
/// all but [`MAX_MISREAD_OF_ONE_MOVE`] of the squares the line explains,
/// nor one that fits the squares less than [`RESYNC_MARGIN`] better than
/// the position before (held-out seed 21, printed/angled: an illegal
/// `Bc1-d3` shown and not yet taken back was "explained" by
/// `d3 exd3 Bd2`, which misfits d3, e4 and c8 where the position before
/// misfits c1, d3 and c8: 0.00 better, and resynced wrong).
/// Where neither the squares nor the fits pick an end, the squares' best
/// is still taken if it alone of the tied ends changes just the squares
/// whose picture changed ([`names_picture_change`]), two plies at most,
/// and the squares or the picture set it clearly above the position
/// before.
/// `None` means ask the person.
pub fn resync(pos: &Chess, obs: &BoardObs, max_plies: usize) -> Option<Resync> {
    let ends = resync_ends(pos, obs, max_plies);
    let first = ends.first()?;
    let margin = first.log_likelihood - ends.get(1).map_or(f64::NEG_INFINITY, |e| e.log_likelihood);
    // The boards the picture weighs an end against: the nearest ends and
    // the position before.
    let measured: Vec<Board> = ends
        .iter()
        .take(1 + RESYNC_RIVALS)
        .map(|e| e.board.clone())
        .chain(std::iter::once(pos.board().clone()))
        .collect();
    // A short line the squares leave open beside others may be picked by
    // the picture, as a single move is ([`pick_by_change`] against the
    // rivals measured and the position before): a line longer than the
    // search, the reason the picture picks no long line, does not end in
    // a short one that fits the picture this well. Seed-31 bench,
    // wooden/low (game seed 37): `b4 Bxd2+` explained every square but
    // led the four-ply `d3 Bg5 b4 Bf6` by only 0.40, while the picture
    // fitted it at 0.045 against 0.081 and more. Nor only the squares'
    // best: seed-41 printed/overhead (game seed 43, ply 16), `...d6 Nxa7`
    // with d6's pawn read White tied `...d6 Nxd6+` with a7's pawn read
    // White, the picture fitted the true line clearly better, and the
    // game stalled for its last 24 moves. But only among lines that
    // leave the same side to move as the squares' best: the picture,
    // measured against a frame that may already hold a move not yet seen,
    // cannot tell how many moves were missed. (Until the twenty-seventh
    // session only among lines as long as the squares' best, after
    // seed-41 wooden/low, game seed 47, ply 7: after `h4`, `...Qxh4 b4
    // Bxg4` was played, the squares' best was a four-ply line, the
    // picture fitted the two-ply `...Bxg4 b4` and it was resynced in a
    // three-ply order, the queen left on h1. With today's code that game
    // resyncs `h4 Qxh4` before `b4` and the case does not arise. The
    // same game at ply 33: the true `Qxh6 b5` tied a phantom's `Qg3 b5`
    // two nats behind the four-ply `Qg5 b5 Qd5 Nf7`, the picture fitted
    // the true line clearly best, and the game waited for its last eight
    // moves.)
    let picked = || {
        let k = pick_by_change(obs, pos.board(), &measured)?;
        let e = ends.get(k)?;
        (e.plies() <= MAX_PICTURE_PICKED_PLIES
            && e.plies() % 2 == first.plies() % 2
            && first.log_likelihood - e.log_likelihood < RESYNC_MARGIN)
            .then_some(e)
    };
    // Ends the squares cannot rank below the first.
    let tied: Vec<&ResyncEnd> = ends
        .iter()
        .skip(1)
        .take_while(|e| first.log_likelihood - e.log_likelihood < RESYNC_MARGIN)
        .collect();
    // Tied ends that differ only in which piece stands where are left to
    // the frames on the way ([`Resync::rivals`]); others to the picture.
    let piece_tied =
        !tied.is_empty() && tied.iter().all(|e| same_occupancy(&e.board, &first.board));
    // Or, failing that, the squares' best where it alone of the tied
    // ends changes just the squares the picture shows changed
    // ([`names_picture_change`]).
    let named = || {
        (first.plies() <= MAX_PICTURE_PICKED_PLIES
            && names_picture_change(obs, pos.board(), &first.board)
            && !tied
                .iter()
                .any(|e| names_picture_change(obs, pos.board(), &e.board)))
        .then_some(first)
    };
    // Whether the best end is taken on the picture's change naming it.
    let (best, by_name) = if margin >= RESYNC_MARGIN || piece_tied {
        (first, false)
    } else if let Some(e) = picked() {
        (e, false)
    } else if let Some(e) = named() {
        (e, true)
    } else {
        tracing::debug!(
            ends = ?summary(&ends[..ends.len().min(4)]),
            "resync: no end clearly first, none picked by the picture"
        );
        return None;
    };
    let rivals: Vec<Vec<Move>> = if piece_tied {
        tied.iter()
            .flat_map(|e| e.all_orders(pos, max_plies))
            .collect()
    } else {
        Vec::new()
    };
    let best_disagreeing = obs.disagreements(&best.board);
    // One move that explains all but one square the line explains is a
    // move with a misread, not a lost track: a missed move changes at
    // least two squares. Unless the picture named the line: it changed
    // on every square the line changes, the one it would call a misread
    // too, and on no other.
    let one_move_nearly = || {
        ends.iter().any(|e| {
            e.plies() == 1
                && obs
                    .disagreements(&e.board)
                    .iter()
                    .filter(|d| !best_disagreeing.iter().any(|b| b.square == d.square))
                    .count()
                    <= MAX_MISREAD_OF_ONE_MOVE
        })
    };
    // The line must also fit the squares clearly better than the
    // position before: an illegal move shown and not yet taken back is
    // unexplained by every legal line, and one that swaps its misfit
    // squares for others is no explanation.
    let over_before = best.log_likelihood - obs.wary_log_likelihood(pos.board());
    // Misreads the picture already showed are no news here either
    // ([`news`]): seed-11 vinyl/angled (game seed 15, ply 46), `Rxf8
    // ...Nxa3` explained every square but e7, e8 and f7, misread the
    // same way since `Bxa3`, and the game waited for its last six moves.
    // A line the picture's change names may have the picture, rather
    // than the squares, set it clearly above the position before: in the
    // shadows of a low view the squares it explains weigh little (the
    // seed-41 printed/low `...Nxf3+ Nxf3` led the position before by the
    // same 2.3 nats as `...Ng2`).
    let above_before = over_before >= RESYNC_MARGIN
        || (by_name && over_before > 0.0 && pictured_over(obs, &best.board, pos.board()));
    let clear = excusable(obs, &news(obs, pos.board(), &best.board), &best.board)
        && above_before
        && (best.plies() == 1 || by_name || !one_move_nearly());
    // A misread can make a wrong line look clear: the picture, where
    // measured, must fit it ([`RESYNC_FIT_COST`]), and no other end (nor
    // the position before) may fit clearly better. (The wrong
    // `Nxg4+ Rf7 Nf6 Rh7` of the held-out printed game passed both, at
    // 0.097 against runners-up at 0.11-0.19, its true line not among the
    // ends; [`goes_back`] keeps it out.)
    let contradicted = obs.change_fit(&best.board).is_some_and(|f0| {
        f0.cost > RESYNC_FIT_COST
            || measured
                .iter()
                .filter(|b| **b != best.board)
                .any(|b| pictured_over(obs, b, &best.board))
    }) || obs.emptied_in_plain_view(pos.board(), &best.board).any()
        || (best.plies() > MAX_PICTURE_PICKED_PLIES && outfitted(obs, &best.board));
    tracing::debug!(
        best = ?best.orders.first().map(|l| uci_line(l)),
        ll = best.log_likelihood,
        margin,
        over_before,
        clear,
        contradicted,
        by_name,
        runners_up = ?summary(&ends[1..ends.len().min(4)]),
        "resync candidate"
    );
    if !clear || contradicted {
        return None;
    }
    let mut orders = best.all_orders(pos, max_plies);
    // Shortest explanation first.
    orders.sort_by_key(|l| l.len());
    let moves = orders.remove(0);
    Some(Resync {
        moves,
        log_likelihood: best.log_likelihood,
        margin: best.log_likelihood
            - ends
                .iter()
                .filter(|e| e.board != best.board)
                .map(|e| e.log_likelihood)
                .fold(f64::NEG_INFINITY, f64::max),
        alternatives: orders,
        rivals,
    })
}

/// The first detour in `line` played from `pos`: plies `(i, j)` where the
/// piece moved at ply `i` moves again at ply `j`, its side's next move
/// from that square, and could have gone straight to ply `j`'s square at
/// ply `i` (the same piece, one legal move). A lost-track search needs a
/// detour where a move the board does not show took the turn between
/// (seed-51 wooden/low, game seed 57: after `...Rg8 Rxc7 Rxg2 Rxd7+`,
/// with the rook on g2 read as the pawn it took, `...Re8 Rxc7 Rg8 Rxd7`);
/// really played, the frames on the way show the square between (seed-31
/// wooden/low: `h3 e5 h4`).
pub fn detour(pos: &Chess, line: &[Move]) -> Option<(usize, usize)> {
    // A piece that stays what it is, from one square to another.
    let plain = |m: &Move| {
        matches!(
            m,
            Move::Normal {
                promotion: None,
                ..
            }
        )
    };
    let mut before = pos.clone();
    for (i, &first) in line.iter().enumerate() {
        if !plain(&first) {
            before.play_unchecked(first);
            continue;
        }
        let then = line[i + 1..]
            .iter()
            .enumerate()
            .skip(1)
            .step_by(2)
            .find(|(_, m)| m.from() == Some(first.to()));
        if let Some((k, &second)) = then {
            let straight = before.legal_moves().iter().any(|m| {
                m.from() == first.from()
                    && m.to() == second.to()
                    && m.role() == first.role()
                    && !m.is_castle()
            });
            // The same piece: nothing else landed on its square between.
            let same_piece = line[i + 1..i + 1 + k].iter().all(|m| m.to() != first.to());
            if straight && same_piece && plain(&second) {
                return Some((i, i + 1 + k));
            }
        }
        before.play_unchecked(first);
    }
    None
}

/// Lost-track ends as their first line and log-likelihood, for logs.
fn summary(ends: &[ResyncEnd]) -> Vec<(String, f64)> {
    ends.iter()
        .map(|e| {
            let line = e.orders.first().map_or(String::new(), |l| uci_line(l));
            (line, e.log_likelihood)
        })
        .collect()
}
