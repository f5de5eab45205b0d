//! `chessbot uci`: the built-in engine speaking the UCI protocol.
//!
//! [`UciEngine`] maps input lines to output lines sent on a channel; it never
//! touches stdin or stdout (the `chessbot uci` adapter does). Searches run on
//! a worker thread so that `stop`, `isready` and `quit` are answered while
//! the engine thinks. Malformed input is answered with `info string ...` and
//! otherwise ignored; an illegal move in `position` leaves the position as
//! it was.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::Sender;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use shakmaty::fen::Fen;
use shakmaty::uci::UciMove;
use shakmaty::{CastlingMode, Chess, Move, Position};

use super::search::{key_of, Limits, MonotonicClock, SearchInfo, Searcher};
use super::strength::{self, level_for_elo, search_at_level, MAX_LEVEL};
use super::{EngineConfig, MAX_HASH_MB};

/// Engine name sent in `id name`.
pub const ENGINE_NAME: &str = concat!("chessbot ", env!("CARGO_PKG_VERSION"));

/// What the caller should do after a line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flow {
    Continue,
    Quit,
}

/// The position set by `position`: the start, the moves and the result.
#[derive(Debug, Clone)]
struct GamePosition {
    current: Chess,
    /// Keys of the positions before `current`, oldest first.
    history: Vec<u64>,
}

impl GamePosition {
    fn start() -> GamePosition {
        GamePosition {
            current: Chess::default(),
            history: Vec::new(),
        }
    }
}

/// The settable options.
#[derive(Debug, Clone, PartialEq)]
struct Options {
    hash_mb: usize,
    move_overhead_ms: u64,
    limit_strength: bool,
    elo: u32,
    skill: u8,
}

impl Options {
    fn level(&self) -> u8 {
        if self.limit_strength {
            level_for_elo(self.elo)
        } else {
            self.skill
        }
    }
}

/// The UCI protocol state machine.
pub struct UciEngine {
    out: Sender<String>,
    options: Options,
    game: GamePosition,
    searcher: Option<Searcher>,
    stop: Arc<AtomicBool>,
    worker: Option<JoinHandle<Searcher>>,
    games_started: u64,
    searches: u64,
}

impl UciEngine {
    /// An engine that writes its output lines to `out`.
    pub fn new(config: &EngineConfig, out: Sender<String>) -> UciEngine {
        let stop = Arc::new(AtomicBool::new(false));
        let mut searcher = Searcher::new(
            config.hash_mb.clamp(1, MAX_HASH_MB),
            stop.clone(),
            Box::new(MonotonicClock::default()),
        );
        searcher.set_move_overhead(Duration::from_millis(config.move_overhead_ms));
        let skill = config.level.min(MAX_LEVEL);
        UciEngine {
            out,
            options: Options {
                hash_mb: config.hash_mb.clamp(1, MAX_HASH_MB),
                move_overhead_ms: config.move_overhead_ms,
                limit_strength: false,
                elo: strength::LEVEL_ELO[skill as usize],
                skill,
            },
            game: GamePosition::start(),
            searcher: Some(searcher),
            stop,
            worker: None,
            games_started: 0,
            searches: 0,
        }
    }

    fn send(&self, line: impl Into<String>) {
        // The receiver is gone only when the adapter is shutting down.
        let _ = self.out.send(line.into());
    }

    fn info_string(&self, text: impl AsRef<str>) {
        self.send(format!("info string {}", text.as_ref()));
    }

    /// Handles one input line.
    pub fn handle_line(&mut self, line: &str) -> Flow {
        let tokens: Vec<&str> = line.split_whitespace().collect();
        let Some((&command, args)) = tokens.split_first() else {
            return Flow::Continue;
        };
        match command {
            "uci" => self.cmd_uci(),
            "isready" => self.send("readyok"),
            "debug" | "register" => {}
            "setoption" => {
                self.finish_search();
                self.cmd_setoption(args)
            }
            "ucinewgame" => {
                self.finish_search();
                if let Some(s) = self.searcher.as_mut() {
                    s.clear();
                }
                self.games_started += 1;
                self.game = GamePosition::start();
            }
            "position" => {
                self.finish_search();
                self.cmd_position(args)
            }
            "go" => self.cmd_go(args),
            "stop" => self.finish_search(),
            "ponderhit" => self.info_string("pondering is not supported; ponderhit ignored"),
            "quit" => {
                self.finish_search();
                return Flow::Quit;
            }
            other => self.info_string(format!("unknown command '{other}' ignored")),
        }
        Flow::Continue
    }

