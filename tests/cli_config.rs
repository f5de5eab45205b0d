//! The binary refuses a bad configuration before doing anything, naming
//! the file, the key and what is allowed.

use std::process::Command;

fn chessbot(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_chessbot"))
        .args(args)
        .output()
        .expect("run chessbot")
}

#[test]
fn bad_config_value_exits_non_zero_naming_file_and_key() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.toml");
    std::fs::write(&path, "[log]\nformat = \"xml\"\n").unwrap();
    let out = chessbot(&["--config", path.to_str().unwrap(), "config"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("bad.toml"), "{err}");
    assert!(err.contains("format"), "{err}");
    assert!(
        err.contains("human") && err.contains("json"),
        "lists allowed values: {err}"
    );
}

#[test]
fn unknown_key_is_rejected() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("typo.toml");
    std::fs::write(&path, "[game]\ngames_dri = \"g\"\n").unwrap();
    let out = chessbot(&["--config", path.to_str().unwrap(), "config"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("games_dri"), "{err}");
}

#[test]
fn missing_config_file_is_named() {
    let out = chessbot(&["--config", "/nonexistent/chessbot.toml", "config"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("/nonexistent/chessbot.toml"));
}

#[test]
fn shipped_config_loads() {
    let out = chessbot(&["config"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("games_dir"));
}

#[test]
fn a_game_directory_another_process_holds_is_refused_once_and_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    // This test process stands for the chessbot already running there.
    let held = chessbot::game::journal::lock_dir(&dir.path().join("journal")).unwrap();
    let out = chessbot(&[
        "play",
        "--sim",
        "--headless",
        "--moves",
        "2",
        "--dir",
        dir.path().to_str().unwrap(),
    ]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    let why = format!(
        "in use by another chessbot process (pid {})",
        std::process::id()
    );
    assert_eq!(err.matches(&why).count(), 1, "said once: {err}");
    assert!(!dir.path().join("journal").join("current.journal").exists());
    drop(held);
}
