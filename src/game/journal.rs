//! The crash-safe game journal: the robot must never lose a game.
//!
//! Every event of a game (its start, each move, a take-back, a declared
//! result) is one line of JSON followed by a tab and the CRC-32 of the JSON,
//! appended and flushed to the disk (fsync) before anything acts on it.
//!
//! ```text
//! {"t":"start","fen":"rnbqkbnr/...","white":"Human","black":"chessbot","started_ms":1764547200000}\t1c291ca3
//! {"t":"move","uci":"e2e4","at_ms":1764547205000,"used_ms":5000}\t8f1a6b2e
//! ```
//!
//! Recovery reads the lines back. Only the last record can be damaged by a
//! crash (the ones before it were fsync'd), so a last line that is cut short
//! or fails its checksum is a torn write: it is dropped and the file
//! truncated to the last good record. A damaged record with good records
//! after it, or a move that is illegal on replay, means the file is not a
//! journal we wrote: it is reported with its line and moved aside, never
//! overwritten.
//!
//! [`Journal`] holds the logic over any [`Storage`]; [`FileStorage`] is the
//! thin adapter that owns the file.

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use shakmaty::KnownOutcome;

use super::rules::{Game, GameError, GameResult, Termination};

/// One event in a game's life.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "t", rename_all = "snake_case", deny_unknown_fields)]
pub enum JournalRecord {
    /// Always the first record.
    Start {
        fen: String,
        #[serde(default)]
        white: String,
        #[serde(default)]
        black: String,
        #[serde(default)]
        started_ms: i64,
        /// How the program that started the game set it up (mode, the
        /// person's colour, level, clocks), opaque to the journal: the
        /// service reads it back to resume the same game.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        setup: Option<serde_json::Value>,
    },
    Move {
        uci: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        at_ms: Option<i64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        used_ms: Option<u64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        clock_ms: Option<u64>,
    },
    TakeBack,
    /// A result decided by a player (resignation, agreement, claim, flag).
    End {
        result: String,
        termination: Termination,
    },
}

/// What went wrong with a journal.
#[derive(Debug, thiserror::Error)]
pub enum JournalError {
    #[error("journal I/O error on {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("journal {path} already exists; resume it or move it away first")]
    Exists { path: PathBuf },
    #[error("journal is empty (no start record)")]
    Empty,
    #[error("journal line {line} is damaged ({why}) and is followed by good records; the file is not a journal this program wrote intact")]
    Corrupt { line: usize, why: String },
    #[error("journal line {line} does not replay: {why}")]
    Illegal { line: usize, why: String },
    #[error("{error}; the journal was kept aside as {kept}")]
    KeptAside {
        error: Box<JournalError>,
        kept: PathBuf,
    },
    #[error("the journal directory {dir} is in use by another chessbot process{holder}; stop that one, or give this one another game.journal_dir")]
    Busy {
        dir: PathBuf,
        /// ` (pid N)` when the lock file names its holder, else empty.
        holder: String,
    },
}

/// Encodes one record as a journal line (with its newline).
pub fn encode(record: &JournalRecord) -> Vec<u8> {
    let json = serde_json::to_string(record).expect("journal records always serialize");
    let crc = crc32fast::hash(json.as_bytes());
    format!("{json}\t{crc:08x}\n").into_bytes()
}

/// The records found in journal bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decoded {
    /// Good records with their 1-based line numbers.
    pub records: Vec<(usize, JournalRecord)>,
    /// Bytes up to the end of the last good record.
    pub valid_len: usize,
    /// The torn last line that was dropped, if any (its line number).
    pub torn_line: Option<usize>,
}