    fn cmd_uci(&self) {
        self.send(format!("id name {ENGINE_NAME}"));
        self.send("id author the chessbot developers");
        self.send(format!(
            "option name Hash type spin default {} min 1 max {MAX_HASH_MB}",
            self.options.hash_mb
        ));
        self.send("option name Threads type spin default 1 min 1 max 1");
        self.send(format!(
            "option name Move Overhead type spin default {} min 0 max 5000",
            self.options.move_overhead_ms
        ));
        self.send("option name UCI_LimitStrength type check default false");
        self.send(format!(
            "option name UCI_Elo type spin default {} min {} max {}",
            self.options.elo,
            strength::MIN_ELO,
            strength::MAX_ELO
        ));
        self.send(format!(
            "option name Skill Level type spin default {} min 0 max {MAX_LEVEL}",
            self.options.skill
        ));
        self.send("option name Clear Hash type button");
        self.send("uciok");
    }

    fn cmd_setoption(&mut self, args: &[&str]) {
        // setoption name <id...> [value <x...>]
        if args.first() != Some(&"name") {
            self.info_string("setoption needs 'name <id> [value <x>]'; ignored");
            return;
        }
        let value_at = args.iter().position(|&t| t == "value");
        let name = args[1..value_at.unwrap_or(args.len())].join(" ");
        let value = value_at.map(|i| args[i + 1..].join(" "));
        let spin = |this: &Self, min: i64, max: i64| -> Option<i64> {
            let Some(v) = value.as_deref() else {
                this.info_string(format!("option {name} needs a value"));
                return None;
            };
            match v.parse::<i64>() {
                Ok(n) if n < min || n > max => {
                    let c = n.clamp(min, max);
                    this.info_string(format!(
                        "option {name} value {n} out of {min}..{max}, using {c}"
                    ));
                    Some(c)
                }
                Ok(n) => Some(n),
                Err(_) => {
                    this.info_string(format!(
                        "option {name} value '{v}' is not a number; ignored"
                    ));
                    None
                }
            }
        };
        match name.to_ascii_lowercase().as_str() {
            "hash" => {
                if let Some(mb) = spin(self, 1, MAX_HASH_MB as i64) {
                    self.options.hash_mb = mb as usize;
                    if let Some(s) = self.searcher.as_mut() {
                        s.set_hash_mb(mb as usize);
                    }
                }
            }
            "threads" => {
                if let Some(n) = spin(self, 1, 1) {
                    let _ = n;
                }
            }
            "move overhead" => {
                if let Some(ms) = spin(self, 0, 5000) {
                    self.options.move_overhead_ms = ms as u64;
                    if let Some(s) = self.searcher.as_mut() {
                        s.set_move_overhead(Duration::from_millis(ms as u64));
                    }
                }
            }
            "uci_limitstrength" => match value.as_deref() {
                Some("true") => self.options.limit_strength = true,
                Some("false") => self.options.limit_strength = false,
                _ => self.info_string("option UCI_LimitStrength needs value true or false"),
            },
            "uci_elo" => {
                if let Some(e) = spin(self, strength::MIN_ELO as i64, strength::MAX_ELO as i64) {
                    self.options.elo = e as u32;
                }
            }
            "skill level" => {
                if let Some(l) = spin(self, 0, MAX_LEVEL as i64) {
                    self.options.skill = l as u8;
                }
            }
            "clear hash" => {
                if let Some(s) = self.searcher.as_mut() {
                    s.clear();
                }
            }
            _ => self.info_string(format!("unknown option '{name}' ignored")),
        }
    }

    fn cmd_position(&mut self, args: &[&str]) {
        match parse_position(args) {
            Ok(game) => self.game = game,
            Err(why) => self.info_string(format!("{why}; position unchanged")),
        }
    }

