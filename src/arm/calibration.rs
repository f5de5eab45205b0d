//! Servo calibration: LeRobot's JSON format, and steps <-> radians.
//!
//! LeRobot (hardware.md): with torque off the arm is put mid-range and
//! `Homing_Offset = present - 2047` is written to each servo, so the servo
//! then reports 2047 there; each joint is swept by hand and its raw min and
//! max recorded. The file is `{motor: {id, drive_mode, homing_offset,
//! range_min, range_max}}`. Degrees = (raw - (min+max)/2) * 360/4095, so a
//! joint's zero is the middle of its recorded range, which is the URDF zero
//! of `so101_new_calib`. `drive_mode` 1 turns the sense around.

use std::collections::BTreeMap;
use std::f64::consts::TAU;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::model::{ArmModel, Joint, Joints, JOINTS};

/// LeRobot divides a turn into 4095 (its `max_res`); we match it so a
/// LeRobot-calibrated arm reads the same angles here.
pub const STEPS_PER_TURN_LEROBOT: f64 = 4095.0;
/// The middle step LeRobot homes each servo to.
pub const HOME_STEP: i32 = 2047;
/// Highest position step of an STS3215.
pub const MAX_STEP: i32 = 4095;

/// What is wrong with a calibration.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CalibrationError {
    #[error("calibration {origin}: {message}")]
    Syntax { origin: String, message: String },
    #[error("calibration {origin}: motor {motor}: {message}")]
    Invalid {
        origin: String,
        motor: String,
        message: String,
    },
    #[error("calibration {origin} has no entry for joint {motor} (has: {present})")]
    Missing {
        origin: String,
        motor: String,
        present: String,
    },
    #[error("cannot read calibration {path}: {message}")]
    Read { path: String, message: String },
}

/// One motor's entry, exactly as LeRobot writes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct MotorCalibration {
    pub id: u8,
    pub drive_mode: u8,
    pub homing_offset: i32,
    pub range_min: i32,
    pub range_max: i32,
}

/// A whole arm's calibration, keyed by motor (joint) name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Calibration {
    pub motors: BTreeMap<String, MotorCalibration>,
}

/// Conversion for one joint between radians (URDF zero) and servo steps.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct JointMap {
    /// +1 or -1: servo sense times model sign.
    pub sign: f64,
    pub mid: f64,
    /// Angle at the middle of the range: 0 for the arm joints (LeRobot's
    /// convention, the URDF zero); the middle of the jaw limits for the
    /// gripper, which LeRobot maps as 0..100 % of its range instead.
    pub offset_rad: f64,
    pub range_min: i32,
    pub range_max: i32,
}

impl JointMap {
    /// Steps (not rounded, not clamped) for an angle.
    pub fn steps(&self, rad: f64) -> f64 {
        self.mid + self.sign * (rad - self.offset_rad) * STEPS_PER_TURN_LEROBOT / TAU
    }

    /// Angle for a step reading.
    pub fn radians(&self, steps: f64) -> f64 {
        self.offset_rad + self.sign * (steps - self.mid) * TAU / STEPS_PER_TURN_LEROBOT
    }

    /// Whether a step value lies inside the calibrated range.
    pub fn in_range(&self, steps: i32) -> bool {
        (self.range_min..=self.range_max).contains(&steps)
    }
}

impl Calibration {
    /// Parses and checks LeRobot's JSON.
    pub fn from_json(text: &str, origin: &str) -> Result<Calibration, CalibrationError> {
        let cal: Calibration =
            serde_json::from_str(text).map_err(|e| CalibrationError::Syntax {
                origin: origin.to_owned(),
                message: e.to_string(),
            })?;
        cal.validate(origin)?;
        Ok(cal)
    }

    /// Reads a LeRobot calibration file.
    pub fn load(path: &Path) -> Result<Calibration, CalibrationError> {
        let text = std::fs::read_to_string(path).map_err(|e| CalibrationError::Read {
            path: path.display().to_string(),
            message: e.to_string(),
        })?;
        Calibration::from_json(&text, &path.display().to_string())
    }

