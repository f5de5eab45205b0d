//! The service's camera side: rendered frames of a scripted person at the
//! simulated board go through the camera watch into the game the service
//! holds, in record mode (both sides from the board) and play mode (the
//! robot's move is expected and verified); a camera that fails is reported
//! and reopened. Small frames (480x360) keep renders cheap in debug builds.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use chessbot::camera::sim::SimCamera;
use chessbot::camera::{CameraError, Frame, FrameSource};
use chessbot::game::{parse_move, san_of};
use chessbot::recognition::WatcherConfig;
use chessbot::service::camera_task::{spawn_camera, CameraTaskOptions, OpenSource};
use chessbot::service::camera_watch::CameraWatch;
use chessbot::service::core::{CameraStatus, ColorName, Core, Effect, Mode, NewGameRequest};
use chessbot::sim::opponent::{OpponentStyle, ScriptTruth, ScriptedGame};
use chessbot::sim::{Realism, SceneSpec, World};
use chessbot::vision::image::RgbImage;

mod common;
use common::{messages, moves_from, quiet_service};
use shakmaty::{Chess, Move, Position};

/// Settled frames after the script's last move: the tracker needs a few
/// agreeing settled reads (~0.3 s) before it commits.
const TAIL_FRAMES: usize = 45;

fn sans(start: &Chess, moves: &[Move]) -> Vec<String> {
    let mut p = start.clone();
    moves
        .iter()
        .map(|&m| {
            let s = san_of(&p, m);
            p.play_unchecked(m);
            s
        })
        .collect()
}

fn scene() -> SceneSpec {
    SceneSpec {
        board: "wooden".parse().unwrap(),
        set: None,
        camera: "overhead".parse().unwrap(),
        width: 480,
        height: 360,
        realism: Realism::Webcam,
    }
}

fn calm() -> OpponentStyle {
    OpponentStyle {
        slide_chance: 0.0,
        quick_reply_chance: 0.0,
        ..OpponentStyle::default()
    }
}

/// The scripted frames with a settled tail, and the camera for them.
fn script(
    moves: &[Move],
    style: OpponentStyle,
) -> (Vec<(World, ScriptTruth)>, chessbot::sim::Scene) {
    let scene = scene().build(Chess::default().board(), 3).unwrap();
    let mut frames: Vec<(World, ScriptTruth)> =
        ScriptedGame::new(scene.world.clone(), Chess::default(), moves, style, 3)
            .unwrap()
            .collect();
    let last = frames.last().cloned().unwrap();
    frames.extend(std::iter::repeat_n(last, TAIL_FRAMES));
    (frames, scene)
}

fn core_in(dir: &std::path::Path) -> Core {
    common::core_in(dir, false)
}

fn new_game(mode: Mode) -> NewGameRequest {
    NewGameRequest {
        mode,
        color: ColorName::White,
        level: 10,
        fen: None,
        white: None,
        black: None,
        opponent: Default::default(),
        time_control: None,
    }
}

/// Record mode through the real camera thread: the frames wait until the
/// game is started, every move on the board lands in the game, and the
/// camera reports the end of the recording.
#[test]
fn record_mode_takes_both_sides_moves_from_the_camera_thread() {
    let dir = tempfile::tempdir().unwrap();
    let moves = moves_from(&Chess::default(), "e4 e5 Nf3 Nc6 Bb5");
    let (frames, scene) = script(&moves, calm());
    let worlds: Vec<World> = frames.into_iter().map(|(w, _)| w).collect();
    let service = quiet_service(core_in(dir.path()));
    let mut worlds = Some(worlds);
    let (camera, options) = (scene.camera.clone(), scene.options);
    let open: OpenSource = Box::new(move || {
        let w = worlds
            .take()
            .ok_or_else(|| CameraError::Open("opened twice".into()))?;
        let cam = SimCamera::new(camera.clone(), options, 30.0, move |i| {
            w.get(i as usize).cloned()
        })?;
        Ok(Box::new(cam) as Box<dyn FrameSource>)
    });
    let task = spawn_camera(
        service.clone(),
        open,
        CameraWatch::new(WatcherConfig::default()),
        CameraTaskOptions {
            calibration_dir: None,
            recorded: true,
            retry_delay: Duration::from_millis(10),
        },
    );
    // The recording holds until a game runs.
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(service.status().camera, CameraStatus::Absent);
    let effects = service.core().new_game(new_game(Mode::Record), 0).unwrap();
    service.apply(effects);
    task.join().unwrap();
    let st = service.status();
    assert_eq!(st.moves, sans(&Chess::default(), &moves), "{}", st.message);
    assert_eq!(st.camera, CameraStatus::Ended);
    let jpeg = service.camera_image().expect("a picture for the page");
    assert_eq!(&jpeg[..2], &[0xff, 0xd8]);
    let pgn = service.core().session().unwrap().pgn();
    assert!(pgn.contains("1. e4 e5 2. Nf3 Nc6 3. Bb5"), "{pgn}");
}

