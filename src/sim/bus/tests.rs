//! The simulated bus alone, then the real driver against it over a pseudo-terminal.

use std::sync::Arc;
use std::time::Duration;

use super::*;
use crate::arm::bus::{ArrivalCheck, BusError, BusTiming, FeetechBus, ServoGoal};
use crate::arm::clock::ManualClock;
use crate::arm::feetech::ServoFault;

fn clock() -> Arc<ManualClock> {
    Arc::new(ManualClock::new())
}

fn torque_on_goal(bus: &mut SimBus, id: u8, goal: i32, speed: u16, accel: u8) {
    let mut data = vec![accel];
    data.extend(feetech::encode_value(reg::GOAL_POSITION, goal).unwrap());
    data.extend([0, 0]);
    data.extend(feetech::encode_value(reg::GOAL_SPEED, i32::from(speed)).unwrap());
    bus.receive(&feetech::write(id, reg::TORQUE_ENABLE.address, &[1]).unwrap());
    bus.receive(&feetech::write(id, reg::ACCELERATION.address, &data).unwrap());
}

#[test]
fn servo_ramps_up_cruises_and_stops_at_goal() {
    let c = clock();
    let mut bus = SimBus::with_servos(1, c.clone());
    // 1000 steps at 1000 steps/s with 5000 steps/s²: 0.2 s ramps, ~1.2 s total.
    torque_on_goal(&mut bus, 1, 3048, 1000, 50);
    c.advance(Duration::from_millis(100));
    bus.advance();
    let s = bus.servo(1).unwrap();
    // After 0.1 s of 5000 steps/s²: 25 steps travelled, speed 500.
    assert!((s.position() - 2073.0).abs() < 2.0, "{}", s.position());
    assert!((s.get(reg::PRESENT_SPEED) - 500).abs() <= 10);
    assert_eq!(s.get(reg::MOVING), 1);
    c.advance(Duration::from_millis(500));
    bus.advance();
    assert!((bus.servo(1).unwrap().get(reg::PRESENT_SPEED) - 1000).abs() <= 5);
    c.advance(Duration::from_millis(700));
    bus.advance();
    let s = bus.servo(1).unwrap();
    assert_eq!(s.get(reg::PRESENT_POSITION), 3048);
    assert_eq!(s.get(reg::MOVING), 0);
}

#[test]
fn torque_off_servo_does_not_move() {
    let c = clock();
    let mut bus = SimBus::with_servos(1, c.clone());
    torque_on_goal(&mut bus, 1, 3000, 1000, 50);
    bus.receive(&feetech::write(1, reg::TORQUE_ENABLE.address, &[0]).unwrap());
    c.advance(Duration::from_secs(2));
    bus.advance();
    assert_eq!(bus.servo(1).unwrap().get(reg::PRESENT_POSITION), 2048);
}

#[test]
fn blocked_servo_stops_and_load_rises() {
    let c = clock();
    let mut bus = SimBus::with_servos(1, c.clone());
    bus.inject(SimFault::Block {
        id: 1,
        at_step: 2200,
    });
    torque_on_goal(&mut bus, 1, 3000, 1000, 50);
    c.advance(Duration::from_secs(2));
    bus.advance();
    let s = bus.servo(1).unwrap();
    assert_eq!(s.get(reg::PRESENT_POSITION), 2200);
    assert_eq!(s.get(reg::PRESENT_LOAD), BLOCKED_LOAD_PERMILLE);
    // Backing away from the obstacle works and the load drops.
    torque_on_goal(&mut bus, 1, 2100, 1000, 50);
    c.advance(Duration::from_secs(1));
    bus.advance();
    let s = bus.servo(1).unwrap();
    assert_eq!(s.get(reg::PRESENT_POSITION), 2100);
    assert_eq!(s.get(reg::PRESENT_LOAD).abs(), FREE_LOAD_PERMILLE);
}

#[test]
fn goal_outside_limits_is_refused_with_angle_error() {
    let c = clock();
    let mut bus = SimBus::with_servos(1, c);
    bus.receive(&feetech::write(1, reg::MAX_POSITION_LIMIT.address, &[0xB8, 0x0B]).unwrap());
    let reply = bus.receive(&feetech::write(1, reg::GOAL_POSITION.address, &[0xA0, 0x0F]).unwrap());
    // FF FF 01 02 ERR CHK with the angle bit.
    assert_eq!(reply[4], 2);
    assert_eq!(bus.servo(1).unwrap().get(reg::GOAL_POSITION), 2048);
}

#[test]
fn packet_with_bad_checksum_is_ignored() {
    let mut bus = SimBus::with_servos(1, clock());
    let mut p = feetech::ping(1).unwrap();
    p[5] ^= 1;
    assert!(bus.receive(&p).is_empty());
    assert_eq!(
        bus.receive(&feetech::ping(1).unwrap()),
        feetech::encode(1, 0, &[]).unwrap()
    );
}

