//! chessbot: play chess on a real board against a small robot arm.
//!
//! One module per part of the robot. Pure logic lives in the modules; the
//! thin adapters that open files, ports and cameras sit at their edges.
//!
//! - [`config`]: the typed configuration, parsed once.
//! - [`game`]: the rules (on top of shakmaty), move input, PGN, the crash-safe journal.
//! - [`sim`]: the simulated board, camera, renderer, ground truth and scripted opponent.

pub mod config;
pub mod game;
pub mod logging;
pub mod sim;
