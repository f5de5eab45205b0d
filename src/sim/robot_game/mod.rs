//! A whole robot game against the simulator (`chessbot play --sim`).
//!
//! The physical side is simulated: the world (board, pieces, hand), the
//! servo bus (a pseudo-terminal served by [`crate::sim::bus`]) and the
//! physics that lets the jaws pick and place pieces ([`physics`]). The
//! robot side is the real thing: the service's [`Core`] (journal first),
//! the move tracker, the built-in engine, the arm planner and the arm
//! driver talking the Feetech protocol over the pseudo-terminal. The
//! scripted person plays their moves with a hand, frame by frame.
//!
//! Everything runs on one virtual clock, so a game is fast and (with a
//! seed) repeatable; `speed` slows the arm down to watchable real time.
//! A process kill is simulated by dropping everything on the robot side
//! (the driver's port dies first, so not even a stop command goes out)
//! while the world and the servos carry on, then starting it again from
//! the journal.
//!
//! - [`physics`]: jaws and pieces, the virtual clock, the killable port.
//! - [`watch`]: the camera side (ground-truth stand-in for vision).
//! - [`faults`]: the faults `--faults` injects.

pub mod faults;
pub mod physics;
pub mod watch;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use nalgebra::{Point3, Vector3};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde::Serialize;
use shakmaty::{Board, Chess, Color, Move, Position};

use crate::arm::bus::{BusTiming, FeetechBus};
use crate::arm::clock::{Clock, ManualClock};
use crate::arm::plan::{Planner, SlotState};
use crate::arm::run::Executor;
use crate::arm::setup::ArmSetup;
use crate::config::GameConfig;
use crate::engine::search::key_of;
use crate::engine::strength::search_at_level;
use crate::engine::{Limits, Searcher};
use crate::game::{uci_of, Game};
use crate::recognition::{TrackEvent, TrackerConfig};
use crate::service::core::{ArmStatus, Effect};
use crate::service::core::{ColorName, Core, Mode, NewGameRequest};
use crate::service::runtime::{MoveChooser, MovePlayer};
use crate::sim::bus::{SimBus, SimFault, SimPort};
use crate::sim::opponent::{OpponentStyle, ScriptedGame};
use crate::sim::world::{BoardSpec, BoardStyle, Hand, PieceSet, Placement, World};

pub use faults::{parse_faults, Fault, FaultKind};
use physics::{ArmWorld, DriverPort, JawEvent, SimTime};

use crate::sim::{CameraSpec, RenderOptions};
use watch::{shows, standing as standing_board, MoveWatcher, TruthWatcher, View, VisionWatcher};

/// Camera frames per second of the simulated person's moves (a webcam's rate).
pub const FPS: f64 = 30.0;
/// Node budget of the robot's engine per move: about 0.1 s of the built-in
/// search in a release build (docs/engine.md), deterministic unlike a time limit.
pub const ENGINE_NODES: u64 = 50_000;
/// How long the camera may take to see a move once the board is settled
/// (the tracker needs 0.25 s; a person's late off-centre nudge adds some).
const SETTLE_WAIT: Duration = Duration::from_secs(3);
/// Bus frames into a robot move after which a servo fault strikes: about
/// 4 s of streaming (two frames per 20 ms tick), i.e. mid-move.
const FAULT_AFTER_FRAMES: usize = 400;
/// A person takes about this long to put pieces right by hand.
const PERSON_FIX: Duration = Duration::from_secs(2);
/// A person notices a pause and presses resume after about this long.
const PERSON_REACTION: Duration = Duration::from_secs(3);
/// Attempts at one robot move before the game is left paused.
const MAX_ARM_ATTEMPTS: usize = 3;
/// How often a paused live game looks whether it was resumed.
const PAUSE_POLL: Duration = Duration::from_millis(200);
/// Square size of the simulated board when no arm sets it, mm.
const RECORD_SQUARE_MM: f64 = 50.0;

