//! The running robot: the [`Core`] behind a lock, the effects it asks for
//! carried out on worker threads (engine search, arm motion, speech), and
//! every change broadcast to the web page.

use std::sync::{Arc, Mutex, MutexGuard};

use shakmaty::{Chess, Move};
use tokio::sync::broadcast;

use super::core::{CommandError, Core, Effect, Status};

/// How often the clocks are checked: a flag is seen fallen within a
/// quarter of a second (club clocks show tenths only under 10 s).
pub const CLOCK_TICK_MS: u64 = 250;
use super::voice::Voice;
use crate::game::Game;

/// Whatever chooses the robot's moves (the built-in engine or a UCI engine).
pub trait MoveChooser: Send + 'static {
    /// The move to play in the game's current position at `level` (0..=20),
    /// with an evaluation in centipawns from White's side when known.
    /// `max_time`, in a game with clocks, is what the robot's clock allows
    /// for this move; the search must not take longer.
    fn choose(
        &mut self,
        game: &Game,
        level: u8,
        max_time: Option<std::time::Duration>,
    ) -> Result<(Move, Option<i32>), String>;
    /// Something the person should know about the last choice (an
    /// external engine crashed and was restarted or replaced).
    fn take_notice(&mut self) -> Option<String> {
        None
    }
}

/// Whatever puts moves on the physical (or simulated) board.
pub trait MovePlayer: Send + 'static {
    /// Plays `mv` from position `before`; returns when the pieces are placed.
    fn play(&mut self, before: &Chess, mv: Move) -> Result<(), String>;
    /// Stops motion at once (emergency stop).
    fn stop(&mut self);
    /// A way to stop that does not wait for `play` to return (the player
    /// is locked while it plays); without one, the stop waits for the move.
    fn stop_handle(&self) -> Option<Arc<dyn Fn() + Send + Sync>> {
        None
    }
}

/// Shared state of the running service.
pub struct Service {
    core: Mutex<Core>,
    updates: broadcast::Sender<Status>,
    voice: Voice,
    chooser: Option<Mutex<Box<dyn MoveChooser>>>,
    player: Option<Mutex<Box<dyn MovePlayer>>>,
    /// The player's lock-free emergency stop, when it has one.
    stopper: Option<Arc<dyn Fn() + Send + Sync>>,
    now: Box<dyn Fn() -> i64 + Send + Sync>,
    /// The latest camera picture for the page (JPEG), when a camera runs.
    camera_image: Mutex<Option<Arc<Vec<u8>>>>,
    /// A person asked to find the board again (done by the camera loop on
    /// its next frame).
    board_calibration: std::sync::atomic::AtomicBool,
    /// A camera loop runs (it carries out board calibrations).
    camera_loop: std::sync::atomic::AtomicBool,
}

impl Service {
    pub fn new(
        core: Core,
        voice: Voice,
        chooser: Option<Box<dyn MoveChooser>>,
        player: Option<Box<dyn MovePlayer>>,
        now: Box<dyn Fn() -> i64 + Send + Sync>,
    ) -> Arc<Service> {
        let (updates, _) = broadcast::channel(64);
        let stopper = player.as_ref().and_then(|p| p.stop_handle());
        Arc::new(Service {
            core: Mutex::new(core),
            updates,
            voice,
            chooser: chooser.map(Mutex::new),
            player: player.map(Mutex::new),
            stopper,
            now,
            camera_image: Mutex::new(None),
            board_calibration: std::sync::atomic::AtomicBool::new(false),
            camera_loop: std::sync::atomic::AtomicBool::new(false),
        })
    }

    /// The clock used for move timestamps (injected: tests and the
    /// simulator control it).
    pub fn now_ms(&self) -> i64 {
        (self.now)()
    }

    /// Locks the core. A panic while holding it would poison the lock;
    /// the core's state is still consistent (every change is journaled
    /// first), so the lock is taken back rather than failing forever.
    pub fn core(&self) -> MutexGuard<'_, Core> {
        self.core.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Replaces the camera picture the page shows.
    pub fn set_camera_image(&self, jpeg: Vec<u8>) {
        *self.camera_image.lock().unwrap_or_else(|p| p.into_inner()) = Some(Arc::new(jpeg));
    }

    /// Asks the camera loop to find the board again on its next frame.
    /// Refused (false) when no camera is watching.
    pub fn request_board_calibration(&self) -> bool {
        if !self.camera_loop.load(std::sync::atomic::Ordering::SeqCst)
            || *self.core().camera() == super::core::CameraStatus::Absent
        {
            return false;
        }
        self.board_calibration
            .store(true, std::sync::atomic::Ordering::SeqCst);
        true
    }

