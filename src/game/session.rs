//! A game being played or recorded, kept safe on disk.
//!
//! Every change goes to the journal (and is fsync'd) before the game in
//! memory changes, so whatever a caller does next (announce, move the arm)
//! happens only to moves that would survive a crash. A finished game is
//! written as a PGN file into the games directory and its journal retired.

use std::path::{Path, PathBuf};

use shakmaty::{Chess, Color, Move};

use super::journal::{self, FileStorage, Journal, JournalError, JournalRecord};
use super::pgn::{write_pgn, PgnTags};
use super::rules::{fen_of, Claim, Game, GameError, GameResult, MoveRecord};
use crate::config::GameConfig;

/// The journal of the game in progress, inside the journal directory.
pub const CURRENT_JOURNAL: &str = "current.journal";

/// Why a session action failed.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    #[error(transparent)]
    Game(#[from] GameError),
    #[error(transparent)]
    Journal(#[from] JournalError),
    #[error("cannot write the journal: {0}")]
    Io(#[from] std::io::Error),
}

/// Players and tags of a session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Players {
    pub white: String,
    pub black: String,
}

/// A journaled game.
#[derive(Debug)]
pub struct GameSession {
    game: Game,
    journal: Journal<FileStorage>,
    journal_path: PathBuf,
    games_dir: PathBuf,
    players: Players,
    started_ms: i64,
    setup: Option<serde_json::Value>,
    event: String,
    site: String,
}

impl GameSession {
    /// Starts a new game; refuses when a game is still journaled (resume
    /// or finish it first). `setup` is kept in the journal as it is, for
    /// the caller to read back on resume.
    pub fn start(
        cfg: &GameConfig,
        players: Players,
        start: Chess,
        now_ms: i64,
        setup: Option<serde_json::Value>,
    ) -> Result<GameSession, SessionError> {
        let journal_path = cfg.journal_dir.join(CURRENT_JOURNAL);
        let record = JournalRecord::Start {
            fen: fen_of(&start),
            white: players.white.clone(),
            black: players.black.clone(),
            started_ms: now_ms,
            setup: setup.clone(),
        };
        let journal = journal::create(&journal_path, &record)?;
        Ok(GameSession {
            game: Game::new(start),
            journal,
            journal_path,
            games_dir: cfg.games_dir.clone(),
            players,
            started_ms: now_ms,
            setup,
            event: cfg.event.clone(),
            site: cfg.site.clone(),
        })
    }

    /// Resumes the journaled game, if there is one.
    pub fn resume(cfg: &GameConfig) -> Result<Option<GameSession>, SessionError> {
        let journal_path = cfg.journal_dir.join(CURRENT_JOURNAL);
        if !journal_path.exists() {
            return Ok(None);
        }
        let resumed = journal::resume(&journal_path)?;
        if let Some(line) = resumed.dropped_torn_line {
            tracing::warn!(line, "dropped a torn last journal record (crash mid-write)");
        }
        let r = resumed.replayed;
        Ok(Some(GameSession {
            game: r.game,
            journal: resumed.journal,
            journal_path,
            games_dir: cfg.games_dir.clone(),
            players: Players {
                white: r.white,
                black: r.black,
            },
            started_ms: r.started_ms,
            setup: r.setup,
            event: cfg.event.clone(),
            site: cfg.site.clone(),
        }))
    }

    pub fn game(&self) -> &Game {
        &self.game
    }

    pub fn players(&self) -> &Players {
        &self.players
    }

    /// The set-up kept with the game's start record.
    pub fn setup(&self) -> Option<&serde_json::Value> {
        self.setup.as_ref()
    }

    pub fn journal_path(&self) -> &Path {
        &self.journal_path
    }

    /// Plays a move: checked, journaled (durable), then applied.
    pub fn play(
        &mut self,
        mv: Move,
        at_ms: Option<i64>,
        used_ms: Option<u64>,
        clock_ms: Option<u64>,
    ) -> Result<&MoveRecord, SessionError> {
        // Check on a copy first: nothing illegal ever reaches the journal.
        let mut trial = self.game.clone();
        trial.play_timed(mv, at_ms, used_ms, clock_ms)?;
        self.journal.append(&JournalRecord::Move {
            uci: super::notation::uci_of(mv),
            at_ms,
            used_ms,
            clock_ms,
        })?;
        self.game = trial;
        Ok(self.game.moves().last().expect("a move was just played"))
    }

    /// Takes back the last move.
    pub fn take_back(&mut self) -> Result<MoveRecord, SessionError> {
        let mut trial = self.game.clone();
        let undone = trial.take_back()?;
        self.journal.append(&JournalRecord::TakeBack)?;
        self.game = trial;
        Ok(undone)
    }

    pub fn resign(&mut self, loser: Color) -> Result<GameResult, SessionError> {
        self.declare(|g| g.resign(loser))
    }

    pub fn agree_draw(&mut self) -> Result<GameResult, SessionError> {
        self.declare(Game::agree_draw)
    }

    pub fn claim_draw(&mut self, claim: Claim) -> Result<GameResult, SessionError> {
        self.declare(|g| g.claim_draw(claim))
    }

    pub fn flag_fell(&mut self, flagged: Color) -> Result<GameResult, SessionError> {
        self.declare(|g| g.flag_fell(flagged))
    }

    fn declare(
        &mut self,
        f: impl FnOnce(&mut Game) -> Result<GameResult, GameError>,
    ) -> Result<GameResult, SessionError> {
        let mut trial = self.game.clone();
        let result = f(&mut trial)?;
        self.journal.append(&JournalRecord::End {
            result: result.as_str().to_owned(),
            termination: result.termination,
        })?;
        self.game = trial;
        Ok(result)
    }

    /// The PGN of the game so far.
    pub fn pgn(&self) -> String {
        let date = chrono::DateTime::from_timestamp_millis(self.started_ms)
            .map(|d| d.format("%Y.%m.%d").to_string())
            .unwrap_or_else(|| "????.??.??".to_owned());
        write_pgn(
            &self.game,
            &PgnTags {
                event: self.event.clone(),
                site: self.site.clone(),
                date,
                white: self.players.white.clone(),
                black: self.players.black.clone(),
                ..PgnTags::default()
            },
        )
    }

    /// Writes the finished (or abandoned) game as a PGN file and retires
    /// the journal. Returns the PGN's path.
    pub fn finish(self) -> Result<PathBuf, SessionError> {
        let path = journal::archive_pgn(&self.games_dir, self.started_ms, &self.pgn())?;
        drop(self.journal);
        std::fs::remove_file(&self.journal_path)?;
        Ok(path)
    }
}
