//! The simulator: stand-ins for the robot's hardware, so the real code runs in tests.

pub mod bus;
