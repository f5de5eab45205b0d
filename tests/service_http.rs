//! The robot service over its HTTP API: modes, questions, errors, security,
//! and resuming after a restart.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use chessbot::config::GameConfig;
use chessbot::service::core::Core;
use chessbot::service::http::{router, Access};
use chessbot::service::runtime::{MovePlayer, Service};
use chessbot::service::voice::Voice;
use http_body_util::BodyExt;
use serde_json::{json, Value};
use shakmaty::{Chess, Move};
use tower::ServiceExt;

mod common;
use common::FirstMove;

/// Test double: records the moves the arm was asked to play.
struct Recorder(Arc<Mutex<Vec<String>>>);
impl MovePlayer for Recorder {
    fn play(&mut self, _before: &Chess, mv: Move) -> Result<(), String> {
        self.0.lock().unwrap().push(chessbot::game::uci_of(mv));
        Ok(())
    }
    fn stop(&mut self) {}
}

struct Rig {
    app: axum::Router,
    arm_moves: Arc<Mutex<Vec<String>>>,
    _dir: Option<tempfile::TempDir>,
}

fn dirs(root: &std::path::Path) -> GameConfig {
    GameConfig {
        games_dir: root.join("games"),
        journal_dir: root.join("journal"),
        ..GameConfig::default()
    }
}

fn rig_in(access: Access, has_arm: bool, root: &std::path::Path) -> Rig {
    let cfg = dirs(root);
    let arm_moves = Arc::new(Mutex::new(Vec::new()));
    let core = Core::new(cfg.clone(), has_arm).unwrap();
    let player: Option<Box<dyn MovePlayer>> = if has_arm {
        Some(Box::new(Recorder(arm_moves.clone())))
    } else {
        None
    };
    let service = Service::new(
        core,
        Voice::silent(),
        Some(Box::new(FirstMove)),
        player,
        Box::new(|| 1_764_547_200_000),
    );
    Rig {
        app: router(service, access),
        arm_moves,
        _dir: None,
    }
}

fn rig_with(access: Access, has_arm: bool) -> Rig {
    let dir = tempfile::tempdir().unwrap();
    let mut r = rig_in(access, has_arm, dir.path());
    r._dir = Some(dir);
    r
}

fn rig(has_arm: bool) -> Rig {
    rig_with(Access::default(), has_arm)
}

async fn call(
    app: &axum::Router,
    method: &str,
    path: &str,
    body: Option<&str>,
    token: Option<&str>,
) -> (StatusCode, String) {
    let mut req = Request::builder().method(method).uri(path);
    if body.is_some() {
        req = req.header("content-type", "application/json");
    }
    if let Some(t) = token {
        req = req.header("authorization", format!("Bearer {t}"));
    }
    let req = req.body(Body::from(body.unwrap_or("").to_owned())).unwrap();
    let res = app.clone().oneshot(req).await.unwrap();
    let status = res.status();
    let bytes = res.into_body().collect().await.unwrap().to_bytes();
    (status, String::from_utf8_lossy(&bytes).into_owned())
}

async fn post(app: &axum::Router, path: &str, body: Value) -> (StatusCode, Value) {
    let (s, b) = call(app, "POST", path, Some(&body.to_string()), None).await;
    (s, serde_json::from_str(&b).unwrap_or(Value::Null))
}

async fn state(app: &axum::Router) -> Value {
    let (_, b) = call(app, "GET", "/api/state", None, None).await;
    serde_json::from_str(&b).unwrap()
}