/// Drives the pure camera watch frame by frame. The robot's engine is
/// `robot_text` (SAN, answered at once when the core asks); with no arm, the
/// scripted person puts the robot's moves on the board too. Returns the
/// core and every message said.
fn play_mode(script_text: &str, robot_text: &str) -> (Core, Vec<String>, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let start = Chess::default();
    let moves = moves_from(&start, script_text);
    let (frames, scene) = script(&moves, calm());
    let mut renderer = chessbot::sim::Renderer::new(scene.camera.clone());
    let mut core = core_in(dir.path());
    let mut said = Vec::new();
    let effects = core.new_game(new_game(Mode::Play), 0).unwrap();
    let mut pending: Vec<Effect> = effects;
    let mut watch = CameraWatch::new(WatcherConfig::default());
    let mut robot_next = robot_text.split_whitespace();
    for (world, truth) in frames {
        // The engine answers at once.
        while let Some(e) = pending.pop() {
            match e {
                Effect::Say(t) => said.push(t),
                Effect::ThinkFor(_) => {
                    let san = robot_next.next().expect("a robot move for every turn");
                    let pos = core.session().unwrap().game().position().clone();
                    let mv = parse_move(&pos, san).unwrap();
                    pending.extend(core.engine_move(mv, None, 0).unwrap());
                }
                Effect::ArmPlay(_) | Effect::ArmStop => panic!("no arm in this set-up"),
            }
        }
        watch.sync(&core);
        let img = renderer.render(&world, &scene.options).unwrap();
        let image = RgbImage {
            width: img.image.width as usize,
            height: img.image.height as usize,
            data: img.image.data,
        };
        let out = watch.look(&image, truth.time_ms.round() as u64).unwrap();
        let (effects, _) = watch.apply(&mut core, &out, truth.time_ms as i64);
        pending.extend(effects);
    }
    for e in pending {
        if let Effect::Say(t) = e {
            said.push(t);
        }
    }
    (core, said, dir)
}

#[test]
fn play_mode_reads_the_persons_moves_and_verifies_the_robots() {
    // White (the person) plays e4 and Nf3; the robot answers e5 and Nc6,
    // which the person puts on the board for it.
    let (core, said, _dir) = play_mode("e4 e5 Nf3 Nc6", "e5 Nc6");
    let st = core.status();
    assert_eq!(st.moves, vec!["e4", "e5", "Nf3", "Nc6"], "said: {said:?}");
    assert!(
        !said
            .iter()
            .any(|s| s.contains("not on the board as planned")),
        "{said:?}"
    );
}

#[test]
fn a_robot_move_put_on_the_wrong_square_is_reported_with_the_squares() {
    // The robot chose e5; the person puts the pawn on e6 instead.
    let (core, said, _dir) = play_mode("e4 e6", "e5");
    let st = core.status();
    assert_eq!(
        st.moves,
        vec!["e4", "e5"],
        "the game keeps the robot's move"
    );
    let report = said
        .iter()
        .find(|s| s.contains("not on the board as planned"))
        .unwrap_or_else(|| panic!("no mismatch report in {said:?}"));
    assert!(
        report.contains("e5 should be a black piece but is empty"),
        "{report}"
    );
    assert!(
        report.contains("e6 should be empty but shows a black piece"),
        "{report}"
    );
}

/// A camera that delivers blank frames, fails, then comes back.
struct Flaky {
    frames: u64,
    fail_after: Option<u64>,
    end_after: u64,
}

