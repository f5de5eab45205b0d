//! The robot's decisions, apart from any I/O loop: which mode, whose turn,
//! what the person asked for, what to say. The HTTP server and the game
//! loop are thin layers that feed commands in and show the status.
//!
//! Every change to the game goes through the [`GameSession`], so it is
//! journaled before anything acts on it.

use serde::{Deserialize, Serialize};
use shakmaty::{Chess, Color, Move, Position, Role};

use crate::config::GameConfig;
use crate::game::clock::{Clock, TimeControl};
use crate::game::journal::{self, DirLock};
use crate::game::session::{GameSession, Players, SessionError};
use crate::game::{
    parse_move, position_from_fen, san_of, uci_of, Claim, GameError, MoveInputError,
};

use super::voice::describe_san;

/// What the robot is for in this game.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// A person plays against the engine; the arm moves the robot's pieces.
    #[default]
    Play,
    /// The person gives moves on screen; the arm plays them on the board.
    Assist,
    /// Two people play; the camera records.
    Record,
}

/// What the arm is doing, for the interface.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "state", rename_all = "lowercase")]
pub enum ArmStatus {
    /// No arm in this set-up (record mode, or none configured).
    Absent,
    Idle,
    Moving {
        mv: String,
    },
    /// Emergency stop or a fault: it will not move until resumed.
    Stopped {
        reason: String,
    },
}

/// What the camera side is doing, for the interface.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Default)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum CameraStatus {
    /// No camera in this set-up: moves are entered on screen.
    #[default]
    Absent,
    /// The board is in view and read.
    Watching,
    /// A hand or the arm is over the board (or things are still moving).
    Busy,
    /// The frame came but the board was not found in it (moved, covered, dark).
    NoBoard { detail: String },
    /// No frames: the camera cannot be opened or stopped delivering; retrying.
    Lost { detail: String },
    /// A recorded video or image folder came to its end.
    Ended,
}

/// A new game as the interface asks for it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NewGameRequest {
    #[serde(default)]
    pub mode: Mode,
    /// The person's colour in play and assist mode.
    #[serde(default = "default_color")]
    pub color: ColorName,
    /// Engine level 0..=20 (play mode).
    #[serde(default = "default_level")]
    pub level: u8,
    /// Start position; the standard one when absent.
    #[serde(default)]
    pub fen: Option<String>,
    #[serde(default)]
    pub white: Option<String>,
    #[serde(default)]
    pub black: Option<String>,
    /// In assist mode: the engine, or another person on the board.
    #[serde(default)]
    pub opponent: Opponent,
    /// Clocks, `MINUTES+SECONDS` (`5+3`); none when empty, the config's
    /// `game.time_control` when absent.
    #[serde(default)]
    pub time_control: Option<String>,
}

/// How a game was set up, kept in its journal so that a game resumed
/// after a restart goes on the same way (same mode, colours, level and
/// clocks).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GameSetup {
    pub mode: Mode,
    pub opponent: Opponent,
    pub human: ColorName,
    pub level: u8,
    /// The clocks, when the game has them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_control: Option<TimeControl>,
}

/// Who plays against the person (play and assist mode).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Opponent {
    #[default]
    Engine,
    Person,
}

fn default_color() -> ColorName {
    ColorName::White
}

fn default_level() -> u8 {
    10
}

/// Highest engine level (full strength).
pub const MAX_LEVEL: u8 = 20;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ColorName {
    White,
    Black,
}

impl From<ColorName> for Color {
    fn from(c: ColorName) -> Color {
        match c {
            ColorName::White => Color::White,
            ColorName::Black => Color::Black,
        }
    }
}

impl From<Color> for ColorName {
    fn from(c: Color) -> ColorName {
        match c {
            Color::White => ColorName::White,
            Color::Black => ColorName::Black,
        }
    }
}

