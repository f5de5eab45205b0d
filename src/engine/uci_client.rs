//! A client for external UCI engines (Stockfish and friends).
//!
//! Every wait has a deadline. Option values are checked against what the
//! engine advertised (spin values clamped to min/max, non-numbers and
//! unknown names not sent: Stockfish crashes on some). Each request sends
//! the full `position ... moves ...`. The `bestmove` is checked for
//! legality. When the engine crashes, hangs or answers nonsense, it is
//! killed, restarted with the same handshake and options, and asked again;
//! if that fails too the built-in engine answers and a warning is logged.
//! The robot never stalls because an engine misbehaved.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use shakmaty::uci::UciMove;
use shakmaty::{CastlingMode, Chess, EnPassantMode, Move, Position};

use super::search::{key_of, Limits, Searcher, MATE};

/// Why talking to the engine failed.
#[derive(Debug, thiserror::Error, Clone, PartialEq)]
pub enum ClientError {
    #[error("empty engine command")]
    EmptyCommand,
    #[error("cannot start engine '{command}': {message}")]
    Spawn { command: String, message: String },
    #[error("engine did not answer '{expected}' within {waited:?}")]
    Timeout { expected: String, waited: Duration },
    #[error("engine exited or closed its output while we waited for '{expected}'")]
    Exited { expected: String },
    #[error("cannot write to the engine: {0}")]
    Write(String),
    #[error("engine answered an unusable best move '{answer}': {why}")]
    BadBestMove { answer: String, why: String },
}

/// How long to wait for each answer.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Timeouts {
    /// `uci` .. `uciok` (Stockfish needs well under a second; slow machines
    /// loading big networks take a few).
    pub handshake: Duration,
    /// `isready` .. `readyok` (also covers hash allocation).
    pub ready: Duration,
    /// Added to the thinking time before an engine counts as hung.
    pub grace: Duration,
    /// Thinking limit when `go` has no time limit (depth or nodes only).
    pub max_think: Duration,
}

impl Default for Timeouts {
    fn default() -> Self {
        Timeouts {
            handshake: Duration::from_secs(10),
            ready: Duration::from_secs(10),
            grace: Duration::from_secs(2),
            max_think: Duration::from_secs(120),
        }
    }
}

/// What an engine is: the command line and its `setoption` values.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct EngineSpec {
    pub program: String,
    pub args: Vec<String>,
    pub options: Vec<(String, String)>,
}

impl EngineSpec {
    /// Splits a command line on whitespace (no quoting).
    pub fn from_command_line(
        line: &str,
        options: Vec<(String, String)>,
    ) -> Result<EngineSpec, ClientError> {
        let mut parts = line.split_whitespace().map(str::to_owned);
        let program = parts.next().ok_or(ClientError::EmptyCommand)?;
        Ok(EngineSpec {
            program,
            args: parts.collect(),
            options,
        })
    }
}

/// An option as the engine advertised it.
#[derive(Debug, Clone, PartialEq)]
pub struct AdvertisedOption {
    pub name: String,
    pub kind: String,
    pub min: Option<i64>,
    pub max: Option<i64>,
    pub vars: Vec<String>,
}

/// Parses `option name <id> type <t> [default x] [min a] [max b] [var v]...`.
pub fn parse_option_line(line: &str) -> Option<AdvertisedOption> {
    let rest = line.strip_prefix("option name ")?;
    let (name, rest) = rest.split_once(" type ")?;
    let mut words = rest.split_whitespace();
    let kind = words.next()?.to_owned();
    let mut opt = AdvertisedOption {
        name: name.trim().to_owned(),
        kind,
        min: None,
        max: None,
        vars: Vec::new(),
    };
    let words: Vec<&str> = words.collect();
    let mut i = 0;
    while i + 1 < words.len() {
        match words[i] {
            "min" => opt.min = words[i + 1].parse().ok(),
            "max" => opt.max = words[i + 1].parse().ok(),
            "var" => opt.vars.push(words[i + 1].to_owned()),
            _ => {
                i += 1;
                continue;
            }
        }
        i += 2;
    }
    Some(opt)
}

