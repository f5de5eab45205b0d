//! Whole robot games against the simulator, headless: the scripted person
//! moves with a hand, the camera side (ground-truth stand-in) and the real
//! tracker see the moves, the engine replies, the real arm driver plays
//! the replies over the simulated servo bus, the jaws move the pieces.

use chessbot::config::GameConfig;
use chessbot::sim::robot_game::{
    parse_faults, PlayMode, PlaySpec, SimRobotGame, Summary, VisionSpec,
};
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
    assert_eq!(
        uci, sum.truth,
        "journaled game vs what happened on the board"
    );
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
    let sum = SimRobotGame::new(spec(dir.path(), 12, 3))
        .unwrap()
        .run()
        .unwrap();
    println!("{}", sum.to_text());
    assert_eq!(sum.plies, 12);
    assert_pgn_is_truth(&sum);
    assert_eq!(sum.recognition_errors, 0);
    assert_eq!(sum.arm_moves, 6);
    assert!(sum.arm_faults.is_empty(), "{:?}", sum.arm_faults);
    assert!(sum.pgn_path.is_some());
}

#[test]
fn a_game_is_played_to_its_result() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = spec(dir.path(), 300, 5);
    // A weak person against a decent robot: the game ends, usually in mate.
    s.person_level = 0;
    s.level = 12;
    let sum = SimRobotGame::new(s).unwrap().run().unwrap();
    println!("{}", sum.to_text());
    assert_ne!(sum.result, "*", "the game reached a result");
    assert_pgn_is_truth(&sum);
    assert_eq!(sum.recognition_errors, 0, "{:?}", sum.recognition_notes);
    assert!(sum.pgn.contains(&format!("[Result \"{}\"]", sum.result)));
}

#[test]
fn record_mode_records_two_people() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = spec(dir.path(), 16, 7);
    s.mode = PlayMode::Record;
    let sum = SimRobotGame::new(s).unwrap().run().unwrap();
    println!("{}", sum.to_text());
    assert_eq!(sum.plies, 16);
    assert_pgn_is_truth(&sum);
    assert_eq!(sum.recognition_errors, 0, "{:?}", sum.recognition_notes);
    assert_eq!(sum.arm_moves, 0);
}

#[test]
fn faults_pause_safely_and_the_game_goes_on_with_nothing_lost() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = spec(dir.path(), 14, 11);
    s.faults = parse_faults("corrupt@2,illegal@3,servo-dead@4,camera-lost@5,engine-crash@6,kill@8")
        .unwrap();
    let sum = SimRobotGame::new(s).unwrap().run().unwrap();
    println!("{}", sum.to_text());
    assert_eq!(sum.paused_reason, None);
    assert_eq!(sum.plies, 14, "the game went on to the end");
    assert_pgn_is_truth(&sum);
    assert_eq!(sum.recognition_errors, 0, "{:?}", sum.recognition_notes);
    // Corrupted replies are absorbed by the driver's retries.
    assert!(sum.bus_retries >= 2, "{} retries", sum.bus_retries);
    // The person's illegal move, shown and taken back, never entered the
    // game (the tracker waits 1.5 s before complaining about a settled
    // board no legal move explains; the person took it back sooner).
    assert_eq!(sum.illegal_shown, 1);
    // The dead servo stopped the arm once; it was repaired and recovered.
    assert_eq!(sum.arm_faults.len(), 1, "{:?}", sum.arm_faults);
    assert!(
        sum.arm_faults[0].contains("servo 2"),
        "{}",
        sum.arm_faults[0]
    );
    // The camera went dark for the whole of the person's move at ply 5: the
    // move was still recognised once frames came back (counted above: no
    // recognition errors).
    assert_eq!(sum.camera_outages, 1);
    assert!(
        sum.recoveries.iter().any(|r| r.contains("camera was lost")),
        "{:?}",
        sum.recoveries
    );
    // The engine failed once at ply 6: paused, resumed, answered.
    assert_eq!(sum.engine_failures, 1);
    assert!(
        sum.recoveries.iter().any(|r| r.contains("engine crashed")),
        "{:?}",
        sum.recoveries
    );
    // The kill mid-move: one restart from the journal, recovered.
    assert_eq!(sum.restarts, 1);
    assert!(
        sum.recoveries.iter().any(|r| r.starts_with("restart")),
        "{:?}",
        sum.recoveries
    );
    // Every robot move is on the board: by the arm, or finished by hand.
    assert_eq!(sum.truth.len(), 14);
}

