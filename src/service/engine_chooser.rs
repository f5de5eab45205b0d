//! The engine as the service's [`MoveChooser`]: the built-in engine at the
//! level chosen for the game, or an external UCI engine from the config.

use std::time::Duration;

use shakmaty::{Color, Move};

use super::runtime::MoveChooser;
use crate::engine::matches::{player_from_spec, BuiltinPlayer, MatchError, Player};
use crate::engine::{EngineConfig, Limits};
use crate::game::Game;

/// Thinking time per robot move. A person at the board waits comfortably for
/// a second; below level 20 the level's node limit usually ends the search
/// much sooner (see docs/engine.md).
pub const ROBOT_MOVE_TIME: Duration = Duration::from_millis(1000);

/// Seed of the built-in engine's move choice at weakened levels.
const LEVEL_SEED: u64 = 0x00c0_ffee;

enum Kind {
    /// Rebuilt when the game's level changes.
    Builtin { hash_mb: usize, overhead: Duration },
    /// Keeps its own strength settings (`[engine.external_options]`).
    External,
}

/// Chooses the robot's moves.
pub struct EngineChooser {
    kind: Kind,
    player: Box<dyn Player>,
    level: u8,
    move_time: Duration,
    /// The player's failure count after the last choice.
    failures: usize,
    notice: Option<String>,
}

impl EngineChooser {
    /// The engine the config names; an external engine is started now so a
    /// wrong command line is reported at start-up, not at the first move.
    pub fn from_config(config: &EngineConfig, move_time: Duration) -> Result<Self, MatchError> {
        let overhead = Duration::from_millis(config.move_overhead_ms);
        if config.external_command.trim().is_empty() {
            return Ok(EngineChooser {
                kind: Kind::Builtin {
                    hash_mb: config.hash_mb,
                    overhead,
                },
                player: Box::new(BuiltinPlayer::new(
                    config.hash_mb,
                    config.level,
                    overhead,
                    LEVEL_SEED,
                )),
                level: config.level,
                move_time,
                failures: 0,
                notice: None,
            });
        }
        let mut spec = config.external_command.clone();
        for (k, v) in &config.external_options {
            spec.push_str(&format!(";{k}={v}"));
        }
        Ok(EngineChooser {
            kind: Kind::External,
            player: player_from_spec(&spec, config.hash_mb, overhead, LEVEL_SEED)?,
            level: config.level,
            move_time,
            failures: 0,
            notice: None,
        })
    }

    /// The engine's name for the interface.
    pub fn name(&self) -> String {
        self.player.name()
    }
}

impl MoveChooser for EngineChooser {
    fn take_notice(&mut self) -> Option<String> {
        self.notice.take()
    }

    fn choose(
        &mut self,
        game: &Game,
        level: u8,
        max_time: Option<Duration>,
    ) -> Result<(Move, Option<i32>), String> {
        if let Kind::Builtin { hash_mb, overhead } = self.kind {
            if level != self.level {
                self.player = Box::new(BuiltinPlayer::new(hash_mb, level, overhead, LEVEL_SEED));
                self.level = level;
            }
        }
        let moves: Vec<Move> = game.moves().iter().map(|r| r.mv).collect();
        let limits = Limits::movetime(max_time.map_or(self.move_time, |t| t.min(self.move_time)));
        let (mv, score) = self
            .player
            .choose(game.start(), &moves, &limits)
            .ok_or_else(|| "the engine has no move in this position".to_owned())?;
        let failures = self.player.failures();
        if failures > self.failures {
            self.failures = failures;
            self.notice = Some(format!(
                "The engine {} failed and was restarted or replaced by the built-in engine for this move",
                self.player.name()
            ));
        }
        // The engine scores for the side to move; the interface shows White's view.
        let white_view = score.map(|s| if game.turn() == Color::White { s } else { -s });
        Ok((mv, white_view))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_chooser_plays_a_legal_move_and_takes_a_hanging_queen() {
        let cfg = EngineConfig {
            hash_mb: 4,
            ..EngineConfig::default()
        };
        let mut chooser = EngineChooser::from_config(&cfg, Duration::from_millis(200)).unwrap();
        // Black's queen on d4 hangs to the e3 pawn.
        let game = Game::from_fen("4k3/8/8/8/3q4/4P3/8/4K3 w - - 0 1").unwrap();
        let (mv, eval) = chooser.choose(&game, 20, None).unwrap();
        assert_eq!(mv.to_string(), "e3xd4");
        // Before the capture Black is a queen up; after it White is a pawn up.
        assert!(eval.unwrap() > 50, "{eval:?}");
        // At level 5 the move is still legal.
        let (mv, _) = chooser
            .choose(
                &Game::new(shakmaty::Chess::default()),
                5,
                Some(Duration::from_millis(50)),
            )
            .unwrap();
        assert!(Game::new(shakmaty::Chess::default())
            .legal_moves()
            .contains(&mv));
    }

    #[test]
    fn a_missing_external_engine_is_reported_at_start_up() {
        let cfg = EngineConfig {
            external_command: "/nonexistent/engine".into(),
            ..EngineConfig::default()
        };
        assert!(EngineChooser::from_config(&cfg, ROBOT_MOVE_TIME).is_err());
    }
}
