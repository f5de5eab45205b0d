//! PGN: export of a [`Game`] and import of real-world files.
//!
//! Export writes the Seven Tag Roster, `[Termination]`, `[FEN]`/`[SetUp]` for
//! non-standard starts, and `{[%clk h:mm:ss]}` / `{[%emt h:mm:ss]}` comments
//! when times are known. Import reads any number of games with comments,
//! variations (skipped: the main line is the game), NAGs, escape lines and
//! odd whitespace, keeping moves as text so that validation
//! ([`replay`](crate::game::replay)) can name the exact move that failed.
//!
//! The reader is our own small tokenizer rather than `pgn-reader`, because
//! `pgn-reader` silently skips tokens it cannot read, so a typo such as
//! `Nf3x` would vanish and a later, innocent move would be blamed.

use std::io::Read;

use shakmaty::Position;

use super::rules::{Game, GameResult};

/// Tags that describe a game for PGN export.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PgnTags {
    pub event: String,
    pub site: String,
    /// `YYYY.MM.DD`, `??` for unknown parts.
    pub date: String,
    pub round: String,
    pub white: String,
    pub black: String,
    /// Extra tags written after the roster, in order.
    pub extra: Vec<(String, String)>,
}

impl Default for PgnTags {
    fn default() -> Self {
        PgnTags {
            event: "?".into(),
            site: "?".into(),
            date: "????.??.??".into(),
            round: "-".into(),
            white: "?".into(),
            black: "?".into(),
            extra: Vec::new(),
        }
    }
}

/// `h:mm:ss` for a duration in milliseconds (PGN clock comments use whole
/// seconds; tenths are kept when present, as lichess writes them).
pub fn format_clock(ms: u64) -> String {
    let total_s = ms / 1000;
    let tenths = (ms % 1000) / 100;
    let (h, m, s) = (total_s / 3600, (total_s / 60) % 60, total_s % 60);
    if tenths > 0 {
        format!("{h}:{m:02}:{s:02}.{tenths}")
    } else {
        format!("{h}:{m:02}:{s:02}")
    }
}

fn escape_tag(value: &str) -> String {
    value.replace('\\', "\\\\").replace('"', "\\\"")
}

/// Writes one game as PGN text (ends with a blank line).
pub fn write_pgn(game: &Game, tags: &PgnTags) -> String {
    let result = game.result();
    let result_str = result.map_or("*", |r| r.as_str());
    let mut out = String::new();
    let mut tag = |name: &str, value: &str| {
        out.push_str(&format!("[{name} \"{}\"]\n", escape_tag(value)));
    };
    tag("Event", &tags.event);
    tag("Site", &tags.site);
    tag("Date", &tags.date);
    tag("Round", &tags.round);
    tag("White", &tags.white);
    tag("Black", &tags.black);
    tag("Result", result_str);
    if game.is_custom_start() {
        tag("SetUp", "1");
        tag("FEN", &super::rules::fen_of(game.start()));
    }
    if let Some(r) = result {
        tag("Termination", r.termination.pgn_tag());
    }
    for (k, v) in &tags.extra {
        tag(k, v);
    }
    out.push('\n');

    let mut tokens: Vec<String> = Vec::new();
    let start = game.start();
    let mut number = start.fullmoves().get();
    let mut white_to_move = start.turn().is_white();
    for (i, m) in game.moves().iter().enumerate() {
        if white_to_move {
            tokens.push(format!("{number}."));
        } else if i == 0 {
            tokens.push(format!("{number}..."));
        }
        tokens.push(m.san.clone());
        let mut comment = Vec::new();
        if let Some(c) = m.clock_ms {
            comment.push(format!("[%clk {}]", format_clock(c)));
        }
        if let Some(u) = m.used_ms {
            comment.push(format!("[%emt {}]", format_clock(u)));
        }
        if !comment.is_empty() {
            tokens.push(format!("{{{}}}", comment.join(" ")));
        }
        if !white_to_move {
            number += 1;
        }
        white_to_move = !white_to_move;
    }
    if let Some(GameResult { termination, .. }) = result {
        tokens.push(format!("{{{}}}", termination.describe()));
    }
    tokens.push(result_str.to_owned());

    // Wrap the movetext at 80 columns, as the PGN standard recommends.
    let mut line_len = 0;
    for t in tokens {
        if line_len > 0 && line_len + 1 + t.len() > 80 {
            out.push('\n');
            line_len = 0;
        } else if line_len > 0 {
            out.push(' ');
            line_len += 1;
        }
        line_len += t.len();
        out.push_str(&t);
    }
    out.push_str("\n\n");
    out
}