fn decode_line(line: &[u8]) -> Result<JournalRecord, String> {
    let text = std::str::from_utf8(line).map_err(|_| "not UTF-8".to_owned())?;
    let (json, crc) = text
        .rsplit_once('\t')
        .ok_or_else(|| "no checksum".to_owned())?;
    let crc = u32::from_str_radix(crc, 16).map_err(|_| "unreadable checksum".to_owned())?;
    if crc32fast::hash(json.as_bytes()) != crc {
        return Err("checksum mismatch".to_owned());
    }
    serde_json::from_str(json).map_err(|e| format!("bad record: {e}"))
}

/// Decodes journal bytes, dropping a torn last record.
pub fn decode(bytes: &[u8]) -> Result<Decoded, JournalError> {
    let mut records = Vec::new();
    let mut offset = 0;
    let mut line_no = 0;
    let mut valid_len = 0;
    while offset < bytes.len() {
        line_no += 1;
        let rest = &bytes[offset..];
        let (line, next) = match rest.iter().position(|&b| b == b'\n') {
            Some(n) => (&rest[..n], offset + n + 1),
            None => (rest, bytes.len()),
        };
        let complete = next <= bytes.len() && bytes.get(next - 1) == Some(&b'\n');
        let parsed = if complete {
            decode_line(line)
        } else {
            Err("cut short".to_owned())
        };
        match parsed {
            Ok(r) => {
                records.push((line_no, r));
                valid_len = next;
            }
            Err(why) => {
                // Only the last record may be torn; anything after it means
                // damage that a crash cannot explain.
                let tail = &bytes[next..];
                if tail.iter().all(|&b| b == 0 || b == b'\n') {
                    return Ok(Decoded {
                        records,
                        valid_len,
                        torn_line: Some(line_no),
                    });
                }
                return Err(JournalError::Corrupt { line: line_no, why });
            }
        }
        offset = next;
    }
    Ok(Decoded {
        records,
        valid_len,
        torn_line: None,
    })
}

/// The game a journal describes, with its players.
#[derive(Debug, Clone)]
pub struct Replayed {
    pub game: Game,
    pub white: String,
    pub black: String,
    pub started_ms: i64,
    pub setup: Option<serde_json::Value>,
}

/// Rebuilds the game from decoded records.
pub fn replay_records(records: &[(usize, JournalRecord)]) -> Result<Replayed, JournalError> {
    let mut iter = records.iter();
    let (line, first) = iter.next().ok_or(JournalError::Empty)?;
    let JournalRecord::Start {
        fen,
        white,
        black,
        started_ms,
        setup,
    } = first
    else {
        return Err(JournalError::Illegal {
            line: *line,
            why: "the first record is not the start of a game".into(),
        });
    };
    let illegal = |line: usize, e: GameError| JournalError::Illegal {
        line,
        why: e.to_string(),
    };
    let mut game = Game::from_fen(fen).map_err(|e| illegal(*line, e))?;
    for (line, record) in iter {
        match record {
            JournalRecord::Start { .. } => {
                return Err(JournalError::Illegal {
                    line: *line,
                    why: "a second start record".into(),
                })
            }
            JournalRecord::Move {
                uci,
                at_ms,
                used_ms,
                clock_ms,
            } => {
                let mv = uci
                    .parse::<shakmaty::uci::UciMove>()
                    .ok()
                    .and_then(|u| u.to_move(game.position()).ok())
                    .ok_or_else(|| JournalError::Illegal {
                        line: *line,
                        why: format!("move {uci} is illegal in {}", game.fen()),
                    })?;
                game.play_timed(mv, *at_ms, *used_ms, *clock_ms)
                    .map_err(|e| illegal(*line, e))?;
            }
            JournalRecord::TakeBack => {
                game.take_back().map_err(|e| illegal(*line, e))?;
            }
            JournalRecord::End {
                result,
                termination,
            } => {
                let outcome = match result.as_str() {
                    "1-0" => KnownOutcome::Decisive {
                        winner: shakmaty::Color::White,
                    },
                    "0-1" => KnownOutcome::Decisive {
                        winner: shakmaty::Color::Black,
                    },
                    "1/2-1/2" => KnownOutcome::Draw,
                    other => {
                        return Err(JournalError::Illegal {
                            line: *line,
                            why: format!("unknown result {other:?}"),
                        })
                    }
                };
                game.set_declared(GameResult {
                    outcome,
                    termination: *termination,
                });
            }
        }
    }
    Ok(Replayed {
        game,
        white: white.clone(),
        black: black.clone(),
        started_ms: *started_ms,
        setup: setup.clone(),
    })
}

