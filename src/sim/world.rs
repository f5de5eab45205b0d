//! The world model: a board on a table, pieces standing on it, the light, a
//! hand and the robot arm's silhouette. Pure data, no rendering.
//!
//! All coordinates are in the board frame (see [`super::camera`]): origin at
//! the outer corner of a1's square, x toward the h-file, y toward rank 8, z up,
//! millimetres. The playing surface is z = 0.

use nalgebra::{Point2, Point3, Vector3};
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use serde::Serialize;
use shakmaty::{Board, Color, File, Piece, Rank, Role, Square};

use super::SimError;

/// Linear RGB colour, components 0..=1.
pub type Rgb = [f32; 3];

/// The look of a board's surface.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum BoardStyle {
    /// Inlaid wood: maple and walnut squares, a varnished frame.
    Wooden,
    /// Roll-up tournament vinyl: green and cream, thin, slightly glossy.
    Vinyl,
    /// A paper printout: grey and white, matte.
    Printed,
}

impl std::str::FromStr for BoardStyle {
    type Err = SimError;
    fn from_str(s: &str) -> Result<Self, SimError> {
        match s.trim() {
            "wooden" | "wood" => Ok(BoardStyle::Wooden),
            "vinyl" => Ok(BoardStyle::Vinyl),
            "printed" | "paper" => Ok(BoardStyle::Printed),
            other => Err(SimError::BadWorld(format!(
                "board `{other}`: expected wooden, vinyl or printed"
            ))),
        }
    }
}

/// Board geometry and look.
#[derive(Debug, Clone, PartialEq)]
pub struct BoardSpec {
    pub style: BoardStyle,
    /// Side of one square, mm.
    pub square_mm: f64,
    /// Width of the border around the 8x8 squares, mm.
    pub border_mm: f64,
    /// Thickness of the board (its top is z = 0, the table z = -thickness), mm.
    pub thickness_mm: f64,
    pub light_square: Rgb,
    pub dark_square: Rgb,
    pub border: Rgb,
    /// Strength of procedural wood grain, 0 = none.
    pub grain: f32,
    /// Specular reflectance (vinyl is glossy, paper is not).
    pub gloss: f32,
}

impl BoardSpec {
    /// Typical dimensions and colours for each style (taken from the real
    /// photos in ../shared/data/real: a 50 mm inlaid board with a light frame,
    /// a 57 mm (2.25 in) tournament vinyl, a 45 mm printout).
    pub fn of_style(style: BoardStyle) -> BoardSpec {
        match style {
            BoardStyle::Wooden => BoardSpec {
                style,
                square_mm: 50.0,
                border_mm: 30.0,
                thickness_mm: 15.0,
                light_square: [0.78, 0.62, 0.42],
                dark_square: [0.36, 0.17, 0.08],
                border: [0.80, 0.66, 0.46],
                grain: 1.0,
                gloss: 0.15,
            },
            BoardStyle::Vinyl => BoardSpec {
                style,
                square_mm: 57.0,
                border_mm: 22.0,
                thickness_mm: 2.0,
                // Sampled from the chesscog photos: sRGB ~(225,225,210) and ~(25,95,80).
                light_square: [0.74, 0.74, 0.64],
                dark_square: [0.012, 0.115, 0.08],
                border: [0.74, 0.74, 0.64],
                grain: 0.0,
                gloss: 0.35,
            },
            BoardStyle::Printed => BoardSpec {
                style,
                square_mm: 45.0,
                border_mm: 12.0,
                thickness_mm: 0.5,
                light_square: [0.86, 0.86, 0.84],
                dark_square: [0.35, 0.35, 0.36],
                border: [0.90, 0.90, 0.88],
                grain: 0.0,
                gloss: 0.02,
            },
        }
    }

    /// Side of the 8x8 playing area, mm.
    pub fn play_mm(&self) -> f64 {
        8.0 * self.square_mm
    }

    /// Centre of the board (and of the playing area), on its surface.
    pub fn centre(&self) -> Point3<f64> {
        let h = self.play_mm() / 2.0;
        Point3::new(h, h, 0.0)
    }

    /// Radius of a sphere around the centre that holds the whole board.
    pub fn fit_radius(&self) -> f64 {
        (self.play_mm() / 2.0 + self.border_mm) * std::f64::consts::SQRT_2
    }

