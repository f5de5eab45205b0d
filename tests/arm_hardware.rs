//! Tests on a real SO-101. Ignored by default; run with the arm powered and
//! connected, nothing within its reach:
//!
//! ```text
//! CHESSBOT_ARM_PORT=/dev/ttyACM0 cargo test --test arm_hardware -- --ignored
//! ```

use std::time::Duration;

use chessbot::arm::bus::{open_serial, BusTiming, FeetechBus};
use chessbot::arm::feetech::{reg, STS3215_MODEL};

fn port() -> String {
    std::env::var("CHESSBOT_ARM_PORT").unwrap_or_else(|_| "/dev/ttyACM0".to_owned())
}

#[test]
#[ignore = "needs a real SO-101 on CHESSBOT_ARM_PORT"]
fn all_six_servos_answer_and_are_sts3215() {
    let serial = open_serial(&port(), 1_000_000).expect("open the port");
    let mut bus = FeetechBus::new(serial, BusTiming::default());
    let found = bus.scan(1..=6).expect("scan");
    assert_eq!(found, vec![1, 2, 3, 4, 5, 6]);
    for id in found {
        assert_eq!(
            bus.read_register(id, reg::MODEL_NUMBER).unwrap(),
            i32::from(STS3215_MODEL)
        );
    }
    // Reading the state of all joints takes one short sync read.
    let t = std::time::Instant::now();
    let states = bus.read_states(&[1, 2, 3, 4, 5, 6]).expect("state");
    assert_eq!(states.len(), 6);
    assert!(t.elapsed() < Duration::from_millis(50));
    assert!(states
        .iter()
        .all(|s| (40..=140).contains(&s.voltage_decivolt)));
}
