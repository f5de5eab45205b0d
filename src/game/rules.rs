//! A game in progress: the position, its history and every FIDE ending.
//!
//! shakmaty knows the moves; this adds what a real game needs on top: the
//! history that repetitions are counted over, draws that a player may claim
//! (threefold repetition, fifty moves) beside those that end the game by
//! themselves (fivefold repetition, seventy-five moves, dead position,
//! stalemate), resignation, agreement and loss on time.

use std::collections::HashMap;

use shakmaty::fen::Fen;
use shakmaty::san::SanPlus;
use shakmaty::uci::UciMove;
use shakmaty::{
    Bitboard, Board, CastlingMode, Chess, Color, EnPassantMode, KnownOutcome, Move, Position,
    Square,
};

/// FIDE 9.3: a draw may be claimed after fifty moves by each player (100 plies)
/// without a pawn move or a capture.
pub const FIFTY_MOVE_PLIES: u32 = 100;
/// FIDE 9.6.2: seventy-five moves by each player (150 plies) end the game.
pub const SEVENTY_FIVE_MOVE_PLIES: u32 = 150;
/// FIDE 9.2: threefold repetition may be claimed.
pub const THREEFOLD: usize = 3;
/// FIDE 9.6.1: fivefold repetition ends the game.
pub const FIVEFOLD: usize = 5;

/// Why a game ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Termination {
    Checkmate,
    Stalemate,
    /// Dead position: neither side can mate by any series of legal moves.
    InsufficientMaterial,
    FivefoldRepetition,
    SeventyfiveMoves,
    /// Claimed by a player.
    ThreefoldRepetition,
    /// Claimed by a player.
    FiftyMoves,
    Agreement,
    Resignation,
    /// A flag fell and the opponent could still mate.
    TimeForfeit,
    /// A flag fell but the opponent had no mating material (FIDE 6.9).
    TimeoutVsInsufficientMaterial,
}

impl Termination {
    /// The snake_case name used in JSON and the journal.
    pub fn as_str(self) -> &'static str {
        match self {
            Termination::Checkmate => "checkmate",
            Termination::Stalemate => "stalemate",
            Termination::InsufficientMaterial => "insufficient_material",
            Termination::FivefoldRepetition => "fivefold_repetition",
            Termination::SeventyfiveMoves => "seventyfive_moves",
            Termination::ThreefoldRepetition => "threefold_repetition",
            Termination::FiftyMoves => "fifty_moves",
            Termination::Agreement => "agreement",
            Termination::Resignation => "resignation",
            Termination::TimeForfeit => "time_forfeit",
            Termination::TimeoutVsInsufficientMaterial => "timeout_vs_insufficient_material",
        }
    }

    /// The words for PGN's `[Termination]` tag.
    pub fn pgn_tag(self) -> &'static str {
        match self {
            Termination::TimeForfeit => "time forfeit",
            Termination::Resignation | Termination::Agreement => "normal",
            _ => "normal",
        }
    }

    /// A sentence for people (UI, voice, PGN comment).
    pub fn describe(self) -> &'static str {
        match self {
            Termination::Checkmate => "checkmate",
            Termination::Stalemate => "stalemate",
            Termination::InsufficientMaterial => "dead position (insufficient material)",
            Termination::FivefoldRepetition => "fivefold repetition",
            Termination::SeventyfiveMoves => "seventy-five-move rule",
            Termination::ThreefoldRepetition => "threefold repetition claimed",
            Termination::FiftyMoves => "fifty-move rule claimed",
            Termination::Agreement => "draw by agreement",
            Termination::Resignation => "resignation",
            Termination::TimeForfeit => "loss on time",
            Termination::TimeoutVsInsufficientMaterial => {
                "flag fell, but the opponent could not mate"
            }
        }
    }
}

/// A draw that the side to move may claim (FIDE 9.2, 9.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Claim {
    ThreefoldRepetition,
    FiftyMoves,
}

impl Claim {
    pub fn as_str(self) -> &'static str {
        match self {
            Claim::ThreefoldRepetition => "threefold_repetition",
            Claim::FiftyMoves => "fifty_moves",
        }
    }
}

/// How a finished game ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GameResult {
    pub outcome: KnownOutcome,
    pub termination: Termination,
}

impl GameResult {
    /// `1-0`, `0-1` or `1/2-1/2`.
    pub fn as_str(&self) -> &'static str {
        self.outcome.as_str()
    }
}

