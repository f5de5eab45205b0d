//! The service with an arm and an engine that fail: the real driver over
//! the simulated STS3215 bus on a pseudo-terminal plays the assisted
//! person's moves and the engine's replies; a servo that dies mid-game
//! stops the arm and pauses the game with nothing lost, and the game goes
//! on after a resume. An external engine that crashes is replaced for the
//! move and the person is told.

use std::sync::Arc;
use std::time::{Duration, Instant};

use chessbot::arm::bus::{BusTiming, FeetechBus};
use chessbot::arm::clock::{Clock, ManualClock, PacedClock};
use chessbot::arm::setup::ArmSetup;
use chessbot::service::arm_player::ArmPlayer;
use chessbot::service::core::{ArmStatus, ColorName, Mode, NewGameRequest, Opponent, Status};
use chessbot::service::runtime::Service;
use chessbot::service::voice::Voice;
use chessbot::sim::bus::{SimBus, SimFault, SimPort};

mod common;
use common::{core_in, messages, FirstMove};

/// Virtual time runs this much faster than real time: a 10 s arm move
/// takes 10 ms of waiting (the bus's own serial I/O is real time).
const SPEED: f64 = 1000.0;

fn rig(dir: &std::path::Path) -> (Arc<Service>, Arc<std::sync::Mutex<SimBus>>) {
    let setup = ArmSetup::default_so101().unwrap();
    let clock: Arc<dyn Clock> = Arc::new(PacedClock::new(Arc::new(ManualClock::new()), SPEED));
    let servos = setup.model.servo_ids().len() as u8;
    let (sim, pty) = SimPort::spawn(SimBus::with_servos(servos, clock.clone())).unwrap();
    let bus = sim.shared();
    let player = ArmPlayer::new(setup, FeetechBus::new(pty, BusTiming::default()), clock)
        .keeping(Box::new(sim));
    let core = core_in(dir, true);
    let service = Service::new(
        core,
        Voice::silent(),
        Some(Box::new(FirstMove)),
        Some(Box::new(player)),
        Box::new(|| 0),
    );
    (service, bus)
}

fn wait_for(service: &Service, what: &str, ok: impl Fn(&Status) -> bool) -> Status {
    let end = Instant::now() + Duration::from_secs(60);
    loop {
        let st = service.status();
        if ok(&st) {
            return st;
        }
        assert!(Instant::now() < end, "timed out waiting for {what}: {st:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn assist() -> NewGameRequest {
    NewGameRequest {
        mode: Mode::Assist,
        color: ColorName::White,
        level: 10,
        fen: None,
        white: None,
        black: None,
        opponent: Opponent::Engine,
        time_control: None,
    }
}

#[test]
fn assist_mode_the_arm_plays_the_persons_move_and_the_engines_reply() {
    let dir = tempfile::tempdir().unwrap();
    let (service, bus) = rig(dir.path());
    let e = service.core().new_game(assist(), 0).unwrap();
    service.apply(e);
    let e = service.core().human_move("e4", 0).unwrap();
    service.apply(e);
    let st = wait_for(&service, "the engine's reply on the board", |s| {
        s.moves.len() == 2 && s.arm == ArmStatus::Idle
    });
    assert_eq!(st.moves[0], "e4");
    assert!(!st.paused, "{}", st.message);
    // The driver really commanded the servos: both moves' transfers went
    // over the wire (goal writes to every joint, gripper opened and closed).
    let frames = bus.lock().unwrap().received().len();
    assert!(
        frames > 100,
        "only {frames} frames reached the simulated bus"
    );
}

#[test]
fn a_servo_dying_mid_game_stops_the_arm_pauses_and_keeps_the_game() {
    let dir = tempfile::tempdir().unwrap();
    let (service, bus) = rig(dir.path());
    let e = service.core().new_game(assist(), 0).unwrap();
    service.apply(e);
    // The elbow (servo 3) stops answering before the person's move.
    bus.lock().unwrap().inject(SimFault::Dead { id: 3 });
    let e = service.core().human_move("d4", 0).unwrap();
    service.apply(e);
    let st = wait_for(&service, "the arm to stop", |s| {
        matches!(s.arm, ArmStatus::Stopped { .. })
    });
    let ArmStatus::Stopped { reason } = &st.arm else {
        unreachable!()
    };
    assert!(reason.contains('3'), "the reason names the servo: {reason}");
    assert!(st.paused);
    assert_eq!(st.moves, vec!["d4"], "the move stays in the game");
    assert!(st.message.starts_with("The arm stopped"), "{}", st.message);
    assert!(
        st.message
            .contains("finish the move d2d4 on the board by hand"),
        "{}",
        st.message
    );
    // Nothing more happens while paused: the engine does not move.
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(service.status().moves, vec!["d4"]);
    // Repaired and resumed: the engine's reply is played.
    bus.lock().unwrap().repair(3);
    let e = service.core().resume();
    service.apply(e);
    let st = wait_for(&service, "the reply after resuming", |s| {
        s.moves.len() == 2 && s.arm == ArmStatus::Idle
    });
    assert!(!st.paused);
}

#[test]
fn an_external_engine_that_crashes_is_replaced_and_the_person_told() {
    use chessbot::engine::EngineConfig;
    use chessbot::service::engine_chooser::EngineChooser;
    let dir = tempfile::tempdir().unwrap();
    let script =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/fake_uci.sh");
    let cfg = EngineConfig {
        hash_mb: 4,
        external_command: format!("sh {} crash_go", script.display()),
        ..EngineConfig::default()
    };
    let chooser = EngineChooser::from_config(&cfg, Duration::from_millis(100)).unwrap();
    let core = core_in(dir.path(), false);
    let service = Service::new(
        core,
        Voice::silent(),
        Some(Box::new(chooser)),
        None,
        Box::new(|| 0),
    );
    let mut updates = service.subscribe();
    let e = service
        .core()
        .new_game(
            NewGameRequest {
                mode: Mode::Play,
                ..assist()
            },
            0,
        )
        .unwrap();
    service.apply(e);
    let e = service.core().human_move("e4", 0).unwrap();
    service.apply(e);
    let st = wait_for(&service, "the reply", |s| s.moves.len() == 2);
    assert!(!st.paused, "{}", st.message);
    let said = messages(&mut updates);
    assert!(
        said.iter()
            .any(|m| m.contains("failed and was restarted or replaced")),
        "{said:?}"
    );
}