/// Why a command was refused; shown to the person as it is.
#[derive(Debug, thiserror::Error)]
pub enum CommandError {
    #[error("no game is running: start a new game first")]
    NoGame,
    #[error(transparent)]
    Move(#[from] MoveInputError),
    #[error(transparent)]
    Game(#[from] GameError),
    #[error("{0}")]
    Session(#[from] SessionError),
    #[error("it is the robot's turn; wait for its move")]
    NotYourTurn,
    #[error("the game is paused; resume it first")]
    Paused,
    #[error("the arm is stopped ({0}); resume it first")]
    ArmStopped(String),
    #[error("{0}")]
    Invalid(String),
}

/// Most moves a stated board may be away from the game's position (as
/// many as the camera's own lost-track search).
pub const STATED_BOARD_PLIES: usize = 4;

/// A question the robot is waiting for a person to answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Question {
    /// Which piece the pawn on `from` promotes to on `to`.
    Promotion { from: String, to: String },
    /// A draw offered by `by`, waiting for the other side.
    DrawOffer { by: ColorName },
}

/// Everything the interface shows, as one JSON object.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Status {
    pub running: bool,
    pub mode: Mode,
    pub opponent: Opponent,
    pub human: ColorName,
    pub level: u8,
    pub fen: String,
    pub turn: ColorName,
    /// SAN of every move, in order.
    pub moves: Vec<String>,
    pub last_move: Option<String>,
    /// `1-0`, `0-1`, `1/2-1/2` or `*`.
    pub result: String,
    pub termination: Option<String>,
    pub claimable: Vec<String>,
    pub paused: bool,
    pub arm: ArmStatus,
    pub question: Option<Question>,
    /// The last thing the robot said (also spoken).
    pub message: String,
    /// Engine evaluation from White's view, centipawns, when known.
    pub eval_cp: Option<i32>,
    pub white: String,
    pub black: String,
    pub camera: CameraStatus,
    /// The clocks of a timed game.
    pub clock: Option<ClockStatus>,
    /// The config's time control for new games (empty: no clocks).
    pub default_time_control: String,
}

/// The clocks as the page shows them: time left when the status was made
/// (the page counts the running one down itself).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ClockStatus {
    /// `MINUTES+SECONDS`.
    pub control: String,
    pub white_ms: u64,
    pub black_ms: u64,
    /// Whose clock runs: none while paused and once the game is over.
    pub running: Option<ColorName>,
}

/// Something the loop around the core must do after a command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Effect {
    /// Say this aloud (and show it).
    Say(String),
    /// It is the engine's turn in this position.
    ThinkFor(Color),
    /// The arm must play this move on the board.
    ArmPlay(Move),
    /// Stop the arm now.
    ArmStop,
}

/// The robot's state.
#[derive(Debug)]
pub struct Core {
    cfg: GameConfig,
    /// The journal directory, held for this process while the core lives
    /// (`None` once let go of, see [`Core::release_journal_dir`]).
    dir_lock: Option<DirLock>,
    session: Option<GameSession>,
    mode: Mode,
    opponent: Opponent,
    human: Color,
    level: u8,
    paused: bool,
    arm: ArmStatus,
    question: Option<Question>,
    message: String,
    eval_cp: Option<i32>,
    has_arm: bool,
    camera: CameraStatus,
    /// The clocks of a timed game. After a restart they go on from the
    /// time left after each side's last journaled move (the time the side
    /// to move spent before the crash is not known, and not charged).
    clock: Option<Clock>,
    /// When the clocks were last brought up to date.
    clock_at_ms: i64,
}

impl Core {
    /// A core over the game directories; resumes a journaled game if any.
    /// Refuses a journal directory another process holds.
    pub fn new(cfg: GameConfig, has_arm: bool) -> Result<Core, SessionError> {
        let dir_lock = journal::lock_dir(&cfg.journal_dir)?;
        let session = GameSession::resume(&cfg)?;
        let mut core = Core::stand_in(cfg, has_arm);
        core.dir_lock = Some(dir_lock);
        if let Some(s) = session {
            let setup_note = core.restore_setup(&s);
            core.message = format!(
                "Resumed the game between {} and {} after {} moves.{setup_note} Please check the board.",
                s.players().white,
                s.players().black,
                s.game().moves().len()
            );
            // Whatever was in flight is checked again before the arm moves.
            core.paused = true;
            core.session = Some(s);
        }
        Ok(core)
    }