/// The value to send for option `name`, or why it is not sent.
pub fn checked_option_value(
    advertised: &HashMap<String, AdvertisedOption>,
    name: &str,
    value: &str,
) -> Result<String, String> {
    let Some(opt) = advertised.get(&name.to_ascii_lowercase()) else {
        return Err(format!("engine has no option '{name}'"));
    };
    match opt.kind.as_str() {
        "spin" => {
            let n: i64 = value
                .trim()
                .parse()
                .map_err(|_| format!("option '{name}' needs a number, not '{value}'"))?;
            let lo = opt.min.unwrap_or(i64::MIN);
            let hi = opt.max.unwrap_or(i64::MAX);
            Ok(n.clamp(lo, hi).to_string())
        }
        "check" => match value.trim() {
            "true" | "false" => Ok(value.trim().to_owned()),
            _ => Err(format!(
                "option '{name}' needs true or false, not '{value}'"
            )),
        },
        "combo" => opt
            .vars
            .iter()
            .find(|v| v.eq_ignore_ascii_case(value.trim()))
            .cloned()
            .ok_or_else(|| format!("option '{name}' must be one of {:?}", opt.vars)),
        _ => Ok(value.to_owned()),
    }
}

/// A score as the engine reported it, for the side to move.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EngineScore {
    Cp(i32),
    /// Mate in this many moves (negative: being mated).
    Mate(i32),
}

impl EngineScore {
    /// In the built-in search's units.
    pub fn as_search_score(self) -> i32 {
        match self {
            EngineScore::Cp(cp) => cp,
            EngineScore::Mate(n) if n > 0 => MATE - (2 * n - 1),
            EngineScore::Mate(n) => -MATE + (-2 * n),
        }
    }
}

/// Score and PV from an `info` line (PV cut at the first illegal move).
pub fn parse_info(line: &str, pos: &Chess) -> (Option<EngineScore>, Vec<Move>) {
    let words: Vec<&str> = line.split_whitespace().collect();
    let mut score = None;
    let mut pv = Vec::new();
    let mut i = 0;
    while i < words.len() {
        match words[i] {
            "score" => {
                let n = words.get(i + 2).and_then(|v| v.parse::<i32>().ok());
                score = match (words.get(i + 1), n) {
                    (Some(&"cp"), Some(n)) => Some(EngineScore::Cp(n)),
                    (Some(&"mate"), Some(n)) => Some(EngineScore::Mate(n)),
                    _ => score,
                };
                i += 2;
            }
            "pv" => {
                let mut p = pos.clone();
                for w in &words[i + 1..] {
                    let Some(m) = w.parse::<UciMove>().ok().and_then(|u| u.to_move(&p).ok()) else {
                        break;
                    };
                    p.play_unchecked(m);
                    pv.push(m);
                }
                break;
            }
            _ => {}
        }
        i += 1;
    }
    (score, pv)
}

/// The `bestmove` answer as a legal move of `pos`.
pub fn parse_bestmove(line: &str, pos: &Chess) -> Result<Move, ClientError> {
    let answer = line.split_whitespace().nth(1).unwrap_or("").to_owned();
    let bad = |why: &str| ClientError::BadBestMove {
        answer: answer.clone(),
        why: why.to_owned(),
    };
    if answer.is_empty() || answer == "(none)" || answer == "0000" {
        return Err(bad("no move given"));
    }
    let u: UciMove = answer.parse().map_err(|_| bad("not a UCI move"))?;
    u.to_move(pos).map_err(|_| bad("illegal in the position"))
}

/// One running engine process.
struct Process {
    child: Child,
    stdin: ChildStdin,
    lines: Receiver<String>,
    options: HashMap<String, AdvertisedOption>,
    name: String,
}