// ---- The real driver over a pseudo-terminal ----

struct Rig {
    sim: SimPort,
    bus: FeetechBus<serialport::TTYPort>,
    clock: Arc<ManualClock>,
}

/// Reply margin for tests: generous, the machine running them may be busy.
const TEST_MARGIN: Duration = Duration::from_millis(150);

fn rig(servos: u8) -> Rig {
    let clock = clock();
    let sim_bus = SimBus::with_servos(servos, clock.clone());
    let (sim, port) = SimPort::spawn(sim_bus).expect("pseudo-terminal");
    let timing = BusTiming {
        reply_margin: TEST_MARGIN,
        ..BusTiming::default()
    };
    Rig {
        sim,
        bus: FeetechBus::new(port, timing),
        clock,
    }
}

fn check() -> ArrivalCheck {
    ArrivalCheck {
        tolerance_steps: 8,
        poll_period: Duration::from_millis(50),
        timeout: Duration::from_secs(5),
        stall_load_permille: 600,
        no_progress: Duration::from_millis(500),
    }
}

fn goals(ids: &[u8], position: i32) -> Vec<ServoGoal> {
    ids.iter()
        .map(|&id| ServoGoal {
            id,
            position,
            speed: 1500,
            acceleration: 50,
        })
        .collect()
}

const JOINTS: [u8; 3] = [1, 2, 3];

#[test]
fn scan_finds_exactly_the_servos_present() {
    let mut r = rig(3);
    assert_eq!(r.bus.scan(1..=5).unwrap(), vec![1, 2, 3]);
    assert_eq!(
        r.bus.read_register(2, reg::MODEL_NUMBER).unwrap(),
        i32::from(feetech::STS3215_MODEL)
    );
}

#[test]
fn goals_are_reached_and_states_read() {
    let mut r = rig(3);
    r.bus.set_torque(&JOINTS, true).unwrap();
    let g = goals(&JOINTS, 2600);
    r.bus.write_goals(&g).unwrap();
    let states = r
        .bus
        .wait_until_arrived(&g, &check(), &*r.clock, None)
        .unwrap();
    for s in &states {
        assert!((s.position - 2600).abs() <= 8, "{s:?}");
        assert_eq!(s.voltage_decivolt, 120);
        assert_eq!(s.temperature_c, 30);
    }
    // 552 steps at 1500 steps/s with ramps take ~0.5 s of virtual time.
    assert!(
        r.clock.now() >= Duration::from_millis(300),
        "{:?}",
        r.clock.now()
    );
    assert!(
        r.clock.now() <= Duration::from_millis(1000),
        "{:?}",
        r.clock.now()
    );
    let sim = r.sim.bus();
    let last = sim
        .received()
        .iter()
        .rev()
        .find(|f| f.code == 0x83)
        .unwrap();
    // One sync write carried acceleration, goal, time and speed of all three.
    assert_eq!(last.params[..2], [reg::ACCELERATION.address, 7]);
    assert_eq!(last.params.len(), 2 + 3 * 8);
}

#[test]
fn garbage_before_a_reply_is_skipped() {
    let mut r = rig(2);
    r.sim.bus().inject(SimFault::Garbage {
        bytes: vec![0x00, 0xFF, 0x13, 0xFF],
    });
    assert_eq!(r.bus.read_register(1, reg::PRESENT_POSITION).unwrap(), 2048);
    assert!(r.bus.stats().bytes_discarded >= 3);
}

#[test]
fn one_lost_reply_is_retried() {
    let mut r = rig(2);
    r.sim.bus().inject(SimFault::NoReply { id: 2, replies: 1 });
    let states = r.bus.read_states(&[1, 2]).unwrap();
    assert_eq!(states.len(), 2);
    // At least the one retry (a busy test machine may add another).
    assert!(r.bus.stats().retries >= 1);
}

#[test]
fn servo_that_never_replies_is_named() {
    let mut r = rig(3);
    r.sim.bus().inject(SimFault::NoReply { id: 3, replies: 10 });
    let err = r.bus.read_states(&JOINTS).unwrap_err();
    assert!(
        matches!(
            err,
            BusError::NoReply {
                id: 3,
                attempts: 3,
                ..
            }
        ),
        "{err}"
    );
}

#[test]
fn corrupted_checksums_are_a_typed_error() {
    let mut r = rig(2);
    r.sim
        .bus()
        .inject(SimFault::CorruptChecksum { id: 1, replies: 10 });
    let err = r.bus.read_register(1, reg::PRESENT_POSITION).unwrap_err();
    assert!(
        matches!(
            err,
            BusError::Corrupted {
                id: 1,
                attempts: 3,
                ..
            }
        ),
        "{err}"
    );
    // Transient corruption is absorbed by a retry.
    r.sim
        .bus()
        .inject(SimFault::CorruptChecksum { id: 2, replies: 1 });
    assert!(r.bus.ping(2).unwrap());
}