async fn wait_for_moves(app: &axum::Router, n: usize) -> Value {
    for _ in 0..200 {
        let s = state(app).await;
        if s["moves"].as_array().unwrap().len() >= n {
            return s;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("never reached {n} moves: {}", state(app).await);
}

#[tokio::test]
async fn play_mode_engine_replies_and_arm_plays_its_move() {
    let r = rig(true);
    assert_eq!(state(&r.app).await["running"], false);
    let (s, _) = post(
        &r.app,
        "/api/game/new",
        json!({"mode": "play", "color": "white", "level": 3}),
    )
    .await;
    assert_eq!(s, StatusCode::OK);
    let (s, body) = post(&r.app, "/api/move", json!({"move": "e4"})).await;
    assert_eq!(s, StatusCode::OK, "{body}");
    let st = wait_for_moves(&r.app, 2).await;
    assert_eq!(st["moves"][0], "e4");
    // The engine's reply was given to the arm; the person's move was not
    // (in play mode the person moves their own pieces).
    let reply = st["last_move"].as_str().unwrap().to_owned();
    for _ in 0..100 {
        if !r.arm_moves.lock().unwrap().is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(*r.arm_moves.lock().unwrap(), vec![reply]);
    // It is the person's move again; the robot refuses to move for them twice.
    assert_eq!(st["turn"], "white");
}

#[tokio::test]
async fn errors_are_clear_json_4xx() {
    let r = rig(false);
    let (s, b) = post(&r.app, "/api/move", json!({"move": "e4"})).await;
    assert_eq!(s, StatusCode::CONFLICT);
    assert!(b["error"].as_str().unwrap().contains("no game"), "{b}");
    post(&r.app, "/api/game/new", json!({"mode": "record"})).await;
    let (s, b) = post(&r.app, "/api/move", json!({"move": "e5"})).await;
    assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(b["error"].as_str().unwrap().contains("e5"), "{b}");
    let (s, b) = call(&r.app, "POST", "/api/move", Some("{not json"), None).await;
    assert_eq!(s, StatusCode::BAD_REQUEST, "{b}");
    assert!(b.contains("error"));
    let (s, _) = post(&r.app, "/api/move", json!({"mvoe": "e4"})).await;
    assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY);
    let big = format!("{{\"move\": \"{}\"}}", "x".repeat(40_000));
    let (s, _) = call(&r.app, "POST", "/api/move", Some(&big), None).await;
    assert_eq!(s, StatusCode::PAYLOAD_TOO_LARGE);
    let (s, _) = call(&r.app, "GET", "/api/nothing", None, None).await;
    assert_eq!(s, StatusCode::NOT_FOUND);
    let (s, b) = post(&r.app, "/api/game/new", json!({"level": 99})).await;
    assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(b["error"].as_str().unwrap().contains("level"), "{b}");
    let (s, b) = post(&r.app, "/api/game/new", json!({"fen": "bad fen"})).await;
    assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(b["error"].as_str().unwrap().contains("bad fen"), "{b}");
    // The game in progress was not touched by any of this.
    assert_eq!(state(&r.app).await["moves"], json!([]));
}

#[tokio::test]
async fn token_guards_changes_and_optionally_reads() {
    let token = "0123456789abcdef0123";
    let r = rig_with(
        Access {
            token: Some(token.into()),
            public_reads: true,
        },
        false,
    );
    let body = json!({"mode": "record"}).to_string();
    let (s, _) = call(&r.app, "POST", "/api/game/new", Some(&body), None).await;
    assert_eq!(s, StatusCode::UNAUTHORIZED);
    let (s, _) = call(
        &r.app,
        "POST",
        "/api/game/new",
        Some(&body),
        Some("wrong-token-wrong-token"),
    )
    .await;
    assert_eq!(s, StatusCode::UNAUTHORIZED);
    let (s, _) = call(&r.app, "POST", "/api/game/new", Some(&body), Some(token)).await;
    assert_eq!(s, StatusCode::OK);
    let (s, _) = call(&r.app, "GET", "/api/state", None, None).await;
    assert_eq!(s, StatusCode::OK, "public reads");
    let private = rig_with(
        Access {
            token: Some(token.into()),
            public_reads: false,
        },
        false,
    );
    let (s, _) = call(&private.app, "GET", "/api/state", None, None).await;
    assert_eq!(s, StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn record_mode_serves_live_pgn_and_asks_for_promotion_piece() {
    let r = rig(false);
    post(
        &r.app,
        "/api/game/new",
        json!({"mode": "record", "fen": "8/4P1k1/8/8/8/8/p7/4K3 w - - 0 1"}),
    )
    .await;
    let (s, b) = post(&r.app, "/api/move", json!({"move": "e7e8"})).await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(b["question"]["kind"], "promotion");
    assert_eq!(b["moves"], json!([]));
    let (s, b) = post(&r.app, "/api/promotion", json!({"piece": "n"})).await;
    assert_eq!(s, StatusCode::OK, "{b}");
    assert_eq!(b["moves"], json!(["e8=N+"]));
    assert!(b["message"].as_str().unwrap().contains("knight"));
    let (s, pgn) = call(&r.app, "GET", "/games/current.pgn", None, None).await;
    assert_eq!(s, StatusCode::OK);
    assert!(
        pgn.contains("[FEN \"8/4P1k1/8/8/8/8/p7/4K3 w - - 0 1\"]"),
        "{pgn}"
    );
    assert!(pgn.contains("1. e8=N+"), "{pgn}");
}

#[tokio::test]
async fn assist_mode_arm_plays_the_persons_move_and_estop_blocks_it() {
    let r = rig(true);
    post(
        &r.app,
        "/api/game/new",
        json!({"mode": "assist", "opponent": "person"}),
    )
    .await;
    let (s, b) = post(&r.app, "/api/move", json!({"move": "d4"})).await;
    assert_eq!(s, StatusCode::OK, "{b}");
    for _ in 0..100 {
        if !r.arm_moves.lock().unwrap().is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(*r.arm_moves.lock().unwrap(), vec!["d2d4".to_owned()]);
    let (_, b) = post(&r.app, "/api/estop", json!({})).await;
    assert_eq!(b["arm"]["state"], "stopped");
    let (s, _) = post(&r.app, "/api/move", json!({"move": "d5"})).await;
    assert_eq!(s, StatusCode::CONFLICT, "no move while stopped");
    post(&r.app, "/api/resume", json!({})).await;
    let (s, _) = post(&r.app, "/api/move", json!({"move": "d5"})).await;
    assert_eq!(s, StatusCode::OK);
}

#[tokio::test]
async fn a_restart_resumes_the_journaled_game_paused() {
    let dir = tempfile::tempdir().unwrap();
    {
        let r = rig_in(Access::default(), false, dir.path());
        post(&r.app, "/api/game/new", json!({"mode": "record"})).await;
        for m in ["e4", "c5", "Nf3"] {
            post(&r.app, "/api/move", json!({"move": m})).await;
        }
    } // the process "dies" here; only the files remain
    let core = Core::new(dirs(dir.path()), false).unwrap();
    let st = core.status();
    assert_eq!(st.moves, vec!["e4", "c5", "Nf3"]);
    assert!(
        st.paused,
        "a resumed game waits for the board to be checked"
    );
    assert!(st.message.contains("Resumed"));
}

#[tokio::test]
async fn draw_offer_take_back_and_resignation() {
    let r = rig(false);
    post(&r.app, "/api/game/new", json!({"mode": "record"})).await;
    post(&r.app, "/api/move", json!({"move": "e4"})).await;
    let (_, b) = post(&r.app, "/api/takeback", json!({})).await;
    assert_eq!(b["moves"], json!([]));
    let (_, b) = post(&r.app, "/api/draw/offer", json!({})).await;
    assert_eq!(b["question"]["kind"], "draw_offer");
    let (_, b) = post(&r.app, "/api/draw/accept", json!({})).await;
    assert_eq!(b["result"], "1/2-1/2");
    let (s, _) = post(&r.app, "/api/move", json!({"move": "e4"})).await;
    assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY, "game over");
    let (_, b) = post(&r.app, "/api/game/finish", json!({})).await;
    let file = b["pgn_file"].as_str().unwrap();
    assert!(std::fs::read_to_string(file)
        .unwrap()
        .contains("[Result \"1/2-1/2\"]"));
    post(&r.app, "/api/game/new", json!({"mode": "record"})).await;
    let (_, b) = post(&r.app, "/api/resign", json!({})).await;
    assert_eq!(b["result"], "0-1", "White (to move) resigned");
}

#[tokio::test]
async fn a_board_stated_square_by_square_enters_the_moves_that_lead_there() {
    let r = rig(false);
    post(&r.app, "/api/game/new", json!({"mode": "record"})).await;
    // After 1. e4 e5 2. Nf3, said as occupancy (rank 8 first).
    let after = "BBBBBBBB/BBBB.BBB/......../....B.../....W.../.....W../WWWW.WWW/WWWWWW.W";
    let (s, b) = post(&r.app, "/api/board", json!({"occupancy": after})).await;
    assert_eq!(s, StatusCode::OK, "{b}");
    assert_eq!(b["moves"], json!(["e4", "e5", "Nf3"]));
    // The same board again: nothing to do.
    let (s, b) = post(&r.app, "/api/board", json!({"occupancy": after})).await;
    assert_eq!(s, StatusCode::OK, "{b}");
    assert_eq!(b["moves"], json!(["e4", "e5", "Nf3"]));
    // A board no legal line reaches, and a malformed one: 422 with why.
    let odd = "BBBBBBBB/BBBB.BBB/......../....B.../....W.../.....W../WWWW.WWW/WWWWWWWW";
    let (s, b) = post(&r.app, "/api/board", json!({"occupancy": odd})).await;
    assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(
        b["error"].as_str().unwrap().contains("no single line"),
        "{b}"
    );
    let (s, b) = post(&r.app, "/api/board", json!({"occupancy": "WWW"})).await;
    assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(b["error"].as_str().unwrap().contains("8 ranks"), "{b}");
    assert_eq!(state(&r.app).await["moves"], json!(["e4", "e5", "Nf3"]));
}

#[tokio::test]
async fn a_stated_board_never_enters_the_robots_move() {
    let r = rig(false);
    post(
        &r.app,
        "/api/game/new",
        json!({"mode": "play", "color": "white", "level": 1}),
    )
    .await;
    // 1. e4 e5: the second move is the robot's (Black).
    let after = "BBBBBBBB/BBBB.BBB/......../....B.../....W.../......../WWWW.WWW/WWWWWWWW";
    let (s, b) = post(&r.app, "/api/board", json!({"occupancy": after})).await;
    assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY, "{b}");
    assert!(
        b["error"].as_str().unwrap().contains("robot's move e5"),
        "{b}"
    );
}

#[test]
fn clocks_run_for_the_side_to_move_stop_when_paused_and_a_fallen_flag_ends_the_game() {
    use chessbot::service::core::{Effect, NewGameRequest};
    let dir = tempfile::tempdir().unwrap();
    let mut core = Core::new(dirs(dir.path()), false).unwrap();
    let t0: i64 = 1_764_547_200_000;
    let req = |tc: &str| -> NewGameRequest {
        serde_json::from_value(json!({"mode": "record", "time_control": tc})).unwrap()
    };
    let e = core.new_game(req("1 + x"), t0).unwrap_err().to_string();
    assert!(e.contains("MINUTES+SECONDS"), "{e}");
    core.new_game(req("1+2"), t0).unwrap();
    let clock = |core: &Core| serde_json::to_value(core.status().clock).unwrap();
    assert_eq!(
        clock(&core),
        json!({"control": "1+2", "white_ms": 60_000, "black_ms": 60_000, "running": "white"})
    );
    // White moves after 10 s: 50 s left plus the 2 s increment.
    core.human_move("e4", t0 + 10_000).unwrap();
    core.tick(t0 + 20_000);
    assert_eq!(
        clock(&core),
        json!({"control": "1+2", "white_ms": 52_000, "black_ms": 50_000, "running": "black"})
    );
    // Paused at 30 s: Black's clock stops with 40 s left, and stays so.
    core.pause();
    let (changed, _) = core.tick(t0 + 30_000);
    assert!(changed);
    core.tick(t0 + 90_000);
    assert_eq!(clock(&core)["black_ms"], 40_000);
    assert_eq!(clock(&core)["running"], Value::Null);
    core.resume();
    core.tick(t0 + 100_000);
    assert_eq!(clock(&core)["running"], "black");
    // A millisecond before its 40 s are used Black's flag is still up;
    // at 40 s it falls.
    let (_, effects) = core.tick(t0 + 139_999);
    assert!(effects.is_empty());
    let (changed, effects) = core.tick(t0 + 140_000);
    assert!(changed);
    assert!(
        effects
            .iter()
            .any(|e| matches!(e, Effect::Say(t) if t.contains("White wins"))),
        "{effects:?}"
    );
    let st = core.status();
    assert_eq!(st.result, "1-0");
    assert_eq!(st.termination.as_deref(), Some("loss on time"));
    assert_eq!(clock(&core)["running"], Value::Null);
    // A move after the flag fell is not played.
    assert!(core.human_move("e5", t0 + 141_000).is_err());
    assert_eq!(core.status().moves, ["e4"]);
}

#[test]
fn a_resumed_game_keeps_its_mode_colour_level_and_clocks_and_the_arm_is_not_timed() {
    use chessbot::service::core::{Effect, NewGameRequest};
    let dir = tempfile::tempdir().unwrap();
    let t0: i64 = 1_764_547_200_000;
    {
        let mut core = Core::new(dirs(dir.path()), true).unwrap();
        let req: NewGameRequest = serde_json::from_value(
            json!({"mode": "play", "color": "black", "level": 3, "time_control": "3+2"}),
        )
        .unwrap();
        let effects = core.new_game(req, t0).unwrap();
        assert!(effects.contains(&Effect::ThinkFor(shakmaty::Color::White)));
        // The robot may think for 1/25 of its 3 minutes plus 3/4 of the
        // increment (the engine's own time manager).
        assert_eq!(
            core.think_time(t0),
            Some(std::time::Duration::from_millis(180_000 / 25 + 1_500))
        );
        let e4 = chessbot::game::parse_move(&shakmaty::Chess::default(), "e4").unwrap();
        core.engine_move(e4, Some(20), t0 + 1_000).unwrap();
        // While the arm plays e4 neither clock runs.
        core.tick(t0 + 5_000);
        let clock = serde_json::to_value(core.status().clock).unwrap();
        assert_eq!(clock["running"], Value::Null, "{clock}");
        assert_eq!(clock["white_ms"], 181_000);
        assert_eq!(clock["black_ms"], 180_000);
        core.arm_done();
        core.tick(t0 + 6_000);
        core.human_move("e5", t0 + 16_000).unwrap();
        assert_eq!(core.status().clock.unwrap().black_ms, 172_000);
    } // the process "dies" while the robot is to move
    let mut core = Core::new(dirs(dir.path()), true).unwrap();
    let st = core.status();
    assert_eq!(st.moves, ["e4", "e5"]);
    assert_eq!(
        (st.mode, st.human, st.level),
        (
            chessbot::service::core::Mode::Play,
            chessbot::service::core::ColorName::Black,
            3
        )
    );
    assert!(st.paused);
    assert_eq!(
        serde_json::to_value(st.clock).unwrap(),
        json!({"control": "3+2", "white_ms": 181_000, "black_ms": 172_000, "running": null})
    );
    // Resuming gives the move back to the robot, and its clock runs.
    let effects = core.resume();
    assert!(effects.contains(&Effect::ThinkFor(shakmaty::Color::White)));
    core.tick(t0 + 100_000);
    assert_eq!(
        core.status().clock.unwrap().running,
        Some(chessbot::service::core::ColorName::White)
    );
}

#[test]
fn a_new_game_takes_the_configs_time_control_unless_the_request_says() {
    use chessbot::service::core::NewGameRequest;
    let dir = tempfile::tempdir().unwrap();
    let cfg = GameConfig {
        time_control: "10+5".into(),
        ..dirs(dir.path())
    };
    let mut core = Core::new(cfg, false).unwrap();
    assert_eq!(core.status().default_time_control, "10+5");
    let req = |v: Value| -> NewGameRequest { serde_json::from_value(v).unwrap() };
    core.new_game(req(json!({"mode": "record"})), 0).unwrap();
    assert_eq!(core.status().clock.unwrap().control, "10+5");
    core.new_game(req(json!({"mode": "record", "time_control": ""})), 0)
        .unwrap();
    assert_eq!(core.status().clock, None);
    core.new_game(req(json!({"mode": "record", "time_control": "3+2"})), 0)
        .unwrap();
    assert_eq!(core.status().clock.unwrap().control, "3+2");
}

#[test]
fn an_assist_game_resumed_without_the_arm_goes_on_with_the_people_moving() {
    use chessbot::service::core::{Mode, NewGameRequest};
    let dir = tempfile::tempdir().unwrap();
    for (opponent, mode, said) in [
        ("person", Mode::Record, "record mode"),
        ("engine", Mode::Play, "play mode"),
    ] {
        {
            let mut core = Core::new(dirs(dir.path()), true).unwrap();
            let req: NewGameRequest =
                serde_json::from_value(json!({"mode": "assist", "opponent": opponent})).unwrap();
            core.new_game(req, 0).unwrap();
        } // restarted without the arm
        let mut core = Core::new(dirs(dir.path()), false).unwrap();
        let st = core.status();
        assert_eq!(st.mode, mode, "{opponent}");
        assert!(st.message.contains(said), "{}", st.message);
        core.finish().unwrap();
    }
}

#[test]
fn a_second_process_on_the_same_journal_directory_is_refused_until_the_first_is_gone() {
    use chessbot::service::core::NewGameRequest;
    let dir = tempfile::tempdir().unwrap();
    let mut first = Core::new(dirs(dir.path()), false).unwrap();
    let req: NewGameRequest = serde_json::from_value(json!({"mode": "record"})).unwrap();
    first.new_game(req, 0).unwrap();
    // Two writers would interleave their records in one journal file.
    let err = Core::new(dirs(dir.path()), false).unwrap_err().to_string();
    assert!(err.contains("in use by another chessbot process"), "{err}");
    assert!(
        err.contains(&format!("(pid {})", std::process::id())),
        "{err}"
    );
    assert!(err.contains("journal"), "{err}");
    // The first one's game is untouched and goes on.
    first.human_move("e2e4", 1_000).unwrap();
    drop(first);
    // Gone (as a process that exits or dies): the next one resumes its game.
    let second = Core::new(dirs(dir.path()), false).unwrap();
    assert_eq!(second.session().unwrap().game().moves().len(), 1);
}
