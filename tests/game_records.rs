//! Move input, PGN export/import, the journal's decoding and the clock.

use chessbot::game::clock::{Clock, TimeControl};
use chessbot::game::journal::{decode, encode, replay_records, JournalError, JournalRecord};
use chessbot::game::pgn::{format_clock, parse_games, write_pgn, PgnTags};
use chessbot::game::{parse_move, san_of, Game, MoveInputError};
use proptest::prelude::*;
use shakmaty::{Chess, Color};

fn pos(fen: &str) -> Chess {
    chessbot::game::position_from_fen(fen).unwrap()
}

fn san(p: &Chess, text: &str) -> Result<String, MoveInputError> {
    parse_move(p, text).map(|m| san_of(p, m))
}

// --- Typed moves ---

#[test]
fn san_uci_and_lenient_forms_all_reach_the_same_move() {
    let start = Chess::default();
    for text in ["Nf3", "g1f3", "Ng1f3", "Ng1-f3", "nf3", " Nf3+ ", "Nf3!?"] {
        assert_eq!(san(&start, text).unwrap(), "Nf3", "{text}");
    }
    for text in ["e4", "e2e4", "e2-e4", "e2xe4"] {
        assert_eq!(san(&start, text).unwrap(), "e4", "{text}");
    }
}

#[test]
fn castling_in_every_spelling() {
    let p = pos("r3k2r/8/8/8/8/8/8/R3K2R w KQkq - 0 1");
    for text in ["O-O", "0-0", "o-o", "OO", "e1g1", "O-O+"] {
        assert_eq!(san(&p, text).unwrap(), "O-O", "{text}");
    }
    for text in ["O-O-O", "0-0-0", "e1c1"] {
        assert_eq!(san(&p, text).unwrap(), "O-O-O", "{text}");
    }
}

#[test]
fn promotion_spellings() {
    let p = pos("3r4/4P3/8/8/8/8/k7/4K3 w - - 0 1");
    for (text, want) in [
        ("e8=Q", "e8=Q"),
        ("e8Q", "e8=Q"),
        ("e8q", "e8=Q"),
        ("e7e8q", "e8=Q"),
        ("e7e8n", "e8=N"),
        ("exd8=R", "exd8=R"),
        ("exd8r", "exd8=R"),
        ("e7d8b", "exd8=B"),
    ] {
        assert_eq!(san(&p, text).unwrap(), want, "{text}");
    }
}

#[test]
fn lowercase_b_is_the_pawn_when_both_readings_are_legal() {
    // Pawn b4 and bishop e3 both could take c5.
    let p = pos("4k3/8/8/2p5/1P6/4B3/8/4K3 w - - 0 1");
    assert_eq!(san(&p, "bxc5").unwrap(), "bxc5");
    assert_eq!(san(&p, "Bxc5").unwrap(), "Bxc5");
    // Only the bishop can go to d2: the lowercase letter means the bishop.
    assert_eq!(san(&p, "bd2").unwrap(), "Bd2");
}

#[test]
fn errors_say_what_and_why() {
    let start = Chess::default();
    match parse_move(&start, "Ke2").unwrap_err() {
        MoveInputError::Illegal { text, why } => {
            assert_eq!(text, "Ke2");
            assert!(why.contains("king"), "{why}");
        }
        e => panic!("{e:?}"),
    }
    match parse_move(&start, "e7e5").unwrap_err() {
        MoveInputError::Illegal { why, .. } => assert!(why.contains("Black"), "{why}"),
        e => panic!("{e:?}"),
    }
    match parse_move(&start, "e3e4").unwrap_err() {
        MoveInputError::Illegal { why, .. } => assert!(why.contains("no piece on e3"), "{why}"),
        e => panic!("{e:?}"),
    }
    for garbage in ["", "hello", "Zf3", "e9", "♘f3"] {
        assert!(
            matches!(
                parse_move(&start, garbage),
                Err(MoveInputError::Malformed { .. })
            ),
            "{garbage:?}"
        );
    }
    let castled = pos("4k3/8/8/8/8/8/8/4K2R w - - 0 1");
    let err = parse_move(&castled, "O-O").unwrap_err().to_string();
    assert!(err.contains("lost the right to castle"), "{err}");
}

#[test]
fn ambiguity_lists_the_candidates() {
    let p = pos("4k3/8/8/8/8/8/4K3/R6R w - - 0 1");
    match parse_move(&p, "Rf1").unwrap_err() {
        MoveInputError::Ambiguous { candidates, .. } => {
            let mut c = candidates.clone();
            c.sort();
            assert_eq!(c, vec!["Raf1", "Rhf1"]);
        }
        e => panic!("{e:?}"),
    }
    assert_eq!(san(&p, "Raf1").unwrap(), "Raf1");
}