    /// A camera loop watches the board from now on.
    pub fn set_camera_loop(&self) {
        self.camera_loop
            .store(true, std::sync::atomic::Ordering::SeqCst);
    }

    /// Whether a board calibration was asked for (and clears the request).
    pub fn take_board_calibration(&self) -> bool {
        self.board_calibration
            .swap(false, std::sync::atomic::Ordering::SeqCst)
    }

    /// The latest camera picture (JPEG), if any.
    pub fn camera_image(&self) -> Option<Arc<Vec<u8>>> {
        self.camera_image
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    pub fn status(&self) -> Status {
        self.core().status()
    }

    /// Keeps the clocks of a timed game going: every [`CLOCK_TICK_MS`]
    /// the core is brought up to date (a fallen flag ends the game) and the
    /// page is told when a clock starts or stops. The thread ends with the
    /// service.
    pub fn start_clock_ticker(self: &Arc<Self>) {
        let weak = Arc::downgrade(self);
        std::thread::spawn(move || loop {
            std::thread::sleep(std::time::Duration::from_millis(CLOCK_TICK_MS));
            let Some(me) = weak.upgrade() else { break };
            let now = me.now_ms();
            let (changed, effects) = me.core().tick(now);
            if changed {
                me.apply(effects);
            }
        });
    }

    pub fn subscribe(&self) -> broadcast::Receiver<Status> {
        self.updates.subscribe()
    }

    /// Publishes the status and carries out the effects of a command.
    pub fn apply(self: &Arc<Self>, effects: Vec<Effect>) {
        let _ = self.updates.send(self.status());
        for e in effects {
            match e {
                Effect::Say(text) => self.voice.say(&text),
                Effect::ArmStop => {
                    if let Some(stop) = &self.stopper {
                        stop();
                    } else if let Some(p) = &self.player {
                        p.lock().unwrap_or_else(|p| p.into_inner()).stop();
                    }
                }
                Effect::ThinkFor(_) => {
                    let me = self.clone();
                    std::thread::spawn(move || me.think());
                }
                Effect::ArmPlay(mv) => {
                    let me = self.clone();
                    std::thread::spawn(move || me.arm_play(mv));
                }
            }
        }
    }

    fn think(self: Arc<Self>) {
        let Some(chooser) = &self.chooser else {
            let effects = self
                .core()
                .engine_failed("no engine is configured to choose the robot's moves".into());
            self.apply(effects);
            return;
        };
        let now = self.now_ms();
        let (game, level, max_time) = {
            let core = self.core();
            match core.session() {
                Some(s) => (s.game().clone(), core.level(), core.think_time(now)),
                None => return,
            }
        };
        let (choice, notice) = {
            let mut c = chooser.lock().unwrap_or_else(|p| p.into_inner());
            let choice = c.choose(&game, level, max_time);
            (choice, c.take_notice())
        };
        if let Some(text) = notice {
            tracing::warn!("engine: {text}");
            let effects = self.core().notify(text);
            self.apply(effects);
        }
        let effects = match choice {
            Ok((mv, eval)) => {
                let mut core = self.core();
                // The game may have changed while thinking (take-back, new game).
                let same = core.session().is_some_and(|s| {
                    s.game().fen() == game.fen() && s.game().moves().len() == game.moves().len()
                });
                if !same {
                    return;
                }
                match core.engine_move(mv, eval, self.now_ms()) {
                    Ok(e) => e,
                    // Paused while thinking (a fault, the stop button):
                    // the engine's turn comes again on resume.
                    Err(CommandError::Paused) => return,
                    Err(e) => core.engine_failed(format!("its move was refused: {e}")),
                }
            }
            Err(e) => self.core().engine_failed(e),
        };
        self.apply(effects);
    }

    fn arm_play(self: Arc<Self>, mv: Move) {
        let before = {
            let core = self.core();
            let Some(s) = core.session() else { return };
            // The move is already in the game: the position before it is
            // the game without its last move.
            let mut g = s.game().clone();
            if g.take_back().is_err() {
                return;
            }
            g.position().clone()
        };
        let result = match &self.player {
            Some(p) => p
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .play(&before, mv),
            None => Ok(()),
        };
        let effects = {
            let mut core = self.core();
            match result {
                Ok(()) => core.arm_done(),
                Err(e) => core.arm_failed(e),
            }
        };
        self.apply(effects);
    }
}