impl Process {
    fn spawn(spec: &EngineSpec) -> Result<Process, ClientError> {
        let mut child = Command::new(&spec.program)
            .args(&spec.args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| ClientError::Spawn {
                command: spec.program.clone(),
                message: e.to_string(),
            })?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            let _ = child.kill();
            let _ = child.wait();
            return Err(ClientError::Spawn {
                command: spec.program.clone(),
                message: "no pipes".into(),
            });
        };
        let (tx, rx) = channel();
        std::thread::spawn(move || {
            // Ends when the engine closes its output (exit or kill).
            let mut reader = BufReader::new(stdout);
            let mut buf = Vec::new();
            loop {
                buf.clear();
                match reader.read_until(b'\n', &mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {
                        let line = String::from_utf8_lossy(&buf).trim_end().to_owned();
                        if tx.send(line).is_err() {
                            break;
                        }
                    }
                }
            }
        });
        Ok(Process {
            child,
            stdin,
            lines: rx,
            options: HashMap::new(),
            name: spec.program.clone(),
        })
    }

    fn send(&mut self, line: &str) -> Result<(), ClientError> {
        writeln!(self.stdin, "{line}")
            .and_then(|_| self.stdin.flush())
            .map_err(|e| ClientError::Write(e.to_string()))
    }

    /// Lines until one starting with `prefix` (included), or an error at
    /// `timeout` or when the engine goes away.
    fn wait_for(&mut self, prefix: &str, timeout: Duration) -> Result<Vec<String>, ClientError> {
        let deadline = Instant::now() + timeout;
        let mut lines = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    let done = line.split_whitespace().next() == Some(prefix);
                    lines.push(line);
                    if done {
                        return Ok(lines);
                    }
                }
                Err(RecvTimeoutError::Timeout) => {
                    return Err(ClientError::Timeout {
                        expected: prefix.to_owned(),
                        waited: timeout,
                    })
                }
                Err(RecvTimeoutError::Disconnected) => {
                    return Err(ClientError::Exited {
                        expected: prefix.to_owned(),
                    })
                }
            }
        }
    }

    fn kill(mut self) {
        let _ = self.send("quit");
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Where an answer came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    External,
    /// The external engine failed; the built-in engine answered.
    Fallback,
}

/// An engine's answer.
#[derive(Debug, Clone, PartialEq)]
pub struct EngineMove {
    pub mv: Move,
    pub score: Option<EngineScore>,
    pub pv: Vec<Move>,
    pub source: Source,
}

/// How many times a request is tried on a fresh process before falling back.
const ATTEMPTS: usize = 2;
/// How long a `stop` may take to produce a `bestmove` after a timeout.
const STOP_WAIT: Duration = Duration::from_millis(500);

/// A robust client for one external engine.
pub struct UciClient {
    spec: EngineSpec,
    timeouts: Timeouts,
    process: Option<Process>,
    fallback: Option<Searcher>,
    fallback_hash_mb: usize,
    /// Everything that went wrong, oldest first (also logged).
    pub warnings: Vec<String>,
    /// Number of engine processes started.
    pub spawns: usize,
}

impl UciClient {
    /// A client; the engine starts on first use (or with [`UciClient::start`]).
    pub fn new(spec: EngineSpec, timeouts: Timeouts, fallback_hash_mb: usize) -> UciClient {
        UciClient {
            spec,
            timeouts,
            process: None,
            fallback: None,
            fallback_hash_mb,
            warnings: Vec::new(),
            spawns: 0,
        }
    }

    /// The engine's `id name`, once started.
    pub fn engine_name(&self) -> Option<&str> {
        self.process.as_ref().map(|p| p.name.as_str())
    }

    fn warn(&mut self, message: String) {
        tracing::warn!(engine = %self.spec.program, "{message}");
        self.warnings.push(message);
    }

    /// Starts the engine (handshake, options, isready) if it is not running.
    pub fn start(&mut self) -> Result<(), ClientError> {
        if self.process.is_some() {
            return Ok(());
        }
        self.spawns += 1;
        let mut p = Process::spawn(&self.spec)?;
        let result = (|| {
            p.send("uci")?;
            let lines = p.wait_for("uciok", self.timeouts.handshake)?;
            for line in &lines {
                if let Some(name) = line.strip_prefix("id name ") {
                    p.name = name.trim().to_owned();
                }
                if let Some(opt) = parse_option_line(line) {
                    p.options.insert(opt.name.to_ascii_lowercase(), opt);
                }
            }
            let mut problems = Vec::new();
            for (name, value) in &self.spec.options {
                match checked_option_value(&p.options, name, value) {
                    Ok(v) => p.send(&format!("setoption name {name} value {v}"))?,
                    Err(why) => problems.push(format!("option not sent: {why}")),
                }
            }
            p.send("isready")?;
            p.wait_for("readyok", self.timeouts.ready)?;
            Ok(problems)
        })();
        match result {
            Ok(problems) => {
                for w in problems {
                    self.warn(w);
                }
                self.process = Some(p);
                Ok(())
            }
            Err(e) => {
                p.kill();
                Err(e)
            }
        }
    }

    /// Tells the engine a new game starts.
    pub fn new_game(&mut self) {
        if let Some(p) = self.process.as_mut() {
            let ok = p.send("ucinewgame").is_ok()
                && p.send("isready").is_ok()
                && p.wait_for("readyok", self.timeouts.ready).is_ok();
            if !ok {
                self.restart_later("engine did not confirm ucinewgame".into());
            }
        }
        if let Some(s) = self.fallback.as_mut() {
            s.clear();
        }
    }