/// What went wrong running the simulated game (not the faults it injects).
#[derive(Debug, thiserror::Error)]
pub enum PlayError {
    #[error("--faults: {0}")]
    BadFaults(String),
    #[error("simulator: {0}")]
    Sim(#[from] crate::sim::SimError),
    #[error("arm setup: {0}")]
    Setup(#[from] crate::arm::setup::SetupError),
    #[error("pseudo-terminal for the simulated servo bus: {0}")]
    Pty(std::io::Error),
    #[error("game: {0}")]
    Session(#[from] crate::game::session::SessionError),
    #[error("game: {0}")]
    Command(#[from] crate::service::core::CommandError),
    #[error("{0}")]
    Stuck(String),
}

/// Which game the simulator plays.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum PlayMode {
    /// The person against the engine; the arm moves the robot's pieces.
    Play,
    /// Two scripted people; the camera records.
    Record,
}

/// A simulated game to play.
#[derive(Debug, Clone)]
pub struct PlaySpec {
    pub mode: PlayMode,
    /// Stop after this many plies (or earlier, at the game's end).
    pub plies: usize,
    pub seed: u64,
    /// The robot's engine level, 0..=20.
    pub level: u8,
    /// The scripted person chooses moves with the engine at this level.
    pub person_level: u8,
    pub person: Color,
    pub faults: Vec<Fault>,
    /// Real-time factor for a live view (virtual seconds per real second);
    /// `None` runs as fast as the machine allows.
    pub speed: Option<f64>,
    /// Journal and games directories.
    pub game: GameConfig,
    pub tracker: TrackerConfig,
    /// See the board through rendered frames and vision (else ground truth).
    pub vision: Option<VisionSpec>,
}

/// The simulated camera for a game seen through vision.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct VisionSpec {
    pub camera: CameraSpec,
    pub width: u32,
    pub height: u32,
}

impl PlaySpec {
    pub fn new(game: GameConfig) -> PlaySpec {
        PlaySpec {
            mode: PlayMode::Play,
            plies: 20,
            seed: 1,
            level: 10,
            person_level: 2,
            person: Color::White,
            faults: Vec::new(),
            speed: None,
            game,
            tracker: TrackerConfig::default(),
            vision: None,
        }
    }
}

/// What happened, for the headless summary and the tests.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Summary {
    /// Plies in the journaled game at the end.
    pub plies: usize,
    /// The game as journaled (SAN).
    pub moves: Vec<String>,
    /// What really happened on the board (UCI): the person's scripted moves
    /// and the robot's moves as the arm made them.
    pub truth: Vec<String>,
    /// Moves the camera side reported wrongly or not at all.
    pub recognition_errors: usize,
    /// What each recognition error was.
    pub recognition_notes: Vec<String>,
    /// Frames rendered and read by vision (0 with the ground-truth stand-in),
    /// and how many of them could not be read.
    pub vision_frames: u64,
    pub vision_unread_frames: u64,
    /// Illegal moves the person made, and how many the robot noticed.
    pub illegal_shown: usize,
    pub illegal_noticed: usize,
    /// Robot moves the arm completed (first try or retried).
    pub arm_moves: usize,
    /// Arm stops (bus errors, stalls) with their messages.
    pub arm_faults: Vec<String>,
    /// Bus exchanges repeated after a bad reply (absorbed faults).
    pub bus_retries: u64,
    /// How each stop or restart was recovered.
    pub recoveries: Vec<String>,
    /// Simulated process kills and restarts from the journal.
    pub restarts: usize,
    /// Times the camera was lost (no frames), and engine failures.
    pub camera_outages: usize,
    pub engine_failures: usize,
    /// Robot moves the camera found not as planned (a piece off its square).
    pub robot_move_mismatches: usize,
    /// Grasps where the jaws closed on nothing.
    pub grasp_misses: usize,
    /// Largest distance of a robot-placed piece from its square's centre, mm.
    pub max_placement_error_mm: f64,
    pub result: String,
    /// Set when the game stopped in a paused state that needs a person.
    pub paused_reason: Option<String>,
    pub pgn: String,
    pub pgn_path: Option<String>,
    pub virtual_s: f64,
    pub wall_s: f64,
}

impl Summary {
    pub fn to_text(&self) -> String {
        let mut s = format!(
            "moves played: {} plies ({})\nresult: {}\nrecognition errors: {} (vision frames {}, unread {})\nillegal moves: {} made, {} noticed\ncamera outages: {}, engine failures: {}\narm: {} moves, {} faults, {} bus retries, {} restarts, {} robot moves not as planned, {} missed grasps, worst placement {:.1} mm off centre\n",
            self.plies,
            self.moves.join(" "),
            self.result,
            self.recognition_errors,
            self.vision_frames,
            self.vision_unread_frames,
            self.illegal_shown,
            self.illegal_noticed,
            self.camera_outages,
            self.engine_failures,
            self.arm_moves,
            self.arm_faults.len(),
            self.bus_retries,
            self.restarts,
            self.robot_move_mismatches,
            self.grasp_misses,
            self.max_placement_error_mm,
        );
        for n in &self.recognition_notes {
            s.push_str(&format!("  recognition: {n}\n"));
        }
        for f in &self.arm_faults {
            s.push_str(&format!("  arm fault: {f}\n"));
        }
        for r in &self.recoveries {
            s.push_str(&format!("  recovered: {r}\n"));
        }
        if let Some(p) = &self.paused_reason {
            s.push_str(&format!("PAUSED: {p}\n"));
        }
        s.push_str(&format!(
            "time: {:.1} s simulated, {:.1} s wall\n",
            self.virtual_s, self.wall_s
        ));
        if let Some(p) = &self.pgn_path {
            s.push_str(&format!("PGN written to {p}\n"));
        }
        s.push('\n');
        s.push_str(&self.pgn);
        s
    }
}

/// The built-in engine as a move chooser: a level and a node budget.
pub struct EngineChooser {
    searcher: Searcher,
    rng: ChaCha8Rng,
    nodes: u64,
}

impl EngineChooser {
    pub fn new(seed: u64, nodes: u64) -> EngineChooser {
        EngineChooser {
            searcher: Searcher::with_hash(16),
            rng: ChaCha8Rng::seed_from_u64(seed),
            nodes,
        }
    }

    /// A move in `pos` (with the positions before it) at `level`.
    pub fn pick(&mut self, pos: &Chess, history: &[u64], level: u8) -> Option<(Move, i32)> {
        let limits = Limits::nodes(self.nodes);
        let r = search_at_level(
            &mut self.searcher,
            pos,
            history,
            &limits,
            level,
            &mut self.rng,
            &mut |_| {},
        );
        r.best_move
            .filter(|m| pos.is_legal(*m))
            .or_else(|| pos.legal_moves().first().copied())
            .map(|m| (m, r.score))
    }
}

/// Zobrist keys of the positions before the current one.
fn history_of(game: &Game) -> Vec<u64> {
    let mut pos = game.start().clone();
    let mut keys = Vec::with_capacity(game.moves().len());
    for m in game.moves() {
        keys.push(key_of(&pos));
        pos.play_unchecked(m.mv);
    }
    keys
}

impl MoveChooser for EngineChooser {
    fn choose(
        &mut self,
        game: &Game,
        level: u8,
        _max_time: Option<std::time::Duration>,
    ) -> Result<(Move, Option<i32>), String> {
        // The simulator's scripted engine is node-limited, far inside any clock.
        let pos = game.position();
        let (mv, score) = self
            .pick(pos, &history_of(game), level)
            .ok_or_else(|| "no legal move".to_owned())?;
        let white = if pos.turn() == Color::White {
            score
        } else {
            -score
        };
        Ok((mv, Some(white)))
    }
}

/// The simulated physical side: world, servos, clock.
struct Physical {
    time: Arc<ManualClock>,
    world: Arc<Mutex<ArmWorld>>,
    sim_port: Option<SimPort>,
    /// Keeps the pseudo-terminal open across simulated restarts.
    cable: Option<serialport::TTYPort>,
    setup: Arc<ArmSetup>,
    rng: ChaCha8Rng,
    epoch_ms: i64,
    /// Real-time pacing for a live view (see [`PlaySpec::speed`]).
    realtime_speed: Option<f64>,
}

impl Physical {
    fn world(&self) -> MutexGuard<'_, ArmWorld> {
        self.world.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Wall-clock time of the game's events: the start's real time plus
    /// the virtual time since (so PGN dates and file names are today's).
    fn now_ms(&self) -> i64 {
        self.epoch_ms + self.time.now().as_millis() as i64
    }