    /// LeRobot's JSON (pretty, as LeRobot writes it).
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_else(|_| "{}".to_owned())
    }

    fn validate(&self, origin: &str) -> Result<(), CalibrationError> {
        for (name, m) in &self.motors {
            let bad = |message: String| CalibrationError::Invalid {
                origin: origin.to_owned(),
                motor: name.clone(),
                message,
            };
            if !(0..=MAX_STEP).contains(&m.range_min) || !(0..=MAX_STEP).contains(&m.range_max) {
                return Err(bad(format!(
                    "range {}..{} must lie within 0..{MAX_STEP}",
                    m.range_min, m.range_max
                )));
            }
            if m.range_min >= m.range_max {
                return Err(bad(format!(
                    "range_min {} must be below range_max {}",
                    m.range_min, m.range_max
                )));
            }
            if m.drive_mode > 1 {
                return Err(bad(format!("drive_mode {} must be 0 or 1", m.drive_mode)));
            }
            if m.homing_offset.abs() > 2047 {
                return Err(bad(format!(
                    "homing_offset {} does not fit the servo's ±2047",
                    m.homing_offset
                )));
            }
        }
        Ok(())
    }

    /// A calibration from the model alone: each servo homed at 2047 and its
    /// range the URDF limits. For simulation and a first look; a real arm
    /// needs its own (LeRobot's or `chessbot calibrate servos`).
    pub fn nominal(model: &ArmModel) -> Calibration {
        let gripper = {
            let j = &model.gripper.joint;
            let half = ((j.upper - j.lower) / 2.0 * STEPS_PER_TURN_LEROBOT / TAU).floor() as i32;
            MotorCalibration {
                id: j.servo_id,
                drive_mode: 0,
                homing_offset: 0,
                range_min: HOME_STEP - half.min(HOME_STEP),
                range_max: HOME_STEP + half.min(HOME_STEP),
            }
        };
        let entry = |j: &Joint| {
            let to =
                |q: f64| (f64::from(HOME_STEP) + q * STEPS_PER_TURN_LEROBOT / TAU).round() as i32;
            let (a, b) = (
                to(j.lower).clamp(0, MAX_STEP),
                to(j.upper).clamp(0, MAX_STEP),
            );
            // Symmetric about 2047 so the middle of the range is the URDF zero.
            let half = (b - HOME_STEP).min(HOME_STEP - a);
            MotorCalibration {
                id: j.servo_id,
                drive_mode: 0,
                homing_offset: 0,
                range_min: HOME_STEP - half,
                range_max: HOME_STEP + half,
            }
        };
        let mut motors: BTreeMap<String, MotorCalibration> = model
            .joints
            .iter()
            .map(|j| (j.name.clone(), entry(j)))
            .collect();
        motors.insert(model.gripper.joint.name.clone(), gripper);
        Calibration { motors }
    }

    /// The conversion for one joint of the model.
    pub fn map(
        &self,
        joint: &Joint,
        offset_rad: f64,
        origin: &str,
    ) -> Result<JointMap, CalibrationError> {
        let m = self
            .motors
            .get(&joint.name)
            .ok_or_else(|| CalibrationError::Missing {
                origin: origin.to_owned(),
                motor: joint.name.clone(),
                present: self.motors.keys().cloned().collect::<Vec<_>>().join(", "),
            })?;
        if m.id != joint.servo_id {
            return Err(CalibrationError::Invalid {
                origin: origin.to_owned(),
                motor: joint.name.clone(),
                message: format!(
                    "servo ID {} differs from the arm model's {}",
                    m.id, joint.servo_id
                ),
            });
        }
        let drive = if m.drive_mode == 1 { -1.0 } else { 1.0 };
        Ok(JointMap {
            sign: drive * joint.servo_sign,
            mid: f64::from(m.range_min + m.range_max) / 2.0,
            offset_rad,
            range_min: m.range_min,
            range_max: m.range_max,
        })
    }
}

/// Conversions for all joints and the gripper of one arm.
#[derive(Debug, Clone, PartialEq)]
pub struct ServoMaps {
    pub joints: [JointMap; JOINTS],
    pub gripper: JointMap,
}

impl ServoMaps {
    /// The joints' maps then the gripper's, in servo-ID order.
    pub fn all(&self) -> impl Iterator<Item = &JointMap> {
        self.joints.iter().chain(std::iter::once(&self.gripper))
    }

    pub fn new(
        model: &ArmModel,
        cal: &Calibration,
        origin: &str,
    ) -> Result<ServoMaps, CalibrationError> {
        let mut joints = [JointMap {
            sign: 1.0,
            mid: 0.0,
            offset_rad: 0.0,
            range_min: 0,
            range_max: 0,
        }; JOINTS];
        for (slot, j) in joints.iter_mut().zip(&model.joints) {
            *slot = cal.map(j, 0.0, origin)?;
        }
        let g = &model.gripper.joint;
        Ok(ServoMaps {
            joints,
            gripper: cal.map(g, (g.lower + g.upper) / 2.0, origin)?,
        })
    }

