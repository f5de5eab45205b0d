//! Moves typed by people: SAN (`Nf3`, `exd6`, `O-O`, `e8=Q`), UCI
//! (`e7e8q`) and the lenient forms people type (`0-0`, `e8Q`, `nf3`,
//! `e2-e4`, `Ng1-f3`). Every failure says which input and why; an ambiguous
//! move lists its candidates.

use shakmaty::san::{San, SanPlus};
use shakmaty::uci::UciMove;
use shakmaty::{CastlingMode, Chess, Move, Position};

/// Why typed move text was not accepted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MoveInputError {
    #[error("{text:?} is not a move: {why}")]
    Malformed { text: String, why: String },
    #[error("{text:?} is illegal here: {why}")]
    Illegal { text: String, why: String },
    #[error("{text:?} is ambiguous: it could be {}", candidates.join(" or "))]
    Ambiguous {
        text: String,
        /// The matching legal moves, in SAN.
        candidates: Vec<String>,
    },
}

/// The SAN of a legal move in a position, with `+`/`#`.
pub fn san_of(pos: &Chess, mv: Move) -> String {
    SanPlus::from_move(pos.clone(), mv).to_string()
}

/// The UCI text of a move (`e1g1` for castling).
pub fn uci_of(mv: Move) -> String {
    mv.to_uci(CastlingMode::Standard).to_string()
}

/// A line of moves in UCI, separated by spaces (a principal variation, a
/// resynced line in the logs).
pub fn uci_line(line: &[Move]) -> String {
    line.iter()
        .map(|&m| uci_of(m))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Parses a move typed by a person in the given position.
pub fn parse_move(pos: &Chess, text: &str) -> Result<Move, MoveInputError> {
    let raw = text.trim();
    let malformed = |why: &str| MoveInputError::Malformed {
        text: raw.to_owned(),
        why: why.to_owned(),
    };
    if raw.is_empty() {
        return Err(malformed("empty input"));
    }
    if !raw.is_ascii() {
        return Err(malformed(
            "only letters, digits, x, -, =, + and # are used in moves",
        ));
    }
    // Annotations and check marks carry no information about the move.
    let core = raw.trim_end_matches(['+', '#', '!', '?']);
    if core.is_empty() {
        return Err(malformed("no move before the annotation"));
    }

    // Castling, with zeros or letters, any case.
    let castle = core.replace('0', "O").to_ascii_uppercase();
    if castle == "O-O" || castle == "O-O-O" || castle == "OO" || castle == "OOO" {
        let san = if castle.len() <= 3 && !castle.contains('-') {
            if castle == "OO" {
                "O-O"
            } else {
                "O-O-O"
            }
        } else {
            castle.as_str()
        };
        return resolve_san(pos, raw, san);
    }

    // Pure coordinates: UCI (e2e4, e7e8q) or long algebraic (e2-e4, e2xe4).
    let coords: String = core
        .chars()
        .filter(|c| *c != '-' && *c != 'x' && *c != '=')
        .collect();
    if looks_like_uci(&coords) {
        return resolve_uci(pos, raw, &coords.to_ascii_lowercase());
    }
    // Long algebraic with a piece letter: Ng1-f3, Ng1xf3.
    if core.len() >= 5 {
        let (first, rest) = core.split_at(1);
        let rest_coords: String = rest.chars().filter(|c| *c != '-' && *c != 'x').collect();
        if "NBRQKnbrqk".contains(first) && looks_like_uci(&rest_coords) {
            let mv = resolve_uci(pos, raw, &rest_coords.to_ascii_lowercase())?;
            if mv.role().char() != first.to_ascii_lowercase().chars().next().unwrap_or(' ') {
                return Err(MoveInputError::Illegal {
                    text: raw.to_owned(),
                    why: format!(
                        "the piece on {} is not a {}",
                        &rest_coords[..2],
                        piece_name(first)
                    ),
                });
            }
            return Ok(mv);
        }
    }

    // SAN as written takes precedence (`bxc5` is the b-pawn), then the
    // lenient readings: a promotion without '=' (e8Q, exd8q) and a
    // lowercase piece letter (nf3, bc4) when the strict reading is illegal.
    let san_text = add_promotion_equals(core);
    let strict = resolve_san(pos, raw, &san_text);
    let first = san_text.chars().next().unwrap_or(' ');
    match strict {
        Ok(mv) => Ok(mv),
        Err(e @ MoveInputError::Ambiguous { .. }) => Err(e),
        Err(e) if "nbrqk".contains(first) => {
            let as_piece = format!("{}{}", first.to_ascii_uppercase(), &san_text[1..]);
            resolve_san(pos, raw, &as_piece).map_err(|lenient| match lenient {
                MoveInputError::Malformed { .. } => e,
                other => other,
            })
        }
        Err(e) => Err(e),
    }
}

fn piece_name(letter: &str) -> &'static str {
    match letter.to_ascii_uppercase().as_str() {
        "N" => "knight",
        "B" => "bishop",
        "R" => "rook",
        "Q" => "queen",
        "K" => "king",
        _ => "piece",
    }
}

fn looks_like_uci(s: &str) -> bool {
    // The first file letter must be lowercase: `B8g7` is SAN (the bishop on
    // the eighth rank), `b8g7` is UCI.
    let b = s.as_bytes();
    let square = |f: u8, r: u8| (b'a'..=b'h').contains(&f) && (b'1'..=b'8').contains(&r);
    let dest = |f: u8, r: u8| square(f.to_ascii_lowercase(), r);
    match b.len() {
        4 => square(b[0], b[1]) && dest(b[2], b[3]),
        5 => square(b[0], b[1]) && dest(b[2], b[3]) && b"qrbnQRBN".contains(&b[4]),
        _ => false,
    }
}