    /// Advances virtual time by one camera frame, letting the servos move.
    fn tick(&self) {
        let frame = Duration::from_secs_f64(1.0 / FPS);
        if let Some(speed) = self.realtime_speed {
            std::thread::sleep(frame.div_f64(speed));
        }
        self.time.advance(frame);
        self.world().step();
    }
}

/// Where the robot's [`Core`] lives: owned by the game (headless), or
/// inside the web service so its page shows the game live. Locked only for
/// one command at a time, so the page stays responsive.
pub trait CoreHost: Send + Sync {
    fn lock(&self) -> MutexGuard<'_, Core>;
    /// The robot process restarted: its core is replaced.
    fn replace(&self, core: Core) {
        *self.lock() = core;
    }
    /// Something changed: tell whoever watches.
    fn publish(&self) {}
    /// Carries out what a command asked for (speech, the engine's turn,
    /// an arm stop); headless, the game loop does all of it itself.
    fn apply(&self, _effects: Vec<Effect>) {}
    /// Whether someone looks at camera pictures (a web page).
    fn wants_pictures(&self) -> bool {
        false
    }
    /// The camera's latest picture with the grid drawn (JPEG).
    fn camera_picture(&self, _jpeg: Vec<u8>) {}
}

/// The web service's arm asks the game loop (which owns the simulated
/// arm's driver) to play a move, and waits for the answer.
pub struct ArmRequest {
    pub before: Chess,
    pub mv: Move,
    pub done: mpsc::Sender<Result<(), String>>,
}

/// The web service's [`MovePlayer`] in a live simulated game.
pub struct SimArmPlayer {
    requests: mpsc::Sender<ArmRequest>,
    stop: Arc<Mutex<Option<Arc<AtomicBool>>>>,
}

/// The game loop's end of a [`SimArmPlayer`].
pub struct ArmLink {
    requests: mpsc::Receiver<ArmRequest>,
    stop: Arc<Mutex<Option<Arc<AtomicBool>>>>,
}

/// A player for the service and the link the game loop serves it on.
pub fn sim_arm_player() -> (SimArmPlayer, ArmLink) {
    let (tx, rx) = mpsc::channel();
    let stop = Arc::new(Mutex::new(None));
    (
        SimArmPlayer {
            requests: tx,
            stop: stop.clone(),
        },
        ArmLink { requests: rx, stop },
    )
}

impl MovePlayer for SimArmPlayer {
    fn play(&mut self, before: &Chess, mv: Move) -> Result<(), String> {
        let (done, answer) = mpsc::channel();
        self.requests
            .send(ArmRequest {
                before: before.clone(),
                mv,
                done,
            })
            .map_err(|_| "the simulated game is over".to_owned())?;
        answer
            .recv()
            .map_err(|_| "the simulated arm went away".to_owned())?
    }

    fn stop(&mut self) {
        if let Some(flag) = self.stop.lock().unwrap_or_else(|p| p.into_inner()).as_ref() {
            flag.store(true, Ordering::SeqCst);
        }
    }

    fn stop_handle(&self) -> Option<Arc<dyn Fn() + Send + Sync>> {
        let stop = self.stop.clone();
        Some(Arc::new(move || {
            if let Some(flag) = stop.lock().unwrap_or_else(|p| p.into_inner()).as_ref() {
                flag.store(true, Ordering::SeqCst);
            }
        }))
    }
}

impl CoreHost for Arc<crate::service::runtime::Service> {
    fn lock(&self) -> MutexGuard<'_, Core> {
        self.core()
    }
    fn wants_pictures(&self) -> bool {
        true
    }
    fn camera_picture(&self, jpeg: Vec<u8>) {
        self.set_camera_image(jpeg);
    }
    fn publish(&self) {
        crate::service::runtime::Service::apply(self, Vec::new());
    }
    fn apply(&self, mut effects: Vec<Effect>) {
        // The game loop stops its own arm; a stop sent back to it through
        // the service would also stop the recovery it is about to make.
        effects.retain(|e| !matches!(e, Effect::ArmStop));
        crate::service::runtime::Service::apply(self, effects);
    }
}

/// A headless host: a core behind a lock, nobody watching.
pub struct HeadlessCore(Mutex<Core>);

impl HeadlessCore {
    pub fn new(core: Core) -> HeadlessCore {
        HeadlessCore(Mutex::new(core))
    }
}

impl CoreHost for HeadlessCore {
    fn lock(&self) -> MutexGuard<'_, Core> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// How a run of the robot process ended.
enum ProcessEnd {
    Finished,
    Killed,
    Paused(String),
}

/// A simulated robot game.
pub struct SimRobotGame {
    spec: PlaySpec,
    phys: Physical,
    summary: Summary,
    /// Faults not yet struck.
    pending: Vec<Fault>,
    person: EngineChooser,
    started: Instant,
    /// Jaw events already looked at.
    events_seen: usize,
    /// Vision frames of the robot processes before this one.
    frames_base: (u64, u64),
    host: Arc<dyn CoreHost>,
    /// Wait (instead of stopping) while a person paused the game from the page.
    wait_when_paused: bool,
    /// Hosted by the web service: its engine chooses the robot's moves and
    /// its arm thread hands them here.
    arm_link: Option<ArmLink>,
}

impl SimRobotGame {
    pub fn new(spec: PlaySpec) -> Result<SimRobotGame, PlayError> {
        let setup = Arc::new(ArmSetup::default_so101()?);
        let time = Arc::new(ManualClock::new());
        let mut rng = ChaCha8Rng::seed_from_u64(spec.seed);
        let square_mm = match spec.mode {
            PlayMode::Play => setup.board.square_m * 1000.0,
            PlayMode::Record => RECORD_SQUARE_MM,
        };
        // A thin vinyl board scaled to the arm's squares: the arm's slots
        // beside it are at board height.
        let mut board = BoardSpec::of_style(BoardStyle::Vinyl);
        board.border_mm *= square_mm / board.square_mm;
        board.square_mm = square_mm;
        let start = Chess::default();
        let mut world = World::new(
            start.board(),
            board,
            PieceSet::PLASTIC,
            Placement::CASUAL,
            &mut rng,
        )?;
        if spec.mode == PlayMode::Play {
            // Spare pieces for promotions wait in the reserve slots.
            let robot = !spec.person;
            for (role, (x, y)) in setup.reserve_roles.iter().zip(&setup.board.reserve) {
                let mut p = world.pieces[0];
                p.piece = shakmaty::Piece {
                    color: robot,
                    role: *role,
                };
                p.position = Point3::new(x * 1000.0, y * 1000.0, 0.0);
                p.tilt = 0.0;
                world.pieces.push(p);
            }
        }
        let (sim_port, cable) =
            SimPort::spawn(SimBus::with_servos(6, time.clone())).map_err(PlayError::Pty)?;
        let mut arm_world = ArmWorld::new(world, setup.clone(), sim_port.shared());
        if spec.mode == PlayMode::Record {
            arm_world = arm_world.without_arm();
        }
        let pending = spec.faults.clone();
        // Each life of the robot process (`run_process`) makes its own core,
        // which holds the journal directory; until then a stand-in (a web
        // service hosting the game may hold the directory meanwhile).
        let core = Core::stand_in(spec.game.clone(), spec.mode == PlayMode::Play);
        let host: Arc<dyn CoreHost> = Arc::new(HeadlessCore::new(core));
        let person = EngineChooser::new(spec.seed ^ 0x5eed, ENGINE_NODES / 5);
        Ok(SimRobotGame {
            phys: Physical {
                time,
                world: Arc::new(Mutex::new(arm_world)),
                sim_port: Some(sim_port),
                cable: Some(cable),
                setup,
                rng,
                epoch_ms: chrono::Utc::now().timestamp_millis(),
                realtime_speed: spec.speed.filter(|s| *s > 0.0),
            },
            spec,
            summary: Summary::default(),
            pending,
            person,
            started: Instant::now(),
            events_seen: 0,
            frames_base: (0, 0),
            host,
            wait_when_paused: false,
            arm_link: None,
        })
    }