    /// Takes the mode, colours, level and clocks of a resumed game from
    /// its journal; returns a sentence for the person when they could not
    /// be read (a journal from an older version keeps the defaults).
    fn restore_setup(&mut self, s: &GameSession) -> String {
        let setup = match s.setup().map(GameSetup::deserialize) {
            Some(Ok(setup)) => setup,
            Some(Err(e)) => {
                tracing::warn!("journal set-up unreadable: {e}");
                return " Its settings could not be read; check mode and colour.".into();
            }
            None => return String::new(),
        };
        self.mode = setup.mode;
        self.opponent = setup.opponent;
        self.human = setup.human.into();
        self.level = setup.level.min(MAX_LEVEL);
        self.clock = setup.time_control.map(|tc| {
            let g = s.game();
            let first = g.start().turn();
            let mut left = shakmaty::ByColor::new_with(|_| tc.base_ms);
            for (i, m) in g.moves().iter().enumerate() {
                let mover = if i % 2 == 0 { first } else { !first };
                if let Some(c) = m.clock_ms {
                    *left.get_mut(mover) = c;
                }
            }
            Clock::resumed(tc, left)
        });
        if self.mode == Mode::Assist && !self.has_arm {
            // Nothing can play the person's moves on the board now: they
            // play on the board themselves, against the engine or the
            // other person as before.
            let (mode, name) = match self.opponent {
                Opponent::Engine => (Mode::Play, "play"),
                Opponent::Person => (Mode::Record, "record"),
            };
            self.mode = mode;
            return format!(" Assist mode needs the arm, which is not connected; the game goes on in {name} mode.");
        }
        String::new()
    }

    /// A core with no game that has not looked at (nor holds) the journal
    /// directory: the simulator's place-holder until a robot process's own
    /// [`Core::new`] takes its place.
    pub(crate) fn stand_in(cfg: GameConfig, has_arm: bool) -> Core {
        Core {
            cfg,
            dir_lock: None,
            session: None,
            mode: Mode::Play,
            opponent: Opponent::Engine,
            human: Color::White,
            level: default_level(),
            paused: false,
            arm: if has_arm {
                ArmStatus::Idle
            } else {
                ArmStatus::Absent
            },
            question: None,
            message: String::new(),
            eval_cp: None,
            has_arm,
            camera: CameraStatus::Absent,
            clock: None,
            clock_at_ms: 0,
        }
    }

    /// Lets go of the journal directory as a dying process would, so that
    /// the simulator can start the next life of the robot process (a new
    /// core over the same directory) while this one is still in memory.
    pub(crate) fn release_journal_dir(&mut self) {
        self.dir_lock = None;
    }

    pub fn session(&self) -> Option<&GameSession> {
        self.session.as_ref()
    }

    pub fn mode(&self) -> Mode {
        self.mode
    }

    pub fn paused(&self) -> bool {
        self.paused
    }

    pub fn level(&self) -> u8 {
        self.level
    }

    pub fn set_eval(&mut self, cp: Option<i32>) {
        self.eval_cp = cp;
    }

    /// The current status for the interface.
    pub fn status(&self) -> Status {
        let (fen, turn, moves, last, result, termination, claimable, white, black) =
            match &self.session {
                Some(s) => {
                    let g = s.game();
                    let r = g.result();
                    (
                        g.fen(),
                        g.turn(),
                        g.moves().iter().map(|m| m.san.clone()).collect(),
                        g.moves().last().map(|m| m.uci.clone()),
                        r.map_or("*", |r| r.as_str()).to_owned(),
                        r.map(|r| r.termination.describe().to_owned()),
                        g.claimable()
                            .iter()
                            .map(|c| c.as_str().to_owned())
                            .collect(),
                        s.players().white.clone(),
                        s.players().black.clone(),
                    )
                }
                None => (
                    crate::game::fen_of(&Chess::default()),
                    Color::White,
                    Vec::new(),
                    None,
                    "*".to_owned(),
                    None,
                    Vec::new(),
                    String::new(),
                    String::new(),
                ),
            };
        Status {
            running: self.session.is_some(),
            mode: self.mode,
            opponent: self.opponent,
            human: self.human.into(),
            level: self.level,
            fen,
            turn: turn.into(),
            moves,
            last_move: last,
            result,
            termination,
            claimable,
            paused: self.paused,
            arm: self.arm.clone(),
            question: self.question.clone(),
            message: self.message.clone(),
            eval_cp: self.eval_cp,
            white,
            black,
            camera: self.camera.clone(),
            clock: self.clock.as_ref().map(|c| {
                let at = u64::try_from(self.clock_at_ms).unwrap_or(0);
                ClockStatus {
                    control: c.control().to_string(),
                    white_ms: c.remaining(Color::White, at),
                    black_ms: c.remaining(Color::Black, at),
                    running: c.running_side().map(Into::into),
                }
            }),
            default_time_control: self.cfg.time_control.clone(),
        }
    }