    fn restart_later(&mut self, why: String) {
        self.warn(format!("{why}; restarting the engine"));
        if let Some(p) = self.process.take() {
            p.kill();
        }
    }

    /// The engine's move in the game from `start` after `moves`. Never
    /// fails: after repeated failures the built-in engine answers.
    pub fn best_move(
        &mut self,
        start: &Chess,
        moves: &[Move],
        limits: &Limits,
    ) -> Option<EngineMove> {
        let mut pos = start.clone();
        let mut history = Vec::with_capacity(moves.len());
        for &m in moves {
            history.push(key_of(&pos));
            pos.play_unchecked(m);
        }
        if pos.legal_moves().is_empty() {
            return None;
        }
        for attempt in 1..=ATTEMPTS {
            match self.ask(start, moves, &pos, limits) {
                Ok(answer) => return Some(answer),
                Err(e) => self.restart_later(format!("attempt {attempt}: {e}")),
            }
        }
        self.warn("external engine failed repeatedly; the built-in engine answers".into());
        let hash = self.fallback_hash_mb;
        let searcher = self
            .fallback
            .get_or_insert_with(|| Searcher::with_hash(hash));
        let mut fallback_limits = limits.clone();
        fallback_limits.infinite = false;
        if fallback_limits == Limits::default() {
            fallback_limits.movetime = Some(Duration::from_secs(1));
        }
        let r = searcher.search(&pos, &history, &fallback_limits, &mut |_| {});
        r.best_move.map(|mv| EngineMove {
            mv,
            score: Some(EngineScore::Cp(r.score)),
            pv: r.pv,
            source: Source::Fallback,
        })
    }

    fn ask(
        &mut self,
        start: &Chess,
        moves: &[Move],
        pos: &Chess,
        limits: &Limits,
    ) -> Result<EngineMove, ClientError> {
        self.start()?;
        let timeouts = self.timeouts;
        let Some(p) = self.process.as_mut() else {
            return Err(ClientError::Exited {
                expected: "uciok".into(),
            });
        };
        p.send(&position_command(start, moves))?;
        p.send(&go_command(limits))?;
        let think = limits
            .time_budget(pos.turn(), Duration::ZERO)
            .1
            .map(|hard| {
                // The engine may legitimately use up to its whole clock.
                let clock = match pos.turn() {
                    shakmaty::Color::White => limits.wtime,
                    shakmaty::Color::Black => limits.btime,
                };
                clock.map_or(hard, |c| c.max(hard))
            })
            .unwrap_or(timeouts.max_think);
        let lines = match p.wait_for("bestmove", think + timeouts.grace) {
            Ok(lines) => lines,
            Err(ClientError::Timeout { .. }) => {
                // Maybe it only needs telling: ask it to stop, briefly.
                p.send("stop")?;
                p.wait_for("bestmove", STOP_WAIT)
                    .map_err(|_| ClientError::Timeout {
                        expected: "bestmove".into(),
                        waited: think + timeouts.grace + STOP_WAIT,
                    })?
            }
            Err(e) => return Err(e),
        };
        let mut score = None;
        let mut pv = Vec::new();
        for line in &lines {
            if line.starts_with("info ") {
                let (s, v) = parse_info(line, pos);
                if s.is_some() {
                    score = s;
                }
                if !v.is_empty() {
                    pv = v;
                }
            }
        }
        let last = lines.last().map(String::as_str).unwrap_or("");
        let mv = parse_bestmove(last, pos)?;
        Ok(EngineMove {
            mv,
            score,
            pv,
            source: Source::External,
        })
    }
}

impl Drop for UciClient {
    fn drop(&mut self) {
        if let Some(p) = self.process.take() {
            p.kill();
        }
    }
}

/// `position startpos|fen <fen> moves ...` for the game.
pub fn position_command(start: &Chess, moves: &[Move]) -> String {
    let mut cmd = if *start == Chess::default() {
        "position startpos".to_owned()
    } else {
        let fen = shakmaty::fen::Fen::from_position(start, EnPassantMode::Legal);
        format!("position fen {fen}")
    };
    if !moves.is_empty() {
        cmd.push_str(" moves");
        for m in moves {
            cmd.push(' ');
            cmd.push_str(&m.to_uci(CastlingMode::Standard).to_string());
        }
    }
    cmd
}