// --- PGN export ---

fn played(moves: &str) -> Game {
    let mut g = Game::default();
    for m in moves.split_whitespace() {
        let mv = parse_move(g.position(), m).unwrap();
        g.play(mv, None, None).unwrap();
    }
    g
}

#[test]
fn pgn_has_seven_tag_roster_termination_and_result() {
    let g = played("f3 e5 g4 Qh4#");
    let pgn = write_pgn(
        &g,
        &PgnTags {
            white: "Human".into(),
            black: "chessbot".into(),
            ..PgnTags::default()
        },
    );
    let names: Vec<&str> = pgn
        .lines()
        .take_while(|l| l.starts_with('['))
        .map(|l| l[1..].split(' ').next().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "Event",
            "Site",
            "Date",
            "Round",
            "White",
            "Black",
            "Result",
            "Termination"
        ]
    );
    assert!(pgn.contains("[Result \"0-1\"]"));
    assert!(pgn.contains("1. f3 e5 2. g4 Qh4# {checkmate} 0-1"), "{pgn}");
}

#[test]
fn pgn_from_a_custom_start_has_setup_and_fen_and_black_first_move() {
    let mut g = Game::from_fen("4k3/8/8/8/8/8/4P3/4K3 b - - 0 40").unwrap();
    g.play_uci("e8d7").unwrap();
    let pgn = write_pgn(&g, &PgnTags::default());
    assert!(pgn.contains("[SetUp \"1\"]"));
    assert!(pgn.contains("[FEN \"4k3/8/8/8/8/8/4P3/4K3 b - - 0 40\"]"));
    assert!(pgn.contains("40... Kd7 *"), "{pgn}");
}

#[test]
fn pgn_has_clock_and_elapsed_comments_when_times_are_known() {
    let mut g = Game::default();
    let mv = parse_move(g.position(), "e4").unwrap();
    g.play_timed(mv, Some(0), Some(12_000), Some(288_000))
        .unwrap();
    let pgn = write_pgn(&g, &PgnTags::default());
    assert!(
        pgn.contains("1. e4 {[%clk 0:04:48] [%emt 0:00:12]} *"),
        "{pgn}"
    );
    assert_eq!(format_clock(3_723_400), "1:02:03.4");
}

#[test]
fn exported_pgn_reads_back_to_the_same_game() {
    let g = played("e4 e5 Nf3 Nc6 Bb5 a6 Ba4 Nf6 O-O Be7 Re1 b5 Bb3 d6 c3 O-O h3 Nb8 d4 Nbd7");
    let pgn = write_pgn(&g, &PgnTags::default());
    let back = parse_games(&pgn).unwrap();
    assert_eq!(back.len(), 1);
    let sans: Vec<&str> = g.moves().iter().map(|m| m.san.as_str()).collect();
    assert_eq!(back[0].moves, sans);
    assert_eq!(back[0].result.as_deref(), Some("*"));
    // Long movetext is wrapped at 80 columns.
    assert!(pgn.lines().all(|l| l.len() <= 80), "{pgn}");
}

#[test]
fn pgn_reader_handles_comments_variations_nags_and_escapes() {
    let text = "% escape line\n[Event \"x \\\"quoted\\\"\"]\n\n1. e4 {c} (1. d4 d5 (1... Nf6)) 1... e5 $1 2. Nf3?! ; rest\n2... Nc6 1-0\n[Event \"y\"]\n1.d4 *";
    let games = parse_games(text).unwrap();
    assert_eq!(games.len(), 2);
    assert_eq!(games[0].tag("Event"), Some("x \"quoted\""));
    assert_eq!(games[0].moves, ["e4", "e5", "Nf3", "Nc6"]);
    assert_eq!(games[0].result.as_deref(), Some("1-0"));
    assert_eq!(games[1].moves, ["d4"]);
    assert!(parse_games("1. e4 { never closed").is_err());
    assert!(parse_games("[Event \"open").is_err());
}

// --- Journal ---

fn sample_records() -> Vec<JournalRecord> {
    let mut recs = vec![JournalRecord::Start {
        fen: chessbot::game::fen_of(&Chess::default()),
        white: "W".into(),
        black: "B".into(),
        started_ms: 1_700_000_000_000,
        setup: Some(serde_json::json!({"mode": "play", "level": 3})),
    }];
    for (i, uci) in ["e2e4", "e7e5", "g1f3", "b8c6", "f1b5"].iter().enumerate() {
        recs.push(JournalRecord::Move {
            uci: uci.to_string(),
            at_ms: Some(1_700_000_000_000 + i as i64 * 1000),
            used_ms: Some(1000),
            clock_ms: None,
        });
    }
    recs.push(JournalRecord::TakeBack);
    recs
}