    /// Records what the camera side is doing; `true` when it changed.
    pub fn set_camera(&mut self, camera: CameraStatus) -> bool {
        let changed = self.camera != camera;
        self.camera = camera;
        changed
    }

    /// What the camera side is doing.
    pub fn camera(&self) -> &CameraStatus {
        &self.camera
    }

    /// The camera delivers no frames: shown, and said once. Returns whether
    /// the status shown changed, and what to say.
    pub fn camera_lost(&mut self, detail: String) -> (bool, Vec<Effect>) {
        let changed = self.set_camera(CameraStatus::Lost {
            detail: detail.clone(),
        });
        let effects = self.notify(format!(
            "I cannot see the board: {detail}. Trying again; the game is saved."
        ));
        (changed, effects)
    }

    /// Frames come again after the camera was lost.
    pub fn camera_back(&mut self) -> Vec<Effect> {
        self.set_camera(CameraStatus::Watching);
        self.notify("The camera is back.".into())
    }

    /// Something the person must be told (the board does not match, a
    /// move seen was refused, the engine was replaced). Said once:
    /// repeating the message that is already showing says nothing again.
    pub fn notify(&mut self, text: String) -> Vec<Effect> {
        let mut effects = Vec::new();
        if self.message != text {
            self.say(text, &mut effects);
        }
        effects
    }

    fn say(&mut self, text: String, effects: &mut Vec<Effect>) {
        self.message = text.clone();
        effects.push(Effect::Say(text));
    }

    /// Starts a new game (finishing and archiving any running one).
    pub fn new_game(
        &mut self,
        req: NewGameRequest,
        now_ms: i64,
    ) -> Result<Vec<Effect>, CommandError> {
        if req.level > MAX_LEVEL {
            return Err(CommandError::Invalid(format!(
                "level {} is out of range: 0 (beginner) to {MAX_LEVEL} (full strength)",
                req.level
            )));
        }
        let start = match &req.fen {
            Some(f) if !f.trim().is_empty() => position_from_fen(f)?,
            _ => Chess::default(),
        };
        if req.mode == Mode::Assist && !self.has_arm {
            return Err(CommandError::Invalid(
                "assist mode needs an arm to play the moves on the board".into(),
            ));
        }
        let control = match req
            .time_control
            .as_deref()
            .unwrap_or(&self.cfg.time_control)
            .trim()
        {
            "" => None,
            t => Some(t.parse::<TimeControl>().map_err(CommandError::Invalid)?),
        };
        let mut effects = Vec::new();
        if let Some(old) = self.session.take() {
            let path = old.finish()?;
            tracing::info!(pgn = %path.display(), "previous game archived");
        }
        let human: Color = req.color.into();
        let (white, black) = match req.mode {
            Mode::Record => ("White".to_owned(), "Black".to_owned()),
            _ if human == Color::White => ("Human".to_owned(), "chessbot".to_owned()),
            _ => ("chessbot".to_owned(), "Human".to_owned()),
        };
        let players = Players {
            white: req.white.clone().unwrap_or(white),
            black: req.black.clone().unwrap_or(black),
        };
        let opponent = if req.mode == Mode::Play {
            Opponent::Engine
        } else {
            req.opponent
        };
        let setup = GameSetup {
            mode: req.mode,
            opponent,
            human: req.color,
            level: req.level,
            time_control: control,
        };
        let setup = serde_json::to_value(&setup).expect("a game set-up always serializes");
        let session = GameSession::start(&self.cfg, players, start, now_ms, Some(setup))?;
        // White's clock (or the side to move's) starts with the game.
        self.clock = control.map(|tc| {
            let mut c = Clock::new(tc);
            c.start(session.game().turn(), ms(now_ms));
            c
        });
        self.clock_at_ms = now_ms;
        self.session = Some(session);
        self.mode = req.mode;
        self.opponent = opponent;
        self.human = human;
        self.level = req.level;
        self.paused = false;
        self.question = None;
        self.eval_cp = None;
        if self.has_arm {
            self.arm = ArmStatus::Idle;
        }
        self.say("New game. Good luck!".into(), &mut effects);
        self.after_move(&mut effects);
        Ok(effects)
    }

