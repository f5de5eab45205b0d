//! `chessbot pgn replay` agrees with python-chess, an independent
//! implementation, on every fixture game (scripts/fixtures/gen_replay_fixtures.py
//! made the expectations), and reports bad moves with status 2.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Output};

fn replay(path: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_chessbot"))
        .args(["pgn", "replay"])
        .arg(path)
        .output()
        .expect("run chessbot")
}

fn replay_text(pgn: &str) -> Output {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("game.pgn");
    std::fs::write(&path, pgn).unwrap();
    replay(&path)
}

fn parse_lines(text: &str) -> Vec<serde_json::Value> {
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l}: {e}")))
        .collect()
}

fn check_fixture(name: &str) -> BTreeMap<String, usize> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/pgn");
    let out = replay(&dir.join(format!("{name}.pgn")));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let got = parse_lines(&String::from_utf8(out.stdout).unwrap());
    let want =
        parse_lines(&std::fs::read_to_string(dir.join(format!("{name}.expected.jsonl"))).unwrap());
    assert_eq!(got.len(), want.len(), "number of games");
    let mut kinds = BTreeMap::new();
    for (g, w) in got.iter().zip(&want) {
        assert_eq!(g, w, "game {}", w["index"]);
        *kinds
            .entry(w["termination"].as_str().unwrap().to_owned())
            .or_insert(0) += 1;
        for c in w["claimable"].as_array().unwrap() {
            *kinds
                .entry(format!("claim:{}", c.as_str().unwrap()))
                .or_insert(0) += 1;
        }
    }
    kinds
}

#[test]
fn agrees_with_python_chess_on_random_games() {
    let kinds = check_fixture("random");
    for kind in [
        "checkmate",
        "stalemate",
        "insufficient_material",
        "fivefold_repetition",
        "seventyfive_moves",
        "none",
        "claim:threefold_repetition",
        "claim:fifty_moves",
    ] {
        assert!(
            kinds.get(kind).copied().unwrap_or(0) > 0,
            "no {kind} in {kinds:?}"
        );
    }
}

#[test]
fn agrees_with_python_chess_on_real_world_pgn() {
    let kinds = check_fixture("real");
    assert!(kinds["checkmate"] >= 3, "{kinds:?}");
}

#[test]
fn agrees_with_python_chess_on_real_over_the_board_games() {
    // The Week in Chess 1599: 1110 master games, most ended by resignation.
    let kinds = check_fixture("twic");
    assert!(kinds.values().sum::<usize>() >= 1000, "{kinds:?}");
    assert!(kinds["checkmate"] >= 1, "{kinds:?}");
}

#[test]
fn agrees_with_python_chess_on_real_online_games() {
    // lichess.org database: 438 games with clock comments.
    let kinds = check_fixture("lichess");
    assert!(kinds.values().sum::<usize>() >= 400, "{kinds:?}");
    assert!(kinds["checkmate"] >= 10, "{kinds:?}");
}

#[test]
fn replays_the_real_scholars_mate_recording() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../shared/data/real/webcam_wooden_boards/video/scholarsmate.pgn");
    if !path.exists() {
        eprintln!(
            "skipped: {} is absent (../shared/data/real is only on the developers' machines)",
            path.display()
        );
        return;
    }
    let out = replay(&path);
    assert!(out.status.success());
    let got = parse_lines(&String::from_utf8(out.stdout).unwrap());
    assert_eq!(got.len(), 1);
    assert_eq!(got[0]["termination"], "checkmate");
    assert_eq!(got[0]["result"], "1-0");
    assert_eq!(got[0]["plies"], 7);
}

#[test]
fn illegal_move_exits_2_naming_game_move_number_and_text() {
    let out = replay_text(
        "[Event \"a\"]\n\n1. e4 e5 *\n\n[Event \"b\"]\n\n1. e4 e5 2. Nf3 Ke7 3. Ke2 Kxe5 *\n",
    );
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("game index 1"), "{stderr}");
    assert!(stderr.contains("move 3..."), "{stderr}");
    assert!(stderr.contains("\"Kxe5\""), "{stderr}");
    // The first game was fine and was printed before the error.
    assert_eq!(parse_lines(&String::from_utf8_lossy(&out.stdout)).len(), 1);
}

#[test]
fn unreadable_move_exits_2_naming_it() {
    let out = replay_text("1. e4 e5 2. Nf3x Nc6 *\n");
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("Nf3x"), "{stderr}");
    assert!(stderr.contains("game index 0"), "{stderr}");
}

#[test]
fn ambiguous_move_lists_candidates() {
    let out = replay_text("[FEN \"4k3/8/8/8/8/8/8/4KN1N w - - 0 1\"]\n\n1. Ng3 *\n");
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("Nhg3") && stderr.contains("Nfg3"),
        "{stderr}"
    );
}

#[test]
fn moves_after_the_end_are_rejected() {
    let out = replay_text("1. f3 e5 2. g4 Qh4# 3. a3 0-1\n");
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("already over"), "{stderr}");
    assert!(stderr.contains("move 3."), "{stderr}");
}

#[test]
fn missing_file_is_a_clear_error() {
    let out = replay(Path::new("/nonexistent/games.pgn"));
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("/nonexistent/games.pgn"));
}

#[test]
fn moves_played_on_after_a_dead_position_are_checked_and_noted() {
    // White's last pawn and Black's last pawn go; K+B v K is dead, but the
    // players shuffle on (as in TWIC 1599 game 1). The moves are legal, so
    // the replay goes on, says so on stderr, and reports the final position.
    let out = replay_text(
        "[FEN \"4k3/8/8/8/8/8/p7/1B2K3 w - - 0 1\"]\n[SetUp \"1\"]\n\n1. Bxa2 Kd7 2. Bb1 Ke6 *\n",
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let got = parse_lines(&String::from_utf8(out.stdout).unwrap());
    assert_eq!(got[0]["termination"], "insufficient_material");
    assert_eq!(got[0]["plies"], 4);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("1... Kd7") && stderr.contains("after the game had ended"),
        "{stderr}"
    );
    // A move that is illegal on the board is still an error after the end.
    let out =
        replay_text("[FEN \"4k3/8/8/8/8/8/p7/1B2K3 w - - 0 1\"]\n[SetUp \"1\"]\n\n1. Bxa2 Kd5 *\n");
    assert_eq!(out.status.code(), Some(2));
}
