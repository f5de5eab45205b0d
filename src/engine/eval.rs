//! Static evaluation: tapered PeSTO piece-square tables plus cheap terms
//! (mobility, pawn structure, king safety, bishop pair).
//!
//! Scores are centipawns from the side to move's point of view.
//! The piece-square tables and material values are Ronald Friederich's
//! PeSTO tables (Rofchade), published on the Chess Programming Wiki
//! ("PeSTO's Evaluation Function"), tuned by Texel tuning; the extra terms
//! are small hand-set values in the usual ranges of simple engines.

use shakmaty::attacks;
use shakmaty::{Bitboard, Board, Chess, Color, Position, Role, Square};

/// Middlegame material, indexed by `Role as usize - 1` (PeSTO).
pub const MG_VALUE: [i32; 6] = [82, 337, 365, 477, 1025, 0];
/// Endgame material, indexed by `Role as usize - 1` (PeSTO).
pub const EG_VALUE: [i32; 6] = [94, 281, 297, 512, 936, 0];
/// Game-phase weight of each piece (PeSTO): 24 is the full starting set.
const PHASE_INC: [i32; 6] = [0, 1, 1, 2, 4, 0];
const MAX_PHASE: i32 = 24;

/// Values for move ordering and SEE (plain centipawns, king huge).
pub const SEE_VALUE: [i32; 6] = [100, 320, 330, 500, 950, 20_000];

/// Bonus for moving (score is for the side to move), typical 10-20 cp.
const TEMPO: i32 = 12;
/// Bishop pair bonus (mg, eg); ~half a pawn in the endgame is the usual figure.
const BISHOP_PAIR: (i32, i32) = (25, 50);
/// Per extra attacked square beyond a typical count, (mg, eg) per role.
/// Baselines are the average mobility of that piece in middlegames.
const MOBILITY: [(i32, i32, i32); 4] = [
    // (baseline squares, mg per square, eg per square)
    (4, 4, 4),  // knight
    (6, 5, 5),  // bishop
    (7, 2, 4),  // rook
    (13, 1, 2), // queen
];
/// Doubled pawn penalty per extra pawn on a file (mg, eg).
const DOUBLED: (i32, i32) = (-10, -20);
/// Isolated pawn penalty (mg, eg).
const ISOLATED: (i32, i32) = (-10, -15);
/// Passed pawn bonus by relative rank (0 = first rank), eg weighted heavier.
const PASSED_MG: [i32; 8] = [0, 5, 10, 15, 25, 40, 60, 0];
const PASSED_EG: [i32; 8] = [0, 10, 15, 25, 45, 75, 120, 0];
/// Missing pawn in front of a castled king (mg only).
const SHIELD_MISSING: i32 = -12;
/// Weight of attacks on the squares around the king, by attacker role (mg only).
const KING_ATTACK_WEIGHT: [i32; 4] = [8, 8, 10, 16];

#[rustfmt::skip]
const MG_PST: [[i32; 64]; 6] = [
    // pawn
    [  0,   0,   0,   0,   0,   0,  0,   0,
      98, 134,  61,  95,  68, 126, 34, -11,
      -6,   7,  26,  31,  65,  56, 25, -20,
     -14,  13,   6,  21,  23,  12, 17, -23,
     -27,  -2,  -5,  12,  17,   6, 10, -25,
     -26,  -4,  -4, -10,   3,   3, 33, -12,
     -35,  -1, -20, -23, -15,  24, 38, -22,
       0,   0,   0,   0,   0,   0,  0,   0],
    // knight
    [-167, -89, -34, -49,  61, -97, -15, -107,
      -73, -41,  72,  36,  23,  62,   7,  -17,
      -47,  60,  37,  65,  84, 129,  73,   44,
       -9,  17,  19,  53,  37,  69,  18,   22,
      -13,   4,  16,  13,  28,  19,  21,   -8,
      -23,  -9,  12,  10,  19,  17,  25,  -16,
      -29, -53, -12,  -3,  -1,  18, -14,  -19,
     -105, -21, -58, -33, -17, -28, -19,  -23],
    // bishop
    [-29,   4, -82, -37, -25, -42,   7,  -8,
     -26,  16, -18, -13,  30,  59,  18, -47,
     -16,  37,  43,  40,  35,  50,  37,  -2,
      -4,   5,  19,  50,  37,  37,   7,  -2,
      -6,  13,  13,  26,  34,  12,  10,   4,
       0,  15,  15,  15,  14,  27,  18,  10,
       4,  15,  16,   0,   7,  21,  33,   1,
     -33,  -3, -14, -21, -13, -12, -39, -21],
    // rook
    [ 32,  42,  32,  51, 63,  9,  31,  43,
      27,  32,  58,  62, 80, 67,  26,  44,
      -5,  19,  26,  36, 17, 45,  61,  16,
     -24, -11,   7,  26, 24, 35,  -8, -20,
     -36, -26, -12,  -1,  9, -7,   6, -23,
     -45, -25, -16, -17,  3,  0,  -5, -33,
     -44, -16, -20,  -9, -1, 11,  -6, -71,
     -19, -13,   1,  17, 16,  7, -37, -26],
    // queen
    [-28,   0,  29,  12,  59,  44,  43,  45,
     -24, -39,  -5,   1, -16,  57,  28,  54,
     -13, -17,   7,   8,  29,  56,  47,  57,
     -27, -27, -16, -16,  -1,  17,  -2,   1,
      -9, -26,  -9, -10,  -2,  -4,   3,  -3,
     -14,   2, -11,  -2,  -5,   2,  14,   5,
     -35,  -8,  11,   2,   8,  15,  -3,   1,
      -1, -18,  -9,  10, -15, -25, -31, -50],
    // king
    [-65,  23,  16, -15, -56, -34,   2,  13,
      29,  -1, -20,  -7,  -8,  -4, -38, -29,
      -9,  24,   2, -16, -20,   6,  22, -22,
     -17, -20, -12, -27, -30, -25, -14, -36,
     -49,  -1, -27, -39, -46, -44, -33, -51,
     -14, -14, -22, -46, -44, -30, -15, -27,
       1,   7,  -8, -64, -43, -16,   9,   8,
     -15,  36,  12, -54,   8, -28,  24,  14],
];