/// Where journal bytes live: appended, then made durable.
pub trait Storage {
    fn append(&mut self, bytes: &[u8]) -> io::Result<()>;
    /// Returns once everything appended is on stable storage.
    fn sync(&mut self) -> io::Result<()>;
}

/// A journal over some storage: each append is durable before it returns.
#[derive(Debug)]
pub struct Journal<S: Storage> {
    storage: S,
    records: usize,
}

impl<S: Storage> Journal<S> {
    /// Wraps storage that already holds `records` good records.
    pub fn new(storage: S, records: usize) -> Journal<S> {
        Journal { storage, records }
    }

    /// Appends a record and returns once it is durable.
    pub fn append(&mut self, record: &JournalRecord) -> io::Result<()> {
        self.storage.append(&encode(record))?;
        self.storage.sync()?;
        self.records += 1;
        Ok(())
    }

    /// Records written so far (including recovered ones).
    pub fn len(&self) -> usize {
        self.records
    }

    pub fn is_empty(&self) -> bool {
        self.records == 0
    }

    /// Gives the storage back (to wrap it differently).
    pub fn into_storage(self) -> S {
        self.storage
    }
}

/// The journal file on disk.
#[derive(Debug)]
pub struct FileStorage {
    file: File,
}

impl Storage for FileStorage {
    fn append(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.file.write_all(bytes)
    }

    fn sync(&mut self) -> io::Result<()> {
        self.file.sync_data()
    }
}

impl FileStorage {
    /// Writes bytes without syncing (for callers that split a record).
    pub fn write_raw(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.file.write_all(bytes)
    }
}

fn io_err(path: &Path) -> impl FnOnce(io::Error) -> JournalError + '_ {
    move |source| JournalError::Io {
        path: path.to_owned(),
        source,
    }
}

fn sync_parent_dir(path: &Path) -> io::Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        File::open(dir)?.sync_all()?;
    }
    Ok(())
}

/// The lock file that keeps a journal directory to one process.
pub const LOCK_FILE: &str = ".lock";

/// A journal directory held by this process for as long as the value
/// lives. Two processes writing one journal would interleave their games'
/// records (and one would retire the file under the other), so the second
/// is refused. The lock is the operating system's (`flock`), so a process
/// that dies, however it dies, lets go of it; the file itself stays and
/// names the last holder's pid for the refusal message.
#[derive(Debug)]
pub struct DirLock {
    _file: File,
}

/// Takes the journal directory `dir` (made if missing) for this process.
pub fn lock_dir(dir: &Path) -> Result<DirLock, JournalError> {
    let path = dir.join(LOCK_FILE);
    std::fs::create_dir_all(dir).map_err(io_err(&path))?;
    let mut file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&path)
        .map_err(io_err(&path))?;
    match file.try_lock() {
        Ok(()) => {}
        Err(std::fs::TryLockError::WouldBlock) => {
            let mut text = String::new();
            let holder = file
                .read_to_string(&mut text)
                .ok()
                .and_then(|_| text.trim().parse::<u32>().ok())
                .map_or_else(String::new, |pid| format!(" (pid {pid})"));
            return Err(JournalError::Busy {
                dir: dir.to_owned(),
                holder,
            });
        }
        Err(std::fs::TryLockError::Error(e)) => return Err(io_err(&path)(e)),
    }
    file.set_len(0).map_err(io_err(&path))?;
    file.seek(SeekFrom::Start(0)).map_err(io_err(&path))?;
    writeln!(file, "{}", std::process::id()).map_err(io_err(&path))?;
    Ok(DirLock { _file: file })
}

