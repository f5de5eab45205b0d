//! Guided calibrations with the arm moved by hand (torque off).
//!
//! - Board to arm: the person puts the tool point on square centres; FK of
//!   each reading gives a point; [`fit_board`] gives `arm_from_board`.
//! - Servos (LeRobot's procedure): the arm held mid-range, each servo's
//!   Homing_Offset is set so it reads 2047 there; then every joint is swept
//!   by hand and its extremes recorded.
//!
//! The person's part (prompts, enter key) comes in as callbacks, so the
//! procedures run unchanged against the simulated bus in tests.

use std::io;

use nalgebra::Point3;
use shakmaty::Square;

use super::board::{fit_board, BoardCalibration, BoardFitError};
use super::bus::{BusError, BusPort, FeetechBus};
use super::calibration::{Calibration, MotorCalibration, HOME_STEP};
use super::clock::Clock;
use super::feetech::reg;
use super::model::{ArmModel, JOINTS};
use super::setup::ArmSetup;

/// How often positions are sampled while the person sweeps the joints.
pub const SWEEP_POLL: std::time::Duration = std::time::Duration::from_millis(20);
/// A joint swept over fewer steps than this was probably not moved at all.
pub const MIN_SWEEP_STEPS: i32 = 200;

/// A calibration procedure failed.
#[derive(Debug, thiserror::Error)]
pub enum CalibrateError {
    #[error(transparent)]
    Bus(#[from] BusError),
    #[error(transparent)]
    Fit(#[from] BoardFitError),
    #[error("waiting for the person failed: {0}")]
    Prompt(#[from] io::Error),
    #[error(
        "joint {joint} moved only {steps} steps during the sweep: move every joint from end to end"
    )]
    NotSwept { joint: String, steps: i32 },
}

/// The tool point (arm frame) for the arm's present pose.
pub fn tool_point_now<P: BusPort>(
    bus: &mut FeetechBus<P>,
    setup: &ArmSetup,
) -> Result<Point3<f64>, BusError> {
    let ids: Vec<u8> = setup.model.joints.iter().map(|j| j.servo_id).collect();
    let states = bus.read_states(&ids)?;
    let mut steps = [0; JOINTS];
    for (s, st) in steps.iter_mut().zip(&states) {
        *s = st.position;
    }
    Ok(setup.model.tool_point(&setup.maps.radians(&steps)))
}

/// Board-to-arm calibration: torque off, then for each square the person puts
/// the tool on its centre and `wait(square)` returns.
pub fn calibrate_board<P: BusPort>(
    bus: &mut FeetechBus<P>,
    setup: &ArmSetup,
    squares: &[Square],
    mut wait: impl FnMut(Square) -> io::Result<()>,
) -> Result<BoardCalibration, CalibrateError> {
    bus.set_torque(&setup.model.servo_ids(), false)?;
    let mut touched = Vec::with_capacity(squares.len());
    for &sq in squares {
        wait(sq)?;
        touched.push((sq, tool_point_now(bus, setup)?));
    }
    Ok(fit_board(&touched, setup.board.square_m)?)
}

/// Servo calibration in LeRobot's format.
///
/// `wait_mid` returns when the person holds the arm mid-range; then
/// positions are sampled every [`SWEEP_POLL`] until `sweep_done()` says the
/// person has moved every joint through its range.
pub fn calibrate_servos<P: BusPort>(
    bus: &mut FeetechBus<P>,
    model: &ArmModel,
    clock: &dyn Clock,
    wait_mid: impl FnOnce() -> io::Result<()>,
    mut sweep_done: impl FnMut() -> bool,
) -> Result<Calibration, CalibrateError> {
    let ids = model.servo_ids();
    let names: Vec<String> = model
        .joints
        .iter()
        .chain(std::iter::once(&model.gripper.joint))
        .map(|j| j.name.clone())
        .collect();
    bus.set_torque(&ids, false)?;
    for &id in &ids {
        // EEPROM writes need the lock open; start from no offset.
        bus.write_register(id, reg::LOCK, 0)?;
        bus.write_register(id, reg::HOMING_OFFSET, 0)?;
    }
    wait_mid()?;
    let mid = bus.sync_read_register(&ids, reg::PRESENT_POSITION)?;
    let mut offsets = Vec::with_capacity(ids.len());
    for (&id, &raw) in ids.iter().zip(&mid) {
        let offset = raw - HOME_STEP;
        bus.write_register(id, reg::HOMING_OFFSET, offset)?;
        bus.write_register(id, reg::LOCK, 1)?;
        offsets.push(offset);
    }
    let mut lo = vec![i32::MAX; ids.len()];
    let mut hi = vec![i32::MIN; ids.len()];
    loop {
        let now = bus.sync_read_register(&ids, reg::PRESENT_POSITION)?;
        for (i, p) in now.iter().enumerate() {
            lo[i] = lo[i].min(*p);
            hi[i] = hi[i].max(*p);
        }
        if sweep_done() {
            break;
        }
        clock.sleep(SWEEP_POLL);
    }
    let mut motors = std::collections::BTreeMap::new();
    for (i, name) in names.iter().enumerate() {
        if hi[i] - lo[i] < MIN_SWEEP_STEPS {
            return Err(CalibrateError::NotSwept {
                joint: name.clone(),
                steps: hi[i] - lo[i],
            });
        }
        motors.insert(
            name.clone(),
            MotorCalibration {
                id: ids[i],
                drive_mode: 0,
                homing_offset: offsets[i],
                range_min: lo[i],
                range_max: hi[i],
            },
        );
    }
    Ok(Calibration { motors })
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use super::*;
    use crate::arm::bus::BusTiming;
    use crate::arm::clock::ManualClock;
    use crate::arm::config::BoardConfig;
    use crate::arm::setup::ArmSetup;
    use crate::sim::bus::{SimBus, SimPort};

    fn rig() -> (SimPort, FeetechBus<serialport::TTYPort>, Arc<ManualClock>) {
        let clock = Arc::new(ManualClock::new());
        let (sim, port) = SimPort::spawn(SimBus::with_servos(6, clock.clone())).unwrap();
        let timing = BusTiming {
            reply_margin: Duration::from_millis(150),
            ..BusTiming::default()
        };
        (sim, FeetechBus::new(port, timing), clock)
    }

    #[test]
    fn touched_squares_give_the_board_placement() {
        let (sim, mut bus, _clock) = rig();
        let setup = ArmSetup::default_so101().unwrap();
        // The true board is 8 mm and 2° off the configured placement.
        let truth = BoardConfig {
            x_m: setup.board.arm_from_board.translation.x + 0.008,
            yaw_deg: 2.0,
            ..crate::arm::config::ArmConfig::default().board
        };
        let truth_frame = crate::arm::board::arm_from_board(&truth);
        let squares = [Square::A1, Square::H1, Square::H8, Square::A8, Square::E4];
        let cal = calibrate_board(&mut bus, &setup, &squares, |sq| {
            // The person puts the tool on the square's centre.
            let (x, y) = setup.board.square_xy(sq);
            let p = truth_frame.transform_point(&Point3::new(x, y, 0.0));
            let sol = setup
                .pitch_candidates()
                .into_iter()
                .find_map(|pitch| setup.model.ik(&p, pitch, None, 0.1, None).ok())
                .expect("the square is reachable");
            let mut sim = sim.bus();
            for (i, q) in sol.joints.iter().enumerate() {
                let steps = setup.maps.joints[i].steps(*q).round() as i32;
                sim.move_by_hand(setup.model.joints[i].servo_id, steps);
            }
            Ok(())
        })
        .unwrap();
        assert!((cal.board.x_m - truth.x_m).abs() < 0.001, "{:?}", cal.board);
        assert!((cal.board.y_m - truth.y_m).abs() < 0.001, "{:?}", cal.board);
        assert!((cal.board.yaw_deg - 2.0).abs() < 0.2, "{:?}", cal.board);
        // Step quantisation alone: well under a millimetre.
        assert!(
            cal.residuals_mm.iter().all(|r| *r < 1.0),
            "{:?}",
            cal.residuals_mm
        );
        assert_eq!(sim.bus().servo(1).unwrap().get(reg::TORQUE_ENABLE), 0);
    }

    #[test]
    fn servo_calibration_homes_mid_range_and_records_the_sweep() {
        let (sim, mut bus, clock) = rig();
        let model = ArmModel::so101().unwrap();
        let raw_mid = [3000, 1500, 2100, 2600, 900, 2500];
        for (id, raw) in (1..=6).zip(raw_mid) {
            sim.bus().move_by_hand(id, raw);
        }
        let mut polls = 0;
        let cal = calibrate_servos(
            &mut bus,
            &model,
            &*clock,
            || Ok(()),
            || {
                polls += 1;
                // The person sweeps: each joint 600 steps down, then 700 up from mid.
                let mut s = sim.bus();
                for (id, raw) in (1..=6).zip(raw_mid) {
                    match polls {
                        1 => s.move_by_hand(id, raw - 600),
                        2 => s.move_by_hand(id, raw + 700),
                        _ => {}
                    }
                }
                polls >= 3
            },
        )
        .unwrap();
        let pan = cal.motors["shoulder_pan"];
        assert_eq!(pan.homing_offset, 3000 - HOME_STEP);
        assert_eq!(
            (pan.range_min, pan.range_max),
            (HOME_STEP - 600, HOME_STEP + 700)
        );
        assert_eq!(cal.motors["gripper"].id, 6);
        // The servo itself now reads 2047 at the mid pose... after the sweep it is at +700.
        assert_eq!(
            bus.read_register(1, reg::PRESENT_POSITION).unwrap(),
            HOME_STEP + 700
        );
        // The result is valid LeRobot JSON.
        assert!(Calibration::from_json(&cal.to_json(), "t").is_ok());
    }

    #[test]
    fn unswept_joint_is_named() {
        let (_sim, mut bus, clock) = rig();
        let model = ArmModel::so101().unwrap();
        let err = calibrate_servos(&mut bus, &model, &*clock, || Ok(()), || true).unwrap_err();
        assert!(err.to_string().contains("shoulder_pan"), "{err}");
    }
}
