//! The `chessbot arm` subcommands as a user runs them.

use std::process::Command;

fn chessbot() -> Command {
    Command::new(env!("CARGO_BIN_EXE_chessbot"))
}

#[test]
fn audit_passes_for_the_default_board() {
    let out = chessbot().args(["arm", "audit"]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("PASS"), "{text}");
}

#[test]
fn audit_fails_for_a_far_board_with_the_list() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("far.toml");
    std::fs::write(&cfg, "[arm.board]\ny_m = -0.6\n").unwrap();
    let out = chessbot()
        .args(["--config", cfg.to_str().unwrap(), "arm", "audit", "--json"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let entries = report["entries"].as_array().unwrap();
    let a1 = entries.iter().find(|e| e["place"] == "a1").unwrap();
    assert_eq!(a1["reachable"], false);
    assert!(a1["problem"].as_str().unwrap().contains("wrist"), "{a1}");
}

#[test]
fn plan_prints_json_with_the_capture_first() {
    let out = chessbot()
        .args([
            "arm",
            "plan",
            "--fen",
            "rnbqkbnr/ppp1pppp/8/3p4/4P3/8/PPPP1PPP/RNBQKBNR w KQkq - 0 2",
            "--move",
            "exd5",
            "--json",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let plan: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(plan["transfers"][0], "pawn d5 -> graveyard 1");
    assert_eq!(plan["uci"], "e4d5");
    let steps = plan["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 17);
    assert_eq!(steps[0]["servo_steps"].as_array().unwrap().len(), 6);
    assert!(plan["total_s"].as_f64().unwrap() > 0.0);
}

#[test]
fn illegal_move_is_a_clear_error() {
    let out = chessbot()
        .args([
            "arm",
            "plan",
            "--fen",
            "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1",
            "--move",
            "e2e5",
        ])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("e2e5"), "{err}");
}

#[test]
fn lerobot_calibration_is_imported_after_checking() {
    let dir = tempfile::tempdir().unwrap();
    let lerobot = dir.path().join("so101_follower.json");
    std::fs::write(
        &lerobot,
        r#"{
        "shoulder_pan": {"id": 1, "drive_mode": 0, "homing_offset": -1470, "range_min": 758, "range_max": 3292},
        "shoulder_lift": {"id": 2, "drive_mode": 0, "homing_offset": 157, "range_min": 612, "range_max": 3401},
        "elbow_flex": {"id": 3, "drive_mode": 0, "homing_offset": -1276, "range_min": 898, "range_max": 3102},
        "wrist_flex": {"id": 4, "drive_mode": 0, "homing_offset": -1180, "range_min": 928, "range_max": 3300},
        "wrist_roll": {"id": 5, "drive_mode": 0, "homing_offset": 27, "range_min": 177, "range_max": 3918},
        "gripper": {"id": 6, "drive_mode": 0, "homing_offset": -1434, "range_min": 2020, "range_max": 3375}
    }"#,
    )
    .unwrap();
    let target = dir.path().join("cal").join("arm.json");
    let cfg = dir.path().join("c.toml");
    std::fs::write(
        &cfg,
        format!("[arm]\ncalibration = {:?}\n", target.display().to_string()),
    )
    .unwrap();
    let out = chessbot()
        .args([
            "--config",
            cfg.to_str().unwrap(),
            "arm",
            "import-calibration",
            lerobot.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let written: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&target).unwrap()).unwrap();
    assert_eq!(written["elbow_flex"]["homing_offset"], -1276);
    // With it in place the audit uses it (and still passes).
    let out = chessbot()
        .args(["--config", cfg.to_str().unwrap(), "arm", "audit"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    // A file with a wrong ID is refused.
    let bad = dir.path().join("bad.json");
    std::fs::write(
        &bad,
        std::fs::read_to_string(&lerobot)
            .unwrap()
            .replace("\"id\": 3", "\"id\": 9"),
    )
    .unwrap();
    let out = chessbot()
        .args([
            "--config",
            cfg.to_str().unwrap(),
            "arm",
            "import-calibration",
            bad.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("elbow_flex"));
}

#[test]
fn calibrate_servos_on_a_missing_port_names_it_and_fails() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_chessbot"))
        .args(["calibrate", "servos", "--port", "/nonexistent/ttyACM9"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("/nonexistent/ttyACM9"), "{stderr}");
}
