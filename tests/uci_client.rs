//! The UCI client against a fake engine that misbehaves in every way we
//! know (tests/fixtures/fake_uci.sh), and against the real `chessbot uci`.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use chessbot::engine::search::Limits;
use chessbot::engine::uci_client::{EngineSpec, Source, Timeouts, UciClient};
use shakmaty::uci::UciMove;
use shakmaty::{CastlingMode, Chess, Position};

fn fake(mode: &str, log: Option<&PathBuf>, counter: Option<&PathBuf>) -> EngineSpec {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/fake_uci.sh");
    let mut args = vec![mode.to_owned()];
    args.push(log.map_or("/dev/null".into(), |p| p.display().to_string()));
    args.push(counter.map_or("/dev/null".into(), |p| p.display().to_string()));
    EngineSpec {
        program: "sh".into(),
        args: std::iter::once(script.display().to_string())
            .chain(args)
            .collect(),
        options: vec![],
    }
}

/// Short timeouts so hangs are detected quickly in tests.
fn quick() -> Timeouts {
    Timeouts {
        handshake: Duration::from_millis(1500),
        ready: Duration::from_millis(1500),
        grace: Duration::from_millis(500),
        max_think: Duration::from_secs(5),
    }
}

fn movetime() -> Limits {
    Limits::movetime(Duration::from_millis(50))
}

fn uci(m: shakmaty::Move) -> String {
    m.to_uci(CastlingMode::Standard).to_string()
}

#[test]
fn good_engine_answers_and_reports_score() {
    let mut c = UciClient::new(fake("good", None, None), quick(), 1);
    let a = c.best_move(&Chess::default(), &[], &movetime()).unwrap();
    assert_eq!((uci(a.mv), a.source), ("e2e4".to_owned(), Source::External));
    assert_eq!(a.pv.len(), 1);
    assert!(c.warnings.is_empty(), "{:?}", c.warnings);
    assert_eq!(c.engine_name(), Some("FakeEngine"));
    // The second request carries the whole game.
    let p = Chess::default();
    let e4 = "e2e4".parse::<UciMove>().unwrap().to_move(&p).unwrap();
    let a = c.best_move(&p, &[e4], &movetime()).unwrap();
    assert_eq!(uci(a.mv), "e7e5");
}

#[test]
fn every_misbehaviour_ends_in_a_legal_move() {
    for mode in [
        "hang_handshake",
        "hang_go",
        "crash_go",
        "garbage",
        "illegal",
        "none",
        "a1a1",
    ] {
        let started = Instant::now();
        let mut c = UciClient::new(fake(mode, None, None), quick(), 1);
        let a = c
            .best_move(&Chess::default(), &[], &movetime())
            .unwrap_or_else(|| panic!("{mode}: no move"));
        assert!(Chess::default().is_legal(a.mv), "{mode}");
        assert_eq!(a.source, Source::Fallback, "{mode}");
        assert_eq!(c.spawns, 2, "{mode}: one restart before the fallback");
        assert!(!c.warnings.is_empty(), "{mode}: the failure is reported");
        // Two attempts with 1.5 s waits at most plus the fallback search.
        assert!(
            started.elapsed() < Duration::from_secs(15),
            "{mode} took {:?}",
            started.elapsed()
        );
    }
}

#[test]
fn crash_then_recover_replays_handshake_and_clamped_options() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("log");
    let counter = dir.path().join("counter");
    let mut spec = fake("flaky", Some(&log), Some(&counter));
    spec.options = vec![
        ("Hash".into(), "1000".into()),
        ("UCI_Elo".into(), "strong".into()),
        ("UCI_LimitStrength".into(), "true".into()),
        ("Contempt".into(), "5".into()),
    ];
    let mut c = UciClient::new(spec, quick(), 1);
    let a = c.best_move(&Chess::default(), &[], &movetime()).unwrap();
    assert_eq!((uci(a.mv), a.source), ("e2e4".to_owned(), Source::External));
    assert_eq!(c.spawns, 2);
    let text = std::fs::read_to_string(&log).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let count = |l: &str| lines.iter().filter(|&&x| x == l).count();
    assert_eq!(count("uci"), 2, "handshake replayed: {lines:?}");
    assert_eq!(
        count("setoption name Hash value 64"),
        2,
        "clamped to max: {lines:?}"
    );
    assert_eq!(count("setoption name UCI_LimitStrength value true"), 2);
    assert!(
        !text.contains("UCI_Elo"),
        "non-numeric value never sent: {lines:?}"
    );
    assert!(!text.contains("Contempt"), "unknown option never sent");
    assert_eq!(count("position startpos"), 2, "request retried: {lines:?}");
    assert!(c.warnings.iter().any(|w| w.contains("UCI_Elo")));
    // Still healthy afterwards, without another restart.
    c.new_game();
    c.best_move(&Chess::default(), &[], &movetime()).unwrap();
    assert_eq!(c.spawns, 2);
}

#[test]
fn missing_program_falls_back() {
    let spec = EngineSpec::from_command_line("/nonexistent/engine --x", vec![]).unwrap();
    let mut c = UciClient::new(spec, quick(), 1);
    let a = c.best_move(&Chess::default(), &[], &movetime()).unwrap();
    assert_eq!(a.source, Source::Fallback);
    assert!(c.warnings[0].contains("cannot start"), "{:?}", c.warnings);
}

#[test]
fn drives_the_real_chessbot_uci_engine() {
    let spec = EngineSpec {
        program: env!("CARGO_BIN_EXE_chessbot").into(),
        args: vec!["uci".into()],
        options: vec![
            ("Hash".into(), "8".into()),
            ("Skill Level".into(), "20".into()),
        ],
    };
    let mut c = UciClient::new(spec, Timeouts::default(), 1);
    let p: Chess = "6k1/5ppp/8/8/8/8/8/R5K1 w - - 0 1"
        .parse::<shakmaty::fen::Fen>()
        .unwrap()
        .into_position(CastlingMode::Standard)
        .unwrap();
    let a = c.best_move(&p, &[], &Limits::depth(3)).unwrap();
    assert_eq!((uci(a.mv), a.source), ("a1a8".to_owned(), Source::External));
    assert_eq!(
        a.score,
        Some(chessbot::engine::uci_client::EngineScore::Mate(1))
    );
    assert!(c.warnings.is_empty(), "{:?}", c.warnings);
}