    /// Points a camera preset keeps in the picture: the frame's outer
    /// corners and the tops of kings standing on the corner squares.
    pub fn view_points(&self) -> Vec<Point3<f64>> {
        let (lo, hi) = (-self.border_mm, self.play_mm() + self.border_mm);
        let king = staunton_units(Role::King) * UNIT_PER_SQUARE * self.square_mm;
        let mut pts = vec![
            Point3::new(lo, lo, 0.0),
            Point3::new(hi, lo, 0.0),
            Point3::new(hi, hi, 0.0),
            Point3::new(lo, hi, 0.0),
        ];
        for sq in [Square::A1, Square::H1, Square::H8, Square::A8] {
            let c = self.square_centre(sq);
            pts.push(Point3::new(c.x, c.y, king));
        }
        pts
    }

    /// Centre of a square on the surface.
    pub fn square_centre(&self, sq: Square) -> Point2<f64> {
        Point2::new(
            (f64::from(u32::from(sq.file())) + 0.5) * self.square_mm,
            (f64::from(u32::from(sq.rank())) + 0.5) * self.square_mm,
        )
    }

    /// The square under a surface point, if it is on the playing area.
    pub fn square_at(&self, x: f64, y: f64) -> Option<Square> {
        let f = (x / self.square_mm).floor();
        let r = (y / self.square_mm).floor();
        if !(0.0..8.0).contains(&f) || !(0.0..8.0).contains(&r) {
            return None;
        }
        Some(Square::from_coords(
            File::new(f as u32),
            Rank::new(r as u32),
        ))
    }

    /// The four outer corners of the playing area (the grid's outer corners),
    /// in a8, h8, h1, a1 order.
    pub fn corners(&self) -> [Point3<f64>; 4] {
        let s = self.play_mm();
        [
            Point3::new(0.0, s, 0.0),
            Point3::new(s, s, 0.0),
            Point3::new(s, 0.0, 0.0),
            Point3::new(0.0, 0.0, 0.0),
        ]
    }

    /// The 81 grid points, row by row from rank 8's top edge down to rank 1's
    /// bottom edge, each row from the a-file edge to the h-file edge
    /// (index = 9 * row + column, row 0 = the a8-h8 edge).
    pub fn grid_points(&self) -> Vec<Point3<f64>> {
        let mut pts = Vec::with_capacity(81);
        for row in 0..9 {
            for col in 0..9 {
                pts.push(Point3::new(
                    col as f64 * self.square_mm,
                    (8 - row) as f64 * self.square_mm,
                    0.0,
                ));
            }
        }
        pts
    }

    fn validate(&self) -> Result<(), SimError> {
        let ok = |v: f64, lo: f64, hi: f64| v.is_finite() && (lo..=hi).contains(&v);
        if !ok(self.square_mm, 10.0, 200.0)
            || !ok(self.border_mm, 0.0, 300.0)
            || !ok(self.thickness_mm, 0.0, 100.0)
        {
            return Err(SimError::BadWorld(format!(
                "board dimensions square {} mm, border {} mm, thickness {} mm: need square 10..=200, border 0..=300, thickness 0..=100",
                self.square_mm, self.border_mm, self.thickness_mm
            )));
        }
        Ok(())
    }
}

/// The look of one side's pieces.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PieceMaterial {
    pub colour: Rgb,
    /// Procedural wood grain strength, 0 for plastic.
    pub grain: f32,
    pub gloss: f32,
}

/// The two colours of a set.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PieceSet {
    pub white: PieceMaterial,
    pub black: PieceMaterial,
}

impl PieceSet {
    /// Boxwood and ebonised wood, as in the wooden-board photos.
    pub const WOOD: PieceSet = PieceSet {
        white: PieceMaterial {
            colour: [0.80, 0.64, 0.42],
            grain: 0.5,
            gloss: 0.35,
        },
        black: PieceMaterial {
            colour: [0.13, 0.07, 0.04],
            grain: 0.3,
            gloss: 0.45,
        },
    };
    /// Tournament plastic: off-white and black.
    pub const PLASTIC: PieceSet = PieceSet {
        white: PieceMaterial {
            colour: [0.85, 0.83, 0.76],
            grain: 0.0,
            gloss: 0.5,
        },
        black: PieceMaterial {
            colour: [0.05, 0.05, 0.05],
            grain: 0.0,
            gloss: 0.6,
        },
    };

