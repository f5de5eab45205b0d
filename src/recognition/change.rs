//! What changed on the board since the last settled frame that showed the
//! believed position: evidence of which piece left, for moves that
//! occupancy cannot tell apart.
//!
//! From a low camera the back rank hides behind the pawns: after `Bd7` the
//! squares c8, d8 and e8 all still look occupied (c8 by the pawns in front
//! of it), so `Bd7`, `Qd7` and `Kd7` explain the squares equally well and
//! the game would stall. The piece that left took its silhouette with it,
//! though: the part of it that rose above the pieces in front changes in
//! the picture, while a piece that stayed looks the same. For each piece of
//! the position before, the silhouette a piece of its height would have is
//! sampled in the reference frame and the new one, using only sample
//! points that no other piece (before, or seen now) stands in front of.

use shakmaty::{Bitboard, Board, Role, Square};

use crate::vision::image::{luma, RgbImage};
use crate::vision::orientation::Side;
use crate::vision::viewpoint::{Viewpoint, SHADOW_RADIUS};

/// Brightness change (0-255) that counts a sample as changed: the motion
/// detector's pixel threshold (`vision::motion::PIXEL_DIFF`), well above
/// webcam noise after the renderer's and camera's blur.
pub const CHANGE_LUMA: f32 = 30.0;

/// Fewest unobstructed samples a silhouette needs before its change is
/// trusted; with fewer the square says nothing (`None`).
pub const MIN_CLEAN_SAMPLES: usize = 4;

/// Piece heights in square sides: FIDE 2022 recommendations (king 9.5 cm,
/// queen 8.5, bishop 7, knight 6, rook 5.5, pawn 5) on a 5.5 cm square
/// (`../shared/reference/hardware.md`); small sets scale both alike.
pub fn role_height(role: Role) -> f64 {
    let cm = match role {
        Role::Pawn => 5.0,
        Role::Knight => 6.0,
        Role::Bishop => 7.0,
        Role::Rook => 5.5,
        Role::Queen => 8.5,
        Role::King => 9.5,
    };
    cm / 5.5
}

/// Heights along a silhouette that are sampled, as fractions of the
/// piece's height: the upper part, which rises above the pieces in front.
const SAMPLE_HEIGHTS: [f64; 5] = [0.35, 0.5, 0.65, 0.8, 0.92];
/// Sideways offsets (square sides) across the silhouette, inside the
/// narrowest piece's body (a pawn's neck is about 0.25 square across).
const SAMPLE_OFFSETS: [f64; 3] = [-0.12, 0.0, 0.12];

fn centre(side: Side, sq: Square) -> [f64; 2] {
    let (c, r) = side.cell_of_square(sq as usize);
    [c as f64 + 0.5, r as f64 + 0.5]
}

/// For every square holding a piece on `before_board`: the fraction of
/// its silhouette's clean samples whose brightness changed by more than
/// [`CHANGE_LUMA`] from `before` to `after`. `seen_now` are the squares
/// that look occupied in `after` (new pieces may stand in front). `None`
/// for empty squares and for silhouettes with fewer than
/// [`MIN_CLEAN_SAMPLES`] clean samples inside both images.
pub fn piece_changes(
    before: &RgbImage,
    after: &RgbImage,
    view: &Viewpoint,
    side: Side,
    before_board: &Board,
    seen_now: Bitboard,
) -> [Option<f32>; 64] {
    let mut out = [None; 64];
    let occluders: Vec<([f64; 2], f64)> = (before_board.occupied() | seen_now)
        .into_iter()
        .map(|q| {
            // A piece seen now where there was none may be the tallest.
            let h = role_height(before_board.role_at(q).unwrap_or(Role::King));
            (centre(side, q), h)
        })
        .collect();
    for sq in before_board.occupied() {
        let Some(role) = before_board.role_at(sq) else {
            continue;
        };
        let height = role_height(role);
        let p = centre(side, sq);
        let (dx, dy) = (view.centre[0] - p[0], view.centre[1] - p[1]);
        let l = dx.hypot(dy);
        // Across the line of sight (any direction when looking straight down).
        let across = if l > 1e-9 {
            [-dy / l, dx / l]
        } else {
            [1.0, 0.0]
        };
        let (mut clean, mut changed) = (0usize, 0usize);
        for &f in &SAMPLE_HEIGHTS {
            let z = f * height;
            for &o in &SAMPLE_OFFSETS {
                let s = [p[0] + across[0] * o, p[1] + across[1] * o];
                let blocked = occluders
                    .iter()
                    .any(|&(q, hq)| q != p && view.hidden_from(s, z, q, SHADOW_RADIUS, hq));
                if blocked {
                    continue;
                }
                let Some([x, y]) = view.project(s[0], s[1], z) else {
                    continue;
                };
                let (Some(a), Some(b)) = (before.sample(x, y), after.sample(x, y)) else {
                    continue;
                };
                clean += 1;
                if (luma(a) - luma(b)).abs() > CHANGE_LUMA {
                    changed += 1;
                }
            }
        }
        if clean >= MIN_CLEAN_SAMPLES {
            out[sq as usize] = Some(changed as f32 / clean as f32);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heights_follow_the_fide_recommendation() {
        assert!((role_height(Role::King) - 1.727).abs() < 1e-3);
        assert!((role_height(Role::Rook) - 1.0).abs() < 1e-12);
        assert!(role_height(Role::Queen) > role_height(Role::Bishop));
        assert!(role_height(Role::Bishop) > role_height(Role::Knight));
        assert!(role_height(Role::Knight) > role_height(Role::Pawn));
    }
}
