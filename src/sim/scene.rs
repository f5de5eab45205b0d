//! Seeded scenes: a world, a camera and sensor options drawn from one seed,
//! with every realism knob varied the way real photos vary.

use nalgebra::{Point3, Vector3};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use shakmaty::Board;

use super::camera::{Camera, CameraSpec};
use super::render::RenderOptions;
use super::world::{
    BoardSpec, BoardStyle, Hand, Lighting, PieceSet, Placement, Table, World, SKIN_TONES,
};
use super::SimError;

/// How much of reality to imitate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Realism {
    /// Centred pieces, fixed light, no noise: for geometry tests.
    Clean,
    /// Untidy pieces, varied light, webcam noise, blur and JPEG.
    Webcam,
}

/// What to build a scene from.
#[derive(Debug, Clone, PartialEq)]
pub struct SceneSpec {
    pub board: BoardStyle,
    /// `None`: wood for wooden boards, plastic otherwise.
    pub set: Option<PieceSet>,
    pub camera: CameraSpec,
    pub width: u32,
    pub height: u32,
    pub realism: Realism,
}

/// A world, a camera looking at it and how to develop the picture.
#[derive(Debug, Clone, PartialEq)]
pub struct Scene {
    pub world: World,
    pub camera: Camera,
    pub options: RenderOptions,
}

impl SceneSpec {
    /// Builds the scene for a position; the same seed gives the same scene.
    pub fn build(&self, position: &Board, seed: u64) -> Result<Scene, SimError> {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let board = BoardSpec::of_style(self.board);
        let set = self.set.unwrap_or(match self.board {
            BoardStyle::Wooden => PieceSet::WOOD,
            _ => PieceSet::PLASTIC,
        });
        let placement = match self.realism {
            Realism::Clean => Placement::EXACT,
            Realism::Webcam => Placement::CASUAL,
        };
        let mut world = World::new(position, board, set, placement, &mut rng)?;
        let camera = Camera::for_spec(
            self.camera,
            self.width,
            self.height,
            world.board.centre(),
            &world.board.view_points(),
        )?;
        let options = match self.realism {
            Realism::Clean => RenderOptions::clean(),
            Realism::Webcam => {
                world.lighting = random_lighting(&mut rng);
                world.table = random_table(&mut rng);
                RenderOptions::webcam(&mut rng)
            }
        };
        Ok(Scene {
            world,
            camera,
            options,
        })
    }
}

/// Light from a random side and height, warm lamp to daylight.
pub fn random_lighting(rng: &mut ChaCha8Rng) -> Lighting {
    let azimuth: f64 = rng.random_range(0.0..std::f64::consts::TAU);
    let elevation: f64 = rng.random_range(35.0f64..80.0).to_radians();
    Lighting {
        direction: Vector3::new(
            azimuth.cos() * elevation.cos(),
            azimuth.sin() * elevation.cos(),
            elevation.sin(),
        ),
        intensity: rng.random_range(0.5..0.95),
        ambient: rng.random_range(0.25..0.5),
        temperature_k: rng.random_range(2800.0..6500.0),
        shadow_strength: rng.random_range(0.3..0.7),
        shadow_softness_mm: rng.random_range(2.0..12.0),
        falloff: rng.random_range(0.0..0.35),
    }
}

/// A pine, dark wood or grey-cloth table.
pub fn random_table(rng: &mut ChaCha8Rng) -> Table {
    match rng.random_range(0..3) {
        0 => Table {
            colour: [0.62, 0.42, 0.22],
            grain: 0.8,
        },
        1 => Table {
            colour: [0.25, 0.15, 0.09],
            grain: 0.6,
        },
        _ => Table {
            colour: [0.35, 0.35, 0.36],
            grain: 0.0,
        },
    }
}

/// A hand reaching for a point on the board from `side` (a unit vector
/// pointing from the board toward the person), with a random skin and sleeve.
pub fn random_hand(grip: Point3<f64>, side: Vector3<f64>, rng: &mut ChaCha8Rng) -> Hand {
    let skin = SKIN_TONES[rng.random_range(0..SKIN_TONES.len())];
    let sleeve = [
        rng.random_range(0.05..0.6),
        rng.random_range(0.05..0.6),
        rng.random_range(0.05..0.6),
    ];
    // Not quite straight in: a person's arm comes in at an angle.
    let a: f64 = rng.random_range(-0.5..0.5);
    let from = Vector3::new(
        side.x * a.cos() - side.y * a.sin(),
        side.x * a.sin() + side.y * a.cos(),
        0.0,
    );
    Hand::reaching(grip, from, skin, sleeve)
}

/// Puts a hand into the world reaching for `square` from White's side (or
/// Black's, for the upper half of the board), fingertips at the top of the
/// piece standing there.
pub fn add_hand_over(world: &mut World, square: shakmaty::Square, seed: u64) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ HAND_SEED_SALT);
    let c = world.board.square_centre(square);
    let unit = super::world::UNIT_PER_SQUARE * world.board.square_mm;
    let top = world
        .piece_index_on(square)
        .map(|i| super::pieces::height_mm(world.pieces[i].piece.role, unit))
        .unwrap_or(0.0);
    let side = if u32::from(square.rank()) < 4 {
        -Vector3::y()
    } else {
        Vector3::y()
    };
    world.hand = Some(random_hand(
        Point3::new(c.x, c.y, top + 8.0),
        side,
        &mut rng,
    ));
}

/// Keeps the hand's random stream apart from the scene's.
const HAND_SEED_SALT: u64 = 0x4A4E_D5EE_D000_0001;

/// Puts the robot arm's silhouette into the world, its base beside the
/// board on Black's side of the h-file edge, its gripper `height_mm` above
/// `square`.
pub fn add_arm_over(world: &mut World, square: shakmaty::Square, height_mm: f64) {
    let b = &world.board;
    let base = Point3::new(
        b.play_mm() + b.border_mm + ARM_BASE_OUT_MM,
        b.play_mm() * 0.75,
        -b.thickness_mm,
    );
    let c = b.square_centre(square);
    world.arm = Some(super::world::ArmSilhouette::reaching(
        base,
        Point3::new(c.x, c.y, 0.0),
        height_mm,
    ));
}

/// The arm stands this far beside the board's frame, mm (clear of the graveyard row).
const ARM_BASE_OUT_MM: f64 = 150.0;