    /// Runs the game's core inside `host` (the web service) instead of its
    /// own, and waits while a person pauses the game there.
    pub fn hosted_by(mut self, host: Arc<dyn CoreHost>) -> SimRobotGame {
        self.host = host;
        self.wait_when_paused = true;
        self
    }

    /// The service chooses the robot's moves (its [`MoveChooser`]) and
    /// plays them through `link`'s [`SimArmPlayer`] (its [`MovePlayer`]).
    pub fn with_service_arm(mut self, link: ArmLink) -> SimRobotGame {
        self.arm_link = Some(link);
        self
    }

    fn core(&self) -> MutexGuard<'_, Core> {
        self.host.lock()
    }

    /// The simulated world now (for rendering a live view).
    pub fn world_handle(&self) -> Arc<Mutex<ArmWorld>> {
        self.phys.world.clone()
    }

    /// Plays until the ply count, the game's end, or a pause that needs a
    /// person; restarts the robot process after each simulated kill.
    pub fn run(mut self) -> Result<Summary, PlayError> {
        self.started = Instant::now();
        loop {
            match self.run_process()? {
                ProcessEnd::Killed => {
                    self.summary.restarts += 1;
                    tracing::warn!("robot process killed (simulated); restarting from the journal");
                }
                ProcessEnd::Finished => break,
                ProcessEnd::Paused(why) => {
                    self.summary.paused_reason = Some(why);
                    break;
                }
            }
        }
        // Finish: archive the PGN.
        let host = self.host.clone();
        let mut core = host.lock();
        if let Some(s) = core.session() {
            self.summary.plies = s.game().moves().len();
            self.summary.moves = s.game().moves().iter().map(|m| m.san.clone()).collect();
            self.summary.result = s.game().result().map_or("*", |r| r.as_str()).to_owned();
            self.summary.pgn = s.pgn();
        }
        if self.summary.paused_reason.is_none() {
            if let Some(p) = core.finish()? {
                self.summary.pgn_path = Some(p.display().to_string());
            }
        }
        drop(core);
        self.host.publish();
        self.summary.grasp_misses = self
            .phys
            .world()
            .events
            .iter()
            .filter(|e| matches!(e, JawEvent::Missed { .. }))
            .count();
        self.summary.virtual_s = self.phys.time.now().as_secs_f64();
        self.summary.wall_s = self.started.elapsed().as_secs_f64();
        // Stop serving the bus.
        self.phys.cable = None;
        self.phys.sim_port = None;
        Ok(self.summary)
    }

    fn notify(&self) {
        self.host.publish();
    }

    fn take_fault(&mut self, ply: usize, arm: bool) -> Vec<Fault> {
        let (now, later): (Vec<Fault>, Vec<Fault>) = self
            .pending
            .drain(..)
            .partition(|f| f.is_arm() == arm && f.ply <= ply);
        self.pending = later;
        now
    }

