//! Which image corner is a1: mapping between grid cells and board squares.

use serde::{Deserialize, Serialize};

/// The side of the image White sits at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Side {
    Bottom,
    Top,
    Left,
    Right,
}

impl std::str::FromStr for Side {
    type Err = String;
    fn from_str(s: &str) -> Result<Side, String> {
        match s.to_ascii_lowercase().as_str() {
            "bottom" => Ok(Side::Bottom),
            "top" => Ok(Side::Top),
            "left" => Ok(Side::Left),
            "right" => Ok(Side::Right),
            _ => Err(format!("{s:?}: expected bottom, top, left or right")),
        }
    }
}

impl std::fmt::Display for Side {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = match self {
            Side::Bottom => "bottom",
            Side::Top => "top",
            Side::Left => "left",
            Side::Right => "right",
        };
        f.write_str(s)
    }
}

pub const ALL_SIDES: [Side; 4] = [Side::Bottom, Side::Top, Side::Left, Side::Right];

/// How the board lies in the grid frame, and how that was decided.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Orientation {
    pub white_at: Side,
    /// `given`, `start-position`, `dark-a1+pieces`, `default`.
    pub source: &'static str,
}

impl Side {
    /// Square index (a1 = 0 ... h8 = 63) of grid cell column `c`, row `r`
    /// (both 0..8, from the image's top-left grid corner).
    pub fn square_of_cell(self, c: usize, r: usize) -> usize {
        let (file, rank) = match self {
            Side::Bottom => (c, 7 - r),
            Side::Top => (7 - c, r),
            Side::Left => (r, c),
            Side::Right => (7 - r, 7 - c),
        };
        rank * 8 + file
    }

    /// The grid cell (column, row) showing square `sq`.
    pub fn cell_of_square(self, sq: usize) -> (usize, usize) {
        for r in 0..8 {
            for c in 0..8 {
                if self.square_of_cell(c, r) == sq {
                    return (c, r);
                }
            }
        }
        (0, 0)
    }

    /// Index (0..4) of the grid corner ((0,0), (8,0), (8,8), (0,8)) that is
    /// the outer corner of square a1, a8, h8, h1.
    pub fn corner_indices(self) -> [usize; 4] {
        // a8, h8, h1, a1 in grid-corner indices.
        match self {
            Side::Bottom => [0, 1, 2, 3],
            Side::Top => [2, 3, 0, 1],
            Side::Left => [1, 2, 3, 0],
            Side::Right => [3, 0, 1, 2],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a1_is_where_each_side_puts_it() {
        // Cell of a1 for each side: bottom-left, top-right, top-left, bottom-right.
        assert_eq!(Side::Bottom.cell_of_square(0), (0, 7));
        assert_eq!(Side::Top.cell_of_square(0), (7, 0));
        assert_eq!(Side::Left.cell_of_square(0), (0, 0));
        assert_eq!(Side::Right.cell_of_square(0), (7, 7));
        // h1 for white at right is top-right.
        assert_eq!(Side::Right.cell_of_square(7), (7, 0));
    }

    #[test]
    fn every_side_is_a_bijection() {
        for side in ALL_SIDES {
            let mut seen = [false; 64];
            for r in 0..8 {
                for c in 0..8 {
                    seen[side.square_of_cell(c, r)] = true;
                }
            }
            assert!(seen.iter().all(|s| *s));
        }
    }

    #[test]
    fn corner_indices_agree_with_cells() {
        // Grid corner k touches cell: 0 -> (0,0), 1 -> (7,0), 2 -> (7,7), 3 -> (0,7).
        let cell_at = [(0, 0), (7, 0), (7, 7), (0, 7)];
        for side in ALL_SIDES {
            let [a8, h8, h1, a1] = side.corner_indices();
            assert_eq!(side.cell_of_square(56), cell_at[a8]);
            assert_eq!(side.cell_of_square(63), cell_at[h8]);
            assert_eq!(side.cell_of_square(7), cell_at[h1]);
            assert_eq!(side.cell_of_square(0), cell_at[a1]);
        }
    }

    #[test]
    fn side_parses_case_insensitively() {
        assert_eq!("Right".parse::<Side>().unwrap(), Side::Right);
        assert!("north".parse::<Side>().is_err());
    }
}

/// Decides the orientation from the cells' probabilities (grid order,
/// `[empty, white, black]`) and which cells are light.
///
/// The dark-a1 rule (a1 is a dark square) leaves two of the four sides; of
/// those, the one that puts White's pieces on the low ranks and Black's on
/// the high ranks wins. With no pieces to go by, White is taken to be at the
/// bottom (or the left, if the bottom breaks the dark-a1 rule).
pub fn decide(probs: &[[f32; 3]], light: &[bool], given: Option<Side>) -> Orientation {
    if let Some(side) = given {
        return Orientation {
            white_at: side,
            source: "given",
        };
    }
    let allowed: Vec<Side> = ALL_SIDES
        .iter()
        .copied()
        .filter(|s| {
            let (c, r) = s.cell_of_square(0);
            !light.get(c + 8 * r).copied().unwrap_or(false)
        })
        .collect();
    let score = |side: Side| -> f32 {
        let mut sc = 0.0;
        for r in 0..8 {
            for c in 0..8 {
                let sq = side.square_of_cell(c, r);
                let rank = (sq / 8) as f32;
                let p = probs[c + 8 * r];
                sc += (p[1] - p[2]) * (3.5 - rank);
            }
        }
        sc
    };
    let mut best: Option<(Side, f32)> = None;
    for s in &allowed {
        let v = score(*s);
        if best.is_none_or(|(_, b)| v > b) {
            best = Some((*s, v));
        }
    }
    // A lone piece's worth of evidence (one piece 3.5 ranks off centre).
    const MIN_EVIDENCE: f32 = 3.0;
    match best {
        Some((side, v)) if v >= MIN_EVIDENCE => Orientation {
            white_at: side,
            source: "dark-a1+pieces",
        },
        _ => Orientation {
            white_at: allowed.first().copied().unwrap_or(Side::Bottom),
            source: "default",
        },
    }
}

#[cfg(test)]
mod decide_tests {
    use super::*;

    #[test]
    fn start_position_seen_from_the_right_is_recognised() {
        // Grid light cells: (c + r) even. White at the right: a1 bottom-right (7,7) is light here,
        // so make odd cells light instead to keep a1 dark.
        let light: Vec<bool> = (0..64).map(|i| (i % 8 + i / 8) % 2 == 1).collect();
        let side = Side::Right;
        let mut probs = vec![[1.0, 0.0, 0.0]; 64];
        for r in 0..8 {
            for c in 0..8 {
                let rank = side.square_of_cell(c, r) / 8;
                probs[c + 8 * r] = match rank {
                    0 | 1 => [0.0, 1.0, 0.0],
                    6 | 7 => [0.0, 0.0, 1.0],
                    _ => [1.0, 0.0, 0.0],
                };
            }
        }
        assert!(!light[7 + 8 * 7]);
        let o = decide(&probs, &light, None);
        assert_eq!(o.white_at, Side::Right);
        assert_eq!(o.source, "dark-a1+pieces");
        assert_eq!(decide(&probs, &light, Some(Side::Top)).white_at, Side::Top);
    }
}