    pub fn material(&self, color: Color) -> &PieceMaterial {
        match color {
            Color::White => &self.white,
            Color::Black => &self.black,
        }
    }
}

/// Staunton heights in units (king 9.5 ... pawn 5).
pub fn staunton_units(role: Role) -> f64 {
    match role {
        Role::King => 9.5,
        Role::Queen => 8.5,
        Role::Bishop => 7.0,
        Role::Knight => 6.0,
        Role::Rook => 5.5,
        Role::Pawn => 5.0,
    }
}

/// Height of a Staunton unit as a fraction of the square: a tournament king
/// of 95 mm stands on 57 mm squares, so one unit is 10/57 of a square.
pub const UNIT_PER_SQUARE: f64 = 10.0 / 57.0;

/// A piece standing on (or held above) the board.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PlacedPiece {
    pub piece: Piece,
    /// Centre of its base, board frame (z = 0 when standing on the board).
    pub position: Point3<f64>,
    /// Rotation about the vertical axis, radians (a knight faces +x at 0).
    pub rotation: f64,
    /// Tilt while held, radians about the x axis (0 when standing).
    pub tilt: f64,
}

/// Height above which a piece counts as lifted (not on a square), mm.
pub const LIFTED_MM: f64 = 2.0;

/// The light: one directional "key" light (a window or ceiling lamp) plus ambient.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Lighting {
    /// Direction *toward* the light, board frame (normalised on use).
    pub direction: Vector3<f64>,
    pub intensity: f32,
    pub ambient: f32,
    /// Colour temperature in kelvin (2700 warm lamp .. 6500 daylight).
    pub temperature_k: f32,
    /// Shadow darkness 0 (none) .. 1 (black).
    pub shadow_strength: f32,
    /// Shadow edge softness, mm.
    pub shadow_softness_mm: f32,
    /// Brightness falloff across the board (uneven lamp), 0 = uniform.
    pub falloff: f32,
}

impl Default for Lighting {
    fn default() -> Self {
        Lighting {
            direction: Vector3::new(-0.3, -0.4, 1.0),
            intensity: 0.75,
            ambient: 0.35,
            temperature_k: 4500.0,
            shadow_strength: 0.55,
            shadow_softness_mm: 6.0,
            falloff: 0.15,
        }
    }
}

/// A capsule: a segment swept by a sphere (hands, forearms, robot links).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Capsule {
    pub a: Point3<f64>,
    pub b: Point3<f64>,
    pub radius: f64,
}

/// A person's hand and forearm, as capsules, and the piece it may hold.
#[derive(Debug, Clone, PartialEq)]
pub struct Hand {
    pub capsules: Vec<Capsule>,
    pub skin: Rgb,
    /// Sleeve colour of the forearm part.
    pub sleeve: Rgb,
    /// How many leading capsules are sleeve (the rest is skin).
    pub sleeve_capsules: usize,
}

/// Skin tones from light to dark (linear RGB).
pub const SKIN_TONES: [Rgb; 4] = [
    [0.85, 0.62, 0.50],
    [0.74, 0.52, 0.38],
    [0.52, 0.34, 0.22],
    [0.30, 0.19, 0.12],
];

