//! Spoken announcements for people who are not looking at a screen.
//!
//! [`describe_san`] turns a move into words ("knight to f3, check"). The
//! [`Voice`] queue speaks through `espeak-ng` when it is installed, one
//! announcement at a time on its own thread, so that speaking never
//! overlaps and never blocks the game loop; without `espeak-ng` it logs
//! once and stays silent.

use std::sync::mpsc;

/// Words for a SAN move: `Nf3+` -> "knight to f3, check".
pub fn describe_san(san: &str) -> String {
    let (core, suffix) = match san.strip_suffix('#') {
        Some(c) => (c, ", checkmate"),
        None => match san.strip_suffix('+') {
            Some(c) => (c, ", check"),
            None => (san, ""),
        },
    };
    let text = match core {
        "O-O" => "castles kingside".to_owned(),
        "O-O-O" => "castles queenside".to_owned(),
        _ => {
            let (body, promo) = match core.split_once('=') {
                Some((b, p)) => (b, Some(piece_word(p.chars().next().unwrap_or('Q')))),
                None => (core, None),
            };
            let first = body.chars().next().unwrap_or('?');
            let (piece, rest) = if first.is_ascii_uppercase() {
                (piece_word(first), &body[1..])
            } else {
                ("pawn", body)
            };
            let capture = rest.contains('x');
            let dest = &rest[rest.len().saturating_sub(2)..];
            let mut t = if capture {
                format!("{piece} takes {dest}")
            } else {
                format!("{piece} to {dest}")
            };
            if let Some(p) = promo {
                t.push_str(&format!(", promotes to {p}"));
            }
            t
        }
    };
    format!("{text}{suffix}")
}

fn piece_word(c: char) -> &'static str {
    match c {
        'N' => "knight",
        'B' => "bishop",
        'R' => "rook",
        'Q' => "queen",
        'K' => "king",
        _ => "piece",
    }
}

/// The announcement queue.
#[derive(Debug, Clone)]
pub struct Voice {
    tx: Option<mpsc::Sender<String>>,
}

impl Voice {
    /// Starts the speaker thread with `program` (normally `espeak-ng`), or
    /// a silent voice when it cannot be run.
    pub fn start(program: &str, enabled: bool) -> Voice {
        if !enabled {
            return Voice { tx: None };
        }
        let available = std::process::Command::new(program)
            .arg("--version")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if !available {
            tracing::info!(
                program,
                "speech program not found; announcements are shown but not spoken"
            );
            return Voice { tx: None };
        }
        let (tx, rx) = mpsc::channel::<String>();
        let program = program.to_owned();
        std::thread::spawn(move || {
            for text in rx {
                let r = std::process::Command::new(&program)
                    .arg(&text)
                    .stdout(std::process::Stdio::null())
                    .stderr(std::process::Stdio::null())
                    .status();
                if let Err(e) = r {
                    tracing::warn!(error = %e, "speaking failed");
                }
            }
        });
        Voice { tx: Some(tx) }
    }

    /// A voice that never speaks (tests, headless runs).
    pub fn silent() -> Voice {
        Voice { tx: None }
    }

    /// Queues an announcement; returns at once.
    pub fn say(&self, text: &str) {
        if let Some(tx) = &self.tx {
            let _ = tx.send(text.to_owned());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::describe_san;

    #[test]
    fn moves_in_words() {
        assert_eq!(describe_san("Nf3+"), "knight to f3, check");
        assert_eq!(describe_san("exd5"), "pawn takes d5");
        assert_eq!(describe_san("Qxf7#"), "queen takes f7, checkmate");
        assert_eq!(describe_san("O-O-O"), "castles queenside");
        assert_eq!(
            describe_san("e8=N+"),
            "pawn to e8, promotes to knight, check"
        );
        assert_eq!(describe_san("Rad1"), "rook to d1");
    }
}
