//! The chess engine: a built-in search, a UCI front end and a client for
//! external UCI engines.
//!
//! - [`bench`]: search speed on fixed positions.
//! - [`eval`]: the static evaluation (tapered PeSTO tables and friends).
//! - [`search`]: iterative deepening PVS with TT, quiescence and pruning.
//! - [`tt`]: the transposition table.
//! - [`strength`]: levels 0..=20 and UCI_Elo for people.
//! - [`uci`]: the UCI protocol of `chessbot uci`.
//! - [`uci_client`]: a robust client for external UCI engines.
//! - [`matches`]: the match runner (score, Elo, PGN).

pub mod bench;
pub mod eval;
pub mod matches;
pub mod search;
pub mod strength;
pub mod tt;
pub mod uci;
pub mod uci_client;

pub use search::{Clock, Limits, MonotonicClock, SearchInfo, SearchResult, Searcher};

use std::collections::BTreeMap;

use serde::Deserialize;

/// Largest transposition table accepted (MB).
pub const MAX_HASH_MB: usize = 4096;

/// `[engine]`: who finds the robot's replies.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct EngineConfig {
    /// Transposition table size of the built-in engine (MB).
    pub hash_mb: usize,
    /// Built-in engine level, 0 (beginner) ..= 20 (full strength).
    pub level: u8,
    /// Time kept back per move for communication and robot latency (ms).
    pub move_overhead_ms: u64,
    /// Command line of an external UCI engine; empty = the built-in one.
    pub external_command: String,
    /// `setoption` values for the external engine (name = value).
    pub external_options: BTreeMap<String, String>,
}

impl Default for EngineConfig {
    fn default() -> Self {
        EngineConfig {
            hash_mb: 64,
            level: strength::MAX_LEVEL,
            move_overhead_ms: 50,
            external_command: String::new(),
            external_options: BTreeMap::new(),
        }
    }
}

impl EngineConfig {
    /// Checks the values the types do not constrain: `Err((key, value, allowed))`.
    pub fn check(&self) -> Result<(), (&'static str, String, &'static str)> {
        if !(1..=MAX_HASH_MB).contains(&self.hash_mb) {
            return Err((
                "engine.hash_mb",
                self.hash_mb.to_string(),
                "must be 1 ..= 4096 (MB)",
            ));
        }
        if self.level > strength::MAX_LEVEL {
            return Err(("engine.level", self.level.to_string(), "must be 0 ..= 20"));
        }
        if self.move_overhead_ms > 5_000 {
            return Err((
                "engine.move_overhead_ms",
                self.move_overhead_ms.to_string(),
                "must be 0 ..= 5000 (ms)",
            ));
        }
        Ok(())
    }
}
