//! The match runner behind `chessbot match`: two engines play games from a
//! set of balanced openings with colours alternating; the result is a score,
//! an Elo difference with its 95% error bar and a PGN of every game.
//!
//! Pure apart from the engines themselves: progress goes to a callback, the
//! PGN is returned as text, and time is measured on an injected clock.

use std::time::Duration;

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use shakmaty::uci::UciMove;
use shakmaty::{Chess, Color, Move, Position};

use super::search::{key_of, Clock, Limits, Searcher, MATE_BOUND};
use super::strength::{search_at_level, MAX_LEVEL};
use super::uci_client::{EngineSpec, Timeouts, UciClient};
use crate::game::san_of;

/// Balanced opening lines (UCI), each played once with each colour.
/// Mainstream openings, roughly equal by theory.
pub const OPENINGS: [&str; 20] = [
    "e2e4 e7e5 g1f3 b8c6",
    "e2e4 c7c5 g1f3 d7d6",
    "d2d4 d7d5 c2c4 e7e6",
    "d2d4 g8f6 c2c4 e7e6",
    "e2e4 e7e6 d2d4 d7d5",
    "e2e4 c7c6 d2d4 d7d5",
    "c2c4 e7e5 b1c3 g8f6",
    "g1f3 d7d5 g2g3 g8f6",
    "d2d4 g8f6 c2c4 g7g6",
    "e2e4 e7e5 f1c4 g8f6",
    "d2d4 d7d5 c2c4 c7c6",
    "e2e4 c7c5 b1c3 b8c6",
    "e2e4 d7d5 e4d5 d8d5",
    "d2d4 f7f5 g2g3 g8f6",
    "e2e4 e7e5 g1f3 g8f6",
    "c2c4 c7c5 g1f3 g8f6",
    "e2e4 g7g6 d2d4 f8g7",
    "d2d4 d7d5 g1f3 g8f6",
    "e2e4 e7e5 b1c3 g8f6",
    "d2d4 e7e6 c2c4 f8b4",
];

/// Games longer than this many plies are adjudicated a draw.
const MAX_PLIES: usize = 400;
/// Resign adjudication: both engines agree one side is this far ahead (cp)...
const RESIGN_SCORE: i32 = 1_000;
/// ...for this many consecutive plies (as cutechess-cli's `-resign` does).
const RESIGN_PLIES: usize = 6;
/// A move may overrun a fixed move time by this much before it counts as a
/// time loss (OS scheduling on a loaded 2-core machine).
const PER_MOVE_TOLERANCE: Duration = Duration::from_millis(500);

/// Why the match could not be set up.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum MatchError {
    #[error(
        "time control '{0}': use seconds per move (0.1) or base+increment in seconds (10+0.1)"
    )]
    TimeControl(String),
    #[error("engine '{0}': {1}")]
    Engine(String, String),
}

/// How much time the engines get.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum TimeControl {
    PerMove(Duration),
    Clock { base: Duration, inc: Duration },
}

impl TimeControl {
    /// `0.1` (seconds per move) or `10+0.1` (base and increment, seconds).
    pub fn parse(text: &str) -> Result<TimeControl, MatchError> {
        let err = || MatchError::TimeControl(text.to_owned());
        let secs = |s: &str| -> Result<Duration, MatchError> {
            let v: f64 = s.trim().parse().map_err(|_| err())?;
            if !(0.0..=86_400.0).contains(&v) {
                return Err(err());
            }
            Ok(Duration::from_secs_f64(v))
        };
        match text.split_once('+') {
            Some((b, i)) => Ok(TimeControl::Clock {
                base: secs(b)?,
                inc: secs(i)?,
            }),
            None => {
                let t = secs(text)?;
                if t.is_zero() {
                    return Err(err());
                }
                Ok(TimeControl::PerMove(t))
            }
        }
    }
}

/// An engine in a match.
pub trait Player: Send {
    fn name(&self) -> String;
    fn new_game(&mut self);
    /// The move for the game from `start` after `moves`, with the engine's
    /// score for the side to move if it gave one.
    fn choose(
        &mut self,
        start: &Chess,
        moves: &[Move],
        limits: &Limits,
    ) -> Option<(Move, Option<i32>)>;
    /// How many times the player had to be rescued (external engine failures).
    fn failures(&self) -> usize {
        0
    }
}

