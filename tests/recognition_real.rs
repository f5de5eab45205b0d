//! Move recognition on real footage and photos in ../shared/data/real.
//! Every test SKIPS (passes with a message) when that folder is absent.

use std::path::{Path, PathBuf};
use std::process::Command;

use chessbot::game::pgn::parse_games;

fn real_root() -> Option<PathBuf> {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/data/real");
    if p.is_dir() {
        Some(p)
    } else {
        eprintln!(
            "SKIP: {} is absent (real footage not available)",
            p.display()
        );
        None
    }
}

fn pgn_moves(path: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(path).unwrap();
    parse_games(&text).unwrap().remove(0).moves
}

#[test]
fn record_reproduces_the_scholars_mate_video() {
    let Some(root) = real_root() else { return };
    let video = root.join("webcam_wooden_boards/video/scholarsmate.avi");
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("game.pgn");
    let run = Command::new(env!("CARGO_BIN_EXE_chessbot"))
        .args(["record", "--video"])
        .arg(&video)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&run.stdout);
    eprintln!("{stdout}{}", String::from_utf8_lossy(&run.stderr));
    assert!(run.status.success());
    let expected = pgn_moves(&root.join("webcam_wooden_boards/video/scholarsmate.pgn"));
    assert_eq!(
        expected,
        ["e4", "e5", "Qh5", "Nc6", "Bc4", "Nf6", "Qxf7#"].map(String::from)
    );
    assert_eq!(pgn_moves(&out), expected);
    assert!(std::fs::read_to_string(&out).unwrap().contains("1-0"));
}

#[test]
fn recognize_finds_the_move_between_consecutive_green_vinyl_photos() {
    let Some(root) = real_root() else { return };
    let run = Command::new(env!("CARGO_BIN_EXE_chessbot"))
        .args(["recognize", "--json", "--labels"])
        .arg(root.join("green_vinyl_game/labels.csv"))
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let doc: serde_json::Value = serde_json::from_slice(&run.stdout).unwrap();
    // 29 consecutive pairs differ by one legal move (side to move: the
    // colour that moved); measured: 26 recognized, the other 3 left
    // undecided (unexplained/uncertain), none wrong.
    assert_eq!(doc["pairs"], 29);
    assert!(doc["right"].as_u64().unwrap() >= 26, "{doc}");
    for r in doc["results"].as_array().unwrap() {
        assert!(
            r["right"] == true || r["got"].is_null(),
            "a wrong move was given: {r}"
        );
    }
}