impl Hand {
    /// A hand whose fingertips pinch at `grip` (a point just above a piece's
    /// top), entering from the direction `from` (a horizontal unit vector
    /// pointing from the grip toward the person), `reach_mm` long.
    pub fn reaching(grip: Point3<f64>, from: Vector3<f64>, skin: Rgb, sleeve: Rgb) -> Hand {
        let back = Vector3::new(from.x, from.y, 0.0).normalize();
        let side = Vector3::new(-back.y, back.x, 0.0);
        let up = Vector3::z();
        // Knuckles above and behind the grip; wrist further back; elbow far out and higher.
        let knuckles = grip + back * 22.0 + up * 55.0;
        let wrist = knuckles + back * 75.0 + up * 15.0;
        let elbow = wrist + back * 260.0 + up * 120.0;
        let shoulder = elbow + back * 300.0 + up * 150.0;
        let mut capsules = vec![
            Capsule {
                a: shoulder,
                b: elbow,
                radius: 45.0,
            },
            Capsule {
                a: elbow,
                b: wrist,
                radius: 34.0,
            },
            // Palm: two fat capsules side by side.
            Capsule {
                a: wrist + side * 12.0,
                b: knuckles + side * 18.0,
                radius: 22.0,
            },
            Capsule {
                a: wrist - side * 12.0,
                b: knuckles - side * 18.0,
                radius: 22.0,
            },
        ];
        // Four fingers curling down to the grip, thumb from the side.
        for i in 0..4 {
            let off = (i as f64 - 1.5) * 15.0;
            let base = knuckles + side * off;
            let mid = base - back * 25.0 + up * 5.0;
            let tip = grip + side * (off * 0.4) - back * 10.0;
            capsules.push(Capsule {
                a: base,
                b: mid,
                radius: 8.5,
            });
            capsules.push(Capsule {
                a: mid,
                b: tip,
                radius: 7.5,
            });
        }
        capsules.push(Capsule {
            a: wrist - side * 25.0 + up * 5.0,
            b: grip - side * 10.0 + back * 6.0,
            radius: 10.0,
        });
        Hand {
            capsules,
            skin,
            sleeve,
            sleeve_capsules: 1,
        }
    }
}

/// The robot arm's silhouette over the board: a chain of capsules.
#[derive(Debug, Clone, PartialEq)]
pub struct ArmSilhouette {
    pub capsules: Vec<Capsule>,
    pub colour: Rgb,
}

impl ArmSilhouette {
    /// A simple SO-101-like chain from a base beside the board at `base`
    /// reaching over `target` at height `height_mm`.
    pub fn reaching(base: Point3<f64>, target: Point3<f64>, height_mm: f64) -> ArmSilhouette {
        let shoulder = base + Vector3::new(0.0, 0.0, 110.0);
        let wrist = Point3::new(target.x, target.y, target.z + height_mm + 60.0);
        let mid = Point3::new(
            (shoulder.x + wrist.x) / 2.0,
            (shoulder.y + wrist.y) / 2.0,
            shoulder.z.max(wrist.z) + 120.0,
        );
        let tip = Point3::new(target.x, target.y, target.z + height_mm);
        ArmSilhouette {
            capsules: vec![
                Capsule {
                    a: base,
                    b: shoulder,
                    radius: 35.0,
                },
                Capsule {
                    a: shoulder,
                    b: mid,
                    radius: 22.0,
                },
                Capsule {
                    a: mid,
                    b: wrist,
                    radius: 20.0,
                },
                Capsule {
                    a: wrist,
                    b: tip,
                    radius: 14.0,
                },
            ],
            colour: [0.06, 0.06, 0.07],
        }
    }
}

/// The table under the board.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Table {
    pub colour: Rgb,
    pub grain: f32,
}

/// Everything the camera can see.
#[derive(Debug, Clone, PartialEq)]
pub struct World {
    pub board: BoardSpec,
    pub set: PieceSet,
    pub table: Table,
    pub pieces: Vec<PlacedPiece>,
    pub lighting: Lighting,
    pub hand: Option<Hand>,
    pub arm: Option<ArmSilhouette>,
    /// Seed of the procedural textures (wood grain phase), so boards differ.
    pub texture_seed: u64,
}

/// How untidy a person leaves the pieces.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Placement {
    /// Largest offset of a piece from its square's centre, as a fraction of the square.
    pub max_offset: f64,
    /// Largest rotation about the vertical, degrees (knights get this plus their facing).
    pub max_rotation_deg: f64,
}

impl Placement {
    /// Pieces exactly centred.
    pub const EXACT: Placement = Placement {
        max_offset: 0.0,
        max_rotation_deg: 0.0,
    };
    /// As a person leaves them: up to 12 % of a square off, 20 degrees turned.
    pub const CASUAL: Placement = Placement {
        max_offset: 0.12,
        max_rotation_deg: 20.0,
    };
}

impl World {
    /// A world with the pieces of `position` on a board of `board` style.
    pub fn new(
        position: &Board,
        board: BoardSpec,
        set: PieceSet,
        placement: Placement,
        rng: &mut ChaCha8Rng,
    ) -> Result<World, SimError> {
        board.validate()?;
        if !(0.0..=0.4).contains(&placement.max_offset) {
            return Err(SimError::BadWorld(format!(
                "piece offset {} of a square: must be 0..=0.4 so pieces stay on their squares",
                placement.max_offset
            )));
        }
        let mut pieces = Vec::with_capacity(32);
        for (sq, piece) in position.clone() {
            pieces.push(placed_on(&board, sq, piece, placement, rng));
        }
        Ok(World {
            table: Table {
                colour: [0.55, 0.38, 0.22],
                grain: 0.6,
            },
            board,
            set,
            pieces,
            lighting: Lighting::default(),
            hand: None,
            arm: None,
            texture_seed: rng.random(),
        })
    }