/// Why an action on the game was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GameError {
    #[error("the game is over ({0})")]
    Over(&'static str),
    #[error("illegal move {uci} in position {fen}")]
    IllegalMove { uci: String, fen: String },
    #[error("no draw can be claimed now: {0}")]
    NoClaim(&'static str),
    #[error("there is no move to take back")]
    NothingToTakeBack,
    #[error("invalid start position {fen:?}: {reason}")]
    BadFen { fen: String, reason: String },
}

/// One move as it was played.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MoveRecord {
    pub mv: Move,
    pub uci: String,
    /// SAN with check/mate suffix, e.g. `Nf3+`.
    pub san: String,
    /// Wall-clock time the move was made, Unix milliseconds.
    pub at_ms: Option<i64>,
    /// Thinking time the mover used, milliseconds.
    pub used_ms: Option<u64>,
    /// Time left on the mover's clock after the move, milliseconds.
    pub clock_ms: Option<u64>,
}

/// What a repetition is counted over (FIDE 9.2.2): same pieces on the same
/// squares, same side to move, same castling rights, same en passant
/// possibility (only a legal capture counts, as in python-chess and
/// shakmaty's `EnPassantMode::Legal`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct RepetitionKey {
    board: Board,
    turn: Color,
    castling: Bitboard,
    ep: Option<Square>,
}

impl RepetitionKey {
    pub fn of(pos: &Chess) -> RepetitionKey {
        RepetitionKey {
            board: pos.board().clone(),
            turn: pos.turn(),
            castling: pos.castles().castling_rights(),
            ep: pos.ep_square(EnPassantMode::Legal),
        }
    }
}

/// Parses a FEN (or `startpos`, as in UCI) into a legal standard-chess position.
pub fn position_from_fen(fen: &str) -> Result<Chess, GameError> {
    let bad = |reason: String| GameError::BadFen {
        fen: fen.to_owned(),
        reason,
    };
    if fen.trim() == "startpos" {
        return Ok(Chess::default());
    }
    let parsed: Fen = fen.trim().parse().map_err(|e| bad(format!("{e}")))?;
    parsed
        .into_position(CastlingMode::Standard)
        .map_err(|e| bad(format!("{e}")))
}

/// The FEN of a position (en passant square only when a capture is legal).
pub fn fen_of(pos: &Chess) -> String {
    Fen::from_position(pos, EnPassantMode::Legal).to_string()
}

/// A game from a start position, with its moves and result.
#[derive(Debug, Clone)]
pub struct Game {
    start: Chess,
    pos: Chess,
    moves: Vec<MoveRecord>,
    /// Occurrences of each position since the start (repetitions).
    seen: HashMap<RepetitionKey, usize>,
    /// Repetition keys of every position, start first (for take-back).
    keys: Vec<RepetitionKey>,
    /// Result decided by a player (resignation, agreement, claim, flag).
    declared: Option<GameResult>,
}

impl Default for Game {
    fn default() -> Self {
        Game::new(Chess::default())
    }
}

impl Game {
    /// A new game from the given start position.
    pub fn new(start: Chess) -> Game {
        let key = RepetitionKey::of(&start);
        let mut seen = HashMap::new();
        seen.insert(key.clone(), 1);
        Game {
            pos: start.clone(),
            start,
            moves: Vec::new(),
            seen,
            keys: vec![key],
            declared: None,
        }
    }

    /// A new game from a FEN.
    pub fn from_fen(fen: &str) -> Result<Game, GameError> {
        Ok(Game::new(position_from_fen(fen)?))
    }

    pub fn start(&self) -> &Chess {
        &self.start
    }

    /// True when the game does not start from the standard position.
    pub fn is_custom_start(&self) -> bool {
        fen_of(&self.start) != fen_of(&Chess::default())
    }

    pub fn position(&self) -> &Chess {
        &self.pos
    }

    pub fn fen(&self) -> String {
        fen_of(&self.pos)
    }

    pub fn moves(&self) -> &[MoveRecord] {
        &self.moves
    }

    pub fn turn(&self) -> Color {
        self.pos.turn()
    }

    /// How often the current position has occurred, counting now.
    pub fn repetitions(&self) -> usize {
        self.seen
            .get(self.keys.last().expect("keys always holds the start"))
            .copied()
            .unwrap_or(0)
    }

    /// Every legal move now (none once the game is over).
    pub fn legal_moves(&self) -> Vec<Move> {
        if self.result().is_some() {
            return Vec::new();
        }
        self.pos.legal_moves().into_iter().collect()
    }