    /// One life of the robot process.
    fn run_process(&mut self) -> Result<ProcessEnd, PlayError> {
        let killed = Arc::new(AtomicBool::new(false));
        self.frames_base = (
            self.summary.vision_frames,
            self.summary.vision_unread_frames,
        );
        let has_arm = self.spec.mode == PlayMode::Play;
        // A fresh process: the last one's lock died with it, and its core
        // resumes whatever the journal holds.
        self.host.lock().release_journal_dir();
        self.host
            .replace(Core::new(self.spec.game.clone(), has_arm)?);
        let resumed = self.core().session().is_some();
        if !resumed {
            let mode = match self.spec.mode {
                PlayMode::Play => Mode::Play,
                PlayMode::Record => Mode::Record,
            };
            let effects = self.core().new_game(
                NewGameRequest {
                    mode,
                    color: ColorName::from(self.spec.person),
                    level: self.spec.level,
                    fen: None,
                    white: None,
                    black: None,
                    opponent: Default::default(),
                    time_control: None,
                },
                self.phys.now_ms(),
            )?;
            self.host.apply(effects);
        }
        self.notify();
        let start_pos = self
            .core()
            .session()
            .map(|s| s.game().position().clone())
            .unwrap_or_default();
        let mut watcher: Box<dyn MoveWatcher> = match self.spec.vision {
            None => Box::new(TruthWatcher::new(start_pos, self.spec.tracker)),
            Some(v) => {
                let world = self.phys.world().world.clone();
                let w = VisionWatcher::new(
                    start_pos,
                    &world,
                    v.camera,
                    v.width,
                    v.height,
                    RenderOptions::clean(),
                    self.spec.tracker,
                )?;
                Box::new(if self.host.wants_pictures() {
                    w.with_pictures()
                } else {
                    w
                })
            }
        };
        let watcher = &mut *watcher;
        let clock = Arc::new(SimTime::new(
            self.phys.time.clone(),
            self.phys.world.clone(),
            self.spec.speed,
            killed.clone(),
        ));
        let setup = self.phys.setup.clone();
        let mut arm = if has_arm {
            let port = self
                .phys
                .cable
                .as_ref()
                .ok_or_else(|| PlayError::Stuck("the servo bus is gone".into()))?
                .try_clone_native()
                .map_err(|e| PlayError::Pty(std::io::Error::other(e)))?;
            let bus = FeetechBus::new(DriverPort::new(port, killed.clone()), BusTiming::default());
            Some(Executor::new(bus, &setup, clock.clone() as Arc<dyn Clock>))
        } else {
            None
        };
        if let (Some(ex), Some(link)) = (arm.as_ref(), self.arm_link.as_ref()) {
            *link.stop.lock().unwrap_or_else(|p| p.into_inner()) = Some(ex.stop_flag());
        }
        if let Some(ex) = arm.as_mut() {
            if let Err(e) = ex.connect() {
                return Ok(ProcessEnd::Paused(format!("the arm does not start: {e}")));
            }
            if !resumed {
                // Out of the camera's way: the rest pose beside the board.
                let to_rest = Planner::new(&setup).plan_transfers(
                    &[],
                    ex.present_pose().ok(),
                    String::new(),
                    String::new(),
                );
                if let Err(e) = to_rest
                    .map_err(|e| e.to_string())
                    .and_then(|p| ex.execute(&p).map(|_| ()).map_err(|e| e.to_string()))
                {
                    return Ok(ProcessEnd::Paused(format!(
                        "the arm cannot go to rest: {e}"
                    )));
                }
            }
        }
        let mut slots = match self.core().session() {
            Some(s) => slots_after(&setup, s.game(), !self.spec.person),
            None => SlotState::default(),
        };
        let mut chooser = EngineChooser::new(self.spec.seed, ENGINE_NODES);
        if resumed {
            // Restarted: re-verify the board against the journal before moving.
            if let Some(end) = self.recover_after_restart(watcher, arm.as_mut(), &mut slots)? {
                return Ok(end);
            }
        }
        loop {
            let (game, status) = {
                let core = self.core();
                match core.session() {
                    Some(s) => (s.game().clone(), core.status()),
                    None => return Ok(ProcessEnd::Finished),
                }
            };
            let arm_moving = matches!(status.arm, ArmStatus::Moving { .. });
            if (game.result().is_some() || game.moves().len() >= self.spec.plies) && !arm_moving {
                return Ok(ProcessEnd::Finished);
            }
            if status.paused {
                if self.wait_when_paused {
                    // A person paused the game on the page: wait for resume.
                    std::thread::sleep(PAUSE_POLL);
                    continue;
                }
                return Ok(ProcessEnd::Paused(status.message));
            }
            let ply = game.moves().len() + 1;
            let robot_turn = has_arm && game.turn() != self.spec.person;
            if has_arm && (robot_turn || arm_moving) && self.arm_link.is_some() {
                // The service's engine chooses; its arm thread asks us to play.
                let req = match self
                    .arm_link
                    .as_ref()
                    .map(|l| l.requests.recv_timeout(PAUSE_POLL))
                {
                    Some(Ok(r)) => r,
                    Some(Err(mpsc::RecvTimeoutError::Timeout)) => continue,
                    _ => return Ok(ProcessEnd::Paused("the web service is gone".into())),
                };
                let Some(ex) = arm.as_mut() else {
                    let _ = req.done.send(Err("no arm".into()));
                    return Ok(ProcessEnd::Paused("no arm to play the robot's move".into()));
                };
                let faults = self.take_fault(game.moves().len(), true);
                let r = self.robot_move(
                    watcher,
                    ex,
                    &mut slots,
                    &req.before,
                    req.mv,
                    &faults,
                    &clock,
                    &killed,
                );
                let answer = match &r {
                    // A killed process answers nothing; its service thread is gone too.
                    Ok(None) | Ok(Some(ProcessEnd::Killed)) => Ok(()),
                    Ok(Some(_)) => Err("the arm could not finish the move".to_owned()),
                    Err(e) => Err(e.to_string()),
                };
                let _ = req.done.send(answer);
                if let Some(end) = r? {
                    return Ok(end);
                }
            } else if robot_turn {
                let faults = self.take_fault(ply, true);
                if faults.iter().any(|f| f.kind == FaultKind::EngineCrash) {
                    // The engine dies instead of answering: the game pauses
                    // with nothing lost; the person resumes it and the
                    // engine (started again) answers.
                    let effects = self
                        .core()
                        .engine_failed("the engine process exited (simulated crash)".into());
                    self.host.apply(effects);
                    self.notify();
                    self.summary.engine_failures += 1;
                    self.wait_virtual(PERSON_REACTION);
                    let effects = self.core().resume();
                    self.host.apply(effects);
                    self.summary.recoveries.push(format!(
                        "ply {ply}: the engine crashed; the game paused and the person resumed it"
                    ));
                    self.pending.extend(
                        faults
                            .into_iter()
                            .filter(|f| f.kind != FaultKind::EngineCrash),
                    );
                    continue;
                }
                self.pending.extend(faults);
                let t0 = Instant::now();
                let (mv, eval) = chooser
                    .choose(&game, self.spec.level, None)
                    .map_err(PlayError::Stuck)?;
                // Thinking takes (real) time: the virtual clock follows it.
                self.phys.time.advance(t0.elapsed());
                let now = self.phys.now_ms();
                self.core().engine_move(mv, eval, now)?;
                self.notify();
                let Some(ex) = arm.as_mut() else {
                    return Ok(ProcessEnd::Paused("no arm to play the robot's move".into()));
                };
                let faults = self.take_fault(ply, true);
                match self.robot_move(
                    watcher,
                    ex,
                    &mut slots,
                    game.position(),
                    mv,
                    &faults,
                    &clock,
                    &killed,
                )? {
                    None => {}
                    Some(end) => return Ok(end),
                }
            } else {
                let faults = self.take_fault(ply, false);
                self.person_move(watcher, &game, &faults)?;
            }
            self.notify();
        }
    }