impl FrameSource for Flaky {
    fn next_frame(&mut self) -> Result<Option<Frame>, CameraError> {
        if Some(self.frames) == self.fail_after {
            return Err(CameraError::Disconnected("USB cable pulled".into()));
        }
        if self.frames == self.end_after {
            return Ok(None);
        }
        let index = self.frames;
        self.frames += 1;
        Ok(Some(Frame {
            image: RgbImage::new(64, 48),
            timestamp: Duration::from_millis(33 * index),
            index,
        }))
    }
    fn describe(&self) -> String {
        "flaky test camera".into()
    }
}

#[test]
fn a_lost_camera_is_said_reopened_and_its_return_said() {
    let dir = tempfile::tempdir().unwrap();
    let service = quiet_service(core_in(dir.path()));
    let effects = service.core().new_game(new_game(Mode::Record), 0).unwrap();
    service.apply(effects);
    let opened = Arc::new(Mutex::new(0));
    let seen: Arc<Mutex<Vec<String>>> = Arc::default();
    let (o, s, svc) = (opened.clone(), seen.clone(), service.clone());
    let open: OpenSource = Box::new(move || {
        let mut n = o.lock().unwrap();
        *n += 1;
        s.lock().unwrap().push(format!("{:?}", svc.status().camera));
        match *n {
            // First open: frames, then the cable is pulled.
            1 => Ok(Box::new(Flaky {
                frames: 0,
                fail_after: Some(5),
                end_after: u64::MAX,
            }) as Box<dyn FrameSource>),
            // Second: the device is not there yet.
            2 => Err(CameraError::Open("no camera at index 0".into())),
            // Third: back, for a few frames, then the test ends it.
            _ => Ok(Box::new(Flaky {
                frames: 0,
                fail_after: None,
                end_after: 5,
            })),
        }
    });
    let mut updates = service.subscribe();
    spawn_camera(
        service.clone(),
        open,
        CameraWatch::new(WatcherConfig::default()),
        CameraTaskOptions {
            calibration_dir: None,
            recorded: false,
            retry_delay: Duration::from_millis(5),
        },
    )
    .join()
    .unwrap();
    assert_eq!(*opened.lock().unwrap(), 3);
    // Between the opens the page showed the camera as lost, with why.
    let seen = seen.lock().unwrap();
    assert!(
        seen[1].contains("Lost") && seen[1].contains("USB cable pulled"),
        "{seen:?}"
    );
    assert!(seen[2].contains("no camera at index 0"), "{seen:?}");
    let messages = messages(&mut updates);
    assert!(
        messages
            .iter()
            .any(|m| m.starts_with("I cannot see the board: the camera stopped")),
        "{messages:?}"
    );
    assert!(
        messages.iter().any(|m| m == "The camera is back."),
        "{messages:?}"
    );
    // Blank frames have no board: nothing reached the game.
    assert!(service.status().moves.is_empty());
    assert_eq!(service.status().camera, CameraStatus::Ended);
}

/// "Find the board again" from the page: the camera loop re-finds the board
/// on its next frame, tracks it there and saves `board.yml`; with no
/// camera the request is refused.
#[test]
fn a_board_calibration_asked_for_is_made_on_the_next_frame_and_saved() {
    let dir = tempfile::tempdir().unwrap();
    let service = quiet_service(core_in(dir.path()));
    assert!(!service.request_board_calibration(), "no camera yet");
    let scene = scene().build(Chess::default().board(), 3).unwrap();
    let (camera, options, world) = (scene.camera.clone(), scene.options, scene.world.clone());
    let mut once = true;
    let open: OpenSource = Box::new(move || {
        if !std::mem::take(&mut once) {
            return Err(CameraError::Open("opened twice".into()));
        }
        let w = world.clone();
        let cam = SimCamera::new(camera.clone(), options, 30.0, move |i| {
            (i < 90).then(|| w.clone())
        })?;
        Ok(Box::new(cam) as Box<dyn FrameSource>)
    });
    let cal_dir = dir.path().join("calibration");
    let mut updates = service.subscribe();
    let svc = service.clone();
    let task = spawn_camera(
        service.clone(),
        open,
        CameraWatch::new(WatcherConfig::default()),
        CameraTaskOptions {
            calibration_dir: Some(cal_dir.clone()),
            recorded: false,
            retry_delay: Duration::from_millis(10),
        },
    );
    let end = std::time::Instant::now() + Duration::from_secs(60);
    while !svc.request_board_calibration() {
        assert!(std::time::Instant::now() < end, "the camera never started");
        std::thread::sleep(Duration::from_millis(10));
    }
    task.join().unwrap();
    let messages = messages(&mut updates);
    let said = messages
        .iter()
        .find(|m| m.starts_with("Board found again"))
        .unwrap_or_else(|| panic!("{messages:?}"));
    assert!(said.contains("board.yml"), "{said}");
    let pose = chessbot::vision::calibrate::load_board_pose(&cal_dir).unwrap();
    assert_eq!(pose.image_size, (480, 360));
}

