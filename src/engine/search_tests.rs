use super::*;
use shakmaty::uci::UciMove;
use std::sync::atomic::AtomicU64;

fn pos(fen: &str) -> Chess {
    crate::game::position_from_fen(fen).unwrap()
}

fn uci(m: Move) -> String {
    crate::game::uci_of(m)
}

fn search_depth(p: &Chess, depth: u32) -> SearchResult {
    let mut s = Searcher::with_hash(8);
    s.search(p, &[], &Limits::depth(depth), &mut |_| {})
}

/// Searches, checks the score is mate in `n` moves and that playing out the
/// PV really ends in checkmate after 2n-1 plies.
fn assert_mate_in(fen: &str, n: i32) {
    let p = pos(fen);
    let r = search_depth(&p, (2 * n + 2) as u32);
    assert_eq!(r.score, MATE - (2 * n - 1), "{fen}: {r:?}");
    let mut q = p.clone();
    for (i, m) in r.pv.iter().take((2 * n - 1) as usize).enumerate() {
        assert!(q.is_legal(*m), "{fen}: pv move {i} illegal");
        q.play_unchecked(*m);
    }
    assert!(q.is_checkmate(), "{fen}: pv {:?} does not mate", r.pv);
}

#[test]
fn finds_mate_in_one() {
    assert_mate_in("6k1/5ppp/8/8/8/8/8/R5K1 w - - 0 1", 1);
    assert_mate_in(
        "r1bqkb1r/pppp1ppp/2n2n2/4p2Q/2B1P3/8/PPPP1PPP/RNB1K1NR w KQkq - 4 4",
        1,
    );
}

#[test]
fn finds_mate_in_two() {
    assert_mate_in("k7/8/8/8/8/8/8/1RR3K1 w - - 0 1", 2);
}

#[test]
fn finds_mate_in_three() {
    // Mate distances of these positions checked with Stockfish 15.1.
    assert_mate_in("1k6/8/8/3K4/8/8/8/7R w - - 0 1", 3);
    assert_mate_in("r5rk/5p1p/5R2/4B3/8/8/7P/7K w - - 0 1", 3);
}

#[test]
fn finds_mate_in_four() {
    assert_mate_in("3k4/8/8/8/3K4/8/8/7Q w - - 0 1", 4);
}

#[test]
fn being_mated_is_scored_negative_mate() {
    // Black to move: ...Kb8 Rc7 Ka8 Rc8#, mated in two moves.
    let p = pos("k7/8/1K6/8/8/8/8/2R5 b - - 0 1");
    let r = search_depth(&p, 6);
    assert_eq!(r.score, -(MATE - 4), "{r:?}");
}

#[test]
fn captures_a_hanging_queen() {
    let p = pos("rnb1kbnr/pppp1ppp/8/4p3/4P2q/5N2/PPPP1PPP/RNBQKB1R w KQkq - 2 3");
    let r = search_depth(&p, 5);
    assert_eq!(uci(r.best_move.unwrap()), "f3h4");
}

#[test]
fn saves_an_attacked_queen() {
    // The white queen on d4 is attacked by the e5 pawn; d5 is defended.
    let p = pos("rnbqkbnr/ppp2ppp/8/3pp3/3Q4/8/PPPP1PPP/RNB1KBNR w KQkq - 0 3");
    let r = search_depth(&p, 5);
    let m = r.best_move.unwrap();
    assert_eq!(m.role(), Role::Queen, "{}", uci(m));
    let mut q = p.clone();
    q.play_unchecked(m);
    let attacked = q
        .legal_moves()
        .iter()
        .any(|c| c.to() == m.to() && c.is_capture());
    assert!(!attacked, "queen left en prise by {}", uci(m));
}

#[test]
fn underpromotes_to_a_knight_with_a_fork() {
    // d8=N+ forks king f7 and queen b7; d8=Q keeps only queen against queen.
    let p = pos("8/1q1P1k2/8/8/8/8/7R/K7 w - - 0 1");
    let r = search_depth(&p, 6);
    assert_eq!(uci(r.best_move.unwrap()), "d7d8n", "{r:?}");
}

#[test]
fn stalemate_is_a_draw_with_no_move() {
    let p = pos("k7/2Q5/1K6/8/8/8/8/8 b - - 0 1");
    let r = search_depth(&p, 3);
    assert_eq!((r.best_move, r.score), (None, 0));
}

#[test]
fn avoids_stalemating_when_winning() {
    // Qc7?? stalemates; Qc8# (or another winning move) must be chosen.
    let p = pos("k7/8/1K6/8/8/8/8/2Q5 w - - 0 1");
    let r = search_depth(&p, 4);
    assert_ne!(uci(r.best_move.unwrap()), "c1c7");
    assert!(r.score >= MATE_BOUND, "{r:?}");
}

#[test]
fn fifty_move_rule_draws_inside_the_search() {
    let winning = pos("8/8/8/4k3/8/8/8/KQ6 w - - 0 80");
    assert!(search_depth(&winning, 4).score > 500);
    let p = pos("8/8/8/4k3/8/8/8/KQ6 w - - 99 80");
    assert_eq!(search_depth(&p, 4).score, 0);
}