    /// The robot's move: plan, execute, verify; recover from arm faults.
    #[allow(clippy::too_many_arguments)]
    fn robot_move(
        &mut self,
        watcher: &mut dyn MoveWatcher,
        ex: &mut Executor<'_, DriverPort>,
        slots: &mut SlotState,
        before: &Chess,
        mv: Move,
        faults: &[Fault],
        clock: &Arc<SimTime>,
        killed: &Arc<AtomicBool>,
    ) -> Result<Option<ProcessEnd>, PlayError> {
        let setup = self.phys.setup.clone();
        let mut after = before.clone();
        after.play_unchecked(mv);
        let uci = uci_of(mv);
        self.summary.truth.push(uci.clone());
        watcher.expect_robot_move(mv);
        let slots_before = slots.clone();
        for f in faults {
            match f.kind {
                FaultKind::ServoDead { id } => {
                    if let Some(p) = &self.phys.sim_port {
                        p.bus()
                            .inject_after(FAULT_AFTER_FRAMES, SimFault::Dead { id });
                    }
                }
                FaultKind::Corrupt { id, replies } => {
                    if let Some(p) = &self.phys.sim_port {
                        p.bus().inject_after(
                            FAULT_AFTER_FRAMES,
                            SimFault::CorruptChecksum { id, replies },
                        );
                    }
                }
                FaultKind::Kill { after_ms } => {
                    clock.kill_at(self.phys.time.now() + Duration::from_millis(u64::from(after_ms)))
                }
                // Not the arm's: the person's move and the engine's turn.
                FaultKind::Illegal | FaultKind::CameraLost { .. } | FaultKind::EngineCrash => {}
            }
        }
        let mut attempt = 0;
        loop {
            attempt += 1;
            *slots = slots_before.clone();
            let start = ex.present_pose().ok();
            let plan = match Planner::new(&setup).plan(before, mv, start, slots) {
                Ok(p) => p,
                Err(e) => {
                    // No plan (unreachable, no spare piece): the person makes the move.
                    let reason = format!("cannot plan {uci}: {e}");
                    self.summary.arm_faults.push(reason.clone());
                    let effects = self.core().arm_failed(reason);
                    self.host.apply(effects);
                    self.person_fixes(after.board());
                    self.summary
                        .recoveries
                        .push(format!("{uci}: the person made the robot's move by hand"));
                    {
                        let effects = self.core().resume();
                        self.host.apply(effects);
                    }
                    watcher.set_position(after.clone());
                    return Ok(None);
                }
            };
            let retries0 = ex.bus_mut().stats().retries;
            let result = ex.execute(&plan);
            self.summary.bus_retries += ex.bus_mut().stats().retries - retries0;
            if killed.load(Ordering::SeqCst) {
                return Ok(Some(ProcessEnd::Killed));
            }
            match result {
                Ok(_) => {
                    let effects = self.core().arm_done();
                    self.host.apply(effects);
                    self.summary.arm_moves += 1;
                    break;
                }
                Err(e) => {
                    let reason = e.to_string();
                    tracing::warn!("arm fault during {uci}: {reason}");
                    self.summary.arm_faults.push(reason.clone());
                    let effects = self.core().arm_failed(reason);
                    self.host.apply(effects);
                    self.notify();
                    if self.wait_when_paused
                        && matches!(e, crate::arm::run::ArmError::EmergencyStop { .. })
                    {
                        // A person pressed the emergency stop: nothing moves
                        // until they press resume on the page.
                        while self.core().status().paused {
                            std::thread::sleep(PAUSE_POLL);
                        }
                    }
                    if attempt >= MAX_ARM_ATTEMPTS {
                        return Ok(Some(ProcessEnd::Paused(format!(
                            "the arm failed {attempt} times on {uci}"
                        ))));
                    }
                    // A person checks the arm: plugs the servo back in, resumes.
                    self.repair_all();
                    self.wait_virtual(PERSON_FIX);
                    ex.resume();
                    // Back to rest, carrying whatever is in the jaws.
                    let to_rest = Planner::new(&setup).plan_transfers(
                        &[],
                        ex.present_pose().ok(),
                        String::new(),
                        String::new(),
                    );
                    let rested = to_rest
                        .map_err(|e| e.to_string())
                        .and_then(|p| ex.execute(&p).map(|_| ()).map_err(|e| e.to_string()));
                    if let Err(e) = rested {
                        return Ok(Some(ProcessEnd::Paused(format!(
                            "the arm cannot go back to rest after a fault: {e}"
                        ))));
                    }
                    let squares = self.read_board(watcher);
                    let holding = self.phys.world().holding();
                    if !holding && squares.is_some_and(|s| shows(&s, before.board())) {
                        self.summary.recoveries.push(format!(
                            "{uci}: arm repaired, board untouched, move retried"
                        ));
                        {
                            let effects = self.core().resume();
                            self.host.apply(effects);
                        }
                        continue;
                    }
                    if !holding && squares.is_some_and(|s| shows(&s, after.board())) {
                        self.summary
                            .recoveries
                            .push(format!("{uci}: arm repaired, move was complete"));
                        let effects = self.core().arm_done();
                        self.host.apply(effects);
                        {
                            let effects = self.core().resume();
                            self.host.apply(effects);
                        }
                        break;
                    }
                    self.person_fixes(after.board());
                    self.summary.recoveries.push(format!(
                        "{uci}: arm repaired, the person finished the half-made move by hand"
                    ));
                    {
                        let effects = self.core().resume();
                        self.host.apply(effects);
                    }
                    watcher.set_position(after.clone());
                    return Ok(None);
                }
            }
        }
        // The camera checks the robot's move.
        self.note_placement();
        let t_end = self.phys.time.now() + SETTLE_WAIT;
        loop {
            let ev = self.push_frame(watcher);
            match ev {
                Some(TrackEvent::RobotMoveVerified { .. }) => return Ok(None),
                Some(TrackEvent::RobotMoveMismatch { .. }) => break,
                _ => {}
            }
            if self.phys.time.now() >= t_end {
                break;
            }
            self.phys.tick();
        }
        self.summary.robot_move_mismatches += 1;
        self.person_fixes(after.board());
        self.summary.recoveries.push(format!(
            "{uci}: a piece was off its square; the person put it right"
        ));
        watcher.set_position(after);
        Ok(None)
    }