    /// The piece standing on each square (lifted pieces are on none).
    pub fn occupancy(&self) -> [Option<Piece>; 64] {
        let mut occ = [None; 64];
        for p in &self.pieces {
            if p.position.z > LIFTED_MM {
                continue;
            }
            if let Some(sq) = self.board.square_at(p.position.x, p.position.y) {
                occ[usize::from(sq)] = Some(p.piece);
            }
        }
        occ
    }

    /// The placement part of a FEN of the pieces standing on the board.
    pub fn board_fen(&self) -> String {
        let mut b = Board::empty();
        for (i, p) in self.occupancy().iter().enumerate() {
            if let Some(p) = p {
                b.set_piece_at(Square::new(i as u32), *p);
            }
        }
        b.board_fen().to_string()
    }

    /// Index of the piece standing on a square.
    pub fn piece_index_on(&self, sq: Square) -> Option<usize> {
        self.pieces.iter().position(|p| {
            p.position.z <= LIFTED_MM
                && self.board.square_at(p.position.x, p.position.y) == Some(sq)
        })
    }
}

/// A piece put on a square with a person's untidiness.
pub fn placed_on(
    board: &BoardSpec,
    sq: Square,
    piece: Piece,
    placement: Placement,
    rng: &mut ChaCha8Rng,
) -> PlacedPiece {
    let c = board.square_centre(sq);
    let r = placement.max_offset * board.square_mm;
    let (dx, dy) = if r > 0.0 {
        (rng.random_range(-r..=r), rng.random_range(-r..=r))
    } else {
        (0.0, 0.0)
    };
    let jitter = if placement.max_rotation_deg > 0.0 {
        rng.random_range(-placement.max_rotation_deg..=placement.max_rotation_deg)
    } else {
        0.0
    };
    // Knights face the opponent's side, give or take; others are round anyway.
    let facing = match (piece.role, piece.color) {
        (Role::Knight, Color::White) => 90.0,
        (Role::Knight, Color::Black) => -90.0,
        _ => 0.0,
    };
    PlacedPiece {
        piece,
        position: Point3::new(c.x + dx, c.y + dy, 0.0),
        rotation: (facing + jitter).to_radians(),
        tilt: 0.0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn squares_and_corners_agree() {
        let b = BoardSpec::of_style(BoardStyle::Vinyl);
        let a1 = b.square_centre(Square::A1);
        assert_eq!(b.square_at(a1.x, a1.y), Some(Square::A1));
        let h8 = b.square_centre(Square::H8);
        assert_eq!(b.square_at(h8.x, h8.y), Some(Square::H8));
        assert_eq!(b.square_at(-1.0, 10.0), None);
        let [a8, _, _, a1c] = b.corners();
        assert_eq!((a8.y, a1c.y), (8.0 * 57.0, 0.0));
        let g = b.grid_points();
        assert_eq!(g.len(), 81);
        assert_eq!(g[0], a8);
        assert_eq!(g[80], b.corners()[2]);
    }

    #[test]
    fn world_occupancy_round_trips_the_position() {
        let board = Board::default();
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        let w = World::new(
            &board,
            BoardSpec::of_style(BoardStyle::Wooden),
            PieceSet::WOOD,
            Placement::CASUAL,
            &mut rng,
        )
        .unwrap();
        assert_eq!(w.pieces.len(), 32);
        assert_eq!(w.board_fen(), "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR");
    }

    #[test]
    fn bad_board_is_rejected_with_a_reason() {
        let mut spec = BoardSpec::of_style(BoardStyle::Wooden);
        spec.square_mm = -3.0;
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let err = World::new(
            &Board::default(),
            spec,
            PieceSet::WOOD,
            Placement::EXACT,
            &mut rng,
        )
        .unwrap_err();
        assert!(err.to_string().contains("square -3"), "{err}");
    }
}
