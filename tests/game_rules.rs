//! One test (at least) per rule in the seed documents (../shared/seeds/),
//! each asserting the exact legal-move set or outcome in a concrete position.

use std::collections::BTreeSet;

use chessbot::game::{parse_move, uci_of, Claim, Game, GameError, Termination};
use shakmaty::{Color, KnownOutcome, Position};

fn game(fen: &str) -> Game {
    Game::from_fen(fen).unwrap_or_else(|e| panic!("{fen}: {e}"))
}

fn moves_from(g: &Game, from: &str) -> BTreeSet<String> {
    g.legal_moves()
        .into_iter()
        .map(uci_of)
        .filter(|u| u.starts_with(from))
        .collect()
}

fn set(items: &[&str]) -> BTreeSet<String> {
    items.iter().map(|s| s.to_string()).collect()
}

fn play(g: &mut Game, moves: &str) {
    for m in moves.split_whitespace() {
        let mv = parse_move(g.position(), m).unwrap_or_else(|e| panic!("{m}: {e}"));
        g.play(mv, None, None).unwrap();
    }
}

// --- Castling (FIDE 3.8.2) ---

#[test]
fn castling_both_sides_when_all_conditions_hold() {
    let g = game("r3k2r/8/8/8/8/8/8/R3K2R w KQkq - 0 1");
    let king = moves_from(&g, "e1");
    assert!(king.contains("e1g1") && king.contains("e1c1"), "{king:?}");
    assert_eq!(
        king,
        set(&["e1c1", "e1d1", "e1d2", "e1e2", "e1f1", "e1f2", "e1g1"])
    );
}

#[test]
fn no_castling_when_a_square_between_is_occupied() {
    // Knight on b1 blocks queenside; bishop on f1 blocks kingside.
    let g = game("r3k2r/8/8/8/8/8/8/RN2KB1R w KQkq - 0 1");
    assert_eq!(moves_from(&g, "e1"), set(&["e1d1", "e1d2", "e1e2", "e1f2"]));
}

#[test]
fn no_castling_out_of_check() {
    let g = game("4k3/8/8/8/8/8/4r3/R3K2R w KQ - 0 1");
    // The rook on e2 checks; the king may take it or step aside, never castle.
    assert_eq!(moves_from(&g, "e1"), set(&["e1d1", "e1e2", "e1f1"]));
}

#[test]
fn no_castling_through_an_attacked_square() {
    // Black rook on f8 attacks f1, which the king passes on the way to g1.
    let g = game("5r1k/7p/8/8/8/8/8/R3K2R w KQ - 0 1");
    let king = moves_from(&g, "e1");
    assert!(!king.contains("e1g1"), "{king:?}");
    assert!(king.contains("e1c1"), "{king:?}");
}

#[test]
fn no_castling_into_check() {
    // Black rook on g8 attacks g1, the king's destination.
    let g = game("6rk/7p/8/8/8/8/8/R3K2R w KQ - 0 1");
    let king = moves_from(&g, "e1");
    assert!(!king.contains("e1g1") && king.contains("e1c1"), "{king:?}");
}

#[test]
fn queenside_castling_allowed_when_only_the_rook_passes_an_attacked_square() {
    // b1 is attacked (black rook on b8), but only the rook crosses b1.
    let g = game("1r5k/8/8/8/8/8/8/R3K3 w Q - 0 1");
    assert!(moves_from(&g, "e1").contains("e1c1"));
}

#[test]
fn castling_right_lost_after_king_or_rook_moved() {
    let mut g = game("r3k2r/8/8/8/8/8/8/R3K2R w KQkq - 0 1");
    play(&mut g, "Rh2 Rh7 Rh1 Rh8");
    let king = moves_from(&g, "e1");
    assert!(!king.contains("e1g1"), "rook has moved: {king:?}");
    assert!(king.contains("e1c1"));
    play(&mut g, "Kd1 Kd8 Ke1 Ke8");
    let king = moves_from(&g, "e1");
    assert!(!king.contains("e1c1") && !king.contains("e1g1"), "{king:?}");
}

// --- En passant (FIDE 3.7.4.2) ---

#[test]
fn en_passant_right_after_the_double_step() {
    let mut g = game("4k3/3p4/8/4P3/8/8/8/4K3 b - - 0 1");
    play(&mut g, "d5");
    assert_eq!(moves_from(&g, "e5"), set(&["e5d6", "e5e6"]));
    let mut g2 = g.clone();
    play(&mut g2, "exd6");
    // The captured pawn disappears from d5, not from the destination.
    assert!(g2
        .position()
        .board()
        .piece_at(shakmaty::Square::D5)
        .is_none());
    assert_eq!(
        g2.position().board().piece_at(shakmaty::Square::D6),
        Some(Color::White.pawn())
    );
}