/// `go ...` for the limits (`infinite` is not sent: the client needs an answer).
pub fn go_command(limits: &Limits) -> String {
    let mut cmd = "go".to_owned();
    let ms = |d: Duration| d.as_millis().to_string();
    let mut add = |k: &str, v: Option<String>| {
        if let Some(v) = v {
            cmd.push_str(&format!(" {k} {v}"));
        }
    };
    add("wtime", limits.wtime.map(ms));
    add("btime", limits.btime.map(ms));
    add("winc", limits.winc.map(ms));
    add("binc", limits.binc.map(ms));
    add("movestogo", limits.movestogo.map(|n| n.to_string()));
    add("depth", limits.depth.map(|n| n.to_string()));
    add("nodes", limits.nodes.map(|n| n.to_string()));
    add("movetime", limits.movetime.map(ms));
    if cmd == "go" {
        cmd.push_str(" depth 10");
    }
    cmd
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn option_lines_are_parsed() {
        let o =
            parse_option_line("option name Skill Level type spin default 20 min 0 max 20").unwrap();
        assert_eq!(
            (o.name.as_str(), o.kind.as_str(), o.min, o.max),
            ("Skill Level", "spin", Some(0), Some(20))
        );
        let o = parse_option_line("option name Analysis Contempt type combo default Both var Off var White var Black var Both").unwrap();
        assert_eq!(o.vars, vec!["Off", "White", "Black", "Both"]);
        assert!(parse_option_line("id name x").is_none());
    }

    #[test]
    fn option_values_are_clamped_or_refused() {
        let mut adv = HashMap::new();
        for line in [
            "option name UCI_Elo type spin default 1350 min 1350 max 2850",
            "option name UCI_LimitStrength type check default false",
        ] {
            let o = parse_option_line(line).unwrap();
            adv.insert(o.name.to_ascii_lowercase(), o);
        }
        assert_eq!(
            checked_option_value(&adv, "UCI_Elo", "1000"),
            Ok("1350".into())
        );
        assert_eq!(
            checked_option_value(&adv, "UCI_Elo", "9000"),
            Ok("2850".into())
        );
        assert_eq!(
            checked_option_value(&adv, "uci_elo", "2000"),
            Ok("2000".into())
        );
        assert!(checked_option_value(&adv, "UCI_Elo", "strong").is_err());
        assert!(checked_option_value(&adv, "UCI_LimitStrength", "yes").is_err());
        assert!(checked_option_value(&adv, "Contempt", "10").is_err());
    }

    #[test]
    fn info_and_bestmove_are_validated() {
        let p = Chess::default();
        let (s, pv) = parse_info(
            "info depth 12 score cp -31 nodes 5 pv e2e4 e7e5 e1e5 g1f3",
            &p,
        );
        assert_eq!(s, Some(EngineScore::Cp(-31)));
        assert_eq!(pv.len(), 2, "pv is cut at the illegal third move");
        let (s, _) = parse_info("info depth 3 score mate -2 pv f2f3", &p);
        assert_eq!(s, Some(EngineScore::Mate(-2)));
        assert!(parse_bestmove("bestmove e2e4 ponder e7e5", &p).is_ok());
        for bad in [
            "bestmove (none)",
            "bestmove a1a1",
            "bestmove e2e5",
            "bestmove",
            "bestmove 0000",
        ] {
            assert!(
                matches!(
                    parse_bestmove(bad, &p),
                    Err(ClientError::BadBestMove { .. })
                ),
                "{bad}"
            );
        }
    }

    #[test]
    fn commands_carry_the_full_game() {
        let p = Chess::default();
        let m = "e2e4".parse::<UciMove>().unwrap().to_move(&p).unwrap();
        assert_eq!(position_command(&p, &[m]), "position startpos moves e2e4");
        let l = Limits {
            wtime: Some(Duration::from_millis(1000)),
            btime: Some(Duration::from_millis(900)),
            winc: Some(Duration::from_millis(10)),
            binc: Some(Duration::from_millis(10)),
            ..Limits::default()
        };
        assert_eq!(go_command(&l), "go wtime 1000 btime 900 winc 10 binc 10");
        assert_eq!(EngineScore::Mate(1).as_search_score(), MATE - 1);
        assert_eq!(EngineScore::Mate(-1).as_search_score(), -MATE + 2);
    }
}