/// Starts a new journal file; refuses to overwrite an existing one.
pub fn create(path: &Path, start: &JournalRecord) -> Result<Journal<FileStorage>, JournalError> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(io_err(path))?;
    }
    let file = OpenOptions::new()
        .create_new(true)
        .append(true)
        .open(path)
        .map_err(|e| {
            if e.kind() == io::ErrorKind::AlreadyExists {
                JournalError::Exists {
                    path: path.to_owned(),
                }
            } else {
                io_err(path)(e)
            }
        })?;
    let mut journal = Journal::new(FileStorage { file }, 0);
    journal.append(start).map_err(io_err(path))?;
    sync_parent_dir(path).map_err(io_err(path))?;
    Ok(journal)
}

/// A journal opened after a restart, with the game it holds.
#[derive(Debug)]
pub struct Resumed {
    pub journal: Journal<FileStorage>,
    pub replayed: Replayed,
    /// Line number of a torn last record that was dropped.
    pub dropped_torn_line: Option<usize>,
}

/// Opens an existing journal, recovering the game. A torn last record is
/// dropped (and the file truncated before it); a journal that is damaged
/// elsewhere or does not replay is renamed aside and reported.
pub fn resume(path: &Path) -> Result<Resumed, JournalError> {
    let mut file = OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
        .map_err(io_err(path))?;
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes).map_err(io_err(path))?;
    let outcome = decode(&bytes).and_then(|d| replay_records(&d.records).map(|r| (d, r)));
    let (decoded, replayed) = match outcome {
        Ok(x) => x,
        Err(error) => {
            drop(file);
            let kept = keep_aside(path).map_err(io_err(path))?;
            return Err(JournalError::KeptAside {
                error: Box::new(error),
                kept,
            });
        }
    };
    if decoded.valid_len < bytes.len() {
        file.set_len(decoded.valid_len as u64)
            .map_err(io_err(path))?;
        file.sync_all().map_err(io_err(path))?;
    }
    file.seek(SeekFrom::End(0)).map_err(io_err(path))?;
    Ok(Resumed {
        journal: Journal::new(FileStorage { file }, decoded.records.len()),
        replayed,
        dropped_torn_line: decoded.torn_line,
    })
}

/// Renames a bad journal to `NAME.corrupt-N` (first free N) and returns it.
fn keep_aside(path: &Path) -> io::Result<PathBuf> {
    for n in 1.. {
        let mut name = path.as_os_str().to_owned();
        name.push(format!(".corrupt-{n}"));
        let target = PathBuf::from(name);
        if !target.exists() {
            std::fs::rename(path, &target)?;
            sync_parent_dir(path)?;
            return Ok(target);
        }
    }
    unreachable!("some suffix is always free")
}

/// Writes a finished game's PGN into the games directory as
/// `YYYYMMDD-HHMMSS-N.pgn` and returns its path. Written to a temporary
/// name, synced, then renamed, so a crash never leaves half a file.
pub fn archive_pgn(games_dir: &Path, started_ms: i64, pgn: &str) -> io::Result<PathBuf> {
    std::fs::create_dir_all(games_dir)?;
    let stamp = chrono::DateTime::from_timestamp_millis(started_ms)
        .unwrap_or_default()
        .format("%Y%m%d-%H%M%S");
    for n in 1.. {
        let path = games_dir.join(format!("{stamp}-{n}.pgn"));
        if path.exists() {
            continue;
        }
        let tmp = games_dir.join(format!(".{stamp}-{n}.pgn.tmp"));
        {
            let mut f = File::create(&tmp)?;
            f.write_all(pgn.as_bytes())?;
            f.sync_all()?;
        }
        std::fs::rename(&tmp, &path)?;
        File::open(games_dir)?.sync_all()?;
        return Ok(path);
    }
    unreachable!("some file name is always free")
}