    fn cmd_go(&mut self, args: &[&str]) {
        if self.worker.is_some() && !self.worker_done() {
            self.info_string("already searching; go ignored");
            return;
        }
        self.join_worker();
        let (limits, problems) = parse_go(args, &self.game.current);
        for p in problems {
            self.info_string(p);
        }
        let Some(mut searcher) = self.searcher.take() else {
            self.info_string("internal error: no searcher; go ignored");
            return;
        };
        self.stop.store(false, Ordering::Relaxed);
        let out = self.out.clone();
        let game = self.game.clone();
        let level = self.options.level();
        self.searches += 1;
        let seed = self.games_started.wrapping_mul(1_000_003) ^ self.searches;
        let handle = std::thread::Builder::new()
            .name("search".into())
            .spawn(move || {
                let mut rng = ChaCha8Rng::seed_from_u64(seed);
                let mut on_info = |info: &SearchInfo| {
                    let _ = out.send(info_line(info));
                };
                let result = search_at_level(
                    &mut searcher,
                    &game.current,
                    &game.history,
                    &limits,
                    level,
                    &mut rng,
                    &mut on_info,
                );
                let line = match (result.best_move, result.ponder) {
                    (Some(m), Some(p)) => format!("bestmove {} ponder {}", uci(m), uci(p)),
                    (Some(m), None) => format!("bestmove {}", uci(m)),
                    (None, _) => "bestmove (none)".to_owned(),
                };
                let _ = out.send(line);
                searcher
            });
        match handle {
            Ok(h) => self.worker = Some(h),
            Err(e) => {
                self.info_string(format!("cannot start the search thread: {e}"));
                self.send("bestmove (none)");
            }
        }
    }

    fn worker_done(&self) -> bool {
        self.worker.as_ref().is_none_or(|h| h.is_finished())
    }

    fn join_worker(&mut self) {
        if let Some(h) = self.worker.take() {
            match h.join() {
                Ok(s) => self.searcher = Some(s),
                Err(_) => {
                    // A panic in the search is a bug; keep serving with a fresh searcher.
                    self.info_string("search thread failed; engine state reset");
                    self.searcher = Some(Searcher::new(
                        self.options.hash_mb,
                        self.stop.clone(),
                        Box::new(MonotonicClock::default()),
                    ));
                }
            }
        }
    }

    /// Stops a running search (its `bestmove` is still sent) and waits for it.
    pub fn finish_search(&mut self) {
        if self.worker.is_some() {
            self.stop.store(true, Ordering::Relaxed);
            self.join_worker();
            self.stop.store(false, Ordering::Relaxed);
        }
    }
}

impl Drop for UciEngine {
    fn drop(&mut self) {
        self.finish_search();
    }
}

/// The adapter: reads UCI lines from `input`, writes answers to `output`
/// (flushed line by line) until `quit` or end of input.
pub fn serve<R, W>(config: &EngineConfig, input: R, mut output: W) -> std::io::Result<()>
where
    R: std::io::BufRead,
    W: std::io::Write + Send + 'static,
{
    let (tx, rx) = std::sync::mpsc::channel::<String>();
    let printer = std::thread::spawn(move || -> std::io::Result<()> {
        for line in rx {
            writeln!(output, "{line}")?;
            output.flush()?;
        }
        Ok(())
    });
    let mut engine = UciEngine::new(config, tx);
    for line in input.lines() {
        let line = match line {
            Ok(l) => l,
            Err(e) if e.kind() == std::io::ErrorKind::InvalidData => {
                engine.info_string("input line is not UTF-8; ignored");
                continue;
            }
            Err(e) => return Err(e),
        };
        if engine.handle_line(&line) == Flow::Quit {
            break;
        }
    }
    engine.finish_search();
    drop(engine);
    printer
        .join()
        .unwrap_or_else(|_| Err(std::io::Error::other("output thread failed")))
}

fn uci(m: Move) -> String {
    m.to_uci(CastlingMode::Standard).to_string()
}