    fn running(&mut self) -> Result<&mut GameSession, CommandError> {
        self.session.as_mut().ok_or(CommandError::NoGame)
    }

    /// Whether the side to move is played by the engine.
    fn engine_to_move(&self) -> bool {
        match &self.session {
            Some(s) => self.engine_plays(s.game().turn()),
            None => false,
        }
    }

    /// Whether the engine (and so the robot) plays `side`.
    fn engine_plays(&self, side: Color) -> bool {
        self.mode != Mode::Record && self.opponent == Opponent::Engine && side != self.human
    }

    /// Brings the clocks up to `now_ms`: the side to move's runs unless
    /// the game is paused or over (a take-back or resume switches it); a
    /// fallen flag ends the game (FIDE 6.9: lost, or drawn when the
    /// opponent cannot mate). Called by the service's ticker a few times a
    /// second; `true` when the page should be told (a clock started or
    /// stopped, or the game ended).
    pub fn tick(&mut self, now_ms: i64) -> (bool, Vec<Effect>) {
        let before = self.clock.as_ref().map(Clock::running_side);
        let mut effects = Vec::new();
        self.flag_check(now_ms, &mut effects);
        let after = self.clock.as_ref().map(Clock::running_side);
        (before != after || !effects.is_empty(), effects)
    }

    /// [`Core::tick`]'s work; `true` when a flag fell just now.
    fn flag_check(&mut self, now_ms: i64, effects: &mut Vec<Effect>) -> bool {
        let (Some(clock), Some(s)) = (self.clock.as_mut(), self.session.as_mut()) else {
            return false;
        };
        self.clock_at_ms = self.clock_at_ms.max(now_ms);
        let now = ms(self.clock_at_ms);
        let over = s.game().result().is_some();
        if let Some(side) = clock.flagged(now).filter(|_| !over) {
            clock.pause(now);
            if let Err(e) = s.flag_fell(side) {
                tracing::warn!("clock: recording the fallen flag failed: {e}");
                return false;
            }
            self.after_move(effects);
            return true;
        }
        // No clock runs while the arm moves: the person cannot move then,
        // and the arm's speed is not the robot's thinking.
        let arm_busy = matches!(self.arm, ArmStatus::Moving { .. });
        let want = (!self.paused && !over && !arm_busy).then(|| s.game().turn());
        if clock.running_side() != want {
            clock.pause(now);
            if let Some(side) = want {
                clock.start(side, now);
            }
        }
        false
    }

    /// How long the engine may think now, in a game with clocks: the
    /// share of the side to move's time left that a time manager plans
    /// for one move ([`Limits::time_budget`]'s soft budget).
    ///
    /// [`Limits::time_budget`]: crate::engine::Limits::time_budget
    pub fn think_time(&self, now_ms: i64) -> Option<std::time::Duration> {
        use std::time::Duration;
        let clock = self.clock.as_ref()?;
        let side = self.session.as_ref()?.game().turn();
        let left = Duration::from_millis(clock.remaining(side, ms(now_ms)));
        let inc = Duration::from_millis(clock.control().increment_ms);
        let limits = crate::engine::Limits {
            wtime: Some(left),
            btime: Some(left),
            winc: Some(inc),
            binc: Some(inc),
            ..Default::default()
        };
        limits.time_budget(side, Duration::ZERO).0
    }

