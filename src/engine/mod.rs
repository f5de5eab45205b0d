//! The chess engine: a built-in search, a UCI front end and a client for
//! external UCI engines.
//!
//! - [`eval`]: the static evaluation (tapered PeSTO tables and friends).
//! - [`search`]: iterative deepening PVS with TT, quiescence and pruning.
//! - [`tt`]: the transposition table.

pub mod eval;
pub mod search;
pub mod tt;

pub use search::{Clock, Limits, MonotonicClock, SearchInfo, SearchResult, Searcher};
