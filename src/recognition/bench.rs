//! Recognition on simulated games: a scripted person plays moves on the
//! rendered board, the [`BoardWatcher`] watches the frames, and what it
//! committed is compared with the script's ground truth.
//!
//! In memory only (rendering, no files): used by the tests on rendered
//! frames and by `chessbot bench recognition`.

use shakmaty::{Chess, Color, Move, Position};

use super::tracker::{same_squares, TrackEvent};
use super::watcher::{BoardWatcher, WatchOutput, WatcherConfig};
use super::RecognitionError;
use crate::camera::sim::rgb_from_sim;
use crate::sim::opponent::{OpponentStyle, Phase, ScriptTruth, ScriptedGame};
use crate::sim::{Renderer, SceneSpec, SimError};
use crate::vision::image::RgbImage;

/// The camera keeps running after the script's last frame for this long
/// (the last world repeated), so that the watcher can conclude on the
/// final move (the script itself ends 0.5 s after the hand is gone).
pub const TAIL_MS: f64 = 2_000.0;

/// How long after the watcher reports a board it cannot explain the
/// scripted person confirms the position through the interface (reads the
/// prompt, checks the board, taps "this is the position"): an estimate of
/// a few seconds, not measured on people. The script does not wait: the
/// answer is the position at the first settled frame after this delay.
pub const ANSWER_MS: f64 = 4_000.0;

/// The robot's move waits for the watcher to commit every earlier ply, as
/// the service moves the arm only once it has the person's reply; a
/// settled board the watcher cannot decide is asked about after 3 s
/// (`TrackEvent::Unsure`). Past this wait the script makes the robot's
/// move anyway (the service would keep waiting for the person), so that a
/// stalled game still runs to its end and counts its later moves missed.
pub const ROBOT_WAIT_MS: f64 = 10_000.0;

/// One simulated game to watch.
#[derive(Debug, Clone)]
pub struct SimGame {
    pub scene: SceneSpec,
    pub start: Chess,
    pub moves: Vec<Move>,
    pub style: OpponentStyle,
    pub seed: u64,
    /// The side the robot plays: each of its moves waits until the
    /// watcher has committed the plies before it ([`ROBOT_WAIT_MS`]), and
    /// the watcher is told to expect it when the (scripted) move starts,
    /// as the service does when the arm starts moving. `None`: two people.
    pub robot: Option<Color>,
    /// Lost track: the watcher gets no frames from the start of move
    /// `.0` (0-based ply) until move `.1` is done.
    pub blind: Option<(usize, usize)>,
    /// The person answers: a report of a board the watcher cannot explain
    /// (a lost track, a misread it cannot get past; not their own illegal
    /// move, which they take back on the board), or a question about a
    /// board it cannot decide ([`TrackEvent::Unsure`]), is answered
    /// [`ANSWER_MS`] later by confirming the position, as the service lets
    /// a person do. `false`: nobody answers, and a lost track stays lost.
    pub answers: bool,
    /// Watch only the first K plies: the script is drawn for every move
    /// of `moves` (so those K are played frame for frame as in the whole
    /// game: the hands' randomness follows the whole plan), and watching
    /// ends when ply K+1 begins, after [`TAIL_MS`]. Outcomes are counted
    /// for the first K moves. `None`: every move.
    pub play_only: Option<usize>,
}

impl SimGame {
    /// The plies watched ([`SimGame::play_only`]).
    pub fn watched(&self) -> &[Move] {
        &self.moves[..self.play_only.unwrap_or(usize::MAX).min(self.moves.len())]
    }

    /// The position after the first `plies` scripted moves.
    pub fn position_after(&self, plies: usize) -> Chess {
        let mut pos = self.start.clone();
        for &mv in &self.moves[..plies.min(self.moves.len())] {
            pos.play_unchecked(mv);
        }
        pos
    }
}