    /// A person says what stands on the board (the page's board to fix,
    /// when the camera cannot tell): the moves that lead there from the
    /// game's position are played, never sent to the arm (they are on the
    /// board already). Refused when no single line of up to
    /// [`STATED_BOARD_PLIES`] legal moves leads there, or when the line
    /// includes a move of the robot's side.
    pub fn board_shown(
        &mut self,
        occ: &crate::vision::Occupancy,
        now_ms: i64,
    ) -> Result<Vec<Effect>, CommandError> {
        if self.paused {
            return Err(CommandError::Paused);
        }
        let pos = self.running()?.game().position().clone();
        let Some(line) =
            crate::recognition::photo::moves_to_occupancy(&pos, occ, STATED_BOARD_PLIES)
        else {
            return Err(CommandError::Invalid(format!(
                "no single line of up to {STATED_BOARD_PLIES} legal moves leads from the game's position to that board; check the squares, or enter the moves one by one"
            )));
        };
        let mut effects = Vec::new();
        if line.is_empty() {
            self.say("The board matches the game.".into(), &mut effects);
            return Ok(effects);
        }
        let mut p = pos;
        for &m in &line {
            if self.engine_plays(p.turn()) {
                return Err(CommandError::Invalid(format!(
                    "that board needs the robot's move {} as well; only your own moves can be entered this way",
                    san_of(&p, m)
                )));
            }
            p.play_unchecked(m);
        }
        for m in line {
            effects.extend(self.play(m, now_ms, false)?);
        }
        Ok(effects)
    }

    fn after_move(&mut self, effects: &mut Vec<Effect>) {
        let Some(s) = &self.session else { return };
        if let Some(r) = s.game().result() {
            let text = match r.outcome.winner() {
                Some(Color::White) => format!("White wins by {}.", r.termination.describe()),
                Some(Color::Black) => format!("Black wins by {}.", r.termination.describe()),
                None => format!("Draw: {}.", r.termination.describe()),
            };
            self.say(text, effects);
            return;
        }
        // The engine's turn waits for the arm to finish the move before:
        // one arm move at a time, and a reply is never committed to the
        // game on top of a move the arm failed to make.
        let arm_busy = matches!(self.arm, ArmStatus::Moving { .. });
        if self.engine_to_move() && !self.paused && !arm_busy {
            effects.push(Effect::ThinkFor(s.game().turn()));
        }
    }

    /// A move typed or clicked by a person (assist and record mode, and
    /// play mode when the camera is not used). Promotions without a piece
    /// ask which piece.
    pub fn human_move(&mut self, text: &str, now_ms: i64) -> Result<Vec<Effect>, CommandError> {
        if self.paused {
            return Err(CommandError::Paused);
        }
        if self.engine_to_move() {
            return Err(CommandError::NotYourTurn);
        }
        if let ArmStatus::Stopped { reason } = &self.arm {
            if self.mode == Mode::Assist {
                return Err(CommandError::ArmStopped(reason.clone()));
            }
        }
        let s = self.running()?;
        let pos = s.game().position().clone();
        let mv = match parse_move(&pos, text) {
            Ok(m) => m,
            Err(MoveInputError::Illegal { .. }) if needs_promotion_piece(&pos, text) => {
                let (from, to) = (text.trim()[..2].to_owned(), text.trim()[2..4].to_owned());
                self.question = Some(Question::Promotion { from, to });
                let mut effects = Vec::new();
                self.say("Which piece should the pawn become?".into(), &mut effects);
                return Ok(effects);
            }
            Err(e) => return Err(e.into()),
        };
        self.play(mv, now_ms, self.mode == Mode::Assist)
    }

    /// A move the camera saw made on the board. Never sent to the arm (it
    /// is already on the board); refused when the game is paused or the
    /// side that moved is the robot's (the person must put it back).
    pub fn board_move(&mut self, mv: Move, now_ms: i64) -> Result<Vec<Effect>, CommandError> {
        if self.paused {
            return Err(CommandError::Paused);
        }
        if self.engine_to_move() {
            return Err(CommandError::NotYourTurn);
        }
        self.running()?;
        self.play(mv, now_ms, false)
    }

    /// Answers a promotion question.
    pub fn choose_promotion(
        &mut self,
        role: Role,
        now_ms: i64,
    ) -> Result<Vec<Effect>, CommandError> {
        let Some(Question::Promotion { from, to }) = self.question.clone() else {
            return Err(CommandError::Invalid(
                "no promotion is waiting for a piece".into(),
            ));
        };
        self.question = None;
        self.human_move(&format!("{from}{to}{}", role.char()), now_ms)
    }