/// The built-in engine at some level.
pub struct BuiltinPlayer {
    searcher: Searcher,
    level: u8,
    rng: ChaCha8Rng,
}

impl BuiltinPlayer {
    pub fn new(hash_mb: usize, level: u8, move_overhead: Duration, seed: u64) -> BuiltinPlayer {
        let mut searcher = Searcher::with_hash(hash_mb);
        searcher.set_move_overhead(move_overhead);
        BuiltinPlayer {
            searcher,
            level: level.min(MAX_LEVEL),
            rng: ChaCha8Rng::seed_from_u64(seed),
        }
    }
}

impl Player for BuiltinPlayer {
    fn name(&self) -> String {
        if self.level == MAX_LEVEL {
            "chessbot".into()
        } else {
            format!("chessbot level {}", self.level)
        }
    }

    fn new_game(&mut self) {
        self.searcher.clear();
    }

    fn choose(
        &mut self,
        start: &Chess,
        moves: &[Move],
        limits: &Limits,
    ) -> Option<(Move, Option<i32>)> {
        let mut pos = start.clone();
        let mut history = Vec::with_capacity(moves.len());
        for &m in moves {
            history.push(key_of(&pos));
            pos.play_unchecked(m);
        }
        let r = search_at_level(
            &mut self.searcher,
            &pos,
            &history,
            limits,
            self.level,
            &mut self.rng,
            &mut |_| {},
        );
        r.best_move.map(|m| (m, Some(r.score)))
    }
}

/// An external UCI engine.
pub struct ExternalPlayer {
    client: UciClient,
    label: String,
}

impl Player for ExternalPlayer {
    fn name(&self) -> String {
        self.label.clone()
    }

    fn new_game(&mut self) {
        self.client.new_game();
    }

    fn choose(
        &mut self,
        start: &Chess,
        moves: &[Move],
        limits: &Limits,
    ) -> Option<(Move, Option<i32>)> {
        self.client
            .best_move(start, moves, limits)
            .map(|a| (a.mv, a.score.map(|s| s.as_search_score())))
    }

    fn failures(&self) -> usize {
        self.client
            .warnings
            .iter()
            .filter(|w| w.contains("built-in engine answers"))
            .count()
            + usize::from(self.client.spawns > 1) * (self.client.spawns - 1)
    }
}

/// A player from its description: `builtin`, `builtin:LEVEL`, or an engine
/// command line with options after semicolons:
/// `/usr/games/stockfish;UCI_LimitStrength=true;UCI_Elo=1500`.
pub fn player_from_spec(
    spec: &str,
    hash_mb: usize,
    move_overhead: Duration,
    seed: u64,
) -> Result<Box<dyn Player>, MatchError> {
    let bad = |why: &str| MatchError::Engine(spec.to_owned(), why.to_owned());
    if let Some(rest) = spec.strip_prefix("builtin") {
        let level = match rest.strip_prefix(':') {
            None if rest.is_empty() => MAX_LEVEL,
            Some(l) => match l.parse::<u8>() {
                Ok(l) if l <= MAX_LEVEL => l,
                _ => return Err(bad("level must be 0..=20")),
            },
            None => return Err(bad("write builtin or builtin:LEVEL")),
        };
        return Ok(Box::new(BuiltinPlayer::new(
            hash_mb,
            level,
            move_overhead,
            seed,
        )));
    }
    let mut parts = spec.split(';');
    let command = parts.next().unwrap_or("");
    let mut options = Vec::new();
    for p in parts {
        let (k, v) = p
            .split_once('=')
            .ok_or_else(|| bad("options are written ;Name=value"))?;
        options.push((k.trim().to_owned(), v.trim().to_owned()));
    }
    let label = options
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case("UCI_Elo"))
        .map(|(_, v)| {
            format!(
                "{} (Elo {v})",
                command.split_whitespace().next().unwrap_or(command)
            )
        })
        .unwrap_or_else(|| command.to_owned());
    let spec = EngineSpec::from_command_line(command, options).map_err(|e| bad(&e.to_string()))?;
    let mut client = UciClient::new(spec, Timeouts::default(), hash_mb);
    client.start().map_err(|e| bad(&e.to_string()))?;
    Ok(Box::new(ExternalPlayer { client, label }))
}

/// How a game ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    WhiteWins,
    BlackWins,
    Draw,
}

