//! Recognition on simulated games: a scripted person plays moves on the
//! rendered board, the [`BoardWatcher`] watches the frames, and what it
//! committed is compared with the script's ground truth.
//!
//! In memory only (rendering, no files): used by the tests on rendered
//! frames and by `chessbot bench recognition`.

use shakmaty::{Chess, Move, Position};

use super::tracker::TrackEvent;
use super::watcher::{BoardWatcher, WatcherConfig};
use super::RecognitionError;
use crate::camera::sim::rgb_from_sim;
use crate::sim::opponent::{OpponentStyle, Phase, ScriptedGame};
use crate::sim::{Renderer, SceneSpec, SimError};

/// One simulated game to watch.
#[derive(Debug, Clone)]
pub struct SimGame {
    pub scene: SceneSpec,
    pub start: Chess,
    pub moves: Vec<Move>,
    pub style: OpponentStyle,
    pub seed: u64,
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
}

impl SimGameReport {
    pub fn count(&self, f: impl Fn(&MoveOutcome) -> bool) -> usize {
        self.outcomes.iter().filter(|o| f(o)).count()
    }

    /// Moves committed (or resynced), in order.
    pub fn committed(&self) -> Vec<Move> {
        let mut v = Vec::new();
        for (_, e) in &self.events {
            match e {
                TrackEvent::Move { mv, .. } => v.push(*mv),
                TrackEvent::Resynced { moves, .. } => v.extend(moves.iter().copied()),
                _ => {}
            }
        }
        v
    }

    pub fn unexplained(&self) -> usize {
        self.events
            .iter()
            .filter(|(_, e)| matches!(e, TrackEvent::Unexplained { .. }))
            .count()
    }
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
    let scene = game.scene.build(game.start.board(), game.seed)?;
    let script = ScriptedGame::new(
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
    // Per committed ply: (move, commit time, via resync).
    let mut commits: Vec<(Move, f64, bool)> = Vec::new();
    let mut release_ms: Vec<f64> = Vec::new();
    let mut last_release = 0.0;
    let mut last_ply = 0;
    for (world, truth) in script {
        if truth.ply > last_ply {
            done_ms.resize(truth.ply, truth.time_ms);
            release_ms.resize(truth.ply, last_release);
            last_ply = truth.ply;
        }
        if truth.moving.is_some() && matches!(truth.phase, Phase::Hold | Phase::Carry) {
            last_release = truth.time_ms;
        }
        let frame = renderer.render(&world, &scene.options)?;
        let image = rgb_from_sim(frame.image);
        let out = watcher.push(&image, truth.time_ms.round() as u64)?;
        report.frames += 1;
        if !out.usable() {
            report.unread_frames += 1;
        }
        if let Some(ev) = out.event {
            match &ev {
                TrackEvent::Move { mv, .. } => commits.push((*mv, truth.time_ms, false)),
                TrackEvent::Resynced { moves, .. } => {
                    commits.extend(moves.iter().map(|m| (*m, truth.time_ms, true)))
                }
                _ => {}
            }
            report.events.push((truth.frame, ev));
        }
    }
    let mut pos = game.start.clone();
    let mut off_track = false;
    for (k, &mv) in game.moves.iter().enumerate() {
        let outcome = match commits.get(k) {
            None => MoveOutcome::Missed,
            Some(_) if off_track => MoveOutcome::Missed,
            Some(&(c, t, resynced)) if c == mv => {
                if resynced {
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
        pos.play_unchecked(mv);
    }
    report.final_position_right =
        watcher.position().board() == pos.board() && watcher.position().turn() == pos.turn();
    Ok(report)
}