    /// Plays a move for whoever is to move; `by_arm` when the arm must
    /// put it on the board.
    pub fn play(
        &mut self,
        mv: Move,
        now_ms: i64,
        by_arm: bool,
    ) -> Result<Vec<Effect>, CommandError> {
        let mut effects = Vec::new();
        if self.flag_check(now_ms, &mut effects) {
            // The mover's flag fell before the move: the game is over.
            return Ok(effects);
        }
        let mut clock = self.clock.clone();
        let pressed = clock.as_mut().and_then(|c| c.press(ms(now_ms)));
        let s = self.running()?;
        let before = s.game().position().clone();
        let san = san_of(&before, mv);
        s.play(mv, Some(now_ms), pressed.map(|p| p.0), pressed.map(|p| p.1))?;
        self.clock = clock;
        self.question = None;
        if by_arm && self.has_arm {
            if let Some(c) = self.clock.as_mut() {
                // The next side's clock starts when the arm is done.
                c.pause(ms(now_ms));
            }
            self.arm = ArmStatus::Moving { mv: uci_of(mv) };
            effects.push(Effect::ArmPlay(mv));
        }
        self.say(describe_san(&san), &mut effects);
        self.after_move(&mut effects);
        Ok(effects)
    }

    /// The engine's reply arrived.
    pub fn engine_move(
        &mut self,
        mv: Move,
        eval_cp: Option<i32>,
        now_ms: i64,
    ) -> Result<Vec<Effect>, CommandError> {
        if self.paused {
            return Err(CommandError::Paused);
        }
        if !self.engine_to_move() {
            return Err(CommandError::Invalid("the engine is not to move".into()));
        }
        self.eval_cp = eval_cp;
        self.play(mv, now_ms, true)
    }

    /// The arm finished putting a move on the board.
    /// The arm finished putting a move on the board; the engine's turn
    /// (if it is) starts now.
    pub fn arm_done(&mut self) -> Vec<Effect> {
        let mut effects = Vec::new();
        if matches!(self.arm, ArmStatus::Moving { .. }) {
            self.arm = ArmStatus::Idle;
            self.after_move(&mut effects);
            // after_move announces a result again; it was said with the move.
            effects.retain(|e| !matches!(e, Effect::Say(_)));
        }
        effects
    }

    /// The arm failed: stop, keep the game, say what happened.
    pub fn arm_failed(&mut self, reason: String) -> Vec<Effect> {
        let mut effects = vec![Effect::ArmStop];
        // A move the arm was making is in the game but maybe half on the
        // board: the person finishes it (the arm cannot know where a
        // dropped piece lies).
        let unfinished = match &self.arm {
            ArmStatus::Moving { mv } => {
                format!(" Please finish the move {mv} on the board by hand.")
            }
            _ => String::new(),
        };
        self.arm = ArmStatus::Stopped {
            reason: reason.clone(),
        };
        self.paused = true;
        self.say(
            format!(
                "The arm stopped: {reason}. The game is saved.{unfinished} Fix the problem, then press resume."
            ),
            &mut effects,
        );
        effects
    }

    /// The engine could not choose a move: pause (the arm stays where it
    /// is), keep the game, say what happened. Resuming asks again.
    pub fn engine_failed(&mut self, reason: String) -> Vec<Effect> {
        self.paused = true;
        let mut effects = Vec::new();
        self.say(
            format!(
                "The engine failed: {reason}. The game is saved. Check the engine settings, then press resume to try again."
            ),
            &mut effects,
        );
        effects
    }

    pub fn take_back(&mut self) -> Result<Vec<Effect>, CommandError> {
        let s = self.running()?;
        let undone = s.take_back()?;
        let mut effects = Vec::new();
        self.say(
            format!("Took back {}. Please put the piece back.", undone.san),
            &mut effects,
        );
        Ok(effects)
    }

    pub fn resign(&mut self) -> Result<Vec<Effect>, CommandError> {
        let (human, mode) = (self.human, self.mode);
        let s = self.running()?;
        let loser = if mode == Mode::Record {
            s.game().turn()
        } else {
            human
        };
        s.resign(loser)?;
        let mut effects = Vec::new();
        self.after_move(&mut effects);
        Ok(effects)
    }

