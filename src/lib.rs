//! chessbot: play chess on a real board against a small robot arm.
//!
//! One module per part of the robot. Pure logic lives in the modules; the
//! thin adapters that open files, ports and cameras sit at their edges.
//!
//! - [`config`]: the typed configuration, parsed once.
//! - [`engine`]: the built-in search, UCI engine mode, external UCI engine client, match runner.
//! - [`game`]: the rules (on top of shakmaty), move input, PGN, the crash-safe journal.
//! - [`camera`]: frame sources (live camera, video file, image folder, simulator).
//! - [`vision`]: board localization and per-square state from camera frames.
//! - [`recognition`]: which legal move the camera saw, and when it was complete.
//! - [`service`]: the robot process: modes, web interface, voice.
//! - [`arm`]: the robot arm: servo bus, kinematics, board placement, move planning, safety.
//! - [`sim`]: the digital twin: board scene, camera, renderer, ground truth,
//!   scripted opponent, and the simulated servo bus on a pseudo-terminal.

pub mod arm;
pub mod camera;
pub mod config;
pub mod engine;
pub mod game;
pub mod logging;
pub mod recognition;
pub mod service;
pub mod sim;
pub mod vision;