#[rustfmt::skip]
const EG_PST: [[i32; 64]; 6] = [
    // pawn
    [  0,   0,   0,   0,   0,   0,   0,   0,
     178, 173, 158, 134, 147, 132, 165, 187,
      94, 100,  85,  67,  56,  53,  82,  84,
      32,  24,  13,   5,  -2,   4,  17,  17,
      13,   9,  -3,  -7,  -7,  -8,   3,  -1,
       4,   7,  -6,   1,   0,  -5,  -1,  -8,
      13,   8,   8,  10,  13,   0,   2,  -7,
       0,   0,   0,   0,   0,   0,   0,   0],
    // knight
    [-58, -38, -13, -28, -31, -27, -63, -99,
     -25,  -8, -25,  -2,  -9, -25, -24, -52,
     -24, -20,  10,   9,  -1,  -9, -19, -41,
     -17,   3,  22,  22,  22,  11,   8, -18,
     -18,  -6,  16,  25,  16,  17,   4, -18,
     -23,  -3,  -1,  15,  10,  -3, -20, -22,
     -42, -20, -10,  -5,  -2, -20, -23, -44,
     -29, -51, -23, -15, -22, -18, -50, -64],
    // bishop
    [-14, -21, -11,  -8, -7,  -9, -17, -24,
      -8,  -4,   7, -12, -3, -13,  -4, -14,
       2,  -8,   0,  -1, -2,   6,   0,   4,
      -3,   9,  12,   9, 14,  10,   3,   2,
      -6,   3,  13,  19,  7,  10,  -3,  -9,
     -12,  -3,   8,  10, 13,   3,  -7, -15,
     -14, -18,  -7,  -1,  4,  -9, -15, -27,
     -23,  -9, -23,  -5, -9, -16,  -5, -17],
    // rook
    [13, 10, 18, 15, 12,  12,   8,   5,
     11, 13, 13, 11, -3,   3,   8,   3,
      7,  7,  7,  5,  4,  -3,  -5,  -3,
      4,  3, 13,  1,  2,   1,  -1,   2,
      3,  5,  8,  4, -5,  -6,  -8, -11,
     -4,  0, -5, -1, -7, -12,  -8, -16,
     -6, -6,  0,  2, -9,  -9, -11,  -3,
     -9,  2,  3, -1, -5, -13,   4, -20],
    // queen
    [ -9,  22,  22,  27,  27,  19,  10,  20,
     -17,  20,  32,  41,  58,  25,  30,   0,
     -20,   6,   9,  49,  47,  35,  19,   9,
       3,  22,  24,  45,  57,  40,  57,  36,
     -18,  28,  19,  47,  31,  34,  39,  23,
     -16, -27,  15,   6,   9,  17,  10,   5,
     -22, -23, -30, -16, -16, -23, -36, -32,
     -33, -28, -22, -43,  -5, -32, -20, -41],
    // king
    [-74, -35, -18, -18, -11,  15,   4, -17,
     -12,  17,  14,  17,  17,  38,  23,  11,
      10,  17,  23,  15,  20,  45,  44,  13,
      -8,  22,  24,  27,  26,  33,  26,   3,
     -18,  -4,  21,  24,  27,  23,   9, -11,
     -19,  -3,  11,  21,  23,  16,   7,  -9,
     -27, -11,   4,  13,  14,   4,  -5, -17,
     -53, -34, -21, -11, -28, -14, -24, -43],
];