#[test]
fn en_passant_expires_after_one_move() {
    let mut g = game("4k3/3p4/8/4P3/8/8/8/4K3 b - - 0 1");
    play(&mut g, "d5 Kd2 Ke7");
    assert_eq!(moves_from(&g, "e5"), set(&["e5e6"]));
}

#[test]
fn no_en_passant_after_a_single_step() {
    let mut g = game("4k3/3p4/8/4P3/8/8/8/4K3 b - - 0 1");
    play(&mut g, "d6");
    assert_eq!(moves_from(&g, "e5"), set(&["e5d6", "e5e6"]));
    // e5d6 here is an ordinary capture of the pawn on d6.
    let mut g2 = g.clone();
    play(&mut g2, "exd6");
    assert_eq!(g2.position().board().occupied().count(), 3);
}

// --- Promotion (FIDE 3.7.5) ---

#[test]
fn promotion_offers_the_four_pieces_and_the_player_chooses() {
    let g = game("8/4P3/8/8/8/8/k7/4K3 w - - 0 1");
    assert_eq!(
        moves_from(&g, "e7"),
        set(&["e7e8b", "e7e8n", "e7e8q", "e7e8r"])
    );
    for (text, role) in [
        ("e8=Q", shakmaty::Role::Queen),
        ("e8=R", shakmaty::Role::Rook),
        ("e8=B", shakmaty::Role::Bishop),
        ("e8=N", shakmaty::Role::Knight),
    ] {
        let mut g2 = g.clone();
        play(&mut g2, text);
        assert_eq!(
            g2.position().board().piece_at(shakmaty::Square::E8),
            Some(role.of(Color::White))
        );
    }
}

#[test]
fn a_pawn_on_the_last_rank_must_promote() {
    let g = game("8/4P3/8/8/8/8/k7/4K3 w - - 0 1");
    let err = parse_move(g.position(), "e7e8").unwrap_err().to_string();
    assert!(err.contains("must promote"), "{err}");
    let err = parse_move(g.position(), "e8").unwrap_err().to_string();
    assert!(err.contains("must promote"), "{err}");
}

// --- Check, checkmate, stalemate (FIDE 3.9, 5.1.1, 5.2.1) ---

#[test]
fn in_check_only_moves_that_end_the_check_are_legal() {
    // Rook a8 checks the king on e8 along the rank: block, capture or step away.
    let g = game("R3k3/8/8/4b3/8/8/8/4K3 b - - 0 1");
    let all: BTreeSet<String> = g.legal_moves().into_iter().map(uci_of).collect();
    assert_eq!(all, set(&["e5b8", "e8e7", "e8d7", "e8f7"]));
}

#[test]
fn a_pinned_piece_may_not_expose_its_king() {
    let g = game("4r1k1/8/8/8/8/8/4N3/4K3 w - - 0 1");
    assert!(moves_from(&g, "e2").is_empty());
}

#[test]
fn checkmate_ends_the_game() {
    let mut g = Game::default();
    play(&mut g, "f3 e5 g4 Qh4#");
    let r = g.result().unwrap();
    assert_eq!(r.termination, Termination::Checkmate);
    assert_eq!(
        r.outcome,
        KnownOutcome::Decisive {
            winner: Color::Black
        }
    );
    assert!(g.legal_moves().is_empty());
    assert!(matches!(
        g.play_uci("a2a3"),
        Err(GameError::Over("checkmate"))
    ));
}

#[test]
fn stalemate_is_a_draw() {
    let mut g = game("k7/8/1K6/8/8/8/8/2Q5 w - - 0 1");
    play(&mut g, "Qc7");
    let r = g.result().unwrap();
    assert_eq!(r.termination, Termination::Stalemate);
    assert_eq!(r.outcome, KnownOutcome::Draw);
}

// --- Dead positions (FIDE 5.2.2) ---