    /// Angles of a step reading of the five joints.
    pub fn radians(&self, steps: &[i32; JOINTS]) -> Joints {
        let mut q = [0.0; JOINTS];
        for i in 0..JOINTS {
            q[i] = self.joints[i].radians(f64::from(steps[i]));
        }
        q
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LEROBOT_EXAMPLE: &str = r#"{
        "shoulder_pan": {"id": 1, "drive_mode": 0, "homing_offset": -1470, "range_min": 758, "range_max": 3292},
        "shoulder_lift": {"id": 2, "drive_mode": 0, "homing_offset": 157, "range_min": 612, "range_max": 3401},
        "elbow_flex": {"id": 3, "drive_mode": 0, "homing_offset": -1276, "range_min": 898, "range_max": 3102},
        "wrist_flex": {"id": 4, "drive_mode": 0, "homing_offset": -1180, "range_min": 928, "range_max": 3300},
        "wrist_roll": {"id": 5, "drive_mode": 0, "homing_offset": 27, "range_min": 177, "range_max": 3918},
        "gripper": {"id": 6, "drive_mode": 0, "homing_offset": -1434, "range_min": 2020, "range_max": 3375}
    }"#;

    #[test]
    fn lerobot_file_imports_and_round_trips() {
        let cal = Calibration::from_json(LEROBOT_EXAMPLE, "t.json").unwrap();
        assert_eq!(cal.motors.len(), 6);
        assert_eq!(cal.motors["elbow_flex"].homing_offset, -1276);
        let again = Calibration::from_json(&cal.to_json(), "again").unwrap();
        assert_eq!(again, cal);
    }

    #[test]
    fn degrees_follow_lerobot_formula() {
        let model = ArmModel::so101().unwrap();
        let cal = Calibration::from_json(LEROBOT_EXAMPLE, "t.json").unwrap();
        let maps = ServoMaps::new(&model, &cal, "t").unwrap();
        let pan = maps.joints[0];
        // (raw - (758+3292)/2) * 360/4095 degrees.
        let raw = 3000.0;
        let expected_deg = (raw - 2025.0) * 360.0 / 4095.0;
        assert!((pan.radians(raw).to_degrees() - expected_deg).abs() < 1e-9);
        assert!((pan.steps(pan.radians(raw)) - raw).abs() < 1e-9);
    }

    #[test]
    fn drive_mode_reverses_the_sense() {
        let model = ArmModel::so101().unwrap();
        let mut cal = Calibration::from_json(LEROBOT_EXAMPLE, "t").unwrap();
        if let Some(m) = cal.motors.get_mut("shoulder_pan") {
            m.drive_mode = 1;
        }
        let maps = ServoMaps::new(&model, &cal, "t").unwrap();
        assert!(maps.joints[0].steps(0.1) < maps.joints[0].mid);
    }

    #[test]
    fn bad_entries_are_named() {
        let bad = LEROBOT_EXAMPLE.replace("\"range_min\": 898", "\"range_min\": 3200");
        let err = Calibration::from_json(&bad, "t.json").unwrap_err();
        assert!(err.to_string().contains("elbow_flex"), "{err}");
        let mut cal = Calibration::from_json(LEROBOT_EXAMPLE, "t.json").unwrap();
        cal.motors.remove("gripper");
        let err = ServoMaps::new(&ArmModel::so101().unwrap(), &cal, "t.json").unwrap_err();
        assert!(matches!(err, CalibrationError::Missing { .. }), "{err}");
        let err = Calibration::from_json("{\"x\": 3}", "t.json").unwrap_err();
        assert!(matches!(err, CalibrationError::Syntax { .. }));
    }

    #[test]
    fn nominal_calibration_covers_the_urdf_limits() {
        let model = ArmModel::so101().unwrap();
        let cal = Calibration::nominal(&model);
        let maps = ServoMaps::new(&model, &cal, "nominal").unwrap();
        for (m, j) in maps.joints.iter().zip(&model.joints) {
            assert_eq!(m.mid, f64::from(HOME_STEP));
            let lo = m.steps(j.lower).round() as i32;
            let hi = m.steps(j.upper).round() as i32;
            assert!(m.in_range(lo.max(m.range_min)) && m.in_range(hi.min(m.range_max)));
        }
    }
}
