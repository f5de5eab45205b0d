//! The robot arm: an SO-101 (or SO-100) of Feetech STS3215 servos on a serial bus.
//!
//! - [`feetech`]: the servo protocol, sans IO (bytes in, bytes out).
//! - [`bus`]: the adapter that runs the protocol over a serial port, with
//!   deadlines, retries and typed errors.
//! - [`clock`]: injected time, so waiting and simulated motion are testable.
//! - [`model`]: the kinematic model (from `config/arms/*.toml`), FK and analytic IK.
//! - [`calibration`]: LeRobot's servo calibration JSON, steps <-> radians.
//! - [`config`]: the `[arm]` configuration section.
//! - [`board`]: the board and its side slots in the arm frame; board-to-arm fit.
//! - [`setup`]: one installed arm loaded from config; reach queries.
//! - [`audit`]: can the arm reach every square and slot?
//! - [`plan`]: a chess move as piece transfers and joint paths.
//! - [`safety`]: the envelope every command is checked against before sending.
//! - [`run`]: executing a plan on the bus, stopping safely on any fault.
//! - [`bench`]: IK speed and estimated arm time per move.
//! - [`calibrate`]: guided board-to-arm and servo calibrations (arm moved by hand).
//! - [`dynamixel`]: the Dynamixel protocol 2.0 codec (second arm family; no adapter yet).

pub mod audit;
pub mod bench;
pub mod board;
pub mod bus;
pub mod calibrate;
pub mod calibration;
pub mod clock;
pub mod config;
pub mod dynamixel;
pub mod feetech;
pub mod model;
pub mod plan;
pub mod run;
pub mod safety;
pub mod setup;