/// `info depth .. seldepth .. score .. nodes .. nps .. time .. pv ..`.
pub fn info_line(info: &SearchInfo) -> String {
    format!(
        "info depth {} seldepth {} score {} nodes {} nps {} time {} pv {}",
        info.depth,
        info.seldepth,
        info.uci_score(),
        info.nodes,
        info.nps(),
        info.time.as_millis(),
        info.uci_pv()
    )
}

/// Parses `startpos|fen <fen> [moves ...]` into a position with history.
fn parse_position(args: &[&str]) -> Result<GamePosition, String> {
    let moves_at = args.iter().position(|&t| t == "moves");
    let setup = &args[..moves_at.unwrap_or(args.len())];
    let start = match setup.split_first() {
        Some((&"startpos", [])) => Chess::default(),
        Some((&"fen", fields)) if !fields.is_empty() => {
            let text = fields.join(" ");
            let fen: Fen = text.parse().map_err(|e| format!("bad FEN '{text}': {e}"))?;
            fen.into_position(CastlingMode::Standard)
                .map_err(|e| format!("impossible position '{text}': {e}"))?
        }
        _ => {
            return Err(
                "position needs 'startpos' or 'fen <fen>', then optional 'moves ...'".into(),
            )
        }
    };
    let mut game = GamePosition {
        current: start,
        history: Vec::new(),
    };
    if let Some(i) = moves_at {
        for (n, text) in args[i + 1..].iter().enumerate() {
            let m = text
                .parse::<UciMove>()
                .ok()
                .and_then(|u| u.to_move(&game.current).ok())
                .ok_or_else(|| format!("illegal move '{text}' (move {} of the list)", n + 1))?;
            game.history.push(key_of(&game.current));
            game.current.play_unchecked(m);
        }
    }
    Ok(game)
}

/// Parses the `go` arguments; problems are returned as messages and the
/// offending parameter is left out.
fn parse_go(args: &[&str], pos: &Chess) -> (Limits, Vec<String>) {
    let mut limits = Limits::default();
    let mut problems = Vec::new();
    let mut i = 0;
    let ms = |v: i64| Duration::from_millis(v.max(0) as u64);
    while i < args.len() {
        let key = args[i];
        let number = |i: usize, problems: &mut Vec<String>| -> Option<i64> {
            match args.get(i + 1).map(|v| v.parse::<i64>()) {
                Some(Ok(n)) => Some(n),
                Some(Err(_)) => {
                    problems.push(format!(
                        "go {key}: '{}' is not a number; ignored",
                        args[i + 1]
                    ));
                    None
                }
                None => {
                    problems.push(format!("go {key} needs a value; ignored"));
                    None
                }
            }
        };
        match key {
            "infinite" => limits.infinite = true,
            "ponder" => problems.push("pondering is not supported; searching normally".into()),
            "wtime" | "btime" | "winc" | "binc" | "movetime" | "movestogo" | "depth" | "nodes"
            | "mate" => {
                let n = number(i, &mut problems);
                i += 1;
                if let Some(n) = n {
                    match key {
                        "wtime" => limits.wtime = Some(ms(n)),
                        "btime" => limits.btime = Some(ms(n)),
                        "winc" => limits.winc = Some(ms(n)),
                        "binc" => limits.binc = Some(ms(n)),
                        "movetime" => limits.movetime = Some(ms(n)),
                        "movestogo" => limits.movestogo = Some(n.clamp(1, 1000) as u32),
                        "depth" => limits.depth = Some(n.clamp(1, 100) as u32),
                        "nodes" => limits.nodes = Some(n.max(1) as u64),
                        _ => limits.depth = Some((2 * n).clamp(1, 100) as u32),
                    }
                }
            }
            "searchmoves" => {
                while let Some(t) = args.get(i + 1) {
                    let Ok(u) = t.parse::<UciMove>() else { break };
                    match u.to_move(pos) {
                        Ok(m) => limits.searchmoves.push(m),
                        Err(_) => problems.push(format!("searchmoves: '{t}' is illegal; left out")),
                    }
                    i += 1;
                }
            }
            other => problems.push(format!("go: unknown parameter '{other}' ignored")),
        }
        i += 1;
    }
    (limits, problems)
}

#[cfg(test)]
#[path = "uci_tests.rs"]
mod tests;
