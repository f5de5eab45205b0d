//! `chessbot bench engine`: search speed on a fixed set of positions.
//!
//! Each position is searched from an empty table to a fixed depth; the
//! report gives nodes, time to that depth and nodes per second. The numbers
//! are measured, never asserted (they depend on the machine and its load).

use std::time::Duration;

use shakmaty::fen::Fen;
use shakmaty::{CastlingMode, Chess};

use super::search::{Clock, Limits, Searcher};

/// Positions of the bench: opening, middlegames (quiet and tactical),
/// endgames. Widely used test positions (start position, "Kiwipete" from
/// the perft suites, and positions from common engine bench lists).
pub const BENCH_POSITIONS: [(&str, &str); 8] = [
    (
        "start",
        "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1",
    ),
    (
        "kiwipete",
        "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1",
    ),
    (
        "italian",
        "r1bqk2r/pppp1ppp/2n2n2/2b1p3/2B1P3/2NP1N2/PPP2PPP/R1BQK2R b KQkq - 0 5",
    ),
    (
        "qgd",
        "r1bq1rk1/pp1nbppp/2p1pn2/3p2B1/2PP4/2NBPN2/PP3PPP/R2QK2R w KQ - 0 8",
    ),
    (
        "sicilian",
        "r1b1kb1r/1pqp1ppp/p1n1pn2/8/3NP3/2N1B3/PPP1BPPP/R2QK2R w KQkq - 2 8",
    ),
    (
        "tactical",
        "r2q1rk1/pp2ppbp/2p2np1/6B1/3PP1b1/Q1P2N2/P4PPP/3RKB1R b K - 0 13",
    ),
    ("rook-ending", "8/5pk1/6p1/R7/5P2/4K1P1/r6P/8 w - - 0 40"),
    ("pawn-ending", "8/8/3k4/3p4/3P4/3K4/8/8 w - - 0 1"),
];

/// One measured position.
#[derive(Debug, Clone, PartialEq)]
pub struct BenchRow {
    pub name: &'static str,
    pub depth: u32,
    pub nodes: u64,
    pub time: Duration,
    pub best_move: String,
}

impl BenchRow {
    pub fn nps(&self) -> u64 {
        (self.nodes as f64 / self.time.as_secs_f64().max(1e-6)) as u64
    }
}

/// Searches every bench position to `depth` with a fresh `hash_mb` table.
pub fn run_bench(
    depth: u32,
    hash_mb: usize,
    clock: &dyn Clock,
    on_row: &mut dyn FnMut(&BenchRow),
) -> Vec<BenchRow> {
    let mut rows = Vec::new();
    for (name, fen) in BENCH_POSITIONS {
        let Ok(pos) = fen.parse::<Fen>().map_err(|_| ()).and_then(|f| {
            f.into_position::<Chess>(CastlingMode::Standard)
                .map_err(|_| ())
        }) else {
            continue; // the list is fixed and tested; cannot happen
        };
        let mut searcher = Searcher::with_hash(hash_mb);
        let t0 = clock.now();
        let r = searcher.search(&pos, &[], &Limits::depth(depth), &mut |_| {});
        let row = BenchRow {
            name,
            depth: r.depth,
            nodes: r.nodes,
            time: clock.now().saturating_sub(t0),
            best_move: r
                .best_move
                .map(|m| m.to_uci(CastlingMode::Standard).to_string())
                .unwrap_or_else(|| "(none)".into()),
        };
        on_row(&row);
        rows.push(row);
    }
    rows
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::search::MonotonicClock;

    #[test]
    fn every_bench_position_is_searched_to_the_depth() {
        let rows = run_bench(3, 1, &MonotonicClock::default(), &mut |_| {});
        assert_eq!(rows.len(), BENCH_POSITIONS.len(), "all FENs parse");
        for r in rows {
            assert_eq!(r.depth, 3, "{}", r.name);
            assert!(r.nodes > 0 && r.best_move != "(none)", "{r:?}");
        }
    }
}
