//! chessbot: play chess on a real board against a small robot arm.
//!
//! One module per part of the robot. Pure logic lives in the modules; the
//! thin adapters that open files, ports and cameras sit at their edges.
//!
//! - [`config`]: the typed configuration, parsed once.
//! - [`game`]: the rules (on top of shakmaty), move input, PGN, the crash-safe journal.
//! - [`vision`]: board localization and per-square state from camera frames.
//! - [`camera`]: frame sources (live camera, video file, image folder).

pub mod camera;
pub mod config;
pub mod game;
pub mod logging;
pub mod vision;