    /// The ending that the rules impose on the current position by
    /// themselves, if any. Order as python-chess's `outcome()`: checkmate,
    /// dead position, stalemate, seventy-five moves, fivefold repetition.
    pub fn automatic_result(&self) -> Option<GameResult> {
        let legal = self.pos.legal_moves();
        if legal.is_empty() && self.pos.is_check() {
            return Some(GameResult {
                outcome: KnownOutcome::Decisive {
                    winner: !self.pos.turn(),
                },
                termination: Termination::Checkmate,
            });
        }
        let draw = |termination| {
            Some(GameResult {
                outcome: KnownOutcome::Draw,
                termination,
            })
        };
        if self.pos.is_insufficient_material() {
            return draw(Termination::InsufficientMaterial);
        }
        if legal.is_empty() {
            return draw(Termination::Stalemate);
        }
        if self.pos.halfmoves() >= SEVENTY_FIVE_MOVE_PLIES {
            return draw(Termination::SeventyfiveMoves);
        }
        if self.repetitions() >= FIVEFOLD {
            return draw(Termination::FivefoldRepetition);
        }
        None
    }

    /// The result: declared by a player, or imposed by the rules.
    pub fn result(&self) -> Option<GameResult> {
        self.declared.or_else(|| self.automatic_result())
    }

    /// Draws the side to move could claim now (FIDE 9.2 and 9.3), including
    /// claims made by declaring a move that would produce the repetition or
    /// the fiftieth move. Empty once the game is over.
    pub fn claimable(&self) -> Vec<Claim> {
        if self.result().is_some() {
            return Vec::new();
        }
        let mut claims = Vec::new();
        if self.can_claim_threefold() {
            claims.push(Claim::ThreefoldRepetition);
        }
        if self.can_claim_fifty() {
            claims.push(Claim::FiftyMoves);
        }
        claims
    }

    fn can_claim_threefold(&self) -> bool {
        if self.repetitions() >= THREEFOLD {
            return true;
        }
        self.pos.legal_moves().into_iter().any(|m| {
            let mut after = self.pos.clone();
            after.play_unchecked(m);
            self.seen
                .get(&RepetitionKey::of(&after))
                .is_some_and(|&n| n + 1 >= THREEFOLD)
        })
    }

    fn can_claim_fifty(&self) -> bool {
        let has_moves = |p: &Chess| !p.legal_moves().is_empty();
        if self.pos.halfmoves() >= FIFTY_MOVE_PLIES && has_moves(&self.pos) {
            return true;
        }
        if self.pos.halfmoves() + 1 < FIFTY_MOVE_PLIES {
            return false;
        }
        self.pos.legal_moves().into_iter().any(|m| {
            if m.is_zeroing() {
                return false;
            }
            let mut after = self.pos.clone();
            after.play_unchecked(m);
            after.halfmoves() >= FIFTY_MOVE_PLIES && has_moves(&after)
        })
    }

    /// Plays a legal move and records it.
    pub fn play(
        &mut self,
        mv: Move,
        at_ms: Option<i64>,
        used_ms: Option<u64>,
    ) -> Result<&MoveRecord, GameError> {
        self.play_timed(mv, at_ms, used_ms, None)
    }

    /// Plays a legal move with the mover's remaining clock time.
    pub fn play_timed(
        &mut self,
        mv: Move,
        at_ms: Option<i64>,
        used_ms: Option<u64>,
        clock_ms: Option<u64>,
    ) -> Result<&MoveRecord, GameError> {
        if let Some(r) = self.result() {
            return Err(GameError::Over(r.termination.describe()));
        }
        self.record(mv, at_ms, used_ms, clock_ms)
    }

    /// Records a move played on the board after the rules had already ended
    /// the game with legal moves left (a dead position, fivefold repetition
    /// or seventy-five moves): real-world records sometimes go on. The move
    /// must still be legal; the game's result stays what the rules say about
    /// the position reached. Live games use [`Game::play`], which refuses.
    pub fn play_after_end(&mut self, mv: Move) -> Result<&MoveRecord, GameError> {
        self.record(mv, None, None, None)
    }

    fn record(
        &mut self,
        mv: Move,
        at_ms: Option<i64>,
        used_ms: Option<u64>,
        clock_ms: Option<u64>,
    ) -> Result<&MoveRecord, GameError> {
        if !self.pos.is_legal(mv) {
            return Err(GameError::IllegalMove {
                uci: mv.to_uci(CastlingMode::Standard).to_string(),
                fen: self.fen(),
            });
        }
        let uci = mv.to_uci(CastlingMode::Standard).to_string();
        let san = SanPlus::from_move_and_play_unchecked(&mut self.pos, mv).to_string();
        let key = RepetitionKey::of(&self.pos);
        *self.seen.entry(key.clone()).or_insert(0) += 1;
        self.keys.push(key);
        self.moves.push(MoveRecord {
            mv,
            uci,
            san,
            at_ms,
            used_ms,
            clock_ms,
        });
        Ok(self.moves.last().expect("just pushed"))
    }