/// What the watcher would report: one event on a read frame.
fn event_frame(event: chessbot::recognition::TrackEvent) -> chessbot::recognition::WatchOutput {
    chessbot::recognition::WatchOutput {
        event: Some(event),
        frame: chessbot::recognition::FrameUse::Read,
        busy: false,
        covered: Vec::new(),
        reading: None,
    }
}

/// An amended move replaces the recorded one in record mode; in play mode
/// (the engine may be answering it already) the person is asked instead
/// and the game is left as it was.
/// What the service says among `effects`.
fn spoken(effects: Vec<Effect>) -> Vec<String> {
    effects
        .into_iter()
        .filter_map(|e| match e {
            Effect::Say(t) => Some(t),
            _ => None,
        })
        .collect()
}

#[test]
fn an_amended_move_is_replaced_when_recording_and_asked_about_when_playing() {
    use chessbot::recognition::TrackEvent;
    let start = Chess::default();
    let e4 = parse_move(&start, "e4").unwrap();
    let e3 = parse_move(&start, "e3").unwrap();
    let recorded = |mode: Mode| {
        let dir = tempfile::tempdir().unwrap();
        let mut core = core_in(dir.path());
        core.new_game(new_game(mode), 0).unwrap();
        let mut watch = CameraWatch::new(WatcherConfig::default());
        watch.sync(&core);
        let played = TrackEvent::Move {
            mv: e4,
            t_ms: 1000,
            confidence: 1.0,
            promotion_unverified: false,
        };
        watch.apply(&mut core, &event_frame(played), 1000);
        let amended = TrackEvent::Amended {
            was: e4,
            now: e3,
            t_ms: 3000,
        };
        let (effects, _) = watch.apply(&mut core, &event_frame(amended), 3000);
        let said = spoken(effects);
        let game = core.session().unwrap().game();
        let moves: Vec<String> = game.moves().iter().map(|m| m.san.clone()).collect();
        (moves, said)
    };
    let (moves, said) = recorded(Mode::Record);
    assert_eq!(moves, ["e3"]);
    assert!(
        said.iter().any(|s| s.contains("recorded e3 instead")),
        "{said:?}"
    );
    let (moves, said) = recorded(Mode::Play);
    assert_eq!(moves.first().map(String::as_str), Some("e4"));
    assert!(
        said.iter().any(|s| s.contains("no longer shows e4")),
        "{said:?}"
    );
}

#[test]
fn an_undecided_board_is_asked_about_with_its_candidate_moves_and_nothing_is_played() {
    use chessbot::recognition::TrackEvent;
    let start = Chess::default();
    let dir = tempfile::tempdir().unwrap();
    let mut core = core_in(dir.path());
    core.new_game(new_game(Mode::Record), 0).unwrap();
    let mut watch = CameraWatch::new(WatcherConfig::default());
    watch.sync(&core);
    let candidates = ["e3", "e4", "Nf3"].map(|m| parse_move(&start, m).unwrap());
    let unsure = TrackEvent::Unsure {
        candidates: candidates.to_vec(),
        t_ms: 4000,
    };
    let (effects, _) = watch.apply(&mut core, &event_frame(unsure), 4000);
    let said = spoken(effects);
    assert!(
        said.iter()
            .any(|s| s.contains("which move was played: e3, e4 or Nf3")),
        "{said:?}"
    );
    assert!(core.session().unwrap().game().moves().is_empty());
}