impl Outcome {
    pub fn pgn(self) -> &'static str {
        match self {
            Outcome::WhiteWins => "1-0",
            Outcome::BlackWins => "0-1",
            Outcome::Draw => "1/2-1/2",
        }
    }
}

/// One finished game.
#[derive(Debug, Clone, PartialEq)]
pub struct GameRecord {
    pub round: usize,
    pub white: String,
    pub black: String,
    /// Whether engine A had white.
    pub a_is_white: bool,
    pub moves: Vec<Move>,
    pub outcome: Outcome,
    pub reason: String,
}

impl GameRecord {
    /// Points for engine A.
    pub fn a_points(&self) -> f64 {
        match (self.outcome, self.a_is_white) {
            (Outcome::Draw, _) => 0.5,
            (Outcome::WhiteWins, true) | (Outcome::BlackWins, false) => 1.0,
            _ => 0.0,
        }
    }

    /// The game in PGN.
    pub fn pgn(&self, event: &str) -> String {
        let mut out = String::new();
        for (tag, value) in [
            ("Event", event.to_owned()),
            ("Site", "chessbot match".to_owned()),
            ("Round", self.round.to_string()),
            ("White", self.white.clone()),
            ("Black", self.black.clone()),
            ("Result", self.outcome.pgn().to_owned()),
            ("Termination", self.reason.clone()),
        ] {
            out.push_str(&format!("[{tag} \"{}\"]\n", value.replace('"', "'")));
        }
        out.push('\n');
        let mut pos = Chess::default();
        let mut text = String::new();
        for (i, &m) in self.moves.iter().enumerate() {
            if i % 2 == 0 {
                text.push_str(&format!("{}. ", i / 2 + 1));
            }
            text.push_str(&san_of(&pos, m));
            text.push(' ');
            pos.play_unchecked(m);
        }
        text.push_str(&format!("{{{}}} {}", self.reason, self.outcome.pgn()));
        // Wrap at 80 columns as PGN export format asks.
        let mut line = String::new();
        for word in text.split(' ') {
            if !line.is_empty() && line.len() + word.len() + 1 > 79 {
                out.push_str(&line);
                out.push('\n');
                line.clear();
            }
            if !line.is_empty() {
                line.push(' ');
            }
            line.push_str(word);
        }
        out.push_str(&line);
        out.push_str("\n\n");
        out
    }
}