#[test]
fn short_reply_is_a_typed_error() {
    let mut r = rig(1);
    r.sim
        .bus()
        .inject(SimFault::ShortReply { id: 1, replies: 10 });
    let err = r.bus.read_states(&[1]).unwrap_err();
    assert!(
        matches!(
            err,
            BusError::ShortReply {
                id: 1,
                got: 7,
                expected: 8,
                ..
            }
        ),
        "{err}"
    );
}

#[test]
fn error_bits_become_faults() {
    let mut r = rig(2);
    r.sim.bus().inject(SimFault::ErrorBits {
        id: 2,
        bits: ErrorBits::from_faults(&[ServoFault::Overload, ServoFault::Overheat]),
    });
    let err = r.bus.read_states(&[1, 2]).unwrap_err();
    match err {
        BusError::Fault { id, faults } => {
            assert_eq!(id, 2);
            assert_eq!(faults, vec![ServoFault::Overheat, ServoFault::Overload]);
        }
        other => panic!("expected a fault, got {other}"),
    }
}

#[test]
fn servo_dying_mid_move_is_reported() {
    let mut r = rig(3);
    r.bus.set_torque(&JOINTS, true).unwrap();
    let g = goals(&JOINTS, 3000);
    r.bus.write_goals(&g).unwrap();
    r.bus.read_states(&JOINTS).unwrap();
    r.clock.advance(Duration::from_millis(200));
    r.sim.bus().inject(SimFault::Dead { id: 2 });
    let err = r
        .bus
        .wait_until_arrived(&g, &check(), &*r.clock, None)
        .unwrap_err();
    assert!(matches!(err, BusError::NoReply { id: 2, .. }), "{err}");
    // The others still answer and can be told to hold.
    let held = r.bus.hold_here(&[1, 3]).unwrap();
    // A round trip: the simulator has handled the (unanswered) sync write.
    assert!(r.bus.ping(1).unwrap());
    let sim = r.sim.bus();
    for s in held {
        assert!(s.position > 2048 && s.position < 3000, "{s:?}");
        assert_eq!(sim.servo(s.id).unwrap().get(reg::GOAL_POSITION), s.position);
    }
}

#[test]
fn blocked_joint_is_a_stall() {
    let mut r = rig(2);
    r.sim.bus().inject(SimFault::Block {
        id: 1,
        at_step: 2300,
    });
    r.bus.set_torque(&[1, 2], true).unwrap();
    let g = goals(&[1, 2], 2800);
    r.bus.write_goals(&g).unwrap();
    let err = r
        .bus
        .wait_until_arrived(&g, &check(), &*r.clock, None)
        .unwrap_err();
    match err {
        BusError::Stalled {
            id,
            position,
            load_permille,
            ..
        } => {
            assert_eq!(id, 1);
            assert_eq!(position, 2300);
            assert!(load_permille > 600);
        }
        other => panic!("expected a stall, got {other}"),
    }
}

#[test]
fn vanished_port_is_port_lost() {
    let mut r = rig(2);
    assert!(r.bus.ping(1).unwrap());
    r.sim.vanish();
    let err = r.bus.read_states(&[1, 2]).unwrap_err();
    assert!(err.port_lost(), "{err}");
}

#[test]
fn goal_past_the_servo_limit_is_an_angle_fault() {
    let mut r = rig(1);
    r.bus
        .write_register(1, reg::MAX_POSITION_LIMIT, 3000)
        .unwrap();
    r.bus.write_goals(&goals(&[1], 3500)).unwrap();
    let err = r.bus.ping(1).unwrap_err();
    assert!(
        matches!(&err, BusError::Fault { id: 1, faults } if faults == &[ServoFault::Angle]),
        "{err}"
    );
}

#[test]
fn a_short_read_is_retried_and_resynchronised() {
    let mut r = rig(2);
    // The first reply stops after 4 bytes; the retry gets a whole one.
    r.sim
        .bus()
        .inject(SimFault::TruncatedReply { id: 1, replies: 1 });
    assert_eq!(r.bus.read_states(&[1, 2]).unwrap().len(), 2);
    // At least the one retry (a busy test machine may add another).
    assert!(r.bus.stats().retries >= 1);
    // Persistent truncation is a named servo that did not answer in full.
    r.sim
        .bus()
        .inject(SimFault::TruncatedReply { id: 2, replies: 10 });
    let err = r.bus.read_register(2, reg::PRESENT_POSITION).unwrap_err();
    assert!(matches!(err, BusError::NoReply { id: 2, .. }), "{err}");
}