/// Index into the tables above (written a8..h8 first, white's view) for a
/// piece of `color` on `sq` (shakmaty: a1 = 0).
fn pst_index(color: Color, sq: Square) -> usize {
    match color {
        Color::White => sq as usize ^ 56,
        Color::Black => sq as usize,
    }
}

/// Middlegame/endgame pair accumulated for one side.
#[derive(Default, Clone, Copy)]
struct Score {
    mg: i32,
    eg: i32,
}

impl Score {
    fn add(&mut self, mg: i32, eg: i32) {
        self.mg += mg;
        self.eg += eg;
    }
}

/// The game phase, 0 (bare kings and pawns) ..= 24 (all pieces).
pub fn phase(board: &Board) -> i32 {
    let mut phase = 0;
    for role in [Role::Knight, Role::Bishop, Role::Rook, Role::Queen] {
        phase += PHASE_INC[role as usize - 1] * board.by_role(role).count() as i32;
    }
    phase.min(MAX_PHASE)
}

/// Evaluates `pos` in centipawns for the side to move.
pub fn evaluate(pos: &Chess) -> i32 {
    let board = pos.board();
    let occupied = board.occupied();
    let mut side = [Score::default(), Score::default()];
    let mut king_danger = [0i32; 2];
    for color in Color::ALL {
        let us = color as usize;
        let s = &mut side[us];
        let ours = board.by_color(color);
        let their_king_zone = board
            .king_of(!color)
            .map(attacks::king_attacks)
            .unwrap_or(Bitboard::EMPTY);
        let their_pawn_attacks = pawn_attacks(board.by_piece(Role::Pawn.of(!color)), !color);
        for role in Role::ALL {
            let r = role as usize - 1;
            for sq in board.by_piece(role.of(color)) {
                let i = pst_index(color, sq);
                s.add(MG_VALUE[r] + MG_PST[r][i], EG_VALUE[r] + EG_PST[r][i]);
                if matches!(role, Role::Knight | Role::Bishop | Role::Rook | Role::Queen) {
                    let att = attacks::attacks(sq, role.of(color), occupied);
                    let mob = (att & !ours & !their_pawn_attacks).count() as i32;
                    let (base, mg, eg) = MOBILITY[r - 1];
                    s.add((mob - base) * mg, (mob - base) * eg);
                    let hits = (att & their_king_zone).count() as i32;
                    king_danger[us] += hits * KING_ATTACK_WEIGHT[r - 1];
                }
            }
        }
        if board.by_piece(Role::Bishop.of(color)).count() >= 2 {
            s.add(BISHOP_PAIR.0, BISHOP_PAIR.1);
        }
        pawn_structure(board, color, s);
        king_shelter(board, color, s);
    }
    // Attacks near the king grow faster than linearly once several pieces join.
    for color in Color::ALL {
        let d = king_danger[color as usize];
        side[color as usize].add(d * d / 64, 0);
    }
    let ph = phase(board);
    let w = side[Color::White as usize];
    let b = side[Color::Black as usize];
    let mg = w.mg - b.mg;
    let eg = w.eg - b.eg;
    let mut score = (mg * ph + eg * (MAX_PHASE - ph)) / MAX_PHASE;
    score = scale_drawish(board, score);
    let stm = if pos.turn() == Color::White {
        score
    } else {
        -score
    };
    stm + TEMPO
}

/// Squares attacked by `pawns` of `color`.
fn pawn_attacks(pawns: Bitboard, color: Color) -> Bitboard {
    let not_a = !Bitboard::from_file(shakmaty::File::A);
    let not_h = !Bitboard::from_file(shakmaty::File::H);
    match color {
        Color::White => (pawns & not_a).shift(7) | (pawns & not_h).shift(9),
        Color::Black => (pawns & not_h).shift(-7) | (pawns & not_a).shift(-9),
    }
}