/// `kill -9` of the real process during the game, then the same command
/// again: the journal brings the game back, the person sets the board up
/// as journaled, and the game goes on with every journaled move kept.
#[test]
fn the_command_survives_kill_9_and_resumes_from_the_journal() {
    use std::process::{Command, Stdio};
    let dir = tempfile::tempdir().unwrap();
    let exe = env!("CARGO_BIN_EXE_chessbot");
    let args = |speed: &str| {
        let mut c = Command::new(exe);
        c.args([
            "play",
            "--sim",
            "--headless",
            "--moves",
            "12",
            "--seed",
            "4",
        ])
        .args(["--level", "6", "--speed", speed, "--dir"])
        .arg(dir.path())
        .env("RUST_LOG", "warn")
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
        c
    };
    let journaled = || -> Vec<String> {
        std::fs::read_to_string(dir.path().join("journal/current.journal"))
            .unwrap_or_default()
            .lines()
            // Each line: a JSON record, a tab, its checksum.
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l.split('\t').next()?).ok())
            .filter_map(|v| v.get("uci").and_then(|u| u.as_str()).map(str::to_owned))
            .collect()
    };
    // Slowed down 20x: arm moves take ~0.5 s of real time, person moves
    // almost none, so the kill lands in (or right around) a robot move.
    // Killed once the first move is journaled, however long a loaded
    // machine takes to get there (a fixed 1.5 s once fell before it).
    let mut child = args("20").spawn().unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    while journaled().is_empty() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    child.kill().unwrap(); // SIGKILL
    let _ = child.wait();
    let before = journaled();
    assert!(
        !before.is_empty() && before.len() < 12,
        "{} moves journaled",
        before.len()
    );
    let out = args("0").output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("recovered: restart:"), "{text}");
    assert!(text.contains("moves played: 12 plies"), "{text}");
    // The finished PGN begins with every move journaled before the kill.
    let pgn_dir = dir.path().join("games");
    let file = std::fs::read_dir(&pgn_dir)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let games = chessbot::game::pgn::parse_games(&std::fs::read_to_string(file).unwrap()).unwrap();
    let (game, _) = chessbot::game::replay::replay(0, &games[0]).unwrap();
    let ucis: Vec<String> = game.moves().iter().map(|m| m.uci.clone()).collect();
    assert_eq!(ucis.len(), 12);
    assert_eq!(ucis[..before.len()], before[..]);
}

/// The same game seen through the camera: every frame rendered (480x360,
/// overhead) and read by vision and the `BoardWatcher`.
#[test]
fn a_game_seen_through_rendered_frames_and_vision() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = spec(dir.path(), 6, 2);
    s.vision = Some(VisionSpec {
        camera: "overhead".parse().unwrap(),
        width: 480,
        height: 360,
    });
    let sum = SimRobotGame::new(s).unwrap().run().unwrap();
    println!("{}", sum.to_text());
    assert_eq!(sum.plies, 6);
    assert_pgn_is_truth(&sum);
    assert_eq!(sum.recognition_errors, 0, "{:?}", sum.recognition_notes);
    assert_eq!(sum.robot_move_mismatches, 0, "{:?}", sum.recoveries);
    assert!(sum.vision_frames > 200, "{} frames", sum.vision_frames);
}

