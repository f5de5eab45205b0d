//! Test doubles and helpers shared by the service and recognition tests.
#![allow(dead_code)] // each test file uses a part

use std::sync::Arc;

use chessbot::config::GameConfig;
use chessbot::game::Game;
use chessbot::service::core::Core;
use chessbot::service::runtime::{MoveChooser, Service};
use chessbot::service::voice::Voice;
use shakmaty::Move;

/// Test double: plays the first legal move in the order shakmaty generates.
pub struct FirstMove;
impl MoveChooser for FirstMove {
    fn choose(
        &mut self,
        game: &Game,
        _level: u8,
        _max_time: Option<std::time::Duration>,
    ) -> Result<(Move, Option<i32>), String> {
        game.legal_moves()
            .first()
            .copied()
            .map(|m| (m, Some(0)))
            .ok_or("no moves".into())
    }
}

/// Moves in SAN or UCI played one after another from `start`.
pub fn moves_from(start: &shakmaty::Chess, text: &str) -> Vec<Move> {
    use shakmaty::Position;
    let mut p = start.clone();
    text.split_whitespace()
        .map(|m| {
            let mv = chessbot::game::parse_move(&p, m).unwrap_or_else(|e| panic!("{m}: {e}"));
            p.play_unchecked(mv);
            mv
        })
        .collect()
}

/// A core with its games and journal under `dir`.
pub fn core_in(dir: &std::path::Path, has_arm: bool) -> Core {
    Core::new(
        GameConfig {
            games_dir: dir.join("games"),
            journal_dir: dir.join("journal"),
            ..GameConfig::default()
        },
        has_arm,
    )
    .unwrap()
}

/// A silent service with no engine and no arm, its clock stopped at 0.
pub fn quiet_service(core: Core) -> Arc<Service> {
    Service::new(core, Voice::silent(), None, None, Box::new(|| 0))
}

/// The messages of every status published so far.
pub fn messages(
    updates: &mut tokio::sync::broadcast::Receiver<chessbot::service::core::Status>,
) -> Vec<String> {
    let mut out = Vec::new();
    while let Ok(st) = updates.try_recv() {
        out.push(st.message);
    }
    out
}