#[test]
fn dead_positions_end_the_game() {
    for fen in [
        "8/8/8/4k3/8/8/8/4K3 w - - 0 1",  // K v K
        "8/8/8/4k3/8/8/8/3BK3 w - - 0 1", // K+B v K
        "8/8/8/4k3/8/8/8/3NK3 w - - 0 1", // K+N v K
    ] {
        let g = game(fen);
        assert_eq!(
            g.result().map(|r| r.termination),
            Some(Termination::InsufficientMaterial),
            "{fen}"
        );
    }
    // K+B v K+B with both bishops on light squares (f1 and c8).
    let same = game("2b5/8/8/4k3/8/8/8/4KB2 w - - 0 1");
    assert_eq!(
        same.result().map(|r| r.termination),
        Some(Termination::InsufficientMaterial)
    );
    // Bishops on opposite colours can still mate: the game goes on.
    let opposite = game("2b5/8/8/4k3/8/8/8/2B1K3 w - - 0 1");
    assert_eq!(opposite.result(), None);
    // K+N v K+N: a mate is possible with help, so not dead.
    let knights = game("2n5/8/8/4k3/8/8/8/3NK3 w - - 0 1");
    assert_eq!(knights.result(), None);
}

// --- Repetition (FIDE 9.2, 9.6.1) ---

const SHUFFLE: &str = "Nf3 Nf6 Ng1 Ng8";

#[test]
fn threefold_repetition_is_claimable_not_automatic() {
    let mut g = Game::default();
    play(&mut g, "Nf3 Nf6 Ng1");
    // Black may claim by declaring Ng8, which repeats the start a second time? No:
    // the start occurred once, Ng8 makes it twice: nothing to claim yet.
    assert!(g.claimable().is_empty());
    play(&mut g, "Ng8 Nf3 Nf6 Ng1");
    // Declaring Ng8 would produce the third occurrence: claimable now.
    assert_eq!(g.claimable(), vec![Claim::ThreefoldRepetition]);
    play(&mut g, "Ng8");
    assert_eq!(g.repetitions(), 3);
    assert_eq!(
        g.result(),
        None,
        "threefold does not end the game by itself"
    );
    assert_eq!(g.claimable(), vec![Claim::ThreefoldRepetition]);
    let r = g.claim_draw(Claim::ThreefoldRepetition).unwrap();
    assert_eq!(r.termination, Termination::ThreefoldRepetition);
    assert_eq!(r.outcome, KnownOutcome::Draw);
}

#[test]
fn claiming_by_declaring_the_repeating_move() {
    let mut g = Game::default();
    play(&mut g, "Nf3 Nf6 Ng1 Ng8 Nf3 Nf6 Ng1");
    let mv = parse_move(g.position(), "Ng8").unwrap();
    let r = g.claim_draw_with_move(mv, None).unwrap();
    assert_eq!(r.termination, Termination::ThreefoldRepetition);
    assert_eq!(g.moves().len(), 8);
}

#[test]
fn a_false_claim_is_refused_and_changes_nothing() {
    let mut g = Game::default();
    play(&mut g, "e4 e5");
    assert!(matches!(
        g.claim_draw(Claim::ThreefoldRepetition),
        Err(GameError::NoClaim(_))
    ));
    let mv = parse_move(g.position(), "Nf3").unwrap();
    assert!(g.claim_draw_with_move(mv, None).is_err());
    assert_eq!(g.moves().len(), 2);
    assert_eq!(g.result(), None);
}

#[test]
fn fivefold_repetition_ends_the_game() {
    let mut g = Game::default();
    for _ in 0..4 {
        play(&mut g, SHUFFLE);
    }
    assert_eq!(g.repetitions(), 5);
    assert_eq!(
        g.result().map(|r| r.termination),
        Some(Termination::FivefoldRepetition)
    );
}

#[test]
fn repetition_counts_castling_rights() {
    // The king goes out and back: same placement, but castling rights are
    // gone, so it is not the same position as the start.
    let mut g = game("r3k2r/8/8/8/8/8/8/R3K2R w KQkq - 0 1");
    play(&mut g, "Kf1 Kf8 Ke1 Ke8");
    assert_eq!(g.repetitions(), 1);
}

#[test]
fn repetition_counts_en_passant_only_when_capturable() {
    // After ...d5 with a white pawn on e5, en passant is possible: that
    // position differs from the same placement later on.
    let mut g = game("4k3/3p4/8/4P3/8/8/8/4K3 b - - 0 1");
    play(&mut g, "d5 Kd2 Kd8 Ke1 Ke8");
    assert_eq!(g.repetitions(), 1);
    play(&mut g, "Kd2 Kd8 Ke1 Ke8");
    assert_eq!(g.repetitions(), 2);
}

// --- Fifty and seventy-five moves (FIDE 9.3, 9.6.2) ---

#[test]
fn fifty_move_rule_is_claimable_at_100_plies() {
    let g = game("8/8/4k3/8/8/8/R7/4K3 w - - 100 80");
    assert_eq!(g.claimable(), vec![Claim::FiftyMoves]);
    assert_eq!(g.result(), None);
    let g99 = game("8/8/4k3/8/8/8/R7/4K3 w - - 99 80");
    // A declared non-capturing, non-pawn move completes the fifty moves.
    assert_eq!(g99.claimable(), vec![Claim::FiftyMoves]);
    let g98 = game("8/8/4k3/8/8/8/R7/4K3 w - - 98 80");
    assert!(g98.claimable().is_empty());
}