#[test]
fn repetition_rescues_the_losing_side() {
    // White is a queen and rook down; repeating the knight shuffle draws.
    let start = pos("r2qk3/8/8/8/8/8/8/6NK w - - 0 1");
    let mut history = Vec::new();
    let mut p = start;
    for mv in ["g1f3", "a8b8", "f3g1", "b8a8"] {
        history.push(key_of(&p));
        let m = mv.parse::<UciMove>().unwrap().to_move(&p).unwrap();
        p.play_unchecked(m);
    }
    let mut s = Searcher::with_hash(8);
    let r = s.search(&p, &history, &Limits::depth(5), &mut |_| {});
    assert_eq!(r.score, 0, "{r:?}");
    assert_eq!(uci(r.best_move.unwrap()), "g1f3");
    // Without the history the same position is lost.
    let r = s.search(&p, &[], &Limits::depth(5), &mut |_| {});
    assert!(r.score < -500, "{r:?}");
}

#[test]
fn insufficient_material_is_a_draw() {
    let p = pos("8/8/4k3/8/8/3BK3/8/8 w - - 0 1");
    assert_eq!(search_depth(&p, 4).score, 0);
}

#[test]
fn node_limit_is_respected_and_a_move_returned() {
    let mut s = Searcher::with_hash(1);
    let r = s.search(&Chess::default(), &[], &Limits::nodes(5_000), &mut |_| {});
    assert!(r.nodes <= 5_000 + 1, "{}", r.nodes);
    assert!(Chess::default().is_legal(r.best_move.unwrap()));
}

#[test]
fn preset_stop_flag_still_gives_a_legal_move() {
    let stop = Arc::new(AtomicBool::new(true));
    let mut s = Searcher::new(1, stop, Box::new(MonotonicClock::default()));
    let r = s.search(&Chess::default(), &[], &Limits::depth(30), &mut |_| {});
    assert!(Chess::default().is_legal(r.best_move.unwrap()));
}

/// A clock that advances 1 ms every time it is read.
struct TickingClock(AtomicU64);

impl Clock for TickingClock {
    fn now(&self) -> Duration {
        Duration::from_millis(self.0.fetch_add(1, Ordering::Relaxed))
    }
}

#[test]
fn movetime_is_respected_on_the_injected_clock() {
    let clock = TickingClock(AtomicU64::new(0));
    let mut s = Searcher::new(1, Arc::new(AtomicBool::new(false)), Box::new(clock));
    let r = s.search(
        &Chess::default(),
        &[],
        &Limits::movetime(Duration::from_millis(50)),
        &mut |_| {},
    );
    assert!(r.time <= Duration::from_millis(60), "{:?}", r.time);
    assert!(r.best_move.is_some());
}

#[test]
fn time_budget_follows_the_clock() {
    let l = Limits {
        wtime: Some(Duration::from_millis(60_000)),
        winc: Some(Duration::from_millis(1_000)),
        ..Limits::default()
    };
    let (soft, hard) = l.time_budget(shakmaty::Color::White, Duration::from_millis(0));
    // 60 s / 25 moves + 3/4 of the increment.
    assert_eq!(soft, Some(Duration::from_millis(2_400 + 750)));
    assert_eq!(hard, Some(Duration::from_millis(3 * 3_150)));
    // Black's clock is not given: no time limit for black.
    assert_eq!(
        l.time_budget(shakmaty::Color::Black, Duration::ZERO),
        (None, None)
    );
    // Almost out of time: never more than half of what is left.
    let low = Limits {
        wtime: Some(Duration::from_millis(100)),
        ..Limits::default()
    };
    let (_, hard) = low.time_budget(shakmaty::Color::White, Duration::from_millis(50));
    assert!(hard.unwrap() <= Duration::from_millis(25), "{hard:?}");
}

#[test]
fn uci_scores_count_moves_not_plies() {
    assert_eq!(uci_score(MATE - 1), "mate 1");
    assert_eq!(uci_score(MATE - 3), "mate 2");
    assert_eq!(uci_score(-(MATE - 2)), "mate -1");
    assert_eq!(uci_score(37), "cp 37");
}

#[test]
fn see_values_simple_exchanges() {
    // Pawn takes a knight defended by a pawn: wins 320, loses the pawn.
    let p = pos("4k3/8/3p4/4n3/3P4/8/8/4K3 w - - 0 1");
    let m = "d4e5".parse::<UciMove>().unwrap().to_move(&p).unwrap();
    assert_eq!(see(&p, m), 320 - 100);
    // Queen takes a pawn defended by a pawn: loses the queen for a pawn.
    let p = pos("4k3/8/3p4/4p3/8/8/4Q3/4K3 w - - 0 1");
    let m = "e2e5".parse::<UciMove>().unwrap().to_move(&p).unwrap();
    assert_eq!(see(&p, m), 100 - 950);
}