/// One game as read from a PGN file: its tags and main-line moves.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PgnGame {
    pub tags: Vec<(String, String)>,
    /// Main-line moves as written, without move numbers and annotations.
    pub moves: Vec<String>,
    /// The result token at the end of the movetext, if any.
    pub result: Option<String>,
    /// Line of the file where the game starts (1-based).
    pub line: usize,
}

impl PgnGame {
    /// The value of a tag, if present.
    pub fn tag(&self, name: &str) -> Option<&str> {
        self.tags
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

/// Why a PGN file could not be read.
#[derive(Debug, thiserror::Error)]
pub enum PgnError {
    #[error("cannot read PGN: {0}")]
    Io(#[from] std::io::Error),
    #[error("PGN is not valid UTF-8 text (line {line})")]
    Encoding { line: usize },
    #[error("game index {game_index}, line {line}: {what}")]
    Syntax {
        game_index: usize,
        line: usize,
        what: String,
    },
}

const RESULTS: [&str; 4] = ["1-0", "0-1", "1/2-1/2", "*"];

/// Reads every game in a PGN stream (main lines only).
pub fn read_games<R: Read>(mut reader: R) -> Result<Vec<PgnGame>, PgnError> {
    let mut bytes = Vec::new();
    reader.read_to_end(&mut bytes)?;
    // Latin-1 files exist in the wild; accept them rather than refuse.
    let text = match String::from_utf8(bytes) {
        Ok(t) => t,
        Err(e) => e.into_bytes().iter().map(|&b| b as char).collect(),
    };
    parse_games(&text)
}

/// Parses every game in PGN text.
pub fn parse_games(text: &str) -> Result<Vec<PgnGame>, PgnError> {
    let mut p = Tokenizer {
        chars: text.trim_start_matches('\u{feff}').chars().collect(),
        pos: 0,
        line: 1,
    };
    let mut games: Vec<PgnGame> = Vec::new();
    let mut cur: Option<PgnGame> = None;
    let mut in_movetext = false;
    let mut depth = 0usize;

    loop {
        p.skip_space();
        let Some(c) = p.peek() else { break };
        let game_index = games.len();
        let syntax = |line: usize, what: String| PgnError::Syntax {
            game_index,
            line,
            what,
        };
        match c {
            '%' if p.at_line_start() => p.skip_line(),
            ';' => p.skip_line(),
            '{' => {
                let line = p.line;
                p.bump();
                if !p.skip_until('}') {
                    return Err(syntax(line, "comment `{` is never closed".into()));
                }
            }
            '(' => {
                p.bump();
                depth += 1;
                in_movetext = true;
            }
            ')' => {
                p.bump();
                depth = depth.saturating_sub(1);
            }
            '[' if depth == 0 => {
                if in_movetext {
                    // A tag after movetext without a result: a new game.
                    games.extend(cur.take());
                    in_movetext = false;
                }
                let line = p.line;
                let (name, value) = p.tag().map_err(|what| syntax(line, what))?;
                cur.get_or_insert_with(|| PgnGame {
                    line,
                    ..PgnGame::default()
                })
                .tags
                .push((name, value));
            }
            _ => {
                let line = p.line;
                let token = p.token();
                if token.is_empty() {
                    // A stray bracket or other lone symbol.
                    p.bump();
                    continue;
                }
                in_movetext = true;
                let game = cur.get_or_insert_with(|| PgnGame {
                    line,
                    ..PgnGame::default()
                });
                if depth > 0 {
                    continue;
                }
                if RESULTS.contains(&token.as_str()) {
                    game.result = Some(token);
                    games.extend(cur.take());
                    in_movetext = false;
                    continue;
                }
                // NAGs and the "e.p." some writers put after en passant.
                if token.starts_with('$') || token == "e.p." || token == "ep" {
                    continue;
                }
                let mv = strip_move_number(&token);
                let mv = mv.trim_end_matches(['!', '?']);
                if mv.is_empty() {
                    continue;
                }
                if RESULTS.contains(&mv) {
                    game.result = Some(mv.to_owned());
                    games.extend(cur.take());
                    in_movetext = false;
                    continue;
                }
                if !mv
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-=+#x".contains(c))
                {
                    return Err(syntax(line, format!("unreadable move text {token:?}")));
                }
                game.moves.push(mv.to_owned());
            }
        }
    }
    games.extend(cur.take());
    Ok(games)
}

/// `12.e4` -> `e4`, `12...` -> ``.
fn strip_move_number(token: &str) -> &str {
    let digits = token.len() - token.trim_start_matches(|c: char| c.is_ascii_digit()).len();
    if digits > 0 && token[digits..].starts_with('.') {
        token[digits..].trim_start_matches('.')
    } else {
        token
    }
}

struct Tokenizer {
    chars: Vec<char>,
    pos: usize,
    line: usize,
}

impl Tokenizer {
    fn peek(&self) -> Option<char> {
        self.chars.get(self.pos).copied()
    }

    fn bump(&mut self) -> Option<char> {
        let c = self.peek()?;
        self.pos += 1;
        if c == '\n' {
            self.line += 1;
        }
        Some(c)
    }

    fn at_line_start(&self) -> bool {
        self.pos == 0 || self.chars[self.pos - 1] == '\n'
    }

    fn skip_space(&mut self) {
        while self.peek().is_some_and(char::is_whitespace) {
            self.bump();
        }
    }

    fn skip_line(&mut self) {
        while let Some(c) = self.bump() {
            if c == '\n' {
                break;
            }
        }
    }

    /// Skips to just past `end`; false at end of input.
    fn skip_until(&mut self, end: char) -> bool {
        while let Some(c) = self.bump() {
            if c == end {
                return true;
            }
        }
        false
    }

    /// A run of characters up to whitespace or a PGN delimiter.
    fn token(&mut self) -> String {
        let mut t = String::new();
        while let Some(c) = self.peek() {
            if c.is_whitespace() || "{}()[];".contains(c) {
                break;
            }
            t.push(c);
            self.bump();
        }
        t
    }

    /// `[Name "value"]` with `\"` and `\\` escapes.
    fn tag(&mut self) -> Result<(String, String), String> {
        self.bump(); // '['
        self.skip_space();
        let mut name = String::new();
        while let Some(c) = self.peek() {
            if c.is_ascii_alphanumeric() || c == '_' {
                name.push(c);
                self.bump();
            } else {
                break;
            }
        }
        if name.is_empty() {
            return Err("tag without a name".into());
        }
        self.skip_space();
        if self.bump() != Some('"') {
            return Err(format!("tag {name} has no quoted value"));
        }
        let mut value = String::new();
        loop {
            match self.bump() {
                None | Some('\n') => return Err(format!("value of tag {name} is never closed")),
                Some('\\') => {
                    if let Some(c) = self.bump() {
                        value.push(c);
                    }
                }
                Some('"') => break,
                Some(c) => value.push(c),
            }
        }
        self.skip_space();
        if self.bump() != Some(']') {
            return Err(format!("tag {name} is not closed with `]`"));
        }
        Ok((name, value))
    }
}