fn encoded(recs: &[JournalRecord]) -> (Vec<u8>, Vec<usize>) {
    let mut bytes = Vec::new();
    let mut ends = Vec::new();
    for r in recs {
        bytes.extend(encode(r));
        ends.push(bytes.len());
    }
    (bytes, ends)
}

#[test]
fn journal_round_trips_and_replays_the_game() {
    let recs = sample_records();
    let (bytes, _) = encoded(&recs);
    let d = decode(&bytes).unwrap();
    assert_eq!(
        d.records.iter().map(|(_, r)| r.clone()).collect::<Vec<_>>(),
        recs
    );
    assert_eq!(d.torn_line, None);
    let replayed = replay_records(&d.records).unwrap();
    // Five moves, the last taken back.
    assert_eq!(replayed.game.moves().len(), 4);
    assert_eq!(replayed.white, "W");
    assert_eq!(replayed.game.turn(), Color::White);
    // The caller's set-up comes back as it was written.
    assert_eq!(
        replayed.setup,
        Some(serde_json::json!({"mode": "play", "level": 3}))
    );
    // A journal from before set-ups were kept still reads.
    let old =
        b"{\"t\":\"start\",\"fen\":\"rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1\"}";
    let line = format!(
        "{}\t{:08x}\n",
        std::str::from_utf8(old).unwrap(),
        crc32fast::hash(old)
    );
    let d = decode(line.as_bytes()).unwrap();
    assert_eq!(replay_records(&d.records).unwrap().setup, None);
}

proptest! {
    /// A crash can cut the file anywhere: recovery keeps exactly the
    /// records that were complete and never anything else.
    #[test]
    fn any_cut_recovers_exactly_the_complete_records(cut in 0usize..2000) {
        let recs = sample_records();
        let (bytes, ends) = encoded(&recs);
        let cut = cut % (bytes.len() + 1);
        let d = decode(&bytes[..cut]).unwrap();
        let complete = ends.iter().filter(|&&e| e <= cut).count();
        prop_assert_eq!(d.records.len(), complete);
        prop_assert_eq!(d.valid_len, if complete == 0 { 0 } else { ends[complete - 1] });
        prop_assert_eq!(d.torn_line.is_some(), cut != d.valid_len);
    }

    /// Garbage (zeros, as a power cut can leave) after the last record is a torn tail.
    #[test]
    fn zero_filled_tail_is_torn_not_corrupt(zeros in 1usize..600) {
        let (mut bytes, ends) = encoded(&sample_records());
        bytes.extend(std::iter::repeat_n(0u8, zeros));
        let d = decode(&bytes).unwrap();
        prop_assert_eq!(d.records.len(), ends.len());
    }
}

#[test]
fn damage_before_good_records_is_corruption_with_its_line() {
    let (mut bytes, ends) = encoded(&sample_records());
    // Flip a byte inside the third record (line 3).
    bytes[ends[1] + 5] ^= 0x20;
    match decode(&bytes) {
        Err(JournalError::Corrupt { line, .. }) => assert_eq!(line, 3),
        other => panic!("{other:?}"),
    }
}