    /// The person's move, made by the scripted hand and seen by the camera side.
    fn person_move(
        &mut self,
        watcher: &mut dyn MoveWatcher,
        game: &Game,
        faults: &[Fault],
    ) -> Result<(), PlayError> {
        let pos = game.position().clone();
        if standing_board(&self.phys.world().world) != *pos.board() {
            // Something was left wrong on the board: the person tidies up first.
            self.person_fixes(pos.board());
            self.summary
                .recoveries
                .push("the person tidied the board before their move".into());
        }
        let truth = self
            .person
            .pick(&pos, &history_of(game), self.spec.person_level)
            .map(|(m, _)| m)
            .ok_or_else(|| PlayError::Stuck("the person has no legal move".into()))?;
        self.summary.truth.push(uci_of(truth));
        let illegal = faults.iter().any(|f| f.kind == FaultKind::Illegal);
        let style = OpponentStyle {
            fps: FPS,
            illegal_before: if illegal { vec![0] } else { Vec::new() },
            ..OpponentStyle::default()
        };
        let world = self.phys.world().world.clone();
        let seed = self.spec.seed ^ (game.moves().len() as u64).wrapping_mul(0x9e37_79b9);
        let script = ScriptedGame::new(world, pos.clone(), &[truth], style, seed)?;
        let mut seen: Vec<Move> = Vec::new();
        let mut noticed = false;
        // A lost camera: no frames from the start of the move until it is back.
        let dark_until = faults.iter().find_map(|f| match f.kind {
            FaultKind::CameraLost { ms } => {
                Some(self.phys.time.now() + Duration::from_millis(u64::from(ms)))
            }
            _ => None,
        });
        let mut dark = dark_until.is_some();
        if dark {
            self.camera_lost(true);
        }
        for (w, t) in script {
            if t.events.iter().any(|e| e.starts_with("illegal_shown")) {
                self.summary.illegal_shown += 1;
            }
            {
                let mut aw = self.phys.world();
                let arm = aw.world.arm.clone();
                aw.world = w;
                aw.world.arm = arm;
            }
            self.phys.tick();
            if dark && !self.camera_back(&mut dark, dark_until) {
                continue;
            }
            match self.push_frame(watcher) {
                Some(TrackEvent::Move { mv, .. }) => seen.push(mv),
                Some(TrackEvent::Resynced { moves, .. }) => seen.extend(moves),
                Some(TrackEvent::Amended { now, .. }) => {
                    seen.pop();
                    seen.push(now);
                }
                Some(TrackEvent::Unexplained { .. }) if !noticed => {
                    noticed = true;
                    if illegal {
                        self.summary.illegal_noticed += 1;
                    }
                }
                _ => {}
            }
        }
        // The board is settled: give the camera side a moment more (from
        // when the camera is back, if it was lost).
        let t_end = self.phys.time.now().max(dark_until.unwrap_or_default()) + SETTLE_WAIT;
        while seen.is_empty() && self.phys.time.now() < t_end {
            self.phys.tick();
            if dark && !self.camera_back(&mut dark, dark_until) {
                continue;
            }
            match self.push_frame(watcher) {
                Some(TrackEvent::Move { mv, .. }) => seen.push(mv),
                Some(TrackEvent::Resynced { moves, .. }) => seen.extend(moves),
                _ => {}
            }
        }
        let now = self.phys.now_ms();
        if seen == [truth] {
            if dark_until.is_some() {
                self.summary.recoveries.push(format!(
                    "ply {}: the camera was lost during the move; it was recognised once frames came back",
                    game.moves().len() + 1
                ));
            }
            let effects = self.core().human_move(&uci_of(truth), now)?;
            self.host.apply(effects);
        } else {
            // Missed or misread: the person corrects it on the screen.
            self.summary.recognition_errors += 1;
            self.summary.recognition_notes.push(format!(
                "ply {}: the person played {} but the camera side saw {:?}",
                game.moves().len() + 1,
                uci_of(truth),
                seen.iter().map(|m| uci_of(*m)).collect::<Vec<_>>()
            ));
            tracing::warn!(
                truth = %uci_of(truth),
                seen = ?seen.iter().map(|m| uci_of(*m)).collect::<Vec<_>>(),
                "move misrecognised; corrected by the person"
            );
            let effects = self.core().human_move(&uci_of(truth), now)?;
            self.host.apply(effects);
            let mut after = pos;
            after.play_unchecked(truth);
            watcher.set_position(after);
        }
        Ok(())
    }

    /// The camera is lost (`true`) or back: what the service shows and says.
    fn camera_lost(&mut self, lost: bool) {
        let effects = if lost {
            self.core()
                .camera_lost("camera disconnected (simulated)".into())
                .1
        } else {
            self.core().camera_back()
        };
        self.host.apply(effects);
        self.notify();
        if lost {
            self.summary.camera_outages += 1;
        }
    }

    /// Whether frames come again (the dark time is over); says so once.
    fn camera_back(&mut self, dark: &mut bool, until: Option<Duration>) -> bool {
        if until.is_some_and(|u| self.phys.time.now() < u) {
            return false;
        }
        *dark = false;
        self.camera_lost(false);
        true
    }

    /// After a restart: the journal is the truth; the board must show it.
    fn recover_after_restart(
        &mut self,
        watcher: &mut dyn MoveWatcher,
        arm: Option<&mut Executor<'_, DriverPort>>,
        slots: &mut SlotState,
    ) -> Result<Option<ProcessEnd>, PlayError> {
        let Some(game) = self.core().session().map(|s| s.game().clone()) else {
            return Ok(None);
        };
        let journaled = game.position().clone();
        let setup = self.phys.setup.clone();
        if let Some(ex) = arm {
            // The arm may have stopped anywhere: back to rest first.
            let to_rest = Planner::new(&setup).plan_transfers(
                &[],
                ex.present_pose().ok(),
                String::new(),
                String::new(),
            );
            if let Err(e) = to_rest
                .map_err(|e| e.to_string())
                .and_then(|p| ex.execute(&p).map(|_| ()).map_err(|e| e.to_string()))
            {
                return Ok(Some(ProcessEnd::Paused(format!(
                    "after a restart the arm cannot go to rest: {e}"
                ))));
            }
            let last_robot = game
                .moves()
                .last()
                .filter(|_| game.turn() == self.spec.person)
                .map(|m| m.mv);
            let holding = self.phys.world().holding();
            let squares = self.read_board(watcher);
            if !holding && squares.is_some_and(|sq| shows(&sq, journaled.board())) {
                self.summary
                    .recoveries
                    .push("restart: the board matched the journal".into());
            } else if let (Some(mv), false, Some(sq)) = (last_robot, holding, squares) {
                let mut g = game.clone();
                let _ = g.take_back();
                let before = g.position().clone();
                if shows(&sq, before.board()) {
                    // The robot's journaled move never reached the board: make it again.
                    *slots = slots_after(&setup, &g, !self.spec.person);
                    let plan =
                        Planner::new(&setup).plan(&before, mv, ex.present_pose().ok(), slots);
                    let done = plan
                        .map_err(|e| e.to_string())
                        .and_then(|p| ex.execute(&p).map(|_| ()).map_err(|e| e.to_string()));
                    if let Err(e) = done {
                        return Ok(Some(ProcessEnd::Paused(format!(
                            "after a restart the robot's move {} failed: {e}",
                            uci_of(mv)
                        ))));
                    }
                    self.summary.arm_moves += 1;
                    self.summary.recoveries.push(format!(
                        "restart: the robot's journaled move {} was made again",
                        uci_of(mv)
                    ));
                } else {
                    self.person_fixes(journaled.board());
                    self.summary
                        .recoveries
                        .push("restart: the person set up the journaled position by hand".into());
                }
            } else {
                self.person_fixes(journaled.board());
                self.summary
                    .recoveries
                    .push("restart: the person set up the journaled position by hand".into());
            }
        }
        watcher.set_position(journaled);
        {
            let effects = self.core().resume();
            self.host.apply(effects);
        }
        self.notify();
        Ok(None)
    }

