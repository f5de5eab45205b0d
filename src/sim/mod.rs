//! The simulated world: a chess board scene rendered from any camera, with
//! ground truth for every frame, and a scripted opponent who plays moves with
//! a hand. The digital twin that vision, move recognition and the robot
//! service are developed and tested against.
//!
//! - [`world`]: the board, table, pieces, light, hand and arm silhouette (pure data).
//! - [`camera`]: pinhole + OpenCV distortion + pose; presets and projection.
//! - [`render`]: the software renderer and simulated sensor ([`render()`], [`Renderer`]).
//! - [`truth`]: per-frame ground truth (corners, grid, squares, camera).
//! - [`scene`]: seeded scenes with all realism knobs drawn from one seed.
//! - [`opponent`]: the scripted person playing moves, frame by frame.
//! - [`bus`]: the simulated Feetech STS3215 servo bus on a pseudo-terminal.
//! - [`robot_game`]: a whole robot game: world, servos, arm driver, engine, journal.
//! - [`record`]: the file adapter writing a scripted game's frames and truth.
//! - [`pieces`], [`mesh`], [`texture`]: Staunton meshes and procedural textures.
//!
//! Frames: the board frame has its origin at a1's outer corner, x toward the
//! h-file, y toward rank 8, z up, in millimetres.

pub mod bench;
pub mod bus;
pub mod camera;
pub mod mesh;
pub mod opponent;
pub mod pieces;
pub mod record;
pub mod render;
pub mod robot_game;
pub mod scene;
pub mod texture;
pub mod truth;
pub mod world;

pub use camera::{Camera, CameraPose, CameraPreset, CameraSpec, Distortion, Intrinsics};
pub use render::{render, Frame, Image, RenderOptions, Renderer};
pub use scene::{Realism, Scene, SceneSpec};
pub use truth::{CameraTruth, FrameTruth, SquareTruth};
pub use world::{BoardSpec, BoardStyle, PieceSet, Placement, World};

/// What went wrong in the simulator.
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    #[error("camera: {0}")]
    BadCamera(String),
    #[error("world: {0}")]
    BadWorld(String),
    #[error("render options: {0}")]
    BadOptions(String),
    #[error("scripted game: {0}")]
    BadScript(String),
    #[error("OpenCV: {0}")]
    OpenCv(String),
    #[error("writing output: {0}")]
    Io(String),
}
