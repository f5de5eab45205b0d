//! Whole robot games against the simulator, headless: the scripted person
//! moves with a hand, the camera side (ground-truth stand-in) and the real
//! tracker see the moves, the engine replies, the real arm driver plays
//! the replies over the simulated servo bus, the jaws move the pieces.

use chessbot::config::GameConfig;
use chessbot::sim::robot_game::{parse_faults, PlayMode, PlaySpec, SimRobotGame, Summary};
use shakmaty::{Chess, Position};

fn spec(dir: &std::path::Path, plies: usize, seed: u64) -> PlaySpec {
    let mut s = PlaySpec::new(GameConfig {
        games_dir: dir.join("games"),
        journal_dir: dir.join("journal"),
        ..GameConfig::default()
    });
    s.plies = plies;
    s.seed = seed;
    s.level = 6;
    s
}

/// The PGN's moves are exactly the moves made on the board.
fn assert_pgn_is_truth(sum: &Summary) {
    let mut pos = Chess::default();
    let mut uci = Vec::new();
    for san in &sum.moves {
        let m = chessbot::game::parse_move(&pos, san).unwrap();
        uci.push(chessbot::game::uci_of(m));
        pos.play_unchecked(m);
    }
    assert_eq!(uci, sum.truth, "journaled game vs what happened on the board");
    // The PGN text replays to the same moves.
    let games = chessbot::game::pgn::parse_games(&sum.pgn).unwrap();
    assert_eq!(games.len(), 1);
    let (game, _) = chessbot::game::replay::replay(0, &games[0]).unwrap();
    let replayed: Vec<String> = game.moves().iter().map(|m| m.uci.clone()).collect();
    assert_eq!(replayed, sum.truth);
}

#[test]
fn a_headless_game_against_the_robot_is_journaled_move_for_move() {
    let dir = tempfile::tempdir().unwrap();
    let sum = SimRobotGame::new(spec(dir.path(), 12, 3)).unwrap().run().unwrap();
    println!("{}", sum.to_text());
    assert_eq!(sum.plies, 12);
    assert_pgn_is_truth(&sum);
    assert_eq!(sum.recognition_errors, 0);
    assert_eq!(sum.arm_moves, 6);
    assert!(sum.arm_faults.is_empty(), "{:?}", sum.arm_faults);
    assert!(sum.pgn_path.is_some());
}
