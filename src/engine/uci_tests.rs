use super::*;
use std::sync::mpsc::{channel, Receiver};
use std::time::Instant;

/// Generous bound on how long one answer may take in a debug build on a
/// loaded 2-core machine; answers normally come in milliseconds.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(20);

struct Session {
    engine: UciEngine,
    rx: Receiver<String>,
}

impl Session {
    fn new() -> Session {
        let (tx, rx) = channel();
        let config = EngineConfig {
            hash_mb: 4,
            ..EngineConfig::default()
        };
        Session {
            engine: UciEngine::new(&config, tx),
            rx,
        }
    }

    fn send(&mut self, line: &str) -> Flow {
        self.engine.handle_line(line)
    }

    /// Lines up to and including the first that starts with `prefix`.
    fn until(&mut self, prefix: &str) -> Vec<String> {
        let deadline = Instant::now() + ANSWER_TIMEOUT;
        let mut lines = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = self
                .rx
                .recv_timeout(left)
                .unwrap_or_else(|_| panic!("no '{prefix}' within timeout; got {lines:?}"));
            let done = line.starts_with(prefix);
            lines.push(line);
            if done {
                return lines;
            }
        }
    }

    /// Everything already sent, without waiting.
    fn drain(&mut self) -> Vec<String> {
        self.rx.try_iter().collect()
    }

    fn bestmove(&mut self) -> String {
        let lines = self.until("bestmove");
        lines
            .last()
            .unwrap()
            .split_whitespace()
            .nth(1)
            .unwrap()
            .to_owned()
    }
}

#[test]
fn handshake_lists_options_and_answers_isready() {
    let mut s = Session::new();
    s.send("uci");
    let lines = s.until("uciok");
    assert!(lines[0].starts_with("id name chessbot"));
    for opt in [
        "Hash",
        "Threads",
        "Move Overhead",
        "UCI_LimitStrength",
        "UCI_Elo",
        "Skill Level",
    ] {
        assert!(
            lines
                .iter()
                .any(|l| l.starts_with(&format!("option name {opt} type"))),
            "{opt} missing in {lines:?}"
        );
    }
    s.send("isready");
    assert_eq!(s.until("readyok"), vec!["readyok"]);
}

#[test]
fn scripted_game_session() {
    let mut s = Session::new();
    s.send("uci");
    s.until("uciok");
    s.send("setoption name Hash value 8");
    s.send("setoption name Move Overhead value 10");
    s.send("ucinewgame");
    s.send("isready");
    s.until("readyok");
    assert!(s.drain().is_empty(), "valid options produce no output");
    // Scholar's mate set-up: the engine must play Qxf7#.
    s.send("position startpos moves e2e4 e7e5 f1c4 b8c6 d1h5 g8f6");
    s.send("go depth 3");
    let lines = s.until("bestmove");
    assert_eq!(lines.last().unwrap(), "bestmove h5f7");
    let info = lines.iter().find(|l| l.starts_with("info depth")).unwrap();
    for field in [
        " seldepth ",
        " score mate 1",
        " nodes ",
        " nps ",
        " time ",
        " pv h5f7",
    ] {
        assert!(info.contains(field), "{field} missing in {info}");
    }
    // From a FEN with moves, with a time limit.
    s.send("position fen 6k1/5ppp/8/8/8/8/8/R5K1 b - - 0 1 moves g8h8");
    s.send("go movetime 200");
    assert_eq!(s.bestmove(), "a1a8");
    s.send("position startpos");
    s.send("go wtime 1000 btime 1000 winc 10 binc 10");
    let m = s.bestmove();
    assert!(
        m.parse::<UciMove>()
            .unwrap()
            .to_move(&Chess::default())
            .is_ok(),
        "{m}"
    );
    assert_eq!(s.send("quit"), Flow::Quit);
}

#[test]
fn go_infinite_waits_for_stop() {
    let mut s = Session::new();
    s.send("position startpos");
    s.send("go infinite");
    std::thread::sleep(Duration::from_millis(200));
    assert!(
        !s.drain().iter().any(|l| l.starts_with("bestmove")),
        "no bestmove before stop"
    );
    s.send("isready");
    s.until("readyok");
    s.send("stop");
    let m = s.bestmove();
    assert!(m
        .parse::<UciMove>()
        .unwrap()
        .to_move(&Chess::default())
        .is_ok());
}

#[test]
fn quit_during_search_ends_it() {
    let mut s = Session::new();
    s.send("go infinite");
    assert_eq!(s.send("quit"), Flow::Quit);
    assert!(s.drain().iter().any(|l| l.starts_with("bestmove")));
}

#[test]
fn illegal_move_keeps_the_old_position() {
    let mut s = Session::new();
    s.send("position fen 6k1/5ppp/8/8/8/8/8/R5K1 w - - 0 1");
    s.send("position startpos moves e2e4 e7e5 e1e3");
    let out = s.drain();
    assert_eq!(out.len(), 1, "{out:?}");
    assert!(
        out[0].starts_with("info string illegal move 'e1e3'"),
        "{out:?}"
    );
    assert!(out[0].contains("position unchanged"));
    s.send("go depth 2");
    assert_eq!(s.bestmove(), "a1a8", "still the mate-in-one position");
}

#[test]
fn malformed_input_is_explained_not_fatal() {
    let mut s = Session::new();
    for line in [
        "frobnicate",
        "position",
        "position fen not a fen",
        "position startpos moves zz99",
        "setoption",
        "setoption name Hash value lots",
        "setoption name Nonexistent value 3",
        "setoption name Skill Level value 99",
        "go depth x",
        "go sideways",
    ] {
        s.send(line);
        if line == "go depth x" || line == "go sideways" {
            // The search still runs (without the bad parameter); bound it.
            s.send("stop");
        }
        let out = s.drain();
        assert!(
            out.iter().any(|l| l.starts_with("info string")),
            "no explanation for '{line}': {out:?}"
        );
    }
    s.send("   ");
    s.send("");
    assert!(s.drain().is_empty());
    s.send("isready");
    s.until("readyok");
}

#[test]
fn options_are_clamped_and_applied() {
    let mut s = Session::new();
    s.send("setoption name Skill Level value 99");
    let out = s.drain();
    assert!(out[0].contains("using 20"), "{out:?}");
    assert_eq!(s.engine.options.skill, 20);
    s.send("setoption name UCI_LimitStrength value true");
    s.send("setoption name UCI_Elo value 100");
    assert_eq!(s.engine.options.elo, strength::MIN_ELO);
    assert_eq!(s.engine.options.level(), 0);
    s.send("setoption name UCI_Elo value 1500");
    assert_eq!(s.engine.options.level(), level_for_elo(1500));
}

#[test]
fn weakened_engine_answers_with_legal_moves() {
    let mut s = Session::new();
    s.send("setoption name Skill Level value 3");
    s.send("position startpos moves d2d4 d7d5");
    s.send("go movetime 100");
    let m = s.bestmove();
    let mut p = Chess::default();
    for mv in ["d2d4", "d7d5"] {
        let m = mv.parse::<UciMove>().unwrap().to_move(&p).unwrap();
        p.play_unchecked(m);
    }
    assert!(m.parse::<UciMove>().unwrap().to_move(&p).is_ok(), "{m}");
}

#[test]
fn no_legal_move_gives_bestmove_none() {
    let mut s = Session::new();
    s.send("position fen k7/2Q5/1K6/8/8/8/8/8 b - - 0 1");
    s.send("go depth 3");
    assert_eq!(s.bestmove(), "(none)");
}