/// A kill before the jaws reach the piece: after the restart the board
/// still shows the position before the robot's journaled move, so the arm
/// makes that move again.
#[test]
fn a_kill_before_the_grasp_makes_the_robot_move_again() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = spec(dir.path(), 8, 13);
    s.faults = parse_faults("kill@4:800").unwrap();
    let sum = SimRobotGame::new(s).unwrap().run().unwrap();
    println!("{}", sum.to_text());
    assert_eq!(sum.restarts, 1);
    assert!(
        sum.recoveries
            .iter()
            .any(|r| r.contains("journaled move") && r.contains("made again")),
        "{:?}",
        sum.recoveries
    );
    assert_eq!(sum.plies, 8);
    assert_eq!(
        sum.arm_moves, 4,
        "the interrupted move counted once, when done"
    );
    assert_pgn_is_truth(&sum);
}

/// Bad options are refused with a message, before anything moves.
#[test]
fn bad_play_options_are_refused_with_a_reason() {
    use std::process::Command;
    let exe = env!("CARGO_BIN_EXE_chessbot");
    let dir = tempfile::tempdir().unwrap();
    for (args, says) in [
        (
            vec!["play", "--sim", "--headless", "--faults", "melt@2"],
            "unknown kind",
        ),
        (
            vec!["play", "--sim", "--headless", "--faults", "kill@0"],
            "the ply must be",
        ),
        (vec!["play", "--sim", "--headless", "--speed=-3"], "--speed"),
        (
            vec!["play", "--sim", "--faults", "engine-crash@2"],
            "engine-crash needs --headless",
        ),
        (vec!["play", "--headless"], "`chessbot play` needs --sim"),
    ] {
        let out = Command::new(exe)
            .args(&args)
            .arg("--dir")
            .arg(dir.path())
            .output()
            .unwrap();
        assert!(!out.status.success(), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(says), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
    // Nothing was journaled.
    assert!(!dir.path().join("journal/current.journal").exists());
}

/// Hosted by the web service (as `play --sim` without `--headless`): the
/// service's engine chooses the robot's moves, its arm thread hands them to
/// the simulated arm, and the service's status follows the game.
#[test]
fn the_web_service_hosts_the_game_with_its_engine_and_the_simulated_arm() {
    use chessbot::service::core::Core;
    use chessbot::service::runtime::Service;
    use chessbot::service::voice::Voice;
    use chessbot::sim::robot_game::{sim_arm_player, CoreHost, EngineChooser, ENGINE_NODES};
    use std::sync::Arc;

    let dir = tempfile::tempdir().unwrap();
    let s = spec(dir.path(), 8, 3);
    let core = Core::new(s.game.clone(), true).unwrap();
    let (player, link) = sim_arm_player();
    let service = Service::new(
        core,
        Voice::silent(),
        Some(Box::new(EngineChooser::new(3, ENGINE_NODES))),
        Some(Box::new(player)),
        Box::new(|| 0),
    );
    let mut updates = service.subscribe();
    let host: Arc<dyn CoreHost> = Arc::new(service.clone());
    let game = SimRobotGame::new(s)
        .unwrap()
        .hosted_by(host)
        .with_service_arm(link);
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(game.run());
    });
    let sum = rx
        .recv_timeout(std::time::Duration::from_secs(120))
        .expect("the hosted game finishes")
        .unwrap();
    println!("{}", sum.to_text());
    assert_eq!(sum.plies, 8);
    assert_eq!(sum.arm_moves, 4);
    assert_pgn_is_truth(&sum);
    // The page was told about the moves as they happened.
    let mut seen_moves = 0;
    loop {
        match updates.try_recv() {
            Ok(st) => seen_moves = seen_moves.max(st.moves.len()),
            Err(tokio::sync::broadcast::error::TryRecvError::Lagged(_)) => continue,
            Err(_) => break,
        }
    }
    assert!(seen_moves >= 7, "status updates showed {seen_moves} moves");
}