/// `e8Q` / `exd8q` -> `e8=Q` / `exd8=Q`.
fn add_promotion_equals(s: &str) -> String {
    let b = s.as_bytes();
    if b.len() >= 3 && !s.contains('=') {
        let last = b[b.len() - 1];
        let rank = b[b.len() - 2];
        let file = b[b.len() - 3];
        if b"qrbnQRBN".contains(&last)
            && (rank == b'8' || rank == b'1')
            && (b'a'..=b'h').contains(&file)
        {
            return format!(
                "{}={}",
                &s[..s.len() - 1],
                (last as char).to_ascii_uppercase()
            );
        }
    }
    s.to_owned()
}

fn resolve_uci(pos: &Chess, raw: &str, uci: &str) -> Result<Move, MoveInputError> {
    let parsed: UciMove = uci.parse().map_err(|_| MoveInputError::Malformed {
        text: raw.to_owned(),
        why: "not a UCI move".to_owned(),
    })?;
    parsed.to_move(pos).map_err(|_| MoveInputError::Illegal {
        text: raw.to_owned(),
        why: illegal_reason_uci(pos, uci),
    })
}

fn illegal_reason_uci(pos: &Chess, uci: &str) -> String {
    let from: Option<shakmaty::Square> = uci.get(..2).and_then(|s| s.parse().ok());
    let Some(from) = from else {
        return "no such square".to_owned();
    };
    match pos.board().piece_at(from) {
        None => format!("there is no piece on {from}"),
        Some(p) if p.color != pos.turn() => {
            format!(
                "the piece on {from} belongs to {}, and it is {}'s move",
                color_name(p.color),
                color_name(pos.turn())
            )
        }
        Some(p) => {
            let needs_promotion = p.role == shakmaty::Role::Pawn
                && uci.len() == 4
                && (uci.ends_with('8') || uci.ends_with('1'));
            if needs_promotion {
                "a pawn reaching the last rank must promote: add q, r, b or n".to_owned()
            } else if pos.is_check() {
                format!(
                    "that move does not get the {} king out of check",
                    color_name(pos.turn())
                )
            } else {
                format!("the {} on {from} cannot move like that", role_name(p.role))
            }
        }
    }
}

fn resolve_san(pos: &Chess, raw: &str, san_text: &str) -> Result<Move, MoveInputError> {
    let san: San = san_text.parse().map_err(|_| MoveInputError::Malformed {
        text: raw.to_owned(),
        why: "not SAN (like Nf3, exd5, O-O, e8=Q) nor UCI (like g1f3, e7e8q)".to_owned(),
    })?;
    let legal = pos.legal_moves();
    let matching: Vec<Move> = legal.iter().copied().filter(|m| san.matches(*m)).collect();
    match matching.len() {
        1 => Ok(matching[0]),
        0 => Err(MoveInputError::Illegal {
            text: raw.to_owned(),
            why: illegal_reason_san(pos, &san),
        }),
        _ => Err(MoveInputError::Ambiguous {
            text: raw.to_owned(),
            candidates: matching.iter().map(|m| san_of(pos, *m)).collect(),
        }),
    }
}

fn illegal_reason_san(pos: &Chess, san: &San) -> String {
    match san {
        San::Castle(side) => {
            let side_name = match side {
                shakmaty::CastlingSide::KingSide => "kingside",
                shakmaty::CastlingSide::QueenSide => "queenside",
            };
            if !pos.castles().has(pos.turn(), *side) {
                format!(
                    "{} has lost the right to castle {side_name}",
                    color_name(pos.turn())
                )
            } else if pos.is_check() {
                "the king is in check, and castling out of check is not allowed".to_owned()
            } else {
                format!(
                    "castling {side_name} needs empty squares between king and rook and no attacked square on the king's path"
                )
            }
        }
        San::Normal {
            role,
            to,
            promotion,
            ..
        } => {
            let ours = pos.our(*role);
            if ours.is_empty() {
                format!("{} has no {}", color_name(pos.turn()), role_name(*role))
            } else if *role == shakmaty::Role::Pawn
                && promotion.is_none()
                && matches!(to.rank(), shakmaty::Rank::First | shakmaty::Rank::Eighth)
            {
                "a pawn reaching the last rank must promote: add =Q, =R, =B or =N".to_owned()
            } else if pos.is_check() {
                format!(
                    "no {} move to {to} gets the {} king out of check",
                    role_name(*role),
                    color_name(pos.turn())
                )
            } else {
                format!(
                    "no {} of {} can move to {to}",
                    role_name(*role),
                    color_name(pos.turn())
                )
            }
        }
        San::Null => "a null move is not a move on the board".to_owned(),
        San::Put { .. } => "drops are not part of chess".to_owned(),
    }
}

fn color_name(c: shakmaty::Color) -> &'static str {
    match c {
        shakmaty::Color::White => "White",
        shakmaty::Color::Black => "Black",
    }
}

fn role_name(r: shakmaty::Role) -> &'static str {
    match r {
        shakmaty::Role::Pawn => "pawn",
        shakmaty::Role::Knight => "knight",
        shakmaty::Role::Bishop => "bishop",
        shakmaty::Role::Rook => "rook",
        shakmaty::Role::Queen => "queen",
        shakmaty::Role::King => "king",
    }
}