#[test]
fn seventy_five_moves_end_the_game() {
    let mut g = game("8/8/4k3/8/8/8/R7/4K3 w - - 149 80");
    assert_eq!(g.result(), None);
    play(&mut g, "Ra3");
    assert_eq!(
        g.result().map(|r| r.termination),
        Some(Termination::SeventyfiveMoves)
    );
}

#[test]
fn checkmate_on_the_seventy_fifth_move_stands() {
    // FIDE 9.6.2: unless the last move resulted in checkmate.
    let mut g = game("7k/8/6K1/8/8/8/8/R7 w - - 149 80");
    play(&mut g, "Ra8#");
    assert_eq!(
        g.result().map(|r| r.termination),
        Some(Termination::Checkmate)
    );
}

// --- Agreement, resignation, time (FIDE 5.1.2, 5.2.3, 6.9) ---

#[test]
fn resignation_and_agreement() {
    let mut g = Game::default();
    play(&mut g, "e4");
    let r = g.resign(Color::Black).unwrap();
    assert_eq!(
        r.outcome,
        KnownOutcome::Decisive {
            winner: Color::White
        }
    );
    assert!(g.agree_draw().is_err(), "the game is already over");
    let mut g = Game::default();
    assert_eq!(g.agree_draw().unwrap().termination, Termination::Agreement);
}

#[test]
fn loss_on_time_unless_the_opponent_cannot_mate() {
    let mut g = Game::default();
    let r = g.flag_fell(Color::White).unwrap();
    assert_eq!(r.termination, Termination::TimeForfeit);
    assert_eq!(
        r.outcome,
        KnownOutcome::Decisive {
            winner: Color::Black
        }
    );
    // Black has only a king: White's flag falls, but it is a draw.
    let mut g = game("4k3/8/8/8/8/8/4P3/4K3 w - - 0 1");
    let r = g.flag_fell(Color::White).unwrap();
    assert_eq!(r.termination, Termination::TimeoutVsInsufficientMaterial);
    assert_eq!(r.outcome, KnownOutcome::Draw);
}

#[test]
fn take_back_restores_position_and_repetition_counts() {
    let mut g = Game::default();
    play(&mut g, "Nf3 Nf6 Ng1 Ng8");
    assert_eq!(g.repetitions(), 2);
    g.take_back().unwrap();
    assert_eq!(g.repetitions(), 1);
    assert_eq!(g.moves().len(), 3);
    assert_eq!(g.turn(), Color::Black);
    play(&mut g, "Ng8");
    assert_eq!(g.repetitions(), 2);
    assert!(Game::default().take_back().is_err());
}

#[test]
fn starting_from_any_legal_fen_and_refusing_bad_ones() {
    let g = game("4k3/8/8/8/8/8/8/4K2R w K - 0 1");
    assert!(g.is_custom_start());
    assert!(moves_from(&g, "e1").contains("e1g1"));
    for bad in [
        "",
        "not a fen",
        "8/8/8/8/8/8/8/8 w - - 0 1",       // no kings
        "4k3/8/8/8/8/8/8/4K3 w K - 0 1",   // castling right without a rook
        "4k3/8/8/8/8/8/8/4K2P w - - 0 1",  // pawn on the first rank
        "4k3/4Q3/8/8/8/8/8/4K3 w - - 0 1", // side not to move is in check
    ] {
        assert!(Game::from_fen(bad).is_err(), "{bad:?} accepted");
    }
}

#[test]
fn the_first_move_belongs_to_white_and_moves_alternate() {
    let mut g = Game::default();
    assert_eq!(g.turn(), Color::White);
    assert!(g.play_uci("e7e5").is_err());
    play(&mut g, "e4");
    assert_eq!(g.turn(), Color::Black);
    assert!(g
        .position()
        .is_legal(parse_move(g.position(), "e5").unwrap()));
}

#[test]
fn startpos_names_the_standard_start_and_bad_fens_say_why() {
    let p = chessbot::game::position_from_fen("startpos").unwrap();
    assert_eq!(p, shakmaty::Chess::default());
    let err = chessbot::game::position_from_fen("rnbqkbnr/pppppppp/8/8 w").unwrap_err();
    assert!(err.to_string().contains("rnbqkbnr/pppppppp/8/8 w"), "{err}");
}