    /// A draw offer from the side to move (record) or the person (play).
    pub fn offer_draw(&mut self) -> Result<Vec<Effect>, CommandError> {
        let human = self.human;
        let mode = self.mode;
        let s = self.running()?;
        s.game()
            .result()
            .map_or(Ok(()), |r| Err(GameError::Over(r.termination.describe())))?;
        let by = if mode == Mode::Record {
            s.game().turn()
        } else {
            human
        };
        self.question = Some(Question::DrawOffer { by: by.into() });
        let mut effects = Vec::new();
        self.say("A draw is offered.".into(), &mut effects);
        Ok(effects)
    }

    /// Accepts a pending draw offer.
    pub fn accept_draw(&mut self) -> Result<Vec<Effect>, CommandError> {
        if !matches!(self.question, Some(Question::DrawOffer { .. })) {
            return Err(CommandError::Invalid("no draw offer is waiting".into()));
        }
        self.question = None;
        self.running()?.agree_draw()?;
        let mut effects = Vec::new();
        self.after_move(&mut effects);
        Ok(effects)
    }

    /// The engine's answer to a draw offer: it accepts when it does not
    /// think it is better (eval from its side at most this many centipawns).
    pub fn engine_answers_draw(&mut self) -> Result<Vec<Effect>, CommandError> {
        /// A quarter pawn: inside the noise of a short search.
        const ACCEPT_DRAW_BELOW_CP: i32 = 25;
        let engine_color = !self.human;
        let eval_for_engine = self.eval_cp.map(|cp| {
            if engine_color == Color::White {
                cp
            } else {
                -cp
            }
        });
        if eval_for_engine.is_some_and(|cp| cp <= ACCEPT_DRAW_BELOW_CP) {
            self.accept_draw()
        } else {
            self.question = None;
            let mut effects = Vec::new();
            self.say(
                "The robot declines the draw and plays on.".into(),
                &mut effects,
            );
            Ok(effects)
        }
    }

    pub fn claim_draw(&mut self, claim: Claim) -> Result<Vec<Effect>, CommandError> {
        self.running()?.claim_draw(claim)?;
        let mut effects = Vec::new();
        self.after_move(&mut effects);
        Ok(effects)
    }

    pub fn pause(&mut self) -> Vec<Effect> {
        self.paused = true;
        let mut effects = Vec::new();
        self.say("Paused.".into(), &mut effects);
        effects
    }

    pub fn resume(&mut self) -> Vec<Effect> {
        self.paused = false;
        if let ArmStatus::Stopped { .. } = self.arm {
            self.arm = ArmStatus::Idle;
        }
        let mut effects = Vec::new();
        self.say("Resumed.".into(), &mut effects);
        self.after_move(&mut effects);
        effects
    }

    /// The big red button.
    pub fn emergency_stop(&mut self) -> Vec<Effect> {
        let mut effects = vec![Effect::ArmStop];
        if self.has_arm {
            self.arm = ArmStatus::Stopped {
                reason: "emergency stop".into(),
            };
        }
        self.paused = true;
        self.say(
            "Emergency stop. The arm will not move until you press resume.".into(),
            &mut effects,
        );
        effects
    }

    /// Finishes the running game: writes its PGN to the games directory.
    pub fn finish(&mut self) -> Result<Option<std::path::PathBuf>, CommandError> {
        match self.session.take() {
            Some(s) => Ok(Some(s.finish()?)),
            None => Ok(None),
        }
    }
}

/// Milliseconds as the clock counts them (the service's time is never
/// before 1970; a negative one counts as 0).
fn ms(now_ms: i64) -> u64 {
    u64::try_from(now_ms).unwrap_or(0)
}

/// A pawn move to the last rank typed without a piece (`e7e8`, `e8`).
fn needs_promotion_piece(pos: &Chess, text: &str) -> bool {
    let t = text.trim();
    if t.len() != 4 {
        return false;
    }
    let (Ok(from), Ok(to)) = (
        t[..2].parse::<shakmaty::Square>(),
        t[2..4].parse::<shakmaty::Square>(),
    ) else {
        return false;
    };
    pos.legal_moves()
        .iter()
        .any(|m| m.from() == Some(from) && m.to() == to && m.is_promotion())
}
