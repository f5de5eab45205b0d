//! Replaying PGN games with full rule validation (`chessbot pgn replay`).
//!
//! The summary states what the rules say about the final position, not
//! what the PGN's Result tag claims.

use serde::Serialize;
use shakmaty::Position;

use super::notation::parse_move;
use super::pgn::PgnGame;
use super::rules::{position_from_fen, Game};

/// What the rules say about a replayed game.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ReplaySummary {
    pub index: usize,
    pub plies: usize,
    /// `1-0`, `0-1`, `1/2-1/2` or `*`.
    pub result: String,
    /// `checkmate`, `stalemate`, `insufficient_material`,
    /// `fivefold_repetition`, `seventyfive_moves` or `none`.
    pub termination: String,
    /// Draws the side to move could claim: `threefold_repetition`, `fifty_moves`.
    pub claimable: Vec<String>,
    pub fen: String,
    /// Remarks that are not errors (moves played on after the rules had
    /// ended the game); printed to stderr, not part of the JSON line.
    #[serde(skip)]
    pub notes: Vec<String>,
}

/// A move that does not replay.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("game index {index}, move {move_number} {text:?}: {reason}")]
pub struct ReplayError {
    pub index: usize,
    /// `12.` for White's move, `12...` for Black's.
    pub move_number: String,
    pub text: String,
    pub reason: String,
}

/// Replays one game and summarises its final position.
pub fn replay(index: usize, pgn: &PgnGame) -> Result<(Game, ReplaySummary), ReplayError> {
    let mut game = match pgn.tag("FEN") {
        Some(fen) => Game::new(position_from_fen(fen).map_err(|e| ReplayError {
            index,
            move_number: "0.".into(),
            text: fen.to_owned(),
            reason: e.to_string(),
        })?),
        None => Game::default(),
    };
    let mut notes = Vec::new();
    for text in &pgn.moves {
        let pos = game.position().clone();
        let move_number = if pos.turn().is_white() {
            format!("{}.", pos.fullmoves())
        } else {
            format!("{}...", pos.fullmoves())
        };
        let err = |reason: String| ReplayError {
            index,
            move_number: move_number.clone(),
            text: text.clone(),
            reason,
        };
        match game.result() {
            // Checkmate or stalemate: no move can follow.
            Some(r) if pos.legal_moves().is_empty() => {
                return Err(err(format!(
                    "the game was already over ({})",
                    r.termination.describe()
                )));
            }
            // Players sometimes play on after a dead position or a fivefold
            // repetition; the moves are still checked, and noted.
            Some(r) => {
                let mv = parse_move(&pos, text).map_err(|e| err(e.to_string()))?;
                if notes.is_empty() {
                    notes.push(format!(
                        "game index {index}: moves from {move_number} {text} on were played after the game had ended ({})",
                        r.termination.describe()
                    ));
                }
                game.play_after_end(mv).map_err(|e| err(e.to_string()))?;
            }
            None => {
                let mv = parse_move(&pos, text).map_err(|e| err(e.to_string()))?;
                game.play(mv, None, None).map_err(|e| err(e.to_string()))?;
            }
        }
    }
    let mut summary = summarize(index, &game);
    summary.notes = notes;
    Ok((game, summary))
}

/// The summary of a game's current position.
pub fn summarize(index: usize, game: &Game) -> ReplaySummary {
    let automatic = game.automatic_result();
    ReplaySummary {
        index,
        plies: game.moves().len(),
        result: automatic.map_or("*", |r| r.as_str()).to_owned(),
        termination: automatic
            .map_or("none", |r| r.termination.as_str())
            .to_owned(),
        claimable: game
            .claimable()
            .into_iter()
            .map(|c| c.as_str().to_owned())
            .collect(),
        fen: game.fen(),
        notes: Vec::new(),
    }
}