    /// Plays a move given in UCI notation.
    pub fn play_uci(&mut self, uci: &str) -> Result<&MoveRecord, GameError> {
        self.ensure_running()?;
        let illegal = || GameError::IllegalMove {
            uci: uci.to_owned(),
            fen: self.fen(),
        };
        let parsed: UciMove = uci.parse().map_err(|_| illegal())?;
        let mv = parsed.to_move(&self.pos).map_err(|_| illegal())?;
        self.play(mv, None, None)
    }

    /// Takes the last move back (FIDE has no such thing; casual games and
    /// a misread board do). Clears a declared result.
    pub fn take_back(&mut self) -> Result<MoveRecord, GameError> {
        let last = self.moves.pop().ok_or(GameError::NothingToTakeBack)?;
        let key = self.keys.pop().expect("one key per move plus the start");
        if let Some(n) = self.seen.get_mut(&key) {
            *n -= 1;
            if *n == 0 {
                self.seen.remove(&key);
            }
        }
        let mut pos = self.start.clone();
        for r in &self.moves {
            pos.play_unchecked(r.mv);
        }
        self.pos = pos;
        self.declared = None;
        Ok(last)
    }

    /// The side to move claims a draw (FIDE 9.2, 9.3).
    pub fn claim_draw(&mut self, claim: Claim) -> Result<GameResult, GameError> {
        self.ensure_running()?;
        let termination = match claim {
            Claim::ThreefoldRepetition if self.repetitions() >= THREEFOLD => {
                Termination::ThreefoldRepetition
            }
            Claim::FiftyMoves
                if self.pos.halfmoves() >= FIFTY_MOVE_PLIES && !self.pos.legal_moves().is_empty() =>
            {
                Termination::FiftyMoves
            }
            Claim::ThreefoldRepetition => {
                return Err(GameError::NoClaim(
                    "the position has not occurred three times (declare the move that repeats it instead)",
                ))
            }
            Claim::FiftyMoves => {
                return Err(GameError::NoClaim(
                    "fewer than fifty moves by each side without a capture or pawn move",
                ))
            }
        };
        Ok(self.declare(KnownOutcome::Draw, termination))
    }

    /// Claims a draw by declaring a move that repeats the position a third
    /// time or completes the fifty moves (FIDE 9.2.1.1, 9.3.1): the move is
    /// played and the game drawn.
    pub fn claim_draw_with_move(
        &mut self,
        mv: Move,
        at_ms: Option<i64>,
    ) -> Result<GameResult, GameError> {
        self.ensure_running()?;
        self.play(mv, at_ms, None)?;
        if self.repetitions() >= THREEFOLD {
            return Ok(self.declare(KnownOutcome::Draw, Termination::ThreefoldRepetition));
        }
        if self.pos.halfmoves() >= FIFTY_MOVE_PLIES && self.result().is_none() {
            return Ok(self.declare(KnownOutcome::Draw, Termination::FiftyMoves));
        }
        self.take_back()?;
        Err(GameError::NoClaim(
            "that move neither repeats the position a third time nor completes fifty moves",
        ))
    }

    /// `loser` resigns.
    pub fn resign(&mut self, loser: Color) -> Result<GameResult, GameError> {
        self.ensure_running()?;
        Ok(self.declare(
            KnownOutcome::Decisive { winner: !loser },
            Termination::Resignation,
        ))
    }

    /// Both players agreed to a draw.
    pub fn agree_draw(&mut self) -> Result<GameResult, GameError> {
        self.ensure_running()?;
        Ok(self.declare(KnownOutcome::Draw, Termination::Agreement))
    }

    /// `flagged` ran out of time (FIDE 6.9): a loss, unless the opponent
    /// cannot checkmate by any series of legal moves, then a draw.
    pub fn flag_fell(&mut self, flagged: Color) -> Result<GameResult, GameError> {
        self.ensure_running()?;
        if self.pos.has_insufficient_material(!flagged) {
            Ok(self.declare(
                KnownOutcome::Draw,
                Termination::TimeoutVsInsufficientMaterial,
            ))
        } else {
            Ok(self.declare(
                KnownOutcome::Decisive { winner: !flagged },
                Termination::TimeForfeit,
            ))
        }
    }

    /// Records a result decided outside the board (used when replaying a journal).
    pub fn set_declared(&mut self, result: GameResult) {
        self.declared = Some(result);
    }

    fn ensure_running(&self) -> Result<(), GameError> {
        match self.result() {
            Some(r) => Err(GameError::Over(r.termination.describe())),
            None => Ok(()),
        }
    }

    fn declare(&mut self, outcome: KnownOutcome, termination: Termination) -> GameResult {
        let r = GameResult {
            outcome,
            termination,
        };
        self.declared = Some(r);
        r
    }
}