/// Plays one game from `opening` (UCI moves) between `white` and `black`.
pub fn play_game(
    white: &mut dyn Player,
    black: &mut dyn Player,
    opening: &str,
    tc: TimeControl,
    clock: &dyn Clock,
) -> (Vec<Move>, Outcome, String) {
    white.new_game();
    black.new_game();
    let start = Chess::default();
    let mut pos = start.clone();
    let mut moves = Vec::new();
    let mut keys = vec![key_of(&pos)];
    for text in opening.split_whitespace() {
        let Some(m) = text
            .parse::<UciMove>()
            .ok()
            .and_then(|u| u.to_move(&pos).ok())
        else {
            break; // a broken book line just ends the opening early
        };
        pos.play_unchecked(m);
        moves.push(m);
        keys.push(key_of(&pos));
    }
    let (mut wtime, mut btime, inc) = match tc {
        TimeControl::Clock { base, inc } => (base, base, inc),
        TimeControl::PerMove(_) => (Duration::ZERO, Duration::ZERO, Duration::ZERO),
    };
    let mut lopsided = 0usize;
    let mut last_score: Option<i32> = None;
    loop {
        if pos.is_checkmate() {
            let winner = if pos.turn() == Color::White {
                Outcome::BlackWins
            } else {
                Outcome::WhiteWins
            };
            return (moves, winner, "checkmate".into());
        }
        if pos.is_stalemate() {
            return (moves, Outcome::Draw, "stalemate".into());
        }
        if pos.is_insufficient_material() {
            return (moves, Outcome::Draw, "insufficient material".into());
        }
        if pos.halfmoves() >= 100 {
            return (moves, Outcome::Draw, "fifty-move rule".into());
        }
        let current = keys[keys.len() - 1];
        if keys.iter().filter(|&&k| k == current).count() >= 3 {
            return (moves, Outcome::Draw, "threefold repetition".into());
        }
        if moves.len() >= MAX_PLIES {
            return (
                moves,
                Outcome::Draw,
                format!("adjudicated after {MAX_PLIES} plies"),
            );
        }
        let turn = pos.turn();
        let limits = match tc {
            TimeControl::PerMove(t) => Limits::movetime(t),
            TimeControl::Clock { .. } => Limits {
                wtime: Some(wtime),
                btime: Some(btime),
                winc: Some(inc),
                binc: Some(inc),
                ..Limits::default()
            },
        };
        let player: &mut dyn Player = if turn == Color::White {
            &mut *white
        } else {
            &mut *black
        };
        let t0 = clock.now();
        let answer = player.choose(&start, &moves, &limits);
        let used = clock.now().saturating_sub(t0);
        let loser = if turn == Color::White {
            Outcome::BlackWins
        } else {
            Outcome::WhiteWins
        };
        let Some((m, score)) = answer else {
            return (moves, loser, format!("{} gave no move", player.name()));
        };
        if !pos.is_legal(m) {
            return (
                moves,
                loser,
                format!("{} played an illegal move", player.name()),
            );
        }
        let flagged = match tc {
            TimeControl::PerMove(t) => used > t + PER_MOVE_TOLERANCE,
            TimeControl::Clock { .. } => {
                let left = if turn == Color::White {
                    &mut wtime
                } else {
                    &mut btime
                };
                if used > *left {
                    true
                } else {
                    *left = *left - used + inc;
                    false
                }
            }
        };
        if flagged {
            let opponent_can_mate = !pos.has_insufficient_material(!turn);
            let outcome = if opponent_can_mate {
                loser
            } else {
                Outcome::Draw
            };
            return (
                moves,
                outcome,
                format!("{} lost on time ({} ms)", player.name(), used.as_millis()),
            );
        }
        // Resign adjudication from the scores of both engines (white's view).
        let white_view = score.map(|s| if turn == Color::White { s } else { -s });
        match (white_view, last_score) {
            (Some(s), Some(prev))
                if s.abs() >= RESIGN_SCORE
                    && prev.signum() == s.signum()
                    && prev.abs() >= RESIGN_SCORE =>
            {
                lopsided += 1
            }
            (Some(s), _) if s.abs() >= RESIGN_SCORE => lopsided = 1,
            _ => lopsided = 0,
        }
        last_score = white_view;
        pos.play_unchecked(m);
        moves.push(m);
        keys.push(key_of(&pos));
        if lopsided >= RESIGN_PLIES {
            let winner = if white_view.unwrap_or(0) > 0 {
                Outcome::WhiteWins
            } else {
                Outcome::BlackWins
            };
            let how = if white_view.unwrap_or(0).abs() >= MATE_BOUND {
                "mate announced"
            } else {
                "score beyond 10 pawns"
            };
            return (
                moves,
                winner,
                format!("adjudicated: {how} for {RESIGN_PLIES} plies"),
            );
        }
    }
}

/// Running totals from engine A's point of view.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Tally {
    pub wins: u32,
    pub draws: u32,
    pub losses: u32,
}

impl Tally {
    pub fn add(&mut self, points: f64) {
        if points >= 1.0 {
            self.wins += 1;
        } else if points > 0.0 {
            self.draws += 1;
        } else {
            self.losses += 1;
        }
    }

    pub fn games(&self) -> u32 {
        self.wins + self.draws + self.losses
    }

    /// Points scored by A.
    pub fn points(&self) -> f64 {
        self.wins as f64 + 0.5 * self.draws as f64
    }

    /// A's Elo advantage and the half-width of its 95% confidence interval
    /// (normal approximation over the per-game scores; the score fraction
    /// is kept within half a game of 0 and 1 so the numbers stay finite).
    pub fn elo(&self) -> Option<(f64, f64)> {
        let n = self.games() as f64;
        if n == 0.0 {
            return None;
        }
        let lo_clamp = 0.5 / n;
        let s = (self.points() / n).clamp(lo_clamp, 1.0 - lo_clamp);
        let var = (self.wins as f64 * (1.0 - s).powi(2)
            + self.draws as f64 * (0.5 - s).powi(2)
            + self.losses as f64 * s.powi(2))
            / n;
        let se = (var / n).sqrt();
        let elo = |p: f64| -400.0 * (1.0 / p.clamp(lo_clamp, 1.0 - lo_clamp) - 1.0).log10();
        let lo = elo(s - 1.96 * se);
        let hi = elo(s + 1.96 * se);
        Some((elo(s), (hi - lo) / 2.0))
    }
}