#[test]
fn an_illegal_move_in_the_journal_names_its_line() {
    let mut recs = sample_records();
    recs.insert(
        3,
        JournalRecord::Move {
            uci: "e1e3".into(),
            at_ms: None,
            used_ms: None,
            clock_ms: None,
        },
    );
    let (bytes, _) = encoded(&recs);
    let d = decode(&bytes).unwrap();
    match replay_records(&d.records) {
        Err(JournalError::Illegal { line, why }) => {
            assert_eq!(line, 4);
            assert!(why.contains("e1e3"), "{why}");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn journal_file_resumes_drops_torn_tail_and_keeps_bad_files_aside() {
    use chessbot::game::journal::{create, resume};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("game.journal");
    let recs = sample_records();
    {
        let mut j = create(&path, &recs[0]).unwrap();
        for r in &recs[1..4] {
            j.append(r).unwrap();
        }
    }
    // Refuses to start over an existing journal.
    assert!(matches!(
        create(&path, &recs[0]),
        Err(JournalError::Exists { .. })
    ));
    // A torn write: half of the next record.
    let half = encode(&recs[4]);
    let mut bytes = std::fs::read(&path).unwrap();
    let good_len = bytes.len();
    bytes.extend(&half[..half.len() / 2]);
    std::fs::write(&path, &bytes).unwrap();
    {
        let mut r = resume(&path).unwrap();
        assert_eq!(r.replayed.game.moves().len(), 3);
        assert_eq!(r.dropped_torn_line, Some(5));
        assert_eq!(std::fs::metadata(&path).unwrap().len() as usize, good_len);
        r.journal.append(&recs[4]).unwrap();
    }
    let r = resume(&path).unwrap();
    assert_eq!(r.replayed.game.moves().len(), 4);
    drop(r);
    // Corrupt the second line: the file is kept aside, not overwritten.
    let mut bytes = std::fs::read(&path).unwrap();
    let first_nl = bytes.iter().position(|&b| b == b'\n').unwrap();
    bytes[first_nl + 3] ^= 0x01;
    std::fs::write(&path, &bytes).unwrap();
    match resume(&path) {
        Err(JournalError::KeptAside { error, kept }) => {
            assert!(matches!(*error, JournalError::Corrupt { line: 2, .. }));
            assert_eq!(std::fs::read(&kept).unwrap(), bytes);
            assert!(!path.exists());
        }
        other => panic!("{other:?}"),
    }
}

// --- Clock ---

#[test]
fn clock_counts_down_adds_increment_and_flags() {
    let tc: TimeControl = "1+2".parse().unwrap();
    assert_eq!(
        tc,
        TimeControl {
            base_ms: 60_000,
            increment_ms: 2_000
        }
    );
    let mut c = Clock::new(tc);
    c.start(Color::White, 0);
    assert_eq!(c.press(10_000), Some((10_000, 52_000)));
    assert_eq!(c.remaining(Color::Black, 15_000), 55_000);
    c.pause(15_000);
    assert_eq!(c.remaining(Color::Black, 99_000), 55_000);
    c.start(Color::Black, 100_000);
    assert_eq!(c.flagged(154_999), None);
    assert_eq!(c.flagged(155_000), Some(Color::Black));
    assert_eq!(
        c.press(156_000),
        None,
        "a fallen flag cannot be pressed away"
    );
    for bad in ["", "5", "a+b", "0+0", "-1+2", "inf+0"] {
        assert!(bad.parse::<TimeControl>().is_err(), "{bad:?}");
    }
}

// --- Sessions: journaled games that survive restarts ---

#[test]
fn session_journals_every_move_resumes_and_archives_pgn() {
    use chessbot::config::GameConfig;
    use chessbot::game::session::{GameSession, Players};
    let dir = tempfile::tempdir().unwrap();
    let cfg = GameConfig {
        games_dir: dir.path().join("games"),
        journal_dir: dir.path().join("journal"),
        ..GameConfig::default()
    };
    let players = Players {
        white: "Ann".into(),
        black: "chessbot".into(),
    };
    let mut s = GameSession::start(
        &cfg,
        players.clone(),
        Chess::default(),
        1_764_547_200_000,
        None,
    )
    .unwrap();
    for m in ["e4", "e5", "Qh5", "Nc6", "Bc4", "Nf6"] {
        let mv = parse_move(s.game().position(), m).unwrap();
        s.play(mv, Some(1), Some(2_500), None).unwrap();
    }
    // An illegal move is refused and never journaled.
    let bad = parse_move(&Chess::default(), "e4").unwrap();
    assert!(s.play(bad, None, None, None).is_err());
    // A second game cannot start over the running one.
    assert!(GameSession::start(&cfg, players.clone(), Chess::default(), 0, None).is_err());
    drop(s); // the process "dies" here

    let mut s = GameSession::resume(&cfg)
        .unwrap()
        .expect("a journaled game");
    assert_eq!(s.game().moves().len(), 6);
    assert_eq!(s.players(), &players);
    let mv = parse_move(s.game().position(), "Qxf7#").unwrap();
    s.play(mv, None, None, None).unwrap();
    assert!(s.game().result().is_some());
    let pgn_path = s.finish().unwrap();
    let pgn = std::fs::read_to_string(&pgn_path).unwrap();
    assert!(pgn.contains("[White \"Ann\"]"));
    assert!(pgn.contains("[Date \"2025.12.01\"]"), "{pgn}");
    assert!(pgn.contains("1. e4 {[%emt 0:00:02.5]} e5"), "{pgn}");
    assert!(
        pgn.contains("4. Qxf7#") && pgn.contains("{checkmate} 1-0"),
        "{pgn}"
    );
    assert!(
        GameSession::resume(&cfg).unwrap().is_none(),
        "journal retired"
    );
}
