//! The game: rules on top of shakmaty, move input, records, PGN and the journal.
//!
//! Everything here is pure logic except [`journal::FileStorage`] and the
//! file functions beside it, the thin adapter that owns the journal file.

pub mod clock;
pub mod journal;
pub mod notation;
pub mod pgn;
pub mod replay;
pub mod rules;
pub mod session;

pub use notation::{parse_move, san_of, uci_line, uci_of, MoveInputError};
pub use rules::{
    fen_of, position_from_fen, Claim, Game, GameError, GameResult, MoveRecord, Termination,
};