fn pawn_structure(board: &Board, color: Color, s: &mut Score) {
    let ours = board.by_piece(Role::Pawn.of(color));
    let theirs = board.by_piece(Role::Pawn.of(!color));
    for file in shakmaty::File::ALL {
        let on_file = (ours & Bitboard::from_file(file)).count() as i32;
        if on_file > 1 {
            s.add(DOUBLED.0 * (on_file - 1), DOUBLED.1 * (on_file - 1));
        }
    }
    for sq in ours {
        let file = sq.file();
        let mut adjacent = Bitboard::EMPTY;
        if let Some(f) = file.offset(-1) {
            adjacent |= Bitboard::from_file(f);
        }
        if let Some(f) = file.offset(1) {
            adjacent |= Bitboard::from_file(f);
        }
        if (ours & adjacent).is_empty() {
            s.add(ISOLATED.0, ISOLATED.1);
        }
        // Passed: no enemy pawn ahead on this or adjacent files.
        let span = adjacent | Bitboard::from_file(file);
        let ahead = forward_ranks(color, sq);
        if (theirs & span & ahead).is_empty() {
            let rel = relative_rank(color, sq);
            s.add(PASSED_MG[rel], PASSED_EG[rel]);
        }
    }
}

/// All squares on ranks strictly in front of `sq` from `color`'s view.
fn forward_ranks(color: Color, sq: Square) -> Bitboard {
    let rank = sq.rank() as u32;
    match color {
        Color::White => {
            if rank >= 7 {
                Bitboard::EMPTY
            } else {
                Bitboard(!0u64 << (8 * (rank + 1)))
            }
        }
        Color::Black => {
            if rank == 0 {
                Bitboard::EMPTY
            } else {
                Bitboard(!0u64 >> (8 * (8 - rank)))
            }
        }
    }
}

fn relative_rank(color: Color, sq: Square) -> usize {
    let r = sq.rank() as usize;
    match color {
        Color::White => r,
        Color::Black => 7 - r,
    }
}

/// Pawns in front of a king on its wing (mg only).
fn king_shelter(board: &Board, color: Color, s: &mut Score) {
    let Some(king) = board.king_of(color) else {
        return;
    };
    if relative_rank(color, king) > 1 {
        return;
    }
    let file = king.file() as i32;
    if (3..=4).contains(&file) {
        return; // king still in the centre: the PST handles it
    }
    let ours = board.by_piece(Role::Pawn.of(color));
    for df in -1..=1 {
        let Some(f) = king.file().offset(df) else {
            continue;
        };
        let shield = ours & Bitboard::from_file(f) & forward_ranks(color, king);
        let near = shield.into_iter().any(|p| p.distance(king) <= 2);
        if !near {
            s.add(SHIELD_MISSING, 0);
        }
    }
}

/// Halves the score when the stronger side has no pawns and at most a minor
/// piece more: such endings are usually drawn (KNK, KBK, KRKB...).
fn scale_drawish(board: &Board, score: i32) -> i32 {
    let strong = if score > 0 {
        Color::White
    } else {
        Color::Black
    };
    if board.by_piece(Role::Pawn.of(strong)).any() {
        return score;
    }
    let material = |c: Color| -> i32 {
        [Role::Knight, Role::Bishop, Role::Rook, Role::Queen]
            .iter()
            .map(|&r| SEE_VALUE[r as usize - 1] * board.by_piece(r.of(c)).count() as i32)
            .sum()
    };
    if material(strong) - material(!strong) <= SEE_VALUE[Role::Bishop as usize - 1] {
        score / 4
    } else {
        score
    }
}

/// Non-pawn material of `color` (used to avoid null moves in zugzwang-prone endings).
pub fn has_non_pawn_material(board: &Board, color: Color) -> bool {
    (board.by_color(color) & !board.pawns() & !board.kings()).any()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pos(fen: &str) -> Chess {
        crate::game::position_from_fen(fen).unwrap()
    }

    #[test]
    fn start_position_is_balanced() {
        let e = evaluate(&Chess::default());
        assert_eq!(e, TEMPO, "symmetric position scores only the tempo");
    }

    #[test]
    fn mirrored_positions_score_the_same() {
        let a = pos("r1bqkb1r/pppp1ppp/2n2n2/4p3/2B1P3/5N2/PPPP1PPP/RNBQK2R w KQkq - 4 4");
        let b = pos("rnbqk2r/pppp1ppp/5n2/2b1p3/4P3/2N2N2/PPPP1PPP/R1BQKB1R b KQkq - 4 4");
        assert_eq!(evaluate(&a), evaluate(&b));
    }

    #[test]
    fn extra_queen_is_winning() {
        let p = pos("rnb1kbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1");
        assert!(evaluate(&p) > 800, "{}", evaluate(&p));
    }

    #[test]
    fn lone_minor_piece_is_scaled_down() {
        let p = pos("8/8/4k3/8/8/3NK3/8/8 w - - 0 1");
        assert!(evaluate(&p) < 150, "{}", evaluate(&p));
    }
}