/// What happened to one move of the script.
#[derive(Debug, Clone, PartialEq)]
pub enum MoveOutcome {
    /// Committed as the right move, `latency_ms` after the hand was gone
    /// from the scene (the script's `move_done`) and `since_release_ms`
    /// after the hand let go of the last piece (it then still has to
    /// leave: 0.35-0.6 s in the script). The hand leaves the board
    /// somewhere between the two.
    Right {
        latency_ms: f64,
        since_release_ms: f64,
    },
    /// Recovered later by a resync (right, but not on its own).
    Resynced,
    /// Asked: the person confirmed the position it was part of (see
    /// [`SimGame::answers`]).
    Asked,
    /// A promotion to another piece than a queen, committed as the queen
    /// the watcher assumes and flagged as unverified
    /// ([`TrackEvent::Move::promotion_unverified`]): the service tells the
    /// person so and asks them to enter the piece, which the bench's
    /// person does at once. Not silent, so not wrong; not right either.
    PieceAsked,
    /// A different move was committed in its place.
    Wrong { committed: Move },
    /// Never committed.
    Missed,
}

/// The result of watching one simulated game.
#[derive(Debug, Clone, Default)]
pub struct SimGameReport {
    /// One outcome per scripted move, in order.
    pub outcomes: Vec<MoveOutcome>,
    /// Every event with the frame index it came at.
    pub events: Vec<(u64, TrackEvent)>,
    pub frames: u64,
    /// Frames vision could not read (board not found, unusable).
    pub unread_frames: u64,
    /// Whether the watcher's final position is the script's.
    pub final_position_right: bool,
    /// Moves committed, resynced or (robot moves) verified, in order.
    pub committed: Vec<Move>,
    /// When the person confirmed the position: (frame, plies played).
    pub answers: Vec<(u64, usize)>,
    /// Robot moves that waited for the watcher ([`ROBOT_WAIT_MS`]): (ply,
    /// how long, ms).
    pub robot_waits: Vec<(usize, f64)>,
}

impl SimGameReport {
    pub fn count(&self, f: impl Fn(&MoveOutcome) -> bool) -> usize {
        self.outcomes.iter().filter(|o| f(o)).count()
    }

    pub fn unexplained(&self) -> usize {
        self.events
            .iter()
            .filter(|(_, e)| matches!(e, TrackEvent::Unexplained { .. }))
            .count()
    }

    /// Committed moves later amended (see [`TrackEvent::Amended`]).
    pub fn amended(&self) -> usize {
        self.events
            .iter()
            .filter(|(_, e)| matches!(e, TrackEvent::Amended { .. }))
            .count()
    }
}

/// How a ply came to be in the watcher's game.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Via {
    Own,
    Resync,
    Asked,
    PieceAsked,
}