    /// Every servo plugged back in and fault-free.
    fn repair_all(&self) {
        if let Some(p) = &self.phys.sim_port {
            let mut bus = p.bus();
            for id in self.phys.setup.model.servo_ids() {
                bus.repair(id);
            }
        }
    }

    fn wait_virtual(&self, d: Duration) {
        let end = self.phys.time.now() + d;
        while self.phys.time.now() < end {
            self.phys.tick();
        }
    }

    fn push_frame(&mut self, watcher: &mut dyn MoveWatcher) -> Option<TrackEvent> {
        let aw = self.phys.world();
        let view = View {
            world: &aw.world,
            arm_over_board: aw.over_board(),
            t_ms: self.phys.time.now().as_millis() as u64,
        };
        let ev = watcher.push(&view);
        drop(aw);
        self.count_frames(watcher);
        if let Some((status, jpeg)) = watcher.camera() {
            if let Some(j) = jpeg {
                self.host.camera_picture(j);
            }
            if self.core().set_camera(status) {
                self.notify();
            }
        }
        ev
    }

    fn count_frames(&mut self, watcher: &dyn MoveWatcher) {
        let (f, u) = watcher.frames();
        self.summary.vision_frames = self.frames_base.0 + f;
        self.summary.vision_unread_frames = self.frames_base.1 + u;
    }

    /// Reads the settled board (waiting a moment for it to settle).
    fn read_board(
        &mut self,
        watcher: &mut dyn MoveWatcher,
    ) -> Option<[crate::recognition::Occupant; 64]> {
        let end = self.phys.time.now() + SETTLE_WAIT;
        loop {
            {
                let aw = self.phys.world();
                let view = View {
                    world: &aw.world,
                    arm_over_board: aw.over_board(),
                    t_ms: self.phys.time.now().as_millis() as u64,
                };
                let read = watcher.read_squares(&view);
                drop(aw);
                self.count_frames(watcher);
                if read.is_some() {
                    return read;
                }
            }
            if self.phys.time.now() >= end {
                return None;
            }
            self.phys.tick();
        }
    }

    /// How far the pieces the arm put down stand from their squares' centres.
    fn note_placement(&mut self) {
        let worst = {
            let aw = self.phys.world();
            let spec = &aw.world.board;
            aw.events[self.events_seen..]
                .iter()
                .filter_map(|e| match e {
                    JawEvent::Released { at_mm, .. } => {
                        let sq = spec.square_at(at_mm[0], at_mm[1])?;
                        let c = spec.square_centre(sq);
                        Some((at_mm[0] - c.x).hypot(at_mm[1] - c.y))
                    }
                    _ => None,
                })
                .fold(0.0, f64::max)
        };
        self.events_seen = self.phys.world().events.len();
        self.summary.max_placement_error_mm = self.summary.max_placement_error_mm.max(worst);
    }

    /// The scripted person puts the board into `target` by hand (taking a
    /// piece out of the jaws if one is there), with their hand in view.
    fn person_fixes(&mut self, target: &Board) {
        let rng = &mut self.phys.rng;
        let mut aw = self.phys.world.lock().unwrap_or_else(|p| p.into_inner());
        aw.take_from_jaws();
        let spec = aw.world.board.clone();
        let hand = Hand::reaching(
            Point3::new(spec.play_mm() / 2.0, spec.play_mm() / 3.0, 60.0),
            -Vector3::y(),
            [0.8, 0.6, 0.5],
            [0.2, 0.2, 0.5],
        );
        aw.world.hand = Some(hand);
        set_board(&mut aw.world, target, rng);
        drop(aw);
        self.wait_virtual(PERSON_FIX);
        self.phys.world().world.hand = None;
        self.phys.tick();
    }
}

/// Moves pieces so that exactly `target` stands on the board: pieces
/// already right stay; others come from wrong squares or from beside the
/// board; pieces that do not belong go beside it (the person's side).
fn set_board(world: &mut World, target: &Board, rng: &mut ChaCha8Rng) {
    let spec = world.board.clone();
    let mut used = vec![false; world.pieces.len()];
    let on_square = |w: &World, i: usize| -> Option<shakmaty::Square> {
        let p = &w.pieces[i];
        if p.position.z > crate::sim::world::LIFTED_MM {
            return None;
        }
        spec.square_at(p.position.x, p.position.y)
    };
    let mut missing = Vec::new();
    for sq in shakmaty::Square::ALL {
        let Some(want) = target.piece_at(sq) else {
            continue;
        };
        let here = (0..world.pieces.len()).find(|&i| {
            !used[i] && on_square(world, i) == Some(sq) && world.pieces[i].piece == want
        });
        match here {
            Some(i) => used[i] = true,
            None => missing.push((sq, want)),
        }
    }
    // Pieces standing on a square where they do not belong are free to move.
    for (sq, want) in missing {
        let from = (0..world.pieces.len()).find(|&i| !used[i] && world.pieces[i].piece == want);
        let placed = crate::sim::world::placed_on(&spec, sq, want, Placement::CASUAL, rng);
        match from {
            Some(i) => {
                used[i] = true;
                world.pieces[i].position = placed.position;
                world.pieces[i].tilt = 0.0;
            }
            None => {
                world.pieces.push(placed);
                used.push(true);
            }
        }
    }
    let mut k = 0.0;
    let stray: Vec<usize> = (0..world.pieces.len())
        .filter(|&i| !used[i] && on_square(world, i).is_some())
        .collect();
    for i in stray {
        world.pieces[i].position = Point3::new(
            spec.play_mm() + spec.border_mm + 60.0 + k,
            -spec.border_mm - 40.0,
            0.0,
        );
        k += 30.0;
    }
}

/// Graveyard and reserve slots taken after the robot's moves of `game`.
fn slots_after(setup: &ArmSetup, game: &Game, robot: Color) -> SlotState {
    let planner = Planner::new(setup);
    let mut slots = SlotState::default();
    let mut pos = game.start().clone();
    for m in game.moves() {
        if pos.turn() == robot {
            let _ = planner.transfers(&pos, m.mv, &mut slots);
        }
        pos.play_unchecked(m.mv);
    }
    slots
}

#[cfg(test)]
mod tests;