/// Plays `games` games between `a` and `b`, alternating colours over the
/// openings; `on_game` sees each finished game and the running tally.
pub fn run_match(
    a: &mut dyn Player,
    b: &mut dyn Player,
    games: usize,
    tc: TimeControl,
    clock: &dyn Clock,
    on_game: &mut dyn FnMut(&GameRecord, &Tally),
) -> (Vec<GameRecord>, Tally) {
    let mut tally = Tally::default();
    let mut records = Vec::with_capacity(games);
    for round in 0..games {
        let opening = OPENINGS[(round / 2) % OPENINGS.len()];
        let a_is_white = round % 2 == 0;
        let (white, black): (&mut dyn Player, &mut dyn Player) = if a_is_white {
            (&mut *a, &mut *b)
        } else {
            (&mut *b, &mut *a)
        };
        let (moves, outcome, reason) = play_game(white, black, opening, tc, clock);
        let record = GameRecord {
            round: round + 1,
            white: white.name(),
            black: black.name(),
            a_is_white,
            moves,
            outcome,
            reason,
        };
        tally.add(record.a_points());
        on_game(&record, &tally);
        records.push(record);
    }
    (records, tally)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::search::MonotonicClock;

    #[test]
    fn time_controls_parse() {
        assert_eq!(
            TimeControl::parse("0.1"),
            Ok(TimeControl::PerMove(Duration::from_millis(100)))
        );
        assert_eq!(
            TimeControl::parse("1+0.01"),
            Ok(TimeControl::Clock {
                base: Duration::from_secs(1),
                inc: Duration::from_millis(10)
            })
        );
        for bad in ["", "fast", "0", "-1", "1+x"] {
            assert!(TimeControl::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn elo_from_scores() {
        let even = Tally {
            wins: 5,
            draws: 10,
            losses: 5,
        };
        let (elo, err) = even.elo().unwrap();
        assert!(elo.abs() < 1e-9);
        assert!(err > 50.0 && err < 200.0, "{err}");
        // 75% is +191 Elo.
        let t = Tally {
            wins: 15,
            draws: 0,
            losses: 5,
        };
        assert!((t.elo().unwrap().0 - 190.85).abs() < 0.1);
        let all = Tally {
            wins: 10,
            draws: 0,
            losses: 0,
        };
        assert!(all.elo().unwrap().0.is_finite());
    }

    #[test]
    fn player_specs_are_checked() {
        assert!(player_from_spec("builtin", 1, Duration::ZERO, 1).is_ok());
        assert_eq!(
            player_from_spec("builtin:7", 1, Duration::ZERO, 1)
                .unwrap()
                .name(),
            "chessbot level 7"
        );
        assert!(player_from_spec("builtin:21", 1, Duration::ZERO, 1).is_err());
        assert!(player_from_spec("builtinx", 1, Duration::ZERO, 1).is_err());
        assert!(player_from_spec("/usr/games/stockfish;UCI_Elo", 1, Duration::ZERO, 1).is_err());
    }

    #[test]
    fn a_short_match_is_played_to_the_end_with_pgn() {
        let mut a = BuiltinPlayer::new(1, 20, Duration::ZERO, 1);
        let mut b = BuiltinPlayer::new(1, 0, Duration::ZERO, 2);
        let clock = MonotonicClock::default();
        let mut seen = 0;
        // Tiny per-move time keeps this a couple of seconds in a debug build.
        let tc = TimeControl::PerMove(Duration::from_millis(5));
        let (records, tally) = run_match(&mut a, &mut b, 2, tc, &clock, &mut |_, _| seen += 1);
        assert_eq!((records.len(), seen, tally.games()), (2, 2, 2));
        assert!(records[0].a_is_white && !records[1].a_is_white);
        for r in &records {
            let pgn = r.pgn("test");
            assert!(pgn.contains("[White \""), "{pgn}");
            assert!(pgn.trim_end().ends_with(r.outcome.pgn()), "{pgn}");
            assert!(pgn.contains("1. e4 e5 2. Nf3 Nc6"), "{pgn}");
        }
    }
}