/// Errors of a simulated run.
#[derive(Debug, thiserror::Error)]
pub enum SimRunError {
    #[error(transparent)]
    Sim(#[from] SimError),
    #[error(transparent)]
    Recognition(#[from] RecognitionError),
}

/// Renders `game` frame by frame into a watcher built with `cfg` and
/// scores what it committed against the script.
pub fn watch_sim_game(game: &SimGame, cfg: WatcherConfig) -> Result<SimGameReport, SimRunError> {
    watch_sim_game_with(game, cfg, |_, _, _, _| {})
}

/// [`watch_sim_game`], calling `on_frame` with each frame's truth, the
/// watcher's output, the watcher and the frame (progress, diagnostics).
pub fn watch_sim_game_with(
    game: &SimGame,
    cfg: WatcherConfig,
    mut on_frame: impl FnMut(&ScriptTruth, &WatchOutput, &BoardWatcher, &RgbImage),
) -> Result<SimGameReport, SimRunError> {
    let scene = game.scene.build(game.start.board(), game.seed)?;
    let mut script = ScriptedGame::new(
        scene.world,
        game.start.clone(),
        &game.moves,
        game.style.clone(),
        game.seed,
    )?;
    let mut renderer = Renderer::new(scene.camera);
    let mut watcher = BoardWatcher::new(game.start.clone(), cfg);
    let mut report = SimGameReport::default();
    // Time each scripted move was completed (hand gone), by ply.
    let mut done_ms: Vec<f64> = Vec::new();
    // Per committed ply: (move, commit time, how).
    let mut commits: Vec<(Move, f64, Via)> = Vec::new();
    // The person's illegal move is on the board (they take it back).
    let mut illegal_shown = false;
    // When the watcher last reported a board it could not explain, not
    // yet answered.
    let mut asked_ms: Option<f64> = None;
    let mut release_ms: Vec<f64> = Vec::new();
    let mut last_release = 0.0;
    let mut last_ply = 0;
    let mut blind = false;
    let fps = game.style.fps;
    let mut last: Option<(crate::sim::World, ScriptTruth)> = None;
    let mut tail = 0u64;
    let tail_frames = (TAIL_MS * fps / 1000.0).round() as u64;
    // A robot move the script began before the watcher had every earlier
    // ply: held back while the scene stays still (the arm waits for the
    // person's reply), and how long it has waited so far.
    let mut held: Option<(crate::sim::World, ScriptTruth)> = None;
    let mut waited_ms = 0.0;
    // Frames added by waiting: later script frames come this much later.
    let mut shift = 0u64;
    // Whether a script frame starts one of the robot's moves.
    let robot_move_starts = |t: &ScriptTruth| {
        game.robot.is_some_and(|robot| {
            color_of_ply(&game.start, t.ply) == robot
                && t.events.iter().any(|e| e.starts_with("move_started"))
        })
    };
    let watched = game.watched().len();
    // The script reached a ply not watched ([`SimGame::play_only`]).
    let mut ended = false;
    loop {
        let next = held.take().or_else(|| {
            let n = script.next().filter(|_| !ended);
            ended |= n
                .as_ref()
                .is_some_and(|(_, t)| t.ply >= watched && t.moving.is_some());
            n.filter(|_| !ended)
        });
        let (world, truth) = match next {
            Some((w, mut t)) => {
                let robot_starts = robot_move_starts(&t);
                let wait =
                    robot_starts && !blind && commits.len() < t.ply && waited_ms < ROBOT_WAIT_MS;
                match last.as_ref().filter(|_| wait).cloned() {
                    Some((lw, mut lt)) => {
                        held = Some((w, t));
                        lt.frame += 1;
                        lt.time_ms += 1000.0 / fps;
                        lt.events.clear();
                        shift += 1;
                        waited_ms += 1000.0 / fps;
                        last = Some((lw.clone(), lt.clone()));
                        (lw, lt)
                    }
                    _ => {
                        if robot_starts {
                            if waited_ms > 0.0 {
                                report.robot_waits.push((t.ply, waited_ms));
                            }
                            waited_ms = 0.0;
                        }
                        t.frame += shift;
                        t.time_ms += shift as f64 * 1000.0 / fps;
                        last = Some((w.clone(), t.clone()));
                        (w, t)
                    }
                }
            }
            None => {
                let Some((w, mut t)) = last.clone() else {
                    break;
                };
                if tail >= tail_frames {
                    break;
                }
                tail += 1;
                t.frame += tail;
                t.time_ms += tail as f64 * 1000.0 / fps;
                t.events.clear();
                (w, t)
            }
        };
        if let Some((a, b)) = game.blind {
            if truth.ply == a && truth.moving.is_some() {
                blind = true;
            }
            if truth.ply > b {
                blind = false;
            }
        }
        if truth.ply > last_ply {
            done_ms.resize(truth.ply, truth.time_ms);
            release_ms.resize(truth.ply, last_release);
            last_ply = truth.ply;
        }
        if truth.moving.is_some() && matches!(truth.phase, Phase::Hold | Phase::Carry) {
            last_release = truth.time_ms;
        }
        if let Some(&mv) = game.moves.get(truth.ply) {
            // The service moves the arm only once it has the person's
            // reply; the script waits for it up to `ROBOT_WAIT_MS`, so a
            // reply still not committed means the robot's move is watched
            // as a person's.
            if robot_move_starts(&truth) && !blind && watcher.position().is_legal(mv) {
                watcher.expect_robot_move(mv)?;
            }
        }
        for e in &truth.events {
            tracing::debug!(frame = truth.frame, t_ms = truth.time_ms, ply = truth.ply, e = %e, "script event");
            if e.starts_with("illegal_shown") {
                illegal_shown = true;
            } else if e.starts_with("illegal_undone") {
                illegal_shown = false;
            }
        }
        if let Some(t0) = asked_ms {
            if truth.time_ms >= t0 + ANSWER_MS && truth.settled && !illegal_shown {
                asked_ms = None;
                // Plies the watcher has right; the rest the person confirms.
                let kept = commits
                    .iter()
                    .zip(&game.moves)
                    .take_while(|(c, m)| c.0 == **m)
                    .count()
                    .min(truth.ply);
                if kept < truth.ply || commits.len() > kept {
                    watcher.set_position(game.position_after(truth.ply));
                    commits.truncate(kept);
                    commits.extend(
                        game.moves[kept..truth.ply]
                            .iter()
                            .map(|&m| (m, truth.time_ms, Via::Asked)),
                    );
                    report.answers.push((truth.frame, truth.ply));
                }
            }
        }
        if blind {
            continue;
        }
        let frame = renderer.render(&world, &scene.options)?;
        let image = rgb_from_sim(frame.image);
        let out = watcher.push(&image, truth.time_ms.round() as u64)?;
        report.frames += 1;
        on_frame(&truth, &out, &watcher, &image);
        if !out.usable() {
            report.unread_frames += 1;
        }
        if let Some(ev) = out.event {
            match &ev {
                TrackEvent::Move {
                    mv,
                    promotion_unverified,
                    ..
                } => {
                    let ply = commits.len();
                    match game.moves.get(ply) {
                        // The queen assumed for another piece: the person,
                        // told so, enters the piece played.
                        Some(&played) if queen_assumed_for(played, *mv, *promotion_unverified) => {
                            commits.push((played, truth.time_ms, Via::PieceAsked));
                            watcher.set_position(game.position_after(ply + 1));
                        }
                        _ => commits.push((*mv, truth.time_ms, Via::Own)),
                    }
                }
                TrackEvent::Amended { now, .. } => {
                    if let Some(last) = commits.last_mut() {
                        *last = (*now, truth.time_ms, Via::Own);
                    }
                }
                TrackEvent::Resynced { moves, .. } => {
                    commits.extend(moves.iter().map(|m| (*m, truth.time_ms, Via::Resync)))
                }
                TrackEvent::RobotMoveVerified { .. } => {
                    if let Some(&mv) = game.moves.get(commits.len()) {
                        commits.push((mv, truth.time_ms, Via::Own));
                    }
                }
                TrackEvent::Unexplained { .. }
                | TrackEvent::RobotMoveMismatch { .. }
                | TrackEvent::Unsure { .. }
                    if game.answers && !illegal_shown && asked_ms.is_none() =>
                {
                    asked_ms = Some(truth.time_ms);
                }
                _ => {}
            }
            report.events.push((truth.frame, ev));
        }
    }
    report.committed = commits.iter().map(|c| c.0).collect();
    let mut off_track = false;
    for (k, &mv) in game.watched().iter().enumerate() {
        let outcome = match commits.get(k) {
            None => MoveOutcome::Missed,
            Some(&(_, _, Via::Asked)) => {
                off_track = false;
                MoveOutcome::Asked
            }
            Some(&(_, _, Via::PieceAsked)) if !off_track => MoveOutcome::PieceAsked,
            Some(_) if off_track => MoveOutcome::Missed,
            Some(&(c, t, via)) if c == mv => {
                if via == Via::Resync {
                    MoveOutcome::Resynced
                } else {
                    let done = done_ms.get(k).copied().unwrap_or(t);
                    let release = release_ms.get(k).copied().unwrap_or(t);
                    MoveOutcome::Right {
                        latency_ms: t - done,
                        since_release_ms: t - release,
                    }
                }
            }
            Some(&(c, _, _)) => {
                off_track = true;
                MoveOutcome::Wrong { committed: c }
            }
        };
        report.outcomes.push(outcome);
    }
    let pos = game.position_after(watched);
    report.final_position_right =
        watcher.position().board() == pos.board() && watcher.position().turn() == pos.turn();
    Ok(report)
}

/// Whether `committed`, a promotion flagged unverified, is the queen the
/// watcher assumes where `played` promoted to another piece (see
/// [`MoveOutcome::PieceAsked`]).
pub fn queen_assumed_for(played: Move, committed: Move, promotion_unverified: bool) -> bool {
    promotion_unverified && played != committed && same_squares(played, committed)
}

/// Which colour plays ply `k` (0-based) from `start`.
pub fn color_of_ply(start: &Chess, k: usize) -> Color {
    if k.is_multiple_of(2) {
        start.turn()
    } else {
        !start.turn()
    }
}
